/*
 * test_idem.c -- Idempotency-Key (engine/edge/idem.c): the record table on its
 * own (decode, the per-key chain across entities, rejected documents), then
 * real wm-shard processes: replay byte for byte, reuse with another request,
 * malformed keys, failed requests store nothing, keys per entity, secrets
 * never stored, replay after kill -9 (WAL and snapshot), the in-flight 409
 * under a slow fsync, and expiry.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/edge/idem.h"
#include "tests/harness.h"
#include "tests/wm_test.h"

/* ---- helpers ------------------------------------------------------------ */

/* Response bodies are read with the engine's strict parser (jansson's
 * header cannot share a translation unit with net/json.h, which idem.h
 * pulls in); every check of what a replay returns compares raw bytes. */
static struct json_doc *body_json(const struct http_resp *r)
{
	struct json_error e;
	struct json_doc *d = json_parse(r->body, r->body_len, NULL, &e);
	cr_assert_not_null(d, "response body is not JSON: %s\n%s", e.msg, r->body);
	cr_assert_eq(json_root(d)->type, JSON_OBJECT, "%s", r->body);
	return d;
}

static const char *jstr(const struct json_doc *d, const char *k)
{
	const struct json_value *v = json_get(json_root(d), k);
	return v && v->type == JSON_STRING ? v->u.str : NULL;
}

/* Elements of the array member k (-1 if it is not an array). */
static long jarr_len(const struct json_doc *d, const char *k)
{
	const struct json_value *v = json_get(json_root(d), k);
	return v && v->type == JSON_ARRAY ? (long)v->len : -1;
}

static void start_or_fail(struct wm_proc *p, const char *const *args, const char *const *env)
{
	cr_assert_eq(wm_start(p, args, env), 0, "wm-shard did not start (logs in %s)", p->dir);
}

/* A request with "Idempotency-Key: <key>" (key NULL: no header) and, if
 * token is not NULL, that bearer token instead of the operator key. */
static void idem_req(int port, const char *method, const char *path, const char *key, const char *token,
		     const char *body, struct http_resp *r)
{
	char hdr[1024];
	int n = 0;
	hdr[0] = 0;
	if (key)
		n += snprintf(hdr + n, sizeof(hdr) - (size_t)n, "Idempotency-Key: %s\r\n", key);
	if (token)
		snprintf(hdr + n, sizeof(hdr) - (size_t)n, "Authorization: Bearer %s\r\n", token);
	cr_assert_eq(http_do(port, method, path, hdr, body, r), 0, "%s %s: no response", method, path);
}

static int replayed(const struct http_resp *r)
{
	char v[32];
	return http_header(r, "Idempotent-Replayed", v, sizeof(v)) >= 0 && strcmp(v, "true") == 0;
}

static void expect_problem(const struct http_resp *r, int status, const char *code)
{
	cr_assert_eq(r->status, status, "expected %d %s, got %d: %s", status, code, r->status, r->body);
	cr_assert(strstr(r->head, "application/problem+json"), "%s", r->head);
	struct json_doc *j = body_json(r);
	cr_assert_str_eq(jstr(j, "code"), code, "%s", r->body);
	json_doc_free(j);
}

/* The replay is the first response again, byte for byte, marked. */
static void expect_replay_of(const struct http_resp *first, const struct http_resp *again)
{
	cr_assert_eq(again->status, first->status, "%s", again->body);
	cr_assert(replayed(again), "Idempotent-Replayed: true expected:\n%s", again->head);
	cr_assert_eq(again->body_len, first->body_len, "%s\nvs\n%s", again->body, first->body);
	cr_assert_eq(memcmp(again->body, first->body, first->body_len), 0, "%s\nvs\n%s", again->body,
		     first->body);
	char a[128], b[128];
	cr_assert_geq(http_header(first, "Content-Type", a, sizeof(a)), 0);
	cr_assert_geq(http_header(again, "Content-Type", b, sizeof(b)), 0);
	cr_assert_str_eq(a, b);
}

