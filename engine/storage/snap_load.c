/*
 * snap_load.c -- recovery's snapshot half: the newest snapshot that
 * verifies, installed into the shard's tables by two threads.
 *
 * Why two threads.  A restart is a pause of the whole shard, and most of
 * it is turning each stored document back into a row: decompressing the
 * file, parsing the canonical JSON and decoding it into the typed struct
 * (table_row_build) costs more than installing the row in its indexes
 * (table_row_install).  The two halves are independent for a table whose
 * decode() reads nothing but its document (table_ops.decode_pure), so a
 * builder thread runs the file layer (snap_load_latest: verify, then hand
 * out) and builds those rows, while the loop thread installs the rows
 * before them -- the way Tarantool keeps its WAL and its transaction
 * processor apart, with one hand-off.  The machine this runs on has two
 * cores; a restart now uses both.
 *
 * What does not change.  Rows are installed in the snapshot's order, on
 * the loop thread only (indexes, trims and the id clock are never touched
 * by the builder).  A table without decode_pure is handed over as its
 * record and decoded on the loop, in its place.  Every document is still
 * parsed whole and validated, exactly as table_put does; a record that
 * fails, on either side, fails the load as before ("snapshot record
 * rejected"), and the process refuses to start.
 *
 * The hand-off.  The builder fills batches -- up to LOAD_BATCH items whose
 * rows (or record copies) are laid out in the batch's own LOAD_SLAB bytes
 * -- and queues them in a ring of LOAD_RING; the loop takes a whole batch,
 * copies each row into a block of its own (table_row_adopt: a malloc and a
 * memcpy on the loop's arena) and installs it, and gives the batch back
 * for reuse.  So the builder never mallocs a row: rows malloc'd on a
 * second thread come from glibc's per-thread arena, which grows a page at
 * a time with mprotect, and with two threads each mprotect is a TLB
 * shoot-down on the other core (70,000 of them for 350,000 rows cost more
 * than the thread saved).  At most LOAD_RING + 2 batches exist: a bound on
 * memory (~10 MB), not on the snapshot.  A record too big for a slab
 * (over LOAD_SLAB / 4) is handed over as a malloc'd copy and decoded on
 * the loop.  One mutex and one condition variable; a batch changes hands
 * ~700 times for 350,000 rows.
 * When the loop refuses a record it sets `stop`: the builder's next
 * hand-off fails, snap_load stops, and both sides free what they hold.
 * The builder's sizing of the tables (table_reserve, on `verified`)
 * happens before its first batch is queued, and the loop touches no
 * table before it takes that batch: the mutex orders the two.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/log.h"
#include "engine/storage/record.h"
#include "engine/storage/shard.h"
#include "engine/storage/table.h"
#include "snapshot/snapshot.h"

#define LOAD_BATCH 512u          /* items per hand-off */
#define LOAD_SLAB (1u << 20)     /* bytes of rows and record copies per batch */
#define LOAD_BIG (LOAD_SLAB / 4) /* a record or row past this goes as a malloc'd copy */
#define LOAD_RING 8u             /* batches queued between the threads */

/* One snapshot record: a row built in the batch's slab (tables with
 * decode_pure), or a copy of the record for the loop to decode (in the
 * slab, or malloc'd when big). */
struct load_item {
	struct row *r;
	const uint8_t *rec;
	uint8_t *big;     /* rec, when malloc'd */
	uint32_t len;
	uint8_t table;
};

struct load_batch {
	unsigned n;
	size_t used;                     /* of slab */
	struct load_batch *next;         /* on the free list */
	struct load_item it[LOAD_BATCH];
	_Alignas(max_align_t) unsigned char slab[LOAD_SLAB];
};

struct snap_pipe {
	struct shard *sh;
	const char *path;              /* a given file, or NULL: the newest in sh->snap_dir */
	uint64_t rows[REC_T_COUNT_];   /* the verifying pass's census, per table */
	pthread_mutex_t mu;
	pthread_cond_t cv;             /* count, done or stop changed */
	struct load_batch *ring[LOAD_RING];
	unsigned head, count;          /* under mu */
	struct load_batch *free_list;  /* under mu: batches given back */
	int done, stop;                /* under mu */
	/* the builder's own, read by the loop once it has joined */
	struct load_batch *fill;
	int rc;                        /* snap_load_latest's answer (1, 0, -1) */
	struct snap_info si;
	char err[512];
	char why[128];                 /* a record the builder refused */
};

