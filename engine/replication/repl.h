/*
 * repl.h -- replication by WAL shipping between shards (DESIGN.md section
 * 9, "Replication"): what the rest of the engine sees of it.
 *
 * Three parts, one file each:
 *   repl_wire.c  the chunk format and its strict decoder (repl_wire.h);
 *   repl_pub.c   the publisher: every shard in cluster mode keeps its
 *                recent published transactions in a bounded buffer (filled
 *                as they are logged, and at start-up from the WAL tail it
 *                replays) and serves them, once durable, on
 *                GET /internal/replication/wal; a position it can no longer
 *                serve is a 410 and the subscriber resyncs from
 *                GET /internal/replication/snapshot;
 *   repl_sub.c   the subscriber: a loop on the shard's event loop that
 *                polls every other shard, applies what it gets through the
 *                table code recovery uses and logs it in its own WAL with
 *                the new position in ONE transaction;
 *   repl_pos.c   the position rows (REC_T_META, "repl/pos/<publisher>").
 *
 * What each shard publishes (repl_published): the catalogue home (shard 0)
 * partners, API keys, producers, wines, external ids, media metadata,
 * offers, listings, sales channels, curated shops, wine reviews and the
 * uploaded reference data; every shard (the home included) its stock
 * locations and inventory levels.  Never holds, orders, order states,
 * payments, events, idempotency or audit rows, nor the META table.
 *
 * A transaction that carries a position row was applied as a subscriber:
 * the publisher never ships it again (stale copies would loop between
 * shards).  That is why a subscriber writes its position row in EVERY
 * transaction it applies, snapshot pages included.
 */
#ifndef WM_REPL_H
#define WM_REPL_H

#include <stdint.h>

#include "engine/replication/repl_wire.h"
#include "engine/storage/table.h"
#include "net/buf.h"
#include "net/jsonw.h"

struct shard;
struct shard_map;
struct cluster_key;
struct route;

/* ---- what is published --------------------------------------------------- */

/* REPL_HOME and repl_published(): repl_wire.h (the decoder's allowed set). */

/* ---- positions (repl_pos.c) ---------------------------------------------- */

#define REPL_POS_PREFIX "repl/pos/"
#define REPL_POS_MAX_DOC 160 /* bytes of a position row's document */

enum repl_state { REPL_ST_STREAMING = 0, REPL_ST_RESYNCING = 1 };

struct repl_pos {
	uint32_t publisher;
	uint64_t epoch;
	uint64_t lsn;        /* the publisher LSN applied up to (streaming) or the resync's base */
	uint8_t state;       /* enum repl_state */
};

extern const struct table_ops repl_pos_table_ops;

/* The logged position for `publisher` (0 and a zero *p when none). */
int repl_pos_get(struct shard *sh, uint32_t publisher, struct repl_pos *p);
/* Add the position row to the open transaction: 0 or -1 (bound). */
int repl_pos_put(struct shard *sh, const struct repl_pos *p);

/* ---- the publisher (repl_pub.c) ------------------------------------------ */

#define REPL_BUFFER_BYTES (32u << 20) /* published transactions kept in memory */

/*
 * Cluster mode: the publisher's state for shard `self`, to hand to
 * shard_open_logged with repl_pub_logged as the hook, so the WAL tail
 * that recovery replays is buffered too (NULL with err on OOM).  The shard
 * then holds it in sh->repl_pub; repl_close frees it.
 */
struct repl_pub;
struct repl_pub *repl_pub_new(uint32_t self, char *err, size_t errlen);
void repl_pub_logged(struct shard *sh, uint64_t lsn, const void *img, size_t len);
/* The epoch is read from <data_dir>/repl-epoch or created there (a wiped
 * data directory = a new epoch = every subscriber resyncs). */
/* After shard_open: what the buffer covers starts at the recovered state,
 * and the epoch is read or created (the data directory exists now).
 * 0, or -1 with err. */
