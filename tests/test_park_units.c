/*
 * test_park_units.c -- the X-WM-Min-Position parser (engine/edge/park.h):
 * every bound at and past its edge; expected values written by hand.
 */
#include <stdio.h>
#include <string.h>

#include "engine/edge/park.h"
#include "tests/wm_test.h"

static int parse(const char *s, struct park_position *ps, unsigned max)
{
	return park_positions_parse(s, strlen(s), ps, max);
}

WM_TEST(park_units, positions_and_their_bounds)
{
	struct park_position ps[PARK_MAX_PUBLISHERS + 1];
	cr_assert_eq(parse("0:1", ps, PARK_MAX_PUBLISHERS), 1);
	cr_assert_eq(ps[0].publisher, 0);
	cr_assert_eq(ps[0].lsn, 1);
	cr_assert_eq(parse("2:99,0:12", ps, PARK_MAX_PUBLISHERS), 2);
	cr_assert_eq(ps[0].publisher, 2);
	cr_assert_eq(ps[1].lsn, 12);
	/* publisher 63 is the last id; LSN 2^64-1 the last LSN */
	cr_assert_eq(parse("63:18446744073709551615", ps, PARK_MAX_PUBLISHERS), 1);
	cr_assert_eq(ps[0].lsn, UINT64_MAX);
	cr_assert_eq(parse("64:1", ps, PARK_MAX_PUBLISHERS), -1);
	cr_assert_eq(parse("0:18446744073709551616", ps, PARK_MAX_PUBLISHERS), -1);
	/* malformed */
	static const char *const bad[] = {"", "0", "0:", ":1", "a:1", "0:1,", ",0:1", "0:1;1:2", "0: 1", "-1:1",
					  "0:1x", NULL};
	for (int i = 0; bad[i]; i++)
		cr_assert_eq(parse(bad[i], ps, PARK_MAX_PUBLISHERS), -1, "\"%s\"", bad[i]);
	/* max entries: at and past */
	char many[PARK_HEADER_MAX + 64];
	size_t o = 0;
	for (int i = 0; i < PARK_MAX_PUBLISHERS; i++)
		o += (size_t)snprintf(many + o, sizeof(many) - o, "%s%d:1", i ? "," : "", i);
	cr_assert_eq(parse(many, ps, PARK_MAX_PUBLISHERS), PARK_MAX_PUBLISHERS);
	cr_assert_eq(parse(many, ps, PARK_MAX_PUBLISHERS - 1), -1);
	/* header bytes: at and past */
	memset(many, '0', PARK_HEADER_MAX);
	many[0] = '1';
	many[1] = ':';
	many[PARK_HEADER_MAX] = 0; /* "1:000...0": a 1398-digit LSN, refused as a number, not as a length */
	cr_assert_eq(parse(many, ps, PARK_MAX_PUBLISHERS), -1);
	memset(many, ' ', PARK_HEADER_MAX + 1); /* a value one byte past the bound, whatever it holds */
	memcpy(many, "0:1", 3);
	cr_assert_eq(park_positions_parse(many, PARK_HEADER_MAX + 1, ps, PARK_MAX_PUBLISHERS), -1);
}
