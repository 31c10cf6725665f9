/*
 * bench_world.h -- the quote benchmarks' catalogue, shared by
 * perf/bench_quote.c and perf/bench_scale.c (linked with them by
 * perf/bench.sh; not part of lib.a).
 *
 * One shard filled in-process (rows installed with table_put, as WAL replay
 * and snapshot load install them; wines through wine_ingest):
 *  - partners (partner_seed): one seller in DE (the quoting caller) and
 *    BW_N_ORIG estate originators in FR, IT, ES, FR, IT, ES, FR, DE, each
 *    with one bonded warehouse in its country;
 *  - wines: wine_ingest (what POST /v1/wines runs), BW_WINES_PER_PRODUCER
 *    per producer, then re-installed as published; every 4th producer is
 *    linked to an originator (an estate), whose offer comes first for its
 *    wines and is short of stock (ATP 2) on every 3rd wine;
 *  - offers (canonical documents): `per` per wine, originators rotating,
 *    prices varying, FCA (one in 10 DAP), qty 60; one in 10 blocks DE and
 *    one in 10 is named to another seller (the rest open);
 *  - inventory levels: `nl` sellable levels spread evenly over the offers
 *    in creation order (nl = wines * per / 2, the default, puts one on
 *    every other offer), at the originator's warehouse, on_hand = the
 *    offer's qty_available.  No listings.
 * Offers are installed first, then levels (so each table's memory can be
 * measured on its own).
 */
#ifndef WM_BENCH_WORLD_H
#define WM_BENCH_WORLD_H

#include <stddef.h>

#include "engine/edge/api.h"
#include "engine/storage/id.h"
#include "engine/storage/shard.h"

#define BW_N_ORIG 8
#define BW_WINES_PER_PRODUCER 20
#define BW_DOC_MAX 4096

/* Name used in bw_die's messages (the program's). */
extern const char *bw_prog;

_Noreturn void bw_die(const char *what, const char *why);
double bw_now_s(void);
/* Resident set size of this process, bytes (/proc/self/statm). */
long bw_rss_bytes(void);

/* Open `sh` on data_dir with the given WAL mode ("none", "write", "fsync"),
 * no periodic snapshots; dies on failure. */
void bw_shard_open(struct shard *sh, const char *data_dir, const char *wal_mode);
/* table_put a document (dies on refusal). */
void bw_put(struct shard *sh, int table, const char *id, const char *doc, int len);
/* Copy src (len bytes) to out with the first `from` replaced by `to`;
 * returns the new length, or -1 if from is absent or out (cap) too small. */
int bw_doc_replace(const char *src, size_t len, const char *from, const char *to, char *out, size_t cap);

struct bw_world {
	struct shard *sh;
	long nw, per, nl;                /* wines, offers per wine, inventory levels */
	char (*wine)[ID_MAX_LEN];        /* nw wine ids, in creation order */
	char seller[ID_MAX_LEN];
	char orig[BW_N_ORIG][ID_MAX_LEN], loc[BW_N_ORIG][ID_MAX_LEN];
	long n_offers, n_levels;
};

/* w->sh, nw, per, nl set; allocates w->wine.  Each step dies on failure. */
void bw_seed_partners(struct bw_world *w);
void bw_fill_wines(struct bw_world *w);
void bw_fill_offers(struct bw_world *w);
void bw_fill_levels(struct bw_world *w);
void bw_world_free(struct bw_world *w);

/* The DE seller quoting as itself through the quote-calculate handler. */
struct bw_caller;
struct bw_caller *bw_caller_new(struct bw_world *w);
void bw_caller_free(struct bw_caller *b);

struct bw_lat {
	long n, ok, split, refused;
	double qps, p50_us, p99_us, max_us;     /* wall time (CLOCK_MONOTONIC) */
	double cpu_p50_us, cpu_p99_us;          /* this thread's CPU time: without preemption by others */
	double p98_us;                          /* wall time */
	double slow_share;                      /* the share of quotes over 1.5x the p50 (wall) */
};
/* q quotes for random wines (6 units in boxes of 6 per line) to dest, each
 * timed as one handler call on an already-parsed body; prints one line
 * (prefixed by `label`; NULL prints nothing) and fills *out (may be NULL).
 * The wall figures are printed; the CPU-time ones (a shared machine's
 * preemption left out) only returned.  lat_s and cpu_s (may be NULL; q
 * entries each) get every call's wall and CPU seconds, in call order. */
void bw_quote_scenario(struct bw_caller *b, const char *label, const char *dest, int lines, long q,
		       struct bw_lat *out, double *lat_s, double *cpu_s);
/* bw_quote_scenario that also reads the interrupt count of the calling
 * thread (bw_irqs_here) right before and right after each timed
 * call: hit[k] = 1 when an interrupt landed in call k, 0 when none did, 2
 * when the count could not be read. */
void bw_quote_scenario_irq(struct bw_caller *b, const char *dest, int lines, long q, struct bw_lat *out,
			   double *lat_s, double *cpu_s, unsigned char *hit);
/* Percentiles of n samples of wall and CPU seconds (both sorted in place). */
void bw_lat_of(double *lat_s, double *cpu_s, long n, struct bw_lat *out);

/*
 * Interrupts on this VM (seen 2026-11-30 and 2026-12-01): the timer tick
 * (250 Hz), function-call IPIs and the disk's completions arrive at a
 * steady rate, and each one that lands inside a timed call adds ~15 us or
 * more to it.  A pure computation of 36.5 us (no memory traffic, 20,000
 * runs) read p50 36.5, p98 38.5, p99 50.5 us; the 0.95 % of its runs an
 * interrupt landed in (bw_irqs_here) p50 51.9; the others p99 38.7.  The
 * same computation at 20.6 us: p99 22.1 (0.55 % interrupted), so two
 * computations 1.77x apart read a p99 ratio of 2.29, 1.83 without the
 * interrupted runs.  A call's p99 lands among the interrupted ones once
 * their share passes 1 %, which grows with the call's length: these
 * helpers tell them apart.
 */
/* The interrupts that have landed in the calling thread so far (perf
 * counters of the kernel's interrupt-entry tracepoints: the timer, IPIs,
 * device interrupts; read in one system call, without the cache traffic
 * of reading /proc/interrupts, which slowed the quotes it was read around
 * by ~4 us); -1 when they cannot be opened (not root, no tracefs). */
long bw_irqs_here(void);
/* The p50 and p99 (us) of the wall samples lat_s[0..n) whose hit[] is 0,
 * and the share of samples whose hit[] is not (nothing sorted in place).
 * 0, or -1 when fewer than 100 samples are left. */
int bw_lat_clean(const double *lat_s, const unsigned char *hit, long n, double *p50_us, double *p99_us,
		 double *hit_share);

#endif
