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
 *    other offer (its ATP = the offer's qty_available), so freight origin
 *    and fulfiller come from the level for those, from the originator for
 *    the rest.  No listings (curator margin 0).
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
 * Built and run by perf/bench.sh against build/rel/lib.a.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/edge/api.h"
#include "engine/base/config.h"
#include "engine/edge/key.h"
#include "engine/base/log.h"
#include "engine/catalogue/partner.h"
#include "engine/catalogue/producer.h"
#include "engine/pricing/quote.h"
#include "engine/pricing/refdata.h"
#include "engine/storage/shard.h"
#include "engine/catalogue/wine.h"

#define N_ORIG 8
#define WINES_PER_PRODUCER 20
#define DOC_MAX 4096
#define STAMP "2025-01-01T00:00:00.000Z"

static const char *const orig_country[N_ORIG] = {"FR", "IT", "ES", "FR", "IT", "ES", "FR", "DE"};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long rss_bytes(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return 0;
	if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = 0;
	fclose(f);
	return resident * sysconf(_SC_PAGESIZE);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void die(const char *what, const char *why)
{
	fprintf(stderr, "bench_quote: %s: %s\n", what, why);
	exit(1);
}

static void put(struct shard *sh, int table, const char *id, const char *doc, int len)
{
	char why[256];
	if (len < 0 || len >= DOC_MAX)
		die("document", "too long");
	if (table_put(&sh->tables[table], id, strlen(id), doc, (size_t)len, 1, why))
		die(id, why);
}

/* Re-install a row's document with `from` replaced by `to` (first occurrence). */
static void patch(struct shard *sh, int table, const struct row *r, const char *from, const char *to)
{
	static char doc[DOC_MAX * 4];
	const char *p = strstr(r->doc, from);
	if (!p)
		die(r->id, "document lacks the member to patch");
	size_t pre = (size_t)(p - r->doc), fl = strlen(from), tl = strlen(to);
	if (r->doc_len - fl + tl >= sizeof(doc))
		die(r->id, "document too long");
	memcpy(doc, r->doc, pre);
	memcpy(doc + pre, to, tl);
	memcpy(doc + pre + tl, p + fl, r->doc_len - pre - fl + 1);
	char id[ID_MAX_LEN];
	snprintf(id, sizeof(id), "%.*s", (int)r->id_len, r->id);
	put(sh, table, id, doc, (int)(r->doc_len - fl + tl));
}

/* The id of the seeded partner with this legal name. */
static void partner_id_of(struct shard *sh, const char *name, char out[ID_MAX_LEN])
{
	struct oidx_iter it;
	for (int ok = oidx_seek_ge(&sh->tables[REC_T_PARTNER].by_order, NULL, 0, &it); ok; ok = oidx_next(&it)) {
		const struct partner *p = oidx_iter_val(&it);
		if (!strcmp(p->v.legal_name, name)) {
			snprintf(out, ID_MAX_LEN, "%s", p->v.id[0] ? p->v.id : p->row.id);
			return;
		}
	}
	die(name, "seeded partner not found");
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct bench {
	struct shard *sh;
	long nw;
	char (*wine)[ID_MAX_LEN];
	struct api_ctx *c;
	struct srv_response rs;
	route_fn handler;
};

static void scenario(struct bench *b, const char *dest, int lines, long q)
{
	double *lat = malloc((size_t)q * sizeof(double));
	if (!lat)
		die("malloc", "latencies");
	static char body[4096];
	long ok = 0, refused = 0, split = 0;
	char first_refusal[512] = "";
	double total = 0;
	for (long k = 0; k < q; k++) {
		int n = snprintf(body, sizeof(body), "{\"destination_country\":\"%s\",\"lines\":[", dest);
		for (int l = 0; l < lines; l++)
			n += snprintf(body + n, sizeof(body) - (size_t)n, "%s{\"sku\":\"%s\",\"qty\":6,\"box_units\":6}",
				      l ? "," : "", b->wine[next_rand() % (uint64_t)b->nw]);
		n += snprintf(body + n, sizeof(body) - (size_t)n, "]}");
		struct json_doc *d = json_parse(body, (size_t)n, NULL, NULL);
		if (!d)
			die("request", body);
		struct api_ctx *c = b->c;
		c->body = d; /* api_body() returns the parsed body: parsing is not timed */
		c->n_errs = 0;
		b->rs.status = 0;
		buf_reset(&b->rs.body);
		jw_init(&c->w, &b->rs.body);
		double t0 = now_s();
		b->handler(c);
		lat[k] = now_s() - t0;
		total += lat[k];
		c->body = NULL;
		json_doc_free(d);
		if (b->rs.status == 200) {
			ok++;
			split += memmem(b->rs.body.data, b->rs.body.len, "estate_atp_short", 16) ||
				 memmem(b->rs.body.data, b->rs.body.len, "multi_originator_policy", 23);
		}
		else {
			refused++;
			if (!first_refusal[0])
				snprintf(first_refusal, sizeof(first_refusal), "%d %.*s", b->rs.status,
					 (int)(b->rs.body.len < 400 ? b->rs.body.len : 400), (const char *)b->rs.body.data);
		}
	}
	qsort(lat, (size_t)q, sizeof(lat[0]), cmp_double);
	printf("quote %d-line -> %s  %6ld quotes | %8.0f quotes/s  p50 %7.1f us  p99 %7.1f us  max %8.1f us | 200: %ld "
	       "(%ld with a split line), 422: %ld\n",
	       lines, dest, q, (double)q / total, lat[q / 2] * 1e6, lat[q * 99 / 100] * 1e6, lat[q - 1] * 1e6, ok,
	       split, refused);
	if (first_refusal[0])
		printf("  first refusal: %s\n", first_refusal);
	fflush(stdout);
	free(lat);
}

int main(int argc, char **argv)
{
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
		die(argv[1], err);
	refdata_set_current(rd);

	static struct shard sh;
	struct config cfg;
	config_defaults(&cfg);
	snprintf(cfg.data_dir, sizeof(cfg.data_dir), "/tmp/bench-quote-unused");
	snprintf(cfg.wal_mode, sizeof(cfg.wal_mode), "none");
	cfg.snapshot_interval_s = 0;
	if (shard_open(&sh, &cfg, err, sizeof(err)))
		die("shard_open", err);
	long rss0 = rss_bytes();
	double t0 = now_s();

	/* partners and their warehouses */
	static char doc[DOC_MAX];
	char seller[ID_MAX_LEN], orig[N_ORIG][ID_MAX_LEN], loc[N_ORIG][ID_MAX_LEN];
	if (partner_seed(&sh, "{\"legal_name\":\"Bench Seller\",\"country\":\"DE\",\"roles\":[\"seller\"],"
			      "\"payout_currency\":\"EUR\"}"))
		die("partner_seed", "seller");
	partner_id_of(&sh, "Bench Seller", seller);
	for (int o = 0; o < N_ORIG; o++) {
		char name[64];
		snprintf(name, sizeof(name), "Bench Estate %d", o);
		snprintf(doc, sizeof(doc),
			 "{\"legal_name\":\"%s\",\"country\":\"%s\",\"roles\":[\"originator\"],\"originator_type\":\"estate\","
			 "\"payout_currency\":\"EUR\"}",
			 name, orig_country[o]);
		if (partner_seed(&sh, doc))
			die("partner_seed", name);
		partner_id_of(&sh, name, orig[o]);
		id_new(&sh.ids, "loc", loc[o]);
		int len = snprintf(doc, sizeof(doc),
				   "{\"id\":\"%s\",\"owner_entity_id\":\"%s\",\"location_type\":\"BONDED_WAREHOUSE\",\"name\":\"Cellar %d\","
				   "\"status\":\"active\",\"address\":{\"line1\":\"1 Quai des Vins\",\"city\":\"Town\",\"postal_code\":"
				   "\"1000%d\",\"country\":\"%s\"},\"tax_jurisdiction\":{\"country\":\"%s\"},\"capabilities\":"
				   "{\"supports_d2c_fulfillment\":true,\"supports_b2b_wholesale\":true},\"created_at\":\"" STAMP
				   "\",\"updated_at\":\"" STAMP "\"}",
				   loc[o], orig[o], o, o, orig_country[o], orig_country[o]);
		put(&sh, REC_T_LOCATION, loc[o], doc, len);
	}

	/* wines (ingested as the platform), then published */
	struct bench b = {.sh = &sh, .nw = nw};
	b.wine = calloc((size_t)nw, sizeof(*b.wine));
	struct api_ctx *pc = calloc(1, sizeof(*pc));
	if (!b.wine || !pc)
		die("calloc", "wines");
	pc->sh = &sh;
	pc->who.authenticated = pc->who.is_platform = 1;
	snprintf(pc->who.entity_id, sizeof(pc->who.entity_id), "platform");
	for (long i = 0; i < nw; i++) {
		long p = i / WINES_PER_PRODUCER;
		int len = snprintf(doc, sizeof(doc),
				   "{\"title\":\"Domaine d'Essai %ld Cuvee %ld\",\"producer\":{\"name\":\"Domaine d'Essai %ld\","
				   "\"country\":\"%s\"},\"cuvee\":\"Cuvee %ld\",\"vintage\":%ld,\"volume_in_liters\":0.75,"
				   "\"abv\":13.5,\"colour\":\"red\",\"category\":\"wine\",\"country\":\"%s\","
				   "\"allergens\":[\"sulphites\"]}",
				   p, i % WINES_PER_PRODUCER, p, orig_country[p % N_ORIG], i % WINES_PER_PRODUCER,
				   2000 + i % 20, orig_country[p % N_ORIG]);
		struct json_doc *d = json_parse(doc, (size_t)len, NULL, NULL);
		if (!d)
			die("wine body", doc);
		struct wine_ingest_result r;
		memset(&r, 0, sizeof(r));
		pc->n_errs = 0;
		wine_ingest(pc, json_root(d), &r);
		json_doc_free(d);
		if (r.status != 201)
			die("wine_ingest", pc->n_errs ? pc->err_msg[0] : r.code ? r.code : "not created");
		memcpy(b.wine[i], r.wine_id, ID_MAX_LEN);
		const struct wine *w = wine_get(&sh, r.wine_id, strlen(r.wine_id));
		if (!w)
			die(r.wine_id, "ingested wine not found");
		if (i % WINES_PER_PRODUCER == 0 && p % 4 == 0) { /* an estate: link its producer to originator p % N_ORIG */
			const struct producer *pr = producer_get(&sh, w->producer_id, strlen(w->producer_id));
			if (!pr)
				die(w->producer_id, "producer not found");
			char to[128];
			snprintf(to, sizeof(to), "\"partner_id\":\"%s\"", orig[p % N_ORIG]);
			patch(&sh, REC_T_PRODUCER, &pr->row, "\"partner_id\":null", to);
		}
		patch(&sh, REC_T_WINE, &w->row, "\"status\":\"draft\"", "\"status\":\"published\"");
	}
	double t1 = now_s();

	/* offers and inventory levels */
	long n_offers = 0, n_levels = 0;
	for (long i = 0; i < nw; i++) {
		long p = i / WINES_PER_PRODUCER;
		int estate = p % 4 == 0;
		for (long k = 0; k < per; k++) {
			int o = (int)((estate && k == 0) ? p % N_ORIG : (i + k + (estate ? 1 : 0)) % N_ORIG);
			long qty = estate && k == 0 && i % 3 == 0 ? 2 : 60;
			long cents = 800 + (i * 7 + k * 131) % 2000;
			const char *perm =
				k % 10 == 8 ? "{\"default\":\"any\",\"allowed_countries\":[],\"blocked_countries\":[\"DE\"],\"named_sellers\":[]}"
				: k % 10 == 9 ? "{\"default\":\"any\",\"allowed_countries\":[],\"blocked_countries\":[],\"named_sellers\":[\"ptn_other\"]}"
					      : "{\"default\":\"any\",\"allowed_countries\":[],\"blocked_countries\":[],\"named_sellers\":[]}";
			char id[ID_MAX_LEN];
			id_new(&sh.ids, "ofr", id);
			int len = snprintf(doc, sizeof(doc),
					   "{\"id\":\"%s\",\"offer_id\":\"%s\",\"wine_id\":\"%s\",\"originator_id\":\"%s\","
					   "\"seller_price\":%ld.%02ld,\"currency\":\"EUR\",\"qty_available\":%ld,\"condition\":\"new\","
					   "\"incoterm\":\"%s\",\"min_order_qty\":null,\"case_size\":null,\"valid_from\":null,"
					   "\"valid_to\":null,\"permissions\":%s,\"network_shareable\":true,\"status\":\"active\","
					   "\"source\":\"direct\",\"created_at\":\"" STAMP "\",\"updated_at\":\"" STAMP "\"}",
					   id, id, b.wine[i], orig[o], cents / 100, cents % 100, qty, k % 10 == 3 ? "DAP" : "FCA",
					   perm);
			put(&sh, REC_T_OFFER, id, doc, len);
			n_offers++;
			if (k % 2 == 0) {
				char lid[ID_MAX_LEN];
				id_new(&sh.ids, "inv", lid);
				len = snprintf(doc, sizeof(doc),
					       "{\"id\":\"%s\",\"sku\":\"BENCH-%ld-%ld\",\"offer_id\":\"%s\",\"owner_entity_id\":\"%s\","
					       "\"location_id\":\"%s\",\"condition\":\"sellable\",\"on_hand\":%ld,\"incoming\":0,"
					       "\"reserved\":0,\"allocated\":0,\"created_at\":\"" STAMP "\"}",
					       lid, i, k, id, orig[o], loc[o], qty);
				put(&sh, REC_T_INVENTORY, lid, doc, len);
				n_levels++;
			}
		}
	}
	double t2 = now_s();
	long rss = rss_bytes();
	printf("catalogue: %ld wines (%ld producers, every 4th an estate) in %.1f s, %ld offers + %ld inventory levels "
	       "in %.1f s; RSS after fill %.0f MB (%.0f MB above the empty shard)\n",
	       nw, (nw + WINES_PER_PRODUCER - 1) / WINES_PER_PRODUCER, t1 - t0, n_offers, n_levels, t2 - t1,
	       (double)rss / 1048576.0, (double)(rss - rss0) / 1048576.0);
	printf("timed: one quote-calculate handler call on a parsed body (validation, lookups, candidates with "
	       "permit/ATP/price each, routing, final pricing, JSON response); not timed: HTTP, JSON request parsing, "
	       "auth, audit\n");
	fflush(stdout);

	/* the caller: the DE seller, quoting as itself */
	b.c = calloc(1, sizeof(*b.c));
	if (!b.c)
		die("calloc", "api_ctx");
	buf_init(&b.rs.body, 1u << 20);
	b.c->sh = &sh;
	b.c->rs = &b.rs;
	b.c->who.authenticated = 1;
	b.c->who.kind = KEY_SECRET;
	b.c->who.roles = ROLE_SELLER;
	snprintf(b.c->who.entity_id, sizeof(b.c->who.entity_id), "%s", seller);
	b.handler = quote_routes[0].fn;
	scenario(&b, "DE", 1, nq);
	scenario(&b, "DE", 5, nq);
	scenario(&b, "GB", 1, nq);
	scenario(&b, "GB", 5, nq);

	buf_free(&b.rs.body);
	free(b.c);
	free(pc);
	free(b.wine);
	shard_close(&sh);
	refdata_set_current(NULL); /* frees rd */
	return 0;
}
