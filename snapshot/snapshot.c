/*
 * snapshot.c -- snapshot files: writer, verifying loader, newest-valid
 * selection and retention pruning (contract in snapshot.h).
 *
 * Why: recovery loads the newest snapshot and replays only the WAL above its
 * LSN, so old WAL segments can be deleted.  That makes a snapshot the only
 * copy of everything below its LSN: a snapshot that is half-written, torn by
 * a crash, or silently corrupted must never be mistaken for a good one, and
 * a good one must never be lost to a crash in the middle of writing the next.
 *
 * File format (all integers little-endian):
 *
 *   offset 0   header, 64 bytes
 *                0  magic "WMSNAP01"
 *                8  u32 version (SNAP_VERSION)
 *               12  u32 reserved (0)
 *               16  u64 salt (random per file)
 *               24  u64 lsn
 *               32  u64 created_unix_ms
 *               40  16 reserved bytes (0)
 *               56  u64 XXH3-64 of bytes 0..55
 *   offset 64  body: one zstd stream (SNAP_ZSTD_LEVEL) whose decompressed content is
 *              a sequence of entries (u32 len, len bytes of record), each
 *              len <= SNAP_MAX_RECORD; the first entry may instead be the
 *              writer's hint (u32 SNAP_HINT_FLAG | n, n <= SNAP_MAX_HINT
 *              bytes), which is not a record and not counted
 *   size-32    trailer, 32 bytes
 *                0  magic "WMSNAPND"
 *                8  u64 record count
 *               16  u64 body length (= file size - 96)
 *               24  u64 XXH3-64 of header + body (everything before the trailer)
 *
 * The writer streams: records are staged, compressed with
 * ZSTD_compressStream2, and every compressed byte is fed to an XXH3 streaming
 * state as it is written, so the file checksum costs no second pass.
 *
 * Crash-safety argument.  The file is written as <lsn>.snap.inprogress and
 * only that name is touched until it is complete; then fdatasync (data and
 * size are on disk), rename to <lsn>.snap (atomic: a reader or a crash sees
 * either no final file or the complete one), then fsync of the directory so
 * the rename itself survives power loss.  A crash at any point therefore
 * leaves either (a) nothing new under a final name, or (b) a complete, synced
 * file under it.  Readers never trust a name alone: snap_load checks the
 * header checksum, the trailer magic, that the trailer's body length matches
 * the file size (a truncated file fails here), the checksum over header and
 * body, and then decompresses the whole body and walks every entry, checking
 * bounds and that the count equals the trailer's -- all before the first
 * record is handed to the caller.  A bit flip anywhere is caught: in the
 * header by the header checksum, in the body by the file checksum, in the
 * trailer by its magic, the size check, the count check or the checksum.
 *
 * A writer holds flock(LOCK_EX) on its .inprogress file for its lifetime;
 * the lock dies with the process, so snap_prune can tell a stale temp file
 * (left by a crash) from one being written right now by a forked child, and
 * deletes only the former.
 *
 * Fsync failures are not retried (DESIGN.md section 4): the temp file is
 * removed and commit reports failure; the caller decides whether to exit.
 */
#include "snapshot/snapshot.h"
#include "wal/fsutil.h"

#include "wal/errinj.h"
#include "net/buf.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#define SNAP_VERSION 1u
#define SNAP_HDR_SIZE 64u
#define SNAP_HDR_HASHED 56u /* bytes covered by the header checksum */
#define SNAP_TRL_SIZE 32u
#define SNAP_MAGIC "WMSNAP01"
#define SNAP_TRL_MAGIC "WMSNAPND"
#define SNAP_SUFFIX ".snap"
#define SNAP_TMP_SUFFIX ".snap.inprogress"
#define SNAP_LSN_DIGITS 20
/* zstd's fast negative level: recovery decompresses the body twice (the
 * verifying pass, then the hand-out), the first pass with the loop idle.
 * Measured on a 1.71M-record bench_scale snapshot (415 MB of records):
 * level 1 30.7 MB, decompressed in 84 ms, compressed in 232 ms; -1 36.8
 * MB, 68 ms, 197 ms; -3 38.5 MB, 58 ms, 185 ms.  So -3: a quarter more
 * disk for a third less decompression, and a cheaper snapshot child. */
#define SNAP_ZSTD_LEVEL (-3)
/* Staged uncompressed bytes are handed to zstd in batches of this size. */
#define SNAP_STAGE_BYTES ((size_t)128 << 10)
/* Compressed output is written to the file in batches of this size. */
#define SNAP_FLUSH_BYTES ((size_t)1 << 20)
/* Bytes read from the file per pread while loading. */
#define SNAP_READ_BYTES ((size_t)1 << 20)
/* Refuse zstd frames that ask for a window above 16 MiB (the writer uses far
 * less), so a hostile file cannot make the loader allocate gigabytes. */
#define SNAP_WINDOW_LOG_MAX 24
/* Attempts to open a temp file that a concurrent prune keeps unlinking. */
#define SNAP_OPEN_TRIES 3
/* An entry whose length word has this bit set is the hint (snapshot.h).
 * SNAP_MAX_RECORD is far below it, so a loader from before hints refuses
 * such a file ("exceeds SNAP_MAX_RECORD") instead of misreading it. */
#define SNAP_HINT_FLAG 0x80000000u
_Static_assert(SNAP_MAX_RECORD < SNAP_HINT_FLAG && SNAP_MAX_HINT < SNAP_HINT_FLAG, "the flag is not a length");

