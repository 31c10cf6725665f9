/*
 * wal.c -- the WAL writer: one background thread, group commit, segments.
 *
 * Why a thread: DESIGN.md section 3 forbids blocking work on the event-loop
 * thread, and fdatasync costs ~100 us here.  The loop calls wal_append(),
 * which only memcpy's the transaction into the "open" batch under a mutex
 * and signals a condition variable.  The WAL thread swaps the open batch
 * with its own (so the loop never waits for I/O), cuts it into frames of at
 * most max_batch_bytes raw bytes, compresses each with one reused zstd
 * context, writes each frame with pwrite(2) into the current segment,
 * issues ONE fdatasync for the whole batch (mode fsync), and only then
 * publishes the batch's last LSN as durable (atomic store, release) and
 * bumps the eventfd so the loop can release the responses waiting on it.
 * While the thread is inside fdatasync new transactions pile up in the
 * other buffer: that is the group commit -- batch size adapts to the sync
 * latency by itself.  One refinement (mode fsync): when work was already
 * waiting as a sync finished, the writers are busy, and a sync costs about
 * as long as the loop takes to make one more transaction (an order: ~150 us
 * of loop time, an fdatasync ~170 us and ~45 us of CPU here), so batches
 * stayed at 1-2 transactions.  Then the thread lets the batch fill while
 * transactions keep coming (each within WAL_GROUP_GAP_US of the last), for
 * up to WAL_GROUP_WAIT_US in all or until WAL_GROUP_TXNS are queued,
 * before writing: fewer fsyncs per transaction under load (an fdatasync
 * here costs ~50 us of kernel CPU however few transactions it covers),
 * at most one gap of wait for a few writers whose stream has stopped, and
 * no wait at all for a lone writer (nothing is waiting when its sync
 * ends).  Measured (perf/bench.sh, orders at -c64): 200 us / 16
 * transactions gave 4.8 transactions per fsync, 1000 us / 64 gave 17,
 * with a lower p50 and p99 and fewer WAL bytes (bigger zstd frames).  Back-pressure
 * only starts when more than WAL_QUEUE_MAX_BYTES are queued.
 *
 * The queued batch is kept directly in the frame's raw format (u64 lsn,
 * u32 len, payload), so cutting frames needs no second copy.
 *
 * Segments (c-toolchain.md: syncs on a pre-zeroed file are ~40% cheaper
 * than on an appended one, because no metadata has to be committed): a new
 * segment is created as <name>.inprogress with O_EXCL, gets its header and
 * is filled with zeros to segment_size, fsync'd, renamed to its final name
 * and the directory is fsync'd -- so a segment that has a final name always
 * has a valid header and zeros behind its frames.  Rotation happens when the
 * next frame would not fit; the old segment is fdatasync'd first (also in
 * mode write), so only the newest segment can ever hold an unsynced tail --
 * recovery relies on that.  A frame bigger than a whole segment gets a
 * segment of its own sized to fit.  wal_open() always starts a new segment
 * at next_lsn, so a tail that recovery cut is never appended to.
 *
 * Segment dictionaries.  An order is one transaction of ~14 KB, and alone
 * in its frame (a lone writer, or mode write) zstd found little to reuse in
 * it: ~4.5x smaller at ~15 instructions per byte, most of the WAL thread's
 * CPU.  Consecutive transactions are much alike (the same members, ids,
 * event types), so the thread keeps the last dict_bytes raw bytes it wrote
 * and, once the current segment holds a frame, writes them as a dictionary
 * frame (wal_format.h: F_DICT, no transactions); the segment's later frames
 * are compressed against it (F_USES_DICT, naming its id) until the next
 * one.  The first comes as soon as dict_bytes were written, the next
 * after WAL_DICT_FIRST_REFRESH x dict_bytes more, then twice as far apart
 * each time up to dict_refresh: what comes first (reference data,
 * partners, offers) is soon replaced by what the log holds since.
 * Measured (orders in mode write, 1-2 per frame): 3.2 KB -> ~0.5 KB of log
 * per order (4.5x -> ~27x smaller), WAL thread 208k -> 151k instructions
 * per order (perf/ir_per_request.sh); /metrics: wm_wal_dict_frames_total,
 * and wm_wal_bytes_raw_total beside wm_wal_bytes_written_total.
 * Each segment stays readable on its own: a reader meets the dictionary
 * frame before any frame that needs it (wal_recover.c).  Never
 * the first frame of a segment: a crash right after it would leave a
 * segment with no transaction, which wal_open takes for one holding data.
 * The dictionary frame is counted in the batch's worst case (space
 * accounting below) and written only where the rest of the batch still
 * fits behind it.
 *
 * Failures: a failed write is zeroed back to the last good offset (or the
 * file truncated there), logged, and the process exits; an fdatasync
 * failure is logged and the process exits.  fsync is never retried: after a
 * failed fsync the kernel may have dropped the dirty pages, and only a
 * restart with recovery from what is really on disk is safe.
 *
 * Running out of space.  Writing frames into a pre-zeroed segment never
 * allocates, so the only places a full disk shows up are the spare (the
 * preparer) and an inline segment creation.  A full disk must not stop the
 * service (reads go on) and must not lose or fake an acknowledgement, so:
 *   - the preparer never gives up: a failed spare is removed (its partial
 *     zeros would hold space) and retried every WAL_SPARE_RETRY_MS, so
 *     writes resume by themselves when space returns;
 *   - while no spare is ready after a failure ("space low"), wal_append
 *     and wal_reserve admit a transaction only if the current segment is
 *     certain to hold it together with everything queued and reserved
 *     before it, each counted at its worst-case frame size
 *     (wal_txn_worst: a frame of its own, zstd's compress bound).  Anything
 *     else is refused with WAL_E_NOSPACE BEFORE the engine applies it, so a
 *     refused write never existed.  The spare is the reserve that makes
 *     this refusal point predictable: the WAL only ever needs a rotation
 *     it cannot do when a spare was announced and then vanished;
 *   - should a rotation still find no spare and no room (the disk filled
 *     while the preparer was between attempts, or an oversized frame), the
 *     WAL thread does not exit: it logs once and retries every
 *     WAL_SPARE_RETRY_MS.  The transactions in that batch are not durable,
 *     so nobody has been told about them; they become durable when space
 *     returns.
 * An fdatasync failure stays fatal (see below); so do EIO and friends on
 * write.
 *
 * Locking: `mu` protects the open batch, appended LSN, stop flag and the
 * stats.  Everything under "WAL thread only" is touched by the WAL thread
 * alone after wal_open() returns.
 */
#include "wal/wal.h"
#include "wal/fsutil.h"

#include <assert.h>
#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "wal/errinj.h"
#include "wal/wal_format.h"

