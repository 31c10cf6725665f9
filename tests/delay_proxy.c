/*
 * delay_proxy.c -- see delay_proxy.h.  The ready line the proxy prints is
 * "wm-delay-proxy listening 127.0.0.1:P control 127.0.0.1:C"; reading it
 * is how a test learns the ports it picked (port 0 = a free one).
 */
#include "tests/delay_proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define READY_TIMEOUT_MS 5000

/* Read into buf until a newline, EOF or timeout; NUL-terminates. */
static size_t read_line(int fd, char *buf, size_t cap, int timeout_ms)
{
	size_t len = 0;
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	while (len < cap - 1 && poll(&pf, 1, timeout_ms) > 0) {
		ssize_t k = read(fd, buf + len, cap - 1 - len);
		if (k <= 0)
			break;
		len += (size_t)k;
		if (memchr(buf, '\n', len))
			break;
	}
	buf[len] = 0;
	return len;
}

int wm_delay_proxy_run(struct wm_delay_proxy *p, const char *const *args, char *msg, size_t msglen)
{
	const char *bindir = getenv("WM_BIN_DIR");
	char path[512];
	snprintf(path, sizeof(path), "%s/wm-delay-proxy", bindir ? bindir : "bin");
	if (msg && msglen)
		msg[0] = 0;
	int out[2], err[2];
	if (pipe2(out, O_CLOEXEC))
		return -2;
	if (pipe2(err, O_CLOEXEC)) {
		close(out[0]);
		close(out[1]);
		return -2;
	}
	const char *argv[40] = {path};
	size_t n = 1;
	for (; args && args[n - 1] && n < 39; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(out[1], 1);
		dup2(err[1], 2);
		execv(path, (char *const *)argv);
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	char line[256];
	int ok = pid > 0 && read_line(out[0], line, sizeof(line), READY_TIMEOUT_MS) > 0 &&
		 sscanf(line, "wm-delay-proxy listening 127.0.0.1:%d control 127.0.0.1:%d", &p->port, &p->cport) == 2;
	close(out[0]);
	if (ok) {
		close(err[0]);
		p->pid = pid;
		return -1;
	}
	if (pid < 0) {
		close(err[0]);
		return -2;
	}
	/* Not ready: it exited (stdout closed) or hangs.  Its stderr says why. */
	int st = 0, hung = 0;
	struct pollfd pf = {.fd = err[0], .events = POLLIN};
	if (poll(&pf, 1, READY_TIMEOUT_MS) <= 0) {
		kill(pid, SIGKILL);
		hung = 1;
	} else if (msg && msglen) {
		ssize_t k = read(err[0], msg, msglen - 1);
		msg[k > 0 ? k : 0] = 0;
	}
	close(err[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (hung)
		return -2;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int wm_delay_proxy_start(struct wm_delay_proxy *p, int target_port, int delay_ms, const char *const *extra,
			 char *msg, size_t msglen)
{
	char target[32], delay[16];
	snprintf(target, sizeof(target), "127.0.0.1:%d", target_port);
	snprintf(delay, sizeof(delay), "%d", delay_ms);
	const char *args[40] = {"--listen", "127.0.0.1:0", "--target", target, "--delay-ms", delay, "--control",
				"127.0.0.1:0"};
	size_t n = 8;
	for (size_t i = 0; extra && extra[i] && n < 39; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	return wm_delay_proxy_run(p, args, msg, msglen) == -1 ? 0 : -1;
}

int wm_delay_proxy_control(const struct wm_delay_proxy *p, const char *cmd, char *out, size_t outlen)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p->cport),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	char line[160];
	int n = snprintf(line, sizeof(line), "%s\n", cmd);
	int rc = write(fd, line, (size_t)n) == n && read_line(fd, out, outlen, READY_TIMEOUT_MS) > 0 ? 0 : -1;
	close(fd);
	return rc;
}

int wm_delay_proxy_stop(struct wm_delay_proxy *p)
{
	if (p->pid <= 0)
		return -1;
	kill(p->pid, SIGTERM);
	int st = 0;
	while (waitpid(p->pid, &st, 0) < 0 && errno == EINTR)
		;
	p->pid = 0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
