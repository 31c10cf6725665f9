/*
 * shard.h -- one shard: its tables, its WAL, its snapshots, its server.
 *
 * All state is owned by the event-loop thread.  A write is a transaction:
 * the handler validates, then builds records with txn_put()/txn_event(),
 * and txn_commit() assigns the next LSN, hands the image to the WAL thread
 * and applies the very same records to memory (through table_put, the
 * function recovery uses).  The handler's response carries that LSN and is
 * held by the server until it is durable.
 */
#ifndef WM_SHARD_H
#define WM_SHARD_H

#include <stdint.h>
#include <sys/types.h>

#include "engine/base/config.h"
#include "engine/storage/id.h"
#include "engine/base/metrics.h"
#include "engine/storage/record.h"
#include "engine/storage/table.h"
#include "net/buf.h"
#include "net/ev.h"
#include "net/server.h"
#include "wal/wal.h"

struct auth_state;
struct cluster_key;
struct shard_map;
struct repl_pub;
struct repl_sub;

#define TXN_MAX_BYTES (512u << 10) /* one transaction image; WAL frames hold 1 MiB */
/* Records of a held image searched for puts a later put of the same row
 * supersedes before it is logged (shard.c, image_drop_superseded); an
 * image with more is logged as it is. */
#define TXN_SUPERSEDE_MAX 128u
#define TXN_TYPED_MAX 32u             /* typed values one commit carries (txn_put_typed) */
#define TXN_TYPED_BYTES (16u << 10)   /* and their bytes */

/* A record of the open commit staged with its typed values (txn_put_typed):
 * the record's offset in the image and the value's in typed_vals. */
struct txn_typed {
	size_t rec_off;
	uint32_t val_off;
};

struct shard {
	struct config cfg;
	uint64_t smap_version;   /* version of the --shard-map in force (shard_main.c owns the map); 0 = none */
	/* Cluster mode (DESIGN.md 9), both NULL in a cluster of one; owned by
	 * shard_main.c.  With them, partner routes need a router's signature,
	 * /internal/ routes exist, and a request for data another shard owns
	 * is answered 421 (engine/edge/api.c). */
	const struct cluster_key *ckey;
	const struct shard_map *smap;
	/* The key of consumer tokens (engine/edge/consumer_token.h), set by
	 * shard_main.c and the router's edge; has_consumer_key 0: none, and a
	 * consumer token is refused like an unknown key. */
	uint8_t consumer_key[32];
	uint8_t has_consumer_key;
	/* The LSN of `publisher` this shard's replica has applied; set by the
	 * replication subscriber, NULL without one (engine/edge/park.c). */
	uint64_t (*repl_applied)(struct shard *sh, uint32_t publisher);
	struct table tables[REC_T_COUNT_];
	struct id_clock ids;
	uint64_t lsn;          /* last LSN assigned (== applied) */
	uint64_t state_lsn;    /* last LSN that changed what reads can see */
	struct wal *wal;
	struct buf txn;        /* image of the open transaction */
	/* The typed values of the records not yet applied (txn_put_typed), in
	 * image order; cleared when they are applied or dropped. */
	struct txn_typed typed[TXN_TYPED_MAX];
	unsigned n_typed;
	uint32_t typed_len;
	_Alignas(16) unsigned char typed_vals[TXN_TYPED_BYTES];
	int txn_open;          /* 0 closed, 1 open, 2 committed but held */
	int txn_hold;          /* txn_hold() called: the next commit waits for txn_release() */
	uint64_t held_lsn;     /* the held commit's LSN (0: none pending) */
	size_t held_len;
	unsigned held_commits; /* commits since txn_hold() */
	int disk_full;         /* writes are being refused for space (logged once per episode) */
	int nospace_in_request; /* a commit of the current request was refused for space; api.c clears it */
	struct auth_state *auth; /* runtime rate/quota/volume state (engine/edge/auth.c), not persisted */
	/* Frees auth; set by auth.c when it creates the state, so the shard
	 * (storage) closes it without knowing the edge that owns it. */
	void (*auth_free)(struct shard *sh);
	struct ev_loop *loop;
	struct srv *srv;
	struct ev_handle wal_h;
	struct ev_handle sig_h;
	struct metrics metrics;
	uint64_t started_unix_ms;
	int ready;
	/* snapshots */
	pid_t snap_pid;        /* child writing a snapshot, 0 if none */
	uint64_t snap_pending_lsn;
	uint64_t snap_last_lsn;
	uint64_t snap_last_unix_ms;
	uint64_t snap_next_due_ms;
	uint64_t snaps_taken, snaps_failed;
	uint64_t upto_lsn;     /* replay stops after this LSN (0 = all) */
	/* how each half of the last recovery went (recovery.c), for its log
	 * line: wall time, and how long the loop waited for rows (the builder
	 * was the bound) and the builder for room (the loop was); and whether
	 * the loop sized the tables from a snapshot's census hint while the
	 * file was being verified (snap_time only) */
	struct recovery_time {
		uint64_t ms, loop_wait_ms, builder_wait_ms;
		int census_hint;
	} snap_time, wal_time;
	int lock_fd;           /* flock on <data_dir>/LOCK: one process per data directory */
	unsigned snap_stall_s; /* test builds: the snapshot child sleeps this long after opening its file */
	char wal_dir[600];
	char snap_dir[600];
	/* Replication (engine/replication/, cluster mode only; NULL otherwise).
	 * `logged` is called with every transaction image as it is handed to
	 * the WAL (live commits, held ones when they are logged) and as WAL
	 * replay applies it at start-up: the publisher's buffer.  Installed by
	 * shard_open_logged, before the replay. */
	void (*logged)(struct shard *sh, uint64_t lsn, const void *img, size_t len);
	struct repl_pub *repl_pub;
	struct repl_sub *repl_sub;
};

