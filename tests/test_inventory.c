/*
 * test_inventory.c -- stock locations, inventory levels, holds and the
 * network snapshot over HTTP against real wm-shard processes: every field
 * rule listed at once, GLN check digits, ownership 404s, ATP arithmetic
 * and the 409 at the edge, stock.changed events, the offer's
 * qty_available following its levels, holds across kill -9 + restart, and
 * read:network (403 for a partner key, 200 for the operator).
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

static void start(struct wm_proc *p, const char *const *args)
{
	wm_proc_init(p);
	cr_assert_eq(wm_start(p, args, NULL), 0, "wm-shard did not start (logs in %s)", p->dir);
}


/* A 422 listing exactly these (field, rule) pairs (NULL-terminated). */
static void expect_errors(int port, const char *method, const char *path, const char *key, const char *body,
			  const char *const (*want)[2])
{
	json_t *j = tc_expect(port, method, path, key, body, 422);
	size_t n = 0;
	for (; want[n][0]; n++)
		cr_assert(tc_lists_error(j, want[n][0], want[n][1]), "%s: %s/%s not listed: %s", body, want[n][0], want[n][1],
			  json_dumps(j, JSON_COMPACT));
	cr_assert_eq(json_array_size(json_object_get(j, "errors")), n, "%s: %s", body, json_dumps(j, JSON_COMPACT));
	json_decref(j);
}

static json_int_t jint(json_t *o, const char *k) { return json_integer_value(json_object_get(o, k)); }

/* Independent GS1 mod-10: weights 3,1,3,... from the rightmost data digit. */
static char gs1_check(const char *d12)
{
	int sum = 0;
	for (int i = 11, w = 3; i >= 0; i--, w = 4 - w)
		sum += (d12[i] - '0') * w;
	return (char)('0' + (10 - sum % 10) % 10);
}

/* A valid GLN from a 12-digit base. */
static void gln_of(const char *d12, char out[14])
{
	memcpy(out, d12, 12);
	out[12] = gs1_check(d12);
	out[13] = 0;
}

struct inv_world {
	struct wm_proc p;
	char o1[64], o2[64], f1[64], s1[64];
	char ko1[128], ko2[128], kf1[128], ks1[128];
	char w[2][64];
	char of1[64], of2[64]; /* offers of o1 (w0) and o2 (w1) */
};

static void inv_world(struct inv_world *x)
{
	start(&x->p, NULL);
	int port = x->p.port;
	tc_partner_live(port, "Orig One", "FR", "[\"originator\"]", "\"originator_type\":\"stock\"", x->o1);
	tc_partner_live(port, "Orig Two", "IT", "[\"originator\"]", "\"originator_type\":\"estate\"", x->o2);
	tc_partner_live(port, "Logistics", "DE", "[\"fulfiller\"]", NULL, x->f1);
	tc_partner_live(port, "Seller One", "DE", "[\"seller\"]", NULL, x->s1);
	tc_key_for(port, x->o1, x->ko1);
	tc_key_for(port, x->o2, x->ko2);
	tc_key_for(port, x->f1, x->kf1);
	tc_key_for(port, x->s1, x->ks1);
	tc_pub_wine(port, "Alpha Rouge", x->w[0]);
	tc_pub_wine(port, "Beta Blanc", x->w[1]);
	json_decref(tc_offer(port, x->ko1, x->w[0], "\"status\":\"active\",\"qty_available\":7", 201, x->of1));
	json_decref(tc_offer(port, x->ko2, x->w[1], "\"status\":\"active\"", 201, x->of2));
}

/* A valid location as key: defaults for the members `extra` does not give
 * (the parser refuses duplicate keys); id into out. */
static void location(int port, const char *key, const char *extra, char *out)
{
	static const char *const defaults[][2] = {
		{"location_type", "\"BONDED_WAREHOUSE\""},
		{"name", "\"Cellar\""},
		{"address", "{\"line1\":\"1 rue du Vin\",\"city\":\"Beaune\",\"postal_code\":\"21200\",\"country\":\"FR\"}"}};
	char body[1024], probe[64];
	int n = snprintf(body, sizeof(body), "{");
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
		snprintf(probe, sizeof(probe), "\"%s\":", defaults[i][0]);
		if (!extra || !strstr(extra, probe))
			n += snprintf(body + n, sizeof(body) - (size_t)n, "%s\"%s\":%s", n > 1 ? "," : "", defaults[i][0],
				      defaults[i][1]);
	}
	snprintf(body + n, sizeof(body) - (size_t)n, "%s%s}", extra ? "," : "", extra ? extra : "");
	json_t *j = tc_expect(port, "POST", "/v1/stock-locations", key, body, 201);
	snprintf(out, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
}

/* Declare a level; returns the document (caller frees). */
static json_t *level(int port, const char *key, const char *offer_id, const char *loc, const char *extra, int want)
{
	char body[1024];
	snprintf(body, sizeof(body), "{\"sku\":\"SKU-1\",\"offer_id\":\"%s\",\"location_id\":\"%s\"%s%s}", offer_id, loc,
		 extra ? "," : "", extra ? extra : "");
	return tc_expect(port, "POST", "/v1/inventory", key, body, want);
}

static json_int_t offer_qty(int port, const char *key, const char *offer_id)
{
	char path[128];
	snprintf(path, sizeof(path), "/v1/offers/%s", offer_id);
	json_t *j = tc_expect(port, "GET", path, key, NULL, 200);
	json_int_t q = jint(j, "qty_available");
	json_decref(j);
	return q;
}

/* ---- locations ------------------------------------------------------------------ */

