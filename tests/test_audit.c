/*
 * test_audit.c -- the read audit against real wm-shard processes: one row
 * per authenticated read with the right key, entity, endpoint, status,
 * rows and cursor span; none for a 401 or a write; GET /v1/audit for
 * operators only, filtered by key_id or entity_id; rows across a restart;
 * --audit-keep; the abnormal-usage alert (event + log line); metrics.
 * (The in-process unit tests are in test_audit_units.c.)
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/api_client.h"
#include "tests/harness.h"
#include "tests/wm_test.h"

/* The value of a metric line "name value" in text (-1 if absent). */
static long long metric(const char *text, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = text; (p = strstr(p, name)); p += n)
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return atoll(p + n + 1);
	return -1;
}

static json_t *body_json(const struct http_resp *r)
{
	json_error_t e;
	json_t *j = json_loadb(r->body, r->body_len, 0, &e);
	cr_assert_not_null(j, "response body is not JSON: %s\n%s", e.text, r->body);
	return j;
}

static long long jint(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	cr_assert(json_is_integer(v), "%s is not an integer", k);
	return json_integer_value(v);
}

static void start(struct wm_proc *p, const char *const *args)
{
	cr_assert_eq(wm_start(p, args, NULL), 0, "wm-shard did not start (logs in %s)", p->dir);
}

/* Request as `auth` ("" = the operator key, "none" = no key); the parsed body (caller
 * decrefs), status in *status and the request id in rid (may be NULL). */
static json_t *call(int port, const char *method, const char *path, const char *auth, const char *body,
		    int *status, char *rid)
{
	char hdr[256] = "";
	if (!strcmp(auth, "none"))
		snprintf(hdr, sizeof(hdr), "Authorization: none\r\n");
	else if (auth[0])
		snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s\r\n", auth);
	struct http_resp r;
	cr_assert_eq(http_do(port, method, path, hdr[0] ? hdr : NULL, body, &r), 0, "%s %s", method, path);
	*status = r.status;
	if (rid)
		cr_assert_eq(http_header(&r, "X-Request-Id", rid, 32) > 0, 1);
	json_t *j = r.body_len && r.body[0] == '{' ? body_json(&r) : json_object();
	http_resp_free(&r);
	return j;
}

static void must(int port, const char *method, const char *path, const char *auth, const char *body,
		 int want, json_t **out, char *rid)
{
	int st;
	json_t *j = call(port, method, path, auth, body, &st, rid);
	if (st != want) {
		char *s = json_dumps(j, 0);
		cr_assert_fail("%s %s: status %d, want %d: %s", method, path, st, want, s ? s : "");
	}
	if (out)
		*out = j;
	else
		json_decref(j);
}

