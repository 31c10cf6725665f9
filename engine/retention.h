/* retention.h -- what a shard forgets, and when (retention.c; issue 18 item 9). */
#ifndef WM_RETENTION_H
#define WM_RETENTION_H

#include <stdint.h>

#include "engine/storage/id.h"
#include "engine/storage/shard.h"
#include "engine/storage/table.h"
#include "net/buf.h"

#define RET_BATCH 256        /* rows one pruning transaction deletes at most */
#define RET_SCAN 4096        /* rows one pass looks at per table at most */
#define RET_EVERY_MS 1000    /* a pass at most this often */

/* The units a stock.changed event moved on its level: on_hand added by
 * API writes (added) or taken by consumed holds (consumed), and the
 * reserved / allocated deltas. */
struct stock_deltas {
	int64_t added, consumed, d_reserved, d_allocated;
};

/* The level a stock.changed event row names (into level) and what it
 * moved (into *d): 0, or -1 for an event without level_id and cause. */
int retention_stock_deltas(const struct row *ev, char level[ID_MAX_LEN], struct stock_deltas *d);

/* The sum of the pruned stock.changed events of a level (REC_T_STOCK_FOLD,
 * id = the level id): a level's history is its fold plus its events. */
struct stock_fold {
	struct row row;
	struct stock_deltas sum;
	uint64_t events;      /* how many events it folds */
};
extern const struct table_ops stock_fold_table_ops;

/* From the loop's tick: one bounded pass (at most every RET_EVERY_MS)
 * over events, webhook deliveries and released holds older than the
 * retention (--retention-days; 0 keeps everything). */
void retention_tick(struct shard *sh);
/* wm_retention_* lines into o (/metrics). */
void retention_metrics(struct buf *o);

#endif
