/*
 * server.c -- HTTP/1.1 connections on the epoll loop (contract in server.h).
 *
 * Life of a connection:
 *   accept -> read into `in` -> http_parse_request (stateless, re-run after
 *   every read) -> handler -> response bytes appended to `out` with a mark
 *   (end offset, lsn) -> released when durable -> written -> next request.
 *
 * Why this shape:
 *   - Pipelining falls out of it: requests are handled in arrival order and
 *     their responses queue behind each other in `out`.
 *   - Durability gating costs nothing per byte: a mark is two integers, and
 *     because LSNs on a connection never decrease the releasable region is
 *     always a prefix of `out`.
 *   - Back-pressure is explicit: a connection stops being read while it has
 *     max_inflight held responses or more than max_out_bytes queued, so a
 *     client that never reads cannot make the server buffer without bound.
 *   - Time-outs are swept once per tick over a list of connections, with
 *     three clocks: head arrival, whole-request arrival, and idle/no progress.
 *     A slow client therefore holds a connection for at most one time-out.
 *     The request clock starts at accept for the first request (a silent
 *     socket is closed after the head time-out, not the idle one; a TLS
 *     handshake runs on the same clock) and at the first byte for later
 *     requests on a keep-alive connection.
 *   - A full table evicts the connection idle for longest before refusing:
 *     a silent socket costs the attacker a slot only until someone needs
 *     it.  A connection with part of a request in, or a response queued, is
 *     never evicted: it is bounded by its time-outs and by the per-address
 *     cap, which is counted in a small open-addressing table (linear
 *     probing, backward-shift deletion, at most half full) so that an
 *     accept costs O(1) whatever max_conns is.
 *   - End of input (recv() == 0, a TLS close_notify) is not the end of the
 *     connection: a client that half-closes after sending (nc -N, proxies)
 *     must still read the answers to what it sent, durable writes
 *     included.  So EOF stops reading, drops an incomplete trailing
 *     request, lets every complete request already received be answered,
 *     and closes once the last answer is written.  EPOLLHUP/EPOLLERR (both
 *     directions gone) close at once: nobody can read an answer.
 *   - Refusals from the accept path (table full, per-address cap) go
 *     through the same response writer as every other answer (Date,
 *     X-Request-Id, problem+json, Retry-After, Connection: close) and the
 *     same done callback (metrics, access log).  On a TLS listener a
 *     refused socket is closed without a word: answering would need a
 *     handshake, the very cost the refusal avoids.
 *   - TLS (net/tls.h) is a per-connection pointer, NULL on a plain
 *     listener: reads and writes go through conn_recv/conn_send, which
 *     are a recv()/send() when it is NULL.  With TLS, bytes can wait inside
 *     the library with no socket event to announce them, so progress
 *     re-reads while tls_pending() says so.
 *
 * Buffers are owned by the connection and reused across requests: the
 * steady state (keep-alive request/response) allocates nothing.
 */
#include "net/server.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "net/hex.h"
#include "net/problem.h"
#include "net/tls.h"

#define SRV_MAX_INFLIGHT_CAP 256
#define SRV_READ_CHUNK 16384
#define SRV_IPT_MIN 16          /* smallest per-address table (slots, power of two) */
#define SRV_REFUSE_RETRY_AFTER "1" /* seconds, on 503/429 from the accept path */

/* Outcome of one socket read or write (plain or TLS). */
enum conn_io { CIO_OK, CIO_AGAIN, CIO_EOF, CIO_ERR };

/* One client address and how many connections it holds (addr all-zero =
 * empty slot; IPv4 is stored as ::ffff:a.b.c.d). */
struct ip_slot {
	unsigned char addr[16];
	uint32_t n;
};

struct srv_mark {
	size_t end;     /* offset in out.data just past this response */
	uint64_t lsn;
	uint64_t start_us;
};

struct conn {
	struct ev_handle h;
	struct srv *srv;
	struct conn *prev, *next;
	struct buf in;
	struct buf out;
	size_t sent;            /* bytes of out already written */
	size_t sendable;        /* bytes of out released (durable) */
	struct srv_mark marks[SRV_MAX_INFLIGHT_CAP];
	unsigned mark_head, mark_n;
	uint64_t req_clock_ms;  /* when the wait for the current request began (accept for
				   the first one, its first byte for later ones); 0 = none */
	uint64_t last_progress_ms;
	int close_after;        /* close once everything queued is written */
	int read_eof;           /* the peer sent EOF: read no more, answer, then close */
	int in_blocked;         /* `in` holds bytes not processed because of a bound */
	struct tls_conn *tls;   /* NULL on a plain connection */
	int tls_hs_started;     /* the handshake has seen bytes (not idle any more) */
	int data_waiting;       /* bytes were waiting at accept, before the first read */
	int tls_hs_want_write;  /* the handshake waits for writability */
	int tls_rd_want_write;  /* a TLS read needs the socket writable */
	int tls_wr_want_read;   /* a TLS write needs the socket readable */
	unsigned char addr[16]; /* client address, key of the per-address table */
	char peer[64];
	struct srv_deferred *pending; /* a request the application answers later; none read meanwhile */
	int stirred;            /* readable while pending: EPOLLIN dropped until the answer (conn_update_interest) */
	struct conn *flush_next; /* on srv.flush_head: answers to send after the batch */
	int flush_queued;
};

/* A request whose answer the application gives later (srv_defer): what
 * the response needs of the request once the parse buffer is gone. */
