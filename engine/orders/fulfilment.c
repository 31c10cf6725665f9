/*
 * fulfilment.c -- an order's legs after `reserved` (contract in
 * fulfilment.h; spec 3.1, 2.8, 6).
 *
 * Why the legs carry the state and the order follows: the spec's order
 * moves (fulfilled, in_transit, delivered) are statements about ALL its
 * legs or about the first of them, and each leg has its own fulfiller,
 * carrier and scans.  So every move here changes one leg and then sets the
 * order's status to what its legs imply (order_status_of_legs), in the same
 * transaction, with the leg's event -- no second place can disagree.
 *
 * Why a table of moves: pick, pack and ship differ only in which leg
 * states they start from, where they go and what they announce
 * (leg_moves[]); one handler applies any of them.  Pick and pack are
 * optional: a fulfiller that ships straight from `reserved` may.
 *
 * Why shipping a remote leg takes two steps: the hold is on the stock's
 * shard and one transaction cannot span two logs.  The leg becomes
 * `shipping` here first (durable: it is the intent), and only once that is
 * on disk does fulfil_poll ask the stock's shard to consume the hold
 * (idempotent there); its durable "consumed" makes the leg `fulfilled`.
 * A crash before the intent loses nothing (the hold is untouched and the
 * caller never heard yes); a crash after it leaves a `shipping` leg that
 * the next poll finishes -- never a leg that reads `reserved` with its
 * stock gone.  Cancel refuses a `shipping` leg like a shipped one.
 *
 * Scans: a carrier reports what happened to a parcel, late and out of
 * order; a scan is kept in the leg's tracking[] at its time (tracking.c)
 * and moves the leg only forward (picked_up -> in_transit -> delivered), so
 * an old scan arriving last never takes a delivered leg back.
 */
#include "engine/orders/fulfilment.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "engine/base/log.h"
#include "engine/cluster/shard_map.h"
#include "engine/edge/fields.h"
#include "engine/orders/compliance.h"
#include "engine/orders/documents.h"
#include "engine/orders/order.h"
#include "engine/orders/tracking.h"
#include "engine/stock/txn_part.h"
#include "net/client.h"
#include "net/ev.h"
#include "wal/errinj.h"
#include "wal/wal.h"

/* ---- the moves ---------------------------------------------------------------------------- */

struct leg_move {
	const char *name;
	uint8_t to;                 /* enum leg_status */
	uint8_t from_lo, from_hi;   /* the leg states it starts from (enum leg_status, by leg_rank) */
	const char *event;
};

static const struct leg_move leg_moves[] = {
	{"pick", LS_PICKED, LS_RESERVED, LS_RESERVED, "order.picked"},
	{"pack", LS_PACKED, LS_RESERVED, LS_PICKED, "order.packed"},
	{"ship", LS_FULFILLED, LS_RESERVED, LS_PACKED, "order.fulfilled"},
};
enum { MOVE_PICK, MOVE_PACK, MOVE_SHIP };

/* The order's status is one a leg may still move in. */
static int order_moving(int status)
{
	return status == ORD_RESERVED || status == ORD_FULFILLED || status == ORD_IN_TRANSIT;
}

/* The state after leg li becomes `to`: the legs and the status they imply. */
static struct order_state_v with_leg(const struct order_state_v *sv, unsigned li, int to)
{
	struct order_state_v v = *sv;
	v.leg_status[li] = (uint8_t)to;
	v.status = (uint8_t)order_status_of_legs(&v);
	return v;
}

/* Stage leg li's move to `to` (and the order's status) with `event`. */
static int stage_leg(struct shard *sh, const struct order *o, unsigned li, int to, const char *event)
{
	const struct order_state *s = order_state_get(sh, o->row.id, o->row.id_len);
	if (!s)
		return -1;
	struct order_state_v v = with_leg(&s->v, li, to);
	char extra[200];
	int n = snprintf(extra, sizeof(extra), "{\"leg_id\":\"%s\",\"leg_status\":\"%s\"", o->legs[li].leg_id,
			 leg_status_names[to]);
	if (to == LS_FULFILLED)
		snprintf(extra + n, sizeof(extra) - (size_t)n, ",\"order_fulfilled\":%s}",
			 v.status == ORD_FULFILLED || v.status == ORD_IN_TRANSIT ? "true" : "false");
	else if (to == LS_DELIVERED)
		snprintf(extra + n, sizeof(extra) - (size_t)n, ",\"order_delivered\":%s}",
			 v.status == ORD_DELIVERED ? "true" : "false");
	else
		snprintf(extra + n, sizeof(extra) - (size_t)n, "}");
	struct order_patch p = {.status = v.status, .leg_status = v.leg_status, .compensated = -1, .event = event,
				.event_extra = event ? extra : NULL};
	return order_stage(sh, o, &p);
}

