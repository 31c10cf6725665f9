/*
 * test_sync.c -- the two-way feed (spec 4.4; engine/supply/sync.c) over HTTP
 * against real processes, in both topologies: a push with duplicates and
 * retries (with and without an Idempotency-Key) yields exactly one wine and
 * one offer, with per-item results a replay repeats byte for byte; the
 * batch bound at and past its edge; per-item scope checks; pull pages
 * whose union is exactly the read-path-filtered set (computed here from
 * the permission rules, and equal to what GET /v1/offers and GET
 * /v1/wines return to the same caller), curation by country and seller,
 * the page bound at and past its edge, the record quota, and the status'
 * last_cursor / pending / errors.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/api_client.h"
#include "tests/harness.h"
#include "tests/wm_test.h"

/* ---- helpers ------------------------------------------------------------ */

#define MAX_IDS 64

struct idset {
	unsigned n;
	char id[MAX_IDS][64];
};

static void set_add(struct idset *s, const char *id)
{
	for (unsigned i = 0; i < s->n; i++)
		if (!strcmp(s->id[i], id))
			return;
	cr_assert_lt(s->n, MAX_IDS);
	snprintf(s->id[s->n++], sizeof(s->id[0]), "%s", id);
}

static int set_has(const struct idset *s, const char *id)
{
	for (unsigned i = 0; i < s->n; i++)
		if (!strcmp(s->id[i], id))
			return 1;
	return 0;
}

static void set_assert_eq(const struct idset *got, const struct idset *want, const char *what)
{
	for (unsigned i = 0; i < want->n; i++)
		cr_assert(set_has(got, want->id[i]), "%s: %s is missing", what, want->id[i]);
	for (unsigned i = 0; i < got->n; i++)
		cr_assert(set_has(want, got->id[i]), "%s: %s must not be there", what, got->id[i]);
	cr_assert_eq(got->n, want->n, "%s: %u rows, want %u", what, got->n, want->n);
}

/* One request with an optional Idempotency-Key; the status, the body in
 * *out, and whether it was a replay. */
static int req(int port, const char *method, const char *path, const char *key, const char *idem, const char *body,
	       json_t **out, int *replayed)
{
	char h[512];
	int n = snprintf(h, sizeof(h), "Authorization: Bearer %s\r\n", key);
	if (idem)
		snprintf(h + n, sizeof(h) - (size_t)n, "Idempotency-Key: %s\r\n", idem);
	struct http_resp r;
	cr_assert_eq(http_do(port, method, path, h, body, &r), 0, "%s %s: no response", method, path);
	json_error_t e;
	*out = json_loadb(r.body, r.body_len, 0, &e);
	cr_assert_not_null(*out, "%s %s: body is not JSON (%d): %s", method, path, r.status, r.body);
	char v[16];
	if (replayed)
		*replayed = http_header(&r, "Idempotent-Replayed", v, sizeof(v)) >= 0 && !strcmp(v, "true");
	int st = r.status;
	http_resp_free(&r);
	return st;
}

static json_t *result(json_t *push, size_t i) { return json_array_get(json_object_get(push, "results"), i); }
static long long jint(json_t *o, const char *k) { return json_integer_value(json_object_get(o, k)); }

/* The wine body of a push item (a producer made by the operator). */
static void wine_body(char *out, size_t n, const char *title, const char *producer, int vintage)
{
	snprintf(out, n,
		 "{\"title\":\"%s\",\"producer\":\"%s\",\"vintage\":%d,\"abv\":13,\"volume_in_liters\":0.75,"
		 "\"colour\":\"red\",\"category\":\"wine\",\"country\":\"FR\",\"region\":\"Bourgogne\"}",
		 title, producer, vintage);
}

