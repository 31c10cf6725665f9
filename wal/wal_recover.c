/*
 * wal_recover.c -- reading the log back: recovery (replay, torn-tail cut,
 * corruption refusal or salvage), pruning, and inspection for the CLI.
 *
 * Why this is strict: the WAL is the only copy of every acknowledged write
 * between snapshots, so recovery must distinguish the one kind of damage
 * that a crash legitimately produces from everything else:
 *
 *  - The normal end of a segment is the zero bytes the writer preallocated
 *    (or the end of the file, once a tail was cut).
 *  - A torn tail: the writer died (or the machine lost power) in the middle
 *    of its last write.  Because the writer fdatasyncs a segment before it
 *    rotates away from it (wal.c), that can only happen at the end of the
 *    LAST segment, and nothing valid can follow it.  So: a bad or short
 *    frame in the last segment with no valid frame (right magic, right salt,
 *    valid checksum) anywhere after it is cut off -- the file is truncated
 *    at the last good frame and fsync'd -- and reported.  The transactions
 *    in it were never reported durable (the durable LSN is published only
 *    after the sync), so nobody was told they exist.
 *  - Anything else -- a bad frame followed by a valid one, a bad frame in an
 *    older segment, a bad segment header, an LSN gap or regression between
 *    frames or segments -- is corruption of data that was once durable.
 *    Recovery refuses with a message naming the file and byte offset,
 *    unless the operator asked to salvage: then replay stops there, that
 *    file is truncated at the bad offset (removed if the offset is 0) and
 *    every later segment is deleted.
 *
 * A gap between segments (or before the first one) is tolerated only when
 * every missing LSN is <= after_lsn, i.e. covered by the snapshot the
 * caller loaded (this happens legitimately when the log ran in mode none
 * for a while, or after pruning).
 *
 * Segments are read through a read-only mmap; frames are decoded with the
 * shared codec (wal_format.c) and one reused zstd decompression context.
 * A segment's dictionary frames (wal.c: segment dictionaries) are met in
 * order before the frames compressed against them; each segment starts
 * without one, so every segment reads on its own.  Damage in a dictionary
 * frame is damage like any other: the frames after it still have valid
 * checksums, so it is never taken for a torn tail.
 * Recovery replays while it reads (single pass): if it then refuses, the
 * callback has already seen a valid prefix, and the caller must not start.
 */
#include "wal/wal.h"
#include "wal/fsutil.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "wal/wal_format.h"

static _Atomic(wal_log_fn) recovery_log;

/* See wal.h. */
void wal_set_recovery_log(wal_log_fn fn)
{
	atomic_store(&recovery_log, fn);
}

static void logf_(const char *f, ...) __attribute__((format(printf, 1, 2)));
/* One log line through the configured sink (default stderr). */
static void logf_(const char *f, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, f);
	vsnprintf(line, sizeof(line), f, ap);
	va_end(ap);
	wal_log_fn fn = atomic_load(&recovery_log);
	if (fn)
		fn(line);
	else
		fprintf(stderr, "%s\n", line);
}

struct seg_ent {
	char path[PATH_MAX];
	uint64_t lsn; /* from the file name */
};

/* A mapped segment with a validated header. */
struct segmap {
	const uint8_t *p;
	size_t size;
	uint64_t salt, first;
};

/* Result of walking the frames of one segment. */
enum scan_status { SCAN_CLEAN, SCAN_BAD_FRAME, SCAN_STOPPED };
struct scan {
	enum scan_status status;
	uint64_t good_end;   /* offset after the last valid frame */
	uint64_t frames, txns;
	uint64_t last_lsn;   /* last valid LSN in this segment, 0 if none */
	uint64_t replayed;   /* transactions with LSN > after_lsn handed to fn */
	uint64_t first_replayed;
	int valid_after;     /* SCAN_BAD_FRAME: a valid frame follows the bad point */
	int fn_rc;           /* SCAN_STOPPED: the callback's return value */
	char why[128];
};

