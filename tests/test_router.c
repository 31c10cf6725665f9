/*
 * test_router.c -- wm-router in front of three shards (DESIGN.md section 9):
 * requests reach the shard route_class.c names (seen in the router's own
 * per-shard counters), answers are relayed in request order on a pipelined
 * connection, a client's internal-looking headers are not forwarded, a shard
 * that is down is a 503 and a home that is down makes /readyz false, a 421
 * from a shard with a newer map makes the router reload and resend, and a
 * broken map on SIGHUP leaves the one in force.
 */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "tests/api_client.h"
#include "tests/cluster_harness.h"
#include "tests/harness.h"
#include "tests/wm_test.h"

#define N_SHARDS 3

struct cluster {
	struct wm_proc shard[N_SHARDS];
	struct wm_proc router;
	int ports[N_SHARDS];
	char map[400], secret[400];
};

/* The map: shard 0 every priced country but LU, FR and DE, shard 1 LU and
 * FR (FR on shard 2 instead when fr_on_2), shard 2 DE. */
static void write_map(const struct cluster *c, int version, int fr_on_2)
{
	FILE *f = fopen(c->map, "w");
	cr_assert_not_null(f);
	fprintf(f, "version %d\n", version);
	fprintf(f, "shard 0 127.0.0.1:%d AT BE BG CH CY CZ DK EE ES FI GB GR HR HU IE IT LT LV MT NL NO PL PT RO "
		   "SE SI SK\n", c->ports[0]);
	fprintf(f, "shard 1 127.0.0.1:%d LU%s\n", c->ports[1], fr_on_2 ? "" : " FR");
	fprintf(f, "shard 2 127.0.0.1:%d DE%s\n", c->ports[2], fr_on_2 ? " FR" : "");
	fclose(f);
}

static void start_shard(struct cluster *c, int i)
{
	char id[4], listen[32];
	snprintf(id, sizeof(id), "%d", i);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", c->ports[i]);
	const char *args[] = {"--listen", listen, "--shard-map", c->map, "--shard-id", id,
			      "--cluster-secret-file", c->secret, NULL};
	cr_assert_eq(wm_start(&c->shard[i], args, NULL), 0, "shard %d did not start (logs in %s)", i, c->shard[i].dir);
}

static void cluster_up_with(struct cluster *c, const char *const *router_args);

static void cluster_up(struct cluster *c) { cluster_up_with(c, NULL); }

/* Shards, then a router with router_args (NULL-terminated, may be NULL)
 * after the map and secret options. */
static void cluster_up_with(struct cluster *c, const char *const *router_args)
{
	memset(c, 0, sizeof(*c));
	for (int i = 0; i < N_SHARDS; i++) {
		wm_proc_init(&c->shard[i]);
		/* reserved for this test: distinct, and no other test's (CI run
		 * 26: "shard 2 did not start", its port handed out twice) */
		c->ports[i] = wm_cluster_free_port();
	}
	wm_proc_init(&c->router);
	c->router.program = "wm-router";
	snprintf(c->map, sizeof(c->map), "%s/map.conf", c->router.dir);
	snprintf(c->secret, sizeof(c->secret), "%s/secret", c->router.dir);
	FILE *f = fopen(c->secret, "w");
	cr_assert_not_null(f);
	fputs("router-test-secret-0123456789abcdefghijklmnop\n", f);
	fclose(f);
	cr_assert_eq(chmod(c->secret, 0600), 0);
	write_map(c, 1, 0);
	for (int i = 0; i < N_SHARDS; i++)
		start_shard(c, i);
	const char *args[16] = {"--shard-map", c->map, "--cluster-secret-file", c->secret};
	for (unsigned k = 0, n = 4; router_args && router_args[k] && n < 15; k++)
		args[n++] = router_args[k];
	cr_assert_eq(wm_start(&c->router, args, NULL), 0, "router did not start (logs in %s)", c->router.dir);
	/* ready once its replica of the keys caught up with the home */
	int ready = 0;
	for (int t = 0; t < 500 && !ready; t++) {
		struct http_resp r;
		if (http_do(c->router.port, "GET", "/readyz", NULL, NULL, &r) == 0) {
			ready = r.status == 200;
			http_resp_free(&r);
		}
		if (!ready)
			usleep(20 * 1000);
	}
	cr_assert(ready, "the router never became ready (logs in %s)", c->router.dir);
}

