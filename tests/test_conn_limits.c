/*
 * test_conn_limits.c -- the server's connection rules against a real
 * wm-shard (net/server.c): a client that half-closes after sending still
 * gets every answer (also while another connection's fsync is slow), silent
 * sockets cannot lock clients out (head time-out from accept, eviction of
 * idle connections when the table is full), the per-address cap at and past
 * its edge, refusals carrying the common headers, and the Host rule of
 * RFC 9112 section 3.2 on the wire.
 *
 * Loopback has a whole /8: binding the client socket to 127.0.0.2, .3, ...
 * makes distinct peers, which is how the per-address cap is shown to be per
 * address.  Responses are read with the harness's own parser or as raw bytes
 * up to EOF, never with the server's code.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "net/ev.h"
#include "tests/harness.h"
#include "tests/wm_test.h"

#define AUTH "Authorization: Bearer " WM_TEST_KEY "\r\n"

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A blocking socket connected to 127.0.0.1:port from source address `src`
 * ("127.0.0.N"; NULL = the kernel's choice). */
static int connect_from(const char *src, int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(fd, 0);
	if (src) {
		struct sockaddr_in la = {.sin_family = AF_INET};
		cr_assert_eq(inet_pton(AF_INET, src, &la.sin_addr), 1);
		cr_assert_eq(bind(fd, (struct sockaddr *)&la, sizeof(la)), 0, "bind %s: %s", src, strerror(errno));
	}
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "connect: %s", strerror(errno));
	return fd;
}

static void send_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);
		cr_assert_gt(w, 0, "write: %s", strerror(errno));
		s += w;
		n -= (size_t)w;
	}
}

/* Everything the server sends until it closes, NUL-terminated, into buf;
 * fails the test when the close does not come within timeout_ms. */
static size_t read_to_eof(int fd, char *buf, size_t cap, int timeout_ms)
{
	size_t len = 0;
	uint64_t end = now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		uint64_t t = now_ms();
		cr_assert_lt(t, end, "no EOF within %d ms; got so far:\n%.*s", timeout_ms, (int)len, buf);
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		if (poll(&pf, 1, (int)(end - t)) <= 0)
			continue;
		ssize_t n = read(fd, buf + len, cap - 1 - len);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			break;
		cr_assert_gt(n, 0, "read: %s", strerror(errno));
		len += (size_t)n;
		cr_assert_lt(len, cap - 1, "response larger than the test buffer");
	}
	buf[len] = 0;
	return len;
}

/* How many times `needle` occurs in `hay`. */
static int count_of(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* A POST /v1/partners request for legal name `name` into out. */
static int partner_post(char *out, size_t cap, const char *name)
{
	char body[160];
	int bl = snprintf(body, sizeof(body), "{\"legal_name\":\"%s\",\"country\":\"AT\"}", name);
	return snprintf(out, cap,
			"POST /v1/partners HTTP/1.1\r\nHost: t\r\n" AUTH "Content-Type: application/json\r\n"
			"Content-Length: %d\r\n\r\n%s",
			bl, body);
}

/* Partners named `name` that the operator can list. */
static int partners_named(int port, const char *name)
{
	struct http_resp r;
	cr_assert_eq(http_do(port, "GET", "/v1/partners?page_size=200", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	char pat[160];
	snprintf(pat, sizeof(pat), "\"legal_name\":\"%s\"", name);
	int n = count_of(r.body, pat);
	http_resp_free(&r);
	return n;
}

static void start(struct wm_proc *p, const char *const *args, const char *const *env)
{
	wm_proc_init(p);
	cr_assert_eq(wm_start(p, args, env), 0, "wm-shard did not start (logs in %s)", p->dir);
}

/* ---- the loop: a handle freed by an earlier handler of the same batch ---- */

struct twin {
	struct ev_handle h;
	struct twin **other; /* the other twin's slot; NULL once freed */
	int *calls;
};

/* Whichever twin runs first unregisters and frees the other: its event,
 * pending in the same batch, must not be delivered (ASan: use after free). */
static void twin_fn(struct ev_loop *loop, struct ev_handle *h, uint32_t events)
{
	(void)events;
	struct twin *t = h->arg;
	(*t->calls)++;
	struct twin *o = *t->other;
	if (o) {
		ev_del(loop, &o->h);
		close(o->h.fd);
		*t->other = NULL;
		free(o);
	}
	ev_stop(loop);
}

WM_TEST(conn, ev_drops_pending_events_of_a_freed_handle)
{
	struct ev_loop *loop = ev_new();
	cr_assert_not_null(loop);
	int sa[2], sb[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sa), 0);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sb), 0);
	cr_assert_eq(write(sa[1], "x", 1), 1);
	cr_assert_eq(write(sb[1], "x", 1), 1);
	int calls = 0;
	struct twin *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct twin *slot_a = a, *slot_b = b; /* each twin points at the other's slot */
	*a = (struct twin){.h = {.fd = sa[0], .fn = twin_fn, .arg = a}, .other = &slot_b, .calls = &calls};
	*b = (struct twin){.h = {.fd = sb[0], .fn = twin_fn, .arg = b}, .other = &slot_a, .calls = &calls};
	cr_assert_eq(ev_add(loop, &a->h, EPOLLIN), 0);
	cr_assert_eq(ev_add(loop, &b->h, EPOLLIN), 0);
	cr_assert_eq(ev_run(loop), 0);
	cr_assert_eq(calls, 1, "the freed handle's pending event was delivered");
	struct twin *left = slot_a ? slot_a : slot_b;
	cr_assert_not_null(left);
	ev_del(loop, &left->h);
	close(left->h.fd);
	free(left);
	close(sa[1]);
	close(sb[1]);
	ev_free(loop);
}

