/*
 * shard.c -- the shard's state machine: open + recover, transactions, apply,
 * snapshots.  (The HTTP side lives in api.c and the resource files.)
 *
 * Recovery is "newest valid snapshot, then the WAL tail": the snapshot's
 * records are PUTs installed with table_put, and every WAL transaction
 * above the snapshot's LSN is replayed through shard_apply -- the same
 * function txn_commit uses on the live path.  There is no second code path
 * that could interpret a record differently after a crash.
 *
 * Snapshots fork(): the child sees a copy-on-write image of memory frozen at
 * the fork, walks every table in id order and writes PUT records, while the
 * parent keeps serving writes.  Before forking, the parent waits for the WAL
 * to make everything applied durable, so the snapshot's LSN is never ahead
 * of the log (a snapshot never contains a write the log could lose, and the
 * log never has a gap below a snapshot).  The child must never outlive the
 * shard nor hold what a restart needs (snapshot_child_detach): it dies
 * with its parent and closes every inherited descriptor, the data
 * directory's LOCK above all; a snapshot it leaves half-written is a temp
 * file that the next start-up removes (with the LOCK held, no writer of
 * ours can be alive).
 *
 * Held transactions (idempotency, shard.h): a request may commit any
 * number of times; each commit logs the held one before it, and the
 * stored response joins the last.
 *
 * A full disk (shard.h, wal.c "Running out of space"): a transaction the
 * WAL refuses is refused before it is applied, so memory never shows
 * what the log does not hold; write requests are refused up front with
 * 507 while the WAL cannot promise SHARD_WRITE_HEADROOM; reads go on.
 */
#include "engine/storage/shard.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wal/errinj.h"
#include "engine/base/log.h"
#include "engine/storage/events.h"
#include "net/jsonw.h"
#include "snapshot/snapshot.h"

/* ---- open / recover ---------------------------------------------------- */

static int mkdir_p(const char *path)
{
	char tmp[600];
	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p == '/') {
			*p = 0;
			if (mkdir(tmp, 0755) && errno != EEXIST)
				return -1;
			*p = '/';
		}
	}
	return mkdir(tmp, 0755) && errno != EEXIST ? -1 : 0;
}

static void log_temp_removed(void *ctx, const char *path)
{
	(void)ctx;
	log_warn("msg=\"half-written snapshot removed\" file=%s", path);
}

/* Every table's table_ops.loaded, in table order: the load is over. */
static void tables_loaded(struct shard *sh)
{
	for (int i = 0; i < REC_T_COUNT_; i++)
		if (sh->tables[i].ops && sh->tables[i].ops->loaded)
			sh->tables[i].ops->loaded(&sh->tables[i]);
}

