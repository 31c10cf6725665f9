/*
 * txn_part.c -- a shard as a participant of cross-shard orders (contract
 * in txn_part.h; DESIGN.md section 9).
 *
 * Why holds carry the transaction: a participant must be able to say, for
 * any hold, which decision it waits for, after any crash, without a log
 * of its own.  The hold row holds the transaction id (hold_place_txn), the
 * hold table indexes the PREPARED ones (inventory.c, the in-doubt index),
 * and the WAL and snapshots carry them like any row.
 *
 * Why the vote is safe to send: a handler's answer is held by the server
 * until the WAL says its LSN is durable, so "yes" never leaves before the
 * holds it promises are on disk -- the forced PREPARED record of
 * presumed-abort 2PC.  A "no" releases what this call placed first; its
 * answer carries each short level's true ATP, so the destination can plan
 * again with figures better than its replica's.
 *
 * Stock on a replica is never held: a level this shard does not own (its
 * id's country belongs to another shard) is a 421, as for any write.
 *
 * In doubt: once a second (TXN_ASK_EVERY_MS) the tick walks the in-doubt
 * index; a transaction whose holds are older than TXN_PREPARED_TIMEOUT_MS
 * is asked about at its coordinator (one question in flight per
 * transaction and at most TXN_ASK_MAX at once); "commit" commits its
 * holds, "abort" or "unknown" releases them, "in_progress" waits.  A
 * coordinator that does not answer is asked again at the next round; its
 * transactions stay in doubt, counted in /metrics, until it answers or an
 * operator resolves them (wm-ctl txn resolve).
 */
#include "engine/stock/txn_part.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/base/log.h"
#include "engine/cluster/cluster_auth.h"
#include "engine/cluster/shard_map.h"
#include "engine/edge/fields.h"
#include "engine/stock/inventory.h"
#include "net/client.h"
#include "wal/errinj.h"

#define TXN_ASK_MAX 64 /* questions in flight at once */

