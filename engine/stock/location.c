/*
 * location.c -- stock locations (spec 2.5, 2.6, 4.2).  The spec gives the
 * fields and the routes POST /v1/locations and GET/POST
 * /v1/stock-locations; the decisions here are also in api/openapi.json:
 *
 *  - POST /v1/locations and POST /v1/stock-locations are one operation
 *    (the spec names both); GET /v1/stock-locations/{id} is an extension.
 *  - owner_entity_id: an originator or a fulfiller (a 3PL runs warehouses
 *    for others).  It defaults to the caller; a partner names itself only
 *    (422 `own`); operators must name one (422 `required` / `owner_role`).
 *    Another owner's location is a 404 on read, the same as an unknown id.
 *  - gln optional (an in-transit container rarely has one), 13 digits with
 *    the GS1 mod-10 check digit, unique among locations (409 gln_taken).
 *  - location_type: the spec's seven values, required.  name 1..120 bytes,
 *    required.  address {line1, city, postal_code, country} required,
 *    {line2, region} optional.  The location lives on the shard of
 *    address.country (DESIGN.md 2); tax_jurisdiction.country defaults to it
 *    and must equal it (422 `matches_address`).
 *  - geo_coordinates {lat, lon} optional, both required together, exact
 *    decimals with at most 6 places (never a double), |lat| <= 90,
 *    |lon| <= 180, stored as integer micro-degrees.
 *  - tax_jurisdiction {country, state, excise_tax_zone_id, eu_seed_number}:
 *    eu_seed_number is the shape of an EMCS SEED excise number (2 letters +
 *    11 letters/digits, upper case); the register itself is not consulted.
 *  - capabilities: the spec's four flags as an object of booleans (absent
 *    = false); an array of the flag names is accepted as well.  Reads
 *    always return the object.
 *  - status active | inactive (default active); inventory can only be
 *    declared at an active location.  No PATCH yet.
 *  - Every failing field is listed at once (422 validation_failed).
 *    Event stock_location.created carries the document.
 *
 * Indexes (t->ext): by_gln hash (uniqueness) and by_owner "owner NUL id"
 * (a partner's list without scanning the table).
 */
#include "engine/stock/location.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/edge/fields.h"
#include "engine/base/log.h"
#include "engine/catalogue/partner.h"
#include "engine/storage/resources.h"
#include "engine/catalogue/wine_ident.h"

const char *const loc_type_names[] = {"WINERY_ESTATE",	      "BONDED_WAREHOUSE",   "DUTY_PAID_WAREHOUSE",
				      "RETAIL_STORE",	      "3PL_FULFILLMENT_CENTER", "CONSIGNMENT_CELLAR",
				      "IN_TRANSIT_CONTAINER", NULL};
const char *const loc_cap_names[] = {"supports_d2c_fulfillment", "supports_b2b_wholesale", "supports_bonded_transfer",
				     "temperature_controlled", NULL};
const char *const loc_status_names[] = {"active", "inactive", NULL};

#define LOC_TS_MAX 32

static const char *const loc_known[] = {"owner_entity_id", "gln", "location_type", "name", "address",
					"geo_coordinates", "tax_jurisdiction", "capabilities", "status",
					"id", "location_id", "created_at", "updated_at", NULL};
static const char *const loc_read_only[] = {"id", "location_id", "created_at", "updated_at", NULL};
static const char *const loc_required[] = {"location_type", "name", "address", NULL};
static const char *const addr_known[] = {"line1", "line2", "city", "postal_code", "region", "country", NULL};
static const char *const geo_known[] = {"lat", "lon", NULL};
static const char *const tax_known[] = {"country", "state", "excise_tax_zone_id", "eu_seed_number", NULL};

