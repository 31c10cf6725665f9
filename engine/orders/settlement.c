/*
 * settlement.c -- who gets paid for an order, and when (contract in
 * settlement.h; spec 2.9 settlement_split, 3.1 delivered -> settled, 3.2).
 *
 * What is owed: the order's settlement_split, fixed at capture, divides
 * the charge into buckets -- one per party (originator P_B2B, seller
 * M_Curator + R_Recruiter, fulfiller C_Freight), the platform fee, the
 * escrowed excise and VAT -- that sum to the charge.  A refund to the
 * consumer (returns.c) is taken from every bucket in proportion to what is
 * left of it (settle_apportion: largest remainder, exact to the minor
 * unit), refund by refund.  So at every moment
 *     charged = Σ buckets = Σ (bucket - its refunds) + Σ refunds,
 * which settlement_check verifies and the tests check on random orders.
 * (Proportional is the documented rule: a refund reduces every party's
 * share alike; a per-line attribution is future work.)
 *
 * When: one payout per party, "<order id>.S<n>" (n: its place in the
 * split).  It is `pending` until every leg the party takes part in (an
 * originator's and a fulfiller's own legs, all of them for the seller) has
 * its proof of receipt and --payout-days for its role have passed (by
 * default the destination's complaint window, so money leaves only once a
 * return can no longer come); then `eligible`; `paid` once a payout run
 * paid it through the payment provider (payment.c, idempotent by payout
 * id, event settlement.released); `clawed_back` when a refund after it
 * took part of it back (pay_clawback sets the total: idempotent).  These
 * states are computed from the legs, the clock and the ledger when read,
 * never stored twice, so they cannot disagree with them.
 *
 * The run: POST /v1/admin/payout-runs walks the orders that are delivered,
 * returned or refunded, or still moving with a delivered leg (an index of
 * the state table), pays what is
 * eligible (at most PAYOUT_RUN_MAX orders a run), and moves a delivered
 * order whose payouts are all paid to `settled` (order.settled).  Each
 * payout is its own ledger transaction; a crash mid-run leaves some paid
 * and some not, and the next run pays the rest -- never one twice.
 */
#include "engine/orders/settlement.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/iso.h"
#include "engine/base/log.h"
#include "engine/catalogue/partner.h"
#include "engine/edge/fields.h"
#include "engine/orders/order.h"
#include "engine/orders/payment.h"
#include "engine/orders/returns.h"
#include "engine/orders/tracking.h"
#include "engine/pricing/quote.h"

/* ---- the arithmetic ------------------------------------------------------------------------ */

int settle_apportion(struct settle_bucket *b, unsigned n, int64_t r)
{
	__int128 left = 0;
	for (unsigned i = 0; i < n; i++)
		left += b[i].amount - b[i].refunded;
	if (r < 0 || r > left)
		return -1;
	if (r == 0)
		return 0;
	/* floor shares, then the remainder one unit at a time to the largest fractions */
	int64_t given = 0;
	static __int128 frac[SETTLE_BUCKETS_MAX];
	int64_t share[SETTLE_BUCKETS_MAX];
	for (unsigned i = 0; i < n && i < SETTLE_BUCKETS_MAX; i++) {
		__int128 x = (__int128)(b[i].amount - b[i].refunded) * r;
		share[i] = (int64_t)(x / left);
		frac[i] = x % left;
		given += share[i];
	}
	while (given < r) {
		unsigned best = n;
		for (unsigned i = 0; i < n; i++)
			if (share[i] < b[i].amount - b[i].refunded && (best == n || frac[i] > frac[best]))
				best = i;
		if (best == n)
			return -1; /* cannot happen: r <= left */
		share[best]++;
		frac[best] = -1;
		given++;
	}
	for (unsigned i = 0; i < n; i++)
		b[i].refunded += share[i];
	return 0;
}

/* ---- an order's settlement ------------------------------------------------------------------- */

enum { PO_PENDING, PO_ELIGIBLE, PO_PAID, PO_CLAWED_BACK };
static const char *const payout_state_names[] = {"pending", "eligible", "paid", "clawed_back", NULL};

struct party {
	char partner_id[ID_MAX_LEN], role[16], basis[32];
	long long eligible_ms;         /* -1: a leg not delivered */
};

