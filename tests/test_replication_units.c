/*
 * test_replication_units.c -- the replication stream's pieces without
 * processes: the chunk decoder refuses torn, forged and out-of-contract
 * chunks (engine/replication/repl_wire.c), the publisher's buffer keeps
 * exactly its byte bound (at and one past the edge) and serves positions
 * only inside what it covers (repl_pub.c), and a transaction carrying a
 * position row is recognised as a replica's (repl_pos.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/replication/repl_int.h"
#include "engine/replication/repl_wire.h"
#include "engine/storage/record.h"
#include "net/buf.h"
#include "tests/wm_test.h"

/* One transaction image of n PUT records of table t, keys "k<i>". */
static void txn_of(struct buf *b, uint8_t t, int n)
{
	buf_reset(b);
	for (int i = 0; i < n; i++) {
		char k[16];
		int kl = snprintf(k, sizeof(k), "k%d", i);
		cr_assert_eq(rec_encode(b, REC_PUT, t, 1, k, (size_t)kl, "{\"a\":1}", 7), 0);
	}
}

/* A valid WAL chunk of publisher 1 with transactions at LSNs 5 and 7. */
static void chunk_of(struct buf *out, uint8_t table)
{
	struct buf t;
	buf_init(&t, 1 << 16);
	struct repl_chunk h = {.kind = REPL_K_WAL, .publisher = 1, .epoch = 0x1234, .from_lsn = 4, .to_lsn = 9,
			       .durable_lsn = 9, .pub_unix_ms = 1};
	size_t at;
	cr_assert_eq(repl_chunk_begin(out, &h, &at), 0);
	txn_of(&t, table, 2);
	cr_assert_eq(repl_chunk_add(out, at, 5, t.data, t.len), 0);
	txn_of(&t, table, 1);
	cr_assert_eq(repl_chunk_add(out, at, 7, t.data, t.len), 0);
	cr_assert_eq(repl_chunk_finish(out, at), 0);
	buf_free(&t);
}

WM_TEST(replication_units, a_chunk_round_trips)
{
	struct buf b;
	buf_init(&b, 1 << 20);
	chunk_of(&b, REC_T_INVENTORY);
	struct repl_chunk c;
	char why[128];
	cr_assert_eq(repl_chunk_decode((const uint8_t *)b.data, b.len, repl_published(1), &c, why), 0, "%s", why);
	cr_assert_eq(c.publisher, 1);
	cr_assert_eq(c.epoch, 0x1234);
	cr_assert_eq(c.n_txns, 2);
	cr_assert_eq(c.to_lsn, 9);
	size_t off = 0;
	uint64_t lsn;
	const uint8_t *rec;
	uint32_t len;
	cr_assert(repl_chunk_next(&c, &off, &lsn, &rec, &len));
	cr_assert_eq(lsn, 5);
	cr_assert(repl_chunk_next(&c, &off, &lsn, &rec, &len));
	cr_assert_eq(lsn, 7);
	cr_assert_not(repl_chunk_next(&c, &off, &lsn, &rec, &len));
	buf_free(&b);
}

WM_TEST(replication_units, torn_and_flipped_chunks_are_refused)
{
	struct buf b;
	buf_init(&b, 1 << 20);
	chunk_of(&b, REC_T_INVENTORY);
	struct repl_chunk c;
	char why[128];
	for (size_t n = 0; n < b.len; n++) /* every torn prefix */
		cr_assert_neq(repl_chunk_decode((const uint8_t *)b.data, n, repl_published(1), &c, why), 0, "%zu", n);
	uint8_t *p = malloc(b.len + 1);
	memcpy(p, b.data, b.len);
	p[b.len] = 0; /* one byte too many */
	cr_assert_neq(repl_chunk_decode(p, b.len + 1, repl_published(1), &c, why), 0);
	for (size_t i = 0; i < b.len; i++) /* every single-bit flip (forgery without the checksum) */
		for (int bit = 0; bit < 8; bit++) {
			p[i] ^= (uint8_t)(1u << bit);
			cr_assert_neq(repl_chunk_decode(p, b.len, repl_published(1), &c, why), 0, "byte %zu bit %d", i, bit);
			p[i] ^= (uint8_t)(1u << bit);
		}
	cr_assert_eq(repl_chunk_decode(p, b.len, repl_published(1), &c, why), 0);
	free(p);
	buf_free(&b);
}

