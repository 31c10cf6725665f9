/*
 * test_http_client.c -- the outbound HTTP/1.1 pool (net/client.c) on a real
 * event loop in the test process: calls to a real wm-shard (keep-alive
 * reuse within max_conns), then each failure a peer can cause, from small
 * servers run on the same loop: no listener, a listener that never
 * accepts (deadline), one that closes at once, one that answers garbage,
 * an answer past max_response_bytes; the pool and queue bounds at and past
 * their edge.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/client.h"
#include "tests/harness.h"
#include "tests/wm_test.h"

struct outcome {
	int done;
	int status;
	char err[128];
	char body[256];
};

struct run {
	struct ev_loop *loop;
	struct hc_pool *pool;
	int pending;
	uint64_t stop_at;
};

static struct run R;

static void on_done(void *arg, const struct hc_response *r, const char *err)
{
	struct outcome *o = arg;
	cr_assert_not(o->done, "done called twice");
	o->done = 1;
	if (r) {
		o->status = r->status;
		snprintf(o->body, sizeof(o->body), "%.*s", (int)r->body_len, r->body);
	} else {
		o->status = -1;
		snprintf(o->err, sizeof(o->err), "%s", err);
	}
	R.pending--;
}

static void tick(struct ev_loop *loop, void *arg)
{
	(void)arg;
	hc_tick(R.pool);
	if (R.pending == 0 || ev_now_ms(loop) >= R.stop_at)
		ev_stop(loop);
}

/* Run the loop until every call is done (or 20 s pass). */
static void run_until_done(void)
{
	R.stop_at = ev_now_ms(R.loop) + 20000;
	ev_set_tick(R.loop, 5, tick, NULL);
	cr_assert_eq(ev_run(R.loop), 0);
	cr_assert_eq(R.pending, 0, "%d calls never finished", R.pending);
}

static void pool(const char *addr, uint32_t conns, uint32_t queue, uint32_t max_body)
{
	char err[200];
	R.loop = R.loop ? R.loop : ev_new();
	struct hc_config cfg = {.addr = addr, .max_conns = conns, .max_queue = queue, .max_response_bytes = max_body};
	R.pool = hc_pool_new(R.loop, &cfg, err, sizeof(err));
	cr_assert_not_null(R.pool, "%s", err);
}

static void call(const char *method, const char *path, const char *headers, const char *body, uint32_t timeout_ms,
		 struct outcome *o)
{
	memset(o, 0, sizeof(*o));
	struct hc_request rq = {.method = method, .path = path, .headers = headers, .body = body,
				.body_len = body ? strlen(body) : 0, .timeout_ms = timeout_ms};
	cr_assert_eq(hc_send(R.pool, &rq, on_done, o), 0, "hc_send refused %s %s", method, path);
	R.pending++;
}

static void finish(void)
{
	hc_pool_free(R.pool);
	R.pool = NULL;
	ev_free(R.loop);
	R.loop = NULL;
}

/* Start a shard and a pool for it: 2 connections, a queue of 64. */
static void shard_pool(struct wm_proc *p)
{
	wm_proc_init(p);
	cr_assert_eq(wm_start(p, NULL, NULL), 0);
	char addr[32];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", p->port);
	pool(addr, 2, 64, 1 << 20);
}

