/*
 * test_order_views.c -- issue 22 items 2, 3, 4 (quotes) and 6 against real
 * wm-shard processes: who sees what of an order and of a quote.
 *
 * Why this file: an order is read by up to five kinds of caller (its
 * seller, each originator of a source, each fulfiller of a leg, the
 * platform, and everybody else), and one function serialises every view of
 * the same stored document.  The golden field lists below are written by
 * hand from the rules (engine/orders/order.c, api/openapi.json "Order"), never
 * copied from a response:
 *   seller       its order: everything (its margin too), minus routing
 *                candidates it may not see;
 *   originator   its own sources, legs and payout and the order's state; no
 *                other originator's offer, price, cellar, level or payout,
 *                no consumer price or seller margin;
 *   fulfiller    the legs it ships (items, packaging, ship-to); no prices,
 *                no other legs, no hold or level ids;
 *   platform     everything.
 * The world: an estate whose offer is restricted to one named seller (S1)
 * with 4 bottles in its own cellar; an importer with 4 bottles at a 3PL's
 * warehouse; S1 orders 6 (split: 4 from the estate, 2 from the importer,
 * shipped by the 3PL); S2 is not named on the estate's offer.
 *
 * The oracle test compares answers for hidden and unknown rows byte for
 * byte, the ids replaced by a placeholder.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/api_client.h"
#include "tests/wm_test.h"

struct vworld {
	struct wm_proc p;
	int port;
	char est[64], imp[64], tpl[64], s1[64], s2[64];        /* partners */
	char kest[128], kimp[128], ktpl[128], ks1[128], ks2[128], kpub[128]; /* keys (kpub: S1 publishable) */
	char wine[64], of_est[64], of_imp[64];
	char cellar[64], hub[64], lv_est[64], lv_imp[64], chan[64];
	char order[64];                                         /* S1's split order */
};

static const char *dump(json_t *j)
{
	static char b[32768];
	size_t n = json_dumpb(j, b, sizeof(b) - 1, JSON_COMPACT);
	b[n < sizeof(b) - 1 ? n : sizeof(b) - 1] = 0;
	return b;
}

static json_t *jat(json_t *o, const char *k, size_t i) { return json_array_get(json_object_get(o, k), i); }

