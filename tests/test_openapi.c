/*
 * test_openapi.c -- the route table and api/openapi.json describe the same
 * API: every route is documented with its method and required scope, and
 * every documented operation is routed.  Read with jansson, independent of
 * the server's own JSON parser.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine/edge/route.h"
#include "tests/wm_test.h"

static const char *method_name(enum http_method m)
{
	static const char *const n[] = {"?", "get", "head", "post", "put", "patch", "delete", "options"};
	return n[m];
}

static json_t *load_doc(void)
{
	char path[512];
	const char *src = getenv("WM_SRC_DIR");
	snprintf(path, sizeof(path), "%s/api/openapi.json", src ? src : ".");
	json_error_t e;
	json_t *doc = json_load_file(path, 0, &e);
	cr_assert_not_null(doc, "%s: %s at line %d", path, e.text, e.line);
	return doc;
}

WM_TEST(openapi, every_route_is_documented_with_its_scope)
{
	json_t *doc = load_doc();
	json_t *paths = json_object_get(doc, "paths");
	int n = 0;
	for (const struct route *r = api_route_table(); r->pattern; r++, n++) {
		json_t *item = json_object_get(paths, r->pattern);
		cr_assert_not_null(item, "route %s is not in api/openapi.json", r->pattern);
		json_t *op = json_object_get(item, method_name(r->method));
		cr_assert_not_null(op, "%s %s is not documented", method_name(r->method), r->pattern);
		json_t *scope = json_object_get(op, "x-required-scope");
		json_t *action = json_object_get(op, "x-required-action");
		json_t *security = json_object_get(op, "security");
		if (r->scope != SC_PUBLIC) {
			const char *want = scope_defs[r->scope].name;
			cr_assert(json_is_string(scope) && !strcmp(json_string_value(scope), want),
				  "%s %s: documented scope differs from %s", method_name(r->method), r->pattern, want);
			cr_assert(json_is_string(action) &&
					  !strcmp(json_string_value(action), action_defs[r->action].name),
				  "%s %s: documented action differs from %s", method_name(r->method), r->pattern,
				  action_defs[r->action].name);
			json_t *req = json_object_get(json_array_get(security, 0), "bearer");
			cr_assert(json_is_string(json_array_get(req, 0)) &&
					  !strcmp(json_string_value(json_array_get(req, 0)), want),
				  "%s %s: security requirement must name %s", method_name(r->method), r->pattern, want);
			/* a route taking consumer tokens says so, for the router's edge
			 * (route_spec.c) and for readers; no other route does */
			json_t *ct = json_object_get(op, "x-consumer-token");
			int takes = (r->flags & ROUTE_F_CONSUMER) != 0;
			cr_assert_eq(json_is_true(ct), takes, "%s %s: x-consumer-token must be %s", method_name(r->method),
				     r->pattern, takes ? "true" : "absent");
			/* a write that returns rows says so, for the router's quota
			 * and audit (route_spec.c); no other route does */
			json_t *rr = json_object_get(op, "x-reads-rows");
			int reads = (r->flags & ROUTE_F_READS) != 0;
			cr_assert_eq(json_is_true(rr), reads, "%s %s: x-reads-rows must be %s", method_name(r->method),
				     r->pattern, reads ? "true" : "absent");
			if (takes) {
				json_t *alt = json_object_get(json_array_get(security, 1), "consumerToken");
				cr_assert(json_is_array(alt), "%s %s: security must list consumerToken as an alternative",
					  method_name(r->method), r->pattern);
			}
		} else {
			cr_assert_null(scope, "%s %s needs no scope but the document names one", method_name(r->method),
				       r->pattern);
			cr_assert_eq(r->action, ACT_NONE, "public route %s must need no action", r->pattern);
			cr_assert(json_is_array(security) && json_array_size(security) == 0,
				  "public %s %s must say security: []", method_name(r->method), r->pattern);
		}
	}
	cr_assert_gt(n, 5);
	json_decref(doc);
}

