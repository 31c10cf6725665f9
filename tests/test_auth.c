/*
 * test_auth.c -- identity and access against real wm-shard processes:
 * minting (plaintext once, only a hash in the WAL and snapshots), tampered,
 * truncated, unknown, revoked and expired keys, every route without a key
 * and with a key lacking its scope, another entity's rows, the action
 * policy, per-key rate limits and the per-entity record quota, bootstrap.
 */
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "engine/edge/route.h"
#include "snapshot/snapshot.h"
#include "tests/api_client.h"
#include "tests/data_scan.h"
#include "tests/harness.h"
#include "tests/wm_test.h"
#include "wal/wal.h"

/* ---- helpers ------------------------------------------------------------ */

static json_t *body_json(const struct http_resp *r)
{
	json_error_t e;
	json_t *j = json_loadb(r->body, r->body_len, 0, &e);
	cr_assert_not_null(j, "response body is not JSON: %s\n%s", e.text, r->body);
	return j;
}

static void start_or_fail(struct wm_proc *p, const char *const *args, const char *const *env)
{
	cr_assert_eq(wm_start(p, args, env), 0, "wm-shard did not start (logs in %s)", p->dir);
}

/* One request with an explicit key ("none" = no Authorization header). */
static int req(int port, const char *method, const char *path, const char *key, const char *body,
	       struct http_resp *r)
{
	char h[512];
	if (!strcmp(key, "none"))
		snprintf(h, sizeof(h), "Authorization: none\r\n");
	else
		snprintf(h, sizeof(h), "Authorization: Bearer %s\r\n", key);
	return http_do(port, method, path, h, body, r);
}

/* status of a request; the body's "code" (if a problem) into code. */
static int status_code(int port, const char *method, const char *path, const char *key, const char *body,
		       char *code, size_t code_size)
{
	struct http_resp r;
	cr_assert_eq(req(port, method, path, key, body, &r), 0, "%s %s: no response", method, path);
	if (code) {
		code[0] = 0;
		json_error_t e;
		json_t *j = json_loadb(r.body, r.body_len, 0, &e);
		if (j && tc_jstr(j, "code"))
			snprintf(code, code_size, "%s", tc_jstr(j, "code"));
		json_decref(j);
	}
	int st = r.status;
	http_resp_free(&r);
	return st;
}

