/*
 * inventory.c -- inventory items and levels (spec 2.5, 4.2), the
 * reservation primitives of the orders saga (DESIGN.md 5) and the network
 * snapshot.  Levels live on the shard of their location's country
 * (DESIGN.md 2; this single shard owns every country for now).  Decisions
 * where the spec is open (also in api/openapi.json):
 *
 *  - One record per LEVEL = item (sku, offer_id, owner_entity_id) x
 *    location x condition, unique on (offer, location, condition): a
 *    second declaration is a 409 inventory_exists naming the holder.
 *    condition is the stock's physical state: sellable (default), damaged,
 *    quarantine; only sellable levels count toward an offer's
 *    qty_available and take holds.
 *  - POST /v1/inventory: offer_id must be an offer the caller owns (the
 *    platform: any), not withdrawn; owner_entity_id is the offer's
 *    originator (defaults to it; another value is a 422 `offer_owner`);
 *    location_id must be an active location owned by that originator or by
 *    a fulfiller (a 3PL stores anyone's stock); else 422 `usable`/`active`.
 *  - PATCH /v1/inventory/{id} changes on_hand and incoming only.
 *    reserved and allocated move only through holds and orders (422
 *    `read_only`), so a PATCH can never fake or erase a reservation.  A
 *    PATCH that would leave atp = on_hand - allocated - reserved below 0 is
 *    a 409 atp_negative (atp exactly 0 is fine).  No quantity is ever
 *    negative or above INV_QTY_MAX.
 *  - Every change of a level (declare, PATCH, hold place/commit/release)
 *    appends `stock.changed` in the same transaction: level id, offer,
 *    location, cause, hold id, old and new quantities with atp.
 *  - An offer with levels has qty_available = sum of its sellable levels'
 *    atp (capped at OFFER_QTY_MAX), rewritten in the same transaction by
 *    offer_stage_qty().  A later offer PATCH of qty_available is
 *    overwritten by the next stock change (the levels are the truth).
 *  - Reads: the item's owner, the owner of the level's location (a 3PL
 *    sees what is stored in its warehouse), or the platform.  GET
 *    /v1/inventory walks by_offer (?offer=), by_location (?location=),
 *    the caller's by_owner range (no filter) or, for the platform, every
 *    level; never a scan-and-sort.
 *
 * HOLDS (DESIGN.md 5).  A hold is a REC_T_HOLD row keyed by the caller's
 * hold id (the orders issue uses order+line+source).  place: PREPARED,
 * reserved += qty.  commit: the buy leg is decided, the units move from
 * reserved to allocated (still not available, now earmarked for the order;
 * shipping will take them off on_hand and allocated).  release: the units
 * return to atp.  The hold row and the level change are one transaction
 * (one WAL record set), so recovery rebuilds both or neither.  Hold rows
 * are kept after release so an id stays idempotent.
 *
 * A hold that belongs to an order (its id is a leg's hold id, named
 * "<order id>.H<n>" by order.c) moves only with its order: the operator
 * hold routes (place, commit, release) refuse it with 409
 * hold_owned_by_order naming the order and the order route to use.
 * Releasing an order's committed hold by hand left the order `reserved`
 * with no stock behind it; committing or re-placing one would move stock
 * the saga did not decide.  Ownership is read from the order itself (its
 * legs), so an operator's own hold that merely looks like one is not
 * caught.
 *
 * NETWORK SNAPSHOT.  GET /v1/inventory/network-snapshot (read:network,
 * platform only): every location with its capabilities, coordinates, duty
 * context (tax_jurisdiction) and stock summed per offer (at most
 * INV_SNAPSHOT_STOCK_MAX offers, `stock_truncated` beyond), one page of
 * locations at a time (cursor pagination over the location table).
 */
#include "engine/stock/inventory.h"

#include <assert.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/edge/fields.h"
#include "engine/stock/location.h"
#include "engine/base/log.h"
#include "engine/supply/offer.h"
#include "engine/catalogue/partner.h"
#include "engine/storage/image.h"
#include "engine/storage/resources.h"
#include "wal/errinj.h"

const char *const inv_condition_names[] = {"sellable", "damaged", "quarantine", NULL};
const char *const hold_state_names[] = {"prepared", "committed", "released", "consumed", NULL};

_Static_assert(INV_QTY_MAX == OFFER_QTY_MAX, "a level's quantity fits an offer's qty_available");

#define INV_TS_MAX 32

/* ---- level values ------------------------------------------------------------ */

struct lvl_vals {
	char id[ID_MAX_LEN], sku[INV_SKU_MAX + 1];
	char offer_id[ID_MAX_LEN], owner_id[ID_MAX_LEN], location_id[ID_MAX_LEN];
	int condition;
	int64_t on_hand, incoming, reserved, allocated;
	char created_at[INV_TS_MAX], updated_at[INV_TS_MAX];
};

static int64_t vals_atp(const struct lvl_vals *v) { return v->on_hand - v->allocated - v->reserved; }

/* A stored quantity: an integer 0..INV_QTY_MAX; 0 or -1. */
static int doc_qty(const struct json_value *doc, const char *name, int64_t *out)
{
	const struct json_value *x = json_get(doc, name);
	return x && x->type == JSON_NUMBER && !json_to_int64(x, out) && *out >= 0 && *out <= INV_QTY_MAX ? 0 : -1;
}

/* Every quantity 0..INV_QTY_MAX (what the row's 32-bit fields hold). */
static int lvl_qtys_ok(const struct lvl_vals *v)
{
	const int64_t q[] = {v->on_hand, v->incoming, v->reserved, v->allocated};
	for (unsigned i = 0; i < 4; i++)
		if (q[i] < 0 || q[i] > INV_QTY_MAX)
			return 0;
	return 1;
}

/* A storable level: every id, a condition, quantities 0..INV_QTY_MAX and
 * atp >= 0. */
static int lvl_valid(const struct lvl_vals *v)
{
	return lvl_qtys_ok(v) && v->id[0] && v->sku[0] && v->offer_id[0] && v->owner_id[0] && v->location_id[0] && v->condition >= 0 &&
	       vals_atp(v) >= 0;
}

static int lvl_load(const struct json_value *doc, struct lvl_vals *v)
{
	memset(v, 0, sizeof(*v));
	fld_doc_str(doc, "id", v->id, sizeof(v->id));
	fld_doc_str(doc, "sku", v->sku, sizeof(v->sku));
	fld_doc_str(doc, "offer_id", v->offer_id, sizeof(v->offer_id));
	fld_doc_str(doc, "owner_entity_id", v->owner_id, sizeof(v->owner_id));
	fld_doc_str(doc, "location_id", v->location_id, sizeof(v->location_id));
	fld_doc_str(doc, "created_at", v->created_at, sizeof(v->created_at));
	fld_doc_str(doc, "updated_at", v->updated_at, sizeof(v->updated_at));
	v->condition = -1;
	fld_enum(NULL, doc, "condition", NULL, inv_condition_names, &v->condition);
	if (doc_qty(doc, "on_hand", &v->on_hand) || doc_qty(doc, "incoming", &v->incoming) ||
	    doc_qty(doc, "reserved", &v->reserved) || doc_qty(doc, "allocated", &v->allocated))
		return -1;
	return lvl_valid(v) ? 0 : -1;
}

/* The stamps of a level that keeps its document: the document's. */
static void stamps_of_doc(const struct inv_level *l, struct lvl_vals *v)
{
	struct json_doc *d = json_parse(l->row.doc, l->row.doc_len, NULL, NULL);
	if (!d)
		return;
	fld_doc_str(json_root(d), "created_at", v->created_at, sizeof(v->created_at));
	fld_doc_str(json_root(d), "updated_at", v->updated_at, sizeof(v->updated_at));
	json_doc_free(d);
}

static void lvl_from_row(const struct inv_level *l, struct lvl_vals *v)
{
	memset(v, 0, sizeof(*v));
	memcpy(v->id, l->row.id, l->row.id_len);
	snprintf(v->sku, sizeof(v->sku), "%s", inv_level_sku(l));
	memcpy(v->offer_id, l->offer_id, sizeof(v->offer_id));
	snprintf(v->owner_id, sizeof(v->owner_id), "%s", l->owner_id);
	snprintf(v->location_id, sizeof(v->location_id), "%s", l->location_id);
	if (l->row.doc)
		stamps_of_doc(l, v);
	else {
		fmt_rfc3339_ms_or_empty(l->created_ms, v->created_at);
		fmt_rfc3339_ms_or_empty(l->updated_ms, v->updated_at);
	}
	v->condition = l->condition;
	v->on_hand = l->on_hand;
	v->incoming = l->incoming;
	v->reserved = l->reserved;
	v->allocated = l->allocated;
}

/* "on_hand":..,"incoming":..,"reserved":..,"allocated":..,"atp":.. */
static int qtys_put(struct buf *b, const struct lvl_vals *v)
{
	return BUF_LIT(b, "\"on_hand\":") || buf_put_dec(b, v->on_hand) || BUF_LIT(b, ",\"incoming\":") ||
	       buf_put_dec(b, v->incoming) || BUF_LIT(b, ",\"reserved\":") || buf_put_dec(b, v->reserved) ||
	       BUF_LIT(b, ",\"allocated\":") || buf_put_dec(b, v->allocated) || BUF_LIT(b, ",\"atp\":") ||
	       buf_put_dec(b, vals_atp(v));
}

/* A level's document, appended as it is written (a hold stages its level
 * twice an order, and render writes it for every read of a level). */
static int lvl_put(struct buf *b, const struct lvl_vals *v)
{
	return BUF_LIT(b, "{\"id\":") || jb_str(b, v->id) || BUF_LIT(b, ",\"sku\":") || jb_str(b, v->sku) ||
	       BUF_LIT(b, ",\"offer_id\":") || jb_str(b, v->offer_id) || BUF_LIT(b, ",\"owner_entity_id\":") ||
	       jb_str(b, v->owner_id) || BUF_LIT(b, ",\"location_id\":") || jb_str(b, v->location_id) ||
	       BUF_LIT(b, ",\"condition\":") || jb_str(b, inv_condition_names[v->condition]) || buf_putc(b, ',') ||
	       qtys_put(b, v) || BUF_LIT(b, ",\"created_at\":") || jb_str(b, v->created_at) ||
	       BUF_LIT(b, ",\"updated_at\":") || jb_str(b, v->updated_at) || buf_putc(b, '}');
}

static void lvl_write(struct jw *w, const struct lvl_vals *v)
{
	struct buf *b = jw_raw_begin(w);
	if (b && lvl_put(b, v))
		w->err = 1;
}

/* ---- the level table ------------------------------------------------------------ */

