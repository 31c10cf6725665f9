/*
 * retention.c -- what a shard forgets, and when (issue 18 item 9; spec 6).
 *
 * Why.  Orders, their documents and the compliance register are business
 * records and are kept.  What grows with every order without being one
 * is the event log (about eight events per order), the webhook delivery
 * rows of those events, and the holds of orders that were released
 * (failed, cancelled, re-planned): without a bound, memory per order
 * grows over the months.  Idempotency records have their own expiry
 * (engine/edge/idem.c idem_prune).
 *
 * The rule: --retention-days N (default 30; 0 keeps everything).  Past it
 *   - an event is pruned once the webhook deliveries no longer need it
 *     (except wine.* and offer.*: the catalogue's change log, which a
 *     feed's full resync walks, engine/supply/sync.c; a feed cursor older
 *     than the retention is refused, 410 cursor_expired):
 *     the fan-out has passed it and no delivery of it is pending
 *     (whd_needed_from); every subscribed endpoint has it, or its delivery
 *     is dead (in the dead-letter queue, whose rows go at the same age);
 *   - a delivery row that is delivered or dead is pruned (whd_prunable);
 *   - a released hold is pruned: it holds no unit, and a release or
 *     commit naming it later is answered as for an unknown hold (a 2PC
 *     retry weeks after its decision is not a case to serve).
 * A pruned stock.changed event is folded into its level's fold row
 * (REC_T_STOCK_FOLD) in the same transaction, so the level's history that
 * the cluster check sums (engine/check.c: on hand + consumed = initial +
 * added) is the fold plus the events left, and stays exact.
 *
 * Cost.  One pass at most every RET_EVERY_MS from the tick; each table is
 * walked from where the last pass stopped, at most RET_SCAN rows and
 * RET_BATCH deletes per transaction, so the loop never stalls on a large
 * backlog: it is worked off over the following seconds.  The events are
 * walked from the oldest and the walk stops at the first one still needed.
 *
 * Test builds only: WM_RETENTION_MS replaces the days, so a test sees
 * pruning within seconds.
 */
#include "engine/retention.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/log.h"
#include "engine/edge/fields.h"
#include "engine/stock/inventory.h"
#include "engine/storage/events.h"
#include "engine/storage/record.h"
#include "engine/webhooks/webhooks.h"
#include "net/json.h"
#include "net/jsonw.h"

#define RET_FOLD_ID_MAX ID_MAX_LEN

static struct {
	uint64_t next_ms;            /* the next pass (wall ms) */
	char ev_pos[ID_MAX_LEN];     /* where the event walk resumes ("" = the oldest) */
	char hold_pos[ID_MAX_LEN];   /* where the hold walk resumes ("" = the start) */
	char dlv_pos[2 * ID_MAX_LEN];
	uint64_t events, folded, deliveries, holds, passes; /* counters since start (/metrics) */
} rt;

/* ---- stock.changed deltas (shared with the check) ------------------------------------- */

static int64_t qty_of(const struct json_value *o, const char *name)
{
	int64_t v = 0;
	const struct json_value *x = o && o->type == JSON_OBJECT ? json_get(o, name) : NULL;
	if (x && x->type == JSON_NUMBER && json_to_int64(x, &v))
		v = 0;
	return v;
}

int retention_stock_deltas(const struct row *ev, char level[ID_MAX_LEN], struct stock_deltas *d)
{
	memset(d, 0, sizeof(*d));
	level[0] = 0;
	struct json_doc *doc = json_parse(ev->doc, ev->doc_len, NULL, NULL);
	const struct json_value *p = doc ? json_get(json_root(doc), "payload") : NULL;
	const struct json_value *lv = p && p->type == JSON_OBJECT ? json_get(p, "level_id") : NULL;
	const struct json_value *cause = p && p->type == JSON_OBJECT ? json_get(p, "cause") : NULL;
	if (!lv || lv->type != JSON_STRING || !lv->len || lv->len >= ID_MAX_LEN || !cause ||
	    cause->type != JSON_STRING) {
		json_doc_free(doc);
		return -1;
	}
	memcpy(level, lv->u.str, lv->len + 1);
	const struct json_value *ov = json_get(p, "old"), *nv = json_get(p, "new");
	int64_t d_on = qty_of(nv, "on_hand") - qty_of(ov, "on_hand");
	if (!strcmp(cause->u.str, "hold_consumed"))
		d->consumed = -d_on;
	else
		d->added = d_on;
	d->d_reserved = qty_of(nv, "reserved") - qty_of(ov, "reserved");
	d->d_allocated = qty_of(nv, "allocated") - qty_of(ov, "allocated");
	json_doc_free(doc);
	return 0;
}

/* ---- the fold table ---------------------------------------------------------------------- */

