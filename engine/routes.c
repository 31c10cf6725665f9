/*
 * routes.c -- the one route table of the service, assembled from each
 * resource's routes.  The OpenAPI test compares this table with
 * api/openapi.json in both directions.
 *
 * It is the top of the engine (everything it includes is below it), so it
 * also binds the few questions a lower layer asks a higher one, as constant
 * function pointers the lower layer declares: the lower file then includes
 * nothing above it (see wine_channel_lists).
 */
#include <assert.h>
#include <string.h>

#include "engine/edge/api.h"
#include "engine/edge/audit.h"
#include "engine/supply/channel.h"
#include "engine/edge/key.h"
#include "engine/supply/listing.h"
#include "engine/catalogue/media.h"
#include "engine/supply/offer.h"
#include "engine/supply/sync.h"
#include "engine/orders/compliance.h"
#include "engine/orders/documents.h"
#include "engine/orders/consumer_volume.h"
#include "engine/orders/fulfilment.h"
#include "engine/orders/order.h"
#include "engine/orders/pickup.h"
#include "engine/orders/returns.h"
#include "engine/orders/settlement.h"
#include "engine/edge/event_routes.h"
#include "engine/stock/availability.h"
#include "engine/stock/inventory.h"
#include "engine/stock/location.h"
#include "engine/stock/txn_part.h"
#include "engine/webhooks/webhooks.h"
#include "engine/check.h"
#include "engine/checks.h"
#include "engine/ops.h"
#include "engine/replication/repl.h"

/* GET /internal/replication/{wal,snapshot} (engine/replication/repl_pub.c) */
extern const struct route repl_internal_routes[];
#include "engine/catalogue/partner.h"
#include "engine/orders/payment.h"
#include "engine/catalogue/producer.h"
#include "engine/catalogue/review.h"
#include "engine/pricing/quote.h"
#include "engine/pricing/refadmin.h"
#include "engine/pricing/taxctx.h"
#include "engine/catalogue/wine.h"

/* The catalogue asks supply whether a storefront channel lists a wine. */
int (*const wine_channel_lists)(struct shard *sh, const char *channel_id, const char *wine_id,
				size_t wine_len) = listing_channel_has_wine;

/* Stock asks orders which order owns a hold (hold_owned_by_order). */
const char *(*const inv_hold_owner)(struct shard *sh, const char *hold_id) = order_owning_hold;
void (*const returns_refunded_hook)(struct shard *sh, const char *order_id) = settlement_on_refund;
int (*const order_documents_splice)(struct api_ctx *c, const struct order *o, struct buf *doc) = documents_splice;
unsigned (*const wh_order_parties)(struct shard *sh, const char *order_id, char (*out)[ID_MAX_LEN],
				   unsigned max) = order_parties;
int (*const order_volume_capture)(struct api_ctx *c, const char *order_id, const char *dest, const char *email,
				  const struct order_volume_line *l, unsigned n) = consumer_volume_capture;

/* A channel asks stock whether a location exists, and supply's listings
 * which of them are on it; an offer asks listings whether it is live on a
 * storefront's channel. */
static int location_exists(struct shard *sh, const char *id) { return location_get(sh, id, strlen(id)) != NULL; }
int (*const channel_location_exists)(struct shard *sh, const char *location_id) = location_exists;
int (*const channel_listing_ids)(struct api_ctx *c, const char *channel_id, struct jw *w) = listing_channel_ids;
int (*const offer_listing_live_on)(struct shard *sh, const char *offer_id, size_t offer_len,
				   const char *channel_id) = listing_live_on;

/* Wine ingest opens reviews in the queue above it. */
int (*const wine_review_open)(struct api_ctx *c, const char *wine_id, const struct wine_match *m,
			      const char *label_media_id) = review_open;
int (*const wine_review_open_submission)(struct api_ctx *c, const struct wine_match *m, const char *body,
					 size_t body_len, char review_id[ID_MAX_LEN]) = review_open_submission;

/* Replication asks stock for a replicated level's offer, and to restage
 * that offer's quantity (the catalogue home, repl.h). */
static const char *level_offer(struct shard *sh, const char *id, size_t len)
{
	const struct inv_level *l = inv_level_get(sh, id, len);
	return l ? l->offer_id : NULL;
}
const char *(*const repl_level_offer)(struct shard *sh, const char *level_id, size_t len) = level_offer;
int (*const repl_restage_offer)(struct shard *sh, const char *offer_id) = inv_restage_offer_qty;

/* The edge asks the catalogue for a key's partner (identity, keys). */
int (*const key_partner_facts)(struct shard *sh, const char *id, uint8_t *roles,
			       uint8_t *status) = partner_facts;

/* The edge asks supply whether a channel is a seller's storefront (keys). */
int (*const key_channel_of_seller)(struct shard *sh, const char *channel_id,
				   const char *seller_id) = channel_of_seller;

/* The webhook fan-out of a shard other than the home waits for its
 * replica of the endpoints, and tells the home an endpoint's health
 * (engine/webhooks/webhooks.h). */
static uint64_t home_fresh_ms(struct shard *sh) { return repl_fresh_ms(sh, REPL_HOME); }
uint64_t (*const wh_home_fresh_ms)(struct shard *sh) = home_fresh_ms;
static int home_call(struct shard *sh, const char *path, const char *body, hc_done_fn fn, void *arg)
{
	return txn_shard_call(sh, REPL_HOME, path, body, fn, arg);
}
int (*const wh_home_call)(struct shard *sh, const char *path, const char *body, hc_done_fn fn, void *arg) = home_call;

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
	availability_routes,
	offer_routes,
	sync_routes,
	listing_routes,
	location_routes,
	inventory_routes,
	taxctx_routes,
	quote_routes, /* before order_routes: /v1/orders/quote-calculate is not /v1/orders/{id} */
	order_routes,
	fulfilment_routes,
	pickup_routes,
	return_routes,
	settlement_routes,
	compliance_routes,
	document_routes,
	webhook_dlq_routes, /* before webhook_routes: /{id}/replay is not /{id} */
	webhook_routes,
	checks_routes,
	NULL,
};

/* Concatenate the groups into table (API_MAX_ROUTES + 1 entries, the last
 * left zero as the terminator). */
static void table_build(const struct route *const *groups, struct route *table)
{
	unsigned n = 0;
	for (unsigned g = 0; groups[g]; g++)
		for (const struct route *r = groups[g]; r->pattern; r++) {
			assert(n < API_MAX_ROUTES);
			table[n++] = *r;
		}
}

const struct route *api_route_table(void)
{
	static struct route table[API_MAX_ROUTES + 1];
	static int built;
	if (!built) {
		table_build(route_groups, table);
		built = 1;
	}
	return table;
}

/* The /internal/ routes (cluster mode): never in api/openapi.json. */
static const struct route *const internal_groups[] = {
	ops_internal_routes,
	repl_internal_routes,
	txn_part_internal_routes,
	order_txn_internal_routes,
	check_internal_routes,
	webhook_internal_routes,
	checks_internal_routes,
	NULL,
};

const struct route *api_internal_route_table(void)
{
	static struct route table[API_MAX_ROUTES + 1];
	static int built;
	if (!built) {
		table_build(internal_groups, table);
		built = 1;
	}
	return table;
}
