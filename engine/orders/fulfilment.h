/*
 * fulfilment.h -- an order after `reserved` (spec 3.1, 2.8): each leg's
 * moves by its fulfiller (pick, pack, ship) and by the carrier (scans:
 * picked up, in transit, delivered), and the order following its legs.
 *
 *   POST /v1/orders/{id}/fulfillments/{leg_id}/pick
 *   POST /v1/orders/{id}/fulfillments/{leg_id}/pack
 *   POST /v1/orders/{id}/fulfillments/{leg_id}/ship      (/fulfill: the same)
 *   POST /v1/orders/{id}/fulfillments/{leg_id}/tracking  a carrier scan
 *
 * Shipping consumes the leg's hold in the SAME transaction as the leg's
 * new status when the hold lives on this shard.  When it lives on another
 * shard (a cross-shard order), the leg first becomes `shipping` durably;
 * fulfil_poll then has the stock's shard consume it (idempotently) and
 * marks the leg `fulfilled` on its answer -- after a crash on either side
 * the poll simply asks again, so no leg stays half-shipped.
 */
#ifndef WM_FULFILMENT_H
#define WM_FULFILMENT_H

#include "engine/edge/route.h"
#include "engine/storage/shard.h"

#define FULFIL_CALLS_MAX 64        /* consume calls in flight at once */
#define FULFIL_RETRY_MS 1000u      /* after a failed call, the next round */
#define SCAN_FUTURE_MAX_MS 900000  /* a scan's occurred_at may be at most 15 min ahead of this clock */

extern const struct route fulfilment_routes[];

/* From the loop (after each iteration; cheap when no leg is in flight):
 * consume the holds of legs left `shipping` once their state is durable,
 * and mark them shipped. */
void fulfil_poll(struct shard *sh);

#endif
