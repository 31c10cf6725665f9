/*
 * decision_log.h -- the 2PC coordinator's decision log (DESIGN.md 9,
 * "Cross-shard orders"; issue 14): presumed abort, so only COMMIT
 * decisions are written, forced with group commit, and END records are
 * written lazily once every participant has acknowledged.
 *
 * What a caller (the router's event loop) gets:
 *   - dlog_open recovers the log and knows, per transaction still in it,
 *     whether it is COMMITTED (re-drive it: no END yet) or ENDED;
 *   - dlog_commit appends COMMIT (txn id, participants) and calls back once
 *     that record is durable -- many COMMITs share one fdatasync (the wal/
 *     writer thread's group commit); the loop watches dlog_event_fd() and
 *     calls dlog_poll(), which is where the callbacks run;
 *   - dlog_end appends END without waiting for it;
 *   - dlog_lookup answers a participant's question; UNKNOWN means abort
 *     (presumed abort: no COMMIT record and not in progress = abort);
 *   - dlog_prune drops segments that hold only ended transactions, never
 *     past the oldest COMMIT without a durable END.
 *
 * Transaction ids are "<router id>:<order id>" (dlog_txn_format/parse), so a
 * participant knows which router to ask.  Both parts are [A-Za-z0-9_-]
 * only; the whole id is at most DLOG_TXN_ID_MAX bytes.
 *
 * Record format (one WAL transaction = one record, all integers LE),
 * version DLOG_RECORD_VERSION; see decision_log.c for why each bound:
 *   COMMIT: u8 version, u8 type=1, u8 id_len, id, u64 unix ms, u8 n, n x u8 shard
 *   END:    u8 version, u8 type=2, u8 id_len, id
 * A record is exactly that long; a decoder finding anything else (unknown
 * version or type, bad length, bad id, n out of 1..16, shard id >= 64, a
 * repeated shard, trailing bytes) refuses it with a reason.
 */
#ifndef WM_DECISION_LOG_H
#define WM_DECISION_LOG_H

#include "wal/wal.h"

#include <stddef.h>
#include <stdint.h>

#define DLOG_RECORD_VERSION 1
#define DLOG_TXN_ID_MAX 64        /* bytes of "<router>:<order>", no NUL */
#define DLOG_ROUTER_ID_MAX 16     /* bytes of the router id part */
#define DLOG_MAX_PARTICIPANTS 16  /* shards in one transaction */
#define DLOG_SHARD_ID_LIMIT 64    /* shard ids are 0 .. 63 (SMAP_MAX_SHARDS) */
#define DLOG_RECORD_MAX (3 + DLOG_TXN_ID_MAX + 8 + 1 + DLOG_MAX_PARTICIPANTS)

#define DLOG_DEFAULT_MAX_UNENDED 65536  /* COMMITs without END held at once */
#define DLOG_DEFAULT_MAX_WAITING 65536  /* commits whose callback has not run */

enum dlog_rec_type { DLOG_REC_COMMIT = 1, DLOG_REC_END = 2 };

/* A decoded record; id is NUL-terminated. */
struct dlog_record {
	enum dlog_rec_type type;
	char id[DLOG_TXN_ID_MAX + 1];
	size_t id_len;
	uint64_t at_ms;                              /* COMMIT only */
	uint8_t n;                                   /* COMMIT only */
	uint8_t shards[DLOG_MAX_PARTICIPANTS];       /* COMMIT only */
};

/* Encode r into out (cap >= DLOG_RECORD_MAX is always enough).  Returns the
 * length, or 0 when r breaks a bound (the same checks as the decoder). */
size_t dlog_record_encode(const struct dlog_record *r, uint8_t *out, size_t cap);
/* Decode exactly len bytes.  0, or -1 with a reason in why (may be NULL). */
int dlog_record_decode(const uint8_t *p, size_t len, struct dlog_record *r, char *why, size_t whylen);

/* ---- transaction ids ------------------------------------------------------ */

/* 1 when s[0..len) is a valid transaction id: "<router>:<order>", router
 * 1..DLOG_ROUTER_ID_MAX and order >= 1 bytes of [A-Za-z0-9_-], total
 * <= DLOG_TXN_ID_MAX. */
int dlog_txn_valid(const char *s, size_t len);
/* Write "<router>:<order>" into out (cap >= DLOG_TXN_ID_MAX + 1), NUL-
 * terminated.  Returns its length, or 0 (out[0] = NUL if cap) when either
 * part is invalid or the whole would exceed DLOG_TXN_ID_MAX. */
size_t dlog_txn_format(const char *router_id, const char *order_id, char *out, size_t cap);
/* Split a valid id into pointers into s (not NUL-terminated) and lengths.
 * 0, or -1 when s is not a valid id (nothing written). */
int dlog_txn_parse(const char *s, size_t len, const char **router, size_t *router_len,
		   const char **order, size_t *order_len);

/* ---- the log -------------------------------------------------------------- */

