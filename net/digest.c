/*
 * digest.c -- SHA-256 and HMAC-SHA256 with per-thread contexts (see
 * digest.h for the why).
 *
 * Each thread that hashes gets one struct dg_thread, made on its first
 * call and freed by a pthread key destructor when the thread exits (the
 * loop's lives as long as the process).  Nothing is shared between
 * threads, so no lock: OpenSSL contexts must not be used by two threads at
 * once, the fetched algorithms could be but are per thread too.
 */
#include "net/digest.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "net/hex.h"

struct dg_thread {
	EVP_MD *sha256;
	EVP_MD_CTX *md;
	EVP_MAC_CTX *mac;
	uint8_t key[DIGEST_KEY_CACHED_MAX]; /* the key mac holds, when keyed */
	size_t key_len;
	int keyed;
};

static pthread_once_t dg_once = PTHREAD_ONCE_INIT;
static pthread_key_t dg_key;
static int dg_key_ok;

static void dg_free(void *p)
{
	struct dg_thread *t = p;
	EVP_MAC_CTX_free(t->mac);
	EVP_MD_CTX_free(t->md);
	EVP_MD_free(t->sha256);
	OPENSSL_cleanse(t->key, sizeof(t->key));
	free(t);
}

static void dg_key_make(void)
{
	dg_key_ok = pthread_key_create(&dg_key, dg_free) == 0;
}

/* This thread's contexts, made on first use; NULL on failure (nothing kept). */
static struct dg_thread *dg_get(void)
{
	pthread_once(&dg_once, dg_key_make);
	if (!dg_key_ok)
		return NULL;
	struct dg_thread *t = pthread_getspecific(dg_key);
	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	EVP_MAC *hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	t->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
	t->md = EVP_MD_CTX_new();
	t->mac = hmac ? EVP_MAC_CTX_new(hmac) : NULL;
	EVP_MAC_free(hmac); /* the context holds its own reference */
	if (!t->sha256 || !t->md || !t->mac || pthread_setspecific(dg_key, t) != 0) {
		dg_free(t);
		return NULL;
	}
	return t;
}

int digest_sha256(const void *p, size_t n, uint8_t out[DIGEST_SHA256_LEN])
{
	struct dg_thread *t = dg_get();
	unsigned int len = 0;
	if (!t || !EVP_DigestInit_ex2(t->md, t->sha256, NULL) || !EVP_DigestUpdate(t->md, n ? p : "", n) ||
	    !EVP_DigestFinal_ex(t->md, out, &len))
		return -1;
	return len == DIGEST_SHA256_LEN ? 0 : -1;
}

int digest_sha256_hex(const void *p, size_t n, char out[2 * DIGEST_SHA256_LEN + 1])
{
	uint8_t d[DIGEST_SHA256_LEN];
	if (digest_sha256(p, n, d))
		return -1;
	hex_encode(d, sizeof(d), out);
	return 0;
}

int digest_hmac_sha256(const void *key, size_t key_len, const void *msg, size_t n, uint8_t out[DIGEST_SHA256_LEN])
{
	struct dg_thread *t = dg_get();
	if (!t)
		return -1;
	if (!t->keyed || t->key_len != key_len || CRYPTO_memcmp(t->key, key, key_len) != 0) {
		OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
				       OSSL_PARAM_END};
		t->keyed = 0; /* until the new key is in */
		/* OpenSSL takes a zero-length key only as a non-NULL pointer */
		if (!EVP_MAC_init(t->mac, key_len ? key : (const void *)"", key_len, params))
			return -1;
		if (key_len <= sizeof(t->key)) {
			memcpy(t->key, key, key_len);
			t->key_len = key_len;
			t->keyed = 1;
		}
	} else if (!EVP_MAC_init(t->mac, NULL, 0, NULL)) {
		return -1;
	}
	size_t ml = 0;
	return EVP_MAC_update(t->mac, n ? msg : (const void *)"", n) && EVP_MAC_final(t->mac, out, &ml, DIGEST_SHA256_LEN) &&
			       ml == DIGEST_SHA256_LEN
		       ? 0
		       : -1;
}
