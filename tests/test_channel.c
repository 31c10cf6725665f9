/*
 * test_channel.c -- a seller's shelf over HTTP against real wm-shard
 * processes: sales channels and curated shops (every field rule listed at
 * once, who may create, ownership 404s, per-seller name uniqueness, the
 * status table, markup bounds and exactness, a shop's channel), publishable
 * keys scoped to a channel, and a kill -9 + restart.
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

/* A partner with roles (JSON array text) and extra members, walked to live. */
static void partner(int port, const char *name, const char *roles, const char *extra, char *out)
{
	char body[512], path[128];
	snprintf(body, sizeof(body), "{\"legal_name\":\"%s\",\"country\":\"FR\",\"roles\":%s%s%s}", name, roles,
		 extra ? "," : "", extra ? extra : "");
	json_t *j = tc_expect(port, "POST", "/v1/partners", NULL, body, 201);
	snprintf(out, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
	static const char *const steps[] = {"verified", "roles_enabled", "configured", "integrated", "live"};
	snprintf(path, sizeof(path), "/v1/partners/%s", out);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		snprintf(body, sizeof(body), "{\"status\":\"%s\"}", steps[i]);
		json_decref(tc_expect(port, "PATCH", path, NULL, body, 200));
	}
}

/* A key for a partner (default partner scopes; extra members may be NULL). */
static void key_for(int port, const char *entity, const char *extra, char *out)
{
	char body[256];
	snprintf(body, sizeof(body), "{\"entity_id\":\"%s\"%s%s}", entity, extra ? "," : "", extra ? extra : "");
	json_t *j = tc_expect(port, "POST", "/api/keys", NULL, body, 201);
	snprintf(out, 128, "%s", tc_jstr(j, "key"));
	json_decref(j);
}