/* Create a partner as the operator; returns its id in out. */
static void create_partner(int port, const char *name, const char *roles_json, const char *status, char *out)
{
	char body[512];
	snprintf(body, sizeof(body), "{\"legal_name\":\"%s\",\"country\":\"FR\",\"roles\":%s%s}", name, roles_json,
		 strstr(roles_json, "originator") ? ",\"originator_type\":\"estate\"" : "");
	struct http_resp r;
	cr_assert_eq(http_do(port, "POST", "/v1/partners", NULL, body, &r), 0);
	cr_assert_eq(r.status, 201, "%s", r.body);
	json_t *j = body_json(&r);
	snprintf(out, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
	http_resp_free(&r);
	/* walk the onboarding steps up to the wanted status */
	static const char *const steps[] = {"verified", "roles_enabled", "configured", "integrated", "live", NULL};
	char path[128];
	snprintf(path, sizeof(path), "/v1/partners/%s", out);
	for (int i = 0; status && strcmp(status, "applied") && steps[i]; i++) {
		snprintf(body, sizeof(body), "{\"status\":\"%s\"}", steps[i]);
		cr_assert_eq(http_do(port, "PATCH", path, NULL, body, &r), 0);
		cr_assert_eq(r.status, 200, "%s", r.body);
		http_resp_free(&r);
		if (!strcmp(steps[i], status))
			break;
	}
}

/* Mint a key with the operator key; body is the request JSON.  Returns the
 * plaintext in key_out and the id in id_out. */
static void mint(int port, const char *body, char *key_out, char *id_out)
{
	struct http_resp r;
	cr_assert_eq(http_do(port, "POST", "/api/keys", NULL, body, &r), 0);
	cr_assert_eq(r.status, 201, "mint %s: %s", body, r.body);
	json_t *j = body_json(&r);
	cr_assert_not_null(tc_jstr(j, "key"));
	snprintf(key_out, 128, "%s", tc_jstr(j, "key"));
	if (id_out)
		snprintf(id_out, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
	http_resp_free(&r);
}

static void mint_for(int port, const char *entity, const char *extra, char *key_out, char *id_out)
{
	char body[512];
	snprintf(body, sizeof(body), "{\"entity_id\":\"%s\"%s%s}", entity, extra ? "," : "", extra ? extra : "");
	mint(port, body, key_out, id_out);
}

/* An independent implementation of the documented key format: prefix, 30
 * base62 characters, 6 base62 characters of XXH32 over the first 36. */
static void make_key(const char *prefix, const char *random30, char out[43])
{
	static const char b62[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
	snprintf(out, 43, "%s%s", prefix, random30);
	uint32_t h = XXH32(out, 36, 0);
	for (int i = 5; i >= 0; i--) {
		out[36 + i] = b62[h % 62];
		h /= 62;
	}
	out[42] = 0;
}

/* ---- keys: minting, storage --------------------------------------------- */

static void sha256_hex(const char *s, char out[65])
{
	unsigned char d[32];
	unsigned int n = 0;
	cr_assert(EVP_Digest(s, strlen(s), d, &n, EVP_sha256(), NULL));
	for (int i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

WM_TEST(auth, minted_key_is_shown_once_and_only_its_hash_is_stored)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL, NULL);
	char ptn[64], key[128], kid[64];
	create_partner(p.port, "Hash SAS", "[\"seller\"]", "live", ptn);
	mint_for(p.port, ptn, "\"name\":\"shop backend\"", key, kid);
	cr_assert_eq(strlen(key), 42);
	cr_assert(!strncmp(key, "wm_sk_", 6));
	/* the key works, and no read ever shows it again */
	struct http_resp r;
	char path[160];
	snprintf(path, sizeof(path), "/api/keys/%s", kid);
	cr_assert_eq(req(p.port, "GET", path, key, NULL, &r), 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_null(strstr(r.body, key + 6), "detail read shows the secret: %s", r.body);
	json_t *j = body_json(&r);
	cr_assert_null(json_object_get(j, "key"));
	cr_assert_null(json_object_get(j, "key_hash"));
	cr_assert(!strncmp(tc_jstr(j, "prefix"), key, 12), "display prefix is the key's first 12 characters");
	json_decref(j);
	http_resp_free(&r);
	cr_assert_eq(http_do(p.port, "GET", "/api/keys?page_size=200", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200);
	cr_assert_null(strstr(r.body, key + 6));
	cr_assert_null(strstr(r.body, "key_hash"));
	http_resp_free(&r);
	cr_assert_eq(http_do(p.port, "GET", "/v1/events?page_size=200", NULL, NULL, &r), 0);
	cr_assert_null(strstr(r.body, key + 6), "an event carries the secret");
	http_resp_free(&r);
	cr_assert_eq(http_do(p.port, "POST", "/v1/admin/snapshots", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 202, "%s", r.body);
	http_resp_free(&r);
	usleep(500 * 1000);
	cr_assert_eq(wm_stop(&p), 0);
	/* on disk: the SHA-256 of the key, never the key (nor the bootstrap key) */
	char hx[65], needle[80];
	sha256_hex(key, hx);
	snprintf(needle, sizeof(needle), "sha256:%s", hx);
	int in_wal, in_snap;
	data_scan(p.data_dir, key + 6, &in_wal, &in_snap);
	cr_assert(!in_wal && !in_snap, "plaintext found on disk (wal %d, snapshot %d)", in_wal, in_snap);
	data_scan(p.data_dir, WM_TEST_KEY, &in_wal, &in_snap);
	cr_assert(!in_wal && !in_snap, "bootstrap key found on disk");
	data_scan(p.data_dir, needle, &in_wal, &in_snap);
	cr_assert(in_wal && in_snap, "the key's SHA-256 is what is stored (wal %d, snapshot %d)", in_wal, in_snap);
	/* and the log never printed it */
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "grep -q -r '%s' %s/*.log", key + 6, p.dir);
	cr_assert_neq(system(cmd), 0, "a log line contains the key");
	/* the key still works after a restart (rebuilt from the log) */
	start_or_fail(&p, NULL, NULL);
	cr_assert_eq(status_code(p.port, "GET", path, key, NULL, NULL, 0), 200);
	wm_proc_cleanup(&p);
}

WM_TEST(auth, bad_keys_get_401_saying_why)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL, NULL);
	char ptn[64], key[128], kid[64], code[64];
	create_partner(p.port, "Bad Keys SARL", "[\"seller\"]", "live", ptn);
	mint_for(p.port, ptn, NULL, key, kid);
	char path[160];
	snprintf(path, sizeof(path), "/v1/partners/%s", ptn);
	cr_assert_eq(status_code(p.port, "GET", path, key, NULL, code, sizeof(code)), 200);

	cr_assert_eq(status_code(p.port, "GET", path, "none", NULL, code, sizeof(code)), 401);
	cr_assert_str_eq(code, "missing_credentials");
	struct http_resp r;
	cr_assert_eq(http_do(p.port, "GET", path, "Authorization: Basic dXNlcjpwYXNz\r\n", NULL, &r), 0);
	cr_assert_eq(r.status, 401);
	cr_assert(strstr(r.body, "malformed_authorization"), "%s", r.body);
	char www[256];
	cr_assert_gt(http_header(&r, "WWW-Authenticate", www, sizeof(www)), 0, "401 names the scheme");
	cr_assert(strstr(www, "Bearer"), "%s", www);
	http_resp_free(&r);

	char bad[200];
	/* one character changed: the checksum catches it before any lookup */
	snprintf(bad, sizeof(bad), "%s", key);
	bad[20] = bad[20] == 'a' ? 'b' : 'a';
	cr_assert_eq(status_code(p.port, "GET", path, bad, NULL, code, sizeof(code)), 401);
	cr_assert_str_eq(code, "malformed_key");
	/* truncated, padded, wrong kind prefix, characters outside base62 */
	snprintf(bad, sizeof(bad), "%.41s", key);
	cr_assert_eq(status_code(p.port, "GET", path, bad, NULL, code, sizeof(code)), 401);
	cr_assert_str_eq(code, "malformed_key");
	snprintf(bad, sizeof(bad), "%sA", key);
	cr_assert_eq(status_code(p.port, "GET", path, bad, NULL, code, sizeof(code)), 401);
	cr_assert_str_eq(code, "malformed_key");
	snprintf(bad, sizeof(bad), "wm_xk_%s", key + 6);
	cr_assert_eq(status_code(p.port, "GET", path, bad, NULL, code, sizeof(code)), 401);
	cr_assert_str_eq(code, "malformed_key");
	snprintf(bad, sizeof(bad), "%s", key);
	bad[10] = '-';
	cr_assert_eq(status_code(p.port, "GET", path, bad, NULL, code, sizeof(code)), 401);
	cr_assert_str_eq(code, "malformed_key");
	cr_assert_eq(status_code(p.port, "GET", path, "short", NULL, code, sizeof(code)), 401);
	cr_assert_str_eq(code, "malformed_key");
	/* well-formed (valid checksum) but never minted */
	make_key("wm_sk_", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", bad);
	cr_assert_eq(status_code(p.port, "GET", path, bad, NULL, code, sizeof(code)), 401);
	cr_assert_str_eq(code, "unknown_key");
	/* a minted key re-encoded by the test's own implementation still works:
	 * the format is what the documentation says */
	char copy[31], again[43];
	memcpy(copy, key + 6, 30);
	copy[30] = 0;
	make_key("wm_sk_", copy, again);
	cr_assert_str_eq(again, key);

	/* revoked: 401 at once; revoking again answers the same key */
	char kpath[160];
	snprintf(kpath, sizeof(kpath), "/api/keys/%s/revoke", kid);
	cr_assert_eq(status_code(p.port, "POST", kpath, WM_TEST_KEY, NULL, code, sizeof(code)), 200);
	cr_assert_eq(status_code(p.port, "GET", path, key, NULL, code, sizeof(code)), 401);
	cr_assert_str_eq(code, "key_revoked");
	cr_assert_eq(status_code(p.port, "POST", kpath, WM_TEST_KEY, NULL, code, sizeof(code)), 200);
	snprintf(kpath, sizeof(kpath), "/api/keys/%s", kid);
	cr_assert_eq(status_code(p.port, "PATCH", kpath, WM_TEST_KEY, "{\"name\":\"x\"}", code, sizeof(code)), 409);
	cr_assert_str_eq(code, "key_revoked");

	/* expired: a key given a one-second life stops working */
	char ekey[128], eid[64], extra[160];
	char ts[40];
	time_t t = time(NULL) + 2;
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
	snprintf(extra, sizeof(extra), "\"expires_at\":\"%s\"", ts);
	mint_for(p.port, ptn, extra, ekey, eid);
	cr_assert_eq(status_code(p.port, "GET", path, ekey, NULL, code, sizeof(code)), 200);
	sleep(3);
	cr_assert_eq(status_code(p.port, "GET", path, ekey, NULL, code, sizeof(code)), 401);
	cr_assert_str_eq(code, "key_expired");
	/* an expiry in the past, or not a timestamp, is refused at minting */
	snprintf(extra, sizeof(extra), "{\"entity_id\":\"%s\",\"expires_at\":\"2020-01-01T00:00:00Z\"}", ptn);
	cr_assert_eq(status_code(p.port, "POST", "/api/keys", WM_TEST_KEY, extra, code, sizeof(code)), 422);
	snprintf(extra, sizeof(extra), "{\"entity_id\":\"%s\",\"expires_at\":\"tomorrow\"}", ptn);
	cr_assert_eq(status_code(p.port, "POST", "/api/keys", WM_TEST_KEY, extra, code, sizeof(code)), 422);
	wm_proc_cleanup(&p);
}

/* ---- every route: no key, wrong scope ----------------------------------- */

static void route_path(const struct route *r, char *out, size_t size)
{
	size_t o = 0;
	for (const char *s = r->pattern; *s && o + 32 < size;) {
		if (*s == '{') {
			o += (size_t)snprintf(out + o, size - o, "ptn_01M7YBCE3F0000ZA4B9R");
			s = strchr(s, '}') + 1;
		} else {
			out[o++] = *s++;
		}
	}
	out[o] = 0;
}

static const char *method_str(enum http_method m)
{
	static const char *const n[] = {"?", "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"};
	return n[m];
}

WM_TEST(auth, every_route_needs_its_key_and_scope)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL, NULL);
	char ptn[64], key[128], code[64];
	create_partner(p.port, "Scopes GmbH", "[\"originator\",\"seller\"]", "live", ptn);
	/* a key whose only scope is read:webhooks: every other route refuses it */
	mint_for(p.port, ptn, "\"scopes\":[\"read:webhooks\"]", key, NULL);
	int checked = 0, public_routes = 0;
	for (const struct route *r = api_route_table(); r->pattern; r++) {
		char path[256];
		route_path(r, path, sizeof(path));
		const char *body = r->method == HTTP_M_GET ? NULL : "{}";
		int st = status_code(p.port, method_str(r->method), path, "none", body, code, sizeof(code));
		if (r->scope == SC_PUBLIC) {
			/* public reads answer; a public write (a signed upload URL) has
			 * its own credential and refuses a request without it, but
			 * never asks for a key */
			if (r->method == HTTP_M_GET)
				cr_assert_eq(st, 200, "public %s %s answers without a key (got %d)",
					     method_str(r->method), r->pattern, st);
			else
				cr_assert(st != 401 && strcmp(code, "missing_credentials"),
					  "public %s %s asks for a key (%d %s)", method_str(r->method), r->pattern, st,
					  code);
			public_routes++;
			continue;
		}
		cr_assert_eq(st, 401, "%s %s without a key: %d", method_str(r->method), r->pattern, st);
		cr_assert_str_eq(code, "missing_credentials");
		if (r->scope == SC_READ_WEBHOOKS) {
			/* the key's own scope (the webhook routes of engine/webhooks/):
			 * the 401 above is what this route contributes */
			checked++;
			continue;
		}
		st = status_code(p.port, method_str(r->method), path, key, body, code, sizeof(code));
		cr_assert_eq(st, 403, "%s %s with a key lacking %s: %d", method_str(r->method), r->pattern,
			     scope_defs[r->scope].name, st);
		cr_assert_str_eq(code, "insufficient_scope");
		checked++;
	}
	cr_assert_geq(public_routes, 3, "/healthz, /readyz, /v1/openapi.json");
	cr_assert_gt(checked, 10);
	/* operator routes refuse a partner key holding every partner scope */
	char full[128];
	mint_for(p.port, ptn, NULL, full, NULL);
	static const char *const op_routes[][2] = {
		{"GET", "/metrics"}, {"GET", "/v1/admin/snapshots"}, {"POST", "/v1/admin/snapshots"}, {"GET", "/v1/audit"}};
	for (size_t i = 0; i < sizeof(op_routes) / sizeof(op_routes[0]); i++) {
		cr_assert_eq(status_code(p.port, op_routes[i][0], op_routes[i][1], full, NULL, code, sizeof(code)), 403,
			     "%s %s", op_routes[i][0], op_routes[i][1]);
		cr_assert_str_eq(code, "insufficient_scope");
	}
	cr_assert_eq(status_code(p.port, "GET", "/metrics", WM_TEST_KEY, NULL, code, sizeof(code)), 200);
	wm_proc_cleanup(&p);
}

/* ---- entities: ownership, policy, scopes at minting ---------------------- */

WM_TEST(auth, an_entity_sees_and_changes_only_its_own_rows)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL, NULL);
	char a[64], b[64], ka[128], kb[128], kbid[64], code[64], path[200];
	create_partner(p.port, "Seller A", "[\"seller\"]", "live", a);
	create_partner(p.port, "Seller B", "[\"seller\"]", "live", b);
	mint_for(p.port, a, NULL, ka, NULL);
	mint_for(p.port, b, NULL, kb, kbid);
	/* B's partner record, B's key: 404 for A, exactly as an unknown id */
	snprintf(path, sizeof(path), "/v1/partners/%s", b);
	cr_assert_eq(status_code(p.port, "GET", path, ka, NULL, code, sizeof(code)), 404);
	cr_assert_str_eq(code, "not_found");
	cr_assert_eq(status_code(p.port, "GET", "/v1/partners/ptn_01M7YBCE3F0000ZA4B9Z", ka, NULL, code,
				 sizeof(code)), 404);
	cr_assert_eq(status_code(p.port, "PATCH", path, ka, "{\"legal_name\":\"Mine now\"}", code, sizeof(code)), 404);
	snprintf(path, sizeof(path), "/api/keys/%s", kbid);
	cr_assert_eq(status_code(p.port, "GET", path, ka, NULL, code, sizeof(code)), 404);
	snprintf(path, sizeof(path), "/api/keys/%s/revoke", kbid);
	cr_assert_eq(status_code(p.port, "POST", path, ka, NULL, code, sizeof(code)), 404);
	char body[200];
	snprintf(body, sizeof(body), "{\"entity_id\":\"%s\"}", b);
	cr_assert_eq(status_code(p.port, "POST", "/api/keys", ka, body, code, sizeof(code)), 404,
		     "minting for another entity");
	/* lists: only A's rows */
	struct http_resp r;
	cr_assert_eq(req(p.port, "GET", "/v1/partners", ka, NULL, &r), 0);
	json_t *j = body_json(&r);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 1, "%s", r.body);
	cr_assert_str_eq(tc_jstr(json_array_get(json_object_get(j, "data"), 0), "id"), a);
	json_decref(j);
	http_resp_free(&r);
	snprintf(path, sizeof(path), "/api/keys?entity_id=%s", b);
	cr_assert_eq(req(p.port, "GET", path, ka, NULL, &r), 0);
	j = body_json(&r);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 0, "another entity's keys: %s", r.body);
	json_decref(j);
	http_resp_free(&r);
	cr_assert_eq(req(p.port, "GET", "/api/keys", ka, NULL, &r), 0);
	j = body_json(&r);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 1, "own keys only: %s", r.body);
	json_decref(j);
	http_resp_free(&r);
	cr_assert_eq(req(p.port, "GET", "/v1/events?page_size=200", ka, NULL, &r), 0);
	j = body_json(&r);
	size_t n = json_array_size(json_object_get(j, "data"));
	cr_assert_gt(n, 0);
	for (size_t i = 0; i < n; i++) {
		json_t *scope = json_object_get(json_array_get(json_object_get(j, "data"), i), "scope");
		cr_assert_str_eq(tc_jstr(scope, "entity_id"), a, "an event of another entity leaked: %s", r.body);
	}
	json_decref(j);
	http_resp_free(&r);
	/* own record: contact yes; roles and status are the platform's */
	snprintf(path, sizeof(path), "/v1/partners/%s", a);
	cr_assert_eq(status_code(p.port, "PATCH", path, ka, "{\"legal_name\":\"Seller A SAS\"}", code, sizeof(code)), 200);
	cr_assert_eq(status_code(p.port, "PATCH", path, ka, "{\"roles\":[\"seller\",\"originator\"]}", code,
				 sizeof(code)), 403);
	cr_assert_str_eq(code, "operator_only_field");
	cr_assert_eq(status_code(p.port, "PATCH", path, ka, "{\"status\":\"suspended\"}", code, sizeof(code)), 403);
	wm_proc_cleanup(&p);
}