int txn_id_parse(const char *txn)
{
	size_t n = strlen(txn);
	if (n < 4 || n > INV_TXN_ID_MAX || txn[0] != 'r')
		return -1;
	const char *colon = strchr(txn, ':');
	if (!colon || colon == txn + 1 || colon - txn > 3 || !colon[1])
		return -1;
	int id = 0;
	for (const char *p = txn + 1; p < colon; p++) {
		if (*p < '0' || *p > '9' || (p == txn + 1 && *p == '0' && p + 1 < colon))
			return -1;
		id = id * 10 + (*p - '0');
	}
	for (const char *p = colon + 1; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return -1;
	return id < SMAP_MAX_ROUTERS ? id : -1;
}

/* Test builds: die here (WM_ERRINJ names the point), what was committed
 * made durable first -- a vote forced but never sent, a commit applied
 * but never acknowledged. */
static void txn_part_crash_point(struct shard *sh, const char *name)
{
	if (!ERRINJ(name))
		return;
	txn_flush_held(sh);
	if (sh->wal)
		wal_flush(sh->wal);
	log_warn("msg=\"fault injection: crash\" point=%s", name);
	_exit(137);
}

/* ---- handlers --------------------------------------------------------------- */

/* The transaction id of a body ("txn"): 0, or -1 with the 422 written. */
static int body_txn(struct api_ctx *c, const struct json_value *body, char txn[INV_TXN_ID_MAX + 1])
{
	if (fld_str(c, body, "txn", NULL, txn, INV_TXN_ID_MAX) != FLD_SET || txn_id_parse(txn) < 0)
		api_field_error(c, "txn", "format", "r<router id>:<order id>, at most %d bytes", INV_TXN_ID_MAX);
	return c->n_errs ? -1 : 0;
}

/* The transaction a commit, abort or release names ({"txn": T}): 0, or -1
 * with the answer (400/415/422) written. */
static int request_txn(struct api_ctx *c, char txn[INV_TXN_ID_MAX + 1])
{
	const struct json_value *body = api_body(c);
	if (!body)
		return -1;
	if (body_txn(c, body, txn)) {
		api_validation_failed(c);
		return -1;
	}
	return 0;
}

/* A 200 {"<what>": n}: how many holds a commit, abort or release moved. */
static void answer_count(struct api_ctx *c, const char *what, unsigned n)
{
	c->rs->status = 200;
	jw_obj_begin(&c->w);
	jw_var_int(&c->w, what, n);
	jw_obj_end(&c->w);
}

/* Does this shard own the level (its id's country)?  A cluster of one owns
 * everything. */
static int owns_level(struct shard *sh, const char *level_id)
{
	if (!sh->smap)
		return 1;
	if (strncmp(level_id, "inv_", 4) || strlen(level_id) < 8 || level_id[6] != '_')
		return 0;
	char cc[3] = {level_id[4], level_id[5], 0};
	int owner = smap_owner(sh->smap, cc);
	return owner >= 0 && (uint64_t)owner == sh->cfg.shard_id;
}

/* Release every PREPARED hold of txn; how many could not be (store errors). */
static unsigned release_prepared(struct shard *sh, const char *txn, unsigned *released)
{
	char ids[TXN_PART_MAX_HOLDS][INV_HOLD_ID_MAX + 1];
	unsigned n = 0, failed = 0;
	size_t pos = 0;
	const struct hold *h;
	while ((h = hold_of_txn(sh, txn, &pos)) && n < TXN_PART_MAX_HOLDS)
		if (h->state == HS_PREPARED)
			memcpy(ids[n++], h->row.id, h->row.id_len + 1);
	for (unsigned i = 0; i < n; i++)
		failed += hold_release(sh, ids[i]) != HOLD_OK;
	*released = n - failed;
	return failed;
}

struct prep_hold {
	char id[INV_HOLD_ID_MAX + 1], level[ID_MAX_LEN];
	int64_t qty;
};

/* The holds of a prepare body into hs; how many, or -1 with the 422 written. */
static int body_holds(struct api_ctx *c, const struct json_value *body, struct prep_hold *hs)
{
	const struct json_value *a = json_get(body, "holds");
	if (!a || a->type != JSON_ARRAY || a->len < 1 || a->len > TXN_PART_MAX_HOLDS) {
		api_field_error(c, "holds", "size", "1 to %d holds", TXN_PART_MAX_HOLDS);
		return -1;
	}
	for (uint32_t i = 0; i < a->len; i++) {
		const struct json_value *o = &a->u.items[i];
		char path[32];
		snprintf(path, sizeof(path), "holds[%u]", i);
		if (fld_str(c, o, "hold_id", path, hs[i].id, INV_HOLD_ID_MAX) != FLD_SET ||
		    fld_str(c, o, "level_id", path, hs[i].level, ID_MAX_LEN - 1) != FLD_SET ||
		    fld_int(c, o, "qty", path, 1, INV_QTY_MAX, &hs[i].qty) != FLD_SET)
			api_field_error(c, path, "required", "hold_id, level_id and qty are required");
	}
	return c->n_errs ? -1 : (int)a->len;
}

static void answer_no(struct api_ctx *c, const struct prep_hold *short_hold, int rc)
{
	struct jw *w = &c->w;
	c->rs->status = 409;
	jw_obj_begin(w);
	jw_kstr(w, "vote", "no");
	jw_kstr(w, "reason", rc == HOLD_E_SHORT ? "insufficient_stock" : rc == HOLD_E_STORE ? "store" : "refused");
	jw_key(w, "short");
	jw_arr_begin(w);
	if (short_hold) {
		const struct inv_level *l = inv_level_get(c->sh, short_hold->level, strlen(short_hold->level));
		jw_obj_begin(w);
		jw_kstr(w, "level_id", short_hold->level);
		jw_kint(w, "atp", l ? inv_atp(l) : 0);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

static void txn_prepare(struct api_ctx *c)
{
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	char txn[INV_TXN_ID_MAX + 1];
	struct prep_hold hs[TXN_PART_MAX_HOLDS];
	int n = body_txn(c, body, txn) ? -1 : body_holds(c, body, hs);
	if (n < 0) {
		api_validation_failed(c);
		return;
	}
	for (int i = 0; i < n; i++)
		if (!owns_level(c->sh, hs[i].level)) {
			char d[160];
			snprintf(d, sizeof(d), "level %s is not this shard's stock", hs[i].level);
			api_error(c, 421, "misdirected_request", d);
			return;
		}
	for (int i = 0; i < n; i++) {
		int rc = hold_place_txn(c->sh, hs[i].level, hs[i].qty, hs[i].id, txn);
		if (rc == HOLD_OK)
			continue;
		unsigned released;
		release_prepared(c->sh, txn, &released);
		log_info("msg=\"transaction prepare: vote no\" txn=%s hold=%s level=%s qty=%lld rc=%d released=%u", txn,
			 hs[i].id, hs[i].level, (long long)hs[i].qty, rc, released);
		answer_no(c, &hs[i], rc);
		return;
	}
	txn_part_crash_point(c->sh, "txn_part_crash_after_prepare"); /* forced, vote not sent */
	c->rs->status = 200;
	jw_obj_begin(&c->w);
	jw_kstr(&c->w, "vote", "yes");
	jw_kint(&c->w, "holds", n);
	jw_obj_end(&c->w);
}

/* The ids of txn's holds into ids (at most TXN_PART_MAX_HOLDS): those not
 * released, or (all) every one; how many.  *released and *consumed count
 * the released and the consumed holds seen. */
static unsigned live_holds(struct shard *sh, const char *txn, char ids[][INV_HOLD_ID_MAX + 1], int all,
			   unsigned *released, unsigned *consumed)
{
	unsigned n = 0;
	size_t pos = 0;
	const struct hold *h;
	*released = *consumed = 0;
	while ((h = hold_of_txn(sh, txn, &pos)) && n < TXN_PART_MAX_HOLDS) {
		*released += h->state == HS_RELEASED;
		*consumed += h->state == HS_CONSUMED;
		if (all || h->state != HS_RELEASED)
			memcpy(ids[n++], h->row.id, h->row.id_len + 1);
	}
	return n;
}

/* Commit every hold of txn: 0, or -1 with the answer written.  Holds
 * released by a re-plan (the coordinator aborted the first plan's holds
 * and prepared new ones, DESIGN.md 9 step 2) are skipped as long as the
 * transaction has a hold to commit; a transaction whose holds were all
 * released cannot commit (a COMMIT after this shard gave the units back). */
static int commit_all(struct api_ctx *c, const char *txn, unsigned *committed)
{
	char ids[TXN_PART_MAX_HOLDS][INV_HOLD_ID_MAX + 1];
	unsigned released, consumed;
	unsigned n = live_holds(c->sh, txn, ids, 0, &released, &consumed);
	if (n == 0 && released) /* every hold went back: commit them to be refused below */
		n = live_holds(c->sh, txn, ids, 1, &released, &consumed);
	*committed = 0;
	for (unsigned i = 0; i < n; i++) {
		int rc = hold_commit(c->sh, ids[i]);
		if (rc == HOLD_OK) {
			(*committed)++;
			continue;
		}
		log_error("msg=\"transaction commit refused by a hold\" txn=%s hold=%s rc=%d action=\"a COMMIT for a hold "
			  "this shard released: check the coordinator's decision log (wm-ctl cluster check)\"",
			  txn, ids[i], rc);
		api_error(c, rc == HOLD_E_STATE ? 409 : 500, rc == HOLD_E_STATE ? "transaction_aborted" : "store",
			  "a hold of this transaction cannot be committed");
		return -1;
	}
	return 0;
}

static void txn_commit_route(struct api_ctx *c)
{
	char txn[INV_TXN_ID_MAX + 1];
	if (request_txn(c, txn))
		return;
	size_t pos = 0;
	if (!hold_of_txn(c->sh, txn, &pos)) {
		api_error(c, 404, "unknown_transaction", "this shard holds nothing for the transaction");
		return;
	}
	unsigned n;
	if (commit_all(c, txn, &n))
		return;
	txn_part_crash_point(c->sh, "txn_part_crash_after_commit"); /* committed, not acknowledged */
	answer_count(c, "committed", n);
}

static void txn_abort_route(struct api_ctx *c)
{
	char txn[INV_TXN_ID_MAX + 1];
	if (request_txn(c, txn))
		return;
	size_t pos = 0;
	const struct hold *h;
	while ((h = hold_of_txn(c->sh, txn, &pos)))
		if (h->state == HS_COMMITTED || h->state == HS_CONSUMED) {
			log_error("msg=\"transaction abort after commit refused\" txn=%s", txn);
			api_error(c, 409, "transaction_committed", "this transaction is committed here");
			return;
		}
	unsigned released;
	if (release_prepared(c->sh, txn, &released)) {
		api_error(c, 500, "store", "a hold of this transaction could not be released");
		return;
	}
	answer_count(c, "released", released);
}

/* POST /internal/txn/release {"txn"}: a cancelled (or failed) order's
 * compensation, sent by its destination: every hold of txn, PREPARED or
 * COMMITTED, goes back to ATP.  Idempotent; a CONSUMED (shipped) hold
 * cannot come back: 409. */
static void txn_release_route(struct api_ctx *c)
{
	char txn[INV_TXN_ID_MAX + 1];
	if (request_txn(c, txn))
		return;
	char ids[TXN_PART_MAX_HOLDS][INV_HOLD_ID_MAX + 1];
	unsigned released, consumed;
	/* those already back (also a re-plan's first holds) are skipped */
	unsigned n = live_holds(c->sh, txn, ids, 0, &released, &consumed);
	if (consumed) {
		api_error(c, 409, "hold_consumed", "a leg of this transaction has shipped");
		return;
	}
	released = 0;
	/* test builds: a participant that says it released and did not (the
	 * whole-cluster check must find the COMMITTED hold of a compensated order) */
	if (ERRINJ("txn_release_forgets"))
		n = 0;
	for (unsigned i = 0; i < n; i++) {
		if (hold_release(c->sh, ids[i]) != HOLD_OK) {
			api_error(c, 500, "store", "a hold of this transaction could not be released");
			return;
		}
		released++;
	}
	answer_count(c, "released", released);
}

/* POST /internal/txn/consume {"txn","hold_id"}: a leg of txn shipped (its
 * destination's fulfilment, engine/orders/fulfilment.c): the hold leaves
 * the stock (on_hand and allocated -= qty).  Idempotent (a consumed hold
 * answers 200 again); the answer is released only once the consumption is
 * durable, so the destination may mark the leg shipped on hearing it.  A
 * hold of another transaction is 404; a released one 409. */
/* The body's txn and hold_id, the hold belonging to that transaction:
 * 0, or -1 with the answer written (400/415/422, 404 unknown_hold).  The
 * body's other members: the caller's. */
static int request_txn_hold(struct api_ctx *c, char txn[INV_TXN_ID_MAX + 1], char hold_id[INV_HOLD_ID_MAX + 1])
{
	if (request_txn(c, txn))
		return -1;
	if (fld_str(c, api_body(c), "hold_id", "hold_id", hold_id, INV_HOLD_ID_MAX) != FLD_SET) {
		if (!c->n_errs)
			api_field_error(c, "hold_id", "required", "the hold of the transaction");
		api_validation_failed(c);
		return -1;
	}
	const struct hold *h = hold_get(c->sh, hold_id, strlen(hold_id));
	if (!h || strcmp(h->txn, txn)) {
		api_error(c, 404, "unknown_hold", "this shard holds no such hold for the transaction");
		return -1;
	}
	return 0;
}

static void txn_consume_route(struct api_ctx *c)
{
	char txn[INV_TXN_ID_MAX + 1], hold_id[INV_HOLD_ID_MAX + 1];
	if (request_txn_hold(c, txn, hold_id))
		return;
	int rc = hold_consume(c->sh, hold_id);
	if (rc != HOLD_OK) {
		log_error("msg=\"a shipped leg's hold cannot be consumed\" txn=%s hold=%s rc=%d action=\"the hold was "
			  "released while its destination ships it: compare the order and the hold (wm-ctl cluster check)\"",
			  txn, hold_id, rc);
		api_error(c, rc == HOLD_E_STATE ? 409 : 500, rc == HOLD_E_STATE ? "hold_released" : "store",
			  "the hold cannot be consumed");
		return;
	}
	txn_part_crash_point(c->sh, "txn_part_crash_after_consume"); /* consumed, not acknowledged */
	answer_count(c, "consumed", 1);
}

/* POST /internal/txn/return {"txn","hold_id","returned","received"}: the
 * TOTALS of a shipped hold's units coming back (engine/orders/returns.c):
 * the level's incoming and on_hand follow (hold_stage_return).  Totals,
 * not increments: a repeated or late message changes nothing. */
static void txn_return_route(struct api_ctx *c)
{
	char txn[INV_TXN_ID_MAX + 1], hold_id[INV_HOLD_ID_MAX + 1];
	int64_t returned = 0, received = 0;
	if (request_txn_hold(c, txn, hold_id))
		return;
	const struct json_value *b = api_body(c);
	if (fld_int(c, b, "returned", "returned", 0, INV_QTY_MAX, &returned) != FLD_SET ||
	    fld_int(c, b, "received", "received", 0, INV_QTY_MAX, &received) != FLD_SET) {
		if (!c->n_errs)
			api_field_error(c, "returned", "required", "returned and received: the hold's totals");
		api_validation_failed(c);
		return;
	}
	int moved;
	txn_begin(c->sh);
	int rc = hold_stage_return(c->sh, hold_id, returned, received, &moved);
	if (rc == HOLD_OK && moved && !txn_commit(c->sh))
		rc = HOLD_E_STORE;
	if (rc != HOLD_OK || !moved)
		txn_abort(c->sh);
	if (rc != HOLD_OK) {
		api_error(c, rc == HOLD_E_STORE ? 500 : 409, rc == HOLD_E_STORE ? "store" : "invalid_return",
			  "the hold cannot take these totals back");
		return;
	}
	answer_count(c, "returned", (unsigned)(returned > 0 ? returned : 0));
}

const struct route txn_part_internal_routes[] = {
	{HTTP_M_POST, "/internal/txn/return", txn_return_route, SC_PUBLIC, ACT_NONE,
	 "A shipped leg's units coming back: the hold's totals", 0},
	{HTTP_M_POST, "/internal/txn/consume", txn_consume_route, SC_PUBLIC, ACT_NONE,
	 "A shipped leg: consume its hold", 0},
	{HTTP_M_POST, "/internal/txn/release", txn_release_route, SC_PUBLIC, ACT_NONE,
	 "Release a cancelled transaction's holds", 0},
	{HTTP_M_POST, "/internal/txn/prepare", txn_prepare, SC_PUBLIC, ACT_NONE, "2PC: prepare holds, vote", 0},
	{HTTP_M_POST, "/internal/txn/commit", txn_commit_route, SC_PUBLIC, ACT_NONE, "2PC: commit a transaction's holds", 0},
	{HTTP_M_POST, "/internal/txn/abort", txn_abort_route, SC_PUBLIC, ACT_NONE, "2PC: release a transaction's holds", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};

/* ---- in doubt: asking the coordinator ------------------------------------------ */

struct txn_ask {
	struct shard *sh;
	char txn[INV_TXN_ID_MAX + 1];
	txn_decision_fn fn;
	int busy;
};

static struct {
	struct hc_pool *pools[SMAP_MAX_ROUTERS];
	char addr[SMAP_MAX_ROUTERS][SMAP_MAX_ADDR];
	struct txn_ask asks[TXN_ASK_MAX];
	uint64_t next_ms, warned_ms;
	uint64_t asked, committed, aborted, failed;
} tp;

static uint64_t mono_ms(void) { return ev_clock_us() / 1000; }

uint64_t txn_timeout_ms(const struct shard *sh)
{
	return sh->cfg.txn_timeout_ms ? sh->cfg.txn_timeout_ms : TXN_PREPARED_TIMEOUT_MS;
}

int txn_asking(const char *txn)
{
	for (int i = 0; i < TXN_ASK_MAX; i++)
		if (tp.asks[i].busy && !strcmp(tp.asks[i].txn, txn))
			return 1;
	return 0;
}

/* Commit every hold of txn outside a request (the coordinator said commit). */
static void decide_commit(struct shard *sh, const char *txn)
{
	char ids[TXN_PART_MAX_HOLDS][INV_HOLD_ID_MAX + 1];
	unsigned n = 0, bad = 0;
	size_t pos = 0;
	const struct hold *h;
	while ((h = hold_of_txn(sh, txn, &pos)) && n < TXN_PART_MAX_HOLDS)
		memcpy(ids[n++], h->row.id, h->row.id_len + 1);
	for (unsigned i = 0; i < n; i++)
		bad += hold_commit(sh, ids[i]) != HOLD_OK;
	log_warn("msg=\"in-doubt transaction committed on the coordinator's word\" txn=%s holds=%u failed=%u", txn, n,
		 bad);
}

/* The coordinator said commit: the participant's holds. */
static void holds_decided(struct shard *sh, const char *txn, int commit)
{
	if (commit) {
		tp.committed++;
		decide_commit(sh, txn);
		return;
	}
	unsigned released;
	tp.aborted++;
	release_prepared(sh, txn, &released);
	log_warn("msg=\"in-doubt transaction aborted: the coordinator has no commit for it\" txn=%s released=%u", txn,
		 released);
}

static void on_status(void *arg, const struct hc_response *r, const char *err)
{
	struct txn_ask *a = arg;
	a->busy = 0;
	if (!r || r->status != 200) {
		tp.failed++;
		uint64_t now = mono_ms();
		if (now - tp.warned_ms >= 10000) {
			tp.warned_ms = now;
			log_warn("msg=\"the coordinator of an in-doubt transaction did not answer; it stays in doubt\" "
				 "txn=%s status=%d error=\"%s\" action=\"start the router the transaction id names, or "
				 "resolve it: wm-ctl txn resolve ID commit|abort\"",
				 a->txn, r ? r->status : 0, err ? err : "-");
		}
		return;
	}
	/* {"txn":"...","decision":"commit"|"abort"|"in_progress"} from the signed router */
	if (memmem(r->body, r->body_len, "\"decision\":\"commit\"", 19))
		a->fn(a->sh, a->txn, 1);
	else if (memmem(r->body, r->body_len, "\"decision\":\"abort\"", 18))
		a->fn(a->sh, a->txn, 0);
}

/* The pool of router id's address (made or remade as the map says); NULL
 * when the map names no such router. */
static struct hc_pool *router_pool(struct shard *sh, int id)
{
	const char *addr = sh->smap->routers[id];
	if (!addr[0])
		return NULL;
	if (tp.pools[id] && !strcmp(tp.addr[id], addr))
		return tp.pools[id];
	char err[160];
	struct hc_config hc = {.addr = addr, .max_conns = 2, .max_queue = TXN_ASK_MAX, .max_response_bytes = 4096};
	struct hc_pool *p = hc_pool_new(sh->loop, &hc, err, sizeof(err));
	if (!p)
		return NULL;
	hc_pool_free(tp.pools[id]); /* not from inside its own callback: the tick */
	tp.pools[id] = p;
	snprintf(tp.addr[id], sizeof(tp.addr[id]), "%s", addr);
	return p;
}

void txn_ask(struct shard *sh, const char *txn, txn_decision_fn fn)
{
	if (!sh->smap || !sh->ckey || !sh->loop || txn_asking(txn))
		return;
	int slot = -1;
	for (int i = 0; i < TXN_ASK_MAX && slot < 0; i++)
		if (!tp.asks[i].busy)
			slot = i;
	int rid = txn_id_parse(txn);
	struct hc_pool *p = slot >= 0 && rid >= 0 ? router_pool(sh, rid) : NULL;
	if (!p)
		return;
	char target[64 + INV_TXN_ID_MAX], sig[CK_HEADER_MAX], hdr[CK_HEADER_MAX + 32];
	snprintf(target, sizeof(target), "/internal/txn/status?txn=%s", txn);
	if (ck_sign(sh->ckey, "GET", 3, target, strlen(target), (int64_t)time(NULL), NULL, 0, sig))
		return;
	snprintf(hdr, sizeof(hdr), CK_HEADER_NAME ": %s\r\n", sig);
	struct txn_ask *a = &tp.asks[slot];
	a->sh = sh;
	a->fn = fn;
	snprintf(a->txn, sizeof(a->txn), "%s", txn);
	struct hc_request rq = {.method = "GET", .path = target, .headers = hdr, .timeout_ms = TXN_ASK_TIMEOUT_MS};
	if (hc_send(p, &rq, on_status, a) == 0) {
		a->busy = 1;
		tp.asked++;
	}
}

/* ---- calls to other shards (a destination releasing a cancelled order) ---------- */

static struct hc_pool *shard_pools[SMAP_MAX_SHARDS];
static char shard_addr[SMAP_MAX_SHARDS][SMAP_MAX_ADDR];

int txn_shard_call(struct shard *sh, uint32_t shard, const char *path, const char *body, hc_done_fn fn, void *arg)
{
	if (!sh->smap || !sh->ckey || !sh->loop || shard >= sh->smap->n)
		return -1;
	const char *addr = sh->smap->shards[shard].addr;
	if (!shard_pools[shard] || strcmp(shard_addr[shard], addr)) {
		char err[160];
		struct hc_config hc = {.addr = addr, .max_conns = 2, .max_queue = 256, .max_response_bytes = 4096};
		struct hc_pool *p = hc_pool_new(sh->loop, &hc, err, sizeof(err));
		if (!p)
			return -1;
		hc_pool_free(shard_pools[shard]);
		shard_pools[shard] = p;
		snprintf(shard_addr[shard], sizeof(shard_addr[shard]), "%s", addr);
	}
	char sig[CK_HEADER_MAX], hdr[CK_HEADER_MAX + 64];
	if (ck_sign(sh->ckey, "POST", 4, path, strlen(path), (int64_t)time(NULL), body, strlen(body), sig))
		return -1;
	snprintf(hdr, sizeof(hdr), CK_HEADER_NAME ": %s\r\nContent-Type: application/json\r\n", sig);
	struct hc_request rq = {.method = "POST", .path = path, .headers = hdr, .body = body, .body_len = strlen(body),
				.timeout_ms = TXN_ASK_TIMEOUT_MS};
	return hc_send(shard_pools[shard], &rq, fn, arg);
}

void txn_part_tick(struct shard *sh)
{
	for (int i = 0; i < SMAP_MAX_SHARDS; i++)
		if (shard_pools[i])
			hc_tick(shard_pools[i]);
	if (!sh->smap || !sh->ckey || !sh->loop)
		return;
	uint64_t now = mono_ms();
	for (int i = 0; i < SMAP_MAX_ROUTERS; i++)
		if (tp.pools[i])
			hc_tick(tp.pools[i]);
	if (now < tp.next_ms)
		return;
	tp.next_ms = now + TXN_ASK_EVERY_MS;
	char after[INV_TXN_ID_MAX + 1] = "";
	const struct hold *h;
	while ((h = hold_in_doubt_next(sh, after))) {
		snprintf(after, sizeof(after), "%s", h->txn);
		if (now - h->prepared_mono_ms >= txn_timeout_ms(sh))
			txn_ask(sh, after, holds_decided);
	}
}

uint64_t txn_part_in_doubt(struct shard *sh)
{
	const uint64_t probes = idx_probes; /* an operator's figure: see txn_part_metrics */
	char after[INV_TXN_ID_MAX + 1] = "";
	const struct hold *h;
	uint64_t txns = 0;
	while ((h = hold_in_doubt_next(sh, after))) {
		snprintf(after, sizeof(after), "%s", h->txn);
		txns++;
	}
	idx_probes = probes;
	return txns;
}

void txn_part_metrics(struct shard *sh, struct buf *o)
{
	/* an operator's gauge, not partner data: the walk below must not make
	 * /metrics wait for the newest state's fsync (table.h, the read set) */
	const uint64_t probes = idx_probes;
	uint64_t now = mono_ms(), oldest = now;
	char after[INV_TXN_ID_MAX + 1] = "";
	const struct hold *h;
	uint64_t txns = 0;
	while ((h = hold_in_doubt_next(sh, after))) {
		snprintf(after, sizeof(after), "%s", h->txn);
		txns++;
		if (h->prepared_mono_ms < oldest)
			oldest = h->prepared_mono_ms;
	}
	idx_probes = probes;
	buf_printf(o,
		   "# HELP wm_txn_in_doubt Cross-shard transactions with PREPARED holds on this shard.\n"
		   "# TYPE wm_txn_in_doubt gauge\nwm_txn_in_doubt %llu\n"
		   "# TYPE wm_txn_in_doubt_holds gauge\nwm_txn_in_doubt_holds %llu\n"
		   "# HELP wm_txn_in_doubt_oldest_seconds Age of the oldest PREPARED hold (since it was loaded).\n"
		   "# TYPE wm_txn_in_doubt_oldest_seconds gauge\nwm_txn_in_doubt_oldest_seconds %.3f\n"
		   "# TYPE wm_txn_coordinator_questions_total counter\nwm_txn_coordinator_questions_total %llu\n"
		   "# TYPE wm_txn_resolved_total counter\nwm_txn_resolved_total{decision=\"commit\"} %llu\n"
		   "wm_txn_resolved_total{decision=\"abort\"} %llu\n",
		   (unsigned long long)txns, (unsigned long long)hold_in_doubt_count(sh), (double)(now - oldest) / 1000.0,
		   (unsigned long long)tp.asked, (unsigned long long)tp.committed, (unsigned long long)tp.aborted);
}

void txn_part_close(void)
{
	for (int i = 0; i < SMAP_MAX_SHARDS; i++) {
		hc_pool_free(shard_pools[i]);
		shard_pools[i] = NULL;
	}
	for (int i = 0; i < SMAP_MAX_ROUTERS; i++) {
		hc_pool_free(tp.pools[i]);
		tp.pools[i] = NULL;
	}
}
