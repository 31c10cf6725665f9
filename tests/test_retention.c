/*
 * test_retention.c -- what a shard forgets (engine/retention.c, issue 18
 * item 9): events, finished webhook deliveries and released holds past
 * the retention are pruned (the catalogue's wine.* and offer.* events
 * are kept: the feed's change log), orders are kept, and the whole-cluster check
 * (which sums every level's stock.changed history) still holds once the
 * history it sums has been pruned and folded.
 *
 * A cluster of its own (a router and 3 shards: the home, FR with the
 * cellars, DE the destination), shards run with WM_RETENTION_MS (test
 * builds: the retention in ms instead of --retention-days).  Not run
 * through the topology switch (Makefile TEST_CLUSTER_SKIP): it is one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/cluster_harness.h"
#include "tests/order_world.h"
#include "tests/wm_test.h"

#define RETAIN_MS "3000"

/* The value of the first /metrics line of shard i starting with `series`
 * followed by a space; -1 when absent. */
static long long metric(const struct wm_cluster *c, unsigned i, const char *series)
{
	struct http_resp r;
	cr_assert_eq(wm_cluster_do(c, i, "GET", "/metrics", NULL, &r), 0);
	char pat[200];
	snprintf(pat, sizeof(pat), "\n%s ", series);
	const char *at = strstr(r.body, pat);
	long long v = at ? strtoll(at + strlen(pat), NULL, 10) : -1;
	http_resp_free(&r);
	return v;
}

static void order(struct oworld *w, int qty, char *id)
{
	json_t *j = ow_order_replicated(w, qty);
	snprintf(id, 64, "%s", json_string_value(json_object_get(j, "id")));
	json_decref(j);
}

/* Wait (<= 30 s) until shard i has pruned every event older than the
 * retention: its event table is empty (nothing was written since). */
static void events_pruned(const struct wm_cluster *c, unsigned i)
{
	long long rows = -1;
	for (int t = 0; t < 300; t++) {
		rows = metric(c, i, "wm_table_rows{table=\"event\"}");
		if (rows == 0)
			return;
		usleep(100 * 1000);
	}
	cr_assert_fail("shard %u still holds %lld events", i, rows);
}

WM_TEST(retention, history_pruned_and_folded_orders_kept_and_the_cluster_check_holds, .timeout = 120)
{
	struct wm_cluster c;
	wm_cluster_init(&c, 3);
	static const char *const own[] = {NULL, "FR", "DE"};
	wm_cluster_set_countries(&c, own);
	static const char *const rate[] = {"--key-rate-rps", "1000000", "--key-rate-burst", "1000000", NULL};
	for (int i = 0; rate[i]; i++)
		c.extra[i] = c.router_extra[i] = rate[i];
	static const char *const env[] = {"WM_RETENTION_MS=" RETAIN_MS, NULL};
	c.env = env;
	wm_cluster_start_all(&c);
	c.env = NULL;
	cr_assert_eq(wm_cluster_router_start(&c), 0, "the router did not start (logs in %s)", c.root);
	struct oworld w;
	memset(&w, 0, sizeof(w));
	ow_build(&w, c.router_port, 30, 0, "FR", "DE");
	char kept[64], gone[64], path[160];
	order(&w, 5, kept);
	order(&w, 4, gone);
	snprintf(path, sizeof(path), "/v1/orders/%s/cancel", gone);
	json_decref(tc_expect(c.router_port, "POST", path, w.ksel, "{}", 200));
	/* the cancelled order's hold goes back (released) on the cellars' shard */
	long long reserved = -1, allocated = -1, on_hand = -1;
	for (int t = 0; t < 200 && allocated != 5; t++) {
		ow_level(&w, w.lv_est, &reserved, &allocated, &on_hand);
		if (allocated != 5)
			usleep(50 * 1000);
	}
	cr_assert_eq(allocated, 5, "only the kept order's units are allocated");
	long long fr_events = metric(&c, 1, "wm_table_rows{table=\"event\"}");
	long long fr_holds = metric(&c, 1, "wm_table_rows{table=\"hold\"}");
	cr_assert_gt(fr_events, 0, "the cellars' shard logged stock.changed events");
	cr_assert_eq(fr_holds, 2, "a committed hold and a released one");
	/* past the retention, with nothing written: the cellars' and the
	 * destination's logs are empty; the home keeps only the catalogue's
	 * wine.* and offer.* events (the feed's change log) */
	for (unsigned i = 1; i < 3; i++)
		events_pruned(&c, i);
	size_t partners = 1;
	for (int t = 0; t < 300 && partners; t++) {
		json_t *j = tc_expect(c.router_port, "GET", "/v1/events?type=partner.created", NULL, NULL, 200);
		partners = json_array_size(json_object_get(j, "data"));
		json_decref(j);
		if (partners)
			usleep(100 * 1000);
	}
	cr_assert_eq(partners, 0, "the home's partner.created events were not pruned");
	json_t *cat = tc_expect(c.router_port, "GET", "/v1/events?type=offer.created", NULL, NULL, 200);
	cr_assert_gt(json_array_size(json_object_get(cat, "data")), 0, "offer.created events were pruned");
	json_decref(cat);
	cr_assert_geq(metric(&c, 1, "wm_retention_pruned_total{kind=\"event\"}"), fr_events);
	cr_assert_gt(metric(&c, 1, "wm_retention_folded_total"), 0, "stock.changed events were folded");
	cr_assert_eq(metric(&c, 1, "wm_retention_pruned_total{kind=\"hold\"}"), 1, "the released hold, only");
	cr_assert_eq(metric(&c, 1, "wm_table_rows{table=\"hold\"}"), 1, "the kept order's hold stays");
	cr_assert_gt(metric(&c, 1, "wm_table_rows{table=\"stock_fold\"}"), 0);
	/* orders are business records: kept, and read as before */
	snprintf(path, sizeof(path), "/v1/orders/%s", kept);
	json_t *o = ow_get(&w, path);
	cr_assert_str_eq(json_string_value(json_object_get(o, "status")), "reserved");
	json_decref(o);
	/* the history the check sums is the folds plus what is left: it holds,
	 * and keeps holding after new changes on top of the folds */
	char out[8192];
	int rc = wm_cluster_check(&c, 60000, out, sizeof(out));
	cr_assert_eq(rc, 0, "cluster check after pruning: %s", out);
	char more[64];
	order(&w, 3, more);
	rc = wm_cluster_check(&c, 60000, out, sizeof(out));
	cr_assert_eq(rc, 0, "cluster check after a new order: %s", out);
	ow_level(&w, w.lv_est, &reserved, &allocated, &on_hand);
	cr_assert_eq(allocated, 8, "5 + 3 units allocated");
	wm_cluster_cleanup(&c);
}
