/*
 * json.c -- strict, bounded JSON parser that keeps the exact text of numbers
 * (see json.h for the contract).
 *
 * Why it looks the way it does:
 *
 *  - Untrusted input.  This is the first code that touches request bodies,
 *    so every loop is driven by explicit bounds (input size, nesting depth,
 *    string length, members per container, number length), every byte is
 *    checked against RFC 8259 (strict UTF-8, no unescaped control
 *    characters, no lone surrogates, no leading zeros, no trailing garbage),
 *    and the first error is reported with its byte offset, line and column.
 *
 *  - No recursion.  The parser is an explicit state machine ("want a value"
 *    / "have a value") over a frame stack whose height is capped by
 *    max_depth, so a hostile "[[[[..." can neither blow the C stack nor get
 *    past the bound.  Element and member values that are still being
 *    collected live on two scratch stacks (one for array elements, one for
 *    object members); when a container closes, its slice of the stack is
 *    copied into the arena in one piece and popped.  This gives contiguous
 *    `items` / `members` arrays without knowing the count in advance and
 *    without a malloc per value.
 *
 *  - One arena per document.  Values, strings, keys and number texts are
 *    carved out of a short chain of large blocks owned by the json_doc;
 *    json_doc_free() releases the chain.  Nothing points into the caller's
 *    input.  The scratch stacks belong to the parse call and are freed
 *    before json_parse() returns.
 *
 *  - Duplicate keys in O(1) expected time.  Objects may have up to
 *    max_members (10000 by default) keys, so a linear "seen before?" scan
 *    would be quadratic and a cheap denial of service.  An object past
 *    JSON_LINEAR_KEYS members has every member on the scratch stack linked
 *    into a chained hash table (a smaller one compares its few keys).  Chains are
 *    ordered newest first and members are popped strictly last-in first-out,
 *    so a member being popped is always the head of its chain (unlinking is
 *    one store), and a lookup can stop as soon as it reaches a member that
 *    belongs to an enclosing object.  The hash is seeded per parse so that
 *    colliding key sets are hard to prepare in advance; the seed only
 *    affects speed, never results.  Keys are compared after unescaping, so
 *    {"a":1,"\u0061":2} is a duplicate.
 *
 *  - Numbers are never converted while parsing.  They are validated against
 *    the grammar and kept as text; json_to_int64() / json_to_fixed() do the
 *    exact decimal arithmetic on demand with 64-bit integers only (money
 *    never meets a double, DESIGN.md section 6).
 *
 * Error positions: `offset` is the offending byte; at end of input it is
 * `len` (one past the last byte).  For a bound (too_large) it is the start
 * of the value that broke it: the opening quote of the string, the first
 * character of the number, the '[' / '{' one level too deep, the first
 * byte of the element or key that is one too many; for the input size it
 * is max_bytes.  Lines are counted by '\n' only; columns are 1-based bytes.
 */
#include "net/json.h"

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Arena                                                                    */
/* ------------------------------------------------------------------------ */

#define ARENA_MIN_BLOCK ((size_t)4096)
#define ARENA_MAX_BLOCK ((size_t)1 << 20)

struct ablock {
	struct ablock *next;
	size_t cap;  /* bytes in data[] */
	size_t used; /* bytes handed out (including alignment padding) */
	max_align_t data[];
};

struct json_doc {
	struct ablock *head; /* block currently being filled; others follow */
	size_t next_size;    /* size of the next regular block */
	struct json_value root;
	struct ablock *inline_block; /* the first block, in the document's own allocation */
};

/* Where the first block starts in a document's allocation. */
#define DOC_BLOCK_OFF \
	((sizeof(struct json_doc) + _Alignof(struct ablock) - 1) & ~(_Alignof(struct ablock) - 1))

/*
 * Allocate `size` bytes aligned to `align` (a power of two no larger than
 * max_align_t) from the document's arena.  Returns NULL on OOM or on a size
 * that cannot be represented.  Large requests get a block of their own,
 * linked behind the current one, so the space left in the current block is
 * not wasted.
 */
static void *arena_alloc(struct json_doc *d, size_t size, size_t align)
{
	struct ablock *b = d->head;
	if (b) {
		size_t off = (b->used + align - 1) & ~(align - 1);
		if (off <= b->cap && size <= b->cap - off) {
			b->used = off + size;
			return (char *)b->data + off;
		}
	}
	if (size > SIZE_MAX / 2 - sizeof(struct ablock))
		return NULL;
	if (size > d->next_size / 2) {
		struct ablock *big = malloc(sizeof(*big) + size);
		if (!big)
			return NULL;
		big->cap = big->used = size;
		if (b) {
			big->next = b->next;
			b->next = big;
		} else {
			big->next = NULL;
			d->head = big;
		}
		return big->data;
	}
	struct ablock *nb = malloc(sizeof(*nb) + d->next_size);
	if (!nb)
		return NULL;
	nb->cap = d->next_size;
	nb->used = size;
	nb->next = b;
	d->head = nb;
	if (d->next_size < ARENA_MAX_BLOCK)
		d->next_size *= 2;
	return nb->data;
}

/* Copy `n` bytes into the arena and NUL-terminate them. */
static char *arena_strdup(struct json_doc *d, const char *s, size_t n)
{
	char *p = arena_alloc(d, n + 1, 1);
	if (!p)
		return NULL;
	if (n)
		memcpy(p, s, n);
	p[n] = 0;
	return p;
}

/* Release the arena chain and the document; NULL is a no-op. */
void json_doc_free(struct json_doc *doc)
{
	if (!doc)
		return;
	struct ablock *b = doc->head;
	while (b) {
		struct ablock *n = b->next;
		if (b != doc->inline_block)
			free(b);
		b = n;
	}
	free(doc);
}

/* The root value; lives in the document (never NULL for a live doc). */
const struct json_value *json_root(const struct json_doc *doc)
{
	return &doc->root;
}

/* ------------------------------------------------------------------------ */
/* Parser state                                                             */
/* ------------------------------------------------------------------------ */

