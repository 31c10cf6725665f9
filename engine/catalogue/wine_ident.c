/*
 * wine_ident.c -- identifier parsing and normalisation for catalogue dedup.
 *
 * Why: ingest must never insert a second row for a wine it already holds
 * (spec 2.7: resolve tiers 1, 2, 3 before creating, enrich on a match).  A
 * match is only as good as its key: two feeds spelling the same bottle
 * differently ("75cl" / "0,75 l", "N.V." / "non vintage", "Léoville" /
 * "LEOVILLE") must produce the same key, and two different bottles must not.
 * So every key here is canonical text with one spelling per value:
 *   tier 1  GTIN in its 14-digit GS1 form; a case GTIN-14 resolves to the
 *           GTIN-13 of the unit it contains, so a case and its bottle meet;
 *   tier 2  LWIN parts, and the format-level LWIN-16 (wine+vintage+size);
 *   tier 3  slug(producer)|slug(cuvee)|vintage-or-nv|ml|CC.
 * Where a spelling is ambiguous ("1,500 ml") or cannot be folded safely
 * (non-Latin scripts) the functions refuse with an error instead of guessing:
 * a refused key sends the record to the next tier or to manual review,
 * whereas a wrong key merges two wines for good.
 *
 * No allocation, no floating point (decimal text is parsed into scaled
 * integers), every loop bounded by a named constant or the input length.
 */
#include "engine/catalogue/wine_ident.h"

#include <string.h>

#include "engine/base/iso.h"

/* ---- errors ------------------------------------------------------------- */

static const char *const wid_messages[WID_E__COUNT] = {
	[WID_OK] = "ok",
	[WID_E_EMPTY] = "empty value",
	[WID_E_TOO_LONG] = "value longer than its limit",
	[WID_E_LENGTH] = "wrong number of digits (GTIN: 8, 12, 13 or 14; LWIN: 7, 11, 16 or 18)",
	[WID_E_NON_DIGIT] = "only the digits 0-9 are allowed",
	[WID_E_CHECK_DIGIT] = "check digit does not match (GS1 modulo 10)",
	[WID_E_ALL_ZERO] = "a GTIN of only zeros is never assigned",
	[WID_E_VARIABLE_MEASURE] = "indicator 9 is a variable-measure item, not a fixed case",
	[WID_E_NOT_CASE] = "not a case GTIN-14 (indicator 1-8)",
	[WID_E_INDICATOR] = "case indicator must be 1-8",
	[WID_E_LWIN_VINTAGE] = "LWIN vintage must be a year 1001-2099, or 1000/0000 for non-vintage",
	[WID_E_LWIN_BOTTLE] = "LWIN bottle size must be 00001-99999 ml",
	[WID_E_LWIN_CASE] = "LWIN bottles per case must be 01-99",
	[WID_E_LWIN_PARTS] = "LWIN parts missing or out of range for the requested length",
	[WID_E_SYNTAX] = "not a recognised number or vintage",
	[WID_E_NEGATIVE] = "a volume cannot be negative",
	[WID_E_ZERO] = "a volume cannot be zero",
	[WID_E_NO_UNIT] = "volume needs a unit (ml, cl, dl or l)",
	[WID_E_UNIT] = "unknown volume unit (ml, cl, dl or l)",
	[WID_E_AMBIGUOUS] = "ambiguous: three digits after ',' or '.' may be thousands grouping",
	[WID_E_PRECISION] = "more precise than one microlitre",
	[WID_E_RANGE] = "value out of range",
	[WID_E_UTF8] = "invalid UTF-8",
	[WID_E_UNSUPPORTED_CHAR] = "character outside Latin-1 and Latin Extended-A letters",
	[WID_E_NO_ALNUM] = "no letter or digit",
	[WID_E_COUNTRY] = "not an ISO 3166-1 alpha-2 country code",
	[WID_E_BUF] = "output buffer too small",
	[WID_E_ARG] = "invalid argument",
};

