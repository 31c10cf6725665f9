/*
 * recovery.c -- recovery on two threads: the newest snapshot that
 * verifies, then the WAL tail after it, installed into the shard's tables.
 *
 * Why two threads.  A restart is a pause of the whole shard, and most of
 * it is turning each stored document back into a row: decompressing the
 * file, parsing the canonical JSON and decoding it into the typed struct
 * (table_row_build_at) costs more than installing the row in its indexes
 * (table_row_install).  The two halves are independent for a table whose
 * decode() reads nothing but its document (table_ops.decode_pure), so a
 * builder thread runs the file layer (snap_load_latest: verify, then hand
 * out; wal_recover: read, check, decompress) and builds those rows, while
 * the loop thread installs the rows before them -- the way Tarantool keeps
 * its WAL and its transaction processor apart, with one hand-off.  The
 * machine this runs on has two cores; a restart now uses both.
 *
 * Images.  A snapshot record of a table with images (offers, inventory
 * levels, wines, events: record.h REC_V_IMAGE, engine/storage/image.h)
 * carries the row's typed values beside its document, and the builder
 * fills the row from them instead of parsing the document
 * (perf/bench_scale load, 1.71M records: CPU 7.6 s -> 5.0 s, the snapshot
 * ~3.5 s -> ~3.15 s; later wines, whose decode derives their keys as
 * well: their 100,000 rows took ~190 ms of the snapshot, the builder the
 * slower side, and take ~70 ms; its 105,000 events ~85 ms, now ~35 ms).
 * The loop is then the slower side: most of its time is index inserts (a
 * cache miss per hash index) and the page faults of fresh row blocks.  So
 * the loop prefetches the hash slots of the row LOAD_PREFETCH_AHEAD ahead
 * (its id, its natural key: table_row_prefetch), and the builder, between
 * batches, faults in the heap's fresh pages before the loop writes them
 * (engine/base/heapwarm.c); so does the loop while no batch is queued for
 * it (batch_take: the verifying pass, and the stretches where the builder
 * is the slower side; PGO=0, 4 pairs: 1.37-1.38 -> 1.34-1.36 s, the
 * loop's wait ~210 -> ~165 ms).  perf/bench_scale load, 1.71M snapshot
 * records + 300,000 WAL records, alternating runs: 2.11-2.33 s -> 1.77-1.89
 * s (~0.92M -> ~1.12M rows/s).  The census sizes the natural-key hashes
 * of offers and levels as well as every id hash (table_ops.index_reserve:
 * no rehash during the load): ~1.2M -> ~1.33M rows/s.  That sizing
 * (~55 ms of page faults at 1.7M rows) waited for the verifying pass; a
 * snapshot's census hint (below) lets the loop do it during that pass:
 * the loop's wait ~160 -> ~55 ms, the snapshot ~5 % faster.  (An earlier try
 * prefetched the id slot alone, without the natural key's slot and the
 * warming, and gained nothing measurable on that day's box.)
 *
 * What does not change.  Rows are installed in the file's order, on the
 * loop thread only (indexes, trims, the id clock, the shard's LSN and the
 * replication hook are never touched by the builder; the one exception,
 * a finished table's ordered secondary indexes filed on a thread of their
 * own while nothing else touches that table, is described above
 * ordered_run).  A record of a
 * table without decode_pure, or one the builder could not build, is
 * handed over as it is and decoded on the loop in its place, so a refusal
 * happens at the same record, with the same message, as before.  Every
 * document without an image is still parsed whole and validated, exactly
 * as table_put does; an image passes its table's from_image checks (a
 * document beside it is copied as written: the snapshot's checksum covers
 * it, and the writer wrote it from a row that had passed them); a record
 * that fails either fails the recovery ("snapshot record rejected",
 * "WAL transaction rejected during replay"), and the process refuses to
 * start.
 *
 * The hand-off.  The builder fills batches -- up to LOAD_BATCH items (a
 * snapshot record, or a WAL transaction) whose rows and record copies are
 * laid out in the batch's own LOAD_SLAB bytes -- and queues them in a ring
 * of LOAD_RING; the loop takes a whole batch, copies each row into a block
 * of its own (table_row_adopt: a malloc and a memcpy on the loop's arena)
 * and installs it, and gives the batch back for reuse.  So the builder
 * never mallocs a row: rows malloc'd on a second thread come from glibc's
 * per-thread arena, which grows a page at a time with mprotect, and with
 * two threads each mprotect is a TLB shoot-down on the other core (70,000
 * of them for 350,000 rows cost more than the thread saved).  At most
 * LOAD_RING + 2 batches exist: a bound on memory (~10 MB), not on the
 * files.  An item too big for a slab (over LOAD_SLAB / 4) is handed over
 * as a malloc'd copy with nothing built.  One mutex and one condition
 * variable; a batch changes hands ~700 times for 350,000 rows.
 * Balance.  Tables load the two sides differently (an offer is costly to
 * parse, a level costly to index), so either may wait for the other.
 * While the loop is about to run dry, the builder hands every other row
 * over unbuilt and the loop builds it itself: at W = 100,000 (perf/
 * bench_scale) the loop's wait in the snapshot fell from ~1.1 s to
 * ~0.25 s, the snapshot from ~4.7 s to ~4.2 s.  The WAL's builder does
 * the same with every other transaction (the WAL holds documents only,
 * so its builder, parsing them, is the slower side there).
 * When the loop refuses a record it sets `stop`: the builder's next
 * hand-off fails, the file layer stops with that failure, and both sides
 * free what they hold.  The builder's sizing of the tables (table_reserve,
 * on the snapshot's `verified`) happens before its first batch is queued,
 * and the loop touches no table before it takes that batch: the mutex
 * orders the two.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "engine/base/heapwarm.h"
#include "engine/base/log.h"
#include "engine/storage/index.h"
#include "engine/storage/record.h"
#include "engine/storage/shard.h"
#include "engine/storage/table.h"
#include "net/buf.h"
#include "net/ev.h"
#include "snapshot/snapshot.h"
#include "wal/wal.h"

#define LOAD_BATCH 512u          /* items per hand-off */
#define LOAD_SLAB (1u << 20)     /* bytes of rows and record copies per batch */
#define LOAD_BIG (LOAD_SLAB / 4) /* an item past this goes as a malloc'd copy */
#define LOAD_RING 8u             /* batches queued between the threads */
#define LOAD_LEND_BELOW 1u       /* queued batches at or below which the loop builds some rows itself */
#define LOAD_PREFETCH_AHEAD 6u   /* the loop prefetches the index slots of the row this many ahead */
#define ORDERED_LATER_DIV 2u     /* a table's ordered indexes are built beside the rows after it when
				  * those are at least 1/ORDERED_LATER_DIV of its own */

