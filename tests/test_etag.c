/*
 * test_etag.c -- conditional writes (issue 21 item 9; RFC 9110 sections
 * 8.8.3 and 13.1.1; engine/edge/etag.c): every read of one resource carries a
 * strong ETag, a write answers the tag the next GET will show, and a write
 * whose If-Match no longer matches is a 412 precondition_failed that
 * changes nothing -- before engine/edge/etag.c a stale If-Match was ignored and
 * the update applied.  Walked for partners, offers, wines and an order
 * action (cancel), against a real shard.  Expected values come from the
 * tests' own reasoning (the tag must change when the resource does), never
 * from the implementation's output.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/edge/etag.h"
#include "tests/api_client.h"
#include "tests/order_world.h"
#include "tests/wm_test.h"

/* A tag that no representation ever had (well formed, 32 hex digits). */
#define NEVER_TAG "\"00000000000000000000000000000000\""

/*
 * One request as `key` (NULL: the operator) with If-Match `im` (NULL:
 * none) and Idempotency-Key `idem` (NULL: none).  Returns the status; the
 * ETag into etag ("" when absent), the parsed body into *out when out is
 * not NULL (caller decrefs).
 */
static int req(int port, const char *method, const char *path, const char *key, const char *im, const char *idem,
	       const char *body, char etag[128], json_t **out)
{
	char h[512];
	int n = 0;
	h[0] = 0;
	if (key)
		n += snprintf(h + n, sizeof(h) - (size_t)n, "Authorization: Bearer %s\r\n", key);
	if (im)
		n += snprintf(h + n, sizeof(h) - (size_t)n, "If-Match: %s\r\n", im);
	if (idem)
		snprintf(h + n, sizeof(h) - (size_t)n, "Idempotency-Key: %s\r\n", idem);
	struct http_resp r;
	cr_assert_eq(http_do(port, method, path, h[0] ? h : NULL, body, &r), 0, "%s %s: no response", method, path);
	etag[0] = 0;
	if (http_header(&r, "ETag", etag, 128) < 0)
		etag[0] = 0;
	if (out) {
		json_error_t e;
		*out = json_loadb(r.body, r.body_len, 0, &e);
		cr_assert_not_null(*out, "%s %s: body is not JSON (%d): %s", method, path, r.status, r.body);
	}
	int st = r.status;
	http_resp_free(&r);
	return st;
}

/* A strong tag: quoted, not W/. */
static void assert_strong(const char *tag, const char *what)
{
	size_t n = strlen(tag);
	cr_assert(n >= 3 && tag[0] == '"' && tag[n - 1] == '"', "%s: ETag %s is not a strong quoted tag", what, tag);
}

static void assert_412(json_t *j, const char *what)
{
	cr_assert_str_eq(tc_jstr(j, "code"), "precondition_failed", "%s", what);
	cr_assert_eq(json_integer_value(json_object_get(j, "status")), 412, "%s", what);
}

/*
 * The walk every resource gets: GET -> tag t0; a write with If-Match t0 ->
 * 2xx with a new tag t1 that the next GET shows; the same write with t0
 * again -> 412 and the GET still shows t1 and `member` = `want1`.
 */
