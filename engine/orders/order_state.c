/*
 * order_state.c -- the mutable half of an order (order.h): its state row
 * (REC_T_ORDER_STATE), the document that row stores, and the order's full
 * document as reads return it, assembled from the body and the state.
 *
 * Why a row of its own: the saga steps an order five times (paid,
 * confirmed, sourced, reserved; failed and compensated on the other
 * path), and every step used to rewrite the whole ~5 KB order document,
 * which applying the transaction parsed again -- most of the event loop's
 * CPU.  What a step changes is ~200 bytes: status, leg statuses, payment
 * state and charge id, failure, saga.compensated, updated_at.  So those
 * live here, written with jw from typed values (no parse to build it),
 * and the body is written once at capture and never parsed again.
 *
 * Why reads still return the same bytes: the body is today's document
 * minus those members, written in canonical JSON (no blanks, strings
 * escaped), where a quote preceded by ',' or '{' is always structural (a
 * quote inside a string is escaped).  An anchor such as ,"payment":{ can
 * therefore only match the member itself, and order_doc() inserts each
 * state value where the document has always had it by copying body spans.
 * A body whose anchors are missing (one this build did not write) takes
 * the generic path: parse it and write it again with the values in
 * place.  Test builds run both and abort on any difference.
 *
 * An order exists when its body and its state exist and agree on the
 * number of legs (order_get, order_state_get).  The decoders never look
 * at the other table: replay applies records in log order and a hostile
 * log may hold a state without its body; such a state is indexed like any
 * other (a pending one is visited by saga_recover, which finds no order
 * and moves on) and never read.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/edge/fields.h"
#include "engine/base/log.h"
#include "engine/orders/order.h"
#include "engine/storage/record.h"

/* ---- table ------------------------------------------------------------------------------ */

struct state_ext {
	struct oidx pending;      /* orders not at rest (saga_recover's work list) */
	struct oidx legwork;      /* orders with a leg in flight between shards (fulfilment.c's) */
	struct oidx settling;     /* delivered, returned or refunded: payouts to run (settlement.c's) */
};

/* The table's pending index. */
static struct state_ext *ext(const struct table *t) { return t->ext; }

/* Allocate the pending index. */
static int state_init(struct table *t)
{
	struct state_ext *e = calloc(1, sizeof(*e));
	if (!e)
		return -1;
	oidx_init(&e->pending);
	oidx_init(&e->legwork);
	oidx_init(&e->settling);
	t->ext = e;
	return 0;
}

/* Free the pending index. */
static void state_fini(struct table *t)
{
	struct state_ext *e = ext(t);
	if (!e)
		return;
	oidx_free(&e->pending);
	oidx_free(&e->legwork);
	oidx_free(&e->settling);
	free(e);
	t->ext = NULL;
}

/* Index of s in a NULL-terminated name list, or -1. */
int order_name_index(const char *const *names, const char *s)
{
	for (int i = 0; names[i]; i++)
		if (!strcmp(names[i], s))
			return i;
	return -1;
}

/* legs: an array of leg status names, at most ORDER_MAX_LEGS.  0 or -1. */
static int decode_legs(const struct json_value *a, struct order_state_v *v)
{
	if (!a || a->type != JSON_ARRAY || a->len > ORDER_MAX_LEGS)
		return -1;
	v->n_legs = (uint8_t)a->len;
	for (uint32_t i = 0; i < a->len; i++) {
		int s = a->u.items[i].type == JSON_STRING ? order_name_index(leg_status_names, a->u.items[i].u.str) : -1;
		if (s < 0)
			return -1;
		v->leg_status[i] = (uint8_t)s;
	}
	return 0;
}

/* payment: {"state": a name, "charge_id": a string or null}.  0 or -1. */
static int decode_payment(const struct json_value *p, struct order_state_v *v)
{
	if (!p || p->type != JSON_OBJECT || fld_doc_str(p, "state", v->pay_state, sizeof(v->pay_state)) ||
	    !v->pay_state[0] || fld_doc_str(p, "charge_id", v->charge_id, sizeof(v->charge_id)))
		return -1;
	return 0;
}

