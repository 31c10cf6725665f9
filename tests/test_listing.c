/*
 * test_listing.c -- listings over HTTP against real wm-shard processes:
 * every field rule (listed at once) and bound at/past its edge, who may
 * list (originator-only and capability 403s, another seller's listing
 * 404), offers the permission evaluator refuses (422 with its code), a
 * seller's own offer, shelf price floor and the curated-shop markup priced
 * exactly, uniqueness, the status table, events, joined reads that follow
 * the offer, publishable keys scoped to their channel's live listings (and
 * the offers and wines listed there), an adversarial seller paging with
 * the widest filters, and a kill -9 + restart.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/api_client.h"
#include "tests/harness.h"
#include "tests/wm_test.h"

/* engine/supply/listing.h cannot be included beside jansson: its bounds, restated */
#define LISTING_MAX_NOTES 2000
#define LISTING_MAX_PAIRING 500
#define LISTING_NOTES_PAST (LISTING_MAX_NOTES + 1) /* one byte past the bound */

/* ---- helpers ------------------------------------------------------------ */

/* The raw body of one request as `key` (NULL: operator), status asserted. */
static void raw(int port, const char *method, const char *path, const char *key, const char *body, int want,
		char *out, size_t size)
{
	char h[256] = "";
	if (key)
		snprintf(h, sizeof(h), "Authorization: Bearer %s\r\n", key);
	struct http_resp r;
	cr_assert_eq(http_do(port, method, path, key ? h : NULL, body, &r), 0, "%s %s: no response", method, path);
	cr_assert_eq(r.status, want, "%s %s %s: got %d, want %d: %s", method, path, body ? body : "", r.status, want,
		     r.body);
	snprintf(out, size, "%.*s", (int)r.body_len, r.body);
	http_resp_free(&r);
}

static json_t *expect(int port, const char *method, const char *path, const char *key, const char *body, int want)
{
	static char b[1 << 20];
	raw(port, method, path, key, body, want, b, sizeof(b));
	json_error_t e;
	json_t *j = json_loads(b, 0, &e);
	cr_assert_not_null(j, "%s %s: body is not JSON: %s", method, path, b);
	return j;
}

static void expect_code(int port, const char *method, const char *path, const char *key, const char *body, int want,
			const char *code)
{
	json_t *j = expect(port, method, path, key, body, want);
	const char *got = tc_jstr(j, "code");
	cr_assert(got && !strcmp(got, code), "%s %s: code %s, want %s", method, path, got ? got : "(none)", code);
	json_decref(j);
}

/* A 422 listing exactly these (field, rule) pairs (NULL-terminated). */
static void expect_errors(int port, const char *method, const char *path, const char *key, const char *body,
			  const char *const (*want)[2])
{
	json_t *j = expect(port, method, path, key, body, 422);
	size_t n = 0;
	for (; want[n][0]; n++)
		cr_assert(tc_lists_error(j, want[n][0], want[n][1]), "%s: %s/%s not listed: %s", body, want[n][0], want[n][1],
			  json_dumps(j, JSON_COMPACT));
	cr_assert_eq(json_array_size(json_object_get(j, "errors")), n, "%s: %s", body, json_dumps(j, JSON_COMPACT));
	json_decref(j);
}

static void key_for(int port, const char *entity, const char *extra, char *out)
{
	char body[256];
	snprintf(body, sizeof(body), "{\"entity_id\":\"%s\"%s%s}", entity, extra ? "," : "", extra ? extra : "");
	json_t *j = expect(port, "POST", "/api/keys", NULL, body, 201);
	snprintf(out, 128, "%s", tc_jstr(j, "key"));
	json_decref(j);
}

