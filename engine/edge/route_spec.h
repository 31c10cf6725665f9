/*
 * route_spec.h -- the route table as data, read from the contract: for a
 * process that checks keys, scopes and actions in front of the handlers
 * but runs none of them (the router, DESIGN.md section 9 "The edge").
 *
 * Why from the OpenAPI document: every operation there names its scope
 * (x-required-scope) and action (x-required-action), and the openapi test
 * proves, in both directions, that they are exactly the shard's route
 * table's.  Reading them from the document embedded in the binary
 * (openapi_blob.c) gives the router the same table without linking a
 * single handler and without a second copy to keep in step.
 */
#ifndef WM_ROUTE_SPEC_H
#define WM_ROUTE_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "engine/edge/route.h"
#include "engine/storage/index.h"
#include "net/http.h"

struct api_ctx;

#define RSPEC_METHODS (HTTP_M_OPTIONS + 1) /* enum http_method's values, for the literal index */

/* The table: routes with fn == NULL; patterns owned by the spec. */
struct route_spec {
	struct route *routes;   /* n entries + a zero terminator */
	unsigned n;
	char *text;             /* the patterns and summaries, NUL-separated */
	uint8_t *segs, *lits;   /* per route: its pattern's segments, and the literal ones among them */
	struct hidx literal[RSPEC_METHODS]; /* per method: each pattern without parameters -> its route */
};

/*
 * Build the table from an OpenAPI document (json[0..len)): one route per
 * operation under "paths" with a method this server routes; scope and
 * action by name (policy.h), SC_PUBLIC/ACT_NONE when the operation names
 * none.  0, or -1 with the first problem in err (an unknown scope or
 * action name, a document that does not parse, more than API_MAX_ROUTES).
 */
int rspec_load(const char *json, size_t len, struct route_spec *out, char *err, size_t errlen);
/* The same from the document built into this binary. */
int rspec_load_builtin(struct route_spec *out, char *err, size_t errlen);
void rspec_free(struct route_spec *s);

/*
 * The route for method m (HEAD as GET) and path, its path parameters bound
 * in c: of the patterns that match, the one with the most literal segments
 * ("/v1/orders/quote-calculate" before "/v1/orders/{id}").  NULL when none
 * does; *path_known then says whether the path exists for another method.
 * A path equal to a pattern without parameters is one hash probe; any
 * other is matched against the patterns with as many segments only.
 */
const struct route *rspec_find(const struct route_spec *s, enum http_method m, const char *path, uint32_t plen,
			       struct api_ctx *c, int *path_known);

#endif
