/*
 * test_chaos.c -- the seeded randomized campaign of issue 14 (Jepsen-style):
 * cross-shard orders racing for the last units while a nemesis kills,
 * partitions and slows the cluster, then a checker over everything the
 * clients were told.
 *
 * The world: three shards and a router in a network namespace of the
 * test's own (tests/netns.h), the estate's cellar in FR (shard 1, reached
 * by everyone through tests/tools/wm-delay-proxy) and the stockist's in AT
 * (the home, shard 0), every order to DE (shard 2): each order is a
 * transaction with one or two participants, none of them its destination.
 * Stock is short on purpose (CHAOS_UNITS per cellar) so orders race for
 * the last units; a restocker adds units now and then.
 *
 * The clients (CHAOS_CLIENTS threads) create orders of 1..CHAOS_QTY_MAX
 * units, each with its own Idempotency-Key, and cancel some of theirs.  A
 * request without an answer (a process died, the router was cut off) is
 * "ambiguous": after the campaign the client retries it with the same key
 * and body and learns what it is.  Threads only record; every assertion is
 * made by the test's own thread (Criterion's asserts must not run on
 * another thread).
 *
 * The nemesis (the test's thread) does one fault at a time, drawn from the
 * seed: kill -9 the router or a shard and restart it after a while; cut a
 * shard off (DROP on its port: router<->shard and shard<->shard alike), or
 * the router (REJECT: clients and the participants asking it alike); slow
 * shard 1's link (the proxy's delay, at times past the router's call
 * time-out).  Each fault heals after a random time.
 *
 * After the campaign (everything healed, in-doubt transactions drained):
 *   - `wm-ctl cluster check` exits 0: per level reserved = PREPARED holds,
 *     allocated = COMMITTED holds, on hand + consumed = initial + added
 *     (the level's history); no charged order failed without a refund; no
 *     PREPARED hold without a transaction in progress;
 *   - every order a client was told of exists exactly once, in a rest
 *     state, and the cluster has no order no client knows of;
 *   - units in live orders (reserved) = allocated across shards, nothing
 *     reserved (PREPARED) is left; no fulfilment ran, so nothing consumed;
 *   - each level's on hand is what the restocker last set (or one of the
 *     values it tried without an answer);
 *   - a failed or cancelled order is not left charged; a reserved one is;
 *   - each order's events are gap-free in the spec's order (3.1): placed,
 *     paid, confirmed, sourced, with at most one failed or cancelled at the
 *     end, and the last one matching its status.
 *
 * Reproducing: the seed fixes the nemesis's schedule and every client's
 * choices (quantities, cancels, pauses); the threads' interleaving is the
 * machine's.  WM_CHAOS_SEED (default 42 in `make test`; `make chaos` draws
 * one and prints it) and WM_CHAOS_SECONDS (default 45; at most
 * CHAOS_SECONDS_MAX) steer it: `make chaos SEED=... MINUTES=...`.
 */
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/api_client.h"
#include "tests/cluster_harness.h"
#include "tests/delay_proxy.h"
#include "tests/netns.h"
#include "tests/order_world.h"
#include "tests/wm_test.h"

#define CHAOS_CLIENTS 4
#define CHAOS_OPS_MAX 8192            /* orders one client creates at most */
#define CHAOS_QTY_MAX 15              /* units of one order */
#define CHAOS_UNITS 60                /* each cellar's initial units */
#define CHAOS_RESTOCK 60              /* units one restock adds */
#define CHAOS_RESTOCKS_MAX 256        /* restocks per level recorded */
#define CHAOS_SECONDS_DEFAULT 45
#define CHAOS_SECONDS_MAX (24 * 3600)
#define CHAOS_SETTLE_MS 120000        /* after healing: the cluster must come to rest within */
#define CHAOS_LEVELS 3                /* FR estate, FR stockist (empty), AT stockist */