WM_TEST(http_client, calls_to_a_real_shard_reuse_connections, .timeout = 60)
{
	struct wm_proc p;
	shard_pool(&p);
	static struct outcome o[20], created;
	for (int i = 0; i < 20; i++)
		call("GET", "/healthz", NULL, NULL, 10000, &o[i]);
	call("POST", "/v1/partners", "Authorization: Bearer " WM_TEST_KEY "\r\nContent-Type: application/json\r\n",
	     "{\"legal_name\":\"Pool Partner\",\"country\":\"FR\",\"roles\":[\"seller\"]}", 10000, &created);
	run_until_done();
	for (int i = 0; i < 20; i++) {
		cr_assert_eq(o[i].status, 200, "call %d: %d %s", i, o[i].status, o[i].err);
		cr_assert(strstr(o[i].body, "\"status\":\"ok\""), "%s", o[i].body);
	}
	cr_assert_eq(created.status, 201, "%d %s %s", created.status, created.err, created.body);
	cr_assert(strstr(created.body, "Pool Partner"), "%s", created.body);
	struct hc_stats st;
	hc_stats(R.pool, &st);
	cr_assert_leq(st.connects, 2, "max_conns 2, %llu connects", (unsigned long long)st.connects);
	cr_assert_eq(st.ok, 21);
	cr_assert_eq(st.queued, 0);
	/* the shard closes an idle connection only after its idle time-out: reuse again */
	call("GET", "/healthz", NULL, NULL, 10000, &o[0]);
	run_until_done();
	cr_assert_eq(o[0].status, 200);
	hc_stats(R.pool, &st);
	cr_assert_leq(st.connects, 2);
	finish();
	wm_proc_cleanup(&p);
}

/* A partner-creating body named `name`, padded with `pad` spaces of JSON
 * whitespace (malloc'd). */
static char *partner_body(const char *name, size_t pad)
{
	char *b = malloc(pad + 256);
	cr_assert_not_null(b);
	int n = snprintf(b, 256, "{\"legal_name\":\"%s\",\"country\":\"FR\",\"roles\":[\"seller\"]", name);
	memset(b + n, ' ', pad);
	memcpy(b + n + pad, "}", 2);
	return b;
}

/* Finished calls are kept for reuse with their request buffers
 * (HC_CALL_SPARE of them, each buffer up to HC_SPARE_MAX_BYTES): a reused
 * call carries its own request only, whatever the one before it held, and
 * the bounds hold at and past their edges. */
WM_TEST(http_client, a_reused_call_carries_only_its_own_request, .timeout = 60)
{
	struct wm_proc p;
	shard_pool(&p);
	static const char hdrs[] = "Authorization: Bearer " WM_TEST_KEY "\r\nContent-Type: application/json\r\n";
	/* past the count: 40 calls at once, all kept but HC_CALL_SPARE */
	static struct outcome o[HC_CALL_SPARE + 8];
	for (unsigned i = 0; i < HC_CALL_SPARE + 8; i++)
		call("GET", "/healthz", NULL, NULL, 10000, &o[i]);
	run_until_done();
	for (unsigned i = 0; i < HC_CALL_SPARE + 8; i++)
		cr_assert_eq(o[i].status, 200, "call %u: %d %s", i, o[i].status, o[i].err);
	struct hc_stats st;
	hc_stats(R.pool, &st);
	cr_assert_eq(st.spare, HC_CALL_SPARE, "%u calls kept", st.spare);
	/* one at a time, so each takes the call the one before gave back:
	 * a long request (just under the byte bound), then short ones */
	struct {
		const char *name;
		size_t pad;
	} steps[] = {{"Reuse Long", HC_SPARE_MAX_BYTES - 1024}, {"Reuse Short", 0}, {NULL, 0},
		     {"Reuse Past The Bound", HC_SPARE_MAX_BYTES}, {"Reuse After", 3}};
	for (unsigned k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		struct outcome *x = &o[k];
		if (!steps[k].name) {
			call("GET", "/healthz", NULL, NULL, 10000, x);
			run_until_done();
			cr_assert_eq(x->status, 200, "step %u: %d %s", k, x->status, x->err);
			cr_assert(strstr(x->body, "\"status\":\"ok\""), "step %u: %s", k, x->body);
		} else {
			char *b = partner_body(steps[k].name, steps[k].pad);
			call("POST", "/v1/partners", hdrs, b, 10000, x);
			free(b);
			run_until_done();
			cr_assert_eq(x->status, 201, "step %u: %d %s %s", k, x->status, x->err, x->body);
			char want[64];
			snprintf(want, sizeof(want), "\"legal_name\":\"%s\"", steps[k].name);
			cr_assert(strstr(x->body, want), "step %u: %s", k, x->body);
		}
		hc_stats(R.pool, &st);
		/* the call past the byte bound is freed, not kept: one fewer */
		unsigned want_spare = k >= 3 ? HC_CALL_SPARE - 1 : HC_CALL_SPARE;
		cr_assert_eq(st.spare, want_spare, "step %u: %u calls kept", k, st.spare);
	}
	finish();
	wm_proc_cleanup(&p);
}

