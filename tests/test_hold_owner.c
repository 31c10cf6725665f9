/*
 * test_hold_owner.c -- a hold that belongs to an order moves only with its
 * order (issue 21, item 11).
 *
 * The operator hold routes released the committed hold of a live order,
 * which then still read `reserved` with no stock behind it.  They must
 * refuse (409 hold_owned_by_order naming the order and the order route),
 * leave the order and the level as they were, and keep working for a
 * free-standing hold.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "tests/order_world.h"
#include "tests/wm_test.h"

/* POST path as the operator; the parsed problem must be 409
 * hold_owned_by_order naming order `ord`. */
static void refused(struct oworld *x, const char *path, const char *body, const char *ord)
{
	int st;
	json_t *j = tc_call(x->port, "POST", path, NULL, body, &st);
	cr_assert_eq(st, 409, "%s answered %d", path, st);
	cr_assert_str_eq(tc_jstr(j, "code"), "hold_owned_by_order", "%s", path);
	cr_assert_str_eq(tc_jstr(j, "order_id"), ord, "%s", path);
	char route[160];
	snprintf(route, sizeof(route), "POST /v1/orders/%s/cancel", ord);
	cr_assert_str_eq(tc_jstr(j, "order_route"), route, "%s", path);
	cr_assert(strstr(tc_jstr(j, "detail"), ord) != NULL, "the detail names the order");
	json_decref(j);
}

WM_TEST(hold_owner, order_holds_refused_free_holds_move)
{
	struct oworld x;
	ow_start(&x, NULL, 10, 10);
	int st;
	json_t *o = ow_order(&x, 2, NULL, NULL, &st);
	cr_assert_eq(st, 201);
	cr_assert_str_eq(tc_jstr(o, "status"), "reserved");
	char ord[64], hold[96], path[192], body[256];
	snprintf(ord, sizeof(ord), "%s", tc_jstr(o, "id"));
	json_decref(o);
	snprintf(hold, sizeof(hold), "%s.H1", ord);
	long long res0, alloc0, on0;
	ow_level(&x, x.lv_est, &res0, &alloc0, &on0);
	cr_assert_eq(res0 + alloc0, 2, "the order holds 2 units at the estate");

	snprintf(path, sizeof(path), "/v1/holds/%s/release", hold);
	refused(&x, path, NULL, ord);
	snprintf(path, sizeof(path), "/v1/holds/%s/commit", hold);
	refused(&x, path, NULL, ord);
	snprintf(body, sizeof(body), "{\"hold_id\":\"%s\",\"level_id\":\"%s\",\"qty\":2}", hold, x.lv_est);
	refused(&x, "/v1/holds", body, ord);

	/* nothing moved: the order is reserved with its stock behind it */
	snprintf(path, sizeof(path), "/v1/orders/%s", ord);
	o = ow_get(&x, path);
	cr_assert_str_eq(tc_jstr(o, "status"), "reserved");
	json_decref(o);
	long long res, alloc, on;
	ow_level(&x, x.lv_est, &res, &alloc, &on);
	cr_assert_eq(res, res0);
	cr_assert_eq(alloc, alloc0);
	cr_assert_eq(on, on0);

	/* the order route still releases it */
	snprintf(path, sizeof(path), "/v1/orders/%s/cancel", ord);
	json_decref(tc_expect(x.port, "POST", path, NULL, NULL, 200));
	ow_level(&x, x.lv_est, &res, &alloc, &on);
	cr_assert_eq(res + alloc, 0, "the cancel released the units");

	/* a free-standing hold, even one named like an order's, still moves */
	snprintf(body, sizeof(body), "{\"hold_id\":\"ops-1\",\"level_id\":\"%s\",\"qty\":3}", x.lv_stk);
	json_decref(tc_expect(x.port, "POST", "/v1/holds", NULL, body, 201));
	json_t *h = tc_expect(x.port, "POST", "/v1/holds/ops-1/release", NULL, NULL, 200);
	cr_assert_str_eq(tc_jstr(h, "state"), "released");
	json_decref(h);
	snprintf(body, sizeof(body), "{\"hold_id\":\"ord_DE_nosuchorder.H1\",\"level_id\":\"%s\",\"qty\":1}", x.lv_stk);
	json_decref(tc_expect(x.port, "POST", "/v1/holds", NULL, body, 201));
	json_decref(tc_expect(x.port, "POST", "/v1/holds/ord_DE_nosuchorder.H1/release", NULL, NULL, 200));
	wm_proc_cleanup(&x.p);
}
