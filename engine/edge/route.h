/*
 * route.h -- one entry of the route table: method, path pattern, handler,
 * the scope a key needs, the action the entity must be allowed, and a
 * summary.  Kept apart from api.h so that code
 * that only reads the table (the OpenAPI consistency test) needs nothing else.
 */
#ifndef WM_ROUTE_H
#define WM_ROUTE_H

#include "engine/edge/policy.h"
#include "net/http.h"

#define API_MAX_ROUTES 192

struct api_ctx;
typedef void (*route_fn)(struct api_ctx *c);

struct route {
	enum http_method method;
	const char *pattern;   /* "/v1/partners/{id}" */
	route_fn fn;
	uint8_t scope;         /* enum scope a key needs; SC_PUBLIC = no key */
	uint8_t action;        /* enum action the entity must be allowed (policy.h) */
	const char *summary;
	uint8_t flags;         /* ROUTE_F_*; 0 when omitted from an initializer */
};

/* The handler implements Idempotency-Key itself (POST /v1/orders: a retried
 * create returns the existing order in its current state, see order.c);
 * api_run() does not hand the request to idem.c. */
#define ROUTE_F_OWN_IDEM 0x01
/* A 201 answer's body is the created resource's GET body for the same
 * caller (written by the same function): etag.c tags it from the body
 * instead of running the GET again (POST /v1/orders). */
#define ROUTE_F_CREATE_IS_VIEW 0x02
/* A consumer token of the order in the path ({id}) may call it
 * (consumer_token.h); in the OpenAPI document "x-consumer-token": true. */
#define ROUTE_F_CONSUMER 0x04
/* A POST that returns rows (POST /v1/sync/pull): besides being a write,
 * it is charged to the record quota and logged in the read audit as a
 * GET list is (api_route_reads). */
#define ROUTE_F_READS 0x08

/* Every route of the service, NULL-pattern terminated (routes.c). */
const struct route *api_route_table(void);
/* The /internal/ routes of cluster mode (routes.c): signed by the cluster
 * secret, never in the public contract, no partner identity. */
const struct route *api_internal_route_table(void);

#endif
