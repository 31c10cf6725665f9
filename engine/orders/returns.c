/*
 * returns.c -- returns and refunds after delivery (spec 3.1 "a state after
 * delivered -> returned or refunded, within the complaint window", 8):
 *
 *   POST /v1/orders/{id}/returns                        request one
 *   GET  /v1/orders/{id}/returns                        the order's returns
 *   POST /v1/orders/{id}/returns/{return_id}/receive    the goods are back
 *
 * Which one (the spec leaves it open): the request's `kind`.  "refund":
 * money back, the goods stay with the consumer (damaged in transit, not
 * worth the freight back) -- refunded at once, order `refunded`.
 * "return": the goods come back -- the units go to the source's level as
 * `incoming` at once, the order is `returned`, and the money goes back
 * when the leg's fulfiller (or the platform) receives them (incoming ->
 * on_hand).  Partial per line (`lines[]`; none = everything not yet
 * returned); at most ORDER_RETURNS_MAX per order.  Only the consumer's
 * side -- the seller, who owns the consumer relationship -- or the
 * platform asks; only within the destination's complaint window after the
 * LAST leg's proof of receipt (a delivered scan), else 409.
 *
 * How much: each returned unit refunds its line's share of what the
 * consumer paid for the line (every component of the line, freight and
 * taxes included, times units / line units, rounded half-up once); the
 * return that covers the last unit of the order refunds exactly what is
 * left of the charge, so the refunds of an order always sum to at most its
 * charge and to all of it when everything came back.
 *
 * Why each step is safe to repeat: a return is a row ("<order id>.R<n>")
 * written with the order's new status and, for stock on this shard, the
 * hold's new returned/received totals, in ONE transaction.  The refund is
 * the ledger's partial refund keyed by the return id (idempotent), then the
 * row's `refunded` -- a crash between them is found by returns_poll
 * (the work index: returns refunding or with stock to tell another shard)
 * and simply done again.  Stock on another shard is told the hold's
 * TOTALS (returned, received) through /internal/txn/return, so a repeated
 * or late message changes nothing.
 */
#include "engine/orders/returns.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/iso.h"
#include "engine/base/log.h"
#include "engine/cluster/shard_map.h"
#include "engine/edge/fields.h"
#include "engine/orders/compliance.h"
#include "engine/orders/order.h"
#include "engine/orders/payment.h"
#include "engine/orders/tracking.h"
#include "engine/pricing/quote.h"
#include "engine/storage/record.h"
#include "engine/stock/txn_part.h"
#include "net/client.h"
#include "net/ev.h"
#include "wal/wal.h"

#define RET_ID_MAX (ID_MAX_LEN + 8)
#define RET_NOTE_MAX 500
#define RET_LINES_MAX QUOTE_MAX_LINES

enum ret_kind { RK_RETURN, RK_REFUND, RET_N_KIND };
static const char *const kind_names[] = {"return", "refund", NULL};
enum ret_status { RS_REQUESTED, RS_REFUNDING, RS_REFUNDED, RET_N_STATUS };
static const char *const status_names[] = {"requested", "refunding", "refunded", NULL};
static const char *const reason_names[] = {"damaged", "not_as_described", "wrong_item", "changed_mind",
					   "late_delivery", "other", NULL};

struct order_return {
	struct row row;
	char order_id[ID_MAX_LEN];
	uint8_t kind, status, stock_synced;
	int64_t amount;                /* the refund, order currency minor units */
};

/* ---- the table ---------------------------------------------------------------------------- */

static int needs_work(const struct order_return *r) { return r->status == RS_REFUNDING || !r->stock_synced; }

static int ret_index_add(struct table *t, struct row *r)
{
	return needs_work((struct order_return *)r) && oidx_set(table_oidx_ext(t), r->id, r->id_len, r) ? -1 : 0;
}

static void ret_index_del(struct table *t, struct row *r)
{
	if (oidx_get(table_oidx_ext(t), r->id, r->id_len) == r)
		oidx_del(table_oidx_ext(t), r->id, r->id_len);
}

static int ret_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct order_return *x = (struct order_return *)r;
	int kind = -1, status = -1;
	const struct json_value *amount = json_get(doc, "amount"), *synced = json_get(doc, "stock_synced");
	char cur[4];
	if (fld_doc_str(doc, "order_id", x->order_id, sizeof(x->order_id)) || !x->order_id[0] ||
	    fld_enum(NULL, doc, "kind", NULL, kind_names, &kind) != FLD_SET ||
	    fld_enum(NULL, doc, "status", NULL, status_names, &status) != FLD_SET ||
	    fld_doc_str(doc, "currency", cur, sizeof(cur)) || iso_currency_minor(cur, 3) < 0 || !amount ||
	    json_to_fixed(amount, (unsigned)iso_currency_minor(cur, 3), &x->amount) || x->amount < 0 || !synced ||
	    (synced->type != JSON_TRUE && synced->type != JSON_FALSE))
		return -1;
	x->kind = (uint8_t)kind;
	x->status = (uint8_t)status;
	x->stock_synced = synced->type == JSON_TRUE;
	return 0;
}

static const char *const ret_keys[] = {"order_id", "kind", "status", "currency", "amount", "stock_synced", NULL};