/* No index by natural key (offer, location, condition): the one place that
 * asks, a create's duplicate check, walks the offer's levels in by_offer,
 * which it walks anyway to count them (at most INV_LEVELS_PER_OFFER_MAX).
 * A hash of them cost 34 B a level and an insert per level in recovery.
 * The three ordered indexes are tail-keyed (index.h oidx_init_tail): each
 * key ends with the level's id, which the row keeps and the leaves do
 * not. */
struct inv_ext {
	struct oidx by_offer;     /* offer NUL id */
	struct oidx by_location;  /* location NUL offer NUL id (grouped per offer: the snapshot) */
	struct oidx by_owner;     /* owner NUL id */
	/* Offers' n_levels_p1 are kept: from the end of the load on
	 * (inv_loaded), inv_changed keeps the known ones exact and a new offer
	 * is counted as it is stored.  Until then (a recovery's installs) it
	 * looks no offer up: one hash probe a level, a cache miss each in a
	 * big catalogue, where the count of the loaded ones (inv_count_step)
	 * reads both tables in order. */
	uint8_t counted;
	/* inv_count_step's pass over the loaded offers: under way, and the
	 * offer id it goes on from */
	uint8_t counting;
	uint8_t count_from_len;
	char count_from[ID_MAX_LEN];
	uint32_t count_steps; /* the pass so far, for its log line */
	uint64_t count_offers;
};

static struct inv_ext *ext(const struct table *t) { return t->ext; }

static int inv_init(struct table *t)
{
	struct inv_ext *e = calloc(1, sizeof(*e));
	if (!e)
		return -1;
	/* every key ends with the level's id: its row keeps it */
	oidx_init_tail(&e->by_offer);
	oidx_init_tail(&e->by_location);
	oidx_init_tail(&e->by_owner);
	t->ext = e;
	return 0;
}

static void inv_fini(struct table *t)
{
	oidx_free(&ext(t)->by_offer);
	oidx_free(&ext(t)->by_location);
	oidx_free(&ext(t)->by_owner);
	free(t->ext);
	t->ext = NULL;
}

/* Join parts with NUL separators into out (IDX_MAX_KEY bytes); length. */
static uint32_t key_join(uint8_t *out, const char *a, const char *b, const char *c3, size_t c3_len)
{
	uint32_t n = 0;
	const char *parts[2] = {a, b};
	for (int i = 0; i < 2 && parts[i]; i++) {
		size_t l = strlen(parts[i]);
		memcpy(out + n, parts[i], l);
		n += (uint32_t)l;
		out[n++] = 0;
	}
	memcpy(out + n, c3, c3_len);
	return n + (uint32_t)c3_len;
}

_Static_assert(3 * ID_MAX_LEN <= IDX_MAX_KEY, "composite level keys fit an index key");

/* The natural key (offer, location, condition) is a slice of the row
 * itself (inventory.h): two versions of a level compare it at once
 * (inv_keys_same). */
#define INV_NKEY_LEN (ID_MAX_LEN + sizeof(const char *) + 1)
_Static_assert(offsetof(struct inv_level, location_id) == offsetof(struct inv_level, offer_id) + ID_MAX_LEN &&
		       offsetof(struct inv_level, condition) == offsetof(struct inv_level, location_id) + sizeof(const char *),
	       "a level's natural key is three adjacent fields");

static const char *level_nkey(const struct inv_level *l) { return l->offer_id; }

/* The level row from its values (decoded or the writer's own).  0 or -1
 * (what it took so far is the row's, for release). */
static int level_fill(struct table *t, struct inv_level *l, const struct lvl_vals *v)
{
	size_t sl = strnlen(v->sku, sizeof(v->sku));
	if (sl > INV_SKU_MAX)
		return -1;
	if (sl && (unsigned char)v->sku[0] == (unsigned char)INV_SKU_OUT)
		return -1; /* not text (the marker of a sku kept apart) */
	if (sl <= INV_SKU_INLINE) {
		memcpy(l->sku, v->sku, sl + 1);
	} else {
		char *out = malloc(sl + 1); /* released with the row (inv_release) */
		if (!out)
			return -1;
		memcpy(out, v->sku, sl + 1);
		l->sku[0] = INV_SKU_OUT;
		memcpy(l->sku + 1, &out, sizeof(out));
	}
	if (v->condition < 0 || v->condition >= INV_N_CONDITION ||
	    typed_str(l->offer_id, sizeof(l->offer_id), v->offer_id))
		return -1;
	size_t ol = strnlen(v->owner_id, sizeof(v->owner_id)), ll = strnlen(v->location_id, sizeof(v->location_id));
	if (ol == sizeof(v->owner_id) || ll == sizeof(v->location_id) || /* no NUL: no id */
	    idpool_ref2(&t->ids, v->owner_id, ol, v->location_id, ll, &l->owner_id, &l->location_id))
		return -1;
	l->created_ms = rfc3339_ms_exact(v->created_at);
	l->updated_ms = rfc3339_ms_exact(v->updated_at);
	l->condition = (uint8_t)v->condition;
	if (!lvl_qtys_ok(v)) /* the bound the 32-bit fields rely on */
		return -1;
	l->on_hand = (int32_t)v->on_hand;
	l->incoming = (int32_t)v->incoming;
	l->reserved = (int32_t)v->reserved;
	l->allocated = (int32_t)v->allocated;
	return 0;
}

/* release: what the typed row owns besides its block (table.h) */
static void inv_release(struct table *t, struct row *r)
{
	struct inv_level *l = (struct inv_level *)r;
	free(inv_level_sku_out(l));
	memset(l->sku, 0, sizeof(l->sku));
	idpool_drop2(&t->ids, l->owner_id, l->location_id);
	l->owner_id = l->location_id = NULL;
}

/* typed_same (test builds' check of a typed put, table.h): the struct as
 * bytes but for the long sku's block, whose address differs; that sku by
 * its bytes */
static int inv_typed_same(const struct row *a, const struct row *b)
{
	const struct inv_level *x = (const struct inv_level *)a, *y = (const struct inv_level *)b;
	size_t head = sizeof(struct row), sku = offsetof(struct inv_level, sku), after = sku + sizeof(x->sku);
	return !memcmp((const char *)x + head, (const char *)y + head, sku - head) &&
	       !memcmp((const char *)x + after, (const char *)y + after, sizeof(*x) - after) &&
	       (x->sku[0] == INV_SKU_OUT) == (y->sku[0] == INV_SKU_OUT) && !strcmp(inv_level_sku(x), inv_level_sku(y));
}

static int inv_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	struct lvl_vals v;
	return lvl_load(doc, &v) ? -1 : level_fill(t, (struct inv_level *)r, &v);
}

/* The typed fast path (table.h): the level from the values stage_level
 * wrote its document from. */
static int inv_decode_typed(struct table *t, struct row *r, const void *typed)
{
	const struct lvl_vals *v = typed;
	return lvl_valid(v) ? level_fill(t, (struct inv_level *)r, v) : -1;
}

/* ---- snapshot images (engine/storage/image.h) ---------------------------- */

/* V1: four strings, created_at, the condition and the quantities; V2
 * adds updated_at after created_at; V3 (written) has the two stamps as
 * numbers after the quantities (inventory.h: a level renders its document
 * from its row, table.h render).  A V1 image comes with its document,
 * which the row then keeps. */
#define INV_IMAGE_V1 1
#define INV_IMAGE_V2 2
#define INV_IMAGE_V3 3

static int inv_image(const struct row *r, struct buf *out)
{
	const struct inv_level *l = (const struct inv_level *)r;
	struct img_w w = {out, 0};
	img_u8(&w, INV_IMAGE_V3);
	const char *str[] = {inv_level_sku(l), l->offer_id, l->owner_id, l->location_id};
	for (size_t i = 0; i < sizeof(str) / sizeof(str[0]); i++)
		img_str(&w, str[i]);
	img_u8(&w, l->condition);
	const int64_t num[] = {l->on_hand, l->incoming, l->reserved, l->allocated, l->created_ms, l->updated_ms};
	for (size_t i = 0; i < sizeof(num) / sizeof(num[0]); i++)
		img_i64(&w, num[i]);
	return w.err ? -1 : 0;
}


/* The level from an image, through the checks a typed put's values pass
 * (lvl_valid, level_fill); the document's "id" is the row's id. */
static int inv_from_image(struct table *t, struct row *r, const uint8_t *img, size_t len)
{
	struct lvl_vals v;
	memset(&v, 0, sizeof(v));
	struct img_r rd = {img, img + len, 0};
	unsigned version = img_get_u8(&rd);
	if (version < INV_IMAGE_V1 || version > INV_IMAGE_V3)
		return -1;
	img_get_str(&rd, v.sku, sizeof(v.sku));
	img_get_str(&rd, v.offer_id, sizeof(v.offer_id));
	img_get_str(&rd, v.owner_id, sizeof(v.owner_id));
	img_get_str(&rd, v.location_id, sizeof(v.location_id));
	if (version <= INV_IMAGE_V2)
		img_get_str(&rd, v.created_at, sizeof(v.created_at));
	if (version == INV_IMAGE_V2)
		img_get_str(&rd, v.updated_at, sizeof(v.updated_at));
	v.condition = (int)img_get_u8(&rd);
	int64_t *num[] = {&v.on_hand, &v.incoming, &v.reserved, &v.allocated};
	for (size_t i = 0; i < sizeof(num) / sizeof(num[0]); i++)
		*num[i] = img_get_i64(&rd);
	int64_t stamps[2] = {RFC3339_NO_MS, RFC3339_NO_MS};
	for (unsigned i = 0; version == INV_IMAGE_V3 && i < 2; i++)
		if (!rfc3339_ms_storable(stamps[i] = img_get_i64(&rd)))
			rd.bad = 1;
	v.id[0] = r->id_len ? 'x' : 0; /* lvl_valid asks for an id: the row's */
	struct inv_level *l = (struct inv_level *)r;
	if (version < INV_IMAGE_V3 && r->doc)
		stamps_of_doc(l, &v); /* an older image's stamps are its document's */
	if (img_done(&rd) || !lvl_valid(&v) || level_fill(t, l, &v))
		return -1;
	if (version == INV_IMAGE_V3) {
		l->created_ms = stamps[0];
		l->updated_ms = stamps[1];
	}
	/* a row without its document renders both stamps */
	return !r->doc && (l->created_ms == RFC3339_NO_MS || l->updated_ms == RFC3339_NO_MS) ? -1 : 0;
}

/* The level's document from its row (table.h render): what stage_level
 * wrote for the same values. */
static void inv_render(const struct row *r, struct jw *w)
{
	struct lvl_vals v;
	lvl_from_row((const struct inv_level *)r, &v);
	lvl_write(w, &v);
}

