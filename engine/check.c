/*
 * check.c -- GET /internal/check: this shard's half of the whole-cluster
 * invariant checker (`wm-ctl cluster check`, shard-router/ctl_cluster.c;
 * issue 14's proof).
 *
 * What one shard can say about itself, from its own rows only:
 *   - every level it owns: reserved = the units of its PREPARED holds and
 *     allocated = those of its COMMITTED holds (holds are the only way
 *     units move out of ATP, so any difference is units lost or invented);
 *     and its history: on hand + consumed = initial + added, from the
 *     stock.changed events each change of the level is written with (and
 *     the folds of those retention pruned, engine/retention.c; consumed is
 *     what its consumed holds took);
 *   - every order it owns: charged (payment captured) only while it is
 *     paid or past it; a failed or cancelled order that is compensated is
 *     refunded or voided, never still captured;
 *   - the transactions it holds PREPARED holds for, with their age: the
 *     checker asks their coordinator whether each is still in progress
 *     (no PREPARED hold without a transaction in progress).
 * Levels replicated from other shards are not this shard's to check (their
 * holds live with their owner).  The walk is O(rows): an operator's tool,
 * not a hot path (one pass over holds, one over stock.changed events, one
 * over levels); like /metrics it does not wait for an fsync.
 *
 * The same walk feeds the nightly consistency checks (engine/checks.c,
 * check_invariants): each violation is then reported with its kind
 * ("stock_invariant", "ledger_invariant") and the id of the level or order
 * it names, instead of as a line of text.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/log.h"
#include "engine/check.h"
#include "engine/cluster/shard_map.h"
#include "engine/orders/order.h"
#include "engine/orders/payment.h"
#include "engine/retention.h"
#include "engine/stock/inventory.h"
#include "engine/stock/txn_part.h"
#include "engine/storage/events.h"
#include "net/json.h"

#define CHECK_MAX_VIOLATIONS 100 /* listed; the count goes on */

/* Where violations go: a JSON array of lines (w), or a sink (the nightly
 * checks), which gets every one with its kind and id. */
struct check_out {
	struct jw *w;
	check_sink_fn sink;
	void *arg;
	uint64_t violations;
};

