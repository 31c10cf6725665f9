/*
 * image.c -- image type and dimensions from the file header (see image.h).
 *
 * Why a reader of our own: an upload is untrusted bytes, and all the
 * service needs from it is "which of three formats is it really" and "how
 * big is it".  Both are in the first few dozen bytes; a full decoder (and
 * its attack surface) is not needed for that, and a header reader this
 * small can be fuzzed exhaustively.  The declared type is never trusted:
 * the magic bytes decide, and the caller compares (a "lying header" is a
 * declared type that disagrees with them).
 *
 * Each format is a signature (with a mask for the RIFF size field of WebP)
 * plus a parser that checks every header field it reads:
 *   PNG   signature, then the IHDR chunk: length 13, type, CRC-32, width and
 *         height (1..2^31-1 by the spec), bit depth allowed for the colour
 *         type, compression 0, filter 0, interlace 0/1.
 *   JPEG  SOI, then a bounded walk over marker segments (length >= 2, fill
 *         bytes bounded) to the first SOFn frame header: precision 2..16,
 *         component count consistent with the segment length, height (0
 *         means "given later by DNL", which a header reader cannot use).
 *   WebP  RIFF container with form type WEBP; the first chunk is VP8 (key
 *         frame tag, version, show flag, partition size, start code
 *         9d 01 2a, 14-bit dimensions), VP8L (signature 0x2f, 14-bit
 *         dimensions minus one, version 0) or VP8X (exactly 10 bytes,
 *         24-bit canvas dimensions minus one); chunk sizes must fit the
 *         RIFF size.
 * Nothing is allocated and nothing past `len` is read: every read is
 * preceded by a length check that answers IMG_ERR_TRUNCATED.
 */
#include "engine/catalogue/image.h"

#include <string.h>
#include <strings.h>

#define XSTR(x) STR(x)
#define STR(x) #x

static const char *const mimes[IMG_TYPE_COUNT_] = {NULL, "image/png", "image/jpeg", "image/webp"};

static const char *const err_names[IMG_ERR_COUNT_] = {
	"ok", "unknown_type", "truncated", "bad_header", "bad_crc", "zero_dimension", "too_large",
};

/* ---- byte readers -------------------------------------------------------- */

static uint32_t be16(const uint8_t *p) { return (uint32_t)p[0] << 8 | p[1]; }
static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static uint32_t le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t le24(const uint8_t *p) { return le16(p) | (uint32_t)p[2] << 16; }
static uint32_t le32(const uint8_t *p) { return le24(p) | (uint32_t)p[3] << 24; }

/* ---- shared checks ------------------------------------------------------- */

static enum image_err fail(struct image_info *out, enum image_err e, const char *detail)
{
	out->detail = detail;
	return e;
}

/* Both dimensions in 1..IMAGE_MAX_DIM: store them and succeed. */
static enum image_err accept_dims(struct image_info *out, uint32_t w, uint32_t h)
{
	if (w == 0)
		return fail(out, IMG_ERR_ZERO_DIMENSION, "width is 0");
	if (h == 0)
		return fail(out, IMG_ERR_ZERO_DIMENSION, "height is 0");
	if (w > IMAGE_MAX_DIM)
		return fail(out, IMG_ERR_TOO_LARGE, "width is above " XSTR(IMAGE_MAX_DIM) " pixels");
	if (h > IMAGE_MAX_DIM)
		return fail(out, IMG_ERR_TOO_LARGE, "height is above " XSTR(IMAGE_MAX_DIM) " pixels");
	out->width = w;
	out->height = h;
	out->detail = "";
	return IMG_OK;
}

/* ---- PNG ------------------------------------------------------------------ */

#define PNG_SIG_LEN 8u
#define PNG_IHDR_LEN 13u
#define PNG_HEAD_LEN (PNG_SIG_LEN + 8u + PNG_IHDR_LEN + 4u) /* sig, length+type, data, CRC */

/* CRC-32 as PNG defines it (ISO 3309, reflected 0xEDB88320), bitwise: the
 * header is 17 bytes, a table would be larger than the work. */
static uint32_t png_crc(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
	}
	return c ^ 0xffffffffu;
}

/* Allowed bit depths per colour type, as bit masks (PNG spec 11.2.2). */
#define D(x) (1u << (x))
static const uint32_t png_depths[7] = {
	[0] = D(1) | D(2) | D(4) | D(8) | D(16), /* greyscale */
	[2] = D(8) | D(16),                      /* truecolour */
	[3] = D(1) | D(2) | D(4) | D(8),         /* indexed */
	[4] = D(8) | D(16),                      /* greyscale + alpha */
	[6] = D(8) | D(16),                      /* truecolour + alpha */
};
#undef D