WM_TEST(auth, actions_follow_roles_and_status)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL, NULL);
	char ap[64], ka[128], code[64], path[200];
	create_partner(p.port, "Applied Only", "[\"seller\"]", "verified", ap);
	mint_for(p.port, ap, NULL, ka, NULL);
	/* creating partners is the platform's (onboarding step 1 via the portal) */
	cr_assert_eq(status_code(p.port, "POST", "/v1/partners", ka, "{\"legal_name\":\"X\",\"country\":\"FR\"}", code,
				 sizeof(code)), 403);
	cr_assert_str_eq(code, "action_not_allowed");
	/* verified: may mint its own keys */
	cr_assert_eq(status_code(p.port, "POST", "/api/keys", ka, "{\"name\":\"second\"}", code, sizeof(code)), 201);
	/* suspended: nothing at all, with a code that says so */
	snprintf(path, sizeof(path), "/v1/partners/%s", ap);
	cr_assert_eq(status_code(p.port, "PATCH", path, WM_TEST_KEY, "{\"status\":\"suspended\"}", code, sizeof(code)),
		     200);
	cr_assert_eq(status_code(p.port, "GET", path, ka, NULL, code, sizeof(code)), 403);
	cr_assert_str_eq(code, "entity_suspended");
	cr_assert_eq(status_code(p.port, "POST", "/api/keys", ka, "{}", code, sizeof(code)), 403);
	/* back to verified: works again */
	cr_assert_eq(status_code(p.port, "PATCH", path, WM_TEST_KEY, "{\"status\":\"verified\"}", code, sizeof(code)),
		     200);
	cr_assert_eq(status_code(p.port, "GET", path, ka, NULL, code, sizeof(code)), 200);
	/* an applied (unverified) partner may read itself but not mint keys */
	char fresh[64], kf[128];
	create_partner(p.port, "Fresh", "[]", "applied", fresh);
	mint_for(p.port, fresh, NULL, kf, NULL);
	snprintf(path, sizeof(path), "/v1/partners/%s", fresh);
	cr_assert_eq(status_code(p.port, "GET", path, kf, NULL, code, sizeof(code)), 200);
	cr_assert_eq(status_code(p.port, "POST", "/api/keys", kf, "{}", code, sizeof(code)), 403);
	cr_assert_str_eq(code, "action_not_allowed");
	wm_proc_cleanup(&p);
}