/* A partner (operator); its id into id. */
static void new_partner(int port, const char *name, char id[64])
{
	char body[128];
	snprintf(body, sizeof(body), "{\"legal_name\":\"%s\",\"country\":\"FR\"}", name);
	json_t *j;
	must(port, "POST", "/v1/partners", "", body, 201, &j, NULL);
	snprintf(id, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
}

/* A secret key for entity (minted by the operator): plaintext and id. */
static void new_key(int port, const char *entity, char key[128], char key_id[64])
{
	char body[128];
	snprintf(body, sizeof(body), "{\"entity_id\":\"%s\"}", entity);
	json_t *j;
	must(port, "POST", "/api/keys", "", body, 201, &j, NULL);
	snprintf(key, 128, "%s", tc_jstr(j, "key"));
	snprintf(key_id, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
}

/* GET /v1/audit<query> as the operator: the data array (caller decrefs the
 * returned page object; *data borrows from it). */
static json_t *audit_page(int port, const char *query, json_t **data)
{
	char path[512];
	snprintf(path, sizeof(path), "/v1/audit%s", query);
	json_t *j;
	must(port, "GET", path, "", NULL, 200, &j, NULL);
	*data = json_object_get(j, "data");
	cr_assert(json_is_array(*data));
	return j;
}

/* Count of every audit row in memory (pages through as the operator; each
 * page read is itself audited, after it is answered). */
static size_t audit_count_all(int port, int *reads)
{
	json_t *data;
	json_t *j = audit_page(port, "?page_size=200", &data);
	size_t n = json_array_size(data);
	(*reads)++;
	cr_assert(json_is_false(json_object_get(j, "has_more")), "test expects one page");
	json_decref(j);
	return n;
}

static void check_row(json_t *row, const char *key_id, const char *entity, const char *endpoint, int status,
		      int rows, const char *rid)
{
	cr_assert_eq(json_object_size(row), 9, "the members of AuditRecord (api/openapi.json), no more");
	cr_assert_str_eq(tc_jstr(row, "key_id"), key_id);
	cr_assert_str_eq(tc_jstr(row, "entity_id"), entity);
	cr_assert_str_eq(tc_jstr(row, "endpoint"), endpoint);
	cr_assert_eq(jint(row, "status"), status, "%s", endpoint);
	cr_assert_eq(jint(row, "rows_returned"), rows, "%s", endpoint);
	cr_assert_str_eq(tc_jstr(row, "request_id"), rid);
	cr_assert(tc_jstr(row, "id") && !strncmp(tc_jstr(row, "id"), "aud_", 4));
	cr_assert(tc_jstr(row, "at") && strlen(tc_jstr(row, "at")) == 24, "RFC 3339 with ms");
}

WM_TEST(audit, every_partner_read_writes_one_row)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start(&p, NULL);
	char ptn[64], other[64], key[128], kid[64], path[256], rid[3][32];
	new_partner(p.port, "Domaine A", ptn);
	new_partner(p.port, "Domaine B", other);
	new_key(p.port, ptn, key, kid);

	json_t *j;
	must(p.port, "GET", "/v1/partners", key, NULL, 200, &j, rid[0]);
	int listed = (int)json_array_size(json_object_get(j, "data"));
	cr_assert_geq(listed, 1);
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/partners/%s", ptn);
	must(p.port, "GET", path, key, NULL, 200, NULL, rid[1]);
	must(p.port, "GET", "/v1/partners/ptn_doesnotexist", key, NULL, 404, NULL, rid[2]);

	/* a 401 writes nothing; nor does a write */
	int reads = 0;
	size_t n0 = audit_count_all(p.port, &reads);
	must(p.port, "GET", "/v1/partners", "wm_sk_000000000000000000000000000000000000", NULL, 401, NULL, NULL);
	must(p.port, "GET", "/v1/partners", "none", NULL, 401, NULL, NULL);
	size_t n1 = audit_count_all(p.port, &reads);
	cr_assert_eq(n1, n0 + 1, "only the audit read itself was added (%zu -> %zu)", n0, n1);
	snprintf(path, sizeof(path), "/v1/partners/%s", ptn);
	must(p.port, "PATCH", path, key, "{\"legal_name\":\"Domaine A2\"}", 200, NULL, NULL);
	new_partner(p.port, "Domaine C", other);
	size_t n2 = audit_count_all(p.port, &reads);
	cr_assert_eq(n2, n1 + 1, "writes are not audited (%zu -> %zu)", n1, n2);

	/* the partner's rows, by key and by entity */
	char q[256];
	json_t *data;
	snprintf(q, sizeof(q), "?key_id=%s", kid);
	json_t *pg = audit_page(p.port, q, &data);
	cr_assert_eq(json_array_size(data), 3, "one row per read");
	check_row(json_array_get(data, 0), kid, ptn, "GET /v1/partners", 200, listed, rid[0]);
	check_row(json_array_get(data, 1), kid, ptn, "GET /v1/partners/{id}", 200, 1, rid[1]);
	check_row(json_array_get(data, 2), kid, ptn, "GET /v1/partners/{id}", 404, 0, rid[2]);
	for (size_t i = 0; i < 3; i++) {
		json_t *span = json_object_get(json_array_get(data, i), "cursor_span");
		cr_assert(json_is_null(json_object_get(span, "from")) && json_is_null(json_object_get(span, "to")));
	}
	char *by_key = json_dumps(data, 0);
	json_decref(pg);
	snprintf(q, sizeof(q), "?entity_id=%s", ptn);
	pg = audit_page(p.port, q, &data);
	char *by_entity = json_dumps(data, 0);
	cr_assert_str_eq(by_entity, by_key, "the entity index finds the same rows");
	free(by_entity);
	free(by_key);
	json_decref(pg);

	/* a partner key may not read the audit; the attempt is audited */
	char arid[32];
	must(p.port, "GET", "/v1/audit", key, NULL, 403, NULL, arid);
	snprintf(q, sizeof(q), "?key_id=%s", kid);
	pg = audit_page(p.port, q, &data);
	cr_assert_eq(json_array_size(data), 4);
	check_row(json_array_get(data, 3), kid, ptn, "GET /v1/audit", 403, 0, arid);
	json_decref(pg);

	/* operator rows; unknown filter values; bad filters */
	pg = audit_page(p.port, "?entity_id=platform&page_size=200", &data);
	cr_assert_geq(json_array_size(data), 5);
	for (size_t i = 0; i < json_array_size(data); i++)
		cr_assert_str_eq(tc_jstr(json_array_get(data, i), "entity_id"), "platform");
	json_decref(pg);
	static const char *const none[] = {"?key_id=key_nosuchkey", "?entity_id=ptn_nosuchpartner",
					    "?key_id=key_0123456789012345678901234567890123456789012345"};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		pg = audit_page(p.port, none[i], &data);
		cr_assert_eq(json_array_size(data), 0, "%s", none[i]);
		json_decref(pg);
	}
	static const char *const bad[] = {"/v1/audit?key_id=a&entity_id=b", "/v1/audit?key_id=",
					   "/v1/audit?entity_id="};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		must(p.port, "GET", bad[i], "", NULL, 400, &j, NULL);
		cr_assert_str_eq(tc_jstr(j, "code"), "invalid_filter", "%s", bad[i]);
		json_decref(j);
	}
	cr_assert_eq(wm_stop(&p), 0);
	wm_proc_cleanup(&p);
}

