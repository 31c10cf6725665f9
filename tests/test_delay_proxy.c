/*
 * test_delay_proxy.c -- the test tool tests/tools/wm-delay-proxy.c, suite
 * `delay_proxy`.
 *
 * The proxy sits between a client (this test) and an echo server (a thread
 * of this test), both on 127.0.0.1.  What must hold: bytes pass intact in
 * both directions and the half-close follows them; the delay is applied
 * to each direction (a round trip takes at least twice the delay -- only
 * lower bounds are asserted, the machine may be slow); black-hole stops
 * all traffic and heal lets the held bytes through, by the control port
 * and by SIGUSR1/SIGUSR2; drop resets connections; every option bound
 * holds at and past its edge; any address outside 127.0.0.0/8 is refused
 * before a socket is made.
 */
#include "tests/delay_proxy.h"
#include "tests/wm_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- an echo server on 127.0.0.1 ----------------------------------------- */

#define ECHO_MAX_CLIENTS 8

struct echo {
	int lfd, stop[2], port;
	pthread_t th;
};

static void *echo_main(void *arg)
{
	struct echo *e = arg;
	struct pollfd p[2 + ECHO_MAX_CLIENTS];
	int cl[ECHO_MAX_CLIENTS];
	for (int i = 0; i < ECHO_MAX_CLIENTS; i++)
		cl[i] = -1;
	static __thread char buf[65536];
	for (;;) {
		p[0] = (struct pollfd){.fd = e->lfd, .events = POLLIN};
		p[1] = (struct pollfd){.fd = e->stop[0], .events = POLLIN};
		for (int i = 0; i < ECHO_MAX_CLIENTS; i++)
			p[2 + i] = (struct pollfd){.fd = cl[i], .events = POLLIN};
		if (poll(p, 2 + ECHO_MAX_CLIENTS, -1) < 0)
			continue;
		if (p[1].revents)
			break;
		if (p[0].revents & POLLIN) {
			int fd = accept(e->lfd, NULL, NULL);
			int i = 0;
			while (i < ECHO_MAX_CLIENTS && cl[i] >= 0)
				i++;
			if (i < ECHO_MAX_CLIENTS)
				cl[i] = fd;
			else
				close(fd);
		}
		for (int i = 0; i < ECHO_MAX_CLIENTS; i++) {
			if (cl[i] < 0 || !p[2 + i].revents)
				continue;
			ssize_t n = read(cl[i], buf, sizeof(buf));
			if (n <= 0) {
				close(cl[i]); /* EOF echoed as EOF */
				cl[i] = -1;
				continue;
			}
			for (ssize_t off = 0; off < n;) {
				ssize_t w = send(cl[i], buf + off, (size_t)(n - off), MSG_NOSIGNAL);
				if (w <= 0)
					break;
				off += w;
			}
		}
	}
	for (int i = 0; i < ECHO_MAX_CLIENTS; i++)
		if (cl[i] >= 0)
			close(cl[i]);
	return NULL;
}

static void echo_start(struct echo *e)
{
	e->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	cr_assert_eq(bind(e->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(e->lfd, 16), 0);
	cr_assert_eq(getsockname(e->lfd, (struct sockaddr *)&a, &al), 0);
	e->port = ntohs(a.sin_port);
	cr_assert_eq(pipe2(e->stop, O_CLOEXEC), 0);
	cr_assert_eq(pthread_create(&e->th, NULL, echo_main, e), 0);
}

static void echo_stop(struct echo *e)
{
	cr_assert_eq(write(e->stop[1], "x", 1), 1);
	pthread_join(e->th, NULL);
	close(e->lfd);
	close(e->stop[0]);
	close(e->stop[1]);
}

/* ---- the proxy process (tests/delay_proxy.h), asserting ------------------- */

#define proxy wm_delay_proxy

static int proxy_run(struct proxy *p, const char *const *args, char *msg, size_t msglen)
{
	cr_assert_not_null(getenv("WM_BIN_DIR"), "WM_BIN_DIR must name the sanitized programs' folder");
	return wm_delay_proxy_run(p, args, msg, msglen);
}

static void proxy_start(struct proxy *p, int target_port, const char *delay, const char *const *extra)
{
	char msg[512];
	cr_assert_eq(wm_delay_proxy_start(p, target_port, atoi(delay), extra, msg, sizeof(msg)), 0,
		     "the proxy did not start: %s", msg);
	cr_assert_gt(p->port, 0);
	cr_assert_gt(p->cport, 0);
}

static void proxy_stop(struct proxy *p)
{
	int st = wm_delay_proxy_stop(p);
	cr_assert_eq(st, 0, "the proxy exits cleanly on SIGTERM (status %d)", st);
}

static int connect_to(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0, "connect: %s", strerror(errno));
	return fd;
}

