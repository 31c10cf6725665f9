/*
 * jsonw.h -- streaming JSON writer.
 *
 * Writes straight into a struct buf (usually a connection's output buffer),
 * with no intermediate tree.  Commas are managed by a small per-depth state
 * stack, so callers only say begin/key/value/end.  Strings are escaped
 * completely: '"', '\\', and every control character U+0000..U+001F (as
 * \b \f \n \r \t or \u00XX), plus U+007F as \u007f; valid UTF-8 passes
 * through unchanged and each invalid UTF-8 byte is replaced by U+FFFD, so
 * the output is always valid JSON in valid UTF-8.
 *
 * Errors (bound exceeded, OOM, nesting past JW_MAX_DEPTH) are sticky: the
 * first one sets w->err and later calls do nothing; check once at the end.
 */
#ifndef WM_JSONW_H
#define WM_JSONW_H

#include <stddef.h>
#include <stdint.h>

#include "net/buf.h"
#include "net/json.h"

#define JW_MAX_DEPTH 64

struct jw {
	struct buf *out;
	uint32_t depth;
	uint8_t first[JW_MAX_DEPTH + 1]; /* 1 = nothing written yet at this depth */
	uint8_t after_key;               /* a key was just written */
	int err;
};

void jw_init(struct jw *w, struct buf *out);
void jw_obj_begin(struct jw *w);
void jw_obj_end(struct jw *w);
void jw_arr_begin(struct jw *w);
void jw_arr_end(struct jw *w);
/* Object key (escaped like a string). */
void jw_keyn(struct jw *w, const char *key, size_t len);
void jw_strn(struct jw *w, const char *s, size_t len);
/* The NUL-terminated forms are inline, so a key that is a literal (nearly
 * all of them) has its length computed at compile time. */
static inline void jw_key(struct jw *w, const char *key) { jw_keyn(w, key, __builtin_strlen(key)); }
static inline void jw_str(struct jw *w, const char *s) { jw_strn(w, s, __builtin_strlen(s)); }
void jw_int(struct jw *w, int64_t v);
void jw_uint(struct jw *w, uint64_t v);
void jw_bool(struct jw *w, int v);
void jw_null(struct jw *w);
/* Fixed-point decimal: jw_fixed(w, 1230, 2) writes 12.30; (-5, 2) -> -0.05;
 * scale 0 writes an integer.  scale <= 18. */
void jw_fixed(struct jw *w, int64_t v, unsigned scale);
/* The text jw_fixed writes, into out; its length (scale <= 18). */
size_t jw_fixed_text(int64_t v, unsigned scale, char out[48]);
/* Pre-validated JSON text inserted as one value (e.g. a stored document). */
void jw_raw(struct jw *w, const char *json, size_t len);
/* jw_raw for a value the caller writes itself: the separator is written
 * and the output buffer returned, to which the caller appends exactly one
 * complete JSON value (a writer of a fixed shape that appends literals
 * instead of going member by member).  NULL once the writer has an error;
 * a caller that fails half-way sets w->err. */
struct buf *jw_raw_begin(struct jw *w);
/* jw_raw of bytes this writer already wrote: out[off, off + len), a whole
 * value written earlier (a response that repeats an object).  Misuse (a
 * range past what is written) sets JW_ERR_USAGE. */
void jw_raw_again(struct jw *w, size_t off, size_t len);
/* Re-serialise a parsed value compactly (numbers keep their exact text,
 * members keep input order). */
void jw_value(struct jw *w, const struct json_value *v);
/* A key and its value as one member of the innermost object: the same
 * bytes and errors as jw_keyn followed by the value's writer, in one
 * reservation (the hot path of every response). */
void jw_member_str(struct jw *w, const char *key, size_t klen, const char *s, size_t slen);
void jw_member_int(struct jw *w, const char *key, size_t klen, int64_t v);
void jw_member_fixed(struct jw *w, const char *key, size_t klen, int64_t v, unsigned scale);
void jw_member_bool(struct jw *w, const char *key, size_t klen, int v);
void jw_member_null(struct jw *w, const char *key, size_t klen);
/* ... with a key that is only known at run time (a name from a table):
 * NUL-terminated, escaped like any string. */