WM_TEST(location, create_document_and_defaults)
{
	struct inv_world x;
	inv_world(&x);
	int port = x.p.port;
	char gln[14], body[1400];
	gln_of("376104250001", gln);
	snprintf(body, sizeof(body),
		 "{\"gln\":\"%s\",\"location_type\":\"3PL_FULFILLMENT_CENTER\",\"name\":\"Hub\",\"address\":{\"line1\":\"Kai 1\","
		 "\"line2\":\"Halle 3\",\"city\":\"Hamburg\",\"postal_code\":\"20457\",\"region\":\"HH\",\"country\":\"DE\"},"
		 "\"geo_coordinates\":{\"lat\":53.541234,\"lon\":-9.99},\"tax_jurisdiction\":{\"state\":\"Hamburg\","
		 "\"excise_tax_zone_id\":\"DE-HH.1\",\"eu_seed_number\":\"DE0123456789A\"},"
		 "\"capabilities\":[\"supports_d2c_fulfillment\",\"temperature_controlled\"]}",
		 gln);
	json_t *j = tc_expect(port, "POST", "/v1/locations", x.kf1, body, 201);
	cr_assert_str_eq(tc_jstr(j, "owner_entity_id"), x.f1, "defaults to the caller");
	cr_assert_str_eq(tc_jstr(j, "location_id"), tc_jstr(j, "id"));
	cr_assert_str_eq(tc_jstr(j, "gln"), gln);
	cr_assert_str_eq(tc_jstr(j, "status"), "active");
	json_t *t = json_object_get(j, "tax_jurisdiction");
	cr_assert_str_eq(tc_jstr(t, "country"), "DE", "tax country defaults to the address");
	cr_assert_str_eq(tc_jstr(t, "eu_seed_number"), "DE0123456789A");
	json_t *caps = json_object_get(j, "capabilities");
	cr_assert(json_is_true(json_object_get(caps, "supports_d2c_fulfillment")));
	cr_assert(json_is_false(json_object_get(caps, "supports_b2b_wholesale")));
	cr_assert(json_is_true(json_object_get(caps, "temperature_controlled")));
	json_decref(j);
	/* coordinates are exact decimals in the stored text */
	struct http_resp r;
	char h[200];
	snprintf(h, sizeof(h), "Authorization: Bearer %s\r\n", x.kf1);
	cr_assert_eq(http_do(port, "GET", "/v1/stock-locations", h, NULL, &r), 0);
	cr_assert(strstr(r.body, "\"lat\":53.541234,\"lon\":-9.990000"), "%s", r.body);
	http_resp_free(&r);
	/* operators must name the owner, which must be an originator or fulfiller */
	const char *const need_owner[][2] = {{"owner_entity_id", "required"}, {NULL, NULL}};
	expect_errors(port, "POST", "/v1/stock-locations", NULL,
		      "{\"location_type\":\"RETAIL_STORE\",\"name\":\"S\",\"address\":{\"line1\":\"a\",\"city\":\"b\","
		      "\"postal_code\":\"1\",\"country\":\"FR\"}}",
		      need_owner);
	snprintf(body, sizeof(body),
		 "{\"owner_entity_id\":\"%s\",\"location_type\":\"RETAIL_STORE\",\"name\":\"S\",\"address\":{\"line1\":\"a\","
		 "\"city\":\"b\",\"postal_code\":\"1\",\"country\":\"FR\"}}",
		 x.s1);
	const char *const seller_owner[][2] = {{"owner_entity_id", "owner_role"}, {NULL, NULL}};
	expect_errors(port, "POST", "/v1/stock-locations", NULL, body, seller_owner);
	const char *const not_own[][2] = {{"owner_entity_id", "own"}, {NULL, NULL}};
	snprintf(body, sizeof(body),
		 "{\"owner_entity_id\":\"%s\",\"location_type\":\"RETAIL_STORE\",\"name\":\"S\",\"address\":{\"line1\":\"a\","
		 "\"city\":\"b\",\"postal_code\":\"1\",\"country\":\"FR\"}}",
		 x.o2);
	expect_errors(port, "POST", "/v1/stock-locations", x.ko1, body, not_own);
	/* a seller-only partner may not write inventory at all */
	tc_expect_code(port, "POST", "/v1/stock-locations", x.ks1, body, 403, "action_not_allowed");
	cr_assert_eq(tc_count_events(port, "stock_location.created", NULL), 1);
	wm_proc_cleanup(&x.p);
}