/* ---- pick, pack, ship --------------------------------------------------------------------- */

/* The optional carrier and tracking_number of a ship body (none: fine). */
static int ship_body(struct api_ctx *c, char *carrier, char *number)
{
	carrier[0] = number[0] = 0;
	if (c->http->body_len == 0)
		return 0;
	const struct json_value *b = api_body(c);
	if (!b)
		return -1;
	static const char *const known[] = {"carrier", "tracking_number", NULL};
	fld_reject_unknown(c, b, known, NULL);
	fld_str(c, b, "carrier", "carrier", carrier, TRACK_REF_MAX);
	fld_str(c, b, "tracking_number", "tracking_number", number, TRACK_REF_MAX);
	if (c->n_errs) {
		api_validation_failed(c);
		return -1;
	}
	return 0;
}

/* Ship leg li: atomically with its hold when the hold is here, else as
 * `shipping` for fulfil_poll.  The HTTP status to answer, or 0 (answered). */
static int ship(struct api_ctx *c, const struct order *o, unsigned li, const char *carrier, const char *number)
{
	const struct order_leg *l = &o->legs[li];
	const struct hold *h = hold_get(c->sh, l->hold_id, strlen(l->hold_id));
	int remote = !h && order_txn_of(o, NULL, 0);
	char now[TRACK_TS_MAX];
	fmt_rfc3339_ms(now, wall_ms());
	txn_begin(c->sh);
	int moved = 0, rc = 0;
	if (!remote && (!h || (rc = hold_stage_consume(c->sh, l->hold_id, &moved)) != HOLD_OK)) {
		txn_abort(c->sh);
		log_error("msg=\"a reserved leg's hold cannot be consumed\" order=%s leg=%s hold_rc=%d", o->row.id,
			  l->leg_id, h ? rc : -1);
		api_error(c, 500, "commit_failed", "the leg's reservation could not be consumed");
		return 0;
	}
	if (stage_leg(c->sh, o, li, remote ? LS_SHIPPING : LS_FULFILLED, remote ? NULL : "order.fulfilled") ||
	    ((carrier[0] || number[0]) &&
	     leg_track_stage(c->sh, o->row.id, l->leg_id, carrier, number, NULL, now) != TRACK_OK) ||
	    !txn_commit(c->sh)) {
		txn_abort(c->sh);
		api_error(c, 500, "commit_failed", "the fulfilment could not be stored");
		return 0;
	}
	saga_crash_point(c->sh, "fulfil_crash_after_ship");
	return remote ? 202 : 200;
}

/* Any of leg_moves[] on the path's leg. */
static void leg_move(struct api_ctx *c, const struct leg_move *m)
{
	const struct order *o = order_visible(c);
	int li = o ? order_visible_leg(c, o) : -1;
	if (li < 0)
		return;
	if (!order_leg_fulfiller(c, &o->legs[li])) {
		api_error(c, 403, "not_leg_fulfiller", "only the leg's fulfiller or the platform moves a leg");
		return;
	}
	char carrier[TRACK_REF_MAX + 1], number[TRACK_REF_MAX + 1];
	if (m->to == LS_FULFILLED && ship_body(c, carrier, number))
		return;
	const struct order_state_v *sv = &order_state_get(c->sh, o->row.id, o->row.id_len)->v;
	int r = leg_rank(sv->leg_status[li]);
	if (!order_moving(sv->status) || r < leg_rank(m->from_lo) || r > leg_rank(m->from_hi)) {
		char d[200];
		snprintf(d, sizeof(d), "the order is %s and the leg %s: %s needs a leg that is %s%s%s",
			 order_status_names[sv->status], leg_status_names[sv->leg_status[li]], m->name,
			 leg_status_names[m->from_lo], m->from_lo == m->from_hi ? "" : " to ",
			 m->from_lo == m->from_hi ? "" : leg_status_names[m->from_hi]);
		order_conflict(c, order_moving(sv->status) ? "invalid_leg_state" : "invalid_order_state", d, o, li);
		return;
	}
	char id[ID_MAX_LEN];
	snprintf(id, sizeof(id), "%s", o->row.id);
	int status = 200;
	if (m->to == LS_FULFILLED) {
		if (!(status = ship(c, o, (unsigned)li, carrier, number)))
			return;
	} else {
		txn_begin(c->sh);
		if (stage_leg(c->sh, o, (unsigned)li, m->to, m->event) || !txn_commit(c->sh)) {
			txn_abort(c->sh);
			api_error(c, 500, "commit_failed", "the leg's move could not be stored");
			return;
		}
		saga_crash_point(c->sh, "fulfil_crash_after_move");
	}
	order_answer(c, status, order_get(c->sh, id, strlen(id)));
}

