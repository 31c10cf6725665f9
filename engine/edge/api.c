/*
 * api.c -- request dispatch and the helpers handlers share (see api.h).
 *
 * Routing is a linear walk over a small table of patterns, segment by
 * segment, with "{name}" matching one non-empty segment.  With a few dozen
 * routes this costs well under a microsecond and keeps the route table the
 * single source of truth (the OpenAPI test reads the same table).
 */
#include "engine/edge/api.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "engine/edge/audit.h"
#include "engine/edge/auth.h"
#include "engine/edge/etag.h"
#include "engine/edge/idem.h"
#include "engine/edge/park.h"
#include "engine/base/log.h"
#include "engine/cluster/cluster_auth.h"
#include "engine/cluster/internal_headers.h"
#include "engine/cluster/route_class.h"
#include "engine/cluster/shard_map.h"

/* ---- routing ----------------------------------------------------------- */

/* Match path against pattern; fills params.  1 on match. */
static int route_match(const char *pat, const char *path, uint32_t plen, struct api_ctx *c)
{
	const char *p = path, *end = path + plen;
	unsigned np = 0;
	while (*pat) {
		if (*pat == '{') {
			const char *close = strchr(pat, '}');
			const char *seg_end = memchr(p, '/', (size_t)(end - p));
			if (!seg_end)
				seg_end = end;
			if (seg_end == p || np >= API_MAX_PARAMS)
				return 0;
			c->params[np].p = p;
			c->params[np].len = (uint32_t)(seg_end - p);
			np++;
			p = seg_end;
			pat = close + 1;
			continue;
		}
		if (p >= end || *p != *pat)
			return 0;
		p++;
		pat++;
	}
	if (p != end)
		return 0;
	c->n_params = np;
	return 1;
}

int api_route_bind(const char *pattern, const char *path, uint32_t plen, struct api_ctx *c)
{
	return route_match(pattern, path, plen, c);
}

static const struct route *route_find(struct api_ctx *c, int *path_known)
{
	const struct http_request *h = c->http;
	enum http_method m = h->method == HTTP_M_HEAD ? HTTP_M_GET : h->method;
	*path_known = 0;
	const struct route *table = c->internal ? api_internal_route_table() : api_route_table();
	for (const struct route *r = table; r->pattern; r++) {
		if (!route_match(r->pattern, h->path, h->path_len, c))
			continue;
		*path_known = 1;
		if (r->method == m)
			return r;
	}
	return NULL;
}

static void allow_header(struct api_ctx *c)
{
	struct buf *hb = &c->rs->headers;
	buf_puts(hb, "Allow: ");
	int first = 1;
	static const char *const names[] = {"", "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"};
	for (const struct route *r = api_route_table(); r->pattern; r++) {
		if (!route_match(r->pattern, c->http->path, c->http->path_len, c))
			continue;
		buf_printf(hb, "%s%s", first ? "" : ", ", names[r->method]);
		first = 0;
	}
	buf_puts(hb, "\r\n");
}

static int is_write(enum http_method m)
{
	return m == HTTP_M_POST || m == HTTP_M_PUT || m == HTTP_M_PATCH || m == HTTP_M_DELETE;
}

/* Close the read set before anything that reads for the engine's own sake
 * (the audit); UINT64_MAX = unknown, resolved to the newest state. */
static void api_take_reveals(struct api_ctx *c)
{
	if (c->reveals_taken)
		return;
	c->reveals_lsn = table_reads_end(UINT64_MAX);
	c->reveals_taken = 1;
}

#define API_NOSPACE_RETRY_AFTER_S 10 /* Retry-After of a 507: the WAL retries its spare every 0.5 s */

/* 507 insufficient_storage (shard.h, "A full disk"). */
static void nospace_error(struct api_ctx *c)
{
	api_error(c, 507, "insufficient_storage",
		  "the data directory's file system is full: writes are refused until space is freed; reads go on");
	buf_printf(&c->rs->headers, "Retry-After: %d\r\n", API_NOSPACE_RETRY_AFTER_S);
}

/* Run a write handler unless the disk is full; a commit the WAL refused
 * during it turns the answer into a 507 (what it committed before, if
 * anything, is durable and a retry sees it). */