/* failure: null, or {"code": a failure code, "detail", "at"}.  0 or -1. */
static int decode_failure(const struct json_value *f, struct order_state_v *v)
{
	char code[32];
	v->failure = OF_NONE;
	if (!f || f->type == JSON_NULL)
		return 0;
	if (f->type != JSON_OBJECT || fld_doc_str(f, "code", code, sizeof(code)) ||
	    fld_doc_str(f, "detail", v->failure_detail, sizeof(v->failure_detail)) ||
	    fld_doc_str(f, "at", v->failure_at, sizeof(v->failure_at)))
		return -1;
	int fc = order_name_index(order_failure_codes + 1, code);
	if (fc < 0)
		return -1;
	v->failure = (uint8_t)(fc + 1);
	return 0;
}

/* Fill the typed values from a state document (order_state_write's shape). */
static int state_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct order_state_v *v = &((struct order_state *)r)->v;
	char st[16];
	int status = fld_doc_str(doc, "status", st, sizeof(st)) ? -1 : order_name_index(order_status_names, st);
	const struct json_value *saga = json_get(doc, "saga");
	const struct json_value *comp = saga ? json_get(saga, "compensated") : NULL;
	if (status < 0 || !comp || (comp->type != JSON_TRUE && comp->type != JSON_FALSE) ||
	    decode_legs(json_get(doc, "legs"), v) || decode_payment(json_get(doc, "payment"), v) ||
	    decode_failure(json_get(doc, "failure"), v) ||
	    fld_doc_str(doc, "updated_at", v->updated_at, sizeof(v->updated_at)) || !v->updated_at[0])
		return -1;
	v->status = (uint8_t)status;
	v->compensated = comp->type == JSON_TRUE;
	return 0;
}

/* At rest: nothing for the saga to do after a restart. */
static int at_rest(const struct order_state_v *v)
{
	if (v->status == ORD_FAILED || v->status == ORD_CANCELLED)
		return v->compensated;
	return v->status >= ORD_RESERVED;
}

/* A leg of v is in flight between shards (LS_SHIPPING). */
static int has_legwork(const struct order_state_v *v)
{
	for (unsigned i = 0; i < v->n_legs; i++)
		if (v->leg_status[i] == LS_SHIPPING)
			return 1;
	return 0;
}

/* An order not at rest joins the pending index; one with a leg in flight
 * the legwork index. */
static int state_index_add(struct table *t, struct row *r)
{
	const struct order_state *s = (const struct order_state *)r;
	if (!at_rest(&s->v) && oidx_set(&ext(t)->pending, r->id, r->id_len, r))
		return -1;
	if (has_legwork(&s->v) && oidx_set(&ext(t)->legwork, r->id, r->id_len, r))
		return -1;
	int st = s->v.status, delivered_leg = 0;
	for (unsigned i = 0; i < s->v.n_legs; i++)
		delivered_leg |= s->v.leg_status[i] == LS_DELIVERED;
	/* payouts are per leg: an order with a delivered leg may owe one */
	if ((st == ORD_DELIVERED || st == ORD_RETURNED || st == ORD_REFUNDED ||
	     (delivered_leg && (st == ORD_RESERVED || st == ORD_FULFILLED || st == ORD_IN_TRANSIT))) &&
	    oidx_set(&ext(t)->settling, r->id, r->id_len, r))
		return -1;
	return 0;
}

/* Leave the indexes (where this version is the one in them). */
static void state_index_del(struct table *t, struct row *r)
{
	struct state_ext *e = ext(t);
	if (oidx_get(&e->pending, r->id, r->id_len) == r)
		oidx_del(&e->pending, r->id, r->id_len);
	if (oidx_get(&e->legwork, r->id, r->id_len) == r)
		oidx_del(&e->legwork, r->id, r->id_len);
	if (oidx_get(&e->settling, r->id, r->id_len) == r)
		oidx_del(&e->settling, r->id, r->id_len);
}

