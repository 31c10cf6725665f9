/*
 * test_refdata.c -- the reference-data loader: the repository's data/ loads
 * and answers lookups with its published figures; every malformed line kind
 * is refused with "file:line: reason"; bounds are tested at and past their
 * edges.  Why: a figure that cannot be traced must never price a quote.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/pricing/refdata.h"
#include "tests/wm_test.h"
#include "tests/refdata_fixture.h"

WM_TEST(refdata, repository_data_loads_with_published_figures)
{
	struct refdata *rd = load_repo();
	cr_assert_str_eq(rd->version, "2026-11-25.1");
	cr_assert_str_eq(rd->effective_date, "2026-11-25");
	cr_assert_eq(rd->n_vat, 36); /* EU 27 + GB, NO, CH default rows + PT by product and region */
	for (const char *p = "AT BE BG CY CZ DE DK EE ES FI FR GR HR HU IE IT LT LU LV MT NL PL PT RO SE SI SK GB NO CH"; *p;
	     p += p[2] ? 3 : 2) {
		char cc[3] = {p[0], p[1], 0};
		cr_assert_not_null(refdata_vat_at(rd, cc, "", RD_VP_DEFAULT, 20261125), "%s has no VAT today", cc);
	}
	cr_assert_eq(refdata_vat(rd, "DE")->rate_e4, 190000);
	cr_assert_eq(refdata_vat(rd, "FI")->rate_e4, 255000);
	cr_assert_eq(refdata_vat(rd, "CH")->rate_e4, 81000);
	cr_assert_null(refdata_vat(rd, "US"));
	const struct rd_excise *e;
	cr_assert_eq(refdata_excise(rd, "DE", RD_CAT_SPARKLING, 1200, 20251101, &e), RD_FOUND);
	cr_assert_eq(e->rate_e4, 1360000);
	cr_assert_eq(refdata_excise(rd, "DE", RD_CAT_SPARKLING, 599, 20251101, &e), RD_FOUND); /* band edge */
	cr_assert_eq(e->rate_e4, 510000);
	cr_assert_eq(refdata_excise(rd, "GB", RD_CAT_FORTIFIED, 2000, 20251101, &e), RD_FOUND);
	cr_assert_eq(e->basis, RD_B_PER_L_PURE_ALCOHOL);
	cr_assert_eq(e->rate_e4, 295400);
	cr_assert_str_eq(e->currency, "GBP");
	cr_assert_eq(refdata_excise(rd, "GB", RD_CAT_STILL, 849, 20251101, &e), RD_FOUND);
	cr_assert_eq(e->rate_e4, 256700);
	cr_assert_eq(refdata_excise(rd, "GB", RD_CAT_STILL, 349, 20251101, &e), RD_NO_ENTRY);
	cr_assert_eq(refdata_excise(rd, "NO", RD_CAT_STILL, 1250, 20251101, &e), RD_FOUND);
	cr_assert_eq(e->basis, RD_B_PER_L_PER_PCT_VOL);
	cr_assert_eq(e->rate_e4, 52900);
	cr_assert_eq(refdata_excise(rd, "BE", RD_CAT_FORTIFIED, 1900, 20251101, &e), RD_NOT_PUBLISHED);
	cr_assert_not_null(e);
	cr_assert_eq(refdata_freight(rd, "FR", "DE", 12)->price_cents, 7200);
	/* DE -> FR has no lane row: the SAMPLE zone row Z1 -> Z1 (72.00 for 12) */
	cr_assert_eq(refdata_freight(rd, "DE", "FR", 12)->price_cents, 7200);
	cr_assert_str_eq(refdata_freight(rd, "DE", "FR", 12)->origin, "Z1");
	cr_assert_null(refdata_freight(rd, "US", "FR", 12));
	cr_assert_eq(refdata_fx(rd, "EUR", NULL), RD_FX_ONE);
	cr_assert_eq(refdata_fx(rd, "NOK", NULL), 11700000);
	cr_assert_eq(refdata_fx(rd, "XYZ", NULL), -1);
	for (uint32_t i = 0; i < rd->n_excise; i++)
		cr_assert(rd->excise[i].m.source[0] && rd->excise[i].m.as_of[0]);
	cr_assert(refdata_is_eu("DE") && !refdata_is_eu("GB") && !refdata_is_eu("NO") && !refdata_is_eu("CH"));
	cr_assert_str_eq(refdata_country_currency("NO"), "NOK");
	refdata_free(rd);
}