/* index_add_ordered: the level's entries in the three ordered indexes */
static int inv_index_add_ordered(struct table *t, struct row *r)
{
	struct inv_level *l = (struct inv_level *)r;
	struct inv_ext *e = ext(t);
	uint8_t k[IDX_MAX_KEY];
	if (oidx_set(&e->by_offer, k, key_join(k, l->offer_id, NULL, r->id, r->id_len), l) ||
	    oidx_set(&e->by_location, k, key_join(k, l->location_id, l->offer_id, r->id, r->id_len), l) ||
	    oidx_set(&e->by_owner, k, key_join(k, l->owner_id, NULL, r->id, r->id_len), l))
		return -1;
	return 0;
}

static int inv_index_add(struct table *t, struct row *r) { return t->ordered_later ? 0 : inv_index_add_ordered(t, r); }

/* The stored offer a level is filed under, or NULL. */
static struct offer *offer_of_level(struct table *t, const char *offer_id)
{
	return hidx_get_untracked(&t->siblings[REC_T_OFFER].by_id, offer_id, (uint32_t)strlen(offer_id));
}

/* A known count of the offer's levels (offer.h n_levels_p1) moved by one
 * (by: +1 or -1); an unknown one stays unknown, and one that cannot move
 * (past UINT16_MAX, or below none: a bug) becomes unknown.  Only test
 * builds stop on the bug: release builds keep their asserts, and a cache
 * that forgets is safe (the next walk counts again).  The offer's only
 * level (one_level) is the one that came (at: where it is stored) when
 * it had none; after any other move it is not known until a walk. */
static void levels_moved(struct table *t, const char *offer_id, int by, const struct row *at)
{
	struct offer *o = offer_of_level(t, offer_id);
	if (!o)
		return;
	o->one_level = by > 0 && o->n_levels_p1 == 1 ? at : NULL;
	if (!o->n_levels_p1)
		return;
#ifdef WM_TESTING
	assert(by > 0 || o->n_levels_p1 > 1);
#endif
	if ((by > 0 && o->n_levels_p1 == UINT16_MAX) || (by < 0 && o->n_levels_p1 <= 1))
		o->n_levels_p1 = 0;
	else
		o->n_levels_p1 = (uint16_t)(o->n_levels_p1 + by);
}

/* How many levels by_offer files under offer_id (shorter than
 * ID_MAX_LEN), and *first the first of them (NULL: none); UINT_MAX past
 * INV_LEVELS_PER_OFFER_MAX. */
static unsigned levels_filed(const struct inv_ext *e, const char *offer_id, const struct inv_level **first)
{
	uint8_t k[IDX_MAX_KEY];
	uint32_t pl = key_join(k, offer_id, NULL, "", 0);
	*first = NULL;
	struct oidx_iter it;
	unsigned seen = 0;
	for (int ok = oidx_seek_ge(&e->by_offer, k, pl, &it); ok && oidx_iter_has_prefix(&it, k, pl);
	     ok = oidx_next(&it)) {
		if (seen == INV_LEVELS_PER_OFFER_MAX)
			return UINT_MAX;
		if (!seen++)
			*first = oidx_iter_val(&it);
	}
	return seen;
}

/* An offer's count (offer.h n_levels_p1) and only level from what was
 * filed under it: levels (past INV_LEVELS_PER_OFFER_MAX, UINT_MAX
 * included: too many to count, unknown), the first. */
static void levels_set(struct offer *o, unsigned levels, const struct inv_level *first)
{
	int known = levels <= INV_LEVELS_PER_OFFER_MAX;
	_Static_assert(INV_LEVELS_PER_OFFER_MAX < UINT16_MAX, "a count of levels fits n_levels_p1");
	o->n_levels_p1 = known ? (uint16_t)(levels + 1) : 0;
	o->one_level = known && levels == 1 ? &first->row : NULL;
}

/* offer_count_levels_with's counter: the levels of an offer stored
 * without a predecessor -- none, unless they came first (a level
 * replicated, or restored, before its offer). */
static void inv_count_new_offer(struct table *offers, struct offer *o)
{
	const struct table *t = &offers->siblings[REC_T_INVENTORY];
	const struct inv_level *first = NULL;
	unsigned levels = UINT_MAX;
	if (!t->ordered_later && o->row.id_len < ID_MAX_LEN)
		levels = levels_filed(ext(t), o->row.id, &first);
	levels_set(o, levels, first);
}

/* The offer part of the by_offer key at `it` (offer NUL id) into out
 * (ID_MAX_LEN bytes; a longer one, which no offer id is, cut there): its
 * length. */
static uint32_t filed_offer(struct oidx_iter *it, char *out)
{
	uint32_t kl;
	const char *key = oidx_iter_key(it, &kl);
	const char *nul = memchr(key, 0, kl);
	uint32_t n = nul ? (uint32_t)(nul - key) : kl;
	n = n < ID_MAX_LEN ? n : ID_MAX_LEN;
	memcpy(out, key, n);
	return n;
}

/* loaded: the counts are kept from now on (counted; a new offer:
 * inv_count_new_offer), and the loaded offers, not counted while they
 * loaded, are counted by inv_count_step from the first. */
static void inv_loaded(struct table *t)
{
	struct table *offers = t->siblings ? &t->siblings[REC_T_OFFER] : NULL;
	if (!offers || !offers->ops || t->ordered_later || offers->ordered_later)
		return;
	ext(t)->counted = 1;
	ext(t)->counting = table_count(offers) > 0;
	ext(t)->count_from_len = 0;
	ext(t)->count_steps = 0;
	ext(t)->count_offers = 0;
	offer_count_levels_with(offers, inv_count_new_offer);
}

/*
 * The count of the loaded offers' levels, about `budget` offers and levels
 * a call (the tick's: INV_COUNT_STEP).
 * Each step is a merge of two walks in the same order from where the last
 * one stopped -- the offers by id, by_offer (offer NUL id), compared in
 * the leaves -- writing one cache line of each offer (offer.h).  Counting
 * while the levels load would be a hash probe of the offer per level, and
 * all of them at once at the load's end ~31 ms more of a ~0.9 s recovery
 * (bench_scale load: 1M offers, 500,000 levels), so the restart does not
 * wait for it: the tick works it off, ~1 ms a step.  What changes between
 * two steps is kept exact (counted), or is an offer not counted yet, which
 * a quote's walk counts as before.  Without the count, an offer no quote
 * had walked (after a restart: all of them; in a big catalogue: most, for
 * long) cost each quote that met it a descent of by_offer, cache misses
 * in a row, to find its level or that it has none: bench_scale, PGO=0,
 * 1-line quote to DE, the candidates' part of a big catalogue's quote
 * 6,400 cycles cold against 3,000 counted (the small catalogue's, quoted
 * over and over, 2,950).
 */
int inv_count_step(struct shard *sh, unsigned budget)
{
	struct table *t = &sh->tables[REC_T_INVENTORY];
	if (!t->ops || !ext(t)->counting)
		return 0;
	struct inv_ext *e = ext(t);
	struct table *offers = &t->siblings[REC_T_OFFER];
	const uint64_t probes = idx_probes; /* no request's reads */
	struct oidx_iter li, oi;
	char lid[ID_MAX_LEN]; /* the offer of the level at li */
	const char *from = e->count_from_len ? e->count_from : NULL; /* NULL: from the first */
	int ok = oidx_seek_ge(&offers->by_order, from, e->count_from_len, &oi);
	int lok = oidx_seek_ge(&e->by_offer, from, e->count_from_len, &li);
	uint32_t ll = lok ? filed_offer(&li, lid) : 0;
	/* levels: of the offer at oi, so far; work: offers and levels met.  A
	 * step ends between two offers once it has done `budget`, and counts
	 * one offer at least, however many levels it has: so each step moves
	 * on */
	unsigned levels = 0, work = 0, counted = 0;
	const struct inv_level *first = NULL;
	for (; ok && !(work >= budget && counted && !levels); work++) {
		int c = lok ? oidx_iter_cmp(&oi, lid, ll) : -1;
		if (c < 0) { /* the offer's levels are all counted */
			/* a cache, not a value: the row is the table's */
			levels_set(oidx_iter_val(&oi), levels, first);
			levels = 0;
			first = NULL;
			counted++;
			ok = oidx_next(&oi);
			continue;
		}
		if (c == 0 && !levels++) /* c > 0: a level of an offer not stored here */
			first = oidx_iter_val(&li);
		if ((lok = oidx_next(&li)))
			ll = filed_offer(&li, lid);
	}
	uint32_t kl = 0;
	const void *next = ok ? oidx_iter_key(&oi, &kl) : NULL;
	e->counting = next && kl < ID_MAX_LEN;
	e->count_from_len = (uint8_t)(e->counting ? kl : 0);
	if (e->counting)
		memcpy(e->count_from, next, kl);
	idx_probes = probes;
	e->count_steps++;
	e->count_offers += counted;
	if (!e->counting)
		log_info("msg=\"offers' inventory levels counted\" offers=%llu steps=%u",
			 (unsigned long long)e->count_offers, e->count_steps);
	return e->counting;
}

/* changed: a level added, removed, or moved to another offer moves the
 * known counts of the offers it left and joined; a new version of a level
 * stored in a new block (not over the old one in place) takes the old
 * block's place as its offer's only level. */
static void inv_changed(struct table *t, const struct row *old, struct row *r, const struct row *at)
{
	const struct inv_level *a = (const struct inv_level *)old, *b = (const struct inv_level *)r;
	if (!ext(t)->counted || !t->siblings)
		return;
	if (a && b && !strcmp(a->offer_id, b->offer_id)) {
		struct offer *o = at != old ? offer_of_level(t, a->offer_id) : NULL;
		if (o && o->one_level == old)
			o->one_level = at;
		return;
	}
	if (a)
		levels_moved(t, a->offer_id, -1, NULL);
	if (b)
		levels_moved(t, b->offer_id, +1, at);
}

static void del_if(struct oidx *x, const uint8_t *k, uint32_t kl, const void *row)
{
	if (oidx_get(x, k, kl) == row)
		oidx_del(x, k, kl);
}

static void inv_index_del(struct table *t, struct row *r)
{
	struct inv_level *l = (struct inv_level *)r;
	struct inv_ext *e = ext(t);
	uint8_t k[IDX_MAX_KEY];
	del_if(&e->by_offer, k, key_join(k, l->offer_id, NULL, r->id, r->id_len), l);
	del_if(&e->by_location, k, key_join(k, l->location_id, l->offer_id, r->id, r->id_len), l);
	del_if(&e->by_owner, k, key_join(k, l->owner_id, NULL, r->id, r->id_len), l);
}

/* index_keys_same: every key inv_index_add files a level under is made of
 * its natural key, offer, location, owner and id (the same in both). */
