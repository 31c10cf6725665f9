/*
 * i18n.h -- the words and number/date formats of the trade documents, in
 * English and the official languages of the destinations the platform
 * ships to (issue 17 item 3).
 *
 * Why this shape:
 *  - The translation tables are C data in the repository
 *    (engine/documents/i18n_tables.c: one row per label, one column per
 *    language), compiled in.  Nothing is parsed at run time, so there is no
 *    file to go missing on a shard and no parser of outside bytes to fuzz;
 *    a test checks that every label exists in every language.
 *  - Amounts and dates are formatted by this module, not by setlocale() /
 *    printf's locale: the C locale is process-global (not thread-safe
 *    against the worker thread) and depends on which locales the machine
 *    generated, while a document must print the same bytes everywhere.
 *    Each language carries its decimal mark, thousands separator and date
 *    order as data.
 */
#ifndef WM_I18N_H
#define WM_I18N_H

#include <stddef.h>
#include <stdint.h>

/* Every label a document prints.  Order = the rows of i18n_tables.c. */
enum i18n_key {
	I18N_TITLE_CONSUMER_INVOICE,
	I18N_TITLE_TRANSPORT,
	I18N_TITLE_LABEL,
	I18N_TITLE_PROFORMA,
	I18N_TITLE_ORIGINATOR_INVOICE,
	I18N_TITLE_INSTRUCTION,
	I18N_NUMBER,
	I18N_ISSUE_DATE,
	I18N_SUPPLY_DATE,
	I18N_ORDER,
	I18N_SUPPLIER,
	I18N_CUSTOMER,
	I18N_VAT_ID,
	I18N_EXCISE_NO,
	I18N_SOLD_BY,
	I18N_SHIP_TO,
	I18N_CONSIGNOR,
	I18N_CONSIGNEE,
	I18N_DISPATCH,
	I18N_DELIVERY,
	I18N_DEST_TYPE,
	I18N_ORIGINATOR,
	I18N_FULFILLER,
	I18N_LEG,
	I18N_DESCRIPTION,
	I18N_QTY,
	I18N_UNIT_PRICE,
	I18N_VAT_RATE,
	I18N_NET,
	I18N_VAT,
	I18N_TAX_BASE,
	I18N_VAT_SUMMARY,
	I18N_TOTAL_NET,
	I18N_TOTAL_VAT,
	I18N_TOTAL,
	I18N_PAGE,
	I18N_EXCISE_CODE,
	I18N_CN_CODE,
	I18N_LITRES,
	I18N_PACKAGES,
	I18N_ALCOHOL,
	I18N_NON_VINTAGE,
	I18N_PICK_LIST,
	I18N_LOCATION,
	I18N_SKU,
	I18N_PACKING,
	I18N_BOX_SIZE,
	I18N_BOXES,
	I18N_PICKUP,
	I18N_CURRENCY,
	I18N_PRODUCER,
	I18N_ORIGIN,
	I18N_FROM,
	I18N_FREIGHT,
	I18N_SERVICE_FEE,
	I18N_EXCISE_DUTY,
	I18N_KEY_COUNT
};

#define I18N_LANG_COUNT 14

/* Index of a language code ("en", "de", "fr", "it", "es", "pt", "nl",
 * "pl", "sv", "da", "fi", "cs", "el", "no"), or -1 when unsupported. */
int i18n_lang_find(const char *code);
/* The code of language index lang (0 <= lang < I18N_LANG_COUNT). */
const char *i18n_lang_code(int lang);
/* The label for key in language lang: a static UTF-8 string, never NULL
 * for valid arguments ("" is impossible: tests check every cell). */
const char *i18n_label(int lang, enum i18n_key key);

/* Format v / 10^digits with the language's decimal mark and thousands
 * separator ("-1.234,56" in German for v = -123456, digits = 2) into
 * out[cap].  digits 0..6.  Returns the length, or -1 when cap is too small
 * (out is then ""); 32 bytes always suffice. */
int i18n_decimal(int lang, int64_t v, int digits, char *out, size_t cap);
/* A rate in basis points as a percentage with at most two decimals and no
 * trailing zeros: 1900 -> "19 %", 550 -> "5,5 %" (German). */
int i18n_percent_bp(int lang, int bp, char *out, size_t cap);
/* A date in the language's order and separators: "25.11.2026" (de),
 * "25/11/2026" (en, fr), "2026-11-25" (sv).  32 bytes suffice. */
int i18n_date(int lang, int year, int month, int day, char *out, size_t cap);

#endif
