/*
 * coordinator.h -- the router as coordinator of cross-shard orders
 * (DESIGN.md section 9, "Cross-shard orders: presumed-abort 2PC").
 *
 * A POST /v1/orders goes to the destination's shard with X-WM-Coordinator:
 * r<router id>.  When the order's stock lies on other shards the
 * destination stores it placed and answers 202 with the transaction id and
 * the legs (X-WM-Txn, X-WM-Txn-Legs); the router then runs, for that
 * request (coordinator.c says why each step is where it is):
 *
 *   PREPARE every owner shard, in parallel     (txn_part.h: forced yes/no)
 *   charge at the destination                  (paid, or failed + refunded)
 *   COMMIT forced in the decision log          (decision_log.h, group commit)
 *   commit at the destination                  (confirmed, sourced)
 *   COMMIT every participant, in parallel      (stock.reserved, forced)
 *   rest at the destination -> the answer      (reserved; relayed to the client)
 *   END, lazily
 *
 * Before the decision any failure aborts: participants release, the
 * destination fails the order (reason code) and refunds; its answer is
 * relayed.  After it, steps are retried until they succeed -- also after a
 * restart: coord_open re-drives every COMMIT without END before the router
 * serves.  GET /internal/txn/status?txn=T answers a participant in doubt:
 * commit, in_progress, or abort (no record and not in progress).
 */
#ifndef WM_COORDINATOR_H
#define WM_COORDINATOR_H

#include <stdint.h>

#include "net/buf.h"
#include "net/client.h"
#include "net/server.h"

#define COORD_MAX_ACTIVE 4096u       /* transactions in progress at once (more: the order is refused 503) */
#define COORD_RETRY_MS 500u          /* a step after the decision that failed is sent again after this */
#define COORD_CALL_TIMEOUT_MS 5000u  /* one internal call of the protocol */

struct router;
struct fwd;
struct coord;

/* Open the decision log in <data-dir>/decisions and re-drive what it holds
 * undecided... committed without END.  0, or -1 with err. */
int coord_open(struct router *r, char *err, size_t errlen);
void coord_close(struct router *r);

/* The header the router adds to a POST /v1/orders ("X-WM-Coordinator:
 * r<id>\r\n"), "" when it does not coordinate. */
const char *coord_header(const struct router *r);

/* A destination answered an order with a plan (202 + X-WM-Txn): take the
 * request over.  1 = taken (it will be answered by the coordinator), 0 =
 * not a plan (relay the answer). */
int coord_begin(struct router *r, struct fwd *f, uint32_t dest, const struct hc_response *a);

/* GET /internal/txn/status?txn=T (signed): the decision into rs. */
void coord_status(struct router *r, const char *query, size_t query_len, struct srv_response *rs);

/* Retries of steps after the decision (from the tick). */
void coord_tick(struct router *r);

/* /metrics: in-progress transactions, undecided ones in the log, the
 * oldest's age, commits and aborts. */
void coord_metrics(struct router *r, struct buf *b);
/* For wm-ctl cluster status: transactions in doubt (committed, not ended). */
uint64_t coord_in_doubt(struct router *r);

#endif
