/*
 * test_txn_crash.c -- a cross-shard order survives the coordinator's
 * death at every step of the protocol (issue 14, DESIGN.md section 9).
 *
 * For each fault point the router dies (WM_ERRINJ, test builds) in the
 * middle of an order whose stock is on shard 1 (FR) and destination on
 * shard 2 (DE); it is restarted at the same address; recovery -- the
 * router's re-drive of a logged COMMIT, or the participants and the
 * destination asking it past --txn-timeout-ms and hearing "abort" -- must
 * bring the order to rest with the invariants:
 *   before the decision: the order failed, every unit back (reserved 0,
 *     allocated 0), the charge refunded or voided;
 *   after it: the order reserved, its units allocated, nothing reserved;
 * and nothing left in doubt on the stock's shard.
 */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/api_client.h"
#include "tests/cluster_harness.h"
#include "tests/order_world.h"
#include "tests/wm_test.h"

struct crash_case {
	const char *point;
	int committed; /* 1: after the decision, the order must end reserved */
	int proc;      /* who dies: -1 the router, 1 the stock's shard (FR), 2 the destination's (DE) */
	int also;      /* a shard killed at the same moment (1: the stock's), 0 for none */
};

/* Poll the order through the router until it is at rest; its status. */
static void wait_rest(struct oworld *w, const char *id, char *status, size_t n)
{
	char path[128];
	snprintf(path, sizeof(path), "/v1/orders/%s", id);
	for (int t = 0; t < 400; t++) {
		int st;
		json_t *o = tc_call(w->port, "GET", path, NULL, NULL, &st);
		const char *s = o ? json_string_value(json_object_get(o, "status")) : NULL;
		snprintf(status, n, "%s", s ? s : "");
		json_decref(o);
		if (!strcmp(status, "reserved") || !strcmp(status, "failed"))
			return;
		usleep(50 * 1000);
	}
}

/* The newest order id of the list (the one the crash interrupted). */
static void only_order(struct oworld *w, char *id, size_t n)
{
	id[0] = 0;
	for (int t = 0; t < 100 && !id[0]; t++) {
		int st;
		json_t *l = tc_call(w->port, "GET", "/v1/orders?page_size=5", NULL, NULL, &st);
		json_t *o = l ? json_array_get(json_object_get(l, "data"), 0) : NULL;
		if (o)
			snprintf(id, n, "%s", json_string_value(json_object_get(o, "id")));
		json_decref(l);
		if (!id[0])
			usleep(50 * 1000);
	}
}

