/*
 * test_auth_units.c -- pure logic of identity and access: the key format
 * (generation, checksum, every rejection), the action policy table, the
 * scope table, and RFC 3339 parsing used for key expiry.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "engine/edge/key.h"
#include "engine/base/log.h"
#include "engine/catalogue/partner.h"
#include "engine/edge/policy.h"
#include "engine/edge/route.h"
#include "tests/wm_test.h"

WM_TEST(key_format, generated_keys_parse_and_every_single_change_is_caught)
{
	for (int kind = 0; kind < 2; kind++) {
		char k[KEY_TOKEN_LEN + 1], other[KEY_TOKEN_LEN + 1];
		cr_assert_eq(key_token_new((enum key_kind)kind, k), 0);
		cr_assert_eq(key_token_new((enum key_kind)kind, other), 0);
		cr_assert_str_neq(k, other, "two keys are never equal");
		cr_assert_eq(strlen(k), KEY_TOKEN_LEN);
		cr_assert_eq(key_token_parse(k, KEY_TOKEN_LEN), kind ? KEY_TOK_PUBLISHABLE : KEY_TOK_SECRET);
		static const char alpha[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
		unsigned caught = 0, tried = 0;
		for (int i = 6; i < KEY_TOKEN_LEN; i++)
			for (int a = 0; a < 62; a++) {
				if (alpha[a] == k[i])
					continue;
				char m[KEY_TOKEN_LEN + 1];
				memcpy(m, k, sizeof(m));
				m[i] = alpha[a];
				tried++;
				caught += key_token_parse(m, KEY_TOKEN_LEN) == KEY_TOK_BAD_CHECKSUM;
			}
		/* a 6-character base62 checksum of XXH32: a miss is a 2^-32 event */
		cr_assert_eq(caught, tried, "%u of %u substitutions were caught", caught, tried);
		/* adjacent transposition */
		char t[KEY_TOKEN_LEN + 1];
		memcpy(t, k, sizeof(t));
		for (int i = 6; i + 1 < KEY_TOKEN_LEN; i++)
			if (t[i] != t[i + 1]) {
				char x = t[i];
				t[i] = t[i + 1];
				t[i + 1] = x;
				break;
			}
		cr_assert_eq(key_token_parse(t, KEY_TOKEN_LEN), KEY_TOK_BAD_CHECKSUM);
		/* every length but the right one */
		for (size_t n = 0; n <= KEY_TOKEN_LEN + 2; n++)
			if (n != KEY_TOKEN_LEN && n >= 6)
				cr_assert_eq(key_token_parse(k, n), KEY_TOK_BAD_LENGTH, "length %zu", n);
	}
}

WM_TEST(key_format, prefixes_charsets_and_raw_secrets)
{
	char k[KEY_TOKEN_LEN + 1];
	cr_assert_eq(key_token_new(KEY_SECRET, k), 0);
	char m[KEY_TOKEN_LEN + 1];
	memcpy(m, k, sizeof(m));
	m[3] = 'x';
	cr_assert_eq(key_token_parse(m, KEY_TOKEN_LEN), KEY_TOK_BAD_PREFIX);
	cr_assert_eq(key_token_parse("wm_", 3), KEY_TOK_BAD_PREFIX);
	memcpy(m, k, sizeof(m));
	m[20] = '_';
	cr_assert_eq(key_token_parse(m, KEY_TOKEN_LEN), KEY_TOK_BAD_CHARSET);
	m[20] = 0;
	cr_assert_eq(key_token_parse(m, KEY_TOKEN_LEN), KEY_TOK_BAD_CHARSET, "an embedded NUL");
	/* bootstrap-style secrets: 32..256 visible ASCII, no wm_ prefix */
	char raw[300];
	memset(raw, 'q', sizeof(raw));
	cr_assert_eq(key_token_parse(raw, KEY_RAW_MIN - 1), KEY_TOK_BAD_LENGTH);
	cr_assert_eq(key_token_parse(raw, KEY_RAW_MIN), KEY_TOK_RAW);
	cr_assert_eq(key_token_parse(raw, KEY_RAW_MAX), KEY_TOK_RAW);
	cr_assert_eq(key_token_parse(raw, KEY_RAW_MAX + 1), KEY_TOK_BAD_LENGTH);
	raw[10] = ' ';
	cr_assert_eq(key_token_parse(raw, 40), KEY_TOK_BAD_CHARSET);
	raw[10] = (char)0xc3;
	cr_assert_eq(key_token_parse(raw, 40), KEY_TOK_BAD_CHARSET);
	raw[10] = 0x7f;
	cr_assert_eq(key_token_parse(raw, 40), KEY_TOK_BAD_CHARSET);
	cr_assert_str_neq(key_token_error(KEY_TOK_BAD_CHECKSUM), key_token_error(KEY_TOK_BAD_LENGTH));
}