/* ---- the loop: after-batch callbacks (the server's answers go out there) -- */

static char ab_log[32];
static size_t ab_n;

static void ab_note(char ch)
{
	cr_assert_lt(ab_n, sizeof(ab_log) - 1);
	ab_log[ab_n++] = ch;
	ab_log[ab_n] = 0;
}

static void ab_handler(struct ev_loop *loop, struct ev_handle *h, uint32_t events)
{
	(void)events;
	char b;
	cr_assert_eq(read(h->fd, &b, 1), 1);
	cr_assert(ev_in_batch(loop), "a handler runs inside the batch");
	ab_note('h');
}

static void ab_first(struct ev_loop *loop, void *arg)
{
	(void)arg;
	cr_assert(!ev_in_batch(loop), "an after-batch callback runs once the batch is over");
	ab_note('1');
	ev_stop(loop);
}

static void ab_second(struct ev_loop *loop, void *arg)
{
	(void)loop;
	ab_note(*(const char *)arg);
}

/* Two socket pairs, the first end of each registered with fn (EPOLLIN). */
static void two_pairs(struct ev_loop *loop, ev_fn fn, int sa[2], int sb[2], struct ev_handle *a, struct ev_handle *b)
{
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sa), 0);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sb), 0);
	*a = (struct ev_handle){.fd = sa[0], .fn = fn};
	*b = (struct ev_handle){.fd = sb[0], .fn = fn};
	cr_assert_eq(ev_add(loop, a, EPOLLIN), 0);
	cr_assert_eq(ev_add(loop, b, EPOLLIN), 0);
}

static void two_pairs_close(struct ev_loop *loop, int sa[2], int sb[2], struct ev_handle *a, struct ev_handle *b)
{
	ev_del(loop, a);
	ev_del(loop, b);
	for (int i = 0; i < 2; i++) {
		close(sa[i]);
		close(sb[i]);
	}
	ev_free(loop);
}

/* Both ready handles are handled, then the callbacks in the order added;
 * EV_MAX_AFTER_BATCH of them fit and one more is refused; a removed one
 * is not called again. */
WM_TEST(conn, ev_after_batch_callbacks_run_once_the_batch_is_handled)
{
	struct ev_loop *loop = ev_new();
	cr_assert_not_null(loop);
	int sa[2], sb[2];
	struct ev_handle a, b;
	two_pairs(loop, ab_handler, sa, sb, &a, &b);
	static const char tags[EV_MAX_AFTER_BATCH] = "234";
	cr_assert_eq(ev_add_after_batch(loop, ab_first, NULL), 0);
	for (unsigned i = 0; i + 1 < EV_MAX_AFTER_BATCH; i++)
		cr_assert_eq(ev_add_after_batch(loop, ab_second, (void *)&tags[i]), 0);
	cr_assert_eq(ev_add_after_batch(loop, ab_second, (void *)&tags[0]), -1, "one past the bound");
	cr_assert_eq(write(sa[1], "x", 1), 1);
	cr_assert_eq(write(sb[1], "x", 1), 1);
	cr_assert_eq(ev_run(loop), 0);
	cr_assert_str_eq(ab_log, "hh1234");
	ev_del_after_batch(loop, ab_second, (void *)&tags[1]);
	ab_n = 0;
	cr_assert_eq(write(sa[1], "y", 1), 1);
	cr_assert_eq(ev_run(loop), 0);
	cr_assert_str_eq(ab_log, "h124");
	two_pairs_close(loop, sa, sb, &a, &b);
}