WM_TEST(openapi, every_documented_operation_is_routed)
{
	json_t *doc = load_doc();
	const char *path;
	json_t *item;
	json_object_foreach(json_object_get(doc, "paths"), path, item)
	{
		const char *m;
		json_t *op;
		json_object_foreach(item, m, op)
		{
			if (!strcmp(m, "parameters") || !strcmp(m, "summary") || !strcmp(m, "description"))
				continue;
			int found = 0;
			for (const struct route *r = api_route_table(); r->pattern && !found; r++)
				found = !strcmp(r->pattern, path) && !strcasecmp(method_name(r->method), m);
			cr_assert(found, "documented %s %s has no route", m, path);
		}
	}
	json_decref(doc);
}

/* The published scope list is exactly the scope table, with descriptions. */
WM_TEST(openapi, scope_list_matches_the_scope_table)
{
	json_t *doc = load_doc();
	json_t *list = json_object_get(json_object_get(json_object_get(doc, "components"), "securitySchemes"),
				       "bearer");
	cr_assert_not_null(list, "components.securitySchemes.bearerAuth is missing");
	json_t *xs = json_object_get(list, "x-scopes");
	cr_assert(json_is_object(xs), "bearer.x-scopes must list every scope");
	cr_assert_eq(json_object_size(xs), (size_t)SC_COUNT_ - 1, "x-scopes has %zu entries, the table %d",
		     json_object_size(xs), SC_COUNT_ - 1);
	for (int s = 1; s < SC_COUNT_; s++) {
		json_t *d = json_object_get(xs, scope_defs[s].name);
		cr_assert(json_is_string(d) && json_string_length(d) > 0, "scope %s is not published",
			  scope_defs[s].name);
	}
	json_t *xa = json_object_get(list, "x-actions");
	cr_assert(json_is_array(xa), "bearer.x-actions must list every action");
	cr_assert_eq(json_array_size(xa), (size_t)ACT_COUNT_ - 1);
	json_decref(doc);
}

/* ---- the statuses and headers every operation can answer (issue 21 item 9)
 * The edge answers 400/411/413/414/431/503 before any route runs, the key layer
 * 401/403/429 on every authenticated route, a full disk 507 on writes, and
 * engine/edge/etag.c 412 on writes to a resource with a GET route: the document
 * must say so for every operation, not only for the ones a test happened to
 * provoke (the contract test, tests/contract/check.py, covers the rest). */

static json_t *deref(json_t *doc, json_t *o)
{
	for (int i = 0; i < 8 && json_is_object(o) && json_object_get(o, "$ref"); i++) {
		const char *ref = json_string_value(json_object_get(o, "$ref"));
		cr_assert(ref && !strncmp(ref, "#/components/", 13), "non-local $ref %s", ref ? ref : "?");
		char kind[32], name[96];
		cr_assert_eq(sscanf(ref + 13, "%31[^/]/%95s", kind, name), 2, "bad $ref %s", ref);
		o = json_object_get(json_object_get(json_object_get(doc, "components"), kind), name);
		cr_assert_not_null(o, "dangling $ref %s", ref);
	}
	return o;
}

static int has_header(json_t *doc, json_t *resp, const char *name, int *required)
{
	json_t *h = json_object_get(deref(doc, resp), "headers");
	json_t *x = deref(doc, json_object_get(h, name));
	if (required)
		*required = json_is_true(json_object_get(x, "required"));
	return x != NULL;
}