static long count_partners(int port)
{
	struct http_resp r;
	cr_assert_eq(http_do(port, "GET", "/v1/partners?page_size=200", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	struct json_doc *j = body_json(&r);
	long n = jarr_len(j, "data");
	cr_assert_geq(n, 0, "%s", r.body);
	json_doc_free(j);
	http_resp_free(&r);
	return n;
}

/* Rows of a table, from /metrics. */
static long table_rows(int port, const char *table)
{
	struct http_resp r;
	cr_assert_eq(http_do(port, "GET", "/metrics", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200);
	char pat[128];
	snprintf(pat, sizeof(pat), "wm_table_rows{table=\"%s\"} ", table);
	const char *m = strstr(r.body, pat);
	cr_assert_not_null(m, "no %s in /metrics", pat);
	long n = strtol(m + strlen(pat), NULL, 10);
	http_resp_free(&r);
	return n;
}

/* The "id" of a JSON response body, copied into out. */
static void body_id(const struct http_resp *r, char *out, size_t size)
{
	struct json_doc *j = body_json(r);
	const char *id = jstr(j, "id");
	cr_assert_not_null(id, "%s", r->body);
	snprintf(out, size, "%s", id);
	json_doc_free(j);
}

static const char PARTNER_A[] = "{\"legal_name\":\"Domaine Idem\",\"country\":\"FR\"}";
static const char PARTNER_B[] = "{\"legal_name\":\"Weingut Idem\",\"country\":\"DE\"}";

/* ---- the record table on its own ----------------------------------------- */

/* Put a record document laid out as idem.c writes it ("body" last). */
static int put_doc(struct table *t, const char *id, const char *entity, const char *key, int status,
		   const char *state, const char *body)
{
	char doc[2048], why[128];
	size_t bl = strlen(body);
	int n = snprintf(doc, sizeof(doc),
			 "{\"id\":\"%s\",\"entity_id\":\"%s\",\"key\":\"%s\",\"fingerprint\":"
			 "\"00112233445566778899aabbccddeeff\",\"status\":%d,\"content_type\":\"application/json\","
			 "\"created_at\":\"2024-01-02T03:04:05.678Z\",\"body_state\":\"%s\",\"body_len\":%zu%s%s}",
			 id, entity, key, status, state, bl, bl ? ",\"body\":" : "", body);
	cr_assert(n > 0 && (size_t)n < sizeof(doc));
	return table_put(t, id, strlen(id), doc, (size_t)n, 7, why);
}

static void expect_body(const struct idem_record *x, const char *body)
{
	cr_assert_not_null(x);
	cr_assert_eq(x->body_state, IDEM_BODY_STORED);
	cr_assert_eq(x->body_len, strlen(body));
	cr_assert_eq(memcmp(x->row.doc + x->body_off, body, x->body_len), 0, "%.*s", (int)x->body_len,
		     x->row.doc + x->body_off);
}

WM_TEST(idem, table_decodes_and_chains_one_key_across_entities)
{
	struct table t;
	cr_assert_eq(table_init(&t, &idem_table_ops, NULL), 0);
	cr_assert_eq(put_doc(&t, "idem_1", "platform", "k-1", 201, "stored", "{\"id\":\"ptn_1\"}"), 0);
	cr_assert_eq(put_doc(&t, "idem_2", "ptn_A", "k-1", 200, "stored", "[1,2]"), 0);
	cr_assert_eq(put_doc(&t, "idem_3", "ptn_B", "k-1", 204, "stored", ""), 0);
	cr_assert_eq(put_doc(&t, "idem_4", "platform", "k-2", 201, "too_large", ""), 0);

	const struct idem_record *p = idem_find(&t, "platform", "k-1", 3);
	expect_body(p, "{\"id\":\"ptn_1\"}");
	cr_assert_eq(p->status, 201);
	cr_assert_eq(p->created_ms, 1704164645678ull);
	cr_assert_eq(p->fingerprint[0], 0x00);
	cr_assert_eq(p->fingerprint[15], 0xff);
	cr_assert_eq(p->row.lsn, 7);
	expect_body(idem_find(&t, "ptn_A", "k-1", 3), "[1,2]");
	expect_body(idem_find(&t, "ptn_B", "k-1", 3), "");
	const struct idem_record *big = idem_find(&t, "platform", "k-2", 3);
	cr_assert_not_null(big);
	cr_assert_eq(big->body_state, IDEM_BODY_TOO_LARGE);
	cr_assert_eq(big->body_len, 0);
	cr_assert_null(idem_find(&t, "ptn_C", "k-1", 3), "keys are per entity");
	cr_assert_null(idem_find(&t, "ptn_A", "k-2", 3));
	cr_assert_null(idem_find(&t, "platform", "k-", 2));

	/* unlink from the middle, the head and the tail of the chain */
	cr_assert_eq(table_del(&t, "idem_2", 6, 8), 0);
	cr_assert_null(idem_find(&t, "ptn_A", "k-1", 3));
	cr_assert_not_null(idem_find(&t, "platform", "k-1", 3));
	cr_assert_not_null(idem_find(&t, "ptn_B", "k-1", 3));
	cr_assert_eq(table_del(&t, "idem_3", 6, 9), 0);
	cr_assert_null(idem_find(&t, "ptn_B", "k-1", 3));
	expect_body(idem_find(&t, "platform", "k-1", 3), "{\"id\":\"ptn_1\"}");
	cr_assert_eq(table_del(&t, "idem_1", 6, 10), 0);
	cr_assert_null(idem_find(&t, "platform", "k-1", 3));
	cr_assert_not_null(idem_find(&t, "platform", "k-2", 3));
	/* a key string reused after its record is gone */
	cr_assert_eq(put_doc(&t, "idem_5", "ptn_A", "k-1", 201, "stored", "{}"), 0);
	expect_body(idem_find(&t, "ptn_A", "k-1", 3), "{}");
	cr_assert_eq(table_count(&t), 2);
	table_fini(&t);
}

WM_TEST(idem, table_rejects_malformed_records)
{
	struct table t;
	cr_assert_eq(table_init(&t, &idem_table_ops, NULL), 0);
	char why[128];
	/* body not the last member: its bytes cannot be located exactly */
	const char not_last[] = "{\"id\":\"idem_1\",\"entity_id\":\"platform\",\"key\":\"k\",\"fingerprint\":"
				"\"00112233445566778899aabbccddeeff\",\"status\":201,\"content_type\":\"application/json\","
				"\"created_at\":\"2024-01-02T03:04:05.678Z\",\"body_state\":\"stored\",\"body\":{},"
				"\"body_len\":2}";
	cr_assert_eq(table_put(&t, "idem_1", 6, not_last, sizeof(not_last) - 1, 1, why), -1);
	/* body_len that does not match the body */
	const char bad_len[] = "{\"id\":\"idem_1\",\"entity_id\":\"platform\",\"key\":\"k\",\"fingerprint\":"
			       "\"00112233445566778899aabbccddeeff\",\"status\":201,\"content_type\":\"application/json\","
			       "\"created_at\":\"2024-01-02T03:04:05.678Z\",\"body_state\":\"stored\",\"body_len\":3,"
			       "\"body\":{\"a\":1}}";
	cr_assert_eq(table_put(&t, "idem_1", 6, bad_len, sizeof(bad_len) - 1, 1, why), -1);
	cr_assert_eq(put_doc(&t, "idem_1", "platform", "bad key", 201, "stored", "{}"), -1, "space in key");
	cr_assert_eq(put_doc(&t, "idem_1", "platform", "", 201, "stored", "{}"), -1, "empty key");
	cr_assert_eq(put_doc(&t, "idem_1", "", "k", 201, "stored", "{}"), -1, "no entity");
	cr_assert_eq(put_doc(&t, "idem_1", "platform", "k", 99, "stored", "{}"), -1, "status out of range");
	cr_assert_eq(put_doc(&t, "idem_1", "platform", "k", 201, "lost", "{}"), -1, "unknown body_state");
	cr_assert_eq(put_doc(&t, "idem_1", "platform", "k", 201, "withheld", "{}"), -1,
		     "a body with a not-stored state");
	cr_assert_eq(table_count(&t), 0);
	cr_assert_eq(put_doc(&t, "idem_1", "platform", "k", 201, "withheld", ""), 0);
	cr_assert_eq(idem_find(&t, "platform", "k", 1)->body_state, IDEM_BODY_WITHHELD);
	table_fini(&t);
}

WM_TEST(idem, key_syntax_bounds)
{
	char k[IDEM_MAX_KEY + 2];
	memset(k, 'a', sizeof(k));
	cr_assert(idem_key_valid(k, IDEM_MAX_KEY), "255 characters");
	cr_assert_not(idem_key_valid(k, IDEM_MAX_KEY + 1), "256 characters");
	cr_assert(idem_key_valid("!", 1));
	cr_assert(idem_key_valid("~", 1));
	cr_assert(idem_key_valid("0b6f1c2e-7a1d-4f43-9c55-2d3e4f5a6b7c", 36));
	cr_assert_not(idem_key_valid("", 0));
	cr_assert_not(idem_key_valid("a b", 3));
	cr_assert_not(idem_key_valid("a\tb", 3));
	cr_assert_not(idem_key_valid("a\x7f", 2));
	cr_assert_not(idem_key_valid("caf\xc3\xa9", 5));
}

/* ---- real processes ------------------------------------------------------ */

WM_TEST(idem, same_key_same_request_replays_byte_for_byte)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL, NULL);
	struct http_resp first, again;
	idem_req(p.port, "POST", "/v1/partners", "order-7f3a", NULL, PARTNER_A, &first);
	cr_assert_eq(first.status, 201, "%s", first.body);
	cr_assert_not(replayed(&first), "the first answer is not a replay");
	for (int i = 0; i < 3; i++) {
		idem_req(p.port, "POST", "/v1/partners", "order-7f3a", NULL, PARTNER_A, &again);
		expect_replay_of(&first, &again);
		http_resp_free(&again);
	}
	cr_assert_eq(count_partners(p.port), 1, "one partner, however many retries");
	cr_assert_eq(table_rows(p.port, "idempotency"), 1);
	/* another key is another request */
	idem_req(p.port, "POST", "/v1/partners", "order-7f3b", NULL, PARTNER_A, &again);
	cr_assert_eq(again.status, 201, "%s", again.body);
	cr_assert_not(replayed(&again));
	cr_assert(strcmp(again.body, first.body) != 0);
	http_resp_free(&again);
	/* and no key: no record */
	idem_req(p.port, "POST", "/v1/partners", NULL, NULL, PARTNER_A, &again);
	cr_assert_eq(again.status, 201, "%s", again.body);
	http_resp_free(&again);
	cr_assert_eq(count_partners(p.port), 3);
	cr_assert_eq(table_rows(p.port, "idempotency"), 2);
	http_resp_free(&first);
	cr_assert_eq(wm_stop(&p), 0, "graceful stop exits 0 (and no leaks under ASan)");
	wm_proc_cleanup(&p);
}

WM_TEST(idem, same_key_other_body_path_or_query_is_422)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL, NULL);
	struct http_resp first, r;
	idem_req(p.port, "POST", "/v1/partners", "k-reuse", NULL, PARTNER_A, &first);
	cr_assert_eq(first.status, 201, "%s", first.body);
	char id[64], path[128];
	body_id(&first, id, sizeof(id));
	snprintf(path, sizeof(path), "/v1/partners/%s", id);

	idem_req(p.port, "POST", "/v1/partners", "k-reuse", NULL, PARTNER_B, &r);
	expect_problem(&r, 422, "idempotency_key_reused");
	cr_assert_not(replayed(&r));
	http_resp_free(&r);
	/* one byte of whitespace is another body */
	idem_req(p.port, "POST", "/v1/partners", "k-reuse", NULL,
		 "{\"legal_name\":\"Domaine Idem\", \"country\":\"FR\"}", &r);
	expect_problem(&r, 422, "idempotency_key_reused");
	http_resp_free(&r);
	idem_req(p.port, "POST", "/v1/partners?x=1", "k-reuse", NULL, PARTNER_A, &r);
	expect_problem(&r, 422, "idempotency_key_reused");
	http_resp_free(&r);
	idem_req(p.port, "PATCH", path, "k-reuse", NULL, "{\"legal_name\":\"New name\"}", &r);
	expect_problem(&r, 422, "idempotency_key_reused");
	http_resp_free(&r);

	/* nothing of the above ran: the partner is unchanged, no other exists */
	cr_assert_eq(count_partners(p.port), 1);
	cr_assert_eq(http_do(p.port, "GET", path, NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200);
	cr_assert_str_eq(r.body, first.body);
	http_resp_free(&r);
	/* and the original request still replays */
	idem_req(p.port, "POST", "/v1/partners", "k-reuse", NULL, PARTNER_A, &r);
	expect_replay_of(&first, &r);
	http_resp_free(&r);
	http_resp_free(&first);
	wm_proc_cleanup(&p);
}

