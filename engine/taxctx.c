/*
 * taxctx.c -- the tax/duty context of a route (see taxctx.h).  Read-only
 * over the current reference version: no table rows, no record quota rows
 * beyond the one document returned.
 *
 * Contract: origin and destination are ISO 3166-1 alpha-2 (400
 * invalid_query otherwise); a destination the reference data has no VAT
 * rate or consumer currency for is a 422 no_reference_data naming it.
 * Excise rows are listed as published, NOT_FOUND rows with "rate": null and
 * "status": "not_found" -- the caller sees the gap rather than a number.
 */
#include "engine/taxctx.h"

#include <string.h>

#include "engine/api.h"
#include "engine/iso.h"
#include "engine/refdata.h"

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
	const struct rd_vat *vat = refdata_vat(rd, d);
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
	jw_kstr(w, "duty_status", "DUTY_PAID"); /* consumer deliveries: duty paid in the destination */
	jw_kstr(w, "liters_pure_alcohol", "volume_liters x abv_percentage / 100");
	jw_key(w, "tax_classification");
	jw_obj_begin(w);
	jw_kstr(w, "vat_rate_type", "standard");
	jw_key(w, "vat_rate_percent");
	jw_fixed(w, vat->rate_e4, RD_VAT_SCALE);
	jw_kstr(w, "basis", "percent");
	meta(w, &vat->m);
	jw_obj_end(w);
	jw_key(w, "excise");
	jw_arr_begin(w);
	for (uint32_t i = 0; i < rd->n_excise; i++) {
		const struct rd_excise *e = &rd->excise[i];
		if (strcmp(e->country, d))
			continue;
		jw_obj_begin(w);
		jw_kstr(w, "category", rd_category_names[e->category]);
		jw_kstr(w, "excise_tax_category", rd_category_codes[e->category]);
		jw_key(w, "abv_min");
		jw_fixed(w, e->abv_min, 2);
		jw_key(w, "abv_max");
		jw_fixed(w, e->abv_max, 2);
		jw_kstr(w, "basis", rd_basis_names[e->basis]);
		jw_key(w, "rate");
		if (e->not_found)
			jw_null(w);
		else
			jw_fixed(w, e->rate_e4, RD_RATE_SCALE);
		jw_kstr(w, "currency", e->currency);
		jw_kstr(w, "status", e->not_found ? "not_found" : "published");
		meta(w, &e->m);
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
	jw_obj_end(w);
	jw_key(w, "reference_data");
	jw_obj_begin(w);
	jw_kstr(w, "version", rd->version);
	jw_kstr(w, "effective_date", rd->effective_date);
	jw_obj_end(w);
	jw_obj_end(w);
}

const struct route taxctx_routes[] = {
	{HTTP_M_GET, "/v1/tax-context", tax_context, SC_READ_OFFERS, ACT_READ_OFFERS,
	 "Tax/duty context for a route (VAT, excise regime by category, sources)", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
