/*
 * test_wine_units.c -- the catalogue in-process (engine/catalogue/wine*.c, no HTTP):
 * every validation bound at and past its edge, the canonical document's
 * round trip, the dedup tiers with real-looking identifiers, and the
 * property that re-ingesting any stored wine matches it at the highest
 * tier it offers.  (The routes, the read-path filter and the gate over
 * HTTP are in test_wine.c, which parses with jansson: its JSON_* names
 * clash with net/json.h.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/edge/api.h"
#include "engine/base/config.h"
#include "engine/storage/shard.h"
#include "engine/catalogue/wine.h"
#include "tests/harness.h"
#include "tests/wm_test.h"

/* ---- helpers -------------------------------------------------------------- */

static struct api_ctx *ctx_new(struct shard *sh)
{
	struct api_ctx *c = calloc(1, sizeof(*c));
	cr_assert_not_null(c);
	c->sh = sh;
	c->who.authenticated = 1;
	c->who.is_platform = 1;
	snprintf(c->who.entity_id, sizeof(c->who.entity_id), "platform");
	return c;
}

/* Was (field, rule) recorded? */
static int has_error(const struct api_ctx *c, const char *field, const char *rule)
{
	for (unsigned i = 0; i < c->n_errs; i++)
		if (!strcmp(c->errs[i].field, field) && !strcmp(c->errs[i].rule, rule))
			return 1;
	return 0;
}

static void dump_errors(const struct api_ctx *c, char *out, size_t size)
{
	size_t n = 0;
	out[0] = 0;
	for (unsigned i = 0; i < c->n_errs && n < size; i++)
		n += (size_t)snprintf(out + n, size - n, "%s:%s ", c->errs[i].field, c->errs[i].rule);
}

/* Validate `members` (JSON object members text) after the required ones. */
static unsigned validate_members(const char *members, struct api_ctx *c, struct wine_in *in)
{
	char text[64 * 1024];
	snprintf(text, sizeof(text), "{\"title\":\"T\",\"producer\":\"prd_01M7YD76420001QQVSYV\"%s%s}",
		 members[0] ? "," : "", members);
	struct json_doc *d = json_parse(text, strlen(text), NULL, NULL);
	cr_assert_not_null(d, "test body does not parse: %s", text);
	c->n_errs = 0;
	struct wine_vctx v = {c, 0, 0};
	unsigned n = wine_validate(&v, json_root(d), in);
	json_doc_free(d);
	return n;
}

struct edge {
	const char *members;
	const char *field; /* NULL: valid */
	const char *rule;
};

/* A string of n copies of ch, as JSON string content. */
static char *rep(char ch, size_t n)
{
	char *s = malloc(n + 1);
	memset(s, ch, n);
	s[n] = 0;
	return s;
}

/* ---- bounds ---------------------------------------------------------------- */