WM_TEST(idem, malformed_keys_are_400_and_255_characters_are_accepted)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL, NULL);
	struct http_resp r;
	char k255[IDEM_MAX_KEY + 1], k256[IDEM_MAX_KEY + 2];
	memset(k255, 'k', IDEM_MAX_KEY);
	k255[IDEM_MAX_KEY] = 0;
	memset(k256, 'k', IDEM_MAX_KEY + 1);
	k256[IDEM_MAX_KEY + 1] = 0;

	const char *bad[] = {"", k256, "tab\there", "with space", "caf\xc3\xa9"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		idem_req(p.port, "POST", "/v1/partners", bad[i], NULL, PARTNER_A, &r);
		expect_problem(&r, 400, "invalid_idempotency_key");
		http_resp_free(&r);
	}
	cr_assert_eq(http_do(p.port, "POST", "/v1/partners", "Idempotency-Key: one\r\nIdempotency-Key: two\r\n",
			     PARTNER_A, &r),
		     0);
	expect_problem(&r, 400, "invalid_idempotency_key");
	http_resp_free(&r);
	cr_assert_eq(count_partners(p.port), 0, "no malformed request ran");
	cr_assert_eq(table_rows(p.port, "idempotency"), 0);

	struct http_resp first;
	idem_req(p.port, "POST", "/v1/partners", k255, NULL, PARTNER_A, &first);
	cr_assert_eq(first.status, 201, "%s", first.body);
	idem_req(p.port, "POST", "/v1/partners", k255, NULL, PARTNER_A, &r);
	expect_replay_of(&first, &r);
	http_resp_free(&r);
	/* visible ASCII punctuation is fine */
	idem_req(p.port, "POST", "/v1/partners", "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", NULL, PARTNER_B, &r);
	cr_assert_eq(r.status, 201, "%s", r.body);
	http_resp_free(&r);
	cr_assert_eq(count_partners(p.port), 2);
	http_resp_free(&first);
	wm_proc_cleanup(&p);
}

