/*
 * test_order_bounds.c -- every bound of POST /v1/orders, at its edge and
 * one past it, over HTTP (engine/orders/order.h, engine/pricing/quote.h, engine/pricing/price.h):
 *
 *   consumer.name, address.line1/line2/city/region  ORDER_TEXT_MAX 200 bytes
 *   consumer.email                                  ORDER_EMAIL_MAX 254 bytes
 *   consumer.consumer_id                            ORDER_REF_MAX 64 bytes
 *   consumer.address.postal_code                    1..16 bytes
 *   lines[]                                         QUOTE_MAX_LINES 16
 *   lines[].qty                                     PRICE_MAX_QTY 10000
 *   locations one source is split over              ORDER_LEVELS_PER_SOURCE 4
 *   fulfilment legs per order                       ORDER_MAX_LEGS 32
 *
 * A refused order leaves nothing behind: no order, no order.placed, no
 * unit held on any level.  An order at the edge is stored whole (the
 * strings come back byte for byte) and the shard-wide invariants hold
 * (tests/order_check.h).  A string past its bound is listed once, by
 * max_length or min_length, never also as required.  GET /v1/orders
 * ?page_size= 200/201 is covered by test_order.c (reads_visibility_and_filters).
 *
 * The world is tests/order_world.c: wine w1 of the estate (10.00 EUR EXW,
 * FR) and the stockist (11.00 EUR), a DE seller.  w1 is still wine, 0.75 L.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/order_check.h"
#include "tests/order_world.h"
#include "tests/wm_test.h"

/* ---- helpers -------------------------------------------------------------------------- */

/* A compact dump for assertion messages (no allocation: nothing to leak). */
static const char *dump(json_t *j)
{
	static char b[16384];
	size_t n = json_dumpb(j, b, sizeof(b) - 1, JSON_COMPACT);
	b[n < sizeof(b) - 1 ? n : sizeof(b) - 1] = 0;
	return b;
}

/* n copies of the UTF-8 sequence `unit`, then `tail`, into out (NUL-terminated). */
static const char *rep(char *out, size_t size, const char *unit, size_t n, const char *tail)
{
	size_t ul = strlen(unit), at = 0;
	cr_assert_lt(n * ul + strlen(tail), size, "rep: buffer too small");
	for (size_t i = 0; i < n; i++, at += ul)
		memcpy(out + at, unit, ul);
	snprintf(out + at, size - at, "%s", tail);
	return out;
}

/* The body of an order to DE by the fixture's consumer, one line of qty units of wine. */
static json_t *order_body(const char *wine, int qty)
{
	json_t *b = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s, s:s}}, s:[]}", "channel", "webshop_connect",
			      "destination_country", "DE", "consumer", "name", "Erika Mustermann", "email",
			      "erika@example.de", "address", "line1", "Weinstrasse 1", "city", "Berlin", "postal_code",
			      "10115", "lines");
	cr_assert_not_null(b);
	json_array_append_new(json_object_get(b, "lines"),
			      json_pack("{s:s, s:i, s:i}", "sku", wine, "qty", qty, "box_units", 12));
	return b;
}

static void add_line(json_t *body, const char *wine, int qty)
{
	json_array_append_new(json_object_get(body, "lines"),
			      json_pack("{s:s, s:i, s:i}", "sku", wine, "qty", qty, "box_units", 12));
}

/* The object of the consumer that member `obj` names ("" : the consumer itself). */
static json_t *consumer_obj(json_t *order_or_body, const char *obj)
{
	json_t *c = json_object_get(order_or_body, "consumer");
	return obj[0] ? json_object_get(c, obj) : c;
}