static void run_write(struct api_ctx *c)
{
	struct shard *sh = c->sh;
	if (shard_write_admit(sh)) {
		nospace_error(c);
		return;
	}
	c->route->fn(c);
	if (sh->nospace_in_request)
		nospace_error(c);
}

/*
 * The request pipeline of a routed request: identity (key, scope, action,
 * rate) -> idempotency (writes) -> If-Match (writes, etag.c) -> space
 * (writes) -> handler -> ETag (etag.c) -> audit (reads).  Public routes skip
 * identity, idempotency, the ETag and audit.
 */
static void api_run(struct api_ctx *c)
{
	const struct route *r = c->route;
	c->sh->nospace_in_request = 0;
	if (r->scope == SC_PUBLIC) {
		if (is_write(r->method))
			run_write(c);
		else
			r->fn(c);
		return;
	}
	if (auth_request(c) == 0) {
		int ran = 1;
		if (is_write(r->method) && !(r->flags & ROUTE_F_OWN_IDEM)) {
			ran = idem_begin(c) == 0;
			if (ran) {
				if (etag_precondition(c) == 0)
					run_write(c);
				idem_end(c);
			}
		} else if (is_write(r->method)) {
			run_write(c);
		} else {
			r->fn(c);
		}
		if (ran)
			etag_stamp(c); /* not on a replay: its body is the stored one */
	}
	api_take_reveals(c);
	if (c->who.authenticated && !is_write(r->method))
		audit_read(c);
}

/* ---- cluster mode (DESIGN.md 9) --------------------------------------- */

#define API_INTERNAL_PREFIX "/internal/"

/* The request carries a valid router/shard signature (cluster_auth.h). */
static int cluster_signed(struct api_ctx *c)
{
	const struct http_request *h = c->http;
	const struct http_header *sig = http_find_header(h, CK_HEADER_NAME);
	if (!sig)
		return 0;
	return ck_verify(c->sh->ckey, h->method_str, h->method_len, h->target, h->target_len, h->body, h->body_len,
			 sig->value, sig->value_len, (int64_t)time(NULL), CK_DEFAULT_SKEW_S) == CK_OK;
}

/* 421: the request is for data another shard owns; the map version tells
 * a router with an older map to reload before it retries. */
static void cluster_misdirected(struct api_ctx *c, const char *what)
{
	char d[160];
	snprintf(d, sizeof(d), "this shard does not own %s (shard map version %llu)", what,
		 (unsigned long long)c->sh->smap_version);
	api_error(c, 421, "misdirected_request", d);
	buf_printf(&c->rs->headers, WM_H_MAP_VERSION ": %llu\r\n", (unsigned long long)c->sh->smap_version);
}

/* Does this shard own the request (route_class.h)?  Writes to the
 * catalogue belong to the home; a path id names its country's shard, and
 * so does the country a body names (a location, a level, an order's
 * destination: a replica must never take a write for a row another shard
 * owns -- the owner's copy would collide with it).  Catalogue reads are
 * served from the replica. */
static int cluster_owns(struct api_ctx *c)
{
	const struct http_request *h = c->http;
	const struct rc_rule *r = rc_find(h->method, h->path, h->path_len);
	uint64_t me = c->sh->cfg.shard_id;
	if (!r)
		return 1;
	if (r->kind == RC_HOME && is_write(h->method) && me != 0) {
		cluster_misdirected(c, "catalogue writes: they go to the catalogue home, shard 0");
		return 0;
	}
	char cc[3];
	if ((r->kind == RC_PATH_ID && rc_path_country(r, h->path, h->path_len, cc)) ||
	    (r->kind == RC_BODY && rc_body_country(r, h->body, h->body_len, cc))) {
		int owner = smap_owner(c->sh->smap, cc);
		if (owner >= 0 && (uint64_t)owner != me) {
			char what[48];
			snprintf(what, sizeof(what), "country %s", cc);
			cluster_misdirected(c, what);
			return 0;
		}
	}
	return 1;
}

/*
 * The cluster gate, before routing: /internal/ needs a valid signature
 * (then the internal table serves it); a partner route needs the
 * router's signature and must be this shard's.  0 = go on, 1 = answered.
 */