/* ---- the seeded generator (xorshift64*) ---------------------------------------- */

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static int rnd_in(uint64_t *s, int lo, int hi) { return lo + (int)(rnd(s) % (uint64_t)(hi - lo + 1)); }

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* ---- what the clients were told ------------------------------------------------ */

enum outcome {
	OC_NONE = 0,   /* definitely no order (a 4xx that stores nothing) */
	OC_ORDER,      /* an order: 201 (reserved) or 409 with the failed order */
	OC_AMBIGUOUS,  /* no answer, or an answer that does not say */
	OC_UNSENT,     /* the connection was refused: nothing was sent */
};

struct op {
	char idem[48];
	int qty;
	enum outcome oc;
	char id[64];
	int cancel_sent, cancel_ok; /* a cancel was sent; it answered 200 */
};

struct client {
	int idx;
	uint64_t rng;
	struct op *ops;
	unsigned n;
	unsigned long created, ambiguous, cancels, none, unsent;
	unsigned long by_status[600];         /* answers to creates by HTTP status */
	unsigned live[CHAOS_OPS_MAX];         /* indexes of its orders not yet cancelled */
	unsigned n_live;
	pthread_t th;
};

struct restock {
	char level[64];
	long long acked;                          /* the last value set with a 200 */
	long long tried[CHAOS_RESTOCKS_MAX];      /* values set without an answer */
	unsigned n_tried;
	unsigned ok;
};

struct chaos {
	struct wm_cluster c;
	struct oworld w;
	struct wm_delay_proxy px;
	uint64_t seed;
	atomic_int stop;
	struct client cl[CHAOS_CLIENTS];
	struct restock rs[CHAOS_LEVELS];
	uint64_t restock_rng;
};

static struct chaos *g; /* the campaign (one per test process) */

/* POST /v1/orders for op through the router; the answer's status into
 *status (0 without one). */
static void create_order(struct op *o, int *status)
{
	char h[512];
	snprintf(h, sizeof(h), "Authorization: Bearer %s\r\nIdempotency-Key: %s\r\n", g->w.ksel, o->idem);
	struct http_resp r;
	/* a consumer per order (its key): the volume caps count one consumer's orders */
	char body[2048];
	ow_body_for(&g->w, o->qty, NULL, o->idem, body, sizeof(body));
	int rc = http_do(g->c.router_port, "POST", "/v1/orders", h, body, &r);
	*status = rc ? 0 : r.status;
	if (rc) {
		o->oc = rc == -1 ? OC_UNSENT : OC_AMBIGUOUS;
		return;
	}
	json_t *j = json_loadb(r.body ? r.body : "", r.body_len, 0, NULL);
	json_t *ord = r.status == 201 ? j : json_object_get(j, "order");
	const char *id = json_string_value(json_object_get(ord, "id"));
	if ((r.status == 201 || r.status == 409) && id) {
		o->oc = OC_ORDER;
		snprintf(o->id, sizeof(o->id), "%s", id);
	} else if (r.status == 400 || r.status == 422) {
		o->oc = OC_NONE; /* refused before anything was stored */
	} else {
		o->oc = OC_AMBIGUOUS;
	}
	json_decref(j);
	http_resp_free(&r);
}

static void cancel_order(struct op *o)
{
	char h[256], path[128];
	snprintf(h, sizeof(h), "Authorization: Bearer %s\r\n", g->w.ksel);
	snprintf(path, sizeof(path), "/v1/orders/%s/cancel", o->id);
	struct http_resp r;
	o->cancel_sent = 1;
	if (http_do(g->c.router_port, "POST", path, h, "{}", &r))
		return;
	if (r.status == 200)
		o->cancel_ok = 1;
	http_resp_free(&r);
}

