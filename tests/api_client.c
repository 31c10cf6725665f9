/*
 * api_client.c -- the JSON-over-HTTP helpers the integration tests share
 * (see api_client.h): one request as a given key, the parsed body, the
 * expected status and problem code, string members, listed field errors.
 * jansson is used so the tests read responses independently of the
 * server's own JSON code.
 */
#include "tests/api_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness.h"
#include "tests/wm_test.h"

void tc_start(struct wm_proc *p)
{
	wm_proc_init(p);
	cr_assert_eq(wm_start(p, NULL, NULL), 0, "wm-shard did not start (logs in %s)", p->dir);
}

static tc_signer_fn signer;

void tc_set_signer(tc_signer_fn fn) { signer = fn; }

json_t *tc_call(int port, const char *method, const char *path, const char *key, const char *body, int *st)
{
	char h[512] = "";
	size_t hl = 0;
	if (key)
		hl = (size_t)snprintf(h, sizeof(h), "Authorization: Bearer %s\r\n", key);
	if (signer)
		signer(method, path, body, h + hl, sizeof(h) - hl);
	struct http_resp r;
	cr_assert_eq(http_do(port, method, path, h[0] ? h : NULL, body, &r), 0, "%s %s: no response", method, path);
	*st = r.status;
	json_error_t e;
	json_t *j = json_loadb(r.body, r.body_len, 0, &e);
	cr_assert_not_null(j, "%s %s: body is not JSON (%d): %s", method, path, r.status, r.body);
	http_resp_free(&r);
	return j;
}

json_t *tc_expect(int port, const char *method, const char *path, const char *key, const char *body, int want)
{
	int st;
	json_t *j = tc_call(port, method, path, key, body, &st);
	if (st != want) {
		char *dump = json_dumps(j, JSON_COMPACT);
		cr_assert_eq(st, want, "%s %s %s: got %d, want %d: %s", method, path, body ? body : "", st, want, dump);
		free(dump);
	}
	return j;
}

void tc_expect_code(int port, const char *method, const char *path, const char *key, const char *body, int want,
			const char *code)
{
	json_t *j = tc_expect(port, method, path, key, body, want);
	const char *got = json_string_value(json_object_get(j, "code"));
	cr_assert(got && !strcmp(got, code), "%s %s: code %s, want %s", method, path, got ? got : "(none)", code);
	json_decref(j);
}

const char *tc_jstr(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

int tc_lists_error(json_t *problem, const char *field, const char *rule)
{
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(problem, "errors"), i, e)
	{
		if (!strcmp(tc_jstr(e, "field"), field) && !strcmp(tc_jstr(e, "rule"), rule))
			return 1;
	}
	return 0;
}

void tc_partner_live(int port, const char *name, const char *country, const char *roles, const char *extra, char *out)
{
	char body[768], path[128];
	/* a sandbox payout account unless the test sets its own (or none: "payout_account_id":null) */
	const char *acct = extra && strstr(extra, "payout_account_id") ? "" : ",\"payout_provider\":\"sandbox\",\"payout_account_id\":\"acct_test\"";
	snprintf(body, sizeof(body), "{\"legal_name\":\"%s\",\"country\":\"%s\",\"roles\":%s%s%s%s}", name, country, roles,
		 extra ? "," : "", extra ? extra : "", acct);
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

void tc_key_for(int port, const char *entity, char *out)
{
	char body[128];
	snprintf(body, sizeof(body), "{\"entity_id\":\"%s\"}", entity);
	json_t *j = tc_expect(port, "POST", "/api/keys", NULL, body, 201);
	snprintf(out, 128, "%s", tc_jstr(j, "key"));
	json_decref(j);
}

void tc_pub_wine_of(int port, const char *title, const char *estate, const char *category, char *out)
{
	char body[1400], prd[64], path[128];
	if (estate)
		snprintf(body, sizeof(body), "{\"name\":\"Domaine %s\",\"partner_id\":\"%s\"}", title, estate);
	else
		snprintf(body, sizeof(body), "{\"name\":\"Domaine %s\"}", title);
	json_t *j = tc_expect(port, "POST", "/v1/producers", NULL, body, 201);
	snprintf(prd, sizeof(prd), "%s", tc_jstr(j, "id"));
	json_decref(j);
	snprintf(body, sizeof(body),
		 "{\"title\":\"%s\",\"producer\":\"%s\",\"vintage\":2020,\"abv\":13,\"volume_in_liters\":0.75,"
		 "\"colour\":\"red\",\"category\":\"%s\",\"country\":\"FR\",\"region\":\"Bourgogne\","
		 "\"bottler\":{\"name\":\"Domaine Test\",\"address\":\"21000 Dijon, France\"},\"lot_number\":\"L2020-1\","
		 "\"allergens\":[\"sulphites\"],\"ingredients\":\"grapes, preservative: sulphites\","
		 "\"energy_kj_per_100ml\":297,\"energy_kcal_per_100ml\":71%s}",
		 title, prd, category, strcmp(category, "wine") ? ",\"dosage_class\":\"brut\"" : "");
	j = tc_expect(port, "POST", "/v1/wines", NULL, body, 201);
	snprintf(out, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/wines/%s/publish", out);
	json_decref(tc_expect(port, "POST", path, NULL, NULL, 200));
}

void tc_pub_wine(int port, const char *title, char *out) { tc_pub_wine_of(port, title, NULL, "wine", out); }

/* POST an offer: defaults for the required members that `members` does not
 * give (the parser refuses duplicate keys); id into out when created. */
json_t *tc_offer(int port, const char *key, const char *wine, const char *members, int want, char *out)
{
	static const char *const defaults[][2] = {{"seller_price", "12.50"}, {"currency", "\"EUR\""},
						  {"qty_available", "60"}, {"incoterm", "\"FCA\""}};
	char body[4096], probe[64];
	int n = snprintf(body, sizeof(body), "{\"wine_id\":\"%s\"", wine);
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
		snprintf(probe, sizeof(probe), "\"%s\":", defaults[i][0]);
		if (!members || !strstr(members, probe))
			n += snprintf(body + n, sizeof(body) - (size_t)n, ",\"%s\":%s", defaults[i][0], defaults[i][1]);
	}
	snprintf(body + n, sizeof(body) - (size_t)n, "%s%s}", members && members[0] ? "," : "", members ? members : "");
	json_t *j = tc_expect(port, "POST", "/v1/offers", key, body, want);
	if (out)
		snprintf(out, 64, "%s", tc_jstr(j, "id") ? tc_jstr(j, "id") : "");
	return j;
}

size_t tc_count_events(int port, const char *type, const char *key)
{
	char path[128];
	snprintf(path, sizeof(path), "/v1/events?type=%s&page_size=200", type);
	json_t *j = tc_expect(port, "GET", path, key, NULL, 200);
	size_t n = json_array_size(json_object_get(j, "data"));
	json_decref(j);
	return n;
}
