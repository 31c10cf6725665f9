/*
 * listing.c -- listings (spec 2.4): a seller's shelf price over an offer,
 * on one of its sales channels.
 *
 * WHY a listing exists: the originator's offer carries P_B2B (seller_price);
 * the seller's own layer is its shelf price, and M_Curator = shelf_price -
 * P_B2B (DESIGN.md 6) is the seller's margin.  The spec says a listing
 * "never restates wine or offer data", so the stored document holds only
 * the listing's own fields and every read joins the CURRENT offer and wine
 * rows (a later offer price change shows up in the next read's `offer` and
 * `margin`, nothing is copied).
 *
 * Decisions where the spec is open (also in api/openapi.json):
 *  - Document: listing_id and id (same value), seller_id, offer_id,
 *    channel_id, shelf_price + currency, curation {featured, notes,
 *    pairing}, status, created_at, updated_at.  Reads add `offer`
 *    {offer_id, seller_price, currency, condition, status, qty_available},
 *    `wine` {id, title, vintage, volume_in_liters, producer {id, name}} and
 *    `margin` (shelf_price - seller_price, exact; null when the offer's
 *    currency has since changed).
 *  - Who lists: a seller-role partner (the policy's can_write_listings; an
 *    originator-only partner is a 403 action_not_allowed before any
 *    handler) with the sets_shelf_price capability (403
 *    capability_missing).  seller_id defaults to the caller; a partner
 *    names itself only (422 seller_id `own`); operators must name a seller
 *    with the role and the capability (422 seller_id `seller`).
 *  - What it lists: offer_id must be an offer the permission evaluator
 *    (permit_check) allows for the seller (its own when it is also the
 *    originator): otherwise 422 offer_id with the evaluator's code as the
 *    rule (`seller_not_named`, `seller_country_blocked`, `not_network_shareable`,
 *    ...).  The offer must be sellable (active, inside its window): 422
 *    offer_id `not_sellable`.  Unknown, or an offer the caller may not see
 *    (the offer read-path filter): 422 offer_id `exists`, byte for byte
 *    the same answer, so the rule never tells a hidden offer from none.
 *    The same checks run again whenever a listing goes live (relist).
 *  - channel_id: an open sales channel of the seller (channel_of_seller);
 *    another seller's or an unknown one is 422 `seller_channel`, a closed
 *    one 422 `open`.
 *  - shelf_price: exact decimal at the offer currency's minor unit (422
 *    `precision`), > 0 and <= LISTING_PRICE_MAX_MINOR (`range`), never
 *    below the offer's seller_price (422 `below_offer_price`, checked on
 *    create, on every price change and on going live).  `currency` is
 *    optional and must equal the offer's: any other currency is a 422
 *    `fx_unavailable` until FX reference data exists (issue 6).  When
 *    shelf_price is absent on create and the channel carries a curated
 *    shop (the oldest non-closed one on it), shelf_price = seller_price x
 *    (1 + markup) rounded half-up to the minor unit, in integers (markup in
 *    hundredths of a percent); absent and no shop: 422 `required`.
 *    shelf_price cannot be removed (null: 422 `required`).
 *  - Identity: one listing per (seller, offer, channel) -- a duplicate is
 *    a 409 listing_exists naming the holder; seller_id, offer_id and
 *    channel_id are immutable (422 `immutable`).
 *  - status is a table (listing_moves): draft -> live, draft -> delisted,
 *    live -> delisted, delisted -> live (a relist: the identity is unique,
 *    so making delisted final would bar the seller from that offer on that
 *    channel for ever).  Illegal: 409 invalid_status_transition.  A create
 *    starts draft (default) or live.
 *  - Events (scope: the seller): listing.created; listing.price_changed
 *    when shelf_price changes; listing.updated for any other change (every
 *    state change appends an event, DESIGN.md 7).
 *
 * THE READ PATH (spec 5).  The seller and the platform see the seller's
 * listings (all statuses).  Any other partner sees a LIVE listing whose
 * offer passes the offer read-path filter for it (offer_visible_to:
 * sellable, shareable, permit_check for the caller).  A publishable key
 * sees only LIVE listings of its own channel whose offer its entity may
 * see; without a channel, none.  Hidden detail = the 404 of an unknown id.
 * Lists never walk the whole table for a partner or a publishable key:
 *    by_seller   seller\0id    (a partner's own list, ?seller_id=)
 *    by_channel  channel\0id   (?channel_id=, every publishable key)
 *    by_offer    offer\0id     (?offer_id=)
 * and the filter is the api_list predicate, so hidden rows never fill a
 * page nor count toward the quota.  A partner sees other sellers' listings
 * by naming ?channel_id= or ?offer_id= (unfiltered, it gets its own); only
 * the platform walks by_order.
 */
#include "engine/supply/listing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/supply/channel.h"
#include "engine/edge/fields.h"
#include "engine/base/iso.h"
#include "engine/edge/key.h"
#include "engine/base/log.h"
#include "engine/supply/offer.h"
#include "engine/catalogue/partner.h"
#include "engine/catalogue/producer.h"
#include "engine/storage/resources.h"
#include "engine/catalogue/wine.h"

#define LISTING_PRICE_MAX_MINOR OFFER_PRICE_MAX_MINOR /* shelf_price bound, minor units */
#define MARKUP_ONE 10000                              /* markup scale: 100.00 % */
#define LISTING_TS 32

