/*
 * channel.c -- a seller's shelf: sales channels and curated shops (spec
 * 2.1: "Sales channel: id, seller_id, listings[]"; "Curated shop: id,
 * seller_id, markup, layout, channel_id").  The spec names only the fields
 * and GET/POST on the collections; the decisions here are written into
 * api/openapi.json as well:
 *
 *  - Both belong to one seller (`seller_id`): a partner with the seller
 *    role.  It defaults to the caller; a partner names itself only (422
 *    `own`), operators name any seller (422 `exists` / `seller_role`).
 *    Routes use the listings scope and action (write:listings,
 *    can_write_listings): channels and shops are the seller's shelf, so an
 *    originator-only partner is a 403 action_not_allowed before any
 *    handler runs.  Curated shops also need the `curates_offers`
 *    capability: a partner without it gets 403 action_not_allowed, an
 *    operator naming such a seller a 422 `curates_offers`.
 *  - Another seller's channel or shop is a 404 on read and on write, the
 *    same as an unknown id.  Publishable (storefront) keys see only the
 *    channel they are scoped to and the shops on it.
 *  - `name` (1..SHELF_MAX_NAME bytes) is unique per seller, ignoring ASCII
 *    case: a duplicate is a 409 `channel_name_taken` / `shop_name_taken`
 *    naming the holder.
 *  - Channel `kind` is the spec's order `channel` enum (marketplace,
 *    webshop_connect, pos_qr), so an order's channel is the kind of the
 *    sales channel it came through.  `country` (ISO 3166-1) and `currency`
 *    (ISO 4217) are optional.
 *  - `listings[]` is read-only: the stored document keeps it empty and
 *    every read fills it from the listings-by-channel index (a channel
 *    record never grows with its listings): the ids of the channel's
 *    listings the caller may see, in id order, at most
 *    LISTING_CHANNEL_DOC_MAX; `listings_truncated` says more exist (the
 *    whole set: GET /v1/listings?channel_id=).
 *  - Shop `markup` is an exact decimal percent over P_B2B (DESIGN.md 6:
 *    it sets the shelf price when a listing has none), 0..1000 with at most
 *    2 decimals, stored as an integer of hundredths of a percent (basis
 *    points): 25.5 -> 2550; 12.345 is a 422 `precision`.  `layout` is one
 *    of grid, list, editorial (default grid).  `channel_id` is required and
 *    must be an open channel of the same seller (422 `seller_channel` /
 *    `open`; another seller's channel gets the same answer as an unknown
 *    one).
 *  - `status`: active <-> paused, either -> closed; closed is final and
 *    read-only (PATCH: 409 `channel_closed` / `shop_closed`), another
 *    move is a 409 invalid_status_transition.  A new row starts active or
 *    paused.
 *  - Events sales_channel.created/updated and curated_shop.created/updated
 *    carry the document and belong to the seller.
 *  - `location_ids` is what the channel may sell from (spec 2.5): quotes
 *    and orders through the channel take stock only at these locations
 *    (quote.c), and channel_default_of() picks the channel a request of a
 *    seller with exactly one open channel need not name.
 *
 * The routes are channel_routes.c; what both files share is shelf.h.
 * Both resources share one code path, driven by a `shelf_kind` table:
 * overlay the request on the current values (stored document, or
 * defaults), check every rule collecting every error, then write the
 * canonical document with its event in one transaction.  Both rows start
 * with struct shelf_row, so one pair of indexes serves both: a hash of
 * "seller NUL folded name" (uniqueness) and an ordered "seller NUL id"
 * (lists of one seller without scanning the table).
 */
#include "engine/supply/channel.h"
#include "engine/supply/shelf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/edge/fields.h"
#include "engine/edge/key.h"
#include "engine/base/log.h"
#include "engine/supply/offer.h"
#include "engine/supply/permit.h"
#include "engine/catalogue/partner.h"
#include "engine/storage/resources.h"
#include "engine/catalogue/wine.h"

const char *const shelf_status_names[] = {"active", "paused", "closed", NULL};
const char *const channel_kind_names[] = {"marketplace", "webshop_connect", "pos_qr", NULL};
const char *const shop_layout_names[] = {"grid", "list", "editorial", NULL};


_Static_assert(ID_MAX_LEN + SHELF_MAX_NAME <= IDX_MAX_KEY, "a name key fits an index key");

