/*
 * wal.h -- the write-ahead log: segments of zstd-compressed, XXH3-checksummed
 * frames, written by one background thread with group commit.
 *
 * The engine hands the WAL opaque transaction images ("payloads"), each
 * with the LSN the engine assigned (strictly increasing by 1).  The WAL
 * never interprets payloads; it only promises that once wal_durable_lsn()
 * reports N, every transaction with LSN <= N is on disk according to the
 * mode (fsync: fdatasync returned; write: write(2) returned; none: nothing
 * written at all, reported durable at once).
 *
 * On-disk layout (all integers little-endian), see wal_format.h for the
 * exact structs:
 *   <dir>/<20-digit first LSN>.wal     segment files
 *   segment = file header (magic "WMWALSEG", version, salt, first LSN,
 *             checksum) + frames, then zero bytes to the preallocated size.
 *   frame   = header (magic, version, salt, first LSN, last LSN, txn count,
 *             raw length, compressed length, XXH3-64 over header fields and
 *             compressed bytes) + zstd block of transactions.
 *   transaction (inside the raw block) = u64 lsn, u32 payload length, payload.
 * Transactions never straddle frames.  Every frame repeats its segment's
 * random salt, so a stale frame from an older or recycled file never
 * validates.
 *
 * Threads: wal_append() and wal_durable_lsn()/wal_event_fd() are called
 * from the engine's event-loop thread; the WAL thread does compression,
 * write and fdatasync.  An fdatasync or write failure is fatal: the WAL
 * thread logs it and calls exit(EXIT_FAILURE) (never retry fsync).
 * A full disk is not fatal (wal.c, "Running out of space"): the WAL
 * refuses, before anything is applied, the transactions it could not be
 * sure to write (WAL_E_NOSPACE) and accepts them again once its spare
 * segment could be made.
 */
#ifndef WM_WAL_H
#define WM_WAL_H

#include <stddef.h>
#include <stdint.h>

enum wal_mode { WAL_MODE_FSYNC = 0, WAL_MODE_WRITE, WAL_MODE_NONE };

struct wal_config {
	const char *dir;            /* segment directory, created if missing */
	enum wal_mode mode;
	uint64_t segment_size;      /* preallocated bytes per segment; default 64 MiB, min 64 KiB */
	uint32_t max_batch_bytes;   /* raw bytes per frame before it is cut; default 1 MiB */
	int zstd_level;             /* default -1 (0: the default) */
	/* Segment dictionaries (wal.c): the last dict_bytes raw bytes written
	 * become a dictionary frame, which later frames of the segment are
	 * compressed against, renewed ever less often up to every dict_refresh
	 * raw bytes.  0: the defaults (32 KiB, 8 MiB); dict_bytes
	 * WAL_DICT_NONE: never. */
	uint32_t dict_bytes;
	uint64_t dict_refresh;
};
#define WAL_DICT_NONE UINT32_MAX

/* Counters for /metrics; read with wal_stats(). */
#define WAL_LAT_BUCKETS 12 /* fsync latency histogram upper bounds, see wal_lat_bounds_us */
extern const uint32_t wal_lat_bounds_us[WAL_LAT_BUCKETS];

struct wal_stats {
	uint64_t frames;            /* frames of transactions written (not dict_frames) */
	uint64_t txns;              /* transactions written */
	uint64_t bytes_raw;
	uint64_t bytes_written;     /* compressed frame bytes incl. headers */
	uint64_t syncs;             /* fdatasync calls */
	uint64_t sync_us_total;
	uint64_t sync_lat[WAL_LAT_BUCKETS + 1]; /* cumulative-free buckets; last = +Inf */
	uint64_t segments_created;
	uint64_t segments_from_spare; /* of those, published from the pre-zeroed spare (no stall) */
	uint64_t max_batch_txns;    /* largest number of transactions in one sync */
	uint64_t dict_frames;       /* dictionary frames written (segment dictionaries) */
	uint64_t durable_lsn;
	uint64_t appended_lsn;
	int space_low;              /* the spare segment could not be made: writes limited to the current segment */
	uint64_t nospace_refusals;  /* transactions refused with WAL_E_NOSPACE */
};

#define WAL_E_NOSPACE (-2) /* wal_append / wal_reserve: refused, the disk is full (nothing queued) */

struct wal;

/*
 * Open the log for appending after recovery: every existing segment is
 * left as it is and a NEW segment starting at `next_lsn` is created (so a
 * torn tail cut by recovery is never appended to).  Starts the WAL thread.
 * Returns NULL with a message in err on failure.
 */
struct wal *wal_open(const struct wal_config *cfg, uint64_t next_lsn, char *err, size_t errlen);

/*
 * Queue one transaction.  `lsn` must be exactly the previous LSN + 1.
 * The payload is copied; the call never blocks on I/O (it may wait
 * briefly for the buffer lock, and applies back-pressure only when more
 * than 64 MiB are queued).  Returns 0, or -1 if payload is larger than
 * max_batch_bytes - 12 (the engine must keep transactions smaller).
 */