static int fold_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct stock_fold *f = (struct stock_fold *)r;
	static const char *const names[] = {"added", "consumed", "reserved_delta", "allocated_delta", "events"};
	int64_t *dst[] = {&f->sum.added, &f->sum.consumed, &f->sum.d_reserved, &f->sum.d_allocated, NULL};
	for (unsigned i = 0; i < 5; i++) {
		const struct json_value *m = json_get(doc, names[i]);
		int64_t v;
		if (!m || json_to_int64(m, &v))
			return -1;
		if (dst[i])
			*dst[i] = v;
		else if (v < 0)
			return -1;
		else
			f->events = (uint64_t)v;
	}
	return 0;
}

const struct table_ops stock_fold_table_ops = {
	.rec_table = REC_T_STOCK_FOLD,
	.name = "stock_fold",
	.row_size = sizeof(struct stock_fold),
	.decode = fold_decode,
};

/* A batch's folds, before they are staged: at most one per event. */
struct fold_acc {
	char level[ID_MAX_LEN];
	struct stock_deltas sum;
	uint64_t events;
};

static void fold_add(struct fold_acc *acc, unsigned *n, const char *level, const struct stock_deltas *d)
{
	unsigned i = 0;
	while (i < *n && strcmp(acc[i].level, level))
		i++;
	if (i == *n) {
		memset(&acc[i], 0, sizeof(acc[i]));
		snprintf(acc[i].level, sizeof(acc[i].level), "%s", level);
		(*n)++;
	}
	acc[i].sum.added += d->added;
	acc[i].sum.consumed += d->consumed;
	acc[i].sum.d_reserved += d->d_reserved;
	acc[i].sum.d_allocated += d->d_allocated;
	acc[i].events++;
}

/* Stage every accumulated fold (the stored one plus the batch's): 0 or -1. */
static int fold_stage(struct shard *sh, const struct fold_acc *acc, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		const struct stock_fold *old =
			(const struct stock_fold *)table_get(&sh->tables[REC_T_STOCK_FOLD], acc[i].level, strlen(acc[i].level));
		struct stock_deltas s = acc[i].sum;
		uint64_t events = acc[i].events;
		if (old) {
			s.added += old->sum.added;
			s.consumed += old->sum.consumed;
			s.d_reserved += old->sum.d_reserved;
			s.d_allocated += old->sum.d_allocated;
			events += old->events;
		}
		char doc[ID_MAX_LEN + 200];
		int dl = snprintf(doc, sizeof(doc),
				  "{\"id\":\"%s\",\"added\":%lld,\"consumed\":%lld,\"reserved_delta\":%lld,"
				  "\"allocated_delta\":%lld,\"events\":%llu}",
				  acc[i].level, (long long)s.added, (long long)s.consumed, (long long)s.d_reserved,
				  (long long)s.d_allocated, (unsigned long long)events);
		if (dl <= 0 || (size_t)dl >= sizeof(doc) ||
		    txn_put(sh, REC_T_STOCK_FOLD, acc[i].level, strlen(acc[i].level), doc, (size_t)dl))
			return -1;
	}
	return 0;
}

/* ---- the passes -------------------------------------------------------------------------- */

/* 1 when row r's id sorts before the string s. */
static int id_before(const struct row *r, const char *s)
{
	size_t sl = strlen(s), n = r->id_len < sl ? r->id_len : sl;
	int c = memcmp(r->id, s, n);
	return c < 0 || (c == 0 && r->id_len < sl);
}

/* Events older than before_ms and before what the deliveries need, from
 * where the last pass stopped (rt.ev_pos; the oldest after reaching the
 * end of what may go): at most RET_SCAN looked at, one transaction of at
 * most RET_BATCH deletes.  Kept events (event_kept_for_ever, or a
 * stock.changed the fold cannot read: the check reports it) are passed. */
static void prune_events(struct shard *sh, uint64_t before_ms)
{
	char need[ID_MAX_LEN];
	whd_needed_from(sh, need);
	struct table *t = &sh->tables[REC_T_EVENT];
	static struct fold_acc acc[RET_BATCH];
	unsigned n = 0, nf = 0, folded = 0, seen = 0;
	struct oidx_iter it;
	int ok = oidx_seek_ge(&t->by_order, rt.ev_pos, (uint32_t)strlen(rt.ev_pos), &it), end = 0;
	if (ok && rt.ev_pos[0]) {
		const struct row *r = oidx_iter_val(&it);
		if (r->id_len == strlen(rt.ev_pos) && !memcmp(r->id, rt.ev_pos, r->id_len))
			ok = oidx_next(&it);
	}
	for (; ok && n < RET_BATCH && seen < RET_SCAN; ok = oidx_next(&it), seen++) {
		const struct row *r = oidx_iter_val(&it);
		uint64_t ms;
		if (id_time_ms(r->id, r->id_len, &ms) || ms >= before_ms || (need[0] && !id_before(r, need))) {
			end = 1;
			break;
		}
		snprintf(rt.ev_pos, sizeof(rt.ev_pos), "%.*s", (int)r->id_len, r->id);
		if (event_kept_for_ever(event_type(r)))
			continue; /* the feed's change log (events.h) */
		if (!strcmp(event_type(r), "stock.changed")) {
			char level[ID_MAX_LEN];
			struct stock_deltas d;
			if (retention_stock_deltas(r, level, &d))
				continue; /* never folded away: the check reports it */
			fold_add(acc, &nf, level, &d);
			folded++;
		}
		if (n == 0)
			txn_begin(sh);
		if (txn_del(sh, REC_T_EVENT, r->id, r->id_len)) {
			txn_abort(sh);
			rt.ev_pos[0] = 0;
			return;
		}
		n++;
	}
	if (end || !ok)
		rt.ev_pos[0] = 0; /* the next pass starts from the oldest again */
	if (!n)
		return;
	if (fold_stage(sh, acc, nf) || !txn_commit_quiet(sh)) {
		txn_abort(sh);
		rt.ev_pos[0] = 0;
		log_warn("msg=\"events not pruned: the transaction failed; retried on the next pass\" events=%u", n);
		return;
	}
	rt.events += n;
	rt.folded += folded;
}