static void fmt(char *dst, size_t n, const char *f, ...) __attribute__((format(printf, 3, 4)));
/* snprintf that tolerates truncation quietly (messages only). */
static void fmt(char *dst, size_t n, const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	vsnprintf(dst, n, f, ap);
	va_end(ap);
}

/* Copy a path into a fixed report field: whole if it fits, else its tail. */
static void copy_path(char *dst, size_t n, const char *path)
{
	size_t l = strlen(path);
	const char *s = l < n ? path : path + (l - (n - 1));
	memcpy(dst, s, strlen(s) + 1);
}

static int cmp_seg(const void *a, const void *b)
{
	uint64_t x = ((const struct seg_ent *)a)->lsn, y = ((const struct seg_ent *)b)->lsn;
	return x < y ? -1 : x > y;
}

/*
 * List the segments of dir sorted by first LSN into *out (caller frees).
 * With remove_stale, "<segment>.inprogress" files are deleted (a crash
 * during segment creation; they were never published).  A missing
 * directory is an empty list.  Returns the count, or -1 with err.
 */
static long list_segments(const char *dir, int remove_stale, struct seg_ent **out, char *err,
			  size_t errlen)
{
	*out = NULL;
	DIR *d = opendir(dir);
	if (!d) {
		if (errno == ENOENT)
			return 0;
		fmt(err, errlen, "wal: cannot read directory %s: %s", dir, strerror(errno));
		return -1;
	}
	struct seg_ent *v = NULL;
	size_t n = 0, cap = 0;
	int removed = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		uint64_t lsn;
		size_t l = strlen(de->d_name), sl = strlen(WAL_SEG_TMP_SUFFIX);
		if (remove_stale && l == WAL_SEG_NAME_LEN + sl &&
		    strcmp(de->d_name + WAL_SEG_NAME_LEN, WAL_SEG_TMP_SUFFIX) == 0) {
			char name[WAL_SEG_NAME_LEN + 1];
			memcpy(name, de->d_name, WAL_SEG_NAME_LEN);
			name[WAL_SEG_NAME_LEN] = 0;
			if (wal_seg_name_parse(name, &lsn)) {
				char p[PATH_MAX];
				fmt(p, sizeof(p), "%s/%s", dir, de->d_name);
				if (unlink(p) == 0) {
					logf_("wal: removed stale %s", p);
					removed = 1;
				}
			}
			continue;
		}
		if (!wal_seg_name_parse(de->d_name, &lsn))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			struct seg_ent *nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				fmt(err, errlen, "wal: out of memory listing %s", dir);
				return -1;
			}
			v = nv;
		}
		if ((size_t)snprintf(v[n].path, sizeof(v[n].path), "%s/%s", dir, de->d_name) >=
		    sizeof(v[n].path)) {
			free(v);
			closedir(d);
			fmt(err, errlen, "wal: path too long under %s", dir);
			return -1;
		}
		v[n].lsn = lsn;
		n++;
	}
	closedir(d);
	if (removed)
		fs_fsync_dir(dir);
	if (n)
		qsort(v, n, sizeof(*v), cmp_seg);
	*out = v;
	return (long)n;
}

/*
 * Map a segment read-only and validate its header (including that the
 * header's first LSN matches the file name).  Returns 0, -1 on an I/O
 * error, -2 on a bad header; `why` says what.
 */
