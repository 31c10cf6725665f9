/*
 * test_offer.c -- offers over HTTP against real wm-shard processes: every
 * field rule and bound, who may create, uniqueness, archived wines, the
 * status table, events, and the read-path filter -- two originators, two
 * sellers (one in a blocked country, one not named) and an adversarial key
 * paging with the widest filters that must see EXACTLY the rows the rules
 * allow (expected set computed here from the rules, not by the server),
 * hidden detail reads as 404, and the record quota not charged for hidden
 * rows.  (The candidate-stream merge, in-process: test_offer_units.c.)
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/supply/permit.h"
#include "tests/api_client.h"
#include "tests/harness.h"
#include "tests/wm_test.h"

/* ---- helpers ------------------------------------------------------------ */

static void start(struct wm_proc *p, const char *const *args)
{
	wm_proc_init(p);
	cr_assert_eq(wm_start(p, args, NULL), 0, "wm-shard did not start (logs in %s)", p->dir);
}

/* Does a 422 body list any error on field? */
static int has_field_error(json_t *problem, const char *field)
{
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(problem, "errors"), i, e)
	{
		if (!strcmp(tc_jstr(e, "field"), field))
			return 1;
	}
	return 0;
}

/* The world most tests share: two originators (O1 FR, O2 IT), two sellers
 * (S1 DE, S2 US), one originator without provides_inventory, a seller-only
 * partner, and published wines. */
struct world {
	struct wm_proc p;
	char o1[64], o2[64], s1[64], s2[64], noinv[64];
	char ko1[128], ko2[128], ks1[128], ks2[128], knoinv[128];
	char w[4][64];
};

static void world(struct world *x, const char *const *args)
{
	start(&x->p, args);
	int port = x->p.port;
	tc_partner_live(port, "Orig One", "FR", "[\"originator\",\"seller\"]", "\"originator_type\":\"stock\"", x->o1);
	tc_partner_live(port, "Orig Two", "IT", "[\"originator\"]", "\"originator_type\":\"collector\"", x->o2);
	tc_partner_live(port, "Seller One", "DE", "[\"seller\"]", NULL, x->s1);
	tc_partner_live(port, "Seller Two", "US", "[\"seller\"]", NULL, x->s2);
	tc_partner_live(port, "No Inventory", "FR", "[\"originator\"]",
		"\"originator_type\":\"estate\",\"capabilities\":{\"provides_inventory\":false}", x->noinv);
	tc_key_for(port, x->o1, x->ko1);
	tc_key_for(port, x->o2, x->ko2);
	tc_key_for(port, x->s1, x->ks1);
	tc_key_for(port, x->s2, x->ks2);
	tc_key_for(port, x->noinv, x->knoinv);
	static const char *const titles[] = {"Alpha Rouge", "Beta Blanc", "Gamma Rose", "Delta Brut"};
	for (int i = 0; i < 4; i++)
		tc_pub_wine(port, titles[i], x->w[i]);
}

/* ---- create, document, event ---------------------------------------------- */

