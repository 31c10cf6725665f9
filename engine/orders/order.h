/*
 * order.h -- orders (spec 2.8, 3.1, 4.1): the order resource, its state
 * machine, and the flash buy-sell saga that creates it (DESIGN.md 5).
 *
 *   engine/orders/order.c        the resource: the body table, capture, reads,
 *                         cancel, fulfil, order_stage
 *   engine/orders/order_state.c  the mutable half: the state table, its document,
 *                         and the full order document assembled from both
 *   engine/orders/saga.c         the saga steps, their compensations, the driver
 *                         that runs them for a new order and resumes them
 *                         on restart
 *
 * An order is two rows under the same id: its BODY (REC_T_ORDER, struct
 * order: everything capture decided, written once) and its STATE
 * (REC_T_ORDER_STATE, struct order_state: status, leg statuses, payment
 * state, failure, saga, updated_at; replaced by every saga step).  An
 * order exists when both rows do and agree on the number of legs;
 * order_get() and order_state_get() answer NULL otherwise.
 */
#ifndef WM_ORDER_H
#define WM_ORDER_H

#include <stdint.h>

#include "engine/edge/api.h"
#include "engine/storage/id.h"
#include "engine/edge/idem.h"
#include "engine/stock/inventory.h"
#include "engine/pricing/quote.h"
#include "engine/storage/table.h"
#include "net/buf.h"
#include "net/jsonw.h"

#define ORDER_MAX_LEGS 32           /* fulfilment legs (source x location) per order */
#define ORDER_RETURNS_MAX 8         /* returns and refunds of one order ("<order id>.R1" .. ".R8", returns.c) */
#define ORDER_LEVELS_PER_SOURCE QUOTE_LEVELS_PER_SOURCE /* locations one source may be split over (4) */
#define ORDER_TEXT_MAX 200          /* consumer name, address lines, city */
#define ORDER_EMAIL_MAX 254
#define ORDER_REF_MAX 64            /* consumer_id given by the seller */
#define ORDER_TS_MAX 32             /* an RFC 3339 time with milliseconds, NUL */
#define ORDER_DETAIL_MAX 255        /* failure.detail bytes */
#define ORDER_PAY_STATE_MAX 24      /* payment.state name, NUL */

/* Spec 3.1, in the spec's order. */
enum order_status {
	ORD_DRAFT, ORD_PLACED, ORD_PAID, ORD_CONFIRMED, ORD_SOURCED, ORD_RESERVED, ORD_FULFILLED, ORD_IN_TRANSIT,
	ORD_DELIVERED, ORD_SETTLED, ORD_CANCELLED, ORD_FAILED, ORD_REFUNDED, ORD_RETURNED, ORDER_N_STATUS
};
extern const char *const order_status_names[]; /* NULL-terminated */

enum order_channel { OC_MARKETPLACE, OC_WEBSHOP_CONNECT, OC_POS_QR, ORDER_N_CHANNEL };
extern const char *const order_channel_names[];

/*
 * A fulfilment leg: one source (offer) at one location, holding one hold.
 * Its status lives in the order's state row (order_state_v.leg_status).
 * The values are stored (by name) and only ever appended; their order in
 * the leg's life is leg_rank():
 *   pending -> held -> reserved            the saga (holds placed, committed)
 *   reserved -> picked -> packed           the fulfiller's optional steps
 *   -> shipping                            a cross-shard leg whose hold is being
 *                                          consumed on its stock's shard
 *   -> fulfilled                           shipped: the hold CONSUMED (spec 3.1
 *                                          "creating a fulfilment")
 *   -> picked_up -> in_transit -> delivered  carrier scans (fulfilment.c)
 *   released                               the order failed or was cancelled
 */
enum leg_status {
	LS_PENDING, LS_HELD, LS_RESERVED, LS_FULFILLED, LS_RELEASED, LS_PICKED, LS_PACKED, LS_SHIPPING, LS_PICKED_UP,
	LS_IN_TRANSIT, LS_DELIVERED, ORDER_N_LEG_STATUS
};
extern const char *const leg_status_names[];
/* The leg's progress: pending 0 ... delivered 9; released -1. */
int leg_rank(int leg_status);
/*
 * The order's status its legs imply (spec 3.1), for an order at reserved,
 * fulfilled or in_transit: delivered when every leg is delivered;
 * in_transit when every leg shipped and a carrier scanned one; fulfilled
 * when every leg shipped; else reserved.  Any other status is returned
 * unchanged.
 */
struct order_state_v;
int order_status_of_legs(const struct order_state_v *v);

