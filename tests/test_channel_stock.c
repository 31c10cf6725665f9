/*
 * test_channel_stock.c -- availability scoped by the sales channel (spec
 * 2.5 and the read-path filter of spec 5), against real wm-shard
 * processes.  Issue 21 item 10: routing never read a channel, so a seller
 * sold stock from locations its channel is not linked to, and orders
 * carried no channel_id.
 *
 * The world: one originator with one offer whose stock lies at two
 * locations (A: 10 units, B: 20 units), a second originator whose offer of
 * the same wine lies at a third location C that no channel links; one
 * seller with two channels, "web" linked to A and "shop" linked to B.
 * Without the channel, routing ships from B (the level with the most ATP)
 * and could take C's stock; through a channel only that channel's
 * locations count.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/api_client.h"
#include "tests/harness.h"
#include "tests/wm_test.h"

struct cworld {
	struct wm_proc p;
	int port;
	char orig[64], orig2[64], sel[64], sel1[64];
	char korig[128], korig2[128], ksel[128], ksel1[128];
	char wine[64], offer[64], offer2[64];
	char loc_a[64], loc_b[64], loc_c[64];
	char ch_web[64], ch_shop[64], ch_only[64];
};

static void mk(int port, const char *path, const char *key, const char *body, char *out)
{
	json_t *j = tc_expect(port, "POST", path, key, body, 201);
	snprintf(out, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
}

static void location(struct cworld *w, const char *key, const char *name, char *out)
{
	char body[512];
	snprintf(body, sizeof(body),
		 "{\"location_type\":\"BONDED_WAREHOUSE\",\"name\":\"%s\",\"address\":{\"line1\":\"1 rue du Vin\","
		 "\"city\":\"Beaune\",\"postal_code\":\"21200\",\"country\":\"FR\"}}",
		 name);
	mk(w->port, "/v1/stock-locations", key, body, out);
}

static void level(struct cworld *w, const char *key, const char *offer, const char *loc, int units)
{
	char body[512], id[64];
	snprintf(body, sizeof(body), "{\"sku\":\"SKU-%s\",\"offer_id\":\"%s\",\"location_id\":\"%s\",\"on_hand\":%d}",
		 loc, offer, loc, units);
	mk(w->port, "/v1/inventory", key, body, id);
}

/* A channel of the seller behind key, linked to the given locations (a JSON array). */
static void channel(struct cworld *w, const char *key, const char *name, const char *kind, const char *locs,
		    char *out)
{
	char body[512];
	snprintf(body, sizeof(body), "{\"name\":\"%s\",\"kind\":\"%s\",\"location_ids\":%s}", name, kind, locs);
	mk(w->port, "/v1/sales-channels", key, body, out);
}

static void world(struct cworld *w)
{
	memset(w, 0, sizeof(*w));
	tc_start(&w->p);
	w->port = w->p.port;
	int port = w->port;
	tc_partner_live(port, "Domaine", "FR", "[\"originator\"]", "\"originator_type\":\"stock\"", w->orig);
	tc_partner_live(port, "Other Stock", "FR", "[\"originator\"]", "\"originator_type\":\"stock\"", w->orig2);
	tc_partner_live(port, "Two Channels", "DE", "[\"seller\"]", NULL, w->sel);
	tc_partner_live(port, "One Channel", "DE", "[\"seller\"]", NULL, w->sel1);
	tc_key_for(port, w->orig, w->korig);
	tc_key_for(port, w->orig2, w->korig2);
	tc_key_for(port, w->sel, w->ksel);
	tc_key_for(port, w->sel1, w->ksel1);
	tc_pub_wine_of(port, "Channel Rouge", NULL, "wine", w->wine);
	json_decref(tc_offer(port, w->korig, w->wine,
			     "\"seller_price\":10.00,\"qty_available\":0,\"incoterm\":\"EXW\",\"status\":\"active\","
			     "\"network_shareable\":true",
			     201, w->offer));
	json_decref(tc_offer(port, w->korig2, w->wine,
			     "\"seller_price\":9.00,\"qty_available\":0,\"incoterm\":\"EXW\",\"status\":\"active\","
			     "\"network_shareable\":true",
			     201, w->offer2));
	location(w, w->korig, "Cellar A", w->loc_a);
	location(w, w->korig, "Warehouse B", w->loc_b);
	location(w, w->korig2, "Depot C", w->loc_c);
	level(w, w->korig, w->offer, w->loc_a, 10);
	level(w, w->korig, w->offer, w->loc_b, 20);
	level(w, w->korig2, w->offer2, w->loc_c, 50);
	char locs[160];
	snprintf(locs, sizeof(locs), "[\"%s\"]", w->loc_a);
	channel(w, w->ksel, "web", "webshop_connect", locs, w->ch_web);
	channel(w, w->ksel1, "only", "pos_qr", locs, w->ch_only);
	snprintf(locs, sizeof(locs), "[\"%s\"]", w->loc_b);
	channel(w, w->ksel, "shop", "pos_qr", locs, w->ch_shop);
}

