/*
 * test_error_details.c -- error details name what is missing (issue 21
 * item 12): a 403 for an onboarding state names the state (or role) that
 * unlocks the action and where the partner stands; a publish-gate failure
 * names the field that is missing, not a neighbour (the energy particular
 * named energy_kj_per_100ml when only the kcal figure was absent).
 *
 * No jansson here: the unit part includes engine headers (whose JSON names
 * clash with jansson's), and the HTTP part reads what it needs with strstr.
 */
#include <stdio.h>
#include <string.h>

#include "engine/catalogue/partner.h"
#include "engine/edge/policy.h"
#include "tests/harness.h"
#include "tests/wm_test.h"

/* ---- policy_explain (pure) ------------------------------------------------ */

WM_TEST(error_details, policy_explain_names_what_unlocks)
{
	char d[256];
	policy_explain(ACT_CREATE_ORDERS, ROLE_SELLER, PS_VERIFIED, d, sizeof(d));
	cr_assert_str_eq(d, "the action can_create_orders requires onboarding status live; partner is verified");
	policy_explain(ACT_WRITE_LISTINGS, ROLE_SELLER, PS_VERIFIED, d, sizeof(d));
	cr_assert_str_eq(d, "the action can_write_listings requires onboarding status roles_enabled or later; partner is "
			    "verified");
	policy_explain(ACT_MINT_KEY, 0, PS_APPLIED, d, sizeof(d));
	cr_assert_str_eq(d, "the action can_mint_key requires onboarding status verified or later; partner is applied");
	policy_explain(ACT_WRITE_OFFERS, ROLE_SELLER, PS_LIVE, d, sizeof(d));
	cr_assert_str_eq(d, "the action can_write_offers requires the originator role; partner's roles: seller");
	policy_explain(ACT_WRITE_WINES, ROLE_SELLER, PS_VERIFIED, d, sizeof(d));
	cr_assert_str_eq(d, "the action can_write_wines requires onboarding status roles_enabled or later; partner is "
			    "verified, and requires the originator or fulfiller role; partner's roles: seller");
	policy_explain(ACT_READ_INVENTORY, 0, PS_LIVE, d, sizeof(d));
	cr_assert_str_eq(d, "the action can_read_inventory requires the originator or fulfiller or seller role; "
			    "partner's roles: none");
	policy_explain(ACT_OPERATE, ROLE_SELLER, PS_LIVE, d, sizeof(d));
	cr_assert_str_eq(d, "the action can_operate is open to the platform only");
	/* every denial a partner can meet explains itself */
	for (int a = 1; a < ACT_COUNT_; a++)
		for (int st = 0; st < PS_SUSPENDED; st++)
			for (uint8_t r = 0; r < 8; r++)
				if (!policy_allows((enum action)a, 0, r, (uint8_t)st)) {
					policy_explain((enum action)a, r, (uint8_t)st, d, sizeof(d));
					cr_assert(strstr(d, " requires ") || strstr(d, "platform only"), "%s", d);
				}
	/* the bound: truncated, NUL-terminated, never past size */
	char small[24];
	memset(small, 'x', sizeof(small));
	policy_explain(ACT_CREATE_ORDERS, ROLE_SELLER, PS_VERIFIED, small, 16);
	cr_assert_eq(strlen(small), 15);
	cr_assert_eq(small[16], 'x', "nothing written past size");
	policy_explain(ACT_CREATE_ORDERS, ROLE_SELLER, PS_VERIFIED, small, 1);
	cr_assert_eq(small[0], 0);
	small[0] = 'x';
	policy_explain(ACT_CREATE_ORDERS, ROLE_SELLER, PS_VERIFIED, small, 0);
	cr_assert_eq(small[0], 'x', "size 0 writes nothing");
	policy_explain(ACT_COUNT_, ROLE_SELLER, PS_VERIFIED, d, sizeof(d));
	cr_assert_str_eq(d, "");
}

/* ---- over HTTP ---------------------------------------------------------------- */

/* One request (key NULL: the operator's); the status, the body into body. */
static int call(int port, const char *method, const char *path, const char *key, const char *req, char *body,
		size_t size)
{
	char h[256];
	if (key)
		snprintf(h, sizeof(h), "Authorization: Bearer %s\r\n", key);
	struct http_resp r;
	cr_assert_eq(http_do(port, method, path, key ? h : NULL, req, &r), 0, "%s %s: no response", method, path);
	snprintf(body, size, "%s", r.body ? r.body : "");
	int st = r.status;
	http_resp_free(&r);
	return st;
}

/* The string member `name` of a flat JSON body (the first occurrence). */
static void member(const char *body, const char *name, char *out, size_t size)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "\"%s\":\"", name);
	const char *p = strstr(body, pat);
	cr_assert_not_null(p, "no %s in %s", name, body);
	p += strlen(pat);
	const char *e = strchr(p, '"');
	cr_assert_not_null(e);
	snprintf(out, size, "%.*s", (int)(e - p), p);
}