static void *client_main(void *arg)
{
	struct client *k = arg;
	while (!atomic_load(&g->stop) && k->n < CHAOS_OPS_MAX) {
		int dice = rnd_in(&k->rng, 1, 100);
		if (dice <= 30 && k->n_live > 0) { /* cancel one of its orders */
			unsigned pick = (unsigned)(rnd(&k->rng) % k->n_live);
			cancel_order(&k->ops[k->live[pick]]);
			k->live[pick] = k->live[--k->n_live];
			k->cancels++;
			continue;
		}
		struct op *o = &k->ops[k->n++];
		snprintf(o->idem, sizeof(o->idem), "chaos-%llu-%d-%u", (unsigned long long)g->seed, k->idx, k->n);
		o->qty = rnd_in(&k->rng, 1, CHAOS_QTY_MAX);
		int st;
		create_order(o, &st);
		k->by_status[st >= 0 && st < 600 ? st : 0]++;
		k->created += o->oc == OC_ORDER;
		k->ambiguous += o->oc == OC_AMBIGUOUS;
		k->none += o->oc == OC_NONE;
		k->unsent += o->oc == OC_UNSENT;
		if (o->oc == OC_ORDER && st == 201)
			k->live[k->n_live++] = k->n - 1;
		if (o->oc == OC_UNSENT)
			k->n--; /* never sent: its slot and key are used again */
		if (o->oc != OC_ORDER)
			usleep((useconds_t)rnd_in(&k->rng, 10, 100) * 1000); /* a cluster in trouble: back off */
	}
	return NULL;
}

/* ---- the restocker (the test's thread, between faults) ------------------------------ */

/* A level's quantities from its owner (GET /v1/inventory/{id}; the list
 * reads the home's replicas): 0, or -1 when it did not answer. */
static int level_read(const char *level, long long *reserved, long long *allocated, long long *on_hand)
{
	char path[128];
	snprintf(path, sizeof(path), "/v1/inventory/%s", level);
	int st = 0;
	json_t *j = tc_call(g->c.router_port, "GET", path, NULL, NULL, &st);
	if (st == 200) {
		*reserved = json_integer_value(json_object_get(j, "reserved"));
		*allocated = json_integer_value(json_object_get(j, "allocated"));
		*on_hand = json_integer_value(json_object_get(j, "on_hand"));
	}
	json_decref(j);
	return st == 200 ? 0 : -1;
}

static long long level_on_hand(const char *level)
{
	long long r, a, v;
	return level_read(level, &r, &a, &v) ? -1 : v;
}

static void restock(struct restock *x)
{
	long long cur = level_on_hand(x->level);
	if (cur < 0)
		return;
	char path[128], body[64];
	snprintf(path, sizeof(path), "/v1/inventory/%s", x->level);
	snprintf(body, sizeof(body), "{\"on_hand\":%lld}", cur + CHAOS_RESTOCK);
	struct http_resp r;
	memset(&r, 0, sizeof(r));
	if (http_do(g->c.router_port, "PATCH", path, NULL, body, &r) == 0 && r.status == 200) {
		x->acked = cur + CHAOS_RESTOCK;
		x->ok++;
	} else if (x->n_tried < CHAOS_RESTOCKS_MAX) {
		x->tried[x->n_tried++] = cur + CHAOS_RESTOCK; /* it may or may not have been applied */
	}
	if (r.body)
		http_resp_free(&r);
}

/* ---- the nemesis ------------------------------------------------------------------- */

enum fault { F_KILL_ROUTER, F_KILL_SHARD, F_CUT_SHARD, F_CUT_ROUTER, F_SLOW, F_RESTOCK, F_CALM, F_N };
static const char *const fault_names[F_N] = {"kill the router",	    "kill a shard", "cut a shard off",
					      "cut the router off", "slow shard 1's link", "restock",
					      "calm"};

static void sleep_ms(long long ms) { usleep((useconds_t)ms * 1000); }

