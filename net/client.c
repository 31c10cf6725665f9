/*
 * client.c -- outbound HTTP/1.1 connection pools on the event loop
 * (contract in client.h).
 *
 * Life of a call:
 *   hc_send -> serialise the request into the call -> an idle connection,
 *   or a new one (non-blocking connect), or the pool's queue -> write ->
 *   read until head + Content-Length bytes -> done(response) -> the
 *   connection goes back to idle (or closes on "Connection: close") and
 *   takes the next queued call.
 *
 * Why this shape:
 *   - Bounded everything: connections per peer, queued calls, head and body
 *     bytes.  A peer that is slow or gone costs at most max_conns sockets
 *     and max_queue small buffers, and the caller learns at once when the
 *     pool is full.
 *   - One deadline per call, swept on the loop's tick like the server's
 *     time-outs: no timer structure, and a call is failed exactly once
 *     (the call is unlinked before its callback runs, so a callback may
 *     start new calls on the same pool).
 *   - No automatic retry: a write that reached the peer may have been
 *     applied even if its answer was lost; only the caller knows whether
 *     sending it again is safe (internal writes carry idempotency keys).
 *   - Errors found while starting a call (connect refused at once) are
 *     reported from the loop, never from inside hc_send, so a caller's
 *     state is never re-entered half-built.
 *   - A finished call is kept for the next one (HC_CALL_SPARE per pool,
 *     with its request buffer up to HC_SPARE_MAX_BYTES): the router sends
 *     every forwarded request through here, and a calloc plus a buffer
 *     grown by doubling per call showed in its profile.
 *   - Pipelining, for the calls that ask for it (hc_request.pipeline) on a
 *     pool that allows it (hc_config.pipeline > 1): such a call may go on a
 *     connection that already carries calls, and the answers come back in
 *     the order sent (HTTP/1.1).  The calls one batch of the loop's ready
 *     events gives a connection are written together once the batch is
 *     handled (ev_later_arm), in one sendmsg, and their answers arrive
 *     together: strace of the router under the quote benchmark showed four
 *     syscalls per forwarded request, two of them to the shard, and the
 *     kernel's loopback work per syscall was ~76 % of its CPU.  The price,
 *     which is why a call must ask: a call waits for the ones ahead of it
 *     on its connection (a slow one holds the rest), and the calls of a
 *     connection that fails or times out all fail with it.  A call that
 *     does not ask gets a connection of its own, as before.
 */
#include "net/client.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/buf.h"

#define HC_MAX_CONNS_CAP 256
#define HC_MAX_QUEUE_CAP 65536
#define HC_READ_CHUNK 16384
#define HC_IOV_MAX 16 /* requests one sendmsg writes, at most */

struct hc_call {
	struct buf req;          /* the serialised request */
	hc_done_fn done;
	void *arg;
	uint64_t deadline_ms;
	int pipeline;            /* may share a connection (hc_request.pipeline) */
	struct hc_call *next;    /* the pool's queue, or the connection's calls */
};

enum hc_state { HC_CONNECTING, HC_IDLE, HC_BUSY };

/* A connection's calls are a list in the order they were (or will be)
 * written, so the order their answers come back: head is answered next.
 * wcall is the first call not yet written whole (NULL once all are), sent
 * the bytes of it written.  A call that did not ask to be pipelined is the
 * only call of its connection while it is there. */
struct hc_conn {
	struct ev_handle h;
	struct hc_pool *pool;
	enum hc_state state;     /* IDLE: no calls; BUSY: calls (CONNECTING: calls, no socket yet) */
	int connect_errno;       /* a connect that failed at once (reported from the loop) */
	struct hc_call *head, *tail;
	unsigned n_calls;
	struct hc_call *wcall;
	size_t sent;
	int write_later;         /* calls added during a batch: written after it (pool_flush) */
	struct buf in;
	struct hc_conn *prev, *next;
};