static int cluster_gate(struct api_ctx *c)
{
	const struct http_request *h = c->http;
	size_t pl = sizeof(API_INTERNAL_PREFIX) - 1;
	c->internal = h->path_len >= pl && memcmp(h->path, API_INTERNAL_PREFIX, pl) == 0;
	if (!c->sh->ckey) {
		c->internal = 0; /* a cluster of one has no internal routes: 404 */
		return 0;
	}
	int known;
	const struct route *r = route_find(c, &known);
	const struct rc_rule *rule = rc_find(h->method, h->path, h->path_len);
	/* the process's own routes (/metrics with an operator key) stay
	 * reachable without a router */
	int needs_sig = c->internal || (r && r->scope != SC_PUBLIC && !(rule && rule->kind == RC_EDGE));
	if (needs_sig && !cluster_signed(c)) {
		c->rs->route = c->internal ? "-internal" : "-unsigned";
		api_error(c, 401, "cluster_signature_required",
			  c->internal ? "internal routes need a valid cluster signature"
				      : "this shard is part of a cluster: partner requests come through the router");
		return 1;
	}
	if (!c->internal && r && r->scope != SC_PUBLIC && !cluster_owns(c)) {
		c->rs->route = r->pattern;
		return 1;
	}
	/* read-your-writes: wait (bounded) for the replica of the caller's
	 * last write */
	if (needs_sig && !c->internal && park_check(c)) {
		c->rs->route = r ? r->pattern : "-";
		return 1;
	}
	c->cluster_signed = needs_sig;
	/* a router merging one page per shard (shard-router/fanout.h) needs
	 * the shard cursor after each row */
	c->fanout = needs_sig && http_find_header(h, WM_H_FANOUT) != NULL;
	return 0;
}

void api_handle(void *app, const struct srv_request *rq, struct srv_response *rs)
{
	struct shard *sh = app;
	struct api_ctx c;
	memset(&c, 0, offsetof(struct api_ctx, errs));
	c.n_errs = 0;
	c.sh = sh;
	c.rq = rq;
	c.http = rq->http;
	c.rs = rs;
	jw_init(&c.w, &rs->body);
	uint64_t state_before = sh->state_lsn;
	table_reads_begin();
	int known = 0;
	const struct route *r = NULL;
	if (cluster_gate(&c))
		goto answered;
	r = route_find(&c, &known);
	if (!r) {
		rs->route = known ? "-method" : "-unknown";
		if (known) {
			allow_header(&c);
			api_error(&c, 405, "method_not_allowed", "this path does not support that method");
		} else {
			api_error(&c, 404, "not_found", "no such endpoint");
		}
	} else {
		c.route = r;
		rs->route = r->pattern;
		if (c.internal)
			r->fn(&c); /* signed by the cluster: no partner identity */
		else
			api_run(&c);
	}
answered:
	json_doc_free(c.body);
	if (c.w.err) {
		buf_reset(&rs->body);
		problem_write(&rs->body, 500, "response_too_large", "Internal Server Error",
			      "the response could not be built");
		rs->status = 500;
		rs->content_type = PROBLEM_CONTENT_TYPE;
	}
	/*
	 * The LSN the response waits for: what it reveals.  A request that
	 * committed state depends on its own commit (the newest state); one
	 * that only read depends on the rows it read (DESIGN.md section 3), so
	 * a /healthz, a 401 or a read of old rows never waits for another
	 * connection's fsync.
	 */
	api_take_reveals(&c);
	if (sh->state_lsn != state_before || c.reveals_lsn == UINT64_MAX)
		rs->lsn = sh->state_lsn;
	else
		rs->lsn = c.reveals_lsn;
	/* a router remembers the position of the caller's writes
	 * (read-your-writes, engine/edge/park.h) */
	if (c.cluster_signed && sh->state_lsn != state_before)
		buf_printf(&rs->headers, WM_H_LSN ": %llu\r\n", (unsigned long long)sh->state_lsn);
}