/* The typed fast path (table.h): the row from the values the state
 * document was written from (order_state_write), as state_decode makes it. */
static int state_decode_typed(struct table *t, struct row *r, const void *typed)
{
	(void)t;
	const struct order_state_v *s = typed;
	struct order_state_v *v = &((struct order_state *)r)->v;
	if (s->status >= ORDER_N_STATUS || s->n_legs > ORDER_MAX_LEGS || s->failure >= ORDER_N_FAILURE ||
	    !s->pay_state[0] || !s->updated_at[0])
		return -1;
	v->status = s->status;
	v->compensated = s->compensated != 0;
	v->n_legs = s->n_legs;
	for (unsigned i = 0; i < s->n_legs; i++) {
		if (s->leg_status[i] >= ORDER_N_LEG_STATUS)
			return -1;
		v->leg_status[i] = s->leg_status[i];
	}
	v->failure = s->failure;
	if (typed_str(v->pay_state, sizeof(v->pay_state), s->pay_state) ||
	    typed_str(v->charge_id, sizeof(v->charge_id), s->charge_id) ||
	    typed_str(v->updated_at, sizeof(v->updated_at), s->updated_at))
		return -1;
	if (s->failure && (typed_str(v->failure_detail, sizeof(v->failure_detail), s->failure_detail) ||
			   typed_str(v->failure_at, sizeof(v->failure_at), s->failure_at)))
		return -1;
	return 0;
}

const struct table_ops order_state_table_ops = {
	.rec_table = REC_T_ORDER_STATE,
	.name = "order_state",
	.row_size = sizeof(struct order_state),
	.decode = state_decode,
	.decode_pure = 1, /* recovery may build its rows off the loop (table.h) */
	.decode_typed = state_decode_typed,
	.typed_size = sizeof(struct order_state_v),
	.index_add = state_index_add,
	.index_del = state_index_del,
	.index_add_first = 1, /* sets, and deletes only what points at the row */
	.init = state_init,
	.fini = state_fini,
};

/* The state, when both rows exist and agree on the number of legs; *body
 * (if body is not NULL) the body then, else NULL. */
const struct order_state *order_pair_get(struct shard *sh, const char *id, size_t len, const struct order **body)
{
	const struct order *o = (const struct order *)table_get(&sh->tables[REC_T_ORDER], id, len);
	const struct order_state *s = (const struct order_state *)table_get(&sh->tables[REC_T_ORDER_STATE], id, len);
	int ok = o && s && o->n_legs == s->v.n_legs;
	if (body)
		*body = ok ? o : NULL;
	return ok ? s : NULL;
}

const struct order_state *order_state_get(struct shard *sh, const char *id, size_t len)
{
	return order_pair_get(sh, id, len, NULL);
}

/* The next id after `after` in index x. */
static int index_next(struct oidx *x, const char *after, char *out)
{
	struct oidx_iter it;
	size_t al = strlen(after);
	for (int ok = oidx_seek_ge(x, after, (uint32_t)al, &it); ok; ok = oidx_next(&it)) {
		uint32_t kl;
		const char *k = oidx_iter_key(&it, &kl);
		if (kl == al && !memcmp(k, after, al))
			continue;
		if (kl >= ID_MAX_LEN)
			return 0;
		memcpy(out, k, kl);
		out[kl] = 0;
		return 1;
	}
	return 0;
}

/* The next id after `after` in the pending index (see order.h). */
int order_pending_next(struct shard *sh, const char *after, char *out)
{
	return index_next(&ext(&sh->tables[REC_T_ORDER_STATE])->pending, after, out);
}

int order_legwork_next(struct shard *sh, const char *after, char *out)
{
	return index_next(&ext(&sh->tables[REC_T_ORDER_STATE])->legwork, after, out);
}

int order_settling_next(struct shard *sh, const char *after, char *out)
{
	return index_next(&ext(&sh->tables[REC_T_ORDER_STATE])->settling, after, out);
}

uint64_t order_legwork_count(struct shard *sh)
{
	return oidx_count(&ext(&sh->tables[REC_T_ORDER_STATE])->legwork);
}