static int inv_keys_same(const struct row *a, const struct row *b)
{
	const struct inv_level *x = (const struct inv_level *)a, *y = (const struct inv_level *)b;
	return !memcmp(level_nkey(x), level_nkey(y), INV_NKEY_LEN) && !strcmp(x->owner_id, y->owner_id);
}

const struct table_ops inventory_table_ops = {
	.rec_table = REC_T_INVENTORY,
	.name = "inventory_level",
	.row_size = sizeof(struct inv_level),
	.decode = inv_decode,
	.decode_pure = 1, /* recovery may build its rows off the loop (table.h) */
	.decode_typed = inv_decode_typed,
	.release = inv_release,
	.typed_same = inv_typed_same,
	.typed_size = sizeof(struct lvl_vals),
	.image = inv_image,
	.from_image = inv_from_image,
	.render = inv_render, /* a level keeps no document (table.h) */
	.index_add = inv_index_add,
	.index_del = inv_index_del,
	.index_add_ordered = inv_index_add_ordered,
	.index_add_first = 1, /* sets, and deletes only what points at the row */
	.index_keys_same = inv_keys_same,
	.changed = inv_changed,
	.loaded = inv_loaded,
	.init = inv_init,
	.fini = inv_fini,
};

const struct inv_level *inv_level_get(struct shard *sh, const char *id, size_t len)
{
	return (const struct inv_level *)table_get(&sh->tables[REC_T_INVENTORY], id, len);
}

/* ---- the hold table ----------------------------------------------------------------- */

/* A hold's values: what its document says and its row holds. */
struct hold_vals {
	char level_id[ID_MAX_LEN];
	int64_t qty;
	int state;                               /* enum hold_state */
	char created_at[32];
	char txn[INV_TXN_ID_MAX + 1];
	int64_t returned, received;
};

/* The hold row from its values (decoded or the writer's own).  0 or -1. */
static int hold_fill(struct hold *h, const struct hold_vals *v)
{
	if (!v->level_id[0] || v->state < 0 || v->state >= HOLD_N_STATE || v->qty < 1 || v->qty > INV_QTY_MAX ||
	    v->received < 0 || v->received > v->returned || v->returned > v->qty ||
	    (v->returned && v->state != HS_CONSUMED) ||
	    typed_str(h->level_id, sizeof(h->level_id), v->level_id) ||
	    typed_str(h->created_at, sizeof(h->created_at), v->created_at) || typed_str(h->txn, sizeof(h->txn), v->txn))
		return -1;
	h->qty = v->qty;
	h->state = (uint8_t)v->state;
	h->returned = v->returned;
	h->received = v->received;
	h->prepared_mono_ms = ev_clock_us() / 1000;
	return 0;
}

static int hold_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct hold_vals v = {.state = -1};
	fld_doc_str(doc, "level_id", v.level_id, sizeof(v.level_id));
	fld_doc_str(doc, "created_at", v.created_at, sizeof(v.created_at));
	fld_enum(NULL, doc, "state", NULL, hold_state_names, &v.state);
	if (doc_qty(doc, "qty", &v.qty) || fld_doc_str(doc, "txn", v.txn, sizeof(v.txn)) ||
	    (json_get(doc, "returned") && doc_qty(doc, "returned", &v.returned)) ||
	    (json_get(doc, "received") && doc_qty(doc, "received", &v.received)))
		return -1;
	return hold_fill((struct hold *)r, &v);
}

/* The typed fast path (table.h): the hold from the values stage_hold wrote
 * its document from. */
static int hold_decode_typed(struct table *t, struct row *r, const void *typed)
{
	(void)t;
	return hold_fill((struct hold *)r, typed);
}

/* Test builds' check of the fast path: equal but for the load time. */
static int hold_same(const struct row *a, const struct row *b)
{
	_Static_assert(offsetof(struct hold, prepared_mono_ms) + sizeof(uint64_t) == sizeof(struct hold),
		       "the load time is the hold's last field");
	size_t from = sizeof(struct row), to = offsetof(struct hold, prepared_mono_ms);
	return !memcmp((const char *)a + from, (const char *)b + from, to - from);
}

/*
 * The in-doubt index: the PREPARED holds of cross-shard transactions, by
 * "txn NUL hold id" (txn_part.c walks it for time-outs and the gauge), and
 * every transaction hold by the same key (the commit and abort of a
 * transaction find its holds there).
 */
struct hold_ext {
	struct oidx in_doubt;    /* PREPARED txn holds */
	struct oidx by_txn;      /* every txn hold */
};

static struct hold_ext *hext(const struct table *t) { return t->ext; }

static int hold_init(struct table *t)
{
	struct hold_ext *e = calloc(1, sizeof(*e));
	if (!e)
		return -1;
	oidx_init(&e->in_doubt);
	oidx_init(&e->by_txn);
	t->ext = e;
	return 0;
}

static void hold_fini(struct table *t)
{
	struct hold_ext *e = hext(t);
	if (!e)
		return;
	oidx_free(&e->in_doubt);
	oidx_free(&e->by_txn);
	free(e);
	t->ext = NULL;
}

static int hold_index_add(struct table *t, struct row *r)
{
	struct hold *h = (struct hold *)r;
	if (!h->txn[0])
		return 0;
	uint8_t k[IDX_MAX_KEY];
	uint32_t kl = key_join(k, h->txn, NULL, r->id, r->id_len);
	if (oidx_set(&hext(t)->by_txn, k, kl, h))
		return -1;
	return h->state == HS_PREPARED ? oidx_set(&hext(t)->in_doubt, k, kl, h) : 0;
}

static void hold_index_del(struct table *t, struct row *r)
{
	struct hold *h = (struct hold *)r;
	if (!h->txn[0])
		return;
	uint8_t k[IDX_MAX_KEY];
	uint32_t kl = key_join(k, h->txn, NULL, r->id, r->id_len);
	del_if(&hext(t)->by_txn, k, kl, h);
	del_if(&hext(t)->in_doubt, k, kl, h);
}

const struct table_ops hold_table_ops = {
	.rec_table = REC_T_HOLD,
	.name = "hold",
	.row_size = sizeof(struct hold),
	.decode = hold_decode,
	.decode_pure = 1, /* recovery may build its rows off the loop (table.h) */
	.decode_typed = hold_decode_typed,
	.typed_size = sizeof(struct hold_vals),
	.typed_same = hold_same,
	.init = hold_init,
	.fini = hold_fini,
	.index_add = hold_index_add,
	.index_del = hold_index_del,
	.index_add_first = 1, /* sets, and deletes only what points at the row */
};

const struct hold *hold_in_doubt_next(struct shard *sh, const char *after_txn)
{
	struct hold_ext *e = hext(&sh->tables[REC_T_HOLD]);
	uint8_t k[IDX_MAX_KEY];
	uint32_t kl = 0;
	if (after_txn[0]) {
		/* past every key of after_txn: "after_txn" NUL 0xff */
		kl = key_join(k, after_txn, NULL, "\xff", 1);
	}
	struct oidx_iter it;
	if (!oidx_seek_ge(&e->in_doubt, kl ? k : NULL, kl, &it))
		return NULL;
	return oidx_iter_val(&it);
}

const struct hold *hold_of_txn(struct shard *sh, const char *txn, size_t *pos)
{
	struct hold_ext *e = hext(&sh->tables[REC_T_HOLD]);
	uint8_t k[IDX_MAX_KEY];
	uint32_t pl = key_join(k, txn, NULL, "", 0), kl;
	struct oidx_iter it;
	int ok = oidx_seek_ge(&e->by_txn, k, pl, &it);
	for (size_t i = 0; ok && i < *pos; i++)
		ok = oidx_next(&it);
	if (!ok)
		return NULL;
	const uint8_t *key = oidx_iter_key(&it, &kl);
	if (kl < pl || memcmp(key, k, pl))
		return NULL;
	(*pos)++;
	return oidx_iter_val(&it);
}

uint64_t hold_in_doubt_count(struct shard *sh)
{
	return oidx_count(&hext(&sh->tables[REC_T_HOLD])->in_doubt);
}

const struct hold *hold_get(struct shard *sh, const char *id, size_t len)
{
	return (const struct hold *)table_get(&sh->tables[REC_T_HOLD], id, len);
}

/* ---- staging a level change (inside the caller's transaction) ------------------------ */

/* Rewrite the offer's qty_available to the sum of its sellable levels'
 * atp, with level nv's new values standing in for its stored ones. */
/* The ATP of every sellable level of offer_id in this shard's table (its
 * own levels and, in a cluster, the replicas of other shards' levels),
 * skipping level skip (NULL: none), capped at OFFER_QTY_MAX. */
static int64_t offer_levels_atp(struct shard *sh, const char *offer_id, const char *skip, int64_t sum)
{
	uint8_t k[IDX_MAX_KEY];
	uint32_t pl = key_join(k, offer_id, NULL, "", 0);
	struct oidx_iter it;
	const struct oidx *x = &ext(&sh->tables[REC_T_INVENTORY])->by_offer;
	size_t sl = skip ? strlen(skip) : 0;
	for (int ok = oidx_seek_ge(x, k, pl, &it); ok; ok = oidx_next(&it)) {
		if (!oidx_iter_has_prefix(&it, k, pl))
			break;
		const struct inv_level *l = oidx_iter_val(&it);
		if (l->condition == IC_SELLABLE && !(skip && l->row.id_len == sl && !memcmp(l->row.id, skip, sl)))
			sum += inv_atp(l);
	}
	return sum > OFFER_QTY_MAX ? OFFER_QTY_MAX : sum;
}

static int stage_offer_qty(struct shard *sh, const struct lvl_vals *nv)
{
	const struct offer *o = offer_get(sh, nv->offer_id, strlen(nv->offer_id));
	if (!o)
		return 0; /* levels outlive nothing: offers are never deleted; unit tests run without one */
	int64_t sum = offer_levels_atp(sh, nv->offer_id, nv->id, nv->condition == IC_SELLABLE ? vals_atp(nv) : 0);
	return sum == o->qty ? 0 : offer_stage_qty(sh, o, sum);
}

int inv_restage_offer_qty(struct shard *sh, const char *offer_id)
{
	const struct offer *o = offer_get(sh, offer_id, strlen(offer_id));
	if (!o)
		return 0;
	int64_t sum = offer_levels_atp(sh, offer_id, NULL, 0);
	if (sum == o->qty)
		return 0;
	return offer_stage_qty(sh, o, sum) ? -1 : 1;
}

