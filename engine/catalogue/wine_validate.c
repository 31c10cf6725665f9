/*
 * wine_validate.c -- every rule of the canonical wine record (spec 2.2,
 * section 8 bounds, issue 4), as one table of fields and one checker each.
 *
 * Why a table: the field list IS the contract.  The table gives the order
 * of the canonical document, the set of known members (anything else is a
 * 422 unknown_field, a member the service assigns is a 422 read_only), and
 * one checker per member; cross-field rules run once after all members.
 * Every failing member is recorded with the rule that failed (the partner
 * sees all of its mistakes in one round trip, up to API_MAX_FIELD_ERRORS).
 *
 * The same validator decodes stored documents (v->c == NULL, stored = 1):
 * replay and the live path cannot disagree about what a document means.
 *
 * Decisions (also in api/openapi.json):
 *  - Exact decimals everywhere: abv, shares, energy, nutrients, scores and
 *    volumes go through json_to_fixed / wid_volume_parse_liters into
 *    integers; a value finer than the field's scale is refused, never
 *    rounded.  No double is ever involved.
 *  - `vintage` is an integer 1900-2099; for ingest convenience it may also
 *    be a string ("2015", "NV", "N.V.", "non vintage", "sans année": the
 *    spellings of wid_vintage_parse).  A non-vintage spelling means
 *    is_non_vintage = true.  vintage and is_non_vintage = true exclude each
 *    other; nv_base_vintage_pct needs a non-vintage wine.
 *  - `volume_in_liters` is a positive JSON number in litres (any format:
 *    0.1875, 0.375, 3, 1.5e0) or, for feeds, a string with a unit ("75cl",
 *    "750 ml", "0,75 l"); the document stores the number.
 *  - Terroir names (`region`, `sub_region`, `appellation`) are a string or
 *    an object of language tag -> name ({"fr": "Bourgogne", "en":
 *    "Burgundy"}), 1-16 languages; a sub_region needs a region.
 *  - Identifiers for dedup: `gtin` (one) and/or `gtins[]` (up to 16):
 *    GTIN-8/12/13/14 with their GS1 check digit, stored as 14 digits; a
 *    variable-measure GTIN-14 (indicator 9) names no fixed format and is
 *    refused.  `lwin`: LWIN-7/11/16/18; its vintage and bottle size must
 *    agree with `vintage` / `volume_in_liters`, and fill them when absent.
 *  - Media (`main_image`, `gallery[]`) are ids `med_...`; existence is
 *    checked by wine.c when the media table exists.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "engine/edge/fields.h"
#include "engine/base/iso.h"
#include "engine/catalogue/wine.h"

const char *const wine_status_names[] = {"draft", "published", "archived", NULL};
const char *const wine_colour_names[] = {"red", "white", "rose", "orange", NULL};
const char *const wine_category_names[] = {
	"wine", "sparkling", "quality_sparkling", "semi_sparkling", "fortified", "dessert", "must",
	"dealcoholised", "aromatic_quality_sparkling", "aerated_sparkling", "aerated_semi_sparkling",
	"partially_dealcoholised", "new_wine", "raisined_grapes", "overripe_grapes", NULL};
const char *const wine_dosage_names[] = {"brut_nature", "extra_brut", "brut", "extra_dry",
					 "dry", "demi_sec", "sweet", NULL};
const char *const wine_quality_names[] = {"PDO", "PGI", "GI_none", NULL};
/* Allergens of EU Reg. 1169/2011 Annex II that wine-making can bring in:
 * sulphites, egg (ovalbumin, lysozyme) and milk (casein) are the ones wine
 * labels carry; fish (isinglass) and gluten are listed for completeness. */
const char *const wine_allergen_names[] = {"sulphites", "egg", "milk", "fish", "gluten", NULL};
const char *const wine_certification_names[] = {"organic", "biodynamic", "natural", "vegan", "sustainable",
						NULL};

/* EU categories 4-7 (sugar content is a compulsory particular). */
static const uint8_t sparkling_4_7[WINE_N_CATEGORY] = {
	[WCAT_SPARKLING] = 1, [WCAT_QUALITY_SPARKLING] = 1, [WCAT_AROMATIC_QUALITY_SPARKLING] = 1,
	[WCAT_AERATED_SPARKLING] = 1,
};

int wine_category_is_sparkling_4_7(int category)
{
	return category >= 0 && category < WINE_N_CATEGORY && sparkling_4_7[category];
}

const char *const wine_readonly_fields[] = {"id", "natural_key", "created_by", "created_at",
					    "updated_at", "published_at", "merged_into", NULL};

