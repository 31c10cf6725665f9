/*
 * routes.c -- the one route table of the service, assembled from each
 * resource's routes.  The OpenAPI test compares this table with
 * api/openapi.json in both directions.
 */
#include <assert.h>

#include "engine/api.h"
#include "engine/audit.h"
#include "engine/channel.h"
#include "engine/key.h"
#include "engine/listing.h"
#include "engine/media.h"
#include "engine/offer.h"
#include "engine/order.h"
#include "engine/events.h"
#include "engine/inventory.h"
#include "engine/location.h"
#include "engine/ops.h"
#include "engine/partner.h"
#include "engine/payment.h"
#include "engine/producer.h"
#include "engine/review.h"
#include "engine/quote.h"
#include "engine/refadmin.h"
#include "engine/taxctx.h"
#include "engine/wine.h"

static const struct route *const route_groups[] = {
	ops_routes,
	refadmin_routes,
	payment_routes,
	partner_routes,
	event_routes,
	key_routes,
	audit_routes,
	media_routes,
	producer_routes,
	wine_routes,
	extid_routes,
	review_routes,
	channel_routes,
	offer_routes,
	listing_routes,
	location_routes,
	inventory_routes,
	taxctx_routes,
	quote_routes, /* before order_routes: /v1/orders/quote-calculate is not /v1/orders/{id} */
	order_routes,
	NULL,
};

const struct route *api_route_table(void)
{
	static struct route table[API_MAX_ROUTES + 1];
	static int built;
	if (!built) {
		unsigned n = 0;
		for (unsigned g = 0; route_groups[g]; g++)
			for (const struct route *r = route_groups[g]; r->pattern; r++) {
				assert(n < API_MAX_ROUTES);
				table[n++] = *r;
			}
		built = 1;
	}
	return table;
}
