/*
 * test_integration.c -- real wm-shard processes over HTTP: partners end to
 * end, validation, pagination, durability across kill -9 (with and without
 * a snapshot in between), HTTP limits and time-outs, graceful drain.
 */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <dirent.h>
#include <stdarg.h>
#include <sys/wait.h>

#include "tests/api_client.h"
#include "tests/harness.h"
#include "tests/wm_test.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Parse a response body with jansson (independent of the server's parser). */
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

/* Create one partner; returns the response body (caller frees). */
static char *create_partner(int port, const char *name, const char *country, int *status)
{
	char body[512];
	snprintf(body, sizeof(body),
		 "{\"legal_name\":\"%s\",\"country\":\"%s\",\"roles\":[\"originator\",\"seller\"],"
		 "\"originator_type\":\"estate\",\"contact\":{\"email\":\"ops@example.com\"}}",
		 name, country);
	struct http_resp r;
	cr_assert_eq(http_do(port, "POST", "/v1/partners", NULL, body, &r), 0);
	*status = r.status;
	return r.body;
}

WM_TEST(partners, create_get_patch_list)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL, NULL);
	int st;
	char *b = create_partner(p.port, "Château Test", "FR", &st);
	cr_assert_eq(st, 201, "%s", b);
	json_error_t je;
	json_t *j = json_loads(b, 0, &je);
	cr_assert_str_eq(tc_jstr(j, "legal_name"), "Château Test");
	cr_assert_str_eq(tc_jstr(j, "country"), "FR");
	cr_assert_str_eq(tc_jstr(j, "status"), "applied");
	cr_assert(json_is_true(json_object_get(json_object_get(j, "capabilities"), "provides_inventory")));
	cr_assert(json_is_true(json_object_get(json_object_get(j, "capabilities"), "fulfills_orders")),
		  "fulfils by default as an originator");
	cr_assert(json_is_false(json_object_get(json_object_get(j, "capabilities"), "feeds_unoffered_wines")));
	const char *id = tc_jstr(j, "id");
	cr_assert(id && !strncmp(id, "ptn_", 4));
	char path[128];
	snprintf(path, sizeof(path), "/v1/partners/%s", id);

	struct http_resp r;
	cr_assert_eq(http_do(p.port, "GET", path, NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200);
	cr_assert_str_eq(r.body, b, "GET returns exactly what create returned");
	http_resp_free(&r);

	/* status moves one step at a time */
	cr_assert_eq(http_do(p.port, "PATCH", path, NULL, "{\"status\":\"live\"}", &r), 0);
	cr_assert_eq(r.status, 409, "%s", r.body);
	cr_assert(strstr(r.body, "invalid_status_transition"));
	http_resp_free(&r);
	cr_assert_eq(http_do(p.port, "PATCH", path, NULL, "{\"status\":\"verified\",\"legal_name\":\"Château Test SAS\"}", &r), 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	json_t *pj = body_json(&r);
	cr_assert_str_eq(tc_jstr(pj, "status"), "verified");
	cr_assert_str_eq(tc_jstr(pj, "legal_name"), "Château Test SAS");
	cr_assert_str_eq(tc_jstr(pj, "created_at"), tc_jstr(j, "created_at"));
	json_decref(pj);
	http_resp_free(&r);

	/* removing the originator role while originator_type remains is refused */
	cr_assert_eq(http_do(p.port, "PATCH", path, NULL, "{\"roles\":[\"seller\"]}", &r), 0);
	cr_assert_eq(r.status, 422, "%s", r.body);
	cr_assert(strstr(r.body, "originator_type"));
	http_resp_free(&r);

	/* events were written in the same transactions */
	cr_assert_eq(http_do(p.port, "GET", "/v1/events?type=partner.updated", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200);
	json_t *ev = body_json(&r);
	cr_assert_eq(json_array_size(json_object_get(ev, "data")), 1);
	json_decref(ev);
	http_resp_free(&r);
	cr_assert_eq(http_do(p.port, "GET", "/v1/events?type=Bad Type", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 400);
	http_resp_free(&r);

	cr_assert_eq(http_do(p.port, "GET", "/v1/partners/ptn_doesnotexist", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 404);
	cr_assert(strstr(r.head, "application/problem+json"));
	http_resp_free(&r);
	json_decref(j);
	free(b);
	cr_assert_eq(wm_stop(&p), 0, "graceful stop exits 0 (and no leaks under ASan)");
	wm_proc_cleanup(&p);
}

WM_TEST(partners, validation_reports_every_field)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL, NULL);
	struct http_resp r;
	cr_assert_eq(http_do(p.port, "POST", "/v1/partners", NULL,
			     "{\"country\":\"XX\",\"roles\":[\"seller\",\"pirate\"],\"capabilities\":{\"provides_inventory\":true},"
			     "\"payout_currency\":\"EURO\",\"colour\":\"red\",\"contact\":{\"email\":\"nope\"}}",
			     &r),
		     0);
	cr_assert_eq(r.status, 422, "%s", r.body);
	json_t *j = body_json(&r);
	cr_assert_str_eq(tc_jstr(j, "code"), "validation_failed");
	json_t *errs = json_object_get(j, "errors");
	const char *expect[] = {"legal_name", "country", "roles[1]", "capabilities.provides_inventory",
				"payout_currency", "colour", "contact.email"};
	for (size_t i = 0; i < N_OF(expect); i++) {
		int found = 0;
		for (size_t k = 0; k < json_array_size(errs); k++)
			found |= !strcmp(tc_jstr(json_array_get(errs, k), "field"), expect[i]);
		cr_assert(found, "no error for %s in %s", expect[i], r.body);
	}
	json_decref(j);
	http_resp_free(&r);

	cr_assert_eq(http_do(p.port, "POST", "/v1/partners", NULL, "{\"legal_name\": \"x\",}", &r), 0);
	cr_assert_eq(r.status, 400);
	cr_assert(strstr(r.body, "malformed_json") && strstr(r.body, "column"), "%s", r.body);
	http_resp_free(&r);
	cr_assert_eq(http_do(p.port, "POST", "/v1/partners", "Content-Type: text/plain\r\n", NULL, &r), 0);
	cr_assert_eq(r.status, 400, "no body");
	http_resp_free(&r);
	cr_assert_eq(http_do(p.port, "DELETE", "/v1/partners", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 405);
	char allow[64];
	cr_assert(http_header(&r, "Allow", allow, sizeof(allow)) > 0 && strstr(allow, "POST"));
	http_resp_free(&r);
	wm_proc_cleanup(&p);
}

WM_TEST(partners, pagination_walks_every_row_once)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL, NULL);
	char ids[7][64];
	for (int i = 0; i < 7; i++) {
		int st;
		char name[32];
		snprintf(name, sizeof(name), "Partner %d", i);
		char *b = create_partner(p.port, name, i % 2 ? "DE" : "IT", &st);
		cr_assert_eq(st, 201);
		json_t *j = json_loads(b, 0, NULL);
		snprintf(ids[i], sizeof(ids[i]), "%s", tc_jstr(j, "id"));
		json_decref(j);
		free(b);
	}
	char path[512] = "/v1/partners?page_size=3";
	int seen = 0, pages = 0;
	for (;;) {
		struct http_resp r;
		cr_assert_eq(http_do(p.port, "GET", path, NULL, NULL, &r), 0);
		cr_assert_eq(r.status, 200, "%s", r.body);
		json_t *j = body_json(&r);
		json_t *data = json_object_get(j, "data");
		for (size_t k = 0; k < json_array_size(data); k++) {
			cr_assert_str_eq(tc_jstr(json_array_get(data, k), "id"), ids[seen], "creation order");
			seen++;
		}
		pages++;
		json_t *nc = json_object_get(j, "next_cursor");
		int more = json_is_true(json_object_get(j, "has_more"));
		cr_assert_eq(more, json_is_string(nc));
		if (!more) {
			json_decref(j);
			http_resp_free(&r);
			break;
		}
		snprintf(path, sizeof(path), "/v1/partners?page_size=3&cursor=%s", json_string_value(nc));
		json_decref(j);
		http_resp_free(&r);
	}
	cr_assert_eq(seen, 7);
	cr_assert_eq(pages, 3);
	/* filter: only DE, which never fills a page with hidden rows */
	struct http_resp r;
	cr_assert_eq(http_do(p.port, "GET", "/v1/partners?country=DE&page_size=200", NULL, NULL, &r), 0);
	json_t *j = body_json(&r);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 3);
	json_decref(j);
	http_resp_free(&r);
	const char *bad[] = {"/v1/partners?page_size=201", "/v1/partners?page_size=0", "/v1/partners?page_size=abc",
			     "/v1/partners?cursor=!!", "/v1/partners?country=ZZ", "/v1/partners?role=king"};
	for (size_t i = 0; i < N_OF(bad); i++) {
		cr_assert_eq(http_do(p.port, "GET", bad[i], NULL, NULL, &r), 0);
		cr_assert_eq(r.status, 400, "%s -> %d", bad[i], r.status);
		http_resp_free(&r);
	}
	cr_assert_eq(http_do(p.port, "GET", "/v1/partners?page_size=200", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200, "200 is the maximum and allowed");
	http_resp_free(&r);
	wm_proc_cleanup(&p);
}

/* Create n partners, remembering every acknowledged body. */
static void create_many(int port, int n, int from, char **bodies, char ids[][64])
{
	for (int i = 0; i < n; i++) {
		int st;
		char name[48];
		snprintf(name, sizeof(name), "Durable Partner %d", from + i);
		bodies[i] = create_partner(port, name, "ES", &st);
		cr_assert_eq(st, 201);
		json_t *j = json_loads(bodies[i], 0, NULL);
		snprintf(ids[i], 64, "%s", tc_jstr(j, "id"));
		json_decref(j);
	}
}

static void check_all_present(int port, int n, char **bodies, char ids[][64])
{
	for (int i = 0; i < n; i++) {
		char path[128];
		snprintf(path, sizeof(path), "/v1/partners/%s", ids[i]);
		struct http_resp r;
		cr_assert_eq(http_do(port, "GET", path, NULL, NULL, &r), 0);
		cr_assert_eq(r.status, 200, "acknowledged partner %s lost", ids[i]);
		cr_assert_str_eq(r.body, bodies[i], "partner %s changed across restart", ids[i]);
		http_resp_free(&r);
	}
}

WM_TEST(durability, kill9_after_201_keeps_every_acknowledged_partner)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL, NULL);
	enum { N = 60 };
	char *bodies[N];
	char ids[N][64];
	create_many(p.port, N, 0, bodies, ids);
	wm_kill9(&p); /* right after the last 201 */
	start_or_fail(&p, NULL, NULL);
	check_all_present(p.port, N, bodies, ids);
	/* and it keeps working: new ids sort after the old ones */
	int st;
	char *b = create_partner(p.port, "After restart", "PT", &st);
	cr_assert_eq(st, 201);
	json_t *j = json_loads(b, 0, NULL);
	cr_assert_gt(strcmp(tc_jstr(j, "id"), ids[N - 1]), 0, "ids stay time-ordered across restarts");
	json_decref(j);
	free(b);
	for (int i = 0; i < N; i++)
		free(bodies[i]);
	wm_proc_cleanup(&p);
}

