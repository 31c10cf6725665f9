/*
 * bench_auth.c -- the per-request price of identity and access, measured
 * in-process (no HTTP, no loopback): parse the bearer token (prefix,
 * base62, XXH32 checksum), SHA-256 it, find the key by digest among
 * 10,000 keys, compare the digest in constant time, check the scope bit
 * and the action policy.  This is everything auth_request() does before a
 * handler, except formatting the RateLimit headers.
 *
 * Usage: bench_auth DATA_DIR   (a scratch directory; created, left behind)
 * Built and run by perf/bench.sh against build/rel/lib.a.
 */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/edge/key.h"
#include "engine/base/log.h"
#include "engine/catalogue/partner.h"
#include "engine/edge/policy.h"
#include "engine/storage/shard.h"

#define N_KEYS 10000
#define N_ITER 1000000

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Store a key row for token tok directly in the table (as replay would). */
static void add_key(struct shard *sh, const char *tok, int i)
{
	unsigned char d[32];
	unsigned int n;
	EVP_Digest(tok, strlen(tok), d, &n, EVP_sha256(), NULL);
	char hx[65];
	for (int j = 0; j < 32; j++)
		sprintf(hx + 2 * j, "%02x", d[j]);
	char id[ID_MAX_LEN], doc[1024], why[128];
	id_new(&sh->ids, "key", id);
	int len = snprintf(doc, sizeof(doc),
			   "{\"id\":\"%s\",\"entity_id\":\"ptn_%020d\",\"kind\":\"secret\",\"name\":null,"
			   "\"prefix\":\"%.12s\",\"scopes\":[\"read:partners\",\"read:offers\"],\"created_at\":"
			   "\"2026-11-21T00:00:00.000Z\",\"expires_at\":null,\"revoked_at\":null,"
			   "\"key_hash\":\"sha256:%s\"}",
			   id, i, tok, hx);
	if (table_put(&sh->tables[REC_T_KEY], id, strlen(id), doc, (size_t)len, 1, why)) {
		fprintf(stderr, "bench_auth: %s\n", why);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: bench_auth DATA_DIR\n");
		return 2;
	}
	log_set_level(LOG_ERROR);
	static struct shard sh;
	struct config cfg;
	config_defaults(&cfg);
	snprintf(cfg.data_dir, sizeof(cfg.data_dir), "%s", argv[1]);
	char err[512];
	if (shard_load(&sh, &cfg, NULL, 0, err, sizeof(err))) {
		fprintf(stderr, "bench_auth: %s\n", err);
		return 1;
	}
	static char toks[N_KEYS][KEY_TOKEN_LEN + 1];
	for (int i = 0; i < N_KEYS; i++) {
		key_token_new(KEY_SECRET, toks[i]);
		add_key(&sh, toks[i], i);
	}
	volatile unsigned ok = 0;
	double t0 = now_s();
	for (int i = 0; i < N_ITER; i++) {
		const char *tok = toks[((unsigned)i * 7919u) % N_KEYS];
		if (key_token_parse(tok, KEY_TOKEN_LEN) > KEY_TOK_RAW)
			continue;
		const struct api_key *k = key_lookup(&sh, tok, KEY_TOKEN_LEN);
		if (k && !k->revoked && (k->scopes & SCOPE_BIT(SC_READ_PARTNERS)) &&
		    policy_allows(ACT_READ_PARTNERS, 0, ROLE_SELLER, PS_LIVE))
			ok++;
	}
	double t1 = now_s();
	double t2 = now_s();
	for (int i = 0; i < N_ITER; i++)
		ok += key_token_parse(toks[((unsigned)i * 7919u) % N_KEYS], KEY_TOKEN_LEN) == KEY_TOK_SECRET;
	double t3 = now_s();
	printf("authenticate + authorize: %d keys stored, %d requests, %.0f ns per request (%.2f M/s), "
	       "of which token format + checksum %.0f ns; %u authorized\n",
	       N_KEYS, N_ITER, (t1 - t0) * 1e9 / N_ITER, N_ITER / (t1 - t0) / 1e6, (t3 - t2) * 1e9 / N_ITER,
	       (unsigned)ok - N_ITER);
	shard_close(&sh);
	return 0;
}