/* Release what a batch's items still hold (rows never adopted, big
 * copies) and empty it. */
static void batch_clear(struct shard *sh, struct load_batch *b)
{
	for (unsigned i = 0; i < b->n; i++) {
		if (b->it[i].r)
			table_row_release(&sh->tables[b->it[i].table], b->it[i].r);
		free(b->it[i].big);
	}
	b->n = 0;
	b->used = 0;
}

/* Give a batch back for reuse (cleared). */
static void batch_give_back(struct snap_pipe *p, struct load_batch *b)
{
	batch_clear(p->sh, b);
	pthread_mutex_lock(&p->mu);
	b->next = p->free_list;
	p->free_list = b;
	pthread_mutex_unlock(&p->mu);
}

/* ---- the builder thread -------------------------------------------------- */

static void census_begin(void *ctx)
{
	struct snap_pipe *p = ctx;
	memset(p->rows, 0, sizeof(p->rows));
}

/* Count the record by its table byte; a malformed one is refused later,
 * never here (the file is not verified yet). */
static void census(void *ctx, const void *rec, size_t len)
{
	struct snap_pipe *p = ctx;
	const uint8_t *b = rec;
	if (len >= REC_HEADER_SIZE && b[1] < REC_T_COUNT_)
		p->rows[b[1]]++;
}

/* The file verified: size each table for its rows, so the load never
 * rehashes.  Never fails: an index that cannot be sized grows as rows
 * come.  Runs before the first batch is queued (see the top comment). */
static int census_verified(void *ctx, const struct snap_info *si)
{
	struct snap_pipe *p = ctx;
	(void)si;
	for (unsigned i = 0; i < REC_T_COUNT_; i++)
		if (p->rows[i] && p->sh->tables[i].ops && p->rows[i] <= SIZE_MAX)
			(void)table_reserve(&p->sh->tables[i], (size_t)p->rows[i]);
	return 0;
}

/* Queue the batch being filled (waiting while the ring is full).  0, or
 * -1 when the loop has stopped the load (the batch is then cleared here
 * and kept for freeing). */
