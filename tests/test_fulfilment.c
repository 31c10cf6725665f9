/*
 * test_fulfilment.c -- an order after `reserved` over HTTP (issue: after
 * the sale, items 1-3): each leg's pick, pack and ship by its fulfiller,
 * carrier scans in and out of order, the order following its legs (spec
 * 3.1), the refusals (409 naming the state, 403, 404 for a leg outside the
 * view, 422 for bad scans), pickups, and what a kill -9 right after each
 * write leaves.
 *
 * The world (order_world.h): an estate and a stockist in FR with 24 units
 * each, a DE seller.  30 units split: the estate's leg (24, L1) and the
 * stockist's (6, L2).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/order_world.h"
#include "tests/wm_test.h"

static const char *dump(json_t *j)
{
	static char b[32768];
	size_t n = json_dumpb(j, b, sizeof(b) - 1, JSON_COMPACT);
	b[n < sizeof(b) - 1 ? n : sizeof(b) - 1] = 0;
	return b;
}

static json_t *jat(json_t *o, const char *k, size_t i) { return json_array_get(json_object_get(o, k), i); }

/* A reserved order of qty units: its id and leg ids (up to 2). */
static void reserved_order(struct oworld *x, int qty, char *id, char legs[2][96])
{
	int st;
	json_t *o = ow_order(x, qty, NULL, NULL, &st);
	cr_assert_eq(st, 201, "%s", dump(o));
	cr_assert_str_eq(tc_jstr(o, "status"), "reserved");
	snprintf(id, 64, "%s", tc_jstr(o, "id"));
	for (size_t i = 0; i < 2; i++) {
		json_t *l = jat(o, "fulfillments", i);
		snprintf(legs[i], 96, "%s", l ? tc_jstr(l, "leg_id") : "");
	}
	json_decref(o);
}

/* The leg's status in the platform's view of the order. */
static const char *leg_status_now(struct oworld *x, const char *id, const char *leg, char *out, size_t n)
{
	char path[160];
	snprintf(path, sizeof(path), "/v1/orders/%s", id);
	json_t *o = tc_expect(x->port, "GET", path, NULL, NULL, 200);
	size_t i;
	json_t *l;
	out[0] = 0;
	json_array_foreach(json_object_get(o, "fulfillments"), i, l)
		if (!strcmp(tc_jstr(l, "leg_id"), leg))
			snprintf(out, n, "%s", tc_jstr(l, "status"));
	json_decref(o);
	return out;
}

/*
 * POST .../fulfillments/{leg}/{action} as key with body; the answer (want).
 * A ship of a leg whose stock lies on another shard (the cluster topology)
 * answers 202 with the leg `shipping`, and the stock's shard consumes the
 * hold a moment later: then this waits (bounded) until the leg left
 * `shipping` and returns the order as the platform reads it.
 */
static json_t *leg_do(struct oworld *x, const char *key, const char *id, const char *leg, const char *action,
		      const char *body, int want)
{
	char path[320];
	snprintf(path, sizeof(path), "/v1/orders/%s/fulfillments/%s/%s", id, leg, action);
	int ship = !strcmp(action, "ship") || !strcmp(action, "fulfill"), st;
	if (!ship || want != 200)
		return tc_expect(x->port, "POST", path, key, body, want);
	json_t *o = tc_call(x->port, "POST", path, key, body, &st);
	cr_assert(st == 200 || st == 202, "%s: %d %s", path, st, dump(o));
	if (st == 200)
		return o;
	json_decref(o);
	char ls[32];
	for (int t = 0; t < 500 && !strcmp(leg_status_now(x, id, leg, ls, sizeof(ls)), "shipping"); t++)
		usleep(20 * 1000);
	cr_assert_str_eq(ls, "fulfilled", "the shipping leg %s was not completed", leg);
	snprintf(path, sizeof(path), "/v1/orders/%s", id);
	return tc_expect(x->port, "GET", path, NULL, NULL, 200);
}

