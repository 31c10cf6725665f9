/*
 * b64url.c -- base64url without padding (b64url.h).
 */
#include "net/b64url.h"

#include <string.h>

static const char b64u[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int b64url_encode(const uint8_t *in, size_t n, char *out, size_t out_size)
{
	size_t need = (n * 4 + 2) / 3;
	if (need + 1 > out_size)
		return -1;
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < n)
			v |= in[i + 2];
		out[o++] = b64u[(v >> 18) & 63];
		out[o++] = b64u[(v >> 12) & 63];
		if (i + 1 < n)
			out[o++] = b64u[(v >> 6) & 63];
		if (i + 2 < n)
			out[o++] = b64u[v & 63];
	}
	out[o] = 0;
	return (int)o;
}

int b64url_decode(const char *in, size_t n, uint8_t *out, size_t out_size)
{
	if (n % 4 == 1)
		return -1;
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;
	for (size_t i = 0; i < n; i++) {
		const char *p = memchr(b64u, in[i], 64);
		if (!p || !in[i])
			return -1;
		acc = acc << 6 | (uint32_t)(p - b64u);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o >= out_size)
				return -1;
			out[o++] = (uint8_t)(acc >> bits);
		}
	}
	if (bits && (acc & ((1u << bits) - 1)))
		return -1; /* non-canonical trailing bits */
	return (int)o;
}