struct hc_pool {
	struct ev_loop *loop;
	struct hc_config cfg;
	char host[64];           /* Host header value */
	struct sockaddr_storage sa;
	socklen_t sl;
	struct hc_conn *conns;
	struct hc_call *qhead, *qtail;
	struct hc_call *spare;   /* finished calls kept for reuse (HC_CALL_SPARE) */
	unsigned n_spare;
	struct ev_later flush;   /* armed while a connection has write_later set */
	struct hc_stats st;
};

static void conn_on_event(struct ev_loop *loop, struct ev_handle *h, uint32_t events);

/* ---- calls -------------------------------------------------------------- */

/* Free a call, or keep it (and its request buffer) among p's spares. */
static void call_free(struct hc_pool *p, struct hc_call *c)
{
	if (p->n_spare < HC_CALL_SPARE && c->req.cap <= HC_SPARE_MAX_BYTES && !c->req.overflow) {
		c->next = p->spare;
		p->spare = c;
		p->n_spare++;
		return;
	}
	buf_free(&c->req);
	free(c);
}

/* A zeroed call with an empty request buffer: a spare, or a new one. */
static struct hc_call *call_alloc(struct hc_pool *p)
{
	struct hc_call *c = p->spare;
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (c)
			buf_init(&c->req, 0);
		return c;
	}
	p->spare = c->next;
	p->n_spare--;
	struct buf req = c->req;
	memset(c, 0, sizeof(*c));
	c->req = req;
	buf_reset(&c->req);
	return c;
}

/* Report a call's outcome and free it (it is already unlinked). */
static void call_finish(struct hc_pool *p, struct hc_call *c, const struct hc_response *r, const char *err)
{
	if (r)
		p->st.ok++;
	else
		p->st.failed++;
	c->done(c->arg, r, err);
	call_free(p, c);
}

/* Append c to the list head..tail (the pool's queue, a connection's calls). */
static void calls_append(struct hc_call **head, struct hc_call **tail, struct hc_call *c)
{
	c->next = NULL;
	if (*tail)
		(*tail)->next = c;
	else
		*head = c;
	*tail = c;
}

/* The pool's queue: append, take the first. */
static void queue_push(struct hc_pool *p, struct hc_call *c)
{
	calls_append(&p->qhead, &p->qtail, c);
	p->st.queued++;
}

static struct hc_call *queue_pop(struct hc_pool *p)
{
	struct hc_call *c = p->qhead;
	if (!c)
		return NULL;
	p->qhead = c->next;
	if (!p->qhead)
		p->qtail = NULL;
	c->next = NULL;
	p->st.queued--;
	return c;
}

/* ---- connections --------------------------------------------------------- */

/* Unlink and close k; its calls (already taken off it) are the caller's. */
static void conn_close(struct hc_conn *k)
{
	struct hc_pool *p = k->pool;
	assert(!k->head && !k->n_calls);
	ev_del(p->loop, &k->h);
	close(k->h.fd);
	if (k->prev)
		k->prev->next = k->next;
	else
		p->conns = k->next;
	if (k->next)
		k->next->prev = k->prev;
	p->st.open--;
	if (k->state == HC_BUSY || k->state == HC_CONNECTING)
		p->st.busy--;
	buf_free(&k->in);
	free(k);
}

static struct hc_conn *conn_open(struct hc_pool *p, struct hc_call *c);

/* Give queued calls the connections a close made room for. */
static void pool_refill(struct hc_pool *p)
{
	while (p->qhead && p->st.open < p->cfg.max_conns) {
		struct hc_call *c = queue_pop(p);
		if (!conn_open(p, c)) {
			/* no socket now: the call waits at the head for its deadline or a free connection */
			c->next = p->qhead;
			p->qhead = c;
			if (!p->qtail)
				p->qtail = c;
			p->st.queued++;
			return;
		}
	}
}