#define WAL_DEFAULT_SEGMENT_SIZE ((uint64_t)64 << 20)
#define WAL_MIN_SEGMENT_SIZE     ((uint64_t)64 << 10)
#define WAL_DEFAULT_BATCH_BYTES  (1u << 20)
#define WAL_MIN_BATCH_BYTES      64u                /* room for a tiny txn */
/* zstd's first "fast" level.  With segment dictionaries (below), orders
 * log ~15 % more bytes than at level 1 for ~14 % fewer instructions on the
 * WAL thread (perf/ir_per_request.sh: ~141k -> ~121k per order; perf/
 * bench.sh k at -c16: 315-326 -> 370 WAL bytes per order, -c1 565-595 ->
 * 679-697).  Level -3 logged 423 bytes at -c16 for no further gain. */
#define WAL_DEFAULT_ZSTD_LEVEL   -1
#define WAL_QUEUE_MAX_BYTES      ((size_t)64 << 20) /* back-pressure beyond this */
#define WAL_GROUP_WAIT_US        1000u /* busy writers: wait this long at most for a fuller batch */
#define WAL_GROUP_GAP_US         200u  /* ... but stop once no transaction came for this long */
#define WAL_GROUP_TXNS           64u   /* ... or once this many transactions are queued */
#define WAL_ZERO_CHUNK           (64u << 10)        /* preallocation write size */
#define WAL_DEFAULT_DICT_BYTES   (32u << 10)        /* segment dictionary: the last this many raw bytes */
#define WAL_DEFAULT_DICT_REFRESH ((uint64_t)8 << 20) /* ... renewed after at most this many raw bytes */
#define WAL_DICT_FIRST_REFRESH   8u /* ... the second after this many dict_bytes more, then twice as many each time */
#define WAL_MIN_DICT_BYTES       256u

const uint32_t wal_lat_bounds_us[WAL_LAT_BUCKETS] = {
	50, 100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 51200, 102400,
};

static const uint8_t zero_chunk[WAL_ZERO_CHUNK];

struct wal {
	/* immutable after wal_open */
	char *dir;
	enum wal_mode mode;
	uint64_t segment_size;
	uint32_t max_batch_bytes;
	int level;
	int efd;
	uint32_t dict_bytes;  /* 0: no segment dictionaries */
	uint64_t dict_refresh; /* the longest interval between two dictionaries */

	pthread_mutex_t mu;
	pthread_cond_t work;  /* WAL thread: open batch non-empty, or stop */
	pthread_cond_t done;  /* flushers / back-pressured appenders: a batch finished */
	struct buf open;      /* under mu: queued txns in raw frame format */
	size_t inflight;      /* under mu: bytes the WAL thread is writing now */
	uint64_t appended;    /* under mu: last LSN accepted by wal_append */
	int stop;             /* under mu */
	int grouping;         /* under mu: the WAL thread is in group_wait */
	int have_thread;
	struct wal_stats st;  /* under mu; durable/appended filled in by wal_stats */
	_Atomic uint64_t durable;

	/* WAL thread only (and wal_open before the thread starts) */
	pthread_t thr;
	struct buf mine;      /* the batch being written */
	struct buf frame;     /* one encoded frame */
	ZSTD_CCtx *cctx;
	struct buf hist;      /* the last dict_bytes raw bytes written (while a dictionary is due) */
	ZSTD_CDict *cdict;    /* the current segment's dictionary; NULL: none (yet) */
	uint32_t dict_id;
	uint64_t raw_since_dict; /* raw bytes written since cdict was made */
	uint64_t dict_every;  /* raw bytes between dictionaries now: doubles up to dict_refresh */
	int seg_fd;
	int seg_dirty;        /* written since the last fdatasync */
	uint64_t seg_off;     /* end of the last good frame */
	uint64_t seg_cap;     /* preallocated size */
	uint64_t salt;

	/* the spare-segment preparer (see spare_thread) */
	pthread_t prep_thr;
	int have_prep;
	pthread_cond_t prep_cv; /* preparer: the spare was taken, or stop */
	int spare_ready;      /* under mu: <dir>/next-segment.spare is zeroed, synced, segment_size long */
	int prep_failed;      /* under mu: the last attempt failed; retried every WAL_SPARE_RETRY_MS */
	_Atomic int space_low; /* mirror of (no spare && prep_failed), written under mu, read
				  without it by wal_space's fast path */
	int prep_stop;        /* under mu */
	char *spare_path;

	/* space accounting (see "Running out of space" above), all under mu */
	uint64_t seg_room;    /* bytes free in the current segment after the last written batch */
	uint64_t open_worst;  /* worst-case frame bytes of the transactions in `open` */
	uint64_t inflight_worst; /* the same for the batch the WAL thread is writing */
	uint64_t reserved;    /* wal_reserve()d and not yet appended */
	uint64_t nospace_refusals; /* wal_reserve/wal_append refused for space */
};

/* Per-batch figures, merged into w->st under the lock. */
struct batch_stats {
	uint64_t frames, txns, bytes_raw, bytes_written, syncs, sync_us, segments, segments_spare, dict_frames;
	uint64_t lat[WAL_LAT_BUCKETS + 1];
};

static void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* printf into err[0..errlen) when the caller gave a buffer. */
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Fatal I/O condition in the WAL thread: log and leave (never retry fsync). */
static _Noreturn void die(const char *what, int err)
{
	fprintf(stderr, "wal: FATAL: %s: %s -- exiting, recovery will start from what is on disk\n",
		what, strerror(err));
	exit(EXIT_FAILURE);
}

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}


