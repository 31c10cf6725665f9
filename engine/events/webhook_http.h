/*
 * webhook_http.h -- outbound delivery of webhooks, off the event loop
 * (issue 18 item 4).
 *
 * Why a thread of its own: a partner's endpoint may be slow, far or dead,
 * and the shard's event loop must never wait on it.  libcurl's multi
 * interface runs every transfer on one delivery thread; the loop talks to
 * it through two bounded queues:
 *
 *     loop --wh_http_submit()--> [pending] --> delivery thread (curl multi)
 *     loop <--wh_http_take()---- [done] <---- delivery thread, + eventfd
 *
 * The eventfd becomes readable when a completion is waiting, so the loop
 * polls it like any other descriptor.  The bound is on outstanding
 * requests (submitted and not yet taken back): submit refuses when
 * queue_cap are outstanding, so neither queue can grow without bound and
 * the done queue always has room.
 *
 * Every transfer: POST, TLS verification on (peer and host), redirects not
 * followed, protocols https only (plus http when allowed), no proxy from
 * the environment, no signals, connect and total time-outs per request,
 * the response body counted and the transfer stopped past response_cap
 * bytes, at most max_host_conns connections to one host:port (a burst to
 * one endpoint waits in libcurl's queue instead of opening hundreds of
 * connections), and every address curl connects to checked again against
 * the destination policy (webhook_url.h) unless private destinations are
 * allowed -- a second line behind the pin the caller passes.
 */
#ifndef WM_WEBHOOK_HTTP_H
#define WM_WEBHOOK_HTTP_H

#include "engine/events/webhook_retry.h"

#include <stddef.h>
#include <stdint.h>

#define WH_HTTP_QUEUE_MAX 4096        /* queue_cap at most */
#define WH_HTTP_HOST_CONNS_MAX 64     /* max_host_conns at most */
#define WH_HTTP_RESPONSE_MAX (1u << 20) /* response_cap at most */
#define WH_HTTP_BODY_MAX (1u << 20)   /* bytes of a request body */
#define WH_HTTP_HEADERS_MAX 16        /* extra header lines of a request */
#define WH_HTTP_TIMEOUT_MAX_MS 600000 /* a per-request time-out at most (10 min) */
#define WH_HTTP_ERR_MAX 256           /* CURL_ERROR_SIZE */

struct wh_http_config {
	unsigned queue_cap;      /* 1..WH_HTTP_QUEUE_MAX outstanding requests */
	unsigned max_host_conns; /* 1..WH_HTTP_HOST_CONNS_MAX */
	size_t response_cap;     /* 0..WH_HTTP_RESPONSE_MAX bytes of a response body read */
	int allow_http;          /* operator setting: plain http:// allowed */
	int allow_private;       /* operator setting: non-public addresses allowed */
	const char *ca_file;     /* PEM trust anchors instead of the system's, or NULL (copied) */
};

/* One delivery.  Everything is copied by wh_http_submit: the caller keeps
 * ownership of its strings and buffers. */
struct wh_http_request {
	uint64_t tag;                  /* the caller's, returned in the result */
	const char *url;
	const char *resolve;           /* CURLOPT_RESOLVE pin "host:port:addr", or NULL */
	const char *const *headers;    /* "Name: value" lines, n_headers of them */
	size_t n_headers;              /* 0..WH_HTTP_HEADERS_MAX */
	const void *body;
	size_t body_len;               /* 0..WH_HTTP_BODY_MAX */
	long connect_timeout_ms;       /* 1..WH_HTTP_TIMEOUT_MAX_MS */
	long timeout_ms;               /* 1..WH_HTTP_TIMEOUT_MAX_MS, the whole transfer */
};

struct wh_http_result {
	uint64_t tag;
	int transport_ok;              /* 0: no HTTP answer (connect, TLS, time-out, refused address) */
	long status;                   /* the HTTP status, 0 without an answer */
	enum wh_class cls;             /* wh_classify(transport_ok, status) */
	size_t bytes_read;             /* response body bytes read, <= response_cap */
	int truncated;                 /* the body was longer than response_cap: reading stopped */
	long retry_after_s;            /* the answer's Retry-After in seconds (429, 503), 0 without one:
					* the scheduler should not retry earlier (api-practices, Webhooks) */
	char error[WH_HTTP_ERR_MAX];   /* libcurl's text when !transport_ok, else "" */
};

struct wh_http;

/* Start the delivery thread: the handle, or NULL (config outside its
 * bounds, no memory, no thread, no eventfd). */
struct wh_http *wh_http_start(const struct wh_http_config *c);

/* Queue a delivery: 0, or -1 with errno EAGAIN when queue_cap requests are
 * outstanding, EINVAL for a request outside its bounds, ENOMEM. */
int wh_http_submit(struct wh_http *h, const struct wh_http_request *r);

/* The descriptor that is readable while completions wait (poll for
 * POLLIN).  Owned by h. */
int wh_http_eventfd(const struct wh_http *h);

/* Move up to max completions into out (oldest first): how many.  Drains
 * the eventfd and re-arms it when more remain, so a caller woken by it
 * may take any amount per wake-up. */
size_t wh_http_take(struct wh_http *h, struct wh_http_result *out, size_t max);

/* Requests submitted and not yet taken (pending, in flight or done). */
unsigned wh_http_outstanding(struct wh_http *h);

/* Stop the thread, abandon transfers in flight, free everything.  NULL is
 * a no-op. */
void wh_http_stop(struct wh_http *h);

#endif
