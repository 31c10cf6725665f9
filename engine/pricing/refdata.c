/*
 * refdata.c -- strict loader and lookups for the pricing reference data
 * (see refdata.h).  Why this shape: the files are small and read at start-
 * up or on an operator reload, never per request, so the parser favours
 * clear errors over speed; lookups are linear scans of at most RD_MAX_ROWS
 * rows, which is cheaper than the JSON around a quote.
 */
#include "engine/pricing/refdata.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/iso.h"
#include "engine/base/log.h"
#include "net/buf.h"
#include "net/json.h"

const char *const rd_file_names[RD_F_COUNT_] = {"version.txt", "vat.tsv", "excise.tsv", "freight.tsv",
						"fx.tsv", "levies.tsv", "caps.tsv"};
const char *const rd_levy_basis_names[RD_LB_COUNT_] = {"per_unit", "per_hl_product"};
const char *const rd_source_names[2] = {"files", "api"};
const char *const rd_category_names[RD_CAT_COUNT_] = {"still", "sparkling", "fortified"};
const char *const rd_category_codes[RD_CAT_COUNT_] = {"W200", "W300", "I000"};
const char *const rd_basis_names[RD_B_COUNT_] = {"per_hl_product", "per_l_pure_alcohol", "per_l_per_pct_vol",
						 "per_l_product"};

const char *const rd_vat_product_names[RD_VP_COUNT_] = {"still", "sparkling", "fortified", "default"};
/* a wine's category is its VAT product (refdata_vat_at compares them) */
_Static_assert((int)RD_VP_STILL == (int)RD_CAT_STILL && (int)RD_VP_SPARKLING == (int)RD_CAT_SPARKLING &&
		       (int)RD_VP_FORTIFIED == (int)RD_CAT_FORTIFIED && (int)RD_VP_DEFAULT == (int)RD_CAT_COUNT_,
	       "VAT products extend the excise categories");

/* The header line each table must start with (first non-comment line):
 * [0] the original layout (no dates: every row in force on every day, VAT
 * for every product of the whole country), [1] the dated layout, which
 * adds effective_from / effective_to (and, for VAT, region and product).
 * Both load, so an upload written for the original layout stays valid. */
static const char *const headers[RD_F_COUNT_][2] = {
	{NULL, NULL},
	{"country\trate_percent\tsource\tas_of",
	 "country\tregion\tproduct\trate_percent\tsource\tas_of\teffective_from\teffective_to"},
	{"country\tcategory\tabv_min\tabv_max\tbasis\trate\tcurrency\tsource\tas_of",
	 "country\tcategory\tabv_min\tabv_max\tbasis\trate\tcurrency\tsource\tas_of\teffective_from\teffective_to"},
	{"origin\tdestination\tbox_units\tprice_eur\tsource\tas_of", NULL},
	{"currency\tper_eur\tsource\tas_of", NULL},
	{NULL, "country\tname\tbasis\trate\tcurrency\tsource\tas_of\teffective_from\teffective_to"},
	{"country\tcategory\tlimit_liters\tperiod_days\tsource\tas_of", NULL},
};

int rd_file_optional(enum rd_file f) { return f == RD_F_LEVIES || f == RD_F_CAPS; }

#define RD_MAX_COLS 11

/*
 * Freight zones of the SAMPLE tariff (data/freight.tsv): a lane without its
 * own row is priced by the row of its (origin zone, destination zone), the
 * way carriers price Europe by 2-4 zones from neighbouring to eastern
 * countries (tarif-colis.com/faq-envoi-colis/transporteurs-express-zones-
 * expeditions.html; chronopost.fr zoning FAQ).  Zones are regional groups:
 *   Z1 western/central core, Z2 south and Mediterranean islands,
 *   Z3 British Isles, Nordics and Baltics, Z4 central-eastern.
 * Every country the reference data names is in exactly one zone.
 */
static const struct {
	char cc[3];
	char zone[3];
} freight_zones[] = {
	{"AT", "Z1"}, {"BE", "Z1"}, {"CH", "Z1"}, {"CZ", "Z1"}, {"DE", "Z1"}, {"DK", "Z1"}, {"FR", "Z1"},
	{"LU", "Z1"}, {"NL", "Z1"}, {"CY", "Z2"}, {"ES", "Z2"}, {"GR", "Z2"}, {"HR", "Z2"}, {"IT", "Z2"},
	{"MT", "Z2"}, {"PT", "Z2"}, {"SI", "Z2"}, {"EE", "Z3"}, {"FI", "Z3"}, {"GB", "Z3"}, {"IE", "Z3"},
	{"LT", "Z3"}, {"LV", "Z3"}, {"NO", "Z3"}, {"SE", "Z3"}, {"BG", "Z4"}, {"HU", "Z4"}, {"PL", "Z4"},
	{"RO", "Z4"}, {"SK", "Z4"},
};
#define N_FREIGHT_ZONES (sizeof(freight_zones) / sizeof(freight_zones[0]))

/* a equals the two-letter code b (a country or a zone, NUL-terminated).
 * Compared byte by byte with no call: every candidate of every quote looks
 * up its currency and its freight lane this way.  No byte of a past its
 * NUL is read: a byte is read only when the one before it matched one of
 * b's letters, which are never NUL. */
static inline int cc_eq(const char *a, const char *b)
{
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2];
}

/* A freight zone token: 'Z' and one digit 1-9 (never an ISO 3166 code). */
static int is_zone(const char *p, size_t n)
{
	return n == 2 && p[0] == 'Z' && p[1] >= '1' && p[1] <= '9';
}

const char *refdata_freight_zone(const char *country)
{
	for (size_t i = 0; i < N_FREIGHT_ZONES; i++)
		if (cc_eq(country, freight_zones[i].cc))
			return freight_zones[i].zone;
	return NULL;
}

/*
 * VAT regions: delivery areas whose VAT differs from the mainland's, found
 * by postal code (inclusive numeric ranges of the leading `digits` digits).
 * Codes are ISO 3166-2 where one exists.  Sources: CTT Portugal postal code
 * plan (9000-9399 Madeira, 9500-9999 Acores); Correos (35xxx Las Palmas,
 * 38xxx Santa Cruz de Tenerife, 51xxx Ceuta, 52xxx Melilla); Deutsche Post
 * (78266 Buesingen am Hochrhein, 27498 Helgoland).  Council Directive
 * 2006/112/EC art. 6 excludes Canarias, Ceuta, Melilla, Buesingen and
 * Heligoland from EU VAT territory.
 */