int shard_load_with(struct shard *sh, const struct config *cfg, const struct shard_open_opts *o, char *err,
		    size_t errlen)
{
	memset(sh, 0, sizeof(*sh));
	sh->logged = o->logged;
	sh->repl_pub = o->pub;
	const char *snap_path = o->snap_path;
	uint64_t upto_lsn = o->upto_lsn;
	sh->cfg = *cfg;
	id_clock_init(&sh->ids);
	buf_init(&sh->txn, 2 * TXN_MAX_BYTES + 4096); /* a held image and one more transaction */
	sh->started_unix_ms = wall_ms();
	snprintf(sh->wal_dir, sizeof(sh->wal_dir), "%s/wal", cfg->data_dir);
	snprintf(sh->snap_dir, sizeof(sh->snap_dir), "%s/snap", cfg->data_dir);
	if (mkdir_p(cfg->data_dir) || mkdir_p(sh->wal_dir) || mkdir_p(sh->snap_dir)) {
		snprintf(err, errlen, "cannot create data directory %s: %s", cfg->data_dir, strerror(errno));
		return -1;
	}
	char lock_path[700];
	snprintf(lock_path, sizeof(lock_path), "%s/LOCK", cfg->data_dir);
	sh->lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (sh->lock_fd < 0 || flock(sh->lock_fd, LOCK_EX | LOCK_NB)) {
		snprintf(err, errlen, "data directory %s is in use by another process (lock %s): %s",
			 cfg->data_dir, lock_path, strerror(errno));
		if (sh->lock_fd >= 0)
			close(sh->lock_fd);
		sh->lock_fd = -1;
		return -1;
	}
	/* We hold the LOCK, so no writer of ours is alive: every temp snapshot
	 * is a half-written one left by a crash (or by a snapshot child dying
	 * with its killed shard). */
	if (snap_remove_temps(sh->snap_dir, log_temp_removed, NULL) < 0)
		log_warn("msg=\"cannot list the snapshot directory\" dir=%s error=\"%s\"", sh->snap_dir, strerror(errno));
	for (size_t i = 0; o->tables[i]; i++) {
		const struct table_ops *ops = o->tables[i];
		if (table_init(&sh->tables[ops->rec_table], ops, &sh->cfg)) {
			snprintf(err, errlen, "cannot initialise table %s", ops->name);
			return -1;
		}
		sh->tables[ops->rec_table].siblings = sh->tables;
	}
	sh->upto_lsn = upto_lsn;
	/* The newest snapshot that verifies, verified once (an invalid newer one
	 * is skipped with a line on stderr), its tables sized from the
	 * verifying pass's count, then its records installed. */
	struct snap_info si;
	memset(&si, 0, sizeof(si));
	char serr[512];
	int found = shard_snap_load(sh, snap_path, &si, serr, sizeof(serr));
	if (found < 0) {
		snprintf(err, errlen, snap_path ? "snapshot %s failed to load: %s" : "snapshot in %s failed to load: %s",
			 snap_path ? snap_path : sh->snap_dir, serr);
		return -1;
	}
	if (found) {
		sh->lsn = si.lsn;
		sh->snap_last_lsn = si.lsn;
		sh->snap_last_unix_ms = si.created_unix_ms;
		log_info("msg=\"snapshot loaded\" file=%s lsn=%llu records=%llu ms=%llu loop_wait_ms=%llu "
			 "builder_wait_ms=%llu census_hint=%d",
			 si.path, (unsigned long long)si.lsn, (unsigned long long)si.records,
			 (unsigned long long)sh->snap_time.ms, (unsigned long long)sh->snap_time.loop_wait_ms,
			 (unsigned long long)sh->snap_time.builder_wait_ms, sh->snap_time.census_hint);
	}
	struct wal_recovery_report rep;
	memset(&rep, 0, sizeof(rep));
	int rc = shard_wal_replay(sh, (int)cfg->salvage, &rep);
	if (rc == WAL_REPLAY_STOP && upto_lsn) {
		log_info("msg=\"recovered up to the requested LSN\" lsn=%llu", (unsigned long long)sh->lsn);
		sh->state_lsn = sh->lsn;
		tables_loaded(sh);
		return 0;
	}
	if (rc) {
		snprintf(err, errlen, "WAL recovery refused: %s%s", rep.error[0] ? rep.error : "replay failed",
			 cfg->salvage ? "" : " (start with --salvage 1 to keep the valid prefix and drop the rest)");
		return -1;
	}
	if (rep.tail_cut)
		log_warn("msg=\"WAL torn tail cut\" file=%s offset=%llu bytes=%llu action=\"none needed: "
			 "unacknowledged writes were discarded\"",
			 rep.tail_file, (unsigned long long)rep.tail_offset, (unsigned long long)rep.tail_bytes);
	if (rep.last_lsn > sh->lsn && !upto_lsn)
		sh->lsn = rep.last_lsn;
	sh->state_lsn = sh->lsn;
	log_info("msg=\"recovered\" lsn=%llu wal_txns_replayed=%llu wal_segments=%u wal_ms=%llu loop_wait_ms=%llu "
		 "builder_wait_ms=%llu",
		 (unsigned long long)sh->lsn, (unsigned long long)rep.txns_replayed, rep.segments,
		 (unsigned long long)sh->wal_time.ms, (unsigned long long)sh->wal_time.loop_wait_ms,
		 (unsigned long long)sh->wal_time.builder_wait_ms);
	tables_loaded(sh);
	return 0;
}

