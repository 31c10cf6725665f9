/*
 * test_wine_ident.c -- the dedup identifiers (engine/catalogue/wine_ident.c): GTIN
 * check digits, normalisation and case -> unit, LWIN parts for the four Liv-ex
 * lengths, volume spellings, vintage and NV spellings, slugs of accented
 * names, the natural key, every error, and generated property tests
 * (idempotence, slug alphabet, round trips).  Check digits are recomputed here
 * by an independent implementation, never taken from the module under test.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "engine/catalogue/wine_ident.h"
#include "tests/wm_test.h"

#define S(lit) (lit), strlen(lit)

/* ---- helpers ------------------------------------------------------------ */

/* GS1 mod 10, written from the rule in wine-facts.md 1.2 without the module:
 * multiply digits by 3 and 1 alternately starting at the rightmost data digit. */
static int ref_check_digit(const char *data)
{
	size_t n = strlen(data);
	int odd = 0, even = 0; /* positions counted from the right, 1-based */
	for (size_t i = 0; i < n; i++) {
		int d = data[n - 1 - i] - '0';
		if (i % 2 == 0)
			odd += d;
		else
			even += d;
	}
	int sum = odd * 3 + even;
	int c = 10 - sum % 10;
	return c == 10 ? 0 : c;
}

/* data digits + their check digit, into out (NUL-terminated) */
static void with_check(const char *data, char *out)
{
	size_t n = strlen(data);
	memcpy(out, data, n);
	out[n] = (char)('0' + ref_check_digit(data));
	out[n + 1] = '\0';
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rng(void)
{
	/* xorshift64*: deterministic, so a failure reproduces */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Dull;
}

static unsigned rnd(unsigned n)
{
	return (unsigned)(rng() % n);
}

/* Slug shape: [a-z0-9] runs joined by single '-'. */
static int slug_shape_ok(const char *s, size_t n)
{
	if (strlen(s) != n)
		return 0;
	if (n && (s[0] == '-' || s[n - 1] == '-'))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '-') {
			if (i + 1 < n && s[i + 1] == '-')
				return 0;
		} else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) {
			return 0;
		}
	}
	return 1;
}

/* Random name made of ASCII, Latin-1/Extended-A letters (UTF-8), combining
 * marks, punctuation and blanks: the material feeds are made of. */
static size_t gen_name(char *buf, size_t cap)
{
	static const char *const pieces[] = {
		"a", "Z", "m", "7", "0", " ", "  ", "-", "--", ".", ",", "'", "&", "/", "(", ")",
		"\xc3\xa9",         /* é */
		"\xc3\x89",         /* É */
		"\xc3\xbc",         /* ü */
		"\xc3\x9f",         /* ß */
		"\xc5\x93",         /* œ */
		"\xc3\x86",         /* Æ */
		"\xc3\xb8",         /* ø */
		"\xc5\x81",         /* Ł */
		"\xc3\xb1",         /* ñ */
		"\xc3\xa7",         /* ç */
		"\xc3\xbe",         /* þ */
		"\xc4\xb2",         /* Ĳ */
		"\xc5\x8a",         /* Ŋ */
		"\xc3\x97",         /* × (separator) */
		"\xc2\xa0",         /* NBSP */
		"\xc2\xb7",         /* middle dot */
		"\xe2\x80\x99",     /* ’ */
		"\xe2\x80\x93",     /* – */
		"\xcc\x81",         /* combining acute */
		"\xef\xbb\xbf",     /* BOM */
		"Ch\xc3\xa2teau", "Domaine", "Weingut", "L\xc3\xa9oville", "Las Cases", "2015",
	};
	size_t n = 0, k = rnd(12);
	for (size_t i = 0; i < k; i++) {
		const char *p = pieces[rnd(sizeof pieces / sizeof pieces[0])];
		size_t l = strlen(p);
		if (n + l + 1 > cap)
			break;
		memcpy(buf + n, p, l);
		n += l;
	}
	buf[n] = '\0';
	return n;
}

/* ---- gtin --------------------------------------------------------------- */

WM_TEST(gtin, gs1_published_examples)
{
	/* GS1 India 890400021003 -> 7, GS1 HK 629104150021 -> 3 (wine-facts 1.2),
	 * GS1's EAN-13 4006381333931. */
	const char *data[] = {"890400021003", "629104150021", "400638133393"};
	const int expect[] = {7, 3, 1};
	for (size_t i = 0; i < 3; i++) {
		cr_assert_eq(ref_check_digit(data[i]), expect[i], "reference %s", data[i]);
		cr_assert_eq(wid_gtin_check_digit(data[i], 12), expect[i], "%s", data[i]);
		char full[16];
		with_check(data[i], full);
		struct wid_gtin g;
		cr_assert_eq(wid_gtin_parse(full, 13, &g), WID_OK, "%s", full);
		cr_assert_eq(g.kind, WID_GTIN_UNIT);
		cr_assert_eq(g.src_len, 13);
		cr_assert_eq(g.digits[0], '0');
		cr_assert_str_eq(g.digits + 1, full);
	}
	cr_assert_eq(wid_gtin_check_digit("", 0), -1);
	cr_assert_eq(wid_gtin_check_digit("12a", 3), -1);
	cr_assert_eq(wid_gtin_check_digit("123456789012345678", 18), -1, "over 17 data digits");
	cr_assert_eq(wid_gtin_check_digit(NULL, 3), -1);
}

WM_TEST(gtin, normalised_to_14_digits)
{
	struct wid_gtin a, b;
	/* a UPC-A (GTIN-12) and the same number written as EAN-13 and GTIN-14 */
	char upc[16];
	with_check("03600029145", upc);
	cr_assert_str_eq(upc, "036000291452");
	cr_assert_eq(wid_gtin_parse(upc, 12, &a), WID_OK);
	cr_assert_str_eq(a.digits, "00036000291452");
	cr_assert_eq(a.src_len, 12);
	cr_assert_eq(wid_gtin_parse(S("0036000291452"), &b), WID_OK);
	cr_assert_str_eq(b.digits, a.digits);
	cr_assert_eq(wid_gtin_parse(S("00036000291452"), &b), WID_OK);
	cr_assert_str_eq(b.digits, a.digits);
	cr_assert_eq(b.kind, WID_GTIN_UNIT, "indicator 0 is padding, a unit");
	/* GTIN-8 */
	char g8[16];
	with_check("9638507", g8);
	cr_assert_eq(wid_gtin_parse(g8, 8, &a), WID_OK);
	cr_assert_eq(strncmp(a.digits, "000000", 6), 0);
	cr_assert_str_eq(a.digits + 6, g8);
	/* a French-prefixed (GS1 France 300-379) bottle, check digit computed here */
	char fr[16];
	with_check("317676000101", fr);
	cr_assert_eq(wid_gtin_parse(fr, 13, &a), WID_OK);
	cr_assert_eq(a.kind, WID_GTIN_UNIT);
}