WM_TEST(offer, create_document_fields_and_event)
{
	struct world x;
	world(&x, NULL);
	int port = x.p.port;
	char id[64], path[128];
	json_t *j = tc_offer(port, x.ko1, x.w[0],
			  "\"condition\":\"bin_end\",\"incoterm\":\"DAP\",\"min_order_qty\":6,\"case_size\":12,"
			  "\"valid_from\":\"2020-01-01T00:00:00Z\",\"valid_to\":\"2099-01-01T00:00:00Z\","
			  "\"permissions\":{\"default\":\"none\",\"allowed_countries\":[\"DE\"],\"blocked_countries\":[\"US\"],"
			  "\"named_sellers\":[]},\"network_shareable\":true,\"status\":\"active\",\"source\":\"feed\"",
			  201, id);
	cr_assert_str_eq(tc_jstr(j, "offer_id"), id);
	cr_assert_str_eq(tc_jstr(j, "id"), id);
	cr_assert_eq(strncmp(id, "ofr_", 4), 0);
	cr_assert_str_eq(tc_jstr(j, "originator_id"), x.o1);
	cr_assert_str_eq(tc_jstr(j, "wine_id"), x.w[0]);
	cr_assert(json_is_number(json_object_get(j, "seller_price")));
	char *dump = json_dumps(j, JSON_COMPACT);
	cr_assert(strstr(dump, "\"seller_price\":12.5"), "exact decimal: %s", dump);
	free(dump);
	cr_assert_str_eq(tc_jstr(j, "currency"), "EUR");
	cr_assert_eq(json_integer_value(json_object_get(j, "qty_available")), 60);
	cr_assert_str_eq(tc_jstr(j, "condition"), "bin_end");
	cr_assert_str_eq(tc_jstr(j, "incoterm"), "DAP");
	cr_assert_eq(json_integer_value(json_object_get(j, "min_order_qty")), 6);
	cr_assert_eq(json_integer_value(json_object_get(j, "case_size")), 12);
	cr_assert_str_eq(tc_jstr(j, "valid_from"), "2020-01-01T00:00:00.000Z");
	cr_assert_str_eq(tc_jstr(j, "status"), "active");
	cr_assert_str_eq(tc_jstr(j, "source"), "feed");
	cr_assert(json_is_true(json_object_get(j, "network_shareable")));
	json_t *pm = json_object_get(j, "permissions");
	cr_assert_str_eq(tc_jstr(pm, "default"), "none");
	cr_assert_str_eq(json_string_value(json_array_get(json_object_get(pm, "allowed_countries"), 0)), "DE");
	cr_assert(tc_jstr(j, "created_at") && tc_jstr(j, "updated_at"));
	json_decref(j);
	/* defaults */
	char id2[64];
	j = tc_offer(port, x.ko1, x.w[1], NULL, 201, id2);
	cr_assert_str_eq(tc_jstr(j, "status"), "draft");
	cr_assert_str_eq(tc_jstr(j, "condition"), "new");
	cr_assert_str_eq(tc_jstr(j, "source"), "direct");
	cr_assert(json_is_false(json_object_get(j, "network_shareable")));
	cr_assert(json_is_null(json_object_get(j, "min_order_qty")));
	cr_assert(json_is_null(json_object_get(j, "valid_to")));
	cr_assert_str_eq(tc_jstr(json_object_get(j, "permissions"), "default"), "any");
	json_decref(j);
	/* JPY has no minor unit; KWD has three */
	json_decref(tc_offer(port, x.ko1, x.w[2], "\"currency\":\"JPY\",\"seller_price\":1500", 201, NULL));
	j = tc_offer(port, x.ko1, x.w[3], "\"currency\":\"KWD\",\"seller_price\":1.125", 201, NULL);
	dump = json_dumps(j, JSON_COMPACT);
	cr_assert(strstr(dump, "\"seller_price\":1.125"), "%s", dump);
	free(dump);
	json_decref(j);
	/* detail read, event scoped to the originator */
	snprintf(path, sizeof(path), "/v1/offers/%s", id);
	json_decref(tc_expect(port, "GET", path, x.ko1, NULL, 200));
	cr_assert_eq(tc_count_events(port, "offer.created", x.ko1), 4);
	cr_assert_eq(tc_count_events(port, "offer.created", x.ko2), 0);
	/* PATCH: offer.updated */
	j = tc_expect(port, "PATCH", path, x.ko1, "{\"qty_available\":0,\"seller_price\":13}", 200);
	cr_assert_eq(json_integer_value(json_object_get(j, "qty_available")), 0);
	json_decref(j);
	cr_assert_eq(tc_count_events(port, "offer.updated", x.ko1), 1);
	/* a new currency needs its price */
	j = tc_expect(port, "PATCH", path, x.ko1, "{\"currency\":\"USD\"}", 422);
	cr_assert(tc_lists_error(j, "seller_price", "required_with_currency"));
	json_decref(j);
	json_decref(tc_expect(port, "PATCH", path, x.ko1, "{\"currency\":\"USD\",\"seller_price\":\"x\"}", 422));
	json_decref(tc_expect(port, "PATCH", path, x.ko1, "{\"currency\":\"USD\",\"seller_price\":14.99}", 200));
	/* survives a restart (decode of the stored document) */
	wm_stop(&x.p);
	cr_assert_eq(wm_start(&x.p, NULL, NULL), 0);
	j = tc_expect(x.p.port, "GET", path, x.ko1, NULL, 200);
	cr_assert_str_eq(tc_jstr(j, "currency"), "USD");
	json_decref(j);
	wm_proc_cleanup(&x.p);
}

