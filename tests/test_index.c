/*
 * test_index.c -- hidx (hash index) and oidx (B+tree) from engine/storage/index.h.
 *
 * The oidx tests lean on a randomized model test: a seeded PRNG drives ~50k
 * mixed put/set/del operations against both the tree and a plain sorted
 * array, comparing every answer (get, count, seek_ge, seek_le, full walks in
 * both directions) and running oidx_check() periodically.  Keys come from a
 * 4-letter alphabet that includes 0x00 and 0xff with lengths 0..8, so many
 * keys are prefixes of each other, plus a stream of ascending keys that
 * exercises the append split on the rightmost leaf.
 *
 * The leaves hold their keys inline and fill by bytes: further tests take
 * keys of every length 0..255 to the byte bound of a leaf and past it, and
 * compare a tree of long random keys with a sorted array.
 */
#include "tests/wm_test.h"
#include "engine/storage/index.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ----------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rng(void)
{
	/* splitmix64: deterministic for a given seed */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void *tag(uintptr_t v) { return (void *)v; }

static int bytes_cmp(const void *a, uint32_t al, const void *b, uint32_t bl)
{
	uint32_t m = al < bl ? al : bl;
	int r = m ? memcmp(a, b, m) : 0;
	if (r)
		return r;
	return (al > bl) - (al < bl);
}

/* ---- hidx --------------------------------------------------------------- */

WM_TEST(hidx, put_get_del_set)
{
	struct hidx h;
	hidx_init(&h);
	cr_assert_null(hidx_get(&h, "a", 1));
	cr_assert_null(hidx_del(&h, "a", 1));
	cr_assert_eq(hidx_put(&h, "alpha", 5, tag(1)), 0);
	cr_assert_eq(hidx_put(&h, "beta", 4, tag(2)), 0);
	cr_assert_eq(hidx_count(&h), 2);
	cr_assert_eq(hidx_get(&h, "alpha", 5), tag(1));
	cr_assert_eq(hidx_get(&h, "beta", 4), tag(2));
	cr_assert_null(hidx_get(&h, "alph", 4));
	cr_assert_null(hidx_get(&h, "alphaa", 6));

	/* set replaces value and key pointer */
	char other[] = "alpha";
	cr_assert_eq(hidx_set(&h, other, 5, tag(11)), 0);
	cr_assert_eq(hidx_count(&h), 2);
	cr_assert_eq(hidx_get(&h, "alpha", 5), tag(11));
	size_t pos = 0;
	const char *k;
	uint32_t kl;
	int saw = 0;
	for (void *v; (v = hidx_next(&h, &pos, &k, &kl)) != NULL;)
		if (v == tag(11)) {
			cr_assert_eq(k, other);
			saw++;
		}
	cr_assert_eq(saw, 1);
	/* set inserts when absent */
	cr_assert_eq(hidx_set(&h, "gamma", 5, tag(3)), 0);
	cr_assert_eq(hidx_count(&h), 3);

	cr_assert_eq(hidx_del(&h, "alpha", 5), tag(11));
	cr_assert_null(hidx_del(&h, "alpha", 5));
	cr_assert_null(hidx_get(&h, "alpha", 5));
	cr_assert_eq(hidx_count(&h), 2);
	cr_assert_eq(hidx_get(&h, "gamma", 5), tag(3));

	/* the empty key is a key like any other */
	cr_assert_eq(hidx_put(&h, NULL, 0, tag(9)), 0);
	cr_assert_eq(hidx_get(&h, "", 0), tag(9));
	cr_assert_eq(hidx_put(&h, "", 0, tag(10)), 1);
	cr_assert_eq(hidx_del(&h, NULL, 0), tag(9));
	/* NULL bytes with a length is refused */
	cr_assert_eq(hidx_put(&h, NULL, 3, tag(1)), -1);
	cr_assert_null(hidx_get(&h, NULL, 3));
	hidx_free(&h);
	cr_assert_eq(hidx_count(&h), 0);
	hidx_free(&h); /* idempotent */
}

/* hidx_prefetch and hidx_peek are hints: on an empty index, for keys
 * present and absent, at and past the length bound, for NULL bytes, and
 * mid-rehash, they change nothing; a peek is NULL or a value of the index
 * (a present key's own, unless its home slot holds another entry). */
WM_TEST(hidx, prefetch_changes_nothing_whatever_it_is_given)
{
	struct hidx h;
	hidx_init(&h);
	char big[IDX_MAX_KEY + 1];
	memset(big, 'k', sizeof(big));
	hidx_prefetch(&h, "a", 1); /* no array yet */
	cr_assert_null(hidx_peek(&h, "a", 1));
	cr_assert_eq(hidx_count(&h), 0);
	cr_assert_null(h.slots);
	static char keys[5000][16]; /* the index keeps the keys' addresses: they outlive the entries */
	char key[16], had[16];
	for (int i = 0; i < 5000; i++) { /* through several incremental rehashes */
		int n = snprintf(keys[i], sizeof(keys[i]), "key%d", i), m = snprintf(had, sizeof(had), "key%d", i / 2);
		memcpy(key, keys[i], sizeof(key));
		hidx_prefetch(&h, key, (uint32_t)n);          /* absent */
		hidx_prefetch(&h, had, (uint32_t)m);          /* present (but for i = 0) */
		hidx_prefetch(&h, big, IDX_MAX_KEY);     /* at the bound */
		hidx_prefetch(&h, big, IDX_MAX_KEY + 1); /* past it */
		hidx_prefetch(&h, NULL, 3);
		hidx_prefetch(&h, NULL, 0);
		const void *pk = hidx_peek(&h, had, (uint32_t)m);
		cr_assert(!pk || ((uintptr_t)pk >= 1 && (uintptr_t)pk <= (uintptr_t)i), "key%d: a value of the index or NULL", i / 2);
		cr_assert(!hidx_peek(&h, key, (uint32_t)n) || i > 0, "nothing in the index yet");
		cr_assert_null(hidx_peek(&h, big, IDX_MAX_KEY + 1));
		cr_assert_null(hidx_peek(&h, NULL, 3));
		cr_assert_eq(hidx_count(&h), (size_t)i);
		cr_assert_eq(hidx_put(&h, keys[i], (uint32_t)n, tag(i + 1)), 0);
	}
	cr_assert_eq(hidx_count(&h), 5000);
	unsigned home = 0;
	for (int i = 0; i < 5000; i++) {
		int n = snprintf(key, sizeof(key), "key%d", i);
		cr_assert_eq(hidx_get(&h, key, (uint32_t)n), tag(i + 1));
		home += hidx_peek(&h, key, (uint32_t)n) == tag(i + 1);
	}
	/* a load of at most 0.7: most keys sit in their home slot */
	cr_assert_gt(home, 2500, "%u of 5000 keys peeked as themselves", home);
	cr_assert_null(hidx_get(&h, big, IDX_MAX_KEY));
	hidx_free(&h);
}

WM_TEST(hidx, duplicate_put_returns_1)
{
	struct hidx h;
	hidx_init(&h);
	cr_assert_eq(hidx_put(&h, "k", 1, tag(1)), 0);
	cr_assert_eq(hidx_put(&h, "k", 1, tag(2)), 1);
	cr_assert_eq(hidx_get(&h, "k", 1), tag(1));
	cr_assert_eq(hidx_count(&h), 1);
	hidx_free(&h);
}

/* hidx_swap: set, and the value replaced (NULL for a new key), including
 * for keys still in the previous array of an incremental rehash. */
WM_TEST(hidx, swap_returns_the_value_it_replaced)
{
	struct hidx h;
	hidx_init(&h);
	void *prev = tag(99);
	cr_assert_eq(hidx_swap(&h, "k", 1, tag(1), &prev), 0);
	cr_assert_null(prev, "a new key replaced nothing");
	cr_assert_eq(hidx_swap(&h, "k", 1, tag(2), &prev), 0);
	cr_assert_eq(prev, tag(1));
	cr_assert_eq(hidx_get(&h, "k", 1), tag(2));
	cr_assert_eq(hidx_count(&h), 1);
	/* past HIDX_MOVE_AT_ONCE, growth leaves keys in the previous array */
	enum { N = 20000 };
	static char keys[N][12];
	for (uint32_t i = 0; i < N; i++) {
		int n = snprintf(keys[i], sizeof(keys[i]), "s-%u", i);
		cr_assert_eq(hidx_swap(&h, keys[i], (uint32_t)n, tag(i + 10), &prev), 0);
		cr_assert_null(prev);
	}
	for (uint32_t i = 0; i < N; i++) {
		cr_assert_eq(hidx_swap(&h, keys[i], (uint32_t)strlen(keys[i]), tag(i + 20), &prev), 0);
		cr_assert_eq(prev, tag(i + 10), "key %u", i);
	}
	cr_assert_eq(hidx_count(&h), N + 1);
	cr_assert_eq(hidx_swap(&h, NULL, 3, tag(1), &prev), -1, "a bad key");
	cr_assert_null(prev);
	hidx_free(&h);
}

/* keep for swap_unless: the stored value is an odd tag; counts its calls */
static int keep_calls;
static bool keep_odd(const void *old, const void *arg)
{
	keep_calls++;
	cr_assert_eq(arg, &keep_calls, "keep is given the caller's argument");
	return (uintptr_t)old % 2 == 1; /* tag(i) is i */
}

WM_TEST(hidx, swap_unless_keeps_what_keep_says_and_swaps_the_rest)
{
	struct hidx h;
	hidx_init(&h);
	void *prev = tag(99);
	keep_calls = 0;
	cr_assert_eq(hidx_swap_unless(&h, "k", 1, tag(2), &prev, keep_odd, &keep_calls), 0, "absent: inserted");
	cr_assert_null(prev);
	cr_assert_eq(keep_calls, 0, "keep is asked about a stored value only");
	cr_assert_eq(hidx_swap_unless(&h, "k", 1, tag(3), &prev, keep_odd, &keep_calls), 0, "even: swapped");
	cr_assert_eq(prev, tag(2));
	cr_assert_eq(hidx_get(&h, "k", 1), tag(3));
	cr_assert_eq(hidx_swap_unless(&h, "k", 1, tag(4), &prev, keep_odd, &keep_calls), 1, "odd: kept");
	cr_assert_eq(prev, tag(3), "the value kept");
	cr_assert_eq(hidx_get(&h, "k", 1), tag(3), "nothing changed");
	cr_assert_eq(keep_calls, 2);
	cr_assert_eq(hidx_swap_unless(&h, "k", 1, tag(4), &prev, NULL, NULL), 0, "no keep: a swap");
	cr_assert_eq(prev, tag(3));
	cr_assert_eq(hidx_count(&h), 1);
	/* keys still in the previous array while a rehash moves them */
	enum { N = 20000 };
	static char keys[N][12];
	for (uint32_t i = 0; i < N; i++) {
		int n = snprintf(keys[i], sizeof(keys[i]), "u-%u", i);
		cr_assert_eq(hidx_swap_unless(&h, keys[i], (uint32_t)n, tag(i + 10), &prev, keep_odd, &keep_calls), 0);
		cr_assert_null(prev);
	}
	for (uint32_t i = 0; i < N; i++) {
		uint32_t kl = (uint32_t)strlen(keys[i]);
		int odd = (i + 10) % 2;
		cr_assert_eq(hidx_swap_unless(&h, keys[i], kl, tag(i + 30), &prev, keep_odd, &keep_calls), odd,
			     "key %u", i);
		cr_assert_eq(prev, tag(i + 10), "key %u", i);
		cr_assert_eq(hidx_get(&h, keys[i], kl), odd ? tag(i + 10) : tag(i + 30), "key %u", i);
	}
	cr_assert_eq(hidx_count(&h), N + 1);
	cr_assert_eq(hidx_swap_unless(&h, NULL, 3, tag(1), &prev, keep_odd, &keep_calls), -1, "a bad key");
	cr_assert_null(prev);
	hidx_free(&h);
}

#define GROW_N 100000

WM_TEST(hidx, growth_100k)
{
	char *keys = malloc((size_t)GROW_N * 16);
	cr_assert_not_null(keys);
	struct hidx h;
	hidx_init(&h);
	size_t last_cap = 0, resizes = 0;
	for (uint32_t i = 0; i < GROW_N; i++) {
		int n = snprintf(keys + (size_t)i * 16, 16, "key-%u", i);
		cr_assert_eq(hidx_put(&h, keys + (size_t)i * 16, (uint32_t)n, tag(i + 1)), 0);
		if (h.cap != last_cap) {
			cr_assert_eq(h.cap & (h.cap - 1), 0, "cap not a power of two");
			cr_assert(last_cap == 0 || h.cap == last_cap * 2, "growth is by doubling");
			last_cap = h.cap;
			resizes++;
		}
		cr_assert_leq((h.count + h.tombstones) * 10, h.cap * 7);
	}
	cr_assert_geq(resizes, 10);
	cr_assert_eq(hidx_count(&h), GROW_N);
	for (uint32_t i = 0; i < GROW_N; i++) {
		char tmp[16];
		int n = snprintf(tmp, sizeof(tmp), "key-%u", i);
		cr_assert_eq(hidx_get(&h, tmp, (uint32_t)n), tag(i + 1), "key %u", i);
	}
	cr_assert_null(hidx_get(&h, "key-100000", 10));
	hidx_free(&h);
	free(keys);
}

/*
 * Incremental rehash: once a table past HIDX_MOVE_AT_ONCE entries grows,
 * the previous array stays while its entries move a few slots per insert
 * or delete.  Meanwhile every key is found exactly once (in one array or
 * the other), set/del/put work on keys in either array, iteration visits
 * each live entry once, and the previous array is freed when drained.
 */
WM_TEST(hidx, incremental_rehash_keeps_every_key)
{
	enum { N = 40000 };
	static char keys[N][16];
	struct hidx h;
	hidx_init(&h);
	int saw_old = 0;
	size_t max_moving = 0;
	for (int i = 0; i < N; i++) {
		snprintf(keys[i], sizeof(keys[i]), "r%d", i);
		cr_assert_eq(hidx_put(&h, keys[i], (uint32_t)strlen(keys[i]), tag((uintptr_t)i + 1)), 0);
		if (h.old) {
			saw_old = 1;
			max_moving = h.moving > max_moving ? h.moving : max_moving;
			/* mid-move: every key so far is found, wherever it lives */
			if (i % 997 == 0)
				for (int j = 0; j <= i; j++)
					cr_assert_eq(hidx_get(&h, keys[j], (uint32_t)strlen(keys[j])), tag((uintptr_t)j + 1),
						     "key %d lost while moving", j);
		}
		cr_assert_leq((h.count + h.tombstones) * 10, h.cap * 7);
	}
	cr_assert(saw_old, "no rehash of %d entries was incremental", N);
	cr_assert_gt(max_moving, 4096, "a big table moved at once");
	/* force a state with entries in both arrays: grow once more */
	int i = N;
	static char extra[N][16];
	while (!h.old && i < 2 * N) {
		snprintf(extra[i - N], sizeof(extra[0]), "x%d", i);
		cr_assert_eq(hidx_put(&h, extra[i - N], (uint32_t)strlen(extra[i - N]), tag((uintptr_t)i + 1)), 0);
		i++;
	}
	cr_assert_not_null(h.old, "expected a rehash in progress");
	/* set, put and del on keys still in the previous array */
	size_t before = hidx_count(&h);
	cr_assert_eq(hidx_put(&h, keys[1], (uint32_t)strlen(keys[1]), tag(999999)), 1);
	cr_assert_eq(hidx_set(&h, keys[2], (uint32_t)strlen(keys[2]), tag(777777)), 0);
	cr_assert_eq(hidx_get(&h, keys[2], (uint32_t)strlen(keys[2])), tag(777777));
	cr_assert_eq(hidx_del(&h, keys[3], (uint32_t)strlen(keys[3])), tag(4));
	cr_assert_null(hidx_get(&h, keys[3], (uint32_t)strlen(keys[3])));
	cr_assert_eq(hidx_count(&h), before - 1);
	/* iteration while moving: each live entry once */
	size_t pos = 0, visited = 0;
	const char *k;
	uint32_t kl;
	for (void *v; (v = hidx_next(&h, &pos, &k, &kl)) != NULL;) {
		cr_assert_eq(hidx_get(&h, k, kl), v);
		visited++;
	}
	cr_assert_eq(visited, hidx_count(&h));
	/* deletes drain it too; then it is freed */
	for (int j = 0; j < N && h.old; j += 2) {
		hidx_del(&h, keys[j], (uint32_t)strlen(keys[j]));
		cr_assert_null(hidx_get(&h, keys[j], (uint32_t)strlen(keys[j])), "key %d found after its delete", j);
	}
	cr_assert_null(h.old, "the previous array was never freed");
	cr_assert_eq(h.moving, 0);
	hidx_free(&h);
}

WM_TEST(hidx, tombstones_and_reinsert)
{
	enum { N = 5000 };
	static char keys[N][16];
	struct hidx h;
	hidx_init(&h);
	for (int i = 0; i < N; i++) {
		snprintf(keys[i], sizeof(keys[i]), "t%d", i);
		cr_assert_eq(hidx_put(&h, keys[i], (uint32_t)strlen(keys[i]), tag((uintptr_t)i + 1)), 0);
	}
	for (int i = 0; i < N; i += 2)
		cr_assert_eq(hidx_del(&h, keys[i], (uint32_t)strlen(keys[i])), tag((uintptr_t)i + 1));
	cr_assert_eq(hidx_count(&h), N / 2);
	cr_assert_gt(h.tombstones, 0);
	for (int i = 0; i < N; i++) {
		void *want = (i % 2) ? tag((uintptr_t)i + 1) : NULL;
		cr_assert_eq(hidx_get(&h, keys[i], (uint32_t)strlen(keys[i])), want);
	}
	for (int i = 0; i < N; i += 2)
		cr_assert_eq(hidx_put(&h, keys[i], (uint32_t)strlen(keys[i]), tag((uintptr_t)i + 100000)), 0);
	cr_assert_eq(hidx_count(&h), N);
	for (int i = 0; i < N; i++) {
		void *want = (i % 2) ? tag((uintptr_t)i + 1) : tag((uintptr_t)i + 100000);
		cr_assert_eq(hidx_get(&h, keys[i], (uint32_t)strlen(keys[i])), want);
	}

	/* Churn: a steady population of 100 with many deletes and inserts
	 * must not grow the table (tombstones are reclaimed by rehash). */
	hidx_free(&h);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(hidx_put(&h, keys[i], (uint32_t)strlen(keys[i]), tag((uintptr_t)i + 1)), 0);
	size_t cap = h.cap;
	for (int r = 0; r < 20; r++)
		for (int i = 0; i < N; i++) {
			int out = (i + r * 7) % N, in = (i + 100 + r * 7) % N;
			hidx_del(&h, keys[out], (uint32_t)strlen(keys[out]));
			hidx_set(&h, keys[in], (uint32_t)strlen(keys[in]), tag(1));
			cr_assert_leq((h.count + h.tombstones) * 10, h.cap * 7);
		}
	cr_assert_leq(h.cap, cap * 2, "churn grew the table from %zu to %zu", cap, h.cap);
	cr_assert_eq(hidx_count(&h), 100);
	hidx_free(&h);
}

WM_TEST(hidx, iteration_visits_each_once)
{
	enum { N = 3000 };
	static char keys[N][16];
	static unsigned char seen[N + 1];
	memset(seen, 0, sizeof(seen));
	struct hidx h;
	hidx_init(&h);
	size_t pos = 0;
	cr_assert_null(hidx_next(&h, &pos, NULL, NULL)); /* empty */
	for (int i = 0; i < N; i++) {
		snprintf(keys[i], sizeof(keys[i]), "i%d", i);
		hidx_put(&h, keys[i], (uint32_t)strlen(keys[i]), tag((uintptr_t)i + 1));
	}
	for (int i = 0; i < N; i += 3)
		hidx_del(&h, keys[i], (uint32_t)strlen(keys[i]));
	pos = 0;
	const char *k;
	uint32_t kl;
	size_t visited = 0;
	for (void *v; (v = hidx_next(&h, &pos, &k, &kl)) != NULL;) {
		uintptr_t id = (uintptr_t)v;
		cr_assert(id >= 1 && id <= N);
		cr_assert_eq(seen[id], 0, "visited twice");
		seen[id] = 1;
		cr_assert_eq(k, keys[id - 1]);
		cr_assert_eq(kl, strlen(keys[id - 1]));
		visited++;
	}
	cr_assert_eq(visited, hidx_count(&h));
	for (int i = 0; i < N; i++)
		cr_assert_eq(seen[i + 1], i % 3 != 0);
	cr_assert_null(hidx_next(&h, &pos, &k, &kl)); /* stays at the end */
	hidx_free(&h);
}

WM_TEST(hidx, key_length_bounds)
{
	static char big[IDX_MAX_KEY + 1];
	memset(big, 'x', sizeof(big));
	struct hidx h;
	hidx_init(&h);
	cr_assert_eq(hidx_put(&h, big, IDX_MAX_KEY, tag(1)), 0);
	cr_assert_eq(hidx_get(&h, big, IDX_MAX_KEY), tag(1));
	cr_assert_eq(hidx_put(&h, big, IDX_MAX_KEY + 1, tag(2)), -1);
	cr_assert_eq(hidx_set(&h, big, IDX_MAX_KEY + 1, tag(2)), -1);
	cr_assert_null(hidx_get(&h, big, IDX_MAX_KEY + 1));
	cr_assert_null(hidx_del(&h, big, IDX_MAX_KEY + 1));
	cr_assert_eq(hidx_count(&h), 1);
	cr_assert_eq(hidx_del(&h, big, IDX_MAX_KEY), tag(1));
	hidx_free(&h);
}

WM_TEST(hidx, a_slot_keeps_the_key_address_in_its_tag)
{
	/* 16 bytes a slot: the key's address shares a word with a byte of its
	 * hash and its length (index.c's top) */
	cr_assert_eq(sizeof(struct hidx_slot), 16);
	struct hidx h;
	hidx_init(&h);
	/* an address past 48 bits cannot be kept: refused before anything is
	 * read from it, nothing changed (the pointer is never dereferenced) */
	const char *high = (const char *)((uintptr_t)1 << 48);
	cr_assert_eq(hidx_put(&h, high, 3, tag(1)), -1);
	cr_assert_eq(hidx_set(&h, high, 3, tag(1)), -1);
	void *prev = tag(9);
	cr_assert_eq(hidx_swap(&h, high, 3, tag(1), &prev), -1);
	cr_assert_null(prev);
	cr_assert_eq(hidx_count(&h), 0);
	/* the empty key, given as NULL or as "": one key; its walk gives a
	 * readable address and length 0 */
	cr_assert_eq(hidx_put(&h, NULL, 0, tag(5)), 0);
	cr_assert_eq(hidx_put(&h, "", 0, tag(6)), 1);
	cr_assert_eq(hidx_get(&h, "", 0), tag(5));
	cr_assert_eq(hidx_get(&h, NULL, 0), tag(5));
	size_t pos = 0;
	const char *k = NULL;
	uint32_t kl = 99;
	cr_assert_eq(hidx_next(&h, &pos, &k, &kl), tag(5));
	cr_assert_not_null(k);
	cr_assert_eq(kl, 0);
	/* keys whose check (hash byte and length) collide: 20,000 keys of one
	 * length share 256 checks, ~78 each; every one found, through the
	 * rehashes that hash the stored keys again */
	enum { N = 20000 };
	static char keys[N][8];
	for (int i = 0; i < N; i++) {
		snprintf(keys[i], sizeof(keys[i]), "c%06u", (unsigned)i % 1000000u);
		cr_assert_eq(hidx_put(&h, keys[i], 7, tag((uintptr_t)i + 10)), 0);
	}
	for (int i = 0; i < N; i++) {
		char probe[8];
		memcpy(probe, keys[i], 8); /* another address, the same bytes */
		cr_assert_eq(hidx_get(&h, probe, 7), tag((uintptr_t)i + 10), "key %d", i);
	}
	cr_assert_null(hidx_get(&h, "c999999", 7));
	cr_assert_eq(hidx_del(&h, NULL, 0), tag(5));
	cr_assert_eq(hidx_count(&h), N);
	hidx_free(&h);
}

/* ---- hidx in_value: values that hold their keys ------------------------- */

/* A value that keeps its key 8 bytes in (a table's row keeps its id after
 * its typed struct, an offer its natural key mid-row). */
struct kept {
	uint64_t head;
	char key[12];
	uint32_t n;
};

/* The index in_value walks to the entries of `want` (NULL: absent) exactly
 * once each, and gives every present key's value. */
static void expect_in_value(const struct hidx *h, struct kept *const *want, size_t n)
{
	size_t present = 0, seen = 0, pos = 0;
	for (size_t i = 0; i < n; i++) {
		present += want[i] != NULL;
		if (want[i])
			cr_assert_eq(hidx_get(h, want[i]->key, (uint32_t)strlen(want[i]->key)), want[i], "key %zu", i);
	}
	cr_assert_eq(hidx_count(h), present);
	const char *k;
	uint32_t kl;
	for (struct kept *v; (v = hidx_next(h, &pos, &k, &kl)); seen++) {
		cr_assert_eq(k, v->key, "a walk gives the key inside its value");
		cr_assert_eq(kl, strlen(v->key));
		cr_assert_eq(want[v->n], v, "walked to key %u", v->n);
	}
	cr_assert_eq(seen, present);
}

/* An index in_value: 8 bytes a slot, values derived from the keys' addresses
 * through incremental rehashes, replaced values (another block, the same
 * key), deletes; a key not at its value's offset, or NULL, is refused and
 * changes nothing; hidx_free keeps the kind. */
WM_TEST(hidx, in_value_keeps_a_tag_word_a_slot_and_derives_each_value)
{
	enum { N = 20000 }; /* past HIDX_MOVE_AT_ONCE: growth leaves keys in the previous array */
	static struct kept a[N], b[N];
	static struct kept *want[N];
	struct hidx h;
	hidx_init_in_value(&h, offsetof(struct kept, key));
	cr_assert_eq(hidx_slot_bytes(&h), 8);
	for (uint32_t i = 0; i < N; i++) {
		a[i].n = b[i].n = i;
		snprintf(a[i].key, sizeof(a[i].key), "k-%u", i);
		memcpy(b[i].key, a[i].key, sizeof(a[i].key));
		cr_assert_eq(hidx_put(&h, a[i].key, (uint32_t)strlen(a[i].key), &a[i]), 0);
		want[i] = &a[i];
		if (i % 997 == 0) /* mid-growth: some keys still in the previous array */
			expect_in_value(&h, want, i + 1);
	}
	cr_assert_eq(h.cap * hidx_slot_bytes(&h), h.cap * 8);
	/* the same bytes at another address find the entry */
	char probe[12];
	memcpy(probe, a[123].key, sizeof(probe));
	cr_assert_eq(hidx_get(&h, probe, (uint32_t)strlen(probe)), &a[123]);
	cr_assert_eq(hidx_peek(&h, probe, (uint32_t)strlen(probe)) == NULL ||
			     hidx_peek(&h, probe, (uint32_t)strlen(probe)) == &a[123] ||
			     ((const struct kept *)hidx_peek(&h, probe, (uint32_t)strlen(probe)))->n < N,
		     1, "a peek is NULL or a value of the index");
	/* refused, nothing changed: the key outside its value, NULL, a key
	 * of another value */
	uint32_t l0 = (uint32_t)strlen(a[0].key);
	cr_assert_eq(hidx_put(&h, probe, l0, &a[0]), -1);
	cr_assert_eq(hidx_set(&h, a[1].key, (uint32_t)strlen(a[1].key), &a[0]), -1);
	void *prev = &b[0];
	cr_assert_eq(hidx_swap(&h, NULL, 0, &a[0], &prev), -1);
	cr_assert_null(prev);
	cr_assert_eq(hidx_put(&h, a[0].key + 1, l0 - 1, &a[0]), -1, "the key one byte off its place");
	cr_assert_eq(hidx_get(&h, a[0].key, l0), &a[0]);
	/* replace every odd value by its twin in b: prev is the one it had */
	for (uint32_t i = 1; i < N; i += 2) {
		cr_assert_eq(hidx_swap(&h, b[i].key, (uint32_t)strlen(b[i].key), &b[i], &prev), 0);
		cr_assert_eq(prev, &a[i], "key %u", i);
		want[i] = &b[i];
	}
	cr_assert_eq(hidx_put(&h, b[2].key, (uint32_t)strlen(b[2].key), &b[2]), 1, "present: nothing changed");
	/* delete every third */
	for (uint32_t i = 0; i < N; i += 3) {
		cr_assert_eq(hidx_del(&h, a[i].key, (uint32_t)strlen(a[i].key)), want[i], "key %u", i);
		want[i] = NULL;
	}
	expect_in_value(&h, want, N);
	hidx_free(&h);
	cr_assert_eq(hidx_count(&h), 0);
	cr_assert_eq(hidx_slot_bytes(&h), 8, "hidx_free keeps the kind");
	cr_assert_eq(hidx_put(&h, a[0].key, l0, &a[1]), -1, "and the offset");
	cr_assert_eq(hidx_put(&h, a[0].key, l0, &a[0]), 0);
	cr_assert_eq(hidx_get(&h, a[0].key, l0), &a[0]);
	hidx_free(&h);
}

/* hidx_reserve in_value: sized in 8-byte slots, a load after it never
 * rehashes, and the values come back. */
WM_TEST(hidx, in_value_reserve_then_load)
{
	enum { N = 3000 };
	static struct kept a[N];
	static struct kept *want[N];
	struct hidx h;
	hidx_init_in_value(&h, offsetof(struct kept, key));
	cr_assert_eq(hidx_reserve(&h, N), 0);
	size_t cap = h.cap;
	cr_assert_eq(h.touched, cap * 8, "a reserved array is touched whole");
	for (uint32_t i = 0; i < N; i++) {
		a[i].n = i;
		snprintf(a[i].key, sizeof(a[i].key), "r%u", i);
		cr_assert_eq(hidx_put(&h, a[i].key, (uint32_t)strlen(a[i].key), &a[i]), 0);
		want[i] = &a[i];
	}
	cr_assert_eq(h.cap, cap, "no rehash");
	expect_in_value(&h, want, N);
	hidx_free(&h);
}

WM_TEST(hidx, embedded_nuls)
{
	static const char k1[] = { 'a', 0, 'b' }, k2[] = { 'a', 0, 'c' }, k3[] = { 'a' }, k4[] = { 'a', 0 },
			  k5[] = { 0 }, k6[] = { 0, 0 };
	struct hidx h;
	hidx_init(&h);
	cr_assert_eq(hidx_put(&h, k1, 3, tag(1)), 0);
	cr_assert_eq(hidx_put(&h, k2, 3, tag(2)), 0);
	cr_assert_eq(hidx_put(&h, k3, 1, tag(3)), 0);
	cr_assert_eq(hidx_put(&h, k4, 2, tag(4)), 0);
	cr_assert_eq(hidx_put(&h, k5, 1, tag(5)), 0);
	cr_assert_eq(hidx_put(&h, k6, 2, tag(6)), 0);
	cr_assert_eq(hidx_count(&h), 6);
	char q[3] = { 'a', 0, 'b' };
	cr_assert_eq(hidx_get(&h, q, 3), tag(1));
	q[2] = 'c';
	cr_assert_eq(hidx_get(&h, q, 3), tag(2));
	cr_assert_eq(hidx_get(&h, q, 2), tag(4));
	cr_assert_eq(hidx_get(&h, q, 1), tag(3));
	cr_assert_eq(hidx_get(&h, k6, 1), tag(5));
	cr_assert_eq(hidx_get(&h, k6, 2), tag(6));
	hidx_free(&h);
}

/* ---- oidx model test ---------------------------------------------------- */

struct mentry {
	uint8_t k[24];
	uint32_t len;
	uintptr_t val;
};

struct model {
	struct mentry **e;
	size_t n, cap;
};

/* Index of the first entry >= key; *found if equal. */
static size_t model_lower(const struct model *m, const void *k, uint32_t len, int *found)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (bytes_cmp(m->e[mid]->k, m->e[mid]->len, k, len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < m->n && bytes_cmp(m->e[lo]->k, m->e[lo]->len, k, len) == 0;
	return lo;
}

static void model_insert(struct model *m, size_t at, const void *k, uint32_t len, uintptr_t val)
{
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 1024;
		m->e = realloc(m->e, m->cap * sizeof(m->e[0]));
		cr_assert_not_null(m->e);
	}
	struct mentry *e = malloc(sizeof(*e));
	cr_assert_not_null(e);
	memcpy(e->k, k, len);
	e->len = len;
	e->val = val;
	memmove(&m->e[at + 1], &m->e[at], (m->n - at) * sizeof(m->e[0]));
	m->e[at] = e;
	m->n++;
}

static void model_remove(struct model *m, size_t at)
{
	free(m->e[at]);
	memmove(&m->e[at], &m->e[at + 1], (m->n - at - 1) * sizeof(m->e[0]));
	m->n--;
}

static void model_free(struct model *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->e[i]);
	free(m->e);
	memset(m, 0, sizeof(*m));
}