struct settle {
	const struct order *o;
	unsigned n_parties;
	struct party p[SETTLE_PARTIES_MAX];
	struct settle_bucket b[SETTLE_BUCKETS_MAX]; /* parties, then fee, excise, VAT */
	int64_t refunds;                            /* Σ refunds paid back */
	int minor;
};

/* A money member of obj in minor units: 0, or -1. */
static int money(const struct json_value *obj, const char *k, int minor, int64_t *out)
{
	const struct json_value *v = obj ? json_get(obj, k) : NULL;
	return v && !json_to_fixed(v, (unsigned)minor, out) && *out >= 0 ? 0 : -1;
}

/* Days after delivery for role (--payout-days, else the complaint window). */
static unsigned payout_days(const struct shard *sh, const char *role, const char *dest)
{
	size_t rl = strlen(role);
	for (const char *p = sh->cfg.payout_days; p && *p;) {
		unsigned d;
		if (!strncmp(p, role, rl) && p[rl] == '=' && sscanf(p + rl + 1, "%u", &d) == 1 && d <= 365)
			return d;
		p = strchr(p, ',');
		p = p ? p + 1 : NULL;
	}
	return complaint_window_days(sh, dest);
}

/* When party x may be paid: its legs' last delivery + its days; -1 while one is not delivered. */
static long long eligible_at(struct shard *sh, const struct order *o, const struct party *x)
{
	long long last = -1, t;
	int seller = !strcmp(x->role, "seller");
	for (unsigned g = 0; g < o->n_legs; g++) {
		const struct order_leg *l = &o->legs[g];
		if (!seller && strcmp(!strcmp(x->role, "fulfiller") ? l->fulfiller_id : l->originator_id, x->partner_id))
			continue;
		const struct leg_track *k = leg_track_get(sh, l->leg_id);
		if (!k || !k->delivered_at[0] || parse_rfc3339_ms(k->delivered_at, strlen(k->delivered_at), &t))
			return -1;
		last = t > last ? t : last;
	}
	return last < 0 ? -1 : last + (long long)payout_days(sh, x->role, o->dest) * 86400000LL;
}

/* Build the settlement of o: buckets from its split, refunds applied.  0 or -1. */
static int settle_of(struct shard *sh, const struct order *o, struct settle *s)
{
	memset(s, 0, sizeof(*s));
	s->o = o;
	s->minor = iso_currency_minor(o->currency, 3);
	struct json_doc *d = json_parse(o->row.doc, o->row.doc_len, NULL, NULL);
	const struct json_value *sp = d ? json_get(json_root(d), "settlement_split") : NULL;
	const struct json_value *parties = sp ? json_get(sp, "parties") : NULL;
	const struct json_value *tx = sp ? json_get(sp, "escrowed_taxes") : NULL;
	int rc = -1;
	if (!parties || parties->type != JSON_ARRAY || parties->len > SETTLE_PARTIES_MAX || s->minor < 0)
		goto out;
	s->n_parties = parties->len;
	for (unsigned i = 0; i < s->n_parties; i++) {
		const struct json_value *x = &parties->u.items[i];
		struct party *p = &s->p[i];
		if (fld_doc_str(x, "partner_id", p->partner_id, sizeof(p->partner_id)) ||
		    fld_doc_str(x, "role", p->role, sizeof(p->role)) || fld_doc_str(x, "basis", p->basis, sizeof(p->basis)) ||
		    money(x, "amount", s->minor, &s->b[i].amount))
			goto out;
		p->eligible_ms = eligible_at(sh, o, p);
	}
	unsigned n = s->n_parties;
	if (money(sp, "platform_fee", s->minor, &s->b[n].amount) || money(tx, "excise", s->minor, &s->b[n + 1].amount) ||
	    money(tx, "vat", s->minor, &s->b[n + 2].amount))
		goto out;
	int64_t refunds[ORDER_RETURNS_MAX];
	unsigned k = order_refunds(sh, o->row.id, refunds, ORDER_RETURNS_MAX);
	for (unsigned i = 0; i < k; i++) {
		if (settle_apportion(s->b, n + 3, refunds[i]))
			goto out;
		s->refunds += refunds[i];
	}
	rc = 0;
out:
	json_doc_free(d);
	return rc;
}