int shard_open_with(struct shard *sh, const struct config *cfg, const struct shard_open_opts *o, char *err,
		    size_t errlen)
{
	if (shard_load_with(sh, cfg, o, err, errlen))
		return -1;
	enum wal_mode mode = !strcmp(cfg->wal_mode, "none")	 ? WAL_MODE_NONE
			     : !strcmp(cfg->wal_mode, "write") ? WAL_MODE_WRITE
							       : WAL_MODE_FSYNC;
	struct wal_config wc = {.dir = sh->wal_dir, .mode = mode,
				.segment_size = cfg->wal_segment_mb << 20};
	sh->wal = wal_open(&wc, sh->lsn + 1, err, errlen);
	if (!sh->wal)
		return -1;
	return 0;
}

void shard_close(struct shard *sh)
{
	if (sh->snap_pid > 0) {
		int st;
		waitpid(sh->snap_pid, &st, 0);
		sh->snap_pid = 0;
	}
	wal_close(sh->wal);
	sh->wal = NULL;
	for (int i = 0; i < REC_T_COUNT_; i++)
		table_fini(&sh->tables[i]);
	if (sh->auth_free)
		sh->auth_free(sh);
	buf_free(&sh->txn);
	if (sh->lock_fd > 0)
		close(sh->lock_fd);
	sh->lock_fd = -1;
}

/* ---- transactions ------------------------------------------------------ */

static int apply_records(struct shard *sh, uint64_t lsn, const void *payload, size_t len, int live, size_t base,
			 struct row **built, uint32_t nbuilt, char *why);

/* Forget the typed values of records not applied. */
static void typed_clear(struct shard *sh)
{
	sh->n_typed = 0;
	sh->typed_len = 0;
}

/* Forget the open image, held records included. */
static void txn_reset(struct shard *sh)
{
	typed_clear(sh);
	buf_reset(&sh->txn);
	sh->txn_open = 0;
}

void txn_begin(struct shard *sh)
{
	if (sh->txn_open == 2) {
		/* A held request commits again: the new records follow the held
		 * ones in the same image and are logged with them, as one
		 * transaction at the held LSN (shard.h, "Held transactions"). */
		assert(sh->txn.len == sh->held_len);
		sh->txn_open = 1;
		return;
	}
	txn_reset(sh);
	sh->txn_open = 1;
}

int txn_put(struct shard *sh, uint8_t table, const char *id, size_t id_len, const char *doc,
	    size_t doc_len)
{
	return rec_encode(&sh->txn, REC_PUT, table, 1, id, id_len, doc, doc_len);
}

int txn_put_typed(struct shard *sh, uint8_t table, const char *id, size_t id_len, const char *doc,
		  size_t doc_len, const void *typed)
{
	size_t at = sh->txn.len;
	if (txn_put(sh, table, id, id_len, doc, doc_len))
		return -1;
	const struct table_ops *ops = table < REC_T_COUNT_ ? sh->tables[table].ops : NULL;
	if (!ops || !ops->decode_typed || sh->n_typed == TXN_TYPED_MAX)
		return 0;
	uint32_t off = (sh->typed_len + 15u) & ~15u; /* each value 16-aligned */
	if (off > TXN_TYPED_BYTES || ops->typed_size > TXN_TYPED_BYTES - off)
		return 0;
	memcpy(sh->typed_vals + off, typed, ops->typed_size);
	sh->typed[sh->n_typed++] = (struct txn_typed){.rec_off = at, .val_off = off};
	sh->typed_len = off + (uint32_t)ops->typed_size;
	return 0;
}

int txn_del(struct shard *sh, uint8_t table, const char *id, size_t id_len)
{
	return rec_encode(&sh->txn, REC_DEL, table, 1, id, id_len, "", 0);
}

