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
 *
 * Buffers are owned by the connection and reused across requests: the
 * steady state (keep-alive request/response) allocates nothing.
 */
#include "net/server.h"

#include <arpa/inet.h>
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

#include "net/problem.h"

#define SRV_MAX_INFLIGHT_CAP 256
#define SRV_READ_CHUNK 16384

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
	uint64_t req_first_byte_ms; /* when the current request's first byte came; 0 = none */
	uint64_t last_progress_ms;
	int close_after;        /* close once everything queued is written */
	int dead;
	char peer[64];
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
};

void srv_limits_default(struct srv_limits *l)
{
	memset(l, 0, sizeof(*l));
	http_limits_default(&l->http);
	l->max_conns = 1024;
	l->header_timeout_ms = 10000;
	l->body_timeout_ms = 30000;
	l->idle_timeout_ms = 60000;
	l->max_inflight = 64;
	l->max_out_bytes = 8u << 20;
	l->drain_timeout_ms = 10000;
}

static void conn_close(struct conn *c);
static void conn_on_event(struct ev_loop *loop, struct ev_handle *h, uint32_t events);
static void conn_process(struct conn *c);
static void conn_update_interest(struct conn *c);

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
	buf_printf(o, "HTTP/1.1 %d %s\r\nDate: %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		      "X-Request-Id: %s\r\n%s",
		   rs->status, http_reason(rs->status), http_date(),
		   rs->content_type ? rs->content_type : "application/json", rs->body.len,
		   rq->request_id, keep ? "" : "Connection: close\r\n");
	if (rs->headers.len)
		buf_append(o, rs->headers.data, rs->headers.len);
	buf_append(o, "\r\n", 2);
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

/* Write the released prefix.  Returns -1 if the connection died. */
static int conn_flush(struct conn *c)
{
	while (c->sent < c->sendable) {
		ssize_t n = send(c->h.fd, c->out.data + c->sent, c->sendable - c->sent, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return -1;
		}
		c->sent += (size_t)n;
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
	snprintf(rq->request_id, sizeof(rq->request_id), "req_%016llx", (unsigned long long)v);
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

/* Answer a request the parser rejected, then close. */
static void conn_reject(struct conn *c, int status, const char *msg)
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
	const char *code = status == 413 ? "payload_too_large"
			   : status == 431 ? "headers_too_large"
			   : status == 414 ? "uri_too_long"
			   : status == 411 ? "length_required"
			   : status == 408 ? "request_timeout"
			   : status == 503 ? "service_unavailable"
			   : status == 505 ? "http_version_not_supported"
					   : "bad_request";
	problem_write(&rs->body, status, code, http_reason(status), msg);
	conn_queue_response(c, &rq, rs, 0);
	conn_release(c, UINT64_MAX);
	c->in.len = 0;
	c->req_first_byte_ms = 0;
	s->st.parse_errors += status != 408 && status != 503;
	if (s->cfg.done)
		s->cfg.done(s->cfg.app, &rq, rs, 0);
}

/* Handle every complete request in `in`, within the in-flight bound. */
static void conn_process(struct conn *c)
{
	struct srv *s = c->srv;
	size_t off = 0;
	while (!c->close_after && c->mark_n < s->cfg.lim.max_inflight &&
	       c->out.len < s->cfg.lim.max_out_bytes && off < c->in.len) {
		struct http_request req;
		struct http_error herr;
		int r = http_parse_request(c->in.data + off, c->in.len - off, &s->cfg.lim.http, &req, &herr);
		if (r == HTTP_PARSE_INCOMPLETE)
			break;
		if (r == HTTP_PARSE_ERROR) {
			buf_consume(&c->in, off);
			conn_reject(c, herr.status, herr.msg);
			return;
		}
		if (http_check_host(&req, &herr) != HTTP_PARSE_OK) {
			buf_consume(&c->in, off);
			conn_reject(c, herr.status, herr.msg);
			return;
		}
		struct srv_request rq = {.http = &req, .start_us = ev_clock_us(), .peer = c->peer};
		srv_make_request_id(s, &rq);
		struct srv_response *rs = &s->resp;
		resp_reset(rs);
		s->cfg.handler(s->cfg.app, &rq, rs);
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
		c->req_first_byte_ms = c->in.len ? ev_now_ms(s->loop) : 0;
	}
}

/* ---- socket events ----------------------------------------------------- */

static int conn_read(struct conn *c)
{
	struct srv *s = c->srv;
	size_t cap = (size_t)s->cfg.lim.http.max_header_bytes + s->cfg.lim.http.max_body + 1;
	for (;;) {
		if (c->in.len >= cap)
			return 0; /* the parser has rejected or will reject this */
		size_t want = cap - c->in.len < SRV_READ_CHUNK ? cap - c->in.len : SRV_READ_CHUNK;
		if (buf_reserve(&c->in, want))
			return -1;
		ssize_t n = recv(c->h.fd, c->in.data + c->in.len, want, 0);
		if (n == 0)
			return -1;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -1;
		}
		if (c->in.len == 0)
			c->req_first_byte_ms = ev_now_ms(s->loop);
		c->in.len += (size_t)n;
		c->last_progress_ms = ev_now_ms(s->loop);
		if ((size_t)n < want)
			return 0;
	}
}

