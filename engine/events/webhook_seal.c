/*
 * webhook_seal.c -- sealing webhook secrets at rest (the why and the
 * format in webhook_seal.h).  OpenSSL's EVP AES-256-GCM; every buffer is
 * the caller's or on the stack, and the plaintext copies made here are
 * cleansed before returning.
 */
#include "engine/events/webhook_seal.h"

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "net/b64url.h"

static const char seal_label[] = "wm webhook secret seal v1";

int wh_seal_key(const uint8_t deploy[WH_SEAL_KEY_LEN], uint8_t out[WH_SEAL_KEY_LEN])
{
	unsigned ml = 0;
	return HMAC(EVP_sha256(), deploy, WH_SEAL_KEY_LEN, (const uint8_t *)seal_label, sizeof(seal_label) - 1, out,
		    &ml) && ml == WH_SEAL_KEY_LEN
		       ? 0
		       : -1;
}

/* One AES-256-GCM pass: encrypt (enc 1) or decrypt (enc 0) in[0..n) into
 * out with nonce and aad; the tag is written (enc) or checked (dec).  0 or -1. */
static int gcm(int enc, const uint8_t key[WH_SEAL_KEY_LEN], const uint8_t nonce[WH_SEAL_NONCE], const char *aad,
	       size_t aad_len, const uint8_t *in, size_t n, uint8_t *out, uint8_t tag[WH_SEAL_TAG])
{
	EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
	int len = 0, ok = x && EVP_CipherInit_ex(x, EVP_aes_256_gcm(), NULL, NULL, NULL, enc) == 1 &&
			  EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_IVLEN, WH_SEAL_NONCE, NULL) == 1 &&
			  EVP_CipherInit_ex(x, NULL, NULL, key, nonce, enc) == 1 &&
			  EVP_CipherUpdate(x, NULL, &len, (const uint8_t *)aad, (int)aad_len) == 1 &&
			  EVP_CipherUpdate(x, out, &len, in, (int)n) == 1 && (size_t)len == n &&
			  (enc || EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_TAG, WH_SEAL_TAG, tag) == 1) &&
			  EVP_CipherFinal_ex(x, out + len, &len) == 1 && len == 0 &&
			  (!enc || EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_GET_TAG, WH_SEAL_TAG, tag) == 1);
	EVP_CIPHER_CTX_free(x);
	return ok ? 0 : -1;
}

int wh_seal(const uint8_t key[WH_SEAL_KEY_LEN], const char *aad, size_t aad_len, const struct wh_secret *s, char *out,
	    size_t out_size)
{
	uint8_t raw[WH_SEAL_RAW_MAX];
	if (s->len < WH_SECRET_MIN || s->len > WH_SECRET_MAX || out_size < 4 ||
	    RAND_bytes(raw, WH_SEAL_NONCE) != 1 ||
	    gcm(1, key, raw, aad, aad_len, s->key, s->len, raw + WH_SEAL_NONCE, raw + WH_SEAL_NONCE + s->len))
		return -1;
	memcpy(out, "v1.", 3);
	int n = b64url_encode(raw, WH_SEAL_NONCE + s->len + WH_SEAL_TAG, out + 3, out_size - 3);
	return n < 0 ? -1 : n + 3;
}

/* The raw bytes of a sealed text into raw: their count, or -1 for a text
 * that is not "v1." + canonical base64url of a nonce, a secret of the
 * allowed lengths and a tag. */
static int sealed_raw(const char *text, size_t n, uint8_t raw[WH_SEAL_RAW_MAX])
{
	if (n < 3 || n > WH_SEALED_TEXT_MAX || memcmp(text, "v1.", 3))
		return -1;
	int r = b64url_decode(text + 3, n - 3, raw, WH_SEAL_RAW_MAX);
	if (r < WH_SEAL_NONCE + WH_SECRET_MIN + WH_SEAL_TAG)
		return -1;
	return r;
}

int wh_sealed_shape(const char *text, size_t n)
{
	uint8_t raw[WH_SEAL_RAW_MAX];
	return sealed_raw(text, n, raw) > 0;
}

int wh_unseal(const uint8_t key[WH_SEAL_KEY_LEN], const char *aad, size_t aad_len, const char *text, size_t n,
	      struct wh_secret *out)
{
	uint8_t raw[WH_SEAL_RAW_MAX], plain[WH_SECRET_MAX];
	int r = sealed_raw(text, n, raw);
	if (r < 0)
		return -1;
	size_t len = (size_t)r - WH_SEAL_NONCE - WH_SEAL_TAG;
	if (gcm(0, key, raw, aad, aad_len, raw + WH_SEAL_NONCE, len, plain, raw + WH_SEAL_NONCE + len)) {
		OPENSSL_cleanse(plain, sizeof(plain));
		return -1;
	}
	memcpy(out->key, plain, len);
	out->len = len;
	OPENSSL_cleanse(plain, sizeof(plain));
	return 0;
}
