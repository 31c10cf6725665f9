/* check.h -- GET /internal/check, a shard's half of `wm-ctl cluster check` (check.c). */
#ifndef WM_CHECK_H
#define WM_CHECK_H

#include "engine/edge/api.h"

extern const struct route check_internal_routes[];

/* The kinds check_invariants reports. */
#define CHECK_K_STOCK "stock_invariant"   /* a level against its holds or its history (id: the level) */
#define CHECK_K_LEDGER "ledger_invariant" /* an order against its charge (id: the order) */

/* Called once per violation: its kind, the id of the row it names (a
 * level, an order, an event) and a line of text. */
typedef void (*check_sink_fn)(void *arg, const char *kind, const char *id, const char *text);

/* This shard's own invariants (what GET /internal/check lists: levels it
 * owns against their holds and history, orders against their charges),
 * each violation to sink.  O(holds + stock events + levels + orders). */
void check_invariants(struct shard *sh, check_sink_fn sink, void *arg);

#endif
