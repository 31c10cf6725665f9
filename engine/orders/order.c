/*
 * order.c -- the order resource (spec 2.8, 3.1, 4.1; DESIGN.md 5): the
 * table and its document, POST /v1/orders (capture; the saga itself is in
 * saga.c), the reads, cancel and per-leg fulfilment.
 *
 * Why this shape:
 *  - Capture re-runs the quote engine (quote_compute) on the request with
 *    stock_backed ATP: permissions, validity windows, volume caps and the
 *    stock holds can actually take are checked NOW, not trusted from a
 *    quote.  A body may carry the quote it accepts ("quote": {"total"}); a
 *    different total at capture is a 409 quote_changed naming both, so a
 *    consumer is never charged a price they did not see.
 *  - The order's body is written ONCE at capture with everything the
 *    spec's order object holds (lines bound to offers with p2b and
 *    unit_price_net, sourcing with every candidate and the rule that ruled
 *    it out, one fulfilment leg per source x location with its fulfiller
 *    and hold id, the financial breakdown and settlement split) and is
 *    never rewritten: what the consumer was priced is what stays on the
 *    order.  What changes -- status, leg statuses, payment state and
 *    charge id, failure, saga, updated_at -- is a small row of its own
 *    (REC_T_ORDER_STATE, engine/orders/order_state.c) that each step replaces
 *    (order_stage), built from typed values: a step neither copies nor
 *    parses the ~5 KB body, where rewriting and re-parsing the whole
 *    document five times per order used to be ~40 % of the event loop.
 *    Reads assemble the document from both (order_doc): the same bytes,
 *    member for member, as when it was one document.
 *  - Sales channel: capture quotes through the channel the request names
 *    (quote.c's rules), records its `channel_id` in the body (written once,
 *    so every read and every restart returns it) and takes the channel's
 *    kind as the order's `channel` (a different `channel` is a 422
 *    channel_kind).  Legs take units only from levels at the channel's
 *    linked locations.
 *  - Legs: a source's units come from its offer's sellable levels, most
 *    ATP first (ORDER_LEVELS_PER_SOURCE at most -- the same levels capture's
 *    stock-backed ATP counted, so routing never picks a source whose units
 *    the legs cannot reach); allocations of several
 *    lines to the same offer and level share one leg (items[] per line).
 *    Fulfiller: the location's owner when it is a Fulfiller partner other
 *    than the stock owner (a 3PL holding the stock), else the stock owner
 *    (quote_fulfiller_of: the quote's preview uses the same rule).  It is
 *    derived once, per leg; a source's fulfiller_id and location_id (in
 *    sourcing and in the settlement's freight party) are read from its
 *    first leg, so sourcing and fulfillments never name two shippers.
 *    Freight was priced from the offer's best level (the quote's choice);
 *    a source spread over several locations keeps that price.
 *  - Idempotency-Key is handled here, not by idem.c (ROUTE_F_OWN_IDEM):
 *    the saga is several transactions and the order changes after its
 *    creation, while a retried create must return THE order (spec 7) --
 *    as it is now, even after a kill -9 mid-saga and the recovery that
 *    finished it.  The order row carries (entity, key, fingerprint) and a
 *    hash index finds it; the same key with another request is 422, like
 *    everywhere else.  The response is held until the order's state is
 *    durable (api_handle stamps state_lsn), so no 409-in-flight is needed.
 *  - Reads: an order is visible to its seller, the originator of any
 *    source, the fulfiller of any leg, and the platform; to anyone else it
 *    does not exist (404).  Each reader gets a view of the same stored
 *    document, written by ONE function (order_view_write) for the detail,
 *    /sourcing, /fulfillments, the list and the answers of create, cancel
 *    and fulfil, so no route can show more than another: the platform all
 *    of it; the seller its order minus the routing candidates it may not
 *    see (an order the platform placed for it, or one stored before that
 *    rule, may hold them); an originator its own sources, legs, lines and
 *    payout and the order's state, never another originator's terms or
 *    the consumer's price and the seller's margin; a fulfiller the legs it
 *    ships, the ship-to and the packaging, no prices.  Roles add up.  The
 *    view is an allowlist: a member a later build adds to the document is
 *    shown to the seller and the platform only until a rule says more.
 *    Participants other than the seller never get the consumer's email,
 *    and originators that fulfil nothing neither name nor address (they
 *    sell to the platform, not to the consumer).  The same views bound
 *    what a participant can probe: ?partner= on its list matches only the
 *    partners its view names, and a leg outside its view answers fulfil as
 *    an unknown leg.  Lists walk an index of (participant, order id), so a
 *    partner's page never scans other partners' orders.
 *  - Cancel is valid in any state before fulfilment (spec 3.1): the order
 *    becomes cancelled (order.cancelled) and the saga's compensation
 *    releases every hold and refunds the charge, each step its own
 *    transaction, resumed on restart if a crash interrupts it.
 */
#include "engine/edge/consumer_token.h"
#include "engine/orders/order.h"
#include "engine/orders/tracking.h"

#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "engine/supply/channel.h"
#include "wal/errinj.h"
#include "engine/edge/fields.h"
#include "engine/base/iso.h"
#include "engine/stock/location.h"
#include "engine/base/log.h"
#include "engine/supply/offer.h"
#include "engine/catalogue/partner.h"
#include "engine/orders/payment.h"
#include "engine/catalogue/wine.h"
#include "engine/cluster/internal_headers.h"
#include "engine/cluster/shard_map.h"
#include "engine/stock/txn_part.h"
#include "net/hex.h"

/* The room reserved up front for an order's document: a one-line order's
 * is ~7 KB (its sourcing explains ten candidates); larger ones grow. */
#define ORDER_DOC_HINT (12u << 10)

const char *const order_status_names[] = {"draft",     "placed",    "paid",	 "confirmed", "sourced",
					  "reserved",  "fulfilled", "in_transit", "delivered", "settled",
					  "cancelled", "failed",    "refunded",	 "returned",  NULL};
const char *const order_channel_names[] = {"marketplace", "webshop_connect", "pos_qr", NULL};
const char *const leg_status_names[] = {"pending", "held",	   "reserved",	 "fulfilled",  "released", "picked",
					"packed",  "shipping", "picked_up", "in_transit", "delivered", NULL};
const char *const order_failure_codes[] = {
	[OF_NONE] = "",
	[OF_INSUFFICIENT_STOCK] = "insufficient_stock",
	[OF_PAYMENT_DECLINED] = "payment_declined",
	[OF_PAYMENT_FAILED] = "payment_failed",
	[OF_PAYMENT_TIMEOUT] = "payment_timeout",
	[OF_PAYMENT_UNAVAILABLE] = "payment_unavailable",
	[OF_INTERRUPTED] = "interrupted",
	[OF_STORE] = "storage_failed",
	[ORDER_N_FAILURE] = NULL,
};

/* ---- table -------------------------------------------------------------------------- */

struct order_ext {
	struct hidx by_idem;      /* XXH3-128(entity NUL key) -> order */
	struct oidx by_party;     /* participant NUL order id */
};

static struct order_ext *ext(const struct table *t) { return t->ext; }

/* The 16-byte digest the idempotency index is keyed by; it lives in the row. */
struct order_full {
	struct order o;
	char idem_hkey[16];
};

static int order_init(struct table *t)
{
	struct order_ext *e = calloc(1, sizeof(*e));
	if (!e)
		return -1;
	hidx_init(&e->by_idem);
	oidx_init_tail(&e->by_party); /* party NUL id: tail-keyed (index.h oidx_init_tail) */
	t->ext = e;
	return 0;
}

static void order_fini(struct table *t)
{
	struct order_ext *e = ext(t);
	if (!e)
		return;
	hidx_free(&e->by_idem);
	oidx_free(&e->by_party);
	free(e);
	t->ext = NULL;
}

static void idem_digest(const char *entity, const char *key, size_t key_len, char out[16])
{
	XXH3_state_t st;
	XXH3_INITSTATE(&st);
	XXH3_128bits_reset(&st);
	XXH3_128bits_update(&st, entity, strlen(entity) + 1);
	XXH3_128bits_update(&st, key, key_len);
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&st));
	memcpy(out, c.digest, 16);
}

/* A leg of the body (its status is the state's).  0 or -1. */
static int decode_leg(const struct json_value *v, struct order_leg *l)
{
	int64_t q;
	const struct json_value *qv = json_get(v, "qty");
	if (v->type != JSON_OBJECT || json_get(v, "status") || fld_doc_str(v, "leg_id", l->leg_id, sizeof(l->leg_id)) ||
	    fld_doc_str(v, "hold_id", l->hold_id, sizeof(l->hold_id)) ||
	    fld_doc_str(v, "level_id", l->level_id, sizeof(l->level_id)) ||
	    fld_doc_str(v, "offer_id", l->offer_id, sizeof(l->offer_id)) ||
	    fld_doc_str(v, "originator_id", l->originator_id, sizeof(l->originator_id)) ||
	    fld_doc_str(v, "fulfiller_id", l->fulfiller_id, sizeof(l->fulfiller_id)) ||
	    fld_doc_str(v, "location_id", l->location_id, sizeof(l->location_id)) || !qv || json_to_int64(qv, &q) ||
	    q < 1 || q > INV_QTY_MAX || !l->hold_id[0] || !l->level_id[0])
		return -1;
	l->qty = q;
	return 0;
}

/* True if doc carries a member of the state row: not a body (a document
 * written before the split, or a hostile one order_doc would duplicate keys in). */
static int has_state_members(const struct json_value *doc)
{
	static const char *const top[] = {"status", "failure", "saga", "updated_at", NULL};
	for (unsigned i = 0; top[i]; i++)
		if (json_get(doc, top[i]))
			return 1;
	const struct json_value *p = json_get(doc, "payment");
	return p && (json_get(p, "state") || json_get(p, "charge_id"));
}

/* What marks a candidate the caller's partner may not see in a body
 * (quote.c writes it for each candidate whose originator does not permit
 * the sale); outside a string, so only a candidate can hold it. */
static const char UNPERMITTED[] = ",\"permitted\":false";

/* Fill the body's typed fields (its state is another row). */
static int order_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct order_full *f = (struct order_full *)r;
	struct order *o = &f->o;
	char buf[64];
	if (doc->type != JSON_OBJECT || has_state_members(doc))
		return -1;
	if (fld_doc_str(doc, "destination_country", o->dest, sizeof(o->dest)) ||
	    fld_doc_str(doc, "currency", o->currency, sizeof(o->currency)) ||
	    fld_doc_str(doc, "created_at", o->created_at, sizeof(o->created_at)))
		return -1;
	const struct json_value *v = json_get(doc, "seller");
	if (!v || fld_doc_str(v, "partner_id", o->seller_id, sizeof(o->seller_id)) || !o->seller_id[0])
		return -1;
	v = json_get(doc, "total");
	int minor = iso_currency_minor(o->currency, 3);
	if (!v || minor < 0 || json_to_fixed(v, (unsigned)minor, &o->total_minor))
		return -1;
	v = json_get(doc, "payment");
	if (!v || fld_doc_str(v, "method", buf, sizeof(buf)) || order_name_index(pay_method_names, buf) < 0)
		return -1;
	o->pay_method = (uint8_t)order_name_index(pay_method_names, buf);
	o->unpermitted = r->doc && memmem(r->doc, r->doc_len, UNPERMITTED, sizeof(UNPERMITTED) - 1) != NULL;
	v = json_get(doc, "idempotency");
	o->idem_key[0] = o->idem_entity[0] = 0;
	if (v && v->type == JSON_OBJECT) {
		char hx[40];
		if (fld_doc_str(v, "entity_id", o->idem_entity, sizeof(o->idem_entity)) ||
		    fld_doc_str(v, "key", o->idem_key, sizeof(o->idem_key)) ||
		    fld_doc_str(v, "fingerprint", hx, sizeof(hx)) || strlen(hx) != 32 ||
		    hex_decode(hx, 16, o->idem_fp))
			return -1;
		idem_digest(o->idem_entity, o->idem_key, strlen(o->idem_key), f->idem_hkey);
	}
	v = json_get(doc, "fulfillments");
	if (!v || v->type != JSON_ARRAY || v->len > ORDER_MAX_LEGS)
		return -1;
	o->n_legs = v->len;
	o->legs = v->len ? calloc(v->len, sizeof(*o->legs)) : NULL;
	if (v->len && !o->legs)
		return -1;
	for (uint32_t i = 0; i < v->len; i++)
		if (decode_leg(&v->u.items[i], &o->legs[i])) {
			free(o->legs);
			o->legs = NULL;
			return -1;
		}
	return 0;
}