static void status_to(int port, const char *id, const char *status)
{
	char path[128], req[64], body[4096];
	snprintf(path, sizeof(path), "/v1/partners/%s", id);
	snprintf(req, sizeof(req), "{\"status\":\"%s\"}", status);
	cr_assert_eq(call(port, "PATCH", path, NULL, req, body, sizeof(body)), 200, "%s", body);
}

WM_TEST(error_details, forbidden_names_the_onboarding_step_and_role)
{
	struct wm_proc p;
	wm_proc_init(&p);
	cr_assert_eq(wm_start(&p, NULL, NULL), 0);
	char body[8192], id[64], key[160], req[256];
	cr_assert_eq(call(p.port, "POST", "/v1/partners", NULL,
			  "{\"legal_name\":\"Weinhaus\",\"country\":\"DE\",\"roles\":[\"seller\"]}", body, sizeof(body)),
		     201, "%s", body);
	member(body, "id", id, sizeof(id));
	status_to(p.port, id, "verified");
	snprintf(req, sizeof(req), "{\"entity_id\":\"%s\"}", id);
	cr_assert_eq(call(p.port, "POST", "/api/keys", NULL, req, body, sizeof(body)), 201, "%s", body);
	member(body, "key", key, sizeof(key));
	/* verified: channels open at roles_enabled, orders at live */
	cr_assert_eq(call(p.port, "POST", "/v1/sales-channels", key, "{\"name\":\"Web\",\"kind\":\"webshop_connect\"}",
			  body, sizeof(body)),
		     403);
	cr_assert(strstr(body, "requires onboarding status roles_enabled or later; partner is verified"), "%s", body);
	cr_assert_eq(call(p.port, "POST", "/v1/orders/quote-calculate", key,
			  "{\"destination_country\":\"DE\",\"lines\":[{\"sku\":\"wine_x\",\"qty\":1,\"box_units\":6}]}",
			  body, sizeof(body)),
		     403);
	cr_assert(strstr(body, "\"action_not_allowed\""), "%s", body);
	cr_assert(strstr(body, "requires onboarding status live; partner is verified"), "%s", body);
	/* a seller writing offers: the role is what is missing */
	status_to(p.port, id, "roles_enabled");
	cr_assert_eq(call(p.port, "POST", "/v1/offers", key, "{}", body, sizeof(body)), 403);
	cr_assert(strstr(body, "requires the originator role; partner's roles: seller"), "%s", body);
	wm_proc_cleanup(&p);
}

WM_TEST(error_details, publish_gate_names_the_missing_energy_member)
{
	struct wm_proc p;
	wm_proc_init(&p);
	cr_assert_eq(wm_start(&p, NULL, NULL), 0);
	char body[8192], prd[64], id[64], path[128], req[1400];
	cr_assert_eq(call(p.port, "POST", "/v1/producers", NULL, "{\"name\":\"Domaine Gate\"}", body, sizeof(body)), 201);
	member(body, "id", prd, sizeof(prd));
	/* every particular but the energy in kcal */
	const char *const variants[][2] = {
		{"\"energy_kj_per_100ml\":297", "energy_kcal_per_100ml"},
		{"\"energy_kcal_per_100ml\":71", "energy_kj_per_100ml"},
	};
	for (int v = 0; v < 2; v++) {
		snprintf(req, sizeof(req),
			 "{\"title\":\"Gate %d\",\"producer\":\"%s\",\"vintage\":%d,\"abv\":13,\"volume_in_liters\":0.75,"
			 "\"colour\":\"red\",\"category\":\"wine\",\"country\":\"FR\",\"region\":\"Bourgogne\","
			 "\"bottler\":{\"name\":\"Domaine Test\",\"address\":\"21000 Dijon, France\"},\"lot_number\":\"L1\","
			 "\"allergens\":[\"sulphites\"],\"ingredients\":\"grapes, preservative: sulphites\",%s}",
			 v, prd, 2020 + v, variants[v][0]); /* another vintage: not a duplicate */
		cr_assert_eq(call(p.port, "POST", "/v1/wines", NULL, req, body, sizeof(body)), 201, "%s", body);
		member(body, "id", id, sizeof(id));
		snprintf(path, sizeof(path), "/v1/wines/%s/publish", id);
		cr_assert_eq(call(p.port, "POST", path, NULL, NULL, body, sizeof(body)), 422, "%s", body);
		const char *given = v == 0 ? "energy_kj_per_100ml" : "energy_kcal_per_100ml";
		char want[96], wrong[96];
		snprintf(want, sizeof(want), "\"field\":\"%s\"", variants[v][1]);
		snprintf(wrong, sizeof(wrong), "\"field\":\"%s\"", given);
		cr_assert(strstr(body, want), "the missing %s is not named: %s", variants[v][1], body);
		cr_assert(!strstr(body, wrong), "the given %s is named: %s", given, body);
		int n = 0;
		for (const char *f = strstr(body, "\"field\":"); f; f = strstr(f + 1, "\"field\":"))
			n++;
		cr_assert_eq(n, 1, "one error only: %s", body);
	}
	wm_proc_cleanup(&p);
}