static void producer(int port, const char *name, char out[64])
{
	char body[160];
	snprintf(body, sizeof(body), "{\"name\":\"%s\"}", name);
	json_t *j = tc_expect(port, "POST", "/v1/producers", NULL, body, 201);
	snprintf(out, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
}

/* How many of the wines the operator lists carry this title. */
static unsigned wines_titled(int port, const char *title)
{
	unsigned n = 0;
	char path[600], cursor[400] = "";
	for (;;) {
		snprintf(path, sizeof(path), "/v1/wines?page_size=200%s%s", cursor[0] ? "&cursor=" : "", cursor);
		json_t *j = tc_expect(port, "GET", path, NULL, NULL, 200);
		size_t i;
		json_t *w;
		json_array_foreach(json_object_get(j, "data"), i, w)
		{
			const char *t = tc_jstr(w, "title");
			n += t && !strcmp(t, title);
		}
		int more = json_is_true(json_object_get(j, "has_more"));
		if (more)
			snprintf(cursor, sizeof(cursor), "%s", tc_jstr(j, "next_cursor"));
		json_decref(j);
		if (!more)
			return n;
	}
}

/* Every page of a GET list as `key`: the ids into s. */
static void list_ids(int port, const char *base, const char *key, struct idset *s)
{
	char path[700], cursor[400] = "";
	for (;;) {
		snprintf(path, sizeof(path), "%s?page_size=2%s%s", base, cursor[0] ? "&cursor=" : "", cursor);
		json_t *j = tc_expect(port, "GET", path, key, NULL, 200);
		size_t i;
		json_t *w;
		json_array_foreach(json_object_get(j, "data"), i, w)
			set_add(s, tc_jstr(w, "id"));
		int more = json_is_true(json_object_get(j, "has_more"));
		if (more)
			snprintf(cursor, sizeof(cursor), "%s", tc_jstr(j, "next_cursor"));
		json_decref(j);
		if (!more)
			return;
	}
}

/*
 * Pull every page as `key`: the first request's body members `first`
 * (without braces; "" for none), then pages of `limit` from the cursor
 * each answer gives.  Ids of kind `kind` into s; checks each change's
 * shape and that change ids only grow.  Returns the number of pages.
 */
static unsigned pull_all(int port, const char *key, const char *first, unsigned limit, const char *kind,
			 struct idset *s)
{
	char body[1024], cursor[400] = "", last_change[64] = "";
	unsigned pages = 0;
	for (;;) {
		if (!pages)
			snprintf(body, sizeof(body), "{\"limit\":%u%s%s}", limit, first[0] ? "," : "", first);
		else
			snprintf(body, sizeof(body), "{\"limit\":%u,\"cursor\":\"%s\"}", limit, cursor);
		json_t *j = tc_expect(port, "POST", "/v1/sync/pull", key, body, 200);
		pages++;
		json_t *data = json_object_get(j, "data");
		cr_assert_leq(json_array_size(data), limit, "a page holds at most limit changes");
		size_t i;
		json_t *ch;
		json_array_foreach(data, i, ch)
		{
			const char *cid = tc_jstr(ch, "change_id");
			cr_assert(cid && strcmp(cid, last_change) > 0, "change ids grow: %s after %s", cid, last_change);
			snprintf(last_change, sizeof(last_change), "%s", cid);
			const char *id = tc_jstr(ch, "id");
			cr_assert_str_eq(tc_jstr(json_object_get(ch, "data"), "id"), id, "data is the row named");
			if (!strcmp(tc_jstr(ch, "kind"), kind))
				set_add(s, id);
		}
		int more = json_is_true(json_object_get(j, "has_more"));
		const char *nc = tc_jstr(j, "next_cursor");
		if (nc)
			snprintf(cursor, sizeof(cursor), "%s", nc);
		json_decref(j);
		cr_assert_lt(pages, 100u, "the pages never end");
		if (!more)
			return pages;
	}
}

static json_t *status_of(int port, const char *key) { return tc_expect(port, "GET", "/v1/sync/status", key, NULL, 200); }

/* ---- push -------------------------------------------------------------- */

WM_TEST(sync, push_with_duplicates_and_retries_yields_no_duplicate_wine)
{
	struct wm_proc p;
	tc_start(&p);
	int port = p.port;
	char o1[64], ko1[128], prd[64];
	tc_partner_live(port, "Feed Orig", "FR", "[\"originator\"]", "\"originator_type\":\"estate\"", o1);
	tc_key_for(port, o1, ko1);
	producer(port, "Domaine du Flux", prd);
	char w[600], bad[600], body[4096];
	wine_body(w, sizeof(w), "Cuvee du Flux", prd, 2019);
	wine_body(bad, sizeof(bad), "Cuvee Impossible", prd, 1800);
	static const char offer[] = "{\"seller_price\":21.5,\"currency\":\"EUR\",\"qty_available\":48,"
				    "\"incoterm\":\"FCA\",\"status\":\"active\",\"network_shareable\":true}";
	/* the same wine twice, the same offer twice (once through each wine ref), an invalid wine */
	snprintf(body, sizeof(body),
		 "{\"items\":[{\"ref\":\"w1\",\"wine\":%s},{\"ref\":\"w2\",\"wine\":%s},"
		 "{\"ref\":\"o1\",\"offer\":%s,\"wine_ref\":\"w1\"},{\"offer\":%s,\"wine_ref\":\"w2\"},"
		 "{\"ref\":\"bad\",\"wine\":%s}]}",
		 w, w, offer, offer, bad);
	json_t *a;
	int replayed;
	cr_assert_eq(req(port, "POST", "/v1/sync/push", ko1, "feed-push-1", body, &a, &replayed), 200);
	cr_assert(!replayed);
	cr_assert_eq(jint(a, "items"), 5);
	cr_assert_eq(jint(a, "succeeded"), 4);
	cr_assert_eq(jint(a, "failed"), 1);
	json_t *r0 = result(a, 0), *r1 = result(a, 1), *r2 = result(a, 2), *r3 = result(a, 3), *r4 = result(a, 4);
	cr_assert_eq(jint(r0, "index"), 0);
	cr_assert_str_eq(tc_jstr(r0, "ref"), "w1");
	cr_assert_str_eq(tc_jstr(r0, "kind"), "wine");
	cr_assert_eq(jint(r0, "status"), 201);
	cr_assert_str_eq(tc_jstr(r0, "outcome"), "created");
	char wine_id[64], offer_id[64];
	snprintf(wine_id, sizeof(wine_id), "%s", tc_jstr(r0, "id"));
	cr_assert_eq(strncmp(wine_id, "wine_", 5), 0);
	/* the second copy matched the first: no second row */
	cr_assert_eq(jint(r1, "status"), 200);
	cr_assert_str_eq(tc_jstr(r1, "outcome"), "matched");
	cr_assert_str_eq(tc_jstr(r1, "id"), wine_id);
	cr_assert_str_eq(tc_jstr(json_object_get(r1, "match"), "result"), "matched");
	cr_assert_str_eq(tc_jstr(r2, "kind"), "offer");
	cr_assert_eq(jint(r2, "status"), 201);
	cr_assert_str_eq(tc_jstr(r2, "outcome"), "created");
	snprintf(offer_id, sizeof(offer_id), "%s", tc_jstr(r2, "id"));
	cr_assert_eq(strncmp(offer_id, "ofr_", 4), 0);
	/* the same offer again (upsert key wine + originator + condition): nothing to change */
	cr_assert(json_is_null(json_object_get(r3, "ref")));
	cr_assert_eq(jint(r3, "status"), 200);
	cr_assert_str_eq(tc_jstr(r3, "outcome"), "unchanged");
	cr_assert_str_eq(tc_jstr(r3, "id"), offer_id);
	cr_assert_eq(jint(r4, "status"), 422);
	cr_assert_str_eq(tc_jstr(r4, "outcome"), "failed");
	json_t *err = json_object_get(r4, "error");
	cr_assert_str_eq(tc_jstr(err, "code"), "validation_failed");
	cr_assert(tc_lists_error(err, "vintage", "range") || json_array_size(json_object_get(err, "errors")) > 0,
		  "the invalid wine's errors are listed");
	int vintage_listed = 0;
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(err, "errors"), i, e) vintage_listed |= !strcmp(tc_jstr(e, "field"), "vintage");
	cr_assert(vintage_listed, "errors[] names vintage");

	/* a retry with the same key: the same per-item results, replayed */
	json_t *b;
	cr_assert_eq(req(port, "POST", "/v1/sync/push", ko1, "feed-push-1", body, &b, &replayed), 200);
	cr_assert(replayed, "Idempotent-Replayed: true");
	cr_assert(json_equal(a, b), "a replay answers the same per-item results");
	json_decref(b);
	/* a retry without a key: wines match themselves, the offer is unchanged */
	cr_assert_eq(req(port, "POST", "/v1/sync/push", ko1, NULL, body, &b, &replayed), 200);
	cr_assert(!replayed);
	cr_assert_eq(jint(result(b, 0), "status"), 200);
	cr_assert_str_eq(tc_jstr(result(b, 0), "id"), wine_id);
	cr_assert_str_eq(tc_jstr(result(b, 1), "id"), wine_id);
	cr_assert_str_eq(tc_jstr(result(b, 2), "outcome"), "unchanged");
	cr_assert_str_eq(tc_jstr(result(b, 2), "id"), offer_id);
	cr_assert_str_eq(tc_jstr(result(b, 3), "outcome"), "unchanged");
	json_decref(b);
	json_decref(a);

	/* exactly one wine and one offer exist */
	cr_assert_eq(wines_titled(port, "Cuvee du Flux"), 1);
	cr_assert_eq(wines_titled(port, "Cuvee Impossible"), 0);
	char path[160];
	struct idset offers = {0};
	list_ids(port, "/v1/offers", ko1, &offers);
	cr_assert_eq(offers.n, 1);
	cr_assert_str_eq(offers.id[0], offer_id);
	cr_assert_eq(tc_count_events(port, "wine.created", ko1), 1);
	cr_assert_eq(tc_count_events(port, "offer.created", ko1), 1);
	/* the pushed offer is a feed's; a change re-pushed updates it in place */
	snprintf(path, sizeof(path), "/v1/offers/%s", offer_id);
	json_t *o = tc_expect(port, "GET", path, ko1, NULL, 200);
	cr_assert_str_eq(tc_jstr(o, "source"), "feed");
	json_decref(o);
	snprintf(body, sizeof(body),
		 "{\"items\":[{\"offer\":{\"wine_id\":\"%s\",\"seller_price\":19,\"currency\":\"EUR\",\"qty_available\":12,"
		 "\"incoterm\":\"FCA\"}}]}",
		 wine_id);
	a = tc_expect(port, "POST", "/v1/sync/push", ko1, body, 200);
	cr_assert_str_eq(tc_jstr(result(a, 0), "outcome"), "updated");
	cr_assert_str_eq(tc_jstr(result(a, 0), "id"), offer_id);
	json_decref(a);
	o = tc_expect(port, "GET", path, ko1, NULL, 200);
	cr_assert_eq(json_integer_value(json_object_get(o, "qty_available")), 12);
	cr_assert_str_eq(tc_jstr(o, "status"), "active", "an upsert keeps what the body does not say");
	json_decref(o);
	cr_assert_eq(tc_count_events(port, "offer.created", ko1), 1);
	cr_assert_eq(tc_count_events(port, "offer.updated", ko1), 1);
	/* three pushes ran (the replay did not): three sync.completed */
	cr_assert_eq(tc_count_events(port, "sync.completed", ko1), 3);
	json_t *evs = tc_expect(port, "GET", "/v1/events?type=sync.completed", ko1, NULL, 200);
	json_t *pl = json_object_get(json_array_get(json_object_get(evs, "data"), 0), "payload");
	cr_assert_str_eq(tc_jstr(pl, "direction"), "push");
	cr_assert_str_eq(tc_jstr(pl, "entity_id"), o1);
	cr_assert_eq(jint(pl, "items"), 5);
	cr_assert_eq(jint(pl, "failed"), 1, "the first push's event: five items, one failed");
	json_decref(evs);
	json_t *st = status_of(port, ko1);
	cr_assert_eq(jint(st, "errors"), 0, "the last push had no failed item");
	cr_assert_eq(jint(json_object_get(st, "last_push"), "items"), 1);
	cr_assert(tc_jstr(st, "last_push_at"));
	json_decref(st);
	wm_proc_cleanup(&p);
}