WM_TEST(idem, failed_request_stores_nothing)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL, NULL);
	struct http_resp r;
	const char invalid[] = "{\"legal_name\":\"X\",\"country\":\"XX\"}";
	idem_req(p.port, "POST", "/v1/partners", "k-fix-me", NULL, invalid, &r);
	expect_problem(&r, 422, "validation_failed");
	http_resp_free(&r);
	/* the same failing request runs again (nothing was remembered) */
	idem_req(p.port, "POST", "/v1/partners", "k-fix-me", NULL, invalid, &r);
	expect_problem(&r, 422, "validation_failed");
	cr_assert_not(replayed(&r));
	http_resp_free(&r);
	/* a 404 is not remembered either */
	idem_req(p.port, "PATCH", "/v1/partners/ptn_doesnotexist", "k-fix-me", NULL, "{\"legal_name\":\"Y\"}", &r);
	expect_problem(&r, 404, "not_found");
	http_resp_free(&r);
	cr_assert_eq(table_rows(p.port, "idempotency"), 0);

	/* the corrected request with the same key creates */
	struct http_resp first;
	idem_req(p.port, "POST", "/v1/partners", "k-fix-me", NULL, PARTNER_A, &first);
	cr_assert_eq(first.status, 201, "%s", first.body);
	cr_assert_not(replayed(&first));
	idem_req(p.port, "POST", "/v1/partners", "k-fix-me", NULL, PARTNER_A, &r);
	expect_replay_of(&first, &r);
	http_resp_free(&r);
	/* and from now on the failing body is a reuse of the key */
	idem_req(p.port, "POST", "/v1/partners", "k-fix-me", NULL, invalid, &r);
	expect_problem(&r, 422, "idempotency_key_reused");
	http_resp_free(&r);
	cr_assert_eq(count_partners(p.port), 1);
	http_resp_free(&first);
	wm_proc_cleanup(&p);
}

