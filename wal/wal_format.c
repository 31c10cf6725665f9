/*
 * wal_format.c -- the pure WAL codec: segment headers, frame encode and
 * decode, transaction iteration.  No I/O, no threads, no global state
 * except one lazily created zstd decompression context per thread (see
 * wal_frame_decode).
 *
 * Why a separate file: the writer thread (wal.c), recovery and inspection
 * (wal_recover.c), the operator CLI and the fuzz target all need exactly the
 * same idea of what a valid frame is.  Keeping the codec free of I/O lets the
 * fuzzer hammer it at full speed and lets tests build frames by hand.
 *
 * Frame layout (wal_format.h has the offsets): a 56-byte header followed by
 * one zstd block holding the transactions (u64 lsn, u32 len, payload) of
 * that frame.  The header repeats the segment's random salt and ends with an
 * XXH3-64 over header bytes 0..47 plus the compressed bytes, computed with
 * the streaming API so header and body are hashed without being copied
 * together.  Decoding is defensive in this order: cheap header checks
 * (magic, version, flags, salt, counts, lengths) so a torn or stale header
 * is rejected before anything is hashed, then the length against the bytes
 * available (SHORT = torn), then the checksum, then decompression into a
 * buffer of exactly raw_len bytes, then a full parse of the transactions.
 * Only a frame that passes every step is OK; its contents can be trusted.
 */
#include "wal/wal_format.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_c_forceAttachDict (compress_attached) */
#include <zstd.h>

/* Largest compressed length a frame may claim: zstd's worst case for the
 * largest raw block we ever write. */
#define WAL_FRAME_MAX_COMP ((uint32_t)ZSTD_COMPRESSBOUND(WAL_FRAME_MAX_RAW))

/* Offsets inside the frame header (see wal_format.h). */
enum {
	FH_MAGIC = 0, FH_VERSION = 4, FH_FLAGS = 6, FH_SALT = 8, FH_FIRST = 16,
	FH_LAST = 24, FH_COUNT = 32, FH_RAW = 36, FH_COMP = 40, FH_RESERVED = 44,
	FH_SUM = 48,
};

/* Offsets inside the segment header. */
enum { SH_MAGIC = 0, SH_VERSION = 8, SH_RESERVED = 12, SH_SALT = 16, SH_FIRST = 24, SH_SUM = 56 };

/* Write a reason into why (if given); always returns st for tail calls. */
static enum wal_frame_status fail(enum wal_frame_status st, char *why, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static enum wal_frame_status fail(enum wal_frame_status st, char *why, const char *fmt, ...)
{
	if (why) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, 96, fmt, ap);
		va_end(ap);
	}
	return st;
}

