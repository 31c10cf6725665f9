/*
 * txn_part.h -- this shard as a participant of cross-shard orders
 * (DESIGN.md section 9, "Cross-shard orders: presumed-abort 2PC").
 *
 * A router coordinates; every shard that owns a leg's stock takes part:
 *
 *   POST /internal/txn/prepare {"txn":T,"holds":[{"hold_id","level_id","qty"}...]}
 *        every hold placed PREPARED, all or none; the answer is the vote:
 *        200 {"vote":"yes"}, or 409 {"vote":"no","short":[{"level_id","atp"}]}
 *        (nothing held).  The answer leaves only once the holds are durable
 *        (the server holds every answer for its LSN): a yes vote is forced.
 *   POST /internal/txn/commit {"txn":T}   every hold of T -> COMMITTED
 *        (stock.reserved); forced before the 200.  Idempotent.
 *   POST /internal/txn/abort {"txn":T}    every PREPARED hold of T ->
 *        RELEASED.  Idempotent; an unknown T is a 200 (nothing to undo).
 *   POST /internal/txn/release {"txn":T}  a cancelled or failed order's
 *        compensation, from its destination: every hold of T, committed
 *        or not, -> RELEASED (a shipped one is a 409).  Idempotent.
 *
 * A transaction id is "r<router id>:<order id>" (txn_id_parse): the router
 * that coordinates it, named in the shard map's `router` lines.  A hold
 * PREPARED for longer than TXN_PREPARED_TIMEOUT_MS is in doubt: the shard
 * asks that router (GET /internal/txn/status?txn=T) and applies the answer
 * -- commit, abort, or wait while it is in progress.  No record there
 * means abort (presumed abort).  Holds are rows: snapshots and the WAL
 * carry in-doubt holds across restarts, and the clock starts again on load.
 */
#ifndef WM_TXN_PART_H
#define WM_TXN_PART_H

#include <stdint.h>

#include "engine/edge/api.h"
#include "net/buf.h"
#include "net/client.h"

#define TXN_PART_MAX_HOLDS 32            /* holds of one transaction on one shard (ORDER_MAX_LEGS) */
#define TXN_PREPARED_TIMEOUT_MS 10000u   /* a PREPARED hold older than this is in doubt */
#define TXN_ASK_EVERY_MS 1000u           /* how often the in-doubt holds are looked at */
#define TXN_ASK_TIMEOUT_MS 3000u         /* one question to a coordinator */

/* The /internal/txn/ routes (bound into the internal route table). */
extern const struct route txn_part_internal_routes[];

/* "r<id>:<order id>" with id 0..SMAP_MAX_ROUTERS-1 and an order id of
 * [A-Za-z0-9_], at most INV_TXN_ID_MAX bytes: the router id, or -1. */
int txn_id_parse(const char *txn);

/* How long a transaction may stay undecided here before its coordinator
 * is asked (--txn-timeout-ms; TXN_PREPARED_TIMEOUT_MS by default). */
uint64_t txn_timeout_ms(const struct shard *sh);

/* Ask txn's coordinator what it decided; fn(sh, txn, commit) runs with
 * its answer (commit 1, abort 0), never for "in progress" or no answer
 * (asked again later by whoever asks).  One question per txn in flight;
 * a no-op outside cluster mode.  The destination of a cross-shard order
 * uses it too (engine/orders/order_txn.c). */
typedef void (*txn_decision_fn)(struct shard *sh, const char *txn, int commit);
void txn_ask(struct shard *sh, const char *txn, txn_decision_fn fn);
int txn_asking(const char *txn);

/* A signed POST of body (JSON) to shard `shard` of the map (a
 * destination releasing a cancelled order's legs: POST
 * /internal/txn/release).  0, or -1 (fn is then not called). */
int txn_shard_call(struct shard *sh, uint32_t shard, const char *path, const char *body, hc_done_fn fn, void *arg);

/* From the loop's tick: ask the coordinators about the holds in doubt
 * (cluster mode only; a no-op otherwise). */
void txn_part_tick(struct shard *sh);
/* /metrics: wm_txn_in_doubt_holds, wm_txn_in_doubt_oldest_seconds. */
void txn_part_metrics(struct shard *sh, struct buf *o);
/* Free the coordinator pools (before the loop goes). */
void txn_part_close(void);

#endif
