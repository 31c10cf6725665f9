/*
 * jsonw.c -- streaming JSON writer (see jsonw.h for the contract).
 *
 * Why it exists: responses are produced straight into the connection's
 * output buffer with no intermediate tree, so the writer must get commas,
 * escaping and number formatting right on its own.
 *
 *  - Commas: w->first[d] says whether anything has been written at depth d
 *    yet; every value or key first calls sep(), which emits the comma when
 *    needed.  A value right after a key (w->after_key) takes no comma.
 *
 *  - Escaping is total, so whatever bytes callers pass (names typed by
 *    users, bytes read from disk) the output is valid JSON in valid UTF-8:
 *    '"' and '\\' are escaped, all of U+0000..U+001F use the short forms
 *    where JSON has them (\b \f \n \r \t) and \u00XX otherwise, U+007F is
 *    written \u007f (it is legal raw but invisible and trips up log
 *    viewers), well-formed UTF-8 passes through byte for byte, and every
 *    byte that does not start a well-formed sequence becomes U+FFFD on its
 *    own (so a truncated 3-byte sequence yields two replacement characters).
 *    Runs of plain bytes are appended in one call.
 *
 *  - Sticky errors: the first failure (the buffer's bound or OOM, nesting
 *    past JW_MAX_DEPTH, closing more than was opened, a key at top level or
 *    right after another key, scale > 18) sets
 *    w->err and every later call is a no-op, so callers check once at the
 *    end and answer 500/413 instead of sending half a document.  A failed
 *    string escape rolls the buffer back to where the string began.
 *
 *  - Numbers are formatted by hand from integers (no printf, no double):
 *    jw_fixed(1230, 2) is "12.30" and jw_fixed(-5, 2) is "-0.05".
 *
 *  - jw_value() recurses over a parsed tree; its depth is capped by
 *    JW_MAX_DEPTH because jw_arr_begin/jw_obj_begin fail past it and the
 *    walk stops at the first error.
 */
#include "net/jsonw.h"

#include <assert.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

enum { JW_ERR_BUF = 1, JW_ERR_DEPTH = 2, JW_ERR_USAGE = 3 };

/* Bytes that can be copied into a JSON string unchanged: printable ASCII
 * but the quote and the backslash.  A table, because every byte of every
 * string the engine writes passes here (issue 15: the JSON writer was a
 * quarter of a quote's CPU). */
#define P16(v) v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v
static const unsigned char plain_tab[256] = {
	P16(0), P16(0),                                          /* 0x00-0x1f: controls */
	1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,          /* 0x20-0x2f: '"' */
	P16(1), P16(1),                                          /* 0x30-0x4f */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,          /* 0x50-0x5f: '\\' */
	P16(1),                                                  /* 0x60-0x6f */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0,          /* 0x70-0x7f: DEL */
	P16(0), P16(0), P16(0), P16(0), P16(0), P16(0), P16(0), P16(0), /* 0x80-0xff: UTF-8, checked */
};
#undef P16

static int plain(unsigned char c) { return plain_tab[c]; }

/* 1 if the 8 bytes at p are all plain: no byte below 0x20 or at/above 0x7f
 * and none '"' or '\\' (the usual has-zero-byte tricks on the whole word,
 * which flag exactly those bytes when no byte has its top bit set). */
static inline int word_plain(const unsigned char *p)
{
	const uint64_t ones = 0x0101010101010101u, high = 0x8080808080808080u;
	uint64_t x;
	memcpy(&x, p, 8);
	uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
	uint64_t bad = (x - ones * 0x20) | ((x + ones * 0x01) & high) | (q - ones) | (b - ones) | x;
	/* any byte flagged (top bit set) in bad may be special */
	return !(bad & high);
}

#ifdef __SSE2__
/* 1 if the 16 bytes at p are all plain: the bytes below 0x20 and those at
 * or above 0x80 (negative as signed bytes) in one compare, then '"', '\\'
 * and DEL. */
static inline int vec_plain(const unsigned char *p)
{
	__m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
	__m128i bad = _mm_or_si128(_mm_or_si128(_mm_cmplt_epi8(x, _mm_set1_epi8(0x20)), _mm_cmpeq_epi8(x, _mm_set1_epi8('"'))),
				   _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('\\')), _mm_cmpeq_epi8(x, _mm_set1_epi8(0x7f))));
	return _mm_movemask_epi8(bad) == 0;
}
#endif