#define WINE_PATH_EL 40 /* "grape_varieties[19]": a path to an array element */

/* ---- recording failures --------------------------------------------------- */

/* Record one failure at path (formatted message). */
__attribute__((format(printf, 4, 5))) static void bad(struct wine_vctx *v, const char *path, const char *rule,
						       const char *fmt, ...)
{
	v->n_bad++;
	if (!v->c)
		return;
	char msg[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	api_field_error(v->c, path, rule, "%s", msg);
}

/* ---- value checkers (each records its own failure; -1 on failure) -------- */

/* Text of 1..max bytes; multiline allows line breaks and tabs. */
static const char *v_text(struct wine_vctx *v, const char *path, const struct json_value *x, size_t max,
			  int multiline)
{
	if (x->type != JSON_STRING) {
		bad(v, path, "type", "must be a string");
		return NULL;
	}
	if (x->len == 0) {
		bad(v, path, "min_length", "must not be empty");
		return NULL;
	}
	if (x->len > max) {
		bad(v, path, "max_length", "must be at most %zu bytes", max);
		return NULL;
	}
	for (uint32_t i = 0; i < x->len; i++) {
		unsigned char ch = (unsigned char)x->u.str[i];
		int ok = ch >= 0x20 ? ch != 0x7f : multiline && (ch == '\n' || ch == '\r' || ch == '\t');
		if (!ok) {
			bad(v, path, "control_character", "must not contain control characters%s",
			    multiline ? " other than line breaks and tabs" : "");
			return NULL;
		}
	}
	return x->u.str;
}

/* Visible ASCII token (ids of other systems), 1..max bytes. */
static const char *v_token(struct wine_vctx *v, const char *path, const struct json_value *x, size_t max)
{
	const char *s = v_text(v, path, x, max, 0);
	for (uint32_t i = 0; s && i < x->len; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f) {
			bad(v, path, "token", "must be visible ASCII without blanks");
			return NULL;
		}
	return s;
}

/* Exact decimal at `scale` within [min, max] (both scaled). */
static int v_decimal(struct wine_vctx *v, const char *path, const struct json_value *x, unsigned scale,
		     int64_t min, int64_t max, int64_t *out)
{
	int64_t n;
	if (x->type != JSON_NUMBER) {
		bad(v, path, "type", "must be a number");
		return -1;
	}
	if (json_to_fixed(x, scale, &n)) {
		bad(v, path, "precision", "must be a decimal with at most %u fractional digits", scale);
		return -1;
	}
	if (n < min || n > max) {
		char lo[32], hi[32];
		int64_t p = 1;
		for (unsigned i = 0; i < scale; i++)
			p *= 10;
		snprintf(lo, sizeof(lo), "%lld", (long long)(min / p));
		snprintf(hi, sizeof(hi), "%lld", (long long)(max / p));
		bad(v, path, "range", "must be between %s and %s", lo, hi);
		return -1;
	}
	*out = n;
	return 0;
}

static int v_int(struct wine_vctx *v, const char *path, const struct json_value *x, int64_t min, int64_t max,
		 int64_t *out)
{
	int64_t n;
	if (x->type != JSON_NUMBER || json_to_int64(x, &n)) {
		bad(v, path, "type", "must be an integer");
		return -1;
	}
	if (n < min || n > max) {
		bad(v, path, "range", "must be between %lld and %lld", (long long)min, (long long)max);
		return -1;
	}
	*out = n;
	return 0;
}

static int v_enum(struct wine_vctx *v, const char *path, const struct json_value *x,
		  const char *const *names, uint8_t *out)
{
	if (x->type == JSON_STRING)
		for (int i = 0; names[i]; i++)
			if (strlen(names[i]) == x->len && !memcmp(names[i], x->u.str, x->len)) {
				*out = (uint8_t)i;
				return 0;
			}
	char list[256] = "";
	for (int i = 0; names[i]; i++) {
		size_t l = strlen(list);
		snprintf(list + l, sizeof(list) - l, "%s%s", i ? ", " : "", names[i]);
	}
	if (strlen(list) > 110) /* api_field_error keeps 128 bytes of message */
		bad(v, path, "enum", "must be one of the values the OpenAPI document lists (%s, ...)", names[0]);
	else
		bad(v, path, "enum", "must be one of: %s", list);
	return -1;
}

/* Array of distinct enum values; bit i set for names[i]. */
static int v_enum_set(struct wine_vctx *v, const char *path, const struct json_value *x,
		      const char *const *names, uint32_t *bits)
{
	if (x->type != JSON_ARRAY) {
		bad(v, path, "type", "must be an array");
		return -1;
	}
	uint32_t set = 0;
	int rc = 0;
	for (uint32_t i = 0; i < x->len; i++) {
		char p[64];
		snprintf(p, sizeof(p), "%s[%u]", path, i);
		uint8_t e;
		if (v_enum(v, p, &x->u.items[i], names, &e)) {
			rc = -1;
			continue;
		}
		if (set & (1u << e)) {
			bad(v, p, "unique", "is listed twice");
			rc = -1;
		}
		set |= 1u << e;
	}
	*bits = set;
	return rc;
}

/* Object whose members must be among `known` (others recorded). */
static int v_object(struct wine_vctx *v, const char *path, const struct json_value *x, const char *const *known)
{
	if (x->type != JSON_OBJECT) {
		bad(v, path, "type", "must be an object");
		return -1;
	}
	int rc = 0;
	for (uint32_t i = 0; i < x->len; i++) {
		int found = 0;
		for (int j = 0; known[j] && !found; j++)
			found = !strcmp(known[j], x->u.members[i].key);
		if (!found) {
			char p[64];
			snprintf(p, sizeof(p), "%s.%.40s", path, x->u.members[i].key);
			bad(v, p, "unknown_field", "is not a field of this object");
			rc = -1;
		}
	}
	return rc;
}

/* Member `name` of object x, NULL when absent or null. */
static const struct json_value *member(const struct json_value *x, const char *name)
{
	const struct json_value *m = json_get(x, name);
	return m && m->type != JSON_NULL ? m : NULL;
}

/* Required member: absent is a "required" failure. */
static const struct json_value *required(struct wine_vctx *v, const char *path, const struct json_value *x,
					 const char *name)
{
	const struct json_value *m = member(x, name);
	if (!m) {
		char p[64];
		snprintf(p, sizeof(p), "%s.%s", path, name);
		bad(v, p, "required", "is required");
	}
	return m;
}

static int v_url(struct wine_vctx *v, const char *path, const struct json_value *x, int https_only)
{
	const char *s = v_text(v, path, x, WINE_MAX_URL, 0);
	if (!s)
		return -1;
	size_t skip = !strncmp(s, "https://", 8) ? 8 : (!https_only && !strncmp(s, "http://", 7)) ? 7 : 0;
	int ok = skip && x->len > skip && s[skip] != '/' && s[skip] != '.' && !strchr(s, ' ');
	if (!ok) {
		bad(v, path, "url", "must be an absolute %s URL without blanks", https_only ? "https" : "http(s)");
		return -1;
	}
	return 0;
}

static int v_media(struct wine_vctx *v, const char *path, const struct json_value *x)
{
	if (x->type != JSON_STRING || !id_valid(x->u.str, x->len, "med")) {
		bad(v, path, "media_id", "must be a media id (med_...) from POST /v1/media");
		return -1;
	}
	return 0;
}

/* A language tag: 2-3 lower-case letters, optionally "-" and 2 upper-case
 * letters or 3 digits ("fr", "pt-BR", "es-419"). */
static int lang_ok(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && s[i] >= 'a' && s[i] <= 'z')
		i++;
	if (i < 2 || i > 3)
		return 0;
	if (i == n)
		return 1;
	if (s[i] != '-')
		return 0;
	size_t r = n - i - 1;
	const char *t = s + i + 1;
	if (r == 2)
		return t[0] >= 'A' && t[0] <= 'Z' && t[1] >= 'A' && t[1] <= 'Z';
	return r == 3 && t[0] >= '0' && t[0] <= '9' && t[1] >= '0' && t[1] <= '9' && t[2] >= '0' && t[2] <= '9';
}

