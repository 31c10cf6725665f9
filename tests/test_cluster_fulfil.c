/*
 * test_cluster_fulfil.c -- shipping a leg whose stock lies on another shard
 * (issue: after the sale, item 2): the destination marks the leg
 * `shipping` durably, the stock's shard consumes the hold
 * (/internal/txn/consume, idempotent) and the leg becomes `fulfilled` --
 * and a kill -9 of either shard between those steps is finished by the
 * restarted processes themselves, with the stock taken exactly once.
 *
 * The cluster: the home (shard 0), FR (shard 1, the cellars), DE (shard 2,
 * the destination), a router in front.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/cluster_harness.h"
#include "tests/order_world.h"
#include "tests/wm_test.h"

#define SHARD_FR 1
#define SHARD_DE 2

/* The order cluster of the harness (no key rate in the way; the default
 * in-doubt time-out) and its router. */
static void cluster_up(struct wm_cluster *c) { wm_cluster_for_orders(c, "10000", NULL); }

/* Wait (bounded) until the level shows on_hand and incoming as wanted. */
static void level_wait_for(struct wm_cluster *c, const char *lv, long long on_hand, long long incoming,
			   const char *what)
{
	char path[160];
	snprintf(path, sizeof(path), "/v1/inventory/%s", lv);
	long long in = -1, oh = -1;
	for (int i = 0; i < 200; i++) {
		json_t *l = tc_expect(c->router_port, "GET", path, NULL, NULL, 200);
		in = json_integer_value(json_object_get(l, "incoming"));
		oh = json_integer_value(json_object_get(l, "on_hand"));
		json_decref(l);
		if (in == incoming && oh == on_hand)
			return;
		usleep(50 * 1000);
	}
	cr_assert_fail("%s: incoming %lld on_hand %lld, want %lld %lld", what, in, oh, incoming, on_hand);
}

/* A reserved cross-shard order of qty (stock in FR, destination DE): its id and first leg. */
static void cross_order(struct oworld *w, int qty, char *id, char *leg)
{
	json_t *j = ow_order_replicated(w, qty);
	cr_assert_str_eq(json_string_value(json_object_get(j, "status")), "reserved");
	snprintf(id, 64, "%s", json_string_value(json_object_get(j, "id")));
	json_t *l = json_array_get(json_object_get(j, "fulfillments"), 0);
	snprintf(leg, 96, "%s", json_string_value(json_object_get(l, "leg_id")));
	cr_assert(strchr(json_string_value(json_object_get(l, "hold_id")), ':'), "a cross-shard hold");
	json_decref(j);
}

/* The leg's status now (the platform's view, through the router). */
static void leg_status(struct oworld *w, const char *id, char *out, size_t n)
{
	char path[160];
	snprintf(path, sizeof(path), "/v1/orders/%s", id);
	json_t *o = ow_get(w, path);
	json_t *l = json_array_get(json_object_get(o, "fulfillments"), 0);
	snprintf(out, n, "%s", l ? json_string_value(json_object_get(l, "status")) : "?");
	json_decref(o);
}

/* Wait (bounded) until the leg is `want`. */
static void leg_wait(struct oworld *w, const char *id, const char *want)
{
	char s[32] = "";
	for (int t = 0; t < 400; t++) {
		leg_status(w, id, s, sizeof(s));
		if (!strcmp(s, want))
			return;
		usleep(50 * 1000);
	}
	cr_assert_fail("leg of %s is %s, want %s", id, s, want);
}

/* The carrier's proof of receipt of the leg, ten minutes ago. */
static void delivered_scan(struct wm_cluster *c, struct oworld *w, const char *id, const char *leg)
{
	char at[40], path[320], body[300];
	ow_ago(600, at);
	snprintf(path, sizeof(path), "/v1/orders/%s/fulfillments/%s/tracking", id, leg);
	snprintf(body, sizeof(body),
		 "{\"scan_id\":\"d1\",\"type\":\"delivered\",\"occurred_at\":\"%s\",\"carrier\":\"DHL\","
		 "\"tracking_number\":\"X1\"}",
		 at);
	json_decref(tc_expect(c->router_port, "POST", path, w->kest, body, 201));
}

static void ship_path(const char *id, const char *leg, char *out, size_t n)
{
	snprintf(out, n, "/v1/orders/%s/fulfillments/%s/ship", id, leg);
}

/* A cross-shard order of 12 (stock in FR, to DE) shipped (202, then
 * fulfilled by the stock's shard) and delivered: its id and leg. */
static void delivered_cross_order(struct wm_cluster *c, struct oworld *w, char *id, char *leg)
{
	char path[320];
	cross_order(w, 12, id, leg);
	ship_path(id, leg, path, sizeof(path));
	json_decref(tc_expect(c->router_port, "POST", path, w->kest, NULL, 202));
	leg_wait(w, id, "fulfilled");
	delivered_scan(c, w, id, leg);
}