int inv_location_next_offer(struct shard *sh, const char *location_id, const char *after, char *out)
{
	uint8_t k[IDX_MAX_KEY];
	if (strlen(location_id) >= ID_MAX_LEN || strlen(after) >= ID_MAX_LEN)
		return 0;
	uint32_t pl = key_join(k, location_id, NULL, "", 0), kl;
	uint32_t sl = pl;
	if (after[0]) {
		/* past every key "location NUL after NUL ...": after's keys continue
		 * with NUL, any longer offer id with a byte above 0x01 */
		sl = key_join(k, location_id, NULL, after, strlen(after));
		k[sl++] = 1;
	}
	struct oidx_iter it;
	if (!oidx_seek_ge(&ext(&sh->tables[REC_T_INVENTORY])->by_location, k, sl, &it))
		return 0;
	const uint8_t *key = oidx_iter_key(&it, &kl);
	if (kl < pl || memcmp(key, k, pl))
		return 0;
	const struct inv_level *l = oidx_iter_val(&it);
	snprintf(out, ID_MAX_LEN, "%s", l->offer_id);
	return 1;
}

int64_t inv_location_offer_atp(struct shard *sh, const char *location_id, const char *offer_id)
{
	uint8_t k[IDX_MAX_KEY];
	if (strlen(location_id) >= ID_MAX_LEN || strlen(offer_id) >= ID_MAX_LEN)
		return 0;
	uint32_t pl = key_join(k, location_id, offer_id, "", 0);
	int64_t sum = 0;
	struct oidx_iter it;
	for (int ok = oidx_seek_ge(&ext(&sh->tables[REC_T_INVENTORY])->by_location, k, pl, &it); ok;
	     ok = oidx_next(&it)) {
		if (!oidx_iter_has_prefix(&it, k, pl))
			break;
		const struct inv_level *l = oidx_iter_val(&it);
		if (l->condition == IC_SELLABLE)
			sum += inv_atp(l);
	}
	return sum;
}

/* Is the level at a location of the set (NULL: every location)? */
static int level_in_set(const struct inv_level *l, const struct inv_loc_set *at)
{
	if (!at)
		return 1;
	for (unsigned i = 0; i < at->n; i++)
		if (!strcmp(at->ids[i], l->location_id))
			return 1;
	return 0;
}

unsigned inv_offer_sellable(struct shard *sh, const char *offer_id, const struct inv_level **out, unsigned max,
			    int64_t *atp_sum)
{
	return inv_offer_sellable_at(sh, offer_id, NULL, out, max, atp_sum);
}

static const struct inv_atp_override *plan_override; /* inv_plan_override */

void inv_plan_override(const struct inv_atp_override *o) { plan_override = o; }

int64_t inv_plan_atp(const struct inv_level *l)
{
	int64_t atp = inv_atp(l);
	for (unsigned i = 0; plan_override && i < plan_override->n; i++)
		if (!strcmp(plan_override->v[i].level, l->row.id) && plan_override->v[i].atp < atp)
			atp = plan_override->v[i].atp;
	return atp;
}

/* One level l of an offer, as the walk below takes each: into *atp_sum
 * and, by ATP, into out[0..max) of the n sellable ones so far; returns the
 * new n. */
static unsigned sellable_take(const struct inv_level *l, const struct inv_loc_set *at, const struct inv_level **out,
			      unsigned max, unsigned n, int64_t *atp_sum)
{
	int64_t atp = inv_plan_atp(l);
	if (l->condition != IC_SELLABLE || atp <= 0 || !level_in_set(l, at))
		return n;
	if (atp_sum)
		*atp_sum += atp; /* <= 1000 levels x 10^8: no overflow */
	/* insertion into out[], most ATP first, index (level id) order on ties */
	unsigned pos = n < max ? n : max;
	while (pos > 0 && inv_plan_atp(out[pos - 1]) < atp)
		pos--;
	if (pos >= max)
		return n;
	unsigned last = n < max ? n : max - 1;
	for (unsigned j = last; j > pos; j--)
		out[j] = out[j - 1];
	out[pos] = l;
	return n < max ? n + 1 : n;
}

/* inv_offer_sellable_at's walk; *levels (may be NULL) gets how many
 * levels the offer has, sellable or not, or UINT_MAX when the walk stopped
 * at INV_LEVELS_PER_OFFER_MAX (there may be more), and *first (may be
 * NULL) the first of them (NULL: none). */
static unsigned sellable_walk(struct shard *sh, const char *offer_id, const struct inv_loc_set *at,
			      const struct inv_level **out, unsigned max, int64_t *atp_sum, unsigned *levels,
			      const struct inv_level **first)
{
	uint8_t k[IDX_MAX_KEY];
	if (levels)
		*levels = UINT_MAX;
	if (first)
		*first = NULL;
	unsigned n = 0;
	if (atp_sum)
		*atp_sum = 0;
	if (strlen(offer_id) >= ID_MAX_LEN)
		return 0;
	uint32_t pl = key_join(k, offer_id, NULL, "", 0);
	struct oidx_iter it;
	unsigned seen = 0;
	const struct oidx *x = &ext(&sh->tables[REC_T_INVENTORY])->by_offer;
	for (int ok = oidx_seek_ge(x, k, pl, &it); ok && seen < INV_LEVELS_PER_OFFER_MAX; ok = oidx_next(&it), seen++) {
		if (!oidx_iter_has_prefix(&it, k, pl))
			break;
		const struct inv_level *l = oidx_iter_val(&it);
		/* the row's lines at once: its stock now, its location and owner
		 * when a quote reads them (cand_add); a level spans ~4 lines, and
		 * in a big catalogue each is a cache miss.  bench_scale 5-line
		 * p50, big: 31.8 -> 30.9 and 33.4 -> 32.8 us (small unchanged) */
		table_row_prefetch_body(&sh->tables[REC_T_INVENTORY], &l->row);
		if (first && !seen)
			*first = l;
		n = sellable_take(l, at, out, max, n, atp_sum);
	}
	if (levels && seen < INV_LEVELS_PER_OFFER_MAX)
		*levels = seen;
	return n;
}

unsigned inv_offer_sellable_at(struct shard *sh, const char *offer_id, const struct inv_loc_set *at,
			       const struct inv_level **out, unsigned max, int64_t *atp_sum)
{
	return sellable_walk(sh, offer_id, at, out, max, atp_sum, NULL, NULL);
}

#ifdef WM_TESTING
/* Test builds: what the shortcut of inv_offer_sellable_of found (n levels,
 * *atp_sum) is what the walk finds, and the cached level is the offer's
 * only one, as stored. */
static void one_level_check(struct shard *sh, const struct offer *o, unsigned n, const struct inv_loc_set *at,
			    unsigned max, const int64_t *atp_sum)
{
	const uint64_t probes = idx_probes; /* the check's walk is no read of the request's */
	const struct inv_level *walked[2], *first;
	unsigned levels;
	int64_t sum;
	unsigned wn = sellable_walk(sh, o->row.id, at, walked, max < 2 ? max : 2, &sum, &levels, &first);
	idx_probes = probes;
	assert(levels == o->n_levels_p1 - 1u);
	assert(!o->one_level ||
	       (levels == 1 && &first->row == o->one_level &&
		hidx_get_untracked(&sh->tables[REC_T_INVENTORY].by_id, first->row.id, first->row.id_len) == first));
	assert(wn == n);
	assert(!atp_sum || sum == *atp_sum);
}
#endif

unsigned inv_offer_sellable_of(struct shard *sh, const struct offer *o, const struct inv_loc_set *at,
			       const struct inv_level **out, unsigned max, int64_t *atp_sum)
{
	if (o->n_levels_p1 == 1 || o->one_level) { /* known to have none, or which one */
		if (atp_sum)
			*atp_sum = 0;
		const struct inv_level *l = (const struct inv_level *)o->one_level;
		/* what the answer reveals (table.h's read set): the level, or that
		 * the offer has none -- as of the table's last change */
		table_reads_note(l ? l->row.lsn : sh->tables[REC_T_INVENTORY].chg_lsn);
		unsigned n = l ? sellable_take(l, at, out, max, 0, atp_sum) : 0;
#ifdef WM_TESTING
		one_level_check(sh, o, n, at, max, atp_sum);
#endif
		return n;
	}
	struct table *t = &sh->tables[REC_T_INVENTORY];
	unsigned levels;
	const struct inv_level *first;
	unsigned n = sellable_walk(sh, o->row.id, at, out, max, atp_sum, &levels, &first);
	if (levels < UINT16_MAX && !t->ordered_later && (!o->n_levels_p1 || o->n_levels_p1 == levels + 1)) {
		/* a cache, not a value: the row is the table's (never const) */
		struct offer *w = (struct offer *)o;
		w->n_levels_p1 = (uint16_t)(levels + 1);
		w->one_level = levels == 1 ? &first->row : NULL;
		ext(t)->counted = 1;
	}
	return n;
}

const struct inv_level *inv_offer_best_level(struct shard *sh, const char *offer_id)
{
	const struct inv_level *best = NULL;
	return inv_offer_sellable(sh, offer_id, &best, 1, NULL) ? best : NULL;
}

/*
 * Stage level nv (old: its stored version, NULL on create) with its
 * stock.changed event and the offer's qty_available into the open
 * transaction; the level document is left in doc.  0 or -1.
 */
static int stage_level(struct shard *sh, struct lvl_vals *nv, const struct inv_level *old, const char *cause,
		       const char *hold_id, struct buf *doc)
{
	fmt_rfc3339_ms(nv->updated_at, wall_ms());
	if (!nv->created_at[0])
		memcpy(nv->created_at, nv->updated_at, sizeof(nv->created_at));
	struct buf ev;
	buf_init_hint(&ev, REC_MAX_VAL, BUF_DOC_HINT);
	int bad = lvl_put(doc, nv) || BUF_LIT(&ev, "{\"level_id\":") || jb_str(&ev, nv->id) ||
		  BUF_LIT(&ev, ",\"offer_id\":") || jb_str(&ev, nv->offer_id) || BUF_LIT(&ev, ",\"location_id\":") ||
		  jb_str(&ev, nv->location_id) || BUF_LIT(&ev, ",\"owner_entity_id\":") || jb_str(&ev, nv->owner_id) ||
		  BUF_LIT(&ev, ",\"condition\":") || jb_str(&ev, inv_condition_names[nv->condition]) ||
		  BUF_LIT(&ev, ",\"cause\":") || jb_str(&ev, cause) || BUF_LIT(&ev, ",\"hold_id\":") ||
		  jb_str_or_null(&ev, hold_id) || BUF_LIT(&ev, ",\"old\":");
	if (old) {
		struct lvl_vals ov;
		lvl_from_row(old, &ov);
		bad = bad || buf_putc(&ev, '{') || qtys_put(&ev, &ov) || buf_putc(&ev, '}');
	} else
		bad = bad || BUF_LIT(&ev, "null");
	bad = bad || BUF_LIT(&ev, ",\"new\":{") || qtys_put(&ev, nv) || BUF_LIT(&ev, "}}");
	/* test builds: inv_lose_stock_event drops an API write's event, a bug
	 * the whole-cluster checker must see (engine/check.c: the history) */
	int lose = !hold_id && ERRINJ("inv_lose_stock_event");
	int rc = bad || txn_put_typed(sh, REC_T_INVENTORY, nv->id, strlen(nv->id), doc->data, doc->len, nv) ||
				 (!lose && txn_event(sh, "stock.changed", nv->owner_id, ev.data, ev.len)) ||
				 stage_offer_qty(sh, nv)
			 ? -1
			 : 0;
	buf_free(&ev);
	return rc;
}

