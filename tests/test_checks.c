/*
 * test_checks.c -- the nightly consistency checks (engine/checks.c; spec
 * 1 item 9, issue 18 item 8): each kind of inconsistency seeded on
 * purpose and flagged exactly once over two runs, then fixed and closed.
 *
 * The world is a real shard (tests/order_world.h) with orders delivered,
 * paid out and registered; a run over it finds nothing.  Then the
 * catalogue's reachable gaps are made through the API (a wine without
 * offer, an offer without stock, a listing whose offer is withdrawn) and
 * the ones only a bug makes are seeded through the storage layer into the
 * stopped shard's data directory (tests/checks_seed.h): a listing naming a
 * missing offer, a delivered leg's register records gone, an order's
 * payment row gone (its register records and payouts are then an unpaid
 * order's), a level's on_hand moved without its history, an order charged
 * but set back to placed.  Expected findings are the seeds, written down
 * here from what was seeded, never read back from the output.
 *
 * The seeding stops and restarts one shard, so the suite runs in the
 * single-shard topology (TEST_CLUSTER_SKIP); the suite checks_cluster runs the
 * route and `wm-ctl checks run` against a real cluster, with the
 * cross-shard kind seeded through a participant's routes (a transaction
 * committed on the stock's shard that no order's leg names).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/storage/record.h"
#include "tests/checks_seed.h"
#include "tests/cluster_harness.h"
#include "tests/order_world.h"
#include "tests/wm_test.h"

static const char *dump(json_t *j)
{
	static char b[16384];
	size_t n = json_dumpb(j, b, sizeof(b) - 1, JSON_COMPACT);
	b[n < sizeof(b) - 1 ? n : sizeof(b) - 1] = 0;
	return b;
}

static json_t *run_checks(int port)
{
	return tc_expect(port, "POST", "/v1/admin/checks/run", NULL, "{}", 200);
}

static long long num(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	cr_assert(json_is_integer(v), "%s in %s", k, dump(o));
	return (long long)json_integer_value(v);
}

/* How many pim.reconciliation.flagged events of `kind` name exactly the
 * ids a (and b, or none), and how many of `kind` there are in all. */
static int flagged(int port, const char *kind, const char *a, const char *b, int *of_kind)
{
	json_t *j = tc_expect(port, "GET", "/v1/events?type=pim.reconciliation.flagged&page_size=200", NULL, NULL, 200);
	json_t *data = json_object_get(j, "data");
	int n = 0, k = 0;
	for (size_t i = 0; i < json_array_size(data); i++) {
		json_t *p = json_object_get(json_array_get(data, i), "payload");
		if (strcmp(tc_jstr(p, "kind") ? tc_jstr(p, "kind") : "", kind))
			continue;
		k++;
		json_t *ids = json_object_get(p, "ids");
		size_t want = b ? 2 : 1;
		if (json_array_size(ids) == want && !strcmp(json_string_value(json_array_get(ids, 0)), a) &&
		    (!b || !strcmp(json_string_value(json_array_get(ids, 1)), b)))
			n++;
	}
	cr_assert_null(json_object_get(j, "next_cursor") && json_is_string(json_object_get(j, "next_cursor"))
			       ? json_object_get(j, "next_cursor")
			       : NULL,
		       "every flagged event fits one page");
	json_decref(j);
	if (of_kind)
		*of_kind = k;
	return n;
}

/* Every flagged event's kind and ids, for a failure's message. */
static const char *flagged_list(int port)
{
	static char out[8192];
	size_t n = 0;
	json_t *j = tc_expect(port, "GET", "/v1/events?type=pim.reconciliation.flagged&page_size=200", NULL, NULL, 200);
	json_t *data = json_object_get(j, "data");
	out[0] = 0;
	for (size_t i = 0; i < json_array_size(data) && n < sizeof(out) - 1; i++) {
		json_t *p = json_object_get(json_array_get(data, i), "payload");
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%s %s; ", tc_jstr(p, "kind"),
				      dump(json_object_get(p, "ids")));
	}
	json_decref(j);
	return out;
}