struct srv_deferred {
	struct conn *c;         /* NULL once the connection closed: the answer is dropped */
	char request_id[24];
	uint64_t start_us;
	int head_only;          /* a HEAD: headers only */
	int close;              /* the request asked to close after its answer */
};

struct srv {
	struct ev_loop *loop;
	struct srv_config cfg;
	struct ev_handle listen_h;
	int port;
	struct conn *conns;     /* doubly linked list of open connections */
	uint32_t n_conns;
	int draining;
	uint64_t drain_deadline_ms;
	uint64_t next_req_id;
	uint64_t run_tag;
	struct srv_response resp; /* reused for every request */
	struct srv_stats st;
	struct ip_slot *ipt;    /* per-address connection counts */
	size_t ipt_cap;         /* slots, power of two, >= 2 * max_conns */
	struct tls_ctx *tls;    /* NULL = plain HTTP */
	char tls_cert[512], tls_key[512];
	int loopback;           /* the listener is bound to a loopback address */
	struct srv_deferred *defer_now; /* set by srv_defer during the handler call */
	int in_handler;
	struct conn *flush_head; /* connections with answers to send after the batch */
};

void srv_limits_default(struct srv_limits *l)
{
	memset(l, 0, sizeof(*l));
	http_limits_default(&l->http);
	l->max_conns = 1024;
	l->max_conns_per_ip = 256;
	l->header_timeout_ms = 10000;
	l->body_timeout_ms = 30000;
	l->idle_timeout_ms = 60000;
	l->max_inflight = 64;
	l->max_out_bytes = 8u << 20;
	l->drain_timeout_ms = 10000;
}

static void conn_close(struct conn *c);
static void conn_on_event(struct ev_loop *loop, struct ev_handle *h, uint32_t events);
static size_t conn_process(struct conn *c);
static void conn_update_interest(struct conn *c);
static void conn_progress(struct conn *c);

/* ---- per-address counts -------------------------------------------------- */

/* The client address as a 16-byte key (IPv4 mapped into IPv6). */
static void addr_key(const struct sockaddr_storage *sa, unsigned char out[16])
{
	memset(out, 0, 16);
	if (sa->ss_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	} else if (sa->ss_family == AF_INET) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	}
}

static size_t ipt_hash(const unsigned char a[16], size_t cap)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (int i = 0; i < 16; i++)
		h = (h ^ a[i]) * 0x100000001b3ull;
	return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static int ipt_empty(const struct ip_slot *e) { return e->n == 0; }

/* Slot holding `a`, or the empty slot where it would go. */
static struct ip_slot *ipt_find(struct srv *s, const unsigned char a[16])
{
	size_t i = ipt_hash(a, s->ipt_cap);
	while (!ipt_empty(&s->ipt[i]) && memcmp(s->ipt[i].addr, a, 16))
		i = (i + 1) & (s->ipt_cap - 1);
	return &s->ipt[i];
}

/* Connections open from `a`. */
static uint32_t ipt_count(struct srv *s, const unsigned char a[16]) { return ipt_find(s, a)->n; }

static void ipt_inc(struct srv *s, const unsigned char a[16])
{
	struct ip_slot *e = ipt_find(s, a);
	if (ipt_empty(e))
		memcpy(e->addr, a, 16);
	e->n++;
}

/* Decrement; an entry reaching 0 is removed by backward-shift deletion so
 * that probe chains stay unbroken without tombstones. */
static void ipt_dec(struct srv *s, const unsigned char a[16])
{
	struct ip_slot *e = ipt_find(s, a);
	if (ipt_empty(e) || --e->n)
		return;
	size_t mask = s->ipt_cap - 1, i = (size_t)(e - s->ipt), j = i;
	for (;;) {
		j = (j + 1) & mask;
		if (ipt_empty(&s->ipt[j]))
			break;
		size_t home = ipt_hash(s->ipt[j].addr, s->ipt_cap);
		/* move j back to i unless its home lies cyclically in (i, j] */
		int stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
		if (stays)
			continue;
		s->ipt[i] = s->ipt[j];
		i = j;
	}
	memset(&s->ipt[i], 0, sizeof(s->ipt[i]));
}

/* ---- socket I/O (plain or TLS) -------------------------------------------- */

/* Read up to n bytes into buf; *got = bytes read on CIO_OK. */
static enum conn_io conn_recv(struct conn *c, char *buf, size_t n, size_t *got)
{
	*got = 0;
	if (!c->tls) {
		for (;;) {
			ssize_t r = recv(c->h.fd, buf, n, 0);
			if (r > 0) {
				*got = (size_t)r;
				return CIO_OK;
			}
			if (r == 0)
				return CIO_EOF;
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? CIO_AGAIN : CIO_ERR;
		}
	}
	c->tls_rd_want_write = 0;
	switch (tls_read(c->tls, buf, n, got)) {
	case TLS_IO_OK:
		return CIO_OK;
	case TLS_IO_WANT_READ:
		return CIO_AGAIN;
	case TLS_IO_WANT_WRITE:
		c->tls_rd_want_write = 1;
		return CIO_AGAIN;
	case TLS_IO_EOF:
		return CIO_EOF;
	default:
		return CIO_ERR;
	}
}

