/*
 * bench_catalogue.c -- the catalogue's ingest path measured in-process (no
 * HTTP, no loopback): wine_ingest(), the function POST /v1/wines calls,
 * on JSON bodies that a partner feed would send.
 *
 *  1. build: N wines (default 1,000,000) ingested one by one, each resolved
 *     against the catalogue built so far (tiers 1-3) before it is created;
 *     ~60 % carry a GTIN, ~30 % an LWIN, every one a natural key; their
 *     producers (N/20) are created inline on first sight.
 *  2. ingest with dedup against the full catalogue: M bodies (default
 *     100,000), half of them known wines re-sent the way feeds send them
 *     (same GTIN, the case GTIN-14, the LWIN-18 of a case, the natural key
 *     spelled without accents with "75cl" and a string vintage), half new.
 *  3. match latency: wine_match_body() (validate + tiers 1-3, no write) on
 *     the same mix, each call timed: p50 / p99 / max.
 *  4. memory per wine: RSS growth during the build divided by N.  That is
 *     everything an ingested wine keeps in memory: its row, canonical
 *     document and derived keys, its dedup and list index entries, its
 *     crosswalk rows (GTIN/LWIN), its share of a producer and the
 *     wine.created event that carries its document.
 *
 * Every timed ingest includes parsing the body (the route parses too) and
 * the commit: the records are applied to memory and handed to the WAL.
 * The WAL runs in mode "none" here (no files, no writer thread: the event
 * loop's side of a commit only), unless argv[4] says "write" -- then the
 * writer thread compresses and writes segments on the other core.
 *
 * Usage: bench_catalogue DATA_DIR [WINES] [BODIES] [none|write]
 * Built and run by perf/bench.sh against build/rel/lib.a.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/edge/api.h"
#include "engine/base/config.h"
#include "engine/base/log.h"
#include "engine/storage/shard.h"
#include "engine/catalogue/wine.h"
#include "perf/bench_world.h"

#define DEFAULT_WINES 1000000
#define DEFAULT_BODIES 100000
#define WINES_PER_PRODUCER 20
#define BODY_MAX 2048

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *const countries[] = {"FR", "IT", "ES", "PT", "DE", "AT", "US", "AR", "AU", "ZA"};
static const char *const colours[] = {"red", "white", "rose", "orange"};

/* The GTIN-13 of wine i ("2" prefix: in-store numbers, never real). */
static void gtin_of(long i, char out[14])
{
	char d[32];
	snprintf(d, sizeof(d), "2%011ld", i % 100000000000L);
	memcpy(out, d, 12);
	out[12] = (char)('0' + wid_gtin_check_digit(d, 12));
	out[13] = 0;
}

/* Its case GTIN-14: indicator 1, the unit's first 12 digits, a new check. */
static void case_gtin_of(long i, char out[15])
{
	char d[32];
	snprintf(d, sizeof(d), "12%011ld", i % 100000000000L);
	memcpy(out, d, 13);
	out[13] = (char)('0' + wid_gtin_check_digit(d, 13));
	out[14] = 0;
}

/* Parts of wine i. */
struct wine_parts {
	long producer;
	int cuvee, vintage, country;
	int has_gtin, has_lwin;
	long lwin7;
};

static void parts_of(long i, struct wine_parts *p)
{
	p->producer = i / WINES_PER_PRODUCER;
	int k = (int)(i % WINES_PER_PRODUCER);
	p->cuvee = k / 4;
	p->vintage = 2000 + k % 4 + (int)(p->producer % 5) * 4;
	p->country = (int)(p->producer % 10);
	p->has_gtin = i % 5 < 3;
	p->has_lwin = i % 10 < 3;
	p->lwin7 = 1000000 + p->producer * 5 + p->cuvee;
}