/* A scan body. */
static const char *scan(const char *id, const char *type, const char *at, const char *extra)
{
	static char b[1024];
	snprintf(b, sizeof(b),
		 "{\"scan_id\":\"%s\",\"type\":\"%s\",\"occurred_at\":\"%s\",\"carrier\":\"DHL\","
		 "\"tracking_number\":\"JD0001\"%s%s}",
		 id, type, at, extra ? "," : "", extra ? extra : "");
	return b;
}

static json_t *leg_of(json_t *o, size_t i) { return jat(o, "fulfillments", i); }

static json_t *get_order(struct oworld *x, const char *id)
{
	char path[160];
	snprintf(path, sizeof(path), "/v1/orders/%s", id);
	return tc_expect(x->port, "GET", path, NULL, NULL, 200);
}

static void expect_state(json_t *o, const char *status, const char *l1, const char *l2)
{
	const char *got = tc_jstr(o, "status"), *g1 = tc_jstr(leg_of(o, 0), "status"), *g2 = tc_jstr(leg_of(o, 1), "status");
	cr_assert(got && g1 && !strcmp(got, status) && !strcmp(g1, l1) && (!l2 || (g2 && !strcmp(g2, l2))),
		  "order %s legs %s %s, want %s %s %s: %s", got, g1, g2 ? g2 : "-", status, l1, l2 ? l2 : "-",
		  dump(json_object_get(o, "fulfillments")));
}

/* The order's state as the platform reads it now. */
static void expect_now(struct oworld *x, const char *id, const char *status, const char *l1, const char *l2)
{
	json_t *o = get_order(x, id);
	expect_state(o, status, l1, l2);
	json_decref(o);
}


static void expect_level(struct oworld *x, const char *lv, long long allocated, long long on_hand)
{
	long long r, a, h;
	ow_level(x, lv, &r, &a, &h);
	cr_assert_eq(a, allocated, "level %s allocated %lld, want %lld", lv, a, allocated);
	cr_assert_eq(h, on_hand, "level %s on_hand %lld, want %lld", lv, h, on_hand);
}

