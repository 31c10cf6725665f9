/*
 * digest.h -- SHA-256 and HMAC-SHA256 for every caller of the process,
 * with the algorithms fetched once per thread and their contexts kept.
 *
 * Why one place: OpenSSL 3's one-shot SHA256(), HMAC() and EVP_Digest()
 * fetch the algorithm from the provider and build and free a context on
 * every call.  Under callgrind that was ~35,000 instructions for each
 * signed internal request (the router signing, the shard verifying), more
 * than the router's whole remaining work for a forwarded quote.  The
 * helpers below fetch once per thread, keep one digest context and one MAC
 * context per thread (freed when the thread exits), and the MAC context
 * keeps the last key it was given: a call with the same key restarts from
 * the stored pads, another key sets it anew.
 */
#ifndef WM_DIGEST_H
#define WM_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#define DIGEST_SHA256_LEN 32
#define DIGEST_KEY_CACHED_MAX 256 /* a longer HMAC key is set on every call (not kept) */

/* SHA-256 of p[0..n) into out; 0, or -1 (OpenSSL failed). */
int digest_sha256(const void *p, size_t n, uint8_t out[DIGEST_SHA256_LEN]);
/* The same as 64 lower-case hex digits and a NUL into out. */
int digest_sha256_hex(const void *p, size_t n, char out[2 * DIGEST_SHA256_LEN + 1]);
/* HMAC-SHA256 under key[0..key_len) of msg[0..n) into out; 0 or -1. */
int digest_hmac_sha256(const void *key, size_t key_len, const void *msg, size_t n, uint8_t out[DIGEST_SHA256_LEN]);

#endif
