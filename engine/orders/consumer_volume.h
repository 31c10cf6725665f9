/*
 * consumer_volume.h -- consumer volume caps across a consumer's orders
 * (spec 8; the rules and why in consumer_volume.c).
 */
#ifndef WM_CONSUMER_VOLUME_H
#define WM_CONSUMER_VOLUME_H

#include "engine/edge/api.h"
#include "engine/orders/order.h"

#define CV_ENTRIES_MAX 256 /* orders one consumer row keeps (inside the longest window) */

/*
 * At capture, inside the order's OPEN transaction: would the consumer
 * (destination, e-mail) pass a cap of data/caps.tsv with this order's
 * lines added to what it received in the cap's window?  0: yes, the
 * order's entry is staged; 1: no, the 422 volume_cap_exceeded (or 409
 * too_many_orders_in_window) is answered; -1: storage.  The caller aborts
 * on anything but 0.  (order.c calls it through order_volume_capture.)
 */
int consumer_volume_capture(struct api_ctx *c, const char *order_id, const char *dest, const char *email,
			    const struct order_volume_line *l, unsigned n);

extern const struct table_ops consumer_volume_table_ops;

#endif