/* mkdir -p.  0 or -1 (errno). */
static int mkdir_p(const char *dir)
{
	char tmp[PATH_MAX];
	size_t n = strlen(dir);
	if (n == 0 || n >= sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(tmp, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (tmp[i] != '/' && tmp[i] != 0)
			continue;
		char c = tmp[i];
		tmp[i] = 0;
		if (mkdir(tmp, 0755) && errno != EEXIST)
			return -1;
		tmp[i] = c;
	}
	struct stat sb;
	if (stat(dir, &sb))
		return -1;
	if (!S_ISDIR(sb.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

/* A random salt, never 0 (an all-zero header must never match). */
static uint64_t new_salt(void)
{
	uint64_t s = 0;
	while (s == 0) {
		ssize_t r = getrandom(&s, sizeof(s), 0);
		if (r != (ssize_t)sizeof(s))
			s = (uint64_t)now_us() * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
	}
	return s;
}

/* Write all n bytes at off; 0 or -1 (errno), *done = bytes written. */
static int pwrite_all(int fd, const void *p, size_t n, uint64_t off, size_t *done)
{
	size_t d = 0;
	while (d < n) {
		ssize_t r = pwrite(fd, (const uint8_t *)p + d, n - d, (off_t)(off + d));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				errno = EIO;
			if (done)
				*done = d;
			return -1;
		}
		d += (size_t)r;
	}
	if (done)
		*done = d;
	return 0;
}

/*
 * 1 if the existing segment file `path` holds no frame (only a header and
 * zeros, or nothing after the header): wal_open may then replace it.
 * 0 if it holds data or cannot be judged.
 */
static int segment_is_empty(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	uint8_t b[WAL_SEG_HEADER_SIZE + WAL_FRAME_HEADER_SIZE];
	ssize_t r = pread(fd, b, sizeof(b), 0);
	close(fd);
	if (r < (ssize_t)WAL_SEG_HEADER_SIZE)
		return r == 0; /* an empty file holds nothing */
	for (ssize_t i = WAL_SEG_HEADER_SIZE; i < r; i++)
		if (b[i])
			return 0;
	return 1;
}

/*
 * Check the directory before starting a segment at next_lsn: no segment may
 * start after next_lsn, and one starting exactly there must be empty (left
 * by a wal_open that crashed before its first write); it is then replaced.
 * 0 or -1 with err.
 */
static int check_existing(const char *dir, uint64_t next_lsn, char *err, size_t errlen)
{
	DIR *d = opendir(dir);
	if (!d) {
		set_err(err, errlen, "wal: cannot read %s: %s", dir, strerror(errno));
		return -1;
	}
	int rc = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		uint64_t lsn;
		if (!wal_seg_name_parse(de->d_name, &lsn) || lsn < next_lsn)
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lsn > next_lsn || !segment_is_empty(path)) {
			set_err(err, errlen,
				"wal: segment %s already holds LSNs at or after next_lsn %" PRIu64
				" (run recovery first, or pass the right next_lsn)",
				path, next_lsn);
			rc = -1;
			break;
		}
	}
	closedir(d);
	return rc;
}

/*
 * Create, preallocate, sync and publish a new segment starting at first_lsn
 * with at least `size` bytes, and make it current (the old one is closed).
 * The caller has synced the old segment.  Replacing an existing empty
 * segment of the same name is atomic (rename over it).  0 or -1 with err.
 */
static int seg_create(struct wal *w, uint64_t first_lsn, uint64_t size, char *err, size_t errlen)
{
	char fin[PATH_MAX], tmp[PATH_MAX];
	int n1 = snprintf(fin, sizeof(fin), "%s/%020" PRIu64 WAL_SEG_SUFFIX, w->dir, first_lsn);
	int n2 = snprintf(tmp, sizeof(tmp), "%s" WAL_SEG_TMP_SUFFIX, fin);
	if (n1 < 0 || n2 < 0 || (size_t)n2 >= sizeof(tmp)) {
		set_err(err, errlen, "wal: path too long under %s", w->dir);
		return -1;
	}
	assert(size >= WAL_SEG_HEADER_SIZE);
	int fd = open(tmp, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0644);
	if (fd < 0 && errno == EEXIST) {
		/* A stale temp file from a crash during creation: never published, drop it. */
		unlink(tmp);
		fd = open(tmp, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0644);
	}
	if (fd < 0) {
		set_err(err, errlen, "wal: create %s: %s", tmp, strerror(errno));
		return -1;
	}
	uint64_t salt = new_salt();
	uint8_t hdr[WAL_SEG_HEADER_SIZE];
	wal_seg_header_encode(hdr, salt, first_lsn);
	const char *step = "write header";
	if (pwrite_all(fd, hdr, sizeof(hdr), 0, NULL))
		goto fail;
	step = "preallocate";
	for (uint64_t off = WAL_SEG_HEADER_SIZE; off < size;) {
		size_t n = size - off < WAL_ZERO_CHUNK ? (size_t)(size - off) : WAL_ZERO_CHUNK;
		if (pwrite_all(fd, zero_chunk, n, off, NULL))
			goto fail;
		off += n;
	}
	step = "fsync";
	if (fsync(fd))
		goto fail;
	step = "rename";
	if (rename(tmp, fin))
		goto fail;
	if (fs_fsync_dir(w->dir)) {
		/* The segment is published but maybe not durably: same class of
		 * failure as a failed fsync. */
		set_err(err, errlen, "wal: fsync directory %s: %s", w->dir, strerror(errno));
		close(fd);
		return -1;
	}
	if (w->seg_fd >= 0)
		close(w->seg_fd);
	w->seg_fd = fd;
	w->seg_dirty = 0;
	w->seg_off = WAL_SEG_HEADER_SIZE;
	w->seg_cap = size;
	w->salt = salt;
	return 0;
fail:;
	int e = errno;
	set_err(err, errlen, "wal: %s %s: %s", step, tmp, strerror(e));
	close(fd);
	unlink(tmp);
	errno = e; /* the caller tells a full disk from the rest */
	return -1;
}

/*
 * The spare segment.  Creating a segment means writing segment_size bytes
 * of zeros and syncing them (so that later appends are overwrites of
 * allocated blocks and fdatasync has no metadata to flush): ~64 MiB of I/O
 * that, done at rotation, stalled every commit queued behind it (the p99
 * of every write).  A preparer thread does it ahead of time into
 * <dir>/next-segment.spare -- a name recovery, pruning and inspection ignore
 * -- and rotation only stamps the header (salt, first LSN), syncs it and
 * renames the file into place.  No spare ready (first rotation after
 * start, preparer behind, or failed) -> the inline path, as before.
 */
#define WAL_SPARE_NAME "next-segment.spare"
#define WAL_SPARE_SYNC_STEP ((uint64_t)1 << 20) /* bytes of zeros written back at a time */
#define WAL_SPARE_RETRY_MS 500u /* a failed spare (disk full) is tried again this often */

/* Make the spare file: zeros, segment_size bytes, synced.  0, or -1 with
 * errno and the partial file removed (its blocks are what a full disk
 * needs back). */
static int spare_make(struct wal *w)
{
	if (ERRINJ("wal_spare_enospc")) {
		unlink(w->spare_path);
		errno = ENOSPC;
		return -1;
	}
	/* Retried every WAL_SPARE_RETRY_MS on a full disk: do not write (and
	 * throw away) a partial segment each time when the file system says
	 * it cannot hold a whole one.  An old spare's own blocks count. */
	struct statvfs vs;
	struct stat old;
	uint64_t mine = stat(w->spare_path, &old) == 0 ? (uint64_t)old.st_blocks * 512u : 0;
	if (statvfs(w->dir, &vs) == 0 && vs.f_blocks > 0 &&
	    (uint64_t)vs.f_bavail * vs.f_frsize + mine < w->segment_size) {
		errno = ENOSPC;
		return -1;
	}
	int fd = open(w->spare_path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	int rc = 0;
	for (uint64_t off = 0; off < w->segment_size && rc == 0;) {
		size_t n = w->segment_size - off < WAL_ZERO_CHUNK ? (size_t)(w->segment_size - off) : WAL_ZERO_CHUNK;
		rc = pwrite_all(fd, zero_chunk, n, off, NULL);
		off += n;
		/* write back in small steps: one 64 MiB flush would queue ahead of
		 * the WAL's own fdatasync on the same disk for its whole duration */
		if (rc == 0 && off % WAL_SPARE_SYNC_STEP == 0)
			rc = fdatasync(fd);
	}
	if (rc == 0)
		rc = fsync(fd);
	int e = errno;
	close(fd);
	if (rc) {
		unlink(w->spare_path);
		errno = e;
		return -1;
	}
	return 0;
}

/* Wait on cv for up to ms (mu held). */
static void cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, unsigned ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(cv, mu, &ts);
}

/* The preparer: keep one spare ready; after a failure, retry every
 * WAL_SPARE_RETRY_MS (one log line when it starts failing, one when it
 * recovers); stop when told. */
static void *spare_thread(void *arg)
{
	struct wal *w = arg;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->prep_stop && w->spare_ready)
			pthread_cond_wait(&w->prep_cv, &w->mu);
		if (w->prep_stop)
			break;
		if (w->prep_failed) {
			cond_wait_ms(&w->prep_cv, &w->mu, WAL_SPARE_RETRY_MS);
			if (w->prep_stop)
				break;
		}
		pthread_mutex_unlock(&w->mu);
		int ok = spare_make(w) == 0;
		int e = errno;
		pthread_mutex_lock(&w->mu);
		if (ok) {
			w->spare_ready = 1;
			atomic_store_explicit(&w->space_low, 0, memory_order_relaxed);
			if (w->prep_failed)
				fprintf(stderr, "wal: spare segment %s ready again: writes are accepted\n", w->spare_path);
			w->prep_failed = 0;
		} else if (!w->prep_failed) {
			w->prep_failed = 1;
			atomic_store_explicit(&w->space_low, w->mode != WAL_MODE_NONE && !w->spare_ready,
					      memory_order_relaxed);
			fprintf(stderr,
				"wal: cannot prepare the spare segment %s: %s (writes that need a new segment are "
				"refused until it can be made; retrying every %u ms)\n",
				w->spare_path, strerror(e), WAL_SPARE_RETRY_MS);
		}
		pthread_cond_broadcast(&w->done); /* a rotation may be waiting for the spare */
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/*
 * Publish the spare as the segment starting at first_lsn: header, fdatasync,
 * rename, directory sync; it becomes current.  0; 1 when no spare is ready
 * or it could not be used before the rename (the caller creates one
 * inline); -1 with err when the rename happened but the directory could
 * not be synced (as fatal as a failed fsync).
 */
static int spare_take(struct wal *w, uint64_t first_lsn, char *err, size_t errlen)
{
	pthread_mutex_lock(&w->mu);
	int ready = w->spare_ready; /* also after the preparer stopped: the file stays valid */
	pthread_mutex_unlock(&w->mu);
	if (!ready)
		return 1;
	char fin[PATH_MAX];
	int n = snprintf(fin, sizeof(fin), "%s/%020" PRIu64 WAL_SEG_SUFFIX, w->dir, first_lsn);
	int fd = n < 0 || (size_t)n >= sizeof(fin) ? -1 : open(w->spare_path, O_RDWR | O_CLOEXEC);
	uint64_t salt = new_salt();
	uint8_t hdr[WAL_SEG_HEADER_SIZE];
	wal_seg_header_encode(hdr, salt, first_lsn);
	int rc = 1;
	if (fd >= 0 && !pwrite_all(fd, hdr, sizeof(hdr), 0, NULL) && !fdatasync(fd) && !rename(w->spare_path, fin)) {
		rc = 0;
		if (fs_fsync_dir(w->dir)) {
			set_err(err, errlen, "wal: fsync directory %s: %s", w->dir, strerror(errno));
			rc = -1;
		}
	}
	if (rc == 0) {
		if (w->seg_fd >= 0)
			close(w->seg_fd);
		w->seg_fd = fd;
		w->seg_dirty = 0;
		w->seg_off = WAL_SEG_HEADER_SIZE;
		w->seg_cap = w->segment_size;
		w->salt = salt;
	} else if (fd >= 0) {
		close(fd);
	}
	pthread_mutex_lock(&w->mu);
	w->spare_ready = 0; /* used, or unusable: the preparer makes a new one */
	atomic_store_explicit(&w->space_low, w->mode != WAL_MODE_NONE && w->prep_failed, memory_order_relaxed);
	pthread_cond_signal(&w->prep_cv);
	pthread_mutex_unlock(&w->mu);
	return rc;
}

/* fdatasync the current segment if it has unsynced writes; record latency. */
static void seg_sync(struct wal *w, struct batch_stats *bs)
{
	if (!w->seg_dirty || w->seg_fd < 0)
		return;
	uint64_t t0 = now_us();
	if (ERRINJ("wal_slow_sync")) {
		struct timespec slow = {.tv_sec = 0, .tv_nsec = 400 * 1000 * 1000};
		nanosleep(&slow, NULL);
	}
	if (fdatasync(w->seg_fd))
		die("fdatasync", errno);
	uint64_t us = now_us() - t0;
	w->seg_dirty = 0;
	bs->syncs++;
	bs->sync_us += us;
	size_t b = 0;
	while (b < WAL_LAT_BUCKETS && us > wal_lat_bounds_us[b])
		b++;
	bs->lat[b]++;
}

/*
 * A write at the segment's good end failed after `done` bytes: restore the
 * clean end (the file is pre-zeroed, so zeros; if even that fails, cut the
 * file there) so no partial frame is left behind for recovery to judge.
 */
static void cut_back(struct wal *w, size_t done)
{
	uint64_t off = w->seg_off, end = w->seg_off + done;
	while (off < end) {
		size_t n = end - off < WAL_ZERO_CHUNK ? (size_t)(end - off) : WAL_ZERO_CHUNK;
		if (pwrite_all(w->seg_fd, zero_chunk, n, off, NULL))
			break;
		off += n;
	}
	if (off < end && ftruncate(w->seg_fd, (off_t)w->seg_off))
		fprintf(stderr, "wal: cannot cut back to offset %" PRIu64 ": %s\n", w->seg_off,
			strerror(errno));
}

static int no_space(int e) { return e == ENOSPC || e == EDQUOT; }

/* Start a new segment for a frame of frame_len bytes starting at `first`:
 * sync the old one, create the new one (sized to fit if the frame is larger
 * than a whole segment).  Out of space: log once, retry every
 * WAL_SPARE_RETRY_MS (the spare or an inline segment, whichever comes
 * first) -- the batch is not durable meanwhile, so nothing was promised.
 * Exits the process on any other failure. */
static void rotate(struct wal *w, uint64_t first, size_t frame_len, struct batch_stats *bs)
{
	seg_sync(w, bs); /* only the newest segment may hold an unsynced tail */
	uint64_t size = w->segment_size;
	if ((uint64_t)frame_len + WAL_SEG_HEADER_SIZE > size)
		size = ((uint64_t)frame_len + WAL_SEG_HEADER_SIZE + 4095) & ~(uint64_t)4095;
	char err[PATH_MAX + 128];
	for (int logged = 0;;) {
		errno = 0;
		int rc = size == w->segment_size ? spare_take(w, first, err, sizeof(err)) : 1;
		if (rc == 0) {
			bs->segments++;
			bs->segments_spare++;
			if (logged)
				fprintf(stderr, "wal: space returned under %s: segment rotation done\n", w->dir);
			return;
		}
		if (rc > 0 && seg_create(w, first, size, err, sizeof(err)) == 0) {
			bs->segments++;
			if (logged)
				fprintf(stderr, "wal: space returned under %s: segment rotation done\n", w->dir);
			return;
		}
		int e = errno ? errno : EIO;
		if (rc < 0 || !no_space(e)) {
			fprintf(stderr, "%s\n", err);
			die("segment rotation", e);
		}
		if (!logged)
			fprintf(stderr, "%s -- waiting for space under %s (the batch is not acknowledged)\n", err,
				w->dir);
		logged = 1;
		pthread_mutex_lock(&w->mu);
		int stopping = w->stop;
		if (!w->spare_ready && !stopping)
			cond_wait_ms(&w->done, &w->mu, WAL_SPARE_RETRY_MS);
		pthread_mutex_unlock(&w->mu);
		if (stopping) /* shutdown while waiting: this batch was never acknowledged */
			die("segment rotation at shutdown (no space)", e);
	}
}

/*
 * Append the encoded frame in w->frame at the current segment's good end
 * (the caller made sure it fits).  Exits the process on any failure, after
 * cutting the partial write back to the last good offset.
 */
static void write_frame(struct wal *w)
{
	const uint8_t *p = (const uint8_t *)w->frame.data;
	size_t n = w->frame.len, done = 0;
	assert(n > WAL_FRAME_HEADER_SIZE);
	assert(w->seg_off + n <= w->seg_cap);
	if (pwrite_all(w->seg_fd, p, n, w->seg_off, &done)) {
		int e = errno;
		cut_back(w, done);
		die("write", e);
	}
	w->seg_off += n;
	w->seg_dirty = 1;
	if (ERRINJ("wal_crash_after_write"))
		_exit(137);
}

/* ---- segment dictionaries (see the top of the file) -------------------- */

/* The worst case of the frames of raw[0..len) (whole transactions), each
 * counted as a frame of its own, as the space accounting counts them. */
static uint64_t raw_worst(const uint8_t *raw, size_t len)
{
	uint64_t sum = 0;
	for (size_t off = 0; len - off >= WAL_TXN_HEADER_SIZE;) {
		uint32_t l = rd_u32(raw + off + 8);
		sum += wal_txn_worst(l);
		off += WAL_TXN_HEADER_SIZE + (size_t)l;
		if (off > len)
			break;
	}
	return sum;
}

/* The worst case of one dictionary frame; 0 with dictionaries off. */
static uint64_t dict_worst(const struct wal *w)
{
	return w->dict_bytes ? WAL_FRAME_HEADER_SIZE + (uint64_t)ZSTD_compressBound(w->dict_bytes) : 0;
}

/* Forget the dictionary: a new segment starts without one. */
static void dict_drop(struct wal *w)
{
	ZSTD_freeCDict(w->cdict);
	w->cdict = NULL;
	w->dict_id = 0;
}

/* 1 when a dictionary frame is due: none in this segment yet, or the
 * current one is dict_every raw bytes old. */
static int dict_due(const struct wal *w)
{
	return w->dict_bytes && (!w->cdict || w->raw_since_dict >= w->dict_every);
}

/* Note raw[0..n) as written: count it, and keep the last dict_bytes of it
 * in hist while a dictionary is due or soon will be (no copy otherwise). */
static void hist_note(struct wal *w, const uint8_t *raw, size_t n)
{
	w->raw_since_dict += n;
	if (!w->dict_bytes || (w->cdict && w->raw_since_dict + w->dict_bytes < w->dict_every))
		return;
	size_t cap = w->dict_bytes;
	if (n >= cap) {
		buf_reset(&w->hist);
		(void)buf_append(&w->hist, raw + n - cap, cap); /* reserved at open: cannot fail */
		return;
	}
	if (w->hist.len + n > cap) {
		size_t drop = w->hist.len + n - cap;
		memmove(w->hist.data, w->hist.data + drop, w->hist.len - drop);
		w->hist.len -= drop;
	}
	(void)buf_append(&w->hist, raw, n);
}

/*
 * Write hist as a dictionary frame and compress against it from now on,
 * when hist is full, the current segment holds a frame already, and the
 * rest of the batch (rest[0..rest_len)) still fits behind it at its worst.
 * Otherwise nothing changes (the frames go on without, or with the
 * segment's current dictionary).  Exits on a write failure (write_frame).
 */
static void dict_emit(struct wal *w, const uint8_t *rest, size_t rest_len, struct batch_stats *bs)
{
	if (w->hist.len < w->dict_bytes || w->seg_off <= WAL_SEG_HEADER_SIZE)
		return;
	struct wal_frame_view fv;
	buf_reset(&w->frame);
	if (wal_frame_encode_dictframe(w->cctx, w->level, w->salt, (const uint8_t *)w->hist.data, w->hist.len,
				       &w->frame, &fv) ||
	    w->seg_off + fv.frame_len + raw_worst(rest, rest_len) > w->seg_cap)
		return;
	ZSTD_CDict *cd = ZSTD_createCDict(w->hist.data, w->hist.len, w->level);
	if (!cd)
		return; /* out of memory: go on as before */
	write_frame(w);
	dict_drop(w);
	w->cdict = cd;
	w->dict_id = fv.dict_id;
	w->raw_since_dict = 0;
	w->dict_every = w->dict_every * 2 < w->dict_refresh ? w->dict_every * 2 : w->dict_refresh;
	bs->dict_frames++; /* not in frames: those hold transactions */
	bs->bytes_written += fv.frame_len;
}

/* Encode raw[0..n) as one frame into w->frame, against the segment's
 * dictionary if it has one.  Exits on failure (out of memory). */
static void frame_encode(struct wal *w, const uint8_t *raw, size_t n, struct wal_frame_view *fv)
{
	buf_reset(&w->frame);
	if (wal_frame_encode_dict(w->cctx, w->level, w->cdict, w->dict_id, w->salt, raw, n, &w->frame, fv))
		die("frame encode", ENOMEM);
}

/*
 * Write the batch in w->mine: cut into frames of at most max_batch_bytes
 * raw (whole transactions only), encode with the current segment's salt
 * (and dictionary), rotate when a frame does not fit (re-encoding it with
 * the new salt and no dictionary), write, then one fdatasync (mode
 * fsync).  Returns the number of transactions.  Exits the process on any
 * failure.
 */
static uint64_t write_batch(struct wal *w, struct batch_stats *bs)
{
	const uint8_t *raw = (const uint8_t *)w->mine.data;
	size_t len = w->mine.len, start = 0;
	uint64_t txns = 0;
	while (start < len) {
		size_t end = start;
		while (end < len) {
			assert(len - end >= WAL_TXN_HEADER_SIZE);
			size_t t = WAL_TXN_HEADER_SIZE + rd_u32(raw + end + 8);
			assert(t <= w->max_batch_bytes && t <= len - end);
			if (end > start && end - start + t > w->max_batch_bytes)
				break;
			end += t;
		}
		if (dict_due(w))
			dict_emit(w, raw + start, len - start, bs);
		struct wal_frame_view fv;
		frame_encode(w, raw + start, end - start, &fv);
		if (w->seg_off + fv.frame_len > w->seg_cap) {
			if (w->cdict) { /* the new segment's frame has no dictionary: size it so */
				dict_drop(w);
				frame_encode(w, raw + start, end - start, &fv);
			}
			rotate(w, fv.first_lsn, fv.frame_len, bs);
			frame_encode(w, raw + start, end - start, &fv); /* rare: once per segment */
		}
		write_frame(w);
		bs->frames++;
		bs->txns += fv.txn_count;
		bs->bytes_raw += fv.raw_len;
		bs->bytes_written += fv.frame_len;
		txns += fv.txn_count;
		hist_note(w, raw + start, end - start);
		start = end;
	}
	if (w->mode == WAL_MODE_FSYNC) {
		seg_sync(w, bs);
		if (ERRINJ("wal_crash_after_sync"))
			_exit(137);
	}
	return txns;
}

/* Busy writers (work waited through the last sync, mode fsync): let the
 * batch fill while transactions keep coming, for up to WAL_GROUP_WAIT_US
 * or WAL_GROUP_TXNS transactions (see the top of the file).  taken: the
 * last LSN already written.  Called and returns with mu held. */
static void group_wait(struct wal *w, uint64_t taken)
{
	uint64_t start = now_us(), last = start, seen = w->appended;
	uint64_t cap = start + WAL_GROUP_WAIT_US;
	w->grouping = 1;
	while (!w->stop && w->appended - taken < WAL_GROUP_TXNS && w->open.len < w->max_batch_bytes) {
		/* until the batch's time is up, or no transaction came for a gap */
		uint64_t end = last + WAL_GROUP_GAP_US < cap ? last + WAL_GROUP_GAP_US : cap;
		struct timespec until = {.tv_sec = (time_t)(end / 1000000u), .tv_nsec = (long)(end % 1000000u) * 1000L};
		int rc = pthread_cond_timedwait(&w->work, &w->mu, &until);
		uint64_t now = now_us();
		if (w->appended != seen) {
			seen = w->appended;
			last = now;
		} else if (rc == ETIMEDOUT) {
			break;
		}
		if (now >= cap)
			break;
	}
	w->grouping = 0;
}

static void *wal_thread(void *arg)
{
	struct wal *w = arg;
	int busy = 0; /* work was queued when the last batch became durable */
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (w->open.len == 0 && !w->stop)
			pthread_cond_wait(&w->work, &w->mu);
		if (w->open.len == 0)
			break; /* stopping and drained */
		if (busy && w->mode == WAL_MODE_FSYNC)
			group_wait(w, atomic_load_explicit(&w->durable, memory_order_relaxed));
		struct buf t = w->open;
		w->open = w->mine;
		w->mine = t;
		buf_reset(&w->open);
		w->inflight = w->mine.len;
		w->inflight_worst = w->open_worst + dict_worst(w); /* a dictionary frame may precede them */
		w->open_worst = 0;
		uint64_t last = w->appended;
		pthread_mutex_unlock(&w->mu);

		struct batch_stats bs;
		memset(&bs, 0, sizeof(bs));
		uint64_t n = write_batch(w, &bs);
		assert(last >= atomic_load_explicit(&w->durable, memory_order_relaxed) + n);
		buf_reset(&w->mine);

		/* The batch's statistics and its durability are published together,
		 * under the lock: whoever sees the LSN durable (wal_flush, the
		 * loop) also sees the segments and syncs that made it so. */
		pthread_mutex_lock(&w->mu);
		atomic_store_explicit(&w->durable, last, memory_order_release);
		uint64_t one = 1;
		if (write(w->efd, &one, sizeof(one)) != (ssize_t)sizeof(one) && errno != EAGAIN)
			fprintf(stderr, "wal: eventfd write: %s\n", strerror(errno));
		w->inflight = 0;
		w->inflight_worst = 0;
		w->seg_room = w->seg_cap > w->seg_off ? w->seg_cap - w->seg_off : 0;
		w->st.frames += bs.frames;
		w->st.txns += bs.txns;
		w->st.bytes_raw += bs.bytes_raw;
		w->st.bytes_written += bs.bytes_written;
		w->st.syncs += bs.syncs;
		w->st.sync_us_total += bs.sync_us;
		for (size_t i = 0; i <= WAL_LAT_BUCKETS; i++)
			w->st.sync_lat[i] += bs.lat[i];
		w->st.segments_created += bs.segments;
		w->st.segments_from_spare += bs.segments_spare;
		w->st.dict_frames += bs.dict_frames;
		if (n > w->st.max_batch_txns)
			w->st.max_batch_txns = n;
		busy = w->open.len > 0;
		pthread_cond_broadcast(&w->done);
	}
	pthread_mutex_unlock(&w->mu);
	/* Shutdown: whatever mode write left in the page cache goes to disk now. */
	struct batch_stats bs;
	memset(&bs, 0, sizeof(bs));
	seg_sync(w, &bs);
	pthread_mutex_lock(&w->mu);
	w->st.syncs += bs.syncs;
	w->st.sync_us_total += bs.sync_us;
	for (size_t i = 0; i <= WAL_LAT_BUCKETS; i++)
		w->st.sync_lat[i] += bs.lat[i];
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* Release everything wal_open allocated (thread already stopped). */
static void wal_free(struct wal *w)
{
	if (w->seg_fd >= 0)
		close(w->seg_fd);
	if (w->efd >= 0)
		close(w->efd);
	ZSTD_freeCCtx(w->cctx);
	ZSTD_freeCDict(w->cdict);
	buf_free(&w->hist);
	buf_free(&w->open);
	buf_free(&w->mine);
	buf_free(&w->frame);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->work);
	pthread_cond_destroy(&w->done);
	pthread_cond_destroy(&w->prep_cv);
	free(w->spare_path);
	free(w->dir);
	free(w);
}