/* How many of the first n bytes of p are plain (plain_tab); the bytes are
 * copied to d as they are scanned.  16 at a time (vec_plain) for a string
 * of 16 bytes or more, the last 16 as one vector overlapping what was
 * checked; then (shorter strings, or from the first vector that is not
 * all plain) 8 at a time (word_plain); then byte by byte.  (A 16-byte
 * loop in front of the 8-byte one was tried in issue 15 and gained
 * nothing; what pays is the overlapping last vector: an id of 20-40
 * bytes is two vector checks and no loop of words and bytes.) */
static size_t plain_run_copy(const unsigned char *p, size_t n, char *d)
{
	size_t i = 0;
#ifdef __SSE2__
	if (n >= 16) {
		for (; i + 16 <= n; i += 16) {
			if (!vec_plain(p + i))
				goto words;
			memcpy(d + i, p + i, 16);
		}
		if (i == n || vec_plain(p + n - 16)) {
			memcpy(d + n - 16, p + n - 16, 16);
			return n;
		}
	}
words:
#endif
	for (; i + 8 <= n; i += 8) {
		if (!word_plain(p + i))
			break; /* go bytewise */
		memcpy(d + i, p + i, 8);
	}
	/* a tail of 1-7 bytes behind whole plain words: the last 8 bytes as one
	 * word (overlapping what was checked), not byte by byte */
	if (i < n && i >= 8 && i + 8 > n && word_plain(p + n - 8)) {
		memcpy(d + n - 8, p + n - 8, 8);
		return n;
	}
	for (; i < n && plain_tab[p[i]]; i++)
		d[i] = (char)p[i];
	return i;
}

/*
 * Escape `len` bytes of `s` as a quoted JSON string appended to `out`.
 * Returns 0, or -1 with `out` restored to its previous length.
 */
int jw_escape(struct buf *out, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	size_t mark = out->len;
	size_t i = 0;
	/* the common case, nothing to escape, in one pass: the output is never
	 * shorter than len + 2 (an escape or a U+FFFD only lengthens it) */
	if (buf_reserve(out, len + 2))
		goto fail;
	char *d = out->data + out->len;
	*d++ = '"';
	i = plain_run_copy(p, len, d);
	out->len = (size_t)(d + i - out->data);
	while (i < len) {
		size_t run = i;
		while (run < len && plain(p[run]))
			run++;
		if (run > i) {
			if (buf_append(out, p + i, run - i))
				goto fail;
			i = run;
			continue;
		}
		unsigned char c = p[i];
		char esc[6];
		size_t n = 0;
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			n = 2;
		} else if (c < 0x20 || c == 0x7f) {
			char sh = 0;
			switch (c) {
			case '\b': sh = 'b'; break;
			case '\f': sh = 'f'; break;
			case '\n': sh = 'n'; break;
			case '\r': sh = 'r'; break;
			case '\t': sh = 't'; break;
			default: break;
			}
			esc[0] = '\\';
			if (sh) {
				esc[1] = sh;
				n = 2;
			} else {
				esc[1] = 'u';
				esc[2] = '0';
				esc[3] = '0';
				esc[4] = hex[c >> 4];
				esc[5] = hex[c & 15];
				n = 6;
			}
		} else {
			size_t u = json_utf8_len(p + i, len - i);
			if (u) {
				if (buf_append(out, p + i, u))
					goto fail;
				i += u;
				continue;
			}
			memcpy(esc, "\xEF\xBF\xBD", 3); /* U+FFFD */
			n = 3;
		}
		if (buf_append(out, esc, n))
			goto fail;
		i++;
	}
	if (buf_putc(out, '"'))
		goto fail;
	return 0;
fail:
	out->len = mark;
	return -1;
}

/* Start writing into `out` (appending to what is there): depth 0, no error. */
void jw_init(struct jw *w, struct buf *out)
{
	memset(w, 0, sizeof(*w));
	w->out = out;
	w->first[0] = 1;
}

/* Record the first error; later ones are ignored. */
static void set_err(struct jw *w, int e)
{
	if (!w->err)
		w->err = e;
}