const char *const listing_status_names[] = {"draft", "live", "delisted", NULL};

/* listing_moves[from][to]: the status table.  Same -> same is no move. */
static const uint8_t listing_moves[LISTING_N_STATUS][LISTING_N_STATUS] = {
	[LS_DRAFT] = {[LS_LIVE] = 1, [LS_DELISTED] = 1},
	[LS_LIVE] = {[LS_DELISTED] = 1},
	[LS_DELISTED] = {[LS_LIVE] = 1},
};
/* Statuses a create may start in. */
static const uint8_t listing_initial[LISTING_N_STATUS] = {[LS_DRAFT] = 1, [LS_LIVE] = 1};

static const char *const listing_fields[] = {"seller_id", "offer_id", "channel_id", "shelf_price", "currency",
					     "curation",  "status",   "id",	    "listing_id",  "created_at",
					     "updated_at", NULL};
static const char *const readonly_fields[] = {"id", "listing_id", "created_at", "updated_at", NULL};
static const char *const immutable_fields[] = {"seller_id", "offer_id", "channel_id", NULL};
static const char *const curation_fields[] = {"featured", "notes", "pairing", NULL};

/* Everything a listing document holds, as values. */
struct listing_vals {
	char id[ID_MAX_LEN], seller_id[ID_MAX_LEN], offer_id[ID_MAX_LEN], channel_id[ID_MAX_LEN];
	char currency[4];
	int64_t shelf_minor;                  /* -1: unset */
	const struct json_value *price;       /* the request's shelf_price (scaled once the offer is known) */
	int price_member;                     /* the request names shelf_price (even a bad one) */
	int status, featured;
	char notes[LISTING_MAX_NOTES + 1], pairing[LISTING_MAX_PAIRING + 1];
	char created_at[LISTING_TS], updated_at[LISTING_TS];
};

/* ---- table ------------------------------------------------------------- */

struct listing_ext {
	struct hidx by_natural;                /* offer\0channel -> row */
	struct oidx by_seller, by_channel, by_offer;
};

static struct listing_ext *ext(const struct table *t) { return t->ext; }

static int listing_init(struct table *t)
{
	struct listing_ext *e = calloc(1, sizeof(*e));
	if (!e)
		return -1;
	hidx_init(&e->by_natural);
	oidx_init(&e->by_seller);
	oidx_init(&e->by_channel);
	oidx_init(&e->by_offer);
	t->ext = e;
	return 0;
}

static void listing_fini(struct table *t)
{
	struct listing_ext *e = ext(t);
	hidx_free(&e->by_natural);
	oidx_free(&e->by_seller);
	oidx_free(&e->by_channel);
	oidx_free(&e->by_offer);
	free(e);
	t->ext = NULL;
}

/* "a NUL b" into out; its length (a, b < ID_MAX_LEN). */
static uint16_t pair_key(char *out, const char *a, size_t al, const char *b)
{
	size_t bl = strlen(b);
	memcpy(out, a, al);
	out[al] = 0;
	memcpy(out + al + 1, b, bl);
	return (uint16_t)(al + 1 + bl);
}

/* "prefix NUL id" into out (IDX_MAX_KEY bytes); its length. */
static uint32_t idx_key(uint8_t *out, const char *prefix, const struct row *r)
{
	size_t pl = strlen(prefix);
	memcpy(out, prefix, pl);
	out[pl] = 0;
	memcpy(out + pl + 1, r->id, r->id_len);
	return (uint32_t)(pl + 1 + r->id_len);
}

_Static_assert(2 * ID_MAX_LEN + 1 <= IDX_MAX_KEY, "a listing index key fits");

/* The three ordered indexes of a row, in a table (data over code). */
static struct oidx *row_index(struct listing_ext *e, int i) { return i == 0 ? &e->by_seller : i == 1 ? &e->by_channel : &e->by_offer; }
static const char *row_prefix(const struct listing *l, int i)
{
	return i == 0 ? l->seller_id : i == 1 ? l->channel_id : l->offer_id;
}
#define LISTING_N_OIDX 3

static int listing_index_add(struct table *t, struct row *r)
{
	struct listing *l = (struct listing *)r;
	struct listing_ext *e = ext(t);
	if (hidx_set(&e->by_natural, l->nkey, l->nkey_len, l))
		return -1;
	uint8_t k[IDX_MAX_KEY];
	for (int i = 0; i < LISTING_N_OIDX; i++)
		if (oidx_put(row_index(e, i), k, idx_key(k, row_prefix(l, i), r), l) < 0)
			return -1;
	return 0;
}

static void listing_index_del(struct table *t, struct row *r)
{
	struct listing *l = (struct listing *)r;
	struct listing_ext *e = ext(t);
	if (hidx_get(&e->by_natural, l->nkey, l->nkey_len) == l)
		hidx_del(&e->by_natural, l->nkey, l->nkey_len);
	uint8_t k[IDX_MAX_KEY];
	for (int i = 0; i < LISTING_N_OIDX; i++) {
		uint32_t kl = idx_key(k, row_prefix(l, i), r);
		if (oidx_get(row_index(e, i), k, kl) == l)
			oidx_del(row_index(e, i), k, kl);
	}
}

/* ---- reading values (requests: c set; stored documents: c NULL) -------- */

