/*
 * wm-delay-proxy.c -- a TCP proxy for tests that delays, black-holes or
 * drops traffic between two processes on loopback (issue 14, DESIGN.md 9
 * "Testing a cluster").
 *
 * Why our own: the kernel here has no netem (no `tc qdisc ... delay`), and
 * the 2PC tests need messages to arrive late, in both directions, and to
 * stop and resume on command.  Put between a router and a shard (the
 * router is given the proxy's port as the shard's address), it delays each
 * chunk it reads by --delay-ms (+ a seeded random 0..--jitter-ms), keeping
 * the byte order of each direction.
 *
 *   wm-delay-proxy --listen 127.0.0.1:P --target 127.0.0.1:Q --delay-ms N
 *                  [--jitter-ms J] [--seed S] [--control 127.0.0.1:C]
 *                  [--max-conns M] [--max-queue-bytes B]
 *
 * Port 0 picks a free port.  Once ready it prints one line on stdout:
 *   "wm-delay-proxy listening 127.0.0.1:P control 127.0.0.1:C" (control 0 when none)
 *
 * Network safety: every address given (listen, target, control) must be a
 * numeric IPv4 address in 127.0.0.0/8; anything else (a name, another
 * range, IPv6) is refused at start with exit status 2, before any socket
 * is made.  The proxy only ever connects to --target.
 *
 * Run-time control (documented for test authors):
 *   - signals: SIGUSR1 black-holes, SIGUSR2 heals, SIGTERM/SIGINT stop.
 *   - the control port (--control), one command per line, answered with
 *     one line ("ok", "err <why>" or the stats line):
 *       delay <ms>     set the delay of chunks read from now on
 *       jitter <ms>    set the jitter likewise
 *       blackhole      stop: no accept, no read, no write (data stays in
 *                      the kernel buffers and in the proxy's queues, so
 *                      the peers see silence, as across a partition; TCP
 *                      connections stay up, new ones complete the
 *                      handshake in the backlog and wait)
 *       heal           resume; everything held flows again, in order
 *       drop           close every proxied connection at once with a
 *                      reset (SO_LINGER 0): peers see ECONNRESET
 *       stats          "conns=.. accepted=.. refused=.. bytes_up=..
 *                      bytes_down=.. max_queued=.. blackhole=0|1 delay_ms=.. jitter_ms=.."
 *     A line longer than CTRL_LINE_MAX, or more than CTRL_MAX_CONNS
 *     control connections, is refused (closed).
 *
 * Bounds (limits as data, checked at start): --delay-ms and --jitter-ms
 * 0..MAX_DELAY_MS; --max-conns 1..MAX_CONNS_LIMIT (default 64): a client
 * past it is accepted and closed at once (counted as refused);
 * --max-queue-bytes MIN_QUEUE..MAX_QUEUE (default 1 MiB) per direction of
 * each connection: at the limit the proxy stops reading that side (TCP
 * back-pressure), so memory is bounded by max-conns x 2 x max-queue.
 *
 * Shape: one thread, one epoll, level-triggered.  Chunks wait in a FIFO
 * per direction with their due time (microseconds, CLOCK_MONOTONIC); the
 * epoll timeout is the earliest due head.  The EOF of a side is queued as
 * an empty chunk, so the half-close reaches the other side after the same
 * delay as the data before it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_DELAY_MS 60000
#define MAX_CONNS_LIMIT 1024
#define DEFAULT_MAX_CONNS 64
#define MIN_QUEUE (16 * 1024)
#define MAX_QUEUE (64 * 1024 * 1024)
#define DEFAULT_QUEUE (1024 * 1024)
#define READ_CHUNK (16 * 1024)
#define CTRL_LINE_MAX 128
#define CTRL_MAX_CONNS 4

/* epoll tags: the top bits say what the fd is, the rest an index */
#define TAG_LISTEN (UINT64_C(1) << 60)
#define TAG_CTRL_LISTEN (UINT64_C(2) << 60)
#define TAG_CTRL (UINT64_C(3) << 60)
#define TAG_SIGNAL (UINT64_C(4) << 60)
#define TAG_CONN (UINT64_C(5) << 60)
#define TAG_MASK (UINT64_C(15) << 60)