typedef void (*shard_logged_fn)(struct shard *sh, uint64_t lsn, const void *img, size_t len);

/* How a process opens its data directory.  `tables` is the NULL-terminated
 * list of the tables it has: a shard has every resource's
 * (engine/storage/resources.h, whose wrappers below pass it); the router
 * only the few its edge needs, so it links none of the other modules.  A
 * WAL or snapshot record of a table not in the list is refused at load. */
struct shard_open_opts {
	const struct table_ops *const *tables;
	/* the replication publisher's hook and state (shard.h `logged`,
	 * `repl_pub`), installed before recovery replays the WAL so the
	 * replayed tail reaches the hook too; the shard owns neither */
	shard_logged_fn logged;
	struct repl_pub *pub;
	const char *snap_path;  /* load this snapshot (NULL: the newest valid one) */
	uint64_t upto_lsn;      /* replay stops after this LSN (0 = all) */
};

/* Open the data directory, recover (snapshot + WAL tail), start the WAL
 * writer.  Returns 0, or -1 with a message in err. */
int shard_open_with(struct shard *sh, const struct config *cfg, const struct shard_open_opts *o, char *err,
		    size_t errlen);
/* Recovery's snapshot half (engine/storage/recovery.c), into sh's
 * initialised and empty tables: the file `path`, or with path NULL the
 * newest snapshot in sh->snap_dir that verifies (snap_load_latest), its
 * rows built on a second thread and installed here in the file's order.
 * 1 loaded (*si filled), 0 no snapshot (path NULL only), or -1 with a
 * message in err (a refused record is also logged; rows already installed
 * stay: the caller gives up on the shard). */
struct snap_info;
int shard_snap_load(struct shard *sh, const char *path, struct snap_info *si, char *err, size_t errlen);
/* Recovery's WAL half (engine/storage/recovery.c): replay every
 * transaction after sh->lsn (wal_recover, with its torn-tail cut and
 * `salvage`), stopping past sh->upto_lsn when set; each transaction's
 * decode_pure rows built on a second thread, applied here in LSN order
 * (the sequence checked, sh->logged called).  wal_recover's answer: 0,
 * WAL_REPLAY_STOP, or -1 with rep->error (a refused transaction is also
 * logged). */
struct wal_recovery_report;
int shard_wal_replay(struct shard *sh, int salvage, struct wal_recovery_report *rep);
/* shard_apply with some rows already built (table_row_build_at, from
 * this very payload): built[i] for the i-th record (i < nbuilt; NULL:
 * decode it here).  Each row used is adopted and its slot set NULL; the
 * rest are the caller's to release. */
int shard_apply_built(struct shard *sh, uint64_t lsn, const void *payload, size_t len, struct row **built,
		      uint32_t nbuilt, char *why);
/* Recovery only, no WAL writer (the operator CLI: restore, counts). */
int shard_load_with(struct shard *sh, const struct config *cfg, const struct shard_open_opts *o, char *err,
		    size_t errlen);

/* The same with every resource table (defined in resources.c). */
int shard_open(struct shard *sh, const struct config *cfg, char *err, size_t errlen);
int shard_open_logged(struct shard *sh, const struct config *cfg, shard_logged_fn logged, struct repl_pub *pub,
		      char *err, size_t errlen);
int shard_load(struct shard *sh, const struct config *cfg, const char *snap_path, uint64_t upto_lsn,
	       char *err, size_t errlen);
#define WAL_REPLAY_STOP 7 /* replay callback: requested LSN reached */
/* Flush and release everything (after the server is gone). */
void shard_close(struct shard *sh);

/* ---- transactions ------------------------------------------------------ */
void txn_begin(struct shard *sh);
/* Add a row after-image (document is canonical JSON).  0 or -1 (too big). */
int txn_put(struct shard *sh, uint8_t table, const char *id, size_t id_len, const char *doc,
	    size_t doc_len);
/* txn_put with the typed values the document was written from (the
 * table's decode_typed input, table.h): applying this commit builds the
 * row from them instead of parsing the document.  The values are copied
 * (typed_size bytes).  Past TXN_TYPED_MAX / TXN_TYPED_BYTES, or for a table
 * without decode_typed, the record is staged as by txn_put (the row is
 * then decoded from its document: the same row, only slower). */
