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
		if (r->scope)
			cr_assert(json_is_string(scope) && !strcmp(json_string_value(scope), r->scope),
				  "%s %s: documented scope differs from %s", method_name(r->method), r->pattern,
				  r->scope);
		else
			cr_assert_null(scope, "%s %s needs no scope but the document names one", method_name(r->method),
				       r->pattern);
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