/* Everything one location document holds. */
struct loc_vals {
	char id[ID_MAX_LEN], owner_id[ID_MAX_LEN];
	char gln[LOC_GLN_LEN + 1];
	int type, status;
	char name[LOC_NAME_MAX + 1];
	char line1[LOC_LINE_MAX + 1], line2[LOC_LINE_MAX + 1], city[LOC_CITY_MAX + 1];
	char postal[LOC_POSTAL_MAX + 1], region[LOC_CITY_MAX + 1], country[3];
	int has_geo;
	int64_t lat, lon;
	char tax_country[3], state[LOC_CITY_MAX + 1], zone[LOC_ZONE_MAX + 1], seed[LOC_SEED_LEN + 1];
	unsigned caps;
	char created_at[LOC_TS_MAX], updated_at[LOC_TS_MAX];
};

/* ---- pure checks ------------------------------------------------------------ */

enum loc_key_err loc_gln_check(const char *s, size_t len)
{
	if (len != LOC_GLN_LEN)
		return LOC_KEY_LENGTH;
	for (size_t i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return LOC_KEY_CHARS;
	return wid_gtin_check_digit(s, LOC_GLN_LEN - 1) == s[LOC_GLN_LEN - 1] - '0' ? LOC_KEY_OK : LOC_KEY_CHECK;
}

static int is_upper(char ch) { return ch >= 'A' && ch <= 'Z'; }
static int is_digit(char ch) { return ch >= '0' && ch <= '9'; }

enum loc_key_err loc_seed_check(const char *s, size_t len)
{
	if (len != LOC_SEED_LEN)
		return LOC_KEY_LENGTH;
	for (size_t i = 0; i < len; i++)
		if (!is_upper(s[i]) && (i < 2 || !is_digit(s[i])))
			return LOC_KEY_CHARS;
	return LOC_KEY_OK;
}

/* Every byte in the allowed set: letters, digits and the extra bytes. */
static int only_chars(const char *s, const char *extra)
{
	for (; *s; s++)
		if (!is_upper(*s) && !is_digit(*s) && !(*s >= 'a' && *s <= 'z') && !strchr(extra, *s))
			return 0;
	return 1;
}

/* ---- reading (c NULL: a stored document) -------------------------------------- */

static void opt_str(struct api_ctx *c, const struct json_value *o, const char *name, const char *path, char *out,
		    size_t max)
{
	if (fld_str(c, o, name, path, out, max) != FLD_SET)
		out[0] = 0;
}

/* An object member: the object, NULL when absent/null (a type error noted). */
static const struct json_value *sub_obj(struct api_ctx *c, const struct json_value *o, const char *name)
{
	const struct json_value *v = json_get(o, name);
	if (!v || v->type == JSON_NULL)
		return NULL;
	if (v->type != JSON_OBJECT) {
		if (c)
			api_field_error(c, name, "type", "must be an object");
		return NULL;
	}
	return v;
}

static void read_address(struct api_ctx *c, const struct json_value *o, struct loc_vals *v)
{
	const struct json_value *a = sub_obj(c, o, "address");
	if (!a)
		return;
	fld_reject_unknown(c, a, addr_known, "address.");
	static const struct {
		const char *name, *path;
		size_t off, max;
		int required;
	} parts[] = {
		{"line1", "address.line1", offsetof(struct loc_vals, line1), LOC_LINE_MAX, 1},
		{"line2", "address.line2", offsetof(struct loc_vals, line2), LOC_LINE_MAX, 0},
		{"city", "address.city", offsetof(struct loc_vals, city), LOC_CITY_MAX, 1},
		{"postal_code", "address.postal_code", offsetof(struct loc_vals, postal), LOC_POSTAL_MAX, 1},
		{"region", "address.region", offsetof(struct loc_vals, region), LOC_CITY_MAX, 0},
	};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		char *out = (char *)v + parts[i].off;
		int r = fld_str(c, a, parts[i].name, parts[i].path, out, parts[i].max);
		if (r != FLD_SET)
			out[0] = 0;
		if (c && parts[i].required && (r == FLD_ABSENT || r == FLD_NULL))
			api_field_error(c, parts[i].path, "required", "is required");
	}
	if (c && v->postal[0] && !only_chars(v->postal, " -"))
		api_field_error(c, "address.postal_code", "format", "letters, digits, spaces and hyphens only");
	int r = fld_country(c, a, "country", "address.country", v->country);
	if (r != FLD_SET)
		v->country[0] = 0;
	if (c && (r == FLD_ABSENT || r == FLD_NULL))
		api_field_error(c, "address.country", "required", "is required");
}