static void copy_text(struct api_ctx *c, const struct json_value *o, const char *name, const char *path, char *out,
		      size_t max)
{
	const char *t;
	int r = fld_text(c, o, name, path, &t, max);
	if (r == FLD_SET)
		snprintf(out, max + 1, "%s", t);
	else if (r == FLD_NULL)
		out[0] = 0;
}

static void read_curation(struct api_ctx *c, const struct json_value *o, struct listing_vals *v)
{
	const struct json_value *cu = json_get(o, "curation");
	if (!cu)
		return;
	if (cu->type == JSON_NULL) {
		v->featured = 0;
		v->notes[0] = v->pairing[0] = 0;
		return;
	}
	if (cu->type != JSON_OBJECT) {
		if (c)
			api_field_error(c, "curation", "type", "must be an object");
		return;
	}
	if (c)
		fld_reject_unknown(c, cu, curation_fields, "curation.");
	int b;
	int r = fld_bool(c, cu, "featured", "curation.featured", &b);
	if (r == FLD_SET)
		v->featured = b;
	else if (r == FLD_NULL)
		v->featured = 0;
	copy_text(c, cu, "notes", "curation.notes", v->notes, LISTING_MAX_NOTES);
	copy_text(c, cu, "pairing", "curation.pairing", v->pairing, LISTING_MAX_PAIRING);
}

/* An id member; null is "required". */
static void read_id(struct api_ctx *c, const struct json_value *o, const char *name, char *out)
{
	int r = fld_str(c, o, name, NULL, out, ID_MAX_LEN - 1);
	if (r == FLD_NULL) {
		out[0] = 0;
		if (c)
			api_field_error(c, name, "required", "cannot be null");
	}
}

/* Overlay the members of o onto v (merge patch). */
static void listing_read(struct api_ctx *c, const struct json_value *o, struct listing_vals *v)
{
	read_id(c, o, "seller_id", v->seller_id);
	read_id(c, o, "offer_id", v->offer_id);
	read_id(c, o, "channel_id", v->channel_id);
	int r = fld_currency(c, o, "currency", NULL, v->currency);
	if (r == FLD_NULL && c)
		api_field_error(c, "currency", "required", "cannot be null (omit it: the offer's currency)");
	const struct json_value *p = json_get(o, "shelf_price");
	v->price_member |= p != NULL;
	if (p && p->type == JSON_NULL) {
		if (c)
			api_field_error(c, "shelf_price", "required", "cannot be removed");
	} else if (p && p->type != JSON_NUMBER) {
		if (c)
			api_field_error(c, "shelf_price", "type", "must be a decimal number");
	} else if (p)
		v->price = p;
	int st;
	r = fld_enum(c, o, "status", NULL, listing_status_names, &st);
	if (r == FLD_SET)
		v->status = st;
	else if (r == FLD_NULL && c)
		api_field_error(c, "status", "required", "cannot be null");
	read_curation(c, o, v);
}

/* v->price at the currency's minor unit into v->shelf_minor.  0, or -1
 * (an error recorded when c is set). */
static int price_scale(struct api_ctx *c, struct listing_vals *v, const char *currency)
{
	int minor = iso_currency_minor(currency, 3);
	int64_t m;
	if (minor < 0)
		return -1;
	if (json_to_fixed(v->price, (unsigned)minor, &m)) {
		if (c)
			api_field_error(c, "shelf_price", "precision",
					"must be an exact decimal with at most %d fraction digits for %s", minor, currency);
		return -1;
	}
	if (m <= 0 || m > LISTING_PRICE_MAX_MINOR) {
		if (c)
			api_field_error(c, "shelf_price", "range", "must be greater than 0 and at most %lld minor units",
					(long long)LISTING_PRICE_MAX_MINOR);
		return -1;
	}
	v->shelf_minor = m;
	return 0;
}

static void vals_defaults(struct listing_vals *v)
{
	memset(v, 0, sizeof(*v));
	v->status = LS_DRAFT;
	v->shelf_minor = -1;
}

/* ---- decode ------------------------------------------------------------ */

static int listing_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct listing *l = (struct listing *)r;
	struct listing_vals *v = malloc(sizeof(*v));
	if (!v)
		return -1;
	vals_defaults(v);
	listing_read(NULL, doc, v);
	int rc = -1;
	if (!v->seller_id[0] || !v->offer_id[0] || !v->channel_id[0] || !v->currency[0] || !v->price ||
	    price_scale(NULL, v, v->currency))
		goto out;
	memcpy(l->seller_id, v->seller_id, sizeof(l->seller_id));
	memcpy(l->offer_id, v->offer_id, sizeof(l->offer_id));
	memcpy(l->channel_id, v->channel_id, sizeof(l->channel_id));
	memcpy(l->currency, v->currency, 4);
	l->status = (uint8_t)v->status;
	l->shelf_minor = v->shelf_minor;
	l->nkey_len = pair_key(l->nkey, l->offer_id, strlen(l->offer_id), l->channel_id);
	rc = 0;
out:
	free(v);
	return rc;
}

const struct table_ops listing_table_ops = {
	.rec_table = REC_T_LISTING,
	.name = "listing",
	.row_size = sizeof(struct listing),
	.decode = listing_decode,
	.decode_pure = 1, /* recovery may build its rows off the loop (table.h) */
	.index_add = listing_index_add,
	.index_del = listing_index_del,
	.init = listing_init,
	.fini = listing_fini,
};