/* ---- holds ------------------------------------------------------------------------- */

static int hold_id_ok(const char *id)
{
	size_t n = id ? strlen(id) : 0;
	if (n < 1 || n > INV_HOLD_ID_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char ch = id[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      strchr("_.:-", ch)))
			return 0;
	}
	return 1;
}

static int stage_hold_back(struct shard *sh, const char *id, const char *level_id, int64_t qty, int state,
			   const char *created_at, const char *txn, const char *event, int64_t returned, int64_t received)
{
	char now[INV_TS_MAX];
	fmt_rfc3339_ms(now, wall_ms());
	struct buf doc;
	buf_init_hint(&doc, REC_MAX_VAL, BUF_DOC_HINT);
	struct jw w;
	jw_init(&w, &doc);
	jw_obj_begin(&w);
	jw_kstr(&w, "id", id);
	jw_kstr(&w, "level_id", level_id);
	jw_kint(&w, "qty", qty);
	jw_kstr(&w, "state", hold_state_names[state]);
	jw_kstr(&w, "created_at", created_at ? created_at : now);
	jw_kstr(&w, "updated_at", now);
	if (txn && txn[0])
		jw_kstr(&w, "txn", txn);
	if (returned) {
		jw_kint(&w, "returned", returned);
		jw_kint(&w, "received", received);
	}
	jw_obj_end(&w);
	struct hold_vals hv = {.qty = qty, .state = state, .returned = returned, .received = returned ? received : 0};
	int fits = !typed_str(hv.level_id, sizeof(hv.level_id), level_id) &&
		   !typed_str(hv.created_at, sizeof(hv.created_at), created_at ? created_at : now) &&
		   !typed_str(hv.txn, sizeof(hv.txn), txn ? txn : "");
	const struct inv_level *l = inv_level_get(sh, level_id, strlen(level_id));
	int rc = w.err ||
				 (fits ? txn_put_typed(sh, REC_T_HOLD, id, strlen(id), doc.data, doc.len, &hv)
				       : txn_put(sh, REC_T_HOLD, id, strlen(id), doc.data, doc.len)) ||
				 (event && txn_event(sh, event, l ? l->owner_id : NULL, doc.data, doc.len))
			 ? -1
			 : 0;
	buf_free(&doc);
	return rc;
}

/* A hold with nothing returned. */
static int stage_hold(struct shard *sh, const char *id, const char *level_id, int64_t qty, int state,
		      const char *created_at, const char *txn, const char *event)
{
	return stage_hold_back(sh, id, level_id, qty, state, created_at, txn, event, 0, 0);
}

int hold_place(struct shard *sh, const char *level_id, int64_t qty, const char *hold_id)
{
	return hold_place_txn(sh, level_id, qty, hold_id, "");
}

int hold_place_txn(struct shard *sh, const char *level_id, int64_t qty, const char *hold_id, const char *txn)
{
	if (!hold_id_ok(hold_id) || !level_id || qty < 1 || qty > INV_QTY_MAX || strlen(txn) > INV_TXN_ID_MAX)
		return HOLD_E_ARG;
	const struct hold *h = hold_get(sh, hold_id, strlen(hold_id));
	if (h)
		return !strcmp(h->level_id, level_id) && h->qty == qty && !strcmp(h->txn, txn) ? HOLD_OK
														 : HOLD_E_CONFLICT;
	const struct inv_level *l = inv_level_get(sh, level_id, strlen(level_id));
	if (!l)
		return HOLD_E_NO_LEVEL;
	if (l->condition != IC_SELLABLE)
		return HOLD_E_NOT_SELLABLE;
	if (inv_atp(l) < qty)
		return HOLD_E_SHORT;
	struct lvl_vals nv;
	lvl_from_row(l, &nv);
	nv.reserved += qty; /* <= on_hand <= INV_QTY_MAX since atp >= qty */
	struct buf doc;
	buf_init_hint(&doc, REC_MAX_VAL, BUF_DOC_HINT);
	txn_begin(sh);
	int rc = stage_hold(sh, hold_id, level_id, qty, HS_PREPARED, NULL, txn, NULL) ||
				 stage_level(sh, &nv, l, "hold_placed", hold_id, &doc) || !txn_commit(sh)
			 ? HOLD_E_STORE
			 : HOLD_OK;
	if (rc)
		txn_abort(sh);
	buf_free(&doc);
	return rc;
}

/* hold_moves[from][to]: what a move does to the level (0 = not allowed). */
static const struct hold_move {
	uint8_t ok;
	int8_t d_reserved, d_allocated; /* times qty */
	const char *cause, *event;      /* stock.changed cause; extra event or NULL */
} hold_moves[HOLD_N_STATE][HOLD_N_STATE] = {
	[HS_PREPARED][HS_COMMITTED] = {1, -1, +1, "hold_committed", "stock.reserved"},
	[HS_PREPARED][HS_RELEASED] = {1, -1, 0, "hold_released", NULL},
	[HS_COMMITTED][HS_RELEASED] = {1, 0, -1, "hold_released", NULL},
	[HS_COMMITTED][HS_CONSUMED] = {1, 0, -1, "hold_consumed", NULL},
};

/*
 * Stage the move of hold_id to state `to` (hold_moves) and its level into
 * the OPEN transaction.  HOLD_OK (also when the hold already is in `to`:
 * nothing staged, *moved = 0), or a HOLD_E_ code (nothing that matters
 * staged: the caller aborts).  *moved = 1 when something was staged.
 */
static int hold_stage_move(struct shard *sh, const char *hold_id, int to, int *moved)
{
	const struct hold *h = hold_id_ok(hold_id) ? hold_get(sh, hold_id, strlen(hold_id)) : NULL;
	*moved = 0;
	if (!h)
		return HOLD_E_NOT_FOUND;
	if (h->state == to)
		return HOLD_OK;
	const struct hold_move *m = &hold_moves[h->state][to];
	if (!m->ok)
		return HOLD_E_STATE;
	const struct inv_level *l = inv_level_get(sh, h->level_id, strlen(h->level_id));
	if (!l)
		return HOLD_E_STORE; /* levels are never deleted: a broken invariant */
	struct lvl_vals nv;
	lvl_from_row(l, &nv);
	nv.reserved += m->d_reserved * h->qty;
	nv.allocated += m->d_allocated * h->qty;
	if (to == HS_CONSUMED)
		nv.on_hand -= h->qty; /* the units leave the building */
	if (nv.reserved < 0 || nv.allocated < 0 || nv.allocated > INV_QTY_MAX || vals_atp(&nv) < 0)
		return HOLD_E_STORE;
	char level_id[ID_MAX_LEN], created[INV_TS_MAX], txn[INV_TXN_ID_MAX + 1];
	int64_t qty = h->qty;
	memcpy(level_id, h->level_id, sizeof(level_id));
	memcpy(created, h->created_at, sizeof(created));
	memcpy(txn, h->txn, sizeof(txn));
	struct buf doc;
	buf_init_hint(&doc, REC_MAX_VAL, BUF_DOC_HINT);
	int rc = stage_hold(sh, hold_id, level_id, qty, to, created, txn, m->event) ||
				 stage_level(sh, &nv, l, m->cause, hold_id, &doc)
			 ? HOLD_E_STORE
			 : HOLD_OK;
	buf_free(&doc);
	*moved = rc == HOLD_OK;
	return rc;
}

/* hold_stage_move in a transaction of its own. */
static int hold_move(struct shard *sh, const char *hold_id, int to)
{
	int moved;
	txn_begin(sh);
	int rc = hold_stage_move(sh, hold_id, to, &moved);
	if (rc == HOLD_OK && moved && !txn_commit(sh))
		rc = HOLD_E_STORE;
	if (rc != HOLD_OK || !moved)
		txn_abort(sh);
	return rc;
}

int hold_stage_return(struct shard *sh, const char *hold_id, int64_t returned, int64_t received, int *moved)
{
	const struct hold *h = hold_id_ok(hold_id) ? hold_get(sh, hold_id, strlen(hold_id)) : NULL;
	*moved = 0;
	if (!h)
		return HOLD_E_NOT_FOUND;
	if (h->state != HS_CONSUMED)
		return HOLD_E_STATE;
	if (received < 0 || received > returned || returned > h->qty)
		return HOLD_E_ARG;
	/* totals: what is at or below the hold's is already done */
	int64_t back = returned > h->returned ? returned : h->returned;
	int64_t in = received > h->received ? received : h->received;
	if (in > back)
		return HOLD_E_ARG;
	if (back == h->returned && in == h->received)
		return HOLD_OK;
	const struct inv_level *l = inv_level_get(sh, h->level_id, strlen(h->level_id));
	if (!l)
		return HOLD_E_STORE;
	struct lvl_vals nv;
	lvl_from_row(l, &nv);
	int64_t d_back = back - h->returned, d_in = in - h->received;
	nv.incoming += d_back - d_in; /* on the way, then arrived */
	nv.on_hand += d_in;
	if (nv.incoming < 0 || nv.incoming > INV_QTY_MAX || nv.on_hand > INV_QTY_MAX)
		return HOLD_E_STORE;
	char level_id[ID_MAX_LEN], created[INV_TS_MAX], txn[INV_TXN_ID_MAX + 1], id[INV_HOLD_ID_MAX + 1];
	int64_t qty = h->qty;
	memcpy(level_id, h->level_id, sizeof(level_id));
	memcpy(created, h->created_at, sizeof(created));
	memcpy(txn, h->txn, sizeof(txn));
	buf_strcpy(id, sizeof(id), hold_id);
	struct buf doc;
	buf_init_hint(&doc, REC_MAX_VAL, BUF_DOC_HINT);
	int rc = stage_hold_back(sh, id, level_id, qty, HS_CONSUMED, created, txn, NULL, back, in) ||
				 stage_level(sh, &nv, l, d_in ? "return_received" : "return_sent", id, &doc)
			 ? HOLD_E_STORE
			 : HOLD_OK;
	buf_free(&doc);
	*moved = rc == HOLD_OK;
	return rc;
}