static void create(int port, const char *path, const char *key, const char *body, char *out)
{
	json_t *j = expect(port, "POST", path, key, body, 201);
	snprintf(out, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
}

static void pub_wine(int port, const char *title, char *out)
{
	char body[1400], prd[64], path[128];
	snprintf(body, sizeof(body), "{\"name\":\"Domaine %s\"}", title);
	create(port, "/v1/producers", NULL, body, prd);
	snprintf(body, sizeof(body),
		 "{\"title\":\"%s\",\"producer\":\"%s\",\"vintage\":2020,\"abv\":13,\"volume_in_liters\":0.75,"
		 "\"colour\":\"red\",\"category\":\"wine\",\"country\":\"FR\",\"region\":\"Bourgogne\","
		 "\"bottler\":{\"name\":\"Domaine Test\",\"address\":\"21000 Dijon, France\"},\"lot_number\":\"L2020-1\","
		 "\"allergens\":[\"sulphites\"],\"ingredients\":\"grapes, preservative: sulphites\","
		 "\"energy_kj_per_100ml\":297,\"energy_kcal_per_100ml\":71}",
		 title, prd);
	create(port, "/v1/wines", NULL, body, out);
	snprintf(path, sizeof(path), "/v1/wines/%s/publish", out);
	json_decref(expect(port, "POST", path, NULL, NULL, 200));
}

/* An offer of `key` on wine with a price and extra members; id into out. */
static void offer(int port, const char *key, const char *wine, const char *price, const char *members, char *out)
{
	char body[1024];
	snprintf(body, sizeof(body),
		 "{\"wine_id\":\"%s\",\"seller_price\":%s,\"currency\":\"EUR\",\"qty_available\":60,\"incoterm\":\"FCA\"%s%s}",
		 wine, price, members ? "," : "", members ? members : "");
	create(port, "/v1/offers", key, body, out);
}

#define SHARED "\"status\":\"active\",\"network_shareable\":true"

static void channel(int port, const char *key, const char *name, char *out)
{
	char body[256];
	snprintf(body, sizeof(body), "{\"name\":\"%s\",\"kind\":\"webshop_connect\"}", name);
	create(port, "/v1/sales-channels", key, body, out);
}

/* POST a listing; id into out when created. */
static json_t *listing(int port, const char *key, const char *offer_id, const char *chn, const char *members, int want,
		       char *out)
{
	char body[4096];
	snprintf(body, sizeof(body), "{\"offer_id\":\"%s\",\"channel_id\":\"%s\"%s%s}", offer_id, chn,
		 members && members[0] ? "," : "", members ? members : "");
	json_t *j = expect(port, "POST", "/v1/listings", key, body, want);
	if (out)
		snprintf(out, 64, "%s", tc_jstr(j, "id") ? tc_jstr(j, "id") : "");
	return j;
}

static size_t list_count(int port, const char *path, const char *key)
{
	json_t *j = expect(port, "GET", path, key, NULL, 200);
	size_t n = json_array_size(json_object_get(j, "data"));
	json_decref(j);
	return n;
}

static size_t event_count(int port, const char *type, const char *key)
{
	char path[128];
	snprintf(path, sizeof(path), "/v1/events?type=%s&page_size=200", type);
	return list_count(port, path, key);
}

/* Two originators (O1 FR also a seller, O2 IT), sellers S1 DE and S2 US, a
 * seller without sets_shelf_price, keys, four published wines, one channel
 * per seller. */
struct world {
	struct wm_proc p;
	char o1[64], o2[64], s1[64], s2[64], nop[64];
	char ko1[128], ko2[128], ks1[128], ks2[128], knop[128];
	char w[4][64];
	char c1[64], c2[64], co1[64];
};

static void world(struct world *x)
{
	tc_start(&x->p);
	int port = x->p.port;
	tc_partner_live(port, "Orig One", "FR", "[\"originator\",\"seller\"]", "\"originator_type\":\"stock\"", x->o1);
	tc_partner_live(port, "Orig Two", "IT", "[\"originator\"]", "\"originator_type\":\"collector\"", x->o2);
	tc_partner_live(port, "Seller One", "DE", "[\"seller\"]", NULL, x->s1);
	tc_partner_live(port, "Seller Two", "US", "[\"seller\"]", NULL, x->s2);
	tc_partner_live(port, "No Shelf", "DE", "[\"seller\"]", "\"capabilities\":{\"sets_shelf_price\":false}", x->nop);
	key_for(port, x->o1, NULL, x->ko1);
	key_for(port, x->o2, NULL, x->ko2);
	key_for(port, x->s1, NULL, x->ks1);
	key_for(port, x->s2, NULL, x->ks2);
	key_for(port, x->nop, NULL, x->knop);
	static const char *const titles[] = {"Alpha Rouge", "Beta Blanc", "Gamma Rose", "Delta Brut"};
	for (int i = 0; i < 4; i++)
		pub_wine(port, titles[i], x->w[i]);
	channel(port, x->ks1, "S1 Web", x->c1);
	channel(port, x->ks2, "S2 Web", x->c2);
	channel(port, x->ko1, "O1 Shop", x->co1);
}

/* ---- create, document, joins, events ---------------------------------------- */

WM_TEST(listing, create_document_joins_margin_and_events)
{
	struct world x;
	world(&x);
	int port = x.p.port;
	char of[64], id[64], path[128], b[8192];
	offer(port, x.ko2, x.w[0], "12.34", SHARED, of);
	json_t *j = listing(port, x.ks1, of, x.c1,
			    "\"shelf_price\":15,\"currency\":\"EUR\",\"curation\":{\"featured\":true,\"notes\":\"Cellar "
			    "pick\",\"pairing\":\"Lamb\"}",
			    201, id);
	cr_assert(!strncmp(id, "lst_", 4), "%s", id);
	cr_assert_str_eq(tc_jstr(j, "listing_id"), id);
	cr_assert_str_eq(tc_jstr(j, "seller_id"), x.s1, "defaults to the caller");
	cr_assert_str_eq(tc_jstr(j, "offer_id"), of);
	cr_assert_str_eq(tc_jstr(j, "channel_id"), x.c1);
	cr_assert_str_eq(tc_jstr(j, "currency"), "EUR");
	cr_assert_str_eq(tc_jstr(j, "status"), "draft", "default status");
	json_t *cu = json_object_get(j, "curation");
	cr_assert(json_is_true(json_object_get(cu, "featured")));
	cr_assert_str_eq(tc_jstr(cu, "notes"), "Cellar pick");
	cr_assert_str_eq(tc_jstr(cu, "pairing"), "Lamb");
	json_t *jo = json_object_get(j, "offer"), *jw = json_object_get(j, "wine");
	cr_assert_str_eq(tc_jstr(jo, "offer_id"), of);
	cr_assert_str_eq(tc_jstr(jo, "condition"), "new");
	cr_assert_str_eq(tc_jstr(jo, "status"), "active");
	cr_assert_eq(json_integer_value(json_object_get(jo, "qty_available")), 60);
	cr_assert_str_eq(tc_jstr(jw, "id"), x.w[0]);
	cr_assert_str_eq(tc_jstr(jw, "title"), "Alpha Rouge");
	cr_assert_eq(json_integer_value(json_object_get(jw, "vintage")), 2020);
	cr_assert_str_eq(tc_jstr(json_object_get(jw, "producer"), "name"), "Domaine Alpha Rouge");
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/listings/%s", id);
	raw(port, "GET", path, x.ks1, NULL, 200, b, sizeof(b));
	cr_assert(strstr(b, "\"shelf_price\":15.00,") && strstr(b, "\"seller_price\":12.34,") &&
		      strstr(b, "\"margin\":2.66"),
		  "exact money and margin: %s", b);
	cr_assert(strstr(b, "\"volume_in_liters\":0.75"), "%s", b);
	cr_assert_eq(event_count(port, "listing.created", x.ks1), 1);
	cr_assert_eq(event_count(port, "listing.created", x.ks2), 0, "scoped to the seller");
	/* the stored document restates nothing: a later offer price shows in the next read */
	char opath[128];
	snprintf(opath, sizeof(opath), "/v1/offers/%s", of);
	json_decref(expect(port, "PATCH", opath, x.ko2, "{\"seller_price\":13.1,\"qty_available\":7}", 200));
	raw(port, "GET", path, x.ks1, NULL, 200, b, sizeof(b));
	cr_assert(strstr(b, "\"seller_price\":13.10,") && strstr(b, "\"margin\":1.90") &&
		      strstr(b, "\"qty_available\":7"),
		  "joined from the current offer: %s", b);
	cr_assert(strstr(b, "\"shelf_price\":15.00,"), "%s", b);
	/* a price change is listing.price_changed; another change listing.updated */
	raw(port, "PATCH", path, x.ks1, "{\"shelf_price\":16.5}", 200, b, sizeof(b));
	cr_assert(strstr(b, "\"shelf_price\":16.50,") && strstr(b, "\"margin\":3.40"), "%s", b);
	cr_assert_eq(event_count(port, "listing.price_changed", x.ks1), 1);
	json_decref(expect(port, "PATCH", path, x.ks1, "{\"curation\":{\"featured\":false}}", 200));
	cr_assert_eq(event_count(port, "listing.price_changed", x.ks1), 1);
	cr_assert_eq(event_count(port, "listing.updated", x.ks1), 1);
	/* operators list for a named seller */
	char of2[64], body[256];
	offer(port, x.ko2, x.w[1], "10", SHARED, of2);
	snprintf(body, sizeof(body), "{\"seller_id\":\"%s\",\"offer_id\":\"%s\",\"channel_id\":\"%s\",\"shelf_price\":11}",
		 x.s1, of2, x.c1);
	json_decref(expect(port, "POST", "/v1/listings", NULL, body, 201));
	cr_assert_eq(list_count(port, "/v1/listings", x.ks1), 2);
	wm_proc_cleanup(&x.p);
}

WM_TEST(listing, every_failing_field_is_listed_with_its_rule)
{
	struct world x;
	world(&x);
	int port = x.p.port;
	char of[64], notes[2100], body[4096];
	offer(port, x.ko2, x.w[0], "12.34", SHARED, of);
	static const char *const all[][2] = {
		{"colour", "unknown_field"},	       {"id", "read_only"},	      {"status", "enum"},
		{"shelf_price", "type"},      {"curation.notes", "max_length"}, {"curation.extra", "unknown_field"},
		{"channel_id", "required"},   {NULL, NULL}};
	memset(notes, 'n', LISTING_NOTES_PAST);
	notes[LISTING_NOTES_PAST] = 0;
	snprintf(body, sizeof(body),
		 "{\"offer_id\":\"%s\",\"colour\":\"red\",\"id\":\"lst_x\",\"status\":\"gone\",\"shelf_price\":\"15\","
		 "\"curation\":{\"notes\":\"%s\",\"extra\":1}}",
		 of, notes);
	expect_errors(port, "POST", "/v1/listings", x.ks1, body, all);
	/* bounds at their edge pass */
	notes[LISTING_NOTES_PAST - 1] = 0;
	char m[2400];
	snprintf(m, sizeof(m), "\"shelf_price\":12.34,\"curation\":{\"notes\":\"%s\"}", notes);
	json_decref(listing(port, x.ks1, of, x.c1, m, 201, NULL));
	/* pairing one past its bound; a price with too many decimals; zero */
	char of2[64], pairing[600];
	offer(port, x.ko2, x.w[1], "5", SHARED, of2);
	memset(pairing, 'p', LISTING_MAX_PAIRING + 1);
	pairing[LISTING_MAX_PAIRING + 1] = 0;
	static const char *const p2[][2] = {{"curation.pairing", "max_length"}, {"shelf_price", "precision"}, {NULL, NULL}};
	snprintf(m, sizeof(m), "\"shelf_price\":12.345,\"curation\":{\"pairing\":\"%s\"}", pairing);
	snprintf(body, sizeof(body), "{\"offer_id\":\"%s\",\"channel_id\":\"%s\",%s}", of2, x.c1, m);
	expect_errors(port, "POST", "/v1/listings", x.ks1, body, p2);
	static const char *const zero[][2] = {{"shelf_price", "range"}, {NULL, NULL}};
	snprintf(body, sizeof(body), "{\"offer_id\":\"%s\",\"channel_id\":\"%s\",\"shelf_price\":0}", of2, x.c1);
	expect_errors(port, "POST", "/v1/listings", x.ks1, body, zero);
	static const char *const live_bad[][2] = {{"status", "initial"}, {"offer_id", "exists"}, {NULL, NULL}};
	snprintf(body, sizeof(body), "{\"offer_id\":\"ofr_nope\",\"channel_id\":\"%s\",\"status\":\"delisted\"}", x.c1);
	expect_errors(port, "POST", "/v1/listings", x.ks1, body, live_bad);
	/* a channel of another seller, a closed one */
	static const char *const chan[][2] = {{"channel_id", "seller_channel"}, {NULL, NULL}};
	snprintf(body, sizeof(body), "{\"offer_id\":\"%s\",\"channel_id\":\"%s\",\"shelf_price\":6}", of2, x.c2);
	expect_errors(port, "POST", "/v1/listings", x.ks1, body, chan);
	char closed[64], path[128];
	channel(port, x.ks1, "Closed", closed);
	snprintf(path, sizeof(path), "/v1/sales-channels/%s", closed);
	json_decref(expect(port, "PATCH", path, x.ks1, "{\"status\":\"closed\"}", 200));
	static const char *const shut[][2] = {{"channel_id", "open"}, {NULL, NULL}};
	snprintf(body, sizeof(body), "{\"offer_id\":\"%s\",\"channel_id\":\"%s\",\"shelf_price\":6}", of2, closed);
	expect_errors(port, "POST", "/v1/listings", x.ks1, body, shut);
	wm_proc_cleanup(&x.p);
}

/* ---- who may list ------------------------------------------------------------------ */

WM_TEST(listing, who_may_list_and_whose_listings)
{
	struct world x;
	world(&x);
	int port = x.p.port;
	char of[64], id[64], path[128], body[256], nch[64];
	offer(port, x.ko2, x.w[0], "10", SHARED, of);
	/* originator-only: the policy refuses the action */
	snprintf(body, sizeof(body), "{\"offer_id\":\"%s\",\"channel_id\":\"%s\",\"shelf_price\":11}", of, x.c1);
	expect_code(port, "POST", "/v1/listings", x.ko2, body, 403, "action_not_allowed");
	/* a seller without sets_shelf_price */
	channel(port, x.knop, "NoShelf", nch);
	snprintf(body, sizeof(body), "{\"offer_id\":\"%s\",\"channel_id\":\"%s\",\"shelf_price\":11}", of, nch);
	expect_code(port, "POST", "/v1/listings", x.knop, body, 403, "capability_missing");
	/* a partner lists for itself only */
	static const char *const own[][2] = {{"seller_id", "own"}, {NULL, NULL}};
	snprintf(body, sizeof(body), "{\"seller_id\":\"%s\",\"offer_id\":\"%s\",\"channel_id\":\"%s\",\"shelf_price\":11}",
		 x.s2, of, x.c2);
	expect_errors(port, "POST", "/v1/listings", x.ks1, body, own);
	/* operators name a seller that can list */
	static const char *const opsel[][2] = {{"seller_id", "seller"}, {"channel_id", "seller_channel"}, {NULL, NULL}};
	snprintf(body, sizeof(body), "{\"seller_id\":\"%s\",\"offer_id\":\"%s\",\"channel_id\":\"%s\",\"shelf_price\":11}",
		 x.nop, of, x.c1);
	expect_errors(port, "POST", "/v1/listings", NULL, body, opsel);
	static const char *const opreq[][2] = {{"seller_id", "required"}, {NULL, NULL}};
	snprintf(body, sizeof(body), "{\"offer_id\":\"%s\",\"channel_id\":\"%s\",\"shelf_price\":11}", of, x.c1);
	expect_errors(port, "POST", "/v1/listings", NULL, body, opreq);
	/* another seller's listing: 404 on read and write, even when live */
	json_decref(listing(port, x.ks1, of, x.c1, "\"shelf_price\":11", 201, id));
	snprintf(path, sizeof(path), "/v1/listings/%s", id);
	expect_code(port, "GET", path, x.ks2, NULL, 404, "not_found");
	expect_code(port, "PATCH", path, x.ks2, "{\"shelf_price\":12}", 404, "not_found");
	json_decref(expect(port, "PATCH", path, x.ks1, "{\"status\":\"live\"}", 200));
	json_decref(expect(port, "GET", path, x.ks2, NULL, 200)); /* live, the offer open to S2: visible */
	expect_code(port, "PATCH", path, x.ks2, "{\"shelf_price\":12}", 404, "not_found");
	expect_code(port, "GET", "/v1/listings/lst_unknown", x.ks1, NULL, 404, "not_found");
	/* identity members are immutable */
	static const char *const imm[][2] = {{"offer_id", "immutable"}, {"listing_id", "read_only"}, {NULL, NULL}};
	expect_errors(port, "PATCH", path, x.ks1, "{\"offer_id\":\"ofr_x\",\"listing_id\":\"lst_y\"}", imm);
	wm_proc_cleanup(&x.p);
}

WM_TEST(listing, offers_the_evaluator_refuses_and_own_offers)
{
	struct world x;
	world(&x);
	int port = x.p.port;
	char blocked[64], draft[64], closed_sh[64], own[64], body[256];
	char named2[64];
	snprintf(body, sizeof(body), SHARED ",\"permissions\":{\"named_sellers\":[\"%s\"]}", x.s2);
	offer(port, x.ko2, x.w[1], "10", body, named2);
	offer(port, x.ko2, x.w[2], "10", SHARED ",\"permissions\":{\"blocked_countries\":[\"DE\"]}", blocked);
	offer(port, x.ko2, x.w[3], "10", "\"network_shareable\":true", draft);
	offer(port, x.ko2, x.w[3], "10", "\"condition\":\"bin_end\",\"status\":\"active\"", closed_sh);
	/* Offers S1 may not see answer exactly as an unknown id (no existence
	 * oracle: the rule the evaluator would give is not revealed). */
	static char unknown[4096], hidden[4096];
	snprintf(body, sizeof(body), "{\"offer_id\":\"%s\",\"channel_id\":\"%s\",\"shelf_price\":11}",
		 "off_00000000000000000000", x.c1);
	raw(port, "POST", "/v1/listings", x.ks1, body, 422, unknown, sizeof(unknown));
	cr_assert(strstr(unknown, "\"rule\":\"exists\""), "%s", unknown);
	const char *const hidden_offers[] = {named2, blocked, draft, closed_sh};
	for (size_t i = 0; i < sizeof(hidden_offers) / sizeof(hidden_offers[0]); i++) {
		snprintf(body, sizeof(body), "{\"offer_id\":\"%s\",\"channel_id\":\"%s\",\"shelf_price\":11}",
			 hidden_offers[i], x.c1);
		raw(port, "POST", "/v1/listings", x.ks1, body, 422, hidden, sizeof(hidden));
		cr_assert_str_eq(hidden, unknown, "offer %s is told apart from an unknown id", hidden_offers[i]);
	}
	/* the platform sees every offer: listing for S1, it gets the evaluator's rule */
	const struct {
		const char *offer;
		const char *rule;
	} cases[] = {{named2, "seller_not_named"},
		     {blocked, "seller_country_blocked"},
		     {draft, "not_sellable"},
		     {closed_sh, "not_network_shareable"}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *const want[][2] = {{"offer_id", cases[i].rule}, {NULL, NULL}};
		snprintf(body, sizeof(body),
			 "{\"offer_id\":\"%s\",\"channel_id\":\"%s\",\"seller_id\":\"%s\",\"shelf_price\":11}",
			 cases[i].offer, x.c1, x.s1);
		expect_errors(port, "POST", "/v1/listings", NULL, body, want);
	}
	/* S2 is named: allowed */
	json_decref(listing(port, x.ks2, named2, x.c2, "\"shelf_price\":11", 201, NULL));
	/* a seller that is also the originator lists its own unshared offer */
	offer(port, x.ko1, x.w[0], "20", "\"status\":\"active\"", own);
	json_decref(listing(port, x.ko1, own, x.co1, "\"shelf_price\":20,\"status\":\"live\"", 201, NULL));
	/* others cannot, and cannot tell it from an unknown offer */
	snprintf(body, sizeof(body), "{\"offer_id\":\"%s\",\"channel_id\":\"%s\",\"shelf_price\":11}", own, x.c1);
	raw(port, "POST", "/v1/listings", x.ks1, body, 422, hidden, sizeof(hidden));
	cr_assert_str_eq(hidden, unknown);
	wm_proc_cleanup(&x.p);
}

/* ---- prices ------------------------------------------------------------------------ */

WM_TEST(listing, shelf_price_floor_currency_and_markup_exact)
{
	struct world x;
	world(&x);
	int port = x.p.port;
	char of[64], body[512], b[8192], shop[64], id[64];
	offer(port, x.ko2, x.w[0], "12.34", SHARED, of);
	static const char *const below[][2] = {{"shelf_price", "below_offer_price"}, {NULL, NULL}};
	snprintf(body, sizeof(body), "{\"offer_id\":\"%s\",\"channel_id\":\"%s\",\"shelf_price\":12.33}", of, x.c1);
	expect_errors(port, "POST", "/v1/listings", x.ks1, body, below);
	static const char *const fx[][2] = {{"currency", "fx_unavailable"}, {NULL, NULL}};
	snprintf(body, sizeof(body), "{\"offer_id\":\"%s\",\"channel_id\":\"%s\",\"shelf_price\":20,\"currency\":\"USD\"}",
		 of, x.c1);
	expect_errors(port, "POST", "/v1/listings", x.ks1, body, fx);
	static const char *const req[][2] = {{"shelf_price", "required"}, {NULL, NULL}};
	snprintf(body, sizeof(body), "{\"offer_id\":\"%s\",\"channel_id\":\"%s\"}", of, x.c1);
	expect_errors(port, "POST", "/v1/listings", x.ks1, body, req);
	/* equal to the offer's price: allowed (margin 0) -- the floor's edge */
	char of0[64];
	offer(port, x.ko2, x.w[1], "12.34", SHARED, of0);
	snprintf(body, sizeof(body), "{\"offer_id\":\"%s\",\"channel_id\":\"%s\",\"shelf_price\":12.34}", of0, x.c1);
	raw(port, "POST", "/v1/listings", x.ks1, body, 201, b, sizeof(b));
	cr_assert(strstr(b, "\"margin\":0.00"), "%s", b);
	/* a curated shop with a 25.5 % markup prices a listing without one */
	snprintf(body, sizeof(body), "{\"name\":\"Picks\",\"markup\":25.5,\"channel_id\":\"%s\"}", x.c1);
	create(port, "/v1/curated-shops", x.ks1, body, shop);
	snprintf(body, sizeof(body), "{\"offer_id\":\"%s\",\"channel_id\":\"%s\"}", of, x.c1);
	raw(port, "POST", "/v1/listings", x.ks1, body, 201, b, sizeof(b));
	/* independently: 1234 cents x 1.255 = 1548.67 cents, half-up -> 1549 */
	long long cents = 1234, bp = 2550;
	long long want = (cents * (10000 + bp) * 10 / 10000 + 5) / 10;
	cr_assert_eq(want, 1549);
	char exp[64];
	snprintf(exp, sizeof(exp), "\"shelf_price\":%lld.%02lld,", want / 100, want % 100);
	cr_assert(strstr(b, exp), "want %s in %s", exp, b);
	cr_assert(strstr(b, "\"margin\":3.15"), "%s", b);
	json_t *j = json_loads(b, 0, NULL);
	snprintf(id, sizeof(id), "%s", tc_jstr(j, "id"));
	json_decref(j);
	/* a price change below the floor is refused; null cannot remove it */
	char path[128];
	snprintf(path, sizeof(path), "/v1/listings/%s", id);
	expect_errors(port, "PATCH", path, x.ks1, "{\"shelf_price\":1}", below);
	static const char *const rm[][2] = {{"shelf_price", "required"}, {NULL, NULL}};
	expect_errors(port, "PATCH", path, x.ks1, "{\"shelf_price\":null}", rm);
	/* an offer price rise above the shelf price: going live is refused */
	char opath[128];
	snprintf(opath, sizeof(opath), "/v1/offers/%s", of);
	json_decref(expect(port, "PATCH", opath, x.ko2, "{\"seller_price\":16}", 200));
	expect_errors(port, "PATCH", path, x.ks1, "{\"status\":\"live\"}", below);
	wm_proc_cleanup(&x.p);
}

/* ---- identity and status -------------------------------------------------------------- */

WM_TEST(listing, duplicate_is_409_and_status_table)
{
	struct world x;
	world(&x);
	int port = x.p.port;
	char of[64], id[64], path[128];
	offer(port, x.ko2, x.w[0], "10", SHARED, of);
	json_decref(listing(port, x.ks1, of, x.c1, "\"shelf_price\":11", 201, id));
	json_t *j = listing(port, x.ks1, of, x.c1, "\"shelf_price\":12", 409, NULL);
	cr_assert_str_eq(tc_jstr(j, "code"), "listing_exists");
	cr_assert(strstr(tc_jstr(j, "detail"), id), "names the holder: %s", tc_jstr(j, "detail"));
	json_decref(j);
	/* same offer on another channel of the seller: a different identity */
	char c1b[64];
	channel(port, x.ks1, "Second", c1b);
	json_decref(listing(port, x.ks1, of, c1b, "\"shelf_price\":11", 201, NULL));
	snprintf(path, sizeof(path), "/v1/listings/%s", id);
	static const struct {
		const char *to;
		int want;
	} moves[] = {{"live", 200},    {"draft", 409},	 {"delisted", 200}, {"draft", 409},
		     {"live", 200},    {"live", 200},	 {"delisted", 200}, {"delisted", 200}};
	for (size_t i = 0; i < sizeof(moves) / sizeof(moves[0]); i++) {
		char body[64];
		snprintf(body, sizeof(body), "{\"status\":\"%s\"}", moves[i].to);
		j = expect(port, "PATCH", path, x.ks1, body, moves[i].want);
		if (moves[i].want == 409)
			cr_assert_str_eq(tc_jstr(j, "code"), "invalid_status_transition");
		else
			cr_assert_str_eq(tc_jstr(j, "status"), moves[i].to);
		json_decref(j);
	}
	/* draft -> delisted directly */
	char of2[64], id2[64];
	offer(port, x.ko2, x.w[1], "10", SHARED, of2);
	json_decref(listing(port, x.ks1, of2, x.c1, "\"shelf_price\":11", 201, id2));
	snprintf(path, sizeof(path), "/v1/listings/%s", id2);
	json_decref(expect(port, "PATCH", path, x.ks1, "{\"status\":\"delisted\"}", 200));
	/* relisting re-checks the offer: withdrawn is not sellable */
	char opath[128];
	snprintf(opath, sizeof(opath), "/v1/offers/%s/withdraw", of2);
	json_decref(expect(port, "POST", opath, x.ko2, NULL, 200));
	static const char *const ns[][2] = {{"offer_id", "not_sellable"}, {NULL, NULL}};
	expect_errors(port, "PATCH", path, x.ks1, "{\"status\":\"live\"}", ns);
	cr_assert_eq(list_count(port, "/v1/listings?status=delisted", x.ks1), 2);
	cr_assert_eq(list_count(port, "/v1/listings?status=draft", x.ks1), 1);
	cr_assert_eq(list_count(port, "/v1/listings?status=live", x.ks1), 0);
	expect_code(port, "GET", "/v1/listings?status=gone", x.ks1, NULL, 400, "invalid_filter");
	wm_proc_cleanup(&x.p);
}

/* ---- publishable keys -------------------------------------------------------------------- */

static int data_has(json_t *j, const char *id)
{
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(j, "data"), i, e)
	{
		if (!strcmp(tc_jstr(e, "id"), id))
			return 1;
	}
	return 0;
}