/* Create a row at path as key; its id into out. */
static void create(int port, const char *path, const char *key, const char *body, char *out)
{
	json_t *j = tc_expect(port, "POST", path, key, body, 201);
	snprintf(out, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
}

static void channel(int port, const char *key, const char *name, char *out)
{
	char body[256];
	snprintf(body, sizeof(body), "{\"name\":\"%s\",\"kind\":\"webshop_connect\"}", name);
	create(port, "/v1/sales-channels", key, body, out);
}

static size_t list_count(int port, const char *path, const char *key)
{
	json_t *j = tc_expect(port, "GET", path, key, NULL, 200);
	size_t n = json_array_size(json_object_get(j, "data"));
	json_decref(j);
	return n;
}

/* How many events of a type the operator sees. */
static size_t event_count(int port, const char *type)
{
	char path[128];
	snprintf(path, sizeof(path), "/v1/events?type=%s&page_size=200", type);
	return list_count(port, path, NULL);
}

/* Two live sellers with keys, one originator-only partner with a key. */
struct cast {
	char s1[64], s2[64], orig[64];
	char k1[128], k2[128], ko[128];
};

static void cast(int port, struct cast *c)
{
	partner(port, "Seller One", "[\"seller\"]", NULL, c->s1);
	partner(port, "Seller Two", "[\"seller\"]", NULL, c->s2);
	partner(port, "Estate", "[\"originator\"]", "\"originator_type\":\"estate\"", c->orig);
	key_for(port, c->s1, NULL, c->k1);
	key_for(port, c->s2, NULL, c->k2);
	key_for(port, c->orig, NULL, c->ko);
}

/* ---- sales channels ------------------------------------------------------------ */

WM_TEST(channel, create_get_list_patch_and_events)
{
	struct wm_proc p;
	tc_start(&p);
	struct cast c;
	cast(p.port, &c);
	json_t *j = tc_expect(p.port, "POST", "/v1/sales-channels", c.k1,
			   "{\"name\":\"Web FR\",\"kind\":\"webshop_connect\",\"country\":\"FR\",\"currency\":\"EUR\"}", 201);
	char id[64], path[128];
	snprintf(id, sizeof(id), "%s", tc_jstr(j, "id"));
	cr_assert(!strncmp(id, "chn_", 4), "%s", id);
	cr_assert_str_eq(tc_jstr(j, "seller_id"), c.s1, "defaults to the caller");
	cr_assert_str_eq(tc_jstr(j, "kind"), "webshop_connect");
	cr_assert_str_eq(tc_jstr(j, "country"), "FR");
	cr_assert_str_eq(tc_jstr(j, "currency"), "EUR");
	cr_assert_str_eq(tc_jstr(j, "status"), "active");
	cr_assert(json_is_array(json_object_get(j, "listings")) && json_array_size(json_object_get(j, "listings")) == 0);
	cr_assert_not_null(tc_jstr(j, "created_at"));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/sales-channels/%s", id);
	j = tc_expect(p.port, "GET", path, c.k1, NULL, 200);
	cr_assert_str_eq(tc_jstr(j, "name"), "Web FR");
	json_decref(j);
	/* operators create for a named seller, and must name one */
	char body[256];
	snprintf(body, sizeof(body), "{\"seller_id\":\"%s\",\"name\":\"POS\",\"kind\":\"pos_qr\"}", c.s1);
	json_decref(tc_expect(p.port, "POST", "/v1/sales-channels", NULL, body, 201));
	cr_assert_eq(list_count(p.port, "/v1/sales-channels", c.k1), 2);
	/* PATCH: merge; null removes an optional member */
	j = tc_expect(p.port, "PATCH", path, c.k1, "{\"name\":\"Web France\",\"country\":null,\"kind\":\"marketplace\"}", 200);
	cr_assert_str_eq(tc_jstr(j, "name"), "Web France");
	cr_assert(json_is_null(json_object_get(j, "country")));
	cr_assert_str_eq(tc_jstr(j, "currency"), "EUR", "untouched members stay");
	cr_assert_str_eq(tc_jstr(j, "kind"), "marketplace");
	json_decref(j);
	cr_assert_eq(event_count(p.port, "sales_channel.created"), 2);
	cr_assert_eq(event_count(p.port, "sales_channel.updated"), 1);
	wm_proc_cleanup(&p);
}

WM_TEST(channel, every_failing_field_is_listed_with_its_rule)
{
	struct wm_proc p;
	tc_start(&p);
	struct cast c;
	cast(p.port, &c);
	char longname[200], body[512];
	memset(longname, 'n', 121); /* SHELF_MAX_NAME + 1 */
	longname[121] = 0;
	snprintf(body, sizeof(body),
		 "{\"name\":\"%s\",\"kind\":\"web\",\"country\":\"France\",\"currency\":\"EURO\",\"status\":\"closed\","
		 "\"listings\":[],\"id\":\"chn_x\",\"colour\":\"red\"}",
		 longname);
	static const char *const all[][2] = {{"name", "max_length"},    {"kind", "enum"},
					     {"country", "iso3166_alpha2"}, {"currency", "iso4217"},
					     {"status", "initial"},         {"listings", "read_only"},
					     {"id", "read_only"},           {"colour", "unknown_field"},
					     {NULL, NULL}};
	expect_errors(p.port, "POST", "/v1/sales-channels", c.k1, body, all);
	static const char *const missing[][2] = {{"name", "required"}, {"kind", "required"}, {NULL, NULL}};
	expect_errors(p.port, "POST", "/v1/sales-channels", c.k1, "{}", missing);
	/* the name bound at its edge: 120 bytes fit */
	longname[120] = 0;
	snprintf(body, sizeof(body), "{\"name\":\"%s\",\"kind\":\"pos_qr\"}", longname);
	json_decref(tc_expect(p.port, "POST", "/v1/sales-channels", c.k1, body, 201));
	/* PATCH: required members cannot be removed; seller_id cannot change */
	char id[64], path[128];
	channel(p.port, c.k1, "Web", id);
	snprintf(path, sizeof(path), "/v1/sales-channels/%s", id);
	snprintf(body, sizeof(body), "{\"name\":null,\"kind\":null,\"seller_id\":\"%s\",\"created_at\":\"x\"}", c.s1);
	static const char *const patch[][2] = {{"name", "required"},
					       {"kind", "required"},
					       {"seller_id", "read_only"},
					       {"created_at", "read_only"},
					       {NULL, NULL}};
	expect_errors(p.port, "PATCH", path, c.k1, body, patch);
	wm_proc_cleanup(&p);
}

WM_TEST(channel, only_sellers_create_and_only_their_own)
{
	struct wm_proc p;
	tc_start(&p);
	struct cast c;
	cast(p.port, &c);
	char body[256];
	/* an originator-only partner: refused by the policy before the handler */
	tc_expect_code(p.port, "POST", "/v1/sales-channels", c.ko, "{\"name\":\"x\",\"kind\":\"pos_qr\"}", 403,
		    "action_not_allowed");
	/* a seller names itself only */
	snprintf(body, sizeof(body), "{\"seller_id\":\"%s\",\"name\":\"x\",\"kind\":\"pos_qr\"}", c.s2);
	static const char *const own[][2] = {{"seller_id", "own"}, {NULL, NULL}};
	expect_errors(p.port, "POST", "/v1/sales-channels", c.k1, body, own);
	/* operators name a seller, which must exist and have the seller role */
	static const char *const req[][2] = {{"seller_id", "required"}, {NULL, NULL}};
	expect_errors(p.port, "POST", "/v1/sales-channels", NULL, "{\"name\":\"x\",\"kind\":\"pos_qr\"}", req);
	snprintf(body, sizeof(body), "{\"seller_id\":\"%s\",\"name\":\"x\",\"kind\":\"pos_qr\"}", c.orig);
	static const char *const role[][2] = {{"seller_id", "seller_role"}, {NULL, NULL}};
	expect_errors(p.port, "POST", "/v1/sales-channels", NULL, body, role);
	static const char *const exists[][2] = {{"seller_id", "exists"}, {NULL, NULL}};
	expect_errors(p.port, "POST", "/v1/sales-channels", NULL,
		      "{\"seller_id\":\"ptn_nobody\",\"name\":\"x\",\"kind\":\"pos_qr\"}", exists);
	cr_assert_eq(list_count(p.port, "/v1/sales-channels", NULL), 0);
	wm_proc_cleanup(&p);
}

WM_TEST(channel, another_sellers_rows_are_404_and_lists_are_own)
{
	struct wm_proc p;
	tc_start(&p);
	struct cast c;
	cast(p.port, &c);
	char a[64], b[64], path[128];
	channel(p.port, c.k1, "A web", a);
	channel(p.port, c.k1, "A pos", path); /* a second row of seller 1 */
	channel(p.port, c.k2, "B web", b);
	snprintf(path, sizeof(path), "/v1/sales-channels/%s", a);
	tc_expect_code(p.port, "GET", path, c.k2, NULL, 404, "not_found");
	tc_expect_code(p.port, "PATCH", path, c.k2, "{\"name\":\"mine\"}", 404, "not_found");
	tc_expect_code(p.port, "GET", "/v1/sales-channels/chn_unknown", c.k2, NULL, 404, "not_found");
	cr_assert_eq(list_count(p.port, "/v1/sales-channels", c.k1), 2);
	cr_assert_eq(list_count(p.port, "/v1/sales-channels", c.k2), 1);
	char q[160];
	snprintf(q, sizeof(q), "/v1/sales-channels?seller_id=%s", c.s1);
	cr_assert_eq(list_count(p.port, q, c.k2), 0, "a partner never lists another seller's rows");
	cr_assert_eq(list_count(p.port, q, NULL), 2, "operators list one seller from the index");
	cr_assert_eq(list_count(p.port, "/v1/sales-channels", NULL), 3);
	/* paging through the by-seller index */
	json_t *j = tc_expect(p.port, "GET", "/v1/sales-channels?page_size=1", c.k1, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 1);
	cr_assert(json_is_true(json_object_get(j, "has_more")));
	char next[400];
	snprintf(next, sizeof(next), "/v1/sales-channels?page_size=1&cursor=%s", tc_jstr(j, "next_cursor"));
	json_decref(j);
	j = tc_expect(p.port, "GET", next, c.k1, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 1);
	cr_assert(json_is_false(json_object_get(j, "has_more")));
	json_decref(j);
	tc_expect_code(p.port, "GET", "/v1/sales-channels?seller_id=", NULL, NULL, 400, "invalid_filter");
	wm_proc_cleanup(&p);
}

WM_TEST(channel, name_is_unique_per_seller)
{
	struct wm_proc p;
	tc_start(&p);
	struct cast c;
	cast(p.port, &c);
	char a[64], a2[64], path[128];
	channel(p.port, c.k1, "Web FR", a);
	json_t *j = tc_expect(p.port, "POST", "/v1/sales-channels", c.k1, "{\"name\":\"web fr\",\"kind\":\"pos_qr\"}", 409);
	cr_assert_str_eq(tc_jstr(j, "code"), "channel_name_taken");
	cr_assert(strstr(tc_jstr(j, "detail"), a), "names the holder: %s", tc_jstr(j, "detail"));
	json_decref(j);
	channel(p.port, c.k2, "Web FR", path); /* another seller may use it */
	channel(p.port, c.k1, "Web DE", a2);
	snprintf(path, sizeof(path), "/v1/sales-channels/%s", a2);
	tc_expect_code(p.port, "PATCH", path, c.k1, "{\"name\":\"WEB FR\"}", 409, "channel_name_taken");
	json_decref(tc_expect(p.port, "PATCH", path, c.k1, "{\"name\":\"Web DE\"}", 200)); /* its own name */
	json_decref(tc_expect(p.port, "PATCH", path, c.k1, "{\"name\":\"Web Deutschland\"}", 200));
	channel(p.port, c.k1, "Web DE", path); /* the old name is free again */
	wm_proc_cleanup(&p);
}

WM_TEST(channel, status_transitions_and_filter)
{
	struct wm_proc p;
	tc_start(&p);
	struct cast c;
	cast(p.port, &c);
	char a[64], b[64], path[128];
	channel(p.port, c.k1, "One", a);
	create(p.port, "/v1/sales-channels", c.k1, "{\"name\":\"Two\",\"kind\":\"pos_qr\",\"status\":\"paused\"}", b);
	snprintf(path, sizeof(path), "/v1/sales-channels/%s", a);
	static const char *const moves[] = {"paused", "active", "paused", "closed"};
	for (size_t i = 0; i < sizeof(moves) / sizeof(moves[0]); i++) {
		char body[64];
		snprintf(body, sizeof(body), "{\"status\":\"%s\"}", moves[i]);
		json_t *j = tc_expect(p.port, "PATCH", path, c.k1, body, 200);
		cr_assert_str_eq(tc_jstr(j, "status"), moves[i]);
		json_decref(j);
	}
	tc_expect_code(p.port, "PATCH", path, c.k1, "{\"status\":\"active\"}", 409, "channel_closed");
	tc_expect_code(p.port, "PATCH", path, c.k1, "{\"name\":\"Reopened\"}", 409, "channel_closed");
	cr_assert_eq(list_count(p.port, "/v1/sales-channels?status=closed", c.k1), 1);
	cr_assert_eq(list_count(p.port, "/v1/sales-channels?status=paused", c.k1), 1);
	cr_assert_eq(list_count(p.port, "/v1/sales-channels?status=active", c.k1), 0);
	tc_expect_code(p.port, "GET", "/v1/sales-channels?status=open", c.k1, NULL, 400, "invalid_filter");
	static const char *const bad[][2] = {{"status", "enum"}, {NULL, NULL}};
	snprintf(path, sizeof(path), "/v1/sales-channels/%s", b);
	expect_errors(p.port, "PATCH", path, c.k1, "{\"status\":\"deleted\"}", bad);
	wm_proc_cleanup(&p);
}

/* ---- curated shops ------------------------------------------------------------- */

WM_TEST(shop, create_markup_bounds_and_exactness)
{
	struct wm_proc p;
	tc_start(&p);
	struct cast c;
	cast(p.port, &c);
	char ch[64], body[256], id[64], path[128];
	channel(p.port, c.k1, "Web", ch);
	snprintf(body, sizeof(body), "{\"name\":\"Cellar picks\",\"markup\":25.5,\"channel_id\":\"%s\"}", ch);
	json_t *j = tc_expect(p.port, "POST", "/v1/curated-shops", c.k1, body, 201);
	snprintf(id, sizeof(id), "%s", tc_jstr(j, "id"));
	cr_assert(!strncmp(id, "shp_", 4), "%s", id);
	char *dump = json_dumps(json_object_get(j, "markup"), JSON_ENCODE_ANY);
	cr_assert_str_eq(dump, "25.5", "exact decimal back");
	free(dump);
	cr_assert_str_eq(tc_jstr(j, "layout"), "grid", "default layout");
	cr_assert_str_eq(tc_jstr(j, "seller_id"), c.s1);
	cr_assert_str_eq(tc_jstr(j, "status"), "active");
	json_decref(j);
	/* markup: 2 decimals, 0..1000 at and past the edges */
	static const struct {
		const char *markup;
		int status;
		const char *rule;
	} cases[] = {
		{"0", 200, NULL},        {"1000", 200, NULL},       {"1000.00", 200, NULL}, {"12.34", 200, NULL},
		{"12.340", 200, NULL},   {"12.345", 422, "precision"}, {"1000.01", 422, "range"},
		{"-0.01", 422, "range"}, {"1e30", 422, "range"},    {"\"12\"", 422, "type"},
	};
	snprintf(path, sizeof(path), "/v1/curated-shops/%s", id);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(body, sizeof(body), "{\"markup\":%s}", cases[i].markup);
		j = tc_expect(p.port, "PATCH", path, c.k1, body, cases[i].status);
		if (cases[i].rule)
			cr_assert(tc_lists_error(j, "markup", cases[i].rule), "%s: want %s", cases[i].markup, cases[i].rule);
		json_decref(j);
	}
	/* every failing field at once */
	char longname[130];
	memset(longname, 's', 121);
	longname[121] = 0;
	snprintf(body, sizeof(body), "{\"name\":\"%s\",\"markup\":1.001,\"layout\":\"carousel\",\"theme\":{}}", longname);
	static const char *const all[][2] = {{"name", "max_length"},   {"markup", "precision"},
					     {"layout", "enum"},           {"theme", "unknown_field"},
					     {"channel_id", "required"},   {NULL, NULL}};
	expect_errors(p.port, "POST", "/v1/curated-shops", c.k1, body, all);
	static const char *const missing[][2] = {{"name", "required"}, {"markup", "required"}, {"channel_id", "required"},
						 {NULL, NULL}};
	expect_errors(p.port, "POST", "/v1/curated-shops", c.k1, "{}", missing);
	j = tc_expect(p.port, "PATCH", path, c.k1, "{\"layout\":\"editorial\",\"status\":\"paused\"}", 200);
	cr_assert_str_eq(tc_jstr(j, "layout"), "editorial");
	json_decref(j);
	cr_assert_eq(event_count(p.port, "curated_shop.created"), 1);
	cr_assert_eq(list_count(p.port, "/v1/curated-shops?status=paused", c.k1), 1);
	/* names unique per seller */
	snprintf(body, sizeof(body), "{\"name\":\"CELLAR PICKS\",\"markup\":1,\"channel_id\":\"%s\"}", ch);
	tc_expect_code(p.port, "POST", "/v1/curated-shops", c.k1, body, 409, "shop_name_taken");
	wm_proc_cleanup(&p);
}

