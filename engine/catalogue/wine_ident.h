/*
 * wine_ident.h -- the identifiers catalogue dedup matches on (spec 2.7, issue 4
 * "Dedup at ingest"): tier 1 GTIN (EAN-13 per format and vintage, GTIN-14 for
 * cases), tier 2 LWIN (Liv-ex), tier 3 the normalised natural key
 * producer | cuvee | vintage-or-nv | volume_ml | country.
 *
 * Pure functions: no allocation, no globals, no floating point, no I/O.  Every
 * input is (pointer, length) and need not be NUL-terminated; every input and
 * output has a named bound; every failure is a `enum wid_err` with a message
 * from wid_strerror().  Outputs are written only on WID_OK unless a function
 * says otherwise.
 *
 * Representations chosen here:
 *   - GTIN: 14 ASCII digits, left-padded with '0' (GS1 "right justified in a
 *     14 digit field"), so a GTIN-8/12/13 and its padded GTIN-14 compare equal.
 *   - Volume: integer microlitres (int64_t).  Exact for every spelling with at
 *     most 6 decimals in litres / 3 in millilitres (187.5 ml = 187500 ul);
 *     finer values are rejected (WID_E_PRECISION), never rounded.
 *   - Vintage: int, a year 1900-2099 (spec 2.2) or WID_NV (0).
 *   - Slug: [a-z0-9] runs joined by single '-', no leading/trailing '-'.
 */
#ifndef WM_WINE_IDENT_H
#define WM_WINE_IDENT_H

#include <stddef.h>
#include <stdint.h>

/* ---- errors ------------------------------------------------------------- */

enum wid_err {
	WID_OK = 0,
	WID_E_EMPTY,            /* input is empty (or only blanks) */
	WID_E_TOO_LONG,         /* input or a normalised part exceeds its named bound */
	WID_E_LENGTH,           /* GTIN/LWIN digit count is not one of the allowed lengths */
	WID_E_NON_DIGIT,        /* GTIN/LWIN contains something other than 0-9 */
	WID_E_CHECK_DIGIT,      /* GTIN check digit does not match GS1 mod 10 */
	WID_E_ALL_ZERO,         /* GTIN of only zeros (never assigned) */
	WID_E_VARIABLE_MEASURE, /* GTIN-14 indicator 9: variable-measure item, no fixed unit */
	WID_E_NOT_CASE,         /* a case operation was given a unit GTIN */
	WID_E_INDICATOR,        /* case indicator outside 1-8 */
	WID_E_LWIN_VINTAGE,     /* LWIN vintage field outside 1000-2099 and not 0000 */
	WID_E_LWIN_BOTTLE,      /* LWIN bottle size 00000 */
	WID_E_LWIN_CASE,        /* LWIN bottles per case 00 */
	WID_E_LWIN_PARTS,       /* LWIN build: the parts cannot form the requested length */
	WID_E_SYNTAX,           /* not a number / not a vintage spelling */
	WID_E_NEGATIVE,         /* a volume with a minus sign */
	WID_E_ZERO,             /* a volume of zero */
	WID_E_NO_UNIT,          /* a volume without a unit */
	WID_E_UNIT,             /* a volume with an unknown unit */
	WID_E_AMBIGUOUS,        /* "1,500 ml" / "1.500 ml": thousands grouping or decimal? */
	WID_E_PRECISION,        /* finer than one microlitre */
	WID_E_RANGE,            /* number above its bound (volume, year) */
	WID_E_UTF8,             /* invalid UTF-8 */
	WID_E_UNSUPPORTED_CHAR, /* a letter outside the fold table (e.g. Greek, CJK) */
	WID_E_NO_ALNUM,         /* a name with no letter or digit left after slugging */
	WID_E_COUNTRY,          /* not an officially assigned ISO 3166-1 alpha-2 code */
	WID_E_BUF,              /* the caller's output buffer is too small */
	WID_E_ARG,              /* NULL pointer or value out of its documented domain */
	WID_E__COUNT
};

/* A short human sentence for an error; never NULL (unknown values included). */
const char *wid_strerror(enum wid_err e);

/* ---- tier 1: GTIN ------------------------------------------------------- */

#define WID_GTIN_LEN 14 /* normalised form: 14 digits */

enum wid_gtin_kind {
	WID_GTIN_UNIT = 0,     /* GTIN-8/12/13, or GTIN-14 with indicator 0 (padding) */
	WID_GTIN_CASE = 1,     /* GTIN-14 with indicator 1-8: a trade-item grouping */
	WID_GTIN_VARIABLE = 2, /* GTIN-14 with indicator 9: variable measure */
};