WM_TEST(location, every_field_rule_at_once)
{
	struct inv_world x;
	inv_world(&x);
	const char *const want[][2] = {
		{"gln", "check_digit"},
		{"location_type", "enum"},
		{"name", "required"},
		{"address.line1", "required"},
		{"address.postal_code", "format"},
		{"address.country", "iso3166_alpha2"},
		{"address.zip", "unknown_field"},
		{"geo_coordinates.lat", "range"},
		{"geo_coordinates.lon", "precision"},
		{"tax_jurisdiction.excise_tax_zone_id", "format"},
		{"tax_jurisdiction.eu_seed_number", "format"},
		{"capabilities.flies", "unknown_field"},
		{"capabilities.supports_b2b_wholesale", "type"},
		{"status", "enum"},
		{"id", "read_only"},
		{"colour", "unknown_field"},
		{NULL, NULL},
	};
	expect_errors(x.p.port, "POST", "/v1/stock-locations", x.ko1,
		      "{\"gln\":\"4006381333932\",\"location_type\":\"CASTLE\","
		      "\"address\":{\"city\":\"Beaune\",\"postal_code\":\"21#00\",\"country\":\"XX\",\"zip\":1},"
		      "\"geo_coordinates\":{\"lat\":90.000001,\"lon\":1.1234567},"
		      "\"tax_jurisdiction\":{\"excise_tax_zone_id\":\"a b\",\"eu_seed_number\":\"DE01234567\"},"
		      "\"capabilities\":{\"flies\":true,\"supports_b2b_wholesale\":\"yes\"},"
		      "\"status\":\"closed\",\"id\":\"loc_x\",\"colour\":\"red\"}",
		      want);
	/* edges: exactly 90 / -180 and 6 decimals pass; a tax country other than the address fails */
	char id[64];
	location(x.p.port, x.ko1, "\"geo_coordinates\":{\"lat\":-90,\"lon\":180.000000}", id);
	location(x.p.port, x.ko1, "\"geo_coordinates\":{\"lat\":0.000001,\"lon\":-180}", id);
	const char *const half[][2] = {{"geo_coordinates.lon", "required"}, {NULL, NULL}};
	expect_errors(x.p.port, "POST", "/v1/stock-locations", x.ko1,
		      "{\"location_type\":\"WINERY_ESTATE\",\"name\":\"E\",\"address\":{\"line1\":\"a\",\"city\":\"b\","
		      "\"postal_code\":\"1\",\"country\":\"FR\"},\"geo_coordinates\":{\"lat\":1}}",
		      half);
	const char *const tax[][2] = {{"tax_jurisdiction.country", "matches_address"}, {NULL, NULL}};
	expect_errors(x.p.port, "POST", "/v1/stock-locations", x.ko1,
		      "{\"location_type\":\"WINERY_ESTATE\",\"name\":\"E\",\"address\":{\"line1\":\"a\",\"city\":\"b\","
		      "\"postal_code\":\"1\",\"country\":\"FR\"},\"tax_jurisdiction\":{\"country\":\"DE\"}}",
		      tax);
	/* name at its bound passes, one past fails */
	char body[600], name[130];
	memset(name, 'n', 121);
	name[120] = 0;
	snprintf(body, sizeof(body),
		 "{\"location_type\":\"WINERY_ESTATE\",\"name\":\"%s\",\"address\":{\"line1\":\"a\",\"city\":\"b\","
		 "\"postal_code\":\"1\",\"country\":\"FR\"}}",
		 name);
	json_decref(tc_expect(x.p.port, "POST", "/v1/stock-locations", x.ko1, body, 201));
	name[120] = 'n';
	name[121] = 0;
	snprintf(body, sizeof(body),
		 "{\"location_type\":\"WINERY_ESTATE\",\"name\":\"%s\",\"address\":{\"line1\":\"a\",\"city\":\"b\","
		 "\"postal_code\":\"1\",\"country\":\"FR\"}}",
		 name);
	const char *const long_name[][2] = {{"name", "max_length"}, {NULL, NULL}};
	expect_errors(x.p.port, "POST", "/v1/stock-locations", x.ko1, body, long_name);
	wm_proc_cleanup(&x.p);
}

WM_TEST(location, gln_check_digits_and_uniqueness)
{
	struct inv_world x;
	inv_world(&x);
	int port = x.p.port;
	static const char *const bases[] = {"400638133393", "000000000000", "999999999999", "871234500001"};
	for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
		char gln[14], extra[64], id[64];
		gln_of(bases[b], gln);
		for (char d = '0'; d <= '9'; d++) {
			gln[12] = d;
			snprintf(extra, sizeof(extra), "\"gln\":\"%s\"", gln);
			if (d == gs1_check(bases[b]))
				location(port, x.ko1, extra, id);
			else {
				char body[600];
				snprintf(body, sizeof(body),
					 "{\"location_type\":\"WINERY_ESTATE\",\"name\":\"E\",\"address\":{\"line1\":\"a\","
					 "\"city\":\"b\",\"postal_code\":\"1\",\"country\":\"FR\"},%s}",
					 extra);
				const char *const bad[][2] = {{"gln", "check_digit"}, {NULL, NULL}};
				expect_errors(port, "POST", "/v1/stock-locations", x.ko1, body, bad);
			}
		}
	}
	/* the well-known EAN-13 4006381333931 is a valid GS1 key; taken now */
	tc_expect_code(port, "POST", "/v1/stock-locations", x.ko2,
		    "{\"gln\":\"4006381333931\",\"location_type\":\"WINERY_ESTATE\",\"name\":\"E\",\"address\":{\"line1\":\"a\","
		    "\"city\":\"b\",\"postal_code\":\"1\",\"country\":\"IT\"}}",
		    409, "gln_taken");
	static const char *const shapes[] = {"400638133393", "40063813339311", "40063813339a1"};
	for (size_t i = 0; i < 3; i++) {
		char body[600];
		snprintf(body, sizeof(body),
			 "{\"gln\":\"%s\",\"location_type\":\"WINERY_ESTATE\",\"name\":\"E\",\"address\":{\"line1\":\"a\","
			 "\"city\":\"b\",\"postal_code\":\"1\",\"country\":\"FR\"}}",
			 shapes[i]);
		const char *const bad[][2] = {{"gln", "format"}, {NULL, NULL}};
		expect_errors(port, "POST", "/v1/stock-locations", x.ko1, body, bad);
	}
	wm_proc_cleanup(&x.p);
}

