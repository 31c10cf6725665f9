/*
 * payment.c -- the built-in sandbox payment provider and its ledger
 * (contract in payment.h).
 *
 * Why it looks like this:
 *
 *  - The ledger is an ordinary table (REC_T_PAYMENT), one row per ORDER,
 *    keyed by its payment id ("pay_...", time-ordered: the list order) and
 *    written through the transaction path.  A charge, a refund or a void is
 *    durable in the WAL exactly like any other write, recovered through the
 *    same decode() as the live path, and carries its event
 *    (payment.captured / payment.refunded / payment.voided, platform-wide,
 *    payload the row) in the SAME transaction, so no one can observe money
 *    moving without the event or the reverse.
 *
 *  - Charges are idempotent BY ORDER ID (a hash index order_id -> row in
 *    the table's ext).  The order saga may crash and restart between
 *    "charge" and "record that we charged"; on recovery it simply charges
 *    again and gets the same charge back.  Idempotency keyed by anything
 *    finer (a request id, an attempt number) would let a retry move money a
 *    second time.  That is also why the row is per order, not per attempt:
 *    an order is charged at most once in its life.
 *
 *  - sandbox_timeout CAPTURES and then answers PAY_TIMEOUT.  A real time-out
 *    tells the caller nothing: the money may or may not have moved.  The
 *    sandbox models the worst case (it moved and we were not told), which
 *    is the case a saga gets wrong: it must either retry the charge (and
 *    learn PAY_CAPTURED, same charge) or compensate with pay_refund() (and
 *    refund money it did not know it had taken).  sandbox_fail_after_charge
 *    is the same shape with a definite error.
 *
 *  - pay_refund() on an order with NO charge writes a "voided" row
 *    (amount 0, currency "", method null).  Compensation can race a charge
 *    that is still in flight -- a retry queued before the saga decided to
 *    abort, or a provider answering after our time-out -- and that late
 *    charge must be refused (PAY_DECLINED "order_compensated"), not
 *    captured against an order that no longer exists.  Without the void
 *    record there would be nothing to refuse it with.  Refunding or voiding
 *    again is PAY_OK and writes nothing, so compensation and restart
 *    recovery may call it blindly.
 *
 *  - Money is an exact integer in the currency's minor unit, written with
 *    jw_fixed() at iso_currency_minor() digits and read back with
 *    json_to_fixed(): never a binary float.  Only currencies with a known
 *    minor unit are accepted.
 *
 *  - Both calls commit their OWN transaction, so they must be called
 *    outside any open (or held) transaction; if one is open they answer
 *    PAY_ERROR "ledger_unavailable" instead of corrupting it.
 *
 *  - A real provider would sit behind the same two functions.  Its charge
 *    is outbound HTTP and must not run on the event-loop thread: the call
 *    would be handed to a worker and the saga step resumed on the answer,
 *    with the provider's idempotency key set to the order id and this
 *    ledger still recording what the provider said (and a void on
 *    compensation) so that the rules above hold whatever the provider
 *    does.  The sandbox answers synchronously because it has nothing to
 *    wait for.
 *
 * Order ids are 1..ID_MAX_LEN-1 bytes of printable ASCII without blanks
 * (0x21..0x7e): the id is stored in the row and must read back to the very
 * bytes it is indexed by (no escaping or replacement on the way).
 */
#include "engine/orders/payment.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/edge/fields.h"
#include "engine/base/iso.h"
#include "engine/base/log.h"

const char *const pay_outcome_names[] = {"ok",		    "captured", "declined", "failed_after_charge",
					 "timeout",	    "error",	NULL};
const char *const pay_method_names[] = {"sandbox_ok", "sandbox_decline", "sandbox_fail_after_charge",
					"sandbox_timeout", NULL};
const char *const pay_state_names[] = {"none", "captured", "refunded", "voided", NULL};