/* A multilingual name: a string, or {language tag: name}. */
static int v_mlname(struct wine_vctx *v, const char *path, const struct json_value *x)
{
	if (x->type == JSON_STRING)
		return v_text(v, path, x, WINE_MAX_NAME, 0) ? 0 : -1;
	if (x->type != JSON_OBJECT || x->len == 0 || x->len > WINE_MAX_ML_NAMES) {
		bad(v, path, "multilingual",
		    "must be a name or an object of 1 to %d language tags to names ({\"fr\": \"Bourgogne\"})",
		    WINE_MAX_ML_NAMES);
		return -1;
	}
	int rc = 0;
	for (uint32_t i = 0; i < x->len; i++) {
		const struct json_member *m = &x->u.members[i];
		char p[64];
		snprintf(p, sizeof(p), "%s.%.12s", path, m->key);
		if (m->key_len > WINE_MAX_LANG || !lang_ok(m->key, m->key_len)) {
			bad(v, p, "language_tag", "must be a language tag such as fr, en or pt-BR");
			rc = -1;
		} else if (!v_text(v, p, &m->value, WINE_MAX_NAME, 0)) {
			rc = -1;
		}
	}
	return rc;
}

/* {name, address}: bottler and importer. */
static int v_party(struct wine_vctx *v, const char *path, const struct json_value *x)
{
	static const char *const known[] = {"name", "address", NULL};
	if (v_object(v, path, x, known) && x->type != JSON_OBJECT)
		return -1;
	char p[64];
	const struct json_value *n = required(v, path, x, "name");
	snprintf(p, sizeof(p), "%s.name", path);
	if (n)
		v_text(v, p, n, WINE_MAX_NAME, 0);
	const struct json_value *a = required(v, path, x, "address");
	snprintf(p, sizeof(p), "%s.address", path);
	if (a)
		v_text(v, p, a, WINE_MAX_ADDRESS, 1);
	return 0;
}

