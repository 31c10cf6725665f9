/*
 * repl_wire.c -- encoder and strict decoder of replication chunks (format
 * and rules in repl_wire.h).  The decoder runs on bytes from another
 * process: it trusts no length before checking it against what is left,
 * and the checksum is checked before anything inside the body is read
 * (a checksum is not a proof of well-formedness: the body is parsed
 * strictly all the same).
 */
#include "engine/replication/repl_wire.h"

#include <stdio.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "engine/storage/record.h"

int repl_chunk_begin(struct buf *out, const struct repl_chunk *h, size_t *at)
{
	uint8_t b[REPL_HEADER_SIZE];
	memset(b, 0, sizeof(b));
	memcpy(b, REPL_MAGIC, 8);
	wr_u32(b + 8, h->kind);
	wr_u32(b + 12, h->flags);
	wr_u32(b + 16, h->publisher);
	wr_u64(b + 24, h->epoch);
	wr_u64(b + 32, h->from_lsn);
	wr_u64(b + 40, h->to_lsn);
	wr_u64(b + 48, h->durable_lsn);
	wr_u64(b + 56, h->pub_unix_ms);
	*at = out->len;
	return buf_append(out, b, sizeof(b));
}

int repl_chunk_add(struct buf *out, size_t at, uint64_t lsn, const void *records, size_t len)
{
	size_t body = out->len - at - REPL_HEADER_SIZE;
	if (len == 0 || body + REPL_TXN_HEADER + len > REPL_MAX_CHUNK_BODY)
		return -1;
	uint8_t h[REPL_TXN_HEADER];
	wr_u64(h, lsn);
	wr_u32(h + 8, (uint32_t)len);
	size_t save = out->len;
	if (buf_append(out, h, sizeof(h)) || buf_append(out, records, len)) {
		out->len = save;
		return -1;
	}
	uint8_t *p = (uint8_t *)out->data + at;
	wr_u32(p + 20, rd_u32(p + 20) + 1);
	return 0;
}

static uint64_t chunk_sum(const uint8_t *p, const uint8_t *body, size_t body_len)
{
	XXH3_state_t st;
	XXH3_64bits_reset(&st);
	XXH3_64bits_update(&st, p, 72);
	XXH3_64bits_update(&st, body, body_len);
	return XXH3_64bits_digest(&st);
}

int repl_chunk_finish(struct buf *out, size_t at)
{
	if (out->overflow || out->len < at + REPL_HEADER_SIZE)
		return -1;
	uint8_t *p = (uint8_t *)out->data + at;
	size_t body = out->len - at - REPL_HEADER_SIZE;
	if (body > REPL_MAX_CHUNK_BODY)
		return -1;
	wr_u32(p + 64, (uint32_t)body);
	wr_u64(p + 72, chunk_sum(p, p + REPL_HEADER_SIZE, body));
	return 0;
}

/* Every record of one transaction: decodes, PUT or DEL, allowed table. */
static int check_records(const uint8_t *p, size_t len, repl_tables allowed, char *err)
{
	size_t off = 0;
	struct rec_view rv;
	int r, n = 0;
	while ((r = rec_decode(p, len, &off, &rv)) == 1) {
		n++;
		if (rv.op != REC_PUT && rv.op != REC_DEL) {
			snprintf(err, 128, "record op %u", rv.op);
			return -1;
		}
		if (rv.table >= 32 || !(allowed & REPL_T(rv.table))) {
			snprintf(err, 128, "table %s (%u) is not published by this publisher", rec_table_name(rv.table),
				 rv.table);
			return -1;
		}
		if (rv.key_len == 0) {
			snprintf(err, 128, "record with an empty key");
			return -1;
		}
	}
	if (r < 0 || n == 0) {
		snprintf(err, 128, n ? "malformed record at offset %zu" : "transaction without records", off);
		return -1;
	}
	return 0;
}