/* Signature already matched: check the IHDR chunk that must follow it. */
static enum image_err png_parse(const uint8_t *p, size_t len, struct image_info *out)
{
	if (len < PNG_HEAD_LEN)
		return fail(out, IMG_ERR_TRUNCATED, "PNG: the bytes end inside the IHDR chunk");
	const uint8_t *chunk = p + PNG_SIG_LEN;
	if (be32(chunk) != PNG_IHDR_LEN)
		return fail(out, IMG_ERR_BAD_HEADER, "PNG: IHDR chunk length is not 13");
	if (memcmp(chunk + 4, "IHDR", 4))
		return fail(out, IMG_ERR_BAD_HEADER, "PNG: the first chunk is not IHDR");
	const uint8_t *d = chunk + 8;
	if (png_crc(chunk + 4, 4 + PNG_IHDR_LEN) != be32(d + PNG_IHDR_LEN))
		return fail(out, IMG_ERR_BAD_CRC, "PNG: IHDR CRC-32 does not match its contents");
	uint32_t w = be32(d), h = be32(d + 4);
	uint8_t depth = d[8], colour = d[9];
	if (w > IMAGE_PNG_MAX_FIELD || h > IMAGE_PNG_MAX_FIELD)
		return fail(out, IMG_ERR_BAD_HEADER, "PNG: width or height above 2^31-1");
	if (colour >= sizeof(png_depths) / sizeof(png_depths[0]) || !png_depths[colour])
		return fail(out, IMG_ERR_BAD_HEADER, "PNG: unknown colour type");
	if (depth > 16 || !(png_depths[colour] & (1u << depth)))
		return fail(out, IMG_ERR_BAD_HEADER, "PNG: bit depth not allowed for the colour type");
	if (d[10] != 0)
		return fail(out, IMG_ERR_BAD_HEADER, "PNG: compression method is not 0");
	if (d[11] != 0)
		return fail(out, IMG_ERR_BAD_HEADER, "PNG: filter method is not 0");
	if (d[12] > 1)
		return fail(out, IMG_ERR_BAD_HEADER, "PNG: interlace method is not 0 or 1");
	return accept_dims(out, w, h);
}

/* ---- JPEG ----------------------------------------------------------------- */

#define JPEG_SOF_MIN 8u /* length(2) P(1) Y(2) X(2) Nf(1), then 3 bytes per component */

/* SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC), which share the range. */
static int jpeg_is_sof(uint8_t m)
{
	return m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc;
}

/* Markers that stand alone (no length field): TEM and RST0..7. */
static int jpeg_standalone(uint8_t m) { return m == 0x01 || (m >= 0xd0 && m <= 0xd7); }

/* The frame header at p[0..len) (starting at its length field). */
static enum image_err jpeg_frame(const uint8_t *p, size_t len, struct image_info *out)
{
	uint32_t seglen = be16(p);
	if (seglen < JPEG_SOF_MIN)
		return fail(out, IMG_ERR_BAD_HEADER, "JPEG: frame header shorter than 8 bytes");
	if (len < seglen)
		return fail(out, IMG_ERR_TRUNCATED, "JPEG: the bytes end inside the frame header");
	uint8_t precision = p[2], nf = p[7];
	uint32_t h = be16(p + 3), w = be16(p + 5);
	if (precision < 2 || precision > 16)
		return fail(out, IMG_ERR_BAD_HEADER, "JPEG: sample precision is not 2..16 bits");
	if (nf == 0)
		return fail(out, IMG_ERR_BAD_HEADER, "JPEG: frame has no components");
	if (seglen != JPEG_SOF_MIN + 3u * nf)
		return fail(out, IMG_ERR_BAD_HEADER, "JPEG: frame header length does not match its component count");
	if (h == 0 && w != 0)
		return fail(out, IMG_ERR_ZERO_DIMENSION,
			    "JPEG: height is 0 (defined later by a DNL marker, not readable from the header)");
	return accept_dims(out, w, h);
}