/* One fault, healed before it returns. */
static void nemesis_step(uint64_t *s, long long t0)
{
	enum fault f = (enum fault)rnd_in(s, 0, F_N - 1);
	int shard = rnd_in(s, 0, 2), hold_ms = rnd_in(s, 200, 2500);
	char why[256], out[128];
	cr_log_info("chaos t=%lld ms: %s (shard %d, %d ms)", now_ms() - t0, fault_names[f], shard, hold_ms);
	switch (f) {
	case F_KILL_ROUTER:
		wm_cluster_router_kill9(&g->c);
		sleep_ms(hold_ms);
		cr_assert_eq(wm_cluster_router_start(&g->c), 0, "the router did not restart (logs in %s)", g->c.router_dir);
		break;
	case F_KILL_SHARD:
		wm_cluster_kill9(&g->c, (unsigned)shard);
		sleep_ms(hold_ms);
		cr_assert_eq(wm_cluster_start(&g->c, (unsigned)shard), 0, "shard %d did not restart", shard);
		break;
	case F_CUT_SHARD:
		cr_assert_eq(netns_cut(g->c.port[shard], NULL, NETNS_DROP, why, sizeof(why)), 0, "%s", why);
		sleep_ms(hold_ms);
		cr_assert_eq(netns_heal(g->c.port[shard], NULL, NETNS_DROP, why, sizeof(why)), 0, "%s", why);
		break;
	case F_CUT_ROUTER:
		cr_assert_eq(netns_cut(g->c.router_port, NULL, NETNS_REJECT, why, sizeof(why)), 0, "%s", why);
		sleep_ms(hold_ms);
		cr_assert_eq(netns_heal(g->c.router_port, NULL, NETNS_REJECT, why, sizeof(why)), 0, "%s", why);
		break;
	case F_SLOW: {
		/* mostly slow, at times slower than the router's call time-out (5 s) */
		int d = rnd_in(s, 1, 4) == 4 ? 5500 : rnd_in(s, 20, 400);
		char cmd[32];
		snprintf(cmd, sizeof(cmd), "delay %d", d);
		cr_assert_eq(wm_delay_proxy_control(&g->px, cmd, out, sizeof(out)), 0);
		sleep_ms(d > 5000 ? 6000 : hold_ms);
		cr_assert_eq(wm_delay_proxy_control(&g->px, "delay 0", out, sizeof(out)), 0);
		break;
	}
	case F_RESTOCK:
		restock(&g->rs[0]);
		restock(&g->rs[2]);
		break;
	case F_CALM:
		sleep_ms(hold_ms);
		break;
	case F_N:
		break;
	}
	sleep_ms(rnd_in(s, 100, 800)); /* calm between faults */
}

/* ---- setting up ----------------------------------------------------------------- */

static void start_world(void)
{
	struct wm_cluster *c = &g->c;
	wm_cluster_init(c, 3);
	/* no trade documents: thousands of orders would render PDFs beside the campaign */
	static const char *const extra[] = {"--key-rate-rps", "1000000", "--key-rate-burst", "1000000",
					    "--txn-timeout-ms", "1000", "--documents", "0", NULL};
	for (int i = 0; extra[i]; i++)
		c->extra[i] = extra[i];
	for (int i = 0; i < 4; i++)
		c->router_extra[i] = extra[i];
	/* shard 1 behind the delay proxy, which takes its map address */
	c->listen_port[1] = wm_cluster_free_port();
	char listen[32], target[32], seed[32], msg[512];
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", c->port[1]);
	snprintf(target, sizeof(target), "127.0.0.1:%d", c->listen_port[1]);
	snprintf(seed, sizeof(seed), "%llu", (unsigned long long)g->seed);
	const char *pargs[] = {"--listen", listen, "--target", target, "--delay-ms", "0", "--jitter-ms", "0",
			       "--seed", seed, "--control", "127.0.0.1:0", NULL};
	cr_assert_eq(wm_delay_proxy_run(&g->px, pargs, msg, sizeof(msg)), -1, "the proxy did not start: %s", msg);
	wm_cluster_start_all(c);
	cr_assert_eq(wm_cluster_router_start(c), 0, "the router did not start (logs in %s)", c->router_dir);
	ow_build(&g->w, c->router_port, CHAOS_UNITS, 0, "FR", "DE");
	char lv_at[64];
	ow_add_stock(&g->w, 1, "AT", CHAOS_UNITS, lv_at);
	snprintf(g->rs[0].level, sizeof(g->rs[0].level), "%s", g->w.lv_est);
	snprintf(g->rs[1].level, sizeof(g->rs[1].level), "%s", g->w.lv_stk);
	snprintf(g->rs[2].level, sizeof(g->rs[2].level), "%s", lv_at);
	g->rs[0].acked = g->rs[2].acked = CHAOS_UNITS;
	/* wait until the destination can route an order over both cellars
	 * (its replicas of the FR and AT levels arrived) */
	int st = 0;
	for (int t = 0; t < 500 && st != 200; t++) {
		char quote[512];
		snprintf(quote, sizeof(quote),
			 "{\"destination_country\":\"DE\",\"lines\":[{\"sku\":\"%s\",\"qty\":%d,\"box_units\":12}]}", g->w.w1,
			 CHAOS_UNITS + 1);
		json_decref(tc_call(c->router_port, "POST", "/v1/orders/quote-calculate", g->w.ksel, quote, &st));
		if (st != 200)
			usleep(20 * 1000);
	}
	cr_assert_eq(st, 200, "the destination never saw both cellars");
}

