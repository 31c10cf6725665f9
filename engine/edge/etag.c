/*
 * etag.c -- entity tags and conditional writes for every resource (see
 * etag.h; RFC 9110 sections 8.8.3 and 13.1.1; issue 21 item 9).
 *
 * Two partners' tools editing one offer must not silently overwrite each
 * other: a client reads a resource (GET -> ETag), changes it, and sends
 * the write with `If-Match: <that tag>`; if someone changed the resource in
 * between, the write is refused with 412 precondition_failed and changes
 * nothing.  Before this file a stale If-Match was ignored and the update
 * applied.  What we do, and why:
 *
 *  - One mechanism for all resources, driven by the route table, not a hook
 *    in each handler: the resource a write acts on is the GET route that
 *    names it -- the write's own path (PATCH /v1/partners/{id}), the
 *    resource an action changes (POST /v1/orders/{id}/cancel ->
 *    /v1/orders/{id}: the longest path prefix ending in a parameter that
 *    has a GET route), or, after a create into a collection (POST
 *    /v1/offers), the collection's GET /{id} route with the "id" of the
 *    created body.  A write with no such GET route (inventory levels,
 *    holds, quotes) gets no ETag and ignores If-Match: there is no
 *    representation a client could have validated.
 *
 *  - The tag is the representation's own: XXH3-128 of the GET route
 *    pattern, content type and body bytes that a GET by the same caller
 *    returns, as 32 hex digits in quotes.  Any change the caller can see
 *    changes the bytes (most resources also carry `updated_at`), so the
 *    tag changes with the resource's version as this caller sees it; two
 *    role views of one row differ in bytes and so never share a tag.  Equal
 *    bytes give an equal tag, which is what a strong validator promises
 *    (RFC 9110 8.8.1: byte-identical representations); a resource that
 *    returns to earlier bytes without an `updated_at` gets its earlier tag
 *    back, and a write conditioned on it is then rightly applied to the
 *    same representation the client read.  128 bits make an accidental
 *    collision negligible.  The tag is computed, never stored: no WAL
 *    record or snapshot format changes, and it cannot go stale behind the
 *    data (a per-row LSN would make a cheaper version stamp; the body
 *    hash needs nothing from table.c).  A handler that sets its own
 *    strong ETag (media content: the sha256 of the bytes) keeps it.
 *
 *  - A write's current and new tags come from running the GET handler on
 *    the resource's path as the same caller into a private response (a
 *    "probe"): the probe charges no record quota and is not audited (the
 *    caller did not read anything; the write itself is audited as usual).
 *    Cost: one extra serialisation per write that names a resource, and
 *    one more when it sends If-Match -- small beside the fsync every write
 *    waits for.
 *
 *  - Order of checks: the precondition is evaluated after authentication
 *    and inside the idempotency step (a retried write with the same key
 *    replays its stored answer instead of failing its own precondition),
 *    before the handler; when the resource does not exist or is not
 *    visible to the caller the handler runs and answers its own 404 (a 412
 *    would reveal nothing more, but one code path keeps 404 identical for
 *    "absent" and "not yours").  RFC 9110 section 13.2.1: a 412 wins over
 *    validating the request content.  Comparison is strong: a `W/` tag
 *    never matches; `*` matches any existing resource.  Malformed members
 *    of the list simply do not match.
 *
 *  - A 412 changed nothing, so the idempotency layer does not remember it
 *    (only committed writes are), and a corrected retry runs afresh.
 */
#include "engine/edge/etag.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack (tag_of) */
#include <xxhash.h>
#define XXH_DISPATCH_DISABLE_REPLACE
#include <xxh_x86dispatch.h> /* the body's pass picks AVX2/AVX-512 when the CPU has them */

#include "engine/edge/api.h"
#include "net/buf.h"
#include "net/hex.h"

/* Bounds (limits as data). */
#define ETAG_MAX_PATH 512    /* a resource path we probe; longer: no tag */
#define ETAG_ID_MAX 128      /* the "id" of a created resource */