WM_TEST(auth, minting_never_widens_scopes)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL, NULL);
	char ptn[64], narrow[128], code[64], body[300];
	create_partner(p.port, "Narrow", "[\"seller\"]", "live", ptn);
	/* read:network and operator are never issued to partner keys */
	snprintf(body, sizeof(body), "{\"entity_id\":\"%s\",\"scopes\":[\"read:network\"]}", ptn);
	cr_assert_eq(status_code(p.port, "POST", "/api/keys", WM_TEST_KEY, body, code, sizeof(code)), 422);
	snprintf(body, sizeof(body), "{\"entity_id\":\"%s\",\"scopes\":[\"operator\"]}", ptn);
	cr_assert_eq(status_code(p.port, "POST", "/api/keys", WM_TEST_KEY, body, code, sizeof(code)), 422);
	/* publishable keys: storefront reads only */
	snprintf(body, sizeof(body), "{\"entity_id\":\"%s\",\"kind\":\"publishable\",\"scopes\":[\"write:listings\"]}", ptn);
	cr_assert_eq(status_code(p.port, "POST", "/api/keys", WM_TEST_KEY, body, code, sizeof(code)), 422);
	/* a publishable key is scoped to a sales channel of its own entity */
	char pk[128], chn[200];
	snprintf(body, sizeof(body), "{\"seller_id\":\"%s\",\"name\":\"web-fr\",\"kind\":\"webshop_connect\"}", ptn);
	struct http_resp cr;
	cr_assert_eq(http_do(p.port, "POST", "/v1/sales-channels", NULL, body, &cr), 0);
	cr_assert_eq(cr.status, 201, "%s", cr.body);
	json_t *cj = body_json(&cr);
	snprintf(chn, sizeof(chn), "\"kind\":\"publishable\",\"channel_id\":\"%s\"", tc_jstr(cj, "id"));
	json_decref(cj);
	http_resp_free(&cr);
	mint_for(p.port, ptn, chn, pk, NULL);
	cr_assert(!strncmp(pk, "wm_pk_", 6), "%s", pk);
	cr_assert_eq(status_code(p.port, "GET", "/v1/partners", pk, NULL, code, sizeof(code)), 403,
		     "a publishable key holds no partner scope");
	/* unknown scope, duplicate */
	snprintf(body, sizeof(body), "{\"entity_id\":\"%s\",\"scopes\":[\"read:everything\",\"read:orders\",\"read:orders\"]}", ptn);
	struct http_resp r;
	cr_assert_eq(http_do(p.port, "POST", "/api/keys", NULL, body, &r), 0);
	cr_assert_eq(r.status, 422);
	cr_assert(strstr(r.body, "scopes[0]") && strstr(r.body, "scopes[2]"), "every failing entry: %s", r.body);
	http_resp_free(&r);
	/* a key cannot grant what it does not hold */
	mint_for(p.port, ptn, "\"scopes\":[\"write:keys\",\"read:keys\"]", narrow, NULL);
	cr_assert_eq(status_code(p.port, "POST", "/api/keys", narrow, "{\"scopes\":[\"read:orders\"]}", code,
				 sizeof(code)), 422);
	struct http_resp m;
	cr_assert_eq(req(p.port, "POST", "/api/keys", narrow, "{}", &m), 0);
	cr_assert_eq(m.status, 201, "%s", m.body);
	json_t *j = body_json(&m);
	cr_assert_eq(json_array_size(json_object_get(j, "scopes")), 2, "defaults are capped by the minter: %s", m.body);
	json_decref(j);
	http_resp_free(&m);
	/* rate limits are the operators' to set */
	cr_assert_eq(status_code(p.port, "POST", "/api/keys", narrow, "{\"rate_limit\":{\"requests_per_second\":5}}",
				 code, sizeof(code)), 422);
	wm_proc_cleanup(&p);
}

