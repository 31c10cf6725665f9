/*
 * test_settlement.c -- settlement and payouts (issue: after the sale,
 * items 5 and 6; the arithmetic's property is in test_settlement_units.c):
 * over HTTP the payout states (pending until the party's legs are
 * delivered and its days passed, eligible, paid by a run, clawed back by a
 * later refund), order.settled, visibility, the money reconciling after
 * every step on random orders with splits and returns, and a kill -9 in
 * the middle of a run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/order_world.h"
#include "tests/wm_test.h"

static uint64_t rng_state;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* ---- over HTTP -------------------------------------------------------------------------------- */

static const char *dump(json_t *j)
{
	static char b[16384];
	size_t n = json_dumpb(j, b, sizeof(b) - 1, JSON_COMPACT);
	b[n < sizeof(b) - 1 ? n : sizeof(b) - 1] = 0;
	return b;
}


/* An order of qty units; the legs listed in `deliver` (bits) shipped and
 * delivered `ago_s` ago.  Its id. */
static void order_delivered(struct oworld *x, int qty, unsigned deliver, long ago_s, char *id)
{
	int st;
	json_t *o = ow_order(x, qty, NULL, NULL, &st);
	cr_assert_eq(st, 201, "%s", dump(o));
	snprintf(id, 64, "%s", tc_jstr(o, "id"));
	json_decref(o);
	ow_deliver(x, id, deliver, ago_s);
}

static json_t *settlement(struct oworld *x, const char *key, const char *id)
{
	char path[160];
	snprintf(path, sizeof(path), "/v1/orders/%s/settlement", id);
	return tc_expect(x->port, "GET", path, key, NULL, 200);
}

static json_t *run(struct oworld *x)
{
	return tc_expect(x->port, "POST", "/v1/admin/payout-runs", NULL, "{}", 200);
}

static const char *status_of(struct oworld *x, const char *id, char *out)
{
	char path[160];
	snprintf(path, sizeof(path), "/v1/orders/%s", id);
	json_t *o = tc_expect(x->port, "GET", path, NULL, NULL, 200);
	snprintf(out, 32, "%s", tc_jstr(o, "status"));
	json_decref(o);
	return out;
}

/* The money of a settlement as the platform sees it reconciles by hand:
 * charged = Σ payouts' net + fee, excise and VAT net + refunds, and what
 * each party keeps (paid - clawed back) is never above its net. */
static void reconciles(struct oworld *x, const char *id)
{
	json_t *s = settlement(x, NULL, id);
	long long sum = ow_cents(json_object_get(s, "platform_fee"), "net") + ow_cents(json_object_get(s, "excise"), "net") +
			ow_cents(json_object_get(s, "vat"), "net") + ow_cents(s, "refunds");
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(s, "payouts"), i, p)
	{
		sum += ow_cents(p, "net");
		cr_assert(ow_cents(p, "paid") - ow_cents(p, "clawed_back") <= ow_cents(p, "net") ||
				  !strcmp(tc_jstr(p, "state"), "eligible") || !strcmp(tc_jstr(p, "state"), "pending"),
			  "a party keeps more than it is owed: %s", dump(p));
	}
	cr_assert_eq(sum, ow_cents(s, "charged"), "%s", dump(s));
	cr_assert(json_is_true(json_object_get(s, "reconciles")), "%s", dump(s));
	json_decref(s);
}

WM_TEST(settlement, payouts_wait_for_their_legs_and_days)
{
	struct oworld x;
	ow_start(&x, NULL, 24, 24);
	char id[64], st[32];
	order_delivered(&x, 30, 1, 3600, id); /* only the estate's leg is delivered */
	json_t *s = settlement(&x, NULL, id);
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(s, "payouts"), i, p)
	{
		cr_assert_str_eq(tc_jstr(p, "state"), "pending", "%s", dump(p));
		/* the estate's own: eligible 7 days (the complaint window) after its delivery */
		if (!strcmp(tc_jstr(p, "partner_id"), x.est))
			cr_assert(json_is_string(json_object_get(p, "eligible_at")), "%s", dump(p));
		else
			cr_assert(json_is_null(json_object_get(p, "eligible_at")), "legs not delivered: %s", dump(p));
	}
	cr_assert_str_eq(tc_jstr(s, "state"), "open");
	json_decref(s);
	json_t *r = run(&x);
	cr_assert_eq(json_integer_value(json_object_get(r, "payouts_paid")), 0, "%s", dump(r));
	json_decref(r);
	cr_assert_str_eq(status_of(&x, id, st), "reserved");
	/* a partner sees its own payouts only, and no fee or tax */
	s = settlement(&x, x.kstk, id);
	json_array_foreach(json_object_get(s, "payouts"), i, p)
		cr_assert_str_eq(tc_jstr(p, "partner_id"), x.stk, "%s", dump(s));
	cr_assert(!json_object_get(s, "platform_fee"), "%s", dump(s));
	json_decref(s);
	reconciles(&x, id);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