/* POST a quote as key; channel_id NULL: the member is absent. */
static json_t *quote(struct cworld *w, const char *key, const char *channel_id, int qty, int want)
{
	char body[512], chm[96] = "";
	if (channel_id)
		snprintf(chm, sizeof(chm), "\"channel_id\":\"%s\",", channel_id);
	snprintf(body, sizeof(body), "{%s\"destination_country\":\"DE\",\"lines\":[{\"sku\":\"%s\",\"qty\":%d,\"box_units\":6}]}",
		 chm, w->wine, qty);
	return tc_expect(w->port, "POST", "/v1/orders/quote-calculate", key, body, want);
}

static json_t *order(struct cworld *w, const char *key, const char *channel_id, const char *extra, int qty, int want)
{
	char body[1024], chm[96] = "";
	if (channel_id)
		snprintf(chm, sizeof(chm), "\"channel_id\":\"%s\",", channel_id);
	snprintf(body, sizeof(body),
		 "{%s%s\"destination_country\":\"DE\",\"consumer\":{\"name\":\"Erika Mustermann\",\"email\":"
		 "\"erika@example.de\",\"address\":{\"line1\":\"Weinstrasse 1\",\"city\":\"Berlin\",\"postal_code\":"
		 "\"10115\"}},\"lines\":[{\"sku\":\"%s\",\"qty\":%d,\"box_units\":6}]}",
		 chm, extra ? extra : "", w->wine, qty);
	return tc_expect(w->port, "POST", "/v1/orders", key, body, want);
}

/* The quote's only source of line 0. */
static json_t *quote_source(json_t *q)
{
	json_t *src = json_object_get(json_object_get(json_array_get(json_object_get(q, "lines"), 0), "sourcing"), "source");
	cr_assert_eq(json_array_size(src), 1, "one source expected: %s", json_dumps(q, JSON_COMPACT));
	return json_array_get(src, 0);
}

/* The rule line 0's candidate for offer got. */
static const char *cand_rule(json_t *line, const char *offer)
{
	json_t *cands = json_object_get(line, "candidates"), *c;
	size_t i;
	json_array_foreach(cands, i, c) if (!strcmp(tc_jstr(c, "offer_id"), offer)) return tc_jstr(c, "rule");
	return NULL;
}

static void expect_field(json_t *problem, const char *field, const char *rule)
{
	cr_assert(tc_lists_error(problem, field, rule), "%s/%s not listed: %s", field, rule,
		  json_dumps(problem, JSON_COMPACT));
}

