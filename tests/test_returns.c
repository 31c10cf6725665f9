/*
 * test_returns.c -- returns and refunds after delivery (issue: after the
 * sale, item 4): partial per line, `refund` (money back, goods stay) and
 * `return` (goods back as incoming, money back on receipt), the last
 * return refunding exactly what is left of the charge, the complaint
 * window, who may ask and receive, and kill -9 between the steps.
 *
 * The world (order_world.h): 30 units split estate 24 (L1) + stockist 6
 * (L2), one order line.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/order_world.h"
#include "tests/wm_test.h"

static const char *dump(json_t *j)
{
	static char b[16384];
	size_t n = json_dumpb(j, b, sizeof(b) - 1, JSON_COMPACT);
	b[n < sizeof(b) - 1 ? n : sizeof(b) - 1] = 0;
	return b;
}

static json_t *jat(json_t *o, const char *k, size_t i) { return json_array_get(json_object_get(o, k), i); }

static json_t *order_now(struct oworld *x, const char *id)
{
	char path[160];
	snprintf(path, sizeof(path), "/v1/orders/%s", id);
	return tc_expect(x->port, "GET", path, NULL, NULL, 200);
}

/* An order of 30 units, every leg shipped and delivered `ago_s` ago: its id. */
static void delivered_order(struct oworld *x, long ago_s, char *id)
{
	int st;
	json_t *o = ow_order(x, 30, NULL, NULL, &st);
	cr_assert_eq(st, 201, "%s", dump(o));
	snprintf(id, 64, "%s", tc_jstr(o, "id"));
	json_decref(o);
	ow_deliver(x, id, ~0u, ago_s);
}

static json_t *ask(struct oworld *x, const char *key, const char *id, const char *body, int want)
{
	char path[160];
	snprintf(path, sizeof(path), "/v1/orders/%s/returns", id);
	return tc_expect(x->port, "POST", path, key, body, want);
}

/* What the consumer paid for line 0 (every component), and the charge. */
static void paid(struct oworld *x, const char *id, long long *line0, long long *total)
{
	json_t *o = order_now(x, id);
	size_t i;
	json_t *l;
	*line0 = 0;
	json_array_foreach(json_object_get(json_object_get(o, "financial_breakdown"), "lines"), i, l)
		if (json_integer_value(json_object_get(l, "line")) == 0)
			*line0 += ow_cents(l, "amount");
	*total = ow_cents(o, "total");
	json_decref(o);
}

/* The ledger's refunded amount (cents) and state. */
static long long ledger(struct oworld *x, const char *id, char *state, size_t n)
{
	char path[160];
	snprintf(path, sizeof(path), "/v1/admin/payments/%s", id);
	json_t *p = tc_expect(x->port, "GET", path, NULL, NULL, 200);
	snprintf(state, n, "%s", tc_jstr(p, "state"));
	long long r = ow_cents(p, "refunded");
	json_decref(p);
	return r;
}

static void level(struct oworld *x, const char *lv, long long *on_hand, long long *incoming);

/* The level shows on_hand and incoming (waited for, bounded: stock on
 * another shard hears of a return a moment later in the cluster topology). */
static void level_is(struct oworld *x, const char *lv, long long on_hand, long long incoming, const char *what)
{
	long long oh = -1, in = -1;
	for (int t = 0; t < 100; t++) {
		level(x, lv, &oh, &in);
		if (oh == on_hand && in == incoming)
			return;
		usleep(50 * 1000);
	}
	cr_assert_fail("%s: on_hand %lld incoming %lld, want %lld %lld", what, oh, in, on_hand, incoming);
}

static void level(struct oworld *x, const char *lv, long long *on_hand, long long *incoming)
{
	char path[160];
	snprintf(path, sizeof(path), "/v1/inventory/%s", lv);
	json_t *l = tc_expect(x->port, "GET", path, NULL, NULL, 200);
	*on_hand = json_integer_value(json_object_get(l, "on_hand"));
	*incoming = json_integer_value(json_object_get(l, "incoming"));
	json_decref(l);
}

