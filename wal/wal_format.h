/*
 * wal_format.h -- byte layout of WAL segments and frames, and the pure
 * frame codec (no I/O), shared by the writer, recovery, the CLI and the
 * fuzz target.
 */
#ifndef WM_WAL_FORMAT_H
#define WM_WAL_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "net/buf.h"

#define WAL_SEG_MAGIC      "WMWALSEG"   /* 8 bytes at offset 0 of a segment */
#define WAL_FORMAT_VERSION 1u
#define WAL_SEG_HEADER_SIZE 64u         /* magic, version u32, reserved u32, salt u64,
					   first_lsn u64, reserved..., XXH3 of bytes 0..55 at 56 */
#define WAL_FRAME_MAGIC    0x574d4652u  /* "RFMW" little-endian */
#define WAL_FRAME_HEADER_SIZE 56u
#define WAL_FRAME_MAX_RAW  (16u << 20)  /* hard ceiling on a frame's raw size */
#define WAL_TXN_HEADER_SIZE 12u         /* u64 lsn + u32 len */

/*
 * Frame header layout (offsets):
 *  0 u32 magic          4 u16 version     6 u16 flags (0)
 *  8 u64 salt          16 u64 first_lsn  24 u64 last_lsn
 * 32 u32 txn_count     36 u32 raw_len    40 u32 comp_len  44 u32 reserved (0)
 * 48 u64 XXH3-64 of header bytes 0..47 followed by the comp_len compressed bytes
 */
struct wal_frame_view {
	uint64_t salt, first_lsn, last_lsn;
	uint32_t txn_count, raw_len, comp_len;
	size_t frame_len;          /* header + comp_len */
};

enum wal_frame_status {
	WAL_FRAME_OK = 0,
	WAL_FRAME_SHORT = 1,       /* fewer bytes than the frame claims (torn) */
	WAL_FRAME_ZERO = 2,        /* header is all zero bytes: preallocated space */
	WAL_FRAME_BAD = 3,         /* magic, checksum, salt, size or content invalid */
};

/*
 * Validate and decode the frame at p[0..avail).  Checks magic, version,
 * salt == expected_salt, sizes within bounds, checksum, then decompresses
 * into `raw` (reset first) and checks that the transactions inside parse
 * exactly (count, contiguous LSNs first..last, lengths).  `why` (may be
 * NULL, >= 96 bytes) gets a reason on failure.
 */
enum wal_frame_status wal_frame_decode(const uint8_t *p, size_t avail, uint64_t expected_salt,
				       struct wal_frame_view *fv, struct buf *raw, char *why);

/* Iterate the transactions of a decoded raw block.  *off starts at 0.
 * Returns 1 and fills lsn/payload/len, or 0 at the end. */
int wal_txn_next(const struct buf *raw, size_t *off, uint64_t *lsn,
		 const uint8_t **payload, uint32_t *len);

/* ---- additions beyond the original contract (encoder side, segment
 * header, explicit decompression context) -------------------------------- */

struct ZSTD_CCtx_s; /* zstd's ZSTD_CCtx */
struct ZSTD_DCtx_s; /* zstd's ZSTD_DCtx */

/*
 * Append one transaction (u64 lsn, u32 len, payload) to a raw block.
 * Returns 0, or -1 (raw unchanged) if the buffer bound or memory ran out.
 */
int wal_txn_put(struct buf *raw, uint64_t lsn, const void *payload, uint32_t len);

/*
 * Encode one frame from a raw block raw[0..raw_len) that holds at least one
 * well-formed transaction with LSNs contiguous from >= 1, raw_len <=
 * WAL_FRAME_MAX_RAW.  Compresses with the given (reused) context at `level`
 * and appends header + compressed bytes to `out`.  Fills fv (may be NULL).
 * Returns 0, or -1 (out unchanged) on a malformed block, bound or zstd error.
 */
int wal_frame_encode(struct ZSTD_CCtx_s *cctx, int level, uint64_t salt,
		     const uint8_t *raw, size_t raw_len, struct buf *out,
		     struct wal_frame_view *fv);

/*
 * wal_frame_decode() with an explicit, caller-owned decompression context
 * (recovery reuses one for a whole log).  wal_frame_decode() itself uses a
 * per-thread context created on first use and kept for the thread's life.
 */
enum wal_frame_status wal_frame_decode_dctx(struct ZSTD_DCtx_s *dctx, const uint8_t *p,
					    size_t avail, uint64_t expected_salt,
					    struct wal_frame_view *fv, struct buf *raw,
					    char *why);

/* 1 if p[0..n) is all zero bytes (a preallocated tail, a zeroed header). */
int wal_all_zero(const uint8_t *p, size_t n);

/* Segment file names: "<20-digit first LSN>.wal", created first under that
 * name plus WAL_SEG_TMP_SUFFIX. */
#define WAL_SEG_SUFFIX      ".wal"
#define WAL_SEG_TMP_SUFFIX  ".inprogress"
#define WAL_SEG_NAME_LEN    24u /* 20 digits + ".wal" */

/* 1 and *lsn if `name` is exactly a segment file name (20 digits, ".wal",
 * LSN >= 1), 0 otherwise. */
int wal_seg_name_parse(const char *name, uint64_t *lsn);

/* Write a segment header (WAL_SEG_HEADER_SIZE bytes) for salt/first_lsn. */
void wal_seg_header_encode(uint8_t *out, uint64_t salt, uint64_t first_lsn);

/*
 * Validate the segment header at p[0..avail): magic, version, reserved
 * bytes zero, checksum.  Returns 0 and fills salt/first_lsn, or -1 with a
 * reason in `why` (may be NULL, >= 96 bytes).
 */
int wal_seg_header_decode(const uint8_t *p, size_t avail, uint64_t *salt,
			  uint64_t *first_lsn, char *why);

#endif