/* Emit the separator a new key or value needs.  Returns -1 if errored. */
static int sep(struct jw *w)
{
	if (w->err)
		return -1;
	if (w->after_key) {
		w->after_key = 0;
		return 0;
	}
	if (w->depth > 0 && !w->first[w->depth]) {
		if (buf_putc(w->out, ',')) {
			set_err(w, JW_ERR_BUF);
			return -1;
		}
	}
	w->first[w->depth] = 0;
	return 0;
}

/* Append raw bytes unless errored; a failure becomes the sticky error. */
static void put(struct jw *w, const char *s, size_t n)
{
	if (!w->err && buf_append(w->out, s, n))
		set_err(w, JW_ERR_BUF);
}

/* Open a container: separator, bracket, push a fresh comma state. */
static void begin(struct jw *w, char c)
{
	if (w->err)
		return;
	if (w->depth >= JW_MAX_DEPTH) {
		set_err(w, JW_ERR_DEPTH);
		return;
	}
	if (sep(w))
		return;
	put(w, &c, 1);
	if (w->err)
		return;
	w->depth++;
	w->first[w->depth] = 1;
}

/* Close the innermost container; closing at depth 0 or after a key is misuse. */
static void end(struct jw *w, char c)
{
	if (w->err)
		return;
	if (w->depth == 0 || w->after_key) {
		set_err(w, JW_ERR_USAGE);
		return;
	}
	put(w, &c, 1);
	if (!w->err)
		w->depth--;
}

/* Start an object as the next value. */
void jw_obj_begin(struct jw *w) { begin(w, '{'); }
/* Close the innermost object. */
void jw_obj_end(struct jw *w) { end(w, '}'); }
/* Start an array as the next value. */
void jw_arr_begin(struct jw *w) { begin(w, '['); }
/* Close the innermost array. */
void jw_arr_end(struct jw *w) { end(w, ']'); }

/* Write an escaped key and the ':' after it; the next call writes its
 * value.  Keys are nearly always plain field names: quoted and followed by
 * ':' in one copy, escaped like any string otherwise. */
void jw_keyn(struct jw *w, const char *key, size_t len)
{
	if (!w->err && (w->after_key || w->depth == 0)) {
		set_err(w, JW_ERR_USAGE); /* two keys in a row, or a key outside any object */
		return;
	}
	if (sep(w))
		return;
	if (buf_reserve(w->out, len + 3)) {
		set_err(w, JW_ERR_BUF);
		return;
	}
	char *d = w->out->data + w->out->len;
	*d = '"';
	if (plain_run_copy((const unsigned char *)key, len, d + 1) == len) {
		d[len + 1] = '"';
		d[len + 2] = ':';
		w->out->len += len + 3;
	} else if (jw_escape(w->out, key, len) || buf_putc(w->out, ':')) {
		set_err(w, JW_ERR_BUF);
		return;
	}
	w->after_key = 1;
}


/* A string value of `len` bytes (may contain NUL), escaped completely. */
void jw_strn(struct jw *w, const char *s, size_t len)
{
	if (sep(w))
		return;
	if (jw_escape(w->out, s, len))
		set_err(w, JW_ERR_BUF);
}

/* An unsigned integer in decimal. */
void jw_uint(struct jw *w, uint64_t v)
{
	char tmp[24];
	if (sep(w))
		return;
	char *p = buf_utoa_rev(v, tmp + sizeof(tmp));
	put(w, p, (size_t)(tmp + sizeof(tmp) - p));
}

/* Magnitude of v without overflow for INT64_MIN. */
static uint64_t mag(int64_t v)
{
	return v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
}

/* A signed integer in decimal (INT64_MIN included). */
void jw_int(struct jw *w, int64_t v)
{
	char tmp[24];
	if (sep(w))
		return;
	char *p = buf_utoa_rev(mag(v), tmp + sizeof(tmp));
	if (v < 0)
		*--p = '-';
	put(w, p, (size_t)(tmp + sizeof(tmp) - p));
}

/*
 * v / 10^scale written exactly with `scale` fractional digits: the
 * magnitude's digits are left-padded with zeros to at least scale+1 digits
 * and a '.' is placed before the last `scale`.  Zero is never signed.
 */