struct snap_writer {
	int fd;
	int failed;            /* a write/compress error happened; err says what */
	uint64_t lsn;
	uint64_t count;        /* records added */
	int hinted;            /* the hint is written */
	uint64_t file_off;     /* bytes written to fd so far (header + body) */
	ZSTD_CCtx *cctx;
	XXH3_state_t *xxh;     /* XXH3 over every byte written before the trailer */
	struct buf stage;      /* uncompressed entries not yet given to zstd */
	struct buf out;        /* compressed bytes not yet written */
	char dir[PATH_MAX];
	char path[PATH_MAX];   /* final name */
	char tmp[PATH_MAX];    /* temp name */
	char err[256];         /* first error, reported by commit */
};

/* ---- small helpers ------------------------------------------------------ */

static void seterr(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || errlen == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Record the writer's first error; later ones are consequences. */
static void werr(struct snap_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void werr(struct snap_writer *w, const char *fmt, ...)
{
	if (w->failed)
		return;
	w->failed = 1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(w->err, sizeof(w->err), fmt, ap);
	va_end(ap);
}

/* write(2) all of p, retrying short writes and EINTR.  0 or -1 (errno). */
static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n > 0) {
		ssize_t r = write(fd, c, n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		c += r;
		n -= (size_t)r;
	}
	return 0;
}

/* pread(2) exactly n bytes at off.  0, or -1 (errno set; 0 on early EOF). */
static int pread_all(int fd, void *p, size_t n, uint64_t off)
{
	char *c = p;
	while (n > 0) {
		ssize_t r = pread(fd, c, n, (off_t)off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0) {
			errno = 0;
			return -1;
		}
		c += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}


static uint64_t now_unix_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t random_salt(void)
{
	uint64_t s = 0;
	if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != (ssize_t)sizeof(s))
		s = now_unix_ms() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&s;
	return s;
}

/* Parse "<20 digits><suffix>" exactly; returns 1 and *lsn, or 0. */
static int parse_name(const char *name, const char *suffix, uint64_t *lsn)
{
	uint64_t v = 0;
	for (int i = 0; i < SNAP_LSN_DIGITS; i++) {
		unsigned d = (unsigned)(unsigned char)name[i] - '0';
		if (d > 9)
			return 0;
		if (v > (UINT64_MAX - d) / 10)
			return 0; /* overflow: not a name we write */
		v = v * 10 + d;
	}
	if (strcmp(name + SNAP_LSN_DIGITS, suffix) != 0)
		return 0;
	*lsn = v;
	return 1;
}

/* ---- writer ------------------------------------------------------------- */

/* Write out everything in w->out, hashing it first.  0 or -1 (w->err set). */
static int flush_out(struct snap_writer *w)
{
	if (w->out.len == 0)
		return 0;
	XXH3_64bits_update(w->xxh, w->out.data, w->out.len);
	if (write_all(w->fd, w->out.data, w->out.len)) {
		werr(w, "%s: write failed at byte offset %" PRIu64 ": %s", w->tmp, w->file_off,
		     strerror(errno));
		return -1;
	}
	w->file_off += w->out.len;
	buf_reset(&w->out);
	return 0;
}

/* Feed p[0..n) to zstd with `op` (ZSTD_e_continue consumes all input,
 * ZSTD_e_end also finishes the frame), collecting output in w->out and
 * flushing it to the file in SNAP_FLUSH_BYTES batches.  0 or -1. */
static int compress(struct snap_writer *w, const void *p, size_t n, ZSTD_EndDirective op)
{
	ZSTD_inBuffer in = { p, n, 0 };
	size_t outsz = ZSTD_CStreamOutSize();
	for (;;) {
		if (buf_reserve(&w->out, outsz)) {
			werr(w, "%s: out of memory for compressed output", w->tmp);
			return -1;
		}
		ZSTD_outBuffer out = { w->out.data + w->out.len, w->out.cap - w->out.len, 0 };
		size_t r = ZSTD_compressStream2(w->cctx, &out, &in, op);
		if (ZSTD_isError(r)) {
			werr(w, "%s: zstd compression failed near byte offset %" PRIu64 ": %s",
			     w->tmp, w->file_off + w->out.len, ZSTD_getErrorName(r));
			return -1;
		}
		w->out.len += out.pos;
		if (w->out.len >= SNAP_FLUSH_BYTES && flush_out(w))
			return -1;
		if (op == ZSTD_e_end ? r == 0 : in.pos == in.size)
			break;
	}
	assert(in.pos == in.size);
	return 0;
}

/* Hand the staged entries to zstd.  0 or -1. */
static int flush_stage(struct snap_writer *w)
{
	if (w->stage.len == 0)
		return 0;
	int rc = compress(w, w->stage.data, w->stage.len, ZSTD_e_continue);
	buf_reset(&w->stage);
	return rc;
}

/* Open (creating) the temp file and take its writer lock, making sure the
 * locked inode is the one under the name (a concurrent prune may have just
 * unlinked a stale file of the same name).  fd or -1 with err set. */
static int open_locked_tmp(const char *tmp, char *err, size_t errlen)
{
	for (int tries = 0; tries < SNAP_OPEN_TRIES; tries++) {
		int fd = open(tmp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0) {
			seterr(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
			return -1;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
			int e = errno;
			close(fd);
			if (e == EWOULDBLOCK)
				seterr(err, errlen, "%s: another writer holds this snapshot", tmp);
			else
				seterr(err, errlen, "%s: flock: %s", tmp, strerror(e));
			return -1;
		}
		struct stat a, b;
		if (fstat(fd, &a) == 0 && stat(tmp, &b) == 0 && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino) {
			if (ftruncate(fd, 0) != 0) {
				seterr(err, errlen, "%s: ftruncate: %s", tmp, strerror(errno));
				close(fd);
				return -1;
			}
			return fd;
		}
		close(fd); /* unlinked under us: try again with a fresh file */
	}
	seterr(err, errlen, "%s: temp file keeps disappearing (concurrent prune?)", tmp);
	return -1;
}

static void writer_free(struct snap_writer *w)
{
	if (w->fd >= 0)
		close(w->fd);
	ZSTD_freeCCtx(w->cctx);
	XXH3_freeState(w->xxh);
	buf_free(&w->stage);
	buf_free(&w->out);
	free(w);
}

/* Contract (snapshot.h): start <dir>/<20-digit lsn>.snap.inprogress, write
 * the header.  NULL with err on failure (nothing left behind).  The writer
 * holds an exclusive flock on the temp file until commit/abort. */
struct snap_writer *snap_writer_open(const char *dir, uint64_t lsn, char *err, size_t errlen)
{
	struct snap_writer *w = calloc(1, sizeof(*w));
	if (!w) {
		seterr(err, errlen, "%s: out of memory", dir);
		return NULL;
	}
	w->fd = -1;
	w->lsn = lsn;
	buf_init(&w->stage, SNAP_STAGE_BYTES + 4);
	buf_init(&w->out, SNAP_FLUSH_BYTES + ZSTD_CStreamOutSize());
	/* The temp name is the longest of the three, so checking it covers
	 * the other two (all buffers are PATH_MAX). */
	snprintf(w->dir, sizeof(w->dir), "%s", dir);
	snprintf(w->path, sizeof(w->path), "%s/%020" PRIu64 SNAP_SUFFIX, dir, lsn);
	int n = snprintf(w->tmp, sizeof(w->tmp), "%s/%020" PRIu64 SNAP_TMP_SUFFIX, dir, lsn);
	if (n < 0 || (size_t)n >= sizeof(w->tmp)) {
		seterr(err, errlen, "%s: directory path too long", dir);
		writer_free(w);
		return NULL;
	}

	w->cctx = ZSTD_createCCtx();
	w->xxh = XXH3_createState();
	if (!w->cctx || !w->xxh ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, SNAP_ZSTD_LEVEL)) ||
	    XXH3_64bits_reset(w->xxh) != XXH_OK) {
		seterr(err, errlen, "%s: cannot set up zstd/xxhash state", w->tmp);
		writer_free(w);
		return NULL;
	}

	w->fd = open_locked_tmp(w->tmp, err, errlen);
	if (w->fd < 0) {
		writer_free(w);
		return NULL;
	}

	uint8_t h[SNAP_HDR_SIZE];
	memset(h, 0, sizeof(h));
	memcpy(h, SNAP_MAGIC, 8);
	wr_u32(h + 8, SNAP_VERSION);
	wr_u64(h + 16, random_salt());
	wr_u64(h + 24, lsn);
	wr_u64(h + 32, now_unix_ms());
	wr_u64(h + SNAP_HDR_HASHED, XXH3_64bits(h, SNAP_HDR_HASHED));
	if (buf_append(&w->out, h, sizeof(h)) || flush_out(w)) {
		seterr(err, errlen, "%s", w->err[0] ? w->err : "header write failed");
		unlink(w->tmp);
		writer_free(w);
		return NULL;
	}
	assert(w->file_off == SNAP_HDR_SIZE);
	return w;
}

