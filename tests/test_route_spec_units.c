/*
 * test_route_spec_units.c -- the router's route table read from the
 * OpenAPI document (engine/edge/route_spec.h): the same routes, scopes and
 * actions as the shard's own table, most specific match first, and a
 * document with an unknown scope refused.
 */
#include <stdio.h>
#include <string.h>

#include "engine/edge/api.h"
#include "engine/edge/route_spec.h"
#include "tests/wm_test.h"

/* A concrete path for a pattern: each "{x}" becomes a plausible id. */
static void concrete(const char *pat, char *out, size_t n)
{
	size_t o = 0;
	for (const char *p = pat; *p && o + 32 < n; p++) {
		if (*p == '{') {
			o += (size_t)snprintf(out + o, n - o, "ord_FR_01HZZZZZZZ0000ABCDEF");
			p = strchr(p, '}');
			continue;
		}
		out[o++] = *p;
	}
	out[o] = 0;
}

WM_TEST(route_spec, every_shard_route_is_found_with_its_scope_and_action)
{
	struct route_spec s;
	char err[256];
	cr_assert_eq(rspec_load_builtin(&s, err, sizeof(err)), 0, "%s", err);
	unsigned n = 0;
	for (const struct route *r = api_route_table(); r->pattern; r++, n++) {
		char path[256];
		concrete(r->pattern, path, sizeof(path));
		struct api_ctx c;
		memset(&c, 0, sizeof(c));
		int known;
		const struct route *f = rspec_find(&s, r->method, path, (uint32_t)strlen(path), &c, &known);
		cr_assert_not_null(f, "the document has no route for %s", path);
		cr_assert_str_eq(f->pattern, r->pattern, "%s matched %s", path, f->pattern);
		cr_assert_eq(f->scope, r->scope, "%s: scope", r->pattern);
		cr_assert_eq(f->action, r->action, "%s: action", r->pattern);
		cr_assert_null(f->fn);
	}
	cr_assert_eq(s.n, n, "the document has %u operations, the shard %u routes", s.n, n);
	rspec_free(&s);
}

WM_TEST(route_spec, the_most_specific_pattern_wins_whatever_the_order)
{
	static const char doc[] =
		"{\"paths\":{\"/v1/orders/{id}\":{\"post\":{\"x-required-scope\":\"write:orders\","
		"\"x-required-action\":\"can_create_orders\"}},"
		"\"/v1/orders/quote-calculate\":{\"post\":{\"summary\":\"q\"}}}}";
	struct route_spec s;
	char err[256];
	cr_assert_eq(rspec_load(doc, strlen(doc), &s, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.n, 2);
	struct api_ctx c;
	memset(&c, 0, sizeof(c));
	int known;
	const char *p = "/v1/orders/quote-calculate";
	const struct route *r = rspec_find(&s, HTTP_M_POST, p, (uint32_t)strlen(p), &c, &known);
	cr_assert_not_null(r);
	cr_assert_str_eq(r->pattern, "/v1/orders/quote-calculate");
	cr_assert_eq(r->scope, SC_PUBLIC);
	p = "/v1/orders/ord_1";
	r = rspec_find(&s, HTTP_M_POST, p, (uint32_t)strlen(p), &c, &known);
	cr_assert_not_null(r);
	cr_assert_str_eq(r->pattern, "/v1/orders/{id}");
	cr_assert_neq(r->scope, SC_PUBLIC);
	r = rspec_find(&s, HTTP_M_GET, p, (uint32_t)strlen(p), &c, &known);
	cr_assert_null(r);
	cr_assert_eq(known, 1, "the path exists for another method: a 405, not a 404");
	rspec_free(&s);
}

WM_TEST(route_spec, an_unknown_scope_or_action_refuses_the_document)
{
	static const char *const docs[] = {
		"{\"paths\":{\"/v1/x\":{\"get\":{\"x-required-scope\":\"read:nothing\","
		"\"x-required-action\":\"can_read_offers\"}}}}",
		"{\"paths\":{\"/v1/x\":{\"get\":{\"x-required-scope\":\"read:offers\","
		"\"x-required-action\":\"can_fly\"}}}}",
		"{\"paths\":{\"/v1/x\":{\"get\":{\"x-required-scope\":\"read:offers\"}}}}",
		"{\"nopaths\":{}}",
		"{\"paths\":",
	};
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		struct route_spec s;
		char err[256] = "";
		cr_assert_eq(rspec_load(docs[i], strlen(docs[i]), &s, err, sizeof(err)), -1, "document %zu loaded", i);
		cr_assert_neq(err[0], 0);
		cr_assert_null(s.routes);
	}
}