static void id_of(json_t *j, char *out)
{
	cr_assert_not_null(tc_jstr(j, "id"), "no id: %s", dump(j));
	snprintf(out, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
}

static void location(struct vworld *x, const char *key, const char *type, const char *name, char *out)
{
	char body[512];
	snprintf(body, sizeof(body),
		 "{\"location_type\":\"%s\",\"name\":\"%s\",\"address\":{\"line1\":\"1 quai\",\"city\":\"Lyon\","
		 "\"postal_code\":\"69002\",\"country\":\"FR\"}}",
		 type, name);
	id_of(tc_expect(x->port, "POST", "/v1/stock-locations", key, body, 201), out);
}

static void level(struct vworld *x, const char *key, const char *offer, const char *loc, int units, char *out)
{
	char body[512];
	snprintf(body, sizeof(body), "{\"sku\":\"SKU-%s\",\"offer_id\":\"%s\",\"location_id\":\"%s\",\"on_hand\":%d}",
		 offer, offer, loc, units);
	id_of(tc_expect(x->port, "POST", "/v1/inventory", key, body, 201), out);
}

static const char *order_body(const char *wine, int qty, const char *extra, char *out, size_t size)
{
	snprintf(out, size,
		 "{%s\"destination_country\":\"DE\",\"consumer\":{\"name\":\"Erika Mustermann\",\"email\":"
		 "\"erika@example.de\",\"address\":{\"line1\":\"Weinstrasse 1\",\"city\":\"Berlin\",\"postal_code\":"
		 "\"10115\"}},\"lines\":[{\"sku\":\"%s\",\"qty\":%d,\"box_units\":6}]}",
		 extra ? extra : "", wine, qty);
	return out;
}

static void vworld(struct vworld *x)
{
	memset(x, 0, sizeof(*x));
	tc_start(&x->p);
	x->port = x->p.port;
	int port = x->port;
	char body[1024];
	tc_partner_live(port, "Estate", "FR", "[\"originator\"]", "\"originator_type\":\"estate\"", x->est);
	tc_partner_live(port, "Importer", "FR", "[\"originator\"]", "\"originator_type\":\"stock\"", x->imp);
	tc_partner_live(port, "Logistics", "FR", "[\"fulfiller\"]", NULL, x->tpl);
	tc_partner_live(port, "Shop One", "DE", "[\"seller\"]", NULL, x->s1);
	tc_partner_live(port, "Shop Two", "DE", "[\"seller\"]", NULL, x->s2);
	tc_key_for(port, x->est, x->kest);
	tc_key_for(port, x->imp, x->kimp);
	tc_key_for(port, x->tpl, x->ktpl);
	tc_key_for(port, x->s1, x->ks1);
	tc_key_for(port, x->s2, x->ks2);
	tc_pub_wine_of(port, "Views Rouge", x->est, "wine", x->wine);
	snprintf(body, sizeof(body),
		 "\"seller_price\":10.00,\"qty_available\":0,\"incoterm\":\"EXW\",\"status\":\"active\","
		 "\"network_shareable\":true,\"permissions\":{\"named_sellers\":[\"%s\"]}",
		 x->s1);
	json_decref(tc_offer(port, x->kest, x->wine, body, 201, x->of_est));
	json_decref(tc_offer(port, x->kimp, x->wine,
			     "\"seller_price\":11.00,\"qty_available\":0,\"incoterm\":\"EXW\",\"status\":\"active\","
			     "\"network_shareable\":true",
			     201, x->of_imp));
	location(x, x->kest, "WINERY_ESTATE", "Cuverie", x->cellar);
	location(x, x->ktpl, "BONDED_WAREHOUSE", "3PL hub", x->hub);
	level(x, x->kest, x->of_est, x->cellar, 4, x->lv_est);
	level(x, x->kimp, x->of_imp, x->hub, 4, x->lv_imp); /* the importer's stock, the 3PL's warehouse */
	snprintf(body, sizeof(body), "{\"name\":\"Web\",\"kind\":\"webshop_connect\",\"location_ids\":[\"%s\",\"%s\"]}",
		 x->cellar, x->hub);
	id_of(tc_expect(port, "POST", "/v1/sales-channels", x->ks1, body, 201), x->chan);
	snprintf(body, sizeof(body),
		 "{\"offer_id\":\"%s\",\"channel_id\":\"%s\",\"shelf_price\":16.90,\"currency\":\"EUR\",\"status\":\"live\"}",
		 x->of_est, x->chan);
	json_decref(tc_expect(port, "POST", "/v1/listings", x->ks1, body, 201));
	snprintf(body, sizeof(body), "{\"entity_id\":\"%s\",\"kind\":\"publishable\",\"channel_id\":\"%s\"}", x->s1,
		 x->chan);
	json_t *j = tc_expect(port, "POST", "/api/keys", NULL, body, 201);
	snprintf(x->kpub, sizeof(x->kpub), "%s", tc_jstr(j, "key"));
	json_decref(j);
	/* S1's order of 6: the estate has 4, the importer 4: split 4 + 2 */
	j = tc_expect(port, "POST", "/v1/orders", x->ks1, order_body(x->wine, 6, NULL, body, sizeof(body)), 201);
	cr_assert_str_eq(tc_jstr(j, "status"), "reserved", "%s", dump(j));
	snprintf(x->order, sizeof(x->order), "%s", tc_jstr(j, "order_id"));
	cr_assert_str_eq(tc_jstr(json_object_get(j, "sourcing"), "split_reason"), "estate_atp_short", "%s", dump(j));
	json_decref(j);
	/* Every view carries the order's documents, which the shard creates and
	 * renders after the answer (engine/orders/documents.c): wait until the
	 * set exists and none is pending, so two reads of one view (the detail,
	 * then the list) see the same documents.  Under a loaded CI run the
	 * render between them made the list differ from the detail. */
	snprintf(body, sizeof(body), "/v1/orders/%s/documents", x->order);
	for (int t = 0;; t++) {
		j = tc_expect(port, "GET", body, NULL, NULL, 200);
		json_t *data = json_object_get(j, "data"), *d;
		size_t i, pending = 0;
		json_array_foreach(data, i, d)
			pending += !strcmp(tc_jstr(d, "status"), "pending");
		int settled = json_array_size(data) > 0 && !pending;
		cr_assert(settled || t < 600, "the documents of %s did not settle in 30 s: %s", x->order, dump(j));
		json_decref(j);
		if (settled)
			break;
		usleep(50 * 1000);
	}
}

/* ---- assertions ---------------------------------------------------------------------- */

/* obj's member names are exactly want (NULL-terminated), in any order. */
static void keys_are(json_t *obj, const char *const *want, const char *what)
{
	cr_assert(json_is_object(obj), "%s: not an object", what);
	size_t n = 0;
	for (; want[n]; n++)
		cr_assert_not_null(json_object_get(obj, want[n]), "%s: %s missing in %s", what, want[n], dump(obj));
	const char *k;
	json_t *v;
	json_object_foreach(obj, k, v)
	{
		int found = 0;
		for (size_t i = 0; i < n && !found; i++)
			found = !strcmp(k, want[i]);
		cr_assert(found, "%s: %s must not be shown: %s", what, k, dump(obj));
	}
}

/* Every element of array arr (of objects) has exactly the members want. */
static void each_keys_are(json_t *arr, const char *const *want, const char *what)
{
	size_t i;
	json_t *e;
	json_array_foreach(arr, i, e) keys_are(e, want, what);
}

/* The body text (compact JSON) contains none of the strings in bad (NULL-terminated). */
static void mentions_none(json_t *j, const char *const *bad, const char *what)
{
	char *s = json_dumps(j, JSON_COMPACT);
	for (size_t i = 0; bad[i]; i++)
		cr_assert_null(strstr(s, bad[i]), "%s reveals %s: %s", what, bad[i], s);
	free(s);
}

/* Every element of arr has string member k == v. */
static void all_have(json_t *arr, const char *k, const char *v, const char *what)
{
	size_t i;
	json_t *e;
	cr_assert(json_array_size(arr) > 0, "%s: empty", what);
	json_array_foreach(arr, i, e) cr_assert_str_eq(tc_jstr(e, k), v, "%s: %s", what, dump(e));
}

static json_t *get(struct vworld *x, const char *key, const char *sub, int want)
{
	char path[256];
	snprintf(path, sizeof(path), "/v1/orders/%s%s", x->order, sub ? sub : "");
	return tc_expect(x->port, "GET", path, key, NULL, want);
}

/* The caller's detail view; /sourcing and /fulfillments and its list entry
 * must be the same function's output (the same members of the same view). */
static json_t *view(struct vworld *x, const char *key)
{
	json_t *d = get(x, key, NULL, 200);
	json_t *s = get(x, key, "/sourcing", 200);
	cr_assert(json_equal(s, json_object_get(d, "sourcing")), "/sourcing differs from the detail's: %s", dump(s));
	json_decref(s);
	json_t *f = get(x, key, "/fulfillments", 200);
	cr_assert(json_equal(json_object_get(f, "data"), json_object_get(d, "fulfillments")),
		  "/fulfillments differs from the detail's: %s", dump(f));
	json_decref(f);
	json_t *l = tc_expect(x->port, "GET", "/v1/orders", key, NULL, 200);
	size_t i;
	json_t *e;
	int seen = 0;
	json_array_foreach(json_object_get(l, "data"), i, e) if (!strcmp(tc_jstr(e, "order_id"), x->order))
	{
		cr_assert(json_equal(e, d), "the list shows another view than the detail: %s", dump(e));
		seen = 1;
	}
	cr_assert(seen, "the order is missing from the caller's list");
	json_decref(l);
	return d;
}

/* ---- golden field lists, from the rules ----------------------------------------------- */

static const char *const full_top[] = {"order_id", "id", "status", "channel", "channel_id", "consumer", "seller",
				       "platform_entity", "destination_country", "currency", "lines", "sourcing",
				       "fulfillments", "financial_breakdown", "settlement_split", "components",
				       "total", "reference_data", "documents", "compliance", "payment", "failure",
				       "saga", "idempotency", "created_at", "updated_at", NULL};
/* a participant that is not the seller: identity, state, its own parts */
static const char *const part_top[] = {"order_id", "id", "status", "channel", "consumer", "seller",
				       "platform_entity", "destination_country", "currency", "lines", "sourcing",
				       "fulfillments", "settlement_split", "failure", "saga", "created_at",
				       "updated_at", NULL};
static const char *const consumer_full[] = {"consumer_id", "name", "email", "address", "country", NULL};
static const char *const consumer_ship[] = {"consumer_id", "name", "address", "country", NULL};
static const char *const consumer_min[] = {"consumer_id", "country", NULL};
static const char *const line_supplier[] = {"line", "sku", "wine_id", "box_units", "sources", NULL};
static const char *const line_shipper[] = {"line", "sku", "wine_id", "box_units", NULL};
static const char *const line_source[] = {"offer_id", "originator_id", "qty", "p2b", "p2b_currency", NULL};
static const char *const sourcing_part[] = {"priority", "source", NULL};
static const char *const source_own[] = {"line", "offer_id", "originator_id", "qty", "p2b", "p2b_currency",
					 "incoterm", "fulfiller_id", "estate", NULL};
static const char *const source_ship[] = {"line", "offer_id", "originator_id", "qty", "incoterm", "fulfiller_id",
					  "estate", NULL};
static const char *const leg_own[] = {"leg_id", "status", "hold_id", "offer_id", "originator_id", "fulfiller_id",
				      "location_id", "level_id", "qty", "items", "carrier", "tracking_number", "tracking", NULL};
static const char *const leg_ship[] = {"leg_id", "status", "offer_id", "originator_id", "fulfiller_id",
				       "location_id", "qty", "items", "carrier", "tracking_number", "tracking", NULL};
static const char *const settlement_part[] = {"currency", "parties", NULL};

/* The per-participant checks shared by the originators and the fulfiller. */
static void participant(json_t *v, const char *me, const char *const *consumer, const char *const *line,
			const char *const *source, const char *const *leg, const char *what)
{
	keys_are(v, part_top, what);
	keys_are(json_object_get(v, "consumer"), consumer, what);
	cr_assert_eq(json_array_size(json_object_get(v, "lines")), 1, "%s: %s", what, dump(v));
	keys_are(jat(v, "lines", 0), line, what);
	if (json_object_get(jat(v, "lines", 0), "sources")) {
		each_keys_are(json_object_get(jat(v, "lines", 0), "sources"), line_source, what);
		all_have(json_object_get(jat(v, "lines", 0), "sources"), "originator_id", me, what);
	}
	keys_are(json_object_get(v, "sourcing"), sourcing_part, what);
	json_t *src = json_object_get(json_object_get(v, "sourcing"), "source");
	cr_assert_eq(json_array_size(src), 1, "%s: %s", what, dump(v));
	each_keys_are(src, source, what);
	cr_assert_eq(json_array_size(json_object_get(v, "fulfillments")), 1, "%s: %s", what, dump(v));
	each_keys_are(json_object_get(v, "fulfillments"), leg, what);
	keys_are(json_object_get(v, "settlement_split"), settlement_part, what);
	all_have(json_object_get(json_object_get(v, "settlement_split"), "parties"), "partner_id", me, what);
}

WM_TEST(order_views, role_matrix_on_a_split_order)
{
	struct vworld x;
	vworld(&x);
	int port = x.port;

	/* the platform: the whole document */
	json_t *l, *v = view(&x, NULL);
	keys_are(v, full_top, "platform");
	keys_are(json_object_get(v, "consumer"), consumer_full, "platform");
	cr_assert_eq(json_array_size(json_object_get(v, "fulfillments")), 2, "%s", dump(v));
	cr_assert_eq(json_array_size(json_object_get(json_object_get(v, "sourcing"), "source")), 2);
	json_decref(v);

	/* the seller: its order, its margin, both candidates (both visible to it) */
	v = view(&x, x.ks1);
	keys_are(v, full_top, "seller");
	keys_are(json_object_get(v, "consumer"), consumer_full, "seller");
	cr_assert_eq(json_array_size(json_object_get(v, "fulfillments")), 2);
	cr_assert_eq(json_array_size(json_object_get(jat(json_object_get(v, "sourcing"), "lines", 0), "candidates")), 2,
		     "%s", dump(v));
	cr_assert(json_number_value(json_object_get(json_object_get(v, "components"), "M_Curator")) > 0, "%s", dump(v));
	json_decref(v);

	/* the importer: its source, its leg, its payout; nothing of the estate's */
	v = view(&x, x.kimp);
	participant(v, x.imp, consumer_min, line_supplier, source_own, leg_own, "importer");
	cr_assert_str_eq(tc_jstr(jat(json_object_get(v, "sourcing"), "source", 0), "offer_id"), x.of_imp);
	cr_assert_str_eq(tc_jstr(jat(v, "fulfillments", 0), "fulfiller_id"), x.tpl);
	const char *const not_imp[] = {x.est, x.of_est, x.cellar, x.lv_est, "M_Curator", "landed_cost", "erika@",
				       "Erika", "\"total\"", x.chan, NULL};
	mentions_none(v, not_imp, "the importer's view");
	json_decref(v);

	/* the estate (originator, and the fulfiller of its own leg) */
	v = view(&x, x.kest);
	participant(v, x.est, consumer_ship, line_supplier, source_own, leg_own, "estate");
	cr_assert_str_eq(tc_jstr(jat(json_object_get(v, "sourcing"), "source", 0), "offer_id"), x.of_est);
	const char *const not_est[] = {x.imp, x.of_imp, x.hub, x.lv_imp, x.tpl, "M_Curator", "landed_cost", "erika@",
				       "\"total\"", x.chan, NULL};
	mentions_none(v, not_est, "the estate's view");
	json_decref(v);

	/* the 3PL: the leg it ships, ship-to and packaging, no price */
	v = view(&x, x.ktpl);
	participant(v, x.tpl, consumer_ship, line_shipper, source_ship, leg_ship, "3PL");
	cr_assert_str_eq(tc_jstr(jat(v, "fulfillments", 0), "offer_id"), x.of_imp);
	cr_assert_str_eq(tc_jstr(jat(json_object_get(v, "settlement_split"), "parties", 0), "role"),
			 "fulfiller");
	const char *const not_tpl[] = {x.est, x.of_est, x.cellar, x.lv_est, x.lv_imp, "p2b", "P_B2B", "M_Curator",
				       "landed_cost", "erika@", "\"total\"", x.chan, NULL};
	mentions_none(v, not_tpl, "the 3PL's view");
	json_decref(v);

	/* ?partner= never names a participant the caller's view does not show */
	const struct {
		const char *key, *partner;
		size_t n;
	} pf[] = {{x.kimp, x.est, 0}, {x.kimp, x.tpl, 1}, {x.kimp, x.s1, 1}, {x.kimp, x.imp, 1},
		  {x.ktpl, x.est, 0}, {x.ktpl, x.imp, 1}, {x.kest, x.imp, 0}, {x.kest, x.tpl, 0},
		  {x.kest, x.s1, 1},  {x.ks1, x.est, 1},  {x.ks1, x.tpl, 1}};
	for (size_t i = 0; i < sizeof(pf) / sizeof(pf[0]); i++) {
		char path[200];
		snprintf(path, sizeof(path), "/v1/orders?partner=%s", pf[i].partner);
		l = tc_expect(port, "GET", path, pf[i].key, NULL, 200);
		cr_assert_eq(json_array_size(json_object_get(l, "data")), pf[i].n, "case %zu: %s", i, dump(l));
		json_decref(l);
	}

	/* everybody else: no such order; a storefront key: no order scope */
	json_decref(get(&x, x.ks2, NULL, 404));
	json_decref(get(&x, x.ks2, "/sourcing", 404));
	json_decref(get(&x, x.ks2, "/fulfillments", 404));
	l = tc_expect(port, "GET", "/v1/orders", x.ks2, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(l, "data")), 0, "%s", dump(l));
	json_decref(l);
	json_decref(get(&x, x.kpub, NULL, 403));
	json_decref(get(&x, x.kpub, "/sourcing", 403));
	json_decref(get(&x, x.kpub, "/fulfillments", 403));
	json_decref(tc_expect(port, "GET", "/v1/orders", x.kpub, NULL, 403));

	/* quote-calculate: each seller's candidates are the offers it may see;
	 * only sellers quote (can_create_orders) */
	char qbody[512];
	snprintf(qbody, sizeof(qbody),
		 "{\"destination_country\":\"DE\",\"lines\":[{\"sku\":\"%s\",\"qty\":1,\"box_units\":6}]}", x.wine);
	json_t *q = tc_expect(port, "POST", "/v1/orders/quote-calculate", x.ks1, qbody, 200);
	json_t *cands = json_object_get(jat(q, "lines", 0), "candidates");
	cr_assert_eq(json_array_size(cands), 2, "S1 sees both offers: %s", dump(q));
	json_decref(q);
	q = tc_expect(port, "POST", "/v1/orders/quote-calculate", x.ks2, qbody, 200);
	cands = json_object_get(jat(q, "lines", 0), "candidates");
	cr_assert_eq(json_array_size(cands), 1, "%s", dump(q));
	cr_assert_str_eq(tc_jstr(json_array_get(cands, 0), "offer_id"), x.of_imp);
	const char *const not_s2q[] = {x.of_est, x.est, x.cellar, "seller_not_named", NULL};
	mentions_none(q, not_s2q, "S2's quote");
	json_decref(q);
	const char *const non_sellers[] = {x.kest, x.kimp, x.ktpl, x.kpub};
	for (size_t i = 0; i < sizeof(non_sellers) / sizeof(non_sellers[0]); i++)
		json_decref(tc_expect(port, "POST", "/v1/orders/quote-calculate", non_sellers[i], qbody, 403));

	/* events: each participant's own only */
	const struct {
		const char *key;
		const char *const *bad;
	} ev[] = {{x.kimp, not_imp}, {x.kest, not_est}, {x.ktpl, not_tpl}};
	for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++) {
		json_t *e = tc_expect(port, "GET", "/v1/events?page_size=200", ev[i].key, NULL, 200);
		mentions_none(e, ev[i].bad, "a participant's events");
		json_decref(e);
	}
	json_t *e = tc_expect(port, "GET", "/v1/events?page_size=200", x.ks2, NULL, 200);
	const char *const not_s2[] = {x.order, x.of_est, NULL};
	mentions_none(e, not_s2, "S2's events");
	json_decref(e);
	cr_assert_eq(tc_count_events(port, "order.placed", x.ks1), 1);
	cr_assert_eq(tc_count_events(port, "order.placed", x.kimp), 0);
	cr_assert_eq(tc_count_events(port, "order.placed", x.ktpl), 0);
	wm_proc_cleanup(&x.p);
}