/* See wal.h. */
struct wal *wal_open(const struct wal_config *cfg, uint64_t next_lsn, char *err, size_t errlen)
{
	uint64_t seg = cfg->segment_size ? cfg->segment_size : WAL_DEFAULT_SEGMENT_SIZE;
	uint32_t batch = cfg->max_batch_bytes ? cfg->max_batch_bytes : WAL_DEFAULT_BATCH_BYTES;
	int level = cfg->zstd_level ? cfg->zstd_level : WAL_DEFAULT_ZSTD_LEVEL;
	uint32_t dict = cfg->dict_bytes == WAL_DICT_NONE ? 0 : cfg->dict_bytes ? cfg->dict_bytes : WAL_DEFAULT_DICT_BYTES;
	uint64_t refresh = cfg->dict_refresh ? cfg->dict_refresh : WAL_DEFAULT_DICT_REFRESH;
	if (cfg->mode != WAL_MODE_NONE && (!cfg->dir || !cfg->dir[0])) {
		set_err(err, errlen, "wal: no directory configured");
		return NULL;
	}
	if (cfg->mode != WAL_MODE_FSYNC && cfg->mode != WAL_MODE_WRITE && cfg->mode != WAL_MODE_NONE) {
		set_err(err, errlen, "wal: unknown mode %d", (int)cfg->mode);
		return NULL;
	}
	if (seg < WAL_MIN_SEGMENT_SIZE) {
		set_err(err, errlen, "wal: segment_size %" PRIu64 " below the minimum %" PRIu64, seg,
			WAL_MIN_SEGMENT_SIZE);
		return NULL;
	}
	if (batch < WAL_MIN_BATCH_BYTES || batch > WAL_FRAME_MAX_RAW) {
		set_err(err, errlen, "wal: max_batch_bytes %u outside [%u, %u]", batch,
			WAL_MIN_BATCH_BYTES, WAL_FRAME_MAX_RAW);
		return NULL;
	}
	if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel()) {
		set_err(err, errlen, "wal: zstd_level %d outside [%d, %d]", level, ZSTD_minCLevel(),
			ZSTD_maxCLevel());
		return NULL;
	}
	if (dict && (dict < WAL_MIN_DICT_BYTES || dict > WAL_DICT_MAX || refresh < dict)) {
		set_err(err, errlen, "wal: dict_bytes %u outside [%u, %u], or dict_refresh %" PRIu64 " below it", dict,
			WAL_MIN_DICT_BYTES, WAL_DICT_MAX, refresh);
		return NULL;
	}
	if (next_lsn == 0 || next_lsn == UINT64_MAX) {
		set_err(err, errlen, "wal: next_lsn must be >= 1");
		return NULL;
	}
	struct wal *w = calloc(1, sizeof(*w));
	if (!w) {
		set_err(err, errlen, "wal: out of memory");
		return NULL;
	}
	w->mode = cfg->mode;
	w->segment_size = seg;
	w->max_batch_bytes = batch;
	w->level = level;
	w->dict_bytes = dict;
	w->dict_refresh = refresh;
	w->dict_every = (uint64_t)dict * WAL_DICT_FIRST_REFRESH < refresh ? (uint64_t)dict * WAL_DICT_FIRST_REFRESH : refresh;
	w->seg_fd = -1;
	w->appended = next_lsn - 1;
	atomic_init(&w->durable, next_lsn - 1);
	buf_init(&w->open, 0);
	buf_init(&w->mine, 0);
	buf_init(&w->frame, 0);
	buf_init(&w->hist, dict);
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_t ca; /* group_wait's deadline is on the monotonic clock */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->work, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&w->done, NULL);
	pthread_cond_init(&w->prep_cv, NULL);
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	w->dir = strdup(cfg->dir ? cfg->dir : "");
	if (w->efd < 0 || !w->dir) {
		set_err(err, errlen, "wal: eventfd/alloc: %s", strerror(errno));
		goto fail;
	}
	if (w->mode == WAL_MODE_NONE)
		return w; /* no files, no thread: wal_append publishes directly */
	if (mkdir_p(w->dir)) {
		set_err(err, errlen, "wal: create directory %s: %s", w->dir, strerror(errno));
		goto fail;
	}
	if (check_existing(w->dir, next_lsn, err, errlen))
		goto fail;
	w->cctx = ZSTD_createCCtx();
	if (!w->cctx || (w->dict_bytes && buf_reserve(&w->hist, w->dict_bytes))) {
		set_err(err, errlen, "wal: out of memory for zstd");
		goto fail;
	}
	if (seg_create(w, next_lsn, seg, err, errlen)) {
		if (!no_space(errno))
			goto fail;
		/* Start anyway, read-only: no current segment (room 0) and "space
		 * low", so every write is refused until the preparer has made a
		 * spare; the first frame then rotates into it. */
		fprintf(stderr, "%s -- starting without a writable segment: writes are refused until space "
				"returns under %s\n", err, w->dir);
		w->prep_failed = 1;
		atomic_store_explicit(&w->space_low, w->mode != WAL_MODE_NONE && !w->spare_ready, memory_order_relaxed);
		if (err && errlen)
			err[0] = 0;
	} else {
		w->st.segments_created = 1;
	}
	w->seg_room = w->seg_cap > w->seg_off ? w->seg_cap - w->seg_off : 0;
	int e = pthread_create(&w->thr, NULL, wal_thread, w);
	if (e) {
		set_err(err, errlen, "wal: cannot start thread: %s", strerror(e));
		goto fail;
	}
	w->have_thread = 1;
	if (asprintf(&w->spare_path, "%s/" WAL_SPARE_NAME, w->dir) < 0)
		w->spare_path = NULL;
	else if (pthread_create(&w->prep_thr, NULL, spare_thread, w) == 0)
		w->have_prep = 1; /* without it, rotation creates segments inline */
	return w;
