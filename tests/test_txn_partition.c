/*
 * test_txn_partition.c -- cross-shard orders across a network partition
 * (issue 14; DESIGN.md 9 "Testing a cluster").  The test moves itself into
 * a network namespace of its own (tests/netns.h: only its loopback exists
 * there, so no packet can leave the machine) before it starts the cluster,
 * then cuts the stock's shard off with an iptables rule inside it.
 *
 * While cut: an order that needs that shard's stock cannot be prepared; the
 * router's PREPARE times out, the transaction aborts, the order fails with
 * nothing held and nothing charged.  After the heal the same order commits,
 * and nothing is left in doubt on either side.
 *
 * Cut in the commit phase (the router stalls right after forcing COMMIT,
 * errinj txn_router_stall_after_decision, and the test cuts the stock's
 * shard in that window): the participant's COMMIT times out and is sent
 * again until the heal; the order ends reserved with its units allocated.
 *
 * Cut between shards while compensating: a cross-shard order cancelled
 * while the stock's shard is cut off is cancelled and refunded at once; its
 * destination keeps asking the stock's shard to release the legs, and after
 * the heal the units are back and the whole-cluster checker is satisfied.
 */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/api_client.h"
#include "tests/cluster_harness.h"
#include "tests/netns.h"
#include "tests/order_world.h"
#include "tests/wm_test.h"

WM_TEST(txn_partition, a_cut_participant_aborts_the_order_and_the_heal_lets_it_commit, .timeout = 120)
{
	char why[256];
	cr_assert_eq(netns_enter(why, sizeof(why)), 0, "cannot enter a network namespace: %s", why);
	struct wm_cluster c;
	wm_cluster_for_orders(&c, "1000", NULL);
	struct oworld w;
	memset(&w, 0, sizeof(w));
	ow_build(&w, c.router_port, 30, 0, "FR", "DE"); /* stock on shard 1, orders to shard 2 */
	/* wait until the destination's replica shows the stock: an order the
	 * quote can route */
	char quote[512];
	snprintf(quote, sizeof(quote), "{\"destination_country\":\"DE\",\"lines\":[{\"sku\":\"%s\",\"qty\":12,\"box_units\":6}]}",
		 w.w1);
	int st = 0;
	for (int t = 0; t < 250 && st != 200; t++) {
		json_t *q = tc_call(c.router_port, "POST", "/v1/orders/quote-calculate", w.ksel, quote, &st);
		json_decref(q);
		if (st != 200)
			usleep(20 * 1000);
	}
	cr_assert_eq(st, 200, "the quote never routed");
	/* cut shard 1 off: nothing reaches its port */
	cr_assert_eq(netns_cut(c.port[1], NULL, NETNS_DROP, why, sizeof(why)), 0, "%s", why);
	json_t *j = ow_order(&w, 12, NULL, NULL, &st);
	cr_assert_eq(st, 409, "while cut: %d %s", st, json_dumps(j, 0));
	const char *fcode = json_string_value(json_object_get(j, "code"));
	cr_assert(fcode && (!strcmp(fcode, "interrupted") || !strcmp(fcode, "insufficient_stock")), "code %s", fcode);
	json_t *o = json_object_get(j, "order");
	cr_assert_str_eq(json_string_value(json_object_get(o, "status")), "failed");
	const char *pay = json_string_value(json_object_get(json_object_get(o, "payment"), "state"));
	cr_assert(pay && strcmp(pay, "captured"), "nothing stays charged: %s", pay ? pay : "(none)");
	json_decref(j);
	/* heal: the same order commits now */
	cr_assert_eq(netns_heal(c.port[1], NULL, NETNS_DROP, why, sizeof(why)), 0, "%s", why);
	char id[64] = "";
	for (int t = 0; t < 250 && !id[0]; t++) {
		j = ow_order(&w, 12, NULL, NULL, &st);
		if (st == 201)
			snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(j, "id")));
		json_decref(j);
		if (!id[0])
			usleep(20 * 1000);
	}
	cr_assert_neq(id[0], 0, "after the heal the order never committed");
	long long reserved = -1, allocated = -1, on_hand;
	for (int t = 0; t < 200 && !(reserved == 0 && allocated == 12 && wm_cluster_in_doubt(&c, 1) == 0); t++) {
		ow_level(&w, w.lv_est, &reserved, &allocated, &on_hand);
		if (!(reserved == 0 && allocated == 12))
			usleep(50 * 1000);
	}
	cr_assert_eq(allocated, 12, "only the committed order's units are allocated");
	cr_assert_eq(reserved, 0, "nothing stays prepared (the cut order's PREPARE, if it arrived, was released)");
	cr_assert_eq(wm_cluster_in_doubt(&c, 1), 0);
	wm_cluster_cleanup(&c);
}

/* Does the file at path contain needle (read whole, bounded)? */
static int log_has(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	static char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return strstr(buf, needle) != NULL;
}

/* Wait until the quote through the router can route `qty` of w1 to DE. */
static void wait_routable(struct wm_cluster *c, struct oworld *w, int qty)
{
	char quote[512];
	snprintf(quote, sizeof(quote), "{\"destination_country\":\"DE\",\"lines\":[{\"sku\":\"%s\",\"qty\":%d,\"box_units\":6}]}",
		 w->w1, qty);
	int st = 0;
	for (int t = 0; t < 250 && st != 200; t++) {
		json_decref(tc_call(c->router_port, "POST", "/v1/orders/quote-calculate", w->ksel, quote, &st));
		if (st != 200)
			usleep(20 * 1000);
	}
	cr_assert_eq(st, 200, "the quote never routed");
}

struct bg_order {
	struct oworld *w;
	int status;
	char id[64];
};