void api_done(void *app, const struct srv_request *rq, const struct srv_response *rs,
	      uint64_t latency_us)
{
	struct shard *sh = app;
	metrics_record(&sh->metrics, rs->route, rs->status, latency_us);
	/* replication polls (engine/replication/: every shard asks every other
	 * one up to every 50 ms when idle) are counted in /metrics but not
	 * logged line by line when they succeed */
	static const char repl_prefix[] = "/internal/replication/";
	int repl_poll = rs->status == 200 && rs->route && !strncmp(rs->route, repl_prefix, sizeof(repl_prefix) - 1);
	if (sh->cfg.access_log && !repl_poll) {
		const struct http_request *h = rq->http;
		log_info("msg=access request_id=%s peer=%s method=%.*s path=\"%.*s\" route=\"%s\" status=%d "
			 "bytes=%zu us=%llu lsn=%llu",
			 rq->request_id, rq->peer, h ? (int)h->method_len : 1, h ? h->method_str : "-",
			 h ? (int)(h->path_len > 200 ? 200 : h->path_len) : 1, h ? h->path : "-",
			 rs->route ? rs->route : "-", rs->status, rs->body.len,
			 (unsigned long long)latency_us, (unsigned long long)rs->lsn);
	}
}

/* ---- responses --------------------------------------------------------- */

static const char *status_title(int status) { return http_reason(status); }

void api_error(struct api_ctx *c, int status, const char *code, const char *detail)
{
	buf_reset(&c->rs->body);
	jw_init(&c->w, &c->rs->body);
	c->rs->status = status;
	c->rs->content_type = PROBLEM_CONTENT_TYPE;
	problem_begin(&c->w, status, code, status_title(status), detail);
	problem_end(&c->w);
}

void api_field_error(struct api_ctx *c, const char *field, const char *rule, const char *fmt, ...)
{
	if (c->n_errs >= API_MAX_FIELD_ERRORS)
		return;
	unsigned i = c->n_errs++;
	snprintf(c->err_field[i], sizeof(c->err_field[i]), "%s", field);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err_msg[i], sizeof(c->err_msg[i]), fmt, ap);
	va_end(ap);
	c->errs[i] = (struct problem_field){c->err_field[i], rule, c->err_msg[i]};
}

void api_validation_failed(struct api_ctx *c)
{
	buf_reset(&c->rs->body);
	jw_init(&c->w, &c->rs->body);
	c->rs->status = 422;
	c->rs->content_type = PROBLEM_CONTENT_TYPE;
	problem_begin(&c->w, 422, "validation_failed", status_title(422),
		      "one or more fields are invalid; see errors[]");
	problem_fields(&c->w, c->errs, c->n_errs);
	problem_end(&c->w);
}

int api_read_row(struct api_ctx *c)
{
	if (!c->route || is_write(c->route->method) || c->probe)
		return 0;
	if (auth_quota_left(c) < 1) {
		auth_quota_refuse(c);
		return -1;
	}
	auth_quota_charge(c, 1);
	c->rows_returned = 1;
	return 0;
}

void api_send_doc(struct api_ctx *c, int status, const char *doc, size_t len)
{
	if (api_read_row(c))
		return;
	c->rs->status = status;
	buf_append(&c->rs->body, doc, len);
}

int api_owns(const struct api_ctx *c, const char *entity_id, size_t len)
{
	if (c->who.is_platform)
		return 1;
	const char *mine = c->who.entity_id;
	return mine && strlen(mine) == len && memcmp(mine, entity_id, len) == 0;
}

/* ---- requests ---------------------------------------------------------- */

static int content_type_is_json(const struct http_request *h)
{
	const struct http_header *ct = http_find_header(h, "content-type");
	if (!ct)
		return 0;
	static const char *const ok[] = {"application/json", "application/merge-patch+json"};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		size_t n = strlen(ok[i]);
		if (ct->value_len >= n && strncasecmp(ct->value, ok[i], n) == 0 &&
		    (ct->value_len == n || ct->value[n] == ';' || ct->value[n] == ' '))
			return 1;
	}
	return 0;
}