/* An object member still being collected, plus its duplicate-key links. */
struct mentry {
	struct json_member m;
	uint32_t hash;
	uint32_t next; /* 1-based index of the next (older) entry in the chain */
	int linked;    /* in a hash chain (its object is past JSON_LINEAR_KEYS) */
};

/* Objects with up to this many members find duplicates by comparing keys
 * (most objects: cheaper than hashing every key); a larger one links all
 * of its members into the hash chains, so the check stays O(1). */
#define JSON_LINEAR_KEYS 8

/* One open container. */
struct frame {
	size_t start; /* first index of its slice of vals[] or mems[] */
	int obj;
	int hashed;   /* an object whose members are in the hash chains */
};

struct parser {
	const unsigned char *s;
	size_t len, pos;
	struct json_limits lim;
	struct json_error *err;
	struct json_doc *doc;
	uint64_t seed;

	struct json_value *vals; /* array elements being collected */
	size_t nvals, capvals;
	struct mentry *mems;     /* object members being collected */
	size_t nmems, capmems;
	uint32_t *buckets;       /* 1-based heads of hash chains over mems[] */
	size_t nbuckets;         /* power of two, >= nmems */
	struct frame *frames;
	size_t nframes, capframes;
	char *sb;                /* decoded string scratch */
	size_t sblen, sbcap;
	/* The last string parse_string() read: its decoded bytes, either in
	 * the input itself (no escape, plain ASCII: nothing copied) or in sb. */
	const char *str;
	size_t slen;
	const char *const *keep; /* json_parse_keep: the top-level keys built (NULL: all) */
	size_t kept_left;        /* listed keys not met yet: at 0 the rest is not read */
	int skipped;             /* parse_member_key stepped over the member's value */
};

/* The value json_parse_keep leaves for a member it stepped over. */
#define JSON_SKIPPED_LEN UINT32_MAX

/*
 * Record an error at byte `off` (<= len) and return -1.  Line and column
 * are derived by counting '\n' before `off`; that costs one pass over the
 * prefix, paid only on failure.
 */
static int fail(struct parser *p, size_t off, int too_large, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(struct parser *p, size_t off, int too_large, const char *fmt, ...)
{
	struct json_error *e = p->err;
	if (!e)
		return -1;
	if (off > p->len)
		off = p->len;
	uint32_t line = 1;
	size_t line_start = 0;
	for (size_t i = 0; i < off; i++) {
		if (p->s[i] == '\n') {
			if (line < UINT32_MAX)
				line++;
			line_start = i + 1;
		}
	}
	size_t col = off - line_start + 1;
	e->offset = off;
	e->line = line;
	e->column = col > UINT32_MAX ? UINT32_MAX : (uint32_t)col;
	e->too_large = too_large;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -1;
}

static int oom(struct parser *p)
{
	return fail(p, p->pos, 0, "out of memory");
}

/*
 * Make room for one more element in a scratch array of `size`-byte items.
 * Scratch arrays are bounded by the input size (each element consumes at
 * least one input byte), so doubling is safe.
 */
static int grow(void **arr, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t ncap = *cap ? *cap * 2 : 16;
	if (ncap > SIZE_MAX / size)
		return -1;
	void *np = realloc(*arr, ncap * size);
	if (!np)
		return -1;
	*arr = np;
	*cap = ncap;
	return 0;
}

static int is_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void skip_ws(struct parser *p)
{
	while (p->pos < p->len && is_ws(p->s[p->pos]))
		p->pos++;
}

static int is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* A short printable description of the byte at `off` for messages. */
static void describe(const struct parser *p, size_t off, char *out, size_t n)
{
	unsigned char c = p->s[off];
	if (c > 0x20 && c < 0x7f && c != '\'')
		snprintf(out, n, "'%c'", c);
	else
		snprintf(out, n, "byte 0x%02x", c);
}

static int unexpected(struct parser *p, size_t off, const char *what)
{
	if (off >= p->len)
		return fail(p, p->len, 0, "unexpected end of input, %s", what);
	char d[16];
	describe(p, off, d, sizeof(d));
	return fail(p, off, 0, "unexpected %s, %s", d, what);
}

static size_t scan_past_value(const char *t, size_t len, size_t i);

/* ------------------------------------------------------------------------ */
/* UTF-8 and strings                                                        */
/* ------------------------------------------------------------------------ */

/*
 * Length of the well-formed UTF-8 sequence at s (n bytes available), or 0
 * if it is ill-formed: overlong forms (C0, C1, E0 80..9F, F0 80..8F),
 * UTF-16 surrogates (ED A0..BF), code points above U+10FFFF (F4 90.., F5..FF),
 * stray continuation bytes and truncated sequences are all rejected.
 */
size_t json_utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	if (c < 0x80)
		return 1;
	if (c < 0xC2)
		return 0;
	if (c < 0xE0)
		return n >= 2 && (s[1] & 0xC0) == 0x80 ? 2 : 0;
	if (c < 0xF0) {
		unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
		if (n < 3 || s[1] < lo || s[1] > hi || (s[2] & 0xC0) != 0x80)
			return 0;
		return 3;
	}
	if (c < 0xF5) {
		unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
		if (n < 4 || s[1] < lo || s[1] > hi || (s[2] & 0xC0) != 0x80 ||
		    (s[3] & 0xC0) != 0x80)
			return 0;
		return 4;
	}
	return 0;
}

/* Append n bytes to the string scratch. */
static int sb_put(struct parser *p, const void *b, size_t n)
{
	if (p->sblen + n > p->sbcap) {
		size_t ncap = p->sbcap ? p->sbcap : 256;
		while (ncap < p->sblen + n)
			ncap *= 2;
		char *nb = realloc(p->sb, ncap);
		if (!nb)
			return -1;
		p->sb = nb;
		p->sbcap = ncap;
	}
	memcpy(p->sb + p->sblen, b, n);
	p->sblen += n;
	return 0;
}

