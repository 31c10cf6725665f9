/*
 * iso.c -- country and currency tables (see iso.h).  Lookups are a scan of
 * a short string; they run at validation time only, never on a hot read.
 */
#include "engine/base/iso.h"

#include <stdint.h>
#include <string.h>

static const char countries[] =
	"AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ "
	"BR BS BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM "
	"DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS "
	"GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN "
	"KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ "
	"MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM "
	"PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV "
	"SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI "
	"VN VU WF WS YE YT ZA ZM ZW";

struct currency {
	char code[4];
	int minor;
};

static const struct currency currencies[] = {
	{"AED", 2}, {"ARS", 2}, {"AUD", 2}, {"BGN", 2}, {"BHD", 3}, {"BRL", 2}, {"CAD", 2},
	{"CHF", 2}, {"CLP", 0}, {"CNY", 2}, {"CZK", 2}, {"DKK", 2}, {"EUR", 2}, {"GBP", 2},
	{"HKD", 2}, {"HUF", 2}, {"ILS", 2}, {"INR", 2}, {"ISK", 0}, {"JOD", 3}, {"JPY", 0},
	{"KRW", 0}, {"KWD", 3}, {"MXN", 2}, {"NOK", 2}, {"NZD", 2}, {"OMR", 3}, {"PLN", 2},
	{"RON", 2}, {"RSD", 2}, {"SEK", 2}, {"SGD", 2}, {"TND", 3}, {"TRY", 2}, {"UAH", 2},
	{"USD", 2}, {"ZAR", 2},
};

/* The assigned codes as a bitmap: bit (second letter) of word (first
 * letter).  Built from `countries` before main (no thread exists yet), so
 * iso_country_valid is two compares and a bit test, not a scan of the list
 * (it runs for every candidate of every quote). */
static uint32_t country_bits[26];

__attribute__((constructor)) static void country_bits_build(void)
{
	for (const char *p = countries; *p; p += p[2] ? 3 : 2)
		country_bits[p[0] - 'A'] |= 1u << (p[1] - 'A');
}

int iso_country_valid(const char *s, size_t len)
{
	if (len != 2 || s[0] < 'A' || s[0] > 'Z' || s[1] < 'A' || s[1] > 'Z')
		return 0;
	return (country_bits[s[0] - 'A'] >> (s[1] - 'A')) & 1u;
}

unsigned iso_country_count(void) { return (unsigned)(sizeof(countries) + 1) / 3; }

int iso_currency_minor(const char *s, size_t len)
{
	if (len != 3)
		return -1;
	for (size_t i = 0; i < sizeof(currencies) / sizeof(currencies[0]); i++)
		if (memcmp(currencies[i].code, s, 3) == 0)
			return currencies[i].minor;
	return -1;
}