/* ---- the legs and the order's status ------------------------------------------------------ */

int leg_rank(int leg_status)
{
	static const int8_t rank[ORDER_N_LEG_STATUS] = {
		[LS_PENDING] = 0, [LS_HELD] = 1,      [LS_RESERVED] = 2,  [LS_PICKED] = 3,	  [LS_PACKED] = 4,
		[LS_SHIPPING] = 5, [LS_FULFILLED] = 6, [LS_PICKED_UP] = 7, [LS_IN_TRANSIT] = 8, [LS_DELIVERED] = 9,
		[LS_RELEASED] = -1,
	};
	return leg_status >= 0 && leg_status < ORDER_N_LEG_STATUS ? rank[leg_status] : -1;
}

int order_status_of_legs(const struct order_state_v *v)
{
	if (v->status != ORD_RESERVED && v->status != ORD_FULFILLED && v->status != ORD_IN_TRANSIT)
		return v->status;
	int lo = 9, scanned = 0;
	for (unsigned i = 0; i < v->n_legs; i++) {
		int r = leg_rank(v->leg_status[i]);
		lo = r < lo ? r : lo;
		scanned |= r >= leg_rank(LS_PICKED_UP);
	}
	if (!v->n_legs || lo < leg_rank(LS_FULFILLED))
		return ORD_RESERVED;
	if (lo == leg_rank(LS_DELIVERED))
		return ORD_DELIVERED;
	return scanned ? ORD_IN_TRANSIT : ORD_FULFILLED;
}

/* ---- the state document ----------------------------------------------------------------- */

/* Placed, every leg pending, payment pending, no charge, no failure. */
void order_state_initial(struct order_state_v *v, unsigned n_legs, const char *now)
{
	memset(v, 0, sizeof(*v));
	v->status = ORD_PLACED;
	v->n_legs = (uint8_t)n_legs;
	for (unsigned i = 0; i < n_legs; i++)
		v->leg_status[i] = LS_PENDING;
	snprintf(v->pay_state, sizeof(v->pay_state), "pending");
	buf_strcpy(v->updated_at, sizeof(v->updated_at), now);
}

/* Copy s into out[size]: 0, or -1 when it does not fit. */
static int copy_str(char *out, size_t size, const char *s)
{
	size_t n = strlen(s);
	if (n >= size)
		return -1;
	memcpy(out, s, n + 1);
	return 0;
}

/* The patch's values over v (order_stage's contract in order.h); every
 * string checked against its bound, so the row written always decodes. */
int order_state_apply(struct order_state_v *v, const struct order_patch *p, const char *now)
{
	if (p->status >= ORDER_N_STATUS || p->failure < 0 || p->failure >= ORDER_N_FAILURE)
		return -1;
	if (p->status >= 0)
		v->status = (uint8_t)p->status;
	for (unsigned i = 0; p->leg_status && i < v->n_legs; i++) {
		if (p->leg_status[i] >= ORDER_N_LEG_STATUS)
			return -1;
		v->leg_status[i] = p->leg_status[i];
	}
	if (p->failure) {
		v->failure = (uint8_t)p->failure;
		if (copy_str(v->failure_detail, sizeof(v->failure_detail), p->failure_detail ? p->failure_detail : "") ||
		    copy_str(v->failure_at, sizeof(v->failure_at), now))
			return -1;
	}
	if (p->compensated >= 0)
		v->compensated = p->compensated != 0;
	if (p->pay_state && (!p->pay_state[0] || copy_str(v->pay_state, sizeof(v->pay_state), p->pay_state)))
		return -1;
	if (p->pay_state && p->charge_id && p->charge_id[0] &&
	    copy_str(v->charge_id, sizeof(v->charge_id), p->charge_id))
		return -1;
	return copy_str(v->updated_at, sizeof(v->updated_at), now);
}