const char *wid_strerror(enum wid_err e)
{
	if ((unsigned)e >= WID_E__COUNT || !wid_messages[e])
		return "unknown error";
	return wid_messages[e];
}

/* ---- small helpers ------------------------------------------------------ */

static int is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static int is_blank(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static unsigned char ascii_lower(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') ? (unsigned char)(c - 'A' + 'a') : c;
}

static int all_digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!is_digit((unsigned char)s[i]))
			return 0;
	return 1;
}

/* Value of n (<= 9) ASCII digits already checked. */
static unsigned digits_value(const char *s, size_t n)
{
	unsigned v = 0;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (unsigned)(s[i] - '0');
	return v;
}

/* Write v as exactly n digits, left-padded with '0' (v < 10^n). */
static void put_digits(char *out, unsigned v, size_t n)
{
	for (size_t i = n; i > 0; i--) {
		out[i - 1] = (char)('0' + v % 10);
		v /= 10;
	}
}

/* Trim blanks from both ends of s[*b..*e). */
static void trim(const char *s, size_t *b, size_t *e)
{
	while (*b < *e && is_blank((unsigned char)s[*b]))
		(*b)++;
	while (*e > *b && is_blank((unsigned char)s[*e - 1]))
		(*e)--;
}

/* ---- tier 1: GTIN ------------------------------------------------------- */

int wid_gtin_check_digit(const char *d, size_t n)
{
	if (!d || n == 0 || n > 17)
		return -1;
	unsigned sum = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)d[n - 1 - i];
		if (!is_digit(c))
			return -1;
		sum += (unsigned)(c - '0') * ((i % 2 == 0) ? 3u : 1u);
	}
	return (int)((10 - sum % 10) % 10);
}

static enum wid_gtin_kind gtin_kind(unsigned indicator)
{
	if (indicator == 0)
		return WID_GTIN_UNIT;
	return indicator == 9 ? WID_GTIN_VARIABLE : WID_GTIN_CASE;
}

enum wid_err wid_gtin_parse(const char *s, size_t len, struct wid_gtin *out)
{
	if (!out || (!s && len))
		return WID_E_ARG;
	if (len == 0)
		return WID_E_EMPTY;
	if (len != 8 && len != 12 && len != 13 && len != 14)
		return WID_E_LENGTH;
	if (!all_digits(s, len))
		return WID_E_NON_DIGIT;
	size_t z = 0;
	while (z < len && s[z] == '0')
		z++;
	if (z == len)
		return WID_E_ALL_ZERO;
	if (wid_gtin_check_digit(s, len - 1) != s[len - 1] - '0')
		return WID_E_CHECK_DIGIT;
	struct wid_gtin g;
	memset(g.digits, '0', WID_GTIN_LEN);
	memcpy(g.digits + (WID_GTIN_LEN - len), s, len);
	g.digits[WID_GTIN_LEN] = '\0';
	g.src_len = (unsigned char)len;
	g.indicator = (unsigned char)(g.digits[0] - '0');
	g.kind = gtin_kind(g.indicator);
	*out = g;
	return WID_OK;
}

/* digits[0] = lead; digits[1..13) = body[0..12); digits[13] = check digit. */
static void gtin_compose(struct wid_gtin *g, char lead, const char *body12)
{
	g->digits[0] = lead;
	memcpy(g->digits + 1, body12, 12);
	g->digits[13] = (char)('0' + wid_gtin_check_digit(g->digits, 13));
	g->digits[WID_GTIN_LEN] = '\0';
	g->indicator = (unsigned char)(lead - '0');
	g->kind = gtin_kind(g->indicator);
}

