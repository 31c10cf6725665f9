/*
 * availability.h -- a sales channel's available stock (availability.c).
 */
#ifndef WM_AVAILABILITY_H
#define WM_AVAILABILITY_H

#include "engine/edge/route.h"

extern const struct route availability_routes[];

#endif
