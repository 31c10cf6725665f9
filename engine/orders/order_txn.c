/*
 * order_txn.c -- the destination shard's side of a cross-shard order
 * (DESIGN.md section 9; the steps are saga.c's saga_txn_*, order.h).
 *
 * The coordinating router calls, signed, in this order:
 *   POST /internal/orders/{id}/charge   after every participant voted yes
 *   POST /internal/orders/{id}/commit   after its COMMIT record is forced
 *   POST /internal/orders/{id}/rest     after every participant committed
 * or, before the decision,
 *   POST /internal/orders/{id}/replan {"atp", "request"}  once, after a no vote
 *   POST /internal/orders/{id}/abort {"reason": failure code}
 * Each is idempotent: a router re-driving after a crash sends them again.
 * A failed or cancelled cross-shard order is compensated from here: once
 * refunded, the tick asks every shard holding one of its legs to release
 * the transaction's holds (POST /internal/txn/release, idempotent) and
 * marks it compensated when all have; until then the order is not at rest
 * and the next round asks again, also after a restart.
 *
 * rest and abort answer what POST /v1/orders answers on one shard (201
 * with the order, or the failure's problem), in the view of the caller the
 * router forwards (X-WM-Principal), so the router relays it as is.
 */
#include <stdio.h>
#include <string.h>

#include "engine/base/log.h"
#include "engine/edge/fields.h"
#include "engine/cluster/shard_map.h"
#include "engine/orders/order.h"
#include "engine/stock/txn_part.h"

/* The cross-shard order named by the path, or NULL with the 404 written. */
static const struct order *txn_order(struct api_ctx *c, char *id)
{
	if (api_param(c, 0, id, ID_MAX_LEN) <= 0) {
		api_error(c, 404, "not_found", "no such order");
		return NULL;
	}
	const struct order *o = order_get(c->sh, id, strlen(id));
	if (!o || !order_txn_of(o, NULL, 0)) {
		api_error(c, 404, "not_found", "no such cross-shard order");
		return NULL;
	}
	return o;
}

static void answer_status(struct api_ctx *c, int http, const char *id)
{
	const struct order_state *s = order_state_get(c->sh, id, strlen(id));
	c->rs->status = http;
	jw_obj_begin(&c->w);
	jw_kstr(&c->w, "order_id", id);
	jw_kstr(&c->w, "status", s ? order_status_names[s->v.status] : "unknown");
	jw_obj_end(&c->w);
}

static void dest_charge(struct api_ctx *c)
{
	char id[ID_MAX_LEN];
	if (!txn_order(c, id))
		return;
	int why = saga_txn_charge(c->sh, id);
	answer_status(c, why == OF_NONE ? 200 : 409, id);
}

static void dest_commit(struct api_ctx *c)
{
	char id[ID_MAX_LEN];
	if (!txn_order(c, id))
		return;
	if (saga_txn_commit(c->sh, id)) {
		log_error("msg=\"cross-shard order cannot take its COMMIT\" order=%s", id);
		answer_status(c, 409, id);
		return;
	}
	answer_status(c, 200, id);
}

static void dest_rest(struct api_ctx *c)
{
	char id[ID_MAX_LEN];
	if (!txn_order(c, id))
		return;
	if (saga_txn_rest(c->sh, id)) {
		answer_status(c, 409, id);
		return;
	}
	order_answer_create(c, order_get(c->sh, id, strlen(id)), 0);
}

static void dest_abort(struct api_ctx *c)
{
	char id[ID_MAX_LEN];
	const struct order *o = txn_order(c, id);
	const struct json_value *b = o ? api_body(c) : NULL;
	if (!b)
		return;
	int why = OF_INSUFFICIENT_STOCK;
	fld_enum(c, b, "reason", NULL, order_failure_codes, &why);
	if (c->n_errs) {
		api_validation_failed(c);
		return;
	}
	if (saga_txn_abort(c->sh, id, why)) {
		answer_status(c, 409, id);
		return;
	}
	order_answer_create(c, order_get(c->sh, id, strlen(id)), 0);
}