WM_TEST(replication_units, well_formed_chunks_outside_the_contract_are_refused)
{
	struct buf b, t;
	buf_init(&b, 1 << 20);
	buf_init(&t, 1 << 16);
	struct repl_chunk c;
	char why[128];
	/* a table the publisher does not publish: orders from shard 1, an
	 * offer from shard 1 (only the home publishes catalogue), META */
	const uint8_t refused[] = {REC_T_ORDER, REC_T_OFFER, REC_T_META, REC_T_HOLD, REC_T_EVENT};
	for (size_t i = 0; i < sizeof(refused); i++) {
		buf_reset(&b);
		chunk_of(&b, refused[i]);
		cr_assert_neq(repl_chunk_decode((const uint8_t *)b.data, b.len, repl_published(1), &c, why), 0, "%u",
			      refused[i]);
	}
	buf_reset(&b);
	chunk_of(&b, REC_T_OFFER);
	cr_assert_eq(repl_chunk_decode((const uint8_t *)b.data, b.len, repl_published(0), &c, why), 0, "the home's");
	/* LSNs out of order, beyond to_lsn, a snapshot page with two parts,
	 * to beyond durable, a zero epoch */
	struct {
		struct repl_chunk h;
		uint64_t l1, l2;
	} bad[] = {
		{{.kind = REPL_K_WAL, .publisher = 1, .epoch = 1, .from_lsn = 4, .to_lsn = 9, .durable_lsn = 9}, 7, 6},
		{{.kind = REPL_K_WAL, .publisher = 1, .epoch = 1, .from_lsn = 4, .to_lsn = 9, .durable_lsn = 9}, 4, 6},
		{{.kind = REPL_K_WAL, .publisher = 1, .epoch = 1, .from_lsn = 4, .to_lsn = 9, .durable_lsn = 9}, 5, 10},
		{{.kind = REPL_K_SNAPSHOT, .publisher = 1, .epoch = 1, .to_lsn = 9, .durable_lsn = 9}, 9, 9},
		{{.kind = REPL_K_WAL, .publisher = 1, .epoch = 1, .from_lsn = 4, .to_lsn = 9, .durable_lsn = 8}, 5, 6},
		{{.kind = REPL_K_WAL, .publisher = 1, .epoch = 0, .from_lsn = 4, .to_lsn = 9, .durable_lsn = 9}, 5, 6},
		{{.kind = 3, .publisher = 1, .epoch = 1, .from_lsn = 4, .to_lsn = 9, .durable_lsn = 9}, 5, 6},
		{{.kind = REPL_K_WAL, .flags = REPL_F_LAST, .publisher = 1, .epoch = 1, .from_lsn = 4, .to_lsn = 9,
		  .durable_lsn = 9}, 5, 6},
		{{.kind = REPL_K_WAL, .publisher = REPL_MAX_PUBLISHERS, .epoch = 1, .from_lsn = 4, .to_lsn = 9,
		  .durable_lsn = 9}, 5, 6},
	};
	txn_of(&t, REC_T_INVENTORY, 1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		buf_reset(&b);
		size_t at;
		cr_assert_eq(repl_chunk_begin(&b, &bad[i].h, &at), 0);
		cr_assert_eq(repl_chunk_add(&b, at, bad[i].l1, t.data, t.len), 0);
		cr_assert_eq(repl_chunk_add(&b, at, bad[i].l2, t.data, t.len), 0);
		cr_assert_eq(repl_chunk_finish(&b, at), 0);
		cr_assert_neq(repl_chunk_decode((const uint8_t *)b.data, b.len, repl_published(1), &c, why), 0, "case %zu",
			      i);
	}
	/* an empty transaction cannot even be encoded */
	buf_reset(&b);
	size_t at;
	cr_assert_eq(repl_chunk_begin(&b, &bad[0].h, &at), 0);
	cr_assert_neq(repl_chunk_add(&b, at, 5, t.data, 0), 0);
	buf_free(&t);
	buf_free(&b);
}

WM_TEST(replication_units, chunk_body_bound_at_and_past_its_edge)
{
	struct buf b;
	buf_init(&b, REPL_HEADER_SIZE + REPL_MAX_CHUNK_BODY + 64);
	struct repl_chunk h = {.kind = REPL_K_WAL, .publisher = 1, .epoch = 1, .from_lsn = 0, .to_lsn = 9,
			       .durable_lsn = 9};
	size_t at;
	uint32_t room = REPL_MAX_CHUNK_BODY - REPL_TXN_HEADER;
	char *big = calloc(1, room + 1);
	cr_assert_eq(repl_chunk_begin(&b, &h, &at), 0);
	cr_assert_neq(repl_chunk_add(&b, at, 1, big, room + 1), 0, "one byte past the bound");
	cr_assert_eq(repl_chunk_add(&b, at, 1, big, room), 0, "exactly the bound");
	cr_assert_eq(repl_chunk_finish(&b, at), 0);
	cr_assert_eq(b.len, REPL_HEADER_SIZE + REPL_MAX_CHUNK_BODY);
	free(big);
	buf_free(&b);
}

static void push(struct repl_ring *r, uint64_t lsn, size_t len)
{
	static char pay[1024];
	cr_assert_eq(repl_ring_push(r, lsn, pay, len), 0);
}