const struct listing *listing_get(struct shard *sh, const char *id, size_t len)
{
	return (const struct listing *)table_get(&sh->tables[REC_T_LISTING], id, len);
}

static const struct listing *by_natural(struct shard *sh, const char *offer, size_t offer_len, const char *channel)
{
	char k[2 * ID_MAX_LEN];
	if (offer_len >= ID_MAX_LEN || strlen(channel) >= ID_MAX_LEN)
		return NULL;
	uint16_t kl = pair_key(k, offer, offer_len, channel);
	return hidx_get(&ext(&sh->tables[REC_T_LISTING])->by_natural, k, kl);
}

int listing_live_on(struct shard *sh, const char *offer_id, size_t offer_len, const char *channel_id)
{
	const struct listing *l = by_natural(sh, offer_id, offer_len, channel_id);
	return l && l->status == LS_LIVE;
}

const struct listing *listing_live_on_channel(struct shard *sh, const char *offer_id, const char *channel_id)
{
	const struct listing *l = by_natural(sh, offer_id, strlen(offer_id), channel_id);
	return l && l->status == LS_LIVE ? l : NULL;
}

const struct listing *listing_live_of_seller(struct shard *sh, const char *offer_id, const char *seller_id)
{
	uint8_t k[IDX_MAX_KEY];
	size_t ol = strlen(offer_id);
	if (ol + 1 > IDX_MAX_KEY)
		return NULL;
	memcpy(k, offer_id, ol);
	k[ol] = 0;
	uint32_t pl = (uint32_t)ol + 1, kl;
	struct oidx_iter it;
	for (int ok = oidx_seek_ge(&ext(&sh->tables[REC_T_LISTING])->by_offer, k, pl, &it); ok; ok = oidx_next(&it)) {
		const uint8_t *key = oidx_iter_key(&it, &kl);
		if (kl < pl || memcmp(key, k, pl))
			break;
		const struct listing *l = oidx_iter_val(&it);
		if (l->status == LS_LIVE && !strcmp(l->seller_id, seller_id))
			return l;
	}
	return NULL;
}

struct chan_arg {
	struct shard *sh;
	const char *channel_id;
};

static int offer_live_on(const struct offer *o, void *arg)
{
	const struct chan_arg *a = arg;
	return listing_live_on(a->sh, o->row.id, o->row.id_len, a->channel_id);
}

int listing_channel_has_wine(struct shard *sh, const char *channel_id, const char *wine_id, size_t wine_len)
{
	struct chan_arg a = {sh, channel_id};
	return channel_id[0] && offer_wine_any(sh, wine_id, wine_len, offer_live_on, &a);
}

/* ---- the read-path filter ------------------------------------------------ */

/* May the caller see the listing (spec 5; see the top). */
static int listing_visible(struct api_ctx *c, const struct listing *l)
{
	if (c->who.is_platform)
		return 1;
	int pub = c->who.kind == KEY_PUBLISHABLE;
	if (!pub && !strcmp(l->seller_id, c->who.entity_id))
		return 1;
	if (l->status != LS_LIVE)
		return 0;
	if (pub && (!c->who.channel_id[0] || strcmp(l->channel_id, c->who.channel_id)))
		return 0;
	const struct offer *o = offer_get(c->sh, l->offer_id, strlen(l->offer_id));
	return o && offer_visible_to(c, o);
}

int listing_channel_ids(struct api_ctx *c, const char *channel_id, struct jw *w)
{
	struct listing_ext *e = ext(&c->sh->tables[REC_T_LISTING]);
	uint8_t k[IDX_MAX_KEY];
	size_t pl = strlen(channel_id);
	memcpy(k, channel_id, pl);
	k[pl] = 0;
	uint32_t kl;
	unsigned n = 0;
	int more = 0;
	struct oidx_iter it;
	jw_arr_begin(w);
	for (int ok = oidx_seek_ge(&e->by_channel, k, (uint32_t)pl + 1, &it); ok; ok = oidx_next(&it)) {
		const uint8_t *key = oidx_iter_key(&it, &kl);
		if (kl < pl + 1 || memcmp(key, k, pl + 1))
			break;
		const struct listing *l = oidx_iter_val(&it);
		if (!listing_visible(c, l))
			continue;
		if (n == LISTING_CHANNEL_DOC_MAX) {
			more = 1;
			break;
		}
		jw_strn(w, l->row.id, l->row.id_len);
		n++;
	}
	jw_arr_end(w);
	return more;
}

/* ---- the joined document ---------------------------------------------------- */

static void join_offer(struct jw *w, const struct offer *o)
{
	jw_key(w, "offer");
	if (!o) {
		jw_null(w);
		return;
	}
	jw_obj_begin(w);
	jw_key(w, "offer_id");
	jw_strn(w, o->row.id, o->row.id_len);
	jw_kfixed(w, "seller_price", o->price_minor, (unsigned)iso_currency_minor(o->currency, 3));
	jw_kstr(w, "currency", o->currency);
	jw_kstr(w, "condition", offer_condition_names[o->condition]);
	jw_kstr(w, "status", offer_status_names[o->status]);
	jw_kint(w, "qty_available", o->qty);
	jw_obj_end(w);
}

