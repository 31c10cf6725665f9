/*
 * saga.c -- the flash buy-sell saga of an order (spec 1.2, 3.1; DESIGN.md 5).
 *
 * An order is two trades that must both happen or neither: the platform
 * buys the wine from each source's originator at its p2b and sells it to
 * the consumer.  The spec's saga reserve_source_stock -> charge_consumer ->
 * commit_buy -> commit_sell is run here as DESIGN.md 5's two-phase commit,
 * one step per transaction, each step a function with its compensation:
 *
 *   step                      participant (today: this shard)   compensation
 *   step_prepare, per leg     origin: hold PREPARED             hold_release
 *   step_charge               payment provider -> paid          pay_refund (void if nothing moved)
 *   step_commit_sell          destination: confirmed            -- (the decision is final)
 *   step_commit_routing       destination: sourced              --
 *   step_commit_buy, per leg  origin: hold COMMITTED            hold_release (cancel)
 *                             (stock.reserved) -> reserved
 *
 * `confirmed` (the sale to the consumer committed) is the coordinator's
 * COMMIT record: before it, any failure aborts (presumed abort: no
 * decision means abort); after it, the steps only go forward.  The spec
 * lists commit_buy before commit_sell; DESIGN.md 5 logs the decision
 * first and lets the participants apply it, and the spec's own event order
 * (order.confirmed before stock.reserved) agrees, so that is the order.  The spec's event order (order.placed, order.paid,
 * order.confirmed, order.sourced, stock.reserved) is the order the
 * transactions are logged in, so a crash anywhere leaves a prefix of it.
 *
 * The router issue moves each participant's step to the shard that owns
 * it: prepare/commit-buy/release become messages to origin shards, the
 * rest stays on the destination shard.  Nothing here assumes that the
 * holds live beside the order except the function calls themselves.
 *
 * Failure: the failure record (failed, failure.code, order.failed) is
 * logged FIRST, then each completed step is compensated in its own
 * transaction (several sources compensate independently: one failed
 * release does not stop the others), then `saga.compensated` is set.  A
 * crash anywhere in between leaves an order that is not at rest, and
 * saga_recover() finishes the job on restart.  Every compensation is
 * idempotent (a released hold released again is a no-op; a refund is
 * idempotent by order id and turns into a void when nothing was charged,
 * so a charge arriving late is refused by the provider).
 *
 * Restart (saga_recover, before the shard serves): every order not at
 * rest is driven by the same function with recovering = 1:
 *   placed                 -> aborted (interrupted): holds released, any charge refunded
 *   paid                   -> driven forward (the consumer paid, the holds are prepared)
 *   confirmed, sourced     -> driven forward (the decision is logged)
 *   failed/cancelled, not compensated -> compensation finished
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "wal/errinj.h"
#include "engine/base/log.h"
#include "engine/orders/order.h"
#include "engine/orders/payment.h"

#define SAGA_MAX_STEPS 16 /* driver iterations per call: the longest path is 7 */

void saga_crash_point(struct shard *sh, const char *name)
{
	(void)name;
	if (!ERRINJ(name))
		return;
	txn_flush_held(sh); /* a held commit of this request is part of what the crash keeps */
	if (sh->wal)
		wal_flush(sh->wal);
	log_warn("msg=\"fault injection: crash\" point=%s lsn=%llu", name, (unsigned long long)sh->lsn);
	_exit(137);
}

/* Test builds: stop the saga at a step, leaving the order there (the cancel
 * tests need orders resting in placed, paid and sourced). */
static int pause_point(const char *name, int recovering)
{
	(void)name; /* unused in release builds, where ERRINJ() is 0 */
	return !recovering && ERRINJ(name);
}

static const struct order *get(struct shard *sh, const char *id) { return order_get(sh, id, strlen(id)); }

/* The order's current values (its state row), or NULL (no such order). */
static const struct order_state_v *cur(struct shard *sh, const char *id)
{
	const struct order_state *s = order_state_get(sh, id, strlen(id));
	return s ? &s->v : NULL;
}

/* The order's current status, or -1 (no such order). */
static int status_of(struct shard *sh, const char *id)
{
	const struct order_state_v *v = cur(sh, id);
	return v ? v->status : -1;
}

/* Stage a patch of the order in a transaction of its own.  0 or -1. */
static int commit_patch(struct shard *sh, const char *id, const struct order_patch *p)
{
	const struct order *o = get(sh, id);
	txn_begin(sh);
	if (!o || order_stage(sh, o, p) || !txn_commit(sh)) {
		txn_abort(sh);
		log_error("msg=\"order step could not be stored\" order=%s event=%s", id, p->event ? p->event : "-");
		return -1;
	}
	return 0;
}

static void legs_all(const struct order *o, uint8_t *st, uint8_t status)
{
	for (unsigned i = 0; i < o->n_legs; i++)
		st[i] = status;
}