struct wid_gtin {
	char digits[WID_GTIN_LEN + 1]; /* 14 digits + NUL */
	unsigned char src_len;         /* 8, 12, 13 or 14: the length parsed */
	unsigned char indicator;       /* digits[0] as a number, 0-9 */
	enum wid_gtin_kind kind;
};

/*
 * GS1 mod-10 check digit of the n data digits d[0..n) (weights 3,1,3,... from
 * the rightmost data digit).  Returns 0-9, or -1 if n is 0 or above 17 or a
 * byte is not a digit.
 */
int wid_gtin_check_digit(const char *d, size_t n);

/*
 * Parse a GTIN-8, -12, -13 (EAN-13) or -14: ASCII digits only, exactly one of
 * those lengths (no spaces, no hyphens), check digit verified.  Errors, in the
 * order they are checked: WID_E_EMPTY, WID_E_LENGTH, WID_E_NON_DIGIT,
 * WID_E_ALL_ZERO, WID_E_CHECK_DIGIT.  Indicator 9 is not an error: kind is
 * WID_GTIN_VARIABLE and the caller decides (catalogue dedup should not use it
 * as a tier-1 key: it names no fixed format).
 */
enum wid_err wid_gtin_parse(const char *s, size_t len, struct wid_gtin *out);

/*
 * The unit a case GTIN-14 contains: drop the indicator, keep the 12 digits
 * that follow, recompute the check digit (GS1: case = indicator + first 12
 * digits of the unit's GTIN-13 + check).  The result is a WID_GTIN_UNIT whose
 * digits+1 is the unit's GTIN-13.  Errors: WID_E_NOT_CASE (already a unit),
 * WID_E_VARIABLE_MEASURE (indicator 9), WID_E_ARG.
 */
enum wid_err wid_gtin_unit_of_case(const struct wid_gtin *case_gtin, struct wid_gtin *unit);

/*
 * The case GTIN-14 with indicator 1-8 that groups a unit (the inverse of
 * wid_gtin_unit_of_case).  Errors: WID_E_INDICATOR (outside 1-8), WID_E_ARG
 * (NULL, or the input is not a WID_GTIN_UNIT).
 */
enum wid_err wid_gtin_case_of_unit(const struct wid_gtin *unit, int indicator,
				   struct wid_gtin *case_gtin);

/* ---- tier 2: LWIN ------------------------------------------------------- */

/*
 * LWIN as Liv-ex defines it (shared/reference/wine-facts.md 1.1):
 *   LWIN-7  = wine id (6 digits + a 7th check digit, algorithm unpublished:
 *             not verified here)
 *   LWIN-11 = LWIN-7 + vintage (4 digits)
 *   LWIN-16 = LWIN-11 + bottle size in ml (5 digits, 00750)
 *   LWIN-18 = LWIN-11 + bottles per case (2 digits) + bottle size (5 digits);
 *             the case count sits BEFORE the size, so LWIN-18 is not LWIN-16
 *             with two digits appended.
 * The spec's "+ case = 16" is read as the format-level key, LWIN-16.
 *
 * Non-vintage: Liv-ex's code is NOT FOUND in wine-facts.md.  WID_LWIN_NV_CODE
 * (1000) is what this module writes; parsing also accepts 0000 as NV (one
 * unverified public builder uses it).  Change the constant if Liv-ex says
 * otherwise.
 */
#define WID_LWIN7_LEN 7
#define WID_LWIN11_LEN 11
#define WID_LWIN16_LEN 16
#define WID_LWIN18_LEN 18
#define WID_LWIN_NV_CODE 1000
#define WID_LWIN_NV_ALIAS 0    /* "0000" parses as NV too */
#define WID_LWIN_YEAR_MIN 1001 /* the field is a year; old bottles trade */
#define WID_LWIN_YEAR_MAX 2099
#define WID_LWIN_BOTTLE_ML_MAX 99999 /* five digits */
#define WID_LWIN_CASE_MAX 99         /* two digits */

#define WID_NV 0              /* vintage value of a non-vintage wine */
#define WID_VINTAGE_NONE (-1) /* LWIN-7: no vintage in the key */

struct wid_lwin {
	int len;                      /* 7, 11, 16 or 18: the length parsed */
	char wine[WID_LWIN7_LEN + 1]; /* LWIN-7 digits + NUL */
	int vintage;                  /* year, WID_NV, or WID_VINTAGE_NONE (LWIN-7) */
	unsigned bottle_ml;           /* 1-99999, or 0 when absent (LWIN-7/11) */
	unsigned case_bottles;        /* 1-99, or 0 when absent (LWIN-7/11/16) */
};