WM_TEST(wine_units, every_bound_at_and_past_its_edge)
{
	static const struct edge edges[] = {
		{"\"vintage\":1900", NULL, NULL},
		{"\"vintage\":1899", "vintage", "range"},
		{"\"vintage\":2099", NULL, NULL},
		{"\"vintage\":2100", "vintage", "range"},
		{"\"vintage\":\"N.V.\"", NULL, NULL},
		{"\"vintage\":\"2015\"", NULL, NULL},
		{"\"vintage\":\"fifteen\"", "vintage", "vintage"},
		{"\"vintage\":2015.5", "vintage", "type"},
		{"\"vintage\":2015,\"is_non_vintage\":true", "is_non_vintage", "exclusive"},
		{"\"vintage\":\"NV\",\"is_non_vintage\":false", "is_non_vintage", "exclusive"},
		{"\"is_non_vintage\":true,\"nv_base_vintage_pct\":100", NULL, NULL},
		{"\"is_non_vintage\":true,\"nv_base_vintage_pct\":100.01", "nv_base_vintage_pct", "range"},
		{"\"is_non_vintage\":true,\"nv_base_vintage_pct\":0", NULL, NULL},
		{"\"is_non_vintage\":true,\"nv_base_vintage_pct\":-0.01", "nv_base_vintage_pct", "range"},
		{"\"vintage\":2015,\"nv_base_vintage_pct\":50", "nv_base_vintage_pct", "requires_non_vintage"},
		{"\"abv\":0", NULL, NULL},
		{"\"abv\":22", NULL, NULL},
		{"\"abv\":22.00", NULL, NULL},
		{"\"abv\":22.01", "abv", "range"},
		{"\"abv\":-0.01", "abv", "range"},
		{"\"abv\":12.345", "abv", "precision"},
		{"\"abv\":\"12.5\"", "abv", "type"},
		{"\"volume_in_liters\":0.1875", NULL, NULL},
		{"\"volume_in_liters\":1.5e0", NULL, NULL},
		{"\"volume_in_liters\":\"75cl\"", NULL, NULL},
		{"\"volume_in_liters\":0", "volume_in_liters", "volume"},
		{"\"volume_in_liters\":-0.75", "volume_in_liters", "volume"},
		{"\"volume_in_liters\":0.0000001", "volume_in_liters", "volume"},
		{"\"volume_in_liters\":1000", NULL, NULL},
		{"\"volume_in_liters\":1000.000001", "volume_in_liters", "volume"},
		{"\"volume_in_liters\":\"1,500 ml\"", "volume_in_liters", "volume"},
		{"\"volume_in_liters\":true", "volume_in_liters", "type"},
		{"\"hs_code\":\"2204.21.79\"", NULL, NULL},
		{"\"hs_code\":\"2204\"", NULL, NULL},
		{"\"hs_code\":\"2204.21.79.11\"", NULL, NULL},
		{"\"hs_code\":\"2204.21.79.11.00\"", "hs_code", "max_length"},
		{"\"hs_code\":\"2204.2\"", "hs_code", "hs_code"},
		{"\"hs_code\":\"22042179\"", "hs_code", "hs_code"},
		{"\"colour\":\"rose\"", NULL, NULL},
		{"\"colour\":\"pink\"", "colour", "enum"},
		{"\"category\":\"overripe_grapes\"", NULL, NULL},
		{"\"category\":\"beer\"", "category", "enum"},
		{"\"dosage_class\":\"demi_sec\"", NULL, NULL},
		{"\"dosage_class\":\"medium\"", "dosage_class", "enum"},
		{"\"quality_scheme\":\"GI_none\"", NULL, NULL},
		{"\"quality_scheme\":\"AOC\"", "quality_scheme", "enum"},
		{"\"country\":\"FR\"", NULL, NULL},
		{"\"country\":\"fr\"", "country", "iso3166_alpha2"},
		{"\"country\":\"XX\"", "country", "iso3166_alpha2"},
		{"\"region\":{\"fr\":\"Bourgogne\",\"en\":\"Burgundy\",\"pt-BR\":\"Borgonha\",\"es-419\":\"Borgoña\"}", NULL, NULL},
		{"\"region\":{}", "region", "multilingual"},
		{"\"region\":{\"french\":\"Bourgogne\"}", "region.french", "language_tag"},
		{"\"region\":{\"fr\":\"\"}", "region.fr", "min_length"},
		{"\"sub_region\":\"Côte de Nuits\"", "sub_region", "requires_region"},
		{"\"region\":\"Bourgogne\",\"sub_region\":\"Côte de Nuits\"", NULL, NULL},
		{"\"grape_varieties\":[{\"variety\":\"Merlot\",\"vivc_number\":7657,\"percentage\":60},"
		 "{\"variety\":\"Cabernet Franc\",\"percentage\":40}]", NULL, NULL},
		{"\"grape_varieties\":[{\"variety\":\"A\",\"percentage\":33.33},{\"variety\":\"B\",\"percentage\":33.33},"
		 "{\"variety\":\"C\",\"percentage\":33.34}]", NULL, NULL},
		{"\"grape_varieties\":[{\"variety\":\"A\",\"percentage\":60},{\"variety\":\"B\",\"percentage\":40.01}]",
		 "grape_varieties", "percentage_sum"},
		{"\"grape_varieties\":[{\"variety\":\"A\",\"vivc_number\":99999}]", NULL, NULL},
		{"\"grape_varieties\":[{\"variety\":\"A\",\"vivc_number\":100000}]", "grape_varieties[0].vivc_number", "range"},
		{"\"grape_varieties\":[{\"percentage\":10}]", "grape_varieties[0].variety", "required"},
		{"\"grape_varieties\":[{\"variety\":\"A\",\"clone\":\"115\"}]", "grape_varieties[0].clone", "unknown_field"},
		{"\"bottler\":{\"name\":\"Mis en bouteille au château\",\"address\":\"33460 Margaux\\nFrance\"}", NULL, NULL},
		{"\"bottler\":{\"name\":\"X\"}", "bottler.address", "required"},
		{"\"importer\":\"Importer Ltd\"", "importer", "type"},
		{"\"allergens\":[\"sulphites\",\"egg\",\"milk\"]", NULL, NULL},
		{"\"allergens\":[\"sulphites\",\"sulphites\"]", "allergens[1]", "unique"},
		{"\"allergens\":[\"peanut\"]", "allergens[0]", "enum"},
		{"\"certifications\":[\"organic\",\"vegan\"]", NULL, NULL},
		{"\"certifications\":[\"kosher\"]", "certifications[0]", "enum"},
		{"\"energy_kj_per_100ml\":4000,\"energy_kcal_per_100ml\":1000", NULL, NULL},
		{"\"energy_kj_per_100ml\":4000.01", "energy_kj_per_100ml", "range"},
		{"\"energy_kcal_per_100ml\":1000.01", "energy_kcal_per_100ml", "range"},
		{"\"e_label_url\":\"https://e.example/w/1\"", NULL, NULL},
		{"\"e_label_url\":\"http://e.example/w/1\"", "e_label_url", "url"},
		{"\"nutrition_optional\":{\"sugars\":1.2,\"salt\":0.01}", NULL, NULL},
		{"\"nutrition_optional\":{\"sugars\":100.01}", "nutrition_optional.sugars", "range"},
		{"\"nutrition_optional\":{}", "nutrition_optional", "min_members"},
		{"\"nutrition_optional\":{\"fibre\":1}", "nutrition_optional.fibre", "unknown_field"},
		{"\"food_pairings\":[{\"pairing\":\"lamb\"}]", NULL, NULL},
		{"\"food_pairings\":[{}]", "food_pairings[0].pairing", "required"},
		{"\"main_image\":\"med_01M7YD76420001QQVSYV\"", NULL, NULL},
		{"\"main_image\":\"img_01M7YD76420001QQVSYV\"", "main_image", "media_id"},
		{"\"gallery\":[\"med_01M7YD76420001QQVSYV\",\"med_01M7YD76420001QQVSYV\"]", "gallery[1]", "unique"},
		{"\"ratings\":[{\"source\":\"RP\",\"score\":100,\"scale\":100}]", NULL, NULL},
		{"\"ratings\":[{\"source\":\"RP\",\"score\":100.01,\"scale\":100}]", "ratings[0].score", "score_within_scale"},
		{"\"ratings\":[{\"source\":\"JR\",\"score\":18.5,\"scale\":20,\"url\":\"https://x.example/r\"}]", NULL, NULL},
		{"\"ratings\":[{\"source\":\"JR\",\"score\":18.5}]", "ratings[0].scale", "required"},
		{"\"ratings\":[{\"source\":\"JR\",\"score\":1,\"scale\":1000.01}]", "ratings[0].scale", "range"},
		{"\"gtin\":\"8904000210037\"", NULL, NULL},
		{"\"gtin\":\"8904000210036\"", "gtin", "gtin"},
		{"\"gtin\":\"98904000210033\"", "gtin", "gtin"},
		{"\"gtins\":[\"8904000210037\",\"08904000210037\"]", "gtins[1]", "unique"},
		{"\"gtin\":8904000210037", "gtin", "type"},
		{"\"lwin\":\"1012361\"", NULL, NULL},
		{"\"lwin\":\"10123612015\",\"vintage\":2016", "lwin", "lwin_vintage"},
		{"\"lwin\":\"1012361201500750\",\"volume_in_liters\":1.5", "lwin", "lwin_bottle_size"},
		{"\"lwin\":\"101236\"", "lwin", "lwin"},
		{"\"medusa_product_id\":\"prod_01ABC\"", NULL, NULL},
		{"\"medusa_product_id\":\"prod 01\"", "medusa_product_id", "token"},
		{"\"status\":\"draft\"", NULL, NULL},
		{"\"status\":\"live\"", "status", "enum"},
		{"\"slug\":\"chateau-margaux-2015\"", NULL, NULL},
		{"\"slug\":\"Chateau Margaux\"", "slug", "slug"},
		{"\"slug\":\"a--b\"", "slug", "slug"},
		{"\"lot_number\":\"L 2015/04\"", NULL, NULL},
		{"\"lot_number\":\"L\\n1\"", "lot_number", "control_character"},
		{"\"description\":\"line one\\nline two\\ttab\"", NULL, NULL},
		{"\"description\":\"bell \\u0007\"", "description", "control_character"},
		{"\"id\":\"wine_x\"", "id", "read_only"},
		{"\"natural_key\":\"x\"", "natural_key", "read_only"},
		{"\"colour_of_label\":\"red\"", "colour_of_label", "unknown_field"},
	};
	struct api_ctx *c = ctx_new(NULL);
	struct wine_in in;
	char errs[2048];
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		unsigned n = validate_members(edges[i].members, c, &in);
		dump_errors(c, errs, sizeof(errs));
		if (!edges[i].field)
			cr_assert_eq(n, 0, "%s should be valid: %s", edges[i].members, errs);
		else
			cr_assert(has_error(c, edges[i].field, edges[i].rule), "%s: expected %s:%s, got %s",
				  edges[i].members, edges[i].field, edges[i].rule, errs);
	}
	free(c);
}