WM_TEST(gtin, every_error)
{
	struct wid_gtin g = {.src_len = 99};
	cr_assert_eq(wid_gtin_parse("", 0, &g), WID_E_EMPTY);
	cr_assert_eq(wid_gtin_parse(NULL, 0, &g), WID_E_EMPTY);
	cr_assert_eq(wid_gtin_parse(NULL, 13, &g), WID_E_ARG);
	cr_assert_eq(wid_gtin_parse(S("4006381333931"), NULL), WID_E_ARG);
	const char *lengths[] = {"1", "4006381", "400638133", "40063813339", "400638133393100",
				 "4006381333931000000000"};
	for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++)
		cr_assert_eq(wid_gtin_parse(S(lengths[i]), &g), WID_E_LENGTH, "%s", lengths[i]);
	cr_assert_eq(wid_gtin_parse(S("400638133393a"), &g), WID_E_NON_DIGIT);
	cr_assert_eq(wid_gtin_parse(S(" 400638133393"), &g), WID_E_NON_DIGIT);
	cr_assert_eq(wid_gtin_parse(S("4006-38133393"), &g), WID_E_NON_DIGIT);
	cr_assert_eq(wid_gtin_parse(S("+400638133393"), &g), WID_E_NON_DIGIT);
	cr_assert_eq(wid_gtin_parse("4006381333931\0", 14, &g), WID_E_NON_DIGIT);
	/* every wrong check digit */
	char t[] = "4006381333931";
	for (char c = '0'; c <= '9'; c++) {
		t[12] = c;
		cr_assert_eq(wid_gtin_parse(t, 13, &g), c == '1' ? WID_OK : WID_E_CHECK_DIGIT, "%s", t);
	}
	cr_assert_eq(wid_gtin_parse(S("00000000"), &g), WID_E_ALL_ZERO);
	cr_assert_eq(wid_gtin_parse(S("000000000000"), &g), WID_E_ALL_ZERO);
	cr_assert_eq(wid_gtin_parse(S("0000000000000"), &g), WID_E_ALL_ZERO);
	cr_assert_eq(wid_gtin_parse(S("00000000000000"), &g), WID_E_ALL_ZERO);
	/* the output is untouched on error */
	struct wid_gtin before = g;
	cr_assert_eq(wid_gtin_parse(S("4006381333932"), &g), WID_E_CHECK_DIGIT);
	cr_assert_eq(memcmp(&before, &g, sizeof g), 0);
}

WM_TEST(gtin, indicator_classifies_unit_case_variable)
{
	char data[16], full[16];
	for (int ind = 0; ind <= 9; ind++) {
		snprintf(data, sizeof data, "%c890400021003", '0' + ind);
		with_check(data, full);
		struct wid_gtin g;
		cr_assert_eq(wid_gtin_parse(full, 14, &g), WID_OK, "%s", full);
		cr_assert_eq(g.indicator, ind);
		enum wid_gtin_kind k = ind == 0 ? WID_GTIN_UNIT : ind == 9 ? WID_GTIN_VARIABLE : WID_GTIN_CASE;
		cr_assert_eq(g.kind, k, "indicator %d", ind);
	}
}

WM_TEST(gtin, case_resolves_to_unit)
{
	/* wine-facts 1.2 derived example: unit 8904000210037, case 18904000210034 */
	struct wid_gtin c, u, back;
	cr_assert_eq(wid_gtin_parse(S("18904000210034"), &c), WID_OK);
	cr_assert_eq(c.kind, WID_GTIN_CASE);
	cr_assert_eq(wid_gtin_unit_of_case(&c, &u), WID_OK);
	cr_assert_eq(u.kind, WID_GTIN_UNIT);
	cr_assert_str_eq(u.digits + 1, "8904000210037", "digits+1 is the unit's GTIN-13");
	cr_assert_str_eq(u.digits, "08904000210037");
	cr_assert_eq(wid_gtin_case_of_unit(&u, 1, &back), WID_OK);
	cr_assert_str_eq(back.digits, "18904000210034");
	/* every indicator: the case check digit is recomputed, the unit's comes back */
	struct wid_gtin unit;
	cr_assert_eq(wid_gtin_parse(S("4006381333931"), &unit), WID_OK);
	for (int ind = 1; ind <= 8; ind++) {
		char data[16], want[16];
		snprintf(data, sizeof data, "%c400638133393", '0' + ind);
		with_check(data, want);
		cr_assert_eq(wid_gtin_case_of_unit(&unit, ind, &c), WID_OK);
		cr_assert_str_eq(c.digits, want);
		cr_assert_eq(c.kind, WID_GTIN_CASE);
		struct wid_gtin reparsed;
		cr_assert_eq(wid_gtin_parse(c.digits, 14, &reparsed), WID_OK, "the case is a valid GTIN-14");
		cr_assert_eq(wid_gtin_unit_of_case(&reparsed, &u), WID_OK);
		cr_assert_str_eq(u.digits, unit.digits);
	}
	/* errors */
	cr_assert_eq(wid_gtin_unit_of_case(&unit, &u), WID_E_NOT_CASE);
	char var[16];
	with_check("9890400021003", var);
	cr_assert_eq(wid_gtin_parse(var, 14, &c), WID_OK);
	cr_assert_eq(c.kind, WID_GTIN_VARIABLE);
	cr_assert_eq(wid_gtin_unit_of_case(&c, &u), WID_E_VARIABLE_MEASURE);
	cr_assert_eq(wid_gtin_case_of_unit(&unit, 0, &c), WID_E_INDICATOR);
	cr_assert_eq(wid_gtin_case_of_unit(&unit, 9, &c), WID_E_INDICATOR);
	struct wid_gtin already_case;
	cr_assert_eq(wid_gtin_parse(S("18904000210034"), &already_case), WID_OK);
	cr_assert_eq(wid_gtin_case_of_unit(&already_case, 1, &c), WID_E_ARG, "a case of a case");
	/* a case around an all-zero body has no real unit */
	char zero_case[16];
	with_check("1000000000000", zero_case);
	cr_assert_eq(wid_gtin_parse(zero_case, 14, &c), WID_OK);
	cr_assert_eq(wid_gtin_unit_of_case(&c, &u), WID_E_ALL_ZERO);
	cr_assert_eq(wid_gtin_unit_of_case(NULL, &u), WID_E_ARG);
}

WM_TEST(gtin, single_digit_errors_always_detected)
{
	/* generated property: a valid GTIN-13 with any one digit changed is refused */
	for (int round = 0; round < 2000; round++) {
		char data[13], full[16];
		for (int i = 0; i < 12; i++)
			data[i] = (char)('0' + rnd(10));
		data[0] = (char)('1' + rnd(9)); /* never all zero */
		data[12] = '\0';
		with_check(data, full);
		struct wid_gtin g;
		cr_assert_eq(wid_gtin_parse(full, 13, &g), WID_OK, "%s", full);
		int pos = (int)rnd(13);
		char old = full[pos];
		full[pos] = (char)('0' + (old - '0' + 1 + (int)rnd(9)) % 10);
		enum wid_err e = wid_gtin_parse(full, 13, &g);
		cr_assert(e == WID_E_CHECK_DIGIT || e == WID_E_ALL_ZERO, "%s accepted", full);
	}
}

/* ---- lwin --------------------------------------------------------------- */