static int count_files(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		size_t l = strlen(e->d_name), s = strlen(suffix);
		n += l > s && !strcmp(e->d_name + l - s, suffix);
	}
	if (d)
		closedir(d);
	return n;
}

WM_TEST(durability, kill9_with_snapshot_in_between)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL, NULL);
	enum { N = 25 };
	char *bodies[2 * N];
	char ids[2 * N][64];
	create_many(p.port, N, 0, bodies, ids);
	struct http_resp r;
	cr_assert_eq(http_do(p.port, "POST", "/v1/admin/snapshots", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 202, "%s", r.body);
	http_resp_free(&r);
	int taken = 0;
	for (int i = 0; i < 500 && !taken; i++) {
		cr_assert_eq(http_do(p.port, "GET", "/v1/admin/snapshots", NULL, NULL, &r), 0);
		json_t *j = body_json(&r);
		taken = json_integer_value(json_object_get(j, "taken")) >= 1;
		json_decref(j);
		http_resp_free(&r);
		if (!taken)
			usleep(20000);
	}
	cr_assert(taken, "snapshot finished");
	create_many(p.port, N, N, bodies + N, ids + N);
	wm_kill9(&p);
	char snapdir[400];
	snprintf(snapdir, sizeof(snapdir), "%s/snap", p.data_dir);
	cr_assert_eq(count_files(snapdir, ".snap"), 1);
	start_or_fail(&p, NULL, NULL);
	check_all_present(p.port, 2 * N, bodies, ids);
	/* the snapshot was used: metrics report its LSN */
	cr_assert_eq(http_do(p.port, "GET", "/metrics", NULL, NULL, &r), 0);
	cr_assert(strstr(r.body, "wm_table_rows{table=\"partner\"} 50"), "%s", r.body);
	http_resp_free(&r);
	for (int i = 0; i < 2 * N; i++)
		free(bodies[i]);
	wm_proc_cleanup(&p);
}