static void leg_pick(struct api_ctx *c) { leg_move(c, &leg_moves[MOVE_PICK]); }
static void leg_pack(struct api_ctx *c) { leg_move(c, &leg_moves[MOVE_PACK]); }
static void leg_ship(struct api_ctx *c) { leg_move(c, &leg_moves[MOVE_SHIP]); }

/* ---- carrier scans -------------------------------------------------------------------------- */

/* The leg state a scan type implies (or -1: none, an exception). */
static const int8_t scan_moves_to[SCAN_N_TYPE] = {
	[SCAN_PICKED_UP] = LS_PICKED_UP, [SCAN_IN_TRANSIT] = LS_IN_TRANSIT, [SCAN_OUT_FOR_DELIVERY] = LS_IN_TRANSIT,
	[SCAN_DELIVERED] = LS_DELIVERED, [SCAN_EXCEPTION] = -1,
};

/* A scan or reference id: 1..TRACK_REF_MAX of [A-Za-z0-9._:-]. */
static int ref_ok(const char *s)
{
	size_t n = strlen(s);
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
		      strchr("._:-", s[i])))
			return 0;
	return n > 0 && n <= TRACK_REF_MAX;
}

/* Read a scan from the body: 0, or -1 answered (400/415/422). */
static int scan_body(struct api_ctx *c, struct scan *s)
{
	memset(s, 0, sizeof(*s));
	const struct json_value *b = api_body(c);
	if (!b)
		return -1;
	static const char *const known[] = {"scan_id",	"type",	      "occurred_at", "carrier",
					    "tracking_number", "location", "received_by", NULL};
	fld_reject_unknown(c, b, known, NULL);
	int type = -1;
	char at[64] = "";
	if (fld_str(c, b, "scan_id", "scan_id", s->scan_id, TRACK_REF_MAX) == FLD_SET && !ref_ok(s->scan_id))
		api_field_error(c, "scan_id", "format", "1-%d of [A-Za-z0-9._:-]", TRACK_REF_MAX);
	if (fld_enum(c, b, "type", "type", scan_type_names, &type) == FLD_SET)
		s->type = (uint8_t)type;
	long long ms = 0;
	if (fld_str(c, b, "occurred_at", "occurred_at", at, sizeof(at) - 1) == FLD_SET &&
	    (parse_rfc3339_ms(at, strlen(at), &ms) || ms < 0))
		api_field_error(c, "occurred_at", "format", "an RFC 3339 time with its offset");
	else if (at[0] && (unsigned long long)ms > wall_ms() + SCAN_FUTURE_MAX_MS)
		api_field_error(c, "occurred_at", "range", "more than 15 minutes in the future");
	fld_str(c, b, "carrier", "carrier", s->carrier, TRACK_REF_MAX);
	fld_str(c, b, "tracking_number", "tracking_number", s->tracking_number, TRACK_REF_MAX);
	fld_str(c, b, "location", "location", s->location, TRACK_PLACE_MAX);
	fld_str(c, b, "received_by", "received_by", s->received_by, TRACK_PLACE_MAX);
	static const char *const required[] = {"scan_id", "type", "occurred_at", "carrier", "tracking_number", NULL};
	for (int i = 0; required[i]; i++)
		if (!json_get(b, required[i]))
			api_field_error(c, required[i], "required", "a scan names %s", required[i]);
	if (c->n_errs) {
		api_validation_failed(c);
		return -1;
	}
	fmt_rfc3339_ms(s->occurred_at, (unsigned long long)ms);
	return 0;
}

/* Stage the leg's move for scan s (none when it moves nothing) with its
 * events: order.picked_up when the leg first leaves `fulfilled`,
 * order.delivered when it is delivered.  0 or -1. */
