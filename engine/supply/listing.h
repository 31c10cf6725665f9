/*
 * listing.h -- listings: a seller's shelf price over an offer on one of its
 * sales channels (spec 2.4), and the lookups the offer, wine and channel
 * read paths use to scope publishable (storefront) keys.  The why and the
 * rules are at the top of listing.c.
 */
#ifndef WM_LISTING_H
#define WM_LISTING_H

#include <stddef.h>
#include <stdint.h>

#include "engine/edge/api.h"
#include "engine/storage/id.h"
#include "engine/storage/shard.h"
#include "engine/storage/table.h"

#define LISTING_MAX_NOTES 2000        /* bytes of curation.notes */
#define LISTING_MAX_PAIRING 500       /* bytes of curation.pairing */
#define LISTING_CHANNEL_DOC_MAX 100   /* listing ids a channel document carries */

enum listing_status { LS_DRAFT, LS_LIVE, LS_DELISTED, LISTING_N_STATUS };

extern const char *const listing_status_names[]; /* NULL-terminated */

struct listing {
	struct row row;
	char seller_id[ID_MAX_LEN];
	char offer_id[ID_MAX_LEN];
	char channel_id[ID_MAX_LEN];
	char currency[4];
	uint8_t status;                  /* enum listing_status */
	int64_t shelf_minor;             /* shelf_price in the currency's minor units */
	/* "offer NUL channel": the (seller, offer, channel) identity -- a
	 * channel belongs to exactly one seller, so offer + channel implies it */
	char nkey[2 * ID_MAX_LEN];
	uint16_t nkey_len;
};

const struct listing *listing_get(struct shard *sh, const char *id, size_t len);

/* Is there a LIVE listing of offer `offer_id` on channel `channel_id`?
 * One hash lookup.  1 or 0.  (offer.c's channel_admits().) */
int listing_live_on(struct shard *sh, const char *offer_id, size_t offer_len, const char *channel_id);

/* The LIVE listing of offer `offer_id` on channel `channel_id`, or NULL:
 * the M_Curator source of a quote sold through that channel.  One hash
 * lookup. */
const struct listing *listing_live_on_channel(struct shard *sh, const char *offer_id, const char *channel_id);

/* The seller's first LIVE listing (in listing id order) over offer
 * `offer_id`, or NULL: the quote's M_Curator source.  Walks the offer's
 * listings (by-offer index). */
const struct listing *listing_live_of_seller(struct shard *sh, const char *offer_id, const char *seller_id);

/* Does channel `channel_id` have a live listing over any offer of wine
 * `wine_id`?  Walks the wine's offers (by-wine index), one hash lookup
 * each.  1 or 0.  (wine.c's visibility check for publishable keys, as
 * wine_channel_lists: bound in engine/routes.c.) */
int listing_channel_has_wine(struct shard *sh, const char *channel_id, const char *wine_id, size_t wine_len);

/* Write the channel document's `listings` value: an array of the ids of
 * the channel's listings the caller may see, in id order, at most
 * LISTING_CHANNEL_DOC_MAX; returns 1 when more exist (the document then
 * says listings_truncated: the whole set is GET /v1/listings?channel_id=). */
int listing_channel_ids(struct api_ctx *c, const char *channel_id, struct jw *w);

extern const struct table_ops listing_table_ops;
extern const struct route listing_routes[];

#endif