WM_TEST(durability, crash_between_write_and_fsync_recovers)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL, NULL);
	enum { N = 5 };
	char *bodies[N];
	char ids[N][64];
	create_many(p.port, N, 0, bodies, ids);
	wm_stop(&p);
	const char *env[] = {"WM_ERRINJ=wal_crash_after_write", NULL};
	start_or_fail(&p, NULL, env);
	struct http_resp r;
	int rc = http_do(p.port, "POST", "/v1/partners", NULL, "{\"legal_name\":\"Never acked\",\"country\":\"FR\"}", &r);
	cr_assert(rc != 0 || r.status != 201, "a write whose fsync never happened was acknowledged");
	if (rc == 0)
		http_resp_free(&r);
	cr_assert_eq(wm_wait(&p, 10000), 137, "died at the injection point");
	start_or_fail(&p, NULL, NULL);
	check_all_present(p.port, N, bodies, ids);
	for (int i = 0; i < N; i++)
		free(bodies[i]);
	wm_proc_cleanup(&p);
}

WM_TEST(durability, second_process_on_same_data_dir_is_refused)
{
	struct wm_proc p, q;
	wm_proc_init(&p);
	start_or_fail(&p, NULL, NULL);
	q = p;
	q.pid = 0;
	char msg[4096];
	int st = wm_start_expect_fail(&q, NULL, msg, sizeof(msg));
	cr_assert_eq(st, 1, "exit status %d", st);
	cr_assert(strstr(msg, "in use by another process"), "%s", msg);
	wm_proc_cleanup(&p);
}