/* One coordinate: exact at LOC_GEO_SCALE, |x| <= max. */
static void read_coord(struct api_ctx *c, const struct json_value *g, const char *name, const char *path, int64_t max,
		       int64_t *out, int *ok)
{
	const struct json_value *m = json_get(g, name);
	int64_t x = 0, wide = 0;
	if (!m || m->type == JSON_NULL) {
		if (c)
			api_field_error(c, path, "required", "lat and lon go together");
		*ok = 0;
	} else if (m->type != JSON_NUMBER) {
		if (c)
			api_field_error(c, path, "type", "must be a number (decimal degrees)");
		*ok = 0;
	} else if (json_to_fixed(m, LOC_GEO_SCALE, &x)) {
		if (c && json_to_fixed(m, 15, &wide) == 0)
			api_field_error(c, path, "precision", "at most %u decimals", LOC_GEO_SCALE);
		else if (c)
			api_field_error(c, path, "range", "must be -%lld to %lld degrees", (long long)(max / 1000000),
					(long long)(max / 1000000));
		*ok = 0;
	} else if (x < -max || x > max) {
		if (c)
			api_field_error(c, path, "range", "must be -%lld to %lld degrees", (long long)(max / 1000000),
					(long long)(max / 1000000));
		*ok = 0;
	} else
		*out = x;
}

static void read_geo(struct api_ctx *c, const struct json_value *o, struct loc_vals *v)
{
	const struct json_value *g = sub_obj(c, o, "geo_coordinates");
	v->has_geo = 0;
	if (!g)
		return;
	fld_reject_unknown(c, g, geo_known, "geo_coordinates.");
	int ok = 1;
	read_coord(c, g, "lat", "geo_coordinates.lat", LOC_LAT_MAX, &v->lat, &ok);
	read_coord(c, g, "lon", "geo_coordinates.lon", LOC_LON_MAX, &v->lon, &ok);
	v->has_geo = ok;
}

static void read_tax(struct api_ctx *c, const struct json_value *o, struct loc_vals *v)
{
	const struct json_value *t = sub_obj(c, o, "tax_jurisdiction");
	v->tax_country[0] = v->state[0] = v->zone[0] = v->seed[0] = 0;
	if (!t)
		return;
	fld_reject_unknown(c, t, tax_known, "tax_jurisdiction.");
	if (fld_country(c, t, "country", "tax_jurisdiction.country", v->tax_country) != FLD_SET)
		v->tax_country[0] = 0;
	opt_str(c, t, "state", "tax_jurisdiction.state", v->state, LOC_CITY_MAX);
	opt_str(c, t, "excise_tax_zone_id", "tax_jurisdiction.excise_tax_zone_id", v->zone, LOC_ZONE_MAX);
	if (c && v->zone[0] && !only_chars(v->zone, "-_."))
		api_field_error(c, "tax_jurisdiction.excise_tax_zone_id", "format",
				"letters, digits, '-', '_' and '.' only");
	/* read wider than the bound so a wrong length is a format error, not max_length */
	char seed[LOC_SEED_LEN + 8];
	opt_str(c, t, "eu_seed_number", "tax_jurisdiction.eu_seed_number", seed, sizeof(seed) - 1);
	if (seed[0] && loc_seed_check(seed, strlen(seed)) != LOC_KEY_OK) {
		if (c)
			api_field_error(c, "tax_jurisdiction.eu_seed_number", "format",
					"an EMCS SEED excise number: 2 letters then 11 upper-case letters or digits");
	} else
		memcpy(v->seed, seed, strlen(seed) + 1);
}