_Static_assert(sizeof(pay_outcome_names) / sizeof(pay_outcome_names[0]) == PAY_ERROR + 2, "one name per outcome");
_Static_assert(sizeof(pay_method_names) / sizeof(pay_method_names[0]) == PAY_N_METHOD + 1, "one name per method");
_Static_assert(sizeof(pay_state_names) / sizeof(pay_state_names[0]) == PAY_N_STATE + 1, "one name per state");
_Static_assert(PAY_N_METHOD < 128, "a method fits the row's int8_t");

#define PAY_AMOUNT_MAX 10000000000000LL /* 10^13 minor units */
#define PAY_TS_MAX 32
#define PAY_REFUNDS_MAX 16 /* partial refunds of one charge (an order's returns: ORDER_RETURNS_MAX) */
#define PAY_DOC_MAX 4096u /* a row: ids (2 x 39 + 39), amounts, names, two times, 16 refunds */

/* States a ledger row can have: pay_state_names without "none" (so index + 1
 * is the enum value). */
static const char *const *const row_state_names = pay_state_names + 1;

/* The typed row. */
struct payment {
	struct row row;
	char order_id[ID_MAX_LEN];
	int64_t amount_minor;
	char currency[4];          /* "" on a void */
	int8_t method;             /* enum pay_method, -1 on a void */
	uint8_t state;             /* enum pay_state, never PS_NONE */
	char created_at[PAY_TS_MAX];
	int64_t refunded_minor;    /* refunded so far (all of amount once refunded) */
	uint8_t n_refunds;         /* partial refunds (pay_refund_part), in "refunds" */
};

struct pay_ext {
	struct hidx by_order_id; /* order id (bytes in the row) -> row */
};

static struct pay_ext *ext(const struct table *t) { return t->ext; }

/* ---- argument checks --------------------------------------------------- */

static int order_id_ok(const char *s)
{
	if (!s)
		return 0;
	size_t n = 0;
	for (; s[n]; n++)
		if (n >= ID_MAX_LEN - 1 || (unsigned char)s[n] < 0x21 || (unsigned char)s[n] > 0x7e)
			return 0;
	return n > 0;
}

/* Three upper-case letters naming a currency with a known minor unit:
 * its digits, or -1. */
static int currency_minor(const char *cur)
{
	for (int i = 0; i < 3; i++)
		if (cur[i] < 'A' || cur[i] > 'Z')
			return -1;
	if (cur[3])
		return -1;
	return iso_currency_minor(cur, 3);
}

/* ---- table ------------------------------------------------------------- */

static int pay_init(struct table *t)
{
	struct pay_ext *e = calloc(1, sizeof(*e));
	if (!e)
		return -1;
	hidx_init(&e->by_order_id);
	t->ext = e;
	return 0;
}

static void pay_fini(struct table *t)
{
	struct pay_ext *e = ext(t);
	hidx_free(&e->by_order_id);
	free(e);
	t->ext = NULL;
}

static int pay_index_add(struct table *t, struct row *r)
{
	struct payment *p = (struct payment *)r;
	return hidx_set(&ext(t)->by_order_id, p->order_id, (uint32_t)strlen(p->order_id), p) ? -1 : 0;
}

static void pay_index_del(struct table *t, struct row *r)
{
	struct payment *p = (struct payment *)r;
	uint32_t n = (uint32_t)strlen(p->order_id);
	if (hidx_get(&ext(t)->by_order_id, p->order_id, n) == p)
		hidx_del(&ext(t)->by_order_id, p->order_id, n);
}

/*
 * The typed fields from a stored document (live commit, WAL replay,
 * snapshot load).  A captured or refunded row has a known currency, an
 * amount 1..10^13 at its minor unit and a method; a void has amount 0,
 * currency "" and method null.
 */