WM_TEST(http, pipelining_keepalive_and_limits)
{
	struct wm_proc p;
	wm_proc_init(&p);
	const char *args[] = {"--max-body-kb", "1", "--header-timeout-ms", "300", "--max-conns", "3", NULL};
	start_or_fail(&p, args, NULL);
	/* three pipelined requests in one write, answered in order */
	int fd = tcp_connect(p.port);
	const char pbody[] = "{\"legal_name\":\"Pipe\",\"country\":\"AT\"}";
	char req[1024];
	int rl = snprintf(req, sizeof(req),
			  "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
			  "POST /v1/partners HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
			  "Authorization: Bearer " WM_TEST_KEY "\r\n"
			  "Content-Length: %zu\r\n\r\n%s"
			  "GET /v1/nope HTTP/1.1\r\nHost: x\r\n\r\n",
			  sizeof(pbody) - 1, pbody);
	cr_assert_eq(write(fd, req, (size_t)rl), rl);
	char all[16384];
	size_t len = 0;
	while (len < sizeof(all) - 1) {
		ssize_t n = recv(fd, all + len, sizeof(all) - 1 - len, 0);
		cr_assert_gt(n, 0);
		len += (size_t)n;
		all[len] = 0;
		if (strstr(all, "no such endpoint"))
			break;
	}
	char *a = strstr(all, "HTTP/1.1 200"), *b = strstr(all, "HTTP/1.1 201"), *c = strstr(all, "HTTP/1.1 404");
	cr_assert(a && b && c && a < b && b < c, "responses in request order:\n%s", all);
	close(fd);

	struct http_resp r;
	char big[1200];
	memset(big, 'a', sizeof(big));
	memcpy(big, "{\"legal_name\":\"", 15);
	memcpy(big + sizeof(big) - 20, "\",\"country\":\"FR\"}", 18);
	big[sizeof(big) - 2] = 0;
	cr_assert_eq(http_do(p.port, "POST", "/v1/partners", NULL, big, &r), 0);
	cr_assert_eq(r.status, 413, "body over --max-body-kb");
	http_resp_free(&r);

	fd = tcp_connect(p.port);
	const char chunked[] = "POST /v1/partners HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
	cr_assert_eq(write(fd, chunked, sizeof(chunked) - 1), (ssize_t)sizeof(chunked) - 1);
	cr_assert_eq(http_read_response(fd, &r, 5000) >= 0, 1);
	cr_assert_eq(r.status, 411);
	http_resp_free(&r);
	close(fd);

	fd = tcp_connect(p.port);
	const char smuggle[] = "POST /v1/partners HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
			       "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
	cr_assert_eq(write(fd, smuggle, sizeof(smuggle) - 1), (ssize_t)sizeof(smuggle) - 1);
	cr_assert_eq(http_read_response(fd, &r, 5000) >= 0, 1);
	cr_assert_eq(r.status, 400);
	http_resp_free(&r);
	close(fd);

	/* a slow client: half a request head, then nothing -> 408 and closed */
	fd = tcp_connect(p.port);
	cr_assert_eq(write(fd, "GET /healthz HTTP/1.1\r\nHo", 25), 25);
	cr_assert_eq(http_read_response(fd, &r, 5000) >= 0, 1, "server answered the slow client");
	cr_assert_eq(r.status, 408);
	http_resp_free(&r);
	char x;
	cr_assert_eq(recv(fd, &x, 1, 0), 0, "and closed the connection");
	close(fd);

	/* connection limit: 3 allowed, the 4th gets 503 (the three are busy:
	 * each has part of a request in, so none is evicted as idle) */
	int held[3];
	for (int i = 0; i < 3; i++) {
		held[i] = tcp_connect(p.port);
		cr_assert_geq(held[i], 0);
		cr_assert_eq(write(held[i], "GET /he", 7), 7);
	}
	usleep(100000);
	fd = tcp_connect(p.port);
	cr_assert_eq(http_read_response(fd, &r, 5000) >= 0, 1);
	cr_assert_eq(r.status, 503);
	http_resp_free(&r);
	close(fd);
	for (int i = 0; i < 3; i++)
		close(held[i]);
	wm_proc_cleanup(&p);
}

