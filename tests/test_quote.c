/*
 * test_quote.c -- POST /v1/orders/quote-calculate: the routing function on
 * its own (estate first, estate short -> split, cheapest-compliant order,
 * permission-blocked and unpriceable offers skipped, insufficient stock),
 * the volume-cap table, and the route over HTTP against a real wm-shard:
 * an estate-covered FR->DE still quote whose figures equal the price
 * engine's for the same inputs (and the hand computation below), a split
 * quote across two originators with estate_atp_short, and each 422 code.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/pricing/price.h"
#include "engine/pricing/quote.h"
#include "tests/api_client.h"
#include "tests/harness.h"
#include "tests/wm_test.h"
#include "tests/refdata_fixture.h"

/* ---- route_line (pure) ----------------------------------------------------- */

static struct route_cand cand(const char *id, int64_t atp, int64_t cost, int estate)
{
	return (struct route_cand){.offer_id = id, .atp = atp, .cost = cost, .is_estate = (uint8_t)estate,
				   .permitted = 1, .compliant = 1};
}

WM_TEST(route, estate_first_when_it_covers)
{
	struct route_cand c[] = {cand("ofr_a", 100, 500, 0), cand("ofr_b", 10, 900, 1), cand("ofr_c", 100, 100, 0)};
	struct route_plan p;
	cr_assert_eq(route_line(c, 3, 10, &p), ROUTE_OK);
	cr_assert_eq(p.n, 1);
	cr_assert_eq(p.a[0].cand, 1, "the estate wins even though dearer");
	cr_assert_eq(p.a[0].qty, 10);
	cr_assert_eq(p.split, ROUTE_SPLIT_NONE);
}

WM_TEST(route, cheapest_single_other_when_estate_short)
{
	struct route_cand c[] = {cand("ofr_a", 100, 500, 0), cand("ofr_b", 3, 100, 1), cand("ofr_c", 100, 400, 0),
				 cand("ofr_d", 5, 1, 0)};
	struct route_plan p;
	cr_assert_eq(route_line(c, 4, 10, &p), ROUTE_OK);
	cr_assert_eq(p.n, 1);
	cr_assert_eq(p.a[0].cand, 2, "cheapest other that covers the whole qty");
	/* tie on cost: the smaller offer id wins */
	struct route_cand t[] = {cand("ofr_z", 100, 400, 0), cand("ofr_m", 100, 400, 0)};
	cr_assert_eq(route_line(t, 2, 10, &p), ROUTE_OK);
	cr_assert_eq(p.a[0].cand, 1);
}

WM_TEST(route, estate_short_splits_estate_first)
{
	struct route_cand c[] = {cand("ofr_a", 4, 500, 0), cand("ofr_b", 3, 900, 1), cand("ofr_c", 6, 100, 0)};
	struct route_plan p;
	cr_assert_eq(route_line(c, 3, 10, &p), ROUTE_OK);
	cr_assert_eq(p.split, ROUTE_SPLIT_ESTATE_ATP_SHORT);
	cr_assert_eq(p.n, 3);
	cr_assert_eq(p.a[0].cand, 1);
	cr_assert_eq(p.a[0].qty, 3);
	cr_assert_eq(p.a[1].cand, 2, "then cheapest first");
	cr_assert_eq(p.a[1].qty, 6);
	cr_assert_eq(p.a[2].cand, 0);
	cr_assert_eq(p.a[2].qty, 1);
	cr_assert_str_eq(route_split_names[p.split], "estate_atp_short");
}

WM_TEST(route, split_without_estate_is_multi_originator)
{
	struct route_cand c[] = {cand("ofr_a", 4, 500, 0), cand("ofr_b", 0, 1, 1), cand("ofr_c", 6, 100, 0)};
	struct route_plan p;
	cr_assert_eq(route_line(c, 3, 8, &p), ROUTE_OK);
	cr_assert_eq(p.split, ROUTE_SPLIT_MULTI_ORIGINATOR);
	cr_assert_eq(p.n, 2);
	cr_assert_eq(p.a[0].cand, 2);
	cr_assert_eq(p.a[1].cand, 0);
	cr_assert_eq(p.a[1].qty, 2);
}

