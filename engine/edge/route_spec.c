/*
 * route_spec.c -- the route table as data, read from the OpenAPI document
 * (contract and the why in route_spec.h).
 *
 * Loading runs once at start-up: the document (about 0.5 MB) is parsed
 * with limits sized for it, each operation becomes a struct route whose
 * pattern and summary are copied into one owned text block, and the parse
 * is freed.  Matching walks the table like the shard's dispatch does and
 * keeps the most specific match, so the table's order does not matter.
 */
#include "engine/edge/route_spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/edge/api.h"
#include "engine/edge/openapi_blob.h"
#include "engine/edge/policy.h"
#include "net/json.h"

#define RSPEC_DOC_MAX ((size_t)8 << 20) /* the document's size bound */

static const struct {
	const char *name;
	enum http_method m;
} rspec_methods[] = {
	{"get", HTTP_M_GET}, {"post", HTTP_M_POST}, {"put", HTTP_M_PUT},
	{"patch", HTTP_M_PATCH}, {"delete", HTTP_M_DELETE},
};

static int action_by_name(const char *name)
{
	for (int a = 0; a < ACT_COUNT_; a++)
		if (action_defs[a].name && !strcmp(action_defs[a].name, name))
			return a;
	return -1;
}

/* Copy s (with its NUL) to the text block at *at; the copy. */
static char *text_put(char *text, size_t *at, const char *s)
{
	size_t l = strlen(s) + 1;
	char *d = text + *at;
	memcpy(d, s, l);
	*at += l;
	return d;
}

/* One operation into r; 0, or -1 with err. */
static int op_route(const char *path, enum http_method m, const struct json_value *op, struct route *r,
		    char *text, size_t *at, char *err, size_t errlen)
{
	const struct json_value *sc = json_get(op, "x-required-scope");
	const struct json_value *ac = json_get(op, "x-required-action");
	const struct json_value *su = json_get(op, "summary");
	memset(r, 0, sizeof(*r));
	r->method = m;
	r->scope = SC_PUBLIC;
	r->action = ACT_NONE;
	if (sc) {
		int s = sc->type == JSON_STRING ? scope_find(sc->u.str, sc->len) : -1;
		int a = ac && ac->type == JSON_STRING ? action_by_name(ac->u.str) : -1;
		if (s < 0 || a < 0) {
			snprintf(err, errlen, "%s: unknown x-required-scope or x-required-action", path);
			return -1;
		}
		r->scope = (uint8_t)s;
		r->action = (uint8_t)a;
	}
	const struct json_value *ct = json_get(op, "x-consumer-token");
	if (ct && ct->type == JSON_TRUE)
		r->flags |= ROUTE_F_CONSUMER;
	/* a write that returns rows (POST /v1/sync/pull): the edge charges its
	 * rows to the record quota and audits it as a read (api_route_reads) */
	const struct json_value *rr = json_get(op, "x-reads-rows");
	if (rr && rr->type == JSON_TRUE)
		r->flags |= ROUTE_F_READS;
	r->pattern = text_put(text, at, path);
	r->summary = text_put(text, at, su && su->type == JSON_STRING ? su->u.str : "");
	return 0;
}

/* Segments of a path or pattern: its '/'s (a "{name}" matches one
 * non-empty segment, so a path matches only patterns with as many). */
static unsigned segments(const char *p, size_t len)
{
	unsigned n = 0;
	for (size_t i = 0; i < len; i++)
		n += p[i] == '/';
	return n;
}

/* Literal (non-"{name}") segments of a pattern: its specificity. */
static unsigned literal_segments(const char *p)
{
	unsigned n = 0;
	for (const char *s = p; *s;) {
		s++; /* the '/' */
		n += *s != '{';
		while (*s && *s != '/')
			s++;
	}
	return n;
}

/* What rspec_find reads besides the routes: each route's segments and
 * literal segments, and the patterns without parameters by method (the
 * keys are the patterns in the text block: hidx copies none).  0, or -1
 * with err. */
