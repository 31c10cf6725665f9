/*
 * test_openapi.c -- the route table and api/openapi.json describe the same
 * API: every route is documented with its method and required scope, and
 * every documented operation is routed.  Read with jansson, independent of
 * the server's own JSON parser.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "engine/route.h"
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