size_t jw_fixed_text(int64_t v, unsigned scale, char out[48])
{
	assert(scale <= 18);
	/* Every copy below has a constant size, so none is a call into the
	 * C library (three variable-length memcpy calls were ~120
	 * instructions a number, and a quote writes ~50 numbers: issue 15).
	 * The digits end at t + 40 over a field of '0's, so a magnitude with
	 * fewer than scale + 1 digits is already zero-padded in front; the
	 * copies read and write past what is used (reads within t: from
	 * d >= t + 20 and from end - scale >= t + 22, 20 bytes each, so up
	 * to t + 59; writes within out's 48 bytes: up to out + 42), and the
	 * length returned says what counts. */
	char t[64];
	memset(t, '0', sizeof(t));
	char *end = t + 40;
	char *d = buf_utoa_rev(mag(v), end); /* at most 20 digits */
	size_t nd = (size_t)(end - d);
	if (nd <= scale) { /* 0.0...digits */
		nd = scale + 1;
		d = end - nd;
	}
	size_t o = 0, whole = nd - scale; /* 1..20 digits before the point */
	if (v < 0)
		out[o++] = '-';
	memcpy(out + o, d, 20); /* the whole part (and bytes the next copy overwrites) */
	o += whole;
	if (scale == 0)
		return o;
	out[o++] = '.';
	memcpy(out + o, d + whole, 20); /* the fraction: scale <= 18 digits */
	return o + scale;
}

void jw_fixed(struct jw *w, int64_t v, unsigned scale)
{
	if (w->err)
		return;
	if (scale > 18) {
		set_err(w, JW_ERR_USAGE);
		return;
	}
	char out[48];
	size_t o = jw_fixed_text(v, scale, out);
	if (sep(w))
		return;
	put(w, out, o);
}

/* true for non-zero, false for zero. */
void jw_bool(struct jw *w, int v)
{
	if (sep(w))
		return;
	if (v)
		put(w, "true", 4);
	else
		put(w, "false", 5);
}

/* The literal null. */
void jw_null(struct jw *w)
{
	if (sep(w))
		return;
	put(w, "null", 4);
}

/* Insert `len` bytes of already valid JSON as one value (not checked). */
void jw_raw(struct jw *w, const char *json, size_t len)
{
	if (sep(w))
		return;
	put(w, json, len);
}

struct buf *jw_raw_begin(struct jw *w)
{
	return sep(w) ? NULL : w->out;
}

void jw_raw_again(struct jw *w, size_t off, size_t len)
{
	if (w->err)
		return;
	if (off > w->out->len || len > w->out->len - off) {
		set_err(w, JW_ERR_USAGE);
		return;
	}
	if (sep(w))
		return;
	/* room first: the copy's source lives in the buffer it grows */
	if (buf_reserve(w->out, len)) {
		set_err(w, JW_ERR_BUF);
		return;
	}
	memcpy(w->out->data + w->out->len, w->out->data + off, len);
	w->out->len += len;
}

/*
 * Re-serialise a parsed value compactly: numbers keep their exact text,
 * strings and keys are re-escaped from their decoded bytes (so the output
 * is canonical for a given tree), members keep input order.
 */
void jw_value(struct jw *w, const struct json_value *v)
{
	if (w->err)
		return;
	if (!v) {
		set_err(w, JW_ERR_USAGE);
		return;
	}
	switch (v->type) {
	case JSON_NULL:
		jw_null(w);
		break;
	case JSON_FALSE:
		jw_bool(w, 0);
		break;
	case JSON_TRUE:
		jw_bool(w, 1);
		break;
	case JSON_NUMBER:
		jw_raw(w, v->u.num, v->len);
		break;
	case JSON_STRING:
		jw_strn(w, v->u.str, v->len);
		break;
	case JSON_ARRAY:
		jw_arr_begin(w);
		for (uint32_t i = 0; i < v->len && !w->err; i++)
			jw_value(w, &v->u.items[i]);
		jw_arr_end(w);
		break;
	case JSON_OBJECT:
		jw_obj_begin(w);
		for (uint32_t i = 0; i < v->len && !w->err; i++) {
			const struct json_member *m = &v->u.members[i];
			jw_keyn(w, m->key, m->key_len);
			jw_value(w, &m->value);
		}
		jw_obj_end(w);
		break;
	default:
		set_err(w, JW_ERR_USAGE);
		break;
	}
}