WM_TEST(route, blocked_and_unpriceable_offers_are_skipped)
{
	struct route_cand c[] = {cand("ofr_a", 100, 1, 1), cand("ofr_b", 100, 2, 0), cand("ofr_c", 100, 300, 0)};
	c[0].permitted = 0; /* the estate, but not permitted */
	c[1].compliant = 0; /* cheapest, but the engine cannot price it */
	struct route_plan p;
	cr_assert_eq(route_line(c, 3, 10, &p), ROUTE_OK);
	cr_assert_eq(p.n, 1);
	cr_assert_eq(p.a[0].cand, 2);
	c[2].permitted = 0;
	cr_assert_eq(route_line(c, 3, 10, &p), ROUTE_E_NOT_PRICEABLE);
	c[1].permitted = 0;
	cr_assert_eq(route_line(c, 3, 10, &p), ROUTE_E_NOT_PERMITTED);
	cr_assert_eq(route_line(c, 0, 10, &p), ROUTE_E_NO_OFFER);
}

WM_TEST(route, insufficient_stock_and_source_bound)
{
	struct route_cand c[] = {cand("ofr_a", 4, 1, 1), cand("ofr_b", 5, 2, 0), cand("ofr_c", 100, 3, 0)};
	c[2].permitted = 0; /* its stock does not count */
	struct route_plan p;
	cr_assert_eq(route_line(c, 3, 10, &p), ROUTE_E_INSUFFICIENT);
	cr_assert_eq(route_line(c, 3, 9, &p), ROUTE_OK);
	cr_assert_eq(p.n, 2);
	struct route_cand m[QUOTE_MAX_SOURCES + 1];
	static const char *const ids[] = {"o1", "o2", "o3", "o4", "o5", "o6", "o7", "o8"};
	_Static_assert(QUOTE_MAX_SOURCES + 1 <= 8, "ids");
	for (unsigned i = 0; i <= QUOTE_MAX_SOURCES; i++)
		m[i] = cand(ids[i], 1, 1, 0);
	cr_assert_eq(route_line(m, QUOTE_MAX_SOURCES, QUOTE_MAX_SOURCES, &p), ROUTE_OK);
	cr_assert_eq(p.n, QUOTE_MAX_SOURCES);
	cr_assert_eq(route_line(m, QUOTE_MAX_SOURCES + 1, QUOTE_MAX_SOURCES + 1, &p), ROUTE_E_TOO_MANY_SOURCES);
}

/* The volume caps are reference data now (data/caps.tsv): tax_2026's
 * caps_table_is_strict_and_the_shipped_one_is_the_guide_levels checks them. */

/* ---- over HTTP ---------------------------------------------------------------- */

static json_t *expect(int port, const char *method, const char *path, const char *key, const char *body, int want)
{
	char h[256] = "";
	if (key)
		snprintf(h, sizeof(h), "Authorization: Bearer %s\r\n", key);
	struct http_resp r;
	cr_assert_eq(http_do(port, method, path, key ? h : NULL, body, &r), 0, "%s %s: no response", method, path);
	cr_assert_eq(r.status, want, "%s %s %s: got %d want %d: %s", method, path, body ? body : "", r.status, want,
		     r.body);
	json_error_t e;
	json_t *j = json_loadb(r.body, r.body_len, 0, &e);
	cr_assert_not_null(j, "%s", r.body);
	http_resp_free(&r);
	return j;
}

/* An exact decimal money figure in minor units (2 digits), for comparison. */
static long long cents(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	cr_assert(json_is_number(v), "%s is not a number", k);
	return llround(json_number_value(v) * 100.0);
}

