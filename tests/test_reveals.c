/*
 * test_reveals.c -- a response waits for exactly what it reveals
 * (DESIGN.md section 3; engine/storage/table.h, the read set).
 *
 * The shard runs with wal_slow_sync (every fdatasync sleeps 400 ms), so a
 * write stays "in flight" long enough to observe the order in which
 * responses leave: a PATCH of partner B is sent on one connection, then
 * other requests on other connections.  Those that reveal nothing of the
 * PATCH (a read of partner A, /healthz, a 401, a 405, a 404 of an unknown
 * id) must come back while the PATCH's answer is still held; those that do
 * (a read of B, the list that includes B) must not come back before it,
 * and must show the new value.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "tests/api_client.h"
#include "tests/wm_test.h"

#define AUTH "Authorization: Bearer " WM_TEST_KEY "\r\n"

/* Send one raw request on a new connection; the socket. */
static int send_req(int port, const char *method, const char *path, const char *headers, const char *body)
{
	int fd = tcp_connect(port);
	cr_assert_geq(fd, 0, "connect");
	char req[2048];
	int n = snprintf(req, sizeof(req),
			 "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s%s%sContent-Length: %zu\r\n\r\n%s", method, path,
			 headers ? headers : "", body ? "Content-Type: application/json\r\n" : "", "",
			 body ? strlen(body) : 0, body ? body : "");
	cr_assert(n > 0 && (size_t)n < sizeof(req));
	cr_assert_eq(write(fd, req, (size_t)n), n, "write");
	return fd;
}

/* The value of the metric line starting with `name` (-1 if absent).
 * /metrics reads no rows, so it answers even while a write is held. */
static long metric(int port, const char *name)
{
	struct http_resp r;
	cr_assert_eq(http_do(port, "GET", "/metrics", NULL, NULL, &r), 0, "GET /metrics");
	cr_assert_eq(r.status, 200);
	long v = -1;
	const char *at = strstr(r.body, name);
	if (at)
		v = strtol(at + strlen(name), NULL, 10);
	http_resp_free(&r);
	return v;
}

#define PATCHES "wm_http_requests_total{route=\"/v1/partners/{id}\",status=\"200\"} "

/* Send the PATCH that stays in flight and wait until the shard has handled
 * it (counted in /metrics), without waiting for its fsync. */
static int send_held_patch(int port, const char *path, const char *body)
{
	long before = metric(port, PATCHES);
	int fd = send_req(port, "PATCH", path, AUTH, body);
	for (int i = 0; i < 500 && metric(port, PATCHES) <= before; i++)
		usleep(10 * 1000);
	cr_assert_gt(metric(port, PATCHES), before, "the PATCH was never handled");
	return fd;
}

/* True if the socket has bytes to read within ms. */
static int readable(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return poll(&p, 1, ms) == 1;
}

/* A request whose answer must arrive while the held PATCH on `held` is
 * still unanswered. */
static void answered_before(int port, int held, const char *method, const char *path, const char *headers,
			    int want)
{
	int fd = send_req(port, method, path, headers, NULL);
	struct http_resp r;
	cr_assert_eq(http_read_response(fd, &r, 5000), 0, "%s %s: no response", method, path);
	cr_assert_eq(r.status, want, "%s %s: %d %s", method, path, r.status, r.body);
	cr_assert_not(readable(held, 0), "%s %s was answered only after the unrelated PATCH was durable", method,
		      path);
	http_resp_free(&r);
	close(fd);
}