int txn_event(struct shard *sh, const char *type, const char *scope_entity, const char *payload,
	      size_t payload_len)
{
	char id[ID_MAX_LEN], ts[32];
	size_t il = id_new(&sh->ids, "evt", id);
	fmt_rfc3339_ms(ts, wall_ms());
	/* {"id":..,"type":..,"occurred_at":..,"scope":{"entity_id":..|null},"payload":..},
	 * appended as it is written: the writer's member bookkeeping was ~1,000
	 * instructions an event, eight events an order */
	struct buf doc;
	buf_init_hint(&doc, REC_MAX_VAL, BUF_DOC_HINT);
	int bad = BUF_LIT(&doc, "{\"id\":") || jw_escape(&doc, id, il) || BUF_LIT(&doc, ",\"type\":") ||
		  jb_str(&doc, type) || BUF_LIT(&doc, ",\"occurred_at\":") || jb_str(&doc, ts) ||
		  BUF_LIT(&doc, ",\"scope\":{\"entity_id\":") || jb_str_or_null(&doc, scope_entity) ||
		  BUF_LIT(&doc, "},\"payload\":") || buf_append(&doc, payload, payload_len) || buf_putc(&doc, '}');
	struct event_vals v = {0};
	int typed = !typed_str(v.type, sizeof(v.type), type) &&
		    !typed_str(v.entity, sizeof(v.entity), scope_entity ? scope_entity : "");
	int rc = bad ? -1
		 : typed ? txn_put_typed(sh, REC_T_EVENT, id, il, doc.data, doc.len, &v)
			 : txn_put(sh, REC_T_EVENT, id, il, doc.data, doc.len);
	buf_free(&doc);
	return rc;
}

void txn_abort(struct shard *sh)
{
	if (sh->txn_open == 1 && sh->held_lsn) {
		/* begun after a held commit: drop its records, keep the held ones */
		sh->txn.len = sh->held_len;
		sh->txn.overflow = 0;
		sh->txn_open = 2;
		typed_clear(sh);
		return;
	}
	txn_reset(sh);
}

/* Apply the image's records from byte `from` on at lsn.  They are in the
 * WAL already (or will be, held): memory must follow it or we would
 * diverge from what recovery rebuilds, so a failure is a bug and stops. */
static void apply_or_die(struct shard *sh, uint64_t lsn, size_t from)
{
	char why[128];
	if (apply_records(sh, lsn, sh->txn.data + from, sh->txn.len - from, 1, from, NULL, 0, why)) {
		log_error("msg=\"committed transaction failed to apply\" lsn=%llu why=\"%s\"",
			  (unsigned long long)lsn, why);
		abort();
	}
	typed_clear(sh);
}

/*
 * Drop from img[0..len) every put that a later put of the same row (table
 * and key) in the same image supersedes, moving the records kept to the
 * front in their order; returns the new length (len when nothing goes, or
 * when the image has more than TXN_SUPERSEDE_MAX records or does not
 * decode: it is then logged as it is).
 *
 * Why.  A held image gathers every commit of one request at one LSN, and a
 * request that moves a row through several states puts it several times:
 * an order's state five times, its hold and its stock level twice (~1.5 KB
 * of the ~14 KB an order logs).  The WAL thread compressed and checksummed
 * them, the log kept them and replay applied them, though only the last
 * version of each row survives the transaction.  Memory applied every
 * version already (each commit as it came); what is logged only has to
 * rebuild the state at the end of the transaction, and a put is a whole
 * after-image, applied to its own row: its table's decode and indexes see
 * the row, not its history (table.h), and the id clock and a table's trim
 * see the same keys and the same count of rows either way.
 * A put followed by a delete of its row is kept as it is (put, delete,
 * put keeps all three): only a put whose next record of the same row is
 * a put goes, so every delete still finds what it found before.
 * The bound keeps the pairwise search (n^2 / 2 key comparisons) small; an
 * order's image has ~21 records.
 */
static size_t image_drop_superseded(char *img, size_t len)
{
	struct held_rec {
		size_t at, n;
		const char *key;
		uint16_t key_len;
		uint8_t op, table, drop;
	} r[TXN_SUPERSEDE_MAX];
	unsigned n = 0, ndrop = 0;
	size_t off = 0;
	struct rec_view rv;
	int rc;
	for (size_t at = 0; (rc = rec_decode((const uint8_t *)img, len, &off, &rv)) == 1; at = off) {
		if (n == TXN_SUPERSEDE_MAX)
			return len;
		r[n++] = (struct held_rec){.at = at, .n = off - at, .key = rv.key, .key_len = rv.key_len,
					   .op = rv.op, .table = rv.table};
	}
	if (rc < 0)
		return len;
	for (unsigned i = 0; i < n; i++) {
		if (r[i].op != REC_PUT)
			continue;
		for (unsigned j = i + 1; j < n; j++)
			if (r[j].table == r[i].table && r[j].key_len == r[i].key_len &&
			    !memcmp(r[j].key, r[i].key, r[i].key_len)) {
				if (r[j].op == REC_PUT) {
					r[i].drop = 1;
					ndrop++;
				}
				break;
			}
	}
	if (!ndrop)
		return len;
	size_t w = 0;
	for (unsigned i = 0; i < n; i++) {
		if (r[i].drop)
			continue;
		if (w != r[i].at)
			memmove(img + w, img + r[i].at, r[i].n);
		w += r[i].n;
	}
	return w;
}