WM_TEST(lwin, four_lengths_liv_ex_examples)
{
	/* the official examples (wine-facts 1.1) */
	struct wid_lwin w;
	cr_assert_eq(wid_lwin_parse(S("1234567"), &w), WID_OK);
	cr_assert_eq(w.len, 7);
	cr_assert_str_eq(w.wine, "1234567");
	cr_assert_eq(w.vintage, WID_VINTAGE_NONE);
	cr_assert_eq(w.bottle_ml, 0);
	cr_assert_eq(w.case_bottles, 0);

	cr_assert_eq(wid_lwin_parse(S("12345672012"), &w), WID_OK);
	cr_assert_eq(w.len, 11);
	cr_assert_eq(w.vintage, 2012);
	cr_assert_eq(w.bottle_ml, 0);

	cr_assert_eq(wid_lwin_parse(S("1234567201200750"), &w), WID_OK);
	cr_assert_eq(w.len, 16);
	cr_assert_eq(w.vintage, 2012);
	cr_assert_eq(w.bottle_ml, 750);
	cr_assert_eq(w.case_bottles, 0, "LWIN-16 carries no case count");

	cr_assert_eq(wid_lwin_parse(S("123456720121200750"), &w), WID_OK);
	cr_assert_eq(w.len, 18);
	cr_assert_str_eq(w.wine, "1234567");
	cr_assert_eq(w.vintage, 2012);
	cr_assert_eq(w.case_bottles, 12, "case count sits before the size");
	cr_assert_eq(w.bottle_ml, 750);

	/* 6 x 1500 ml: not 60 bottles of 01500 misread, not 1500 in 06 */
	cr_assert_eq(wid_lwin_parse(S("123456720150601500"), &w), WID_OK);
	cr_assert_eq(w.case_bottles, 6);
	cr_assert_eq(w.bottle_ml, 1500);
	cr_assert_eq(w.vintage, 2015);
}

WM_TEST(lwin, format_key_and_build)
{
	char key[WID_LWIN16_LEN + 1];
	cr_assert_eq(wid_lwin_format_key(S("123456720121200750"), key), WID_OK);
	cr_assert_str_eq(key, "1234567201200750", "LWIN-18 -> LWIN-16 drops the case count");
	cr_assert_eq(wid_lwin_format_key(S("123456720120600750"), key), WID_OK);
	cr_assert_str_eq(key, "1234567201200750", "a 6-pack and a 12-pack share the format key");
	cr_assert_eq(wid_lwin_format_key(S("1234567201200750"), key), WID_OK);
	cr_assert_str_eq(key, "1234567201200750");
	cr_assert_eq(wid_lwin_format_key(S("12345672012"), key), WID_E_LWIN_PARTS);
	cr_assert_eq(wid_lwin_format_key(S("1234567"), key), WID_E_LWIN_PARTS);
	cr_assert_eq(wid_lwin_format_key(S("12345x7"), key), WID_E_NON_DIGIT);

	struct wid_lwin w;
	char out[WID_LWIN18_LEN + 1];
	cr_assert_eq(wid_lwin_parse(S("123456720121200750"), &w), WID_OK);
	cr_assert_eq(wid_lwin_build(&w, 18, out, sizeof out), WID_OK);
	cr_assert_str_eq(out, "123456720121200750");
	cr_assert_eq(wid_lwin_build(&w, 16, out, sizeof out), WID_OK);
	cr_assert_str_eq(out, "1234567201200750");
	cr_assert_eq(wid_lwin_build(&w, 11, out, sizeof out), WID_OK);
	cr_assert_str_eq(out, "12345672012");
	cr_assert_eq(wid_lwin_build(&w, 7, out, sizeof out), WID_OK);
	cr_assert_str_eq(out, "1234567");
	/* buffer exactly fits / one short */
	cr_assert_eq(wid_lwin_build(&w, 16, out, 17), WID_OK);
	cr_assert_eq(wid_lwin_build(&w, 16, out, 16), WID_E_BUF);
	/* parts missing for the length asked */
	struct wid_lwin p16;
	cr_assert_eq(wid_lwin_parse(S("1234567201200750"), &p16), WID_OK);
	cr_assert_eq(wid_lwin_build(&p16, 18, out, sizeof out), WID_E_LWIN_PARTS, "no case count");
	struct wid_lwin p7;
	cr_assert_eq(wid_lwin_parse(S("1234567"), &p7), WID_OK);
	cr_assert_eq(wid_lwin_build(&p7, 11, out, sizeof out), WID_E_LWIN_PARTS, "no vintage");
	struct wid_lwin bad = w;
	memcpy(bad.wine, "12345", 6);
	cr_assert_eq(wid_lwin_build(&bad, 7, out, sizeof out), WID_E_LWIN_PARTS, "wine id not 7 digits");
	bad = w;
	bad.bottle_ml = 100000;
	cr_assert_eq(wid_lwin_build(&bad, 16, out, sizeof out), WID_E_LWIN_PARTS);
	bad = w;
	bad.case_bottles = 100;
	cr_assert_eq(wid_lwin_build(&bad, 18, out, sizeof out), WID_E_LWIN_PARTS);
	bad = w;
	bad.vintage = 2100;
	cr_assert_eq(wid_lwin_build(&bad, 11, out, sizeof out), WID_E_LWIN_PARTS);
	cr_assert_eq(wid_lwin_build(&w, 12, out, sizeof out), WID_E_ARG);
	cr_assert_eq(wid_lwin_build(NULL, 7, out, sizeof out), WID_E_ARG);
}

WM_TEST(lwin, non_vintage_code)
{
	struct wid_lwin w;
	char out[WID_LWIN18_LEN + 1];
	cr_assert_eq(wid_lwin_parse(S("12345671000"), &w), WID_OK);
	cr_assert_eq(w.vintage, WID_NV);
	cr_assert_eq(wid_lwin_parse(S("12345670000"), &w), WID_OK, "0000 accepted as NV too");
	cr_assert_eq(w.vintage, WID_NV);
	cr_assert_eq(wid_lwin_build(&w, 11, out, sizeof out), WID_OK);
	cr_assert_str_eq(out, "12345671000", "NV is written as WID_LWIN_NV_CODE");
	cr_assert_eq(WID_LWIN_NV_CODE, 1000);
	cr_assert_eq(wid_lwin_parse(S("123456710000600750"), &w), WID_OK);
	cr_assert_eq(w.vintage, WID_NV);
	cr_assert_eq(w.case_bottles, 6);
}

WM_TEST(lwin, every_error)
{
	struct wid_lwin w;
	cr_assert_eq(wid_lwin_parse("", 0, &w), WID_E_EMPTY);
	cr_assert_eq(wid_lwin_parse(S("1234567"), NULL), WID_E_ARG);
	const char *lengths[] = {"123456", "12345678", "123456720120", "12345672012007501",
				 "1234567201212007501", "123456720121200750123"};
	for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++)
		cr_assert_eq(wid_lwin_parse(S(lengths[i]), &w), WID_E_LENGTH, "%s", lengths[i]);
	cr_assert_eq(wid_lwin_parse(S("123456A"), &w), WID_E_NON_DIGIT);
	cr_assert_eq(wid_lwin_parse(S("1234567-2012"), &w), WID_E_LENGTH);
	cr_assert_eq(wid_lwin_parse(S("123456 2012"), &w), WID_E_NON_DIGIT);
	/* vintage field at and past its edges */
	cr_assert_eq(wid_lwin_parse(S("12345670999"), &w), WID_E_LWIN_VINTAGE);
	cr_assert_eq(wid_lwin_parse(S("12345670001"), &w), WID_E_LWIN_VINTAGE);
	cr_assert_eq(wid_lwin_parse(S("12345671001"), &w), WID_OK);
	cr_assert_eq(w.vintage, 1001);
	cr_assert_eq(wid_lwin_parse(S("12345672099"), &w), WID_OK);
	cr_assert_eq(wid_lwin_parse(S("12345672100"), &w), WID_E_LWIN_VINTAGE);
	cr_assert_eq(wid_lwin_parse(S("12345679999"), &w), WID_E_LWIN_VINTAGE);
	/* bottle size and case count */
	cr_assert_eq(wid_lwin_parse(S("1234567201200000"), &w), WID_E_LWIN_BOTTLE);
	cr_assert_eq(wid_lwin_parse(S("123456720121200000"), &w), WID_E_LWIN_BOTTLE);
	cr_assert_eq(wid_lwin_parse(S("123456720120000750"), &w), WID_E_LWIN_CASE);
	cr_assert_eq(wid_lwin_parse(S("1234567201299999"), &w), WID_OK);
	cr_assert_eq(w.bottle_ml, 99999);
	cr_assert_eq(wid_lwin_parse(S("123456720129900001"), &w), WID_OK);
	cr_assert_eq(w.case_bottles, 99);
	cr_assert_eq(w.bottle_ml, 1);
}