/* Parse text as file f of a fresh version; returns rc and the error. */
static int parse1(enum rd_file f, const char *text, char *err, size_t n)
{
	struct refdata *rd = refdata_new();
	err[0] = 0;
	int rc = refdata_parse(rd, f, text, strlen(text), err, n);
	refdata_free(rd);
	return rc;
}

#define VAT_H "country\trate_percent\tsource\tas_of\n"
#define EX_H "country\tcategory\tabv_min\tabv_max\tbasis\trate\tcurrency\tsource\tas_of\n"
#define FR_H "origin\tdestination\tbox_units\tprice_eur\tsource\tas_of\n"
#define FX_H "currency\tper_eur\tsource\tas_of\n"

static const struct {
	enum rd_file f;
	const char *text;
	const char *want; /* prefix of the error */
} bad[] = {
	{RD_F_VAT, "# c\nnope\n", "vat.tsv:2: header"},
	{RD_F_VAT, "", "vat.tsv:0: no header"},
	{RD_F_VAT, VAT_H "DE\t19\tsrc\n", "vat.tsv:2: wrong number of columns"},
	{RD_F_VAT, VAT_H "DE\t19\tsrc\t2025\textra\n", "vat.tsv:2: wrong number of columns"},
	{RD_F_VAT, VAT_H "DE\t19\t\t2025\n", "vat.tsv:2: every figure needs its source"},
	{RD_F_VAT, VAT_H "DE\t19\t-\t2025\n", "vat.tsv:2: every figure needs its source"},
	{RD_F_VAT, VAT_H "DE\t19\tsrc\t\n", "vat.tsv:2: every figure needs its source"},
	{RD_F_VAT, VAT_H "XX\t19\tsrc\t2025\n", "vat.tsv:2: not an ISO 3166"},
	{RD_F_VAT, VAT_H "de\t19\tsrc\t2025\n", "vat.tsv:2: not an ISO 3166"},
	{RD_F_VAT, VAT_H "DE\t1.9e1\tsrc\t2025\n", "vat.tsv:2: not an exact decimal"},
	{RD_F_VAT, VAT_H "DE\t-19\tsrc\t2025\n", "vat.tsv:2: not an exact decimal"},
	{RD_F_VAT, VAT_H "DE\t19.\tsrc\t2025\n", "vat.tsv:2: not an exact decimal"},
	{RD_F_VAT, VAT_H "DE\t019\tsrc\t2025\n", "vat.tsv:2: not an exact decimal"},
	{RD_F_VAT, VAT_H "DE\t19.00001\tsrc\t2025\n", "vat.tsv:2: too many decimal places"},
	{RD_F_VAT, VAT_H "DE\t100.0001\tsrc\t2025\n", "vat.tsv:2: value out of range"},
	{RD_F_VAT, VAT_H "DE\t19\tsrc\t2025-13\n", "vat.tsv:2: as_of"},
	{RD_F_VAT, VAT_H "DE\t19\tsrc\t2025-02-30\n", "vat.tsv:2: as_of"},
	{RD_F_VAT, VAT_H "DE\t19\tsrc\tlate 2025\n", "vat.tsv:2: as_of"},
	{RD_F_VAT, VAT_H "DE\t19\tsrc\t2025\r\n", "vat.tsv:2: control character"},
	{RD_F_VAT, VAT_H "DE\t19\tsrc\t2025\nDE\t19\tsrc\t2025\n", "vat.tsv:3: duplicate country (first at line 2)"},
	{RD_F_EXCISE, EX_H "DE\trose\t0\t22\tper_hl_product\t0\tEUR\ts\t2025\n", "excise.tsv:2: category"},
	{RD_F_EXCISE, EX_H "DE\tstill\t0\t22.01\tper_hl_product\t0\tEUR\ts\t2025\n", "excise.tsv:2: value out of range"},
	{RD_F_EXCISE, EX_H "DE\tstill\t12\t11\tper_hl_product\t0\tEUR\ts\t2025\n", "excise.tsv:2: abv_min is above"},
	{RD_F_EXCISE, EX_H "DE\tstill\t0\t22\tper_bottle\t0\tEUR\ts\t2025\n", "excise.tsv:2: unknown basis"},
	{RD_F_EXCISE, EX_H "DE\tstill\t0\t22\tper_hl_product\t1.00001\tEUR\ts\t2025\n", "excise.tsv:2: too many"},
	{RD_F_EXCISE, EX_H "DE\tstill\t0\t22\tper_hl_product\tnot found\tEUR\ts\t2025\n", "excise.tsv:2: not an exact"},
	{RD_F_EXCISE, EX_H "DE\tstill\t0\t22\tper_hl_product\t1\tEUX\ts\t2025\n", "excise.tsv:2: not a known ISO 4217"},
	{RD_F_EXCISE,
	 EX_H "DE\tstill\t0\t12\tper_hl_product\t1\tEUR\ts\t2025\nDE\tstill\t12\t22\tper_hl_product\t2\tEUR\ts\t2025\n",
	 "excise.tsv:3: ABV band overlaps (duplicate) (first at line 2)"},
	{RD_F_FREIGHT, FR_H "FR\tDE\t8\t1.00\ts\t2025\n", "freight.tsv:2: box_units must be 6 or 12"},
	{RD_F_FREIGHT, FR_H "FR\tDE\t6\t1.001\ts\t2025\n", "freight.tsv:2: too many decimal places"},
	{RD_F_FREIGHT, FR_H "FR\tDE\t6\t100000.01\ts\t2025\n", "freight.tsv:2: value out of range"},
	{RD_F_FREIGHT, FR_H "FR\tDE\t6\t1\ts\t2025\nFR\tDE\t6\t2\ts\t2025\n", "freight.tsv:3: duplicate lane"},
	{RD_F_FX, FX_H "EUR\t1\ts\t2025\n", "fx.tsv:2: EUR is implicit"},
	{RD_F_FX, FX_H "GBP\t0\ts\t2025\n", "fx.tsv:2: rate must be above zero"},
	{RD_F_FX, FX_H "GBP\t0.8650001\ts\t2025\n", "fx.tsv:2: too many decimal places"},
	{RD_F_FX, FX_H "GBP\t0.86\ts\t2025\nGBP\t0.87\ts\t2025\n", "fx.tsv:3: duplicate currency"},
	{RD_F_VERSION, "version = a b\neffective_date = 2025-01-01\n", "version.txt:1: version may hold"},
	{RD_F_VERSION, "version=1\n", "version.txt:1: expected"},
	{RD_F_VERSION, "version = 1\nversion = 2\n", "version.txt:2: duplicate key"},
	{RD_F_VERSION, "version = 1\neffective_date = 2025-1-01\n", "version.txt:2: effective_date"},
	{RD_F_VERSION, "version = 1\ncolour = red\n", "version.txt:2: unknown key"},
	{RD_F_VERSION, "version = 1\n", "version.txt:1: version and effective_date are both required"},
};