static inline void jw_var_str(struct jw *w, const char *key, const char *s)
{
	jw_member_str(w, key, __builtin_strlen(key), s, __builtin_strlen(s));
}
static inline void jw_var_int(struct jw *w, const char *key, int64_t v)
{
	jw_member_int(w, key, __builtin_strlen(key), v);
}
static inline void jw_var_fixed(struct jw *w, const char *key, int64_t v, unsigned scale)
{
	jw_member_fixed(w, key, __builtin_strlen(key), v, scale);
}
static inline void jw_var_bool(struct jw *w, const char *key, int v)
{
	jw_member_bool(w, key, __builtin_strlen(key), v);
}
static inline void jw_var_null(struct jw *w, const char *key) { jw_member_null(w, key, __builtin_strlen(key)); }

/*
 * Members with a pre-quoted key: qkey is the key in quotes followed by its
 * colon ("\"id\":", qlen bytes), which must be plain (no '"', '\' or
 * control byte; test builds check).  One copy for the key, no scan: the
 * path of every literal key (jw_kstr and its siblings below).
 */
void jw_q_str(struct jw *w, const char *qkey, size_t qlen, const char *s, size_t slen);
void jw_q_int(struct jw *w, const char *qkey, size_t qlen, int64_t v);
void jw_q_fixed(struct jw *w, const char *qkey, size_t qlen, int64_t v, unsigned scale);
void jw_q_bool(struct jw *w, const char *qkey, size_t qlen, int v);
void jw_q_null(struct jw *w, const char *qkey, size_t qlen);
/* The pre-quoted form of a string literal key, and its length: two
 * arguments.  A key that is not a literal does not compile here (use the
 * jw_var_* forms). */
#define JW_QKEY(key) "\"" key "\":", (sizeof(key) + 2)
/* A member with a literal key: jw_kstr(w, "id", s). */
#define jw_kstr(w, key, s) jw_q_str_z((w), JW_QKEY(key), (s))
#define jw_kint(w, key, v) jw_q_int((w), JW_QKEY(key), (v))
#define jw_kfixed(w, key, v, scale) jw_q_fixed((w), JW_QKEY(key), (v), (scale))
#define jw_kbool(w, key, v) jw_q_bool((w), JW_QKEY(key), (v))
#define jw_knull(w, key) jw_q_null((w), JW_QKEY(key))
static inline void jw_q_str_z(struct jw *w, const char *qkey, size_t qlen, const char *s)
{
	jw_q_str(w, qkey, qlen, s, __builtin_strlen(s));
}
/*
 * Fixed-shape writing: a writer of a value whose shape is known appends
 * literal fragments ("{\"id\":", ",\"qty\":") and values straight to the
 * buffer jw_raw_begin() returned, instead of member by member (one copy of
 * a constant-size literal per key: no separator state, no call, no scan).
 * Each returns 0, or -1 on bound/OOM; the caller ORs them and sets w->err.
 */
#define JB_LIT(b, s) BUF_LIT(b, s)
/* s (NUL-terminated) as an escaped JSON string. */
int jb_str(struct buf *b, const char *s);
/* s, a name from the engine's own tables (an enum value's spelling, which
 * has nothing to escape), as a JSON string: copied, not scanned.  Test
 * builds check that it is plain. */
int jb_name(struct buf *b, const char *s);
/* jb_str, or null for NULL. */
int jb_str_or_null(struct buf *b, const char *s);
/* jw_fixed's text (scale <= 18). */
int jb_fixed(struct buf *b, int64_t v, unsigned scale);
static inline int jb_bool(struct buf *b, int v) { return v ? JB_LIT(b, "true") : JB_LIT(b, "false"); }

/* Escape `len` bytes as a JSON string (with quotes) into `out`. */
int jw_escape(struct buf *out, const char *s, size_t len);

#endif