/* ---- volume ------------------------------------------------------------- */

struct vol_case {
	const char *text;
	int64_t ul;
};

WM_TEST(volume, spellings_unify)
{
	static const struct vol_case cases[] = {
		{"75cl", 750000},       {"750 ml", 750000},     {"0.75 l", 750000},
		{"0.75L", 750000},      {"0,75 l", 750000},     {"750ML", 750000},
		{" 75 cl ", 750000},    {"0.750 l", 750000},    {"0,750 l", 750000},
		{"75 centilitres", 750000}, {"0.75 litre", 750000}, {"7.5 dl", 750000},
		{"0.75 Liter", 750000}, {"0.75\tltr", 750000},  {"750 millilitres", 750000},
		{"1.5 L", 1500000},     {"150cl", 1500000},     {"1500 ml", 1500000},
		{"1,5 l", 1500000},     {"1.5 lt", 1500000},    {"3 l", 3000000},
		{"300 cl", 3000000},    {"187.5 ml", 187500},   {"18.75 cl", 187500},
		{"0.1875 l", 187500},   {"0,375 l", 375000},    {"37.5cl", 375000},
		{"0.001 ml", 1},        {"1000 l", WID_VOLUME_MAX_UL},
		{"0.75000000000000000000000000000 l", 750000},
		{"000000000000000000000000000075 cl", 750000},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int64_t ul = -1;
		enum wid_err e = wid_volume_parse(S(cases[i].text), &ul);
		cr_assert_eq(e, WID_OK, "'%s': %s", cases[i].text, wid_strerror(e));
		cr_assert_eq(ul, cases[i].ul, "'%s' -> %lld", cases[i].text, (long long)ul);
	}
	char ml[WID_VOLUME_ML_TEXT_CAP];
	int64_t ul;
	cr_assert_eq(wid_volume_parse(S("75cl"), &ul), WID_OK);
	cr_assert_eq(wid_volume_format_ml(ul, ml, sizeof ml), 3);
	cr_assert_str_eq(ml, "750");
}

WM_TEST(volume, every_error)
{
	static const struct {
		const char *text;
		enum wid_err e;
	} cases[] = {
		{"", WID_E_EMPTY},
		{"   ", WID_E_EMPTY},
		{"0 l", WID_E_ZERO},
		{"0,0 cl", WID_E_ZERO},
		{"0.000 ml", WID_E_ZERO},
		{"-1 l", WID_E_NEGATIVE},
		{"-0.75 l", WID_E_NEGATIVE},
		{"abc", WID_E_SYNTAX},
		{"+1 l", WID_E_SYNTAX},
		{".75 l", WID_E_SYNTAX},
		{"75. cl", WID_E_SYNTAX},
		{"1.5.3 l", WID_E_SYNTAX},
		{"7 5 cl", WID_E_SYNTAX},
		{"75 cx", WID_E_UNIT},
		{"75 c l", WID_E_UNIT},
		{"1.5 gal", WID_E_UNIT},
		{"75 cl.", WID_E_UNIT},
		{"750", WID_E_NO_UNIT},
		{"0.75", WID_E_NO_UNIT},
		{"1,500 ml", WID_E_AMBIGUOUS},
		{"1.500 ml", WID_E_AMBIGUOUS},
		{"1.500 l", WID_E_AMBIGUOUS},
		{"187.500 ml", WID_E_AMBIGUOUS},
		{"0.0001 ml", WID_E_PRECISION},
		{"0.0000001 l", WID_E_PRECISION},
		{"1001 l", WID_E_RANGE},
		{"1000.000001 l", WID_E_RANGE},
		{"99999999999999999999999999 l", WID_E_RANGE},
		{"18446744073709551617 ml", WID_E_RANGE},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int64_t ul = 42;
		enum wid_err e = wid_volume_parse(S(cases[i].text), &ul);
		cr_assert_eq(e, cases[i].e, "'%s': got %d (%s)", cases[i].text, e, wid_strerror(e));
		cr_assert_eq(ul, 42, "output untouched on error");
	}
	/* length bound: at WID_VOLUME_TEXT_MAX and one past */
	char buf[WID_VOLUME_TEXT_MAX + 2];
	memset(buf, ' ', sizeof buf);
	memcpy(buf, "75cl", 4);
	int64_t ul;
	cr_assert_eq(wid_volume_parse(buf, WID_VOLUME_TEXT_MAX, &ul), WID_OK);
	cr_assert_eq(ul, 750000);
	cr_assert_eq(wid_volume_parse(buf, WID_VOLUME_TEXT_MAX + 1, &ul), WID_E_TOO_LONG);
	cr_assert_eq(wid_volume_parse(NULL, 3, &ul), WID_E_ARG);
	cr_assert_eq(wid_volume_parse(S("75cl"), NULL), WID_E_ARG);
}

WM_TEST(volume, json_liters)
{
	static const struct vol_case ok[] = {
		{"0.75", 750000}, {"1.5", 1500000}, {"0.1875", 187500}, {"0.375", 375000},
		{"3", 3000000},   {"7.5e-1", 750000}, {"0.075E1", 750000}, {"375e-3", 375000},
		{"0.750", 750000}, {"1E+0", 1000000}, {"0.000001", 1}, {"1000", WID_VOLUME_MAX_UL},
		{"1e3", WID_VOLUME_MAX_UL}, {"750000000000e-12", 750000},
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		int64_t ul = -1;
		enum wid_err e = wid_volume_parse_liters(S(ok[i].text), &ul);
		cr_assert_eq(e, WID_OK, "'%s': %s", ok[i].text, wid_strerror(e));
		cr_assert_eq(ul, ok[i].ul, "'%s' -> %lld", ok[i].text, (long long)ul);
	}
	static const struct {
		const char *text;
		enum wid_err e;
	} bad[] = {
		{"", WID_E_EMPTY},          {"-0.75", WID_E_NEGATIVE}, {"0", WID_E_ZERO},
		{"0.0", WID_E_ZERO},        {"0e5", WID_E_ZERO},       {"01.5", WID_E_SYNTAX},
		{".75", WID_E_SYNTAX},      {"0.75 ", WID_E_SYNTAX},   {" 0.75", WID_E_SYNTAX},
		{"1.", WID_E_SYNTAX},       {"1e", WID_E_SYNTAX},      {"1e+", WID_E_SYNTAX},
		{"0,75", WID_E_SYNTAX},     {"0.75 l", WID_E_SYNTAX},  {"+0.75", WID_E_SYNTAX},
		{"-", WID_E_SYNTAX},        {"1e99", WID_E_RANGE},     {"1000.000001", WID_E_RANGE},
		{"1e99999999999", WID_E_RANGE}, {"1e-7", WID_E_PRECISION},
		{"0.0000001", WID_E_PRECISION}, {"1e-99999999999", WID_E_PRECISION},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int64_t ul = 42;
		enum wid_err e = wid_volume_parse_liters(S(bad[i].text), &ul);
		cr_assert_eq(e, bad[i].e, "'%s': got %d (%s)", bad[i].text, e, wid_strerror(e));
		cr_assert_eq(ul, 42);
	}
	char buf[WID_VOLUME_TEXT_MAX + 2];
	memset(buf, '0', sizeof buf);
	memcpy(buf, "0.75", 4);
	int64_t ul;
	cr_assert_eq(wid_volume_parse_liters(buf, WID_VOLUME_TEXT_MAX, &ul), WID_OK);
	cr_assert_eq(ul, 750000);
	cr_assert_eq(wid_volume_parse_liters(buf, WID_VOLUME_TEXT_MAX + 1, &ul), WID_E_TOO_LONG);
}