/* Array of at most max elements. */
static int v_array(struct wine_vctx *v, const char *path, const struct json_value *x, uint32_t max)
{
	if (x->type != JSON_ARRAY) {
		bad(v, path, "type", "must be an array");
		return -1;
	}
	if (x->len > max) {
		bad(v, path, "max_items", "must have at most %u elements", max);
		return -1;
	}
	return 0;
}

/* ---- field checkers ------------------------------------------------------- */

typedef void (*wine_check_fn)(struct wine_vctx *v, const char *name, const struct json_value *x,
			      struct wine_in *in);

static void ck_title(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	in->title = v_text(v, n, x, WINE_MAX_TITLE, 0);
}

static void ck_slug(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	const char *s = v_text(v, n, x, WINE_MAX_SLUG, 0);
	char buf[WINE_MAX_SLUG + 1];
	size_t len = 0;
	if (s && (wid_slug(s, x->len, buf, sizeof(buf), &len) != WID_OK || len != x->len || memcmp(buf, s, len)))
		bad(v, n, "slug", "must be lower-case a-z, 0-9 and single '-' between them");
	else
		in->slug = s;
}

static void ck_producer(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	if (x->type == JSON_STRING && id_valid(x->u.str, x->len, "prd"))
		in->producer_id = x->u.str;
	else if (x->type == JSON_OBJECT && !v->stored)
		in->producer_obj = x; /* validated when resolved (producer_resolve_inline) */
	else
		bad(v, n, "producer", "must be a producer id (prd_...) or an object {name, country, region, website}");
}

static void ck_name(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	const char *s = v_text(v, n, x, WINE_MAX_NAME, 0);
	if (s && !strcmp(n, "cuvee"))
		in->cuvee = s;
}

static void ck_medusa(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	in->medusa = v_token(v, n, x, WINE_MAX_MEDUSA);
}

static void ck_vintage(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	int64_t y;
	if (x->type == JSON_NUMBER) {
		if (!v_int(v, n, x, WID_VINTAGE_MIN, WID_VINTAGE_MAX, &y))
			in->vintage = (int)y;
		return;
	}
	int out;
	enum wid_err e = x->type == JSON_STRING ? wid_vintage_parse(x->u.str, x->len, &out) : WID_E_SYNTAX;
	if (e == WID_OK)
		in->vintage = out;
	else if (e == WID_E_RANGE)
		bad(v, n, "range", "must be between %d and %d", WID_VINTAGE_MIN, WID_VINTAGE_MAX);
	else
		bad(v, n, "vintage", "must be a year %d-%d or a non-vintage spelling such as \"NV\"",
		    WID_VINTAGE_MIN, WID_VINTAGE_MAX);
}

static void ck_is_nv(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	(void)in;
	if (x->type != JSON_TRUE && x->type != JSON_FALSE)
		bad(v, n, "type", "must be true or false");
}

static void ck_nv_pct(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	v_decimal(v, n, x, WINE_PCT_SCALE, 0, WINE_PCT_MAX, &in->nv_pct);
}

static void ck_colour(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	v_enum(v, n, x, wine_colour_names, &in->colour);
}

static void ck_category(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	v_enum(v, n, x, wine_category_names, &in->category);
}

static void ck_dosage(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	v_enum(v, n, x, wine_dosage_names, &in->dosage);
}

static void ck_quality(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	v_enum(v, n, x, wine_quality_names, &in->quality);
}

static void ck_abv(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	v_decimal(v, n, x, WINE_ABV_SCALE, 0, WINE_ABV_MAX, &in->abv);
}

