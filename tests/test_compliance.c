/*
 * test_compliance.c -- the delivery register and the destination
 * declarations (issue: after the sale, items 7 and 8).
 *
 * The world (order_world.h): the wine is still wine, 13 % vol, 0.75 L;
 * orders go to DE (still wine: no German excise; VAT 19 %).  Order A: 30
 * bottles split estate 24 + stockist 6; order B: 6 bottles from the
 * stockist.  By hand, for the month's declaration of still wine:
 *   units   = 24 + 6 + 6                     = 36
 *   litres  = 36 x 0.75                       = 27.000000
 *   LPA     = 27 x 13 / 100                   = 3.5100
 *   excise  = 0 (DE taxes still wine at zero)
 *   VAT     = the two orders' V_VAT, whole: the legs' shares add up to them
 *   records = 3 (one per product per delivered leg), each leg keeping its originator.
 */
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

static void month(long ago_s, char out[8])
{
	char t[40];
	ow_ago(ago_s, t);
	snprintf(out, 8, "%.7s", t);
}

/* An order of qty, every leg shipped and delivered ago_s ago; its id and V_VAT (cents). */
static void delivered(struct oworld *x, int qty, long ago_s, char *id, long long *vat)
{
	int st;
	json_t *o = ow_order(x, qty, NULL, NULL, &st);
	cr_assert_eq(st, 201, "%s", dump(o));
	snprintf(id, 64, "%s", tc_jstr(o, "id"));
	size_t i;
	json_t *l;
	*vat = 0;
	json_array_foreach(json_object_get(json_object_get(o, "financial_breakdown"), "lines"), i, l)
		if (!strcmp(tc_jstr(l, "component"), "V_VAT"))
			*vat += ow_cents(l, "amount");
	json_decref(o);
	ow_deliver(x, id, ~0u, ago_s);
}

static json_t *register_of(struct oworld *x, const char *key, const char *id)
{
	char path[160];
	snprintf(path, sizeof(path), "/v1/orders/%s/compliance", id);
	return tc_expect(x->port, "GET", path, key, NULL, 200);
}

WM_TEST(compliance, a_delivery_writes_its_register_and_the_month_declares_it)
{
	struct oworld x;
	ow_start(&x, NULL, 24, 24);
	char a[64], b[64], now_month[8];
	long long vat_a, vat_b;
	delivered(&x, 30, 60, a, &vat_a);
	delivered(&x, 6, 60, b, &vat_b);
	month(0, now_month);

	/* the register: one record per product per delivered leg */
	json_t *r = register_of(&x, NULL, a);
	cr_assert_eq(json_array_size(json_object_get(r, "data")), 2, "%s", dump(r));
	json_t *e = jat(r, "data", 0);
	cr_assert_eq(json_integer_value(json_object_get(e, "units_delivered")), 24);
	cr_assert_eq(ow_cents(e, "unit_capacity_litres"), 75, "0.75 L");
	cr_assert_eq(ow_cents(e, "abv"), 1300, "13 %% vol");
	cr_assert_eq(ow_cents(e, "litres"), 1800, "24 x 0.75 = 18 L");
	cr_assert_str_eq(tc_jstr(e, "commodity_code"), "220421", "still wine, <= 2 L: CN 2204 21");
	cr_assert_str_eq(tc_jstr(e, "consignee"), "Erika Mustermann");
	cr_assert_str_eq(tc_jstr(json_object_get(e, "delivery_address"), "city"), "Berlin");
	cr_assert_str_eq(tc_jstr(e, "originator_id"), x.est);
	cr_assert_str_eq(tc_jstr(e, "period"), now_month);
	cr_assert(json_is_string(json_object_get(e, "product_description")));
	cr_assert(json_is_string(json_object_get(e, "excise_category_code")));
	long long vat_legs = ow_cents(e, "vat_due") + ow_cents(jat(r, "data", 1), "vat_due");
	cr_assert(vat_legs - vat_a <= 1 && vat_a - vat_legs <= 1, "the legs' VAT %lld, the order's %lld", vat_legs, vat_a);
	json_decref(r);
	/* a partner sees its own legs' records only */
	r = register_of(&x, x.kstk, a);
	cr_assert_eq(json_array_size(json_object_get(r, "data")), 1, "%s", dump(r));
	cr_assert_str_eq(tc_jstr(jat(r, "data", 0), "originator_id"), x.stk);
	json_decref(r);

	/* the declaration (hand figures in the file's comment) */
	char path[200];
	snprintf(path, sizeof(path), "/v1/compliance/declarations?destination=DE&period=%s", now_month);
	json_t *d = tc_expect(x.port, "GET", path, NULL, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(d, "declarations")), 1, "%s", dump(d));
	json_t *s = jat(d, "declarations", 0);
	cr_assert_str_eq(tc_jstr(s, "excise_category"), "still");
	cr_assert_eq(json_integer_value(json_object_get(s, "records")), 3);
	cr_assert_eq(json_integer_value(json_object_get(s, "units")), 36);
	cr_assert_eq(ow_cents(s, "litres"), 2700, "27 L: %s", dump(s));
	cr_assert(json_real_value(json_object_get(s, "litres_pure_alcohol")) > 3.50999 &&
			  json_real_value(json_object_get(s, "litres_pure_alcohol")) < 3.51001,
		  "27 x 13 / 100 = 3.51: %s", dump(s));
	cr_assert_eq(ow_cents(s, "excise_due"), 0);
	long long vat = ow_cents(s, "vat_due");
	cr_assert(vat - (vat_a + vat_b) <= 2 && (vat_a + vat_b) - vat <= 2, "VAT %lld, the orders' %lld", vat,
		  vat_a + vat_b);
	cr_assert(json_is_false(json_object_get(d, "closed")), "this month is open");
	json_decref(d);
	/* refusals */
	json_decref(tc_expect(x.port, "GET", path, x.ksel, NULL, 403));
	d = tc_expect(x.port, "GET", "/v1/compliance/declarations?destination=de&period=2026-13", NULL, NULL, 422);
	cr_assert(tc_lists_error(d, "destination", "format") && tc_lists_error(d, "period", "format"), "%s", dump(d));
	json_decref(d);
	/* kill -9: the register is durable */
	wm_kill9(&x.p);
	ow_restart(&x, NULL);
	r = register_of(&x, NULL, b);
	cr_assert_eq(json_array_size(json_object_get(r, "data")), 1, "%s", dump(r));
	json_decref(r);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