static const uint8_t alphabet[4] = { 0x00, 'a', 'b', 0xff };

/* A random short key; many are prefixes of others. */
static uint32_t random_key(uint8_t *k)
{
	uint32_t len = (uint32_t)(rng() % 9);
	for (uint32_t i = 0; i < len; i++)
		k[i] = alphabet[rng() % 4];
	return len;
}

/* Ascending keys, all above every random key (9 x 0xff then a counter). */
static uint32_t append_key(uint8_t *k, uint32_t counter)
{
	memset(k, 0xff, 9);
	k[9] = (uint8_t)(counter >> 24);
	k[10] = (uint8_t)(counter >> 16);
	k[11] = (uint8_t)(counter >> 8);
	k[12] = (uint8_t)counter;
	return 13;
}

static void check_seeks(const struct oidx *t, const struct model *m, const uint8_t *k, uint32_t len)
{
	struct oidx_iter it;
	int found;
	size_t at = model_lower(m, k, len, &found);
	int r = oidx_seek_ge(t, k, len, &it);
	if (at == m->n) {
		cr_assert_eq(r, 0, "seek_ge should be past the end");
	} else {
		cr_assert_eq(r, 1, "seek_ge should find an entry");
		uint32_t kl;
		const void *kk = oidx_iter_key(&it, &kl);
		cr_assert_eq(bytes_cmp(kk, kl, m->e[at]->k, m->e[at]->len), 0, "seek_ge key");
		cr_assert_eq(oidx_iter_val(&it), tag(m->e[at]->val));
	}
	/* last <= key: the equal one, or the one before the lower bound */
	size_t le = found ? at + 1 : at; /* count of entries <= key */
	r = oidx_seek_le(t, k, len, &it);
	if (le == 0) {
		cr_assert_eq(r, 0, "seek_le should be before the start");
	} else {
		cr_assert_eq(r, 1, "seek_le should find an entry");
		uint32_t kl;
		const void *kk = oidx_iter_key(&it, &kl);
		cr_assert_eq(bytes_cmp(kk, kl, m->e[le - 1]->k, m->e[le - 1]->len), 0, "seek_le key");
		cr_assert_eq(oidx_iter_val(&it), tag(m->e[le - 1]->val));
	}
}