const struct json_value *api_body(struct api_ctx *c)
{
	if (c->body)
		return json_root(c->body);
	if (c->http->body_len == 0) {
		api_error(c, 400, "body_required", "this request needs a JSON object body");
		return NULL;
	}
	if (!content_type_is_json(c->http)) {
		api_error(c, 415, "unsupported_media_type", "send Content-Type: application/json");
		return NULL;
	}
	struct json_error je;
	c->body = json_parse(c->http->body, c->http->body_len, NULL, &je);
	if (!c->body) {
		char detail[256];
		snprintf(detail, sizeof(detail), "invalid JSON at line %u column %u (byte %zu): %s", je.line,
			 je.column, je.offset, je.msg);
		api_error(c, je.too_large ? 413 : 400, je.too_large ? "json_too_large" : "malformed_json", detail);
		return NULL;
	}
	const struct json_value *root = json_root(c->body);
	if (root->type != JSON_OBJECT) {
		api_error(c, 400, "malformed_json", "the body must be a JSON object");
		return NULL;
	}
	return root;
}

int api_query(struct api_ctx *c, const char *key, char *out, size_t out_size)
{
	return http_query_get(c->http->query, c->http->query_len, key, out, out_size);
}

int api_query_enum(struct api_ctx *c, const char *key, const char *const *names, int *out)
{
	char v[64];
	int n = api_query(c, key, v, sizeof(v));
	*out = -1;
	if (n == -1)
		return 0;
	for (int i = 0; n > 0 && names[i]; i++)
		if (!strcmp(names[i], v)) {
			*out = i;
			return 0;
		}
	char d[96];
	snprintf(d, sizeof(d), "unknown value for the %s filter", key);
	api_error(c, 400, "invalid_filter", d);
	return -1;
}

int api_param(struct api_ctx *c, unsigned i, char *out, size_t out_size)
{
	if (i >= c->n_params || c->params[i].len >= out_size)
		return -1;
	memcpy(out, c->params[i].p, c->params[i].len);
	out[c->params[i].len] = 0;
	return (int)c->params[i].len;
}

/* ---- lists ------------------------------------------------------------- */

int api_page_parse(struct api_ctx *c, struct api_page *pg)
{
	char v[512];
	pg->size = API_PAGE_DEFAULT;
	pg->has_cursor = 0;
	pg->cursor_len = 0;
	int n = api_query(c, "page_size", v, sizeof(v));
	if (n == -2 || n == 0) {
		api_error(c, 400, "invalid_page_size", "page_size must be an integer from 1 to 200");
		return -1;
	}
	if (n > 0) {
		char *end;
		unsigned long x = strtoul(v, &end, 10);
		if (*end || v[0] == '-' || v[0] == '+' || x < 1 || n > 6) {
			api_error(c, 400, "invalid_page_size", "page_size must be an integer from 1 to 200");
			return -1;
		}
		if (x > API_PAGE_MAX) {
			api_error(c, 400, "page_size_too_large", "page_size may be at most 200");
			return -1;
		}
		pg->size = (uint32_t)x;
	}
	n = api_query(c, "cursor", v, sizeof(v));
	if (n == -2 || n == 0) {
		api_error(c, 400, "invalid_cursor", "cursor is not one this API returned");
		return -1;
	}
	if (n > 0) {
		int k = b64url_decode(v, (size_t)n, pg->cursor, sizeof(pg->cursor) - 1);
		if (k <= 0) {
			api_error(c, 400, "invalid_cursor", "cursor is not one this API returned");
			return -1;
		}
		pg->cursor_len = (uint32_t)k;
		pg->has_cursor = 1;
		if ((size_t)n < sizeof(c->span_from))
			memcpy(c->span_from, v, (size_t)n + 1);
	}
	return 0;
}

/* The source api_list() walks: one ordered index from a position, bounded
 * by a key prefix. */
struct oidx_source {
	struct oidx_iter it;
	int ok;
	const void *prefix;
	uint32_t prefix_len;
};

static int oidx_source_next(void *self, const struct row **r, const void **key, uint32_t *key_len)
{
	struct oidx_source *s = self;
	if (!s->ok)
		return 0;
	*key = oidx_iter_key(&s->it, key_len);
	if (s->prefix_len && (*key_len < s->prefix_len || memcmp(*key, s->prefix, s->prefix_len))) {
		s->ok = 0;
		return 0;
	}
	*r = oidx_iter_val(&s->it);
	s->ok = oidx_next(&s->it);
	return 1;
}