WM_TEST(location, others_are_404_operators_see_all)
{
	struct inv_world x;
	inv_world(&x);
	int port = x.p.port;
	char a[64], b[64], path[128];
	location(port, x.ko1, NULL, a);
	location(port, x.ko2, "\"address\":{\"line1\":\"Via 1\",\"city\":\"Alba\",\"postal_code\":\"12051\",\"country\":\"IT\"}",
		 b);
	(void)b;
	snprintf(path, sizeof(path), "/v1/stock-locations/%s", a);
	json_decref(tc_expect(port, "GET", path, x.ko1, NULL, 200));
	tc_expect_code(port, "GET", path, x.ko2, NULL, 404, "not_found");
	tc_expect_code(port, "GET", "/v1/stock-locations/loc_nope", x.ko2, NULL, 404, "not_found");
	json_decref(tc_expect(port, "GET", path, NULL, NULL, 200));
	json_t *j = tc_expect(port, "GET", "/v1/stock-locations", x.ko1, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 1);
	json_decref(j);
	j = tc_expect(port, "GET", "/v1/stock-locations", NULL, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 2);
	json_decref(j);
	char q[160];
	snprintf(q, sizeof(q), "/v1/stock-locations?owner_entity_id=%s", x.o2);
	j = tc_expect(port, "GET", q, x.ko1, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 0, "another owner: an empty page");
	json_decref(j);
	j = tc_expect(port, "GET", q, NULL, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 1);
	json_decref(j);
	wm_proc_cleanup(&x.p);
}

/* ---- inventory ---------------------------------------------------------------------- */

WM_TEST(inventory, atp_edge_events_and_offer_qty)
{
	struct inv_world x;
	inv_world(&x);
	int port = x.p.port;
	char loc[64], loc2[64], lv[64], path[128];
	location(port, x.ko1, NULL, loc);
	location(port, x.ko1, "\"name\":\"Second\"", loc2);
	cr_assert_eq(offer_qty(port, x.ko1, x.of1), 7, "manual until the offer has levels");
	json_t *j = level(port, x.ko1, x.of1, loc, "\"on_hand\":10,\"incoming\":5", 201);
	snprintf(lv, sizeof(lv), "%s", tc_jstr(j, "id"));
	cr_assert_str_eq(tc_jstr(j, "owner_entity_id"), x.o1);
	cr_assert_str_eq(tc_jstr(j, "condition"), "sellable");
	cr_assert_eq(jint(j, "atp"), 10);
	cr_assert_eq(jint(j, "reserved"), 0);
	json_decref(j);
	cr_assert_eq(offer_qty(port, x.ko1, x.of1), 10, "qty_available follows the levels");
	json_decref(level(port, x.ko1, x.of1, loc2, "\"on_hand\":3", 201));
	json_decref(level(port, x.ko1, x.of1, loc2, "\"on_hand\":100,\"condition\":\"damaged\"", 201));
	cr_assert_eq(offer_qty(port, x.ko1, x.of1), 13, "damaged stock is not available");
	char body[300];
	snprintf(body, sizeof(body), "{\"sku\":\"X\",\"offer_id\":\"%s\",\"location_id\":\"%s\"}", x.of1, loc);
	tc_expect_code(port, "POST", "/v1/inventory", x.ko1, body, 409, "inventory_exists");
	/* the natural key is (offer, location, condition), found among all the
	 * offer's levels, not only its first: the third level's twin too */
	snprintf(body, sizeof(body),
		 "{\"sku\":\"X\",\"offer_id\":\"%s\",\"location_id\":\"%s\",\"condition\":\"damaged\"}", x.of1, loc2);
	tc_expect_code(port, "POST", "/v1/inventory", x.ko1, body, 409, "inventory_exists");
	/* reserve 4 through a hold, then PATCH on_hand to the edge */
	snprintf(body, sizeof(body), "{\"hold_id\":\"ord1-l1\",\"level_id\":\"%s\",\"qty\":4}", lv);
	json_decref(tc_expect(port, "POST", "/v1/holds", NULL, body, 201));
	cr_assert_eq(offer_qty(port, x.ko1, x.of1), 9);
	snprintf(path, sizeof(path), "/v1/inventory/%s", lv);
	j = tc_expect(port, "PATCH", path, x.ko1, "{\"on_hand\":4}", 200);
	cr_assert_eq(jint(j, "atp"), 0, "atp exactly 0 is allowed");
	cr_assert_eq(jint(j, "reserved"), 4);
	cr_assert_eq(jint(j, "incoming"), 5);
	json_decref(j);
	tc_expect_code(port, "PATCH", path, x.ko1, "{\"on_hand\":3}", 409, "atp_negative");
	cr_assert_eq(offer_qty(port, x.ko1, x.of1), 3);
	j = tc_expect(port, "PATCH", path, x.ko1, "{\"on_hand\":100000000,\"incoming\":0}", 200);
	cr_assert_eq(jint(j, "atp"), 100000000 - 4);
	json_decref(j);
	const char *const past[][2] = {{"on_hand", "range"}, {NULL, NULL}};
	expect_errors(port, "PATCH", path, x.ko1, "{\"on_hand\":100000001}", past);
	const char *const neg[][2] = {{"incoming", "range"}, {NULL, NULL}};
	expect_errors(port, "PATCH", path, x.ko1, "{\"incoming\":-1}", neg);
	const char *const ro[][2] = {{"reserved", "read_only"}, {"allocated", "read_only"}, {"atp", "read_only"},
				     {"location_id", "immutable"}, {"bogus", "unknown_field"}, {NULL, NULL}};
	expect_errors(port, "PATCH", path, x.ko1,
		      "{\"reserved\":0,\"allocated\":0,\"atp\":1,\"location_id\":\"loc_x\",\"bogus\":1}", ro);
	/* a no-op PATCH writes nothing */
	size_t before = tc_count_events(port, "stock.changed", x.ko1);
	json_decref(tc_expect(port, "PATCH", path, x.ko1, "{\"incoming\":0}", 200));
	cr_assert_eq(tc_count_events(port, "stock.changed", x.ko1), before);
	/* 3 declares + hold + 2 patches */
	cr_assert_eq(before, 6, "stock.changed per change: %zu", before);
	j = tc_expect(port, "GET", "/v1/events?type=stock.changed&page_size=200", x.ko1, NULL, 200);
	json_t *last = json_array_get(json_object_get(j, "data"), json_array_size(json_object_get(j, "data")) - 1);
	char *dump = json_dumps(last, JSON_COMPACT);
	cr_assert(strstr(dump, "\"cause\":\"updated\"") && strstr(dump, "\"old\":{\"on_hand\":4,\"incoming\":5") &&
			  strstr(dump, lv) && strstr(dump, x.of1) && strstr(dump, loc),
		  "payload: %s", dump);
	free(dump);
	json_decref(j);
	cr_assert_eq(offer_qty(port, x.ko1, x.of1), 100000000 - 4 + 3 > 100000000 ? 100000000 : 100000000 - 4 + 3,
		     "capped at the offer bound");
	/* others: 404 on PATCH */
	tc_expect_code(port, "PATCH", path, x.ko2, "{\"on_hand\":1}", 404, "not_found");
	wm_proc_cleanup(&x.p);
}

