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
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/api_client.h"
#include "tests/cluster_harness.h"
#include "tests/netns.h"
#include "tests/order_world.h"
#include "tests/wm_test.h"

static long in_doubt(struct wm_cluster *c, unsigned i)
{
	struct http_resp r;
	if (http_do(c->port[i], "GET", "/metrics", NULL, NULL, &r))
		return -1;
	const char *at = strstr(r.body, "\nwm_txn_in_doubt ");
	long v = at ? strtol(at + 17, NULL, 10) : -1;
	http_resp_free(&r);
	return v;
}

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
	for (int t = 0; t < 200 && !(reserved == 0 && allocated == 12 && in_doubt(&c, 1) == 0); t++) {
		ow_level(&w, w.lv_est, &reserved, &allocated, &on_hand);
		if (!(reserved == 0 && allocated == 12))
			usleep(50 * 1000);
	}
	cr_assert_eq(allocated, 12, "only the committed order's units are allocated");
	cr_assert_eq(reserved, 0, "nothing stays prepared (the cut order's PREPARE, if it arrived, was released)");
	cr_assert_eq(in_doubt(&c, 1), 0);
	wm_cluster_cleanup(&c);
}