WM_TEST(sync, push_batch_bound_item_rules_and_scopes)
{
	struct wm_proc p;
	tc_start(&p);
	int port = p.port;
	char o1[64], s1[64], ko1[128], ks1[128], kw[128];
	tc_partner_live(port, "Bound Orig", "FR", "[\"originator\"]", "\"originator_type\":\"estate\"", o1);
	tc_partner_live(port, "Bound Seller", "DE", "[\"seller\"]", NULL, s1);
	tc_key_for(port, o1, ko1);
	tc_key_for(port, s1, ks1);
	/* SYNC_PUSH_MAX_ITEMS = 100 items: accepted, each judged */
	size_t cap = 64 * 1024;
	char *body = malloc(cap);
	cr_assert_not_null(body);
	for (int n = 100; n <= 101; n++) {
		size_t at = (size_t)snprintf(body, cap, "{\"items\":[");
		for (int i = 0; i < n; i++)
			at += (size_t)snprintf(body + at, cap - at, "%s{\"offer\":{}}", i ? "," : "");
		snprintf(body + at, cap - at, "]}");
		if (n == 100) {
			json_t *a = tc_expect(port, "POST", "/v1/sync/push", ko1, body, 200);
			cr_assert_eq(json_array_size(json_object_get(a, "results")), 100);
			cr_assert_eq(jint(a, "failed"), 100);
			cr_assert_eq(jint(result(a, 99), "index"), 99);
			cr_assert_eq(jint(result(a, 99), "status"), 422);
			cr_assert(tc_lists_error(json_object_get(result(a, 0), "error"), "wine_id", "required"));
			json_decref(a);
		} else {
			tc_expect_code(port, "POST", "/v1/sync/push", ko1, body, 413, "batch_too_large");
		}
	}
	free(body);
	json_t *st = status_of(port, ko1);
	cr_assert_eq(jint(st, "errors"), 100, "the 413 stored nothing: the last push is the 100-item one");
	json_decref(st);
	tc_expect_code(port, "POST", "/v1/sync/push", ko1, "{\"items\":[]}", 422, "validation_failed");
	tc_expect_code(port, "POST", "/v1/sync/push", ko1, "{}", 422, "validation_failed");
	tc_expect_code(port, "POST", "/v1/sync/push", ko1, "{\"items\":[],\"extra\":1}", 422, "validation_failed");
	/* item shape: one of wine/offer, refs unique, wine_ref resolved */
	json_t *a = tc_expect(port, "POST", "/v1/sync/push", ko1,
			      "{\"items\":[{\"wine\":{},\"offer\":{}},{\"ref\":\"x\",\"offer\":{}},"
			      "{\"ref\":\"x\",\"offer\":{}},{\"offer\":{\"seller_price\":1},\"wine_ref\":\"nope\"},7]}",
			      200);
	cr_assert(tc_lists_error(json_object_get(result(a, 0), "error"), "offer", "one_of"));
	cr_assert(tc_lists_error(json_object_get(result(a, 2), "error"), "ref", "unique"));
	cr_assert(tc_lists_error(json_object_get(result(a, 3), "error"), "wine_ref", "unresolved"));
	cr_assert(tc_lists_error(json_object_get(result(a, 4), "error"), "item", "type"));
	cr_assert_eq(jint(a, "failed"), 5);
	json_decref(a);
	/* a key without write:offers: its offer items fail 403, its wine items go on */
	char mint[200];
	snprintf(mint, sizeof(mint), "{\"entity_id\":\"%s\",\"scopes\":[\"write:sync\",\"write:wines\"]}", o1);
	json_t *k = tc_expect(port, "POST", "/api/keys", NULL, mint, 201);
	snprintf(kw, sizeof(kw), "%s", tc_jstr(k, "key"));
	json_decref(k);
	a = tc_expect(port, "POST", "/v1/sync/push", kw, "{\"items\":[{\"offer\":{}}]}", 200);
	cr_assert_eq(jint(result(a, 0), "status"), 403);
	cr_assert_str_eq(tc_jstr(json_object_get(result(a, 0), "error"), "code"), "insufficient_scope");
	json_decref(a);
	/* a seller is no originator: the route's action refuses it */
	tc_expect_code(port, "POST", "/v1/sync/push", ks1, "{\"items\":[{\"offer\":{}}]}", 403, "action_not_allowed");
	wm_proc_cleanup(&p);
}

