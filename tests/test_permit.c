/*
 * test_permit.c -- the selling-permission evaluator, case by case: two
 * originators, sellers named and not, sellers in blocked and allowed
 * countries, destinations, default none, and the owner exemption.
 */
#include <string.h>

#include "engine/supply/permit.h"
#include "tests/wm_test.h"

static struct permit_rules rules(int shareable, int deflt, const char *allowed, const char *blocked,
				 const char *named)
{
	struct permit_rules r;
	memset(&r, 0, sizeof(r));
	r.network_shareable = (uint8_t)shareable;
	r.deflt = (uint8_t)deflt;
	for (const char *p = allowed; p && *p; p += 2)
		memcpy(r.allowed[r.n_allowed++], p, 2);
	for (const char *p = blocked; p && *p; p += 2)
		memcpy(r.blocked[r.n_blocked++], p, 2);
	for (const char *p = named; p && *p;) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		memcpy(r.named[r.n_named++], p, n);
		p += n + (e ? 1 : 0);
	}
	return r;
}

static enum permit_verdict check(const struct permit_rules *r, const char *seller, const char *cc,
				 const char *dest)
{
	struct permit_query q = {"ptn_orig_A", seller, cc, dest};
	return permit_check(r, &q);
}

WM_TEST(permit, owner_always_sells_its_own_offer)
{
	struct permit_rules closed = rules(0, PERMIT_DEFAULT_NONE, "FR", "DE", "ptn_x");
	cr_assert_eq(check(&closed, "ptn_orig_A", "DE", "DE"), PERMIT_OK_OWNER);
	cr_assert(permit_allowed(PERMIT_OK_OWNER));
	cr_assert_eq(check(&closed, "ptn_orig_B", "FR", NULL), PERMIT_NOT_SHAREABLE, "another originator");
}

WM_TEST(permit, default_any_and_lists)
{
	struct permit_rules open = rules(1, PERMIT_DEFAULT_ANY, NULL, NULL, NULL);
	cr_assert_eq(check(&open, "ptn_s1", "FR", NULL), PERMIT_OK);
	cr_assert_eq(check(&open, "ptn_s1", "FR", "JP"), PERMIT_OK);
	struct permit_rules blocked = rules(1, PERMIT_DEFAULT_ANY, NULL, "DEUS", NULL);
	cr_assert_eq(check(&blocked, "ptn_s1", "DE", NULL), PERMIT_SELLER_COUNTRY_BLOCKED);
	cr_assert_eq(check(&blocked, "ptn_s1", "FR", "US"), PERMIT_DESTINATION_BLOCKED);
	cr_assert_eq(check(&blocked, "ptn_s1", "FR", "IT"), PERMIT_OK);
	struct permit_rules allowed = rules(1, PERMIT_DEFAULT_ANY, "FRBE", NULL, NULL);
	cr_assert_eq(check(&allowed, "ptn_s1", "IT", NULL), PERMIT_SELLER_COUNTRY_NOT_ALLOWED);
	cr_assert_eq(check(&allowed, "ptn_s1", "FR", "DE"), PERMIT_DESTINATION_NOT_ALLOWED);
	cr_assert_eq(check(&allowed, "ptn_s1", "BE", "FR"), PERMIT_OK);
	/* blocked wins over allowed */
	struct permit_rules both = rules(1, PERMIT_DEFAULT_ANY, "FRBE", "BE", NULL);
	cr_assert_eq(check(&both, "ptn_s1", "BE", NULL), PERMIT_SELLER_COUNTRY_BLOCKED);
	cr_assert_eq(check(&both, "ptn_s1", "FR", "BE"), PERMIT_DESTINATION_BLOCKED);
	/* an unknown seller country never passes an allowed list */
	cr_assert_eq(check(&allowed, "ptn_s1", NULL, "FR"), PERMIT_SELLER_COUNTRY_NOT_ALLOWED);
}

WM_TEST(permit, named_sellers_and_default_none)
{
	struct permit_rules named = rules(1, PERMIT_DEFAULT_ANY, NULL, NULL, "ptn_s1,ptn_s2");
	cr_assert_eq(check(&named, "ptn_s2", "FR", NULL), PERMIT_OK);
	cr_assert_eq(check(&named, "ptn_s3", "FR", NULL), PERMIT_SELLER_NOT_NAMED);
	/* a named seller outside the allowed countries still sells, but only to them */
	struct permit_rules mix = rules(1, PERMIT_DEFAULT_ANY, "FR", NULL, "ptn_s1");
	cr_assert_eq(check(&mix, "ptn_s1", "US", NULL), PERMIT_OK);
	cr_assert_eq(check(&mix, "ptn_s1", "US", "US"), PERMIT_DESTINATION_NOT_ALLOWED);
	struct permit_rules none = rules(1, PERMIT_DEFAULT_NONE, NULL, NULL, NULL);
	cr_assert_eq(check(&none, "ptn_s1", "FR", NULL), PERMIT_DEFAULT_DENY);
	struct permit_rules none_fr = rules(1, PERMIT_DEFAULT_NONE, "FR", NULL, NULL);
	cr_assert_eq(check(&none_fr, "ptn_s1", "FR", "FR"), PERMIT_OK);
	cr_assert_eq(check(&none_fr, "ptn_s1", "DE", NULL), PERMIT_SELLER_COUNTRY_NOT_ALLOWED);
	/* a country code must match exactly (no prefixes) */
	cr_assert_eq(check(&none_fr, "ptn_s1", "FRA", NULL), PERMIT_SELLER_COUNTRY_NOT_ALLOWED);
}

WM_TEST(permit, codes_and_reasons)
{
	for (int v = 0; v < PERMIT_N_VERDICTS; v++) {
		cr_assert_not_null(permit_code((enum permit_verdict)v));
		cr_assert_gt(strlen(permit_reason((enum permit_verdict)v)), 10);
		for (int w = 0; w < v; w++)
			cr_assert_str_neq(permit_code((enum permit_verdict)v), permit_code((enum permit_verdict)w));
	}
	cr_assert_str_eq(permit_code(PERMIT_N_VERDICTS), "unknown");
	cr_assert(!permit_allowed(PERMIT_DESTINATION_BLOCKED));
}