static int batch_queue(struct snap_pipe *p)
{
	struct load_batch *b = p->fill;
	pthread_mutex_lock(&p->mu);
	while (p->count == LOAD_RING && !p->stop)
		pthread_cond_wait(&p->cv, &p->mu);
	int stop = p->stop;
	if (!stop) {
		p->ring[(p->head + p->count) % LOAD_RING] = b;
		p->count++;
		p->fill = NULL;
		pthread_cond_broadcast(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	return stop ? -1 : 0;
}

/* A batch to fill: one given back, or a new one.  NULL on OOM. */
static struct load_batch *batch_get(struct snap_pipe *p)
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

/* Room for `bytes` more in the batch being filled (queueing it when full):
 * the place, or NULL (OOM, or the loop stopped the load; why says which). */
static void *slab_room(struct snap_pipe *p, size_t bytes)
{
	size_t at = p->fill ? (p->fill->used + _Alignof(max_align_t) - 1) & ~(_Alignof(max_align_t) - 1) : 0;
	if (p->fill && (p->fill->n == LOAD_BATCH || at + bytes > LOAD_SLAB)) {
		if (batch_queue(p)) {
			snprintf(p->why, sizeof(p->why), "load stopped");
			return NULL;
		}
		at = 0;
	}
	if (!p->fill && !(p->fill = batch_get(p))) {
		snprintf(p->why, sizeof(p->why), "out of memory");
		return NULL;
	}
	p->fill->used = at + bytes;
	return p->fill->slab + at;
}

/* snap_load's fn: check the record's frame, then build its row in the
 * batch's slab (decode_pure) or copy it there (or malloc, when big).  0,
 * or -1 (the record is refused: why says so; or the loop stopped). */
static int build_record(void *ctx, const void *rec, size_t len)
{
	struct snap_pipe *p = ctx;
	size_t off = 0;
	struct rec_view rv;
	if (rec_decode(rec, len, &off, &rv) != 1 || off != len || rv.op != REC_PUT || !p->sh->tables[rv.table].ops) {
		snprintf(p->why, sizeof(p->why), "malformed record of %zu bytes", len);
		return -1;
	}
	struct table *t = &p->sh->tables[rv.table];
	struct load_item it = {.table = rv.table, .len = (uint32_t)len};
	size_t rsz = table_row_size(t, rv.key_len, rv.val_len);
	if (t->ops->decode_pure && rsz <= LOAD_BIG) {
		void *at = slab_room(p, rsz);
		if (!at || table_row_build_at(t, at, rv.key, rv.key_len, rv.val, rv.val_len, 0, p->why))
			return -1;
		it.r = at;
	} else if (len <= LOAD_BIG) {
		void *at = slab_room(p, len);
		if (!at)
			return -1;
		it.rec = memcpy(at, rec, len);
	} else {
		if (!slab_room(p, 0))
			return -1;
		if (!(it.big = malloc(len))) {
			snprintf(p->why, sizeof(p->why), "out of memory");
			return -1;
		}
		it.rec = memcpy(it.big, rec, len);
	}
	p->fill->it[p->fill->n++] = it;
	return 0;
}

static void *builder(void *arg)
{
	struct snap_pipe *p = arg;
	struct snap_load_hooks hk = {.begin = census_begin, .census = census, .verified = census_verified,
				     .fn = build_record, .ctx = p};
	int rc = p->path ? (snap_load_hooked(p->path, &hk, &p->si, p->err, sizeof(p->err)) ? -1 : 1)
			 : snap_load_latest(p->sh->snap_dir, &hk, &p->si, p->err, sizeof(p->err));
	if (rc >= 0 && p->fill && p->fill->n && batch_queue(p))
		rc = -1;
	pthread_mutex_lock(&p->mu);
	p->rc = rc;
	p->done = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* ---- the loop's side -------------------------------------------------------- */

/* Install one item in its place, as table_put would have: its row (a
 * copied record is decoded here, on the loop), the id clock, the table's
 * trim.  0, or -1 with why (>= 128 bytes). */
static int install(struct shard *sh, struct load_item *it, char *why)
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
		if (table_put(t, rv.key, rv.key_len, rv.val, rv.val_len, 0, why))
			return -1;
		id_observe(&sh->ids, rv.key, rv.key_len);
	}
	if (t->ops->trim) /* a smaller bound than the snapshot's writer had */
		t->ops->trim(t);
	return 0;
}

/* The next queued batch, or NULL once the builder is done and none is left. */
static struct load_batch *batch_take(struct snap_pipe *p)
{
	pthread_mutex_lock(&p->mu);
	while (!p->count && !p->done)
		pthread_cond_wait(&p->cv, &p->mu);
	struct load_batch *b = NULL;
	if (p->count) {
		b = p->ring[p->head];
		p->head = (p->head + 1) % LOAD_RING;
		p->count--;
		pthread_cond_broadcast(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	return b;
}

/* Contract (shard.h). */
int shard_snap_load(struct shard *sh, const char *path, struct snap_info *si, char *err, size_t errlen)
{
	struct snap_pipe *p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	p->sh = sh;
	p->path = path;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	pthread_t th;
	int rc = -1;
	if (pthread_create(&th, NULL, builder, p)) {
		snprintf(err, errlen, "cannot start the snapshot builder thread");
		goto out;
	}
	char why[128] = "";
	int failed = 0;
	struct load_batch *b;
	while ((b = batch_take(p))) {
		for (unsigned i = 0; i < b->n && !failed; i++) {
			if (install(sh, &b->it[i], why)) {
				failed = 1;
				pthread_mutex_lock(&p->mu);
				p->stop = 1; /* the builder's next hand-off fails */
				pthread_cond_broadcast(&p->cv);
				pthread_mutex_unlock(&p->mu);
			}
		}
		batch_give_back(p, b);
	}
	pthread_join(th, NULL);
	rc = failed ? -1 : p->rc;
	if (failed || (p->rc < 0 && p->why[0] && strcmp(p->why, "load stopped")))
		log_error("msg=\"snapshot record rejected\" why=\"%s\"", failed ? why : p->why);
	if (rc < 0)
		snprintf(err, errlen, "%s", failed ? why : p->err[0] ? p->err : p->why);
	else if (si)
		*si = p->si;
out:
	if (p->fill) { /* the builder's last batch, never queued */
		batch_clear(sh, p->fill);
		free(p->fill);
	}
	while ((b = p->free_list)) {
		p->free_list = b->next;
		free(b);
	}
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
	return rc;
}
