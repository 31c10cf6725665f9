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
 * Both resources share one code path, driven by a `shelf_kind` table:
 * overlay the request on the current values (stored document, or
 * defaults), check every rule collecting every error, then write the
 * canonical document with its event in one transaction.  Both rows start
 * with struct shelf_row, so one pair of indexes serves both: a hash of
 * "seller NUL folded name" (uniqueness) and an ordered "seller NUL id"
 * (lists of one seller without scanning the table).
 */
#include "engine/supply/channel.h"

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

#define SHELF_MAX_TS 32 /* an RFC 3339 timestamp with milliseconds */

_Static_assert(ID_MAX_LEN + SHELF_MAX_NAME <= IDX_MAX_KEY, "a name key fits an index key");

/* Which status moves a PATCH may make (1 = allowed; same status is a no-op). */
static const uint8_t shelf_moves[SHELF_N_STATUS][SHELF_N_STATUS] = {
	/*                 active paused closed */
	[SHELF_ACTIVE] = {1, 1, 1},
	[SHELF_PAUSED] = {1, 1, 1},
	[SHELF_CLOSED] = {0, 0, 1},
};

/* Everything one document holds (both kinds; unused members stay zero). */
struct shelf_vals {
	char id[ID_MAX_LEN], seller_id[ID_MAX_LEN];
	char name[SHELF_MAX_NAME + 1];
	int status;
	char created_at[SHELF_MAX_TS], updated_at[SHELF_MAX_TS];
	/* sales channel */
	int kind;
	char country[3], currency[4];
	int n_locations;
	char location_ids[CHANNEL_LOCATIONS_MAX][ID_MAX_LEN];
	/* curated shop */
	int64_t markup;
	int layout;
	char channel_id[ID_MAX_LEN];
};

/* One resource of the shelf: what differs between channels and shops. */
struct shelf_kind {
	uint8_t table;                 /* enum rec_table */
	const char *id_prefix;         /* "chn" */
	const char *noun;              /* "sales channel" */
	const char *ev_created, *ev_updated;
	const char *name_taken;        /* 409 code */
	const char *closed_code;       /* 409 code for a PATCH of a closed row */
	const char *const *known;      /* writable + read-only members: anything else is unknown */
	const char *const *read_only;  /* members the service assigns */
	const char *const *required;   /* members a create must carry (not null) */
	int need_cap;                  /* enum partner_cap the seller needs, -1 none */
	void (*defaults)(struct shelf_vals *v);
	/* Overlay the kind's members of o on v (c NULL: a stored document). */
	void (*read)(struct api_ctx *c, const struct json_value *o, struct shelf_vals *v);
	/* Cross-record rules of a request body (c not NULL). */
	void (*check)(struct api_ctx *c, const struct json_value *body, const struct shelf_vals *v);
	/* Write the kind's members into the open document object. */
	void (*write)(struct jw *w, const struct shelf_vals *v);
	/* Copy the kind's typed members into the row. */
	void (*fill)(struct shelf_row *r, const struct shelf_vals *v);
	/* Is the row on the storefront channel ch (publishable keys)? */
	int (*on_channel)(const struct shelf_row *r, const char *ch);
};

/* ---- shared reading --------------------------------------------------------- */

static void common_read(struct api_ctx *c, const struct json_value *o, struct shelf_vals *v)
{
	if (fld_str(c, o, "name", NULL, v->name, SHELF_MAX_NAME) == FLD_NULL)
		v->name[0] = 0;
	fld_enum(c, o, "status", NULL, shelf_status_names, &v->status);
}

