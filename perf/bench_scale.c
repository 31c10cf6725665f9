/*
 * bench_scale.c -- one shard at catalogue scale (issue 15, target 3): memory
 * per offer and per inventory level, quote latency against a small
 * catalogue, and recovery speed from snapshot + WAL tail.
 *
 *   bench_scale fill REFDATA_DIR DIR WINES OFFERS_PER_WINE LEVELS [QUOTES] [TAIL_TXNS]
 *   bench_scale load DIR [recover-only]
 *
 * fill (the world of perf/bench_world.h, wal mode none while filling):
 *  1. a small catalogue (min(1000, WINES) wines, the same offers per wine
 *     and levels per offer) in DIR/small, kept open;
 *  2. the big one in DIR/shard: WINES wines (wine_ingest), then
 *     WINES x OFFERS_PER_WINE offers, then LEVELS levels (table_put of
 *     canonical documents, as snapshot load and WAL replay install rows);
 *     the RSS (and malloc's in-use bytes, mallinfo2) before and after each
 *     table gives the memory per row, next to the row's raw field bytes
 *     (every typed field at its natural binary size: ids and skus at their
 *     length, amounts, quantities and timestamps 8 bytes, enums and flags
 *     1, country codes 2) and its canonical document's bytes;
 *  3. where an offer's and a level's bytes go: the row block (typed struct
 *     + id + document, malloc_usable_size), the primary indexes (hash by
 *     id: its real capacity; B+tree by id with copied keys) and the
 *     module's secondary indexes -- measured by installing the first
 *     min(200,000, n) rows again into two scratch tables, one without the
 *     secondary indexes (index_add NULL) and one with, and comparing
 *     malloc's in-use bytes;
 *  4. QUOTES quote-calculate handler calls (default 20,000) per scenario
 *     on random wines, 1 line and 5 lines to DE, small and big catalogue
 *     alternately in 10 rounds with the samples pooled (so both see the
 *     same machine, which may be shared), p50/p99 in wall time and
 *     in thread CPU time (what other processes' preemption does not move),
 *     and the big/small p99 ratio (the target: <= 1.5); then the same
 *     ratio over the quotes no interrupt landed in (bench_world.h: on this
 *     VM each one adds ~15-25 us, so a quote's raw p99 depends on how long
 *     it runs as much as on what it reads), with the share interrupted;
 *  5. a snapshot of the big shard with the engine's writer
 *     (shard_snapshot_write, in-process: the production child runs the
 *     same function), then a WAL tail of TAIL_TXNS transactions (default
 *     100,000) through txn_commit with a WAL in write mode opened above the
 *     snapshot's LSN: each a stock change as the engine logs one, the
 *     level's new after-image (reserved + 1), its offer's (updated_at) and
 *     a stock.changed event;
 *  6. DIR/expect: the row counts the load must find.
 * load: a fresh process times shard_load_with on DIR/shard (newest valid
 *  snapshot, verified, then loaded; then the WAL tail replayed) and reports
 *  rows/s = (snapshot records + WAL records) / seconds, split at the first
 *  WAL transaction replayed (the shard's `logged` hook), then the cost of
 *  the snapshot file layer alone (snap_load with a no-op callback: verify +
 *  decompress, no table_put) and the RSS per row after recovery; with
 *  recover-only, nothing after the recovery and its check (for perf).
 *  Neither mode frees the big shard: the process exits.
 * perf/bench.sh (section o) runs fill, load, and the load again under
 * `perf record -g` for the profile summary.
 */
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "engine/base/log.h"
#include "engine/pricing/quote.h"
#include "engine/pricing/refdata.h"
#include "engine/stock/inventory.h"
#include "engine/storage/resources.h"
#include "engine/supply/offer.h"
#include "perf/bench_world.h"
#include "snapshot/snapshot.h"

#define SMALL_WINES 1000L
#define LAYOUT_SAMPLE 200000L
#define QUOTE_ROUNDS 10
#define MB (1024.0 * 1024.0)

static long heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return (long)(mi.uordblks + mi.hblkhd);
}

/* This process's user and system CPU seconds so far. */
static void cpu_times(double *user, double *sys)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	*user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
	*sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static long peak_rss_kb(void)
{
	struct rusage ru;
	return getrusage(RUSAGE_SELF, &ru) ? 0 : ru.ru_maxrss;
}

/* ---- raw field bytes ----------------------------------------------------- */