static int seg_count(const char *p, size_t n)
{
	int k = 0;
	for (size_t i = 0; i < n; i++)
		k += p[i] == '/';
	return k;
}

/* The GET route whose pattern is exactly pat[0..n), or NULL. */
static const struct route *get_route(const char *pat, size_t n)
{
	for (const struct route *r = api_route_table(); r->pattern; r++)
		if (r->method == HTTP_M_GET && strlen(r->pattern) == n && memcmp(r->pattern, pat, n) == 0)
			return r;
	return NULL;
}

/* The GET route "<pat>/{x}" (one more segment, a parameter), or NULL. */
static const struct route *child_route(const char *pat)
{
	size_t n = strlen(pat);
	for (const struct route *r = api_route_table(); r->pattern; r++)
		if (r->method == HTTP_M_GET && strncmp(r->pattern, pat, n) == 0 && r->pattern[n] == '/' &&
		    r->pattern[n + 1] == '{' && !strchr(r->pattern + n + 1, '/'))
			return r;
	return NULL;
}

static int ends_in_param(const char *pat, size_t n) { return n > 0 && pat[n - 1] == '}'; }

/*
 * The resource route a write acts on, and how many leading path segments
 * of the request path name it.  *create = 1 when the write creates into a
 * collection (the resource is then named by the response's "id").  NULL
 * when there is no GET route for it.
 */
static const struct route *write_target(const char *pat, int *nseg, int *create)
{
	size_t n = strlen(pat);
	*create = 0;
	const struct route *g = get_route(pat, n);
	if (g && !ends_in_param(pat, n)) {
		*create = 1;
		return child_route(pat);
	}
	for (;;) {
		if (ends_in_param(pat, n) && (g = get_route(pat, n)) != NULL) {
			*nseg = seg_count(pat, n);
			return g;
		}
		const char *slash = n ? memrchr(pat, '/', n) : NULL;
		if (!slash || slash == pat)
			return NULL;
		n = (size_t)(slash - pat);
	}
	return NULL;
}

/*
 * write_target for a route's pattern, worked out once per pattern: the
 * route tables are built once for the life of the process, and the scan
 * of every route (a strlen and a compare each) on every write was ~1 % of
 * a quote's CPU.  Keyed by the pattern's address (each route's string);
 * a full memo falls back to the scan.  The loop's thread only.
 */
#define ETAG_MEMO_SLOTS 512 /* > API_MAX_ROUTES and the internal routes */
static const struct route *write_target_once(const char *pat, int *nseg, int *create)
{
	static struct {
		const char *pat;
		const struct route *g;
		int nseg, create;
	} memo[ETAG_MEMO_SLOTS];
	size_t h = ((uintptr_t)pat >> 3) % ETAG_MEMO_SLOTS;
	for (size_t i = 0; i < ETAG_MEMO_SLOTS; i++, h = (h + 1) % ETAG_MEMO_SLOTS) {
		if (!memo[h].pat) {
			memo[h].nseg = memo[h].create = 0;
			memo[h].g = write_target(pat, &memo[h].nseg, &memo[h].create);
			memo[h].pat = pat;
		}
		if (memo[h].pat == pat) {
			*nseg = memo[h].nseg;
			*create = memo[h].create;
			return memo[h].g;
		}
	}
	return write_target(pat, nseg, create);
}

/* Length of the first nseg segments of path[0..len). */
static size_t path_prefix(const char *path, size_t len, int nseg)
{
	int k = 0;
	for (size_t i = 0; i < len; i++)
		if (path[i] == '/' && ++k > nseg)
			return i;
	return len;
}

/* The tag of a representation: quoted hex of XXH3-128 over the route
 * pattern, content type and body. */
