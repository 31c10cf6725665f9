/*
 * ctl_cluster.c -- `wm-ctl cluster status`: every process of a cluster at
 * a glance (DESIGN.md section 9), for an operator at a terminal.
 *
 *   wm-ctl cluster status --shard-map FILE --cluster-secret-file FILE
 *                         [--router HOST:PORT ...]
 *
 * Each shard of the map and each router named is asked GET
 * /internal/cluster/status, signed with the cluster secret (the route a
 * router's readiness probe asks of the home).  One line per process; the exit
 * status is 1 when any process did not answer, so scripts can use it.
 *
 * Why blocking sockets here: a CLI asks a handful of processes once, with
 * a time-out per process; the event-loop client (net/client.h) is for
 * servers.  Only numeric addresses are dialled (the map's), never a name.
 */
#include "shard-router/ctl_cluster.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "engine/cluster/cluster_auth.h"
#include "engine/cluster/shard_map.h"

#define CTL_TIMEOUT_MS 3000      /* per process: connect, send, answer */
#define CTL_MAX_ANSWER (64u << 10)
#define CTL_MAX_ROUTERS 16

/* Wait for fd to be ready for `ev` until deadline (ms since an epoch). */
static int ctl_wait(int fd, short ev, long long deadline)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	long long now = ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
	if (now >= deadline)
		return -1;
	struct pollfd p = {.fd = fd, .events = ev};
	return poll(&p, 1, (int)(deadline - now)) == 1 ? 0 : -1;
}

static long long ctl_deadline(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000 + CTL_TIMEOUT_MS;
}

/*
 * GET path from addr ("a.b.c.d:port"), with an optional signature header,
 * Connection: close.  The body into out (NUL-terminated); the status, or
 * -1 with the reason in out.
 */
static int ctl_get(const char *addr, const char *path, const char *extra, char *out, size_t out_size)
{
	char host[64];
	const char *colon = strrchr(addr, ':');
	struct sockaddr_in sa = {.sin_family = AF_INET};
	if (!colon || (size_t)(colon - addr) >= sizeof(host)) {
		snprintf(out, out_size, "not a numeric HOST:PORT");
		return -1;
	}
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = 0;
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		snprintf(out, out_size, "not a numeric IPv4 address");
		return -1;
	}
	sa.sin_port = htons((uint16_t)atoi(colon + 1));
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	long long deadline = ctl_deadline();
	if (fd < 0 || (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) && errno != EINPROGRESS) ||
	    ctl_wait(fd, POLLOUT, deadline)) {
		snprintf(out, out_size, "cannot connect");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	int soerr = 0;
	socklen_t sl = sizeof(soerr);
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
	char req[512];
	int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n%s\r\n", path, addr,
			 extra ? extra : "");
	if (soerr || n <= 0 || (size_t)n >= sizeof(req) || write(fd, req, (size_t)n) != n) {
		snprintf(out, out_size, "cannot connect");
		close(fd);
		return -1;
	}
	static char buf[CTL_MAX_ANSWER + 1];
	size_t len = 0;
	for (;;) {
		if (len == CTL_MAX_ANSWER || ctl_wait(fd, POLLIN, deadline))
			break;
		ssize_t k = read(fd, buf + len, CTL_MAX_ANSWER - len);
		if (k <= 0)
			break;
		len += (size_t)k;
	}
	close(fd);
	buf[len] = 0;
	int status = 0;
	const char *body = strstr(buf, "\r\n\r\n");
	if (sscanf(buf, "HTTP/1.1 %d", &status) != 1 || !body) {
		snprintf(out, out_size, "no answer within %d ms", CTL_TIMEOUT_MS);
		return -1;
	}
	snprintf(out, out_size, "%s", body + 4);
	return status;
}

static int ctl_usage(void)
{
	fprintf(stderr, "usage: wm-ctl cluster status --shard-map FILE --cluster-secret-file FILE "
			"[--router HOST:PORT ...]\n");
	return 2;
}

int ctl_cluster(int argc, char **argv)
{
	const char *map_path = NULL, *secret_path = NULL, *routers[CTL_MAX_ROUTERS];
	unsigned n_routers = 0;
	if (argc < 1 || strcmp(argv[0], "status"))
		return ctl_usage();
	for (int i = 1; i < argc; i++) {
		if (i + 1 >= argc)
			return ctl_usage();
		if (!strcmp(argv[i], "--shard-map"))
			map_path = argv[++i];
		else if (!strcmp(argv[i], "--cluster-secret-file"))
			secret_path = argv[++i];
		else if (!strcmp(argv[i], "--router") && n_routers < CTL_MAX_ROUTERS)
			routers[n_routers++] = argv[++i];
		else
			return ctl_usage();
	}
	if (!map_path || !secret_path)
		return ctl_usage();
	static struct shard_map m;
	struct cluster_key k;
	char err[512];
	if (smap_load(map_path, NULL, 0, &m, err, sizeof(err))) {
		fprintf(stderr, "wm-ctl: %s\n", err);
		return 1;
	}
	if (ck_load(secret_path, &k, err, sizeof(err))) {
		fprintf(stderr, "wm-ctl: cluster secret %s: %s\n", secret_path, err);
		return 1;
	}
	int down = 0;
	static char body[CTL_MAX_ANSWER + 1];
	printf("map %s version %llu, %u shards\n", map_path, (unsigned long long)m.version, m.n);
	for (uint32_t i = 0; i < m.n; i++) {
		static const char path[] = "/internal/cluster/status";
		char sig[CK_HEADER_MAX], hdr[CK_HEADER_MAX + 32];
		if (ck_sign(&k, "GET", 3, path, sizeof(path) - 1, (int64_t)time(NULL), NULL, 0, sig))
			return 1;
		snprintf(hdr, sizeof(hdr), CK_HEADER_NAME ": %s\r\n", sig);
		int st = ctl_get(m.shards[i].addr, path, hdr, body, sizeof(body));
		printf("shard %u %s%s %s\n", i, m.shards[i].addr, i == 0 ? " (home)" : "",
		       st == 200 ? body : st < 0 ? body : "unexpected answer");
		down += st != 200;
	}
	for (unsigned i = 0; i < n_routers; i++) {
		static const char path[] = "/internal/cluster/status";
		char sig[CK_HEADER_MAX], hdr[CK_HEADER_MAX + 32];
		if (ck_sign(&k, "GET", 3, path, sizeof(path) - 1, (int64_t)time(NULL), NULL, 0, sig))
			return 1;
		snprintf(hdr, sizeof(hdr), CK_HEADER_NAME ": %s\r\n", sig);
		int st = ctl_get(routers[i], path, hdr, body, sizeof(body));
		printf("router %s %s\n", routers[i], st == 200 ? body : st < 0 ? body : "unexpected answer");
		down += st != 200;
	}
	if (down)
		printf("%d process(es) did not answer\n", down);
	return down ? 1 : 0;
}