static void run_case(const struct crash_case *k)
{
	struct wm_cluster c;
	wm_cluster_for_orders(&c, "1000", NULL);
	struct oworld w;
	memset(&w, 0, sizeof(w));
	ow_build(&w, c.router_port, 30, 0, "FR", "DE");
	/* the order, with the process set to die at the point: restart it so */
	char env[96];
	snprintf(env, sizeof(env), "WM_ERRINJ=%s", k->point);
	const char *renv[] = {env, NULL};
	if (k->proc < 0) {
		wm_cluster_router_kill9(&c);
		c.router_env = renv;
		cr_assert_eq(wm_cluster_router_start(&c), 0, "the router did not restart (logs in %s)", c.router_dir);
		c.router_env = NULL;
	} else {
		wm_cluster_kill9(&c, (unsigned)k->proc);
		c.env = renv;
		cr_assert_eq(wm_cluster_start(&c, (unsigned)k->proc), 0, "shard %d did not restart", k->proc);
		c.env = NULL;
	}
	char body[512];
	ow_body(&w, 12, NULL, body, sizeof(body));
	struct http_resp r;
	int rc, st = 0;
	char auth[512];
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\nIdempotency-Key: crash-%s\r\n", w.ksel,
		 k->point); /* the seller orders, with a key it will retry with */
	/* a 422 stores nothing: the destination's replica of the FR stock may lag */
	for (int t = 0; t < 250; t++) {
		rc = http_do(c.router_port, "POST", "/v1/orders", auth, body, &r);
		st = rc == 0 ? r.status : 0;
		if (rc == 0)
			http_resp_free(&r);
		if (st != 422)
			break;
		usleep(20 * 1000);
	}
	cr_log_info("%s: the client got %d before the crash", k->point, st);
	/* the process is gone (or about to be): reap it, start it again */
	pid_t pid = k->proc < 0 ? c.router_pid : c.shard[k->proc].pid;
	for (int t = 0; t < 100 && pid > 0 && waitpid(pid, NULL, WNOHANG) == 0; t++)
		usleep(20 * 1000);
	if (k->also) { /* a second process dies with it, and comes back first */
		wm_cluster_kill9(&c, (unsigned)k->also);
		cr_assert_eq(wm_cluster_start(&c, (unsigned)k->also), 0, "shard %d did not restart", k->also);
	}
	if (k->proc < 0) {
		wm_cluster_router_kill9(&c);
		cr_assert_eq(wm_cluster_router_start(&c), 0, "the router did not restart (logs in %s)", c.router_dir);
	} else {
		wm_cluster_kill9(&c, (unsigned)k->proc);
		cr_assert_eq(wm_cluster_start(&c, (unsigned)k->proc), 0, "shard %d did not restart", k->proc);
	}
	char id[64], status[32] = "";
	only_order(&w, id, sizeof(id));
	cr_assert_neq(id[0], 0, "%s: no order stored", k->point);
	wait_rest(&w, id, status, sizeof(status));
	long long reserved = -1, allocated = -1, on_hand = -1;
	for (int t = 0; t < 200; t++) {
		ow_level(&w, w.lv_est, &reserved, &allocated, &on_hand);
		if (reserved == 0 && allocated == (k->committed ? 12 : 0) && wm_cluster_in_doubt(&c, 1) == 0)
			break;
		usleep(50 * 1000);
	}
	cr_assert_str_eq(status, k->committed ? "reserved" : "failed", "%s: order %s", k->point, id);
	/* the client retries with its Idempotency-Key: the same order, as it is now */
	cr_assert_eq(http_do(c.router_port, "POST", "/v1/orders", auth, body, &r), 0);
	cr_assert(strstr(r.body, id), "%s: the retry did not return order %s: %d %s", k->point, id, r.status, r.body);
	cr_assert_eq(r.status, k->committed ? 201 : 409, "%s: retry %d %s", k->point, r.status, r.body);
	http_resp_free(&r);
	cr_assert_eq(reserved, 0, "%s: units still prepared", k->point);
	cr_assert_eq(allocated, k->committed ? 12 : 0, "%s: allocated %lld", k->point, allocated);
	cr_assert_eq(wm_cluster_in_doubt(&c, 1), 0, "%s: shard 1 still in doubt", k->point);
	/* the whole-cluster checker agrees */
	static char report[16384];
	cr_assert_eq(wm_cluster_check(&c, 60000, report, sizeof(report)), 0, "%s: wm-ctl cluster check: %s", k->point,
		     report);
	if (!k->committed) {
		char path[128];
		snprintf(path, sizeof(path), "/v1/orders/%s", id);
		json_t *o = tc_expect(c.router_port, "GET", path, NULL, NULL, 200);
		const char *pay = json_string_value(json_object_get(json_object_get(o, "payment"), "state"));
		cr_assert(pay && (!strcmp(pay, "refunded") || !strcmp(pay, "voided") || !strcmp(pay, "pending")),
			  "%s: payment %s", k->point, pay ? pay : "(none)");
		json_decref(o);
	}
	wm_cluster_cleanup(&c);
}

#define CRASH_CASE2(name, point, committed, proc, also)                                      \
	WM_TEST(txn_crash, name, .timeout = 120)                                             \
	{                                                                                   \
		static const struct crash_case k = {point, committed, proc, also};          \
		run_case(&k);                                                               \
	}
#define CRASH_CASE(name, point, committed, proc) CRASH_CASE2(name, point, committed, proc, 0)

CRASH_CASE(router_dies_after_every_yes_vote, "txn_router_crash_after_prepared", 0, -1)
CRASH_CASE(router_dies_after_the_charge, "txn_router_crash_after_charged", 0, -1)
CRASH_CASE(router_dies_after_logging_commit, "txn_router_crash_after_decision", 1, -1)
CRASH_CASE(router_dies_after_the_destination_commits, "txn_router_crash_after_commit_dest", 1, -1)
CRASH_CASE(router_dies_before_end, "txn_router_crash_before_end", 1, -1)
CRASH_CASE(participant_dies_after_its_forced_yes, "txn_part_crash_after_prepare", 0, 1)
CRASH_CASE(participant_dies_after_committing, "txn_part_crash_after_commit", 1, 1)
CRASH_CASE(destination_dies_after_storing_the_order, "order_crash_after_placed", 0, 2)
CRASH_CASE(destination_dies_after_the_charge, "txn_dest_crash_after_charge", 0, 2)
CRASH_CASE(destination_dies_after_confirming, "txn_dest_crash_after_confirmed", 1, 2)
/* the router and the stock's shard at once */
CRASH_CASE2(router_and_participant_die_after_every_yes_vote, "txn_router_crash_after_prepared", 0, -1, 1)
CRASH_CASE2(router_and_participant_die_after_logging_commit, "txn_router_crash_after_decision", 1, -1, 1)