WM_TEST(wine_units, text_and_array_bounds_at_and_past_the_edge)
{
	struct api_ctx *c = ctx_new(NULL);
	struct wine_in in;
	char *body = malloc(64 * 1024);
	struct {
		const char *name;
		size_t max;
	} texts[] = {{"cuvee", WINE_MAX_NAME}, {"lot_number", WINE_MAX_LOT}, {"ingredients", WINE_MAX_INGREDIENTS},
		     {"description", WINE_MAX_DESCRIPTION}, {"aroma_profile", WINE_MAX_PROFILE},
		     {"medusa_product_id", WINE_MAX_MEDUSA}, {"slug", WINE_MAX_SLUG}, {"designation", WINE_MAX_NAME}};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		for (size_t extra = 0; extra < 2; extra++) {
			char *s = rep('a', texts[i].max + extra);
			snprintf(body, 64 * 1024, "\"%s\":\"%s\"", texts[i].name, s);
			free(s);
			unsigned n = validate_members(body, c, &in);
			cr_assert_eq(n != 0, extra == 1, "%s at %zu bytes", texts[i].name, texts[i].max + extra);
			if (extra)
				cr_assert(has_error(c, texts[i].name, "max_length"));
		}
	/* nested and composite bounds */
	for (size_t extra = 0; extra < 2; extra++) {
		char *s = rep('a', WINE_MAX_ADDRESS + extra);
		snprintf(body, 64 * 1024, "\"bottler\":{\"name\":\"B\",\"address\":\"%s\"}", s);
		free(s);
		cr_assert_eq(validate_members(body, c, &in) != 0, extra == 1, "address at %zu", WINE_MAX_ADDRESS + extra);
		if (extra)
			cr_assert(has_error(c, "bottler.address", "max_length"));
		s = rep('u', WINE_MAX_URL - 12 + extra);
		snprintf(body, 64 * 1024, "\"e_label_url\":\"https://e.x/%s\"", s);
		free(s);
		cr_assert_eq(validate_members(body, c, &in) != 0, extra == 1, "url at %zu", WINE_MAX_URL + extra);
		size_t n = (size_t)snprintf(body, 64 * 1024, "\"region\":{");
		for (size_t i = 0; i < WINE_MAX_ML_NAMES + extra; i++)
			n += (size_t)snprintf(body + n, 64 * 1024 - n, "%s\"%c%c\":\"R\"", i ? "," : "", (char)('a' + i / 26),
					      (char)('a' + i % 26));
		snprintf(body + n, 64 * 1024 - n, "}");
		cr_assert_eq(validate_members(body, c, &in) != 0, extra == 1, "%zu languages", WINE_MAX_ML_NAMES + extra);
		if (extra)
			cr_assert(has_error(c, "region", "multilingual"));
	}
	/* title is one of the required members: replace it */
	for (size_t extra = 0; extra < 2; extra++) {
		char *s = rep('t', WINE_MAX_TITLE + extra);
		char text[1024];
		snprintf(text, sizeof(text), "{\"title\":\"%s\",\"producer\":\"prd_01M7YD76420001QQVSYV\"}", s);
		free(s);
		struct json_doc *d = json_parse(text, strlen(text), NULL, NULL);
		struct wine_vctx v = {c, 0, 0};
		c->n_errs = 0;
		cr_assert_eq(wine_validate(&v, json_root(d), &in) != 0, extra == 1);
		json_doc_free(d);
	}
	/* arrays: gtins 16, gallery 32, ratings 32, pairings 32, grapes 20 */
	struct {
		const char *name;
		unsigned max;
		const char *fmt; /* one element, %u = index */
	} arrays[] = {
		{"gallery", WINE_MAX_GALLERY, "\"med_01M7YD7642%04uQQVSYV\""},
		{"ratings", WINE_MAX_RATINGS, "{\"source\":\"s%u\",\"score\":1,\"scale\":5}"},
		{"food_pairings", WINE_MAX_PAIRINGS, "{\"pairing\":\"p%u\"}"},
		{"grape_varieties", WINE_MAX_GRAPES, "{\"variety\":\"v%u\",\"percentage\":1}"},
	};
	for (size_t a = 0; a < sizeof(arrays) / sizeof(arrays[0]); a++)
		for (unsigned extra = 0; extra < 2; extra++) {
			size_t n = (size_t)snprintf(body, 64 * 1024, "\"%s\":[", arrays[a].name);
			for (unsigned i = 0; i < arrays[a].max + extra; i++) {
				n += (size_t)snprintf(body + n, 64 * 1024 - n, i ? "," : "");
				n += (size_t)snprintf(body + n, 64 * 1024 - n, arrays[a].fmt, i);
			}
			snprintf(body + n, 64 * 1024 - n, "]");
			unsigned bad = validate_members(body, c, &in);
			cr_assert_eq(bad != 0, extra == 1, "%s with %u elements", arrays[a].name, arrays[a].max + extra);
			if (extra)
				cr_assert(has_error(c, arrays[a].name, "max_items"), "%s", arrays[a].name);
		}
	for (unsigned extra = 0; extra < 2; extra++) {
		size_t n = (size_t)snprintf(body, 64 * 1024, "\"gtins\":[");
		for (unsigned i = 0; i < WINE_MAX_GTINS + extra; i++) {
			char d[24];
			snprintf(d, sizeof(d), "400638133%03u", i % 1000);
			n += (size_t)snprintf(body + n, 64 * 1024 - n, "%s\"%s%d\"", i ? "," : "", d,
					      wid_gtin_check_digit(d, 12));
		}
		snprintf(body + n, 64 * 1024 - n, "]");
		unsigned bad = validate_members(body, c, &in);
		cr_assert_eq(bad != 0, extra == 1, "gtins with %u elements", WINE_MAX_GTINS + extra);
	}
	free(body);
	free(c);
}