/* Same for the segment-header decoder, which returns -1 on failure. */
static int seg_fail(char *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int seg_fail(char *why, const char *fmt, ...)
{
	if (why) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, 96, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* wal_format.h.  Compared in 4 KiB blocks by memcmp (vectorised in the C
 * library), not one byte at a time: recovery checks a segment's whole
 * preallocated tail on every start, and a byte loop made an empty 64 MiB
 * segment cost ~50 ms of it. */
int wal_all_zero(const uint8_t *p, size_t n)
{
	static const uint8_t zeros[4096];
	while (n >= sizeof(zeros)) {
		if (memcmp(p, zeros, sizeof(zeros)))
			return 0;
		p += sizeof(zeros);
		n -= sizeof(zeros);
	}
	return n == 0 || !memcmp(p, zeros, n);
}

/* XXH3-64 of the first 48 header bytes followed by comp[0..comp_len). */
static uint64_t frame_checksum(const uint8_t *hdr, const uint8_t *comp, size_t comp_len)
{
	XXH3_state_t st;
	XXH3_64bits_reset(&st);
	XXH3_64bits_update(&st, hdr, FH_SUM);
	if (comp_len)
		XXH3_64bits_update(&st, comp, comp_len);
	return XXH3_64bits_digest(&st);
}

/*
 * Parse a raw block strictly: exactly `count` transactions (or as many as
 * there are when count == 0, which is how the encoder discovers it), LSNs
 * contiguous from the first, nothing left over.  Returns 0 and fills
 * first/last/n, or -1.
 */
static int parse_raw(const uint8_t *raw, size_t raw_len, uint32_t count, uint64_t *first,
		     uint64_t *last, uint32_t *n)
{
	size_t off = 0;
	uint32_t i = 0;
	uint64_t expect = 0;
	while (off < raw_len && (count == 0 || i < count)) {
		if (raw_len - off < WAL_TXN_HEADER_SIZE)
			return -1;
		uint64_t lsn = rd_u64(raw + off);
		uint32_t len = rd_u32(raw + off + 8);
		if (len > raw_len - off - WAL_TXN_HEADER_SIZE)
			return -1;
		if (i == 0) {
			if (lsn == 0)
				return -1;
			*first = lsn;
		} else if (lsn != expect) {
			return -1;
		}
		if (lsn == UINT64_MAX)
			return -1; /* the next LSN would wrap */
		expect = lsn + 1;
		off += WAL_TXN_HEADER_SIZE + (size_t)len;
		i++;
		if (i == UINT32_MAX)
			return -1;
	}
	if (off != raw_len || i == 0 || (count && i != count))
		return -1;
	*last = expect - 1;
	*n = i;
	return 0;
}

int wal_txn_put(struct buf *raw, uint64_t lsn, const void *payload, uint32_t len)
{
	uint8_t h[WAL_TXN_HEADER_SIZE];
	wr_u64(h, lsn);
	wr_u32(h + 8, len);
	if (buf_reserve(raw, sizeof(h) + (size_t)len))
		return -1;
	buf_append(raw, h, sizeof(h)); /* cannot fail after the reserve */
	buf_append(raw, payload, len);
	return 0;
}

/*
 * Compress with the segment's dictionary attached, not copied.  zstd's
 * default for a prepared dictionary (ZSTD_compress_usingCDict) copies the
 * dictionary's match tables into the context for every input past a few
 * KB, our frames all are; attached, the tables are read where they are
 * and only the input's own are built.  Measured on a sample of order
 * frames (level -1, the 64 KB segment dictionary, callgrind): 10.97 ->
 * 7.84 instructions a byte in 12.6 KB frames (one order: -c1), 5.35 ->
 * 4.67 in 140 KB ones (-c16), and the same frames within 2 % in size.
 * The frame is an ordinary zstd frame either way: the reader's DDict does
 * not know how it was made.  The context is reset after use, so it never
 * keeps a reference to a dictionary its segment may free.
 */
static size_t compress_attached(struct ZSTD_CCtx_s *cctx, void *dst, size_t cap, const void *src, size_t n,
				const struct ZSTD_CDict_s *cdict)
{
	size_t r = ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_refCDict(cctx, cdict);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_forceAttachDict, ZSTD_dictForceAttach);
	if (!ZSTD_isError(r))
		r = ZSTD_compress2(cctx, dst, cap, src, n);
	(void)ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
	return r;
}

/* Compress raw[0..raw_len) (with cdict when given) behind a header saying
 * flags/id/first/last/n, appended to out.  0, or -1 (out unchanged). */
static int encode(struct ZSTD_CCtx_s *cctx, int level, const struct ZSTD_CDict_s *cdict, uint16_t flags,
		  uint32_t id, uint64_t salt, const uint8_t *raw, size_t raw_len, uint64_t first, uint64_t last,
		  uint32_t n, struct buf *out, struct wal_frame_view *fv)
{
	size_t bound = ZSTD_compressBound(raw_len);
	assert(bound <= WAL_FRAME_MAX_COMP);
	if (buf_reserve(out, WAL_FRAME_HEADER_SIZE + bound))
		return -1;
	uint8_t *h = (uint8_t *)out->data + out->len;
	uint8_t *comp = h + WAL_FRAME_HEADER_SIZE;
	size_t clen = cdict ? compress_attached(cctx, comp, bound, raw, raw_len, cdict)
			    : ZSTD_compressCCtx(cctx, comp, bound, raw, raw_len, level);
	if (ZSTD_isError(clen) || clen == 0 || clen > WAL_FRAME_MAX_COMP)
		return -1;
	memset(h, 0, WAL_FRAME_HEADER_SIZE);
	wr_u32(h + FH_MAGIC, WAL_FRAME_MAGIC);
	wr_u16(h + FH_VERSION, (uint16_t)WAL_FORMAT_VERSION);
	wr_u16(h + FH_FLAGS, flags);
	wr_u64(h + FH_SALT, salt);
	wr_u64(h + FH_FIRST, first);
	wr_u64(h + FH_LAST, last);
	wr_u32(h + FH_COUNT, n);
	wr_u32(h + FH_RAW, (uint32_t)raw_len);
	wr_u32(h + FH_COMP, (uint32_t)clen);
	wr_u32(h + FH_RESERVED, id);
	wr_u64(h + FH_SUM, frame_checksum(h, comp, clen));
	out->len += WAL_FRAME_HEADER_SIZE + clen;
	if (fv) {
		fv->salt = salt;
		fv->first_lsn = first;
		fv->last_lsn = last;
		fv->txn_count = n;
		fv->raw_len = (uint32_t)raw_len;
		fv->comp_len = (uint32_t)clen;
		fv->flags = flags;
		fv->dict_id = id;
		fv->frame_len = WAL_FRAME_HEADER_SIZE + clen;
	}
	return 0;
}

int wal_frame_encode_dict(struct ZSTD_CCtx_s *cctx, int level, const struct ZSTD_CDict_s *cdict,
			  uint32_t dict_id, uint64_t salt, const uint8_t *raw, size_t raw_len, struct buf *out,
			  struct wal_frame_view *fv)
{
	uint64_t first = 0, last = 0;
	uint32_t n = 0;
	if (raw_len == 0 || raw_len > WAL_FRAME_MAX_RAW || parse_raw(raw, raw_len, 0, &first, &last, &n) ||
	    (cdict && !dict_id))
		return -1;
	return encode(cctx, level, cdict, cdict ? WAL_FRAME_F_USES_DICT : 0, cdict ? dict_id : 0, salt, raw,
		      raw_len, first, last, n, out, fv);
}

int wal_frame_encode(struct ZSTD_CCtx_s *cctx, int level, uint64_t salt, const uint8_t *raw,
		     size_t raw_len, struct buf *out, struct wal_frame_view *fv)
{
	return wal_frame_encode_dict(cctx, level, NULL, 0, salt, raw, raw_len, out, fv);
}

int wal_frame_encode_dictframe(struct ZSTD_CCtx_s *cctx, int level, uint64_t salt, const uint8_t *dict,
			       size_t len, struct buf *out, struct wal_frame_view *fv)
{
	if (len == 0 || len > WAL_DICT_MAX)
		return -1;
	return encode(cctx, level, NULL, WAL_FRAME_F_DICT, wal_dict_id(dict, len), salt, dict, len, 0, 0, 0, out,
		      fv);
}

uint32_t wal_dict_id(const uint8_t *dict, size_t len)
{
	uint32_t id = (uint32_t)XXH3_64bits(dict, len);
	return id ? id : 1u;
}

void wal_dict_free(struct wal_dict *d)
{
	ZSTD_freeDDict(d->ddict);
	d->ddict = NULL;
	d->id = 0;
}

/* The header's own consistency: flags, and counts, LSNs and the id as the
 * flags require.  NULL, or what is wrong. */
static const char *header_fault(const struct wal_frame_view *v)
{
	if (v->flags & ~(WAL_FRAME_F_DICT | WAL_FRAME_F_USES_DICT) ||
	    v->flags == (WAL_FRAME_F_DICT | WAL_FRAME_F_USES_DICT))
		return "unknown frame flags";
	if (v->flags & WAL_FRAME_F_DICT)
		return v->txn_count || v->first_lsn || v->last_lsn || !v->dict_id || !v->raw_len ||
				       v->raw_len > WAL_DICT_MAX
			       ? "inconsistent dictionary frame"
			       : NULL;
	if (!(v->flags & WAL_FRAME_F_USES_DICT) && v->dict_id)
		return "non-zero reserved";
	if (v->flags & WAL_FRAME_F_USES_DICT && !v->dict_id)
		return "dictionary id 0";
	if (v->txn_count == 0 || v->first_lsn == 0 || v->last_lsn < v->first_lsn ||
	    v->last_lsn - v->first_lsn != (uint64_t)v->txn_count - 1)
		return "inconsistent LSN range/count";
	if ((uint64_t)v->raw_len < (uint64_t)v->txn_count * WAL_TXN_HEADER_SIZE)
		return "raw length out of bounds";
	return NULL;
}

enum wal_frame_status wal_frame_sound(const uint8_t *p, size_t avail, uint64_t expected_salt,
				      struct wal_frame_view *fv, char *why)
{
	struct wal_frame_view v;
	memset(&v, 0, sizeof(v));
	if (fv)
		*fv = v;
	if (why)
		why[0] = 0;
	if (avail < WAL_FRAME_HEADER_SIZE) {
		if (wal_all_zero(p, avail))
			return fail(WAL_FRAME_ZERO, why, "zero bytes (end of log)");
		/* A torn header still starts with the magic, as far as it goes. */
		uint8_t m[4];
		wr_u32(m, WAL_FRAME_MAGIC);
		if (memcmp(p, m, avail < 4 ? avail : 4) != 0)
			return fail(WAL_FRAME_BAD, why, "bad frame magic");
		return fail(WAL_FRAME_SHORT, why, "short frame header: %zu of %u bytes", avail,
			    WAL_FRAME_HEADER_SIZE);
	}
	if (wal_all_zero(p, WAL_FRAME_HEADER_SIZE))
		return fail(WAL_FRAME_ZERO, why, "zero header (end of log)");
	if (rd_u32(p + FH_MAGIC) != WAL_FRAME_MAGIC)
		return fail(WAL_FRAME_BAD, why, "bad frame magic 0x%08x", rd_u32(p + FH_MAGIC));
	if (rd_u16(p + FH_VERSION) != WAL_FORMAT_VERSION)
		return fail(WAL_FRAME_BAD, why, "unknown frame version %u", rd_u16(p + FH_VERSION));
	v.flags = rd_u16(p + FH_FLAGS);
	v.dict_id = rd_u32(p + FH_RESERVED);
	v.salt = rd_u64(p + FH_SALT);
	v.first_lsn = rd_u64(p + FH_FIRST);
	v.last_lsn = rd_u64(p + FH_LAST);
	v.txn_count = rd_u32(p + FH_COUNT);
	v.raw_len = rd_u32(p + FH_RAW);
	v.comp_len = rd_u32(p + FH_COMP);
	v.frame_len = WAL_FRAME_HEADER_SIZE + (size_t)v.comp_len;
	if (v.salt != expected_salt)
		return fail(WAL_FRAME_BAD, why, "salt mismatch (stale frame from another segment)");
	const char *fault = header_fault(&v);
	if (fault)
		return fail(WAL_FRAME_BAD, why, "%s", fault);
	if (v.raw_len > WAL_FRAME_MAX_RAW)
		return fail(WAL_FRAME_BAD, why, "raw length %u out of bounds", v.raw_len);
	if (v.comp_len == 0 || v.comp_len > WAL_FRAME_MAX_COMP)
		return fail(WAL_FRAME_BAD, why, "compressed length %u out of bounds", v.comp_len);
	if (fv)
		*fv = v;
	if (avail < v.frame_len)
		return fail(WAL_FRAME_SHORT, why, "short frame: %zu of %zu bytes", avail, v.frame_len);
	if (frame_checksum(p, p + WAL_FRAME_HEADER_SIZE, v.comp_len) != rd_u64(p + FH_SUM))
		return fail(WAL_FRAME_BAD, why, "frame checksum mismatch");
	return WAL_FRAME_OK;
}

/* A sound dictionary frame's content in raw: check its id, and make it d's
 * dictionary (d NULL: only checked).  Leaves raw empty. */
static enum wal_frame_status take_dict(struct wal_dict *d, const struct wal_frame_view *v, struct buf *raw,
				       char *why)
{
	const uint8_t *dict = (const uint8_t *)raw->data;
	if (wal_dict_id(dict, raw->len) != v->dict_id) {
		buf_reset(raw);
		return fail(WAL_FRAME_BAD, why, "dictionary does not match its id");
	}
	if (d) {
		ZSTD_DDict *dd = ZSTD_createDDict(dict, raw->len);
		if (!dd) {
			buf_reset(raw);
			return fail(WAL_FRAME_BAD, why, "out of memory for a dictionary");
		}
		wal_dict_free(d);
		d->ddict = dd;
		d->id = v->dict_id;
	}
	buf_reset(raw);
	return WAL_FRAME_OK;
}

enum wal_frame_status wal_frame_decode_with(struct ZSTD_DCtx_s *dctx, struct wal_dict *d, const uint8_t *p,
					    size_t avail, uint64_t expected_salt, struct wal_frame_view *fv,
					    struct buf *raw, char *why)
{
	struct wal_frame_view v;
	enum wal_frame_status st = wal_frame_sound(p, avail, expected_salt, &v, why);
	if (fv)
		*fv = v;
	if (st != WAL_FRAME_OK)
		return st;
	const ZSTD_DDict *dd = NULL;
	if (v.flags & WAL_FRAME_F_USES_DICT) {
		if (!d || !d->ddict || d->id != v.dict_id)
			return fail(WAL_FRAME_BAD, why, "needs dictionary %08x, %s", v.dict_id,
				    d && d->ddict ? "the segment's is another" : "the segment has none before it");
		dd = d->ddict;
	}
	const uint8_t *comp = p + WAL_FRAME_HEADER_SIZE;
	buf_reset(raw);
	if (buf_reserve(raw, v.raw_len ? v.raw_len : 1))
		return fail(WAL_FRAME_BAD, why, "cannot hold %u raw bytes", v.raw_len);
	size_t r = dd ? ZSTD_decompress_usingDDict(dctx, raw->data, v.raw_len, comp, v.comp_len, dd)
		      : ZSTD_decompressDCtx(dctx, raw->data, v.raw_len, comp, v.comp_len);
	if (ZSTD_isError(r))
		return fail(WAL_FRAME_BAD, why, "zstd: %s", ZSTD_getErrorName(r));
	if (r != v.raw_len)
		return fail(WAL_FRAME_BAD, why, "decompressed %zu bytes, header says %u", r, v.raw_len);
	raw->len = v.raw_len;
	if (v.flags & WAL_FRAME_F_DICT)
		return take_dict(d, &v, raw, why);
	uint64_t first = 0, last = 0;
	uint32_t n = 0;
	if (parse_raw((const uint8_t *)raw->data, raw->len, v.txn_count, &first, &last, &n) ||
	    first != v.first_lsn || last != v.last_lsn) {
		buf_reset(raw);
		return fail(WAL_FRAME_BAD, why, "transactions inside the frame do not parse");
	}
	return WAL_FRAME_OK;
}

enum wal_frame_status wal_frame_decode_dctx(struct ZSTD_DCtx_s *dctx, const uint8_t *p,
					    size_t avail, uint64_t expected_salt,
					    struct wal_frame_view *fv, struct buf *raw, char *why)
{
	return wal_frame_decode_with(dctx, NULL, p, avail, expected_salt, fv, raw, why);
}

/* The calling thread's decompression context; lives as long as the thread. */
static _Thread_local ZSTD_DCtx *tl_dctx;

enum wal_frame_status wal_frame_decode(const uint8_t *p, size_t avail, uint64_t expected_salt,
				       struct wal_frame_view *fv, struct buf *raw, char *why)
{
	if (!tl_dctx && !(tl_dctx = ZSTD_createDCtx())) {
		if (fv)
			memset(fv, 0, sizeof(*fv));
		return fail(WAL_FRAME_BAD, why, "out of memory for zstd context");
	}
	return wal_frame_decode_dctx(tl_dctx, p, avail, expected_salt, fv, raw, why);
}

int wal_txn_next(const struct buf *raw, size_t *off, uint64_t *lsn, const uint8_t **payload,
		 uint32_t *len)
{
	size_t o = *off;
	if (o > raw->len || raw->len - o < WAL_TXN_HEADER_SIZE)
		return 0;
	const uint8_t *p = (const uint8_t *)raw->data + o;
	uint32_t l = rd_u32(p + 8);
	if (l > raw->len - o - WAL_TXN_HEADER_SIZE)
		return 0;
	*lsn = rd_u64(p);
	*len = l;
	*payload = p + WAL_TXN_HEADER_SIZE;
	*off = o + WAL_TXN_HEADER_SIZE + l;
	return 1;
}

void wal_seg_header_encode(uint8_t *out, uint64_t salt, uint64_t first_lsn)
{
	memset(out, 0, WAL_SEG_HEADER_SIZE);
	memcpy(out + SH_MAGIC, WAL_SEG_MAGIC, 8);
	wr_u32(out + SH_VERSION, WAL_FORMAT_VERSION);
	wr_u64(out + SH_SALT, salt);
	wr_u64(out + SH_FIRST, first_lsn);
	wr_u64(out + SH_SUM, XXH3_64bits(out, SH_SUM));
}

int wal_seg_header_decode(const uint8_t *p, size_t avail, uint64_t *salt, uint64_t *first_lsn,
			  char *why)
{
	if (avail < WAL_SEG_HEADER_SIZE)
		return seg_fail(why, "segment shorter than its %u-byte header",
			    WAL_SEG_HEADER_SIZE);
	if (memcmp(p + SH_MAGIC, WAL_SEG_MAGIC, 8) != 0)
		return seg_fail(why, "bad segment magic");
	if (rd_u32(p + SH_VERSION) != WAL_FORMAT_VERSION)
		return seg_fail(why, "unknown segment version %u", rd_u32(p + SH_VERSION));
	if (XXH3_64bits(p, SH_SUM) != rd_u64(p + SH_SUM))
		return seg_fail(why, "segment header checksum mismatch");
	if (rd_u32(p + SH_RESERVED) != 0 || !wal_all_zero(p + 32, SH_SUM - 32))
		return seg_fail(why, "non-zero reserved bytes in segment header");
	if (rd_u64(p + SH_FIRST) == 0)
		return seg_fail(why, "segment first LSN is 0");
	*salt = rd_u64(p + SH_SALT);
	*first_lsn = rd_u64(p + SH_FIRST);
	return 0;
}

int wal_seg_name_parse(const char *name, uint64_t *lsn)
{
	if (strlen(name) != WAL_SEG_NAME_LEN || strcmp(name + 20, WAL_SEG_SUFFIX) != 0)
		return 0;
	uint64_t v = 0;
	for (int i = 0; i < 20; i++) {
		if (name[i] < '0' || name[i] > '9')
			return 0;
		unsigned d = (unsigned)(name[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return 0;
		v = v * 10 + d;
	}
	if (v == 0)
		return 0;
	*lsn = v;
	return 1;
}