int repl_chunk_decode(const uint8_t *p, size_t len, repl_tables allowed, struct repl_chunk *c, char *err)
{
	memset(c, 0, sizeof(*c));
	if (len < REPL_HEADER_SIZE || memcmp(p, REPL_MAGIC, 8)) {
		snprintf(err, 128, "not a replication chunk (%zu bytes)", len);
		return -1;
	}
	c->kind = rd_u32(p + 8);
	c->flags = rd_u32(p + 12);
	c->publisher = rd_u32(p + 16);
	c->n_txns = rd_u32(p + 20);
	c->epoch = rd_u64(p + 24);
	c->from_lsn = rd_u64(p + 32);
	c->to_lsn = rd_u64(p + 40);
	c->durable_lsn = rd_u64(p + 48);
	c->pub_unix_ms = rd_u64(p + 56);
	c->body_len = rd_u32(p + 64);
	if (c->body_len > REPL_MAX_CHUNK_BODY || len != REPL_HEADER_SIZE + (size_t)c->body_len) {
		snprintf(err, 128, "body length %u does not match the %zu bytes received", c->body_len, len);
		return -1;
	}
	c->body = p + REPL_HEADER_SIZE;
	if (rd_u64(p + 72) != chunk_sum(p, c->body, c->body_len)) {
		snprintf(err, 128, "checksum mismatch");
		return -1;
	}
	if (rd_u32(p + 68) != 0 || (c->kind != REPL_K_WAL && c->kind != REPL_K_SNAPSHOT) ||
	    (c->flags & ~REPL_F_LAST) || (c->flags && c->kind != REPL_K_SNAPSHOT)) {
		snprintf(err, 128, "bad kind %u / flags %u / reserved", c->kind, c->flags);
		return -1;
	}
	if (c->publisher >= REPL_MAX_PUBLISHERS || c->epoch == 0 || c->from_lsn > c->to_lsn ||
	    c->to_lsn > c->durable_lsn || (c->kind == REPL_K_SNAPSHOT && (c->from_lsn || c->n_txns > 1))) {
		snprintf(err, 128, "bad header: publisher %u epoch %llu from %llu to %llu durable %llu", c->publisher,
			 (unsigned long long)c->epoch, (unsigned long long)c->from_lsn,
			 (unsigned long long)c->to_lsn, (unsigned long long)c->durable_lsn);
		return -1;
	}
	size_t off = 0;
	uint64_t prev = c->from_lsn;
	for (uint32_t i = 0; i < c->n_txns; i++) {
		if (c->body_len - off < REPL_TXN_HEADER) {
			snprintf(err, 128, "transaction %u header truncated", i);
			return -1;
		}
		uint64_t lsn = rd_u64(c->body + off);
		uint32_t tl = rd_u32(c->body + off + 8);
		off += REPL_TXN_HEADER;
		if (tl > c->body_len - off) {
			snprintf(err, 128, "transaction %u length %u past the body", i, tl);
			return -1;
		}
		int order_ok = c->kind == REPL_K_WAL ? lsn > prev && lsn <= c->to_lsn : lsn == c->to_lsn;
		if (!order_ok) {
			snprintf(err, 128, "transaction %u LSN %llu out of order", i, (unsigned long long)lsn);
			return -1;
		}
		if (check_records(c->body + off, tl, allowed, err))
			return -1;
		prev = lsn;
		off += tl;
	}
	if (off != c->body_len) {
		snprintf(err, 128, "%zu bytes after the last transaction", (size_t)c->body_len - off);
		return -1;
	}
	return 0;
}

int repl_chunk_next(const struct repl_chunk *c, size_t *off, uint64_t *lsn, const uint8_t **rec, uint32_t *len)
{
	if (*off >= c->body_len)
		return 0;
	*lsn = rd_u64(c->body + *off);
	*len = rd_u32(c->body + *off + 8);
	*rec = c->body + *off + REPL_TXN_HEADER;
	*off += REPL_TXN_HEADER + *len;
	return 1;
}