struct order_leg {
	char leg_id[64];                    /* "<order_id>.L<n>" */
	char hold_id[INV_HOLD_ID_MAX + 1];  /* "<order_id>.H<n>" */
	char level_id[ID_MAX_LEN], offer_id[ID_MAX_LEN], originator_id[ID_MAX_LEN], fulfiller_id[ID_MAX_LEN],
		location_id[ID_MAX_LEN];
	int64_t qty;
};

/* Why a saga failed (the order's failure.code). */
enum order_failure {
	OF_NONE, OF_INSUFFICIENT_STOCK, OF_PAYMENT_DECLINED, OF_PAYMENT_FAILED, OF_PAYMENT_TIMEOUT,
	OF_PAYMENT_UNAVAILABLE, OF_INTERRUPTED, OF_STORE, ORDER_N_FAILURE
};
extern const char *const order_failure_codes[];

/* The members of the body order_doc() splices the state in front of or
 * behind (order_state.c), by where their `,"name":` starts. */
enum order_anchor { OA_CHANNEL, OA_FULFILLMENTS, OA_PAYMENT, OA_AMOUNT, OA_IDEMPOTENCY, OA_COUNT };

/* The order's body (REC_T_ORDER): what capture decided, never rewritten. */
struct order {
	struct row row;
	uint8_t pay_method;                 /* enum pay_method */
	char dest[3], currency[4];
	char seller_id[ID_MAX_LEN];
	char created_at[32];
	int64_t total_minor;                /* what the consumer is charged */
	/* Idempotency-Key of the create ("" without): (entity, key) is unique */
	char idem_entity[ID_MAX_LEN];
	char idem_key[IDEM_MAX_KEY + 1];
	uint8_t idem_fp[16];
	/* the body names a routing candidate with "permitted":false, which a
	 * seller's view leaves out (order.c, write_view): found once, not by
	 * scanning the ~7 KB document on every read */
	uint8_t unpermitted;
	unsigned n_legs;
	struct order_leg *legs;             /* n_legs, owned by the row */
	/* where each anchor starts in the body: written down by capture, which
	 * wrote the body, so a read copies spans instead of searching ~7 KB
	 * for them; all 0 in a row decoded from its document (order_doc then
	 * searches).  After legs: typed_same does not compare them. */
	uint32_t anchor[OA_COUNT];
};

/* The order's mutable values: what its state row holds. */
struct order_state_v {
	uint8_t status;                     /* enum order_status */
	uint8_t compensated;                /* failed/cancelled: every hold released, payment refunded or voided */
	uint8_t failure;                    /* enum order_failure (OF_NONE: failure is null) */
	uint8_t n_legs;
	uint8_t leg_status[ORDER_MAX_LEGS]; /* enum leg_status, in leg order */
	char pay_state[ORDER_PAY_STATE_MAX];/* payment.state: "pending", then a pay_state_names[] name */
	char charge_id[ID_MAX_LEN];         /* payment.charge_id, "" while null */
	char updated_at[ORDER_TS_MAX];
	char failure_at[ORDER_TS_MAX];      /* failure.at, failure.detail (when failure) */
	char failure_detail[ORDER_DETAIL_MAX + 1];
};

/* The order's state row (REC_T_ORDER_STATE, id = the order id). */
struct order_state {
	struct row row;
	struct order_state_v v;
};

/* The order's body, or NULL (no such order). */
const struct order *order_get(struct shard *sh, const char *id, size_t len);
/* The id of the order whose legs name this hold id ("<order id>.H<n>",
 * see order.c), or NULL.  Owned by the order's row.  (inventory.c's
 * hold_owned_by_order refusal, as inv_hold_owner: bound in engine/routes.c.) */
const char *order_owning_hold(struct shard *sh, const char *hold_id);
/* The order's current state, or NULL (no such order).  The pointer is
 * good until the next transaction that stages the order. */
const struct order_state *order_state_get(struct shard *sh, const char *id, size_t len);
/* order_state_get that also gives the body (*body, NULL when there is no
 * such order): two lookups for a caller that needs both. */
const struct order_state *order_pair_get(struct shard *sh, const char *id, size_t len, const struct order **body);
/* The order created by entity with Idempotency-Key key, or NULL. */
const struct order *order_by_idem(struct shard *sh, const char *entity, const char *key, size_t key_len);
/* The least id > after of an order not at rest (in flight, or failed /
 * cancelled and not yet compensated): copied into out, 1; or 0. */
int order_pending_next(struct shard *sh, const char *after, char *out);
/* True if partner id takes part in the order: its seller, the originator of
 * a source, or the fulfiller of a leg. */
int order_involves(const struct order *o, const char *partner_id);
/* The partners of order id other than its seller (its legs' originators
 * and fulfillers, each once) into out (at most max): how many; 0 for an
 * order this shard does not have. */
unsigned order_parties(struct shard *sh, const char *order_id, char (*out)[ID_MAX_LEN], unsigned max);

