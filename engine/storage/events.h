/* events.h -- the event log's routes (implementation and why in events.c). */
#ifndef WM_EVENTS_H
#define WM_EVENTS_H

#include "engine/edge/api.h"

extern const struct route event_routes[];

#endif