static int pay_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct payment *p = (struct payment *)r;
	char pid[ID_MAX_LEN];
	int st = -1, m = -1;
	if (fld_doc_str(doc, "payment_id", pid, sizeof(pid)) || strlen(pid) != r->id_len ||
	    memcmp(pid, r->id, r->id_len) || fld_doc_str(doc, "order_id", p->order_id, sizeof(p->order_id)) ||
	    !order_id_ok(p->order_id) || fld_doc_str(doc, "currency", p->currency, sizeof(p->currency)) ||
	    fld_doc_str(doc, "created_at", p->created_at, sizeof(p->created_at)) || !p->created_at[0] ||
	    fld_enum(NULL, doc, "state", NULL, row_state_names, &st) != FLD_SET)
		return -1;
	p->state = (uint8_t)(st + 1);
	int mr = fld_enum(NULL, doc, "method", NULL, pay_method_names, &m);
	const struct json_value *amount = json_get(doc, "amount");
	if (!amount || amount->type != JSON_NUMBER)
		return -1;
	if (p->state == PS_VOIDED) {
		if (p->currency[0] || mr != FLD_NULL || json_to_fixed(amount, 0, &p->amount_minor) ||
		    p->amount_minor != 0)
			return -1;
		p->method = -1;
		return 0;
	}
	int minor = currency_minor(p->currency);
	if (minor < 0 || mr != FLD_SET || json_to_fixed(amount, (unsigned)minor, &p->amount_minor) ||
	    p->amount_minor < 1 || p->amount_minor > PAY_AMOUNT_MAX)
		return -1;
	p->method = (int8_t)m;
	/* refunded (absent in rows written before partial refunds: all or nothing) */
	const struct json_value *rf = json_get(doc, "refunded"), *list = json_get(doc, "refunds");
	p->refunded_minor = p->state == PS_REFUNDED ? p->amount_minor : 0;
	if (rf && (rf->type != JSON_NUMBER || json_to_fixed(rf, (unsigned)minor, &p->refunded_minor) ||
		   p->refunded_minor < 0 || p->refunded_minor > p->amount_minor ||
		   (p->state == PS_REFUNDED) != (p->refunded_minor == p->amount_minor)))
		return -1;
	if (list && (list->type != JSON_ARRAY || list->len > PAY_REFUNDS_MAX))
		return -1;
	p->n_refunds = list ? (uint8_t)list->len : 0;
	return 0;
}

/* The typed fast path (table.h): the writer hands the row's fields as a
 * zeroed struct payment image (pay_image, below); only the fields after
 * the row header are copied, so unused bytes stay zero as pay_decode
 * leaves them. */
static int pay_decode_typed(struct table *t, struct row *r, const void *typed)
{
	(void)t;
	size_t head = sizeof(struct row);
	memcpy((char *)r + head, (const char *)typed + head, sizeof(struct payment) - head);
	return 0;
}

const struct table_ops payment_table_ops = {
	.rec_table = REC_T_PAYMENT,
	.name = "payment",
	.row_size = sizeof(struct payment),
	.decode = pay_decode,
	.decode_pure = 1, /* recovery may build its rows off the loop (table.h) */
	.decode_typed = pay_decode_typed,
	.typed_size = sizeof(struct payment),
	.index_add = pay_index_add,
	.index_del = pay_index_del,
	.index_add_first = 1, /* sets, and deletes only what points at the row */
	.init = pay_init,
	.fini = pay_fini,
};

/* The order's ledger row, or NULL (also for an order id that cannot be one). */
static const struct payment *pay_find(struct shard *sh, const char *order_id)
{
	struct pay_ext *e = ext(&sh->tables[REC_T_PAYMENT]);
	if (!e || !order_id_ok(order_id))
		return NULL;
	return hidx_get(&e->by_order_id, order_id, (uint32_t)strlen(order_id));
}

enum pay_state pay_state_of(struct shard *sh, const char *order_id)
{
	const struct payment *p = pay_find(sh, order_id);
	return p ? (enum pay_state)p->state : PS_NONE;
}

/* ---- writing ----------------------------------------------------------- */

/* A row about to be written. */
struct pay_vals {
	char id[ID_MAX_LEN];
	const char *order_id;
	int64_t amount_minor;
	char currency[4];
	int method;                /* -1: null (a void) */
	enum pay_state state;
	char created_at[PAY_TS_MAX], updated_at[PAY_TS_MAX];
	int64_t refunded_minor;
	const struct json_value *refunds;  /* the row's partial refunds so far, or NULL */
	const char *refund_id;             /* a partial refund to append (refund_minor), or NULL */
	int64_t refund_minor;
};