static int stage_scan_move(struct shard *sh, const struct order *o, unsigned li, const struct scan *s)
{
	const struct order_state_v *sv = &order_state_get(sh, o->row.id, o->row.id_len)->v;
	int from = sv->leg_status[li], to = scan_moves_to[s->type];
	if (to < 0 || leg_rank(to) <= leg_rank(from))
		return 0;
	int picked_up = leg_rank(from) < leg_rank(LS_PICKED_UP);
	if (to == LS_DELIVERED) {
		/* the delivery register's records and the originator's final
		 * invoice with the delivery itself */
		if (compliance_stage_leg(sh, o, li, s->occurred_at) || documents_stage_delivered(sh, o, li, s->occurred_at) ||
		    stage_leg(sh, o, li, to, "order.delivered"))
			return -1;
		if (!picked_up)
			return 0;
		char extra[160];
		snprintf(extra, sizeof(extra), "{\"leg_id\":\"%s\",\"leg_status\":\"delivered\"}", o->legs[li].leg_id);
		struct order_state_v v = with_leg(sv, li, to);
		return order_stage_event(sh, o, v.status, "order.picked_up", extra);
	}
	return stage_leg(sh, o, li, to, picked_up ? "order.picked_up" : NULL);
}

/* POST /v1/orders/{id}/fulfillments/{leg_id}/tracking: a carrier scan. */
static void leg_scan(struct api_ctx *c)
{
	const struct order *o = order_visible(c);
	int li = o ? order_visible_leg(c, o) : -1;
	if (li < 0)
		return;
	if (!order_leg_fulfiller(c, &o->legs[li])) {
		api_error(c, 403, "not_leg_fulfiller", "only the leg's fulfiller (or its carrier through the platform) "
						       "reports a scan");
		return;
	}
	struct scan s;
	if (scan_body(c, &s))
		return;
	const struct order_state_v *sv = &order_state_get(c->sh, o->row.id, o->row.id_len)->v;
	int r = leg_rank(sv->leg_status[li]);
	if (r < leg_rank(LS_FULFILLED) || (sv->status != ORD_DELIVERED && !order_moving(sv->status))) {
		char d[160];
		snprintf(d, sizeof(d), "the order is %s and the leg %s: a carrier scans a leg once it has shipped",
			 order_status_names[sv->status], leg_status_names[sv->leg_status[li]]);
		order_conflict(c, r < leg_rank(LS_FULFILLED) && order_moving(sv->status) ? "invalid_leg_state"
											: "invalid_order_state",
			       d, o, li);
		return;
	}
	char id[ID_MAX_LEN], now[TRACK_TS_MAX];
	snprintf(id, sizeof(id), "%s", o->row.id);
	fmt_rfc3339_ms(now, wall_ms());
	txn_begin(c->sh);
	int rc = leg_track_stage(c->sh, id, o->legs[li].leg_id, NULL, NULL, &s, now);
	if (rc == TRACK_OK && (stage_scan_move(c->sh, o, (unsigned)li, &s) || !txn_commit(c->sh)))
		rc = TRACK_STORE;
	if (rc != TRACK_OK)
		txn_abort(c->sh);
	static const struct { int rc, http; const char *code, *detail; } refusals[] = {
		{TRACK_CONFLICT, 409, "scan_conflict", "this scan_id was reported with other values"},
		{TRACK_FULL, 409, "tracking_full", "the leg keeps at most 64 scans"},
		{TRACK_STORE, 500, "commit_failed", "the scan could not be stored"},
	};
	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++)
		if (refusals[i].rc == rc) {
			api_error(c, refusals[i].http, refusals[i].code, refusals[i].detail);
			return;
		}
	saga_crash_point(c->sh, "fulfil_crash_after_scan");
	order_answer(c, rc == TRACK_DUP ? 200 : 201, order_get(c->sh, id, strlen(id)));
}