static void offer(int port, const char *key, const char *wine, const char *price, int qty, const char *extra, char *out)
{
	char body[1024];
	snprintf(body, sizeof(body),
		 "{\"wine_id\":\"%s\",\"seller_price\":%s,\"currency\":\"EUR\",\"qty_available\":%d,\"incoterm\":\"EXW\","
		 "\"status\":\"active\"%s%s}",
		 wine, price, qty, extra ? "," : "", extra ? extra : "");
	json_t *j = expect(port, "POST", "/v1/offers", key, body, 201);
	snprintf(out, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
}

static void location(int port, const char *key, const char *name, char *out)
{
	char body[512];
	snprintf(body, sizeof(body),
		 "{\"location_type\":\"BONDED_WAREHOUSE\",\"name\":\"%s\",\"address\":{\"line1\":\"1 rue du Vin\","
		 "\"city\":\"Beaune\",\"postal_code\":\"21200\",\"country\":\"FR\"}}",
		 name);
	json_t *j = expect(port, "POST", "/v1/stock-locations", key, body, 201);
	snprintf(out, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
}

static void level(int port, const char *key, const char *offer, const char *loc, int units)
{
	char body[512];
	snprintf(body, sizeof(body), "{\"sku\":\"SKU-%s\",\"offer_id\":\"%s\",\"location_id\":\"%s\",\"on_hand\":%d}",
		 offer, offer, loc, units);
	json_decref(expect(port, "POST", "/v1/inventory", key, body, 201));
}

struct qworld {
	struct wm_proc p;
	char est[64], o2[64], sel[64], kest[128], ko2[128], ksel[128];
	char w1[64], w2[64], w3[64];
	char of_est[64], of_o2[64], of_blk[64], chn[64];
};

static void qworld_args(struct qworld *x, const char *const *args)
{
	wm_proc_init(&x->p);
	cr_assert_eq(wm_start(&x->p, args, NULL), 0, "wm-shard did not start (logs in %s)", x->p.dir);
	int port = x->p.port;
	tc_partner_live(port, "Estate", "FR", "[\"originator\"]", "\"originator_type\":\"estate\"", x->est);
	tc_partner_live(port, "Stockist", "FR", "[\"originator\"]", "\"originator_type\":\"stock\"", x->o2);
	tc_partner_live(port, "Shop", "DE", "[\"seller\"]", NULL, x->sel);
	tc_key_for(port, x->est, x->kest);
	tc_key_for(port, x->o2, x->ko2);
	tc_key_for(port, x->sel, x->ksel);
	tc_pub_wine_of(port, "Estate Rouge", x->est, "wine", x->w1);
	tc_pub_wine_of(port, "Blocked Rouge", NULL, "wine", x->w2);
	tc_pub_wine_of(port, "No Offer Rouge", NULL, "wine", x->w3);
	offer(port, x->kest, x->w1, "10.00", 5, "\"network_shareable\":true", x->of_est);
	offer(port, x->ko2, x->w1, "11.00", 10, "\"network_shareable\":true", x->of_o2);
	/* visible to the seller (named), but not deliverable to DE: not_permitted.
	 * (An offer the seller may not see at all -- its country blocked, say --
	 * answers like no offer: test_order_views.c.) */
	char perm[256];
	snprintf(perm, sizeof(perm),
		 "\"network_shareable\":true,\"permissions\":{\"named_sellers\":[\"%s\"],\"allowed_countries\":[\"FR\"]}",
		 x->sel);
	offer(port, x->ko2, x->w2, "9.00", 50, perm, x->of_blk);
	char body[512];
	/* the stock behind the two offers of w1 (the same quantities), at a
	 * location of each originator, both linked to the seller's one sales
	 * channel: availability is scoped by the channel's locations (spec 2.5) */
	char loc_est[64], loc_o2[64];
	location(port, x->kest, "Estate cellar", loc_est);
	location(port, x->ko2, "Stockist warehouse", loc_o2);
	level(port, x->kest, x->of_est, loc_est, 5);
	level(port, x->ko2, x->of_o2, loc_o2, 10);
	snprintf(body, sizeof(body), "{\"name\":\"Web\",\"kind\":\"webshop_connect\",\"location_ids\":[\"%s\",\"%s\"]}",
		 loc_est, loc_o2);
	json_t *j = expect(port, "POST", "/v1/sales-channels", x->ksel, body, 201);
	snprintf(x->chn, sizeof(x->chn), "%s", tc_jstr(j, "id"));
	json_decref(j);
	snprintf(body, sizeof(body),
		 "{\"offer_id\":\"%s\",\"channel_id\":\"%s\",\"shelf_price\":14.55,\"currency\":\"EUR\",\"status\":\"live\"}",
		 x->of_est, x->chn);
	json_decref(expect(port, "POST", "/v1/listings", x->ksel, body, 201));
}

static void qworld(struct qworld *x) { qworld_args(x, NULL); }

/* The engine's figure for the same inputs: still 0.75 l 13 % from FR, EXW,
 * box 12, R 0, F 5 %, to DE. */
static struct price_line_in eng_line(int64_t p, int64_t m, uint32_t qty)
{
	struct price_line_in l = {.p_b2b = p, .margin = m, .currency = "EUR", .qty = qty, .box_units = 12,
				  .category = RD_CAT_STILL, .incoterm = PRICE_INCO_EXW, .abv = 1300, .volume_ul = 750000,
				  .origin = "FR", .recruiter_ppm = 0, .platform_ppm = QUOTE_PLATFORM_FEE_PPM};
	return l;
}

static json_t *quote(struct qworld *x, const char *lines, int want)
{
	char body[1024];
	snprintf(body, sizeof(body), "{\"destination_country\":\"DE\",\"lines\":[%s]}", lines);
	return expect(x->p.port, "POST", "/v1/orders/quote-calculate", x->ksel, body, want);
}

static void expect_code(struct qworld *x, const char *lines, const char *code)
{
	json_t *j = quote(x, lines, 422);
	cr_assert_str_eq(tc_jstr(j, "code"), code, "%s", json_dumps(j, JSON_COMPACT));
	json_decref(j);
}

/*
 * Estate covers 4 units (ATP 5): P 4 x 10.00 = 40.00; M 4 x (14.55 - 10.00)
 * = 18.20 (the seller's live listing); R 0; F 5 % x 58.20 = 2.91; C 1 box
 * FR-DE 12 = 72.00; E DE still 0.00; V 19 % x 133.11 = 25.2909 -> 25.29;
 * total 158.40 EUR.
 */
WM_TEST(quote, estate_covered_fr_to_de_equals_the_engine)
{
	struct qworld x;
	qworld(&x);
	char ln[256];
	snprintf(ln, sizeof(ln), "{\"sku\":\"%s\",\"qty\":4,\"box_units\":12}", x.w1);
	json_t *j = quote(&x, ln, 200);
	cr_assert_str_eq(tc_jstr(j, "currency"), "EUR");
	cr_assert_eq(cents(j, "total"), 15840);

	struct refdata *rd = load_repo();
	struct price_line_in l = eng_line(1000, 455, 4);
	struct price_order_in in = {.destination = "DE", .date = 20251101, .n_lines = 1, .lines = &l};
	struct price_quote *q = malloc(sizeof(*q));
	cr_assert_eq(price_quote(rd, &in, q), PRICE_OK);
	cr_assert_eq(cents(j, "total"), q->total);
	json_t *comps = json_object_get(j, "components");
	for (int k = 0; k < PC_COUNT_; k++)
		cr_assert_eq(cents(comps, price_comp_names[k]), q->comp_total[k], "%s", price_comp_names[k]);

	json_t *s = json_array_get(json_object_get(j, "sourcing"), 0);
	cr_assert_str_eq(tc_jstr(s, "priority"), "estate_first");
	cr_assert(json_is_null(json_object_get(s, "split_reason")));
	json_t *src = json_object_get(s, "source");
	cr_assert_eq(json_array_size(src), 1);
	cr_assert_str_eq(tc_jstr(json_array_get(src, 0), "offer_id"), x.of_est);
	cr_assert_str_eq(tc_jstr(json_array_get(src, 0), "originator_id"), x.est);
	cr_assert_eq(cents(json_array_get(src, 0), "p2b"), 1000);

	json_t *line = json_array_get(json_object_get(j, "lines"), 0);
	json_t *tb = json_object_get(line, "tax_breakdown");
	cr_assert_eq(json_array_size(tb), 2);
	json_t *vat = json_array_get(tb, 1);
	cr_assert_str_eq(tc_jstr(vat, "tax"), "vat");
	cr_assert_str_eq(tc_jstr(vat, "basis"), "percent");
	cr_assert_str_eq(tc_jstr(vat, "reference_version"), "2026-11-25.1");
	cr_assert_str_eq(tc_jstr(vat, "effective_date"), "2026-11-25");
	cr_assert_str_eq(tc_jstr(json_array_get(tb, 0), "basis"), "per_hl_product");

	/* settlement: originator 40.00, seller 18.20, fulfiller 72.00 (the estate,
	 * owner of its cellar's level), platform 2.91, VAT 25.29 escrowed: adds up to the total */
	json_t *ss = json_object_get(j, "settlement_split");
	long long sum = cents(ss, "platform_fee") + cents(json_object_get(ss, "escrowed_taxes"), "excise") +
			cents(json_object_get(ss, "escrowed_taxes"), "vat");
	size_t i;
	json_t *pty;
	json_array_foreach(json_object_get(ss, "parties"), i, pty) sum += cents(pty, "amount");
	cr_assert_eq(sum, 15840);
	json_decref(j);
	free(q);
	refdata_free(rd);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

/*
 * 12 units: the estate has 5, the stockist 10 -- neither covers, so split:
 * estate 5 (P 50.00, M 22.75, F 3.64, C 72.00, V 19 % x 148.3875 = 28.19 ->
 * 176.58) then the stockist 7 (P 77.00, M 0, F 3.85, C 72.00, V 19 % x
 * 152.85 = 29.04 -> 181.89): 358.47 EUR.
 */
WM_TEST(quote, split_when_estate_atp_short)
{
	struct qworld x;
	qworld(&x);
	char ln[256];
	snprintf(ln, sizeof(ln), "{\"sku\":\"%s\",\"qty\":12,\"box_units\":12}", x.w1);
	json_t *j = quote(&x, ln, 200);
	cr_assert_eq(cents(j, "total"), 35847, "%s", json_dumps(j, JSON_COMPACT));
	json_t *s = json_array_get(json_object_get(j, "sourcing"), 0);
	cr_assert_str_eq(tc_jstr(s, "split_reason"), "estate_atp_short");
	json_t *src = json_object_get(s, "source");
	cr_assert_eq(json_array_size(src), 2);
	cr_assert_str_eq(tc_jstr(json_array_get(src, 0), "offer_id"), x.of_est);
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(src, 0), "qty")), 5);
	cr_assert_str_eq(tc_jstr(json_array_get(src, 1), "offer_id"), x.of_o2);
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(src, 1), "qty")), 7);
	cr_assert_eq(cents(json_array_get(src, 1), "p2b"), 1100);

	struct refdata *rd = load_repo();
	struct price_line_in l[2] = {eng_line(1000, 455, 5), eng_line(1100, 0, 7)};
	struct price_order_in in = {.destination = "DE", .date = 20251101, .n_lines = 2, .lines = l};
	struct price_quote *q = malloc(sizeof(*q));
	cr_assert_eq(price_quote(rd, &in, q), PRICE_OK);
	cr_assert_eq(q->total, 35847);
	json_t *srcs = json_object_get(json_array_get(json_object_get(j, "lines"), 0), "sources");
	cr_assert_eq(cents(json_array_get(srcs, 0), "total"), q->lines[0].total);
	cr_assert_eq(cents(json_array_get(srcs, 1), "total"), q->lines[1].total);
	json_decref(j);

	/* the estate alone covers 5: no split, and 10 from the stockist alone */
	snprintf(ln, sizeof(ln), "{\"sku\":\"%s\",\"qty\":10,\"box_units\":6}", x.w1);
	j = quote(&x, ln, 200);
	s = json_array_get(json_object_get(j, "sourcing"), 0);
	cr_assert(json_is_null(json_object_get(s, "split_reason")));
	cr_assert_str_eq(tc_jstr(json_array_get(json_object_get(s, "source"), 0), "offer_id"), x.of_o2);
	json_decref(j);
	free(q);
	refdata_free(rd);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

