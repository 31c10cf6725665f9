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
 *  0 u32 magic          4 u16 version     6 u16 flags
 *  8 u64 salt          16 u64 first_lsn  24 u64 last_lsn
 * 32 u32 txn_count     36 u32 raw_len    40 u32 comp_len  44 u32 dict id (0)
 * 48 u64 XXH3-64 of header bytes 0..47 followed by the comp_len compressed bytes
 *
 * Flags (any other bit, or both, is a bad frame):
 *  WAL_FRAME_F_DICT      a dictionary frame: no transactions (count 0, LSNs
 *                        0), its raw block is the segment's dictionary from
 *                        here on, and the id field is wal_dict_id() of it.
 *  WAL_FRAME_F_USES_DICT compressed against the dictionary whose id is in
 *                        the id field: the last dictionary frame before it
 *                        in the same segment (wal.c says why and when).
 * A frame with neither flag has id 0 and decodes on its own.
 */
#define WAL_FRAME_F_DICT      0x1u
#define WAL_FRAME_F_USES_DICT 0x2u
#define WAL_DICT_MAX (1u << 20)        /* largest dictionary a frame may carry */

struct wal_frame_view {
	uint64_t salt, first_lsn, last_lsn;
	uint32_t txn_count, raw_len, comp_len;
	uint16_t flags;            /* WAL_FRAME_F_* */
	uint32_t dict_id;          /* F_DICT: the dictionary's id; F_USES_DICT: the one it needs */
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
 * NULL, >= 96 bytes) gets a reason on failure.  Knows no dictionary: a
 * dictionary frame decodes to an empty raw block (fv->flags says what it
 * was), and a frame that uses one is WAL_FRAME_BAD (wal_frame_decode_with).
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

/*
 * A segment's dictionary as a reader holds it (wal_frame_decode_with):
 * zero-initialise, release with wal_dict_free.
 */
struct ZSTD_DDict_s;
struct ZSTD_CDict_s;
struct wal_dict {
	struct ZSTD_DDict_s *ddict; /* NULL: none yet */
	uint32_t id;
};
void wal_dict_free(struct wal_dict *d);

/* The id of a dictionary: the low 32 bits of its XXH3-64, never 0. */
uint32_t wal_dict_id(const uint8_t *dict, size_t len);

/*
 * wal_frame_decode_dctx with the segment's dictionary state d (a reader
 * walks a segment's frames in order with one d, starting zeroed at the
 * segment's first frame).  A dictionary frame, once valid, replaces d's
 * dictionary and decodes to an empty raw block (txn_count 0); a frame that
 * uses a dictionary decodes only when d holds the one it names (else
 * WAL_FRAME_BAD).
 */
enum wal_frame_status wal_frame_decode_with(struct ZSTD_DCtx_s *dctx, struct wal_dict *d, const uint8_t *p,
					    size_t avail, uint64_t expected_salt, struct wal_frame_view *fv,
					    struct buf *raw, char *why);

/*
 * Only the checks that need no decompression: header, lengths, checksum.
 * WAL_FRAME_OK means the frame was written whole by a writer of this
 * format (recovery uses it to tell a torn tail from damage before valid
 * frames, whatever dictionary those need).
 */
enum wal_frame_status wal_frame_sound(const uint8_t *p, size_t avail, uint64_t expected_salt,
				      struct wal_frame_view *fv, char *why);

/*
 * wal_frame_encode against a dictionary: cdict (made from the dictionary
 * whose wal_dict_id is dict_id) compresses the block and the frame says
 * F_USES_DICT.  cdict NULL: exactly wal_frame_encode.
 */
int wal_frame_encode_dict(struct ZSTD_CCtx_s *cctx, int level, const struct ZSTD_CDict_s *cdict,
			  uint32_t dict_id, uint64_t salt, const uint8_t *raw, size_t raw_len, struct buf *out,
			  struct wal_frame_view *fv);

/*
 * Encode a dictionary frame carrying dict[0..len) (1 <= len <=
 * WAL_DICT_MAX), compressed without a dictionary.  0, or -1 (out
 * unchanged).
 */
int wal_frame_encode_dictframe(struct ZSTD_CCtx_s *cctx, int level, uint64_t salt, const uint8_t *dict,
			       size_t len, struct buf *out, struct wal_frame_view *fv);

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