const struct table_ops return_table_ops = {
	.rec_table = REC_T_RETURN,
	.name = "order_return",
	.row_size = sizeof(struct order_return),
	.decode = ret_decode,
	.decode_keys = ret_keys,
	.index_add = ret_index_add,
	.index_del = ret_index_del,
	.index_add_first = 1,
	.init = table_oidx_ext_init,
	.fini = table_oidx_ext_fini,
};

static const struct order_return *ret_get(struct shard *sh, const char *id)
{
	return (const struct order_return *)table_get(&sh->tables[REC_T_RETURN], id, strlen(id));
}

/* ---- what the order holds: its lines, what came back ---------------------------------------- */

/* The order's lines and legs as returns need them, from its body. */
struct ret_world {
	struct json_doc *body;
	unsigned n_lines;
	int64_t line_qty[RET_LINES_MAX], line_gross[RET_LINES_MAX];
	int64_t back[RET_LINES_MAX];                     /* units of each line returned or refunded so far */
	int64_t leg_line_back[ORDER_MAX_LEGS][RET_LINES_MAX]; /* of them, sent back through each leg */
	int64_t leg_returned[ORDER_MAX_LEGS], leg_received[ORDER_MAX_LEGS]; /* hold totals */
	int64_t refunded_so_far;                         /* Σ amount of the order's returns */
	unsigned n_returns;
	int minor;
};

/* Σ of a leg's items of line i (the body's fulfillments[g].items). */
static int64_t leg_line_qty(const struct json_value *legs, unsigned g, unsigned i)
{
	const struct json_value *items = legs ? json_get(&legs->u.items[g], "items") : NULL;
	int64_t q = 0, n, l;
	for (uint32_t k = 0; items && items->type == JSON_ARRAY && k < items->len; k++) {
		const struct json_value *it = &items->u.items[k];
		const struct json_value *lv = json_get(it, "line"), *qv = json_get(it, "qty");
		if (lv && qv && !json_to_int64(lv, &l) && !json_to_int64(qv, &n) && l == (int64_t)i)
			q += n;
	}
	return q;
}

/* Add one stored return's lines and legs to w. */
static void world_add(struct ret_world *w, const struct order *o, const struct order_return *r)
{
	struct json_doc *d = json_parse(r->row.doc, r->row.doc_len, NULL, NULL);
	const struct json_value *lines = d ? json_get(json_root(d), "lines") : NULL;
	const struct json_value *legs = d ? json_get(json_root(d), "legs") : NULL;
	int64_t l, q;
	for (uint32_t k = 0; lines && k < lines->len; k++)
		if (!json_to_int64(json_get(&lines->u.items[k], "line"), &l) &&
		    !json_to_int64(json_get(&lines->u.items[k], "qty"), &q) && l >= 0 && l < (int64_t)w->n_lines)
			w->back[l] += q;
	char leg_id[64];
	for (uint32_t k = 0; legs && k < legs->len; k++) {
		const struct json_value *e = &legs->u.items[k];
		if (fld_doc_str(e, "leg_id", leg_id, sizeof(leg_id)) || json_to_int64(json_get(e, "line"), &l) ||
		    json_to_int64(json_get(e, "qty"), &q) || l < 0 || l >= (int64_t)w->n_lines)
			continue;
		for (unsigned g = 0; g < o->n_legs; g++)
			if (!strcmp(o->legs[g].leg_id, leg_id)) {
				w->leg_line_back[g][l] += q;
				w->leg_returned[g] += q;
				w->leg_received[g] += r->status != RS_REQUESTED ? q : 0;
			}
	}
	w->refunded_so_far += r->amount;
	json_doc_free(d);
}

/* Build w for order o: its lines' units and what the consumer paid for
 * each, and every return so far.  0, or -1 (a body that does not parse). */
static int world_of(struct shard *sh, const struct order *o, struct ret_world *w)
{
	memset(w, 0, sizeof(*w));
	w->minor = iso_currency_minor(o->currency, 3);
	w->body = json_parse(o->row.doc, o->row.doc_len, NULL, NULL);
	const struct json_value *root = w->body ? json_root(w->body) : NULL;
	const struct json_value *legs = root ? json_get(root, "fulfillments") : NULL;
	const struct json_value *fb = root ? json_get(root, "financial_breakdown") : NULL;
	const struct json_value *fl = fb ? json_get(fb, "lines") : NULL;
	const struct json_value *lines = root ? json_get(root, "lines") : NULL;
	if (!lines || lines->type != JSON_ARRAY || !legs || legs->type != JSON_ARRAY || !fl || fl->type != JSON_ARRAY ||
	    w->minor < 0 || lines->len > RET_LINES_MAX || legs->len != o->n_legs)
		return -1;
	w->n_lines = lines->len;
	for (unsigned i = 0; i < w->n_lines; i++)
		for (unsigned g = 0; g < o->n_legs; g++)
			w->line_qty[i] += leg_line_qty(legs, g, i);
	for (uint32_t k = 0; k < fl->len; k++) {
		int64_t l, a;
		if (!json_to_int64(json_get(&fl->u.items[k], "line"), &l) && l >= 0 && l < (int64_t)w->n_lines &&
		    !json_to_fixed(json_get(&fl->u.items[k], "amount"), (unsigned)w->minor, &a))
			w->line_gross[l] += a;
	}
	for (unsigned n = 1; n <= ORDER_RETURNS_MAX; n++) {
		char id[RET_ID_MAX];
		snprintf(id, sizeof(id), "%s.R%u", o->row.id, n);
		const struct order_return *r = ret_get(sh, id);
		if (!r)
			break;
		world_add(w, o, r);
		w->n_returns = n;
	}
	return 0;
}