/* ---- after the campaign: learn the ambiguous, check everything ---------------------- */

/* Retry an ambiguous create with its key and body until it says. */
static void resolve(struct op *o)
{
	for (int t = 0; t < 300 && o->oc == OC_AMBIGUOUS; t++) {
		int st;
		create_order(o, &st);
		if (o->oc == OC_UNSENT)
			o->oc = OC_AMBIGUOUS; /* still what the first attempt was */
		if (o->oc == OC_AMBIGUOUS)
			usleep(100 * 1000);
	}
	cr_assert_neq(o->oc, OC_AMBIGUOUS, "order key %s never answered after the heal", o->idem);
}

/* Every item of a cursor-paginated list through the router, as the
 * operator: calls fn on each; the number of items. */
static size_t list_all(const char *path0, void (*fn)(json_t *item, void *arg), void *arg)
{
	char path[512], cursor[256] = "";
	size_t n = 0;
	for (int page = 0; page < 10000; page++) {
		snprintf(path, sizeof(path), "%s%spage_size=200%s%s", path0, strchr(path0, '?') ? "&" : "?",
			 cursor[0] ? "&cursor=" : "", cursor);
		json_t *j = tc_expect(g->c.router_port, "GET", path, NULL, NULL, 200);
		json_t *it;
		size_t i;
		json_array_foreach(json_object_get(j, "data"), i, it)
		{
			fn(it, arg);
			n++;
		}
		const char *next = json_string_value(json_object_get(j, "next_cursor"));
		snprintf(cursor, sizeof(cursor), "%s", next ? next : "");
		json_decref(j);
		if (!cursor[0])
			break;
	}
	return n;
}

/* The orders the cluster has, by id: status, payment state, qty, and the
 * sequence of its order.* events. */
#define CHAOS_EVENTS_MAX 8
struct seen_order {
	char id[64], status[16], pay[16];
	long long qty;
	int known;                            /* a client was told of it */
	struct { char evt[64]; int type; } ev[CHAOS_EVENTS_MAX];
	unsigned n_ev;
};
struct seen {
	struct seen_order *o;
	size_t n, cap;
};

static struct seen_order *seen_find(struct seen *s, const char *id)
{
	for (size_t i = 0; i < s->n; i++) /* a few thousand orders: a scan is fine */
		if (!strcmp(s->o[i].id, id))
			return &s->o[i];
	return NULL;
}