/* Mint a secret key for a partner with the operator key; copies the token. */
static void mint_partner_key(int port, const char *partner_id, char *tok, size_t size)
{
	char body[128];
	snprintf(body, sizeof(body), "{\"entity_id\":\"%s\"}", partner_id);
	struct http_resp r;
	cr_assert_eq(http_do(port, "POST", "/api/keys", NULL, body, &r), 0);
	cr_assert_eq(r.status, 201, "%s", r.body);
	struct json_doc *j = body_json(&r);
	cr_assert_not_null(jstr(j, "key"), "%s", r.body);
	snprintf(tok, size, "%s", jstr(j, "key"));
	json_doc_free(j);
	http_resp_free(&r);
}

WM_TEST(idem, keys_are_per_entity)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL, NULL);
	struct http_resp r, op_first, ptn_first;
	idem_req(p.port, "POST", "/v1/partners", NULL, NULL, PARTNER_A, &r);
	cr_assert_eq(r.status, 201, "%s", r.body);
	char pid[64], path[128], tok[128];
	body_id(&r, pid, sizeof(pid));
	http_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/partners/%s", pid);
	mint_partner_key(p.port, pid, tok, sizeof(tok));

	/* the operator uses the key string first ... */
	idem_req(p.port, "POST", "/v1/partners", "shared-key", NULL, PARTNER_B, &op_first);
	cr_assert_eq(op_first.status, 201, "%s", op_first.body);
	/* ... the partner's request with the same string is its own: it runs
	 * (a shared record would have answered 422: another method, path, body) */
	idem_req(p.port, "PATCH", path, "shared-key", tok, "{\"legal_name\":\"New name\"}", &ptn_first);
	cr_assert_eq(ptn_first.status, 200, "%s", ptn_first.body);
	cr_assert_not(replayed(&ptn_first));
	struct json_doc *j = body_json(&ptn_first);
	cr_assert_str_eq(jstr(j, "legal_name"), "New name");
	json_doc_free(j);
	/* each replays its own answer */
	idem_req(p.port, "PATCH", path, "shared-key", tok, "{\"legal_name\":\"New name\"}", &r);
	expect_replay_of(&ptn_first, &r);
	http_resp_free(&r);
	idem_req(p.port, "POST", "/v1/partners", "shared-key", NULL, PARTNER_B, &r);
	expect_replay_of(&op_first, &r);
	http_resp_free(&r);
	/* and the operator does not see the partner's record */
	idem_req(p.port, "PATCH", path, "shared-key", NULL, "{\"legal_name\":\"New name\"}", &r);
	expect_problem(&r, 422, "idempotency_key_reused");
	http_resp_free(&r);
	cr_assert_eq(table_rows(p.port, "idempotency"), 2);
	cr_assert_eq(count_partners(p.port), 2);
	http_resp_free(&op_first);
	http_resp_free(&ptn_first);
	wm_proc_cleanup(&p);
}