static void conn_update_interest(struct conn *c)
{
	struct srv *s = c->srv;
	uint32_t ev = 0;
	int can_read = !c->close_after && c->mark_n < s->cfg.lim.max_inflight &&
		       c->out.len < s->cfg.lim.max_out_bytes;
	if (can_read)
		ev |= EPOLLIN;
	if (c->sent < c->sendable)
		ev |= EPOLLOUT;
	ev |= EPOLLRDHUP;
	ev_mod(s->loop, &c->h, ev);
}

/* Release, flush, and decide whether the connection is finished. */
static void conn_progress(struct conn *c)
{
	conn_release(c, srv_durable(c->srv));
	if (conn_flush(c)) {
		conn_close(c);
		return;
	}
	if (c->close_after && c->mark_n == 0 && c->sent == c->out.len) {
		conn_close(c);
		return;
	}
	conn_update_interest(c);
}

static void conn_on_event(struct ev_loop *loop, struct ev_handle *h, uint32_t events)
{
	(void)loop;
	struct conn *c = h->arg;
	if (events & (EPOLLERR | EPOLLHUP)) {
		conn_close(c);
		return;
	}
	if (events & (EPOLLIN | EPOLLRDHUP)) {
		if (conn_read(c)) {
			/* peer closed or error: answer nothing more */
			conn_close(c);
			return;
		}
		conn_process(c);
	}
	conn_progress(c);
}

static void srv_on_accept(struct ev_loop *loop, struct ev_handle *h, uint32_t events)
{
	(void)loop;
	(void)events;
	struct srv *s = h->arg;
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage sa;
		socklen_t sl = sizeof(sa);
		int fd = accept4(s->listen_h.fd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		s->st.accepted++;
		if (s->n_conns >= s->cfg.lim.max_conns || s->draining) {
			static const char body[] =
				"{\"type\":\"" PROBLEM_TYPE_BASE "too_many_connections\",\"title\":"
				"\"Service Unavailable\",\"status\":503,\"code\":\"too_many_connections\"}";
			char full[512];
			int fl = snprintf(full, sizeof(full),
					  "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\n"
					  "Content-Length: %zu\r\nConnection: close\r\nRetry-After: 1\r\n\r\n%s",
					  sizeof(body) - 1, body);
			ssize_t w = send(fd, full, (size_t)fl, MSG_NOSIGNAL | MSG_DONTWAIT);
			(void)w;
			close(fd);
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
		buf_init(&c->in, (size_t)s->cfg.lim.http.max_header_bytes + s->cfg.lim.http.max_body + SRV_READ_CHUNK);
		buf_init(&c->out, 0);
		c->last_progress_ms = ev_now_ms(s->loop);
		char host[INET6_ADDRSTRLEN] = "?", serv[8] = "?";
		getnameinfo((struct sockaddr *)&sa, sl, host, sizeof(host), serv, sizeof(serv),
			    NI_NUMERICHOST | NI_NUMERICSERV);
		snprintf(c->peer, sizeof(c->peer), "%s:%s", host, serv);
		if (ev_add(s->loop, &c->h, EPOLLIN | EPOLLRDHUP)) {
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
	}
}

static void conn_close(struct conn *c)
{
	struct srv *s = c->srv;
	ev_del(s->loop, &c->h);
	close(c->h.fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->n_conns--;
	buf_free(&c->in);
	buf_free(&c->out);
	free(c);
}

/* ---- public ------------------------------------------------------------ */

static int srv_listen(const char *listen_addr, int *port_out, char *err, size_t errlen)
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
	int fd = srv_listen(cfg->listen, &s->port, err, errlen);
	if (fd < 0) {
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
	struct conn *c = s->conns;
	while (c) {
		struct conn *next = c->next;
		if (c->mark_n)
			conn_progress(c);
		c = next;
	}
	/* Second pass: a connection that was blocked on its in-flight bound may
	 * already hold complete pipelined requests: resume them. */
	for (c = s->conns; c;) {
		struct conn *next = c->next;
		if (c->in.len && c->mark_n < s->cfg.lim.max_inflight && !c->close_after) {
			conn_process(c);
			conn_progress(c);
		}
		c = next;
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
		if (c->mark_n == 0 && c->sent == c->out.len && c->in.len == 0)
			conn_close(c);
	}
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
		int timed_out = 0;
		if (c->req_first_byte_ms && c->mark_n == 0) {
			uint64_t age = now - c->req_first_byte_ms;
			int head_done = c->in.len >= 4 && memmem(c->in.data, c->in.len, "\r\n\r\n", 4);
			if ((!head_done && age >= l->header_timeout_ms) || age >= l->body_timeout_ms)
				timed_out = 1;
		}
		if (!timed_out && now - c->last_progress_ms >= l->idle_timeout_ms)
			timed_out = 2;
		if (timed_out) {
			s->st.timeouts++;
			if (timed_out == 1 && c->sent == c->out.len) {
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

void srv_get_stats(const struct srv *s, struct srv_stats *st)
{
	*st = s->st;
	st->open = s->n_conns;
}

void srv_free(struct srv *s)
{
	if (!s)
		return;
	while (s->conns)
		conn_close(s->conns);
	if (s->listen_h.fd >= 0) {
		ev_del(s->loop, &s->listen_h);
		close(s->listen_h.fd);
	}
	buf_free(&s->resp.headers);
	buf_free(&s->resp.body);
	free(s);
}
