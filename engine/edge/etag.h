/*
 * etag.h -- entity tags and conditional writes (RFC 9110 sections 8.8.3 and
 * 13.1.1) for every resource the API serves; see etag.c for the why.
 */
#ifndef WM_ETAG_H
#define WM_ETAG_H

#include <stddef.h>

struct api_ctx;

/* "W/" never: our tags are strong.  Quoted, 32 hex digits: 34 bytes + NUL. */
#define ETAG_LEN 35

/*
 * Evaluate If-Match for a write whose resource has a GET route (see etag.c).
 * 0: no If-Match, no resource to compare with, the resource is not visible
 * to the caller (the handler then answers its own 404), or the condition
 * holds -- run the handler.  -1: the condition failed and the 412
 * precondition_failed problem (or a 400 for a malformed header) is written.
 */
int etag_precondition(struct api_ctx *c);

/*
 * After a handler ran: add `ETag` to a 200 GET of one resource (a route
 * with a path parameter), and to a 2xx write that names a resource with a
 * GET route (its own path, the resource an action acts on, or the one a
 * create made, named by the body's "id").  The tag of a write is the tag a
 * GET by the same caller returns next.  A handler that set its own ETag
 * (media content: its sha256) keeps it.
 */
void etag_stamp(struct api_ctx *c);

/*
 * The If-Match rule on one header value v[0..n) (untrusted bytes, not
 * NUL-terminated): 1 when a comma-separated member, optional whitespace
 * trimmed, is `*` or exactly the strong tag `tag` (NUL-terminated, quoted);
 * else 0.  Weak (W/) and malformed members never match.  Reads only
 * v[0..n).  Pure: fuzzed by tests/fuzz/fuzz_etag.c.
 */
int etag_list_matches(const char *v, size_t n, const char *tag);

#endif
