/*
 * channel.h -- a seller's shelf: sales channels and curated shops (spec
 * 2.1), the typed rows and the lookups the listings and key code need (see
 * channel.c for the why and the rules).
 */
#ifndef WM_CHANNEL_H
#define WM_CHANNEL_H

#include <stddef.h>
#include <stdint.h>

#include "engine/edge/api.h"
#include "engine/storage/id.h"
#include "engine/storage/shard.h"
#include "engine/storage/table.h"
#include "engine/supply/shelf.h"

struct channel {
	struct shelf_row s;
	uint8_t kind;                        /* enum channel_kind */
	char country[3];                     /* "" when none */
	char currency[4];                    /* "" when none */
	uint8_t n_locations;                 /* linked stock locations (location_ids[]) */
	char location_ids[CHANNEL_LOCATIONS_MAX][ID_MAX_LEN];
};

struct shop {
	struct shelf_row s;
	int64_t markup;                      /* SHOP_MARKUP_SCALE: 2550 = 25.50 % over P_B2B */
	uint8_t layout;                      /* enum shop_layout */
	char channel_id[ID_MAX_LEN];         /* a channel of the same seller */
};

/* A sales channel by id, or NULL.  Its owner is ch->s.seller_id, its
 * status ch->s.status (a closed channel sells nothing). */
const struct channel *channel_get(struct shard *sh, const char *id, size_t len);
/* A curated shop by id, or NULL. */

/*
 * Is the channel a live storefront of `seller_id`: it exists, belongs to
 * that seller and is not closed?  Used by key minting (publishable keys are
 * channel-scoped; as key_channel_of_seller, bound in engine/routes.c) and by
 * the listings work.  1 or 0.
 */
int channel_of_seller(struct shard *sh, const char *channel_id, const char *seller_id);

/* The oldest (lowest id) non-closed curated shop on the channel, or NULL:
 * its markup prices a listing that has no shelf price (DESIGN.md 6).
 * Walks the channel seller's shops (by-seller index), not the table. */
const struct shop *shop_on_channel(struct shard *sh, const char *channel_id);

/*
 * The sales channel a quote or an order of `seller_id` goes through when
 * the request names none (spec 2.5: availability is scoped by the
 * channel's linked locations).  Walks the seller's channels (by-seller
 * index, id order), at most CHANNEL_DEFAULT_SCAN rows:
 *   CHP_NONE      the seller has no channel at all: nothing to scope by
 *                 (a seller not yet configured sells unscoped);
 *   CHP_ONE       exactly one channel that is not closed: *out (it may be
 *                 paused; the caller decides);
 *   CHP_NO_OPEN   channels exist, every one closed;
 *   CHP_SEVERAL   two or more not closed, or more rows than the scan
 *                 bound: the request must name its channel.
 */
#define CHANNEL_DEFAULT_SCAN 64
enum channel_pick { CHP_NONE, CHP_ONE, CHP_NO_OPEN, CHP_SEVERAL };
enum channel_pick channel_default_of(struct shard *sh, const char *seller_id, const struct channel **out);

extern const struct route channel_routes[];

/* The channel named by the request path that the caller may see, or NULL
 * with the 404 written (as GET /v1/sales-channels/{id} answers). */
const struct channel *channel_from_path(struct api_ctx *c);
/* The caller holds a storefront (publishable) key. */
int channel_storefront_key(const struct api_ctx *c);
/* What a channel asks the layers above it, bound in engine/routes.c: does
 * a stock location exist (location_get), and the ids of the listings on a
 * channel written into its document (listing_channel_ids: 1 when more than
 * fit). */
extern int (*const channel_location_exists)(struct shard *sh, const char *location_id);
extern int (*const channel_listing_ids)(struct api_ctx *c, const char *channel_id, struct jw *w);

#endif