/* The failure member's value: {"code":..,"detail":..,"at":..}, or null. */
static int failure_put(struct buf *b, const struct order_state_v *v)
{
	if (!v->failure)
		return BUF_LIT(b, "null");
	return BUF_LIT(b, "{\"code\":") || jb_str(b, order_failure_codes[v->failure]) || BUF_LIT(b, ",\"detail\":") ||
	       jb_str(b, v->failure_detail) || BUF_LIT(b, ",\"at\":") || jb_str(b, v->failure_at) || buf_putc(b, '}');
}

/* failure_put as the next value of w. */
static void write_failure(struct jw *w, const struct order_state_v *v)
{
	struct buf *b = jw_raw_begin(w);
	if (b && failure_put(b, v))
		w->err = 1;
}

/* ---- the full document: the fast splice ------------------------------------------------- */

/* The state's members as the document writes them (each starts with ','). */

/* ,"status":"<order status>" */
static int frag_status(struct buf *out, const struct order_state_v *v)
{
	const char *n = order_status_names[v->status];
	return buf_puts(out, ",\"status\":") || jw_escape(out, n, strlen(n)) ? -1 : 0;
}

/* ,"status":"<leg status>" */
static int frag_leg(struct buf *out, const struct order_state_v *v, unsigned i)
{
	const char *n = leg_status_names[v->leg_status[i]];
	return buf_puts(out, ",\"status\":") || jw_escape(out, n, strlen(n)) ? -1 : 0;
}

/* ,"state":"...","charge_id":"..."|null */
static int frag_payment(struct buf *out, const struct order_state_v *v)
{
	if (buf_puts(out, ",\"state\":") || jw_escape(out, v->pay_state, strlen(v->pay_state)) ||
	    buf_puts(out, ",\"charge_id\":"))
		return -1;
	return v->charge_id[0] ? jw_escape(out, v->charge_id, strlen(v->charge_id)) : buf_puts(out, "null");
}

/* ,"failure":...,"saga":{"compensated":...} */
static int frag_failure_saga(struct buf *out, const struct order_state_v *v)
{
	if (buf_puts(out, ",\"failure\":") || failure_put(out, v))
		return -1;
	return buf_puts(out, v->compensated ? ",\"saga\":{\"compensated\":true}" : ",\"saga\":{\"compensated\":false}");
}

/* ,"updated_at":"..." */
static int frag_updated(struct buf *out, const struct order_state_v *v)
{
	return buf_puts(out, ",\"updated_at\":") || jw_escape(out, v->updated_at, strlen(v->updated_at)) ? -1 : 0;
}

/* An object whose members are fragments (each starts with a comma): the
 * first fragment's comma, written at b's offset at, becomes the brace. */
static void open_at(struct buf *b, size_t at)
{
	assert(at < b->len && b->data[at] == ',');
	b->data[at] = '{';
}

/* The state document: status, legs, payment, failure, saga, updated_at,
 * made of the fragments above (the same text the splice puts into an order
 * document), appended as written: an order writes it five times (~2,400
 * instructions each member by member through jw). */
static int state_put(struct buf *b, const struct order_state_v *v)
{
	size_t at = b->len;
	int bad = frag_status(b, v) || BUF_LIT(b, ",\"legs\":[");
	if (!bad)
		open_at(b, at);
	for (unsigned i = 0; i < v->n_legs && !bad; i++)
		bad = (i && buf_putc(b, ',')) || jb_str(b, leg_status_names[v->leg_status[i]]);
	bad = bad || BUF_LIT(b, "],\"payment\":");
	size_t pay = b->len;
	if (bad || frag_payment(b, v))
		return -1;
	open_at(b, pay);
	return buf_putc(b, '}') || frag_failure_saga(b, v) || frag_updated(b, v) || buf_putc(b, '}');
}

void order_state_write(struct jw *w, const struct order_state_v *v)
{
	struct buf *b = jw_raw_begin(w);
	if (b && state_put(b, v))
		w->err = 1;
}

/* Offset of `anchor` (len al) in the body at or after pos, or -1. */
static long find(const struct order *o, size_t pos, const char *anchor, size_t al)
{
	const char *d = o->row.doc;
	const char *hit = pos <= o->row.doc_len ? memmem(d + pos, o->row.doc_len - pos, anchor, al) : NULL;
	return hit ? (long)(hit - d) : -1;
}

