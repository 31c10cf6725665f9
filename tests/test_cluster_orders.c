/*
 * test_cluster_orders.c -- orders through a router in front of three
 * shards (DESIGN.md section 9; issue 13 items 6 and 7): an order whose
 * stock lives on its destination's shard runs the local saga there, with
 * the catalogue it reads replicated from the home and the caller's own
 * writes visible at once (read-your-writes); an order that would need
 * stock on another shard is a 409 cross_shard_not_enabled with nothing
 * held; the orders list spans the shards, merged in id order, at any page
 * size, exactly as one shard would list them; a forged cursor is refused;
 * a participant sees only its own orders.
 *
 * The cluster harness's map: shard 1 owns FR, shard 2 owns DE, the home
 * (shard 0) the rest (AT among them).
 */
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cluster_harness.h"
#include "tests/order_world.h"
#include "tests/wm_test.h"

static uint64_t wall_ms_test(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void cluster_with_router(struct wm_cluster *c)
{
	wm_cluster_init(c, 3);
	static const char *const rate[] = {"--key-rate-rps", "1000000", "--key-rate-burst", "1000000", NULL};
	for (int i = 0; rate[i]; i++)
		c->extra[i] = c->router_extra[i] = rate[i]; /* the router checks rates (shard-router/edge.h) */
	wm_cluster_start_all(c);
	cr_assert_eq(wm_cluster_router_start(c), 0, "the router did not start (logs in %s)", c->router_dir);
}

/*
 * An order of qty units; its status in *st, its id into id (on 201).  The
 * seller is not the partner that wrote the stock: its shard sees that
 * stock once replication brought it (the home recomputes the offer's
 * quantity from the replicated levels and publishes it), so a 422
 * insufficient_stock is retried for a bounded while -- a refused capture
 * stores nothing.
 */
static void order(struct oworld *w, int qty, int *st, char *id)
{
	json_t *j = ow_order(w, qty, NULL, NULL, st);
	for (int t = 0; *st == 422 && t < 250; t++) {
		json_decref(j);
		usleep(20 * 1000);
		j = ow_order(w, qty, NULL, NULL, st);
	}
	if (*st == 201)
		snprintf(id, 64, "%s", json_string_value(json_object_get(j, "id")));
	else
		cr_log_info("order: %d %s", *st, json_dumps(j, 0));
	json_decref(j);
}

WM_TEST(cluster_orders, an_order_runs_on_its_destination_shard, .timeout = 120)
{
	struct wm_cluster c;
	cluster_with_router(&c);
	struct oworld w;
	memset(&w, 0, sizeof(w));
	/* catalogue at the home, cellars in DE (shard 2), orders to DE: the
	 * quote right after the writes reads the caller's own writes */
	ow_build(&w, c.router_port, 30, 0, "DE", "DE");
	cr_assert(strncmp(w.loc_est, "loc_DE_", 7) == 0, "%s", w.loc_est);
	int st;
	char id[64] = "";
	order(&w, 12, &st, id);
	cr_assert_eq(st, 201);
	cr_assert(strncmp(id, "ord_DE_", 7) == 0, "%s", id);
	char path[128];
	snprintf(path, sizeof(path), "/v1/orders/%s", id);
	json_t *o = ow_get(&w, path);
	cr_assert_str_eq(json_string_value(json_object_get(o, "status")), "reserved");
	json_decref(o);
	/* the stock moved on shard 2, the level's owner (read there by its id) */
	snprintf(path, sizeof(path), "/v1/inventory/%s", w.lv_est);
	json_t *lv = ow_get(&w, path);
	cr_assert_eq(json_integer_value(json_object_get(lv, "allocated")), 12);
	json_decref(lv);
	/* and the home's replica, which lists every shard's stock, follows */
	long long reserved = 0, allocated = 0, on_hand = 0;
	for (int t = 0; t < 250 && allocated != 12; t++) {
		json_t *l = ow_get(&w, "/v1/inventory?page_size=200");
		json_t *data = json_object_get(l, "data"), *row;
		size_t i;
		json_array_foreach(data, i, row)
			if (!strcmp(json_string_value(json_object_get(row, "id")), w.lv_est))
				allocated = json_integer_value(json_object_get(row, "allocated"));
		json_decref(l);
		if (allocated != 12)
			usleep(20 * 1000);
	}
	cr_assert_eq(allocated, 12, "the home's replica of the level never showed the order's units");
	(void)reserved;
	(void)on_hand;
	snprintf(path, sizeof(path), "/v1/orders/%s", id);
	/* straight to shard 2 (signed): the order is there, not at the home */
	struct http_resp r;
	cr_assert_eq(wm_cluster_do(&c, 2, "GET", path, NULL, &r), 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	http_resp_free(&r);
	cr_assert_eq(wm_cluster_do(&c, 0, "GET", path, NULL, &r), 0);
	cr_assert_eq(r.status, 421, "%s", r.body);
	http_resp_free(&r);
	wm_cluster_cleanup(&c);
}

/* Levels a and b as GET /v1/inventory shows them, once their reserved and
 * allocated units add up to want_res and want_alloc (up to 15 s;
 * ow_level_wait for one level).  That
 * read is the catalogue home's, from its replicas of other shards' levels:
 * the stock's shard has committed when the router answers, the home sees
 * it a replication hop later. */
static void levels_settled(struct oworld *w, const char *a, const char *b, long long want_res, long long want_alloc,
			   long long *res_a, long long *alloc_a, long long *res_b, long long *alloc_b)
{
	long long on_hand;
	for (int t = 0; t < 300; t++) {
		ow_level(w, a, res_a, alloc_a, &on_hand);
		ow_level(w, b, res_b, alloc_b, &on_hand);
		if (*res_a + *res_b == want_res && *alloc_a + *alloc_b == want_alloc)
			return;
		usleep(50 * 1000);
	}
}

/* The order's status read through the router (its destination's shard). */
static const char *status_of_order(struct oworld *w, const char *id, char *out, size_t n)
{
	char path[128];
	snprintf(path, sizeof(path), "/v1/orders/%s", id);
	json_t *o = ow_get(w, path);
	snprintf(out, n, "%s", json_string_value(json_object_get(o, "status")));
	json_decref(o);
	return out;
}

/*
 * An order whose stock lies on another shard than its destination's runs
 * as a two-phase commit coordinated by the router (DESIGN.md 9): the
 * answer is the reserved order, the units moved on the stock's shard
 * (reserved -> allocated, stock.reserved there), nothing is left in doubt,
 * and the events of the order come in the spec's order.
 */
WM_TEST(cluster_orders, stock_on_another_shard_commits_in_two_phases, .timeout = 120)
{
	struct wm_cluster c;
	cluster_with_router(&c);
	struct oworld w;
	memset(&w, 0, sizeof(w));
	/* cellars in FR (shard 1), orders to DE (shard 2) */
	ow_build(&w, c.router_port, 30, 0, "FR", "DE");
	int st;
	char id[64] = "";
	order(&w, 12, &st, id);
	cr_assert_eq(st, 201);
	cr_assert(strncmp(id, "ord_DE_", 7) == 0, "%s", id);
	char s1[32];
	cr_assert_str_eq(status_of_order(&w, id, s1, sizeof(s1)), "reserved");
	long long reserved, allocated;
	ow_level_wait(&w, w.lv_est, 0, 12, &reserved, &allocated); /* the home's replica, a hop behind */
	cr_assert_eq(allocated, 12, "the FR level's units are allocated to the order");
	cr_assert_eq(reserved, 0, "nothing stays prepared");
	/* nothing in doubt anywhere; the router committed one transaction */
	struct http_resp r;
	cr_assert_eq(http_do(c.port[1], "GET", "/metrics", NULL, NULL, &r), 0);
	cr_assert(strstr(r.body, "\nwm_txn_in_doubt 0\n"), "shard 1 in doubt");
	http_resp_free(&r);
	cr_assert_eq(http_do(c.router_port, "GET", "/metrics", NULL, NULL, &r), 0);
	cr_assert(strstr(r.body, "wm_router_txn_total{outcome=\"commit\"} 1\n"), "router: %s", strstr(r.body, "wm_router_txn") ? strstr(r.body, "wm_router_txn") : r.body);
	http_resp_free(&r);
	/* the order's events in the spec's order on its shard; stock.reserved
	 * on the stock's shard, not before order.sourced (the merged list is in
	 * id order, and ids of two shards made in one millisecond may cross,
	 * so the times are compared) */
	json_t *ev = ow_get(&w, "/v1/events?page_size=200");
	const char *want[] = {"order.placed", "order.paid", "order.confirmed", "order.sourced"};
	size_t k = 0, i;
	json_t *e;
	char sourced_at[40] = "", reserved_at[40] = "";
	json_array_foreach(json_object_get(ev, "data"), i, e) {
		const char *type = json_string_value(json_object_get(e, "type"));
		const char *at = json_string_value(json_object_get(e, "occurred_at"));
		if (k < 4 && type && !strcmp(type, want[k]))
			k++;
		if (type && at && !strcmp(type, "order.sourced"))
			snprintf(sourced_at, sizeof(sourced_at), "%s", at);
		if (type && at && !strcmp(type, "stock.reserved"))
			snprintf(reserved_at, sizeof(reserved_at), "%s", at);
	}
	json_decref(ev);
	cr_assert_eq(k, 4, "the order's events are not all there in the spec's order (%zu found)", k);
	cr_assert_neq(reserved_at[0], 0, "no stock.reserved event");
	cr_assert_geq(strcmp(reserved_at, sourced_at), 0, "stock.reserved (%s) before order.sourced (%s)", reserved_at,
		      sourced_at);
	wm_cluster_cleanup(&c);
}

/* Two sources on two other shards (the estate's cellar in FR, shard 1;
 * the stockist's in AT, the home): one transaction with two participants,
 * each leg allocated where its stock is. */
WM_TEST(cluster_orders, two_sources_on_two_other_shards_commit_together, .timeout = 120)
{
	struct wm_cluster c;
	cluster_with_router(&c);
	struct oworld w;
	memset(&w, 0, sizeof(w));
	ow_build(&w, c.router_port, 6, 0, "FR", "DE");
	char lv_at[64];
	ow_add_stock(&w, 1, "AT", 14, lv_at); /* 6 + 14: the order needs both */
	int st;
	char id[64] = "";
	order(&w, 20, &st, id); /* more than either source holds: both are needed */
	cr_assert_eq(st, 201);
	char s1[32];
	cr_assert_str_eq(status_of_order(&w, id, s1, sizeof(s1)), "reserved");
	long long res_fr, alloc_fr, res_at, alloc_at;
	levels_settled(&w, w.lv_est, lv_at, 0, 20, &res_fr, &alloc_fr, &res_at, &alloc_at);
	cr_assert_eq(res_fr + res_at, 0, "nothing stays prepared");
	cr_assert_eq(alloc_fr + alloc_at, 20, "the order's 20 units are allocated (FR %lld, AT %lld)", alloc_fr, alloc_at);
	cr_assert_gt(alloc_fr, 0, "the FR leg");
	cr_assert_gt(alloc_at, 0, "the AT leg");
	struct http_resp r;
	cr_assert_eq(http_do(c.router_port, "GET", "/metrics", NULL, NULL, &r), 0);
	cr_assert(strstr(r.body, "wm_router_txn_total{outcome=\"commit\"} 1\n"), "one transaction committed");
	http_resp_free(&r);
	wm_cluster_cleanup(&c);
}

/* Cancelling a cross-shard order releases its legs on their shard and
 * refunds, from the destination (its compensation), idempotently. */
WM_TEST(cluster_orders, a_cross_shard_order_cancels_on_every_shard, .timeout = 120)
{
	struct wm_cluster c;
	cluster_with_router(&c);
	struct oworld w;
	memset(&w, 0, sizeof(w));
	ow_build(&w, c.router_port, 30, 0, "FR", "DE");
	int st;
	char id[64] = "", path[160];
	order(&w, 12, &st, id);
	cr_assert_eq(st, 201);
	snprintf(path, sizeof(path), "/v1/orders/%s/cancel", id);
	json_t *o = tc_expect(c.router_port, "POST", path, w.ksel, "{}", 200);
	cr_assert_str_eq(json_string_value(json_object_get(o, "status")), "cancelled");
	json_decref(o);
	long long reserved = -1, allocated = -1, on_hand = -1;
	int compensated = 0;
	const char *pay = NULL;
	char payc[32] = "";
	snprintf(path, sizeof(path), "/v1/orders/%s", id);
	for (int t = 0; t < 200 && !(allocated == 0 && compensated); t++) {
		ow_level(&w, w.lv_est, &reserved, &allocated, &on_hand);
		json_t *g = ow_get(&w, path);
		compensated = json_is_true(json_object_get(json_object_get(g, "saga"), "compensated"));
		pay = json_string_value(json_object_get(json_object_get(g, "payment"), "state"));
		snprintf(payc, sizeof(payc), "%s", pay ? pay : "");
		json_decref(g);
		if (!(allocated == 0 && compensated))
			usleep(50 * 1000);
	}
	cr_assert_eq(allocated, 0, "the FR units went back");
	cr_assert_eq(reserved, 0);
	cr_assert(compensated, "the order is marked compensated");
	cr_assert_str_eq(payc, "refunded");
	/* a second cancel changes nothing */
	snprintf(path, sizeof(path), "/v1/orders/%s/cancel", id);
	tc_expect_code(c.router_port, "POST", path, w.ksel, "{}", 409, "invalid_order_state");
	ow_level(&w, w.lv_est, &reserved, &allocated, &on_hand);
	cr_assert_eq(allocated + reserved, 0);
	wm_cluster_cleanup(&c);
}

/* A leg the source shard cannot hold (its true ATP is lower than the
 * destination's replica said): every participant votes, the order fails
 * insufficient_stock, nothing is held, nothing charged. */
WM_TEST(cluster_orders, a_short_leg_aborts_the_two_phases_and_nothing_moves, .timeout = 120)
{
	struct wm_cluster c;
	cluster_with_router(&c);
	struct oworld w;
	memset(&w, 0, sizeof(w));
	ow_build(&w, c.router_port, 30, 0, "FR", "DE");
	int st;
	char id[64] = "";
	order(&w, 12, &st, id);
	cr_assert_eq(st, 201);
	/* take the rest away at the source, straight at shard 1 (signed),
	 * so the destination's replica may still show it */
	char body[512], path[128];
	snprintf(body, sizeof(body), "{\"txn\":\"r0:ord_THIEF\",\"holds\":[{\"hold_id\":\"r0:ord_THIEF.H1\","
		 "\"level_id\":\"%s\",\"qty\":18}]}", w.lv_est);
	struct http_resp r;
	cr_assert_eq(wm_cluster_do(&c, 1, "POST", "/internal/txn/prepare", body, &r), 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	http_resp_free(&r);
	json_t *j = ow_order(&w, 6, NULL, NULL, &st);
	cr_assert(st == 409 || st == 422, "%d %s", st, json_dumps(j, 0));
	if (st == 409) {
		cr_assert_str_eq(json_string_value(json_object_get(j, "code")), "insufficient_stock");
		json_t *o = json_object_get(j, "order");
		cr_assert_str_eq(json_string_value(json_object_get(o, "status")), "failed");
		snprintf(path, sizeof(path), "%s", json_string_value(json_object_get(o, "id")));
	}
	json_decref(j);
	long long reserved, allocated;
	ow_level_wait(&w, w.lv_est, 18, 12, &reserved, &allocated); /* the home's replica, a hop behind */
	cr_assert_eq(reserved, 18, "only the other transaction's hold is prepared");
	cr_assert_eq(allocated, 12);
	wm_cluster_cleanup(&c);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Page through GET path (with page_size ps) as `key` (NULL: the operator)
 * through the router; the ids in order into ids (at most max); count. */
static size_t page_all(struct oworld *w, const char *key, const char *list, int ps, char ids[][64], size_t max)
{
	size_t n = 0;
	char cursor[8192] = "";
	for (int pages = 0; pages < 1000; pages++) {
		char path[8400], h[256] = "";
		snprintf(path, sizeof(path), "%s?page_size=%d%s%s", list, ps, cursor[0] ? "&cursor=" : "", cursor);
		if (key)
			snprintf(h, sizeof(h), "Authorization: Bearer %s\r\n", key);
		struct http_resp r;
		cr_assert_eq(http_do(w->port, "GET", path, key ? h : NULL, NULL, &r), 0);
		cr_assert_eq(r.status, 200, "%s: %s", path, r.body);
		json_t *j = json_loadb(r.body, r.body_len, 0, NULL);
		cr_assert_not_null(j);
		json_t *data = json_object_get(j, "data");
		cr_assert_leq(json_array_size(data), (size_t)ps);
		for (size_t i = 0; i < json_array_size(data) && n < max; i++)
			snprintf(ids[n++], 64, "%s", json_string_value(json_object_get(json_array_get(data, i), "id")));
		json_t *nc = json_object_get(j, "next_cursor");
		int more = json_is_true(json_object_get(j, "has_more"));
		cr_assert_eq(more, json_is_string(nc));
		if (more)
			snprintf(cursor, sizeof(cursor), "%s", json_string_value(nc));
		json_decref(j);
		http_resp_free(&r);
		if (!more)
			return n;
	}
	cr_assert_fail("the list did not end");
	return n;
}

WM_TEST(cluster_orders, orders_list_spans_shards_like_one_shard, .timeout = 180)
{
	struct wm_cluster c;
	cluster_with_router(&c);
	/* three worlds, each ordering on one shard: FR (1), DE (2), AT (home) */
	static const char *const cc[] = {"FR", "DE", "AT"};
	static struct oworld w[3];
	static char made[40][64];
	size_t n_made = 0;
	for (int k = 0; k < 3; k++) {
		memset(&w[k], 0, sizeof(w[k]));
		ow_build(&w[k], c.router_port, 400, 0, cc[k], cc[k]);
		for (int i = 0; i < 4 + k; i++) {
			int st;
			order(&w[k], 12, &st, made[n_made]);
			cr_assert_eq(st, 201, "order to %s", cc[k]);
			n_made++;
		}
	}
	char *sorted[40];
	for (size_t i = 0; i < n_made; i++)
		sorted[i] = made[i];
	qsort(sorted, n_made, sizeof(sorted[0]), cmp_str);
	static char got[64][64];
	static const int sizes[] = {1, 7, 200};
	for (int s = 0; s < 3; s++) {
		size_t n = page_all(&w[0], NULL, "/v1/orders", sizes[s], got, 64);
		cr_assert_eq(n, n_made, "page_size %d: %zu rows, %zu orders", sizes[s], n, n_made);
		for (size_t i = 0; i < n; i++)
			cr_assert_str_eq(got[i], sorted[i], "page_size %d row %zu", sizes[s], i);
	}
	/* a participant sees only its own: the FR world's seller, 4 orders */
	size_t n = page_all(&w[0], w[0].ksel, "/v1/orders", 3, got, 64);
	cr_assert_eq(n, 4);
	for (size_t i = 0; i < n; i++)
		cr_assert(strncmp(got[i], "ord_FR_", 7) == 0, "%s", got[i]);
	/* a forged cursor, and a genuine cursor of another caller's list */
	struct http_resp r;
	cr_assert_eq(http_do(c.router_port, "GET", "/v1/orders?page_size=1&cursor=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
			     NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 400, "%s", r.body);
	cr_assert(strstr(r.body, "invalid_cursor"), "%s", r.body);
	http_resp_free(&r);
	cr_assert_eq(http_do(c.router_port, "GET", "/v1/orders?page_size=1", NULL, NULL, &r), 0);
	json_t *j = json_loadb(r.body, r.body_len, 0, NULL);
	char theirs[8192];
	snprintf(theirs, sizeof(theirs), "/v1/orders?page_size=1&cursor=%s",
		 json_string_value(json_object_get(j, "next_cursor")));
	json_decref(j);
	http_resp_free(&r);
	char h[256];
	snprintf(h, sizeof(h), "Authorization: Bearer %s\r\n", w[0].ksel);
	cr_assert_eq(http_do(c.router_port, "GET", theirs, h, NULL, &r), 0);
	cr_assert_eq(r.status, 400, "another caller's cursor: %s", r.body);
	http_resp_free(&r);
	wm_cluster_cleanup(&c);
}

/* A signed GET to shard i with an X-WM-Min-Position header, on its own
 * socket (the answer is read later); the socket. */
static int send_with_position(struct wm_cluster *c, unsigned i, const char *path, const char *pos)
{
	char sig[CK_HEADER_MAX + 64], req[2048];
	wm_cluster_sig(c, "GET", path, NULL, sig, sizeof(sig));
	int fd = tcp_connect(c->port[i]);
	cr_assert_geq(fd, 0);
	int n = snprintf(req, sizeof(req),
			 "GET %s HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer %s\r\n%sX-WM-Min-Position: %s\r\n"
			 "Connection: close\r\n\r\n",
			 path, WM_TEST_KEY, sig, pos);
	cr_assert_eq(write(fd, req, (size_t)n), n);
	return fd;
}

/* Shard i's own LSN from its signed cluster status. */
static long long shard_lsn(struct wm_cluster *c, unsigned i)
{
	struct http_resp r;
	cr_assert_eq(wm_cluster_do(c, i, "GET", "/internal/cluster/status", NULL, &r), 0);
	const char *l = strstr(r.body, "\"lsn\":");
	cr_assert_not_null(l, "%s", r.body);
	long long v = atoll(l + 6);
	http_resp_free(&r);
	return v;
}

/* Until no shard's LSN moves for 300 ms (start-up writes, such as the
 * first replication positions, are done), bounded. */
static void settle(struct wm_cluster *c)
{
	long long before[WM_CLUSTER_MAX] = {0};
	for (int t = 0; t < 50; t++) {
		int same = t > 0;
		for (unsigned i = 0; i < c->n; i++) {
			long long l = shard_lsn(c, i);
			same &= l == before[i];
			before[i] = l;
		}
		if (same)
			return;
		usleep(300 * 1000);
	}
	cr_assert_fail("the cluster did not settle");
}

/* 1 when fd has something to read within ms. */
static int answered_within(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return poll(&p, 1, ms) == 1;
}

/*
 * Read-your-writes at a shard (engine/edge/park.c): a request naming a
 * write's position shows that write; one naming a position its replica
 * has not applied waits (here: the publisher is down) and runs as soon as
 * the position arrives; one naming a position that never comes is a 503
 * replica_behind after the bounded wait.
 */
WM_TEST(cluster_orders, a_request_waits_for_the_positions_it_names, .timeout = 60)
{
	struct wm_cluster c;
	wm_cluster_init(&c, 3);
	wm_cluster_start_all(&c);
	struct http_resp r;
	/* a write at the home, and a read at shard 1 naming its position */
	cr_assert_eq(wm_cluster_do(&c, 0, "POST", "/v1/partners",
				   "{\"legal_name\":\"Held Read GmbH\",\"country\":\"DE\",\"roles\":[\"originator\"],"
				   "\"originator_type\":\"estate\"}", &r), 0);
	cr_assert_eq(r.status, 201, "%s", r.body);
	char w[32], pos[96], owner[64];
	cr_assert_gt(http_header(&r, "X-WM-LSN", w, sizeof(w)), 0, "a signed write reports its position");
	const char *idp = strstr(r.body, "\"id\":\"");
	cr_assert_not_null(idp);
	snprintf(owner, sizeof(owner), "%.*s", (int)strcspn(idp + 6, "\""), idp + 6);
	http_resp_free(&r);
	snprintf(pos, sizeof(pos), "0:%s", w);
	int fd = send_with_position(&c, 1, "/v1/partners?page_size=200", pos);
	cr_assert_eq(http_read_response(fd, &r, 5000), 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(strstr(r.body, "Held Read GmbH"), "the read did not show the write it named: %s", r.body);
	http_resp_free(&r);
	close(fd);
	/* a position shard 2 has not reached: the request waits ... */
	settle(&c);
	long long l2 = shard_lsn(&c, 2);
	snprintf(pos, sizeof(pos), "0:%s,2:%lld", w, l2 + 1);
	fd = send_with_position(&c, 1, "/v1/stock-locations?page_size=200", pos);
	cr_assert(!answered_within(fd, 400), "answered before the position it names existed");
	/* ... and runs once shard 2 writes past it, showing that write */
	char body[512];
	snprintf(body, sizeof(body),
		 "{\"owner_entity_id\":\"%s\",\"location_type\":\"BONDED_WAREHOUSE\",\"name\":\"Lager Mainz\","
		 "\"address\":{\"line1\":\"1\",\"city\":\"Mainz\",\"postal_code\":\"55116\",\"country\":\"DE\"}}",
		 owner);
	cr_assert_eq(wm_cluster_do(&c, 2, "POST", "/v1/stock-locations", body, &r), 0);
	cr_assert_eq(r.status, 201, "%s", r.body);
	http_resp_free(&r);
	cr_assert_eq(http_read_response(fd, &r, 5000), 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(strstr(r.body, "Lager Mainz"), "the held read did not show the write it waited for: %s", r.body);
	http_resp_free(&r);
	close(fd);
	/* a position that never comes: 503 after the bounded wait */
	snprintf(pos, sizeof(pos), "0:%lld", shard_lsn(&c, 0) + 1000000);
	fd = send_with_position(&c, 1, "/v1/partners?page_size=1", pos);
	cr_assert_eq(http_read_response(fd, &r, 10000), 0);
	cr_assert_eq(r.status, 503, "%s", r.body);
	cr_assert(strstr(r.body, "replica_behind"), "%s", r.body);
	char ra[16];
	cr_assert_gt(http_header(&r, "Retry-After", ra, sizeof(ra)), 0);
	http_resp_free(&r);
	close(fd);
	wm_cluster_cleanup(&c);
}

/* The status and problem code of a request with `key` through port. */
static int call_code(int port, const char *method, const char *path, const char *key, const char *body, char *code,
		     size_t n)
{
	char h[256];
	snprintf(h, sizeof(h), "Authorization: Bearer %s\r\n", key);
	struct http_resp r;
	cr_assert_eq(http_do(port, method, path, h, body, &r), 0);
	json_t *j = json_loadb(r.body, r.body_len, 0, NULL);
	const char *cd = j ? json_string_value(json_object_get(j, "code")) : NULL;
	snprintf(code, n, "%s", cd ? cd : "");
	json_decref(j);
	int st = r.status;
	http_resp_free(&r);
	return st;
}

/*
 * A key revoked at the home stops working everywhere: through the router
 * at once on every shard (the revocation's position travels with the next
 * request), and straight at a shard within the replication lag, which is
 * measured and printed.
 */
WM_TEST(cluster_orders, a_key_revoked_at_the_home_stops_everywhere, .timeout = 60)
{
	struct wm_cluster c;
	cluster_with_router(&c);
	struct oworld w;
	memset(&w, 0, sizeof(w));
	ow_build(&w, c.router_port, 30, 0, "DE", "DE");
	char code[64], quote[512];
	snprintf(quote, sizeof(quote), "{\"destination_country\":\"DE\",\"lines\":[{\"sku\":\"%s\",\"qty\":6,\"box_units\":6}]}",
		 w.w1);
	int st = 0;
	for (int t = 0; t < 250 && st != 200; t++) { /* the seller's quote at shard 2 (DE) works */
		st = call_code(c.router_port, "POST", "/v1/orders/quote-calculate", w.ksel, quote, code, sizeof(code));
		if (st != 200)
			usleep(20 * 1000);
	}
	cr_assert_eq(st, 200, "%s", code);
	/* the key's id, then its revocation at the home */
	char path[160];
	json_t *keys = tc_expect(c.router_port, "GET", "/api/keys?page_size=200", NULL, NULL, 200);
	const char *kid = NULL;
	json_t *k;
	size_t i;
	json_array_foreach(json_object_get(keys, "data"), i, k)
		if (!strcmp(json_string_value(json_object_get(k, "entity_id")), w.sel))
			kid = json_string_value(json_object_get(k, "id"));
	cr_assert_not_null(kid, "the seller's key is not listed");
	snprintf(path, sizeof(path), "/api/keys/%s/revoke", kid);
	json_decref(tc_expect(c.router_port, "POST", path, NULL, NULL, 200));
	json_decref(keys);
	/* through the router: refused at once, on the destination's shard */
	cr_assert_eq(call_code(c.router_port, "POST", "/v1/orders/quote-calculate", w.ksel, quote, code, sizeof(code)),
		     401);
	cr_assert_str_eq(code, "key_revoked");
	/* straight at shard 1 (signed as a router would): within the lag */
	uint64_t t0 = wall_ms_test();
	for (st = 0; st != 401 && wall_ms_test() - t0 < 10000;) {
		char sig[CK_HEADER_MAX + 64], h[512];
		wm_cluster_sig(&c, "GET", "/v1/orders?page_size=1", NULL, sig, sizeof(sig));
		snprintf(h, sizeof(h), "%sAuthorization: Bearer %s\r\n", sig, w.ksel);
		struct http_resp r;
		cr_assert_eq(http_do(c.port[1], "GET", "/v1/orders?page_size=1", h, NULL, &r), 0);
		st = r.status;
		http_resp_free(&r);
	}
	cr_assert_eq(st, 401, "shard 1 still accepts the revoked key after 10 s");
	cr_log_info("revocation reached shard 1 in %llu ms (measured from the revoke's answer)",
		    (unsigned long long)(wall_ms_test() - t0));
	/* revoked at the home by another way than this router (as another
	 * router would): this router stops it within its replica's lag */
	char body[160], key2[128], kid2[64];
	snprintf(body, sizeof(body), "{\"entity_id\":\"%s\"}", w.sel);
	json_t *mk = tc_expect(c.router_port, "POST", "/api/keys", NULL, body, 201);
	snprintf(key2, sizeof(key2), "%s", tc_jstr(mk, "key"));
	snprintf(kid2, sizeof(kid2), "%s", tc_jstr(mk, "id"));
	json_decref(mk);
	cr_assert_eq(call_code(c.router_port, "POST", "/v1/orders/quote-calculate", key2, quote, code, sizeof(code)),
		     200, "a key minted through the router works through it at once: %s", code);
	snprintf(path, sizeof(path), "/api/keys/%s/revoke", kid2);
	struct http_resp r;
	cr_assert_eq(wm_cluster_do(&c, 0, "POST", path, NULL, &r), 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	http_resp_free(&r);
	t0 = wall_ms_test();
	for (st = 0; st != 401 && wall_ms_test() - t0 < 10000;) {
		st = call_code(c.router_port, "POST", "/v1/orders/quote-calculate", key2, quote, code, sizeof(code));
		if (st != 401)
			usleep(1000);
	}
	cr_assert_eq(st, 401, "the router still accepts a key revoked at the home after 10 s");
	cr_assert_str_eq(code, "key_revoked");
	cr_log_info("a revocation at the home reached the router's edge in %llu ms",
		    (unsigned long long)(wall_ms_test() - t0));
	wm_cluster_cleanup(&c);
}

/*
 * A shard takes the caller from the router's X-WM-Principal only when the
 * request's signature covers it: the same header under a signature made
 * without it is a 401, under one that covers it the shard serves the
 * principal's view without any key.
 */
WM_TEST(cluster_orders, a_principal_the_signature_does_not_cover_is_refused, .timeout = 60)
{
	struct wm_cluster c;
	cluster_with_router(&c);
	static const char target[] = "/v1/orders?page_size=1";
	static const char who[] = "v1 k=key_platformtest e=platform s=ffffffff t=0 r=0 st=0 c=- q=4294967295";
	char sig[CK_HEADER_MAX], h[1024];
	/* signed without the principal, principal added: refused */
	cr_assert_eq(ck_sign(&c.key, "GET", 3, target, strlen(target), (int64_t)time(NULL), NULL, 0, sig), 0);
	snprintf(h, sizeof(h), CK_HEADER_NAME ": %s\r\nX-WM-Principal: %s\r\nAuthorization: Bearer not-a-key\r\n", sig, who);
	struct http_resp r;
	cr_assert_eq(http_do(c.port[1], "GET", target, h, NULL, &r), 0);
	cr_assert_eq(r.status, 401, "%d %s", r.status, r.body);
	cr_assert(strstr(r.body, "cluster_signature_required"), "%s", r.body);
	http_resp_free(&r);
	/* signed with it: served (the bearer token is not even looked at), rows
	 * reported to the router */
	cr_assert_eq(ck_sign_principal(&c.key, "GET", 3, target, strlen(target), (int64_t)time(NULL), NULL, 0, who,
				       strlen(who), sig), 0);
	snprintf(h, sizeof(h), CK_HEADER_NAME ": %s\r\nX-WM-Principal: %s\r\nAuthorization: Bearer not-a-key\r\n", sig, who);
	cr_assert_eq(http_do(c.port[1], "GET", target, h, NULL, &r), 0);
	cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
	char v[32];
	cr_assert_eq(http_header(&r, "X-WM-Rows", v, sizeof(v)), 1, "the shard reports the rows it returned");
	cr_assert_str_eq(v, "0");
	http_resp_free(&r);
	/* a principal that is not in its wire form, signed: 400, never a guess */
	static const char bad[] = "v1 k=key_x e=platform s=ff";
	cr_assert_eq(ck_sign_principal(&c.key, "GET", 3, target, strlen(target), (int64_t)time(NULL), NULL, 0, bad,
				       strlen(bad), sig), 0);
	snprintf(h, sizeof(h), CK_HEADER_NAME ": %s\r\nX-WM-Principal: %s\r\nAuthorization: Bearer not-a-key\r\n", sig, bad);
	cr_assert_eq(http_do(c.port[1], "GET", target, h, NULL, &r), 0);
	cr_assert_eq(r.status, 400, "%d %s", r.status, r.body);
	http_resp_free(&r);
	wm_cluster_cleanup(&c);
}

/*
 * A short leg on a stale replica is re-planned once (DESIGN.md 9, step 2).
 * The destination (shard 2) has its replication frozen (errinj
 * repl_sub_frozen) while it still sees 30 units in the estate's FR cellar;
 * the estate then takes that cellar down to 5.  An order of 20 is planned
 * on the stale figure; shard 1 votes no and reports 5; the router gives
 * every held unit back and the destination plans again with the reported
 * figure: at most 5 from FR, the rest from the stockist's AT cellar, and
 * the order commits.  A second order no plan covers (the AT replica is
 * stale too) fails insufficient_stock with nothing held.
 */
/* The stale world of the re-plan tests: the estate's FR cellar at 5 units
 * while the destination (frozen) still sees 30, the stockist's AT cellar
 * at 30; the router restarted with renv (it forgets the positions it would
 * make the frozen destination wait for: read-your-writes).  lv_at: 64. */
static void stale_world(struct wm_cluster *c, struct oworld *w, char *lv_at, const char *const *renv)
{
	wm_cluster_orders_config(c, "1000");
	wm_cluster_start_all(c);
	cr_assert_eq(wm_cluster_router_start(c), 0, "the router did not start (logs in %s)", c->root);
	memset(w, 0, sizeof(*w));
	ow_build(w, c->router_port, 30, 0, "FR", "DE");
	char quote[512], path[160];
	ow_add_stock(w, 1, "AT", 30, lv_at);
	/* the destination sees both cellars: 60 units route */
	snprintf(quote, sizeof(quote),
		 "{\"destination_country\":\"DE\",\"lines\":[{\"sku\":\"%s\",\"qty\":60,\"box_units\":12}]}", w->w1);
	int st = 0;
	for (int t = 0; t < 250 && st != 200; t++) {
		json_decref(tc_call(c->router_port, "POST", "/v1/orders/quote-calculate", w->ksel, quote, &st));
		if (st != 200)
			usleep(20 * 1000);
	}
	cr_assert_eq(st, 200, "the destination never saw both cellars");
	static const char *const frozen[] = {"WM_ERRINJ=repl_sub_frozen", NULL};
	wm_cluster_kill9(c, 2);
	c->env = frozen;
	cr_assert_eq(wm_cluster_start(c, 2), 0);
	c->env = NULL;
	snprintf(path, sizeof(path), "/v1/inventory/%s", w->lv_est);
	json_decref(tc_expect(c->router_port, "PATCH", path, NULL, "{\"on_hand\":5}", 200));
	wm_cluster_router_kill9(c);
	c->router_env = renv;
	cr_assert_eq(wm_cluster_router_start(c), 0);
	c->router_env = NULL;
}

static long metric(int port, const char *name)
{
	struct http_resp r;
	cr_assert_eq(http_do(port, "GET", "/metrics", NULL, NULL, &r), 0);
	const char *at = strstr(r.body, name);
	long v = at ? strtol(at + strlen(name), NULL, 10) : -1;
	http_resp_free(&r);
	return v;
}

WM_TEST(cluster_orders, a_short_leg_on_a_stale_replica_is_re_planned_once, .timeout = 120)
{
	struct wm_cluster c;
	struct oworld w;
	char lv_at[64];
	stale_world(&c, &w, lv_at, NULL);
	int st;
	json_t *j = ow_order(&w, 20, NULL, "replan-1", &st);
	cr_assert_eq(st, 201, "the re-plan finds the other source: %d %s", st, json_dumps(j, 0));
	cr_assert_str_eq(json_string_value(json_object_get(j, "status")), "reserved");
	char id[64];
	snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(j, "id")));
	json_decref(j);
	/* the re-planned order keeps its Idempotency-Key */
	j = ow_order(&w, 20, NULL, "replan-1", &st);
	cr_assert_eq(st, 201, "%d %s", st, json_dumps(j, 0));
	cr_assert_str_eq(json_string_value(json_object_get(j, "id")), id, "the retry returns the re-planned order");
	json_decref(j);
	long long res_fr, alloc_fr, res_at, alloc_at;
	levels_settled(&w, w.lv_est, lv_at, 0, 20, &res_fr, &alloc_fr, &res_at, &alloc_at);
	cr_assert_eq(res_fr + res_at, 0, "nothing stays prepared (the first plan's holds were given back)");
	cr_assert_eq(alloc_fr + alloc_at, 20, "the order's 20 units are allocated (FR %lld, AT %lld)", alloc_fr, alloc_at);
	cr_assert_leq(alloc_fr, 5, "FR had only 5");
	cr_assert_eq(metric(c.router_port, "\nwm_router_txn_replans_total "), 1, "the router re-planned once");
	/* 40 more: the stale replicas promise 60, the truth is 15; one re-plan
	 * cannot cover it */
	j = ow_order(&w, 40, NULL, NULL, &st);
	cr_assert_eq(st, 409, "%d %s", st, json_dumps(j, 0));
	cr_assert_str_eq(json_string_value(json_object_get(j, "code")), "insufficient_stock");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "order"), "status")), "failed");
	json_decref(j);
	long long alloc_fr2, alloc_at2;
	levels_settled(&w, w.lv_est, lv_at, 0, 20, &res_fr, &alloc_fr2, &res_at, &alloc_at2);
	cr_assert_eq(res_fr + res_at, 0, "the failed order holds nothing");
	cr_assert_eq(alloc_fr2 + alloc_at2, 20, "the first order's units only");
	static char report[16384];
	cr_assert_eq(wm_cluster_check(&c, 60000, report, sizeof(report)), 0, "%s", report);
	wm_cluster_cleanup(&c);
}

/* The router dies right after the destination re-planned (errinj
 * txn_router_crash_after_replan), before the new PREPAREs: presumed abort.
 * Restarted, it has no record; the destination asks past its time-out and
 * fails the order; nothing is held anywhere. */
WM_TEST(cluster_orders, a_router_dead_after_a_re_plan_leaves_nothing_held, .timeout = 120)
{
	struct wm_cluster c;
	struct oworld w;
	char lv_at[64];
	static const char *const renv[] = {"WM_ERRINJ=txn_router_crash_after_replan", NULL};
	stale_world(&c, &w, lv_at, renv);
	json_t *j = NULL;
	cr_assert_eq(ow_order_try(&w, 20, NULL, NULL, &j), -1, "the router must die before answering");
	json_decref(j);
	for (int t = 0; t < 100 && waitpid(c.router_pid, NULL, WNOHANG) == 0; t++)
		usleep(20 * 1000);
	c.router_pid = 0;
	cr_assert_eq(wm_cluster_router_start(&c), 0);
	json_t *l = NULL;
	const char *status = "";
	for (int t = 0; t < 200; t++) { /* the destination asks after --txn-timeout-ms (1 s) */
		json_decref(l);
		l = tc_expect(c.router_port, "GET", "/v1/orders?page_size=5", NULL, NULL, 200);
		json_t *o = json_array_get(json_object_get(l, "data"), 0);
		status = o ? json_string_value(json_object_get(o, "status")) : "";
		if (status && !strcmp(status, "failed"))
			break;
		usleep(50 * 1000);
	}
	cr_assert_str_eq(status, "failed", "the order is failed once the router is back");
	json_decref(l);
	long long res_fr = -1, alloc_fr = -1, res_at = -1, alloc_at = -1, on_hand;
	for (int t = 0; t < 200; t++) {
		ow_level(&w, w.lv_est, &res_fr, &alloc_fr, &on_hand);
		ow_level(&w, lv_at, &res_at, &alloc_at, &on_hand);
		if (res_fr + res_at + alloc_fr + alloc_at == 0)
			break;
		usleep(50 * 1000);
	}
	cr_assert_eq(res_fr + res_at + alloc_fr + alloc_at, 0, "nothing held (FR %lld/%lld, AT %lld/%lld)", res_fr,
		     alloc_fr, res_at, alloc_at);
	static char report[16384];
	int rc = 1;
	for (int t = 0; t < 100 && rc; t++) {
		rc = wm_cluster_check(&c, 0, report, sizeof(report));
		if (rc)
			usleep(100 * 1000);
	}
	cr_assert_eq(rc, 0, "%s", report);
	wm_cluster_cleanup(&c);
}