/* ev_later: armed by a handler (twice: once is kept), it runs once right
 * after the batch and before the after-batch callbacks; one it arms runs
 * in the same pass; a cancelled one does not run. */
static struct ev_later lt_a, lt_b, lt_c;

static void lt_run(struct ev_loop *loop, void *arg)
{
	char tag = *(const char *)arg;
	cr_assert(!ev_in_batch(loop), "a later runs once the batch is over");
	ab_note(tag);
	if (tag == 'a')
		ev_later_arm(loop, &lt_b); /* from a later: the same pass */
}

static void lt_handler(struct ev_loop *loop, struct ev_handle *h, uint32_t events)
{
	ab_handler(loop, h, events);
	ev_later_arm(loop, &lt_a);
	ev_later_arm(loop, &lt_a);
	ev_later_arm(loop, &lt_c);
	ev_later_cancel(loop, &lt_c);
}

static void lt_stop(struct ev_loop *loop, void *arg)
{
	(void)arg;
	ab_note('1');
	ev_stop(loop);
}

WM_TEST(conn, ev_later_runs_once_after_the_batch)
{
	struct ev_loop *loop = ev_new();
	cr_assert_not_null(loop);
	int sa[2], sb[2];
	struct ev_handle a, b;
	two_pairs(loop, lt_handler, sa, sb, &a, &b);
	static const char ta = 'a', tb = 'b', tc = 'c';
	lt_a = (struct ev_later){.fn = lt_run, .arg = (void *)&ta};
	lt_b = (struct ev_later){.fn = lt_run, .arg = (void *)&tb};
	lt_c = (struct ev_later){.fn = lt_run, .arg = (void *)&tc};
	cr_assert_eq(ev_add_after_batch(loop, lt_stop, NULL), 0);
	ab_n = 0;
	cr_assert_eq(write(sa[1], "x", 1), 1);
	cr_assert_eq(write(sb[1], "x", 1), 1);
	cr_assert_eq(ev_run(loop), 0);
	cr_assert_str_eq(ab_log, "hhab1", "two handlers, a (armed twice) and the b it armed, then the after-batch");
	cr_assert_not(lt_a.armed || lt_b.armed || lt_c.armed);
	/* a cancelled later whose loop goes on never runs */
	ab_n = 0;
	ab_log[0] = 0;
	cr_assert_eq(write(sa[1], "y", 1), 1);
	cr_assert_eq(ev_run(loop), 0);
	cr_assert_str_eq(ab_log, "hab1");
	two_pairs_close(loop, sa, sb, &a, &b);
}

/* ---- half-close ------------------------------------------------------------ */

WM_TEST(conn, half_close_after_write_gets_the_answer)
{
	struct wm_proc p;
	start(&p, NULL, NULL);
	char req[512];
	int n = partner_post(req, sizeof(req), "HalfClose One");
	int fd = connect_from(NULL, p.port);
	send_all(fd, req, (size_t)n);
	cr_assert_eq(shutdown(fd, SHUT_WR), 0);
	static char got[65536];
	read_to_eof(fd, got, sizeof(got), 10000);
	close(fd);
	cr_assert(!strncmp(got, "HTTP/1.1 201 ", 13), "the write's answer arrives after SHUT_WR:\n%s", got);
	cr_assert_eq(count_of(got, "HTTP/1.1 "), 1);
	cr_assert_eq(partners_named(p.port, "HalfClose One"), 1, "the resource exists exactly once");
	wm_proc_cleanup(&p);
}