/*
 * Issue 22 item 6: one answer to "who ships": every source's fulfiller_id
 * is the fulfiller_id of its leg, the settlement pays that fulfiller the
 * freight, and the quote's preview names the same partner.
 */
WM_TEST(order_views, one_fulfiller_per_source)
{
	struct vworld x;
	vworld(&x);
	json_t *v = tc_expect(x.port, "GET", "/v1/orders?page_size=1", NULL, NULL, 200);
	json_t *o = jat(v, "data", 0);
	json_t *src = json_object_get(json_object_get(o, "sourcing"), "source"), *s, *legs = json_object_get(o, "fulfillments");
	size_t i;
	int imp_seen = 0;
	json_array_foreach(src, i, s)
	{
		size_t k;
		json_t *g;
		int matched = 0;
		json_array_foreach(legs, k, g) if (!strcmp(tc_jstr(g, "offer_id"), tc_jstr(s, "offer_id")))
		{
			cr_assert_str_eq(tc_jstr(s, "fulfiller_id"), tc_jstr(g, "fulfiller_id"), "source %s vs leg %s",
					 dump(s), dump(g));
			matched = 1;
		}
		cr_assert(matched, "no leg for %s", dump(s));
		if (!strcmp(tc_jstr(s, "offer_id"), x.of_imp)) {
			cr_assert_str_eq(tc_jstr(s, "fulfiller_id"), x.tpl, "the 3PL ships the importer's source");
			imp_seen = 1;
		}
	}
	cr_assert(imp_seen);
	/* the per-line sourcing says the same */
	json_array_foreach(json_object_get(jat(json_object_get(o, "sourcing"), "lines", 0), "source"), i, s)
		if (!strcmp(tc_jstr(s, "offer_id"), x.of_imp))
	{
		cr_assert_str_eq(tc_jstr(s, "fulfiller_id"), x.tpl, "%s", dump(s));
		cr_assert_str_eq(tc_jstr(s, "location_id"), x.hub, "%s", dump(s));
	}
	/* freight goes to the one who ships it; the importer gets none */
	json_array_foreach(json_object_get(json_object_get(o, "settlement_split"), "parties"), i, s)
		if (!strcmp(tc_jstr(s, "role"), "fulfiller"))
			cr_assert(!strcmp(tc_jstr(s, "partner_id"), x.tpl) || !strcmp(tc_jstr(s, "partner_id"), x.est),
				  "freight paid to %s", dump(s));
	json_decref(v);
	/* the preview: the importer's remaining 2 bottles, shipped by the 3PL */
	char body[512];
	snprintf(body, sizeof(body),
		 "{\"destination_country\":\"DE\",\"lines\":[{\"sku\":\"%s\",\"qty\":2,\"box_units\":6}]}", x.wine);
	json_t *q = tc_expect(x.port, "POST", "/v1/orders/quote-calculate", x.ks2, body, 200);
	json_t *qs = jat(json_object_get(jat(q, "lines", 0), "sourcing"), "source", 0);
	cr_assert_str_eq(tc_jstr(qs, "offer_id"), x.of_imp, "%s", dump(q));
	cr_assert_str_eq(tc_jstr(qs, "fulfiller_id"), x.tpl, "%s", dump(q));
	json_decref(q);
	wm_proc_cleanup(&x.p);
}