/* POST /v1/orders as the seller with body (json); the parsed response, status in *st. */
static json_t *post_order(struct oworld *x, json_t *body, int *st)
{
	char h[512];
	snprintf(h, sizeof(h), "Authorization: Bearer %s\r\n", x->ksel);
	char *s = json_dumps(body, JSON_COMPACT);
	cr_assert_not_null(s);
	struct http_resp r;
	int rc = http_do(x->port, "POST", "/v1/orders", h, s, &r);
	free(s);
	cr_assert_eq(rc, 0, "POST /v1/orders: no response");
	*st = r.status;
	json_error_t e;
	json_t *j = json_loadb(r.body, r.body_len, 0, &e);
	cr_assert_not_null(j, "POST /v1/orders: not JSON (%d): %s", r.status, r.body);
	http_resp_free(&r);
	return j;
}

/* The order must be created and reach reserved. */
static json_t *expect_created(struct oworld *x, json_t *body)
{
	int st;
	json_t *o = post_order(x, body, &st);
	cr_assert_eq(st, 201, "%s", dump(o));
	cr_assert_str_eq(tc_jstr(o, "status"), "reserved", "%s", dump(o));
	return o;
}

/* The order must be refused with 422 `code`; field (may be NULL): errors[]
 * must be exactly [(field, rule)]. */
static void expect_refused(struct oworld *x, json_t *body, const char *code, const char *field, const char *rule)
{
	int st;
	json_t *p = post_order(x, body, &st);
	cr_assert_eq(st, 422, "want 422 %s: %s", code, dump(p));
	cr_assert_str_eq(tc_jstr(p, "code"), code, "%s", dump(p));
	if (field) {
		cr_assert(tc_lists_error(p, field, rule), "errors[] must list (%s, %s): %s", field, rule, dump(p));
		cr_assert_eq(json_array_size(json_object_get(p, "errors")), 1, "only %s is wrong: %s", field, dump(p));
	}
	cr_assert_null(json_object_get(p, "order_id"), "a refused capture stores no order: %s", dump(p));
	json_decref(p);
}

/* Exactly n orders exist, and n order.placed events. */
static void expect_orders(struct oworld *x, size_t n)
{
	json_t *all = ow_list_all(x, "/v1/orders?page_size=200");
	cr_assert_eq(json_array_size(all), n, "%zu orders, want %zu", json_array_size(all), n);
	json_decref(all);
	cr_assert_eq(tc_count_events(x->port, "order.placed", NULL), n);
}

/* The level's reserved and allocated from a list of levels. */
static void level_in(json_t *levels, const char *id, long long *reserved, long long *allocated)
{
	size_t i;
	json_t *lv;
	json_array_foreach(levels, i, lv)
	{
		if (strcmp(tc_jstr(lv, "id"), id))
			continue;
		*reserved = json_integer_value(json_object_get(lv, "reserved"));
		*allocated = json_integer_value(json_object_get(lv, "allocated"));
		return;
	}
	cr_assert_fail("level %s not listed", id);
}

/* No unit prepared or allocated on any level. */
static void expect_nothing_held(struct oworld *x)
{
	json_t *levels = ow_list_all(x, "/v1/inventory?page_size=200"), *lv;
	size_t i;
	json_array_foreach(levels, i, lv)
	{
		cr_assert_eq(json_integer_value(json_object_get(lv, "reserved")), 0, "%s", dump(lv));
		cr_assert_eq(json_integer_value(json_object_get(lv, "allocated")), 0, "%s", dump(lv));
	}
	json_decref(levels);
}