WM_TEST(wine_units, many_failures_are_all_reported)
{
	struct api_ctx *c = ctx_new(NULL);
	struct wine_in in;
	unsigned n = validate_members("\"vintage\":1800,\"abv\":30,\"colour\":\"blue\",\"country\":\"fr\","
				      "\"gtin\":\"123\",\"allergens\":[\"x\"],\"bogus\":1,\"hs_code\":\"x\"",
				      c, &in);
	cr_assert_eq(n, 8, "every failing member is counted, got %u", n);
	cr_assert_eq(c->n_errs, 8);
	free(c);
}

/* ---- the canonical document --------------------------------------------------- */

WM_TEST(wine_units, canonical_document_round_trips)
{
	static const char body[] =
		"{\"title\":\"Château Margaux 2015\",\"producer\":\"prd_01M7YD76420001QQVSYV\",\"cuvee\":\"Grand Vin\","
		"\"vintage\":\"2015\",\"abv\":13.50,\"volume_in_liters\":\"75 cl\",\"colour\":\"red\",\"category\":\"wine\","
		"\"country\":\"FR\",\"region\":{\"fr\":\"Bordeaux\"},\"appellation\":\"Margaux\",\"quality_scheme\":\"PDO\","
		"\"grape_varieties\":[{\"variety\":\"Cabernet Sauvignon\",\"vivc_number\":1929,\"percentage\":87}],"
		"\"gtin\":\"8904000210037\",\"gtins\":[\"18904000210034\"],\"lwin\":\"1012361\","
		"\"energy_kj_per_100ml\":300.0,\"allergens\":[\"sulphites\"]}";
	struct json_doc *d = json_parse(body, strlen(body), NULL, NULL);
	struct api_ctx *c = ctx_new(NULL);
	struct wine_vctx v = {c, 0, 0};
	struct wine_in in;
	cr_assert_eq(wine_validate(&v, json_root(d), &in), 0);
	cr_assert_eq(in.abv, 1350);
	cr_assert_eq(in.volume_ul, 750000);
	cr_assert_eq(in.vintage, 2015);
	cr_assert_eq(in.n_gtins, 2);
	struct buf a, b;
	buf_init(&a, 0);
	buf_init(&b, 0);
	cr_assert_eq(wine_canonical_doc(&in, "wine_X", "prd_01M7YD76420001QQVSYV", &a), 0);
	buf_putc(&a, 0);
	cr_assert(strstr(a.data, "\"abv\":13.5,"), "%s", a.data);
	cr_assert(strstr(a.data, "\"volume_in_liters\":0.75,"), "%s", a.data);
	cr_assert(strstr(a.data, "\"gtins\":[\"08904000210037\",\"18904000210034\"]"), "%s", a.data);
	cr_assert(strstr(a.data, "\"hs_code\":\"2204.21.79\""), "%s", a.data);
	cr_assert(strstr(a.data, "\"energy_kj_per_100ml\":300,"), "%s", a.data);
	cr_assert(!strstr(a.data, "\"gtin\":"), "gtin is folded into gtins");
	/* the stored document validates to the same values and writes the same bytes */
	struct json_doc *d2 = json_parse(a.data, a.len - 1, NULL, NULL);
	struct wine_in in2;
	struct wine_vctx v2 = {NULL, 0, 1};
	cr_assert_eq(wine_validate(&v2, json_root(d2), &in2), 0);
	cr_assert_eq(in2.abv, in.abv);
	cr_assert_eq(in2.volume_ul, in.volume_ul);
	cr_assert_eq(in2.n_gtins, 2);
	cr_assert_eq(wine_canonical_doc(&in2, "wine_X", "prd_01M7YD76420001QQVSYV", &b), 0);
	buf_putc(&b, 0);
	cr_assert_str_eq(a.data, b.data);
	json_doc_free(d2);
	json_doc_free(d);
	buf_free(&a);
	buf_free(&b);
	free(c);
}