static const struct {
	char cc[3];
	char region[RD_MAX_REGION + 1];
	uint8_t digits;
	uint32_t lo, hi;
} vat_regions[] = {
	{"PT", "PT-30", 4, 9000, 9399},   {"PT", "PT-20", 4, 9500, 9999},   {"ES", "ES-CN", 5, 35000, 35999},
	{"ES", "ES-CN", 5, 38000, 38999}, {"ES", "ES-CE", 5, 51000, 51999}, {"ES", "ES-ML", 5, 52000, 52999},
	{"DE", "DE-BUS", 5, 78266, 78266}, {"DE", "DE-HEL", 5, 27498, 27498},
};
#define N_VAT_REGIONS (sizeof(vat_regions) / sizeof(vat_regions[0]))

/* EU member states (27, since 1 Feb 2020) -- Treaty on European Union art. 52. */
static const char eu_members[] = "AT BE BG CY CZ DE DK EE ES FI FR GR HR HU IE IT LT LU LV MT NL PL PT RO SE SI SK";

/* Consumer currency by country (ISO 4217 list one).  BG: the euro from
 * 2026-01-01 (shared/reference/excise-vat-2026.md "BG on EUR from 2026";
 * Council Decision (EU) 2025/1407), so BGN is no longer charged. */
static const struct {
	char cc[3], cur[4];
} country_currency[] = {
	{"AT", "EUR"}, {"BE", "EUR"}, {"BG", "EUR"}, {"CY", "EUR"}, {"CZ", "CZK"}, {"DE", "EUR"},
	{"DK", "DKK"}, {"EE", "EUR"}, {"ES", "EUR"}, {"FI", "EUR"}, {"FR", "EUR"}, {"GR", "EUR"},
	{"HR", "EUR"}, {"HU", "HUF"}, {"IE", "EUR"}, {"IT", "EUR"}, {"LT", "EUR"}, {"LU", "EUR"},
	{"LV", "EUR"}, {"MT", "EUR"}, {"NL", "EUR"}, {"PL", "PLN"}, {"PT", "EUR"}, {"RO", "RON"},
	{"SE", "SEK"}, {"SI", "EUR"}, {"SK", "EUR"}, {"GB", "GBP"}, {"NO", "NOK"}, {"CH", "CHF"},
};

int rd_category_find(const char *s, size_t len)
{
	for (int i = 0; i < RD_CAT_COUNT_; i++)
		if (strlen(rd_category_names[i]) == len && !memcmp(rd_category_names[i], s, len))
			return i;
	return -1;
}

static int basis_find(const char *s, size_t len)
{
	for (int i = 0; i < RD_B_COUNT_; i++)
		if (strlen(rd_basis_names[i]) == len && !memcmp(rd_basis_names[i], s, len))
			return i;
	return -1;
}

struct refdata *refdata_new(void)
{
	return calloc(1, sizeof(struct refdata));
}

void refdata_free(struct refdata *rd)
{
	free(rd);
}

/* ---- field parsers: 0 ok, -1 with *why set ------------------------------ */

struct field {
	const char *p;
	size_t len;
};

static int parse_country(struct field f, char out[3], const char **why)
{
	if (!iso_country_valid(f.p, f.len)) {
		*why = "not an ISO 3166-1 alpha-2 country code";
		return -1;
	}
	memcpy(out, f.p, 2);
	out[2] = 0;
	return 0;
}

static int parse_currency(struct field f, char out[4], const char **why)
{
	if (f.len != 3 || iso_currency_minor(f.p, f.len) < 0) {
		*why = "not a known ISO 4217 currency code";
		return -1;
	}
	memcpy(out, f.p, 3);
	out[3] = 0;
	return 0;
}

/* Plain decimal: digits, optionally '.' and digits; no sign, no exponent,
 * at most `scale` fractional digits; value in [0, max]. */
static int parse_decimal(struct field f, unsigned scale, int64_t max, int64_t *out, const char **why)
{
	size_t i = 0, int_digits = 0, frac_digits = 0;
	while (i < f.len && f.p[i] >= '0' && f.p[i] <= '9')
		i++, int_digits++;
	if (i < f.len && f.p[i] == '.') {
		i++;
		while (i < f.len && f.p[i] >= '0' && f.p[i] <= '9')
			i++, frac_digits++;
		if (!frac_digits)
			int_digits = 0;
	}
	if (i != f.len || !int_digits || (int_digits > 1 && f.p[0] == '0')) {
		*why = "not an exact decimal (digits, optional '.', no sign or exponent)";
		return -1;
	}
	if (frac_digits > scale) {
		*why = "too many decimal places";
		return -1;
	}
	int64_t v;
	if (json_text_to_fixed(f.p, f.len, scale, &v) || v < 0 || v > max) {
		*why = "value out of range";
		return -1;
	}
	*out = v;
	return 0;
}

static int digits(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return 0;
	return 1;
}

static int num2(const char *p)
{
	return (p[0] - '0') * 10 + (p[1] - '0');
}

/* YYYY-MM-DD only (effective dates). */
static int valid_date(const char *p, size_t n)
{
	static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (n != 10 || !digits(p, 4) || p[4] != '-' || !digits(p + 5, 2) || p[7] != '-' || !digits(p + 8, 2))
		return 0;
	int m = num2(p + 5), d = num2(p + 8);
	return m >= 1 && m <= 12 && d >= 1 && d <= mdays[m - 1] && p[0] != '0';
}

uint32_t rd_ymd_parse(const char *p, size_t n)
{
	if (!valid_date(p, n))
		return 0;
	uint32_t y = 0;
	for (int i = 0; i < 4; i++)
		y = y * 10 + (uint32_t)(p[i] - '0');
	return y * 10000u + (uint32_t)num2(p + 5) * 100u + (uint32_t)num2(p + 8);
}

void rd_ymd_format(uint32_t ymd, char out[11])
{
	if (ymd == RD_DATE_MIN || ymd >= RD_DATE_MAX) {
		snprintf(out, 11, "-");
		return;
	}
	/* by hand, not snprintf: a quote writes three dates per tax line */
	uint32_t y = ymd / 10000u % 10000u, m = ymd / 100u % 100u, d = ymd % 100u;
	out[0] = (char)('0' + y / 1000u);
	out[1] = (char)('0' + y / 100u % 10u);
	out[2] = (char)('0' + y / 10u % 10u);
	out[3] = (char)('0' + y % 10u);
	out[4] = '-';
	out[5] = (char)('0' + m / 10u);
	out[6] = (char)('0' + m % 10u);
	out[7] = '-';
	out[8] = (char)('0' + d / 10u);
	out[9] = (char)('0' + d % 10u);
	out[10] = 0;
}

