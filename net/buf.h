/*
 * buf.h -- growable byte buffer with explicit ownership and a hard cap.
 *
 * Every place that accumulates bytes (connection input and output, WAL
 * transaction images, JSON output, snapshot records) uses this one type so
 * that the growth policy and the size bound live in exactly one spot.
 *
 * Ownership: a struct buf owns `data`.  buf_free() releases it.  A buffer
 * never grows beyond `cap_max` (0 = BUF_DEFAULT_MAX); an append that would
 * exceed it fails with -1 and sets `overflow`, leaving the contents intact,
 * so the caller can answer 413 instead of crashing or truncating silently.
 */
#ifndef WM_BUF_H
#define WM_BUF_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#define BUF_DEFAULT_MAX ((size_t)256 << 20) /* 256 MiB hard ceiling */

struct buf {
	char *data;     /* owned; NULL until first growth */
	size_t len;     /* bytes in use */
	size_t cap;     /* bytes allocated */
	size_t cap_max; /* bound on cap; 0 means BUF_DEFAULT_MAX */
	int overflow;   /* set once an append hit cap_max */
};

/* Initialise an empty buffer bounded by cap_max (0 = default). */
void buf_init(struct buf *b, size_t cap_max);
/* Initialise an empty buffer over the caller's cap bytes at mem, which it
 * never grows past (an append that does not fit sets overflow and fails)
 * and never frees: do not buf_free it.  For scratch output of a known
 * bound on the stack, where a malloc per use would cost more than the
 * work. */
static inline void buf_init_fixed(struct buf *b, char *mem, size_t cap)
{
	assert(cap > 0); /* cap_max 0 would mean the default bound, and growth */
	b->data = mem;
	b->len = 0;
	b->cap = b->cap_max = cap;
	b->overflow = 0;
}
/* Release the storage; the buffer is empty and reusable afterwards. */
void buf_free(struct buf *b);
/* A first reservation for a row document or an event built in a
 * temporary buffer: one allocation for most, where growing from the
 * default 256 bytes took one to three (a dozen such buffers per order). */
#define BUF_DOC_HINT 1024u
/* buf_reserve when the storage must grow (within cap_max). */
int buf_reserve_grow(struct buf *b, size_t extra);
/* Make room for `extra` more bytes.  Returns 0, or -1 on bound/OOM.
 * Inline: room already allocated is within the bound (cap <= cap_max),
 * and the JSON writer reserves before every key and string. */
static inline int buf_reserve(struct buf *b, size_t extra)
{
	return extra <= b->cap - b->len ? 0 : buf_reserve_grow(b, extra);
}
/* buf_init, then room for hint bytes in one allocation (BUF_DOC_HINT for a
 * row document or an event).  A failed reservation is not reported: it
 * is the same failure at the first append. */
static inline void buf_init_hint(struct buf *b, size_t cap_max, size_t hint)
{
	buf_init(b, cap_max);
	(void)buf_reserve(b, hint);
}
/* buf_append when the bytes do not fit the storage already allocated
 * (grows it within cap_max). */
int buf_append_grow(struct buf *b, const void *p, size_t n);
/* buf_append of a length the compiler does not know: out of line, so the
 * copy is a call to the C library's memcpy. */
int buf_append_var(struct buf *b, const void *p, size_t n);
/* Append bytes.  Returns 0, or -1 (contents unchanged) on bound/OOM.
 * A length known at compile time (BUF_LIT, a fixed field) is copied
 * inline, with no call, when it fits the allocated storage (cap never
 * exceeds cap_max, so it is within the bound): the JSON writer appends a
 * few literal bytes at a time, and this is its hot path.  Any other length
 * goes to buf_append_var.  Why both: left to itself, GCC expanded the
 * inline copy of a bounded but unknown length as `rep movsq`, whose
 * start-up cost made this function 6.5 % of a quote's CPU under perf
 * (issue 15); forced inline and folded per call site, a literal becomes a
 * few moves, and glibc's memcpy is quicker for the rest. */
static inline __attribute__((always_inline)) int buf_append(struct buf *b, const void *p, size_t n)
{
	if (!__builtin_constant_p(n))
		return buf_append_var(b, p, n);
	if (n == 0)
		return 0; /* p may be NULL then */
	if (n <= b->cap - b->len) { /* cap > 0: data is allocated */
		__builtin_memcpy(b->data + b->len, p, n);
		b->len += n;
		return 0;
	}
	return buf_append_grow(b, p, n);
}
/* Append a string literal's bytes (not its NUL); the length is the
 * compiler's. */
#define BUF_LIT(b, lit) buf_append((b), lit, sizeof(lit) - 1)
/* p[0..8) as a big-endian word: byte strings compared 8 bytes at a time
 * sort as these words do (engine/storage: index heads, id bodies). */
static inline uint64_t buf_be64(const void *p)
{
	uint64_t v;
	__builtin_memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}
/* Copy src into dst (size bytes, size > 0), truncated to size - 1 bytes,
 * always NUL-terminated: snprintf(dst, size, "%s", src) without the
 * format parsing.  Returns the length of what was copied. */
static inline size_t buf_strcpy(char *dst, size_t size, const char *src)
{
	size_t n = __builtin_strlen(src);
	if (n >= size)
		n = size - 1;
	__builtin_memcpy(dst, src, n);
	dst[n] = 0;
	return n;
}
/* dst = a, then tag, then n in decimal: what snprintf(dst, size, "%s%s%u",
 * a, tag, n) writes (size > 0; truncated the same way, always
 * NUL-terminated), without its format parsing: ~800 instructions a call,
 * and an order made 7 such ids ("<order>.L1", "<order>.H1", ...; issue
 * 15).  Returns the length written. */
size_t buf_str_tag_u(char *dst, size_t size, const char *a, const char *tag, unsigned n);
/* Append a NUL-terminated string (without the NUL). */
int buf_puts(struct buf *b, const char *s);
/* Append one byte. */
static inline __attribute__((always_inline)) int buf_putc(struct buf *b, char c)
{
	if (b->len < b->cap) {
		b->data[b->len++] = c;
		return 0;
	}
	return buf_append_grow(b, &c, 1);
}
/* printf-style append.  Returns 0 or -1. */
int buf_printf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* v in decimal ("-" for a negative one), as printf's %lld writes it,
 * without printf's parsing.  Returns 0 or -1 (contents unchanged). */
int buf_put_dec(struct buf *b, int64_t v);
/* The decimal digits of v, right-aligned so that they end at end (at most
 * 20 bytes before it); returns where they start.  No NUL. */
char *buf_utoa_rev(uint64_t v, char *end);
/* Little-endian fixed-width integer appends (for binary formats). */
int buf_put_u32(struct buf *b, uint32_t v);
int buf_put_u64(struct buf *b, uint64_t v);
/* Drop the first n bytes (n <= len), shifting the rest down. */
void buf_consume(struct buf *b, size_t n);
/* Forget the contents but keep the storage. */
static inline void buf_reset(struct buf *b) { b->len = 0; b->overflow = 0; }

/* Little-endian readers for decoding binary formats from raw bytes. */
static inline uint16_t rd_u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t rd_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t rd_u64(const uint8_t *p) { return (uint64_t)rd_u32(p) | (uint64_t)rd_u32(p + 4) << 32; }
static inline void wr_u16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void wr_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline void wr_u64(uint8_t *p, uint64_t v) { wr_u32(p, (uint32_t)v); wr_u32(p + 4, (uint32_t)(v >> 32)); }

#endif
