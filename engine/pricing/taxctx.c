/*
 * taxctx.c -- the tax/duty context of a route (see taxctx.h).  Read-only
 * over the current reference version: no table rows, no record quota rows
 * beyond the one document returned.
 *
 * Contract: origin and destination are ISO 3166-1 alpha-2 (400
 * invalid_query otherwise); a destination the reference data has no VAT
 * rate or consumer currency for is a 422 no_reference_data naming it.
 * Excise rows are listed as published, NOT_FOUND rows with "rate": null and
 * "status": "not_found" -- the caller sees the gap rather than a number;
 * each row says the days it is in force and whether it is in force today.
 *
 * Spec 2.6 fields (issue 23 item 7), from optional query parameters:
 *   category=still|sparkling|fortified, abv=<% vol, <= 22.00, 2 decimals>,
 *   volume_liters=<<= 30, 6 decimals>, location_type=<spec 2.6 enum>,
 *   incoterm=<EXW|FCA|CPT|CIP|DAP|DPU|DDP|...> (echoed).
 *  - hs_tariff_code: HS 2022 heading 22.04 (WCO; EU CN chapter 22):
 *    2204.10 sparkling; other wine 2204.21 in containers <= 2 l, 2204.22
 *    <= 10 l, 2204.29 larger (fortified/liqueur wine is "other wine").
 *    Without category, hs_tariff_codes per category at 0.75 l.
 *  - duty_status by the shipping location's type: goods in a BONDED_WAREHOUSE
 *    move under excise suspension (Council Directive (EU) 2020/262), so
 *    EXCISE_SUSPENDED; IN_TRANSIT_CONTAINER is PRE_ARRIVAL; every other type
 *    holds duty-paid stock, DUTY_PAID (also without location_type: a
 *    consumer delivery is duty paid in the destination).
 *  - volumetric_metrics: litres of pure alcohol = volume x abv / 100, exact;
 *    weights are not known to the engine (null).
 *  - tax_classification: the VAT row in force today for the category
 *    (product row, else default): sales_tax_category_code = that product,
 *    vat_rate_type standard / reduced (below the default rate).
 *  - cross_border_terms: incoterm as given; import duty 0 inside the EU,
 *    NOT FOUND otherwise; preferential agreement NOT FOUND in the references.
 *  - packaging_and_environmental_levies: the destination's rows of the
 *    optional levies.tsv (NO beverage-packaging taxes, BE packaging levy),
 *    reported and never charged (their base is not modelled);
 *    container_deposit_fee and the EPR code are null (not in the references).
 */
#include "engine/pricing/taxctx.h"

#include <string.h>

#include "engine/edge/api.h"
#include "engine/base/iso.h"
#include "engine/stock/location.h"
#include "engine/pricing/price.h"
#include "engine/pricing/refdata.h"
#include "net/json.h"

/* Movement kind by (origin in EU, destination in EU). */
static const char *movement(const char *o, const char *d)
{
	if (!strcmp(o, d))
		return "domestic";
	static const char *const kinds[2][2] = {{"third_country", "import_into_eu"},
						 {"export_from_eu", "intra_eu"}};
	return kinds[refdata_is_eu(o)][refdata_is_eu(d)];
}

static int country_param(struct api_ctx *c, const char *key, char out[3])
{
	char v[8];
	int n = api_query(c, key, v, sizeof(v));
	if (n != 2 || !iso_country_valid(v, 2)) {
		api_error(c, 400, "invalid_query",
			  !strcmp(key, "origin") ? "origin must be an ISO 3166-1 alpha-2 country code"
						 : "destination must be an ISO 3166-1 alpha-2 country code");
		return -1;
	}
	memcpy(out, v, 2);
	out[2] = 0;
	return 0;
}

static void meta(struct jw *w, const struct rd_meta *m)
{
	jw_kstr(w, "source", m->source);
	jw_kstr(w, "as_of", m->as_of);
}