WM_TEST(offer, every_failing_field_is_listed_with_its_rule)
{
	struct world x;
	world(&x, NULL);
	int port = x.p.port;
	json_t *j = tc_expect(port, "POST", "/v1/offers", x.ko1,
			   "{\"wine_id\":\"wine_nope\",\"seller_price\":12.345,\"currency\":\"EUR\",\"qty_available\":-1,"
			   "\"condition\":\"used\",\"incoterm\":\"XYZ\",\"min_order_qty\":0,\"case_size\":1001,"
			   "\"valid_from\":\"2030-01-01T00:00:00Z\",\"valid_to\":\"2029-01-01T00:00:00Z\","
			   "\"permissions\":{\"default\":\"some\",\"allowed_countries\":[\"DE\",\"DE\",\"XX\"],"
			   "\"blocked_countries\":[\"DE\"],\"named_sellers\":[\"ptn_nope\"],\"other\":1},"
			   "\"network_shareable\":\"yes\",\"status\":\"paused\",\"source\":\"rumour\",\"id\":\"x\",\"colour\":1}",
			   422);
	static const char *const want[][2] = {
		{"wine_id", "exists"}, {"seller_price", "precision"}, {"qty_available", "range"},
		{"condition", "enum"}, {"incoterm", "enum"}, {"min_order_qty", "range"}, {"case_size", "range"},
		{"valid_to", "after_valid_from"}, {"permissions.default", "enum"},
		{"permissions.allowed_countries[1]", "unique"}, {"permissions.allowed_countries[2]", "country"},
		{"permissions.blocked_countries", "conflict"}, {"permissions.named_sellers[0]", "partner"},
		{"permissions.other", "unknown_field"}, {"network_shareable", "type"}, {"status", "initial"},
		{"source", "enum"}, {"id", "read_only"}, {"colour", "unknown_field"}};
	char *dump = json_dumps(j, JSON_COMPACT);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_assert(tc_lists_error(j, want[i][0], want[i][1]), "missing %s/%s in %s", want[i][0], want[i][1], dump);
	free(dump);
	json_decref(j);
	/* required members */
	j = tc_expect(port, "POST", "/v1/offers", x.ko1, "{}", 422);
	static const char *const req[] = {"wine_id", "seller_price", "currency", "qty_available", "incoterm"};
	for (size_t i = 0; i < 5; i++)
		cr_assert(tc_lists_error(j, req[i], "required"), "%s required", req[i]);
	json_decref(j);
	/* bounds at and past the edge */
	struct {
		const char *members;
		int ok;
		const char *field;
	} b[] = {
		{"\"seller_price\":10000000000.00", 1, NULL},        /* 10^12 minor units */
		{"\"seller_price\":10000000000.01", 0, "seller_price"}, {"\"seller_price\":0", 0, "seller_price"},
		{"\"seller_price\":0.01", 1, NULL},                  {"\"qty_available\":100000000", 1, NULL},
		{"\"qty_available\":100000001", 0, "qty_available"}, {"\"min_order_qty\":1000000", 1, NULL},
		{"\"min_order_qty\":1000001", 0, "min_order_qty"},   {"\"case_size\":1000", 1, NULL},
		{"\"valid_from\":\"not a time\"", 0, "valid_from"},
	};
	static const char *const conds[] = {"new", "bin_end", "mixed_vintage"};
	int u = 0;
	for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++) {
		char m[256];
		/* each accepted case needs a free identity: (wine, condition) */
		snprintf(m, sizeof(m), "%s,\"condition\":\"%s\"", b[i].members, conds[u / 4]);
		j = tc_offer(port, x.ko1, x.w[u % 4], m, b[i].ok ? 201 : 422, NULL);
		if (!b[i].ok)
			cr_assert(has_field_error(j, b[i].field), "%s", b[i].members);
		else
			u++;
		json_decref(j);
	}
	wm_proc_cleanup(&x.p);
}

WM_TEST(offer, permission_list_bounds)
{
	struct world x;
	world(&x, NULL);
	static const char codes[] = "AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM "
				    "BN BO BQ BR BS BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX "
				    "CY CZ DE DJ DK DM DO DZ EC EE EG EH ER";
	char list[1024] = "", m[1400];
	for (int i = 0; i < PERMIT_MAX_COUNTRIES + 1; i++) {
		size_t l = strlen(list);
		snprintf(list + l, sizeof(list) - l, "%s\"%.2s\"", i ? "," : "", codes + 3 * i);
		if (i == PERMIT_MAX_COUNTRIES - 1) { /* exactly at the bound: accepted */
			snprintf(m, sizeof(m), "\"permissions\":{\"allowed_countries\":[%s]}", list);
			json_decref(tc_offer(x.p.port, x.ko1, x.w[0], m, 201, NULL));
		}
	}
	snprintf(m, sizeof(m), "\"permissions\":{\"blocked_countries\":[%s]}", list);
	json_t *j = tc_offer(x.p.port, x.ko1, x.w[1], m, 422, NULL);
	cr_assert(tc_lists_error(j, "permissions.blocked_countries", "max_items"));
	json_decref(j);
	char sellers[4096] = "";
	for (int i = 0; i < PERMIT_MAX_SELLERS + 1; i++) {
		size_t l = strlen(sellers);
		snprintf(sellers + l, sizeof(sellers) - l, "%s\"%s\"", i ? "," : "", x.s1);
	}
	char m2[4200];
	snprintf(m2, sizeof(m2), "\"permissions\":{\"named_sellers\":[%s]}", sellers);
	j = tc_offer(x.p.port, x.ko1, x.w[1], m2, 422, NULL);
	cr_assert(tc_lists_error(j, "permissions.named_sellers", "max_items"));
	json_decref(j);
	wm_proc_cleanup(&x.p);
}