/* One command on the control port; the reply line into out. */
static void control(const struct proxy *p, const char *cmd, char *out, size_t outlen)
{
	cr_assert_eq(wm_delay_proxy_control(p, cmd, out, outlen), 0, "the control port answers '%s'", cmd);
}

static void control_ok(const struct proxy *p, const char *cmd)
{
	char r[64];
	control(p, cmd, r, sizeof(r));
	cr_assert_str_eq(r, "ok\n", "control '%s' answered '%s'", cmd, r);
}

static unsigned long long stat_of(const struct proxy *p, const char *name)
{
	char r[400], line[410], key[40];
	control(p, "stats", r, sizeof(r));
	snprintf(line, sizeof(line), " %s", r); /* every field now follows a space */
	snprintf(key, sizeof(key), " %s=", name);
	char *s = strstr(line, key);
	cr_assert_not_null(s, "stats has %s: %s", name, r);
	return strtoull(s + strlen(key), NULL, 10);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Read exactly len bytes within timeout_ms: the count read. */
static size_t read_n(int fd, void *buf, size_t len, int timeout_ms)
{
	size_t got = 0;
	double end = now_ms() + timeout_ms;
	while (got < len) {
		int left = (int)(end - now_ms());
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		if (left <= 0 || poll(&pf, 1, left) <= 0)
			break;
		ssize_t k = read(fd, (char *)buf + got, len - got);
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	return got;
}

/* Time for one byte there and back, ms. */
static double round_trip(int fd)
{
	char c = 'q', r = 0;
	double t0 = now_ms();
	cr_assert_eq(write(fd, &c, 1), 1);
	cr_assert_eq(read_n(fd, &r, 1, 10000), 1, "the echo came back");
	cr_assert_eq(r, 'q');
	return now_ms() - t0;
}

/* ---- tests ------------------------------------------------------------------ */

WM_TEST(delay_proxy, bytes_pass_intact_both_ways_and_the_half_close_follows)
{
	struct echo e;
	echo_start(&e);
	struct proxy p;
	const char *extra[] = {"--jitter-ms", "3", "--seed", "7", NULL};
	proxy_start(&p, e.port, "2", extra);
	int fd = connect_to(p.port);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	enum { N = 1 << 20 };
	unsigned char *out = malloc(N), *in = malloc(N);
	uint32_t x = 12345;
	for (size_t i = 0; i < N; i++) {
		x = x * 1103515245u + 12345u;
		out[i] = (unsigned char)(x >> 16);
	}
	size_t sent = 0, got = 0;
	double end = now_ms() + 30000;
	while (got < N && now_ms() < end) {
		struct pollfd pf = {.fd = fd, .events = POLLIN | (sent < N ? POLLOUT : 0)};
		poll(&pf, 1, 100);
		if ((pf.revents & POLLOUT) && sent < N) {
			ssize_t k = write(fd, out + sent, N - sent > 65536 ? 65536 : N - sent);
			if (k > 0)
				sent += (size_t)k;
		}
		if (pf.revents & POLLIN) {
			ssize_t k = read(fd, in + got, N - got);
			if (k > 0)
				got += (size_t)k;
		}
	}
	cr_assert_eq(got, N, "all of 1 MiB came back (%zu)", got);
	cr_assert_eq(memcmp(in, out, N), 0, "byte for byte, in order");
	cr_assert_eq(stat_of(&p, "bytes_up"), N);
	cr_assert_eq(stat_of(&p, "bytes_down"), N);
	/* our EOF reaches the echo server through the proxy, and its EOF comes back */
	fcntl(fd, F_SETFL, 0);
	shutdown(fd, SHUT_WR);
	char c;
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	cr_assert_eq(poll(&pf, 1, 5000), 1);
	cr_assert_eq(read(fd, &c, 1), 0, "EOF after the half-close went round");
	close(fd);
	free(out);
	free(in);
	proxy_stop(&p);
	echo_stop(&e);
}

WM_TEST(delay_proxy, each_direction_is_delayed_and_the_delay_changes_at_run_time)
{
	struct echo e;
	echo_start(&e);
	struct proxy p;
	proxy_start(&p, e.port, "100", NULL);
	int fd = connect_to(p.port);
	for (int i = 0; i < 3; i++) {
		double rt = round_trip(fd);
		cr_assert_geq(rt, 200.0, "100 ms each way: a round trip took %.1f ms", rt);
	}
	control_ok(&p, "delay 250");
	double rt = round_trip(fd);
	cr_assert_geq(rt, 500.0, "250 ms each way after 'delay 250': %.1f ms", rt);
	control_ok(&p, "jitter 50");
	rt = round_trip(fd);
	cr_assert_geq(rt, 500.0, "jitter only adds: %.1f ms", rt);
	char r[64];
	control(&p, "delay 60001", r, sizeof(r));
	cr_assert(!strncmp(r, "err", 3), "a delay past 60000 ms is refused: %s", r);
	control(&p, "bogus", r, sizeof(r));
	cr_assert(!strncmp(r, "err", 3), "%s", r);
	cr_assert_eq(stat_of(&p, "delay_ms"), 250);
	close(fd);
	proxy_stop(&p);
	echo_stop(&e);
}

/* Send "abc" and check nothing arrives within 300 ms, then heal with
 * `heal` (control command or signal) and check it arrives intact. */
static void blackhole_round(const struct proxy *p, int fd, int by_signal)
{
	if (by_signal)
		cr_assert_eq(kill(p->pid, SIGUSR1), 0);
	else
		control_ok(p, "blackhole");
	if (by_signal) /* the signal is asynchronous: wait until the proxy says so */
		for (int i = 0; i < 100 && stat_of(p, "blackhole") != 1; i++)
			usleep(10000);
	cr_assert_eq(stat_of(p, "blackhole"), 1);
	cr_assert_eq(write(fd, "abc", 3), 3);
	char buf[8];
	cr_assert_eq(read_n(fd, buf, 3, 300), 0, "nothing passes a black hole");
	/* a new connection is not served either */
	int fd2 = connect_to(p->port);
	cr_assert_eq(write(fd2, "z", 1), 1);
	cr_assert_eq(read_n(fd2, buf, 1, 200), 0);
	if (by_signal)
		cr_assert_eq(kill(p->pid, SIGUSR2), 0);
	else
		control_ok(p, "heal");
	cr_assert_eq(read_n(fd, buf, 3, 5000), 3, "the held bytes pass after heal");
	cr_assert_eq(memcmp(buf, "abc", 3), 0);
	cr_assert_eq(read_n(fd2, buf, 1, 5000), 1, "the waiting connection is served after heal");
	cr_assert_eq(buf[0], 'z');
	close(fd2);
}

WM_TEST(delay_proxy, a_black_hole_stops_traffic_and_heals)
{
	struct echo e;
	echo_start(&e);
	struct proxy p;
	proxy_start(&p, e.port, "0", NULL);
	int fd = connect_to(p.port);
	round_trip(fd);
	blackhole_round(&p, fd, 0);
	round_trip(fd);
	blackhole_round(&p, fd, 1);
	round_trip(fd);
	close(fd);
	proxy_stop(&p);
	echo_stop(&e);
}

WM_TEST(delay_proxy, drop_resets_every_connection_and_new_ones_work)
{
	struct echo e;
	echo_start(&e);
	struct proxy p;
	proxy_start(&p, e.port, "0", NULL);
	int fd = connect_to(p.port);
	round_trip(fd);
	control_ok(&p, "drop");
	char c;
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	cr_assert_eq(poll(&pf, 1, 5000), 1);
	errno = 0;
	ssize_t k = read(fd, &c, 1);
	cr_assert(k == 0 || (k < 0 && errno == ECONNRESET), "the connection was cut (read %zd, %s)", k,
		  strerror(errno));
	close(fd);
	fd = connect_to(p.port);
	round_trip(fd);
	close(fd);
	proxy_stop(&p);
	echo_stop(&e);
}

WM_TEST(delay_proxy, addresses_outside_loopback_are_refused)
{
	const char *bad[] = {"10.0.0.1:80", "192.168.1.1:80", "0.0.0.0:80", "128.0.0.1:80", "[::1]:80",
			     "localhost:80", "127.0.0.1", "127.0.0.1:65536", "8.8.8.8:53"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		for (int which = 0; which < 3; which++) {
			const char *args[] = {"--listen", which == 0 ? bad[i] : "127.0.0.1:0",
					      "--target", which == 1 ? bad[i] : "127.0.0.1:9",
					      "--control", which == 2 ? bad[i] : "127.0.0.1:0",
					      "--delay-ms", "1", NULL};
			struct proxy p;
			char msg[512];
			int st = proxy_run(&p, args, msg, sizeof(msg));
			cr_assert_eq(st, 2, "%s as %s must be refused (status %d)", bad[i],
				     which == 0 ? "listen" : which == 1 ? "target" : "control", st);
		}
	}
	/* the whole 127.0.0.0/8 is loopback */
	const char *args[] = {"--listen", "127.0.0.2:0", "--target", "127.255.255.254:9", "--delay-ms", "1", NULL};
	struct proxy p;
	char msg[512];
	cr_assert_eq(proxy_run(&p, args, msg, sizeof(msg)), -1, "%s", msg);
	proxy_stop(&p);
}

WM_TEST(delay_proxy, option_bounds_hold_at_and_past_their_edges)
{
	struct {
		const char *opt, *ok, *bad;
	} b[] = {
		{"--delay-ms", "60000", "60001"},
		{"--jitter-ms", "60000", "60001"},
		{"--max-conns", "1024", "1025"},
		{"--max-conns", "1", "0"},
		{"--max-queue-bytes", "16384", "16383"},
		{"--max-queue-bytes", "67108864", "67108865"},
		{"--delay-ms", "0", "-1"},
	};
	for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++) {
		for (int past = 0; past < 2; past++) {
			const char *args[] = {"--listen", "127.0.0.1:0", "--target", "127.0.0.1:9", "--delay-ms", "1",
					      b[i].opt, past ? b[i].bad : b[i].ok, NULL};
			struct proxy p;
			char msg[512];
			int st = proxy_run(&p, args, msg, sizeof(msg));
			if (!past) {
				cr_assert_eq(st, -1, "%s %s is allowed: %s", b[i].opt, b[i].ok, msg);
				proxy_stop(&p);
			} else {
				cr_assert_eq(st, 2, "%s %s is refused", b[i].opt, b[i].bad);
				cr_assert(strstr(msg, b[i].opt), "the message names the option: %s", msg);
			}
		}
	}
}

WM_TEST(delay_proxy, the_connection_limit_holds_at_its_edge)
{
	struct echo e;
	echo_start(&e);
	struct proxy p;
	const char *extra[] = {"--max-conns", "2", NULL};
	proxy_start(&p, e.port, "0", extra);
	int a = connect_to(p.port), b = connect_to(p.port);
	round_trip(a);
	round_trip(b);
	int c = connect_to(p.port); /* the kernel accepts; the proxy closes it */
	char x;
	struct pollfd pf = {.fd = c, .events = POLLIN};
	cr_assert_eq(poll(&pf, 1, 5000), 1);
	cr_assert_leq(read(c, &x, 1), 0, "the third connection is closed");
	close(c);
	cr_assert_eq(stat_of(&p, "refused"), 1);
	cr_assert_eq(stat_of(&p, "conns"), 2);
	/* a slot freed is a slot usable again */
	close(a);
	for (int i = 0; i < 200 && stat_of(&p, "conns") != 1; i++)
		usleep(10000);
	cr_assert_eq(stat_of(&p, "conns"), 1);
	int d = connect_to(p.port);
	round_trip(d);
	close(d);
	close(b);
	proxy_stop(&p);
	echo_stop(&e);
}

WM_TEST(delay_proxy, the_queue_bound_holds_and_back_pressure_loses_nothing)
{
	struct echo e;
	echo_start(&e);
	struct proxy p;
	const char *extra[] = {"--max-queue-bytes", "16384", NULL};
	proxy_start(&p, e.port, "20", extra);
	int fd = connect_to(p.port);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	/* 1 MiB both ways through a 16 KiB queue per direction: the proxy stops
	 * reading at its bound (TCP back-pressure on the writer), nothing is
	 * dropped, and the bound is reached exactly. */
	enum { N = 1 << 20 };
	unsigned char *out = malloc(N), *in = malloc(N);
	for (size_t i = 0; i < N; i++)
		out[i] = (unsigned char)(i * 7 + (i >> 11));
	size_t sent = 0, got = 0;
	double end = now_ms() + 60000;
	while (got < N && now_ms() < end) {
		struct pollfd pf = {.fd = fd, .events = POLLIN | (sent < N ? POLLOUT : 0)};
		poll(&pf, 1, 100);
		if ((pf.revents & POLLOUT) && sent < N) {
			ssize_t k = write(fd, out + sent, N - sent);
			if (k > 0)
				sent += (size_t)k;
		}
		if (pf.revents & POLLIN) {
			ssize_t k = read(fd, in + got, N - got);
			if (k > 0)
				got += (size_t)k;
		}
	}
	cr_assert_eq(got, N, "all of 1 MiB came back (%zu)", got);
	cr_assert_eq(memcmp(in, out, N), 0);
	cr_assert_leq(stat_of(&p, "max_queued"), 16384);
	cr_assert_eq(stat_of(&p, "max_queued"), 16384, "the bound was reached (the edge was tested)");
	close(fd);
	free(out);
	free(in);
	proxy_stop(&p);
	echo_stop(&e);
}

WM_TEST(delay_proxy, control_lines_and_connections_hold_their_bounds)
{
	struct echo e;
	echo_start(&e);
	struct proxy p;
	proxy_start(&p, e.port, "0", NULL);
	char r[160], line[200];
	/* a 128-byte line is read whole (and is no command); 129 bytes are refused */
	memset(line, 'x', 128);
	line[128] = 0;
	control(&p, line, r, sizeof(r));
	cr_assert(!strncmp(r, "err unknown", 11), "128 bytes: %s", r);
	memset(line, 'x', 129);
	line[129] = 0;
	control(&p, line, r, sizeof(r));
	cr_assert(!strncmp(r, "err line too long", 17), "129 bytes: %s", r);
	/* 4 control connections at once are served, a 5th is closed */
	int c[4];
	for (int i = 0; i < 4; i++)
		c[i] = connect_to(p.cport);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(write(c[i], "stats\n", 6), 6);
		cr_assert_gt(read_n(c[i], r, 6, 5000), 0, "control connection %d is served", i);
	}
	cr_assert_eq(wm_delay_proxy_control(&p, "stats", r, sizeof(r)), -1, "a fifth is closed unanswered");
	close(c[0]);
	int ok = -1;
	for (int i = 0; i < 100 && ok != 0; i++) {
		usleep(10000);
		ok = wm_delay_proxy_control(&p, "stats", r, sizeof(r));
	}
	cr_assert_eq(ok, 0, "a freed control slot is usable again");
	for (int i = 1; i < 4; i++)
		close(c[i]);
	proxy_stop(&p);
	echo_stop(&e);
}