/* effective_from / effective_to: YYYY-MM-DD, or "-" for an open end. */
static int parse_eff(struct field f, uint32_t open, uint32_t *out, const char **why)
{
	if (f.len == 1 && f.p[0] == '-') {
		*out = open;
		return 0;
	}
	if (!(*out = rd_ymd_parse(f.p, f.len))) {
		*why = "effective_from/effective_to is not YYYY-MM-DD or -";
		return -1;
	}
	return 0;
}

static int parse_range(struct field from, struct field to, uint32_t *f, uint32_t *t, const char **why)
{
	if (parse_eff(from, RD_DATE_MIN, f, why) || parse_eff(to, RD_DATE_MAX, t, why))
		return -1;
	if (*f > *t) {
		*why = "effective_from is after effective_to";
		return -1;
	}
	return 0;
}

static int ranges_overlap(uint32_t f1, uint32_t t1, uint32_t f2, uint32_t t2)
{
	return f1 <= t2 && f2 <= t1;
}

/* as_of: YYYY, YYYY-MM or YYYY-MM-DD. */
static int parse_as_of(struct field f, char out[11], const char **why)
{
	int ok = 0;
	if (f.len == 4)
		ok = digits(f.p, 4) && f.p[0] != '0';
	else if (f.len == 7)
		ok = digits(f.p, 4) && f.p[0] != '0' && f.p[4] == '-' && digits(f.p + 5, 2) && num2(f.p + 5) >= 1 &&
		     num2(f.p + 5) <= 12;
	else
		ok = valid_date(f.p, f.len);
	if (!ok) {
		*why = "as_of is not YYYY, YYYY-MM or YYYY-MM-DD";
		return -1;
	}
	memcpy(out, f.p, f.len);
	out[f.len] = 0;
	return 0;
}

static int parse_meta(struct field src, struct field as_of, uint32_t line, struct rd_meta *m, const char **why)
{
	if (src.len > RD_MAX_SOURCE) {
		*why = "source is longer than RD_MAX_SOURCE";
		return -1;
	}
	if (src.len == 1 && src.p[0] == '-') {
		*why = "every figure needs its source";
		return -1;
	}
	memcpy(m->source, src.p, src.len);
	m->source[src.len] = 0;
	m->line = line;
	return parse_as_of(as_of, m->as_of, why);
}

/* ---- one row per file kind: 0, or -1 with *why (and *dup_line) ------- */

typedef int (*row_fn)(struct refdata *rd, const struct field *c, uint32_t line, const char **why,
		      uint32_t *dup_line);

static int region_known(const char *cc, const char *region)
{
	for (size_t i = 0; i < N_VAT_REGIONS; i++)
		if (!strcmp(vat_regions[i].cc, cc) && !strcmp(vat_regions[i].region, region))
			return 1;
	return 0;
}

static int row_vat(struct refdata *rd, const struct field *c, uint32_t line, const char **why, uint32_t *dup)
{
	struct rd_vat v = {.product = RD_VP_DEFAULT, .from = RD_DATE_MIN, .to = RD_DATE_MAX};
	if (parse_country(c[0], v.country, why))
		return -1;
	if (rd->dated[RD_F_VAT]) { /* country region product rate source as_of from to */
		if (!(c[1].len == 1 && c[1].p[0] == '-')) {
			if (c[1].len > RD_MAX_REGION) {
				*why = "unknown region (see data/README.md)";
				return -1;
			}
			memcpy(v.region, c[1].p, c[1].len);
			v.region[c[1].len] = 0;
			if (!region_known(v.country, v.region)) {
				*why = "unknown region (see data/README.md)";
				return -1;
			}
		}
		int pr = -1;
		for (int i = 0; i < RD_VP_COUNT_; i++)
			if (strlen(rd_vat_product_names[i]) == c[2].len && !memcmp(rd_vat_product_names[i], c[2].p, c[2].len))
				pr = i;
		if (pr < 0) {
			*why = "product is not still|sparkling|fortified|default";
			return -1;
		}
		v.product = (uint8_t)pr;
		c += 2;
		if (parse_range(c[4], c[5], &v.from, &v.to, why))
			return -1;
	}
	if (parse_decimal(c[1], RD_VAT_SCALE, RD_MAX_VAT_E4, &v.rate_e4, why) || parse_meta(c[2], c[3], line, &v.m, why))
		return -1;
	for (uint32_t i = 0; i < rd->n_vat; i++) {
		const struct rd_vat *o = &rd->vat[i];
		if (!strcmp(o->country, v.country) && !strcmp(o->region, v.region) && o->product == v.product &&
		    ranges_overlap(o->from, o->to, v.from, v.to)) {
			*why = "duplicate country"; /* same region and product, in force on a common day */
			*dup = o->m.line;
			return -1;
		}
	}
	rd->vat[rd->n_vat++] = v;
	return 0;
}

static int parse_abv(struct field f, uint16_t *out, const char **why)
{
	int64_t v;
	if (parse_decimal(f, 2, RD_MAX_ABV, &v, why))
		return -1;
	*out = (uint16_t)v;
	return 0;
}