/* ---- who ------------------------------------------------------------------ */

WM_TEST(offer, who_may_create_and_write)
{
	struct world x;
	world(&x, NULL);
	int port = x.p.port;
	char body[256], id[64], path[128];
	/* a seller-only partner: the policy refuses the action */
	snprintf(body, sizeof(body), "{\"wine_id\":\"%s\",\"seller_price\":1,\"currency\":\"EUR\",\"qty_available\":1,"
		 "\"incoterm\":\"EXW\"}", x.w[0]);
	tc_expect_code(port, "POST", "/v1/offers", x.ks1, body, 403, "action_not_allowed");
	/* an originator without provides_inventory */
	tc_expect_code(port, "POST", "/v1/offers", x.knoinv, body, 403, "capability_missing");
	/* another originator's id */
	snprintf(body, sizeof(body), "{\"wine_id\":\"%s\",\"originator_id\":\"%s\",\"seller_price\":1,\"currency\":\"EUR\","
		 "\"qty_available\":1,\"incoterm\":\"EXW\"}", x.w[0], x.o2);
	tc_expect_code(port, "POST", "/v1/offers", x.ko1, body, 403, "not_own_originator");
	/* operators name any originator with the role and capability */
	json_t *j = tc_expect(port, "POST", "/v1/offers", NULL, body, 201);
	cr_assert_str_eq(tc_jstr(j, "originator_id"), x.o2);
	snprintf(id, sizeof(id), "%s", tc_jstr(j, "id"));
	json_decref(j);
	snprintf(body, sizeof(body), "{\"wine_id\":\"%s\",\"originator_id\":\"%s\",\"seller_price\":1,\"currency\":\"EUR\","
		 "\"qty_available\":1,\"incoterm\":\"EXW\"}", x.w[0], x.noinv);
	j = tc_expect(port, "POST", "/v1/offers", NULL, body, 422);
	cr_assert(tc_lists_error(j, "originator_id", "originator"));
	json_decref(j);
	snprintf(body, sizeof(body), "{\"wine_id\":\"%s\",\"seller_price\":1,\"currency\":\"EUR\",\"qty_available\":1,"
		 "\"incoterm\":\"EXW\"}", x.w[0]);
	j = tc_expect(port, "POST", "/v1/offers", NULL, body, 422);
	cr_assert(tc_lists_error(j, "originator_id", "required"));
	json_decref(j);
	/* writes on another's offer are 404, like an unknown id */
	snprintf(path, sizeof(path), "/v1/offers/%s", id);
	tc_expect_code(port, "PATCH", path, x.ko1, "{\"qty_available\":2}", 404, "not_found");
	snprintf(path, sizeof(path), "/v1/offers/%s/withdraw", id);
	tc_expect_code(port, "POST", path, x.ko1, NULL, 404, "not_found");
	json_decref(tc_expect(port, "POST", path, x.ko2, NULL, 200));
	tc_expect_code(port, "PATCH", "/v1/offers/ofr_nope", x.ko1, "{\"qty_available\":2}", 404, "not_found");
	wm_proc_cleanup(&x.p);
}

WM_TEST(offer, uniqueness_and_archived_or_invisible_wines)
{
	struct world x;
	world(&x, NULL);
	int port = x.p.port;
	char id[64], path[128];
	json_decref(tc_offer(port, x.ko1, x.w[0], NULL, 201, id));
	json_t *j = tc_offer(port, x.ko1, x.w[0], "\"seller_price\":99", 409, NULL);
	cr_assert_str_eq(tc_jstr(j, "code"), "offer_exists");
	cr_assert_not_null(strstr(tc_jstr(j, "detail"), id), "names the existing offer");
	json_decref(j);
	/* another condition or another originator is another offer */
	json_decref(tc_offer(port, x.ko1, x.w[0], "\"condition\":\"bin_end\"", 201, NULL));
	json_decref(tc_offer(port, x.ko2, x.w[0], NULL, 201, NULL));
	/* identity cannot change */
	snprintf(path, sizeof(path), "/v1/offers/%s", id);
	j = tc_expect(port, "PATCH", path, x.ko1, "{\"condition\":\"bin_end\",\"wine_id\":\"x\"}", 422);
	cr_assert(tc_lists_error(j, "condition", "immutable") && tc_lists_error(j, "wine_id", "immutable"));
	json_decref(j);
	/* archived wine */
	snprintf(path, sizeof(path), "/v1/wines/%s", x.w[1]);
	json_decref(tc_expect(port, "PATCH", path, NULL, "{\"status\":\"archived\"}", 200));
	j = tc_offer(port, x.ko1, x.w[1], NULL, 422, NULL);
	cr_assert(tc_lists_error(j, "wine_id", "not_archived"));
	json_decref(j);
	/* a draft wine the originator cannot see is unknown to it */
	j = tc_expect(port, "POST", "/v1/wines", NULL, "{\"title\":\"Hidden Draft\",\"producer\":{\"name\":\"Hid\"}}", 201);
	char draft[64];
	snprintf(draft, sizeof(draft), "%s", tc_jstr(j, "id"));
	json_decref(j);
	j = tc_offer(port, x.ko1, draft, NULL, 422, NULL);
	cr_assert(tc_lists_error(j, "wine_id", "exists"));
	json_decref(j);
	wm_proc_cleanup(&x.p);
}

