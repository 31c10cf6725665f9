/*
 * test_order_crash.c -- kill the shard at every step of the order saga
 * and check what the restart makes of it (engine/orders/saga.c, DESIGN.md 5).
 *
 * Each case starts the shard with WM_ERRINJ=<crash point>: at that point
 * the saga flushes the WAL and _exits 137, so the POST gets no answer.
 * The shard is restarted without fault injection and must have driven the
 * order to rest before serving, by saga.c's recovery rules:
 *
 *   crash after        durable state           after restart
 *   placed             placed                  failed (interrupted), voided
 *   prepare            placed, holds prepared  failed (interrupted), holds released, voided
 *   charge             placed, charge captured failed (interrupted), holds released, refunded
 *   paid               paid                    reserved (driven forward)
 *   confirmed          confirmed               reserved
 *   sourced            sourced                 reserved
 *   buy                sourced, holds committed reserved
 *   failed (declined)  failed, not compensated failed (payment_declined), compensated, voided
 *   failed (provider   failed, charge captured failed (payment_failed), compensated, refunded
 *   error after charge)
 *
 * An order placed (and reserved) before the crash is a bystander the
 * recovery must leave as it is.  Then: the seller sees exactly one new
 * order; retrying the POST with the same Idempotency-Key answers that
 * order and creates none; the order's events are exactly the expected
 * sequence (written out per case below); the whole-shard invariants of
 * order_check.h hold; and a second restart changes nothing (recovery is
 * idempotent): the same orders, levels, ledger and events, byte for byte,
 * and no order resumed.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/order_check.h"
#include "tests/order_world.h"
#include "tests/wm_test.h"

static const char *const EV_FAILED[] = {"order.placed", "order.failed", NULL};
static const char *const EV_RESERVED_1[] = {"order.placed",  "order.paid",     "order.confirmed",
					    "order.sourced", "stock.reserved", NULL};
static const char *const EV_RESERVED_2[] = {"order.placed",   "order.paid",	"order.confirmed", "order.sourced",
					    "stock.reserved", "stock.reserved", NULL};
static const char *const PAY_VOIDED[] = {"payment.voided", NULL};
static const char *const PAY_REFUNDED[] = {"payment.captured", "payment.refunded", NULL};
static const char *const PAY_CAPTURED[] = {"payment.captured", NULL};

#define DECLINE "\"payment\":{\"method\":\"sandbox_decline\"}"
#define FAIL_AFTER_CHARGE "\"payment\":{\"method\":\"sandbox_fail_after_charge\"}"
#define IDEM_KEY "crash-order-1"

struct crash_case {
	const char *point;          /* WM_ERRINJ */
	int est, stk, qty;          /* the sources' stock when the order comes (the estate
				       gets one unit more, for the bystander), its units */
	const char *extra;          /* more body members, or NULL */
	/* after the restart */
	const char *status;
	const char *failure;        /* failure.code, NULL when none */
	int replay;                 /* HTTP status of the idempotent retry */
	const char *pay_state;      /* the ledger's and the order's payment.state */
	const char *const *events;  /* the order's own events, exactly */
	const char *const *pay_events;
	unsigned legs;              /* 1: the estate covers it; 2: the estate gives all it has,
				       the stockist the rest (neither covers it alone) */
	const char *recovery_point; /* the first restart dies there too (WM_ERRINJ), or NULL */
};

static size_t count_list(const char *const *l)
{
	size_t n = 0;
	while (l[n])
		n++;
	return n;
}

static void expect_types(const char *what, const char **got, size_t n, const char *const *want)
{
	size_t wn = count_list(want);
	char g[1024] = "";
	for (size_t i = 0; i < n; i++)
		snprintf(g + strlen(g), sizeof(g) - strlen(g), "%s%s", i ? "," : "", got[i]);
	cr_assert_eq(n, wn, "%s: got [%s], want %zu events", what, g, wn);
	for (size_t i = 0; i < n; i++)
		cr_assert_str_eq(got[i], want[i], "%s: got [%s]", what, g);
}

/* Everything a restart could change: every order, level, ledger row and
 * event (key.abnormal_usage left out: it counts this test's own reads). */