WM_TEST(http, sigterm_drains_in_flight_and_exits_zero)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL, NULL);
	int fd = tcp_connect(p.port);
	const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
	cr_assert_eq(write(fd, req, sizeof(req) - 1), (ssize_t)sizeof(req) - 1);
	struct http_resp r;
	cr_assert_eq(http_read_response(fd, &r, 5000) >= 0, 1);
	cr_assert_eq(r.status, 200);
	http_resp_free(&r);
	/* idle keep-alive connection open while SIGTERM arrives */
	cr_assert_eq(wm_stop(&p), 0);
	char x;
	cr_assert_eq(recv(fd, &x, 1, 0), 0, "idle connection closed by the drain");
	close(fd);
	wm_proc_cleanup(&p);
}

WM_TEST(ops, health_ready_metrics_openapi)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL, NULL);
	struct http_resp r;
	cr_assert_eq(http_do(p.port, "GET", "/healthz", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200);
	char rid[64], rid2[64];
	cr_assert_gt(http_header(&r, "X-Request-Id", rid, sizeof(rid)), 4);
	http_resp_free(&r);
	/* "req_" and 16 lower-case hex digits, another per request */
	cr_assert_eq(strlen(rid), 20, "%s", rid);
	cr_assert(!strncmp(rid, "req_", 4), "%s", rid);
	cr_assert_eq(strspn(rid + 4, "0123456789abcdef"), 16, "%s", rid);
	cr_assert_eq(http_do(p.port, "GET", "/healthz", NULL, NULL, &r), 0);
	cr_assert_gt(http_header(&r, "X-Request-Id", rid2, sizeof(rid2)), 4);
	cr_assert_str_neq(rid, rid2);
	http_resp_free(&r);
	cr_assert_eq(http_do(p.port, "GET", "/readyz", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200);
	http_resp_free(&r);
	cr_assert_eq(http_do(p.port, "GET", "/metrics", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200);
	const char *must[] = {"wm_http_requests_total{route=\"/healthz\",status=\"200\"} 2",
			      "wm_http_request_duration_seconds_bucket", "wm_wal_fsync_seconds_bucket",
			      "wm_lsn ", "wm_snapshot_age_seconds", "wm_wal_batch_transactions_avg"};
	for (size_t i = 0; i < N_OF(must); i++)
		cr_assert(strstr(r.body, must[i]), "metrics lack %s", must[i]);
	http_resp_free(&r);
	cr_assert_eq(http_do(p.port, "GET", "/v1/openapi.json", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200);
	json_t *j = body_json(&r);
	cr_assert_str_eq(tc_jstr(j, "openapi"), "3.1.0");
	json_decref(j);
	http_resp_free(&r);
	wm_proc_cleanup(&p);
}

/* Run bin/wm-ctl with arguments; returns its exit status and its stdout. */
static int run_ctl(char *out, size_t out_size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int run_ctl(char *out, size_t out_size, const char *fmt, ...)
{
	char args[1024], cmd[1400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	const char *d = getenv("WM_BIN_DIR");
	snprintf(cmd, sizeof(cmd), "ASAN_OPTIONS=detect_leaks=1 %s/wm-ctl %s 2>&1", d ? d : "build/san/bin", args);
	FILE *f = popen(cmd, "r");
	size_t n = fread(out, 1, out_size - 1, f);
	out[n] = 0;
	int st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

WM_TEST(ctl, verify_counts_and_restore_to_an_lsn)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL, NULL);
	enum { N = 6 };
	char *bodies[N];
	char ids[N][64];
	create_many(p.port, N, 0, bodies, ids); /* LSN 1 is the operator key; 2..7 one per partner */
	char out[8192];
	cr_assert_eq(run_ctl(out, sizeof(out), "counts %s", p.data_dir), 1, "refused while the service runs");
	cr_assert(strstr(out, "in use"), "%s", out);
	cr_assert_eq(wm_stop(&p), 0);
	char wal[400];
	snprintf(wal, sizeof(wal), "%s/wal", p.data_dir);
	cr_assert_eq(run_ctl(out, sizeof(out), "wal verify %s", wal), 0, "%s", out);
	cr_assert(strstr(out, "first_lsn=1 last_lsn=7") && strstr(out, "WAL ok"), "%s", out);
	cr_assert_eq(run_ctl(out, sizeof(out), "counts %s", p.data_dir), 0, "%s", out);
	cr_assert(strstr(out, "lsn=7") && strstr(out, "partner") && strstr(out, " 6\n"), "%s", out);
	/* restore the state as of LSN 4 into a new directory and serve it */
	struct wm_proc q;
	wm_proc_init(&q);
	cr_assert_eq(run_ctl(out, sizeof(out), "restore %s %s --upto-lsn 5", p.data_dir, q.data_dir), 0, "%s", out);
	cr_assert(strstr(out, "restored lsn=5"), "%s", out);
	cr_assert_eq(run_ctl(out, sizeof(out), "restore %s %s", p.data_dir, q.data_dir), 1, "never over an existing dir");
	start_or_fail(&q, NULL, NULL);
	check_all_present(q.port, 4, bodies, ids);
	char path[128];
	snprintf(path, sizeof(path), "/v1/partners/%s", ids[4]);
	struct http_resp r;
	cr_assert_eq(http_do(q.port, "GET", path, NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 404, "LSN 6 is after the restore point");
	http_resp_free(&r);
	/* a flipped byte in the middle of the log is refused with file and offset */
	wm_proc_cleanup(&q);
	char seg[500];
	snprintf(seg, sizeof(seg), "%s/00000000000000000001.wal", wal);
	FILE *f = fopen(seg, "r+b");
	cr_assert_not_null(f);
	fseek(f, 64 + 60, SEEK_SET); /* inside the first frame */
	int ch = fgetc(f);
	fseek(f, 64 + 60, SEEK_SET);
	fputc(ch ^ 0x40, f);
	fclose(f);
	cr_assert_eq(run_ctl(out, sizeof(out), "wal verify %s", wal), 1, "%s", out);
	char msg[8192];
	int st = wm_start_expect_fail(&p, NULL, msg, sizeof(msg));
	cr_assert_eq(st, 1);
	cr_assert(strstr(msg, "00000000000000000001.wal") && strstr(msg, "offset"), "%s", msg);
	for (int i = 0; i < N; i++)
		free(bodies[i]);
	wm_proc_cleanup(&p);
}

/* `make run` seeds demo partners and wines once, through the API's own
 * validation and dedup, and never twice. */
WM_TEST(integration, demo_data_is_seeded_once)
{
	struct wm_proc p;
	wm_proc_init(&p);
	const char *args[] = {"--demo", "1", NULL};
	for (int run = 0; run < 2; run++) {
		start_or_fail(&p, args, NULL);
		static const char *const lists[][2] = {{"/v1/partners?page_size=200", "5"}, {"/v1/wines?page_size=200", "3"}};
		for (int i = 0; i < 2; i++) {
			struct http_resp r;
			cr_assert_eq(http_do(p.port, "GET", lists[i][0], NULL, NULL, &r), 0);
			cr_assert_eq(r.status, 200, "%s", r.body);
			json_t *j = body_json(&r);
			cr_assert_eq(json_array_size(json_object_get(j, "data")), (size_t)atoi(lists[i][1]),
				     "run %d %s: %s", run, lists[i][0], r.body);
			json_decref(j);
			http_resp_free(&r);
		}
		cr_assert_eq(wm_stop(&p), 0);
	}
	wm_proc_cleanup(&p);
}