WM_TEST(reveals, reads_wait_only_for_what_they_reveal, .timeout = 60)
{
	struct wm_proc p;
	wm_proc_init(&p);
	const char *env[] = {"WM_ERRINJ=wal_slow_sync", NULL};
	cr_assert_eq(wm_start(&p, NULL, env), 0, "wm-shard did not start (logs in %s)", p.dir);
	char a[64], b[64], pa[128], pb[128];
	tc_partner_live(p.port, "Alpha Wines", "FR", "[\"seller\"]", NULL, a);
	tc_partner_live(p.port, "Beta Wines", "DE", "[\"seller\"]", NULL, b);
	snprintf(pa, sizeof(pa), "/v1/partners/%s", a);
	snprintf(pb, sizeof(pb), "/v1/partners/%s", b);

	for (int round = 0; round < 2; round++) {
		/* The write in flight: B's legal name changes. */
		char body[128];
		snprintf(body, sizeof(body), "{\"legal_name\":\"Beta Wines %d\"}", round);
		int held = send_held_patch(p.port, pb, body);
		cr_assert_not(readable(held, 0), "the PATCH was answered before its fsync");

		/* Reveals nothing of B: answered now. */
		answered_before(p.port, held, "GET", pa, AUTH, 200);
		answered_before(p.port, held, "GET", "/healthz", NULL, 200);
		answered_before(p.port, held, "GET", pa, "Authorization: Bearer wm_sk_nope\r\n", 401);
		answered_before(p.port, held, "DELETE", "/healthz", NULL, 405);
		answered_before(p.port, held, "GET", "/v1/partners/ptn_00000000000000000000", AUTH, 404);

		/* Reveals B's new version: held until the PATCH is durable. */
		int one = send_req(p.port, "GET", pb, AUTH, NULL);
		int list = send_req(p.port, "GET", "/v1/partners?page_size=200", AUTH, NULL);
		struct http_resp r1, r2, rp;
		cr_assert_eq(http_read_response(held, &rp, 10000), 0, "the PATCH got no answer");
		cr_assert_eq(rp.status, 200, "PATCH: %d %s", rp.status, rp.body);
		cr_assert_eq(http_read_response(one, &r1, 10000), 0);
		cr_assert_eq(http_read_response(list, &r2, 10000), 0);
		cr_assert_eq(r1.status, 200);
		cr_assert_eq(r2.status, 200);
		char want[64];
		snprintf(want, sizeof(want), "\"Beta Wines %d\"", round);
		cr_assert(strstr(r1.body, want), "GET B does not show the PATCH: %s", r1.body);
		cr_assert(strstr(r2.body, want), "the list does not show the PATCH");
		http_resp_free(&r1);
		http_resp_free(&r2);
		http_resp_free(&rp);
		close(one);
		close(list);
		close(held);
	}
	wm_proc_cleanup(&p);
}

/* Before the PATCH is durable, a reader on another connection must not see
 * it: the read of B started while the PATCH was held leaves together with
 * the PATCH's answer (both are released by the same fsync, within
 * microseconds, in either order), never ~400 ms before it. */
WM_TEST(reveals, read_of_a_changed_row_never_overtakes_its_write, .timeout = 60)
{
	struct wm_proc p;
	wm_proc_init(&p);
	const char *env[] = {"WM_ERRINJ=wal_slow_sync", NULL};
	cr_assert_eq(wm_start(&p, NULL, env), 0, "wm-shard did not start (logs in %s)", p.dir);
	char b[64], pb[128];
	tc_partner_live(p.port, "Gamma Wines", "IT", "[\"seller\"]", NULL, b);
	snprintf(pb, sizeof(pb), "/v1/partners/%s", b);
	int held = send_held_patch(p.port, pb, "{\"legal_name\":\"Gamma Wines SpA\"}");
	int rd = send_req(p.port, "GET", pb, AUTH, NULL);
	cr_assert(readable(rd, 10000), "the read got no answer");
	cr_assert(readable(held, 100), "the read of the changed row was answered before its write was durable");
	struct http_resp r;
	cr_assert_eq(http_read_response(rd, &r, 10000), 0);
	cr_assert(strstr(r.body, "Gamma Wines SpA"), "%s", r.body);
	http_resp_free(&r);
	cr_assert_eq(http_read_response(held, &r, 10000), 0);
	http_resp_free(&r);
	close(rd);
	close(held);
	wm_proc_cleanup(&p);
}