WM_TEST(volume, format_ml)
{
	static const struct {
		int64_t ul;
		const char *text;
	} cases[] = {
		{750000, "750"}, {187500, "187.5"}, {1, "0.001"}, {10, "0.01"}, {1000, "1"},
		{1500000, "1500"}, {123456, "123.456"}, {WID_VOLUME_MAX_UL, "1000000"},
		{WID_VOLUME_MAX_UL - 1, "999999.999"},
	};
	char out[WID_VOLUME_ML_TEXT_CAP];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		cr_assert_eq(wid_volume_format_ml(cases[i].ul, out, sizeof out), strlen(cases[i].text));
		cr_assert_str_eq(out, cases[i].text);
	}
	cr_assert_eq(wid_volume_format_ml(0, out, sizeof out), 0);
	cr_assert_eq(wid_volume_format_ml(-1, out, sizeof out), 0);
	cr_assert_eq(wid_volume_format_ml(WID_VOLUME_MAX_UL + 1, out, sizeof out), 0);
	cr_assert_eq(wid_volume_format_ml(750000, out, WID_VOLUME_ML_TEXT_CAP - 1), 0);
}

/* ---- vintage ------------------------------------------------------------ */

WM_TEST(vintage, years_and_edges)
{
	int v;
	cr_assert_eq(wid_vintage_parse(S("2019"), &v), WID_OK);
	cr_assert_eq(v, 2019);
	cr_assert_eq(wid_vintage_parse(S(" 2015\t"), &v), WID_OK);
	cr_assert_eq(v, 2015);
	cr_assert_eq(wid_vintage_parse(S("1900"), &v), WID_OK);
	cr_assert_eq(wid_vintage_parse(S("2099"), &v), WID_OK);
	cr_assert_eq(v, 2099);
	v = 7;
	cr_assert_eq(wid_vintage_parse(S("1899"), &v), WID_E_RANGE);
	cr_assert_eq(wid_vintage_parse(S("2100"), &v), WID_E_RANGE);
	cr_assert_eq(wid_vintage_parse(S("0000"), &v), WID_E_RANGE);
	cr_assert_eq(wid_vintage_parse(S("19"), &v), WID_E_SYNTAX);
	cr_assert_eq(wid_vintage_parse(S("02019"), &v), WID_E_SYNTAX);
	cr_assert_eq(wid_vintage_parse(S("2019a"), &v), WID_E_SYNTAX);
	cr_assert_eq(wid_vintage_parse(S("20 19"), &v), WID_E_SYNTAX);
	cr_assert_eq(wid_vintage_parse(S("-2019"), &v), WID_E_SYNTAX);
	cr_assert_eq(wid_vintage_parse(S(""), &v), WID_E_EMPTY, "absent is not NV");
	cr_assert_eq(wid_vintage_parse(S("  "), &v), WID_E_EMPTY);
	cr_assert_eq(v, 7, "output untouched on error");
	char buf[WID_VINTAGE_TEXT_MAX + 2];
	memset(buf, ' ', sizeof buf);
	memcpy(buf, "2019", 4);
	cr_assert_eq(wid_vintage_parse(buf, WID_VINTAGE_TEXT_MAX, &v), WID_OK);
	cr_assert_eq(wid_vintage_parse(buf, WID_VINTAGE_TEXT_MAX + 1, &v), WID_E_TOO_LONG);
	cr_assert_eq(wid_vintage_parse(S("2019"), NULL), WID_E_ARG);

	char out[5];
	cr_assert_eq(wid_vintage_format(2015, out, sizeof out), 4);
	cr_assert_str_eq(out, "2015");
	cr_assert_eq(wid_vintage_format(WID_NV, out, sizeof out), 2);
	cr_assert_str_eq(out, "nv");
	cr_assert_eq(wid_vintage_format(1899, out, sizeof out), 0);
	cr_assert_eq(wid_vintage_format(2100, out, sizeof out), 0);
	cr_assert_eq(wid_vintage_format(2015, out, 4), 0);
}

WM_TEST(vintage, nv_spellings_unify)
{
	static const char *const nv[] = {
		"NV", "nv", "N.V.", "n.v.", "N/V", "N V", " NV ", "non vintage", "Non-Vintage",
		"NON VINTAGE", "nonvintage", "Non Vintage", "sans ann\xc3\xa9" "e", "Sans Annee",
		"SANS ANN\xc3\x89" "E", "sans mill\xc3\xa9sime", "ohne Jahrgang", "sin a\xc3\xb1" "ada",
		"senza annata",
	};
	for (size_t i = 0; i < sizeof nv / sizeof nv[0]; i++) {
		int v = 1;
		enum wid_err e = wid_vintage_parse(S(nv[i]), &v);
		cr_assert_eq(e, WID_OK, "'%s': %s", nv[i], wid_strerror(e));
		cr_assert_eq(v, WID_NV, "'%s'", nv[i]);
	}
	static const char *const not_nv[] = {
		"MV", "multi vintage", "n", "v", "vintage", "NVV", "N.V.2015", "no vintage?x",
		"\xce\x9d\xce\x92", /* Greek capitals: unsupported, not NV */
		"\xc3", /* invalid UTF-8 */
	};
	for (size_t i = 0; i < sizeof not_nv / sizeof not_nv[0]; i++) {
		int v = 1;
		cr_assert_eq(wid_vintage_parse(S(not_nv[i]), &v), WID_E_SYNTAX, "'%s'", not_nv[i]);
	}
}

/* ---- slug --------------------------------------------------------------- */

struct slug_case {
	const char *in;
	const char *out;
};