/* Take every call off k (the caller finishes them). */
static struct hc_call *conn_take_calls(struct hc_conn *k)
{
	struct hc_call *c = k->head;
	k->head = k->tail = k->wcall = NULL;
	k->n_calls = 0;
	k->sent = 0;
	return c;
}

/* Fail every call of k with err and close it. */
static void conn_fail(struct hc_conn *k, const char *err)
{
	struct hc_pool *p = k->pool;
	struct hc_call *c = conn_take_calls(k);
	conn_close(k);
	while (c) {
		struct hc_call *next = c->next;
		call_finish(p, c, NULL, err);
		c = next;
	}
	pool_refill(p);
}

static void conn_interest(struct hc_conn *k)
{
	uint32_t ev = EPOLLIN | EPOLLRDHUP;
	if (k->state == HC_CONNECTING || (k->wcall && !k->write_later))
		ev |= EPOLLOUT;
	ev_mod(k->pool->loop, &k->h, ev);
}

/* Append call c to k's calls (to be written after those already there). */
static void conn_push(struct hc_conn *k, struct hc_call *c)
{
	calls_append(&k->head, &k->tail, c);
	if (!k->wcall) {
		k->wcall = c;
		k->sent = 0;
	}
	if (k->n_calls++)
		k->pool->st.pipelined++;
}

/* A new connection (non-blocking connect) carrying call c; NULL on failure
 * to make a socket (c stays with the caller). */
static struct hc_conn *conn_open(struct hc_pool *p, struct hc_call *c)
{
	int fd = socket(p->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return NULL;
	struct hc_conn *k = calloc(1, sizeof(*k));
	if (!k) {
		close(fd);
		return NULL;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&p->sa, p->sl) && errno != EINPROGRESS)
		k->connect_errno = errno ? errno : ECONNREFUSED;
	k->pool = p;
	k->h = (struct ev_handle){.fd = fd, .fn = conn_on_event, .arg = k};
	k->state = HC_CONNECTING;
	buf_init(&k->in, HC_MAX_HEAD + (size_t)p->cfg.max_response_bytes + HC_READ_CHUNK);
	if (ev_add(p->loop, &k->h, EPOLLOUT | EPOLLIN | EPOLLRDHUP)) {
		buf_free(&k->in);
		close(fd);
		free(k);
		return NULL;
	}
	conn_push(k, c);
	if (ev_in_batch(p->loop) && p->cfg.pipeline > 1) { /* the batch's next calls join it (conn_for) */
		k->write_later = 1;
		ev_later_arm(p->loop, &p->flush);
	}
	k->next = p->conns;
	if (p->conns)
		p->conns->prev = k;
	p->conns = k;
	p->st.open++;
	p->st.busy++;
	p->st.connects++;
	return k;
}

static int conn_write(struct hc_conn *k);

/* After a batch: write what its calls gave each connection (pool_kick). */
static void pool_flush(struct ev_loop *loop, void *arg)
{
	(void)loop;
	struct hc_pool *p = arg;
	for (struct hc_conn *k = p->conns; k; k = k->next) {
		if (!k->write_later)
			continue;
		k->write_later = 0;
		if (k->state != HC_CONNECTING)
			(void)conn_write(k); /* a failure shows as the EPOLLOUT/EPOLLERR event's */
		conn_interest(k);
	}
}

/* k has calls not yet written: write them now, or -- during a batch of
 * ready events, when more may follow for the same connection -- once the
 * batch is handled (pool_flush), all in one syscall.  A request written at
 * once needs no writability event (an epoll_ctl to ask for it, a loop
 * round, another to drop it).  What does not go, or a send that fails, is
 * left to the EPOLLOUT event, whose handler fails the calls: never from
 * here, inside the caller's hc_send. */
static void conn_kick(struct hc_conn *k)
{
	struct hc_pool *p = k->pool;
	if (k->state != HC_CONNECTING && !k->write_later) {
		if (ev_in_batch(p->loop) && p->cfg.pipeline > 1) {
			k->write_later = 1;
			ev_later_arm(p->loop, &p->flush);
		} else {
			(void)conn_write(k);
		}
	}
	conn_interest(k);
}