/* ---- the steps ------------------------------------------------------------------------ */

/* Prepare: a hold per leg.  OF_NONE, or why the saga must abort. */
static int step_prepare(struct shard *sh, const char *id)
{
	const struct order *o = get(sh, id);
	for (unsigned i = 0; o && i < o->n_legs; i++) {
		char hold[INV_HOLD_ID_MAX + 1], level[ID_MAX_LEN];
		int64_t qty = o->legs[i].qty;
		buf_strcpy(hold, sizeof(hold), o->legs[i].hold_id);
		buf_strcpy(level, sizeof(level), o->legs[i].level_id);
		int rc = hold_place(sh, level, qty, hold);
		o = get(sh, id); /* the hold's transaction replaced rows; re-read */
		if (rc == HOLD_OK)
			continue;
		log_info("msg=\"order hold refused\" order=%s hold=%s level=%s qty=%lld rc=%d", id, hold, level,
			 (long long)qty, rc);
		return rc == HOLD_E_STORE ? OF_STORE : OF_INSUFFICIENT_STOCK;
	}
	return o ? OF_NONE : OF_STORE;
}

/* Charge: OF_NONE with the order paid, or why the saga must abort. */
static int step_charge(struct shard *sh, const char *id)
{
	const struct order *o = get(sh, id);
	struct pay_request rq = {.order_id = id, .amount_minor = o->total_minor, .method = o->pay_method};
	memcpy(rq.currency, o->currency, sizeof(rq.currency));
	struct pay_result r;
	pay_charge(sh, &rq, &r);
	saga_crash_point(sh, "order_crash_after_charge");
	switch (r.outcome) {
	case PAY_CAPTURED: {
		o = get(sh, id);
		uint8_t st[ORDER_MAX_LEGS];
		legs_all(o, st, LS_HELD);
		struct order_patch p = {.status = ORD_PAID, .leg_status = st, .compensated = -1, .pay_state = "captured",
					.charge_id = r.charge_id, .event = "order.paid"};
		return commit_patch(sh, id, &p) ? OF_STORE : OF_NONE;
	}
	case PAY_DECLINED:
		return OF_PAYMENT_DECLINED;
	case PAY_FAILED_AFTER_CHARGE:
		return OF_PAYMENT_FAILED;
	case PAY_TIMEOUT:
		return OF_PAYMENT_TIMEOUT;
	default:
		return OF_PAYMENT_UNAVAILABLE;
	}
}

/* Commit buy, per leg: the prepared hold becomes a reservation (stock.reserved). */
static int step_commit_buy(struct shard *sh, const char *id)
{
	const struct order *o = get(sh, id);
	for (unsigned i = 0; o && i < o->n_legs; i++) {
		char hold[INV_HOLD_ID_MAX + 1];
		buf_strcpy(hold, sizeof(hold), o->legs[i].hold_id);
		int rc = hold_commit(sh, hold);
		o = get(sh, id);
		if (rc != HOLD_OK) {
			/* after the decision there is no going back: leave it for recovery */
			log_error("msg=\"order buy leg could not be committed\" order=%s hold=%s rc=%d", id, hold, rc);
			return -1;
		}
	}
	return o ? 0 : -1;
}

/* Commit sell: the decision record (confirmed, order.confirmed). */
static int step_commit_sell(struct shard *sh, const char *id)
{
	struct order_patch p = {.status = ORD_CONFIRMED, .compensated = -1, .event = "order.confirmed"};
	return commit_patch(sh, id, &p);
}

/* Routing committed: the sourcing written at capture is now binding (sourced, order.sourced). */
static int step_commit_routing(struct shard *sh, const char *id)
{
	struct order_patch p = {.status = ORD_SOURCED, .compensated = -1, .event = "order.sourced"};
	return commit_patch(sh, id, &p);
}

/* After every buy leg: the order rests reserved. */
static int step_rest(struct shard *sh, const char *id)
{
	const struct order *o = get(sh, id);
	uint8_t st[ORDER_MAX_LEGS];
	legs_all(o, st, LS_RESERVED);
	struct order_patch p = {.status = ORD_RESERVED, .leg_status = st, .compensated = -1};
	return commit_patch(sh, id, &p);
}

/* The failure record, logged before any compensation. */
static int record_failure(struct shard *sh, const char *id, int why, const char *detail)
{
	struct order_patch p = {.status = ORD_FAILED, .failure = why, .failure_detail = detail, .compensated = 0,
				.event = "order.failed"};
	log_info("msg=\"order failed\" order=%s reason=%s", id, order_failure_codes[why]);
	return commit_patch(sh, id, &p);
}

static int is_txn(struct shard *sh, const char *id);