/* The reported ATP of a re-plan body ("atp": [{"level_id", "atp"}], at
 * most INV_ATP_OVERRIDE_MAX) into ov: 0, or -1 with the field errors. */
static int replan_atp(struct api_ctx *c, const struct json_value *b, struct inv_atp_override *ov)
{
	const struct json_value *a = json_get(b, "atp");
	memset(ov, 0, sizeof(*ov));
	if (!a || a->type != JSON_ARRAY || a->len > INV_ATP_OVERRIDE_MAX) {
		api_field_error(c, "atp", "size", "0 to %d reported levels", INV_ATP_OVERRIDE_MAX);
		return -1;
	}
	for (uint32_t i = 0; i < a->len; i++) {
		char path[24];
		snprintf(path, sizeof(path), "atp[%u]", i);
		if (fld_str(c, &a->u.items[i], "level_id", path, ov->v[i].level, ID_MAX_LEN - 1) != FLD_SET ||
		    fld_int(c, &a->u.items[i], "atp", path, 0, INV_QTY_MAX, &ov->v[i].atp) != FLD_SET)
			api_field_error(c, path, "required", "level_id and atp are required");
	}
	ov->n = a->len;
	return c->n_errs ? -1 : 0;
}

/* POST /internal/orders/{id}/replan {"atp": [...], "request": {order}}:
 * the coordinator's one re-plan after a no vote (order.h: order_replan). */
static void dest_replan(struct api_ctx *c)
{
	char id[ID_MAX_LEN];
	const struct order *o = txn_order(c, id);
	const struct json_value *b = o ? api_body(c) : NULL;
	if (!b)
		return;
	static struct inv_atp_override ov; /* 2.4 KB: off the stack; one request at a time */
	const struct json_value *req = json_get(b, "request");
	if (replan_atp(c, b, &ov) || !req || req->type != JSON_OBJECT) {
		if (!req || req->type != JSON_OBJECT)
			api_field_error(c, "request", "required", "the client's order request");
		api_validation_failed(c);
		return;
	}
	const struct order_state *s = order_state_get(c->sh, id, strlen(id));
	if (!s || s->v.status != ORD_PLACED) {
		answer_status(c, 409, id);
		return;
	}
	order_replan(c, o, req, &ov);
}

