/*
 * test_contract.c -- provoke the answers the black-box run found
 * undeclared (issue 21 item 9), so that the contract checker
 * (tests/contract/check.py, run by `make test` over every response the
 * suite reads) validates each against api/openapi.json: the edge's 411,
 * 414 and 431, the 401 of /metrics and /v1/admin/snapshots, a 429 from
 * quote-calculate, the bodies of /healthz, /readyz, /v1/openapi.json and
 * the 202 of POST /v1/admin/snapshots.  Each test also asserts what it can
 * see itself (status, problem code, the headers the document promises);
 * against the document before this issue the checker reports every one of
 * these responses as a violation.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/api_client.h"
#include "tests/wm_test.h"

/* A response through http_do (recorded for the checker); its status. */
static int call(int port, const char *method, const char *path, const char *headers, const char *body,
		struct http_resp *r)
{
	cr_assert_eq(http_do(port, method, path, headers, body, r), 0, "%s %.60s: no response", method, path);
	return r->status;
}

/* A problem response: problem+json, the code, an X-Request-Id. */
static void assert_problem(struct http_resp *r, int status, const char *code)
{
	char ct[128], rid[128];
	cr_assert_eq(r->status, status, "want %d, got %d: %s", status, r->status, r->body);
	cr_assert_geq(http_header(r, "Content-Type", ct, sizeof(ct)), 0);
	cr_assert(!strncmp(ct, "application/problem+json", 24), "%d as %s", status, ct);
	cr_assert_gt(http_header(r, "X-Request-Id", rid, sizeof(rid)), 0, "%d without X-Request-Id", status);
	json_error_t e;
	json_t *j = json_loadb(r->body, r->body_len, 0, &e);
	cr_assert_not_null(j, "%d body is not JSON: %s", status, r->body);
	cr_assert_str_eq(tc_jstr(j, "code"), code);
	json_decref(j);
}

WM_TEST(contract, edge_statuses_are_problems_of_the_operation)
{
	struct wm_proc p;
	tc_start(&p);
	struct http_resp r;
	/* 414: a request line over the default 8192 bytes, on GET /v1/partners/{id} */
	size_t n = 9000;
	char *path = malloc(n + 1);
	memcpy(path, "/v1/partners/", 13);
	memset(path + 13, 'a', n - 13);
	path[n] = 0;
	call(p.port, "GET", path, NULL, NULL, &r);
	assert_problem(&r, 414, "uri_too_long");
	http_resp_free(&r);
	free(path);
	/* 431: a head over the default 16384 bytes */
	size_t hn = 17000;
	char *big = malloc(hn + 32);
	int k = snprintf(big, 32, "X-Filler: ");
	memset(big + k, 'b', hn);
	memcpy(big + k + hn, "\r\n", 3);
	call(p.port, "GET", "/v1/partners", big, NULL, &r);
	assert_problem(&r, 431, "headers_too_large");
	http_resp_free(&r);
	free(big);
	/* 411: Transfer-Encoding is not accepted */
	call(p.port, "POST", "/v1/partners", "Transfer-Encoding: chunked\r\n", NULL, &r);
	assert_problem(&r, 411, "length_required");
	http_resp_free(&r);
	wm_proc_cleanup(&p);
}

WM_TEST(contract, operator_routes_answer_401_without_a_key)
{
	struct wm_proc p;
	tc_start(&p);
	struct http_resp r;
	static const char *const ops[][2] = {
	    {"GET", "/metrics"}, {"GET", "/v1/admin/snapshots"}, {"POST", "/v1/admin/snapshots"}};
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		call(p.port, ops[i][0], ops[i][1], "Authorization: none\r\n", NULL, &r);
		assert_problem(&r, 401, "missing_credentials");
		http_resp_free(&r);
	}
	wm_proc_cleanup(&p);
}

/* A key limited to one request per second with a burst of one: its second
 * quote-calculate in a row is a 429 with Retry-After and the RateLimit
 * headers, before the body is even looked at. */
WM_TEST(contract, quote_calculate_over_the_key_rate_is_429)
{
	struct wm_proc p;
	tc_start(&p);
	json_t *j = tc_expect(p.port, "POST", "/api/keys", NULL,
			      "{\"name\":\"slow\",\"rate_limit\":{\"requests_per_second\":1,\"burst\":1}}", 201);
	char key[128], h[256];
	snprintf(key, sizeof(key), "%s", tc_jstr(j, "key"));
	json_decref(j);
	snprintf(h, sizeof(h), "Authorization: Bearer %s\r\n", key);
	struct http_resp r;
	int first = call(p.port, "POST", "/v1/orders/quote-calculate", h, "{}", &r);
	cr_assert(first == 400 || first == 422, "the first request is judged on its body: %d %s", first, r.body);
	http_resp_free(&r);
	call(p.port, "POST", "/v1/orders/quote-calculate", h, "{}", &r);
	assert_problem(&r, 429, "rate_limited");
	char v[128];
	cr_assert_gt(http_header(&r, "Retry-After", v, sizeof(v)), 0);
	cr_assert_geq(atoi(v), 1);
	cr_assert_gt(http_header(&r, "RateLimit", v, sizeof(v)), 0);
	cr_assert_gt(http_header(&r, "RateLimit-Policy", v, sizeof(v)), 0);
	http_resp_free(&r);
	wm_proc_cleanup(&p);
}

WM_TEST(contract, public_bodies_and_the_snapshot_202)
{
	struct wm_proc p;
	tc_start(&p);
	json_t *j = tc_expect(p.port, "GET", "/healthz", NULL, NULL, 200);
	cr_assert_str_eq(tc_jstr(j, "status"), "ok");
	json_decref(j);
	j = tc_expect(p.port, "GET", "/readyz", NULL, NULL, 200);
	cr_assert_str_eq(tc_jstr(j, "status"), "ready");
	cr_assert(json_is_integer(json_object_get(j, "lsn")));
	json_decref(j);
	/* the served document is the one in the tree */
	j = tc_expect(p.port, "GET", "/v1/openapi.json", NULL, NULL, 200);
	char fn[512];
	const char *src = getenv("WM_SRC_DIR");
	snprintf(fn, sizeof(fn), "%s/api/openapi.json", src ? src : ".");
	json_error_t e;
	json_t *disk = json_load_file(fn, 0, &e);
	cr_assert_not_null(disk, "%s: %s", fn, e.text);
	cr_assert(json_equal(j, disk), "GET /v1/openapi.json differs from %s", fn);
	json_decref(disk);
	json_decref(j);
	j = tc_expect(p.port, "POST", "/v1/admin/snapshots", NULL, NULL, 202);
	const char *st = tc_jstr(j, "status");
	cr_assert(st && (!strcmp(st, "started") || !strcmp(st, "already_running")), "%s", st ? st : "(none)");
	cr_assert(json_is_integer(json_object_get(j, "lsn")));
	json_decref(j);
	wm_proc_cleanup(&p);
}
