/*
 * b64url.h -- base64url without padding (RFC 4648 section 5), the text of
 * cursors (engine/edge/api.c, shard-router/fanout.c).  Canonical both ways:
 * the decoder refuses non-zero trailing bits, so every byte string has
 * exactly one text and a cursor cannot be varied while meaning the same.
 */
#ifndef WM_B64URL_H
#define WM_B64URL_H

#include <stddef.h>
#include <stdint.h>

/* The text length of n bytes (without the NUL). */
static inline size_t b64url_len(size_t n) { return (n * 4 + 2) / 3; }

/* in[0..n) into out (out_size >= b64url_len(n) + 1), NUL-terminated: the
 * text length, or -1 when out is too small. */
int b64url_encode(const uint8_t *in, size_t n, char *out, size_t out_size);
/* in[0..n) into out: the byte count, or -1 for a character outside the
 * alphabet, an impossible length (n % 4 == 1), non-zero trailing bits or
 * more than out_size bytes. */
int b64url_decode(const char *in, size_t n, uint8_t *out, size_t out_size);

#endif