/* The typed fast path (table.h): the body from the typed values capture
 * wrote its document from (capture_typed), as order_decode makes it.  The
 * legs are copied into an allocation of the row's own. */
static int order_decode_typed(struct table *t, struct row *r, const void *typed)
{
	(void)t;
	const struct order_full *src = typed;
	const struct order *s = &src->o;
	struct order_full *f = (struct order_full *)r;
	struct order *o = &f->o;
	if (s->n_legs > ORDER_MAX_LEGS || s->pay_method >= PAY_N_METHOD || !s->seller_id[0] ||
	    typed_str(o->dest, sizeof(o->dest), s->dest) || typed_str(o->currency, sizeof(o->currency), s->currency) ||
	    typed_str(o->seller_id, sizeof(o->seller_id), s->seller_id) ||
	    typed_str(o->created_at, sizeof(o->created_at), s->created_at) ||
	    typed_str(o->idem_entity, sizeof(o->idem_entity), s->idem_entity) ||
	    typed_str(o->idem_key, sizeof(o->idem_key), s->idem_key))
		return -1;
	o->pay_method = s->pay_method;
	o->unpermitted = s->unpermitted;
	memcpy(o->anchor, s->anchor, sizeof(o->anchor));
	o->total_minor = s->total_minor;
	if (o->idem_key[0]) {
		memcpy(o->idem_fp, s->idem_fp, sizeof(o->idem_fp));
		idem_digest(o->idem_entity, o->idem_key, strlen(o->idem_key), f->idem_hkey);
	} else {
		o->idem_entity[0] = 0;
	}
	o->n_legs = s->n_legs;
	o->legs = s->n_legs ? calloc(s->n_legs, sizeof(*o->legs)) : NULL;
	if (s->n_legs && !o->legs)
		return -1;
	for (unsigned i = 0; i < s->n_legs; i++) {
		const struct order_leg *a = &s->legs[i];
		struct order_leg *b = &o->legs[i];
		if (a->qty < 1 || a->qty > INV_QTY_MAX || !a->hold_id[0] || !a->level_id[0] ||
		    typed_str(b->leg_id, sizeof(b->leg_id), a->leg_id) ||
		    typed_str(b->hold_id, sizeof(b->hold_id), a->hold_id) ||
		    typed_str(b->level_id, sizeof(b->level_id), a->level_id) ||
		    typed_str(b->offer_id, sizeof(b->offer_id), a->offer_id) ||
		    typed_str(b->originator_id, sizeof(b->originator_id), a->originator_id) ||
		    typed_str(b->fulfiller_id, sizeof(b->fulfiller_id), a->fulfiller_id) ||
		    typed_str(b->location_id, sizeof(b->location_id), a->location_id)) {
			free(o->legs);
			o->legs = NULL;
			return -1;
		}
		b->qty = a->qty;
	}
	return 0;
}

/* Test builds' check of the fast path: the same fields and the same legs. */
static int order_typed_same(const struct row *a, const struct row *b)
{
	const struct order_full *x = (const struct order_full *)a, *y = (const struct order_full *)b;
	size_t from = sizeof(struct row), to = offsetof(struct order, legs); /* the fields before the legs */
	return x->o.n_legs == y->o.n_legs && !memcmp((const char *)x + from, (const char *)y + from, to - from) &&
	       !memcmp(x->idem_hkey, y->idem_hkey, sizeof(x->idem_hkey)) &&
	       (!x->o.n_legs || !memcmp(x->o.legs, y->o.legs, x->o.n_legs * sizeof(*x->o.legs)));
}

static void order_release(struct table *t, struct row *r)
{
	(void)t;
	struct order *o = (struct order *)r;
	free(o->legs);
	o->legs = NULL;
}

/* The distinct participants of an order (seller, originators, fulfillers). */
static unsigned parties(const struct order *o, const char **out, unsigned max)
{
	unsigned n = 0;
	const char *cand[1 + 2 * ORDER_MAX_LEGS];
	unsigned nc = 0;
	cand[nc++] = o->seller_id;
	for (unsigned i = 0; i < o->n_legs; i++) {
		cand[nc++] = o->legs[i].originator_id;
		cand[nc++] = o->legs[i].fulfiller_id;
	}
	for (unsigned i = 0; i < nc && n < max; i++) {
		int dup = !cand[i][0];
		for (unsigned j = 0; j < n && !dup; j++)
			dup = !strcmp(out[j], cand[i]);
		if (!dup)
			out[n++] = cand[i];
	}
	return n;
}

static uint32_t party_key(uint8_t *k, const char *party, const struct row *r)
{
	size_t pl = strlen(party);
	memcpy(k, party, pl);
	k[pl] = 0;
	memcpy(k + pl + 1, r->id, r->id_len);
	return (uint32_t)(pl + 1 + r->id_len);
}

_Static_assert(2 * ID_MAX_LEN <= IDX_MAX_KEY, "participant keys fit an index key");

/* Index the body by idempotency key and by participant (the pending index is the state's). */
static int order_index_add(struct table *t, struct row *r)
{
	struct order_full *f = (struct order_full *)r;
	struct order_ext *e = ext(t);
	if (f->o.idem_key[0] && hidx_set(&e->by_idem, f->idem_hkey, 16, f))
		return -1;
	const char *p[1 + 2 * ORDER_MAX_LEGS];
	unsigned np = parties(&f->o, p, 1 + 2 * ORDER_MAX_LEGS);
	uint8_t k[IDX_MAX_KEY];
	for (unsigned i = 0; i < np; i++)
		if (oidx_set(&e->by_party, k, party_key(k, p[i], r), r))
			return -1;
	return 0;
}

/* Remove the body's index entries (those that still point at this version). */
static void order_index_del(struct table *t, struct row *r)
{
	struct order_full *f = (struct order_full *)r;
	struct order_ext *e = ext(t);
	if (f->o.idem_key[0] && hidx_get(&e->by_idem, f->idem_hkey, 16) == f)
		hidx_del(&e->by_idem, f->idem_hkey, 16);
	const char *p[1 + 2 * ORDER_MAX_LEGS];
	unsigned np = parties(&f->o, p, 1 + 2 * ORDER_MAX_LEGS);
	uint8_t k[IDX_MAX_KEY];
	for (unsigned i = 0; i < np; i++) {
		uint32_t kl = party_key(k, p[i], r);
		if (oidx_get(&e->by_party, k, kl) == r)
			oidx_del(&e->by_party, k, kl);
	}
}

/* What order_decode reads (has_state_members included): not the lines,
 * sourcing, breakdowns or settlement, most of the ~5 KB body. */
static const char *const order_decode_keys[] = {"status",	"failure",  "saga",	"updated_at",
						"payment",	"destination_country", "currency",
						"created_at",	"seller",   "total",	"idempotency",
						"fulfillments", NULL};

const struct table_ops order_table_ops = {
	.rec_table = REC_T_ORDER,
	.name = "order",
	.row_size = sizeof(struct order_full),
	.decode = order_decode,
	.decode_pure = 1, /* recovery may build its rows off the loop (table.h) */
	.decode_typed = order_decode_typed,
	.typed_size = sizeof(struct order_full),
	.typed_same = order_typed_same,
	.release = order_release,
	.index_add = order_index_add,
	.index_del = order_index_del,
	.index_add_first = 1, /* sets, and deletes only what points at the row */
	.init = order_init,
	.fini = order_fini,
	.decode_keys = order_decode_keys,
};

/* The body, when the order exists (body and state agree). */
const struct order *order_get(struct shard *sh, const char *id, size_t len)
{
	const struct order *o;
	order_pair_get(sh, id, len, &o);
	return o;
}

int order_txn_of(const struct order *o, char *out, size_t size)
{
	if (!o->n_legs || !strchr(o->legs[0].hold_id, ':'))
		return 0;
	const char *dot = strrchr(o->legs[0].hold_id, '.');
	size_t n = dot ? (size_t)(dot - o->legs[0].hold_id) : strlen(o->legs[0].hold_id);
	if (out && size) {
		n = n < size - 1 ? n : size - 1;
		memcpy(out, o->legs[0].hold_id, n);
		out[n] = 0;
	}
	return 1;
}

const char *order_owning_hold(struct shard *sh, const char *hold_id)
{
	const char *dot = strrchr(hold_id, '.');
	if (!dot || dot == hold_id || dot[1] != 'H')
		return NULL;
	const struct order *o = order_get(sh, hold_id, (size_t)(dot - hold_id));
	for (unsigned i = 0; o && i < o->n_legs; i++)
		if (!strcmp(o->legs[i].hold_id, hold_id))
			return o->row.id;
	return NULL;
}

/* The body found by the idempotency index, when its order exists. */
const struct order *order_by_idem(struct shard *sh, const char *entity, const char *key, size_t key_len)
{
	char d[16];
	idem_digest(entity, key, key_len, d);
	const struct order_full *f = hidx_get(&ext(&sh->tables[REC_T_ORDER])->by_idem, d, 16);
	if (!f || strcmp(f->o.idem_entity, entity) || strlen(f->o.idem_key) != key_len ||
	    memcmp(f->o.idem_key, key, key_len) || !order_state_get(sh, f->o.row.id, f->o.row.id_len))
		return NULL;
	return &f->o;
}

int order_involves(const struct order *o, const char *partner_id)
{
	if (!strcmp(o->seller_id, partner_id))
		return 1;
	for (unsigned i = 0; i < o->n_legs; i++)
		if (!strcmp(o->legs[i].originator_id, partner_id) || !strcmp(o->legs[i].fulfiller_id, partner_id))
			return 1;
	return 0;
}

unsigned order_parties(struct shard *sh, const char *order_id, char (*out)[ID_MAX_LEN], unsigned max)
{
	const struct order *o = order_get(sh, order_id, strlen(order_id));
	unsigned n = 0;
	for (unsigned i = 0; o && i < o->n_legs; i++) {
		const char *who[2] = {o->legs[i].originator_id, o->legs[i].fulfiller_id};
		for (unsigned k = 0; k < 2; k++) {
			int seen = !strcmp(who[k], o->seller_id);
			for (unsigned j = 0; j < n && !seen; j++)
				seen = !strcmp(out[j], who[k]);
			if (!seen && n < max)
				snprintf(out[n++], ID_MAX_LEN, "%s", who[k]);
		}
	}
	return n;
}

/* ---- staging a step ------------------------------------------------------------------------ */

/* Stage an order event: a summary, not the whole order (the order is one
 * GET away, and five events per order must not copy it five times). */
static int stage_event(struct shard *sh, const char *type, const char *order_id, int status, const char *seller,
		       const char *dest, int64_t total, const char *currency, int failure, const char *extra)
{
	char now[ORDER_TS_MAX];
	fmt_rfc3339_ms(now, wall_ms());
	int minor = iso_currency_minor(currency, 3);
	/* appended as it is written, as txn_event's envelope is */
	struct buf ev;
	buf_init_hint(&ev, REC_MAX_VAL, BUF_DOC_HINT);
	int bad = BUF_LIT(&ev, "{\"order_id\":") || jb_str(&ev, order_id) || BUF_LIT(&ev, ",\"status\":") ||
		  jb_str(&ev, order_status_names[status]) || BUF_LIT(&ev, ",\"seller_id\":") || jb_str(&ev, seller) ||
		  BUF_LIT(&ev, ",\"destination_country\":") || jb_str(&ev, dest) || BUF_LIT(&ev, ",\"total\":") ||
		  jb_fixed(&ev, total, (unsigned)(minor < 0 ? 2 : minor)) || BUF_LIT(&ev, ",\"currency\":") ||
		  jb_str(&ev, currency) ||
		  (failure && (BUF_LIT(&ev, ",\"reason\":") || jb_str(&ev, order_failure_codes[failure]))) ||
		  (extra && (BUF_LIT(&ev, ",\"detail\":") || buf_puts(&ev, extra))) ||
		  BUF_LIT(&ev, ",\"occurred_at\":") || jb_str(&ev, now) || buf_putc(&ev, '}');
	int rc = bad || txn_event(sh, type, seller, ev.data, ev.len) ? -1 : 0;
	buf_free(&ev);
	return rc;
}

/* Stage the state row of order id (its canonical document from v).  0 or -1. */
static int stage_state_row(struct shard *sh, const char *id, size_t id_len, const struct order_state_v *v)
{
	struct buf doc;
	buf_init_hint(&doc, REC_MAX_VAL, BUF_DOC_HINT);
	struct jw w;
	jw_init(&w, &doc);
	order_state_write(&w, v);
	int rc = w.err || txn_put_typed(sh, REC_T_ORDER_STATE, id, id_len, doc.data, doc.len, v) ? -1 : 0;
	buf_free(&doc);
	return rc;
}