static void check_walks(const struct oidx *t, const struct model *m)
{
	struct oidx_iter it;
	size_t i = 0;
	for (int r = oidx_seek_ge(t, NULL, 0, &it); r; r = oidx_next(&it), i++) {
		cr_assert_lt(i, m->n, "forward walk too long");
		uint32_t kl;
		const void *kk = oidx_iter_key(&it, &kl);
		cr_assert_eq(bytes_cmp(kk, kl, m->e[i]->k, m->e[i]->len), 0, "forward walk key %zu", i);
		cr_assert_eq(oidx_iter_val(&it), tag(m->e[i]->val));
	}
	cr_assert_eq(i, m->n, "forward walk length");
	i = m->n;
	for (int r = oidx_seek_le(t, NULL, 0, &it); r; r = oidx_prev(&it)) {
		cr_assert_gt(i, 0, "backward walk too long");
		i--;
		uint32_t kl;
		const void *kk = oidx_iter_key(&it, &kl);
		cr_assert_eq(bytes_cmp(kk, kl, m->e[i]->k, m->e[i]->len), 0, "backward walk key %zu", i);
	}
	cr_assert_eq(i, 0, "backward walk length");
}

/* A model test's delete: usually of a key the model holds, sometimes of a
 * random one; the answer checked against the model, which follows.  The
 * key deleted is left in k; its length returned. */
static uint32_t model_delete_op(struct oidx *t, struct model *m, uint8_t *k, int op)
{
	uint32_t len;
	int found;
	if (m->n > 0 && rng() % 4 != 0) {
		struct mentry *e = m->e[rng() % m->n];
		len = e->len;
		memcpy(k, e->k, len);
	} else {
		len = random_key(k);
	}
	size_t at = model_lower(m, k, len, &found);
	void *got = oidx_del(t, k, len);
	if (found) {
		cr_assert_eq(got, tag(m->e[at]->val), "del value at op %d", op);
		model_remove(m, at);
	} else {
		cr_assert_null(got);
	}
	return len;
}

/* get of k and the seeks around it, as the model answers them. */
static void model_probe(const struct oidx *t, const struct model *m, const uint8_t *k, uint32_t len)
{
	int found;
	size_t at = model_lower(m, k, len, &found);
	cr_assert_eq(oidx_get(t, k, len), found ? tag(m->e[at]->val) : NULL);
	check_seeks(t, m, k, len);
}

/* Delete what is left, in random order, checking the tree as it shrinks;
 * then it is empty. */
static void model_drain(struct oidx *t, struct model *m)
{
	while (m->n > 0) {
		size_t at = rng() % m->n;
		cr_assert_eq(oidx_del(t, m->e[at]->k, m->e[at]->len), tag(m->e[at]->val));
		model_remove(m, at);
		if (m->n % 1000 == 0)
			cr_assert_eq(oidx_check(t), 0);
	}
	cr_assert_eq(oidx_count(t), 0);
	cr_assert_null(t->root);
	cr_assert_eq(t->height, 0);
	cr_assert_eq(oidx_check(t), 0);
}

WM_TEST(oidx, model_randomized)
{
	enum { OPS = 80000, PHASE1 = 40000, PHASE2 = 60000 };
	rng_state = 0x5eed1234u;
	struct oidx t;
	struct model m = { 0 };
	oidx_init(&t);
	uint32_t appends = 0;
	uintptr_t next_val = 1;
	uint32_t max_height = 0;
	for (int op = 0; op < OPS; op++) {
		/* Phase 1 grows the tree, phase 2 churns, phase 3 shrinks it. */
		unsigned ins_pct = op < PHASE1 ? 70 : op < PHASE2 ? 50 : 25;
		uint8_t k[24];
		uint32_t len;
		unsigned dice = (unsigned)(rng() % 100);
		int found;
		if (dice < ins_pct) {
			len = (rng() % 5 == 0) ? append_key(k, appends++) : random_key(k);
			size_t at = model_lower(&m, k, len, &found);
			uintptr_t v = next_val++;
			if (rng() % 4 == 0) {
				cr_assert_eq(oidx_set(&t, k, len, tag(v)), 0);
				if (found)
					m.e[at]->val = v;
				else
					model_insert(&m, at, k, len, v);
			} else {
				cr_assert_eq(oidx_put(&t, k, len, tag(v)), found ? 1 : 0);
				if (!found)
					model_insert(&m, at, k, len, v);
			}
		} else {
			len = model_delete_op(&t, &m, k, op);
		}
		cr_assert_eq(oidx_count(&t), m.n, "count at op %d", op);
		/* get of the op key and a random probe; seeks around both */
		model_probe(&t, &m, k, len);
		uint8_t q[24];
		uint32_t ql = random_key(q);
		model_probe(&t, &m, q, ql);
		if (t.height > max_height)
			max_height = t.height;
		if (op % 2500 == 0 || op == OPS - 1) {
			cr_assert_eq(oidx_check(&t), 0, "oidx_check failed at op %d", op);
			check_walks(&t, &m);
		}
	}
	cr_assert_geq(max_height, 3, "the model test should reach a 3-level tree");
	model_drain(&t, &m);
	oidx_free(&t);
	model_free(&m);
}

/* ---- oidx edge cases ---------------------------------------------------- */

WM_TEST(oidx, empty_tree)
{
	struct oidx t;
	struct oidx_iter it;
	oidx_init(&t);
	cr_assert_eq(oidx_count(&t), 0);
	cr_assert_null(oidx_get(&t, "a", 1));
	cr_assert_null(oidx_get(&t, NULL, 0));
	cr_assert_null(oidx_del(&t, "a", 1));
	cr_assert_eq(oidx_seek_ge(&t, NULL, 0, &it), 0);
	cr_assert_eq(oidx_seek_ge(&t, "a", 1, &it), 0);
	cr_assert_eq(oidx_seek_le(&t, NULL, 0, &it), 0);
	cr_assert_eq(oidx_seek_le(&t, "z", 1, &it), 0);
	cr_assert_eq(oidx_next(&it), 0);
	cr_assert_eq(oidx_prev(&it), 0);
	cr_assert_eq(oidx_check(&t), 0);
	/* one key in, one key out: back to empty */
	cr_assert_eq(oidx_put(&t, "k", 1, tag(1)), 0);
	cr_assert_eq(oidx_del(&t, "k", 1), tag(1));
	cr_assert_null(t.root);
	cr_assert_eq(oidx_check(&t), 0);
	oidx_free(&t);
	oidx_free(&t);
}

WM_TEST(oidx, prefix_keys)
{
	static char buf[IDX_MAX_KEY];
	memset(buf, 'a', sizeof(buf));
	struct oidx t;
	oidx_init(&t);
	/* "", "a", "aa", ... "a"*255 inserted in reverse, plus "a\0" and "b" */
	for (int l = IDX_MAX_KEY; l >= 0; l--)
		cr_assert_eq(oidx_put(&t, buf, (uint32_t)l, tag((uintptr_t)l + 1)), 0);
	cr_assert_eq(oidx_put(&t, "a\0", 2, tag(1000)), 0);
	cr_assert_eq(oidx_put(&t, "b", 1, tag(2000)), 0);
	cr_assert_eq(oidx_count(&t), IDX_MAX_KEY + 3);
	cr_assert_eq(oidx_check(&t), 0);
	cr_assert_eq(oidx_get(&t, buf, 0), tag(1));
	cr_assert_eq(oidx_get(&t, buf, 3), tag(4));
	cr_assert_eq(oidx_get(&t, "a\0", 2), tag(1000));

	/* order: "" < "a" < "a\0" < "aa" < ... < "a"*255 < "b" */
	struct oidx_iter it;
	cr_assert_eq(oidx_seek_ge(&t, NULL, 0, &it), 1);
	cr_assert_eq(oidx_iter_val(&it), tag(1));
	cr_assert_eq(oidx_next(&it), 1);
	cr_assert_eq(oidx_iter_val(&it), tag(2));
	cr_assert_eq(oidx_next(&it), 1);
	cr_assert_eq(oidx_iter_val(&it), tag(1000));
	for (uint32_t l = 2; l <= IDX_MAX_KEY; l++) {
		cr_assert_eq(oidx_next(&it), 1);
		uint32_t kl;
		oidx_iter_key(&it, &kl);
		cr_assert_eq(kl, l);
	}
	cr_assert_eq(oidx_next(&it), 1);
	cr_assert_eq(oidx_iter_val(&it), tag(2000));
	cr_assert_eq(oidx_next(&it), 0);
	cr_assert_eq(oidx_next(&it), 0); /* stays off */

	/* seek_ge between prefixes: "a\x01" lands on "aa" */
	cr_assert_eq(oidx_seek_ge(&t, "a\x01", 2, &it), 1);
	cr_assert_eq(oidx_iter_val(&it), tag(3));
	/* seek_le of "a\x01" lands on "a\0" */
	cr_assert_eq(oidx_seek_le(&t, "a\x01", 2, &it), 1);
	cr_assert_eq(oidx_iter_val(&it), tag(1000));
	/* seek_le of the empty (non-NULL) key is the empty key itself */
	cr_assert_eq(oidx_seek_le(&t, "", 0, &it), 1);
	cr_assert_eq(oidx_iter_val(&it), tag(1));
	cr_assert_eq(oidx_prev(&it), 0);

	/* delete the middle prefixes; neighbours stay reachable */
	for (int l = 10; l < 200; l++)
		cr_assert_eq(oidx_del(&t, buf, (uint32_t)l), tag((uintptr_t)l + 1));
	cr_assert_eq(oidx_check(&t), 0);
	cr_assert_eq(oidx_seek_ge(&t, buf, 10, &it), 1);
	cr_assert_eq(oidx_iter_val(&it), tag(201));
	cr_assert_eq(oidx_prev(&it), 1);
	cr_assert_eq(oidx_iter_val(&it), tag(10));
	oidx_free(&t);
}

WM_TEST(oidx, seek_past_end_and_before_start)
{
	struct oidx t;
	struct oidx_iter it;
	oidx_init(&t);
	char k[16];
	for (unsigned i = 100; i < 1100; i++) {
		snprintf(k, sizeof(k), "k%04u", i);
		cr_assert_eq(oidx_put(&t, k, 5, tag((uintptr_t)i)), 0);
	}
	cr_assert_eq(oidx_seek_ge(&t, "k9999", 5, &it), 0);
	cr_assert_eq(oidx_seek_ge(&t, "l", 1, &it), 0);
	cr_assert_eq(oidx_seek_ge(&t, "k1099", 5, &it), 1);
	cr_assert_eq(oidx_iter_val(&it), tag(1099));
	cr_assert_eq(oidx_next(&it), 0);
	cr_assert_eq(oidx_seek_le(&t, "k0000", 5, &it), 0);
	cr_assert_eq(oidx_seek_le(&t, "a", 1, &it), 0);
	cr_assert_eq(oidx_seek_le(&t, "", 0, &it), 0);
	cr_assert_eq(oidx_seek_le(&t, "k0100", 5, &it), 1);
	cr_assert_eq(oidx_iter_val(&it), tag(100));
	cr_assert_eq(oidx_prev(&it), 0);
	cr_assert_eq(oidx_seek_ge(&t, "a", 1, &it), 1);
	cr_assert_eq(oidx_iter_val(&it), tag(100));
	cr_assert_eq(oidx_seek_le(&t, "z", 1, &it), 1);
	cr_assert_eq(oidx_iter_val(&it), tag(1099));
	cr_assert_eq(oidx_seek_le(&t, NULL, 0, &it), 1);
	cr_assert_eq(oidx_iter_val(&it), tag(1099));
	/* a probe longer than IDX_MAX_KEY still seeks correctly */
	static char longq[IDX_MAX_KEY + 10];
	memset(longq, '0', sizeof(longq));
	memcpy(longq, "k05", 3);
	cr_assert_eq(oidx_seek_ge(&t, longq, sizeof(longq), &it), 1);
	cr_assert_eq(oidx_iter_val(&it), tag(501));
	cr_assert_eq(oidx_seek_le(&t, longq, sizeof(longq), &it), 1);
	cr_assert_eq(oidx_iter_val(&it), tag(500));
	/* a 50-step page from the middle */
	cr_assert_eq(oidx_seek_ge(&t, "k0500", 5, &it), 1);
	for (int i = 1; i < 50; i++) {
		cr_assert_eq(oidx_next(&it), 1);
		cr_assert_eq(oidx_iter_val(&it), tag((uintptr_t)500 + (uintptr_t)i));
	}
	oidx_free(&t);
}

/* oidx_seek_ge_many finds for each of its keys what oidx_seek_ge finds
 * (the same leaf and place, or none), whatever the tree's height (empty,
 * one leaf, two levels, three or more) and however many keys (0 to
 * OIDX_SEEK_MANY_MAX): present and absent keys, below the first and past
 * the last, NULL, longer than IDX_MAX_KEY, and repeats; it counts one
 * probe a key. */
