/*
 * test_http_client.c -- the outbound HTTP/1.1 pool (net/client.c) on a real
 * event loop in the test process: calls to a real wm-shard (keep-alive
 * reuse within max_conns), then each failure a peer can cause, from small
 * servers run on the same loop: no listener, a listener that never
 * accepts (deadline), one that closes at once, one that answers garbage,
 * an answer past max_response_bytes; the pool and queue bounds at and past
 * their edge.  Pipelining (hc_request.pipeline): answers matched to their
 * calls in order, the calls of one batch on one connection, a call that
 * does not ask for it alone on its connection, and what a peer or a
 * deadline does to the calls that share a connection.
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

static void pool_piped(const char *addr, uint32_t conns, uint32_t queue, uint32_t max_body, uint32_t pipeline)
{
	char err[200];
	R.loop = R.loop ? R.loop : ev_new();
	struct hc_config cfg = {.addr = addr, .max_conns = conns, .max_queue = queue, .max_response_bytes = max_body,
				.pipeline = pipeline};
	R.pool = hc_pool_new(R.loop, &cfg, err, sizeof(err));
	cr_assert_not_null(R.pool, "%s", err);
}

static void pool(const char *addr, uint32_t conns, uint32_t queue, uint32_t max_body)
{
	pool_piped(addr, conns, queue, max_body, 0);
}

static void call_piped(const char *method, const char *path, const char *headers, const char *body,
		       uint32_t timeout_ms, int pipeline, struct outcome *o)
{
	memset(o, 0, sizeof(*o));
	struct hc_request rq = {.method = method, .path = path, .headers = headers, .body = body,
				.body_len = body ? strlen(body) : 0, .timeout_ms = timeout_ms, .pipeline = pipeline};
	cr_assert_eq(hc_send(R.pool, &rq, on_done, o), 0, "hc_send refused %s %s", method, path);
	R.pending++;
}

static void call(const char *method, const char *path, const char *headers, const char *body, uint32_t timeout_ms,
		 struct outcome *o)
{
	call_piped(method, path, headers, body, timeout_ms, 0, o);
}

static void finish(void)
{
	hc_pool_free(R.pool);
	R.pool = NULL;
	ev_free(R.loop);
	R.loop = NULL;
}

/* Start a shard and a pool for it: `conns` connections, a queue of 64,
 * `pipeline` calls a connection (0: none). */
static void shard_pool_piped(struct wm_proc *p, uint32_t conns, uint32_t pipeline)
{
	wm_proc_init(p);
	cr_assert_eq(wm_start(p, NULL, NULL), 0);
	char addr[32];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", p->port);
	pool_piped(addr, conns, 64, 1 << 20, pipeline);
}

/* Start a shard and a pool for it: 2 connections, a queue of 64. */
static void shard_pool(struct wm_proc *p) { shard_pool_piped(p, 2, 0); }

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

/* ---- pipelining ----------------------------------------------------------- */

/* The first "id" of a JSON answer into out ("" when none). */
static void first_id(const char *body, char *out, size_t size)
{
	const char *p = strstr(body, "\"id\":\"");
	out[0] = 0;
	if (!p)
		return;
	p += 6;
	const char *e = strchr(p, '"');
	if (e && (size_t)(e - p) < size) {
		memcpy(out, p, (size_t)(e - p));
		out[e - p] = 0;
	}
}

/* Pipelined reads of three partners to a real shard, more than the two
 * connections take at once, with one call that does not ask to share in
 * the middle: every call gets its own answer, on at most two connections. */