static void walk(int port, const char *key, const char *get_path, const char *method, const char *write_path,
		 const char *body1, const char *body2, const char *member, const char *want1)
{
	char t0[128], t1[128], t2[128], tg[128];
	json_t *j;
	cr_assert_eq(req(port, "GET", get_path, key, NULL, NULL, NULL, t0, NULL), 200, "GET %s", get_path);
	assert_strong(t0, get_path);
	int st = req(port, method, write_path, key, t0, NULL, body1, t1, &j);
	cr_assert(st == 200 || st == 201, "%s %s with the current tag: %d %s", method, write_path, st,
		  tc_jstr(j, "detail") ? tc_jstr(j, "detail") : "");
	json_decref(j);
	assert_strong(t1, write_path);
	cr_assert_str_neq(t1, t0, "the resource changed, its tag must too");
	cr_assert_eq(req(port, "GET", get_path, key, NULL, NULL, NULL, tg, &j), 200);
	cr_assert_str_eq(tg, t1, "the write's ETag is the one the next GET shows");
	json_decref(j);
	/* a stale tag: refused, nothing written */
	cr_assert_eq(req(port, method, write_path, key, t0, NULL, body2, t2, &j), 412, "%s %s with a stale If-Match",
		     method, write_path);
	assert_412(j, write_path);
	json_decref(j);
	cr_assert_eq(req(port, "GET", get_path, key, NULL, NULL, NULL, tg, &j), 200);
	cr_assert_str_eq(tg, t1, "a refused write changes nothing");
	if (member) {
		json_t *v = json_object_get(j, member);
		char *dump = json_dumps(v, JSON_ENCODE_ANY);
		cr_assert_str_eq(dump, want1, "%s after the refused write", member);
		free(dump);
	}
	json_decref(j);
}

/*
 * GET path as each of the three keys (NULL: the operator): a tag is shared
 * exactly when the bytes are, so two role views never share a tag.  With
 * must_differ, at least two of the views must differ (the walk would prove
 * nothing otherwise).
 */
static void views(int port, const char *path, const char *const keys[3], int must_differ)
{
	char tags[3][128], *bodies[3];
	for (int i = 0; i < 3; i++) {
		char h[256] = "";
		if (keys[i])
			snprintf(h, sizeof(h), "Authorization: Bearer %s\r\n", keys[i]);
		struct http_resp r;
		cr_assert_eq(http_do(port, "GET", path, h[0] ? h : NULL, NULL, &r), 0);
		cr_assert_eq(r.status, 200, "view %d of %s: %d", i, path, r.status);
		cr_assert_geq(http_header(&r, "ETag", tags[i], sizeof(tags[i])), 0, "view %d has an ETag", i);
		bodies[i] = r.body;
		r.body = NULL;
	}
	int differ = 0;
	for (int i = 0; i < 3; i++)
		for (int k = i + 1; k < 3; k++) {
			int same_body = !strcmp(bodies[i], bodies[k]);
			differ += !same_body;
			cr_assert_eq(same_body, !strcmp(tags[i], tags[k]), "%s views %d and %d: bodies %s, tags %s", path,
				     i, k, same_body ? "equal" : "differ", strcmp(tags[i], tags[k]) ? "differ" : "equal");
		}
	if (must_differ)
		cr_assert_gt(differ, 0, "%s: the views were expected to differ", path);
	for (int i = 0; i < 3; i++)
		free(bodies[i]);
}

WM_TEST(etag, partner_read_write_and_stale_if_match)
{
	struct wm_proc p;
	tc_start(&p);
	char id[64], path[128];
	tc_partner_live(p.port, "Etag Wines", "FR", "[\"originator\"]", "\"originator_type\":\"estate\"", id);
	snprintf(path, sizeof(path), "/v1/partners/%s", id);
	walk(p.port, NULL, path, "PATCH", path, "{\"legal_name\":\"Etag Wines Two\"}",
	     "{\"legal_name\":\"Etag Wines Three\"}", "legal_name", "\"Etag Wines Two\"");
	/* a create's 201 carries the tag its resource's GET shows */
	char t201[128], tg[128];
	json_t *j;
	cr_assert_eq(req(p.port, "POST", "/v1/partners", NULL, NULL, NULL,
			 "{\"legal_name\":\"Etag New\",\"country\":\"DE\",\"roles\":[\"fulfiller\"]}", t201, &j),
		     201);
	snprintf(path, sizeof(path), "/v1/partners/%s", tc_jstr(j, "id"));
	json_decref(j);
	assert_strong(t201, "201 of POST /v1/partners");
	cr_assert_eq(req(p.port, "GET", path, NULL, NULL, NULL, NULL, tg, NULL), 200);
	cr_assert_str_eq(t201, tg, "a create's ETag is its resource's");
	wm_proc_cleanup(&p);
}