static void tag_of(const char *pattern, const char *ctype, const struct buf *body, char out[ETAG_LEN])
{
	XXH3_state_t st; /* on the stack: a malloc and a free per response were ~5 % of tagging one */
	XXH3_128bits_reset(&st);
	XXH3_128bits_update(&st, pattern, strlen(pattern) + 1);
	const char *ct = ctype ? ctype : "application/json";
	XXH3_128bits_update(&st, ct, strlen(ct) + 1);
	/* a response body is KBs: the vector-width dispatch pays off (the two
	 * strings above are a few bytes each) */
	XXH3_128bits_update_dispatch(&st, body->data ? body->data : "", body->len);
	XXH128_hash_t h = XXH3_128bits_digest(&st);
	XXH128_canonical_t cano;
	XXH128_canonicalFromHash(&cano, h);
	out[0] = '"';
	hex_encode(cano.digest, 16, out + 1);
	out[33] = '"';
	out[34] = 0;
}

/* Append the header line "ETag: <tag>" to headers (no format parsing). */
static void etag_header(struct buf *headers, const char *tag)
{
	BUF_LIT(headers, "ETag: ");
	buf_puts(headers, tag);
	BUF_LIT(headers, "\r\n");
}

/* An "ETag: value" line the handler added itself, copied into out; 0 if
 * there is one. */
static int own_etag(const struct buf *headers, char out[ETAG_LEN + 64])
{
	static const char name[] = "ETag: ";
	const char *p = headers->data, *end = p + headers->len;
	while (p && p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *stop = eol ? eol : end;
		size_t n = (size_t)(stop - p);
		if (n > sizeof(name) - 1 && strncasecmp(p, name, sizeof(name) - 1) == 0) {
			const char *v = p + sizeof(name) - 1;
			size_t vl = (size_t)(stop - v);
			if (vl && v[vl - 1] == '\r')
				vl--;
			if (vl >= ETAG_LEN + 64)
				return -1;
			memcpy(out, v, vl);
			out[vl] = 0;
			return 0;
		}
		p = eol ? eol + 1 : NULL;
	}
	return -1;
}

/*
 * Run GET route r on path[0..len) as the caller into a private response
 * and put the representation's tag into tag.  Returns the GET's status (0
 * when it could not run).  The probe charges no quota and is not audited.
 */
static int probe(struct api_ctx *c, const struct route *r, const char *path, size_t len,
		 char tag[ETAG_LEN + 64])
{
	struct http_request h = *c->http;
	h.method = HTTP_M_GET;
	h.method_str = "GET";
	h.method_len = 3;
	h.target = path;
	h.target_len = (uint32_t)len;
	h.path = path;
	h.path_len = (uint32_t)len;
	h.query = "";
	h.query_len = 0;
	h.body = NULL;
	h.body_len = 0;
	struct srv_response rs;
	memset(&rs, 0, sizeof(rs));
	buf_init(&rs.headers, 64 << 10);
	buf_init(&rs.body, 0);
	struct api_ctx *p = calloc(1, sizeof(*p));
	if (!p)
		abort();
	p->sh = c->sh;
	p->rq = c->rq;
	p->http = &h;
	p->rs = &rs;
	p->route = r;
	p->who = c->who;
	p->probe = 1;
	jw_init(&p->w, &rs.body);
	int status = 0;
	if (api_route_bind(r->pattern, path, (uint32_t)len, p)) {
		r->fn(p);
		status = p->w.err ? 500 : rs.status;
	}
	json_doc_free(p->body);
	if (status == 200 && own_etag(&rs.headers, tag) != 0)
		tag_of(r->pattern, rs.content_type, &rs.body, tag);
	free(p);
	buf_free(&rs.headers);
	buf_free(&rs.body);
	return status;
}

/* Does one If-Match list element (trimmed) match the current tag? */
static int member_matches(const char *m, size_t n, const char *tag)
{
	if (n == 1 && m[0] == '*')
		return 1;
	return n == strlen(tag) && n >= 2 && m[0] == '"' && memcmp(m, tag, n) == 0;
}

