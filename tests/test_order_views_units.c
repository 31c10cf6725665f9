/*
 * test_order_views_units.c -- the rule that decides which routing
 * candidates a seller may see (engine/pricing/quote.c quote_verdict_hidden,
 * quote_permission_hidden), checked verdict by verdict without a shard.
 * The expected column is written from the read-path filter (spec 5): a
 * seller sees an offer when every rule about the seller itself passes;
 * the destination rules hide nothing (the seller sees the offer in its
 * lists, it just may not ship it there).
 */
#include "engine/supply/permit.h"
#include "engine/pricing/quote.h"
#include "tests/wm_test.h"

WM_TEST(order_views_units, every_verdict_hides_or_shows)
{
	static const struct {
		enum permit_verdict v;
		const char *code;
		int hidden;
	} want[] = {
		{PERMIT_OK, "allowed", 0},
		{PERMIT_OK_OWNER, "owner", 0},
		{PERMIT_NOT_SHAREABLE, "not_network_shareable", 1},
		{PERMIT_DEFAULT_DENY, "default_deny", 1},
		{PERMIT_SELLER_NOT_NAMED, "seller_not_named", 1},
		{PERMIT_SELLER_COUNTRY_BLOCKED, "seller_country_blocked", 1},
		{PERMIT_SELLER_COUNTRY_NOT_ALLOWED, "seller_country_not_allowed", 1},
		{PERMIT_DESTINATION_BLOCKED, "destination_blocked", 0},
		{PERMIT_DESTINATION_NOT_ALLOWED, "destination_not_allowed", 0},
	};
	size_t n = sizeof(want) / sizeof(want[0]);
	cr_assert_eq(n, (size_t)PERMIT_N_VERDICTS, "a verdict without a row here: decide whether it hides the offer");
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(quote_verdict_hidden(want[i].v), want[i].hidden, "verdict %s", want[i].code);
		cr_assert_str_eq(permit_code(want[i].v), want[i].code);
		cr_assert_eq(quote_permission_hidden(want[i].code), want[i].hidden, "code %s", want[i].code);
	}
	/* a stored code this build does not know hides (never guess visible) */
	cr_assert_eq(quote_permission_hidden(""), 1);
	cr_assert_eq(quote_permission_hidden("some_future_rule"), 1);
	cr_assert_eq(quote_permission_hidden("unknown"), 1);
}