/*
 * Stage a new state row for the order: its current state with the patch
 * applied, in the OPEN transaction, with the event `event` (may be NULL).
 * The body is neither parsed nor copied.  leg_status: NULL to keep,
 * else n_legs new leg statuses.  failure: OF_NONE to keep.  compensated:
 * -1 keep, else 0/1.  pay_state: NULL to keep, else the payment's state
 * name.  0, or -1 (nothing staged that matters: the caller aborts).
 */
struct order_patch {
	int status;                         /* enum order_status, or -1 to keep */
	const uint8_t *leg_status;
	int failure;                        /* enum order_failure, 0 = keep */
	const char *failure_detail;
	int compensated;
	const char *pay_state;
	const char *charge_id;
	const char *event;                  /* "order.paid", ... or NULL */
	const char *event_extra;            /* a JSON object: the event payload's "detail", or NULL */
};
int order_stage(struct shard *sh, const struct order *o, const struct order_patch *p);
/* One more event about the order (its status `status`) in the OPEN
 * transaction: a step that fires two (a scan both picks up and delivers a
 * leg).  0 or -1. */
int order_stage_event(struct shard *sh, const struct order *o, int status, const char *type, const char *extra);

/* ---- the state row and the assembled document (engine/orders/order_state.c) ------ */

/* The state at capture: placed, every leg pending, payment pending. */
void order_state_initial(struct order_state_v *v, unsigned n_legs, const char *now);
/* Apply a patch at time now.  0, or -1 (a value out of its bounds). */
int order_state_apply(struct order_state_v *v, const struct order_patch *p, const char *now);
/* Write the state row's canonical document. */
void order_state_write(struct jw *w, const struct order_state_v *v);
/*
 * Append the order's full document to out: the body with the state's
 * values at the places the document has always had them (status after
 * id, each leg's status after its leg_id, payment state and charge_id
 * before its amount, failure and saga before idempotency, updated_at
 * last).  0, or -1 (out of memory, or a body that does not parse).
 */
int order_doc(const struct order *o, const struct order_state *s, struct buf *out);
/* Index of s in a NULL-terminated name list, or -1. */
int order_name_index(const char *const *names, const char *s);
/* The least id > after of an order with a leg in flight between shards
 * (LS_SHIPPING): copied into out, 1; or 0.  (fulfilment.c's work list.) */
int order_legwork_next(struct shard *sh, const char *after, char *out);
/* The least id > after of an order delivered, returned or refunded, or
 * still moving with a delivered leg (whose payouts a payout run looks
 * at): into out, 1; or 0. */
int order_settling_next(struct shard *sh, const char *after, char *out);
/* How many orders have a leg in flight (cheap). */
uint64_t order_legwork_count(struct shard *sh);

/* The documents of o the caller may see, into the assembled document's
 * "documents" member (engine/orders/documents.c documents_splice, bound in
 * engine/routes.c: the documents read the orders, so the orders do not
 * include them).  0 or -1. */
extern int (*const order_documents_splice)(struct api_ctx *c, const struct order *o, struct buf *doc);

/* The consumer volume check at capture (consumer_volume.c, bound in
 * engine/routes.c): the order's lines as the caps count them. */
struct order_volume_line {
	uint8_t category;      /* enum rd_category */
	int64_t unit_ul, qty;
};
extern int (*const order_volume_capture)(struct api_ctx *c, const char *order_id, const char *dest,
					 const char *email, const struct order_volume_line *l, unsigned n);

/* ---- what the other order files use of order.c ----------------------------------- */

/* The order named by the path's first parameter, when the caller may see
 * it; else NULL with 404 answered. */
const struct order *order_visible(struct api_ctx *c);
/* The same for the order id given (NULL or "": 404). */
const struct order *order_visible_id(struct api_ctx *c, const char *id);
/* A list of what hangs off the order named by the path (its pickups, its
 * returns): the order when the caller may see it and the read is within
 * its quota, with 200 and `{"data":[` written; else NULL, answered.
 * order_sublist_end closes the list. */
const struct order *order_sublist_begin(struct api_ctx *c);
void order_sublist_end(struct api_ctx *c);
/* The caller's view shows leg li of o. */
int order_leg_in_view(const struct api_ctx *c, const struct order *o, unsigned li);
/* The index of the leg named by the path's second parameter, when the
 * caller's view shows it; else -1 with 404 answered (a leg outside the
 * view is indistinguishable from a missing one). */
int order_visible_leg(struct api_ctx *c, const struct order *o);
/* True when the caller is the leg's fulfiller (or the platform). */
int order_leg_fulfiller(const struct api_ctx *c, const struct order_leg *l);
/* Answer `status` with the order as the caller may see it. */
void order_answer(struct api_ctx *c, int status, const struct order *o);
/* Answer 409 invalid_order_state (or `code`) with detail, current_status
 * and, when leg >= 0, leg_id and leg_status. */