/* A delivery scanned after its month ended is booked in the month it is
 * recorded (late, with its real date): a closed month never changes. */
WM_TEST(compliance, a_late_scan_is_booked_in_the_open_month)
{
	struct oworld x;
	ow_start(&x, NULL, 24, 24);
	char id[64], then[8], now_month[8];
	long long vat;
	delivered(&x, 2, 40L * 86400, id, &vat);
	month(40L * 86400, then);
	month(0, now_month);
	json_t *r = register_of(&x, NULL, id);
	json_t *e = jat(r, "data", 0);
	cr_assert(json_is_true(json_object_get(e, "late")), "%s", dump(r));
	cr_assert_str_eq(tc_jstr(e, "period"), now_month);
	cr_assert(!strncmp(tc_jstr(e, "date"), then, 7), "its real date: %s", dump(e));
	json_decref(r);
	char path[200];
	snprintf(path, sizeof(path), "/v1/compliance/declarations?destination=DE&period=%s", then);
	json_t *d = tc_expect(x.port, "GET", path, NULL, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(d, "declarations")), 0, "the closed month is unchanged: %s", dump(d));
	cr_assert(json_is_true(json_object_get(d, "closed")));
	json_decref(d);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

/*
 * Returns and refunds correct the register in the month the money goes
 * back, never by changing a record.  The world ships to FR (still wine:
 * 4.19 EUR/hl from 2026-01-01, data/excise.tsv; VAT 20 %), one order of 10
 * bottles of 0.75 L, 13 % vol, all from the estate.  By hand:
 *   delivered: 10 units, 7.5 L, LPA 0.975, excise E = 0.075 hl x 4.19
 *              = 0.31425 -> 0.31 EUR, VAT V (the order's V_VAT)
 *   R1 refund of 2 (goods kept): units 0, excise 0, VAT -round(V x 2/10)
 *   R2 return of 3 (goods back): units -3, -2.25 L, LPA -0.2925,
 *              excise -round(0.31 x 3/10) = -0.09, VAT -round(V x 3/10)
 *   month:     3 records, 2 corrections, 7 units, 5.25 L, LPA 0.6825,
 *              excise 0.31 - 0.09 = 0.22, VAT V - both corrections.
 */
