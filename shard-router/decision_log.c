/*
 * decision_log.c -- the 2PC coordinator's decision log (see decision_log.h).
 *
 * Why on the wal/ code.  A COMMIT decision must be on disk before any
 * participant hears it (presumed abort: a decision that is lost after it
 * was announced is a split outcome).  Forcing it costs one fdatasync
 * (~100 us here, c-toolchain.md); the router decides for many orders at
 * once, so the decisions must share syncs.  The WAL writer thread already
 * does exactly that (group commit, pre-zeroed segments, torn-tail cut,
 * salted frames), so each record is one WAL transaction and this file only
 * adds the meaning: which transactions committed and which ended.
 *
 * Why no ABORT record.  Presumed abort (DESIGN.md 5 and 9): a transaction
 * the log does not know is aborted, so aborts are never written, and a
 * participant that asks about an unknown id is told to abort -- unless the
 * router has it in progress, which this file does not know (the caller
 * answers "in progress" before it asks the log).
 *
 * Why END, and why forgetting is safe.  END is written once every
 * participant has acknowledged COMMIT, which each forces before it
 * acknowledges; after that nobody will ever ask about the transaction
 * again, so its records may go.  dlog_prune moves a "floor" LSN up to just
 * below the oldest COMMIT whose END is not yet durable (an END still in the
 * WAL's queue does not count: a crash could lose it and leave the COMMIT
 * pruned), writes the floor durably to <dir>/dlog.floor first, and only
 * then lets wal_prune delete whole segments at or below it.  Recovery
 * replays only records above the floor, so what is forgotten is the same
 * before and after a restart (the segment that straddles the floor keeps
 * some old bytes on disk, but they are never read).
 *
 * Why the bounds.  A txn id is "<router>:<order>": an order id is at most
 * 40 bytes (engine/storage/id.h ID_MAX_LEN) and a router id 16, so 64 bytes
 * hold both and fit the one length byte; the charset keeps ids safe to
 * print in logs, metrics and URLs.  An order has at most 16 owner shards
 * (a cross-shard order with more legs is refused before it is planned),
 * shard ids are below 64 (SMAP_MAX_SHARDS), so a shard is one byte.  A
 * record is therefore at most DLOG_RECORD_MAX (92) bytes.  Every field is
 * checked on read: recovery of a record that breaks any rule stops the
 * open with the LSN and the reason, never guesses.  The COMMIT time is in
 * the record so that "age of the oldest in-doubt transaction" survives a
 * restart.
 *
 * Memory.  Every transaction above the floor is one malloc'd struct dtxn,
 * in a chained hash table by id and in a list in LSN (= commit) order, so
 * the oldest unended one and the prune horizon are found from the head.
 * max_unended bounds COMMITs without END and max_waiting bounds callbacks
 * not yet run (both refuse with DLOG_E_FULL, nothing appended); ended
 * transactions stay until dlog_prune, bounded by what the log holds.
 * Waiting callbacks keep a copy of the id (not a pointer to the dtxn),
 * because a transaction can be ended and pruned before its callback runs.
 *
 * Threads: every function here runs on the caller's (event-loop) thread;
 * only the WAL writer thread inside wal/ runs concurrently.
 */
#include "shard-router/decision_log.h"
#include "wal/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define DLOG_FLOOR_NAME "dlog.floor"
#define DLOG_FLOOR_MAGIC "WMDLOGFLOOR 1 "
#define DLOG_HASH_MIN_BUCKETS 64u

struct dtxn {
	char id[DLOG_TXN_ID_MAX + 1];
	uint8_t id_len;
	uint8_t n;
	uint8_t shards[DLOG_MAX_PARTICIPANTS];
	uint64_t at_ms;
	uint64_t commit_lsn;
	uint64_t end_lsn;        /* 0: no END yet */
	struct dtxn *hnext;      /* hash chain */
	struct dtxn *prev, *next; /* LSN order */
};

struct waiter {
	uint64_t lsn;
	dlog_commit_cb cb;
	void *arg;
	char id[DLOG_TXN_ID_MAX + 1];
};

struct dlog {
	struct wal *wal;
	char dir[256];
	uint64_t next_lsn;
	uint64_t floor;
	uint32_t max_unended, max_waiting;
	/* hash table and LSN-ordered list */
	struct dtxn **buckets;
	size_t nbuckets, known, unended;
	struct dtxn *head, *tail;
	/* FIFO ring of callbacks waiting for durability (LSN order) */
	struct waiter *ring;
	size_t ring_cap, ring_head, ring_len;
	uint64_t replayed;
	int tail_cut;
	int replay_err;          /* recovery: the first bad record's reason is in err */
	char *replay_msg;
	size_t replay_msglen;
};