static void payout_id(const struct order *o, unsigned i, char *out, size_t n)
{
	snprintf(out, n, "%s.S%u", o->row.id, i + 1);
}

/* Party i's payout state now. */
static int payout_state(struct shard *sh, const struct settle *s, unsigned i, int64_t *paid, int64_t *clawed,
			char *paid_at, size_t n)
{
	char id[ID_MAX_LEN + 8];
	payout_id(s->o, i, id, sizeof(id));
	*paid = *clawed = 0;
	if (paid_at)
		paid_at[0] = 0;
	if (pay_payout_of(sh, id, paid, clawed, paid_at, n))
		return *clawed ? PO_CLAWED_BACK : PO_PAID;
	/* a delivered leg is never of a cancelled or failed order: its legs' proof is enough */
	return s->p[i].eligible_ms >= 0 && (long long)wall_ms() >= s->p[i].eligible_ms ? PO_ELIGIBLE : PO_PENDING;
}

/* ---- clawbacks ---------------------------------------------------------------------------- */

/* Take back from each paid payout of s what it was paid beyond what it is
 * owed now (a total: pay_clawback repeats nothing). */
static void claw_back(struct shard *sh, const struct settle *s)
{
	for (unsigned i = 0; i < s->n_parties; i++) {
		int64_t paid, clawed;
		char id[ID_MAX_LEN + 8];
		payout_id(s->o, i, id, sizeof(id));
		if (!pay_payout_of(sh, id, &paid, &clawed, NULL, 0))
			continue;
		int64_t owed = s->b[i].amount - s->b[i].refunded;
		int64_t back = paid > owed ? paid - owed : 0;
		struct pay_result pr;
		if (back > clawed) {
			pay_clawback(sh, id, back, &pr);
			if (pr.outcome != PAY_OK)
				log_error("msg=\"a clawback failed; the next refund or run retries\" payout=%s code=%s", id,
					  pr.code);
		}
	}
}

void settlement_on_refund(struct shard *sh, const char *order_id)
{
	const struct order *o = order_get(sh, order_id, strlen(order_id));
	static struct settle s;
	if (o && !settle_of(sh, o, &s))
		claw_back(sh, &s);
}

/* ---- the check ---------------------------------------------------------------------------- */

int settlement_check(struct shard *sh, const char *order_id, char *why, size_t n)
{
	const struct order *o = order_get(sh, order_id, strlen(order_id));
	static struct settle s;
	if (!o || settle_of(sh, o, &s)) {
		snprintf(why, n, "order %s: its settlement cannot be read", order_id);
		return -1;
	}
	int64_t sum = 0, net = 0;
	for (unsigned i = 0; i < s.n_parties + 3; i++) {
		sum += s.b[i].amount;
		net += s.b[i].amount - s.b[i].refunded;
		if (s.b[i].refunded < 0 || s.b[i].refunded > s.b[i].amount) {
			snprintf(why, n, "order %s: bucket %u refunded %lld of %lld", order_id, i, (long long)s.b[i].refunded,
				 (long long)s.b[i].amount);
			return -1;
		}
	}
	int64_t ledger_refunded = pay_refunded_of(sh, order_id);
	if (sum != o->total_minor || net + s.refunds != o->total_minor || ledger_refunded != s.refunds) {
		snprintf(why, n, "order %s: charged %lld, split %lld, owed %lld + refunds %lld (ledger %lld)", order_id,
			 (long long)o->total_minor, (long long)sum, (long long)net, (long long)s.refunds,
			 (long long)ledger_refunded);
		return -1;
	}
	for (unsigned i = 0; i < s.n_parties; i++) {
		int64_t paid, clawed;
		char id[ID_MAX_LEN + 8];
		payout_id(o, i, id, sizeof(id));
		if (pay_payout_of(sh, id, &paid, &clawed, NULL, 0) && paid - clawed > s.b[i].amount - s.b[i].refunded) {
			snprintf(why, n, "payout %s: %lld paid and kept, %lld owed", id, (long long)(paid - clawed),
				 (long long)(s.b[i].amount - s.b[i].refunded));
			return -1;
		}
	}
	return 0;
}

/* ---- reading ------------------------------------------------------------------------------ */