int txn_put_typed(struct shard *sh, uint8_t table, const char *id, size_t id_len, const char *doc,
		  size_t doc_len, const void *typed);
int txn_del(struct shard *sh, uint8_t table, const char *id, size_t id_len);
/*
 * Append an event in the same transaction: `type` e.g. "partner.created",
 * `scope_entity` the entity the event belongs to (NULL for platform-wide),
 * `payload` a JSON value (typically the row document).
 */
int txn_event(struct shard *sh, const char *type, const char *scope_entity, const char *payload,
	      size_t payload_len);
/* Commit: returns the LSN (> 0), or 0 if the transaction was rejected
 * (too large) -- then nothing was applied. */
uint64_t txn_commit(struct shard *sh);
/* Commit records that readers never wait for (read audit): like
 * txn_commit, but the shard's state LSN does not move, so later reads are
 * not held for this record's fsync. */
uint64_t txn_commit_quiet(struct shard *sh);
/* Commit a transaction applied as a subscriber (engine/replication/):
 * like txn_commit, but its image may exceed TXN_MAX_BYTES by the position
 * row it carries (TXN_REPLICA_SLACK), since the publisher's transaction it
 * copies may itself be TXN_MAX_BYTES long. */
#define TXN_REPLICA_SLACK 512u
uint64_t txn_commit_replica(struct shard *sh);
void txn_abort(struct shard *sh);

/*
 * Held transactions (one WAL transaction per request): after txn_hold(),
 * the first txn_commit() reserves the WAL space of a maximal transaction,
 * assigns the LSN and applies the records to memory but does not hand them
 * to the WAL yet; it stays "held" (txn_open == 2).  A later txn_begin() of
 * the same request keeps the held records in front, and its txn_commit()
 * applies the new records at the SAME LSN and joins them to the held image
 * (txn_abort() then drops only the new records).  When the request ends,
 * more records may be added with txn_put() (the stored response), and
 * txn_release() applies those and logs the whole image as ONE transaction
 * at its LSN.  So a request that commits several times (the order saga,
 * cancel and its compensation, fulfil) costs one WAL transaction, a crash
 * keeps all of its commits or none (its response was never sent), and the
 * stored response travels with them.  Recovery replays the one image:
 * the same records applied in the same order, so memory after a restart is
 * what the live commits built.  A joined commit that would take the image
 * past TXN_MAX_BYTES logs the held image first and becomes the held one at
 * the next LSN.  Nothing else may run in between (the loop is
 * single-threaded; the request is the unit).  txn_flush_held() logs the
 * held image now (the crash points of the tests: what a crash there keeps).
 * txn_release() returns the LSN it logged, or 0 if nothing was held (no
 * commit, or every commit refused).  engine/edge/dispatch.c holds every
 * write request.
 */
void txn_hold(struct shard *sh);
uint64_t txn_release(struct shard *sh);
/* Log the held image now (no-op when none is pending); see above. */
void txn_flush_held(struct shard *sh);

/*
 * A full disk (wal.c, "Running out of space").  A write request is refused
 * up front (507) while the WAL is low on space and cannot promise
 * SHARD_WRITE_HEADROOM bytes: shard_write_admit() returns -1 then.  A
 * commit the WAL refuses all the same is not applied (txn_commit returns
 * 0) and calls shard_note_nospace(): sets nospace_in_request (api.c turns
 * the response into a 507) and logs the episode once, naming the data
 * directory.  shard_space_poll() (the tick) logs the end of the episode.
 */
#define SHARD_WRITE_HEADROOM TXN_MAX_BYTES
int shard_write_admit(struct shard *sh);
void shard_note_nospace(struct shard *sh);
void shard_space_poll(struct shard *sh);

/* Apply a transaction image (used by commit and by WAL replay). */
int shard_apply(struct shard *sh, uint64_t lsn, const void *payload, size_t len, char *why);

#define SNAP_TEST_STALL_S 60u     /* errinj snapshot_child_stall */

/* Take a snapshot now (forks).  0 started, 1 one is already running, -1
 * failed.  The child dies with this process and holds none of its
 * descriptors (the data directory's LOCK above all): see shard.c. */
int shard_snapshot_start(struct shard *sh);
/* Reap a finished snapshot child, prune retention.  Called from the tick. */
void shard_snapshot_poll(struct shard *sh);
/* Write a snapshot synchronously in this process (CLI, tests). */
int shard_snapshot_write(struct shard *sh, char *err, size_t errlen);
/* A snapshot's hint (snapshot.h snap_writer_hint): the census of sh's
 * tables, rows per table, as engine/storage/recovery.c reads it back.
 * Its length (<= SNAP_MAX_HINT), or 0 when cap is too small. */
size_t shard_census_hint(const struct shard *sh, uint8_t *out, size_t cap);

#endif