/*
 * Issue 22 item 2: S2 is not named on the estate's offer.  In its quote
 * and in its own orders (detail, /sourcing, the list) that offer is no
 * candidate at all, whoever placed the order; the platform still sees it
 * with the rule that ruled it out.
 */
WM_TEST(order_views, candidates_the_seller_may_not_see_are_omitted)
{
	struct vworld x;
	vworld(&x);
	int port = x.port;
	char body[1024], extra[128], id[64], path[200];
	const char *const hidden[] = {x.of_est, x.est, "seller_not_named", NULL};
	/* S2's quote: one candidate, the importer's */
	snprintf(body, sizeof(body),
		 "{\"destination_country\":\"DE\",\"lines\":[{\"sku\":\"%s\",\"qty\":1,\"box_units\":6}]}", x.wine);
	json_t *q = tc_expect(port, "POST", "/v1/orders/quote-calculate", x.ks2, body, 200);
	cr_assert_eq(json_array_size(json_object_get(jat(q, "lines", 0), "candidates")), 1, "%s", dump(q));
	mentions_none(q, hidden, "S2's quote");
	json_decref(q);
	/* the platform quoting for S2 sees the estate's offer and why it lost */
	snprintf(body, sizeof(body),
		 "{\"seller\":\"%s\",\"destination_country\":\"DE\",\"lines\":[{\"sku\":\"%s\",\"qty\":1,\"box_units\":6}]}",
		 x.s2, x.wine);
	q = tc_expect(port, "POST", "/v1/orders/quote-calculate", NULL, body, 200);
	json_t *cands = json_object_get(jat(q, "lines", 0), "candidates");
	cr_assert_eq(json_array_size(cands), 2, "%s", dump(q));
	int named = 0;
	size_t i;
	json_t *c;
	json_array_foreach(cands, i, c) named |= tc_jstr(c, "permission") && !strcmp(tc_jstr(c, "permission"), "seller_not_named");
	cr_assert(named, "%s", dump(q));
	json_decref(q);

	/* an order the platform places for S2 records both; S2 reads one */
	snprintf(extra, sizeof(extra), "\"seller\":\"%s\",", x.s2);
	json_t *o = tc_expect(port, "POST", "/v1/orders", NULL, order_body(x.wine, 1, extra, body, sizeof(body)), 201);
	snprintf(id, sizeof(id), "%s", tc_jstr(o, "order_id"));
	cr_assert_eq(json_array_size(json_object_get(jat(json_object_get(o, "sourcing"), "lines", 0), "candidates")), 2,
		     "the platform's order keeps every candidate: %s", dump(o));
	json_decref(o);
	snprintf(path, sizeof(path), "/v1/orders/%s", id);
	o = tc_expect(port, "GET", path, x.ks2, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(jat(json_object_get(o, "sourcing"), "lines", 0), "candidates")), 1,
		     "%s", dump(o));
	mentions_none(o, hidden, "S2's order");
	json_decref(o);
	snprintf(path, sizeof(path), "/v1/orders/%s/sourcing", id);
	o = tc_expect(port, "GET", path, x.ks2, NULL, 200);
	mentions_none(o, hidden, "S2's /sourcing");
	json_decref(o);
	o = tc_expect(port, "GET", "/v1/orders", x.ks2, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(o, "data")), 1, "%s", dump(o));
	mentions_none(o, hidden, "S2's order list");
	json_decref(o);
	/* S2's own order: the estate's offer is not even stored */
	o = tc_expect(port, "POST", "/v1/orders", x.ks2, order_body(x.wine, 1, NULL, body, sizeof(body)), 201);
	mentions_none(o, hidden, "S2's new order");
	snprintf(path, sizeof(path), "/v1/orders/%s", tc_jstr(o, "order_id"));
	json_decref(o);
	o = tc_expect(port, "GET", path, NULL, NULL, 200);
	mentions_none(o, hidden, "the order S2 placed, as stored");
	json_decref(o);
	wm_proc_cleanup(&x.p);
}

