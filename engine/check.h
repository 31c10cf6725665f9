/* check.h -- GET /internal/check, a shard's half of `wm-ctl cluster check` (check.c). */
#ifndef WM_CHECK_H
#define WM_CHECK_H

#include "engine/edge/api.h"

extern const struct route check_internal_routes[];

#endif
