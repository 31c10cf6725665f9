/*
 * buf.c -- growable byte buffer (see buf.h for the contract).
 *
 * Growth doubles the capacity (minimum 256 bytes) so that appending n bytes
 * one at a time costs O(n) amortised, and never passes cap_max.
 */
#include "net/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(struct buf *b, size_t cap_max)
{
	memset(b, 0, sizeof(*b));
	b->cap_max = cap_max ? cap_max : BUF_DEFAULT_MAX;
}

void buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
	b->overflow = 0;
}

int buf_reserve_grow(struct buf *b, size_t extra)
{
	size_t max = b->cap_max ? b->cap_max : BUF_DEFAULT_MAX;
	if (extra > max || b->len > max - extra) {
		b->overflow = 1;
		return -1;
	}
	size_t need = b->len + extra;
	if (need <= b->cap)
		return 0;
	size_t ncap = b->cap ? b->cap : 256;
	if (ncap > max)
		ncap = max; /* cap never exceeds cap_max: buf_append's inline path relies on it */
	while (ncap < need)
		ncap = ncap > max / 2 ? max : ncap * 2;
	char *p = realloc(b->data, ncap);
	if (!p)
		return -1;
	b->data = p;
	b->cap = ncap;
	return 0;
}

int buf_append_grow(struct buf *b, const void *p, size_t n)
{
	if (n == 0)
		return 0;
	if (buf_reserve(b, n))
		return -1;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

int buf_append_var(struct buf *b, const void *p, size_t n)
{
	if (n && n <= b->cap - b->len) {
		memcpy(b->data + b->len, p, n);
		b->len += n;
		return 0;
	}
	return buf_append_grow(b, p, n);
}

int buf_puts(struct buf *b, const char *s) { return buf_append(b, s, strlen(s)); }


int buf_printf(struct buf *b, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	if ((size_t)n < sizeof(small))
		return buf_append(b, small, (size_t)n);
	if (buf_reserve(b, (size_t)n + 1))
		return -1;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

int buf_put_u32(struct buf *b, uint32_t v)
{
	uint8_t t[4];
	wr_u32(t, v);
	return buf_append(b, t, 4);
}

int buf_put_u64(struct buf *b, uint64_t v)
{
	uint8_t t[8];
	wr_u64(t, v);
	return buf_append(b, t, 8);
}

/* Decimal digits of v, right-aligned ending at end; returns the start.
 * Two digits per step from a table of the pairs 00..99 (every money
 * figure of every response passes here). */
char *buf_utoa_rev(uint64_t v, char *end)
{
	static const char pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
				       "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
				       "8081828384858687888990919293949596979899";
	char *p = end;
	while (v >= 100) {
		unsigned r = (unsigned)(v % 100);
		v /= 100;
		p -= 2;
		memcpy(p, pairs + 2 * r, 2);
	}
	if (v >= 10) {
		p -= 2;
		memcpy(p, pairs + 2 * v, 2);
	} else {
		*--p = (char)('0' + v);
	}
	return p;
}

int buf_put_dec(struct buf *b, int64_t v)
{
	/* the digits end at t + 24 and go over with one constant-size copy
	 * of 24 bytes when the storage has that room (the bytes past them land
	 * beyond len): no call into the C library for a number (issue 15) */
	char t[48];
	memset(t + 24, 0, 24);
	uint64_t m = v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v; /* INT64_MIN too */
	char *p = buf_utoa_rev(m, t + 24);
	if (v < 0)
		*--p = '-';
	size_t n = (size_t)(t + 24 - p); /* <= 20 digits and a sign */
	if (b->cap - b->len < 24) /* near the end of the storage: the exact bytes */
		return buf_append_var(b, p, n);
	memcpy(b->data + b->len, p, 24);
	b->len += n;
	return 0;
}

size_t buf_str_tag_u(char *dst, size_t size, const char *a, const char *tag, unsigned n)
{
	assert(size > 0);
	char t[24];
	char *d = buf_utoa_rev(n, t + sizeof(t));
	size_t w = buf_strcpy(dst, size, a);
	w += buf_strcpy(dst + w, size - w, tag);
	size_t nd = (size_t)(t + sizeof(t) - d), room = size - 1 - w;
	if (nd > room)
		nd = room;
	memcpy(dst + w, d, nd);
	dst[w + nd] = 0;
	return w + nd;
}

void buf_consume(struct buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
}