WM_TEST(shop, seller_needs_curates_offers)
{
	struct wm_proc p;
	tc_start(&p);
	char nocur[64], key[128], ch[64], body[256];
	partner(p.port, "Shelf only", "[\"seller\"]", "\"capabilities\":{\"curates_offers\":false}", nocur);
	key_for(p.port, nocur, NULL, key);
	channel(p.port, key, "Web", ch); /* channels need no capability */
	snprintf(body, sizeof(body), "{\"name\":\"Picks\",\"markup\":10,\"channel_id\":\"%s\"}", ch);
	tc_expect_code(p.port, "POST", "/v1/curated-shops", key, body, 403, "action_not_allowed");
	snprintf(body, sizeof(body), "{\"seller_id\":\"%s\",\"name\":\"Picks\",\"markup\":10,\"channel_id\":\"%s\"}", nocur,
		 ch);
	static const char *const cap[][2] = {{"seller_id", "curates_offers"}, {NULL, NULL}};
	expect_errors(p.port, "POST", "/v1/curated-shops", NULL, body, cap);
	struct cast c;
	cast(p.port, &c);
	tc_expect_code(p.port, "POST", "/v1/curated-shops", c.ko, "{}", 403, "action_not_allowed");
	wm_proc_cleanup(&p);
}