static void violation(struct check_out *o, const char *kind, const char *id, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void violation(struct check_out *o, const char *kind, const char *id, const char *fmt, ...)
{
	if (!o->sink && o->violations >= CHECK_MAX_VIOLATIONS) {
		o->violations++;
		return;
	}
	o->violations++;
	char t[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t, sizeof(t), fmt, ap);
	va_end(ap);
	if (o->sink)
		o->sink(o->arg, kind, id, t);
	else
		jw_str(o->w, t);
}

/* Does this shard own the level (its id's country)? */
static int own_level(struct shard *sh, const struct inv_level *l)
{
	char cc[3];
	if (!sh->smap || !id_country(l->row.id, l->row.id_len, cc))
		return 1;
	int owner = smap_owner(sh->smap, cc);
	return owner < 0 || (uint64_t)owner == sh->cfg.shard_id;
}

/* What the checker learns about one level from the other tables: its
 * holds' units per state and its stock.changed history.  Keyed by level id
 * (the key lives in the struct: hidx keeps only the pointer). */
struct lvl_facts {
	char id[ID_MAX_LEN];
	int64_t held[HOLD_N_STATE];         /* Σ qty of its holds per state */
	int64_t added, consumed;            /* Σ on_hand deltas: by API writes; by hold_consumed */
	int64_t d_reserved, d_allocated;    /* Σ reserved / allocated deltas */
};

static struct lvl_facts *facts_of(struct hidx *m, const char *level, int *oom)
{
	size_t n = strnlen(level, ID_MAX_LEN);
	if (n == 0 || n >= ID_MAX_LEN)
		return NULL;
	struct lvl_facts *f = hidx_get_untracked(m, level, (uint32_t)n);
	if (f)
		return f;
	if (!(f = calloc(1, sizeof(*f))) || (memcpy(f->id, level, n), hidx_put(m, f->id, (uint32_t)n, f))) {
		free(f);
		*oom = 1;
		return NULL;
	}
	return f;
}

static void facts_free(struct hidx *m)
{
	size_t pos = 0;
	const char *k;
	uint32_t kl;
	void *v;
	while ((v = hidx_next(m, &pos, &k, &kl)))
		free(v);
	hidx_free(m);
}

/* One pass over the holds: units per level and state. */
static void gather_holds(struct shard *sh, struct hidx *m, int *oom)
{
	struct oidx_iter it;
	const struct table *t = &sh->tables[REC_T_HOLD];
	for (int ok = oidx_seek_ge(&t->by_order, "", 0, &it); ok; ok = oidx_next(&it)) {
		const struct hold *h = oidx_iter_val(&it);
		struct lvl_facts *f = h->state < HOLD_N_STATE ? facts_of(m, h->level_id, oom) : NULL;
		if (f)
			f->held[h->state] += h->qty;
	}
}

/* One pass over the stock.changed events, and the folds of those
 * retention pruned (engine/retention.c): each level's history.  Every
 * change of a level is written with its event in one transaction, so the
 * deltas telescope to the level's present values; an unreadable event is a
 * violation of its own. */
static void gather_history(struct shard *sh, struct hidx *m, struct check_out *o, int *oom)
{
	static const char type[] = "stock.changed";
	struct oidx_iter it;
	struct oidx *by_type = event_by_type(&sh->tables[REC_T_EVENT]);
	for (int ok = oidx_seek_ge(by_type, type, sizeof(type), &it); ok; ok = oidx_next(&it)) {
		const struct row *r = oidx_iter_val(&it);
		if (strcmp(event_type(r), type))
			break;
		char level[ID_MAX_LEN];
		struct stock_deltas d;
		if (retention_stock_deltas(r, level, &d)) {
			violation(o, CHECK_K_STOCK, r->id, "event %.*s: a stock.changed event without level_id and cause",
				  (int)r->id_len, r->id);
			continue;
		}
		struct lvl_facts *f = facts_of(m, level, oom);
		if (f) {
			f->added += d.added;
			f->consumed += d.consumed;
			f->d_reserved += d.d_reserved;
			f->d_allocated += d.d_allocated;
		}
	}
	const struct table *ft = &sh->tables[REC_T_STOCK_FOLD];
	for (int ok = oidx_seek_ge(&ft->by_order, "", 0, &it); ok; ok = oidx_next(&it)) {
		const struct stock_fold *fo = oidx_iter_val(&it);
		char level[ID_MAX_LEN];
		snprintf(level, sizeof(level), "%.*s", (int)fo->row.id_len, fo->row.id);
		struct lvl_facts *f = facts_of(m, level, oom);
		if (f) {
			f->added += fo->sum.added;
			f->consumed += fo->sum.consumed;
			f->d_reserved += fo->sum.d_reserved;
			f->d_allocated += fo->sum.d_allocated;
		}
	}
}

/* Every level this shard owns against its holds and its history:
 *   reserved = PREPARED holds, allocated = COMMITTED holds;
 *   on_hand + consumed = initial + added (consumed: the units its consumed
 *   holds took out; initial + added: what API writes put in);
 *   the history's reserved/allocated deltas sum to the present values. */
static uint64_t check_levels(struct shard *sh, struct check_out *o)
{
	struct hidx m;
	hidx_init(&m);
	int oom = 0;
	gather_holds(sh, &m, &oom);
	gather_history(sh, &m, o, &oom);
	uint64_t n = 0;
	struct oidx_iter it;
	const struct table *t = &sh->tables[REC_T_INVENTORY];
	for (int ok = !oom && oidx_seek_ge(&t->by_order, "", 0, &it); ok; ok = oidx_next(&it)) {
		const struct inv_level *l = oidx_iter_val(&it);
		if (!own_level(sh, l))
			continue;
		n++;
		static const struct lvl_facts none;
		const struct lvl_facts *f = hidx_get_untracked(&m, l->row.id, l->row.id_len);
		f = f ? f : &none;
		const char *id = l->row.id;
		if (l->reserved != f->held[HS_PREPARED])
			violation(o, CHECK_K_STOCK, id, "level %s: reserved %lld but its PREPARED holds hold %lld", id, (long long)l->reserved,
				  (long long)f->held[HS_PREPARED]);
		if (l->allocated != f->held[HS_COMMITTED])
			violation(o, CHECK_K_STOCK, id, "level %s: allocated %lld but its COMMITTED holds hold %lld", id,
				  (long long)l->allocated, (long long)f->held[HS_COMMITTED]);
		if (l->on_hand < l->reserved + l->allocated)
			violation(o, CHECK_K_STOCK, id, "level %s: on_hand %lld below reserved + allocated", id, (long long)l->on_hand);
		if (f->consumed != f->held[HS_CONSUMED])
			violation(o, CHECK_K_STOCK, id, "level %s: its history consumed %lld but its consumed holds hold %lld", id,
				  (long long)f->consumed, (long long)f->held[HS_CONSUMED]);
		if (l->on_hand + f->held[HS_CONSUMED] != f->added)
			violation(o, CHECK_K_STOCK, id, "level %s: on_hand %lld + consumed %lld != initial + added %lld", id,
				  (long long)l->on_hand, (long long)f->held[HS_CONSUMED], (long long)f->added);
		if (f->d_reserved != l->reserved || f->d_allocated != l->allocated)
			violation(o, CHECK_K_STOCK, id, "level %s: its history sums to reserved %lld, allocated %lld", id,
				  (long long)f->d_reserved, (long long)f->d_allocated);
	}
	if (oom)
		violation(o, CHECK_K_STOCK, "out_of_memory", "out of memory: the levels were not checked");
	facts_free(&m);
	return n;
}

static uint64_t check_orders(struct shard *sh, struct check_out *o)
{
	uint64_t n = 0;
	struct oidx_iter it;
	const struct table *t = &sh->tables[REC_T_ORDER];
	for (int ok = oidx_seek_ge(&t->by_order, "", 0, &it); ok; ok = oidx_next(&it)) {
		const struct order *od = oidx_iter_val(&it);
		const struct order_state *s = order_state_get(sh, od->row.id, od->row.id_len);
		if (!s)
			continue;
		n++;
		enum pay_state ps = pay_state_of(sh, od->row.id);
		int st = s->v.status;
		if (ps == PS_CAPTURED && st == ORD_PLACED)
			violation(o, CHECK_K_LEDGER, od->row.id, "order %s: charged but still placed", od->row.id);
		if ((st == ORD_FAILED || st == ORD_CANCELLED) && s->v.compensated && ps == PS_CAPTURED)
			violation(o, CHECK_K_LEDGER, od->row.id, "order %s: %s and compensated, but its charge was not refunded", od->row.id,
				  order_status_names[st]);
	}
	return n;
}

static void internal_check(struct api_ctx *c)
{
	struct shard *sh = c->sh;
	const uint64_t probes = idx_probes; /* an operator's report: no fsync wait (see txn_part_metrics) */
	struct jw *w = &c->w;
	struct check_out o = {.w = w};
	jw_obj_begin(w);
	jw_kint(w, "shard_id", (int64_t)sh->cfg.shard_id);
	jw_key(w, "violations");
	jw_arr_begin(w);
	uint64_t levels = check_levels(sh, &o), orders = check_orders(sh, &o);
	jw_arr_end(w);
	jw_kint(w, "violation_count", (int64_t)o.violations);
	jw_kint(w, "levels", (int64_t)levels);
	jw_kint(w, "orders", (int64_t)orders);
	jw_key(w, "in_doubt");
	jw_arr_begin(w);
	char after[INV_TXN_ID_MAX + 1] = "";
	const struct hold *h;
	uint64_t now = ev_clock_us() / 1000;
	while ((h = hold_in_doubt_next(sh, after))) {
		snprintf(after, sizeof(after), "%s", h->txn);
		jw_obj_begin(w);
		jw_kstr(w, "txn", h->txn);
		jw_kint(w, "age_ms", (int64_t)(now - h->prepared_mono_ms));
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
	idx_probes = probes;
	c->rs->status = 200;
}

void check_invariants(struct shard *sh, check_sink_fn sink, void *arg)
{
	struct check_out o = {.sink = sink, .arg = arg};
	check_levels(sh, &o);
	check_orders(sh, &o);
}

/* ---- the cross-shard half: orders' legs against holds --------------------------------- */

/* Does this shard own the order (its destination)? */
static int own_order(struct shard *sh, const struct order *o)
{
	int owner = sh->smap ? smap_owner(sh->smap, o->dest) : -1;
	return owner < 0 || (uint64_t)owner == sh->cfg.shard_id;
}

/* [hold id, order id, qty] */
static void hold_entry(struct jw *w, const char *hold, const char *order, int64_t qty)
{
	jw_arr_begin(w);
	jw_str(w, hold);
	jw_str(w, order);
	jw_int(w, qty);
	jw_arr_end(w);
}

/*
 * GET /internal/check/holds: what `wm-ctl cluster check` joins across the
 * shards (a leg's hold lives on its stock's shard, the order on its
 * destination's, so no shard can check this alone):
 *   committed  the COMMITTED holds on levels this shard owns;
 *   live       the legs of the orders it owns that must hold a COMMITTED
 *              hold: the order reserved (or past, with legs left to ship)
 *              and the leg reserved, picked or packed;
 *   gone       the legs that must not: shipped (their hold CONSUMED),
 *              released, or of an order failed or cancelled and
 *              compensated.
 * Orders whose two-phase commit is still running are left out (their holds
 * are PREPARED, or being committed), as are legs in `shipping` (COMMITTED
 * until the stock's shard consumes them).  O(holds + orders).
 */
static void internal_check_holds(struct api_ctx *c)
{
	struct shard *sh = c->sh;
	const uint64_t probes = idx_probes;
	struct jw *w = &c->w;
	jw_obj_begin(w);
	jw_kint(w, "shard_id", (int64_t)sh->cfg.shard_id);
	jw_key(w, "committed");
	jw_arr_begin(w);
	struct oidx_iter it;
	const struct table *ht = &sh->tables[REC_T_HOLD];
	for (int ok = oidx_seek_ge(&ht->by_order, "", 0, &it); ok; ok = oidx_next(&it)) {
		const struct hold *h = oidx_iter_val(&it);
		const struct inv_level *l = h->state == HS_COMMITTED ? inv_level_get(sh, h->level_id, strlen(h->level_id)) : NULL;
		if (l && own_level(sh, l)) {
			const char *owner = inv_hold_owner(sh, h->row.id);
			hold_entry(w, h->row.id, owner ? owner : "", h->qty);
		}
	}
	jw_arr_end(w);
	static const char *const lists[] = {"live", "gone"};
	const struct table *ot = &sh->tables[REC_T_ORDER];
	for (int want_live = 1; want_live >= 0; want_live--) {
		jw_key(w, lists[!want_live]);
		jw_arr_begin(w);
		for (int ok = oidx_seek_ge(&ot->by_order, "", 0, &it); ok; ok = oidx_next(&it)) {
			const struct order *o = oidx_iter_val(&it);
			const struct order_state *s = order_state_get(sh, o->row.id, o->row.id_len);
			if (!s || !own_order(sh, o))
				continue;
			int st = s->v.status;
			int dead = (st == ORD_FAILED || st == ORD_CANCELLED) && s->v.compensated;
			if (!dead && (st < ORD_RESERVED || st == ORD_FAILED || st == ORD_CANCELLED))
				continue; /* being placed, or being compensated */
			for (unsigned g = 0; g < o->n_legs; g++) {
				int ls = s->v.leg_status[g];
				int live = !dead && (ls == LS_RESERVED || ls == LS_PICKED || ls == LS_PACKED);
				int gone = dead || ls == LS_RELEASED || (ls != LS_SHIPPING && leg_rank(ls) >= leg_rank(LS_FULFILLED));
				if (want_live ? live : gone)
					hold_entry(w, o->legs[g].hold_id, o->row.id, o->legs[g].qty);
			}
		}
		jw_arr_end(w);
	}
	jw_obj_end(w);
	idx_probes = probes;
	c->rs->status = 200;
}

const struct route check_internal_routes[] = {
	{HTTP_M_GET, "/internal/check", internal_check, SC_PUBLIC, ACT_NONE, "This shard's invariants", 0},
	{HTTP_M_GET, "/internal/check/holds", internal_check_holds, SC_PUBLIC, ACT_NONE,
	 "Committed holds and the legs that should (not) hold them, for the cluster check", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