WM_TEST(returns, refunds_and_returns_per_line_sum_to_the_charge)
{
	struct oworld x;
	ow_start(&x, NULL, 24, 24);
	char id[64], state[32];
	/* not delivered yet: no return */
	int st;
	json_t *o = ow_order(&x, 2, NULL, NULL, &st);
	cr_assert_eq(st, 201);
	json_t *e = ask(&x, x.ksel, tc_jstr(o, "id"), "{\"kind\":\"refund\",\"reason\":\"damaged\"}", 409);
	cr_assert_str_eq(tc_jstr(e, "code"), "invalid_order_state");
	json_decref(e);
	json_decref(o);

	delivered_order(&x, 3600, id); /* the estate had 22 left: L1 22, L2 8 */
	long long line0, total;
	paid(&x, id, &line0, &total);
	cr_assert_gt(total, 0);
	/* the estate is not the consumer's side; bad bodies */
	json_decref(ask(&x, x.kest, id, "{\"kind\":\"refund\",\"reason\":\"damaged\"}", 403));
	e = ask(&x, x.ksel, id, "{\"kind\":\"swap\",\"lines\":[{\"line\":3,\"qty\":1}]}", 422);
	cr_assert(tc_lists_error(e, "kind", "enum") || tc_lists_error(e, "kind", "invalid"), "%s", dump(e));
	cr_assert(tc_lists_error(e, "reason", "required"), "%s", dump(e));
	json_decref(e);
	e = ask(&x, x.ksel, id, "{\"kind\":\"refund\",\"reason\":\"damaged\",\"lines\":[{\"line\":0,\"qty\":31}]}", 422);
	cr_assert(tc_lists_error(e, "lines[0]", "range"), "more than was bought: %s", dump(e));
	json_decref(e);

	/* 1. a refund of 3 units: 3/30 of line 0, rounded half-up, at once */
	json_t *r = ask(&x, x.ksel, id, "{\"kind\":\"refund\",\"reason\":\"damaged\",\"lines\":[{\"line\":0,\"qty\":3}]}",
			201);
	long long a1 = (line0 * 3 + 15) / 30;
	cr_assert_eq(ow_cents(r, "amount"), a1, "%s", dump(r));
	cr_assert_str_eq(tc_jstr(r, "status"), "refunded", "%s", dump(r));
	cr_assert_eq(json_array_size(json_object_get(r, "legs")), 0, "a refund sends nothing back");
	json_decref(r);
	cr_assert_eq(ledger(&x, id, state, sizeof(state)), a1);
	cr_assert_str_eq(state, "captured", "a partial refund keeps the charge captured");
	o = order_now(&x, id);
	cr_assert_str_eq(tc_jstr(o, "status"), "refunded");
	cr_assert_str_eq(tc_jstr(json_object_get(o, "payment"), "state"), "partially_refunded");
	json_decref(o);

	/* 2. a return of 6 units: back through the estate's leg as incoming */
	long long oh0, in0;
	level(&x, x.lv_est, &oh0, &in0);
	r = ask(&x, x.ksel, id, "{\"kind\":\"return\",\"reason\":\"wrong_item\",\"lines\":[{\"line\":0,\"qty\":6}]}", 201);
	char rid[128];
	snprintf(rid, sizeof(rid), "%s", tc_jstr(r, "id"));
	cr_assert_str_eq(tc_jstr(r, "status"), "requested");
	cr_assert_eq(json_integer_value(json_object_get(jat(r, "legs", 0), "qty")), 6, "%s", dump(r));
	long long a2 = (line0 * 6 + 15) / 30;
	cr_assert_eq(ow_cents(r, "amount"), a2);
	json_decref(r);
	level_is(&x, x.lv_est, oh0, in0 + 6, "on the way back");
	cr_assert_eq(ledger(&x, id, state, sizeof(state)), a1, "no money before the goods are back");
	/* received: by the leg's fulfiller, not by the stockist */
	char path[256];
	snprintf(path, sizeof(path), "/v1/orders/%s/returns/%s/receive", id, rid);
	json_decref(tc_expect(x.port, "POST", path, x.kstk, "{}", 403));
	r = tc_expect(x.port, "POST", path, x.kest, "{}", 200);
	cr_assert_str_eq(tc_jstr(r, "status"), "refunded", "%s", dump(r));
	cr_assert(!json_object_get(r, "amount"), "the fulfiller does not see the money: %s", dump(r));
	json_decref(r);
	level_is(&x, x.lv_est, oh0 + 6, in0, "back on hand");
	cr_assert_eq(ledger(&x, id, state, sizeof(state)), a1 + a2);
	e = tc_expect(x.port, "POST", path, x.kest, "{}", 409);
	cr_assert_str_eq(tc_jstr(e, "code"), "invalid_return_state");
	json_decref(e);

	/* 3. the rest (no lines): exactly what is left of the charge */
	r = ask(&x, NULL, id, "{\"kind\":\"refund\",\"reason\":\"other\"}", 201);
	cr_assert_eq(ow_cents(r, "amount"), total - a1 - a2, "%s", dump(r));
	cr_assert_eq(json_integer_value(json_object_get(jat(r, "lines", 0), "qty")), 21);
	json_decref(r);
	cr_assert_eq(ledger(&x, id, state, sizeof(state)), total);
	cr_assert_str_eq(state, "refunded");
	o = order_now(&x, id);
	cr_assert_str_eq(tc_jstr(json_object_get(o, "payment"), "state"), "refunded");
	json_decref(o);
	/* nothing left */
	e = ask(&x, x.ksel, id, "{\"kind\":\"refund\",\"reason\":\"other\"}", 422);
	cr_assert(tc_lists_error(e, "lines", "range"), "%s", dump(e));
	json_decref(e);
	/* the list: three, the seller sees the money, the estate only what went through its leg */
	snprintf(path, sizeof(path), "/v1/orders/%s/returns", id);
	json_t *l = tc_expect(x.port, "GET", path, x.ksel, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(l, "data")), 3, "%s", dump(l));
	json_decref(l);
	l = tc_expect(x.port, "GET", path, x.kest, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(l, "data")), 1, "%s", dump(l));
	json_decref(l);
	cr_assert_eq(tc_count_events(x.port, "order.refunded", NULL), 2);
	cr_assert_eq(tc_count_events(x.port, "order.returned", NULL), 1);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