/*
 * A coordinator gone for good (killed after every yes vote, never
 * restarted; the shards would wait an hour before asking): the operator
 * aborts the transaction with wm-ctl txn resolve, and every unit comes back
 * and the order fails.  While a router has a record, resolve is refused.
 */
WM_TEST(txn_crash, an_operator_resolves_a_transaction_whose_router_is_gone, .timeout = 120)
{
	struct wm_cluster c;
	static const char *const renv[] = {"WM_ERRINJ=txn_router_crash_after_prepared", NULL};
	wm_cluster_for_orders(&c, "3600000", renv);
	struct oworld w;
	memset(&w, 0, sizeof(w));
	ow_build(&w, c.router_port, 30, 0, "FR", "DE");
	char body[512], auth[256];
	ow_body(&w, 12, NULL, body, sizeof(body));
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\n", w.ksel);
	struct http_resp r;
	int st = 422;
	for (int t = 0; t < 250 && st == 422; t++) {
		int rc = http_do(c.router_port, "POST", "/v1/orders", auth, body, &r);
		st = rc == 0 ? r.status : 0;
		if (rc == 0)
			http_resp_free(&r);
		if (st == 422)
			usleep(20 * 1000);
	}
	wm_cluster_router_kill9(&c); /* gone for good: the level is read at shard 1 itself */
	char path[160], out[8192], args[1024];
	snprintf(path, sizeof(path), "/v1/inventory/%s", w.lv_est);
	cr_assert_eq(wm_cluster_do(&c, 1, "GET", path, NULL, &r), 0);
	cr_assert(strstr(r.body, "\"reserved\":12"), "the holds are prepared: %s", r.body);
	http_resp_free(&r);
	/* the transaction id: the order at the destination (shard 2) */
	cr_assert_eq(wm_cluster_do(&c, 2, "GET", "/v1/orders?page_size=1", NULL, &r), 0);
	const char *at = strstr(r.body, "\"id\":\"ord_DE_");
	cr_assert_not_null(at, "%s", r.body);
	char order[64];
	snprintf(order, sizeof(order), "%.*s", (int)strcspn(at + 6, "\""), at + 6);
	http_resp_free(&r);
	snprintf(args, sizeof(args), "txn resolve r0:%s abort --shard-map %s --cluster-secret-file %s", order, c.map_path,
		 c.secret_path);
	int rc = wm_ctl_run(args, out, sizeof(out));
	cr_assert_eq(rc, 0, "wm-ctl txn resolve: %s", out);
	cr_assert_eq(wm_cluster_do(&c, 1, "GET", path, NULL, &r), 0);
	cr_assert(strstr(r.body, "\"reserved\":0") && strstr(r.body, "\"allocated\":0"), "units back: %s", r.body);
	http_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/orders/%s", order);
	cr_assert_eq(wm_cluster_do(&c, 2, "GET", path, NULL, &r), 0);
	cr_assert(strstr(r.body, "\"status\":\"failed\""), "%s", r.body);
	http_resp_free(&r);
	/* again: idempotent */
	cr_assert_eq(wm_ctl_run(args, out, sizeof(out)), 0, "a second resolve: %s", out);
	/* a router with a record refuses the operator: start it again, order
	 * afresh (it commits), then try to abort that one */
	cr_assert_eq(wm_cluster_router_start(&c), 0, "the router did not restart (logs in %s)", c.router_dir);
	char id2[64] = "";
	for (int t = 0; t < 250 && !id2[0]; t++) {
		json_t *j = ow_order(&w, 6, NULL, NULL, &st);
		if (st == 201)
			snprintf(id2, sizeof(id2), "%s", json_string_value(json_object_get(j, "id")));
		json_decref(j);
		if (!id2[0])
			usleep(20 * 1000);
	}
	cr_assert_neq(id2[0], 0, "the second order");
	snprintf(args, sizeof(args), "txn resolve r0:%s abort --shard-map %s --cluster-secret-file %s", id2, c.map_path,
		 c.secret_path);
	cr_assert_eq(wm_ctl_run(args, out, sizeof(out)), 1, "resolve must be refused: %s", out);
	cr_assert(strstr(out, "still has a record"), "%s", out);
	wm_cluster_cleanup(&c);
}

