/*
 * bench_world.c -- the quote benchmarks' catalogue and timed quote loop
 * (contract and the world's shape in bench_world.h).
 */
#include "perf/bench_world.h"

#include <linux/perf_event.h>
#include <sched.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/base/config.h"
#include "engine/catalogue/partner.h"
#include "engine/catalogue/producer.h"
#include "engine/catalogue/wine.h"
#include "engine/edge/key.h"
#include "engine/pricing/quote.h"
#include "engine/supply/offer.h"

#define STAMP "2025-01-01T00:00:00.000Z"

const char *bw_prog = "bench";

static const char *const orig_country[BW_N_ORIG] = {"FR", "IT", "ES", "FR", "IT", "ES", "FR", "DE"};

void bw_die(const char *what, const char *why)
{
	fprintf(stderr, "%s: %s: %s\n", bw_prog, what, why);
	exit(1);
}

double bw_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

long bw_rss_bytes(void)
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

static int cmp_double(const void *a, const void *b);

/* The tracepoints one interrupt of each kind passes, counted for this
 * thread (an interrupt's handler runs in the context of the task it
 * interrupted, so a per-thread counter sees exactly the ones that landed
 * in it). */
static const char *const irq_tracepoints[] = {
	"irq_vectors/local_timer_entry", "irq_vectors/call_function_entry",
	"irq_vectors/call_function_single_entry", "irq_vectors/reschedule_entry",
	"irq_vectors/irq_work_entry", "irq/irq_handler_entry",
};
#define N_IRQ_TP (sizeof(irq_tracepoints) / sizeof(irq_tracepoints[0]))

static int irq_group = -2; /* -2 not tried, -1 unavailable, else the group leader's fd */

/* Open the counters: the group leader's fd, or -1. */
static int irq_group_open(void)
{
	int leader = -1;
	for (size_t i = 0; i < N_IRQ_TP; i++) {
		char path[160];
		snprintf(path, sizeof(path), "/sys/kernel/tracing/events/%s/id", irq_tracepoints[i]);
		FILE *f = fopen(path, "r");
		unsigned long long id = 0;
		int got = f && fscanf(f, "%llu", &id) == 1;
		if (f)
			fclose(f);
		if (!got)
			continue; /* a kind this kernel does not have */
		struct perf_event_attr a;
		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.type = PERF_TYPE_TRACEPOINT;
		a.config = id;
		a.read_format = PERF_FORMAT_GROUP;
		int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, leader, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			if (leader >= 0)
				close(leader); /* closes the group: no partial count */
			return -1;
		}
		if (leader < 0)
			leader = fd;
	}
	return leader;
}

long bw_irqs_here(void)
{
	if (irq_group == -2)
		irq_group = irq_group_open();
	if (irq_group < 0)
		return -1;
	uint64_t v[1 + N_IRQ_TP];
	ssize_t got = read(irq_group, v, sizeof(v));
	if (got < (ssize_t)(2 * sizeof(uint64_t)))
		return -1;
	long total = 0;
	for (uint64_t i = 0; i < v[0] && i < N_IRQ_TP; i++)
		total += (long)v[1 + i];
	return total;
}

int bw_lat_clean(const double *lat_s, const unsigned char *hit, long n, double *p50_us, double *p99_us,
		 double *hit_share)
{
	double *c = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
	if (!c)
		bw_die("malloc", "latencies");
	long k = 0;
	for (long i = 0; i < n; i++)
		if (!hit[i])
			c[k++] = lat_s[i];
	*hit_share = n ? (double)(n - k) / (double)n : 0;
	if (k < 100) {
		free(c);
		return -1;
	}
	qsort(c, (size_t)k, sizeof(c[0]), cmp_double);
	*p50_us = c[k / 2] * 1e6;
	*p99_us = c[k * 99 / 100] * 1e6;
	free(c);
	return 0;
}

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

void bw_shard_open(struct shard *sh, const char *data_dir, const char *wal_mode)
{
	char err[512];
	struct config cfg;
	config_defaults(&cfg);
	snprintf(cfg.data_dir, sizeof(cfg.data_dir), "%s", data_dir);
	snprintf(cfg.wal_mode, sizeof(cfg.wal_mode), "%s", wal_mode);
	cfg.snapshot_interval_s = 0;
	if (shard_open(sh, &cfg, err, sizeof(err)))
		bw_die("shard_open", err);
}