/* The complaint window: 7 days after the last leg's delivery. */
WM_TEST(returns, the_complaint_window_closes_seven_days_after_delivery)
{
	struct oworld x;
	ow_start(&x, NULL, 48, 48);
	char late[64], inside[64];
	delivered_order(&x, 8 * 86400, late);
	delivered_order(&x, 6 * 86400, inside);
	json_t *e = ask(&x, x.ksel, late, "{\"kind\":\"refund\",\"reason\":\"damaged\"}", 409);
	cr_assert_str_eq(tc_jstr(e, "code"), "complaint_window_closed");
	cr_assert(strstr(tc_jstr(e, "detail"), "7 days"), "%s", dump(e));
	json_decref(e);
	json_decref(ask(&x, x.ksel, inside, "{\"kind\":\"refund\",\"reason\":\"damaged\"}", 201));
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

/* kill -9 after the return is stored and before its refund, and after the
 * ledger refunded and before the return says so: the restarted shard
 * finishes it, and the money moves once. */
static void refund_crash(const char *point)
{
	struct oworld x;
	ow_start(&x, NULL, 24, 24);
	char id[64], state[32];
	delivered_order(&x, 3600, id);
	long long line0, total;
	paid(&x, id, &line0, &total);
	cr_assert_eq(wm_stop(&x.p), 0);
	ow_restart(&x, point);
	char path[160], hdr[256];
	snprintf(path, sizeof(path), "/v1/orders/%s/returns", id);
	snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s\r\n", x.ksel);
	struct http_resp r;
	if (http_do(x.port, "POST", path, hdr, "{\"kind\":\"refund\",\"reason\":\"damaged\",\"lines\":[{\"line\":0,\"qty\":10}]}",
		    &r) == 0) {
		cr_log_error("%d %s", r.status, r.body);
		http_resp_free(&r);
		cr_assert_fail("%s: the shard answered instead of dying", point);
	}
	cr_assert_eq(wm_wait(&x.p, 20000), 137, "%s: no crash", point);
	ow_restart(&x, NULL);
	long long want = (line0 * 10 + 15) / 30, got = 0;
	json_t *l = NULL;
	for (int t = 0; t < 100; t++) {
		json_decref(l);
		l = tc_expect(x.port, "GET", path, x.ksel, NULL, 200);
		if (!strcmp(tc_jstr(jat(l, "data", 0), "status"), "refunded"))
			break;
		usleep(50 * 1000);
	}
	cr_assert_str_eq(tc_jstr(jat(l, "data", 0), "status"), "refunded", "%s: %s", point, dump(l));
	json_decref(l);
	got = ledger(&x, id, state, sizeof(state));
	cr_assert_eq(got, want, "%s: refunded %lld, want %lld (once)", point, got, want);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

WM_TEST(returns, kill9_before_the_refund_is_finished_by_recovery) { refund_crash("return_crash_after_request"); }
WM_TEST(returns, kill9_after_the_ledger_refund_is_finished_once) { refund_crash("return_crash_after_refund"); }