WM_TEST(oidx, seek_many_finds_what_each_seek_finds)
{
	static const unsigned sizes[] = {0, 1, 60, 5000, 120000};
	static char longq[IDX_MAX_KEY + 10];
	memset(longq, '5', sizeof(longq));
	memcpy(longq, "k00", 3);
	uint32_t heights_seen = 0;
	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		struct oidx t;
		oidx_init(&t);
		char k[16];
		for (unsigned i = 0; i < sizes[z]; i++) { /* even numbers: the odd ones fall between */
			int n = snprintf(k, sizeof(k), "k%07u", 2 * i);
			cr_assert_eq(oidx_put(&t, k, (uint32_t)n, tag((uintptr_t)i + 1)), 0);
		}
		heights_seen |= 1u << t.height;
		srand(7 + (unsigned)z);
		for (unsigned round = 0; round < 200; round++) {
			unsigned n = round % (OIDX_SEEK_MANY_MAX + 1);
			char q[OIDX_SEEK_MANY_MAX][16];
			const void *keys[OIDX_SEEK_MANY_MAX];
			uint32_t lens[OIDX_SEEK_MANY_MAX];
			for (unsigned i = 0; i < n; i++) {
				unsigned kind = (unsigned)rand() % 8, v = (unsigned)rand() % (2 * sizes[z] + 3);
				keys[i] = q[i];
				lens[i] = (uint32_t)snprintf(q[i], sizeof(q[i]), "k%07u", v); /* present or between */
				if (kind == 0)
					lens[i] = (uint32_t)snprintf(q[i], sizeof(q[i]), "a"); /* below every key */
				else if (kind == 1)
					lens[i] = (uint32_t)snprintf(q[i], sizeof(q[i]), "z"); /* past every key */
				else if (kind == 2)
					keys[i] = NULL, lens[i] = 0; /* the first key */
				else if (kind == 3)
					keys[i] = longq, lens[i] = sizeof(longq);
				else if (kind == 4 && i > 0)
					keys[i] = keys[i - 1], lens[i] = lens[i - 1]; /* a repeat */
			}
			struct oidx_iter many[OIDX_SEEK_MANY_MAX], one;
			int ok[OIDX_SEEK_MANY_MAX];
			uint64_t p0 = idx_probes;
			oidx_seek_ge_many(&t, n, keys, lens, many, ok);
			cr_assert_eq(idx_probes - p0, n, "one probe a key");
			for (unsigned i = 0; i < n; i++) {
				int ok1 = oidx_seek_ge(&t, keys[i], lens[i], &one);
				cr_assert_eq(ok[i], ok1, "size %u, key %u of %u", sizes[z], i, n);
				cr_assert_eq(many[i].leaf, one.leaf);
				cr_assert_eq(many[i].pos, one.pos);
				if (ok1)
					cr_assert_eq(oidx_iter_val(&many[i]), oidx_iter_val(&one));
			}
		}
		oidx_free(&t);
	}
	cr_assert_eq(heights_seen & 0xf, 0xf, "heights 0 to 3 all seen (got mask %#x)", heights_seen);
}

WM_TEST(oidx, key_length_bounds)
{
	static char big[IDX_MAX_KEY + 1];
	memset(big, 'q', sizeof(big));
	struct oidx t;
	oidx_init(&t);
	cr_assert_eq(oidx_put(&t, big, IDX_MAX_KEY, tag(1)), 0);
	cr_assert_eq(oidx_get(&t, big, IDX_MAX_KEY), tag(1));
	cr_assert_eq(oidx_put(&t, big, IDX_MAX_KEY + 1, tag(2)), -1);
	cr_assert_eq(oidx_set(&t, big, IDX_MAX_KEY + 1, tag(2)), -1);
	cr_assert_null(oidx_get(&t, big, IDX_MAX_KEY + 1));
	cr_assert_null(oidx_del(&t, big, IDX_MAX_KEY + 1));
	cr_assert_eq(oidx_put(&t, NULL, 1, tag(3)), -1);
	cr_assert_eq(oidx_count(&t), 1);
	struct oidx_iter it;
	cr_assert_eq(oidx_seek_ge(&t, NULL, 0, &it), 1);
	uint32_t kl;
	const char *kk = oidx_iter_key(&it, &kl);
	cr_assert_eq(kl, IDX_MAX_KEY);
	cr_assert_eq(memcmp(kk, big, IDX_MAX_KEY), 0);
	/* many max-length keys sharing a long prefix: separators stay valid */
	for (int i = 0; i < 2000; i++) {
		big[IDX_MAX_KEY - 2] = (char)(i >> 8);
		big[IDX_MAX_KEY - 1] = (char)i;
		oidx_set(&t, big, IDX_MAX_KEY, tag((uintptr_t)i + 10));
	}
	cr_assert_eq(oidx_check(&t), 0);
	oidx_free(&t);
}

WM_TEST(oidx, sequential_and_reverse_loads)
{
	enum { N = 100000 };
	struct oidx t;
	oidx_init(&t);
	char k[16];
	for (uint32_t i = 0; i < N; i++) {
		int n = snprintf(k, sizeof(k), "off_%08u", i);
		cr_assert_eq(oidx_put(&t, k, (uint32_t)n, tag(i + 1)), 0);
	}
	cr_assert_eq(oidx_check(&t), 0);
	/* append splits keep leaves full: 100k / 64 leaves -> height 3 */
	cr_assert_leq(t.height, 3);
	/* insert into the middle of full leaves afterwards */
	for (uint32_t i = 0; i < N; i += 7) {
		int n = snprintf(k, sizeof(k), "off_%08u.5", i);
		cr_assert_eq(oidx_put(&t, k, (uint32_t)n, tag(1)), 0);
	}
	cr_assert_eq(oidx_check(&t), 0);
	/* delete everything from the end backwards (thin right spine) */
	for (uint32_t i = N; i-- > 0;) {
		int n = snprintf(k, sizeof(k), "off_%08u", i);
		cr_assert_eq(oidx_del(&t, k, (uint32_t)n), tag(i + 1));
		if (i % 10000 == 0)
			cr_assert_eq(oidx_check(&t), 0);
	}
	cr_assert_eq(oidx_count(&t), (N + 6) / 7);
	oidx_free(&t);

	/* reverse load */
	for (uint32_t i = N; i-- > 0;) {
		int n = snprintf(k, sizeof(k), "off_%08u", i);
		cr_assert_eq(oidx_put(&t, k, (uint32_t)n, tag(i + 1)), 0);
	}
	cr_assert_eq(oidx_check(&t), 0);
	cr_assert_leq(t.height, 4);
	/* delete from the front: lookups stay logarithmic (height shrinks) */
	for (uint32_t i = 0; i < N - 10; i++) {
		int n = snprintf(k, sizeof(k), "off_%08u", i);
		cr_assert_eq(oidx_del(&t, k, (uint32_t)n), tag(i + 1));
	}
	cr_assert_eq(oidx_check(&t), 0);
	cr_assert_eq(t.height, 1);
	oidx_free(&t);
}

WM_TEST(oidx, free_large_tree)
{
	enum { N = 200000 };
	struct oidx t;
	oidx_init(&t);
	rng_state = 42;
	uint8_t k[16];
	size_t inserted = 0;
	for (int i = 0; i < N; i++) {
		uint64_t r = rng();
		memcpy(k, &r, 8);
		uint32_t len = 8 + (uint32_t)(r % 8);
		memset(k + 8, 'z', 8);
		int rc = oidx_put(&t, k, len, tag(1));
		cr_assert(rc == 0 || rc == 1);
		inserted += rc == 0;
	}
	cr_assert_eq(oidx_count(&t), inserted);
	cr_assert_eq(oidx_check(&t), 0);
	oidx_free(&t);
	cr_assert_eq(oidx_count(&t), 0);
	cr_assert_null(t.root);
	/* reusable after free */
	cr_assert_eq(oidx_put(&t, "x", 1, tag(1)), 0);
	oidx_free(&t);
}

/* ---- bulk-load paths: hidx_reserve, the oidx append path --------------- */

/* The capacity growing one insert at a time reaches at n entries. */
static size_t grown_cap(size_t n)
{
	struct hidx h;
	hidx_init(&h);
	char *keys = malloc(n * 12 + 1);
	cr_assert_not_null(keys);
	for (size_t i = 0; i < n; i++) {
		int len = snprintf(keys + i * 12, 12, "k%010zu", i);
		cr_assert_eq(hidx_put(&h, keys + i * 12, (uint32_t)len, tag(i + 1)), 0);
	}
	size_t cap = h.cap;
	hidx_free(&h);
	free(keys);
	return cap;
}

/* A growing array past HIDX_TOUCH_AT_ONCE bytes is not touched at once
 * (that stalled the loop: a 96 MB event index took 93 ms in one insert)
 * but step by step while its entries move, all of it before the move ends;
 * a small one, and one a bulk load reserves, at once. */
WM_TEST(hidx, a_growing_array_is_touched_step_by_step_a_reserved_one_at_once)
{
	enum { N = 60000 };
	static char keys[N][16];
	struct hidx h;
	hidx_init(&h);
	size_t cap = 0, big = 0, small = 0;
	int was_moving = 0;
	for (int i = 0; i < N; i++) {
		snprintf(keys[i], sizeof(keys[i]), "t%d", i);
		cr_assert_eq(hidx_put(&h, keys[i], (uint32_t)strlen(keys[i]), tag((uintptr_t)i + 1)), 0);
		size_t bytes = h.cap * sizeof(struct hidx_slot);
		cr_assert_leq(h.touched, bytes);
		if (h.cap != cap) { /* this insert grew the array */
			cap = h.cap;
			if (bytes <= HIDX_TOUCH_AT_ONCE) {
				small++;
				cr_assert_eq(h.touched, bytes, "%zu slots: %zu of %zu bytes touched", cap, h.touched, bytes);
			} else {
				big++;
				cr_assert_lt(h.touched, bytes / 8, "%zu slots: %zu of %zu bytes touched at once", cap,
					     h.touched, bytes);
				cr_assert_not_null(h.old, "%zu slots: moved at once", cap);
			}
		}
		if (was_moving && !h.old) /* the move just ended: the whole array is touched */
			cr_assert_eq(h.touched, bytes, "%zu slots: %zu of %zu bytes touched by the move's end", cap,
				     h.touched, bytes);
		was_moving = h.old != NULL;
	}
	cr_assert_geq(small, 3);
	cr_assert_geq(big, 2, "only %zu growths past the bound", big);
	for (int i = 0; i < N; i++)
		cr_assert_eq(hidx_get(&h, keys[i], (uint32_t)strlen(keys[i])), tag((uintptr_t)i + 1));
	hidx_free(&h);
	/* a bulk load's array: touched at once, past the bound too -- reserved,
	 * or grown by a thread in hidx_bulk_load */
	hidx_init(&h);
	cr_assert_eq(hidx_reserve(&h, N), 0);
	cr_assert_gt(h.cap * sizeof(struct hidx_slot), HIDX_TOUCH_AT_ONCE);
	cr_assert_eq(h.touched, h.cap * sizeof(struct hidx_slot));
	hidx_free(&h);
	hidx_init(&h);
	hidx_bulk_load(true);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(hidx_put(&h, keys[i], (uint32_t)strlen(keys[i]), tag((uintptr_t)i + 1)), 0);
		cr_assert_eq(h.touched, h.cap * sizeof(struct hidx_slot), "bulk, %zu slots", h.cap);
	}
	hidx_bulk_load(false);
	cr_assert_gt(h.cap * sizeof(struct hidx_slot), HIDX_TOUCH_AT_ONCE);
	hidx_free(&h);
}

WM_TEST(hidx, reserve_then_load_never_rehashes)
{
	static const size_t sizes[] = { 1, 11, 12, 100, 716, 717, 5000, 45875, 45876, 100000 };
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s];
		struct hidx h;
		hidx_init(&h);
		cr_assert_eq(hidx_reserve(&h, n), 0);
		size_t cap = h.cap;
		cr_assert_eq(cap, grown_cap(n), "n=%zu: reserve sized %zu, growth reaches %zu", n, cap,
			     grown_cap(n));
		cr_assert_null(h.old);
		char *keys = malloc(n * 12 + 1);
		cr_assert_not_null(keys);
		for (size_t i = 0; i < n; i++) {
			int len = snprintf(keys + i * 12, 12, "k%010zu", i);
			cr_assert_eq(hidx_put(&h, keys + i * 12, (uint32_t)len, tag(i + 1)), 0);
			cr_assert_eq(h.cap, cap, "n=%zu: rehashed at insert %zu", n, i);
			cr_assert_null(h.old);
		}
		for (size_t i = 0; i < n; i++)
			cr_assert_eq(hidx_get(&h, keys + i * 12, 11), tag(i + 1));
		/* room already: nothing changes, also for a smaller n */
		cr_assert_eq(hidx_reserve(&h, n), 0);
		cr_assert_eq(hidx_reserve(&h, n / 2), 0);
		cr_assert_eq(h.cap, cap);
		/* one past the room grows (and keeps every key) */
		size_t more = cap; /* surely past 7/10 of cap */
		cr_assert_eq(hidx_reserve(&h, more), 0);
		cr_assert_gt(h.cap, cap);
		cr_assert_null(h.old, "a reserve leaves nothing to move");
		cr_assert_eq(hidx_count(&h), n);
		for (size_t i = 0; i < n; i++)
			cr_assert_eq(hidx_get(&h, keys + i * 12, 11), tag(i + 1));
		hidx_free(&h);
		free(keys);
	}
}

WM_TEST(hidx, reserve_edges)
{
	struct hidx h;
	hidx_init(&h);
	cr_assert_eq(hidx_reserve(&h, 0), 0);
	cr_assert_eq(hidx_put(&h, "a", 1, tag(1)), 0);
	/* past the address space: refused, nothing changed */
	size_t cap = h.cap;
	cr_assert_eq(hidx_reserve(&h, SIZE_MAX), -1);
	cr_assert_eq(hidx_reserve(&h, SIZE_MAX / 8), -1);
	cr_assert_eq(h.cap, cap);
	cr_assert_eq(hidx_get(&h, "a", 1), tag(1));
	hidx_free(&h);

	/* while an incremental rehash is moving: finished, every key kept */
	enum { N = 20000 };
	char (*k)[12] = malloc(sizeof(*k) * N * 2);
	cr_assert_not_null(k);
	hidx_init(&h);
	size_t i = 0;
	for (; i < N; i++) {
		snprintf(k[i], sizeof(k[i]), "r%09zu", i);
		cr_assert_eq(hidx_put(&h, k[i], 10, tag(i + 1)), 0);
	}
	for (; !h.old && i < 2 * N; i++) { /* until a rehash is under way */
		snprintf(k[i], sizeof(k[i]), "r%09zu", i);
		cr_assert_eq(hidx_put(&h, k[i], 10, tag(i + 1)), 0);
	}
	cr_assert_not_null(h.old, "no incremental rehash started");
	cr_assert_eq(hidx_reserve(&h, hidx_count(&h) + 10), 0);
	cr_assert_null(h.old, "the move was finished");
	for (size_t j = 0; j < i; j++)
		cr_assert_eq(hidx_get(&h, k[j], 10), tag(j + 1), "key %zu", j);
	/* tombstones: a reserve that grows drops them */
	for (size_t j = 0; j < i; j += 3)
		cr_assert_eq(hidx_del(&h, k[j], 10), tag(j + 1));
	cr_assert_gt(h.tombstones, 0, "no tombstone left to drop");
	size_t live = hidx_count(&h);
	cr_assert_eq(hidx_reserve(&h, h.cap), 0);
	cr_assert_null(h.old);
	cr_assert_eq(h.tombstones, 0);
	cr_assert_eq(hidx_count(&h), live);
	for (size_t j = 0; j < i; j++)
		cr_assert_eq(hidx_get(&h, k[j], 10), j % 3 ? tag(j + 1) : NULL, "key %zu", j);
	size_t seen = 0, pos = 0;
	while (hidx_next(&h, &pos, NULL, NULL))
		seen++;
	cr_assert_eq(seen, live);
	hidx_free(&h);
	free(k);
}

/* Walk t in order and compare with keys[0..n) sorted by bytes_cmp. */
struct kv {
	uint8_t k[40];
	uint32_t len;
};

static int kv_cmp(const void *a, const void *b)
{
	const struct kv *x = a, *y = b;
	return bytes_cmp(x->k, x->len, y->k, y->len);
}

static void expect_walk(const struct oidx *t, struct kv *keys, size_t n)
{
	qsort(keys, n, sizeof(*keys), kv_cmp);
	struct oidx_iter it;
	size_t i = 0;
	for (int on = oidx_seek_ge(t, NULL, 0, &it); on; on = oidx_next(&it), i++) {
		uint32_t kl;
		const void *k = oidx_iter_key(&it, &kl);
		cr_assert_lt(i, n);
		cr_assert_eq(kl, keys[i].len, "entry %zu", i);
		cr_assert(kl == 0 || memcmp(k, keys[i].k, kl) == 0, "entry %zu out of order", i);
	}
	cr_assert_eq(i, n);
	cr_assert_eq(oidx_count(t), n);
	cr_assert_eq(oidx_check(t), 0);
}