static json_t *shard_state(struct oworld *x)
{
	json_t *events = ow_list_all(x, "/v1/events?page_size=200"), *kept = json_array(), *ev;
	size_t i;
	json_array_foreach(events, i, ev)
	{
		if (strcmp(tc_jstr(ev, "type"), "key.abnormal_usage"))
			json_array_append(kept, ev);
	}
	json_decref(events);
	return json_pack("{s:o, s:o, s:o, s:o}", "orders", ow_list_all(x, "/v1/orders?page_size=200"), "levels",
			 ow_list_all(x, "/v1/inventory?page_size=200"), "payments",
			 ow_list_all(x, "/v1/admin/payments?page_size=200"), "events", kept);
}

/* How many lines of the log of the shard's n-th start say `needle`? */
static int log_says(const struct oworld *x, int n, const char *needle)
{
	char path[400];
	snprintf(path, sizeof(path), "%s/shard-%d.log", x->p.dir, n);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "no log %s", path);
	char line[4096];
	int found = 0;
	while (fgets(line, sizeof(line), f))
		found += strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

/* The order id of a create's answer: the order (201) or the problem's order_id. */
static const char *answer_order_id(json_t *j, int status)
{
	return tc_jstr(j, status == 201 ? "id" : "order_id");
}

static void run_case(const struct crash_case *c)
{
	struct oworld x;
	/* a bystander: an order at rest (1 unit from the estate) that the
	 * recovery of the other must leave alone */
	ow_start(&x, NULL, c->est + 1, c->stk);
	int st;
	json_t *j = ow_order(&x, 1, NULL, "bystander-1", &st);
	cr_assert_eq(st, 201, "the bystander order: %d", st);
	char by[64];
	snprintf(by, sizeof(by), "%s", tc_jstr(j, "id"));
	cr_assert_str_eq(tc_jstr(json_array_get(json_object_get(j, "fulfillments"), 0), "level_id"), x.lv_est);
	json_decref(j);
	cr_assert_eq(wm_stop(&x.p), 0);
	ow_restart(&x, c->point);
	long long r0, a0, est_on_hand, stk_on_hand;
	ow_level(&x, x.lv_est, &r0, &a0, &est_on_hand);
	ow_level(&x, x.lv_stk, &r0, &a0, &stk_on_hand);

	st = ow_order_try(&x, c->qty, c->extra, IDEM_KEY, &j);
	if (j) {
		char *d = json_dumps(j, JSON_COMPACT);
		cr_assert_fail("%s: the shard answered %d instead of dying: %s", c->point, st, d);
	}
	cr_assert_eq(wm_wait(&x.p, 20000), 137, "%s: the shard did not die at the crash point", c->point);
	if (c->recovery_point) {
		/* the recovery itself dies at a later step, before serving */
		char env[128], needle[160];
		snprintf(env, sizeof(env), "WM_ERRINJ=%s", c->recovery_point);
		const char *envv[] = {env, NULL};
		cr_assert_eq(wm_start(&x.p, NULL, envv), -1, "%s: the recovery did not die at %s", c->point,
			     c->recovery_point);
		snprintf(needle, sizeof(needle), "point=%s", c->recovery_point);
		cr_assert(log_says(&x, x.p.starts, needle), "%s: the recovery did not die at %s", c->point,
			  c->recovery_point);
	}
	ow_restart(&x, NULL);
	int resumed = log_says(&x, x.p.starts, "order resumed after restart");
	cr_assert_eq(resumed, 1, "%s: the recovery resumed %d orders, want 1", c->point, resumed);

	/* the seller sees exactly one order besides the bystander */
	json_t *mine = tc_expect(x.port, "GET", "/v1/orders?page_size=200", x.ksel, NULL, 200);
	json_t *data = json_object_get(mine, "data");
	cr_assert_eq(json_array_size(data), 2, "%s: the seller has %zu orders", c->point, json_array_size(data));
	char id[64];
	int k = !strcmp(tc_jstr(json_array_get(data, 0), "id"), by);
	cr_assert_str_eq(tc_jstr(json_array_get(data, !k), "id"), by, "%s: the bystander is gone", c->point);
	snprintf(id, sizeof(id), "%s", tc_jstr(json_array_get(data, k), "id"));
	json_decref(mine);

	/* the retry with the same key answers that order and creates none */
	st = ow_order_try(&x, c->qty, c->extra, IDEM_KEY, &j);
	cr_assert_eq(st, c->replay, "%s: the retry answered %d", c->point, st);
	cr_assert_str_eq(answer_order_id(j, st), id, "%s: the retry names another order", c->point);
	if (c->failure)
		cr_assert_str_eq(tc_jstr(j, "code"), c->failure, "%s: the retry's problem code", c->point);
	json_decref(j);
	json_t *all = ow_list_all(&x, "/v1/orders?page_size=200");
	cr_assert_eq(json_array_size(all), 2, "%s: %zu orders after the retry", c->point, json_array_size(all));
	json_decref(all);

	/* the order where the recovery rules put it */
	char path[160];
	snprintf(path, sizeof(path), "/v1/orders/%s", id);
	json_t *o = ow_get(&x, path);
	cr_assert_str_eq(tc_jstr(o, "status"), c->status, "%s: status", c->point);
	json_t *fail = json_object_get(o, "failure");
	if (c->failure)
		cr_assert_str_eq(tc_jstr(fail, "code"), c->failure, "%s: failure.code", c->point);
	else
		cr_assert(json_is_null(fail), "%s: a failure on a %s order", c->point, c->status);
	cr_assert_eq(json_is_true(json_object_get(json_object_get(o, "saga"), "compensated")), c->failure != NULL,
		     "%s: saga.compensated", c->point);
	cr_assert_str_eq(tc_jstr(json_object_get(o, "payment"), "state"), c->pay_state, "%s: payment.state",
			 c->point);
	json_t *legs = json_object_get(o, "fulfillments");
	cr_assert_eq(json_array_size(legs), c->legs, "%s: %zu legs", c->point, json_array_size(legs));
	long long legs_qty = 0;
	size_t i;
	json_t *leg;
	json_array_foreach(legs, i, leg)
	{
		cr_assert_str_eq(tc_jstr(leg, "status"), c->failure ? "released" : "reserved", "%s: leg %zu", c->point,
				 i);
		cr_assert_str_eq(tc_jstr(leg, "level_id"), i == 0 ? x.lv_est : x.lv_stk, "%s: leg %zu", c->point, i);
		legs_qty += json_integer_value(json_object_get(leg, "qty"));
	}
	cr_assert_eq(legs_qty, c->qty);
	if (c->legs == 2)
		cr_assert_eq(json_integer_value(json_object_get(json_array_get(legs, 0), "qty")), c->est,
			     "%s: the estate gives all it has", c->point);
	json_decref(o);

	/* the ledger */
	snprintf(path, sizeof(path), "/v1/admin/payments/%s", id);
	json_t *pay = ow_get(&x, path);
	cr_assert_str_eq(tc_jstr(pay, "state"), c->pay_state, "%s: ledger state", c->point);
	json_decref(pay);

	/* the events, exactly */
	json_t *events = ow_list_all(&x, "/v1/events?page_size=200");
	const char *types[64];
	char what[128];
	snprintf(what, sizeof(what), "%s: order events", c->point);
	expect_types(what, types, ow_order_events(events, id, types, 64), c->events);
	snprintf(what, sizeof(what), "%s: payment events", c->point);
	expect_types(what, types, ow_payment_events(events, id, types, 64), c->pay_events);
	json_decref(events);

	/* the bystander untouched */
	snprintf(path, sizeof(path), "/v1/orders/%s", by);
	o = ow_get(&x, path);
	cr_assert_str_eq(tc_jstr(o, "status"), "reserved", "%s: the bystander", c->point);
	json_decref(o);

	/* the stock: all back, or exactly the order's units allocated (plus
	 * the bystander's one on the estate) */
	long long held = c->failure ? 0 : c->qty, est_alloc = c->failure ? 0 : c->legs == 2 ? c->est : c->qty;
	long long r, a, h;
	ow_level(&x, x.lv_est, &r, &a, &h);
	cr_assert(r == 0 && a == est_alloc + 1 && h == est_on_hand,
		  "%s: estate level reserved %lld allocated %lld on_hand %lld", c->point, r, a, h);
	ow_level(&x, x.lv_stk, &r, &a, &h);
	cr_assert(r == 0 && a == held - est_alloc && h == stk_on_hand,
		  "%s: stockist level reserved %lld allocated %lld on_hand %lld", c->point, r, a, h);

	ow_check_invariants(&x);

	/* a second restart changes nothing */
	json_t *before = shard_state(&x);
	cr_assert_eq(wm_stop(&x.p), 0, "%s: the shard did not stop cleanly (log in %s)", c->point, x.p.dir);
	ow_restart(&x, NULL);
	cr_assert(!log_says(&x, x.p.starts, "order resumed after restart"), "%s: an order was resumed twice", c->point);
	json_t *after = shard_state(&x);
	if (!json_equal(before, after)) {
		char *b = json_dumps(before, JSON_COMPACT), *z = json_dumps(after, JSON_COMPACT);
		cr_assert_fail("%s: the second restart changed the shard:\nbefore %s\nafter  %s", c->point, b, z);
	}
	json_decref(before);
	json_decref(after);
	ow_check_invariants(&x);
	cr_assert_eq(wm_stop(&x.p), 0, "%s: the shard did not stop cleanly (log in %s)", c->point, x.p.dir);
	wm_proc_cleanup(&x.p);
}

