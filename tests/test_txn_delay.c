/*
 * test_txn_delay.c -- cross-shard orders over a slow link (issue 14;
 * DESIGN.md 9: "delays come from a small proxy of the project's own").
 * The stock's shard (FR) is reached by everyone -- router and shards --
 * through tests/tools/wm-delay-proxy, listening where the map names it.
 *
 * A slow participant (200 ms each way) only slows the order: it commits.
 * One slower than the router's call time-out (6 s against 5 s) makes the
 * PREPARE time out: the order aborts, and whatever the late PREPARE held is
 * released -- by the abort, or by the participant asking the router once
 * in doubt.  Nothing is left held or in doubt once the link is fast again.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/api_client.h"
#include "tests/cluster_harness.h"
#include "tests/delay_proxy.h"
#include "tests/order_world.h"
#include "tests/wm_test.h"

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

WM_TEST(txn_delay, a_slow_participant_commits_and_one_past_the_time_out_aborts, .timeout = 180)
{
	struct wm_cluster c;
	wm_cluster_init(&c, 3);
	static const char *const extra[] = {"--key-rate-rps", "1000000", "--key-rate-burst", "1000000",
					    "--txn-timeout-ms", "1000", NULL};
	for (int i = 0; extra[i]; i++)
		c.extra[i] = extra[i];
	for (int i = 0; i < 4; i++)
		c.router_extra[i] = extra[i];
	/* shard 1 really listens elsewhere; the proxy takes its map address */
	c.listen_port[1] = wm_cluster_free_port();
	char listen[32], target[32], msg[512];
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", c.port[1]);
	snprintf(target, sizeof(target), "127.0.0.1:%d", c.listen_port[1]);
	const char *pargs[] = {"--listen", listen, "--target", target, "--delay-ms", "0", "--control", "127.0.0.1:0", NULL};
	struct wm_delay_proxy px;
	cr_assert_eq(wm_delay_proxy_run(&px, pargs, msg, sizeof(msg)), -1, "the proxy did not start: %s", msg);
	wm_cluster_start_all(&c);
	cr_assert_eq(wm_cluster_router_start(&c), 0, "the router did not start (logs in %s)", c.router_dir);
	struct oworld w;
	memset(&w, 0, sizeof(w));
	ow_build(&w, c.router_port, 30, 0, "FR", "DE");
	char out[256];
	/* slow: 200 ms each way -- the order commits, only later */
	cr_assert_eq(wm_delay_proxy_control(&px, "delay 200", out, sizeof(out)), 0);
	int st = 0;
	char id[64] = "";
	long long t0 = now_ms(), took = 0;
	for (int t = 0; t < 100 && !id[0]; t++) {
		t0 = now_ms();
		json_t *j = ow_order(&w, 12, NULL, NULL, &st);
		took = now_ms() - t0;
		if (st == 201)
			snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(j, "id")));
		json_decref(j);
		if (st == 422)
			usleep(50 * 1000); /* the destination's replica of the stock is late too */
		else
			cr_assert_eq(st, 201, "a slow participant must not stop the order");
	}
	cr_assert_neq(id[0], 0);
	cr_assert_geq(took, 400, "the order crossed the slow link at least twice (%lld ms)", took);
	/* slower than the router's call time-out: the order aborts */
	cr_assert_eq(wm_delay_proxy_control(&px, "delay 6000", out, sizeof(out)), 0);
	json_t *j = ow_order(&w, 6, NULL, NULL, &st);
	cr_assert_eq(st, 409, "past the time-out: %d %s", st, json_dumps(j, 0));
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "order"), "status")), "failed");
	json_decref(j);
	/* fast again: whatever the late PREPARE held is released */
	cr_assert_eq(wm_delay_proxy_control(&px, "delay 0", out, sizeof(out)), 0);
	long long reserved = -1, allocated = -1, on_hand;
	for (int t = 0; t < 400; t++) {
		ow_level(&w, w.lv_est, &reserved, &allocated, &on_hand);
		if (reserved == 0 && allocated == 12 && wm_cluster_in_doubt(&c, 1) == 0)
			break;
		usleep(50 * 1000);
	}
	cr_assert_eq(reserved, 0, "the late PREPARE's holds were released");
	cr_assert_eq(allocated, 12, "only the committed order's units are allocated");
	cr_assert_eq(wm_cluster_in_doubt(&c, 1), 0);
	wm_cluster_cleanup(&c);
	wm_delay_proxy_stop(&px);
}
