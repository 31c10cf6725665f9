/*
 * server.h -- the HTTP/1.1 server: connections, limits, time-outs, and the
 * rule that no response leaves before the state it reveals is durable.
 *
 * The application gives one synchronous handler.  It runs on the loop
 * thread, fills a srv_response (status, headers, body) and sets `lsn`, the
 * highest WAL LSN the response depends on.  The server queues the bytes on
 * the connection and releases them only when the durable LSN (asked through
 * durable_lsn()) has reached it; the application calls srv_on_durable()
 * whenever the WAL reports progress.  Because responses on one connection
 * are released in order and their LSNs never decrease, a connection keeps a
 * small ring of (end offset, lsn) marks and sends the longest durable prefix.
 *
 * Connection hygiene (why each rule exists):
 *   - The head time-out runs from accept (and covers a TLS handshake), so a
 *     socket that connects and sends nothing holds a slot for at most
 *     header_timeout_ms; it is then closed without an answer, as an idle
 *     keep-alive connection is (a partial request head gets 408).
 *   - When the table is full, the connection idle for longest (nothing of a
 *     request received, nothing queued) is closed to make room before a new
 *     one is refused, so silent sockets cannot lock real clients out.
 *   - At most max_conns_per_ip connections per client address (429);
 *     refusals carry the same headers as every other response.
 *   - A client that half-closes (shutdown(SHUT_WR)) after sending still
 *     gets an answer to every complete request it sent, durable ones
 *     included; then the connection is closed.
 *   - With tls_cert/tls_key the listener speaks TLS only (net/tls.h); the
 *     handshake runs inside the loop and srv_tls_reload swaps certificates.
 */
#ifndef WM_SERVER_H
#define WM_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "net/buf.h"
#include "net/ev.h"
#include "net/http.h"

struct srv_limits {
	struct http_limits http;
	uint32_t max_conns;          /* default 1024; one more evicts the longest-idle or gets 503 */
	uint32_t max_conns_per_ip;   /* default 256; one more from that address gets 429; 0 = no cap */
	uint32_t header_timeout_ms;  /* a request head (and the TLS handshake) must arrive within
	                                this, from accept or from its first byte; default 10000 */
	uint32_t body_timeout_ms;    /* the whole request must arrive within this; default 30000 */
	uint32_t idle_timeout_ms;    /* keep-alive idle / no progress; default 60000 */
	uint32_t max_inflight;       /* pipelined responses held per connection; default 64, max 256 */
	uint32_t max_out_bytes;      /* stop reading while more is queued; default 8 MiB */
	uint32_t drain_timeout_ms;   /* graceful drain deadline; default 10000 */
};

void srv_limits_default(struct srv_limits *l);

struct srv_request {
	const struct http_request *http;
	char request_id[24];         /* "req_" + 16 hex, unique per process run */
	uint64_t start_us;
	const char *peer;            /* "ip:port" of the client */
};

struct srv_response {
	int status;
	const char *content_type;    /* default "application/json" */
	struct buf headers;          /* extra "Name: value\r\n" lines */
	struct buf body;
	uint64_t lsn;                /* hold until durable >= lsn; 0 = no dependency */
	int close;                   /* close the connection after this response */
	const char *route;           /* route pattern for metrics and the access log */
};

typedef void (*srv_handler_fn)(void *app, const struct srv_request *rq, struct srv_response *rs);
/* Called once per response when it is released (after durability), for
 * metrics and the access log.  latency_us = parse to release. */
typedef void (*srv_done_fn)(void *app, const struct srv_request *rq,
			    const struct srv_response *rs, uint64_t latency_us);
typedef uint64_t (*srv_durable_fn)(void *app);

struct srv_config {
	const char *listen;          /* "host:port"; port 0 picks a free one */
	const char *tls_cert;        /* PEM certificate (chain) file; NULL or "" = plain HTTP */
	const char *tls_key;         /* PEM private key file; required with tls_cert */
	struct srv_limits lim;
	srv_handler_fn handler;
	srv_done_fn done;            /* may be NULL */
	srv_durable_fn durable_lsn;  /* may be NULL: everything is durable */
	void *app;
};

struct srv_stats {
	uint64_t accepted, rejected_full, open, requests, timeouts, parse_errors;
	uint64_t rejected_per_ip;    /* refused: the client address had max_conns_per_ip open */
	uint64_t evicted_idle;       /* idle connections closed to admit a new one */
	uint64_t tls_handshake_failures;
};

struct srv;

struct srv *srv_new(struct ev_loop *loop, const struct srv_config *cfg, char *err, size_t errlen);
/* Port actually bound (useful with port 0). */
int srv_port(const struct srv *s);
/* Release held responses whose LSN is now durable. */
void srv_on_durable(struct srv *s);
/* Stop accepting; close idle connections; finish in-flight ones. */
void srv_drain(struct srv *s);
/* A stop signal (SIGTERM/SIGINT) arrived: the first starts the drain
 * (logged) and stops the loop once drained; a second stops the loop at
 * once (everything acknowledged is durable anyway).  *requested keeps
 * which one this is; the caller logs the signal. */
void srv_drain_on_signal(struct srv *s, struct ev_loop *loop, int *requested);
/* True once draining and every connection is gone (or the deadline passed). */
int srv_drained(const struct srv *s);
/* Periodic work (time-outs, drain deadline); call from the loop tick. */
void srv_tick(struct srv *s);
/*
 * Deferred answers (the router forwards a request and answers when the
 * shard has).  Called by the handler, srv_defer marks the request as
 * answered later and returns its token (NULL when out of memory: answer
 * now instead); whatever the handler put in its srv_response is then
 * ignored.  The connection reads no further request until the answer is
 * given (answers stay in request order), and its idle and request
 * time-outs do not run meanwhile: the application's own deadline bounds
 * the wait, and it must complete every token exactly once, from the loop
 * thread and never inside the handler that deferred it.
 *
 * srv_complete queues rs (status, headers, body, lsn as for a handler's
 * response; the bytes are copied) and frees the token: 0, or -1 when the
 * connection closed meanwhile (the answer is dropped).
 */
struct srv_deferred;
struct srv_deferred *srv_defer(struct srv *s, const struct srv_request *rq);
int srv_complete(struct srv *s, struct srv_deferred *d, struct srv_response *rs);

void srv_get_stats(const struct srv *s, struct srv_stats *st);
/* 1 when the listener serves TLS. */
int srv_is_tls(const struct srv *s);
/* 1 when the listener is bound to a loopback address (127.0.0.0/8, ::1). */
int srv_is_loopback(const struct srv *s);
/* Rebuild the TLS context from the configured files: 0 = new connections
 * use it; -1 = the files were refused (err says why) and the old context
 * stays; 1 = the server is plain HTTP, nothing to reload. */
int srv_tls_reload(struct srv *s, char *err, size_t errlen);
void srv_free(struct srv *s);

#endif
