/*
 * iso.h -- ISO 3166-1 alpha-2 countries and ISO 4217 currencies (with their
 * minor units), as data.  Source: the ISO 3166 Maintenance Agency list of
 * officially assigned codes, and ISO 4217 list one (via the freeall/currency-codes
 * data cited in shared/reference/wine-facts.md section 4.3).
 */
#ifndef WM_ISO_H
#define WM_ISO_H

#include <stddef.h>

/* 1 if s[0..2) is an officially assigned alpha-2 code (upper case). */
int iso_country_valid(const char *s, size_t len);
/* Number of countries in the table (tests check it is 249). */
unsigned iso_country_count(void);
/* Minor unit digits of a currency code, or -1 if unknown. */
int iso_currency_minor(const char *s, size_t len);

#endif