/* Contract (snapshot.h): the hint, before the first record (-1 after one,
 * after a hint, or over SNAP_MAX_HINT bytes; the writer stays usable). */
int snap_writer_hint(struct snap_writer *w, const void *hint, size_t len)
{
	assert(w && w->fd >= 0);
	assert(hint || len == 0);
	if (len > SNAP_MAX_HINT || w->count || w->hinted || w->failed)
		return -1;
	uint8_t lenb[4];
	wr_u32(lenb, SNAP_HINT_FLAG | (uint32_t)len);
	assert(w->stage.len == 0);
	if (buf_append(&w->stage, lenb, 4) || (len && buf_append(&w->stage, hint, len))) {
		werr(w, "%s: staging buffer overflow", w->tmp);
		return -1;
	}
	w->hinted = 1;
	return 0;
}

/* Contract (snapshot.h): append one record.  A record over SNAP_MAX_RECORD
 * is refused (-1) without touching the stream: the writer stays usable.  An
 * I/O or compression error also returns -1 and poisons the writer; commit
 * then fails with that error. */
int snap_writer_add(struct snap_writer *w, const void *rec, size_t len)
{
	assert(w && w->fd >= 0);
	assert(rec || len == 0);
	if (len > SNAP_MAX_RECORD || w->failed)
		return -1;
	uint8_t lenb[4];
	wr_u32(lenb, (uint32_t)len);
	assert(w->stage.len <= SNAP_STAGE_BYTES); /* so the prefix always fits */
	if (buf_append(&w->stage, lenb, 4)) {
		werr(w, "%s: staging buffer overflow", w->tmp);
		return -1;
	}
	if (w->stage.len + len <= SNAP_STAGE_BYTES) {
		if (len && buf_append(&w->stage, rec, len)) {
			werr(w, "%s: staging buffer overflow", w->tmp);
			return -1;
		}
	} else {
		/* Large record: compress it straight from the caller's memory. */
		if (flush_stage(w) || (len && compress(w, rec, len, ZSTD_e_continue)))
			return -1;
	}
	w->count++;
	return 0;
}

