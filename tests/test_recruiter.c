/*
 * test_recruiter.c -- R_Recruiter (spec 2.9; issue: after the sale, item
 * 5): a seller's recruiter and royalty rate are partner configuration set
 * by the platform; quotes and orders charge rate x (P_B2B + M_Curator) and
 * the settlement pays it to the recruiter.
 *
 * The world (order_world.h): the estate's offer at 10.00 EUR, no listing
 * (M_Curator 0), so 4 bottles carry P_B2B 40.00 and, at 5 %, R 2.00.
 */
#include <stdio.h>
#include <string.h>

#include "tests/order_world.h"
#include "tests/wm_test.h"

static const char *dump(json_t *j)
{
	static char b[16384];
	size_t n = json_dumpb(j, b, sizeof(b) - 1, JSON_COMPACT);
	b[n < sizeof(b) - 1 ? n : sizeof(b) - 1] = 0;
	return b;
}

WM_TEST(recruiter, a_sellers_recruiter_earns_its_royalty_on_quotes_orders_and_settlements)
{
	struct oworld x;
	ow_start(&x, NULL, 24, 24);
	char rec[64], path[160], body[256];
	tc_partner_live(x.port, "Agent GmbH", "DE", "[\"seller\"]", NULL, rec);
	snprintf(path, sizeof(path), "/v1/partners/%s", x.sel);
	/* the seller cannot give itself (or take away) a recruiter */
	snprintf(body, sizeof(body), "{\"recruiter_id\":\"%s\",\"recruiter_rate_percent\":5}", rec);
	json_t *e = tc_expect(x.port, "PATCH", path, x.ksel, body, 403);
	cr_assert_str_eq(tc_jstr(e, "code"), "operator_only_field");
	json_decref(e);
	/* the platform's bounds */
	e = tc_expect(x.port, "PATCH", path, NULL, "{\"recruiter_rate_percent\":5}", 422);
	cr_assert(tc_lists_error(e, "recruiter_id", "together"), "%s", dump(e));
	json_decref(e);
	snprintf(body, sizeof(body), "{\"recruiter_id\":\"%s\",\"recruiter_rate_percent\":25.01}", rec);
	e = tc_expect(x.port, "PATCH", path, NULL, body, 422);
	cr_assert(tc_lists_error(e, "recruiter_rate_percent", "range"), "%s", dump(e));
	json_decref(e);
	e = tc_expect(x.port, "PATCH", path, NULL, "{\"recruiter_id\":\"ptn_01M8HZ11J80000GQ8DRA\",\"recruiter_rate_percent\":5}",
		      422);
	cr_assert(tc_lists_error(e, "recruiter_id", "unknown"), "%s", dump(e));
	json_decref(e);
	snprintf(body, sizeof(body), "{\"recruiter_id\":\"%s\",\"recruiter_rate_percent\":5}", x.sel);
	e = tc_expect(x.port, "PATCH", path, NULL, body, 422);
	cr_assert(tc_lists_error(e, "recruiter_id", "self"), "%s", dump(e));
	json_decref(e);
	snprintf(body, sizeof(body), "{\"recruiter_id\":\"%s\",\"recruiter_rate_percent\":5}", rec);
	json_t *p = tc_expect(x.port, "PATCH", path, NULL, body, 200);
	cr_assert_str_eq(tc_jstr(p, "recruiter_id"), rec);
	cr_assert_eq(ow_cents(p, "recruiter_rate_percent"), 500);
	json_decref(p);

	/* an order: R = 5 % x (P_B2B 40.00 + M 0) = 2.00, paid to the recruiter */
	int st;
	json_t *o = ow_order(&x, 4, NULL, NULL, &st);
	cr_assert_eq(st, 201, "%s", dump(o));
	cr_assert_eq(ow_cents(json_object_get(o, "components"), "R_Recruiter"), 200, "%s",
		     dump(json_object_get(o, "components")));
	long long rec_amount = -1, seller_amount = -1, sum = 0;
	size_t i;
	json_t *pt;
	json_t *split = json_object_get(o, "settlement_split");
	json_array_foreach(json_object_get(split, "parties"), i, pt)
	{
		if (!strcmp(tc_jstr(pt, "partner_id"), rec)) {
			rec_amount = ow_cents(pt, "amount");
			cr_assert_str_eq(tc_jstr(pt, "role"), "seller", "the spec's roles");
			cr_assert_str_eq(tc_jstr(pt, "basis"), "R_Recruiter");
		}
		if (!strcmp(tc_jstr(pt, "partner_id"), x.sel)) {
			seller_amount = ow_cents(pt, "amount");
			cr_assert_str_eq(tc_jstr(pt, "basis"), "M_Curator");
		}
		sum += ow_cents(pt, "amount");
	}
	cr_assert_eq(rec_amount, 200, "%s", dump(split));
	cr_assert_eq(seller_amount, 0);
	/* the split still sums to the charge */
	sum += ow_cents(split, "platform_fee") + ow_cents(json_object_get(split, "escrowed_taxes"), "excise") +
	       ow_cents(json_object_get(split, "escrowed_taxes"), "vat");
	cr_assert_eq(sum, ow_cents(o, "total"), "%s", dump(o));
	json_decref(o);
	/* removed by the platform: no royalty */
	json_decref(tc_expect(x.port, "PATCH", path, NULL, "{\"recruiter_id\":null,\"recruiter_rate_percent\":null}", 200));
	o = ow_order(&x, 4, NULL, NULL, &st);
	cr_assert_eq(st, 201);
	cr_assert_eq(ow_cents(json_object_get(o, "components"), "R_Recruiter"), 0);
	json_decref(o);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}