static long offer_raw_bytes(const struct offer *o)
{
	long n = (long)o->row.id_len + (long)strlen(o->wine_id) + (long)strlen(o->originator_id);
	n += 3;                    /* currency */
	n += 6;                    /* status, condition, incoterm, source, network_shareable, permissions default */
	n += 6 * 8;                /* seller_price, qty_available, min_order_qty, case_size, valid_from, valid_to */
	n += 2 * 8;                /* created_at, updated_at */
	n += 2L * (o->n_allowed + o->n_blocked);
	for (unsigned i = 0; i < o->n_named; i++)
		n += (long)strlen(offer_named(o)[i]);
	return n;
}

static long level_raw_bytes(const struct inv_level *l)
{
	long n = (long)l->row.id_len + (long)strlen(inv_level_sku(l)) + (long)strlen(l->offer_id) + (long)strlen(l->owner_id) +
		 (long)strlen(l->location_id);
	n += 1;     /* condition */
	n += 4 * 8; /* on_hand, incoming, reserved, allocated */
	n += 2 * 8; /* created_at, updated_at */
	return n;
}

/* ---- where the bytes go ------------------------------------------------------ */

struct layout {
	long rows;
	double raw, doc, stored_doc, id, row_struct, row_block, primary_hash, primary_tree, secondary;
	double slot_bytes; /* of the hash by id */
	double pool;       /* the table's id pool (engine/storage/idpool.h) a row */
};

/* Row r's document (stored or rendered: table.h row_doc); dies without one. */
static const char *doc_of(const struct row *r, size_t *len)
{
	static struct buf scratch;
	const char *d = row_doc(r, &scratch, len);
	if (!d)
		bw_die(r->id, "no document");
	return d;
}

/* Install rows[0..n) of `t` (in id order) into a scratch table with `ops`;
 * returns malloc's in-use bytes it took (the table is freed again), and
 * in *pool what its id pool took of them. */
static long scratch_fill(const struct table *t, const struct table_ops *ops, long n, long *pool)
{
	struct table s;
	if (table_init(&s, ops, t->cfg))
		bw_die("table_init", ops->name);
	long h0 = heap_in_use();
	struct oidx_iter it;
	long k = 0;
	char why[256];
	for (int ok = oidx_seek_ge(&t->by_order, NULL, 0, &it); ok && k < n; ok = oidx_next(&it), k++) {
		const struct row *r = oidx_iter_val(&it);
		size_t dl;
		const char *d = doc_of(r, &dl);
		if (table_put(&s, r->id, r->id_len, d, dl, 1, why))
			bw_die(r->id, why);
	}
	long used = heap_in_use() - h0;
	*pool = (long)idpool_bytes(&s.ids);
	table_fini(&s);
	return used;
}

static void layout_of(const struct table *t, long (*raw)(const struct row *), struct layout *L)
{
	memset(L, 0, sizeof(*L));
	struct oidx_iter it;
	double usable = 0;
	for (int ok = oidx_seek_ge(&t->by_order, NULL, 0, &it); ok; ok = oidx_next(&it)) {
		const struct row *r = oidx_iter_val(&it);
		L->rows++;
		L->raw += (double)raw(r);
		size_t dl;
		doc_of(r, &dl);
		L->doc += (double)dl + 1;
		L->stored_doc += r->doc ? r->doc_len + 1 : 0;
		L->id += r->id_len + 1;
		usable += (double)malloc_usable_size((void *)r) + 8; /* + glibc's chunk header */
	}
	if (!L->rows)
		return;
	L->raw /= (double)L->rows;
	L->doc /= (double)L->rows;
	L->stored_doc /= (double)L->rows;
	L->id /= (double)L->rows;
	L->row_struct = (double)t->ops->row_size;
	L->row_block = usable / (double)L->rows;
	L->slot_bytes = (double)hidx_slot_bytes(&t->by_id);
	L->primary_hash = (double)t->by_id.cap * L->slot_bytes / (double)L->rows;
	long n = L->rows < LAYOUT_SAMPLE ? L->rows : LAYOUT_SAMPLE;
	struct table_ops bare = *t->ops;
	bare.index_add = NULL;
	bare.index_del = NULL;
	long pool_without, pool_with;
	long without = scratch_fill(t, &bare, n, &pool_without), with = scratch_fill(t, t->ops, n, &pool_with);
	/* without = row blocks (+ decode's own allocations) + both primary
	 * indexes + the id pool (the whole table's is reported apart) */
	double rows_n = 0;
	long k = 0;
	for (int ok = oidx_seek_ge(&t->by_order, NULL, 0, &it); ok && k < n; ok = oidx_next(&it), k++)
		rows_n += (double)malloc_usable_size(oidx_iter_val(&it)) + 8;
	double scratch_hash = 0;
	{ /* the scratch table's hash by id at n rows, to take it out of `without` */
		struct hidx h;
		hidx_init_in_value(&h, t->ops->row_size); /* as table_init makes it */
		for (int ok = oidx_seek_ge(&t->by_order, NULL, 0, &it); ok && (long)h.count < n; ok = oidx_next(&it)) {
			const struct row *r = oidx_iter_val(&it);
			if (hidx_put(&h, r->id, r->id_len, (void *)r))
				bw_die("hidx_put", "scratch");
		}
		scratch_hash = (double)(h.cap * hidx_slot_bytes(&h));
		hidx_free(&h);
	}
	L->primary_tree = ((double)without - rows_n - scratch_hash - (double)pool_without) / (double)n;
	L->pool = (double)idpool_bytes((struct idpool *)&t->ids) / (double)L->rows;
	L->secondary = (double)(with - without) / (double)n;
}

