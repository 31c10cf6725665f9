/*
 * image_fixtures.c -- see image_fixtures.h.  Everything here follows the
 * format specifications (PNG ISO 15948, JPEG T.81, WebP container and
 * bitstream docs) and shares no code with engine/catalogue/image.c, so a reader bug
 * cannot be mirrored by a builder bug.
 */
#include "tests/image_fixtures.h"

#include <string.h>

#include "tests/wm_test.h"

#define FIX_RAW_MAX 2048u /* largest real pixel payload written into a fixture */

void fix_put(struct img *m, const void *p, size_t n)
{
	cr_assert_leq(m->n + n, sizeof(m->b), "fixture larger than %d bytes", FIX_IMG_MAX);
	if (n)
		memcpy(m->b + m->n, p, n);
	m->n += n;
}

void fix_put8(struct img *m, unsigned v)
{
	uint8_t b = (uint8_t)v;
	fix_put(m, &b, 1);
}

void fix_put_be16(struct img *m, unsigned v)
{
	fix_put8(m, v >> 8);
	fix_put8(m, v);
}

static void put_be32(struct img *m, uint32_t v)
{
	fix_put_be16(m, v >> 16);
	fix_put_be16(m, v & 0xffff);
}

void fix_put_le16(struct img *m, unsigned v)
{
	fix_put8(m, v);
	fix_put8(m, v >> 8);
}

static void put_le24(struct img *m, uint32_t v)
{
	fix_put_le16(m, v & 0xffff);
	fix_put8(m, v >> 16);
}

static void put_le32(struct img *m, uint32_t v)
{
	fix_put_le16(m, v & 0xffff);
	fix_put_le16(m, v >> 16);
}

void fix_set_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

void fix_set_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

uint32_t fix_crc32(const uint8_t *p, size_t n)
{
	static uint32_t table[256];
	if (!table[1])
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;
			for (int k = 0; k < 8; k++)
				c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++)
		c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

/* ---- PNG ------------------------------------------------------------------ */

static void png_chunk(struct img *m, const char *type, const uint8_t *data, uint32_t len)
{
	put_be32(m, len);
	size_t start = m->n;
	fix_put(m, type, 4);
	fix_put(m, data, len);
	put_be32(m, fix_crc32(m->b + start, 4 + len));
}

void fix_png_crc(struct img *m) { fix_set_be32(m->b + 29, fix_crc32(m->b + 12, 17)); }