int repl_pub_opened(struct shard *sh, char *err, size_t errlen);
/* Answer the held long-polls that now have something (call after every
 * durable progress) or whose wait is over (call from the tick); with
 * all != 0, every one at once (before the server is freed). */
void repl_pub_wake(struct shard *sh, int all);
uint64_t repl_epoch(const struct shard *sh);

/* ---- the subscriber (repl_sub.c) ----------------------------------------- */

/* Poll timing (in one place): idle polls back off from MIN to MAX; a
 * publisher that does not answer is retried from RETRY_MIN to RETRY_MAX. */
#define REPL_POLL_MIN_MS 1u
#define REPL_POLL_MAX_MS 50u
/* Long-poll: a subscriber that is caught up asks with wait_ms, and the
 * publisher holds the request until something new is durable or the wait
 * is over (at most REPL_WAITERS held at once; past that it answers at
 * once and the subscriber's idle backoff applies). */
#define REPL_LONGPOLL_MS 1000u
#define REPL_LONGPOLL_MAX_MS 5000u
#define REPL_WAITERS 64u
#define REPL_RETRY_MIN_MS 50u
#define REPL_RETRY_MAX_MS 1000u
#define REPL_CALL_TIMEOUT_MS 3000u       /* one fetch, send to last byte */
#define REPL_FETCH_BYTES (256u << 10)    /* max_bytes asked per fetch */

/* Start subscribing to every other shard of the map (after the loop
 * exists).  0, or -1 with err. */
int repl_sub_start(struct shard *sh, const struct shard_map *m, const struct cluster_key *k, char *err,
		   size_t errlen);
/* A router's subscription (DESIGN.md section 9, "The edge"): the catalogue
 * home only, applied into the tables the process opened (partners, keys,
 * channels); records of the tables it does not have are skipped. */
#define REPL_NO_SELF UINT32_MAX
int repl_sub_start_home(struct shard *sh, const struct shard_map *m, const struct cluster_key *k, char *err,
			size_t errlen);
/* The catalogue home recomputes the quantity of the offers whose levels it
 * replicated from another shard (engine/stock/inventory.c): the level's
 * offer id (NULL if unknown), and restaging one offer into the open
 * transaction (1 staged, 0 unchanged, -1 error).  Bound by the process
 * (engine/routes.c for a shard), so replication links no stock code. */
extern const char *(*const repl_level_offer)(struct shard *sh, const char *level_id, size_t len);
extern int (*const repl_restage_offer)(struct shard *sh, const char *offer_id);
/* A new shard map is in force (SIGHUP): follow a publisher to its new
 * address, subscribe to a new shard, stop asking one that left. */
void repl_sub_remap(struct shard *sh, const struct shard_map *m);
/* From the loop's tick: call deadlines. */
void repl_tick(struct shard *sh);
/* The publisher LSN this shard has applied from `publisher` (read-your-
 * writes); 0 when none or while resyncing. */
uint64_t repl_applied_lsn(struct shard *sh, uint32_t publisher);
/* 1 once this process has been caught up with `publisher` at least once
 * since it started (a router's edge is not ready before: its replica of
 * the keys could be missing the newest ones). */
int repl_synced(struct shard *sh, uint32_t publisher);
/* The wall time (ms) before which every write `publisher` made durable
 * is applied here: the send time of the last fetch whose answer left this
 * replica caught up (its answer covered the publisher's durable LSN at
 * answer time, which is later).  0 before the first such answer, or
 * without a subscription to `publisher`.  The webhook fan-out of a shard
 * other than the home waits for it (engine/webhooks/delivery.c). */
uint64_t repl_fresh_ms(struct shard *sh, uint32_t publisher);
/* /metrics lines and the /internal/cluster/status member "replication". */
void repl_metrics(struct shard *sh, struct buf *o);
void repl_status(struct shard *sh, struct jw *w);
/* Free the publisher and subscriber state (before shard_close). */
void repl_close(struct shard *sh);


#endif