/* Hand data[0..len) of the image to the WAL as transaction lsn, under the
 * reservation of a maximal transaction its first held commit made, without
 * the puts a later put of the same row supersedes (image_drop_superseded:
 * data[0..len) is reordered in place, so the image's first len bytes are
 * spent: every caller drops them next).  Only a bug can make that fail
 * (the space was reserved, the LSN is the next one): memory already shows
 * it, so stop. */
static void held_log(struct shard *sh, uint64_t lsn, size_t len)
{
	len = image_drop_superseded(sh->txn.data, len);
	if (wal_append_reserved(sh->wal, lsn, sh->txn.data, len, TXN_MAX_BYTES)) {
		log_error("msg=\"held transaction could not be logged\" lsn=%llu bytes=%zu",
			  (unsigned long long)lsn, len);
		abort();
	}
	if (sh->logged)
		sh->logged(sh, lsn, sh->txn.data, len);
}

/* A commit after a held one: its records, data[held_len..len), join the
 * held image at the held LSN, and the LSN is returned.  When both together
 * would exceed max_len, the held image is logged on its own first and 0 is
 * returned with the image holding only the new records: the caller then
 * commits them as a first held commit at the next LSN. */
static uint64_t join_held(struct shard *sh, int changes_state, size_t max_len)
{
	size_t from = sh->held_len, add = sh->txn.len - from;
	if (sh->txn.len <= max_len) {
		apply_or_die(sh, sh->held_lsn, from);
		if (changes_state)
			sh->state_lsn = sh->held_lsn;
		sh->held_len = sh->txn.len;
		sh->held_commits++;
		sh->txn_open = 2;
		return sh->held_lsn;
	}
	held_log(sh, sh->held_lsn, from);
	memmove(sh->txn.data, sh->txn.data + from, add);
	sh->txn.len = add;
	for (unsigned i = 0; i < sh->n_typed; i++)
		sh->typed[i].rec_off -= from; /* the new records moved to the front */
	sh->held_lsn = 0;
	sh->held_len = 0;
	return 0;
}

/* Assign the next LSN, hand the image to the WAL (unless held) and apply
 * it; a commit after a held one joins it (join_held). */
static uint64_t txn_commit_as(struct shard *sh, int changes_state, size_t max_len)
{
	size_t from = sh->held_lsn ? sh->held_len : 0; /* held records in front (txn_begin) */
	if (sh->txn_open != 1 || sh->txn.len == from || sh->txn.overflow || sh->txn.len - from > max_len) {
		txn_abort(sh);
		return 0;
	}
	if (from) {
		uint64_t joined = join_held(sh, changes_state, max_len);
		if (joined)
			return joined;
	}
	uint64_t lsn = sh->lsn + 1;
	/* Logged before it is applied, or (held) its log space reserved before
	 * it is applied: a transaction the WAL refuses (full disk) never
	 * existed. */
	int rc = sh->txn_hold ? wal_reserve(sh->wal, TXN_MAX_BYTES)
			      : wal_append(sh->wal, lsn, sh->txn.data, sh->txn.len);
	if (rc) {
		if (rc == WAL_E_NOSPACE)
			shard_note_nospace(sh);
		txn_reset(sh);
		return 0;
	}
	apply_or_die(sh, lsn, 0);
	if (changes_state)
		sh->state_lsn = lsn;
	if (sh->txn_hold) {
		sh->held_lsn = lsn;
		sh->held_len = sh->txn.len;
		sh->held_commits++;
		sh->txn_open = 2; /* held: txn_put may append, txn_begin joins, txn_release finishes */
		return lsn;
	}
	if (sh->logged)
		sh->logged(sh, lsn, sh->txn.data, sh->txn.len);
	txn_reset(sh);
	return lsn;
}