/* A listening socket on a free loopback port; its port into *port. */
static int listener(int *port, int backlog)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(fd, backlog), 0);
	socklen_t sl = sizeof(sa);
	getsockname(fd, (struct sockaddr *)&sa, &sl);
	*port = ntohs(sa.sin_port);
	return fd;
}

WM_TEST(http_client, refused_connect_is_reported_from_the_loop, .timeout = 30)
{
	int port, fd = listener(&port, 1);
	close(fd); /* nothing listens there now */
	char addr[32];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	pool(addr, 1, 4, 1024);
	struct outcome o;
	call("GET", "/x", NULL, NULL, 5000, &o);
	cr_assert_not(o.done, "reported from inside hc_send");
	run_until_done();
	cr_assert_eq(o.status, -1);
	cr_assert(strstr(o.err, "connect failed"), "%s", o.err);
	finish();
}

WM_TEST(http_client, deadline_and_pool_bounds, .timeout = 30)
{
	int port, fd = listener(&port, 8); /* accepts in the kernel, never answers */
	char addr[32];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	pool(addr, 1, 1, 1024);
	struct outcome a, b;
	call("GET", "/a", NULL, NULL, 200, &a); /* on the one connection */
	call("GET", "/b", NULL, NULL, 400, &b); /* the one queue slot: the edge */
	struct hc_request rq = {.method = "GET", .path = "/c", .timeout_ms = 100};
	static struct outcome c;
	cr_assert_eq(hc_send(R.pool, &rq, on_done, &c), -1, "past the queue bound");
	struct hc_stats st;
	hc_stats(R.pool, &st);
	cr_assert_eq(st.refused_full, 1);
	cr_assert_eq(st.queued, 1);
	run_until_done();
	cr_assert_eq(a.status, -1);
	cr_assert_str_eq(a.err, "timed out");
	cr_assert_eq(b.status, -1);
	cr_assert(strstr(b.err, "timed out"), "%s", b.err);
	cr_assert_not(c.done);
	hc_stats(R.pool, &st);
	cr_assert_eq(st.timeouts, 2);
	cr_assert_eq(st.queued, 0);
	finish();
	close(fd);
}

/* A one-shot server on the loop: accept, read the request (non-blocking,
 * from the loop: the client is on the same thread), write `reply` (may be
 * empty), close. */
struct oneshot {
	struct ev_handle h;      /* the listener */
	struct ev_handle conn;   /* the accepted connection */
	const char *reply;
	size_t reply_len;
};

static void oneshot_read(struct ev_loop *loop, struct ev_handle *h, uint32_t events)
{
	(void)events;
	struct oneshot *s = h->arg;
	char req[4096];
	ssize_t n = recv(h->fd, req, sizeof(req), MSG_DONTWAIT);
	if (n < 0)
		return; /* nothing yet */
	if (s->reply_len)
		cr_assert_eq(send(h->fd, s->reply, s->reply_len, MSG_NOSIGNAL), (ssize_t)s->reply_len);
	ev_del(loop, h);
	close(h->fd);
}

