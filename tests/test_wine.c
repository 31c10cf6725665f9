/*
 * test_wine.c -- the catalogue over HTTP against real wm-shard processes:
 * producers (dedup by slug, the estate link), wines (create, canonical
 * document, every error listed, lists and filters, PATCH and the status
 * table, the read-path filter for drafts, the publish gate), dedup by each
 * tier with its wine.matched event, concurrent ingest on two connections,
 * the match endpoint, the crosswalk, idempotent retries and a kill -9.
 * (In-process unit and property tests: test_wine_units.c.)
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/api_client.h"
#include "tests/harness.h"
#include "tests/wm_test.h"

/* ---- helpers ------------------------------------------------------------ */

/* tc_call() expecting a status; the body. */
static json_t *expect(int port, const char *method, const char *path, const char *key, const char *body, int want)
{
	int st;
	json_t *j = tc_call(port, method, path, key, body, &st);
	if (st != want) {
		char *dump = json_dumps(j, JSON_COMPACT);
		cr_assert_eq(st, want, "%s %s: got %d, want %d: %s", method, path, st, want, dump);
		free(dump);
	}
	return j;
}

/* A partner with roles (JSON array text), walked to live; its id in out. */
static void partner(int port, const char *name, const char *roles, const char *otype, char *out)
{
	char body[512], path[128];
	snprintf(body, sizeof(body), "{\"legal_name\":\"%s\",\"country\":\"FR\",\"roles\":%s%s%s%s}", name, roles,
		 otype ? ",\"originator_type\":\"" : "", otype ? otype : "", otype ? "\"" : "");
	json_t *j = expect(port, "POST", "/v1/partners", NULL, body, 201);
	snprintf(out, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
	static const char *const steps[] = {"verified", "roles_enabled", "configured", "integrated", "live"};
	snprintf(path, sizeof(path), "/v1/partners/%s", out);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		snprintf(body, sizeof(body), "{\"status\":\"%s\"}", steps[i]);
		json_decref(expect(port, "PATCH", path, NULL, body, 200));
	}
}

/* Create a wine; its id into out (may be NULL); the body (caller decrefs). */
static json_t *wine(int port, const char *key, const char *body, int want, char *out)
{
	json_t *j = expect(port, "POST", "/v1/wines", key, body, want);
	if (out)
		snprintf(out, 64, "%s", tc_jstr(j, "id"));
	return j;
}

static size_t list_count(int port, const char *path, const char *key)
{
	json_t *j = expect(port, "GET", path, key, NULL, 200);
	size_t n = json_array_size(json_object_get(j, "data"));
	json_decref(j);
	return n;
}

/* Every wine of the catalogue (operator view). */
static size_t wine_count(int port) { return list_count(port, "/v1/wines?page_size=200", NULL); }

/* A complete, publishable French wine of producer prd (members text). */
static void complete_wine(char *out, size_t size, const char *title, const char *prd, const char *extra)
{
	snprintf(out, size,
		 "{\"title\":\"%s\",\"producer\":\"%s\",\"vintage\":2020,\"abv\":13,\"volume_in_liters\":0.75,"
		 "\"colour\":\"red\",\"category\":\"wine\",\"country\":\"FR\",\"region\":\"Bourgogne\","
		 "\"bottler\":{\"name\":\"Domaine Test\",\"address\":\"21000 Dijon, France\"},\"lot_number\":\"L2020-1\","
		 "\"allergens\":[\"sulphites\"],\"ingredients\":\"grapes, preservative: sulphites\","
		 "\"energy_kj_per_100ml\":297,\"energy_kcal_per_100ml\":71%s%s}",
		 title, prd, extra ? "," : "", extra ? extra : "");
}

