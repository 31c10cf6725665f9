/*
 * test_settlement_units.c -- the apportioning of refunds over a
 * settlement's buckets (engine/orders/settlement.c settle_apportion), as a
 * property over random buckets and refund sequences: the shares sum to
 * each refund exactly, never take a bucket below zero, and only grow.
 */
#include <stdint.h>
#include <string.h>

#include "engine/orders/settlement.h"
#include "tests/wm_test.h"

/* ---- the arithmetic, as a property ---------------------------------------------------------- */

static uint64_t rng_state;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

WM_TEST(settlement_units, apportioned_refunds_are_exact_bounded_and_only_grow)
{
	rng_state = 0x5eed5e771e;
	cr_log_info("seed 0x5eed5e771e");
	for (int round = 0; round < 2000; round++) {
		unsigned n = 1 + (unsigned)(rnd() % SETTLE_BUCKETS_MAX);
		struct settle_bucket b[SETTLE_BUCKETS_MAX], before[SETTLE_BUCKETS_MAX];
		int64_t total = 0;
		for (unsigned i = 0; i < n; i++) {
			b[i].amount = (int64_t)(rnd() % 4 == 0 ? 0 : rnd() % 100000);
			b[i].refunded = 0;
			total += b[i].amount;
		}
		int64_t refunded = 0;
		for (int k = 0; k < 8 && refunded < total; k++) {
			int64_t r = k == 7 ? total - refunded : (int64_t)(rnd() % (uint64_t)(total - refunded + 1));
			memcpy(before, b, sizeof(b));
			cr_assert_eq(settle_apportion(b, n, r), 0, "round %d refund %d", round, k);
			refunded += r;
			int64_t sum = 0;
			for (unsigned i = 0; i < n; i++) {
				cr_assert(b[i].refunded >= before[i].refunded, "a share went back down");
				cr_assert(b[i].refunded <= b[i].amount, "below zero: %lld of %lld", (long long)b[i].refunded,
					  (long long)b[i].amount);
				sum += b[i].refunded;
			}
			cr_assert_eq(sum, refunded, "round %d: shares %lld, refunds %lld", round, (long long)sum,
				     (long long)refunded);
		}
		/* past what is left: refused, nothing changed */
		memcpy(before, b, sizeof(b));
		cr_assert_eq(settle_apportion(b, n, total - refunded + 1), -1);
		cr_assert_eq(settle_apportion(b, n, -1), -1);
		cr_assert(!memcmp(before, b, sizeof(b)));
	}
	/* a hand-computed case: 100 over 3:1 buckets of 60 and 20 (and an empty one) */
	struct settle_bucket h[3] = {{60, 0}, {0, 0}, {20, 0}};
	cr_assert_eq(settle_apportion(h, 3, 10), 0);
	cr_assert(h[0].refunded == 8 && h[1].refunded == 0 && h[2].refunded == 2, "7.5 -> 8 (larger fraction), 2.5 -> 2");
}