/* The /metrics value of wm_checks_open_findings{kind="<kind>"}. */
static long metric_open(int port, const char *kind)
{
	struct http_resp r;
	char hdr[256], want[128];
	snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s\r\n", WM_TEST_KEY);
	cr_assert_eq(http_do(port, "GET", "/metrics", hdr, NULL, &r), 0);
	cr_assert_eq(r.status, 200);
	snprintf(want, sizeof(want), "wm_checks_open_findings{kind=\"%s\"} ", kind);
	const char *at = strstr(r.body, want);
	cr_assert_not_null(at, "no %s in /metrics", want);
	long v = strtol(at + strlen(want), NULL, 10);
	http_resp_free(&r);
	return v;
}

static long metric_runs(int port)
{
	struct http_resp r;
	char hdr[256];
	snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s\r\n", WM_TEST_KEY);
	cr_assert_eq(http_do(port, "GET", "/metrics", hdr, NULL, &r), 0);
	const char *at = strstr(r.body, "\nwm_checks_runs_total ");
	cr_assert_not_null(at);
	long v = strtol(at + strlen("\nwm_checks_runs_total "), NULL, 10);
	http_resp_free(&r);
	return v;
}

/* An order of qty units delivered 30 days ago (its payouts due); its id. */
static void delivered_order(struct oworld *x, int qty, char *id)
{
	int st;
	json_t *o = ow_order(x, qty, NULL, NULL, &st);
	cr_assert_eq(st, 201, "%s", dump(o));
	snprintf(id, 64, "%s", tc_jstr(o, "id"));
	json_decref(o);
	ow_deliver(x, id, 1, 30L * 86400);
}