static void producer(int port, const char *key, const char *body, char *out)
{
	json_t *j = expect(port, "POST", "/v1/producers", key, body, 201);
	snprintf(out, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
}

/* The newest event of a type (operator view); caller decrefs. */
static json_t *last_event(int port, const char *type)
{
	char path[128];
	snprintf(path, sizeof(path), "/v1/events?type=%s&page_size=200", type);
	json_t *j = expect(port, "GET", path, NULL, NULL, 200);
	json_t *data = json_object_get(j, "data");
	cr_assert_gt(json_array_size(data), 0, "no %s event", type);
	json_t *e = json_incref(json_array_get(data, json_array_size(data) - 1));
	json_decref(j);
	return e;
}

/* ---- producers ----------------------------------------------------------------- */

WM_TEST(producer, create_get_list_patch_and_slug_dedup)
{
	struct wm_proc p;
	tc_start(&p);
	char id[64], path[128];
	json_t *j = expect(p.port, "POST", "/v1/producers", NULL,
			   "{\"name\":\"Château Pontet-Canet\",\"country\":\"FR\",\"region\":\"Pauillac\","
			   "\"website\":\"https://www.pontet-canet.com\",\"description\":\"Biodynamic since 2004.\\nPauillac.\"}",
			   201);
	snprintf(id, sizeof(id), "%s", tc_jstr(j, "id"));
	cr_assert_str_eq(tc_jstr(j, "slug"), "chateau-pontet-canet");
	cr_assert_str_eq(tc_jstr(j, "created_by"), "platform");
	cr_assert(!strncmp(id, "prd_", 4));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/producers/%s", id);
	j = expect(p.port, "GET", path, NULL, NULL, 200);
	cr_assert_str_eq(tc_jstr(j, "name"), "Château Pontet-Canet");
	json_decref(j);
	/* the same name spelled otherwise is the same producer */
	tc_expect_code(p.port, "POST", "/v1/producers", NULL, "{\"name\":\"CHATEAU PONTET CANET\"}", 409, "producer_exists");
	/* an explicit slug tells two estates apart */
	char other[64];
	producer(p.port, NULL, "{\"name\":\"Château Pontet-Canet\",\"slug\":\"pontet-canet-second\"}", other);
	/* every error at once */
	j = expect(p.port, "POST", "/v1/producers", NULL,
		   "{\"country\":\"fr\",\"website\":\"ftp://x\",\"slug\":\"Not A Slug\",\"id\":\"prd_x\",\"owner\":1}", 422);
	cr_assert(tc_lists_error(j, "name", "required"));
	cr_assert(tc_lists_error(j, "country", "iso3166_alpha2"));
	cr_assert(tc_lists_error(j, "website", "url"));
	cr_assert(tc_lists_error(j, "slug", "slug"));
	cr_assert(tc_lists_error(j, "id", "read_only"));
	cr_assert(tc_lists_error(j, "owner", "unknown_field"));
	json_decref(j);
	/* bounds at and past the edge */
	struct {
		const char *member;
		size_t max;
		const char *pre;
	} bounds[] = {{"name", 200, ""}, {"slug", 120, ""}, {"region", 200, ""}, {"description", 5000, ""},
		      {"website", 500, "https://"}};
	char *big = malloc(8192), *fill = malloc(6000);
	for (size_t b = 0; b < sizeof(bounds) / sizeof(bounds[0]); b++)
		for (size_t extra = 0; extra < 2; extra++) {
			size_t n = bounds[b].max + extra - strlen(bounds[b].pre);
			memset(fill, (int)('q' + b), n);
			fill[n] = 0;
			snprintf(big, 8192, "{\"name\":\"Bound %zu %zu\",\"%s\":\"%s%s\"}", b, extra, bounds[b].member,
				 bounds[b].pre, fill);
			if (!strcmp(bounds[b].member, "name"))
				snprintf(big, 8192, "{\"name\":\"%.*s%zu\"}", (int)(n - 1), fill, extra);
			int st;
			json_t *r = tc_call(p.port, "POST", "/v1/producers", NULL, big, &st);
			cr_assert_eq(st, extra ? 422 : 201, "%s at %zu bytes: %d", bounds[b].member, bounds[b].max + extra, st);
			if (extra)
				cr_assert(tc_lists_error(r, bounds[b].member, "max_length"), "%s", bounds[b].member);
			json_decref(r);
		}
	memset(fill, 'a', 101);
	snprintf(big, 8192, "/v1/producers?q=%.100s", fill);
	json_decref(expect(p.port, "GET", big, NULL, NULL, 200));
	snprintf(big, 8192, "/v1/producers?q=%.101s", fill);
	tc_expect_code(p.port, "GET", big, NULL, NULL, 400, "invalid_filter");
	free(big);
	free(fill);
	/* lists and filters */
	cr_assert_eq(list_count(p.port, "/v1/producers?q=pontet", NULL), 2);
	cr_assert_eq(list_count(p.port, "/v1/producers?q=pontet%20CANET", NULL), 2);
	cr_assert_eq(list_count(p.port, "/v1/producers?q=margaux", NULL), 0);
	cr_assert_eq(list_count(p.port, "/v1/producers?country=FR", NULL), 1);
	tc_expect_code(p.port, "GET", "/v1/producers?country=France", NULL, NULL, 400, "invalid_filter");
	/* patch: rename keeps the id, slug follows only when asked */
	j = expect(p.port, "PATCH", path, NULL, "{\"region\":null,\"name\":\"Ch. Pontet-Canet\"}", 200);
	cr_assert_str_eq(tc_jstr(j, "name"), "Ch. Pontet-Canet");
	cr_assert_str_eq(tc_jstr(j, "slug"), "chateau-pontet-canet");
	cr_assert(json_is_null(json_object_get(j, "region")));
	json_decref(j);
	tc_expect_code(p.port, "PATCH", path, NULL, "{\"slug\":\"pontet-canet-second\"}", 409, "producer_exists");
	tc_expect_code(p.port, "GET", "/v1/producers/prd_01M7YD76420001QQVSYV", NULL, NULL, 404, "not_found");
	wm_proc_cleanup(&p);
}

WM_TEST(producer, partner_link_rules)
{
	struct wm_proc p;
	tc_start(&p);
	char estate[64], collector[64], seller[64], k_estate[128], k_collector[128], id[64], path[128], body[256];
	partner(p.port, "Estate SARL", "[\"originator\"]", "estate", estate);
	partner(p.port, "Collector", "[\"originator\"]", "collector", collector);
	partner(p.port, "Shop GmbH", "[\"seller\"]", NULL, seller);
	tc_key_for(p.port, estate, k_estate);
	tc_key_for(p.port, collector, k_collector);
	snprintf(body, sizeof(body), "{\"name\":\"Domaine A\",\"partner_id\":\"%s\"}", collector);
	json_t *j = expect(p.port, "POST", "/v1/producers", NULL, body, 422);
	cr_assert(tc_lists_error(j, "partner_id", "originator_estate"));
	json_decref(j);
	snprintf(body, sizeof(body), "{\"name\":\"Domaine A\",\"partner_id\":\"%s\"}", seller);
	j = expect(p.port, "POST", "/v1/producers", NULL, body, 422);
	cr_assert(tc_lists_error(j, "partner_id", "originator_estate"));
	json_decref(j);
	snprintf(body, sizeof(body), "{\"name\":\"Domaine A\",\"partner_id\":\"ptn_01M7YD76420001QQVSYV\"}");
	j = expect(p.port, "POST", "/v1/producers", NULL, body, 422);
	cr_assert(tc_lists_error(j, "partner_id", "exists"));
	json_decref(j);
	/* a partner links a producer to itself only */
	snprintf(body, sizeof(body), "{\"name\":\"Domaine A\",\"partner_id\":\"%s\"}", estate);
	j = expect(p.port, "POST", "/v1/producers", k_collector, body, 422);
	cr_assert(tc_lists_error(j, "partner_id", "own_partner"));
	json_decref(j);
	producer(p.port, k_estate, body, id);
	snprintf(path, sizeof(path), "/v1/producers/%s", id);
	/* readable by all, writable by the platform, creator and linked estate */
	json_decref(expect(p.port, "GET", path, k_collector, NULL, 200));
	tc_expect_code(p.port, "PATCH", path, k_collector, "{\"region\":\"Loire\"}", 404, "not_found");
	json_decref(expect(p.port, "PATCH", path, k_estate, "{\"region\":\"Loire\"}", 200));
	json_decref(expect(p.port, "PATCH", path, NULL, "{\"region\":\"Anjou\"}", 200));
	/* a seller may not write wines at all (action policy) */
	char k_seller[128];
	tc_key_for(p.port, seller, k_seller);
	tc_expect_code(p.port, "POST", "/v1/producers", k_seller, "{\"name\":\"X\"}", 403, "action_not_allowed");
	wm_proc_cleanup(&p);
}

/* ---- wines ---------------------------------------------------------------------- */

WM_TEST(wine, create_get_canonical_document_and_event)
{
	struct wm_proc p;
	tc_start(&p);
	char id[64], path[128];
	json_t *j = wine(p.port, NULL,
			 "{\"title\":\"Domaine Leflaive Puligny-Montrachet 2019\",\"producer\":{\"name\":\"Domaine Leflaive\","
			 "\"country\":\"FR\"},\"cuvee\":\"Puligny-Montrachet\",\"vintage\":2019,\"abv\":13.50,"
			 "\"volume_in_liters\":\"75cl\",\"colour\":\"white\",\"category\":\"wine\",\"region\":{\"fr\":\"Bourgogne\","
			 "\"en\":\"Burgundy\"},\"appellation\":\"Puligny-Montrachet\",\"quality_scheme\":\"PDO\","
			 "\"grape_varieties\":[{\"variety\":\"Chardonnay\",\"vivc_number\":2455,\"percentage\":100}],"
			 "\"gtin\":\"8904000210037\",\"ratings\":[{\"source\":\"Vinous\",\"score\":94,\"scale\":100}],"
			 "\"food_pairings\":[{\"pairing\":\"turbot\"}],\"certifications\":[\"biodynamic\"],"
			 "\"medusa_product_id\":\"prod_leflaive_pm19\"}",
			 201, id);
	cr_assert(!strncmp(id, "wine_", 5));
	cr_assert_str_eq(tc_jstr(j, "status"), "draft");
	cr_assert_str_eq(tc_jstr(j, "slug"), "domaine-leflaive-puligny-montrachet-2019");
	cr_assert_str_eq(tc_jstr(j, "hs_code"), "2204.21.79");
	cr_assert_str_eq(tc_jstr(j, "natural_key"), "domaine-leflaive|puligny-montrachet|2019|750|FR");
	cr_assert(!strncmp(tc_jstr(j, "producer"), "prd_", 4), "the inline producer became an id");
	cr_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "gtins"), 0)), "08904000210037");
	json_t *m = json_object_get(j, "match");
	cr_assert_str_eq(tc_jstr(m, "result"), "new");
	cr_assert(json_is_null(json_object_get(m, "tier")));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/wines/%s", id);
	struct http_resp r;
	cr_assert_eq(http_do(p.port, "GET", path, NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200);
	/* exact decimals rewritten canonically, never through a double */
	cr_assert(strstr(r.body, "\"abv\":13.5,"), "%s", r.body);
	cr_assert(strstr(r.body, "\"volume_in_liters\":0.75,"), "%s", r.body);
	cr_assert(!strstr(r.body, "\"match\""));
	http_resp_free(&r);
	json_t *e = last_event(p.port, "wine.created");
	cr_assert_str_eq(tc_jstr(json_object_get(e, "payload"), "id"), id);
	json_decref(e);
	/* the producer exists and is found by slug next time */
	cr_assert_eq(list_count(p.port, "/v1/producers?q=leflaive", NULL), 1);
	json_decref(wine(p.port, NULL, "{\"title\":\"Leflaive Bourgogne Blanc\",\"producer\":{\"name\":\"DOMAINE LEFLAIVE\"}}",
			 201, NULL));
	cr_assert_eq(list_count(p.port, "/v1/producers?q=leflaive", NULL), 1, "no second producer");
	/* medusa_product_id is unique and indexed */
	cr_assert_eq(list_count(p.port, "/v1/wines?medusa_product_id=prod_leflaive_pm19", NULL), 1);
	cr_assert_eq(list_count(p.port, "/v1/wines?medusa_product_id=nothing", NULL), 0);
	tc_expect_code(p.port, "POST", "/v1/wines", NULL,
		    "{\"title\":\"Other\",\"producer\":{\"name\":\"Other\"},\"medusa_product_id\":\"prod_leflaive_pm19\"}", 409,
		    "medusa_product_id_taken");
	/* slug collisions get a suffix; an explicit taken slug is a 409 */
	j = wine(p.port, NULL, "{\"title\":\"Domaine Leflaive Puligny-Montrachet 2019\",\"producer\":{\"name\":\"Z\"}}", 201,
		 NULL);
	cr_assert_str_eq(tc_jstr(j, "slug"), "domaine-leflaive-puligny-montrachet-2019-2");
	json_decref(j);
	tc_expect_code(p.port, "POST", "/v1/wines", NULL,
		    "{\"title\":\"Y\",\"producer\":{\"name\":\"Y\"},\"slug\":\"domaine-leflaive-puligny-montrachet-2019\"}",
		    409, "slug_taken");
	tc_expect_code(p.port, "GET", "/v1/wines/wine_01M7YD76420001QQVSYV", NULL, NULL, 404, "not_found");
	wm_proc_cleanup(&p);
}

