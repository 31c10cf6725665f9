/*
 * fuzz_wine_ident.c -- libFuzzer target for the dedup identifiers
 * (engine/catalogue/wine_ident.c), which read partner feed text before anything else
 * looks at it.  Every parser gets the whole input; the natural key gets it
 * split at newlines into producer, cuvee, vintage, volume and country.
 * Checks, beyond no crash and no out-of-bounds read: what a parser accepts
 * has the documented shape and survives a round trip, slug(slug) == slug,
 * and a natural key fed its own parts comes back unchanged.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/catalogue/wine_ident.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void must(int cond)
{
	if (!cond)
		abort();
}

static void check_gtin(const char *s, size_t n)
{
	struct wid_gtin g;
	if (wid_gtin_parse(s, n, &g) != WID_OK)
		return;
	must(n == 8 || n == 12 || n == 13 || n == 14);
	must(g.src_len == n && strlen(g.digits) == WID_GTIN_LEN);
	must(!memcmp(g.digits + WID_GTIN_LEN - n, s, n));
	must(wid_gtin_check_digit(g.digits, 13) == g.digits[13] - '0');
	must(g.indicator == g.digits[0] - '0');
	must((g.kind == WID_GTIN_UNIT) == (g.indicator == 0));
	must((g.kind == WID_GTIN_VARIABLE) == (g.indicator == 9));
	struct wid_gtin u, c;
	enum wid_err e = wid_gtin_unit_of_case(&g, &u);
	if (g.kind == WID_GTIN_UNIT) {
		must(e == WID_E_NOT_CASE);
		must(wid_gtin_case_of_unit(&g, 1, &c) == WID_OK);
		must(wid_gtin_unit_of_case(&c, &u) == WID_OK && !strcmp(u.digits, g.digits));
	} else if (g.kind == WID_GTIN_VARIABLE) {
		must(e == WID_E_VARIABLE_MEASURE);
	} else if (e == WID_OK) {
		must(u.kind == WID_GTIN_UNIT && u.digits[0] == '0');
		must(wid_gtin_check_digit(u.digits, 13) == u.digits[13] - '0');
		must(wid_gtin_case_of_unit(&u, g.indicator, &c) == WID_OK);
		must(!strcmp(c.digits, g.digits));
	} else {
		must(e == WID_E_ALL_ZERO);
	}
}

static void check_lwin(const char *s, size_t n)
{
	struct wid_lwin w;
	if (wid_lwin_parse(s, n, &w) != WID_OK)
		return;
	must(w.len == (int)n);
	char out[WID_LWIN18_LEN + 1];
	must(wid_lwin_build(&w, w.len, out, sizeof out) == WID_OK);
	/* the same text, except the NV alias 0000 is written as the NV code */
	if (memcmp(out, s, n)) {
		must(n >= WID_LWIN11_LEN && !memcmp(s + 7, "0000", 4) && w.vintage == WID_NV);
		must(!memcmp(out, s, 7) && !memcmp(out + 11, s + 11, n - 11));
	}
	char key[WID_LWIN16_LEN + 1];
	enum wid_err e = wid_lwin_format_key(s, n, key);
	if (n >= WID_LWIN16_LEN) {
		must(e == WID_OK && wid_lwin_build(&w, 16, out, sizeof out) == WID_OK);
		must(!strcmp(key, out));
	} else {
		must(e == WID_E_LWIN_PARTS);
	}
}

/* A volume the parsers accepted: in range, and its ml and litre texts
 * parse back to the same microlitres. */
static void check_volume_value(int64_t ul)
{
	must(ul >= 1 && ul <= WID_VOLUME_MAX_UL);
	char ml[WID_VOLUME_ML_TEXT_CAP], text[64];
	size_t n = wid_volume_format_ml(ul, ml, sizeof ml);
	must(n > 0 && n == strlen(ml));
	int64_t back = 0;
	snprintf(text, sizeof text, "%s ml", ml);
	enum wid_err e = wid_volume_parse(text, strlen(text), &back);
	const char *dot = strchr(ml, '.');
	if (e == WID_E_AMBIGUOUS)
		must(dot && strlen(dot) == 4 && ml[0] != '0');
	else
		must(e == WID_OK && back == ul);
	snprintf(text, sizeof text, "%lld.%06lld", (long long)(ul / 1000000), (long long)(ul % 1000000));
	must(wid_volume_parse_liters(text, strlen(text), &back) == WID_OK && back == ul);
}