int etag_list_matches(const char *v, size_t n, const char *tag)
{
	const char *p = v, *end = v + n;
	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *stop = comma ? comma : end;
		const char *a = p, *b = stop;
		while (a < b && (*a == ' ' || *a == '\t'))
			a++;
		while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
			b--;
		if (member_matches(a, (size_t)(b - a), tag))
			return 1;
		p = comma ? comma + 1 : end;
	}
	return 0;
}

/* Does any element of any If-Match header match? 1 yes, 0 no, -1 no header. */
static int if_match(const struct http_request *h, const char *tag)
{
	int seen = 0;
	for (uint32_t i = 0; i < h->n_headers; i++) {
		const struct http_header *x = &h->headers[i];
		if (x->name_len != 8 || strncasecmp(x->name, "if-match", 8) != 0)
			continue;
		seen = 1;
		if (etag_list_matches(x->value, x->value_len, tag))
			return 1;
	}
	return seen ? 0 : -1;
}

int etag_precondition(struct api_ctx *c)
{
	if (!http_find_header(c->http, "if-match"))
		return 0;
	int nseg = 0, create = 0;
	const struct route *g = write_target_once(c->route->pattern, &nseg, &create);
	if (!g || create)
		return 0;
	size_t len = path_prefix(c->http->path, c->http->path_len, nseg);
	char tag[ETAG_LEN + 64];
	if (probe(c, g, c->http->path, len, tag) != 200)
		return 0; /* absent or not visible: the handler answers its 404 */
	if (if_match(c->http, tag) == 1)
		return 0;
	char detail[320];
	snprintf(detail, sizeof(detail),
		 "If-Match does not match the resource's current ETag %s: it changed since you read it; GET "
		 "it again and reapply your change",
		 tag);
	api_error(c, 412, "precondition_failed", detail);
	return -1;
}

/* The "id" string member at the top of a JSON object body, into out.  The
 * body is this request's own response, so a scan finds it (an order's
 * answer is ~5 KB: parsing it whole was a tenth of an order's CPU). */
static int body_id(const struct buf *body, char *out, size_t out_size)
{
	const char *id;
	size_t n;
	if (json_scan_top_string(body->data, body->len, "id", &id, &n) || n == 0 || n >= out_size ||
	    memchr(id, '/', n) || memchr(id, 0, n))
		return -1;
	memcpy(out, id, n);
	out[n] = 0;
	return 0;
}

void etag_stamp(struct api_ctx *c)
{
	struct srv_response *rs = c->rs;
	const struct route *r = c->route;
	char tag[ETAG_LEN + 64];
	if (rs->status < 200 || rs->status > 299 || c->w.err || own_etag(&rs->headers, tag) == 0)
		return;
	if (r->method == HTTP_M_GET) {
		if (rs->status != 200 || !strchr(r->pattern, '{'))
			return;
		tag_of(r->pattern, rs->content_type, &rs->body, tag);
		etag_header(&rs->headers, tag);
		return;
	}
	int nseg = 0, create = 0;
	const struct route *g = write_target_once(r->pattern, &nseg, &create);
	if (!g)
		return;
	char path[ETAG_MAX_PATH];
	size_t len;
	if (create && rs->status == 201 && (r->flags & ROUTE_F_CREATE_IS_VIEW)) {
		tag_of(g->pattern, rs->content_type, &rs->body, tag);
		etag_header(&rs->headers, tag);
		return;
	}
	if (create) {
		char id[ETAG_ID_MAX];
		if (body_id(&rs->body, id, sizeof(id)))
			return;
		int n = snprintf(path, sizeof(path), "%.*s/%s", (int)c->http->path_len, c->http->path, id);
		if (n < 0 || (size_t)n >= sizeof(path))
			return;
		len = (size_t)n;
	} else {
		len = path_prefix(c->http->path, c->http->path_len, nseg);
		if (len >= sizeof(path))
			return;
		memcpy(path, c->http->path, len);
	}
	if (probe(c, g, path, len, tag) == 200)
		etag_header(&rs->headers, tag);
}