WM_TEST(http_client, pipelined_calls_to_a_real_shard_get_their_own_answers, .timeout = 60)
{
	struct wm_proc p;
	shard_pool_piped(&p, 2, 4);
	static const char hdrs[] = "Authorization: Bearer " WM_TEST_KEY "\r\nContent-Type: application/json\r\n";
	char ids[3][64], path[3][96];
	for (int i = 0; i < 3; i++) {
		struct outcome made;
		char body[128];
		snprintf(body, sizeof(body), "{\"legal_name\":\"Piped %d\",\"country\":\"FR\",\"roles\":[\"seller\"]}", i);
		call("POST", "/v1/partners", hdrs, body, 10000, &made);
		run_until_done();
		cr_assert_eq(made.status, 201, "%d %s %s", made.status, made.err, made.body);
		first_id(made.body, ids[i], sizeof(ids[i]));
		cr_assert(ids[i][0], "no id in %s", made.body);
		snprintf(path[i], sizeof(path[i]), "/v1/partners/%s", ids[i]);
	}
	static struct outcome o[12], health;
	for (int i = 0; i < 12; i++) {
		call_piped("GET", path[(i * 7) % 3], hdrs, NULL, 10000, 1, &o[i]);
		if (i == 9)
			call("GET", "/healthz", NULL, NULL, 10000, &health);
	}
	struct hc_stats st;
	hc_stats(R.pool, &st);
	/* at the bound: two connections of four calls each (six of them
	 * shared), and not one more: the other four and the lone call wait */
	cr_assert_eq(st.pipelined, 6, "%llu shared", (unsigned long long)st.pipelined);
	cr_assert_eq(st.queued, 5, "%u queued", st.queued);
	cr_assert_eq(st.open, 2);
	run_until_done();
	for (int i = 0; i < 12; i++) {
		cr_assert_eq(o[i].status, 200, "call %d: %d %s %s", i, o[i].status, o[i].err, o[i].body);
		char got[64];
		first_id(o[i].body, got, sizeof(got));
		cr_assert_str_eq(got, ids[(i * 7) % 3], "call %d got another call's answer: %s", i, o[i].body);
	}
	cr_assert_eq(health.status, 200, "%d %s", health.status, health.err);
	cr_assert(strstr(health.body, "\"status\":\"ok\""), "%s", health.body);
	hc_stats(R.pool, &st);
	cr_assert_leq(st.connects, 2, "%llu connects", (unsigned long long)st.connects);
	cr_assert_eq(st.ok, 3 + 12 + 1);
	cr_assert_eq(st.queued, 0);
	finish();
	wm_proc_cleanup(&p);
}

/* The calls one batch of ready events makes share one connection (written
 * once the batch is handled), whatever room the pool has for more; a call
 * that does not ask to share gets one of its own. */
#define BATCH_PIPED 20 /* past the 16 requests one sendmsg carries (client.c HC_IOV_MAX) */
struct batch_start {
	struct ev_handle h;
	struct outcome piped[BATCH_PIPED], alone;
};

static void batch_calls(struct ev_loop *loop, struct ev_handle *h, uint32_t events)
{
	(void)events;
	struct batch_start *b = h->arg;
	char c;
	cr_assert_eq(read(h->fd, &c, 1), 1);
	ev_del(loop, h);
	for (int i = 0; i < BATCH_PIPED; i++)
		call_piped("GET", "/healthz", NULL, NULL, 10000, 1, &b->piped[i]);
	call("GET", "/healthz", NULL, NULL, 10000, &b->alone);
	struct hc_stats st;
	hc_stats(R.pool, &st);
	cr_assert_eq(st.connects, 2, "one shared, one alone: %llu", (unsigned long long)st.connects);
	cr_assert_eq(st.pipelined, BATCH_PIPED - 1);
}

WM_TEST(http_client, the_calls_of_one_batch_share_a_connection, .timeout = 60)
{
	struct wm_proc p;
	shard_pool_piped(&p, 8, HC_PIPELINE_CAP);
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	static struct batch_start b;
	memset(&b, 0, sizeof(b));
	b.h = (struct ev_handle){.fd = fds[0], .fn = batch_calls, .arg = &b};
	cr_assert_eq(ev_add(R.loop, &b.h, EPOLLIN), 0);
	cr_assert_eq(write(fds[1], "x", 1), 1);
	/* the pipe is ready at the loop's first wait, before any tick */
	run_until_done();
	cr_assert(b.alone.done, "the batch made no calls");
	for (int i = 0; i < BATCH_PIPED; i++)
		cr_assert_eq(b.piped[i].status, 200, "call %d: %d %s", i, b.piped[i].status, b.piped[i].err);
	cr_assert_eq(b.alone.status, 200, "%d %s", b.alone.status, b.alone.err);
	struct hc_stats st;
	hc_stats(R.pool, &st);
	cr_assert_eq(st.connects, 2);
	close(fds[0]);
	close(fds[1]);
	finish();
	wm_proc_cleanup(&p);
}