/* Stage the order's new state v and the step's event (when event).  0 or -1. */
static int stage_state(struct shard *sh, const struct order *o, const struct order_state_v *v, const char *event,
		       int failure, const char *extra)
{
	if (stage_state_row(sh, o->row.id, o->row.id_len, v))
		return -1;
	if (!event)
		return 0;
	return stage_event(sh, event, o->row.id, v->status, o->seller_id, o->dest, o->total_minor, o->currency,
			   failure, extra);
}

int order_stage_event(struct shard *sh, const struct order *o, int status, const char *type, const char *extra)
{
	return stage_event(sh, type, o->row.id, status, o->seller_id, o->dest, o->total_minor, o->currency, 0, extra);
}

/* Build the new state from the current one and the patch: no parse, no copy of the body. */
int order_stage(struct shard *sh, const struct order *o, const struct order_patch *p)
{
	const struct order_state *s = order_state_get(sh, o->row.id, o->row.id_len);
	char now[ORDER_TS_MAX];
	fmt_rfc3339_ms(now, wall_ms());
	struct order_state_v v;
	if (!s)
		return -1;
	v = s->v;
	if (order_state_apply(&v, p, now))
		return -1;
	return stage_state(sh, o, &v, p->event, p->failure, p->event_extra);
}

/* ---- capture: building the order document ---------------------------------------------- */

struct leg_item {
	unsigned line;
	int64_t qty;
};

struct cap_leg {
	const struct inv_level *lv;
	const struct offer *offer;
	const char *fulfiller;
	int64_t qty;
	unsigned n_items;
	struct leg_item items[QUOTE_MAX_LINES];
};

struct capture {
	struct quote *q;
	int channel;
	int pay_method;
	char order_id[ID_MAX_LEN];
	char txn[INV_TXN_ID_MAX + 1];  /* cross-shard: "<coordinator>:<order id>" (DESIGN.md 9), "" when local */
	char now[ORDER_TS_MAX];
	const struct partner *seller;
	/* consumer */
	char consumer_id[ORDER_REF_MAX + 1], name[ORDER_TEXT_MAX + 1], email[ORDER_EMAIL_MAX + 1];
	const char *addr_line1, *addr_line2, *city, *postal_code, *region;
	/* idempotency */
	const char *idem_key;
	size_t idem_len;
	uint8_t fp[16];
	unsigned hold_base;            /* hold ids are .H<hold_base + n>: 0, or ORDER_REPLAN_HOLD_BASE re-planned */
	unsigned n_legs;
	/* below: only the first n_legs entries are read, each written whole
	 * first (leg_add, capture_typed), so capture_new leaves them as they are */
	struct cap_leg legs[ORDER_MAX_LEGS];
	struct order_leg body_legs[ORDER_MAX_LEGS]; /* the body's typed legs (capture_typed): live until the commit */
};

/* A capture with every field zero but the leg arrays (~30 KiB that
 * calloc zeroed on every order: 5 % of an order's instructions on the
 * event loop, issue 15).  NULL when out of memory; free() it. */
static struct capture *capture_new(void)
{
	struct capture *k = malloc(sizeof(*k));
	if (k)
		memset(k, 0, offsetof(struct capture, legs));
	return k;
}

/* Add qty units of line `line` from level lv to the leg of lv (made when
 * new, its fulfiller derived here, once).  The leg, or NULL past the bound. */
static const struct cap_leg *leg_add(struct shard *sh, struct capture *k, const struct offer *of,
				     const struct inv_level *lv, unsigned line, int64_t qty)
{
	struct cap_leg *g = NULL;
	for (unsigned i = 0; i < k->n_legs && !g; i++)
		if (k->legs[i].lv == lv)
			g = &k->legs[i];
	if (!g) {
		if (k->n_legs == ORDER_MAX_LEGS)
			return NULL;
		g = &k->legs[k->n_legs++];
		*g = (struct cap_leg){.lv = lv, .offer = of, .fulfiller = quote_fulfiller_of(sh, lv)};
	}
	g->qty += qty;
	if (g->n_items && g->items[g->n_items - 1].line == line)
		g->items[g->n_items - 1].qty += qty;
	else
		g->items[g->n_items++] = (struct leg_item){line, qty};
	return g;
}

/*
 * Allocate every source's units to its offer's sellable levels (most ATP
 * first).  Who ships a source is then read from its legs, never derived a
 * second time: the source's fulfiller_id and location_id become those of
 * its first leg (the level with the most ATP it could take from, where the
 * quote priced its freight), so sourcing.source[], the settlement's
 * fulfiller party and fulfillments[] name the same partner (issue 22 item
 * 6).  0, or -1 with the 422/409 written: more legs than the bound, or the
 * levels (shared between lines) cannot hold what the lines need.
 */
static int build_legs(struct api_ctx *c, struct capture *k)
{
	struct quote *q = k->q;
	for (unsigned i = 0; i < q->n; i++) {
		struct quote_line *ql = &q->l[i];
		for (unsigned a = 0; a < ql->plan.n; a++) {
			const struct cap_leg *first = NULL;
			const struct offer *of = ql->offer[ql->plan.a[a].cand];
			const struct inv_level *lv[ORDER_LEVELS_PER_SOURCE];
			struct inv_loc_set set;
			unsigned nl = inv_offer_sellable_of(c->sh, of, quote_locations(q, &set), lv,
							    ORDER_LEVELS_PER_SOURCE, NULL);
			int64_t left = ql->plan.a[a].qty;
			for (unsigned j = 0; j < nl && left > 0; j++) {
				int64_t used = 0; /* what earlier legs of this order already take from the level */
				for (unsigned g = 0; g < k->n_legs; g++)
					if (k->legs[g].lv == lv[j])
						used = k->legs[g].qty;
				int64_t take = inv_plan_atp(lv[j]) - used;
				take = take < left ? take : left;
				if (take <= 0)
					continue;
				const struct cap_leg *g = leg_add(c->sh, k, of, lv[j], i, take);
				if (!g) {
					api_error(c, 422, "too_many_legs",
						  "the order needs more fulfilment legs than an order may have (32); split it");
					return -1;
				}
				first = first ? first : g;
				left -= take;
			}
			if (first) {
				ql->fulfiller[ql->plan.a[a].cand] = first->fulfiller;
				ql->location[ql->plan.a[a].cand] = first->lv->location_id;
			}
			if (left > 0) {
				char f[32];
				snprintf(f, sizeof(f), "lines[%u]", i);
				api_field_error(c, f, "insufficient_stock",
						"the stock of offer %s cannot cover this line together with the others",
						of->row.id);
				buf_reset(&c->rs->body);
				jw_init(&c->w, &c->rs->body);
				c->rs->status = 422;
				c->rs->content_type = PROBLEM_CONTENT_TYPE;
				problem_begin(&c->w, 422, "insufficient_stock", "Unprocessable Content",
					      "the available stock cannot cover the order; see errors[]");
				problem_fields(&c->w, c->errs, c->n_errs);
				problem_end(&c->w);
				return -1;
			}
		}
	}
	return 0;
}

/*
 * Cluster mode (DESIGN.md 9): does a leg's stock live on another shard
 * (the level's location country is owned elsewhere)?  Then the order is a
 * cross-shard transaction that a router coordinates (the request names
 * one: X-WM-Coordinator, signed): 1.  Without a coordinator it cannot be
 * taken: 409 cross_shard_not_enabled before anything is stored, held or
 * charged, -1.  0 when every leg is this shard's.
 */
/* The country (into cc) of a leg whose stock another shard owns: 1, or 0
 * when every leg is this shard's (or there is no cluster). */
static int leg_elsewhere(const struct shard *sh, const struct capture *k, char cc[3])
{
	for (unsigned i = 0; sh->smap && i < k->n_legs; i++) {
		const char *loc = k->legs[i].lv->location_id;
		if (!id_country(loc, strlen(loc), cc))
			continue; /* a location without a country in its id is the shard's own */
		int owner = smap_owner(sh->smap, cc);
		if (owner >= 0 && (uint64_t)owner != sh->cfg.shard_id)
			return 1;
	}
	return 0;
}

static int legs_remote(struct api_ctx *c, const struct capture *k, char coordinator[8])
{
	char elsewhere[3];
	if (!leg_elsewhere(c->sh, k, elsewhere))
		return 0;
	const struct http_header *h = c->cluster_signed ? http_find_header(c->http, WM_H_COORDINATOR) : NULL;
	if (h && h->value_len >= 2 && h->value_len < 8) {
		memcpy(coordinator, h->value, h->value_len);
		coordinator[h->value_len] = 0;
		char probe[16];
		snprintf(probe, sizeof(probe), "%s:x", coordinator);
		if (txn_id_parse(probe) >= 0)
			return 1;
	}
	char d[200];
	snprintf(d, sizeof(d),
		 "the order needs stock in %s, which another shard of the cluster holds, and no router coordinates "
		 "orders across shards here",
		 elsewhere);
	api_error(c, 409, "cross_shard_not_enabled", d);
	return -1;
}

/* A cross-shard order stored placed: tell the coordinating router its
 * transaction and legs (internal headers it strips), 202. */
static void answer_txn_plan(struct api_ctx *c, const struct order *o, const char *txn)
{
	struct buf *hb = &c->rs->headers;
	buf_printf(hb, WM_H_TXN ": %s\r\n" WM_H_TXN_LEGS ": ", txn);
	for (unsigned i = 0; i < o->n_legs; i++)
		buf_printf(hb, "%s%s %s %lld", i ? "," : "", o->legs[i].hold_id, o->legs[i].level_id,
			   (long long)o->legs[i].qty);
	buf_puts(hb, "\r\n");
	c->rs->status = 202;
	jw_obj_begin(&c->w);
	jw_kstr(&c->w, "order_id", o->row.id);
	jw_kstr(&c->w, "txn", txn);
	jw_obj_end(&c->w);
}

static int64_t div_half_up(int64_t a, int64_t b)
{
	return a >= 0 ? (a + b / 2) / b : -((-a + b / 2) / b);
}

/* The order body's members are appended as they are written, not member
 * by member through jw (~200 instructions a member less; an order body
 * has ~60 of them besides the quote's parts, which quote.c writes so). */

/* The consumer object. */
static int consumer_put(struct buf *b, const struct capture *k)
{
	return BUF_LIT(b, "{\"consumer_id\":") || jb_str(b, k->consumer_id) || BUF_LIT(b, ",\"name\":") ||
	       jb_str(b, k->name) || BUF_LIT(b, ",\"email\":") || jb_str(b, k->email) ||
	       BUF_LIT(b, ",\"address\":{\"line1\":") || jb_str(b, k->addr_line1) ||
	       (k->addr_line2 && (BUF_LIT(b, ",\"line2\":") || jb_str(b, k->addr_line2))) ||
	       BUF_LIT(b, ",\"city\":") || jb_str(b, k->city) || BUF_LIT(b, ",\"postal_code\":") ||
	       jb_str(b, k->postal_code) || (k->region && (BUF_LIT(b, ",\"region\":") || jb_str(b, k->region))) ||
	       BUF_LIT(b, ",\"country\":") || jb_str(b, k->q->dest) || BUF_LIT(b, "},\"country\":") ||
	       jb_str(b, k->q->dest) || buf_putc(b, '}');
}

/* The seller object: id, roles, legal name, country. */
static int seller_put(struct buf *b, const struct partner *p)
{
	static const struct { uint8_t bit; const char *name; } roles[] = {
		{ROLE_ORIGINATOR, "\"originator\""}, {ROLE_FULFILLER, "\"fulfiller\""}, {ROLE_SELLER, "\"seller\""}};
	int bad = BUF_LIT(b, "{\"partner_id\":") || jb_str(b, p->row.id) || BUF_LIT(b, ",\"roles\":[");
	for (unsigned i = 0, n = 0; i < sizeof(roles) / sizeof(roles[0]) && !bad; i++)
		if (p->v.roles & roles[i].bit)
			bad = (n++ && buf_putc(b, ',')) || buf_puts(b, roles[i].name);
	return bad || BUF_LIT(b, "],\"legal_name\":") || jb_str(b, p->v.legal_name) || BUF_LIT(b, ",\"country\":") ||
	       jb_str(b, p->v.country) || buf_putc(b, '}');
}