void order_conflict(struct api_ctx *c, const char *code, const char *detail, const struct order *o, int leg);

/* ---- saga (engine/orders/saga.c) ------------------------------------------------- */

/*
 * Drive an order from where it stands to a resting state, step by step,
 * each step its own transaction:
 *   placed   -> prepare a hold per leg -> charge -> paid
 *   paid     -> decision (confirmed, sourced: routing committed)
 *   sourced  -> commit buy legs (holds -> reservations, stock.reserved) -> reserved
 * and on any failure the failure record (failed + order.failed) then every
 * completed step's compensation (release holds, refund/void the charge),
 * then compensated.  cancelled/failed orders not yet compensated are
 * compensated.  recovering: called at start-up for an order a crash left
 * mid-way -- a placed order (no decision, charge unknown) is aborted
 * (presumed abort); paid and later are driven forward.
 * Returns the order's resting status.
 */
int saga_drive(struct shard *sh, const char *order_id, int recovering);

/*
 * A cross-shard order (DESIGN.md 9): its legs' holds live on other shards
 * under transaction "<coordinator>:<order id>" (txn_part.h); the
 * coordinating router drives it through these steps, each idempotent and
 * each one transaction (order_txn.c serves them):
 *   saga_txn_charge  placed -> paid (order.paid), or failed and refunded:
 *                    OF_NONE or the failure
 *   saga_txn_commit  paid -> confirmed -> sourced (the router logged COMMIT)
 *   saga_txn_rest    sourced -> reserved (every participant committed)
 *   saga_txn_abort   placed/paid -> failed with `why`, refunded (before the
 *                    decision only: -1 once confirmed)
 * saga_drive leaves such an order at placed/paid to its coordinator, and
 * on restart aborts a placed one (no decision is possible without paid)
 * and drives confirmed/sourced ones to reserved.
 */
int saga_txn_charge(struct shard *sh, const char *order_id);
int saga_txn_commit(struct shard *sh, const char *order_id);
int saga_txn_rest(struct shard *sh, const char *order_id);
int saga_txn_abort(struct shard *sh, const char *order_id, int why);
/* Every participant released a failed or cancelled cross-shard order's
 * holds: refunded (again: idempotent), legs released, compensated. */
int saga_txn_released(struct shard *sh, const char *order_id);
/* The destination's /internal/orders/{id}/... routes (order_txn.c). */
extern const struct route order_txn_internal_routes[];
/* From the loop's tick: a cross-shard order left placed or paid past
 * --txn-timeout-ms is asked about at its coordinator, then committed
 * (reserved) or aborted (failed, refunded) as it answers. */
void order_txn_tick(struct shard *sh);
/* Is o a cross-shard order?  Its transaction id into out (size bytes). */
int order_txn_of(const struct order *o, char *out, size_t size);
/* The answer to a create: 201 and the caller's view, or the failure's
 * problem with the order (replay: Idempotent-Replayed). */
void order_answer_create(struct api_ctx *c, const struct order *o, int replay);

/*
 * Re-plan a cross-shard order still placed (DESIGN.md 9, step 2): the
 * coordinator calls it once (POST /internal/orders/{id}/replan, order_txn.c)
 * after a participant voted no and every hold of the first plan was
 * released.  `request` (the client's order request) is captured again with
 * the participants' reported ATP as an override (inventory.h) and the new
 * plan replaces the first under the same id, transaction, Idempotency-Key,
 * consumer and creation time, with hold ids from ORDER_REPLAN_HOLD_BASE on
 * (never those of the released holds).  Answers 202 with the new legs like
 * the first plan, the capture's refusal (422 insufficient_stock, ...), or
 * 409 replan_local when the new plan needs no other shard.  No event: the
 * order stays placed.
 */
#define ORDER_REPLAN_HOLD_BASE 100u /* > ORDER_MAX_LEGS: a re-plan's hold ids never meet the first's */
void order_replan(struct api_ctx *c, const struct order *o, const struct json_value *request,
		  const struct inv_atp_override *atp);

/* Test builds: at the named fault-injection point (WM_ERRINJ), wait until
 * everything logged so far is durable, then _exit -- a kill -9 exactly
 * between two saga steps.  Release builds: nothing. */
void saga_crash_point(struct shard *sh, const char *name);

/* At start-up, before serving: resume every order a crash left between
 * steps.  Returns how many were resumed; logs each. */
unsigned saga_recover(struct shard *sh);

extern const struct table_ops order_table_ops;
extern const struct table_ops order_state_table_ops;
extern const struct route order_routes[];

#endif