static void in_force(struct jw *w, uint32_t from, uint32_t to, uint32_t today)
{
	char d[11];
	rd_ymd_format(from, d);
	if (from == RD_DATE_MIN)
		jw_knull(w, "effective_from");
	else
		jw_kstr(w, "effective_from", d);
	rd_ymd_format(to, d);
	if (to >= RD_DATE_MAX)
		jw_knull(w, "effective_to");
	else
		jw_kstr(w, "effective_to", d);
	jw_kbool(w, "in_force", today >= from && today <= to);
}

static const char *const category_names_z[] = {"still", "sparkling", "fortified", NULL};

/* Duty status of stock shipped from a location of each type (spec 2.6 enum). */
const char *const taxctx_duty_by_type[LOC_N_TYPE] = {
	[LT_WINERY_ESTATE] = "DUTY_PAID",	   [LT_BONDED_WAREHOUSE] = "EXCISE_SUSPENDED",
	[LT_DUTY_PAID_WAREHOUSE] = "DUTY_PAID",	   [LT_RETAIL_STORE] = "DUTY_PAID",
	[LT_3PL_FULFILLMENT_CENTER] = "DUTY_PAID", [LT_CONSIGNMENT_CELLAR] = "DUTY_PAID",
	[LT_IN_TRANSIT_CONTAINER] = "PRE_ARRIVAL",
};

/* packaging_and_environmental_levies: the destination's levies.tsv rows
 * (every schedule, each saying whether it is in force), reported, never
 * charged; container_deposit_fee and the EPR code are not in the references. */