void txn_flush_held(struct shard *sh)
{
	if (sh->txn_open != 2)
		return;
	held_log(sh, sh->held_lsn, sh->held_len);
	sh->held_lsn = 0;
	sh->held_len = 0;
	txn_reset(sh);
}

uint64_t txn_commit(struct shard *sh) { return txn_commit_as(sh, 1, TXN_MAX_BYTES); }

uint64_t txn_commit_quiet(struct shard *sh) { return txn_commit_as(sh, 0, TXN_MAX_BYTES); }

uint64_t txn_commit_replica(struct shard *sh) { return txn_commit_as(sh, 1, TXN_MAX_BYTES + TXN_REPLICA_SLACK); }

void txn_hold(struct shard *sh)
{
	if (sh->txn_hold || sh->txn_open) {
		/* a request left a transaction behind: a bug, but not one to take
		 * the shard down for -- log what is pending and go on */
		log_error("msg=\"txn_hold inside a transaction\" open=%d hold=%d", sh->txn_open, sh->txn_hold);
		if (sh->txn_open == 1)
			txn_abort(sh);
		txn_flush_held(sh);
	}
	sh->txn_hold = 1;
	sh->held_lsn = 0;
	sh->held_len = 0;
	sh->held_commits = 0;
}

uint64_t txn_release(struct shard *sh)
{
	if (sh->txn_open == 1)
		txn_abort(sh); /* a transaction left open: drop it, keep what is held */
	uint64_t lsn = sh->held_lsn;
	sh->txn_hold = 0;
	sh->held_lsn = 0;
	if (sh->txn_open != 2) {
		txn_reset(sh);
		return 0;
	}
	if (sh->txn.overflow || sh->txn.len > TXN_MAX_BYTES) {
		/* What was added after the commit does not fit: keep the commit. */
		log_warn("msg=\"records added to a held transaction dropped: too large\" lsn=%llu bytes=%zu",
			 (unsigned long long)lsn, sh->txn.len);
		sh->txn.len = sh->held_len;
		sh->txn.overflow = 0;
	}
	if (sh->txn.len > sh->held_len)
		apply_or_die(sh, lsn, sh->held_len);
	held_log(sh, lsn, sh->txn.len);
	txn_reset(sh);
	return lsn;
}

/* ---- a full disk ------------------------------------------------------- */

void shard_note_nospace(struct shard *sh)
{
	sh->nospace_in_request = 1;
	if (!sh->disk_full) {
		sh->disk_full = 1;
		log_error("msg=\"disk full: writes refused (507), reads go on\" data_dir=%s wal_dir=%s "
			  "action=\"free space on the file system of the data directory; writes resume by "
			  "themselves\"", sh->cfg.data_dir, sh->wal_dir);
	}
}

int shard_write_admit(struct shard *sh)
{
	if (!sh->wal)
		return 0;
	int st = wal_space(sh->wal, SHARD_WRITE_HEADROOM, NULL);
	if (st == 2) {
		shard_note_nospace(sh);
		return -1;
	}
	if (st == 0 && sh->disk_full)
		shard_space_poll(sh);
	return 0;
}

void shard_space_poll(struct shard *sh)
{
	if (!sh->disk_full || !sh->wal || wal_space(sh->wal, SHARD_WRITE_HEADROOM, NULL) == 2)
		return;
	sh->disk_full = 0;
	log_info("msg=\"disk space returned: writes accepted again\" data_dir=%s", sh->cfg.data_dir);
}

/* Before applying a transaction: prefetch the id-index slot of every row
 * it writes.  A commit writes rows of many tables (an order: its body,
 * state, holds, ledger, events), most of them new ids in hash indexes far
 * bigger than the cache, so each install began with a cache miss of its
 * own (perf record of orders at -c16: ~4 % of the shard's samples in that
 * probe); started together, the misses overlap.  Reads the records'
 * headers only; a malformed tail is apply_records' to refuse. */
static void prefetch_ids(struct shard *sh, const void *payload, size_t len)
{
	size_t off = 0;
	struct rec_view rv;
	while (rec_decode(payload, len, &off, &rv) == 1)
		if (sh->tables[rv.table].ops)
			hidx_prefetch(&sh->tables[rv.table].by_id, rv.key, rv.key_len);
}