/*
 * Parse an LWIN-7/11/16/18 (ASCII digits only, exactly one of those lengths).
 * Errors: WID_E_EMPTY, WID_E_LENGTH, WID_E_NON_DIGIT, WID_E_LWIN_VINTAGE,
 * WID_E_LWIN_BOTTLE, WID_E_LWIN_CASE.
 */
enum wid_err wid_lwin_parse(const char *s, size_t len, struct wid_lwin *out);

/*
 * Write the LWIN of length `len` (7, 11, 16 or 18) from parts, NUL-terminated,
 * into out[cap] (cap >= len + 1).  Uses only the parts that length needs, so an
 * LWIN-18's parts build its LWIN-16 (format-level key) and LWIN-11.  NV is
 * written as WID_LWIN_NV_CODE.  Errors: WID_E_LWIN_PARTS (a needed part is
 * absent or out of range, or wine is not 7 digits), WID_E_BUF, WID_E_ARG.
 */
enum wid_err wid_lwin_build(const struct wid_lwin *parts, int len, char *out, size_t cap);

/*
 * The format-level key (LWIN-16) of an LWIN-16 or LWIN-18 text, into
 * out[WID_LWIN16_LEN + 1].  Errors: those of wid_lwin_parse, and
 * WID_E_LWIN_PARTS for an LWIN-7/11 (no bottle size).
 */
enum wid_err wid_lwin_format_key(const char *s, size_t len, char out[WID_LWIN16_LEN + 1]);

/* ---- volumes ------------------------------------------------------------ */

#define WID_VOLUME_TEXT_MAX 64                  /* bytes of volume text accepted */
#define WID_VOLUME_MAX_UL 1000000000LL          /* 1000 l, in microlitres */
#define WID_UL_PER_ML 1000
#define WID_VOLUME_ML_TEXT_CAP 16               /* "1000000.999" + NUL fits */

/*
 * Parse a volume with its unit into microlitres: blanks, a number, optional
 * blanks, a unit, blanks.  Number: digits, optionally one '.' or ',' decimal
 * separator followed by digits ("0,75 l", "187.5 ml"); no sign, no exponent.
 * Units (ASCII, any case): ml, millilitre(s), milliliter(s); cl, centilitre(s),
 * centiliter(s); dl; l, lt, ltr, litre(s), liter(s).
 * A separator followed by exactly three digits after a non-zero integer part
 * ("1,500 ml", "1.500 l") is WID_E_AMBIGUOUS: thousands grouping in one
 * locale, a decimal in another ("0,750 l" is unambiguous and accepted).
 * Errors: WID_E_EMPTY, WID_E_TOO_LONG (> WID_VOLUME_TEXT_MAX), WID_E_NEGATIVE,
 * WID_E_SYNTAX, WID_E_NO_UNIT, WID_E_UNIT, WID_E_AMBIGUOUS, WID_E_ZERO,
 * WID_E_PRECISION, WID_E_RANGE (> WID_VOLUME_MAX_UL).
 */
enum wid_err wid_volume_parse(const char *s, size_t len, int64_t *out_ul);

/*
 * Parse the text of a JSON number that is a volume in litres (the record's
 * `volume_in_liters`, e.g. "0.75", "1.5", "0.1875", "7.5e-1") into
 * microlitres.  Strict JSON number grammar, no blanks, no unit.  Errors:
 * WID_E_EMPTY, WID_E_TOO_LONG, WID_E_NEGATIVE, WID_E_SYNTAX, WID_E_ZERO,
 * WID_E_PRECISION, WID_E_RANGE.
 */
enum wid_err wid_volume_parse_liters(const char *s, size_t len, int64_t *out_ul);

/*
 * Millilitres as text for the natural key: the integer part, then '.' and the
 * fraction without trailing zeros when there is one ("750", "187.5", "0.001").
 * Returns the length written (NUL-terminated), or 0 if ul is outside
 * 1..WID_VOLUME_MAX_UL or cap < WID_VOLUME_ML_TEXT_CAP.
 */
size_t wid_volume_format_ml(int64_t ul, char *out, size_t cap);

/* ---- vintage ------------------------------------------------------------ */

#define WID_VINTAGE_TEXT_MAX 32
#define WID_VINTAGE_MIN 1900
#define WID_VINTAGE_MAX 2099