WM_TEST(idem, minted_key_secret_is_never_stored)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL, NULL);
	struct http_resp r, first;
	idem_req(p.port, "POST", "/v1/partners", NULL, NULL, PARTNER_A, &r);
	cr_assert_eq(r.status, 201, "%s", r.body);
	char pid[64], body[128], list[160];
	body_id(&r, pid, sizeof(pid));
	http_resp_free(&r);
	snprintf(body, sizeof(body), "{\"entity_id\":\"%s\"}", pid);
	idem_req(p.port, "POST", "/api/keys", "mint-1", NULL, body, &first);
	cr_assert_eq(first.status, 201, "%s", first.body);
	struct json_doc *j = body_json(&first);
	const char *tok = jstr(j, "key");
	cr_assert_not_null(tok);
	idem_req(p.port, "POST", "/api/keys", "mint-1", NULL, body, &r);
	cr_assert_eq(r.status, 201, "the status is replayed: %s", r.body);
	cr_assert(replayed(&r));
	cr_assert_null(strstr(r.body, tok), "the plaintext key is not replayed: %s", r.body);
	struct json_doc *rj = body_json(&r);
	cr_assert_str_eq(jstr(rj, "code"), "idempotent_response_not_stored");
	json_doc_free(rj);
	http_resp_free(&r);
	json_doc_free(j);
	/* one key was minted */
	snprintf(list, sizeof(list), "/api/keys?entity_id=%s", pid);
	cr_assert_eq(http_do(p.port, "GET", list, NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	rj = body_json(&r);
	cr_assert_eq(jarr_len(rj, "data"), 1, "%s", r.body);
	json_doc_free(rj);
	http_resp_free(&r);
	http_resp_free(&first);
	wm_proc_cleanup(&p);
}

WM_TEST(idem, replay_survives_kill9_from_wal_and_snapshot)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL, NULL);
	struct http_resp in_snap, in_wal, r;
	idem_req(p.port, "POST", "/v1/partners", "before-snapshot", NULL, PARTNER_A, &in_snap);
	cr_assert_eq(in_snap.status, 201, "%s", in_snap.body);
	cr_assert_eq(http_do(p.port, "POST", "/v1/admin/snapshots", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 202, "%s", r.body);
	http_resp_free(&r);
	int taken = 0;
	for (int i = 0; i < 500 && !taken; i++) {
		cr_assert_eq(http_do(p.port, "GET", "/v1/admin/snapshots", NULL, NULL, &r), 0);
		struct json_doc *j = body_json(&r);
		int64_t nt = 0;
		taken = json_to_int64(json_get(json_root(j), "taken"), &nt) == 0 && nt >= 1;
		json_doc_free(j);
		http_resp_free(&r);
		if (!taken)
			usleep(20000);
	}
	cr_assert(taken, "snapshot finished");
	idem_req(p.port, "POST", "/v1/partners", "after-snapshot", NULL, PARTNER_B, &in_wal);
	cr_assert_eq(in_wal.status, 201, "%s", in_wal.body);
	wm_kill9(&p); /* right after the acknowledged 201 */

	start_or_fail(&p, NULL, NULL);
	cr_assert_eq(table_rows(p.port, "idempotency"), 2);
	idem_req(p.port, "POST", "/v1/partners", "before-snapshot", NULL, PARTNER_A, &r);
	expect_replay_of(&in_snap, &r);
	http_resp_free(&r);
	idem_req(p.port, "POST", "/v1/partners", "after-snapshot", NULL, PARTNER_B, &r);
	expect_replay_of(&in_wal, &r);
	http_resp_free(&r);
	idem_req(p.port, "POST", "/v1/partners", "after-snapshot", NULL, PARTNER_A, &r);
	expect_problem(&r, 422, "idempotency_key_reused");
	http_resp_free(&r);
	cr_assert_eq(count_partners(p.port), 2);
	http_resp_free(&in_snap);
	http_resp_free(&in_wal);
	wm_proc_cleanup(&p);
}