WM_TEST(refdata, every_malformed_line_kind_is_refused_with_file_and_line)
{
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[256];
		cr_assert_eq(parse1(bad[i].f, bad[i].text, err, sizeof(err)), -1, "case %zu accepted", i);
		cr_assert(!strncmp(err, bad[i].want, strlen(bad[i].want)), "case %zu: got \"%s\", want \"%s...\"", i,
			  err, bad[i].want);
	}
}

WM_TEST(refdata, good_lines_at_their_bounds_load)
{
	char err[256];
	cr_assert_eq(parse1(RD_F_VAT, "# comment\n\n" VAT_H "DE\t100\ts\t2025\nFR\t0.0001\ts\t2025-02\n", err,
			    sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(parse1(RD_F_EXCISE, EX_H "DE\tstill\t0\t22\tper_hl_product\tNOT_FOUND\tEUR\tnone found\t2025\n",
			    err, sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(parse1(RD_F_FREIGHT, FR_H "FR\tDE\t12\t100000.00\ts\t2025-11-01", err, sizeof(err)), 0, "%s",
		     err); /* no final newline */
}

WM_TEST(refdata, line_length_and_count_bounds)
{
	char err[256];
	size_t cap = RD_MAX_LINE * 2 + 64;
	char *t = malloc(cap);
	/* a line of exactly RD_MAX_LINE bytes is read (and fails on content), one more is refused */
	for (int extra = 0; extra <= 1; extra++) {
		size_t n = (size_t)snprintf(t, cap, "%s", VAT_H);
		size_t start = n;
		n += (size_t)snprintf(t + n, cap - n, "DE\t19\t");
		while (n - start < RD_MAX_LINE + (size_t)extra - 5)
			t[n++] = 's';
		n += (size_t)snprintf(t + n, cap - n, "\t2025\n");
		cr_assert_eq(n - start - 1, RD_MAX_LINE + (size_t)extra);
		cr_assert_eq(parse1(RD_F_VAT, t, err, sizeof(err)), -1);
		cr_assert(strstr(err, extra ? "line longer than RD_MAX_LINE" : "source is longer"), "%s", err);
	}
	free(t);
	/* RD_MAX_ROWS figure lines load; one more is refused */
	size_t big = (RD_MAX_ROWS + 2) * 64;
	t = malloc(big);
	size_t n = (size_t)snprintf(t, big, "%s", EX_H);
	for (unsigned i = 0; i <= RD_MAX_ROWS; i++)
		n += (size_t)snprintf(t + n, big - n, "DE\t%s\t%u.%02u\t%u.%02u\tper_hl_product\t1\tEUR\ts\t2025\n",
				      rd_category_names[i % 3], (i / 3) / 100, (i / 3) % 100, (i / 3) / 100,
				      (i / 3) % 100);
	cr_assert_eq(parse1(RD_F_EXCISE, t, err, sizeof(err)), -1);
	cr_assert(strstr(err, "excise.tsv:514: more than RD_MAX_ROWS"), "%s", err);
	*strrchr(t, 'D') = 0; /* drop the last line */
	cr_assert_eq(parse1(RD_F_EXCISE, t, err, sizeof(err)), 0, "%s", err);
	free(t);
}

WM_TEST(refdata, finish_requires_every_file_and_fx_for_duty_currencies)
{
	char err[256];
	struct refdata *rd = refdata_new();
	const char *ver = "version = t\neffective_date = 2025-11-01\n";
	cr_assert_eq(refdata_parse(rd, RD_F_VERSION, ver, strlen(ver), err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(refdata_finish(rd, err, sizeof(err)), -1);
	cr_assert(strstr(err, "vat.tsv:0: file missing"), "%s", err);
	const char *ex = EX_H "PL\tstill\t0\t22\tper_hl_product\t222\tPLN\ts\t2025\n";
	cr_assert_eq(refdata_parse(rd, RD_F_VAT, VAT_H, strlen(VAT_H), err, sizeof(err)), 0);
	cr_assert_eq(refdata_parse(rd, RD_F_EXCISE, ex, strlen(ex), err, sizeof(err)), 0);
	cr_assert_eq(refdata_parse(rd, RD_F_FREIGHT, FR_H, strlen(FR_H), err, sizeof(err)), 0);
	cr_assert_eq(refdata_parse(rd, RD_F_FX, FX_H, strlen(FX_H), err, sizeof(err)), 0);
	cr_assert_eq(refdata_parse(rd, RD_F_FX, FX_H, strlen(FX_H), err, sizeof(err)), -1); /* twice */
	cr_assert_eq(refdata_finish(rd, err, sizeof(err)), -1);
	cr_assert(strstr(err, "excise.tsv:2: currency has no rate in fx.tsv"), "%s", err);
	refdata_free(rd);
}

WM_TEST(refdata, missing_directory_names_the_path)
{
	char err[256];
	struct refdata *rd = NULL;
	cr_assert_eq(refdata_load_dir("/nonexistent-wm-dir", &rd, err, sizeof(err)), -1);
	cr_assert(strstr(err, "/nonexistent-wm-dir/version.txt"), "%s", err);
	cr_assert_null(rd);
}

/*
 * The per-country indexes (refdata_finish) answer exactly what a scan of
 * every row answers: the project's own data/ loaded, then every VAT and
 * excise lookup -- every assigned country plus a few that are not, every
 * region the file names plus mainland, every product and category, abv
 * steps, and dates around each row's range -- compared with the same
 * version whose indexes are switched off.
 */
WM_TEST(refdata, per_country_indexes_answer_as_a_scan)
{
	const char *src = getenv("WM_SRC_DIR");
	char dir[1024], err[256];
	snprintf(dir, sizeof(dir), "%s/data", src ? src : ".");
	struct refdata *rd = NULL;
	cr_assert_eq(refdata_load_dir(dir, &rd, err, sizeof(err)), 0, "%s", err);
	cr_assert(rd->indexed, "a finished version is indexed");
	struct refdata *scan = refdata_new();
	cr_assert_not_null(scan);
	memcpy(scan, rd, sizeof(*rd));
	scan->indexed = 0;
	static const char *const extra_cc[] = {"XX", "ZZ", "", "F", "fr", NULL};
	uint32_t dates[2 * RD_MAX_ROWS + 2];
	unsigned nd = 0;
	dates[nd++] = 20260101;
	dates[nd++] = 20261125;
	for (uint32_t i = 0; i < rd->n_vat && nd + 2 <= sizeof(dates) / sizeof(dates[0]); i += 7) {
		dates[nd++] = rd->vat[i].from;
		dates[nd++] = rd->vat[i].to;
	}
	unsigned checked = 0;
	static char codes[RD_CC_SLOTS + 8][3];
	unsigned nc = 0;
	for (char a = 'A'; a <= 'Z'; a++)
		for (char b = 'A'; b <= 'Z'; b++) {
			codes[nc][0] = a;
			codes[nc][1] = b;
			codes[nc++][2] = 0;
		}
	for (unsigned i = 0; extra_cc[i]; i++)
		snprintf(codes[nc++], 3, "%s", extra_cc[i]);
	for (unsigned ci = 0; ci < nc; ci++) {
		const char *c = codes[ci];
		cr_assert_eq(refdata_vat(rd, c), refdata_vat(scan, c) ? rd->vat + (refdata_vat(scan, c) - scan->vat) : NULL,
			     "refdata_vat %s", c);
		for (unsigned d = 0; d < nd; d++) {
			for (int p = 0; p < RD_VP_COUNT_; p++) {
				const char *regions[] = {"", rd->vat[(d * 13) % (rd->n_vat ? rd->n_vat : 1)].region};
				for (int r = 0; r < 2; r++) {
					const struct rd_vat *a = refdata_vat_at(rd, c, regions[r], p, dates[d]);
					const struct rd_vat *b = refdata_vat_at(scan, c, regions[r], p, dates[d]);
					cr_assert_eq(a ? a - rd->vat : -1, b ? b - scan->vat : -1, "vat_at %s %s %d %u", c,
						     regions[r], p, dates[d]);
					checked++;
				}
			}
			for (int k = 0; k < RD_CAT_COUNT_; k++) {
				cr_assert_eq(refdata_excise_category_known(rd, c, k, dates[d]),
					     refdata_excise_category_known(scan, c, k, dates[d]));
				for (uint32_t abv = 0; abv <= 2500; abv += 250) {
					const struct rd_excise *a, *b;
					int ra = refdata_excise(rd, c, k, abv, dates[d], &a);
					int rb = refdata_excise(scan, c, k, abv, dates[d], &b);
					cr_assert_eq(ra, rb, "excise %s %d %u %u", c, k, abv, dates[d]);
					cr_assert_eq(a ? a - rd->excise : -1, b ? b - scan->excise : -1);
					checked++;
				}
			}
		}
	}
	cr_assert_gt(checked, 100000, "the comparison covered %u lookups", checked);
	refdata_free(scan);
	refdata_free(rd);
}

/* Dates are written YYYY-MM-DD with their zeros; an open end is "-". */
WM_TEST(refdata, dates_format_with_zeros_and_open_ends)
{
	static const struct {
		uint32_t ymd;
		const char *want;
	} cases[] = {
		{20260101u, "2026-01-01"}, {20261231u, "2026-12-31"}, {19990909u, "1999-09-09"},
		{10000101u, "1000-01-01"}, {99991230u, "9999-12-30"}, {RD_DATE_MIN, "-"}, {RD_DATE_MAX, "-"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[11];
		memset(out, 'x', sizeof(out));
		rd_ymd_format(cases[i].ymd, out);
		cr_assert_str_eq(out, cases[i].want, "%u", cases[i].ymd);
	}
}