/* shard_apply; live: the records are this process's own commit (or a
 * replica's, checked by table_check), so tables may decode them with
 * their key lists (table_put_live). */
static int apply_records(struct shard *sh, uint64_t lsn, const void *payload, size_t len, int live, size_t base,
			 struct row **built, uint32_t nbuilt, char *why)
{
	size_t off = 0;
	struct rec_view rv;
	int r;
	uint32_t ri = 0; /* the record's index, for built[] */
	/* live: payload is the open image from byte `base` on, and the typed
	 * values staged for its records (txn_put_typed) are in sh->typed */
	unsigned ti = 0, tn = live ? sh->n_typed : 0;
	while (ti < tn && sh->typed[ti].rec_off < base)
		ti++;
	prefetch_ids(sh, payload, len);
	for (size_t at = 0; (r = rec_decode(payload, len, &off, &rv)) == 1; at = off, ri++) {
		struct table *t = &sh->tables[rv.table];
		if (!t->ops) {
			snprintf(why, 128, "record for unknown table %u", rv.table);
			return -1;
		}
		const void *typed = NULL;
		if (ti < tn && sh->typed[ti].rec_off == base + at)
			typed = sh->typed_vals + sh->typed[ti++].val_off;
		if (rv.op != REC_PUT) {
			table_del(t, rv.key, rv.key_len, lsn);
			continue;
		}
		struct row *pre = built && ri < nbuilt ? built[ri] : NULL;
		if (pre) { /* built off the loop from this very record (recovery.c) */
			struct row *own = table_row_adopt(t, pre);
			if (!own) {
				snprintf(why, 128, "out of memory");
				return -1;
			}
			built[ri] = NULL; /* what it owned is own's now */
			table_row_install(t, own);
		} else if (typed ? table_put_typed(t, rv.key, rv.key_len, rv.val, rv.val_len, lsn, typed, why)
				 : (live ? table_put_live : table_put)(t, rv.key, rv.key_len, rv.val, rv.val_len, lsn, why)) {
			return -1;
		}
		if (t->ops->trim)
			t->ops->trim(t);
		id_observe(&sh->ids, rv.key, rv.key_len);
	}
	if (r < 0) {
		snprintf(why, 128, "malformed record at offset %zu", off);
		return -1;
	}
	sh->lsn = lsn;
	return 0;
}

int shard_apply(struct shard *sh, uint64_t lsn, const void *payload, size_t len, char *why)
{
	return apply_records(sh, lsn, payload, len, 0, 0, NULL, 0, why);
}

int shard_apply_built(struct shard *sh, uint64_t lsn, const void *payload, size_t len, struct row **built,
		      uint32_t nbuilt, char *why)
{
	return apply_records(sh, lsn, payload, len, 0, 0, built, nbuilt, why);
}

/* ---- snapshots --------------------------------------------------------- */

/*
 * First thing in a snapshot child: it must never outlive its shard nor hold
 * anything a restarted shard needs.  PR_SET_PDEATHSIG kills it when the
 * parent dies (kill -9 included), and the getppid() check closes the race
 * of a parent that died before the prctl.  Every inherited descriptor
 * above stderr is closed: the data directory's LOCK (an flock belongs to
 * the open file, shared with the child: a child holding it refused the
 * restart with "in use"), the listening socket, client connections, WAL
 * segments.  The child opens what it writes itself.
 */
static void snapshot_child_detach(pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
		_exit(3);
	close_range(3, ~0U, 0);
}

/* The snapshot record of row r of table t into rec (reset first): with
 * the row's image when the table writes images (record.h, REC_V_IMAGE),
 * else its document alone.  A row that keeps no document (table.h render)
 * has an image and no document in its record.  0, or -1 (bound). */
static int snap_record_of(const struct table *t, uint8_t table, const struct row *r, struct buf *rec,
			  struct buf *img)
{
	buf_reset(rec);
	if (!t->ops->image)
		return rec_encode(rec, REC_PUT, table, REC_V_DOC, r->id, r->id_len, r->doc, r->doc_len);
	buf_reset(img);
	return t->ops->image(r, img) ||
	       rec_encode_image(rec, table, r->id, r->id_len, r->doc ? r->doc : "", r->doc_len, img->data, img->len);
}

