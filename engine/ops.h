/* ops.h -- operational endpoints: health, readiness, metrics, OpenAPI, snapshots. */
#ifndef WM_OPS_H
#define WM_OPS_H

#include "engine/edge/api.h"
#include "engine/edge/openapi_blob.h"

extern const struct route ops_routes[];
/* The /internal/ routes of ops (cluster mode). */
extern const struct route ops_internal_routes[];

#endif