static int seg_map(const struct seg_ent *s, struct segmap *m, char *why, size_t whylen)
{
	memset(m, 0, sizeof(*m));
	int fd = open(s->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fmt(why, whylen, "open: %s", strerror(errno));
		return -1;
	}
	struct stat sb;
	if (fstat(fd, &sb)) {
		fmt(why, whylen, "stat: %s", strerror(errno));
		close(fd);
		return -1;
	}
	m->size = (size_t)sb.st_size;
	if (m->size < WAL_SEG_HEADER_SIZE) {
		close(fd);
		fmt(why, whylen, "file of %zu bytes is shorter than a segment header", m->size);
		return -2;
	}
	void *p = mmap(NULL, m->size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		fmt(why, whylen, "mmap: %s", strerror(errno));
		m->size = 0;
		return -1;
	}
	m->p = p;
	char w[96];
	if (wal_seg_header_decode(m->p, m->size, &m->salt, &m->first, w)) {
		fmt(why, whylen, "%s", w);
		return -2;
	}
	if (m->first != s->lsn) {
		fmt(why, whylen, "header says first LSN %" PRIu64 ", file name says %" PRIu64, m->first,
		    s->lsn);
		return -2;
	}
	return 0;
}

static void seg_unmap(struct segmap *m)
{
	if (m->p)
		munmap((void *)m->p, m->size);
	m->p = NULL;
}

/* 1 if a frame with the right magic, salt and checksum starts anywhere in
 * [from, size): then the damage before it is not a torn tail.  Only what
 * needs no decompression is checked (wal_frame_sound): a frame written
 * whole counts, whatever dictionary it was compressed against. */
static int valid_frame_after(const struct segmap *m, size_t from)
{
	if (m->size < WAL_FRAME_HEADER_SIZE)
		return 0;
	for (size_t q = from; q + WAL_FRAME_HEADER_SIZE <= m->size; q++) {
		if (rd_u32(m->p + q) != WAL_FRAME_MAGIC || rd_u64(m->p + q + 8) != m->salt)
			continue;
		if (wal_frame_sound(m->p + q, m->size - q, m->salt, NULL, NULL) == WAL_FRAME_OK)
			return 1;
	}
	return 0;
}

/*
 * Walk the frames of a mapped segment from just after its header: decode
 * each (a dictionary frame into dict, the frames after it against it),
 * check LSN continuity (the first frame starts at the header's first
 * LSN, each next one right after the previous), and call fn (if non-NULL)
 * for every transaction with LSN > after_lsn.  Stops at the clean end
 * (zeros to the end of the file, or the end of the file), at the first bad
 * frame, or when fn returns non-zero.
 */
static void seg_walk(const struct segmap *m, struct ZSTD_DCtx_s *dctx, struct wal_dict *dict,
		     struct buf *raw, uint64_t after_lsn, wal_replay_fn fn, void *ctx, struct scan *sc)
{
	memset(sc, 0, sizeof(*sc));
	size_t off = WAL_SEG_HEADER_SIZE;
	uint64_t expect = m->first;
	sc->good_end = off;
	while (off < m->size) {
		struct wal_frame_view fv;
		char why[96];
		enum wal_frame_status st =
			wal_frame_decode_with(dctx, dict, m->p + off, m->size - off, m->salt, &fv, raw, why);
		if (st == WAL_FRAME_OK && (fv.flags & WAL_FRAME_F_DICT)) {
			/* the segment's dictionary from here on: no transactions */
			off += fv.frame_len;
			sc->good_end = off;
			continue;
		}
		if (st == WAL_FRAME_OK && fv.first_lsn != expect) {
			fmt(sc->why, sizeof(sc->why),
			    "LSN %s: expected %" PRIu64 ", frame holds %" PRIu64 "..%" PRIu64,
			    fv.first_lsn > expect ? "gap" : "regression", expect, fv.first_lsn,
			    fv.last_lsn);
			sc->status = SCAN_BAD_FRAME;
			sc->valid_after = 1; /* this very frame is valid */
			return;
		}
		if (st == WAL_FRAME_OK) {
			size_t toff = 0;
			uint64_t lsn;
			const uint8_t *pl;
			uint32_t len;
			while (wal_txn_next(raw, &toff, &lsn, &pl, &len)) {
				if (lsn <= after_lsn)
					continue;
				int rc = fn ? fn(ctx, lsn, pl, len) : 0;
				if (rc) {
					sc->status = SCAN_STOPPED;
					sc->fn_rc = rc;
					return;
				}
				if (!sc->replayed++)
					sc->first_replayed = lsn;
			}
			sc->frames++;
			sc->txns += fv.txn_count;
			sc->last_lsn = fv.last_lsn;
			expect = fv.last_lsn + 1;
			off += fv.frame_len;
			sc->good_end = off;
			continue;
		}
		if (st == WAL_FRAME_ZERO && wal_all_zero(m->p + off, m->size - off))
			return; /* the normal end: preallocated zeros */
		if (st == WAL_FRAME_ZERO)
			fmt(sc->why, sizeof(sc->why), "zero frame header followed by non-zero bytes");
		else
			fmt(sc->why, sizeof(sc->why), "%s frame: %s",
			    st == WAL_FRAME_SHORT ? "short" : "bad", why);
		sc->status = SCAN_BAD_FRAME;
		sc->valid_after = valid_frame_after(m, off + 1);
		return;
	}
}