/* Four hex digits at pos..pos+3 -> *cp, or an error at the bad digit. */
static int hex4(struct parser *p, size_t pos, unsigned *cp)
{
	unsigned v = 0;
	for (size_t k = 0; k < 4; k++) {
		if (pos + k >= p->len)
			return fail(p, p->len, 0, "unexpected end of input in \\u escape");
		unsigned char c = p->s[pos + k];
		unsigned d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return unexpected(p, pos + k, "expected a hex digit in \\u escape");
		v = v << 4 | d;
	}
	*cp = v;
	return 0;
}

/*
 * Decode the escape whose backslash is at p->pos into the scratch and
 * advance past it.  \uD800..\uDBFF must be followed by \uDC00..\uDFFF;
 * any other surrogate is an error at the backslash.
 */
static int parse_escape(struct parser *p)
{
	size_t bs = p->pos;
	if (bs + 1 >= p->len)
		return fail(p, p->len, 0, "unexpected end of input in string escape");
	unsigned char e = p->s[bs + 1];
	char c;
	switch (e) {
	case '"': c = '"'; break;
	case '\\': c = '\\'; break;
	case '/': c = '/'; break;
	case 'b': c = '\b'; break;
	case 'f': c = '\f'; break;
	case 'n': c = '\n'; break;
	case 'r': c = '\r'; break;
	case 't': c = '\t'; break;
	case 'u': {
		unsigned cp, lo;
		if (hex4(p, bs + 2, &cp))
			return -1;
		p->pos = bs + 6;
		if (cp >= 0xDC00 && cp <= 0xDFFF)
			return fail(p, bs, 0, "lone low surrogate \\u%04X in string", cp);
		if (cp >= 0xD800 && cp <= 0xDBFF) {
			if (p->pos + 1 >= p->len || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
				return fail(p, bs, 0, "lone high surrogate \\u%04X in string", cp);
			if (hex4(p, p->pos + 2, &lo))
				return -1;
			if (lo < 0xDC00 || lo > 0xDFFF)
				return fail(p, bs, 0, "lone high surrogate \\u%04X in string", cp);
			cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
			p->pos += 6;
		}
		unsigned char u[4];
		size_t n;
		if (cp < 0x80) {
			u[0] = (unsigned char)cp;
			n = 1;
		} else if (cp < 0x800) {
			u[0] = (unsigned char)(0xC0 | cp >> 6);
			u[1] = (unsigned char)(0x80 | (cp & 0x3F));
			n = 2;
		} else if (cp < 0x10000) {
			u[0] = (unsigned char)(0xE0 | cp >> 12);
			u[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
			u[2] = (unsigned char)(0x80 | (cp & 0x3F));
			n = 3;
		} else {
			u[0] = (unsigned char)(0xF0 | cp >> 18);
			u[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
			u[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
			u[3] = (unsigned char)(0x80 | (cp & 0x3F));
			n = 4;
		}
		return sb_put(p, u, n) ? oom(p) : 0;
	}
	default:
		return unexpected(p, bs + 1, "invalid escape in string");
	}
	p->pos = bs + 2;
	return sb_put(p, &c, 1) ? oom(p) : 0;
}

/*
 * Decode the string whose opening quote is at p->pos and advance past the
 * closing quote; the decoded bytes are (p->str, p->slen): in the input
 * when the string is plain ASCII without escapes, else in the scratch
 * (p->sb).  The decoded length is checked against max_string as it grows,
 * so the scratch never holds more than max_string + 4 bytes.
 */
static int parse_string(struct parser *p)
{
	size_t start = p->pos;
	const unsigned char *s = p->s;
	p->pos++;
	p->sblen = 0;
	/* The common case, a run of plain ASCII up to the closing quote, is
	 * read in place: the caller copies it once, into the arena. */
	size_t end = p->pos, cap = p->len - p->pos < p->lim.max_string ? p->len : p->pos + p->lim.max_string;
	while (end < cap && s[end] >= 0x20 && s[end] < 0x80 && s[end] != '"' && s[end] != '\\')
		end++;
	if (end < p->len && s[end] == '"') {
		p->str = (const char *)s + p->pos;
		p->slen = end - p->pos;
		p->pos = end + 1;
		return 0;
	}
	for (;;) {
		if (p->pos >= p->len)
			return fail(p, p->len, 0, "unexpected end of input in string");
		unsigned char c = s[p->pos];
		if (c == '"') {
			p->pos++;
			p->str = p->sb;
			p->slen = p->sblen;
			return 0;
		}
		if (c == '\\') {
			if (parse_escape(p))
				return -1;
		} else if (c < 0x20) {
			return fail(p, p->pos, 0,
				    "unescaped control character 0x%02x in string", c);
		} else if (c < 0x80) {
			size_t e = p->pos + 1;
			while (e < p->len && s[e] >= 0x20 && s[e] < 0x80 && s[e] != '"' &&
			       s[e] != '\\' && e - p->pos <= p->lim.max_string)
				e++;
			if (sb_put(p, s + p->pos, e - p->pos))
				return oom(p);
			p->pos = e;
		} else {
			size_t n = json_utf8_len(s + p->pos, p->len - p->pos);
			if (!n)
				return fail(p, p->pos, 0, "invalid UTF-8 in string");
			if (sb_put(p, s + p->pos, n))
				return oom(p);
			p->pos += n;
		}
		if (p->sblen > p->lim.max_string)
			return fail(p, start, 1, "string longer than %u bytes",
				    (unsigned)p->lim.max_string);
	}
}

/* ------------------------------------------------------------------------ */
/* Numbers                                                                  */
/* ------------------------------------------------------------------------ */

/* The pieces of a number as they appear in its text. */
struct numparts {
	int neg;
	size_t int_at, int_len;   /* integer digits */
	size_t frac_at, frac_len; /* fraction digits (0 if no '.') */
	int exp_neg;
	size_t exp_at, exp_len;   /* exponent digits (0 if no 'e') */
};

/*
 * Scan an RFC 8259 number starting at `pos`:
 *   -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
 * Returns the end position, or (size_t)-1 with *bad set to the offending
 * byte (len at end of input) and *why to a message.
 */
static size_t scan_number(const unsigned char *s, size_t len, size_t pos,
			  struct numparts *np, size_t *bad, const char **why)
{
	memset(np, 0, sizeof(*np));
	if (pos < len && s[pos] == '-') {
		np->neg = 1;
		pos++;
	}
	np->int_at = pos;
	if (pos < len && s[pos] == '0') {
		pos++;
		if (pos < len && is_digit(s[pos])) {
			*bad = pos;
			*why = "leading zero in number";
			return (size_t)-1;
		}
	} else if (pos < len && is_digit(s[pos])) {
		while (pos < len && is_digit(s[pos]))
			pos++;
	} else {
		*bad = pos;
		*why = "expected a digit";
		return (size_t)-1;
	}
	np->int_len = pos - np->int_at;
	if (pos < len && s[pos] == '.') {
		pos++;
		np->frac_at = pos;
		while (pos < len && is_digit(s[pos]))
			pos++;
		np->frac_len = pos - np->frac_at;
		if (!np->frac_len) {
			*bad = pos;
			*why = "expected a digit after '.'";
			return (size_t)-1;
		}
	}
	if (pos < len && (s[pos] == 'e' || s[pos] == 'E')) {
		pos++;
		if (pos < len && (s[pos] == '+' || s[pos] == '-')) {
			np->exp_neg = s[pos] == '-';
			pos++;
		}
		np->exp_at = pos;
		while (pos < len && is_digit(s[pos]))
			pos++;
		np->exp_len = pos - np->exp_at;
		if (!np->exp_len) {
			*bad = pos;
			*why = "expected a digit in exponent";
			return (size_t)-1;
		}
	}
	return pos;
}

/* ------------------------------------------------------------------------ */
/* Values                                                                   */
/* ------------------------------------------------------------------------ */

static int parse_literal(struct parser *p, const char *lit, enum json_type t,
			 struct json_value *v)
{
	size_t n = strlen(lit);
	for (size_t k = 0; k < n; k++) {
		if (p->pos + k >= p->len || p->s[p->pos + k] != (unsigned char)lit[k])
			return unexpected(p, p->pos + k, "invalid literal");
	}
	p->pos += n;
	v->type = t;
	v->len = 0;
	v->u.str = NULL;
	return 0;
}

/* A non-container value at p->pos (whitespace already skipped). */
static int parse_scalar(struct parser *p, struct json_value *v)
{
	if (p->pos >= p->len)
		return fail(p, p->len, 0, "unexpected end of input, expected a value");
	unsigned char c = p->s[p->pos];
	if (c == '"') {
		if (parse_string(p))
			return -1;
		char *str = arena_strdup(p->doc, p->str, p->slen);
		if (!str)
			return oom(p);
		v->type = JSON_STRING;
		v->len = (uint32_t)p->slen;
		v->u.str = str;
		return 0;
	}
	if (c == '-' || is_digit(c)) {
		struct numparts np;
		size_t bad;
		const char *why;
		size_t start = p->pos;
		size_t end = scan_number(p->s, p->len, start, &np, &bad, &why);
		if (end == (size_t)-1) {
			if (bad >= p->len)
				return fail(p, p->len, 0, "unexpected end of input, %s", why);
			char d[16];
			describe(p, bad, d, sizeof(d));
			return fail(p, bad, 0, "%s, got %s", why, d);
		}
		if (end - start > p->lim.max_number)
			return fail(p, start, 1, "number longer than %u characters",
				    (unsigned)p->lim.max_number);
		char *num = arena_strdup(p->doc, (const char *)p->s + start, end - start);
		if (!num)
			return oom(p);
		p->pos = end;
		v->type = JSON_NUMBER;
		v->len = (uint32_t)(end - start);
		v->u.num = num;
		return 0;
	}
	if (c == 't')
		return parse_literal(p, "true", JSON_TRUE, v);
	if (c == 'f')
		return parse_literal(p, "false", JSON_FALSE, v);
	if (c == 'n')
		return parse_literal(p, "null", JSON_NULL, v);
	return unexpected(p, p->pos, "expected a value");
}

/* Seeded 32-bit hash of a decoded key (speed only, never correctness). */
static uint32_t key_hash(uint64_t seed, const char *k, size_t n)
{
	uint64_t h = seed ^ (n * 0x9E3779B97F4A7C15ull);
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)k[i]) * 0x100000001B3ull;
	h ^= h >> 32;
	h *= 0xD6E8FEB86659FD93ull;
	h ^= h >> 29;
	return (uint32_t)h;
}

/* Rebuild the chains with twice the buckets, oldest entry first so that
 * every chain stays ordered newest first. */
static int rehash(struct parser *p)
{
	size_t nb = p->nbuckets ? p->nbuckets * 2 : 64;
	if (nb > SIZE_MAX / sizeof(uint32_t) || nb > UINT32_MAX)
		return -1;
	uint32_t *b = calloc(nb, sizeof(uint32_t));
	if (!b)
		return -1;
	for (size_t i = 0; i < p->nmems; i++) {
		if (!p->mems[i].linked)
			continue;
		size_t h = p->mems[i].hash & (nb - 1);
		p->mems[i].next = b[h];
		b[h] = (uint32_t)(i + 1);
	}
	free(p->buckets);
	p->buckets = b;
	p->nbuckets = nb;
	return 0;
}

/* Copy a key into a message, quoting it and keeping it short. */
static void key_for_msg(const char *k, size_t n, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o + 5 < cap; i++) {
		unsigned char c = (unsigned char)k[i];
		out[o++] = c >= 0x20 && c < 0x7f && c != '"' && c != '\\' ? (char)c : '?';
		if (i == 40 && i + 1 < n) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
	}
	out[o] = 0;
}

/* Link mems[i] (hash h) at the head of its chain, growing the buckets
 * first when they are fewer than the entries.  0 or -1 (no memory). */
static int link_entry(struct parser *p, size_t i, uint32_t h)
{
	if (p->nmems > p->nbuckets && rehash(p))
		return -1;
	struct mentry *e = &p->mems[i];
	e->hash = h;
	e->linked = 1;
	size_t b = h & (p->nbuckets - 1);
	e->next = p->buckets[b];
	p->buckets[b] = (uint32_t)(i + 1);
	return 0;
}

/* The object of frame f grew past JSON_LINEAR_KEYS: link its members,
 * oldest first (chains stay newest first).  0 or -1. */
static int link_members(struct parser *p, struct frame *f)
{
	for (size_t i = f->start; i < p->nmems; i++) {
		const struct json_member *m = &p->mems[i].m;
		if (link_entry(p, i, key_hash(p->seed, m->key, m->key_len)))
			return -1;
	}
	f->hashed = 1;
	return 0;
}

/* Is the key just read (p->str, p->slen) already a member of the object
 * of frame f?  By its hash chain (h: its key_hash, when f is hashed), or
 * by comparing its few keys. */
static int find_key(const struct parser *p, const struct frame *f, int hashed, uint32_t h)
{
	if (!hashed) {
		for (size_t i = f->start; i < p->nmems; i++) {
			const struct json_member *m = &p->mems[i].m;
			if (m->key_len == p->slen && (p->slen == 0 || memcmp(m->key, p->str, p->slen) == 0))
				return 1;
		}
		return 0;
	}
	for (uint32_t i = p->nbuckets ? p->buckets[h & (p->nbuckets - 1)] : 0; i; i = p->mems[i - 1].next) {
		const struct mentry *e = &p->mems[i - 1];
		if (i - 1 < f->start)
			break; /* older entries belong to enclosing objects */
		if (e->hash == h && e->m.key_len == p->slen &&
		    (p->slen == 0 || memcmp(e->m.key, p->str, p->slen) == 0))
			return 1;
	}
	return 0;
}

/* Is key (n bytes) one of the NULL-terminated list? */
static int kept(const char *const *keep, const char *key, size_t n)
{
	for (; *keep; keep++)
		if (strlen(*keep) == n && !memcmp(*keep, key, n)) /* a key may hold NUL (\u0000) */
			return 1;
	return 0;
}

/* json_parse_keep: step over the value at p->pos (after the ':') without
 * building it; parse_document then attaches the skipped marker. */
static int skip_member_value(struct parser *p)
{
	skip_ws(p);
	size_t end = scan_past_value((const char *)p->s, p->len, p->pos);
	if (end == p->pos || end > p->len)
		return unexpected(p, p->pos, "expected a value");
	p->pos = end;
	p->skipped = 1;
	return 0;
}

/*
 * Parse "key" : at p->pos (whitespace skipped) for the object on top of
 * the frame stack; check the member count and duplicates; push the member
 * with a null value (filled in when its value is complete).
 */
static int parse_member_key(struct parser *p)
{
	struct frame *f = &p->frames[p->nframes - 1];
	size_t at = p->pos;
	if (at >= p->len || p->s[at] != '"')
		return unexpected(p, at, "expected a string key");
	if (p->nmems - f->start >= p->lim.max_members)
		return fail(p, at, 1, "object has more than %u members",
			    (unsigned)p->lim.max_members);
	if (parse_string(p))
		return -1;
	if (!f->hashed && p->nmems - f->start >= JSON_LINEAR_KEYS && link_members(p, f))
		return oom(p);
	/* one hash of the key for the duplicate check and its link */
	uint32_t h = f->hashed ? key_hash(p->seed, p->str, p->slen) : 0;
	if (find_key(p, f, f->hashed, h)) {
		char k[64];
		key_for_msg(p->str, p->slen, k, sizeof(k));
		return fail(p, at, 0, "duplicate key \"%s\"", k);
	}
	if (grow((void **)&p->mems, &p->capmems, p->nmems, sizeof(*p->mems)))
		return oom(p);
	char *key = arena_strdup(p->doc, p->str, p->slen);
	if (!key)
		return oom(p);
	struct mentry *e = &p->mems[p->nmems];
	memset(e, 0, sizeof(*e));
	e->m.key = key;
	e->m.key_len = (uint32_t)p->slen;
	e->m.value.type = JSON_NULL;
	p->nmems++;
	if (f->hashed && link_entry(p, p->nmems - 1, h))
		return oom(p);
	skip_ws(p);
	if (p->pos >= p->len || p->s[p->pos] != ':')
		return unexpected(p, p->pos, "expected ':' after object key");
	p->pos++;
	if (p->keep && p->nframes == 1) {
		if (!kept(p->keep, key, e->m.key_len))
			return skip_member_value(p);
		p->kept_left--; /* keys are unique: each listed one counts once */
	}
	return 0;
}

/* Close the container on top of the frame stack into *v: move its slice of
 * the scratch stack into the arena and pop it. */
static int close_container(struct parser *p, struct json_value *v)
{
	struct frame *f = &p->frames[--p->nframes];
	if (f->obj) {
		size_t n = p->nmems - f->start;
		struct json_member *m = NULL;
		if (n) {
			m = arena_alloc(p->doc, n * sizeof(*m), _Alignof(struct json_member));
			if (!m)
				return oom(p);
		}
		for (size_t i = 0; i < n; i++)
			m[i] = p->mems[f->start + i].m;
		/* Newest first: each popped entry heads its chain. */
		for (size_t i = p->nmems; f->hashed && i-- > f->start;)
			p->buckets[p->mems[i].hash & (p->nbuckets - 1)] = p->mems[i].next;
		p->nmems = f->start;
		v->type = JSON_OBJECT;
		v->len = (uint32_t)n;
		v->u.members = m;
	} else {
		size_t n = p->nvals - f->start;
		struct json_value *it = NULL;
		if (n) {
			it = arena_alloc(p->doc, n * sizeof(*it), _Alignof(struct json_value));
			if (!it)
				return oom(p);
			memcpy(it, p->vals + f->start, n * sizeof(*it));
		}
		p->nvals = f->start;
		v->type = JSON_ARRAY;
		v->len = (uint32_t)n;
		v->u.items = it;
	}
	return 0;
}

/*
 * The state machine.  `want_value`: a value must start at p->pos (after
 * whitespace).  `have_value`: v is complete; attach it to the enclosing
 * container (or make it the root) and decide what comes next.
 */
static int parse_document(struct parser *p)
{
	struct json_value v;
	for (;;) {
		/* want_value */
		skip_ws(p);
		if (p->skipped) { /* json_parse_keep stepped over this member's value */
			p->skipped = 0;
			v = (struct json_value){.type = JSON_NULL, .len = JSON_SKIPPED_LEN};
		} else if (p->pos < p->len && (p->s[p->pos] == '[' || p->s[p->pos] == '{')) {
			int obj = p->s[p->pos] == '{';
			if (p->nframes >= p->lim.max_depth)
				return fail(p, p->pos, 1, "nesting deeper than %u levels",
					    (unsigned)p->lim.max_depth);
			if (grow((void **)&p->frames, &p->capframes, p->nframes,
				 sizeof(*p->frames)))
				return oom(p);
			p->frames[p->nframes].start = obj ? p->nmems : p->nvals;
			p->frames[p->nframes].obj = obj;
			p->frames[p->nframes].hashed = 0;
			p->nframes++;
			p->pos++;
			skip_ws(p);
			if (p->pos < p->len && p->s[p->pos] == (obj ? '}' : ']')) {
				p->pos++;
				if (close_container(p, &v))
					return -1;
			} else {
				if (obj && parse_member_key(p))
					return -1;
				continue;
			}
		} else if (parse_scalar(p, &v)) {
			return -1;
		}
		/* have_value */
		for (;;) {
			if (p->nframes == 0) {
				p->doc->root = v;
				skip_ws(p);
				if (p->pos < p->len)
					return unexpected(p, p->pos, "expected end of input after the value");
				return 0;
			}
			struct frame *f = &p->frames[p->nframes - 1];
			if (f->obj) {
				p->mems[p->nmems - 1].m.value = v;
			} else {
				if (grow((void **)&p->vals, &p->capvals, p->nvals, sizeof(*p->vals)))
					return oom(p);
				p->vals[p->nvals++] = v;
			}
			skip_ws(p);
			if (f->obj && p->keep && p->nframes == 1 && p->kept_left == 0 && p->pos < p->len &&
			    (p->s[p->pos] == ',' || p->s[p->pos] == '}')) {
				/* json_parse_keep has every listed member, its last one
				 * complete: the rest is not read (trusted text, json.h) */
				if (close_container(p, &v))
					return -1;
				p->doc->root = v;
				return 0;
			}
			if (p->pos < p->len && p->s[p->pos] == ',') {
				p->pos++;
				skip_ws(p);
				if (f->obj) {
					if (parse_member_key(p))
						return -1;
				} else if (p->nvals - f->start >= p->lim.max_members) {
					return fail(p, p->pos, 1, "array has more than %u elements",
						    (unsigned)p->lim.max_members);
				}
				break; /* want the next value */
			}
			if (p->pos < p->len && p->s[p->pos] == (f->obj ? '}' : ']')) {
				p->pos++;
				if (close_container(p, &v))
					return -1;
				continue; /* have_value for the enclosing container */
			}
			return unexpected(p, p->pos, f->obj ? "expected ',' or '}' in object"
							    : "expected ',' or ']' in array");
		}
	}
}

/*
 * Scratch kept between parses on one thread: the stacks and the string
 * scratch of the last parse, so that parsing a small document allocates
 * only its own arena (the engine parses every row it applies, several per
 * request).  A parse takes the thread's scratch and gives it back at the
 * end; scratch that grew past JSON_SCRATCH_KEEP bytes is freed instead, so
 * one large body does not pin its stacks.  The hash buckets are all zero
 * between parses: members are popped last-in first-out and each pop puts
 * its chain's head back, so a complete parse leaves every bucket as it
 * found it, and a failed one clears them.  Freed at thread exit.
 */
#define JSON_SCRATCH_KEEP ((size_t)256 << 10)

struct json_scratch {
	struct json_value *vals;
	size_t capvals;
	struct mentry *mems;
	size_t capmems;
	uint32_t *buckets;
	size_t nbuckets;
	struct frame *frames;
	size_t capframes;
	char *sb;
	size_t sbcap;
};

static _Thread_local struct json_scratch tls_scratch; /* all zero: none kept, or in use */
static _Thread_local int tls_scratch_registered;        /* its destructor is set for this thread */
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_release(struct json_scratch *x)
{
	free(x->vals);
	free(x->mems);
	free(x->buckets);
	free(x->frames);
	free(x->sb);
	memset(x, 0, sizeof(*x));
}

/* At thread exit (the key's value is the thread's tls_scratch). */
static void scratch_destroy(void *arg) { scratch_release(arg); }

static void scratch_key_make(void)
{
	if (pthread_key_create(&scratch_key, scratch_destroy))
		abort(); /* no key at start-up: nothing sensible to do */
}

/* Take this thread's scratch into p (none kept: p starts empty). */
static void scratch_take(struct parser *p)
{
	struct json_scratch *x = &tls_scratch;
	p->vals = x->vals, p->capvals = x->capvals;
	p->mems = x->mems, p->capmems = x->capmems;
	p->buckets = x->buckets, p->nbuckets = x->nbuckets;
	p->frames = x->frames, p->capframes = x->capframes;
	p->sb = x->sb, p->sbcap = x->sbcap;
	memset(x, 0, sizeof(*x));
}

/* Give p's scratch back to the thread, or free it when it grew past the
 * bound.  ok: the parse completed (its buckets are all zero again). */
static void scratch_give(struct parser *p, int ok)
{
	struct json_scratch x = {p->vals, p->capvals, p->mems,	 p->capmems, p->buckets,
				 p->nbuckets, p->frames, p->capframes, p->sb, p->sbcap};
	size_t bytes = x.capvals * sizeof(*x.vals) + x.capmems * sizeof(*x.mems) +
		       x.nbuckets * sizeof(*x.buckets) + x.capframes * sizeof(*x.frames) + x.sbcap;
	if (bytes > JSON_SCRATCH_KEEP) {
		scratch_release(&x);
		return;
	}
	if (!tls_scratch_registered) {
		pthread_once(&scratch_once, scratch_key_make);
		if (pthread_setspecific(scratch_key, &tls_scratch)) {
			scratch_release(&x); /* could not promise to free it at thread exit: keep nothing */
			return;
		}
		tls_scratch_registered = 1;
	}
	if (!ok && x.buckets)
		memset(x.buckets, 0, x.nbuckets * sizeof(*x.buckets));
	tls_scratch = x;
}

/*
 * Parse exactly `len` bytes as one JSON value with optional surrounding
 * whitespace, under `lim` (zero fields and NULL mean the defaults).
 * Returns the document, or NULL with *err (if given) describing the first
 * error.  Scratch memory is kept for the thread's next parse (see
 * json_scratch above) or released, either way.
 */
static struct json_doc *parse_with(const char *text, size_t len, const struct json_limits *lim,
				   const char *const *keep, struct json_error *err)
{
	struct parser p;
	memset(&p, 0, sizeof(p));
	p.keep = keep;
	for (const char *const *k = keep; k && *k; k++)
		p.kept_left++;
	p.s = (const unsigned char *)text;
	p.len = len;
	p.err = err;
	if (lim)
		p.lim = *lim;
	if (!p.lim.max_bytes)
		p.lim.max_bytes = JSON_DEFAULT_MAX_BYTES;
	if (!p.lim.max_depth)
		p.lim.max_depth = JSON_DEFAULT_MAX_DEPTH;
	if (!p.lim.max_string)
		p.lim.max_string = JSON_DEFAULT_MAX_STRING;
	if (!p.lim.max_members)
		p.lim.max_members = JSON_DEFAULT_MAX_MEMBERS;
	if (!p.lim.max_number)
		p.lim.max_number = JSON_DEFAULT_MAX_NUMBER;
	if (err)
		memset(err, 0, sizeof(*err));
	if (!text && len) {
		p.len = 0;
		fail(&p, 0, 0, "no input");
		return NULL;
	}
	if (len > p.lim.max_bytes) {
		fail(&p, p.lim.max_bytes, 1, "input larger than %zu bytes", p.lim.max_bytes);
		return NULL;
	}
	/* The first block, sized to the input, shares the document's
	 * allocation: a small document costs one malloc. */
	size_t first = ARENA_MIN_BLOCK;
	while (first < ARENA_MAX_BLOCK && first < len)
		first *= 2;
	struct json_doc *doc = malloc(DOC_BLOCK_OFF + sizeof(struct ablock) + first);
	if (!doc) {
		oom(&p);
		return NULL;
	}
	memset(doc, 0, sizeof(*doc));
	struct ablock *b0 = (struct ablock *)((char *)doc + DOC_BLOCK_OFF);
	b0->next = NULL;
	b0->cap = first;
	b0->used = 0;
	doc->head = doc->inline_block = b0;
	doc->next_size = first < ARENA_MAX_BLOCK ? first * 2 : first;
	p.doc = doc;
	p.seed = (uint64_t)(uintptr_t)doc * 0x9E3779B97F4A7C15ull ^ (uint64_t)len;

	scratch_take(&p);
	int rc = parse_document(&p);
	scratch_give(&p, rc == 0);
	if (rc) {
		json_doc_free(doc);
		return NULL;
	}
	return doc;
}

struct json_doc *json_parse(const char *text, size_t len, const struct json_limits *lim, struct json_error *err)
{
	return parse_with(text, len, lim, NULL, err);
}

struct json_doc *json_parse_keep(const char *text, size_t len, const char *const *keep, struct json_error *err)
{
	return parse_with(text, len, NULL, keep, err);
}

/* First member of `obj` whose decoded key equals the C string `key`;
 * NULL if `obj` is not an object or has no such key.  Linear. */
const struct json_value *json_get(const struct json_value *obj, const char *key)
{
	if (!obj || obj->type != JSON_OBJECT || !key)
		return NULL;
	size_t n = strlen(key);
	for (uint32_t i = 0; i < obj->len; i++) {
		const struct json_member *m = &obj->u.members[i];
		if (m->key_len == n && memcmp(m->key, key, n) == 0) {
			if (m->value.type == JSON_NULL && m->value.len == JSON_SKIPPED_LEN) {
#ifdef WM_TESTING
				fprintf(stderr, "json_get: \"%s\" was skipped by json_parse_keep: add it to the "
						"decoder's key list\n", key);
				abort();
#endif
				return NULL;
			}
			return &m->value;
		}
	}
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* A light scan of trusted text (json_scan_top_string)                      */
/* ------------------------------------------------------------------------ */

/* Bytes a scan must stop at: 1 inside strings ('"', '\\'), 2 between
 * values (a quote or a bracket). */
static const uint8_t scan_stop[256] = {
	['"'] = 3, ['\\'] = 1, ['{'] = 2, ['}'] = 2, ['['] = 2, [']'] = 2,
};

/* Past the string whose opening quote is at i: the index after its closing
 * quote, or len when it does not close.  *esc: it held a backslash. */
static size_t scan_past_string(const char *t, size_t len, size_t i, int *esc)
{
	*esc = 0;
	for (i++; i < len; i++) {
		while (i < len && !(scan_stop[(unsigned char)t[i]] & 1))
			i++;
		if (i >= len)
			break;
		if (t[i] == '\\') {
			*esc = 1;
			i++;
		} else {
			return i + 1;
		}
	}
	return len;
}

/* Past the value starting at i (a string, a container with everything in
 * it, or a scalar up to the next delimiter), or len. */
static size_t scan_past_value(const char *t, size_t len, size_t i)
{
	int esc;
	if (i >= len)
		return len;
	if (t[i] == '"')
		return scan_past_string(t, len, i, &esc);
	if (t[i] != '{' && t[i] != '[') {
		while (i < len && t[i] != ',' && t[i] != '}' && t[i] != ']' && !is_ws((unsigned char)t[i]))
			i++;
		return i;
	}
	size_t depth = 0;
	while (i < len) {
		while (i < len && !(scan_stop[(unsigned char)t[i]] & 2))
			i++;
		if (i >= len)
			break;
		char c = t[i];
		if (c == '"') {
			i = scan_past_string(t, len, i, &esc);
			continue;
		}
		if (c == '{' || c == '[')
			depth++;
		else if ((c == '}' || c == ']') && --depth == 0)
			return i + 1;
		i++;
	}
	return len;
}

static size_t scan_ws(const char *t, size_t len, size_t i)
{
	while (i < len && is_ws((unsigned char)t[i]))
		i++;
	return i;
}

int json_scan_top_string(const char *text, size_t len, const char *key, const char **out, size_t *out_len)
{
	size_t kl = strlen(key), i = scan_ws(text, len, 0);
	if (i >= len || text[i] != '{')
		return -1;
	for (i = scan_ws(text, len, i + 1); i < len && text[i] == '"';) {
		int esc;
		size_t kend = scan_past_string(text, len, i, &esc);
		int match = !esc && kend - i - 2 == kl && kend <= len && !memcmp(text + i + 1, key, kl);
		i = scan_ws(text, len, kend);
		if (i >= len || text[i] != ':')
			return -1;
		i = scan_ws(text, len, i + 1);
		if (match) {
			if (i >= len || text[i] != '"')
				return -1;
			size_t vend = scan_past_string(text, len, i, &esc);
			if (esc || vend - i < 2 || text[vend - 1] != '"')
				return -1;
			*out = text + i + 1;
			*out_len = vend - i - 2;
			return 0;
		}
		i = scan_ws(text, len, scan_past_value(text, len, i));
		if (i >= len || text[i] != ',')
			return -1;
		i = scan_ws(text, len, i + 1);
	}
	return -1;
}

/* ------------------------------------------------------------------------ */
/* Exact conversions                                                        */
/* ------------------------------------------------------------------------ */

/* The k-th significant-or-not digit of the mantissa (integer then fraction). */
static unsigned digit_at(const unsigned char *s, const struct numparts *np, size_t k)
{
	return k < np->int_len ? (unsigned)(s[np->int_at + k] - '0')
			       : (unsigned)(s[np->frac_at + k - np->int_len] - '0');
}

/*
 * The number text is mantissa digits D (integer part then fraction part)
 * times 10^(E - frac_len); we want D * 10^(E - frac_len + scale) exactly.
 * With shift = E - frac_len + scale:
 *   shift < 0: the last -shift digits of D must be zeros and are dropped;
 *   shift > 0: multiply by ten `shift` times, checking for overflow.
 * Leading zeros of D are skipped, so "0.000" and "0e999999999" are 0.
 * The exponent is read saturating at +-1e9: any exponent that large either
 * overflows or leaves a non-zero fractional part for an input that fits in
 * memory, so saturation does not change the answer.
 */
int json_text_to_fixed(const char *text, size_t len, unsigned scale, int64_t *out)
{
	if (!text || scale > 18)
		return -1;
	const unsigned char *s = (const unsigned char *)text;
	struct numparts np;
	size_t bad;
	const char *why;
	if (scan_number(s, len, 0, &np, &bad, &why) != len)
		return -1;
	int64_t e = 0;
	for (size_t i = 0; i < np.exp_len; i++) {
		e = e * 10 + (s[np.exp_at + i] - '0');
		if (e > 1000000000)
			e = 1000000000;
	}
	if (np.exp_neg)
		e = -e;
	size_t nd = np.int_len + np.frac_len;
	size_t fz = 0;
	while (fz < nd && digit_at(s, &np, fz) == 0)
		fz++;
	if (fz == nd) {
		*out = 0;
		return 0;
	}
	if (np.frac_len > (size_t)INT64_MAX / 4)
		return -1;
	int64_t shift = e - (int64_t)np.frac_len + (int64_t)scale;
	size_t end = nd;
	if (shift < 0) {
		uint64_t drop = (uint64_t)-shift;
		if (drop >= nd - fz)
			return -1; /* would drop the leading non-zero digit */
		for (size_t k = nd - (size_t)drop; k < nd; k++)
			if (digit_at(s, &np, k) != 0)
				return -1;
		end = nd - (size_t)drop;
		shift = 0;
	}
	uint64_t limit = np.neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	uint64_t acc = 0;
	for (size_t k = fz; k < end; k++) {
		unsigned d = digit_at(s, &np, k);
		if (acc > (limit - d) / 10)
			return -1;
		acc = acc * 10 + d;
	}
	for (int64_t i = 0; i < shift; i++) {
		if (acc > limit / 10)
			return -1;
		acc *= 10;
	}
	if (np.neg)
		*out = acc == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)acc;
	else
		*out = (int64_t)acc;
	return 0;
}

/* json_text_to_fixed() on a number value; -1 for any other type. */
int json_to_fixed(const struct json_value *v, unsigned scale, int64_t *out)
{
	if (!v || v->type != JSON_NUMBER)
		return -1;
	return json_text_to_fixed(v->u.num, v->len, scale, out);
}

/* Integer text only (no '.', no exponent) that fits in int64; else -1. */
int json_to_int64(const struct json_value *v, int64_t *out)
{
	if (!v || v->type != JSON_NUMBER)
		return -1;
	for (uint32_t i = 0; i < v->len; i++) {
		char c = v->u.num[i];
		if (c == '.' || c == 'e' || c == 'E')
			return -1;
	}
	return json_text_to_fixed(v->u.num, v->len, 0, out);
}