/* Can k take pipelined call number n_calls + 1? */
static int conn_has_room(const struct hc_conn *k)
{
	return k->n_calls < k->pool->cfg.pipeline && (!k->head || k->head->pipeline);
}

/* k has no calls left: give it queued ones (as many pipelined ones as it
 * takes, or one that is not), or let it idle. */
static void conn_next(struct hc_conn *k)
{
	struct hc_pool *p = k->pool;
	assert(!k->head);
	while (p->qhead && (!k->head || (p->qhead->pipeline && conn_has_room(k))))
		conn_push(k, queue_pop(p));
	if (k->head) {
		conn_kick(k);
		return;
	}
	k->state = HC_IDLE;
	p->st.busy--;
	conn_interest(k);
}

/* ---- responses ------------------------------------------------------------ */

/* The value of header `name` in head (one line each), copied into out;
 * the number of times it appears. */
static int head_value(const char *head, size_t len, const char *name, char *out, size_t size)
{
	size_t nl = strlen(name);
	int seen = 0;
	const char *end = head + len;
	for (const char *l = memchr(head, '\n', len); l && l + 1 < end; l = memchr(l + 1, '\n', (size_t)(end - l - 1))) {
		const char *s = l + 1;
		/* the first byte, case folded, before strncasecmp: most lines differ there */
		if ((size_t)(end - s) > nl && (!nl || ((unsigned char)s[0] | 0x20) == ((unsigned char)name[0] | 0x20)) &&
		    !strncasecmp(s, name, nl) && s[nl] == ':') {
			const char *v = s + nl + 1, *e = memchr(v, '\r', (size_t)(end - v));
			while (v < end && (*v == ' ' || *v == '\t'))
				v++;
			size_t vl = e ? (size_t)(e - v) : 0;
			if (vl >= size)
				vl = size - 1;
			memcpy(out, v, vl);
			out[vl] = 0;
			seen++;
		}
	}
	return seen;
}

int hc_header(const struct hc_response *r, const char *name, char *out, size_t size)
{
	return head_value(r->head, r->head_len, name, out, size);
}

int hc_parse_next(const char *data, size_t len, uint32_t max_body, struct hc_response *r, int *close_after,
		  const char **err, size_t *used)
{
	const char *end = memmem(data, len, "\r\n\r\n", 4);
	if (!end) {
		if (len > HC_MAX_HEAD)
			return *err = "response head too large", -1;
		return 0;
	}
	size_t hl = (size_t)(end - data) + 4;
	if (hl > HC_MAX_HEAD)
		return *err = "response head too large", -1;
	/* "HTTP/1.x NNN" then a space or the line's end: three digits, read by hand */
	if (hl < 16 || memcmp(data, "HTTP/1.", 7) || data[8] != ' ' || (data[12] != ' ' && data[12] != '\r'))
		return *err = "malformed status line", -1;
	int status = 0;
	for (int i = 9; i < 12; i++) {
		if (data[i] < '0' || data[i] > '9')
			return *err = "malformed status line", -1;
		status = status * 10 + (data[i] - '0');
	}
	if (status < 100 || status > 599)
		return *err = "malformed status line", -1;
	char v[32];
	if (head_value(data, hl, "Transfer-Encoding", v, sizeof(v)))
		return *err = "unframed response (Transfer-Encoding)", -1;
	if (head_value(data, hl, "Content-Length", v, sizeof(v)) != 1)
		return *err = "response without exactly one Content-Length", -1;
	char *e;
	errno = 0;
	unsigned long long cl = strtoull(v, &e, 10);
	if (!v[0] || *e || errno || v[0] == '-')
		return *err = "malformed Content-Length", -1;
	if (cl > max_body)
		return *err = "response larger than max_response_bytes", -1;
	if (len < hl + cl)
		return 0;
	*close_after = head_value(data, hl, "Connection", v, sizeof(v)) && !strcasecmp(v, "close");
	*r = (struct hc_response){.status = status, .head = data, .head_len = hl, .body = data + hl,
				  .body_len = (size_t)cl};
	*used = hl + (size_t)cl;
	return 1;
}