/* Contract (snapshot.h): finish the zstd frame, write the trailer,
 * fdatasync, rename to the final name, fsync the directory; frees w.  On any
 * failure returns -1 with err, and neither the temp file nor a final file
 * from this writer is left behind. */
int snap_writer_commit(struct snap_writer *w, char *err, size_t errlen)
{
	assert(w && w->fd >= 0);
	int rc = -1;
	if (w->failed || flush_stage(w) || compress(w, NULL, 0, ZSTD_e_end) || flush_out(w))
		goto fail;
	assert(w->file_off >= SNAP_HDR_SIZE);

	uint8_t t[SNAP_TRL_SIZE];
	memcpy(t, SNAP_TRL_MAGIC, 8);
	wr_u64(t + 8, w->count);
	wr_u64(t + 16, w->file_off - SNAP_HDR_SIZE);
	wr_u64(t + 24, XXH3_64bits_digest(w->xxh));
	if (write_all(w->fd, t, sizeof(t))) {
		werr(w, "%s: trailer write failed at byte offset %" PRIu64 ": %s", w->tmp,
		     w->file_off, strerror(errno));
		goto fail;
	}
	if (fdatasync(w->fd) != 0) {
		/* Never retried: the page cache state after a failed sync is
		 * unknown.  The temp file is dropped; the caller decides. */
		werr(w, "%s: fdatasync failed: %s", w->tmp, strerror(errno));
		goto fail;
	}
	if (ERRINJ("snap_crash_before_rename"))
		_exit(137);
	if (rename(w->tmp, w->path) != 0) {
		werr(w, "%s: rename to %s failed: %s", w->tmp, w->path, strerror(errno));
		goto fail;
	}
	if (fs_fsync_dir(w->dir) != 0) {
		/* The rename may or may not be durable; report failure and take
		 * the final file away again so -1 always means "no snapshot". */
		werr(w, "%s: directory fsync after rename failed: %s", w->dir, strerror(errno));
		unlink(w->path);
		(void)fs_fsync_dir(w->dir);
		goto out;
	}
	rc = 0;
	goto out;
fail:
	unlink(w->tmp);
out:
	if (rc != 0)
		seterr(err, errlen, "%s", w->err);
	writer_free(w); /* closes fd: releases the writer lock */
	return rc;
}

/* Contract (snapshot.h): remove the temp file and free w. */
void snap_writer_abort(struct snap_writer *w)
{
	if (!w)
		return;
	unlink(w->tmp);
	writer_free(w);
}

/* ---- loader ------------------------------------------------------------- */

struct loader {
	const char *path;
	int fd;
	uint64_t size;        /* file size */
	uint64_t body_len;    /* from the trailer, = size - 96 */
	uint64_t count;       /* from the trailer */
	uint64_t hash;        /* from the trailer */
	char *err;
	size_t errlen;
	/* decode state for one pass */
	ZSTD_DCtx *dctx;
	struct buf dec;       /* decompressed bytes not yet consumed as entries */
	uint64_t nrec;        /* entries seen this pass */
	uint64_t uoff;        /* uncompressed offset of dec.data[0] */
	int frame_done;       /* last ZSTD_decompressStream returned 0 */
	snap_record_fn fn;
	void *ctx;
	int fn_rc;            /* fn's non-zero return, if any */
	/* the verifying pass's hooks (snapshot.h: struct snap_load_hooks) */
	void (*census)(void *ctx, const void *rec, size_t len);
	void (*hint)(void *ctx, const void *hint, size_t len, uint64_t records);
};