static void on_order(json_t *o, void *arg)
{
	struct seen *s = arg;
	const char *id = json_string_value(json_object_get(o, "id"));
	cr_assert(id, "an order without id");
	cr_assert_null(seen_find(s, id), "order %s listed twice", id);
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 1024;
		s->o = realloc(s->o, s->cap * sizeof(*s->o));
		cr_assert_not_null(s->o);
	}
	struct seen_order *x = &s->o[s->n++];
	memset(x, 0, sizeof(*x));
	snprintf(x->id, sizeof(x->id), "%s", id);
	snprintf(x->status, sizeof(x->status), "%s", json_string_value(json_object_get(o, "status")));
	const char *pay = json_string_value(json_object_get(json_object_get(o, "payment"), "state"));
	snprintf(x->pay, sizeof(x->pay), "%s", pay ? pay : "");
	json_t *line;
	size_t i;
	json_array_foreach(json_object_get(o, "lines"), i, line)
		x->qty += json_integer_value(json_object_get(line, "qty"));
}

/* The spec's order of an order's events (3.1): the forward chain, then
 * the two ends. */
enum { EV_PLACED, EV_PAID, EV_CONFIRMED, EV_SOURCED, EV_FAILED, EV_CANCELLED, EV_N };
static const char *const ev_types[EV_N] = {"order.placed",   "order.paid",   "order.confirmed",
					   "order.sourced",  "order.failed", "order.cancelled"};

struct ev_walk {
	struct seen *s;
	int type;
};

static void on_event(json_t *e, void *arg)
{
	struct ev_walk *w = arg;
	const char *oid = json_string_value(json_object_get(json_object_get(e, "payload"), "order_id"));
	const char *eid = json_string_value(json_object_get(e, "id"));
	cr_assert(oid && eid, "an %s event without order_id", ev_types[w->type]);
	struct seen_order *o = seen_find(w->s, oid);
	cr_assert(o, "an %s event of order %s, which is not listed", ev_types[w->type], oid);
	cr_assert_lt(o->n_ev, CHAOS_EVENTS_MAX, "order %s: more than %d events", oid, CHAOS_EVENTS_MAX);
	snprintf(o->ev[o->n_ev].evt, sizeof(o->ev[o->n_ev].evt), "%s", eid);
	o->ev[o->n_ev++].type = w->type;
}

static int ev_cmp(const void *a, const void *b) { return strcmp(a, b); } /* evt first: ids sort by time */

/* The order's events, in the order they were written, against 3.1. */
static void check_events(struct seen_order *o)
{
	qsort(o->ev, o->n_ev, sizeof(o->ev[0]), ev_cmp);
	char seq[256] = "";
	for (unsigned i = 0; i < o->n_ev; i++)
		snprintf(seq + strlen(seq), sizeof(seq) - strlen(seq), "%s ", ev_types[o->ev[i].type]);
	cr_assert_gt(o->n_ev, 0, "order %s has no events", o->id);
	int forward = 0; /* the next forward event expected */
	for (unsigned i = 0; i < o->n_ev; i++) {
		int t = o->ev[i].type;
		if (t <= EV_SOURCED) {
			cr_assert_eq(t, forward, "order %s: events out of order or with a gap: %s", o->id, seq);
			forward++;
		} else {
			cr_assert_eq(i, o->n_ev - 1, "order %s: an event after its end: %s", o->id, seq);
			/* forward = how many of placed, paid, ... were seen: failed
			 * follows placed or paid (a failure before the decision) */
			cr_assert(t == EV_CANCELLED || forward <= EV_CONFIRMED,
				  "order %s: failed after it was confirmed: %s", o->id, seq);
		}
	}
	int last = o->ev[o->n_ev - 1].type;
	static const char *const want_last[EV_N] = {"placed", "paid", "confirmed", "reserved", "failed", "cancelled"};
	cr_assert_str_eq(o->status, want_last[last], "order %s is %s but its events are %s", o->id, o->status, seq);
}