/* ---- dedup in-process ----------------------------------------------------------- */

struct fixture {
	struct shard sh;
	struct config cfg;
	char dir[256];
	struct api_ctx *c;
};

static struct fixture *fixture_open(void)
{
	struct fixture *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/wm-wine-units-XXXXXX");
	cr_assert_not_null(mkdtemp(f->dir));
	config_defaults(&f->cfg);
	snprintf(f->cfg.data_dir, sizeof(f->cfg.data_dir), "%s/data", f->dir);
	snprintf(f->cfg.wal_mode, sizeof(f->cfg.wal_mode), "write");
	f->cfg.snapshot_interval_s = 0;
	char err[256];
	cr_assert_eq(shard_open(&f->sh, &f->cfg, err, sizeof(err)), 0, "%s", err);
	f->c = ctx_new(&f->sh);
	return f;
}

static void fixture_close(struct fixture *f)
{
	shard_close(&f->sh);
	rm_rf(f->dir);
	free(f->c);
	free(f);
}

/* Ingest a body; the result status.  Field errors are printed on failure. */
static int ingest(struct fixture *f, const char *body, struct wine_ingest_result *r)
{
	struct json_doc *d = json_parse(body, strlen(body), NULL, NULL);
	cr_assert_not_null(d, "%s", body);
	f->c->n_errs = 0;
	wine_ingest(f->c, json_root(d), r);
	json_doc_free(d);
	if (r->status >= 400) {
		char errs[1024];
		dump_errors(f->c, errs, sizeof(errs));
		cr_log_info("ingest %d %s %s: %s", r->status, r->code ? r->code : "", r->detail, errs);
	}
	return r->status;
}

static int match(struct fixture *f, const char *body, struct wine_match *m)
{
	struct json_doc *d = json_parse(body, strlen(body), NULL, NULL);
	f->c->n_errs = 0;
	int rc = wine_match_body(f->c, json_root(d), m);
	json_doc_free(d);
	return rc;
}

static size_t wines(struct fixture *f) { return table_count(&f->sh.tables[REC_T_WINE]); }