WM_TEST(listing, publishable_key_sees_its_channels_live_listings_offers_and_wines)
{
	struct world x;
	world(&x);
	int port = x.p.port;
	char other[64], pk[128], pk_none[128], extra[160], ofs[3][64], ls[3][64], path[160];
	channel(port, x.ks1, "S1 POS", other);
	snprintf(extra, sizeof(extra), "\"kind\":\"publishable\",\"channel_id\":\"%s\"", x.c1);
	key_for(port, x.s1, extra, pk);
	key_for(port, x.s1, "\"kind\":\"publishable\"", pk_none);
	for (int i = 0; i < 3; i++)
		offer(port, x.ko2, x.w[i], "10", SHARED, ofs[i]);
	json_decref(listing(port, x.ks1, ofs[0], x.c1, "\"shelf_price\":11,\"status\":\"live\"", 201, ls[0]));
	json_decref(listing(port, x.ks1, ofs[1], x.c1, "\"shelf_price\":11", 201, ls[1])); /* draft */
	json_decref(listing(port, x.ks1, ofs[2], other, "\"shelf_price\":11,\"status\":\"live\"", 201, ls[2]));
	json_t *j = expect(port, "GET", "/v1/listings?page_size=200", pk, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 1);
	cr_assert(data_has(j, ls[0]));
	cr_assert(json_object_get(json_array_get(json_object_get(j, "data"), 0), "offer"), "joined in lists too");
	json_decref(j);
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "/v1/listings/%s", ls[i]);
		j = expect(port, "GET", path, pk, NULL, i == 0 ? 200 : 404);
		json_decref(j);
	}
	snprintf(path, sizeof(path), "/v1/listings?channel_id=%s", other);
	cr_assert_eq(list_count(port, path, pk), 0, "another channel: nothing");
	cr_assert_eq(list_count(port, "/v1/listings", pk_none), 0, "no channel: nothing");
	/* offers and wines: only those listed live on the channel */
	j = expect(port, "GET", "/v1/offers?page_size=200", pk, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 1);
	cr_assert(data_has(j, ofs[0]));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/offers/%s", ofs[1]);
	expect_code(port, "GET", path, pk, NULL, 404, "not_found");
	snprintf(path, sizeof(path), "/v1/offers/%s", ofs[0]);
	json_decref(expect(port, "GET", path, pk, NULL, 200));
	j = expect(port, "GET", "/v1/wines?page_size=200", pk, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 1);
	cr_assert(data_has(j, x.w[0]));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/wines/%s", x.w[2]);
	expect_code(port, "GET", path, pk, NULL, 404, "not_found");
	snprintf(path, sizeof(path), "/v1/wines/%s", x.w[0]);
	json_decref(expect(port, "GET", path, pk, NULL, 200));
	cr_assert_eq(list_count(port, "/v1/wines", pk_none), 0);
	cr_assert_eq(list_count(port, "/v1/offers", pk_none), 0);
	/* the channel document's listings[]: the storefront sees the live one, the seller both */
	snprintf(path, sizeof(path), "/v1/sales-channels/%s", x.c1);
	j = expect(port, "GET", path, pk, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "listings")), 1);
	cr_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "listings"), 0)), ls[0]);
	cr_assert(json_is_false(json_object_get(j, "listings_truncated")));
	json_decref(j);
	j = expect(port, "GET", path, x.ks1, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "listings")), 2);
	json_decref(j);
	/* delisting hides it from the storefront at once */
	snprintf(path, sizeof(path), "/v1/listings/%s", ls[0]);
	json_decref(expect(port, "PATCH", path, x.ks1, "{\"status\":\"delisted\"}", 200));
	cr_assert_eq(list_count(port, "/v1/listings", pk), 0);
	cr_assert_eq(list_count(port, "/v1/offers", pk), 0);
	cr_assert_eq(list_count(port, "/v1/wines", pk), 0);
	wm_proc_cleanup(&x.p);
}