static void set_err(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t len, const char *fmt, ...)
{
	if (!err || !len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

/* ---- ids ------------------------------------------------------------------ */

static int id_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* 1 when s[0..len) is 1..max bytes of the id charset. */
static int id_part_valid(const char *s, size_t len, size_t max)
{
	if (len == 0 || len > max)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!id_char(s[i]))
			return 0;
	return 1;
}

int dlog_txn_parse(const char *s, size_t len, const char **router, size_t *router_len, const char **order,
		   size_t *order_len)
{
	if (!s || len == 0 || len > DLOG_TXN_ID_MAX)
		return -1;
	const char *colon = memchr(s, ':', len);
	if (!colon)
		return -1;
	size_t rl = (size_t)(colon - s), ol = len - rl - 1;
	if (!id_part_valid(s, rl, DLOG_ROUTER_ID_MAX) || !id_part_valid(colon + 1, ol, DLOG_TXN_ID_MAX))
		return -1;
	if (router)
		*router = s;
	if (router_len)
		*router_len = rl;
	if (order)
		*order = colon + 1;
	if (order_len)
		*order_len = ol;
	return 0;
}

int dlog_txn_valid(const char *s, size_t len)
{
	return dlog_txn_parse(s, len, NULL, NULL, NULL, NULL) == 0;
}

size_t dlog_txn_format(const char *router_id, const char *order_id, char *out, size_t cap)
{
	if (out && cap)
		out[0] = 0;
	if (!router_id || !order_id || !out)
		return 0;
	size_t rl = strnlen(router_id, DLOG_ROUTER_ID_MAX + 1), ol = strnlen(order_id, DLOG_TXN_ID_MAX + 1);
	if (!id_part_valid(router_id, rl, DLOG_ROUTER_ID_MAX) || !id_part_valid(order_id, ol, DLOG_TXN_ID_MAX) ||
	    rl + 1 + ol > DLOG_TXN_ID_MAX || rl + 1 + ol + 1 > cap)
		return 0;
	memcpy(out, router_id, rl);
	out[rl] = ':';
	memcpy(out + rl + 1, order_id, ol);
	out[rl + 1 + ol] = 0;
	return rl + 1 + ol;
}

/* ---- records -------------------------------------------------------------- */

/* Participants: 1..16 shard ids, each < DLOG_SHARD_ID_LIMIT, none twice.
 * NULL or a reason. */
static const char *shards_check(const uint8_t *s, size_t n)
{
	if (n == 0 || n > DLOG_MAX_PARTICIPANTS)
		return "participant count out of 1..16";
	uint64_t seen = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] >= DLOG_SHARD_ID_LIMIT)
			return "shard id out of 0..63";
		if (seen & (UINT64_C(1) << s[i]))
			return "a shard named twice";
		seen |= UINT64_C(1) << s[i];
	}
	return NULL;
}

static void put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

size_t dlog_record_encode(const struct dlog_record *r, uint8_t *out, size_t cap)
{
	if (!r || !out || !dlog_txn_valid(r->id, r->id_len))
		return 0;
	if (r->type != DLOG_REC_COMMIT && r->type != DLOG_REC_END)
		return 0;
	size_t need = 3 + r->id_len + (r->type == DLOG_REC_COMMIT ? 8 + 1 + (size_t)r->n : 0);
	if (need > cap || (r->type == DLOG_REC_COMMIT && shards_check(r->shards, r->n)))
		return 0;
	out[0] = DLOG_RECORD_VERSION;
	out[1] = (uint8_t)r->type;
	out[2] = (uint8_t)r->id_len;
	memcpy(out + 3, r->id, r->id_len);
	if (r->type == DLOG_REC_COMMIT) {
		uint8_t *p = out + 3 + r->id_len;
		put_u64(p, r->at_ms);
		p[8] = r->n;
		memcpy(p + 9, r->shards, r->n);
	}
	return need;
}