WM_TEST(shop, channel_must_be_an_open_channel_of_the_seller)
{
	struct wm_proc p;
	tc_start(&p);
	struct cast c;
	cast(p.port, &c);
	char mine[64], theirs[64], closed[64], body[256], id[64], path[128];
	channel(p.port, c.k1, "Mine", mine);
	channel(p.port, c.k2, "Theirs", theirs);
	channel(p.port, c.k1, "Old", closed);
	snprintf(path, sizeof(path), "/v1/sales-channels/%s", closed);
	json_decref(tc_expect(p.port, "PATCH", path, c.k1, "{\"status\":\"closed\"}", 200));
	static const char *const other[][2] = {{"channel_id", "seller_channel"}, {NULL, NULL}};
	static const char *const shut[][2] = {{"channel_id", "open"}, {NULL, NULL}};
	snprintf(body, sizeof(body), "{\"name\":\"S\",\"markup\":5,\"channel_id\":\"%s\"}", theirs);
	expect_errors(p.port, "POST", "/v1/curated-shops", c.k1, body, other);
	expect_errors(p.port, "POST", "/v1/curated-shops", c.k1, "{\"name\":\"S\",\"markup\":5,\"channel_id\":\"chn_none\"}",
		      other);
	snprintf(body, sizeof(body), "{\"name\":\"S\",\"markup\":5,\"channel_id\":\"%s\"}", closed);
	expect_errors(p.port, "POST", "/v1/curated-shops", c.k1, body, shut);
	/* operators: the channel must be the named seller's */
	snprintf(body, sizeof(body), "{\"seller_id\":\"%s\",\"name\":\"S\",\"markup\":5,\"channel_id\":\"%s\"}", c.s1, theirs);
	expect_errors(p.port, "POST", "/v1/curated-shops", NULL, body, other);
	snprintf(body, sizeof(body), "{\"name\":\"S\",\"markup\":5,\"channel_id\":\"%s\"}", mine);
	create(p.port, "/v1/curated-shops", c.k1, body, id);
	snprintf(path, sizeof(path), "/v1/curated-shops/%s", id);
	snprintf(body, sizeof(body), "{\"channel_id\":\"%s\"}", theirs);
	expect_errors(p.port, "PATCH", path, c.k1, body, other);
	/* another seller's shop: 404 on read and write */
	tc_expect_code(p.port, "GET", path, c.k2, NULL, 404, "not_found");
	tc_expect_code(p.port, "PATCH", path, c.k2, "{\"markup\":1}", 404, "not_found");
	cr_assert_eq(list_count(p.port, "/v1/curated-shops", c.k2), 0);
	cr_assert_eq(list_count(p.port, "/v1/curated-shops", c.k1), 1);
	json_decref(tc_expect(p.port, "PATCH", path, c.k1, "{\"status\":\"closed\"}", 200));
	tc_expect_code(p.port, "PATCH", path, c.k1, "{\"markup\":1}", 409, "shop_closed");
	wm_proc_cleanup(&p);
}

