/*
 * returns.h -- returns and refunds after delivery (spec 3.1, 8; the rules
 * and why in returns.c's opening comment).
 */
#ifndef WM_RETURNS_H
#define WM_RETURNS_H

#include "engine/edge/route.h"
#include "engine/storage/shard.h"

#define RETURNS_POLL_MS 250u     /* how often unfinished returns are looked at */

extern const struct route return_routes[];
extern const struct table_ops return_table_ops;

/* The destination's complaint window in days (--complaint-windows, else
 * --complaint-window-days). */
unsigned complaint_window_days(const struct shard *sh, const char *dest);
/* The refunds paid back on the order so far, in return order (status
 * refunded): their amounts into out (at most max); how many. */
unsigned order_refunds(struct shard *sh, const char *order_id, int64_t *out, unsigned max);

/* Units of each order line returned or refunded so far (every return of
 * the order, whatever its status) into back[line] (max lines; zeroed by
 * the caller). */
void order_units_back(struct shard *sh, const char *order_id, int64_t *back, unsigned max);

/* Called after a return's refund was paid back (the settlement's
 * clawbacks: settlement_on_refund, bound in engine/routes.c so that the
 * settlement, which reads the returns, is not included here). */
extern void (*const returns_refunded_hook)(struct shard *sh, const char *order_id);

/* From the loop's tick: refund returns left refunding by a crash or a
 * failed refund, and tell other shards the stock that comes back. */
void returns_poll(struct shard *sh);

#endif
