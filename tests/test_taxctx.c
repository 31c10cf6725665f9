/*
 * test_taxctx.c -- GET /v1/tax-context against a real wm-shard: the route's
 * VAT, excise bands with basis, currency, movement kind, sources and the
 * reference version; NOT_FOUND figures surface as null + not_found; bad
 * queries and unknown destinations are refused; and a shard given a
 * malformed reference directory refuses to start, naming file:line.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness.h"
#include "tests/wm_test.h"

static json_t *get(int port, const char *path, int want)
{
	struct http_resp r;
	cr_assert_eq(http_do(port, "GET", path, NULL, NULL, &r), 0);
	cr_assert_eq(r.status, want, "GET %s: %d %s", path, r.status, r.body);
	json_error_t e;
	json_t *j = json_loadb(r.body, r.body_len, 0, &e);
	cr_assert_not_null(j, "%s", r.body);
	http_resp_free(&r);
	return j;
}

static json_t *band(json_t *ex, const char *cat, double abv)
{
	size_t i;
	json_t *b;
	json_array_foreach(ex, i, b)
	{
		if (!strcmp(json_string_value(json_object_get(b, "category")), cat) &&
		    json_number_value(json_object_get(b, "abv_min")) <= abv &&
		    json_number_value(json_object_get(b, "abv_max")) >= abv)
			return b;
	}
	return NULL;
}

WM_TEST(taxctx, routes_report_rates_bases_and_sources)
{
	struct wm_proc p;
	wm_proc_init(&p);
	cr_assert_eq(wm_start(&p, NULL, NULL), 0, "logs in %s", p.dir);

	json_t *j = get(p.port, "/v1/tax-context?origin=FR&destination=DE", 200);
	cr_assert_str_eq(json_string_value(json_object_get(j, "movement")), "intra_eu");
	cr_assert_str_eq(json_string_value(json_object_get(j, "currency")), "EUR");
	json_t *tc = json_object_get(j, "tax_classification");
	cr_assert_eq(json_number_value(json_object_get(tc, "vat_rate_percent")), 19.0);
	cr_assert(strstr(json_string_value(json_object_get(tc, "source")), "calculariva"));
	json_t *sp = band(json_object_get(j, "excise"), "sparkling", 12.0);
	cr_assert_not_null(sp);
	cr_assert_eq(json_number_value(json_object_get(sp, "rate")), 136.0);
	cr_assert_str_eq(json_string_value(json_object_get(sp, "basis")), "per_hl_product");
	cr_assert_str_eq(json_string_value(json_object_get(sp, "excise_tax_category")), "W300");
	cr_assert(strstr(json_string_value(json_object_get(sp, "source")), "zoll.de"));
	/* intermediate products > 15 % vol: 153 EUR/hl (zoll.de, SchaumwZwStG s.30) */
	json_t *fo = band(json_object_get(j, "excise"), "fortified", 19.0);
	cr_assert_eq(json_number_value(json_object_get(fo, "rate")), 153.0);
	cr_assert_str_eq(json_string_value(json_object_get(fo, "status")), "published");
	json_decref(j);
	/* BE intermediate products: no citable figure -> listed as not_found, rate null */
	j = get(p.port, "/v1/tax-context?origin=FR&destination=BE", 200);
	fo = band(json_object_get(j, "excise"), "fortified", 19.0);
	cr_assert(json_is_null(json_object_get(fo, "rate")));
	cr_assert_str_eq(json_string_value(json_object_get(fo, "status")), "not_found");
	json_t *rv = json_object_get(j, "reference_data");
	cr_assert_str_eq(json_string_value(json_object_get(rv, "version")), "2026-11-25.1");
	cr_assert_str_eq(json_string_value(json_object_get(rv, "effective_date")), "2026-11-25");
	json_decref(j);

	j = get(p.port, "/v1/tax-context?origin=PT&destination=GB", 200);
	cr_assert_str_eq(json_string_value(json_object_get(j, "movement")), "export_from_eu");
	cr_assert_str_eq(json_string_value(json_object_get(j, "currency")), "GBP");
	json_t *gb = band(json_object_get(j, "excise"), "fortified", 20.0);
	cr_assert_str_eq(json_string_value(json_object_get(gb, "basis")), "per_l_pure_alcohol");
	cr_assert_eq(json_number_value(json_object_get(gb, "rate")), 29.54);
	cr_assert(json_is_null(json_object_get(json_object_get(j, "cross_border_terms"), "import_duty_rate_percent")));
	json_decref(j);

	j = get(p.port, "/v1/tax-context?origin=ES&destination=NO", 200);
	cr_assert_str_eq(json_string_value(json_object_get(j, "currency")), "NOK");
	cr_assert_eq(json_number_value(json_object_get(json_object_get(j, "tax_classification"), "vat_rate_percent")),
		     25.0);
	json_t *no = band(json_object_get(j, "excise"), "still", 12.5);
	cr_assert_str_eq(json_string_value(json_object_get(no, "basis")), "per_l_per_pct_vol");
	cr_assert_eq(json_number_value(json_object_get(no, "rate")), 5.29);
	json_decref(j);

	json_decref(get(p.port, "/v1/tax-context?origin=FR", 400));
	json_decref(get(p.port, "/v1/tax-context?origin=FR&destination=XX", 400));
	json_decref(get(p.port, "/v1/tax-context?origin=FR&destination=de", 400));
	json_decref(get(p.port, "/v1/tax-context?origin=FR&destination=US", 422));
	struct http_resp r;
	cr_assert_eq(http_do(p.port, "GET", "/v1/tax-context?origin=FR&destination=DE", "Authorization: none\r\n",
			     NULL, &r),
		     0);
	cr_assert_eq(r.status, 401);
	http_resp_free(&r);
	wm_proc_cleanup(&p);
}

WM_TEST(taxctx, malformed_reference_data_refuses_start_with_file_line)
{
	struct wm_proc p;
	wm_proc_init(&p);
	const char *src = getenv("WM_SRC_DIR");
	char dir[600], cmd[4096], msg[2048] = "";
	snprintf(dir, sizeof(dir), "%s/refbad", p.dir);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s && cp %s/data/*.t?? %s/ && printf 'DE\\t-\\tstill\\t19\\t-\\t2025\\t-\\t-\\n' >> %s/vat.tsv",
		 dir, src ? src : ".", dir, dir);
	cr_assert_eq(system(cmd), 0);
	char arg[700];
	snprintf(arg, sizeof(arg), "--data-ref-dir=%s", dir);
	const char *const args[] = {arg, NULL};
	cr_assert_neq(wm_start_expect_fail(&p, args, msg, sizeof(msg)), 0);
	cr_assert(strstr(msg, "vat.tsv:43: every figure needs its source"), "%s", msg);
	wm_proc_cleanup(&p);
}