static int row_excise(struct refdata *rd, const struct field *c, uint32_t line, const char **why, uint32_t *dup)
{
	struct rd_excise e = {.from = RD_DATE_MIN, .to = RD_DATE_MAX};
	if (parse_country(c[0], e.country, why))
		return -1;
	if (rd->dated[RD_F_EXCISE] && parse_range(c[9], c[10], &e.from, &e.to, why))
		return -1;
	int cat = rd_category_find(c[1].p, c[1].len);
	if (cat < 0) {
		*why = "category is not still|sparkling|fortified";
		return -1;
	}
	e.category = (uint8_t)cat;
	if (parse_abv(c[2], &e.abv_min, why) || parse_abv(c[3], &e.abv_max, why))
		return -1;
	if (e.abv_min > e.abv_max) {
		*why = "abv_min is above abv_max";
		return -1;
	}
	int b = basis_find(c[4].p, c[4].len);
	if (b < 0) {
		*why = "unknown basis";
		return -1;
	}
	e.basis = (uint8_t)b;
	if (c[5].len == 9 && !memcmp(c[5].p, "NOT_FOUND", 9))
		e.not_found = 1;
	else if (parse_decimal(c[5], RD_RATE_SCALE, RD_MAX_RATE_E4, &e.rate_e4, why))
		return -1;
	if (parse_currency(c[6], e.currency, why) || parse_meta(c[7], c[8], line, &e.m, why))
		return -1;
	for (uint32_t i = 0; i < rd->n_excise; i++) {
		const struct rd_excise *o = &rd->excise[i];
		if (!strcmp(o->country, e.country) && o->category == e.category && o->abv_min <= e.abv_max &&
		    e.abv_min <= o->abv_max && ranges_overlap(o->from, o->to, e.from, e.to)) {
			*why = "ABV band overlaps (duplicate)";
			*dup = o->m.line;
			return -1;
		}
	}
	rd->excise[rd->n_excise++] = e;
	return 0;
}

/* The row of exactly this lane (countries or zones), or NULL. */
static const struct rd_freight *freight_exact(const struct refdata *rd, const char *o, const char *d, unsigned box)
{
	for (uint32_t i = 0; i < rd->n_freight; i++) {
		const struct rd_freight *f = &rd->freight[i];
		if (f->box_units == box && cc_eq(o, f->origin) && cc_eq(d, f->destination))
			return f;
	}
	return NULL;
}

static int row_freight(struct refdata *rd, const struct field *c, uint32_t line, const char **why, uint32_t *dup)
{
	struct rd_freight f = {0};
	int64_t box;
	for (int k = 0; k < 2; k++) { /* a country, or a zone of freight_zones[] */
		char *dst = k ? f.destination : f.origin;
		if (is_zone(c[k].p, c[k].len)) {
			memcpy(dst, c[k].p, 2);
			dst[2] = 0;
		} else if (parse_country(c[k], dst, why))
			return -1;
	}
	if (is_zone(f.origin, 2) != is_zone(f.destination, 2)) {
		*why = "a lane is country to country or zone to zone";
		return -1;
	}
	if (parse_decimal(c[2], 0, 12, &box, why))
		return -1;
	if (box != 6 && box != 12) {
		*why = "box_units must be 6 or 12";
		return -1;
	}
	f.box_units = (uint8_t)box;
	if (parse_decimal(c[3], 2, RD_MAX_FREIGHT_CENTS, &f.price_cents, why) || parse_meta(c[4], c[5], line, &f.m, why))
		return -1;
	const struct rd_freight *old = freight_exact(rd, f.origin, f.destination, f.box_units);
	if (old) {
		*why = "duplicate lane";
		*dup = old->m.line;
		return -1;
	}
	rd->freight[rd->n_freight++] = f;
	return 0;
}

static int row_fx(struct refdata *rd, const struct field *c, uint32_t line, const char **why, uint32_t *dup)
{
	struct rd_fx x = {0};
	if (parse_currency(c[0], x.currency, why) || parse_decimal(c[1], RD_FX_SCALE, RD_MAX_FX_E6, &x.per_eur_e6, why) ||
	    parse_meta(c[2], c[3], line, &x.m, why))
		return -1;
	if (!strcmp(x.currency, "EUR")) {
		*why = "EUR is implicit (1) and must not be listed";
		return -1;
	}
	if (x.per_eur_e6 == 0) {
		*why = "rate must be above zero";
		return -1;
	}
	const struct rd_fx *old;
	if (refdata_fx(rd, x.currency, &old) >= 0) {
		*why = "duplicate currency";
		*dup = old->m.line;
		return -1;
	}
	rd->fx[rd->n_fx++] = x;
	return 0;
}

static int row_levy(struct refdata *rd, const struct field *c, uint32_t line, const char **why, uint32_t *dup)
{
	struct rd_levy l = {0};
	if (parse_country(c[0], l.country, why))
		return -1;
	int ok = c[1].len >= 1 && c[1].len <= RD_MAX_LEVY_NAME;
	for (size_t i = 0; ok && i < c[1].len; i++)
		ok = (c[1].p[i] >= 'a' && c[1].p[i] <= 'z') || (c[1].p[i] >= '0' && c[1].p[i] <= '9') || c[1].p[i] == '_';
	if (!ok) {
		*why = "name must be 1..RD_MAX_LEVY_NAME bytes of [a-z0-9_]";
		return -1;
	}
	memcpy(l.name, c[1].p, c[1].len);
	int b = -1;
	for (int i = 0; i < RD_LB_COUNT_; i++)
		if (strlen(rd_levy_basis_names[i]) == c[2].len && !memcmp(rd_levy_basis_names[i], c[2].p, c[2].len))
			b = i;
	if (b < 0) {
		*why = "basis is not per_unit|per_hl_product";
		return -1;
	}
	l.basis = (uint8_t)b;
	if (c[3].len == 9 && !memcmp(c[3].p, "NOT_FOUND", 9))
		l.not_found = 1;
	else if (parse_decimal(c[3], RD_RATE_SCALE, RD_MAX_RATE_E4, &l.rate_e4, why))
		return -1;
	if (parse_currency(c[4], l.currency, why) || parse_meta(c[5], c[6], line, &l.m, why) ||
	    parse_range(c[7], c[8], &l.from, &l.to, why))
		return -1;
	for (uint32_t i = 0; i < rd->n_levies; i++) {
		const struct rd_levy *o = &rd->levies[i];
		if (!strcmp(o->country, l.country) && !strcmp(o->name, l.name) && ranges_overlap(o->from, o->to, l.from, l.to)) {
			*why = "duplicate levy (same country and name in force on a common day)";
			*dup = o->m.line;
			return -1;
		}
	}
	rd->levies[rd->n_levies++] = l;
	return 0;
}