/* Compensation of every completed step, each independently.  0 when all
 * are done.  A cross-shard order's holds live on its participants: here
 * only the refund; its destination marks it compensated once every
 * participant released (saga_txn_released, order_txn.c). */
static int compensate(struct shard *sh, const char *id)
{
	const struct order *o = get(sh, id);
	int failed = 0;
	if (is_txn(sh, id)) {
		struct pay_result r;
		pay_refund(sh, id, &r);
		if (r.outcome != PAY_OK) {
			log_error("msg=\"order payment could not be refunded\" order=%s code=%s", id, r.code);
			return -1;
		}
		enum pay_state ps = pay_state_of(sh, id);
		const struct order_state_v *sv = cur(sh, id);
		if (sv && strcmp(sv->pay_state, pay_state_names[ps])) {
			struct order_patch p = {.status = -1, .compensated = -1, .pay_state = pay_state_names[ps]};
			commit_patch(sh, id, &p);
		}
		return -1; /* not compensated yet: the participants' releases are to come */
	}
	for (unsigned i = 0; o && i < o->n_legs; i++) {
		char hold[INV_HOLD_ID_MAX + 1];
		buf_strcpy(hold, sizeof(hold), o->legs[i].hold_id);
		int rc = hold_release(sh, hold);
		o = get(sh, id);
		if (rc != HOLD_OK && rc != HOLD_E_NOT_FOUND) {
			log_error("msg=\"order hold could not be released\" order=%s hold=%s rc=%d", id, hold, rc);
			failed = 1;
		}
	}
	struct pay_result r;
	pay_refund(sh, id, &r);
	if (r.outcome != PAY_OK) {
		log_error("msg=\"order payment could not be refunded\" order=%s code=%s", id, r.code);
		failed = 1;
	}
	o = get(sh, id);
	if (failed || !o)
		return -1;
	uint8_t st[ORDER_MAX_LEGS];
	legs_all(o, st, LS_RELEASED);
	enum pay_state ps = pay_state_of(sh, id);
	struct order_patch p = {.status = -1, .leg_status = st, .compensated = 1, .pay_state = pay_state_names[ps]};
	return commit_patch(sh, id, &p);
}

static const char *const failure_details[] = {
	[OF_INSUFFICIENT_STOCK] = "a source could not hold the stock the order needs",
	[OF_PAYMENT_DECLINED] = "the payment provider declined the charge",
	[OF_PAYMENT_FAILED] = "the payment provider failed after charging; the charge was refunded",
	[OF_PAYMENT_TIMEOUT] = "the payment provider did not answer in time; any charge was refunded",
	[OF_PAYMENT_UNAVAILABLE] = "the payment provider could not be used",
	[OF_INTERRUPTED] = "the shard restarted before the order was paid; it was rolled back",
	[OF_STORE] = "a step could not be stored",
};

/* ---- cross-shard orders: the destination's steps (order.h) ----------------------------- */

int saga_txn_released(struct shard *sh, const char *id)
{
	const struct order *o = get(sh, id);
	int st = status_of(sh, id);
	if (!o || (st != ORD_FAILED && st != ORD_CANCELLED))
		return -1;
	if (cur(sh, id)->compensated)
		return 0;
	struct pay_result r;
	pay_refund(sh, id, &r);
	if (r.outcome != PAY_OK) {
		log_error("msg=\"order payment could not be refunded\" order=%s code=%s", id, r.code);
		return -1;
	}
	o = get(sh, id);
	uint8_t lst[ORDER_MAX_LEGS];
	legs_all(o, lst, LS_RELEASED);
	enum pay_state ps = pay_state_of(sh, id);
	struct order_patch p = {.status = -1, .leg_status = lst, .compensated = 1, .pay_state = pay_state_names[ps]};
	return commit_patch(sh, id, &p);
}

static int is_txn(struct shard *sh, const char *id)
{
	const struct order *o = get(sh, id);
	return o && order_txn_of(o, NULL, 0);
}

int saga_txn_charge(struct shard *sh, const char *id)
{
	int st = status_of(sh, id);
	if (st == ORD_PAID || (st >= ORD_CONFIRMED && st != ORD_FAILED && st != ORD_CANCELLED))
		return OF_NONE; /* charged already (a retried message) */
	if (st != ORD_PLACED)
		return st == ORD_FAILED ? (int)cur(sh, id)->failure : OF_STORE;
	int why = step_charge(sh, id);
	saga_crash_point(sh, "txn_dest_crash_after_charge");
	if (why != OF_NONE && !record_failure(sh, id, why, failure_details[why]))
		compensate(sh, id); /* the refund; the participants' releases follow (order_txn.c) */
	return why;
}