enum wid_err wid_gtin_unit_of_case(const struct wid_gtin *case_gtin, struct wid_gtin *unit)
{
	if (!case_gtin || !unit || !all_digits(case_gtin->digits, WID_GTIN_LEN))
		return WID_E_ARG;
	unsigned ind = (unsigned)(case_gtin->digits[0] - '0');
	if (ind == 0)
		return WID_E_NOT_CASE;
	if (ind == 9)
		return WID_E_VARIABLE_MEASURE;
	struct wid_gtin u;
	gtin_compose(&u, '0', case_gtin->digits + 1);
	size_t z = 0;
	while (z < WID_GTIN_LEN && u.digits[z] == '0')
		z++;
	if (z == WID_GTIN_LEN)
		return WID_E_ALL_ZERO;
	u.src_len = 13;
	*unit = u;
	return WID_OK;
}

enum wid_err wid_gtin_case_of_unit(const struct wid_gtin *unit, int indicator,
				   struct wid_gtin *case_gtin)
{
	if (!unit || !case_gtin || !all_digits(unit->digits, WID_GTIN_LEN) || unit->digits[0] != '0')
		return WID_E_ARG;
	if (indicator < 1 || indicator > 8)
		return WID_E_INDICATOR;
	struct wid_gtin c;
	gtin_compose(&c, (char)('0' + indicator), unit->digits + 1);
	c.src_len = 14;
	*case_gtin = c;
	return WID_OK;
}

/* ---- tier 2: LWIN ------------------------------------------------------- */

enum wid_err wid_lwin_parse(const char *s, size_t len, struct wid_lwin *out)
{
	if (!out || (!s && len))
		return WID_E_ARG;
	if (len == 0)
		return WID_E_EMPTY;
	if (len != WID_LWIN7_LEN && len != WID_LWIN11_LEN && len != WID_LWIN16_LEN &&
	    len != WID_LWIN18_LEN)
		return WID_E_LENGTH;
	if (!all_digits(s, len))
		return WID_E_NON_DIGIT;
	struct wid_lwin w = {.len = (int)len, .vintage = WID_VINTAGE_NONE};
	memcpy(w.wine, s, WID_LWIN7_LEN);
	w.wine[WID_LWIN7_LEN] = '\0';
	if (len >= WID_LWIN11_LEN) {
		unsigned v = digits_value(s + 7, 4);
		if (v == WID_LWIN_NV_CODE || v == WID_LWIN_NV_ALIAS)
			w.vintage = WID_NV;
		else if (v >= WID_LWIN_YEAR_MIN && v <= WID_LWIN_YEAR_MAX)
			w.vintage = (int)v;
		else
			return WID_E_LWIN_VINTAGE;
	}
	if (len == WID_LWIN16_LEN) {
		w.bottle_ml = digits_value(s + 11, 5);
	} else if (len == WID_LWIN18_LEN) {
		w.case_bottles = digits_value(s + 11, 2);
		w.bottle_ml = digits_value(s + 13, 5);
		if (w.case_bottles == 0)
			return WID_E_LWIN_CASE;
	}
	if (len >= WID_LWIN16_LEN && w.bottle_ml == 0)
		return WID_E_LWIN_BOTTLE;
	*out = w;
	return WID_OK;
}

enum wid_err wid_lwin_build(const struct wid_lwin *parts, int len, char *out, size_t cap)
{
	if (!parts || !out)
		return WID_E_ARG;
	if (len != WID_LWIN7_LEN && len != WID_LWIN11_LEN && len != WID_LWIN16_LEN &&
	    len != WID_LWIN18_LEN)
		return WID_E_ARG;
	if (cap < (size_t)len + 1)
		return WID_E_BUF;
	if (memchr(parts->wine, '\0', sizeof parts->wine) != parts->wine + WID_LWIN7_LEN ||
	    !all_digits(parts->wine, WID_LWIN7_LEN))
		return WID_E_LWIN_PARTS;
	char buf[WID_LWIN18_LEN + 1];
	memcpy(buf, parts->wine, WID_LWIN7_LEN);
	if (len >= WID_LWIN11_LEN) {
		int v = parts->vintage;
		if (v == WID_NV)
			v = WID_LWIN_NV_CODE;
		else if (v < WID_LWIN_YEAR_MIN || v > WID_LWIN_YEAR_MAX)
			return WID_E_LWIN_PARTS;
		put_digits(buf + 7, (unsigned)v, 4);
	}
	if (len >= WID_LWIN16_LEN) {
		if (parts->bottle_ml < 1 || parts->bottle_ml > WID_LWIN_BOTTLE_ML_MAX)
			return WID_E_LWIN_PARTS;
		if (len == WID_LWIN16_LEN) {
			put_digits(buf + 11, parts->bottle_ml, 5);
		} else {
			if (parts->case_bottles < 1 || parts->case_bottles > WID_LWIN_CASE_MAX)
				return WID_E_LWIN_PARTS;
			put_digits(buf + 11, parts->case_bottles, 2);
			put_digits(buf + 13, parts->bottle_ml, 5);
		}
	}
	buf[len] = '\0';
	memcpy(out, buf, (size_t)len + 1);
	return WID_OK;
}

