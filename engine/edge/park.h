/*
 * park.h -- read-your-writes through a router (DESIGN.md section 9): a
 * request that names a replication position this shard has not applied
 * yet waits here, bounded, instead of reading a replica that does not show
 * the caller's own write.
 *
 * The router sends, on a request to a shard that is not the publisher of
 * what the caller last wrote,
 *
 *     X-WM-Min-Position: <publisher shard id>:<LSN>[,<publisher>:<LSN>...]
 *
 * (signed traffic only; a client's own X-WM-* headers never pass the
 * router).  If the shard's replica of that publisher is behind, the
 * request is deferred (net/server.h srv_defer) with a copy of its bytes;
 * park_poll, run after every loop iteration, answers it once the replica
 * has caught up -- by running it then, exactly as if it had just arrived --
 * or with 503 replica_behind and Retry-After once PARK_WAIT_MS passed.
 */
#ifndef WM_PARK_H
#define WM_PARK_H

#include <stdint.h>

#include "engine/edge/api.h"
#include "engine/cluster/internal_headers.h"

#define PARK_MAX 1024          /* requests waiting at once; one more gets the 503 at once */
#define PARK_WAIT_MS 2000u     /* longest wait for the replica */

#define PARK_MAX_PUBLISHERS 64  /* shard ids 0..63 (SMAP_MAX_SHARDS) */
#define PARK_HEADER_MAX 1400    /* bytes of the header value: 64 x "63:<20 digits>," */

struct park_position {
	uint32_t publisher;
	uint64_t lsn;
};

/* Parse "<publisher>:<lsn>[,...]" (n bytes, not NUL-terminated; at most
 * max entries): how many, or -1 when malformed (empty, an entry that is
 * not two decimals, a publisher past 63, an LSN past 2^64-1, more than
 * max entries or PARK_HEADER_MAX bytes). */
int park_positions_parse(const char *v, size_t n, struct park_position *out, unsigned max);

/* In api_handle, for a signed request: 0 = go on (no position, or it is
 * applied), 1 = the request was parked or refused (answered). */
int park_check(struct api_ctx *c);
/* Answer the parked requests whose position is now applied (running
 * them through `run`, the server's handler: dispatch.c's api_handle) or
 * whose wait is over.  Cheap when none waits. */
void park_poll(struct shard *sh, srv_handler_fn run);
/* Requests waiting now (for /metrics). */
uint32_t park_count(void);

#endif