/* Offset of anchor a (its text `anchor`, len al) at or after pos: where
 * capture wrote it down when that place holds the text (order.h), else
 * found by searching.  Test builds check the two agree. */
static long anchor(const struct order *o, size_t pos, enum order_anchor a, const char *text, size_t al)
{
	size_t k = o->anchor[a];
	if (k >= pos && k <= o->row.doc_len && o->row.doc_len - k >= al && !memcmp(o->row.doc + k, text, al)) {
#ifdef WM_TESTING
		assert(find(o, pos, text, al) == (long)k);
#endif
		return (long)k;
	}
	return find(o, pos, text, al);
}

/* Copy the body from *at up to pos (>= *at) to out; *at = pos.  0 or -1. */
static int copy_to(const struct order *o, size_t *at, long pos, struct buf *out)
{
	if (pos < 0 || (size_t)pos < *at || buf_append(out, o->row.doc + *at, (size_t)pos - *at))
		return -1;
	*at = (size_t)pos;
	return 0;
}

/* Each leg's status right after its {"leg_id":"..." (from *at on). */
static int splice_legs(const struct order *o, const struct order_state_v *v, size_t *at, struct buf *out)
{
	static const char head[] = "{\"leg_id\":\"";
	char a[96];
	for (unsigned i = 0; i < o->n_legs; i++) {
		/* head, the leg id and its closing quote (not snprintf: issue 15) */
		size_t ll = strnlen(o->legs[i].leg_id, sizeof(o->legs[i].leg_id)), al = sizeof(head) + ll;
		long hit = -1;
		if (al < sizeof(a)) {
			memcpy(a, head, sizeof(head) - 1);
			memcpy(a + sizeof(head) - 1, o->legs[i].leg_id, ll);
			a[al - 1] = '"';
			hit = find(o, *at, a, al);
		}
		if (copy_to(o, at, hit < 0 ? -1 : hit + (long)al, out) || frag_leg(out, v, i))
			return -1;
	}
	return 0;
}

/*
 * The body with the state's values inserted at their anchors, in
 * document order.  0, or -1 (an anchor missing: out holds garbage).
 */
static int doc_spliced(const struct order *o, const struct order_state_v *v, struct buf *out)
{
	static const char A_CHANNEL[] = ",\"channel\":", A_LEGS[] = ",\"fulfillments\":[",
			  A_PAY[] = ",\"payment\":{", A_AMOUNT[] = ",\"amount\":", A_IDEM[] = ",\"idempotency\":";
	size_t at = 0, n = o->row.doc_len;
	long pay;
	if (n < 2 || o->row.doc[n - 1] != '}' || copy_to(o, &at, anchor(o, 0, OA_CHANNEL, A_CHANNEL, sizeof(A_CHANNEL) - 1), out) ||
	    frag_status(out, v) || copy_to(o, &at, anchor(o, at, OA_FULFILLMENTS, A_LEGS, sizeof(A_LEGS) - 1), out) ||
	    splice_legs(o, v, &at, out) || (pay = anchor(o, at, OA_PAYMENT, A_PAY, sizeof(A_PAY) - 1)) < 0 ||
	    copy_to(o, &at, anchor(o, (size_t)pay, OA_AMOUNT, A_AMOUNT, sizeof(A_AMOUNT) - 1), out) || frag_payment(out, v) ||
	    copy_to(o, &at, anchor(o, at, OA_IDEMPOTENCY, A_IDEM, sizeof(A_IDEM) - 1), out) || frag_failure_saga(out, v) ||
	    copy_to(o, &at, (long)n - 1, out) || frag_updated(out, v))
		return -1;
	return buf_putc(out, '}');
}

/* ---- the full document: the generic path ------------------------------------------------ */