/* The body a feed sends for wine i the first time. */
static int body_new(long i, char *out)
{
	struct wine_parts p;
	parts_of(i, &p);
	char gtin[64] = "", lwin[64] = "", g[14];
	if (p.has_gtin) {
		gtin_of(i, g);
		snprintf(gtin, sizeof(gtin), ",\"gtin\":\"%s\"", g);
	}
	if (p.has_lwin)
		snprintf(lwin, sizeof(lwin), ",\"lwin\":\"%07ld%04d\"", p.lwin7, p.vintage);
	return snprintf(out, BODY_MAX,
			"{\"title\":\"Château Banc d'Essai %ld Cuvée %d %d\",\"producer\":{\"name\":\"Château Banc "
			"d'Essai %ld\",\"country\":\"%s\"},\"cuvee\":\"Cuvée N°%d\",\"vintage\":%d,\"volume_in_liters\":0.75,"
			"\"abv\":13.5,\"colour\":\"%s\",\"category\":\"wine\",\"country\":\"%s\",\"region\":{\"fr\":\"Région %ld\","
			"\"en\":\"Region %ld\"},\"grape_varieties\":[{\"variety\":\"Merlot\",\"vivc_number\":7657,\"percentage\":"
			"70},{\"variety\":\"Cabernet Franc\",\"vivc_number\":1927,\"percentage\":30}],\"bottler\":{\"name\":"
			"\"Château Banc d'Essai %ld\",\"address\":\"1 route des Vignes\"},\"lot_number\":\"L%ld\","
			"\"allergens\":[\"sulphites\"]%s%s}",
			p.producer, p.cuvee, p.vintage, p.producer, countries[p.country], p.cuvee, p.vintage,
			colours[i % 4], countries[p.country], p.producer % 100, p.producer % 100, p.producer, i, gtin, lwin);
}

/* Wine i re-sent as feeds do: by GTIN, case GTIN, LWIN-18 or natural key
 * spelled differently (chosen by `how`). */
static int body_known(long i, int how, char *out)
{
	struct wine_parts p;
	parts_of(i, &p);
	char g[15];
	if (how == 0 && p.has_gtin) {
		gtin_of(i, g);
		return snprintf(out, BODY_MAX, "{\"title\":\"feed item %ld\",\"producer\":{\"name\":\"x\"},\"gtin\":\"%s\","
				"\"description\":\"from a retailer feed\"}", i, g);
	}
	if (how == 1 && p.has_gtin) {
		case_gtin_of(i, g);
		return snprintf(out, BODY_MAX, "{\"title\":\"case of 6, item %ld\",\"producer\":{\"name\":\"x\"},"
				"\"gtin\":\"%s\"}", i, g);
	}
	if (how == 2 && p.has_lwin)
		return snprintf(out, BODY_MAX, "{\"title\":\"lwin %ld\",\"producer\":{\"name\":\"x\"},"
				"\"lwin\":\"%07ld%04d0600750\"}", i, p.lwin7, p.vintage);
	return snprintf(out, BODY_MAX,
			"{\"title\":\"CHATEAU BANC D ESSAI %ld\",\"producer\":{\"name\":\"CHATEAU BANC D'ESSAI %ld\"},"
			"\"cuvee\":\"cuvee n %d\",\"vintage\":\"%d\",\"volume_in_liters\":\"75cl\",\"country\":\"%s\","
			"\"food_pairings\":[{\"pairing\":\"lamb\"}]}",
			p.producer, p.producer, p.cuvee, p.vintage, countries[p.country]);
}

