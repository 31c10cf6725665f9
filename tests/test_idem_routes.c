/*
 * test_idem_routes.c -- every write route of the route table, against one
 * live shard, with an Idempotency-Key sent twice and with garbage bodies.
 *
 * Why: POST /v1/orders/{id}/cancel and .../fulfill with an Idempotency-Key
 * aborted the shard every time (issue 21, item 1): the key held the
 * request's transaction for one commit, and both handlers commit twice.
 * A test of those two routes would not catch the next handler that
 * commits twice, so this one walks api_route_table() -- a route added
 * tomorrow is walked too -- with real ids in every path parameter (a small
 * world: partners, keys, a wine, offers, locations, levels, a channel, a
 * listing, a shop, media, free-standing holds and three orders) and
 * asserts, after every request, that the shard still answers /healthz,
 * that nothing answers 5xx except 503/507, and that a replay with the same
 * key answers the same status and body with "Idempotent-Replayed: true"
 * (POST /v1/orders keeps its own idempotency: the same order id).
 */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/edge/route.h"
#include "tests/order_world.h"
#include "tests/wm_test.h"

/* The ids a path parameter is filled with. */
struct world {
	struct oworld x;
	char key_id[64], media[64], producer[64], channel[64], listing[64], shop[64];
	char hold_free[64];
	char ord_cancel[64], ord_fulfil[64], leg_fulfil[96], ord_hold[64], hold_of_order[96];
};

static const char *const method_names[] = {"", "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"};

static void id_of(json_t *j, char *out, size_t size)
{
	const char *s = tc_jstr(j, "id");
	cr_assert_not_null(s, "no id in the response");
	snprintf(out, size, "%s", s);
}

static void reserved_order(struct world *w, char *out, size_t size)
{
	int st;
	json_t *o = ow_order(&w->x, 1, NULL, NULL, &st);
	cr_assert_eq(st, 201, "order not created: %d", st);
	cr_assert_str_eq(tc_jstr(o, "status"), "reserved");
	id_of(o, out, size);
	json_decref(o);
}

static void build(struct world *w)
{
	memset(w, 0, sizeof(*w));
	ow_start(&w->x, NULL, 50, 50);
	int port = w->x.port;
	char body[1024];
	json_t *j;

	snprintf(body, sizeof(body), "{\"entity_id\":\"%s\",\"name\":\"walk\"}", w->x.stk);
	j = tc_expect(port, "POST", "/api/keys", NULL, body, 201);
	id_of(j, w->key_id, sizeof(w->key_id));
	json_decref(j);

	j = tc_expect(port, "POST", "/v1/media", NULL,
		      "{\"mime\":\"image/png\",\"size\":100,\"alt\":\"Front label\",\"role\":\"label_front\"}", 201);
	id_of(j, w->media, sizeof(w->media));
	json_decref(j);

	j = tc_expect(port, "POST", "/v1/producers", NULL, "{\"name\":\"Domaine Walk\"}", 201);
	id_of(j, w->producer, sizeof(w->producer));
	json_decref(j);

	/* the orders first: a seller without a channel sells unscoped, and the
	 * channel made below links no location (spec 2.5: it would sell nothing) */
	reserved_order(w, w->ord_cancel, sizeof(w->ord_cancel));
	reserved_order(w, w->ord_fulfil, sizeof(w->ord_fulfil));
	reserved_order(w, w->ord_hold, sizeof(w->ord_hold));

	j = tc_expect(port, "POST", "/v1/sales-channels", w->x.ksel, "{\"name\":\"Web\",\"kind\":\"webshop_connect\"}",
		      201);
	id_of(j, w->channel, sizeof(w->channel));
	json_decref(j);

	snprintf(body, sizeof(body), "{\"offer_id\":\"%s\",\"channel_id\":\"%s\",\"shelf_price\":30}", w->x.of_est,
		 w->channel);
	j = tc_expect(port, "POST", "/v1/listings", w->x.ksel, body, 201);
	id_of(j, w->listing, sizeof(w->listing));
	json_decref(j);

	snprintf(body, sizeof(body), "{\"name\":\"Picks\",\"markup\":10,\"channel_id\":\"%s\"}", w->channel);
	j = tc_expect(port, "POST", "/v1/curated-shops", w->x.ksel, body, 201);
	id_of(j, w->shop, sizeof(w->shop));
	json_decref(j);

	snprintf(w->hold_free, sizeof(w->hold_free), "walk-hold-1");
	snprintf(body, sizeof(body), "{\"hold_id\":\"%s\",\"level_id\":\"%s\",\"qty\":1}", w->hold_free, w->x.lv_stk);
	json_decref(tc_expect(port, "POST", "/v1/holds", NULL, body, 201));

	snprintf(w->leg_fulfil, sizeof(w->leg_fulfil), "%s.L1", w->ord_fulfil);
	snprintf(w->hold_of_order, sizeof(w->hold_of_order), "%s.H1", w->ord_hold);
}

