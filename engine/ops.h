/* ops.h -- operational endpoints: health, readiness, metrics, OpenAPI, snapshots. */
#ifndef WM_OPS_H
#define WM_OPS_H

#include "engine/edge/api.h"

extern const struct route ops_routes[];
/* The /internal/ routes of ops (cluster mode). */
extern const struct route ops_internal_routes[];
/* The OpenAPI document embedded at build time (api/openapi.json). */
extern const char openapi_json[];

#endif