/* ---- limits ------------------------------------------------------------- */

WM_TEST(auth, rate_limit_gives_429_with_retry_after)
{
	struct wm_proc p;
	wm_proc_init(&p);
	const char *args[] = {"--key-rate-rps", "1", "--key-rate-burst", "3", NULL};
	start_or_fail(&p, args, NULL);
	char ptn[64], key[128];
	/* the operator key is limited too: two requests of its burst of 3 */
	create_partner(p.port, "Rate", "[\"seller\"]", NULL, ptn);
	mint_for(p.port, ptn, NULL, key, NULL);
	char path[160];
	snprintf(path, sizeof(path), "/v1/partners/%s", ptn);
	char remaining[3][128];
	for (int i = 0; i < 3; i++) {
		struct http_resp r;
		cr_assert_eq(req(p.port, "GET", path, key, NULL, &r), 0);
		cr_assert_eq(r.status, 200, "request %d within the burst: %s", i + 1, r.body);
		cr_assert_gt(http_header(&r, "RateLimit", remaining[i], sizeof(remaining[i])), 0);
		char pol[128];
		cr_assert_gt(http_header(&r, "RateLimit-Policy", pol, sizeof(pol)), 0);
		cr_assert(strstr(pol, "q=3"), "%s", pol);
		http_resp_free(&r);
	}
	cr_assert(strstr(remaining[0], "r=2") && strstr(remaining[2], "r=0"), "%s / %s", remaining[0], remaining[2]);
	struct http_resp r;
	cr_assert_eq(req(p.port, "GET", path, key, NULL, &r), 0);
	cr_assert_eq(r.status, 429, "%s", r.body);
	cr_assert(strstr(r.body, "rate_limited"), "%s", r.body);
	char ra[32];
	cr_assert_gt(http_header(&r, "Retry-After", ra, sizeof(ra)), 0);
	cr_assert_geq(atoi(ra), 1);
	http_resp_free(&r);
	wm_proc_cleanup(&p);
}

