/*
 * inventory.h -- inventory items and levels (spec 2.5), the reservation
 * primitives (holds) the orders saga builds on (DESIGN.md 5), and the
 * network snapshot.  The why and the rules are in inventory.c.
 */
#ifndef WM_INVENTORY_H
#define WM_INVENTORY_H

#include <stddef.h>
#include <stdint.h>

#include "engine/edge/api.h"
#include "engine/storage/id.h"
#include "engine/storage/shard.h"
#include "engine/storage/table.h"

struct offer;

#define INV_QTY_MAX 100000000LL          /* any one quantity of a level (= OFFER_QTY_MAX) */
#define INV_SKU_MAX 64                   /* bytes of a sku */
#define INV_LEVELS_PER_OFFER_MAX 1000    /* levels one offer may have (bounds the qty sum) */
#define INV_SNAPSHOT_STOCK_MAX 200       /* offers listed per location in the network snapshot */
#define INV_HOLD_ID_MAX 64               /* bytes of a hold id */
#define INV_TXN_ID_MAX 64                /* bytes of a two-phase-commit transaction id (engine/stock/txn_part.h) */

enum inv_condition { IC_SELLABLE, IC_DAMAGED, IC_QUARANTINE, INV_N_CONDITION };
extern const char *const inv_condition_names[]; /* NULL-terminated */

/* One inventory level: item (sku, offer, owner) x location x condition. */
/* A sku of up to this many bytes is kept in the row itself (a GTIN-14
 * fits); a longer one (to INV_SKU_MAX) in a block of its own the row
 * owns, its address in the row's sku field after a first byte
 * INV_SKU_OUT, which no sku has (a sku is UTF-8 text, where 0xff never
 * occurs).  Read it with inv_level_sku. */
#define INV_SKU_INLINE 14
#define INV_SKU_OUT '\xff'

/* The row is 136 bytes, so that with its id (up to 24 bytes and a NUL)
 * it fits a 176-byte malloc chunk (it took 256 with the location and the
 * owner as 40-byte fields and 23 bytes of sku apart from its pointer,
 * 288 at 240): the quantities are 32-bit (each is 0..INV_QTY_MAX), and
 * the sku's bytes fill what the condition leaves before the owner. */
struct inv_level {
	struct row row;
	/* offer_id (zero-padded to ID_MAX_LEN), location_id and condition,
	 * side by side, are the level's natural key (inventory.c
	 * INV_NKEY_LEN): unique, which a create checks among the offer's
	 * levels.  location_id and owner_id are the inventory table's pooled
	 * copies (engine/storage/idpool.h: a few thousand locations and
	 * partners for millions of levels; a row holds a reference to each):
	 * read them as strings; equal ids are the same address.  The offer's
	 * id stays in the row: an offer has a level or two, so pooling it
	 * would save nothing. */
	char offer_id[ID_MAX_LEN];
	const char *location_id;
	uint8_t condition;                       /* enum inv_condition */
	/* the sku when it fits (NUL-terminated), else INV_SKU_OUT and the
	 * address of its block (unaligned: memcpy) */
	char sku[INV_SKU_INLINE + 1];
	const char *owner_id;
	int32_t on_hand, incoming, reserved, allocated; /* 0..INV_QTY_MAX each */
	/* created_at and updated_at, or RFC3339_NO_MS (engine/base/log.h) for a stamp that
	 * fmt_rfc3339_ms would not write back as it is (the row then keeps its
	 * document, and the stamps are read from it: table.h render) */
	int64_t created_ms, updated_ms;
};
_Static_assert(INV_QTY_MAX <= INT32_MAX, "a level's quantities fit its 32-bit fields");
_Static_assert(sizeof(struct inv_level) <= 136, "a level row and its id fit a 176-byte malloc chunk");
_Static_assert(INV_SKU_INLINE >= 1 + sizeof(char *), "the sku field holds a block's address");

/* The block of a sku kept apart from the row, or NULL. */
static inline char *inv_level_sku_out(const struct inv_level *l)
{
	char *p = NULL;
	if (l->sku[0] == INV_SKU_OUT)
		memcpy(&p, l->sku + 1, sizeof(p));
	return p;
}

/* The level's sku (NUL-terminated).  Most skus are short: a 65-byte array
 * in every level cost ~40 bytes of padding a row. */
static inline const char *inv_level_sku(const struct inv_level *l)
{
	const char *out = inv_level_sku_out(l);
	return out ? out : l->sku;
}

/* atp = on_hand - allocated - reserved; never negative for a stored level. */
static inline int64_t inv_atp(const struct inv_level *l)
{
	return (int64_t)l->on_hand - l->allocated - l->reserved;
}

const struct inv_level *inv_level_get(struct shard *sh, const char *id, size_t len);