fail:
	wal_free(w);
	return NULL;
}

/* See wal.h. */
uint64_t wal_txn_worst(size_t len)
{
	return WAL_FRAME_HEADER_SIZE + (uint64_t)ZSTD_compressBound(WAL_TXN_HEADER_SIZE + len);
}

/* True if `need` more worst-case bytes are certain to be writable (mu held):
 * always while a spare is ready or none has failed yet; in "space low" only
 * within the current segment's remaining room. */
static int room_for(const struct wal *w, uint64_t need)
{
	if (w->mode == WAL_MODE_NONE || w->spare_ready || !w->prep_failed)
		return 1;
	uint64_t used = w->open_worst + w->inflight_worst + w->reserved;
	return used <= w->seg_room && need <= w->seg_room - used;
}

/* See wal.h. */
int wal_reserve(struct wal *w, size_t len)
{
	uint64_t need = wal_txn_worst(len);
	pthread_mutex_lock(&w->mu);
	int ok = room_for(w, need);
	if (ok)
		w->reserved += need;
	else
		w->nospace_refusals++;
	pthread_mutex_unlock(&w->mu);
	return ok ? 0 : WAL_E_NOSPACE;
}

/* See wal.h. */
void wal_unreserve(struct wal *w, size_t len)
{
	uint64_t need = wal_txn_worst(len);
	pthread_mutex_lock(&w->mu);
	w->reserved = w->reserved > need ? w->reserved - need : 0;
	pthread_mutex_unlock(&w->mu);
}

