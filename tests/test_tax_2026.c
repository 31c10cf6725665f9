/*
 * test_tax_2026.c -- issue 23 items 2-5: rates carry effective dates and the
 * one in force on the pricing day is used (the 2026 schedules loaded beside
 * the 2025 ones), the dated table layout is strict at its edges, every
 * destination x category that has a citable figure is priced (table below,
 * the expected duty worked out by hand from the cited row), and each kind
 * of refusal names its stable code.
 *
 * Why unit level for the table: the duty of a DAP line is independent of
 * routing, so price_quote() over one line per (destination, category) is
 * the whole question; the HTTP tests below cover the clock, the order that
 * keeps its rate and the refusal document.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/pricing/price.h"
#include "tests/api_client.h"
#include "tests/harness.h"
#include "tests/order_world.h"
#include "tests/wm_test.h"
#include "tests/refdata_fixture.h"

static int64_t rate_on(const struct refdata *rd, const char *cc, int cat, uint16_t abv, uint32_t day, int *status)
{
	const struct rd_excise *e;
	*status = refdata_excise(rd, cc, cat, abv, day, &e);
	return e ? e->rate_e4 : -1;
}

/* ---- effective dates: the row in force on the day ------------------------ */

/*
 * UK alcohol duty, 8.5-22 % band, per litre of pure alcohol: GBP 29.54 from
 * 1 Feb 2025 (gov.uk) and GBP 30.62 from 1 Feb 2026 (policy paper "Alcohol
 * Duty: rates change", 26 Nov 2025).  Both schedules are loaded at once;
 * 31 Jan 2026 is the last day of the old rate, 1 Feb 2026 the first of the new.
 */
WM_TEST(tax_2026, uk_duty_changes_on_1_february_2026)
{
	struct refdata *rd = load_repo();
	int st;
	cr_assert_eq(rate_on(rd, "GB", RD_CAT_STILL, 1300, 20260131, &st), 295400);
	cr_assert_eq(st, RD_FOUND);
	cr_assert_eq(rate_on(rd, "GB", RD_CAT_STILL, 1300, 20260201, &st), 306200);
	cr_assert_eq(rate_on(rd, "GB", RD_CAT_SPARKLING, 849, 20260201, &st), 266100); /* 3.5-8.49 band: 26.61 */
	cr_assert_eq(rate_on(rd, "GB", RD_CAT_FORTIFIED, 2000, 20260131, &st), 295400);
	cr_assert_eq(rate_on(rd, "GB", RD_CAT_FORTIFIED, 2000, 20260201, &st), 306200);
	/* 6 x 0.75 l at 13 %: 0.585 l of pure alcohol; x 29.54 = 17.2809 -> 17.28 GBP;
	 * x 30.62 = 17.9127 -> 17.91 GBP */
	struct price_line_in l = {.p_b2b = 1000, .currency = "GBP", .qty = 6, .box_units = 6, .category = RD_CAT_STILL,
				  .incoterm = PRICE_INCO_DAP, .abv = 1300, .volume_ul = 750000, .origin = "FR"};
	struct price_order_in in = {.destination = "GB", .date = 20260131, .n_lines = 1, .lines = &l};
	struct price_quote q;
	cr_assert_eq(price_quote(rd, &in, &q), PRICE_OK);
	cr_assert_eq(q.lines[0].comp[PC_E_EXCISE], 1728);
	cr_assert_eq(q.lines[0].excise->to, 20260131u);
	in.date = 20260201;
	cr_assert_eq(price_quote(rd, &in, &q), PRICE_OK);
	cr_assert_eq(q.lines[0].comp[PC_E_EXCISE], 1791);
	cr_assert_eq(q.lines[0].excise->from, 20260201u);
	refdata_free(rd);
}

/* The other 2026 changes of shared/reference/excise-vat-2026*.md. */
WM_TEST(tax_2026, schedules_of_2026_apply_from_their_day)
{
	struct refdata *rd = load_repo();
	int st;
	/* FR droits de circulation: 4.12 / 10.20 (2025) -> 4.19 / 10.38 (2026); 2024 has no citable figure */
	cr_assert_eq(rate_on(rd, "FR", RD_CAT_STILL, 1300, 20251231, &st), 41200);
	cr_assert_eq(rate_on(rd, "FR", RD_CAT_STILL, 1300, 20260101, &st), 41900);
	cr_assert_eq(rate_on(rd, "FR", RD_CAT_SPARKLING, 1200, 20260101, &st), 103800);
	rate_on(rd, "FR", RD_CAT_STILL, 1300, 20240615, &st);
	cr_assert_eq(st, RD_NOT_PUBLISHED);
	/* FR intermediate products 205.93 -> 209.53 */
	cr_assert_eq(rate_on(rd, "FR", RD_CAT_FORTIFIED, 1950, 20251231, &st), 2059300);
	cr_assert_eq(rate_on(rd, "FR", RD_CAT_FORTIFIED, 1950, 20260101, &st), 2095300);
	/* PL 222 -> 233 PLN/hl (the +15 % bill was vetoed), intermediate 445 -> 467 */
	cr_assert_eq(rate_on(rd, "PL", RD_CAT_STILL, 1300, 20251231, &st), 2220000);
	cr_assert_eq(rate_on(rd, "PL", RD_CAT_STILL, 1300, 20260101, &st), 2330000);
	cr_assert_eq(rate_on(rd, "PL", RD_CAT_FORTIFIED, 1950, 20260101, &st), 4670000);
	/* RO 10 -> 11 RON/hl still, 76.19 -> 83.81 sparkling */
	cr_assert_eq(rate_on(rd, "RO", RD_CAT_STILL, 1300, 20251231, &st), 100000);
	cr_assert_eq(rate_on(rd, "RO", RD_CAT_STILL, 1300, 20260101, &st), 110000);
	cr_assert_eq(rate_on(rd, "RO", RD_CAT_SPARKLING, 1200, 20260101, &st), 838100);
	/* LV 134 -> 148 EUR/100 l on 1 March 2026; intermediate > 15 % 222 -> 244 */
	cr_assert_eq(rate_on(rd, "LV", RD_CAT_STILL, 1300, 20260228, &st), 1340000);
	cr_assert_eq(rate_on(rd, "LV", RD_CAT_STILL, 1300, 20260301, &st), 1480000);
	cr_assert_eq(rate_on(rd, "LV", RD_CAT_FORTIFIED, 1950, 20260301, &st), 2440000);
	/* HU sparkling 18 840 HUF/hl in 2025; the 2026 (+4.3 %) figure is not published: refused */
	cr_assert_eq(rate_on(rd, "HU", RD_CAT_SPARKLING, 1200, 20251231, &st), 188400000);
	rate_on(rd, "HU", RD_CAT_SPARKLING, 1200, 20260101, &st);
	cr_assert_eq(st, RD_NOT_PUBLISHED);
	/* LT 2024 figures end 2024-12-31; 2025/2026 EUR figures not published */
	cr_assert_eq(rate_on(rd, "LT", RD_CAT_STILL, 1300, 20241231, &st), 2190000);
	rate_on(rd, "LT", RD_CAT_STILL, 1300, 20260101, &st);
	cr_assert_eq(st, RD_NOT_PUBLISHED);
	/* FI 456 c/l through 2025; the 2026 table (HE 95/2025) is not published: refused */
	cr_assert_eq(rate_on(rd, "FI", RD_CAT_STILL, 1300, 20251231, &st), 4560000);
	rate_on(rd, "FI", RD_CAT_STILL, 1300, 20260101, &st);
	cr_assert_eq(st, RD_NOT_PUBLISHED);
	refdata_free(rd);
}

/* ---- the dated layout: strict at its edges -------------------------------- */

#define VAT_H2 "country\tregion\tproduct\trate_percent\tsource\tas_of\teffective_from\teffective_to\n"
#define EX_H2 "country\tcategory\tabv_min\tabv_max\tbasis\trate\tcurrency\tsource\tas_of\teffective_from\teffective_to\n"

static int parse1(enum rd_file f, const char *text, char *err, size_t n)
{
	struct refdata *rd = refdata_new();
	int rc = refdata_parse(rd, f, text, strlen(text), err, n);
	refdata_free(rd);
	return rc;
}