WM_TEST(channel_stock, quotes_pick_the_stock_of_their_channel)
{
	struct cworld w;
	world(&w);
	/* through "web" (location A): A's 10 units, offer2 (at C only) excluded by the channel */
	json_t *q = quote(&w, w.ksel, w.ch_web, 6, 200);
	json_t *s = quote_source(q);
	cr_assert_str_eq(tc_jstr(s, "offer_id"), w.offer);
	cr_assert_str_eq(tc_jstr(s, "location_id"), w.loc_a, "web ships from A: %s", json_dumps(s, JSON_COMPACT));
	cr_assert_str_eq(tc_jstr(q, "channel_id"), w.ch_web);
	json_t *line = json_array_get(json_object_get(q, "lines"), 0);
	cr_assert_str_eq(cand_rule(line, w.offer2), "not_on_channel", "%s", json_dumps(line, JSON_COMPACT));
	json_decref(q);
	/* through "shop" (location B) */
	q = quote(&w, w.ksel, w.ch_shop, 6, 200);
	s = quote_source(q);
	cr_assert_str_eq(tc_jstr(s, "location_id"), w.loc_b, "shop ships from B: %s", json_dumps(s, JSON_COMPACT));
	line = json_array_get(json_object_get(q, "lines"), 0);
	cr_assert_str_eq(cand_rule(line, w.offer2), "not_on_channel");
	json_decref(q);
	/* 12 units: "web" holds 10, so it cannot, though B and C hold plenty */
	q = quote(&w, w.ksel, w.ch_web, 12, 422);
	cr_assert_str_eq(tc_jstr(q, "code"), "insufficient_stock", "%s", json_dumps(q, JSON_COMPACT));
	json_decref(q);
	json_decref(quote(&w, w.ksel, w.ch_shop, 12, 200));
	/* several channels, none named: the field is named */
	q = quote(&w, w.ksel, NULL, 6, 422);
	expect_field(q, "channel_id", "required");
	json_decref(q);
	/* one channel: it need not be named */
	q = quote(&w, w.ksel1, NULL, 6, 200);
	cr_assert_str_eq(tc_jstr(q, "channel_id"), w.ch_only);
	cr_assert_str_eq(tc_jstr(quote_source(q), "location_id"), w.loc_a);
	json_decref(q);
	/* another seller's channel answers as an unknown one */
	json_t *a = quote(&w, w.ksel1, w.ch_web, 6, 422);
	json_t *b = quote(&w, w.ksel1, "chn_doesnotexist", 6, 422);
	expect_field(a, "channel_id", "unknown");
	expect_field(b, "channel_id", "unknown");
	json_decref(a);
	json_decref(b);
	/* channel_id must be an id string; null is the same as absent */
	char body[512];
	snprintf(body, sizeof(body),
		 "{\"channel_id\":42,\"destination_country\":\"DE\",\"lines\":[{\"sku\":\"%s\",\"qty\":1,\"box_units\":6}]}",
		 w.wine);
	q = tc_expect(w.port, "POST", "/v1/orders/quote-calculate", w.ksel, body, 422);
	expect_field(q, "channel_id", "type");
	json_decref(q);
	snprintf(body, sizeof(body),
		 "{\"channel_id\":null,\"destination_country\":\"DE\",\"lines\":[{\"sku\":\"%s\",\"qty\":1,\"box_units\":6}]}",
		 w.wine);
	q = tc_expect(w.port, "POST", "/v1/orders/quote-calculate", w.ksel1, body, 200);
	cr_assert_str_eq(tc_jstr(q, "channel_id"), w.ch_only);
	json_decref(q);
	/* a paused channel does not sell */
	char path[128];
	snprintf(path, sizeof(path), "/v1/sales-channels/%s", w.ch_shop);
	json_decref(tc_expect(w.port, "PATCH", path, w.ksel, "{\"status\":\"paused\"}", 200));
	q = quote(&w, w.ksel, w.ch_shop, 6, 422);
	expect_field(q, "channel_id", "active");
	json_decref(q);
	wm_proc_cleanup(&w.p);
}