WM_TEST(replication_units, buffer_keeps_its_byte_bound_at_and_past_the_edge)
{
	/* each held transaction costs its payload + 16 bytes */
	struct repl_ring *r = repl_ring_new(3 * (100 + 16));
	repl_ring_start(r, 0);
	push(r, 1, 100);
	push(r, 2, 100);
	push(r, 3, 100);
	cr_assert_eq(repl_ring_bytes(r), 348, "exactly at the bound: all kept");
	cr_assert_eq(repl_ring_count(r), 3);
	cr_assert_eq(repl_ring_base(r), 0);
	push(r, 4, 1); /* past it: the oldest goes, the base moves to it */
	cr_assert_eq(repl_ring_count(r), 3);
	cr_assert_eq(repl_ring_base(r), 1);
	repl_ring_free(r);

	r = repl_ring_new(3 * (100 + 16) - 1); /* one byte less */
	repl_ring_start(r, 0);
	push(r, 1, 100);
	push(r, 2, 100);
	push(r, 3, 100);
	cr_assert_eq(repl_ring_count(r), 2);
	cr_assert_eq(repl_ring_base(r), 1);
	/* a transaction that published nothing moves no base and costs nothing */
	cr_assert_eq(repl_ring_push(r, 4, NULL, 0), 0);
	cr_assert_eq(repl_ring_count(r), 2);
	cr_assert_eq(repl_ring_base(r), 1);
	repl_ring_free(r);
}

WM_TEST(replication_units, buffer_serves_only_what_it_covers_and_what_is_durable)
{
	struct repl_ring *r = repl_ring_new(1 << 20);
	repl_ring_start(r, 10); /* recovered at LSN 10: nothing older is held */
	struct buf t, out;
	buf_init(&t, 1 << 16);
	buf_init(&out, 1 << 20);
	txn_of(&t, REC_T_INVENTORY, 1);
	cr_assert_eq(repl_ring_push(r, 11, t.data, t.len), 0);
	cr_assert_eq(repl_ring_push(r, 12, NULL, 0), 0);
	cr_assert_eq(repl_ring_push(r, 13, t.data, t.len), 0);
	cr_assert_eq(repl_ring_push(r, 14, t.data, t.len), 0);
	struct repl_chunk h = {.kind = REPL_K_WAL, .publisher = 2, .epoch = 7, .durable_lsn = 13, .pub_unix_ms = 1};
	h.from_lsn = 9;
	cr_assert_eq(repl_ring_fill(r, &h, 1 << 20, &out), 1, "older than the base");
	h.from_lsn = 14;
	cr_assert_eq(repl_ring_fill(r, &h, 1 << 20, &out), 1, "ahead of the durable LSN");
	struct repl_chunk c;
	char why[128];
	h.from_lsn = 10;
	buf_reset(&out);
	cr_assert_eq(repl_ring_fill(r, &h, 1 << 20, &out), 0);
	cr_assert_eq(repl_chunk_decode((const uint8_t *)out.data, out.len, repl_published(2), &c, why), 0, "%s", why);
	cr_assert_eq(c.n_txns, 2, "11 and 13; 14 is not durable");
	cr_assert_eq(c.to_lsn, 13);
	/* max_bytes smaller than one transaction: still one, and the chunk
	 * covers exactly up to it */
	buf_reset(&out);
	cr_assert_eq(repl_ring_fill(r, &h, 1, &out), 0);
	cr_assert_eq(repl_chunk_decode((const uint8_t *)out.data, out.len, repl_published(2), &c, why), 0, "%s", why);
	cr_assert_eq(c.n_txns, 1);
	cr_assert_eq(c.to_lsn, 11);
	/* caught up: an empty chunk at the durable LSN */
	h.from_lsn = 13;
	buf_reset(&out);
	cr_assert_eq(repl_ring_fill(r, &h, 1 << 20, &out), 0);
	cr_assert_eq(repl_chunk_decode((const uint8_t *)out.data, out.len, repl_published(2), &c, why), 0, "%s", why);
	cr_assert_eq(c.n_txns, 0);
	cr_assert_eq(c.to_lsn, 13);
	buf_free(&t);
	buf_free(&out);
	repl_ring_free(r);
}

WM_TEST(replication_units, a_position_row_marks_a_replica_transaction)
{
	struct buf b;
	buf_init(&b, 1 << 16);
	txn_of(&b, REC_T_OFFER, 2);
	cr_assert_not(repl_is_replica_txn(b.data, b.len));
	cr_assert_eq(rec_encode(&b, REC_PUT, REC_T_META, 1, "other", 5, "{}", 2), 0);
	cr_assert_not(repl_is_replica_txn(b.data, b.len), "only a position row marks it");
	cr_assert_eq(rec_encode(&b, REC_PUT, REC_T_META, 1, "repl/pos/2", 10, "{}", 2), 0);
	cr_assert(repl_is_replica_txn(b.data, b.len));
	buf_free(&b);
}