int hc_parse_response(const char *data, size_t len, uint32_t max_body, struct hc_response *r, int *close_after,
		      const char **err)
{
	size_t used = 0;
	int rc = hc_parse_next(data, len, max_body, r, close_after, err, &used);
	if (rc == 1 && used < len)
		return *err = "bytes after the response", -1;
	return rc;
}

/* ---- socket events ------------------------------------------------------------ */

/* Write k's calls from wcall on, up to HC_IOV_MAX requests a syscall,
 * until done or the socket is full.  0, or -1 when the peer is gone. */
static int conn_write(struct hc_conn *k)
{
	while (k->wcall) {
		struct iovec iov[HC_IOV_MAX];
		int n = 0;
		size_t off = k->sent;
		for (struct hc_call *c = k->wcall; c && n < HC_IOV_MAX; c = c->next, off = 0)
			iov[n++] = (struct iovec){.iov_base = c->req.data + off, .iov_len = c->req.len - off};
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
		ssize_t w = sendmsg(k->h.fd, &mh, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -1;
		}
		size_t left = (size_t)w;
		while (left && k->wcall) {
			size_t rest = k->wcall->req.len - k->sent;
			if (left < rest) {
				k->sent += left;
				break;
			}
			left -= rest;
			k->wcall = k->wcall->next;
			k->sent = 0;
		}
	}
	return 0;
}