/* The time the last leg was delivered (ms), or -1 when one is not. */
static long long delivered_ms(struct shard *sh, const struct order *o)
{
	long long last = -1, t;
	for (unsigned g = 0; g < o->n_legs; g++) {
		const struct leg_track *k = leg_track_get(sh, o->legs[g].leg_id);
		if (!k || !k->delivered_at[0] || parse_rfc3339_ms(k->delivered_at, strlen(k->delivered_at), &t))
			return -1;
		last = t > last ? t : last;
	}
	return last;
}

unsigned complaint_window_days(const struct shard *sh, const char *dest)
{
	const char *p = sh->cfg.complaint_windows;
	while (p && *p) {
		unsigned days;
		int used = 0;
		if (strlen(p) >= 4 && p[2] == '=' && sscanf(p + 3, "%u%n", &days, &used) == 1 && days <= 365 &&
		    !memcmp(p, dest, 2))
			return days;
		p = strchr(p, ',');
		p = p ? p + 1 : NULL;
	}
	return (unsigned)sh->cfg.complaint_window_days;
}

/* ---- requesting ------------------------------------------------------------------------------ */

struct ret_req {
	int kind, reason;
	const char *note;
	unsigned n;
	int64_t qty[RET_LINES_MAX];    /* units per line this return covers */
};

/* Read the body; qty[] filled from lines[] (none: every unit not yet back). 0, or -1 answered. */
static int read_request(struct api_ctx *c, const struct ret_world *w, struct ret_req *q)
{
	memset(q, 0, sizeof(*q));
	const struct json_value *b = api_body(c);
	if (!b)
		return -1;
	static const char *const known[] = {"kind", "reason", "lines", "note", NULL};
	fld_reject_unknown(c, b, known, NULL);
	if (fld_enum(c, b, "kind", "kind", kind_names, &q->kind) == FLD_ABSENT)
		api_field_error(c, "kind", "required", "return (the goods come back) or refund (they stay)");
	if (fld_enum(c, b, "reason", "reason", reason_names, &q->reason) == FLD_ABSENT)
		api_field_error(c, "reason", "required", "why the consumer wants it");
	fld_text(c, b, "note", "note", &q->note, RET_NOTE_MAX);
	const struct json_value *lines = json_get(b, "lines");
	if (!lines) {
		for (unsigned i = 0; i < w->n_lines; i++)
			q->qty[i] = w->line_qty[i] - w->back[i];
	} else if (lines->type != JSON_ARRAY || lines->len < 1 || lines->len > RET_LINES_MAX) {
		api_field_error(c, "lines", "type", "1 to %d items of {line, qty}", RET_LINES_MAX);
	} else {
		for (uint32_t k = 0; k < lines->len; k++) {
			char path[32];
			int64_t l = -1, n = 0;
			snprintf(path, sizeof(path), "lines[%u]", k);
			if (fld_int(c, &lines->u.items[k], "line", path, 0, (int64_t)w->n_lines - 1, &l) != FLD_SET ||
			    fld_int(c, &lines->u.items[k], "qty", path, 1, 1000000, &n) != FLD_SET)
				continue;
			if (n > w->line_qty[l] - w->back[l] - q->qty[l])
				api_field_error(c, path, "range", "line %lld has %lld units not yet returned", (long long)l,
						(long long)(w->line_qty[l] - w->back[l] - q->qty[l]));
			else
				q->qty[l] += n;
		}
	}
	for (unsigned i = 0; i < w->n_lines; i++)
		q->n += q->qty[i] > 0;
	if (!c->n_errs && !q->n)
		api_field_error(c, "lines", "range", "every unit of this order was returned or refunded already");
	if (c->n_errs) {
		api_validation_failed(c);
		return -1;
	}
	return 0;
}

/* a * b / d rounded half-up (a, b, d >= 0, d > 0). */
static int64_t mul_div_half_up(int64_t a, int64_t b, int64_t d)
{
	__int128 x = (__int128)a * b;
	return (int64_t)((x + d / 2) / d);
}

/* What this return refunds (see the file's opening comment). */
static int64_t refund_of(const struct order *o, const struct ret_world *w, const struct ret_req *q)
{
	int64_t amount = 0;
	int all = 1;
	for (unsigned i = 0; i < w->n_lines; i++) {
		if (q->qty[i] && w->line_qty[i])
			amount += mul_div_half_up(w->line_gross[i], q->qty[i], w->line_qty[i]);
		all &= w->back[i] + q->qty[i] == w->line_qty[i];
	}
	int64_t left = o->total_minor - w->refunded_so_far;
	return all || amount > left ? left : amount;
}