/* ---- the oracle test ---------------------------------------------------------------- */

/* The raw response body of one request, with every occurrence of id
 * replaced by "<ID>"; the status into *st.  Caller frees. */
static char *raw_masked(int port, const char *method, const char *path, const char *key, const char *body,
			const char *id, int *st)
{
	char h[256];
	snprintf(h, sizeof(h), "Authorization: Bearer %s\r\n", key);
	struct http_resp r;
	cr_assert_eq(http_do(port, method, path, h, body, &r), 0, "%s %s: no response", method, path);
	*st = r.status;
	size_t il = strlen(id);
	char *out = malloc(r.body_len * 2 + 16), *o = out;
	cr_assert_not_null(out);
	for (const char *p = r.body; *p;) {
		if (il && !strncmp(p, id, il)) {
			o += sprintf(o, "<ID>");
			p += il;
		} else
			*o++ = *p++;
	}
	*o = 0;
	http_resp_free(&r);
	return out;
}

/* The same request for a hidden and an unknown id answers the same bytes
 * apart from the id.  fmt has one %s for the id (path or body). */
static void same_answer(int port, const char *method, const char *path_fmt, const char *body_fmt, const char *key,
			const char *hidden, const char *unknown)
{
	char path[512], body[2048];
	int st1, st2;
	snprintf(path, sizeof(path), path_fmt, hidden);
	if (body_fmt)
		snprintf(body, sizeof(body), body_fmt, hidden);
	char *a = raw_masked(port, method, path, key, body_fmt ? body : NULL, hidden, &st1);
	snprintf(path, sizeof(path), path_fmt, unknown);
	if (body_fmt)
		snprintf(body, sizeof(body), body_fmt, unknown);
	char *b = raw_masked(port, method, path, key, body_fmt ? body : NULL, unknown, &st2);
	cr_assert_eq(st1, st2, "%s %s: hidden %d vs unknown %d\n%s\n%s", method, path_fmt, st1, st2, a, b);
	cr_assert_str_eq(a, b, "%s %s: a hidden row is told apart from an unknown one", method, path_fmt);
	free(a);
	free(b);
}