static void pay_write(struct jw *w, const struct pay_vals *v)
{
	jw_obj_begin(w);
	jw_kstr(w, "id", v->id);
	jw_kstr(w, "payment_id", v->id);
	jw_kstr(w, "order_id", v->order_id);
	jw_kfixed(w, "amount", v->amount_minor, v->currency[0] ? (unsigned)iso_currency_minor(v->currency, 3) : 0);
	jw_kstr(w, "currency", v->currency);
	if (v->method >= 0)
		jw_kstr(w, "method", pay_method_names[v->method]);
	else
		jw_knull(w, "method");
	jw_kstr(w, "state", pay_state_names[v->state]);
	if (v->method >= 0) {
		unsigned minor = (unsigned)iso_currency_minor(v->currency, 3);
		jw_kfixed(w, "refunded", v->refunded_minor, minor);
		jw_key(w, "refunds");
		jw_arr_begin(w);
		for (uint32_t i = 0; v->refunds && i < v->refunds->len; i++)
			jw_value(w, &v->refunds->u.items[i]);
		if (v->refund_id) {
			jw_obj_begin(w);
			jw_kstr(w, "refund_id", v->refund_id);
			jw_kfixed(w, "amount", v->refund_minor, minor);
			jw_kstr(w, "at", v->updated_at);
			jw_obj_end(w);
		}
		jw_arr_end(w);
	}
	jw_kstr(w, "created_at", v->created_at);
	jw_kstr(w, "updated_at", v->updated_at);
	jw_obj_end(w);
}

/* The typed row pay_decode makes of pay_write's document for v, into the
 * zeroed *img (its row header unused): 1, or 0 when a field does not fit
 * (the commit then decodes the document, which refuses it as well). */
static int pay_image(const struct pay_vals *v, struct payment *img)
{
	memset(img, 0, sizeof(*img));
	uint32_t n_refunds = (v->refunds ? v->refunds->len : 0) + (v->refund_id ? 1 : 0);
	if (typed_str(img->order_id, sizeof(img->order_id), v->order_id) ||
	    typed_str(img->currency, sizeof(img->currency), v->currency) ||
	    typed_str(img->created_at, sizeof(img->created_at), v->created_at) || n_refunds > PAY_REFUNDS_MAX)
		return 0;
	img->amount_minor = v->amount_minor;
	img->state = (uint8_t)v->state;
	img->method = (int8_t)(v->method >= 0 ? v->method : -1);
	img->refunded_minor = v->method >= 0 ? v->refunded_minor : 0;
	img->n_refunds = v->method >= 0 ? (uint8_t)n_refunds : 0;
	return 1;
}

/* Commit the row and its event as one transaction; 0 or -1 (nothing
 * written).  Refused inside another transaction: ours would end it. */
static int ledger_commit(struct shard *sh, const struct pay_vals *v, const char *event)
{
	if (sh->txn_open == 1) { /* 2 = a held commit of this request, which txn_begin logs first */
		log_error("msg=\"payment ledger called inside an open transaction\" order_id=%s "
			  "action=\"bug: charge and refund must run outside any transaction\"",
			  v->order_id);
		return -1;
	}
	struct buf doc;
	buf_init_hint(&doc, PAY_DOC_MAX, BUF_DOC_HINT);
	struct jw w;
	jw_init(&w, &doc);
	pay_write(&w, v);
	struct payment img;
	int fits = pay_image(v, &img);
	txn_begin(sh);
	int rc = w.err ||
				 (fits ? txn_put_typed(sh, REC_T_PAYMENT, v->id, strlen(v->id), doc.data, doc.len, &img)
				       : txn_put(sh, REC_T_PAYMENT, v->id, strlen(v->id), doc.data, doc.len)) ||
				 txn_event(sh, event, NULL, doc.data, doc.len) || !txn_commit(sh)
			 ? -1
			 : 0;
	if (rc) {
		txn_abort(sh);
		log_error("msg=\"payment ledger write failed\" order_id=%s event=%s "
			  "action=\"check the WAL (disk space, errors above); the caller was told ledger_unavailable\"",
			  v->order_id, event);
	}
	buf_free(&doc);
	return rc;
}