/* ---- the adversarial seller --------------------------------------------------------------- */

/* Every id a key sees through path (which has a '?'), following the cursor. */
static size_t walk(int port, const char *key, const char *q, int ps, char ids[][64], size_t max)
{
	char path[512], cursor[400] = "";
	size_t n = 0;
	for (int pages = 0; pages < 1000; pages++) {
		snprintf(path, sizeof(path), "/v1/listings?page_size=%d%s%s%s", ps, q, cursor[0] ? "&cursor=" : "", cursor);
		json_t *j = expect(port, "GET", path, key, NULL, 200);
		size_t i;
		json_t *e;
		json_array_foreach(json_object_get(j, "data"), i, e)
		{
			cr_assert_lt(n, max);
			snprintf(ids[n], 64, "%s", tc_jstr(e, "id"));
			cr_assert(n == 0 || strcmp(ids[n - 1], ids[n]) < 0, "in order, once");
			n++;
		}
		cr_assert_leq(json_array_size(json_object_get(j, "data")), (size_t)ps);
		const char *nc = tc_jstr(j, "next_cursor");
		if (!nc) {
			json_decref(j);
			return n;
		}
		snprintf(cursor, sizeof(cursor), "%s", nc);
		json_decref(j);
	}
	cr_assert_fail("too many pages");
	return n;
}