static int row_cap(struct refdata *rd, const struct field *c, uint32_t line, const char **why, uint32_t *dup)
{
	struct rd_cap x = {0};
	if (c[0].len == 1 && c[0].p[0] == '*')
		memcpy(x.country, "*", 2);
	else if (parse_country(c[0], x.country, why))
		return -1;
	if (c[1].len == 5 && !memcmp(c[1].p, "still", 5))
		x.category = RD_CAT_STILL;
	else if (c[1].len == 9 && !memcmp(c[1].p, "sparkling", 9))
		x.category = RD_CAT_SPARKLING;
	else {
		*why = "category is not still|sparkling";
		return -1;
	}
	int64_t days;
	if (parse_decimal(c[2], 6, 100000000000LL, &x.limit_ul, why) ||
	    parse_decimal(c[3], 0, RD_MAX_CAP_DAYS, &days, why) || parse_meta(c[4], c[5], line, &x.m, why))
		return -1;
	if (days < 1) {
		*why = "period_days is 1..366";
		return -1;
	}
	x.period_days = (uint32_t)days;
	for (uint32_t i = 0; i < rd->n_caps; i++)
		if (!strcmp(rd->caps[i].country, x.country) && rd->caps[i].category == x.category) {
			*why = "duplicate cap (same country and category)";
			*dup = rd->caps[i].m.line;
			return -1;
		}
	rd->caps[rd->n_caps++] = x;
	return 0;
}

const struct rd_cap *refdata_cap(const struct refdata *rd, const char *destination, int category)
{
	const struct rd_cap *any = NULL;
	for (uint32_t i = 0; rd && i < rd->n_caps; i++) {
		const struct rd_cap *x = &rd->caps[i];
		if (x->category != category)
			continue;
		if (!strcmp(x->country, destination))
			return x;
		if (x->country[0] == '*')
			any = x;
	}
	return any;
}

static const struct {
	row_fn fn;
	unsigned cols[2]; /* per layout: original, dated */
} row_kinds[RD_F_COUNT_] = {
	[RD_F_VAT] = {row_vat, {4, 8}},
	[RD_F_EXCISE] = {row_excise, {9, 11}},
	[RD_F_FREIGHT] = {row_freight, {6, 0}},
	[RD_F_FX] = {row_fx, {4, 0}},
	[RD_F_LEVIES] = {row_levy, {0, 9}},
	[RD_F_CAPS] = {row_cap, {6, 0}},
};

static uint32_t *row_count(struct refdata *rd, enum rd_file f)
{
	switch (f) {
	case RD_F_VAT: return &rd->n_vat;
	case RD_F_EXCISE: return &rd->n_excise;
	case RD_F_FREIGHT: return &rd->n_freight;
	case RD_F_FX: return &rd->n_fx;
	case RD_F_LEVIES: return &rd->n_levies;
	case RD_F_CAPS: return &rd->n_caps;
	default: return NULL;
	}
}

static int fail(char *err, size_t errlen, enum rd_file f, uint32_t line, const char *why, uint32_t dup)
{
	if (dup)
		snprintf(err, errlen, "%s:%u: %s (first at line %u)", rd_file_names[f], line, why, dup);
	else
		snprintf(err, errlen, "%s:%u: %s", rd_file_names[f], line, why);
	return -1;
}