static void write_lines(struct jw *w, const struct quote *q)
{
	int mn = q->all.minor;
	struct quote_tax_tails tails = {0}; /* this loop's, into w's buffer */
	jw_arr_begin(w);
	for (unsigned i = 0; i < q->n; i++) {
		const struct quote_line *ql = &q->l[i];
		const struct offer *first = ql->offer[ql->plan.a[0].cand];
		int64_t comp[PC_COUNT_];
		int64_t total = quote_line_sums(q, i, comp);
		int om = iso_currency_minor(first->currency, 3);
		jw_obj_begin(w);
		jw_kint(w, "line", i);
		jw_kstr(w, "sku", ql->sku);
		jw_kstr(w, "wine_id", ql->w->row.id);
		jw_kstr(w, "offer_id", first->row.id);
		jw_kint(w, "qty", ql->qty);
		jw_kint(w, "box_units", ql->box);
		quote_write_money(w, "p2b", first->price_minor, om < 0 ? 2 : om);
		jw_kstr(w, "p2b_currency", first->currency);
		/* net of VAT, per unit, half-up to the minor unit (informative: the
		 * line total is what is charged) */
		quote_write_money(w, "unit_price_net", div_half_up(total - comp[PC_V_VAT], ql->qty), mn);
		quote_write_money(w, "total", total, mn);
		jw_key(w, "sources");
		jw_arr_begin(w);
		for (unsigned a = 0; a < ql->plan.n; a++) {
			const struct offer *of = ql->offer[ql->plan.a[a].cand];
			int sm = iso_currency_minor(of->currency, 3);
			jw_obj_begin(w);
			jw_kstr(w, "offer_id", of->row.id);
			jw_kstr(w, "originator_id", of->originator_id);
			jw_kint(w, "qty", ql->plan.a[a].qty);
			quote_write_money(w, "p2b", of->price_minor, sm < 0 ? 2 : sm);
			jw_kstr(w, "p2b_currency", of->currency);
			quote_write_money(w, "total", q->all.lines[ql->first + a].total, mn);
			jw_obj_end(w);
		}
		jw_arr_end(w);
		jw_key(w, "tax_breakdown");
		quote_write_line_tax(w, q, i, &tails);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

static void write_sourcing(struct jw *w, const struct quote *q)
{
	const char *split = NULL;
	for (unsigned i = 0; i < q->n && !split; i++)
		split = route_split_names[q->l[i].plan.split];
	jw_obj_begin(w);
	jw_kstr(w, "priority", "estate_first");
	if (split)
		jw_kstr(w, "split_reason", split);
	else
		jw_knull(w, "split_reason");
	jw_key(w, "source");
	jw_arr_begin(w);
	for (unsigned i = 0; i < q->n; i++) {
		const struct quote_line *ql = &q->l[i];
		for (unsigned a = 0; a < ql->plan.n; a++) {
			unsigned ci = ql->plan.a[a].cand;
			const struct offer *of = ql->offer[ci];
			int om = iso_currency_minor(of->currency, 3);
			jw_obj_begin(w);
			jw_kint(w, "line", i);
			jw_kstr(w, "offer_id", of->row.id);
			jw_kstr(w, "originator_id", of->originator_id);
			jw_kint(w, "qty", ql->plan.a[a].qty);
			quote_write_money(w, "p2b", of->price_minor, om < 0 ? 2 : om);
			jw_kstr(w, "p2b_currency", of->currency);
			jw_kstr(w, "incoterm", offer_incoterm_names[of->incoterm]);
			jw_kstr(w, "fulfiller_id", ql->fulfiller[ci]);
			jw_kbool(w, "estate", ql->cand[ci].is_estate);
			jw_obj_end(w);
		}
	}
	jw_arr_end(w);
	jw_key(w, "lines");
	jw_arr_begin(w);
	for (unsigned i = 0; i < q->n; i++)
		quote_write_line_sourcing(w, q, i, 1);
	jw_arr_end(w);
	jw_obj_end(w);
}

/* The fulfillments array: a leg per source, its items, no carrier yet. */
static int legs_put(struct buf *b, const struct capture *k)
{
	int bad = buf_putc(b, '[');
	for (unsigned g = 0; g < k->n_legs && !bad; g++) {
		const struct cap_leg *l = &k->legs[g];
		/* the ids capture_typed gave the leg (the body's typed values); the
		 * leg's status goes after leg_id (order_doc) */
		bad = (g && buf_putc(b, ',')) || BUF_LIT(b, "{\"leg_id\":") || jb_str(b, k->body_legs[g].leg_id) ||
		      BUF_LIT(b, ",\"hold_id\":") || jb_str(b, k->body_legs[g].hold_id) || BUF_LIT(b, ",\"offer_id\":") ||
		      jb_str(b, l->offer->row.id) || BUF_LIT(b, ",\"originator_id\":") || jb_str(b, l->offer->originator_id) ||
		      BUF_LIT(b, ",\"fulfiller_id\":") || jb_str(b, l->fulfiller) || BUF_LIT(b, ",\"location_id\":") ||
		      jb_str(b, l->lv->location_id) || BUF_LIT(b, ",\"level_id\":") || jb_str(b, l->lv->row.id) ||
		      BUF_LIT(b, ",\"qty\":") || buf_put_dec(b, l->qty) || BUF_LIT(b, ",\"items\":[");
		for (unsigned i = 0; i < l->n_items && !bad; i++) {
			const struct quote_line *ql = &k->q->l[l->items[i].line];
			bad = (i && buf_putc(b, ',')) || BUF_LIT(b, "{\"line\":") || buf_put_dec(b, l->items[i].line) ||
			      BUF_LIT(b, ",\"sku\":") || jb_str(b, ql->sku) || BUF_LIT(b, ",\"wine_id\":") ||
			      jb_str(b, ql->w->row.id) || BUF_LIT(b, ",\"offer_id\":") || jb_str(b, l->offer->row.id) ||
			      BUF_LIT(b, ",\"qty\":") || buf_put_dec(b, l->items[i].qty) || buf_putc(b, '}');
		}
		bad = bad || BUF_LIT(b, "],\"carrier\":null,\"tracking_number\":null,\"tracking\":[]}");
	}
	return bad || buf_putc(b, ']');
}

/*
 * The order's body: the order document minus its state's members, whose
 * places order_doc() knows (status after id, each leg's status after its
 * leg_id, payment state and charge_id before amount, failure and saga
 * before idempotency, updated_at last).  Canonical JSON, so those places
 * are found by anchors (see engine/orders/order_state.c).
 */
static void write_order_doc(struct jw *w, const struct capture *k, const char *entity, uint32_t *anchor)
{
	const struct quote *q = k->q;
	jw_obj_begin(w);
	/* the members up to lines, appended (raw members after the object's
	 * opening: jw_raw_begin adds no comma before the first) */
	struct buf *b = jw_raw_begin(w);
	if (!b)
		return;
	int bad = BUF_LIT(b, "\"order_id\":") || jb_str(b, k->order_id) || BUF_LIT(b, ",\"id\":") ||
		  jb_str(b, k->order_id);
	anchor[OA_CHANNEL] = (uint32_t)b->len; /* the comma before the key */
	bad = bad || BUF_LIT(b, ",\"channel\":") || jb_str(b, order_channel_names[k->channel]) ||
	      BUF_LIT(b, ",\"channel_id\":") || jb_str_or_null(b, q->ch ? q->channel_id : NULL) ||
	      BUF_LIT(b, ",\"consumer\":") || consumer_put(b, k) || BUF_LIT(b, ",\"seller\":") ||
	      seller_put(b, k->seller) ||
	      BUF_LIT(b, ",\"platform_entity\":{\"entity_id\":\"platform\",\"legal_name\":") ||
	      jb_str(b, k->q->sh->cfg.platform_legal_name) || BUF_LIT(b, ",\"role\":\"merchant_of_record\"}") ||
	      BUF_LIT(b, ",\"destination_country\":") || jb_str(b, q->dest) || BUF_LIT(b, ",\"currency\":") ||
	      jb_str(b, q->all.currency);
	if (bad) {
		w->err = 1;
		return;
	}
	jw_key(w, "lines");
	write_lines(w, q);
	jw_key(w, "sourcing");
	write_sourcing(w, q);
	anchor[OA_FULFILLMENTS] = (uint32_t)w->out->len;
	jw_key(w, "fulfillments");
	b = jw_raw_begin(w);
	if (b && legs_put(b, k))
		w->err = 1;
	quote_write_totals(w, q); /* financial_breakdown, settlement_split, components, total, reference_data */
	jw_key(w, "documents");
	jw_arr_begin(w);
	jw_arr_end(w);
	jw_knull(w, "compliance");
	anchor[OA_PAYMENT] = (uint32_t)w->out->len;
	jw_key(w, "payment");
	jw_obj_begin(w);
	jw_kstr(w, "provider", "sandbox");
	jw_kstr(w, "method", pay_method_names[k->pay_method]);
	anchor[OA_AMOUNT] = (uint32_t)w->out->len;
	quote_write_money(w, "amount", q->all.total, q->all.minor);
	jw_kstr(w, "currency", q->all.currency);
	jw_obj_end(w);
	anchor[OA_IDEMPOTENCY] = (uint32_t)w->out->len;
	if (k->idem_key) {
		char hx[33];
		hex_encode(k->fp, 16, hx);
		jw_key(w, "idempotency");
		jw_obj_begin(w);
		jw_kstr(w, "entity_id", entity);
		jw_key(w, "key");
		jw_strn(w, k->idem_key, k->idem_len);
		jw_kstr(w, "fingerprint", hx);
		jw_obj_end(w);
	} else {
		jw_knull(w, "idempotency");
	}
	jw_kstr(w, "created_at", k->now);
	jw_obj_end(w);
}

/* The body's typed values, as order_decode reads them from the document
 * write_order_doc writes (the typed fast path, table.h): into f, with its
 * legs in k->body_legs, which outlive the commit (txn_put_typed copies f,
 * not the legs it points at). */
static void capture_typed(struct capture *k, const char *entity, struct order_full *f)
{
	struct order_leg *legs = k->body_legs;
	const struct quote *q = k->q;
	struct order *o = &f->o;
	memset(f, 0, sizeof(*f));
	o->pay_method = (uint8_t)k->pay_method;
	buf_strcpy(o->dest, sizeof(o->dest), q->dest);
	buf_strcpy(o->currency, sizeof(o->currency), q->all.currency);
	buf_strcpy(o->seller_id, sizeof(o->seller_id), k->seller->row.id);
	buf_strcpy(o->created_at, sizeof(o->created_at), k->now);
	o->total_minor = q->all.total;
	/* write_order_doc writes every candidate of every line (candidates_put),
	 * "permitted":false for each that is not */
	for (unsigned i = 0; i < q->n; i++)
		for (unsigned c = 0; c < q->l[i].ncand; c++)
			o->unpermitted |= !q->l[i].cand[c].permitted;
	if (k->idem_key) {
		buf_strcpy(o->idem_entity, sizeof(o->idem_entity), entity);
		snprintf(o->idem_key, sizeof(o->idem_key), "%.*s", (int)k->idem_len, k->idem_key);
		memcpy(o->idem_fp, k->fp, sizeof(o->idem_fp));
	}
	o->n_legs = k->n_legs;
	o->legs = legs;
	for (unsigned g = 0; g < k->n_legs; g++) {
		const struct cap_leg *l = &k->legs[g];
		struct order_leg *d = &legs[g];
		memset(d, 0, sizeof(*d));
		buf_str_tag_u(d->leg_id, sizeof(d->leg_id), k->order_id, ".L", g + 1);
		char id[INV_TXN_ID_MAX + 16]; /* "r<n>:" + an order id + ".H32": well under INV_HOLD_ID_MAX */
		buf_str_tag_u(id, sizeof(id), k->txn[0] ? k->txn : k->order_id, ".H", k->hold_base + g + 1);
		typed_str(d->hold_id, sizeof(d->hold_id), id); /* always fits; else decode_typed refuses */
		buf_strcpy(d->offer_id, sizeof(d->offer_id), l->offer->row.id);
		buf_strcpy(d->originator_id, sizeof(d->originator_id), l->offer->originator_id);
		buf_strcpy(d->fulfiller_id, sizeof(d->fulfiller_id), l->fulfiller);
		buf_strcpy(d->location_id, sizeof(d->location_id), l->lv->location_id);
		buf_strcpy(d->level_id, sizeof(d->level_id), l->lv->row.id);
		d->qty = l->qty;
	}
}

/* Stage the body of the order capture k made (its document and typed
 * values).  0 or -1. */
static int stage_body(struct shard *sh, struct capture *k, const char *entity)
{
	struct buf doc;
	buf_init_hint(&doc, REC_MAX_VAL, ORDER_DOC_HINT); /* one allocation for most orders, not a doubling chain */
	struct order_full f;
	capture_typed(k, entity, &f); /* first: the document writes the legs' ids it made */
	struct jw w;
	jw_init(&w, &doc);
	write_order_doc(&w, k, entity, f.o.anchor);
	int rc = w.err || txn_put_typed(sh, REC_T_ORDER, k->order_id, strlen(k->order_id), doc.data, doc.len, &f);
	buf_free(&doc);
	return rc ? -1 : 0;
}

/* ---- capture: the request ---------------------------------------------------------------- */

/* The body members capture reads beyond the quote's (destination_country, seller, lines). */
static void parse_capture(struct api_ctx *c, const struct json_value *b, struct capture *k)
{
	static const char *const known[] = {"channel", "channel_id", "consumer", "seller", "destination_country",
					    "lines", "payment", "quote", NULL};
	fld_reject_unknown(c, b, known, NULL);
	k->channel = OC_MARKETPLACE;
	fld_enum(c, b, "channel", NULL, order_channel_names, &k->channel);
	const struct json_value *cv = json_get(b, "consumer");
	if (!cv || cv->type != JSON_OBJECT) {
		api_field_error(c, "consumer", "required", "an object {name, email, address}");
	} else {
		static const char *const ck[] = {"consumer_id", "name", "email", "address", "country", NULL};
		fld_reject_unknown(c, cv, ck, "consumer.");
		if (fld_str(c, cv, "consumer_id", "consumer.consumer_id", k->consumer_id, ORDER_REF_MAX) == FLD_ABSENT)
			k->consumer_id[0] = 0;
		int nr = fld_str(c, cv, "name", "consumer.name", k->name, ORDER_TEXT_MAX);
		if (nr == FLD_ABSENT || nr == FLD_NULL) /* FLD_BAD: fld_str listed it already */
			api_field_error(c, "consumer.name", "required", "is required");
		int er = fld_str(c, cv, "email", "consumer.email", k->email, ORDER_EMAIL_MAX);
		const char *at = er == FLD_SET ? strchr(k->email, '@') : NULL;
		if (er != FLD_BAD && (!at || at == k->email || !strchr(at, '.') || strchr(at + 1, '@') ||
				      strchr(k->email, ' ')))
			api_field_error(c, "consumer.email", "format", "an email address");
		const struct json_value *av = json_get(cv, "address");
		if (!av || av->type != JSON_OBJECT) {
			api_field_error(c, "consumer.address", "required", "an object {line1, city, postal_code}");
		} else {
			static const char *const ak[] = {"line1", "line2", "city", "postal_code", "region", "country", NULL};
			fld_reject_unknown(c, av, ak, "consumer.address.");
			/* required: absent or null (FLD_BAD: fld_text listed it already) */
			int r = fld_text(c, av, "line1", "consumer.address.line1", &k->addr_line1, ORDER_TEXT_MAX);
			if (r == FLD_ABSENT || r == FLD_NULL)
				api_field_error(c, "consumer.address.line1", "required", "is required");
			fld_text(c, av, "line2", "consumer.address.line2", &k->addr_line2, ORDER_TEXT_MAX);
			r = fld_text(c, av, "city", "consumer.address.city", &k->city, ORDER_TEXT_MAX);
			if (r == FLD_ABSENT || r == FLD_NULL)
				api_field_error(c, "consumer.address.city", "required", "is required");
			r = fld_text(c, av, "postal_code", "consumer.address.postal_code", &k->postal_code, 16);
			if (r == FLD_ABSENT || r == FLD_NULL)
				api_field_error(c, "consumer.address.postal_code", "required", "1..16 characters");
			fld_text(c, av, "region", "consumer.address.region", &k->region, ORDER_TEXT_MAX);
			char cc[3];
			const struct json_value *dv = json_get(b, "destination_country");
			if (fld_country(c, av, "country", "consumer.address.country", cc) == FLD_SET && dv &&
			    dv->type == JSON_STRING && strcmp(cc, dv->u.str))
				api_field_error(c, "consumer.address.country", "destination_mismatch",
						"the delivery address must be in destination_country");
		}
		char cc[3];
		const struct json_value *dv = json_get(b, "destination_country");
		if (fld_country(c, cv, "country", "consumer.country", cc) == FLD_SET && dv && dv->type == JSON_STRING &&
		    strcmp(cc, dv->u.str))
			api_field_error(c, "consumer.country", "destination_mismatch",
					"the consumer's country is the destination country");
	}
	k->pay_method = PM_SANDBOX_OK;
	const struct json_value *pv = json_get(b, "payment");
	if (pv && pv->type != JSON_OBJECT)
		api_field_error(c, "payment", "type", "an object {method}");
	else if (pv) {
		static const char *const pk[] = {"method", NULL};
		fld_reject_unknown(c, pv, pk, "payment.");
		fld_enum(c, pv, "method", "payment.method", pay_method_names, &k->pay_method);
	}
	const struct json_value *qv = json_get(b, "quote");
	if (qv && (qv->type != JSON_OBJECT || !json_get(qv, "total") || json_get(qv, "total")->type != JSON_NUMBER))
		api_field_error(c, "quote", "type", "an object {total, currency} of the quote accepted");
}

_Static_assert((int)OC_MARKETPLACE == (int)CHK_MARKETPLACE && (int)OC_WEBSHOP_CONNECT == (int)CHK_WEBSHOP_CONNECT &&
		       (int)OC_POS_QR == (int)CHK_POS_QR && (int)ORDER_N_CHANNEL == (int)CHANNEL_N_KIND,
	       "an order's channel is its sales channel's kind");

/* Through a sales channel, the order's `channel` is the channel's kind:
 * absent it takes the kind, a different one is a 422 naming both.  0, or
 * -1 with the 422 written. */
static int channel_kind_agrees(struct api_ctx *c, const struct json_value *b, struct capture *k)
{
	const struct channel *ch = k->q->ch;
	if (!ch)
		return 0;
	if (!json_get(b, "channel")) {
		k->channel = ch->kind;
		return 0;
	}
	if (k->channel == ch->kind)
		return 0;
	api_field_error(c, "channel", "channel_kind", "sales channel %s is a %s channel, not %s", k->q->channel_id,
			channel_kind_names[ch->kind], order_channel_names[k->channel]);
	api_validation_failed(c);
	return -1;
}

/* The accepted quote's total against the capture price: 0, or -1 with the 409 written. */
static int check_accepted(struct api_ctx *c, const struct json_value *b, const struct quote *q)
{
	const struct json_value *qv = json_get(b, "quote");
	if (!qv)
		return 0;
	const struct json_value *cur = json_get(qv, "currency");
	int64_t t;
	int same_cur = !cur || (cur->type == JSON_STRING && !strcmp(cur->u.str, q->all.currency));
	if (same_cur && !json_to_fixed(json_get(qv, "total"), (unsigned)q->all.minor, &t) && t == q->all.total)
		return 0;
	buf_reset(&c->rs->body);
	jw_init(&c->w, &c->rs->body);
	c->rs->status = 409;
	c->rs->content_type = PROBLEM_CONTENT_TYPE;
	problem_begin(&c->w, 409, "quote_changed", "Conflict",
		      "the price at capture differs from the quote accepted; quote again and show the new total");
	jw_key(&c->w, "quoted_total");
	jw_value(&c->w, json_get(qv, "total"));
	quote_write_money(&c->w, "current_total", q->all.total, q->all.minor);
	jw_kstr(&c->w, "currency", q->all.currency);
	problem_end(&c->w);
	return -1;
}

/* ---- the views: one function serialises every role's view ---------------------------- */

/* The roles a caller holds on one order (several at once: an estate that
 * ships its own leg is its originator and its fulfiller). */
enum { OR_SELLER = 1, OR_ORIGINATOR = 2, OR_FULFILLER = 4 };

struct order_view {
	int platform;             /* the whole document */
	int consumer;             /* the order's consumer (a consumer token): consumer_members */
	unsigned roles;           /* OR_* of `me` on this order */
	const char *me;           /* the caller's entity */
};

/* The caller's view of o, from the typed legs (the same data the document's
 * sources and legs were written from). */
static struct order_view view_of(const struct api_ctx *c, const struct order *o)
{
	struct order_view v = {.platform = c->who.is_platform, .roles = 0, .me = c->who.entity_id};
	if (c->who.kind == PRINCIPAL_CONSUMER) {
		v.consumer = !strcmp(o->row.id, v.me);
		return v;
	}
	if (!strcmp(o->seller_id, v.me))
		v.roles |= OR_SELLER;
	for (unsigned i = 0; i < o->n_legs; i++) {
		if (!strcmp(o->legs[i].originator_id, v.me))
			v.roles |= OR_ORIGINATOR;
		if (!strcmp(o->legs[i].fulfiller_id, v.me))
			v.roles |= OR_FULFILLER;
	}
	return v;
}

/* Leg l is in view v (the rule order_view_write applies to fulfillments[]). */
static int leg_in_view(const struct order_view *v, const struct order_leg *l)
{
	return v->platform || v->consumer || (v->roles & OR_SELLER) || !strcmp(l->originator_id, v->me) ||
	       !strcmp(l->fulfiller_id, v->me);
}

/* True if name is in the NULL-terminated list. */
static int in_list(const char *const *list, const char *name)
{
	for (unsigned i = 0; list[i]; i++)
		if (!strcmp(list[i], name))
			return 1;
	return 0;
}

/* The members of object obj, in its order: those in keep (keep NULL: all)
 * and not in drop (drop NULL: none). */
static void copy_members(struct jw *w, const struct json_value *obj, const char *const *keep, const char *const *drop)
{
	jw_obj_begin(w);
	for (uint32_t i = 0; obj->type == JSON_OBJECT && i < obj->len; i++) {
		const struct json_member *m = &obj->u.members[i];
		if ((keep && !in_list(keep, m->key)) || (drop && in_list(drop, m->key)))
			continue;
		jw_keyn(w, m->key, m->key_len);
		jw_value(w, &m->value);
	}
	jw_obj_end(w);
}

/* obj's string member k equals s. */
static int str_is(const struct json_value *obj, const char *k, const char *s)
{
	const struct json_value *x = obj->type == JSON_OBJECT ? json_get(obj, k) : NULL;
	return x && x->type == JSON_STRING && !strcmp(x->u.str, s);
}

/* obj's integer member "line", or -1. */
static int64_t line_of(const struct json_value *obj)
{
	int64_t n;
	const struct json_value *x = obj->type == JSON_OBJECT ? json_get(obj, "line") : NULL;
	return x && !json_to_int64(x, &n) ? n : -1;
}

/* What a source or leg of another participant's order shows a caller that
 * ships it but does not own it: no price (p2b), none of the owner's stock
 * internals (hold and level ids). */
static const char *const ship_only_drop[] = {"p2b", "p2b_currency", "hold_id", "level_id", NULL};

/* How much of a source or leg entry (originator_id / fulfiller_id members)
 * the caller sees: 2 all (its own), 1 the shipping view, 0 nothing. */
static int entry_share(const struct json_value *e, const struct order_view *v)
{
	if ((v->roles & OR_ORIGINATOR) && str_is(e, "originator_id", v->me))
		return 2;
	if ((v->roles & OR_FULFILLER) && str_is(e, "fulfiller_id", v->me))
		return 1;
	return 0;
}

/* An array of source or leg entries, each as entry_share says. */
static void write_entries(struct jw *w, const struct json_value *arr, const struct order_view *v)
{
	jw_arr_begin(w);
	for (uint32_t i = 0; arr->type == JSON_ARRAY && i < arr->len; i++) {
		int share = entry_share(&arr->u.items[i], v);
		if (share)
			copy_members(w, &arr->u.items[i], NULL, share == 2 ? NULL : ship_only_drop);
	}
	jw_arr_end(w);
}

/* A fulfiller ships something of line n: a leg of its has an item of it. */
static int ships_line(const struct json_value *legs, int64_t n, const struct order_view *v)
{
	for (uint32_t i = 0; legs && legs->type == JSON_ARRAY && i < legs->len; i++) {
		const struct json_value *g = &legs->u.items[i], *items = json_get(g, "items");
		if (!(v->roles & OR_FULFILLER) || !str_is(g, "fulfiller_id", v->me) || !items || items->type != JSON_ARRAY)
			continue;
		for (uint32_t k = 0; k < items->len; k++)
			if (line_of(&items->u.items[k]) == n)
				return 1;
	}
	return 0;
}

/* lines[] for a participant: the lines it supplies (with its own sources,
 * p2b but no consumer price) or ships (what and how it is packed). */
static void write_part_lines(struct jw *w, const struct json_value *lines, const struct json_value *legs,
			     const struct order_view *v)
{
	static const char *const keep[] = {"line", "sku", "wine_id", "box_units", NULL};
	static const char *const src_keep[] = {"offer_id", "originator_id", "qty", "p2b", "p2b_currency", NULL};
	jw_arr_begin(w);
	for (uint32_t i = 0; lines->type == JSON_ARRAY && i < lines->len; i++) {
		const struct json_value *ln = &lines->u.items[i], *srcs = json_get(ln, "sources");
		int mine = 0;
		for (uint32_t k = 0; srcs && srcs->type == JSON_ARRAY && k < srcs->len; k++)
			mine |= (v->roles & OR_ORIGINATOR) && str_is(&srcs->u.items[k], "originator_id", v->me);
		if (!mine && !ships_line(legs, line_of(ln), v))
			continue;
		jw_obj_begin(w);
		for (uint32_t m = 0; ln->type == JSON_OBJECT && m < ln->len; m++)
			if (in_list(keep, ln->u.members[m].key)) {
				jw_keyn(w, ln->u.members[m].key, ln->u.members[m].key_len);
				jw_value(w, &ln->u.members[m].value);
			}
		if (mine) {
			jw_key(w, "sources");
			jw_arr_begin(w);
			for (uint32_t k = 0; k < srcs->len; k++)
				if (str_is(&srcs->u.items[k], "originator_id", v->me))
					copy_members(w, &srcs->u.items[k], src_keep, NULL);
			jw_arr_end(w);
		}
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

/* settlement_split for a participant: its own payouts only. */
static void write_part_settlement(struct jw *w, const struct json_value *ss, const struct order_view *v)
{
	const struct json_value *cur = json_get(ss, "currency"), *parties = json_get(ss, "parties");
	jw_obj_begin(w);
	if (cur) {
		jw_key(w, "currency");
		jw_value(w, cur);
	}
	jw_key(w, "parties");
	jw_arr_begin(w);
	for (uint32_t i = 0; parties && parties->type == JSON_ARRAY && i < parties->len; i++)
		if (str_is(&parties->u.items[i], "partner_id", v->me))
			jw_value(w, &parties->u.items[i]);
	jw_arr_end(w);
	jw_obj_end(w);
}

/* A candidate the seller may not see: refused by a rule about the seller
 * itself (recorded by an order placed before this rule, or by the platform
 * for the seller). */
static int cand_hidden(const struct json_value *cand)
{
	const struct json_value *perm = json_get(cand, "permission"), *ok = json_get(cand, "permitted");
	if (ok && ok->type == JSON_TRUE)
		return 0;
	return !perm || perm->type != JSON_STRING || quote_permission_hidden(perm->u.str);
}

/* sourcing for the seller: the whole member minus the candidates it may not
 * see (spec 5: the read-path filter applies before serialisation). */
static void write_seller_sourcing(struct jw *w, const struct json_value *src)
{
	jw_obj_begin(w);
	for (uint32_t i = 0; src->type == JSON_OBJECT && i < src->len; i++) {
		const struct json_member *m = &src->u.members[i];
		jw_keyn(w, m->key, m->key_len);
		if (strcmp(m->key, "lines") || m->value.type != JSON_ARRAY) {
			jw_value(w, &m->value);
			continue;
		}
		jw_arr_begin(w);
		for (uint32_t l = 0; l < m->value.len; l++) {
			const struct json_value *ln = &m->value.u.items[l];
			jw_obj_begin(w);
			for (uint32_t k = 0; ln->type == JSON_OBJECT && k < ln->len; k++) {
				const struct json_member *lm = &ln->u.members[k];
				jw_keyn(w, lm->key, lm->key_len);
				if (strcmp(lm->key, "candidates") || lm->value.type != JSON_ARRAY) {
					jw_value(w, &lm->value);
					continue;
				}
				jw_arr_begin(w);
				for (uint32_t ci = 0; ci < lm->value.len; ci++)
					if (!cand_hidden(&lm->value.u.items[ci]))
						jw_value(w, &lm->value.u.items[ci]);
				jw_arr_end(w);
			}
			jw_obj_end(w);
		}
		jw_arr_end(w);
	}
	jw_obj_end(w);
}

/* consumer for a participant: consumer_id and country; a fulfiller also the
 * name and address it ships to; never the email (the seller's relationship). */
static void write_part_consumer(struct jw *w, const struct json_value *cv, const struct order_view *v)
{
	static const char *const keep[] = {"consumer_id", "country", NULL};
	static const char *const keep_ship[] = {"consumer_id", "name", "address", "country", NULL};
	copy_members(w, cv, (v->roles & OR_FULFILLER) ? keep_ship : keep, NULL);
}

/* How a top-level member reaches a participant that is not the order's
 * seller; a member not listed (channel_id, financial_breakdown,
 * components, total, reference_data, documents, compliance, payment,
 * idempotency, and any member a later build adds) is not shown. */
enum part_how { PH_COPY, PH_CONSUMER, PH_LINES, PH_SOURCING, PH_LEGS, PH_SETTLEMENT };
static const struct {
	const char *key;
	uint8_t how;
} part_members[] = {
	{"order_id", PH_COPY},	       {"id", PH_COPY},		   {"status", PH_COPY},
	{"channel", PH_COPY},	       {"consumer", PH_CONSUMER},  {"seller", PH_COPY},
	{"platform_entity", PH_COPY},  {"destination_country", PH_COPY}, {"currency", PH_COPY},
	{"lines", PH_LINES},	       {"sourcing", PH_SOURCING},  {"fulfillments", PH_LEGS},
	{"settlement_split", PH_SETTLEMENT}, {"failure", PH_COPY}, {"saga", PH_COPY},
	{"created_at", PH_COPY},       {"updated_at", PH_COPY},
};

/* What the order's consumer sees (a consumer token, consumer_token.h): what
 * it bought and pays, where its parcels are, its invoice; never the B2B
 * prices (p2b), the routing, the stock internals, the split of the money
 * or the seller's idempotency record.  drop: members left out of each
 * entry of an array member. */
static const char *const consumer_line_drop[] = {"p2b", "p2b_currency", "sources", NULL};
static const struct {
	const char *key;
	const char *const *drop;
} consumer_members[] = {
	{"order_id", NULL},	   {"id", NULL},	{"status", NULL},	  {"channel", NULL},
	{"consumer", NULL},	   {"seller", NULL},	{"platform_entity", NULL}, {"destination_country", NULL},
	{"currency", NULL},	   {"lines", consumer_line_drop}, {"fulfillments", ship_only_drop},
	{"financial_breakdown", NULL}, {"components", NULL}, {"total", NULL}, {"documents", NULL},
	{"payment", NULL},	   {"failure", NULL},	{"created_at", NULL},	  {"updated_at", NULL},
};

/* The consumer_members index of key, or -1. */
static int consumer_member(const char *key)
{
	for (unsigned k = 0; k < sizeof(consumer_members) / sizeof(consumer_members[0]); k++)
		if (!strcmp(consumer_members[k].key, key))
			return (int)k;
	return -1;
}

/* The part_members index of key, or -1 when a participant does not see it. */
static int part_member(const char *key)
{
	for (unsigned k = 0; k < sizeof(part_members) / sizeof(part_members[0]); k++)
		if (!strcmp(part_members[k].key, key))
			return (int)k;
	return -1;
}

/* View v shows member key: the platform and the seller all of it (the
 * seller's idempotency record included), a participant what part_members lists. */
static int member_shown(const char *key, const struct order_view *v)
{
	if (v->consumer)
		return consumer_member(key) >= 0;
	return v->platform || (v->roles & OR_SELLER) || part_member(key) >= 0;
}

/* The value of member m of the document (shown: member_shown) as view v shows it. */
static void write_member_view(struct jw *w, const struct json_value *root, const struct json_member *m,
			      const struct order_view *v)
{
	if (v->platform) {
		jw_value(w, &m->value);
		return;
	}
	if (v->consumer) {
		const char *const *drop = consumer_members[consumer_member(m->key)].drop;
		if (!drop || m->value.type != JSON_ARRAY) {
			jw_value(w, &m->value);
			return;
		}
		jw_arr_begin(w);
		for (uint32_t i = 0; i < m->value.len; i++)
			copy_members(w, &m->value.u.items[i], NULL, drop);
		jw_arr_end(w);
		return;
	}
	if (v->roles & OR_SELLER) { /* its order: all of it, minus the candidates it may not see */
		if (!strcmp(m->key, "sourcing"))
			write_seller_sourcing(w, &m->value);
		else
			jw_value(w, &m->value);
		return;
	}
	switch (part_members[part_member(m->key)].how) {
	case PH_COPY:
		jw_value(w, &m->value);
		break;
	case PH_CONSUMER:
		write_part_consumer(w, &m->value, v);
		break;
	case PH_LINES:
		write_part_lines(w, &m->value, json_get(root, "fulfillments"), v);
		break;
	case PH_SOURCING: {
		const struct json_value *pr = json_get(&m->value, "priority"), *src = json_get(&m->value, "source");
		jw_obj_begin(w);
		if (pr) {
			jw_key(w, "priority");
			jw_value(w, pr);
		}
		jw_key(w, "source");
		if (src)
			write_entries(w, src, v);
		else {
			jw_arr_begin(w);
			jw_arr_end(w);
		}
		jw_obj_end(w);
		break;
	}
	case PH_LEGS:
		write_entries(w, &m->value, v);
		break;
	case PH_SETTLEMENT:
		write_part_settlement(w, &m->value, v);
		break;
	}
}

/*
 * THE serialiser of an order for a reader (issue 22 item 3): the stored
 * document (root: body and state, order_doc) as view v may see it --
 *   platform     everything;
 *   seller       its order, everything (its margin, every source, the
 *                consumer's email, its idempotency record) minus the
 *                routing candidates it may not see;
 *   originator   the order's identity and state, the seller, the consumer's
 *                id and country, the lines it supplies with its own sources
 *                (its p2b), its own sources and legs, its own payout; no
 *                other originator's offer, price, stock or payout, no
 *                consumer price, margin, fee or tax;
 *   fulfiller    the same identity and state, the consumer's name and
 *                address (ship-to, never the email), the lines it ships
 *                (sku, box_units), the sources and legs it ships without
 *                prices or the owner's hold and level ids, its own payout;
 *   consumer     (a consumer token of this order) what consumer_members
 *                lists: what it bought and pays, its parcels, its invoice;
 * roles add up (an estate shipping its own leg is both).  member: NULL for
 * the whole view, else that member's value in it (null when the view does
 * not show it).
 */
static void order_view_write(struct jw *w, const struct json_value *root, const struct order_view *v,
			     const char *member)
{
	if (member) {
		const struct json_member *m = NULL;
		for (uint32_t i = 0; i < root->len && !m; i++)
			if (!strcmp(root->u.members[i].key, member))
				m = &root->u.members[i];
		if (m && member_shown(m->key, v))
			write_member_view(w, root, m, v);
		else
			jw_null(w);
		return;
	}
	jw_obj_begin(w);
	for (uint32_t i = 0; i < root->len; i++) {
		const struct json_member *m = &root->u.members[i];
		if (!member_shown(m->key, v))
			continue;
		jw_keyn(w, m->key, m->key_len);
		write_member_view(w, root, m, v);
	}
	jw_obj_end(w);
}

/*
 * Write the order as the caller may see it (order_view_write).  The
 * platform's whole order, and a seller's with no candidate it may not see
 * (no unpermitted candidate at all), are the stored bytes as they are.
 */
static void write_view(struct api_ctx *c, struct jw *w, const struct order *o, const char *member)
{
	struct order_view v = view_of(c, o);
	const struct order_state *s = order_state_get(c->sh, o->row.id, o->row.id_len);
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	/* the body plus the state's few hundred bytes: one allocation, not a
	 * doubling chain (a failure here is the same failure later) */
	(void)buf_reserve(&doc, o->row.doc_len + 1024);
	struct json_doc *d = NULL;
	const char *legs[ORDER_MAX_LEGS];
	for (unsigned i = 0; i < o->n_legs; i++)
		legs[i] = o->legs[i].leg_id;
	int bad = !s || order_doc(o, s, &doc) || leg_tracks_splice(c->sh, legs, o->n_legs, &doc) ||
		  order_documents_splice(c, o, &doc);
#ifdef WM_TESTING
	/* what is spliced in (state, tracking, documents) never adds the mark */
	assert(bad || !o->unpermitted == !memmem(doc.data, doc.len, UNPERMITTED, sizeof(UNPERMITTED) - 1));
#endif
	if (bad)
		w->err = 1;
	else if (!member && (v.platform || ((v.roles & OR_SELLER) && !o->unpermitted)))
		jw_raw(w, doc.data, doc.len);
	else if (!(d = json_parse(doc.data, doc.len, NULL, NULL)))
		w->err = 1;
	else
		order_view_write(w, json_root(d), &v, member);
	json_doc_free(d);
	buf_free(&doc);
}

/* The order's current values (o from order_get: its state exists). */
static const struct order_state_v *cur(struct shard *sh, const struct order *o)
{
	return &order_state_get(sh, o->row.id, o->row.id_len)->v;
}

/* The answer to a create (first time or replayed): the order, or why it failed. */
void order_answer_create(struct api_ctx *c, const struct order *o, int replay)
{
	static const struct { uint8_t failure; uint16_t status; const char *title; } fail_http[] = {
		{OF_INSUFFICIENT_STOCK, 409, "Conflict"},
		{OF_PAYMENT_DECLINED, 402, "Payment Required"},
		{OF_PAYMENT_FAILED, 502, "Bad Gateway"},
		{OF_PAYMENT_TIMEOUT, 504, "Gateway Timeout"},
		{OF_PAYMENT_UNAVAILABLE, 503, "Service Unavailable"},
		/* final, like every failure: a 409 tells the client that retrying the
		 * same key replays it and that a new order needs a new key (a 503
		 * would invite retrying the same key for ever) */
		{OF_INTERRUPTED, 409, "Conflict"},
		{OF_STORE, 500, "Internal Server Error"},
	};
	if (replay)
		buf_puts(&c->rs->headers, "Idempotent-Replayed: true\r\n");
	buf_printf(&c->rs->headers, "Location: /v1/orders/%s\r\n", o->row.id);
	const struct order_state_v *st = cur(c->sh, o);
	if (st->status != ORD_FAILED) {
		c->rs->status = 201;
		write_view(c, &c->w, o, NULL);
		return;
	}
	unsigned i = 0;
	while (i + 1 < sizeof(fail_http) / sizeof(fail_http[0]) && fail_http[i].failure != st->failure)
		i++;
	buf_reset(&c->rs->body);
	jw_init(&c->w, &c->rs->body);
	c->rs->status = fail_http[i].status;
	c->rs->content_type = PROBLEM_CONTENT_TYPE;
	problem_begin(&c->w, fail_http[i].status, order_failure_codes[st->failure], fail_http[i].title,
		      "the order failed; every hold was released and any charge refunded (see order.failure)");
	jw_kstr(&c->w, "order_id", o->row.id);
	jw_key(&c->w, "order");
	write_view(c, &c->w, o, NULL);
	problem_end(&c->w);
}

/* Idempotency: 0 to go on (k->idem_key set or not), 1 answered. */
static int capture_idem(struct api_ctx *c, struct capture *k)
{
	int got = idem_request_key(c, &k->idem_key, &k->idem_len);
	if (got < 0)
		return 1;
	if (got == 0) {
		k->idem_key = NULL;
		return 0;
	}
	idem_fingerprint(c->http, k->fp);
	const struct order *o = order_by_idem(c->sh, c->who.entity_id, k->idem_key, k->idem_len);
	if (!o)
		return 0;
	if (memcmp(o->idem_fp, k->fp, 16)) {
		api_error(c, 422, "idempotency_key_reused",
			  "this Idempotency-Key was already used for a different order request");
		return 1;
	}
	order_answer_create(c, o, 1);
	return 1;
}

static void order_create(struct api_ctx *c)
{
	struct capture *k = capture_new();
	if (!k) {
		api_error(c, 503, "overloaded", "out of memory");
		return;
	}
	const struct json_value *b;
	if (capture_idem(c, k) || !(b = api_body(c)))
		goto out;
	parse_capture(c, b, k);
	k->q = quote_compute(c, b, 1); /* answers every field error at once, ours included */
	char coordinator[8] = "";
	int remote;
	if (!k->q || channel_kind_agrees(c, b, k) || check_accepted(c, b, k->q) || build_legs(c, k) ||
	    (remote = legs_remote(c, k, coordinator)) < 0)
		goto out;
	k->seller = partner_get(c->sh, k->q->seller, strlen(k->q->seller));
	if (!k->consumer_id[0])
		id_new(&c->sh->ids, "cons", k->consumer_id);
	id_new_country(&c->sh->ids, "ord", k->q->dest, k->order_id);
	if (remote)
		snprintf(k->txn, sizeof(k->txn), "%s:%s", coordinator, k->order_id);
	fmt_rfc3339_ms(k->now, wall_ms());

	struct order_state_v st;
	order_state_initial(&st, k->n_legs, k->now);
	struct order_volume_line vl[QUOTE_MAX_LINES];
	for (unsigned i = 0; i < k->q->n; i++)
		vl[i] = (struct order_volume_line){.category = k->q->l[i].cat, .qty = k->q->l[i].qty,
						   .unit_ul = k->q->l[i].w->volume_ul > 0 ? k->q->l[i].w->volume_ul : 0};
	char who[ORDER_EMAIL_MAX + 8]; /* the email, or "id:" and the consumer id (truncated as snprintf would) */
	size_t wl = buf_strcpy(who, sizeof(who), k->email[0] ? "" : "id:");
	buf_strcpy(who + wl, sizeof(who) - wl, k->email[0] ? k->email : k->consumer_id);
	txn_begin(c->sh); /* T0: the body, the state, order.placed, the consumer's volume */
	int vol = order_volume_capture(c, k->order_id, k->q->dest, who, vl, k->q->n);
	if (vol > 0) { /* over a cap: answered */
		txn_abort(c->sh);
		goto out;
	}
	int bad = vol || stage_body(c->sh, k, c->who.entity_id) ||
		  stage_state_row(c->sh, k->order_id, strlen(k->order_id), &st) ||
		  stage_event(c->sh, "order.placed", k->order_id, ORD_PLACED, k->q->seller, k->q->dest, k->q->all.total,
			      k->q->all.currency, OF_NONE, NULL) ||
		  !txn_commit(c->sh);
	if (bad) {
		txn_abort(c->sh);
		api_error(c, 500, "commit_failed", "the order could not be stored");
		goto out;
	}
	saga_crash_point(c->sh, "order_crash_after_placed");
	if (!k->txn[0])
		saga_drive(c->sh, k->order_id, 0);
	const struct order *o = order_get(c->sh, k->order_id, strlen(k->order_id));
	if (o && k->txn[0])
		answer_txn_plan(c, o, k->txn); /* the router drives it (order_txn.c) */
	else if (o)
		order_answer_create(c, o, 0);
	else
		api_error(c, 500, "commit_failed", "the order could not be read back");
out:
	quote_free(k->q);
	free(k);
}

/* ---- re-plan (cross-shard, DESIGN.md 9 step 2) --------------------------------------------- */

/* The stored order's consumer_id (generated at capture when the seller
 * gave none) into out (ORDER_REF_MAX + 1 bytes): 0, or -1. */
static int stored_consumer_id(const struct order *o, char *out)
{
	struct json_doc *d = json_parse(o->row.doc, o->row.doc_len, NULL, NULL);
	const struct json_value *cv = d ? json_get(json_root(d), "consumer") : NULL;
	const struct json_value *id = cv && cv->type == JSON_OBJECT ? json_get(cv, "consumer_id") : NULL;
	int ok = id && id->type == JSON_STRING && id->len <= ORDER_REF_MAX;
	if (ok)
		memcpy(out, id->u.str, id->len + 1);
	json_doc_free(d);
	return ok ? 0 : -1;
}

void order_replan(struct api_ctx *c, const struct order *o, const struct json_value *request,
		  const struct inv_atp_override *atp)
{
	struct capture *k = capture_new();
	char idem[IDEM_MAX_KEY + 1], entity[ID_MAX_LEN], consumer[ORDER_REF_MAX + 1], cc[3];
	if (!k || stored_consumer_id(o, consumer)) {
		api_error(c, 503, "overloaded", "the order cannot be re-planned now");
		free(k);
		return;
	}
	/* what stays the order's: id, transaction, key, consumer, creation */
	buf_strcpy(k->order_id, sizeof(k->order_id), o->row.id);
	order_txn_of(o, k->txn, sizeof(k->txn));
	buf_strcpy(idem, sizeof(idem), o->idem_key);
	buf_strcpy(entity, sizeof(entity), o->idem_entity[0] ? o->idem_entity : c->who.entity_id);
	uint8_t fp[16];
	memcpy(fp, o->idem_fp, sizeof(fp));
	char created[ORDER_TS_MAX];
	buf_strcpy(created, sizeof(created), o->created_at);
	parse_capture(c, request, k);
	inv_plan_override(atp);
	k->q = quote_compute(c, request, 1);
	int bad = !k->q || channel_kind_agrees(c, request, k) || check_accepted(c, request, k->q) || build_legs(c, k);
	inv_plan_override(NULL);
	if (bad)
		goto out; /* the refusal (422 insufficient_stock, ...) is written */
	if (!leg_elsewhere(c->sh, k, cc)) {
		api_error(c, 409, "replan_local", "the new plan needs no other shard; the cross-shard order fails");
		goto out;
	}
	k->seller = partner_get(c->sh, k->q->seller, strlen(k->q->seller));
	buf_strcpy(k->consumer_id, sizeof(k->consumer_id), consumer);
	k->idem_key = idem[0] ? idem : NULL;
	k->idem_len = strlen(idem);
	memcpy(k->fp, fp, sizeof(fp));
	buf_strcpy(k->now, sizeof(k->now), created);
	k->hold_base = ORDER_REPLAN_HOLD_BASE;
	struct order_state_v st;
	order_state_initial(&st, k->n_legs, k->now);
	txn_begin(c->sh); /* the new plan replaces the first, still placed */
	int rc = stage_body(c->sh, k, entity) || stage_state_row(c->sh, k->order_id, strlen(k->order_id), &st) ||
		 !txn_commit(c->sh);
	const struct order *o2 = rc ? NULL : order_get(c->sh, k->order_id, strlen(k->order_id));
	if (!o2) {
		txn_abort(c->sh);
		api_error(c, 500, "commit_failed", "the new plan could not be stored");
		goto out;
	}
	log_info("msg=\"cross-shard order re-planned\" order=%s legs=%u", k->order_id, k->n_legs);
	answer_txn_plan(c, o2, k->txn);
out:
	quote_free(k->q);
	free(k);
}

/* ---- reads --------------------------------------------------------------------------------- */

/* The order named by the path if the caller may see it, else NULL with the 404 written. */
const struct order *order_visible_id(struct api_ctx *c, const char *id)
{
	const struct order *o = id && id[0] ? order_get(c->sh, id, strlen(id)) : NULL;
	if (o && (c->who.is_platform || order_involves(o, c->who.entity_id) ||
		  (c->who.kind == PRINCIPAL_CONSUMER && !strcmp(o->row.id, c->who.entity_id))))
		return o;
	api_error(c, 404, "not_found", "no order with this id");
	return NULL;
}

static const struct order *visible_order(struct api_ctx *c)
{
	char id[ID_MAX_LEN];
	return order_visible_id(c, api_param(c, 0, id, sizeof(id)) > 0 ? id : NULL);
}

const struct order *order_visible(struct api_ctx *c) { return visible_order(c); }

const struct order *order_sublist_begin(struct api_ctx *c)
{
	const struct order *o = visible_order(c);
	if (!o || api_read_row(c))
		return NULL;
	c->rs->status = 200;
	jw_obj_begin(&c->w);
	jw_key(&c->w, "data");
	jw_arr_begin(&c->w);
	return o;
}

void order_sublist_end(struct api_ctx *c)
{
	jw_arr_end(&c->w);
	jw_obj_end(&c->w);
}

int order_visible_leg(struct api_ctx *c, const struct order *o)
{
	char leg[64];
	struct order_view v = view_of(c, o);
	if (api_param(c, 1, leg, sizeof(leg)) > 0)
		for (unsigned i = 0; i < o->n_legs; i++)
			if (!strcmp(o->legs[i].leg_id, leg) && leg_in_view(&v, &o->legs[i]))
				return (int)i;
	api_error(c, 404, "not_found", "no such fulfilment leg on this order");
	return -1;
}

int order_leg_in_view(const struct api_ctx *c, const struct order *o, unsigned li)
{
	struct order_view v = view_of(c, o);
	return li < o->n_legs && leg_in_view(&v, &o->legs[li]);
}

int order_leg_fulfiller(const struct api_ctx *c, const struct order_leg *l)
{
	return c->who.is_platform || !strcmp(l->fulfiller_id, c->who.entity_id);
}

void order_answer(struct api_ctx *c, int status, const struct order *o)
{
	c->rs->status = status;
	write_view(c, &c->w, o, NULL);
}

void order_conflict(struct api_ctx *c, const char *code, const char *detail, const struct order *o, int leg)
{
	const struct order_state_v *sv = cur(c->sh, o);
	buf_reset(&c->rs->body);
	jw_init(&c->w, &c->rs->body);
	c->rs->status = 409;
	c->rs->content_type = PROBLEM_CONTENT_TYPE;
	problem_begin(&c->w, 409, code ? code : "invalid_order_state", "Conflict", detail);
	jw_kstr(&c->w, "current_status", order_status_names[sv->status]);
	if (leg >= 0) {
		jw_kstr(&c->w, "leg_id", o->legs[leg].leg_id);
		jw_kstr(&c->w, "leg_status", leg_status_names[sv->leg_status[leg]]);
	}
	problem_end(&c->w);
}

static void order_read(struct api_ctx *c)
{
	const struct order *o = visible_order(c);
	if (!o || api_read_row(c))
		return;
	c->rs->status = 200;
	write_view(c, &c->w, o, NULL);
}

static void order_sourcing(struct api_ctx *c)
{
	const struct order *o = visible_order(c);
	if (!o || api_read_row(c))
		return;
	c->rs->status = 200;
	write_view(c, &c->w, o, "sourcing");
}

static void order_fulfillments(struct api_ctx *c)
{
	const struct order *o = visible_order(c);
	if (!o || api_read_row(c))
		return;
	c->rs->status = 200;
	jw_obj_begin(&c->w);
	jw_kstr(&c->w, "order_id", o->row.id);
	jw_kstr(&c->w, "status", order_status_names[cur(c->sh, o)->status]);
	jw_key(&c->w, "data");
	write_view(c, &c->w, o, "fulfillments");
	jw_obj_end(&c->w);
}

static const char *const role_names[] = {"seller", "originator", "fulfiller", NULL};

struct list_q {
	int status, role;
	const char *party;         /* whose role the role filter names */
	const char *viewer;        /* the caller's entity; NULL for the platform */
	char partner[ID_MAX_LEN];  /* ?partner= ("" none) */
	char from[ORDER_TS_MAX], to[ORDER_TS_MAX]; /* normalised created_at bounds ("" none) */
};

static int has_role(const struct order *o, const char *who, int role)
{
	if (role == 0)
		return !strcmp(o->seller_id, who);
	for (unsigned i = 0; i < o->n_legs; i++)
		if (!strcmp(role == 1 ? o->legs[i].originator_id : o->legs[i].fulfiller_id, who))
			return 1;
	return 0;
}

/*
 * ?partner= for a partner's own list: partner is named in viewer's view of
 * o (order_view_write), so the filter never tells a participant who else
 * takes part beyond what its view shows.  The seller's view names every
 * participant; an originator's or a fulfiller's names the seller, itself
 * and the partners on the legs it sees.
 */
static int party_in_view(const struct order *o, const char *viewer, const char *partner)
{
	if (!strcmp(o->seller_id, partner))
		return 1;
	if (!strcmp(o->seller_id, viewer))
		return order_involves(o, partner);
	for (unsigned i = 0; i < o->n_legs; i++) {
		const struct order_leg *l = &o->legs[i];
		if ((!strcmp(l->originator_id, viewer) || !strcmp(l->fulfiller_id, viewer)) &&
		    (!strcmp(l->originator_id, partner) || !strcmp(l->fulfiller_id, partner)))
			return 1;
	}
	return 0;
}

static int list_filter(struct api_ctx *c, const struct row *r, void *arg)
{
	const struct list_q *q = arg;
	const struct order *o = (const struct order *)r;
	const struct order_state *s = order_state_get(c->sh, r->id, r->id_len);
	if (!s) /* a body without its state is no order */
		return 0;
	if (q->status >= 0 && s->v.status != q->status)
		return 0;
	if (q->partner[0] && !(q->viewer ? party_in_view(o, q->viewer, q->partner) : order_involves(o, q->partner)))
		return 0;
	if (q->role >= 0 && !has_role(o, q->party, q->role))
		return 0;
	if (q->from[0] && strcmp(o->created_at, q->from) < 0)
		return 0;
	if (q->to[0] && strcmp(o->created_at, q->to) >= 0)
		return 0;
	return 1;
}

static void list_emit(struct api_ctx *c, const struct row *r) { write_view(c, &c->w, (const struct order *)r, NULL); }

/* ?name= an RFC 3339 time, normalised to the stored form: 0 (out "" when
 * absent), or -1 with a 400 written. */
static int query_time(struct api_ctx *c, const char *name, char *out)
{
	char v[64];
	int n = api_query(c, name, v, sizeof(v));
	long long ms;
	out[0] = 0;
	if (n == -1)
		return 0;
	if (n < 0 || parse_rfc3339_ms(v, (size_t)n, &ms) || ms < 0) {
		char d[96];
		snprintf(d, sizeof(d), "%s must be an RFC 3339 time", name);
		api_error(c, 400, "invalid_filter", d);
		return -1;
	}
	fmt_rfc3339_ms(out, (unsigned long long)ms);
	return 0;
}

static void order_list(struct api_ctx *c)
{
	struct list_q q = {.status = -1, .role = -1};
	struct api_page pg;
	int pn;
	if (api_page_parse(c, &pg) || api_query_enum(c, "status", order_status_names, &q.status) ||
	    api_query_enum(c, "role", role_names, &q.role) || query_time(c, "created_from", q.from) ||
	    query_time(c, "created_to", q.to))
		return;
	if ((pn = api_query(c, "partner", q.partner, sizeof(q.partner))) == -2) {
		api_error(c, 400, "invalid_filter", "partner must be a partner id");
		return;
	}
	if (pn < 0)
		q.partner[0] = 0;
	const char *me = c->who.is_platform ? (q.partner[0] ? q.partner : NULL) : c->who.entity_id;
	q.party = me;
	q.viewer = c->who.is_platform ? NULL : c->who.entity_id;
	if (q.role >= 0 && !me) {
		api_error(c, 400, "invalid_filter", "role filters the orders of a partner: give partner= too");
		return;
	}
	const struct order_ext *e = ext(&c->sh->tables[REC_T_ORDER]);
	if (!me) {
		api_list(c, &c->sh->tables[REC_T_ORDER].by_order, "", 0, &pg, list_filter, &q, list_emit);
		return;
	}
	uint8_t prefix[ID_MAX_LEN + 1];
	size_t ml = strlen(me);
	memcpy(prefix, me, ml);
	prefix[ml] = 0;
	api_list(c, &e->by_party, prefix, (uint32_t)ml + 1, &pg, list_filter, &q, list_emit);
}

/* ---- cancel -------------------------------------------------------------------- */

static void order_cancel(struct api_ctx *c)
{
	const struct order *o = visible_order(c);
	if (!o)
		return;
	int consumer = c->who.kind == PRINCIPAL_CONSUMER; /* order_visible_id: of this order */
	if (!c->who.is_platform && !consumer && strcmp(o->seller_id, c->who.entity_id)) {
		api_error(c, 403, "not_order_seller", "only the order's seller, its consumer or the platform cancels an order");
		return;
	}
	const struct order_state_v *sv = cur(c->sh, o);
	/* before fulfilment (spec 3.1): no leg shipped or shipping.  A leg
	 * whose hold is consumed counts as shipped whatever it reads (a log
	 * written before shipping became one transaction may hold that). */
	int shipped = -1;
	for (unsigned i = 0; i < o->n_legs && shipped < 0; i++) {
		const struct hold *h = hold_get(c->sh, o->legs[i].hold_id, strlen(o->legs[i].hold_id));
		if (leg_rank(sv->leg_status[i]) >= leg_rank(LS_SHIPPING) || (h && h->state == HS_CONSUMED))
			shipped = (int)i;
	}
	if (sv->status < ORD_PLACED || sv->status > ORD_RESERVED || shipped >= 0) {
		char d[160];
		snprintf(d, sizeof(d), "an order in state %s cannot be cancelled (only before fulfilment)",
			 shipped >= 0 && sv->status == ORD_RESERVED ? "reserved with a leg fulfilled or shipping"
								     : order_status_names[sv->status]);
		order_conflict(c, NULL, d, o, shipped);
		return;
	}
	if (order_txn_of(o, NULL, 0) && sv->status != ORD_RESERVED) {
		/* its coordinator is still deciding or applying it (a cancel
		 * racing a COMMIT could not be honoured): only once it rests */
		api_error(c, 409, "order_in_progress",
			  "this cross-shard order is still being placed; cancel it once it is reserved");
		buf_puts(&c->rs->headers, "Retry-After: 1\r\n");
		return;
	}
	char id[ID_MAX_LEN];
	buf_strcpy(id, sizeof(id), o->row.id);
	char extra[96];
	snprintf(extra, sizeof(extra), "{\"from_status\":\"%s\",\"cancelled_by\":\"%s\"}", order_status_names[sv->status],
		 c->who.is_platform ? "platform" : consumer ? "consumer" : "seller");
	struct order_patch p = {.status = ORD_CANCELLED, .compensated = 0, .event = "order.cancelled",
				.event_extra = extra};
	txn_begin(c->sh);
	if (order_stage(c->sh, o, &p) || !txn_commit(c->sh)) {
		txn_abort(c->sh);
		api_error(c, 500, "commit_failed", "the cancellation could not be stored");
		return;
	}
	saga_drive(c->sh, id, 0); /* compensation: release every hold, refund */
	o = order_get(c->sh, id, strlen(id));
	c->rs->status = 200;
	write_view(c, &c->w, o, NULL);
}

/* ---- the consumer's token --------------------------------------------------------- */

/* GET /v1/orders/{id}/consumer-token: the token the seller hands to its
 * customer (consumer_token.h), for the order's seller and the platform. */
static void order_consumer_token(struct api_ctx *c)
{
	const struct order *o = visible_order(c);
	if (!o)
		return;
	if (!c->who.is_platform && strcmp(o->seller_id, c->who.entity_id)) {
		api_error(c, 403, "not_order_seller", "only the order's seller or the platform reads its consumer token");
		return;
	}
	char tok[CT_TOKEN_LEN + 1];
	if (!c->sh->has_consumer_key || ct_make(c->sh->consumer_key, o->row.id, tok)) {
		api_error(c, 500, "internal_error", "the consumer token could not be made");
		return;
	}
	if (api_read_row(c))
		return;
	buf_puts(&c->rs->headers, "Cache-Control: no-store\r\n");
	c->rs->status = 200;
	jw_obj_begin(&c->w);
	jw_kstr(&c->w, "order_id", o->row.id);
	jw_kstr(&c->w, "token", tok);
	jw_key(&c->w, "allows");
	jw_arr_begin(&c->w);
	for (const struct route *r = api_route_table(); r && r->pattern; r++)
		if (r->flags & ROUTE_F_CONSUMER) {
			char op[160];
			snprintf(op, sizeof(op), "%s %s", r->method == HTTP_M_GET ? "GET" : "POST", r->pattern);
			jw_str(&c->w, op);
		}
	jw_arr_end(&c->w);
	jw_obj_end(&c->w);
}

const struct route order_routes[] = {
	{HTTP_M_POST, "/v1/orders", order_create, SC_WRITE_ORDERS, ACT_CREATE_ORDERS,
	 "Create an order: the flash buy-sell saga (holds, charge, commit), multi-source",
	 ROUTE_F_OWN_IDEM | ROUTE_F_CREATE_IS_VIEW},
	{HTTP_M_GET, "/v1/orders", order_list, SC_READ_ORDERS, ACT_READ_ORDERS,
	 "List the orders the caller's entity takes part in", 0},
	{HTTP_M_GET, "/v1/orders/{id}", order_read, SC_READ_ORDERS, ACT_READ_ORDERS,
	 "Order detail: lines, sourcing, legs, split, payment", ROUTE_F_CONSUMER},
	{HTTP_M_GET, "/v1/orders/{id}/sourcing", order_sourcing, SC_READ_ORDERS, ACT_READ_ORDERS,
	 "Which offers won and why, with the candidates that lost and the rule", 0},
	{HTTP_M_GET, "/v1/orders/{id}/fulfillments", order_fulfillments, SC_READ_ORDERS, ACT_READ_ORDERS,
	 "Per-source fulfilment legs", 0},
	{HTTP_M_POST, "/v1/orders/{id}/cancel", order_cancel, SC_WRITE_ORDERS, ACT_CREATE_ORDERS,
	 "Cancel before fulfilment: releases every reservation, refunds the consumer", ROUTE_F_CONSUMER},
	{HTTP_M_GET, "/v1/orders/{id}/consumer-token", order_consumer_token, SC_READ_ORDERS, ACT_READ_ORDERS,
	 "The order's consumer token: what the seller hands its customer to read, cancel and return the order", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
