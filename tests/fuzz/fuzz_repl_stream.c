/*
 * fuzz_repl_stream.c -- the replication chunk decoder
 * (engine/replication/repl_wire.c) on arbitrary bytes: a subscriber feeds
 * it whatever a peer sent.  Each input is decoded twice: as it is (the
 * checksum stops almost everything), and with its body length and
 * checksum patched by the encoder, so the fuzzer reaches the header rules
 * and the record parser behind the checksum.  It must return 0 or -1,
 * never read past the input, and a chunk it accepts must walk exactly to
 * its end and re-encode to the same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/replication/repl_wire.h"
#include "engine/storage/record.h"
#include "net/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An accepted chunk: walk it, check each record, rebuild it, compare. */
static void check_accepted(const uint8_t *p, size_t len, const struct repl_chunk *c, repl_tables allowed)
{
	struct buf b;
	buf_init(&b, REPL_HEADER_SIZE + REPL_MAX_CHUNK_BODY);
	size_t at, off = 0;
	if (repl_chunk_begin(&b, c, &at))
		abort();
	uint64_t lsn, prev = c->from_lsn;
	const uint8_t *rec;
	uint32_t rl, n = 0;
	while (repl_chunk_next(c, &off, &lsn, &rec, &rl)) {
		if (rec < c->body || rec + rl > c->body + c->body_len || (c->kind == REPL_K_WAL && lsn <= prev))
			abort();
		size_t o = 0;
		struct rec_view rv;
		int r;
		while ((r = rec_decode(rec, rl, &o, &rv)) == 1)
			if (!(allowed & REPL_T(rv.table)))
				abort();
		if (r != 0 || repl_chunk_add(&b, at, lsn, rec, rl))
			abort();
		prev = lsn;
		n++;
	}
	if (off != c->body_len || n != c->n_txns)
		abort();
	/* flags travel in the header; begin() writes them */
	if (repl_chunk_finish(&b, at) || b.len != len || memcmp(b.data, p, len))
		abort();
	buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct repl_chunk c;
	char why[128];
	repl_tables allowed = size && (data[size - 1] & 1) ? 0xffffffffu : repl_published(size ? data[0] % 3 : 0);
	if (repl_chunk_decode(data, size, allowed, &c, why) == 0)
		check_accepted(data, size, &c, allowed);
	if (size < REPL_HEADER_SIZE || size - REPL_HEADER_SIZE > REPL_MAX_CHUNK_BODY)
		return 0;
	struct buf b;
	buf_init(&b, size);
	buf_append(&b, data, size);
	if (repl_chunk_finish(&b, 0) == 0 &&
	    repl_chunk_decode((const uint8_t *)b.data, b.len, allowed, &c, why) == 0)
		check_accepted((const uint8_t *)b.data, b.len, &c, allowed);
	buf_free(&b);
	return 0;
}
