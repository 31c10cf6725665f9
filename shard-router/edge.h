/*
 * edge.h -- the edge at the router (DESIGN.md section 9, "The edge"): key
 * verification, scopes and actions, per-key rate limits, per-entity record
 * quotas and the read audit, done once, in front of every shard.
 *
 * The router keeps a small store of its own in --data-dir: replicas of the
 * catalogue home's partners and keys (WAL shipping, the home only), and
 * its audit log.  The same code as a shard's runs on it
 * (engine/edge/auth.c, audit.c), against the route table read from the
 * OpenAPI document (engine/edge/route_spec.h): a single shard and a
 * cluster answer a key, a scope, a rate or a quota the same way.
 *
 * A request the edge admits goes on with X-WM-Principal (signed with the
 * request); the shard reports the rows it returned and the cursor span
 * (X-WM-Rows, X-WM-Span-*), and redge_finish charges the quota and writes
 * the audit row.  See edge.c for the why of each step.
 */
#ifndef WM_ROUTER_EDGE_H
#define WM_ROUTER_EDGE_H

#include <stdint.h>

#include "engine/base/config.h"
#include "engine/cluster/cluster_auth.h"
#include "engine/cluster/shard_map.h"
#include "engine/edge/api.h"
#include "engine/edge/principal.h"
#include "engine/edge/route_spec.h"
#include "engine/storage/shard.h"
#include "net/client.h"
#include "net/server.h"

#define REDGE_SPARE 64u               /* freed request states an edge keeps for reuse */
#define REDGE_SPARE_BYTES (16u << 10) /* ... when their two buffers hold at most this */

struct redge {
	struct shard sh;          /* the router's store (sh.loop is the router's loop) */
	struct route_spec spec;   /* the routes, scopes and actions */
	int opened;
	uint64_t admitted, refused, audited;
	struct redge_req *spare;  /* freed request states kept for reuse (REDGE_SPARE) */
	unsigned n_spare;
};

/* One request through the edge, from admission to its audit row.  Owns
 * copies of what the audit needs after the server's request is gone. */
struct redge_req {
	struct api_ctx c;
	struct srv_request rq;           /* request_id only */
	struct srv_response rs;          /* the edge's headers (RateLimit), or its refusal */
	char principal[PRINCIPAL_MAX];
	int principal_len;
	uint32_t quota_left;             /* rows the entity may still read (sent to the shard) */
	struct redge_req *next_spare;    /* in the edge's spare list */
};

/*
 * Open the store in cfg->data_dir (recovering it), load the route table and
 * subscribe to the catalogue home.  The loop must exist.  0, or -1 with err.
 */
int redge_open(struct redge *e, const struct config *cfg, struct ev_loop *loop, const struct shard_map *m,
	       const struct cluster_key *k, char *err, size_t errlen);
/* The map changed (SIGHUP, 421): follow the home. */
void redge_remap(struct redge *e, const struct shard_map *m);
/* Loop hooks: every iteration (audit batch), every tick (snapshots,
 * replication deadlines). */
void redge_prepare(struct redge *e);
void redge_tick(struct redge *e);
/* Flush the audit and close the store (after the server is gone). */
void redge_close(struct redge *e);

/* The edge has been caught up with the catalogue home at least once (until
 * then it answers 503 not_ready: a key could be missing from its replica). */
int redge_ready(struct redge *e);
/* The home's LSN the edge's replica has applied (0 while resyncing). */
uint64_t redge_applied(struct redge *e);

enum redge_verdict {
	REDGE_PASS = 0,   /* no key needed here (public, unknown path): forward as is */
	REDGE_FORWARD,    /* admitted: forward with (*out)->principal, then redge_finish */
	REDGE_ANSWERED,   /* answered into rs (a refusal, or served here: GET /v1/audit) */
};

/*
 * Run the edge for a request: route, key, rate, scope, action.  On
 * REDGE_FORWARD *out is the request's edge state (the caller owns it until
 * redge_finish/redge_free).  REDGE_ANSWERED wrote rs (audited when it was an
 * authenticated read).  Out of memory answers 503.
 */
enum redge_verdict redge_admit(struct redge *e, const struct srv_request *rq, struct srv_response *rs,
			       struct redge_req **out);

/* What a shard reported about a read it answered (internal_headers.h),
 * or what the router counted itself for a merged fan-out page. */
struct redge_report {
	uint32_t rows;
	int quota_refused;
	char span_from[API_MAX_SPAN]; /* "" = keep the edge's own (the request's cursor) */
	char span_to[API_MAX_SPAN];
};

/* The report of a shard's answer (a NULL answer: nothing returned). */
void redge_report_from(const struct hc_response *a, struct redge_report *rep);

/*
 * The answer `final` (relayed, merged, or the router's own failure) is
 * about to go back: add the edge's headers (RateLimit); for a read, charge
 * the rows to the record quota -- or, when the shard says the quota did
 * not cover the read or the merged page holds more rows than it allowed,
 * rewrite final as the 429 the router's window explains -- and write the
 * audit row.  Frees q.
 */
void redge_finish(struct redge *e, struct redge_req *q, const struct redge_report *rep, struct srv_response *final);
/* Release q (NULL: nothing); up to REDGE_SPARE of them are kept, with
 * their buffers, for the next requests (no 8 KB malloc per request). */
void redge_free(struct redge *e, struct redge_req *q);

/* /metrics lines of the edge (store, replication, audit). */
void redge_metrics(struct redge *e, struct buf *b);

#endif