WM_TEST(inventory, declare_field_rules_and_ownership)
{
	struct inv_world x;
	inv_world(&x);
	int port = x.p.port;
	char loc1[64], loc2[64], hub[64], body[600];
	location(port, x.ko1, NULL, loc1);
	location(port, x.ko2, "\"address\":{\"line1\":\"V\",\"city\":\"Alba\",\"postal_code\":\"1\",\"country\":\"IT\"}", loc2);
	location(port, x.kf1,
		 "\"location_type\":\"3PL_FULFILLMENT_CENTER\",\"address\":{\"line1\":\"K\",\"city\":\"Hamburg\","
		 "\"postal_code\":\"2\",\"country\":\"DE\"}",
		 hub);
	const char *const all[][2] = {{"sku", "format"},     {"offer_id", "exists"},  {"condition", "enum"},
				      {"on_hand", "range"},  {"incoming", "type"},    {"reserved", "read_only"},
				      {"atp", "read_only"},  {"location_id", "required"}, {"extra", "unknown_field"},
				      {NULL, NULL}};
	snprintf(body, sizeof(body),
		 "{\"sku\":\"a b\",\"offer_id\":\"%s\",\"condition\":\"mint\",\"on_hand\":-1,\"incoming\":\"2\","
		 "\"reserved\":1,\"atp\":1,\"extra\":0}",
		 x.of2);
	expect_errors(port, "POST", "/v1/inventory", x.ko1, body, all);
	/* another originator's location is not usable; a fulfiller's is */
	snprintf(body, sizeof(body), "{\"sku\":\"A\",\"offer_id\":\"%s\",\"location_id\":\"%s\"}", x.of1, loc2);
	const char *const unusable[][2] = {{"location_id", "usable"}, {NULL, NULL}};
	expect_errors(port, "POST", "/v1/inventory", x.ko1, body, unusable);
	json_t *j = level(port, x.ko1, x.of1, hub, "\"on_hand\":2,\"owner_entity_id\":\"\"", 422);
	json_decref(j);
	snprintf(body, sizeof(body), "\"owner_entity_id\":\"%s\"", x.o2);
	j = level(port, NULL, x.of1, hub, body, 422);
	cr_assert(tc_lists_error(j, "owner_entity_id", "offer_owner"));
	json_decref(j);
	j = level(port, x.ko1, x.of1, hub, "\"on_hand\":2", 201);
	char lv[64], path[160];
	snprintf(lv, sizeof(lv), "%s", tc_jstr(j, "id"));
	json_decref(j);
	j = level(port, x.ko2, x.of2, loc2, "\"on_hand\":1", 201);
	json_decref(j);
	/* the 3PL sees what is stored at its hub, not the originator's other stock */
	snprintf(path, sizeof(path), "/v1/inventory?location=%s", hub);
	j = tc_expect(port, "GET", path, x.kf1, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 1);
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/inventory?offer=%s", x.of1);
	j = tc_expect(port, "GET", path, x.ko2, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 0, "another originator's offer: nothing");
	json_decref(j);
	j = tc_expect(port, "GET", path, x.ko1, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 1);
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/inventory?offer=%s&location=%s", x.of1, loc1);
	j = tc_expect(port, "GET", path, x.ko1, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 0);
	json_decref(j);
	j = tc_expect(port, "GET", "/v1/inventory", x.ko2, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 1, "own levels only");
	json_decref(j);
	j = tc_expect(port, "GET", "/v1/inventory", NULL, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 2, "operators see all");
	json_decref(j);
	tc_expect_code(port, "GET", "/v1/inventory?offer=", x.ko1, NULL, 400, "invalid_filter");
	/* a seller key may read (its filter is empty) but not write */
	j = tc_expect(port, "GET", "/v1/inventory", x.ks1, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 0);
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/inventory/%s", lv);
	tc_expect_code(port, "PATCH", path, x.ks1, "{\"on_hand\":1}", 403, "action_not_allowed");
	wm_proc_cleanup(&x.p);
}

/* kill -9 the world's shard (after a snapshot when `snapshot`) and start
 * it again on its data; its new port. */
static int kill9_restart(struct inv_world *x, int snapshot)
{
	if (snapshot) {
		json_decref(tc_expect(x->p.port, "POST", "/v1/admin/snapshots", NULL, NULL, 202));
		usleep(500000);
	}
	wm_kill9(&x->p);
	cr_assert_eq(wm_start(&x->p, NULL, NULL), 0);
	return x->p.port;
}