struct chunk {
	struct chunk *next;
	uint64_t due_us;
	size_t len, off; /* len 0: the source's EOF */
	unsigned char data[];
};

/* One direction: bytes read from side `from` wait here for side 1-from. */
struct dir {
	struct chunk *head, *tail;
	size_t queued;
	uint64_t last_due;
	int eof_read;  /* the source gave EOF (or an EOF chunk is queued) */
	int eof_sent;  /* shutdown(SHUT_WR) done on the destination */
	int want_out;  /* the destination said EAGAIN */
};

struct conn {
	int used;
	int fd[2];        /* 0 the client, 1 the target */
	int connecting;   /* target connect in progress */
	uint32_t ev[2];   /* epoll interest now registered (0: not in the set) */
	struct dir d[2];  /* d[0] client->target, d[1] target->client */
};

struct ctrl {
	int fd;
	char line[CTRL_LINE_MAX + 1];
	size_t len;
};

static struct {
	struct sockaddr_in listen_addr, target_addr, ctrl_addr;
	int have_ctrl;
	uint32_t delay_ms, jitter_ms;
	uint64_t rng;
	uint32_t max_conns;
	size_t max_queue;
	int ep, lfd, cfd, sfd;
	int blackhole, listening;
	struct conn *conns;
	struct ctrl ctrls[CTRL_MAX_CONNS];
	uint64_t accepted, refused, bytes_up, bytes_down, max_queued, nconns;
} P;

static void usage_exit(const char *why)
{
	fprintf(stderr,
		"wm-delay-proxy: %s\nusage: wm-delay-proxy --listen 127.0.0.1:P --target 127.0.0.1:Q --delay-ms N "
		"[--jitter-ms J] [--seed S] [--control 127.0.0.1:C] [--max-conns M] [--max-queue-bytes B]\n",
		why);
	exit(2);
}

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* xorshift64*: deterministic jitter for a given --seed */
static uint64_t rnd(void)
{
	P.rng ^= P.rng >> 12;
	P.rng ^= P.rng << 25;
	P.rng ^= P.rng >> 27;
	return P.rng * UINT64_C(2685821657736338717);
}

/* Parse a decimal in lo..hi; exits 2 naming the option otherwise. */
static uint64_t parse_num(const char *opt, const char *s, uint64_t lo, uint64_t hi)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi) {
		char why[160];
		snprintf(why, sizeof(why), "%s must be a number in %" PRIu64 "..%" PRIu64 " (got '%s')", opt, lo, hi, s);
		usage_exit(why);
	}
	return v;
}

/* "127.a.b.c:port", numeric, in 127.0.0.0/8 only; exits 2 otherwise. */
static void parse_addr(const char *opt, const char *s, struct sockaddr_in *out)
{
	char host[64], why[200];
	const char *colon = strrchr(s, ':');
	if (!colon || (size_t)(colon - s) >= sizeof(host)) {
		snprintf(why, sizeof(why), "%s must be 127.x.y.z:port (got '%s')", opt, s);
		usage_exit(why);
	}
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	memset(out, 0, sizeof(*out));
	out->sin_family = AF_INET;
	if (inet_pton(AF_INET, host, &out->sin_addr) != 1 || (ntohl(out->sin_addr.s_addr) >> 24) != 127) {
		snprintf(why, sizeof(why), "%s: '%s' is not a loopback address (only 127.0.0.0/8 is allowed)", opt, host);
		usage_exit(why);
	}
	out->sin_port = htons((uint16_t)parse_num(opt, colon + 1, 0, 65535));
}

/* A listening socket on a; exits 1 on failure. */
static int listen_on(struct sockaddr_in *a)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	socklen_t al = sizeof(*a);
	if (fd < 0 || bind(fd, (struct sockaddr *)a, sizeof(*a)) || listen(fd, 128) ||
	    getsockname(fd, (struct sockaddr *)a, &al)) {
		fprintf(stderr, "wm-delay-proxy: listen: %s\n", strerror(errno));
		exit(1);
	}
	return fd;
}

