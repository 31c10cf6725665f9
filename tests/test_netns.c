/*
 * test_netns.c -- the partition harness (tests/netns.h), suite `netns`.
 *
 * Proof that a test can partition processes: the test worker enters its
 * own network namespace (only lo, brought up), starts an echo server
 * (a forked process) and wm-delay-proxy (a second program) in front of it,
 * and talks through both.  Cutting the echo server's port with a DROP rule
 * stops the proxy's established connection and new connects time out;
 * heal lets the held bytes through; a REJECT rule refuses connects at
 * once.  Rules are refused outside a namespace of ours, so the host's
 * tables can never be touched by a test.
 */
#include "tests/delay_proxy.h"
#include "tests/netns.h"
#include "tests/wm_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The echo server's loop (in a forked child): echo every byte, up to 8
 * clients; ends when killed. */
static void echo_child(int lfd)
{
	int cl[8];
	for (int i = 0; i < 8; i++)
		cl[i] = -1;
	char buf[4096];
	for (;;) {
		struct pollfd p[9];
		p[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
		for (int i = 0; i < 8; i++)
			p[1 + i] = (struct pollfd){.fd = cl[i], .events = POLLIN};
		if (poll(p, 9, -1) < 0)
			continue;
		if (p[0].revents & POLLIN) {
			int fd = accept(lfd, NULL, NULL);
			int i = 0;
			while (i < 8 && cl[i] >= 0)
				i++;
			if (i < 8)
				cl[i] = fd;
			else if (fd >= 0)
				close(fd);
		}
		for (int i = 0; i < 8; i++) {
			if (cl[i] < 0 || !p[1 + i].revents)
				continue;
			ssize_t n = read(cl[i], buf, sizeof(buf));
			if (n <= 0 || send(cl[i], buf, (size_t)n, MSG_NOSIGNAL) != n) {
				close(cl[i]);
				cl[i] = -1;
			}
		}
	}
}

/* Fork an echo server on 127.0.0.1:<free port>; returns its pid, *port. */
static pid_t echo_start(int *port)
{
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	cr_assert_eq(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0, "bind: %s", strerror(errno));
	cr_assert_eq(listen(lfd, 16), 0);
	cr_assert_eq(getsockname(lfd, (struct sockaddr *)&a, &al), 0);
	*port = ntohs(a.sin_port);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		echo_child(lfd);
		_exit(0);
	}
	close(lfd);
	return pid;
}

/* Connect to 127.0.0.1:port within timeout_ms: the fd, or -1 with errno
 * (ETIMEDOUT when nothing answered, ECONNREFUSED on a reset). */
static int connect_within(int port, int timeout_ms)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
		goto done;
	if (errno != EINPROGRESS) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	struct pollfd pf = {.fd = fd, .events = POLLOUT};
	if (poll(&pf, 1, timeout_ms) <= 0) {
		close(fd);
		errno = ETIMEDOUT;
		return -1;
	}
	int err = 0;
	socklen_t el = sizeof(err);
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
	if (err) {
		close(fd);
		errno = err;
		return -1;
	}
done:
	fcntl(fd, F_SETFL, 0);
	return fd;
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

static void echo_ok(int fd, const char *what)
{
	char r[8];
	cr_assert_eq(write(fd, what, strlen(what)), (ssize_t)strlen(what));
	cr_assert_eq(read_n(fd, r, strlen(what), 10000), strlen(what), "'%s' came back", what);
	cr_assert_eq(memcmp(r, what, strlen(what)), 0);
}