WM_TEST(auth, per_key_rate_set_at_minting)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL, NULL);
	char ptn[64], key[128], code[64], path[160];
	create_partner(p.port, "Slow", "[\"seller\"]", "live", ptn);
	mint_for(p.port, ptn, "\"rate_limit\":{\"requests_per_second\":1,\"burst\":2}", key, NULL);
	snprintf(path, sizeof(path), "/v1/partners/%s", ptn);
	cr_assert_eq(status_code(p.port, "GET", path, key, NULL, code, sizeof(code)), 200);
	cr_assert_eq(status_code(p.port, "GET", path, key, NULL, code, sizeof(code)), 200);
	cr_assert_eq(status_code(p.port, "GET", path, key, NULL, code, sizeof(code)), 429);
	cr_assert_str_eq(code, "rate_limited");
	/* other keys are not affected */
	cr_assert_eq(status_code(p.port, "GET", path, WM_TEST_KEY, NULL, code, sizeof(code)), 200);
	/* bounds */
	char body[200];
	snprintf(body, sizeof(body), "{\"entity_id\":\"%s\",\"rate_limit\":{\"requests_per_second\":1000001}}", ptn);
	cr_assert_eq(status_code(p.port, "POST", "/api/keys", WM_TEST_KEY, body, code, sizeof(code)), 422);
	snprintf(body, sizeof(body), "{\"entity_id\":\"%s\",\"rate_limit\":{\"requests_per_second\":0}}", ptn);
	cr_assert_eq(status_code(p.port, "POST", "/api/keys", WM_TEST_KEY, body, code, sizeof(code)), 422);
	snprintf(body, sizeof(body), "{\"entity_id\":\"%s\",\"rate_limit\":{\"requests_per_second\":1000000}}", ptn);
	cr_assert_eq(status_code(p.port, "POST", "/api/keys", WM_TEST_KEY, body, code, sizeof(code)), 201);
	wm_proc_cleanup(&p);
}