static void join_wine(struct api_ctx *c, struct jw *w, const struct offer *o)
{
	const struct wine *wn = o ? wine_get(c->sh, o->wine_id, strlen(o->wine_id)) : NULL;
	jw_key(w, "wine");
	if (!wn) {
		jw_null(w);
		return;
	}
	jw_obj_begin(w);
	jw_key(w, "id");
	jw_strn(w, wn->row.id, wn->row.id_len);
	struct json_doc *d = json_parse(wn->row.doc, wn->row.doc_len, NULL, NULL);
	const struct json_value *t = d ? json_get(json_root(d), "title") : NULL;
	jw_key(w, "title");
	if (t)
		jw_value(w, t);
	else
		jw_null(w);
	json_doc_free(d);
	if (wn->vintage == WINE_VINTAGE_UNSET || wn->vintage == WID_NV)
		jw_knull(w, "vintage");
	else
		jw_kint(w, "vintage", wn->vintage);
	jw_key(w, "volume_in_liters");
	if (wn->volume_ul)
		wine_jw_decimal(w, wn->volume_ul, 6);
	else
		jw_null(w);
	const struct producer *p = producer_get(c->sh, wn->producer_id, strlen(wn->producer_id));
	jw_key(w, "producer");
	if (p) {
		jw_obj_begin(w);
		jw_kstr(w, "id", wn->producer_id);
		jw_kstr(w, "name", p->name);
		jw_obj_end(w);
	} else
		jw_null(w);
	jw_obj_end(w);
}

/* Write the listing as a read returns it: its stored members, then the
 * joins from the current offer and wine rows and the margin. */
static void listing_emit(struct api_ctx *c, const struct row *r)
{
	const struct listing *l = (const struct listing *)r;
	const struct offer *o = offer_get(c->sh, l->offer_id, strlen(l->offer_id));
	struct buf extra;
	buf_init(&extra, REC_MAX_VAL);
	struct jw w;
	jw_init(&w, &extra);
	jw_obj_begin(&w);
	join_offer(&w, o);
	join_wine(c, &w, o);
	jw_key(&w, "margin");
	if (o && !memcmp(o->currency, l->currency, 3))
		jw_fixed(&w, l->shelf_minor - o->price_minor, (unsigned)iso_currency_minor(l->currency, 3));
	else
		jw_null(&w);
	jw_obj_end(&w);
	/* splice: stored "{...}" without its '}' + "," + extra without its '{' */
	struct buf all;
	buf_init(&all, 2 * REC_MAX_VAL);
	buf_append(&all, r->doc, r->doc_len - 1);
	buf_append(&all, ",", 1);
	buf_append(&all, extra.data + 1, extra.len - 1);
	if (w.err)
		c->w.err = 1;
	else
		jw_raw(&c->w, all.data, all.len);
	buf_free(&all);
	buf_free(&extra);
}

/* ---- writing ------------------------------------------------------------------ */

static void listing_write(struct jw *w, const struct listing_vals *v)
{
	jw_obj_begin(w);
	jw_kstr(w, "id", v->id);
	jw_kstr(w, "listing_id", v->id);
	jw_kstr(w, "seller_id", v->seller_id);
	jw_kstr(w, "offer_id", v->offer_id);
	jw_kstr(w, "channel_id", v->channel_id);
	jw_kfixed(w, "shelf_price", v->shelf_minor, (unsigned)iso_currency_minor(v->currency, 3));
	jw_kstr(w, "currency", v->currency);
	jw_key(w, "curation");
	jw_obj_begin(w);
	jw_kbool(w, "featured", v->featured);
	if (v->notes[0])
		jw_kstr(w, "notes", v->notes);
	else
		jw_knull(w, "notes");
	if (v->pairing[0])
		jw_kstr(w, "pairing", v->pairing);
	else
		jw_knull(w, "pairing");
	jw_obj_end(w);
	jw_kstr(w, "status", listing_status_names[v->status]);
	jw_kstr(w, "created_at", v->created_at);
	jw_kstr(w, "updated_at", v->updated_at);
	jw_obj_end(w);
}

/* Commit the row and its event; respond with the joined document. */
static void listing_commit(struct api_ctx *c, const struct listing_vals *v, const char *event, int status)
{
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	struct jw w;
	jw_init(&w, &doc);
	listing_write(&w, v);
	txn_begin(c->sh);
	if (w.err || txn_put(c->sh, REC_T_LISTING, v->id, strlen(v->id), doc.data, doc.len) ||
	    txn_event(c->sh, event, v->seller_id, doc.data, doc.len) || !txn_commit(c->sh)) {
		txn_abort(c->sh);
		buf_free(&doc);
		api_error(c, 500, "commit_failed", "the listing could not be stored");
		return;
	}
	buf_free(&doc);
	const struct listing *l = listing_get(c->sh, v->id, strlen(v->id));
	if (!l) {
		api_error(c, 500, "commit_failed", "the listing could not be read back");
		return;
	}
	listing_emit(c, &l->row);
	c->rs->status = status;
}

static int has_cap(const struct partner *p, enum partner_cap cap)
{
	return p && (partner_caps(&p->v) >> cap) & 1;
}

/* The offer rules for the seller: may it list o now?  0, or -1 with a 422
 * offer_id error recorded (the evaluator's code as the rule). */