WM_TEST(netns, a_cut_between_two_processes_stops_traffic_and_heal_restores_it)
{
	char why[600] = "";
	cr_assert_eq(netns_enter(why, sizeof(why)), 0, "netns_enter: %s", why);
	cr_assert(netns_inside());
	/* the namespace has one interface, its own loopback */
	struct if_nameindex *ifs = if_nameindex();
	cr_assert_not_null(ifs);
	int nif = 0;
	for (struct if_nameindex *i = ifs; i->if_index; i++, nif++)
		cr_assert_str_eq(i->if_name, "lo", "only lo exists in the namespace (found %s)", i->if_name);
	if_freenameindex(ifs);
	cr_assert_eq(nif, 1);

	int eport = 0;
	pid_t echo = echo_start(&eport);
	struct wm_delay_proxy px;
	char msg[512];
	cr_assert_eq(wm_delay_proxy_start(&px, eport, 0, NULL, msg, sizeof(msg)), 0, "proxy: %s", msg);

	/* test -> proxy (process 2) -> echo (process 1): works */
	int fd = connect_within(px.port, 5000);
	cr_assert_geq(fd, 0, "connect to the proxy: %s", strerror(errno));
	echo_ok(fd, "one");

	/* cut the echo server's port: the proxy's established connection stalls */
	cr_assert_eq(netns_cut(eport, NULL, NETNS_DROP, why, sizeof(why)), 0, "cut: %s", why);
	cr_assert_eq(write(fd, "two", 3), 3);
	char r[8];
	cr_assert_eq(read_n(fd, r, 3, 700), 0, "nothing crosses the cut");
	errno = 0;
	cr_assert_eq(connect_within(eport, 500), -1, "a new connection across a DROP cut does not complete");
	cr_assert_eq(errno, ETIMEDOUT, "it times out (%s)", strerror(errno));

	/* heal: the held bytes arrive (TCP retransmits), new connections work */
	cr_assert_eq(netns_heal(eport, NULL, NETNS_DROP, why, sizeof(why)), 0, "heal: %s", why);
	cr_assert_eq(read_n(fd, r, 3, 15000), 3, "the bytes held by the cut arrive after heal");
	cr_assert_eq(memcmp(r, "two", 3), 0);
	int d = connect_within(eport, 5000);
	cr_assert_geq(d, 0, "direct connect after heal: %s", strerror(errno));
	echo_ok(d, "dir");
	close(d);

	/* REJECT: a connect is refused at once */
	cr_assert_eq(netns_cut(px.port, NULL, NETNS_REJECT, why, sizeof(why)), 0, "cut: %s", why);
	errno = 0;
	double t0 = now_ms();
	cr_assert_eq(connect_within(px.port, 5000), -1);
	cr_assert_eq(errno, ECONNREFUSED, "refused by the reset (%s after %.0f ms)", strerror(errno), now_ms() - t0);
	cr_assert_eq(netns_heal(px.port, NULL, NETNS_REJECT, why, sizeof(why)), 0, "heal: %s", why);
	int e = connect_within(px.port, 5000);
	cr_assert_geq(e, 0, "%s", strerror(errno));
	echo_ok(e, "new");
	close(e);

	/* a cut by source address only hits that sender */
	cr_assert_eq(netns_cut(eport, "127.0.0.9", NETNS_DROP, why, sizeof(why)), 0, "cut: %s", why);
	echo_ok(fd, "src"); /* the proxy connects from 127.0.0.1: not cut */
	cr_assert_eq(netns_heal_all(why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(netns_heal(eport, "127.0.0.9", NETNS_DROP, why, sizeof(why)), -1, "flushed: nothing to delete");

	close(fd);
	cr_assert_eq(wm_delay_proxy_stop(&px), 0);
	kill(echo, SIGKILL);
	waitpid(echo, NULL, 0);
}

WM_TEST(netns, rules_are_refused_outside_a_namespace_of_ours)
{
	char why[600] = "";
	cr_assert_eq(netns_inside(), 0);
	cr_assert_eq(netns_cut(4242, NULL, NETNS_DROP, why, sizeof(why)), -1, "no rule in the host's namespace");
	cr_assert(strstr(why, "not inside"), "%s", why);
	cr_assert_eq(netns_heal_all(why, sizeof(why)), -1);
	/* inside: bad arguments are refused before iptables runs */
	cr_assert_eq(netns_enter(why, sizeof(why)), 0, "netns_enter: %s", why);
	cr_assert_eq(netns_enter(why, sizeof(why)), -1, "one namespace per test");
	cr_assert_eq(netns_cut(0, NULL, NETNS_DROP, why, sizeof(why)), -1);
	cr_assert_eq(netns_cut(65536, NULL, NETNS_DROP, why, sizeof(why)), -1);
	cr_assert_eq(netns_cut(65535, NULL, NETNS_DROP, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(netns_cut(80, "10.0.0.1", NETNS_DROP, why, sizeof(why)), -1, "sources outside 127/8 refused");
	cr_assert(strstr(why, "127.0.0.0/8"), "%s", why);
	cr_assert_eq(netns_cut(80, "127.0.0.1;x", NETNS_DROP, why, sizeof(why)), -1);
}
