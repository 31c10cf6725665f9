/*
 * test_image.c -- the image header reader (engine/catalogue/image.c) on tiny files
 * built here byte by byte: PNG (with the IHDR CRC-32 computed by an
 * independent table-driven implementation, itself checked against the
 * standard check value), JPEG (marker segments up to each SOFn), WebP
 * (VP8, VP8L, VP8X).  Every header field is corrupted in turn, every
 * bound is tried at and past its edge, every prefix of every valid file
 * is "truncated", and random mutations never read out of bounds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/catalogue/image.h"
#include "tests/image_fixtures.h"
#include "tests/wm_test.h"

/* Probe a copy of exactly n bytes (ASan sees any over-read). */
static enum image_err probe(const uint8_t *p, size_t n, struct image_info *info)
{
	uint8_t *copy = malloc(n ? n : 1);
	cr_assert_not_null(copy);
	if (n)
		memcpy(copy, p, n);
	enum image_err e = image_probe(copy, n, info);
	free(copy);
	cr_assert_not_null(info->detail);
	return e;
}

static void expect_ok(const struct img *m, enum image_type t, uint32_t w, uint32_t h)
{
	struct image_info info;
	enum image_err e = probe(m->b, m->n, &info);
	cr_assert_eq(e, IMG_OK, "expected OK, got %s (%s)", image_err_name(e), info.detail);
	cr_assert_eq(info.type, t);
	cr_assert_eq(info.width, w);
	cr_assert_eq(info.height, h);
	cr_assert_str_eq(info.detail, "");
}

static void expect_err(const struct img *m, enum image_err want, const char *what)
{
	struct image_info info;
	enum image_err e = probe(m->b, m->n, &info);
	cr_assert_eq(e, want, "%s: expected %s, got %s (%s)", what, image_err_name(want), image_err_name(e),
		     info.detail);
	cr_assert_gt(strlen(info.detail), 0, "%s: an error names what failed", what);
}

/* ---- the test helpers themselves ----------------------------------------- */

WM_TEST(image, reference_crc_matches_the_standard_check_value)
{
	cr_assert_eq(fix_crc32((const uint8_t *)"123456789", 9), 0xcbf43926u);
	cr_assert_eq(fix_crc32((const uint8_t *)"IEND", 4), 0xae426082u); /* every PNG ends with it */
}

/* ---- PNG --------------------------------------------------------------------- */

WM_TEST(image, png_type_and_dimensions)
{
	struct img m;
	fix_png(&m, 3, 2, 8, 0, 0);
	expect_ok(&m, IMG_PNG, 3, 2);
	fix_png(&m, 640, 480, 8, 6, 1);
	expect_ok(&m, IMG_PNG, 640, 480);
	cr_assert_str_eq(image_mime(IMG_PNG), "image/png");
}

struct png_case {
	size_t off;       /* byte to change */
	uint8_t value;
	int fix_crc;      /* recompute the CRC afterwards */
	enum image_err want;
	const char *what;
};