WM_TEST(listing, adversarial_seller_pages_exactly_what_it_may_see)
{
	struct world x;
	world(&x);
	int port = x.p.port;
	/* S1 lists 6 offers on its channel: live/draft x open / named-S1-only / blocked-US */
	static const char *const perms[] = {"", ",\"permissions\":{\"named_sellers\":[\"%s\"]}",
					    ",\"permissions\":{\"blocked_countries\":[\"US\"]}"};
	char ofs[6][64], ls[6][64], members[256], fmt[256];
	int s2_may[6];
	for (int i = 0; i < 6; i++) {
		snprintf(fmt, sizeof(fmt), "%s%s", SHARED, perms[i % 3]);
		snprintf(members, sizeof(members), fmt, x.s1);
		/* distinct wines/conditions keep the offers unique */
		char m2[300];
		static const char *const cond[] = {"new", "bin_end"};
		snprintf(m2, sizeof(m2), "%s,\"condition\":\"%s\"", members, cond[i / 3]);
		offer(port, x.ko2, x.w[i % 3], "10", m2, ofs[i]);
		int live = i % 2 == 0;
		json_decref(listing(port, x.ks1, ofs[i], x.c1, live ? "\"shelf_price\":11,\"status\":\"live\"" : "\"shelf_price\":11",
				    201, ls[i]));
		s2_may[i] = live && i % 3 == 0; /* open offers only: S1-named and US-blocked are not for S2 */
	}
	/* S2's own listing */
	char own[64], mine[64];
	offer(port, x.ko2, x.w[3], "10", SHARED, own);
	json_decref(listing(port, x.ks2, own, x.c2, "\"shelf_price\":11", 201, mine));
	static const int sizes[] = {1, 200};
	char ids[32][64], q[200];
	for (size_t s = 0; s < 2; s++) {
		snprintf(q, sizeof(q), "&channel_id=%s", x.c1);
		size_t n = walk(port, x.ks2, q, sizes[s], ids, 32);
		size_t want = 0;
		for (int i = 0; i < 6; i++) {
			want += (size_t)s2_may[i];
			int seen = 0;
			for (size_t k = 0; k < n; k++)
				seen |= !strcmp(ids[k], ls[i]);
			cr_assert_eq(seen, s2_may[i], "listing %d: seen %d, may %d", i, seen, s2_may[i]);
		}
		cr_assert_eq(n, want);
		/* by offer, by seller, unfiltered (its own only), with a status filter */
		for (int i = 0; i < 6; i++) {
			snprintf(q, sizeof(q), "&offer_id=%s", ofs[i]);
			cr_assert_eq(walk(port, x.ks2, q, sizes[s], ids, 32), (size_t)s2_may[i]);
		}
		snprintf(q, sizeof(q), "&seller_id=%s&status=live", x.s1);
		cr_assert_eq(walk(port, x.ks2, q, sizes[s], ids, 32), want);
		n = walk(port, x.ks2, "", sizes[s], ids, 32);
		cr_assert_eq(n, 1);
		cr_assert_str_eq(ids[0], mine);
		/* S1 sees all six on its channel */
		snprintf(q, sizeof(q), "&channel_id=%s", x.c1);
		cr_assert_eq(walk(port, x.ks1, q, sizes[s], ids, 32), 6);
	}
	/* hidden detail = 404 */
	for (int i = 0; i < 6; i++) {
		char path[128];
		snprintf(path, sizeof(path), "/v1/listings/%s", ls[i]);
		json_decref(expect(port, "GET", path, x.ks2, NULL, s2_may[i] ? 200 : 404));
	}
	wm_proc_cleanup(&x.p);
}