static long raw_offer(const struct row *r) { return offer_raw_bytes((const struct offer *)r); }
static long raw_level(const struct row *r) { return level_raw_bytes((const struct inv_level *)r); }

static void print_layout(const char *what, const struct layout *L, double rss_per_row, double heap_per_row)
{
	double known = L->row_block + L->primary_hash + L->primary_tree + L->secondary + L->pool;
	printf("%s: %ld rows; RSS %.0f B/row (malloc in use %.0f B/row); raw field bytes %.0f B -> %.1fx raw "
	       "(goal <= 2x); canonical document %.0f B (%.1fx raw)\n",
	       what, L->rows, rss_per_row, heap_per_row, L->raw, rss_per_row / L->raw, L->doc, L->doc / L->raw);
	printf("  row block %.0f B (typed struct %.0f + id %.0f + stored document %.0f + malloc rounding/header %.0f) | "
	       "hash by id %.0f B (capacity %.0f%% used) | B+tree by id %.0f B | secondary indexes %.0f B | id pool %.1f B | "
	       "rest (allocator, growth slack) %.0f B\n",
	       L->row_block, L->row_struct, L->id, L->stored_doc, L->row_block - L->row_struct - L->id - L->stored_doc,
	       L->primary_hash,
	       100.0 * L->slot_bytes / (L->primary_hash > 0 ? L->primary_hash : 1), L->primary_tree,
	       L->secondary, L->pool, rss_per_row - known);
}

/* ---- fill ----------------------------------------------------------------- */