/* The audit row with this request id among the operator's rows. */
static json_t *row_by_rid(json_t *data, const char *rid)
{
	for (size_t i = 0; i < json_array_size(data); i++)
		if (!strcmp(tc_jstr(json_array_get(data, i), "request_id"), rid))
			return json_array_get(data, i);
	cr_assert_fail("no audit row for %s", rid);
	return NULL;
}

static void check_span(json_t *row, const char *from, const char *to)
{
	json_t *span = json_object_get(row, "cursor_span");
	json_t *f = json_object_get(span, "from"), *t = json_object_get(span, "to");
	if (from)
		cr_assert_str_eq(json_string_value(f), from);
	else
		cr_assert(json_is_null(f));
	if (to)
		cr_assert_str_eq(json_string_value(t), to);
	else
		cr_assert(json_is_null(t));
}

WM_TEST(audit, cursor_span_follows_the_pages)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start(&p, NULL);
	char id[64];
	for (int i = 0; i < 5; i++) {
		char name[32];
		snprintf(name, sizeof(name), "Estate %d", i);
		new_partner(p.port, name, id);
	}
	/* the operator walks the partners two at a time: 2, 2, 1 */
	char rid[3][32], cur[3][400] = {"", "", ""}, path[512];
	int want_rows[3] = {2, 2, 1};
	for (int i = 0; i < 3; i++) {
		if (i)
			snprintf(path, sizeof(path), "/v1/partners?page_size=2&cursor=%s", cur[i - 1]);
		else
			snprintf(path, sizeof(path), "/v1/partners?page_size=2");
		json_t *j;
		must(p.port, "GET", path, "", NULL, 200, &j, rid[i]);
		cr_assert_eq(json_array_size(json_object_get(j, "data")), (size_t)want_rows[i]);
		const char *nc = tc_jstr(j, "next_cursor");
		cr_assert_eq(nc != NULL, i < 2, "page %d", i);
		if (nc)
			snprintf(cur[i], sizeof(cur[i]), "%s", nc);
		json_decref(j);
	}
	/* ... then pages through the audit the same way */
	char arid[32], acur[400];
	json_t *a1;
	must(p.port, "GET", "/v1/audit?entity_id=platform&page_size=2", "", NULL, 200, &a1, arid);
	cr_assert_eq(json_array_size(json_object_get(a1, "data")), 2);
	snprintf(acur, sizeof(acur), "%s", tc_jstr(a1, "next_cursor"));
	json_decref(a1);

	json_t *data, *pg = audit_page(p.port, "?entity_id=platform&page_size=200", &data);
	json_t *r0 = row_by_rid(data, rid[0]), *r1 = row_by_rid(data, rid[1]), *r2 = row_by_rid(data, rid[2]);
	cr_assert_eq(jint(r0, "rows_returned"), 2);
	cr_assert_eq(jint(r1, "rows_returned"), 2);
	cr_assert_eq(jint(r2, "rows_returned"), 1);
	check_span(r0, NULL, cur[0]);
	check_span(r1, cur[0], cur[1]);
	check_span(r2, cur[1], NULL);
	json_t *ra = row_by_rid(data, arid);
	cr_assert_str_eq(tc_jstr(ra, "endpoint"), "GET /v1/audit");
	cr_assert_eq(jint(ra, "rows_returned"), 2);
	check_span(ra, NULL, acur);
	json_decref(pg);

	/* a partner key pages its own keys: the same, for a partner */
	char key[128], kid[64], k2[128], k2id[64];
	new_key(p.port, id, key, kid);
	new_key(p.port, id, k2, k2id);
	new_key(p.port, id, k2, k2id);
	char prid[32];
	json_t *j;
	must(p.port, "GET", "/api/keys?page_size=2", key, NULL, 200, &j, prid);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 2);
	char pc[400];
	snprintf(pc, sizeof(pc), "%s", tc_jstr(j, "next_cursor"));
	json_decref(j);
	char q[128];
	snprintf(q, sizeof(q), "?key_id=%s", kid);
	pg = audit_page(p.port, q, &data);
	cr_assert_eq(json_array_size(data), 1);
	check_row(json_array_get(data, 0), kid, id, "GET /api/keys", 200, 2, prid);
	check_span(json_array_get(data, 0), NULL, pc);
	json_decref(pg);
	cr_assert_eq(wm_stop(&p), 0);
	wm_proc_cleanup(&p);
}