static void check_slug(const char *s, size_t n)
{
	static char out[WID_TEXT_MAX + 1], again[WID_TEXT_MAX + 1];
	size_t n1, n2;
	enum wid_err e = wid_slug(s, n, out, sizeof out, &n1);
	if (e != WID_OK) {
		must(out[0] == '\0' && e != WID_E_BUF);
		return;
	}
	must(n1 <= n && n1 == strlen(out));
	for (size_t i = 0; i < n1; i++) {
		char c = out[i];
		if (c == '-')
			must(i > 0 && i + 1 < n1 && out[i + 1] != '-');
		else
			must((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'));
	}
	must(wid_slug(out, n1, again, sizeof again, &n2) == WID_OK);
	must(n2 == n1 && !memcmp(out, again, n1));
	/* cap = len + 1 always suffices */
	must(wid_slug(s, n, again, n + 1 < sizeof again ? n + 1 : sizeof again, &n2) == WID_OK);
}

static void check_natural_key(const char *s, size_t n)
{
	const char *f[5] = {"", "", "", "", ""};
	size_t fl[5] = {0, 0, 0, 0, 0};
	size_t k = 0, start = 0;
	for (size_t i = 0; i <= n && k < 5; i++) {
		if (i == n || s[i] == '\n') {
			f[k] = s + start;
			fl[k] = i - start;
			k++;
			start = i + 1;
		}
	}
	struct wid_nk in = {.producer = f[0], .producer_len = fl[0], .cuvee = f[1],
			    .cuvee_len = fl[1], .country = f[4], .country_len = fl[4]};
	if (wid_vintage_parse(f[2], fl[2], &in.vintage) != WID_OK)
		in.vintage = 2015;
	if (wid_volume_parse(f[3], fl[3], &in.volume_ul) != WID_OK &&
	    wid_volume_parse_liters(f[3], fl[3], &in.volume_ul) != WID_OK)
		in.volume_ul = 750000;
	char key[WID_NK_CAP], again[WID_NK_CAP];
	size_t kn, an;
	if (wid_natural_key(&in, key, sizeof key, &kn) != WID_OK)
		return;
	must(kn == strlen(key));
	/* five parts; feed them back */
	const char *p[5];
	size_t pl[5], np = 0, b = 0;
	for (size_t i = 0; i <= kn; i++) {
		if (i == kn || key[i] == '|') {
			must(np < 5);
			p[np] = key + b;
			pl[np] = i - b;
			np++;
			b = i + 1;
		}
	}
	must(np == 5);
	struct wid_nk re = {.producer = p[0], .producer_len = pl[0], .cuvee = p[1],
			    .cuvee_len = pl[1], .country = p[4], .country_len = pl[4],
			    .volume_ul = in.volume_ul};
	must(wid_vintage_parse(p[2], pl[2], &re.vintage) == WID_OK && re.vintage == in.vintage);
	must(wid_natural_key(&re, again, sizeof again, &an) == WID_OK);
	must(an == kn && !memcmp(key, again, kn));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy = malloc(size ? size : 1); /* exact size: ASan sees any over-read */
	if (!copy)
		return 0;
	memcpy(copy, data, size);

	check_gtin(copy, size);
	check_lwin(copy, size);

	int64_t ul;
	if (wid_volume_parse(copy, size, &ul) == WID_OK)
		check_volume_value(ul);
	if (wid_volume_parse_liters(copy, size, &ul) == WID_OK)
		check_volume_value(ul);

	int v;
	if (wid_vintage_parse(copy, size, &v) == WID_OK) {
		must(v == WID_NV || (v >= WID_VINTAGE_MIN && v <= WID_VINTAGE_MAX));
		char vt[5];
		int back;
		size_t n = wid_vintage_format(v, vt, sizeof vt);
		must(n > 0 && wid_vintage_parse(vt, n, &back) == WID_OK && back == v);
	}

	check_slug(copy, size);
	check_natural_key(copy, size);

	for (int e = 0; e <= WID_E__COUNT; e++)
		must(wid_strerror((enum wid_err)e) != NULL);
	free(copy);
	return 0;
}