WM_TEST(wine, every_failing_field_is_listed_with_its_rule)
{
	struct wm_proc p;
	tc_start(&p);
	json_t *j = expect(p.port, "POST", "/v1/wines", NULL,
			   "{\"title\":\"\",\"producer\":\"prd_nope\",\"vintage\":1899,\"abv\":22.5,\"volume_in_liters\":0,"
			   "\"colour\":\"blue\",\"category\":\"cider\",\"dosage_class\":\"medium\",\"hs_code\":\"22\","
			   "\"country\":\"XX\",\"region\":{\"english\":\"x\"},\"quality_scheme\":\"AOC\","
			   "\"grape_varieties\":[{\"variety\":\"A\",\"percentage\":70},{\"variety\":\"B\",\"percentage\":31}],"
			   "\"bottler\":{\"name\":\"B\"},\"allergens\":[\"nuts\"],\"e_label_url\":\"http://x.example\","
			   "\"certifications\":[\"gmo\"],\"gtin\":\"4006381333932\",\"lwin\":\"12345\",\"status\":\"published\","
			   "\"id\":\"wine_x\",\"bogus\":true,\"main_image\":\"jpg_1\",\"energy_kcal_per_100ml\":-1}",
			   422);
	static const char *const want[][2] = {
		{"title", "min_length"}, {"producer", "producer"}, {"vintage", "range"}, {"abv", "range"},
		{"volume_in_liters", "volume"}, {"colour", "enum"}, {"category", "enum"}, {"dosage_class", "enum"},
		{"hs_code", "hs_code"}, {"country", "iso3166_alpha2"}, {"region.english", "language_tag"},
		{"quality_scheme", "enum"}, {"grape_varieties", "percentage_sum"}, {"bottler.address", "required"},
		{"allergens[0]", "enum"}, {"e_label_url", "url"}, {"certifications[0]", "enum"}, {"gtin", "gtin"},
		{"lwin", "lwin"}, {"status", "read_only_on_create"}, {"id", "read_only"}, {"bogus", "unknown_field"},
		{"main_image", "media_id"}, {"energy_kcal_per_100ml", "range"},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_assert(tc_lists_error(j, want[i][0], want[i][1]), "%s:%s not listed", want[i][0], want[i][1]);
	cr_assert_eq(json_array_size(json_object_get(j, "errors")), sizeof(want) / sizeof(want[0]));
	json_decref(j);
	/* a producer id that does not exist */
	j = expect(p.port, "POST", "/v1/wines", NULL, "{\"title\":\"T\",\"producer\":\"prd_01M7YD76420001QQVSYV\"}", 422);
	cr_assert(tc_lists_error(j, "producer", "exists"));
	json_decref(j);
	j = expect(p.port, "POST", "/v1/wines", NULL, "{\"producer\":{\"country\":\"FR\",\"owner\":1}}", 422);
	cr_assert(tc_lists_error(j, "title", "required"));
	cr_assert(tc_lists_error(j, "producer.name", "required"));
	cr_assert(tc_lists_error(j, "producer.owner", "unknown_field"));
	json_decref(j);
	cr_assert_eq(wine_count(p.port), 0, "nothing was written");
	wm_proc_cleanup(&p);
}

WM_TEST(wine, drafts_are_visible_to_creator_estate_and_platform_only)
{
	struct wm_proc p;
	tc_start(&p);
	char a[64], b[64], estate[64], ka[128], kb[128], ke[128], prd[64], id[64], path[160], body[2048];
	partner(p.port, "Negociant A", "[\"originator\"]", "stock", a);
	partner(p.port, "Negociant B", "[\"originator\"]", "stock", b);
	partner(p.port, "Domaine C", "[\"originator\"]", "estate", estate);
	tc_key_for(p.port, a, ka);
	tc_key_for(p.port, b, kb);
	tc_key_for(p.port, estate, ke);
	snprintf(body, sizeof(body), "{\"name\":\"Domaine C\",\"country\":\"FR\",\"partner_id\":\"%s\"}", estate);
	producer(p.port, NULL, body, prd);
	complete_wine(body, sizeof(body), "Domaine C Rouge", prd, NULL);
	json_t *j = wine(p.port, ka, body, 201, id);
	cr_assert_str_eq(tc_jstr(j, "created_by"), a, "the creator sees created_by");
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/wines/%s", id);
	/* another partner: 404 everywhere, omitted from lists */
	tc_expect_code(p.port, "GET", path, kb, NULL, 404, "not_found");
	tc_expect_code(p.port, "PATCH", path, kb, "{\"abv\":12}", 404, "not_found");
	char sub[200];
	snprintf(sub, sizeof(sub), "%s/publish", path);
	tc_expect_code(p.port, "POST", sub, kb, NULL, 404, "not_found");
	snprintf(sub, sizeof(sub), "%s/external-ids", path);
	tc_expect_code(p.port, "GET", sub, kb, NULL, 404, "not_found");
	tc_expect_code(p.port, "POST", sub, kb, "{\"source\":\"app_wine_id\",\"external_id\":\"1\"}", 404, "not_found");
	cr_assert_eq(list_count(p.port, "/v1/wines", kb), 0);
	cr_assert_eq(list_count(p.port, "/v1/wines?status=draft", kb), 0);
	/* the estate linked to the producer sees and edits it, without created_by */
	j = expect(p.port, "GET", path, ke, NULL, 200);
	cr_assert_null(json_object_get(j, "created_by"), "created_by is for the platform and the creator");
	json_decref(j);
	json_decref(expect(p.port, "PATCH", path, ke, "{\"abv\":13.5}", 200));
	j = expect(p.port, "GET", "/v1/events?type=wine.updated", ke, NULL, 200);
	json_t *ev = json_object_get(json_array_get(json_object_get(j, "data"), 0), "payload");
	cr_assert_str_eq(tc_jstr(ev, "id"), id, "the estate's own event");
	cr_assert_null(json_object_get(ev, "created_by"), "its payload does not name the creator");
	json_decref(j);
	cr_assert_eq(list_count(p.port, "/v1/wines", ke), 1);
	cr_assert_eq(list_count(p.port, "/v1/wines", ka), 1);
	cr_assert_eq(list_count(p.port, "/v1/wines", NULL), 1);
	/* published: everyone reads it, only the insiders write it */
	snprintf(sub, sizeof(sub), "%s/publish", path);
	json_decref(expect(p.port, "POST", sub, ka, NULL, 200));
	j = expect(p.port, "GET", path, kb, NULL, 200);
	cr_assert_null(json_object_get(j, "created_by"));
	json_decref(j);
	cr_assert_eq(list_count(p.port, "/v1/wines", kb), 1);
	tc_expect_code(p.port, "PATCH", path, kb, "{\"abv\":12}", 404, "not_found");
	/* the events of a write are scoped to the acting entity */
	j = expect(p.port, "GET", "/v1/events?type=wine.created", ka, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 1);
	json_decref(j);
	j = expect(p.port, "GET", "/v1/events?type=wine.created", kb, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 0);
	json_decref(j);
	wm_proc_cleanup(&p);
}

WM_TEST(wine, lists_filter_search_and_paginate)
{
	struct wm_proc p;
	tc_start(&p);
	char pa[64], pb[64], body[2048], partner_id[64], key[128];
	producer(p.port, NULL, "{\"name\":\"Bodegas Muga\",\"country\":\"ES\"}", pa);
	producer(p.port, NULL, "{\"name\":\"Château Musar\",\"country\":\"LB\"}", pb);
	static const char *const wines[] = {
		"{\"title\":\"Muga Reserva 2018\",\"producer\":\"%s\",\"vintage\":2018,\"colour\":\"red\",\"category\":\"wine\","
		"\"country\":\"ES\",\"region\":{\"es\":\"Rioja\",\"en\":\"Rioja\"}}",
		"{\"title\":\"Muga Rosado 2022\",\"producer\":\"%s\",\"vintage\":2022,\"colour\":\"rose\",\"category\":\"wine\","
		"\"country\":\"ES\",\"region\":\"Rioja\"}",
		"{\"title\":\"Conde de Haro Brut\",\"producer\":\"%s\",\"vintage\":\"NV\",\"colour\":\"white\","
		"\"category\":\"sparkling\",\"country\":\"ES\",\"region\":\"Rioja\"}",
		"{\"title\":\"CHÂTEAU MUSAR Rouge 2016\",\"producer\":\"%s\",\"vintage\":2016,\"colour\":\"red\","
		"\"category\":\"wine\",\"country\":\"LB\",\"region\":{\"fr\":\"Vallée de la Bekaa\",\"en\":\"Bekaa Valley\"}}",
		"{\"title\":\"Musar Jeune Blanc 2021\",\"producer\":\"%s\",\"vintage\":2021,\"colour\":\"white\","
		"\"category\":\"wine\",\"country\":\"LB\"}",
	};
	for (size_t i = 0; i < sizeof(wines) / sizeof(wines[0]); i++) {
		snprintf(body, sizeof(body), wines[i], i < 3 ? pa : pb);
		json_decref(wine(p.port, NULL, body, 201, NULL));
	}
	char path[256];
	snprintf(path, sizeof(path), "/v1/wines?producer=%s", pa);
	cr_assert_eq(list_count(p.port, path, NULL), 3);
	snprintf(path, sizeof(path), "/v1/wines?producer=%s&colour=red", pb);
	cr_assert_eq(list_count(p.port, path, NULL), 1);
	cr_assert_eq(list_count(p.port, "/v1/wines?country=LB", NULL), 2);
	cr_assert_eq(list_count(p.port, "/v1/wines?country=ES&category=sparkling", NULL), 1);
	cr_assert_eq(list_count(p.port, "/v1/wines?colour=white", NULL), 2);
	cr_assert_eq(list_count(p.port, "/v1/wines?vintage=nv", NULL), 1);
	cr_assert_eq(list_count(p.port, "/v1/wines?vintage=2016", NULL), 1);
	cr_assert_eq(list_count(p.port, "/v1/wines?region=rioja", NULL), 3);
	cr_assert_eq(list_count(p.port, "/v1/wines?region=Bekaa%20Valley", NULL), 1);
	cr_assert_eq(list_count(p.port, "/v1/wines?region=Vall%C3%A9e%20de%20la%20Bekaa", NULL), 1);
	cr_assert_eq(list_count(p.port, "/v1/wines?status=draft", NULL), 5);
	cr_assert_eq(list_count(p.port, "/v1/wines?status=published", NULL), 0);
	/* title search: case and accents folded */
	cr_assert_eq(list_count(p.port, "/v1/wines?q=musar", NULL), 2);
	cr_assert_eq(list_count(p.port, "/v1/wines?q=Ch%C3%A2teau%20musar", NULL), 1);
	cr_assert_eq(list_count(p.port, "/v1/wines?q=chateau+MUSAR", NULL), 1);
	cr_assert_eq(list_count(p.port, "/v1/wines?q=reserva&country=ES", NULL), 1);
	/* bounds and bad values */
	char q[160] = "/v1/wines?q=";
	memset(q + 12, 'a', 100);
	q[112] = 0;
	cr_assert_eq(list_count(p.port, q, NULL), 0, "100 bytes is the edge");
	q[112] = 'a';
	q[113] = 0;
	tc_expect_code(p.port, "GET", q, NULL, NULL, 400, "invalid_filter");
	tc_expect_code(p.port, "GET", "/v1/wines?colour=pink", NULL, NULL, 400, "invalid_filter");
	tc_expect_code(p.port, "GET", "/v1/wines?vintage=1899", NULL, NULL, 400, "invalid_filter");
	tc_expect_code(p.port, "GET", "/v1/wines?producer=ptn_x", NULL, NULL, 400, "invalid_filter");
	tc_expect_code(p.port, "GET", "/v1/wines?page_size=201", NULL, NULL, 400, "page_size_too_large");
	/* cursor pagination through an index: every row once, in order */
	const char *next = NULL;
	char cur[512] = "/v1/wines?status=draft&page_size=2";
	size_t seen = 0;
	for (int pages = 0; pages < 5; pages++) {
		json_t *j = expect(p.port, "GET", cur, NULL, NULL, 200);
		seen += json_array_size(json_object_get(j, "data"));
		next = tc_jstr(j, "next_cursor");
		if (next)
			snprintf(cur, sizeof(cur), "/v1/wines?status=draft&page_size=2&cursor=%s", next);
		int more = json_is_true(json_object_get(j, "has_more"));
		json_decref(j);
		if (!more)
			break;
	}
	cr_assert_eq(seen, 5);
	/* a partner key lists too (quota, audit through the same list path) */
	partner(p.port, "Reader", "[\"seller\"]", NULL, partner_id);
	tc_key_for(p.port, partner_id, key);
	cr_assert_eq(list_count(p.port, "/v1/wines", key), 0, "drafts of others are not listed");
	json_t *j = expect(p.port, "GET", "/v1/audit?page_size=200", NULL, NULL, 200);
	size_t i;
	json_t *row;
	int audited = 0;
	json_array_foreach(json_object_get(j, "data"), i, row)
	{
		const char *ent = tc_jstr(row, "entity_id");
		const char *ep = tc_jstr(row, "endpoint");
		audited |= ent && ep && !strcmp(ent, partner_id) && strstr(ep, "/v1/wines");
	}
	json_decref(j);
	cr_assert(audited, "the partner's list read is audited");
	wm_proc_cleanup(&p);
}

WM_TEST(wine, patch_and_the_status_table)
{
	struct wm_proc p;
	tc_start(&p);
	char prd[64], id[64], path[160], pub[192], body[2048];
	producer(p.port, NULL, "{\"name\":\"Weingut Keller\",\"country\":\"DE\"}", prd);
	complete_wine(body, sizeof(body), "Keller G-Max 2020", prd, "\"cuvee\":\"G-Max\"");
	json_decref(wine(p.port, NULL, body, 201, id));
	snprintf(path, sizeof(path), "/v1/wines/%s", id);
	snprintf(pub, sizeof(pub), "%s/publish", path);
	json_t *j = expect(p.port, "PATCH", path, NULL, "{\"abv\":12.5,\"description\":\"Riesling\\nRheinhessen\"}", 200);
	cr_assert(json_real_value(json_object_get(j, "abv")) > 12.4);
	json_decref(j);
	j = expect(p.port, "PATCH", path, NULL, "{\"description\":null}", 200);
	cr_assert_null(json_object_get(j, "description"), "null removes");
	json_decref(j);
	j = expect(p.port, "PATCH", path, NULL,
		   "{\"gtin\":\"8904000210037\",\"id\":\"x\",\"natural_key\":\"x\",\"producer\":{\"name\":\"x\"},\"abv\":99}", 422);
	cr_assert(tc_lists_error(j, "gtin", "managed_by_crosswalk"));
	cr_assert(tc_lists_error(j, "id", "read_only"));
	cr_assert(tc_lists_error(j, "natural_key", "read_only"));
	cr_assert(tc_lists_error(j, "producer", "producer_id"));
	cr_assert(tc_lists_error(j, "abv", "range"));
	json_decref(j);
	tc_expect_code(p.port, "PATCH", path, NULL, "{\"status\":\"published\"}", 409, "invalid_status_transition");
	json_decref(expect(p.port, "POST", pub, NULL, NULL, 200));
	tc_expect_code(p.port, "POST", pub, NULL, NULL, 409, "already_published");
	/* a published wine keeps passing the gate */
	j = expect(p.port, "PATCH", path, NULL, "{\"lot_number\":null}", 422);
	cr_assert(tc_lists_error(j, "lot_number", "required_to_publish"));
	json_decref(j);
	tc_expect_code(p.port, "PATCH", path, NULL, "{\"status\":\"draft\"}", 409, "invalid_status_transition");
	j = expect(p.port, "PATCH", path, NULL, "{\"status\":\"archived\"}", 200);
	cr_assert_str_eq(tc_jstr(j, "status"), "archived");
	json_decref(j);
	json_t *e = last_event(p.port, "wine.archived");
	cr_assert_str_eq(tc_jstr(json_object_get(e, "payload"), "id"), id);
	json_decref(e);
	/* nothing leaves archived */
	tc_expect_code(p.port, "PATCH", path, NULL, "{\"abv\":12}", 409, "wine_archived");
	tc_expect_code(p.port, "PATCH", path, NULL, "{\"status\":\"published\"}", 409, "wine_archived");
	tc_expect_code(p.port, "POST", pub, NULL, NULL, 409, "wine_archived");
	/* still readable, still matched, never enriched */
	j = expect(p.port, "GET", path, NULL, NULL, 200);
	cr_assert_str_eq(tc_jstr(j, "status"), "archived");
	json_decref(j);
	j = wine(p.port, NULL, "{\"title\":\"x\",\"producer\":{\"name\":\"Weingut Keller\"},\"cuvee\":\"G-Max\",\"vintage\":2020,"
			       "\"volume_in_liters\":0.75,\"country\":\"FR\",\"aroma_profile\":\"slate\"}", 200, NULL);
	cr_assert_str_eq(tc_jstr(json_object_get(j, "match"), "result"), "matched");
	cr_assert_null(json_object_get(j, "aroma_profile"));
	json_decref(j);
	/* draft -> archived directly */
	char id2[64], path2[160];
	complete_wine(body, sizeof(body), "Keller Von der Fels", prd, "\"cuvee\":\"Von der Fels\"");
	json_decref(wine(p.port, NULL, body, 201, id2));
	snprintf(path2, sizeof(path2), "/v1/wines/%s", id2);
	json_decref(expect(p.port, "PATCH", path2, NULL, "{\"status\":\"archived\"}", 200));
	wm_proc_cleanup(&p);
}

WM_TEST(wine_gate, each_missing_particular_is_listed)
{
	struct wm_proc p;
	tc_start(&p);
	char prd[64], id[64], path[192], body[2048];
	producer(p.port, NULL, "{\"name\":\"Gate Estate\"}", prd);
	snprintf(body, sizeof(body), "{\"title\":\"Bare\",\"producer\":\"%s\"}", prd);
	json_decref(wine(p.port, NULL, body, 201, id));
	snprintf(path, sizeof(path), "/v1/wines/%s/publish", id);
	json_t *j = expect(p.port, "POST", path, NULL, NULL, 422);
	static const char *const missing[] = {"category", "abv", "country", "bottler", "volume_in_liters",
					      "lot_number", "allergens", "ingredients", "energy_kj_per_100ml",
					      "energy_kcal_per_100ml"};
	for (size_t i = 0; i < sizeof(missing) / sizeof(missing[0]); i++)
		cr_assert(tc_lists_error(j, missing[i], "required_to_publish"), "%s not listed", missing[i]);
	cr_assert_eq(json_array_size(json_object_get(j, "errors")), sizeof(missing) / sizeof(missing[0]));
	json_decref(j);
	/* sparkling needs its sugar class, a PDO its designation, a non-EU wine its importer */
	complete_wine(body, sizeof(body), "Gate Cava", prd, "\"cuvee\":\"Cava\"");
	json_decref(wine(p.port, NULL, body, 201, id));
	char wpath[160];
	snprintf(wpath, sizeof(wpath), "/v1/wines/%s", id);
	json_decref(expect(p.port, "PATCH", wpath, NULL, "{\"category\":\"quality_sparkling\"}", 200));
	snprintf(path, sizeof(path), "/v1/wines/%s/publish", id);
	j = expect(p.port, "POST", path, NULL, NULL, 422);
	cr_assert(tc_lists_error(j, "dosage_class", "required_to_publish"));
	cr_assert_eq(json_array_size(json_object_get(j, "errors")), 1);
	json_decref(j);
	json_decref(expect(p.port, "PATCH", wpath, NULL, "{\"dosage_class\":\"brut_nature\",\"quality_scheme\":\"PDO\","
						       "\"country\":\"US\"}", 200));
	j = expect(p.port, "POST", path, NULL, NULL, 422);
	cr_assert(tc_lists_error(j, "designation", "required_to_publish"));
	cr_assert(tc_lists_error(j, "importer", "required_to_publish"));
	cr_assert_eq(json_array_size(json_object_get(j, "errors")), 2);
	json_decref(j);
	json_decref(expect(p.port, "PATCH", wpath, NULL,
			   "{\"designation\":\"Napa Valley\",\"importer\":{\"name\":\"EU Imports BV\",\"address\":\"Rotterdam\"},"
			   "\"ingredients\":null,\"energy_kj_per_100ml\":null,\"e_label_url\":\"https://e.example/l/1\"}", 200));
	/* e_label_url covers ingredients and energy */
	j = expect(p.port, "POST", path, NULL, NULL, 200);
	cr_assert_str_eq(tc_jstr(j, "status"), "published");
	cr_assert_not_null(tc_jstr(j, "published_at"));
	json_decref(j);
	json_t *e = last_event(p.port, "wine.published");
	cr_assert_str_eq(tc_jstr(json_object_get(e, "payload"), "id"), id);
	json_decref(e);
	wm_proc_cleanup(&p);
}

/* ---- dedup ---------------------------------------------------------------------- */

/* The tier of the newest wine.matched event. */
static long matched_tier(int port)
{
	json_t *e = last_event(port, "wine.matched");
	long t = (long)json_integer_value(json_object_get(json_object_get(json_object_get(e, "payload"), "match"), "tier"));
	json_decref(e);
	return t;
}

WM_TEST(wine_dedup, each_tier_over_http_keeps_one_row)
{
	struct wm_proc p;
	tc_start(&p);
	char id[64];
	const char *gtin_body = "{\"title\":\"Cloudy Bay Sauvignon Blanc 2023\",\"producer\":{\"name\":\"Cloudy Bay\","
				"\"country\":\"NZ\"},\"vintage\":2023,\"volume_in_liters\":0.75,\"gtin\":\"9414416002038\"}";
	/* 9414416002038: a made-up NZ EAN-13 with a valid check digit */
	json_decref(wine(p.port, NULL, gtin_body, 201, id));
	json_t *j = wine(p.port, NULL, gtin_body, 200, NULL);
	json_t *m = json_object_get(j, "match");
	cr_assert_str_eq(tc_jstr(m, "result"), "matched");
	cr_assert_eq(json_integer_value(json_object_get(m, "tier")), 1);
	cr_assert_str_eq(tc_jstr(j, "id"), id);
	json_decref(j);
	cr_assert_eq(matched_tier(p.port), 1);
	/* the case GTIN-14 of that unit (indicator 1) */
	j = wine(p.port, NULL, "{\"title\":\"Cloudy Bay SB 23 6x75\",\"producer\":{\"name\":\"Cloudy Bay\"},"
			       "\"gtin\":\"19414416002035\"}", 200, NULL);
	cr_assert_str_eq(tc_jstr(j, "id"), id);
	cr_assert(json_real_value(json_object_get(json_object_get(j, "match"), "confidence")) < 0.96);
	cr_assert_eq(json_array_size(json_object_get(j, "gtins")), 2, "the case GTIN was added");
	json_decref(j);
	cr_assert_eq(wine_count(p.port), 1);
	/* LWIN */
	char lid[64];
	json_decref(wine(p.port, NULL, "{\"title\":\"Sassicaia 2016\",\"producer\":{\"name\":\"Tenuta San Guido\","
				      "\"country\":\"IT\"},\"lwin\":\"10146222016\",\"volume_in_liters\":0.75}", 201, lid));
	j = wine(p.port, NULL, "{\"title\":\"Sassicaia 16 (12x75)\",\"producer\":{\"name\":\"San Guido\"},"
			       "\"lwin\":\"101462220161200750\"}", 200, NULL);
	cr_assert_str_eq(tc_jstr(j, "id"), lid);
	json_decref(j);
	cr_assert_eq(matched_tier(p.port), 2);
	/* natural key: accents, NV spelling, volume unit */
	char nid[64];
	json_decref(wine(p.port, NULL, "{\"title\":\"Ruinart Blanc de Blancs\",\"producer\":{\"name\":\"Maison Ruinart\","
				      "\"country\":\"FR\"},\"cuvee\":\"Blanc de Blancs\",\"is_non_vintage\":true,"
				      "\"volume_in_liters\":\"150cl\"}", 201, nid));
	j = wine(p.port, NULL, "{\"title\":\"RUINART BDB MAGNUM\",\"producer\":{\"name\":\"MAISON RUINART\"},"
			       "\"cuvee\":\"Blanc-de-Blancs\",\"vintage\":\"N.V.\",\"volume_in_liters\":1.5,\"country\":\"FR\"}",
		 200, NULL);
	cr_assert_str_eq(tc_jstr(j, "id"), nid);
	json_decref(j);
	cr_assert_eq(matched_tier(p.port), 3);
	cr_assert_eq(wine_count(p.port), 3);
	/* conflicting identifiers */
	tc_expect_code(p.port, "POST", "/v1/wines", NULL,
		    "{\"title\":\"x\",\"producer\":{\"name\":\"Cloudy Bay\"},\"vintage\":2022,\"gtin\":\"9414416002038\"}", 409,
		    "identifier_conflict");
	cr_assert_eq(wine_count(p.port), 3);
	wm_proc_cleanup(&p);
}

/* Send the same POST on two connections before reading either answer. */
WM_TEST(wine_dedup, concurrent_ingest_of_one_wine_makes_one_row)
{
	struct wm_proc p;
	tc_start(&p);
	const char *body = "{\"title\":\"Vega Sicilia Único 2012\",\"producer\":{\"name\":\"Vega Sicilia\",\"country\":\"ES\"},"
			   "\"cuvee\":\"Único\",\"vintage\":2012,\"volume_in_liters\":0.75}";
	for (int round = 0; round < 5; round++) {
		int fd[2];
		char req[1024];
		int n = snprintf(req, sizeof(req),
				 "POST /v1/wines HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " WM_TEST_KEY "\r\n"
				 "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
				 strlen(body), body);
		for (int i = 0; i < 2; i++) {
			fd[i] = tcp_connect(p.port);
			cr_assert_geq(fd[i], 0);
		}
		for (int i = 0; i < 2; i++)
			cr_assert_eq(write(fd[i], req, (size_t)n), n);
		int created = 0, matched = 0;
		for (int i = 0; i < 2; i++) {
			struct http_resp r;
			cr_assert_eq(http_read_response(fd[i], &r, 10000), 0);
			created += r.status == 201;
			matched += r.status == 200;
			http_resp_free(&r);
			close(fd[i]);
		}
		cr_assert_eq(created + matched, 2);
		cr_assert_eq(created, round == 0 ? 1 : 0);
		cr_assert_eq(wine_count(p.port), 1, "one row after round %d", round);
	}
	wm_proc_cleanup(&p);
}

WM_TEST(wine_dedup, match_answers_matched_candidate_new_without_writing)
{
	struct wm_proc p;
	tc_start(&p);
	char id[64];
	json_decref(wine(p.port, NULL, "{\"title\":\"Penfolds Grange 2018\",\"producer\":{\"name\":\"Penfolds\","
				      "\"country\":\"AU\"},\"cuvee\":\"Grange\",\"vintage\":2018,\"volume_in_liters\":0.75}", 201,
			 id));
	size_t events = list_count(p.port, "/v1/events?page_size=200", NULL);
	struct {
		const char *body, *result;
		long tier;
	} cases[] = {
		{"{\"title\":\"g\",\"producer\":{\"name\":\"PENFOLDS\"},\"cuvee\":\"grange\",\"vintage\":\"2018\","
		 "\"volume_in_liters\":\"75 cl\",\"country\":\"AU\"}", "matched", 3},
		{"{\"title\":\"g\",\"producer\":{\"name\":\"Penfolds\"},\"cuvee\":\"Grange\",\"vintage\":2017,"
		 "\"volume_in_liters\":0.75,\"country\":\"AU\"}", "candidate", 3},
		{"{\"title\":\"g\",\"producer\":{\"name\":\"Henschke\"},\"cuvee\":\"Hill of Grace\",\"vintage\":2018,"
		 "\"volume_in_liters\":0.75,\"country\":\"AU\"}", "new", 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *j = expect(p.port, "POST", "/v1/wines/match", NULL, cases[i].body, 200);
		cr_assert_str_eq(tc_jstr(j, "result"), cases[i].result, "%s", cases[i].body);
		if (cases[i].tier) {
			cr_assert_eq(json_integer_value(json_object_get(j, "tier")), cases[i].tier);
			cr_assert_str_eq(tc_jstr(j, "wine_id"), id);
		} else {
			cr_assert(json_is_null(json_object_get(j, "tier")));
			cr_assert(json_is_null(json_object_get(j, "wine_id")));
		}
		json_decref(j);
	}
	json_t *j = expect(p.port, "POST", "/v1/wines/match", NULL, "{\"title\":\"g\",\"producer\":{\"name\":\"x\"},\"abv\":23}",
			   422);
	cr_assert(tc_lists_error(j, "abv", "range"));
	json_decref(j);
	cr_assert_eq(wine_count(p.port), 1);
	cr_assert_eq(list_count(p.port, "/v1/events?page_size=200", NULL), events, "match writes nothing");
	cr_assert_eq(list_count(p.port, "/v1/producers", NULL), 1, "no producer created by a match");
	/* a candidate at ingest creates the wine and names the similar one */
	j = wine(p.port, NULL, cases[1].body, 201, NULL);
	cr_assert_str_eq(tc_jstr(json_object_get(j, "match"), "result"), "candidate");
	cr_assert_str_eq(tc_jstr(json_object_get(j, "match"), "wine_id"), id);
	json_decref(j);
	wm_proc_cleanup(&p);
}

/* A match on a draft the caller may not read: nothing of it is revealed
 * (no id) and nothing changes; the submission waits for the platform
 * (tests/test_wine_hidden.c covers every key and the review's decision). */
WM_TEST(wine_dedup, a_match_on_an_invisible_draft_reveals_nothing_and_changes_nothing)
{
	struct wm_proc p;
	tc_start(&p);
	char a[64], b[64], ka[128], kb[128], id[64];
	partner(p.port, "Importer A", "[\"originator\"]", "stock", a);
	partner(p.port, "Importer B", "[\"fulfiller\"]", NULL, b);
	tc_key_for(p.port, a, ka);
	tc_key_for(p.port, b, kb);
	const char *body = "{\"title\":\"Tignanello 2019\",\"producer\":{\"name\":\"Marchesi Antinori\",\"country\":\"IT\"},"
			   "\"cuvee\":\"Tignanello\",\"vintage\":2019,\"volume_in_liters\":0.75}";
	json_decref(wine(p.port, ka, body, 201, id));
	json_t *j = wine(p.port, kb, "{\"title\":\"Tignanello 2019\",\"producer\":{\"name\":\"MARCHESI ANTINORI\"},\"cuvee\":\"Tignanello\","
				     "\"vintage\":2019,\"volume_in_liters\":0.75,\"country\":\"IT\",\"lot_number\":\"L19\"}",
			 202, NULL);
	cr_assert_null(json_object_get(j, "id"), "the answer names the invisible draft");
	cr_assert_str_eq(tc_jstr(j, "status"), "pending_review");
	cr_assert_str_eq(tc_jstr(json_object_get(j, "match"), "result"), "pending_review");
	cr_assert(json_is_null(json_object_get(json_object_get(j, "match"), "wine_id")));
	json_decref(j);
	char path[128];
	snprintf(path, sizeof(path), "/v1/wines/%s", id);
	j = expect(p.port, "GET", path, ka, NULL, 200);
	cr_assert_null(json_object_get(j, "lot_number"), "the match wrote into the invisible draft");
	json_decref(j);
	tc_expect_code(p.port, "GET", path, kb, NULL, 404, "not_found");
	wm_proc_cleanup(&p);
}

/* ---- crosswalk ------------------------------------------------------------------- */

WM_TEST(extid, crosswalk_entries_sources_and_uniqueness)
{
	struct wm_proc p;
	tc_start(&p);
	char w1[64], w2[64], path1[160], path2[160], wpath[128];
	json_decref(wine(p.port, NULL, "{\"title\":\"Opus One 2019\",\"producer\":{\"name\":\"Opus One\",\"country\":\"US\"},"
				      "\"vintage\":2019,\"volume_in_liters\":0.75,\"gtin\":\"4006381333931\"}", 201, w1));
	json_decref(wine(p.port, NULL, "{\"title\":\"Opus One 2018\",\"producer\":{\"name\":\"Opus One\"},"
				      "\"vintage\":2018,\"volume_in_liters\":0.75,\"country\":\"US\"}", 201, w2));
	snprintf(path1, sizeof(path1), "/v1/wines/%s/external-ids", w1);
	snprintf(path2, sizeof(path2), "/v1/wines/%s/external-ids", w2);
	/* ingest created the entry for its GTIN */
	json_t *j = expect(p.port, "GET", path1, NULL, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 1);
	cr_assert_str_eq(tc_jstr(json_array_get(json_object_get(j, "data"), 0), "external_id"), "04006381333931");
	json_decref(j);
	/* a GTIN added through the crosswalk feeds tier 1 */
	j = expect(p.port, "POST", path2, NULL,
		   "{\"source\":\"gtin\",\"external_id\":\"96385074\",\"url\":\"https://shop.example/opus18\",\"confidence\":0.9}",
		   201);
	cr_assert_str_eq(tc_jstr(j, "external_id"), "00000096385074");
	cr_assert(json_real_value(json_object_get(j, "confidence")) > 0.89);
	json_decref(j);
	snprintf(wpath, sizeof(wpath), "/v1/wines/%s", w2);
	j = expect(p.port, "GET", wpath, NULL, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "gtins")), 1);
	json_decref(j);
	j = wine(p.port, NULL, "{\"title\":\"x\",\"producer\":{\"name\":\"y\"},\"gtin\":\"96385074\"}", 200, NULL);
	cr_assert_str_eq(tc_jstr(j, "id"), w2);
	json_decref(j);
	/* one wine per GTIN and per retail id */
	tc_expect_code(p.port, "POST", path1, NULL, "{\"source\":\"gtin\",\"external_id\":\"96385074\"}", 409, "external_id_taken");
	json_decref(expect(p.port, "POST", path1, NULL, "{\"source\":\"retail_product_id\",\"external_id\":\"SKU-OPUS-19\"}", 201));
	tc_expect_code(p.port, "POST", path2, NULL, "{\"source\":\"retail_product_id\",\"external_id\":\"SKU-OPUS-19\"}", 409,
		    "external_id_taken");
	/* shared sources: a grape variety, an app's wine id, an appellation */
	static const char *const shared[] = {
		"{\"source\":\"vivc_variety_number\",\"external_id\":\"1929\"}",
		"{\"source\":\"app_wine_id\",\"external_id\":\"1143437\",\"url\":\"https://app.example/w/1143437\"}",
		"{\"source\":\"eambrosia_gi_name\",\"external_id\":\"Napa Valley\"}",
	};
	for (size_t i = 0; i < sizeof(shared) / sizeof(shared[0]); i++) {
		json_decref(expect(p.port, "POST", path1, NULL, shared[i], 201));
		json_decref(expect(p.port, "POST", path2, NULL, shared[i], 201));
	}
	/* re-posting refreshes url and confidence */
	j = expect(p.port, "POST", path1, NULL, "{\"source\":\"vivc_variety_number\",\"external_id\":\"1929\",\"confidence\":0.5}",
		   200);
	cr_assert(json_real_value(json_object_get(j, "confidence")) < 0.51);
	json_decref(j);
	cr_assert_eq(list_count(p.port, path1, NULL), 5);
	/* an external id of 200 bytes is the edge */
	char gi[300];
	memset(gi, 'n', 201);
	snprintf(gi + 100, 200, "%s", "");
	char *nm = malloc(256);
	memset(nm, 'N', 201);
	nm[200] = 0;
	snprintf(gi, sizeof(gi), "{\"source\":\"eambrosia_gi_name\",\"external_id\":\"%s\"}", nm);
	json_decref(expect(p.port, "POST", path1, NULL, gi, 201));
	nm[200] = 'N';
	nm[201] = 0;
	snprintf(gi, sizeof(gi), "{\"source\":\"eambrosia_gi_name\",\"external_id\":\"%s\"}", nm);
	json_decref(expect(p.port, "POST", path1, NULL, gi, 422));
	free(nm);
	/* value rules per source */
	static const char *const bad[][2] = {
		{"{\"source\":\"gtin\",\"external_id\":\"4006381333932\"}", "external_id"},
		{"{\"source\":\"gtin\",\"external_id\":\"94006381333937\"}", "external_id"},
		{"{\"source\":\"lwin\",\"external_id\":\"12\"}", "external_id"},
		{"{\"source\":\"app_vintage_id\",\"external_id\":\"12a\"}", "external_id"},
		{"{\"source\":\"cellar_iwine\",\"external_id\":\"123456789012345678901\"}", "external_id"},
		{"{\"source\":\"vivc_variety_number\",\"external_id\":\"100000\"}", "external_id"},
		{"{\"source\":\"eambrosia_gi_id\",\"external_id\":\"AOC-FR-A1005\"}", "external_id"},
		{"{\"source\":\"retail_product_id\",\"external_id\":\"has space\"}", "external_id"},
		{"{\"source\":\"vivino\",\"external_id\":\"1\"}", "source"},
		{"{\"source\":\"app_wine_id\",\"external_id\":\"1\",\"confidence\":1.0001}", "confidence"},
		{"{\"source\":\"app_wine_id\",\"external_id\":\"1\",\"confidence\":-0.1}", "confidence"},
		{"{\"source\":\"app_wine_id\",\"external_id\":\"1\",\"url\":\"mailto:x\"}", "url"},
		{"{\"external_id\":\"1\",\"extra\":1}", "source"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		j = expect(p.port, "POST", path1, NULL, bad[i][0], 422);
		int found = 0;
		size_t k;
		json_t *e;
		json_array_foreach(json_object_get(j, "errors"), k, e) found |= !strcmp(tc_jstr(e, "field"), bad[i][1]);
		cr_assert(found, "%s: %s not listed", bad[i][0], bad[i][1]);
		json_decref(j);
	}
	json_decref(expect(p.port, "POST", path1, NULL, "{\"source\":\"eambrosia_gi_id\",\"external_id\":\"PDO-FR-A1005-AM02\"}",
			   201));
	json_decref(expect(p.port, "POST", path1, NULL, "{\"source\":\"app_wine_id\",\"external_id\":\"1\",\"confidence\":1}",
			   201));
	/* LWIN: added to the wine, then a second one conflicts */
	json_decref(expect(p.port, "POST", path1, NULL, "{\"source\":\"lwin\",\"external_id\":\"1234567\"}", 201));
	tc_expect_code(p.port, "POST", path1, NULL, "{\"source\":\"lwin\",\"external_id\":\"7654321\"}", 409, "identifier_conflict");
	/* an LWIN whose vintage contradicts the wine */
	tc_expect_code(p.port, "POST", path2, NULL, "{\"source\":\"lwin\",\"external_id\":\"12345672019\"}", 409,
		    "identifier_conflict");
	j = wine(p.port, NULL, "{\"title\":\"x\",\"producer\":{\"name\":\"y\"},\"lwin\":\"123456720190600750\"}", 200, NULL);
	cr_assert_str_eq(tc_jstr(j, "id"), w1, "the crosswalk LWIN feeds tier 2");
	json_decref(j);
	/* archived wines take no entries */
	snprintf(wpath, sizeof(wpath), "/v1/wines/%s", w2);
	json_decref(expect(p.port, "PATCH", wpath, NULL, "{\"status\":\"archived\"}", 200));
	tc_expect_code(p.port, "POST", path2, NULL, "{\"source\":\"app_wine_id\",\"external_id\":\"9\"}", 409, "wine_archived");
	json_decref(expect(p.port, "GET", path2, NULL, NULL, 200));
	wm_proc_cleanup(&p);
}

/* ---- durability and retries ------------------------------------------------------- */

WM_TEST(wine, idempotent_retry_and_kill9_keep_one_catalogue)
{
	struct wm_proc p;
	tc_start(&p);
	const char *body = "{\"title\":\"Pingus 2019\",\"producer\":{\"name\":\"Dominio de Pingus\",\"country\":\"ES\"},"
			   "\"vintage\":2019,\"volume_in_liters\":0.75,\"gtin\":\"4006381333931\",\"lwin\":\"1054321\"}";
	struct http_resp r1, r2;
	const char *h = "Idempotency-Key: ingest-pingus-19\r\n";
	cr_assert_eq(http_do(p.port, "POST", "/v1/wines", h, body, &r1), 0);
	cr_assert_eq(r1.status, 201, "%s", r1.body);
	cr_assert_eq(http_do(p.port, "POST", "/v1/wines", h, body, &r2), 0);
	cr_assert_eq(r2.status, 201, "the replay is the first answer");
	cr_assert_str_eq(r1.body, r2.body);
	http_resp_free(&r1);
	http_resp_free(&r2);
	cr_assert_eq(wine_count(p.port), 1);
	wm_kill9(&p);
	cr_assert_eq(wm_start(&p, NULL, NULL), 0);
	cr_assert_eq(wine_count(p.port), 1);
	json_t *j = wine(p.port, NULL, body, 200, NULL);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(j, "match"), "tier")), 1, "indexes rebuilt on replay");
	json_decref(j);
	j = wine(p.port, NULL, "{\"title\":\"p\",\"producer\":{\"name\":\"Pingus\"},\"lwin\":\"10543212019\",\"volume_in_liters\":0.75}",
		 200, NULL);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(j, "match"), "tier")), 2);
	json_decref(j);
	cr_assert_eq(list_count(p.port, "/v1/producers", NULL), 1);
	/* and after a snapshot */
	json_decref(expect(p.port, "POST", "/v1/admin/snapshots", NULL, NULL, 202));
	usleep(500000);
	wm_kill9(&p);
	cr_assert_eq(wm_start(&p, NULL, NULL), 0);
	cr_assert_eq(wine_count(p.port), 1);
	j = expect(p.port, "POST", "/v1/wines/match", NULL, body, 200);
	cr_assert_str_eq(tc_jstr(j, "result"), "matched");
	json_decref(j);
	wm_proc_cleanup(&p);
}