static void ck_volume(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	enum wid_err e;
	int64_t ul = 0;
	if (x->type == JSON_NUMBER)
		e = wid_volume_parse_liters(x->u.num, x->len, &ul);
	else if (x->type == JSON_STRING)
		e = wid_volume_parse(x->u.str, x->len, &ul);
	else {
		bad(v, n, "type", "must be a number of litres, or a string with a unit such as \"75cl\"");
		return;
	}
	if (e != WID_OK)
		bad(v, n, "volume", "%s", wid_strerror(e));
	else
		in->volume_ul = ul;
}

/* "2204.21.79": four digits, then up to three groups of "." and two digits. */
static void ck_hs(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	const char *s = v_text(v, n, x, WINE_MAX_HS, 0);
	if (!s)
		return;
	int ok = x->len >= 4 && (x->len - 4) % 3 == 0;
	for (uint32_t i = 0; ok && i < x->len; i++)
		ok = i >= 4 && (i - 4) % 3 == 0 ? s[i] == '.' : s[i] >= '0' && s[i] <= '9';
	if (!ok)
		bad(v, n, "hs_code", "must be a dotted customs code such as \"2204.21.79\"");
	else
		memcpy(in->hs_code, s, x->len + 1);
}

static void ck_country(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	if (x->type != JSON_STRING || !iso_country_valid(x->u.str, x->len))
		bad(v, n, "iso3166_alpha2", "must be an ISO 3166-1 alpha-2 country code in upper case, e.g. \"FR\"");
	else
		memcpy(in->country, x->u.str, 3);
}

static void ck_mlname(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	(void)in;
	v_mlname(v, n, x);
}

static void ck_grapes(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	(void)in;
	static const char *const known[] = {"variety", "vivc_number", "percentage", NULL};
	if (v_array(v, n, x, WINE_MAX_GRAPES))
		return;
	int64_t sum = 0;
	int sum_ok = 1;
	for (uint32_t i = 0; i < x->len; i++) {
		const struct json_value *g = &x->u.items[i];
		char p[WINE_PATH_EL], q[64];
		snprintf(p, sizeof(p), "%s[%u]", n, i);
		if (v_object(v, p, g, known) && g->type != JSON_OBJECT) {
			sum_ok = 0;
			continue;
		}
		const struct json_value *m = required(v, p, g, "variety");
		snprintf(q, sizeof(q), "%s.variety", p);
		if (m)
			v_text(v, q, m, WINE_MAX_NAME, 0);
		int64_t k;
		if ((m = member(g, "vivc_number"))) {
			snprintf(q, sizeof(q), "%s.vivc_number", p);
			v_int(v, q, m, 1, WINE_MAX_VIVC, &k);
		}
		if ((m = member(g, "percentage"))) {
			snprintf(q, sizeof(q), "%s.percentage", p);
			if (v_decimal(v, q, m, WINE_PCT_SCALE, 0, WINE_PCT_MAX, &k))
				sum_ok = 0;
			else
				sum += k;
		}
	}
	if (sum_ok && sum > WINE_PCT_MAX)
		bad(v, n, "percentage_sum", "the percentages add up to more than 100");
}

static void ck_party(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	(void)in;
	v_party(v, n, x);
}

static void ck_lot(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	(void)in;
	v_text(v, n, x, WINE_MAX_LOT, 0);
}

static void ck_allergens(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	v_enum_set(v, n, x, wine_allergen_names, &in->allergens);
}

static void ck_ingredients(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	(void)in;
	v_text(v, n, x, WINE_MAX_INGREDIENTS, 1);
}

static void ck_energy(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	(void)in;
	int64_t e;
	v_decimal(v, n, x, WINE_ENERGY_SCALE, 0, strstr(n, "kcal") ? WINE_ENERGY_KCAL_MAX : WINE_ENERGY_KJ_MAX, &e);
}

static void ck_e_label(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	(void)in;
	v_url(v, n, x, 1);
}

static void ck_nutrition(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	(void)in;
	static const char *const known[] = {"fats", "carbs", "sugars", "protein", "salt", NULL};
	if (v_object(v, n, x, known) && x->type != JSON_OBJECT)
		return;
	if (x->len == 0)
		bad(v, n, "min_members", "must name at least one of fats, carbs, sugars, protein, salt");
	for (int i = 0; known[i]; i++) {
		const struct json_value *m = member(x, known[i]);
		char p[64];
		int64_t g;
		snprintf(p, sizeof(p), "%s.%s", n, known[i]);
		if (m)
			v_decimal(v, p, m, WINE_ENERGY_SCALE, 0, WINE_NUTRIENT_MAX, &g);
	}
}