/* The sku of level `path` as GET returns it, into out[size]. */
static void level_sku(int port, const char *key, const char *path, char *out, size_t size)
{
	json_t *j = tc_expect(port, "GET", path, key, NULL, 200);
	snprintf(out, size, "%s", tc_jstr(j, "sku"));
	json_decref(j);
}

WM_TEST(inventory, skus_of_every_length_survive_moves_and_restarts)
{
	/* a level keeps a sku of up to 14 bytes in its row and a longer one
	 * (to 64) in a block of its own: 1, 14, 15, 23 and 64 bytes, each
	 * through a stock move (the row rewritten in place), a PATCH, a
	 * restart from the WAL and one from a snapshot */
	struct inv_world x;
	inv_world(&x);
	int port = x.p.port;
	static const int lens[] = {1, 14, 15, 23, 64};
	enum { N = sizeof(lens) / sizeof(lens[0]) };
	char loc[N][64], skus[N][80], paths[N][128], body[512], got[80];
	for (int i = 0; i < N; i++) {
		location(port, x.ko1, NULL, loc[i]);
		for (int k = 0; k < lens[i]; k++)
			skus[i][k] = "ABCDEFGHJK-_.0123456789"[(k + i) % 23];
		skus[i][lens[i]] = 0;
		snprintf(body, sizeof(body), "{\"sku\":\"%s\",\"offer_id\":\"%s\",\"location_id\":\"%s\",\"on_hand\":10}",
			 skus[i], x.of1, loc[i]);
		json_t *j = tc_expect(port, "POST", "/v1/inventory", x.ko1, body, 201);
		cr_assert_str_eq(tc_jstr(j, "sku"), skus[i], "%d bytes", lens[i]);
		snprintf(paths[i], sizeof(paths[i]), "/v1/inventory/%s", tc_jstr(j, "id"));
		snprintf(body, sizeof(body), "{\"hold_id\":\"sku-%d\",\"level_id\":\"%s\",\"qty\":2}", i, tc_jstr(j, "id"));
		json_decref(j);
		json_decref(tc_expect(port, "POST", "/v1/holds", NULL, body, 201));
		json_decref(tc_expect(port, "PATCH", paths[i], x.ko1, "{\"on_hand\":12}", 200));
	}
	snprintf(body, sizeof(body), "{\"sku\":\"%065d\",\"offer_id\":\"%s\",\"location_id\":\"%s\"}", 7, x.of1, loc[0]);
	tc_expect_code(port, "POST", "/v1/inventory", x.ko1, body, 422, "validation_failed");
	for (int round = 0; round < 2; round++) {
		port = kill9_restart(&x, round == 1);
		for (int i = 0; i < N; i++) {
			level_sku(port, x.ko1, paths[i], got, sizeof(got));
			cr_assert_str_eq(got, skus[i], "round %d, %d bytes", round, lens[i]);
		}
	}
	wm_proc_cleanup(&x.p);
}

/* ---- holds ------------------------------------------------------------------------ */

WM_TEST(hold, http_primitives_survive_kill9)
{
	struct inv_world x;
	inv_world(&x);
	int port = x.p.port;
	char loc[64], lv[64], body[300], path[160];
	location(port, x.ko1, NULL, loc);
	json_t *j = level(port, x.ko1, x.of1, loc, "\"on_hand\":10", 201);
	snprintf(lv, sizeof(lv), "%s", tc_jstr(j, "id"));
	json_decref(j);
	snprintf(body, sizeof(body), "{\"hold_id\":\"h-a\",\"level_id\":\"%s\",\"qty\":6}", lv);
	j = tc_expect(port, "POST", "/v1/holds", NULL, body, 201);
	cr_assert_str_eq(tc_jstr(j, "state"), "prepared");
	json_decref(j);
	json_decref(tc_expect(port, "POST", "/v1/holds", NULL, body, 200)); /* idempotent */
	snprintf(body, sizeof(body), "{\"hold_id\":\"h-a\",\"level_id\":\"%s\",\"qty\":5}", lv);
	tc_expect_code(port, "POST", "/v1/holds", NULL, body, 409, "hold_conflict");
	snprintf(body, sizeof(body), "{\"hold_id\":\"h-b\",\"level_id\":\"%s\",\"qty\":5}", lv);
	tc_expect_code(port, "POST", "/v1/holds", NULL, body, 409, "atp_short");
	snprintf(body, sizeof(body), "{\"hold_id\":\"h-b\",\"level_id\":\"%s\",\"qty\":3}", lv);
	json_decref(tc_expect(port, "POST", "/v1/holds", NULL, body, 201));
	json_decref(tc_expect(port, "POST", "/v1/holds/h-a/commit", NULL, NULL, 200));
	json_decref(tc_expect(port, "POST", "/v1/holds/h-b/release", NULL, NULL, 200));
	tc_expect_code(port, "POST", "/v1/holds/h-b/commit", NULL, NULL, 409, "invalid_hold_state");
	tc_expect_code(port, "POST", "/v1/holds/nope/commit", NULL, NULL, 404, "not_found");
	tc_expect_code(port, "POST", "/v1/holds", x.ko1, body, 403, "insufficient_scope");
	cr_assert_eq(tc_count_events(port, "stock.reserved", NULL), 1);
	snprintf(path, sizeof(path), "/v1/inventory?offer=%s", x.of1);
	for (int round = 0; round < 2; round++) {
		port = kill9_restart(&x, round == 1);
		j = tc_expect(port, "GET", path, x.ko1, NULL, 200);
		json_t *l = json_array_get(json_object_get(j, "data"), 0);
		cr_assert_eq(jint(l, "on_hand"), 10);
		cr_assert_eq(jint(l, "allocated"), 6);
		cr_assert_eq(jint(l, "reserved"), 0);
		cr_assert_eq(jint(l, "atp"), 4);
		json_decref(j);
		cr_assert_eq(offer_qty(port, x.ko1, x.of1), 4);
		/* the holds' states are rebuilt: still idempotent, still final */
		json_decref(tc_expect(port, "POST", "/v1/holds/h-a/commit", NULL, NULL, 200));
		tc_expect_code(port, "POST", "/v1/holds/h-b/commit", NULL, NULL, 409, "invalid_hold_state");
		snprintf(body, sizeof(body), "{\"hold_id\":\"h-a\",\"level_id\":\"%s\",\"qty\":6}", lv);
		json_decref(tc_expect(port, "POST", "/v1/holds", NULL, body, 200));
	}
	json_decref(tc_expect(port, "POST", "/v1/holds/h-a/release", NULL, NULL, 200));
	cr_assert_eq(offer_qty(port, x.ko1, x.of1), 10);
	wm_proc_cleanup(&x.p);
}