WM_TEST(wine_units, tiers_with_real_looking_identifiers)
{
	struct fixture *f = fixture_open();
	struct wine_ingest_result r;
	/* unit GTIN-13 8904000210037, its case GTIN-14 with indicator 1: 18904000210034 */
	cr_assert_eq(ingest(f, "{\"title\":\"Domaine Leflaive Puligny-Montrachet 2019\",\"producer\":{\"name\":"
			       "\"Domaine Leflaive\",\"country\":\"FR\"},\"vintage\":2019,\"volume_in_liters\":0.75,"
			       "\"gtin\":\"8904000210037\"}", &r), 201);
	char first[ID_MAX_LEN];
	snprintf(first, sizeof(first), "%s", r.wine_id);
	cr_assert_eq(ingest(f, "{\"title\":\"Leflaive Puligny 19 (case)\",\"producer\":{\"name\":\"Leflaive\"},"
			       "\"gtin\":\"18904000210034\",\"abv\":13}", &r), 200);
	cr_assert_eq(r.match.tier, TIER_GTIN);
	cr_assert_eq(r.match.confidence, 9500, "a match through a case GTIN scores 0.95");
	cr_assert_str_eq(r.wine_id, first);
	cr_assert_eq(wines(f), 1);
	cr_assert(strstr(r.enriched, "\"abv\"") && strstr(r.enriched, "\"gtins\""), "%s", r.enriched);
	cr_assert_eq(ingest(f, "{\"title\":\"x\",\"producer\":{\"name\":\"Other\"},\"gtin\":\"08904000210037\"}", &r), 200);
	cr_assert_eq(r.match.confidence, WINE_CONF_ONE);
	/* the same GTIN on another vintage: a reused barcode, refused */
	cr_assert_eq(ingest(f, "{\"title\":\"x\",\"producer\":{\"name\":\"Domaine Leflaive\"},\"vintage\":2020,"
			       "\"gtin\":\"8904000210037\"}", &r), 409);
	cr_assert_str_eq(r.code, "identifier_conflict");

	/* LWIN: LWIN-11 + volume vs LWIN-18 (case of 6) and LWIN-16 of the same SKU */
	cr_assert_eq(ingest(f, "{\"title\":\"Château Margaux 2015\",\"producer\":{\"name\":\"Château Margaux\","
			       "\"country\":\"FR\"},\"lwin\":\"10123612015\",\"volume_in_liters\":0.75}", &r), 201);
	snprintf(first, sizeof(first), "%s", r.wine_id);
	cr_assert_eq(ingest(f, "{\"title\":\"Margaux 15 6x75\",\"producer\":{\"name\":\"Ch. Margaux\"},"
			       "\"lwin\":\"101236120150600750\"}", &r), 200);
	cr_assert_eq(r.match.tier, TIER_LWIN);
	cr_assert_str_eq(r.wine_id, first);
	cr_assert_eq(ingest(f, "{\"title\":\"M\",\"producer\":{\"name\":\"X\"},\"lwin\":\"1012361201500750\"}", &r), 200);
	cr_assert_eq(r.match.tier, TIER_LWIN);
	struct wine_match m;
	/* LWIN-11 without volume: the single SKU of that wine-vintage */
	cr_assert_eq(match(f, "{\"title\":\"M\",\"producer\":{\"name\":\"X\"},\"lwin\":\"10123612015\"}", &m), 0);
	cr_assert_eq(m.result, WR_MATCHED);
	cr_assert_eq(m.tier, TIER_LWIN);
	cr_assert_eq(m.confidence, 9000);
	/* the magnum of the same wine-vintage: a candidate */
	cr_assert_eq(match(f, "{\"title\":\"M\",\"producer\":{\"name\":\"X\"},\"lwin\":\"10123612015\","
			      "\"volume_in_liters\":1.5}", &m), 0);
	cr_assert_eq(m.result, WR_CANDIDATE);
	cr_assert_eq(m.tier, TIER_LWIN);
	/* LWIN-7 alone: candidate */
	cr_assert_eq(match(f, "{\"title\":\"M\",\"producer\":{\"name\":\"X\"},\"lwin\":\"1012361\"}", &m), 0);
	cr_assert_eq(m.result, WR_CANDIDATE);

	/* natural key: accents, case, NV spellings, volume units */
	cr_assert_eq(ingest(f, "{\"title\":\"Krug Grande Cuvée\",\"producer\":{\"name\":\"Krug\",\"country\":\"FR\"},"
			       "\"cuvee\":\"Grande Cuvée\",\"vintage\":\"NV\",\"volume_in_liters\":\"75cl\"}", &r), 201);
	snprintf(first, sizeof(first), "%s", r.wine_id);
	size_t before = wines(f);
	static const char *const same[] = {
		"{\"title\":\"KRUG GRANDE CUVEE\",\"producer\":{\"name\":\"KRUG\"},\"cuvee\":\"GRANDE CUVEE\","
		"\"vintage\":\"N.V.\",\"volume_in_liters\":0.75,\"country\":\"FR\"}",
		"{\"title\":\"k\",\"producer\":{\"name\":\"krug\"},\"cuvee\":\"grande-cuvée\",\"is_non_vintage\":true,"
		"\"volume_in_liters\":\"750 ml\"}",
		"{\"title\":\"k\",\"producer\":{\"name\":\"Krug\"},\"cuvee\":\"Grande  Cuvée\",\"vintage\":\"non vintage\","
		"\"volume_in_liters\":\"0,75 l\"}",
	};
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		cr_assert_eq(ingest(f, same[i], &r), 200, "%s", same[i]);
		cr_assert_eq(r.match.tier, TIER_NATURAL_KEY);
		cr_assert_str_eq(r.wine_id, first);
	}
	cr_assert_eq(wines(f), before, "no second row");
	/* another format of the same cuvee: a candidate, and ingest creates it */
	cr_assert_eq(match(f, "{\"title\":\"k\",\"producer\":{\"name\":\"Krug\"},\"cuvee\":\"Grande Cuvée\","
			      "\"vintage\":\"NV\",\"volume_in_liters\":1.5}", &m), 0);
	cr_assert_eq(m.result, WR_CANDIDATE);
	cr_assert_eq(m.tier, TIER_NATURAL_KEY);
	cr_assert_eq(match(f, "{\"title\":\"k\",\"producer\":{\"name\":\"Bollinger\"},\"vintage\":\"NV\","
			      "\"volume_in_liters\":0.75,\"country\":\"FR\"}", &m), 0);
	cr_assert_eq(m.result, WR_NEW);
	cr_assert_eq(m.tier, TIER_NONE);
	fixture_close(f);
}