/* capabilities: {flag: bool, ...} or ["flag", ...]. */
static void read_caps(struct api_ctx *c, const struct json_value *o, struct loc_vals *v)
{
	const struct json_value *m = json_get(o, "capabilities");
	v->caps = 0;
	if (!m || m->type == JSON_NULL)
		return;
	if (m->type == JSON_OBJECT) {
		fld_reject_unknown(c, m, loc_cap_names, "capabilities.");
		for (int i = 0; loc_cap_names[i]; i++) {
			char path[64];
			snprintf(path, sizeof(path), "capabilities.%s", loc_cap_names[i]);
			int b = 0;
			if (fld_bool(c, m, loc_cap_names[i], path, &b) == FLD_SET && b)
				v->caps |= 1u << i;
		}
		return;
	}
	if (m->type != JSON_ARRAY) {
		if (c)
			api_field_error(c, "capabilities", "type", "must be an object of booleans or an array of names");
		return;
	}
	for (uint32_t k = 0; k < m->len; k++) {
		const struct json_value *e = &m->u.items[k];
		int i = 0;
		while (loc_cap_names[i] && !(e->type == JSON_STRING && !strcmp(e->u.str, loc_cap_names[i])))
			i++;
		if (!loc_cap_names[i]) {
			if (c)
				api_field_error(c, "capabilities", "enum", "item %u is not a capability", k);
		} else if (v->caps & (1u << i)) {
			if (c)
				api_field_error(c, "capabilities", "duplicate", "%s is listed twice", loc_cap_names[i]);
		} else
			v->caps |= 1u << i;
	}
}

static void loc_read(struct api_ctx *c, const struct json_value *o, struct loc_vals *v)
{
	char gln[LOC_GLN_LEN + 8];
	opt_str(c, o, "gln", NULL, gln, sizeof(gln) - 1);
	enum loc_key_err ge = gln[0] ? loc_gln_check(gln, strlen(gln)) : LOC_KEY_OK;
	static const char *const gln_msg[] = {
		[LOC_KEY_LENGTH] = "must be 13 digits",
		[LOC_KEY_CHARS] = "must be 13 digits",
		[LOC_KEY_CHECK] = "the GS1 check digit does not match",
	};
	if (ge != LOC_KEY_OK) {
		if (c)
			api_field_error(c, "gln", ge == LOC_KEY_CHECK ? "check_digit" : "format", "%s", gln_msg[ge]);
	} else
		memcpy(v->gln, gln, strlen(gln) + 1);
	fld_enum(c, o, "location_type", NULL, loc_type_names, &v->type);
	opt_str(c, o, "name", NULL, v->name, LOC_NAME_MAX);
	if (fld_enum(c, o, "status", NULL, loc_status_names, &v->status) == FLD_NULL)
		v->status = LS_ACTIVE;
	read_address(c, o, v);
	read_geo(c, o, v);
	read_tax(c, o, v);
	read_caps(c, o, v);
}

/* The values of a stored document; 0 or -1. */
static int loc_load(const struct json_value *doc, struct loc_vals *v)
{
	memset(v, 0, sizeof(*v));
	v->type = -1;
	fld_doc_str(doc, "id", v->id, sizeof(v->id));
	fld_doc_str(doc, "owner_entity_id", v->owner_id, sizeof(v->owner_id));
	fld_doc_str(doc, "created_at", v->created_at, sizeof(v->created_at));
	fld_doc_str(doc, "updated_at", v->updated_at, sizeof(v->updated_at));
	loc_read(NULL, doc, v);
	return v->id[0] && v->owner_id[0] && v->type >= 0 && v->country[0] ? 0 : -1;
}

/* ---- the table ----------------------------------------------------------------- */

struct loc_ext {
	struct hidx by_gln;    /* gln -> row (locations with one) */
	struct oidx by_owner;  /* owner NUL id -> row */
};

static struct loc_ext *ext(const struct table *t) { return t->ext; }

static int loc_init(struct table *t)
{
	struct loc_ext *e = calloc(1, sizeof(*e));
	if (!e)
		return -1;
	hidx_init(&e->by_gln);
	oidx_init(&e->by_owner);
	t->ext = e;
	return 0;
}