WM_TEST(channel_stock, orders_take_the_stock_of_their_channel_and_keep_its_id)
{
	struct cworld w;
	world(&w);
	json_t *o1 = order(&w, w.ksel, w.ch_web, NULL, 6, 201);
	json_t *o2 = order(&w, w.ksel, w.ch_shop, NULL, 6, 201);
	char id1[64], id2[64];
	snprintf(id1, sizeof(id1), "%s", tc_jstr(o1, "id"));
	snprintf(id2, sizeof(id2), "%s", tc_jstr(o2, "id"));
	struct {
		json_t *o;
		const char *ch, *loc, *kind;
	} want[] = {{o1, w.ch_web, w.loc_a, "webshop_connect"}, {o2, w.ch_shop, w.loc_b, "pos_qr"}};
	for (int i = 0; i < 2; i++) {
		json_t *o = want[i].o;
		cr_assert_str_eq(tc_jstr(o, "status"), "reserved");
		cr_assert_str_eq(tc_jstr(o, "channel_id"), want[i].ch, "%s", json_dumps(o, JSON_COMPACT));
		cr_assert_str_eq(tc_jstr(o, "channel"), want[i].kind, "the order's channel is its channel's kind");
		json_t *legs = json_object_get(o, "fulfillments");
		cr_assert_eq(json_array_size(legs), 1);
		cr_assert_str_eq(tc_jstr(json_array_get(legs, 0), "location_id"), want[i].loc, "%s",
				 json_dumps(legs, JSON_COMPACT));
		cr_assert_str_eq(tc_jstr(json_array_get(legs, 0), "offer_id"), w.offer);
		json_t *line = json_array_get(json_object_get(json_object_get(o, "sourcing"), "lines"), 0);
		cr_assert_str_eq(cand_rule(line, w.offer2), "not_on_channel", "%s", json_dumps(line, JSON_COMPACT));
	}
	json_decref(o1);
	json_decref(o2);
	/* A has 4 left: 5 through "web" is refused although B and C hold plenty */
	json_t *p = order(&w, w.ksel, w.ch_web, NULL, 5, 422);
	cr_assert_str_eq(tc_jstr(p, "code"), "insufficient_stock", "%s", json_dumps(p, JSON_COMPACT));
	json_decref(p);
	json_decref(order(&w, w.ksel, w.ch_shop, NULL, 5, 201));
	/* the order's channel must be its channel's kind */
	p = order(&w, w.ksel, w.ch_web, "\"channel\":\"pos_qr\",", 1, 422);
	expect_field(p, "channel", "channel_kind");
	json_decref(p);
	json_decref(order(&w, w.ksel, w.ch_web, "\"channel\":\"webshop_connect\",", 1, 201));
	/* several channels and none named */
	p = order(&w, w.ksel, NULL, NULL, 1, 422);
	expect_field(p, "channel_id", "required");
	json_decref(p);
	/* a restart keeps channel_id on every read */
	cr_assert_eq(wm_stop(&w.p), 0);
	cr_assert_eq(wm_start(&w.p, NULL, NULL), 0);
	w.port = w.p.port;
	char path[128];
	snprintf(path, sizeof(path), "/v1/orders/%s", id1);
	json_t *r = tc_expect(w.port, "GET", path, w.ksel, NULL, 200);
	cr_assert_str_eq(tc_jstr(r, "channel_id"), w.ch_web);
	json_decref(r);
	snprintf(path, sizeof(path), "/v1/orders/%s", id2);
	r = tc_expect(w.port, "GET", path, NULL, NULL, 200);
	cr_assert_str_eq(tc_jstr(r, "channel_id"), w.ch_shop);
	json_decref(r);
	wm_proc_cleanup(&w.p);
}

/* The default channel walks at most CHANNEL_DEFAULT_SCAN (64) of the
 * seller's channels: 63 closed + 1 open is found, one more closed row and
 * the request must name its channel. */
WM_TEST(channel_stock, default_channel_scan_bound)
{
	struct cworld w;
	world(&w);
	char id[64], body[160], path[128];
	for (int i = 0; i < 63; i++) {
		snprintf(body, sizeof(body), "{\"name\":\"closed %02d\",\"kind\":\"pos_qr\"}", i);
		mk(w.port, "/v1/sales-channels", w.ksel1, body, id);
		snprintf(path, sizeof(path), "/v1/sales-channels/%s", id);
		json_decref(tc_expect(w.port, "PATCH", path, w.ksel1, "{\"status\":\"closed\"}", 200));
	}
	json_t *q = quote(&w, w.ksel1, NULL, 1, 200); /* 64 rows: at the bound */
	cr_assert_str_eq(tc_jstr(q, "channel_id"), w.ch_only);
	json_decref(q);
	mk(w.port, "/v1/sales-channels", w.ksel1, "{\"name\":\"closed 63\",\"kind\":\"pos_qr\"}", id);
	snprintf(path, sizeof(path), "/v1/sales-channels/%s", id);
	json_decref(tc_expect(w.port, "PATCH", path, w.ksel1, "{\"status\":\"closed\"}", 200));
	q = quote(&w, w.ksel1, NULL, 1, 422); /* 65 rows: past it */
	expect_field(q, "channel_id", "required");
	json_decref(q);
	json_decref(quote(&w, w.ksel1, w.ch_only, 1, 200)); /* naming it always works */
	/* every channel closed: none to sell through */
	snprintf(path, sizeof(path), "/v1/sales-channels/%s", w.ch_only);
	json_decref(tc_expect(w.port, "PATCH", path, w.ksel1, "{\"status\":\"closed\"}", 200));
	q = quote(&w, w.ksel1, NULL, 1, 422);
	expect_field(q, "channel_id", "required");
	json_decref(q);
	wm_proc_cleanup(&w.p);
}
