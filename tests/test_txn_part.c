/*
 * test_txn_part.c -- a shard as a participant of cross-shard orders
 * (engine/stock/txn_part.h): prepare votes yes only with every hold
 * placed (and nothing held on a no), commit and abort are idempotent and
 * move exactly the units they should, a replica's stock is never held, a
 * transaction's hold cannot be moved by the public hold routes, and the
 * in-doubt gauge counts what is prepared.  Real processes: a router in
 * front of three shards; the participant calls are signed as a router's.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/api_client.h"
#include "tests/cluster_harness.h"
#include "tests/order_world.h"
#include "tests/wm_test.h"

static void up(struct wm_cluster *c, struct oworld *w)
{
	wm_cluster_init(c, 3);
	static const char *const rate[] = {"--key-rate-rps", "1000000", "--key-rate-burst", "1000000", NULL};
	for (int i = 0; rate[i]; i++)
		c->extra[i] = c->router_extra[i] = rate[i];
	wm_cluster_start_all(c);
	cr_assert_eq(wm_cluster_router_start(c), 0, "the router did not start (logs in %s)", c->router_dir);
	memset(w, 0, sizeof(*w));
	ow_build(w, c->router_port, 40, 0, "FR", "FR"); /* the estate's 40 units on shard 1 (FR) */
}

/* A signed internal POST to shard i: the status, the body into out. */
static int internal(struct wm_cluster *c, unsigned i, const char *path, const char *body, char *out, size_t n)
{
	struct http_resp r;
	cr_assert_eq(wm_cluster_do(c, i, "POST", path, body, &r), 0);
	int st = r.status;
	snprintf(out, n, "%s", r.body ? r.body : "");
	http_resp_free(&r);
	return st;
}

/* The level's reserved and allocated units (read at its shard through the router). */
static void level_units(struct wm_cluster *c, const char *level, long long *reserved, long long *allocated)
{
	char path[128];
	snprintf(path, sizeof(path), "/v1/inventory/%s", level);
	json_t *j = tc_expect(c->router_port, "GET", path, NULL, NULL, 200);
	*reserved = json_integer_value(json_object_get(j, "reserved"));
	*allocated = json_integer_value(json_object_get(j, "allocated"));
	json_decref(j);
}