WM_TEST(quote, each_422_code)
{
	struct qworld x;
	qworld(&x);
	char ln[512];
	snprintf(ln, sizeof(ln), "{\"sku\":\"%s\",\"qty\":16,\"box_units\":12}", x.w1);
	expect_code(&x, ln, "insufficient_stock");
	snprintf(ln, sizeof(ln), "{\"sku\":\"%s\",\"qty\":1,\"box_units\":12}", x.w2);
	expect_code(&x, ln, "not_permitted");
	snprintf(ln, sizeof(ln), "{\"sku\":\"%s\",\"qty\":1,\"box_units\":12}", x.w3);
	expect_code(&x, ln, "no_sellable_offer");
	expect_code(&x, "{\"sku\":\"wine_nope\",\"qty\":1,\"box_units\":12}", "unknown_sku");
	snprintf(ln, sizeof(ln), "{\"sku\":\"%s\",\"qty\":1,\"box_units\":7}", x.w1);
	expect_code(&x, ln, "invalid_box_size");
	snprintf(ln, sizeof(ln), "{\"sku\":\"%s\",\"qty\":0,\"box_units\":7}", x.w1);
	json_t *j = quote(&x, ln, 422);
	cr_assert_str_eq(tc_jstr(j, "code"), "validation_failed");
	cr_assert_eq(json_array_size(json_object_get(j, "errors")), 2, "every error at once");
	json_decref(j);
	/* 121 x 0.75 l = 90.75 l of still wine > 90 l */
	snprintf(ln, sizeof(ln), "{\"sku\":\"%s\",\"qty\":61,\"box_units\":12},{\"sku\":\"%s\",\"qty\":60,\"box_units\":6}",
		 x.w1, x.w3);
	j = quote(&x, ln, 422);
	cr_assert_str_eq(tc_jstr(j, "code"), "volume_cap_exceeded");
	json_t *cap = json_object_get(j, "cap");
	cr_assert_str_eq(tc_jstr(cap, "category"), "still");
	cr_assert_eq(llround(json_number_value(json_object_get(cap, "excess_liters")) * 100), 75);
	json_decref(j);
	/* an offer id as the sku pins the line to it */
	snprintf(ln, sizeof(ln), "{\"sku\":\"%s\",\"qty\":2,\"box_units\":12}", x.of_o2);
	j = quote(&x, ln, 200);
	cr_assert_str_eq(tc_jstr(json_array_get(json_object_get(json_array_get(json_object_get(j, "sourcing"), 0), "source"), 0),
			      "offer_id"),
			 x.of_o2);
	json_decref(j);
	/* a partner quotes as itself only; the platform must name the seller */
	snprintf(ln, sizeof(ln), "{\"destination_country\":\"DE\",\"seller\":\"%s\",\"lines\":[{\"sku\":\"%s\",\"qty\":1,\"box_units\":12}]}",
		 x.est, x.w1);
	json_decref(expect(x.p.port, "POST", "/v1/orders/quote-calculate", x.ksel, ln, 422));
	snprintf(ln, sizeof(ln), "{\"destination_country\":\"DE\",\"seller\":\"%s\",\"lines\":[{\"sku\":\"%s\",\"qty\":1,\"box_units\":12}]}",
		 x.sel, x.w1);
	json_decref(expect(x.p.port, "POST", "/v1/orders/quote-calculate", NULL, ln, 200));
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

/* The platform fee is configuration: --platform-fee-ppm 0 with a fixed fee
 * of 2.50 EUR per order gives F = 2.50 (order level), and the quote equals
 * the engine's figure for the same inputs. */
WM_TEST(quote, platform_fee_is_configured)
{
	struct qworld x;
	const char *args[] = {"--platform-fee-ppm", "0", "--platform-fixed-fee-cents", "250", NULL};
	qworld_args(&x, args);
	char ln[256];
	snprintf(ln, sizeof(ln), "{\"sku\":\"%s\",\"qty\":4,\"box_units\":12}", x.w1);
	json_t *j = quote(&x, ln, 200);
	struct refdata *rd = load_repo();
	struct price_line_in l = eng_line(1000, 455, 4);
	l.platform_ppm = 0;
	struct price_order_in in = {.destination = "DE", .date = 20251101, .n_lines = 1, .lines = &l, .fixed_fee_cents = 250};
	struct price_quote *q = malloc(sizeof(*q));
	cr_assert_eq(price_quote(rd, &in, q), PRICE_OK);
	cr_assert_eq(cents(json_object_get(j, "components"), "F_Platform"), 250);
	cr_assert_eq(cents(j, "total"), q->total);
	cr_assert_eq(q->comp_total[PC_F_PLATFORM], 250, "only the fixed fee");
	cr_assert_neq(cents(j, "total"), 15840, "differs from the 5 %% default");
	json_decref(j);
	free(q);
	refdata_free(rd);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}
