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
 *   [a no for want of stock: release every hold, the destination re-plans
 *    once with the reported ATP (order.h: order_replan), PREPARE again]
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
#include "net/ev.h"

#define COORD_MAX_ACTIVE 4096u       /* transactions in progress at once (more: the order is refused 503) */
#define COORD_RETRY_MS 500u          /* a step after the decision that failed is sent again after this */
#define COORD_CALL_TIMEOUT_MS 5000u  /* one internal call of the protocol */
#define COORD_TEST_STALL_MS 2000u    /* test builds: errinj txn_router_stall_after_decision */
#define COORD_PRUNE_EVERY_MS 10000u  /* how often the decision log drops fully ended segments */

struct fwd;
struct coord;
struct shard_map;
struct ev_loop;

/* What the coordinator needs of the router (router.c fills it): where it
 * runs, its map, and the calls and answers it makes through the router. */
struct coord_host {
	void *router;                  /* passed back to call() */
	struct ev_loop *loop;
	const struct shard_map *map;   /* the map in force (reloaded in place) */
	const char *data_dir;          /* <data_dir>/decisions holds the log */
	const char *wal_mode;          /* the log's durability: fsync, write, none */
	uint64_t router_id;            /* transactions are "r<id>:<order id>" */
	/* a signed POST to a shard (principal may be NULL; pipeline: it may
	 * share a connection, client.h): 0, or -1 (done is then not called) */
	int (*call)(void *router, uint32_t shard, const char *method, const char *path, const char *body,
		    size_t body_len, const char *principal, size_t principal_len, uint32_t timeout_ms, int pipeline,
		    hc_done_fn done, void *arg);
	void (*finish)(struct fwd *f, struct srv_response *rs);              /* answer a deferred request */
	const char *(*principal)(const struct fwd *f, size_t *len);         /* its forwarded principal */
	const char *(*request_body)(const struct fwd *f, size_t *len);      /* the client's request body */
	void (*relay)(struct srv_response *rs, const struct hc_response *a, char *ctype, size_t ctype_size);
};

/* Open the decision log in <data_dir>/decisions and re-drive every COMMIT
 * without END.  0 and *out, or -1 with err. */
int coord_open(const struct coord_host *host, struct coord **out, char *err, size_t errlen);
/* Answer what is still waiting (503) and close the log.  NULL: no-op. */
void coord_close(struct coord *co);

/* The header the router adds to a POST /v1/orders ("X-WM-Coordinator:
 * r<id>\r\n"), "" without a coordinator. */
const char *coord_header(const struct coord *co);

/* A destination answered an order with a plan (202 + X-WM-Txn): take the
 * request over.  1 = taken (the coordinator answers it), 0 = not a plan
 * (relay the answer). */
int coord_begin(struct coord *co, struct fwd *f, uint32_t dest, const struct hc_response *a);

/* GET /internal/txn/status?txn=T (signed): the decision into rs. */
void coord_status(struct coord *co, const char *query, size_t query_len, struct srv_response *rs);

/* Retries of steps after the decision, the log's pruning (from the tick). */
void coord_tick(struct coord *co);

/* /metrics: in-progress transactions, undecided ones in the log, the
 * oldest's age, commits and aborts. */
void coord_metrics(struct coord *co, struct buf *b);
/* For wm-ctl cluster status: transactions in doubt (committed, not ended). */
uint64_t coord_in_doubt(struct coord *co);

#endif