static void result(struct pay_result *out, enum pay_outcome o, const char *charge_id, const char *code)
{
	out->outcome = o;
	buf_strcpy(out->charge_id, sizeof(out->charge_id), charge_id ? charge_id : "");
	buf_strcpy(out->code, sizeof(out->code), code ? code : "");
}

void pay_charge(struct shard *sh, const struct pay_request *rq, struct pay_result *out)
{
	int minor = rq ? currency_minor(rq->currency) : -1;
	if (!rq || !order_id_ok(rq->order_id) || rq->amount_minor < 1 || rq->amount_minor > PAY_AMOUNT_MAX ||
	    minor < 0 || rq->method >= PAY_N_METHOD) {
		result(out, PAY_ERROR, NULL, "invalid_argument");
		return;
	}
	const struct payment *p = pay_find(sh, rq->order_id);
	if (p) {
		if (p->state == PS_CAPTURED)
			result(out, PAY_CAPTURED, p->row.id, NULL); /* the same charge: no money moves */
		else
			result(out, PAY_DECLINED, p->row.id, "order_compensated");
		return;
	}
	if (rq->method == PM_SANDBOX_DECLINE) {
		result(out, PAY_DECLINED, NULL, "card_declined");
		return;
	}
	struct pay_vals v = {.order_id = rq->order_id, .amount_minor = rq->amount_minor, .method = rq->method,
			     .state = PS_CAPTURED};
	memcpy(v.currency, rq->currency, 4);
	id_new(&sh->ids, "pay", v.id);
	fmt_rfc3339_ms(v.created_at, wall_ms());
	memcpy(v.updated_at, v.created_at, sizeof(v.updated_at));
	if (ledger_commit(sh, &v, "payment.captured")) {
		result(out, PAY_ERROR, NULL, "ledger_unavailable");
		return;
	}
	switch (rq->method) {
	case PM_SANDBOX_FAIL_AFTER_CHARGE: result(out, PAY_FAILED_AFTER_CHARGE, v.id, "provider_error"); break;
	case PM_SANDBOX_TIMEOUT: result(out, PAY_TIMEOUT, v.id, "provider_timeout"); break;
	default: result(out, PAY_CAPTURED, v.id, NULL); break;
	}
}

void pay_refund(struct shard *sh, const char *order_id, struct pay_result *out)
{
	if (!order_id_ok(order_id)) {
		result(out, PAY_ERROR, NULL, "invalid_argument");
		return;
	}
	const struct payment *p = pay_find(sh, order_id);
	if (p && p->state != PS_CAPTURED) {
		result(out, PAY_OK, p->row.id, NULL); /* refunded or voided already */
		return;
	}
	struct pay_vals v = {.order_id = order_id};
	fmt_rfc3339_ms(v.updated_at, wall_ms());
	const char *event;
	if (p) {
		/* captured -> refunded: the same row, the same amount */
		memcpy(v.id, p->row.id, (size_t)p->row.id_len + 1);
		v.amount_minor = p->amount_minor;
		memcpy(v.currency, p->currency, sizeof(v.currency));
		v.method = p->method;
		v.state = PS_REFUNDED;
		v.refunded_minor = p->amount_minor;
		memcpy(v.created_at, p->created_at, sizeof(v.created_at));
		event = "payment.refunded";
	} else {
		/* nothing captured: a void, so that a late charge is refused */
		id_new(&sh->ids, "pay", v.id);
		v.method = -1;
		v.state = PS_VOIDED;
		memcpy(v.created_at, v.updated_at, sizeof(v.created_at));
		event = "payment.voided";
	}
	struct json_doc *d = p && p->n_refunds ? json_parse(p->row.doc, p->row.doc_len, NULL, NULL) : NULL;
	v.refunds = d ? json_get(json_root(d), "refunds") : NULL;
	int rc = ledger_commit(sh, &v, event);
	json_doc_free(d);
	if (rc) {
		result(out, PAY_ERROR, NULL, "ledger_unavailable");
		return;
	}
	result(out, PAY_OK, v.id, NULL);
}