/* ---- publishable keys ------------------------------------------------------------ */

WM_TEST(channel, publishable_keys_are_scoped_to_an_own_open_channel)
{
	struct wm_proc p;
	tc_start(&p);
	struct cast c;
	cast(p.port, &c);
	char mine[64], other_mine[64], theirs[64], closed[64], extra[160], body[320], path[128];
	channel(p.port, c.k1, "Store", mine);
	channel(p.port, c.k1, "POS", other_mine);
	channel(p.port, c.k2, "Theirs", theirs);
	channel(p.port, c.k1, "Gone", closed);
	snprintf(path, sizeof(path), "/v1/sales-channels/%s", closed);
	json_decref(tc_expect(p.port, "PATCH", path, c.k1, "{\"status\":\"closed\"}", 200));
	static const char *const bad[][2] = {{"channel_id", "sales_channel"}, {NULL, NULL}};
	const char *refused[] = {theirs, closed, "chn_unknown"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(body, sizeof(body), "{\"entity_id\":\"%s\",\"kind\":\"publishable\",\"channel_id\":\"%s\"}", c.s1,
			 refused[i]);
		expect_errors(p.port, "POST", "/api/keys", NULL, body, bad);
	}
	static const char *const secret[][2] = {{"channel_id", "publishable"}, {NULL, NULL}};
	snprintf(body, sizeof(body), "{\"entity_id\":\"%s\",\"channel_id\":\"%s\"}", c.s1, mine);
	expect_errors(p.port, "POST", "/api/keys", NULL, body, secret);
	/* the seller's own key mints it too */
	snprintf(body, sizeof(body), "{\"kind\":\"publishable\",\"channel_id\":\"%s\"}", mine);
	json_decref(tc_expect(p.port, "POST", "/api/keys", c.k1, body, 201));
	char pk[128], shop_on[64], shop_off[64];
	snprintf(extra, sizeof(extra), "\"kind\":\"publishable\",\"channel_id\":\"%s\"", mine);
	key_for(p.port, c.s1, extra, pk);
	/* the storefront key sees its channel and the shops on it, nothing else */
	snprintf(body, sizeof(body), "{\"name\":\"On\",\"markup\":5,\"channel_id\":\"%s\"}", mine);
	create(p.port, "/v1/curated-shops", c.k1, body, shop_on);
	snprintf(body, sizeof(body), "{\"name\":\"Off\",\"markup\":5,\"channel_id\":\"%s\"}", other_mine);
	create(p.port, "/v1/curated-shops", c.k1, body, shop_off);
	json_t *j = tc_expect(p.port, "GET", "/v1/sales-channels", pk, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 1);
	cr_assert_str_eq(tc_jstr(json_array_get(json_object_get(j, "data"), 0), "id"), mine);
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/sales-channels/%s", other_mine);
	tc_expect_code(p.port, "GET", path, pk, NULL, 404, "not_found");
	snprintf(path, sizeof(path), "/v1/sales-channels/%s", mine);
	json_decref(tc_expect(p.port, "GET", path, pk, NULL, 200));
	cr_assert_eq(list_count(p.port, "/v1/curated-shops", pk), 1);
	snprintf(path, sizeof(path), "/v1/curated-shops/%s", shop_off);
	tc_expect_code(p.port, "GET", path, pk, NULL, 404, "not_found");
	/* and it writes nothing */
	tc_expect_code(p.port, "POST", "/v1/sales-channels", pk, "{\"name\":\"x\",\"kind\":\"pos_qr\"}", 403, "insufficient_scope");
	wm_proc_cleanup(&p);
}