WM_TEST(audit, rows_survive_a_clean_restart)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start(&p, NULL);
	char ptn[64], key[128], kid[64], path[256], q[128];
	new_partner(p.port, "Domaine R", ptn);
	new_key(p.port, ptn, key, kid);
	snprintf(path, sizeof(path), "/v1/partners/%s", ptn);
	for (int i = 0; i < 7; i++)
		must(p.port, "GET", i % 2 ? path : "/v1/partners", key, NULL, 200, NULL, NULL);
	snprintf(q, sizeof(q), "?key_id=%s", kid);
	json_t *data, *pg = audit_page(p.port, q, &data);
	cr_assert_eq(json_array_size(data), 7);
	char *before = json_dumps(data, 0);
	json_decref(pg);
	cr_assert_eq(wm_stop(&p), 0);

	start(&p, NULL);
	pg = audit_page(p.port, q, &data);
	char *after = json_dumps(data, 0);
	cr_assert_str_eq(after, before, "the same audit rows after the restart");
	free(after);
	free(before);
	json_decref(pg);
	cr_assert_eq(wm_stop(&p), 0);
	wm_proc_cleanup(&p);
}

WM_TEST(audit, audit_keep_bounds_memory_and_the_wal_keeps_the_rest)
{
	struct wm_proc p;
	wm_proc_init(&p);
	const char *const keep16[] = {"--audit-keep", "16", NULL};
	start(&p, keep16);
	char ptn[64], key[128], kid[64], rid[20][32], q[128];
	new_partner(p.port, "Domaine K", ptn);
	new_key(p.port, ptn, key, kid);
	for (int i = 0; i < 20; i++)
		must(p.port, "GET", "/v1/partners", key, NULL, 200, NULL, rid[i]);

	json_t *data, *pg = audit_page(p.port, "?page_size=200", &data);
	cr_assert_eq(json_array_size(data), 16, "--audit-keep 16");
	cr_assert_str_eq(tc_jstr(json_array_get(data, 0), "request_id"), rid[4], "the oldest four were dropped");
	cr_assert_str_eq(tc_jstr(json_array_get(data, 15), "request_id"), rid[19]);
	json_decref(pg);
	snprintf(q, sizeof(q), "?key_id=%s&page_size=200", kid);
	pg = audit_page(p.port, q, &data);
	cr_assert_eq(json_array_size(data), 15, "the key index is trimmed too (one row went to the audit read)");
	cr_assert_str_eq(tc_jstr(json_array_get(data, 0), "request_id"), rid[5]);
	json_decref(pg);
	cr_assert_eq(wm_stop(&p), 0);

	/* the WAL still has every row: a larger bound brings them back */
	start(&p, NULL);
	pg = audit_page(p.port, q, &data);
	cr_assert_eq(json_array_size(data), 20);
	cr_assert_str_eq(tc_jstr(json_array_get(data, 0), "request_id"), rid[0]);
	json_decref(pg);
	cr_assert_eq(wm_stop(&p), 0);

	/* and the bound applies again on replay */
	start(&p, keep16);
	pg = audit_page(p.port, "?page_size=200", &data);
	cr_assert_eq(json_array_size(data), 16);
	json_decref(pg);
	cr_assert_eq(wm_stop(&p), 0);
	wm_proc_cleanup(&p);
}