/* One snapshot record or one WAL transaction. */
struct load_item {
	const uint8_t *rec;   /* the record / the transaction's payload (slab or big) */
	uint8_t *big;         /* rec, when malloc'd */
	uint32_t len;
	uint8_t table;        /* snapshot: the record's table */
	struct row *r;        /* snapshot: the row built in the slab, or NULL */
	uint64_t lsn;         /* WAL: the transaction's LSN */
	struct row **rows;    /* WAL: per record, the row built in the slab or NULL (NULL: none built) */
	uint32_t nrec;        /* WAL: records in the payload */
};

struct load_batch {
	unsigned n;
	size_t used;                     /* of slab */
	struct load_batch *next;         /* on the free list */
	struct load_item it[LOAD_BATCH];
	_Alignas(max_align_t) unsigned char slab[LOAD_SLAB];
};

struct load_pipe {
	struct shard *sh;
	const char *path;              /* snapshot: a given file, or NULL: the newest in sh->snap_dir */
	int salvage;                   /* WAL: wal_recover's salvage */
	uint64_t rows[REC_T_COUNT_];   /* snapshot: the verifying pass's census, per table */
	uint64_t hint[REC_T_COUNT_];   /* under mu: the file's census hint, per table */
	unsigned hint_gen, hint_taken; /* under mu: hints given (one per file tried) / sized for */
	pthread_mutex_t mu;
	pthread_cond_t cv;             /* count, done or stop changed */
	struct load_batch *ring[LOAD_RING];
	unsigned head, count;          /* under mu */
	atomic_uint queued;            /* count, readable without mu (the builder's balance) */
	unsigned lend;                 /* the builder's: items handed over raw while the loop starves */
	struct load_batch *free_list;  /* under mu: batches given back */
	int done, stop;                /* under mu */
	struct heapwarm warm;          /* the builder's: the heap faulted in ahead of the loop */
	uint64_t loop_wait_us, builder_wait_us; /* time each side spent waiting for the other */
	/* the builder's own, read by the loop once it has joined */
	struct load_batch *fill;
	int rc;                        /* the file layer's answer */
	struct snap_info si;
	struct wal_recovery_report rep;
	char err[512];
	char why[128];                 /* a record the builder refused */
	/* snapshot, the loop's: ordered secondary indexes built beside it */
	int cur;                       /* the table of the last record installed, -1 none */
	struct table *later;           /* the table the ordered builder files, NULL none */
	pthread_t later_th;
	int later_rc;                  /* its table_build_ordered's answer, read once joined */
};