/* The id for the n-th parameter of pattern (0 or 1). */
static const char *param_for(const struct world *w, const char *pattern, int n)
{
	static const struct {
		const char *prefix;
		size_t off;
	} map[] = {
		{"/v1/partners/", offsetof(struct world, x.sel)},
		{"/api/keys/", offsetof(struct world, key_id)},
		{"/v1/media/", offsetof(struct world, media)},
		{"/v1/producers/", offsetof(struct world, producer)},
		{"/v1/wines/", offsetof(struct world, x.w1)},
		{"/v1/sales-channels/", offsetof(struct world, channel)},
		{"/v1/curated-shops/", offsetof(struct world, shop)},
		{"/v1/offers/", offsetof(struct world, x.of_stk)},
		{"/v1/listings/", offsetof(struct world, listing)},
		{"/v1/inventory/", offsetof(struct world, x.lv_stk)},
		{"/v1/holds/{id}/release", offsetof(struct world, hold_of_order)},
		{"/v1/holds/", offsetof(struct world, hold_free)},
		{"/v1/orders/{id}/cancel", offsetof(struct world, ord_cancel)},
		{"/v1/orders/", offsetof(struct world, ord_fulfil)},
	};
	if (n == 1)
		return strstr(pattern, "{leg_id}") ? w->leg_fulfil : "unknown-param";
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strncmp(pattern, map[i].prefix, strlen(map[i].prefix)))
			return (const char *)w + map[i].off;
	return "unknown-id"; /* a route this table does not know yet: still walked (404) */
}

/* Fill the pattern's {params}. */
static void make_path(const struct world *w, const char *pattern, char *out, size_t size)
{
	size_t o = 0;
	int n = 0;
	for (const char *p = pattern; *p && o + 1 < size;) {
		if (*p == '{') {
			const char *v = param_for(w, pattern, n++);
			o += (size_t)snprintf(out + o, size - o, "%s", v);
			p = strchr(p, '}') + 1;
		} else {
			out[o++] = *p++;
		}
	}
	out[o < size ? o : size - 1] = 0;
}

/* A body a route may accept (so the keyed write commits and is stored). */
static const char *good_body(const struct world *w, const struct route *r, char *buf, size_t size)
{
	const char *p = r->pattern;
	if (r->method == HTTP_M_POST && !strcmp(p, "/v1/partners"))
		return "{\"legal_name\":\"Walk Co\",\"country\":\"FR\",\"roles\":[\"seller\"]}";
	if (r->method == HTTP_M_PATCH && !strcmp(p, "/v1/partners/{id}"))
		return "{\"legal_name\":\"Shop Renamed\"}";
	if (r->method == HTTP_M_POST && !strcmp(p, "/api/keys")) {
		snprintf(buf, size, "{\"entity_id\":\"%s\",\"name\":\"walk-2\"}", w->x.est);
		return buf;
	}
	if (r->method == HTTP_M_PATCH && !strcmp(p, "/api/keys/{id}"))
		return "{\"name\":\"walk renamed\"}";
	if (r->method == HTTP_M_POST && !strcmp(p, "/v1/producers"))
		return "{\"name\":\"Domaine Walk Two\"}";
	if (r->method == HTTP_M_PATCH && !strcmp(p, "/v1/producers/{id}"))
		return "{\"name\":\"Domaine Walk Renamed\"}";
	if (r->method == HTTP_M_POST && !strcmp(p, "/v1/sales-channels")) {
		snprintf(buf, size, "{\"name\":\"Web 2\",\"kind\":\"webshop_connect\",\"seller_id\":\"%s\"}", w->x.sel);
		return buf;
	}
	if (r->method == HTTP_M_PATCH && !strcmp(p, "/v1/sales-channels/{id}"))
		return "{\"name\":\"Web renamed\"}";
	if (r->method == HTTP_M_PATCH && !strcmp(p, "/v1/curated-shops/{id}"))
		return "{\"name\":\"Picks renamed\"}";
	if (r->method == HTTP_M_PATCH && !strcmp(p, "/v1/inventory/{id}"))
		return "{\"on_hand\":60}";
	if (r->method == HTTP_M_POST && !strcmp(p, "/v1/holds")) {
		snprintf(buf, size, "{\"hold_id\":\"walk-hold-2\",\"level_id\":\"%s\",\"qty\":1}", w->x.lv_stk);
		return buf;
	}
	if (r->method == HTTP_M_POST && !strcmp(p, "/v1/orders")) {
		ow_body(&w->x, 1, NULL, buf, size);
		return buf;
	}
	if (r->method == HTTP_M_POST && !strcmp(p, "/v1/orders/quote-calculate")) {
		ow_body(&w->x, 1, NULL, buf, size);
		return buf;
	}
	return "{}";
}

