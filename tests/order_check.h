/*
 * order_check.h -- whole-shard invariants of the orders saga, read over
 * HTTP as the operator (DESIGN.md 5), for the crash and race tests:
 *
 *  - nothing is held without a live order: every level's reserved is 0
 *    once every order is at rest, and its allocated is the sum of the
 *    reserved legs of reserved orders drawing on it;
 *  - no money is kept without a live order: a captured ledger row belongs
 *    to an order in reserved or later, a failed or cancelled order's
 *    payment is refunded or voided, a reserved order's is captured, and the
 *    order document says the same as the ledger;
 *  - each order's events are the spec's sequence with no gap and no
 *    repeat: [order.placed, order.paid, order.confirmed, order.sourced,
 *    stock.reserved x legs] for a reserved order, [order.placed,
 *    (order.paid,) order.failed] for a failed one (the orders these
 *    tests make end reserved or failed: any other status fails the check).
 *
 * jansson-based, like order_world.h.
 */
#ifndef WM_ORDER_CHECK_H
#define WM_ORDER_CHECK_H

#include <jansson.h>

#include "tests/order_world.h"

/* Every row of a cursor-paginated list (path carries its query, e.g.
 * "/v1/events?page_size=200"), read as the operator: a new array. */
json_t *ow_list_all(struct oworld *x, const char *path);
/* The types of the order's own events in log order -- order.* with
 * payload.order_id == order_id, and stock.reserved of its holds
 * ("<order_id>.H<n>") -- from a list of events; at most max, the count. */
size_t ow_order_events(json_t *events, const char *order_id, const char **types, size_t max);
/* The same for payment.* events with payload.order_id == order_id. */
size_t ow_payment_events(json_t *events, const char *order_id, const char **types, size_t max);
/* Assert that every order is at rest and the invariants above hold. */
void ow_check_invariants(struct oworld *x);

#endif