WM_TEST(wine_units, enrichment_fills_and_never_overwrites)
{
	struct fixture *f = fixture_open();
	struct wine_ingest_result r;
	cr_assert_eq(ingest(f, "{\"title\":\"Original title\",\"producer\":{\"name\":\"P\",\"country\":\"IT\"},"
			       "\"vintage\":2018,\"volume_in_liters\":0.75,\"abv\":13,\"bottler\":{\"name\":\"B\","
			       "\"address\":\"Via 1\"}}", &r), 201);
	char id[ID_MAX_LEN];
	snprintf(id, sizeof(id), "%s", r.wine_id);
	cr_assert_eq(ingest(f, "{\"title\":\"Other title\",\"producer\":{\"name\":\"P\"},\"vintage\":2018,"
			       "\"volume_in_liters\":0.75,\"abv\":14,\"lot_number\":\"L1\",\"bottler\":{\"name\":\"C\","
			       "\"address\":\"Via 2\"},\"importer\":{\"name\":\"I\",\"address\":\"A\"}}", &r), 200);
	const struct wine *w = wine_get(&f->sh, id, strlen(id));
	cr_assert_not_null(w);
	cr_assert_eq(w->abv, 1300, "abv kept");
	cr_assert(strstr(w->row.doc, "\"title\":\"Original title\""));
	cr_assert(strstr(w->row.doc, "\"lot_number\":\"L1\""));
	cr_assert(strstr(w->row.doc, "\"name\":\"B\""), "bottler kept");
	cr_assert(strstr(w->row.doc, "\"importer\":{\"name\":\"I\""));
	cr_assert_eq(r.n_enriched, 2, "lot_number and importer: %s", r.enriched);
	/* nothing new: no write, still a match */
	uint64_t lsn = w->row.lsn;
	cr_assert_eq(ingest(f, "{\"title\":\"x\",\"producer\":{\"name\":\"P\"},\"vintage\":2018,"
			       "\"volume_in_liters\":0.75}", &r), 200);
	cr_assert_eq(r.n_enriched, 0);
	cr_assert_eq(wine_get(&f->sh, id, strlen(id))->row.lsn, lsn, "the row was not rewritten");
	fixture_close(f);
}

WM_TEST(wine_units, derived_slugs_take_suffixes_up_to_the_bound)
{
	struct fixture *f = fixture_open();
	struct wine_ingest_result r;
	char body[256];
	for (int i = 1; i <= WINE_SLUG_SUFFIX_MAX + 1; i++) {
		snprintf(body, sizeof(body), "{\"title\":\"Cuvée Prestige\",\"producer\":{\"name\":\"Maison %d\"}}", i);
		int st = ingest(f, body, &r);
		if (i <= WINE_SLUG_SUFFIX_MAX) {
			cr_assert_eq(st, 201, "wine %d", i);
			const struct wine *w = wine_get(&f->sh, r.wine_id, strlen(r.wine_id));
			char want[64];
			if (i == 1)
				snprintf(want, sizeof(want), "cuvee-prestige");
			else
				snprintf(want, sizeof(want), "cuvee-prestige-%d", i);
			cr_assert_str_eq(wine_key(w, w->slug), want);
		} else {
			cr_assert_eq(st, 409, "past the bound");
			cr_assert_str_eq(r.code, "slug_taken");
		}
	}
	fixture_close(f);
}

/* ---- property: re-ingesting any stored wine matches it at its highest tier ------ */

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The highest tier a stored wine offers. */
static enum wine_tier highest_tier(const struct wine *w)
{
	if (w->n_gtins)
		return TIER_GTIN;
	if (w->l16.len)
		return TIER_LWIN;
	return w->nk.len ? TIER_NATURAL_KEY : TIER_NONE;
}

/* The stored document without the members the service assigns. */
static void body_of(const struct wine *w, char *out, size_t size)
{
	struct json_doc *d = json_parse(w->row.doc, w->row.doc_len, NULL, NULL);
	struct buf b;
	buf_init(&b, 0);
	struct jw jw;
	jw_init(&jw, &b);
	jw_obj_begin(&jw);
	const struct json_value *root = json_root(d);
	for (uint32_t i = 0; i < root->len; i++) {
		const char *k = root->u.members[i].key;
		int ro = 0;
		for (int j = 0; wine_readonly_fields[j]; j++)
			ro |= !strcmp(k, wine_readonly_fields[j]);
		if (ro)
			continue;
		jw_key(&jw, k);
		jw_value(&jw, &root->u.members[i].value);
	}
	jw_obj_end(&jw);
	snprintf(out, size, "%.*s", (int)b.len, b.data);
	buf_free(&b);
	json_doc_free(d);
}

#define PROP_WINES 300