/* Pick, pack, ship: each leg's moves, the refusals, and the order following. */
WM_TEST(fulfilment, legs_are_picked_packed_and_shipped_and_the_order_follows)
{
	struct oworld x;
	ow_start(&x, NULL, 24, 24);
	char id[64], legs[2][96];
	reserved_order(&x, 30, id, legs);
	cr_assert(legs[1][0], "a split order");

	/* pick: the estate's leg, by the estate */
	json_t *o = leg_do(&x, x.kest, id, legs[0], "pick", NULL, 200);
	expect_state(o, "reserved", "picked", NULL);
	expect_now(&x, id, "reserved", "picked", "reserved");
	json_decref(o);
	cr_assert_eq(tc_count_events(x.port, "order.picked", NULL), 1);
	/* picked again: 409 naming the leg's state */
	o = leg_do(&x, x.kest, id, legs[0], "pick", NULL, 409);
	cr_assert_str_eq(tc_jstr(o, "code"), "invalid_leg_state");
	cr_assert_str_eq(tc_jstr(o, "leg_status"), "picked");
	cr_assert_str_eq(tc_jstr(o, "current_status"), "reserved");
	cr_assert_str_eq(tc_jstr(o, "leg_id"), legs[0]);
	json_decref(o);
	/* the seller ships nothing; the stockist does not see the estate's leg */
	json_decref(leg_do(&x, x.ksel, id, legs[0], "pack", NULL, 403));
	o = leg_do(&x, x.kstk, id, legs[0], "pack", NULL, 404);
	cr_assert_str_eq(tc_jstr(o, "code"), "not_found");
	json_decref(o);
	o = leg_do(&x, x.kest, id, legs[0], "pack", NULL, 200);
	expect_state(o, "reserved", "packed", NULL);
	expect_now(&x, id, "reserved", "packed", "reserved");
	json_decref(o);
	json_decref(leg_do(&x, x.kest, id, legs[0], "pick", NULL, 409)); /* never backwards */
	/* a ship body is checked */
	o = leg_do(&x, x.kest, id, legs[0], "ship", "{\"carrier\":\"DHL\",\"wheels\":4}", 422);
	cr_assert(tc_lists_error(o, "wheels", "unknown_field"), "%s", dump(o));
	json_decref(o);
	expect_level(&x, x.lv_est, 24, 24); /* nothing moved */

	/* ship: the stock leaves (on_hand and allocated -24) with the leg, at once */
	o = leg_do(&x, x.kest, id, legs[0], "ship", "{\"carrier\":\"DHL\",\"tracking_number\":\"JD0001\"}", 200);
	expect_state(o, "reserved", "fulfilled", NULL);
	expect_now(&x, id, "reserved", "fulfilled", "reserved");
	cr_assert_str_eq(tc_jstr(leg_of(o, 0), "carrier"), "DHL", "%s", dump(o));
	cr_assert_str_eq(tc_jstr(leg_of(o, 0), "tracking_number"), "JD0001");
	json_decref(o);
	o = get_order(&x, id);
	cr_assert(json_is_null(json_object_get(leg_of(o, 1), "carrier")), "the other leg has none: %s", dump(o));
	json_decref(o);
	expect_level(&x, x.lv_est, 0, 0);
	cr_assert_eq(tc_count_events(x.port, "order.fulfilled", NULL), 1);
	/* a shipped leg blocks cancel (spec 3.1: before fulfilment only) */
	char path[160];
	snprintf(path, sizeof(path), "/v1/orders/%s/cancel", id);
	o = tc_expect(x.port, "POST", path, x.ksel, "{}", 409);
	cr_assert_str_eq(tc_jstr(o, "code"), "invalid_order_state");
	cr_assert_str_eq(tc_jstr(o, "leg_status"), "fulfilled", "%s", dump(o));
	json_decref(o);

	/* the other leg ships straight from reserved (pick and pack are optional),
	 * through the old route, by the platform: the order is fulfilled */
	o = leg_do(&x, NULL, id, legs[1], "fulfill", NULL, 200);
	expect_state(o, "fulfilled", "fulfilled", NULL);
	expect_now(&x, id, "fulfilled", "fulfilled", "fulfilled");
	json_decref(o);
	expect_level(&x, x.lv_stk, 0, 18);
	cr_assert_eq(tc_count_events(x.port, "order.fulfilled", NULL), 2);
	json_t *ev = tc_expect(x.port, "GET", "/v1/events?type=order.fulfilled", NULL, NULL, 200);
	json_t *d0 = json_object_get(json_object_get(jat(ev, "data", 0), "payload"), "detail");
	json_t *d1 = json_object_get(json_object_get(jat(ev, "data", 1), "payload"), "detail");
	cr_assert(json_is_false(json_object_get(d0, "order_fulfilled")), "%s", dump(ev));
	cr_assert(json_is_true(json_object_get(d1, "order_fulfilled")), "%s", dump(ev));
	json_decref(ev);
	json_decref(leg_do(&x, NULL, id, legs[1], "pack", NULL, 409));
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

/* Carrier scans: forward only, out of order kept in time order, idempotent
 * by scan id; the order in_transit at the first, delivered at the last
 * leg's proof of receipt; all of it survives kill -9. */
WM_TEST(fulfilment, carrier_scans_move_legs_forward_and_the_order_to_delivered)
{
	struct oworld x;
	ow_start(&x, NULL, 24, 24);
	char id[64], legs[2][96];
	reserved_order(&x, 30, id, legs);
	/* a leg not shipped is not scanned */
	json_t *o = leg_do(&x, x.kest, id, legs[0], "tracking", scan("s1", "picked_up", "2026-01-02T10:00:00Z", NULL),
			   409);
	cr_assert_str_eq(tc_jstr(o, "code"), "invalid_leg_state");
	cr_assert_str_eq(tc_jstr(o, "leg_status"), "reserved");
	json_decref(o);
	json_decref(leg_do(&x, x.kest, id, legs[0], "ship", NULL, 200));
	json_decref(leg_do(&x, x.kstk, id, legs[1], "ship", NULL, 200));

	/* bad scans: 422 per field */
	o = leg_do(&x, x.kest, id, legs[0], "tracking", "{\"scan_id\":\"a b\",\"type\":\"teleported\",\"occurred_at\":"
							  "\"yesterday\",\"carrier\":\"\"}", 422);
	cr_assert(tc_lists_error(o, "scan_id", "format"), "%s", dump(o));
	cr_assert(tc_lists_error(o, "occurred_at", "format"), "%s", dump(o));
	cr_assert(tc_lists_error(o, "tracking_number", "required"), "%s", dump(o));
	json_decref(o);
	o = leg_do(&x, x.kest, id, legs[0], "tracking", scan("s0", "in_transit", "2099-01-01T00:00:00Z", NULL), 422);
	cr_assert(tc_lists_error(o, "occurred_at", "range"), "a scan from the future: %s", dump(o));
	json_decref(o);

	/* the first scan: picked up -> the order is in transit */
	o = leg_do(&x, x.kest, id, legs[0], "tracking", scan("s1", "picked_up", "2026-01-02T10:00:00+01:00", NULL), 201);
	expect_state(o, "in_transit", "picked_up", NULL);
	expect_now(&x, id, "in_transit", "picked_up", "fulfilled");
	json_t *t = jat(leg_of(o, 0), "tracking", 0);
	cr_assert_str_eq(tc_jstr(t, "occurred_at"), "2026-01-02T09:00:00.000Z", "normalised to UTC: %s", dump(t));
	cr_assert_str_eq(tc_jstr(leg_of(o, 0), "carrier"), "DHL", "the first scan names the carrier");
	json_decref(o);
	cr_assert_eq(tc_count_events(x.port, "order.picked_up", NULL), 1);
	/* the same scan again: 200, nothing new; its id with other values: 409 */
	o = leg_do(&x, x.kest, id, legs[0], "tracking", scan("s1", "picked_up", "2026-01-02T09:00:00Z", NULL), 200);
	cr_assert_eq(json_array_size(json_object_get(leg_of(o, 0), "tracking")), 1, "%s", dump(o));
	json_decref(o);
	o = leg_do(&x, x.kest, id, legs[0], "tracking", scan("s1", "delivered", "2026-01-02T09:00:00Z", NULL), 409);
	cr_assert_str_eq(tc_jstr(o, "code"), "scan_conflict");
	json_decref(o);
	cr_assert_eq(tc_count_events(x.port, "order.picked_up", NULL), 1);
	/* late scans: an earlier hub scan arriving now sorts before; the leg moves forward only */
	o = leg_do(&x, x.kest, id, legs[0], "tracking",
		   scan("s3", "out_for_delivery", "2026-01-03T08:00:00Z", "\"location\":\"Berlin\""), 201);
	expect_state(o, "in_transit", "in_transit", NULL);
	expect_now(&x, id, "in_transit", "in_transit", "fulfilled");
	json_decref(o);
	o = leg_do(&x, x.kest, id, legs[0], "tracking", scan("s2", "in_transit", "2026-01-02T20:00:00Z", NULL), 201);
	json_t *tr = json_object_get(leg_of(o, 0), "tracking");
	cr_assert_eq(json_array_size(tr), 3);
	cr_assert_str_eq(tc_jstr(json_array_get(tr, 0), "scan_id"), "s1");
	cr_assert_str_eq(tc_jstr(json_array_get(tr, 1), "scan_id"), "s2", "time order, not arrival: %s", dump(tr));
	cr_assert_str_eq(tc_jstr(json_array_get(tr, 2), "scan_id"), "s3");
	cr_assert_str_eq(tc_jstr(json_array_get(tr, 2), "location"), "Berlin");
	json_decref(o);
	/* an exception moves nothing; delivery of one leg: the order stays in transit */
	json_decref(leg_do(&x, x.kest, id, legs[0], "tracking", scan("s4", "exception", "2026-01-03T09:00:00Z", NULL),
			   201));
	o = leg_do(&x, x.kest, id, legs[0], "tracking",
		   scan("s5", "delivered", "2026-01-03T11:00:00Z", "\"received_by\":\"M. Weber\""), 201);
	expect_state(o, "in_transit", "delivered", NULL);
	expect_now(&x, id, "in_transit", "delivered", "fulfilled");
	json_decref(o);
	/* a scan older than the delivery: kept, the leg stays delivered */
	o = leg_do(&x, x.kest, id, legs[0], "tracking", scan("s2b", "in_transit", "2026-01-02T21:00:00Z", NULL), 201);
	expect_state(o, "in_transit", "delivered", NULL);
	expect_now(&x, id, "in_transit", "delivered", "fulfilled");
	json_decref(o);
	/* the other leg's first scan is its delivery: picked up and delivered at once */
	o = leg_do(&x, x.kstk, id, legs[1], "tracking", scan("t1", "delivered", "2026-01-04T12:00:00Z", NULL), 201);
	expect_state(o, "delivered", "delivered", NULL);
	expect_now(&x, id, "delivered", "delivered", "delivered");
	json_decref(o);
	cr_assert_eq(tc_count_events(x.port, "order.picked_up", NULL), 2);
	cr_assert_eq(tc_count_events(x.port, "order.delivered", NULL), 2);
	/* the stockist sees its own leg's tracking, not the estate's */
	char path[160];
	snprintf(path, sizeof(path), "/v1/orders/%s", id);
	o = tc_expect(x.port, "GET", path, x.kstk, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(o, "fulfillments")), 1, "%s", dump(o));
	cr_assert_str_eq(tc_jstr(leg_of(o, 0), "leg_id"), legs[1]);
	json_decref(o);

	/* kill -9 and restart: every move and scan is there */
	wm_kill9(&x.p);
	ow_restart(&x, NULL);
	o = get_order(&x, id);
	expect_state(o, "delivered", "delivered", "delivered");
	cr_assert_eq(json_array_size(json_object_get(leg_of(o, 0), "tracking")), 6, "%s", dump(o));
	cr_assert_str_eq(tc_jstr(jat(leg_of(o, 0), "tracking", 5), "received_by"), "M. Weber");
	json_decref(o);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

/* The bound on a leg's scans: 64 kept, the 65th refused, the leg intact. */
WM_TEST(fulfilment, a_leg_keeps_at_most_64_scans)
{
	struct oworld x;
	ow_start(&x, NULL, 24, 24);
	char id[64], legs[2][96], sid[16], at[40];
	reserved_order(&x, 2, id, legs);
	json_decref(leg_do(&x, x.kest, id, legs[0], "ship", NULL, 200));
	for (int i = 0; i < 64; i++) {
		snprintf(sid, sizeof(sid), "x%02d", i);
		snprintf(at, sizeof(at), "2026-02-01T10:%02d:00Z", i % 60);
		json_decref(leg_do(&x, x.kest, id, legs[0], "tracking", scan(sid, "exception", at, NULL), 201));
	}
	json_t *o = leg_do(&x, x.kest, id, legs[0], "tracking", scan("x64", "exception", "2026-02-01T11:00:00Z", NULL),
			   409);
	cr_assert_str_eq(tc_jstr(o, "code"), "tracking_full");
	json_decref(o);
	o = get_order(&x, id);
	cr_assert_eq(json_array_size(json_object_get(leg_of(o, 0), "tracking")), 64);
	json_decref(o);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

/* kill -9 right after a ship (and after a scan) is durable: after the
 * restart the leg, the order and the stock agree -- never a leg that reads
 * reserved with its stock gone. */
static void crash_after(const char *point, int scan_first)
{
	struct oworld x;
	ow_start(&x, scan_first ? NULL : point, 24, 24);
	char id[64], legs[2][96];
	reserved_order(&x, 4, id, legs);
	if (scan_first) {
		json_decref(leg_do(&x, x.kest, id, legs[0], "ship", NULL, 200));
		cr_assert_eq(wm_stop(&x.p), 0);
		ow_restart(&x, point);
	}
	char path[320], hdr[256];
	snprintf(path, sizeof(path), "/v1/orders/%s/fulfillments/%s/%s", id, legs[0], scan_first ? "tracking" : "ship");
	snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s\r\n", x.kest);
	struct http_resp r;
	int got = http_do(x.port, "POST", path, hdr,
			  scan_first ? scan("c1", "delivered", "2026-03-01T10:00:00Z", NULL) : "{\"carrier\":\"UPS\"}", &r);
	if (!got) {
		cr_log_error("answered %d: %s", r.status, r.body);
		http_resp_free(&r);
		cr_assert_fail("%s: the shard answered instead of dying", point);
	}
	cr_assert_eq(wm_wait(&x.p, 20000), 137, "%s: the shard did not die at the crash point", point);
	ow_restart(&x, NULL);
	json_t *o = get_order(&x, id);
	expect_state(o, scan_first ? "delivered" : "fulfilled", scan_first ? "delivered" : "fulfilled", NULL);
	if (!scan_first)
		cr_assert_str_eq(tc_jstr(leg_of(o, 0), "carrier"), "UPS", "%s", dump(o));
	json_decref(o);
	expect_level(&x, x.lv_est, 0, 20);
	/* and the move is not repeated by a retry */
	json_decref(leg_do(&x, x.kest, id, legs[0], "ship", NULL, 409));
	expect_level(&x, x.lv_est, 0, 20);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

WM_TEST(fulfilment, kill9_after_ship_keeps_the_leg_and_its_stock_together) { crash_after("fulfil_crash_after_ship", 0); }
WM_TEST(fulfilment, kill9_after_scan_keeps_the_delivery) { crash_after("fulfil_crash_after_scan", 1); }

/* ---- pickups ---------------------------------------------------------------------------- */

/* Today + days as YYYY-MM-DD (UTC). */
static void day(int days, char out[16])
{
	time_t t = time(NULL) + (time_t)days * 86400;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 16, "%Y-%m-%d", &tm);
}

static const char *pickup_body(const char *order_id, const char *loc, const char *date, const char *window)
{
	static char b[512];
	if (order_id)
		snprintf(b, sizeof(b),
			 "{\"order_id\":\"%s\",\"location_id\":\"%s\",\"date\":\"%s\",\"time_window\":\"%s\","
			 "\"carrier_ref\":\"DHL-BOOK-1\"}",
			 order_id, loc, date, window);
	else
		snprintf(b, sizeof(b),
			 "{\"location_id\":\"%s\",\"date\":\"%s\",\"time_window\":\"%s\",\"carrier_ref\":\"DHL-BOOK-1\"}",
			 loc, date, window);
	return b;
}

WM_TEST(fulfilment, pickups_are_requested_per_location_accepted_and_collected)
{
	struct oworld x;
	ow_start(&x, NULL, 24, 24);
	char id[64], legs[2][96], path[200], tomorrow[16], later[16], past[16], far[16];
	day(1, tomorrow);
	day(3, later);
	day(-1, past);
	day(200, far);
	reserved_order(&x, 30, id, legs);
	snprintf(path, sizeof(path), "/v1/orders/%s/pickup", id);

	/* validation: dates, windows, an unknown location */
	json_t *o = tc_expect(x.port, "POST", path, x.kest, pickup_body(NULL, x.loc_est, past, "25:00-10:00"), 422);
	cr_assert(tc_lists_error(o, "date", "range"), "%s", dump(o));
	cr_assert(tc_lists_error(o, "time_window", "format"), "%s", dump(o));
	json_decref(o);
	o = tc_expect(x.port, "POST", path, x.kest, pickup_body(NULL, x.loc_est, far, "09:00-12:00"), 422);
	cr_assert(tc_lists_error(o, "date", "range"), "%s", dump(o));
	json_decref(o);
	o = tc_expect(x.port, "POST", path, x.kest, pickup_body(NULL, x.loc_est, "2026-02-30", "12:00-09:00"), 422);
	cr_assert(tc_lists_error(o, "date", "format"), "%s", dump(o));
	cr_assert(tc_lists_error(o, "time_window", "format"), "%s", dump(o));
	json_decref(o);
	/* the stockist's location is not in the estate's view: as unknown as a
	 * location the order does not have; the seller books nothing */
	o = tc_expect(x.port, "POST", path, x.kest, pickup_body(NULL, x.loc_stk, tomorrow, "09:00-12:00"), 422);
	cr_assert(tc_lists_error(o, "location_id", "unknown"), "%s", dump(o));
	json_decref(o);
	json_decref(tc_expect(x.port, "POST", path, x.ksel, pickup_body(NULL, x.loc_est, tomorrow, "09:00-12:00"),
			      403));

	/* request: 201; the same again: 200, the same pickup */
	o = tc_expect(x.port, "POST", path, x.kest, pickup_body(NULL, x.loc_est, tomorrow, "09:00-12:00"), 201);
	char pk[128];
	snprintf(pk, sizeof(pk), "%s", tc_jstr(o, "id"));
	cr_assert_str_eq(tc_jstr(o, "status"), "requested");
	cr_assert_str_eq(tc_jstr(o, "location_id"), x.loc_est);
	cr_assert_str_eq(json_string_value(jat(o, "legs", 0)), legs[0], "%s", dump(o));
	json_decref(o);
	o = tc_expect(x.port, "POST", path, x.kest, pickup_body(NULL, x.loc_est, tomorrow, "09:00-12:00"), 200);
	cr_assert_str_eq(tc_jstr(o, "id"), pk, "one pickup per location");
	json_decref(o);
	/* reschedule while requested */
	o = tc_expect(x.port, "POST", path, x.kest, pickup_body(NULL, x.loc_est, later, "13:00-17:00"), 200);
	cr_assert_str_eq(tc_jstr(o, "date"), later);
	cr_assert_str_eq(tc_jstr(o, "id"), pk);
	json_decref(o);
	/* POST /v1/pickups for the stockist's location, by the stockist */
	o = tc_expect(x.port, "POST", "/v1/pickups", x.kstk, pickup_body(id, x.loc_stk, tomorrow, "08:00-10:00"), 201);
	char pk2[128];
	snprintf(pk2, sizeof(pk2), "%s", tc_jstr(o, "id"));
	json_decref(o);
	cr_assert_eq(tc_count_events(x.port, "pickup.requested", NULL), 3);

	/* reads: the platform sees both, the stockist only its own */
	o = tc_expect(x.port, "GET", path, NULL, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(o, "data")), 2, "%s", dump(o));
	json_decref(o);
	o = tc_expect(x.port, "GET", path, x.kstk, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(o, "data")), 1, "%s", dump(o));
	cr_assert_str_eq(tc_jstr(jat(o, "data", 0), "id"), pk2);
	json_decref(o);
	char ppath[200];
	snprintf(ppath, sizeof(ppath), "/v1/pickups/%s", pk);
	json_t *a = tc_expect(x.port, "GET", ppath, x.kstk, NULL, 404);
	cr_assert_str_eq(tc_jstr(a, "code"), "not_found");
	json_decref(a);

	/* accept: the platform only; again: 200 as it is; then no reschedule */
	snprintf(ppath, sizeof(ppath), "/v1/pickups/%s/accept", pk);
	json_decref(tc_expect(x.port, "POST", ppath, x.kest, "{}", 403));
	o = tc_expect(x.port, "POST", ppath, NULL, "{}", 200);
	cr_assert_str_eq(tc_jstr(o, "status"), "accepted");
	json_decref(o);
	json_decref(tc_expect(x.port, "POST", ppath, NULL, "{}", 200));
	o = tc_expect(x.port, "POST", path, x.kest, pickup_body(NULL, x.loc_est, tomorrow, "09:00-12:00"), 409);
	cr_assert_str_eq(tc_jstr(o, "code"), "pickup_accepted");
	json_decref(o);
	cr_assert_eq(tc_count_events(x.port, "pickup.accepted", NULL), 1);

	/* collected once the carrier scanned the location's legs */
	json_decref(leg_do(&x, x.kest, id, legs[0], "ship", NULL, 200));
	json_decref(leg_do(&x, x.kest, id, legs[0], "tracking", scan("p1", "picked_up", "2026-01-02T10:00:00Z", NULL),
			   201));
	snprintf(ppath, sizeof(ppath), "/v1/pickups/%s", pk);
	o = tc_expect(x.port, "GET", ppath, x.kest, NULL, 200);
	cr_assert_str_eq(tc_jstr(o, "status"), "collected", "%s", dump(o));
	json_decref(o);

	/* a cancelled order's pickups read cancelled */
	char id2[64], legs2[2][96], path2[200];
	reserved_order(&x, 1, id2, legs2); /* the estate's 24 went to the first order: the stockist's */
	snprintf(path2, sizeof(path2), "/v1/orders/%s/pickup", id2);
	o = tc_expect(x.port, "POST", path2, x.kstk, pickup_body(NULL, x.loc_stk, tomorrow, "09:00-12:00"), 201);
	snprintf(pk, sizeof(pk), "/v1/pickups/%s", tc_jstr(o, "id"));
	json_decref(o);
	snprintf(path2, sizeof(path2), "/v1/orders/%s/cancel", id2);
	json_decref(tc_expect(x.port, "POST", path2, x.ksel, "{}", 200));
	o = tc_expect(x.port, "GET", pk, NULL, NULL, 200);
	cr_assert_str_eq(tc_jstr(o, "status"), "cancelled");
	json_decref(o);
	snprintf(path2, sizeof(path2), "/v1/orders/%s/pickup", id2);
	o = tc_expect(x.port, "POST", path2, x.kstk, pickup_body(NULL, x.loc_stk, later, "09:00-12:00"), 409);
	cr_assert_str_eq(tc_jstr(o, "current_status"), "cancelled");
	json_decref(o);
	/* and a pickup of an unknown order */
	json_decref(tc_expect(x.port, "POST", "/v1/pickups", NULL,
			      pickup_body("ord_FR_01M8HZ11K20001D4FZNSXX", x.loc_est, later, "09:00-12:00"), 404));
	json_decref(tc_expect(x.port, "GET", "/v1/pickups/ord_FR_01M8HZ11K20001D4FZNS.P1", NULL, NULL, 404));
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

/* kill -9 right after a pick, and after a pickup is accepted: the restarted
 * shard has the move (the answer was never sent, the write was durable),
 * and repeating it is refused or answered as it is. */
WM_TEST(fulfilment, kill9_after_pick_and_after_a_pickup_accept_keeps_them)
{
	struct oworld x;
	ow_start(&x, NULL, 24, 24);
	char id[64], legs[2][96], path[320], hdr[256], tomorrow[40];
	reserved_order(&x, 4, id, legs);
	cr_assert_eq(wm_stop(&x.p), 0);
	ow_restart(&x, "fulfil_crash_after_move");
	snprintf(path, sizeof(path), "/v1/orders/%s/fulfillments/%s/pick", id, legs[0]);
	snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s\r\n", x.kest);
	struct http_resp r;
	cr_assert_neq(http_do(x.port, "POST", path, hdr, NULL, &r), 0, "the shard answered instead of dying");
	cr_assert_eq(wm_wait(&x.p, 20000), 137);
	ow_restart(&x, NULL);
	expect_now(&x, id, "reserved", "picked", NULL);
	json_decref(leg_do(&x, x.kest, id, legs[0], "pick", NULL, 409));
	/* a pickup, accepted with a crash right after */
	ow_ago(-86400, tomorrow);
	tomorrow[10] = 0;
	char body[300];
	snprintf(body, sizeof(body), "{\"location_id\":\"%s\",\"date\":\"%s\",\"time_window\":\"09:00-12:00\","
				     "\"carrier_ref\":\"B1\"}", x.loc_est, tomorrow);
	snprintf(path, sizeof(path), "/v1/orders/%s/pickup", id);
	json_t *p = tc_expect(x.port, "POST", path, x.kest, body, 201);
	char pk[160];
	snprintf(pk, sizeof(pk), "/v1/pickups/%s/accept", tc_jstr(p, "id"));
	json_decref(p);
	cr_assert_eq(wm_stop(&x.p), 0);
	ow_restart(&x, "pickup_crash_after_accept");
	cr_assert_neq(http_do(x.port, "POST", pk, NULL, "{}", &r), 0, "the shard answered instead of dying");
	cr_assert_eq(wm_wait(&x.p, 20000), 137);
	ow_restart(&x, NULL);
	p = tc_expect(x.port, "POST", pk, NULL, "{}", 200); /* accepted before the crash: as it is */
	cr_assert_str_eq(tc_jstr(p, "status"), "accepted");
	json_decref(p);
	cr_assert_eq(tc_count_events(x.port, "pickup.accepted", NULL), 1);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}