/* SOI already matched: walk marker segments to the first frame header. */
static enum image_err jpeg_parse(const uint8_t *p, size_t len, struct image_info *out)
{
	size_t i = 2;
	for (unsigned segs = 0;; segs++) {
		if (segs >= IMAGE_JPEG_MAX_SEGMENTS)
			return fail(out, IMG_ERR_BAD_HEADER,
				    "JPEG: more than " XSTR(IMAGE_JPEG_MAX_SEGMENTS) " segments before the frame header");
		if (i >= len)
			return fail(out, IMG_ERR_TRUNCATED, "JPEG: the bytes end before the frame header");
		if (p[i] != 0xff)
			return fail(out, IMG_ERR_BAD_HEADER, "JPEG: expected a marker (0xFF) between segments");
		size_t ff = 0;
		while (i < len && p[i] == 0xff) {
			if (++ff > IMAGE_JPEG_MAX_FILL + 1)
				return fail(out, IMG_ERR_BAD_HEADER,
					    "JPEG: more than " XSTR(IMAGE_JPEG_MAX_FILL) " fill bytes before a marker");
			i++;
		}
		if (i >= len)
			return fail(out, IMG_ERR_TRUNCATED, "JPEG: the bytes end inside a marker");
		uint8_t m = p[i++];
		if (m == 0x00)
			return fail(out, IMG_ERR_BAD_HEADER, "JPEG: stuffed byte 0xFF00 outside entropy-coded data");
		if (jpeg_standalone(m))
			continue;
		if (m == 0xd8)
			return fail(out, IMG_ERR_BAD_HEADER, "JPEG: a second SOI marker before the frame header");
		if (m == 0xd9)
			return fail(out, IMG_ERR_BAD_HEADER, "JPEG: EOI before any frame header");
		if (m == 0xda)
			return fail(out, IMG_ERR_BAD_HEADER, "JPEG: scan (SOS) before the frame header");
		if (len - i < 2)
			return fail(out, IMG_ERR_TRUNCATED, "JPEG: the bytes end inside a segment length");
		if (jpeg_is_sof(m))
			return jpeg_frame(p + i, len - i, out);
		uint32_t seglen = be16(p + i);
		if (seglen < 2)
			return fail(out, IMG_ERR_BAD_HEADER, "JPEG: segment length below 2");
		if (len - i < seglen)
			return fail(out, IMG_ERR_TRUNCATED, "JPEG: the bytes end inside a segment");
		i += seglen;
	}
}

/* ---- WebP ----------------------------------------------------------------- */

#define RIFF_HEAD_LEN 12u  /* "RIFF" size "WEBP" */
#define CHUNK_HEAD_LEN 8u  /* fourcc size */
#define VP8_HEAD_LEN 10u   /* frame tag(3) start code(3) width(2) height(2) */
#define VP8L_HEAD_LEN 5u   /* signature(1) packed dimensions(4) */
#define VP8X_LEN 10u       /* flags(1) reserved(3) canvas w-1(3) h-1(3) */
#define VP8_DIM_MASK 0x3fffu
#define VP8L_SIGNATURE 0x2fu

/* Lossy bitstream: frame tag and key-frame header (RFC 6386 9.1). */
static enum image_err webp_vp8(const uint8_t *p, uint32_t csize, struct image_info *out)
{
	uint32_t tag = le24(p);
	if (tag & 1u)
		return fail(out, IMG_ERR_BAD_HEADER, "WebP VP8: frame is not a key frame");
	if (((tag >> 1) & 7u) > 3u)
		return fail(out, IMG_ERR_BAD_HEADER, "WebP VP8: version above 3");
	if (!((tag >> 4) & 1u))
		return fail(out, IMG_ERR_BAD_HEADER, "WebP VP8: frame is not marked to be shown");
	if ((tag >> 5) >= csize)
		return fail(out, IMG_ERR_BAD_HEADER, "WebP VP8: first partition larger than the chunk");
	if (p[3] != 0x9d || p[4] != 0x01 || p[5] != 0x2a)
		return fail(out, IMG_ERR_BAD_HEADER, "WebP VP8: start code 9d 01 2a missing");
	return accept_dims(out, le16(p + 6) & VP8_DIM_MASK, le16(p + 8) & VP8_DIM_MASK);
}

/* Lossless bitstream header: signature, 14-bit sizes minus one, version. */
static enum image_err webp_vp8l(const uint8_t *p, uint32_t csize, struct image_info *out)
{
	(void)csize;
	if (p[0] != VP8L_SIGNATURE)
		return fail(out, IMG_ERR_BAD_HEADER, "WebP VP8L: signature byte is not 0x2f");
	uint32_t bits = le32(p + 1);
	if (bits >> 29)
		return fail(out, IMG_ERR_BAD_HEADER, "WebP VP8L: version is not 0");
	return accept_dims(out, (bits & VP8_DIM_MASK) + 1, ((bits >> 14) & VP8_DIM_MASK) + 1);
}

/* Extended format: the canvas size (the flags' reserved bits are ignored,
 * as the container spec tells readers to). */
static enum image_err webp_vp8x(const uint8_t *p, uint32_t csize, struct image_info *out)
{
	if (csize != VP8X_LEN)
		return fail(out, IMG_ERR_BAD_HEADER, "WebP VP8X: chunk size is not 10");
	return accept_dims(out, le24(p + 4) + 1, le24(p + 7) + 1);
}