static void ck_certs(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	(void)in;
	uint32_t bits;
	v_enum_set(v, n, x, wine_certification_names, &bits);
}

static void ck_rich(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	(void)in;
	v_text(v, n, x, strcmp(n, "description") ? WINE_MAX_PROFILE : WINE_MAX_DESCRIPTION, 1);
}

static void ck_food(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	(void)in;
	static const char *const known[] = {"pairing", NULL};
	if (v_array(v, n, x, WINE_MAX_PAIRINGS))
		return;
	for (uint32_t i = 0; i < x->len; i++) {
		char p[WINE_PATH_EL], q[64];
		snprintf(p, sizeof(p), "%s[%u]", n, i);
		if (v_object(v, p, &x->u.items[i], known) && x->u.items[i].type != JSON_OBJECT)
			continue;
		const struct json_value *m = required(v, p, &x->u.items[i], "pairing");
		snprintf(q, sizeof(q), "%s.pairing", p);
		if (m)
			v_text(v, q, m, WINE_MAX_NAME, 0);
	}
}

static void ck_main_image(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	(void)in;
	v_media(v, n, x);
}

static void ck_gallery(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	(void)in;
	if (v_array(v, n, x, WINE_MAX_GALLERY))
		return;
	for (uint32_t i = 0; i < x->len; i++) {
		char p[64];
		snprintf(p, sizeof(p), "%s[%u]", n, i);
		if (v_media(v, p, &x->u.items[i]))
			continue;
		for (uint32_t j = 0; j < i; j++)
			if (x->u.items[j].type == JSON_STRING && !strcmp(x->u.items[j].u.str, x->u.items[i].u.str))
				bad(v, p, "unique", "is listed twice");
	}
}

static void ck_ratings(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	(void)in;
	static const char *const known[] = {"source", "score", "scale", "url", NULL};
	if (v_array(v, n, x, WINE_MAX_RATINGS))
		return;
	for (uint32_t i = 0; i < x->len; i++) {
		const struct json_value *r = &x->u.items[i];
		char p[WINE_PATH_EL], q[64];
		snprintf(p, sizeof(p), "%s[%u]", n, i);
		if (v_object(v, p, r, known) && r->type != JSON_OBJECT)
			continue;
		const struct json_value *m = required(v, p, r, "source");
		snprintf(q, sizeof(q), "%s.source", p);
		if (m)
			v_text(v, q, m, WINE_MAX_NAME, 0);
		int64_t score = -1, scale = -1;
		if ((m = required(v, p, r, "score"))) {
			snprintf(q, sizeof(q), "%s.score", p);
			if (v_decimal(v, q, m, WINE_SCORE_SCALE, 0, WINE_SCORE_MAX, &score))
				score = -1;
		}
		if ((m = required(v, p, r, "scale"))) {
			snprintf(q, sizeof(q), "%s.scale", p);
			if (v_decimal(v, q, m, WINE_SCORE_SCALE, 1, WINE_SCORE_MAX, &scale))
				scale = -1;
		}
		if (score >= 0 && scale > 0 && score > scale) {
			snprintf(q, sizeof(q), "%s.score", p);
			bad(v, q, "score_within_scale", "must not exceed scale");
		}
		if ((m = member(r, "url"))) {
			snprintf(q, sizeof(q), "%s.url", p);
			v_url(v, q, m, 0);
		}
	}
}

/* One GTIN into in->gtins (dedup by normalised digits). */
static void add_gtin(struct wine_vctx *v, const char *path, const struct json_value *x, struct wine_in *in)
{
	struct wid_gtin g;
	enum wid_err e = x->type == JSON_STRING ? wid_gtin_parse(x->u.str, x->len, &g) : WID_E_SYNTAX;
	if (e == WID_E_SYNTAX) {
		bad(v, path, "type", "must be a string of digits");
		return;
	}
	if (e != WID_OK) {
		bad(v, path, "gtin", "%s", wid_strerror(e));
		return;
	}
	if (g.kind == WID_GTIN_VARIABLE) {
		bad(v, path, "gtin", "a variable-measure GTIN-14 (indicator 9) names no fixed format");
		return;
	}
	for (unsigned i = 0; i < in->n_gtins; i++)
		if (!strcmp(in->gtins[i].digits, g.digits)) {
			bad(v, path, "unique", "names a GTIN listed already");
			return;
		}
	if (in->n_gtins >= WINE_MAX_GTINS) {
		bad(v, path, "max_items", "a wine has at most %d GTINs", WINE_MAX_GTINS);
		return;
	}
	in->gtins[in->n_gtins++] = g;
}