/* "key = value" of version.txt. */
static int version_line(struct refdata *rd, const char *p, size_t n, const char **why)
{
	const char *eq = memchr(p, '=', n);
	if (!eq || eq == p || eq + 1 >= p + n || eq[-1] != ' ' || eq[1] != ' ') {
		*why = "expected \"key = value\"";
		return -1;
	}
	size_t kl = (size_t)(eq - 1 - p);
	const char *v = eq + 2;
	size_t vl = (size_t)(p + n - v);
	if (kl == 7 && !memcmp(p, "version", 7)) {
		if (rd->version[0]) {
			*why = "duplicate key";
			return -1;
		}
		if (!vl || vl > RD_MAX_VERSION) {
			*why = "version must be 1..RD_MAX_VERSION bytes";
			return -1;
		}
		for (size_t i = 0; i < vl; i++) {
			char ch = v[i];
			if (!((ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
			      ch == '.' || ch == '-' || ch == '_')) {
				*why = "version may hold only [A-Za-z0-9._-]";
				return -1;
			}
		}
		memcpy(rd->version, v, vl);
		rd->version[vl] = 0;
		return 0;
	}
	if (kl == 14 && !memcmp(p, "effective_date", 14)) {
		if (rd->effective_date[0]) {
			*why = "duplicate key";
			return -1;
		}
		if (!valid_date(v, vl)) {
			*why = "effective_date is not YYYY-MM-DD";
			return -1;
		}
		memcpy(rd->effective_date, v, vl);
		rd->effective_date[vl] = 0;
		return 0;
	}
	*why = "unknown key (version, effective_date)";
	return -1;
}

int refdata_parse(struct refdata *rd, enum rd_file f, const char *text, size_t len, char *err, size_t errlen)
{
	if ((unsigned)f >= RD_F_COUNT_)
		return fail(err, errlen, RD_F_VERSION, 0, "unknown file kind", 0);
	if (rd->have[f])
		return fail(err, errlen, f, 0, "file given twice", 0);
	if (len > RD_MAX_FILE)
		return fail(err, errlen, f, 0, "file larger than RD_MAX_FILE", 0);
	rd->have[f] = 1;
	int seen_header = 0;
	uint32_t line = 0;
	size_t pos = 0;
	while (pos < len) {
		line++;
		const char *p = text + pos;
		const char *nl = memchr(p, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - p) : len - pos;
		pos += n + (nl ? 1 : 0);
		if (n > RD_MAX_LINE)
			return fail(err, errlen, f, line, "line longer than RD_MAX_LINE", 0);
		for (size_t i = 0; i < n; i++) {
			unsigned char ch = (unsigned char)p[i];
			if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
				return fail(err, errlen, f, line, "control character (only TAB separates columns)", 0);
		}
		if (n == 0 || p[0] == '#')
			continue;
		const char *why = NULL;
		if (f == RD_F_VERSION) {
			if (version_line(rd, p, n, &why))
				return fail(err, errlen, f, line, why, 0);
			continue;
		}
		if (!seen_header) {
			int lay = -1;
			for (int k = 0; k < 2; k++)
				if (headers[f][k] && strlen(headers[f][k]) == n && !memcmp(headers[f][k], p, n))
					lay = k;
			if (lay < 0)
				return fail(err, errlen, f, line, "header line differs from the documented columns", 0);
			rd->dated[f] = (uint8_t)lay;
			seen_header = 1;
			continue;
		}
		struct field c[RD_MAX_COLS + 1];
		unsigned nc = 0;
		size_t s = 0;
		for (size_t i = 0; i <= n; i++) {
			if (i == n || p[i] == '\t') {
				if (nc == RD_MAX_COLS + 1) {
					nc++;
					break;
				}
				c[nc].p = p + s;
				c[nc].len = i - s;
				nc++;
				s = i + 1;
			}
		}
		if (nc != row_kinds[f].cols[rd->dated[f]])
			return fail(err, errlen, f, line, "wrong number of columns", 0);
		unsigned src_col = nc - (rd->dated[f] ? 4 : 2); /* source, as_of[, effective_from, effective_to] */
		for (unsigned i = 0; i < nc; i++)
			if (!c[i].len)
				return fail(err, errlen, f, line,
					    i >= src_col + 2 ? "effective_from/effective_to is not YYYY-MM-DD or -"
					    : i >= src_col ? "every figure needs its source and as_of"
							   : "empty column",
					    0);
		if (*row_count(rd, f) >= RD_MAX_ROWS)
			return fail(err, errlen, f, line, "more than RD_MAX_ROWS figure lines", 0);
		uint32_t dup = 0;
		if (row_kinds[f].fn(rd, c, line, &why, &dup))
			return fail(err, errlen, f, line, why, dup);
	}
	if (f == RD_F_VERSION && (!rd->version[0] || !rd->effective_date[0]))
		return fail(err, errlen, f, line, "version and effective_date are both required", 0);
	if (f != RD_F_VERSION && !seen_header)
		return fail(err, errlen, f, line, "no header line", 0);
	return 0;
}

/* A country's slot in the indexes: (first - 'A') * 26 + second - 'A', or
 * -1 when cc is not two capital letters. */
static int cc_slot(const char *cc)
{
	return cc[0] >= 'A' && cc[0] <= 'Z' && cc[1] >= 'A' && cc[1] <= 'Z' && !cc[2]
		       ? (cc[0] - 'A') * 26 + (cc[1] - 'A')
		       : -1;
}

/* Row numbers of n rows (each `stride` bytes, its country at `off`) by
 * country slot, a stable counting sort (file order within a country):
 * at[] the offsets (RD_CC_SLOTS + 1), idx[] the rows.  0, or -1 when a
 * row's country has no slot. */
static int cc_index(const void *rows, size_t stride, size_t off, uint32_t n, uint16_t *at, uint16_t *idx)
{
	uint16_t fill[RD_CC_SLOTS];
	memset(at, 0, (RD_CC_SLOTS + 1) * sizeof(*at));
	for (uint32_t i = 0; i < n; i++) {
		int sl = cc_slot((const char *)rows + i * stride + off);
		if (sl < 0)
			return -1;
		at[sl + 1]++;
	}
	for (int sl = 0; sl < RD_CC_SLOTS; sl++)
		at[sl + 1] = (uint16_t)(at[sl + 1] + at[sl]);
	memcpy(fill, at, sizeof(fill));
	for (uint32_t i = 0; i < n; i++)
		idx[fill[cc_slot((const char *)rows + i * stride + off)]++] = (uint16_t)i;
	return 0;
}

_Static_assert(RD_MAX_ROWS <= UINT16_MAX, "row numbers fit the indexes");

int refdata_finish(struct refdata *rd, char *err, size_t errlen)
{
	for (int f = 0; f < RD_F_COUNT_; f++)
		if (!rd->have[f] && !rd_file_optional((enum rd_file)f))
			return fail(err, errlen, (enum rd_file)f, 0, "file missing", 0);
	for (uint32_t i = 0; i < rd->n_excise; i++) {
		const struct rd_excise *e = &rd->excise[i];
		if (refdata_fx(rd, e->currency, NULL) < 0)
			return fail(err, errlen, RD_F_EXCISE, e->m.line, "currency has no rate in fx.tsv", 0);
	}
	for (uint32_t i = 0; i < rd->n_levies; i++)
		if (refdata_fx(rd, rd->levies[i].currency, NULL) < 0)
			return fail(err, errlen, RD_F_LEVIES, rd->levies[i].m.line, "currency has no rate in fx.tsv", 0);
	rd->indexed = !cc_index(rd->vat, sizeof(rd->vat[0]), offsetof(struct rd_vat, country), rd->n_vat, rd->vat_at,
				rd->vat_idx) &&
		      !cc_index(rd->excise, sizeof(rd->excise[0]), offsetof(struct rd_excise, country), rd->n_excise,
				rd->excise_at, rd->excise_idx);
	return 0;
}

int refdata_load_dir(const char *dir, struct refdata **out, char *err, size_t errlen)
{
	struct refdata *rd = refdata_new();
	char *buf = malloc(RD_MAX_FILE + 1);
	int rc = -1;
	if (!rd || !buf) {
		snprintf(err, errlen, "out of memory");
		goto done;
	}
	for (int f = 0; f < RD_F_COUNT_; f++) {
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s", dir, rd_file_names[f]);
		FILE *fp = fopen(path, "rb");
		if (!fp && errno == ENOENT && rd_file_optional((enum rd_file)f))
			continue; /* optional */
		if (!fp) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			goto done;
		}
		size_t n = fread(buf, 1, RD_MAX_FILE + 1, fp);
		int bad = ferror(fp);
		fclose(fp);
		if (bad) {
			snprintf(err, errlen, "%s: read error", path);
			goto done;
		}
		if (refdata_parse(rd, (enum rd_file)f, buf, n, err, errlen))
			goto done;
	}
	if (refdata_finish(rd, err, errlen))
		goto done;
	*out = rd;
	rd = NULL;
	rc = 0;
done:
	free(buf);
	refdata_free(rd);
	return rc;
}

/* A JSON string member without NUL bytes (which would cut the C string). */
static const char *json_text(const struct json_value *obj, const char *key, size_t *len)
{
	const struct json_value *v = json_get(obj, key);
	if (!v || v->type != JSON_STRING || strlen(v->u.str) != v->len)
		return NULL;
	*len = v->len;
	return v->u.str;
}