/* ---- status table ------------------------------------------------------------ */

WM_TEST(offer, status_table_every_illegal_move_is_409)
{
	struct world x;
	world(&x, NULL);
	int port = x.p.port;
	static const char *const st[] = {"draft", "active", "paused", "withdrawn"};
	/* legal[from][to]; from == to is a no-op except for withdrawn */
	static const int legal[4][4] = {{1, 1, 0, 1}, {0, 1, 1, 1}, {0, 1, 1, 1}, {0, 0, 0, 0}};
	int w = 0;
	for (int from = 0; from < 4; from++)
		for (int to = 0; to < 4; to++) {
			char id[64], path[128], body[64], cond[64];
			/* a fresh offer in `from`: identity = (wine, condition) rotated */
			/* a fresh offer in `from`; identities: O1 for 12, O2 for the last 4 */
			const char *k = w < 12 ? x.ko1 : x.ko2;
			snprintf(cond, sizeof(cond), "\"condition\":\"%s\"",
				 (const char *[]){"new", "bin_end", "mixed_vintage"}[(w / 4) % 3]);
			json_decref(tc_offer(port, k, x.w[w % 4], cond, 201, id));
			w++;
			snprintf(path, sizeof(path), "/v1/offers/%s", id);
			if (from == 1 || from == 2)
				json_decref(tc_expect(port, "PATCH", path, k, "{\"status\":\"active\"}", 200));
			if (from == 2)
				json_decref(tc_expect(port, "PATCH", path, k, "{\"status\":\"paused\"}", 200));
			if (from == 3)
				json_decref(tc_expect(port, "PATCH", path, k, "{\"status\":\"withdrawn\"}", 200));
			snprintf(body, sizeof(body), "{\"status\":\"%s\"}", st[to]);
			if (legal[from][to]) {
				json_t *j = tc_expect(port, "PATCH", path, k, body, 200);
				cr_assert_str_eq(tc_jstr(j, "status"), st[to]);
				json_decref(j);
			} else {
				tc_expect_code(port, "PATCH", path, k, body, 409, "invalid_status_transition");
			}
		}
	/* withdraw endpoint: once, then final */
	char id[64], path[128];
	json_decref(tc_offer(port, x.ko2, x.w[0], "\"condition\":\"bin_end\"", 201, id));
	snprintf(path, sizeof(path), "/v1/offers/%s/withdraw", id);
	json_t *j = tc_expect(port, "POST", path, x.ko2, NULL, 200);
	cr_assert_str_eq(tc_jstr(j, "status"), "withdrawn");
	json_decref(j);
	tc_expect_code(port, "POST", path, x.ko2, NULL, 409, "invalid_status_transition");
	snprintf(path, sizeof(path), "/v1/offers/%s", id);
	tc_expect_code(port, "PATCH", path, x.ko2, "{\"qty_available\":1}", 409, "invalid_status_transition");
	/* events: 3 legal PATCH moves to withdrawn (O1), 4 set-ups of the
	 * withdrawn row (O2), and the endpoint (O2); scoped to the originator */
	cr_assert_eq(tc_count_events(port, "offer.withdrawn", NULL), 3 + 4 + 1);
	cr_assert_eq(tc_count_events(port, "offer.withdrawn", x.ko2), 4 + 1);
	cr_assert_eq(tc_count_events(port, "offer.withdrawn", x.ko1), 3);
	wm_proc_cleanup(&x.p);
}

/* ---- the read path --------------------------------------------------------- */

/* One offer of the adversarial world, with the rules as the test knows them. */
struct rule {
	int orig;             /* 1 or 2 */
	int wine, cond;
	const char *status;   /* final status */
	int shareable;
	const char *deflt;
	const char *allowed, *blocked; /* JSON array text */
	int named_s1, named_s2;
	int expired;
	char id[64];
};

