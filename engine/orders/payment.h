/*
 * payment.h -- the payment provider interface the order saga charges
 * through (DESIGN.md 5 step 2), and the built-in sandbox provider.  The
 * why is in payment.c.
 *
 * Contract shared by every provider:
 *  - Charges are idempotent BY ORDER ID: charging an order that already has
 *    a captured charge returns that charge (PAY_CAPTURED, same charge id)
 *    and moves no money a second time.
 *  - pay_refund() is idempotent and total: it refunds a captured charge,
 *    records a void when there is none (so a charge arriving late for an
 *    order already compensated is refused, see below), and answers PAY_OK
 *    again on every later call.  The saga's compensation and restart
 *    recovery call it without knowing whether the charge ever happened.
 *  - A charge for an order id whose payment was refunded or voided is
 *    PAY_DECLINED with code "order_compensated": an order is charged at
 *    most once in its life.
 *  - Both are called from the event-loop thread OUTSIDE any open
 *    transaction (the sandbox commits its own ledger rows).
 */
#ifndef WM_PAYMENT_H
#define WM_PAYMENT_H

#include <stdint.h>

#include "engine/edge/api.h"
#include "engine/storage/id.h"
#include "engine/storage/shard.h"

#define PAY_METHOD_MAX 32 /* bytes of a payment method name */

enum pay_outcome {
	PAY_OK = 0,                /* refund/void done (or already done) */
	PAY_CAPTURED,              /* charge: money captured */
	PAY_DECLINED,              /* charge: refused, nothing captured */
	PAY_FAILED_AFTER_CHARGE,   /* charge: captured, then the provider reported an error */
	PAY_TIMEOUT,               /* charge: no answer in time -- outcome unknown to the caller */
	PAY_ERROR,                 /* the provider/ledger could not act (storage, bad argument) */
};
extern const char *const pay_outcome_names[]; /* "ok", "captured", "declined", ... */

/* Sandbox payment methods (the request's payment.method; default "sandbox_ok"):
 *   sandbox_ok                 captures
 *   sandbox_decline            declines (code "card_declined"), nothing captured
 *   sandbox_fail_after_charge  captures, then answers PAY_FAILED_AFTER_CHARGE
 *   sandbox_timeout            captures, then answers PAY_TIMEOUT (the worst case
 *                              of a time-out: the money moved, we were not told) */
enum pay_method { PM_SANDBOX_OK, PM_SANDBOX_DECLINE, PM_SANDBOX_FAIL_AFTER_CHARGE, PM_SANDBOX_TIMEOUT, PAY_N_METHOD };
extern const char *const pay_method_names[]; /* NULL-terminated */

struct pay_request {
	const char *order_id;      /* the idempotency key of the charge */
	int64_t amount_minor;      /* > 0, in currency's minor unit */
	char currency[4];          /* ISO 4217 */
	uint8_t method;            /* enum pay_method */
};

struct pay_result {
	enum pay_outcome outcome;
	char charge_id[ID_MAX_LEN]; /* "pay_..." when a ledger row exists, else "" */
	char code[48];              /* machine reason for DECLINED/FAILED/TIMEOUT/ERROR, else "" */
};

/* Charge the consumer for an order (see the contract above). */
void pay_charge(struct shard *sh, const struct pay_request *rq, struct pay_result *out);
/* Refund the order's captured charge, or void the order's payment when
 * nothing was captured.  out->outcome is PAY_OK or PAY_ERROR. */
void pay_refund(struct shard *sh, const char *order_id, struct pay_result *out);

/* Refund part of the order's captured charge: amount_minor (1 .. what is
 * not refunded yet), idempotent BY refund_id (a return's id: the same id
 * again is PAY_OK and moves nothing).  The row stays "captured" until the
 * whole charge is refunded, then reads "refunded".  PAY_OK, or PAY_ERROR
 * with code not_captured, already_refunded, exceeds_charge,
 * too_many_refunds (16 per charge), ledger_unavailable, invalid_argument.
 * Outside any transaction, like pay_refund. */
void pay_refund_part(struct shard *sh, const char *order_id, const char *refund_id, int64_t amount_minor,
		     struct pay_result *out);
/* What was refunded of the order's charge so far (minor units; 0 without one). */
int64_t pay_refunded_of(struct shard *sh, const char *order_id);

/*
 * Payouts (spec 3.2): the provider pays a partner its share of an order.
 * Idempotent BY payout_id ("<order id>.S<n>", settlement.c): paying an id
 * that is paid is PAY_OK and moves nothing.  A durable ledger row per
 * payout (REC_T_PAYOUT) with event settlement.released in the same
 * transaction.  pay_clawback sets the TOTAL taken back from a paid payout
 * (a refund after it was paid), so it too may be repeated: a total at or
 * below the row's changes nothing; the row reads "clawed_back".
 */
struct payout_request {
	const char *payout_id, *order_id, *partner_id, *role;
	int64_t amount_minor;       /* >= 0 (0: nothing is owed any more; recorded, no money moves) */
	char currency[4];
};
void pay_payout(struct shard *sh, const struct payout_request *rq, struct pay_result *out);
void pay_clawback(struct shard *sh, const char *payout_id, int64_t total_minor, struct pay_result *out);
/* A payout's ledger values: 1 found (paid amount, clawed back), 0 none. */
int pay_payout_of(struct shard *sh, const char *payout_id, int64_t *paid, int64_t *clawed, char *paid_at,
		  size_t paid_at_size);
extern const struct table_ops payout_ledger_table_ops;

/* The ledger state of an order's payment, for reads and invariants. */
enum pay_state { PS_NONE = 0, PS_CAPTURED, PS_REFUNDED, PS_VOIDED, PAY_N_STATE };
extern const char *const pay_state_names[]; /* "none", "captured", "refunded", "voided" */
enum pay_state pay_state_of(struct shard *sh, const char *order_id);

extern const struct table_ops payment_table_ops;
/* GET /v1/admin/payments (operator; ?state= filter, cursor-paginated) and
 * GET /v1/admin/payments/{order_id}: the sandbox ledger. */
extern const struct route payment_routes[];

#endif