static void ck_gtin(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	add_gtin(v, n, x, in);
}

static void ck_gtins(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	if (v_array(v, n, x, WINE_MAX_GTINS))
		return;
	for (uint32_t i = 0; i < x->len; i++) {
		char p[64];
		snprintf(p, sizeof(p), "%s[%u]", n, i);
		add_gtin(v, p, &x->u.items[i], in);
	}
}

static void ck_lwin(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	enum wid_err e = x->type == JSON_STRING ? wid_lwin_parse(x->u.str, x->len, &in->lwin) : WID_E_SYNTAX;
	if (e == WID_E_SYNTAX)
		bad(v, n, "type", "must be a string of 7, 11, 16 or 18 digits");
	else if (e != WID_OK)
		bad(v, n, "lwin", "%s", wid_strerror(e));
	else {
		in->has_lwin = 1;
		in->lwin_text = x->u.str;
	}
}

static void ck_status(struct wine_vctx *v, const char *n, const struct json_value *x, struct wine_in *in)
{
	v_enum(v, n, x, wine_status_names, &in->status);
}

/* ---- the table ------------------------------------------------------------ */

struct wine_field_def {
	const char *name;
	wine_check_fn check;
};

static const struct wine_field_def field_defs[WF_COUNT] = {
	[WF_TITLE] = {"title", ck_title},
	[WF_SLUG] = {"slug", ck_slug},
	[WF_PRODUCER] = {"producer", ck_producer},
	[WF_CUVEE] = {"cuvee", ck_name},
	[WF_LABEL_NAME] = {"label_name", ck_name},
	[WF_MEDUSA] = {"medusa_product_id", ck_medusa},
	[WF_VINTAGE] = {"vintage", ck_vintage},
	[WF_IS_NV] = {"is_non_vintage", ck_is_nv},
	[WF_NV_PCT] = {"nv_base_vintage_pct", ck_nv_pct},
	[WF_COLOUR] = {"colour", ck_colour},
	[WF_CATEGORY] = {"category", ck_category},
	[WF_DOSAGE] = {"dosage_class", ck_dosage},
	[WF_ABV] = {"abv", ck_abv},
	[WF_VOLUME] = {"volume_in_liters", ck_volume},
	[WF_HS_CODE] = {"hs_code", ck_hs},
	[WF_COUNTRY] = {"country", ck_country},
	[WF_REGION] = {"region", ck_mlname},
	[WF_SUB_REGION] = {"sub_region", ck_mlname},
	[WF_APPELLATION] = {"appellation", ck_mlname},
	[WF_DESIGNATION] = {"designation", ck_name},
	[WF_QUALITY] = {"quality_scheme", ck_quality},
	[WF_GRAPES] = {"grape_varieties", ck_grapes},
	[WF_BOTTLER] = {"bottler", ck_party},
	[WF_IMPORTER] = {"importer", ck_party},
	[WF_LOT] = {"lot_number", ck_lot},
	[WF_ALLERGENS] = {"allergens", ck_allergens},
	[WF_INGREDIENTS] = {"ingredients", ck_ingredients},
	[WF_ENERGY_KJ] = {"energy_kj_per_100ml", ck_energy},
	[WF_ENERGY_KCAL] = {"energy_kcal_per_100ml", ck_energy},
	[WF_E_LABEL] = {"e_label_url", ck_e_label},
	[WF_NUTRITION] = {"nutrition_optional", ck_nutrition},
	[WF_CERTS] = {"certifications", ck_certs},
	[WF_DESCRIPTION] = {"description", ck_rich},
	[WF_AROMA] = {"aroma_profile", ck_rich},
	[WF_PALATE] = {"palate_profile", ck_rich},
	[WF_FOOD] = {"food_pairings", ck_food},
	[WF_MAIN_IMAGE] = {"main_image", ck_main_image},
	[WF_GALLERY] = {"gallery", ck_gallery},
	[WF_RATINGS] = {"ratings", ck_ratings},
	[WF_GTIN] = {"gtin", ck_gtin},
	[WF_GTINS] = {"gtins", ck_gtins},
	[WF_LWIN] = {"lwin", ck_lwin},
	[WF_STATUS] = {"status", ck_status},
};

/* Field index of a member name, or -1. */
static int field_index(const char *name)
{
	for (int i = 0; i < WF_COUNT; i++)
		if (!strcmp(field_defs[i].name, name))
			return i;
	return -1;
}

static int is_readonly(const char *name)
{
	for (int i = 0; wine_readonly_fields[i]; i++)
		if (!strcmp(wine_readonly_fields[i], name))
			return 1;
	return 0;
}