/* http_do, waiting out the per-key rate limit (429) -- the walk sends
 * about a thousand requests with one key. */
static int req(int port, const char *method, const char *path, const char *headers, const char *body,
	       struct http_resp *out)
{
	for (int tries = 0;; tries++) {
		if (http_do(port, method, path, headers, body, out))
			return -1;
		if (out->status != 429 || tries == 400)
			return 0;
		http_resp_free(out);
		usleep(50 * 1000);
	}
}

/* The shard is alive: /healthz answers 200. */
static void alive(int port, const char *after)
{
	struct http_resp r;
	cr_assert_eq(http_do(port, "GET", "/healthz", NULL, NULL, &r), 0, "the shard died after %s", after);
	cr_assert_eq(r.status, 200, "/healthz answered %d after %s", r.status, after);
	http_resp_free(&r);
}

/* 5xx only as 503 (not ready) or 507 (disk full). */
static void no_5xx(const struct http_resp *r, const char *what)
{
	cr_assert(r->status < 500 || r->status == 503 || r->status == 507, "%s answered %d: %s", what, r->status,
		  r->body);
}

static int replayed(const struct http_resp *r)
{
	char v[16];
	return http_header(r, "Idempotent-Replayed", v, sizeof(v)) >= 0 && !strcmp(v, "true");
}

/* Write routes that answer without writing anything (so no record is
 * kept: a retry computes its answer again). */
static int commits_nothing(const struct route *r)
{
	static const char *const pats[] = {"/v1/admin/snapshots", "/v1/wines/match", "/v1/orders/quote-calculate"};
	for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++)
		if (!strcmp(r->pattern, pats[i]))
			return 1;
	return 0;
}

/* Send method path body twice with the same key; check the pair. */
static unsigned replays;

static void twice_with_key(int port, const struct route *r, const char *path, const char *body, const char *key,
			   int must_replay)
{
	char h[256], what[512];
	snprintf(h, sizeof(h), "Idempotency-Key: %s\r\n", key);
	snprintf(what, sizeof(what), "%s %s (Idempotency-Key %s)", method_names[r->method], path, key);
	struct http_resp a, b;
	cr_assert_eq(req(port, method_names[r->method], path, h, body, &a), 0, "no answer to %s: the shard died",
		     what);
	alive(port, what);
	no_5xx(&a, what);
	cr_assert_eq(req(port, method_names[r->method], path, h, body, &b), 0,
		     "no answer to the replay of %s: the shard died", what);
	alive(port, what);
	no_5xx(&b, what);
	if (r->flags & ROUTE_F_OWN_IDEM) {
		/* POST /v1/orders: the retry returns the same order */
		cr_assert(a.status / 100 == 2 || b.status == a.status, "%s: %d then %d", what, a.status, b.status);
	}
	if ((r->flags & ROUTE_F_OWN_IDEM) && a.status / 100 == 2) {
		cr_assert(b.status / 100 == 2, "%s: %d then %d", what, a.status, b.status);
		json_t *ja = json_loadb(a.body, a.body_len, 0, NULL), *jb = json_loadb(b.body, b.body_len, 0, NULL);
		cr_assert(ja && jb && tc_jstr(ja, "id") && tc_jstr(jb, "id"), "%s: no order ids", what);
		cr_assert_str_eq(tc_jstr(ja, "id"), tc_jstr(jb, "id"), "%s: a second order", what);
		json_decref(ja);
		json_decref(jb);
	} else if (replayed(&b)) {
		cr_assert(a.status / 100 == 2, "%s: a %d was stored and replayed", what, a.status);
		cr_assert_eq(b.status, a.status, "%s: replay status %d, first %d", what, b.status, a.status);
		if (strcmp(r->pattern, "/api/keys")) /* a minted key's plaintext is never stored */
			cr_assert(a.body_len == b.body_len && !memcmp(a.body, b.body, a.body_len),
				  "%s: replay body differs:\n%s\n%s", what, a.body, b.body);
		replays++;
	} else {
		/* not stored: the first answer wrote nothing (an error, a no-op
		 * such as revoking a revoked key, or a route that never writes).
		 * A 201 always wrote, and so did the first successful cancel or
		 * fulfil of an order. */
		cr_assert(a.status != 201 || commits_nothing(r), "%s: a 201 was not stored: second answer %d %s",
			  what, b.status, b.body);
		cr_assert(!must_replay, "%s: the keyed %s was not stored or failed: second answer %d %s", what, r->pattern,
			  b.status, b.body);
	}
	http_resp_free(&a);
	http_resp_free(&b);
}

