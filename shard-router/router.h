/*
 * router.h -- wm-router: the partner-facing front of a cluster (DESIGN.md
 * section 9).  It owns no partner data: each request is sent, signed with
 * the cluster secret, to the shard route_class.h names, and the shard's
 * answer is relayed.  See router.c for the rules.
 */
#ifndef WM_ROUTER_H
#define WM_ROUTER_H

#include <stdint.h>

#include "engine/base/config.h"
#include "net/client.h"
#include "net/ev.h"
#include "net/server.h"
#include "engine/cluster/cluster_auth.h"
#include "engine/cluster/route_class.h"
#include "engine/cluster/shard_map.h"
#include "shard-router/edge.h"

#define ROUTER_MAX_RESPONSE (32u << 20) /* bytes of one shard answer relayed */
#define ROUTER_QUEUE_PER_SHARD 4096u   /* calls waiting for a connection to one shard */
/* Quick forwarded requests in flight on one connection to a shard, at
 * most (client.h: pipelining; router.c fwd_quick): one batch of the loop's
 * ready events (EV_MAX_EVENTS) can then go in one write. */
#define ROUTER_SHARD_PIPELINE 16u
#define ROUTER_PROBE_MS 1000u          /* how often the home is asked whether it answers */
#define ROUTER_READY_WINDOW_MS 3000u   /* /readyz: the home answered within this */
#define ROUTER_MAX_RETIRED SMAP_MAX_SHARDS /* pools replaced by a map reload, freed at the next tick */
#define ROUTER_EDGE_WAIT_MAX 1024u     /* answers to key/partner writes waiting for the edge's replica */
#define ROUTER_FWD_SPARE 64u           /* finished requests' state kept for the next ones (router.c fwd_alloc) */
#define ROUTER_EDGE_WAIT_MS 2000u      /* ... at most this long (then they go anyway, logged) */

struct fwd;

/* Read-your-writes (engine/edge/park.h, DESIGN.md 9): the LSN each shard
 * reported for the newest write acknowledged through this router.  Every
 * request to a shard carries the others' positions, so whatever a caller
 * -- or anyone before it, through this router -- saw written, a replica
 * shows before it answers (the README's guide writes a location as the
 * estate and links it to a channel as the seller a moment later). */
struct router_ryw {
	uint64_t lsn[SMAP_MAX_SHARDS];
};

struct router_stats {
	uint64_t forwarded, relayed, failed, timeouts, refused_full, misdirected, map_reloads;
	uint64_t by_kind[RC_N_KIND];       /* requests per enum rc_kind */
};

struct router {
	struct config cfg;
	struct shard_map map;
	struct cluster_key key;
	struct ev_loop *loop;
	struct srv *srv;
	struct hc_pool *pools[SMAP_MAX_SHARDS]; /* one per shard of the map, by id */
	struct hc_pool *retired[ROUTER_MAX_RETIRED];
	struct router_ryw ryw;
	uint32_t n_retired;
	struct router_stats st;
	uint64_t home_seen_ms;             /* last answer from the catalogue home (probe or relay) */
	uint64_t home_lsn;                 /* the home's LSN at the last probe (/readyz) */
	int probe_busy;
	uint64_t next_probe_ms;
	uint64_t started_ms;
	struct redge edge;                 /* keys, rates, quotas, audit (edge.h); owns <data-dir> */
	/* A key or partner written through this router is usable through it as
	 * soon as the caller hears of the write: the answer waits until the
	 * edge's replica has applied it (router_edge_poll). */
	struct fwd *edge_wait[ROUTER_EDGE_WAIT_MAX];
	uint32_t n_edge_wait;
	struct coord *coord;               /* cross-shard orders (coordinator.h) */
	struct fwd *fwd_spare;             /* finished requests' state, with their buffers, for reuse */
	uint32_t n_fwd_spare;              /* <= ROUTER_FWD_SPARE */
	struct buf call_hdrs;              /* fwd_send's header lines, reused call after call */
	int closing;                       /* router_close runs: no new call */
};

/* Load the map and the secret, open the data directory and the shard
 * pools; the server is created by the caller (router_handle is its
 * handler).  0, or -1 with the reason in err. */
int router_open(struct router *r, const struct config *cfg, struct ev_loop *loop, char *err, size_t errlen);
/* Re-read the map file: 0 (in force now), -1 (kept the old one; err says
 * why).  Pools of shards whose address changed are replaced. */
int router_reload_map(struct router *r, char *err, size_t errlen);
/* The server's handler (app = struct router *). */
void router_handle(void *app, const struct srv_request *rq, struct srv_response *rs);
/* Release the answers whose write the edge's replica has applied, or
 * whose wait is over (from the loop's prepare hook and tick); with all != 0,
 * every one (before close). */
void router_edge_poll(struct router *r, int all);
/* Periodic work: pool deadlines, the home probe. */
void router_tick(struct router *r);
/* Fail every call in flight (their deferred answers complete: call it
 * before srv_free) and release everything. */
void router_close(struct router *r);

#endif