static void ep_set(int fd, uint64_t tag, uint32_t ev, int op)
{
	struct epoll_event e = {.events = ev, .data.u64 = tag};
	epoll_ctl(P.ep, op, fd, &e);
}

/* ---- connections ------------------------------------------------------------ */

static void dir_free(struct dir *d)
{
	for (struct chunk *c = d->head, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	memset(d, 0, sizeof(*d));
}

/* Close both sides; rst: reset instead of a clean close. */
static void conn_close(struct conn *c, int rst)
{
	for (int s = 0; s < 2; s++) {
		if (c->fd[s] < 0)
			continue;
		if (rst) {
			struct linger l = {.l_onoff = 1, .l_linger = 0};
			setsockopt(c->fd[s], SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		}
		close(c->fd[s]); /* also leaves the epoll set */
		c->fd[s] = -1;
	}
	dir_free(&c->d[0]);
	dir_free(&c->d[1]);
	c->used = 0;
	P.nconns--;
}

/* The epoll interest of side s of c, from its state. */
static void conn_interest(struct conn *c, size_t idx)
{
	for (int s = 0; s < 2; s++) {
		if (c->fd[s] < 0)
			continue;
		uint32_t ev = 0;
		if (s == 1 && c->connecting) {
			ev = EPOLLOUT;
		} else if (!P.blackhole) {
			/* side s reads into d[s] and writes d[1-s] */
			if (!c->d[s].eof_read && c->d[s].queued < P.max_queue && !(s == 0 && c->connecting))
				ev |= EPOLLIN;
			if (c->d[1 - s].want_out)
				ev |= EPOLLOUT;
		}
		/* A side with nothing to wait for leaves the set: epoll reports
		 * EPOLLHUP whatever the interest, which would spin the loop
		 * while a half-closed connection waits for its delayed EOF. */
		if (ev != c->ev[s]) {
			int op = !c->ev[s] ? EPOLL_CTL_ADD : !ev ? EPOLL_CTL_DEL : EPOLL_CTL_MOD;
			ep_set(c->fd[s], TAG_CONN | (idx << 1) | (uint64_t)s, ev, op);
			c->ev[s] = ev;
		}
	}
}

static void accept_clients(void)
{
	for (;;) {
		int fd = accept4(P.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		if (P.nconns >= P.max_conns) {
			P.refused++;
			close(fd);
			continue;
		}
		int t = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (t < 0) {
			P.refused++;
			close(fd);
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		setsockopt(t, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		int rc = connect(t, (struct sockaddr *)&P.target_addr, sizeof(P.target_addr));
		if (rc && errno != EINPROGRESS) {
			P.refused++;
			close(t);
			close(fd);
			continue;
		}
		size_t i = 0;
		while (P.conns[i].used)
			i++;
		struct conn *c = &P.conns[i];
		memset(c, 0, sizeof(*c));
		c->used = 1;
		c->fd[0] = fd;
		c->fd[1] = t;
		c->connecting = rc != 0;
		P.nconns++;
		P.accepted++;
		conn_interest(c, i); /* registers what each side waits for */
	}
}

/* Read what side s has into d[s], stamping the due time.  0, or -1 when the
 * connection must close. */
static int conn_read(struct conn *c, int s)
{
	struct dir *d = &c->d[s];
	while (!d->eof_read && d->queued < P.max_queue) {
		size_t room = P.max_queue - d->queued;
		size_t want = room < READ_CHUNK ? room : READ_CHUNK;
		struct chunk *ch = malloc(sizeof(*ch) + want);
		if (!ch)
			return -1;
		ssize_t n = read(c->fd[s], ch->data, want);
		if (n < 0) {
			free(ch);
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		}
		uint64_t due = now_us() + (uint64_t)P.delay_ms * 1000u +
			       (P.jitter_ms ? rnd() % ((uint64_t)P.jitter_ms * 1000u + 1) : 0);
		if (due < d->last_due)
			due = d->last_due; /* never reorder a direction */
		d->last_due = due;
		ch->next = NULL;
		ch->due_us = due;
		ch->len = (size_t)n;
		ch->off = 0;
		if (d->tail)
			d->tail->next = ch;
		else
			d->head = ch;
		d->tail = ch;
		d->queued += (size_t)n;
		if (d->queued > P.max_queued)
			P.max_queued = d->queued;
		if (n == 0) {
			d->eof_read = 1;
			break;
		}
		if (s == 0)
			P.bytes_up += (uint64_t)n;
		else
			P.bytes_down += (uint64_t)n;
	}
	return 0;
}

/* Write what is due in d[s] to side 1-s.  0, or -1 to close. */
static int conn_flush(struct conn *c, int s, uint64_t now)
{
	struct dir *d = &c->d[s];
	int to = c->fd[1 - s];
	d->want_out = 0;
	while (d->head && d->head->due_us <= now) {
		struct chunk *ch = d->head;
		if (ch->len == 0) {
			shutdown(to, SHUT_WR);
			d->eof_sent = 1;
		} else {
			ssize_t n = send(to, ch->data + ch->off, ch->len - ch->off, MSG_NOSIGNAL);
			if (n < 0) {
				if (errno == EAGAIN || errno == EINTR) {
					d->want_out = 1;
					return 0;
				}
				return -1;
			}
			ch->off += (size_t)n;
			d->queued -= (size_t)n;
			if (ch->off < ch->len) {
				d->want_out = 1;
				return 0;
			}
		}
		d->head = ch->next;
		if (!d->head)
			d->tail = NULL;
		free(ch);
	}
	return 0;
}

/* Flush every due chunk of every connection; close finished ones.  Returns
 * the epoll timeout (ms) until the next due chunk, or -1. */
static int tick(void)
{
	uint64_t now = now_us(), next = UINT64_MAX;
	for (size_t i = 0; i < P.max_conns; i++) {
		struct conn *c = &P.conns[i];
		if (!c->used || c->connecting)
			continue;
		if (!P.blackhole)
			for (int s = 0; s < 2; s++)
				if (conn_flush(c, s, now)) {
					conn_close(c, 1);
					break;
				}
		if (!c->used)
			continue;
		if (c->d[0].eof_sent && c->d[1].eof_sent) {
			conn_close(c, 0);
			continue;
		}
		for (int s = 0; s < 2; s++)
			if (c->d[s].head && !c->d[s].want_out && c->d[s].head->due_us < next)
				next = c->d[s].head->due_us;
		conn_interest(c, i);
	}
	if (P.blackhole || next == UINT64_MAX)
		return -1;
	now = now_us();
	return next <= now ? 0 : (int)((next - now + 999) / 1000);
}

static void conn_event(size_t i, int s, uint32_t ev)
{
	struct conn *c = &P.conns[i];
	if (!c->used)
		return;
	if (s == 1 && c->connecting) {
		int err = 0;
		socklen_t el = sizeof(err);
		getsockopt(c->fd[1], SOL_SOCKET, SO_ERROR, &err, &el);
		if (err || (ev & (EPOLLERR | EPOLLHUP))) {
			conn_close(c, 1); /* the target refused: the client sees a reset */
			return;
		}
		c->connecting = 0;
		conn_interest(c, i);
		return;
	}
	if (P.blackhole)
		return;
	if ((ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) && conn_read(c, s)) {
		conn_close(c, 1);
		return;
	}
	conn_interest(c, i);
}

/* ---- control ----------------------------------------------------------------- */

static void set_blackhole(int on)
{
	P.blackhole = on;
	if (on && P.listening) {
		ep_set(P.lfd, TAG_LISTEN, 0, EPOLL_CTL_DEL);
		P.listening = 0;
	} else if (!on && !P.listening) {
		ep_set(P.lfd, TAG_LISTEN, EPOLLIN, EPOLL_CTL_ADD);
		P.listening = 1;
	}
	for (size_t i = 0; i < P.max_conns; i++)
		if (P.conns[i].used)
			conn_interest(&P.conns[i], i);
}

static void ctrl_reply(struct ctrl *k, const char *s)
{
	if (send(k->fd, s, strlen(s), MSG_NOSIGNAL) < 0) {
		/* the controller went away; its next read closes it */
	}
}

/* One command line; see the top comment. */
static void ctrl_command(struct ctrl *k, const char *line)
{
	char out[400];
	unsigned long v;
	char tail;
	if (sscanf(line, "delay %lu%c", &v, &tail) == 1 && v <= MAX_DELAY_MS) {
		P.delay_ms = (uint32_t)v;
		ctrl_reply(k, "ok\n");
	} else if (sscanf(line, "jitter %lu%c", &v, &tail) == 1 && v <= MAX_DELAY_MS) {
		P.jitter_ms = (uint32_t)v;
		ctrl_reply(k, "ok\n");
	} else if (!strcmp(line, "blackhole")) {
		set_blackhole(1);
		ctrl_reply(k, "ok\n");
	} else if (!strcmp(line, "heal")) {
		set_blackhole(0);
		ctrl_reply(k, "ok\n");
	} else if (!strcmp(line, "drop")) {
		for (size_t i = 0; i < P.max_conns; i++)
			if (P.conns[i].used)
				conn_close(&P.conns[i], 1);
		ctrl_reply(k, "ok\n");
	} else if (!strcmp(line, "stats")) {
		snprintf(out, sizeof(out),
			 "conns=%" PRIu64 " accepted=%" PRIu64 " refused=%" PRIu64 " bytes_up=%" PRIu64
			 " bytes_down=%" PRIu64 " max_queued=%" PRIu64 " blackhole=%d delay_ms=%u jitter_ms=%u\n",
			 P.nconns, P.accepted, P.refused, P.bytes_up, P.bytes_down, P.max_queued, P.blackhole,
			 P.delay_ms, P.jitter_ms);
		ctrl_reply(k, out);
	} else {
		ctrl_reply(k, "err unknown command or value out of range\n");
	}
}

static void ctrl_close(struct ctrl *k)
{
	close(k->fd);
	k->fd = -1;
}

static void ctrl_event(size_t i)
{
	struct ctrl *k = &P.ctrls[i];
	char buf[256];
	ssize_t n = read(k->fd, buf, sizeof(buf));
	if (n <= 0) {
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			ctrl_close(k);
		return;
	}
	for (ssize_t j = 0; j < n && k->fd >= 0; j++) {
		if (buf[j] == '\n') {
			k->line[k->len] = 0;
			if (k->len && k->line[k->len - 1] == '\r')
				k->line[k->len - 1] = 0;
			ctrl_command(k, k->line);
			k->len = 0;
		} else if (k->len >= CTRL_LINE_MAX) {
			ctrl_reply(k, "err line too long\n");
			ctrl_close(k);
		} else {
			k->line[k->len++] = buf[j];
		}
	}
}

static void ctrl_accept(void)
{
	for (;;) {
		int fd = accept4(P.cfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		size_t i = 0;
		while (i < CTRL_MAX_CONNS && P.ctrls[i].fd >= 0)
			i++;
		if (i == CTRL_MAX_CONNS) {
			close(fd);
			continue;
		}
		P.ctrls[i].fd = fd;
		P.ctrls[i].len = 0;
		ep_set(fd, TAG_CTRL | i, EPOLLIN, EPOLL_CTL_ADD);
	}
}

/* Handle the signals; 1 when asked to stop. */
static int signal_event(void)
{
	struct signalfd_siginfo si;
	int stop = 0;
	while (read(P.sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGUSR1)
			set_blackhole(1);
		else if (si.ssi_signo == SIGUSR2)
			set_blackhole(0);
		else
			stop = 1;
	}
	return stop;
}

int main(int argc, char **argv)
{
	int have_listen = 0, have_target = 0, have_delay = 0;
	P.rng = 1;
	P.max_conns = DEFAULT_MAX_CONNS;
	P.max_queue = DEFAULT_QUEUE;
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		if (i + 1 >= argc)
			usage_exit("every option takes a value");
		const char *v = argv[++i];
		if (!strcmp(o, "--listen")) {
			parse_addr(o, v, &P.listen_addr);
			have_listen = 1;
		} else if (!strcmp(o, "--target")) {
			parse_addr(o, v, &P.target_addr);
			have_target = 1;
		} else if (!strcmp(o, "--control")) {
			parse_addr(o, v, &P.ctrl_addr);
			P.have_ctrl = 1;
		} else if (!strcmp(o, "--delay-ms")) {
			P.delay_ms = (uint32_t)parse_num(o, v, 0, MAX_DELAY_MS);
			have_delay = 1;
		} else if (!strcmp(o, "--jitter-ms")) {
			P.jitter_ms = (uint32_t)parse_num(o, v, 0, MAX_DELAY_MS);
		} else if (!strcmp(o, "--seed")) {
			P.rng = parse_num(o, v, 0, UINT64_MAX) | 1; /* xorshift needs a non-zero state */
		} else if (!strcmp(o, "--max-conns")) {
			P.max_conns = (uint32_t)parse_num(o, v, 1, MAX_CONNS_LIMIT);
		} else if (!strcmp(o, "--max-queue-bytes")) {
			P.max_queue = (size_t)parse_num(o, v, MIN_QUEUE, MAX_QUEUE);
		} else {
			usage_exit("unknown option");
		}
	}
	if (!have_listen || !have_target || !have_delay)
		usage_exit("--listen, --target and --delay-ms are required");
	if (!P.target_addr.sin_port)
		usage_exit("--target needs a port");

	sigset_t ss;
	sigemptyset(&ss);
	sigaddset(&ss, SIGUSR1);
	sigaddset(&ss, SIGUSR2);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	signal(SIGPIPE, SIG_IGN);
	P.sfd = signalfd(-1, &ss, SFD_NONBLOCK | SFD_CLOEXEC);
	P.ep = epoll_create1(EPOLL_CLOEXEC);
	P.conns = calloc(P.max_conns, sizeof(*P.conns));
	if (P.sfd < 0 || P.ep < 0 || !P.conns) {
		fprintf(stderr, "wm-delay-proxy: setup: %s\n", strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < CTRL_MAX_CONNS; i++)
		P.ctrls[i].fd = -1;
	P.lfd = listen_on(&P.listen_addr);
	P.cfd = P.have_ctrl ? listen_on(&P.ctrl_addr) : -1;
	ep_set(P.lfd, TAG_LISTEN, EPOLLIN, EPOLL_CTL_ADD);
	P.listening = 1;
	if (P.cfd >= 0)
		ep_set(P.cfd, TAG_CTRL_LISTEN, EPOLLIN, EPOLL_CTL_ADD);
	ep_set(P.sfd, TAG_SIGNAL, EPOLLIN, EPOLL_CTL_ADD);
	printf("wm-delay-proxy listening 127.0.0.1:%u control 127.0.0.1:%u\n", ntohs(P.listen_addr.sin_port),
	       P.have_ctrl ? ntohs(P.ctrl_addr.sin_port) : 0);
	fflush(stdout);

	int stop = 0, timeout = -1;
	while (!stop) {
		struct epoll_event evs[64];
		int n = epoll_wait(P.ep, evs, 64, timeout);
		if (n < 0 && errno != EINTR) {
			fprintf(stderr, "wm-delay-proxy: epoll_wait: %s\n", strerror(errno));
			return 1;
		}
		for (int i = 0; i < n; i++) {
			uint64_t t = evs[i].data.u64, tag = t & TAG_MASK, idx = t & ~TAG_MASK;
			if (tag == TAG_LISTEN)
				accept_clients();
			else if (tag == TAG_CTRL_LISTEN)
				ctrl_accept();
			else if (tag == TAG_CTRL)
				ctrl_event(idx);
			else if (tag == TAG_SIGNAL)
				stop |= signal_event();
			else if (tag == TAG_CONN)
				conn_event(idx >> 1, (int)(idx & 1), evs[i].events);
		}
		timeout = tick();
	}
	for (size_t i = 0; i < P.max_conns; i++)
		if (P.conns[i].used)
			conn_close(&P.conns[i], 0);
	free(P.conns);
	return 0;
}