WM_TEST(etag, if_match_star_weak_lists_and_unknown_tags)
{
	struct wm_proc p;
	tc_start(&p);
	char id[64], path[128], t[128], t1[128], list[400];
	json_t *j;
	tc_partner_live(p.port, "Star Wines", "FR", "[\"originator\"]", "\"originator_type\":\"estate\"", id);
	snprintf(path, sizeof(path), "/v1/partners/%s", id);
	/* a tag that never was: 412, whatever the body */
	cr_assert_eq(req(p.port, "PATCH", path, NULL, NEVER_TAG, NULL, "{\"legal_name\":\"X\"}", t, &j), 412);
	assert_412(j, "never-seen tag");
	json_decref(j);
	/* "*" matches any existing resource */
	cr_assert_eq(req(p.port, "PATCH", path, NULL, "*", NULL, "{\"legal_name\":\"Star Two\"}", t1, &j), 200);
	json_decref(j);
	/* the weak form of the current tag never matches (strong comparison) */
	snprintf(list, sizeof(list), "W/%s", t1);
	cr_assert_eq(req(p.port, "PATCH", path, NULL, list, NULL, "{\"legal_name\":\"Star Three\"}", t, &j), 412);
	json_decref(j);
	/* a list matches when any member does */
	snprintf(list, sizeof(list), "%s , %s", NEVER_TAG, t1);
	cr_assert_eq(req(p.port, "PATCH", path, NULL, list, NULL, "{\"legal_name\":\"Star Four\"}", t, &j), 200);
	json_decref(j);
	/* an unknown resource stays a 404 (existence is never revealed) */
	cr_assert_eq(req(p.port, "PATCH", "/v1/partners/prt_nope", NULL, "*", NULL, "{\"legal_name\":\"Y\"}", t, &j),
		     404);
	json_decref(j);
	/* no If-Match: unconditional, as before */
	cr_assert_eq(req(p.port, "PATCH", path, NULL, NULL, NULL, "{\"legal_name\":\"Star Five\"}", t, &j), 200);
	json_decref(j);
	cr_assert_str_neq(t, t1);
	wm_proc_cleanup(&p);
}

/* A retried write with the same Idempotency-Key replays its stored answer:
 * its own (now stale) If-Match does not turn the replay into a 412. */
WM_TEST(etag, idempotent_retry_replays_instead_of_412)
{
	struct wm_proc p;
	tc_start(&p);
	char id[64], path[128], t0[128], t[128];
	json_t *j;
	tc_partner_live(p.port, "Retry Wines", "FR", "[\"originator\"]", "\"originator_type\":\"estate\"", id);
	snprintf(path, sizeof(path), "/v1/partners/%s", id);
	cr_assert_eq(req(p.port, "GET", path, NULL, NULL, NULL, NULL, t0, NULL), 200);
	cr_assert_eq(req(p.port, "PATCH", path, NULL, t0, "etag-retry-1", "{\"legal_name\":\"Retry Two\"}", t, &j),
		     200);
	json_decref(j);
	cr_assert_eq(req(p.port, "PATCH", path, NULL, t0, "etag-retry-1", "{\"legal_name\":\"Retry Two\"}", t, &j),
		     200, "the retry replays");
	cr_assert_str_eq(tc_jstr(j, "legal_name"), "Retry Two");
	json_decref(j);
	/* a new key with the stale tag is a new request: 412 */
	cr_assert_eq(req(p.port, "PATCH", path, NULL, t0, "etag-retry-2", "{\"legal_name\":\"Retry Three\"}", t, &j),
		     412);
	json_decref(j);
	wm_proc_cleanup(&p);
}