int saga_txn_commit(struct shard *sh, const char *id)
{
	for (int step = 0; step < 2; step++) {
		int st = status_of(sh, id);
		if (st == ORD_PAID && step_commit_sell(sh, id))
			return -1;
		if (st == ORD_PAID)
			saga_crash_point(sh, "txn_dest_crash_after_confirmed");
		else if (st == ORD_CONFIRMED && step_commit_routing(sh, id))
			return -1;
		else if (st == ORD_SOURCED || st == ORD_RESERVED)
			return 0;
		else if (st != ORD_CONFIRMED)
			return -1; /* failed or placed: the decision cannot be commit */
	}
	int st = status_of(sh, id);
	return st == ORD_SOURCED || st == ORD_RESERVED ? 0 : -1;
}

int saga_txn_rest(struct shard *sh, const char *id)
{
	int st = status_of(sh, id);
	if (st == ORD_RESERVED)
		return 0;
	if (st != ORD_SOURCED)
		return -1;
	return step_rest(sh, id);
}

int saga_txn_abort(struct shard *sh, const char *id, int why)
{
	int st = status_of(sh, id);
	if (st == ORD_FAILED || st == ORD_CANCELLED) {
		if (!cur(sh, id)->compensated)
			compensate(sh, id); /* the refund; the releases follow (order_txn.c) */
		return 0;
	}
	if (st != ORD_PLACED && st != ORD_PAID)
		return -1; /* after the decision there is no abort */
	if (why <= OF_NONE || why >= ORDER_N_FAILURE)
		why = OF_INSUFFICIENT_STOCK;
	if (record_failure(sh, id, why, failure_details[why]))
		return -1;
	compensate(sh, id); /* the refund; the participants' releases follow */
	return 0;
}

/* ---- the driver ------------------------------------------------------------------------ */

int saga_drive(struct shard *sh, const char *order_id, int recovering)
{
	char id[ID_MAX_LEN];
	buf_strcpy(id, sizeof(id), order_id);
	const int txn = is_txn(sh, id); /* its coordinator decides (order.h) */
	for (int step = 0; step < SAGA_MAX_STEPS; step++) {
		const struct order_state_v *sv = cur(sh, id);
		if (!sv)
			return -1;
		int why = OF_NONE;
		const int status = sv->status, compensated = sv->compensated; /* sv is replaced by each step */
		switch (status) {
		case ORD_PLACED:
			if (recovering) {
				why = OF_INTERRUPTED;
				break;
			}
			if (txn)
				return status;
			if ((why = step_prepare(sh, id)) != OF_NONE)
				break;
			saga_crash_point(sh, "order_crash_after_prepare");
			if (pause_point("order_pause_after_prepare", recovering))
				return ORD_PLACED;
			if ((why = step_charge(sh, id)) != OF_NONE)
				break;
			saga_crash_point(sh, "order_crash_after_paid");
			if (pause_point("order_pause_after_paid", recovering))
				return ORD_PAID;
			continue;
		case ORD_PAID:
			if (txn)
				return status; /* decided by the coordinator, which asks or re-drives */
			if (step_commit_sell(sh, id))
				return status;
			saga_crash_point(sh, "order_crash_after_confirmed");
			continue;
		case ORD_CONFIRMED:
			if (step_commit_routing(sh, id))
				return status;
			saga_crash_point(sh, "order_crash_after_sourced");
			if (pause_point("order_pause_after_sourced", recovering))
				return ORD_SOURCED;
			continue;
		case ORD_SOURCED:
			/* a cross-shard order's buy legs are committed by their
			 * participants on the coordinator's COMMIT */
			if (!txn && step_commit_buy(sh, id))
				return ORD_SOURCED;
			saga_crash_point(sh, "order_crash_after_buy");
			if (step_rest(sh, id))
				return ORD_SOURCED;
			continue;
		case ORD_FAILED:
		case ORD_CANCELLED:
			if (!compensated && !compensate(sh, id))
				continue;
			return status_of(sh, id); /* a cross-shard order: released by order_txn.c */
		default:
			return status;
		}
		/* abort: the failure record first, then compensation */
		if (record_failure(sh, id, why, failure_details[why]))
			return status_of(sh, id);
		saga_crash_point(sh, "order_crash_after_failed");
	}
	return status_of(sh, id);
}

unsigned saga_recover(struct shard *sh)
{
	unsigned n = 0;
	char after[ID_MAX_LEN] = "", id[ID_MAX_LEN];
	/* ids only grow and driving an order only takes it out of the pending
	 * index, so walking "the next pending id after the last one" visits
	 * each once, stuck ones included */
	while (order_pending_next(sh, after, id)) {
		int from = status_of(sh, id);
		int to = saga_drive(sh, id, 1);
		log_warn("msg=\"order resumed after restart\" order=%s from=%s to=%s", id,
			 from >= 0 ? order_status_names[from] : "?", to >= 0 ? order_status_names[to] : "?");
		memcpy(after, id, sizeof(after));
		n++;
	}
	return n;
}