WM_TEST(policy, roles_and_status_decide_actions)
{
	const uint8_t O = ROLE_ORIGINATOR, F = ROLE_FULFILLER, S = ROLE_SELLER;
	/* the platform may do everything, including platform-only actions */
	for (int a = 0; a < ACT_COUNT_; a++)
		cr_assert(policy_allows((enum action)a, 1, 0, 0), "%s for the platform", action_defs[a].name);
	/* platform-only actions: no partner, whatever its roles and status */
	const enum action platform_only[] = {ACT_CREATE_PARTNER, ACT_READ_NETWORK, ACT_OPERATE};
	for (size_t i = 0; i < 3; i++)
		for (int st = 0; st < PARTNER_N_STATUS; st++)
			cr_assert(!policy_allows(platform_only[i], 0, O | F | S, (uint8_t)st));
	/* suspended: nothing */
	for (int a = 1; a < ACT_COUNT_; a++)
		cr_assert(!policy_allows((enum action)a, 0, O | F | S, PS_SUSPENDED), "%s while suspended",
			  action_defs[a].name);
	/* roles: listings are sellers', offers originators', orders live sellers' */
	cr_assert(policy_allows(ACT_WRITE_LISTINGS, 0, S, PS_CONFIGURED));
	cr_assert(!policy_allows(ACT_WRITE_LISTINGS, 0, O | F, PS_LIVE));
	cr_assert(policy_allows(ACT_WRITE_OFFERS, 0, O, PS_ROLES_ENABLED));
	cr_assert(!policy_allows(ACT_WRITE_OFFERS, 0, S | F, PS_LIVE));
	cr_assert(policy_allows(ACT_CREATE_ORDERS, 0, S, PS_LIVE));
	cr_assert(!policy_allows(ACT_CREATE_ORDERS, 0, S, PS_INTEGRATED), "orders only once live");
	cr_assert(policy_allows(ACT_WRITE_WINES, 0, F, PS_LIVE), "fulfillers may feed unoffered wines");
	/* status: own record from the start, keys from verification on */
	cr_assert(policy_allows(ACT_READ_PARTNERS, 0, 0, PS_APPLIED));
	cr_assert(!policy_allows(ACT_MINT_KEY, 0, S, PS_APPLIED));
	cr_assert(policy_allows(ACT_MINT_KEY, 0, 0, PS_VERIFIED));
	cr_assert(!policy_allows(ACT_WRITE_LISTINGS, 0, S, PS_VERIFIED), "roles must be enabled first");
	/* bounds */
	cr_assert(!policy_allows(ACT_COUNT_, 0, O, PS_LIVE));
	cr_assert(!policy_allows(ACT_READ_OFFERS, 0, O, 16));
	/* every action has a can_ name */
	for (int a = 1; a < ACT_COUNT_; a++)
		cr_assert(!strncmp(action_defs[a].name, "can_", 4), "%s", action_defs[a].name);
}

WM_TEST(policy, scope_table)
{
	cr_assert_lt(SC_COUNT_, 32, "scopes fit a scope_set");
	for (int s = 1; s < SC_COUNT_; s++) {
		cr_assert_not_null(scope_defs[s].name);
		cr_assert_eq(scope_find(scope_defs[s].name, strlen(scope_defs[s].name)), s);
		cr_assert(!(scope_defs[s].flags & SCF_PLATFORM_ONLY) || !(scope_defs[s].flags & SCF_PARTNER_DEFAULT),
			  "%s: platform-only scopes are never partner defaults", scope_defs[s].name);
		if (scope_defs[s].flags & SCF_PUBLISHABLE)
			cr_assert(!strncmp(scope_defs[s].name, "read:", 5), "publishable keys only read");
	}
	cr_assert_eq(scope_find("read:network", 12), SC_READ_NETWORK);
	cr_assert(scope_defs[SC_READ_NETWORK].flags & SCF_PLATFORM_ONLY);
	cr_assert_eq(scope_find("read:networ", 11), -1);
	cr_assert_eq(scope_find("", 0), -1);
	const char *spec[] = {"read:wines", "read:offers", "read:listings", "write:offers", "write:listings",
			      "read:orders", "read:network"};
	for (size_t i = 0; i < 7; i++)
		cr_assert_gt(scope_find(spec[i], strlen(spec[i])), 0, "spec scope %s", spec[i]);
}

