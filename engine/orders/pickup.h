/*
 * pickup.h -- carrier pickups per order and location (spec 2.8, 4.1;
 * the states and rules are in pickup.c's opening comment).
 */
#ifndef WM_PICKUP_H
#define WM_PICKUP_H

#include "engine/edge/route.h"

extern const struct route pickup_routes[];

#endif