#define QUOTE_FMT "{\"destination_country\":\"DE\",\"lines\":[{\"sku\":\"%s\",\"qty\":1,\"box_units\":6}]}"
#define ORDER_FMT                                                                                                    \
	"{\"destination_country\":\"DE\",\"consumer\":{\"name\":\"E\",\"email\":\"e@example.de\",\"address\":{"      \
	"\"line1\":\"W 1\",\"city\":\"Berlin\",\"postal_code\":\"10115\"}},\"lines\":[{\"sku\":\"%s\",\"qty\":1,"    \
	"\"box_units\":6}]}"

/*
 * Issue 22 item 4 (quotes and orders): a wine whose only offer S2 may not
 * see -- named to another seller, not network-shareable, S2's country
 * blocked, S2's country not among the allowed ones -- answers S2 exactly as
 * a wine without any offer (not `not_permitted`); that offer's id as a sku
 * answers exactly as an unknown id; S1's order answers S2 exactly as an
 * unknown order.  A wine whose only offer S2 sees but may not ship to the
 * destination still says not_permitted (nothing is hidden).
 */
WM_TEST(order_views, hidden_rows_answer_as_unknown_ones)
{
	struct vworld x;
	vworld(&x);
	int port = x.port;
	char none[64], body[512];
	tc_pub_wine_of(port, "Views Sans Offre", NULL, "wine", none);
	const struct {
		const char *title, *members;
	} kinds[] = {
		{"Views Named", "\"network_shareable\":true,\"permissions\":{\"named_sellers\":[\"%s\"]}"},
		{"Views Private", "\"network_shareable\":false"},
		{"Views Blocked", "\"network_shareable\":true,\"permissions\":{\"blocked_countries\":[\"DE\"]}"},
		{"Views Allowed", "\"network_shareable\":true,\"permissions\":{\"allowed_countries\":[\"FR\"]}"},
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		char wine[64], offer[64], members[512], perm[256];
		tc_pub_wine_of(port, kinds[i].title, NULL, "wine", wine);
		snprintf(perm, sizeof(perm), kinds[i].members, x.s1);
		snprintf(members, sizeof(members),
			 "\"seller_price\":9.00,\"qty_available\":5,\"incoterm\":\"EXW\",\"status\":\"active\",%s", perm);
		json_decref(tc_offer(port, x.kimp, wine, members, 201, offer));
		/* the same wine, hidden offer vs no offer: quote and order */
		char w_hidden[64], w_none[64];
		snprintf(w_hidden, sizeof(w_hidden), "%s", wine);
		snprintf(w_none, sizeof(w_none), "%s", none);
		same_answer(port, "POST", "/v1/orders/quote-calculate", QUOTE_FMT, x.ks2, w_hidden, w_none);
		same_answer(port, "POST", "/v1/orders", ORDER_FMT, x.ks2, w_hidden, w_none);
		/* the offer id as the sku vs an unknown offer id */
		same_answer(port, "POST", "/v1/orders/quote-calculate", QUOTE_FMT, x.ks2, offer,
			    "ofr_00000000000000000000");
		same_answer(port, "GET", "/v1/offers/%s", NULL, x.ks2, offer, "ofr_00000000000000000000");
	}
	/* and the answer is no_sellable_offer, as for the wine without offers */
	snprintf(body, sizeof(body), QUOTE_FMT, none);
	json_t *j = tc_expect(port, "POST", "/v1/orders/quote-calculate", x.ks2, body, 422);
	cr_assert_str_eq(tc_jstr(j, "code"), "no_sellable_offer", "%s", dump(j));
	json_decref(j);
	/* S1's order vs an unknown order, for S2 */
	same_answer(port, "GET", "/v1/orders/%s", NULL, x.ks2, x.order, "ord_DE_00000000000000000000");
	same_answer(port, "GET", "/v1/orders/%s/sourcing", NULL, x.ks2, x.order, "ord_DE_00000000000000000000");
	same_answer(port, "GET", "/v1/orders/%s/fulfillments", NULL, x.ks2, x.order, "ord_DE_00000000000000000000");
	same_answer(port, "POST", "/v1/orders/%s/cancel", NULL, x.ks2, x.order, "ord_DE_00000000000000000000");
	/* the estate's leg, to the importer (a participant of the same order),
	 * answers as a leg the order does not have */
	char est_leg[96], unknown_leg[96], leg_path[200];
	json_t *o = tc_expect(port, "GET", "/v1/orders?page_size=1", NULL, NULL, 200);
	size_t i;
	json_t *g;
	est_leg[0] = 0;
	json_array_foreach(json_object_get(jat(o, "data", 0), "fulfillments"), i, g)
		if (!strcmp(tc_jstr(g, "originator_id"), x.est))
			snprintf(est_leg, sizeof(est_leg), "%s", tc_jstr(g, "leg_id"));
	json_decref(o);
	cr_assert(est_leg[0]);
	snprintf(unknown_leg, sizeof(unknown_leg), "%s.L9", x.order);
	snprintf(leg_path, sizeof(leg_path), "/v1/orders/%s/fulfillments/%%s/fulfill", x.order);
	same_answer(port, "POST", leg_path, NULL, x.kimp, est_leg, unknown_leg);
	same_answer(port, "POST", leg_path, NULL, x.ktpl, est_leg, unknown_leg);

	/* visible to S2 but not deliverable to DE: nothing hidden, not_permitted */
	char wine[64], offer[64];
	tc_pub_wine_of(port, "Views Export", NULL, "wine", wine);
	char members[512];
	snprintf(members, sizeof(members),
		 "\"seller_price\":9.00,\"qty_available\":5,\"incoterm\":\"EXW\",\"status\":\"active\","
		 "\"network_shareable\":true,\"permissions\":{\"named_sellers\":[\"%s\"],\"allowed_countries\":[\"FR\"]}",
		 x.s2);
	json_decref(tc_offer(port, x.kimp, wine, members, 201, offer));
	snprintf(body, sizeof(body), QUOTE_FMT, wine);
	j = tc_expect(port, "POST", "/v1/orders/quote-calculate", x.ks2, body, 422);
	cr_assert_str_eq(tc_jstr(j, "code"), "not_permitted", "%s", dump(j));
	json_decref(j);
	wm_proc_cleanup(&x.p);
}