/* A BONDED_WAREHOUSE of the partner whose key is `key`; id into out (64). */
static void location(struct oworld *x, const char *key, const char *name, char *out)
{
	char body[512];
	snprintf(body, sizeof(body),
		 "{\"location_type\":\"BONDED_WAREHOUSE\",\"name\":\"%s\",\"address\":{\"line1\":\"2 rue du Vin\","
		 "\"city\":\"Beaune\",\"postal_code\":\"21200\",\"country\":\"FR\"}}",
		 name);
	json_t *j = tc_expect(x->port, "POST", "/v1/stock-locations", key, body, 201);
	snprintf(out, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
}

/* A sellable level of `units` of offer at loc; id into out (64). */
static void level(struct oworld *x, const char *key, const char *offer, const char *loc, int units, char *out)
{
	char body[512];
	snprintf(body, sizeof(body), "{\"sku\":\"SKU-%s\",\"offer_id\":\"%s\",\"location_id\":\"%s\",\"on_hand\":%d}",
		 offer, offer, loc, units);
	json_t *j = tc_expect(x->port, "POST", "/v1/inventory", key, body, 201);
	snprintf(out, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
}

/* ---- consumer fields ------------------------------------------------------------------ */

/*
 * One consumer string member at its bound and one byte past it: `ok` is
 * accepted and stored byte for byte, `bad` is a 422 validation_failed
 * listing exactly (field, max_length) and stores nothing.  obj: "" for a
 * member of consumer, "address" for one of consumer.address.  *orders
 * counts the orders made so far.
 */
static void member_bound(struct oworld *x, const char *obj, const char *key, const char *field, const char *ok,
			 const char *bad, size_t *orders)
{
	json_t *b = order_body(x->w1, 1);
	json_object_set_new(consumer_obj(b, obj), key, json_string(ok));
	json_t *o = expect_created(x, b);
	++*orders;
	const char *got = tc_jstr(consumer_obj(o, obj), key);
	cr_assert(got && !strcmp(got, ok), "%s (%zu bytes) must be stored whole: %s", field, strlen(ok), dump(o));
	json_decref(o);
	json_decref(b);

	b = order_body(x->w1, 1);
	json_object_set_new(consumer_obj(b, obj), key, json_string(bad));
	expect_refused(x, b, "validation_failed", field, "max_length");
	json_decref(b);
	expect_orders(x, *orders);
}

WM_TEST(order_bounds, consumer_text_members_200_bytes)
{
	struct oworld x;
	ow_start(&x, NULL, 100, 0);
	char ok[512], bad[512];
	size_t orders = 0;
	/* ORDER_TEXT_MAX counts bytes: ASCII, then 2- and 3-byte UTF-8 */
	member_bound(&x, "", "name", "consumer.name", rep(ok, sizeof(ok), "n", 200, ""),
		     rep(bad, sizeof(bad), "n", 201, ""), &orders);
	member_bound(&x, "", "name", "consumer.name", rep(ok, sizeof(ok), "\xc3\xa9", 100, ""),      /* 100 x e-acute */
		     rep(bad, sizeof(bad), "\xe2\x82\xac", 67, ""), &orders);                        /* 67 x euro: 201 */
	member_bound(&x, "address", "line1", "consumer.address.line1", rep(ok, sizeof(ok), "l", 200, ""),
		     rep(bad, sizeof(bad), "l", 201, ""), &orders);
	member_bound(&x, "address", "line2", "consumer.address.line2", rep(ok, sizeof(ok), "m", 200, ""),
		     rep(bad, sizeof(bad), "m", 201, ""), &orders);
	member_bound(&x, "address", "city", "consumer.address.city", rep(ok, sizeof(ok), "c", 200, ""),
		     rep(bad, sizeof(bad), "c", 201, ""), &orders);
	member_bound(&x, "address", "region", "consumer.address.region", rep(ok, sizeof(ok), "r", 200, ""),
		     rep(bad, sizeof(bad), "r", 201, ""), &orders);
	ow_check_invariants(&x);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

WM_TEST(order_bounds, consumer_email_254_bytes)
{
	struct oworld x;
	ow_start(&x, NULL, 10, 0);
	char ok[512], bad[512];
	size_t orders = 0;
	/* local part + "@example.de" (11 bytes) */
	member_bound(&x, "", "email", "consumer.email", rep(ok, sizeof(ok), "e", 254 - 11, "@example.de"),
		     rep(bad, sizeof(bad), "e", 255 - 11, "@example.de"), &orders);
	ow_check_invariants(&x);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

WM_TEST(order_bounds, consumer_id_64_bytes)
{
	struct oworld x;
	ow_start(&x, NULL, 10, 0);
	char ok[128], bad[128];
	size_t orders = 0;
	member_bound(&x, "", "consumer_id", "consumer.consumer_id", rep(ok, sizeof(ok), "k", 64, ""),
		     rep(bad, sizeof(bad), "k", 65, ""), &orders);
	ow_check_invariants(&x);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

WM_TEST(order_bounds, postal_code_1_to_16_bytes)
{
	struct oworld x;
	ow_start(&x, NULL, 10, 0);
	char ok[64], bad[64];
	size_t orders = 0;
	member_bound(&x, "address", "postal_code", "consumer.address.postal_code", rep(ok, sizeof(ok), "9", 16, ""),
		     rep(bad, sizeof(bad), "9", 17, ""), &orders);
	/* the lower edge: one byte is a postal code, none is not */
	json_t *b = order_body(x.w1, 1);
	json_object_set_new(consumer_obj(b, "address"), "postal_code", json_string("9"));
	json_decref(expect_created(&x, b));
	orders++;
	json_decref(b);
	b = order_body(x.w1, 1);
	json_object_set_new(consumer_obj(b, "address"), "postal_code", json_string(""));
	int st;
	json_t *p = post_order(&x, b, &st);
	cr_assert_eq(st, 422, "%s", dump(p));
	cr_assert_str_eq(tc_jstr(p, "code"), "validation_failed");
	cr_assert(tc_lists_error(p, "consumer.address.postal_code", "min_length"), "%s", dump(p));
	cr_assert_eq(json_array_size(json_object_get(p, "errors")), 1, "%s", dump(p));
	json_decref(p);
	json_decref(b);
	expect_orders(&x, orders);
	ow_check_invariants(&x);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

/* A required address member that is absent or null is listed once, as
 * required; one that is present but invalid is listed once, by the rule it
 * breaks (above), never also as required. */
WM_TEST(order_bounds, address_required_members)
{
	struct oworld x;
	ow_start(&x, NULL, 10, 0);
	static const char *const keys[] = {"line1", "city", "postal_code"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		char field[64];
		snprintf(field, sizeof(field), "consumer.address.%s", keys[i]);
		json_t *b = order_body(x.w1, 1);
		json_object_del(consumer_obj(b, "address"), keys[i]);
		expect_refused(&x, b, "validation_failed", field, "required");
		json_object_set_new(consumer_obj(b, "address"), keys[i], json_null());
		expect_refused(&x, b, "validation_failed", field, "required");
		json_decref(b);
	}
	expect_orders(&x, 0);
	expect_nothing_held(&x);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

/* ---- lines and qty ---------------------------------------------------------------------- */

/*
 * QUOTE_MAX_LINES: 16 lines of w1 (1 unit each) route to the estate's one
 * level, so they share one leg whose items[] holds all 16 (struct cap_leg
 * items[QUOTE_MAX_LINES] full); 17 lines are refused before routing.
 */
WM_TEST(order_bounds, lines_16)
{
	struct oworld x;
	ow_start(&x, NULL, 24, 0);
	json_t *b = order_body(x.w1, 1);
	for (int i = 1; i < 17; i++)
		add_line(b, x.w1, 1);
	expect_refused(&x, b, "validation_failed", "lines", "count");
	expect_orders(&x, 0);
	expect_nothing_held(&x);

	json_array_remove(json_object_get(b, "lines"), 16);
	json_t *o = expect_created(&x, b);
	json_t *lines = json_object_get(o, "lines"), *legs = json_object_get(o, "fulfillments");
	cr_assert_eq(json_array_size(lines), 16, "%s", dump(o));
	cr_assert_eq(json_array_size(legs), 1, "%s", dump(o));
	json_t *leg = json_array_get(legs, 0), *items = json_object_get(leg, "items");
	cr_assert_str_eq(tc_jstr(leg, "level_id"), x.lv_est);
	cr_assert_eq(json_integer_value(json_object_get(leg, "qty")), 16);
	cr_assert_eq(json_array_size(items), 16, "%s", dump(leg));
	for (size_t i = 0; i < 16; i++) {
		json_t *it = json_array_get(items, i);
		cr_assert_eq(json_integer_value(json_object_get(it, "line")), (json_int_t)i, "%s", dump(leg));
		cr_assert_eq(json_integer_value(json_object_get(it, "qty")), 1, "%s", dump(leg));
		cr_assert_eq(json_integer_value(json_object_get(json_array_get(lines, i), "qty")), 1);
	}
	long long r, a, h;
	ow_level(&x, x.lv_est, &r, &a, &h);
	cr_assert(r == 0 && a == 16 && h == 24, "estate level: reserved %lld allocated %lld on_hand %lld", r, a, h);
	json_decref(o);
	json_decref(b);
	expect_orders(&x, 1);
	ow_check_invariants(&x);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

/*
 * PRICE_MAX_QTY (10000) passes field validation; 10001 is a 422 naming
 * lines[0].qty.  10000 bottles of 0.75 L are 7500 L, over the consumer
 * volume cap for still wine (90 L, quote.c quote_caps[]), so the order at
 * the edge is refused by the cap -- a check that runs only once every field
 * is valid, and that lists no field.  For a 0.75 L wine the cap is the
 * bound that bites first: 120 bottles (90 L exactly) are an order, 121 are
 * volume_cap_exceeded.
 */
WM_TEST(order_bounds, line_qty_max)
{
	struct oworld x;
	ow_start(&x, NULL, 121, 0);
	json_t *b = order_body(x.w1, 10001);
	expect_refused(&x, b, "validation_failed", "lines[0].qty", "range");
	json_decref(b);

	b = order_body(x.w1, 10000);
	int st;
	json_t *p = post_order(&x, b, &st);
	cr_assert_eq(st, 422, "%s", dump(p));
	cr_assert_str_eq(tc_jstr(p, "code"), "volume_cap_exceeded", "the qty is valid, the volume is not: %s", dump(p));
	cr_assert(!tc_lists_error(p, "lines[0].qty", "range"), "%s", dump(p));
	json_decref(p);
	json_decref(b);

	b = order_body(x.w1, 121);
	p = post_order(&x, b, &st);
	cr_assert_eq(st, 422, "%s", dump(p));
	cr_assert_str_eq(tc_jstr(p, "code"), "volume_cap_exceeded", "%s", dump(p));
	json_decref(p);
	json_decref(b);
	expect_orders(&x, 0);
	expect_nothing_held(&x);

	b = order_body(x.w1, 120);
	json_t *o = expect_created(&x, b);
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(json_object_get(o, "lines"), 0), "qty")), 120);
	json_decref(o);
	json_decref(b);
	expect_orders(&x, 1);
	ow_check_invariants(&x);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

/* ---- legs ------------------------------------------------------------------------------- */

/* The estate's w1 stock spread over n locations of 1 unit each (the
 * fixture's level, with 1 unit, and n - 1 more); level ids into lv[]. */
static void spread_w1(struct oworld *x, int n, char lv[][64])
{
	snprintf(lv[0], 64, "%s", x->lv_est);
	for (int i = 1; i < n; i++) {
		char name[32], loc[64];
		snprintf(name, sizeof(name), "Estate cellar %d", i + 1);
		location(x, x->kest, name, loc);
		level(x, x->kest, x->of_est, loc, 1, lv[i]);
	}
}

/*
 * ORDER_LEVELS_PER_SOURCE: one source is split over at most 4 of its
 * offer's locations.  4 locations of 1 unit: an order of 4 is 4 legs, one
 * hold (then allocation) of 1 per level.
 */
WM_TEST(order_bounds, levels_per_source_4)
{
	struct oworld x;
	ow_start(&x, NULL, 1, 0);
	char lv[4][64];
	spread_w1(&x, 4, lv);
	json_t *b = order_body(x.w1, 4);
	json_t *o = expect_created(&x, b);
	json_t *legs = json_object_get(o, "fulfillments");
	cr_assert_eq(json_array_size(legs), 4, "%s", dump(o));
	json_t *levels = ow_list_all(&x, "/v1/inventory?page_size=200");
	for (int i = 0; i < 4; i++) {
		int found = 0;
		size_t j;
		json_t *leg;
		json_array_foreach(legs, j, leg)
		{
			if (strcmp(tc_jstr(leg, "level_id"), lv[i]))
				continue;
			found++;
			cr_assert_eq(json_integer_value(json_object_get(leg, "qty")), 1, "%s", dump(leg));
			cr_assert_str_eq(tc_jstr(leg, "offer_id"), x.of_est);
			cr_assert_str_eq(tc_jstr(leg, "status"), "reserved");
		}
		cr_assert_eq(found, 1, "level %s: %d legs: %s", lv[i], found, dump(legs));
		long long r, a;
		level_in(levels, lv[i], &r, &a);
		cr_assert(r == 0 && a == 1, "level %s: reserved %lld allocated %lld", lv[i], r, a);
	}
	json_decref(levels);
	json_decref(o);
	json_decref(b);
	ow_check_invariants(&x);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

/*
 * ...and 5 locations of 1 unit: an order of 5 is 422 insufficient_stock
 * naming lines[0], nothing held.  This is the bound's behaviour: capture
 * counts the ATP of the QUOTE_LEVELS_PER_SOURCE (4) levels with the most
 * ATP only -- what the source's legs can take -- so routing sees 4 units,
 * short of 5, and no other offer has stock here.
 */
WM_TEST(order_bounds, levels_per_source_5_refused)
{
	struct oworld x;
	ow_start(&x, NULL, 1, 0);
	char lv[5][64];
	spread_w1(&x, 5, lv);
	json_t *b = order_body(x.w1, 5);
	expect_refused(&x, b, "insufficient_stock", "lines[0]", "insufficient_stock");
	json_decref(b);
	expect_orders(&x, 0);
	expect_nothing_held(&x);
	ow_check_invariants(&x);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

/*
 * ...and with 1 unit at the stockist too, the same order of 5 is routed as
 * a split: the estate's 4 reachable units (4 legs) first, then 1 from the
 * stockist (estate_atp_short) -- the fifth estate location is never used.
 */
WM_TEST(order_bounds, levels_per_source_split_to_another_offer)
{
	struct oworld x;
	ow_start(&x, NULL, 1, 1);
	char lv[5][64];
	spread_w1(&x, 5, lv);
	json_t *b = order_body(x.w1, 5);
	json_t *o = expect_created(&x, b);
	json_t *src = json_object_get(json_object_get(o, "sourcing"), "source");
	cr_assert_eq(json_array_size(src), 2, "%s", dump(o));
	cr_assert_str_eq(tc_jstr(json_object_get(o, "sourcing"), "split_reason"), "estate_atp_short");
	cr_assert_str_eq(tc_jstr(json_array_get(src, 0), "offer_id"), x.of_est);
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(src, 0), "qty")), 4);
	cr_assert_str_eq(tc_jstr(json_array_get(src, 1), "offer_id"), x.of_stk);
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(src, 1), "qty")), 1);
	cr_assert_eq(json_array_size(json_object_get(o, "fulfillments")), 5, "4 estate legs + 1 stockist leg");
	json_decref(o);
	json_decref(b);
	ow_check_invariants(&x);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

/*
 * ORDER_MAX_LEGS: 8 wines of the estate, each offered and stocked 1 unit
 * at each of 4 estate locations (a level is one offer x location x
 * condition, so 4 locations hold all 32 levels), and a ninth wine with 1
 * unit at one of them.  8 lines of 4 units are 32 legs; the ninth line
 * makes 33: 422 too_many_legs with nothing stored or held.  The 32-leg
 * order survives a restart (order_decode's bound) and a cancel releases
 * every leg and refunds (order_stage splices 32 leg statuses at once).
 * ow_check_invariants knows reserved and failed orders only, so it runs
 * before the cancel.
 */
WM_TEST(order_bounds, legs_32)
{
	struct oworld x;
	ow_start(&x, NULL, 0, 0);
	char loc[4][64], wine[9][64], offer[9][64], lv[9][4][64];
	snprintf(loc[0], 64, "%s", x.loc_est);
	for (int i = 1; i < 4; i++) {
		char name[32];
		snprintf(name, sizeof(name), "Estate cellar %d", i + 1);
		location(&x, x.kest, name, loc[i]);
	}
	for (int w = 0; w < 9; w++) {
		char title[32];
		snprintf(title, sizeof(title), "Bound Cuvee %d", w + 1);
		tc_pub_wine_of(x.port, title, x.est, "wine", wine[w]);
		json_decref(tc_offer(x.port, x.kest, wine[w],
				     "\"seller_price\":10.00,\"qty_available\":0,\"incoterm\":\"EXW\",\"status\":\"active\","
				     "\"network_shareable\":true",
				     201, offer[w]));
		for (int l = 0; l < (w < 8 ? 4 : 1); l++)
			level(&x, x.kest, offer[w], loc[l], 1, lv[w][l]);
	}

	/* 33 legs */
	json_t *b = order_body(wine[0], 4);
	for (int w = 1; w < 8; w++)
		add_line(b, wine[w], 4);
	add_line(b, wine[8], 1);
	expect_refused(&x, b, "too_many_legs", NULL, NULL);
	expect_orders(&x, 0);
	expect_nothing_held(&x);

	/* 32 legs */
	json_array_remove(json_object_get(b, "lines"), 8);
	json_t *o = expect_created(&x, b);
	json_decref(b);
	char id[128];
	snprintf(id, sizeof(id), "%s", tc_jstr(o, "id"));
	json_t *legs = json_object_get(o, "fulfillments");
	cr_assert_eq(json_array_size(legs), 32, "%s", dump(o));
	json_t *levels = ow_list_all(&x, "/v1/inventory?page_size=200");
	for (int w = 0; w < 9; w++)
		for (int l = 0; l < (w < 8 ? 4 : 1); l++) {
			long long r, a;
			level_in(levels, lv[w][l], &r, &a);
			cr_assert(r == 0 && a == (w < 8), "wine %d level %d: reserved %lld allocated %lld", w, l, r, a);
		}
	json_decref(levels);
	size_t i;
	json_t *leg;
	json_array_foreach(legs, i, leg)
	{
		cr_assert_eq(json_integer_value(json_object_get(leg, "qty")), 1, "%s", dump(leg));
		cr_assert_str_eq(tc_jstr(leg, "status"), "reserved");
	}
	json_decref(o);
	expect_orders(&x, 1);
	ow_check_invariants(&x);

	/* the stored 32-leg order is read back after a restart */
	cr_assert_eq(wm_stop(&x.p), 0);
	ow_restart(&x, NULL);
	char path[200];
	snprintf(path, sizeof(path), "/v1/orders/%s/fulfillments", id);
	json_t *f = ow_get(&x, path);
	cr_assert_str_eq(tc_jstr(f, "status"), "reserved");
	cr_assert_eq(json_array_size(json_object_get(f, "data")), 32, "%s", dump(f));
	json_decref(f);
	ow_check_invariants(&x);

	/* cancel: every one of the 32 legs released */
	snprintf(path, sizeof(path), "/v1/orders/%s/cancel", id);
	o = tc_expect(x.port, "POST", path, x.ksel, NULL, 200);
	cr_assert_str_eq(tc_jstr(o, "status"), "cancelled", "%s", dump(o));
	legs = json_object_get(o, "fulfillments");
	cr_assert_eq(json_array_size(legs), 32);
	json_array_foreach(legs, i, leg) cr_assert_str_eq(tc_jstr(leg, "status"), "released", "leg %zu", i);
	json_decref(o);
	expect_nothing_held(&x);
	snprintf(path, sizeof(path), "/v1/admin/payments/%s", id);
	json_t *pay = ow_get(&x, path);
	cr_assert_str_eq(tc_jstr(pay, "state"), "refunded", "%s", dump(pay));
	json_decref(pay);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}