/* See wal.h. */
int wal_space(const struct wal *w, uint64_t need_len, uint64_t *room)
{
	/* the common case, without the lock the WAL thread takes per batch: a
	 * spare is ready (a stale "not low" only lets the append itself check,
	 * under the lock, and refuse with WAL_E_NOSPACE) */
	if (!room && !atomic_load_explicit(&w->space_low, memory_order_relaxed))
		return 0;
	struct wal *mw = (struct wal *)w; /* the lock is not part of the logical state */
	pthread_mutex_lock(&mw->mu);
	int low = w->mode != WAL_MODE_NONE && !w->spare_ready && w->prep_failed;
	uint64_t used = w->open_worst + w->inflight_worst + w->reserved;
	if (room)
		*room = !low ? UINT64_MAX : used < w->seg_room ? w->seg_room - used : 0;
	int ok = room_for(w, wal_txn_worst(need_len));
	pthread_mutex_unlock(&mw->mu);
	return !low ? 0 : ok ? 1 : 2;
}

/* See wal.h. */
int wal_append(struct wal *w, uint64_t lsn, const void *payload, size_t len)
{
	return wal_append_reserved(w, lsn, payload, len, 0);
}

/* See wal.h.  Also returns -1 if lsn is not exactly the previous LSN + 1. */
int wal_append_reserved(struct wal *w, uint64_t lsn, const void *payload, size_t len, size_t reserved_len)
{
	assert(w->max_batch_bytes > WAL_TXN_HEADER_SIZE);
	if (len > (size_t)w->max_batch_bytes - WAL_TXN_HEADER_SIZE || (reserved_len && len > reserved_len))
		return -1;
	uint64_t worst = wal_txn_worst(len);
	pthread_mutex_lock(&w->mu);
	if (lsn != w->appended + 1) {
		pthread_mutex_unlock(&w->mu);
		return -1;
	}
	if (reserved_len) {
		uint64_t r = wal_txn_worst(reserved_len);
		w->reserved = w->reserved > r ? w->reserved - r : 0;
	} else if (!room_for(w, worst)) {
		w->nospace_refusals++;
		pthread_mutex_unlock(&w->mu);
		return WAL_E_NOSPACE;
	}
	if (w->mode == WAL_MODE_NONE) {
		w->appended = lsn;
		w->st.txns++;
		w->st.bytes_raw += WAL_TXN_HEADER_SIZE + len;
		atomic_store_explicit(&w->durable, lsn, memory_order_release);
		pthread_mutex_unlock(&w->mu);
		uint64_t one = 1;
		if (write(w->efd, &one, sizeof(one)) != (ssize_t)sizeof(one) && errno != EAGAIN)
			fprintf(stderr, "wal: eventfd write: %s\n", strerror(errno));
		return 0;
	}
	while (w->open.len > 0 &&
	       w->open.len + w->inflight + WAL_TXN_HEADER_SIZE + len > WAL_QUEUE_MAX_BYTES)
		pthread_cond_wait(&w->done, &w->mu);
	if (wal_txn_put(&w->open, lsn, payload, (uint32_t)len)) {
		pthread_mutex_unlock(&w->mu);
		return -1;
	}
	w->open_worst += worst;
	w->appended = lsn;
	/* a writer filling its batch (group_wait) is woken only once it is full */
	if (!w->grouping || w->appended - atomic_load_explicit(&w->durable, memory_order_relaxed) >= WAL_GROUP_TXNS ||
	    w->open.len >= w->max_batch_bytes)
		pthread_cond_signal(&w->work);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

/* See wal.h. */
uint64_t wal_durable_lsn(const struct wal *w)
{
	return atomic_load_explicit(&w->durable, memory_order_acquire);
}

/* See wal.h. */
int wal_event_fd(const struct wal *w)
{
	return w->efd;
}

/* See wal.h. */
void wal_flush(struct wal *w)
{
	pthread_mutex_lock(&w->mu);
	uint64_t target = w->appended;
	while (atomic_load_explicit(&w->durable, memory_order_acquire) < target) {
		assert(w->have_thread);
		pthread_cond_wait(&w->done, &w->mu);
	}
	pthread_mutex_unlock(&w->mu);
}

/* See wal.h. */
void wal_stats(const struct wal *w, struct wal_stats *out)
{
	struct wal *mw = (struct wal *)w; /* the lock is not part of the logical state */
	pthread_mutex_lock(&mw->mu);
	*out = w->st;
	out->appended_lsn = w->appended;
	out->space_low = w->mode != WAL_MODE_NONE && !w->spare_ready && w->prep_failed;
	out->nospace_refusals = w->nospace_refusals;
	pthread_mutex_unlock(&mw->mu);
	out->durable_lsn = wal_durable_lsn(w);
}

/* See wal.h. */
void wal_close(struct wal *w)
{
	if (!w)
		return;
	if (w->have_prep) {
		pthread_mutex_lock(&w->mu);
		w->prep_stop = 1;
		pthread_cond_signal(&w->prep_cv);
		pthread_mutex_unlock(&w->mu);
		pthread_join(w->prep_thr, NULL);
	}
	if (w->have_thread) {
		pthread_mutex_lock(&w->mu);
		w->stop = 1;
		pthread_cond_signal(&w->work);
		pthread_mutex_unlock(&w->mu);
		pthread_join(w->thr, NULL);
		assert(atomic_load(&w->durable) == w->appended);
	}
	wal_free(w);
}