/* The whole-cluster checker agrees (stock, holds, orders). */
static void cluster_consistent(struct wm_cluster *c)
{
	char report[4096] = "";
	int rc = -1;
	for (int t = 0; t < 50 && rc; t++) {
		rc = wm_cluster_check(c, 0, report, sizeof(report));
		if (rc)
			usleep(100 * 1000);
	}
	cr_assert_eq(rc, 0, "%s", report);
}

WM_TEST(cluster_fulfil, a_remote_leg_ships_through_its_stock_shard, .timeout = 120)
{
	struct wm_cluster c;
	cluster_up(&c);
	struct oworld w;
	memset(&w, 0, sizeof(w));
	ow_build(&w, c.router_port, 30, 0, "FR", "DE");
	char id[64], leg[96], path[320];
	cross_order(&w, 12, id, leg);
	ship_path(id, leg, path, sizeof(path));
	json_t *o = tc_expect(c.router_port, "POST", path, w.kest, "{\"carrier\":\"DHL\"}", 202);
	json_t *l = json_array_get(json_object_get(o, "fulfillments"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(l, "status")), "shipping");
	json_decref(o);
	leg_wait(&w, id, "fulfilled");
	long long r, a, h;
	ow_level(&w, w.lv_est, &r, &a, &h);
	cr_assert(r == 0 && a == 0 && h == 18, "the FR stock: reserved %lld allocated %lld on_hand %lld", r, a, h);
	/* shipped: no cancel, no second ship */
	char cpath[160];
	snprintf(cpath, sizeof(cpath), "/v1/orders/%s/cancel", id);
	tc_expect_code(c.router_port, "POST", cpath, w.ksel, "{}", 409, "invalid_order_state");
	tc_expect_code(c.router_port, "POST", path, w.kest, NULL, 409, "invalid_leg_state");
	/* the carrier's delivery: the order is delivered */
	snprintf(path, sizeof(path), "/v1/orders/%s/fulfillments/%s/tracking", id, leg);
	json_decref(tc_expect(c.router_port, "POST", path, w.kest,
			      "{\"scan_id\":\"d1\",\"type\":\"delivered\",\"occurred_at\":\"2026-05-01T10:00:00Z\","
			      "\"carrier\":\"DHL\",\"tracking_number\":\"X1\"}",
			      201));
	snprintf(path, sizeof(path), "/v1/orders/%s", id);
	o = ow_get(&w, path);
	cr_assert_str_eq(json_string_value(json_object_get(o, "status")), "delivered");
	json_decref(o);
	ow_level(&w, w.lv_est, &r, &a, &h);
	cr_assert_eq(h, 18, "consumed once");
	cluster_consistent(&c);
	wm_cluster_cleanup(&c);
}

/*
 * kill -9 of one shard at a step of a remote ship (WM_ERRINJ on that shard
 * only): `shard` dies at `point`; restarted without it, the leg completes
 * by itself and the stock is taken once.
 */
static void remote_ship_crash(unsigned shard, const char *point)
{
	struct wm_cluster c;
	cluster_up(&c);
	struct oworld w;
	memset(&w, 0, sizeof(w));
	ow_build(&w, c.router_port, 30, 0, "FR", "DE");
	char id[64], leg[96], path[320];
	cross_order(&w, 12, id, leg);
	/* the shard again, with the crash point */
	char env[128];
	snprintf(env, sizeof(env), "WM_ERRINJ=%s", point);
	const char *envv[] = {env, NULL};
	cr_assert_eq(wm_cluster_stop(&c, shard), 0);
	c.env = envv;
	cr_assert_eq(wm_cluster_start(&c, shard), 0);
	c.env = NULL;
	ship_path(id, leg, path, sizeof(path));
	char hdr[256];
	snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s\r\n", w.kest);
	struct http_resp r;
	if (http_do(c.router_port, "POST", path, hdr, "{}", &r) == 0) {
		cr_assert(r.status == 202 || r.status == 502 || r.status == 503, "%s: %d %s", point, r.status, r.body);
		http_resp_free(&r);
	}
	cr_assert_eq(wm_wait(&c.shard[shard], 20000), 137, "%s: shard %u did not die at the crash point", point, shard);
	cr_assert_eq(wm_cluster_start(&c, shard), 0, "%s: shard %u did not restart", point, shard);
	leg_wait(&w, id, "fulfilled");
	long long rs, al, oh;
	ow_level(&w, w.lv_est, &rs, &al, &oh);
	cr_assert(rs == 0 && al == 0 && oh == 18, "%s: consumed once: reserved %lld allocated %lld on_hand %lld", point, rs,
		  al, oh);
	cr_assert_eq(tc_count_events(c.router_port, "order.fulfilled", NULL), 1, "%s: one order.fulfilled", point);
	cluster_consistent(&c);
	wm_cluster_cleanup(&c);
}