WM_TEST(etag, wine_read_write_and_stale_if_match)
{
	struct wm_proc p;
	tc_start(&p);
	char id[64], path[128];
	tc_pub_wine(p.port, "Etag Clos", id);
	snprintf(path, sizeof(path), "/v1/wines/%s", id);
	walk(p.port, NULL, path, "PATCH", path, "{\"lot_number\":\"L-ETAG-2\"}", "{\"lot_number\":\"L-ETAG-3\"}",
	     "lot_number", "\"L-ETAG-2\"");
	wm_proc_cleanup(&p);
}

WM_TEST(etag, offer_read_write_and_stale_if_match_as_its_seller)
{
	struct oworld x;
	ow_start(&x, NULL, 10, 10);
	char path[128];
	snprintf(path, sizeof(path), "/v1/offers/%s", x.of_est);
	walk(x.port, x.kest, path, "PATCH", path, "{\"qty_available\":7}", "{\"qty_available\":3}", "qty_available",
	     "7");
	/* the seller's, the operator's and a customer's views of one offer */
	const char *keys[] = {x.kest, NULL, x.ksel};
	views(x.port, path, keys, 0);
	wm_proc_cleanup(&x.p);
}

/* An order action: cancel acts on /v1/orders/{id}, so its If-Match is the
 * order's tag; after the cancel the old tag is stale.  Without trade
 * documents: their renderer changes an order's representation on its own
 * thread's time (pending -> ready), so a GET a few ms after the create
 * could show a newer version than the 201 did. */
WM_TEST(etag, order_cancel_with_stale_if_match)
{
	static const char *const extra[] = {"--documents", "0", NULL};
	memcpy(ow_extra_args, extra, sizeof(extra));
	struct oworld x;
	ow_start(&x, NULL, 10, 10);
	memset(ow_extra_args, 0, sizeof(ow_extra_args));
	int st;
	json_t *o = ow_order(&x, 2, NULL, NULL, &st);
	cr_assert_eq(st, 201);
	char id[64], path[160], cpath[200], t0[128], t1[128], t[128];
	snprintf(id, sizeof(id), "%s", tc_jstr(o, "id"));
	json_decref(o);
	snprintf(path, sizeof(path), "/v1/orders/%s", id);
	snprintf(cpath, sizeof(cpath), "/v1/orders/%s/cancel", id);
	json_t *j;
	cr_assert_eq(req(x.port, "GET", path, x.ksel, NULL, NULL, NULL, t0, &j), 200);
	/* a create's 201 carries the tag its order's GET shows (tagged from
	 * its own body: ROUTE_F_CREATE_IS_VIEW), and so does its replay */
	char tc[128], body[1024];
	json_t *jc;
	ow_body(&x, 2, NULL, body, sizeof(body));
	cr_assert_eq(req(x.port, "POST", "/v1/orders", x.ksel, NULL, "etag-create-1", body, tc, &jc), 201);
	char cp[160], tgc[128];
	snprintf(cp, sizeof(cp), "/v1/orders/%s", tc_jstr(jc, "id"));
	json_decref(jc);
	assert_strong(tc, "201 of POST /v1/orders");
	cr_assert_eq(req(x.port, "GET", cp, x.ksel, NULL, NULL, NULL, tgc, NULL), 200);
	cr_assert_str_eq(tc, tgc, "a create's ETag is its order's");
	cr_assert_eq(req(x.port, "POST", "/v1/orders", x.ksel, NULL, "etag-create-1", body, tc, &jc), 201);
	json_decref(jc);
	cr_assert_str_eq(tc, tgc, "a replayed create's ETag is its order's");
	const char *before = tc_jstr(j, "status");
	cr_assert(before && strcmp(before, "cancelled"), "a fresh order is not cancelled");
	char status0[32];
	snprintf(status0, sizeof(status0), "%s", before);
	json_decref(j);
	assert_strong(t0, "order");
	/* the seller's, the operator's and the fulfilling estate's views */
	const char *keys[] = {x.ksel, NULL, x.kest};
	views(x.port, path, keys, 1);
	/* a tag the order never had: refused, the order is as it was */
	cr_assert_eq(req(x.port, "POST", cpath, x.ksel, NEVER_TAG, NULL, NULL, t, &j), 412);
	assert_412(j, "cancel with a never-seen tag");
	json_decref(j);
	cr_assert_eq(req(x.port, "GET", path, x.ksel, NULL, NULL, NULL, t, &j), 200);
	cr_assert_str_eq(tc_jstr(j, "status"), status0, "a refused cancel cancels nothing");
	cr_assert_str_eq(t, t0);
	json_decref(j);
	/* the current tag: cancelled, and a new tag */
	cr_assert_eq(req(x.port, "POST", cpath, x.ksel, t0, NULL, NULL, t1, &j), 200);
	json_decref(j);
	cr_assert_str_neq(t1, t0);
	cr_assert_eq(req(x.port, "GET", path, x.ksel, NULL, NULL, NULL, t, &j), 200);
	cr_assert_str_eq(tc_jstr(j, "status"), "cancelled");
	cr_assert_str_eq(t, t1, "the action's ETag is the order's next GET tag");
	json_decref(j);
	/* the old tag is now stale: 412 (not the 409 of cancelling twice) */
	cr_assert_eq(req(x.port, "POST", cpath, x.ksel, t0, NULL, NULL, t, &j), 412);
	assert_412(j, "cancel with the pre-cancel tag");
	json_decref(j);
	wm_proc_cleanup(&x.p);
}