enum wid_err wid_lwin_format_key(const char *s, size_t len, char out[WID_LWIN16_LEN + 1])
{
	if (!out)
		return WID_E_ARG;
	struct wid_lwin w;
	enum wid_err e = wid_lwin_parse(s, len, &w);
	if (e != WID_OK)
		return e;
	if (w.len < WID_LWIN16_LEN)
		return WID_E_LWIN_PARTS;
	return wid_lwin_build(&w, WID_LWIN16_LEN, out, WID_LWIN16_LEN + 1);
}

/* ---- volumes ------------------------------------------------------------ */

/* Digit j of the concatenation a[0..na) b[0..nb). */
static unsigned char digit_at(const char *a, size_t na, const char *b, size_t j)
{
	return (unsigned char)(j < na ? a[j] : b[j - na]);
}

/*
 * The decimal number  int_digits "." frac_digits  x 10^exp10, scaled by
 * 10^scale, as an exact integer in 1..WID_VOLUME_MAX_UL.  Leading and trailing
 * zeros are stripped first so long spellings of a small value still fit;
 * whatever remains must have a non-negative power of ten (else the value is
 * finer than the unit: WID_E_PRECISION) and at most 18 digits in all (else it
 * is far past the bound: WID_E_RANGE), so the product never overflows.
 */
static enum wid_err scale_decimal(const char *ip, size_t ni, const char *fp, size_t nf,
				  long exp10, int scale, int64_t *out)
{
	size_t n = ni + nf;
	size_t first = 0;
	while (first < n && digit_at(ip, ni, fp, first) == '0')
		first++;
	if (first == n)
		return WID_E_ZERO;
	size_t last = n; /* exclusive end of the significant digits */
	while (digit_at(ip, ni, fp, last - 1) == '0')
		last--;
	long k = (long)scale + exp10 - (long)nf + (long)(n - last);
	if (k < 0)
		return WID_E_PRECISION;
	if ((long)(last - first) + k > 18)
		return WID_E_RANGE;
	int64_t v = 0;
	for (size_t j = first; j < last; j++)
		v = v * 10 + (digit_at(ip, ni, fp, j) - '0');
	for (long j = 0; j < k; j++)
		v *= 10;
	if (v > WID_VOLUME_MAX_UL)
		return WID_E_RANGE;
	*out = v;
	return WID_OK;
}

struct unit_name {
	const char *name;
	int scale; /* microlitres per unit = 10^scale */
};

static const struct unit_name units[] = {
	{"ml", 3},          {"millilitre", 3}, {"millilitres", 3}, {"milliliter", 3},
	{"milliliters", 3}, {"cl", 4},         {"centilitre", 4},  {"centilitres", 4},
	{"centiliter", 4},  {"centiliters", 4}, {"dl", 5},         {"l", 6},
	{"lt", 6},          {"ltr", 6},        {"litre", 6},       {"litres", 6},
	{"liter", 6},       {"liters", 6},
};