WM_TEST(slug, accented_names)
{
	static const struct slug_case cases[] = {
		{"Ch\xc3\xa2teau L\xc3\xa9oville-Las Cases", "chateau-leoville-las-cases"},
		{"Weingut M\xc3\xbcller-Catoir", "weingut-muller-catoir"},
		{"Bodegas Se\xc3\xb1or\xc3\xado", "bodegas-senorio"},
		{"C\xc5\x93ur de Cuv\xc3\xa9" "e", "coeur-de-cuvee"},
		{"\xc3\x86tna \xc3\x98st \xc3\x85lborg", "aetna-ost-alborg"},
		{"Stra\xc3\x9f" "e", "strasse"},
		{"\xc5\x81\xc3\xb3" "d\xc5\xba", "lodz"},
		{"CH\xc3\x82TEAU \xc3\x89" "CH\xc3\x89ZEAUX", "chateau-echezeaux"},
		{"Ch\xc3\xa2teau d'Yquem", "chateau-d-yquem"},
		{"Ch\xc3\xa2teau d\xe2\x80\x99Yquem", "chateau-d-yquem"},
		{"Ch\xc3\xa2teau d\xca\xbcYquem", "chateau-d-yquem"},
		{"Cha" "\xcc\x82" "teau Le" "\xcc\x81" "oville", "chateau-leoville"}, /* decomposed */
		{"  --Hello,,  World!! ", "hello-world"},
		{"Domaine\xc2\xa0" "de la Roman\xc3\xa9" "e-Conti", "domaine-de-la-romanee-conti"},
		{"Col\xc2\xb7lecci\xc3\xb3", "col-leccio"},
		{"Quinta do Crasto \xe2\x80\x93 Reserva", "quinta-do-crasto-reserva"},
		{"Barolo \xe2\x80\x9c" "Cannubi\xe2\x80\x9d", "barolo-cannubi"},
		{"M\xc3\xa9o-Camuzet\xe2\x84\xa2", "meo-camuzet"},
		{"\xef\xbb\xbf" "Krug", "krug"},
		{"Tenuta San Guido 2\xc3\x97" "3", "tenuta-san-guido-2-3"},
		{"\xc4\xb2sselmeer \xc5\x8a" "a", "ijsselmeer-nga"},
		{"Cont'Ugo", "cont-ugo"},
		{"", ""},
		{"---", ""},
		{"\xcc\x81", ""},
		{"already-a-slug-2015", "already-a-slug-2015"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char out[256];
		size_t n = 999;
		enum wid_err e = wid_slug(S(cases[i].in), out, sizeof out, &n);
		cr_assert_eq(e, WID_OK, "'%s': %s", cases[i].in, wid_strerror(e));
		cr_assert_str_eq(out, cases[i].out, "'%s'", cases[i].in);
		cr_assert_eq(n, strlen(cases[i].out));
	}
}

WM_TEST(slug, no_abbreviation_expansion)
{
	/* documented: predictable beats clever.  "Ch." and "Château" are
	 * different keys, and so are "Müller" and "Mueller", "St" and "Saint". */
	char a[64], b[64];
	size_t na, nb;
	cr_assert_eq(wid_slug(S("Ch. Margaux"), a, sizeof a, &na), WID_OK);
	cr_assert_eq(wid_slug(S("Ch\xc3\xa2teau Margaux"), b, sizeof b, &nb), WID_OK);
	cr_assert_str_eq(a, "ch-margaux");
	cr_assert_str_neq(a, b);
	cr_assert_eq(wid_slug(S("M\xc3\xbcller"), a, sizeof a, &na), WID_OK);
	cr_assert_eq(wid_slug(S("Mueller"), b, sizeof b, &nb), WID_OK);
	cr_assert_str_neq(a, b);
	/* words are never dropped */
	cr_assert_eq(wid_slug(S("Domaine Leflaive"), a, sizeof a, &na), WID_OK);
	cr_assert_str_eq(a, "domaine-leflaive");
}

WM_TEST(slug, every_error)
{
	char out[64] = "x";
	size_t n;
	static const struct {
		const char *in;
		enum wid_err e;
	} cases[] = {
		{"caf\xc3", WID_E_UTF8},               /* truncated */
		{"\xc0\xaf", WID_E_UTF8},              /* overlong '/' */
		{"\xe0\x80\xaf", WID_E_UTF8},          /* overlong 3-byte */
		{"\xed\xa0\x80", WID_E_UTF8},          /* surrogate */
		{"\xf4\x90\x80\x80", WID_E_UTF8},      /* above U+10FFFF */
		{"\xf5\x80\x80\x80", WID_E_UTF8},
		{"a\x80" "b", WID_E_UTF8},             /* stray continuation */
		{"\xff", WID_E_UTF8},
		{"\xc3\x28", WID_E_UTF8},              /* bad continuation */
		{"\xce\x9a\xcf\x84\xce\xae\xce\xbc\xce\xb1", WID_E_UNSUPPORTED_CHAR}, /* Κτήμα */
		{"\xe6\x9d\xb1\xe4\xba\xac", WID_E_UNSUPPORTED_CHAR},                 /* 東京 */
		{"Krug \xf0\x9f\x8d\xb7", WID_E_UNSUPPORTED_CHAR},                    /* emoji */
		{"\xc8\x98tefan", WID_E_UNSUPPORTED_CHAR}, /* Ș: Latin Extended-B, outside the table */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		enum wid_err e = wid_slug(S(cases[i].in), out, sizeof out, &n);
		cr_assert_eq(e, cases[i].e, "case %zu: got %s", i, wid_strerror(e));
		cr_assert_str_eq(out, "", "output emptied on error");
	}
	/* output bound: exact fit, one short */
	const char *in = "Ch\xc3\xa2teau Margaux"; /* "chateau-margaux": 15 chars */
	cr_assert_eq(wid_slug(in, strlen(in), out, 16, &n), WID_OK);
	cr_assert_eq(n, 15);
	cr_assert_eq(wid_slug(in, strlen(in), out, 15, &n), WID_E_BUF);
	cr_assert_eq(wid_slug(S("\xc3\x9f"), out, 2, &n), WID_E_BUF, "ss needs 3 bytes");
	/* input bound: at WID_TEXT_MAX and one past */
	static char big[WID_TEXT_MAX + 1];
	memset(big, 'a', sizeof big);
	static char bigout[WID_TEXT_MAX + 1];
	cr_assert_eq(wid_slug(big, WID_TEXT_MAX, bigout, sizeof bigout, &n), WID_OK);
	cr_assert_eq(n, WID_TEXT_MAX);
	cr_assert_eq(wid_slug(big, WID_TEXT_MAX + 1, bigout, sizeof bigout, &n), WID_E_TOO_LONG);
	/* arguments */
	cr_assert_eq(wid_slug(NULL, 1, out, sizeof out, &n), WID_E_ARG);
	cr_assert_eq(wid_slug("a", 1, NULL, sizeof out, &n), WID_E_ARG);
	cr_assert_eq(wid_slug("a", 1, out, 0, &n), WID_E_ARG);
	cr_assert_eq(wid_slug("a", 1, out, sizeof out, NULL), WID_E_ARG);
	cr_assert_eq(wid_slug(NULL, 0, out, sizeof out, &n), WID_OK);
	cr_assert_eq(n, 0);
}

/* ---- natural key -------------------------------------------------------- */

/* Natural key from all-text parts, the way ingest will call it. */
static enum wid_err nk_text(const char *producer, const char *cuvee, const char *vintage,
			    const char *volume, const char *country, char *out)
{
	struct wid_nk in = {
		.producer = producer, .producer_len = strlen(producer),
		.cuvee = cuvee, .cuvee_len = strlen(cuvee),
		.country = country, .country_len = strlen(country),
	};
	enum wid_err e = wid_vintage_parse(S(vintage), &in.vintage);
	if (e != WID_OK)
		return e;
	e = wid_volume_parse(S(volume), &in.volume_ul);
	if (e != WID_OK)
		return e;
	size_t n;
	e = wid_natural_key(&in, out, WID_NK_CAP, &n);
	if (e == WID_OK && n != strlen(out))
		return WID_E__COUNT; /* never: fails the caller's assertion */
	return e;
}

WM_TEST(natural_key, shape_and_example)
{
	char k[WID_NK_CAP];
	cr_assert_eq(nk_text("Ch\xc3\xa2teau Margaux", "Pavillon Rouge", "2015", "75cl", "FR", k), WID_OK);
	cr_assert_str_eq(k, "chateau-margaux|pavillon-rouge|2015|750|FR");
	cr_assert_eq(nk_text("Krug", "Grande Cuv\xc3\xa9" "e", "N.V.", "1.5 L", "fr", k), WID_OK);
	cr_assert_str_eq(k, "krug|grande-cuvee|nv|1500|FR");
	cr_assert_eq(nk_text("Ch\xc3\xa2teau d'Yquem", "", "2001", "37.5 cl", "FR", k), WID_OK);
	cr_assert_str_eq(k, "chateau-d-yquem||2001|375|FR", "cuvee may be empty");
	cr_assert_eq(nk_text("Tokaji Oremus", "Esz\xc3\xa9ncia", "2008", "187.5 ml", "hu", k), WID_OK);
	cr_assert_str_eq(k, "tokaji-oremus|eszencia|2008|187.5|HU", "fractional ml stays exact");
}

WM_TEST(natural_key, equal_across_spellings)
{
	char a[WID_NK_CAP], b[WID_NK_CAP];
	static const char *const spellings[][5] = {
		{"CH\xc3\x82TEAU L\xc3\x89OVILLE-LAS CASES", "Clos du Marquis", "2016", "0,75 l", "fr"},
		{"Chateau Leoville Las Cases", "clos-du-marquis", " 2016 ", "750 ml", "FR"},
		{"  Ch\xc3\xa2teau   L\xc3\xa9oville\xe2\x80\x93Las\xc2\xa0" "Cases ", "Clos du Marquis!",
		 "2016", "75cl", "Fr"},
		{"Cha" "\xcc\x82" "teau Le" "\xcc\x81" "oville Las Cases", "CLOS DU MARQUIS", "2016",
		 "0.75L", "fR"},
	};
	cr_assert_eq(nk_text(spellings[0][0], spellings[0][1], spellings[0][2], spellings[0][3],
			     spellings[0][4], a), WID_OK);
	cr_assert_str_eq(a, "chateau-leoville-las-cases|clos-du-marquis|2016|750|FR");
	for (size_t i = 1; i < sizeof spellings / sizeof spellings[0]; i++) {
		cr_assert_eq(nk_text(spellings[i][0], spellings[i][1], spellings[i][2], spellings[i][3],
				     spellings[i][4], b), WID_OK, "spelling %zu", i);
		cr_assert_str_eq(a, b, "spelling %zu", i);
	}
	/* NV spellings */
	cr_assert_eq(nk_text("Bollinger", "Special Cuv\xc3\xa9" "e", "NV", "75 cl", "FR", a), WID_OK);
	cr_assert_eq(nk_text("Bollinger", "Special Cuvee", "non vintage", "0.75 l", "FR", b), WID_OK);
	cr_assert_str_eq(a, b);
	cr_assert_eq(nk_text("Bollinger", "Special Cuvee", "Non-Vintage", "750ml", "FR", b), WID_OK);
	cr_assert_str_eq(a, b);
	/* what must stay apart */
	cr_assert_eq(nk_text("Bollinger", "Special Cuvee", "NV", "1.5 l", "FR", b), WID_OK);
	cr_assert_str_neq(a, b, "magnum is another format");
	cr_assert_eq(nk_text("Ch\xc3\xa2teau Margaux", "", "2015", "75cl", "FR", a), WID_OK);
	cr_assert_eq(nk_text("Ch. Margaux", "", "2015", "75cl", "FR", b), WID_OK);
	cr_assert_str_neq(a, b, "Ch. is not expanded to Chateau (documented)");
	cr_assert_eq(nk_text("Ch\xc3\xa2teau Margaux", "", "2016", "75cl", "FR", b), WID_OK);
	cr_assert_str_neq(a, b, "another vintage");
	cr_assert_eq(nk_text("Ch\xc3\xa2teau Margaux", "", "NV", "75cl", "FR", b), WID_OK);
	cr_assert_str_neq(a, b, "NV is not a vintage");
}

WM_TEST(natural_key, every_error)
{
	char k[WID_NK_CAP];
	cr_assert_eq(nk_text("", "Cuvee", "2015", "75cl", "FR", k), WID_E_NO_ALNUM);
	cr_assert_eq(nk_text(" - ", "Cuvee", "2015", "75cl", "FR", k), WID_E_NO_ALNUM);
	cr_assert_eq(nk_text("Krug", "Cuvee", "2015", "75cl", "UK", k), WID_E_COUNTRY, "GB is the code");
	cr_assert_eq(nk_text("Krug", "Cuvee", "2015", "75cl", "FRA", k), WID_E_COUNTRY);
	cr_assert_eq(nk_text("Krug", "Cuvee", "2015", "75cl", "", k), WID_E_COUNTRY);
	cr_assert_eq(nk_text("Krug", "Cuvee", "2015", "75cl", "F1", k), WID_E_COUNTRY);
	cr_assert_eq(nk_text("\xce\x9a\xcf\x84\xce\xae\xce\xbc\xce\xb1", "", "2015", "75cl", "GR", k),
		     WID_E_UNSUPPORTED_CHAR);
	cr_assert_eq(nk_text("Krug", "\xc3", "2015", "75cl", "FR", k), WID_E_UTF8);

	struct wid_nk in = {.producer = "Krug", .producer_len = 4, .cuvee = "", .cuvee_len = 0,
			    .vintage = 2015, .volume_ul = 750000, .country = "FR", .country_len = 2};
	size_t n;
	cr_assert_eq(wid_natural_key(&in, k, sizeof k, &n), WID_OK);
	cr_assert_str_eq(k, "krug||2015|750|FR");
	/* exact-fit buffer, one short */
	cr_assert_eq(wid_natural_key(&in, k, n + 1, &n), WID_OK);
	cr_assert_eq(wid_natural_key(&in, k, n, &n), WID_E_BUF);
	struct wid_nk bad = in;
	bad.vintage = 1899;
	cr_assert_eq(wid_natural_key(&bad, k, sizeof k, &n), WID_E_RANGE);
	bad.vintage = WID_VINTAGE_NONE;
	cr_assert_eq(wid_natural_key(&bad, k, sizeof k, &n), WID_E_RANGE);
	bad = in;
	bad.volume_ul = 0;
	cr_assert_eq(wid_natural_key(&bad, k, sizeof k, &n), WID_E_RANGE);
	bad.volume_ul = WID_VOLUME_MAX_UL + 1;
	cr_assert_eq(wid_natural_key(&bad, k, sizeof k, &n), WID_E_RANGE);
	bad = in;
	bad.producer = NULL;
	cr_assert_eq(wid_natural_key(&bad, k, sizeof k, &n), WID_E_ARG);
	cr_assert_eq(wid_natural_key(NULL, k, sizeof k, &n), WID_E_ARG);
	cr_assert_eq(wid_natural_key(&in, NULL, sizeof k, &n), WID_E_ARG);

	/* part bound: a slug of WID_NK_PART_MAX fits, one more does not; the
	 * largest key fits WID_NK_CAP */
	char name[WID_NK_PART_MAX + 2];
	memset(name, 'x', sizeof name);
	bad = in;
	bad.producer = name;
	bad.producer_len = WID_NK_PART_MAX;
	bad.cuvee = name;
	bad.cuvee_len = WID_NK_PART_MAX;
	bad.vintage = 2099;
	bad.volume_ul = WID_VOLUME_MAX_UL - 1;
	char big[WID_NK_CAP];
	cr_assert_eq(wid_natural_key(&bad, big, sizeof big, &n), WID_OK);
	cr_assert_eq(n, 2 * WID_NK_PART_MAX + 4 + strlen("2099") + strlen("999999.999") + 2);
	cr_assert_lt(n, WID_NK_CAP);
	bad.producer_len = WID_NK_PART_MAX + 1;
	cr_assert_eq(wid_natural_key(&bad, big, sizeof big, &n), WID_E_TOO_LONG);
	bad.producer_len = WID_NK_PART_MAX;
	bad.cuvee_len = WID_NK_PART_MAX + 1;
	cr_assert_eq(wid_natural_key(&bad, big, sizeof big, &n), WID_E_TOO_LONG);
}

/* ---- properties --------------------------------------------------------- */

WM_TEST(wine_ident, error_messages)
{
	for (int e = 0; e < WID_E__COUNT; e++) {
		const char *m = wid_strerror((enum wid_err)e);
		cr_assert(m && *m, "error %d has a message", e);
		cr_assert_str_neq(m, "unknown error", "error %d", e);
		for (int f = 0; f < e; f++)
			cr_assert_str_neq(m, wid_strerror((enum wid_err)f), "errors %d and %d", e, f);
	}
	cr_assert_str_eq(wid_strerror(WID_E__COUNT), "unknown error");
	cr_assert_str_eq(wid_strerror((enum wid_err)-1), "unknown error");
}

WM_TEST(wine_ident, slug_idempotent_and_shaped)
{
	char in[512], s1[1100], s2[1100];
	for (int round = 0; round < 20000; round++) {
		size_t n = gen_name(in, sizeof in), n1, n2;
		cr_assert_eq(wid_slug(in, n, s1, sizeof s1, &n1), WID_OK, "'%s'", in);
		cr_assert(slug_shape_ok(s1, n1), "'%s' -> '%s'", in, s1);
		cr_assert_leq(n1, n, "a slug is never longer than its input");
		cr_assert_eq(wid_slug(s1, n1, s2, sizeof s2, &n2), WID_OK);
		cr_assert_str_eq(s1, s2, "slug of slug, from '%s'", in);
		cr_assert_eq(n1, n2);
	}
}

WM_TEST(wine_ident, natural_key_idempotent)
{
	static const char *const volumes[] = {"75cl", "0,75 l", "1.5 L", "187.5 ml", "37.5cl",
					      "3 l", "0.1875 l", "500 ml", "6 litres", "0,001 ml"};
	static const char *const vintages[] = {"2015", "NV", "n.v.", "1900", "2099", "Non-Vintage",
					       "1982", "sans ann\xc3\xa9" "e"};
	static const char *const countries[] = {"FR", "it", "De", "es", "PT", "at", "US", "gb"};
	char prod[256], cuv[256], k1[WID_NK_CAP], k2[WID_NK_CAP];
	int made = 0;
	for (int round = 0; round < 5000; round++) {
		gen_name(prod, sizeof prod);
		gen_name(cuv, sizeof cuv);
		enum wid_err e = nk_text(prod, cuv, vintages[rnd(8)], volumes[rnd(10)], countries[rnd(8)], k1);
		if (e == WID_E_NO_ALNUM)
			continue; /* generated producer without a letter */
		cr_assert_eq(e, WID_OK, "'%s' / '%s': %s", prod, cuv, wid_strerror(e));
		made++;
		/* split the key and feed its parts back */
		char parts[5][WID_NK_CAP];
		size_t p = 0, w = 0;
		for (const char *c = k1;; c++) {
			if (*c == '|' || !*c) {
				parts[p][w] = '\0';
				p++;
				w = 0;
				if (!*c)
					break;
			} else {
				parts[p][w++] = *c;
			}
		}
		cr_assert_eq(p, 5, "'%s' has five parts", k1);
		char vol[WID_NK_CAP + 4];
		snprintf(vol, sizeof vol, "%s ml", parts[3]);
		cr_assert_eq(nk_text(parts[0], parts[1], parts[2], vol, parts[4], k2), WID_OK, "%s", k1);
		cr_assert_str_eq(k1, k2);
	}
	cr_assert_gt(made, 1000);
}

WM_TEST(wine_ident, volume_round_trips)
{
	char ml[WID_VOLUME_ML_TEXT_CAP], text[64];
	for (int round = 0; round < 20000; round++) {
		int64_t ul = round < 3 ? (int64_t[]){1, 999, WID_VOLUME_MAX_UL}[round]
				       : 1 + (int64_t)(rng() % (uint64_t)WID_VOLUME_MAX_UL);
		if (round % 2)
			ul -= ul % 1000; /* whole millilitres too */
		if (ul < 1)
			ul = 1;
		size_t n = wid_volume_format_ml(ul, ml, sizeof ml);
		cr_assert_gt(n, 0);
		int64_t back = 0;
		snprintf(text, sizeof text, "%sml", ml);
		enum wid_err e = wid_volume_parse(text, strlen(text), &back);
		if (e == WID_E_AMBIGUOUS) { /* "1.500ml" is refused by design */
			cr_assert(strchr(ml, '.') && strlen(strchr(ml, '.')) == 4, "%s", ml);
			continue;
		}
		cr_assert_eq(e, WID_OK, "'%s': %s", text, wid_strerror(e));
		cr_assert_eq(back, ul, "'%s'", text);
		/* the same value in litres with a decimal comma (six decimals: never ambiguous) */
		snprintf(text, sizeof text, "%lld,%06lld l", (long long)(ul / 1000000), (long long)(ul % 1000000));
		cr_assert_eq(wid_volume_parse(text, strlen(text), &back), WID_OK, "'%s'", text);
		cr_assert_eq(back, ul, "'%s'", text);
		/* the same value as JSON litres */
		snprintf(text, sizeof text, "%lld.%06lld", (long long)(ul / 1000000), (long long)(ul % 1000000));
		cr_assert_eq(wid_volume_parse_liters(text, strlen(text), &back), WID_OK, "'%s'", text);
		cr_assert_eq(back, ul, "'%s'", text);
	}
}

WM_TEST(wine_ident, vintage_and_lwin_round_trips)
{
	char out[WID_LWIN18_LEN + 1];
	for (int y = WID_VINTAGE_MIN; y <= WID_VINTAGE_MAX; y++) {
		int v;
		cr_assert_eq(wid_vintage_format(y, out, sizeof out), 4);
		cr_assert_eq(wid_vintage_parse(out, 4, &v), WID_OK);
		cr_assert_eq(v, y);
	}
	int v;
	cr_assert_eq(wid_vintage_format(WID_NV, out, sizeof out), 2);
	cr_assert_eq(wid_vintage_parse(out, 2, &v), WID_OK);
	cr_assert_eq(v, WID_NV);

	for (int round = 0; round < 5000; round++) {
		struct wid_lwin w = {0};
		for (int i = 0; i < 7; i++)
			w.wine[i] = (char)('0' + rnd(10));
		w.vintage = rnd(10) == 0 ? WID_NV : (int)(WID_LWIN_YEAR_MIN + rnd(WID_LWIN_YEAR_MAX - WID_LWIN_YEAR_MIN + 1));
		w.bottle_ml = 1 + rnd(WID_LWIN_BOTTLE_ML_MAX);
		w.case_bottles = 1 + rnd(WID_LWIN_CASE_MAX);
		static const int lens[] = {7, 11, 16, 18};
		int len = lens[rnd(4)];
		cr_assert_eq(wid_lwin_build(&w, len, out, sizeof out), WID_OK);
		struct wid_lwin p;
		cr_assert_eq(wid_lwin_parse(out, strlen(out), &p), WID_OK, "%s", out);
		cr_assert_eq(p.len, len);
		cr_assert_str_eq(p.wine, w.wine);
		if (len >= 11)
			cr_assert_eq(p.vintage, w.vintage);
		if (len >= 16)
			cr_assert_eq(p.bottle_ml, w.bottle_ml);
		if (len == 18)
			cr_assert_eq(p.case_bottles, w.case_bottles);
		char again[WID_LWIN18_LEN + 1];
		cr_assert_eq(wid_lwin_build(&p, len, again, sizeof again), WID_OK);
		cr_assert_str_eq(again, out);
	}
}
