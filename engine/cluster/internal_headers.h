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
/* router -> shard: the caller the router authenticated (engine/edge/
 * principal.h); the request's signature covers it. */
#define WM_H_PRINCIPAL "X-WM-Principal"
/* shard -> router, on a request that carried a principal: the rows the
 * response returned, the cursor span of a list (from, to; absent = none),
 * and "1" when the record quota refused the read -- what the router charges
 * and audits (DESIGN.md section 9, "The edge"). */
#define WM_H_ROWS "X-WM-Rows"
#define WM_H_SPAN_FROM "X-WM-Span-From"
#define WM_H_SPAN_TO "X-WM-Span-To"
#define WM_H_QUOTA_REFUSED "X-WM-Quota-Refused"
/* router -> destination shard, on POST /v1/orders: "r<router id>", the
 * router that coordinates the order if its stock lies on other shards
 * (DESIGN.md 9, two-phase commit). */
#define WM_H_COORDINATOR "X-WM-Coordinator"
/* destination shard -> router, with a 202 to such an order: its
 * transaction id, and its legs "<hold id> <level id> <qty>[,...]". */
#define WM_H_TXN "X-WM-Txn"
#define WM_H_TXN_LEGS "X-WM-Txn-Legs"
/* shard -> router, on a 421: the shard's map version. */
#define WM_H_MAP_VERSION "X-WM-Map-Version"

#endif
