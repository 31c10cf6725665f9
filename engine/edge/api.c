/*
 * api.c -- the request context and the helpers every handler shares (see
 * api.h): path parameters, responses and problems, the body and the query,
 * ownership, lists and their cursors.  The dispatch that runs a request
 * through identity, idempotency, conditions, the handler and the audit is
 * dispatch.c, above the edge modules it calls; this file is below them.
 */
#include "engine/edge/api.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "engine/base/log.h"
#include "engine/cluster/internal_headers.h"
#include "engine/edge/quota.h"

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

int api_is_write(enum http_method m)
{
	return m == HTTP_M_POST || m == HTTP_M_PUT || m == HTTP_M_PATCH || m == HTTP_M_DELETE;
}

int api_route_reads(const struct route *r)
{
	return !api_is_write(r->method) || (r->flags & ROUTE_F_READS);
}

int api_route_bind(const char *pattern, const char *path, uint32_t plen, struct api_ctx *c)
{
	return route_match(pattern, path, plen, c);
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
	if (!c->route || api_is_write(c->route->method) || c->probe)
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

void api_send_row(struct api_ctx *c, int status, const struct row *r)
{
	if (api_read_row(c))
		return;
	c->rs->status = status;
	struct jw w;
	jw_init(&w, &c->rs->body);
	row_doc_write(&w, r);
	if (w.err) {
		buf_reset(&c->rs->body);
		api_error(c, 500, "internal_error", "a stored row could not be written");
	}
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
	/* the cursor key is copied: a source's key may live only until its
	 * next call (an index walk's does: index.h oidx_iter_key) */
	uint8_t last_buf[IDX_MAX_KEY];
	const void *last_key = NULL, *k;
	uint32_t last_len = 0, kl;
	const struct row *r;
	while (src->next(src->self, &r, &k, &kl)) {
		if (kl > sizeof(last_buf)) {
			w->err = 1; /* no index key is longer: a source's bug */
			break;
		}
		if (src->budget && examined == src->budget) {
			/* The page's work bound: stop here, resume after the last
			 * row examined (returned or not). */
			more = 1;
			break;
		}
		examined++;
		if (filter && !filter(c, r, arg)) {
			if (src->budget) {
				memcpy(last_buf, k, kl);
				last_key = last_buf;
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
			row_doc_write(w, r);
		if (c->fanout) {
			char rc[API_MAX_SPAN];
			if (b64url_encode(k, kl, rc, sizeof(rc)) > 0)
				buf_printf(&curs, "%s\"%s\"", n ? "," : "", rc);
			else
				w->err = 1; /* a key past the cursor bound: cannot be merged */
		}
		n++;
		memcpy(last_buf, k, kl);
		last_key = last_buf;
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
