/*
 * portal.h -- the partner portal (issue 19): static files embedded in the
 * router (portal_blob.c) and served at /portal/ with strict security
 * headers.  The page itself talks only to the public API (portal.js).
 */
#ifndef WM_PORTAL_H
#define WM_PORTAL_H

#include <stddef.h>

#include "net/http.h"
#include "net/server.h"

/* The Content-Security-Policy of every portal response: scripts, styles,
 * images and API calls from this origin only, no inline code, no framing. */
#define PORTAL_CSP                                                                                                 \
	"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "     \
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

/* 1 when path (path_len bytes, no query) is the portal's: "/portal" or
 * anything under "/portal/". */
int portal_owns(const char *path, size_t path_len);

/* Answer a request portal_owns: GET or HEAD of a known file (200, or 304
 * when If-None-Match names its ETag), "/portal" a 308 to "/portal/", an
 * unknown file a 404 problem, another method a 405 with Allow.  Every
 * answer carries the security headers (PORTAL_CSP, nosniff,
 * Referrer-Policy no-referrer, X-Frame-Options DENY). */
void portal_answer(const struct http_request *h, struct srv_response *rs);

#endif