/* Which legs the returned units go back through: for each line, the legs
 * carrying it, each up to what it shipped of the line less what came back
 * through it.  Into alloc[leg][line]. */
static void allocate_legs(const struct order *o, const struct ret_world *w, const struct ret_req *q,
			  int64_t alloc[ORDER_MAX_LEGS][RET_LINES_MAX])
{
	const struct json_value *legs = json_get(json_root(w->body), "fulfillments");
	memset(alloc, 0, sizeof(int64_t) * ORDER_MAX_LEGS * RET_LINES_MAX);
	for (unsigned i = 0; i < w->n_lines; i++) {
		int64_t need = q->qty[i];
		for (unsigned g = 0; g < o->n_legs && need > 0; g++) {
			int64_t room = leg_line_qty(legs, g, i) - w->leg_line_back[g][i];
			int64_t take = room < need ? room : need;
			if (take > 0) {
				alloc[g][i] = take;
				need -= take;
			}
		}
	}
}

/* Write the return row's document. */
static void write_row(struct jw *j, const char *id, const struct order *o, int kind, int reason, const char *note,
		      const int64_t *line_qty, unsigned n_lines, const int64_t alloc[ORDER_MAX_LEGS][RET_LINES_MAX],
		      int64_t amount, int status, int synced, const char *by, const char *created, const char *now,
		      const char *received_at, const char *refunded_at)
{
	jw_obj_begin(j);
	jw_kstr(j, "id", id);
	jw_kstr(j, "order_id", o->row.id);
	jw_kstr(j, "kind", kind_names[kind]);
	jw_kstr(j, "reason", reason_names[reason]);
	if (note && note[0])
		jw_kstr(j, "note", note);
	else
		jw_knull(j, "note");
	jw_key(j, "lines");
	jw_arr_begin(j);
	for (unsigned i = 0; i < n_lines; i++)
		if (line_qty[i]) {
			jw_obj_begin(j);
			jw_kint(j, "line", i);
			jw_kint(j, "qty", line_qty[i]);
			jw_obj_end(j);
		}
	jw_arr_end(j);
	jw_key(j, "legs");
	jw_arr_begin(j);
	for (unsigned g = 0; g < o->n_legs; g++)
		for (unsigned i = 0; i < n_lines; i++)
			if (alloc[g][i]) {
				jw_obj_begin(j);
				jw_kstr(j, "leg_id", o->legs[g].leg_id);
				jw_kint(j, "line", i);
				jw_kint(j, "qty", alloc[g][i]);
				jw_obj_end(j);
			}
	jw_arr_end(j);
	quote_write_money(j, "amount", amount, iso_currency_minor(o->currency, 3));
	jw_kstr(j, "currency", o->currency);
	jw_kstr(j, "status", status_names[status]);
	jw_kbool(j, "stock_synced", synced);
	jw_kstr(j, "requested_by", by);
	jw_kstr(j, "created_at", created);
	jw_kstr(j, "updated_at", now);
	if (received_at && received_at[0])
		jw_kstr(j, "received_at", received_at);
	else
		jw_knull(j, "received_at");
	if (refunded_at && refunded_at[0])
		jw_kstr(j, "refunded_at", refunded_at);
	else
		jw_knull(j, "refunded_at");
	jw_obj_end(j);
}

/* A hold of o's leg g lives on this shard. */
static int hold_here(struct shard *sh, const struct order *o, unsigned g)
{
	return hold_get(sh, o->legs[g].hold_id, strlen(o->legs[g].hold_id)) != NULL;
}

/* Stage the holds' totals of every leg of o that is here and changes (w:
 * the totals with the change).  *remote = a leg elsewhere changes.  0 or -1. */
static int stage_local_holds(struct shard *sh, const struct order *o, const struct ret_world *w, const uint8_t *touched,
			     int *remote)
{
	*remote = 0;
	for (unsigned g = 0; g < o->n_legs; g++) {
		if (!touched[g])
			continue;
		if (!hold_here(sh, o, g)) {
			*remote = 1;
			continue;
		}
		int moved;
		if (hold_stage_return(sh, o->legs[g].hold_id, w->leg_returned[g], w->leg_received[g], &moved) != HOLD_OK)
			return -1;
	}
	return 0;
}

/* Stage the order's status (returned / refunded) and its event. */
static int stage_order(struct shard *sh, const struct order *o, int kind, const char *rid, int64_t amount, int minor)
{
	struct buf ex;
	buf_init(&ex, 1024);
	struct jw j;
	jw_init(&j, &ex);
	jw_obj_begin(&j);
	jw_kstr(&j, "return_id", rid);
	jw_kstr(&j, "kind", kind_names[kind]);
	quote_write_money(&j, "amount", amount, minor);
	jw_obj_end(&j);
	int rc = -1;
	if (!j.err && !buf_putc(&ex, 0)) {
		struct order_patch p = {.status = kind == RK_RETURN ? ORD_RETURNED : ORD_REFUNDED, .compensated = -1,
					.event = kind == RK_RETURN ? "order.returned" : "order.refunded",
					.event_extra = ex.data};
		rc = order_stage(sh, o, &p);
	}
	buf_free(&ex);
	return rc;
}

static void refund_step(struct shard *sh, const char *rid);

