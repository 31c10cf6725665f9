/* demo.h -- demo data for `make run` (see demo.c). */
#ifndef WM_DEMO_H
#define WM_DEMO_H

#include "engine/storage/shard.h"

/* Seed the demo records when the data directory is empty.  0 or -1. */
int demo_seed_if_empty(struct shard *sh);

#endif