static void oneshot_accept(struct ev_loop *loop, struct ev_handle *h, uint32_t events)
{
	(void)events;
	struct oneshot *s = h->arg;
	int c = accept4(h->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (c < 0)
		return;
	s->conn = (struct ev_handle){.fd = c, .fn = oneshot_read, .arg = s};
	cr_assert_eq(ev_add(loop, &s->conn, EPOLLIN), 0);
}

static void against(const char *reply, size_t reply_len, uint32_t max_body, struct outcome *o)
{
	int port;
	static struct oneshot s;
	s.h = (struct ev_handle){.fd = listener(&port, 8), .fn = oneshot_accept, .arg = &s};
	s.reply = reply;
	s.reply_len = reply_len;
	char addr[32];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	pool(addr, 1, 0, max_body);
	cr_assert_eq(ev_add(R.loop, &s.h, EPOLLIN), 0);
	call("POST", "/y", "X-Test: 1\r\n", "{}", 5000, o);
	run_until_done();
	ev_del(R.loop, &s.h);
	close(s.h.fd);
	finish();
}

WM_TEST(http_client, what_a_peer_can_do_wrong, .timeout = 60)
{
	struct outcome o;
	against("", 0, 1024, &o);
	cr_assert_eq(o.status, -1);
	cr_assert(strstr(o.err, "peer closed"), "%s", o.err);
	static const char garbage[] = "garbage\r\n\r\n";
	against(garbage, sizeof(garbage) - 1, 1024, &o);
	cr_assert_str_eq(o.err, "malformed status line");
	static const char chunked[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
	against(chunked, sizeof(chunked) - 1, 1024, &o);
	cr_assert_str_eq(o.err, "unframed response (Transfer-Encoding)");
	static const char two_cl[] = "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx";
	against(two_cl, sizeof(two_cl) - 1, 1024, &o);
	cr_assert_str_eq(o.err, "response without exactly one Content-Length");
	static const char short_body[] = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
	against(short_body, sizeof(short_body) - 1, 1024, &o);
	cr_assert(strstr(o.err, "before the response"), "%s", o.err);
	/* max_response_bytes: 10 is the edge, 11 past it */
	static const char ten[] = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\n0123456789";
	against(ten, sizeof(ten) - 1, 10, &o);
	cr_assert_eq(o.status, 200, "%s", o.err);
	cr_assert_str_eq(o.body, "0123456789");
	static const char eleven[] = "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n0123456789a";
	against(eleven, sizeof(eleven) - 1, 10, &o);
	cr_assert_str_eq(o.err, "response larger than max_response_bytes");
}

WM_TEST(http_client, bad_configuration_and_requests)
{
	char err[200];
	struct ev_loop *loop = ev_new();
	struct hc_config cfg = {.addr = "127.0.0.1:80", .max_conns = 0, .max_queue = 0, .max_response_bytes = 1};
	cr_assert_null(hc_pool_new(loop, &cfg, err, sizeof(err)), "max_conns 0");
	cfg.max_conns = 257;
	cr_assert_null(hc_pool_new(loop, &cfg, err, sizeof(err)), "max_conns past 256");
	cfg.max_conns = 256;
	static const char *const bad[] = {"localhost:80", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", "[::1:80",
					  ":80"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cfg.addr = bad[i];
		cr_assert_null(hc_pool_new(loop, &cfg, err, sizeof(err)), "accepted %s", bad[i]);
	}
	cfg.addr = "[::1]:8080";
	struct hc_pool *p = hc_pool_new(loop, &cfg, err, sizeof(err));
	cr_assert_not_null(p, "%s", err);
	struct hc_request rq = {.method = "GET", .path = "no-slash", .timeout_ms = 10};
	cr_assert_eq(hc_send(p, &rq, on_done, NULL), -1);
	rq.path = "/a b";
	cr_assert_eq(hc_send(p, &rq, on_done, NULL), -1);
	rq.path = "/ok";
	rq.timeout_ms = 0;
	cr_assert_eq(hc_send(p, &rq, on_done, NULL), -1, "a deadline is required");
	hc_pool_free(p);
	ev_free(loop);
}
