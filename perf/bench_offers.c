/*
 * bench_offers.c -- the offers read path measured in-process: offer_list(),
 * the function GET /v1/offers runs (read-path filter over the caller's
 * candidate streams), without HTTP.
 *
 * For each table size N (default 100,000 and 1,000,000) and each share of
 * the table the caller (a seller partner in DE) may see:
 *   1%, 50%, 100%  the visible rows are open offers; the rest are named to
 *                  another seller, so they are in no stream of the caller;
 *   1%-blocked     the adversarial layout for the streams: 99% of the rows
 *                  are open offers that block the caller's country, so they
 *                  ARE candidates and must be examined and refused --
 *                  OFFER_SCAN_BUDGET bounds each page's work.
 * it pages through with page_size 50 (restarting at the top at the end),
 * timing each page: pages/s, p50/p99 page latency, and rows examined per
 * page (the page's cost; the table size must not appear in it).
 *
 * Rows are installed with table_put (the path recovery and commits use);
 * the WAL is off.  Usage: bench_offers [SIZES...] (e.g. 100000 1000000).
 * Built and run by perf/bench.sh against build/rel/lib.a.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/edge/api.h"
#include "engine/base/config.h"
#include "engine/base/log.h"
#include "engine/supply/offer.h"
#include "engine/catalogue/partner.h"
#include "engine/storage/shard.h"

#define PAGES 2000      /* timed pages per scenario */
#define PAGE_SIZE 50
#define DOC_MAX 1024

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

enum layout { L_NAMED_OTHER, L_BLOCKED };

/* Fill the offer table with n rows of which every `every`-th is visible. */
static void fill(struct shard *sh, long n, long visible_per_100, enum layout lay)
{
	static char doc[DOC_MAX];
	char id[ID_MAX_LEN], why[128];
	for (long i = 0; i < n; i++) {
		id_new(&sh->ids, "ofr", id);
		int vis = (i % 100) < visible_per_100;
		const char *perm = vis ? "{\"default\":\"any\",\"allowed_countries\":[],\"blocked_countries\":[],\"named_sellers\":[]}"
			       : lay == L_BLOCKED
				       ? "{\"default\":\"any\",\"allowed_countries\":[],\"blocked_countries\":[\"DE\"],\"named_sellers\":[]}"
				       : "{\"default\":\"any\",\"allowed_countries\":[],\"blocked_countries\":[],\"named_sellers\":[\"ptn_other\"]}";
		int len = snprintf(doc, sizeof(doc),
				   "{\"id\":\"%s\",\"offer_id\":\"%s\",\"wine_id\":\"wine_%08ld\",\"originator_id\":\"ptn_orig%ld\","
				   "\"seller_price\":12.50,\"currency\":\"EUR\",\"qty_available\":60,\"condition\":\"new\","
				   "\"incoterm\":\"FCA\",\"min_order_qty\":null,\"case_size\":null,\"valid_from\":null,\"valid_to\":null,"
				   "\"permissions\":%s,\"network_shareable\":true,\"status\":\"active\",\"source\":\"direct\","
				   "\"created_at\":\"2025-01-01T00:00:00.000Z\",\"updated_at\":\"2025-01-01T00:00:00.000Z\"}",
				   id, id, i, i % 100, perm);
		if (table_put(&sh->tables[REC_T_OFFER], id, strlen(id), doc, (size_t)len, 1, why)) {
			fprintf(stderr, "bench_offers: %s\n", why);
			exit(1);
		}
	}
}

/* How many offers keep no document (table.h render) and what writing
 * every offer's document costs (what a list page adds per row for them):
 * three passes over the table, the best. */
static void render_cost(struct shard *sh)
{
	const struct table *t = &sh->tables[REC_T_OFFER];
	struct buf b;
	buf_init(&b, 1u << 20);
	long n = 0, docless = 0;
	double best = 1e9;
	for (int pass = 0; pass < 3; pass++) {
		struct oidx_iter it;
		double a = now_s();
		n = docless = 0;
		for (int ok = oidx_seek_ge(&t->by_order, NULL, 0, &it); ok; ok = oidx_next(&it)) {
			const struct row *r = oidx_iter_val(&it);
			struct jw w;
			buf_reset(&b);
			jw_init(&w, &b);
			row_doc_write(&w, r);
			n++;
			docless += !r->doc;
		}
		double dt = now_s() - a;
		best = dt < best ? dt : best;
	}
	printf("documents: %ld of %ld offers keep none (rendered from the row); writing one: %.0f ns\n", docless, n,
	       n ? best * 1e9 / (double)n : 0.0);
	buf_free(&b);
}

