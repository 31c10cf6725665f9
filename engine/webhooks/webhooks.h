/*
 * webhooks.h -- webhook endpoints (subscriptions) and their deliveries in
 * the shard (issue 18 items 1, 2 and 5): the model shared by endpoint.c
 * (the /v1/webhook-endpoints routes and the endpoint table) and
 * delivery.c (fan-out of the event log into delivery rows, the sender on
 * top of engine/events/webhook_http.h, the dead-letter queue, /metrics).
 * The why of each decision is at the top of those two files.
 */
#ifndef WM_WEBHOOKS_H
#define WM_WEBHOOKS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/edge/api.h"
#include "engine/events/webhook_seal.h"
#include "engine/events/webhook_sign.h"
#include "engine/events/webhook_url.h"
#include "engine/storage/events.h"
#include "engine/storage/id.h"
#include "engine/storage/shard.h"
#include "engine/storage/table.h"
#include "net/buf.h"
#include "net/client.h"

#define WHE_TYPES_MAX 16           /* event type patterns per endpoint */
#define WHE_DESC_MAX 256           /* bytes of an endpoint's description */
#define WHE_PER_OWNER_MAX 16       /* endpoints one entity may have (the platform included) */
#define WHE_SECRET_BYTES 32        /* random bytes of a generated secret */
#define WHE_ROTATION_MS (24LL * 3600 * 1000) /* the previous secret keeps signing this long */
#define WHE_TS_MAX 32              /* an RFC 3339 timestamp with ms, NUL included */
#define WHE_PLATFORM "platform"    /* the platform's entity id (principal.entity_id) */

enum whe_status { WHE_ENABLED = 0, WHE_DISABLED = 1 };
extern const char *const whe_status_names[]; /* "enabled", "disabled", NULL */

/* One endpoint row (REC_T_WH_ENDPOINT).  The stored document carries the
 * secrets (they sign every delivery); the public view never does. */
struct wh_endpoint {
	struct row row;
	char owner[ID_MAX_LEN];                 /* the entity whose events it receives, or "platform" */
	char url[WH_URL_MAX + 1];
	char types[WHE_TYPES_MAX][EVENT_MAX_TYPE + 1]; /* patterns: "*", "order.*", "order.delivered" */
	uint8_t n_types;
	uint8_t status;                         /* enum whe_status */
	char description[WHE_DESC_MAX + 1];
	/* The secrets as stored: sealed (webhook_seal.h), "" when none.  The
	 * plain secret/prev are set only where a secret is made (create,
	 * rotate: sealed when staged) or in a row stored before sealing. */
	char sealed[WH_SEALED_TEXT_MAX + 1], prev_sealed[WH_SEALED_TEXT_MAX + 1];
	struct wh_secret secret;                /* signs every delivery */
	struct wh_secret prev;                  /* len 0: none; else signs too until prev_until_ms */
	int64_t prev_until_ms;
	char created_at[WHE_TS_MAX], updated_at[WHE_TS_MAX];
	char disabled_reason[64];               /* "" or why the service disabled it ("gone": a 410;
						 * "failing": every delivery failed for --webhook-disable-after-days) */
	int64_t failing_since_ms;               /* the first failure after the last success; 0: not failing */
	int64_t created_ms;                     /* created_at: it receives the events made from then on */
};

/* 1 when pattern p matches event type `type`: "*" matches every type,
 * "x.*" every type that starts with "x.", anything else only itself.
 * Pure. */
int whe_pattern_match(const char *p, const char *type);

/* 1 when p is a well-formed pattern: 1..EVENT_MAX_TYPE bytes; "*", or
 * lower-case letters, digits, '_' and '.' (no empty dotted word) with an
 * optional final ".*".  Pure. */
int whe_pattern_valid(const char *p, size_t n);

/* 1 when endpoint e is enabled and one of its patterns matches type. */
int whe_wants(const struct wh_endpoint *e, const char *type);

/* The endpoint by id, or NULL. */
const struct wh_endpoint *whe_get(struct shard *sh, const char *id, size_t len);
/* The endpoint named by the path's first parameter (into id), when the
 * caller may see it; else NULL with the 404 written (another entity's
 * endpoint is as unknown as a missing one). */
struct api_ctx;
const struct wh_endpoint *whe_visible(struct api_ctx *c, char id[ID_MAX_LEN]);

