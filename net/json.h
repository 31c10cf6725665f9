/*
 * json.h -- JSON parser that keeps the exact text of numbers.
 *
 * Why our own parser: money must never pass through binary floating point
 * (DESIGN.md section 6), and both jansson and cJSON turn "12.30" into a
 * double.  This parser stores every number as the exact text it had in the
 * input (validated against the RFC 8259 grammar) and offers exact
 * conversions to int64 and to fixed-point decimals.
 *
 * It is also the first thing untrusted bytes meet, so it is strict and
 * bounded: total size, nesting depth, string length and member/element
 * counts are limited; duplicate object keys are rejected; invalid UTF-8,
 * unescaped control characters, lone surrogates, leading zeros, trailing
 * garbage and the like are errors, each reported with its byte offset,
 * line and column.
 *
 * Memory: a parse produces a struct json_doc that owns every value, string
 * and number text in one arena; json_doc_free() releases it all.  Values
 * point into the arena, never into the caller's input buffer.
 */
#ifndef WM_JSON_H
#define WM_JSON_H

#include <stddef.h>
#include <stdint.h>

enum json_type {
	JSON_NULL,
	JSON_FALSE,
	JSON_TRUE,
	JSON_NUMBER,
	JSON_STRING,
	JSON_ARRAY,
	JSON_OBJECT,
};

struct json_member;

struct json_value {
	enum json_type type;
	/* STRING: decoded byte length (UTF-8, may contain NUL from \u0000);
	 * NUMBER: length of the number text;
	 * ARRAY: element count; OBJECT: member count. */
	uint32_t len;
	union {
		const char *str;                 /* STRING: decoded, NUL-terminated */
		const char *num;                 /* NUMBER: exact input text, NUL-terminated */
		struct json_value *items;        /* ARRAY: len elements */
		struct json_member *members;     /* OBJECT: len members, input order */
	} u;
};

struct json_member {
	const char *key;   /* decoded, NUL-terminated */
	uint32_t key_len;
	struct json_value value;
};

/* Bounds.  A zero field means "use the default" given beside it. */
struct json_limits {
	size_t max_bytes;      /* input size; default 1 MiB */
	uint32_t max_depth;    /* nesting of arrays/objects; default 32 */
	uint32_t max_string;   /* decoded bytes of one string or key; default 64 KiB */
	uint32_t max_members;  /* members of one object / elements of one array; default 10000 */
	uint32_t max_number;   /* characters of one number; default 64 */
};

#define JSON_DEFAULT_MAX_BYTES   ((size_t)1 << 20)
#define JSON_DEFAULT_MAX_DEPTH   32u
#define JSON_DEFAULT_MAX_STRING  (64u * 1024u)
#define JSON_DEFAULT_MAX_MEMBERS 10000u
#define JSON_DEFAULT_MAX_NUMBER  64u

struct json_error {
	size_t offset;     /* byte offset of the offending byte (0-based) */
	uint32_t line;     /* 1-based */
	uint32_t column;   /* 1-based, in bytes */
	int too_large;     /* 1 when the failure is a size/depth/count bound */
	char msg[128];     /* human text, e.g. "duplicate key \"name\"" */
};

struct json_doc;

/*
 * Parse `len` bytes of `text` (need not be NUL-terminated) as one JSON value
 * surrounded by optional whitespace.  `lim` may be NULL for the defaults.
 * Returns a document, or NULL with *err filled (err may be NULL).  Never
 * reads outside [text, text+len).
 */
struct json_doc *json_parse(const char *text, size_t len,
			    const struct json_limits *lim, struct json_error *err);

/*
 * Parse a document this process wrote itself (with net/jsonw.h: valid by
 * construction, as fuzz_json checks), building only the top-level members
 * whose keys are in `keep` (NULL-terminated); the value of any other
 * top-level member is stepped over without being built or validated, and
 * once every listed member is built the rest of the text is not read
 * (members after it are not in the object).  For
 * a table's decoder on the live path (engine/storage/table.c): most of a
 * large document is never read there.  A skipped member is found by
 * json_get as absent (test builds abort: a decoder read a key its list
 * does not name).  Input from anywhere else goes through json_parse.
 * Never reads outside text[0..len); malformed text fails like json_parse.
 */
struct json_doc *json_parse_keep(const char *text, size_t len, const char *const *keep,
				 struct json_error *err);

/* The root value of a parsed document (never NULL for a live doc). */
const struct json_value *json_root(const struct json_doc *doc);

/* Release a document and everything in it.  NULL is a no-op. */
void json_doc_free(struct json_doc *doc);

/* Object lookup by key (linear; objects here are small).  NULL if `obj` is
 * not an object or has no such key. */
const struct json_value *json_get(const struct json_value *obj, const char *key);

/*
 * The first top-level member `key` of the JSON object in text[0..len),
 * when its value is a string without escapes: *out points at its bytes
 * inside text, *out_len is their count.  0 found; -1 not found, not such
 * a string, or text not shaped as expected.  A scan for text this process
 * wrote (a response body), not a validation: it never reads outside
 * text[0..len) but does not check the rest of the grammar, so untrusted
 * input still goes through json_parse.
 */
int json_scan_top_string(const char *text, size_t len, const char *key, const char **out, size_t *out_len);

/*
 * Exact number conversions.  Each returns 0 on success, -1 when the value
 * is not a number or does not fit exactly:
 *  json_to_int64: integer text only ("12", "-3"; "1.0" and "1e2" fail),
 *                 within int64.
 *  json_to_fixed: decimal to fixed point with `scale` fractional digits:
 *                 "12.3" at scale 2 -> 1230.  More fractional digits than
 *                 `scale` fail unless the extra digits are all zero
 *                 ("1.230" ok at scale 2, "1.235" fails).  Exponents are
 *                 accepted when the result is exact ("1.5e1" -> 15).
 *                 Overflow of int64 fails.  scale <= 18.
 */
int json_to_int64(const struct json_value *v, int64_t *out);
int json_to_fixed(const struct json_value *v, unsigned scale, int64_t *out);

/* Length of the well-formed UTF-8 sequence at s (n >= 1 bytes available),
 * or 0 if ill-formed: overlongs, UTF-16 surrogates, code points above
 * U+10FFFF, stray continuation bytes and truncated sequences.  Shared by
 * the parser (which rejects) and the writer (which replaces with U+FFFD). */
size_t json_utf8_len(const unsigned char *s, size_t n);

/* The same conversion from a text (used for query strings, config). */
int json_text_to_fixed(const char *s, size_t len, unsigned scale, int64_t *out);

#endif