WM_TEST(image, png_every_header_field_corrupted)
{
	static const struct png_case cases[] = {
		{0, 0x88, 0, IMG_ERR_UNKNOWN_TYPE, "signature byte 0"},
		{1, 'p', 0, IMG_ERR_UNKNOWN_TYPE, "signature byte 1"},
		{7, 0x0b, 0, IMG_ERR_UNKNOWN_TYPE, "signature byte 7"},
		{11, 14, 0, IMG_ERR_BAD_HEADER, "IHDR length 14"},
		{8, 1, 0, IMG_ERR_BAD_HEADER, "IHDR length high byte"},
		{12, 'i', 1, IMG_ERR_BAD_HEADER, "chunk type ihdr"},
		{15, 'X', 1, IMG_ERR_BAD_HEADER, "chunk type IHDX"},
		{16 + 3, 4, 0, IMG_ERR_BAD_CRC, "width changed, CRC not"},
		{16 + 7, 9, 0, IMG_ERR_BAD_CRC, "height changed, CRC not"},
		{29, 0x00, 0, IMG_ERR_BAD_CRC, "CRC byte 0"},
		{32, 0x00, 0, IMG_ERR_BAD_CRC, "CRC byte 3"},
		{16 + 8, 3, 1, IMG_ERR_BAD_HEADER, "bit depth 3"},
		{16 + 8, 0, 1, IMG_ERR_BAD_HEADER, "bit depth 0"},
		{16 + 8, 32, 1, IMG_ERR_BAD_HEADER, "bit depth 32"},
		{16 + 9, 1, 1, IMG_ERR_BAD_HEADER, "colour type 1"},
		{16 + 9, 7, 1, IMG_ERR_BAD_HEADER, "colour type 7"},
		{16 + 9, 255, 1, IMG_ERR_BAD_HEADER, "colour type 255"},
		{16 + 10, 1, 1, IMG_ERR_BAD_HEADER, "compression 1"},
		{16 + 11, 1, 1, IMG_ERR_BAD_HEADER, "filter 1"},
		{16 + 12, 2, 1, IMG_ERR_BAD_HEADER, "interlace 2"},
		{16 + 0, 0x80, 1, IMG_ERR_BAD_HEADER, "width 2^31 + 3 (over the PNG limit)"},
		{16 + 4, 0xff, 1, IMG_ERR_BAD_HEADER, "height over the PNG limit"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct img m;
		fix_png(&m, 3, 2, 8, 0, 0);
		m.b[cases[i].off] = cases[i].value;
		if (cases[i].fix_crc)
			fix_png_crc(&m);
		expect_err(&m, cases[i].want, cases[i].what);
	}
}

WM_TEST(image, png_dimension_bounds)
{
	struct img m;
	fix_png(&m, IMAGE_MAX_DIM, IMAGE_MAX_DIM, 8, 2, 0);
	expect_ok(&m, IMG_PNG, IMAGE_MAX_DIM, IMAGE_MAX_DIM);
	fix_png(&m, IMAGE_MAX_DIM + 1, 1, 8, 2, 0);
	expect_err(&m, IMG_ERR_TOO_LARGE, "width 16385");
	fix_png(&m, 1, IMAGE_MAX_DIM + 1, 8, 2, 0);
	expect_err(&m, IMG_ERR_TOO_LARGE, "height 16385");
	fix_png(&m, IMAGE_PNG_MAX_FIELD, 1, 8, 2, 0);
	expect_err(&m, IMG_ERR_TOO_LARGE, "width 2^31-1: legal PNG, over our bound");
	fix_png(&m, IMAGE_PNG_MAX_FIELD + 1u, 1, 8, 2, 0);
	expect_err(&m, IMG_ERR_BAD_HEADER, "width 2^31: not a PNG");
	fix_png(&m, 0, 5, 8, 0, 0);
	expect_err(&m, IMG_ERR_ZERO_DIMENSION, "width 0");
	fix_png(&m, 5, 0, 8, 0, 0);
	expect_err(&m, IMG_ERR_ZERO_DIMENSION, "height 0");
	fix_png(&m, 1, 1, 1, 0, 0);
	expect_ok(&m, IMG_PNG, 1, 1);
}

/* Every (colour type, bit depth) pair against the PNG spec's table 11.1. */
WM_TEST(image, png_bit_depth_per_colour_type)
{
	static const struct {
		uint8_t colour;
		uint8_t depths[5];
	} spec[] = {{0, {1, 2, 4, 8, 16}}, {2, {8, 16}}, {3, {1, 2, 4, 8}}, {4, {8, 16}}, {6, {8, 16}}};
	int accepted = 0;
	for (unsigned colour = 0; colour < 9; colour++)
		for (unsigned depth = 0; depth < 20; depth++) {
			int legal = 0;
			for (size_t i = 0; i < sizeof(spec) / sizeof(spec[0]); i++)
				for (int j = 0; j < 5; j++)
					legal |= spec[i].colour == colour && spec[i].depths[j] == depth && depth;
			struct img m;
			fix_png(&m, 2, 2, (uint8_t)depth, (uint8_t)colour, 0);
			struct image_info info;
			enum image_err e = probe(m.b, m.n, &info);
			cr_assert_eq(e, legal ? IMG_OK : IMG_ERR_BAD_HEADER, "colour %u depth %u: %s", colour, depth,
				     image_err_name(e));
			accepted += legal;
		}
	cr_assert_eq(accepted, 15);
}

/* ---- JPEG ------------------------------------------------------------------- */

WM_TEST(image, jpeg_every_frame_header_kind)
{
	/* SOF0..SOF15 except C4 (DHT), C8 (JPG), CC (DAC) */
	static const uint8_t sofs[] = {0xc0, 0xc1, 0xc2, 0xc3, 0xc5, 0xc6, 0xc7,
				       0xc9, 0xca, 0xcb, 0xcd, 0xce, 0xcf};
	for (size_t i = 0; i < sizeof(sofs); i++) {
		struct img m;
		fix_jpeg(&m, sofs[i], 800, 600, 3, 8);
		expect_ok(&m, IMG_JPEG, 800, 600);
	}
	struct img m;
	fix_jpeg(&m, 0xc0, 1, 1, 1, 12);
	expect_ok(&m, IMG_JPEG, 1, 1);
	fix_jpeg(&m, 0xc3, 7, 9, 4, 16);
	expect_ok(&m, IMG_JPEG, 7, 9);
	cr_assert_str_eq(image_mime(IMG_JPEG), "image/jpeg");
	/* markers in the SOF range that are not frame headers: a file whose only
	 * "frame" is one of them has none, and the walk reaches the scan */
	static const uint8_t not_sof[] = {0xc4, 0xc8, 0xcc};
	for (size_t i = 0; i < sizeof(not_sof); i++) {
		fix_jpeg(&m, not_sof[i], 800, 600, 3, 8);
		expect_err(&m, IMG_ERR_BAD_HEADER, "no SOFn before SOS");
	}
}

WM_TEST(image, jpeg_every_field_corrupted)
{
	enum { ABS, SOF }; /* offset from the file start, or from the frame header's length field */
	static const struct {
		int base;
		int off;
		uint8_t value;
		enum image_err want;
		const char *what;
	} cases[] = {
		{ABS, 1, 0xd9, IMG_ERR_UNKNOWN_TYPE, "SOI second byte"},
		{ABS, 0, 0x00, IMG_ERR_UNKNOWN_TYPE, "SOI first byte"},
		{ABS, 2, 0x00, IMG_ERR_BAD_HEADER, "no marker after SOI"},
		{ABS, 3, 0x00, IMG_ERR_BAD_HEADER, "stuffed 0xFF00 after SOI"},
		{ABS, 3, 0xd8, IMG_ERR_BAD_HEADER, "a second SOI"},
		{ABS, 3, 0xd9, IMG_ERR_BAD_HEADER, "EOI before the frame"},
		{ABS, 3, 0xda, IMG_ERR_BAD_HEADER, "SOS before the frame"},
		{ABS, 5, 0x00, IMG_ERR_BAD_HEADER, "APP0 length 0"},
		{ABS, 5, 0x01, IMG_ERR_BAD_HEADER, "APP0 length 1"},
		{ABS, 5, 0x14, IMG_ERR_BAD_HEADER, "APP0 length 20: the next 'marker' is inside DQT"},
		{ABS, 4, 0xff, IMG_ERR_TRUNCATED, "APP0 length past the end"},
		{SOF, 0, 0x01, IMG_ERR_TRUNCATED, "SOF length 273: past the end"},
		{SOF, 1, 7, IMG_ERR_BAD_HEADER, "SOF length 7"},
		{SOF, 1, 18, IMG_ERR_BAD_HEADER, "SOF length 18 with 3 components"},
		{SOF, 2, 0, IMG_ERR_BAD_HEADER, "precision 0"},
		{SOF, 2, 1, IMG_ERR_BAD_HEADER, "precision 1"},
		{SOF, 2, 17, IMG_ERR_BAD_HEADER, "precision 17"},
		{SOF, 7, 0, IMG_ERR_BAD_HEADER, "no components"},
		{SOF, 7, 4, IMG_ERR_BAD_HEADER, "4 components in a 3-component header"},
		{SOF, -1, 0xfe, IMG_ERR_BAD_HEADER, "SOF marker turned COM: the walk reaches DHT, then SOS"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct img m;
		fix_jpeg(&m, 0xc0, 800, 600, 3, 8);
		long off = (cases[i].base == SOF ? (long)m.field : 0) + cases[i].off;
		m.b[off] = cases[i].value;
		expect_err(&m, cases[i].want, cases[i].what);
	}
}

WM_TEST(image, jpeg_dimension_bounds)
{
	struct img m;
	fix_jpeg(&m, 0xc0, IMAGE_MAX_DIM, IMAGE_MAX_DIM, 3, 8);
	expect_ok(&m, IMG_JPEG, IMAGE_MAX_DIM, IMAGE_MAX_DIM);
	fix_jpeg(&m, 0xc0, IMAGE_MAX_DIM + 1, 10, 3, 8);
	expect_err(&m, IMG_ERR_TOO_LARGE, "width 16385");
	fix_jpeg(&m, 0xc2, 10, IMAGE_MAX_DIM + 1, 3, 8);
	expect_err(&m, IMG_ERR_TOO_LARGE, "height 16385");
	fix_jpeg(&m, 0xc0, 65535, 65535, 3, 8);
	expect_err(&m, IMG_ERR_TOO_LARGE, "65535 x 65535");
	fix_jpeg(&m, 0xc0, 0, 10, 3, 8);
	expect_err(&m, IMG_ERR_ZERO_DIMENSION, "width 0");
	fix_jpeg(&m, 0xc0, 10, 0, 3, 8);
	expect_err(&m, IMG_ERR_ZERO_DIMENSION, "height 0 (DNL)");
	struct image_info info;
	probe(m.b, m.n, &info);
	cr_assert(strstr(info.detail, "DNL"), "%s", info.detail);
}

WM_TEST(image, jpeg_walk_is_bounded)
{
	struct img m;
	/* the frame header as the last segment allowed, and one past it */
	fix_jpeg_segments(&m, IMAGE_JPEG_MAX_SEGMENTS - 1, 0);
	expect_ok(&m, IMG_JPEG, 30, 20);
	fix_jpeg_segments(&m, IMAGE_JPEG_MAX_SEGMENTS, 0);
	expect_err(&m, IMG_ERR_BAD_HEADER, "65 segments");
	/* standalone markers (RST, TEM) count as segments too */
	memset(&m, 0, sizeof(m));
	fix_put(&m, "\xff\xd8", 2);
	for (unsigned i = 0; i < IMAGE_JPEG_MAX_SEGMENTS; i++)
		fix_put(&m, "\xff\xd0", 2);
	fix_put(&m, "\xff\xc0\x00\x0b\x08\x00\x01\x00\x01\x01\x01\x11\x00", 13);
	expect_err(&m, IMG_ERR_BAD_HEADER, "64 RST markers");
	/* fill bytes: 16 accepted, 17 refused */
	fix_jpeg_segments(&m, 1, IMAGE_JPEG_MAX_FILL);
	expect_ok(&m, IMG_JPEG, 30, 20);
	fix_jpeg_segments(&m, 1, IMAGE_JPEG_MAX_FILL + 1);
	expect_err(&m, IMG_ERR_BAD_HEADER, "17 fill bytes");
}

/* ---- WebP ------------------------------------------------------------------ */

WM_TEST(image, webp_lossy_vp8)
{
	struct img m;
	fix_vp8(&m, 320, 240, FIX_VP8_TAG_OK);
	expect_ok(&m, IMG_WEBP, 320, 240);
	cr_assert_str_eq(image_mime(IMG_WEBP), "image/webp");
	/* the two scale bits above the 14-bit sizes are not part of them */
	fix_vp8(&m, 320 | 0xc000, 240 | 0x4000, FIX_VP8_TAG_OK);
	expect_ok(&m, IMG_WEBP, 320, 240);
	fix_vp8(&m, 0x3fff, 0x3fff, FIX_VP8_TAG_OK);
	expect_ok(&m, IMG_WEBP, 16383, 16383);
	fix_vp8(&m, 0, 240, FIX_VP8_TAG_OK);
	expect_err(&m, IMG_ERR_ZERO_DIMENSION, "VP8 width 0");
	fix_vp8(&m, 0x4000, 240, FIX_VP8_TAG_OK);
	expect_err(&m, IMG_ERR_ZERO_DIMENSION, "VP8 width 0 with a scale bit");
	fix_vp8(&m, 320, 0, FIX_VP8_TAG_OK);
	expect_err(&m, IMG_ERR_ZERO_DIMENSION, "VP8 height 0");
	fix_vp8(&m, 320, 240, FIX_VP8_TAG_OK | 1u);
	expect_err(&m, IMG_ERR_BAD_HEADER, "inter frame");
	fix_vp8(&m, 320, 240, FIX_VP8_TAG_OK | 4u << 1);
	expect_err(&m, IMG_ERR_BAD_HEADER, "version 4");
	fix_vp8(&m, 320, 240, FIX_VP8_TAG_OK | 3u << 1);
	expect_ok(&m, IMG_WEBP, 320, 240);
	fix_vp8(&m, 320, 240, FIX_VP8_TAG_OK & ~(1u << 4));
	expect_err(&m, IMG_ERR_BAD_HEADER, "not shown");
	fix_vp8(&m, 320, 240, (FIX_VP8_TAG_OK & 0x1f) | 30u << 5);
	expect_err(&m, IMG_ERR_BAD_HEADER, "partition as large as the chunk");
	fix_vp8(&m, 320, 240, (FIX_VP8_TAG_OK & 0x1f) | 29u << 5);
	expect_ok(&m, IMG_WEBP, 320, 240);
	for (int i = 0; i < 3; i++) {
		fix_vp8(&m, 320, 240, FIX_VP8_TAG_OK);
		m.b[m.field + 3 + i] ^= 0x01;
		expect_err(&m, IMG_ERR_BAD_HEADER, "start code");
	}
}

WM_TEST(image, webp_lossless_vp8l)
{
	struct img m;
	fix_vp8l(&m, 1, 1, 0);
	expect_ok(&m, IMG_WEBP, 1, 1);
	fix_vp8l(&m, 16384, 16384, 0); /* the format's maximum is our bound */
	expect_ok(&m, IMG_WEBP, 16384, 16384);
	fix_vp8l(&m, 123, 4567, 0);
	expect_ok(&m, IMG_WEBP, 123, 4567);
	fix_vp8l(&m, 10, 10, 1);
	expect_err(&m, IMG_ERR_BAD_HEADER, "version 1");
	fix_vp8l(&m, 10, 10, 7);
	expect_err(&m, IMG_ERR_BAD_HEADER, "version 7");
	fix_vp8l(&m, 10, 10, 0);
	m.b[m.field] = 0x2e;
	expect_err(&m, IMG_ERR_BAD_HEADER, "signature 0x2e");
}

WM_TEST(image, webp_extended_vp8x)
{
	struct img m;
	fix_vp8x(&m, 400, 300, 10);
	expect_ok(&m, IMG_WEBP, 400, 300);
	fix_vp8x(&m, IMAGE_MAX_DIM, IMAGE_MAX_DIM, 10);
	expect_ok(&m, IMG_WEBP, IMAGE_MAX_DIM, IMAGE_MAX_DIM);
	fix_vp8x(&m, IMAGE_MAX_DIM + 1, 10, 10);
	expect_err(&m, IMG_ERR_TOO_LARGE, "canvas width 16385");
	fix_vp8x(&m, 10, 1u << 24, 10);
	expect_err(&m, IMG_ERR_TOO_LARGE, "canvas height 2^24");
	fix_vp8x(&m, 400, 300, 12);
	expect_err(&m, IMG_ERR_BAD_HEADER, "VP8X chunk size 12");
	/* reserved bits are ignored, as the container spec tells readers */
	fix_vp8x(&m, 400, 300, 10);
	m.b[m.field] = 0xff;
	m.b[m.field + 1] = 0xff;
	expect_ok(&m, IMG_WEBP, 400, 300);
}

WM_TEST(image, webp_container_corrupted)
{
	struct img m;
	fix_vp8l(&m, 10, 10, 0);
	memcpy(m.b + 8, "WAVE", 4);
	expect_err(&m, IMG_ERR_UNKNOWN_TYPE, "RIFF WAVE");
	fix_vp8l(&m, 10, 10, 0);
	memcpy(m.b, "RIFX", 4);
	expect_err(&m, IMG_ERR_UNKNOWN_TYPE, "RIFX");
	fix_vp8l(&m, 10, 10, 0);
	memcpy(m.b + 12, "ALPH", 4);
	expect_err(&m, IMG_ERR_BAD_HEADER, "first chunk ALPH");
	fix_vp8l(&m, 10, 10, 0);
	memcpy(m.b + 12, "VP8l", 4);
	expect_err(&m, IMG_ERR_BAD_HEADER, "first chunk VP8l");
	fix_vp8l(&m, 10, 10, 0);
	fix_set_le32(m.b + 16, 4); /* VP8L needs 5 */
	expect_err(&m, IMG_ERR_BAD_HEADER, "chunk of 4 bytes");
	fix_vp8l(&m, 10, 10, 0);
	fix_set_le32(m.b + 16, 5);
	expect_ok(&m, IMG_WEBP, 10, 10);
	fix_vp8l(&m, 10, 10, 0);
	fix_set_le32(m.b + 4, 4 + 8 + 12 - 1); /* one byte short of the chunk */
	expect_err(&m, IMG_ERR_BAD_HEADER, "RIFF size smaller than the chunk");
	fix_set_le32(m.b + 4, 4 + 8 + 12);
	expect_ok(&m, IMG_WEBP, 10, 10);
	fix_set_le32(m.b + 16, 0xffffffffu);
	expect_err(&m, IMG_ERR_BAD_HEADER, "chunk size 2^32-1");
	fix_vp8(&m, 10, 10, FIX_VP8_TAG_OK);
	fix_set_le32(m.b + 16, 9); /* VP8 needs 10 */
	expect_err(&m, IMG_ERR_BAD_HEADER, "VP8 chunk of 9 bytes");
}

/* ---- every prefix, unknown types ---------------------------------------------- */

WM_TEST(image, every_prefix_of_a_header_is_truncated)
{
	struct img files[6];
	fix_png(&files[0], 3, 2, 8, 0, 0);
	fix_jpeg(&files[1], 0xc2, 800, 600, 3, 8);
	fix_vp8(&files[2], 320, 240, FIX_VP8_TAG_OK);
	fix_vp8l(&files[3], 5, 6, 0);
	fix_vp8x(&files[4], 400, 300, 10);
	fix_jpeg_segments(&files[5], 3, 2);
	for (int f = 0; f < 6; f++) {
		const struct img *m = &files[f];
		cr_assert_gt(m->head_end, 0);
		for (size_t n = 0; n <= m->n; n++) {
			struct image_info info;
			enum image_err e = probe(m->b, n, &info);
			if (n < m->head_end)
				cr_assert_eq(e, IMG_ERR_TRUNCATED, "file %d, %zu of %zu bytes: %s (%s)", f, n,
					     m->head_end, image_err_name(e), info.detail);
			else
				cr_assert_eq(e, IMG_OK, "file %d, %zu bytes: %s (%s)", f, n, image_err_name(e),
					     info.detail);
		}
	}
}

/* Files written by a real encoder (the 1x1 images of browsers' WebP feature
 * tests): lossless, lossy, extended with an alpha chunk. */
WM_TEST(image, webp_from_a_real_encoder)
{
	struct image_info info;
	cr_assert_eq(probe(fix_webp_lossless_1x1, fix_webp_lossless_1x1_len, &info), IMG_OK);
	cr_assert(info.type == IMG_WEBP && info.width == 1 && info.height == 1);
	cr_assert_eq(probe(fix_webp_lossy_1x1, fix_webp_lossy_1x1_len, &info), IMG_OK);
	cr_assert(info.type == IMG_WEBP && info.width == 1 && info.height == 1);
	cr_assert_eq(probe(fix_webp_alpha_1x1, fix_webp_alpha_1x1_len, &info), IMG_OK);
	cr_assert(info.type == IMG_WEBP && info.width == 1 && info.height == 1);
}

WM_TEST(image, other_formats_are_unknown)
{
	static const struct {
		const char *bytes;
		size_t n;
		enum image_err want;
	} cases[] = {
		{"GIF89a\x01\x00\x01\x00\x00\x00\x00", 13, IMG_ERR_UNKNOWN_TYPE},
		{"BM\x3a\x00\x00\x00\x00\x00\x00\x00\x36\x00", 12, IMG_ERR_UNKNOWN_TYPE},
		{"%PDF-1.7\n", 9, IMG_ERR_UNKNOWN_TYPE},
		{"\x00\x00\x00\x0c" "ftypavif", 12, IMG_ERR_UNKNOWN_TYPE},
		{"II*\x00\x08\x00\x00\x00", 8, IMG_ERR_UNKNOWN_TYPE},
		{"<svg xmlns=\"http://www.w3.org/2000/svg\"/>", 41, IMG_ERR_UNKNOWN_TYPE},
		{"{\"mime\":\"image/png\"}", 20, IMG_ERR_UNKNOWN_TYPE},
		{"\x89PNX", 4, IMG_ERR_UNKNOWN_TYPE},
		{"\xff\xd9", 2, IMG_ERR_UNKNOWN_TYPE},
		{"", 0, IMG_ERR_TRUNCATED},
		{"\x89PN", 3, IMG_ERR_TRUNCATED},
		{"\xff", 1, IMG_ERR_TRUNCATED},
		{"RIFF\x10\x00\x00\x00WE", 10, IMG_ERR_TRUNCATED},
		{"RIFF\x10\x00\x00\x00WA", 10, IMG_ERR_UNKNOWN_TYPE},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct image_info info;
		enum image_err e = probe((const uint8_t *)cases[i].bytes, cases[i].n, &info);
		cr_assert_eq(e, cases[i].want, "case %zu: %s", i, image_err_name(e));
		cr_assert_eq(info.type, IMG_NONE, "case %zu", i);
	}
	struct image_info info;
	cr_assert_eq(image_probe(NULL, 0, &info), IMG_ERR_TRUNCATED);
}

WM_TEST(image, mime_names_and_error_names)
{
	cr_assert_eq(image_type_from_mime("image/png", 9), IMG_PNG);
	cr_assert_eq(image_type_from_mime("IMAGE/JPEG", 10), IMG_JPEG);
	cr_assert_eq(image_type_from_mime("image/webp", 10), IMG_WEBP);
	cr_assert_eq(image_type_from_mime("image/webpx", 11), IMG_NONE);
	cr_assert_eq(image_type_from_mime("image/jpg", 9), IMG_NONE);
	cr_assert_eq(image_type_from_mime("image/gif", 9), IMG_NONE);
	cr_assert_eq(image_type_from_mime("image/png", 8), IMG_NONE);
	cr_assert_eq(image_type_from_mime("", 0), IMG_NONE);
	cr_assert_null(image_mime(IMG_NONE));
	cr_assert_null(image_mime(IMG_TYPE_COUNT_));
	for (int e = 0; e < IMG_ERR_COUNT_; e++)
		cr_assert_gt(strlen(image_err_name((enum image_err)e)), 1);
	cr_assert_str_eq(image_err_name(IMG_ERR_BAD_CRC), "bad_crc");
	cr_assert_str_eq(image_err_name(IMG_ERR_COUNT_), "unknown");
}

/* Random byte changes to valid files: never an out-of-bounds read (ASan),
 * and whatever is accepted has dimensions within the bounds. */
WM_TEST(image, random_mutations_stay_in_bounds)
{
	struct img files[5];
	fix_png(&files[0], 3, 2, 8, 0, 0);
	fix_jpeg(&files[1], 0xc0, 800, 600, 3, 8);
	fix_vp8(&files[2], 320, 240, FIX_VP8_TAG_OK);
	fix_vp8l(&files[3], 5, 6, 0);
	fix_vp8x(&files[4], 400, 300, 10);
	uint64_t s = 0x9e3779b97f4a7c15ull;
	unsigned ok = 0, refused = 0;
	for (int iter = 0; iter < 20000; iter++) {
		struct img m = files[iter % 5];
		int flips = 1 + (int)(s % 4);
		for (int k = 0; k < flips; k++) {
			s ^= s << 13, s ^= s >> 7, s ^= s << 17;
			m.b[s % m.n] = (uint8_t)(s >> 24);
		}
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		size_t n = s % 3 ? m.n : (size_t)(s >> 32) % (m.n + 1);
		struct image_info info;
		enum image_err e = probe(m.b, n, &info);
		cr_assert_lt((unsigned)e, IMG_ERR_COUNT_);
		if (e == IMG_OK) {
			cr_assert(info.width >= 1 && info.width <= IMAGE_MAX_DIM && info.height >= 1 &&
				  info.height <= IMAGE_MAX_DIM);
			cr_assert_neq(info.type, IMG_NONE);
			ok++;
		} else {
			refused++;
		}
	}
	cr_assert_gt(ok, 100);
	cr_assert_gt(refused, 100);
}