/* ---- before the decision: presumed abort ---------------------------------------------- */

WM_TEST(order_crash, after_placed)
{
	const struct crash_case c = {"order_crash_after_placed", 24, 24, 4, NULL, "failed", "interrupted", 409,
				     "voided", EV_FAILED, PAY_VOIDED, 1, NULL};
	run_case(&c);
}

WM_TEST(order_crash, after_prepare)
{
	const struct crash_case c = {"order_crash_after_prepare", 24, 24, 4, NULL, "failed", "interrupted", 409,
				     "voided", EV_FAILED, PAY_VOIDED, 1, NULL};
	run_case(&c);
}

WM_TEST(order_crash, after_charge)
{
	/* the money moved but "paid" was never logged: refunded */
	const struct crash_case c = {"order_crash_after_charge", 24, 24, 4, NULL, "failed", "interrupted", 409,
				     "refunded", EV_FAILED, PAY_REFUNDED, 1, NULL};
	run_case(&c);
}

/* ---- paid and after: driven forward ---------------------------------------------------- */

WM_TEST(order_crash, after_paid)
{
	const struct crash_case c = {"order_crash_after_paid", 24, 24, 4, NULL, "reserved", NULL, 201,
				     "captured", EV_RESERVED_1, PAY_CAPTURED, 1, NULL};
	run_case(&c);
}

