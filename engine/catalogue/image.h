/*
 * image.h -- identify an uploaded image and read its dimensions from the
 * file header alone (implementation and the why in image.c).
 *
 * Accepted formats: PNG, JPEG (baseline, extended, progressive, lossless:
 * every SOFn frame header), WebP (lossy VP8, lossless VP8L, extended VP8X).
 * Pure and allocation-free: the reader only looks at the bytes it is given
 * and never reads past `len`.
 */
#ifndef WM_IMAGE_H
#define WM_IMAGE_H

#include <stddef.h>
#include <stdint.h>

/* Largest width or height accepted, in pixels (a label photo at 300 dpi on
 * an A3 sheet is under 5000; the WebP VP8L format's own limit is 16384). */
#define IMAGE_MAX_DIM 16384
/* JPEG: most marker segments walked before the frame header (SOFn) must
 * have been found; real files carry a handful of APPn/DQT/DHT segments. */
#define IMAGE_JPEG_MAX_SEGMENTS 64
/* JPEG: most 0xFF fill bytes accepted before one marker. */
#define IMAGE_JPEG_MAX_FILL 16
/* PNG spec: width and height are at most 2^31 - 1. */
#define IMAGE_PNG_MAX_FIELD 0x7fffffffu

enum image_type { IMG_NONE = 0, IMG_PNG, IMG_JPEG, IMG_WEBP, IMG_TYPE_COUNT_ };

enum image_err {
	IMG_OK = 0,
	IMG_ERR_UNKNOWN_TYPE,    /* magic bytes of no accepted format */
	IMG_ERR_TRUNCATED,       /* the bytes end before the header does */
	IMG_ERR_BAD_HEADER,      /* a header field breaks the format's rules */
	IMG_ERR_BAD_CRC,         /* PNG: the IHDR chunk's CRC does not match */
	IMG_ERR_ZERO_DIMENSION,  /* width or height is 0 (or not in the header) */
	IMG_ERR_TOO_LARGE,       /* width or height above IMAGE_MAX_DIM */
	IMG_ERR_COUNT_
};

struct image_info {
	enum image_type type;    /* set as soon as the magic bytes say which format */
	uint32_t width, height;  /* valid only when image_probe returned IMG_OK */
	const char *detail;      /* static text naming the field that failed ("" on success) */
};

/*
 * Identify the image in data[0..len) and read its dimensions.  Returns
 * IMG_OK with out filled, or the error with out->type (IMG_NONE when the
 * format is unknown) and out->detail saying what was wrong.  Bytes that are
 * a proper prefix of an accepted signature (including none) are
 * IMG_ERR_TRUNCATED, other unrecognised bytes IMG_ERR_UNKNOWN_TYPE.
 */
enum image_err image_probe(const void *data, size_t len, struct image_info *out);

/* "image/png", "image/jpeg", "image/webp"; NULL for IMG_NONE or out of range. */
const char *image_mime(enum image_type t);
/* The type a mime string names (exact, case-insensitive, no parameters);
 * IMG_NONE if it is not an accepted one. */
enum image_type image_type_from_mime(const char *mime, size_t len);
/* Stable machine name of an error ("truncated", "bad_header", ...). */
const char *image_err_name(enum image_err e);

#endif