WM_TEST(tax_2026, dated_rows_refuse_overlaps_and_bad_dates)
{
	char err[256];
	/* adjacent ranges (to = day before from) load */
	cr_assert_eq(parse1(RD_F_EXCISE,
			    EX_H2 "GB\tstill\t8.50\t22.00\tper_l_pure_alcohol\t29.54\tGBP\ts\t2025\t2025-02-01\t2026-01-31\n"
				  "GB\tstill\t8.50\t22.00\tper_l_pure_alcohol\t30.62\tGBP\ts\t2026\t2026-02-01\t-\n",
			    err, sizeof(err)),
		     0, "%s", err);
	/* one common day (2026-02-01) is an overlap */
	cr_assert_eq(parse1(RD_F_EXCISE,
			    EX_H2 "GB\tstill\t8.50\t22.00\tper_l_pure_alcohol\t29.54\tGBP\ts\t2025\t2025-02-01\t2026-02-01\n"
				  "GB\tstill\t8.50\t22.00\tper_l_pure_alcohol\t30.62\tGBP\ts\t2026\t2026-02-01\t-\n",
			    err, sizeof(err)),
		     -1);
	cr_assert(strstr(err, "excise.tsv:3: ABV band overlaps"), "%s", err);
	/* an open start overlaps everything before the other's end */
	cr_assert_eq(parse1(RD_F_EXCISE,
			    EX_H2 "FR\tstill\t0.00\t22.00\tper_hl_product\t4.19\tEUR\ts\t2026\t2026-01-01\t-\n"
				  "FR\tstill\t0.00\t22.00\tper_hl_product\t4.12\tEUR\ts\t2025\t-\t2026-01-01\n",
			    err, sizeof(err)),
		     -1);
	/* from after to; a non-date; 30 February */
	cr_assert_eq(parse1(RD_F_EXCISE, EX_H2 "FR\tstill\t0.00\t22.00\tper_hl_product\t4.19\tEUR\ts\t2026\t2026-01-02\t2026-01-01\n",
			    err, sizeof(err)),
		     -1);
	cr_assert(strstr(err, "effective_from is after effective_to"), "%s", err);
	cr_assert_eq(parse1(RD_F_EXCISE, EX_H2 "FR\tstill\t0.00\t22.00\tper_hl_product\t4.19\tEUR\ts\t2026\t2026\t-\n", err,
			    sizeof(err)),
		     -1);
	cr_assert(strstr(err, "excise.tsv:2: effective_from/effective_to"), "%s", err);
	cr_assert_eq(parse1(RD_F_EXCISE, EX_H2 "FR\tstill\t0.00\t22.00\tper_hl_product\t4.19\tEUR\ts\t2026\t2026-02-30\t-\n",
			    err, sizeof(err)),
		     -1);
	/* from == to: a one-day row loads */
	cr_assert_eq(parse1(RD_F_EXCISE, EX_H2 "FR\tstill\t0.00\t22.00\tper_hl_product\t4.19\tEUR\ts\t2026\t2026-01-01\t2026-01-01\n",
			    err, sizeof(err)),
		     0, "%s", err);
	/* VAT: region and product; an unknown region or product is refused */
	cr_assert_eq(parse1(RD_F_VAT,
			    VAT_H2 "PT\t-\tdefault\t23\ts\t2025\t-\t-\nPT\t-\tstill\t13\ts\t2025\t-\t-\n"
				   "PT\tPT-30\tstill\t12\ts\t2025\t-\t-\nPT\tPT-20\tstill\t9\ts\t2025\t-\t-\n",
			    err, sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(parse1(RD_F_VAT, VAT_H2 "PT\tPT-99\tstill\t12\ts\t2025\t-\t-\n", err, sizeof(err)), -1);
	cr_assert(strstr(err, "unknown region"), "%s", err);
	cr_assert_eq(parse1(RD_F_VAT, VAT_H2 "FR\tPT-30\tstill\t12\ts\t2025\t-\t-\n", err, sizeof(err)), -1);
	cr_assert_eq(parse1(RD_F_VAT, VAT_H2 "PT\t-\trose\t12\ts\t2025\t-\t-\n", err, sizeof(err)), -1);
	cr_assert(strstr(err, "product is not"), "%s", err);
	cr_assert_eq(parse1(RD_F_VAT, VAT_H2 "PT\t-\tstill\t13\ts\t2025\t-\t-\nPT\t-\tstill\t12\ts\t2025\t2025-06-01\t-\n",
			    err, sizeof(err)),
		     -1);
	cr_assert(strstr(err, "vat.tsv:3: duplicate country"), "%s", err);
	/* the dated layout has exactly 8 / 11 columns */
	cr_assert_eq(parse1(RD_F_VAT, VAT_H2 "PT\t-\tstill\t13\ts\t2025\t-\n", err, sizeof(err)), -1);
	cr_assert(strstr(err, "wrong number of columns"), "%s", err);
}

/* ---- VAT by product and region ------------------------------------------- */

/*
 * Portugal: still wine ("vinhos comuns", CIVA Lista II 1.10) 13 % on the
 * mainland, 12 % in Madeira (PT-30, postal codes 9000-9399), 9 % in the
 * Azores (PT-20, 9500-9999); sparkling 23 % (mainland), Madeira's and the
 * Azores' standard rates 22 / 16 % for products without their own row.
 * 6 x 10.00 EUR DAP, still wine, no duty (PT 0):
 *   mainland V = 13 % x 60.00 = 7.80;  PT-30: 12 % = 7.20;  PT-20: 9 % = 5.40
 */
WM_TEST(tax_2026, portugal_vat_by_product_and_region)
{
	struct refdata *rd = load_repo();
	struct price_line_in l = {.p_b2b = 1000, .currency = "EUR", .qty = 6, .box_units = 6, .category = RD_CAT_STILL,
				  .incoterm = PRICE_INCO_DAP, .abv = 1300, .volume_ul = 750000, .origin = "FR"};
	struct price_order_in in = {.destination = "PT", .date = 20261125, .n_lines = 1, .lines = &l};
	struct price_quote q;
	cr_assert_eq(price_quote(rd, &in, &q), PRICE_OK);
	cr_assert_eq(q.lines[0].comp[PC_V_VAT], 780);
	snprintf(in.region, sizeof(in.region), "%s", refdata_region_of_postal("PT", "9000-018"));
	cr_assert_str_eq(in.region, "PT-30");
	cr_assert_eq(price_quote(rd, &in, &q), PRICE_OK);
	cr_assert_eq(q.lines[0].comp[PC_V_VAT], 720);
	snprintf(in.region, sizeof(in.region), "%s", refdata_region_of_postal("PT", "9500-150"));
	cr_assert_str_eq(in.region, "PT-20");
	cr_assert_eq(price_quote(rd, &in, &q), PRICE_OK);
	cr_assert_eq(q.lines[0].comp[PC_V_VAT], 540);
	/* sparkling 12 %: 23 % mainland (13.80), Azores standard 16 % (9.60) */
	l.category = RD_CAT_SPARKLING;
	l.abv = 1200;
	cr_assert_eq(price_quote(rd, &in, &q), PRICE_OK);
	cr_assert_eq(q.lines[0].comp[PC_V_VAT], 960);
	in.region[0] = 0;
	cr_assert_eq(price_quote(rd, &in, &q), PRICE_OK);
	cr_assert_eq(q.lines[0].comp[PC_V_VAT], 1380);
	/* postal-code edges: 9399 is Madeira, 9400 and 8999 the mainland, 9499 mainland, 9999 Azores */
	cr_assert_str_eq(refdata_region_of_postal("PT", "9399-999"), "PT-30");
	cr_assert_str_eq(refdata_region_of_postal("PT", "9400-001"), "");
	cr_assert_str_eq(refdata_region_of_postal("PT", "8999-999"), "");
	cr_assert_str_eq(refdata_region_of_postal("PT", "9999-999"), "PT-20");
	cr_assert_null(refdata_region_of_postal("PT", "A900"));
	cr_assert_null(refdata_region_of_postal("PT", "90"));
	/* Spain's Canaries (outside EU VAT, IGIC not in the references): refused */
	cr_assert_str_eq(refdata_region_of_postal("ES", "35001"), "ES-CN");
	cr_assert_str_eq(refdata_region_of_postal("ES", "38001"), "ES-CN");
	cr_assert_str_eq(refdata_region_of_postal("ES", "28001"), "");
	cr_assert_str_eq(refdata_region_of_postal("DE", "78266"), "DE-BUS");
	cr_assert_str_eq(refdata_region_of_postal("DE", "78267"), "");
	cr_assert_str_eq(refdata_region_of_postal("FR", "whatever"), "");
	struct price_order_in es = {.destination = "ES", .region = "ES-CN", .date = 20261125, .n_lines = 1, .lines = &l};
	cr_assert_eq(price_quote(rd, &es, &q), PRICE_E_NO_VAT);
	cr_assert_str_eq(price_err_codes[PRICE_E_NO_VAT], "vat_rate_not_found");
	refdata_free(rd);
}

/* ---- every destination x category (issue 23 item 5) ---------------------- */

/*
 * One DAP line (no freight) of 6 x 0.75 l = 4.5 l = 0.045 hl per category:
 * still 13 %, sparkling 12 %, fortified 19.5 % (0.8775 l of pure alcohol),
 * priced on 2026-11-25.  `e` is the excise in destination minor units,
 * worked out from the cited row of data/excise.tsv; `code` is the refusal
 * when no citable figure is in force.  Per-hl rows: rate x 0.045, half-up.
 */
static const struct {
	const char *cc;
	int cat;
	int64_t e;
	const char *code;
	int64_t vat_e4;
} table[] = {
#define S RD_CAT_STILL
#define SP RD_CAT_SPARKLING
#define F RD_CAT_FORTIFIED
	{"AT", S, 0, NULL, 200000}, {"AT", SP, 0, NULL, 200000},
	{"AT", F, 360, NULL, 200000},                          /* 80 x 0.045 = 3.60 (bmf.gv.at) */
	{"BE", S, 337, NULL, 210000},                          /* 74.9086 x 0.045 = 3.370887 -> 3.37 */
	{"BE", SP, 1153, NULL, 210000},                        /* 256.3223 x 0.045 = 11.5345 -> 11.53 */
	{"BE", F, 0, "excise_rate_not_found", 0},              /* IP rate NOT FOUND */
	{"BG", S, 0, NULL, 200000}, {"BG", SP, 0, NULL, 200000},
	{"BG", F, 0, "excise_rate_not_found", 0},              /* only the 2009-2011 figure */
	{"CY", S, 0, NULL, 190000}, {"CY", SP, 0, NULL, 190000},
	{"CY", F, 203, NULL, 190000},                          /* 45 x 0.045 = 2.025 -> 2.03 (L.91(I)/2004) */
	{"CZ", S, 0, NULL, 210000},
	{"CZ", SP, 10530, NULL, 210000},                       /* 2340 CZK x 0.045 = 105.30 CZK */
	{"CZ", F, 10530, NULL, 210000},                        /* meziprodukty 2340 CZK/hl */
	{"DE", S, 0, NULL, 190000},
	{"DE", SP, 612, NULL, 190000},                         /* 136 x 0.045 = 6.12 */
	{"DE", F, 689, NULL, 190000},                          /* > 15 %: 153 x 0.045 = 6.885 -> 6.89 */
	{"DK", S, 5067, NULL, 250000},                         /* 11.26 DKK/l x 4.5 l = 50.67 DKK */
	{"DK", SP, 6575, NULL, 250000},                        /* (11.26 + 3.35) x 4.5 = 65.745 -> 65.75 */
	{"DK", F, 6786, NULL, 250000},                         /* hedvin > 15 %: 15.08 x 4.5 = 67.86 */
	{"EE", S, 0, "excise_rate_not_found", 0},              /* 2025/2026 figures NOT FOUND */
	{"EE", SP, 0, "excise_rate_not_found", 0},
	{"EE", F, 0, "excise_rate_not_found", 0},
	{"ES", S, 0, NULL, 210000}, {"ES", SP, 0, NULL, 210000},
	{"ES", F, 289, NULL, 210000},                          /* > 15 %: 64.13 x 0.045 = 2.88585 -> 2.89 */
	{"FI", S, 0, "excise_rate_not_found", 0},              /* 2026 table NOT FOUND */
	{"FI", SP, 0, "excise_rate_not_found", 0},
	{"FI", F, 0, "excise_rate_not_found", 0},
	{"FR", S, 19, NULL, 200000},                           /* 4.19 x 0.045 = 0.18855 -> 0.19 */
	{"FR", SP, 47, NULL, 200000},                          /* 10.38 x 0.045 = 0.4671 -> 0.47 */
	{"FR", F, 943, NULL, 200000},                          /* 209.53 x 0.045 = 9.42885 -> 9.43 */
	{"GR", S, 0, NULL, 240000}, {"GR", SP, 0, NULL, 240000},
	{"GR", F, 230, NULL, 240000},                          /* liqueur wine 51 x 0.045 = 2.295 -> 2.30 */
	{"HR", S, 0, NULL, 250000}, {"HR", SP, 0, NULL, 250000},
	{"HR", F, 478, NULL, 250000},                          /* >= 15 %: 106.18 x 0.045 = 4.7781 -> 4.78 */
	{"HU", S, 0, NULL, 270000},
	{"HU", SP, 0, "excise_rate_not_found", 0},             /* 2026 HUF figure NOT FOUND */
	{"HU", F, 0, "excise_rate_not_found", 0},
	{"IE", S, 1912, NULL, 230000},                         /* 424.84 x 0.045 = 19.1178 -> 19.12 */
	{"IE", SP, 3824, NULL, 230000},                        /* 849.68 x 0.045 = 38.2356 -> 38.24 */
	{"IE", F, 2774, NULL, 230000},                         /* > 15 %: 616.45 x 0.045 = 27.74025 -> 27.74 */
	{"IT", S, 0, NULL, 220000}, {"IT", SP, 0, NULL, 220000},
	{"IT", F, 399, NULL, 220000},                          /* 88.67 x 0.045 = 3.99015 -> 3.99 */
	{"LT", S, 0, "excise_rate_not_found", 0},              /* 2025/2026 EUR figures NOT FOUND */
	{"LT", SP, 0, "excise_rate_not_found", 0},
	{"LT", F, 0, "excise_rate_not_found", 0},
	{"LU", S, 0, NULL, 170000}, {"LU", SP, 0, NULL, 170000},
	{"LU", F, 0, "excise_rate_not_found", 0},
	{"LV", S, 666, NULL, 210000},                          /* 148 x 0.045 = 6.66 (from 2026-03-01) */
	{"LV", SP, 666, NULL, 210000},
	{"LV", F, 1098, NULL, 210000},                         /* 15-22 %: 244 x 0.045 = 10.98 */
	{"MT", S, 90, NULL, 180000},                           /* 20 x 0.045 = 0.90 (Budget 2015) */
	{"MT", SP, 90, NULL, 180000},
	{"MT", F, 0, "excise_rate_not_found", 0},
	{"NL", S, 431, NULL, 210000},                          /* > 8.5 %: 95.69 x 0.045 = 4.30605 -> 4.31 */
	{"NL", SP, 431, NULL, 210000},
	{"NL", F, 728, NULL, 210000},                          /* > 15 %: 161.80 x 0.045 = 7.281 -> 7.28 */
	{"PL", S, 1049, NULL, 230000},                         /* 233 PLN x 0.045 = 10.485 -> 10.49 PLN */
	{"PL", SP, 1049, NULL, 230000},
	{"PL", F, 2102, NULL, 230000},                         /* 467 x 0.045 = 21.015 -> 21.02 PLN */
	{"PT", S, 0, NULL, 130000},                            /* VAT: still wine 13 % (mainland) */
	{"PT", SP, 0, NULL, 230000},                           /* sparkling 23 % */
	{"PT", F, 396, NULL, 230000},                          /* 87.92 x 0.045 = 3.9564 -> 3.96; VAT default */
	{"RO", S, 50, NULL, 210000},                           /* 11 RON x 0.045 = 0.495 -> 0.50 RON */
	{"RO", SP, 377, NULL, 210000},                         /* 83.81 x 0.045 = 3.77145 -> 3.77 RON */
	{"RO", F, 0, "excise_rate_not_found", 0},              /* 2026 IP rate NOT FOUND */
	{"SE", S, 13311, NULL, 250000},                        /* 29.58 SEK/l x 4.5 = 133.11 SEK */
	{"SE", SP, 13311, NULL, 250000},
	{"SE", F, 27855, NULL, 250000},                        /* 15-22 %: 61.90 x 4.5 = 278.55 SEK */
	{"SI", S, 0, NULL, 220000}, {"SI", SP, 0, NULL, 220000},
	{"SI", F, 636, NULL, 220000},                          /* 141.24 x 0.045 = 6.3558 -> 6.36 */
	{"SK", S, 0, NULL, 230000},
	{"SK", SP, 358, NULL, 230000},                         /* > 8.5 %: 79.65 x 0.045 = 3.58425 -> 3.58 */
	{"SK", F, 0, "excise_rate_not_found", 0},              /* current IP rate NOT FOUND */
	{"GB", S, 1791, NULL, 200000},                         /* 30.62 x 0.585 lpa = 17.9127 -> 17.91 GBP */
	{"GB", SP, 1653, NULL, 200000},                        /* 30.62 x 0.54 = 16.5348 -> 16.53 */
	{"GB", F, 2687, NULL, 200000},                         /* 30.62 x 0.8775 = 26.86905 -> 26.87 */
	{"NO", S, 30947, NULL, 250000},                        /* 5.29 NOK x 4.5 l x 13 = 309.465 -> 309.47 */
	{"NO", SP, 28566, NULL, 250000},                       /* 5.29 x 4.5 x 12 = 285.66 */
	{"NO", F, 46420, NULL, 250000},                        /* 5.29 x 4.5 x 19.5 = 464.1975 -> 464.20 */
	{"CH", S, 0, NULL, 81000}, {"CH", SP, 0, NULL, 81000},
	{"CH", F, 1272, NULL, 81000},                          /* 14.50 CHF x 0.8775 lpa = 12.72375 -> 12.72 */
#undef S
#undef SP
#undef F
};

WM_TEST(tax_2026, every_destination_and_category)
{
	struct refdata *rd = load_repo();
	static const uint16_t abv[RD_CAT_COUNT_] = {1300, 1200, 1950};
	size_t n = sizeof(table) / sizeof(table[0]);
	cr_assert_eq(n, 90, "30 destinations x 3 categories");
	int priced[RD_CAT_COUNT_] = {0};
	for (size_t i = 0; i < n; i++) {
		struct price_line_in l = {.p_b2b = 1000, .currency = "EUR", .qty = 6, .box_units = 6,
					  .category = (uint8_t)table[i].cat, .incoterm = PRICE_INCO_DAP,
					  .abv = abv[table[i].cat], .volume_ul = 750000, .origin = "FR"};
		struct price_order_in in = {.date = 20261125, .n_lines = 1, .lines = &l};
		memcpy(in.destination, table[i].cc, 3);
		struct price_quote q;
		enum price_err e = price_quote(rd, &in, &q);
		if (table[i].code) {
			cr_assert_str_eq(price_err_codes[e], table[i].code, "%s %s", table[i].cc,
					 rd_category_names[table[i].cat]);
			continue;
		}
		cr_assert_eq(e, PRICE_OK, "%s %s: %s", table[i].cc, rd_category_names[table[i].cat], price_err_codes[e]);
		cr_assert_eq(q.lines[0].comp[PC_E_EXCISE], table[i].e, "%s %s: excise %lld want %lld", table[i].cc,
			     rd_category_names[table[i].cat], (long long)q.lines[0].comp[PC_E_EXCISE],
			     (long long)table[i].e);
		cr_assert_eq(q.lines[0].comp[PC_C_FREIGHT], 0, "DAP carries no freight");
		cr_assert_eq(q.lines[0].vat->rate_e4, table[i].vat_e4, "%s %s VAT", table[i].cc,
			     rd_category_names[table[i].cat]);
		/* intermediate products never priced from a still-wine row */
		if (table[i].cat == RD_CAT_FORTIFIED)
			cr_assert_eq(q.lines[0].excise->category, RD_CAT_FORTIFIED);
		priced[table[i].cat]++;
	}
	cr_assert_eq(priced[RD_CAT_STILL], 27);
	cr_assert_eq(priced[RD_CAT_SPARKLING], 26);
	cr_assert_eq(priced[RD_CAT_FORTIFIED], 20);
	refdata_free(rd);
}

/* An ABV outside every band of the destination: SE still wine above 18 %
 * (wine bands end at 18.00; 22 % is not wine there) and at 18.00 itself. */
WM_TEST(tax_2026, abv_outside_every_band_is_excise_band_not_found)
{
	struct refdata *rd = load_repo();
	struct price_line_in l = {.p_b2b = 1000, .currency = "EUR", .qty = 6, .box_units = 6, .category = RD_CAT_STILL,
				  .incoterm = PRICE_INCO_DAP, .abv = 1800, .volume_ul = 750000, .origin = "FR"};
	struct price_order_in in = {.destination = "SE", .date = 20261125, .n_lines = 1, .lines = &l};
	struct price_quote q;
	cr_assert_eq(price_quote(rd, &in, &q), PRICE_OK, "18.00 is in the 15.01-18.00 band");
	l.abv = 1801;
	cr_assert_eq(price_quote(rd, &in, &q), PRICE_E_NO_EXCISE_BAND);
	cr_assert_str_eq(price_err_codes[PRICE_E_NO_EXCISE_BAND], "excise_band_not_found");
	refdata_free(rd);
}

/* ---- freight covers every route (issue 23 item 6) ------------------------- */

static const char *const countries[] = {"AT", "BE", "BG", "CY", "CZ", "DE", "DK", "EE", "ES", "FI",
					"FR", "GR", "HR", "HU", "IE", "IT", "LT", "LU", "LV", "MT",
					"NL", "PL", "PT", "RO", "SE", "SI", "SK", "GB", "NO", "CH"};

/*
 * Every origin x destination x box size among the 30 countries has a
 * tariff (a lane row or the zone row); a lane row wins over its zone row:
 *   FR -> DE 12: lane row 72.00;  DE -> FR 6: zone Z1 -> Z1 45.00
 *   PT -> PL 6: Z2 -> Z4 69.00;   FI -> PT 12: Z3 -> Z2 130.00
 * A country outside the zones (US) has none: freight_lane_not_found, while
 * a DAP leg from it needs no tariff.
 */
WM_TEST(tax_2026, freight_covers_every_pair)
{
	struct refdata *rd = load_repo();
	size_t n = sizeof(countries) / sizeof(countries[0]);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			for (unsigned b = 6; b <= 12; b += 6)
				cr_assert_not_null(refdata_freight(rd, countries[i], countries[j], b), "%s -> %s box %u",
						   countries[i], countries[j], b);
	cr_assert_eq(refdata_freight(rd, "FR", "DE", 12)->price_cents, 7200);
	cr_assert_str_eq(refdata_freight(rd, "FR", "DE", 12)->origin, "FR");
	cr_assert_eq(refdata_freight(rd, "DE", "FR", 6)->price_cents, 4500);
	cr_assert_eq(refdata_freight(rd, "PT", "PL", 6)->price_cents, 6900);
	cr_assert_eq(refdata_freight(rd, "FI", "PT", 12)->price_cents, 13000);
	cr_assert_null(refdata_freight(rd, "US", "DE", 6));
	struct price_line_in l = {.p_b2b = 1000, .currency = "EUR", .qty = 7, .box_units = 6, .category = RD_CAT_STILL,
				  .incoterm = PRICE_INCO_EXW, .abv = 1300, .volume_ul = 750000, .origin = "PT"};
	struct price_order_in in = {.destination = "PL", .date = 20261125, .n_lines = 1, .lines = &l};
	struct price_quote q;
	cr_assert_eq(price_quote(rd, &in, &q), PRICE_OK);
	/* 7 units in boxes of 6: 2 boxes x 69.00 EUR x 4.25 PLN/EUR (sample) = 586.50 PLN */
	cr_assert_eq(q.lines[0].boxes, 2);
	cr_assert_eq(q.lines[0].comp[PC_C_FREIGHT], 58650);
	memcpy(l.origin, "US", 3);
	cr_assert_eq(price_quote(rd, &in, &q), PRICE_E_NO_FREIGHT);
	l.incoterm = PRICE_INCO_DAP;
	cr_assert_eq(price_quote(rd, &in, &q), PRICE_OK);
	cr_assert_eq(q.lines[0].comp[PC_C_FREIGHT], 0);
	refdata_free(rd);
}

/* The freight table's zone rows are strict: zone to zone only, Z1-Z9. */
WM_TEST(tax_2026, freight_zone_rows_are_strict)
{
	char err[256];
#define FR_H "origin\tdestination\tbox_units\tprice_eur\tsource\tas_of\n"
	cr_assert_eq(parse1(RD_F_FREIGHT, FR_H "Z1\tZ9\t6\t10.00\ts\t2026\n", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(parse1(RD_F_FREIGHT, FR_H "Z1\tDE\t6\t10.00\ts\t2026\n", err, sizeof(err)), -1);
	cr_assert(strstr(err, "zone to zone"), "%s", err);
	cr_assert_eq(parse1(RD_F_FREIGHT, FR_H "Z0\tZ1\t6\t10.00\ts\t2026\n", err, sizeof(err)), -1);
	cr_assert_eq(parse1(RD_F_FREIGHT, FR_H "Z10\tZ1\t6\t10.00\ts\t2026\n", err, sizeof(err)), -1);
	cr_assert_eq(parse1(RD_F_FREIGHT, FR_H "Z1\tZ2\t6\t10.00\ts\t2026\nZ1\tZ2\t6\t11.00\ts\t2026\n", err,
			    sizeof(err)),
		     -1);
	cr_assert(strstr(err, "duplicate lane"), "%s", err);
#undef FR_H
}

/* ---- over HTTP: the fake clock, an order keeps its rate, refusals -------- */

static char date_file[256];

static void set_day(const char *ymd)
{
	FILE *fp = fopen(date_file, "w");
	cr_assert_not_null(fp);
	fprintf(fp, "%s\n", ymd);
	fclose(fp);
}

static json_t *post(int port, const char *path, const char *key, const char *body, int want)
{
	char h[256];
	snprintf(h, sizeof(h), "Authorization: Bearer %s\r\n", key);
	struct http_resp r;
	cr_assert_eq(http_do(port, "POST", path, h, body, &r), 0);
	cr_assert_eq(r.status, want, "POST %s: %d: %s", path, r.status, r.body);
	json_t *j = json_loadb(r.body, r.body_len, 0, NULL);
	cr_assert_not_null(j, "%s", r.body);
	http_resp_free(&r);
	return j;
}

static json_t *excise_of_line(json_t *line)
{
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(line, "tax_breakdown"), i, t) if (!strcmp(tc_jstr(t, "tax"), "excise")) return t;
	cr_assert_fail("no excise entry");
	return NULL;
}

/*
 * The UK change of 1 Feb 2026 through the API, on a test clock
 * (WM_TEST_DATE_FILE, test builds only).  12 x 0.75 l at 13 % = 1.17 l of
 * pure alcohol, FR estate EXW to GB:
 *   31 Jan 2026: 29.54 x 1.17 = 34.5618 -> 34.56 GBP
 *    1 Feb 2026: 30.62 x 1.17 = 35.8254 -> 35.83 GBP
 * An order captured on 31 Jan keeps 34.56 when read after the change.
 */
WM_TEST(tax_2026, rate_applies_from_its_day_and_an_order_keeps_its_rate)
{
	char tmpl[] = "/tmp/wm-taxclock-XXXXXX";
	cr_assert_not_null(mkdtemp(tmpl));
	snprintf(date_file, sizeof(date_file), "%s/today", tmpl);
	set_day("2026-01-31");
	setenv("WM_TEST_DATE_FILE", date_file, 1);
	struct oworld x;
	ow_start(&x, NULL, 24, 24);
	char body[2048], quote[512];
	snprintf(body, sizeof(body),
		 "{\"destination_country\":\"GB\",\"consumer\":{\"name\":\"Ann\",\"email\":\"ann@example.co.uk\","
		 "\"address\":{\"line1\":\"1 High St\",\"city\":\"London\",\"postal_code\":\"SW1A 1AA\"}},"
		 "\"lines\":[{\"sku\":\"%s\",\"qty\":12,\"box_units\":12}]}",
		 x.w1);
	snprintf(quote, sizeof(quote), "{\"destination_country\":\"GB\",\"lines\":[{\"sku\":\"%s\",\"qty\":12,\"box_units\":12}]}",
		 x.w1);
	json_t *q = post(x.port, "/v1/orders/quote-calculate", x.ksel, quote, 200);
	json_t *ex = excise_of_line(json_array_get(json_object_get(q, "lines"), 0));
	cr_assert_eq(ow_cents(ex, "amount"), 3456);
	cr_assert_eq(ow_cents(ex, "rate") , 2954);
	cr_assert_str_eq(tc_jstr(ex, "effective_to"), "2026-01-31");
	cr_assert_str_eq(tc_jstr(ex, "priced_on"), "2026-01-31");
	/* the same figures as the tax context: HS code, and the estate's stock sits in a bonded warehouse */
	cr_assert_str_eq(tc_jstr(ex, "hs_tariff_code"), "220421");
	cr_assert_str_eq(tc_jstr(ex, "origin_duty_status"), "EXCISE_SUSPENDED");
	json_decref(q);
	json_t *o = post(x.port, "/v1/orders", x.ksel, body, 201);
	char oid[64], path[128];
	snprintf(oid, sizeof(oid), "%s", tc_jstr(o, "id"));
	cr_assert_eq(ow_cents(excise_of_line(json_array_get(json_object_get(o, "lines"), 0)), "amount"), 3456);
	json_decref(o);

	set_day("2026-02-01"); /* the shard is not restarted: the new schedule was loaded already */
	q = post(x.port, "/v1/orders/quote-calculate", x.ksel, quote, 200);
	ex = excise_of_line(json_array_get(json_object_get(q, "lines"), 0));
	cr_assert_eq(ow_cents(ex, "amount"), 3583);
	cr_assert_eq(ow_cents(ex, "rate"), 3062);
	cr_assert_str_eq(tc_jstr(ex, "effective_from"), "2026-02-01");
	json_decref(q);
	snprintf(path, sizeof(path), "/v1/orders/%s", oid);
	o = ow_get(&x, path);
	ex = excise_of_line(json_array_get(json_object_get(o, "lines"), 0));
	cr_assert_eq(ow_cents(ex, "amount"), 3456, "the order keeps the rate it was priced with");
	cr_assert_eq(ow_cents(ex, "rate"), 2954);
	json_decref(o);
	wm_stop(&x.p);
	unlink(date_file);
	rmdir(tmpl);
}

/* A published 0.75 l wine of `category` at `abv` (JSON decimal); no estate. */
static void wine_at(int port, const char *title, const char *category, const char *abv, char *out)
{
	char body[1400], prd[64], path[160];
	snprintf(body, sizeof(body), "{\"name\":\"Domaine %s\"}", title);
	json_t *j = post(port, "/v1/producers", WM_TEST_KEY, body, 201);
	snprintf(prd, sizeof(prd), "%s", tc_jstr(j, "id"));
	json_decref(j);
	snprintf(body, sizeof(body),
		 "{\"title\":\"%s\",\"producer\":\"%s\",\"vintage\":2020,\"abv\":%s,\"volume_in_liters\":0.75,"
		 "\"colour\":\"red\",\"category\":\"%s\",\"country\":\"FR\",\"region\":\"Bourgogne\","
		 "\"bottler\":{\"name\":\"Domaine Test\",\"address\":\"21000 Dijon, France\"},\"lot_number\":\"L2020-1\","
		 "\"allergens\":[\"sulphites\"],\"ingredients\":\"grapes, preservative: sulphites\","
		 "\"energy_kj_per_100ml\":297,\"energy_kcal_per_100ml\":71%s}",
		 title, prd, abv, category, strstr(category, "sparkling") ? ",\"dosage_class\":\"brut\"" : "");
	j = post(port, "/v1/wines", WM_TEST_KEY, body, 201);
	snprintf(out, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/wines/%s/publish", out);
	json_decref(post(port, path, WM_TEST_KEY, "{}", 200));
}

/* One refused quote: 422 pricing_unavailable whose errors[0] names the
 * code on lines[0] and whose refusals[0] names the candidate. */
static void expect_refusal(int port, const char *key, const char *body, const char *code, const char *offer)
{
	json_t *j = post(port, "/v1/orders/quote-calculate", key, body, 422);
	cr_assert_str_eq(tc_jstr(j, "code"), "pricing_unavailable");
	json_t *e0 = json_array_get(json_object_get(j, "errors"), 0);
	cr_assert_str_eq(tc_jstr(e0, "field"), "lines[0]");
	cr_assert_str_eq(tc_jstr(e0, "rule"), code, "%s", body);
	json_t *r0 = json_array_get(json_object_get(j, "refusals"), 0);
	cr_assert_not_null(r0, "no refusals[]");
	cr_assert_str_eq(tc_jstr(r0, "code"), code);
	cr_assert_str_eq(tc_jstr(r0, "offer_id"), offer);
	cr_assert_eq(json_integer_value(json_object_get(r0, "line")), 0);
	cr_assert(tc_jstr(r0, "priced_on") != NULL);
	json_decref(j);
}

/*
 * Each refusal code of the price engine, reached once through the API:
 *   excise_rate_not_found   port (19.5 %) into BE: no citable BE intermediate rate
 *   excise_band_not_found   still wine at 20 % into SE: SE wine bands end at 18 %
 *   vat_rate_not_found      still wine into ES with a Canary Islands postal code
 *                           (35001: outside EU VAT, IGIC not in the references)
 *   freight_lane_not_found  an EXW offer shipped from the US (outside every zone)
 */
WM_TEST(tax_2026, every_refusal_code_names_its_cause)
{
	struct wm_proc p;
	wm_proc_init(&p);
	cr_assert_eq(wm_start(&p, NULL, NULL), 0, "logs in %s", p.dir);
	char sel[64], ksel[128], org[64], korg[128], us[64], kus[128];
	char port_w[64], strong[64], still[64], of1[64], of2[64], of3[64], of4[64], body[1024];
	tc_partner_live(p.port, "Shop", "DE", "[\"seller\"]", NULL, sel);
	tc_key_for(p.port, sel, ksel);
	tc_partner_live(p.port, "Quinta", "PT", "[\"originator\"]", "\"originator_type\":\"stock\"", org);
	tc_key_for(p.port, org, korg);
	tc_partner_live(p.port, "Importer", "US", "[\"originator\"]", "\"originator_type\":\"stock\"", us);
	tc_key_for(p.port, us, kus);
	wine_at(p.port, "Porto", "fortified", "19.5", port_w);
	wine_at(p.port, "Forte", "wine", "20", strong);
	wine_at(p.port, "Tinto", "wine", "13", still);
	const char *m = "\"seller_price\":10.00,\"qty_available\":60,\"incoterm\":\"EXW\",\"status\":\"active\","
			"\"network_shareable\":true";
	json_decref(tc_offer(p.port, korg, port_w, m, 201, of1));
	json_decref(tc_offer(p.port, korg, strong, m, 201, of2));
	json_decref(tc_offer(p.port, korg, still, m, 201, of3));
	char still_us[64];
	wine_at(p.port, "Napa", "wine", "13", still_us);
	json_decref(tc_offer(p.port, kus, still_us, m, 201, of4));

	snprintf(body, sizeof(body), "{\"destination_country\":\"BE\",\"lines\":[{\"sku\":\"%s\",\"qty\":6,\"box_units\":6}]}",
		 port_w);
	expect_refusal(p.port, ksel, body, "excise_rate_not_found", of1);
	snprintf(body, sizeof(body), "{\"destination_country\":\"SE\",\"lines\":[{\"sku\":\"%s\",\"qty\":6,\"box_units\":6}]}",
		 strong);
	expect_refusal(p.port, ksel, body, "excise_band_not_found", of2);
	snprintf(body, sizeof(body),
		 "{\"destination_country\":\"ES\",\"delivery_postal_code\":\"35001\","
		 "\"lines\":[{\"sku\":\"%s\",\"qty\":6,\"box_units\":6}]}",
		 still);
	expect_refusal(p.port, ksel, body, "vat_rate_not_found", of3);
	snprintf(body, sizeof(body), "{\"destination_country\":\"DE\",\"lines\":[{\"sku\":\"%s\",\"qty\":6,\"box_units\":6}]}",
		 still_us);
	expect_refusal(p.port, ksel, body, "freight_lane_not_found", of4);

	/* the same still wine to mainland Spain (Madrid) is priced, and the
	 * breakdown says which region chose the VAT */
	snprintf(body, sizeof(body),
		 "{\"destination_country\":\"ES\",\"delivery_postal_code\":\"28001\","
		 "\"lines\":[{\"sku\":\"%s\",\"qty\":6,\"box_units\":6}]}",
		 still);
	json_t *j = post(p.port, "/v1/orders/quote-calculate", ksel, body, 200);
	json_t *tb = json_object_get(json_array_get(json_object_get(j, "lines"), 0), "tax_breakdown");
	json_t *vat = json_array_get(tb, 1);
	cr_assert_str_eq(tc_jstr(vat, "tax"), "vat");
	cr_assert_str_eq(tc_jstr(vat, "region_basis"), "delivery_postal_code");
	json_decref(j);
	/* a postal code the PT region table cannot read is taken as the mainland, and the breakdown says so */
	snprintf(body, sizeof(body),
		 "{\"destination_country\":\"PT\",\"delivery_postal_code\":\"ABC\","
		 "\"lines\":[{\"sku\":\"%s\",\"qty\":6,\"box_units\":6}]}",
		 still);
	j = post(p.port, "/v1/orders/quote-calculate", ksel, body, 200);
	vat = json_array_get(json_object_get(json_array_get(json_object_get(j, "lines"), 0), "tax_breakdown"), 1);
	cr_assert_str_eq(tc_jstr(vat, "region_basis"), "mainland_postal_code_not_recognised");
	cr_assert_eq(json_number_value(json_object_get(vat, "rate_percent")), 13.0);
	json_decref(j);
	/* Madeira: 12 % */
	snprintf(body, sizeof(body),
		 "{\"destination_country\":\"PT\",\"delivery_postal_code\":\"9000-018\","
		 "\"lines\":[{\"sku\":\"%s\",\"qty\":6,\"box_units\":6}]}",
		 still);
	j = post(p.port, "/v1/orders/quote-calculate", ksel, body, 200);
	vat = json_array_get(json_object_get(json_array_get(json_object_get(j, "lines"), 0), "tax_breakdown"), 1);
	cr_assert_str_eq(tc_jstr(vat, "region"), "PT-30");
	cr_assert_eq(json_number_value(json_object_get(vat, "rate_percent")), 12.0);
	json_decref(j);
	/* delivery_postal_code must be a string of 1..16 bytes */
	snprintf(body, sizeof(body),
		 "{\"destination_country\":\"PT\",\"delivery_postal_code\":\"12345678901234567\","
		 "\"lines\":[{\"sku\":\"%s\",\"qty\":6,\"box_units\":6}]}",
		 still);
	j = post(p.port, "/v1/orders/quote-calculate", ksel, body, 422);
	cr_assert_str_eq(tc_jstr(json_array_get(json_object_get(j, "errors"), 0), "field"), "delivery_postal_code");
	json_decref(j);
	wm_proc_cleanup(&p);
}

/* ---- stale reference data (issue 23 item 3, last sentence) --------------- */

/* Age arithmetic across month and leap-year edges. */
WM_TEST(tax_2026, reference_data_age_in_days)
{
	struct refdata *rd = refdata_new();
	char err[256];
	const char *vat = VAT_H2 "DE\t-\tdefault\t19\ts\t2024\t2024-02-28\t-\n";
	cr_assert_eq(refdata_parse(rd, RD_F_VAT, vat, strlen(vat), err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(refdata_newest(rd), 20240228u);
	cr_assert_eq(refdata_age_days(rd, 20240228), 0);
	cr_assert_eq(refdata_age_days(rd, 20240301), 2); /* 2024 is a leap year */
	cr_assert_eq(refdata_age_days(rd, 20250228), 366);
	cr_assert_eq(refdata_age_days(rd, 20240227), -1);
	refdata_set_max_age_days(366);
	cr_assert_eq(refdata_is_stale(rd, 20250228), 0, "at the limit: not stale");
	cr_assert_eq(refdata_is_stale(rd, 20250301), 1, "one day past: stale");
	refdata_free(rd);
}

static long metric(int port, const char *name)
{
	struct http_resp r;
	cr_assert_eq(http_do(port, "GET", "/metrics", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200);
	char key[128];
	snprintf(key, sizeof(key), "\n%s ", name);
	const char *p = strstr(r.body, key);
	cr_assert_not_null(p, "%s missing from /metrics", name);
	long v = strtol(p + strlen(key), NULL, 10);
	http_resp_free(&r);
	return v;
}

/*
 * --ref-max-age-days=30: the repository data's newest figure is LV's
 * 2026-03-01 row, so on 2026-03-31 (30 days) the data is not stale and on
 * 2026-04-01 (31 days) it is: /metrics says so, and a shard started on
 * that day logs the warning.
 */
WM_TEST(tax_2026, stale_reference_data_warns_in_metrics_and_log)
{
	struct refdata *rd = load_repo();
	cr_assert_eq(refdata_newest(rd), 20260301u);
	refdata_free(rd);
	char tmpl[] = "/tmp/wm-taxstale-XXXXXX";
	cr_assert_not_null(mkdtemp(tmpl));
	snprintf(date_file, sizeof(date_file), "%s/today", tmpl);
	set_day("2026-03-31");
	setenv("WM_TEST_DATE_FILE", date_file, 1);
	struct wm_proc p;
	wm_proc_init(&p);
	const char *const args[] = {"--ref-max-age-days=30", NULL};
	cr_assert_eq(wm_start(&p, args, NULL), 0, "logs in %s", p.dir);
	cr_assert_eq(metric(p.port, "wm_reference_data_age_days"), 30);
	cr_assert_eq(metric(p.port, "wm_reference_data_max_age_days"), 30);
	cr_assert_eq(metric(p.port, "wm_reference_data_stale"), 0);
	set_day("2026-04-01");
	cr_assert_eq(metric(p.port, "wm_reference_data_age_days"), 31);
	cr_assert_eq(metric(p.port, "wm_reference_data_stale"), 1);
	wm_stop(&p);
	/* started on a stale day: the log says so */
	cr_assert_eq(wm_start(&p, args, NULL), 0, "logs in %s", p.dir);
	wm_stop(&p);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "grep -q 'reference data stale' %s/shard-*.log", p.dir);
	cr_assert_eq(system(cmd), 0, "no stale warning in %s", p.dir);
	wm_proc_cleanup(&p);
	unlink(date_file);
	rmdir(tmpl);
}

/* ---- the tax context of spec 2.6 (issue 23 item 7) ----------------------- */

static json_t *get_ctx(int port, const char *query, int want)
{
	char path[512];
	snprintf(path, sizeof(path), "/v1/tax-context?%s", query);
	struct http_resp r;
	cr_assert_eq(http_do(port, "GET", path, NULL, NULL, &r), 0);
	cr_assert_eq(r.status, want, "%s: %d %s", path, r.status, r.body);
	json_t *j = json_loadb(r.body, r.body_len, 0, NULL);
	cr_assert_not_null(j);
	http_resp_free(&r);
	return j;
}

static double num(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	cr_assert(json_is_number(v), "%s is not a number", k);
	return json_number_value(v);
}

/*
 * Still wine 13 % in 0.75 l from a bonded warehouse in FR to PT:
 *   hs_tariff_code 220421 (HS 2204.21: other wine, containers <= 2 l)
 *   duty_status EXCISE_SUSPENDED (a bonded warehouse ships under suspension)
 *   liters_pure_alcohol = 0.75 x 13 / 100 = 0.0975
 *   VAT: PT still wine 13 % (reduced; standard 23 %), category code W200
 */
WM_TEST(tax_2026, tax_context_has_the_spec_fields)
{
	struct wm_proc p;
	wm_proc_init(&p);
	cr_assert_eq(wm_start(&p, NULL, NULL), 0, "logs in %s", p.dir);
	json_t *j = get_ctx(p.port,
			    "origin=FR&destination=PT&category=still&abv=13&volume_liters=0.75&location_type=BONDED_WAREHOUSE"
			    "&incoterm=DAP",
			    200);
	cr_assert_str_eq(tc_jstr(j, "hs_tariff_code"), "220421");
	cr_assert_str_eq(tc_jstr(j, "country_of_origin"), "FR");
	cr_assert_str_eq(tc_jstr(j, "duty_status"), "EXCISE_SUSPENDED");
	cr_assert_str_eq(tc_jstr(j, "duty_status_basis"), "location_type");
	json_t *by = json_object_get(j, "duty_status_by_location_type");
	cr_assert_str_eq(tc_jstr(by, "DUTY_PAID_WAREHOUSE"), "DUTY_PAID");
	cr_assert_str_eq(tc_jstr(by, "IN_TRANSIT_CONTAINER"), "PRE_ARRIVAL");
	json_t *vm = json_object_get(j, "volumetric_metrics");
	cr_assert_eq(num(vm, "volume_liters"), 0.75);
	cr_assert_eq(num(vm, "abv_percentage"), 13.0);
	cr_assert_eq(num(vm, "liters_pure_alcohol"), 0.0975);
	cr_assert(json_is_null(json_object_get(vm, "net_weight_kg")));
	json_t *tc = json_object_get(j, "tax_classification");
	cr_assert_eq(num(tc, "vat_rate_percent"), 13.0);
	cr_assert_str_eq(tc_jstr(tc, "vat_rate_type"), "reduced");
	cr_assert_str_eq(tc_jstr(tc, "sales_tax_category_code"), "still");
	cr_assert_str_eq(tc_jstr(tc, "excise_tax_category"), "W200");
	json_t *cb = json_object_get(j, "cross_border_terms");
	cr_assert_str_eq(tc_jstr(cb, "incoterm"), "DAP");
	cr_assert_eq(num(cb, "import_duty_rate_percent"), 0.0);
	cr_assert(json_is_null(json_object_get(cb, "preferential_trade_agreement_code")));
	json_t *pl = json_object_get(j, "packaging_and_environmental_levies");
	cr_assert_not_null(pl);
	cr_assert(json_is_null(json_object_get(pl, "container_deposit_fee")));
	cr_assert_str_eq(tc_jstr(pl, "status"), "not_found", "PT has no levy row");
	cr_assert_eq(json_array_size(json_object_get(pl, "levies")), 0);
	/* only the still rows whose band holds 13 %, each saying whether it is in force */
	json_t *ex = json_object_get(j, "excise");
	cr_assert_eq(json_array_size(ex), 1);
	cr_assert_str_eq(tc_jstr(json_array_get(ex, 0), "category"), "still");
	cr_assert(json_is_true(json_object_get(json_array_get(ex, 0), "in_force")));
	json_decref(j);

	/* NO beverage-packaging taxes (levies.tsv): 2024 and 2025 rates, 2026 not
	 * published -- listed, never charged; BE packaging levy 9.86 EUR/hl */
	j = get_ctx(p.port, "origin=FR&destination=NO", 200);
	pl = json_object_get(j, "packaging_and_environmental_levies");
	cr_assert_str_eq(tc_jstr(pl, "status"), "listed");
	cr_assert(json_is_false(json_object_get(pl, "charged_in_quotes")));
	json_t *lv = json_object_get(pl, "levies");
	cr_assert_eq(json_array_size(lv), 6);
	int in_force = 0, glass_2025 = 0;
	size_t li;
	json_t *le;
	json_array_foreach(lv, li, le) {
		if (json_is_true(json_object_get(le, "in_force"))) {
			in_force++;
			cr_assert_str_eq(tc_jstr(le, "status"), "not_found", "2026 NO packaging rates are not published");
		}
		if (!strcmp(tc_jstr(le, "name"), "packaging_environmental_tax_glass_metal") &&
		    json_is_number(json_object_get(le, "rate")) && num(le, "rate") == 6.91)
			glass_2025++;
	}
	cr_assert_eq(in_force, 2);
	cr_assert_eq(glass_2025, 1);
	json_decref(j);
	j = get_ctx(p.port, "origin=FR&destination=BE", 200);
	lv = json_object_get(json_object_get(j, "packaging_and_environmental_levies"), "levies");
	cr_assert_eq(json_array_size(lv), 2);
	cr_assert_eq(num(json_array_get(lv, 0), "rate"), 9.86);
	cr_assert_str_eq(tc_jstr(json_array_get(lv, 0), "basis"), "per_hl_product");
	json_decref(j);

	/* sparkling in a magnum: 2204.10; still in 3 l: 2204.22; 12 l: 2204.29 */
	j = get_ctx(p.port, "origin=FR&destination=DE&category=sparkling&volume_liters=1.5", 200);
	cr_assert_str_eq(tc_jstr(j, "hs_tariff_code"), "220410");
	cr_assert_str_eq(tc_jstr(j, "duty_status"), "DUTY_PAID");
	cr_assert_str_eq(tc_jstr(j, "duty_status_basis"), "consumer_delivery");
	json_decref(j);
	j = get_ctx(p.port, "origin=FR&destination=DE&category=still&volume_liters=2", 200);
	cr_assert_str_eq(tc_jstr(j, "hs_tariff_code"), "220421");
	json_decref(j);
	j = get_ctx(p.port, "origin=FR&destination=DE&category=fortified&volume_liters=3", 200);
	cr_assert_str_eq(tc_jstr(j, "hs_tariff_code"), "220422");
	json_decref(j);
	j = get_ctx(p.port, "origin=FR&destination=DE&category=still&volume_liters=12", 200);
	cr_assert_str_eq(tc_jstr(j, "hs_tariff_code"), "220429");
	json_decref(j);
	/* bounds: abv 22 and volume 30 are accepted, one step past is a 400 */
	json_decref(get_ctx(p.port, "origin=FR&destination=DE&abv=22&volume_liters=30", 200));
	json_decref(get_ctx(p.port, "origin=FR&destination=DE&abv=22.01", 400));
	json_decref(get_ctx(p.port, "origin=FR&destination=DE&volume_liters=30.000001", 400));
	json_decref(get_ctx(p.port, "origin=FR&destination=DE&volume_liters=0", 400));
	json_decref(get_ctx(p.port, "origin=FR&destination=DE&abv=1e1", 400));
	json_decref(get_ctx(p.port, "origin=FR&destination=DE&category=rose", 400));
	json_decref(get_ctx(p.port, "origin=FR&destination=DE&location_type=CASTLE", 400));
	json_decref(get_ctx(p.port, "origin=FR&destination=DE&incoterm=DA", 400));
	wm_proc_cleanup(&p);
}

/* levies.tsv: optional, strict, and its currencies need an FX rate. */
WM_TEST(tax_2026, levies_table_is_optional_and_strict)
{
	char err[256];
#define LV_H "country\tname\tbasis\trate\tcurrency\tsource\tas_of\teffective_from\teffective_to\n"
	cr_assert_eq(parse1(RD_F_LEVIES, LV_H "NO\tpackaging_basic_tax\tper_unit\t1.42\tNOK\ts\t2025\t2025-01-01\t2025-12-31\n"
					   "NO\tpackaging_basic_tax\tper_unit\tNOT_FOUND\tNOK\ts\t2026\t2026-01-01\t-\n",
			    err, sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(parse1(RD_F_LEVIES, LV_H "NO\tBasic Tax\tper_unit\t1.42\tNOK\ts\t2025\t-\t-\n", err, sizeof(err)), -1);
	cr_assert(strstr(err, "levies.tsv:2: name"), "%s", err);
	cr_assert_eq(parse1(RD_F_LEVIES, LV_H "NO\tbasic\tper_box\t1.42\tNOK\ts\t2025\t-\t-\n", err, sizeof(err)), -1);
	cr_assert(strstr(err, "basis"), "%s", err);
	/* 48 bytes of name load, 49 do not */
	char body[1024];
	snprintf(body, sizeof(body), LV_H "NO\t%.48s\tper_unit\t1\tNOK\ts\t2025\t-\t-\n",
		 "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
	cr_assert_eq(parse1(RD_F_LEVIES, body, err, sizeof(err)), 0, "%s", err);
	snprintf(body, sizeof(body), LV_H "NO\t%.49s\tper_unit\t1\tNOK\ts\t2025\t-\t-\n",
		 "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
	cr_assert_eq(parse1(RD_F_LEVIES, body, err, sizeof(err)), -1);
	cr_assert_eq(parse1(RD_F_LEVIES, LV_H "NO\tb\tper_unit\t1\tNOK\ts\t2025\t-\t-\nNO\tb\tper_unit\t2\tNOK\ts\t2026\t2026-01-01\t-\n",
			    err, sizeof(err)),
		     -1);
	cr_assert(strstr(err, "levies.tsv:3: duplicate levy"), "%s", err);
	/* the original-layout header is not accepted for this new table */
	cr_assert_eq(parse1(RD_F_LEVIES, "country\tname\tbasis\trate\tcurrency\tsource\tas_of\n", err, sizeof(err)), -1);
	/* a directory without levies.tsv loads (no levies) */
	const char *src = getenv("WM_SRC_DIR");
	char tmpl[] = "/tmp/wm-taxlev-XXXXXX", cmd[1400];
	cr_assert_not_null(mkdtemp(tmpl));
	snprintf(cmd, sizeof(cmd), "cp %s/data/version.txt %s/data/vat.tsv %s/data/excise.tsv %s/data/freight.tsv %s/data/fx.tsv %s/",
		 src ? src : ".", src ? src : ".", src ? src : ".", src ? src : ".", src ? src : ".", tmpl);
	cr_assert_eq(system(cmd), 0);
	struct refdata *rd = NULL;
	cr_assert_eq(refdata_load_dir(tmpl, &rd, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(rd->n_levies, 0);
	refdata_free(rd);
	/* a levy in a currency without an FX rate refuses the version */
	snprintf(cmd, sizeof(cmd), "printf '" LV_H "XX\\tb\\tper_unit\\t1\\tAUD\\ts\\t2025\\t-\\t-\\n' > %s/levies.tsv", tmpl);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(refdata_load_dir(tmpl, &rd, err, sizeof(err)), -1);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpl);
	cr_assert_eq(system(cmd), 0);
#undef LV_H
}

/* A file of data/ as a malloc'd string. */
static char *data_text(const char *name)
{
	const char *src = getenv("WM_SRC_DIR");
	char path[600];
	snprintf(path, sizeof(path), "%s/data/%s", src ? src : ".", name);
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f, "%s", path);
	char *buf = calloc(1, 1 << 20);
	cr_assert_not_null(buf);
	size_t n = fread(buf, 1, (1 << 20) - 1, f);
	fclose(f);
	buf[n] = 0;
	return buf;
}

/* An operator upload with levies.tsv keeps it across a restart (WAL). */
WM_TEST(tax_2026, uploaded_levies_survive_restart)
{
	struct wm_proc p;
	wm_proc_init(&p);
	cr_assert_eq(wm_start(&p, NULL, NULL), 0, "logs in %s", p.dir);
	char *vat = data_text("vat.tsv"), *ex = data_text("excise.tsv"), *fr = data_text("freight.tsv"),
	     *fx = data_text("fx.tsv");
	const char *lev = "country\tname\tbasis\trate\tcurrency\tsource\tas_of\teffective_from\teffective_to\n"
			  "BE\tpackaging_levy_non_reusable\tper_hl_product\t9.86\tEUR\ts\t2025\t-\t-\n";
	json_t *b = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s}}", "version", "2026-11-25.lev", "effective_date",
			      "2026-11-25", "files", "vat.tsv", vat, "excise.tsv", ex, "freight.tsv", fr, "fx.tsv", fx,
			      "levies.tsv", lev);
	char *body = json_dumps(b, JSON_COMPACT);
	json_decref(b);
	free(vat);
	free(ex);
	free(fr);
	free(fx);
	json_t *j = post(p.port, "/v1/admin/reference-data", WM_TEST_KEY, body, 200);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(j, "rows"), "levies.tsv")), 1);
	json_decref(j);
	free(body);
	for (int round = 0; round < 2; round++) {
		j = get_ctx(p.port, "origin=FR&destination=BE", 200);
		json_t *lv = json_object_get(json_object_get(j, "packaging_and_environmental_levies"), "levies");
		cr_assert_eq(json_array_size(lv), 1, "round %d", round);
		cr_assert_str_eq(tc_jstr(json_object_get(j, "reference_data"), "version"), "2026-11-25.lev");
		json_decref(j);
		j = get_ctx(p.port, "origin=FR&destination=NO", 200);
		cr_assert_eq(json_array_size(json_object_get(json_object_get(j, "packaging_and_environmental_levies"), "levies")), 0);
		json_decref(j);
		wm_stop(&p);
		cr_assert_eq(wm_start(&p, NULL, NULL), 0, "logs in %s", p.dir);
	}
	wm_proc_cleanup(&p);
}

/* caps.tsv (spec 8 volume caps): the shipped table is the directive's
 * guide levels for every destination; rows are strict. */
WM_TEST(tax_2026, caps_table_is_strict_and_the_shipped_one_is_the_guide_levels)
{
	char err[256];
#define CP_H "country\tcategory\tlimit_liters\tperiod_days\tsource\tas_of\n"
	cr_assert_eq(parse1(RD_F_CAPS, CP_H "*\tstill\t90\t30\ts\t2008\nDE\tsparkling\t60.5\t365\ts\t2008\n", err,
			    sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(parse1(RD_F_CAPS, CP_H "*\tfortified\t20\t30\ts\t2008\n", err, sizeof(err)), -1);
	cr_assert(strstr(err, "caps.tsv:2: category"), "%s", err);
	cr_assert_eq(parse1(RD_F_CAPS, CP_H "*\tstill\t90\t0\ts\t2008\n", err, sizeof(err)), -1);
	cr_assert(strstr(err, "period_days"), "%s", err);
	cr_assert_eq(parse1(RD_F_CAPS, CP_H "*\tstill\t90\t367\ts\t2008\n", err, sizeof(err)), -1, "past 366 days");
	cr_assert_eq(parse1(RD_F_CAPS, CP_H "XX\tstill\t90\t30\ts\t2008\n", err, sizeof(err)), -1, "not a country");
	cr_assert_eq(parse1(RD_F_CAPS, CP_H "DE\tstill\t90\t30\ts\t2008\nDE\tstill\t80\t30\ts\t2009\n", err, sizeof(err)),
		     -1);
	cr_assert(strstr(err, "caps.tsv:3: duplicate cap"), "%s", err);
	cr_assert_eq(parse1(RD_F_CAPS, CP_H "DE\tstill\t-90\t30\ts\t2008\n", err, sizeof(err)), -1, "a sign");
	/* the repository's table */
	const char *src = getenv("WM_SRC_DIR");
	char dir[600];
	snprintf(dir, sizeof(dir), "%s/data", src ? src : ".");
	struct refdata *rd = NULL;
	cr_assert_eq(refdata_load_dir(dir, &rd, err, sizeof(err)), 0, "%s", err);
	const struct rd_cap *c = refdata_cap(rd, "DE", RD_CAT_STILL);
	cr_assert(c && c->limit_ul == 90000000 && c->period_days == 30, "still: 90 L in 30 days");
	c = refdata_cap(rd, "FR", RD_CAT_SPARKLING);
	cr_assert(c && c->limit_ul == 60000000, "sparkling: 60 L");
	cr_assert(strstr(c->m.source, "2008/118"), "%s", c->m.source);
	cr_assert_null(refdata_cap(rd, "DE", RD_CAT_FORTIFIED), "fortified wine is not capped");
	refdata_free(rd);
}