WM_TEST(oidx, append_path_edges)
{
	struct oidx t;
	oidx_init(&t);
	/* a key that extends the largest sorts above it: appended */
	cr_assert_eq(oidx_put(&t, "b", 1, tag(1)), 0);
	cr_assert_eq(oidx_put(&t, "b\0", 2, tag(2)), 0);
	cr_assert_eq(oidx_put(&t, "b\0\0", 3, tag(3)), 0);
	/* equal to the largest: found, not appended twice */
	cr_assert_eq(oidx_put(&t, "b\0\0", 3, tag(9)), 1);
	cr_assert_eq(oidx_set(&t, "b\0\0", 3, tag(4)), 0);
	cr_assert_eq(oidx_get(&t, "b\0\0", 3), tag(4));
	/* below the largest: the ordinary descent */
	cr_assert_eq(oidx_put(&t, "a", 1, tag(5)), 0);
	cr_assert_eq(oidx_put(&t, "", 0, tag(6)), 0);
	cr_assert_eq(oidx_put(&t, "b", 1, tag(7)), 1);
	cr_assert_eq(oidx_count(&t), 5);
	cr_assert_eq(oidx_check(&t), 0);
	oidx_free(&t);

	/* an ascending load with long shared prefixes (the 8-byte compare steps)
	 * through many leaf and root splits, salted with keys below the largest,
	 * then the largest deleted (a thin right spine) and appends again */
	enum { N = 30000 };
	struct kv *keys = calloc(2 * N, sizeof(*keys));
	cr_assert_not_null(keys);
	size_t n = 0;
	rng_state = 7;
	for (uint32_t i = 0; i < N; i++) {
		struct kv *e = &keys[n];
		/* "wine_0000000000|" + ascending counter, lengths 17..26 */
		int len = snprintf((char *)e->k, sizeof(e->k), "wine_0000000000|%0*u", 1 + (int)(i % 10), i);
		if (i % 10 == 0)
			len = snprintf((char *)e->k, sizeof(e->k), "wine_0000000000|%010u", i);
		e->len = (uint32_t)len;
		int rc = oidx_put(&t, e->k, e->len, tag(i + 1));
		cr_assert(rc == 0 || rc == 1);
		n += rc == 0;
		if (i % 97 == 0) { /* below the largest: bytes 0x00, 0x80, 0xff in the tail */
			struct kv *b = &keys[n];
			memcpy(b->k, "wine_0000000000|", 16);
			uint64_t r = rng();
			b->k[16] = (uint8_t)(r & 1 ? 0x00 : 0x2f);
			b->k[17] = (uint8_t)(r & 2 ? 0x80 : 0xff);
			b->len = 18 + (uint32_t)(r % 5);
			for (uint32_t j = 18; j < b->len; j++)
				b->k[j] = (uint8_t)(r >> (8 * (j - 16)));
			rc = oidx_put(&t, b->k, b->len, tag(1));
			cr_assert(rc == 0 || rc == 1);
			n += rc == 0;
		}
	}
	expect_walk(&t, keys, n);
	/* delete the largest 500: the rightmost leaves empty out */
	for (size_t d = 0; d < 500; d++) {
		cr_assert_not_null(oidx_del(&t, keys[n - 1].k, keys[n - 1].len));
		n--;
	}
	cr_assert_eq(oidx_check(&t), 0);
	for (uint32_t i = 0; i < 2000; i++) {
		struct kv *e = &keys[n++];
		e->len = (uint32_t)snprintf((char *)e->k, sizeof(e->k), "wine_0000000001|%08u", i);
		cr_assert_eq(oidx_put(&t, e->k, e->len, tag(1)), 0);
	}
	expect_walk(&t, keys, n);
	oidx_free(&t);
	free(keys);
}

WM_TEST(oidx, order_is_unsigned_bytes_then_length)
{
	/* keys of 0..24 bytes over {0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff} with long
	 * common prefixes: the inline word compare must order them as memcmp
	 * (unsigned) then shorter first, in every 8-byte lane */
	static const uint8_t alpha[] = { 0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff };
	enum { N = 20000 };
	struct kv *keys = calloc(N, sizeof(*keys));
	cr_assert_not_null(keys);
	struct oidx t;
	oidx_init(&t);
	rng_state = 99;
	size_t n = 0;
	for (int i = 0; i < N; i++) {
		uint64_t r = rng();
		struct kv *e = &keys[n];
		e->len = (uint32_t)(r % 25);
		uint32_t common = (uint32_t)((r >> 8) % 25); /* a shared prefix of 0x7f */
		for (uint32_t j = 0; j < e->len; j++)
			e->k[j] = j < common ? 0x7f : alpha[rng() % sizeof(alpha)];
		int rc = oidx_put(&t, e->k, e->len, tag(1));
		cr_assert(rc == 0 || rc == 1);
		n += rc == 0;
	}
	expect_walk(&t, keys, n);
	/* every key is found, and seek_ge lands on it */
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(oidx_get(&t, keys[i].k, keys[i].len), tag(1));
		struct oidx_iter it;
		cr_assert_eq(oidx_seek_ge(&t, keys[i].k, keys[i].len, &it), 1);
		uint32_t kl;
		const void *k = oidx_iter_key(&it, &kl);
		cr_assert(kl == keys[i].len && (kl == 0 || memcmp(k, keys[i].k, kl) == 0));
	}
	oidx_free(&t);
	free(keys);
}

/* ---- oidx leaves: keys inline, fill in bytes ----------------------------
 *
 * The leaves hold their keys inline and fill by bytes (index.c's top):
 * these tests drive the byte bounds with keys of every length, and look at
 * the leaves through oidx_leaf_stats and through walks that notice the
 * iterator moving to another leaf. */

/* What a key of len bytes is charged against a leaf. */
static size_t charge(const struct oidx_leaf_stats *s, uint32_t len)
{
	size_t c = s->entry_overhead + len;
	return c > s->min_charge ? c : s->min_charge;
}

/* The bytes a and b share at their start. */
static uint32_t shared(const uint8_t *a, uint32_t al, const uint8_t *b, uint32_t bl)
{
	uint32_t p = 0;
	while (p < al && p < bl && a[p] == b[p])
		p++;
	return p;
}

/* One leaf as a walk sees it. */
struct leaf_view {
	uint32_t n;         /* entries */
	size_t fill;        /* the charges of its entries, keys whole (vfill) */
	uint32_t first_len; /* length of its first key */
	uint8_t first[IDX_MAX_KEY], last[IDX_MAX_KEY];
	uint32_t last_len;
	uint32_t plen;      /* the prefix it keeps (at most what its first and last key share) */
	size_t pfill;       /* the charges of its entries stored after that prefix */
	uint32_t lens[512]; /* its keys' lengths */
};

/* What a leaf of v's keys is charged stored after pl bytes of prefix. */
static size_t fill_under(const struct oidx_leaf_stats *s, const struct leaf_view *v, uint32_t pl)
{
	size_t f = 0;
	for (uint32_t i = 0; i < v->n; i++)
		f += charge(s, v->lens[i] - pl);
	return f;
}

/* The leaves of t in order, into out[0..max); returns how many, having
 * checked that the leaves' stored charges add up to the tree's fill and
 * that each keeps a prefix its first and last keys share. */
static size_t leaf_views(const struct oidx *t, struct leaf_view *out, size_t max)
{
	struct oidx_leaf_stats s;
	oidx_leaf_stats(t, &s);
	struct oidx_iter it;
	size_t nl = 0;
	const struct oidx_node *cur = NULL;
	for (int on = oidx_seek_ge(t, NULL, 0, &it); on; on = oidx_next(&it)) {
		uint32_t kl;
		const uint8_t *k = oidx_iter_key(&it, &kl);
		if (it.leaf != cur) {
			cr_assert_lt(nl, max);
			cur = it.leaf;
			out[nl] = (struct leaf_view){ .first_len = kl, .plen = oidx_iter_leaf_prefix(&it) };
			memcpy(out[nl].first, k, kl);
			nl++;
		}
		struct leaf_view *v = &out[nl - 1];
		cr_assert_lt(v->n, 512);
		v->lens[v->n++] = kl;
		v->fill += charge(&s, kl);
		memcpy(v->last, k, kl);
		v->last_len = kl;
	}
	cr_assert_eq(nl, s.leaves, "the walk and the leaf chain disagree");
	size_t fill = 0;
	for (size_t i = 0; i < nl; i++) {
		struct leaf_view *v = &out[i];
		cr_assert_leq(v->plen, s.prefix_max);
		cr_assert_leq(v->plen, shared(v->first, v->first_len, v->last, v->last_len));
		v->pfill = fill_under(&s, v, v->plen);
		cr_assert_leq(v->pfill, s.cap);
		fill += v->pfill;
	}
	cr_assert_eq(fill, s.fill, "the leaves' stored charges add up to the tree's fill");
	return nl;
}

/* A reference entry: a key of up to IDX_MAX_KEY bytes and its value. */
struct rkey {
	uint32_t len;
	uintptr_t val;
	uint8_t k[IDX_MAX_KEY];
};

static int rkey_cmp(const void *a, const void *b)
{
	const struct rkey *x = *(const struct rkey *const *)a, *y = *(const struct rkey *const *)b;
	return bytes_cmp(x->k, x->len, y->k, y->len);
}

/* The first index of sorted ref[0..n) whose key is >= q's (n: none). */
static size_t rkey_lower(struct rkey *const *ref, size_t n, const struct rkey *q)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (rkey_cmp(&ref[mid], &q) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* t holds exactly ref[0..n) (sorted): count, check, both walks (key bytes
 * and values through the iterator), and a get of every key. */
static void expect_exactly(const struct oidx *t, struct rkey **ref, size_t n)
{
	cr_assert_eq(oidx_check(t), 0);
	cr_assert_eq(oidx_count(t), n);
	struct oidx_iter it;
	size_t i = 0;
	for (int on = oidx_seek_ge(t, NULL, 0, &it); on; on = oidx_next(&it), i++) {
		uint32_t kl;
		const uint8_t *k = oidx_iter_key(&it, &kl);
		cr_assert_lt(i, n);
		cr_assert_eq(kl, ref[i]->len, "entry %zu: length %u, want %u", i, kl, ref[i]->len);
		cr_assert(kl == 0 || memcmp(k, ref[i]->k, kl) == 0, "entry %zu: key bytes differ", i);
		cr_assert_eq(oidx_iter_val(&it), tag(ref[i]->val), "entry %zu: value", i);
	}
	cr_assert_eq(i, n);
	for (int on = oidx_seek_le(t, NULL, 0, &it); on; on = oidx_prev(&it)) {
		cr_assert_gt(i, 0);
		i--;
		uint32_t kl;
		const uint8_t *k = oidx_iter_key(&it, &kl);
		cr_assert(kl == ref[i]->len && (kl == 0 || memcmp(k, ref[i]->k, kl) == 0), "backward entry %zu", i);
	}
	cr_assert_eq(i, 0);
	for (i = 0; i < n; i++)
		cr_assert_eq(oidx_get(t, ref[i]->k, ref[i]->len), tag(ref[i]->val), "get of entry %zu", i);
}

WM_TEST(oidx, every_key_length_0_to_255)
{
	/* 8 keys of every length 0..255 (one of length 0: the empty key),
	 * inserted in random order, then half deleted, then the rest */
	enum { VARIANTS = 8, N = VARIANTS * (IDX_MAX_KEY + 1) };
	struct rkey *keys = calloc(N, sizeof(*keys));
	struct rkey **ref = calloc(N, sizeof(*ref));
	cr_assert(keys && ref);
	size_t n = 0;
	for (uint32_t len = 0; len <= IDX_MAX_KEY; len++)
		for (uint32_t v = 0; v < (len ? VARIANTS : 1); v++) {
			struct rkey *e = &keys[n++];
			e->len = len;
			e->val = n;
			for (uint32_t i = 0; i < len; i++)
				e->k[i] = (uint8_t)(i == 0 ? v * 32 : (len * 7 + i * 13) & 0xff);
		}
	rng_state = 2024;
	for (size_t i = n; i-- > 1;) { /* shuffle */
		size_t j = rng() % (i + 1);
		struct rkey tmp = keys[i];
		keys[i] = keys[j];
		keys[j] = tmp;
	}
	struct oidx t;
	oidx_init(&t);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(oidx_put(&t, keys[i].k, keys[i].len, tag(keys[i].val)), 0, "put %zu", i);
		cr_assert_eq(oidx_put(&t, keys[i].k, keys[i].len, tag(1)), 1);
		ref[i] = &keys[i];
		if (i % 256 == 0)
			cr_assert_eq(oidx_check(&t), 0, "after %zu puts", i + 1);
	}
	qsort(ref, n, sizeof(*ref), rkey_cmp);
	expect_exactly(&t, ref, n);
	/* each long key takes ~8 times a short one: leaves hold few of them */
	struct oidx_leaf_stats s;
	oidx_leaf_stats(&t, &s);
	size_t bytes = 0;
	for (size_t i = 0; i < n; i++)
		bytes += charge(&s, keys[i].len);
	cr_assert_eq(s.vfill, bytes, "leaf vfill counts every entry's whole-key charge once");
	cr_assert_leq(s.fill, bytes, "stored after their leaf's prefix, entries are charged no more");
	cr_assert_geq(s.leaves * s.cap, s.fill);
	/* delete every other key (in key order), then the rest */
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (i % 2) {
			cr_assert_eq(oidx_del(&t, ref[i]->k, ref[i]->len), tag(ref[i]->val));
			cr_assert_null(oidx_del(&t, ref[i]->k, ref[i]->len));
		} else {
			ref[m++] = ref[i];
		}
	}
	expect_exactly(&t, ref, m);
	for (size_t i = 0; i < m; i++) {
		cr_assert_eq(oidx_del(&t, ref[i]->k, ref[i]->len), tag(ref[i]->val));
		if (i % 128 == 0)
			cr_assert_eq(oidx_check(&t), 0);
	}
	cr_assert_null(t.root);
	cr_assert_eq(oidx_count(&t), 0);
	oidx_free(&t);
	free(ref);
	free(keys);
}

/* A maximum-length key: byte 0 is `first`, the rest `fill`. */
static const uint8_t *max_key(uint8_t first, uint8_t fill)
{
	static uint8_t k[IDX_MAX_KEY];
	memset(k, fill, sizeof(k));
	k[0] = first;
	return k;
}

