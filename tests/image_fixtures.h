/*
 * image_fixtures.h -- tiny image files built byte by byte for the image
 * reader's unit tests and the media integration tests.  Built from the
 * format specifications, independently of engine/catalogue/image.c: the PNG CRC-32
 * and Adler-32 are computed here, small PNGs carry a real (stored-deflate)
 * IDAT and small JPEGs a real Huffman-coded scan, so the files decode in
 * an ordinary viewer.
 */
#ifndef WM_IMAGE_FIXTURES_H
#define WM_IMAGE_FIXTURES_H

#include <stddef.h>
#include <stdint.h>

#define FIX_IMG_MAX 8192

struct img {
	uint8_t b[FIX_IMG_MAX];
	size_t n;
	size_t head_end; /* bytes a header reader needs: the end of the header it parses */
	size_t field;    /* offset of the interesting header (IHDR data, SOF length, chunk payload) */
};

/* Append bytes (asserts the bound). */
void fix_put(struct img *m, const void *p, size_t n);
void fix_put8(struct img *m, unsigned v);
void fix_put_be16(struct img *m, unsigned v);
void fix_put_le16(struct img *m, unsigned v);
void fix_set_be32(uint8_t *p, uint32_t v);
void fix_set_le32(uint8_t *p, uint32_t v);

/* CRC-32 of PNG (ISO 3309), table-driven. */
uint32_t fix_crc32(const uint8_t *p, size_t n);

/* PNG: signature, IHDR (field = its data), IDAT, IEND.  Small images get
 * their real zero-filled scanlines; large ones an empty deflate stream. */
void fix_png(struct img *m, uint32_t w, uint32_t h, uint8_t depth, uint8_t colour, uint8_t interlace);
/* Recompute the IHDR CRC after changing its fields. */
void fix_png_crc(struct img *m);

/* JPEG: SOI, APP0 JFIF, DQT, frame header `sof` (field = its length),
 * DHT (DC and AC), SOS, a flat grey scan (DC 0 + EOB per block), EOI. */
void fix_jpeg(struct img *m, uint8_t sof, unsigned w, unsigned h, uint8_t nf, uint8_t precision);
/* JPEG with n APP1 segments and `fill` extra 0xFF bytes before a
 * one-component frame header of 30 x 20 (field = its length). */
void fix_jpeg_segments(struct img *m, unsigned n, unsigned fill);

/* WebP: RIFF/WEBP with one chunk; riff size set to the real size. */
void fix_webp(struct img *m, const char *fourcc, const uint8_t *payload, size_t plen, uint32_t csize);
/* key frame, version 0, shown, first partition 10 bytes */
#define FIX_VP8_TAG_OK ((0u) | (0u << 1) | (1u << 4) | (10u << 5))
void fix_vp8(struct img *m, unsigned w, unsigned h, uint32_t tag);
void fix_vp8l(struct img *m, unsigned w, unsigned h, unsigned version);
/* VP8X canvas w x h; with csize 10 a VP8L image chunk follows. */
void fix_vp8x(struct img *m, uint32_t w, uint32_t h, uint32_t csize);

/* Real 1x1 WebP files as published encoders write them (lossless, lossy,
 * extended with alpha). */
extern const uint8_t fix_webp_lossless_1x1[];
extern const size_t fix_webp_lossless_1x1_len;
extern const uint8_t fix_webp_lossy_1x1[];
extern const size_t fix_webp_lossy_1x1_len;
extern const uint8_t fix_webp_alpha_1x1[];
extern const size_t fix_webp_alpha_1x1_len;

#endif