WM_TEST(conn, half_close_pipelined_all_answered_tail_dropped)
{
	/* slow fsync: the EOF surely arrives while the POST waits for the disk */
	struct wm_proc p;
	const char *env[] = {"WM_ERRINJ=wal_slow_sync", NULL};
	start(&p, NULL, env);
	char req[2048];
	int n = snprintf(req, sizeof(req), "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
	n += partner_post(req + n, sizeof(req) - (size_t)n, "HalfClose Pipe");
	n += snprintf(req + n, sizeof(req) - (size_t)n,
		      "GET /v1/nope HTTP/1.1\r\nHost: t\r\n\r\n"
		      "GET /healthz HTTP/1.1\r\nHo"); /* incomplete: can never be answered */
	int fd = connect_from(NULL, p.port);
	send_all(fd, req, (size_t)n);
	cr_assert_eq(shutdown(fd, SHUT_WR), 0);
	static char got[65536];
	read_to_eof(fd, got, sizeof(got), 10000);
	close(fd);
	char *a = strstr(got, "HTTP/1.1 200 "), *b = strstr(got, "HTTP/1.1 201 "), *c = strstr(got, "HTTP/1.1 404 ");
	cr_assert(a && b && c && a < b && b < c, "three answers in order:\n%s", got);
	cr_assert_eq(count_of(got, "HTTP/1.1 "), 3, "nothing for the incomplete tail:\n%s", got);
	cr_assert_eq(partners_named(p.port, "HalfClose Pipe"), 1);
	wm_proc_cleanup(&p);
}

WM_TEST(conn, half_close_during_another_connections_fsync)
{
	/* every fdatasync takes 400 ms: B half-closes while A's write (and its
	 * own) wait for the disk */
	struct wm_proc p;
	const char *env[] = {"WM_ERRINJ=wal_slow_sync", NULL};
	start(&p, NULL, env);
	char ra[512], rb[512];
	int na = partner_post(ra, sizeof(ra), "Slow A");
	int nb = partner_post(rb, sizeof(rb), "Slow B");
	int a = connect_from(NULL, p.port), b = connect_from("127.0.0.2", p.port);
	send_all(a, ra, (size_t)na);
	usleep(50 * 1000); /* A's record is in the WAL thread's slow fsync */
	send_all(b, rb, (size_t)nb);
	cr_assert_eq(shutdown(b, SHUT_WR), 0);
	static char got[65536];
	read_to_eof(b, got, sizeof(got), 10000);
	cr_assert(!strncmp(got, "HTTP/1.1 201 ", 13), "B's answer arrives:\n%s", got);
	struct http_resp r;
	cr_assert_geq(http_read_response(a, &r, 10000), 0, "A is answered too");
	cr_assert_eq(r.status, 201, "%s", r.body);
	http_resp_free(&r);
	close(a);
	close(b);
	cr_assert_eq(partners_named(p.port, "Slow A"), 1);
	cr_assert_eq(partners_named(p.port, "Slow B"), 1);
	wm_proc_cleanup(&p);
}

/* ---- silent sockets, eviction, time-outs ------------------------------------ */

WM_TEST(conn, silent_flood_does_not_lock_clients_out, .timeout = 120)
{
	/* 32 slots; 5 rounds of 64 (2 x max-conns) silent sockets from four
	 * addresses; after each round a well-behaved client is answered within
	 * the head time-out */
	enum { MAXC = 32, ROUNDS = 5, PER_ROUND = 2 * MAXC, HEAD_MS = 1500 };
	struct wm_proc p;
	const char *args[] = {"--max-conns", "32", "--header-timeout-ms", "1500", NULL};
	start(&p, args, NULL);
	static int silent[ROUNDS * PER_ROUND];
	int ns = 0;
	for (int round = 0; round < ROUNDS; round++) {
		for (int i = 0; i < PER_ROUND; i++) {
			char src[32];
			snprintf(src, sizeof(src), "127.0.0.%d", 10 + i % 4);
			silent[ns++] = connect_from(src, p.port);
		}
		uint64_t t0 = now_ms();
		int fd = connect_from("127.0.0.3", p.port);
		const char req[] = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";
		send_all(fd, req, sizeof(req) - 1);
		struct http_resp r;
		cr_assert_geq(http_read_response(fd, &r, HEAD_MS), 0, "round %d: no answer within the head time-out",
			      round);
		cr_assert_eq(r.status, 200, "round %d: %d %s", round, r.status, r.body);
		cr_assert_lt(now_ms() - t0, HEAD_MS);
		http_resp_free(&r);
		close(fd);
	}
	/* the head time-out runs from accept: every silent socket is closed
	 * (without an answer) soon after it, not after the 60 s idle time-out */
	usleep((HEAD_MS + 1000) * 1000);
	for (int i = 0; i < ns; i++) {
		char x;
		struct pollfd pf = {.fd = silent[i], .events = POLLIN};
		cr_assert_eq(poll(&pf, 1, 2000), 1, "silent socket %d still open after the head time-out", i);
		ssize_t n = recv(silent[i], &x, 1, 0);
		cr_assert(n == 0 || (n < 0 && errno == ECONNRESET), "closed without an answer (got %zd)", n);
		close(silent[i]);
	}
	wm_proc_cleanup(&p);
}

WM_TEST(conn, silent_socket_closed_at_head_timeout_not_before)
{
	struct wm_proc p;
	const char *args[] = {"--header-timeout-ms", "1000", NULL};
	start(&p, args, NULL);
	uint64_t t0 = now_ms();
	int fd = connect_from(NULL, p.port);
	static char got[256];
	size_t n = read_to_eof(fd, got, sizeof(got), 5000);
	uint64_t took = now_ms() - t0;
	close(fd);
	cr_assert_eq(n, 0, "closed without an answer, got:\n%s", got);
	cr_assert_geq(took, 1000, "closed after %llu ms, before the head time-out", (unsigned long long)took);
	cr_assert_lt(took, 2500, "closed after %llu ms (head time-out 1000 + one 250 ms tick)",
		     (unsigned long long)took);
	wm_proc_cleanup(&p);
}

/* Check a refusal from the accept path: status, and the headers every
 * response carries. */
static void expect_refusal(int fd, int status, const char *code)
{
	struct http_resp r;
	cr_assert_geq(http_read_response(fd, &r, 5000), 0, "no refusal received");
	cr_assert_eq(r.status, status, "%d %s", r.status, r.body);
	char v[128];
	cr_assert_geq(http_header(&r, "Date", v, sizeof(v)), 0, "Date missing:\n%s", r.head);
	cr_assert_geq(http_header(&r, "X-Request-Id", v, sizeof(v)), 0, "X-Request-Id missing:\n%s", r.head);
	cr_assert(!strncmp(v, "req_", 4));
	cr_assert_geq(http_header(&r, "Content-Type", v, sizeof(v)), 0);
	cr_assert_str_eq(v, "application/problem+json");
	cr_assert_geq(http_header(&r, "Retry-After", v, sizeof(v)), 0, "Retry-After missing:\n%s", r.head);
	cr_assert_gt(atoi(v), 0);
	cr_assert_geq(http_header(&r, "Connection", v, sizeof(v)), 0);
	cr_assert_str_eq(v, "close");
	char want[128];
	snprintf(want, sizeof(want), "\"code\":\"%s\"", code);
	cr_assert(strstr(r.body, want), "body %s lacks %s", r.body, want);
	snprintf(want, sizeof(want), "\"status\":%d", status);
	cr_assert(strstr(r.body, want), "body %s lacks %s", r.body, want);
	http_resp_free(&r);
	char x;
	cr_assert_eq(recv(fd, &x, 1, 0), 0, "and the connection is closed");
}

WM_TEST(conn, full_table_of_busy_connections_refuses_with_common_headers)
{
	struct wm_proc p;
	const char *args[] = {"--max-conns", "3", NULL};
	start(&p, args, NULL);
	int held[3];
	for (int i = 0; i < 3; i++) {
		held[i] = connect_from(NULL, p.port);
		send_all(held[i], "GET /heal", 9); /* busy: a request under way */
	}
	usleep(100 * 1000);
	int fd = connect_from("127.0.0.2", p.port);
	expect_refusal(fd, 503, "too_many_connections");
	close(fd);
	/* an idle (keep-alive, answered) connection is evicted for a newcomer */
	send_all(held[0], "thz HTTP/1.1\r\nHost: t\r\n\r\n", 25);
	struct http_resp r;
	cr_assert_geq(http_read_response(held[0], &r, 5000), 0);
	cr_assert_eq(r.status, 200);
	http_resp_free(&r);
	fd = connect_from("127.0.0.2", p.port);
	const char req[] = "GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
	send_all(fd, req, sizeof(req) - 1);
	cr_assert_geq(http_read_response(fd, &r, 5000), 0);
	cr_assert_eq(r.status, 200, "the newcomer is served: %d", r.status);
	http_resp_free(&r);
	char x;
	cr_assert_eq(recv(held[0], &x, 1, 0), 0, "the idle keep-alive connection was the one closed");
	close(fd);
	for (int i = 0; i < 3; i++)
		close(held[i]);
	wm_proc_cleanup(&p);
}

WM_TEST(conn, per_address_cap_at_and_past_its_edge)
{
	struct wm_proc p;
	const char *args[] = {"--max-conns-per-ip", "4", NULL};
	start(&p, args, NULL);
	int held[4];
	for (int i = 0; i < 3; i++)
		held[i] = connect_from("127.0.0.5", p.port);
	/* the 4th (at the cap) is served */
	held[3] = connect_from("127.0.0.5", p.port);
	const char req[] = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";
	send_all(held[3], req, sizeof(req) - 1);
	struct http_resp r;
	cr_assert_geq(http_read_response(held[3], &r, 5000), 0);
	cr_assert_eq(r.status, 200, "4 of 4 allowed: %d", r.status);
	http_resp_free(&r);
	/* the 5th (past it) is refused with 429 */
	int fd = connect_from("127.0.0.5", p.port);
	expect_refusal(fd, 429, "too_many_connections_from_address");
	close(fd);
	/* the cap is per address: another loopback address is served */
	fd = connect_from("127.0.0.6", p.port);
	send_all(fd, req, sizeof(req) - 1);
	cr_assert_geq(http_read_response(fd, &r, 5000), 0);
	cr_assert_eq(r.status, 200, "another address: %d", r.status);
	http_resp_free(&r);
	close(fd);
	/* one closed: room for one more from .5 again */
	close(held[0]);
	usleep(200 * 1000);
	fd = connect_from("127.0.0.5", p.port);
	send_all(fd, req, sizeof(req) - 1);
	cr_assert_geq(http_read_response(fd, &r, 5000), 0);
	cr_assert_eq(r.status, 200, "after a close: %d", r.status);
	http_resp_free(&r);
	close(fd);
	/* operators see the refusal in /metrics (from yet another address) */
	fd = connect_from("127.0.0.8", p.port);
	char mreq[256];
	int ml = snprintf(mreq, sizeof(mreq), "GET /metrics HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer %s\r\n\r\n",
			  WM_TEST_KEY);
	send_all(fd, mreq, (size_t)ml);
	cr_assert_geq(http_read_response(fd, &r, 5000), 0);
	cr_assert_eq(r.status, 200);
	cr_assert(strstr(r.body, "wm_connections_rejected_total{reason=\"per_ip\"} 1\n"), "%s", r.body);
	http_resp_free(&r);
	close(fd);
	for (int i = 1; i < 4; i++)
		close(held[i]);
	wm_proc_cleanup(&p);
}

WM_TEST(conn, per_address_cap_zero_means_no_cap)
{
	struct wm_proc p;
	const char *args[] = {"--max-conns-per-ip", "0", "--max-conns", "300", NULL};
	start(&p, args, NULL);
	static int held[260]; /* past the default cap of 256 */
	for (int i = 0; i < 260; i++)
		held[i] = connect_from("127.0.0.7", p.port);
	const char req[] = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";
	send_all(held[259], req, sizeof(req) - 1);
	struct http_resp r;
	cr_assert_geq(http_read_response(held[259], &r, 5000), 0);
	cr_assert_eq(r.status, 200);
	http_resp_free(&r);
	for (int i = 0; i < 260; i++)
		close(held[i]);
	wm_proc_cleanup(&p);
}

/* ---- Host on the wire --------------------------------------------------------- */

/* Send raw bytes on a new connection and return the status of the answer. */
static int status_of(int port, const char *raw)
{
	int fd = connect_from(NULL, port);
	send_all(fd, raw, strlen(raw));
	struct http_resp r;
	cr_assert_geq(http_read_response(fd, &r, 5000), 0, "no answer to %s", raw);
	int st = r.status;
	if (st == 400)
		cr_assert(strstr(r.head, "application/problem+json"), "400 is problem+json:\n%s", r.head);
	http_resp_free(&r);
	close(fd);
	return st;
}

WM_TEST(conn, host_header_rules_on_the_wire)
{
	struct wm_proc p;
	start(&p, NULL, NULL);
	cr_assert_eq(status_of(p.port, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"), 200);
	cr_assert_eq(status_of(p.port, "GET /healthz HTTP/1.1\r\n\r\n"), 400, "HTTP/1.1 without Host");
	cr_assert_eq(status_of(p.port, "GET /healthz HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n"), 400, "two Hosts");
	cr_assert_eq(status_of(p.port, "GET /healthz HTTP/1.0\r\n\r\n"), 200, "HTTP/1.0 without Host");
	cr_assert_eq(status_of(p.port, "GET /healthz HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n"), 400);
	wm_proc_cleanup(&p);
}