/* Has the row a partial refund with this id? */
static int has_refund(const struct json_value *refunds, const char *refund_id)
{
	char id[ID_MAX_LEN + 16];
	for (uint32_t i = 0; refunds && i < refunds->len; i++)
		if (!fld_doc_str(&refunds->u.items[i], "refund_id", id, sizeof(id)) && !strcmp(id, refund_id))
			return 1;
	return 0;
}

void pay_refund_part(struct shard *sh, const char *order_id, const char *refund_id, int64_t amount_minor,
		     struct pay_result *out)
{
	const struct payment *p = order_id_ok(order_id) && order_id_ok(refund_id) ? pay_find(sh, order_id) : NULL;
	if (!p) {
		result(out, PAY_ERROR, NULL, order_id_ok(order_id) ? "not_captured" : "invalid_argument");
		return;
	}
	struct json_doc *d = p->n_refunds ? json_parse(p->row.doc, p->row.doc_len, NULL, NULL) : NULL;
	const struct json_value *refunds = d ? json_get(json_root(d), "refunds") : NULL;
	const char *why = NULL;
	if (has_refund(refunds, refund_id))
		why = "";                   /* done before: no money moves again */
	else if (p->state != PS_CAPTURED)
		why = p->state == PS_REFUNDED ? "already_refunded" : "not_captured";
	else if (amount_minor < 1 || amount_minor > p->amount_minor - p->refunded_minor)
		why = "exceeds_charge";
	else if (p->n_refunds >= PAY_REFUNDS_MAX)
		why = "too_many_refunds";
	if (why) {
		result(out, why[0] ? PAY_ERROR : PAY_OK, p->row.id, why[0] ? why : NULL);
		json_doc_free(d);
		return;
	}
	struct pay_vals v = {.order_id = order_id, .amount_minor = p->amount_minor, .method = p->method,
			     .refunded_minor = p->refunded_minor + amount_minor, .refunds = refunds,
			     .refund_id = refund_id, .refund_minor = amount_minor};
	v.state = v.refunded_minor == p->amount_minor ? PS_REFUNDED : PS_CAPTURED;
	memcpy(v.id, p->row.id, (size_t)p->row.id_len + 1);
	memcpy(v.currency, p->currency, sizeof(v.currency));
	memcpy(v.created_at, p->created_at, sizeof(v.created_at));
	fmt_rfc3339_ms(v.updated_at, wall_ms());
	int rc = ledger_commit(sh, &v, "payment.refunded"); /* p is replaced: v.id from here */
	json_doc_free(d);
	result(out, rc ? PAY_ERROR : PAY_OK, v.id, rc ? "ledger_unavailable" : NULL);
}

int64_t pay_refunded_of(struct shard *sh, const char *order_id)
{
	const struct payment *p = pay_find(sh, order_id);
	return p ? p->refunded_minor : 0;
}

/* ---- payouts ------------------------------------------------------------ */

/* The typed payout row (REC_T_PAYOUT, id = the payout id). */
struct payout {
	struct row row;
	int64_t paid_minor, clawed_minor;
	char paid_at[PAY_TS_MAX];
};