WM_TEST(openapi, every_operation_declares_the_edge_and_key_statuses)
{
	json_t *doc = load_doc();
	int checked = 0;
	for (const struct route *r = api_route_table(); r->pattern; r++) {
		json_t *op = json_object_get(json_object_get(json_object_get(doc, "paths"), r->pattern),
					     method_name(r->method));
		json_t *resps = json_object_get(op, "responses");
		static const char *const edge[] = {"400", "411", "413", "414", "431", "503"};
		for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++)
			cr_assert_not_null(json_object_get(resps, edge[i]), "%s %s: %s not declared",
					   method_name(r->method), r->pattern, edge[i]);
		if (r->scope != SC_PUBLIC) {
			cr_assert_not_null(json_object_get(resps, "401"), "%s %s: 401", method_name(r->method), r->pattern);
			cr_assert_not_null(json_object_get(resps, "403"), "%s %s: 403", method_name(r->method), r->pattern);
			json_t *tm = json_object_get(resps, "429");
			int req = 0;
			cr_assert(tm && has_header(doc, tm, "Retry-After", &req) && req,
				  "%s %s: 429 with a required Retry-After", method_name(r->method), r->pattern);
		}
		if (r->method != HTTP_M_GET)
			cr_assert_not_null(json_object_get(resps, "507"), "%s %s: 507", method_name(r->method), r->pattern);
		const char *code;
		json_t *resp;
		json_object_foreach(resps, code, resp)
		{
			int req = 0;
			cr_assert(has_header(doc, resp, "X-Request-Id", &req) && req, "%s %s %s: X-Request-Id",
				  method_name(r->method), r->pattern, code);
		}
		/* a write to a resource that has its own GET route is conditional
		 * (engine/edge/etag.c): 412 and the If-Match parameter are declared */
		size_t pl = strlen(r->pattern);
		int get_too = 0;
		for (const struct route *g = api_route_table(); g->pattern && !get_too; g++)
			get_too = g->method == HTTP_M_GET && !strcmp(g->pattern, r->pattern);
		if (r->method != HTTP_M_GET && get_too && pl && r->pattern[pl - 1] == '}') {
			cr_assert_not_null(json_object_get(resps, "412"), "%s %s: 412", method_name(r->method),
					   r->pattern);
			int im = 0;
			size_t i;
			json_t *prm;
			json_array_foreach(json_object_get(op, "parameters"), i, prm)
			{
				json_t *x = deref(doc, prm);
				im |= !strcmp(json_string_value(json_object_get(x, "name")) ?: "", "If-Match");
			}
			cr_assert(im, "%s %s: If-Match parameter", method_name(r->method), r->pattern);
		}
		if (r->method == HTTP_M_GET && strchr(r->pattern, '{')) {
			int req = 0;
			cr_assert(has_header(doc, json_object_get(resps, "200"), "ETag", &req) && req,
				  "GET %s: 200 must declare a required ETag", r->pattern);
		}
		checked++;
	}
	cr_assert_gt(checked, 5);
	json_decref(doc);
}

/* A page holds at most page_size <= API_PAGE_MAX rows: every list schema
 * says so.  (engine/edge/api.h cannot be included beside jansson: its net/json.h
 * names clash; test_integration checks page_size 201 is refused.) */
#define API_PAGE_MAX 200
static void lists_bounded(json_t *o, int *n)
{
	if (json_is_object(o)) {
		json_t *props = json_object_get(o, "properties");
		json_t *data = json_object_get(props, "data");
		if (data && json_object_get(props, "has_more")) {
			json_t *mx = json_object_get(data, "maxItems");
			cr_assert(json_is_integer(mx) && json_integer_value(mx) == API_PAGE_MAX,
				  "a list's data must declare maxItems %u", API_PAGE_MAX);
			(*n)++;
		}
		const char *k;
		json_t *v;
		json_object_foreach(o, k, v) lists_bounded(v, n);
	} else if (json_is_array(o)) {
		size_t i;
		json_t *v;
		json_array_foreach(o, i, v) lists_bounded(v, n);
	}
}

WM_TEST(openapi, every_list_declares_its_page_bound)
{
	json_t *doc = load_doc();
	int n = 0;
	lists_bounded(doc, &n);
	cr_assert_gt(n, 10, "list schemas found: %d", n);
	json_decref(doc);
}