WM_TEST(oidx, max_length_keys_at_the_byte_bound)
{
	struct oidx t;
	struct oidx_leaf_stats s;
	struct leaf_view v[8];
	oidx_init(&t);
	oidx_leaf_stats(&t, &s);
	size_t emax = charge(&s, IDX_MAX_KEY);
	uint32_t per = (uint32_t)(s.cap / emax); /* maximum-length keys a leaf holds */
	cr_assert_geq(per, 4, "a leaf must hold several maximum-length keys (holds %u)", per);

	/* ascending: `per` of them share one leaf */
	for (uint32_t i = 0; i < per; i++) {
		cr_assert_eq(oidx_put(&t, max_key((uint8_t)('A' + i), 'q'), IDX_MAX_KEY, tag(i + 1)), 0);
		oidx_leaf_stats(&t, &s);
		cr_assert_eq(s.leaves, 1, "%u maximum-length keys should fit one leaf", i + 1);
	}
	cr_assert_eq(s.fill, per * emax);
	/* fill the leaf to the last byte with one shorter key: still one leaf */
	size_t rem = s.cap - s.fill;
	cr_assert_lt(rem, emax);
	uint32_t edge_len = 0;
	if (rem >= s.entry_overhead + 1 && rem >= s.min_charge) {
		edge_len = (uint32_t)(rem - s.entry_overhead);
		cr_assert_eq(oidx_put(&t, max_key((uint8_t)('A' + per), 'e'), edge_len, tag(100)), 0);
		oidx_leaf_stats(&t, &s);
		cr_assert_eq(s.leaves, 1, "a key that fills the leaf to its last byte fits");
		cr_assert_eq(s.fill, s.cap);
	}
	cr_assert_eq(oidx_check(&t), 0);
	/* one byte-cheap key past the end does not fit: the append split starts
	 * a new leaf and leaves the full one as it was */
	cr_assert_eq(oidx_put(&t, "\xff", 1, tag(200)), 0);
	cr_assert_eq(leaf_views(&t, v, 8), 2);
	cr_assert_eq(v[0].n, per + (edge_len ? 1 : 0));
	cr_assert_eq(v[0].fill, edge_len ? s.cap : per * emax);
	cr_assert_eq(v[1].n, 1);
	cr_assert_eq(oidx_check(&t), 0);
	oidx_free(&t);

	/* the same full leaf, now overflowed in the middle: a split by bytes,
	 * each half within one maximum entry of the other */
	oidx_init(&t);
	for (uint32_t i = 0; i < per; i++)
		cr_assert_eq(oidx_put(&t, max_key((uint8_t)('A' + 2 * i), 'q'), IDX_MAX_KEY, tag(i + 1)), 0);
	oidx_leaf_stats(&t, &s);
	cr_assert_eq(s.leaves, 1);
	cr_assert_eq(oidx_put(&t, max_key((uint8_t)('A' + per), 'm'), IDX_MAX_KEY, tag(99)), 0);
	cr_assert_eq(leaf_views(&t, v, 8), 2);
	cr_assert_eq(v[0].n + v[1].n, per + 1);
	size_t d = v[0].fill > v[1].fill ? v[0].fill - v[1].fill : v[1].fill - v[0].fill;
	cr_assert_leq(d, emax, "split halves %zu and %zu bytes", v[0].fill, v[1].fill);
	cr_assert_eq(oidx_check(&t), 0);
	cr_assert_eq(oidx_get(&t, max_key((uint8_t)('A' + per), 'm'), IDX_MAX_KEY), tag(99));
	/* and back: deleting the left leaf's keys merges the two before the
	 * left one is empty (it falls under its minimum first) */
	uint32_t deleted = 0;
	cr_assert_eq(oidx_del(&t, max_key((uint8_t)('A' + per), 'm'), IDX_MAX_KEY), tag(99));
	cr_assert_eq(leaf_views(&t, v, 8), 2);
	cr_assert_gt(v[0].n, 1);
	for (uint32_t i = 0; i < per; i++) {
		oidx_leaf_stats(&t, &s);
		if (s.leaves == 1)
			break;
		cr_assert_eq(oidx_del(&t, max_key((uint8_t)('A' + 2 * i), 'q'), IDX_MAX_KEY), tag(i + 1));
		deleted++;
		cr_assert_eq(oidx_check(&t), 0);
	}
	oidx_leaf_stats(&t, &s);
	cr_assert_eq(s.leaves, 1, "two leaves that fit in one are merged");
	cr_assert_lt(deleted, v[0].n, "merged only once the left leaf was empty (%u deletes)", deleted);
	cr_assert_eq(oidx_count(&t), per - deleted);
	oidx_free(&t);
}

WM_TEST(oidx, leaf_split_cuts_by_bytes_not_count)
{
	/* one leaf holding a few maximum-length keys ("a"...) then many 4-byte
	 * keys ("b000"...): overflowing it in the middle must cut where the
	 * BYTES halve, which puts few entries on the left and many on the
	 * right -- a cut by count would put half the entries each side and
	 * one side would hold nearly all the bytes */
	struct oidx t;
	struct oidx_leaf_stats s;
	struct leaf_view v[8];
	oidx_init(&t);
	oidx_leaf_stats(&t, &s);
	size_t emax = charge(&s, IDX_MAX_KEY), eshort = charge(&s, 4);
	uint32_t nlong = (uint32_t)(s.cap / emax) * 3 / 4;
	for (uint32_t i = 0; i < nlong; i++)
		cr_assert_eq(oidx_put(&t, max_key('a', (uint8_t)('A' + 2 * i)), IDX_MAX_KEY, tag(i + 1)), 0);
	uint32_t nshort = 0;
	for (size_t fill = nlong * emax; fill + eshort <= s.cap; fill += eshort, nshort++) {
		char k[8];
		snprintf(k, sizeof(k), "b%03u", nshort);
		cr_assert_eq(oidx_put(&t, k, 4, tag(1000 + nshort)), 0);
	}
	oidx_leaf_stats(&t, &s);
	cr_assert_eq(s.leaves, 1, "the leaf should hold %u long and %u short keys", nlong, nshort);
	cr_assert_gt(nshort, 2 * nlong);
	/* a long key among the long ones: no room, the leaf splits */
	cr_assert_eq(oidx_put(&t, max_key('a', (uint8_t)('A' + 1)), IDX_MAX_KEY, tag(7)), 0);
	cr_assert_eq(leaf_views(&t, v, 8), 2);
	size_t d = v[0].fill > v[1].fill ? v[0].fill - v[1].fill : v[1].fill - v[0].fill;
	cr_assert_leq(d, emax, "split halves %zu and %zu bytes", v[0].fill, v[1].fill);
	cr_assert_lt(v[0].n, nlong + 1, "the left half holds long keys only (%u entries)", v[0].n);
	cr_assert_gt(v[1].n, nshort, "the right half holds every short key (%u entries)", v[1].n);
	cr_assert_eq(oidx_check(&t), 0);
	oidx_free(&t);
}

/* Leaves v[0..nl) of an append load: each but the last is full, that is,
 * the next leaf's first key would not have fit -- not with every key
 * stored after the prefix the leaf and that key share. */
static void expect_full_leaves(const struct oidx_leaf_stats *s, const struct leaf_view *v, size_t nl)
{
	for (size_t i = 0; i + 1 < nl; i++) {
		uint32_t np = shared(v[i].first, v[i].plen, v[i + 1].first, v[i + 1].first_len);
		size_t fill = fill_under(s, &v[i], np);
		cr_assert_gt(fill + charge(s, v[i + 1].first_len - np), s->cap,
			     "leaf %zu (%zu bytes under a %u-byte prefix) had room for the next key (%u bytes)", i,
			     fill, np, v[i + 1].first_len);
	}
}

WM_TEST(oidx, append_loads_fill_leaves_to_the_byte)
{
	/* 100k 26-byte ids in ascending order (a snapshot load, time-ordered
	 * ids): every leaf but the last holds as many as fit */
	enum { N = 100000, IDLEN = 26 };
	struct leaf_view *v = calloc(N / 32, sizeof(*v));
	cr_assert(v);
	struct oidx t;
	struct oidx_leaf_stats s;
	oidx_init(&t);
	char k[IDLEN + 1];
	for (uint32_t i = 0; i < N; i++) {
		snprintf(k, sizeof(k), "ord_01JQ%08uZZZZZZZZZZ", i);
		cr_assert_eq(oidx_put(&t, k, IDLEN, tag(i + 1)), 0);
	}
	cr_assert_eq(oidx_check(&t), 0);
	oidx_leaf_stats(&t, &s);
	size_t nl = leaf_views(&t, v, N / 32);
	expect_full_leaves(&s, v, nl);
	/* each leaf keeps the bytes its ids share once: "ord_01JQ" and the
	 * counter's leading digits, at least 11 bytes (an appended leaf starts
	 * with what its first id shares with the one before it) */
	for (size_t i = 0; i + 1 < nl; i++)
		cr_assert_geq(v[i].plen, 11, "leaf %zu keeps a %u-byte prefix", i, v[i].plen);
	cr_assert_lt(s.fill, s.vfill, "stored after their prefixes the ids take fewer bytes");
	/* the memory figure: leaves only, ~25 bytes an entry (~38 with every
	 * id whole in the leaf, ~74 with a malloc'd blob per key) */
	double per_entry = (double)(s.leaves * s.node_bytes) / N;
	cr_assert_lt(per_entry, 27.0, "%.1f leaf bytes per entry", per_entry);
	oidx_free(&t);

	/* keys of mixed lengths (9..72 bytes) appended: each leaf is full, that
	 * is, the first key of the next leaf would not have fit */
	oidx_init(&t);
	rng_state = 5;
	uint8_t kb[80];
	for (uint32_t i = 0; i < N / 4; i++) {
		uint32_t len = 9 + (uint32_t)(rng() % 64);
		snprintf((char *)kb, sizeof(kb), "%08u", i);
		memset(kb + 8, 0x80 + (int)(i % 64), len - 8);
		cr_assert_eq(oidx_put(&t, kb, len, tag(i + 1)), 0);
	}
	cr_assert_eq(oidx_check(&t), 0);
	oidx_leaf_stats(&t, &s);
	nl = leaf_views(&t, v, N / 32);
	expect_full_leaves(&s, v, nl);
	oidx_free(&t);
	free(v);
}

/* Where q is in sorted ref[0..n): the index rkey_lower gives, *found if
 * the key there is q's. */
static size_t rkey_find(struct rkey *const *ref, size_t n, const struct rkey *q, bool *found)
{
	size_t lo = rkey_lower(ref, n, q);
	const struct rkey *qp = q;
	*found = lo < n && rkey_cmp(&ref[lo], &qp) == 0;
	return lo;
}

/* Add q (a copy in pool[*used]) at ref[lo]; remove ref[lo]. */
static void ref_insert(struct rkey *pool, size_t *used, struct rkey **ref, size_t *n, size_t lo,
		       const struct rkey *q)
{
	pool[*used] = *q;
	memmove(&ref[lo + 1], &ref[lo], (*n - lo) * sizeof(*ref));
	ref[lo] = &pool[(*used)++];
	(*n)++;
}

static void ref_remove(struct rkey **ref, size_t *n, size_t lo)
{
	memmove(&ref[lo], &ref[lo + 1], (*n - lo - 1) * sizeof(*ref));
	(*n)--;
}

WM_TEST(oidx, random_long_keys_against_a_sorted_array)
{
	/* batches of random puts, sets and deletes of keys 0..255 bytes long
	 * (mostly long, over a 3-letter alphabet so they share prefixes),
	 * checked against a sorted array after each batch */
	enum { BATCHES = 60, OPS = 250, CAP = BATCHES * OPS };
	struct rkey *pool = calloc(CAP, sizeof(*pool));
	struct rkey **ref = calloc(CAP, sizeof(*ref));
	cr_assert(pool && ref);
	size_t n = 0, used = 0;
	struct oidx t;
	oidx_init(&t);
	rng_state = 31337;
	for (int b = 0; b < BATCHES; b++) {
		unsigned ins_pct = b < BATCHES / 2 ? 70 : 35;
		for (int op = 0; op < OPS; op++) {
			struct rkey q;
			uint64_t r = rng();
			q.len = r % 4 == 0 ? (uint32_t)(rng() % 8) : (uint32_t)(rng() % (IDX_MAX_KEY + 1));
			for (uint32_t i = 0; i < q.len; i++)
				q.k[i] = (uint8_t)"a\0\xff"[rng() % 3];
			if (n > 0 && (r >> 8) % 100 >= ins_pct && (r >> 16) % 4 != 0)
				q = *ref[rng() % n]; /* delete an existing key */
			/* where q is in the reference */
			bool found;
			size_t lo = rkey_find(ref, n, &q, &found);
			if ((r >> 8) % 100 < ins_pct) {
				q.val = (uintptr_t)(b * OPS + op + 1);
				if ((r >> 24) % 3 == 0) {
					cr_assert_eq(oidx_set(&t, q.k, q.len, tag(q.val)), 0);
					if (found)
						ref[lo]->val = q.val;
				} else {
					cr_assert_eq(oidx_put(&t, q.k, q.len, tag(q.val)), found ? 1 : 0);
				}
				if (!found)
					ref_insert(pool, &used, ref, &n, lo, &q);
			} else {
				void *got = oidx_del(&t, q.k, q.len);
				if (found) {
					cr_assert_eq(got, tag(ref[lo]->val), "batch %d op %d", b, op);
					ref_remove(ref, &n, lo);
				} else {
					cr_assert_null(got);
				}
			}
		}
		expect_exactly(&t, ref, n);
		/* seeks from random probes land where the array says */
		for (int s = 0; s < 20; s++) {
			struct rkey q;
			q.len = (uint32_t)(rng() % (IDX_MAX_KEY + 1));
			for (uint32_t i = 0; i < q.len; i++)
				q.k[i] = (uint8_t)"a\0\xff"[rng() % 3];
			size_t lo = rkey_lower(ref, n, &q);
			struct oidx_iter it;
			cr_assert_eq(oidx_seek_ge(&t, q.k, q.len, &it), lo < n);
			if (lo < n)
				cr_assert_eq(oidx_iter_val(&it), tag(ref[lo]->val));
		}
	}
	struct oidx_leaf_stats s;
	oidx_leaf_stats(&t, &s);
	cr_assert_gt(s.leaves, 20, "the test should grow a tree of many leaves");
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(oidx_del(&t, ref[i]->k, ref[i]->len), tag(ref[i]->val));
	cr_assert_null(t.root);
	cr_assert_eq(oidx_check(&t), 0);
	oidx_free(&t);
	free(ref);
	free(pool);
}

WM_TEST(oidx, iterator_key_bytes_after_splits)
{
	/* keys whose bytes encode their own number, inserted in random order
	 * (leaf splits, compactions of the heap after deletes): at every stage
	 * a seek to each key reads back exactly its bytes and length */
	enum { N = 3000 };
	static uint8_t keys[N][64];
	static uint32_t lens[N];
	rng_state = 77;
	struct oidx t;
	oidx_init(&t);
	uint32_t order[N];
	for (uint32_t i = 0; i < N; i++) {
		order[i] = i;
		lens[i] = 6 + (uint32_t)(rng() % 58);
		snprintf((char *)keys[i], 7, "%06u", i);
		for (uint32_t j = 6; j < lens[i]; j++)
			keys[i][j] = (uint8_t)(i * 31 + j);
	}
	for (uint32_t i = N; i-- > 1;) {
		uint32_t j = (uint32_t)(rng() % (i + 1)), x = order[i];
		order[i] = order[j];
		order[j] = x;
	}
	for (uint32_t s = 0; s < N; s++) {
		uint32_t i = order[s];
		cr_assert_eq(oidx_put(&t, keys[i], lens[i], tag(i + 1)), 0);
		if (s % 500 == 499) {
			for (uint32_t c = 0; c <= s; c++) {
				uint32_t x = order[c];
				struct oidx_iter it;
				cr_assert_eq(oidx_seek_ge(&t, keys[x], lens[x], &it), 1);
				uint32_t kl;
				const uint8_t *k = oidx_iter_key(&it, &kl);
				cr_assert_eq(kl, lens[x]);
				cr_assert_eq(memcmp(k, keys[x], kl), 0, "key %u read back wrong", x);
				cr_assert_eq(oidx_iter_val(&it), tag(x + 1));
			}
		}
	}
	/* delete two thirds (holes in the heaps), put half of them back */
	for (uint32_t i = 0; i < N; i++)
		if (i % 3)
			cr_assert_eq(oidx_del(&t, keys[i], lens[i]), tag(i + 1));
	for (uint32_t i = 0; i < N; i++)
		if (i % 3 == 1)
			cr_assert_eq(oidx_put(&t, keys[i], lens[i], tag(i + 1)), 0);
	cr_assert_eq(oidx_check(&t), 0);
	/* a full walk: every key present, in number order, with its bytes */
	struct oidx_iter it;
	uint32_t want = 0, seen = 0;
	for (int on = oidx_seek_ge(&t, NULL, 0, &it); on; on = oidx_next(&it), seen++) {
		while (want % 3 == 2)
			want++;
		uint32_t kl;
		const uint8_t *k = oidx_iter_key(&it, &kl);
		cr_assert_eq(kl, lens[want], "entry %u", seen);
		cr_assert_eq(memcmp(k, keys[want], kl), 0, "entry %u (key %u)", seen, want);
		want++;
	}
	cr_assert_eq(seen, oidx_count(&t));
	oidx_free(&t);
}

/* ---- leaf prefixes --------------------------------------------------------
 * A leaf keeps the bytes its keys share once (index.c's top): these tests
 * drive the prefix's edges -- its bound, a key that parts from it below
 * or above every key of the leaf, and leaves of different prefixes merged
 * and evened out. */