static int fill_main(int argc, char **argv)
{
	if (argc < 7) {
		fprintf(stderr, "usage: bench_scale fill REFDATA_DIR DIR WINES OFFERS_PER_WINE LEVELS [QUOTES] [TAIL_TXNS]\n");
		return 2;
	}
	const char *dir = argv[3];
	long nw = atol(argv[4]), per = atol(argv[5]), nl = atol(argv[6]);
	long nq = argc > 7 ? atol(argv[7]) : 20000, tail = argc > 8 ? atol(argv[8]) : 100000;
	if (nw < 100 || per < 1 || per > QUOTE_MAX_CANDIDATES || nl < 0 || nl > nw * per * BW_N_ORIG || nq < 100 ||
	    tail < 0) {
		fprintf(stderr, "bench_scale: WINES >= 100, 1 <= OFFERS_PER_WINE <= %d, 0 <= LEVELS <= %d x offers, "
				"QUOTES >= 100, TAIL_TXNS >= 0\n",
			QUOTE_MAX_CANDIDATES, BW_N_ORIG);
		return 2;
	}
	char err[512], path[600];
	struct refdata *rd = NULL;
	if (refdata_load_dir(argv[2], &rd, err, sizeof(err)))
		bw_die(argv[2], err);
	refdata_set_current(rd);

	/* 1. the small catalogue */
	static struct shard small, sh;
	snprintf(path, sizeof(path), "%s/small", dir);
	bw_shard_open(&small, path, "none");
	long snw = nw < SMALL_WINES ? nw : SMALL_WINES;
	struct bw_world sw = {.sh = &small, .nw = snw, .per = per, .nl = (long)((double)nl * (double)snw / (double)nw)};
	bw_seed_partners(&sw);
	bw_fill_wines(&sw);
	bw_fill_offers(&sw);
	bw_fill_levels(&sw);
	printf("small catalogue: %ld wines, %ld offers, %ld levels\n", sw.nw, sw.n_offers, sw.n_levels);

	/* 2. the big one, table by table */
	snprintf(path, sizeof(path), "%s/shard", dir);
	bw_shard_open(&sh, path, "none");
	struct bw_world w = {.sh = &sh, .nw = nw, .per = per, .nl = nl};
	bw_seed_partners(&w);
	long rss[4], heap[4];
	double t[4];
	rss[0] = bw_rss_bytes(), heap[0] = heap_in_use(), t[0] = bw_now_s();
	bw_fill_wines(&w);
	rss[1] = bw_rss_bytes(), heap[1] = heap_in_use(), t[1] = bw_now_s();
	bw_fill_offers(&w);
	rss[2] = bw_rss_bytes(), heap[2] = heap_in_use(), t[2] = bw_now_s();
	bw_fill_levels(&w);
	rss[3] = bw_rss_bytes(), heap[3] = heap_in_use(), t[3] = bw_now_s();
	long total_rows = 0;
	printf("big catalogue (one shard): %ld wines in %.1f s, %ld offers in %.1f s (%.0f rows/s), %ld levels in "
	       "%.1f s (%.0f rows/s); RSS %.0f MB\n",
	       nw, t[1] - t[0], w.n_offers, t[2] - t[1], (double)w.n_offers / (t[2] - t[1]), w.n_levels, t[3] - t[2],
	       (double)w.n_levels / (t[3] - t[2]), (double)rss[3] / MB);
	printf("  rows per table:");
	for (int i = 0; i < REC_T_COUNT_; i++) {
		size_t c = sh.tables[i].ops ? table_count(&sh.tables[i]) : 0;
		total_rows += (long)c;
		if (c)
			printf(" %s %zu", sh.tables[i].ops->name, c);
	}
	printf(" (total %ld)\n", total_rows);
	printf("  wine phase (wines, producers, events, ...): RSS %.0f MB, %.0f B per wine\n",
	       (double)(rss[1] - rss[0]) / MB, (double)(rss[1] - rss[0]) / (double)nw);
	fflush(stdout);

	/* 3. where the bytes go */
	struct layout lo, ll;
	layout_of(&sh.tables[REC_T_OFFER], raw_offer, &lo);
	print_layout("offer", &lo, (double)(rss[2] - rss[1]) / (double)w.n_offers,
		     (double)(heap[2] - heap[1]) / (double)w.n_offers);
	if (w.n_levels) {
		layout_of(&sh.tables[REC_T_INVENTORY], raw_level, &ll);
		print_layout("inventory level", &ll, (double)(rss[3] - rss[2]) / (double)w.n_levels,
			     (double)(heap[3] - heap[2]) / (double)w.n_levels);
	}
	{ /* the catalogue from these figures */
		double per_wine = (double)(rss[1] - rss[0]) / (double)nw, per_offer = (double)(rss[2] - rss[1]) / (double)w.n_offers,
		       per_level = w.n_levels ? (double)(rss[3] - rss[2]) / (double)w.n_levels : 0;
		printf("extrapolated RSS of 1,000,000 wines x 10 offers + 5,000,000 levels at these per-row figures: %.1f GB "
		       "(wines %.1f + offers %.1f + levels %.1f)\n",
		       (1e6 * per_wine + 1e7 * per_offer + 5e6 * per_level) / 1e9, 1e6 * per_wine / 1e9, 1e7 * per_offer / 1e9,
		       5e6 * per_level / 1e9);
	}
	fflush(stdout);

	/* 4. quotes: small and big alternately in QUOTE_ROUNDS rounds, samples
	 * pooled, so both catalogues see the same machine (it is shared) */
	struct bw_caller *bs = bw_caller_new(&sw), *bb = bw_caller_new(&w);
	struct bw_lat ls[2], lb[2];
	long pr = nq / QUOTE_ROUNDS, tot = pr * QUOTE_ROUNDS;
	double *sl = malloc((size_t)tot * sizeof(double)), *sc = malloc((size_t)tot * sizeof(double)),
	       *bl = malloc((size_t)tot * sizeof(double)), *bc = malloc((size_t)tot * sizeof(double));
	unsigned char *sh_hit = malloc((size_t)tot), *bh_hit = malloc((size_t)tot);
	if (!sl || !sc || !bl || !bc || !sh_hit || !bh_hit)
		bw_die("malloc", "latencies");
	struct { double p50, p99, share; int ok; } clean[2][2]; /* [lines][big] */
	for (int i = 0; i < 2; i++) {
		int lines = i ? 5 : 1;
		long bad = 0;
		for (int r = 0; r < QUOTE_ROUNDS; r++) {
			struct bw_lat x, y;
			bw_quote_scenario_irq(bs, "DE", lines, pr, &x, sl + r * pr, sc + r * pr, sh_hit + r * pr);
			bw_quote_scenario_irq(bb, "DE", lines, pr, &y, bl + r * pr, bc + r * pr, bh_hit + r * pr);
			bad += x.refused + y.refused;
		}
		if (bad)
			bw_die("quote", "refused (run bench_quote on this catalogue to see why)");
		for (int k = 0; k < 2; k++)
			clean[i][k].ok = !bw_lat_clean(k ? bl : sl, k ? bh_hit : sh_hit, tot, &clean[i][k].p50,
						       &clean[i][k].p99, &clean[i][k].share);
		bw_lat_of(sl, sc, tot, &ls[i]);
		bw_lat_of(bl, bc, tot, &lb[i]);
		for (int k = 0; k < 2; k++) {
			const struct bw_lat *x = k ? &lb[i] : &ls[i];
			printf("%s quote %d-line -> DE  %6ld quotes (all 200) | %6.0f quotes/s | wall p50 %6.1f us  p99 %6.1f us  "
			       "max %8.1f us | CPU time p50 %6.1f us  p99 %6.1f us\n",
			       k ? "big  " : "small", lines, x->n, x->qps, x->p50_us, x->p99_us, x->max_us, x->cpu_p50_us,
			       x->cpu_p99_us);
		}
	}
	free(sl);
	free(sc);
	free(bl);
	free(bc);
	for (int i = 0; i < 2; i++)
		printf("quote %d-line: p99 big/small %.2f wall (%.1f / %.1f us), %.2f CPU time (%.1f / %.1f us); "
		       "p50 big/small %.2f wall, %.2f CPU (target: p99 <= 1.5x)\n",
		       i ? 5 : 1, lb[i].p99_us / ls[i].p99_us, lb[i].p99_us, ls[i].p99_us, lb[i].cpu_p99_us / ls[i].cpu_p99_us,
		       lb[i].cpu_p99_us, ls[i].cpu_p99_us, lb[i].p50_us / ls[i].p50_us, lb[i].cpu_p50_us / ls[i].cpu_p50_us);
	/* What sets the p99: a few quotes take ~2x their p50, a share that
	 * grows with the quote's length (interrupts come at a steady rate:
	 * this VM's 250 Hz tick and function-call IPIs, seen 2026-11-30); when
	 * it passes 1 % the p99 lands among them, else it follows the p50 */
	for (int i = 0; i < 2; i++)
		printf("quote %d-line tail: quotes over 1.5x their p50: big %.2f %%, small %.2f %%; p98 big/small %.2f "
		       "(%.1f / %.1f us)\n",
		       i ? 5 : 1, 100 * lb[i].slow_share, 100 * ls[i].slow_share, lb[i].p98_us / ls[i].p98_us, lb[i].p98_us,
		       ls[i].p98_us);
	/* the same without the quotes an interrupt landed in: what the
	 * catalogue's size does to the tail, apart from the box's */
	for (int i = 0; i < 2; i++) {
		if (!clean[i][0].ok || !clean[i][1].ok) {
			printf("quote %d-line without interrupted quotes: not measured (the interrupt counters need "
			       "root and tracefs)\n", i ? 5 : 1);
			continue;
		}
		printf("quote %d-line without the quotes an interrupt landed in (perf counters of the interrupt "
		       "tracepoints, read around each): p99 big/small %.2f (%.1f / %.1f us), p50 big/small %.2f; interrupted: big %.2f %%, "
		       "small %.2f %% (target: p99 <= 1.5x)\n",
		       i ? 5 : 1, clean[i][1].p99 / clean[i][0].p99, clean[i][1].p99, clean[i][0].p99,
		       clean[i][1].p50 / clean[i][0].p50, 100 * clean[i][1].share, 100 * clean[i][0].share);
	}
	free(sh_hit);
	free(bh_hit);
	bw_caller_free(bs);
	bw_caller_free(bb);
	shard_close(&small);
	bw_world_free(&sw);
	fflush(stdout);

	/* 5. snapshot, then a WAL tail above it */
	uint64_t snap_lsn = sh.lsn;
	double s0 = bw_now_s();
	if (shard_snapshot_write(&sh, err, sizeof(err)))
		bw_die("shard_snapshot_write", err);
	double s1 = bw_now_s();
	struct snap_info si;
	if (snap_find_latest(sh.snap_dir, &si) != 1 || si.lsn != snap_lsn)
		bw_die(sh.snap_dir, "the snapshot just written is not the newest valid one");
	printf("snapshot: %" PRIu64 " records at LSN %" PRIu64 " written in %.1f s (%.0f records/s), %.0f MB on disk "
	       "(%.0f B per record)\n",
	       si.records, snap_lsn, s1 - s0, (double)si.records / (s1 - s0), (double)si.file_bytes / MB,
	       (double)si.file_bytes / (double)si.records);
	fflush(stdout);

	wal_close(sh.wal); /* the fill's WAL (mode none) wrote nothing */
	struct wal_config wc = {.dir = sh.wal_dir, .mode = WAL_MODE_WRITE, .segment_size = 64u << 20};
	sh.wal = wal_open(&wc, sh.lsn + 1, err, sizeof(err));
	if (!sh.wal)
		bw_die("wal_open", err);
	long nlev = (long)table_count(&sh.tables[REC_T_INVENTORY]);
	if (tail > nlev)
		tail = nlev;
	char (*ids)[ID_MAX_LEN] = calloc((size_t)(tail ? tail : 1), ID_MAX_LEN);
	if (!ids)
		bw_die("calloc", "tail ids");
	{ /* every (nlev / tail)-th level, in id order */
		struct oidx_iter it;
		long k = 0, j = 0, step = tail ? nlev / tail : 1;
		for (int ok = oidx_seek_ge(&sh.tables[REC_T_INVENTORY].by_order, NULL, 0, &it); ok && j < tail;
		     ok = oidx_next(&it), k++)
			if (k % step == 0)
				snprintf(ids[j++], ID_MAX_LEN, "%s", ((const struct row *)oidx_iter_val(&it))->id);
	}
	static char doc[BW_DOC_MAX], doc2[BW_DOC_MAX], odoc[BW_DOC_MAX];
	long wal_records = 0;
	double w0 = bw_now_s();
	for (long j = 0; j < tail; j++) {
		const struct inv_level *l = inv_level_get(&sh, ids[j], strlen(ids[j]));
		const struct offer *o = l ? offer_get(&sh, l->offer_id, strlen(l->offer_id)) : NULL;
		if (!o)
			bw_die(ids[j], "tail: level or offer not found");
		/* one more reserved, one less atp: the level as the engine writes it */
		size_t ld, od;
		const char *lv = doc_of(&l->row, &ld);
		char atp0[48], atp1[48];
		snprintf(atp0, sizeof(atp0), "\"atp\":%lld,", (long long)inv_atp(l));
		snprintf(atp1, sizeof(atp1), "\"atp\":%lld,", (long long)inv_atp(l) - 1);
		int dl = bw_doc_replace(lv, ld, "\"reserved\":0", "\"reserved\":1", doc2, sizeof(doc2));
		if (dl >= 0)
			dl = bw_doc_replace(doc2, (size_t)dl, atp0, atp1, doc, sizeof(doc));
		const char *ov = doc_of(&o->row, &od);
		int ol = bw_doc_replace(ov, od, "\"updated_at\":\"2025-01-01", "\"updated_at\":\"2025-01-02", odoc,
					sizeof(odoc));
		if (dl < 0 || ol < 0)
			bw_die(ids[j], "tail: document to patch not as filled");
		txn_begin(&sh);
		if (txn_put(&sh, REC_T_INVENTORY, l->row.id, l->row.id_len, doc, (size_t)dl) ||
		    txn_put(&sh, REC_T_OFFER, o->row.id, o->row.id_len, odoc, (size_t)ol) ||
		    txn_event(&sh, "stock.changed", l->owner_id, doc, (size_t)dl) || !txn_commit(&sh))
			bw_die(ids[j], "tail: transaction refused");
		wal_records += 3;
	}
	wal_flush(sh.wal);
	double w1 = bw_now_s();
	struct wal_stats ws;
	wal_stats(sh.wal, &ws);
	printf("WAL tail: %ld transactions (%ld records: level, offer, stock.changed event) in %.1f s, LSN %" PRIu64
	       "..%" PRIu64 ", %.0f MB written (%.0f MB raw)\n",
	       tail, wal_records, w1 - w0, snap_lsn + 1, sh.lsn, (double)ws.bytes_written / MB, (double)ws.bytes_raw / MB);
	free(ids);

	/* 6. what the load must find */
	snprintf(path, sizeof(path), "%s/expect", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		bw_die(path, "cannot write");
	fprintf(f, "snapshot_records %" PRIu64 "\nwal_txns %ld\nwal_records %ld\nlsn %" PRIu64 "\n", si.records, tail,
		wal_records, sh.lsn);
	for (int i = 0; i < REC_T_COUNT_; i++)
		if (sh.tables[i].ops)
			fprintf(f, "table %d %zu\n", i, table_count(&sh.tables[i]));
	if (fclose(f))
		bw_die(path, "cannot write");
	printf("peak RSS of the fill process: %.0f MB\n", (double)peak_rss_kb() / 1024.0);
	/* The WAL closed (flushed, synced); the tables are left to the exit:
	 * freeing millions of rows one by one would only cost time. */
	wal_close(sh.wal);
	sh.wal = NULL;
	return 0;
}

/* ---- load ------------------------------------------------------------------ */

static struct {
	double first_wal_s;
	long txns, records;
} replay;

static void count_logged(struct shard *sh, uint64_t lsn, const void *img, size_t len)
{
	(void)sh;
	(void)lsn;
	if (!replay.txns++)
		replay.first_wal_s = bw_now_s();
	size_t off = 0;
	struct rec_view rv;
	while (off < len && rec_decode(img, len, &off, &rv) == 1)
		replay.records++;
}

static int count_record(void *ctx, const void *rec, size_t len)
{
	(void)rec;
	*(uint64_t *)ctx += len;
	return 0;
}

static int load_main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: bench_scale load DIR [recover-only]\n");
		return 2;
	}
	const char *dir = argv[2];
	int recover_only = argc > 3 && !strcmp(argv[3], "recover-only");
	char path[600], err[512];
	long exp_snap = -1, exp_txns = -1, exp_recs = -1, exp_count[REC_T_COUNT_];
	unsigned long long exp_lsn = 0;
	for (int i = 0; i < REC_T_COUNT_; i++)
		exp_count[i] = -1;
	snprintf(path, sizeof(path), "%s/expect", dir);
	FILE *f = fopen(path, "r");
	if (!f)
		bw_die(path, "missing (run bench_scale fill first)");
	char line[128];
	while (fgets(line, sizeof(line), f)) {
		int ti;
		long v;
		if (sscanf(line, "table %d %ld", &ti, &v) == 2 && ti >= 0 && ti < REC_T_COUNT_)
			exp_count[ti] = v;
		else if (sscanf(line, "snapshot_records %ld", &v) == 1)
			exp_snap = v;
		else if (sscanf(line, "wal_txns %ld", &v) == 1)
			exp_txns = v;
		else if (sscanf(line, "wal_records %ld", &v) == 1)
			exp_recs = v;
		else
			sscanf(line, "lsn %llu", &exp_lsn);
	}
	fclose(f);

	static struct shard sh;
	struct config cfg;
	config_defaults(&cfg);
	snprintf(cfg.data_dir, sizeof(cfg.data_dir), "%s/shard", dir);
	snprintf(cfg.wal_mode, sizeof(cfg.wal_mode), "none");
	struct shard_open_opts o = {.tables = resource_tables, .logged = count_logged};
	long rss0 = bw_rss_bytes();
	double u0, s0, u1, s1;
	cpu_times(&u0, &s0);
	double t0 = bw_now_s();
	if (shard_load_with(&sh, &cfg, &o, err, sizeof(err)))
		bw_die("shard_load_with", err);
	double t1 = bw_now_s();
	cpu_times(&u1, &s1);
	long rss1 = bw_rss_bytes();
	if (!replay.txns)
		replay.first_wal_s = t1;

	long rows = 0, bad = 0;
	for (int i = 0; i < REC_T_COUNT_; i++) {
		long c = sh.tables[i].ops ? (long)table_count(&sh.tables[i]) : 0;
		rows += c;
		if (exp_count[i] >= 0 && exp_count[i] != c) {
			fprintf(stderr, "bench_scale: table %d: %ld rows loaded, %ld expected\n", i, c, exp_count[i]);
			bad = 1;
		}
	}
	if (replay.txns != exp_txns || replay.records != exp_recs || sh.lsn != exp_lsn) {
		fprintf(stderr, "bench_scale: WAL: %ld transactions, %ld records, LSN %" PRIu64 "; expected %ld, %ld, %llu\n",
			replay.txns, replay.records, sh.lsn, exp_txns, exp_recs, exp_lsn);
		bad = 1;
	}
	double total = t1 - t0, snap_s = replay.first_wal_s - t0, wal_s = t1 - replay.first_wal_s;
	long loaded = exp_snap + replay.records;
	printf("recovery (shard_load_with, fresh process): %ld snapshot records + %ld WAL records (%ld transactions) "
	       "in %.2f s = %.0f rows/s (target >= 2,000,000; published anchor 1.8M)\n",
	       exp_snap, replay.records, replay.txns, total, (double)loaded / total);
	printf("  up to the first WAL transaction (find + verify + load the snapshot, open the WAL): %.2f s = %.0f "
	       "records/s; WAL replay: %.2f s = %.0f records/s\n",
	       snap_s, (double)exp_snap / snap_s, wal_s, wal_s > 0 ? (double)replay.records / wal_s : 0.0);
	printf("  CPU: user %.2f s, system %.2f s (the kernel handing out fresh zeroed pages, clear_page: see the "
	       "profile)\n",
	       u1 - u0, s1 - s0);
	printf("  two threads (engine/storage/recovery.c): snapshot %llu ms, the loop waited %llu ms for rows, the "
	       "builder %llu ms for room, tables sized %s; WAL %llu ms, the loop waited %llu ms, the builder %llu ms\n",
	       (unsigned long long)sh.snap_time.ms, (unsigned long long)sh.snap_time.loop_wait_ms,
	       (unsigned long long)sh.snap_time.builder_wait_ms,
	       sh.snap_time.census_hint ? "from the census hint, while the file was verified" : "after the verifying pass",
	       (unsigned long long)sh.wal_time.ms,
	       (unsigned long long)sh.wal_time.loop_wait_ms, (unsigned long long)sh.wal_time.builder_wait_ms);
	printf("  %ld rows in memory after recovery, RSS %.0f MB (%.0f B per row)\n", rows, (double)(rss1 - rss0) / MB,
	       (double)(rss1 - rss0) / (double)rows);

	if (bad)
		bw_die("load", "the recovered shard does not hold what the fill wrote");
	if (recover_only) /* under perf record: nothing but the recovery (no teardown either) */
		return 0;

	/* the snapshot file layer alone (page cache warm from the load) */
	struct snap_info si;
	if (snap_find_latest(sh.snap_dir, &si) != 1)
		bw_die(sh.snap_dir, "no snapshot");
	uint64_t bytes = 0;
	char snap_path[sizeof(si.path)];
	memcpy(snap_path, si.path, sizeof(snap_path)); /* snap_load zeroes *info first */
	double v0 = bw_now_s();
	if (snap_load(snap_path, NULL, NULL, &si, err, sizeof(err)))
		bw_die("snap_load", err);
	double v1 = bw_now_s();
	if (snap_load(snap_path, count_record, &bytes, &si, err, sizeof(err)))
		bw_die("snap_load", err);
	double v2 = bw_now_s();
	printf("  snapshot file layer: one verifying pass (XXH3 + zstd decompress, %.0f MB of records from %.0f MB) "
	       "%.2f s; snap_load with a no-op callback (verify pass + hand-out pass) %.2f s: the load does the same "
	       "(snap_load_latest: the chosen file verified once, then loaded), so ~%.2f s of the load is the file "
	       "layer and the rest installing rows\n",
	       (double)bytes / MB, (double)si.file_bytes / MB, v1 - v0, v2 - v1, v2 - v1);
	printf("  peak RSS of the load process: %.0f MB\n", (double)peak_rss_kb() / 1024.0);
	return 0; /* the shard is left to the exit (see fill_main) */
}

int main(int argc, char **argv)
{
	bw_prog = "bench_scale";
	log_set_level(LOG_ERROR);
	if (argc >= 2 && !strcmp(argv[1], "fill"))
		return fill_main(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "load"))
		return load_main(argc, argv);
	fprintf(stderr, "usage: bench_scale fill REFDATA_DIR DIR WINES OFFERS_PER_WINE LEVELS [QUOTES] [TAIL_TXNS]\n"
			"       bench_scale load DIR [recover-only]\n");
	return 2;
}