static const char *const garbage[] = {
	"this is not json",
	"[1,2,3]",
	"\"a string\"",
	"null",
	"{\"qty\":123456789012345678901234567890,\"seller_price\":1e999999,\"name\":-0.0000000000000000001}",
	"{\"legal_name\":{\"nested\":[1,{\"x\":null}]},\"roles\":\"seller\",\"on_hand\":\"ten\"}",
	NULL, /* deep nesting, built at run time */
	NULL, /* long strings in the usual fields, built at run time */
};

static void deep(char *out, size_t depth)
{
	for (size_t i = 0; i < depth; i++)
		out[i] = '[';
	for (size_t i = 0; i < depth; i++)
		out[depth + i] = ']';
	out[2 * depth] = 0;
}

WM_TEST(idem_routes, every_write_route_twice_with_a_key_and_garbage_bodies, .timeout = 240)
{
	struct world w;
	build(&w);
	int port = w.x.port;
	char path[512], buf[4096], what[600], key[64], nest[2 * 600 + 1];
	deep(nest, 600);
	static char longs[16384], l300[301], l70[71];
	memset(l300, 'q', 300);
	memset(l70, 'z', 70);
	snprintf(longs, sizeof(longs),
		 "{\"name\":\"%s\",\"legal_name\":\"%s\",\"sku\":\"%s\",\"title\":\"%s\",\"cuvee\":\"%s\","
		 "\"hold_id\":\"%s\",\"level_id\":\"%s\",\"offer_id\":\"%s\",\"entity_id\":\"%s\",\"scheme\":\"gtin\","
		 "\"value\":\"%s\",\"country\":\"%s\",\"email\":\"%s@x.fr\",\"channel_id\":\"%s\",\"qty\":1}",
		 l300, l300, l300, l300, l300, l70, l300, l300, l300, l300, l300, l300, l300);
	unsigned walked = 0, n = 0;
	int saw_cancel = 0, saw_fulfil = 0;
	for (const struct route *r = api_route_table(); r->pattern; r++) {
		if (r->method != HTTP_M_POST && r->method != HTTP_M_PUT && r->method != HTTP_M_PATCH &&
		    r->method != HTTP_M_DELETE)
			continue;
		make_path(&w, r->pattern, path, sizeof(path));
		/* a plausible body first, with a key: the write commits, and the
		 * first cancel and fulfil of their orders must be stored */
		size_t pl = strlen(r->pattern);
		int first = strstr(r->pattern, "/cancel") || (pl > 8 && !strcmp(r->pattern + pl - 8, "/fulfill"));
		snprintf(key, sizeof(key), "walk-%u", n++);
		twice_with_key(port, r, path, good_body(&w, r, buf, sizeof(buf)), key, first);
		/* then garbage (without a key, then with a fresh one) */
		for (size_t g = 0; g < sizeof(garbage) / sizeof(garbage[0]); g++) {
			const char *body = garbage[g] ? garbage[g] : g + 1 < sizeof(garbage) / sizeof(garbage[0]) ? nest : longs;
			struct http_resp a;
			snprintf(what, sizeof(what), "%s %s with garbage #%zu", method_names[r->method], path, g);
			cr_assert_eq(req(port, method_names[r->method], path, NULL, body, &a), 0,
				     "no answer to %s: the shard died", what);
			no_5xx(&a, what);
			http_resp_free(&a);
			alive(port, what);
			snprintf(key, sizeof(key), "garbage-%u", n++);
			twice_with_key(port, r, path, body, key, 0);
		}
		saw_cancel |= strstr(r->pattern, "/cancel") != NULL;
		saw_fulfil |= strstr(r->pattern, "/fulfill") != NULL;
		walked++;
	}
	cr_assert_geq(walked, 30, "only %u write routes walked", walked);
	cr_assert_geq(replays, 15, "only %u replays in the walk", replays);
	cr_assert(saw_cancel && saw_fulfil, "the route table lost cancel or fulfil");

	/* the keyed cancel and fulfil really happened, once */
	snprintf(path, sizeof(path), "/v1/orders/%s", w.ord_cancel);
	json_t *o = ow_get(&w.x, path);
	cr_assert_str_eq(tc_jstr(o, "status"), "cancelled");
	json_decref(o);
	snprintf(path, sizeof(path), "/v1/orders/%s", w.ord_fulfil);
	o = ow_get(&w.x, path);
	cr_assert_str_eq(tc_jstr(o, "status"), "fulfilled");
	json_decref(o);
	wm_proc_cleanup(&w.x.p);
}