WM_TEST(order_crash, after_confirmed)
{
	const struct crash_case c = {"order_crash_after_confirmed", 24, 24, 4, NULL, "reserved", NULL, 201,
				     "captured", EV_RESERVED_1, PAY_CAPTURED, 1, NULL};
	run_case(&c);
}

WM_TEST(order_crash, after_sourced)
{
	const struct crash_case c = {"order_crash_after_sourced", 24, 24, 4, NULL, "reserved", NULL, 201,
				     "captured", EV_RESERVED_1, PAY_CAPTURED, 1, NULL};
	run_case(&c);
}

WM_TEST(order_crash, after_buy)
{
	/* stock.reserved was logged before the crash: not again */
	const struct crash_case c = {"order_crash_after_buy", 24, 24, 4, NULL, "reserved", NULL, 201,
				     "captured", EV_RESERVED_1, PAY_CAPTURED, 1, NULL};
	run_case(&c);
}

/* ---- failure logged, compensation interrupted ------------------------------------------- */

WM_TEST(order_crash, after_failed_declined)
{
	const struct crash_case c = {"order_crash_after_failed", 24, 24, 4, DECLINE, "failed", "payment_declined",
				     402, "voided", EV_FAILED, PAY_VOIDED, 1, NULL};
	run_case(&c);
}

WM_TEST(order_crash, after_failed_charged)
{
	/* the provider took the money and then reported an error: the failure
	 * is logged, the refund is what the recovery must still do */
	const struct crash_case c = {"order_crash_after_failed", 24, 24, 4, FAIL_AFTER_CHARGE, "failed",
				     "payment_failed", 502, "refunded", EV_FAILED, PAY_REFUNDED, 1, NULL};
	run_case(&c);
}

/* ---- the recovery crashes too ----------------------------------------------------------- */

WM_TEST(order_crash, recovery_crash_after_failed)
{
	/* charged, not paid; the restart logs the failure and dies before
	 * compensating; the next one refunds -- and logs no second order.failed */
	const struct crash_case c = {"order_crash_after_charge", 24, 24, 4, NULL, "failed", "interrupted", 409,
				     "refunded", EV_FAILED, PAY_REFUNDED, 1, "order_crash_after_failed"};
	run_case(&c);
}

WM_TEST(order_crash, recovery_crash_after_sourced)
{
	/* paid; the restart confirms and sources, then dies before buying;
	 * the next one buys -- no step logged twice */
	const struct crash_case c = {"order_crash_after_paid", 24, 24, 4, NULL, "reserved", NULL, 201,
				     "captured", EV_RESERVED_1, PAY_CAPTURED, 1, "order_crash_after_sourced"};
	run_case(&c);
}