static int payout_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct payout *p = (struct payout *)r;
	char cur[4], oid[ID_MAX_LEN], st[16];
	const struct json_value *a = json_get(doc, "amount"), *c = json_get(doc, "clawed_back");
	int minor;
	if (fld_doc_str(doc, "currency", cur, sizeof(cur)) || (minor = currency_minor(cur)) < 0 ||
	    fld_doc_str(doc, "order_id", oid, sizeof(oid)) || !order_id_ok(oid) ||
	    fld_doc_str(doc, "paid_at", p->paid_at, sizeof(p->paid_at)) || !p->paid_at[0] ||
	    fld_doc_str(doc, "state", st, sizeof(st)) || (strcmp(st, "paid") && strcmp(st, "clawed_back")) || !a ||
	    !c || json_to_fixed(a, (unsigned)minor, &p->paid_minor) || json_to_fixed(c, (unsigned)minor, &p->clawed_minor) ||
	    p->paid_minor < 0 || p->paid_minor > PAY_AMOUNT_MAX || p->clawed_minor < 0 || p->clawed_minor > p->paid_minor ||
	    (!strcmp(st, "clawed_back")) != (p->clawed_minor > 0))
		return -1;
	return 0;
}

static const char *const payout_keys[] = {"currency", "order_id", "paid_at", "state", "amount", "clawed_back", NULL};

const struct table_ops payout_ledger_table_ops = {
	.rec_table = REC_T_PAYOUT,
	.name = "payout",
	.row_size = sizeof(struct payout),
	.decode = payout_decode,
	.decode_keys = payout_keys,
};

static const struct payout *payout_get(struct shard *sh, const char *id)
{
	return order_id_ok(id) ? (const struct payout *)table_get(&sh->tables[REC_T_PAYOUT], id, strlen(id)) : NULL;
}

int pay_payout_of(struct shard *sh, const char *payout_id, int64_t *paid, int64_t *clawed, char *paid_at,
		  size_t paid_at_size)
{
	const struct payout *p = payout_get(sh, payout_id);
	if (!p)
		return 0;
	*paid = p->paid_minor;
	*clawed = p->clawed_minor;
	if (paid_at)
		snprintf(paid_at, paid_at_size, "%s", p->paid_at);
	return 1;
}

/* Write and commit a payout row (its event with it).  0 or -1. */
static int payout_commit(struct shard *sh, const char *id, const char *order_id, const char *partner_id,
			 const char *role, int64_t paid, int64_t clawed, const char *currency, const char *paid_at,
			 const char *event)
{
	if (sh->txn_open == 1)
		return -1;
	char now[PAY_TS_MAX];
	fmt_rfc3339_ms(now, wall_ms());
	unsigned minor = (unsigned)iso_currency_minor(currency, 3);
	struct buf doc;
	buf_init_hint(&doc, PAY_DOC_MAX, BUF_DOC_HINT);
	struct jw w;
	jw_init(&w, &doc);
	jw_obj_begin(&w);
	jw_kstr(&w, "id", id);
	jw_kstr(&w, "payout_id", id);
	jw_kstr(&w, "order_id", order_id);
	jw_kstr(&w, "partner_id", partner_id);
	jw_kstr(&w, "role", role);
	jw_key(&w, "amount");
	jw_fixed(&w, paid, minor);
	jw_key(&w, "clawed_back");
	jw_fixed(&w, clawed, minor);
	jw_kstr(&w, "currency", currency);
	jw_kstr(&w, "state", clawed ? "clawed_back" : "paid");
	jw_kstr(&w, "paid_at", paid_at ? paid_at : now);
	jw_kstr(&w, "updated_at", now);
	jw_obj_end(&w);
	txn_begin(sh);
	int rc = w.err || txn_put(sh, REC_T_PAYOUT, id, strlen(id), doc.data, doc.len) ||
				 txn_event(sh, event, partner_id, doc.data, doc.len) || !txn_commit(sh)
			 ? -1
			 : 0;
	if (rc) {
		txn_abort(sh);
		log_error("msg=\"payout ledger write failed\" payout=%s event=%s", id, event);
	}
	buf_free(&doc);
	return rc;
}