/* The whole text of the shard's log for start n. */
static char *read_log(const struct wm_proc *p, int n)
{
	char path[400];
	snprintf(path, sizeof(path), "%s/shard-%d.log", p->dir, n);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	char *s = calloc(1, 1 << 20);
	cr_assert_not_null(s);
	size_t n_read = fread(s, 1, (1 << 20) - 1, f);
	s[n_read] = 0;
	fclose(f);
	return s;
}

WM_TEST(audit, abnormal_volume_raises_one_alert)
{
	struct wm_proc p;
	wm_proc_init(&p);
	const char *const args[] = {"--audit-alert-min-rows", "5", "--audit-alert-window-s", "1", NULL};
	start(&p, args);
	char ptn[64], key[128], kid[64], k2[128], k2id[64];
	new_partner(p.port, "Domaine V", ptn);
	new_key(p.port, ptn, key, kid);
	for (int i = 0; i < 5; i++)
		new_key(p.port, ptn, k2, k2id);
	/* first window, no history: 6 rows >= 5 and > 10 x 0 */
	json_t *j;
	must(p.port, "GET", "/api/keys?page_size=200", key, NULL, 200, &j, NULL);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 6);
	json_decref(j);

	must(p.port, "GET", "/v1/events?type=key.abnormal_usage", "", NULL, 200, &j, NULL);
	json_t *data = json_object_get(j, "data");
	cr_assert_eq(json_array_size(data), 1, "one alert event");
	json_t *ev = json_array_get(data, 0);
	cr_assert_str_eq(tc_jstr(json_object_get(ev, "scope"), "entity_id"), ptn);
	json_t *pl = json_object_get(ev, "payload");
	cr_assert_str_eq(tc_jstr(pl, "key_id"), kid);
	cr_assert_str_eq(tc_jstr(pl, "entity_id"), ptn);
	cr_assert_eq(jint(pl, "window_rows"), 6);
	cr_assert_eq(jint(pl, "trailing_average"), 0);
	cr_assert_eq(jint(pl, "window_s"), 1);
	cr_assert_eq(jint(pl, "factor"), 10);
	json_decref(j);

	char *log = read_log(&p, 1);
	const char *line = strstr(log, "event=key.abnormal_usage");
	cr_assert_not_null(line, "no alert in the log:\n%s", log);
	const char *bol = line;
	while (bol > log && bol[-1] != '\n')
		bol--;
	cr_assert_eq(strncmp(strstr(bol, "level="), "level=warn ", 11), 0, "a warning: %.200s", bol);
	char want[256];
	snprintf(want, sizeof(want), "key_id=%s entity_id=%s window_rows=6", kid, ptn);
	cr_assert_not_null(strstr(line, want), "%.400s", line);
	snprintf(want, sizeof(want), "POST /api/keys/%s/revoke", kid);
	cr_assert_not_null(strstr(line, want), "the line says what to do: %.400s", line);
	free(log);

	struct http_resp r;
	cr_assert_eq(http_do(p.port, "GET", "/metrics", NULL, NULL, &r), 0);
	cr_assert_eq(metric(r.body, "wm_audit_alerts_total"), 1);
	http_resp_free(&r);
	cr_assert_eq(wm_stop(&p), 0);
	wm_proc_cleanup(&p);
}

WM_TEST(audit, metrics_count_audit_records)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start(&p, NULL);
	for (int i = 0; i < 3; i++)
		must(p.port, "GET", "/v1/partners", "", NULL, 200, NULL, NULL);
	struct http_resp r;
	cr_assert_eq(http_do(p.port, "GET", "/metrics", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200);
	cr_assert(strstr(r.body, "# TYPE wm_audit_records_total counter\n"));
	cr_assert(strstr(r.body, "# TYPE wm_audit_records_unsynced gauge\n"));
	cr_assert_eq(metric(r.body, "wm_audit_records_total"), 3, "three reads before this one");
	long long unsynced = metric(r.body, "wm_audit_records_unsynced");
	cr_assert(unsynced >= 0 && unsynced <= 3, "unsynced %lld", unsynced);
	cr_assert_eq(metric(r.body, "wm_audit_records_failed_total"), 0);
	cr_assert_eq(metric(r.body, "wm_audit_alerts_total"), 0);
	cr_assert_not_null(strstr(r.body, "wm_table_rows{table=\"audit\"} 3\n"));
	http_resp_free(&r);
	cr_assert_eq(wm_stop(&p), 0);
	wm_proc_cleanup(&p);
}