/* ---- a split order: two sources, each compensated or committed -------------------------- */

WM_TEST(order_crash, split_after_prepare)
{
	/* neither source covers the 5 alone: the estate gives its 2, the
	 * stockist 3; both hold, both are released */
	const struct crash_case c = {"order_crash_after_prepare", 2, 4, 5, NULL, "failed", "interrupted", 409,
				     "voided", EV_FAILED, PAY_VOIDED, 2, NULL};
	run_case(&c);
}

WM_TEST(order_crash, split_after_buy)
{
	/* both buy legs committed, one stock.reserved each, before the crash */
	const struct crash_case c = {"order_crash_after_buy", 2, 4, 5, NULL, "reserved", NULL, 201,
				     "captured", EV_RESERVED_2, PAY_CAPTURED, 2, NULL};
	run_case(&c);
}

/* ---- several orders between steps at once: kill -9 ---------------------------------------- */

/* Three orders of 3 units left resting at a pause point (test builds: the
 * saga stops there and answers), the shard killed, restarted: the recovery
 * walks every one of them. */
static void paused_then_killed(const char *pause, const char *rest_status, const char *after_status)
{
	struct oworld x;
	ow_start(&x, pause, 10, 0);
	char key[32];
	int st;
	for (int i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), "paused-%d", i);
		json_t *o = ow_order(&x, 3, NULL, key, &st);
		cr_assert_eq(st, 201, "%s: order %d answered %d", pause, i, st);
		cr_assert_str_eq(tc_jstr(o, "status"), rest_status, "%s: order %d", pause, i);
		json_decref(o);
	}
	/* the three hold 9 of the 10 units: a fourth of 3 does not fit */
	json_t *o = ow_order(&x, 3, NULL, "paused-3", &st);
	cr_assert(st == 409 || st == 422, "%s: a fourth order of 3 answered %d", pause, st);
	cr_assert_str_eq(tc_jstr(o, "code"), "insufficient_stock");
	json_decref(o);
	long long r, a, h;
	ow_level(&x, x.lv_est, &r, &a, &h);
	cr_assert(r == 9 && a == 0, "%s: before the kill, reserved %lld allocated %lld", pause, r, a);

	wm_kill9(&x.p);
	ow_restart(&x, NULL);
	cr_assert_eq(log_says(&x, x.p.starts, "order resumed after restart"), 3, "%s: not every order resumed", pause);
	json_t *all = ow_list_all(&x, "/v1/orders?page_size=200");
	cr_assert_eq(json_array_size(all), 3, "%s: %zu orders", pause, json_array_size(all));
	size_t i;
	json_array_foreach(all, i, o)
	{
		cr_assert_str_eq(tc_jstr(o, "status"), after_status, "%s: order %zu after the restart", pause, i);
		if (!strcmp(after_status, "failed"))
			cr_assert_str_eq(tc_jstr(json_object_get(o, "failure"), "code"), "interrupted");
	}
	json_decref(all);
	ow_check_invariants(&x);

	/* what is left can be sold, and no more */
	int left = strcmp(after_status, "failed") ? 1 : 10;
	o = ow_order(&x, left, NULL, "after-restart", &st);
	cr_assert_eq(st, 201, "%s: the %d units left could not be sold (%d)", pause, left, st);
	cr_assert_str_eq(tc_jstr(o, "status"), "reserved");
	json_decref(o);
	o = ow_order(&x, 1, NULL, "one-too-many", &st);
	cr_assert(st == 409 || st == 422, "%s: a unit sold twice (%d)", pause, st);
	json_decref(o);
	ow_check_invariants(&x);
	cr_assert_eq(wm_stop(&x.p), 0, "%s: the shard did not stop cleanly (log in %s)", pause, x.p.dir);
	wm_proc_cleanup(&x.p);
}

WM_TEST(order_crash, kill9_three_paused_after_prepare)
{
	/* no decision for any of them: all aborted, their 9 units free again */
	paused_then_killed("order_pause_after_prepare", "placed", "failed");
}

WM_TEST(order_crash, kill9_three_paused_after_paid)
{
	/* all paid: all driven to reserved */
	paused_then_killed("order_pause_after_paid", "paid", "reserved");
}

WM_TEST(order_crash, kill9_three_paused_after_sourced)
{
	paused_then_killed("order_pause_after_sourced", "sourced", "reserved");
}

/* Shipping a leg is one transaction with its stock since the after-the-sale
 * issue: test_fulfilment.c kills the shard right after it. */