/* Release what an item still holds (rows never adopted, a big copy). */
static void item_clear(struct shard *sh, struct load_item *it)
{
	if (it->r)
		table_row_release(&sh->tables[it->table], it->r);
	if (it->rows) {
		size_t off = 0;
		struct rec_view rv;
		for (uint32_t i = 0; i < it->nrec && rec_decode(it->rec, it->len, &off, &rv) == 1; i++)
			if (it->rows[i])
				table_row_release(&sh->tables[rv.table], it->rows[i]);
	}
	free(it->big);
}

/* Release what a batch's items still hold and empty it. */
static void batch_clear(struct shard *sh, struct load_batch *b)
{
	for (unsigned i = 0; i < b->n; i++)
		item_clear(sh, &b->it[i]);
	b->n = 0;
	b->used = 0;
}

/* Give a batch back for reuse (cleared). */
static void batch_give_back(struct load_pipe *p, struct load_batch *b)
{
	batch_clear(p->sh, b);
	pthread_mutex_lock(&p->mu);
	b->next = p->free_list;
	p->free_list = b;
	pthread_mutex_unlock(&p->mu);
}

/* ---- the builder thread -------------------------------------------------- */

/* Queue the batch being filled (waiting while the ring is full).  0, or
 * -1 when the loop has stopped the load (the batch stays in p->fill, to be
 * freed when the pipe is). */