/* Walk every table and write a snapshot at sh->lsn (runs in the child). */
int shard_snapshot_write(struct shard *sh, char *err, size_t errlen)
{
	struct snap_writer *w = snap_writer_open(sh->snap_dir, sh->lsn, err, errlen);
	if (!w)
		return -1;
	if (sh->snap_stall_s) /* test builds: a snapshot that takes a while (errinj snapshot_child_stall) */
		sleep(sh->snap_stall_s);
	uint8_t census[SNAP_MAX_HINT];
	size_t cl = shard_census_hint(sh, census, sizeof(census));
	if (!cl || snap_writer_hint(w, census, cl)) {
		snprintf(err, errlen, "snapshot census hint failed");
		snap_writer_abort(w);
		return -1;
	}
	struct buf rec, img;
	buf_init(&rec, SNAP_MAX_RECORD);
	buf_init(&img, SNAP_MAX_RECORD);
	for (int i = 0; i < REC_T_COUNT_; i++) {
		struct table *t = &sh->tables[i];
		if (!t->ops)
			continue;
		struct oidx_iter it;
		for (int ok = oidx_seek_ge(&t->by_order, NULL, 0, &it); ok; ok = oidx_next(&it)) {
			const struct row *r = oidx_iter_val(&it);
			if (snap_record_of(t, (uint8_t)i, r, &rec, &img) || snap_writer_add(w, rec.data, rec.len)) {
				snprintf(err, errlen, "snapshot record for %s %s failed", t->ops->name, r->id);
				buf_free(&rec);
				buf_free(&img);
				snap_writer_abort(w);
				return -1;
			}
		}
	}
	buf_free(&rec);
	buf_free(&img);
	return snap_writer_commit(w, err, errlen);
}

int shard_snapshot_start(struct shard *sh)
{
	if (sh->snap_pid > 0)
		return 1;
	if (sh->wal && wal_space(sh->wal, 0, NULL) != 0) {
		/* low on space: the snapshot would fail for it, and wal_flush could
		 * wait on a rotation that waits for space, blocking every read */
		log_warn("msg=\"snapshot skipped: the disk is full\" data_dir=%s", sh->cfg.data_dir);
		sh->snaps_failed++;
		return -1;
	}
	wal_flush(sh->wal); /* snapshot LSN must never be ahead of the durable log */
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		log_error("msg=\"snapshot fork failed\" error=\"%s\"", strerror(errno));
		sh->snaps_failed++;
		return -1;
	}
	if (pid == 0) {
		char err[256];
		signal(SIGTERM, SIG_DFL);
		snapshot_child_detach(parent);
		if (ERRINJ("snapshot_child_stall"))
			sh->snap_stall_s = SNAP_TEST_STALL_S;
		int rc = shard_snapshot_write(sh, err, sizeof(err));
		if (rc)
			log_error("msg=\"snapshot failed\" error=\"%s\"", err);
		_exit(rc ? 1 : 0);
	}
	sh->snap_pid = pid;
	sh->snap_pending_lsn = sh->lsn;
	log_info("msg=\"snapshot started\" lsn=%llu pid=%d", (unsigned long long)sh->lsn, (int)pid);
	return 0;
}

void shard_snapshot_poll(struct shard *sh)
{
	if (sh->snap_pid <= 0)
		return;
	int st;
	pid_t r = waitpid(sh->snap_pid, &st, WNOHANG);
	if (r == 0)
		return;
	sh->snap_pid = 0;
	if (r < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		sh->snaps_failed++;
		log_error("msg=\"snapshot child failed\" status=%d action=\"check disk space and the "
			  "data directory; the WAL still holds everything\"", st);
		return;
	}
	sh->snaps_taken++;
	sh->snap_last_lsn = sh->snap_pending_lsn;
	sh->snap_last_unix_ms = wall_ms();
	uint64_t oldest = snap_prune(sh->snap_dir, (unsigned)sh->cfg.snapshot_keep);
	int pruned = oldest ? wal_prune(sh->wal_dir, oldest) : 0;
	log_info("msg=\"snapshot done\" lsn=%llu wal_segments_pruned=%d",
		 (unsigned long long)sh->snap_last_lsn, pruned);
}