struct webp_chunk {
	char fourcc[5];
	uint32_t min_len;      /* payload bytes the parser reads */
	enum image_err (*parse)(const uint8_t *p, uint32_t csize, struct image_info *out);
};

static const struct webp_chunk webp_chunks[] = {
	{"VP8 ", VP8_HEAD_LEN, webp_vp8},
	{"VP8L", VP8L_HEAD_LEN, webp_vp8l},
	{"VP8X", VP8X_LEN, webp_vp8x},
};

/* "RIFF" .... "WEBP" already matched: the first chunk must be an image. */
static enum image_err webp_parse(const uint8_t *p, size_t len, struct image_info *out)
{
	if (len < RIFF_HEAD_LEN + CHUNK_HEAD_LEN)
		return fail(out, IMG_ERR_TRUNCATED, "WebP: the bytes end inside the first chunk header");
	uint32_t riff = le32(p + 4);
	const uint8_t *ch = p + RIFF_HEAD_LEN;
	uint32_t csize = le32(ch + 4);
	const struct webp_chunk *k = NULL;
	for (size_t i = 0; i < sizeof(webp_chunks) / sizeof(webp_chunks[0]); i++)
		if (!memcmp(ch, webp_chunks[i].fourcc, 4))
			k = &webp_chunks[i];
	if (!k)
		return fail(out, IMG_ERR_BAD_HEADER, "WebP: the first chunk is not VP8, VP8L or VP8X");
	if (csize < k->min_len)
		return fail(out, IMG_ERR_BAD_HEADER, "WebP: the first chunk is too small for its header");
	/* riff counts from offset 8: "WEBP", then the chunk header and payload */
	if ((uint64_t)riff < 4u + CHUNK_HEAD_LEN + (uint64_t)csize)
		return fail(out, IMG_ERR_BAD_HEADER, "WebP: the first chunk is larger than the RIFF size");
	if (len - (RIFF_HEAD_LEN + CHUNK_HEAD_LEN) < k->min_len)
		return fail(out, IMG_ERR_TRUNCATED, "WebP: the bytes end inside the bitstream header");
	return k->parse(ch + CHUNK_HEAD_LEN, csize, out);
}

/* ---- dispatch ------------------------------------------------------------- */

struct magic {
	enum image_type type;
	const char *sig;       /* bytes to match after masking */
	const char *mask;      /* 0xff = must match, 0x00 = any byte */
	size_t len;
	enum image_err (*parse)(const uint8_t *p, size_t len, struct image_info *out);
};

static const struct magic magics[] = {
	{IMG_PNG, "\x89PNG\r\n\x1a\n", "\xff\xff\xff\xff\xff\xff\xff\xff", PNG_SIG_LEN, png_parse},
	{IMG_JPEG, "\xff\xd8", "\xff\xff", 2, jpeg_parse},
	{IMG_WEBP, "RIFF\0\0\0\0WEBP", "\xff\xff\xff\xff\0\0\0\0\xff\xff\xff\xff", RIFF_HEAD_LEN, webp_parse},
};

enum image_err image_probe(const void *data, size_t len, struct image_info *out)
{
	const uint8_t *p = data;
	out->type = IMG_NONE;
	out->width = out->height = 0;
	out->detail = "";
	int prefix = 0;
	for (size_t m = 0; m < sizeof(magics) / sizeof(magics[0]); m++) {
		const struct magic *g = &magics[m];
		size_t n = len < g->len ? len : g->len, k = 0;
		while (k < n && (p[k] & (uint8_t)g->mask[k]) == (uint8_t)g->sig[k])
			k++;
		if (k < n)
			continue;
		if (len < g->len) {
			prefix = 1;
			continue;
		}
		out->type = g->type;
		return g->parse(p, len, out);
	}
	if (prefix)
		return fail(out, IMG_ERR_TRUNCATED, "the bytes end inside a file signature");
	return fail(out, IMG_ERR_UNKNOWN_TYPE, "not a PNG, JPEG or WebP file (magic bytes)");
}

const char *image_mime(enum image_type t)
{
	return (unsigned)t < IMG_TYPE_COUNT_ ? mimes[t] : NULL;
}

enum image_type image_type_from_mime(const char *mime, size_t len)
{
	for (int t = IMG_NONE + 1; t < IMG_TYPE_COUNT_; t++)
		if (strlen(mimes[t]) == len && strncasecmp(mimes[t], mime, len) == 0)
			return (enum image_type)t;
	return IMG_NONE;
}

const char *image_err_name(enum image_err e)
{
	return (unsigned)e < IMG_ERR_COUNT_ ? err_names[e] : "unknown";
}