/* The states a return may be requested in: a state after delivered. */
static int after_delivery(int status)
{
	return status == ORD_DELIVERED || status == ORD_SETTLED || status == ORD_RETURNED || status == ORD_REFUNDED;
}

static void answer_return(struct api_ctx *c, int status, const char *rid);

/* POST /v1/orders/{id}/returns */
static void return_create(struct api_ctx *c)
{
	const struct order *o = order_visible(c);
	if (!o)
		return;
	int consumer = c->who.kind == PRINCIPAL_CONSUMER; /* order_visible: of this order */
	if (!c->who.is_platform && !consumer && strcmp(o->seller_id, c->who.entity_id)) {
		api_error(c, 403, "not_order_seller", "the consumer (its consumer token), the order's seller or the "
						      "platform asks for a return or refund");
		return;
	}
	const struct order_state *s = order_state_get(c->sh, o->row.id, o->row.id_len);
	long long at = delivered_ms(c->sh, o);
	if (!after_delivery(s->v.status) || at < 0) {
		order_conflict(c, NULL, "a return or refund follows delivery: this order is not delivered", o, -1);
		return;
	}
	unsigned days = complaint_window_days(c->sh, o->dest);
	if ((long long)wall_ms() > at + (long long)days * 86400000LL) {
		char d[200], when[32];
		fmt_rfc3339_ms(when, (unsigned long long)(at + (long long)days * 86400000LL));
		snprintf(d, sizeof(d), "the complaint window of %u days after delivery closed at %s", days, when);
		order_conflict(c, "complaint_window_closed", d, o, -1);
		return;
	}
	struct ret_world w;
	struct ret_req q;
	if (world_of(c->sh, o, &w)) {
		json_doc_free(w.body);
		api_error(c, 500, "store", "the order could not be read");
		return;
	}
	if (w.n_returns >= ORDER_RETURNS_MAX) {
		json_doc_free(w.body);
		order_conflict(c, "too_many_returns", "an order takes at most 8 returns and refunds", o, -1);
		return;
	}
	if (read_request(c, &w, &q)) {
		json_doc_free(w.body);
		return;
	}
	char rid[RET_ID_MAX], now[32];
	snprintf(rid, sizeof(rid), "%s.R%u", o->row.id, w.n_returns + 1);
	fmt_rfc3339_ms(now, wall_ms());
	int64_t amount = refund_of(o, &w, &q);
	static int64_t alloc[ORDER_MAX_LEGS][RET_LINES_MAX];
	uint8_t touched[ORDER_MAX_LEGS] = {0};
	if (q.kind == RK_RETURN) {
		allocate_legs(o, &w, &q, alloc);
		for (unsigned g = 0; g < o->n_legs; g++)
			for (unsigned i = 0; i < w.n_lines; i++)
				if (alloc[g][i]) {
					w.leg_returned[g] += alloc[g][i];
					touched[g] = 1;
				}
	} else {
		memset(alloc, 0, sizeof(alloc));
	}
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	txn_begin(c->sh);
	int remote = 0;
	int rc = stage_local_holds(c->sh, o, &w, touched, &remote);
	struct jw j;
	jw_init(&j, &doc);
	write_row(&j, rid, o, q.kind, q.reason, q.note, q.qty, w.n_lines, (const int64_t(*)[RET_LINES_MAX])alloc, amount,
		  q.kind == RK_REFUND ? RS_REFUNDING : RS_REQUESTED, !remote,
		  c->who.is_platform ? "platform" : consumer ? "consumer" : c->who.entity_id, now, now, NULL, NULL);
	rc = rc || j.err || txn_put(c->sh, REC_T_RETURN, rid, strlen(rid), doc.data, doc.len) ||
	     stage_order(c->sh, o, q.kind, rid, amount, w.minor) || !txn_commit(c->sh);
	buf_free(&doc);
	json_doc_free(w.body);
	if (rc) {
		txn_abort(c->sh);
		api_error(c, 500, "commit_failed", "the return could not be stored");
		return;
	}
	saga_crash_point(c->sh, "return_crash_after_request");
	if (q.kind == RK_REFUND)
		refund_step(c->sh, rid);
	buf_printf(&c->rs->headers, "Location: /v1/orders/%s/returns\r\n", o->row.id);
	answer_return(c, 201, rid);
}

/* ---- receiving and refunding ------------------------------------------------------------------ */

/* Rewrite return r with a new status (and its times), stock_synced as given. */
static int stage_return_status(struct shard *sh, const struct order_return *r, int status, int synced)
{
	struct json_doc *d = json_parse(r->row.doc, r->row.doc_len, NULL, NULL);
	if (!d)
		return -1;
	const struct json_value *root = json_root(d);
	char now[32];
	fmt_rfc3339_ms(now, wall_ms());
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	struct jw j;
	jw_init(&j, &doc);
	jw_obj_begin(&j);
	for (uint32_t i = 0; i < root->len; i++) {
		const struct json_member *m = &root->u.members[i];
		jw_keyn(&j, m->key, m->key_len);
		if (!strcmp(m->key, "status"))
			jw_str(&j, status_names[status]);
		else if (!strcmp(m->key, "stock_synced"))
			jw_bool(&j, synced);
		else if (!strcmp(m->key, "updated_at") || (!strcmp(m->key, "received_at") && status == RS_REFUNDING &&
							    r->kind == RK_RETURN) ||
			 (!strcmp(m->key, "refunded_at") && status == RS_REFUNDED))
			jw_str(&j, now);
		else
			jw_value(&j, &m->value);
	}
	jw_obj_end(&j);
	int rc = j.err || txn_put(sh, REC_T_RETURN, r->row.id, r->row.id_len, doc.data, doc.len) ? -1 : 0;
	buf_free(&doc);
	json_doc_free(d);
	return rc;
}