int dlog_record_decode(const uint8_t *p, size_t len, struct dlog_record *r, char *why, size_t whylen)
{
	memset(r, 0, sizeof(*r));
	if (len < 3) {
		set_err(why, whylen, "record shorter than its 3-byte header (%zu bytes)", len);
		return -1;
	}
	if (p[0] != DLOG_RECORD_VERSION) {
		set_err(why, whylen, "unknown record version %u", p[0]);
		return -1;
	}
	if (p[1] != DLOG_REC_COMMIT && p[1] != DLOG_REC_END) {
		set_err(why, whylen, "unknown record type %u", p[1]);
		return -1;
	}
	size_t il = p[2];
	if (il > len - 3) {
		set_err(why, whylen, "id length %zu past the record's end", il);
		return -1;
	}
	if (!dlog_txn_valid((const char *)p + 3, il)) {
		set_err(why, whylen, "invalid transaction id (length %zu)", il);
		return -1;
	}
	r->type = (enum dlog_rec_type)p[1];
	memcpy(r->id, p + 3, il);
	r->id[il] = 0;
	r->id_len = il;
	size_t off = 3 + il;
	if (r->type == DLOG_REC_END) {
		if (off != len) {
			set_err(why, whylen, "END record has %zu trailing bytes", len - off);
			return -1;
		}
		return 0;
	}
	if (len - off < 9) {
		set_err(why, whylen, "COMMIT record truncated before its participants");
		return -1;
	}
	r->at_ms = get_u64(p + off);
	size_t n = p[off + 8];
	off += 9;
	if (n > DLOG_MAX_PARTICIPANTS || n != len - off) {
		set_err(why, whylen, "COMMIT names %zu participants in %zu bytes", n, len - off);
		return -1;
	}
	const char *bad = shards_check(p + off, n);
	if (bad) {
		set_err(why, whylen, "COMMIT participants: %s", bad);
		return -1;
	}
	r->n = (uint8_t)n;
	memcpy(r->shards, p + off, n);
	return 0;
}

/* ---- the table ------------------------------------------------------------ */

static size_t bucket_of(const struct dlog *l, const char *id, size_t len)
{
	return (size_t)(XXH3_64bits(id, len) & (l->nbuckets - 1));
}

static struct dtxn *find(const struct dlog *l, const char *id, size_t len)
{
	for (struct dtxn *t = l->buckets[bucket_of(l, id, len)]; t; t = t->hnext)
		if (t->id_len == len && !memcmp(t->id, id, len))
			return t;
	return NULL;
}

/* Double the buckets when the table is fuller than 1 per bucket.  0 / -1. */
static int grow(struct dlog *l)
{
	if (l->known < l->nbuckets)
		return 0;
	size_t nb = l->nbuckets * 2;
	struct dtxn **b = calloc(nb, sizeof(*b));
	if (!b)
		return -1;
	struct dtxn **old = l->buckets;
	size_t on = l->nbuckets;
	l->buckets = b;
	l->nbuckets = nb;
	for (size_t i = 0; i < on; i++)
		for (struct dtxn *t = old[i], *nx; t; t = nx) {
			nx = t->hnext;
			size_t k = bucket_of(l, t->id, t->id_len);
			t->hnext = b[k];
			b[k] = t;
		}
	free(old);
	return 0;
}

/* Add a COMMIT at lsn (the caller checked it is new).  The new txn, or NULL
 * when out of memory. */
static struct dtxn *add(struct dlog *l, const char *id, size_t len, const uint8_t *s, size_t n, uint64_t at_ms,
			uint64_t lsn)
{
	if (grow(l))
		return NULL;
	struct dtxn *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	memcpy(t->id, id, len);
	t->id_len = (uint8_t)len;
	t->n = (uint8_t)n;
	memcpy(t->shards, s, n);
	t->at_ms = at_ms;
	t->commit_lsn = lsn;
	size_t k = bucket_of(l, id, len);
	t->hnext = l->buckets[k];
	l->buckets[k] = t;
	t->prev = l->tail;
	if (l->tail)
		l->tail->next = t;
	else
		l->head = t;
	l->tail = t;
	l->known++;
	l->unended++;
	return t;
}

/* Unlink and free t (hash chain and list). */
static void drop(struct dlog *l, struct dtxn *t)
{
	struct dtxn **pp = &l->buckets[bucket_of(l, t->id, t->id_len)];
	while (*pp != t)
		pp = &(*pp)->hnext;
	*pp = t->hnext;
	if (t->prev)
		t->prev->next = t->next;
	else
		l->head = t->next;
	if (t->next)
		t->next->prev = t->prev;
	else
		l->tail = t->prev;
	if (!t->end_lsn)
		l->unended--;
	l->known--;
	free(t);
}