/* The caller sees party i: the platform and the seller every one, a partner its own. */
static int party_visible(const struct api_ctx *c, const struct settle *s, unsigned i)
{
	return c->who.is_platform || !strcmp(s->o->seller_id, c->who.entity_id) ||
	       !strcmp(s->p[i].partner_id, c->who.entity_id);
}

static void write_ts_or_null(struct jw *w, const char *k, long long ms)
{
	if (ms < 0) {
		jw_var_null(w, k);
		return;
	}
	char t[32];
	fmt_rfc3339_ms(t, (unsigned long long)ms);
	jw_var_str(w, k, t);
}
/* Where party i's money goes: its partner's payout account, or NULL when
 * it has none (the payout waits for one: paying a partner that named no
 * account would send money nowhere the partner chose). */
static const char *payout_account(struct shard *sh, const struct settle *s, unsigned i)
{
	const struct partner *pt = partner_get(sh, s->p[i].partner_id, strlen(s->p[i].partner_id));
	return pt && pt->v.payout_account_id[0] ? pt->v.payout_account_id : NULL;
}


/* GET /v1/orders/{id}/settlement */
static void settlement_read(struct api_ctx *c)
{
	const struct order *o = order_visible(c);
	if (!o || api_read_row(c))
		return;
	static struct settle s;
	if (settle_of(c->sh, o, &s)) {
		api_error(c, 500, "store", "the order's settlement could not be read");
		return;
	}
	int full = c->who.is_platform || !strcmp(o->seller_id, c->who.entity_id);
	struct jw *w = &c->w;
	int all_paid = 1, mn = s.minor;
	long long last_paid = -1;
	c->rs->status = 200;
	jw_obj_begin(w);
	jw_kstr(w, "order_id", o->row.id);
	jw_kstr(w, "currency", o->currency);
	jw_key(w, "payouts");
	jw_arr_begin(w);
	for (unsigned i = 0; i < s.n_parties; i++) {
		int64_t paid, clawed;
		char paid_at[32], id[ID_MAX_LEN + 8];
		int st = payout_state(c->sh, &s, i, &paid, &clawed, paid_at, sizeof(paid_at));
		all_paid &= st >= PO_PAID;
		long long pm;
		if (paid_at[0] && !parse_rfc3339_ms(paid_at, strlen(paid_at), &pm) && pm > last_paid)
			last_paid = pm;
		if (!party_visible(c, &s, i))
			continue;
		payout_id(o, i, id, sizeof(id));
		jw_obj_begin(w);
		jw_kstr(w, "payout_id", id);
		jw_kstr(w, "partner_id", s.p[i].partner_id);
		jw_kstr(w, "role", s.p[i].role);
		jw_kstr(w, "basis", s.p[i].basis);
		quote_write_money(w, "amount", s.b[i].amount, mn);
		quote_write_money(w, "refunded", s.b[i].refunded, mn);
		quote_write_money(w, "net", s.b[i].amount - s.b[i].refunded, mn);
		jw_kstr(w, "state", payout_state_names[st]);
		if (st == PO_ELIGIBLE && !payout_account(c->sh, &s, i))
			jw_kstr(w, "held", "no_payout_account");
		else
			jw_knull(w, "held");
		write_ts_or_null(w, "eligible_at", s.p[i].eligible_ms);
		quote_write_money(w, "paid", paid, mn);
		quote_write_money(w, "clawed_back", clawed, mn);
		if (paid_at[0])
			jw_kstr(w, "paid_at", paid_at);
		else
			jw_knull(w, "paid_at");
		jw_obj_end(w);
	}
	jw_arr_end(w);
	if (full) {
		unsigned n = s.n_parties;
		static const char *const names[] = {"platform_fee", "excise", "vat"};
		for (unsigned k = 0; k < 3; k++) {
			jw_key(w, names[k]);
			jw_obj_begin(w);
			quote_write_money(w, "amount", s.b[n + k].amount, mn);
			quote_write_money(w, "refunded", s.b[n + k].refunded, mn);
			quote_write_money(w, "net", s.b[n + k].amount - s.b[n + k].refunded, mn);
			jw_obj_end(w);
		}
		quote_write_money(w, "charged", o->total_minor, mn);
		quote_write_money(w, "refunds", s.refunds, mn);
		char why[200];
		jw_kbool(w, "reconciles", settlement_check(c->sh, o->row.id, why, sizeof(why)) == 0);
	}
	jw_kstr(w, "state", all_paid && s.n_parties ? "settled" : "open");
	write_ts_or_null(w, "payout_date", all_paid ? last_paid : -1);
	jw_obj_end(w);
}