/* Bytes of filtered scanlines for a w x h image (Adam7 passes when interlaced). */
static uint64_t png_raw_size(uint64_t w, uint64_t h, unsigned bits_per_pixel, int interlace)
{
	static const unsigned adam7[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
					     {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};
	if (!interlace)
		return h * (1 + (w * bits_per_pixel + 7) / 8);
	uint64_t total = 0;
	for (int p = 0; p < 7; p++) {
		uint64_t pw = w > adam7[p][0] ? (w - adam7[p][0] + adam7[p][2] - 1) / adam7[p][2] : 0;
		uint64_t ph = h > adam7[p][1] ? (h - adam7[p][1] + adam7[p][3] - 1) / adam7[p][3] : 0;
		if (pw && ph)
			total += ph * (1 + (pw * bits_per_pixel + 7) / 8);
	}
	return total;
}

void fix_png(struct img *m, uint32_t w, uint32_t h, uint8_t depth, uint8_t colour, uint8_t interlace)
{
	static const unsigned channels[8] = {1, 1, 3, 1, 2, 1, 4, 1};
	memset(m, 0, sizeof(*m));
	fix_put(m, "\x89PNG\r\n\x1a\n", 8);
	uint8_t ihdr[13];
	fix_set_be32(ihdr, w);
	fix_set_be32(ihdr + 4, h);
	ihdr[8] = depth;
	ihdr[9] = colour;
	ihdr[10] = 0;
	ihdr[11] = 0;
	ihdr[12] = interlace;
	m->field = m->n + 8;
	png_chunk(m, "IHDR", ihdr, 13);
	m->head_end = m->n;
	if (colour == 3)
		png_chunk(m, "PLTE", (const uint8_t *)"\x80\x20\x40", 3);
	uint64_t raw = png_raw_size(w, h, channels[colour & 7] * depth, interlace);
	if (raw > FIX_RAW_MAX)
		raw = 0; /* headers-only fixture */
	/* zlib: CMF/FLG, one final stored block of `raw` zero bytes, Adler-32 */
	uint8_t z[FIX_RAW_MAX + 16];
	size_t zn = 0;
	z[zn++] = 0x78;
	z[zn++] = 0x01;
	z[zn++] = 0x01;
	z[zn++] = (uint8_t)raw;
	z[zn++] = (uint8_t)(raw >> 8);
	z[zn++] = (uint8_t)~raw;
	z[zn++] = (uint8_t)(~raw >> 8);
	memset(z + zn, 0, (size_t)raw); /* filter type 0, all samples 0 */
	uint32_t a = 1, b = 0;          /* Adler-32 of the stored bytes */
	for (size_t i = 0; i < raw; i++) {
		a = (a + z[zn + i]) % 65521;
		b = (b + a) % 65521;
	}
	zn += (size_t)raw;
	fix_set_be32(z + zn, b << 16 | a);
	zn += 4;
	png_chunk(m, "IDAT", z, (uint32_t)zn);
	png_chunk(m, "IEND", NULL, 0);
}

/* ---- JPEG ----------------------------------------------------------------- */

void fix_jpeg(struct img *m, uint8_t sof, unsigned w, unsigned h, uint8_t nf, uint8_t precision)
{
	memset(m, 0, sizeof(*m));
	fix_put(m, "\xff\xd8", 2);
	fix_put(m, "\xff\xe0", 2);
	fix_put_be16(m, 16);
	fix_put(m, "JFIF\0\x01\x01\x00\x00\x01\x00\x01\x00\x00", 14);
	fix_put(m, "\xff\xdb", 2); /* DQT: table 0, 8-bit, all ones */
	fix_put_be16(m, 67);
	fix_put8(m, 0);
	for (int i = 0; i < 64; i++)
		fix_put8(m, 1);
	fix_put8(m, 0xff);
	fix_put8(m, sof);
	m->field = m->n;
	fix_put_be16(m, 8u + 3u * nf);
	fix_put8(m, precision);
	fix_put_be16(m, h);
	fix_put_be16(m, w);
	fix_put8(m, nf);
	for (unsigned i = 0; i < nf; i++) {
		fix_put8(m, i + 1);
		fix_put8(m, 0x11); /* 1x1 sampling */
		fix_put8(m, 0);    /* quantisation table 0 */
	}
	m->head_end = m->n;
	/* DHT: DC table 0 and AC table 0, each one 1-bit code '0' for symbol 0
	 * (DC difference category 0; AC end of block) */
	fix_put(m, "\xff\xc4", 2);
	fix_put_be16(m, 2 + 2 * (1 + 16 + 1));
	for (int t = 0; t < 2; t++) {
		fix_put8(m, t ? 0x10 : 0x00);
		fix_put8(m, 1);
		for (int i = 0; i < 15; i++)
			fix_put8(m, 0);
		fix_put8(m, 0);
	}
	fix_put(m, "\xff\xda", 2);
	fix_put_be16(m, 6u + 2u * nf);
	fix_put8(m, nf);
	for (unsigned i = 0; i < nf; i++) {
		fix_put8(m, i + 1);
		fix_put8(m, 0x00);
	}
	fix_put(m, "\x00\x3f\x00", 3);
	/* every block is DC '0' + EOB '0': 2 zero bits, padded with ones */
	uint64_t blocks = (uint64_t)nf * ((w + 7) / 8) * ((h + 7) / 8);
	uint64_t bits = 2 * blocks;
	if (bits / 8 + 1 > FIX_RAW_MAX)
		bits = 2; /* headers-only fixture */
	for (uint64_t i = 0; i < bits / 8; i++)
		fix_put8(m, 0);
	if (bits % 8)
		fix_put8(m, 0xffu >> (bits % 8));
	fix_put(m, "\xff\xd9", 2);
}

void fix_jpeg_segments(struct img *m, unsigned n, unsigned fill)
{
	memset(m, 0, sizeof(*m));
	fix_put(m, "\xff\xd8", 2);
	for (unsigned i = 0; i < n; i++) {
		fix_put(m, "\xff\xe1", 2);
		fix_put_be16(m, 4);
		fix_put(m, "ab", 2);
	}
	for (unsigned i = 0; i < fill; i++)
		fix_put8(m, 0xff);
	fix_put(m, "\xff\xc0", 2);
	m->field = m->n;
	fix_put_be16(m, 11);
	fix_put8(m, 8);
	fix_put_be16(m, 20);
	fix_put_be16(m, 30);
	fix_put8(m, 1);
	fix_put(m, "\x01\x11\x00", 3);
	m->head_end = m->n;
	fix_put(m, "\xff\xd9", 2);
}

/* ---- WebP ------------------------------------------------------------------ */

void fix_webp(struct img *m, const char *fourcc, const uint8_t *payload, size_t plen, uint32_t csize)
{
	memset(m, 0, sizeof(*m));
	fix_put(m, "RIFF", 4);
	put_le32(m, 0);
	fix_put(m, "WEBP", 4);
	fix_put(m, fourcc, 4);
	put_le32(m, csize);
	m->field = m->n;
	fix_put(m, payload, plen);
	while (m->n < m->field + csize)
		fix_put8(m, 0);
	if (csize & 1)
		fix_put8(m, 0);
	m->head_end = m->field + plen;
	fix_set_le32(m->b + 4, (uint32_t)(m->n - 8));
}

void fix_vp8(struct img *m, unsigned w, unsigned h, uint32_t tag)
{
	struct img p = {.n = 0};
	put_le24(&p, tag);
	fix_put(&p, "\x9d\x01\x2a", 3);
	fix_put_le16(&p, w);
	fix_put_le16(&p, h);
	fix_webp(m, "VP8 ", p.b, p.n, 30);
}

void fix_vp8l(struct img *m, unsigned w, unsigned h, unsigned version)
{
	struct img p = {.n = 0};
	fix_put8(&p, 0x2f);
	put_le32(&p, (uint32_t)(w - 1) | (uint32_t)(h - 1) << 14 | 1u << 28 | (uint32_t)version << 29);
	fix_webp(m, "VP8L", p.b, p.n, 12);
}

void fix_vp8x(struct img *m, uint32_t w, uint32_t h, uint32_t csize)
{
	struct img p = {.n = 0};
	fix_put8(&p, 0x10); /* alpha */
	fix_put(&p, "\0\0\0", 3);
	put_le24(&p, w - 1);
	put_le24(&p, h - 1);
	fix_webp(m, "VP8X", p.b, p.n, csize);
	if (csize == 10) { /* a real VP8X file goes on with its image chunks */
		struct img l;
		fix_vp8l(&l, w > 16384 ? 1 : w, h > 16384 ? 1 : h, 0);
		fix_put(m, l.b + 12, l.n - 12);
		fix_set_le32(m->b + 4, (uint32_t)(m->n - 8));
	}
}

/* The 1x1 WebP images browsers' feature tests decode (Modernizr). */
const uint8_t fix_webp_lossless_1x1[] = {
	0x52, 0x49, 0x46, 0x46, 0x1a, 0x00, 0x00, 0x00, 0x57, 0x45, 0x42, 0x50, 0x56, 0x50, 0x38, 0x4c, 0x0d,
	0x00, 0x00, 0x00, 0x2f, 0x00, 0x00, 0x00, 0x10, 0x07, 0x10, 0x11, 0x11, 0x88, 0x88, 0xfe, 0x07, 0x00};
const size_t fix_webp_lossless_1x1_len = sizeof(fix_webp_lossless_1x1);
const uint8_t fix_webp_lossy_1x1[] = {
	0x52, 0x49, 0x46, 0x46, 0x22, 0x00, 0x00, 0x00, 0x57, 0x45, 0x42, 0x50, 0x56, 0x50, 0x38, 0x20,
	0x16, 0x00, 0x00, 0x00, 0x30, 0x01, 0x00, 0x9d, 0x01, 0x2a, 0x01, 0x00, 0x01, 0x00, 0x0e, 0xc0,
	0xfe, 0x25, 0xa4, 0x00, 0x03, 0x70, 0x00, 0x00, 0x00, 0x00};
const size_t fix_webp_lossy_1x1_len = sizeof(fix_webp_lossy_1x1);
const uint8_t fix_webp_alpha_1x1[] = {
	0x52, 0x49, 0x46, 0x46, 0x4a, 0x00, 0x00, 0x00, 0x57, 0x45, 0x42, 0x50, 0x56, 0x50, 0x38, 0x58, 0x0a,
	0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x41, 0x4c, 0x50, 0x48,
	0x0c, 0x00, 0x00, 0x00, 0x11, 0x07, 0x10, 0x11, 0xfd, 0x0f, 0x44, 0x44, 0xff, 0x03, 0x00, 0x00, 0x56,
	0x50, 0x38, 0x20, 0x18, 0x00, 0x00, 0x00, 0x14, 0x01, 0x00, 0x9d, 0x01, 0x2a, 0x01, 0x00, 0x01, 0x00,
	0x00, 0x00, 0xfe, 0x00, 0x00, 0x0d, 0xc0, 0x00, 0xfe, 0xe6, 0xb5, 0x00, 0x00, 0x00};
const size_t fix_webp_alpha_1x1_len = sizeof(fix_webp_alpha_1x1);