/* Scale of the unit spelled s[0..n) (ASCII, any case), or -1. */
static int unit_scale(const char *s, size_t n)
{
	for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
		const char *name = units[u].name;
		if (strlen(name) != n)
			continue;
		size_t i = 0;
		while (i < n && ascii_lower((unsigned char)s[i]) == (unsigned char)name[i])
			i++;
		if (i == n)
			return units[u].scale;
	}
	return -1;
}

enum wid_err wid_volume_parse(const char *s, size_t len, int64_t *out_ul)
{
	if (!out_ul || (!s && len))
		return WID_E_ARG;
	if (len > WID_VOLUME_TEXT_MAX)
		return WID_E_TOO_LONG;
	size_t i = 0, e = len;
	trim(s, &i, &e);
	if (i == e)
		return WID_E_EMPTY;
	if (s[i] == '-')
		return WID_E_NEGATIVE;
	size_t ib = i;
	while (i < e && is_digit((unsigned char)s[i]))
		i++;
	size_t ni = i - ib;
	if (ni == 0)
		return WID_E_SYNTAX;
	size_t fb = i, nf = 0;
	if (i < e && (s[i] == '.' || s[i] == ',')) {
		fb = ++i;
		while (i < e && is_digit((unsigned char)s[i]))
			i++;
		nf = i - fb;
		if (nf == 0)
			return WID_E_SYNTAX;
	}
	while (i < e && is_blank((unsigned char)s[i]))
		i++;
	if (i == e)
		return WID_E_NO_UNIT;
	int scale = unit_scale(s + i, e - i);
	if (scale < 0) {
		unsigned char c = (unsigned char)s[i];
		return (is_digit(c) || c == '.' || c == ',') ? WID_E_SYNTAX : WID_E_UNIT;
	}
	if (nf == 3) {
		size_t z = ib;
		while (z < ib + ni && s[z] == '0')
			z++;
		if (z < ib + ni)
			return WID_E_AMBIGUOUS;
	}
	return scale_decimal(s + ib, ni, s + fb, nf, 0, scale, out_ul);
}

enum wid_err wid_volume_parse_liters(const char *s, size_t len, int64_t *out_ul)
{
	if (!out_ul || (!s && len))
		return WID_E_ARG;
	if (len == 0)
		return WID_E_EMPTY;
	if (len > WID_VOLUME_TEXT_MAX)
		return WID_E_TOO_LONG;
	size_t i = 0;
	int neg = 0;
	if (s[i] == '-') {
		neg = 1;
		i++;
	}
	/* int: "0" | [1-9][0-9]* */
	size_t ib = i;
	if (i < len && s[i] == '0') {
		i++;
	} else {
		while (i < len && is_digit((unsigned char)s[i]))
			i++;
	}
	size_t ni = i - ib;
	if (ni == 0)
		return WID_E_SYNTAX;
	size_t fb = i, nf = 0;
	if (i < len && s[i] == '.') {
		fb = ++i;
		while (i < len && is_digit((unsigned char)s[i]))
			i++;
		nf = i - fb;
		if (nf == 0)
			return WID_E_SYNTAX;
	}
	long exp10 = 0;
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		int eneg = 0;
		if (i < len && (s[i] == '+' || s[i] == '-'))
			eneg = s[i++] == '-';
		size_t eb = i;
		while (i < len && is_digit((unsigned char)s[i])) {
			if (exp10 < 100000) /* far past any representable value */
				exp10 = exp10 * 10 + (s[i] - '0');
			i++;
		}
		if (i == eb)
			return WID_E_SYNTAX;
		if (eneg)
			exp10 = -exp10;
	}
	if (i != len)
		return WID_E_SYNTAX;
	if (neg)
		return WID_E_NEGATIVE;
	return scale_decimal(s + ib, ni, s + fb, nf, exp10, 6, out_ul);
}

/* Decimal text of v (no padding); returns its length (at most 20). */
static size_t put_uint(char *out, uint64_t v)
{
	char tmp[20];
	size_t n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	return n;
}