void bw_put(struct shard *sh, int table, const char *id, const char *doc, int len)
{
	char why[256];
	if (len < 0 || len >= BW_DOC_MAX)
		bw_die("document", "too long");
	if (table_put(&sh->tables[table], id, strlen(id), doc, (size_t)len, 1, why))
		bw_die(id, why);
}

int bw_doc_replace(const char *src, size_t len, const char *from, const char *to, char *out, size_t cap)
{
	const char *p = strstr(src, from);
	if (!p)
		return -1;
	size_t pre = (size_t)(p - src), fl = strlen(from), tl = strlen(to);
	if (len - fl + tl >= cap)
		return -1;
	memcpy(out, src, pre);
	memcpy(out + pre, to, tl);
	memcpy(out + pre + tl, p + fl, len - pre - fl);
	out[len - fl + tl] = 0;
	return (int)(len - fl + tl);
}

/* Re-install a row's document with `from` replaced by `to` (first occurrence). */
static void patch(struct shard *sh, int table, const struct row *r, const char *from, const char *to)
{
	static char doc[BW_DOC_MAX];
	static struct buf scratch;
	size_t dl;
	const char *d = row_doc(r, &scratch, &dl); /* stored or rendered (table.h) */
	int len = d ? bw_doc_replace(d, dl, from, to, doc, sizeof(doc)) : -1;
	if (len < 0)
		bw_die(r->id, "document lacks the member to patch, or is too long");
	char id[ID_MAX_LEN];
	snprintf(id, sizeof(id), "%.*s", (int)r->id_len, r->id);
	bw_put(sh, table, id, doc, len);
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
	bw_die(name, "seeded partner not found");
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

void bw_seed_partners(struct bw_world *w)
{
	struct shard *sh = w->sh;
	static char doc[BW_DOC_MAX];
	if (partner_seed(sh, "{\"legal_name\":\"Bench Seller\",\"country\":\"DE\",\"roles\":[\"seller\"],"
			     "\"payout_currency\":\"EUR\"}"))
		bw_die("partner_seed", "seller");
	partner_id_of(sh, "Bench Seller", w->seller);
	for (int o = 0; o < BW_N_ORIG; o++) {
		char name[64];
		snprintf(name, sizeof(name), "Bench Estate %d", o);
		snprintf(doc, sizeof(doc),
			 "{\"legal_name\":\"%s\",\"country\":\"%s\",\"roles\":[\"originator\"],\"originator_type\":\"estate\","
			 "\"payout_currency\":\"EUR\"}",
			 name, orig_country[o]);
		if (partner_seed(sh, doc))
			bw_die("partner_seed", name);
		partner_id_of(sh, name, w->orig[o]);
		id_new(&sh->ids, "loc", w->loc[o]);
		int len = snprintf(doc, sizeof(doc),
				   "{\"id\":\"%s\",\"owner_entity_id\":\"%s\",\"location_type\":\"BONDED_WAREHOUSE\",\"name\":\"Cellar %d\","
				   "\"status\":\"active\",\"address\":{\"line1\":\"1 Quai des Vins\",\"city\":\"Town\",\"postal_code\":"
				   "\"1000%d\",\"country\":\"%s\"},\"tax_jurisdiction\":{\"country\":\"%s\"},\"capabilities\":"
				   "{\"supports_d2c_fulfillment\":true,\"supports_b2b_wholesale\":true},\"created_at\":\"" STAMP
				   "\",\"updated_at\":\"" STAMP "\"}",
				   w->loc[o], w->orig[o], o, o, orig_country[o], orig_country[o]);
		bw_put(sh, REC_T_LOCATION, w->loc[o], doc, len);
	}
}

void bw_fill_wines(struct bw_world *w)
{
	struct shard *sh = w->sh;
	static char doc[BW_DOC_MAX];
	w->wine = calloc((size_t)w->nw, sizeof(*w->wine));
	struct api_ctx *pc = calloc(1, sizeof(*pc));
	if (!w->wine || !pc)
		bw_die("calloc", "wines");
	pc->sh = sh;
	pc->who.authenticated = pc->who.is_platform = 1;
	snprintf(pc->who.entity_id, sizeof(pc->who.entity_id), "platform");
	for (long i = 0; i < w->nw; i++) {
		long p = i / BW_WINES_PER_PRODUCER;
		int len = snprintf(doc, sizeof(doc),
				   "{\"title\":\"Domaine d'Essai %ld Cuvee %ld\",\"producer\":{\"name\":\"Domaine d'Essai %ld\","
				   "\"country\":\"%s\"},\"cuvee\":\"Cuvee %ld\",\"vintage\":%ld,\"volume_in_liters\":0.75,"
				   "\"abv\":13.5,\"colour\":\"red\",\"category\":\"wine\",\"country\":\"%s\","
				   "\"allergens\":[\"sulphites\"]}",
				   p, i % BW_WINES_PER_PRODUCER, p, orig_country[p % BW_N_ORIG], i % BW_WINES_PER_PRODUCER,
				   2000 + i % 20, orig_country[p % BW_N_ORIG]);
		struct json_doc *d = json_parse(doc, (size_t)len, NULL, NULL);
		if (!d)
			bw_die("wine body", doc);
		struct wine_ingest_result r;
		memset(&r, 0, sizeof(r));
		pc->n_errs = 0;
		wine_ingest(pc, json_root(d), &r);
		json_doc_free(d);
		if (r.status != 201)
			bw_die("wine_ingest", pc->n_errs ? pc->err_msg[0] : r.code ? r.code : "not created");
		memcpy(w->wine[i], r.wine_id, ID_MAX_LEN);
		const struct wine *wi = wine_get(sh, r.wine_id, strlen(r.wine_id));
		if (!wi)
			bw_die(r.wine_id, "ingested wine not found");
		if (i % BW_WINES_PER_PRODUCER == 0 && p % 4 == 0) { /* an estate: link its producer to originator p % N */
			const struct producer *pr = producer_get(sh, wi->producer_id, strlen(wi->producer_id));
			if (!pr)
				bw_die(wi->producer_id, "producer not found");
			char to[128];
			snprintf(to, sizeof(to), "\"partner_id\":\"%s\"", w->orig[p % BW_N_ORIG]);
			patch(sh, REC_T_PRODUCER, &pr->row, "\"partner_id\":null", to);
		}
		patch(sh, REC_T_WINE, &wi->row, "\"status\":\"draft\"", "\"status\":\"published\"");
	}
	free(pc);
}

void bw_fill_offers(struct bw_world *w)
{
	struct shard *sh = w->sh;
	static char doc[BW_DOC_MAX];
	for (long i = 0; i < w->nw; i++) {
		long p = i / BW_WINES_PER_PRODUCER;
		int estate = p % 4 == 0;
		for (long k = 0; k < w->per; k++) {
			int o = (int)((estate && k == 0) ? p % BW_N_ORIG : (i + k + (estate ? 1 : 0)) % BW_N_ORIG);
			long qty = estate && k == 0 && i % 3 == 0 ? 2 : 60;
			long cents = 800 + (i * 7 + k * 131) % 2000;
			const char *perm =
				k % 10 == 8 ? "{\"default\":\"any\",\"allowed_countries\":[],\"blocked_countries\":[\"DE\"],\"named_sellers\":[]}"
				: k % 10 == 9 ? "{\"default\":\"any\",\"allowed_countries\":[],\"blocked_countries\":[],\"named_sellers\":[\"ptn_other\"]}"
					      : "{\"default\":\"any\",\"allowed_countries\":[],\"blocked_countries\":[],\"named_sellers\":[]}";
			char id[ID_MAX_LEN];
			id_new(&sh->ids, "ofr", id);
			int len = snprintf(doc, sizeof(doc),
					   "{\"id\":\"%s\",\"offer_id\":\"%s\",\"wine_id\":\"%s\",\"originator_id\":\"%s\","
					   "\"seller_price\":%ld.%02ld,\"currency\":\"EUR\",\"qty_available\":%ld,\"condition\":\"new\","
					   "\"incoterm\":\"%s\",\"min_order_qty\":null,\"case_size\":null,\"valid_from\":null,"
					   "\"valid_to\":null,\"permissions\":%s,\"network_shareable\":true,\"status\":\"active\","
					   "\"source\":\"direct\",\"created_at\":\"" STAMP "\",\"updated_at\":\"" STAMP "\"}",
					   id, id, w->wine[i], w->orig[o], cents / 100, cents % 100, qty,
					   k % 10 == 3 ? "DAP" : "FCA", perm);
			bw_put(sh, REC_T_OFFER, id, doc, len);
			w->n_offers++;
		}
	}
}

/* Levels on offer n (creation order) of t: spread nl evenly, the first on
 * offer 0 (so nl = t/2 puts one on every even offer). */
static long levels_on(long n, long t, long nl)
{
	long long a = ((long long)n * nl + t - 1) / t, b = ((long long)(n + 1) * nl + t - 1) / t;
	return (long)(b - a);
}

void bw_fill_levels(struct bw_world *w)
{
	struct shard *sh = w->sh;
	static char doc[BW_DOC_MAX];
	long t = w->nw * w->per, n = 0;
	struct oidx_iter it;
	for (int ok = oidx_seek_ge(&sh->tables[REC_T_OFFER].by_order, NULL, 0, &it); ok; ok = oidx_next(&it), n++) {
		const struct offer *of = oidx_iter_val(&it);
		long i = n / w->per, k = n % w->per;
		if (n >= t || strcmp(of->wine_id, w->wine[i]))
			bw_die(of->row.id, "offers are not in the order they were created");
		int o = 0;
		while (o < BW_N_ORIG && strcmp(of->originator_id, w->orig[o]))
			o++;
		if (o == BW_N_ORIG)
			bw_die(of->row.id, "offer of an unknown originator");
		long c = levels_on(n, t, w->nl);
		for (long m = 0; m < c; m++) { /* m > 0: another originator's warehouse holds more */
			int h = (int)((o + m) % BW_N_ORIG);
			char lid[ID_MAX_LEN];
			id_new(&sh->ids, "inv", lid);
			int len = snprintf(doc, sizeof(doc),
					   "{\"id\":\"%s\",\"sku\":\"BENCH-%ld-%ld\",\"offer_id\":\"%s\",\"owner_entity_id\":\"%s\","
					   "\"location_id\":\"%s\",\"condition\":\"sellable\",\"on_hand\":%lld,\"incoming\":0,"
					   "\"reserved\":0,\"allocated\":0,\"atp\":%lld,\"created_at\":\"" STAMP "\","
					   "\"updated_at\":\"" STAMP "\"}",
					   lid, i, k, of->row.id, w->orig[h], w->loc[h], (long long)of->qty, (long long)of->qty);
			bw_put(sh, REC_T_INVENTORY, lid, doc, len);
			w->n_levels++;
		}
	}
	if (n != t)
		bw_die("offers", "the table does not hold exactly the world's offers");
}

void bw_world_free(struct bw_world *w)
{
	free(w->wine);
	w->wine = NULL;
}

struct bw_caller {
	struct bw_world *w;
	struct api_ctx *c;
	struct srv_response rs;
	route_fn handler;
};

struct bw_caller *bw_caller_new(struct bw_world *w)
{
	struct bw_caller *b = calloc(1, sizeof(*b));
	if (!b || !(b->c = calloc(1, sizeof(*b->c))))
		bw_die("calloc", "api_ctx");
	b->w = w;
	buf_init(&b->rs.body, 1u << 20);
	b->c->sh = w->sh;
	b->c->rs = &b->rs;
	b->c->who.authenticated = 1;
	b->c->who.kind = KEY_SECRET;
	b->c->who.roles = ROLE_SELLER;
	snprintf(b->c->who.entity_id, sizeof(b->c->who.entity_id), "%s", w->seller);
	b->handler = quote_routes[0].fn;
	return b;
}

void bw_caller_free(struct bw_caller *b)
{
	if (!b)
		return;
	buf_free(&b->rs.body);
	free(b->c);
	free(b);
}

void bw_lat_of(double *lat_s, double *cpu_s, long n, struct bw_lat *out)
{
	qsort(lat_s, (size_t)n, sizeof(lat_s[0]), cmp_double);
	qsort(cpu_s, (size_t)n, sizeof(cpu_s[0]), cmp_double);
	double total = 0;
	for (long i = 0; i < n; i++)
		total += lat_s[i];
	memset(out, 0, sizeof(*out));
	out->n = n;
	out->qps = (double)n / total;
	out->p50_us = lat_s[n / 2] * 1e6;
	out->p99_us = lat_s[n * 99 / 100] * 1e6;
	out->p98_us = lat_s[n * 98 / 100] * 1e6;
	out->max_us = lat_s[n - 1] * 1e6;
	long slow = n;
	while (slow > 0 && lat_s[slow - 1] > 1.5 * lat_s[n / 2])
		slow--;
	out->slow_share = (double)(n - slow) / (double)n;
	out->cpu_p50_us = cpu_s[n / 2] * 1e6;
	out->cpu_p99_us = cpu_s[n * 99 / 100] * 1e6;
}

static void scenario(struct bw_caller *b, const char *label, const char *dest, int lines, long q,
		     struct bw_lat *out, double *lat_s, double *cpu_s, unsigned char *hit)
{
	double *lat = malloc((size_t)q * sizeof(double)), *cpu = malloc((size_t)q * sizeof(double));
	if (!lat || !cpu)
		bw_die("malloc", "latencies");
	static char body[4096];
	long ok = 0, refused = 0, split = 0;
	/* BENCH_QUOTE_DUMP=FILE appends every response (status, body) to FILE,
	 * untimed: two builds' bytes compared (a writer change keeps them) */
	const char *dump_to = getenv("BENCH_QUOTE_DUMP");
	FILE *dump = dump_to && *dump_to ? fopen(dump_to, "a") : NULL;
	char first_refusal[512] = "";
	for (long k = 0; k < q; k++) {
		int n = snprintf(body, sizeof(body), "{\"destination_country\":\"%s\",\"lines\":[", dest);
		for (int l = 0; l < lines; l++)
			n += snprintf(body + n, sizeof(body) - (size_t)n, "%s{\"sku\":\"%s\",\"qty\":6,\"box_units\":6}",
				      l ? "," : "", b->w->wine[next_rand() % (uint64_t)b->w->nw]);
		n += snprintf(body + n, sizeof(body) - (size_t)n, "]}");
		struct json_doc *d = json_parse(body, (size_t)n, NULL, NULL);
		if (!d)
			bw_die("request", body);
		struct api_ctx *c = b->c;
		c->body = d; /* api_body() returns the parsed body: parsing is not timed */
		c->n_errs = 0;
		b->rs.status = 0;
		buf_reset(&b->rs.body);
		jw_init(&c->w, &b->rs.body);
		long i0 = hit ? bw_irqs_here() : 0;
		double c0 = cpu_now(), t0 = bw_now_s();
		b->handler(c);
		lat[k] = bw_now_s() - t0;
		cpu[k] = cpu_now() - c0;
		if (hit) {
			long i1 = bw_irqs_here();
			hit[k] = i0 < 0 || i1 < 0 ? 2 : i1 != i0;
		}
		c->body = NULL;
		json_doc_free(d);
		if (dump)
			fprintf(dump, "%d %.*s\n", b->rs.status, (int)b->rs.body.len, (const char *)b->rs.body.data);
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
	if (lat_s)
		memcpy(lat_s, lat, (size_t)q * sizeof(double));
	if (cpu_s)
		memcpy(cpu_s, cpu, (size_t)q * sizeof(double));
	struct bw_lat r;
	bw_lat_of(lat, cpu, q, &r);
	r.ok = ok;
	r.split = split;
	r.refused = refused;
	if (label) {
		printf("%squote %d-line -> %s  %6ld quotes | %8.0f quotes/s  p50 %7.1f us  p99 %7.1f us  max %8.1f us | "
		       "200: %ld (%ld with a split line), 422: %ld\n",
		       label, lines, dest, q, r.qps, r.p50_us, r.p99_us, r.max_us, ok, split, refused);
		if (first_refusal[0])
			printf("  first refusal: %s\n", first_refusal);
		fflush(stdout);
	}
	free(lat);
	free(cpu);
	if (dump)
		fclose(dump);
	if (out)
		*out = r;
}

void bw_quote_scenario(struct bw_caller *b, const char *label, const char *dest, int lines, long q,
		       struct bw_lat *out, double *lat_s, double *cpu_s)
{
	scenario(b, label, dest, lines, q, out, lat_s, cpu_s, NULL);
}

void bw_quote_scenario_irq(struct bw_caller *b, const char *dest, int lines, long q, struct bw_lat *out,
			   double *lat_s, double *cpu_s, unsigned char *hit)
{
	scenario(b, NULL, dest, lines, q, out, lat_s, cpu_s, hit);
}