WM_TEST(settlement, a_partner_without_a_payout_account_is_held_until_it_names_one)
{
	static const char *const extra[] = {"--payout-days", "originator=0,seller=0,fulfiller=0", NULL};
	memcpy(ow_extra_args, extra, sizeof(extra));
	struct oworld x;
	ow_start(&x, NULL, 24, 0);
	memset(ow_extra_args, 0, sizeof(ow_extra_args));
	/* the seller removes its payout account (null: merge-patch removal) */
	char path[160], id[64], st[32];
	snprintf(path, sizeof(path), "/v1/partners/%s", x.sel);
	json_decref(tc_expect(x.port, "PATCH", path, NULL, "{\"payout_provider\":null,\"payout_account_id\":null}", 200));
	order_delivered(&x, 6, 1, 3600, id); /* one leg, the estate's */
	json_t *r = run(&x);
	cr_assert_eq(json_integer_value(json_object_get(r, "payouts_held")), 1, "the seller's: %s", dump(r));
	long long paid = json_integer_value(json_object_get(r, "payouts_paid"));
	cr_assert_gt(paid, 0, "the others are paid: %s", dump(r));
	json_decref(r);
	json_t *s = settlement(&x, NULL, id);
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(s, "payouts"), i, p)
	{
		int sel = !strcmp(tc_jstr(p, "partner_id"), x.sel);
		cr_assert_str_eq(tc_jstr(p, "state"), sel ? "eligible" : "paid", "%s", dump(p));
		if (sel)
			cr_assert_str_eq(tc_jstr(p, "held"), "no_payout_account", "%s", dump(p));
		else
			cr_assert(json_is_null(json_object_get(p, "held")), "%s", dump(p));
	}
	cr_assert_str_eq(tc_jstr(s, "state"), "open");
	json_decref(s);
	cr_assert_str_eq(status_of(&x, id, st), "delivered", "not settled while a payout waits");
	reconciles(&x, id);
	/* a second run holds it again; once the seller names an account, the next pays it */
	r = run(&x);
	cr_assert_eq(json_integer_value(json_object_get(r, "payouts_held")), 1);
	cr_assert_eq(json_integer_value(json_object_get(r, "payouts_paid")), 0);
	json_decref(r);
	json_decref(tc_expect(x.port, "PATCH", path, NULL,
			      "{\"payout_provider\":\"sandbox\",\"payout_account_id\":\"acct_shop_2\"}", 200));
	r = run(&x);
	cr_assert_eq(json_integer_value(json_object_get(r, "payouts_held")), 0, "%s", dump(r));
	cr_assert_eq(json_integer_value(json_object_get(r, "payouts_paid")), 1, "%s", dump(r));
	json_decref(r);
	cr_assert_str_eq(status_of(&x, id, st), "settled");
	reconciles(&x, id);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