size_t wid_volume_format_ml(int64_t ul, char *out, size_t cap)
{
	if (!out || cap < WID_VOLUME_ML_TEXT_CAP || ul < 1 || ul > WID_VOLUME_MAX_UL)
		return 0;
	size_t n = put_uint(out, (uint64_t)(ul / WID_UL_PER_ML));
	unsigned frac = (unsigned)(ul % WID_UL_PER_ML);
	if (frac) {
		out[n++] = '.';
		put_digits(out + n, frac, 3);
		n += 3;
		while (out[n - 1] == '0')
			n--;
	}
	out[n] = '\0';
	return n;
}

/* ---- slug --------------------------------------------------------------- */

/*
 * Folds of U+00C0..U+017F (Latin-1 Supplement letters, Latin Extended-A) to
 * lower-case ASCII: the base letter of the canonical decomposition, and by
 * convention for letters with none: ae, oe, ss, th (thorn), d (eth, d with
 * stroke), o (o with stroke), l (l with stroke / middle dot), ij, ng, h, t, k,
 * i (dotless), s (long s), n (n preceded by apostrophe).  "" marks the two
 * symbols in the range (multiplication and division signs): separators.
 */
static const char fold_table[0x180 - 0xC0][3] = {
	/* 00C0 */ "a", "a", "a", "a", "a", "a", "ae", "c",
	/* 00C8 */ "e", "e", "e", "e", "i", "i", "i", "i",
	/* 00D0 */ "d", "n", "o", "o", "o", "o", "o", "",
	/* 00D8 */ "o", "u", "u", "u", "u", "y", "th", "ss",
	/* 00E0 */ "a", "a", "a", "a", "a", "a", "ae", "c",
	/* 00E8 */ "e", "e", "e", "e", "i", "i", "i", "i",
	/* 00F0 */ "d", "n", "o", "o", "o", "o", "o", "",
	/* 00F8 */ "o", "u", "u", "u", "u", "y", "th", "y",
	/* 0100 */ "a", "a", "a", "a", "a", "a", "c", "c",
	/* 0108 */ "c", "c", "c", "c", "c", "c", "d", "d",
	/* 0110 */ "d", "d", "e", "e", "e", "e", "e", "e",
	/* 0118 */ "e", "e", "e", "e", "g", "g", "g", "g",
	/* 0120 */ "g", "g", "g", "g", "h", "h", "h", "h",
	/* 0128 */ "i", "i", "i", "i", "i", "i", "i", "i",
	/* 0130 */ "i", "i", "ij", "ij", "j", "j", "k", "k",
	/* 0138 */ "k", "l", "l", "l", "l", "l", "l", "l",
	/* 0140 */ "l", "l", "l", "n", "n", "n", "n", "n",
	/* 0148 */ "n", "n", "ng", "ng", "o", "o", "o", "o",
	/* 0150 */ "o", "o", "oe", "oe", "r", "r", "r", "r",
	/* 0158 */ "r", "r", "s", "s", "s", "s", "s", "s",
	/* 0160 */ "s", "s", "t", "t", "t", "t", "t", "t",
	/* 0168 */ "u", "u", "u", "u", "u", "u", "u", "u",
	/* 0170 */ "u", "u", "u", "u", "w", "w", "y", "y",
	/* 0178 */ "y", "z", "z", "z", "z", "z", "z", "s",
};

/*
 * One strictly decoded UTF-8 code point from s[0..len) (len >= 1): returns the
 * bytes it takes (1-4), or 0 if the sequence is invalid (stray continuation,
 * overlong, surrogate, above U+10FFFF, or cut short).
 */