/* ---- pull -------------------------------------------------------------- */

/* Two originators (FR, IT), a seller in DE, published wines and offers of
 * every visibility; the set the seller may see is computed here. */
struct pworld {
	struct wm_proc p;
	char o1[64], o2[64], s1[64], ko1[128], ko2[128], ks1[128];
	char w[4][64], draft[64];
	struct idset vis_offers, vis_wines, o1_vis, o2_vis;
};

static void offer_as(struct pworld *x, const char *key, int wine, const char *members, int visible, int o1)
{
	char id[64];
	json_decref(tc_offer(x->p.port, key, x->w[wine], members, 201, id));
	if (visible) {
		set_add(&x->vis_offers, id);
		set_add(o1 ? &x->o1_vis : &x->o2_vis, id);
	}
}

/* Extra environment for pworld's start (NULL: none). */
static const char *const *pworld_env;

static void pworld(struct pworld *x, const char *const *args)
{
	memset(x, 0, sizeof(*x));
	wm_proc_init(&x->p);
	cr_assert_eq(wm_start(&x->p, args, pworld_env), 0, "did not start (logs in %s)", x->p.dir);
	int port = x->p.port;
	tc_partner_live(port, "Pull Orig One", "FR", "[\"originator\",\"seller\"]", "\"originator_type\":\"stock\"", x->o1);
	tc_partner_live(port, "Pull Orig Two", "IT", "[\"originator\"]", "\"originator_type\":\"collector\"", x->o2);
	tc_partner_live(port, "Pull Seller", "DE", "[\"seller\"]", NULL, x->s1);
	tc_key_for(port, x->o1, x->ko1);
	tc_key_for(port, x->o2, x->ko2);
	tc_key_for(port, x->s1, x->ks1);
	static const char *const titles[] = {"Pull Alpha", "Pull Beta", "Pull Gamma", "Pull Delta"};
	for (int i = 0; i < 4; i++) {
		tc_pub_wine(port, titles[i], x->w[i]);
		set_add(&x->vis_wines, x->w[i]);
	}
	/* a draft wine of O1's: only O1 and the platform see it */
	char prd[64], body[600];
	producer(port, "Domaine Cache", prd);
	wine_body(body, sizeof(body), "Pull Hidden Draft", prd, 2021);
	json_t *j = tc_expect(port, "POST", "/v1/wines", x->ko1, body, 201);
	snprintf(x->draft, sizeof(x->draft), "%s", tc_jstr(j, "id"));
	json_decref(j);
	static const char live[] = "\"status\":\"active\",\"network_shareable\":true";
	offer_as(x, x->ko1, 0, live, 1, 1);
	offer_as(x, x->ko1, 1, NULL, 0, 1); /* draft */
	offer_as(x, x->ko1, 2, "\"status\":\"active\",\"network_shareable\":true,"
			       "\"permissions\":{\"default\":\"none\",\"allowed_countries\":[\"US\"]}", 0, 1);
	offer_as(x, x->ko2, 0, live, 1, 0);
	offer_as(x, x->ko2, 1, "\"status\":\"active\",\"network_shareable\":false", 0, 0);
	char named[200];
	snprintf(named, sizeof(named),
		 "\"status\":\"active\",\"network_shareable\":true,\"permissions\":{\"named_sellers\":[\"%s\"]}", x->s1);
	offer_as(x, x->ko2, 3, named, 1, 0);
	offer_as(x, x->ko2, 2, "\"status\":\"active\",\"network_shareable\":true,"
			       "\"permissions\":{\"blocked_countries\":[\"DE\"]}", 0, 0);
	/* a price change of a visible offer: a second change of the same row */
	char path[128];
	snprintf(path, sizeof(path), "/v1/offers/%s", x->vis_offers.id[0]);
	json_decref(tc_expect(port, "PATCH", path, x->ko1, "{\"seller_price\":14}", 200));
}

