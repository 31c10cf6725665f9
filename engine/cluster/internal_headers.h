/*
 * internal_headers.h -- the headers of internal cluster traffic (DESIGN.md
 * section 9), named once for the router and the shards.  A router drops
 * every X-WM-* header a client sends, so none of these can be forged from
 * outside; a shard reads them only on a request with a valid cluster
 * signature (cluster_auth.h).
 */
#ifndef WM_INTERNAL_HEADERS_H
#define WM_INTERNAL_HEADERS_H

/* router -> shard: a fan-out page (shard-router/fanout.h); the list body
 * then ends with "_cursors", the shard cursor after each row of "data". */
#define WM_H_FANOUT "X-WM-Fanout"
/* router -> shard: "<publisher>:<LSN>[,...]", the caller's own earlier
 * writes the shard's replicas must show first (engine/edge/park.h). */
#define WM_H_MIN_POSITION "X-WM-Min-Position"
/* shard -> router, on a response that changed state: the shard's LSN after
 * it (what read-your-writes waits for). */
#define WM_H_LSN "X-WM-LSN"
/* shard -> router, on a 421: the shard's map version. */
#define WM_H_MAP_VERSION "X-WM-Map-Version"

#endif