static long shard_metric(struct wm_cluster *c, unsigned i, const char *name)
{
	struct http_resp r;
	cr_assert_eq(http_do(c->port[i], "GET", "/metrics", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	const char *at = strstr(r.body, name);
	long v = at ? strtol(at + strlen(name), NULL, 10) : -1;
	http_resp_free(&r);
	return v;
}

static void prepare_body(char *out, size_t n, const char *txn, const char *hold, const char *level, int qty)
{
	snprintf(out, n, "{\"txn\":\"%s\",\"holds\":[{\"hold_id\":\"%s\",\"level_id\":\"%s\",\"qty\":%d}]}", txn, hold,
		 level, qty);
}

WM_TEST(txn_part, prepare_commit_abort_move_exactly_their_units, .timeout = 120)
{
	struct wm_cluster c;
	struct oworld w;
	up(&c, &w);
	char body[512], out[2048];
	long long res, alloc;
	/* yes: 6 units prepared, in doubt until the decision */
	prepare_body(body, sizeof(body), "r0:ord_T1", "r0:ord_T1.H1", w.lv_est, 6);
	cr_assert_eq(internal(&c, 1, "/internal/txn/prepare", body, out, sizeof(out)), 200, "%s", out);
	cr_assert(strstr(out, "\"vote\":\"yes\""), "%s", out);
	level_units(&c, w.lv_est, &res, &alloc);
	cr_assert_eq(res, 6);
	cr_assert_eq(alloc, 0);
	cr_assert_eq(shard_metric(&c, 1, "\nwm_txn_in_doubt "), 1);
	/* the same prepare again (a retried message): the same vote, nothing more held */
	cr_assert_eq(internal(&c, 1, "/internal/txn/prepare", body, out, sizeof(out)), 200, "%s", out);
	level_units(&c, w.lv_est, &res, &alloc);
	cr_assert_eq(res, 6);
	/* the public hold routes cannot move a transaction's hold */
	tc_expect_code(c.router_port, "POST", "/v1/holds/r0:ord_T1.H1/release", NULL, NULL, 409, "hold_in_transaction");
	/* commit: reserved -> allocated, twice is once */
	cr_assert_eq(internal(&c, 1, "/internal/txn/commit", "{\"txn\":\"r0:ord_T1\"}", out, sizeof(out)), 200, "%s",
		     out);
	cr_assert_eq(internal(&c, 1, "/internal/txn/commit", "{\"txn\":\"r0:ord_T1\"}", out, sizeof(out)), 200, "%s",
		     out);
	level_units(&c, w.lv_est, &res, &alloc);
	cr_assert_eq(res, 0);
	cr_assert_eq(alloc, 6);
	cr_assert_eq(shard_metric(&c, 1, "\nwm_txn_in_doubt "), 0);
	/* an abort after the commit is refused (the decision is final) */
	cr_assert_eq(internal(&c, 1, "/internal/txn/abort", "{\"txn\":\"r0:ord_T1\"}", out, sizeof(out)), 409, "%s",
		     out);
	/* no: more than the ATP (34 left); nothing held, the true ATP told */
	prepare_body(body, sizeof(body), "r0:ord_T2", "r0:ord_T2.H1", w.lv_est, 35);
	cr_assert_eq(internal(&c, 1, "/internal/txn/prepare", body, out, sizeof(out)), 409, "%s", out);
	cr_assert(strstr(out, "\"vote\":\"no\""), "%s", out);
	cr_assert(strstr(out, "\"atp\":34"), "the short level's true ATP: %s", out);
	level_units(&c, w.lv_est, &res, &alloc);
	cr_assert_eq(res, 0, "a no vote holds nothing");
	/* prepare then abort: released; abort again and an unknown abort are no-ops */
	prepare_body(body, sizeof(body), "r0:ord_T3", "r0:ord_T3.H1", w.lv_est, 4);
	cr_assert_eq(internal(&c, 1, "/internal/txn/prepare", body, out, sizeof(out)), 200, "%s", out);
	cr_assert_eq(internal(&c, 1, "/internal/txn/abort", "{\"txn\":\"r0:ord_T3\"}", out, sizeof(out)), 200, "%s",
		     out);
	cr_assert(strstr(out, "\"released\":1"), "%s", out);
	cr_assert_eq(internal(&c, 1, "/internal/txn/abort", "{\"txn\":\"r0:ord_T3\"}", out, sizeof(out)), 200, "%s",
		     out);
	cr_assert(strstr(out, "\"released\":0"), "%s", out);
	cr_assert_eq(internal(&c, 1, "/internal/txn/abort", "{\"txn\":\"r0:ord_NEVER\"}", out, sizeof(out)), 200);
	level_units(&c, w.lv_est, &res, &alloc);
	cr_assert_eq(res, 0);
	cr_assert_eq(alloc, 6);
	/* a commit after an abort is refused; an unknown commit is a 404 */
	cr_assert_eq(internal(&c, 1, "/internal/txn/commit", "{\"txn\":\"r0:ord_T3\"}", out, sizeof(out)), 409, "%s",
		     out);
	cr_assert_eq(internal(&c, 1, "/internal/txn/commit", "{\"txn\":\"r0:ord_NEVER\"}", out, sizeof(out)), 404);
	wm_cluster_cleanup(&c);
}

WM_TEST(txn_part, a_replica_is_never_held_and_bad_bodies_are_refused, .timeout = 120)
{
	struct wm_cluster c;
	struct oworld w;
	up(&c, &w);
	char body[512], out[2048];
	/* shard 2 has the FR level as a replica: 421, nothing held anywhere */
	prepare_body(body, sizeof(body), "r0:ord_T4", "r0:ord_T4.H1", w.lv_est, 1);
	cr_assert_eq(internal(&c, 2, "/internal/txn/prepare", body, out, sizeof(out)), 421, "%s", out);
	long long res, alloc;
	level_units(&c, w.lv_est, &res, &alloc);
	cr_assert_eq(res, 0);
	static const char *const bad[] = {
		"{\"txn\":\"ord_T5\",\"holds\":[{\"hold_id\":\"h\",\"level_id\":\"l\",\"qty\":1}]}", /* no router */
		"{\"txn\":\"r16:ord_T5\",\"holds\":[{\"hold_id\":\"h\",\"level_id\":\"l\",\"qty\":1}]}", /* router id */
		"{\"txn\":\"r0:ord_T5\",\"holds\":[]}",                                                 /* no hold */
		"{\"txn\":\"r0:ord_T5\",\"holds\":[{\"hold_id\":\"h\",\"level_id\":\"l\",\"qty\":0}]}", /* qty */
		"{\"txn\":\"r0:ord_T5\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(internal(&c, 1, "/internal/txn/prepare", bad[i], out, sizeof(out)), 422, "%zu: %s", i, out);
	/* at the holds bound and past it */
	char big[8192];
	size_t o = (size_t)snprintf(big, sizeof(big), "{\"txn\":\"r0:ord_T6\",\"holds\":[");
	for (int i = 0; i < 33; i++)
		o += (size_t)snprintf(big + o, sizeof(big) - o, "%s{\"hold_id\":\"r0:ord_T6.H%d\",\"level_id\":\"%s\",\"qty\":1}",
				      i ? "," : "", i, w.lv_est);
	snprintf(big + o, sizeof(big) - o, "]}");
	cr_assert_eq(internal(&c, 1, "/internal/txn/prepare", big, out, sizeof(out)), 422, "33 holds: %s", out);
	o = (size_t)snprintf(big, sizeof(big), "{\"txn\":\"r0:ord_T7\",\"holds\":[");
	for (int i = 0; i < 32; i++)
		o += (size_t)snprintf(big + o, sizeof(big) - o, "%s{\"hold_id\":\"r0:ord_T7.H%d\",\"level_id\":\"%s\",\"qty\":1}",
				      i ? "," : "", i, w.lv_est);
	snprintf(big + o, sizeof(big) - o, "]}");
	cr_assert_eq(internal(&c, 1, "/internal/txn/prepare", big, out, sizeof(out)), 200, "32 holds: %s", out);
	level_units(&c, w.lv_est, &res, &alloc);
	cr_assert_eq(res, 32);
	wm_cluster_cleanup(&c);
}