static void write_levies(struct jw *w, const struct refdata *rd, const char *d, uint32_t today)
{
	jw_key(w, "packaging_and_environmental_levies");
	jw_obj_begin(w);
	jw_knull(w, "container_deposit_fee");
	jw_knull(w, "epr_recycling_category_code");
	jw_kbool(w, "charged_in_quotes", 0);
	unsigned n = 0;
	jw_key(w, "levies");
	jw_arr_begin(w);
	for (uint32_t i = 0; i < rd->n_levies; i++) {
		const struct rd_levy *l = &rd->levies[i];
		if (strcmp(l->country, d))
			continue;
		n++;
		jw_obj_begin(w);
		jw_kstr(w, "name", l->name);
		jw_kstr(w, "basis", rd_levy_basis_names[l->basis]);
		jw_key(w, "rate");
		if (l->not_found)
			jw_null(w);
		else
			jw_fixed(w, l->rate_e4, RD_RATE_SCALE);
		jw_kstr(w, "currency", l->currency);
		jw_kstr(w, "status", l->not_found ? "not_found" : "published");
		meta(w, &l->m);
		in_force(w, l->from, l->to, today);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_kstr(w, "status", n ? "listed" : "not_found");
	jw_obj_end(w);
}

/* Optional exact decimal query parameter: 0 absent (*out untouched), 1
 * set, -1 with a 400 written (not a plain decimal of <= scale places in
 * [min, max]). */
static int decimal_param(struct api_ctx *c, const char *key, unsigned scale, int64_t min, int64_t max, int64_t *out)
{
	char v[32];
	int n = api_query(c, key, v, sizeof(v));
	if (n == -1)
		return 0;
	int ok = n > 0;
	unsigned dots = 0, frac = 0;
	for (int i = 0; ok && i < n; i++) {
		if (v[i] == '.')
			dots++;
		else if (v[i] < '0' || v[i] > '9')
			ok = 0;
		else if (dots)
			frac++;
	}
	int64_t x = 0;
	if (!ok || dots > 1 || frac > scale || v[0] == '.' || v[n - 1] == '.' ||
	    json_text_to_fixed(v, (size_t)n, scale, &x) || x < min || x > max) {
		api_error(c, 400, "invalid_query", !strcmp(key, "abv") ? "abv must be a decimal 0..22 (% vol)"
									: "volume_liters must be a decimal above 0, at most 30");
		return -1;
	}
	*out = x;
	return 1;
}

static void tax_context(struct api_ctx *c)
{
	char o[3], d[3];
	if (country_param(c, "origin", o) || country_param(c, "destination", d))
		return;
	const struct refdata *rd = refdata_current();
	if (!rd) {
		api_error(c, 503, "reference_data_unavailable", "no reference-data version is loaded");
		return;
	}
	int cat = -1, lt = -1;
	int64_t abv = -1, vol = -1;
	char incoterm[8] = "";
	if (api_query_enum(c, "category", category_names_z, &cat) || api_query_enum(c, "location_type", loc_type_names, &lt) ||
	    decimal_param(c, "abv", 2, 0, RD_MAX_ABV, &abv) < 0 ||
	    decimal_param(c, "volume_liters", 6, 1, PRICE_MAX_VOLUME_UL, &vol) < 0)
		return;
	int il = api_query(c, "incoterm", incoterm, sizeof(incoterm));
	if (il == -2 || (il >= 0 && (il != 3 || incoterm[0] < 'A' || incoterm[0] > 'Z' || incoterm[1] < 'A' ||
				     incoterm[1] > 'Z' || incoterm[2] < 'A' || incoterm[2] > 'Z'))) {
		api_error(c, 400, "invalid_query", "incoterm must be a three-letter Incoterms 2020 code");
		return;
	}
	uint32_t today = refdata_today();
	const struct rd_vat *dflt = refdata_vat_at(rd, d, "", RD_VP_DEFAULT, today);
	const struct rd_vat *vat = cat >= 0 ? refdata_vat_at(rd, d, "", cat, today) : dflt;
	if (!vat)
		vat = refdata_vat(rd, d);
	const char *cur = refdata_country_currency(d);
	if (!vat || !cur) {
		api_error(c, 422, "no_reference_data",
			  "the reference data has no VAT rate or consumer currency for this destination");
		return;
	}
	if (api_read_row(c))
		return;
	int intra = refdata_is_eu(o) && refdata_is_eu(d);
	int domestic = !strcmp(o, d);
	struct jw *w = &c->w;
	c->rs->status = 200;
	jw_obj_begin(w);
	jw_kstr(w, "origin", o);
	jw_kstr(w, "destination", d);
	jw_kstr(w, "country_of_origin", o);
	jw_kstr(w, "movement", movement(o, d));
	jw_kstr(w, "currency", cur);
	if (cat >= 0)
		jw_kstr(w, "hs_tariff_code", refdata_hs_code(cat, vol > 0 ? vol : 750000));
	else
		jw_knull(w, "hs_tariff_code");
	jw_key(w, "hs_tariff_codes");
	jw_obj_begin(w);
	for (int k = 0; k < RD_CAT_COUNT_; k++)
		jw_var_str(w, rd_category_names[k], refdata_hs_code(k, vol > 0 ? vol : 750000));
	jw_obj_end(w);
	/* consumer deliveries without a location: duty paid in the destination */
	jw_kstr(w, "duty_status", lt >= 0 ? taxctx_duty_by_type[lt] : "DUTY_PAID");
	jw_kstr(w, "duty_status_basis", lt >= 0 ? "location_type" : "consumer_delivery");
	jw_key(w, "duty_status_by_location_type");
	jw_obj_begin(w);
	for (int k = 0; k < LOC_N_TYPE; k++)
		jw_var_str(w, loc_type_names[k], taxctx_duty_by_type[k]);
	jw_obj_end(w);
	jw_kstr(w, "liters_pure_alcohol", "volume_liters x abv_percentage / 100");
	jw_key(w, "volumetric_metrics");
	jw_obj_begin(w);
	jw_key(w, "volume_liters");
	if (vol > 0)
		jw_fixed(w, vol, 6);
	else
		jw_null(w);
	jw_key(w, "abv_percentage");
	if (abv >= 0)
		jw_fixed(w, abv, 2);
	else
		jw_null(w);
	jw_key(w, "liters_pure_alcohol"); /* ul x hundredths of % / 10^4 = ul of alcohol: 6 decimals of a litre */
	if (vol > 0 && abv >= 0 && (vol * abv) % 10000 == 0)
		jw_fixed(w, vol * abv / 10000, 6);
	else if (vol > 0 && abv >= 0)
		jw_fixed(w, vol * abv, 10);
	else
		jw_null(w);
	jw_knull(w, "net_weight_kg");
	jw_knull(w, "gross_weight_kg");
	jw_obj_end(w);
	jw_key(w, "tax_classification");
	jw_obj_begin(w);
	jw_kstr(w, "vat_rate_type", dflt && vat->rate_e4 < dflt->rate_e4 ? "reduced" : "standard");
	jw_kstr(w, "sales_tax_category_code", rd_vat_product_names[vat->product]);
	if (cat >= 0)
		jw_kstr(w, "excise_tax_category", rd_category_codes[cat]);
	else
		jw_knull(w, "excise_tax_category");
	jw_kfixed(w, "vat_rate_percent", vat->rate_e4, RD_VAT_SCALE);
	jw_kstr(w, "basis", "percent");
	meta(w, &vat->m);
	in_force(w, vat->from, vat->to, today);
	jw_obj_end(w);
	jw_key(w, "excise");
	jw_arr_begin(w);
	for (uint32_t i = 0; i < rd->n_excise; i++) {
		const struct rd_excise *e = &rd->excise[i];
		if (strcmp(e->country, d) || (cat >= 0 && e->category != cat) ||
		    (abv >= 0 && (abv < e->abv_min || abv > e->abv_max)))
			continue;
		jw_obj_begin(w);
		jw_kstr(w, "category", rd_category_names[e->category]);
		jw_kstr(w, "excise_tax_category", rd_category_codes[e->category]);
		jw_kfixed(w, "abv_min", e->abv_min, 2);
		jw_kfixed(w, "abv_max", e->abv_max, 2);
		jw_kstr(w, "basis", rd_basis_names[e->basis]);
		jw_key(w, "rate");
		if (e->not_found)
			jw_null(w);
		else
			jw_fixed(w, e->rate_e4, RD_RATE_SCALE);
		jw_kstr(w, "currency", e->currency);
		jw_kstr(w, "status", e->not_found ? "not_found" : "published");
		meta(w, &e->m);
		in_force(w, e->from, e->to, today);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "cross_border_terms");
	jw_obj_begin(w);
	jw_key(w, "import_duty_rate_percent");
	if (intra || domestic)
		jw_int(w, 0);
	else
		jw_null(w);
	jw_kstr(w, "import_duty_status", intra || domestic ? "not_applicable" : "not_found");
	if (il == 3)
		jw_kstr(w, "incoterm", incoterm);
	else
		jw_knull(w, "incoterm");
	jw_knull(w, "preferential_trade_agreement_code");
	jw_kstr(w, "preferential_trade_agreement_status", intra || domestic ? "not_applicable" : "not_found");
	jw_obj_end(w);
	write_levies(w, rd, d, today);
	jw_key(w, "reference_data");
	jw_obj_begin(w);
	jw_kstr(w, "version", rd->version);
	jw_kstr(w, "effective_date", rd->effective_date);
	char td[11];
	rd_ymd_format(today, td);
	jw_kstr(w, "priced_on", td);
	jw_obj_end(w);
	jw_obj_end(w);
}

const struct route taxctx_routes[] = {
	{HTTP_M_GET, "/v1/tax-context", tax_context, SC_READ_OFFERS, ACT_READ_OFFERS,
	 "Tax/duty context for a route (VAT, excise regime by category, sources)", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