static void cluster_down(struct cluster *c)
{
	wm_proc_cleanup(&c->router);
	for (int i = 0; i < N_SHARDS; i++)
		wm_proc_cleanup(&c->shard[i]);
}

/* A number after `name` in the router's /metrics (-1 when absent). */
static long router_metric(const struct cluster *c, const char *name)
{
	struct http_resp r;
	cr_assert_eq(http_do(c->router.port, "GET", "/metrics", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	const char *at = strstr(r.body, name);
	long v = at ? strtol(at + strlen(name), NULL, 10) : -1;
	http_resp_free(&r);
	return v;
}

static int status_of(int port, const char *method, const char *path, const char *body)
{
	struct http_resp r;
	cr_assert_eq(http_do(port, method, path, NULL, body, &r), 0);
	int s = r.status;
	http_resp_free(&r);
	return s;
}

#define SHARD_CALLS(i) "wm_router_shard_calls_total{shard=\"" #i "\"} "

/* Bind 127.0.0.1:port with or without SO_REUSEADDR, and listen when
 * bound: 0, or the errno of what failed. */
static int try_listen(int port, int reuse)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	cr_assert(fd >= 0);
	if (reuse)
		cr_assert_eq(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int err = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 4) ? errno : 0;
	close(fd);
	return err;
}

/* The harness's ports (what every cluster test runs on): a reserved port
 * is refused to a plain bind, taken by a server that sets SO_REUSEADDR as
 * net/server.c does, again after that server is gone (a SIGKILLed shard
 * restarts on it), and free for anyone once released. */
WM_TEST(router, harness_ports_are_held_for_the_test)
{
	int p = wm_cluster_free_port(), q = wm_cluster_free_port();
	cr_assert_neq(p, q);
	cr_assert_eq(try_listen(p, 0), EADDRINUSE, "a reserved port is refused to another bind");
	cr_assert_eq(try_listen(p, 1), 0, "a server with SO_REUSEADDR listens on it");
	cr_assert_eq(try_listen(p, 1), 0, "and again after a restart");
	cr_assert_eq(try_listen(p, 0), EADDRINUSE, "still held");
	wm_cluster_release_port(p);
	cr_assert_eq(try_listen(p, 0), 0, "released");
	cr_assert_eq(try_listen(q, 0), EADDRINUSE, "the other one is still held");
}

WM_TEST(router, sends_each_request_to_its_owner, .timeout = 60)
{
	struct cluster c;
	cluster_up(&c);
	struct http_resp r;
	/* the catalogue: the home answers, with its rate-limit headers */
	cr_assert_eq(http_do(c.router.port, "GET", "/v1/partners?page_size=1", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	char v[64];
	cr_assert_gt(http_header(&r, "RateLimit", v, sizeof(v)), 0);
	/* one X-Request-Id (the router's), no internal header */
	const char *first = strcasestr(r.head, "X-Request-Id:");
	cr_assert_not_null(first);
	cr_assert_null(strcasestr(first + 1, "X-Request-Id:"));
	cr_assert_null(strcasestr(r.head, "X-WM-"));
	http_resp_free(&r);
	long s0 = router_metric(&c, SHARD_CALLS(0)), s1 = router_metric(&c, SHARD_CALLS(1)),
	     s2 = router_metric(&c, SHARD_CALLS(2));
	/* an order of DE goes to shard 2, one of FR to shard 1 */
	status_of(c.router.port, "GET", "/v1/orders/ord_DE_01HZZZZZZZ0000ABCDEF", NULL);
	cr_assert_eq(router_metric(&c, SHARD_CALLS(2)), s2 + 1);
	status_of(c.router.port, "POST", "/v1/orders/ord_FR_01HZZZZZZZ0000ABCDEF/cancel", "{}");
	cr_assert_eq(router_metric(&c, SHARD_CALLS(1)), s1 + 1);
	/* a quote by its destination */
	status_of(c.router.port, "POST", "/v1/orders/quote-calculate", "{\"destination_country\":\"FR\",\"lines\":[]}");
	cr_assert_eq(router_metric(&c, SHARD_CALLS(1)), s1 + 2);
	/* a location by its address's country */
	status_of(c.router.port, "POST", "/v1/stock-locations", "{\"address\":{\"country\":\"DE\"}}");
	cr_assert_eq(router_metric(&c, SHARD_CALLS(2)), s2 + 2);
	/* a hold release: every shard is asked */
	long h0 = router_metric(&c, SHARD_CALLS(0));
	status_of(c.router.port, "POST", "/v1/holds/no-such-hold/release", "{}");
	cr_assert_eq(router_metric(&c, SHARD_CALLS(0)), h0 + 2); /* + the /metrics just read */
	cr_assert_eq(router_metric(&c, SHARD_CALLS(1)), s1 + 3);
	cr_assert_eq(router_metric(&c, SHARD_CALLS(2)), s2 + 3);
	cr_assert_gt(router_metric(&c, SHARD_CALLS(0)), s0);
	/* the router's own routes */
	cr_assert_eq(http_do(c.router.port, "GET", "/healthz", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200);
	cr_assert_str_eq(r.body, "{\"status\":\"ok\",\"storage\":\"ok\"}");
	http_resp_free(&r);
	/* HEAD: the headers of the GET, no body, and at once (the shard is
	 * asked a GET: its HEAD answer announces a body it does not send) */
	int fd = tcp_connect(c.router.port);
	cr_assert_geq(fd, 0);
	char req[256], all[4096];
	int n = snprintf(req, sizeof(req), "HEAD /v1/partners?page_size=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
			 "Connection: close\r\n\r\n", WM_TEST_KEY);
	cr_assert_eq(write(fd, req, (size_t)n), n);
	size_t len = 0;
	ssize_t k;
	while (len < sizeof(all) - 1 && (k = read(fd, all + len, sizeof(all) - 1 - len)) > 0)
		len += (size_t)k;
	all[len] = 0;
	close(fd);
	cr_assert(!strncmp(all, "HTTP/1.1 200", 12), "%s", all);
	const char *cl = strcasestr(all, "\r\nContent-Length: ");
	cr_assert(cl && atoi(cl + 18) > 0, "HEAD announces the GET's length: %s", all);
	const char *end = strstr(all, "\r\n\r\n");
	cr_assert(end && end + 4 == all + len, "HEAD answered with a body: %s", all);
	/* /metrics needs the operator key (the home checks it) */
	cr_assert_eq(http_do(c.router.port, "GET", "/metrics", "Authorization: none\r\n", NULL, &r), 0);
	cr_assert_eq(r.status, 401);
	cr_assert_null(strstr(r.body, "wm_router_"));
	http_resp_free(&r);
	cluster_down(&c);
}

/* The "200 OK" status lines in a stream of answers. */
static int oks_in(const char *all)
{
	int n = 0;
	for (const char *p = all; (p = strstr(p, "HTTP/1.1 200 OK")); p++)
		n++;
	return n;
}

WM_TEST(router, pipelined_answers_keep_their_order, .timeout = 60)
{
	struct cluster c;
	cluster_up(&c);
	int fd = tcp_connect(c.router.port);
	cr_assert_geq(fd, 0);
	/* forwarded, local, forwarded: the local answer must wait its turn */
	char req[1024];
	int n = snprintf(req, sizeof(req),
			 "GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n"
			 "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
			 "GET /v1/wines?page_size=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
			 "X-WM-Signature: t=1,v1=00\r\nConnection: close\r\n\r\n",
			 WM_TEST_KEY, WM_TEST_KEY);
	cr_assert_eq(write(fd, req, (size_t)n), n);
	/* read the three answers (the last closes) as one stream */
	static char all[1 << 20];
	read_until_close(fd, all, sizeof(all));
	const char *a = strstr(all, "\"openapi\""), *b = strstr(all, "{\"status\":\"ok\",\"storage\":\"ok\"}"),
		   *d = b ? strstr(b, "{\"data\":[") : NULL;
	cr_assert(a && b && d, "missing an answer: %s", all);
	cr_assert(a < b && b < d, "answers out of order: %s", all);
	/* three 200s: the client's own X-WM-Signature was dropped, the router's used */
	cr_assert_eq(oks_in(all), 3, "%s", all);
	cluster_down(&c);
}

/* The router keeps finished requests' state for the next ones (router.c
 * fwd_alloc): at most ROUTER_FWD_SPARE forwarding states, REDGE_SPARE edge
 * states and HC_CALL_SPARE calls per shard pool.  With the home stopped,
 * n keyed reads of it wait at once; once all are answered, each kind keeps
 * min(n, its bound) -- below and past every bound.  (The /metrics request
 * that reads them holds one forwarding state and one call of shard 0's
 * pool while its answer is written.)  A request whose buffers grew past
 * the byte bound is not kept. */
WM_TEST(router, spare_request_states_stay_within_their_bounds, .timeout = 90)
{
	struct cluster c;
	cluster_up(&c);
	/* the bounds, as the router reports them */
	long lf = router_metric(&c, "wm_router_spare_states_limit{kind=\"forward\"} "),
	     le = router_metric(&c, "wm_router_spare_states_limit{kind=\"edge\"} "),
	     lc = router_metric(&c, "wm_router_spare_states_limit{kind=\"shard_call\"} ");
	cr_assert(lf > 10 && le > 10 && lc > 10 && lf < 1000 && le < 1000 && lc < 1000, "limits %ld %ld %ld", lf, le,
		  lc);
	long most = lf > le ? lf : le;
	most = most > lc ? most : lc;
	const long waves[] = {10, most + 6}; /* below every bound, then past all */
	int *fds = calloc((size_t)most + 6, sizeof(int));
	cr_assert_not_null(fds);
	static char all[1 << 16];
	char req[256];
	int rl = snprintf(req, sizeof(req),
			  "GET /v1/stock-locations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
			  "Connection: close\r\n\r\n",
			  WM_TEST_KEY);
	for (unsigned w = 0; w < sizeof(waves) / sizeof(waves[0]); w++) {
		long n = waves[w];
		cr_assert_eq(kill(c.shard[0].pid, SIGSTOP), 0);
		for (long i = 0; i < n; i++) {
			fds[i] = tcp_connect(c.router.port);
			cr_assert_geq(fds[i], 0);
			cr_assert_eq(write(fds[i], req, (size_t)rl), rl);
		}
		usleep(500 * 1000); /* the router reads and forwards them all meanwhile */
		cr_assert_eq(kill(c.shard[0].pid, SIGCONT), 0);
		for (long i = 0; i < n; i++) {
			read_until_close(fds[i], all, sizeof(all));
			close(fds[i]);
			cr_assert_eq(oks_in(all), 1, "wave %u, request %ld: %.300s", w, i, all);
		}
		long fwd = router_metric(&c, "wm_router_spare_states{kind=\"forward\"} "),
		     edge = router_metric(&c, "wm_router_spare_states{kind=\"edge\"} "),
		     calls = router_metric(&c, "wm_router_shard_spare_calls{shard=\"0\"} ");
		cr_assert_eq(fwd, (n < lf ? n : lf) - 1, "wave of %ld: %ld forwarding states kept", n, fwd);
		cr_assert_eq(edge, n < le ? n : le, "wave of %ld: %ld edge states kept", n, edge);
		cr_assert_eq(calls, (n < lc ? n : lc) - 1, "wave of %ld: %ld calls kept", n, calls);
	}
	/* past the byte bound (router.c ROUTER_FWD_SPARE_BYTES, 64 KiB): a
	 * request whose body alone is bigger takes a spare and is not kept
	 * (whatever the shard answers it) */
	size_t big = (64u << 10) + 512;
	char *body = malloc(big + 64);
	cr_assert_not_null(body);
	int bl = snprintf(body, 64, "{\"name\":\"Too Big\"");
	memset(body + bl, ' ', big);
	memcpy(body + bl + big, "}", 2);
	struct http_resp r;
	cr_assert_eq(http_do(c.router.port, "POST", "/v1/stock-locations", "Content-Type: application/json\r\n", body,
			     &r),
		     0);
	cr_assert_gt(r.status, 0);
	http_resp_free(&r);
	free(body);
	long fwd = router_metric(&c, "wm_router_spare_states{kind=\"forward\"} ");
	cr_assert_eq(fwd, lf - 2, "after a request past the byte bound: %ld forwarding states kept", fwd);
	free(fds);
	cluster_down(&c);
}

/* A request that arrives while the one before it is being forwarded (the
 * server keeps EPOLLIN registered during a deferred request and drops it
 * only once the socket turns readable: net/server.c conn_update_interest)
 * is answered after it, and a half-close that arrives meanwhile still gets
 * both answers before the close. */
WM_TEST(router, a_request_sent_while_one_is_forwarded_waits_its_turn, .timeout = 60)
{
	struct cluster c;
	cluster_up(&c);
	for (int round = 0; round < 20; round++) {
		int fd = tcp_connect(c.router.port);
		cr_assert_geq(fd, 0);
		char first[512], second[512];
		int n1 = snprintf(first, sizeof(first),
				  "GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n",
				  WM_TEST_KEY);
		int n2 = snprintf(second, sizeof(second),
				  "GET /v1/wines?page_size=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
				  "Connection: close\r\n\r\n",
				  WM_TEST_KEY);
		/* two writes: the second lands while the first is forwarded */
		cr_assert_eq(write(fd, first, (size_t)n1), n1);
		cr_assert_eq(write(fd, second, (size_t)n2), n2);
		if (round % 2) /* and the client's half-close, meanwhile */
			cr_assert_eq(shutdown(fd, SHUT_WR), 0);
		static char all[1 << 20];
		read_until_close(fd, all, sizeof(all));
		const char *a = strstr(all, "\"openapi\""), *d = strstr(all, "{\"data\":[");
		cr_assert(a && d, "round %d: missing an answer: %.300s", round, all);
		cr_assert(a < d, "round %d: answers out of order", round);
		int oks = oks_in(all);
		cr_assert_eq(oks, 2, "round %d: %d answers of 200", round, oks);
	}
	cluster_down(&c);
}

WM_TEST(router, shard_down_is_503_and_home_down_is_not_ready, .timeout = 60)
{
	struct cluster c;
	cluster_up(&c);
	struct http_resp r;
	for (int i = 0; i < 100 && status_of(c.router.port, "GET", "/readyz", NULL) != 200; i++)
		usleep(50 * 1000);
	cr_assert_eq(status_of(c.router.port, "GET", "/readyz", NULL), 200);
	wm_kill9(&c.shard[2]);
	cr_assert_eq(http_do(c.router.port, "GET", "/v1/orders/ord_DE_01HZZZZZZZ0000ABCDEF", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 503, "%s", r.body);
	cr_assert(strstr(r.body, "shard_unavailable"), "%s", r.body);
	char v[16];
	cr_assert_gt(http_header(&r, "Retry-After", v, sizeof(v)), 0);
	http_resp_free(&r);
	/* the home down: not ready within the window, ready again after */
	wm_kill9(&c.shard[0]);
	int st = 200;
	for (int i = 0; i < 100 && (st = status_of(c.router.port, "GET", "/readyz", NULL)) == 200; i++)
		usleep(100 * 1000);
	cr_assert_eq(st, 503);
	start_shard(&c, 0);
	for (int i = 0; i < 100 && (st = status_of(c.router.port, "GET", "/readyz", NULL)) != 200; i++)
		usleep(100 * 1000);
	cr_assert_eq(st, 200);
	cluster_down(&c);
}

WM_TEST(router, misdirected_reloads_the_map_and_resends, .timeout = 60)
{
	struct cluster c;
	cluster_up(&c);
	/* FR moves to shard 2: the shards learn it, the router not yet */
	write_map(&c, 2, 1);
	for (int i = 0; i < N_SHARDS; i++)
		cr_assert_eq(kill(c.shard[i].pid, SIGHUP), 0);
	usleep(300 * 1000);
	long s2 = router_metric(&c, SHARD_CALLS(2));
	struct http_resp r;
	cr_assert_eq(http_do(c.router.port, "GET", "/v1/orders/ord_FR_01HZZZZZZZ0000ABCDEF", NULL, NULL, &r), 0);
	cr_assert_neq(r.status, 421, "the router relayed the 421: %s", r.body);
	http_resp_free(&r);
	cr_assert_eq(router_metric(&c, "wm_router_misdirected_total "), 1);
	cr_assert_eq(router_metric(&c, "wm_router_map_version "), 2);
	cr_assert_eq(router_metric(&c, SHARD_CALLS(2)), s2 + 1);
	/* a broken map on SIGHUP: the one in force stays */
	FILE *f = fopen(c.map, "a");
	fputs("shard x nonsense\n", f);
	fclose(f);
	cr_assert_eq(kill(c.router.pid, SIGHUP), 0);
	usleep(300 * 1000);
	cr_assert_eq(router_metric(&c, "wm_router_map_version "), 2);
	cr_assert_eq(status_of(c.router.port, "GET", "/healthz", NULL), 200);
	cluster_down(&c);
}

WM_TEST(router, refuses_to_start_without_a_map, .timeout = 30)
{
	struct wm_proc p;
	wm_proc_init(&p);
	p.program = "wm-router";
	char msg[2048];
	cr_assert_neq(wm_start_expect_fail(&p, NULL, msg, sizeof(msg)), 0);
	cr_assert(strstr(msg, "needs --shard-map FILE and --cluster-secret-file FILE"), "%s", msg);
	/* an engine option is not the router's */
	const char *args[] = {"--demo", "1", NULL};
	cr_assert_neq(wm_start_expect_fail(&p, args, msg, sizeof(msg)), 0);
	cr_assert(strstr(msg, "unknown option --demo"), "%s", msg);
	wm_proc_cleanup(&p);
}

WM_TEST(router, ctl_cluster_status_shows_every_process, .timeout = 60)
{
	struct cluster c;
	cluster_up(&c);
	char args[1200], out[8192];
	snprintf(args, sizeof(args), "cluster status --shard-map %s --cluster-secret-file %s --router 127.0.0.1:%d", c.map,
		 c.secret, c.router.port);
	cr_assert_eq(wm_ctl_run(args, out, sizeof(out)), 0, "%s", out);
	for (int i = 0; i < N_SHARDS; i++) {
		char want[64];
		snprintf(want, sizeof(want), "\"shard_id\":%d,\"map_version\":1", i);
		cr_assert(strstr(out, want), "no line for shard %d: %s", i, out);
	}
	cr_assert(strstr(out, "router 127.0.0.1:"), "%s", out);
	cr_assert(strstr(out, "\"process\":\"wm-router\",\"map_version\":1,\"shards\":3"), "%s", out);
	/* the router's internal status needs the cluster's signature, as a shard's does */
	struct http_resp r;
	cr_assert_eq(http_do(c.router.port, "GET", "/internal/cluster/status", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 401, "%s", r.body);
	http_resp_free(&r);
	/* a shard down: named, and the exit status says so */
	wm_kill9(&c.shard[1]);
	cr_assert_eq(wm_ctl_run(args, out, sizeof(out)), 1, "%s", out);
	cr_assert(strstr(out, "cannot connect"), "%s", out);
	cr_assert(strstr(out, "1 process(es) did not answer"), "%s", out);
	cluster_down(&c);
}

/*
 * The router runs no domain handler and links none (issue 13 item 9): its
 * binary holds no symbol of the engine's storage, edge, catalogue, supply,
 * stock, pricing or orders code (names picked from each layer).
 */
WM_TEST(router, links_no_engine_layer, .timeout = 30)
{
	/* the edge's store (shard_open_with, auth_request) is linked; no
	 * handler and no domain module is */
	static const char *const engine_only[] = {"api_handle", "api_route_table", "partner_routes", "wine_ingest",
						  "offer_routes", "inv_atp", "quote_compute", "order_routes",
						  "saga_drive", "listing_routes", "channel_routes", "shard_open",
						  "resource_tables", NULL};
	char cmd[1024], line[512];
	const char *d = getenv("WM_BIN_DIR");
	snprintf(cmd, sizeof(cmd), "nm %s/wm-router", d ? d : "build/san/bin");
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	int symbols = 0;
	while (fgets(line, sizeof(line), p)) {
		symbols++;
		line[strcspn(line, "\n")] = 0;
		const char *name = strrchr(line, ' ');
		name = name ? name + 1 : line;
		for (int i = 0; engine_only[i]; i++)
			cr_assert(strcmp(name, engine_only[i]), "wm-router links %s", name);
	}
	cr_assert_eq(pclose(p), 0, "nm failed");
	cr_assert_gt(symbols, 100, "nm listed too little to be a real check");
}

/* ---- the edge at the router (shard-router/edge.h) ----------------------- */

/*
 * One key, one bucket, whatever shard a request is for: with a burst of 3,
 * requests alternating between the FR and the DE shard are refused at the
 * fourth, by the router (the shard never sees it).  With the buckets at
 * the shards, each shard would have let three through.
 */
WM_TEST(router, a_key_has_one_rate_bucket_across_shards, .timeout = 60)
{
	struct cluster c;
	const char *ra[] = {"--key-rate-rps", "1", "--key-rate-burst", "3", NULL};
	cluster_up_with(&c, ra);
	static const char *const paths[] = {"/v1/orders/ord_FR_01HZZZZZZZ0000ABCDEF",
					    "/v1/orders/ord_DE_01HZZZZZZZ0000ABCDEF"};
	for (int i = 0; i < 3; i++)
		cr_assert_eq(status_of(c.router.port, "GET", paths[i % 2], NULL), 404, "request %d", i);
	long s2 = router_metric(&c, SHARD_CALLS(2));
	struct http_resp r;
	cr_assert_eq(http_do(c.router.port, "GET", paths[1], NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 429, "%s", r.body);
	cr_assert(strstr(r.body, "rate_limited"), "%s", r.body);
	char v[64];
	cr_assert_gt(http_header(&r, "Retry-After", v, sizeof(v)), 0);
	cr_assert_gt(http_header(&r, "RateLimit-Policy", v, sizeof(v)), 0);
	http_resp_free(&r);
	/* /metrics itself took no token of this key's bucket (it is the home's) */
	cr_assert_eq(router_metric(&c, SHARD_CALLS(2)), s2, "the refused request reached its shard");
	cluster_down(&c);
}

/* The read audit is the router's own log: every authenticated read through
 * it, with the rows the shard reported, served by GET /v1/audit. */
WM_TEST(router, the_read_audit_is_written_and_served_by_the_router, .timeout = 60)
{
	struct cluster c;
	cluster_up(&c);
	json_decref(tc_expect(c.router.port, "POST", "/v1/partners", NULL,
			      "{\"legal_name\":\"Estate\",\"country\":\"FR\",\"roles\":[\"originator\"],"
			      "\"originator_type\":\"estate\"}", 201));
	json_t *page = tc_expect(c.router.port, "GET", "/v1/partners?page_size=2", NULL, NULL, 200);
	size_t rows = json_array_size(json_object_get(page, "data"));
	json_decref(page);
	cr_assert_gt(rows, 0, "the partner just written is listed");
	/* a list that fans out (orders): merged page of 0 rows */
	cr_assert_eq(status_of(c.router.port, "GET", "/v1/orders?page_size=5", NULL), 200);
	json_t *a = tc_expect(c.router.port, "GET", "/v1/audit?page_size=200", NULL, NULL, 200);
	json_t *rec;
	size_t i;
	int seen_partners = 0, seen_orders = 0;
	json_array_foreach(json_object_get(a, "data"), i, rec) {
		const char *ep = json_string_value(json_object_get(rec, "endpoint"));
		json_int_t n = json_integer_value(json_object_get(rec, "rows_returned"));
		if (ep && !strcmp(ep, "GET /v1/partners")) {
			seen_partners++;
			cr_assert_eq((size_t)n, rows, "rows_returned %lld, the page had %zu", (long long)n, rows);
			cr_assert_eq(json_integer_value(json_object_get(rec, "status")), 200);
		}
		if (ep && !strcmp(ep, "GET /v1/orders")) {
			seen_orders++;
			cr_assert_eq(n, 0);
		}
	}
	json_decref(a);
	cr_assert_eq(seen_partners, 1, "one audit row for the partner list");
	cr_assert_eq(seen_orders, 1, "one audit row for the merged orders page, not one per shard");
	cluster_down(&c);
}