/* Which status moves a PATCH may make (1 = allowed; same status is a no-op). */
const uint8_t shelf_moves[SHELF_N_STATUS][SHELF_N_STATUS] = {
	/*                 active paused closed */
	[SHELF_ACTIVE] = {1, 1, 1},
	[SHELF_PAUSED] = {1, 1, 1},
	[SHELF_CLOSED] = {0, 0, 1},
};




/* ---- shared reading --------------------------------------------------------- */

void shelf_common_read(struct api_ctx *c, const struct json_value *o, struct shelf_vals *v)
{
	if (fld_str(c, o, "name", NULL, v->name, SHELF_MAX_NAME) == FLD_NULL)
		v->name[0] = 0;
	fld_enum(c, o, "status", NULL, shelf_status_names, &v->status);
}

/* The values of a stored document; 0, or -1 when it lacks a required member. */
int shelf_load(const struct shelf_kind *k, const struct json_value *doc, struct shelf_vals *v)
{
	memset(v, 0, sizeof(*v));
	k->defaults(v);
	if (fld_doc_str(doc, "id", v->id, sizeof(v->id)) || fld_doc_str(doc, "seller_id", v->seller_id, sizeof(v->seller_id)) ||
	    fld_doc_str(doc, "created_at", v->created_at, sizeof(v->created_at)) ||
	    fld_doc_str(doc, "updated_at", v->updated_at, sizeof(v->updated_at)))
		return -1;
	shelf_common_read(NULL, doc, v);
	k->read(NULL, doc, v);
	return v->id[0] && v->seller_id[0] && v->name[0] ? 0 : -1;
}

/* ---- sales channels ------------------------------------------------------------ */

static const char *const channel_read_only[] = {"id", "listings", "created_at", "updated_at", NULL};
static const char *const channel_known[] = {"seller_id",  "name",     "kind",	    "country",	  "currency",
					    "location_ids", "status", "id", "listings", "created_at", "updated_at", NULL};
static const char *const channel_required[] = {"name", "kind", NULL};

static void channel_defaults(struct shelf_vals *v) { v->status = SHELF_ACTIVE; }

/* location_ids: null or an array of at most CHANNEL_LOCATIONS_MAX distinct
 * id strings (absent: unchanged; null: none).  Existence is channel_check's
 * (c NULL: a stored document, read without errors). */
static void read_location_ids(struct api_ctx *c, const struct json_value *o, struct shelf_vals *v)
{
	const struct json_value *a = json_get(o, "location_ids");
	if (!a)
		return;
	v->n_locations = 0;
	if (a->type == JSON_NULL)
		return;
	if (a->type != JSON_ARRAY) {
		if (c)
			api_field_error(c, "location_ids", "type", "must be an array of location ids");
		return;
	}
	if (a->len > CHANNEL_LOCATIONS_MAX) {
		if (c)
			api_field_error(c, "location_ids", "max_items", "at most %d locations", CHANNEL_LOCATIONS_MAX);
		return;
	}
	for (uint32_t i = 0; i < a->len; i++) {
		const struct json_value *x = &a->u.items[i];
		if (x->type != JSON_STRING || x->len == 0 || x->len >= ID_MAX_LEN) {
			if (c)
				api_field_error(c, "location_ids", "type", "items must be location ids");
			return;
		}
		for (int j = 0; j < v->n_locations; j++)
			if (!strcmp(v->location_ids[j], x->u.str)) {
				if (c)
					api_field_error(c, "location_ids", "unique", "lists %s twice", x->u.str);
				return;
			}
		memcpy(v->location_ids[v->n_locations++], x->u.str, x->len + 1);
	}
}

/* Every linked location must exist.  Any location, whoever owns it: a
 * seller sells other originators' stock without a warehouse of its own
 * (what it may sell is the offer permissions' business, see availability). */
static void channel_check(struct api_ctx *c, const struct json_value *body, const struct shelf_vals *v)
{
	if (!json_get(body, "location_ids"))
		return;
	for (int i = 0; i < v->n_locations; i++)
		if (!channel_location_exists(c->sh, v->location_ids[i])) {
			api_field_error(c, "location_ids", "exists", "no location %s", v->location_ids[i]);
			return;
		}
}

static void channel_read(struct api_ctx *c, const struct json_value *o, struct shelf_vals *v)
{
	fld_enum(c, o, "kind", NULL, channel_kind_names, &v->kind);
	if (fld_country(c, o, "country", NULL, v->country) == FLD_NULL)
		v->country[0] = 0;
	if (fld_currency(c, o, "currency", NULL, v->currency) == FLD_NULL)
		v->currency[0] = 0;
	read_location_ids(c, o, v);
}