static int offer_listable(struct api_ctx *c, const struct offer *o, const char *seller_id)
{
	const struct partner *sp = partner_get(c->sh, seller_id, strlen(seller_id));
	struct permit_rules pr;
	offer_rules(o, &pr);
	struct permit_query q = {.originator_id = o->originator_id,
				 .seller_id = seller_id,
				 .seller_country = sp && sp->v.country[0] ? sp->v.country : NULL,
				 .destination = NULL};
	enum permit_verdict vd = permit_check(&pr, &q);
	if (!permit_allowed(vd)) {
		api_field_error(c, "offer_id", permit_code(vd), "%s", permit_reason(vd));
		return -1;
	}
	if (!offer_sellable(o, (int64_t)wall_ms())) {
		api_field_error(c, "offer_id", "not_sellable", "the offer is not active or outside its validity window");
		return -1;
	}
	return 0;
}

/* shelf = price x (1 + markup / 10000), rounded half-up to the minor unit,
 * in integers (__int128: no overflow for any bounded price and markup). */
static int64_t marked_up(int64_t price_minor, int64_t markup)
{
	__int128 x = (__int128)price_minor * (MARKUP_ONE + markup);
	return (int64_t)((x + MARKUP_ONE / 2) / MARKUP_ONE);
}

/* The price rules on v against the offer (currency, scale, floor, markup). */
static void price_rules(struct api_ctx *c, struct listing_vals *v, const struct offer *o, int creating, int going_live)
{
	if (v->currency[0] && strcmp(v->currency, o->currency)) {
		api_field_error(c, "currency", "fx_unavailable",
				"must be the offer's currency (%s): other currencies need FX reference data (issue 6)",
				o->currency);
		return;
	}
	memcpy(v->currency, o->currency, 4);
	if (v->price) {
		if (price_scale(c, v, v->currency))
			return;
	} else if (creating && !v->price_member) {
		const struct shop *s = shop_on_channel(c->sh, v->channel_id);
		if (!s) {
			api_field_error(c, "shelf_price", "required",
					"is required when the channel has no curated shop with a markup");
			return;
		}
		v->shelf_minor = marked_up(o->price_minor, s->markup);
		if (v->shelf_minor > LISTING_PRICE_MAX_MINOR) {
			api_field_error(c, "shelf_price", "range", "the shop's markup puts it above %lld minor units",
					(long long)LISTING_PRICE_MAX_MINOR);
			return;
		}
	}
	if ((v->price || creating || going_live) && v->shelf_minor >= 0 && v->shelf_minor < o->price_minor)
		api_field_error(c, "shelf_price", "below_offer_price", "must not be below the offer's seller_price");
}

static void reject_members(struct api_ctx *c, const struct json_value *body, const char *const *names,
			   const char *rule, const char *msg)
{
	for (int i = 0; names[i]; i++)
		if (json_get(body, names[i]))
			api_field_error(c, names[i], rule, "%s", msg);
}

/* A 409 naming the listing holding the identity (other than v->id): 1. */
static int listing_taken(struct api_ctx *c, const struct listing_vals *v)
{
	const struct listing *d = by_natural(c->sh, v->offer_id, strlen(v->offer_id), v->channel_id);
	if (!d || !strcmp(d->row.id, v->id))
		return 0;
	char msg[200];
	snprintf(msg, sizeof(msg), "listing %.*s already lists this offer on this channel", (int)d->row.id_len,
		 d->row.id);
	api_error(c, 409, "listing_exists", msg);
	return 1;
}

static void listings_create(struct api_ctx *c)
{
	if (!c->who.is_platform) {
		const struct partner *me = partner_get(c->sh, c->who.entity_id, strlen(c->who.entity_id));
		if (!me || !(me->v.roles & ROLE_SELLER)) {
			api_error(c, 403, "seller_role_missing", "listing needs the seller role");
			return;
		}
		if (!has_cap(me, CAP_SETS_SHELF_PRICE)) {
			api_error(c, 403, "capability_missing", "listing needs the sets_shelf_price capability");
			return;
		}
	}
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	struct listing_vals *v = malloc(sizeof(*v));
	if (!v) {
		api_error(c, 500, "out_of_memory", "no memory for the request");
		return;
	}
	vals_defaults(v);
	fld_reject_unknown(c, body, listing_fields, NULL);
	reject_members(c, body, readonly_fields, "read_only", "is assigned by the service");
	listing_read(c, body, v);
	if (!json_get(body, "seller_id")) {
		if (c->who.is_platform)
			api_field_error(c, "seller_id", "required", "operators name the seller");
		else
			snprintf(v->seller_id, sizeof(v->seller_id), "%s", c->who.entity_id);
	} else if (v->seller_id[0] && !c->who.is_platform && strcmp(v->seller_id, c->who.entity_id)) {
		api_field_error(c, "seller_id", "own", "a partner lists for itself only");
	} else if (v->seller_id[0] && c->who.is_platform) {
		const struct partner *sp = partner_get(c->sh, v->seller_id, strlen(v->seller_id));
		if (!sp || !(sp->v.roles & ROLE_SELLER) || !has_cap(sp, CAP_SETS_SHELF_PRICE))
			api_field_error(c, "seller_id", "seller",
					"must be a partner with the seller role and sets_shelf_price");
	}
	static const char *const required[] = {"offer_id", "channel_id", NULL};
	for (int i = 0; required[i]; i++)
		if (!json_get(body, required[i]))
			api_field_error(c, required[i], "required", "is required");
	if (!listing_initial[v->status])
		api_field_error(c, "status", "initial", "a new listing starts as draft or live");
	const struct offer *o = v->offer_id[0] ? offer_get(c->sh, v->offer_id, strlen(v->offer_id)) : NULL;
	if (o && !offer_visible_to(c, o))
		o = NULL; /* an offer the caller may not see answers as an unknown id */
	if (v->offer_id[0] && !o)
		api_field_error(c, "offer_id", "exists", "no offer with this id");
	else if (o && v->seller_id[0])
		offer_listable(c, o, v->seller_id);
	if (v->channel_id[0] && v->seller_id[0]) {
		const struct channel *ch = channel_get(c->sh, v->channel_id, strlen(v->channel_id));
		if (!ch || strcmp(ch->s.seller_id, v->seller_id))
			api_field_error(c, "channel_id", "seller_channel", "must be a sales channel of the seller");
		else if (!channel_of_seller(c->sh, v->channel_id, v->seller_id))
			api_field_error(c, "channel_id", "open", "the sales channel is closed");
	}
	if (o)
		price_rules(c, v, o, 1, v->status == LS_LIVE);
	if (c->n_errs) {
		api_validation_failed(c);
		free(v);
		return;
	}
	if (!listing_taken(c, v)) {
		id_new(&c->sh->ids, "lst", v->id);
		fmt_rfc3339_ms(v->created_at, wall_ms());
		memcpy(v->updated_at, v->created_at, sizeof(v->created_at));
		listing_commit(c, v, "listing.created", 201);
	}
	free(v);
}