/* ---- network snapshot ----------------------------------------------------------------- */

WM_TEST(inventory, network_snapshot_needs_read_network)
{
	struct inv_world x;
	inv_world(&x);
	int port = x.p.port;
	char loc[64], loc2[64];
	location(port, x.ko1,
		 "\"geo_coordinates\":{\"lat\":47.02,\"lon\":4.84},\"tax_jurisdiction\":{\"excise_tax_zone_id\":\"FR-21\"},"
		 "\"capabilities\":{\"supports_bonded_transfer\":true}",
		 loc);
	location(port, x.ko2, "\"address\":{\"line1\":\"V\",\"city\":\"Alba\",\"postal_code\":\"1\",\"country\":\"IT\"}", loc2);
	json_decref(level(port, x.ko1, x.of1, loc, "\"on_hand\":10", 201));
	json_decref(level(port, x.ko1, x.of1, loc, "\"on_hand\":5,\"condition\":\"damaged\"", 201));
	tc_expect_code(port, "GET", "/v1/inventory/network-snapshot", x.ko1, NULL, 403, "insufficient_scope");
	tc_expect_code(port, "GET", "/v1/inventory/network-snapshot", x.kf1, NULL, 403, "insufficient_scope");
	json_t *j = tc_expect(port, "GET", "/v1/inventory/network-snapshot?page_size=1", NULL, NULL, 200);
	json_t *data = json_object_get(j, "data");
	cr_assert_eq(json_array_size(data), 1);
	cr_assert(json_is_true(json_object_get(j, "has_more")));
	json_t *n = json_array_get(data, 0);
	cr_assert_str_eq(tc_jstr(n, "id"), loc);
	cr_assert(json_is_true(json_object_get(json_object_get(n, "capabilities"), "supports_bonded_transfer")));
	cr_assert_str_eq(tc_jstr(json_object_get(n, "tax_jurisdiction"), "excise_tax_zone_id"), "FR-21");
	cr_assert_not_null(json_object_get(n, "geo_coordinates"));
	json_t *st = json_object_get(n, "stock");
	cr_assert_eq(json_array_size(st), 1, "summed per offer");
	cr_assert_str_eq(tc_jstr(json_array_get(st, 0), "offer_id"), x.of1);
	cr_assert_eq(jint(json_array_get(st, 0), "on_hand"), 15);
	cr_assert_eq(jint(json_array_get(st, 0), "atp"), 10, "sellable only");
	char path[512];
	snprintf(path, sizeof(path), "/v1/inventory/network-snapshot?page_size=1&cursor=%s", tc_jstr(j, "next_cursor"));
	json_decref(j);
	j = tc_expect(port, "GET", path, NULL, NULL, 200);
	n = json_array_get(json_object_get(j, "data"), 0);
	cr_assert_str_eq(tc_jstr(n, "id"), loc2);
	cr_assert_eq(json_array_size(json_object_get(n, "stock")), 0);
	cr_assert(json_is_false(json_object_get(j, "has_more")));
	json_decref(j);
	wm_proc_cleanup(&x.p);
}

/* ---- sales channels x stock locations (issue 6) --------------------------------- */

/* The atp of offer_id on an availability page; *found says whether listed. */
static json_int_t avail_of(json_t *page, const char *offer_id, int *found)
{
	size_t i;
	json_t *e;
	*found = 0;
	json_array_foreach(json_object_get(page, "data"), i, e)
	{
		if (!strcmp(tc_jstr(e, "offer_id"), offer_id)) {
			*found = 1;
			return jint(e, "atp");
		}
	}
	return 0;
}