/* A scripted peer on the loop for pipelined calls: accepts one connection,
 * reads requests (bodyless: each ends at its blank line) and, once
 * `expect` of them are in, writes `reply` in one send (never when expect
 * is 0) and keeps the connection open. */
struct piped_peer {
	struct ev_handle lh, ch;
	char in[16384];
	size_t len;
	int expect, seen, replied;
	const char *reply;
};

static void piped_peer_read(struct ev_loop *loop, struct ev_handle *h, uint32_t events)
{
	(void)loop;
	(void)events;
	struct piped_peer *s = h->arg;
	ssize_t n = recv(h->fd, s->in + s->len, sizeof(s->in) - s->len - 1, MSG_DONTWAIT);
	if (n <= 0)
		return;
	s->len += (size_t)n;
	s->in[s->len] = 0;
	s->seen = 0;
	for (const char *q = strstr(s->in, "\r\n\r\n"); q; q = strstr(q + 4, "\r\n\r\n"))
		s->seen++;
	if (!s->replied && s->expect && s->seen >= s->expect) {
		size_t rl = strlen(s->reply);
		cr_assert_eq(send(h->fd, s->reply, rl, MSG_NOSIGNAL), (ssize_t)rl);
		s->replied = 1;
	}
}

static void piped_peer_accept(struct ev_loop *loop, struct ev_handle *h, uint32_t events)
{
	(void)events;
	struct piped_peer *s = h->arg;
	int c = accept4(h->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (c < 0)
		return;
	cr_assert_eq(s->ch.fd, -1, "one connection expected");
	s->ch = (struct ev_handle){.fd = c, .fn = piped_peer_read, .arg = s};
	cr_assert_eq(ev_add(loop, &s->ch, EPOLLIN), 0);
}

/* Calls to paths[0..n) (pipelined, on one connection) against a peer that
 * answers `reply` once all n are in; deadline of the first call
 * first_timeout_ms, of the others 10 s. */
static void against_piped(const char *reply, int expect, const char *const *paths, int n, uint32_t first_timeout_ms,
			  struct outcome *o, struct hc_stats *st)
{
	int port;
	static struct piped_peer s;
	memset(&s, 0, sizeof(s));
	s.lh = (struct ev_handle){.fd = listener(&port, 8), .fn = piped_peer_accept, .arg = &s};
	s.ch.fd = -1;
	s.reply = reply;
	s.expect = expect;
	char addr[32];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	pool_piped(addr, 1, 0, 1024, (uint32_t)n);
	cr_assert_eq(ev_add(R.loop, &s.lh, EPOLLIN), 0);
	for (int i = 0; i < n; i++)
		call_piped("GET", paths[i], NULL, NULL, i ? 10000 : first_timeout_ms, 1, &o[i]);
	run_until_done();
	hc_stats(R.pool, st);
	cr_assert_eq(s.seen, n, "the peer read %d requests of %d", s.seen, n);
	ev_del(R.loop, &s.lh);
	close(s.lh.fd);
	if (s.ch.fd >= 0) {
		ev_del(R.loop, &s.ch);
		close(s.ch.fd);
	}
	finish();
}

#define ANSWER(body) "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n" body
#define ANSWER_CLOSE(body) "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n" body

WM_TEST(http_client, pipelined_answers_and_what_a_peer_does_to_them, .timeout = 60)
{
	static const char *const paths[] = {"/a", "/b", "/c", "/d"};
	struct outcome o[4];
	struct hc_stats st;
	/* four answers in one write: each call gets its own, in order */
	against_piped(ANSWER("/a") ANSWER("/b") ANSWER("/c") ANSWER("/d"), 4, paths, 4, 10000, o, &st);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(o[i].status, 200, "call %d: %s", i, o[i].err);
		cr_assert_str_eq(o[i].body, paths[i]);
	}
	cr_assert_eq(st.pipelined, 3);
	cr_assert_eq(st.connects, 1);
	/* "Connection: close" on the second answer: the two behind it fail */
	against_piped(ANSWER("/a") ANSWER_CLOSE("/b"), 4, paths, 4, 10000, o, &st);
	cr_assert_str_eq(o[0].body, "/a");
	cr_assert_str_eq(o[1].body, "/b");
	for (int i = 2; i < 4; i++) {
		cr_assert_eq(o[i].status, -1, "call %d", i);
		cr_assert_str_eq(o[i].err, "peer closed the connection before the response");
	}
	/* an answer more than was asked for: the last call fails */
	against_piped(ANSWER("/a") ANSWER("/b") ANSWER("/x"), 2, paths, 2, 10000, o, &st);
	cr_assert_str_eq(o[0].body, "/a");
	cr_assert_eq(o[1].status, -1);
	cr_assert_str_eq(o[1].err, "bytes after the response");
	/* a malformed second answer: it and the one behind it fail */
	against_piped(ANSWER("/a") "garbage\r\n\r\n", 3, paths, 3, 10000, o, &st);
	cr_assert_str_eq(o[0].body, "/a");
	cr_assert_str_eq(o[1].err, "malformed status line");
	cr_assert_str_eq(o[2].err, "malformed status line");
	/* the first call's deadline passes: it times out, the two behind it
	 * go with their connection */
	against_piped(NULL, 0, paths, 3, 200, o, &st);
	cr_assert_str_eq(o[0].err, "timed out");
	for (int i = 1; i < 3; i++)
		cr_assert_str_eq(o[i].err, "its connection closed: a call ahead of it timed out", "call %d", i);
	cr_assert_eq(st.timeouts, 1);
	cr_assert_eq(st.failed, 3);
}