WM_TEST(sync, pull_pages_equal_the_read_path_filtered_set)
{
	struct pworld x;
	pworld(&x, NULL);
	int port = x.p.port;
	/* offers: pages of 2 from the start */
	struct idset got = {0}, listed = {0};
	unsigned pages = pull_all(port, x.ks1, "\"cursor\":null,\"kinds\":[\"offer\"]", 2, "offer", &got);
	cr_assert_geq(pages, 2u, "paged");
	set_assert_eq(&got, &x.vis_offers, "pulled offers");
	list_ids(port, "/v1/offers", x.ks1, &listed);
	set_assert_eq(&listed, &x.vis_offers, "GET /v1/offers");
	/* wines: the published ones, never O1's draft */
	struct idset wines = {0}, wl = {0};
	pull_all(port, x.ks1, "\"cursor\":null,\"kinds\":[\"wine\"]", 3, "wine", &wines);
	set_assert_eq(&wines, &x.vis_wines, "pulled wines");
	list_ids(port, "/v1/wines", x.ks1, &wl);
	set_assert_eq(&wl, &x.vis_wines, "GET /v1/wines");
	/* the draft's creator sees it through the feed */
	struct idset own = {0};
	pull_all(port, x.ko1, "\"cursor\":null,\"kinds\":[\"wine\"]", 50, "wine", &own);
	cr_assert(set_has(&own, x.draft));

	/* curation: block a country (O2 is Italian), then a seller (O1) */
	struct idset c1 = {0}, c2 = {0};
	pull_all(port, x.ks1, "\"cursor\":null,\"kinds\":[\"offer\"],\"block_countries\":[\"IT\"]", 2, "offer", &c1);
	set_assert_eq(&c1, &x.o1_vis, "blocking IT");
	char first[300];
	snprintf(first, sizeof(first), "\"cursor\":null,\"block_countries\":[],\"block_sellers\":[\"%s\"]", x.o1);
	pull_all(port, x.ks1, first, 2, "offer", &c2);
	set_assert_eq(&c2, &x.o2_vis, "blocking O1 (a stored setting: kinds stay offer)");
	json_t *st = status_of(port, x.ks1);
	json_t *set = json_object_get(st, "settings");
	cr_assert_str_eq(json_string_value(json_array_get(json_object_get(set, "block_sellers"), 0)), x.o1);
	cr_assert_eq(json_array_size(json_object_get(set, "kinds")), 1);
	cr_assert_eq(jint(st, "pending"), 0, "the last pull read to the end");
	const char *lc = tc_jstr(st, "last_cursor");
	cr_assert(lc && lc[0]);
	json_decref(st);

	/* pending: a change O1's block hides does not count; one it admits does */
	json_decref(tc_offer(port, x.ko1, x.w[3], "\"status\":\"active\",\"network_shareable\":true", 201, NULL));
	st = status_of(port, x.ks1);
	cr_assert_eq(jint(st, "pending"), 0, "blocked seller");
	json_decref(st);
	char fresh[64];
	json_decref(tc_offer(port, x.ko2, x.w[1], "\"condition\":\"bin_end\",\"status\":\"active\",\"network_shareable\":true",
			     201, fresh));
	json_decref(tc_offer(port, x.ko2, x.w[3], "\"condition\":\"bin_end\"", 201, NULL)); /* a draft */
	st = status_of(port, x.ks1);
	cr_assert_eq(jint(st, "pending"), 1);
	cr_assert(json_is_false(json_object_get(st, "pending_more")));
	json_decref(st);
	/* an absent cursor resumes after last_cursor: exactly the new change */
	json_t *j = tc_expect(port, "POST", "/v1/sync/pull", x.ks1, "{}", 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 1);
	json_t *ch = json_array_get(json_object_get(j, "data"), 0);
	cr_assert_str_eq(tc_jstr(ch, "id"), fresh);
	cr_assert_str_eq(tc_jstr(ch, "type"), "offer.created");
	cr_assert_str_eq(tc_jstr(ch, "kind"), "offer");
	cr_assert(json_is_false(json_object_get(j, "has_more")));
	json_decref(j);
	st = status_of(port, x.ks1);
	cr_assert_eq(jint(st, "pending"), 0);
	json_decref(st);
	/* nothing new: an empty page that keeps its place */
	j = tc_expect(port, "POST", "/v1/sync/pull", x.ks1, "{}", 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 0);
	cr_assert(json_is_string(json_object_get(j, "next_cursor")));
	json_decref(j);
	cr_assert_geq(tc_count_events(port, "sync.completed", x.ks1), 5);
	wm_proc_cleanup(&x.p);
}

