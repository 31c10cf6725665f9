/*
 * client.h -- outbound HTTP/1.1 on the event loop: one keep-alive
 * connection pool per peer, bounded, with a deadline per call.
 *
 * The cluster's internal traffic (router -> shard, shard -> shard; DESIGN.md
 * section 9) is request/response over a few long-lived connections, so a
 * pool holds at most max_conns connections to one peer and at most
 * max_queue calls waiting for one of them; past that hc_send refuses at
 * once and the caller answers 503 instead of buffering without bound.
 * Every call has its own deadline (explicit per call, never a hidden
 * default) swept by hc_tick; a call that times out or whose connection
 * fails is reported once, to its callback, and never retried here: whether
 * a call may be retried is the caller's decision (retried internal writes
 * must be idempotent).
 *
 * A call may ask to be pipelined (hc_request.pipeline, on a pool with
 * hc_config.pipeline > 1): it then shares a connection with other such
 * calls, the calls a batch of the loop's events makes go out in one write,
 * and answers are matched in order; it waits for those ahead of it and
 * fails with them (client.c's top has the why and the price).
 *
 * Responses must carry Content-Length (the project's servers always do);
 * chunked or unframed responses are refused as errors.  The response given
 * to the callback points into the connection's buffer and is valid only
 * during the call.  Single-threaded: the pool belongs to its loop.
 */
#ifndef WM_CLIENT_H
#define WM_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "net/ev.h"

#define HC_MAX_HEAD 16384 /* bytes of a response head */

struct hc_config {
	const char *addr;            /* "IPv4:port" or "[IPv6]:port" (numeric: no DNS on the loop) */
	uint32_t max_conns;          /* connections to the peer; 1..256 */
	uint32_t max_queue;          /* calls waiting for a connection; 0..65536 */
	uint32_t max_response_bytes; /* body bytes accepted; larger responses fail */
	uint32_t pipeline;           /* calls in flight on one connection, for those that ask
				      * (hc_request.pipeline); 0 or 1: none; at most HC_PIPELINE_CAP */
};
#define HC_PIPELINE_CAP 64u

struct hc_request {
	const char *method;
	const char *path;
	const char *headers;         /* extra "Name: value\r\n" lines, or NULL */
	const void *body;
	size_t body_len;
	uint32_t timeout_ms;         /* from hc_send to the last byte of the response; > 0 */
	/* May share a connection with other such calls (the pool's pipeline
	 * bound): its answer then waits for theirs, and it fails with them
	 * when the connection does (a time-out of one fails those behind it
	 * on the connection).  For quick calls whose failure the caller only
	 * reports (reads, quotes); never an internal step whose retry
	 * matters more than a syscall. */
	int pipeline;
};

struct hc_response {
	int status;
	const char *head;            /* status line and headers */
	size_t head_len;
	const char *body;
	size_t body_len;
};

/* The outcome of one call: r is the response, or NULL with err saying why
 * (connect refused, timed out, peer closed, malformed or too large). */
typedef void (*hc_done_fn)(void *arg, const struct hc_response *r, const char *err);

/* Finished calls a pool keeps for its next ones, with their request
 * buffers (up to HC_SPARE_MAX_BYTES each): a forwarded request is then no
 * calloc and no buffer growth (the router's perf profile under quote load:
 * malloc, free and realloc ~9 % of its samples). */
#define HC_CALL_SPARE 32u
#define HC_SPARE_MAX_BYTES (64u << 10)

struct hc_stats {
	uint64_t connects, calls, ok, failed, timeouts, refused_full;
	uint64_t pipelined;      /* calls given a connection that already carried calls */
	uint32_t open, busy, queued;
	uint32_t spare;          /* finished calls kept for reuse (<= HC_CALL_SPARE) */
};

struct hc_pool;

/* A pool for one peer; NULL with err on a bad address or configuration. */
struct hc_pool *hc_pool_new(struct ev_loop *loop, const struct hc_config *cfg, char *err, size_t errlen);
/* Start a call: 0 (done will be called exactly once, never from inside
 * hc_send), or -1 when the pool and its queue are full or the request is
 * malformed (done is not called). */
int hc_send(struct hc_pool *p, const struct hc_request *rq, hc_done_fn done, void *arg);
/*
 * Parse what has arrived of one response (data[0..len)): 1 with *r filled
 * (pointing into data) when the whole response is in, 0 when more is
 * needed, -1 with *err when it can never be valid (head over HC_MAX_HEAD,
 * bad status line, Transfer-Encoding, not exactly one Content-Length, body
 * over max_body, bytes after it).  *close_after: "Connection: close".
 */
int hc_parse_response(const char *data, size_t len, uint32_t max_body, struct hc_response *r, int *close_after,
		      const char **err);

/* hc_parse_response of the first response in data[0..len), which may be
 * followed by the next ones (the answers to pipelined calls): 1 with *r
 * and *used (its bytes, <= len), 0 when more is needed, -1 with *err. */
int hc_parse_next(const char *data, size_t len, uint32_t max_body, struct hc_response *r, int *close_after,
		  const char **err, size_t *used);
/* Deadlines: call from the loop's tick. */
/* The value of header `name` (case-insensitive) of a response into out
 * (size bytes, NUL-terminated, cut to fit): how many times it appears. */
int hc_header(const struct hc_response *r, const char *name, char *out, size_t size);
void hc_tick(struct hc_pool *p);
void hc_stats(const struct hc_pool *p, struct hc_stats *st);
/* Close every connection; calls still pending fail with "pool closed".
 * Not from inside a done callback of the same pool. */
void hc_pool_free(struct hc_pool *p);

#endif