/* ---- members: a key and its value in one step ------------------------------ */

/*
 * Room for one member of the innermost object whose key is already quoted
 * and followed by its colon (qkey, qlen bytes: "\"id\":", from the jw_k*
 * macros, or quote_key below): the separator, the key and vlen bytes of
 * value in one reservation, the key in one copy, nothing scanned (a
 * response writes thousands of members; a key through jw_keyn and then a
 * value writer costs two separator checks, two reservations, two calls
 * and a scan of the key).  Returns where the value goes, with out->len
 * not yet advanced: the caller writes the value and sets out->len past
 * it.  NULL when nothing was written: after an error (set, or set now: a
 * member after a key or outside any object, no room).  Test builds check
 * that the key really is a plain quoted name (a literal with a '"' or a
 * control byte in it would write broken JSON).
 */
static char *qmember(struct jw *w, const char *qkey, size_t qlen, size_t vlen)
{
	if (w->err)
		return NULL;
	if (w->after_key || w->depth == 0) {
		set_err(w, JW_ERR_USAGE);
		return NULL;
	}
#ifdef WM_TESTING
	assert(qlen >= 3 && qkey[0] == '"' && qkey[qlen - 2] == '"' && qkey[qlen - 1] == ':');
	for (size_t i = 1; i + 2 < qlen; i++)
		assert(plain((unsigned char)qkey[i]));
#endif
	size_t comma = !w->first[w->depth];
	if (buf_reserve(w->out, comma + qlen + vlen)) {
		set_err(w, JW_ERR_BUF);
		return NULL;
	}
	char *d = w->out->data + w->out->len;
	if (comma)
		*d++ = ',';
	memcpy(d, qkey, qlen);
	w->first[w->depth] = 0;
	return d + qlen;
}

/* n bytes of JSON text as the value at d (from qmember). */
static void text_at(struct jw *w, char *d, const char *v, size_t n)
{
	memcpy(d, v, n);
	w->out->len = (size_t)(d + n - w->out->data);
}

/* slen bytes as an escaped string value at d (room for slen + 2 made). */
static void str_at(struct jw *w, char *d, const char *s, size_t slen)
{
	*d = '"';
	if (plain_run_copy((const unsigned char *)s, slen, d + 1) == slen) {
		d[slen + 1] = '"';
		w->out->len = (size_t)(d + slen + 2 - w->out->data);
		return;
	}
	w->out->len = (size_t)(d - w->out->data); /* the key stays; the value escaped */
	if (jw_escape(w->out, s, slen))
		set_err(w, JW_ERR_BUF);
}

/* v in decimal into tmp[24]; returns where the text starts (it ends at
 * tmp + 24). */
static char *int_text(int64_t v, char tmp[24])
{
	char *p = buf_utoa_rev(mag(v), tmp + 24);
	if (v < 0)
		*--p = '-';
	return p;
}

/* ---- the same with a pre-quoted literal key (the jw_k* macros) ------------- */

/* A member with a pre-quoted key whose value is n bytes of JSON text. */
static void qmember_text(struct jw *w, const char *qkey, size_t qlen, const char *v, size_t n)
{
	char *d = qmember(w, qkey, qlen, n);
	if (d)
		text_at(w, d, v, n);
}

void jw_q_str(struct jw *w, const char *qkey, size_t qlen, const char *s, size_t slen)
{
	char *d = qmember(w, qkey, qlen, slen + 2);
	if (d)
		str_at(w, d, s, slen);
}

void jw_q_int(struct jw *w, const char *qkey, size_t qlen, int64_t v)
{
	char tmp[24];
	char *p = int_text(v, tmp);
	qmember_text(w, qkey, qlen, p, (size_t)(tmp + sizeof(tmp) - p));
}

void jw_q_fixed(struct jw *w, const char *qkey, size_t qlen, int64_t v, unsigned scale)
{
	if (scale > 18) {
		set_err(w, JW_ERR_USAGE);
		return;
	}
	char out[48];
	qmember_text(w, qkey, qlen, out, jw_fixed_text(v, scale, out));
}