/* The keyed cancel survives a restart with its record: a retry after the
 * crash is still a replay (the record went with the LAST commit). */
WM_TEST(idem_routes, keyed_cancel_and_fulfil_replay_after_kill9)
{
	struct world w;
	memset(&w, 0, sizeof(w));
	ow_start(&w.x, NULL, 10, 10);
	reserved_order(&w, w.ord_cancel, sizeof(w.ord_cancel));
	reserved_order(&w, w.ord_fulfil, sizeof(w.ord_fulfil));
	int port = w.x.port;
	char cancel[128], fulfil[192], h[128];
	snprintf(cancel, sizeof(cancel), "/v1/orders/%s/cancel", w.ord_cancel);
	snprintf(fulfil, sizeof(fulfil), "/v1/orders/%s/fulfillments/%s.L1/fulfill", w.ord_fulfil, w.ord_fulfil);
	struct http_resp a, b, c2, d;
	snprintf(h, sizeof(h), "Idempotency-Key: cancel-1\r\n");
	cr_assert_eq(http_do(port, "POST", cancel, h, NULL, &a), 0, "cancel with a key: no answer");
	cr_assert_eq(a.status, 200, "%s", a.body);
	snprintf(h, sizeof(h), "Idempotency-Key: fulfil-1\r\n");
	cr_assert_eq(http_do(port, "POST", fulfil, h, NULL, &c2), 0, "fulfil with a key: no answer");
	cr_assert_eq(c2.status, 200, "%s", c2.body);
	wm_kill9(&w.x.p);
	ow_restart(&w.x, NULL);
	port = w.x.port;
	snprintf(h, sizeof(h), "Idempotency-Key: cancel-1\r\n");
	cr_assert_eq(http_do(port, "POST", cancel, h, NULL, &b), 0);
	cr_assert_eq(b.status, 200, "%s", b.body);
	cr_assert(replayed(&b), "the cancel's record was lost: %s", b.body);
	cr_assert(a.body_len == b.body_len && !memcmp(a.body, b.body, a.body_len), "replay differs");
	snprintf(h, sizeof(h), "Idempotency-Key: fulfil-1\r\n");
	cr_assert_eq(http_do(port, "POST", fulfil, h, NULL, &d), 0);
	cr_assert_eq(d.status, 200, "%s", d.body);
	cr_assert(replayed(&d), "the fulfil's record was lost: %s", d.body);
	/* the stock: one unit consumed by the fulfilled order, none reserved */
	long long res, alloc, on_hand;
	ow_level(&w.x, w.x.lv_est, &res, &alloc, &on_hand);
	cr_assert_eq(res, 0);
	cr_assert_eq(alloc, 0);
	cr_assert_eq(on_hand, 9, "one unit shipped");
	http_resp_free(&a);
	http_resp_free(&b);
	http_resp_free(&c2);
	http_resp_free(&d);
	wm_proc_cleanup(&w.x.p);
}