/* The members of o, sorted, comma-joined into out (for golden field lists). */
static void member_names(json_t *o, char *out, size_t size)
{
	const char *keys[64];
	size_t n = 0;
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v)
	{
		if (n < 64)
			keys[n++] = k;
	}
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
			const char *t = keys[j];
			keys[j] = keys[j - 1];
			keys[j - 1] = t;
		}
	out[0] = 0;
	for (size_t i = 0; i < n; i++)
		snprintf(out + strlen(out), size - strlen(out), "%s%s", i ? "," : "", keys[i]);
}

/* A publishable key gets the storefront view: what a shop page shows, not
 * how the seller runs it (no location_ids, markup or seller_id); without a
 * channel it gets no channel or shop data at all (issue 22 item 5). */
WM_TEST(channel, publishable_keys_get_the_storefront_view_only)
{
	struct wm_proc p;
	tc_start(&p);
	struct cast c;
	cast(p.port, &c);
	char mine[64], shop[64], loc[64], pk[128], pk_none[128], extra[160], body[320], path[160], names[512];
	create(p.port, "/v1/stock-locations", c.ko,
	       "{\"location_type\":\"BONDED_WAREHOUSE\",\"name\":\"Cellar\",\"address\":{\"line1\":\"1 rue du Vin\","
	       "\"city\":\"Beaune\",\"postal_code\":\"21200\",\"country\":\"FR\"}}",
	       loc);
	snprintf(body, sizeof(body), "{\"name\":\"Store\",\"kind\":\"webshop_connect\",\"location_ids\":[\"%s\"]}", loc);
	create(p.port, "/v1/sales-channels", c.k1, body, mine);
	snprintf(body, sizeof(body), "{\"name\":\"Curated\",\"markup\":5,\"channel_id\":\"%s\"}", mine);
	create(p.port, "/v1/curated-shops", c.k1, body, shop);
	snprintf(extra, sizeof(extra), "\"kind\":\"publishable\",\"channel_id\":\"%s\"", mine);
	key_for(p.port, c.s1, extra, pk);
	key_for(p.port, c.s1, "\"kind\":\"publishable\"", pk_none);

	/* the seller's own secret key still sees everything it stored */
	snprintf(path, sizeof(path), "/v1/sales-channels/%s", mine);
	json_t *j = tc_expect(p.port, "GET", path, c.k1, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "location_ids")), 1);
	json_decref(j);

	/* golden lists, from the storefront rule: identity, name, kind, market, status, live listings */
	static const char channel_view[] = "country,currency,id,kind,listings,listings_truncated,name,status";
	static const char shop_view[] = "channel_id,id,layout,name,status";
	j = tc_expect(p.port, "GET", path, pk, NULL, 200);
	member_names(j, names, sizeof(names));
	cr_assert_str_eq(names, channel_view);
	json_decref(j);
	j = tc_expect(p.port, "GET", "/v1/sales-channels", pk, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 1);
	member_names(json_array_get(json_object_get(j, "data"), 0), names, sizeof(names));
	cr_assert_str_eq(names, channel_view);
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/curated-shops/%s", shop);
	j = tc_expect(p.port, "GET", path, pk, NULL, 200);
	member_names(j, names, sizeof(names));
	cr_assert_str_eq(names, shop_view);
	json_decref(j);
	j = tc_expect(p.port, "GET", "/v1/curated-shops", pk, NULL, 200);
	member_names(json_array_get(json_object_get(j, "data"), 0), names, sizeof(names));
	cr_assert_str_eq(names, shop_view);
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/sales-channels/%s/availability", mine);
	j = tc_expect(p.port, "GET", path, pk, NULL, 200);
	char *dump = json_dumps(j, JSON_COMPACT);
	cr_assert_null(strstr(dump, "originator_id"), "%s", dump);
	free(dump);
	json_decref(j);

	/* no channel: no channel or shop data, its own channel answers as unknown */
	cr_assert_eq(list_count(p.port, "/v1/sales-channels", pk_none), 0);
	cr_assert_eq(list_count(p.port, "/v1/curated-shops", pk_none), 0);
	snprintf(path, sizeof(path), "/v1/sales-channels/%s", mine);
	tc_expect_code(p.port, "GET", path, pk_none, NULL, 404, "not_found");
	snprintf(path, sizeof(path), "/v1/curated-shops/%s", shop);
	tc_expect_code(p.port, "GET", path, pk_none, NULL, 404, "not_found");
	wm_proc_cleanup(&p);
}

