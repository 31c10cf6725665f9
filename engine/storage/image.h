/*
 * image.h -- the binary row images of snapshot records (table_ops.image,
 * table_ops.from_image; the record layout is in record.h).
 *
 * Why images.  Recovery spent most of its time turning documents back into
 * typed rows: parsing each canonical JSON document whole, then reading its
 * members by name (perf: the JSON parser was ~55 % of the builder thread
 * on a 1.7M-row snapshot).  For the tables that dominate a shard at scale
 * (offers, inventory levels) a snapshot record now also carries the row's
 * typed values in a fixed little-endian layout, and the builder fills the
 * row from them -- through the same validation a typed put's values pass
 * -- instead of parsing the document, which is only copied.
 *
 * The layout is explicit (no struct is ever written as it sits in memory):
 * fixed-size integers little-endian, strings as one length byte and their
 * bytes (no NUL).  Images are untrusted input like every record: the
 * reader checks every length against what is left and against the field
 * it fills, and a short or overlong image fails the whole read (`bad`),
 * never a read past its end.  A table's image starts with its own layout
 * version byte, so a layout can change without a snapshot format change:
 * an image of an unknown version is refused and the record's document is
 * used instead.
 */
#ifndef WM_IMAGE_H
#define WM_IMAGE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "net/buf.h"

/* ---- writing: each put appends, or sets w->err (the buffer's bound) ---- */

struct img_w {
	struct buf *b;
	int err;
};

static inline void img_put(struct img_w *w, const void *p, size_t n)
{
	if (!w->err && buf_append(w->b, p, n))
		w->err = 1;
}

static inline void img_u8(struct img_w *w, unsigned v)
{
	uint8_t x = (uint8_t)v;
	img_put(w, &x, 1);
}

static inline void img_i64(struct img_w *w, int64_t v)
{
	uint8_t x[8];
	uint64_t u = (uint64_t)v;
	for (int i = 0; i < 8; i++)
		x[i] = (uint8_t)(u >> (8 * i));
	img_put(w, x, 8);
}

/* A NUL-terminated string of at most 255 bytes (longer: err). */
static inline void img_str(struct img_w *w, const char *s)
{
	size_t n = strlen(s);
	if (n > 255) {
		w->err = 1;
		return;
	}
	img_u8(w, (unsigned)n);
	img_put(w, s, n);
}

/* ---- reading: each get checks what is left; a failure sets r->bad and
 * leaves the destination zeroed ---- */

struct img_r {
	const uint8_t *p, *end;
	int bad;
};

static inline unsigned img_get_u8(struct img_r *r)
{
	if (r->bad || r->p >= r->end) {
		r->bad = 1;
		return 0;
	}
	return *r->p++;
}

static inline int64_t img_get_i64(struct img_r *r)
{
	if (r->bad || r->end - r->p < 8) {
		r->bad = 1;
		return 0;
	}
	uint64_t u = 0;
	for (int i = 0; i < 8; i++)
		u |= (uint64_t)r->p[i] << (8 * i);
	r->p += 8;
	return (int64_t)u;
}

/* A string into dst[cap] (NUL-terminated): bad when it does not fit with
 * its NUL, holds a NUL byte or runs past the image. */
static inline void img_get_str(struct img_r *r, char *dst, size_t cap)
{
	memset(dst, 0, cap);
	size_t n = img_get_u8(r);
	if (r->bad || n >= cap || (size_t)(r->end - r->p) < n || memchr(r->p, 0, n)) {
		r->bad = 1;
		return;
	}
	memcpy(dst, r->p, n);
	r->p += n;
}

/* Fixed bytes into dst (exactly n of them). */
static inline void img_get_bytes(struct img_r *r, void *dst, size_t n)
{
	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = 1;
		memset(dst, 0, n);
		return;
	}
	memcpy(dst, r->p, n);
	r->p += n;
}

/* The whole image read, and nothing left over: 0, else -1. */
static inline int img_done(const struct img_r *r)
{
	return !r->bad && r->p == r->end ? 0 : -1;
}

#endif