WM_TEST(sync, pull_limit_cursor_and_body_bounds)
{
	struct pworld x;
	pworld(&x, NULL);
	int port = x.p.port;
	unsigned nvis = x.vis_offers.n; /* 3 */
	char body[200];
	/* limit = the number of visible offers: all of them, no more */
	snprintf(body, sizeof(body), "{\"cursor\":null,\"kinds\":[\"offer\"],\"limit\":%u}", nvis);
	json_t *j = tc_expect(port, "POST", "/v1/sync/pull", x.ks1, body, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), nvis);
	cr_assert(json_is_false(json_object_get(j, "has_more")));
	json_decref(j);
	/* one fewer: a page of limit and has_more */
	snprintf(body, sizeof(body), "{\"cursor\":null,\"limit\":%u}", nvis - 1);
	j = tc_expect(port, "POST", "/v1/sync/pull", x.ks1, body, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), nvis - 1);
	cr_assert(json_is_true(json_object_get(j, "has_more")));
	json_decref(j);
	/* SYNC_PULL_MAX = 200 at and past its edge */
	json_decref(tc_expect(port, "POST", "/v1/sync/pull", x.ks1, "{\"cursor\":null,\"limit\":200}", 200));
	j = tc_expect(port, "POST", "/v1/sync/pull", x.ks1, "{\"limit\":201}", 422);
	cr_assert(tc_lists_error(j, "limit", "range") || json_array_size(json_object_get(j, "errors")) == 1);
	json_decref(j);
	tc_expect_code(port, "POST", "/v1/sync/pull", x.ks1, "{\"limit\":0}", 422, "validation_failed");
	tc_expect_code(port, "POST", "/v1/sync/pull", x.ks1, "{\"cursor\":\"not-a-cursor\"}", 400, "invalid_cursor");
	tc_expect_code(port, "POST", "/v1/sync/pull", x.ks1, "{\"cursor\":7}", 400, "invalid_cursor");
	tc_expect_code(port, "POST", "/v1/sync/pull", x.ks1, "{\"mirror\":true}", 422, "validation_failed");
	tc_expect_code(port, "POST", "/v1/sync/pull", x.ks1, "{\"kinds\":[\"listing\"]}", 422, "validation_failed");
	j = tc_expect(port, "POST", "/v1/sync/pull", x.ks1, "{\"block_countries\":[\"DE\",\"XX\"]}", 422);
	cr_assert(tc_lists_error(j, "block_countries[1]", "format"));
	json_decref(j);
	/* 64 blocked countries at the bound, 65 past it */
	char big[1024];
	size_t at = (size_t)snprintf(big, sizeof(big), "{\"block_countries\":[");
	for (int i = 0; i < 65; i++)
		at += (size_t)snprintf(big + at, sizeof(big) - at, "%s\"FR\"", i ? "," : "");
	snprintf(big + at, sizeof(big) - at, "]}");
	tc_expect_code(port, "POST", "/v1/sync/pull", x.ks1, big, 422, "validation_failed");
	memcpy(strrchr(big, ','), "]}", 3); /* 64 */
	json_decref(tc_expect(port, "POST", "/v1/sync/pull", x.ks1, big, 200));
	/* an originator-only partner is no puller */
	tc_expect_code(port, "POST", "/v1/sync/pull", x.ko2, "{}", 403, "action_not_allowed");
	wm_proc_cleanup(&x.p);
}

