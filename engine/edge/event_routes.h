/* event_routes.h -- the event log's route, GET /v1/events (event_routes.c). */
#ifndef WM_EVENT_ROUTES_H
#define WM_EVENT_ROUTES_H

#include "engine/edge/api.h"

extern const struct route event_routes[];

#endif