static void loc_fini(struct table *t)
{
	hidx_free(&ext(t)->by_gln);
	oidx_free(&ext(t)->by_owner);
	free(t->ext);
	t->ext = NULL;
}

static uint32_t owner_key(const char *owner, const struct row *r, uint8_t *out)
{
	size_t ol = strlen(owner);
	memcpy(out, owner, ol);
	out[ol] = 0;
	memcpy(out + ol + 1, r->id, r->id_len);
	return (uint32_t)(ol + 1 + r->id_len);
}

static int loc_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct location *l = (struct location *)r;
	struct loc_vals v;
	if (loc_load(doc, &v))
		return -1;
	memcpy(l->owner_id, v.owner_id, sizeof(l->owner_id));
	memcpy(l->gln, v.gln, sizeof(l->gln));
	memcpy(l->country, v.country, sizeof(l->country));
	l->type = (uint8_t)v.type;
	l->caps = (uint8_t)v.caps;
	l->status = (uint8_t)v.status;
	l->has_geo = (uint8_t)v.has_geo;
	l->lat = v.lat;
	l->lon = v.lon;
	return 0;
}

static int loc_index_add(struct table *t, struct row *r)
{
	struct location *l = (struct location *)r;
	uint8_t k[IDX_MAX_KEY];
	if (l->gln[0] && hidx_set(&ext(t)->by_gln, l->gln, LOC_GLN_LEN, l))
		return -1;
	return oidx_put(&ext(t)->by_owner, k, owner_key(l->owner_id, r, k), l) < 0 ? -1 : 0;
}

static void loc_index_del(struct table *t, struct row *r)
{
	struct location *l = (struct location *)r;
	uint8_t k[IDX_MAX_KEY];
	if (l->gln[0] && hidx_get(&ext(t)->by_gln, l->gln, LOC_GLN_LEN) == l)
		hidx_del(&ext(t)->by_gln, l->gln, LOC_GLN_LEN);
	uint32_t kl = owner_key(l->owner_id, r, k);
	if (oidx_get(&ext(t)->by_owner, k, kl) == l)
		oidx_del(&ext(t)->by_owner, k, kl);
}

const struct table_ops location_table_ops = {
	.rec_table = REC_T_LOCATION,
	.name = "stock_location",
	.row_size = sizeof(struct location),
	.decode = loc_decode,
	.decode_pure = 1, /* recovery may build its rows off the loop (table.h) */
	.index_add = loc_index_add,
	.index_del = loc_index_del,
	.init = loc_init,
	.fini = loc_fini,
};

const struct location *location_get(struct shard *sh, const char *id, size_t len)
{
	return (const struct location *)table_get(&sh->tables[REC_T_LOCATION], id, len);
}

/* ---- writing --------------------------------------------------------------------- */

static void kstr_or_null(struct jw *w, const char *k, const char *s)
{
	if (s[0])
		jw_var_str(w, k, s);
	else
		jw_var_null(w, k);
}

static void loc_write(struct jw *w, const struct loc_vals *v)
{
	jw_obj_begin(w);
	jw_kstr(w, "id", v->id);
	jw_kstr(w, "location_id", v->id);
	jw_kstr(w, "owner_entity_id", v->owner_id);
	kstr_or_null(w, "gln", v->gln);
	jw_kstr(w, "location_type", loc_type_names[v->type]);
	jw_kstr(w, "name", v->name);
	jw_key(w, "address");
	jw_obj_begin(w);
	jw_kstr(w, "line1", v->line1);
	kstr_or_null(w, "line2", v->line2);
	jw_kstr(w, "city", v->city);
	jw_kstr(w, "postal_code", v->postal);
	kstr_or_null(w, "region", v->region);
	jw_kstr(w, "country", v->country);
	jw_obj_end(w);
	jw_key(w, "geo_coordinates");
	if (v->has_geo) {
		jw_obj_begin(w);
		jw_kfixed(w, "lat", v->lat, LOC_GEO_SCALE);
		jw_kfixed(w, "lon", v->lon, LOC_GEO_SCALE);
		jw_obj_end(w);
	} else
		jw_null(w);
	jw_key(w, "tax_jurisdiction");
	jw_obj_begin(w);
	jw_kstr(w, "country", v->tax_country);
	kstr_or_null(w, "state", v->state);
	kstr_or_null(w, "excise_tax_zone_id", v->zone);
	kstr_or_null(w, "eu_seed_number", v->seed);
	jw_obj_end(w);
	jw_key(w, "capabilities");
	jw_obj_begin(w);
	for (int i = 0; loc_cap_names[i]; i++)
		jw_var_bool(w, loc_cap_names[i], (v->caps >> i) & 1);
	jw_obj_end(w);
	jw_kstr(w, "status", loc_status_names[v->status]);
	jw_kstr(w, "created_at", v->created_at);
	jw_kstr(w, "updated_at", v->updated_at);
	jw_obj_end(w);
}