/* ---- durability ------------------------------------------------------------------ */

WM_TEST(channel, survives_kill9_and_restart_with_indexes)
{
	struct wm_proc p;
	tc_start(&p);
	struct cast c;
	cast(p.port, &c);
	char ch[64], shop[64], body[256], path[128];
	channel(p.port, c.k1, "Durable", ch);
	snprintf(body, sizeof(body), "{\"name\":\"Kept\",\"markup\":33.33,\"layout\":\"list\",\"channel_id\":\"%s\"}", ch);
	create(p.port, "/v1/curated-shops", c.k1, body, shop);
	snprintf(path, sizeof(path), "/v1/sales-channels/%s", ch);
	json_t *before = tc_expect(p.port, "GET", path, c.k1, NULL, 200);
	for (int round = 0; round < 2; round++) {
		if (round == 1) {
			json_decref(tc_expect(p.port, "POST", "/v1/admin/snapshots", NULL, NULL, 202));
			usleep(500000);
		}
		wm_kill9(&p);
		cr_assert_eq(wm_start(&p, NULL, NULL), 0);
		json_t *after = tc_expect(p.port, "GET", path, c.k1, NULL, 200);
		cr_assert(json_equal(before, after), "the channel is rebuilt from the log");
		json_decref(after);
		char sp[128];
		snprintf(sp, sizeof(sp), "/v1/curated-shops/%s", shop);
		char h[200];
		snprintf(h, sizeof(h), "Authorization: Bearer %s\r\n", c.k1);
		struct http_resp r;
		cr_assert_eq(http_do(p.port, "GET", sp, h, NULL, &r), 0);
		cr_assert_eq(r.status, 200, "%s", r.body);
		cr_assert(strstr(r.body, "\"markup\":33.33,"), "the exact decimal: %s", r.body);
		http_resp_free(&r);
		/* the name and seller indexes are rebuilt too */
		tc_expect_code(p.port, "POST", "/v1/sales-channels", c.k1, "{\"name\":\"DURABLE\",\"kind\":\"pos_qr\"}", 409,
			    "channel_name_taken");
		cr_assert_eq(list_count(p.port, "/v1/sales-channels", c.k1), 1);
		cr_assert_eq(list_count(p.port, "/v1/curated-shops", c.k1), 1);
		cr_assert_eq(list_count(p.port, "/v1/sales-channels", c.k2), 0);
	}
	json_decref(before);
	wm_proc_cleanup(&p);
}