/* The index's order of two byte strings: memcmp's, a proper prefix first. */
static int byte_order(const uint8_t *a, uint32_t al, const uint8_t *b, uint32_t bl)
{
	int c = al && bl ? memcmp(a, b, al < bl ? al : bl) : 0;
	c = c ? c : (al > bl) - (al < bl);
	return (c > 0) - (c < 0);
}

/* oidx_iter_cmp's sign at `it` against q[0, l), as the copied key k orders. */
static void expect_cmp(const struct oidx_iter *it, const uint8_t *k, uint32_t kl, const uint8_t *q, uint32_t l, uint32_t i)
{
	int c = oidx_iter_cmp(it, q, l);
	cr_assert_eq((c > 0) - (c < 0), byte_order(k, kl, q, l), "key %u against %u bytes: %d", i, l, c);
}

/* t holds exactly want[0..n) (whole bytes, values i + 1): expect_exactly,
 * then oidx_iter_has_prefix and oidx_iter_cmp agreeing with the copied key
 * at every entry and every length up to one past it (the key's own bytes,
 * one of them changed up and down, one byte more). */
static void expect_keys(struct oidx *t, uint8_t (*want)[IDX_MAX_KEY], const uint32_t *lens, uint32_t n)
{
	struct rkey *keys = calloc(n ? n : 1, sizeof(*keys));
	struct rkey **ref = calloc(n ? n : 1, sizeof(*ref));
	cr_assert(keys && ref);
	for (uint32_t i = 0; i < n; i++) {
		keys[i].len = lens[i];
		keys[i].val = i + 1;
		memcpy(keys[i].k, want[i], lens[i]);
		ref[i] = &keys[i];
	}
	expect_exactly(t, ref, n);
	free(ref);
	free(keys);
	struct oidx_iter it;
	uint32_t i = 0;
	for (int on = oidx_seek_ge(t, NULL, 0, &it); on; on = oidx_next(&it), i++) {
		uint32_t kl;
		const uint8_t *k = oidx_iter_key(&it, &kl);
		for (uint32_t l = 0; l <= kl + 1 && l <= IDX_MAX_KEY; l++) {
			uint8_t q[IDX_MAX_KEY];
			memcpy(q, k, l <= kl ? l : kl);
			cr_assert(l > kl || oidx_iter_has_prefix(&it, q, l), "key %u: its own %u bytes", i, l);
			if (l <= kl)
				expect_cmp(&it, k, kl, q, l, i);
			if (l > 0 && l <= kl) {
				q[l - 1] ^= 0x01; /* one byte off: not a prefix */
				cr_assert(!oidx_iter_has_prefix(&it, q, l), "key %u: %u bytes, one changed", i, l);
				expect_cmp(&it, k, kl, q, l, i);
				q[l - 1] = (uint8_t)(k[l - 1] + 1); /* above, then below (bytes wrap: both ways) */
				expect_cmp(&it, k, kl, q, l, i);
				q[l - 1] = (uint8_t)(k[l - 1] - 1);
				expect_cmp(&it, k, kl, q, l, i);
			}
		}
		if (kl < IDX_MAX_KEY) { /* longer than the key: never its prefix */
			uint8_t longer[IDX_MAX_KEY];
			memcpy(longer, k, kl);
			longer[kl] = 0;
			cr_assert(!oidx_iter_has_prefix(&it, longer, kl + 1));
			expect_cmp(&it, k, kl, longer, kl + 1, i);
		}
	}
	cr_assert_eq(i, n);
}

WM_TEST(oidx, a_leaf_prefix_is_bounded_and_recut_at_its_edges)
{
	enum { N = 15, SHARED = 100 };
	static uint8_t keys[N + 2][IDX_MAX_KEY];
	uint32_t lens[N + 2];
	struct oidx t;
	struct oidx_leaf_stats s;
	oidx_init(&t);
	/* keys 1..N: SHARED bytes of 'p', then a 3-digit number: one leaf
	 * whose prefix stops at the bound */
	for (uint32_t i = 1; i <= N; i++) {
		memset(keys[i], 'p', SHARED);
		lens[i] = SHARED + (uint32_t)snprintf((char *)keys[i] + SHARED, 8, "%03u", 100 + i);
	}
	for (uint32_t i = N; i >= 1; i--) /* descending: every insert at the front */
		cr_assert_eq(oidx_put(&t, keys[i], lens[i], tag(i + 1)), 0);
	oidx_leaf_stats(&t, &s);
	cr_assert_eq(s.leaves, 1);
	cr_assert_eq(s.prefix_bytes, s.prefix_max, "a prefix is kept up to its bound (%zu bytes)", s.prefix_bytes);
	cr_assert_lt(s.fill, s.vfill);
	/* key 0 parts from the prefix below every key (and is shorter than
	 * it): the leaf is re-cut under the 30 bytes they share */
	memset(keys[0], 'p', 30);
	keys[0][30] = 'a';
	lens[0] = 31;
	cr_assert_eq(oidx_put(&t, keys[0], lens[0], tag(1)), 0);
	oidx_leaf_stats(&t, &s);
	cr_assert_eq(s.leaves, 1);
	cr_assert_eq(s.prefix_bytes, 30);
	expect_keys(&t, keys, lens, N + 1);
	/* key N + 1 shares nothing, above every key: no prefix at all, and
	 * the fill is every key counted whole */
	keys[N + 1][0] = 'z';
	lens[N + 1] = 1;
	cr_assert_eq(oidx_put(&t, keys[N + 1], lens[N + 1], tag(N + 2)), 0);
	oidx_leaf_stats(&t, &s);
	cr_assert_eq(s.leaves, 1);
	cr_assert_eq(s.prefix_bytes, 0);
	cr_assert_eq(s.fill, s.vfill);
	expect_keys(&t, keys, lens, N + 2);
	/* the empty key, and a proper prefix of the others: both below */
	cr_assert_eq(oidx_get(&t, "", 0), NULL);
	cr_assert_eq(oidx_get(&t, keys[1], SHARED), NULL);
	cr_assert_eq(oidx_del(&t, keys[1], SHARED), NULL);
	oidx_free(&t);
}

WM_TEST(oidx, leaves_of_different_prefixes_merge_and_even_out)
{
	/* runs of keys under two long prefixes ("a" x 50, "b" x 50), a leaf
	 * apart holding many of them each; deleting one run's keys drains the
	 * leaves on the border, which are merged or evened out with a
	 * neighbour whose keys share nothing with theirs: stored whole, they
	 * take far more room than they did under their prefix.  After every
	 * delete the tree checks out (each leaf within its bounds, stored and
	 * whole) and holds exactly the keys left. */
	enum { PER = 600, N = 2 * PER };
	static uint8_t keys[N][IDX_MAX_KEY];
	static uint8_t want[N][IDX_MAX_KEY];
	uint32_t lens[N], wlens[N];
	struct oidx t;
	struct oidx_leaf_stats s;
	oidx_init(&t);
	for (uint32_t i = 0; i < N; i++) {
		memset(keys[i], i < PER ? 'a' : 'b', 50);
		lens[i] = 50 + (uint32_t)snprintf((char *)keys[i] + 50, 8, "%04u", i % PER);
		cr_assert_eq(oidx_put(&t, keys[i], lens[i], tag(i + 1)), 0);
	}
	cr_assert_eq(oidx_check(&t), 0);
	oidx_leaf_stats(&t, &s);
	size_t leaves_before = s.leaves;
	cr_assert_lt(s.fill * 2, s.vfill, "keys sharing 50 of 54 bytes take under half the room");
	/* delete the "b" run from its start (the border leaves first), then the
	 * "a" run from its end, checking all the way */
	uint32_t order[N], no = 0;
	for (uint32_t i = PER; i < N; i++)
		order[no++] = i;
	for (uint32_t i = PER; i-- > 0;)
		order[no++] = i;
	bool gone[N] = {false};
	for (uint32_t d = 0; d < N; d++) {
		uint32_t x = order[d];
		cr_assert_eq(oidx_del(&t, keys[x], lens[x]), tag(x + 1), "delete %u", d);
		gone[x] = true;
		if (d % 37 == 0 || d + 1 == N) {
			uint32_t n = 0;
			for (uint32_t i = 0; i < N; i++)
				if (!gone[i]) {
					memcpy(want[n], keys[i], lens[i]);
					wlens[n] = lens[i];
					n++;
				}
			/* expect_keys wants values i + 1 in order: re-tag a copy */
			struct oidx c;
			oidx_init(&c);
			for (uint32_t i = 0; i < n; i++)
				cr_assert_eq(oidx_put(&c, want[i], wlens[i], tag(i + 1)), 0);
			expect_keys(&c, want, wlens, n);
			oidx_free(&c);
			cr_assert_eq(oidx_check(&t), 0, "after delete %u", d);
			cr_assert_eq(oidx_count(&t), n);
		}
	}
	cr_assert_null(t.root);
	cr_assert_gt(leaves_before, 2);
	oidx_free(&t);
}

WM_TEST(oidx, border_leaves_of_two_prefixes_even_out_within_bounds)
{
	/* the leaf of the first "b" keys, its left neighbour full of "a" keys:
	 * deleting "b" keys one by one takes that leaf under its minimum, and
	 * it takes "a" keys from the left -- stored whole (the two share
	 * nothing), each costs 13 times what it did.  Every step is checked. */
	enum { PER = 400 };
	static uint8_t k[IDX_MAX_KEY];
	struct oidx t;
	oidx_init(&t);
	for (uint32_t i = 0; i < 2 * PER; i++) {
		memset(k, i < PER ? 'a' : 'b', 200);
		uint32_t len = 200 + (uint32_t)snprintf((char *)k + 200, 8, "%04u", i % PER);
		cr_assert_eq(oidx_put(&t, k, len, tag(i + 1)), 0);
	}
	cr_assert_eq(oidx_check(&t), 0);
	for (uint32_t i = PER; i < 2 * PER; i++) {
		memset(k, 'b', 200);
		uint32_t len = 200 + (uint32_t)snprintf((char *)k + 200, 8, "%04u", i % PER);
		cr_assert_eq(oidx_del(&t, k, len), tag(i + 1));
		cr_assert_eq(oidx_check(&t), 0, "after deleting b %u", i - PER);
		struct oidx_iter it;
		cr_assert_eq(oidx_seek_ge(&t, "b", 1, &it), i + 1 < 2 * PER);
		cr_assert_eq(oidx_count(&t), 2 * PER - (i - PER) - 1);
	}
	for (uint32_t i = 0; i < PER; i++) {
		memset(k, 'a', 200);
		uint32_t len = 200 + (uint32_t)snprintf((char *)k + 200, 8, "%04u", i);
		cr_assert_eq(oidx_get(&t, k, len), tag(i + 1), "a %u", i);
	}
	oidx_free(&t);
}

/* A key of a long-prefix family: 80 bytes of 'A' + f, then 0..5 bytes
 * over "0189". */
static uint32_t long_family_key(uint8_t *k)
{
	uint32_t f = (uint32_t)(rng() % 6), extra = (uint32_t)(rng() % 6);
	memset(k, 'A' + (int)f, 80);
	for (uint32_t i = 0; i < extra; i++)
		k[80 + i] = (uint8_t)"0189"[rng() % 4];
	return 80 + extra;
}

/* A key between the families: the first 0..79 bytes of one, then a byte
 * above ('z') or below ('0') its next one -- above or below every key of
 * the family, sharing those bytes with it and nothing more. */
static uint32_t between_key(uint8_t *k)
{
	uint32_t f = (uint32_t)(rng() % 6), len = (uint32_t)(rng() % 80);
	memset(k, 'A' + (int)f, len);
	k[len] = rng() % 2 ? 'z' : '0';
	return len + 1;
}

WM_TEST(oidx, long_prefix_families_and_keys_between_them)
{
	/* families of keys sharing 80 bytes (past the prefix a leaf keeps),
	 * each run ascending (full leaves); then keys between the families,
	 * each landing past the end or before the start of a leaf whose
	 * prefix it shares only a little of: the leaf's keys are re-cut under
	 * the shorter prefix, where many more bytes are theirs, in the leaf
	 * or across a split; then more family keys in random order with
	 * deletes among them; then everything deleted in random order (merges
	 * and redistributions of leaves of different prefixes).  Checked all
	 * along, and against a sorted copy. */
	enum { ASCENDING = 400, OPS = 6000, BETWEEN = 600, ALL = 6 * ASCENDING + OPS + BETWEEN };
	static struct rkey keys[ALL];
	static struct rkey *ref[ALL];
	static uint32_t lv[ALL]; /* the live keys' indexes */
	rng_state = 4242;
	struct oidx t;
	oidx_init(&t);
	uint32_t nk = 0, nl = 0;
	/* first each family's keys in ascending order, the families in turn
	 * (each run grows in the middle of the tree: full leaves) */
	for (uint32_t i = 0; i < ASCENDING; i++)
		for (uint32_t f = 0; f < 6; f++) {
			struct rkey *e = &keys[nk];
			memset(e->k, 'A' + (int)f, 80);
			for (uint32_t d = 0; d < 5; d++)
				e->k[80 + d] = (uint8_t)"0189"[(i >> (2 * (4 - d))) & 3];
			e->len = 85;
			e->val = nk + 1;
			cr_assert_eq(oidx_put(&t, e->k, e->len, tag(e->val)), 0);
			lv[nl++] = nk++;
		}
	cr_assert_eq(oidx_check(&t), 0);
	for (uint32_t op = 0; op < OPS + BETWEEN; op++) {
		bool between = op < BETWEEN; /* right away: at the edges of full leaves */
		if (!between && nl > 0 && rng() % 3 == 0) { /* delete a live key */
			uint32_t j = (uint32_t)(rng() % nl), i = lv[j];
			cr_assert_eq(oidx_del(&t, keys[i].k, keys[i].len), tag(keys[i].val), "delete at op %u", op);
			cr_assert_null(oidx_get(&t, keys[i].k, keys[i].len));
			lv[j] = lv[--nl];
		} else {
			struct rkey *e = &keys[nk];
			e->len = between ? between_key(e->k) : long_family_key(e->k);
			e->val = nk + 1;
			int rc = oidx_put(&t, e->k, e->len, tag(e->val));
			cr_assert(rc == 0 || rc == 1, "put at op %u", op);
			if (rc == 0) { /* new (a present key is left as it was) */
				lv[nl++] = nk++;
			}
		}
		cr_assert_eq(oidx_count(&t), nl);
		if (between ? op % 10 == 9 : op % 1000 == 999)
			cr_assert_eq(oidx_check(&t), 0, "after op %u", op);
	}
	for (uint32_t i = 0; i < nl; i++)
		ref[i] = &keys[lv[i]];
	qsort(ref, nl, sizeof(*ref), rkey_cmp);
	expect_exactly(&t, ref, nl);
	struct oidx_leaf_stats s;
	oidx_leaf_stats(&t, &s);
	cr_assert_gt(s.prefix_bytes, 0);
	cr_assert_lt(s.fill, s.vfill);
	while (nl > 0) {
		uint32_t j = (uint32_t)(rng() % nl), i = lv[j];
		cr_assert_eq(oidx_del(&t, keys[i].k, keys[i].len), tag(keys[i].val));
		lv[j] = lv[--nl];
		if (nl % 250 == 0)
			cr_assert_eq(oidx_check(&t), 0, "%u keys left", nl);
	}
	cr_assert_null(t.root);
	oidx_free(&t);
}

WM_TEST(oidx, ascending_ids_under_many_prefixes_fill_leaves)
{
	/* a secondary index's usual load: 200 prefixes (owners), rows created
	 * over time, so each prefix's keys arrive in ascending order at the end
	 * of its run, in the middle of the tree.  A cut at the midpoint would
	 * leave every leaf behind half full; the leaf a prefix's keys run past
	 * keeps all but the right one's minimum */
	enum { PREFIXES = 200, N = 60000 };
	struct oidx t;
	struct oidx_leaf_stats s;
	oidx_init(&t);
	rng_state = 11;
	uint8_t k[64];
	for (uint32_t i = 0; i < N; i++) {
		uint32_t owner = (uint32_t)(rng() % PREFIXES);
		int len = snprintf((char *)k, sizeof(k), "own_%022u", owner * 7919u);
		k[len++] = 0;
		len += snprintf((char *)k + len, sizeof(k) - (size_t)len, "lvl_01JQ%018u", i);
		cr_assert_eq(oidx_put(&t, k, (uint32_t)len, tag(i + 1)), 0);
	}
	cr_assert_eq(oidx_check(&t), 0);
	oidx_leaf_stats(&t, &s);
	double fill = (double)s.fill / (double)(s.leaves * s.cap);
	cr_assert_gt(fill, 0.70, "leaves %.0f%% full on average", fill * 100);
	oidx_free(&t);
}

