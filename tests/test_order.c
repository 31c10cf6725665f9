/*
 * test_order.c -- POST /v1/orders and the order reads, cancel and
 * fulfilment over HTTP (spec 2.8, 3.1, 4.1; DESIGN.md 5).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "tests/order_world.h"
#include "tests/wm_test.h"

WM_TEST(order, single_source_estate_reserved)
{
	struct oworld x;
	ow_start(&x, NULL, 24, 24);
	int st;
	json_t *o = ow_order(&x, 4, NULL, NULL, &st);
	cr_assert_eq(st, 201, "%s", json_dumps(o, JSON_COMPACT));
	cr_assert_str_eq(tc_jstr(o, "status"), "reserved");
	json_decref(o);
	wm_stop(&x.p);
}