static void create(int port, const char *path, const char *key, const char *body, char *out)
{
	json_t *j = tc_expect(port, "POST", path, key, body, 201);
	snprintf(out, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
}

/* How many open findings GET /v1/admin/checks/findings lists (query: "&kind=..." or ""),
 * following its cursor in pages of page_size. */
static long list_findings(int port, const char *query, int page_size)
{
	long n = 0;
	char cursor[256] = "", path[512];
	for (int pages = 0; pages < 100; pages++) {
		snprintf(path, sizeof(path), "/v1/admin/checks/findings?page_size=%d%s%s%s", page_size, query,
			 cursor[0] ? "&cursor=" : "", cursor);
		json_t *j = tc_expect(port, "GET", path, NULL, NULL, 200);
		n += (long)json_array_size(json_object_get(j, "data"));
		const char *next = tc_jstr(j, "next_cursor");
		snprintf(cursor, sizeof(cursor), "%s", next ? next : "");
		json_decref(j);
		if (!cursor[0])
			return n;
	}
	cr_assert_fail("the cursor never ends");
	return -1;
}

struct expect {
	const char *kind;
	const char *a, *b;
};

WM_TEST(checks, each_seeded_inconsistency_is_flagged_once_then_closed, .timeout = 240)
{
	struct oworld x;
	ow_start(&x, NULL, 50, 50);
	char oa[64], ob[64], oc[64];
	delivered_order(&x, 2, oa);
	delivered_order(&x, 3, ob);
	delivered_order(&x, 1, oc);
	json_t *pr = tc_expect(x.port, "POST", "/v1/admin/payout-runs", NULL, "{}", 200);
	cr_assert_gt(num(pr, "payouts_paid"), 0, "%s", dump(pr));
	json_decref(pr);

	/* a consistent world: nothing found */
	json_t *r = run_checks(x.port);
	cr_assert_eq(num(r, "findings"), 0, "a consistent world has no findings: %s", dump(r));
	cr_assert_eq(num(r, "open"), 0);
	json_decref(r);
	int any;
	flagged(x.port, "summary", "", NULL, &any);
	cr_assert_eq(any, 0, "no alert while nothing is open");

	/* the catalogue's gaps, through the API */
	char w2[64], o3[64], o4[64], chn[64], l1[64], l2[64], body[512];
	tc_pub_wine(x.port, "Lonely Blanc", w2);
	/* one offer per wine, originator and condition: these two are the estate's other conditions */
	json_decref(tc_offer(x.port, x.kest, x.w1, "\"status\":\"active\",\"network_shareable\":true,\"condition\":\"bin_end\"",
			     201, o3));
	json_decref(tc_offer(x.port, x.kest, x.w1,
			     "\"status\":\"active\",\"network_shareable\":true,\"condition\":\"mixed_vintage\"", 201, o4));
	create(x.port, "/v1/sales-channels", x.ksel, "{\"name\":\"Shop web\",\"kind\":\"webshop_connect\"}", chn);
	snprintf(body, sizeof(body), "{\"offer_id\":\"%s\",\"channel_id\":\"%s\",\"shelf_price\":20}", x.of_est, chn);
	create(x.port, "/v1/listings", x.ksel, body, l1);
	snprintf(body, sizeof(body), "{\"offer_id\":\"%s\",\"channel_id\":\"%s\",\"shelf_price\":20}", o4, chn);
	create(x.port, "/v1/listings", x.ksel, body, l2);
	char path[160];
	snprintf(path, sizeof(path), "/v1/offers/%s/withdraw", o4);
	json_decref(tc_expect(x.port, "POST", path, x.kest, NULL, 200));

	/* the rest only a bug makes: through the storage layer */
	cr_assert_eq(wm_stop(&x.p), 0);
	seed_open(x.p.data_dir);
	char pfx[96], from[96];
	snprintf(from, sizeof(from), "\"offer_id\":\"%s\"", x.of_est);
	cr_assert_eq(seed_edit(REC_T_LISTING, l1, from, "\"offer_id\":\"ofr_FR_gone00000000\""), 1);
	snprintf(pfx, sizeof(pfx), "%s.C1.", oa);
	cr_assert_geq(seed_del(REC_T_COMPLIANCE, pfx, NULL), 1, "order A's register records");
	snprintf(from, sizeof(from), "\"order_id\":\"%s\"", ob);
	cr_assert_eq(seed_del(REC_T_PAYMENT, "", from), 1, "order B's payment row");
	cr_assert_eq(seed_edit(REC_T_INVENTORY, x.lv_stk, "\"on_hand\":", "\"on_hand\":5"), 1, "level on_hand +5..");
	/* order C (paid out by the run: settled) cancelled and compensated, its charge still captured
	 * (one set back to placed would be driven on by the restart's saga recovery) */
	cr_assert_eq(seed_edit(REC_T_ORDER_STATE, oc, "\"status\":\"settled\"", "\"status\":\"cancelled\""), 1);
	cr_assert_eq(seed_edit(REC_T_ORDER_STATE, oc, "\"compensated\":false", "\"compensated\":true"), 1);
	seed_close();
	ow_restart(&x, NULL);

	const struct expect want[] = {
		{"wine_no_offer", w2, NULL},        {"offer_no_stock", o3, NULL},        {"listing_offer_missing", l1, NULL},
		{"listing_offer_withdrawn", l2, NULL}, {"paid_order_no_duty", oa, "1"}, {"duty_no_paid_order", ob, NULL},
		{"payout_no_paid_order", ob, NULL}, {"stock_invariant", x.lv_stk, NULL}, {"ledger_invariant", oc, NULL},
	};
	const long n_want = (long)(sizeof(want) / sizeof(want[0]));
	/* two runs: each finding flagged by the first, none again by the second */
	for (int pass = 0; pass < 2; pass++) {
		r = run_checks(x.port);
		cr_assert_eq(num(r, "findings"), n_want, "pass %d: %s: %s", pass, dump(r), flagged_list(x.port));
		cr_assert_eq(num(r, "flagged"), pass ? 0 : n_want, "pass %d: %s", pass, dump(r));
		cr_assert_eq(num(r, "closed"), 0);
		cr_assert_eq(num(r, "open"), n_want);
		json_decref(r);
		for (long i = 0; i < n_want; i++) {
			int of_kind;
			cr_assert_eq(flagged(x.port, want[i].kind, want[i].a, want[i].b, &of_kind), 1, "pass %d: %s %s", pass,
				     want[i].kind, want[i].a);
			cr_assert_eq(of_kind, 1, "pass %d: %s flagged once, nothing else of its kind", pass, want[i].kind);
			cr_assert_eq(metric_open(x.port, want[i].kind), 1, "%s", want[i].kind);
		}
		flagged(x.port, "summary", "", NULL, &any);
		cr_assert_eq(any, pass + 1, "an operations alert after each run with findings open");
	}
	cr_assert_eq(metric_runs(x.port), 3);
	/* the open findings, listed: every one, in pages, by kind */
	cr_assert_eq(list_findings(x.port, "", 2), n_want);
	for (long i = 0; i < n_want; i++) {
		char q[64];
		snprintf(q, sizeof(q), "&kind=%s", want[i].kind);
		cr_assert_eq(list_findings(x.port, q, 200), 1, "%s", want[i].kind);
		json_t *j = tc_expect(x.port, "GET", strcat(strcpy(path, "/v1/admin/checks/findings?page_size=5"), q), NULL,
				      NULL, 200);
		json_t *f = json_array_get(json_object_get(j, "data"), 0);
		cr_assert_str_eq(tc_jstr(f, "kind"), want[i].kind);
		cr_assert_str_eq(json_string_value(json_array_get(json_object_get(f, "ids"), 0)), want[i].a);
		json_decref(j);
	}
	tc_expect_code(x.port, "GET", "/v1/admin/checks/findings?kind=bogus", NULL, NULL, 400, "invalid_filter");
	json_decref(tc_expect(x.port, "GET", "/v1/admin/checks/findings", x.kest, NULL, 403)); /* operators only */

	/* fixed: every one closed, nothing flagged, no alert */
	cr_assert_eq(wm_stop(&x.p), 0);
	seed_open(x.p.data_dir);
	cr_assert_eq(seed_restore(), 6, "the six rows changed");
	seed_close();
	ow_restart(&x, NULL);
	snprintf(path, sizeof(path), "/v1/listings/%s", l2);
	json_decref(tc_expect(x.port, "PATCH", path, x.ksel, "{\"status\":\"delisted\"}", 200));
	json_decref(tc_offer(x.port, x.kest, w2, "\"status\":\"draft\"", 201, o4));
	char lv[64];
	snprintf(body, sizeof(body), "{\"sku\":\"SKU-%s\",\"offer_id\":\"%s\",\"location_id\":\"%s\",\"on_hand\":3}", o3, o3, x.loc_est);
	create(x.port, "/v1/inventory", x.kest, body, lv);
	/* the new draft offer o4 of w2 has no level either: one new finding */
	r = run_checks(x.port);
	cr_assert_eq(num(r, "closed"), n_want, "%s", dump(r));
	cr_assert_eq(num(r, "findings"), 1, "%s", dump(r));
	cr_assert_eq(num(r, "open"), 1);
	json_decref(r);
	cr_assert_eq(flagged(x.port, "offer_no_stock", o4, NULL, NULL), 1);
	for (long i = 0; i < n_want; i++)
		if (strcmp(want[i].kind, "offer_no_stock"))
			cr_assert_eq(metric_open(x.port, want[i].kind), 0, "%s closed", want[i].kind);
	snprintf(body, sizeof(body), "{\"sku\":\"SKU-%s\",\"offer_id\":\"%s\",\"location_id\":\"%s\",\"on_hand\":0}", o4, o4, x.loc_est);
	create(x.port, "/v1/inventory", x.kest, body, lv);
	r = run_checks(x.port);
	cr_assert_eq(num(r, "open"), 0, "%s", dump(r));
	cr_assert_eq(num(r, "closed"), 1);
	json_decref(r);
	flagged(x.port, "summary", "", NULL, &any);
	cr_assert_eq(any, 3, "no alert once nothing is open");
	cr_assert_eq(list_findings(x.port, "", 200), 0);
	wm_proc_cleanup(&x.p);
}

/* ---- a cluster: the route broadcast, `wm-ctl checks run` ------------------------------------ */

/* Wait (bounded) until the home's replica lists `want` levels: the
 * catalogue checks read every shard's levels there. */
static void home_sees_levels(int router_port, size_t want)
{
	size_t n = 0;
	for (int t = 0; t < 200; t++) {
		json_t *j = tc_expect(router_port, "GET", "/v1/inventory?page_size=200", NULL, NULL, 200);
		n = json_array_size(json_object_get(j, "data"));
		json_decref(j);
		if (n == want)
			return;
		usleep(50 * 1000);
	}
	cr_assert_fail("the home lists %zu levels, want %zu", n, want);
}

static int ctl_checks_run(const struct wm_cluster *c, char *out, size_t n)
{
	char args[1024];
	snprintf(args, sizeof(args), "checks run --shard-map %s --cluster-secret-file %s --in-doubt-limit-ms 60000",
		 c->map_path, c->secret_path);
	return wm_ctl_run(args, out, n);
}

WM_TEST(checks_cluster, every_shard_checks_and_wm_ctl_joins_the_cluster, .timeout = 180)
{
	struct wm_cluster c;
	wm_cluster_for_orders(&c, "10000", NULL);
	struct oworld w;
	memset(&w, 0, sizeof(w));
	ow_build(&w, c.router_port, 30, 5, "FR", "DE");
	home_sees_levels(c.router_port, 2);
	/* a cross-shard order (stock in FR, destination DE), reserved */
	int st = 0;
	json_t *o = NULL;
	for (int t = 0; t < 250; t++) {
		o = ow_order(&w, 2, NULL, NULL, &st);
		if (st != 422)
			break;
		json_decref(o); /* the destination's replica has not seen the stock yet */
		usleep(20 * 1000);
	}
	cr_assert_eq(st, 201, "%s", dump(o));
	json_decref(o);

	/* consistent: every shard finds nothing, the cluster check agrees */
	json_t *r = run_checks(c.router_port);
	cr_assert_eq(num(r, "findings"), 0, "%s: %s", dump(r), flagged_list(c.router_port));
	json_decref(r);
	char out[16384];
	cr_assert_eq(ctl_checks_run(&c, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "checks: 0 finding(s) open"), "%s", out);

	/* a wine nobody offers: the home flags it once, the counts add up over the shards */
	char w2[64];
	tc_pub_wine(c.router_port, "Lonely Blanc", w2);
	for (int pass = 0; pass < 2; pass++) {
		r = run_checks(c.router_port);
		cr_assert_eq(num(r, "findings"), 1, "pass %d: %s", pass, dump(r));
		cr_assert_eq(num(r, "flagged"), pass ? 0 : 1, "pass %d: %s", pass, dump(r));
		cr_assert_eq(num(r, "open"), 1);
		json_decref(r);
		int of_kind;
		cr_assert_eq(flagged(c.router_port, "wine_no_offer", w2, NULL, &of_kind), 1);
		cr_assert_eq(of_kind, 1, "pass %d: flagged once: %s", pass, flagged_list(c.router_port));
	}
	/* wm-ctl runs every shard's checks (nothing new to flag) and fails on the open one */
	cr_assert_eq(ctl_checks_run(&c, out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(strstr(out, "checks: 1 finding(s) open"), "%s", out);
	cr_assert_not_null(strstr(out, "0 violation(s)"), "the cluster check itself is clean: %s", out);
	cr_assert_eq(flagged(c.router_port, "wine_no_offer", w2, NULL, NULL), 1, "not flagged again");
	struct http_resp m;
	cr_assert_eq(wm_cluster_do(&c, 0, "GET", "/metrics", NULL, &m), 0);
	cr_assert_not_null(strstr(m.body, "wm_checks_open_findings{kind=\"wine_no_offer\"} 1\n"), "the home counts it");
	http_resp_free(&m);
	cr_assert_eq(wm_cluster_do(&c, 1, "GET", "/metrics", NULL, &m), 0);
	cr_assert_not_null(strstr(m.body, "wm_checks_open_findings{kind=\"wine_no_offer\"} 0\n"), "shard 1 has none");
	http_resp_free(&m);

	/* fixed: an offer of it, with stock (bounded wait for the home's replica of the level) */
	char o2[64], lv[64], body[512];
	json_decref(tc_offer(c.router_port, w.kest, w2, "\"status\":\"active\",\"network_shareable\":true", 201, o2));
	snprintf(body, sizeof(body), "{\"sku\":\"SKU-%s\",\"offer_id\":\"%s\",\"location_id\":\"%s\",\"on_hand\":4}", o2, o2,
		 w.loc_est);
	create(c.router_port, "/v1/inventory", w.kest, body, lv);
	home_sees_levels(c.router_port, 3);
	int rc = ctl_checks_run(&c, out, sizeof(out));
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert_eq(flagged(c.router_port, "wine_no_offer", w2, NULL, NULL), 1);
	cr_assert_eq(wm_cluster_do(&c, 0, "GET", "/metrics", NULL, &m), 0);
	cr_assert_not_null(strstr(m.body, "wm_checks_open_findings{kind=\"wine_no_offer\"} 0\n"), "closed");
	http_resp_free(&m);

	/* the cross-shard half: a transaction committed on the stock's shard with no order (a COMMITTED
	 * hold no leg names), seeded through shard 1's participant routes */
	snprintf(body, sizeof(body), "{\"txn\":\"r0:ord_GHOST\",\"holds\":[{\"hold_id\":\"r0:ord_GHOST.H1\","
		 "\"level_id\":\"%s\",\"qty\":2}]}", w.lv_est);
	struct http_resp hr;
	cr_assert_eq(wm_cluster_do(&c, 1, "POST", "/internal/txn/prepare", body, &hr), 0);
	cr_assert_eq(hr.status, 200, "%s", hr.body);
	http_resp_free(&hr);
	cr_assert_eq(wm_cluster_do(&c, 1, "POST", "/internal/txn/commit", "{\"txn\":\"r0:ord_GHOST\"}", &hr), 0);
	cr_assert_eq(hr.status, 200, "%s", hr.body);
	http_resp_free(&hr);
	for (int pass = 0; pass < 2; pass++) {
		cr_assert_eq(ctl_checks_run(&c, out, sizeof(out)), 1, "%s", out);
		cr_assert_not_null(strstr(out, "checks: 1 finding(s) open"), "pass %d: %s", pass, out);
		int of_kind;
		cr_assert_eq(flagged(c.router_port, "hold_leg_mismatch", "r0:ord_GHOST.H1", NULL, &of_kind), 1, "%s",
			     flagged_list(c.router_port));
		cr_assert_eq(of_kind, 1, "pass %d: flagged once", pass);
	}
	cr_assert_eq(list_findings(c.router_port, "", 1), 1, "listed through the router");
	cr_assert_eq(list_findings(c.router_port, "&kind=hold_leg_mismatch", 200), 1);
	cr_assert_eq(wm_cluster_do(&c, 0, "GET", "/metrics", NULL, &m), 0);
	cr_assert_not_null(strstr(m.body, "wm_checks_open_findings{kind=\"hold_leg_mismatch\"} 1\n"), "the home counts it");
	http_resp_free(&m);
	/* a shard's own run does not close what only the cluster report finds */
	r = run_checks(c.router_port);
	cr_assert_eq(num(r, "closed"), 0, "%s", dump(r));
	cr_assert_eq(num(r, "open"), 1, "%s", dump(r));
	json_decref(r);
	/* a truncated report closes nothing; a report of another form is refused */
	cr_assert_eq(wm_cluster_do(&c, 0, "POST", "/internal/checks/cluster", "{\"truncated\":true,\"findings\":[]}", &hr), 0);
	cr_assert_eq(hr.status, 200, "%s", hr.body);
	cr_assert_not_null(strstr(hr.body, "\"closed\":0"), "%s", hr.body);
	http_resp_free(&hr);
	static const char *const bad[] = {"{\"findings\":[]}", "{\"truncated\":false,\"findings\":[[\"wine_no_offer\",\"x\",\"\",\"t\"]]}",
					  "{\"truncated\":false,\"findings\":[[\"hold_leg_mismatch\",\"\",\"\",\"t\"]]}",
					  "{\"truncated\":false,\"findings\":[[\"hold_leg_mismatch\",\"h\",\"\"]]}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(wm_cluster_do(&c, 0, "POST", "/internal/checks/cluster", bad[i], &hr), 0);
		cr_assert_eq(hr.status, 400, "%s: %s", bad[i], hr.body);
		http_resp_free(&hr);
	}
	/* released: the next report closes it */
	cr_assert_eq(wm_cluster_do(&c, 1, "POST", "/internal/txn/release", "{\"txn\":\"r0:ord_GHOST\"}", &hr), 0);
	http_resp_free(&hr);
	cr_assert_eq(ctl_checks_run(&c, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "\"closed\":1"), "%s", out);
	cr_assert_eq(flagged(c.router_port, "hold_leg_mismatch", "r0:ord_GHOST.H1", NULL, NULL), 1);
	wm_cluster_cleanup(&c);
}