WM_TEST(wine_prop, reingesting_a_stored_wine_matches_it_at_its_highest_tier)
{
	struct fixture *f = fixture_open();
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	static const char *const vols[] = {"0.375", "0.75", "1.5", "3", "0.1875", "\"75cl\"", "\"1.5 l\""};
	static const char *const countries[] = {"FR", "IT", "ES", "US", "AR", "DE"};
	char body[2048];
	struct wine_ingest_result r;
	for (int i = 0; i < PROP_WINES; i++) {
		uint64_t x = rng_next(&seed);
		int kind = (int)(x % 3); /* 0 GTIN, 1 LWIN, 2 natural key only */
		int nv = (x >> 8) % 5 == 0;
		int year = 1950 + (int)((x >> 12) % 70);
		char gtin[64] = "", lwin[64] = "";
		if (kind == 0) {
			char d[24];
			snprintf(d, sizeof(d), "%012llu", (unsigned long long)((x >> 16) % 1000000000000ull));
			if (d[0] == '0' && d[1] == '0')
				d[0] = '5';
			int cd = wid_gtin_check_digit(d, 12);
			if ((x >> 40) % 2) { /* as the case GTIN-14 */
				char u[32];
				snprintf(u, sizeof(u), "%s%d", d, cd);
				struct wid_gtin unit, cs;
				cr_assert_eq(wid_gtin_parse(u, 13, &unit), WID_OK);
				cr_assert_eq(wid_gtin_case_of_unit(&unit, 1 + (int)((x >> 41) % 8), &cs), WID_OK);
				snprintf(gtin, sizeof(gtin), ",\"gtin\":\"%s\"", cs.digits);
			} else {
				snprintf(gtin, sizeof(gtin), ",\"gtin\":\"%s%d\"", d, cd);
			}
		} else if (kind == 1) {
			snprintf(lwin, sizeof(lwin), ",\"lwin\":\"%07d\"", 1000000 + i);
		}
		char vin[32];
		if (nv)
			snprintf(vin, sizeof(vin), "\"NV\"");
		else
			snprintf(vin, sizeof(vin), "%d", year);
		snprintf(body, sizeof(body),
			 "{\"title\":\"Prop %d\",\"producer\":{\"name\":\"Producteur Numéro %d\",\"country\":\"%s\"},"
			 "\"cuvee\":\"Cuvée %llu\",\"vintage\":%s,\"volume_in_liters\":%s%s%s}",
			 i, i % 40, countries[(x >> 20) % 6], (unsigned long long)((x >> 24) % 7), vin,
			 vols[(x >> 30) % 7], gtin, lwin);
		int st = ingest(f, body, &r);
		cr_assert(st == 201 || st == 200, "%s -> %d", body, st);
	}
	size_t n = wines(f);
	cr_assert_gt(n, PROP_WINES / 2);
	struct oidx_iter it;
	char doc[8192];
	int checked = 0;
	for (int ok = oidx_seek_ge(&f->sh.tables[REC_T_WINE].by_order, NULL, 0, &it); ok; ok = oidx_next(&it)) {
		const struct wine *w = oidx_iter_val(&it);
		char id[ID_MAX_LEN];
		snprintf(id, sizeof(id), "%.*s", (int)w->row.id_len, w->row.id);
		enum wine_tier want = highest_tier(w);
		body_of(w, doc, sizeof(doc));
		struct wine_match m;
		cr_assert_eq(match(f, doc, &m), 0, "%s", doc);
		cr_assert_eq(m.result, WR_MATCHED, "%s did not match: %s", id, doc);
		cr_assert_eq(m.tier, want, "%s matched at tier %d, highest is %d", id, m.tier, want);
		cr_assert_eq(memcmp(m.wine->row.id, id, w->row.id_len), 0);
		checked++;
	}
	cr_assert_eq((size_t)checked, n);
	/* and ingest agrees: nothing is created */
	for (int ok = oidx_seek_ge(&f->sh.tables[REC_T_WINE].by_order, NULL, 0, &it); ok; ok = oidx_next(&it)) {
		body_of(oidx_iter_val(&it), doc, sizeof(doc));
		cr_assert_eq(ingest(f, doc, &r), 200);
		/* the row may have been replaced: restart from its id */
		cr_assert(oidx_seek_ge(&f->sh.tables[REC_T_WINE].by_order, r.wine_id, (uint32_t)strlen(r.wine_id), &it));
	}
	cr_assert_eq(wines(f), n, "re-ingesting created nothing");
	fixture_close(f);
}

/* The stored documents and indexes survive a restart (snapshot + replay). */
WM_TEST(wine_units, replay_rebuilds_rows_and_indexes)
{
	struct fixture *f = fixture_open();
	struct wine_ingest_result r;
	cr_assert_eq(ingest(f, "{\"title\":\"R\",\"producer\":{\"name\":\"Replay Estate\",\"country\":\"PT\"},"
			       "\"vintage\":2011,\"volume_in_liters\":0.75,\"gtin\":\"8904000210037\",\"medusa_product_id\":\"m1\"}",
			 &r), 201);
	char id[ID_MAX_LEN];
	snprintf(id, sizeof(id), "%s", r.wine_id);
	const struct wine *w = wine_get(&f->sh, id, strlen(id));
	char *doc = strdup(w->row.doc);
	shard_close(&f->sh);
	memset(&f->sh, 0, sizeof(f->sh));
	char err[256];
	cr_assert_eq(shard_open(&f->sh, &f->cfg, err, sizeof(err)), 0, "%s", err);
	w = wine_get(&f->sh, id, strlen(id));
	cr_assert_not_null(w);
	cr_assert_str_eq(w->row.doc, doc);
	cr_assert_eq(wine_by_medusa(&f->sh, "m1", 2), w);
	cr_assert_eq(wine_by_slug(&f->sh, "r", 1), w);
	struct wine_match m;
	cr_assert_eq(match(f, "{\"title\":\"x\",\"producer\":{\"name\":\"y\"},\"gtin\":\"8904000210037\"}", &m), 0);
	cr_assert_eq(m.result, WR_MATCHED);
	cr_assert_eq(m.wine, w);
	free(doc);
	fixture_close(f);
}