static int batch_queue(struct load_pipe *p)
{
	/* time to spare (the loop has a full ring before it): fault in the
	 * heap's fresh pages ahead of its writes, a step at a time */
	while (atomic_load_explicit(&p->queued, memory_order_relaxed) == LOAD_RING && heapwarm_step(&p->warm))
		;
	struct load_batch *b = p->fill;
	pthread_mutex_lock(&p->mu);
	if (p->count == LOAD_RING && !p->stop) {
		uint64_t t0 = ev_clock_us();
		while (p->count == LOAD_RING && !p->stop)
			pthread_cond_wait(&p->cv, &p->mu);
		p->builder_wait_us += ev_clock_us() - t0;
	}
	int stop = p->stop;
	if (!stop) {
		p->ring[(p->head + p->count) % LOAD_RING] = b;
		p->count++;
		atomic_store_explicit(&p->queued, p->count, memory_order_relaxed);
		p->fill = NULL;
		pthread_cond_broadcast(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	return stop ? -1 : 0;
}

/* A batch to fill: one given back, or a new one.  NULL on OOM. */
static struct load_batch *batch_get(struct load_pipe *p)
{
	pthread_mutex_lock(&p->mu);
	struct load_batch *b = p->free_list;
	if (b)
		p->free_list = b->next;
	pthread_mutex_unlock(&p->mu);
	if (!b && (b = malloc(sizeof(*b)))) {
		b->n = 0;
		b->used = 0;
	}
	return b;
}

/* A batch with a free item and `bytes` of slab room (queueing the one
 * being filled when it has neither).  0, or -1 (OOM, or the loop stopped
 * the load: why says which). */
static int batch_room(struct load_pipe *p, size_t bytes)
{
	size_t a = _Alignof(max_align_t);
	if (p->fill && (p->fill->n == LOAD_BATCH || ((p->fill->used + a - 1) & ~(a - 1)) + bytes > LOAD_SLAB)) {
		if (batch_queue(p)) {
			snprintf(p->why, sizeof(p->why), "load stopped");
			return -1;
		}
	}
	if (!p->fill && !(p->fill = batch_get(p))) {
		snprintf(p->why, sizeof(p->why), "out of memory");
		return -1;
	}
	return 0;
}

/* Take `bytes` of the batch's slab (batch_room made room), max-aligned. */
static void *slab_take(struct load_batch *b, size_t bytes)
{
	size_t a = _Alignof(max_align_t), at = (b->used + a - 1) & ~(a - 1);
	b->used = at + bytes;
	return b->slab + at;
}

/* Copy `len` bytes into the item: into the slab (batch_room made room),
 * or malloc'd.  0, or -1 on OOM. */
static int item_copy(struct load_pipe *p, struct load_item *it, const void *src, size_t len, int in_slab)
{
	it->len = (uint32_t)len;
	if (in_slab) {
		it->rec = memcpy(slab_take(p->fill, len), src, len);
		return 0;
	}
	if (!(it->big = malloc(len ? len : 1))) {
		snprintf(p->why, sizeof(p->why), "out of memory");
		return -1;
	}
	it->rec = memcpy(it->big, src, len);
	return 0;
}

/* Balance (see the top): with LOAD_LEND_BELOW batches or fewer queued
 * the loop is about to wait, so every other item goes over unbuilt. */
static int lend_this_one(struct load_pipe *p)
{
	return atomic_load_explicit(&p->queued, memory_order_relaxed) <= LOAD_LEND_BELOW && (++p->lend & 1);
}

/* Build the row of a record of a decode_pure table in the slab: the row,
 * or NULL when it is not built here (another table, too big for the
 * slab's room, or refused: the loop then decodes it and refuses it in its
 * place). */
static struct row *build_row(struct load_pipe *p, const struct rec_view *rv, uint64_t lsn, size_t room,
			     int images)
{
	struct table *t = &p->sh->tables[rv->table];
	const char *doc;
	uint32_t dl, il;
	const uint8_t *img;
	if (rv->op != REC_PUT || !t->ops || !t->ops->decode_pure || rec_doc_image(rv, &doc, &dl, &img, &il) ||
	    (img && !images))
		return NULL;
	size_t rsz = table_row_size(t, rv->key_len, dl);
	size_t a = _Alignof(max_align_t), at = (p->fill->used + a - 1) & ~(a - 1);
	if (rsz > room || at + rsz > LOAD_SLAB)
		return NULL;
	char why[128];
	size_t was = p->fill->used;
	void *mem = slab_take(p->fill, rsz);
	if (img ? table_row_build_image_at(t, mem, rv->key, rv->key_len, doc, dl, img, il, lsn, why)
		: table_row_build_at(t, mem, rv->key, rv->key_len, doc, dl, lsn, why)) {
		p->fill->used = was;
		return NULL;
	}
	return mem;
}

/* The builder's end: queue its last batch when the file layer succeeded
 * (a stopped load keeps it in p->fill), then tell the loop its answer. */
static void *builder_done(struct load_pipe *p, int rc)
{
	if (rc >= 0 && p->fill && p->fill->n && batch_queue(p))
		rc = -1;
	pthread_mutex_lock(&p->mu);
	p->rc = rc;
	p->done = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* ---- the census hint ---- */

/*
 * A snapshot's hint (snapshot.h, snap_writer_hint) is its census: rows per
 * table, as the writer counted them.  It comes first in the file, so the
 * loop sizes the tables' hash indexes (table_reserve: ~55 ms of page
 * faults for 1.7M rows) while the builder is still verifying the file,
 * instead of after that pass, when both sides waited for it.  Layout:
 * CENSUS_MAGIC, u32 REC_T_COUNT_, that many u64 row counts, u64 XXH3-64
 * of the bytes before it.  It is read before the file is verified, so
 * it must check out -- its own checksum, and its rows adding up to the
 * trailer's count -- or it is ignored; and the verifying pass's census
 * sizes the tables again before the first row (a no-op when the hint was
 * right), so a hint can make the load faster or slower, never different.
 */
#define CENSUS_MAGIC "WMCENS01"
#define CENSUS_BYTES (8u + 4u + 8u * REC_T_COUNT_ + 8u)
_Static_assert(CENSUS_BYTES <= SNAP_MAX_HINT, "the census fits a snapshot's hint");

size_t shard_census_hint(const struct shard *sh, uint8_t *out, size_t cap)
{
	if (cap < CENSUS_BYTES)
		return 0;
	memcpy(out, CENSUS_MAGIC, 8);
	wr_u32(out + 8, REC_T_COUNT_);
	for (unsigned i = 0; i < REC_T_COUNT_; i++)
		wr_u64(out + 12 + 8 * i, sh->tables[i].ops ? (uint64_t)table_count(&sh->tables[i]) : 0);
	wr_u64(out + CENSUS_BYTES - 8, XXH3_64bits(out, CENSUS_BYTES - 8));
	return CENSUS_BYTES;
}

/* The hint's rows per table into rows[], or -1 when it does not check
 * out against itself and the trailer's `records`. */
static int census_hint_read(const uint8_t *h, size_t len, uint64_t records, uint64_t rows[REC_T_COUNT_])
{
	if (len != CENSUS_BYTES || memcmp(h, CENSUS_MAGIC, 8) || rd_u32(h + 8) != REC_T_COUNT_ ||
	    rd_u64(h + CENSUS_BYTES - 8) != XXH3_64bits(h, CENSUS_BYTES - 8))
		return -1;
	uint64_t sum = 0;
	for (unsigned i = 0; i < REC_T_COUNT_; i++) {
		rows[i] = rd_u64(h + 12 + 8 * i);
		if (rows[i] > records - sum)
			return -1;
		sum += rows[i];
	}
	return sum == records ? 0 : -1;
}

/* snap_load's hint hook (the builder, at the start of the verifying
 * pass): hand a hint that checks out to the loop (batch_take sizes). */
static void census_hint(void *ctx, const void *hint, size_t len, uint64_t records)
{
	struct load_pipe *p = ctx;
	uint64_t rows[REC_T_COUNT_];
	if (census_hint_read(hint, len, records, rows))
		return;
	pthread_mutex_lock(&p->mu);
	memcpy(p->hint, rows, sizeof(rows));
	p->hint_gen++;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/* Size each table for rows[] (table_reserve).  The loop's, before its
 * first row; never fails: an index that cannot be sized grows as rows
 * come. */
static void tables_reserve(struct shard *sh, const uint64_t rows[REC_T_COUNT_])
{
	for (unsigned i = 0; i < REC_T_COUNT_; i++)
		if (rows[i] && sh->tables[i].ops && rows[i] <= SIZE_MAX)
			(void)table_reserve(&sh->tables[i], (size_t)rows[i]);
}

/* ---- the snapshot's builder ---- */

static void census_begin(void *ctx)
{
	struct load_pipe *p = ctx;
	memset(p->rows, 0, sizeof(p->rows));
}

/* Count the record by its table byte; a malformed one is refused later,
 * never here (the file is not verified yet). */
static void census(void *ctx, const void *rec, size_t len)
{
	struct load_pipe *p = ctx;
	const uint8_t *b = rec;
	if (len >= REC_HEADER_SIZE && b[1] < REC_T_COUNT_)
		p->rows[b[1]]++;
}

/* snap_load's fn: check the record's frame, then build its row in the
 * batch's slab (decode_pure) or copy the record for the loop.  0, or -1
 * (a malformed record: why says so; OOM; or the loop stopped). */
static int snap_record(void *ctx, const void *rec, size_t len)
{
	struct load_pipe *p = ctx;
	size_t off = 0;
	struct rec_view rv;
	const char *doc;
	uint32_t dl, il;
	const uint8_t *img;
	if (rec_decode(rec, len, &off, &rv) != 1 || off != len || rv.op != REC_PUT || !p->sh->tables[rv.table].ops ||
	    rec_doc_image(&rv, &doc, &dl, &img, &il)) {
		snprintf(p->why, sizeof(p->why), "malformed record of %zu bytes", len);
		return -1;
	}
	struct table *t = &p->sh->tables[rv.table];
	size_t rsz = table_row_size(t, rv.key_len, dl);
	if (batch_room(p, rsz <= LOAD_BIG ? rsz : len <= LOAD_BIG ? len : 0))
		return -1;
	struct load_item it = {.table = rv.table};
	/* Balance: with LOAD_LEND_BELOW batches or fewer queued the loop is
	 * about to wait for rows, so every other row goes over raw and the
	 * loop builds it itself (the table_put path, as for a table without
	 * decode_pure).  The two sides then meet in the middle instead of the
	 * loop idling through the builder's heavier tables. */
	int lend = lend_this_one(p);
	if (!(it.r = rsz <= LOAD_BIG && !lend ? build_row(p, &rv, 0, rsz, 1) : NULL) &&
	    item_copy(p, &it, rec, len, len <= LOAD_BIG))
		return -1;
	p->fill->it[p->fill->n++] = it;
	return 0;
}

static void *snap_builder(void *arg)
{
	struct load_pipe *p = arg;
	struct snap_load_hooks hk = {.begin = census_begin, .census = census, .hint = census_hint,
				     .fn = snap_record, .ctx = p};
	int rc = p->path ? (snap_load_hooked(p->path, &hk, &p->si, p->err, sizeof(p->err)) ? -1 : 1)
			 : snap_load_latest(p->sh->snap_dir, &hk, &p->si, p->err, sizeof(p->err));
	return builder_done(p, rc);
}

/* ---- the WAL's builder ---- */

/* wal_recover's fn: stop past the requested LSN (sh->upto_lsn, set before
 * recovery began), else copy the transaction and build the rows of its
 * decode_pure records in the batch's slab.  0, WAL_REPLAY_STOP, or -1
 * (OOM, or the loop stopped). */
static int wal_txn(void *ctx, uint64_t lsn, const void *payload, size_t len)
{
	struct load_pipe *p = ctx;
	if (p->sh->upto_lsn && lsn > p->sh->upto_lsn)
		return WAL_REPLAY_STOP;
	size_t off = 0;
	uint32_t nrec = 0;
	struct rec_view rv;
	while (rec_decode(payload, len, &off, &rv) == 1)
		nrec++; /* a malformed tail is the loop's to refuse */
	/* the payload and its row pointers in the slab (the rows take what is
	 * left of it), or a malloc'd copy with nothing built */
	size_t head = (size_t)nrec * sizeof(struct row *);
	int small = len + head <= LOAD_BIG;
	if (batch_room(p, small ? len + head + _Alignof(max_align_t) : 0))
		return -1;
	struct load_item it = {.lsn = lsn};
	if (item_copy(p, &it, payload, len, small))
		return -1;
	/* Balance, as snap_record does: while the loop is about to wait,
	 * every other transaction goes over with nothing built */
	int lend = lend_this_one(p);
	if (small && nrec) {
		it.rows = slab_take(p->fill, head);
		it.nrec = nrec;
		off = 0;
		for (uint32_t i = 0; i < nrec && rec_decode(it.rec, it.len, &off, &rv) == 1; i++)
			it.rows[i] = lend ? NULL : build_row(p, &rv, lsn, LOAD_BIG, 0); /* the WAL holds documents only */
	}
	p->fill->it[p->fill->n++] = it;
	return 0;
}

static void *wal_builder(void *arg)
{
	struct load_pipe *p = arg;
	int rc = wal_recover(p->sh->wal_dir, p->sh->lsn, wal_txn, p, p->salvage, &p->rep);
	return builder_done(p, rc);
}

/* ---- the loop's side -------------------------------------------------------- */

/* ---- ordered indexes built beside the loop ----------------------------------
 *
 * A snapshot holds its tables one after another.  Recovery installs the
 * rows of a table with ordered secondary indexes (offers, levels: most of
 * a shard's rows) without their entries there (table_defer_ordered) when
 * enough rows follow it (ordered_plan): a B+tree insert per index was a
 * third of the loop's time.  Once the records of such a table end, a
 * thread of its own files all its rows there
 * (table_build_ordered) while the loop installs the tables after it,
 * which never read it (a decode reads nothing but its document; an
 * index_add only its own table), and while the builder, whose side of
 * those tables is the lighter, leaves a core to spare.  At most one such
 * thread runs; the loop joins it before the next one, before a record of
 * that table if one came again, and at the snapshot's end, so the WAL's
 * replay and everything after recovery see every index whole.
 */

static void *ordered_run(void *arg)
{
	struct load_pipe *p = arg;
	p->later_rc = table_build_ordered(p->later);
	return NULL;
}

/* Join the ordered builder if one runs: 0, or -1 (why says so) when its
 * table could not be filed. */
static int ordered_join(struct load_pipe *p, char *why)
{
	if (!p->later)
		return 0;
	pthread_join(p->later_th, NULL);
	const char *name = p->later->ops->name;
	p->later = NULL;
	if (p->later_rc) {
		snprintf(why, 128, "out of memory filing %s rows in their ordered indexes", name);
		return -1;
	}
	return 0;
}

/* The records of t have ended: file its rows in its ordered indexes on
 * a thread of their own (on the loop, if none can start).  0 or -1. */
static int ordered_start(struct load_pipe *p, struct table *t, char *why)
{
	if (!t->ordered_later || p->later == t)
		return 0;
	if (ordered_join(p, why))
		return -1;
	p->later = t;
	if (pthread_create(&p->later_th, NULL, ordered_run, p) == 0) {
		pthread_setname_np(p->later_th, "wm-ordered");
		return 0;
	}
	p->later = NULL;
	if (table_build_ordered(t)) {
		snprintf(why, 128, "out of memory filing %s rows in their ordered indexes", t->ops->name);
		return -1;
	}
	return 0;
}

/* The snapshot's end (or its failure): the last table's ordered indexes,
 * then every deferral ended.  0 or -1. */
static int ordered_finish(struct load_pipe *p, char *why)
{
	int rc = p->cur >= 0 ? ordered_start(p, &p->sh->tables[p->cur], why) : 0;
	if (ordered_join(p, why))
		rc = -1;
	for (int i = 0; i < REC_T_COUNT_; i++) {
		struct table *t = &p->sh->tables[i];
		if (t->ops && t->ordered_later && table_build_ordered(t) && !rc) {
			snprintf(why, 128, "out of memory filing %s rows in their ordered indexes", t->ops->name);
			rc = -1;
		}
	}
	return rc;
}

/* Before the snapshot's first record: defer the ordered indexes of each
 * table (that has some) which the census shows followed by at least
 * 1/ORDERED_LATER_DIV as many rows as its own, so that its filing runs
 * while the loop installs them.  Deferring a table with little after it
 * would only move its filing to the end, where the loop waits for it:
 * bench_scale, 1M offers then 500,000 levels, the offers' filing (~450 ms
 * beside the levels) ended before the levels did; the levels deferred as
 * well added their whole filing after the last row. */
static void ordered_plan(struct load_pipe *p)
{
	uint64_t after = 0;
	for (int i = REC_T_COUNT_; i-- > 0;) {
		struct table *t = &p->sh->tables[i];
		if (t->ops && p->rows[i] && after >= p->rows[i] / ORDERED_LATER_DIV)
			table_defer_ordered(t);
		after += p->rows[i];
	}
}

/* Before a record of table `table`: when it starts a new run of tables,
 * the run before it has ended; when its table's ordered indexes are
 * being built, they are finished first.  0 or -1. */
static int ordered_before(struct load_pipe *p, int table, char *why)
{
	if (table == p->cur)
		return 0;
	if (p->cur < 0) { /* the first record: the file verified, its census whole */
		tables_reserve(p->sh, p->rows);
		ordered_plan(p);
	}
	if (p->cur >= 0 && ordered_start(p, &p->sh->tables[p->cur], why))
		return -1;
	p->cur = table;
	return p->later == &p->sh->tables[table] ? ordered_join(p, why) : 0;
}

/* Install one snapshot record in its place, as table_put would have: its
 * row (a copied record is decoded here), the id clock, the table's trim.
 * 0, or -1 with why (>= 128 bytes). */
static int snap_install(struct shard *sh, struct load_item *it, char *why)
{
	struct table *t = &sh->tables[it->table];
	if (it->r) {
		struct row *r = table_row_adopt(t, it->r);
		if (!r) {
			snprintf(why, 128, "out of memory");
			return -1;
		}
		it->r = NULL; /* what it owned is r's now */
		table_row_install(t, r);
		id_observe(&sh->ids, r->id, r->id_len);
	} else {
		size_t off = 0;
		struct rec_view rv;
		if (rec_decode(it->rec, it->len, &off, &rv) != 1) { /* the builder checked it */
			snprintf(why, 128, "malformed record");
			return -1;
		}
		const char *doc;
		uint32_t dl, il;
		const uint8_t *img;
		if (rec_doc_image(&rv, &doc, &dl, &img, &il)) { /* the builder checked it */
			snprintf(why, 128, "malformed record");
			return -1;
		}
		if (img ? table_put_image(t, rv.key, rv.key_len, doc, dl, img, il, 0, why)
			: table_put(t, rv.key, rv.key_len, doc, dl, 0, why))
			return -1;
		id_observe(&sh->ids, rv.key, rv.key_len);
	}
	if (t->ops->trim) /* a smaller bound than the snapshot's writer had */
		t->ops->trim(t);
	return 0;
}

/* Apply one WAL transaction in its place: the LSN checks replay makes,
 * then its records (rows the builder built are adopted, the rest decoded
 * here), then the replication hook.  0, or -1 (logged, and why says it in
 * short, >= 128 bytes). */
static int wal_install(struct shard *sh, struct load_item *it, char *why)
{
	char rwhy[128];
	if (it->lsn != sh->lsn + 1 && sh->lsn != 0) {
		log_error("msg=\"WAL LSN out of sequence\" expected=%llu got=%llu", (unsigned long long)sh->lsn + 1,
			  (unsigned long long)it->lsn);
		snprintf(why, 128, "WAL LSN %llu out of sequence", (unsigned long long)it->lsn);
		return -1;
	}
	if (shard_apply_built(sh, it->lsn, it->rec, it->len, it->rows, it->nrec, rwhy)) {
		log_error("msg=\"WAL transaction rejected during replay\" lsn=%llu why=\"%s\"",
			  (unsigned long long)it->lsn, rwhy);
		snprintf(why, 128, "WAL transaction %llu rejected: %.80s", (unsigned long long)it->lsn, rwhy);
		return -1;
	}
	if (sh->logged)
		sh->logged(sh, it->lsn, it->rec, it->len);
	return 0;
}

/* The next queued batch, or NULL once the builder is done and none is left. */
static struct load_batch *batch_take(struct load_pipe *p)
{
	pthread_mutex_lock(&p->mu);
	for (;;) {
		/* A file's census hint: size the tables now.  It comes with the
		 * verifying pass, before any batch of that file is queued; it is
		 * taken even when batches are already waiting (a builder that
		 * verified a small file before the loop first got here), so the
		 * tables are always sized from it before its first row. */
		if (p->hint_taken != p->hint_gen) {
			uint64_t rows[REC_T_COUNT_];
			memcpy(rows, p->hint, sizeof(rows));
			p->hint_taken = p->hint_gen;
			pthread_mutex_unlock(&p->mu);
			tables_reserve(p->sh, rows);
			pthread_mutex_lock(&p->mu);
			continue;
		}
		if (p->count || p->done)
			break;
		/* time to spare (nothing queued): fault in the heap's fresh
		 * pages ahead of the installs, a step at a time, as the builder
		 * does while the ring is full; wait once there are none */
		pthread_mutex_unlock(&p->mu);
		size_t warmed = heapwarm_step(&p->warm);
		pthread_mutex_lock(&p->mu);
		if (warmed || p->count || p->done)
			continue;
		uint64_t t0 = ev_clock_us();
		pthread_cond_wait(&p->cv, &p->mu);
		p->loop_wait_us += ev_clock_us() - t0;
	}
	struct load_batch *b = NULL;
	if (p->count) {
		b = p->ring[p->head];
		p->head = (p->head + 1) % LOAD_RING;
		p->count--;
		atomic_store_explicit(&p->queued, p->count, memory_order_relaxed);
		pthread_cond_broadcast(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	return b;
}

/* Start the builder, install what it hands over until it is done (after
 * a refusal: only free it), join it.  0, or -1 when the loop refused an
 * item or the thread could not start (why says so, >= 128 bytes); the
 * builder's own answer is p->rc. */
static int pipe_run(struct load_pipe *p, void *(*builder)(void *), int wal, char *why)
{
	uint64_t t0 = ev_clock_us();
	atomic_init(&p->queued, 0);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	pthread_t th;
	int failed = 0;
	heapwarm_begin(&p->warm, HEAPWARM_TOP_PAD, HEAPWARM_STEP); /* before the builder runs */
	if (pthread_create(&th, NULL, builder, p)) {
		snprintf(why, 128, "cannot start the recovery builder thread");
		failed = -1;
		goto out;
	}
	pthread_setname_np(th, "wm-recovery"); /* top -H and perf tell it from the loop */
	struct load_batch *b;
	p->cur = -1;
	hidx_bulk_load(true); /* indexes grown by these installs: engine/storage/index.h */
	while ((b = batch_take(p))) {
		for (unsigned i = 0; i < b->n && !failed; i++) {
			const struct load_item *ahead = i + LOAD_PREFETCH_AHEAD < b->n ? &b->it[i + LOAD_PREFETCH_AHEAD] : NULL;
			if (!wal && ahead && ahead->r)
				table_row_prefetch(&p->sh->tables[ahead->table], ahead->r);
			if (wal ? wal_install(p->sh, &b->it[i], why)
				: ordered_before(p, b->it[i].table, why) || snap_install(p->sh, &b->it[i], why)) {
				failed = 1;
				pthread_mutex_lock(&p->mu);
				p->stop = 1; /* the builder's next hand-off fails */
				pthread_cond_broadcast(&p->cv);
				pthread_mutex_unlock(&p->mu);
			}
		}
		batch_give_back(p, b);
	}
	if (!wal && ordered_finish(p, failed ? (char[128]){0} : why) && !failed) {
		failed = 1;
		pthread_mutex_lock(&p->mu);
		p->stop = 1;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
	hidx_bulk_load(false);
	pthread_join(th, NULL);
	/* the loop only reads the builder's counter once it has joined */
	struct recovery_time *rt = wal ? &p->sh->wal_time : &p->sh->snap_time;
	*rt = (struct recovery_time){.ms = (ev_clock_us() - t0) / 1000, .loop_wait_ms = p->loop_wait_us / 1000,
				     .builder_wait_ms = p->builder_wait_us / 1000, .census_hint = p->hint_taken != 0};
out:
	heapwarm_end(&p->warm, HEAPWARM_TOP_PAD);
	if (p->fill) { /* the builder's last batch, never queued */
		batch_clear(p->sh, p->fill);
		free(p->fill);
		p->fill = NULL;
	}
	while ((b = p->free_list)) {
		p->free_list = b->next;
		free(b);
	}
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	return failed ? -1 : 0;
}

/* A pipe for sh, or NULL with "out of memory" in err (errlen bytes). */
static struct load_pipe *pipe_new(struct shard *sh, char *err, size_t errlen)
{
	struct load_pipe *p = calloc(1, sizeof(*p));
	if (p)
		p->sh = sh;
	else
		snprintf(err, errlen, "out of memory");
	return p;
}

/* Contract (shard.h). */
int shard_snap_load(struct shard *sh, const char *path, struct snap_info *si, char *err, size_t errlen)
{
	struct load_pipe *p = pipe_new(sh, err, errlen);
	if (!p)
		return -1;
	p->path = path;
	char why[128] = "";
	int failed = pipe_run(p, snap_builder, 0, why);
	int rc = failed ? -1 : p->rc;
	if (failed || (p->rc < 0 && p->why[0] && strcmp(p->why, "load stopped")))
		log_error("msg=\"snapshot record rejected\" why=\"%s\"", failed ? why : p->why);
	if (rc < 0)
		snprintf(err, errlen, "%s", failed ? why : p->err[0] ? p->err : p->why);
	else if (si)
		*si = p->si;
	free(p);
	return rc;
}

/* Contract (shard.h). */
int shard_wal_replay(struct shard *sh, int salvage, struct wal_recovery_report *rep)
{
	struct load_pipe *p = pipe_new(sh, rep->error, sizeof(rep->error));
	if (!p)
		return -1;
	p->salvage = salvage;
	char why[128] = "";
	int failed = pipe_run(p, wal_builder, 1, why);
	*rep = p->rep;
	int rc = failed ? -1 : p->rc;
	if (failed) /* the loop's refusal, not what the builder was stopped with */
		snprintf(rep->error, sizeof(rep->error), "%s", why);
	else if (rc < 0 && !rep->error[0])
		snprintf(rep->error, sizeof(rep->error), "%s", p->why[0] ? p->why : "replay failed");
	free(p);
	return rc;
}