/* seg_walk with the segment's own dictionary state: each segment starts
 * without one, and what its dictionary frames installed is freed here. */
static void seg_frames(const struct segmap *m, struct ZSTD_DCtx_s *dctx, struct buf *raw,
		       uint64_t after_lsn, wal_replay_fn fn, void *ctx, struct scan *sc)
{
	struct wal_dict dict = {0};
	seg_walk(m, dctx, &dict, raw, after_lsn, fn, ctx, sc);
	wal_dict_free(&dict);
}

/* Truncate path to len bytes and fsync it.  0 or -1. */
static int truncate_sync(const char *path, uint64_t len)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = ftruncate(fd, (off_t)len);
	if (rc == 0)
		rc = fsync(fd);
	close(fd);
	return rc;
}

/*
 * Salvage at (segs[i], off): truncate that file at off (remove it when off
 * is 0, i.e. its header or its place in the sequence is bad), delete every
 * later segment, sync the directory.  0 or -1.
 */
static int salvage_cut(const char *dir, struct seg_ent *segs, size_t n, size_t i, uint64_t off)
{
	int rc = 0;
	if (off == 0) {
		if (unlink(segs[i].path))
			rc = -1;
	} else if (truncate_sync(segs[i].path, off)) {
		rc = -1;
	}
	for (size_t j = i + 1; j < n; j++) {
		if (unlink(segs[j].path))
			rc = -1;
		else
			logf_("wal: salvage removed %s", segs[j].path);
	}
	if (fs_fsync_dir(dir))
		rc = -1;
	return rc;
}

/*
 * Corruption at (segs[i], off): without salvage, fill rep->error and return
 * -1; with salvage, cut there, record the cut in rep's tail fields and
 * return 0 (the caller stops replaying).
 */
static int corrupt(const char *dir, struct seg_ent *segs, size_t n, size_t i, uint64_t off,
		   uint64_t file_size, const char *why, int salvage,
		   struct wal_recovery_report *rep)
{
	if (!salvage) {
		fmt(rep->error, sizeof(rep->error),
		    "wal: corruption in %s at offset %" PRIu64 ": %s (refusing to start; salvage "
		    "would keep everything before this point and drop the rest)",
		    segs[i].path, off, why);
		return -1;
	}
	logf_("wal: SALVAGE: cutting %s at offset %" PRIu64 " (%s) and removing %zu later segment(s)",
	      segs[i].path, off, why, n - i - 1);
	if (salvage_cut(dir, segs, n, i, off)) {
		fmt(rep->error, sizeof(rep->error), "wal: salvage of %s at offset %" PRIu64 " failed: %s",
		    segs[i].path, off, strerror(errno));
		return -1;
	}
	rep->tail_cut = 1;
	copy_path(rep->tail_file, sizeof(rep->tail_file), segs[i].path);
	rep->tail_offset = off;
	rep->tail_bytes = file_size > off ? file_size - off : 0;
	return 0;
}

/* See wal.h.  Additionally: a gap before the first segment or between
 * segments is accepted only when every missing LSN is <= after_lsn. */