/* After a load, the offers' counts of their levels (offer.h n_levels_p1,
 * one_level) are worked out a step at a time from the tick (inventory.c
 * inv_count_step says why): a step meets about `budget` offers and levels
 * (INV_COUNT_STEP from the tick, ~1 ms), and counts one offer at least.
 * 1 while offers remain, 0 once every loaded offer is counted (and on a
 * shard without the tables). */
#define INV_COUNT_STEP 32768
int inv_count_step(struct shard *sh, unsigned budget);

/*
 * Re-planning a cross-shard order (DESIGN.md 9, step 2): a participant that
 * voted no reported the true ATP of a level whose replica here was stale.
 * While an override is set, the planner sees at most that figure for the
 * levels it lists (inv_plan_atp, inv_offer_sellable*).  The caller sets it
 * around one capture and clears it with NULL (one shard per process, one
 * thread: a module variable).
 */
#define INV_ATP_OVERRIDE_MAX 32 /* levels one re-plan may correct (= ORDER_MAX_LEGS) */
struct inv_atp_override {
	unsigned n;
	struct {
		char level[ID_MAX_LEN];
		int64_t atp;
	} v[INV_ATP_OVERRIDE_MAX];
};
void inv_plan_override(const struct inv_atp_override *o);
/* A level's ATP as the planner sees it: inv_atp, capped by the override. */
int64_t inv_plan_atp(const struct inv_level *l);

/* The offer's sellable level with the most ATP (> 0; first in level id
 * order on ties), or NULL: where a quote's leg ships from (its location's
 * country is the freight origin, its owner the fulfiller). */
const struct inv_level *inv_offer_best_level(struct shard *sh, const char *offer_id);

/* The offer's sellable levels with ATP > 0, most ATP first (level id order
 * on ties): at most max into out, returns how many; *atp_sum (may be NULL)
 * gets the ATP of ALL of them.  Bounded by INV_LEVELS_PER_OFFER_MAX. */
unsigned inv_offer_sellable(struct shard *sh, const char *offer_id, const struct inv_level **out, unsigned max,
			    int64_t *atp_sum);

/* A set of stock locations: a sales channel's linked locations (spec 2.5).
 * ids[0..n) are NUL-terminated; the caller owns them. */
struct inv_loc_set {
	unsigned n;
	const char (*ids)[ID_MAX_LEN];
};
/* inv_offer_sellable restricted to levels at a location of `at` (NULL:
 * every location, exactly inv_offer_sellable).  Same bound. */
unsigned inv_offer_sellable_at(struct shard *sh, const char *offer_id, const struct inv_loc_set *at,
			       const struct inv_level **out, unsigned max, int64_t *atp_sum);
/* inv_offer_sellable_at for the offer o (a row of this shard's offer
 * table): the same answer, without walking the index for an offer known
 * to have no levels or to have one it has met (offer.h n_levels_p1,
 * one_level: the level's row read directly, its LSN noted in the read
 * set); a walk of an offer whose count was not known caches it in the
 * row, and the level when it is the only one. */
unsigned inv_offer_sellable_of(struct shard *sh, const struct offer *o, const struct inv_loc_set *at,
			       const struct inv_level **out, unsigned max, int64_t *atp_sum);

/*
 * Cluster (engine/replication/): the catalogue home applied levels another
 * shard wrote; the offer's qty_available (the sum of its sellable levels'
 * ATP, which the home holds replicas of) is recomputed and, when it
 * changed, staged in the open transaction (the home then publishes it).
 * 1 staged, 0 unchanged or no such offer, -1 too large.
 */
int inv_restage_offer_qty(struct shard *sh, const char *offer_id);

/* The least offer id strictly after `after` ("" = from the first) that has
 * a level (any condition) at the location: copied into out (ID_MAX_LEN
 * bytes), 1; or 0 when none.  Walks by_location (location NUL offer NUL id):
 * O(log n) per call. */
int inv_location_next_offer(struct shard *sh, const char *location_id, const char *after, char *out);
/* The sum of the ATP of the offer's sellable levels at the location (0 when
 * none); ids longer than ID_MAX_LEN - 1 have no levels. */
int64_t inv_location_offer_atp(struct shard *sh, const char *location_id, const char *offer_id);

/* ---- holds ------------------------------------------------------------------ */

enum hold_state { HS_PREPARED, HS_COMMITTED, HS_RELEASED, HS_CONSUMED, HOLD_N_STATE };
extern const char *const hold_state_names[];

struct hold {
	struct row row;
	char level_id[ID_MAX_LEN];
	int64_t qty;
	uint8_t state;                           /* enum hold_state */
	char created_at[32];
	char txn[INV_TXN_ID_MAX + 1];            /* the cross-shard transaction it was prepared for, "" if none */
	int64_t returned, received;              /* CONSUMED: units the consumer sent back / that arrived (hold_stage_return) */
	uint64_t prepared_mono_ms;               /* this process's clock when it was (re)loaded PREPARED */
};