/* Wines reference media by id: a well-formed id must name an existing asset. */
WM_TEST(wine, media_references_must_exist)
{
	struct wm_proc p;
	tc_start(&p);
	json_t *m = expect(p.port, "POST", "/v1/media", NULL,
			   "{\"mime\":\"image/png\",\"size\":1000,\"alt\":\"Front label\",\"role\":\"label_front\"}", 201);
	char mid[64];
	snprintf(mid, sizeof(mid), "%s", json_string_value(json_object_get(m, "id")));
	json_decref(m);
	json_t *j = expect(p.port, "POST", "/v1/wines", NULL,
			   "{\"title\":\"Media Test\",\"producer\":{\"name\":\"Media Estate\"},"
			   "\"main_image\":\"med_01M7YD76420001QQVSYV\",\"gallery\":[\"med_01M7YD76420001QQVSYW\"]}",
			   422);
	cr_assert(tc_lists_error(j, "main_image", "exists"));
	cr_assert(tc_lists_error(j, "gallery[0]", "exists"));
	json_decref(j);
	char body[300];
	snprintf(body, sizeof(body),
		 "{\"title\":\"Media Test\",\"producer\":{\"name\":\"Media Estate\"},\"main_image\":\"%s\",\"gallery\":[\"%s\"]}",
		 mid, mid);
	json_decref(expect(p.port, "POST", "/v1/wines", NULL, body, 201));
	wm_proc_cleanup(&p);
}