/* ---- durability ------------------------------------------------------------------------ */

WM_TEST(listing, survives_kill9_and_restart_with_indexes)
{
	struct world x;
	world(&x);
	int port = x.p.port;
	char of[64], id[64], path[128], b[8192], pk[128], extra[160];
	offer(port, x.ko2, x.w[0], "12.34", SHARED, of);
	json_decref(listing(port, x.ks1, of, x.c1, "\"shelf_price\":15.5,\"status\":\"live\"", 201, id));
	snprintf(extra, sizeof(extra), "\"kind\":\"publishable\",\"channel_id\":\"%s\"", x.c1);
	key_for(port, x.s1, extra, pk);
	wm_kill9(&x.p);
	cr_assert_eq(wm_start(&x.p, NULL, NULL), 0);
	port = x.p.port;
	snprintf(path, sizeof(path), "/v1/listings/%s", id);
	raw(port, "GET", path, x.ks1, NULL, 200, b, sizeof(b));
	cr_assert(strstr(b, "\"shelf_price\":15.50,") && strstr(b, "\"margin\":3.16"), "%s", b);
	json_decref(listing(port, x.ks1, of, x.c1, "\"shelf_price\":16", 409, NULL));
	cr_assert_eq(list_count(port, "/v1/listings", x.ks1), 1);
	cr_assert_eq(list_count(port, "/v1/listings", pk), 1);
	cr_assert_eq(list_count(port, "/v1/offers", pk), 1);
	cr_assert_eq(list_count(port, "/v1/wines", pk), 1);
	snprintf(path, sizeof(path), "/v1/listings?offer_id=%s", of);
	cr_assert_eq(list_count(port, path, x.ks2), 1);
	wm_proc_cleanup(&x.p);
}