static void kstr_or_null(struct jw *w, const char *k, const char *s)
{
	if (s[0])
		jw_var_str(w, k, s);
	else
		jw_var_null(w, k);
}

static void channel_write(struct jw *w, const struct shelf_vals *v)
{
	jw_kstr(w, "kind", channel_kind_names[v->kind]);
	kstr_or_null(w, "country", v->country);
	kstr_or_null(w, "currency", v->currency);
	jw_key(w, "location_ids");
	jw_arr_begin(w);
	for (int i = 0; i < v->n_locations; i++)
		jw_str(w, v->location_ids[i]);
	jw_arr_end(w);
	jw_key(w, "listings"); /* maintained by the listings issue (see the top) */
	jw_arr_begin(w);
	jw_arr_end(w);
}

static void channel_fill(struct shelf_row *r, const struct shelf_vals *v)
{
	struct channel *ch = (struct channel *)r;
	ch->kind = (uint8_t)v->kind;
	memcpy(ch->country, v->country, sizeof(ch->country));
	memcpy(ch->currency, v->currency, sizeof(ch->currency));
	ch->n_locations = (uint8_t)v->n_locations;
	memcpy(ch->location_ids, v->location_ids, sizeof(ch->location_ids));
}

static int channel_on(const struct shelf_row *r, const char *ch)
{
	return r->row.id_len == strlen(ch) && !memcmp(r->row.id, ch, r->row.id_len);
}

const struct shelf_kind channel_kind = {
	.table = REC_T_CHANNEL,
	.id_prefix = "chn",
	.noun = "sales channel",
	.ev_created = "sales_channel.created",
	.ev_updated = "sales_channel.updated",
	.name_taken = "channel_name_taken",
	.closed_code = "channel_closed",
	.known = channel_known,
	.read_only = channel_read_only,
	.required = channel_required,
	.need_cap = -1,
	.defaults = channel_defaults,
	.read = channel_read,
	.check = channel_check,
	.write = channel_write,
	.fill = channel_fill,
	.on_channel = channel_on,
};

/* ---- curated shops ------------------------------------------------------------- */

static const char *const shop_read_only[] = {"id", "created_at", "updated_at", NULL};
static const char *const shop_known[] = {"seller_id", "name", "markup",	   "layout",	 "channel_id",
					 "status",    "id",   "created_at", "updated_at", NULL};
static const char *const shop_required[] = {"name", "markup", "channel_id", NULL};

static void shop_defaults(struct shelf_vals *v)
{
	v->status = SHELF_ACTIVE;
	v->layout = LAYOUT_GRID;
}

/* markup: a JSON number, exact at SHOP_MARKUP_SCALE, 0..SHOP_MARKUP_MAX. */
static void read_markup(struct api_ctx *c, const struct json_value *o, struct shelf_vals *v)
{
	const struct json_value *m = json_get(o, "markup");
	int64_t x = 0, wide = 0;
	if (!m || m->type == JSON_NULL)
		return;
	if (m->type != JSON_NUMBER) {
		if (c)
			api_field_error(c, "markup", "type", "must be a number (percent over the B2B price)");
	} else if (json_to_fixed(m, SHOP_MARKUP_SCALE, &x)) {
		/* exact at a finer scale: too many decimals; else out of range */
		if (c && json_to_fixed(m, 15, &wide) == 0)
			api_field_error(c, "markup", "precision", "at most %u decimals", SHOP_MARKUP_SCALE);
		else if (c)
			api_field_error(c, "markup", "range", "must be 0 to %d percent", SHOP_MARKUP_MAX / 100);
	} else if (x < 0 || x > SHOP_MARKUP_MAX) {
		if (c)
			api_field_error(c, "markup", "range", "must be 0 to %d percent", SHOP_MARKUP_MAX / 100);
	} else
		v->markup = x;
}

static void shop_read(struct api_ctx *c, const struct json_value *o, struct shelf_vals *v)
{
	read_markup(c, o, v);
	if (fld_enum(c, o, "layout", NULL, shop_layout_names, &v->layout) == FLD_NULL)
		v->layout = LAYOUT_GRID;
	if (fld_str(c, o, "channel_id", NULL, v->channel_id, ID_MAX_LEN - 1) == FLD_NULL)
		v->channel_id[0] = 0;
}

/* A given channel_id must be an open channel of the shop's seller.  Another
 * seller's channel gets the same answer as an unknown id. */