WM_TEST(auth, record_quota_gives_429_without_revealing_rows)
{
	struct wm_proc p;
	wm_proc_init(&p);
	const char *args[] = {"--record-quota", "5", "--record-quota-period-s", "3600", NULL};
	start_or_fail(&p, args, NULL);
	char ptn[64], k1[128], k2[128], code[64], path[160];
	create_partner(p.port, "Quota", "[\"seller\"]", "live", ptn);
	mint_for(p.port, ptn, NULL, k1, NULL);
	mint_for(p.port, ptn, NULL, k2, NULL);
	snprintf(path, sizeof(path), "/v1/partners/%s", ptn);
	/* events of this entity: more than the quota (created + 5 status moves + keys) */
	struct http_resp r;
	cr_assert_eq(req(p.port, "GET", "/v1/events?page_size=10", k1, NULL, &r), 0);
	cr_assert_eq(r.status, 429, "a page needing more rows than the quota leaves: %s", r.body);
	cr_assert_null(strstr(r.body, "has_more"));
	cr_assert_null(strstr(r.body, "next_cursor"));
	cr_assert_null(strstr(r.body, "data"));
	char ra[32];
	cr_assert_gt(http_header(&r, "Retry-After", ra, sizeof(ra)), 0);
	cr_assert_geq(atoi(ra), 1);
	http_resp_free(&r);
	/* a page the quota covers is served and counted: 2 + 3 = 5 */
	cr_assert_eq(req(p.port, "GET", "/v1/events?page_size=2", k1, NULL, &r), 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	http_resp_free(&r);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(status_code(p.port, "GET", path, i % 2 ? k1 : k2, NULL, code, sizeof(code)), 200);
	/* the quota is the entity's, across its keys */
	cr_assert_eq(status_code(p.port, "GET", path, k2, NULL, code, sizeof(code)), 429);
	cr_assert_str_eq(code, "quota_exceeded");
	cr_assert_eq(req(p.port, "GET", "/v1/events?page_size=1", k1, NULL, &r), 0);
	cr_assert_eq(r.status, 429);
	cr_assert_gt(http_header(&r, "Retry-After", ra, sizeof(ra)), 0);
	cr_assert(atoi(ra) >= 1 && atoi(ra) <= 3600, "Retry-After within the period: %s", ra);
	http_resp_free(&r);
	/* writes are not reads: still allowed */
	cr_assert_eq(status_code(p.port, "PATCH", path, k1, "{\"legal_name\":\"Quota SAS\"}", code, sizeof(code)), 200);
	/* operators are not subject to the partner quota */
	cr_assert_eq(status_code(p.port, "GET", "/v1/events?page_size=200", WM_TEST_KEY, NULL, code, sizeof(code)), 200);
	wm_proc_cleanup(&p);
}

/* ---- bootstrap ---------------------------------------------------------- */

WM_TEST(auth, operator_key_is_printed_once_or_taken_from_the_environment)
{
	struct wm_proc p;
	wm_proc_init(&p);
	const char *no_env[] = {"WM_BOOTSTRAP_KEY=", NULL};
	start_or_fail(&p, NULL, no_env);
	const char *m = strstr(p.banner, "operator key (shown once, store it now): ");
	cr_assert_not_null(m, "first start prints the operator key: %s", p.banner);
	char key[64];
	cr_assert_eq(sscanf(m + strlen("operator key (shown once, store it now): "), "%63s", key), 1);
	cr_assert_eq(strlen(key), 42);
	char code[64];
	cr_assert_eq(status_code(p.port, "GET", "/metrics", key, NULL, code, sizeof(code)), 200);
	cr_assert_eq(status_code(p.port, "GET", "/metrics", WM_TEST_KEY, NULL, code, sizeof(code)), 401,
		     "no environment key was given");
	cr_assert_eq(wm_stop(&p), 0);
	start_or_fail(&p, NULL, no_env);
	cr_assert_null(strstr(p.banner, "shown once"), "printed only once: %s", p.banner);
	cr_assert_null(strstr(p.banner, key + 12), "printed only once: %s", p.banner);
	cr_assert_not_null(strstr(p.banner, "WM_BOOTSTRAP_KEY"), "says how to get a key: %s", p.banner);
	cr_assert_eq(status_code(p.port, "GET", "/metrics", key, NULL, code, sizeof(code)), 200);
	cr_assert_eq(wm_stop(&p), 0);
	/* an environment key is added (hashed) and works beside it */
	start_or_fail(&p, NULL, NULL);
	cr_assert_eq(status_code(p.port, "GET", "/metrics", WM_TEST_KEY, NULL, code, sizeof(code)), 200);
	cr_assert_eq(wm_stop(&p), 0);
	/* too short a secret refuses to start, saying why */
	const char *short_env[] = {"WM_BOOTSTRAP_KEY=only-31-characters-long-secret!", NULL};
	cr_assert_eq(strlen(short_env[0]) - strlen("WM_BOOTSTRAP_KEY="), 31);
	struct wm_proc q;
	wm_proc_init(&q);
	cr_assert_neq(wm_start(&q, NULL, short_env), 0, "a 31-character bootstrap key must be refused");
	char logp[400], line[4096] = "";
	snprintf(logp, sizeof(logp), "%s/shard-1.log", q.dir);
	FILE *f = fopen(logp, "r");
	cr_assert_not_null(f);
	size_t got = fread(line, 1, sizeof(line) - 1, f);
	line[got] = 0;
	fclose(f);
	cr_assert(strstr(line, "WM_BOOTSTRAP_KEY") && strstr(line, "32"), "the refusal says why: %s", line);
	const char *ok_env[] = {"WM_BOOTSTRAP_KEY=exactly-32-characters-long-secre", NULL};
	cr_assert_eq(strlen(ok_env[0]) - strlen("WM_BOOTSTRAP_KEY="), 32);
	start_or_fail(&q, NULL, ok_env);
	cr_assert_eq(status_code(q.port, "GET", "/metrics", "exactly-32-characters-long-secre", NULL, code,
				 sizeof(code)), 200);
	wm_proc_cleanup(&q);
	wm_proc_cleanup(&p);
}
