/*
 * hex.h -- lower-case hexadecimal for digests, MACs and fingerprints stored
 * in documents ("sha256:<hex>", idempotency fingerprints, media checksums).
 * One implementation for every module that shows bytes as text.
 */
#ifndef WM_HEX_H
#define WM_HEX_H

#include <stddef.h>
#include <stdint.h>

/* Write 2n lower-case hex characters of in[0..n) and a NUL into out
 * (>= 2n + 1 bytes). */
void hex_encode(const uint8_t *in, size_t n, char *out);
/* Read exactly 2n lower-case hex characters into out[0..n); 0, or -1 on a
 * character outside [0-9a-f] (out is then partly written). */
int hex_decode(const char *in, size_t n, uint8_t *out);

#endif