/* The test's own evaluator: may seller s (1: DE, 2: US; 3 = O2 itself as a
 * seller in IT) see the offer, optionally for destination? */
static int may_see(const struct rule *r, const char *me_country, int me_is_s1, int me_is_s2, const char *dest)
{
	if (strcmp(r->status, "active") || r->expired || !r->shareable)
		return 0;
	int named = (me_is_s1 && r->named_s1) || (me_is_s2 && r->named_s2);
	if ((r->named_s1 || r->named_s2) && !named)
		return 0;
	if (strstr(r->blocked, me_country))
		return 0;
	int callowed = strstr(r->allowed, me_country) != NULL;
	int has_allowed = strcmp(r->allowed, "[]") != 0;
	if (has_allowed && !callowed && !named)
		return 0;
	if (!strcmp(r->deflt, "none") && !named && !callowed)
		return 0;
	if (dest && (strstr(r->blocked, dest) || (has_allowed && !strstr(r->allowed, dest))))
		return 0;
	return 1;
}

/* Every id a key sees through /v1/offers (query q, page size ps), following
 * the cursor; asserts no duplicates and increasing order. */
static size_t walk(int port, const char *key, const char *q, int ps, char ids[][64], size_t max)
{
	char path[512], cursor[400] = "";
	size_t n = 0;
	for (int pages = 0; pages < 1000; pages++) {
		snprintf(path, sizeof(path), "/v1/offers?page_size=%d%s%s%s%s", ps, q[0] ? "&" : "", q,
			 cursor[0] ? "&cursor=" : "", cursor);
		json_t *j = tc_expect(port, "GET", path, key, NULL, 200);
		size_t i;
		json_t *e;
		json_array_foreach(json_object_get(j, "data"), i, e)
		{
			cr_assert_lt(n, max);
			snprintf(ids[n], 64, "%s", tc_jstr(e, "id"));
			cr_assert(n == 0 || strcmp(ids[n - 1], ids[n]) < 0, "ids in order, once: %s then %s", ids[n - 1],
				  ids[n]);
			n++;
		}
		cr_assert_leq(json_array_size(json_object_get(j, "data")), (size_t)ps);
		const char *nc = tc_jstr(j, "next_cursor");
		int more = json_is_true(json_object_get(j, "has_more"));
		cr_assert_eq(more, nc != NULL);
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

static int contains(char ids[][64], size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(ids[i], id))
			return 1;
	return 0;
}

WM_TEST(offer, adversarial_sellers_see_exactly_their_rows)
{
	struct world x;
	world(&x, NULL);
	int port = x.p.port;
	static struct rule rules[] = {
		/* orig wine cond status  share default allowed       blocked        s1 s2 expired */
		{1, 0, 0, "active", 1, "any", "[]", "[]", 0, 0, 0, ""},                   /* open */
		{1, 0, 1, "active", 0, "any", "[]", "[]", 0, 0, 0, ""},                   /* not shareable */
		{1, 0, 2, "draft", 1, "any", "[]", "[]", 0, 0, 0, ""},                    /* draft */
		{1, 1, 0, "paused", 1, "any", "[]", "[]", 0, 0, 0, ""},                   /* paused */
		{1, 1, 1, "withdrawn", 1, "any", "[]", "[]", 0, 0, 0, ""},                /* withdrawn */
		{1, 1, 2, "active", 1, "any", "[]", "[\"US\"]", 0, 0, 0, ""},             /* S2's country blocked */
		{1, 2, 0, "active", 1, "any", "[]", "[]", 1, 0, 0, ""},                   /* named S1 only */
		{1, 2, 1, "active", 1, "none", "[\"DE\"]", "[]", 0, 0, 0, ""},            /* allowed DE */
		{1, 2, 2, "active", 1, "none", "[]", "[]", 0, 0, 0, ""},                  /* closed */
		{1, 3, 0, "active", 1, "any", "[]", "[]", 0, 0, 1, ""},                   /* expired window */
		{2, 0, 0, "active", 1, "any", "[]", "[\"FR\"]", 0, 0, 0, ""},             /* open but FR blocked */
		{2, 0, 1, "active", 1, "none", "[]", "[]", 1, 1, 0, ""},                  /* named both */
		{2, 0, 2, "active", 1, "any", "[\"US\",\"FR\"]", "[]", 0, 0, 0, ""},      /* allowed US, FR */
		{2, 1, 0, "active", 1, "any", "[\"DE\"]", "[]", 0, 1, 0, ""},             /* named S2, allowed DE */
		{2, 1, 1, "active", 1, "any", "[]", "[\"DE\",\"US\"]", 0, 0, 0, ""},      /* blocks both sellers */
		{2, 1, 2, "active", 1, "any", "[\"DE\"]", "[\"JP\"]", 0, 0, 0, ""},       /* allowed DE, blocked JP */
		{2, 2, 0, "draft", 1, "any", "[]", "[]", 1, 1, 0, ""},                    /* named but draft */
		{2, 2, 1, "active", 1, "any", "[]", "[]", 0, 0, 0, ""},                   /* open */
	};
	size_t nr = sizeof(rules) / sizeof(rules[0]);
	static const char *const conds[] = {"new", "bin_end", "mixed_vintage"};
	for (size_t i = 0; i < nr; i++) {
		struct rule *r = &rules[i];
		char m[1024], named[200] = "";
		if (r->named_s1 || r->named_s2)
			snprintf(named, sizeof(named), "%s%s%s%s%s", r->named_s1 ? "\"" : "", r->named_s1 ? x.s1 : "",
				 r->named_s1 ? "\"" : "", r->named_s2 ? (r->named_s1 ? ",\"" : "\"") : "",
				 r->named_s2 ? x.s2 : "");
		if (r->named_s2)
			strcat(named, "\"");
		snprintf(m, sizeof(m),
			 "\"condition\":\"%s\",\"status\":\"%s\",\"network_shareable\":%s,\"permissions\":{\"default\":\"%s\","
			 "\"allowed_countries\":%s,\"blocked_countries\":%s,\"named_sellers\":[%s]}%s",
			 conds[r->cond], strcmp(r->status, "draft") ? "active" : "draft", r->shareable ? "true" : "false",
			 r->deflt, r->allowed, r->blocked, named,
			 r->expired ? ",\"valid_from\":\"2001-01-01T00:00:00Z\",\"valid_to\":\"2002-01-01T00:00:00Z\"" : "");
		json_decref(tc_offer(port, r->orig == 1 ? x.ko1 : x.ko2, x.w[r->wine], m, 201, r->id));
		char path[128], body[64];
		snprintf(path, sizeof(path), "/v1/offers/%s", r->id);
		if (!strcmp(r->status, "paused") || !strcmp(r->status, "withdrawn")) {
			snprintf(body, sizeof(body), "{\"status\":\"%s\"}", r->status);
			json_decref(tc_expect(port, "PATCH", path, r->orig == 1 ? x.ko1 : x.ko2, body, 200));
		}
	}
	static char seen[64][64];
	struct {
		const char *key, *country;
		int s1, s2, orig;
	} who[] = {{x.ks1, "DE", 1, 0, 0}, {x.ks2, "US", 0, 1, 0}, {x.ko2, "IT", 0, 0, 2}, {x.ko1, "FR", 0, 0, 1}};
	static const char *const queries[] = {"", "destination=JP", "destination=US", "status=active", "currency=EUR",
					      "condition=new"};
	for (size_t k = 0; k < sizeof(who) / sizeof(who[0]); k++)
		for (size_t qi = 0; qi < sizeof(queries) / sizeof(queries[0]); qi++)
			for (int ps = 1; ps <= 200; ps += 199) {
				const char *q = queries[qi];
				const char *dest = strncmp(q, "destination=", 12) ? NULL : q + 12;
				size_t n = walk(port, who[k].key, q, ps, seen, 64);
				size_t want = 0;
				for (size_t i = 0; i < nr; i++) {
					const struct rule *r = &rules[i];
					int own = who[k].orig == r->orig;
					int ok = own ? 1 : may_see(r, who[k].country, who[k].s1, who[k].s2, dest);
					if (own && dest && (strstr(r->blocked, dest) ||
							    (strcmp(r->allowed, "[]") && !strstr(r->allowed, dest))))
						ok = 0;
					if (!strcmp(q, "status=active") && strcmp(r->status, "active"))
						ok = 0;
					if (!strcmp(q, "condition=new") && r->cond != 0)
						ok = 0;
					cr_assert_eq(contains(seen, n, r->id), ok, "key %zu query '%s' ps %d rule %zu: seen %d want %d",
						     k, q, ps, i, !ok, ok);
					want += (size_t)ok;
				}
				cr_assert_eq(n, want);
			}
	/* detail reads: hidden is the same 404 as unknown; permissions verdicts */
	char path[200];
	snprintf(path, sizeof(path), "/v1/offers/%s", rules[5].id); /* blocks US */
	json_decref(tc_expect(port, "GET", path, x.ks1, NULL, 200));
	json_t *a = tc_expect(port, "GET", path, x.ks2, NULL, 404);
	json_t *b = tc_expect(port, "GET", "/v1/offers/ofr_00000000000000000000", x.ks2, NULL, 404);
	cr_assert_str_eq(tc_jstr(a, "code"), tc_jstr(b, "code"));
	cr_assert_str_eq(tc_jstr(a, "detail"), tc_jstr(b, "detail"));
	json_decref(a);
	json_decref(b);
	snprintf(path, sizeof(path), "/v1/offers/%s/permissions", rules[5].id);
	tc_expect_code(port, "GET", path, x.ks2, NULL, 404, "not_found");
	json_t *j = tc_expect(port, "GET", path, x.ks1, NULL, 200);
	json_t *v = json_object_get(j, "verdict");
	cr_assert(json_is_true(json_object_get(v, "allowed")));
	cr_assert_str_eq(tc_jstr(v, "code"), "allowed");
	json_decref(j);
	/* the originator asks about S2: seller_country_blocked with its reason */
	snprintf(path, sizeof(path), "/v1/offers/%s/permissions?seller_id=%s", rules[5].id, x.s2);
	j = tc_expect(port, "GET", path, x.ko1, NULL, 200);
	v = json_object_get(j, "verdict");
	cr_assert(json_is_false(json_object_get(v, "allowed")));
	cr_assert_str_eq(tc_jstr(v, "code"), "seller_country_blocked");
	cr_assert_not_null(tc_jstr(v, "reason"));
	cr_assert_str_eq(tc_jstr(json_object_get(j, "permissions"), "default"), "any");
	json_decref(j);
	tc_expect_code(port, "GET", path, x.ks1, NULL, 400, "invalid_filter");
	/* destination verdict */
	snprintf(path, sizeof(path), "/v1/offers/%s/permissions?destination=JP", rules[15].id);
	j = tc_expect(port, "GET", path, x.ks1, NULL, 200);
	cr_assert_str_eq(tc_jstr(json_object_get(j, "verdict"), "code"), "destination_blocked");
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/offers/%s/permissions", rules[0].id);
	j = tc_expect(port, "GET", path, x.ko1, NULL, 200);
	cr_assert_str_eq(tc_jstr(json_object_get(j, "verdict"), "code"), "owner");
	json_decref(j);
	/* writes by a seller who can see the offer: still 404 */
	snprintf(path, sizeof(path), "/v1/offers/%s", rules[0].id);
	tc_expect_code(port, "PATCH", path, x.ks1, "{\"qty_available\":1}", 403, "action_not_allowed");
	tc_expect_code(port, "PATCH", path, x.ko2, "{\"qty_available\":1}", 404, "not_found");
	/* bad filters */
	tc_expect_code(port, "GET", "/v1/offers?destination=ZZ", x.ks1, NULL, 400, "invalid_filter");
	tc_expect_code(port, "GET", "/v1/offers?status=sold", x.ks1, NULL, 400, "invalid_filter");
	tc_expect_code(port, "GET", "/v1/offers?currency=EURO", x.ks1, NULL, 400, "invalid_filter");
	tc_expect_code(port, "GET", "/v1/offers?cursor=d2luZV94", x.ks1, NULL, 400, "invalid_cursor");
	/* the platform sees every row */
	cr_assert_eq(walk(port, NULL, "", 7, seen, 64), nr);
	wm_proc_cleanup(&x.p);
}

WM_TEST(offer, quota_is_not_charged_for_hidden_rows)
{
	struct world x;
	const char *args[] = {"--record-quota", "4", "--record-quota-period-s", "3600", NULL};
	world(&x, args);
	int port = x.p.port;
	/* O1: three offers S2 cannot see (US blocked), then one it can */
	char vis[64];
	for (int i = 0; i < 3; i++)
		json_decref(tc_offer(port, x.ko1, x.w[i],
				  "\"status\":\"active\",\"network_shareable\":true,"
				  "\"permissions\":{\"blocked_countries\":[\"US\"]}", 201, NULL));
	json_decref(tc_offer(port, x.ko1, x.w[3], "\"status\":\"active\",\"network_shareable\":true", 201, vis));
	/* four pages of one visible row each fit a quota of four */
	for (int i = 0; i < 4; i++) {
		json_t *j = tc_expect(port, "GET", "/v1/offers?page_size=200", x.ks2, NULL, 200);
		cr_assert_eq(json_array_size(json_object_get(j, "data")), 1);
		cr_assert_str_eq(tc_jstr(json_array_get(json_object_get(j, "data"), 0), "id"), vis);
		json_decref(j);
	}
	tc_expect_code(port, "GET", "/v1/offers?page_size=200", x.ks2, NULL, 429, "quota_exceeded");
	wm_proc_cleanup(&x.p);
}