WM_TEST(sync, pull_counts_against_the_record_quota)
{
	struct pworld x;
	const char *args[] = {"--record-quota", "4", "--record-quota-period-s", "3600", NULL};
	pworld(&x, args);
	int port = x.p.port;
	/* three visible offers (hidden ones are not charged), then one of the quota's four is left */
	json_t *j = tc_expect(port, "POST", "/v1/sync/pull", x.ks1, "{\"cursor\":null,\"kinds\":[\"offer\"]}", 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 3);
	json_decref(j);
	/* the read audit logs the pull as a read: endpoint, rows returned */
	char apath[160];
	snprintf(apath, sizeof(apath), "/v1/audit?entity_id=%s&page_size=200", x.s1);
	json_t *au = tc_expect(port, "GET", apath, NULL, NULL, 200);
	int logged = 0;
	size_t i;
	json_t *row;
	json_array_foreach(json_object_get(au, "data"), i, row) logged |=
		!strcmp(tc_jstr(row, "endpoint"), "POST /v1/sync/pull") && jint(row, "rows_returned") == 3;
	cr_assert(logged, "the pull is in the read audit with its 3 rows");
	json_decref(au);
	json_t *st = status_of(port, x.ks1);
	char keep[400];
	snprintf(keep, sizeof(keep), "%s", tc_jstr(st, "last_cursor"));
	json_decref(st);
	/* a page of three does not fit the one row left: 429, nothing stored */
	tc_expect_code(port, "POST", "/v1/sync/pull", x.ks1, "{\"cursor\":null,\"kinds\":[\"offer\"]}", 429,
		       "quota_exceeded");
	st = status_of(port, x.ks1);
	cr_assert_str_eq(tc_jstr(st, "last_cursor"), keep, "a refused pull moves nothing");
	json_decref(st);
	/* one row fits */
	j = tc_expect(port, "POST", "/v1/sync/pull", x.ks1, "{\"cursor\":null,\"limit\":1}", 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 1);
	json_decref(j);
	tc_expect_code(port, "POST", "/v1/sync/pull", x.ks1, "{\"cursor\":null,\"limit\":1}", 429, "quota_exceeded");
	wm_proc_cleanup(&x.p);
}

/* ---- durability ---------------------------------------------------------- */