static void shop_check(struct api_ctx *c, const struct json_value *body, const struct shelf_vals *v)
{
	if (!json_get(body, "channel_id") || !v->channel_id[0] || !v->seller_id[0])
		return;
	const struct channel *ch = channel_get(c->sh, v->channel_id, strlen(v->channel_id));
	if (!ch || strcmp(ch->s.seller_id, v->seller_id))
		api_field_error(c, "channel_id", "seller_channel", "must be a sales channel of the shop's seller");
	else if (ch->s.status == SHELF_CLOSED)
		api_field_error(c, "channel_id", "open", "the sales channel is closed");
}

static void shop_write(struct jw *w, const struct shelf_vals *v)
{
	jw_key(w, "markup");
	wine_jw_decimal(w, v->markup, SHOP_MARKUP_SCALE);
	jw_kstr(w, "layout", shop_layout_names[v->layout]);
	jw_kstr(w, "channel_id", v->channel_id);
}

static void shop_fill(struct shelf_row *r, const struct shelf_vals *v)
{
	struct shop *s = (struct shop *)r;
	s->markup = v->markup;
	s->layout = (uint8_t)v->layout;
	memcpy(s->channel_id, v->channel_id, sizeof(s->channel_id));
}

static int shop_on(const struct shelf_row *r, const char *ch) { return !strcmp(((const struct shop *)r)->channel_id, ch); }

const struct shelf_kind shop_kind = {
	.table = REC_T_SHOP,
	.id_prefix = "shp",
	.noun = "curated shop",
	.ev_created = "curated_shop.created",
	.ev_updated = "curated_shop.updated",
	.name_taken = "shop_name_taken",
	.closed_code = "shop_closed",
	.known = shop_known,
	.read_only = shop_read_only,
	.required = shop_required,
	.need_cap = CAP_CURATES_OFFERS,
	.defaults = shop_defaults,
	.read = shop_read,
	.check = shop_check,
	.write = shop_write,
	.fill = shop_fill,
	.on_channel = shop_on,
};

/* ---- the tables ------------------------------------------------------------------ */

struct shelf_ext {
	struct hidx by_name;   /* nkey -> row */
	struct oidx by_seller; /* seller_id NUL id -> row */
};

static struct shelf_ext *ext(const struct table *t) { return t->ext; }

const struct oidx *shelf_by_seller(const struct table *t) { return &ext(t)->by_seller; }
const struct row *shelf_by_name(const struct table *t, const char *nkey, uint16_t len)
{
	return hidx_get(&ext(t)->by_name, nkey, len);
}

static const struct shelf_kind *kind_of(const struct table *t)
{
	return t->ops->rec_table == REC_T_SHOP ? &shop_kind : &channel_kind;
}

static int shelf_init(struct table *t)
{
	struct shelf_ext *e = calloc(1, sizeof(*e));
	if (!e)
		return -1;
	hidx_init(&e->by_name);
	oidx_init(&e->by_seller);
	t->ext = e;
	return 0;
}

static void shelf_fini(struct table *t)
{
	hidx_free(&ext(t)->by_name);
	oidx_free(&ext(t)->by_seller);
	free(t->ext);
	t->ext = NULL;
}

/* "seller NUL name folded to ASCII lower case" into out; its length. */
uint16_t shelf_name_key(const char *seller, const char *name, char *out)
{
	size_t sl = strlen(seller), nl = strlen(name);
	memcpy(out, seller, sl);
	out[sl] = 0;
	for (size_t i = 0; i < nl; i++) {
		char ch = name[i];
		out[sl + 1 + i] = ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
	}
	return (uint16_t)(sl + 1 + nl);
}

/* "seller NUL id" into out (IDX_MAX_KEY bytes); its length. */
static uint32_t seller_key(const struct shelf_row *s, uint8_t *out)
{
	size_t sl = strlen(s->seller_id);
	memcpy(out, s->seller_id, sl);
	out[sl] = 0;
	memcpy(out + sl + 1, s->row.id, s->row.id_len);
	return (uint32_t)(sl + 1 + s->row.id_len);
}

static int shelf_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	const struct shelf_kind *k = kind_of(t);
	struct shelf_row *s = (struct shelf_row *)r;
	struct shelf_vals v;
	if (shelf_load(k, doc, &v))
		return -1;
	memcpy(s->seller_id, v.seller_id, sizeof(s->seller_id));
	memcpy(s->name, v.name, sizeof(s->name));
	s->status = (uint8_t)v.status;
	s->nkey_len = shelf_name_key(s->seller_id, s->name, s->nkey);
	k->fill(s, &v);
	return 0;
}