void jw_q_bool(struct jw *w, const char *qkey, size_t qlen, int v)
{
	qmember_text(w, qkey, qlen, v ? "true" : "false", v ? 4 : 5);
}

void jw_q_null(struct jw *w, const char *qkey, size_t qlen) { qmember_text(w, qkey, qlen, "null", 4); }

/* ---- members with a key known at run time (jw_member_*, jw_var_*) ---------- */

#define JW_RUNTIME_KEY_MAX 64 /* longer keys take jw_keyn's path */

/* key (klen bytes) quoted and followed by its colon into q, when it has
 * nothing to escape and fits: its length, else 0 (the caller writes it
 * with jw_keyn, which escapes). */
static size_t quote_key(char q[JW_RUNTIME_KEY_MAX + 3], const char *key, size_t klen)
{
	if (klen > JW_RUNTIME_KEY_MAX || plain_run_copy((const unsigned char *)key, klen, q + 1) != klen)
		return 0;
	q[0] = '"';
	q[klen + 1] = '"';
	q[klen + 2] = ':';
	return klen + 3;
}

enum member_kind { MK_STR, MK_INT, MK_FIXED, MK_BOOL, MK_NULL };

/* A member of kind k with a run-time key: through the pre-quoted writers
 * when the key quotes as it is, else jw_keyn and the value's writer. */
static void member_any(struct jw *w, const char *key, size_t klen, enum member_kind k, const char *s, size_t slen,
		       int64_t v, unsigned scale)
{
	char q[JW_RUNTIME_KEY_MAX + 3];
	size_t ql = quote_key(q, key, klen);
	if (!ql)
		jw_keyn(w, key, klen);
	switch (k) {
	case MK_STR: ql ? jw_q_str(w, q, ql, s, slen) : jw_strn(w, s, slen); break;
	case MK_INT: ql ? jw_q_int(w, q, ql, v) : jw_int(w, v); break;
	case MK_FIXED: ql ? jw_q_fixed(w, q, ql, v, scale) : jw_fixed(w, v, scale); break;
	case MK_BOOL: ql ? jw_q_bool(w, q, ql, (int)v) : jw_bool(w, (int)v); break;
	case MK_NULL: ql ? jw_q_null(w, q, ql) : jw_null(w); break;
	}
}

void jw_member_str(struct jw *w, const char *key, size_t klen, const char *s, size_t slen)
{
	member_any(w, key, klen, MK_STR, s, slen, 0, 0);
}

void jw_member_int(struct jw *w, const char *key, size_t klen, int64_t v)
{
	member_any(w, key, klen, MK_INT, NULL, 0, v, 0);
}

void jw_member_fixed(struct jw *w, const char *key, size_t klen, int64_t v, unsigned scale)
{
	member_any(w, key, klen, MK_FIXED, NULL, 0, v, scale);
}

void jw_member_bool(struct jw *w, const char *key, size_t klen, int v)
{
	member_any(w, key, klen, MK_BOOL, NULL, 0, v != 0, 0);
}

void jw_member_null(struct jw *w, const char *key, size_t klen) { member_any(w, key, klen, MK_NULL, NULL, 0, 0, 0); }

/* ---- fixed-shape writing ----------------------------------------------------- */

int jb_str(struct buf *b, const char *s) { return jw_escape(b, s, strlen(s)); }

int jb_name(struct buf *b, const char *s)
{
	size_t n = strlen(s);
#ifdef WM_TESTING
	for (size_t i = 0; i < n; i++)
		assert(plain((unsigned char)s[i]));
#endif
	if (buf_reserve(b, n + 2))
		return -1;
	char *d = b->data + b->len;
	d[0] = '"';
	memcpy(d + 1, s, n);
	d[n + 1] = '"';
	b->len += n + 2;
	return 0;
}

int jb_str_or_null(struct buf *b, const char *s) { return s ? jb_str(b, s) : JB_LIT(b, "null"); }

int jb_fixed(struct buf *b, int64_t v, unsigned scale)
{
	/* written in place when the storage has room for any number: no
	 * copy through a local and a memcpy call */
	if (b->cap - b->len >= 48) {
		b->len += jw_fixed_text(v, scale, b->data + b->len);
		return 0;
	}
	char out[48];
	return buf_append(b, out, jw_fixed_text(v, scale, out));
}