int wal_recover(const char *dir, uint64_t after_lsn, wal_replay_fn fn, void *ctx, int salvage,
		struct wal_recovery_report *rep)
{
	memset(rep, 0, sizeof(*rep));
	struct seg_ent *segs;
	long nl = list_segments(dir, 1, &segs, rep->error, sizeof(rep->error));
	if (nl <= 0)
		return nl < 0 ? -1 : 0;
	size_t n = (size_t)nl;
	ZSTD_DCtx *dctx = ZSTD_createDCtx();
	struct buf raw;
	buf_init(&raw, 0);
	int rc = 0;
	if (!dctx) {
		fmt(rep->error, sizeof(rep->error), "wal: out of memory");
		rc = -1;
		goto out;
	}
	uint64_t expect = 0; /* next LSN the log must continue with (0: no segment yet) */
	uint64_t need_from = after_lsn == UINT64_MAX ? UINT64_MAX : after_lsn + 1; /* first LSN needed */
	for (size_t i = 0; i < n; i++) {
		int last = i + 1 == n;
		struct segmap m;
		char why[192];
		int mr = seg_map(&segs[i], &m, why, sizeof(why));
		rep->segments++;
		if (mr == -1) {
			fmt(rep->error, sizeof(rep->error), "wal: cannot read %s: %s", segs[i].path, why);
			rc = -1;
			break;
		}
		if (mr == -2) {
			uint64_t sz = m.size;
			seg_unmap(&m);
			rc = corrupt(dir, segs, n, i, 0, sz, why, salvage, rep);
			break;
		}
		/* Where this segment starts against where the log must continue. */
		uint64_t need = expect ? expect : need_from;
		if (m.first < need && expect) {
			fmt(why, sizeof(why), "LSN regression: segment starts at %" PRIu64
			    ", previous segment ended at %" PRIu64, m.first, expect - 1);
		} else if (m.first > need && m.first > need_from) {
			fmt(why, sizeof(why), "LSN gap: segment starts at %" PRIu64
			    ", the log must continue at %" PRIu64, m.first, need);
		} else {
			why[0] = 0;
		}
		if (why[0]) {
			uint64_t sz = m.size;
			seg_unmap(&m);
			if (i == 0 || !salvage) {
				/* Nothing before it to salvage to, or no salvage asked. */
				fmt(rep->error, sizeof(rep->error),
				    "wal: corruption in %s at offset 0: %s", segs[i].path, why);
				rc = -1;
			} else {
				rc = corrupt(dir, segs, n, i, 0, sz, why, salvage, rep);
			}
			break;
		}
		struct scan sc;
		seg_frames(&m, dctx, &raw, after_lsn, fn, ctx, &sc);
		uint64_t size = m.size;
		seg_unmap(&m);
		if (sc.replayed && !rep->first_lsn)
			rep->first_lsn = sc.first_replayed;
		rep->txns_replayed += sc.replayed;
		if (sc.last_lsn) {
			rep->last_lsn = sc.last_lsn;
			expect = sc.last_lsn + 1;
		} else {
			assert(!expect || m.first >= expect);
			expect = m.first; /* an empty segment: the log continues at its start */
		}
		if (sc.status == SCAN_STOPPED) {
			rc = sc.fn_rc;
			break;
		}
		if (sc.status == SCAN_BAD_FRAME) {
			if (last && !sc.valid_after) {
				if (truncate_sync(segs[i].path, sc.good_end)) {
					fmt(rep->error, sizeof(rep->error),
					    "wal: cannot cut torn tail of %s at offset %" PRIu64 ": %s",
					    segs[i].path, sc.good_end, strerror(errno));
					rc = -1;
					break;
				}
				rep->tail_cut = 1;
				copy_path(rep->tail_file, sizeof(rep->tail_file), segs[i].path);
				rep->tail_offset = sc.good_end;
				rep->tail_bytes = size - sc.good_end;
				logf_("wal: cut torn tail of %s at offset %" PRIu64 " (%" PRIu64
				      " bytes: %s)", segs[i].path, sc.good_end, rep->tail_bytes, sc.why);
			} else {
				rc = corrupt(dir, segs, n, i, sc.good_end, size, sc.why, salvage, rep);
			}
			break;
		}
	}
out:
	ZSTD_freeDCtx(dctx);
	buf_free(&raw);
	free(segs);
	return rc;
}