const struct route fulfilment_routes[] = {
	{HTTP_M_POST, "/v1/orders/{id}/fulfillments/{leg_id}/fulfill", leg_ship, SC_WRITE_INVENTORY,
	 ACT_WRITE_INVENTORY, "Ship a fulfilment leg (the same as /ship; kept for existing integrations)", 0},
	{HTTP_M_POST, "/v1/orders/{id}/fulfillments/{leg_id}/pick", leg_pick, SC_WRITE_INVENTORY, ACT_WRITE_INVENTORY,
	 "A leg's items were picked (its fulfiller)", 0},
	{HTTP_M_POST, "/v1/orders/{id}/fulfillments/{leg_id}/pack", leg_pack, SC_WRITE_INVENTORY, ACT_WRITE_INVENTORY,
	 "A leg's parcel was packed (its fulfiller)", 0},
	{HTTP_M_POST, "/v1/orders/{id}/fulfillments/{leg_id}/ship", leg_ship, SC_WRITE_INVENTORY, ACT_WRITE_INVENTORY,
	 "A leg was handed to its carrier: its reservation leaves the stock", 0},
	{HTTP_M_POST, "/v1/orders/{id}/fulfillments/{leg_id}/tracking", leg_scan, SC_WRITE_INVENTORY,
	 ACT_WRITE_INVENTORY, "A carrier scan of a leg (picked up, in transit, delivered)", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};

/* ---- legs in flight between shards ---------------------------------------------------------- */

struct consume_call {
	struct shard *sh;
	char order[ID_MAX_LEN];
	unsigned leg;
	int busy;
};

static struct {
	struct consume_call calls[FULFIL_CALLS_MAX];
	uint64_t next_ms;
} fp;

/* The stock's shard answered: mark the leg shipped (once). */
static void on_consumed(void *arg, const struct hc_response *r, const char *err)
{
	struct consume_call *k = arg;
	k->busy = 0;
	if (!r || r->status != 200) {
		log_warn("msg=\"a shipped leg's hold was not consumed yet; asked again\" order=%s leg=%u status=%d "
			 "error=\"%s\"", k->order, k->leg + 1, r ? r->status : 0, err ? err : "-");
		fp.next_ms = ev_clock_us() / 1000 + FULFIL_RETRY_MS;
		return;
	}
	struct shard *sh = k->sh;
	const struct order *o = order_get(sh, k->order, strlen(k->order));
	const struct order_state *s = o ? order_state_get(sh, k->order, strlen(k->order)) : NULL;
	if (!s || k->leg >= o->n_legs || s->v.leg_status[k->leg] != LS_SHIPPING)
		return; /* done by an earlier answer */
	if (ERRINJ("fulfil_crash_before_shipped")) {
		log_warn("msg=\"fault injection: crash\" point=fulfil_crash_before_shipped");
		_exit(137);
	}
	txn_begin(sh);
	if (stage_leg(sh, o, k->leg, LS_FULFILLED, "order.fulfilled") || !txn_commit(sh)) {
		txn_abort(sh);
		log_error("msg=\"a consumed leg could not be marked shipped; retried\" order=%s leg=%u", k->order,
			  k->leg + 1);
	}
}

/* Is a call for (order, leg) in flight?  Else a free slot in *free_slot. */
static int in_flight(const char *order, unsigned leg, struct consume_call **free_slot)
{
	*free_slot = NULL;
	for (int i = 0; i < FULFIL_CALLS_MAX; i++) {
		struct consume_call *k = &fp.calls[i];
		if (k->busy && k->leg == leg && !strcmp(k->order, order))
			return 1;
		if (!k->busy && !*free_slot)
			*free_slot = k;
	}
	return 0;
}

/* Ask the stock's shard to consume leg li's hold. */
static void send_consume(struct shard *sh, const struct order *o, unsigned li, const char *txn)
{
	struct consume_call *k;
	if (in_flight(o->row.id, li, &k) || !k)
		return;
	const char *lv = o->legs[li].level_id;
	char cc[3] = "";
	int owner = strlen(lv) > 7 ? (cc[0] = lv[4], cc[1] = lv[5], smap_owner(sh->smap, cc)) : -1;
	char body[INV_TXN_ID_MAX + INV_HOLD_ID_MAX + 40];
	snprintf(body, sizeof(body), "{\"txn\":\"%s\",\"hold_id\":\"%s\"}", txn, o->legs[li].hold_id);
	*k = (struct consume_call){.sh = sh, .leg = li, .busy = 1};
	memcpy(k->order, o->row.id, o->row.id_len + 1);
	if (owner < 0 || txn_shard_call(sh, (uint32_t)owner, "/internal/txn/consume", body, on_consumed, k)) {
		k->busy = 0;
		fp.next_ms = ev_clock_us() / 1000 + FULFIL_RETRY_MS;
	}
}

void fulfil_poll(struct shard *sh)
{
	if (!order_legwork_count(sh) || !sh->smap)
		return;
	uint64_t now = ev_clock_us() / 1000;
	if (now < fp.next_ms)
		return;
	uint64_t durable = sh->wal ? wal_durable_lsn(sh->wal) : UINT64_MAX;
	char after[ID_MAX_LEN] = "", id[ID_MAX_LEN], txn[INV_TXN_ID_MAX + 1];
	while (order_legwork_next(sh, after, id)) {
		memcpy(after, id, sizeof(after));
		const struct order *o = order_get(sh, id, strlen(id));
		const struct order_state *s = o ? order_state_get(sh, id, strlen(id)) : NULL;
		/* the intent first on disk: a consumption must never outlive it */
		if (!s || s->row.lsn > durable || !order_txn_of(o, txn, sizeof(txn)))
			continue;
		for (unsigned i = 0; i < o->n_legs; i++)
			if (s->v.leg_status[i] == LS_SHIPPING)
				send_consume(sh, o, i, txn);
	}
}