/* Write up to n (> 0) bytes from buf; *put = bytes written on CIO_OK. */
static enum conn_io conn_send(struct conn *c, const char *buf, size_t n, size_t *put)
{
	*put = 0;
	if (!c->tls) {
		for (;;) {
			ssize_t r = send(c->h.fd, buf, n, MSG_NOSIGNAL);
			if (r >= 0) {
				*put = (size_t)r;
				return CIO_OK;
			}
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? CIO_AGAIN : CIO_ERR;
		}
	}
	c->tls_wr_want_read = 0;
	switch (tls_write(c->tls, buf, n, put)) {
	case TLS_IO_OK:
		return CIO_OK;
	case TLS_IO_WANT_WRITE:
		return CIO_AGAIN;
	case TLS_IO_WANT_READ:
		c->tls_wr_want_read = 1;
		return CIO_AGAIN;
	default:
		return CIO_ERR;
	}
}

/* ---- output ------------------------------------------------------------ */

/* Date header value, cached per second (RFC 9110 requires Date). */
static const char *http_date(void)
{
	static __thread time_t cached_at;
	static __thread char cached[40];
	time_t now = time(NULL);
	if (now != cached_at) {
		struct tm tm;
		gmtime_r(&now, &tm);
		strftime(cached, sizeof(cached), "%a, %d %b %Y %H:%M:%S GMT", &tm);
		cached_at = now;
	}
	return cached;
}

/* Serialise a response onto c->out and add its durability mark. */
static void conn_queue_response(struct conn *c, const struct srv_request *rq,
				const struct srv_response *rs, int head_only)
{
	struct buf *o = &c->out;
	int keep = !(rs->close || c->close_after || c->srv->draining);
	/* piece by piece, not buf_printf: ~1,000 instructions of format
	 * parsing per response (issue 15) */
	BUF_LIT(o, "HTTP/1.1 ");
	buf_put_dec(o, rs->status);
	buf_putc(o, ' ');
	buf_puts(o, http_reason(rs->status));
	BUF_LIT(o, "\r\nDate: ");
	buf_puts(o, http_date());
	BUF_LIT(o, "\r\nContent-Type: ");
	buf_puts(o, rs->content_type ? rs->content_type : "application/json");
	BUF_LIT(o, "\r\nContent-Length: ");
	buf_put_dec(o, (int64_t)rs->body.len);
	BUF_LIT(o, "\r\nX-Request-Id: ");
	buf_puts(o, rq->request_id);
	BUF_LIT(o, "\r\n");
	if (!keep)
		BUF_LIT(o, "Connection: close\r\n");
	if (rs->headers.len)
		buf_append(o, rs->headers.data, rs->headers.len);
	BUF_LIT(o, "\r\n");
	if (!head_only)
		buf_append(o, rs->body.data, rs->body.len);
	if (!keep)
		c->close_after = 1;
	unsigned i = (c->mark_head + c->mark_n) % SRV_MAX_INFLIGHT_CAP;
	c->marks[i] = (struct srv_mark){.end = o->len, .lsn = rs->lsn, .start_us = rq->start_us};
	c->mark_n++;
}

/* Move the release point past every mark whose LSN is durable, reporting
 * each released response to the done callback. */
static void conn_release(struct conn *c, uint64_t durable)
{
	while (c->mark_n) {
		struct srv_mark *m = &c->marks[c->mark_head];
		if (m->lsn > durable)
			break;
		c->sendable = m->end;
		c->mark_head = (c->mark_head + 1) % SRV_MAX_INFLIGHT_CAP;
		c->mark_n--;
	}
}

/* Write the released prefix; *wrote = bytes written.  Returns -1 if the
 * connection died. */
static int conn_flush(struct conn *c, size_t *wrote)
{
	*wrote = 0;
	while (c->sent < c->sendable) {
		size_t n;
		enum conn_io r = conn_send(c, c->out.data + c->sent, c->sendable - c->sent, &n);
		if (r == CIO_AGAIN)
			break;
		if (r != CIO_OK)
			return -1;
		c->sent += n;
		*wrote += n;
		c->last_progress_ms = ev_now_ms(c->srv->loop);
	}
	if (c->sent == c->out.len) {
		/* Everything written: rewind (marks are all released). */
		c->out.len = c->sent = c->sendable = 0;
	} else if (c->sent > (1u << 16) && c->sent > c->out.len / 2) {
		size_t k = c->sent;
		buf_consume(&c->out, k);
		c->sent = 0;
		c->sendable -= k;
		for (unsigned j = 0; j < c->mark_n; j++)
			c->marks[(c->mark_head + j) % SRV_MAX_INFLIGHT_CAP].end -= k;
	}
	return 0;
}

static uint64_t srv_durable(const struct srv *s)
{
	return s->cfg.durable_lsn ? s->cfg.durable_lsn(s->cfg.app) : UINT64_MAX;
}

/* ---- requests ---------------------------------------------------------- */

static void srv_make_request_id(struct srv *s, struct srv_request *rq)
{
	uint64_t v = s->run_tag ^ (++s->next_req_id * 0x9e3779b97f4a7c15ull);
	/* "req_" and v as 16 lower-case hex digits, big end first: what
	 * "req_%016llx" wrote, without printf's ~1,000 instructions */
	_Static_assert(sizeof(rq->request_id) >= 4 + 16 + 1, "request id room");
	uint8_t be[8];
	for (int i = 0; i < 8; i++)
		be[i] = (uint8_t)(v >> (56 - 8 * i));
	memcpy(rq->request_id, "req_", 4);
	hex_encode(be, sizeof(be), rq->request_id + 4);
}