/* Read what is there: 1 at EOF, 0 otherwise, -1 on an error or overflow. */
static int conn_read(struct hc_conn *k)
{
	/* one answer at its largest: with pipelined calls the buffer may hold
	 * the start of the next ones too, but the first is whole (or refused)
	 * once this is full, and is consumed before more is read */
	size_t cap = HC_MAX_HEAD + (size_t)k->pool->cfg.max_response_bytes + 1;
	for (;;) {
		if (k->in.len >= cap)
			return 0; /* hc_parse_next refuses it */
		size_t want = cap - k->in.len < HC_READ_CHUNK ? cap - k->in.len : HC_READ_CHUNK;
		if (buf_reserve(&k->in, want))
			return -1;
		ssize_t n = recv(k->h.fd, k->in.data + k->in.len, want, 0);
		if (n == 0)
			return 1;
		if (n < 0)
			return errno == EINTR ? 0 : (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
		k->in.len += (size_t)n;
		/* a short read drained the socket (a stream socket hands out
		 * what it holds): stop there, as the server's conn_read does,
		 * rather than ask again for the EAGAIN -- that was one recv in
		 * three of the router's, one per forwarded request */
		if ((size_t)n < want)
			return 0;
	}
}

/* Hand out the answers k->in holds, oldest call first.  Returns 1 when k
 * is still open (the answers' bytes consumed), 0 when it was closed (a
 * malformed answer or "Connection: close"). */
static int conn_answers(struct hc_conn *k)
{
	struct hc_pool *p = k->pool;
	size_t pos = 0;
	while (k->head) {
		struct hc_response r;
		int close_after = 0;
		const char *err = NULL;
		size_t used = 0;
		int pr = hc_parse_next(k->in.data + pos, k->in.len - pos, p->cfg.max_response_bytes, &r, &close_after, &err,
				     &used);
		if (pr == 1 && !k->head->next && pos + used < k->in.len)
			pr = -1, err = "bytes after the response"; /* nothing asked for them */
		if (pr == 0)
			break;
		if (pr < 0) {
			conn_fail(k, err);
			return 0;
		}
		struct hc_call *c = k->head;
		if (c == k->wcall) /* answered before it was sent whole: the rest must not go */
			close_after = 1;
		k->head = c->next;
		if (!k->head)
			k->tail = NULL;
		k->n_calls--;
		pos += used;
		/* the response lives in k->in: report before the bytes are consumed;
		 * the callback may start calls, on this pool too (hc_send never
		 * reads or closes a connection) */
		call_finish(p, c, &r, NULL);
		if (close_after) {
			conn_fail(k, "peer closed the connection before the response");
			return 0;
		}
	}
	buf_consume(&k->in, pos);
	return 1;
}

static void conn_on_event(struct ev_loop *loop, struct ev_handle *h, uint32_t events)
{
	(void)loop;
	struct hc_conn *k = h->arg;
	if (k->state == HC_CONNECTING) {
		int e = k->connect_errno;
		socklen_t el = sizeof(e);
		if (!e && (events & (EPOLLERR | EPOLLHUP)))
			getsockopt(h->fd, SOL_SOCKET, SO_ERROR, &e, &el);
		if (!e && !(events & EPOLLOUT))
			return;
		if (e || (events & (EPOLLERR | EPOLLHUP))) {
			char msg[96];
			snprintf(msg, sizeof(msg), "connect failed: %s", strerror(e ? e : ECONNREFUSED));
			conn_fail(k, msg);
			return;
		}
		k->state = HC_BUSY; /* still counted busy */
	}
	if (k->state == HC_IDLE) {
		/* an idle connection has nothing to say: the peer closed it */
		struct hc_pool *p = k->pool;
		conn_close(k);
		pool_refill(p);
		return;
	}
	if ((events & EPOLLOUT) && conn_write(k)) {
		conn_fail(k, "peer closed the connection while the request was sent");
		return;
	}
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
		int eof = conn_read(k);
		if (eof < 0) {
			conn_fail(k, "read failed");
			return;
		}
		if (!conn_answers(k))
			return;
		if (eof) {
			if (k->head) {
				conn_fail(k, "peer closed the connection before the response");
			} else {
				struct hc_pool *p = k->pool;
				conn_close(k);
				pool_refill(p);
			}
			return;
		}
		if (!k->head) {
			conn_next(k);
			return;
		}
	}
	conn_interest(k);
}

/* ---- public ------------------------------------------------------------------------ */

static int parse_addr(const char *addr, struct sockaddr_storage *sa, socklen_t *sl)
{
	const char *colon = strrchr(addr, ':');
	if (!colon || colon == addr)
		return -1;
	char *e;
	long port = strtol(colon + 1, &e, 10);
	if (*e || port < 1 || port > 65535)
		return -1;
	char host[64];
	size_t hl = (size_t)(colon - addr);
	if (addr[0] == '[') {
		if (hl < 3 || addr[hl - 1] != ']' || hl - 2 >= sizeof(host))
			return -1;
		memcpy(host, addr + 1, hl - 2);
		host[hl - 2] = 0;
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;
		memset(s6, 0, sizeof(*s6));
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		*sl = sizeof(*s6);
		return inet_pton(AF_INET6, host, &s6->sin6_addr) == 1 ? 0 : -1;
	}
	if (hl >= sizeof(host))
		return -1;
	memcpy(host, addr, hl);
	host[hl] = 0;
	struct sockaddr_in *s4 = (struct sockaddr_in *)sa;
	memset(s4, 0, sizeof(*s4));
	s4->sin_family = AF_INET;
	s4->sin_port = htons((uint16_t)port);
	*sl = sizeof(*s4);
	return inet_pton(AF_INET, host, &s4->sin_addr) == 1 ? 0 : -1;
}

