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