/* The listing of the path if the caller may see it (write: owns it), else
 * the same 404 as an unknown id. */
static const struct listing *listing_from_path(struct api_ctx *c, int write)
{
	const struct listing *l = c->n_params ? listing_get(c->sh, c->params[0].p, c->params[0].len) : NULL;
	if (l && (write ? api_owns(c, l->seller_id, strlen(l->seller_id)) : listing_visible(c, l)))
		return l;
	api_error(c, 404, "not_found", "no listing with this id");
	return NULL;
}

static void listings_get(struct api_ctx *c)
{
	const struct listing *l = listing_from_path(c, 0);
	if (!l || api_read_row(c))
		return;
	listing_emit(c, &l->row);
	c->rs->status = 200;
}

static void listings_patch(struct api_ctx *c)
{
	const struct listing *cur = listing_from_path(c, 1);
	if (!cur)
		return;
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	struct listing_vals *v = malloc(sizeof(*v));
	struct json_doc *stored = json_parse(cur->row.doc, cur->row.doc_len, NULL, NULL);
	if (!v || !stored) {
		free(v);
		json_doc_free(stored);
		api_error(c, 500, "corrupt_record", "the stored listing does not parse");
		return;
	}
	vals_defaults(v);
	listing_read(NULL, json_root(stored), v);
	snprintf(v->id, sizeof(v->id), "%.*s", (int)cur->row.id_len, cur->row.id);
	const struct json_value *ca = json_get(json_root(stored), "created_at");
	if (ca && ca->type == JSON_STRING && ca->len < sizeof(v->created_at))
		memcpy(v->created_at, ca->u.str, ca->len + 1);
	json_doc_free(stored); /* v holds copies only */
	v->price = NULL;
	v->shelf_minor = cur->shelf_minor;
	int from = v->status;
	fld_reject_unknown(c, body, listing_fields, NULL);
	reject_members(c, body, readonly_fields, "read_only", "cannot be changed");
	reject_members(c, body, immutable_fields, "immutable",
		       "is the listing's identity; delist it and create another");
	/* read the body into a scratch copy so the immutable members keep their values */
	char keep_s[ID_MAX_LEN], keep_o[ID_MAX_LEN], keep_c[ID_MAX_LEN];
	memcpy(keep_s, v->seller_id, ID_MAX_LEN);
	memcpy(keep_o, v->offer_id, ID_MAX_LEN);
	memcpy(keep_c, v->channel_id, ID_MAX_LEN);
	char cur_ccy[4];
	memcpy(cur_ccy, v->currency, 4);
	v->currency[0] = 0;
	listing_read(c, body, v);
	memcpy(v->seller_id, keep_s, ID_MAX_LEN);
	memcpy(v->offer_id, keep_o, ID_MAX_LEN);
	memcpy(v->channel_id, keep_c, ID_MAX_LEN);
	int to = v->status;
	int going_live = to == LS_LIVE && from != LS_LIVE;
	const struct offer *o = offer_get(c->sh, v->offer_id, strlen(v->offer_id));
	if (going_live) {
		if (!o)
			api_field_error(c, "offer_id", "exists", "the offer no longer exists");
		else
			offer_listable(c, o, v->seller_id);
	}
	if (o)
		price_rules(c, v, o, 0, going_live);
	else if (!v->currency[0])
		memcpy(v->currency, cur_ccy, 4);
	else if (strcmp(v->currency, cur_ccy))
		api_field_error(c, "currency", "fx_unavailable", "must be the listing's currency");
	if (c->n_errs) {
		api_validation_failed(c);
		free(v);
		return;
	}
	if (from != to && !listing_moves[from][to]) {
		char d[120];
		snprintf(d, sizeof(d), "a listing cannot move from %s to %s", listing_status_names[from],
			 listing_status_names[to]);
		api_error(c, 409, "invalid_status_transition", d);
		free(v);
		return;
	}
	int price_changed = v->shelf_minor != cur->shelf_minor || strcmp(v->currency, cur->currency);
	fmt_rfc3339_ms(v->updated_at, wall_ms());
	listing_commit(c, v, price_changed ? "listing.price_changed" : "listing.updated", 200);
	free(v);
}