/*
 * Parse a vintage: blanks around four digits 1900-2099, or a non-vintage
 * spelling.  A spelling is compared after slugging with the '-' removed, so
 * case, dots, slashes, spaces and accents do not matter; the accepted words
 * are nv ("NV", "N.V.", "n/v"), nonvintage ("non vintage", "Non-Vintage"),
 * sansannee ("sans année"), sansmillesime, ohnejahrgang, sinanada ("sin
 * añada"), senzaannata.  Empty text is WID_E_EMPTY, never NV.
 * Errors: WID_E_EMPTY, WID_E_TOO_LONG, WID_E_RANGE (four digits outside
 * 1900-2099), WID_E_SYNTAX.
 */
enum wid_err wid_vintage_parse(const char *s, size_t len, int *out);

/*
 * "2015" or "nv" into out[cap] (cap >= 5), NUL-terminated; returns the length,
 * or 0 if v is neither WID_NV nor 1900-2099 or cap is too small.
 */
size_t wid_vintage_format(int v, char *out, size_t cap);

/* ---- slug and natural key ----------------------------------------------- */

#define WID_TEXT_MAX 1024  /* bytes of UTF-8 accepted by wid_slug */
#define WID_NK_PART_MAX 160 /* characters of a producer or cuvee slug in a key */
/* producer | cuvee | vintage | volume | country, NUL included */
#define WID_NK_CAP (2 * WID_NK_PART_MAX + 4 + WID_VOLUME_ML_TEXT_CAP + 2 + 4 + 1)

/*
 * Slug of UTF-8 text: ASCII letters lower-cased; letters of Latin-1
 * Supplement and Latin Extended-A folded by a table (é->e, ü->u, ß->ss,
 * æ->ae, œ->oe, ø->o, å->a, ñ->n, ç->c, ł->l, þ->th, ...); combining marks
 * U+0300-U+036F dropped (decomposed "e" + U+0301 -> "e"); every other ASCII
 * byte, C1/Latin-1 symbols (NBSP, ·, ×, ÷), spacing modifiers U+02B0-U+02FF,
 * General Punctuation U+2000-U+206F (’ – “), Letterlike Symbols U+2100-U+214F
 * and U+FEFF separate words.  Separator runs become one '-', none at either end.
 * No abbreviations are expanded and no words dropped: "Ch. Margaux" gives
 * "ch-margaux", not "chateau-margaux"; "Müller" gives "muller", not "mueller".
 * Writes the slug NUL-terminated into out[cap] and its length into *out_len;
 * the slug may be empty and is never longer than the input (no fold is longer
 * than its UTF-8 bytes), so cap = len + 1 always suffices.  On error out is
 * "".  Idempotent: slugging a slug returns it unchanged.
 * Errors: WID_E_TOO_LONG (len > WID_TEXT_MAX), WID_E_UTF8 (overlong,
 * surrogate, truncated or > U+10FFFF), WID_E_UNSUPPORTED_CHAR (any other code
 * point: other scripts are refused rather than collapsed, so two names in
 * Greek never share a key), WID_E_BUF (cap too small), WID_E_ARG.
 */
enum wid_err wid_slug(const char *s, size_t len, char *out, size_t cap, size_t *out_len);

struct wid_nk {
	const char *producer; /* UTF-8, required: its slug must not be empty */
	size_t producer_len;
	const char *cuvee; /* UTF-8, may be empty (the grand vin under the house name) */
	size_t cuvee_len;
	int vintage;        /* 1900-2099 or WID_NV */
	int64_t volume_ul;  /* 1..WID_VOLUME_MAX_UL */
	const char *country; /* ISO 3166-1 alpha-2, any letter case */
	size_t country_len;
};

/*
 * The tier-3 natural key "slug(producer)|slug(cuvee)|vintage-or-nv|ml|CC",
 * e.g. "chateau-margaux|pavillon-rouge|2015|750|FR", NUL-terminated into
 * out[cap] (WID_NK_CAP always suffices), length in *out_len.  Idempotent: the
 * parts of a key fed back (slugs as names, "nv"/year through
 * wid_vintage_parse, the same microlitres) give the same key.  The ml part
 * re-parses as "<ml> ml" through wid_volume_parse, except a value with exactly
 * three decimals and a non-zero integer part ("1.125"), refused as ambiguous.
 * On error out is "" (when out and cap allow).  Errors: those of wid_slug, WID_E_NO_ALNUM (producer slug empty),
 * WID_E_TOO_LONG (a slug over WID_NK_PART_MAX), WID_E_RANGE (vintage or
 * volume out of domain), WID_E_COUNTRY, WID_E_BUF, WID_E_ARG.
 */
enum wid_err wid_natural_key(const struct wid_nk *in, char *out, size_t cap, size_t *out_len);

#endif