static void lerr(struct loader *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void lerr(struct loader *l, const char *fmt, ...)
{
	if (!l->err || l->errlen == 0)
		return;
	int n = snprintf(l->err, l->errlen, "%s: ", l->path);
	if (n < 0 || (size_t)n >= l->errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(l->err + n, l->errlen - (size_t)n, fmt, ap);
	va_end(ap);
}

/* Consume complete entries from l->dec.  `coff` is the file offset of the
 * compressed input consumed so far (for messages).  0, -1 (bad framing), or
 * 1 (fn asked to stop; l->fn_rc set). */
static int walk_entries(struct loader *l, uint64_t coff)
{
	size_t pos = 0;
	int rc = 0;
	for (;;) {
		size_t avail = l->dec.len - pos;
		if (avail < 4)
			break;
		const uint8_t *p = (const uint8_t *)l->dec.data + pos;
		uint32_t len = rd_u32(p);
		if ((len & SNAP_HINT_FLAG) && l->uoff + pos == 0) { /* the hint: the first entry only */
			uint32_t n = len & ~SNAP_HINT_FLAG;
			if (n > SNAP_MAX_HINT) {
				lerr(l, "hint length %" PRIu32 " exceeds SNAP_MAX_HINT (%u) at uncompressed offset 0 "
					"(compressed stream near byte offset %" PRIu64 ")",
				     n, SNAP_MAX_HINT, coff);
				return -1;
			}
			if (avail - 4 < n)
				break;
			if (!l->fn && l->hint)
				l->hint(l->ctx, p + 4, n, l->count);
			pos += 4 + (size_t)n;
			continue;
		}
		if (len > SNAP_MAX_RECORD) {
			lerr(l, "record #%" PRIu64 " length %" PRIu32 " exceeds SNAP_MAX_RECORD (%u) "
				"at uncompressed offset %" PRIu64 " (compressed stream near byte offset %" PRIu64 ")",
			     l->nrec, len, SNAP_MAX_RECORD, l->uoff + pos, coff);
			return -1;
		}
		if (avail - 4 < len)
			break;
		if (l->nrec >= l->count) {
			lerr(l, "more records than the trailer's count %" PRIu64 " at uncompressed offset %" PRIu64
				" (compressed stream near byte offset %" PRIu64 ")",
			     l->count, l->uoff + pos, coff);
			return -1;
		}
		l->nrec++;
		if (!l->fn && l->census)
			l->census(l->ctx, p + 4, len);
		if (l->fn) {
			int r = l->fn(l->ctx, p + 4, len);
			if (r != 0) {
				l->fn_rc = r;
				rc = 1;
				pos += 4 + (size_t)len;
				break;
			}
		}
		pos += 4 + (size_t)len;
	}
	buf_consume(&l->dec, pos);
	l->uoff += pos;
	return rc;
}

/* Decompress one chunk of body bytes that start at file offset `off`.
 * 0, -1 (err set) or 1 (fn stopped). */
static int decode_chunk(struct loader *l, const uint8_t *p, size_t n, uint64_t off)
{
	ZSTD_inBuffer in = { p, n, 0 };
	size_t outsz = ZSTD_DStreamOutSize();
	for (;;) {
		if (buf_reserve(&l->dec, outsz)) {
			lerr(l, "out of memory decoding near byte offset %" PRIu64, off + in.pos);
			return -1;
		}
		ZSTD_outBuffer out = { l->dec.data + l->dec.len, l->dec.cap - l->dec.len, 0 };
		size_t r = ZSTD_decompressStream(l->dctx, &out, &in);
		if (ZSTD_isError(r)) {
			lerr(l, "zstd: %s at compressed stream byte offset %" PRIu64, ZSTD_getErrorName(r),
			     off + in.pos);
			return -1;
		}
		l->dec.len += out.pos;
		l->frame_done = (r == 0);
		int w = walk_entries(l, off + in.pos);
		if (w != 0)
			return w;
		if (in.pos == in.size && out.pos < out.size)
			return 0;
	}
}

/* One pass over the body: hash everything, decode and walk entries (calling
 * l->fn if set).  Checksum errors take precedence over decode errors, since
 * a bad checksum explains any decode failure.  0, -1 or 1 (fn stopped). */
static int scan_body(struct loader *l, const uint8_t *hdr)
{
	XXH3_state_t *xxh = XXH3_createState();
	struct buf rb;
	buf_init(&rb, SNAP_READ_BYTES);
	int rc = -1;
	if (!xxh || XXH3_64bits_reset(xxh) != XXH_OK || buf_reserve(&rb, SNAP_READ_BYTES)) {
		lerr(l, "out of memory");
		goto out;
	}
	ZSTD_DCtx_reset(l->dctx, ZSTD_reset_session_only);
	buf_reset(&l->dec);
	l->nrec = 0;
	l->uoff = 0;
	l->frame_done = 0;

	XXH3_64bits_update(xxh, hdr, SNAP_HDR_SIZE);
	int dec_rc = 0; /* first decode result; decoding stops after an error */
	uint64_t off = SNAP_HDR_SIZE, end = SNAP_HDR_SIZE + l->body_len;
	while (off < end) {
		size_t n = end - off < SNAP_READ_BYTES ? (size_t)(end - off) : SNAP_READ_BYTES;
		if (pread_all(l->fd, rb.data, n, off)) {
			lerr(l, "read failed at byte offset %" PRIu64 ": %s", off,
			     errno ? strerror(errno) : "file shrank while loading");
			goto out;
		}
		XXH3_64bits_update(xxh, rb.data, n);
		/* Decoding runs alongside hashing; with a callback this is the
		 * second pass, after a full verifying one (see snap_load). */
		if (dec_rc == 0)
			dec_rc = decode_chunk(l, (const uint8_t *)rb.data, n, off);
		if (dec_rc == 1) { /* fn stopped the walk: done */
			rc = 1;
			goto out;
		}
		off += n;
	}
	uint64_t got = XXH3_64bits_digest(xxh);
	if (got != l->hash) {
		lerr(l, "checksum mismatch over bytes [0, %" PRIu64 ") (trailer has %016" PRIx64
			", computed %016" PRIx64 "), stored at byte offset %" PRIu64,
		     end, l->hash, got, end + 24);
		goto out;
	}
	if (dec_rc != 0)
		goto out; /* message already set by the decoder */
	if (!l->frame_done) {
		lerr(l, "zstd stream ends mid-frame at compressed stream byte offset %" PRIu64, end);
		goto out;
	}
	if (l->dec.len != 0) {
		lerr(l, "partial record entry (%zu bytes) at uncompressed offset %" PRIu64
			" (end of compressed stream, byte offset %" PRIu64 ")",
		     l->dec.len, l->uoff, end);
		goto out;
	}
	if (l->nrec != l->count) {
		lerr(l, "trailer says %" PRIu64 " records but the body holds %" PRIu64
			" (count at byte offset %" PRIu64 ")",
		     l->count, l->nrec, end + 8);
		goto out;
	}
	rc = 0;
out:
	XXH3_freeState(xxh);
	buf_free(&rb);
	return rc;
}

/* Verify the file at path once (pass 1: header, trailer, XXH3 over header
 * + body, zstd frame, record framing and count; hk->census sees each record
 * as it is decoded), check that the header's LSN is expect_lsn unless that
 * is UINT64_MAX, call hk->verified, then (if hk->fn) hand every record to
 * hk->fn in pass 2, which repeats every check, so a file changed underneath
 * us still ends in -1.  Returns 0; -1 on a bad or unreadable file (err
 * names the file and a byte offset); or the non-zero return of
 * hk->verified or hk->fn.  *chosen is set to 1 once pass 1 succeeded (the
 * file is good; a later failure is not the file's fault alone), else 0.
 * `info`, if non-NULL, is zeroed, and filled on
 * success.  Memory use is bounded by SNAP_MAX_RECORD plus fixed buffers,
 * whatever the file says. */
static int load_file(const char *path, uint64_t expect_lsn, const struct snap_load_hooks *hk,
		     struct snap_info *info, char *err, size_t errlen, int *chosen)
{
	struct loader l = { .path = path, .fd = -1, .err = err, .errlen = errlen, .fn = NULL,
			    .ctx = hk->ctx, .census = hk->census, .hint = hk->hint };
	*chosen = 0;
	if (info)
		memset(info, 0, sizeof(*info));
	buf_init(&l.dec, (size_t)SNAP_MAX_RECORD + 4 + 2 * ZSTD_DStreamOutSize());
	int rc = -1;

	l.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (l.fd < 0) {
		lerr(&l, "cannot open: %s", strerror(errno));
		goto out;
	}
	struct stat st;
	if (fstat(l.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		lerr(&l, "not a regular file");
		goto out;
	}
	l.size = (uint64_t)st.st_size;
	if (l.size < SNAP_HDR_SIZE + SNAP_TRL_SIZE) {
		lerr(&l, "truncated: %" PRIu64 " bytes, a snapshot has at least %u (end at byte offset %" PRIu64 ")",
		     l.size, SNAP_HDR_SIZE + SNAP_TRL_SIZE, l.size);
		goto out;
	}

	uint8_t h[SNAP_HDR_SIZE], t[SNAP_TRL_SIZE];
	if (pread_all(l.fd, h, sizeof(h), 0)) {
		lerr(&l, "cannot read header at byte offset 0: %s", errno ? strerror(errno) : "short file");
		goto out;
	}
	if (memcmp(h, SNAP_MAGIC, 8) != 0) {
		lerr(&l, "bad header magic at byte offset 0 (not a snapshot)");
		goto out;
	}
	if (rd_u64(h + SNAP_HDR_HASHED) != XXH3_64bits(h, SNAP_HDR_HASHED)) {
		lerr(&l, "header checksum mismatch (checksum at byte offset %u)", SNAP_HDR_HASHED);
		goto out;
	}
	if (rd_u32(h + 8) != SNAP_VERSION) {
		lerr(&l, "unsupported format version %" PRIu32 " at byte offset 8", rd_u32(h + 8));
		goto out;
	}
	if (expect_lsn != UINT64_MAX && rd_u64(h + 24) != expect_lsn) {
		lerr(&l, "header LSN %" PRIu64 " (at byte offset 24) does not match the name", rd_u64(h + 24));
		goto out;
	}
	uint64_t toff = l.size - SNAP_TRL_SIZE;
	if (pread_all(l.fd, t, sizeof(t), toff)) {
		lerr(&l, "cannot read trailer at byte offset %" PRIu64 ": %s", toff,
		     errno ? strerror(errno) : "short file");
		goto out;
	}
	if (memcmp(t, SNAP_TRL_MAGIC, 8) != 0) {
		lerr(&l, "no trailer magic at byte offset %" PRIu64 " (file truncated or never finished)", toff);
		goto out;
	}
	l.count = rd_u64(t + 8);
	l.body_len = rd_u64(t + 16);
	l.hash = rd_u64(t + 24);
	if (l.body_len != l.size - SNAP_HDR_SIZE - SNAP_TRL_SIZE) {
		lerr(&l, "trailer body length %" PRIu64 " (at byte offset %" PRIu64 ") does not match the file: "
			 "%" PRIu64 " bytes between header and trailer",
		     l.body_len, toff + 16, l.size - SNAP_HDR_SIZE - SNAP_TRL_SIZE);
		goto out;
	}

	l.dctx = ZSTD_createDCtx();
	if (!l.dctx || ZSTD_isError(ZSTD_DCtx_setParameter(l.dctx, ZSTD_d_windowLogMax, SNAP_WINDOW_LOG_MAX))) {
		lerr(&l, "cannot set up zstd");
		goto out;
	}
	/* Pass 1: full verification, no record leaves this function (the
	 * census only counts, and its counts are used only after this pass). */
	if (hk->begin)
		hk->begin(hk->ctx);
	rc = scan_body(&l, h);
	assert(rc != 1);
	if (rc != 0)
		goto out;
	*chosen = 1;
	struct snap_info si;
	memset(&si, 0, sizeof(si));
	snprintf(si.path, sizeof(si.path), "%s", path);
	si.lsn = rd_u64(h + 24);
	si.created_unix_ms = rd_u64(h + 32);
	si.records = l.count;
	si.file_bytes = l.size;
	if (hk->verified && (rc = hk->verified(hk->ctx, &si)) != 0)
		goto out;
	/* Pass 2: the file verified; hand records out.  The same checks run
	 * again, so a file changed underneath us still ends in -1. */
	if (hk->fn) {
		l.fn = hk->fn;
		rc = scan_body(&l, h);
		if (rc == 1) {
			rc = l.fn_rc;
			assert(rc != 0);
			goto out;
		}
		if (rc != 0)
			goto out;
	}
	if (info)
		*info = si;
	rc = 0;
out:
	ZSTD_freeDCtx(l.dctx);
	buf_free(&l.dec);
	if (l.fd >= 0)
		close(l.fd);
	return rc;
}

/* Contract (snapshot.h): verify the whole file, then (if fn) hand out every
 * record in order.  Returns 0; -1 on a bad or unreadable file (err names the
 * file and a byte offset); or fn's non-zero return.  `info`, if non-NULL, is
 * zeroed and filled on success.  Records handed to fn are valid only during
 * the call.  Memory use is bounded by SNAP_MAX_RECORD plus fixed buffers,
 * whatever the file says. */
int snap_load(const char *path, snap_record_fn fn, void *ctx, struct snap_info *info, char *err,
	      size_t errlen)
{
	struct snap_load_hooks hk = { .fn = fn, .ctx = ctx };
	int chosen;
	return load_file(path, UINT64_MAX, &hk, info, err, errlen, &chosen);
}

/* Contract (snapshot.h): snap_load with every hook of hk. */
int snap_load_hooked(const char *path, const struct snap_load_hooks *hk, struct snap_info *info, char *err,
		     size_t errlen)
{
	int chosen;
	return load_file(path, UINT64_MAX, hk, info, err, errlen, &chosen);
}

/* ---- directory scanning: latest and prune ------------------------------- */

struct lsn_list {
	uint64_t *v;
	size_t n, cap;
};

static int lsn_push(struct lsn_list *a, uint64_t lsn)
{
	if (a->n == a->cap) {
		size_t ncap = a->cap ? a->cap * 2 : 16;
		uint64_t *p = realloc(a->v, ncap * sizeof(*p));
		if (!p)
			return -1;
		a->v = p;
		a->cap = ncap;
	}
	a->v[a->n++] = lsn;
	return 0;
}

static int cmp_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* List the LSNs of <dir>/<lsn>.snap (and, if tmp is non-NULL, of
 * <lsn>.snap.inprogress into tmp), final ones sorted newest first.
 * 0, or -1 (errno; ENOENT means the directory does not exist). */
static int list_dir(const char *dir, struct lsn_list *snaps, struct lsn_list *tmp)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d)) != NULL) {
		uint64_t lsn;
		if (parse_name(e->d_name, SNAP_SUFFIX, &lsn)) {
			if (lsn_push(snaps, lsn))
				rc = -1;
		} else if (tmp && parse_name(e->d_name, SNAP_TMP_SUFFIX, &lsn)) {
			if (lsn_push(tmp, lsn))
				rc = -1;
		}
	}
	closedir(d);
	if (rc == 0 && snaps->n > 1)
		qsort(snaps->v, snaps->n, sizeof(uint64_t), cmp_desc);
	if (rc != 0)
		errno = ENOMEM;
	return rc;
}