/* The secrets that sign a delivery at now_ms, opened with the shard's
 * sealing key: the current one, then the previous one while its rotation
 * window lasts.  How many (1..2); 0 when the current one does not open
 * (the deployment key changed: the endpoint needs rotate-secret). */
size_t whe_signing_secrets(struct shard *sh, const struct wh_endpoint *e, int64_t now_ms,
			   struct wh_secret out[WH_SIGN_MAX_SECRETS]);

/* Call fn for every endpoint that receives events of entity `owner`
 * (exact owner match; pass WHE_PLATFORM for the platform's own), in id
 * order, until fn returns non-zero (that value is returned; else 0). */
int whe_each_of_owner(struct shard *sh, const char *owner, int (*fn)(const struct wh_endpoint *e, void *arg),
		      void *arg);

/* Stage (in the open transaction) endpoint e disabled by the service with
 * reason `why`, and its webhook.endpoint_disabled event: 0 or -1. */
int whe_stage_disable(struct shard *sh, const struct wh_endpoint *e, const char *why);
/* Stage (in the open transaction) endpoint e failing since since_ms (0:
 * healthy again), and disabled with reason `why` when why is not NULL
 * (with its webhook.endpoint_disabled event): 0 or -1. */
int whe_stage_health(struct shard *sh, const struct wh_endpoint *e, int64_t since_ms, const char *why);

/* The operator's destination policy (--webhook-allow-http,
 * --webhook-allow-private). */
struct wh_policy whe_policy(const struct shard *sh);

/* Deliveries (delivery.c). */

/* Start the delivery thread: 0, or -1 with err.  Stop: pending rows stay
 * pending and are sent after the next start. */
/* The partners of an order other than its seller (engine/orders/order.c
 * order_parties, bound in engine/routes.c: the orders are a layer above
 * this one): its order.* events go to their endpoints too, in a
 * participant's view (delivery.c). */
#define WH_ORDER_PARTIES_MAX 64
extern unsigned (*const wh_order_parties)(struct shard *sh, const char *order_id, char (*out)[ID_MAX_LEN],
					  unsigned max);

/* In a cluster (delivery.c "Every shard's events"): the wall time before
 * which this shard's replica holds every endpoint the home made durable
 * (engine/replication repl_fresh_ms of the home), and a signed POST of
 * body to the home's /internal/ path (engine/stock/txn_part.c
 * txn_shard_call): bound in engine/routes.c, replication and the shard
 * calls being layers above this one. */
extern uint64_t (*const wh_home_fresh_ms)(struct shard *sh);
extern int (*const wh_home_call)(struct shard *sh, const char *path, const char *body,
				 void (*done)(void *arg, const struct hc_response *r, const char *err), void *arg);

int webhooks_start(struct shard *sh, char *err, size_t errlen);
void webhooks_stop(void);
/* The delivery thread's completion eventfd, -1 before webhooks_start. */
int webhooks_fd(void);
/* Fan the new events out into delivery rows, hand due deliveries to the
 * thread, store what it finished.  Cheap when idle: every tick and on the
 * eventfd. */
void webhooks_poll(struct shard *sh);
/* wm_webhook_* lines into o (/metrics). */
void webhooks_metrics(struct shard *sh, struct buf *o);

/* Stage (in the open transaction) the fan-out cursor at the newest event
 * of the log: the first endpoint's creation does, so the walk never runs
 * (and never writes) while no endpoint exists, and an endpoint never
 * receives events from before it existed.  0 or -1. */
int whd_stage_cursor_at_end(struct shard *sh);

/* Retention (engine/retention.c).  The oldest event id the deliveries
 * still need, into out ("" when none): the fan-out's position (or where a
 * walk without one starts) and the event of every pending delivery.  An
 * event before it may be pruned without a delivery losing its body.
 * Cost: the pending deliveries. */
void whd_needed_from(struct shard *sh, char out[ID_MAX_LEN]);
/* 1 when delivery row r (of REC_T_WH_DELIVERY) is delivered or dead and
 * was created before before_ms: retention may delete it. */
int whd_prunable(const struct row *r, int64_t before_ms);

extern const struct table_ops wh_endpoint_table_ops;
extern const struct table_ops wh_delivery_table_ops;
extern const struct table_ops wh_cursor_table_ops;
extern const struct route webhook_routes[];     /* endpoint.c */
extern const struct route webhook_dlq_routes[]; /* delivery.c */
extern const struct route webhook_internal_routes[]; /* delivery.c: POST /internal/webhooks/health */

#endif