/* The values of a stored document; 0, or -1 when it lacks a required member. */
static int shelf_load(const struct shelf_kind *k, const struct json_value *doc, struct shelf_vals *v)
{
	memset(v, 0, sizeof(*v));
	k->defaults(v);
	if (fld_doc_str(doc, "id", v->id, sizeof(v->id)) || fld_doc_str(doc, "seller_id", v->seller_id, sizeof(v->seller_id)) ||
	    fld_doc_str(doc, "created_at", v->created_at, sizeof(v->created_at)) ||
	    fld_doc_str(doc, "updated_at", v->updated_at, sizeof(v->updated_at)))
		return -1;
	common_read(NULL, doc, v);
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
		jw_kstr(w, k, s);
	else
		jw_knull(w, k);
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

static const struct shelf_kind channel_kind = {
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

static const struct shelf_kind shop_kind = {
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
static uint16_t name_key(const char *seller, const char *name, char *out)
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
	s->nkey_len = name_key(s->seller_id, s->name, s->nkey);
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

/* ---- visibility ------------------------------------------------------------------ */

/* A publishable (storefront) key of a partner: it gets the storefront view. */
static int storefront(const struct api_ctx *c) { return c->who.kind == KEY_PUBLISHABLE && !c->who.is_platform; }

/* May the caller see the row: its seller's (or the platform); a publishable
 * key only its own storefront channel and that channel's shops, and nothing
 * without a channel (spec 5: a storefront sees what its shop page shows). */
static int shelf_visible(const struct api_ctx *c, const struct shelf_kind *k, const struct shelf_row *s)
{
	if (!api_owns(c, s->seller_id, strlen(s->seller_id)))
		return 0;
	if (storefront(c))
		return c->who.channel_id[0] && k->on_channel(s, c->who.channel_id);
	return 1;
}

/*
 * The storefront view: the members a shop page shows, nothing of how the
 * seller runs it (no warehouse location_ids, no markup, no seller id); a
 * channel's listings[] are those the key may see (its live ones).  One list
 * per kind, in the order of the stored document.
 */
static const char *const channel_storefront[] = {"id",	   "name",   "kind",	 "country",
						   "currency", "status", "listings", NULL};
static const char *const shop_storefront[] = {"id", "name", "layout", "channel_id", "status", NULL};

static int in_list(const char *const *list, const char *k)
{
	for (; *list; list++)
		if (!strcmp(*list, k))
			return 1;
	return 0;
}

/* Emit the members of r's document that `keep` names. */
static void storefront_emit(struct api_ctx *c, const struct row *r, const char *const *keep)
{
	struct json_doc *d = json_parse(r->doc, r->doc_len, NULL, NULL);
	if (!d) {
		c->w.err = 1;
		return;
	}
	const struct json_value *o = json_root(d);
	jw_obj_begin(&c->w);
	for (uint32_t i = 0; i < o->len; i++)
		if (in_list(keep, o->u.members[i].key)) {
			jw_key(&c->w, o->u.members[i].key);
			jw_value(&c->w, &o->u.members[i].value);
		}
	jw_obj_end(&c->w);
	json_doc_free(d);
}

static void channel_emit_only(struct api_ctx *c, const struct row *r, const char *const *keep);
static void channel_storefront_emit(struct api_ctx *c, const struct row *r) { channel_emit_only(c, r, channel_storefront); }
static void shop_storefront_emit(struct api_ctx *c, const struct row *r) { storefront_emit(c, r, shop_storefront); }

/* The visible row of the path, or NULL with the 404 written. */
static const struct shelf_row *shelf_from_path(struct api_ctx *c, const struct shelf_kind *k)
{
	const struct shelf_row *s = NULL;
	if (c->n_params)
		s = (const struct shelf_row *)table_get(&c->sh->tables[k->table], c->params[0].p, c->params[0].len);
	if (!s || !shelf_visible(c, k, s)) {
		char d[64];
		snprintf(d, sizeof(d), "no %s with this id", k->noun);
		api_error(c, 404, "not_found", d);
		return NULL;
	}
	return s;
}

static void channel_emit(struct api_ctx *c, const struct row *r);

/* ---- writing ---------------------------------------------------------------------- */

static void shelf_commit(struct api_ctx *c, const struct shelf_kind *k, const struct shelf_vals *v, const char *event,
			 int status)
{
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	struct jw w;
	jw_init(&w, &doc);
	jw_obj_begin(&w);
	jw_kstr(&w, "id", v->id);
	jw_kstr(&w, "seller_id", v->seller_id);
	jw_kstr(&w, "name", v->name);
	k->write(&w, v);
	jw_kstr(&w, "status", shelf_status_names[v->status]);
	jw_kstr(&w, "created_at", v->created_at);
	jw_kstr(&w, "updated_at", v->updated_at);
	jw_obj_end(&w);
	txn_begin(c->sh);
	if (w.err || txn_put(c->sh, k->table, v->id, strlen(v->id), doc.data, doc.len) ||
	    txn_event(c->sh, event, v->seller_id, doc.data, doc.len) || !txn_commit(c->sh)) {
		txn_abort(c->sh);
		buf_free(&doc);
		api_error(c, 500, "commit_failed", "the record could not be stored");
		return;
	}
	buf_free(&doc);
	const struct row *r = table_get(&c->sh->tables[k->table], v->id, strlen(v->id));
	if (!r) {
		api_error(c, 500, "commit_failed", "the record could not be read back");
		return;
	}
	if (k->table == REC_T_CHANNEL)
		channel_emit(c, r);
	else
		jw_raw(&c->w, r->doc, r->doc_len);
	c->rs->status = status;
}

/* The seller a row is for: a seller partner (with the kind's capability),
 * and the caller itself unless the caller is the platform. */
static void seller_check(struct api_ctx *c, const struct shelf_kind *k, const char *sid)
{
	if (!c->who.is_platform && strcmp(sid, c->who.entity_id)) {
		api_field_error(c, "seller_id", "own", "a partner runs its own %ss only", k->noun);
		return;
	}
	const struct partner *p = partner_get(c->sh, sid, strlen(sid));
	if (!p)
		api_field_error(c, "seller_id", "exists", "no partner with this id");
	else if (!(p->v.roles & ROLE_SELLER))
		api_field_error(c, "seller_id", "seller_role", "must be a partner with the seller role");
	else if (k->need_cap >= 0 && !(partner_caps(&p->v) & (1u << k->need_cap)))
		api_field_error(c, "seller_id", "curates_offers", "the seller lacks the curates_offers capability");
}

/* A partner caller without the kind's capability: 403 written, 1. */
static int lacks_capability(struct api_ctx *c, const struct shelf_kind *k)
{
	if (c->who.is_platform || k->need_cap < 0)
		return 0;
	const struct partner *p = partner_get(c->sh, c->who.entity_id, strlen(c->who.entity_id));
	if (p && (partner_caps(&p->v) & (1u << k->need_cap)))
		return 0;
	api_error(c, 403, "action_not_allowed", "curated shops need the curates_offers capability");
	return 1;
}

/* Members the service assigns, and required members given as null. */
static void body_rules(struct api_ctx *c, const struct shelf_kind *k, const struct json_value *body, int create)
{
	fld_reject_unknown(c, body, k->known, NULL);
	for (int i = 0; k->read_only[i]; i++)
		if (json_get(body, k->read_only[i]))
			api_field_error(c, k->read_only[i], "read_only", "is assigned by the service");
	for (int i = 0; k->required[i]; i++) {
		const struct json_value *m = json_get(body, k->required[i]);
		if (create ? !m || m->type == JSON_NULL : m && m->type == JSON_NULL)
			api_field_error(c, k->required[i], "required", create ? "is required" : "cannot be removed");
	}
}

/* Another row of the seller holds the name: 409 naming it, 1. */
static int name_taken(struct api_ctx *c, const struct shelf_kind *k, const struct shelf_vals *v)
{
	char key[ID_MAX_LEN + SHELF_MAX_NAME + 1];
	uint16_t kl = name_key(v->seller_id, v->name, key);
	const struct shelf_row *o = hidx_get(&ext(&c->sh->tables[k->table])->by_name, key, kl);
	if (!o || !strcmp(o->row.id, v->id))
		return 0;
	char d[256];
	snprintf(d, sizeof(d), "%s %.*s of this seller is already named \"%s\"", k->noun, (int)o->row.id_len, o->row.id,
		 o->name);
	api_error(c, 409, k->name_taken, d);
	return 1;
}

static void shelf_create(struct api_ctx *c, const struct shelf_kind *k)
{
	if (lacks_capability(c, k))
		return;
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	body_rules(c, k, body, 1);
	struct shelf_vals v;
	memset(&v, 0, sizeof(v));
	k->defaults(&v);
	int r = fld_str(c, body, "seller_id", NULL, v.seller_id, ID_MAX_LEN - 1);
	if (r == FLD_ABSENT || r == FLD_NULL) {
		if (c->who.is_platform)
			api_field_error(c, "seller_id", "required", "operators name the seller");
		else
			snprintf(v.seller_id, sizeof(v.seller_id), "%s", c->who.entity_id);
	}
	common_read(c, body, &v);
	k->read(c, body, &v);
	if (v.status == SHELF_CLOSED)
		api_field_error(c, "status", "initial", "a new %s starts active or paused", k->noun);
	if (v.seller_id[0])
		seller_check(c, k, v.seller_id);
	k->check(c, body, &v);
	if (c->n_errs) {
		api_validation_failed(c);
		return;
	}
	if (name_taken(c, k, &v))
		return;
	id_new(&c->sh->ids, k->id_prefix, v.id);
	fmt_rfc3339_ms(v.created_at, wall_ms());
	memcpy(v.updated_at, v.created_at, sizeof(v.created_at));
	shelf_commit(c, k, &v, k->ev_created, 201);
}

static void shelf_patch(struct api_ctx *c, const struct shelf_kind *k)
{
	const struct shelf_row *cur = shelf_from_path(c, k);
	if (!cur)
		return;
	if (cur->status == SHELF_CLOSED) {
		char d[64];
		snprintf(d, sizeof(d), "the %s is closed", k->noun);
		api_error(c, 409, k->closed_code, d);
		return;
	}
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	body_rules(c, k, body, 0);
	if (json_get(body, "seller_id"))
		api_field_error(c, "seller_id", "read_only", "cannot be changed");
	struct json_doc *stored = json_parse(cur->row.doc, cur->row.doc_len, NULL, NULL);
	struct shelf_vals v;
	if (!stored || shelf_load(k, json_root(stored), &v)) {
		json_doc_free(stored);
		api_error(c, 500, "corrupt_record", "the stored record does not parse");
		return;
	}
	common_read(c, body, &v);
	k->read(c, body, &v);
	k->check(c, body, &v);
	json_doc_free(stored); /* v holds copies only */
	if (c->n_errs) {
		api_validation_failed(c);
		return;
	}
	if (!shelf_moves[cur->status][v.status]) {
		char d[128];
		snprintf(d, sizeof(d), "a %s cannot move from \"%s\" to \"%s\"", k->noun, shelf_status_names[cur->status],
			 shelf_status_names[v.status]);
		api_error(c, 409, "invalid_status_transition", d);
		return;
	}
	if (name_taken(c, k, &v))
		return;
	fmt_rfc3339_ms(v.updated_at, wall_ms());
	shelf_commit(c, k, &v, k->ev_updated, 200);
}

/* A channel as reads return it: the stored members, with `listings`
 * filled from the listings-by-channel index (see the top). */
/* The channel document with its listings[] joined (those the caller may
 * see); keep: the members to emit (NULL: all). */
static void channel_emit_only(struct api_ctx *c, const struct row *r, const char *const *keep)
{
	struct json_doc *d = json_parse(r->doc, r->doc_len, NULL, NULL);
	if (!d) {
		c->w.err = 1;
		return;
	}
	const struct json_value *o = json_root(d);
	char id[ID_MAX_LEN];
	snprintf(id, sizeof(id), "%.*s", (int)r->id_len, r->id);
	jw_obj_begin(&c->w);
	int more = 0;
	for (uint32_t i = 0; i < o->len; i++) {
		const struct json_member *m = &o->u.members[i];
		if (keep && !in_list(keep, m->key))
			continue;
		jw_key(&c->w, m->key);
		if (!strcmp(m->key, "listings"))
			more = channel_listing_ids(c, id, &c->w);
		else
			jw_value(&c->w, &m->value);
	}
	jw_kbool(&c->w, "listings_truncated", more);
	jw_obj_end(&c->w);
	json_doc_free(d);
}

static void channel_emit(struct api_ctx *c, const struct row *r) { channel_emit_only(c, r, NULL); }

static void shelf_get(struct api_ctx *c, const struct shelf_kind *k)
{
	const struct shelf_row *s = shelf_from_path(c, k);
	if (!s)
		return;
	if (storefront(c)) {
		if (api_read_row(c))
			return;
		(k->table == REC_T_CHANNEL ? channel_storefront_emit : shop_storefront_emit)(c, &s->row);
		c->rs->status = 200;
		return;
	}
	if (k->table != REC_T_CHANNEL) {
		api_send_doc(c, 200, s->row.doc, s->row.doc_len);
		return;
	}
	if (api_read_row(c))
		return;
	channel_emit(c, &s->row);
	c->rs->status = 200;
}

struct shelf_filter {
	const struct shelf_kind *k;
	int status;               /* -1 any */
	int none;                 /* a partner filtering on another seller: nothing */
};

static int shelf_match(struct api_ctx *c, const struct row *r, void *arg)
{
	const struct shelf_filter *f = arg;
	const struct shelf_row *s = (const struct shelf_row *)r;
	return !f->none && (f->status < 0 || s->status == f->status) && shelf_visible(c, f->k, s);
}

/* Lists walk the seller's range of the by-seller index (a partner's own,
 * or an operator's ?seller_id); operators without it walk every row. */
static void shelf_list(struct api_ctx *c, const struct shelf_kind *k)
{
	struct api_page pg;
	if (api_page_parse(c, &pg))
		return;
	struct shelf_filter f = {k, -1, 0};
	char st[16], sid[ID_MAX_LEN];
	int n = api_query(c, "status", st, sizeof(st));
	if (n != -1) {
		for (int i = 0; n > 0 && shelf_status_names[i]; i++)
			if (!strcmp(shelf_status_names[i], st))
				f.status = i;
		if (f.status < 0) {
			api_error(c, 400, "invalid_filter", "status must be active, paused or closed");
			return;
		}
	}
	n = api_query(c, "seller_id", sid, sizeof(sid));
	if (n == 0 || n == -2) {
		api_error(c, 400, "invalid_filter", "seller_id must be a partner id");
		return;
	}
	const struct table *t = &c->sh->tables[k->table];
	const struct oidx *idx = &t->by_order;
	uint8_t prefix[IDX_MAX_KEY];
	uint32_t pl = 0;
	const char *seller = c->who.is_platform ? (n > 0 ? sid : NULL) : c->who.entity_id;
	if (!c->who.is_platform && n > 0 && strcmp(sid, c->who.entity_id))
		f.none = 1;
	if (seller) {
		size_t sl = strlen(seller);
		idx = &ext(t)->by_seller;
		memcpy(prefix, seller, sl);
		prefix[sl] = 0;
		pl = (uint32_t)sl + 1;
	}
	api_row_emit emit = k->table == REC_T_CHANNEL ? channel_emit : NULL;
	if (storefront(c))
		emit = k->table == REC_T_CHANNEL ? channel_storefront_emit : shop_storefront_emit;
	api_list(c, idx, prefix, pl, &pg, shelf_match, &f, emit);
}

const struct channel *channel_from_path(struct api_ctx *c)
{
	return (const struct channel *)shelf_from_path(c, &channel_kind);
}

int channel_storefront_key(const struct api_ctx *c) { return storefront(c); }

static void channels_list(struct api_ctx *c) { shelf_list(c, &channel_kind); }
static void channels_create(struct api_ctx *c) { shelf_create(c, &channel_kind); }
static void channels_get(struct api_ctx *c) { shelf_get(c, &channel_kind); }
static void channels_patch(struct api_ctx *c) { shelf_patch(c, &channel_kind); }
static void shops_list(struct api_ctx *c) { shelf_list(c, &shop_kind); }
static void shops_create(struct api_ctx *c) { shelf_create(c, &shop_kind); }
static void shops_get(struct api_ctx *c) { shelf_get(c, &shop_kind); }
static void shops_patch(struct api_ctx *c) { shelf_patch(c, &shop_kind); }

const struct route channel_routes[] = {
	{HTTP_M_GET, "/v1/sales-channels", channels_list, SC_READ_LISTINGS, ACT_READ_LISTINGS, "List sales channels", 0},
	{HTTP_M_POST, "/v1/sales-channels", channels_create, SC_WRITE_LISTINGS, ACT_WRITE_LISTINGS,
	 "Create a sales channel", 0},
	{HTTP_M_GET, "/v1/sales-channels/{id}", channels_get, SC_READ_LISTINGS, ACT_READ_LISTINGS,
	 "Retrieve a sales channel", 0},
	{HTTP_M_PATCH, "/v1/sales-channels/{id}", channels_patch, SC_WRITE_LISTINGS, ACT_WRITE_LISTINGS,
	 "Update a sales channel (merge patch)", 0},
	{HTTP_M_GET, "/v1/curated-shops", shops_list, SC_READ_LISTINGS, ACT_READ_LISTINGS, "List curated shops", 0},
	{HTTP_M_POST, "/v1/curated-shops", shops_create, SC_WRITE_LISTINGS, ACT_WRITE_LISTINGS,
	 "Create a curated shop", 0},
	{HTTP_M_GET, "/v1/curated-shops/{id}", shops_get, SC_READ_LISTINGS, ACT_READ_LISTINGS,
	 "Retrieve a curated shop", 0},
	{HTTP_M_PATCH, "/v1/curated-shops/{id}", shops_patch, SC_WRITE_LISTINGS, ACT_WRITE_LISTINGS,
	 "Update a curated shop (merge patch)", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
