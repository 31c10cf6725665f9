/*
 * portal.c -- serves the partner portal (issue 19) from the router.
 *
 * Why here: the spec says keys are "issued through the partner portal", and
 * the onboarding checklist is a person's path.  The portal is three static
 * files embedded at build time (portal_blob.c); the page then uses only
 * the public API on the same origin with the partner's own key, so the
 * router needs no session, cookie or private route for it, and everything
 * the portal does a partner's code can do.  Nothing here reads partner
 * data: the router answers these paths itself, before the edge (no key is
 * needed to load a sign-in page), and never forwards them to a shard.
 *
 * Security: every answer, errors included, carries a Content-Security-
 * Policy without inline script or style and with frame-ancestors 'none',
 * X-Content-Type-Options nosniff, Referrer-Policy no-referrer and
 * X-Frame-Options DENY (older browsers).  The files are revalidated
 * (Cache-Control no-cache) against a strong ETag, the xxh64 of the bytes.
 *
 * The paths are a web page, not API: they are not in api/openapi.json, and
 * the contract check (tests/contract/check.py) holds their answers only to
 * the rules of every response (X-Request-Id; errors are problem+json).
 */
#include "shard-router/portal.h"

#include <stdio.h>
#include <string.h>

#include <xxhash.h>

#include "net/buf.h"
#include "net/problem.h"

#define PORTAL_PREFIX "/portal/"
#define PORTAL_PREFIX_LEN (sizeof(PORTAL_PREFIX) - 1)
#define PORTAL_ETAG_MAX 24 /* "\"" + 16 hex + "\"" + NUL, rounded */

extern const char portal_index_html[], portal_index_html_end[];
extern const char portal_css[], portal_css_end[];
extern const char portal_js[], portal_js_end[];

/* The files, by the name after /portal/ ("" is the index). */
static const struct portal_file {
	const char *name;
	const char *type;
	const char *start, *end;
} portal_files[] = {
	{"", "text/html; charset=utf-8", portal_index_html, portal_index_html_end},
	{"index.html", "text/html; charset=utf-8", portal_index_html, portal_index_html_end},
	{"portal.css", "text/css; charset=utf-8", portal_css, portal_css_end},
	{"portal.js", "text/javascript; charset=utf-8", portal_js, portal_js_end},
};

/* The headers every portal answer carries. */
static const char portal_security_headers[] = "Content-Security-Policy: " PORTAL_CSP "\r\n"
					      "X-Content-Type-Options: nosniff\r\n"
					      "Referrer-Policy: no-referrer\r\n"
					      "X-Frame-Options: DENY\r\n"
					      "Cross-Origin-Opener-Policy: same-origin\r\n"
					      "Cross-Origin-Resource-Policy: same-origin\r\n";

int portal_owns(const char *path, size_t path_len)
{
	if (path_len == PORTAL_PREFIX_LEN - 1 && !memcmp(path, PORTAL_PREFIX, path_len))
		return 1;
	return path_len >= PORTAL_PREFIX_LEN && !memcmp(path, PORTAL_PREFIX, PORTAL_PREFIX_LEN);
}

/* The file named rest (rest_len bytes after /portal/), or NULL. */
static const struct portal_file *portal_find(const char *rest, size_t rest_len)
{
	for (size_t i = 0; i < sizeof(portal_files) / sizeof(portal_files[0]); i++)
		if (strlen(portal_files[i].name) == rest_len && !memcmp(portal_files[i].name, rest, rest_len))
			return &portal_files[i];
	return NULL;
}

/* 1 when the If-None-Match header lists etag (or is "*"). */
static int portal_etag_matches(const struct http_request *h, const char *etag)
{
	const struct http_header *inm = http_find_header(h, "If-None-Match");
	if (!inm)
		return 0;
	size_t el = strlen(etag);
	const char *v = inm->value, *end = inm->value + inm->value_len;
	while (v < end) {
		while (v < end && (*v == ' ' || *v == ','))
			v++;
		const char *s = v;
		while (v < end && *v != ',')
			v++;
		const char *e = v;
		while (e > s && e[-1] == ' ')
			e--;
		if ((size_t)(e - s) == 1 && *s == '*')
			return 1;
		if ((size_t)(e - s) == el && !memcmp(s, etag, el))
			return 1;
	}
	return 0;
}

static void portal_problem(struct srv_response *rs, int status, const char *code, const char *detail)
{
	buf_reset(&rs->body);
	rs->status = status;
	rs->content_type = PROBLEM_CONTENT_TYPE;
	problem_write(&rs->body, status, code, http_reason(status), detail);
}

void portal_answer(const struct http_request *h, struct srv_response *rs)
{
	rs->route = "/portal/";
	buf_puts(&rs->headers, portal_security_headers);
	if (h->method != HTTP_M_GET && h->method != HTTP_M_HEAD) {
		portal_problem(rs, 405, "method_not_allowed", "the portal's files are read with GET or HEAD");
		buf_puts(&rs->headers, "Allow: GET, HEAD\r\n");
		return;
	}
	if (h->path_len == PORTAL_PREFIX_LEN - 1) {
		rs->status = 308;
		rs->content_type = "text/plain; charset=utf-8";
		buf_puts(&rs->headers, "Location: " PORTAL_PREFIX "\r\n");
		buf_puts(&rs->body, "the portal is at " PORTAL_PREFIX "\n");
		return;
	}
	const struct portal_file *f = portal_find(h->path + PORTAL_PREFIX_LEN, h->path_len - PORTAL_PREFIX_LEN);
	if (!f) {
		portal_problem(rs, 404, "not_found", "the portal has no such file");
		return;
	}
	size_t len = (size_t)(f->end - f->start);
	char etag[PORTAL_ETAG_MAX];
	snprintf(etag, sizeof(etag), "\"%016llx\"", (unsigned long long)XXH64(f->start, len, 0));
	buf_printf(&rs->headers, "ETag: %s\r\nCache-Control: no-cache\r\n", etag);
	rs->content_type = f->type;
	if (portal_etag_matches(h, etag)) {
		rs->status = 304;
		return;
	}
	rs->status = 200;
	buf_append(&rs->body, f->start, len);
}
