/*
 * test_consumer_volume.c -- consumer volume caps across a consumer's
 * orders (issue: after the sale, item 9; data/caps.tsv: 90 L still in 30
 * days).  The wine is 0.75 L still: 120 bottles = 90 L.
 */
#include <stdio.h>
#include <string.h>

#include "tests/order_world.h"
#include "tests/wm_test.h"

static const char *dump(json_t *j)
{
	static char b[8192];
	size_t n = json_dumpb(j, b, sizeof(b) - 1, JSON_COMPACT);
	b[n < sizeof(b) - 1 ? n : sizeof(b) - 1] = 0;
	return b;
}

static void id_of(json_t *o, char *id) { snprintf(id, 64, "%s", tc_jstr(o, "id")); }

WM_TEST(consumer_volume, a_consumer_accumulates_and_cancels_and_refunds_release)
{
	struct oworld x;
	ow_start(&x, NULL, 400, 0);
	ow_consumer_email = "Cap.Tester@Example.de";
	int st;
	char a[64], path[200];
	json_t *o = ow_order(&x, 100, NULL, NULL, &st); /* 75 L */
	cr_assert_eq(st, 201, "%s", dump(o));
	id_of(o, a);
	json_decref(o);
	/* 30 more (22.5 L): 97.5 L in the window */
	o = ow_order(&x, 30, NULL, NULL, &st);
	cr_assert_eq(st, 422, "%s", dump(o));
	cr_assert_str_eq(tc_jstr(o, "code"), "volume_cap_exceeded");
	json_t *cap = json_object_get(o, "cap");
	cr_assert_eq(ow_cents(cap, "used_liters"), 7500, "%s", dump(o));
	cr_assert_eq(ow_cents(cap, "requested_liters"), 2250);
	cr_assert_eq(ow_cents(cap, "limit_liters"), 9000);
	cr_assert_eq(json_integer_value(json_object_get(cap, "period_days")), 30);
	cr_assert_eq(ow_cents(cap, "excess_liters"), 750);
	json_decref(o);
	/* 20 more (15 L): 90 L, at the cap exactly */
	o = ow_order(&x, 20, NULL, NULL, &st);
	cr_assert_eq(st, 201, "90 L is allowed: %s", dump(o));
	json_decref(o);
	o = ow_order(&x, 1, NULL, NULL, &st);
	cr_assert_eq(st, 422, "90.75 L is not");
	json_decref(o);
	/* the same address in other case is the same consumer; another is not */
	ow_consumer_email = "cap.tester@example.DE";
	o = ow_order(&x, 1, NULL, NULL, &st);
	cr_assert_eq(st, 422, "case-folded: %s", dump(o));
	json_decref(o);
	ow_consumer_email = "someone.else@example.de";
	o = ow_order(&x, 100, NULL, NULL, &st);
	cr_assert_eq(st, 201, "another consumer: %s", dump(o));
	json_decref(o);
	/* cancel the first order: its 75 L are released */
	ow_consumer_email = "cap.tester@example.de";
	snprintf(path, sizeof(path), "/v1/orders/%s/cancel", a);
	json_decref(tc_expect(x.port, "POST", path, x.ksel, "{}", 200));
	o = ow_order(&x, 100, NULL, NULL, &st); /* 15 + 75 = 90 L */
	cr_assert_eq(st, 201, "released by the cancel: %s", dump(o));
	char b[64];
	id_of(o, b);
	json_decref(o);
	/* deliver it, refund 40 bottles (30 L): they no longer count */
	ow_deliver(&x, b, 1, 60);
	o = ow_order(&x, 40, NULL, NULL, &st);
	cr_assert_eq(st, 422, "still 90 L in the window");
	json_decref(o);
	snprintf(path, sizeof(path), "/v1/orders/%s/returns", b);
	json_decref(tc_expect(x.port, "POST", path, x.ksel,
			      "{\"kind\":\"refund\",\"reason\":\"damaged\",\"lines\":[{\"line\":0,\"qty\":40}]}", 201));
	o = ow_order(&x, 40, NULL, NULL, &st);
	cr_assert_eq(st, 201, "released by the refund: %s", dump(o));
	json_decref(o);
	/* kill -9: the counts survive */
	wm_kill9(&x.p);
	ow_restart(&x, NULL);
	o = ow_order(&x, 1, NULL, NULL, &st);
	cr_assert_eq(st, 422, "after a restart: %s", dump(o));
	json_decref(o);
	ow_consumer_email = NULL;
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}