WM_TEST(http_client, the_pipeline_bound)
{
	char err[200];
	struct ev_loop *loop = ev_new();
	struct hc_config cfg = {.addr = "127.0.0.1:80", .max_conns = 1, .max_queue = 4, .max_response_bytes = 1,
				.pipeline = HC_PIPELINE_CAP};
	struct hc_pool *p = hc_pool_new(loop, &cfg, err, sizeof(err));
	cr_assert_not_null(p, "the edge: %s", err);
	/* a HEAD never shares, even when it asks: its answer announces a body
	 * it does not carry (nothing listens there; the loop never runs) */
	static struct outcome head, get;
	memset(&head, 0, sizeof(head));
	memset(&get, 0, sizeof(get));
	struct hc_request rq = {.method = "HEAD", .path = "/h", .timeout_ms = 1000, .pipeline = 1};
	cr_assert_eq(hc_send(p, &rq, on_done, &head), 0);
	rq.method = "GET";
	cr_assert_eq(hc_send(p, &rq, on_done, &get), 0);
	struct hc_stats st;
	hc_stats(p, &st);
	cr_assert_eq(st.pipelined, 0, "the GET was put behind the HEAD");
	cr_assert_eq(st.queued, 1, "the GET waits for the one connection");
	R.pending = 2;
	hc_pool_free(p);
	cr_assert_eq(R.pending, 0);
	cr_assert_str_eq(head.err, "pool closed");
	cr_assert_str_eq(get.err, "pool closed");
	/* nor behind a GET that shares its connection */
	p = hc_pool_new(loop, &cfg, err, sizeof(err));
	cr_assert_not_null(p, "%s", err);
	memset(&head, 0, sizeof(head));
	memset(&get, 0, sizeof(get));
	cr_assert_eq(hc_send(p, &rq, on_done, &get), 0);
	rq.method = "HEAD";
	cr_assert_eq(hc_send(p, &rq, on_done, &head), 0);
	hc_stats(p, &st);
	cr_assert_eq(st.pipelined, 0, "the HEAD was put behind the GET");
	cr_assert_eq(st.queued, 1, "the HEAD waits for the one connection");
	R.pending = 2;
	hc_pool_free(p);
	cr_assert_eq(R.pending, 0);
	cfg.pipeline = HC_PIPELINE_CAP + 1;
	cr_assert_null(hc_pool_new(loop, &cfg, err, sizeof(err)), "past the bound");
	cr_assert(strstr(err, "pipeline"), "%s", err);
	ev_free(loop);
}
