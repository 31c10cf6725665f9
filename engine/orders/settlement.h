/*
 * settlement.h -- who gets paid for an order, and when (spec 2.9
 * settlement_split, 3.2 payout states; the rules and why in settlement.c).
 *
 *   GET  /v1/orders/{id}/settlement   per-party payouts and their state
 *   POST /v1/admin/payout-runs        pay every eligible payout (operator)
 */
#ifndef WM_SETTLEMENT_H
#define WM_SETTLEMENT_H

#include <stddef.h>
#include <stdint.h>

#include "engine/edge/route.h"
#include "engine/storage/shard.h"

#define SETTLE_PARTIES_MAX 64                    /* settlement_split parties of one order */
#define SETTLE_BUCKETS_MAX (SETTLE_PARTIES_MAX + 3) /* + platform fee, excise, VAT */
#define PAYOUT_RUN_MAX 1000                      /* orders one payout run visits */

/* One thing the charge pays for: a party's payout, the platform fee, a tax. */
struct settle_bucket {
	int64_t amount;      /* its share of the charge (minor units) */
	int64_t refunded;    /* of it, refunds to the consumer so far */
};

/*
 * Apportion a refund r (minor units) over the buckets' remaining amounts
 * (amount - refunded), in proportion, by largest remainder (ties to the
 * lower index): each bucket's refunded grows by its share, the shares sum
 * to r exactly and none takes a bucket below 0.  Applied refund by refund,
 * so what a bucket has lost only grows.  0, or -1 (r < 0 or more than
 * what remains: nothing changed).
 */
int settle_apportion(struct settle_bucket *b, unsigned n, int64_t r);

/* A return's refund was paid back: claw it back from payouts already
 * paid (their totals, idempotent).  Outside any transaction. */
void settlement_on_refund(struct shard *sh, const char *order_id);

/* The order's money reconciles: charged = Σ buckets, and charged -
 * refunds = Σ (amount - refunded), payouts paid never above what is owed
 * plus what was clawed back.  0, or -1 with why (a sentence) in why[n]. */
int settlement_check(struct shard *sh, const char *order_id, char *why, size_t n);

extern const struct route settlement_routes[];

#endif
