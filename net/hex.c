/*
 * hex.c -- lower-case hexadecimal (see hex.h).  Upper case is refused on
 * purpose: stored digests have one spelling, so byte comparison of the text
 * is the same as comparison of the bytes.
 */
#include "net/hex.h"

void hex_encode(const uint8_t *in, size_t n, char *out)
{
	static const char hx[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hx[in[i] >> 4];
		out[2 * i + 1] = hx[in[i] & 15];
	}
	out[2 * n] = 0;
}

int hex_decode(const char *in, size_t n, uint8_t *out)
{
	for (size_t i = 0; i < n; i++) {
		int v = 0;
		for (int j = 0; j < 2; j++) {
			char ch = in[2 * i + (size_t)j];
			int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
			if (d < 0)
				return -1;
			v = v * 16 + d;
		}
		out[i] = (uint8_t)v;
	}
	return 0;
}