static void resp_reset(struct srv_response *rs)
{
	rs->status = 200;
	rs->content_type = NULL;
	buf_reset(&rs->headers);
	buf_reset(&rs->body);
	rs->lsn = 0;
	rs->close = 0;
	rs->route = NULL;
}

/* Queue a problem+json answer that closes the connection (no request was
 * handed to the application): code, detail msg, and a Retry-After header
 * when retry_after is not NULL.  Reported to the done callback. */
static void conn_answer_problem(struct conn *c, int status, const char *code, const char *msg,
				const char *retry_after)
{
	struct srv *s = c->srv;
	struct srv_request rq = {.start_us = ev_clock_us(), .peer = c->peer};
	srv_make_request_id(s, &rq);
	struct srv_response *rs = &s->resp;
	resp_reset(rs);
	rs->status = status;
	rs->content_type = PROBLEM_CONTENT_TYPE;
	rs->close = 1;
	rs->route = "-";
	if (retry_after)
		buf_printf(&rs->headers, "Retry-After: %s\r\n", retry_after);
	problem_write(&rs->body, status, code, http_reason(status), msg);
	conn_queue_response(c, &rq, rs, 0);
	conn_release(c, UINT64_MAX);
	c->in.len = 0;
	c->req_clock_ms = 0;
	if (s->cfg.done)
		s->cfg.done(s->cfg.app, &rq, rs, 0);
}

/* Answer a request the parser rejected (or a time-out), then close. */
static void conn_reject(struct conn *c, int status, const char *msg)
{
	const char *code = status == 413 ? "payload_too_large"
			   : status == 431 ? "headers_too_large"
			   : status == 414 ? "uri_too_long"
			   : status == 411 ? "length_required"
			   : status == 408 ? "request_timeout"
			   : status == 503 ? "service_unavailable"
			   : status == 505 ? "http_version_not_supported"
					   : "bad_request";
	c->srv->st.parse_errors += status != 408 && status != 503;
	conn_answer_problem(c, status, code, msg, NULL);
}

/* Room for another request within the in-flight and output bounds, a
 * deferred request in hand aside (conn_update_interest's lazy EPOLLIN). */
static int conn_room_but_pending(const struct conn *c)
{
	const struct srv_limits *l = &c->srv->cfg.lim;
	return !c->close_after && c->mark_n < l->max_inflight && c->out.len < l->max_out_bytes;
}

/* May the connection take another request (none deferred, the in-flight
 * and output bounds)? */
static int conn_has_room(const struct conn *c) { return !c->pending && conn_room_but_pending(c); }

/* Handle every complete request in `in`, within the in-flight bound.
 * Returns the bytes of `in` consumed; sets in_blocked when a bound stopped
 * it with bytes left. */
static size_t conn_process(struct conn *c)
{
	struct srv *s = c->srv;
	size_t off = 0;
	while (conn_has_room(c) && off < c->in.len) {
		struct http_request req;
		struct http_error herr;
		int r = http_parse_request(c->in.data + off, c->in.len - off, &s->cfg.lim.http, &req, &herr);
		if (r == HTTP_PARSE_INCOMPLETE)
			break;
		if (r == HTTP_PARSE_OK && http_check_host(&req, &herr) != HTTP_PARSE_OK)
			r = HTTP_PARSE_ERROR;
		if (r == HTTP_PARSE_ERROR) {
			size_t used = c->in.len;
			conn_reject(c, herr.status, herr.msg);
			c->in_blocked = 0;
			return used;
		}
		struct srv_request rq = {.http = &req, .start_us = ev_clock_us(), .peer = c->peer};
		srv_make_request_id(s, &rq);
		struct srv_response *rs = &s->resp;
		resp_reset(rs);
		s->in_handler = 1;
		s->cfg.handler(s->cfg.app, &rq, rs);
		s->in_handler = 0;
		if (s->defer_now) {
			/* answered later (srv_complete): read nothing more
			 * on this connection until then, so answers stay in order */
			struct srv_deferred *d = s->defer_now;
			s->defer_now = NULL;
			d->c = c;
			d->head_only = req.method == HTTP_M_HEAD;
			d->close = !req.keep_alive;
			c->pending = d;
			s->st.requests++;
			off += req.total_len;
			break;
		}
		if (!req.keep_alive)
			rs->close = 1;
		conn_queue_response(c, &rq, rs, req.method == HTTP_M_HEAD);
		s->st.requests++;
		if (s->cfg.done) {
			/* latency is reported at release; keep it simple: report now
			 * with handler time, and durability wait shows in WAL metrics */
			s->cfg.done(s->cfg.app, &rq, rs, ev_clock_us() - rq.start_us);
		}
		off += req.total_len;
	}
	if (off) {
		buf_consume(&c->in, off);
		c->req_clock_ms = c->in.len ? ev_now_ms(s->loop) : 0;
	}
	c->in_blocked = c->in.len > 0 && !c->close_after && !conn_has_room(c);
	return off;
}

/* ---- socket events ----------------------------------------------------- */

/* Read what the socket (or the TLS layer) holds, up to the request bound.
 * *got = bytes read.  Sets read_eof at end of input.  -1 on an error. */