static int index_routes(struct route_spec *s, char *err, size_t errlen)
{
	for (unsigned m = 0; m < RSPEC_METHODS; m++)
		hidx_init(&s->literal[m]);
	s->segs = malloc(s->n + 1u);
	s->lits = malloc(s->n + 1u);
	if (!s->segs || !s->lits) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (unsigned i = 0; i < s->n; i++) {
		const struct route *r = &s->routes[i];
		size_t len = strlen(r->pattern);
		unsigned segs = segments(r->pattern, len), lits = literal_segments(r->pattern);
		if (segs > UINT8_MAX || r->method >= RSPEC_METHODS) {
			snprintf(err, errlen, "%s: more than %u segments", r->pattern, (unsigned)UINT8_MAX);
			return -1;
		}
		s->segs[i] = (uint8_t)segs;
		s->lits[i] = (uint8_t)lits;
		if (lits == segs && len <= IDX_MAX_KEY &&
		    hidx_put(&s->literal[r->method], r->pattern, (uint32_t)len, (void *)r) < 0) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	}
	return 0;
}

int rspec_load(const char *json, size_t len, struct route_spec *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	struct json_limits lim = {.max_bytes = RSPEC_DOC_MAX};
	struct json_error je;
	struct json_doc *d = json_parse(json, len, &lim, &je);
	if (!d) {
		snprintf(err, errlen, "the OpenAPI document does not parse: line %u: %s", je.line, je.msg);
		return -1;
	}
	const struct json_value *paths = json_get(json_root(d), "paths");
	if (!paths || paths->type != JSON_OBJECT) {
		snprintf(err, errlen, "the OpenAPI document has no \"paths\" object");
		json_doc_free(d);
		return -1;
	}
	out->routes = calloc(API_MAX_ROUTES + 1, sizeof(*out->routes));
	out->text = malloc(len + 1); /* patterns and summaries are substrings of the input */
	int rc = out->routes && out->text ? 0 : -1;
	if (rc)
		snprintf(err, errlen, "out of memory");
	size_t at = 0;
	for (uint32_t i = 0; !rc && i < paths->len; i++) {
		const struct json_member *p = &paths->u.members[i];
		for (size_t k = 0; !rc && k < sizeof(rspec_methods) / sizeof(rspec_methods[0]); k++) {
			const struct json_value *op = json_get(&p->value, rspec_methods[k].name);
			if (!op)
				continue;
			if (out->n == API_MAX_ROUTES) {
				snprintf(err, errlen, "more than %d operations", API_MAX_ROUTES);
				rc = -1;
				break;
			}
			rc = op_route(p->key, rspec_methods[k].m, op, &out->routes[out->n], out->text, &at, err, errlen);
			out->n += rc == 0;
		}
	}
	json_doc_free(d);
	if (!rc)
		rc = index_routes(out, err, errlen);
	if (rc)
		rspec_free(out);
	return rc;
}

int rspec_load_builtin(struct route_spec *out, char *err, size_t errlen)
{
	return rspec_load(openapi_json, strlen(openapi_json), out, err, errlen);
}

void rspec_free(struct route_spec *s)
{
	free(s->routes);
	free(s->text);
	free(s->segs);
	free(s->lits);
	for (unsigned m = 0; m < RSPEC_METHODS; m++)
		hidx_free(&s->literal[m]);
	memset(s, 0, sizeof(*s));
}

const struct route *rspec_find(const struct route_spec *s, enum http_method m, const char *path, uint32_t plen,
			       struct api_ctx *c, int *path_known)
{
	if (m == HTTP_M_HEAD)
		m = HTTP_M_GET;
	*path_known = 0;
	/* a pattern equal to the path has every segment literal: no other
	 * pattern that matches can have more */
	const struct route *best = (unsigned)m < RSPEC_METHODS && plen <= IDX_MAX_KEY
					   ? hidx_get_untracked(&s->literal[m], path, plen)
					   : NULL;
	if (best) {
		*path_known = 1;
		api_route_bind(best->pattern, path, plen, c); /* no parameters: sets their count */
		return best;
	}
	unsigned best_lit = 0, segs = segments(path, plen);
	for (unsigned i = 0; i < s->n; i++) {
		const struct route *r = &s->routes[i];
		if (s->segs[i] != segs || !api_route_bind(r->pattern, path, plen, c))
			continue;
		*path_known = 1;
		unsigned lit = s->lits[i];
		if (r->method == m && (!best || lit > best_lit)) {
			best = r;
			best_lit = lit;
		}
	}
	if (best)
		api_route_bind(best->pattern, path, plen, c); /* its parameters, not the last match's */
	return best;
}