static size_t utf8_next(const unsigned char *s, size_t len, uint32_t *cp)
{
	unsigned c = s[0];
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	size_t n;
	uint32_t v, min;
	if (c >= 0xC2 && c <= 0xDF) {
		n = 2, v = c & 0x1F, min = 0x80;
	} else if (c >= 0xE0 && c <= 0xEF) {
		n = 3, v = c & 0x0F, min = 0x800;
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4, v = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (size_t k = 1; k < n; k++) {
		if ((s[k] & 0xC0) != 0x80)
			return 0;
		v = (v << 6) | (s[k] & 0x3Fu);
	}
	if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		return 0;
	*cp = v;
	return n;
}

enum fold_class { FOLD_SEP, FOLD_DROP, FOLD_MAP, FOLD_BAD };

/* What a code point becomes in a slug; *map is set for FOLD_MAP. */
static enum fold_class fold(uint32_t cp, char one[2], const char **map)
{
	if (cp < 0x80) {
		unsigned char c = ascii_lower((unsigned char)cp);
		if (is_digit(c) || (c >= 'a' && c <= 'z')) {
			one[0] = (char)c;
			one[1] = '\0';
			*map = one;
			return FOLD_MAP;
		}
		return FOLD_SEP;
	}
	if (cp < 0xC0)
		return FOLD_SEP; /* C1 controls, NBSP, Latin-1 punctuation and symbols */
	if (cp < 0x180) {
		*map = fold_table[cp - 0xC0];
		return (*map)[0] ? FOLD_MAP : FOLD_SEP;
	}
	if (cp >= 0x2B0 && cp <= 0x2FF)
		return FOLD_SEP; /* spacing modifier letters, e.g. U+02BC apostrophe */
	if (cp >= 0x300 && cp <= 0x36F)
		return FOLD_DROP; /* combining diacritical marks */
	if ((cp >= 0x2000 && cp <= 0x206F) || (cp >= 0x2100 && cp <= 0x214F) || cp == 0xFEFF)
		return FOLD_SEP;
	return FOLD_BAD;
}

static enum wid_err slug_into(const char *s, size_t len, char *out, size_t cap, size_t *out_len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0, i = 0;
	int sep = 0;
	while (i < len) {
		uint32_t cp;
		size_t k = utf8_next(p + i, len - i, &cp);
		if (!k)
			return WID_E_UTF8;
		i += k;
		char one[2];
		const char *m = NULL;
		switch (fold(cp, one, &m)) {
		case FOLD_SEP:
			sep = 1;
			continue;
		case FOLD_DROP:
			continue;
		case FOLD_BAD:
			return WID_E_UNSUPPORTED_CHAR;
		case FOLD_MAP:
			break;
		}
		size_t ml = strlen(m);
		int dash = sep && n > 0;
		if (n + (size_t)dash + ml + 1 > cap)
			return WID_E_BUF;
		if (dash)
			out[n++] = '-';
		sep = 0;
		memcpy(out + n, m, ml);
		n += ml;
	}
	out[n] = '\0';
	*out_len = n;
	return WID_OK;
}

enum wid_err wid_slug(const char *s, size_t len, char *out, size_t cap, size_t *out_len)
{
	if ((!s && len) || !out || !out_len || cap == 0)
		return WID_E_ARG;
	if (len > WID_TEXT_MAX) {
		out[0] = '\0';
		return WID_E_TOO_LONG;
	}
	enum wid_err e = slug_into(s, len, out, cap, out_len);
	if (e != WID_OK)
		out[0] = '\0';
	return e;
}

/* ---- vintage ------------------------------------------------------------ */

/* Non-vintage spellings after slugging with '-' removed (see the header). */
static const char *const nv_words[] = {
	"nv", "nonvintage", "sansannee", "sansmillesime", "ohnejahrgang", "sinanada", "senzaannata",
};

enum wid_err wid_vintage_parse(const char *s, size_t len, int *out)
{
	if (!out || (!s && len))
		return WID_E_ARG;
	if (len > WID_VINTAGE_TEXT_MAX)
		return WID_E_TOO_LONG;
	size_t b = 0, e = len;
	trim(s, &b, &e);
	if (b == e)
		return WID_E_EMPTY;
	if (all_digits(s + b, e - b)) {
		if (e - b != 4)
			return WID_E_SYNTAX;
		unsigned y = digits_value(s + b, 4);
		if (y < WID_VINTAGE_MIN || y > WID_VINTAGE_MAX)
			return WID_E_RANGE;
		*out = (int)y;
		return WID_OK;
	}
	/* a fold never yields more than two ASCII bytes per input byte */
	char slug[2 * WID_VINTAGE_TEXT_MAX + 1];
	size_t n;
	if (slug_into(s + b, e - b, slug, sizeof slug, &n) != WID_OK)
		return WID_E_SYNTAX;
	size_t w = 0;
	for (size_t r = 0; r < n; r++)
		if (slug[r] != '-')
			slug[w++] = slug[r];
	slug[w] = '\0';
	for (size_t k = 0; k < sizeof nv_words / sizeof nv_words[0]; k++)
		if (!strcmp(slug, nv_words[k])) {
			*out = WID_NV;
			return WID_OK;
		}
	return WID_E_SYNTAX;
}

size_t wid_vintage_format(int v, char *out, size_t cap)
{
	if (!out || cap < 5)
		return 0;
	if (v == WID_NV) {
		memcpy(out, "nv", 3);
		return 2;
	}
	if (v < WID_VINTAGE_MIN || v > WID_VINTAGE_MAX)
		return 0;
	put_digits(out, (unsigned)v, 4);
	out[4] = '\0';
	return 4;
}

/* ---- natural key -------------------------------------------------------- */

/* Slug of one name for the key: bounded by WID_NK_PART_MAX. */
static enum wid_err nk_part(const char *s, size_t len, char part[WID_NK_PART_MAX + 1], size_t *n)
{
	enum wid_err e = wid_slug(s, len, part, WID_NK_PART_MAX + 1, n);
	return e == WID_E_BUF ? WID_E_TOO_LONG : e;
}

enum wid_err wid_natural_key(const struct wid_nk *in, char *out, size_t cap, size_t *out_len)
{
	if (!in || !out || !out_len || cap == 0 || (!in->producer && in->producer_len) ||
	    (!in->cuvee && in->cuvee_len) || (!in->country && in->country_len))
		return WID_E_ARG;
	out[0] = '\0';
	char prod[WID_NK_PART_MAX + 1], cuv[WID_NK_PART_MAX + 1];
	size_t np, nc;
	enum wid_err e = nk_part(in->producer, in->producer_len, prod, &np);
	if (e != WID_OK)
		return e;
	if (np == 0)
		return WID_E_NO_ALNUM;
	e = nk_part(in->cuvee, in->cuvee_len, cuv, &nc);
	if (e != WID_OK)
		return e;
	char vin[5], vol[WID_VOLUME_ML_TEXT_CAP];
	size_t nv = wid_vintage_format(in->vintage, vin, sizeof vin);
	size_t nl = wid_volume_format_ml(in->volume_ul, vol, sizeof vol);
	if (!nv || !nl)
		return WID_E_RANGE;
	if (in->country_len != 2)
		return WID_E_COUNTRY;
	char cc[2];
	for (int k = 0; k < 2; k++) {
		unsigned char c = (unsigned char)in->country[k];
		cc[k] = (char)((c >= 'a' && c <= 'z') ? c - 'a' + 'A' : c);
	}
	if (!iso_country_valid(cc, 2))
		return WID_E_COUNTRY;
	size_t total = np + 1 + nc + 1 + nv + 1 + nl + 1 + 2;
	if (total + 1 > cap)
		return WID_E_BUF;
	const char *parts[5] = {prod, cuv, vin, vol, cc};
	const size_t lens[5] = {np, nc, nv, nl, 2};
	size_t n = 0;
	for (int k = 0; k < 5; k++) {
		if (k)
			out[n++] = '|';
		memcpy(out + n, parts[k], lens[k]);
		n += lens[k];
	}
	out[n] = '\0';
	*out_len = n;
	return WID_OK;
}
