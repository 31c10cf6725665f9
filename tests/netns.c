/*
 * netns.c -- see netns.h.
 *
 * Why unshare(2) in the test worker and not `unshare --net <test>`: a
 * partition test starts several processes (router, shards, proxies) that
 * must share ONE namespace to reach each other; starting each under its own
 * `unshare --net` would isolate every one of them.  Moving the worker first
 * puts everything it starts afterwards in the same namespace, and the
 * worker's own sockets to Criterion's runner (made before) keep working.
 *
 * Why fork+exec of iptables rather than libiptc/libnftnl: the rules are
 * few, the iptables command is what operators and the issue speak, and its
 * exit status and message are the clearest error.  The binary is looked
 * up in the usual sbin folders first, since a test's PATH may lack them.
 *
 * Bringing lo up takes one ioctl (SIOCSIFFLAGS), so iproute2 is not needed.
 */
#include "tests/netns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int entered;
static ino_t host_ns; /* the namespace we came from, to refuse rules there */

static void set_why(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_why(char *why, size_t len, const char *fmt, ...)
{
	if (!why || !len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

static ino_t ns_inode(void)
{
	struct stat st;
	return stat("/proc/self/ns/net", &st) ? 0 : st.st_ino;
}

/* Write s to path (uid_map and friends).  0 / -1 with errno. */
static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, s, strlen(s));
	int e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* Not root: a user namespace that owns the new network namespace, with
 * our uid and gid mapped to 0 inside (as unshare --map-root-user does). */
static int enter_as_user(char *why, size_t whylen, int first_errno)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (unshare(CLONE_NEWUSER | CLONE_NEWNET)) {
		set_why(why, whylen,
			"unshare(CLONE_NEWNET) failed: %s; unshare(CLONE_NEWUSER|CLONE_NEWNET) failed too: %s "
			"(needs root or CAP_SYS_ADMIN; a user namespace needs a single-threaded caller, and "
			"Criterion's worker has threads (EINVAL): as a user, run the test binary under "
			"`unshare --user --map-root-user`; see also /proc/sys/user/max_user_namespaces)",
			strerror(first_errno), strerror(errno));
		return -1;
	}
	char map[64];
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)uid);
	if (write_file("/proc/self/setgroups", "deny\n") && errno != ENOENT) {
		set_why(why, whylen, "user namespace: writing setgroups: %s", strerror(errno));
		return -1;
	}
	if (write_file("/proc/self/uid_map", map)) {
		set_why(why, whylen, "user namespace: writing uid_map: %s", strerror(errno));
		return -1;
	}
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)gid);
	if (write_file("/proc/self/gid_map", map)) {
		set_why(why, whylen, "user namespace: writing gid_map: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* ifconfig lo up, by ioctl. */
static int lo_up(char *why, size_t whylen)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		set_why(why, whylen, "socket: %s", strerror(errno));
		return -1;
	}
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	int rc = ioctl(fd, SIOCGIFFLAGS, &ifr);
	if (!rc) {
		ifr.ifr_flags |= IFF_UP;
		rc = ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	int e = errno;
	close(fd);
	if (rc) {
		set_why(why, whylen, "bringing lo up in the new namespace: %s", strerror(e));
		return -1;
	}
	return 0;
}

int netns_enter(char *why, size_t whylen)
{
	if (entered) {
		set_why(why, whylen, "netns_enter: already inside a namespace of ours");
		return -1;
	}
	host_ns = ns_inode();
	if (unshare(CLONE_NEWNET)) {
		int e = errno;
		if (e != EPERM) {
			set_why(why, whylen, "unshare(CLONE_NEWNET): %s", strerror(e));
			return -1;
		}
		if (enter_as_user(why, whylen, e))
			return -1;
	}
	ino_t now = ns_inode();
	if (!now || now == host_ns) {
		set_why(why, whylen, "unshare returned but /proc/self/ns/net did not change");
		return -1;
	}
	if (lo_up(why, whylen))
		return -1;
	entered = 1;
	return 0;
}

int netns_inside(void)
{
	return entered && ns_inode() != host_ns;
}

static const char *iptables_path(void)
{
	static const char *const cand[] = {"/usr/sbin/iptables", "/sbin/iptables", "/usr/bin/iptables"};
	for (size_t i = 0; i < sizeof(cand) / sizeof(cand[0]); i++)
		if (access(cand[i], X_OK) == 0)
			return cand[i];
	return NULL;
}

/* Run iptables with argv (after argv[0]); 0, or -1 with its status and
 * what it printed. */
static int iptables(const char *const *args, char *why, size_t whylen)
{
	if (!netns_inside()) {
		set_why(why, whylen, "refused: not inside a namespace made by netns_enter (the host's rules are never touched)");
		return -1;
	}
	const char *path = iptables_path();
	if (!path) {
		set_why(why, whylen, "iptables is not installed (Debian package iptables; .ci/deps installs it)");
		return -1;
	}
	const char *argv[24] = {path};
	size_t n = 1;
	for (; args[n - 1] && n < 23; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	int out[2];
	if (pipe2(out, O_CLOEXEC)) {
		set_why(why, whylen, "pipe: %s", strerror(errno));
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		set_why(why, whylen, "fork: %s", strerror(errno));
		close(out[0]);
		close(out[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(out[1], 1);
		dup2(out[1], 2);
		execv(path, (char *const *)argv);
		_exit(127);
	}
	close(out[1]);
	char msg[512];
	size_t len = 0;
	ssize_t k;
	while (len < sizeof(msg) - 1 && (k = read(out[0], msg + len, sizeof(msg) - 1 - len)) > 0)
		len += (size_t)k;
	msg[len] = 0;
	close(out[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		set_why(why, whylen, "%s %s %s ...: status %d: %s", path, argv[1], argv[2] ? argv[2] : "",
			WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), msg);
		return -1;
	}
	return 0;
}

/* Add (-A) or delete (-D) the rule for (port, src, how). */
static int rule(const char *op, int port, const char *src, enum netns_how how, char *why, size_t whylen)
{
	struct in_addr a;
	if (port <= 0 || port > 65535) {
		set_why(why, whylen, "port %d out of 1..65535", port);
		return -1;
	}
	if (src && (inet_pton(AF_INET, src, &a) != 1 || (ntohl(a.s_addr) >> 24) != 127)) {
		set_why(why, whylen, "source %s is not a 127.0.0.0/8 address", src);
		return -1;
	}
	char p[8];
	snprintf(p, sizeof(p), "%d", port);
	const char *args[20];
	size_t n = 0;
	args[n++] = "-w";
	args[n++] = op;
	args[n++] = "INPUT";
	args[n++] = "-i";
	args[n++] = "lo";
	if (src) {
		args[n++] = "-s";
		args[n++] = src;
	}
	args[n++] = "-p";
	args[n++] = "tcp";
	args[n++] = "--dport";
	args[n++] = p;
	args[n++] = "-j";
	if (how == NETNS_REJECT) {
		args[n++] = "REJECT";
		args[n++] = "--reject-with";
		args[n++] = "tcp-reset";
	} else {
		args[n++] = "DROP";
	}
	args[n] = NULL;
	return iptables(args, why, whylen);
}

int netns_cut(int port, const char *src, enum netns_how how, char *why, size_t whylen)
{
	return rule("-A", port, src, how, why, whylen);
}

int netns_heal(int port, const char *src, enum netns_how how, char *why, size_t whylen)
{
	return rule("-D", port, src, how, why, whylen);
}

int netns_heal_all(char *why, size_t whylen)
{
	const char *args[] = {"-w", "-F", "INPUT", NULL};
	return iptables(args, why, whylen);
}
