/*
 * order_world.h -- the fixture the order tests share: a shard with an
 * estate and a stockist (both FR originators, each with a cellar and
 * stock of one wine) and a DE seller, and helpers to place orders.
 * jansson-based (include this, never net/json.h).
 */
#ifndef WM_ORDER_WORLD_H
#define WM_ORDER_WORLD_H

#include <jansson.h>

#include "tests/api_client.h"

struct oworld {
	struct wm_proc p;
	int port;
	char est[64], stk[64], sel[64];           /* partners */
	char kest[128], kstk[128], ksel[128];     /* their secret keys */
	char w1[64];                              /* the estate's wine */
	char of_est[64], of_stk[64];              /* estate 10.00 EUR, stockist 11.00 EUR, both EXW */
	char loc_est[64], loc_stk[64];
	char lv_est[64], lv_stk[64];              /* sellable levels */
	char stock_cc[3], dest[3];                /* the cellars' country, the orders' destination */
};

/*
 * Start a fresh shard (errinj: the WM_ERRINJ value, NULL for none) and
 * build the world: the estate holds est_units of w1, the stockist stk_units.
 */
void ow_start(struct oworld *x, const char *errinj, int est_units, int stk_units);
/* More arguments for the shard's next starts (at most 10, NULL-terminated;
 * a test sets them before ow_start and clears them after). */
extern const char *ow_extra_args[11];
/* More environment ("K=V") for the shard's next starts, the same way (at
 * most 4, NULL-terminated). */
extern const char *ow_extra_env[5];
/* The consumer e-mail of ow_body's orders: NULL (default) = a new consumer
 * per order ("erika+<pid>.<n>@example.de"), so that the volume caps, which
 * count one consumer's orders, only bite where a test means them to. */
extern const char *ow_consumer_email;
/* ow_body with the consumer derived from an Idempotency-Key (idem NULL: a
 * new consumer), so that a retry sends the very same body. */
void ow_body_for(const struct oworld *x, int qty, const char *extra, const char *idem, char *out, size_t size);
/* Build the same world through any address (a router of a cluster):
 * the cellars in stock_cc (FR, DE or AT), orders to dest (FR, DE or AT).
 * x->p is left alone (not started by this). */
void ow_build(struct oworld *x, int port, int est_units, int stk_units, const char *stock_cc, const char *dest);
/* More stock: a new location of the estate (stockist 0) or the stockist
 * (1) in country cc (FR, DE or AT) with `units` of its offer; the level's
 * id into level_out (64 bytes). */
void ow_add_stock(struct oworld *x, int stockist, const char *cc, int units, char *level_out);
/* Restart on the same data directory after a stop or kill. */
void ow_restart(struct oworld *x, const char *errinj);

/* The body of an order of qty units of w1 to DE, plus extra members (may be NULL). */
void ow_body(const struct oworld *x, int qty, const char *extra, char *out, size_t size);
/* POST /v1/orders as the seller with that body; idem: an Idempotency-Key or
 * NULL.  The parsed response (caller decrefs); its status in *status. */
json_t *ow_order(struct oworld *x, int qty, const char *extra, const char *idem, int *status);
/* The same for a POST that may get no answer (the shard dies mid-request):
 * the HTTP status with the parsed response in *out (caller decrefs), or -1
 * with *out NULL when the connection closed without a response. */
int ow_order_try(struct oworld *x, int qty, const char *extra, const char *idem, json_t **out);
/* In a cluster: ow_order, retried (bounded, 5 s) while it is a 422 because
 * the destination's replica has not seen the stock yet; asserts the 201
 * and returns the order (caller decrefs). */
json_t *ow_order_replicated(struct oworld *x, int qty);
/* GET path as the operator, expecting 200. */
json_t *ow_get(struct oworld *x, const char *path);
/* The level's reserved, allocated, on_hand (operator view). */
void ow_level(struct oworld *x, const char *level_id, long long *reserved, long long *allocated, long long *on_hand);
/* ow_level until the level shows reserved and allocated as wanted (lists
 * are read from replicas, which lag after a partition or a restart), at
 * most 15 s: the last figures read into *reserved and *allocated. */
void ow_level_wait(struct oworld *x, const char *level_id, long long want_reserved, long long want_allocated,
		   long long *reserved, long long *allocated);
/* An RFC 3339 UTC time ago_s seconds ago (whole seconds). */
void ow_ago(long ago_s, char out[40]);
/* Ship the legs of order id named by the bits of `legs` (bit i: leg i),
 * each by its fulfiller (a leg whose stock is on another shard: until it
 * left `shipping`), and deliver each by a carrier scan ago_s seconds ago. */
void ow_deliver(struct oworld *x, const char *id, unsigned legs, long ago_s);
/* An exact decimal money member in cents. */
long long ow_cents(json_t *o, const char *k);

/* A further FR originator of w1 ("stock" type, not the estate): its own
 * partner, key, active network-shareable EXW EUR offer at `price` (a
 * decimal literal such as "10.40"), warehouse and sellable level of
 * `units`. */
struct ow_src {
	char id[64], key[128], offer[64], loc[64], lv[64];
};
void ow_source(struct oworld *x, const char *name, const char *price, int units, struct ow_src *out);

#endif