static int shelf_index_add(struct table *t, struct row *r)
{
	struct shelf_row *s = (struct shelf_row *)r;
	uint8_t k[IDX_MAX_KEY];
	if (hidx_set(&ext(t)->by_name, s->nkey, s->nkey_len, s))
		return -1;
	return oidx_put(&ext(t)->by_seller, k, seller_key(s, k), s) < 0 ? -1 : 0;
}

static void shelf_index_del(struct table *t, struct row *r)
{
	struct shelf_row *s = (struct shelf_row *)r;
	uint8_t k[IDX_MAX_KEY];
	if (hidx_get(&ext(t)->by_name, s->nkey, s->nkey_len) == s)
		hidx_del(&ext(t)->by_name, s->nkey, s->nkey_len);
	uint32_t kl = seller_key(s, k);
	if (oidx_get(&ext(t)->by_seller, k, kl) == s)
		oidx_del(&ext(t)->by_seller, k, kl);
}

const struct table_ops channel_table_ops = {
	.rec_table = REC_T_CHANNEL,
	.name = "sales_channel",
	.row_size = sizeof(struct channel),
	.decode = shelf_decode,
	.index_add = shelf_index_add,
	.index_del = shelf_index_del,
	.init = shelf_init,
	.fini = shelf_fini,
};

const struct table_ops shop_table_ops = {
	.rec_table = REC_T_SHOP,
	.name = "curated_shop",
	.row_size = sizeof(struct shop),
	.decode = shelf_decode,
	.index_add = shelf_index_add,
	.index_del = shelf_index_del,
	.init = shelf_init,
	.fini = shelf_fini,
};

const struct channel *channel_get(struct shard *sh, const char *id, size_t len)
{
	return (const struct channel *)table_get(&sh->tables[REC_T_CHANNEL], id, len);
}

const struct shop *shop_on_channel(struct shard *sh, const char *channel_id)
{
	const struct channel *ch = channel_get(sh, channel_id, strlen(channel_id));
	if (!ch)
		return NULL;
	const struct table *t = &sh->tables[REC_T_SHOP];
	uint8_t k[IDX_MAX_KEY];
	size_t sl = strlen(ch->s.seller_id);
	memcpy(k, ch->s.seller_id, sl);
	k[sl] = 0;
	uint32_t kl;
	struct oidx_iter it;
	for (int ok = oidx_seek_ge(&ext(t)->by_seller, k, (uint32_t)sl + 1, &it); ok; ok = oidx_next(&it)) {
		const uint8_t *key = oidx_iter_key(&it, &kl);
		if (kl < sl + 1 || memcmp(key, k, sl + 1))
			break;
		const struct shop *s = oidx_iter_val(&it);
		if (s->s.status != SHELF_CLOSED && !strcmp(s->channel_id, channel_id))
			return s;
	}
	return NULL;
}

enum channel_pick channel_default_of(struct shard *sh, const char *seller_id, const struct channel **out)
{
	*out = NULL;
	size_t sl = strlen(seller_id);
	if (sl + 1 > IDX_MAX_KEY)
		return CHP_NONE;
	uint8_t k[IDX_MAX_KEY];
	memcpy(k, seller_id, sl);
	k[sl] = 0;
	uint32_t kl;
	unsigned rows = 0, n_open = 0;
	struct oidx_iter it;
	for (int ok = oidx_seek_ge(&ext(&sh->tables[REC_T_CHANNEL])->by_seller, k, (uint32_t)sl + 1, &it); ok;
	     ok = oidx_next(&it)) {
		const uint8_t *key = oidx_iter_key(&it, &kl);
		if (kl < sl + 1 || memcmp(key, k, sl + 1))
			break;
		if (++rows > CHANNEL_DEFAULT_SCAN)
			return CHP_SEVERAL;
		const struct channel *ch = oidx_iter_val(&it);
		if (ch->s.status == SHELF_CLOSED)
			continue;
		if (++n_open > 1)
			return CHP_SEVERAL;
		*out = ch;
	}
	if (!rows)
		return CHP_NONE;
	return n_open ? CHP_ONE : CHP_NO_OPEN;
}

int channel_of_seller(struct shard *sh, const char *channel_id, const char *seller_id)
{
	const struct channel *ch = channel_get(sh, channel_id, strlen(channel_id));
	return ch && !strcmp(ch->s.seller_id, seller_id) && ch->s.status != SHELF_CLOSED;
}