WM_TEST(idem, duplicate_while_first_not_durable_is_409)
{
	struct wm_proc p;
	wm_proc_init(&p);
	const char *env[] = {"WM_ERRINJ=wal_slow_sync", NULL};
	start_or_fail(&p, NULL, env);
	char req[1024];
	int n = snprintf(req, sizeof(req),
			 "POST /v1/partners HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " WM_TEST_KEY "\r\n"
			 "Idempotency-Key: race-1\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
			 sizeof(PARTNER_A) - 1, PARTNER_A);
	cr_assert(n > 0 && (size_t)n < sizeof(req));
	/* both sent before either is answered: the first one's fsync takes
	 * 400 ms, so the second meets its record while it is not durable */
	int a = tcp_connect(p.port), b = tcp_connect(p.port);
	cr_assert(a >= 0 && b >= 0);
	cr_assert_eq(write(a, req, (size_t)n), n);
	cr_assert_eq(write(b, req, (size_t)n), n);
	struct http_resp ra, rb;
	cr_assert_geq(http_read_response(a, &ra, 30000), 0);
	cr_assert_geq(http_read_response(b, &rb, 30000), 0);
	close(a);
	close(b);
	/* the loop may take either connection first: one ran, one was refused */
	struct http_resp *ran = ra.status == 201 ? &ra : &rb, *refused = ra.status == 201 ? &rb : &ra;
	cr_assert_eq(ran->status, 201, "one request ran: %d %s / %d %s", ra.status, ra.body, rb.status, rb.body);
	expect_problem(refused, 409, "idempotency_in_flight");
	cr_assert_not(replayed(refused));
	char ra_v[16];
	cr_assert_geq(http_header(refused, "Retry-After", ra_v, sizeof(ra_v)), 0);
	/* once the first is answered, a retry is a replay */
	struct http_resp r;
	idem_req(p.port, "POST", "/v1/partners", "race-1", NULL, PARTNER_A, &r);
	expect_replay_of(ran, &r);
	http_resp_free(&r);
	cr_assert_eq(count_partners(p.port), 1);
	http_resp_free(&ra);
	http_resp_free(&rb);
	wm_proc_cleanup(&p);
}