static void check_world(void)
{
	/* the whole-cluster checker, until the cluster is at rest */
	static char report[65536];
	int rc = -1;
	for (long long t0 = now_ms(); now_ms() - t0 < CHAOS_SETTLE_MS;) {
		rc = wm_cluster_check(&g->c, 0, report, sizeof(report));
		if (rc == 0)
			break;
		sleep_ms(500);
	}
	cr_assert_eq(rc, 0, "wm-ctl cluster check after the heal: %s", report);
	/* the ambiguous answers, asked again */
	unsigned long resolved = 0;
	for (int k = 0; k < CHAOS_CLIENTS; k++)
		for (unsigned i = 0; i < g->cl[k].n; i++)
			if (g->cl[k].ops[i].oc == OC_AMBIGUOUS) {
				resolve(&g->cl[k].ops[i]);
				resolved++;
			}
	/* a retry may have placed an order just now: at rest again */
	for (long long t0 = now_ms(); now_ms() - t0 < CHAOS_SETTLE_MS;) {
		rc = wm_cluster_check(&g->c, 0, report, sizeof(report));
		if (rc == 0)
			break;
		sleep_ms(500);
	}
	cr_assert_eq(rc, 0, "wm-ctl cluster check after the retries: %s", report);
	/* every order the cluster has, exactly once */
	struct seen s = {0};
	list_all("/v1/orders", on_order, &s);
	unsigned long told = 0;
	for (int k = 0; k < CHAOS_CLIENTS; k++)
		for (unsigned i = 0; i < g->cl[k].n; i++) {
			struct op *o = &g->cl[k].ops[i];
			if (o->oc != OC_ORDER)
				continue;
			struct seen_order *x = seen_find(&s, o->id);
			cr_assert(x, "order %s (key %s) was acknowledged but does not exist", o->id, o->idem);
			cr_assert_not(x->known, "order %s was given to two keys", o->id);
			x->known = 1;
			told++;
			cr_assert_eq(x->qty, o->qty, "order %s: %lld units, asked %d", o->id, x->qty, o->qty);
		}
	long long live_units = 0;
	for (size_t i = 0; i < s.n; i++) {
		struct seen_order *x = &s.o[i];
		cr_assert(x->known, "order %s exists but no client was told of it (a duplicate of a retried key?)", x->id);
		int reserved = !strcmp(x->status, "reserved");
		cr_assert(reserved || !strcmp(x->status, "failed") || !strcmp(x->status, "cancelled"),
			  "order %s is not at rest: %s", x->id, x->status);
		if (reserved) {
			live_units += x->qty;
			cr_assert_str_eq(x->pay, "captured", "order %s is reserved but not charged", x->id);
		} else {
			cr_assert_str_neq(x->pay, "captured", "order %s is %s but still charged", x->id, x->status);
		}
	}
	/* the events, per order, in the spec's order */
	for (int t = 0; t < EV_N; t++) {
		char path[96];
		snprintf(path, sizeof(path), "/v1/events?type=%s", ev_types[t]);
		struct ev_walk ew = {&s, t};
		list_all(path, on_event, &ew);
	}
	for (size_t i = 0; i < s.n; i++)
		check_events(&s.o[i]);
	/* the units: live orders = allocated; nothing prepared; on hand as set */
	long long allocated = 0;
	for (int i = 0; i < CHAOS_LEVELS; i++) {
		long long res, alloc, on_hand;
		cr_assert_eq(level_read(g->rs[i].level, &res, &alloc, &on_hand), 0, "level %s unreadable", g->rs[i].level);
		cr_assert_eq(res, 0, "level %s: %lld units still prepared", g->rs[i].level, res);
		allocated += alloc;
		int as_set = on_hand == g->rs[i].acked;
		for (unsigned k = 0; k < g->rs[i].n_tried && !as_set; k++)
			as_set = on_hand == g->rs[i].tried[k];
		cr_assert(as_set, "level %s: on hand %lld, but the restocker last set %lld", g->rs[i].level, on_hand,
			  g->rs[i].acked);
	}
	cr_assert_eq(live_units, allocated, "units in reserved orders %lld, allocated %lld", live_units, allocated);
	struct http_resp r;
	long replans = -1;
	if (http_do(g->c.router_port, "GET", "/metrics", NULL, NULL, &r) == 0) {
		const char *at = strstr(r.body, "\nwm_router_txn_replans_total ");
		replans = at ? strtol(at + 30, NULL, 10) : -1;
		http_resp_free(&r);
	}
	cr_log_info("chaos seed %llu: %zu orders (%lu told, %lu ambiguous resolved), %lld units live, %ld re-plans "
		    "since the router's last start, checks passed",
		    (unsigned long long)g->seed, s.n, told, resolved, live_units, replans);
	free(s.o);
}