/* Refund return rid through the ledger (idempotent by its id), then mark it refunded. */
static void refund_step(struct shard *sh, const char *rid)
{
	const struct order_return *r = ret_get(sh, rid);
	const struct order *o = r ? order_get(sh, r->order_id, strlen(r->order_id)) : NULL;
	if (!o || r->status != RS_REFUNDING)
		return;
	struct pay_result pr = {0};
	if (r->amount > 0)
		pay_refund_part(sh, o->row.id, rid, r->amount, &pr);
	if (pr.outcome != PAY_OK) {
		log_warn("msg=\"a return's refund did not go through; retried\" return=%s code=%s", rid, pr.code);
		return;
	}
	saga_crash_point(sh, "return_crash_after_refund");
	r = ret_get(sh, rid);
	int64_t refunded = pay_refunded_of(sh, o->row.id);
	struct order_patch p = {.status = -1, .compensated = -1,
				.pay_state = refunded >= o->total_minor ? "refunded" : "partially_refunded"};
	struct json_doc *rd = json_parse(r->row.doc, r->row.doc_len, NULL, NULL);
	txn_begin(sh);
	/* the register's correction, in the same step as the money (compliance.c) */
	int rc = !rd || compliance_stage_return(sh, o, rid, r->kind == RK_RETURN, json_root(rd));
	json_doc_free(rd);
	if (rc || stage_return_status(sh, r, RS_REFUNDED, r->stock_synced) || order_stage(sh, o, &p) || !txn_commit(sh)) {
		txn_abort(sh);
		log_error("msg=\"a refunded return could not be marked; retried\" return=%s", rid);
		return;
	}
	saga_crash_point(sh, "return_crash_before_clawback"); /* a payout run claws back: the order is refunded */
	returns_refunded_hook(sh, o->row.id); /* payouts already paid give their share back */
}

/* The return named by the path (param 1) of order o, or NULL (404 answered). */
static const struct order_return *path_return(struct api_ctx *c, const struct order *o)
{
	char rid[RET_ID_MAX];
	const struct order_return *r = api_param(c, 1, rid, sizeof(rid)) > 0 ? ret_get(c->sh, rid) : NULL;
	if (!r || strcmp(r->order_id, o->row.id)) {
		api_error(c, 404, "not_found", "no such return on this order");
		return NULL;
	}
	return r;
}

/* POST /v1/orders/{id}/returns/{return_id}/receive: the goods are back. */
static void return_receive(struct api_ctx *c)
{
	const struct order *o = order_visible(c);
	const struct order_return *r = o ? path_return(c, o) : NULL;
	if (!r)
		return;
	struct ret_world w;
	if (world_of(c->sh, o, &w)) {
		json_doc_free(w.body);
		api_error(c, 500, "store", "the order could not be read");
		return;
	}
	json_doc_free(w.body);
	uint8_t touched[ORDER_MAX_LEGS] = {0};
	int fulfils = 1, any = 0;
	struct json_doc *d = json_parse(r->row.doc, r->row.doc_len, NULL, NULL);
	const struct json_value *legs = d ? json_get(json_root(d), "legs") : NULL;
	char leg_id[64];
	int64_t q;
	for (uint32_t k = 0; legs && k < legs->len; k++)
		for (unsigned g = 0; g < o->n_legs; g++)
			if (!fld_doc_str(&legs->u.items[k], "leg_id", leg_id, sizeof(leg_id)) &&
			    !strcmp(o->legs[g].leg_id, leg_id) && !json_to_int64(json_get(&legs->u.items[k], "qty"), &q)) {
				touched[g] = 1;
				any = 1;
				fulfils &= order_leg_fulfiller(c, &o->legs[g]);
				if (r->status == RS_REQUESTED)
					w.leg_received[g] += q;
			}
	json_doc_free(d);
	if (!fulfils || !any) {
		api_error(c, 403, "not_leg_fulfiller", "the fulfiller of the legs the goods come back to, or the platform, "
						       "receives a return");
		return;
	}
	if (r->kind != RK_RETURN || r->status != RS_REQUESTED) {
		char det[120];
		snprintf(det, sizeof(det), "the return is %s %s: only a requested return of goods is received",
			 kind_names[r->kind], status_names[r->status]);
		order_conflict(c, "invalid_return_state", det, o, -1);
		return;
	}
	char rid[RET_ID_MAX];
	snprintf(rid, sizeof(rid), "%s", r->row.id);
	txn_begin(c->sh);
	int remote = 0;
	if (stage_local_holds(c->sh, o, &w, touched, &remote) ||
	    stage_return_status(c->sh, r, RS_REFUNDING, r->stock_synced && !remote) || !txn_commit(c->sh)) {
		txn_abort(c->sh);
		api_error(c, 500, "commit_failed", "the receipt could not be stored");
		return;
	}
	saga_crash_point(c->sh, "return_crash_after_receive");
	refund_step(c->sh, rid);
	answer_return(c, 200, rid);
}