/* The owner a location is for: an originator or fulfiller partner, and the
 * caller itself unless the caller is the platform. */
static void owner_check(struct api_ctx *c, const char *oid)
{
	if (!c->who.is_platform && strcmp(oid, c->who.entity_id)) {
		api_field_error(c, "owner_entity_id", "own", "a partner declares its own locations only");
		return;
	}
	const struct partner *p = partner_get(c->sh, oid, strlen(oid));
	if (!p)
		api_field_error(c, "owner_entity_id", "exists", "no partner with this id");
	else if (!(p->v.roles & (ROLE_ORIGINATOR | ROLE_FULFILLER)))
		api_field_error(c, "owner_entity_id", "owner_role", "must be an originator or a fulfiller");
}

static void locations_create(struct api_ctx *c)
{
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	fld_reject_unknown(c, body, loc_known, NULL);
	for (int i = 0; loc_read_only[i]; i++)
		if (json_get(body, loc_read_only[i]))
			api_field_error(c, loc_read_only[i], "read_only", "is assigned by the service");
	for (int i = 0; loc_required[i]; i++) {
		const struct json_value *m = json_get(body, loc_required[i]);
		if (!m || m->type == JSON_NULL)
			api_field_error(c, loc_required[i], "required", "is required");
	}
	struct loc_vals v;
	memset(&v, 0, sizeof(v));
	v.type = -1;
	int r = fld_str(c, body, "owner_entity_id", NULL, v.owner_id, ID_MAX_LEN - 1);
	if (r == FLD_ABSENT || r == FLD_NULL) {
		if (c->who.is_platform)
			api_field_error(c, "owner_entity_id", "required", "operators name the owner");
		else
			snprintf(v.owner_id, sizeof(v.owner_id), "%s", c->who.entity_id);
	}
	loc_read(c, body, &v);
	if (v.owner_id[0] && r != FLD_BAD)
		owner_check(c, v.owner_id);
	if (!v.tax_country[0])
		memcpy(v.tax_country, v.country, sizeof(v.country));
	else if (v.country[0] && strcmp(v.tax_country, v.country))
		api_field_error(c, "tax_jurisdiction.country", "matches_address",
				"a location is taxed where it stands: must equal address.country");
	if (c->n_errs) {
		api_validation_failed(c);
		return;
	}
	if (v.gln[0]) {
		const struct location *o = hidx_get(&ext(&c->sh->tables[REC_T_LOCATION])->by_gln, v.gln, LOC_GLN_LEN);
		if (o) {
			/* GLNs are public registry keys: naming the holder reveals nothing new */
			char d[160];
			snprintf(d, sizeof(d), "GLN %s is already registered to location %.*s", v.gln, (int)o->row.id_len,
				 o->row.id);
			api_error(c, 409, "gln_taken", d);
			return;
		}
	}
	/* DESIGN.md 2: the id embeds the owning country ("loc_FR_...") */
	if (!id_new_country(&c->sh->ids, "loc", v.country, v.id))
		id_new(&c->sh->ids, "loc", v.id);
	fmt_rfc3339_ms(v.created_at, wall_ms());
	memcpy(v.updated_at, v.created_at, sizeof(v.created_at));
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	struct jw w;
	jw_init(&w, &doc);
	loc_write(&w, &v);
	txn_begin(c->sh);
	if (w.err || txn_put(c->sh, REC_T_LOCATION, v.id, strlen(v.id), doc.data, doc.len) ||
	    txn_event(c->sh, "stock_location.created", v.owner_id, doc.data, doc.len) || !txn_commit(c->sh)) {
		txn_abort(c->sh);
		buf_free(&doc);
		api_error(c, 500, "commit_failed", "the location could not be stored");
		return;
	}
	api_send_doc(c, 201, doc.data, doc.len);
	buf_free(&doc);
}