enum hold_rc {
	HOLD_OK = 0,
	HOLD_E_ARG,          /* bad hold id (empty, too long, bad bytes) or qty outside 1..INV_QTY_MAX */
	HOLD_E_NO_LEVEL,     /* no such level */
	HOLD_E_NOT_SELLABLE, /* the level's condition is not sellable */
	HOLD_E_SHORT,        /* atp < qty: nothing changed */
	HOLD_E_CONFLICT,     /* the hold id exists for another level or qty */
	HOLD_E_NOT_FOUND,    /* commit/release of an unknown hold id */
	HOLD_E_STATE,        /* commit of a released hold */
	HOLD_E_STORE,        /* the transaction could not be committed */
};

const struct hold *hold_get(struct shard *sh, const char *id, size_t len);

/* The id of the order whose legs name hold `hold_id` (NUL-terminated,
 * owned by the order's row, good until the next transaction), or NULL when
 * no order owns it.  Orders are the layer above stock, so the answer is
 * bound where the layers are assembled (engine/routes.c, to
 * order_owning_hold) and stock does not include orders. */
extern const char *(*const inv_hold_owner)(struct shard *sh, const char *hold_id);

/*
 * Place a PREPARED hold of qty units on a sellable level: reserved += qty
 * in one transaction with the hold row, the stock.changed event and the
 * offer's qty_available.  Fails atomically (nothing changes) when atp <
 * qty.  Idempotent by hold id: the same id with the same level and qty
 * again is HOLD_OK and changes nothing (whatever the hold's state now);
 * with another level or qty HOLD_E_CONFLICT.  A failed placement stores
 * nothing, so retrying its id may succeed later.
 */
int hold_place(struct shard *sh, const char *level_id, int64_t qty, const char *hold_id);
/* hold_place for a participant of a cross-shard transaction (txn_part.h):
 * the hold carries the transaction id for its whole life, is indexed as in
 * doubt while PREPARED, and the same id with another transaction is
 * HOLD_E_CONFLICT. */
int hold_place_txn(struct shard *sh, const char *level_id, int64_t qty, const char *hold_id, const char *txn);
/* The PREPARED holds of transactions, in (txn, hold id) order: the first
 * one whose transaction id is > after (strictly; "" = from the start), or
 * NULL.  How a participant finds what it is in doubt about. */
const struct hold *hold_in_doubt_next(struct shard *sh, const char *after_txn);
/* Walk the holds of one transaction (any state): start with *pos = 0;
 * NULL at the end. */
const struct hold *hold_of_txn(struct shard *sh, const char *txn, size_t *pos);
/* How many PREPARED transaction holds there are (the in-doubt gauge). */
uint64_t hold_in_doubt_count(struct shard *sh);
/* PREPARED -> COMMITTED: the units move from reserved to allocated (ATP
 * unchanged); events stock.changed and stock.reserved.  COMMITTED again is
 * HOLD_OK (no-op); RELEASED is HOLD_E_STATE. */
int hold_commit(struct shard *sh, const char *hold_id);
/* COMMITTED -> CONSUMED (the order's leg is fulfilled): allocated and
 * on_hand both -= qty (ATP unchanged).  CONSUMED again is HOLD_OK;
 * PREPARED or RELEASED is HOLD_E_STATE. */
int hold_consume(struct shard *sh, const char *hold_id);
/* hold_consume staged into the caller's OPEN transaction (with whatever
 * else that transaction changes: an order's leg, atomically).  HOLD_OK
 * with *moved = 1 (staged) or 0 (already CONSUMED: nothing staged), or a
 * HOLD_E_ code (the caller aborts). */
int hold_stage_consume(struct shard *sh, const char *hold_id, int *moved);
/*
 * A consumed hold's units coming back (a return, engine/orders/returns.c),
 * staged into the OPEN transaction: `returned` units are on their way back
 * (the level's incoming), `received` of them arrived (incoming -> on_hand).
 * Both are TOTALS for the hold, not increments, so a repeated or late
 * call changes nothing: values at or below what the hold has are a no-op
 * (*moved = 0).  0 <= received <= returned <= qty; the hold must be
 * CONSUMED.  HOLD_OK, HOLD_E_NOT_FOUND, HOLD_E_STATE, HOLD_E_ARG (past the
 * bounds), HOLD_E_STORE.
 */
int hold_stage_return(struct shard *sh, const char *hold_id, int64_t returned, int64_t received, int *moved);
/* PREPARED or COMMITTED -> RELEASED: the units return to ATP (reserved or
 * allocated -= qty).  RELEASED again is HOLD_OK (no-op). */
int hold_release(struct shard *sh, const char *hold_id);

extern const struct table_ops inventory_table_ops;
extern const struct table_ops hold_table_ops;
extern const struct route inventory_routes[];

#endif