/* ---- the payout run ----------------------------------------------------------------------- */

/* Pay order id's eligible payouts; move it to settled when all are paid.
 * How many payouts were paid, failed and held (no payout account) into
 * *paid_n, *failed and *held. */
static void run_order(struct shard *sh, const char *id, unsigned *paid_n, unsigned *failed, unsigned *held)
{
	const struct order *o = order_get(sh, id, strlen(id));
	static struct settle s;
	if (!o || settle_of(sh, o, &s))
		return;
	claw_back(sh, &s); /* a clawback a failure left behind */
	int all = 1;
	for (unsigned i = 0; i < s.n_parties; i++) {
		int64_t paid, clawed;
		int st = payout_state(sh, &s, i, &paid, &clawed, NULL, 0);
		if (st >= PO_PAID)
			continue;
		if (st != PO_ELIGIBLE) {
			all = 0;
			continue;
		}
		char pid[ID_MAX_LEN + 8];
		payout_id(o, i, pid, sizeof(pid));
		if (!payout_account(sh, &s, i)) {
			all = 0;
			(*held)++;
			log_warn("msg=\"a payout waits for its partner's payout account (PATCH payout_provider and "
				 "payout_account_id); the next run pays it\" payout=%s partner=%s",
				 pid, s.p[i].partner_id);
			continue;
		}
		struct payout_request rq = {.payout_id = pid, .order_id = o->row.id, .partner_id = s.p[i].partner_id,
					    .role = s.p[i].role, .amount_minor = s.b[i].amount - s.b[i].refunded};
		memcpy(rq.currency, o->currency, sizeof(rq.currency));
		struct pay_result pr;
		pay_payout(sh, &rq, &pr);
		if (pr.outcome != PAY_OK) {
			all = 0;
			(*failed)++;
			log_warn("msg=\"a payout failed; the next run retries\" payout=%s code=%s", pid, pr.code);
			continue;
		}
		(*paid_n)++;
		saga_crash_point(sh, "payout_crash_after_pay");
		o = order_get(sh, id, strlen(id));
	}
	const struct order_state *st = order_state_get(sh, id, strlen(id));
	if (!all || !st || st->v.status != ORD_DELIVERED || !s.n_parties)
		return;
	struct order_patch p = {.status = ORD_SETTLED, .compensated = -1, .event = "order.settled"};
	txn_begin(sh);
	if (order_stage(sh, o, &p) || !txn_commit(sh)) {
		txn_abort(sh);
		log_error("msg=\"a paid-out order could not be marked settled; the next run retries\" order=%s", id);
	}
}

/* POST /v1/admin/payout-runs: pay every eligible payout (operators). */
static void payout_run(struct api_ctx *c)
{
	char after[ID_MAX_LEN] = "", id[ID_MAX_LEN];
	unsigned orders = 0, paid = 0, failed = 0, held = 0;
	int more = 0;
	while (order_settling_next(c->sh, after, id)) {
		if (orders == PAYOUT_RUN_MAX) {
			more = 1;
			break;
		}
		memcpy(after, id, sizeof(after));
		run_order(c->sh, id, &paid, &failed, &held);
		orders++;
	}
	c->rs->status = 200;
	jw_obj_begin(&c->w);
	jw_kint(&c->w, "orders_visited", orders);
	jw_kint(&c->w, "payouts_paid", paid);
	jw_kint(&c->w, "payouts_failed", failed);
	jw_kint(&c->w, "payouts_held", held);
	jw_kbool(&c->w, "more", more);
	jw_obj_end(&c->w);
}

const struct route settlement_routes[] = {
	{HTTP_M_GET, "/v1/orders/{id}/settlement", settlement_read, SC_READ_ORDERS, ACT_READ_ORDERS,
	 "Per-party payouts and their state", 0},
	{HTTP_M_POST, "/v1/admin/payout-runs", payout_run, SC_OPERATOR, ACT_OPERATE,
	 "Pay every eligible payout (operators)", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