WM_TEST(sync, acknowledged_push_and_pull_survive_kill9)
{
	struct pworld x;
	pworld(&x, NULL);
	int port = x.p.port;
	char prd[64], w[600], body[1400];
	producer(port, "Domaine Durable", prd);
	wine_body(w, sizeof(w), "Cuvee Durable", prd, 2018);
	snprintf(body, sizeof(body),
		 "{\"items\":[{\"ref\":\"w\",\"wine\":%s},{\"offer\":{\"seller_price\":9.9,\"currency\":\"EUR\","
		 "\"qty_available\":6,\"incoterm\":\"EXW\",\"status\":\"active\",\"network_shareable\":true},"
		 "\"wine_ref\":\"w\"},{\"offer\":{}}]}",
		 w);
	json_t *a;
	int replayed;
	cr_assert_eq(req(port, "POST", "/v1/sync/push", x.ko1, "durable-1", body, &a, &replayed), 200);
	json_t *pulled = tc_expect(port, "POST", "/v1/sync/pull", x.ks1,
				   "{\"cursor\":null,\"kinds\":[\"offer\"],\"block_countries\":[\"IT\"]}", 200);
	json_t *before = status_of(port, x.ks1);
	wm_kill9(&x.p);
	cr_assert_eq(wm_start(&x.p, NULL, NULL), 0);
	port = x.p.port;
	json_t *after = status_of(port, x.ks1);
	cr_assert_str_eq(tc_jstr(after, "last_cursor"), tc_jstr(before, "last_cursor"));
	cr_assert_str_eq(tc_jstr(after, "last_cursor"), tc_jstr(pulled, "next_cursor"));
	cr_assert(json_equal(json_object_get(after, "settings"), json_object_get(before, "settings")),
		  "the curation settings are durable");
	json_t *po = status_of(port, x.ko1);
	cr_assert_eq(jint(po, "errors"), 1, "the last push's failed item");
	json_decref(po);
	cr_assert_eq(wines_titled(port, "Cuvee Durable"), 1);
	json_t *b;
	cr_assert_eq(req(port, "POST", "/v1/sync/push", x.ko1, "durable-1", body, &b, &replayed), 200);
	cr_assert(replayed, "the idempotency record survived");
	cr_assert(json_equal(a, b));
	json_decref(a);
	json_decref(b);
	json_decref(pulled);
	json_decref(before);
	json_decref(after);
	cr_assert_eq(wines_titled(port, "Cuvee Durable"), 1);
	wm_proc_cleanup(&x.p);
}

/* Retention (engine/retention.c) prunes events past its age but never the
 * wine.* and offer.* events a resync walks: a cursor given out longer ago
 * than the retention is refused (410 cursor_expired, nothing stored), and
 * a pull from cursor null still yields exactly the visible set, page by
 * page (its cursors are fresh although the events they name are old). */
WM_TEST(sync, a_cursor_older_than_the_retention_is_refused_and_a_resync_is_complete, .timeout = 60)
{
	static const char *const env[] = {"WM_RETENTION_MS=1500", NULL};
	pworld_env = env;
	struct pworld x;
	pworld(&x, NULL);
	pworld_env = NULL;
	int port = x.p.port;
	json_t *j = tc_expect(port, "POST", "/v1/sync/pull", x.ks1, "{\"limit\":1,\"cursor\":null}", 200);
	char cursor[400], body[600];
	snprintf(cursor, sizeof(cursor), "%s", tc_jstr(j, "next_cursor"));
	json_decref(j);
	/* past the retention: the partners' events go, the catalogue's stay */
	size_t partners = 1;
	for (int t = 0; t < 100 && partners; t++) {
		usleep(100 * 1000);
		j = tc_expect(port, "GET", "/v1/events?type=partner.created", NULL, NULL, 200);
		partners = json_array_size(json_object_get(j, "data"));
		json_decref(j);
	}
	cr_assert_eq(partners, 0, "partner.created events were not pruned");
	j = tc_expect(port, "GET", "/v1/events?type=wine.created", NULL, NULL, 200);
	cr_assert_gt(json_array_size(json_object_get(j, "data")), 0, "wine.created events were pruned");
	json_decref(j);
	snprintf(body, sizeof(body), "{\"cursor\":\"%s\"}", cursor);
	tc_expect_code(port, "POST", "/v1/sync/pull", x.ks1, body, 410, "cursor_expired");
	tc_expect_code(port, "POST", "/v1/sync/pull", x.ks1, "{}", 410, "cursor_expired"); /* the stored one */
	struct idset offers = {0}, wines = {0};
	pull_all(port, x.ks1, "\"cursor\":null", 3, "offer", &offers);
	pull_all(port, x.ks1, "\"cursor\":null", 3, "wine", &wines);
	set_assert_eq(&offers, &x.vis_offers, "offers of a resync after pruning");
	set_assert_eq(&wines, &x.vis_wines, "wines of a resync after pruning");
	wm_proc_cleanup(&x.p);
}