WM_TEST(channel, locations_and_availability)
{
	struct inv_world x;
	inv_world(&x);
	int port = x.p.port;
	char s2[64], ks2[128], hub_a[64], hub_b[64], of3[64], body[512], path[512], chn[64], chn2[64];
	tc_partner_live(port, "Seller Two", "DE", "[\"seller\"]", NULL, s2);
	tc_key_for(port, s2, ks2);
	/* of1 (o1) and of2 (o2) shared; of3 (o2) not shareable: blocked for s1 */
	snprintf(path, sizeof(path), "/v1/offers/%s", x.of1);
	json_decref(tc_expect(port, "PATCH", path, x.ko1, "{\"network_shareable\":true}", 200));
	snprintf(path, sizeof(path), "/v1/offers/%s", x.of2);
	json_decref(tc_expect(port, "PATCH", path, x.ko2, "{\"network_shareable\":true}", 200));
	json_decref(tc_offer(port, x.ko2, x.w[0], "\"status\":\"active\",\"network_shareable\":false", 201, of3));
	/* two 3PL hubs hold both originators' stock */
	location(port, x.kf1, "\"name\":\"Hub A\"", hub_a);
	location(port, x.kf1, "\"name\":\"Hub B\"", hub_b);
	json_decref(level(port, x.ko1, x.of1, hub_a, "\"on_hand\":5", 201));
	json_decref(level(port, x.ko1, x.of1, hub_a, "\"on_hand\":3,\"condition\":\"damaged\"", 201));
	json_decref(level(port, x.ko1, x.of1, hub_b, "\"on_hand\":100", 201));
	json_decref(level(port, x.ko2, x.of2, hub_a, "\"on_hand\":8", 201));
	json_decref(level(port, x.ko2, x.of2, hub_b, "\"on_hand\":50", 201));
	json_decref(level(port, x.ko2, of3, hub_a, "\"on_hand\":9", 201));

	/* a seller links a location it does not own */
	snprintf(body, sizeof(body), "{\"name\":\"Web\",\"kind\":\"marketplace\",\"location_ids\":[\"%s\"]}", hub_a);
	json_t *j = tc_expect(port, "POST", "/v1/sales-channels", x.ks1, body, 201);
	snprintf(chn, sizeof(chn), "%s", tc_jstr(j, "id"));
	cr_assert_eq(json_array_size(json_object_get(j, "location_ids")), 1);
	json_decref(j);
	json_decref(tc_expect(port, "POST", "/v1/sales-channels", ks2, "{\"name\":\"Other\",\"kind\":\"pos_qr\"}", 201));
	j = tc_expect(port, "GET", "/v1/sales-channels", ks2, NULL, 200);
	snprintf(chn2, sizeof(chn2), "%s", tc_jstr(json_array_get(json_object_get(j, "data"), 0), "id"));
	json_decref(j);
	/* link rules */
	const char *const unknown[][2] = {{"location_ids", "exists"}, {NULL, NULL}};
	expect_errors(port, "POST", "/v1/sales-channels", x.ks1,
		      "{\"name\":\"Bad\",\"kind\":\"marketplace\",\"location_ids\":[\"loc_nope\"]}", unknown);
	snprintf(body, sizeof(body), "{\"location_ids\":[\"%s\",\"%s\"]}", hub_a, hub_a);
	const char *const dup[][2] = {{"location_ids", "unique"}, {NULL, NULL}};
	snprintf(path, sizeof(path), "/v1/sales-channels/%s", chn);
	expect_errors(port, "PATCH", path, x.ks1, body, dup);

	/* availability: only hub A counts, only sellable, the blocked offer absent */
	snprintf(path, sizeof(path), "/v1/sales-channels/%s/availability", chn);
	j = tc_expect(port, "GET", path, x.ks1, NULL, 200);
	int f;
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 2, "%s", json_dumps(j, JSON_COMPACT));
	cr_assert_eq(avail_of(j, x.of1, &f), 5);
	cr_assert(f);
	cr_assert_eq(avail_of(j, x.of2, &f), 8);
	cr_assert(f);
	avail_of(j, of3, &f);
	cr_assert_not(f, "a non-shareable offer of another originator is absent");
	json_decref(j);
	/* paginated in offer id order */
	snprintf(path, sizeof(path), "/v1/sales-channels/%s/availability?page_size=1", chn);
	j = tc_expect(port, "GET", path, x.ks1, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 1);
	cr_assert(json_is_true(json_object_get(j, "has_more")));
	char cur[256];
	snprintf(cur, sizeof(cur), "%s", tc_jstr(j, "next_cursor"));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/sales-channels/%s/availability?page_size=1&cursor=%s", chn, cur);
	j = tc_expect(port, "GET", path, x.ks1, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 1);
	cr_assert(json_is_false(json_object_get(j, "has_more")));
	json_decref(j);
	/* ?offer= */
	snprintf(path, sizeof(path), "/v1/sales-channels/%s/availability?offer=%s", chn, x.of1);
	j = tc_expect(port, "GET", path, x.ks1, NULL, 200);
	cr_assert_eq(avail_of(j, x.of1, &f), 5);
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/sales-channels/%s/availability?offer=%s", chn, of3);
	tc_expect_code(port, "GET", path, x.ks1, NULL, 404, "not_found");
	/* another seller's channel: 404; the operator sees it */
	snprintf(path, sizeof(path), "/v1/sales-channels/%s/availability", chn2);
	tc_expect_code(port, "GET", path, x.ks1, NULL, 404, "not_found");
	snprintf(path, sizeof(path), "/v1/sales-channels/%s/availability", chn);
	tc_expect_code(port, "GET", path, ks2, NULL, 404, "not_found");
	j = tc_expect(port, "GET", path, NULL, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 2);
	json_decref(j);
	/* link hub B too: the sums grow */
	snprintf(path, sizeof(path), "/v1/sales-channels/%s", chn);
	snprintf(body, sizeof(body), "{\"location_ids\":[\"%s\",\"%s\"]}", hub_a, hub_b);
	json_decref(tc_expect(port, "PATCH", path, x.ks1, body, 200));
	snprintf(path, sizeof(path), "/v1/sales-channels/%s/availability", chn);
	j = tc_expect(port, "GET", path, x.ks1, NULL, 200);
	cr_assert_eq(avail_of(j, x.of1, &f), 105);
	cr_assert_eq(avail_of(j, x.of2, &f), 58);
	json_decref(j);
	/* the links survive a restart */
	wm_kill9(&x.p);
	cr_assert_eq(wm_start(&x.p, NULL, NULL), 0);
	j = tc_expect(x.p.port, "GET", path, x.ks1, NULL, 200);
	cr_assert_eq(avail_of(j, x.of1, &f), 105);
	json_decref(j);
	wm_proc_cleanup(&x.p);
}