static void locations_get(struct api_ctx *c)
{
	const struct location *l = c->n_params ? location_get(c->sh, c->params[0].p, c->params[0].len) : NULL;
	if (!l || !api_owns(c, l->owner_id, strlen(l->owner_id))) {
		api_error(c, 404, "not_found", "no stock location with this id");
		return;
	}
	api_send_doc(c, 200, l->row.doc, l->row.doc_len);
}

struct loc_filter {
	int status; /* -1 any */
	int none;   /* a partner asking for another owner's: nothing */
};

static int loc_match(struct api_ctx *c, const struct row *r, void *arg)
{
	const struct loc_filter *f = arg;
	const struct location *l = (const struct location *)r;
	return !f->none && (f->status < 0 || l->status == f->status) && api_owns(c, l->owner_id, strlen(l->owner_id));
}

/* A partner walks its own range of by_owner; operators every row, or
 * ?owner_entity_id='s range. */
static void locations_list(struct api_ctx *c)
{
	struct api_page pg;
	if (api_page_parse(c, &pg))
		return;
	struct loc_filter f = {-1, 0};
	char st[16], oid[ID_MAX_LEN];
	int n = api_query(c, "status", st, sizeof(st));
	if (n != -1) {
		for (int i = 0; n > 0 && loc_status_names[i]; i++)
			if (!strcmp(loc_status_names[i], st))
				f.status = i;
		if (f.status < 0) {
			api_error(c, 400, "invalid_filter", "status must be active or inactive");
			return;
		}
	}
	n = api_query(c, "owner_entity_id", oid, sizeof(oid));
	if (n == 0 || n == -2) {
		api_error(c, 400, "invalid_filter", "owner_entity_id must be a partner id");
		return;
	}
	const struct table *t = &c->sh->tables[REC_T_LOCATION];
	const struct oidx *idx = &t->by_order;
	uint8_t prefix[IDX_MAX_KEY];
	uint32_t pl = 0;
	const char *owner = c->who.is_platform ? (n > 0 ? oid : NULL) : c->who.entity_id;
	if (!c->who.is_platform && n > 0 && strcmp(oid, c->who.entity_id))
		f.none = 1;
	if (owner) {
		size_t ol = strlen(owner);
		idx = &ext(t)->by_owner;
		memcpy(prefix, owner, ol);
		prefix[ol] = 0;
		pl = (uint32_t)ol + 1;
	}
	api_list(c, idx, prefix, pl, &pg, loc_match, &f, NULL);
}

const struct route location_routes[] = {
	{HTTP_M_POST, "/v1/locations", locations_create, SC_WRITE_INVENTORY, ACT_WRITE_INVENTORY,
	 "Declare a stock location", 0},
	{HTTP_M_GET, "/v1/stock-locations", locations_list, SC_READ_INVENTORY, ACT_READ_INVENTORY,
	 "List stock locations", 0},
	{HTTP_M_POST, "/v1/stock-locations", locations_create, SC_WRITE_INVENTORY, ACT_WRITE_INVENTORY,
	 "Create a stock location", 0},
	{HTTP_M_GET, "/v1/stock-locations/{id}", locations_get, SC_READ_INVENTORY, ACT_READ_INVENTORY,
	 "Retrieve a stock location", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