int wal_append(struct wal *w, uint64_t lsn, const void *payload, size_t len);

/*
 * Space (wal.c, "Running out of space").  The worst-case bytes a
 * transaction of `len` payload bytes can take in a segment.  wal_append
 * returns WAL_E_NOSPACE (nothing queued) when the spare segment could not
 * be made and the current segment is not certain to hold the transaction
 * after everything queued and reserved before it.
 * wal_reserve: make sure a transaction of up to `len` bytes appended LATER
 * will be accepted (0), or WAL_E_NOSPACE; the reservation is consumed by
 * wal_append_reserved(..., reserved_len = len) or given back by
 * wal_unreserve(len).
 * wal_space: 0 space is fine; 1 space low (no spare) but a transaction of
 * need_len still fits; 2 space low and it does not.  *room (may be NULL):
 * the worst-case bytes still certain (UINT64_MAX when not low).
 */
uint64_t wal_txn_worst(size_t len);
int wal_reserve(struct wal *w, size_t len);
void wal_unreserve(struct wal *w, size_t len);
int wal_append_reserved(struct wal *w, uint64_t lsn, const void *payload, size_t len, size_t reserved_len);
int wal_space(const struct wal *w, uint64_t need_len, uint64_t *room);

/* Highest LSN durable per the mode. */
uint64_t wal_durable_lsn(const struct wal *w);

/* An eventfd that becomes readable whenever the durable LSN advances;
 * the reader drains it with read(2) of 8 bytes. */
int wal_event_fd(const struct wal *w);

/* Block until everything appended is durable (used at shutdown and by tests). */
void wal_flush(struct wal *w);

/* Snapshot the counters. */
void wal_stats(const struct wal *w, struct wal_stats *out);

/* Flush, sync, stop the thread, close files, free.  NULL is a no-op. */
void wal_close(struct wal *w);

/* ---- recovery and inspection ------------------------------------------ */

typedef int (*wal_replay_fn)(void *ctx, uint64_t lsn, const void *payload, size_t len);

struct wal_recovery_report {
	uint64_t first_lsn;       /* first LSN replayed (0 if none) */
	uint64_t last_lsn;        /* last valid LSN found on disk (even if <= after_lsn) */
	uint64_t txns_replayed;
	uint32_t segments;
	int tail_cut;             /* 1 if a torn tail was cut off */
	char tail_file[256];      /* which file, and where */
	uint64_t tail_offset;
	uint64_t tail_bytes;      /* bytes discarded */
	char error[512];          /* set when recovery refuses: names file and offset */
};

/*
 * Replay every transaction with LSN > after_lsn in LSN order, calling fn.
 * A torn or corrupt frame at the very end of the last segment (nothing
 * valid after it) is cut off: the file is truncated at the last good frame
 * and the cut is reported in rep.  Corruption anywhere else (a bad frame
 * followed by valid frames, a bad frame in a non-last segment, an LSN gap
 * or regression) makes recovery fail with -1 and rep->error naming the file
 * and byte offset -- unless `salvage` is set, in which case replay stops at
 * that point and everything after it is truncated/removed.
 * If fn returns non-zero, recovery stops and returns that value.
 * A missing directory is an empty log (returns 0).
 */
int wal_recover(const char *dir, uint64_t after_lsn, wal_replay_fn fn, void *ctx,
		int salvage, struct wal_recovery_report *rep);

/*
 * Delete segments that hold only LSNs <= upto_lsn (i.e. whose successor
 * segment starts at or below upto_lsn + 1).  The newest segment is never
 * deleted.  Returns the number of files removed, -1 on error.
 */
int wal_prune(const char *dir, uint64_t upto_lsn);

/* Per-segment summary for the operator CLI (wm-ctl wal inspect / verify). */
struct wal_segment_info {
	char path[256];
	uint64_t first_lsn, last_lsn;
	uint64_t frames, txns;
	uint64_t bytes_used;      /* offset after the last valid frame */
	int ok;                   /* 0 if a bad frame was found */
	uint64_t bad_offset;
	char error[256];
};
typedef void (*wal_segment_fn)(void *ctx, const struct wal_segment_info *info);
/* Walk every segment in order, verifying every frame; returns 0 if all ok. */
int wal_inspect(const char *dir, wal_segment_fn fn, void *ctx);

/*
 * (Addition.)  Where wal_recover/wal_prune/wal_inspect send their log lines
 * (torn tail cut, salvage, stale temp file removed, I/O trouble): one line
 * without the trailing newline per call.  NULL restores the default,
 * stderr.  Process-wide; set it at start-up.  Fatal errors of the writer
 * thread always go to stderr, right before the process exits.
 */
typedef void (*wal_log_fn)(const char *line);
void wal_set_recovery_log(wal_log_fn fn);

#endif
