/*
 * bench_index.c -- throughput and memory of the two index kinds
 * (engine/storage/index.h) at the scale a shard serves: 1,000,000 keys.
 *
 * Standalone program, not part of the library.  Build and run:
 *
 *   gcc -std=c17 -D_GNU_SOURCE -I. -O2 -Wall -Wextra -Werror \
 *       -o /tmp/bench_index perf/bench_index.c engine/storage/index.c -lxxhash \
 *     && /tmp/bench_index
 *
 * Two key shapes, both 24 bytes:
 *   ordered  "off_" + the engine/storage/id.h body (10 chars ms time, 4 chars
 *            sequence within the ms, 6 random chars; Crockford base32),
 *            generated in time order -- what offer ids look like, so
 *            inserts land at the right edge;
 *   random   "off_" + 20 random base32 characters.
 * For each: oidx insert/s, get/s (random order), seek_ge + 50-step walk/s,
 * bytes per entry (mallinfo2 in-use bytes before/after building, includes
 * the key copies); hidx put/s, get/s, bytes per entry (the slot array; keys
 * are not copied by hidx).  One line per figure.
 */
#include "engine/storage/index.h"

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N_KEYS 1000000u
#define KEY_LEN 24u  /* "off_" + ID_BODY_LEN (20) */
#define N_SEEKS 200000u
#define PAGE 50u

static uint64_t rng_state = 0x1234567u;

static uint64_t rng(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static const char b32[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

/* keys[i] is KEY_LEN bytes at keys + i * KEY_LEN. */
static void make_keys(char *keys, int ordered)
{
	uint64_t ms = 1700000000000ull;
	uint32_t seq = 0;
	for (uint32_t i = 0; i < N_KEYS; i++) {
		char *k = keys + (size_t)i * KEY_LEN;
		memcpy(k, "off_", 4);
		if (ordered) {
			uint64_t step = rng() % 3; /* a few ids per millisecond */
			ms += step;
			seq = step ? 0 : seq + 1;
			for (int c = 0; c < 10; c++)
				k[4 + c] = b32[(ms >> (45 - 5 * c)) & 31];
			for (int c = 0; c < 4; c++)
				k[14 + c] = b32[(seq >> (15 - 5 * c)) & 31];
			for (int c = 18; c < 24; c++)
				k[c] = b32[rng() & 31];
		} else {
			for (int c = 4; c < 24; c++)
				k[c] = b32[rng() & 31];
		}
	}
}

static void shuffle(uint32_t *a, uint32_t n)
{
	for (uint32_t i = n; i > 1; i--) {
		uint32_t j = (uint32_t)(rng() % i);
		uint32_t t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}

static void bench_shape(const char *shape, const char *keys, const uint32_t *order)
{
	volatile uintptr_t sink = 0;
	struct oidx t;
	oidx_init(&t);
	size_t before = heap_in_use();
	double t0 = now();
	size_t dup = 0;
	for (uint32_t i = 0; i < N_KEYS; i++)
		dup += oidx_put(&t, keys + (size_t)i * KEY_LEN, KEY_LEN, (void *)(uintptr_t)(i + 1)) != 0;
	double t1 = now();
	size_t after = heap_in_use();
	printf("oidx %-7s insert:            %10.0f ops/s (%zu keys, %zu dup, height %u)\n", shape,
	       N_KEYS / (t1 - t0), oidx_count(&t), dup, t.height);
	printf("oidx %-7s memory:            %10.1f bytes/entry\n", shape,
	       (double)(after - before) / (double)oidx_count(&t));

	t0 = now();
	for (uint32_t i = 0; i < N_KEYS; i++)
		sink += (uintptr_t)oidx_get(&t, keys + (size_t)order[i] * KEY_LEN, KEY_LEN);
	t1 = now();
	printf("oidx %-7s get:               %10.0f ops/s\n", shape, N_KEYS / (t1 - t0));

	t0 = now();
	for (uint32_t i = 0; i < N_SEEKS; i++) {
		struct oidx_iter it;
		const char *k = keys + (size_t)order[i] * KEY_LEN;
		int r = oidx_seek_ge(&t, k, KEY_LEN, &it);
		for (uint32_t s = 0; r && s < PAGE; s++) {
			sink += (uintptr_t)oidx_iter_val(&it);
			r = oidx_next(&it);
		}
	}
	t1 = now();
	printf("oidx %-7s seek_ge+%u walk:   %10.0f pages/s\n", shape, PAGE, N_SEEKS / (t1 - t0));
	oidx_free(&t);

	struct hidx h;
	hidx_init(&h);
	before = heap_in_use();
	t0 = now();
	for (uint32_t i = 0; i < N_KEYS; i++)
		hidx_put(&h, keys + (size_t)i * KEY_LEN, KEY_LEN, (void *)(uintptr_t)(i + 1));
	t1 = now();
	after = heap_in_use();
	printf("hidx %-7s put:               %10.0f ops/s\n", shape, N_KEYS / (t1 - t0));
	t0 = now();
	for (uint32_t i = 0; i < N_KEYS; i++)
		sink += (uintptr_t)hidx_get(&h, keys + (size_t)order[i] * KEY_LEN, KEY_LEN);
	t1 = now();
	printf("hidx %-7s get:               %10.0f ops/s\n", shape, N_KEYS / (t1 - t0));
	printf("hidx %-7s memory:            %10.1f bytes/entry (slots only, cap %zu)\n", shape,
	       (double)(after - before) / (double)hidx_count(&h), h.cap);
	hidx_free(&h);
	(void)sink;
}

int main(void)
{
	char *keys = malloc((size_t)N_KEYS * KEY_LEN);
	uint32_t *order = malloc(N_KEYS * sizeof(*order));
	if (!keys || !order) {
		fprintf(stderr, "bench_index: out of memory\n");
		return 1;
	}
	for (uint32_t i = 0; i < N_KEYS; i++)
		order[i] = i;
	shuffle(order, N_KEYS);

	make_keys(keys, 1);
	bench_shape("ordered", keys, order);
	make_keys(keys, 0);
	bench_shape("random", keys, order);

	free(order);
	free(keys);
	return 0;
}