/* A leg of the body with its status after leg_id. */
static void write_leg(struct jw *w, const struct json_value *leg, const char *status)
{
	jw_obj_begin(w);
	for (uint32_t i = 0; leg->type == JSON_OBJECT && i < leg->len; i++) {
		const struct json_member *m = &leg->u.members[i];
		jw_keyn(w, m->key, m->key_len);
		jw_value(w, &m->value);
		if (!strcmp(m->key, "leg_id"))
			jw_kstr(w, "status", status);
	}
	jw_obj_end(w);
}

/* The body's payment with state and charge_id before amount. */
static void write_payment(struct jw *w, const struct json_value *p, const struct order_state_v *v)
{
	jw_obj_begin(w);
	for (uint32_t i = 0; p->type == JSON_OBJECT && i < p->len; i++) {
		const struct json_member *m = &p->u.members[i];
		if (!strcmp(m->key, "amount")) {
			jw_kstr(w, "state", v->pay_state);
			if (v->charge_id[0])
				jw_kstr(w, "charge_id", v->charge_id);
			else
				jw_knull(w, "charge_id");
		}
		jw_keyn(w, m->key, m->key_len);
		jw_value(w, &m->value);
	}
	jw_obj_end(w);
}

/* One top-level member of the body, with the state's members around it. */
static void write_member(struct jw *w, const struct json_member *m, const struct order_state_v *v)
{
	if (!strcmp(m->key, "idempotency")) {
		jw_key(w, "failure");
		write_failure(w, v);
		jw_key(w, "saga");
		jw_obj_begin(w);
		jw_kbool(w, "compensated", v->compensated);
		jw_obj_end(w);
	}
	jw_keyn(w, m->key, m->key_len);
	if (!strcmp(m->key, "fulfillments") && m->value.type == JSON_ARRAY) {
		jw_arr_begin(w);
		for (uint32_t i = 0; i < m->value.len; i++)
			write_leg(w, &m->value.u.items[i], leg_status_names[i < v->n_legs ? v->leg_status[i] : LS_PENDING]);
		jw_arr_end(w);
	} else if (!strcmp(m->key, "payment")) {
		write_payment(w, &m->value, v);
	} else {
		jw_value(w, &m->value);
	}
	if (!strcmp(m->key, "id"))
		jw_kstr(w, "status", order_status_names[v->status]);
}

/* Parse the body and write it again with the state's members in place.  0 or -1. */
static int doc_parsed(const struct order *o, const struct order_state_v *v, struct buf *out)
{
	struct json_doc *d = json_parse(o->row.doc, o->row.doc_len, NULL, NULL);
	if (!d)
		return -1;
	const struct json_value *root = json_root(d);
	struct jw w;
	jw_init(&w, out);
	jw_obj_begin(&w);
	for (uint32_t i = 0; root->type == JSON_OBJECT && i < root->len; i++)
		write_member(&w, &root->u.members[i], v);
	jw_kstr(&w, "updated_at", v->updated_at);
	jw_obj_end(&w);
	json_doc_free(d);
	return w.err ? -1 : 0;
}

#ifdef WM_TESTING
/* Test builds: the splice must write exactly what the generic path writes. */
static void check_spliced(const struct order *o, const struct order_state_v *v, const char *got, size_t len)
{
	struct buf chk;
	buf_init(&chk, REC_MAX_VAL);
	int same = !doc_parsed(o, v, &chk) && chk.len == len && !memcmp(chk.data, got, len);
	buf_free(&chk);
	if (!same) {
		log_error("msg=\"order splice differs from the parsed assembly\" order=%s", o->row.id);
		abort();
	}
}
#endif

/* The fast splice; the generic path when its anchors are missing. */
int order_doc(const struct order *o, const struct order_state *s, struct buf *out)
{
	size_t start = out->len;
	if (!doc_spliced(o, &s->v, out)) {
#ifdef WM_TESTING
		check_spliced(o, &s->v, out->data + start, out->len - start);
#endif
		return 0;
	}
	out->len = start;
	out->overflow = 0;
	log_warn("msg=\"order document assembled the slow way (anchors not found)\" order=%s", o->row.id);
	return doc_parsed(o, &s->v, out);
}
