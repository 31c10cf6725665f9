/*
 * http.h -- HTTP/1.1 request-head parser (RFC 9112), pure and bounded.
 *
 * The parser is stateless: it is handed the bytes received so far on a
 * connection and either says "incomplete", returns one complete request
 * (head + Content-Length body), or rejects the bytes with the status code
 * the server must answer before closing.  The server calls it again after
 * every read; re-parsing is bounded by the head-size limit, and it is what
 * lets the tests split a request at every byte.
 *
 * Strictness is a security property here (request smuggling):
 *   - only CRLF line endings; obs-fold (continuation lines) rejected;
 *   - header names are tokens, no whitespace before the colon;
 *   - Transfer-Encoding together with Content-Length -> 400;
 *   - any Transfer-Encoding (chunked or not) -> 411 Length Required
 *     (we do not accept chunked request bodies);
 *   - several Content-Length headers -> 400 (even when equal), a
 *     non-digit, empty, or overflowing value -> 400;
 *   - bodies over max_body -> 413, request line over max_request_line
 *     -> 414, more than max_headers headers or a head over
 *     max_header_bytes -> 431;
 *   - versions other than HTTP/1.0 and HTTP/1.1 -> 505; an unknown method
 *     token is returned as HTTP_M_OTHER (the router answers 405/501).
 *   - the request target must be origin-form ("/..."), or "*" for OPTIONS;
 *   - Host: exactly one on HTTP/1.1, at most one on HTTP/1.0
 *     (http_check_host, applied by the server after framing).
 */
#ifndef WM_HTTP_H
#define WM_HTTP_H

#include <stddef.h>
#include <stdint.h>

#define HTTP_MAX_HEADERS_CAP 64 /* compile-time ceiling for max_headers */

enum http_method {
	HTTP_M_OTHER = 0,
	HTTP_M_GET,
	HTTP_M_HEAD,
	HTTP_M_POST,
	HTTP_M_PUT,
	HTTP_M_PATCH,
	HTTP_M_DELETE,
	HTTP_M_OPTIONS,
};

struct http_limits {
	uint32_t max_request_line;  /* bytes incl. CRLF; default 8192 */
	uint32_t max_headers;       /* count; default 64, at most HTTP_MAX_HEADERS_CAP */
	uint32_t max_header_bytes;  /* whole head incl. request line; default 16384 */
	uint64_t max_body;          /* Content-Length ceiling; default 1 MiB */
};

struct http_header {
	const char *name;  /* points into the input; not NUL-terminated */
	uint32_t name_len;
	const char *value; /* leading/trailing OWS stripped */
	uint32_t value_len;
};

struct http_request {
	enum http_method method;
	const char *method_str;  uint32_t method_len;
	const char *target;      uint32_t target_len;  /* as received */
	const char *path;        uint32_t path_len;    /* target before '?' */
	const char *query;       uint32_t query_len;   /* after '?', 0 if none */
	uint8_t version_minor;   /* 0 or 1 */
	struct http_header headers[HTTP_MAX_HEADERS_CAP];
	uint32_t n_headers;
	int has_content_length;
	uint64_t content_length;
	int keep_alive;          /* per version default and Connection header */
	int expect_continue;     /* "Expect: 100-continue" present */
	size_t head_len;         /* bytes of request line + headers + blank line */
	const char *body;        /* points into the input */
	size_t body_len;
	size_t total_len;        /* head_len + body_len: bytes to consume */
	size_t start_off;        /* empty lines skipped before the request line: the request
	                            itself is method_str .. method_str + total_len - start_off */
};

enum http_parse_result {
	HTTP_PARSE_INCOMPLETE = 0,
	HTTP_PARSE_OK = 1,
	HTTP_PARSE_ERROR = -1,
};

struct http_error {
	int status;       /* 400, 411, 413, 414, 431, 505 */
	char msg[96];     /* short reason for the problem body and the log */
};

/* Fill `l` with the defaults named in struct http_limits. */
void http_limits_default(struct http_limits *l);

/*
 * Parse the first request in buf[0..len).  On HTTP_PARSE_OK `req` describes
 * it and req->total_len bytes may be consumed (pipelined requests follow).
 * On HTTP_PARSE_INCOMPLETE more bytes are needed -- but a head that already
 * exceeds a limit is an error at once, not incomplete, and so is a
 * Content-Length above max_body (413 before the body arrives).
 * On HTTP_PARSE_ERROR `err` says which status to answer.
 * All pointers in `req` point into `buf`.
 */
int http_parse_request(const char *buf, size_t len, const struct http_limits *lim,
		       struct http_request *req, struct http_error *err);

/*
 * RFC 9112 section 3.2, checked on a request http_parse_request accepted:
 * an HTTP/1.1 request must carry exactly one Host header (none, or two or
 * more, is 400); HTTP/1.0 may omit it but may not repeat it.  Kept apart
 * from the framing parser because it says nothing about where a request
 * ends: the server answers 400 with the request already framed.  Returns
 * HTTP_PARSE_OK, or HTTP_PARSE_ERROR with `err` (may be NULL) filled.
 */
int http_check_host(const struct http_request *req, struct http_error *err);

/* Case-insensitive header lookup; returns the first match or NULL. */
const struct http_header *http_find_header(const struct http_request *req, const char *name);

/* Reason phrase for a status code ("OK", "Not Found", ...; "Unknown" else). */
const char *http_reason(int status);

/*
 * Query-string helper: find `key` in an application/x-www-form-urlencoded
 * query and percent-decode its value into out (NUL-terminated).  Returns the
 * decoded length, -1 if absent, -2 if malformed or longer than out_size-1.
 */
int http_query_get(const char *query, size_t query_len, const char *key,
		   char *out, size_t out_size);

#endif
