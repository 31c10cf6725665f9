/*
 * repl_int.h -- what the replication files share among themselves (and
 * with their unit tests), not with the rest of the engine (repl.h).
 *
 * The publisher's buffer (repl_pub.c): published transactions in LSN
 * order, bounded by bytes; evicting the oldest raises base_lsn, and a
 * position below base_lsn can no longer be served (410, resync).
 */
#ifndef WM_REPL_INT_H
#define WM_REPL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "engine/replication/repl_wire.h"
#include "net/buf.h"
#include "net/jsonw.h"

struct shard;
struct repl_ring;

/* A buffer keeping at most max_bytes (payloads plus 16 bytes each). */
struct repl_ring *repl_ring_new(size_t max_bytes);
void repl_ring_free(struct repl_ring *r);
/* The first LSN the buffer sees is lsn + 1 (everything up to lsn is
 * before its time); only the first call counts. */
void repl_ring_start(struct repl_ring *r, uint64_t lsn);
/* Transaction lsn logged, data[0..len) its published records (len 0:
 * nothing published, only the position moves).  0, or -1 on OOM. */
int repl_ring_push(struct repl_ring *r, uint64_t lsn, const void *data, size_t len);
uint64_t repl_ring_base(const struct repl_ring *r);
size_t repl_ring_bytes(const struct repl_ring *r);
size_t repl_ring_count(const struct repl_ring *r);
/*
 * Append to out one chunk of header *h (kind, publisher, epoch, from_lsn,
 * durable_lsn, pub_unix_ms used; to_lsn computed) holding the buffered
 * transactions in (from_lsn, durable_lsn], at most max_bytes of body but
 * at least one transaction.  0, 1 when from_lsn is below the base or above
 * durable_lsn (resync), -1 on a bound/OOM.
 */
int repl_ring_fill(const struct repl_ring *r, const struct repl_chunk *h, uint64_t max_bytes, struct buf *out);

/* True if a transaction image carries a position row (applied as a
 * subscriber: never published again).  repl_pos.c. */
int repl_is_replica_txn(const void *img, size_t len);

/* Publisher pieces used by repl_sub.c's metrics/status/close. */
void repl_pub_free(struct shard *sh);
void repl_pub_metrics(struct shard *sh, struct buf *o);
void repl_pub_status(struct shard *sh, struct jw *w);
/* Hex of a row id (2 * len + 1 bytes): the snapshot cursor. */
void repl_hex_key(const char *k, size_t len, char *out);

#endif