WM_TEST(chaos, orders_race_for_the_last_units_while_a_nemesis_kills_cuts_and_slows, .timeout = CHAOS_SECONDS_MAX + 1200)
{
	signal(SIGPIPE, SIG_IGN); /* a client writing to a process the nemesis killed */
	static struct chaos world;
	g = &world;
	const char *e = getenv("WM_CHAOS_SEED");
	g->seed = e && *e ? strtoull(e, NULL, 10) : 42;
	e = getenv("WM_CHAOS_SECONDS");
	long long secs = e && *e ? atoll(e) : CHAOS_SECONDS_DEFAULT;
	cr_assert(secs >= 1 && secs <= CHAOS_SECONDS_MAX, "WM_CHAOS_SECONDS must be 1..%d", CHAOS_SECONDS_MAX);
	cr_log_info("chaos: seed %llu for %lld s (WM_CHAOS_SEED=%llu WM_CHAOS_SECONDS=%lld reproduce it)",
		    (unsigned long long)g->seed, secs, (unsigned long long)g->seed, secs);
	fprintf(stderr, "chaos: seed %llu for %lld s\n", (unsigned long long)g->seed, secs);
	char why[256];
	cr_assert_eq(netns_enter(why, sizeof(why)), 0, "cannot enter a network namespace: %s", why);
	start_world();
	uint64_t nem = g->seed * 0x9e3779b97f4a7c15ull + 1;
	for (int k = 0; k < CHAOS_CLIENTS; k++) {
		struct client *cl = &g->cl[k];
		cl->idx = k;
		cl->rng = (g->seed + 1) * 0xbf58476d1ce4e5b9ull + (uint64_t)k * 0x94d049bb133111ebull + 1;
		cl->ops = calloc(CHAOS_OPS_MAX, sizeof(*cl->ops));
		cr_assert_not_null(cl->ops);
		cr_assert_eq(pthread_create(&cl->th, NULL, client_main, cl), 0);
	}
	long long t0 = now_ms();
	while (now_ms() - t0 < secs * 1000)
		nemesis_step(&nem, t0);
	atomic_store(&g->stop, 1);
	for (int k = 0; k < CHAOS_CLIENTS; k++)
		pthread_join(g->cl[k].th, NULL);
	unsigned long created = 0, ambiguous = 0, cancels = 0, none = 0, unsent = 0;
	for (int k = 0; k < CHAOS_CLIENTS; k++) {
		created += g->cl[k].created;
		ambiguous += g->cl[k].ambiguous;
		cancels += g->cl[k].cancels;
		none += g->cl[k].none;
		unsent += g->cl[k].unsent;
	}
	char sum[256];
	snprintf(sum, sizeof(sum),
		 "chaos: %lu orders answered, %lu sent without an answer, %lu refused (4xx, nothing stored), %lu not "
		 "sent (connection refused), %lu cancels sent",
		 created, ambiguous, none, unsent, cancels);
	cr_log_info("%s", sum);
	fprintf(stderr, "%s\n", sum);
	for (int st = 100; st < 600; st++) {
		unsigned long n = 0;
		for (int k = 0; k < CHAOS_CLIENTS; k++)
			n += g->cl[k].by_status[st];
		if (n)
			cr_log_info("chaos: %lu creates answered %d", n, st);
	}
	cr_assert_gt(created, 0, "no order was ever answered: the campaign tested nothing");
	check_world();
	for (int k = 0; k < CHAOS_CLIENTS; k++)
		free(g->cl[k].ops);
	wm_cluster_cleanup(&g->c);
	wm_delay_proxy_stop(&g->px);
}
