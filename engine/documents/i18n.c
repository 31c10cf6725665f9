/*
 * i18n.c -- number and date formats per language, and the label lookup
 * (the labels themselves are in i18n_tables.c).  See i18n.h for why this
 * does not use setlocale().
 *
 * Formats (decimal mark, thousands separator, date order) follow the
 * national conventions in the EU Interinstitutional Style Guide section 7
 * (numbers) and the CLDR short date patterns, simplified to two-digit day
 * and month: English uses the EU English point and comma.  The thousands
 * separator written as a space is an ASCII space, so that text extracted
 * from the PDF (pdftotext, a customs officer's copy-paste) matches.
 */
#include "engine/documents/i18n.h"

#include <stdio.h>
#include <string.h>

enum date_order { DMY, YMD };

struct lang_fmt {
	const char *code;
	const char *decimal;    /* decimal mark */
	const char *thousands;  /* group separator */
	enum date_order order;
	char date_sep;
};

/* Order = the columns of i18n_tables.c. */
static const struct lang_fmt langs[I18N_LANG_COUNT] = {
	{"en", ".", ",", DMY, '/'}, {"de", ",", ".", DMY, '.'}, {"fr", ",", " ", DMY, '/'},
	{"it", ",", ".", DMY, '/'}, {"es", ",", ".", DMY, '/'}, {"pt", ",", " ", DMY, '/'},
	{"nl", ",", ".", DMY, '-'}, {"pl", ",", " ", DMY, '.'}, {"sv", ",", " ", YMD, '-'},
	{"da", ",", ".", DMY, '.'}, {"fi", ",", " ", DMY, '.'}, {"cs", ",", " ", DMY, '.'},
	{"el", ",", ".", DMY, '/'}, {"no", ",", " ", DMY, '.'},
};

extern const char *const i18n_table[I18N_KEY_COUNT][I18N_LANG_COUNT];

int i18n_lang_find(const char *code)
{
	for (int i = 0; i < I18N_LANG_COUNT; i++)
		if (strcmp(langs[i].code, code) == 0)
			return i;
	return -1;
}

const char *i18n_lang_code(int lang)
{
	return langs[lang].code;
}

const char *i18n_label(int lang, enum i18n_key key)
{
	return i18n_table[key][lang];
}

/* Append s to out[*len..cap); 0, or -1 when it does not fit. */
static int put(char *out, size_t cap, size_t *len, const char *s)
{
	size_t n = strlen(s);
	if (*len + n + 1 > cap)
		return -1;
	memcpy(out + *len, s, n + 1);
	*len += n;
	return 0;
}

int i18n_decimal(int lang, int64_t v, int digits, char *out, size_t cap)
{
	if (cap == 0)
		return -1;
	out[0] = '\0';
	if (digits < 0 || digits > 6)
		return -1;
	/* Magnitude as unsigned so INT64_MIN has one. */
	uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	uint64_t scale = 1;
	for (int i = 0; i < digits; i++)
		scale *= 10;
	uint64_t ip = mag / scale, fp = mag % scale;
	char ibuf[24];
	int ilen = snprintf(ibuf, sizeof ibuf, "%llu", (unsigned long long)ip);
	size_t len = 0;
	int rc = v < 0 ? put(out, cap, &len, "-") : 0;
	for (int i = 0; i < ilen && rc == 0; i++) {
		char d[2] = {ibuf[i], '\0'};
		rc = put(out, cap, &len, d);
		int left = ilen - 1 - i;
		if (rc == 0 && left > 0 && left % 3 == 0)
			rc = put(out, cap, &len, langs[lang].thousands);
	}
	if (rc == 0 && digits > 0) {
		char fbuf[24];
		snprintf(fbuf, sizeof fbuf, "%0*llu", digits, (unsigned long long)fp);
		rc = put(out, cap, &len, langs[lang].decimal);
		if (rc == 0)
			rc = put(out, cap, &len, fbuf);
	}
	if (rc) {
		out[0] = '\0';
		return -1;
	}
	return (int)len;
}

int i18n_percent_bp(int lang, int bp, char *out, size_t cap)
{
	int digits = bp % 100 == 0 ? 0 : bp % 10 == 0 ? 1 : 2;
	int64_t v = digits == 0 ? bp / 100 : digits == 1 ? bp / 10 : bp;
	int n = i18n_decimal(lang, v, digits, out, cap);
	if (n < 0 || (size_t)n + 3 > cap) {
		if (cap)
			out[0] = '\0';
		return -1;
	}
	memcpy(out + n, " %", 3);
	return n + 2;
}

int i18n_date(int lang, int year, int month, int day, char *out, size_t cap)
{
	const struct lang_fmt *f = &langs[lang];
	int n = f->order == YMD
			? snprintf(out, cap, "%04d%c%02d%c%02d", year, f->date_sep, month, f->date_sep, day)
			: snprintf(out, cap, "%02d%c%02d%c%04d", day, f->date_sep, month, f->date_sep, year);
	if (n < 0 || (size_t)n >= cap) {
		if (cap)
			out[0] = '\0';
		return -1;
	}
	return n;
}