struct hc_pool *hc_pool_new(struct ev_loop *loop, const struct hc_config *cfg, char *err, size_t errlen)
{
	if (!cfg->addr || cfg->max_conns < 1 || cfg->max_conns > HC_MAX_CONNS_CAP || cfg->max_queue > HC_MAX_QUEUE_CAP ||
	    cfg->max_response_bytes == 0 || cfg->pipeline > HC_PIPELINE_CAP) {
		snprintf(err, errlen,
			 "client pool: max_conns 1..%d, max_queue 0..%d, max_response_bytes > 0, pipeline 0..%u",
			 HC_MAX_CONNS_CAP, HC_MAX_QUEUE_CAP, HC_PIPELINE_CAP);
		return NULL;
	}
	struct hc_pool *p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (strlen(cfg->addr) >= sizeof(p->host) || parse_addr(cfg->addr, &p->sa, &p->sl)) {
		snprintf(err, errlen, "client pool: \"%s\" is not a numeric IPv4:port or [IPv6]:port", cfg->addr);
		free(p);
		return NULL;
	}
	p->loop = loop;
	p->cfg = *cfg;
	if (p->cfg.pipeline < 1)
		p->cfg.pipeline = 1;
	snprintf(p->host, sizeof(p->host), "%s", cfg->addr);
	p->cfg.addr = p->host;
	p->flush = (struct ev_later){.fn = pool_flush, .arg = p};
	return p;
}

/* The request bytes: request line, Host, Content-Length, extra headers, body. */
static struct hc_call *call_new(struct hc_pool *p, const struct hc_request *rq, hc_done_fn done, void *arg)
{
	if (!rq->method || !rq->path || rq->path[0] != '/' || strpbrk(rq->path, " \r\n") ||
	    strpbrk(rq->method, " \r\n") || rq->timeout_ms == 0 || (rq->body_len && !rq->body))
		return NULL;
	struct hc_call *c = call_alloc(p);
	if (!c)
		return NULL;
	/* the whole request's size at once, not by doubling; appended, not
	 * printed: buf_printf was ~1,900 instructions a call */
	size_t ml = strlen(rq->method), pl = strlen(rq->path), hl = rq->headers ? strlen(rq->headers) : 0;
	(void)buf_reserve(&c->req, ml + pl + strlen(p->host) + hl + rq->body_len + 64);
	(void)(buf_append(&c->req, rq->method, ml) || buf_putc(&c->req, ' ') || buf_append(&c->req, rq->path, pl) ||
	       BUF_LIT(&c->req, " HTTP/1.1\r\nHost: ") || buf_puts(&c->req, p->host) ||
	       BUF_LIT(&c->req, "\r\nContent-Length: ") || buf_put_dec(&c->req, (int64_t)rq->body_len) ||
	       BUF_LIT(&c->req, "\r\n"));
	if (hl)
		buf_append(&c->req, rq->headers, hl);
	buf_append(&c->req, "\r\n", 2);
	if (rq->body_len)
		buf_append(&c->req, rq->body, rq->body_len);
	if (c->req.overflow) {
		call_free(p, c);
		return NULL;
	}
	c->done = done;
	c->arg = arg;
	c->deadline_ms = ev_now_ms(p->loop) + rq->timeout_ms;
	/* never a HEAD: its answer announces a body it does not carry, so the
	 * answers behind it could not be told apart */
	c->pipeline = rq->pipeline && p->cfg.pipeline > 1 && strcmp(rq->method, "HEAD");
	return c;
}

/* The connection for a new call: an idle one, else NULL with *n_open the
 * connections open and, for a pipelined call, *share the one to add it to
 * when no new connection can be opened (the one with the fewest calls) --
 * or, first of all, one that a call of the batch being handled has
 * already been given (it is written once the batch is done: the calls of
 * a batch share one syscall). */