static void *order_in_background(void *arg)
{
	struct bg_order *b = arg;
	char body[512], h[256];
	ow_body(b->w, 12, NULL, body, sizeof(body));
	snprintf(h, sizeof(h), "Authorization: Bearer %s\r\n", b->w->ksel);
	struct http_resp r;
	if (http_do(b->w->port, "POST", "/v1/orders", h, body, &r) == 0) {
		b->status = r.status;
		json_t *j = json_loadb(r.body, r.body_len, 0, NULL);
		const char *id = json_string_value(json_object_get(j, "id"));
		snprintf(b->id, sizeof(b->id), "%s", id ? id : "");
		json_decref(j);
		http_resp_free(&r);
	}
	return NULL;
}

WM_TEST(txn_partition, a_participant_cut_in_the_commit_phase_commits_after_the_heal, .timeout = 120)
{
	char why[256];
	cr_assert_eq(netns_enter(why, sizeof(why)), 0, "cannot enter a network namespace: %s", why);
	struct wm_cluster c;
	static const char *const renv[] = {"WM_ERRINJ=txn_router_stall_after_decision", NULL};
	wm_cluster_for_orders(&c, "1000", renv);
	struct oworld w;
	memset(&w, 0, sizeof(w));
	ow_build(&w, c.router_port, 30, 0, "FR", "DE");
	wait_routable(&c, &w, 12);
	struct bg_order b = {.w = &w};
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, order_in_background, &b), 0);
	/* the router logged COMMIT and stalls: cut the stock's shard now */
	char logp[400];
	snprintf(logp, sizeof(logp), "%s/router.log", c.root);
	int stalled = 0;
	for (int t = 0; t < 500 && !stalled; t++) {
		stalled = log_has(logp, "fault injection: stall");
		if (!stalled)
			usleep(10 * 1000);
	}
	cr_assert(stalled, "the router never reached the decision");
	cr_assert_eq(netns_cut(c.port[1], NULL, NETNS_DROP, why, sizeof(why)), 0, "%s", why);
	/* the participant's COMMIT times out at least once (the stall, then the
	 * call's time-out) */
	int retried = 0;
	for (int t = 0; t < 150 && !retried; t++) {
		retried = log_has(logp, "step=\"commit at a participant\"") || log_has(logp, "step=commit at a participant");
		if (!retried)
			usleep(100 * 1000);
	}
	cr_assert(retried, "the participant's COMMIT never failed while cut (logs in %s)", c.root);
	cr_assert_eq(netns_heal(c.port[1], NULL, NETNS_DROP, why, sizeof(why)), 0, "%s", why);
	pthread_join(th, NULL);
	cr_assert_eq(b.status, 201, "the committed order is answered once the participant commits");
	long long reserved = -1, allocated = -1;
	/* the list is read from a replica, which catches up after the heal */
	ow_level_wait(&w, w.lv_est, 0, 12, &reserved, &allocated);
	cr_assert_eq(reserved, 0, "nothing stays prepared");
	cr_assert_eq(allocated, 12, "the order's units are allocated");
	cr_assert_eq(wm_cluster_in_doubt(&c, 1), 0);
	static char report[16384];
	cr_assert_eq(wm_cluster_check(&c, 60000, report, sizeof(report)), 0, "%s", report);
	wm_cluster_cleanup(&c);
}

WM_TEST(txn_partition, a_cancel_while_the_stock_shard_is_cut_releases_after_the_heal, .timeout = 120)
{
	char why[256];
	cr_assert_eq(netns_enter(why, sizeof(why)), 0, "cannot enter a network namespace: %s", why);
	struct wm_cluster c;
	wm_cluster_for_orders(&c, "1000", NULL);
	struct oworld w;
	memset(&w, 0, sizeof(w));
	ow_build(&w, c.router_port, 30, 0, "FR", "DE");
	wait_routable(&c, &w, 12);
	int st;
	json_t *j = ow_order(&w, 12, NULL, NULL, &st);
	cr_assert_eq(st, 201, "%s", json_dumps(j, 0));
	char id[64], path[160];
	snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(j, "id")));
	json_decref(j);
	/* the stock's shard cut off from everyone, the destination included */
	cr_assert_eq(netns_cut(c.port[1], NULL, NETNS_DROP, why, sizeof(why)), 0, "%s", why);
	snprintf(path, sizeof(path), "/v1/orders/%s/cancel", id);
	json_t *o = tc_expect(c.router_port, "POST", path, w.ksel, "{}", 200);
	cr_assert_str_eq(json_string_value(json_object_get(o, "status")), "cancelled");
	const char *pay = json_string_value(json_object_get(json_object_get(o, "payment"), "state"));
	cr_assert(pay && strcmp(pay, "captured"), "the cancel refunds at once: %s", pay ? pay : "(none)");
	json_decref(o);
	usleep(1500 * 1000); /* the destination's releases go unanswered meanwhile */
	cr_assert_eq(netns_heal(c.port[1], NULL, NETNS_DROP, why, sizeof(why)), 0, "%s", why);
	long long reserved = -1, allocated = -1;
	ow_level_wait(&w, w.lv_est, 0, 0, &reserved, &allocated);
	cr_assert_eq(allocated, 0, "the cancelled order's units came back after the heal");
	cr_assert_eq(reserved, 0);
	static char report[16384];
	int rc = 1;
	for (int t = 0; t < 100 && rc; t++) { /* the compensation is marked once the release is answered */
		rc = wm_cluster_check(&c, 60000, report, sizeof(report));
		if (rc)
			usleep(100 * 1000);
	}
	cr_assert_eq(rc, 0, "%s", report);
	wm_cluster_cleanup(&c);
}