/* A key of the shared-prefix family below: P bytes of 'p', then a suffix
 * over {0x00, 0x01, 0xff} of 0..12 bytes; one in 8 stops inside the prefix
 * or leaves it with a byte just below or above 'p'. */
static void prefix_family_key(struct rkey *q)
{
	enum { P = 40 };
	uint64_t r = rng();
	uint32_t cut = P;
	if (r % 8 == 0)
		cut = (uint32_t)(rng() % P);
	memset(q->k, 'p', cut);
	q->len = cut;
	if (cut < P && r % 16 == 0)
		q->k[q->len++] = (uint8_t)(rng() % 2 ? 'o' : 'q');
	uint32_t sl = (uint32_t)(rng() % 13);
	for (uint32_t i = 0; i < sl; i++)
		q->k[q->len++] = (uint8_t)"\0\1\xff"[rng() % 3];
}

/* Inner nodes compare an 8-byte head after the prefix their separators
 * share and read a separator only on a tie.  Keys with a 40-byte shared
 * prefix, suffixes of zero bytes (a zero of padding ties with a real one),
 * keys that end inside the prefix or leave it: a three-level tree grown,
 * churned and shrunk, every get and seek checked against a sorted array
 * (and oidx_check verifies every node's heads). */
WM_TEST(oidx, inner_heads_under_a_long_shared_prefix)
{
	enum { OPS = 60000, CAP = OPS };
	struct rkey *pool = calloc(CAP, sizeof(*pool));
	struct rkey **ref = calloc(CAP, sizeof(*ref));
	cr_assert(pool && ref);
	size_t n = 0, used = 0;
	struct oidx t;
	oidx_init(&t);
	rng_state = 4242;
	uint32_t max_height = 0;
	for (int op = 0; op < OPS; op++) {
		unsigned ins_pct = op < OPS / 2 ? 85 : op < OPS * 3 / 4 ? 50 : 20;
		struct rkey q;
		prefix_family_key(&q);
		int del = (unsigned)(rng() % 100) >= ins_pct;
		if (del && n > 0 && rng() % 4 != 0)
			q = *ref[rng() % n];
		bool found;
		size_t lo = rkey_find(ref, n, &q, &found);
		if (!del) {
			q.val = (uintptr_t)(op + 1);
			cr_assert_eq(oidx_put(&t, q.k, q.len, tag(q.val)), found ? 1 : 0);
			if (!found)
				ref_insert(pool, &used, ref, &n, lo, &q);
		} else {
			void *got = oidx_del(&t, q.k, q.len);
			cr_assert_eq(got, found ? tag(ref[lo]->val) : NULL, "op %d", op);
			if (found)
				ref_remove(ref, &n, lo);
		}
		if (t.height > max_height)
			max_height = t.height;
		/* a probe of the same family: get and seek land where the array says */
		struct rkey p;
		prefix_family_key(&p);
		bool pf;
		size_t pl = rkey_find(ref, n, &p, &pf);
		cr_assert_eq(oidx_get(&t, p.k, p.len), pf ? tag(ref[pl]->val) : NULL, "op %d", op);
		struct oidx_iter it;
		cr_assert_eq(oidx_seek_ge(&t, p.k, p.len, &it), pl < n, "op %d", op);
		if (pl < n)
			cr_assert_eq(oidx_iter_val(&it), tag(ref[pl]->val), "op %d", op);
		if (op % 5000 == 4999)
			expect_exactly(&t, ref, n);
	}
	cr_assert_geq(max_height, 3, "inner nodes below the root: got height %u", max_height);
	expect_exactly(&t, ref, n);
	oidx_free(&t);
	free(ref);
	free(pool);
}

/* A key's length rides in its slot's hash word (index.c): keys that are
 * prefixes of each other, at every length from 0 to IDX_MAX_KEY, are all
 * distinct entries, found, iterated with their own lengths and deleted
 * one by one. */
WM_TEST(hidx, every_key_length_is_its_own_key)
{
	static char k[IDX_MAX_KEY];
	memset(k, 'p', sizeof(k));
	struct hidx h;
	hidx_init(&h);
	for (uint32_t n = 0; n <= IDX_MAX_KEY; n++)
		cr_assert_eq(hidx_put(&h, k, n, tag(n + 1)), 0, "length %u", n);
	cr_assert_eq(hidx_count(&h), IDX_MAX_KEY + 1);
	for (uint32_t n = 0; n <= IDX_MAX_KEY; n++)
		cr_assert_eq(hidx_get(&h, k, n), tag(n + 1), "length %u", n);
	static unsigned char seen[IDX_MAX_KEY + 1];
	size_t pos = 0;
	const char *key;
	uint32_t kl;
	for (void *v; (v = hidx_next(&h, &pos, &key, &kl)) != NULL;) {
		uintptr_t n = (uintptr_t)v - 1;
		cr_assert_eq(kl, n, "the entry of length %zu walks with length %u", (size_t)n, kl);
		cr_assert_eq(key, k);
		cr_assert_eq(seen[n]++, 0);
	}
	for (uint32_t n = 0; n <= IDX_MAX_KEY; n += 2)
		cr_assert_eq(hidx_del(&h, k, n), tag(n + 1));
	for (uint32_t n = 0; n <= IDX_MAX_KEY; n++)
		cr_assert_eq(hidx_get(&h, k, n), n % 2 ? tag(n + 1) : NULL, "length %u", n);
	hidx_free(&h);
}

/* ---- tail-keyed trees (oidx_init_tail) ----------------------------------
 * Every key ends with its value's id, which the leaves leave out.  The
 * model test below runs the randomized operations of model_randomized on
 * such a tree: heads from the 4-letter alphabet (0x00 and 0xff among
 * them, lengths 0..6), ids of 1..4 bytes from another 4 (no NUL), so the
 * same bytes arise from different cuts, heads are prefixes of heads and
 * ids of ids; plus ascending appended keys. */

struct tval {
	const char *id; /* what the tree reads: the value's first member */
	char buf[8];
};

/* A value whose id is t[0, tl). */
static struct tval *tval_new(const uint8_t *t, uint32_t tl)
{
	struct tval *v = malloc(sizeof(*v));
	cr_assert_not_null(v);
	cr_assert_lt(tl, sizeof(v->buf));
	memcpy(v->buf, t, tl);
	v->buf[tl] = 0;
	v->id = v->buf;
	return v;
}

static const uint8_t tail_alphabet[4] = { 0x01, 'a', 'b', 0xff };

/* A random head + id into k (the id also into *tail); the key's length,
 * *hl the head's. */
static uint32_t random_tail_key(uint8_t *k, uint32_t *hl, const uint8_t **tail)
{
	uint32_t h = (uint32_t)(rng() % 7), tl = 1 + (uint32_t)(rng() % 4);
	for (uint32_t i = 0; i < h; i++)
		k[i] = alphabet[rng() % 4];
	for (uint32_t i = 0; i < tl; i++)
		k[h + i] = tail_alphabet[rng() % 4];
	*hl = h;
	*tail = k + h;
	return h + tl;
}

/* The key under a valid iterator against q[0, ql) through every reader:
 * oidx_iter_cmp and oidx_iter_has_prefix as bytes_cmp and memcmp say. */
static void check_iter_readers(struct oidx_iter *it, const uint8_t *q, uint32_t ql)
{
	uint32_t kl;
	uint8_t k[IDX_MAX_KEY];
	const void *kk = oidx_iter_key(it, &kl);
	memcpy(k, kk, kl);
	int want = bytes_cmp(k, kl, q, ql);
	int got = oidx_iter_cmp(it, q, ql);
	cr_assert_eq((got > 0) - (got < 0), (want > 0) - (want < 0), "iter_cmp");
	for (uint32_t l = 0; l <= ql; l++)
		cr_assert_eq(oidx_iter_has_prefix(it, q, l), l <= kl && !memcmp(k, q, l), "iter_has_prefix %u", l);
	for (uint32_t l = 0; l <= kl; l++) /* its own prefixes, into the id */
		cr_assert(oidx_iter_has_prefix(it, k, l));
}

WM_TEST(oidx, tail_keyed_model_randomized)
{
	enum { OPS = 60000, PHASE1 = 30000, PHASE2 = 45000 };
	rng_state = 0x7a11u;
	struct oidx t;
	struct model m = { 0 };
	oidx_init_tail(&t);
	struct tval **vals = NULL;
	size_t nvals = 0, capvals = 0;
	uint32_t appends = 0, max_height = 0, refused = 0;
	for (int op = 0; op < OPS; op++) {
		unsigned ins_pct = op < PHASE1 ? 70 : op < PHASE2 ? 50 : 25;
		uint8_t k[24];
		uint32_t len, hl;
		const uint8_t *tail;
		int found;
		if ((unsigned)(rng() % 100) < ins_pct) {
			if (rng() % 5 == 0) { /* ascending: above every random key */
				hl = append_key(k, appends++);
				k[hl] = 'z';
				tail = k + hl;
				len = hl + 1;
			} else {
				len = random_tail_key(k, &hl, &tail);
			}
			struct tval *v = tval_new(tail, len - hl);
			if (nvals == capvals) {
				capvals = capvals ? 2 * capvals : 1024;
				vals = realloc(vals, capvals * sizeof(vals[0]));
				cr_assert_not_null(vals);
			}
			vals[nvals++] = v;
			size_t at = model_lower(&m, k, len, &found);
			/* an id the key does not end with is refused */
			struct tval *odd = tval_new((const uint8_t *)"\x02\x02", 2); /* no key ends so */
			vals[nvals - 1] = odd;
			cr_assert_eq(oidx_set(&t, k, len, odd), -1);
			cr_assert_eq(oidx_put(&t, k, len, odd), -1);
			vals[nvals - 1] = v;
			free(odd);
			if (rng() % 4 == 0) {
				/* found under another cut: the stored id's length differs */
				bool other_cut = found && strlen(((struct tval *)m.e[at]->val)->id) != len - hl;
				cr_assert_eq(oidx_set(&t, k, len, v), other_cut ? -1 : 0, "set at op %d", op);
				if (other_cut)
					refused++;
				else if (found)
					m.e[at]->val = (uintptr_t)v;
				else
					model_insert(&m, at, k, len, (uintptr_t)v);
			} else {
				cr_assert_eq(oidx_put(&t, k, len, v), found ? 1 : 0);
				if (!found)
					model_insert(&m, at, k, len, (uintptr_t)v);
			}
		} else {
			len = model_delete_op(&t, &m, k, op);
		}
		cr_assert_eq(oidx_count(&t), m.n, "count at op %d", op);
		model_probe(&t, &m, k, len);
		uint8_t q[24];
		uint32_t ql = random_key(q);
		if (rng() % 2) /* a probe that goes on into ids */
			for (uint32_t i = rng() % 4; i-- > 0;)
				q[ql++] = tail_alphabet[rng() % 4];
		model_probe(&t, &m, q, ql);
		struct oidx_iter it;
		if (oidx_seek_ge(&t, q, ql, &it))
			check_iter_readers(&it, q, ql);
		if (t.height > max_height)
			max_height = t.height;
		if (op % 2500 == 0 || op == OPS - 1) {
			cr_assert_eq(oidx_check(&t), 0, "oidx_check failed at op %d", op);
			check_walks(&t, &m);
		}
	}
	cr_assert_geq(max_height, 3, "the model test should reach a 3-level tree");
	cr_assert_gt(refused, 0, "some sets should meet the same key cut elsewhere");
	model_drain(&t, &m);
	/* emptied, and freed: still tail-keyed */
	struct tval *v = tval_new((const uint8_t *)"id", 2);
	cr_assert_eq(oidx_put(&t, "hid", 3, v), 0);
	cr_assert_eq(oidx_put(&t, "hix", 3, v), -1);
	oidx_free(&t);
	cr_assert_eq(oidx_put(&t, "hix", 3, v), -1);
	cr_assert_eq(oidx_put(&t, "id", 2, v), 0);
	cr_assert_eq(oidx_check(&t), 0);
	oidx_free(&t);
	free(v);
	for (size_t i = 0; i < nvals; i++)
		free(vals[i]);
	free(vals);
	model_free(&m);
}

/* What a tail-keyed put refuses, and its bounds: a key of IDX_MAX_KEY
 * bytes (head and id) is kept whole, one more refused; no value, an empty
 * id, an id longer than the key. */
WM_TEST(oidx, tail_keyed_refusals_and_bounds)
{
	static uint8_t big[IDX_MAX_KEY + 1];
	memset(big, 'h', sizeof(big));
	struct oidx t;
	oidx_init_tail(&t);
	struct tval *id = tval_new((const uint8_t *)"abc", 3), *empty = tval_new((const uint8_t *)"", 0);
	cr_assert_eq(oidx_put(&t, "abc", 3, NULL), -1);
	cr_assert_eq(oidx_put(&t, "abc", 3, empty), -1);
	cr_assert_eq(oidx_put(&t, "bc", 2, id), -1);
	cr_assert_eq(oidx_put(&t, "abd", 3, id), -1);
	cr_assert_eq(oidx_count(&t), 0);
	memcpy(big + IDX_MAX_KEY - 3, "abc", 3);
	cr_assert_eq(oidx_put(&t, big, IDX_MAX_KEY, id), 0);
	memcpy(big + IDX_MAX_KEY - 2, "abc", 3);
	cr_assert_eq(oidx_put(&t, big, IDX_MAX_KEY + 1, id), -1);
	cr_assert_eq(oidx_put(&t, "abc", 3, id), 0); /* a head of 0 bytes */
	cr_assert_eq(oidx_count(&t), 2);
	struct oidx_iter it;
	uint32_t kl;
	cr_assert_eq(oidx_seek_le(&t, NULL, 0, &it), 1);
	const uint8_t *k = oidx_iter_key(&it, &kl);
	cr_assert_eq(kl, IDX_MAX_KEY);
	cr_assert_eq(memcmp(k + IDX_MAX_KEY - 3, "abc", 3), 0);
	cr_assert_eq(k[0], 'h');
	cr_assert_eq(oidx_check(&t), 0);
	oidx_free(&t);
	free(id);
	free(empty);
}

/* A table's secondary index: heads "<owner>\0" (no head a proper prefix
 * of another), ids ascending under each.  A seek by a head and a walk of
 * its entries never read an id: with every id taken away (NULL), they
 * still find each head's entries, in order. */
WM_TEST(oidx, tail_keyed_seek_by_head_reads_no_id)
{
	enum { OWNERS = 40, PER = 300 };
	struct oidx t;
	oidx_init_tail(&t);
	static struct tval v[OWNERS * PER];
	for (int i = 0; i < OWNERS * PER; i++) {
		int o = i % OWNERS;
		snprintf(v[i].buf, sizeof(v[i].buf), "i%06u", (unsigned)i % 1000000u);
		v[i].id = v[i].buf;
		char key[32];
		int hl = snprintf(key, sizeof(key), "own%02d", o) + 1; /* with its NUL */
		memcpy(key + hl, v[i].buf, 7);
		cr_assert_eq(oidx_put(&t, key, (uint32_t)hl + 7, &v[i]), 0);
	}
	cr_assert_eq(oidx_check(&t), 0);
	cr_assert_gt(t.height, 1);
	for (int i = 0; i < OWNERS * PER; i++)
		v[i].id = NULL; /* a read of any id now crashes */
	for (int o = 0; o < OWNERS; o++) {
		char head[16];
		uint32_t hl = (uint32_t)snprintf(head, sizeof(head), "own%02d", o) + 1;
		struct oidx_iter it;
		int n = 0;
		for (int ok = oidx_seek_ge(&t, head, hl, &it); ok && oidx_iter_has_prefix(&it, head, hl);
		     ok = oidx_next(&it), n++)
			cr_assert_eq(oidx_iter_val(&it), &v[o + n * OWNERS], "owner %d entry %d", o, n);
		cr_assert_eq(n, PER);
	}
	for (int i = 0; i < OWNERS * PER; i++)
		v[i].id = v[i].buf;
	cr_assert_eq(oidx_check(&t), 0);
	oidx_free(&t);
}