int hold_stage_consume(struct shard *sh, const char *hold_id, int *moved)
{
	return hold_stage_move(sh, hold_id, HS_CONSUMED, moved);
}

int hold_commit(struct shard *sh, const char *hold_id) { return hold_move(sh, hold_id, HS_COMMITTED); }
int hold_release(struct shard *sh, const char *hold_id) { return hold_move(sh, hold_id, HS_RELEASED); }
int hold_consume(struct shard *sh, const char *hold_id) { return hold_move(sh, hold_id, HS_CONSUMED); }

/* ---- HTTP: inventory ------------------------------------------------------------------ */

static const char *const inv_known[] = {"sku",	    "offer_id",	 "owner_entity_id", "location_id", "condition",
					"on_hand",  "incoming",	 "reserved",	    "allocated",   "atp",
					"id",	    "created_at", "updated_at",	    NULL};
static const char *const inv_service[] = {"id", "reserved", "allocated", "atp", "created_at", "updated_at", NULL};
static const char *const inv_identity[] = {"sku", "offer_id", "owner_entity_id", "location_id", "condition", NULL};

static void rule_members(struct api_ctx *c, const struct json_value *body, const char *const *names, const char *rule,
			 const char *msg)
{
	for (int i = 0; names[i]; i++)
		if (json_get(body, names[i]))
			api_field_error(c, names[i], rule, "%s", msg);
}

/* A quantity member: 0..INV_QTY_MAX, null refused. */
static void read_qty(struct api_ctx *c, const struct json_value *body, const char *name, int64_t *out)
{
	if (fld_int(c, body, name, NULL, 0, INV_QTY_MAX, out) == FLD_NULL)
		api_field_error(c, name, "required", "cannot be null");
}

/* May the location hold stock owned by owner: its own, or a fulfiller's. */
static int location_usable(struct shard *sh, const struct location *l, const char *owner)
{
	if (!strcmp(l->owner_id, owner))
		return 1;
	const struct partner *p = partner_get(sh, l->owner_id, strlen(l->owner_id));
	return p && (p->v.roles & ROLE_FULFILLER);
}

static int level_visible(struct api_ctx *c, const struct inv_level *l)
{
	if (api_owns(c, l->owner_id, strlen(l->owner_id)))
		return 1;
	const struct location *loc = location_get(c->sh, l->location_id, strlen(l->location_id));
	return loc && api_owns(c, loc->owner_id, strlen(loc->owner_id));
}

/* Count the offer's levels (stops at the bound), and find among them the
 * one at location_id in `condition` (*dup, NULL when none): the natural
 * key a level must not share.  A level past the bound is not looked at,
 * but then the count refuses the create anyway. */
static unsigned offer_levels(struct shard *sh, const char *offer_id, const char *location_id, int condition,
			     const struct inv_level **dup)
{
	uint8_t k[IDX_MAX_KEY];
	uint32_t pl = key_join(k, offer_id, NULL, "", 0);
	struct oidx_iter it;
	unsigned n = 0;
	*dup = NULL;
	for (int ok = oidx_seek_ge(&ext(&sh->tables[REC_T_INVENTORY])->by_offer, k, pl, &it);
	     ok && n < INV_LEVELS_PER_OFFER_MAX; ok = oidx_next(&it)) {
		if (!oidx_iter_has_prefix(&it, k, pl))
			break;
		const struct inv_level *l = oidx_iter_val(&it);
		if (!*dup && l->condition == condition && !strcmp(l->location_id, location_id))
			*dup = l;
		n++;
	}
	return n;
}

static void commit_level(struct api_ctx *c, struct lvl_vals *nv, const struct inv_level *old, const char *cause,
			 int status)
{
	struct buf doc;
	buf_init_hint(&doc, REC_MAX_VAL, BUF_DOC_HINT);
	txn_begin(c->sh);
	if (stage_level(c->sh, nv, old, cause, NULL, &doc) || !txn_commit(c->sh)) {
		txn_abort(c->sh);
		buf_free(&doc);
		api_error(c, 500, "commit_failed", "the inventory level could not be stored");
		return;
	}
	api_send_doc(c, status, doc.data, doc.len);
	buf_free(&doc);
}

static void inventory_create(struct api_ctx *c)
{
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	fld_reject_unknown(c, body, inv_known, NULL);
	rule_members(c, body, inv_service, "read_only", "is assigned by the service (holds and orders move it)");
	struct lvl_vals v;
	memset(&v, 0, sizeof(v));
	static const char *const required[] = {"sku", "offer_id", "location_id", NULL};
	for (int i = 0; required[i]; i++) {
		const struct json_value *m = json_get(body, required[i]);
		if (!m || m->type == JSON_NULL)
			api_field_error(c, required[i], "required", "is required");
	}
	if (fld_str(c, body, "sku", NULL, v.sku, INV_SKU_MAX) == FLD_SET) {
		for (const char *p = v.sku; *p; p++)
			if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			      strchr("._-", *p))) {
				api_field_error(c, "sku", "format", "letters, digits, '.', '_' and '-' only");
				break;
			}
	}
	char owner[ID_MAX_LEN] = "";
	int ro = fld_str(c, body, "owner_entity_id", NULL, owner, ID_MAX_LEN - 1);
	const struct offer *o = NULL;
	if (fld_str(c, body, "offer_id", NULL, v.offer_id, ID_MAX_LEN - 1) == FLD_SET) {
		o = offer_get(c->sh, v.offer_id, strlen(v.offer_id));
		if (!o || !api_owns(c, o->originator_id, strlen(o->originator_id))) {
			api_field_error(c, "offer_id", "exists", "no offer of yours with this id");
			o = NULL;
		} else if (o->status == OS_WITHDRAWN)
			api_field_error(c, "offer_id", "withdrawn", "a withdrawn offer takes no inventory");
		else {
			snprintf(v.owner_id, sizeof(v.owner_id), "%s", o->originator_id);
			if (ro == FLD_SET && strcmp(owner, o->originator_id))
				api_field_error(c, "owner_entity_id", "offer_owner", "the stock's owner is the offer's originator");
		}
	}
	if (fld_str(c, body, "location_id", NULL, v.location_id, ID_MAX_LEN - 1) == FLD_SET && o) {
		const struct location *l = location_get(c->sh, v.location_id, strlen(v.location_id));
		if (!l || !location_usable(c->sh, l, v.owner_id))
			api_field_error(c, "location_id", "usable",
					"no stock location with this id that the offer's originator may use");
		else if (l->status != LS_ACTIVE)
			api_field_error(c, "location_id", "active", "the location is inactive");
	}
	v.condition = IC_SELLABLE;
	if (fld_enum(c, body, "condition", NULL, inv_condition_names, &v.condition) == FLD_NULL)
		v.condition = IC_SELLABLE;
	read_qty(c, body, "on_hand", &v.on_hand);
	read_qty(c, body, "incoming", &v.incoming);
	if (c->n_errs) {
		api_validation_failed(c);
		return;
	}
	const struct inv_level *dup;
	unsigned levels = offer_levels(c->sh, v.offer_id, v.location_id, v.condition, &dup);
	if (dup) {
		char d[200];
		snprintf(d, sizeof(d), "level %.*s already holds this offer at this location in this condition",
			 (int)dup->row.id_len, dup->row.id);
		api_error(c, 409, "inventory_exists", d);
		return;
	}
	if (levels >= INV_LEVELS_PER_OFFER_MAX) {
		api_error(c, 409, "too_many_levels", "the offer has the maximum number of inventory levels");
		return;
	}
	{
		/* DESIGN.md 2: the id embeds its location's country ("inv_FR_...") */
		const struct location *lc = location_get(c->sh, v.location_id, strlen(v.location_id));
		if (!lc || !id_new_country(&c->sh->ids, "inv", lc->country, v.id))
			id_new(&c->sh->ids, "inv", v.id);
	}
	commit_level(c, &v, NULL, "declared", 201);
}

static void inventory_patch(struct api_ctx *c)
{
	const struct inv_level *l = c->n_params ? inv_level_get(c->sh, c->params[0].p, c->params[0].len) : NULL;
	if (!l || !api_owns(c, l->owner_id, strlen(l->owner_id))) {
		api_error(c, 404, "not_found", "no inventory level with this id");
		return;
	}
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	fld_reject_unknown(c, body, inv_known, NULL);
	rule_members(c, body, inv_service, "read_only", "is changed only by holds and orders");
	rule_members(c, body, inv_identity, "immutable", "is the level's identity; declare another level");
	struct lvl_vals v;
	lvl_from_row(l, &v);
	read_qty(c, body, "on_hand", &v.on_hand);
	read_qty(c, body, "incoming", &v.incoming);
	if (c->n_errs) {
		api_validation_failed(c);
		return;
	}
	if (vals_atp(&v) < 0) {
		char d[200];
		snprintf(d, sizeof(d), "on_hand %lld leaves atp %lld: %lld allocated and %lld reserved", (long long)v.on_hand,
			 (long long)vals_atp(&v), (long long)v.allocated, (long long)v.reserved);
		api_error(c, 409, "atp_negative", d);
		return;
	}
	if (v.on_hand == l->on_hand && v.incoming == l->incoming) {
		api_send_row(c, 200, &l->row); /* no change, no event */
		return;
	}
	commit_level(c, &v, l, "updated", 200);
}

/* GET /v1/inventory/{id}: one level, to its readers (the list's rule:
 * the item's owner, the location's owner, operators); others 404.  It
 * gives the level an ETag and so makes PATCH /v1/inventory/{id}
 * conditional (engine/edge/etag.c: a write is conditional on its resource's
 * GET representation). */
static void inventory_get(struct api_ctx *c)
{
	const struct inv_level *l = c->n_params ? inv_level_get(c->sh, c->params[0].p, c->params[0].len) : NULL;
	if (!l || !level_visible(c, l)) {
		api_error(c, 404, "not_found", "no inventory level with this id");
		return;
	}
	api_send_row(c, 200, &l->row);
}

struct inv_filter {
	char location[ID_MAX_LEN]; /* "" any (checked when walking by_offer) */
};

static int inv_match(struct api_ctx *c, const struct row *r, void *arg)
{
	const struct inv_filter *f = arg;
	const struct inv_level *l = (const struct inv_level *)r;
	return (!f->location[0] || !strcmp(l->location_id, f->location)) && level_visible(c, l);
}

