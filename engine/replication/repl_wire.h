/*
 * repl_wire.h -- the wire format of a replication stream (DESIGN.md
 * section 9, "Replication"): what a publisher shard sends a subscriber.
 *
 * Why a format of its own and not the WAL's frames: a subscriber must get
 * only the tables the publisher publishes (never holds, orders, events,
 * idempotency or audit rows), never a transaction the publisher applied as
 * a subscriber itself (stale copies would loop), and never an LSN the
 * publisher has not made durable.  So the publisher re-frames its durable
 * transactions, filtered, as ONE chunk per response.  The records inside
 * are the storage layer's own after-images (engine/storage/record.h), so
 * the subscriber applies them through the same table code recovery uses.
 *
 * A chunk (all integers little-endian):
 *
 *   off  size
 *    0    8   magic "WMREPL\0\1" (the last byte is the format version)
 *    8    4   kind: 1 = WAL tail, 2 = snapshot page
 *   12    4   flags: bit 0 = the last page of a snapshot (kind 2 only)
 *   16    4   publisher shard id (< REPL_MAX_PUBLISHERS)
 *   20    4   number of transactions in the body
 *   24    8   epoch: the random identity of the publisher's data directory
 *   32    8   from_lsn: the position the chunk follows (kind 2: 0)
 *   40    8   to_lsn: the position after applying the chunk (>= from_lsn)
 *   48    8   durable_lsn: the publisher's durable LSN when it answered (>= to_lsn)
 *   56    8   publisher wall clock (unix ms) when it answered
 *   64    4   body length
 *   68    4   reserved, 0
 *   72    8   XXH3-64 of bytes 0..71 and the body
 *   80        body: per transaction  u64 lsn, u32 length, records
 *
 * Kind 1: transaction LSNs strictly increase, each in (from_lsn, to_lsn];
 * a transaction holds at least one record.  to_lsn may be past the last
 * transaction: the publisher's transactions in between published nothing.
 * Kind 2: at most one "transaction" whose LSN equals to_lsn (the page's
 * rows as the publisher held them at that LSN or later; see repl_pub.c).
 *
 * The decoder is strict (the stream is untrusted input reaching a parser;
 * tests/fuzz/fuzz_repl_stream.c): every length, order and bound is checked
 * and every record must decode (record.h) with an op PUT or DEL and a
 * table in the caller's allowed set.  A chunk is accepted whole or not at
 * all.
 */
#ifndef WM_REPL_WIRE_H
#define WM_REPL_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "net/buf.h"

#define REPL_HEADER_SIZE 80u
#define REPL_TXN_HEADER 12u
#define REPL_MAX_PUBLISHERS 64u       /* = SMAP_MAX_SHARDS */
#define REPL_MAX_CHUNK_BODY (2u << 20) /* bytes of one chunk's body, whatever max_bytes asked */
#define REPL_MAGIC "WMREPL\0\1"

enum repl_kind { REPL_K_WAL = 1, REPL_K_SNAPSHOT = 2 };
#define REPL_F_LAST 1u

struct repl_chunk {
	uint32_t kind, flags, publisher, n_txns;
	uint64_t epoch, from_lsn, to_lsn, durable_lsn, pub_unix_ms;
	const uint8_t *body;  /* points into the decoded bytes */
	uint32_t body_len;
};

/* A mask of enum rec_table values (bit t set = table t allowed). */
typedef uint32_t repl_tables;
#define REPL_T(t) ((repl_tables)1u << (t))

#define REPL_HOME 0u /* the catalogue home's shard id */
/* The tables shard `publisher` publishes (repl.h lists them; defined in
 * repl_pos.c): what a subscriber lets its decoder accept from it. */
repl_tables repl_published(uint32_t publisher);

/*
 * Encoding.  repl_chunk_begin writes a header for *h into out (counts and
 * checksum left for finish); repl_chunk_add appends one transaction;
 * repl_chunk_finish fills the count, body length and checksum.  The chunk
 * starts at out->len when begin is called (at).  0, or -1 on a bound or OOM.
 */
int repl_chunk_begin(struct buf *out, const struct repl_chunk *h, size_t *at);
int repl_chunk_add(struct buf *out, size_t at, uint64_t lsn, const void *records, size_t len);
int repl_chunk_finish(struct buf *out, size_t at);

/*
 * Decode and check a whole chunk p[0..len): 0 and *c filled (body pointing
 * into p), or -1 with the first problem in err (>= 128 bytes).  Every
 * record must be a PUT or DEL of a table in `allowed`.
 */
int repl_chunk_decode(const uint8_t *p, size_t len, repl_tables allowed, struct repl_chunk *c, char *err);

/* Walk the transactions of a decoded chunk: 1 with the next one (lsn,
 * records, length) and *off advanced, 0 at the end.  *off starts at 0. */
int repl_chunk_next(const struct repl_chunk *c, size_t *off, uint64_t *lsn, const uint8_t **rec, uint32_t *len);

#endif