WM_TEST(compliance, returns_and_refunds_are_booked_as_corrections)
{
	struct oworld x;
	memset(&x, 0, sizeof(x));
	wm_proc_init(&x.p);
	ow_restart(&x, NULL);
	ow_build(&x, x.port, 24, 0, "FR", "FR");
	char a[64], now_month[8], path[256], rid[128];
	long long vat;
	delivered(&x, 10, 60, a, &vat);
	month(0, now_month);
	json_t *r = register_of(&x, NULL, a);
	cr_assert_eq(json_array_size(json_object_get(r, "data")), 1, "%s", dump(r));
	cr_assert_eq(ow_cents(jat(r, "data", 0), "excise_due"), 31, "0.075 hl x 4.19 = 0.31425: %s", dump(r));
	cr_assert_str_eq(tc_jstr(jat(r, "data", 0), "entry"), "delivery");
	long long v_leg = ow_cents(jat(r, "data", 0), "vat_due");
	cr_assert_eq(v_leg, vat, "one leg: the whole V_VAT");
	json_decref(r);

	snprintf(path, sizeof(path), "/v1/orders/%s/returns", a);
	json_decref(tc_expect(x.port, "POST", path, x.ksel,
			      "{\"kind\":\"refund\",\"reason\":\"damaged\",\"lines\":[{\"line\":0,\"qty\":2}]}", 201));
	r = tc_expect(x.port, "POST", path, x.ksel,
		      "{\"kind\":\"return\",\"reason\":\"wrong_item\",\"lines\":[{\"line\":0,\"qty\":3}]}", 201);
	snprintf(rid, sizeof(rid), "%s", tc_jstr(r, "id"));
	json_decref(r);
	/* nothing is booked for the return before its goods are back and the money with them */
	r = register_of(&x, NULL, a);
	cr_assert_eq(json_array_size(json_object_get(r, "data")), 2, "the delivery and R1: %s", dump(r));
	json_decref(r);
	snprintf(path, sizeof(path), "/v1/orders/%s/returns/%s/receive", a, rid);
	json_decref(tc_expect(x.port, "POST", path, x.kest, "{}", 200));

	r = register_of(&x, NULL, a);
	cr_assert_eq(json_array_size(json_object_get(r, "data")), 3, "%s", dump(r));
	json_t *r1 = jat(r, "data", 1), *r2 = jat(r, "data", 2);
	cr_assert_str_eq(tc_jstr(r1, "entry"), "refund", "%s", dump(r1));
	cr_assert_eq(json_integer_value(json_object_get(r1, "units_delivered")), 0);
	cr_assert_eq(ow_cents(r1, "excise_due"), 0, "goods kept: the excise stays due");
	cr_assert_eq(ow_cents(r1, "vat_due"), -((v_leg * 2 + 5) / 10), "%s", dump(r1));
	cr_assert_str_eq(tc_jstr(r1, "period"), now_month);
	cr_assert_str_eq(tc_jstr(r2, "entry"), "return", "%s", dump(r2));
	cr_assert_str_eq(tc_jstr(r2, "return_id"), rid);
	cr_assert_eq(json_integer_value(json_object_get(r2, "units_delivered")), -3);
	cr_assert_eq(ow_cents(r2, "litres"), -225, "%s", dump(r2));
	cr_assert_eq(ow_cents(r2, "excise_due"), -9, "round(0.31 x 3 / 10)");
	cr_assert_eq(ow_cents(r2, "vat_due"), -((v_leg * 3 + 5) / 10), "%s", dump(r2));
	cr_assert_str_eq(tc_jstr(r2, "originator_id"), x.est);
	json_decref(r);

	snprintf(path, sizeof(path), "/v1/compliance/declarations?destination=FR&period=%s", now_month);
	json_t *d = tc_expect(x.port, "GET", path, NULL, NULL, 200);
	json_t *s = jat(d, "declarations", 0);
	cr_assert_eq(json_integer_value(json_object_get(s, "records")), 3, "%s", dump(d));
	cr_assert_eq(json_integer_value(json_object_get(s, "corrections")), 2);
	cr_assert_eq(json_integer_value(json_object_get(s, "units")), 7);
	cr_assert_eq(ow_cents(s, "litres"), 525, "%s", dump(s));
	double lpa = json_real_value(json_object_get(s, "litres_pure_alcohol"));
	cr_assert(lpa > 0.68249 && lpa < 0.68251, "5.25 x 13 / 100 = 0.6825: %s", dump(s));
	cr_assert_eq(ow_cents(s, "excise_due"), 22, "%s", dump(s));
	cr_assert_eq(ow_cents(s, "vat_due"), v_leg - (v_leg * 2 + 5) / 10 - (v_leg * 3 + 5) / 10, "%s", dump(s));
	json_decref(d);
	/* kill -9: the corrections are durable */
	wm_kill9(&x.p);
	ow_restart(&x, NULL);
	r = register_of(&x, NULL, a);
	cr_assert_eq(json_array_size(json_object_get(r, "data")), 3, "%s", dump(r));
	json_decref(r);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

/* The destination's fiscal representative (a partner the operators name
 * for it) reads that destination's declarations, and only those. */
WM_TEST(compliance, the_fiscal_representative_reads_its_destinations_declarations)
{
	struct oworld x;
	ow_start(&x, NULL, 24, 0);
	char a[64], now_month[8], path[200], rep[64], krep[128], ppath[160];
	long long vat;
	delivered(&x, 6, 60, a, &vat);
	month(0, now_month);
	tc_partner_live(x.port, "Fiskalvertretung GmbH", "DE", "[\"fulfiller\"]", NULL, rep);
	tc_key_for(x.port, rep, krep);
	snprintf(path, sizeof(path), "/v1/compliance/declarations?destination=DE&period=%s", now_month);
	json_t *e = tc_expect(x.port, "GET", path, krep, NULL, 403);
	cr_assert_str_eq(tc_jstr(e, "code"), "not_fiscal_representative", "%s", dump(e));
	json_decref(e);
	/* only operators name a representative */
	snprintf(ppath, sizeof(ppath), "/v1/partners/%s", rep);
	e = tc_expect(x.port, "PATCH", ppath, krep, "{\"fiscal_representative_for\":[\"DE\"]}", 403);
	cr_assert_str_eq(tc_jstr(e, "code"), "operator_only_field", "%s", dump(e));
	json_decref(e);
	/* its bounds: countries, each once, at most 8 */
	e = tc_expect(x.port, "PATCH", ppath, NULL, "{\"fiscal_representative_for\":[\"XX\"]}", 422);
	cr_assert(tc_lists_error(e, "fiscal_representative_for", "format"), "%s", dump(e));
	json_decref(e);
	e = tc_expect(x.port, "PATCH", ppath, NULL, "{\"fiscal_representative_for\":[\"DE\",\"DE\"]}", 422);
	cr_assert(tc_lists_error(e, "fiscal_representative_for", "duplicate"), "%s", dump(e));
	json_decref(e);
	e = tc_expect(x.port, "PATCH", ppath, NULL,
		      "{\"fiscal_representative_for\":[\"DE\",\"AT\",\"FR\",\"IT\",\"ES\",\"PT\",\"NL\",\"BE\",\"PL\"]}", 422);
	cr_assert(tc_lists_error(e, "fiscal_representative_for", "format"), "9 countries: %s", dump(e));
	json_decref(e);
	json_t *p = tc_expect(x.port, "PATCH", ppath, NULL,
			      "{\"fiscal_representative_for\":[\"DE\",\"AT\",\"FR\",\"IT\",\"ES\",\"PT\",\"NL\",\"BE\"]}", 200);
	cr_assert_eq(json_array_size(json_object_get(p, "fiscal_representative_for")), 8, "%s", dump(p));
	json_decref(p);
	/* now DE's declaration is its to read, with the platform's figures; PL's is not */
	json_t *d = tc_expect(x.port, "GET", path, krep, NULL, 200);
	json_t *o = tc_expect(x.port, "GET", path, NULL, NULL, 200);
	cr_assert_eq(json_integer_value(json_object_get(jat(d, "declarations", 0), "units")), 6, "%s", dump(d));
	cr_assert(json_equal(d, o), "the representative and the platform read the same declaration");
	json_decref(d);
	json_decref(o);
	snprintf(path, sizeof(path), "/v1/compliance/declarations?destination=PL&period=%s", now_month);
	json_decref(tc_expect(x.port, "GET", path, krep, NULL, 403));
	/* removed again: refused again */
	json_decref(tc_expect(x.port, "PATCH", ppath, NULL, "{\"fiscal_representative_for\":null}", 200));
	snprintf(path, sizeof(path), "/v1/compliance/declarations?destination=DE&period=%s", now_month);
	json_decref(tc_expect(x.port, "GET", path, krep, NULL, 403));
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}
