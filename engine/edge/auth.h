/*
 * auth.h -- who is calling and may they: bearer-key authentication, scope
 * and action checks, per-key request rate, per-entity record quota
 * (implementation and the why in auth.c).
 */
#ifndef WM_AUTH_H
#define WM_AUTH_H

#include <stdint.h>

#include "engine/edge/api.h"
#include "engine/edge/quota.h"

/*
 * For a route that needs a key: authenticate the Authorization header,
 * check the key's scope against the route, the entity's action against the
 * policy, and take a token from the key's rate bucket.  On success fills
 * c->who, adds the RateLimit headers and returns 0; otherwise writes the
 * 401/403/429 problem response and returns -1.
 */
int auth_request(struct api_ctx *c);

/*
 * For a route that needs a key, in cluster mode, when the router already
 * authenticated the caller: take c->who from the signed X-WM-Principal
 * (c->principal_hdr) and check the route's scope and action against it
 * (the router checked them too; this keeps a shard from ever running a
 * handler for a principal that may not).  No rate bucket, no quota window
 * here: the router keeps them.  0, or -1 with the problem written.
 */
int auth_forwarded(struct api_ctx *c);


/* Runtime state (buckets, windows) lives outside the tables: it is not
 * persisted.  Created lazily; freed by shard_close() through sh->auth_free,
 * which the creator sets (the shard does not include this file). */
void auth_state_free(struct shard *sh);

/* Per-key read volume for the audit alert: add rows to the key's current
 * window; returns 1 exactly once per window when the window's rows exceed
 * factor x the trailing average and min_rows (the caller raises the alert),
 * and puts the trailing average (rows per window) in *avg. */
int auth_volume_add(struct api_ctx *c, uint32_t rows, uint64_t *window_rows, uint64_t *avg);

#endif