static struct hc_conn *conn_for(struct hc_pool *p, int pipeline, uint32_t *n_open, struct hc_conn **share)
{
	struct hc_conn *idle = NULL;
	uint32_t n = 0;
	*share = NULL;
	for (struct hc_conn *k = p->conns; k; k = k->next, n++) {
		if (k->state == HC_IDLE) {
			if (!idle)
				idle = k;
			continue;
		}
		if (!pipeline || !conn_has_room(k))
			continue;
		if (k->write_later) {
			*share = k;
			return NULL;
		}
		if (!*share || k->n_calls < (*share)->n_calls)
			*share = k;
	}
	*n_open = n;
	return idle;
}

int hc_send(struct hc_pool *p, const struct hc_request *rq, hc_done_fn done, void *arg)
{
	struct hc_call *c = call_new(p, rq, done, arg);
	if (!c)
		return -1;
	uint32_t n = 0;
	struct hc_conn *share, *idle = conn_for(p, c->pipeline, &n, &share); /* c->pipeline: call_new's verdict */
	if (!idle && !share && n >= p->cfg.max_conns && p->st.queued >= p->cfg.max_queue) {
		call_free(p, c);
		p->st.refused_full++;
		return -1;
	}
	p->st.calls++;
	if (share && share->write_later) { /* the batch's connection: written once the batch is done */
		conn_push(share, c);
		return 0;
	}
	if (idle) {
		idle->state = HC_BUSY;
		p->st.busy++;
		conn_push(idle, c);
		conn_kick(idle);
		return 0;
	}
	if (n < p->cfg.max_conns && conn_open(p, c))
		return 0;
	if (share) {
		conn_push(share, c);
		conn_kick(share);
		return 0;
	}
	if (p->st.queued >= p->cfg.max_queue) { /* no socket could be made and no room to wait */
		p->st.calls--;
		call_free(p, c);
		p->st.refused_full++;
		return -1;
	}
	queue_push(p, c);
	return 0;
}

/* Deadlines: a call past its own fails "timed out"; the calls behind it on
 * its connection fail with it (the connection must close: their answers
 * would come after the one that is late). */
void hc_tick(struct hc_pool *p)
{
	uint64_t now = ev_now_ms(p->loop);
	for (struct hc_conn *k = p->conns, *next; k; k = next) {
		next = k->next;
		unsigned late = 0;
		for (struct hc_call *c = k->head; c; c = c->next)
			late += now >= c->deadline_ms;
		if (!late)
			continue;
		p->st.timeouts += late;
		/* fail the late ones as timed out, the rest as its companions */
		struct hc_call *c = conn_take_calls(k);
		conn_close(k);
		while (c) {
			struct hc_call *nx = c->next;
			call_finish(p, c, NULL,
				    now >= c->deadline_ms ? "timed out"
							  : "its connection closed: a call ahead of it timed out");
			c = nx;
		}
		pool_refill(p);
		next = p->conns; /* a callback may have changed the list: start over */
	}
	for (struct hc_call **pp = &p->qhead; *pp;) {
		struct hc_call *c = *pp;
		if (now < c->deadline_ms) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		if (p->qtail == c)
			p->qtail = NULL;
		p->st.queued--;
		p->st.timeouts++;
		call_finish(p, c, NULL, "timed out waiting for a connection");
		pp = &p->qhead; /* the same: start over */
	}
	if (!p->qhead)
		p->qtail = NULL;
	else
		for (struct hc_call *c = p->qhead; c; c = c->next)
			p->qtail = c;
}

void hc_stats(const struct hc_pool *p, struct hc_stats *st)
{
	*st = p->st;
	st->spare = p->n_spare;
}

void hc_pool_free(struct hc_pool *p)
{
	if (!p)
		return;
	ev_later_cancel(p->loop, &p->flush);
	while (p->conns)
		conn_fail(p->conns, "pool closed");
	while (p->qhead) {
		struct hc_call *c = p->qhead;
		p->qhead = c->next;
		p->st.queued--;
		call_finish(p, c, NULL, "pool closed");
	}
	while (p->spare) {
		struct hc_call *c = p->spare;
		p->spare = c->next;
		buf_free(&c->req);
		free(c);
	}
	free(p);
}
