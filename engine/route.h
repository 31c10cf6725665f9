/*
 * route.h -- one entry of the route table: method, path pattern, handler,
 * the scope a key needs, and a summary.  Kept apart from api.h so that code
 * that only reads the table (the OpenAPI consistency test) needs nothing else.
 */
#ifndef WM_ROUTE_H
#define WM_ROUTE_H

#include "net/http.h"

#define API_MAX_ROUTES 128

struct api_ctx;
typedef void (*route_fn)(struct api_ctx *c);

struct route {
	enum http_method method;
	const char *pattern;   /* "/v1/partners/{id}" */
	route_fn fn;
	const char *scope;     /* scope a key needs (enforced by the identity layer) */
	const char *summary;
};

/* Every route of the service, NULL-pattern terminated (routes.c). */
const struct route *api_route_table(void);

#endif