static int conn_read(struct conn *c, size_t *got)
{
	struct srv *s = c->srv;
	size_t cap = (size_t)s->cfg.lim.http.max_header_bytes + s->cfg.lim.http.max_body + 1;
	*got = 0;
	while (!c->read_eof) {
		if (c->in.len >= cap)
			return 0; /* the parser has rejected or will reject this */
		size_t want = cap - c->in.len < SRV_READ_CHUNK ? cap - c->in.len : SRV_READ_CHUNK;
		if (buf_reserve(&c->in, want))
			return -1;
		size_t n;
		enum conn_io r = conn_recv(c, c->in.data + c->in.len, want, &n);
		if (r == CIO_AGAIN)
			return 0;
		if (r == CIO_EOF) {
			c->read_eof = 1;
			return 0;
		}
		if (r != CIO_OK)
			return -1;
		if (c->in.len == 0 && !c->req_clock_ms)
			c->req_clock_ms = ev_now_ms(s->loop);
		c->in.len += n;
		*got += n;
		c->last_progress_ms = ev_now_ms(s->loop);
		/* a short plain read drained the socket; TLS hands out one record
		 * at a time, so it reads on until the layer says "would block" */
		if (!c->tls && n < want)
			return 0;
	}
	return 0;
}

static void conn_update_interest(struct conn *c)
{
	uint32_t ev = 0;
	if (c->tls && !tls_handshake_done(c->tls)) {
		ev = c->tls_hs_want_write ? EPOLLOUT : EPOLLIN;
	} else {
		/* EPOLLRDHUP only while reading: after EOF it would fire forever */
		if (!c->pending)
			c->stirred = 0;
		if (!c->read_eof && conn_has_room(c))
			ev |= EPOLLIN | EPOLLRDHUP;
		else if (!c->tls && !c->read_eof && c->pending && !c->stirred && conn_room_but_pending(c))
			/* Lazily: a deferred request (the router's forward) reads
			 * nothing until its answer, but a client that waits for the
			 * answer sends nothing either, so keep what is registered and
			 * drop it only if the socket does turn readable (conn_on_event
			 * sets stirred).  Dropping and adding EPOLLIN around every
			 * deferred request was two epoll_ctl calls each. */
			ev |= c->h.events & (EPOLLIN | EPOLLRDHUP);
		if ((c->sent < c->sendable && !c->flush_queued) || c->tls_rd_want_write)
			ev |= EPOLLOUT;
		if (c->tls_wr_want_read)
			ev |= EPOLLIN;
	}
	ev_mod(c->srv->loop, &c->h, ev);
}

/* Queue c's released answers to be sent once the loop has handled the
 * whole batch of ready events (srv_after_batch): sending them back to
 * back wakes a client that waits on many connections (a load balancer, a
 * benchmark) once per batch instead of once per answer, and on loopback
 * each wake-up was ~12 % of a quote's CPU. */
static void flush_later(struct conn *c)
{
	if (c->flush_queued)
		return;
	c->flush_queued = 1;
	c->flush_next = c->srv->flush_head;
	c->srv->flush_head = c;
}

/* After the loop's batch: send what its handlers queued (flush_later);
 * conn_progress also finishes each connection's turn (a close after the
 * last answer, the interest in writability for what did not fit). */
static void srv_after_batch(struct ev_loop *loop, void *arg)
{
	(void)loop;
	struct srv *s = arg;
	while (s->flush_head) {
		struct conn *c = s->flush_head;
		s->flush_head = c->flush_next;
		c->flush_queued = 0;
		conn_progress(c);
	}
}

/* Process, release, flush, until none of them moves; then decide whether
 * the connection is finished.  May free c. */
static void conn_progress(struct conn *c)
{
	for (;;) {
		size_t got = 0, wrote = 0;
		if (c->tls && !c->read_eof && conn_has_room(c) && tls_pending(c->tls) && conn_read(c, &got)) {
			conn_close(c);
			return;
		}
		size_t used = conn_process(c);
		conn_release(c, srv_durable(c->srv));
		if (c->sent < c->sendable && ev_in_batch(c->srv->loop)) {
			flush_later(c); /* with the batch's other answers */
		} else if (conn_flush(c, &wrote)) {
			conn_close(c);
			return;
		}
		if (!got && !used && !wrote)
			break;
	}
	/* After EOF: once every complete request is taken, drop an incomplete
	 * tail (it can never complete) and close after the last answer. */
	if (c->read_eof && !c->close_after && !c->in_blocked) {
		c->close_after = 1;
		c->in.len = 0;
	}
	if (c->close_after && !c->pending && c->mark_n == 0 && c->sent == c->out.len) {
		conn_close(c);
		return;
	}
	conn_update_interest(c);
}

/* Drive a TLS handshake.  Returns 0 when it is complete, 1 when the caller
 * must stop (waiting for the socket, or the connection was closed). */
static int conn_handshake(struct conn *c)
{
	c->tls_hs_started = 1;
	switch (tls_handshake(c->tls)) {
	case TLS_IO_OK:
		c->last_progress_ms = ev_now_ms(c->srv->loop);
		return 0;
	case TLS_IO_WANT_READ:
		c->tls_hs_want_write = 0;
		conn_update_interest(c);
		return 1;
	case TLS_IO_WANT_WRITE:
		c->tls_hs_want_write = 1;
		conn_update_interest(c);
		return 1;
	default:
		c->srv->st.tls_handshake_failures++;
		conn_close(c);
		return 1;
	}
}