/* A document of n public GET operations /v1/r0 .. /v1/r<n-1>. */
static char *doc_of(unsigned n)
{
	static char d[64 * (API_MAX_ROUTES + 2)];
	size_t o = (size_t)snprintf(d, sizeof(d), "{\"paths\":{");
	for (unsigned i = 0; i < n; i++)
		o += (size_t)snprintf(d + o, sizeof(d) - o, "%s\"/v1/r%u\":{\"get\":{}}", i ? "," : "", i);
	snprintf(d + o, sizeof(d) - o, "}}");
	return d;
}

WM_TEST(route_spec, the_route_bound_is_held_at_and_past_its_edge)
{
	struct route_spec s;
	char err[256];
	char *d = doc_of(API_MAX_ROUTES);
	cr_assert_eq(rspec_load(d, strlen(d), &s, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.n, API_MAX_ROUTES);
	rspec_free(&s);
	d = doc_of(API_MAX_ROUTES + 1);
	cr_assert_eq(rspec_load(d, strlen(d), &s, err, sizeof(err)), -1);
	cr_assert(strstr(err, "more than"), "%s", err);
}

/* rspec_find's answer by brute force: every pattern tried, the match with
 * the most literal segments for m kept (HEAD as GET), as the walk did
 * before the literal index and the segment filter. */
static const struct route *find_walk(const struct route_spec *s, enum http_method m, const char *path,
				     struct api_ctx *c, int *known)
{
	if (m == HTTP_M_HEAD)
		m = HTTP_M_GET;
	*known = 0;
	const struct route *best = NULL;
	unsigned best_lit = 0;
	for (unsigned i = 0; i < s->n; i++) {
		const struct route *r = &s->routes[i];
		if (!api_route_bind(r->pattern, path, (uint32_t)strlen(path), c))
			continue;
		*known = 1;
		unsigned lit = 0;
		for (const char *q = r->pattern; (q = strchr(q, '/')); q++)
			lit += q[1] != '{';
		if (r->method == m && (!best || lit > best_lit)) {
			best = r;
			best_lit = lit;
		}
	}
	if (best)
		api_route_bind(best->pattern, path, (uint32_t)strlen(path), c);
	return best;
}

/* Every operation's path, with a segment more, one less, a trailing '/',
 * under every method: the same route, path_known and parameters as the
 * brute-force walk. */
WM_TEST(route_spec, the_indexed_find_answers_as_the_walk_for_every_path_and_method)
{
	struct route_spec s;
	char err[256];
	cr_assert_eq(rspec_load_builtin(&s, err, sizeof(err)), 0, "%s", err);
	static const enum http_method methods[] = {HTTP_M_GET, HTTP_M_HEAD, HTTP_M_POST, HTTP_M_PUT,
						   HTTP_M_PATCH, HTTP_M_DELETE, HTTP_M_OPTIONS};
	unsigned hits = 0, checked = 0;
	for (unsigned i = 0; i < s.n; i++) {
		char base[256], path[300];
		concrete(s.routes[i].pattern, base, sizeof(base));
		for (int v = 0; v < 4; v++) {
			if (v == 0)
				snprintf(path, sizeof(path), "%s", base);
			else if (v == 1)
				snprintf(path, sizeof(path), "%s/x", base);
			else if (v == 2)
				snprintf(path, sizeof(path), "%s/", base);
			else {
				snprintf(path, sizeof(path), "%s", base);
				char *cut = strrchr(path, '/');
				if (cut && cut != path)
					*cut = 0;
			}
			for (size_t k = 0; k < sizeof(methods) / sizeof(methods[0]); k++) {
				struct api_ctx a, b;
				memset(&a, 0, sizeof(a));
				memset(&b, 0, sizeof(b));
				int ka = -1, kb = -1;
				const struct route *fa = rspec_find(&s, methods[k], path, (uint32_t)strlen(path), &a, &ka);
				const struct route *fb = find_walk(&s, methods[k], path, &b, &kb);
				cr_assert_eq(fa, fb, "%s method %d: %s, the walk %s", path, methods[k],
					     fa ? fa->pattern : "none", fb ? fb->pattern : "none");
				cr_assert_eq(ka, kb, "%s method %d: path_known", path, methods[k]);
				if (fa) {
					cr_assert_eq(a.n_params, b.n_params, "%s: parameters", path);
					for (unsigned p = 0; p < a.n_params; p++)
						cr_assert(a.params[p].len == b.params[p].len &&
							  a.params[p].p == b.params[p].p, "%s: parameter %u", path, p);
				}
				hits += fa != NULL;
				checked++;
			}
		}
	}
	cr_assert_gt(hits, s.n, "the paths found routes (%u of %u lookups)", hits, checked);
	rspec_free(&s);
}