/* list_dir for the readers: 1 with the snapshots newest first in s (the
 * caller frees s->v); 0 when the directory does not exist (no snapshot);
 * -1 with "cannot list DIR: why" in err. */
static int list_snapshots(const char *dir, struct lsn_list *s, char *err, size_t errlen)
{
	if (list_dir(dir, s, NULL) == 0)
		return 1;
	int e = errno;
	free(s->v);
	s->v = NULL;
	if (e == ENOENT)
		return 0;
	snprintf(err, errlen, "cannot list %s: %s", dir, strerror(e));
	return -1;
}

/* <dir>/<lsn>.snap into path (PATH_MAX bytes).  0, or -1 with a line on
 * stderr when the name would not fit struct snap_info's path. */
static int snap_name(char *path, const char *dir, uint64_t lsn)
{
	int n = snprintf(path, PATH_MAX, "%s/%020" PRIu64 SNAP_SUFFIX, dir, lsn);
	if (n < 0 || (size_t)n >= sizeof(((struct snap_info *)0)->path)) {
		fprintf(stderr, "snapshot: skipping %s/%020" PRIu64 SNAP_SUFFIX ": path too long\n", dir, lsn);
		return -1;
	}
	return 0;
}

/* Full verification of <dir>/<lsn>.snap, also checking that the header's
 * LSN matches the name.  1 valid (info filled), 0 invalid (line on stderr). */