/* ---- the floor file ------------------------------------------------------- */

/* Read <dir>/dlog.floor: 0 and *floor (0 when there is no file), or -1 with
 * a message when it exists but is not exactly "WMDLOGFLOOR 1 <lsn>\n". */
static int floor_read(const char *dir, uint64_t *floor, char *err, size_t errlen)
{
	char path[300], buf[64];
	snprintf(path, sizeof(path), "%s/%s", dir, DLOG_FLOOR_NAME);
	*floor = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		set_err(err, errlen, "dlog: cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	size_t ml = strlen(DLOG_FLOOR_MAGIC);
	if (n < (ssize_t)ml + 2 || memcmp(buf, DLOG_FLOOR_MAGIC, ml) || buf[n - 1] != '\n')
		goto bad;
	uint64_t v = 0;
	for (ssize_t i = (ssize_t)ml; i < n - 1; i++) {
		if (buf[i] < '0' || buf[i] > '9' || v > (UINT64_MAX - 9) / 10 || (i == (ssize_t)ml && buf[i] == '0' && n - 1 > i + 1))
			goto bad;
		v = v * 10 + (uint64_t)(buf[i] - '0');
	}
	*floor = v;
	return 0;
bad:
	set_err(err, errlen, "dlog: %s is corrupt (expected \"%s<lsn>\")", path, DLOG_FLOOR_MAGIC);
	return -1;
}

/* Write the floor durably: temp file, fsync, rename, fsync the directory. */
static int floor_write(const char *dir, uint64_t floor)
{
	char path[300], tmp[310], buf[64];
	snprintf(path, sizeof(path), "%s/%s", dir, DLOG_FLOOR_NAME);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int len = snprintf(buf, sizeof(buf), DLOG_FLOOR_MAGIC "%" PRIu64 "\n", floor);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	int rc = write(fd, buf, (size_t)len) == len && fsync(fd) == 0 ? 0 : -1;
	close(fd);
	if (rc || rename(tmp, path) || fs_fsync_dir(dir)) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* ---- open and recovery ---------------------------------------------------- */

static int mkdir_one(const char *dir)
{
	return mkdir(dir, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

/* wal_recover callback: apply one record.  Non-zero stops recovery with
 * the reason in l->replay_msg. */
static int replay(void *ctx, uint64_t lsn, const void *payload, size_t len)
{
	struct dlog *l = ctx;
	struct dlog_record r;
	char why[160];
	l->replayed++;
	if (dlog_record_decode(payload, len, &r, why, sizeof(why))) {
		set_err(l->replay_msg, l->replay_msglen, "dlog: corrupt record at LSN %" PRIu64 " in %s: %s", lsn,
			l->dir, why);
		return 1;
	}
	struct dtxn *t = find(l, r.id, r.id_len);
	if (r.type == DLOG_REC_COMMIT) {
		if (t) {
			set_err(l->replay_msg, l->replay_msglen,
				"dlog: corrupt log in %s: a second COMMIT for %s at LSN %" PRIu64 " (first at %" PRIu64 ")",
				l->dir, r.id, lsn, t->commit_lsn);
			return 1;
		}
		if (!add(l, r.id, r.id_len, r.shards, r.n, r.at_ms, lsn)) {
			set_err(l->replay_msg, l->replay_msglen, "dlog: out of memory at LSN %" PRIu64, lsn);
			return 1;
		}
		return 0;
	}
	/* END: its COMMIT may lie below the floor (pruned); a repeat is harmless. */
	if (t && !t->end_lsn) {
		t->end_lsn = lsn;
		l->unended--;
	}
	return 0;
}

static void free_all(struct dlog *l)
{
	while (l->head)
		drop(l, l->head);
	free(l->buckets);
	free(l->ring);
	free(l);
}

int dlog_open(const struct dlog_config *cfg, struct dlog **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!cfg || !cfg->dir || strlen(cfg->dir) >= sizeof(((struct dlog *)0)->dir)) {
		set_err(err, errlen, "dlog: no directory, or its path is too long");
		return -1;
	}
	struct dlog *l = calloc(1, sizeof(*l));
	if (!l || !(l->buckets = calloc(DLOG_HASH_MIN_BUCKETS, sizeof(*l->buckets)))) {
		free(l);
		set_err(err, errlen, "dlog: out of memory");
		return -1;
	}
	l->nbuckets = DLOG_HASH_MIN_BUCKETS;
	snprintf(l->dir, sizeof(l->dir), "%s", cfg->dir);
	l->max_unended = cfg->max_unended ? cfg->max_unended : DLOG_DEFAULT_MAX_UNENDED;
	l->max_waiting = cfg->max_waiting ? cfg->max_waiting : DLOG_DEFAULT_MAX_WAITING;
	if (mkdir_one(l->dir)) {
		set_err(err, errlen, "dlog: cannot create %s: %s", l->dir, strerror(errno));
		free_all(l);
		return -1;
	}
	if (floor_read(l->dir, &l->floor, err, errlen)) {
		free_all(l);
		return -1;
	}
	struct wal_recovery_report rep;
	memset(&rep, 0, sizeof(rep));
	l->replay_msg = err;
	l->replay_msglen = errlen;
	int rc = wal_recover(l->dir, l->floor, replay, l, 0, &rep);
	l->replay_msg = NULL;
	if (rc) {
		if (rc == -1)
			set_err(err, errlen, "%s", rep.error[0] ? rep.error : "dlog: recovery failed");
		free_all(l);
		return -1;
	}
	l->tail_cut = rep.tail_cut;
	uint64_t last = rep.last_lsn > l->floor ? rep.last_lsn : l->floor;
	l->next_lsn = last + 1;
	struct wal_config wc = {.dir = l->dir, .mode = cfg->mode, .segment_size = cfg->segment_size};
	l->wal = wal_open(&wc, l->next_lsn, err, errlen);
	if (!l->wal) {
		free_all(l);
		return -1;
	}
	*out = l;
	return 0;
}

/* ---- appending ------------------------------------------------------------ */

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Make room for one more waiter (ring grows by doubling up to max_waiting).
 * 0, or DLOG_E_FULL. */
static int ring_reserve(struct dlog *l)
{
	if (l->ring_len >= l->max_waiting)
		return DLOG_E_FULL;
	if (l->ring_len < l->ring_cap)
		return 0;
	size_t nc = l->ring_cap ? l->ring_cap * 2 : 16;
	if (nc > l->max_waiting)
		nc = l->max_waiting;
	struct waiter *r = malloc(nc * sizeof(*r));
	if (!r)
		return DLOG_E_FULL;
	for (size_t i = 0; i < l->ring_len; i++)
		r[i] = l->ring[(l->ring_head + i) % l->ring_cap];
	free(l->ring);
	l->ring = r;
	l->ring_cap = nc;
	l->ring_head = 0;
	return 0;
}

/* Append one encoded record at the next LSN.  0 or a DLOG_E_* code. */
static int append(struct dlog *l, const struct dlog_record *r)
{
	uint8_t buf[DLOG_RECORD_MAX];
	size_t len = dlog_record_encode(r, buf, sizeof(buf));
	if (!len)
		return DLOG_E_INVAL;
	int rc = wal_append(l->wal, l->next_lsn, buf, len);
	if (rc == WAL_E_NOSPACE)
		return DLOG_E_NOSPACE;
	if (rc)
		return DLOG_E_INVAL;
	l->next_lsn++;
	return 0;
}

int dlog_commit(struct dlog *l, const char *txn_id, const uint8_t *participants, size_t n, dlog_commit_cb cb,
		void *arg)
{
	size_t len = txn_id ? strnlen(txn_id, DLOG_TXN_ID_MAX + 1) : 0;
	if (!dlog_txn_valid(txn_id, len) || !participants || shards_check(participants, n) || !cb)
		return DLOG_E_INVAL;
	if (find(l, txn_id, len))
		return DLOG_E_EXISTS;
	if (l->unended >= l->max_unended)
		return DLOG_E_FULL;
	int rc = ring_reserve(l);
	if (rc)
		return rc;
	struct dlog_record r = {.type = DLOG_REC_COMMIT, .id_len = len, .at_ms = now_ms(), .n = (uint8_t)n};
	memcpy(r.id, txn_id, len);
	memcpy(r.shards, participants, n);
	uint64_t lsn = l->next_lsn;
	/* Memory first, so an out-of-memory leaves nothing in the log. */
	struct dtxn *t = add(l, txn_id, len, participants, n, r.at_ms, lsn);
	if (!t)
		return DLOG_E_FULL;
	rc = append(l, &r);
	if (rc) {
		drop(l, t);
		return rc;
	}
	struct waiter *w = &l->ring[(l->ring_head + l->ring_len) % l->ring_cap];
	w->lsn = lsn;
	w->cb = cb;
	w->arg = arg;
	memcpy(w->id, txn_id, len + 1);
	l->ring_len++;
	return 0;
}

int dlog_end(struct dlog *l, const char *txn_id)
{
	size_t len = txn_id ? strnlen(txn_id, DLOG_TXN_ID_MAX + 1) : 0;
	if (!dlog_txn_valid(txn_id, len))
		return DLOG_E_INVAL;
	struct dtxn *t = find(l, txn_id, len);
	if (!t || t->commit_lsn > wal_durable_lsn(l->wal))
		return DLOG_E_STATE;
	if (t->end_lsn)
		return 0;
	struct dlog_record r = {.type = DLOG_REC_END, .id_len = len};
	memcpy(r.id, txn_id, len);
	uint64_t lsn = l->next_lsn;
	int rc = append(l, &r);
	if (rc)
		return rc;
	t->end_lsn = lsn;
	l->unended--;
	return 0;
}

enum dlog_status dlog_lookup(struct dlog *l, const char *txn_id)
{
	size_t len = txn_id ? strnlen(txn_id, DLOG_TXN_ID_MAX + 1) : 0;
	if (!dlog_txn_valid(txn_id, len))
		return DLOG_UNKNOWN;
	struct dtxn *t = find(l, txn_id, len);
	if (!t)
		return DLOG_UNKNOWN;
	if (t->commit_lsn > wal_durable_lsn(l->wal))
		return DLOG_COMMITTING;
	return t->end_lsn ? DLOG_ENDED : DLOG_COMMITTED;
}

size_t dlog_undecided(struct dlog *l, dlog_each_fn fn, void *arg)
{
	uint64_t durable = wal_durable_lsn(l->wal);
	size_t k = 0;
	for (struct dtxn *t = l->head; t; t = t->next)
		if (!t->end_lsn && t->commit_lsn <= durable) {
			fn(arg, t->id, t->shards, t->n, t->at_ms);
			k++;
		}
	return k;
}

int dlog_event_fd(const struct dlog *l)
{
	return wal_event_fd(l->wal);
}

/* Run the callbacks of every waiter at or below `durable`, oldest first. */
static size_t run_waiters(struct dlog *l, uint64_t durable)
{
	size_t k = 0;
	while (l->ring_len && l->ring[l->ring_head].lsn <= durable) {
		struct waiter w = l->ring[l->ring_head];
		l->ring_head = (l->ring_head + 1) % l->ring_cap;
		l->ring_len--;
		w.cb(w.arg, w.id);
		k++;
	}
	return k;
}

size_t dlog_poll(struct dlog *l)
{
	uint64_t v;
	while (read(wal_event_fd(l->wal), &v, sizeof(v)) == (ssize_t)sizeof(v))
		;
	return run_waiters(l, wal_durable_lsn(l->wal));
}

/* ---- pruning -------------------------------------------------------------- */

int dlog_prune(struct dlog *l)
{
	uint64_t durable = wal_durable_lsn(l->wal);
	uint64_t horizon = durable;
	for (struct dtxn *t = l->head; t; t = t->next)
		if (!t->end_lsn || t->end_lsn > durable) {
			horizon = t->commit_lsn - 1;
			break;
		}
	if (horizon <= l->floor)
		return wal_prune(l->dir, l->floor); /* finishes a prune a crash or error cut short */
	if (floor_write(l->dir, horizon))
		return -1;
	l->floor = horizon;
	while (l->head && l->head->commit_lsn <= horizon)
		drop(l, l->head);
	return wal_prune(l->dir, horizon);
}

void dlog_stats(const struct dlog *l, struct dlog_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->unended = l->unended;
	for (const struct dtxn *t = l->head; t; t = t->next)
		if (!t->end_lsn) {
			out->oldest_unended_ms = t->at_ms;
			break;
		}
	out->waiting = l->ring_len;
	out->known = l->known;
	out->floor_lsn = l->floor;
	out->replayed = l->replayed;
	out->tail_cut = l->tail_cut;
	wal_stats(l->wal, &out->wal);
}

void dlog_flush(struct dlog *l)
{
	wal_flush(l->wal);
}

void dlog_close(struct dlog *l)
{
	if (!l)
		return;
	wal_flush(l->wal);
	run_waiters(l, UINT64_MAX);
	wal_close(l->wal);
	free_all(l);
}