/* The stock's shard consumed the hold and died before answering. */
WM_TEST(cluster_fulfil, kill9_of_the_stock_shard_after_consuming, .timeout = 150)
{
	remote_ship_crash(SHARD_FR, "txn_part_crash_after_consume");
}

/* The destination heard "consumed" and died before marking the leg. */
WM_TEST(cluster_fulfil, kill9_of_the_destination_before_marking_shipped, .timeout = 150)
{
	remote_ship_crash(SHARD_DE, "fulfil_crash_before_shipped");
}

/* The destination died right after storing the leg `shipping` (the
 * answer never left): the restarted destination sends the consumption. */
WM_TEST(cluster_fulfil, kill9_of_the_destination_after_the_intent, .timeout = 150)
{
	remote_ship_crash(SHARD_DE, "fulfil_crash_after_ship");
}

/* A return of goods whose stock lies on another shard: the units go back to
 * the FR level as incoming (told by the destination, as totals), arrive on
 * receipt, and the money goes back -- the whole-cluster check clean. */
WM_TEST(cluster_fulfil, a_remote_return_comes_back_to_its_stock_shard, .timeout = 120)
{
	struct wm_cluster c;
	cluster_up(&c);
	struct oworld w;
	memset(&w, 0, sizeof(w));
	ow_build(&w, c.router_port, 30, 0, "FR", "DE");
	char id[64], leg[96], path[320];
	delivered_cross_order(&c, &w, id, leg);
	snprintf(path, sizeof(path), "/v1/orders/%s/returns", id);
	json_t *r = tc_expect(c.router_port, "POST", path, w.ksel,
			      "{\"kind\":\"return\",\"reason\":\"wrong_item\",\"lines\":[{\"line\":0,\"qty\":4}]}", 201);
	char rid[128];
	snprintf(rid, sizeof(rid), "%s", json_string_value(json_object_get(r, "id")));
	json_decref(r);
	/* on the way back: the FR level's incoming, told by the destination */
	level_wait_for(&c, w.lv_est, 18, 4, "FR level, on the way back");
	snprintf(path, sizeof(path), "/v1/orders/%s/returns/%s/receive", id, rid);
	json_t *rc = tc_expect(c.router_port, "POST", path, w.kest, "{}", 200);
	cr_assert_str_eq(json_string_value(json_object_get(rc, "status")), "refunded");
	json_decref(rc);
	level_wait_for(&c, w.lv_est, 22, 0, "FR level, received");
	cluster_consistent(&c);
	wm_cluster_cleanup(&c);
}

/* Payouts of a cross-shard order through the router: the run goes to every
 * shard and its counts are added up; the destination pays and settles, and
 * the settlement reconciles. */
WM_TEST(cluster_fulfil, a_payout_run_through_the_router_settles_a_cross_shard_order, .timeout = 120)
{
	struct wm_cluster c;
	wm_cluster_orders_config(&c, "10000");
	unsigned n = 0;
	while (c.extra[n])
		n++;
	c.extra[n++] = "--payout-days";
	c.extra[n++] = "originator=0,seller=0,fulfiller=0";
	c.extra[n] = NULL;
	wm_cluster_start_all(&c);
	cr_assert_eq(wm_cluster_router_start(&c), 0, "the router did not start (logs in %s)", c.router_dir);
	struct oworld w;
	memset(&w, 0, sizeof(w));
	ow_build(&w, c.router_port, 30, 0, "FR", "DE");
	char id[64], leg[96], path[320];
	delivered_cross_order(&c, &w, id, leg);
	json_t *r = tc_expect(c.router_port, "POST", "/v1/admin/payout-runs", NULL, "{}", 200);
	long long paid = json_integer_value(json_object_get(r, "payouts_paid"));
	long long visited = json_integer_value(json_object_get(r, "orders_visited"));
	json_decref(r);
	snprintf(path, sizeof(path), "/v1/orders/%s/settlement", id);
	json_t *s = tc_expect(c.router_port, "GET", path, NULL, NULL, 200);
	long long parties = (long long)json_array_size(json_object_get(s, "payouts"));
	cr_assert_eq(paid, parties, "the destination's payouts, counted through the router: %lld of %lld", paid, parties);
	cr_assert_eq(visited, 1, "one order on one shard, the others none");
	cr_assert_str_eq(json_string_value(json_object_get(s, "state")), "settled");
	cr_assert(json_is_true(json_object_get(s, "reconciles")));
	json_decref(s);
	snprintf(path, sizeof(path), "/v1/orders/%s", id);
	json_t *o = ow_get(&w, path);
	cr_assert_str_eq(json_string_value(json_object_get(o, "status")), "settled");
	json_decref(o);
	cluster_consistent(&c);
	wm_cluster_cleanup(&c);
}