/* ---- reading ---------------------------------------------------------------------------------- */

/* The return as the caller may see it: the platform and the seller all of
 * it; a fulfiller or originator of a leg it goes back through, without the
 * money (amount, currency). */
/* The caller sees every return of o whole: the platform, the seller, the
 * order's consumer (o was found through order_visible, so a consumer
 * principal is this order's). */
static int sees_whole(const struct api_ctx *c, const struct order *o)
{
	return c->who.is_platform || c->who.kind == PRINCIPAL_CONSUMER || !strcmp(o->seller_id, c->who.entity_id);
}

static void write_return(struct api_ctx *c, const struct order *o, const struct order_return *r)
{
	if (sees_whole(c, o)) {
		jw_raw(&c->w, r->row.doc, r->row.doc_len);
		return;
	}
	struct json_doc *d = json_parse(r->row.doc, r->row.doc_len, NULL, NULL);
	if (!d) {
		c->w.err = 1;
		return;
	}
	const struct json_value *root = json_root(d);
	jw_obj_begin(&c->w);
	for (uint32_t i = 0; i < root->len; i++) {
		const struct json_member *m = &root->u.members[i];
		if (strcmp(m->key, "amount") && strcmp(m->key, "currency")) {
			jw_keyn(&c->w, m->key, m->key_len);
			jw_value(&c->w, &m->value);
		}
	}
	jw_obj_end(&c->w);
	json_doc_free(d);
}

/* The caller sees return r: sees_whole, or a party of a leg it goes through. */
static int return_visible(struct api_ctx *c, const struct order *o, const struct order_return *r)
{
	if (sees_whole(c, o))
		return 1;
	for (unsigned g = 0; g < o->n_legs; g++) {
		char needle[80];
		snprintf(needle, sizeof(needle), "\"leg_id\":\"%s\"", o->legs[g].leg_id);
		if (order_leg_in_view(c, o, g) && memmem(r->row.doc, r->row.doc_len, needle, strlen(needle)))
			return 1;
	}
	return 0;
}

static void answer_return(struct api_ctx *c, int status, const char *rid)
{
	const struct order_return *r = ret_get(c->sh, rid);
	const struct order *o = r ? order_get(c->sh, r->order_id, strlen(r->order_id)) : NULL;
	if (!o) {
		api_error(c, 500, "store", "the return could not be read back");
		return;
	}
	c->rs->status = status;
	write_return(c, o, r);
}

/* GET /v1/orders/{id}/returns: {"data": [the returns the caller may see]}. */
static void return_list(struct api_ctx *c)
{
	const struct order *o = order_sublist_begin(c);
	if (!o)
		return;
	for (unsigned n = 1; n <= ORDER_RETURNS_MAX; n++) {
		char id[RET_ID_MAX];
		snprintf(id, sizeof(id), "%s.R%u", o->row.id, n);
		const struct order_return *r = ret_get(c->sh, id);
		if (!r)
			break;
		if (return_visible(c, o, r))
			write_return(c, o, r);
	}
	order_sublist_end(c);
}