int refdata_from_json(const struct json_value *doc, struct refdata **out, char *err, size_t errlen)
{
	if (!doc || doc->type != JSON_OBJECT) {
		snprintf(err, errlen, "body: must be an object");
		return -1;
	}
	size_t vl = 0, dl = 0;
	const char *ver = json_text(doc, "version", &vl);
	const char *date = json_text(doc, "effective_date", &dl);
	if (!ver || !date) {
		snprintf(err, errlen, "%s: required, a string", ver ? "effective_date" : "version");
		return -1;
	}
	const struct json_value *files = json_get(doc, "files");
	if (!files || files->type != JSON_OBJECT) {
		snprintf(err, errlen, "files: required, an object of file name -> text");
		return -1;
	}
	for (uint32_t i = 0; i < files->len; i++) {
		const struct json_member *m = &files->u.members[i];
		int known = 0;
		for (int f = RD_F_VAT; f < RD_F_COUNT_; f++)
			known |= !strcmp(m->key, rd_file_names[f]);
		if (!known || m->value.type != JSON_STRING) {
			snprintf(err, errlen, "files: %.64s: %s", m->key,
				 known ? "must be a string"
				       : "unknown file (vat.tsv, excise.tsv, freight.tsv, fx.tsv, optional levies.tsv and caps.tsv)");
			return -1;
		}
	}
	struct refdata *rd = refdata_new();
	if (!rd) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* version and effective_date through the version.txt rules: line 1 is
	 * the version, line 2 the date (a newline inside either is refused by
	 * the control-character rule before it could fake a line). */
	char vt[2 * 64 + 48];
	int n = (vl <= 64 && dl <= 64) ? snprintf(vt, sizeof(vt), "version = %s\neffective_date = %s\n", ver, date) : -1;
	if (n < 0 || (size_t)n >= sizeof(vt)) {
		snprintf(err, errlen, "%s: too long", vl > 64 ? "version" : "effective_date");
		goto bad;
	}
	if (memchr(ver, '\n', vl) || memchr(date, '\n', dl)) {
		snprintf(err, errlen, "%s: control character", memchr(ver, '\n', vl) ? "version" : "effective_date");
		goto bad;
	}
	char verr[256];
	if (refdata_parse(rd, RD_F_VERSION, vt, (size_t)n, verr, sizeof(verr))) {
		/* "version.txt:<line>: why" -> "<field>: why" */
		const char *why = strstr(verr, ": ");
		snprintf(err, errlen, "%s: %s", rd->version[0] ? "effective_date" : "version", why ? why + 2 : verr);
		goto bad;
	}
	for (int f = RD_F_VAT; f < RD_F_COUNT_; f++) {
		const struct json_value *v = json_get(files, rd_file_names[f]);
		if (!v && rd_file_optional((enum rd_file)f))
			continue; /* optional */
		if (!v) {
			snprintf(err, errlen, "%s:0: file missing", rd_file_names[f]);
			goto bad;
		}
		if (refdata_parse(rd, (enum rd_file)f, v->u.str, v->len, err, errlen))
			goto bad;
	}
	if (refdata_finish(rd, err, errlen))
		goto bad;
	rd->source = RD_SRC_API;
	size_t ll = 0;
	const char *at = json_text(doc, "loaded_at", &ll);
	if (at && ll < sizeof(rd->loaded_at))
		memcpy(rd->loaded_at, at, ll + 1);
	*out = rd;
	return 0;
bad:
	refdata_free(rd);
	return -1;
}

/* ---- current version ---------------------------------------------------- */

static struct refdata *current;

const struct refdata *refdata_current(void)
{
	return current;
}

static uint32_t max_age_days = RD_DEFAULT_MAX_AGE_DAYS;

void refdata_set_current(struct refdata *rd)
{
	struct refdata *old = current;
	current = rd;
	refdata_free(old);
	uint32_t today = refdata_today();
	if (rd && refdata_is_stale(rd, today)) {
		char newest[11];
		rd_ymd_format(refdata_newest(rd), newest);
		log_warn("msg=\"reference data stale\" version=%s newest_figure=%s age_days=%lld max_age_days=%u", rd->version,
			 newest, (long long)refdata_age_days(rd, today), max_age_days);
	}
}

void refdata_set_max_age_days(uint32_t days)
{
	max_age_days = days < 1 ? 1 : days > RD_MAX_MAX_AGE_DAYS ? RD_MAX_MAX_AGE_DAYS : days;
}