/* The If-Match list rule alone (engine/edge/etag.c etag_list_matches; fuzzed by
 * tests/fuzz/fuzz_etag.c): strong comparison, `*`, lists, whitespace. */
WM_TEST(etag, if_match_list_rule)
{
	static const char tag[] = "\"0123456789abcdef0123456789abcdef\"";
	static const struct {
		const char *v;
		int want;
	} cases[] = {
	    {"\"0123456789abcdef0123456789abcdef\"", 1},
	    {"*", 1},
	    {" \t*\t ", 1},
	    {"\"x\", \"0123456789abcdef0123456789abcdef\"", 1},
	    {"\"x\",\t\"0123456789abcdef0123456789abcdef\"\t,", 1},
	    {"W/\"0123456789abcdef0123456789abcdef\"", 0},        /* weak never matches */
	    {"\"0123456789abcdef0123456789abcdef", 0},           /* unterminated */
	    {"\"0123456789abcdef0123456789abcdef\"x", 0},         /* trailing byte */
	    {"\"0123456789abcdef0123456789abcdeF\"", 0},          /* case matters */
	    {"0123456789abcdef0123456789abcdef", 0},              /* unquoted */
	    {"**", 0},
	    {"", 0},
	    {",,,", 0},
	    {"\"\"", 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_assert_eq(etag_list_matches(cases[i].v, strlen(cases[i].v), tag), cases[i].want, "case %zu: [%s]", i,
			     cases[i].v);
	/* only v[0..n) is read: a match just past n does not count */
	const char *v = "\"x\",*";
	cr_assert_eq(etag_list_matches(v, 4, tag), 0);
	cr_assert_eq(etag_list_matches(v, 5, tag), 1);
}

/* An inventory level: its GET (added for this) gives the tag that makes a
 * stock correction conditional, so two stock-keepers cannot overwrite each
 * other's on_hand. */
WM_TEST(etag, inventory_level_read_write_and_stale_if_match)
{
	struct oworld x;
	ow_start(&x, NULL, 10, 10);
	char path[128];
	snprintf(path, sizeof(path), "/v1/inventory/%s", x.lv_est);
	walk(x.port, x.kest, path, "PATCH", path, "{\"on_hand\":12}", "{\"on_hand\":3}", "on_hand", "12");
	/* another partner (the seller) cannot read the level: 404, no tag */
	char t[128];
	json_t *j;
	cr_assert_eq(req(x.port, "GET", path, x.ksel, NULL, NULL, NULL, t, &j), 404);
	cr_assert_str_eq(t, "", "a 404 carries no ETag");
	json_decref(j);
	wm_proc_cleanup(&x.p);
}