static void run(long n, long pct, enum layout lay, const char *label)
{
	static struct shard sh;
	memset(&sh, 0, sizeof(sh));
	struct config cfg;
	config_defaults(&cfg);
	snprintf(cfg.data_dir, sizeof(cfg.data_dir), "/tmp/bench-offers-unused");
	snprintf(cfg.wal_mode, sizeof(cfg.wal_mode), "none");
	cfg.snapshot_interval_s = 0;
	char err[512];
	if (shard_open(&sh, &cfg, err, sizeof(err))) {
		fprintf(stderr, "bench_offers: %s\n", err);
		exit(1);
	}
	if (partner_seed(&sh, "{\"legal_name\":\"Bench Seller\",\"country\":\"DE\",\"roles\":[\"seller\"]}")) {
		fprintf(stderr, "bench_offers: partner_seed failed\n");
		exit(1);
	}
	const struct row *pr = NULL;
	struct oidx_iter it;
	if (oidx_seek_ge(&sh.tables[REC_T_PARTNER].by_order, NULL, 0, &it))
		pr = oidx_iter_val(&it);
	double t0 = now_s();
	fill(&sh, n, pct, lay);
	double t1 = now_s();
	if (pct == 1 && lay == L_NAMED_OTHER)
		render_cost(&sh);
	struct api_ctx *c = calloc(1, sizeof(*c));
	struct srv_response rs;
	memset(&rs, 0, sizeof(rs));
	buf_init(&rs.body, 1u << 24);
	c->sh = &sh;
	c->rs = &rs;
	snprintf(c->who.entity_id, sizeof(c->who.entity_id), "%.*s", (int)pr->id_len, pr->id);
	struct offer_query q;
	memset(&q, 0, sizeof(q));
	q.status = q.condition = -1;
	struct api_page pg = {.size = PAGE_SIZE};
	static double lat[PAGES];
	unsigned long long rows = 0, examined = 0;
	uint32_t max_ex = 0;
	double tb = now_s();
	for (int p = 0; p < PAGES; p++) {
		buf_reset(&rs.body);
		jw_init(&c->w, &rs.body);
		c->span_to[0] = 0;
		uint32_t ex = 0;
		double a = now_s();
		rows += offer_list(c, &q, &pg, &ex);
		lat[p] = now_s() - a;
		examined += ex;
		if (ex > max_ex)
			max_ex = ex;
		if (c->span_to[0]) {
			int k = b64url_decode(c->span_to, strlen(c->span_to), pg.cursor, sizeof(pg.cursor) - 1);
			pg.has_cursor = k > 0;
			pg.cursor_len = k > 0 ? (uint32_t)k : 0;
		} else {
			pg.has_cursor = 0; /* end of the list: start over */
		}
	}
	double te = now_s();
	qsort(lat, PAGES, sizeof(lat[0]), cmp_double);
	printf("offers %8ld  visible %-11s  fill %5.1f s | %7.0f pages/s  p50 %7.1f us  p99 %7.1f us | rows/page %5.1f  "
	       "examined/page %7.1f (max %u)\n",
	       n, label, t1 - t0, PAGES / (te - tb), lat[PAGES / 2] * 1e6, lat[PAGES * 99 / 100] * 1e6,
	       (double)rows / PAGES, (double)examined / PAGES, max_ex);
	fflush(stdout);
	buf_free(&rs.body);
	free(c);
	shard_close(&sh);
}

int main(int argc, char **argv)
{
	log_set_level(LOG_ERROR);
	long sizes[8] = {100000, 1000000};
	int ns = 2;
	if (argc > 1) {
		ns = 0;
		for (int i = 1; i < argc && ns < 8; i++)
			if (atol(argv[i]) >= 1000)
				sizes[ns++] = atol(argv[i]);
	}
	printf("page_size %d, %d timed pages per line; caller: a seller partner in DE (not the originator); "
	       "OFFER_SCAN_BUDGET %u\n",
	       PAGE_SIZE, PAGES, OFFER_SCAN_BUDGET);
	for (int s = 0; s < ns; s++) {
		run(sizes[s], 1, L_NAMED_OTHER, "1%");
		run(sizes[s], 50, L_NAMED_OTHER, "50%");
		run(sizes[s], 100, L_NAMED_OTHER, "100%");
		run(sizes[s], 1, L_BLOCKED, "1%-blocked");
	}
	return 0;
}