/* Days since 1970-01-01 of a YYYYMMDD date (proleptic Gregorian). */
static int64_t days_of(uint32_t ymd)
{
	int64_t y = ymd / 10000, m = ymd / 100 % 100, d = ymd % 100;
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400, yoe = y - era * 400;
	int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

int64_t refdata_age_days(const struct refdata *rd, uint32_t today)
{
	uint32_t n = refdata_newest(rd);
	return n ? days_of(today) - days_of(n) : days_of(today);
}

int refdata_is_stale(const struct refdata *rd, uint32_t today)
{
	return refdata_age_days(rd, today) > (int64_t)max_age_days;
}

void refdata_metrics(struct buf *out)
{
	const struct refdata *rd = current;
	if (!rd)
		return;
	uint32_t today = refdata_today();
	buf_printf(out,
		   "# HELP wm_reference_data_age_days Days since the newest VAT/excise figure of the active version.\n"
		   "# TYPE wm_reference_data_age_days gauge\nwm_reference_data_age_days %lld\n"
		   "# TYPE wm_reference_data_max_age_days gauge\nwm_reference_data_max_age_days %u\n"
		   "# HELP wm_reference_data_stale 1 when the newest figure is older than --ref-max-age-days.\n"
		   "# TYPE wm_reference_data_stale gauge\nwm_reference_data_stale %d\n",
		   (long long)refdata_age_days(rd, today), max_age_days, refdata_is_stale(rd, today));
}

/* ---- lookups ------------------------------------------------------------ */

/* The rows a lookup of `country` must look at: [*from, *to) of idx (NULL:
 * the rows themselves) -- the country's slice of an index, or every row
 * of a version without indexes. */
static void cc_range(const struct refdata *rd, const uint16_t *at, uint32_t n, const char *country, uint32_t *from,
		     uint32_t *to)
{
	int sl = rd->indexed ? cc_slot(country) : -1;
	*from = rd->indexed ? (sl < 0 ? 0 : at[sl]) : 0;
	*to = rd->indexed ? (sl < 0 ? 0 : at[sl + 1]) : n;
}

#define ROW_AT(rd, tbl, k) (&(rd)->tbl[(rd)->indexed ? (rd)->tbl##_idx[k] : (k)])

const struct rd_vat *refdata_vat(const struct refdata *rd, const char *country)
{
	uint32_t from, to;
	cc_range(rd, rd->vat_at, rd->n_vat, country, &from, &to);
	for (uint32_t k = from; k < to; k++)
		if (cc_eq(country, ROW_AT(rd, vat, k)->country))
			return ROW_AT(rd, vat, k);
	return NULL;
}

const struct rd_vat *refdata_vat_at(const struct refdata *rd, const char *country, const char *region,
				    int category, uint32_t ymd)
{
	const struct rd_vat *dflt = NULL;
	uint32_t from, to;
	cc_range(rd, rd->vat_at, rd->n_vat, country, &from, &to);
	for (uint32_t k = from; k < to; k++) {
		const struct rd_vat *v = ROW_AT(rd, vat, k);
		if (!cc_eq(country, v->country) || strcmp(v->region, region) || ymd < v->from || ymd > v->to)
			continue;
		if (v->product == category)
			return v;
		if (v->product == RD_VP_DEFAULT)
			dflt = v;
	}
	return dflt;
}

int refdata_excise(const struct refdata *rd, const char *country, int category, uint32_t abv, uint32_t ymd,
		   const struct rd_excise **out)
{
	uint32_t from, to;
	cc_range(rd, rd->excise_at, rd->n_excise, country, &from, &to);
	for (uint32_t k = from; k < to; k++) {
		const struct rd_excise *e = ROW_AT(rd, excise, k);
		if (e->category == category && abv >= e->abv_min && abv <= e->abv_max && ymd >= e->from &&
		    ymd <= e->to && cc_eq(country, e->country)) {
			*out = e;
			return e->not_found ? RD_NOT_PUBLISHED : RD_FOUND;
		}
	}
	*out = NULL;
	return RD_NO_ENTRY;
}

int refdata_excise_category_known(const struct refdata *rd, const char *country, int category, uint32_t ymd)
{
	uint32_t from, to;
	cc_range(rd, rd->excise_at, rd->n_excise, country, &from, &to);
	for (uint32_t k = from; k < to; k++) {
		const struct rd_excise *e = ROW_AT(rd, excise, k);
		if (e->category == category && ymd >= e->from && ymd <= e->to && cc_eq(country, e->country))
			return 1;
	}
	return 0;
}

const struct rd_freight *refdata_freight(const struct refdata *rd, const char *origin, const char *destination,
					 unsigned box_units)
{
	const struct rd_freight *f = freight_exact(rd, origin, destination, box_units);
	if (f)
		return f;
	const char *zo = refdata_freight_zone(origin), *zd = refdata_freight_zone(destination);
	return zo && zd ? freight_exact(rd, zo, zd, box_units) : NULL;
}

int64_t refdata_fx(const struct refdata *rd, const char *currency, const struct rd_fx **row)
{
	if (row)
		*row = NULL;
	if (!strcmp(currency, "EUR"))
		return RD_FX_ONE;
	for (uint32_t i = 0; i < rd->n_fx; i++)
		if (!strcmp(rd->fx[i].currency, currency)) {
			if (row)
				*row = &rd->fx[i];
			return rd->fx[i].per_eur_e6;
		}
	return -1;
}

int refdata_is_eu(const char *country)
{
	if (strlen(country) != 2)
		return 0;
	for (const char *p = eu_members; *p; p += p[2] ? 3 : 2)
		if (p[0] == country[0] && p[1] == country[1])
			return 1;
	return 0;
}

const char *refdata_country_currency(const char *country)
{
	for (size_t i = 0; i < sizeof(country_currency) / sizeof(country_currency[0]); i++)
		if (cc_eq(country, country_currency[i].cc))
			return country_currency[i].cur;
	return NULL;
}

/* ---- dates and regions --------------------------------------------------- */

uint32_t refdata_today(void)
{
#ifdef WM_TESTING
	const char *path = getenv("WM_TEST_DATE_FILE");
	if (path && *path) {
		char b[16] = "";
		FILE *fp = fopen(path, "rb");
		size_t n = fp ? fread(b, 1, sizeof(b) - 1, fp) : 0;
		if (fp)
			fclose(fp);
		while (n && (b[n - 1] == '\n' || b[n - 1] == '\r'))
			n--;
		uint32_t d = rd_ymd_parse(b, n);
		if (d)
			return d;
	}
#endif
	/* civil date of the UTC day (Howard Hinnant's days_from_civil inverse) */
	int64_t z = (int64_t)(wall_ms() / 86400000ull) + 719468;
	int64_t era = z / 146097, doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t y = yoe + era * 400, doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153, d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
	y += m <= 2;
	return (uint32_t)(y * 10000 + m * 100 + d);
}

/* as_of (YYYY, YYYY-MM, YYYY-MM-DD) as YYYYMMDD, missing parts = 01. */
static uint32_t as_of_ymd(const char *a)
{
	size_t n = strlen(a);
	uint32_t y = (uint32_t)strtoul(a, NULL, 10);
	uint32_t m = n >= 7 ? (uint32_t)num2(a + 5) : 1, d = n == 10 ? (uint32_t)num2(a + 8) : 1;
	return y * 10000u + m * 100u + d;
}

uint32_t refdata_newest(const struct refdata *rd)
{
	uint32_t best = 0;
	for (uint32_t i = 0; i < rd->n_vat; i++) {
		uint32_t a = as_of_ymd(rd->vat[i].m.as_of), f = rd->vat[i].from;
		best = a > best ? a : best;
		best = f > best ? f : best;
	}
	for (uint32_t i = 0; i < rd->n_excise; i++) {
		uint32_t a = as_of_ymd(rd->excise[i].m.as_of), f = rd->excise[i].from;
		best = a > best ? a : best;
		best = f > best ? f : best;
	}
	return best;
}

const char *refdata_region_of_postal(const char *country, const char *postal)
{
	for (size_t i = 0; i < N_VAT_REGIONS; i++) {
		if (!cc_eq(country, vat_regions[i].cc))
			continue;
		/* leading digits: "9000-123" (PT) and "35001" (ES) alike */
		uint32_t v = 0;
		unsigned k = 0;
		for (; k < vat_regions[i].digits; k++) {
			if (postal[k] < '0' || postal[k] > '9')
				return NULL;
			v = v * 10 + (uint32_t)(postal[k] - '0');
		}
		if (v >= vat_regions[i].lo && v <= vat_regions[i].hi)
			return vat_regions[i].region;
	}
	return "";
}

const char *refdata_hs_code(int category, int64_t volume_ul)
{
	if (category == RD_CAT_SPARKLING)
		return "220410";
	return volume_ul <= 2000000 ? "220421" : volume_ul <= 10000000 ? "220422" : "220429";
}