/* The list's filters and the caller, for the predicate. */
struct listing_filter {
	char seller_id[ID_MAX_LEN], offer_id[ID_MAX_LEN], channel_id[ID_MAX_LEN];
	int status; /* -1 any */
};

static int listing_match(struct api_ctx *c, const struct row *r, void *arg)
{
	const struct listing_filter *f = arg;
	const struct listing *l = (const struct listing *)r;
	if ((f->status >= 0 && l->status != f->status) || (f->seller_id[0] && strcmp(f->seller_id, l->seller_id)) ||
	    (f->offer_id[0] && strcmp(f->offer_id, l->offer_id)) ||
	    (f->channel_id[0] && strcmp(f->channel_id, l->channel_id)))
		return 0;
	return listing_visible(c, l);
}

/* The filters a list read takes (data over code): query name -> member. */
static const struct {
	const char *name;
	size_t off;
} list_ids[] = {{"seller_id", offsetof(struct listing_filter, seller_id)},
		{"offer_id", offsetof(struct listing_filter, offer_id)},
		{"channel_id", offsetof(struct listing_filter, channel_id)}};

static void listings_list(struct api_ctx *c)
{
	struct api_page pg;
	if (api_page_parse(c, &pg))
		return;
	struct listing_filter f;
	memset(&f, 0, sizeof(f));
	f.status = -1;
	for (size_t i = 0; i < sizeof(list_ids) / sizeof(list_ids[0]); i++) {
		int n = api_query(c, list_ids[i].name, (char *)&f + list_ids[i].off, ID_MAX_LEN);
		if (n == 0 || n == -2) {
			char d[80];
			snprintf(d, sizeof(d), "%s must be an id", list_ids[i].name);
			api_error(c, 400, "invalid_filter", d);
			return;
		}
	}
	char st[16];
	int n = api_query(c, "status", st, sizeof(st));
	if (n != -1) {
		for (int i = 0; n > 0 && listing_status_names[i]; i++)
			if (!strcmp(listing_status_names[i], st))
				f.status = i;
		if (f.status < 0) {
			api_error(c, 400, "invalid_filter", "status must be draft, live or delisted");
			return;
		}
	}
	/* A publishable key is its channel: another ?channel_id= sees nothing. */
	if (c->who.kind == KEY_PUBLISHABLE && !c->who.is_platform) {
		if (!c->who.channel_id[0] || (f.channel_id[0] && strcmp(f.channel_id, c->who.channel_id)))
			f.status = LISTING_N_STATUS; /* matches nothing; the walk below is the empty channel */
		snprintf(f.channel_id, sizeof(f.channel_id), "%.*s", ID_MAX_LEN - 1, c->who.channel_id);
	}
	/* Pick the narrowest index a filter names; partners without one walk
	 * their own listings; only the platform walks every row. */
	struct table *t = &c->sh->tables[REC_T_LISTING];
	struct listing_ext *e = ext(t);
	const struct oidx *idx = &t->by_order;
	const char *pfx = NULL;
	if (f.channel_id[0]) {
		idx = &e->by_channel;
		pfx = f.channel_id;
	} else if (f.offer_id[0]) {
		idx = &e->by_offer;
		pfx = f.offer_id;
	} else if (f.seller_id[0]) {
		idx = &e->by_seller;
		pfx = f.seller_id;
	} else if (!c->who.is_platform) {
		idx = &e->by_seller;
		pfx = c->who.entity_id;
	}
	uint8_t prefix[IDX_MAX_KEY];
	uint32_t pl = 0;
	if (pfx) {
		size_t l = strlen(pfx);
		memcpy(prefix, pfx, l);
		prefix[l] = 0;
		pl = (uint32_t)l + 1;
	}
	if (f.status == LISTING_N_STATUS) { /* nothing to walk: an empty page, nothing charged */
		jw_obj_begin(&c->w);
		jw_key(&c->w, "data");
		jw_arr_begin(&c->w);
		jw_arr_end(&c->w);
		jw_knull(&c->w, "next_cursor");
		jw_kbool(&c->w, "has_more", 0);
		jw_obj_end(&c->w);
		c->rs->status = 200;
		return;
	}
	api_list(c, idx, prefix, pl, &pg, listing_match, &f, listing_emit);
}

const struct route listing_routes[] = {
	{HTTP_M_GET, "/v1/listings", listings_list, SC_READ_LISTINGS, ACT_READ_LISTINGS,
	 "List the listings the caller may see", 0},
	{HTTP_M_POST, "/v1/listings", listings_create, SC_WRITE_LISTINGS, ACT_WRITE_LISTINGS, "Create a listing", 0},
	{HTTP_M_GET, "/v1/listings/{id}", listings_get, SC_READ_LISTINGS, ACT_READ_LISTINGS, "Retrieve a listing", 0},
	{HTTP_M_PATCH, "/v1/listings/{id}", listings_patch, SC_WRITE_LISTINGS, ACT_WRITE_LISTINGS,
	 "Update a listing (merge patch)", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
