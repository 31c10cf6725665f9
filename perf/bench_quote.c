/*
 * bench_quote.c -- POST /v1/orders/quote-calculate measured in-process: the
 * route's own handler (quote_routes[0].fn) called directly on an api_ctx,
 * without HTTP, against a catalogue of W wines (default 100,000) with O
 * offers each (default 10, i.e. 1,000,000 offers).
 *
 * Set-up (WAL mode none; rows installed like bench_offers/bench_catalogue):
 *  - reference data: refdata_load_dir(argv[1]) -- the repository's data/;
 *  - partners (partner_seed): one seller in DE (the caller, quoting as
 *    itself) and 8 estate originators in FR, IT, ES, FR, IT, ES, FR, DE,
 *    each with one bonded warehouse in its country (table_put);
 *  - wines: wine_ingest (what POST /v1/wines runs), 20 per producer, then
 *    re-installed as published; every 4th producer is linked to an
 *    originator (an estate), whose offer comes first for its wines and is
 *    short of stock (ATP 2) on every 3rd wine, so routing falls through
 *    to the cheapest other single offer (rule 2; no line needs a split --
 *    the "split line" count printed shows it);
 *  - offers (table_put, canonical documents): O per wine, originators
 *    rotating, prices varying, FCA (one in 10 DAP), ATP 60; one in 10
 *    blocks DE and one in 10 is named to another seller (the rest open);
 *  - inventory: a sellable level at the originator's warehouse for every
 *    other offer in creation order (its ATP = the offer's qty_available),
 *    so freight origin and fulfiller come from the level for those, from
 *    the originator for the rest.  No listings (curator margin 0).
 * The set-up and the timed loop are perf/bench_world.c (shared with
 * perf/bench_scale.c); all offers are installed, then all levels.
 * Timed: Q quotes per scenario (default 20,000) for random wines, 6 units
 * per line in boxes of 6: 1-line and 5-line, to DE and to GB (non-EU:
 * only FR-origin or delivered offers are priceable there).  Each sample is
 * one handler call on an already-parsed body: validation, sku lookups,
 * candidate gathering (by-wine index, permit_check, ATP, best inventory
 * level, listing lookup, a price_quote per candidate), route_line, the
 * final price_quote over every allocation and the JSON response rendered
 * into a buffer.  NOT included: HTTP parsing, JSON parsing of the request
 * body, authentication, idempotency, the audit record and socket I/O.
 * quotes/s = quotes / the sum of the timed calls (server time, one core).
 *
 * Usage: bench_quote REFDATA_DIR [WINES] [OFFERS_PER_WINE] [QUOTES]
 * Built (with perf/bench_world.c) and run by perf/bench.sh against
 * build/rel/lib.a.
 */
#include <stdio.h>
#include <stdlib.h>

#include "engine/base/log.h"
#include "engine/pricing/quote.h"
#include "engine/pricing/refdata.h"
#include "perf/bench_world.h"

int main(int argc, char **argv)
{
	bw_prog = "bench_quote";
	if (argc < 2) {
		fprintf(stderr, "usage: bench_quote REFDATA_DIR [WINES] [OFFERS_PER_WINE] [QUOTES]\n");
		return 2;
	}
	long nw = argc > 2 ? atol(argv[2]) : 100000;
	long per = argc > 3 ? atol(argv[3]) : 10;
	long nq = argc > 4 ? atol(argv[4]) : 20000;
	if (nw < 100 || per < 1 || per > QUOTE_MAX_CANDIDATES || nq < 100) {
		fprintf(stderr, "bench_quote: WINES >= 100, 1 <= OFFERS_PER_WINE <= %d, QUOTES >= 100\n",
			QUOTE_MAX_CANDIDATES);
		return 2;
	}
	log_set_level(LOG_ERROR);
	char err[512];
	struct refdata *rd = NULL;
	if (refdata_load_dir(argv[1], &rd, err, sizeof(err)))
		bw_die(argv[1], err);
	refdata_set_current(rd);

	static struct shard sh;
	bw_shard_open(&sh, "/tmp/bench-quote-unused", "none");
	long rss0 = bw_rss_bytes();
	double t0 = bw_now_s();
	struct bw_world w = {.sh = &sh, .nw = nw, .per = per, .nl = nw * per / 2};
	bw_seed_partners(&w);
	bw_fill_wines(&w);
	double t1 = bw_now_s();
	bw_fill_offers(&w);
	bw_fill_levels(&w);
	double t2 = bw_now_s();
	long rss = bw_rss_bytes();
	printf("catalogue: %ld wines (%ld producers, every 4th an estate) in %.1f s, %ld offers + %ld inventory levels "
	       "in %.1f s; RSS after fill %.0f MB (%.0f MB above the empty shard)\n",
	       nw, (nw + BW_WINES_PER_PRODUCER - 1) / BW_WINES_PER_PRODUCER, t1 - t0, w.n_offers, w.n_levels, t2 - t1,
	       (double)rss / 1048576.0, (double)(rss - rss0) / 1048576.0);
	printf("timed: one quote-calculate handler call on a parsed body (validation, lookups, candidates with "
	       "permit/ATP/price each, routing, final pricing, JSON response); not timed: HTTP, JSON request parsing, "
	       "auth, audit\n");
	fflush(stdout);

	struct bw_caller *b = bw_caller_new(&w);
	bw_quote_scenario(b, "", "DE", 1, nq, NULL, NULL, NULL);
	bw_quote_scenario(b, "", "DE", 5, nq, NULL, NULL, NULL);
	bw_quote_scenario(b, "", "GB", 1, nq, NULL, NULL, NULL);
	bw_quote_scenario(b, "", "GB", 5, nq, NULL, NULL, NULL);

	bw_caller_free(b);
	bw_world_free(&w);
	shard_close(&sh);
	refdata_set_current(NULL); /* frees rd */
	return 0;
}