WM_TEST(rfc3339, parse)
{
	long long ms;
	cr_assert_eq(parse_rfc3339_ms("1970-01-01T00:00:00Z", 20, &ms), 0);
	cr_assert_eq(ms, 0);
	const char *s = "2026-11-21T10:00:00.123Z";
	cr_assert_eq(parse_rfc3339_ms(s, strlen(s), &ms), 0);
	struct tm tm = {.tm_year = 126, .tm_mon = 10, .tm_mday = 21, .tm_hour = 10};
	cr_assert_eq(ms, (long long)timegm(&tm) * 1000 + 123);
	s = "2026-11-21T12:30:00+02:30";
	long long ms2;
	cr_assert_eq(parse_rfc3339_ms(s, strlen(s), &ms2), 0);
	cr_assert_eq(ms2, (long long)timegm(&tm) * 1000, "offsets are applied");
	s = "2024-02-29T00:00:00Z";
	cr_assert_eq(parse_rfc3339_ms(s, strlen(s), &ms), 0, "leap day");
	const char *bad[] = {"2025-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-11-31T00:00:00Z",
			     "2026-11-21T24:00:00Z", "2026-11-21T10:00:00", "2026-11-21 10:00:00Z",
			     "2026-11-21T10:00:00.Z", "2026-11-21T10:00:00Zjunk", "2026-11-21T10:00:00+0200",
			     "tomorrow", ""};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(parse_rfc3339_ms(bad[i], strlen(bad[i]), &ms), -1, "%s accepted", bad[i]);
}

/* fmt_rfc3339_ms (digits, the calendar part cached per second) against
 * gmtime_r + snprintf, and round trips through the parser: the epoch, a
 * leap day, second and year boundaries, the same second twice, seconds
 * taken in turn (the cache's slots and their eviction), and a seeded
 * spread over 1970-2100. */
WM_TEST(rfc3339, format_matches_gmtime_and_round_trips)
{
	unsigned long long at[300] = {0, 999, 1000, 1709164799999ull, 1709164800000ull, 1709251199999ull,
				      1735689599999ull, 1735689600000ull, 1735689600000ull, 1735689600001ull};
	unsigned n = 10;
	/* the calendar cache's slots: 2, then 5 seconds taken in turn (more
	 * than it keeps, so each is evicted and made again), each time with
	 * other milliseconds */
	static const unsigned long long turn[] = {1735689600000ull, 1709164799000ull, 1000ull, 1767225599000ull,
						  4102444799000ull};
	for (unsigned k = 0; k < 40; k++)
		at[n++] = turn[k < 10 ? k % 2 : k % 5] + (k * 37) % 1000;
	unsigned long long x = 88172645463325252ull;
	while (n < sizeof(at) / sizeof(at[0])) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		at[n++] = x % 4102444800000ull; /* before 2100 */
	}
	for (unsigned i = 0; i < n; i++) {
		char got[32], want[32];
		memset(got, 'x', sizeof(got));
		fmt_rfc3339_ms(got, at[i]);
		time_t sec = (time_t)(at[i] / 1000);
		struct tm tm;
		gmtime_r(&sec, &tm);
		snprintf(want, sizeof(want), "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1,
			 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)(at[i] % 1000));
		cr_assert_str_eq(got, want, "%llu", at[i]);
		long long back;
		cr_assert_eq(parse_rfc3339_ms(got, strlen(got), &back), 0);
		cr_assert_eq((unsigned long long)back, at[i]);
	}
}

WM_TEST(policy, every_keyed_route_names_an_action)
{
	int n = 0;
	for (const struct route *r = api_route_table(); r->pattern; r++, n++) {
		cr_assert_lt(r->scope, SC_COUNT_, "%s: scope out of range", r->pattern);
		cr_assert_lt(r->action, ACT_COUNT_, "%s: action out of range", r->pattern);
		if (r->scope != SC_PUBLIC)
			cr_assert_neq(r->action, ACT_NONE, "%s needs a key but names no action", r->pattern);
		else
			cr_assert_eq(r->action, ACT_NONE, "%s is public but names an action", r->pattern);
	}
	cr_assert_gt(n, 10);
}