/* The rows of table after *pos (walk resumes there; "" = the start): at
 * most RET_SCAN looked at, each that prunable() says may go (1) deleted,
 * in one transaction of at most RET_BATCH, begun at the first.  How many
 * were deleted. */
static unsigned prune_walk(struct shard *sh, unsigned table, char *pos, size_t pos_cap,
			   int (*prunable)(const struct row *r, int64_t before_ms), int64_t before_ms)
{
	struct table *t = &sh->tables[table];
	struct oidx_iter it;
	unsigned seen = 0, n = 0;
	int ok = oidx_seek_ge(&t->by_order, pos, (uint32_t)strlen(pos), &it);
	if (ok && pos[0]) {
		const struct row *r = oidx_iter_val(&it);
		if (r->id_len == strlen(pos) && !memcmp(r->id, pos, r->id_len))
			ok = oidx_next(&it);
	}
	for (; ok && seen < RET_SCAN && n < RET_BATCH; ok = oidx_next(&it), seen++) {
		const struct row *r = oidx_iter_val(&it);
		size_t l = r->id_len < pos_cap - 1 ? r->id_len : pos_cap - 1;
		memcpy(pos, r->id, l);
		pos[l] = 0;
		if (!prunable(r, before_ms))
			continue;
		if (n == 0)
			txn_begin(sh);
		if (txn_del(sh, table, r->id, r->id_len)) {
			txn_abort(sh);
			return 0;
		}
		n++;
	}
	if (!ok)
		pos[0] = 0; /* the end: the next pass starts over */
	if (!n)
		return 0;
	if (!txn_commit_quiet(sh)) {
		txn_abort(sh);
		log_warn("msg=\"rows not pruned: the transaction failed; retried on the next pass\" table=%u rows=%u",
			 table, n);
		return 0;
	}
	return n;
}

static int hold_prunable(const struct row *r, int64_t before_ms)
{
	const struct hold *h = (const struct hold *)r;
	long long at;
	return h->state == HS_RELEASED && !parse_rfc3339_ms(h->created_at, strlen(h->created_at), &at) &&
	       at < before_ms;
}

void retention_tick(struct shard *sh)
{
	uint64_t keep = event_retention_ms(&sh->cfg), now = wall_ms();
	if (!keep || now < rt.next_ms || sh->txn_open || sh->txn_hold || now < keep)
		return;
	rt.next_ms = now + RET_EVERY_MS;
	rt.passes++;
	uint64_t before = now - keep;
	prune_events(sh, before);
	rt.deliveries += prune_walk(sh, REC_T_WH_DELIVERY, rt.dlv_pos, sizeof(rt.dlv_pos), whd_prunable,
				    (int64_t)before);
	rt.holds += prune_walk(sh, REC_T_HOLD, rt.hold_pos, sizeof(rt.hold_pos), hold_prunable, (int64_t)before);
}

void retention_metrics(struct buf *o)
{
	buf_puts(o, "# TYPE wm_retention_pruned_total counter\n# TYPE wm_retention_passes_total counter\n"
		    "# TYPE wm_retention_folded_total counter\n");
	buf_printf(o, "wm_retention_passes_total %llu\n", (unsigned long long)rt.passes);
	buf_printf(o, "wm_retention_pruned_total{kind=\"event\"} %llu\n", (unsigned long long)rt.events);
	buf_printf(o, "wm_retention_pruned_total{kind=\"webhook_delivery\"} %llu\n", (unsigned long long)rt.deliveries);
	buf_printf(o, "wm_retention_pruned_total{kind=\"hold\"} %llu\n", (unsigned long long)rt.holds);
	buf_printf(o, "wm_retention_folded_total %llu\n", (unsigned long long)rt.folded);
}