static void conn_on_event(struct ev_loop *loop, struct ev_handle *h, uint32_t events)
{
	(void)loop;
	struct conn *c = h->arg;
	if (events & (EPOLLERR | EPOLLHUP)) {
		/* both directions gone: nobody can read an answer */
		conn_close(c);
		return;
	}
	c->data_waiting = 0;
	int fresh = c->tls && !tls_handshake_done(c->tls);
	if (fresh && conn_handshake(c))
		return;
	/* readable while a deferred request waits for its answer (EPOLLIN kept
	 * lazily, conn_update_interest): read nothing now, stop listening, and
	 * read it once the answer is out */
	int hold = c->pending && !c->tls && (events & (EPOLLIN | EPOLLRDHUP));
	if (hold)
		c->stirred = 1;
	/* read on readability, right after a handshake (the first request may
	 * have come with it), or when a TLS read waited for writability */
	size_t got;
	if (!hold && (fresh || (events & (EPOLLIN | EPOLLRDHUP)) || (c->tls_rd_want_write && (events & EPOLLOUT))) &&
	    conn_read(c, &got)) {
		conn_close(c);
		return;
	}
	conn_progress(c);
}

/* ---- accepting ----------------------------------------------------------- */

/* Close the connection idle for longest (nothing of a request received,
 * nothing queued, no TLS handshake under way) to make room.  0 if one was
 * closed, -1 if every connection is busy. */
static int srv_evict_idle(struct srv *s)
{
	struct conn *victim = NULL;
	for (struct conn *c = s->conns; c; c = c->next) {
		int idle = c->in.len == 0 && !c->pending && c->mark_n == 0 && c->sent == c->out.len && !c->read_eof &&
			   !c->data_waiting &&
			   !(c->tls && !tls_handshake_done(c->tls) && c->tls_hs_started);
		/* the list runs newest first and the loop clock is coarse:
		 * "<=" makes the oldest of equally idle connections the victim */
		if (idle && (!victim || c->last_progress_ms <= victim->last_progress_ms))
			victim = c;
	}
	if (!victim)
		return -1;
	s->st.evicted_idle++;
	conn_close(victim);
	return 0;
}

/* Refuse an accepted socket with `status` (503/429) and close it.  The
 * answer is built by the same writer as every response; one non-blocking
 * send, no waiting (a client that does not read loses the answer, not a
 * slot).  On a TLS listener the socket is only closed (see the top). */
static void srv_refuse(struct srv *s, int fd, const char *peer, int status, const char *code, const char *msg)
{
	if (!s->tls) {
		static struct conn tmp; /* the loop is single-threaded; ~6 KiB of marks */
		memset(&tmp, 0, sizeof(tmp));
		tmp.srv = s;
		tmp.h.fd = fd;
		buf_init(&tmp.out, 0);
		snprintf(tmp.peer, sizeof(tmp.peer), "%s", peer);
		conn_answer_problem(&tmp, status, code, msg, SRV_REFUSE_RETRY_AFTER);
		ssize_t w = send(fd, tmp.out.data, tmp.out.len, MSG_NOSIGNAL | MSG_DONTWAIT);
		(void)w;
		buf_free(&tmp.out);
	}
	close(fd);
}