void api_list_empty(struct api_ctx *c)
{
	static const char empty[] = "{\"data\":[],\"next_cursor\":null,\"has_more\":false}";
	c->rs->status = 200;
	buf_append(&c->rs->body, empty, sizeof(empty) - 1);
}

uint32_t api_list(struct api_ctx *c, const struct oidx *idx, const void *prefix,
		  uint32_t prefix_len, const struct api_page *pg, api_row_filter filter, void *arg,
		  api_row_emit emit)
{
	struct oidx_source s = {.prefix = prefix, .prefix_len = prefix_len};
	if (pg->has_cursor) {
		if (prefix_len && (pg->cursor_len < prefix_len || memcmp(pg->cursor, prefix, prefix_len))) {
			api_error(c, 400, "invalid_cursor", "cursor does not belong to this list");
			return 0;
		}
		s.ok = oidx_seek_ge(idx, pg->cursor, pg->cursor_len, &s.it);
		uint32_t kl;
		const void *k;
		if (s.ok && (k = oidx_iter_key(&s.it, &kl)) && kl == pg->cursor_len &&
		    memcmp(k, pg->cursor, kl) == 0)
			s.ok = oidx_next(&s.it);
	} else {
		s.ok = oidx_seek_ge(idx, prefix, prefix_len, &s.it);
	}
	struct api_source src = {.next = oidx_source_next, .self = &s};
	return api_list_source(c, &src, pg, filter, arg, emit);
}

uint32_t api_list_source(struct api_ctx *c, struct api_source *src, const struct api_page *pg,
			 api_row_filter filter, void *arg, api_row_emit emit)
{
	uint32_t quota = auth_quota_left(c);
	struct jw *w = &c->w;
	jw_obj_begin(w);
	jw_key(w, "data");
	jw_arr_begin(w);
	uint32_t n = 0, examined = 0;
	int more = 0;
	struct buf curs; /* fan-out: the cursor after each returned row, as JSON strings */
	buf_init(&curs, 0);
	const void *last_key = NULL, *k;
	uint32_t last_len = 0, kl;
	const struct row *r;
	while (src->next(src->self, &r, &k, &kl)) {
		if (src->budget && examined == src->budget) {
			/* The page's work bound: stop here, resume after the last
			 * row examined (returned or not). */
			more = 1;
			break;
		}
		examined++;
		if (filter && !filter(c, r, arg)) {
			if (src->budget) {
				last_key = k;
				last_len = kl;
			}
			continue;
		}
		if (n == pg->size) {
			more = 1;
			break;
		}
		if (n == quota) {
			/* This page needs more rows than the quota leaves: refuse
			 * the whole read, saying nothing about what exists. */
			auth_quota_refuse(c);
			src->examined = examined;
			buf_free(&curs);
			return 0;
		}
		if (emit)
			emit(c, r);
		else
			jw_raw(w, r->doc, r->doc_len);
		if (c->fanout) {
			char rc[API_MAX_SPAN];
			if (b64url_encode(k, kl, rc, sizeof(rc)) > 0)
				buf_printf(&curs, "%s\"%s\"", n ? "," : "", rc);
			else
				w->err = 1; /* a key past the cursor bound: cannot be merged */
		}
		n++;
		last_key = k;
		last_len = kl;
	}
	src->examined = examined;
	jw_arr_end(w);
	char cur[API_MAX_SPAN];
	if (more && last_key && b64url_encode(last_key, last_len, cur, sizeof(cur)) > 0) {
		jw_kstr(w, "next_cursor", cur);
		memcpy(c->span_to, cur, strlen(cur) + 1);
	} else {
		more = 0;
		jw_knull(w, "next_cursor");
	}
	auth_quota_charge(c, n);
	c->rows_returned = n;
	jw_kbool(w, "has_more", more);
	if (c->fanout) {
		jw_key(w, "_cursors");
		jw_arr_begin(w);
		if (curs.len)
			jw_raw(w, curs.data, curs.len);
		jw_arr_end(w);
	}
	buf_free(&curs);
	jw_obj_end(w);
	c->rs->status = 200;
	return n;
}