static int ingest(struct api_ctx *c, const char *body, int len, struct wine_ingest_result *r)
{
	struct json_doc *d = json_parse(body, (size_t)len, NULL, NULL);
	if (!d)
		return -1;
	c->n_errs = 0;
	wine_ingest(c, json_root(d), r);
	json_doc_free(d);
	return r->status;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_catalogue DATA_DIR [WINES] [BODIES] [none|write]\n");
		return 2;
	}
	long n = argc > 2 ? atol(argv[2]) : DEFAULT_WINES;
	long m = argc > 3 ? atol(argv[3]) : DEFAULT_BODIES;
	const char *mode = argc > 4 ? argv[4] : "none";
	if (n < 1000 || m < 100 || (strcmp(mode, "none") && strcmp(mode, "write"))) {
		fprintf(stderr, "bench_catalogue: WINES >= 1000, BODIES >= 100, mode none|write\n");
		return 2;
	}
	log_set_level(LOG_ERROR);
	static struct shard sh;
	struct config cfg;
	config_defaults(&cfg);
	snprintf(cfg.data_dir, sizeof(cfg.data_dir), "%s", argv[1]);
	snprintf(cfg.wal_mode, sizeof(cfg.wal_mode), "%s", mode);
	cfg.snapshot_interval_s = 0;
	char err[512];
	if (shard_open(&sh, &cfg, err, sizeof(err))) {
		fprintf(stderr, "bench_catalogue: %s\n", err);
		return 1;
	}
	struct api_ctx *c = calloc(1, sizeof(*c));
	c->sh = &sh;
	c->who.authenticated = c->who.is_platform = 1;
	snprintf(c->who.entity_id, sizeof(c->who.entity_id), "platform");
	static char body[BODY_MAX];
	struct wine_ingest_result r;

	/* 1. build */
	long rss0 = bw_rss_bytes();
	double t0 = now_s();
	long created = 0;
	for (long i = 0; i < n; i++) {
		int len = body_new(i, body);
		if (ingest(c, body, len, &r) != 201) {
			fprintf(stderr, "bench_catalogue: wine %ld: %d %s %s\n", i, r.status, r.code ? r.code : "", r.detail);
			return 1;
		}
		created++;
	}
	double t1 = now_s();
	long rss1 = bw_rss_bytes();
	size_t wines = table_count(&sh.tables[REC_T_WINE]);
	printf("catalogue build: %ld wines ingested in %.1f s = %.0f wines/s (each resolved by tiers 1-3 against the "
	       "catalogue so far, then created; %zu producers created inline, %zu crosswalk rows)\n",
	       created, t1 - t0, (double)created / (t1 - t0), table_count(&sh.tables[REC_T_PRODUCER]),
	       table_count(&sh.tables[REC_T_EXTID]));
	unsigned long long doc_bytes = 0;
	struct oidx_iter it;
	for (int ok = oidx_seek_ge(&sh.tables[REC_T_WINE].by_order, NULL, 0, &it); ok; ok = oidx_next(&it))
		doc_bytes += ((const struct row *)oidx_iter_val(&it))->doc_len;
	printf("memory per wine: %.0f bytes (RSS %.1f MB -> %.1f MB over %zu wines; each keeps its row, canonical "
	       "document of %.0f bytes on average, derived keys, index entries, crosswalk rows, a producer share and its "
	       "wine.created event)\n",
	       (double)(rss1 - rss0) / (double)wines, rss0 / 1048576.0, rss1 / 1048576.0, wines,
	       (double)doc_bytes / (double)wines);

	/* 2. ingest with dedup against the full catalogue */
	unsigned long seed = 88172645463325252ul;
	long matched = 0, fresh = 0, by_tier[4] = {0};
	double t2 = now_s();
	for (long j = 0; j < m; j++) {
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		int len;
		if (j % 2) {
			len = body_new(n + j, body);
		} else {
			long i = (long)(seed % (unsigned long)n);
			len = body_known(i, (int)((seed >> 32) % 4), body);
		}
		int st = ingest(c, body, len, &r);
		if (st == 200) {
			matched++;
			by_tier[r.match.tier & 3]++;
		} else if (st == 201) {
			fresh++;
		} else {
			fprintf(stderr, "bench_catalogue: body %ld: %d %s %s\n%s\n", j, st, r.code ? r.code : "", r.detail, body);
			return 1;
		}
	}
	double t3 = now_s();
	printf("ingest with dedup against %ld wines: %ld bodies in %.2f s = %.0f wines/s (%ld matched and enriched: "
	       "tier 1 %ld, tier 2 %ld, tier 3 %ld; %ld created)\n",
	       n, m, t3 - t2, (double)m / (t3 - t2), matched, by_tier[1], by_tier[2], by_tier[3], fresh);

	/* 3. match latency */
	double *lat = malloc((size_t)m * sizeof(double));
	long lm = 0;
	seed = 2463534242ul;
	for (long j = 0; j < m; j++) {
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		int len = j % 2 ? body_new(2 * n + j, body)
				: body_known((long)(seed % (unsigned long)n), (int)((seed >> 32) % 4), body);
		struct json_doc *d = json_parse(body, (size_t)len, NULL, NULL);
		struct wine_match mt;
		c->n_errs = 0;
		double a = now_s();
		int rc = wine_match_body(c, json_root(d), &mt);
		double b = now_s();
		json_doc_free(d);
		if (rc) {
			fprintf(stderr, "bench_catalogue: match %ld failed\n", j);
			return 1;
		}
		lm += mt.result == WR_MATCHED;
		lat[j] = (b - a) * 1e6;
	}
	qsort(lat, (size_t)m, sizeof(double), cmp_double);
	printf("match latency against %zu wines (validate + tiers 1-3, no write; body parse excluded): p50 %.1f us, "
	       "p99 %.1f us, max %.1f us over %ld calls (%ld matched)\n",
	       table_count(&sh.tables[REC_T_WINE]), lat[m / 2], lat[(m * 99) / 100], lat[m - 1], m, lm);
	free(lat);
	free(c);
	shard_close(&sh);
	return 0;
}