static void srv_on_accept(struct ev_loop *loop, struct ev_handle *h, uint32_t events)
{
	(void)loop;
	(void)events;
	struct srv *s = h->arg;
	const struct srv_limits *l = &s->cfg.lim;
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage sa;
		socklen_t sl = sizeof(sa);
		int fd = accept4(s->listen_h.fd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		s->st.accepted++;
		char host[INET6_ADDRSTRLEN] = "?", serv[8] = "?", peer[64];
		getnameinfo((struct sockaddr *)&sa, sl, host, sizeof(host), serv, sizeof(serv),
			    NI_NUMERICHOST | NI_NUMERICSERV);
		snprintf(peer, sizeof(peer), "%s:%s", host, serv);
		unsigned char addr[16];
		addr_key(&sa, addr);
		if (s->draining) {
			srv_refuse(s, fd, peer, 503, "service_unavailable", "the server is shutting down");
			s->st.rejected_full++;
			continue;
		}
		if (l->max_conns_per_ip && ipt_count(s, addr) >= l->max_conns_per_ip) {
			srv_refuse(s, fd, peer, 429, "too_many_connections_from_address",
				   "this client address holds the most connections allowed");
			s->st.rejected_per_ip++;
			continue;
		}
		if (s->n_conns >= l->max_conns && srv_evict_idle(s)) {
			srv_refuse(s, fd, peer, 503, "too_many_connections",
				   "every connection is busy; try again shortly");
			s->st.rejected_full++;
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		struct conn *c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->srv = s;
		c->h = (struct ev_handle){.fd = fd, .fn = conn_on_event, .arg = c};
		if (s->tls && !(c->tls = tls_conn_new(s->tls, fd))) {
			close(fd);
			free(c);
			continue;
		}
		buf_init(&c->in, (size_t)l->http.max_header_bytes + l->http.max_body + SRV_READ_CHUNK);
		buf_init(&c->out, 0);
		c->last_progress_ms = c->req_clock_ms = ev_now_ms(s->loop);
		memcpy(c->addr, addr, 16);
		memcpy(c->peer, peer, sizeof(c->peer));
		if (ev_add(s->loop, &c->h, EPOLLIN | EPOLLRDHUP)) {
			tls_conn_free(c->tls);
			buf_free(&c->in);
			buf_free(&c->out);
			close(fd);
			free(c);
			continue;
		}
		c->next = s->conns;
		if (s->conns)
			s->conns->prev = c;
		s->conns = c;
		s->n_conns++;
		ipt_inc(s, c->addr);
		/* Bytes (a request, a ClientHello) already waiting make the
		 * connection busy, not idle, before its first read: a burst of
		 * accepts must not evict it.  It is read on its EPOLLIN event, in
		 * a later batch, so requests keep running one batch at a time
		 * (what the loop's prepare hook relies on). */
		char b;
		c->data_waiting = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 1;
	}
}

static void conn_close(struct conn *c)
{
	struct srv *s = c->srv;
	if (c->flush_queued)
		for (struct conn **p = &s->flush_head; *p; p = &(*p)->flush_next)
			if (*p == c) {
				*p = c->flush_next;
				break;
			}
	if (c->pending)
		c->pending->c = NULL; /* its answer, when it comes, has nowhere to go */
	ev_del(s->loop, &c->h);
	tls_conn_free(c->tls);
	close(c->h.fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->n_conns--;
	ipt_dec(s, c->addr);
	buf_free(&c->in);
	buf_free(&c->out);
	free(c);
}

/* ---- public ------------------------------------------------------------ */

/* Bind and listen on HOST:PORT; the port bound and whether the address is
 * loopback into the out parameters.  The socket, or -1 with err filled. */
static int srv_listen(const char *listen_addr, int *port_out, int *loopback_out, char *err, size_t errlen)
{
	char host[256];
	const char *colon = strrchr(listen_addr, ':');
	if (!colon || (size_t)(colon - listen_addr) >= sizeof(host)) {
		snprintf(err, errlen, "listen address must be HOST:PORT, got \"%s\"", listen_addr);
		return -1;
	}
	memcpy(host, listen_addr, (size_t)(colon - listen_addr));
	host[colon - listen_addr] = 0;
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
	struct addrinfo *ai = NULL;
	int rc = getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &ai);
	if (rc) {
		snprintf(err, errlen, "cannot resolve %s: %s", listen_addr, gai_strerror(rc));
		return -1;
	}
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 1024)) {
		snprintf(err, errlen, "cannot listen on %s: %s", listen_addr, strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	struct sockaddr_storage sa;
	socklen_t sl = sizeof(sa);
	getsockname(fd, (struct sockaddr *)&sa, &sl);
	*port_out = sa.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&sa)->sin6_port)
					      : ntohs(((struct sockaddr_in *)&sa)->sin_port);
	unsigned char a[16];
	addr_key(&sa, a);
	static const unsigned char v6_loop[16] = {[15] = 1};
	static const unsigned char v4_prefix[12] = {[10] = 0xff, [11] = 0xff};
	*loopback_out = !memcmp(a, v6_loop, 16) || (!memcmp(a, v4_prefix, 12) && a[12] == 127);
	return fd;
}

struct srv *srv_new(struct ev_loop *loop, const struct srv_config *cfg, char *err, size_t errlen)
{
	struct srv *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->loop = loop;
	s->cfg = *cfg;
	if (s->cfg.lim.max_inflight == 0 || s->cfg.lim.max_inflight > SRV_MAX_INFLIGHT_CAP)
		s->cfg.lim.max_inflight = s->cfg.lim.max_inflight ? SRV_MAX_INFLIGHT_CAP : 64;
	if (cfg->tls_cert && cfg->tls_cert[0]) {
		if (!cfg->tls_key || !cfg->tls_key[0] || strlen(cfg->tls_cert) >= sizeof(s->tls_cert) ||
		    strlen(cfg->tls_key) >= sizeof(s->tls_key)) {
			snprintf(err, errlen, "TLS needs both a certificate and a key file (paths under %zu bytes)",
				 sizeof(s->tls_cert));
			free(s);
			return NULL;
		}
		snprintf(s->tls_cert, sizeof(s->tls_cert), "%s", cfg->tls_cert);
		snprintf(s->tls_key, sizeof(s->tls_key), "%s", cfg->tls_key);
		s->tls = tls_ctx_new(s->tls_cert, s->tls_key, err, errlen);
		if (!s->tls) {
			free(s);
			return NULL;
		}
	} else if (cfg->tls_key && cfg->tls_key[0]) {
		snprintf(err, errlen, "a TLS key without a certificate (--tls-cert)");
		free(s);
		return NULL;
	}
	s->cfg.tls_cert = s->tls_cert;
	s->cfg.tls_key = s->tls_key;
	/* every connection may come from one address: twice max_conns slots
	 * keeps the table at most half full */
	s->ipt_cap = SRV_IPT_MIN;
	while (s->ipt_cap < 2 * (size_t)(s->cfg.lim.max_conns ? s->cfg.lim.max_conns : 1))
		s->ipt_cap <<= 1;
	s->ipt = calloc(s->ipt_cap, sizeof(*s->ipt));
	int fd = s->ipt ? srv_listen(cfg->listen, &s->port, &s->loopback, err, errlen) : -1;
	if (fd >= 0 && ev_add_after_batch(loop, srv_after_batch, s)) {
		snprintf(err, errlen, "more than %d servers on one event loop", EV_MAX_AFTER_BATCH);
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		if (!s->ipt)
			snprintf(err, errlen, "out of memory");
		tls_ctx_free(s->tls);
		free(s->ipt);
		free(s);
		return NULL;
	}
	s->listen_h = (struct ev_handle){.fd = fd, .fn = srv_on_accept, .arg = s};
	ev_add(loop, &s->listen_h, EPOLLIN);
	s->run_tag = ev_clock_us() * 0xff51afd7ed558ccdull;
	buf_init(&s->resp.headers, 64 << 10);
	buf_init(&s->resp.body, 64u << 20);
	return s;
}