const struct route return_routes[] = {
	{HTTP_M_POST, "/v1/orders/{id}/returns", return_create, SC_WRITE_ORDERS, ACT_CREATE_ORDERS,
	 "Request a return (goods come back) or a refund (they stay), within the complaint window", ROUTE_F_CONSUMER},
	{HTTP_M_GET, "/v1/orders/{id}/returns", return_list, SC_READ_ORDERS, ACT_READ_ORDERS,
	 "The order's returns and refunds", ROUTE_F_CONSUMER},
	{HTTP_M_POST, "/v1/orders/{id}/returns/{return_id}/receive", return_receive, SC_WRITE_INVENTORY,
	 ACT_WRITE_INVENTORY, "The returned goods arrived: stock back on hand, the money back", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};

void order_units_back(struct shard *sh, const char *order_id, int64_t *back, unsigned max)
{
	for (unsigned n = 1; n <= ORDER_RETURNS_MAX; n++) {
		char id[RET_ID_MAX];
		snprintf(id, sizeof(id), "%s.R%u", order_id, n);
		const struct order_return *r = ret_get(sh, id);
		if (!r)
			break;
		struct json_doc *d = json_parse(r->row.doc, r->row.doc_len, NULL, NULL);
		const struct json_value *lines = d ? json_get(json_root(d), "lines") : NULL;
		int64_t l, q;
		for (uint32_t k = 0; lines && k < lines->len; k++)
			if (!json_to_int64(json_get(&lines->u.items[k], "line"), &l) &&
			    !json_to_int64(json_get(&lines->u.items[k], "qty"), &q) && l >= 0 && l < (int64_t)max)
				back[l] += q;
		json_doc_free(d);
	}
}

unsigned order_refunds(struct shard *sh, const char *order_id, int64_t *out, unsigned max)
{
	unsigned k = 0;
	for (unsigned n = 1; n <= ORDER_RETURNS_MAX && k < max; n++) {
		char id[RET_ID_MAX];
		snprintf(id, sizeof(id), "%s.R%u", order_id, n);
		const struct order_return *r = ret_get(sh, id);
		if (!r)
			break;
		if (r->status == RS_REFUNDED)
			out[k++] = r->amount;
	}
	return k;
}

/* ---- finishing what a crash or another shard left -------------------------------------------- */

#define RET_CALLS_MAX 64

struct sync_call {
	struct shard *sh;
	char rid[RET_ID_MAX];
	uint64_t lsn;                  /* the return row's version when sent */
	unsigned pending, failed;
	int busy;
};

static struct {
	struct sync_call calls[RET_CALLS_MAX];
	uint64_t next_ms;
} rp;

static void on_synced(void *arg, const struct hc_response *a, const char *err)
{
	struct sync_call *k = arg;
	k->pending--;
	if (!a || a->status != 200) {
		k->failed++;
		log_warn("msg=\"a return's stock was not told to its shard yet; retried\" return=%s status=%d error=\"%s\"",
			 k->rid, a ? a->status : 0, err ? err : "-");
	}
	if (k->pending)
		return;
	k->busy = 0;
	const struct order_return *r = ret_get(k->sh, k->rid);
	if (k->failed || !r || r->row.lsn != k->lsn || r->stock_synced)
		return; /* changed meanwhile: the next round sends the new totals */
	txn_begin(k->sh);
	if (stage_return_status(k->sh, r, r->status, 1) || !txn_commit(k->sh))
		txn_abort(k->sh);
}

/* Tell the stock's shards the totals of return r's legs that are not here. */
static void sync_stock(struct shard *sh, const struct order_return *r)
{
	struct sync_call *k = NULL;
	for (int i = 0; i < RET_CALLS_MAX; i++) {
		if (rp.calls[i].busy && !strcmp(rp.calls[i].rid, r->row.id))
			return;
		if (!rp.calls[i].busy && !k)
			k = &rp.calls[i];
	}
	const struct order *o = order_get(sh, r->order_id, strlen(r->order_id));
	char txn[INV_TXN_ID_MAX + 1];
	struct ret_world w;
	if (!k || !o || !order_txn_of(o, txn, sizeof(txn)))
		return;
	int bad = world_of(sh, o, &w);
	json_doc_free(w.body);
	if (bad)
		return;
	*k = (struct sync_call){.sh = sh, .lsn = r->row.lsn, .busy = 1};
	snprintf(k->rid, sizeof(k->rid), "%s", r->row.id);
	for (unsigned g = 0; g < o->n_legs; g++) {
		char needle[80];
		snprintf(needle, sizeof(needle), "\"leg_id\":\"%s\"", o->legs[g].leg_id);
		if (hold_here(sh, o, g) || !memmem(r->row.doc, r->row.doc_len, needle, strlen(needle)))
			continue;
		const char *lv = o->legs[g].level_id;
		char cc[3] = {lv[0] ? lv[4] : 0, lv[0] ? lv[5] : 0, 0};
		int owner = strlen(lv) > 7 ? smap_owner(sh->smap, cc) : -1;
		char body[INV_TXN_ID_MAX + INV_HOLD_ID_MAX + 96];
		snprintf(body, sizeof(body), "{\"txn\":\"%s\",\"hold_id\":\"%s\",\"returned\":%lld,\"received\":%lld}", txn,
			 o->legs[g].hold_id, (long long)w.leg_returned[g], (long long)w.leg_received[g]);
		if (owner >= 0 && !txn_shard_call(sh, (uint32_t)owner, "/internal/txn/return", body, on_synced, k))
			k->pending++;
		else
			k->failed++;
	}
	if (!k->pending)
		k->busy = 0;
}

void returns_poll(struct shard *sh)
{
	struct oidx *work = table_oidx_ext(&sh->tables[REC_T_RETURN]);
	uint64_t now = ev_clock_us() / 1000;
	if (!oidx_count(work) || now < rp.next_ms)
		return;
	rp.next_ms = now + RETURNS_POLL_MS;
	uint64_t durable = sh->wal ? wal_durable_lsn(sh->wal) : UINT64_MAX;
	char ids[RET_CALLS_MAX][RET_ID_MAX];
	unsigned n = 0;
	struct oidx_iter it;
	for (int ok = oidx_seek_ge(work, "", 0, &it); ok && n < RET_CALLS_MAX; ok = oidx_next(&it)) {
		uint32_t kl;
		const char *key = oidx_iter_key(&it, &kl);
		if (kl < RET_ID_MAX) {
			memcpy(ids[n], key, kl);
			ids[n++][kl] = 0;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		const struct order_return *r = ret_get(sh, ids[i]);
		if (!r || r->row.lsn > durable)
			continue; /* what is told elsewhere must be on disk here first */
		if (r->status == RS_REFUNDING)
			refund_step(sh, ids[i]);
		r = ret_get(sh, ids[i]);
		if (r && !r->stock_synced && sh->smap)
			sync_stock(sh, r);
	}
}