static int check_snap(const char *dir, uint64_t lsn, struct snap_info *info)
{
	char path[PATH_MAX], err[512];
	if (snap_name(path, dir, lsn))
		return 0;
	struct snap_load_hooks hk = { 0 };
	int chosen;
	if (load_file(path, lsn, &hk, info, err, sizeof(err), &chosen) != 0) {
		fprintf(stderr, "snapshot: skipping invalid %s\n", err);
		return 0;
	}
	return 1;
}

/* Contract (snapshot.h): newest fully-verified snapshot in dir.  1 found
 * (info filled if non-NULL), 0 none (also when dir does not exist), -1 on
 * an error reading the directory.  Invalid newer files are skipped with a
 * line on stderr; *.inprogress files are never considered. */
int snap_find_latest(const char *dir, struct snap_info *info)
{
	struct lsn_list s = { 0 };
	char lerr[600];
	int listed = list_snapshots(dir, &s, lerr, sizeof(lerr));
	if (listed <= 0) {
		if (listed < 0)
			fprintf(stderr, "snapshot: %s\n", lerr);
		return listed;
	}
	int found = 0;
	for (size_t i = 0; i < s.n && !found; i++)
		found = check_snap(dir, s.v[i], info);
	free(s.v);
	return found;
}

/* Contract (snapshot.h): walk the snapshots newest first; each is verified
 * by load_file's first pass, and the first that verifies is loaded (its
 * second pass hands the records out): one verifying pass, not a separate
 * find.  A file that fails that first pass is skipped with a line on
 * stderr, as snap_find_latest does (no hook but begin and census has seen
 * it); the first that passes is the one: a later failure (the file changed
 * underneath us, a hook refused) ends the walk with -1 and err, and the
 * caller's state may then be partly loaded. */
