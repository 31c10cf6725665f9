/*
 * offer.h -- offers: one originator's supply on a canonical wine (spec 2.3),
 * its selling permissions, and the read-path filter over them (spec 5).
 * The why, and the candidate-stream design that keeps list reads from
 * scanning the table, are in offer.c.
 */
#ifndef WM_OFFER_H
#define WM_OFFER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine/edge/api.h"
#include "engine/storage/id.h"
#include "engine/storage/index.h"
#include "engine/supply/offer_seer.h"
#include "engine/supply/permit.h"
#include "engine/storage/shard.h"
#include "engine/storage/table.h"

#define OFFER_PRICE_MAX_MINOR 1000000000000LL /* seller_price bound, minor units (10^12) */
#define OFFER_QTY_MAX 100000000LL             /* qty_available bound (10^8 units) */
#define OFFER_MOQ_MAX 1000000LL               /* min_order_qty bound */
#define OFFER_CASE_MAX 1000LL                 /* case_size bound (units per case) */
#define OFFER_SCAN_BUDGET 10000u              /* candidate rows one list page may examine */
#define OFFER_MAX_STREAMS 4                   /* candidate streams one caller merges */

enum offer_status { OS_DRAFT, OS_ACTIVE, OS_PAUSED, OS_WITHDRAWN, OFFER_N_STATUS };
enum offer_condition { OC_NEW, OC_BIN_END, OC_MIXED_VINTAGE, OFFER_N_CONDITION };
enum offer_source { OSRC_DIRECT, OSRC_FEED, OSRC_EXTERNAL_MATCH, OFFER_N_SOURCE };

extern const char *const offer_status_names[];
extern const char *const offer_condition_names[];
extern const char *const offer_incoterm_names[];
extern const char *const offer_source_names[];

struct offer {
	struct row row;
	/* Not a value either, and kept with n_levels_p1: when the offer is
	 * known to have exactly one level (n_levels_p1 == 2), that level's
	 * stored row once a count or a walk has met it, else NULL.  A quote then reads
	 * the level without walking the inventory's by-offer index, and can
	 * prefetch it a few candidates ahead (offer_wine_any).  The inventory
	 * table's changed hook repoints it when the level's row moves to
	 * another block and clears it when the count moves; a new version of
	 * the offer carries it (offer_changed).  (The row block has room for
	 * it.)
	 * Both sit right after the row's head, with the flags a quote checks
	 * first, in the row's first cache line: a quote reads them first (to
	 * prefetch the level), and the count of every offer at the end of a
	 * load (inventory.c inv_loaded) writes one line of each row instead of
	 * three. */
	const struct row *one_level;
	/* Not a value of the offer (not in its document, image or
	 * typed_same): how many levels the inventory table files under it,
	 * plus one, or 0 when not known.  Known for every offer once the
	 * shard has loaded: the inventory table counts them all in one pass
	 * at the end of recovery (inventory.c inv_loaded), and then each new
	 * offer as it is stored (offer_count_levels_with); a new version
	 * carries its predecessor's, and level adds and removes keep a known
	 * one exact.  Unknown only past what a count can hold, or when a
	 * removal finds it wrong (a bug: test builds stop); a quote's walk
	 * then learns it again (inv_offer_sellable_of).  1 lets a quote skip
	 * the walk of an offer without levels. */
	uint16_t n_levels_p1;
	char currency[4];
	uint8_t status, incoterm, source;
	uint8_t shareable, deflt;        /* network_shareable; enum permit_default */
	uint8_t n_allowed, n_blocked, n_named;
	uint8_t windowed;                /* valid_from or valid_to set: the window heads `lists` */
	/* wine_id, originator_id and condition, side by side, are the offer's
	 * natural key as it is indexed.  The two ids are the copies the
	 * offer table's pool keeps once for every row that names them
	 * (engine/storage/idpool.h; a row holds a reference to each): read
	 * them as strings; equal ids are the same address, so the uniqueness
	 * index keys each offer by these 17 bytes of its own row (offer.c
	 * OFFER_NKEY_LEN).  They were two 40-byte fields. */
	const char *wine_id;
	const char *originator_id;
	uint8_t condition;
	/* qty_available, min_order_qty, case_size (0 when absent): bounded by
	 * OFFER_QTY_MAX, OFFER_MOQ_MAX and OFFER_CASE_MAX, so 32 bits each */
	int32_t qty, moq, case_size;
	int64_t price_minor;             /* seller_price in the currency's minor units */
	/* created_at and updated_at, or RFC3339_NO_MS (engine/base/log.h) for a stamp that
	 * fmt_rfc3339_ms would not write back as it is (the row then keeps
	 * its document: table.h render) */
	int64_t created_ms, updated_ms;
	/* What few offers have, one allocation (NULL when none has any): the
	 * validity window when `windowed` (struct offer_window: most offers
	 * are valid from their creation on, and two int64 in every row cost
	 * 16 bytes an offer), then the permission lists: the n_allowed
	 * allowed and n_blocked blocked countries, 3 bytes each, then the
	 * n_named seller ids, PERMIT_ID_MAX bytes each, zero-padded.  Read
	 * them with offer_valid_from/to, offer_countries and offer_named. */
	char *lists;
};