/* The checker can fail: a PREPARED hold no transaction is in progress for
 * (its router has no record of it) is a violation until it is aborted. */
WM_TEST(txn_crash, the_cluster_checker_finds_a_prepared_hold_without_a_transaction, .timeout = 120)
{
	struct wm_cluster c;
	wm_cluster_for_orders(&c, "3600000", NULL);
	struct oworld w;
	memset(&w, 0, sizeof(w));
	ow_build(&w, c.router_port, 30, 0, "FR", "DE");
	static char report[16384];
	cr_assert_eq(wm_cluster_check(&c, 0, report, sizeof(report)), 0, "a fresh cluster: %s", report);
	/* wm-ctl cluster status finds the router through the map's router line */
	char args[1024], want[64];
	snprintf(args, sizeof(args), "cluster status --shard-map %s --cluster-secret-file %s", c.map_path, c.secret_path);
	cr_assert_eq(wm_ctl_run(args, report, sizeof(report)), 0, "%s", report);
	snprintf(want, sizeof(want), "router 127.0.0.1:%d {\"process\":\"wm-router\"", c.router_port);
	cr_assert(strstr(report, want), "the map's router is not listed: %s", report);
	char body[512];
	snprintf(body, sizeof(body), "{\"txn\":\"r0:ord_ORPHAN\",\"holds\":[{\"hold_id\":\"r0:ord_ORPHAN.H1\","
		 "\"level_id\":\"%s\",\"qty\":3}]}", w.lv_est);
	struct http_resp r;
	cr_assert_eq(wm_cluster_do(&c, 1, "POST", "/internal/txn/prepare", body, &r), 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	http_resp_free(&r);
	cr_assert_eq(wm_cluster_check(&c, 0, report, sizeof(report)), 1, "the orphan must be found: %s", report);
	cr_assert(strstr(report, "r0:ord_ORPHAN"), "%s", report);
	cr_assert_eq(wm_cluster_do(&c, 1, "POST", "/internal/txn/abort", "{\"txn\":\"r0:ord_ORPHAN\"}", &r), 0);
	http_resp_free(&r);
	cr_assert_eq(wm_cluster_check(&c, 0, report, sizeof(report)), 0, "after the abort: %s", report);
	wm_cluster_cleanup(&c);
}

/*
 * The checker's history: a level's on hand + consumed must equal what API
 * writes put in (its stock.changed events).  Shard 1 restarted with a bug
 * injected (inv_lose_stock_event: a PATCH's event is not written) changes
 * on_hand 30 -> 40 unseen by the history: wm-ctl cluster check exits 1 and
 * names the level with both figures.  A correct PATCH does not trip it.
 */
WM_TEST(txn_crash, the_cluster_checker_finds_units_the_history_does_not_explain, .timeout = 120)
{
	struct wm_cluster c;
	wm_cluster_for_orders(&c, "3600000", NULL);
	struct oworld w;
	memset(&w, 0, sizeof(w));
	ow_build(&w, c.router_port, 30, 0, "FR", "DE");
	static char report[16384];
	char path[128];
	snprintf(path, sizeof(path), "/v1/inventory/%s", w.lv_est);
	json_decref(tc_expect(c.router_port, "PATCH", path, NULL, "{\"on_hand\":35}", 200));
	cr_assert_eq(wm_cluster_check(&c, 0, report, sizeof(report)), 0, "a PATCH with its event: %s", report);
	static const char *const env[] = {"WM_ERRINJ=inv_lose_stock_event", NULL};
	wm_cluster_kill9(&c, 1);
	c.env = env;
	cr_assert_eq(wm_cluster_start(&c, 1), 0);
	c.env = NULL;
	json_decref(tc_expect(c.router_port, "PATCH", path, NULL, "{\"on_hand\":40}", 200));
	cr_assert_eq(wm_cluster_check(&c, 0, report, sizeof(report)), 1, "the lost event must be found: %s", report);
	char want[160];
	snprintf(want, sizeof(want), "level %s: on_hand 40 + consumed 0 != initial + added 35", w.lv_est);
	cr_assert(strstr(report, want), "%s", report);
	wm_cluster_cleanup(&c);
}

/*
 * Idempotency-Key from any router (issue 14, item 3): the router the client
 * first asked dies mid-protocol; the client retries the same key through
 * the other router of the map and gets the same order -- at once, in
 * whatever state it is in, and once the first router is back (its re-drive
 * of a logged COMMIT, or the destination's question answered "abort") the
 * same order at rest, through either router.
 */
static void retry_through_another_router(const char *point, int committed)
{
	struct wm_cluster c;
	wm_cluster_orders_config(&c, "1000");
	wm_cluster_add_router2(&c);
	wm_cluster_start_all(&c);
	char env[96];
	snprintf(env, sizeof(env), "WM_ERRINJ=%s", point);
	const char *renv[] = {env, NULL};
	c.router_env = renv;
	cr_assert_eq(wm_cluster_router_start(&c), 0, "router 0 did not start (logs in %s)", c.root);
	c.router_env = NULL;
	cr_assert_eq(wm_cluster_router2_start(&c), 0, "router 1 did not start (logs in %s)", c.root);
	struct oworld w;
	memset(&w, 0, sizeof(w));
	ow_build(&w, c.router_port, 30, 0, "FR", "DE");
	char body[512], auth[512];
	ow_body(&w, 12, NULL, body, sizeof(body));
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\nIdempotency-Key: two-routers-%s\r\n", w.ksel, point);
	struct http_resp r;
	int rc, st = 0;
	for (int t = 0; t < 250; t++) { /* 422 until the destination's replica shows the stock */
		rc = http_do(c.router_port, "POST", "/v1/orders", auth, body, &r);
		st = rc == 0 ? r.status : 0;
		if (rc == 0)
			http_resp_free(&r);
		if (st != 422)
			break;
		usleep(20 * 1000);
	}
	cr_assert_eq(st, 0, "%s: router 0 answered %d instead of dying", point, st);
	for (int t = 0; t < 100 && waitpid(c.router_pid, NULL, WNOHANG) == 0; t++)
		usleep(20 * 1000);
	c.router_pid = 0;
	/* the same key through router 1, while router 0 is down: the same order */
	char id[64] = "";
	for (int t = 0; t < 250 && !id[0]; t++) {
		if (http_do(c.router2_port, "POST", "/v1/orders", auth, body, &r) == 0) {
			json_t *j = json_loadb(r.body, r.body_len, 0, NULL);
			json_t *o = r.status == 201 ? j : json_object_get(j, "order");
			const char *s = json_string_value(json_object_get(o, "id"));
			if ((r.status == 201 || r.status == 409) && s)
				snprintf(id, sizeof(id), "%s", s);
			json_decref(j);
			http_resp_free(&r);
		}
		if (!id[0])
			usleep(20 * 1000); /* router 1's replica of the seller's key may lag */
	}
	cr_assert_neq(id[0], 0, "%s: router 1 never answered the retry with an order", point);
	/* router 0 back: the transaction ends; the retry through either router
	 * returns the same order at rest */
	cr_assert_eq(wm_cluster_router_start(&c), 0, "router 0 did not restart (logs in %s)", c.root);
	w.port = c.router2_port;
	char status[32];
	wait_rest(&w, id, status, sizeof(status));
	cr_assert_str_eq(status, committed ? "reserved" : "failed", "%s: order %s", point, id);
	const int ports[] = {c.router2_port, c.router_port};
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(http_do(ports[i], "POST", "/v1/orders", auth, body, &r), 0);
		cr_assert_eq(r.status, committed ? 201 : 409, "%s: retry %d: %d %s", point, i, r.status, r.body);
		cr_assert(strstr(r.body, id), "%s: the retry did not return order %s: %s", point, id, r.body);
		http_resp_free(&r);
	}
	/* exactly one order */
	json_t *l = tc_expect(c.router2_port, "GET", "/v1/orders?page_size=50", NULL, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(l, "data")), 1, "one key, one order");
	json_decref(l);
	static char report[16384];
	cr_assert_eq(wm_cluster_check(&c, 60000, report, sizeof(report)), 0, "%s: %s", point, report);
	wm_cluster_cleanup(&c);
}