WM_TEST(idem, expired_records_are_pruned)
{
	struct wm_proc p;
	wm_proc_init(&p);
	const char *args[] = {"--idempotency-ttl-s", "1", NULL};
	start_or_fail(&p, args, NULL);
	struct http_resp first, r;
	idem_req(p.port, "POST", "/v1/partners", "short-lived", NULL, PARTNER_A, &first);
	cr_assert_eq(first.status, 201, "%s", first.body);
	char id1[64], id2[64] = "";
	body_id(&first, id1, sizeof(id1));
	usleep(1500000);
	/* retries replay until the record is pruned, then the key is new */
	int fresh = 0;
	for (int i = 0; i < 80 && !fresh; i++) {
		idem_req(p.port, "POST", "/v1/partners", "short-lived", NULL, PARTNER_A, &r);
		cr_assert_eq(r.status, 201, "%s", r.body);
		if (replayed(&r)) {
			cr_assert_eq(memcmp(r.body, first.body, first.body_len), 0);
			usleep(250000);
		} else {
			fresh = 1;
			body_id(&r, id2, sizeof(id2));
		}
		http_resp_free(&r);
	}
	cr_assert(fresh, "the record was never pruned");
	cr_assert_str_neq(id1, id2, "a new partner was created");
	cr_assert_eq(count_partners(p.port), 2);
	cr_assert_leq(table_rows(p.port, "idempotency"), 1, "the expired record is gone");
	http_resp_free(&first);
	wm_proc_cleanup(&p);
}