/* valid_from and valid_to in ms, each INT64_MIN / INT64_MAX when absent. */
struct offer_window {
	int64_t from_ms, to_ms;
};

_Static_assert(OFFER_QTY_MAX <= INT32_MAX && OFFER_MOQ_MAX <= INT32_MAX && OFFER_CASE_MAX <= INT32_MAX,
	       "an offer's quantities fit its 32-bit fields");

/* An offer's validity window (offer.lists when windowed). */
static inline struct offer_window offer_window(const struct offer *o)
{
	struct offer_window w = {INT64_MIN, INT64_MAX};
	if (o->windowed)
		memcpy(&w, o->lists, sizeof(w));
	return w;
}

/* An offer's countries (allowed, then blocked) and named sellers (offer.lists, after the window). */
static inline const char (*offer_countries(const struct offer *o))[3]
{
	return (const char (*)[3])(o->lists ? o->lists + (o->windowed ? sizeof(struct offer_window) : 0) : NULL);
}
static inline const char (*offer_named(const struct offer *o))[PERMIT_ID_MAX]
{
	return (const char (*)[PERMIT_ID_MAX])(o->lists ? (const char *)offer_countries(o) + 3u * (o->n_allowed + o->n_blocked)
							: NULL);
}
/* The bytes of offer.lists (0 when it is NULL). */
static inline size_t offer_lists_bytes(const struct offer *o)
{
	return (o->windowed ? sizeof(struct offer_window) : 0) + 3u * (o->n_allowed + o->n_blocked) +
	       (size_t)PERMIT_ID_MAX * o->n_named;
}

const struct offer *offer_get(struct shard *sh, const char *id, size_t len);
/*
 * The count of a new offer's levels (n_levels_p1, one_level), by the
 * inventory table, which keeps them (inventory.c): `count` is called from
 * the offer table's changed hook for every offer stored without a
 * predecessor, and sets them (or leaves them unknown).  The inventory sets
 * it once the shard has loaded; NULL stops it.  (The offer table reads no
 * inventory itself: stock sits above supply.)
 */
void offer_count_levels_with(struct table *offers, void (*count)(struct table *offers, struct offer *o));
/*
 * Inventory hook (inventory.c): once an offer has stock levels, its
 * headline qty_available is the sum of their ATP.  Adds the offer's new
 * after-image with qty_available = qty (0..OFFER_QTY_MAX) to the CALLER'S
 * open transaction; no event of its own (the stock.changed event of the
 * same transaction carries the move).  0, or -1 (bad qty, doc too large).
 */
int offer_stage_qty(struct shard *sh, const struct offer *o, int64_t qty);
/* The offer's permissions as the evaluator's rules (copies only the used
 * list entries; the rest of *out is left unset). */
void offer_rules(const struct offer *o, struct permit_rules *out);
/* Sellable now: active and inside its validity window. */
int offer_sellable(const struct offer *o, int64_t now_ms);
/* The offer read-path filter for the caller (the same predicate as GET
 * /v1/offers/{id}, no destination): 1 visible, 0 hidden. */
int offer_visible_to(struct api_ctx *c, const struct offer *o);
/* A seer for the filter alone, and offer_visible_to with it: the same
 * verdict, without the per-offer partner lookup and clock read. */
void offer_seer_init(struct api_ctx *c, struct offer_seer *s);
int offer_seen_by(struct api_ctx *c, const struct offer_seer *s, const struct offer *o);
/* Call fn on each offer of the wine (by-wine index) until it returns
 * nonzero; returns that value, or 0.  The rows a few places ahead are
 * prefetched while fn reads the current one (quote-calculate reads every
 * candidate's row: at a million offers each is a cache miss), and so are
 * the rows of their only levels and their permission lists, a little
 * closer (one_level, countries, named: the quote reads them next). */
#define OFFER_ROW_PREFETCH_AHEAD 4u /* rows offer_wine_any prefetches ahead of the one fn reads */
#define OFFER_LEVEL_PREFETCH_AHEAD 2u /* ... and their levels and lists, read from offer rows
				       * prefetched OFFER_ROW_PREFETCH_AHEAD - 2 steps before */
int offer_wine_any(struct shard *sh, const char *wine_id, size_t wine_len,
		   int (*fn)(const struct offer *o, void *arg), void *arg);