WM_TEST(settlement, a_run_pays_the_eligible_then_a_refund_claws_back)
{
	static const char *const extra[] = {"--payout-days", "originator=0,seller=0,fulfiller=0", NULL};
	memcpy(ow_extra_args, extra, sizeof(extra));
	struct oworld x;
	ow_start(&x, NULL, 24, 24);
	memset(ow_extra_args, 0, sizeof(ow_extra_args));
	char id[64], st[32];
	order_delivered(&x, 30, 1, 3600, id); /* the estate's leg delivered, the stockist's not */
	json_t *r = run(&x);
	long long first = json_integer_value(json_object_get(r, "payouts_paid"));
	cr_assert_gt(first, 0, "the estate's payouts: %s", dump(r));
	json_decref(r);
	json_t *s = settlement(&x, NULL, id);
	size_t i, parties = json_array_size(json_object_get(s, "payouts"));
	json_t *p;
	json_array_foreach(json_object_get(s, "payouts"), i, p)
	{
		int mine = !strcmp(tc_jstr(p, "partner_id"), x.est);
		cr_assert_str_eq(tc_jstr(p, "state"), mine ? "paid" : "pending", "%s", dump(p));
		if (mine)
			cr_assert_eq(ow_cents(p, "paid"), ow_cents(p, "net"));
	}
	json_decref(s);
	cr_assert_str_eq(status_of(&x, id, st), "reserved", "one leg not delivered yet");
	reconciles(&x, id);
	/* the stockist's leg now: everything paid, the order settled */
	char path[320];
	ow_deliver(&x, id, 2, 1800);
	r = run(&x);
	cr_assert_eq(json_integer_value(json_object_get(r, "payouts_paid")), (long long)parties - first, "%s", dump(r));
	json_decref(r);
	cr_assert_str_eq(status_of(&x, id, st), "settled");
	cr_assert_eq(tc_count_events(x.port, "settlement.released", NULL), parties);
	cr_assert_eq(tc_count_events(x.port, "order.settled", NULL), 1);
	s = settlement(&x, NULL, id);
	cr_assert_str_eq(tc_jstr(s, "state"), "settled");
	cr_assert(json_is_string(json_object_get(s, "payout_date")));
	json_decref(s);
	reconciles(&x, id);
	/* a run again pays nothing twice */
	r = run(&x);
	cr_assert_eq(json_integer_value(json_object_get(r, "payouts_paid")), 0);
	json_decref(r);

	/* a refund of 10 units after the payouts: every party gives its share back */
	snprintf(path, sizeof(path), "/v1/orders/%s/returns", id);
	json_t *ret = tc_expect(x.port, "POST", path, x.ksel,
				"{\"kind\":\"refund\",\"reason\":\"damaged\",\"lines\":[{\"line\":0,\"qty\":10}]}", 201);
	long long refund = ow_cents(ret, "amount");
	json_decref(ret);
	cr_assert_str_eq(status_of(&x, id, st), "refunded");
	s = settlement(&x, NULL, id);
	long long clawed = 0, other = 0;
	size_t nclawed = 0;
	json_array_foreach(json_object_get(s, "payouts"), i, p)
	{
		nclawed += ow_cents(p, "clawed_back") > 0;
		cr_assert_str_eq(tc_jstr(p, "state"), ow_cents(p, "refunded") ? "clawed_back" : "paid", "%s", dump(p));
		cr_assert_eq(ow_cents(p, "clawed_back"), ow_cents(p, "refunded"), "%s", dump(p));
		clawed += ow_cents(p, "clawed_back");
	}
	other = ow_cents(json_object_get(s, "platform_fee"), "refunded") + ow_cents(json_object_get(s, "excise"), "refunded") +
		ow_cents(json_object_get(s, "vat"), "refunded");
	cr_assert_eq(clawed + other, refund, "the refund is taken from the buckets exactly: %s", dump(s));
	cr_assert_gt(clawed, 0);
	json_decref(s);
	cr_assert_eq(tc_count_events(x.port, "settlement.clawed_back", NULL), nclawed);
	reconciles(&x, id);
	/* kill -9 and restart: the same settlement */
	wm_kill9(&x.p);
	ow_restart(&x, NULL);
	reconciles(&x, id);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

/* kill -9 right after the first payout of a run: the next run pays the
 * rest and none twice. */
WM_TEST(settlement, kill9_in_a_run_pays_each_once)
{
	static const char *const extra[] = {"--payout-days", "originator=0,seller=0,fulfiller=0", NULL};
	memcpy(ow_extra_args, extra, sizeof(extra));
	struct oworld x;
	ow_start(&x, NULL, 24, 24);
	char id[64], st[32];
	order_delivered(&x, 30, 3, 3600, id);
	cr_assert_eq(wm_stop(&x.p), 0);
	ow_restart(&x, "payout_crash_after_pay");
	struct http_resp r;
	cr_assert_neq(http_do(x.port, "POST", "/v1/admin/payout-runs", NULL, "{}", &r), 0, "the run answered");
	cr_assert_eq(wm_wait(&x.p, 20000), 137);
	ow_restart(&x, NULL);
	memset(ow_extra_args, 0, sizeof(ow_extra_args));
	cr_assert_eq(tc_count_events(x.port, "settlement.released", NULL), 1, "one payout before the crash");
	json_decref(run(&x));
	json_t *s = settlement(&x, NULL, id);
	size_t parties = json_array_size(json_object_get(s, "payouts"));
	json_decref(s);
	cr_assert_eq(tc_count_events(x.port, "settlement.released", NULL), parties, "each payout once");
	cr_assert_str_eq(status_of(&x, id, st), "settled");
	reconciles(&x, id);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

/* The money reconciles at every step on random orders with splits,
 * partial refunds and returns of goods (received, then refunded), before
 * and after payouts (so with clawbacks). */
WM_TEST(settlement, money_reconciles_on_random_orders_with_returns, .timeout = 120)
{
	static const char *const extra[] = {"--payout-days", "originator=0,seller=0,fulfiller=0", NULL};
	memcpy(ow_extra_args, extra, sizeof(extra));
	struct oworld x;
	ow_start(&x, NULL, 200, 200);
	memset(ow_extra_args, 0, sizeof(ow_extra_args));
	rng_state = 0xa11ce5;
	cr_log_info("seed 0xa11ce5");
	for (int k = 0; k < 6; k++) {
		char id[64], path[160], body[200];
		int qty = 1 + (int)(rnd() % 40);
		order_delivered(&x, qty, 3, 3600, id);
		reconciles(&x, id);
		if (rnd() % 2)
			json_decref(run(&x)); /* paid before the refunds: they claw back */
		int left = qty;
		for (int n = 0; n < 3 && left > 0; n++) {
			int q = 1 + (int)(rnd() % (unsigned)left);
			left -= q;
			/* a refund, or a return of goods received back (refunded on receipt) */
			int goods = (int)(rnd() % 2);
			snprintf(path, sizeof(path), "/v1/orders/%s/returns", id);
			snprintf(body, sizeof(body), "{\"kind\":\"%s\",\"reason\":\"other\",\"lines\":[{\"line\":0,\"qty\":%d}]}",
				 goods ? "return" : "refund", q);
			json_t *ret = tc_expect(x.port, "POST", path, x.ksel, body, 201);
			char rpath[256];
			snprintf(rpath, sizeof(rpath), "/v1/orders/%s/returns/%s/receive", id, tc_jstr(ret, "id"));
			json_decref(ret);
			reconciles(&x, id); /* requested, not yet refunded: still whole */
			if (goods)
				json_decref(tc_expect(x.port, "POST", rpath, NULL, "{}", 200));
			reconciles(&x, id);
		}
		json_decref(run(&x));
		reconciles(&x, id);
	}
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

/* kill -9 after a refund is paid back and before the payouts already paid
 * give their share back: the next payout run claws it back (the order is
 * refunded, so the run visits it), and the money reconciles. */
WM_TEST(settlement, kill9_before_a_clawback_is_finished_by_the_next_run)
{
	static const char *const extra[] = {"--payout-days", "originator=0,seller=0,fulfiller=0", NULL};
	memcpy(ow_extra_args, extra, sizeof(extra));
	struct oworld x;
	ow_start(&x, NULL, 24, 24);
	char id[64], st[32], path[160];
	order_delivered(&x, 30, 3, 3600, id);
	json_decref(run(&x));
	cr_assert_str_eq(status_of(&x, id, st), "settled");
	cr_assert_eq(wm_stop(&x.p), 0);
	ow_restart(&x, "return_crash_before_clawback");
	char hdr[256];
	snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s\r\n", x.ksel);
	snprintf(path, sizeof(path), "/v1/orders/%s/returns", id);
	struct http_resp r;
	cr_assert_neq(http_do(x.port, "POST", path, hdr,
			      "{\"kind\":\"refund\",\"reason\":\"damaged\",\"lines\":[{\"line\":0,\"qty\":5}]}", &r),
		      0, "the shard answered instead of dying");
	cr_assert_eq(wm_wait(&x.p, 20000), 137);
	ow_restart(&x, NULL);
	memset(ow_extra_args, 0, sizeof(ow_extra_args));
	json_t *s = settlement(&x, NULL, id);
	long long clawed = 0;
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(s, "payouts"), i, p)
		clawed += ow_cents(p, "clawed_back");
	cr_assert_eq(clawed, 0, "not yet: %s", dump(s));
	cr_assert_gt(ow_cents(s, "refunds"), 0);
	json_decref(s);
	json_decref(run(&x));
	s = settlement(&x, NULL, id);
	json_array_foreach(json_object_get(s, "payouts"), i, p)
		cr_assert_eq(ow_cents(p, "clawed_back"), ow_cents(p, "refunded"), "%s", dump(p));
	json_decref(s);
	reconciles(&x, id);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}