static void inventory_list(struct api_ctx *c)
{
	struct api_page pg;
	if (api_page_parse(c, &pg))
		return;
	struct inv_filter f;
	char offer[ID_MAX_LEN];
	memset(&f, 0, sizeof(f));
	int no = api_query(c, "offer", offer, sizeof(offer));
	int nl = api_query(c, "location", f.location, sizeof(f.location));
	if (no == 0 || no == -2 || nl == 0 || nl == -2) {
		api_error(c, 400, "invalid_filter", "offer and location must be ids");
		return;
	}
	if (nl < 0)
		f.location[0] = 0;
	const struct table *t = &c->sh->tables[REC_T_INVENTORY];
	const struct oidx *idx = &t->by_order;
	uint8_t prefix[IDX_MAX_KEY];
	uint32_t pl = 0;
	if (no > 0) {
		idx = &ext(t)->by_offer;
		pl = key_join(prefix, offer, NULL, "", 0);
	} else if (nl > 0) {
		idx = &ext(t)->by_location;
		pl = key_join(prefix, f.location, NULL, "", 0);
	} else if (!c->who.is_platform) {
		idx = &ext(t)->by_owner;
		pl = key_join(prefix, c->who.entity_id, NULL, "", 0);
	}
	api_list(c, idx, prefix, pl, &pg, inv_match, &f, NULL);
}

/* ---- HTTP: network snapshot --------------------------------------------------------- */

struct stock_sum {
	const char *offer;
	int64_t on_hand, incoming, reserved, allocated, atp;
};

static void jw_stock(struct jw *w, const struct stock_sum *s)
{
	jw_obj_begin(w);
	jw_kstr(w, "offer_id", s->offer);
	jw_kint(w, "on_hand", s->on_hand);
	jw_kint(w, "incoming", s->incoming);
	jw_kint(w, "reserved", s->reserved);
	jw_kint(w, "allocated", s->allocated);
	jw_kint(w, "atp", s->atp);
	jw_obj_end(w);
}

/* The location's levels, summed per offer (by_location groups them). */
static void snapshot_stock(struct api_ctx *c, const struct row *r)
{
	uint8_t k[IDX_MAX_KEY];
	char lid[ID_MAX_LEN];
	snprintf(lid, sizeof(lid), "%.*s", (int)r->id_len, r->id);
	uint32_t pl = key_join(k, lid, NULL, "", 0);
	struct oidx_iter it;
	struct stock_sum s = {0};
	unsigned n = 0;
	int truncated = 0;
	jw_key(&c->w, "stock");
	jw_arr_begin(&c->w);
	for (int ok = oidx_seek_ge(&ext(&c->sh->tables[REC_T_INVENTORY])->by_location, k, pl, &it); ok;
	     ok = oidx_next(&it)) {
		if (!oidx_iter_has_prefix(&it, k, pl))
			break;
		const struct inv_level *l = oidx_iter_val(&it);
		if (!s.offer || strcmp(s.offer, l->offer_id)) {
			if (s.offer)
				jw_stock(&c->w, &s);
			if (n == INV_SNAPSHOT_STOCK_MAX) {
				truncated = 1;
				s.offer = NULL;
				break;
			}
			n++;
			memset(&s, 0, sizeof(s));
			s.offer = l->offer_id;
		}
		s.on_hand += l->on_hand;
		s.incoming += l->incoming;
		s.reserved += l->reserved;
		s.allocated += l->allocated;
		if (l->condition == IC_SELLABLE)
			s.atp += inv_atp(l);
	}
	if (s.offer)
		jw_stock(&c->w, &s);
	jw_arr_end(&c->w);
	jw_kbool(&c->w, "stock_truncated", truncated);
}

static void snapshot_emit(struct api_ctx *c, const struct row *r)
{
	struct json_doc *d = json_parse(r->doc, r->doc_len, NULL, NULL);
	if (!d) {
		c->w.err = 1;
		return;
	}
	const struct json_value *o = json_root(d);
	jw_obj_begin(&c->w);
	for (uint32_t i = 0; i < o->len; i++) {
		jw_key(&c->w, o->u.members[i].key);
		jw_value(&c->w, &o->u.members[i].value);
	}
	snapshot_stock(c, r);
	jw_obj_end(&c->w);
	json_doc_free(d);
}

static void network_snapshot(struct api_ctx *c)
{
	struct api_page pg;
	if (api_page_parse(c, &pg))
		return;
	api_list(c, &c->sh->tables[REC_T_LOCATION].by_order, NULL, 0, &pg, NULL, NULL, snapshot_emit);
}

/* ---- HTTP: holds (operator primitives; the orders saga calls the C API) ------------- */

/* HTTP answer per hold result. */
static const struct {
	int status;
	const char *code, *detail;
} hold_http[] = {
	[HOLD_E_ARG] = {422, "validation_failed", "hold_id must be 1-64 of [A-Za-z0-9_.:-]; qty 1..10^8"},
	[HOLD_E_NO_LEVEL] = {404, "not_found", "no inventory level with this id"},
	[HOLD_E_NOT_SELLABLE] = {409, "not_sellable", "the level's condition is not sellable"},
	[HOLD_E_SHORT] = {409, "atp_short", "the level's atp is below the quantity"},
	[HOLD_E_CONFLICT] = {409, "hold_conflict", "this hold id is held for another level or quantity"},
	[HOLD_E_NOT_FOUND] = {404, "not_found", "no hold with this id"},
	[HOLD_E_STATE] = {409, "invalid_hold_state", "a released hold cannot be committed"},
	[HOLD_E_STORE] = {500, "commit_failed", "the hold could not be stored"},
};

static void hold_answer(struct api_ctx *c, int rc, const char *id, int ok_status)
{
	if (rc != HOLD_OK) {
		api_error(c, hold_http[rc].status, hold_http[rc].code, hold_http[rc].detail);
		return;
	}
	const struct hold *h = hold_get(c->sh, id, strlen(id));
	if (h)
		api_send_doc(c, ok_status, h->row.doc, h->row.doc_len);
	else
		api_error(c, 500, "commit_failed", "the hold could not be read back");
}

static int refuse_order_hold(struct api_ctx *c, const char *hold_id);

static void holds_place(struct api_ctx *c)
{
	static const char *const known[] = {"hold_id", "level_id", "qty", NULL};
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	fld_reject_unknown(c, body, known, NULL);
	char id[INV_HOLD_ID_MAX + 1] = "", level[ID_MAX_LEN] = "";
	int64_t qty = 0;
	if (fld_str(c, body, "hold_id", NULL, id, INV_HOLD_ID_MAX) != FLD_SET || !hold_id_ok(id))
		api_field_error(c, "hold_id", "format", "1-%d of [A-Za-z0-9_.:-]", INV_HOLD_ID_MAX);
	if (fld_str(c, body, "level_id", NULL, level, ID_MAX_LEN - 1) != FLD_SET)
		api_field_error(c, "level_id", "required", "is required");
	if (fld_int(c, body, "qty", NULL, 1, INV_QTY_MAX, &qty) != FLD_SET && !c->n_errs)
		api_field_error(c, "qty", "required", "is required");
	if (c->n_errs) {
		api_validation_failed(c);
		return;
	}
	if (refuse_order_hold(c, id))
		return;
	int existed = hold_get(c->sh, id, strlen(id)) != NULL;
	hold_answer(c, hold_place(c->sh, level, qty, id), id, existed ? 200 : 201);
}

/* 409 hold_owned_by_order when an order owns the hold (1), else 0.  The
 * owner is asked through inv_hold_owner (the orders layer, bound in
 * engine/routes.c). */
static int refuse_order_hold(struct api_ctx *c, const char *hold_id)
{
	const struct hold *th = hold_get(c->sh, hold_id, strlen(hold_id));
	if (th && th->txn[0]) {
		/* a cross-shard order's leg: only its transaction moves it */
		char d[200];
		snprintf(d, sizeof(d), "hold %s is a leg of cross-shard transaction %s and moves only with it", hold_id,
			 th->txn);
		api_error(c, 409, "hold_in_transaction", d);
		return 1;
	}
	const char *order_id = inv_hold_owner(c->sh, hold_id);
	if (!order_id)
		return 0;
	char d[320], route[ID_MAX_LEN + 40];
	snprintf(route, sizeof(route), "POST /v1/orders/%s/cancel", order_id);
	snprintf(d, sizeof(d),
		 "hold %s belongs to order %s and moves only with it: cancel the order (%s) or fulfil its leg "
		 "(POST /v1/orders/%s/fulfillments/{leg_id}/fulfill)",
		 hold_id, order_id, route, order_id);
	buf_reset(&c->rs->body);
	jw_init(&c->w, &c->rs->body);
	c->rs->status = 409;
	c->rs->content_type = PROBLEM_CONTENT_TYPE;
	problem_begin(&c->w, 409, "hold_owned_by_order", "Conflict", d);
	jw_kstr(&c->w, "order_id", order_id);
	jw_kstr(&c->w, "order_route", route);
	problem_end(&c->w);
	return 1;
}

static void hold_path_move(struct api_ctx *c, int (*fn)(struct shard *, const char *))
{
	char id[INV_HOLD_ID_MAX + 1];
	if (api_param(c, 0, id, sizeof(id)) < 0) {
		api_error(c, 404, "not_found", "no hold with this id");
		return;
	}
	if (refuse_order_hold(c, id))
		return;
	hold_answer(c, fn(c->sh, id), id, 200);
}

static void holds_commit(struct api_ctx *c) { hold_path_move(c, hold_commit); }
static void holds_release(struct api_ctx *c) { hold_path_move(c, hold_release); }

const struct route inventory_routes[] = {
	/* before any /v1/inventory/{id} pattern: the first match wins */
	{HTTP_M_GET, "/v1/inventory/network-snapshot", network_snapshot, SC_READ_NETWORK, ACT_READ_NETWORK,
	 "Whole-network snapshot: locations, stock, duty context", 0},
	{HTTP_M_GET, "/v1/inventory", inventory_list, SC_READ_INVENTORY, ACT_READ_INVENTORY, "List inventory levels", 0},
	{HTTP_M_GET, "/v1/inventory/{id}", inventory_get, SC_READ_INVENTORY, ACT_READ_INVENTORY,
	 "Retrieve an inventory level", 0},
	{HTTP_M_POST, "/v1/inventory", inventory_create, SC_WRITE_INVENTORY, ACT_WRITE_INVENTORY,
	 "Declare inventory for an offer at a location", 0},
	{HTTP_M_PATCH, "/v1/inventory/{id}", inventory_patch, SC_WRITE_INVENTORY, ACT_WRITE_INVENTORY,
	 "Update an inventory level's quantities", 0},
	{HTTP_M_POST, "/v1/holds", holds_place, SC_OPERATOR, ACT_OPERATE, "Place a stock hold (operator)", 0},
	{HTTP_M_POST, "/v1/holds/{id}/commit", holds_commit, SC_OPERATOR, ACT_OPERATE,
	 "Commit a stock hold (operator)", 0},
	{HTTP_M_POST, "/v1/holds/{id}/release", holds_release, SC_OPERATOR, ACT_OPERATE,
	 "Release a stock hold (operator)", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