/* Where a wine's offers start in the by-wine index (offer_wines_seek). */
struct offer_wine_at {
	struct oidx_iter it;
	int ok; /* 0: the wine has none */
};
#define OFFER_WINES_SEEK_MAX OIDX_SEEK_MANY_MAX /* wines one offer_wines_seek finds */
/* Where each of n wines' offers start (n <= OFFER_WINES_SEEK_MAX), the
 * n descents of the index made together (oidx_seek_ge_many: their misses
 * overlap), and the first OFFER_ROW_PREFETCH_AHEAD rows of each prefetched
 * at once.  A quote of several lines finds its wines' offers before
 * walking the first: at[i] is for offer_wine_any_at, valid until the next
 * change of the offer table. */
void offer_wines_seek(struct shard *sh, unsigned n, const char *const ids[], const size_t lens[],
		      struct offer_wine_at at[]);
/* offer_wine_any from at, which offer_wines_seek found for this wine. */
int offer_wine_any_at(struct shard *sh, const char *wine_id, size_t wine_len, const struct offer_wine_at *at,
		      int (*fn)(const struct offer *o, void *arg), void *arg);

/* ---- create / upsert without HTTP (POST /v1/offers, POST /v1/sync/push) -- */

struct offer_put_result {
	int status;            /* 201 created, 200 updated (upsert), else the error status */
	int unchanged;         /* 200: the stored offer already said all of it; nothing written */
	const char *code;      /* problem code when status >= 400; "validation_failed": errors in c->errs */
	char detail[200];
	char id[ID_MAX_LEN];   /* the offer's id (201, 200) */
};

/*
 * Create the offer `body` describes as the caller c->who: POST /v1/offers'
 * whole work (capability, own originator, field rules, wine reference,
 * uniqueness) without touching HTTP: field errors go to c->errs, the
 * outcome to *out.  With `upsert` (the feed, engine/supply/sync.c) an absent
 * `source` means feed, and when the caller's offer with the same wine_id +
 * originator_id + condition exists it is updated as a PATCH with the
 * body's members would be (status through the table; a withdrawn offer
 * stays final, 409) -- or left alone when nothing would change.  One
 * transaction with its offer.created / offer.updated / offer.withdrawn
 * event, committed before return.  Returns out->status.
 */
int offer_put(struct api_ctx *c, const struct json_value *body, int upsert, struct offer_put_result *out);

/* ---- the candidate-stream merge (exposed for its unit tests) ------------- */

/* One ordered stream: the keys of `idx` starting with prefix, each of which
 * ends with an offer id (key = prefix + id). */
struct offer_stream {
	struct oidx_iter it;
	int ok;
	const uint8_t *prefix;
	uint32_t prefix_len;
};

/* A k-way merge of up to OFFER_MAX_STREAMS streams yielding each id once,
 * in id order. */
struct offer_merge {
	struct offer_stream s[OFFER_MAX_STREAMS];
	unsigned n;
};

void offer_merge_init(struct offer_merge *m);
/* Add the stream of idx under prefix (the bytes must outlive the merge),
 * positioned after id `after` (NULL/0: from the start).  0, or -1 past
 * OFFER_MAX_STREAMS. */
int offer_merge_add(struct offer_merge *m, const struct oidx *idx, const void *prefix, uint32_t prefix_len,
		    const char *after, uint32_t after_len);
/* The next row (smallest id among the streams; every stream positioned on
 * that id steps past it, so an id reachable by several streams comes out
 * once).  1 with *r and its id, 0 at the end. */
int offer_merge_next(struct offer_merge *m, const struct row **r, const char **id, uint32_t *id_len);

/* ---- list (the route and the benchmark) ----------------------------------- */

struct offer_query {
	char wine_id[ID_MAX_LEN];        /* "" = any */
	char originator_id[ID_MAX_LEN];
	char currency[4];
	char destination[3];
	int status, condition;           /* -1 = any */
};

/*
 * Write one page of the offers the caller may see, matching q, into c->w
 * (the api_list body; quota, audit span and cursor as api_list).  Returns
 * the rows written; *examined (may be NULL) gets the candidate rows looked
 * at -- the cost of the page.
 */
uint32_t offer_list(struct api_ctx *c, const struct offer_query *q, const struct api_page *pg, uint32_t *examined);

extern const struct table_ops offer_table_ops;
extern const struct route offer_routes[];

/* Is the offer live on a storefront's channel (a listing there)?  Listings
 * sit above offers; bound in engine/routes.c to listing_live_on. */
extern int (*const offer_listing_live_on)(struct shard *sh, const char *offer_id, size_t offer_len,
					  const char *channel_id);

#endif
