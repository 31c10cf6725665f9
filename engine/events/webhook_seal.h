/*
 * webhook_seal.h -- webhook signing secrets sealed at rest (issue 18 item
 * 1: "stored so it can sign").
 *
 * Why sealed and not hashed: an HMAC key must be recoverable to sign every
 * delivery, so it cannot be kept as a hash like an API key.  Kept in the
 * clear it would sit in every WAL segment, snapshot and replication
 * stream (endpoints replicate to every shard).  So the stored row carries
 * it sealed:
 *
 *     "v1." + base64url(nonce[12] || AES-256-GCM(key, nonce, secret, aad) || tag[16])
 *
 * with a fresh random nonce per sealing, aad = the endpoint id (a sealed
 * secret moved to another endpoint's row does not open), and key =
 * HMAC-SHA256(deployment key, "wm webhook secret seal v1").  The
 * deployment key is the consumer-token key (engine/edge/consumer_token.h):
 * in a cluster derived from the cluster secret (so every shard opens what
 * the home sealed), on a single shard its <data-dir>/consumer-token.key.
 * Losing that key loses the secrets: endpoints then need rotate-secret.
 *
 * The opener reads stored text (untrusted as any stored row) strictly and
 * has a fuzz target (tests/fuzz/fuzz_webhook_seal.c).
 */
#ifndef WM_WEBHOOK_SEAL_H
#define WM_WEBHOOK_SEAL_H

#include <stddef.h>
#include <stdint.h>

#include "engine/events/webhook_sign.h"

#define WH_SEAL_KEY_LEN 32
#define WH_SEAL_NONCE 12
#define WH_SEAL_TAG 16
#define WH_SEAL_RAW_MAX (WH_SEAL_NONCE + WH_SECRET_MAX + WH_SEAL_TAG)
#define WH_SEALED_TEXT_MAX (3 + 123) /* "v1." + base64url of WH_SEAL_RAW_MAX (92) bytes, NUL not included */

/* The sealing key from the deployment key: 0 or -1. */
int wh_seal_key(const uint8_t deploy[WH_SEAL_KEY_LEN], uint8_t out[WH_SEAL_KEY_LEN]);

/* Seal s for the endpoint aad[0..aad_len) into out (>= WH_SEALED_TEXT_MAX
 * + 1 bytes, NUL-terminated): the text length, or -1 (a secret outside
 * WH_SECRET_MIN..WH_SECRET_MAX, no randomness, a short out, a cipher
 * failure). */
int wh_seal(const uint8_t key[WH_SEAL_KEY_LEN], const char *aad, size_t aad_len, const struct wh_secret *s, char *out,
	    size_t out_size);

/* Open text[0..n) sealed for aad into out: 0, or -1 when the text is not
 * "v1." + canonical base64url of a nonce, WH_SECRET_MIN..WH_SECRET_MAX
 * bytes and a tag, or does not authenticate under key and aad.  out is
 * written only on success. */
int wh_unseal(const uint8_t key[WH_SEAL_KEY_LEN], const char *aad, size_t aad_len, const char *text, size_t n,
	      struct wh_secret *out);

/* 1 when text[0..n) has the shape of a sealed secret (what wh_unseal
 * would try to open), without a key.  Pure. */
int wh_sealed_shape(const char *text, size_t n);

#endif