int srv_port(const struct srv *s) { return s->port; }

void srv_on_durable(struct srv *s)
{
	/* conn_progress also resumes pipelined requests that waited on the
	 * in-flight bound, and may free the connection */
	for (struct conn *c = s->conns, *next; c; c = next) {
		next = c->next;
		if (c->mark_n || c->in_blocked)
			conn_progress(c);
	}
}

void srv_drain(struct srv *s)
{
	if (s->draining)
		return;
	s->draining = 1;
	s->drain_deadline_ms = ev_now_ms(s->loop) + s->cfg.lim.drain_timeout_ms;
	if (s->listen_h.fd >= 0) {
		ev_del(s->loop, &s->listen_h);
		close(s->listen_h.fd);
		s->listen_h.fd = -1;
	}
	for (struct conn *c = s->conns, *next; c; c = next) {
		next = c->next;
		c->close_after = 1;
		if (!c->pending && c->mark_n == 0 && c->sent == c->out.len && c->in.len == 0)
			conn_close(c);
	}
}

void srv_drain_on_signal(struct srv *s, struct ev_loop *loop, int *requested)
{
	if (*requested) {
		ev_stop(loop);
		return;
	}
	*requested = 1;
	srv_drain(s);
	if (srv_drained(s))
		ev_stop(loop);
}

int srv_drained(const struct srv *s)
{
	return s->draining && (s->n_conns == 0 || ev_now_ms(s->loop) >= s->drain_deadline_ms);
}

void srv_tick(struct srv *s)
{
	uint64_t now = ev_now_ms(s->loop);
	const struct srv_limits *l = &s->cfg.lim;
	for (struct conn *c = s->conns, *next; c; c = next) {
		next = c->next;
		if (c->pending)
			continue; /* the application's own deadline bounds the wait */
		int timed_out = 0;
		if (c->req_clock_ms && c->mark_n == 0) {
			uint64_t age = now - c->req_clock_ms;
			int head_done = c->in.len >= 4 && memmem(c->in.data, c->in.len, "\r\n\r\n", 4);
			if ((!head_done && age >= l->header_timeout_ms) || age >= l->body_timeout_ms)
				timed_out = 1;
		}
		if (!timed_out && now - c->last_progress_ms >= l->idle_timeout_ms)
			timed_out = 2;
		if (timed_out) {
			s->st.timeouts++;
			/* nothing received (a silent socket, a TLS handshake
			 * that did not finish): close without a word, as an idle
			 * keep-alive connection is closed */
			int silent = c->in.len == 0 || (c->tls && !tls_handshake_done(c->tls));
			if (timed_out == 1 && !silent && c->sent == c->out.len) {
				conn_reject(c, 408, "request not received in time");
				conn_progress(c);
			} else {
				conn_close(c);
			}
		}
	}
	if (s->draining && ev_now_ms(s->loop) >= s->drain_deadline_ms) {
		while (s->conns)
			conn_close(s->conns);
	}
}

struct srv_deferred *srv_defer(struct srv *s, const struct srv_request *rq)
{
	assert(s->in_handler && !s->defer_now);
	struct srv_deferred *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	memcpy(d->request_id, rq->request_id, sizeof(d->request_id));
	d->start_us = rq->start_us;
	s->defer_now = d;
	return d;
}

int srv_complete(struct srv *s, struct srv_deferred *d, struct srv_response *rs)
{
	assert(!s->in_handler || s->defer_now != d);
	struct conn *c = d->c;
	int rc = -1;
	if (c) {
		struct srv_request rq = {.start_us = d->start_us, .peer = c->peer};
		memcpy(rq.request_id, d->request_id, sizeof(rq.request_id));
		if (d->close)
			rs->close = 1;
		c->pending = NULL;
		conn_queue_response(c, &rq, rs, d->head_only);
		if (s->cfg.done)
			s->cfg.done(s->cfg.app, &rq, rs, ev_clock_us() - rq.start_us);
		c->last_progress_ms = ev_now_ms(s->loop);
		c->req_clock_ms = c->in.len ? c->last_progress_ms : 0;
		conn_progress(c); /* may take the next pipelined request; may close c */
		rc = 0;
	}
	free(d);
	return rc;
}

void srv_get_stats(const struct srv *s, struct srv_stats *st)
{
	*st = s->st;
	st->open = s->n_conns;
}

int srv_is_tls(const struct srv *s) { return s->tls != NULL; }

int srv_is_loopback(const struct srv *s) { return s->loopback; }

int srv_tls_reload(struct srv *s, char *err, size_t errlen)
{
	if (!s->tls)
		return 1;
	struct tls_ctx *t = tls_ctx_new(s->tls_cert, s->tls_key, err, errlen);
	if (!t)
		return -1;
	tls_ctx_free(s->tls); /* open connections keep their own reference */
	s->tls = t;
	return 0;
}

void srv_free(struct srv *s)
{
	if (!s)
		return;
	while (s->conns)
		conn_close(s->conns);
	ev_del_after_batch(s->loop, srv_after_batch, s);
	if (s->listen_h.fd >= 0) {
		ev_del(s->loop, &s->listen_h);
		close(s->listen_h.fd);
	}
	buf_free(&s->resp.headers);
	buf_free(&s->resp.body);
	tls_ctx_free(s->tls);
	free(s->ipt);
	free(s);
}
