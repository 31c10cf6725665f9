/*
 * check.c -- GET /internal/check: this shard's half of the whole-cluster
 * invariant checker (`wm-ctl cluster check`, shard-router/ctl_cluster.c;
 * issue 14's proof).
 *
 * What one shard can say about itself, from its own rows only:
 *   - every level it owns: reserved = the units of its PREPARED holds and
 *     allocated = those of its COMMITTED holds (holds are the only way
 *     units move out of ATP, so any difference is units lost or invented);
 *   - every order it owns: charged (payment captured) only while it is
 *     paid or past it; a failed or cancelled order that is compensated is
 *     refunded or voided, never still captured;
 *   - the transactions it holds PREPARED holds for, with their age: the
 *     checker asks their coordinator whether each is still in progress
 *     (no PREPARED hold without a transaction in progress).
 * Levels replicated from other shards are not this shard's to check (their
 * holds live with their owner).  The walk is O(rows): an operator's tool,
 * not a hot path; like /metrics it does not wait for an fsync.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "engine/base/log.h"
#include "engine/check.h"
#include "engine/cluster/shard_map.h"
#include "engine/orders/order.h"
#include "engine/orders/payment.h"
#include "engine/stock/inventory.h"
#include "engine/stock/txn_part.h"

#define CHECK_MAX_VIOLATIONS 100 /* listed; the count goes on */

struct check_out {
	struct jw *w;
	uint64_t violations;
};

static void violation(struct check_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void violation(struct check_out *o, const char *fmt, ...)
{
	if (o->violations++ >= CHECK_MAX_VIOLATIONS)
		return;
	char t[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t, sizeof(t), fmt, ap);
	va_end(ap);
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

/* Σ qty of the holds on `level` in state st. */
static int64_t holds_on(struct shard *sh, const char *level, int st)
{
	int64_t sum = 0;
	struct oidx_iter it;
	const struct table *t = &sh->tables[REC_T_HOLD];
	for (int ok = oidx_seek_ge(&t->by_order, "", 0, &it); ok; ok = oidx_next(&it)) {
		const struct hold *h = oidx_iter_val(&it);
		if (h->state == st && !strcmp(h->level_id, level))
			sum += h->qty;
	}
	return sum;
}

static uint64_t check_levels(struct shard *sh, struct check_out *o)
{
	uint64_t n = 0;
	struct oidx_iter it;
	const struct table *t = &sh->tables[REC_T_INVENTORY];
	for (int ok = oidx_seek_ge(&t->by_order, "", 0, &it); ok; ok = oidx_next(&it)) {
		const struct inv_level *l = oidx_iter_val(&it);
		if (!own_level(sh, l))
			continue;
		n++;
		int64_t prep = holds_on(sh, l->row.id, HS_PREPARED), comm = holds_on(sh, l->row.id, HS_COMMITTED);
		if (l->reserved != prep)
			violation(o, "level %s: reserved %lld but its PREPARED holds hold %lld", l->row.id,
				  (long long)l->reserved, (long long)prep);
		if (l->allocated != comm)
			violation(o, "level %s: allocated %lld but its COMMITTED holds hold %lld", l->row.id,
				  (long long)l->allocated, (long long)comm);
		if (l->on_hand < l->reserved + l->allocated)
			violation(o, "level %s: on_hand %lld below reserved + allocated", l->row.id, (long long)l->on_hand);
	}
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
			violation(o, "order %s: charged but still placed", od->row.id);
		if ((st == ORD_FAILED || st == ORD_CANCELLED) && s->v.compensated && ps == PS_CAPTURED)
			violation(o, "order %s: %s and compensated, but its charge was not refunded", od->row.id,
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

const struct route check_internal_routes[] = {
	{HTTP_M_GET, "/internal/check", internal_check, SC_PUBLIC, ACT_NONE, "This shard's invariants", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