/* ---- cross-field rules ------------------------------------------------------ */

static void cross_vintage(struct wine_vctx *v, struct wine_in *in)
{
	const struct json_value *nv = in->f[WF_IS_NV];
	int is_nv = nv && nv->type == JSON_TRUE;
	if (in->vintage > 0 && is_nv)
		bad(v, "is_non_vintage", "exclusive", "a wine with a vintage year is not non-vintage");
	else if (in->vintage == WID_NV && nv && nv->type == JSON_FALSE)
		bad(v, "is_non_vintage", "exclusive", "vintage names a non-vintage spelling");
	else if (is_nv)
		in->vintage = WID_NV;
	if (in->f[WF_NV_PCT] && in->vintage != WID_NV)
		bad(v, "nv_base_vintage_pct", "requires_non_vintage", "applies to non-vintage wines only");
}

/* LWIN vintage and bottle size agree with vintage and volume, and fill them. */
static void cross_lwin(struct wine_vctx *v, struct wine_in *in)
{
	if (!in->has_lwin)
		return;
	const struct wid_lwin *l = &in->lwin;
	if (l->vintage != WID_VINTAGE_NONE) {
		if (l->vintage != WID_NV && (l->vintage < WID_VINTAGE_MIN || l->vintage > WID_VINTAGE_MAX))
			bad(v, "lwin", "lwin_vintage", "names vintage %d, outside %d-%d", l->vintage, WID_VINTAGE_MIN,
			    WID_VINTAGE_MAX);
		else if (in->vintage == WINE_VINTAGE_UNSET)
			in->vintage = l->vintage;
		else if (in->vintage != l->vintage)
			bad(v, "lwin", "lwin_vintage", "names %s %d but the wine's vintage differs",
			    l->vintage == WID_NV ? "non-vintage code" : "vintage",
			    l->vintage == WID_NV ? WID_LWIN_NV_CODE : l->vintage);
	}
	if (l->bottle_ml) {
		int64_t ul = (int64_t)l->bottle_ml * WID_UL_PER_ML;
		if (!in->volume_ul)
			in->volume_ul = ul;
		else if (in->volume_ul != ul)
			bad(v, "lwin", "lwin_bottle_size", "names a %u ml bottle but volume_in_liters differs",
			    l->bottle_ml);
	}
}

static void cross_terroir(struct wine_vctx *v, const struct wine_in *in)
{
	if (in->f[WF_SUB_REGION] && !in->f[WF_REGION])
		bad(v, "sub_region", "requires_region", "a sub_region needs its region");
}

/* ---- entry point ------------------------------------------------------------ */

unsigned wine_validate(struct wine_vctx *v, const struct json_value *obj, struct wine_in *in)
{
	memset(in, 0, sizeof(*in));
	in->vintage = WINE_VINTAGE_UNSET;
	in->nv_pct = -1;
	in->abv = -1;
	in->colour = in->category = in->dosage = in->quality = in->status = WINE_UNSET;
	unsigned before = v->n_bad;
	if (obj->type != JSON_OBJECT) {
		bad(v, "body", "type", "must be an object");
		return v->n_bad - before;
	}
	for (uint32_t i = 0; i < obj->len; i++) {
		const struct json_member *m = &obj->u.members[i];
		int f = field_index(m->key);
		if (f >= 0) {
			if (m->value.type != JSON_NULL)
				in->f[f] = &m->value;
		} else if (!v->stored) {
			char p[64];
			snprintf(p, sizeof(p), "%.60s", m->key);
			if (is_readonly(m->key))
				bad(v, p, "read_only", "is assigned by the service");
			else
				bad(v, p, "unknown_field", "is not a field of the wine record");
		}
	}
	for (int f = 0; f < WF_COUNT; f++)
		if (in->f[f])
			field_defs[f].check(v, field_defs[f].name, in->f[f], in);
	if (!in->f[WF_TITLE])
		bad(v, "title", "required", "is required");
	if (!in->f[WF_PRODUCER])
		bad(v, "producer", "required", "is required (a producer id, or {\"name\": ...})");
	if (!in->hs_code[0] && !in->f[WF_HS_CODE])
		memcpy(in->hs_code, WINE_DEFAULT_HS, sizeof(WINE_DEFAULT_HS));
	cross_vintage(v, in);
	cross_lwin(v, in);
	cross_terroir(v, in);
	return v->n_bad - before;
}

const char *wine_field_name(int f) { return f >= 0 && f < WF_COUNT ? field_defs[f].name : "?"; }
