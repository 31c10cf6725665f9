/*
 * availability.c -- GET /v1/sales-channels/{id}/availability (spec 2.5):
 * the stock a sales channel may sell, summed over the locations linked to
 * it, per offer the seller may sell now.
 *
 * Why here and not in supply/channel.c: it reads stock (levels and their
 * locations) through a channel, so it sits above both; the channel file
 * keeps the channel itself and includes nothing of stock.
 */
#include "engine/stock/availability.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/log.h"
#include "engine/catalogue/partner.h"
#include "engine/edge/fields.h"
#include "engine/stock/inventory.h"
#include "engine/stock/location.h"
#include "engine/supply/channel.h"
#include "engine/supply/offer.h"
#include "engine/supply/permit.h"

/* ---- availability --------------------------------------------------------------- */

/* May the seller sell o now: the offer rules (network_shareable, named
 * sellers, the seller's country; the originator always) and sellable. */
static int seller_may_sell(struct shard *sh, const char *seller_id, const struct offer *o)
{
	const struct partner *sp = partner_get(sh, seller_id, strlen(seller_id));
	struct permit_rules pr;
	offer_rules(o, &pr);
	struct permit_query q = {.originator_id = o->originator_id,
				 .seller_id = seller_id,
				 .seller_country = sp && sp->v.country[0] ? sp->v.country : NULL,
				 .destination = NULL};
	return permit_allowed(permit_check(&pr, &q)) && offer_sellable(o, (int64_t)wall_ms());
}

/* Offers with levels at any linked location, in offer id order (a merge of
 * the per-location by_location walks), each as a small document. */
struct avail_src {
	struct shard *sh;
	const struct channel *ch;
	char cur[ID_MAX_LEN];          /* the last offer yielded ("" = none yet) */
	const struct offer *o;         /* the offer of `r` (NULL: a level without one) */
	struct row r;
	char doc[3 * ID_MAX_LEN + 64];
	/* the keys handed out: api_list_source keeps the previous row's key
	 * (the page cursor) while asking for the next, so two alternate */
	char keys[2][ID_MAX_LEN];
	int flip;
	int storefront;                /* a publishable key: no originator_id */
};

static int64_t channel_atp(struct shard *sh, const struct channel *ch, const char *offer_id)
{
	int64_t sum = 0;
	for (int i = 0; i < ch->n_locations; i++)
		sum += inv_location_offer_atp(sh, ch->location_ids[i], offer_id);
	return sum;
}

static void avail_doc(struct avail_src *a, const char *offer_id, const struct offer *o)
{
	int n = a->storefront /* a shop page shows stock, not who supplies it */
			? snprintf(a->doc, sizeof(a->doc), "{\"offer_id\":\"%s\",\"atp\":%lld}", offer_id,
				   (long long)channel_atp(a->sh, a->ch, offer_id))
			: snprintf(a->doc, sizeof(a->doc), "{\"offer_id\":\"%s\",\"originator_id\":\"%s\",\"atp\":%lld}",
				   offer_id, o ? o->originator_id : "", (long long)channel_atp(a->sh, a->ch, offer_id));
	a->r.doc = a->doc;
	a->r.doc_len = n > 0 && (size_t)n < sizeof(a->doc) ? (uint32_t)n : 0;
}

static int avail_next(void *self, const struct row **r, const void **key, uint32_t *key_len)
{
	struct avail_src *a = self;
	char best[ID_MAX_LEN] = "", got[ID_MAX_LEN];
	for (int i = 0; i < a->ch->n_locations; i++)
		if (inv_location_next_offer(a->sh, a->ch->location_ids[i], a->cur, got) &&
		    (!best[0] || strcmp(got, best) < 0))
			memcpy(best, got, sizeof(best));
	if (!best[0])
		return 0;
	memcpy(a->cur, best, sizeof(a->cur));
	a->o = offer_get(a->sh, a->cur, strlen(a->cur));
	a->r.id = a->cur;
	a->r.id_len = (uint16_t)strlen(a->cur);
	avail_doc(a, a->cur, a->o);
	*r = &a->r;
	a->flip ^= 1;
	memcpy(a->keys[a->flip], a->cur, sizeof(a->cur));
	*key = a->keys[a->flip];
	*key_len = a->r.id_len;
	return 1;
}

static int avail_match(struct api_ctx *c, const struct row *r, void *arg)
{
	const struct avail_src *a = arg;
	(void)r;
	return a->o && a->r.doc_len && seller_may_sell(c->sh, a->ch->s.seller_id, a->o);
}

/*
 * GET /v1/sales-channels/{id}/availability[?offer=]: per offer the
 * channel's seller may sell (seller_may_sell), the summed ATP of the
 * sellable levels at the channel's linked locations; offers without a level
 * there are absent.  Owner (or the platform) only: others get the channel's
 * 404.  Cursor-paginated in offer id order; a page examines at most
 * CHANNEL_AVAIL_BUDGET offers (then has_more with a cursor).  With ?offer=
 * the one-item page for that offer (atp 0 when no linked level holds it);
 * an offer the seller may not sell is a 404 like an unknown one.
 */
static void channels_availability(struct api_ctx *c)
{
	const struct channel *ch = channel_from_path(c);
	if (!ch)
		return;
	struct api_page pg;
	if (api_page_parse(c, &pg))
		return;
	struct avail_src a;
	memset(&a, 0, sizeof(a));
	a.sh = c->sh;
	a.ch = ch;
	a.storefront = channel_storefront_key(c);
	char offer[ID_MAX_LEN];
	int n = api_query(c, "offer", offer, sizeof(offer));
	if (n == 0 || n == -2) {
		api_error(c, 400, "invalid_filter", "offer must be an offer id");
		return;
	}
	if (n > 0) {
		const struct offer *o = offer_get(c->sh, offer, (size_t)n);
		if (!o || !seller_may_sell(c->sh, ch->s.seller_id, o)) {
			api_error(c, 404, "not_found", "no offer with this id the channel's seller may sell");
			return;
		}
		avail_doc(&a, offer, o);
		jw_obj_begin(&c->w);
		jw_key(&c->w, "data");
		jw_arr_begin(&c->w);
		jw_raw(&c->w, a.doc, a.r.doc_len);
		jw_arr_end(&c->w);
		jw_knull(&c->w, "next_cursor");
		jw_kbool(&c->w, "has_more", 0);
		jw_obj_end(&c->w);
		c->rs->status = 200;
		return;
	}
	if (pg.has_cursor) {
		if (pg.cursor_len >= ID_MAX_LEN || memchr(pg.cursor, 0, pg.cursor_len)) {
			api_error(c, 400, "invalid_cursor", "the cursor is not from this list");
			return;
		}
		memcpy(a.cur, pg.cursor, pg.cursor_len);
		a.cur[pg.cursor_len] = 0;
	}
	struct api_source src = {.next = avail_next, .self = &a, .budget = CHANNEL_AVAIL_BUDGET};
	api_list_source(c, &src, &pg, avail_match, &a, NULL);
}

/* ---- routes ------------------------------------------------------------------------ */

const struct route availability_routes[] = {
	{HTTP_M_GET, "/v1/sales-channels/{id}/availability", channels_availability, SC_READ_LISTINGS,
	 ACT_READ_LISTINGS, "Stock available to a sales channel at its linked locations", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
