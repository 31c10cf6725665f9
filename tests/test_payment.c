/*
 * test_payment.c -- the sandbox payment ledger's two operator routes over
 * HTTP against a real wm-shard: GET /v1/admin/payments (the empty page's
 * exact shape, the ?state= filter and its 400) and GET
 * /v1/admin/payments/{order_id} (404 for an order with no payment); a
 * partner key is refused (403 insufficient_scope) and no key is a 401.
 * No route creates payments yet (the orders saga will), so the charges
 * themselves are tested in-process in test_payment_units.c.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "tests/api_client.h"
#include "tests/harness.h"
#include "tests/wm_test.h"

/* An empty page: exactly {data: [], next_cursor: null, has_more: false}. */
static void expect_empty_page(json_t *j)
{
	cr_assert(json_is_object(j));
	cr_assert_eq(json_object_size(j), 3, "%s", json_dumps(j, JSON_COMPACT));
	cr_assert(json_is_array(json_object_get(j, "data")));
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 0);
	cr_assert(json_is_null(json_object_get(j, "next_cursor")));
	cr_assert(json_is_false(json_object_get(j, "has_more")));
}

WM_TEST(payment_http, operator_routes_empty_ledger_404_and_scopes)
{
	struct wm_proc p;
	tc_start(&p);
	int port = p.port;

	/* operator: the empty ledger, with and without filters and paging */
	json_t *j = tc_expect(port, "GET", "/v1/admin/payments", NULL, NULL, 200);
	expect_empty_page(j);
	json_decref(j);
	static const char *const ok_queries[] = {"?state=captured", "?state=refunded", "?state=voided", "?page_size=1",
						 "?page_size=200&state=captured"};
	for (size_t i = 0; i < sizeof(ok_queries) / sizeof(ok_queries[0]); i++) {
		char path[128];
		snprintf(path, sizeof(path), "/v1/admin/payments%s", ok_queries[i]);
		j = tc_expect(port, "GET", path, NULL, NULL, 200);
		expect_empty_page(j);
		json_decref(j);
	}
	/* "none" is a state of an order, never of a ledger row: not a filter */
	tc_expect_code(port, "GET", "/v1/admin/payments?state=none", NULL, NULL, 400, "invalid_filter");
	tc_expect_code(port, "GET", "/v1/admin/payments?state=CAPTURED", NULL, NULL, 400, "invalid_filter");
	tc_expect_code(port, "GET", "/v1/admin/payments?state=", NULL, NULL, 400, "invalid_filter");
	tc_expect_code(port, "GET", "/v1/admin/payments?page_size=201", NULL, NULL, 400, "page_size_too_large");

	/* one order: none has a payment */
	tc_expect_code(port, "GET", "/v1/admin/payments/ord_unknown", NULL, NULL, 404, "not_found");
	char long_id[128];
	memset(long_id, 'o', 100);
	long_id[100] = 0;
	char path[256];
	snprintf(path, sizeof(path), "/v1/admin/payments/%s", long_id);
	tc_expect_code(port, "GET", path, NULL, NULL, 404, "not_found");

	/* a partner key has no operator scope */
	char ptn[64], key[128];
	tc_partner_live(port, "Seller Pay", "FR", "[\"seller\"]", NULL, ptn);
	tc_key_for(port, ptn, key);
	tc_expect_code(port, "GET", "/v1/admin/payments", key, NULL, 403, "insufficient_scope");
	tc_expect_code(port, "GET", "/v1/admin/payments/ord_unknown", key, NULL, 403, "insufficient_scope");
	tc_expect_code(port, "GET", "/v1/admin/payments?state=captured", key, NULL, 403, "insufficient_scope");

	/* no key at all */
	struct http_resp r;
	cr_assert_eq(http_do(port, "GET", "/v1/admin/payments", "Authorization: none\r\n", NULL, &r), 0);
	cr_assert_eq(r.status, 401, "%d %s", r.status, r.body);
	http_resp_free(&r);
	cr_assert_eq(http_do(port, "GET", "/v1/admin/payments/ord_unknown", "Authorization: none\r\n", NULL, &r), 0);
	cr_assert_eq(r.status, 401, "%d %s", r.status, r.body);
	http_resp_free(&r);

	/* a write method on the ledger is not routed */
	cr_assert_eq(http_do(port, "POST", "/v1/admin/payments", "Content-Type: application/json\r\n", "{}", &r), 0);
	cr_assert_eq(r.status, 405, "%d %s", r.status, r.body);
	http_resp_free(&r);

	/* the ledger table exists (empty) */
	cr_assert_eq(http_do(port, "GET", "/metrics", NULL, NULL, &r), 0);
	cr_assert_not_null(strstr(r.body, "wm_table_rows{table=\"payment\"} 0\n"), "%s", r.body);
	http_resp_free(&r);
	wm_proc_cleanup(&p);
}