WM_TEST(txn_crash, a_retry_through_another_router_returns_the_aborted_order, .timeout = 120)
{
	retry_through_another_router("txn_router_crash_after_prepared", 0);
}

WM_TEST(txn_crash, a_retry_through_another_router_returns_the_committed_order, .timeout = 120)
{
	retry_through_another_router("txn_router_crash_after_decision", 1);
}

/*
 * The checker's cross-shard half: orders' legs against the holds on the
 * stock's shard.  A cross-shard order at rest is clean; a COMMITTED hold
 * no order's leg names (a transaction committed behind the orders' back)
 * is a violation naming the hold; and a participant that answers a
 * cancelled order's release without releasing (WM_ERRINJ
 * txn_release_forgets on shard 1, the stock's) leaves the order
 * compensated and its hold COMMITTED -- a violation naming the order,
 * which the per-level check cannot see (the level still matches its holds).
 */
WM_TEST(txn_crash, the_cluster_checker_matches_order_legs_with_their_holds, .timeout = 120)
{
	struct wm_cluster c;
	wm_cluster_for_orders(&c, "3600000", NULL);
	struct oworld w;
	memset(&w, 0, sizeof(w));
	ow_build(&w, c.router_port, 30, 0, "FR", "DE");
	static char report[16384];
	int st;
	json_t *o = ow_order(&w, 4, NULL, NULL, &st);
	cr_assert_eq(st, 201);
	char id[64], path[160];
	snprintf(id, sizeof(id), "%s", tc_jstr(o, "id"));
	json_decref(o);
	cr_assert_eq(wm_cluster_check(&c, 0, report, sizeof(report)), 0, "a reserved cross-shard order: %s", report);
	cr_assert(strstr(report, "holds: ") && strstr(report, "0 violation(s)"), "%s", report);

	/* a transaction committed on the stock's shard with no order */
	char body[512];
	snprintf(body, sizeof(body), "{\"txn\":\"r0:ord_GHOST\",\"holds\":[{\"hold_id\":\"r0:ord_GHOST.H1\","
		 "\"level_id\":\"%s\",\"qty\":2}]}", w.lv_est);
	struct http_resp r;
	cr_assert_eq(wm_cluster_do(&c, 1, "POST", "/internal/txn/prepare", body, &r), 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	http_resp_free(&r);
	cr_assert_eq(wm_cluster_do(&c, 1, "POST", "/internal/txn/commit", "{\"txn\":\"r0:ord_GHOST\"}", &r), 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	http_resp_free(&r);
	cr_assert_eq(wm_cluster_check(&c, 0, report, sizeof(report)), 1, "the ghost must be found: %s", report);
	cr_assert(strstr(report, "hold r0:ord_GHOST.H1 on shard 1 is COMMITTED (2 units) and no reserved order's leg"),
		  "%s", report);
	cr_assert_eq(wm_cluster_do(&c, 1, "POST", "/internal/txn/release", "{\"txn\":\"r0:ord_GHOST\"}", &r), 0);
	http_resp_free(&r);
	cr_assert_eq(wm_cluster_check(&c, 0, report, sizeof(report)), 0, "after its release: %s", report);

	/* a participant that forgets a cancelled order's release */
	static const char *const env[] = {"WM_ERRINJ=txn_release_forgets", NULL};
	wm_cluster_kill9(&c, 1);
	c.env = env;
	cr_assert_eq(wm_cluster_start(&c, 1), 0);
	c.env = NULL;
	snprintf(path, sizeof(path), "/v1/orders/%s/cancel", id);
	json_decref(tc_expect(c.router_port, "POST", path, w.ksel, "{}", 200));
	snprintf(path, sizeof(path), "/v1/orders/%s", id);
	int compensated = 0;
	for (int t = 0; t < 200 && !compensated; t++) {
		json_t *x = tc_expect(c.router_port, "GET", path, NULL, NULL, 200);
		compensated = json_is_true(json_object_get(json_object_get(x, "saga"), "compensated"));
		json_decref(x);
		if (!compensated)
			usleep(50 * 1000);
	}
	cr_assert(compensated, "the cancel's compensation did not finish");
	cr_assert_eq(wm_cluster_check(&c, 0, report, sizeof(report)), 1, "the forgotten release must be found: %s",
		     report);
	char want[200];
	snprintf(want, sizeof(want), "(4 units) but order %s's leg is shipped, released or compensated", id);
	cr_assert(strstr(report, want), "%s", report);
	wm_cluster_cleanup(&c);
}