int snap_load_latest(const char *dir, const struct snap_load_hooks *hk, struct snap_info *info, char *err,
		     size_t errlen)
{
	if (info)
		memset(info, 0, sizeof(*info));
	if (err && errlen)
		err[0] = 0;
	struct lsn_list s = { 0 };
	char lerr[600];
	int listed = list_snapshots(dir, &s, lerr, sizeof(lerr));
	if (listed <= 0) {
		if (listed < 0 && err && errlen)
			snprintf(err, errlen, "%s", lerr);
		return listed;
	}
	int rc = 0;
	for (size_t i = 0; i < s.n; i++) {
		char path[PATH_MAX], ferr[512];
		if (snap_name(path, dir, s.v[i]))
			continue;
		int chosen;
		int r = load_file(path, s.v[i], hk, info, ferr, sizeof(ferr), &chosen);
		if (r == 0) {
			rc = 1;
			break;
		}
		if (!chosen) {
			fprintf(stderr, "snapshot: skipping invalid %s\n", ferr);
			continue;
		}
		if (err && errlen)
			snprintf(err, errlen, "%s", r == -1 ? ferr : "a record or the load hook was refused");
		rc = -1;
		break;
	}
	free(s.v);
	return rc;
}

/* Remove <dir>/<lsn><suffix> if no live writer holds its lock.  1 removed. */
static int remove_stale_tmp(const char *dir, uint64_t lsn)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s/%020" PRIu64 SNAP_TMP_SUFFIX, dir, lsn);
	if (n < 0 || (size_t)n >= sizeof(path))
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	int removed = 0;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) /* no writer alive: stale */
		removed = unlink(path) == 0;
	close(fd);
	return removed;
}

/* Contract (snapshot.h). */
int snap_remove_temps(const char *dir, void (*fn)(void *ctx, const char *path), void *ctx)
{
	struct lsn_list s = { 0 }, t = { 0 };
	if (list_dir(dir, &s, &t) != 0) {
		int e = errno;
		free(s.v);
		free(t.v);
		errno = e;
		return e == ENOENT ? 0 : -1;
	}
	int removed = 0;
	for (size_t i = 0; i < t.n; i++) {
		char path[PATH_MAX];
		int n = snprintf(path, sizeof(path), "%s/%020" PRIu64 SNAP_TMP_SUFFIX, dir, t.v[i]);
		if (n > 0 && (size_t)n < sizeof(path) && unlink(path) == 0) {
			removed++;
			if (fn)
				fn(ctx, path);
		}
	}
	if (removed && fs_fsync_dir(dir) != 0)
		fprintf(stderr, "snapshot: fsync of %s after removing temp files failed: %s\n", dir, strerror(errno));
	free(s.v);
	free(t.v);
	return removed;
}

/* Contract (snapshot.h): walking newest first, keep the first `keep`
 * snapshots that fully verify and delete every snapshot older than the
 * oldest kept one (valid or not).  Invalid snapshots newer than that are
 * left for the operator (find_latest skips them).  If fewer than `keep`
 * valid ones exist, no snapshot is deleted.  Stale *.inprogress files (no
 * live writer holds their lock) are deleted; those of a writer in progress
 * are not.  Returns the LSN of the oldest snapshot kept, 0 if none.
 * Deviation guard: keep == 0 is treated as 1 -- deleting every snapshot
 * would strand a WAL already pruned against them. */
uint64_t snap_prune(const char *dir, unsigned keep)
{
	if (keep == 0)
		keep = 1;
	struct lsn_list s = { 0 }, t = { 0 };
	if (list_dir(dir, &s, &t) != 0) {
		if (errno != ENOENT)
			fprintf(stderr, "snapshot: cannot list %s: %s\n", dir, strerror(errno));
		free(s.v);
		free(t.v);
		return 0;
	}
	int changed = 0;
	for (size_t i = 0; i < t.n; i++)
		changed |= remove_stale_tmp(dir, t.v[i]);

	unsigned kept = 0;
	uint64_t oldest = 0;
	size_t i = 0;
	for (; i < s.n && kept < keep; i++) {
		if (check_snap(dir, s.v[i], NULL)) {
			kept++;
			oldest = s.v[i];
		}
	}
	if (kept == keep) {
		for (; i < s.n; i++) {
			char path[PATH_MAX];
			int n = snprintf(path, sizeof(path), "%s/%020" PRIu64 SNAP_SUFFIX, dir, s.v[i]);
			assert(s.v[i] < oldest);
			if (n > 0 && (size_t)n < sizeof(path) && unlink(path) == 0)
				changed = 1;
		}
	}
	if (changed && fs_fsync_dir(dir) != 0)
		fprintf(stderr, "snapshot: fsync of %s after pruning failed: %s\n", dir, strerror(errno));
	free(s.v);
	free(t.v);
	return oldest;
}