/* See wal.h. */
int wal_prune(const char *dir, uint64_t upto_lsn)
{
	struct seg_ent *segs;
	char err[256];
	long nl = list_segments(dir, 0, &segs, err, sizeof(err));
	if (nl < 0) {
		logf_("%s", err);
		return -1;
	}
	int removed = 0, rc = 0;
	/* Oldest first, so what remains is always a contiguous suffix. */
	for (long i = 0; i + 1 < nl; i++) {
		if (segs[i + 1].lsn > upto_lsn + 1 || upto_lsn == UINT64_MAX)
			break;
		if (unlink(segs[i].path)) {
			logf_("wal: prune %s: %s", segs[i].path, strerror(errno));
			rc = -1;
			break;
		}
		removed++;
	}
	if (removed && fs_fsync_dir(dir))
		rc = -1;
	free(segs);
	return rc ? -1 : removed;
}

/* See wal.h.  Also reports (ok = 0) a segment that does not continue the
 * previous one's LSNs; a gap before the first segment is normal (pruned). */
int wal_inspect(const char *dir, wal_segment_fn fn, void *ctx)
{
	struct seg_ent *segs;
	char err[256];
	long nl = list_segments(dir, 0, &segs, err, sizeof(err));
	if (nl < 0) {
		logf_("%s", err);
		return -1;
	}
	ZSTD_DCtx *dctx = ZSTD_createDCtx();
	if (!dctx) {
		free(segs);
		return -1;
	}
	struct buf raw;
	buf_init(&raw, 0);
	int all_ok = 1;
	uint64_t expect = 0;
	for (long i = 0; i < nl; i++) {
		struct wal_segment_info info;
		memset(&info, 0, sizeof(info));
		copy_path(info.path, sizeof(info.path), segs[i].path);
		info.first_lsn = segs[i].lsn;
		info.last_lsn = segs[i].lsn - 1;
		info.ok = 1;
		struct segmap m;
		char why[192];
		int mr = seg_map(&segs[i], &m, why, sizeof(why));
		if (mr) {
			info.ok = 0;
			info.bad_offset = 0;
			fmt(info.error, sizeof(info.error), "%s", why);
		} else {
			struct scan sc;
			seg_frames(&m, dctx, &raw, UINT64_MAX, NULL, NULL, &sc);
			info.frames = sc.frames;
			info.txns = sc.txns;
			info.bytes_used = sc.good_end;
			if (sc.last_lsn)
				info.last_lsn = sc.last_lsn;
			if (expect && m.first != expect) {
				info.ok = 0;
				info.bad_offset = 0;
				fmt(info.error, sizeof(info.error),
				    "LSN %s: segment starts at %" PRIu64 ", previous ended at %" PRIu64,
				    m.first > expect ? "gap" : "regression", m.first, expect - 1);
			}
			if (sc.status == SCAN_BAD_FRAME) {
				info.ok = 0;
				info.bad_offset = sc.good_end;
				fmt(info.error, sizeof(info.error), "%s at offset %" PRIu64 "%s", sc.why,
				    sc.good_end,
				    i + 1 == nl && !sc.valid_after ? " (torn tail: recovery will cut it)"
								   : " (corruption)");
			}
			expect = info.last_lsn + 1;
			seg_unmap(&m);
		}
		if (!info.ok)
			all_ok = 0;
		if (fn)
			fn(ctx, &info);
	}
	ZSTD_freeDCtx(dctx);
	buf_free(&raw);
	free(segs);
	return all_ok ? 0 : -1;
}
