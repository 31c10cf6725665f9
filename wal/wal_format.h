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

#endif
