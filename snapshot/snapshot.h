/*
 * snapshot.h -- snapshot files: a consistent image of every table at one LSN.
 *
 * A snapshot is a sequence of opaque records (engine/storage/record.h PUT records)
 * written by whoever iterates the tables -- in production a fork()ed child,
 * so the parent keeps serving writes while the child sees a frozen
 * copy-on-write view.  This module only knows the file format:
 *
 *   header (64 bytes): magic "WMSNAP01", u32 version, u32 reserved,
 *           u64 salt, u64 lsn, u64 created_unix_ms, reserved, u64 XXH3 of
 *           bytes 0..55 at offset 56
 *   body:   zstd stream of (u32 len, record bytes) entries, the first of
 *           which may be the writer's hint (below)
 *   trailer (32 bytes): magic "WMSNAPND", u64 record count,
 *           u64 body length, u64 XXH3-64 of header + body
 *
 * Files are <dir>/<20-digit lsn>.snap, written as <name>.inprogress, then
 * fdatasync'd, renamed, and the directory fsync'd.  A file without a valid
 * trailer or with a bad checksum is never loaded.
 */
#ifndef WM_SNAPSHOT_H
#define WM_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#define SNAP_MAX_RECORD (8u << 20)
#define SNAP_MAX_HINT 4096u

struct snap_writer;

/* Start <dir>/<lsn>.snap.inprogress.  NULL with err on failure. */
struct snap_writer *snap_writer_open(const char *dir, uint64_t lsn, char *err, size_t errlen);
/* The hint: at most SNAP_MAX_HINT opaque bytes, before the first record
 * (0, or -1 when a record or a hint was already added, or too long).  A
 * loader is handed it at the start of its verifying pass, before anything
 * of the file is verified, so it may only steer what a wrong value cannot
 * break: the sizing of what the records will fill, say (engine/storage/
 * recovery.c: the rows per table).  It is not a record: snap_load's fn
 * never sees it and the trailer's count leaves it out. */
int snap_writer_hint(struct snap_writer *w, const void *hint, size_t len);
/* Add one record (copied into the compressed stream).  0 or -1. */
int snap_writer_add(struct snap_writer *w, const void *rec, size_t len);
/* Finish: trailer, fdatasync, rename to the final name, fsync dir.
 * Frees w.  Returns 0 or -1 (temp file removed on failure). */
int snap_writer_commit(struct snap_writer *w, char *err, size_t errlen);
/* Abandon: remove the temp file, free w. */
void snap_writer_abort(struct snap_writer *w);

typedef int (*snap_record_fn)(void *ctx, const void *rec, size_t len);

struct snap_info {
	char path[256];
	uint64_t lsn;
	uint64_t records;
	uint64_t created_unix_ms;
	uint64_t file_bytes;
};

/* Verify the whole file (checksums, trailer, record framing) and then, if
 * fn is non-NULL, call fn for every record.  Returns 0, -1 on a bad file
 * (err says why and at which offset), or fn's non-zero return value. */
int snap_load(const char *path, snap_record_fn fn, void *ctx, struct snap_info *info,
	      char *err, size_t errlen);

/* Find the newest snapshot in dir that verifies; 1 found, 0 none, -1 error.
 * Invalid newer files are skipped with a line on stderr. */
int snap_find_latest(const char *dir, struct snap_info *info);

/*
 * What a load calls, all optional, all with ctx:
 *  begin    before the verifying pass over a file starts (once per file
 *           tried): reset whatever census counts;
 *  hint     the file's hint (snap_writer_hint), if it has one, at the
 *           start of the verifying pass, with the trailer's record count:
 *           neither is verified yet (the pass may still refuse the file),
 *           so use them only as snap_writer_hint says;
 *  census   during the verifying pass, for every record as it is decoded,
 *           BEFORE the file's checksum has been checked: it may only count
 *           (e.g. records per table, to size indexes), and whatever it
 *           counted is meaningful only once `verified` is called;
 *  verified once the whole file verified (info filled), before the first
 *           record goes to fn; a non-zero return stops the load with it;
 *  fn       every record in order, in a second pass that repeats every
 *           check (snap_load's contract).
 */
struct snap_load_hooks {
	void (*begin)(void *ctx);
	void (*census)(void *ctx, const void *rec, size_t len);
	void (*hint)(void *ctx, const void *hint, size_t len, uint64_t records);
	int (*verified)(void *ctx, const struct snap_info *info);
	snap_record_fn fn;
	void *ctx;
};

/* snap_load with every hook of hk: 0, -1 (bad file, err), or the non-zero
 * return of hk->verified or hk->fn. */
int snap_load_hooked(const char *path, const struct snap_load_hooks *hk, struct snap_info *info,
		     char *err, size_t errlen);

/*
 * Load the newest snapshot in dir that verifies, verifying it once: the
 * snapshots are tried newest first, each verified by a full pass (as
 * snap_find_latest does, header LSN against the name included) and
 * skipped with a line on stderr ("snapshot: skipping invalid ...") if it
 * fails; the first that passes is then loaded through hk (a second pass
 * repeating every check).  Returns 1 loaded (info filled if non-NULL), 0
 * none valid (also when dir does not exist; no record was handed out),
 * or -1 with err: dir unreadable, or the chosen file failed after it
 * verified (changed underneath us) or a hook refused -- records may then
 * have been handed out, and no older snapshot is tried.
 */
int snap_load_latest(const char *dir, const struct snap_load_hooks *hk, struct snap_info *info,
		     char *err, size_t errlen);

/* Keep the newest `keep` valid snapshots, delete older ones and stale
 * *.inprogress files.  Returns the LSN of the oldest snapshot kept (0 if
 * none), so the caller can prune WAL segments below it. */
uint64_t snap_prune(const char *dir, unsigned keep);

/* Start-up, with the data directory's lock held (so no writer of ours is
 * alive, a dying orphan at most): remove every <lsn>.snap.inprogress file,
 * locked or not, calling fn(ctx, path) for each one removed (may be NULL).
 * Returns how many were removed, or -1 (errno) if dir cannot be listed. */
int snap_remove_temps(const char *dir, void (*fn)(void *ctx, const char *path), void *ctx);

#endif