void pay_payout(struct shard *sh, const struct payout_request *rq, struct pay_result *out)
{
	if (!rq || !order_id_ok(rq->payout_id) || !order_id_ok(rq->order_id) || !rq->partner_id || !rq->role ||
	    rq->amount_minor < 0 || rq->amount_minor > PAY_AMOUNT_MAX || currency_minor(rq->currency) < 0) {
		result(out, PAY_ERROR, NULL, "invalid_argument");
		return;
	}
	if (payout_get(sh, rq->payout_id)) {
		result(out, PAY_OK, rq->payout_id, NULL); /* paid before: no money moves again */
		return;
	}
	int rc = payout_commit(sh, rq->payout_id, rq->order_id, rq->partner_id, rq->role, rq->amount_minor, 0,
			       rq->currency, NULL, "settlement.released");
	result(out, rc ? PAY_ERROR : PAY_OK, rq->payout_id, rc ? "ledger_unavailable" : NULL);
}

void pay_clawback(struct shard *sh, const char *payout_id, int64_t total_minor, struct pay_result *out)
{
	const struct payout *p = payout_get(sh, payout_id);
	if (!p) {
		result(out, PAY_ERROR, NULL, "not_paid");
		return;
	}
	if (total_minor <= p->clawed_minor) {
		result(out, PAY_OK, payout_id, NULL);
		return;
	}
	if (total_minor > p->paid_minor) {
		result(out, PAY_ERROR, payout_id, "exceeds_payout");
		return;
	}
	struct json_doc *d = json_parse(p->row.doc, p->row.doc_len, NULL, NULL);
	char oid[ID_MAX_LEN] = "", partner[ID_MAX_LEN] = "", role[16] = "", cur[4] = "", paid_at[PAY_TS_MAX], id[ID_MAX_LEN];
	const struct json_value *root = d ? json_root(d) : NULL;
	if (root) {
		fld_doc_str(root, "order_id", oid, sizeof(oid));
		fld_doc_str(root, "partner_id", partner, sizeof(partner));
		fld_doc_str(root, "role", role, sizeof(role));
		fld_doc_str(root, "currency", cur, sizeof(cur));
	}
	json_doc_free(d);
	int64_t paid = p->paid_minor;
	memcpy(paid_at, p->paid_at, sizeof(paid_at));
	buf_strcpy(id, sizeof(id), payout_id);
	int rc = !root || payout_commit(sh, id, oid, partner, role, paid, total_minor, cur, paid_at,
					"settlement.clawed_back");
	result(out, rc ? PAY_ERROR : PAY_OK, id, rc ? "ledger_unavailable" : NULL);
}

/* ---- HTTP (operators) -------------------------------------------------- */

static int state_match(struct api_ctx *c, const struct row *r, void *arg)
{
	(void)c;
	return ((const struct payment *)r)->state == *(const int *)arg;
}

/* GET /v1/admin/payments: the ledger in payment-id (creation) order;
 * ?state=captured|refunded|voided. */
static void payments_list(struct api_ctx *c)
{
	struct api_page pg;
	if (api_page_parse(c, &pg))
		return;
	int st;
	if (api_query_enum(c, "state", row_state_names, &st))
		return;
	int want = st + 1;
	api_list(c, &c->sh->tables[REC_T_PAYMENT].by_order, NULL, 0, &pg, st >= 0 ? state_match : NULL, &want, NULL);
}

/* GET /v1/admin/payments/{order_id}: the order's ledger row, 404 when none. */
static void payments_get(struct api_ctx *c)
{
	char order_id[ID_MAX_LEN];
	const struct payment *p = api_param(c, 0, order_id, sizeof(order_id)) > 0 ? pay_find(c->sh, order_id) : NULL;
	if (!p) {
		api_error(c, 404, "not_found", "no payment for this order");
		return;
	}
	api_send_doc(c, 200, p->row.doc, p->row.doc_len); /* counts the row (api_read_row) */
}

const struct route payment_routes[] = {
	{HTTP_M_GET, "/v1/admin/payments", payments_list, SC_OPERATOR, ACT_OPERATE,
	 "Sandbox payment ledger (operators): one row per order", 0},
	{HTTP_M_GET, "/v1/admin/payments/{order_id}", payments_get, SC_OPERATOR, ACT_OPERATE,
	 "The payment of one order (operators)", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