struct dlog_config {
	const char *dir;            /* created if missing */
	enum wal_mode mode;         /* fsync for real use; write/none for tests */
	uint64_t segment_size;      /* 0 = the WAL default (64 MiB) */
	uint32_t max_unended;       /* 0 = DLOG_DEFAULT_MAX_UNENDED */
	uint32_t max_waiting;       /* 0 = DLOG_DEFAULT_MAX_WAITING */
};

enum dlog_status {
	DLOG_UNKNOWN = 0,    /* no record: abort (presumed abort), unless the caller has it in progress */
	DLOG_COMMITTING,     /* COMMIT appended, not yet durable: tell nobody yet, ask again */
	DLOG_COMMITTED,      /* COMMIT durable, no END: commit */
	DLOG_ENDED,          /* COMMIT and END in the log: commit (every participant acknowledged) */
};

#define DLOG_E_INVAL (-1)     /* a bad id or participant list */
#define DLOG_E_EXISTS (-2)    /* that transaction already has a COMMIT in the log */
#define DLOG_E_FULL (-3)      /* max_unended or max_waiting reached: nothing appended */
#define DLOG_E_STATE (-4)     /* dlog_end before the COMMIT is durable, or with no COMMIT */
#define DLOG_E_NOSPACE (-5)   /* the WAL refused: the disk is full (nothing appended) */

/* Called from dlog_poll (or dlog_close) once the COMMIT is durable; txn_id
 * is valid during the call only.  It may call dlog_commit, dlog_end,
 * dlog_lookup and dlog_prune on the same log, never dlog_close. */
typedef void (*dlog_commit_cb)(void *arg, const char *txn_id);

struct dlog;

struct dlog_stats {
	uint64_t unended;           /* COMMITs without END (COMMITTING or COMMITTED) */
	uint64_t oldest_unended_ms; /* the oldest one's COMMIT time (unix ms), 0 if none */
	uint64_t waiting;           /* commits whose callback has not run */
	uint64_t known;             /* transactions held in memory (unended + ended, not pruned) */
	uint64_t floor_lsn;         /* records at or below it were pruned and are forgotten */
	uint64_t replayed;          /* records read at open */
	int tail_cut;               /* open cut a torn tail */
	struct wal_stats wal;       /* syncs, txns, ... of the underlying WAL */
};

/*
 * Recover the log in cfg->dir and open it for appending.  Returns 0 and
 * *out, or -1 with a message in err (corruption names the file and offset
 * or the LSN and the reason; the directory is left as it was apart from a
 * torn tail being cut).
 */
int dlog_open(const struct dlog_config *cfg, struct dlog **out, char *err, size_t errlen);

/*
 * Append COMMIT(txn_id, participants[0..n)) and call cb(arg, txn_id) from a
 * later dlog_poll once it is durable (never from inside this call).  The
 * id and shards are copied.  0, or DLOG_E_INVAL / DLOG_E_EXISTS /
 * DLOG_E_FULL / DLOG_E_NOSPACE with nothing appended and no callback.
 */
int dlog_commit(struct dlog *l, const char *txn_id, const uint8_t *participants, size_t n,
		dlog_commit_cb cb, void *arg);

/* Append END(txn_id) lazily (nobody waits for it).  0 (also when it was
 * already ended: no second record), DLOG_E_STATE (no COMMIT, or the COMMIT
 * is not durable yet), DLOG_E_INVAL, DLOG_E_NOSPACE. */
int dlog_end(struct dlog *l, const char *txn_id);

/* What the log says about txn_id (see enum dlog_status). */
enum dlog_status dlog_lookup(struct dlog *l, const char *txn_id);

/* Call fn for every COMMIT without END, oldest first (re-drive at start-up).
 * fn must not call dlog_commit/dlog_end/dlog_prune on the same log.
 * Returns how many were visited. */
typedef void (*dlog_each_fn)(void *arg, const char *txn_id, const uint8_t *shards, size_t n, uint64_t at_ms);
size_t dlog_undecided(struct dlog *l, dlog_each_fn fn, void *arg);

/* The WAL's eventfd: readable when something became durable.  Watch it
 * for EPOLLIN and call dlog_poll. */
int dlog_event_fd(const struct dlog *l);
/* Drain the eventfd and run the callback of every durable COMMIT, in LSN
 * order.  Returns how many callbacks ran. */
size_t dlog_poll(struct dlog *l);

/*
 * Forget what every participant has acknowledged: records up to the LSN
 * before the oldest COMMIT whose END is not durable (or the durable LSN
 * when there is none) become the new floor (written durably first, to
 * <dir>/dlog.floor), the WAL deletes the segments that hold only such
 * records, and those transactions are dropped from memory (lookup says
 * UNKNOWN, which is safe: every participant already committed).
 * Returns the number of segments removed, or -1.
 */
int dlog_prune(struct dlog *l);

void dlog_stats(const struct dlog *l, struct dlog_stats *out);

/* Block until everything appended is durable (tests, shutdown). */
void dlog_flush(struct dlog *l);

/* Flush, run the callbacks still waiting (their COMMITs are durable after
 * the flush), close the WAL and free.  NULL is a no-op. */
void dlog_close(struct dlog *l);

#endif