const struct route order_txn_internal_routes[] = {
	{HTTP_M_POST, "/internal/orders/{id}/charge", dest_charge, SC_PUBLIC, ACT_NONE, "2PC: charge the consumer", 0},
	{HTTP_M_POST, "/internal/orders/{id}/commit", dest_commit, SC_PUBLIC, ACT_NONE, "2PC: the decision is commit", 0},
	{HTTP_M_POST, "/internal/orders/{id}/rest", dest_rest, SC_PUBLIC, ACT_NONE, "2PC: every leg reserved", 0},
	{HTTP_M_POST, "/internal/orders/{id}/abort", dest_abort, SC_PUBLIC, ACT_NONE, "2PC: abort before the decision", 0},
	{HTTP_M_POST, "/internal/orders/{id}/replan", dest_replan, SC_PUBLIC, ACT_NONE, "2PC: re-plan once after a no vote", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};

/* ---- in doubt at the destination ----------------------------------------------- */

/* The coordinator's answer about an order left placed or paid. */
static void dest_decided(struct shard *sh, const char *txn, int commit)
{
	const char *colon = strchr(txn, ':');
	if (!colon)
		return;
	const char *id = colon + 1;
	if (commit) {
		int rc = saga_txn_commit(sh, id) || saga_txn_rest(sh, id);
		log_warn("msg=\"in-doubt cross-shard order committed on its coordinator's word\" order=%s ok=%d", id, !rc);
	} else {
		int rc = saga_txn_abort(sh, id, OF_INTERRUPTED);
		log_warn("msg=\"in-doubt cross-shard order aborted: its coordinator has no commit\" order=%s ok=%d", id,
			 !rc);
	}
}

/* ---- releasing a failed or cancelled order's legs -------------------------------- */

#define ORDER_RELEASES_MAX 64 /* orders whose releases are in flight at once */

struct release_job {
	struct shard *sh;
	char order[ID_MAX_LEN];
	unsigned pending, failed;
	int busy;
};

static struct release_job jobs[ORDER_RELEASES_MAX];

static void on_released(void *arg, const struct hc_response *r, const char *err)
{
	struct release_job *j = arg;
	j->pending--;
	if (!r || r->status != 200) {
		j->failed++;
		log_warn("msg=\"a participant did not release a cancelled order's legs; retried\" order=%s status=%d "
			 "error=\"%s\"", j->order, r ? r->status : 0, err ? err : "-");
	}
	if (j->pending)
		return;
	if (!j->failed && saga_txn_released(j->sh, j->order))
		log_error("msg=\"cross-shard order released but not marked compensated\" order=%s", j->order);
	j->busy = 0;
}

/* Send POST /internal/txn/release to every shard holding a leg of o. */
static void release_legs(struct shard *sh, const struct order *o, const char *txn)
{
	for (int i = 0; i < ORDER_RELEASES_MAX; i++)
		if (jobs[i].busy && !strcmp(jobs[i].order, o->row.id))
			return; /* in flight */
	struct release_job *j = NULL;
	for (int i = 0; i < ORDER_RELEASES_MAX && !j; i++)
		if (!jobs[i].busy)
			j = &jobs[i];
	if (!j)
		return;
	*j = (struct release_job){.sh = sh, .busy = 1};
	memcpy(j->order, o->row.id, o->row.id_len + 1);
	uint8_t asked[SMAP_MAX_SHARDS] = {0};
	char body[INV_TXN_ID_MAX + 16];
	snprintf(body, sizeof(body), "{\"txn\":\"%s\"}", txn);
	for (unsigned i = 0; i < o->n_legs; i++) {
		const char *lv = o->legs[i].level_id;
		char cc[3] = {lv[4], lv[5], 0};
		int s = strlen(lv) > 7 ? smap_owner(sh->smap, cc) : -1;
		if (s < 0 || asked[s])
			continue;
		asked[s] = 1;
		if (txn_shard_call(sh, (uint32_t)s, "/internal/txn/release", body, on_released, j) == 0)
			j->pending++;
		else
			j->failed++;
	}
	if (!j->pending)
		j->busy = 0; /* nothing could be sent: the next round tries again */
}

void order_txn_tick(struct shard *sh)
{
	static uint64_t next_ms;
	uint64_t now = ev_clock_us() / 1000;
	if (!sh->smap || now < next_ms)
		return;
	next_ms = now + TXN_ASK_EVERY_MS;
	long long wall = (long long)wall_ms(), limit = (long long)txn_timeout_ms(sh);
	char after[ID_MAX_LEN] = "", id[ID_MAX_LEN], txn[INV_TXN_ID_MAX + 1];
	while (order_pending_next(sh, after, id)) {
		memcpy(after, id, sizeof(after));
		const struct order *o = order_get(sh, id, strlen(id));
		const struct order_state *s = order_state_get(sh, id, strlen(id));
		long long at;
		if (o && s && order_txn_of(o, txn, sizeof(txn)) && !s->v.compensated &&
		    (s->v.status == ORD_FAILED || s->v.status == ORD_CANCELLED)) {
			release_legs(sh, o, txn);
			continue;
		}
		if (!o || !s || !order_txn_of(o, txn, sizeof(txn)) ||
		    (s->v.status != ORD_PLACED && s->v.status != ORD_PAID) ||
		    parse_rfc3339_ms(o->created_at, strlen(o->created_at), &at) || wall - at < limit)
			continue;
		txn_ask(sh, txn, dest_decided);
	}
}
