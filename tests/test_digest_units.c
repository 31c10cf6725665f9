/*
 * test_digest_units.c -- net/digest.h: SHA-256 and HMAC-SHA256 against
 * published and independently computed vectors (FIPS 180-2 "abc", RFC 4231
 * test case 2, Python's hashlib/hmac for the rest), the kept key switching
 * at every call, keys past the cached bound, and two threads hashing at
 * once with contexts of their own.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "net/digest.h"
#include "net/hex.h"
#include "tests/wm_test.h"

static void hex_of(const uint8_t d[DIGEST_SHA256_LEN], char out[65]) { hex_encode(d, DIGEST_SHA256_LEN, out); }

static const char jefe_mac[] = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"; /* RFC 4231 2 */
static const char jefe_msg[] = "what do ya want for nothing?";

WM_TEST(digest, sha256_vectors)
{
	char h[65];
	cr_assert_eq(digest_sha256_hex("abc", 3, h), 0);
	cr_assert_str_eq(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	cr_assert_eq(digest_sha256_hex(NULL, 0, h), 0, "an empty input may come as NULL");
	cr_assert_str_eq(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	uint8_t d[DIGEST_SHA256_LEN];
	cr_assert_eq(digest_sha256("abc", 3, d), 0);
	hex_of(d, h);
	cr_assert_str_eq(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

/* Python: k = bytes(range(256)) + bytes(range(44)) (300 bytes, past the
 * cached bound); hmac.new(k, b"long key", sha256); hmac.new(b"", b"empty key", sha256). */
WM_TEST(digest, hmac_vectors_whatever_key_came_before)
{
	static uint8_t longkey[300];
	for (unsigned i = 0; i < sizeof(longkey); i++)
		longkey[i] = (uint8_t)(i < 256 ? i : i - 256);
	static const struct {
		const void *key;
		size_t key_len;
		const char *msg, *want;
	} v[] = {
		{"Jefe", 4, jefe_msg, jefe_mac},
		{longkey, sizeof(longkey), "long key", "3289f1673c6f66a4b906b55a7a8fa1c32e8d9fc83423a87b95dd46aafa6eceda"},
		{"", 0, "empty key", "bf6e6a0f34cd9fdf69c67b8c62969c87cd4f783d4665217df03f062dc4a0406e"},
	};
	/* every order of keys, each twice running: the kept key is reused or replaced correctly */
	static const int seq[] = {0, 0, 1, 1, 0, 2, 2, 1, 0, 2, 0};
	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		uint8_t d[DIGEST_SHA256_LEN];
		char h[65];
		int k = seq[i];
		cr_assert_eq(digest_hmac_sha256(v[k].key, v[k].key_len, v[k].msg, strlen(v[k].msg), d), 0);
		hex_of(d, h);
		cr_assert_str_eq(h, v[k].want, "step %zu (key %d)", i, k);
	}
}

static void *hmac_many(void *arg)
{
	int *bad = arg;
	for (int i = 0; i < 2000; i++) {
		uint8_t d[DIGEST_SHA256_LEN];
		char h[65];
		/* alternate keys so that each call rekeys: a shared context would mix them up */
		const char *key = i % 2 ? "Jefe" : "another key";
		if (digest_hmac_sha256(key, strlen(key), jefe_msg, strlen(jefe_msg), d)) {
			(*bad)++;
			continue;
		}
		hex_of(d, h);
		*bad += (i % 2) != !strcmp(h, jefe_mac);
	}
	return NULL;
}

WM_TEST(digest, two_threads_hash_at_once_each_with_its_own_context)
{
	pthread_t t[2];
	int bad[2] = {0, 0};
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, hmac_many, &bad[i]), 0);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_join(t[i], NULL), 0);
	cr_assert(bad[0] == 0 && bad[1] == 0, "wrong MACs: %d and %d", bad[0], bad[1]);
}
