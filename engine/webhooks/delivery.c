/*
 * delivery.c -- pushing the event log to webhook endpoints, at least once
 * per (endpoint, event), durably (issue 18 items 2 and 5).
 *
 * Why three tables and one walk.  The event log is already durable and
 * ordered (engine/storage/events.c: ids are time-ordered, an event exists
 * iff its change does).  Delivery state must survive kill -9 without
 * losing or duplicating anything, so it is made of rows too:
 *
 *   fan-out    webhooks_poll walks the event table in id order after a
 *              cursor (REC_T_WH_CURSOR, one row "fanout"), creates one
 *              delivery row per matching endpoint, and moves the cursor
 *              IN THE SAME TRANSACTION as those rows.  A crash before the
 *              commit redoes the batch; after it, nothing is redone.  So a
 *              (endpoint, event) pair gets exactly one row.  Which
 *              endpoints: those owned by the event's scope.entity_id and
 *              every platform-owned endpoint, enabled, with a matching
 *              pattern (endpoint.c).  While no endpoint exists the walk
 *              does nothing (writes nothing); the first endpoint's
 *              creation moves the cursor to the end of the log in its own
 *              transaction, so no endpoint receives events from before
 *              the first one existed.
 *   delivery   REC_T_WH_DELIVERY, id "<endpoint id>.<event id>" (so an
 *              endpoint's rows are one id range, in event order): status
 *              pending | delivered | dead, attempts, next_attempt_ms.
 *              Every state change is one transaction (one per result).
 *              An attempt in flight at a crash is still pending in its row
 *              and is sent again after the restart: at least once; the
 *              receiver deduplicates on webhook-id (= the event id).
 *   body       the event document exactly as GET /v1/events shows it
 *              (the event row's stored document; GET /v1/events shows a
 *              partner and the platform the same document), read at send
 *              time, so nothing is stored twice.  An event gone from the
 *              log (no retention yet) makes its delivery dead.
 *
 * Sending is off the loop: engine/events/webhook_http.h (libcurl multi on
 * its own thread, bounded queue, eventfd).  The loop hands at most
 * WHD_INFLIGHT_MAX deliveries to it; each carries the Standard Webhooks
 * headers (webhook-id = the event id, webhook-timestamp, webhook-signature
 * with one entry per signing secret: two during a rotation).  Results:
 * 2xx delivered; 410 dead and the endpoint disabled (disabled_reason
 * "gone", event webhook.endpoint_disabled); anything else retried on the
 * Svix schedule (wh_after_attempt: immediately, 5 s, 5 min, 30 min, 2 h,
 * 5 h, 10 h, 10 h, +-10 % jitter, a Retry-After respected); after the
 * eighth attempt the delivery is dead: the dead-letter queue, listed by
 * GET /v1/webhook-endpoints/{id}/dead-letters and put back to pending
 * (attempts reset) by POST /v1/webhook-endpoints/{id}/replay.
 *
 * Test builds only (WM_TESTING): WM_WEBHOOK_RETRY_MAX_MS caps every retry
 * delay and WM_WEBHOOK_TIMEOUT_MS sets the request time-out, so the tests
 * see a whole schedule in seconds.  Release builds ignore both.
 *
 * A disabled endpoint's pending deliveries stay pending (not sent) until
 * it is enabled again; a deleted endpoint's are deleted when the sender
 * meets them.
 *
 * Every shard's events.  In a cluster the endpoints are written on the
 * catalogue home and replicated to every shard (repl_published); each
 * shard fans out its OWN event log into its OWN delivery rows and sends
 * them, so an order's events leave from its destination's shard, in
 * event order there, and nothing crosses shards per event.  Two rules
 * keep that exact although a replica lags:
 *   - an endpoint receives the events made from its creation on
 *     (created_ms against the event id's time), wherever the fan-out
 *     stands when the endpoint arrives;
 *   - a shard other than the home fans out only events older than the
 *     time its replica of the home is known fresh, less WHD_SETTLE_MS
 *     (fan_horizon, repl_fresh_ms), so an event is never walked past
 *     before every endpoint created before it is here.  The price is
 *     one to two seconds of latency on those shards.
 * Such a shard never writes an endpoint row (the home's): what a result
 * does to an endpoint's health (failing since, disabled for 410 or for
 * failing too long) is POSTed to the home's /internal/webhooks/health,
 * which applies it as it applies its own results, and comes back by
 * replication.  The delivery lists are merged across shards by the
 * router (RC_FANOUT) and a replay acts on every shard ("sum-find").
 *
 * /metrics: counters since start (attempts, delivered, failures by class:
 * transport | status_4xx | status_5xx | status_other | gone, dead), the
 * pending gauge, and per endpoint the pending depth and the age of the
 * oldest pending delivery for at most WHD_METRICS_ENDPOINTS endpoints (the
 * deepest queues); every other endpoint is summed under endpoint="other",
 * so the label's cardinality is bounded whatever the number of endpoints.
 * Building those lines walks the pending index (cost: pending rows).
 */
#include "engine/webhooks/webhooks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/base/log.h"
#include "engine/edge/fields.h"
#include "engine/events/webhook_http.h"
#include "engine/events/webhook_retry.h"
#include "engine/storage/record.h"

#include <openssl/crypto.h>

#define WHD_ID_MAX (2 * ID_MAX_LEN)   /* "<endpoint id>.<event id>" and its NUL */
#define WHD_INFLIGHT_MAX 64           /* deliveries handed to the thread at once */
#define WHD_FANOUT_EVENTS 256         /* events one fan-out transaction covers at most */
#define WHD_SCAN_MAX 512              /* pending rows one poll looks at at most */
#define WHD_REPLAY_MAX 1000           /* deliveries one replay request moves at most */
#define WHD_METRICS_ENDPOINTS 32      /* endpoints with a label of their own in /metrics */
#define WHD_METRICS_DISTINCT 1024     /* endpoints told apart while building those lines */
#define WHD_ERR_MAX 160               /* bytes of a stored last_error */
#define WHD_CONNECT_TIMEOUT_MS 5000
#define WHD_TIMEOUT_MS 15000          /* api-practices: 15-30 s */
#define WHD_RESPONSE_CAP 4096         /* bytes of an answer read (only the status matters) */
#define WHD_HOST_CONNS 4              /* connections to one host:port */
#define WHD_CURSOR_ID "fanout"
#define WHD_SETTLE_MS 1000            /* a shard other than the home fans out events this much older than its
				       * replica of the endpoints is known fresh (a home's stamp-to-fsync delay) */
#define WHD_HEALTH_PATH "/internal/webhooks/health"

enum whd_status { WHD_PENDING = 0, WHD_DELIVERED = 1, WHD_DEAD = 2 };
static const char *const whd_status_names[] = {"pending", "delivered", "dead", NULL};

/* ---- the tables -------------------------------------------------------------------- */

struct wh_delivery {
	struct row row;
	char endpoint[ID_MAX_LEN], event[ID_MAX_LEN];
	char event_type[EVENT_MAX_TYPE + 1];
	uint8_t status;                 /* enum whd_status */
	uint32_t attempts;              /* 0..WH_ATTEMPTS */
	int64_t next_ms;                /* pending: when the next attempt is due */
	int64_t created_ms;
	int64_t last_status;            /* HTTP status of the last attempt, 0 = none */
	char last_error[WHD_ERR_MAX];
	char created_at[WHE_TS_MAX], last_attempt_at[WHE_TS_MAX], delivered_at[WHE_TS_MAX];
};

static uint32_t pending_key(const struct wh_delivery *d, uint8_t *out)
{
	static const char hx[] = "0123456789abcdef";
	uint64_t v = d->next_ms < 0 ? 0 : (uint64_t)d->next_ms;
	for (int i = 15; i >= 0; i--, v >>= 4)
		out[i] = (uint8_t)hx[v & 15];
	memcpy(out + 16, d->row.id, d->row.id_len);
	return 16u + d->row.id_len;
}

static int doc_int(const struct json_value *doc, const char *name, int64_t *out)
{
	const struct json_value *m = json_get(doc, name);
	*out = 0;
	if (!m || m->type == JSON_NULL)
		return 0;
	return json_to_int64(m, out);
}

static int whd_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct wh_delivery *d = (struct wh_delivery *)r;
	char st[16];
	int64_t att;
	if (fld_doc_str(doc, "endpoint_id", d->endpoint, sizeof(d->endpoint)) || !d->endpoint[0] ||
	    fld_doc_str(doc, "event_id", d->event, sizeof(d->event)) || !d->event[0] ||
	    fld_doc_str(doc, "event_type", d->event_type, sizeof(d->event_type)) ||
	    fld_doc_str(doc, "status", st, sizeof(st)) ||
	    fld_doc_str(doc, "last_error", d->last_error, sizeof(d->last_error)) ||
	    fld_doc_str(doc, "created_at", d->created_at, sizeof(d->created_at)) ||
	    fld_doc_str(doc, "last_attempt_at", d->last_attempt_at, sizeof(d->last_attempt_at)) ||
	    fld_doc_str(doc, "delivered_at", d->delivered_at, sizeof(d->delivered_at)) ||
	    doc_int(doc, "attempts", &att) || att < 0 || att > WH_ATTEMPTS ||
	    doc_int(doc, "next_attempt_ms", &d->next_ms) || doc_int(doc, "created_ms", &d->created_ms) ||
	    doc_int(doc, "last_status", &d->last_status))
		return -1;
	d->attempts = (uint32_t)att;
	int s = -1;
	for (int i = 0; whd_status_names[i]; i++)
		if (!strcmp(st, whd_status_names[i]))
			s = i;
	if (s < 0)
		return -1;
	d->status = (uint8_t)s;
	return 0;
}

static int whd_index_add(struct table *t, struct row *r)
{
	struct wh_delivery *d = (struct wh_delivery *)r;
	if (d->status != WHD_PENDING)
		return 0;
	uint8_t k[IDX_MAX_KEY];
	return oidx_put(table_oidx_ext(t), k, pending_key(d, k), d) < 0 ? -1 : 0;
}

static void whd_index_del(struct table *t, struct row *r)
{
	struct wh_delivery *d = (struct wh_delivery *)r;
	if (d->status != WHD_PENDING)
		return;
	uint8_t k[IDX_MAX_KEY];
	uint32_t kl = pending_key(d, k);
	if (oidx_get(table_oidx_ext(t), k, kl) == d)
		oidx_del(table_oidx_ext(t), k, kl);
}

const struct table_ops wh_delivery_table_ops = {
	.rec_table = REC_T_WH_DELIVERY,
	.name = "webhook_delivery",
	.row_size = sizeof(struct wh_delivery),
	.decode = whd_decode,
	.index_add = whd_index_add,
	.index_del = whd_index_del,
	.init = table_oidx_ext_init,
	.fini = table_oidx_ext_fini,
};

struct wh_cursor {
	struct row row;
	char after[ID_MAX_LEN]; /* the last event fanned out */
};

static int cursor_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct wh_cursor *c = (struct wh_cursor *)r;
	return fld_doc_str(doc, "after", c->after, sizeof(c->after)) || !c->after[0] ? -1 : 0;
}

const struct table_ops wh_cursor_table_ops = {
	.rec_table = REC_T_WH_CURSOR,
	.name = "webhook_cursor",
	.row_size = sizeof(struct wh_cursor),
	.decode = cursor_decode,
};

/* ---- writing a delivery row ------------------------------------------------------------- */

static void kstr_or_null(struct jw *w, const char *k, const char *s)
{
	if (s[0])
		jw_var_str(w, k, s);
	else
		jw_var_null(w, k);
}

/* Stage delivery d under id in the open transaction: 0 or -1. */
static int whd_stage(struct shard *sh, const char *id, const struct wh_delivery *d)
{
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	struct jw w;
	jw_init(&w, &doc);
	jw_obj_begin(&w);
	jw_kstr(&w, "id", id);
	jw_kstr(&w, "endpoint_id", d->endpoint);
	jw_kstr(&w, "event_id", d->event);
	jw_kstr(&w, "event_type", d->event_type);
	jw_kstr(&w, "status", whd_status_names[d->status]);
	jw_kint(&w, "attempts", d->attempts);
	char ts[WHE_TS_MAX];
	if (d->status == WHD_PENDING) {
		fmt_rfc3339_ms(ts, (unsigned long long)(d->next_ms < 0 ? 0 : d->next_ms));
		jw_kstr(&w, "next_attempt_at", ts);
		jw_kint(&w, "next_attempt_ms", d->next_ms);
	} else {
		jw_knull(&w, "next_attempt_at");
		jw_kint(&w, "next_attempt_ms", 0);
	}
	kstr_or_null(&w, "last_attempt_at", d->last_attempt_at);
	if (d->last_status)
		jw_kint(&w, "last_status", d->last_status);
	else
		jw_knull(&w, "last_status");
	kstr_or_null(&w, "last_error", d->last_error);
	kstr_or_null(&w, "delivered_at", d->delivered_at);
	jw_kstr(&w, "created_at", d->created_at);
	jw_kint(&w, "created_ms", d->created_ms);
	jw_obj_end(&w);
	int rc = w.err || txn_put(sh, REC_T_WH_DELIVERY, id, strlen(id), doc.data, doc.len) ? -1 : 0;
	buf_free(&doc);
	return rc;
}

static void row_id(const struct row *r, char *out, size_t cap)
{
	size_t n = r->id_len < cap - 1 ? r->id_len : cap - 1;
	memcpy(out, r->id, n);
	out[n] = 0;
}

/* ---- the sender's state (the loop thread's) --------------------------------------------- */

struct slot {
	int used;
	char id[WHD_ID_MAX];
};

static struct {
	int started;
	struct wh_http *h;
	struct slot slots[WHD_INFLIGHT_MAX];
	uint64_t rnd;
	int64_t retry_max_ms;  /* test builds: cap on a retry delay (0 = none) */
	int64_t disable_after_ms; /* --webhook-disable-after-days (test builds: WM_WEBHOOK_DISABLE_AFTER_MS) */
	long timeout_ms;
	/* counters since start (/metrics) */
	uint64_t attempts, delivered, dead, fanned;
	uint64_t fail_transport, fail_4xx, fail_5xx, fail_other, fail_gone;
} wg;

static uint64_t next_rnd(void)
{
	/* splitmix64: jitter only, no secrecy needed */
	uint64_t z = (wg.rnd += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

int webhooks_start(struct shard *sh, char *err, size_t errlen)
{
	memset(&wg, 0, sizeof(wg));
	wg.rnd = wall_ms() ^ ((uint64_t)getpid() << 32);
	wg.timeout_ms = WHD_TIMEOUT_MS;
	wg.disable_after_ms = (int64_t)sh->cfg.webhook_disable_after_days * 86400000LL;
#ifdef WM_TESTING
	const char *dis = getenv("WM_WEBHOOK_DISABLE_AFTER_MS");
	if (dis && *dis)
		wg.disable_after_ms = strtoll(dis, NULL, 10);
	const char *cap = getenv("WM_WEBHOOK_RETRY_MAX_MS");
	if (cap && *cap)
		wg.retry_max_ms = strtoll(cap, NULL, 10);
	const char *to = getenv("WM_WEBHOOK_TIMEOUT_MS");
	if (to && *to) {
		long v = strtol(to, NULL, 10);
		if (v >= 1 && v <= WH_HTTP_TIMEOUT_MAX_MS)
			wg.timeout_ms = v;
	}
#endif
	struct wh_http_config c = {.queue_cap = WHD_INFLIGHT_MAX,
				   .max_host_conns = WHD_HOST_CONNS,
				   .response_cap = WHD_RESPONSE_CAP,
				   .allow_http = sh->cfg.webhook_allow_http != 0,
				   .allow_private = sh->cfg.webhook_allow_private != 0};
	wg.h = wh_http_start(&c);
	if (!wg.h) {
		snprintf(err, errlen, "the webhook delivery thread could not start");
		return -1;
	}
	wg.started = 1;
	return 0;
}

void webhooks_stop(void)
{
	if (!wg.started)
		return;
	wh_http_stop(wg.h);
	wg.h = NULL;
	wg.started = 0;
}

int webhooks_fd(void) { return wg.started ? wh_http_eventfd(wg.h) : -1; }

static int in_flight(const char *id)
{
	for (unsigned i = 0; i < WHD_INFLIGHT_MAX; i++)
		if (wg.slots[i].used && !strcmp(wg.slots[i].id, id))
			return 1;
	return 0;
}

static int free_slot(void)
{
	for (unsigned i = 0; i < WHD_INFLIGHT_MAX; i++)
		if (!wg.slots[i].used)
			return (int)i;
	return -1;
}

/* ---- fan-out ------------------------------------------------------------------------------ */

struct fan {
	struct shard *sh;
	const struct row *ev;
	uint64_t ev_ms;        /* the event's time (its id's) */
	const char *type;
	char event_id[ID_MAX_LEN];
	char created_at[WHE_TS_MAX];
	int64_t now;
	int failed;
	unsigned rows;
};

static int fan_one(const struct wh_endpoint *e, void *arg)
{
	struct fan *f = arg;
	if (!whe_wants(e, f->type) || f->ev_ms < (uint64_t)e->created_ms)
		return 0; /* an endpoint receives the events made from its creation on */
	struct wh_delivery d;
	memset(&d, 0, sizeof(d));
	row_id(&e->row, d.endpoint, sizeof(d.endpoint));
	memcpy(d.event, f->event_id, sizeof(d.event));
	snprintf(d.event_type, sizeof(d.event_type), "%s", f->type);
	d.status = WHD_PENDING;
	d.next_ms = f->now; /* the first attempt is immediate */
	d.created_ms = f->now;
	memcpy(d.created_at, f->created_at, sizeof(d.created_at));
	char id[WHD_ID_MAX];
	snprintf(id, sizeof(id), "%s.%s", d.endpoint, d.event);
	if (whd_stage(f->sh, id, &d)) {
		f->failed = 1;
		return 1;
	}
	f->rows++;
	return 0;
}

/* An order.* event also goes to the order's other parties (originators,
 * fulfillers: wh_order_parties), each to its own endpoints; what they
 * receive is the participant's view (participant_body). */
static void fan_parties(struct shard *sh, const struct row *r, const char *ent, struct fan *f)
{
	if (strncmp(f->type, "order.", 6))
		return;
	struct json_doc *d = json_parse(r->doc, r->doc_len, NULL, NULL);
	const struct json_value *p = d ? json_get(json_root(d), "payload") : NULL;
	char order[ID_MAX_LEN];
	if (p && !fld_doc_str(p, "order_id", order, sizeof(order)) && order[0]) {
		static char who[WH_ORDER_PARTIES_MAX][ID_MAX_LEN];
		unsigned n = wh_order_parties(sh, order, who, WH_ORDER_PARTIES_MAX);
		for (unsigned i = 0; i < n && !f->failed; i++)
			if (strcmp(who[i], ent) && strcmp(who[i], WHE_PLATFORM))
				whe_each_of_owner(sh, who[i], fan_one, f);
	}
	json_doc_free(d);
}

int whd_stage_cursor_at_end(struct shard *sh)
{
	const struct table *ev = &sh->tables[REC_T_EVENT];
	struct oidx_iter it;
	if (!oidx_seek_le(&ev->by_order, NULL, 0, &it))
		return 0; /* an empty log: the walk starts at its beginning */
	char last[ID_MAX_LEN], doc[ID_MAX_LEN + 48];
	row_id(oidx_iter_val(&it), last, sizeof(last));
	int dl = snprintf(doc, sizeof(doc), "{\"id\":\"%s\",\"after\":\"%s\"}", WHD_CURSOR_ID, last);
	return txn_put(sh, REC_T_WH_CURSOR, WHD_CURSOR_ID, strlen(WHD_CURSOR_ID), doc, (size_t)dl);
}

/* 1 on the catalogue home, where the endpoints are written (a cluster of
 * one is its own home). */
static int whd_home(const struct shard *sh) { return !sh->smap || sh->cfg.shard_id == 0; }

/* The events this shard may fan out now are those made before this time
 * (ms).  The home: all of them (its endpoints and its events are made on
 * one loop).  Another shard: those its replica of the endpoints covers,
 * WHD_SETTLE_MS before the time it is known fresh (repl_fresh_ms), so an
 * event is fanned out only once every endpoint created before it is here;
 * 0 (nothing yet) before the replica first caught up. */
static uint64_t fan_horizon(struct shard *sh)
{
	if (whd_home(sh))
		return UINT64_MAX;
	uint64_t fresh = wh_home_fresh_ms(sh);
	return fresh > WHD_SETTLE_MS ? fresh - WHD_SETTLE_MS : 0;
}

/* Where a walk with no cursor row starts: at the creation of the oldest
 * endpoint (nothing older can be delivered), as an event-id floor. */
static void walk_floor(struct shard *sh, char out[ID_MAX_LEN])
{
	const struct table *t = &sh->tables[REC_T_WH_ENDPOINT];
	struct oidx_iter it;
	int64_t oldest = INT64_MAX;
	if (oidx_seek_ge(&t->by_order, "", 0, &it))
		do {
			const struct wh_endpoint *e = oidx_iter_val(&it);
			if (e->created_ms < oldest)
				oldest = e->created_ms;
		} while (oidx_next(&it));
	id_time_floor("evt", oldest == INT64_MAX || oldest < 0 ? 0 : (uint64_t)oldest, out);
}

/* The first event after the cursor (or from walk_floor): 1 with it, 0 when none. */
static int fan_first(struct shard *sh, struct oidx_iter *it)
{
	const struct table *ev = &sh->tables[REC_T_EVENT];
	const struct wh_cursor *cur =
		(const struct wh_cursor *)table_get(&sh->tables[REC_T_WH_CURSOR], WHD_CURSOR_ID, strlen(WHD_CURSOR_ID));
	if (!cur) {
		char floor[ID_MAX_LEN];
		walk_floor(sh, floor);
		return oidx_seek_ge(&ev->by_order, floor, (uint32_t)strlen(floor), it);
	}
	if (!oidx_seek_ge(&ev->by_order, cur->after, (uint32_t)strlen(cur->after), it))
		return 0;
	const struct row *r = oidx_iter_val(it);
	if (r->id_len == strlen(cur->after) && !memcmp(r->id, cur->after, r->id_len))
		return oidx_next(it);
	return 1;
}

void whd_needed_from(struct shard *sh, char out[ID_MAX_LEN])
{
	out[0] = 0;
	if (table_count(&sh->tables[REC_T_WH_ENDPOINT])) {
		const struct wh_cursor *cur = (const struct wh_cursor *)table_get(&sh->tables[REC_T_WH_CURSOR], WHD_CURSOR_ID,
										  strlen(WHD_CURSOR_ID));
		if (cur) /* every event up to the cursor's is fanned out ('~' sorts after any id character;
			  * fan_first finds its place again without the cursor's own event) */
			snprintf(out, ID_MAX_LEN, "%.*s~", ID_MAX_LEN - 2, cur->after);
		else
			walk_floor(sh, out);
	}
	const struct table *t = &sh->tables[REC_T_WH_DELIVERY];
	struct oidx_iter it;
	if (oidx_seek_ge(table_oidx_ext(t), "", 0, &it))
		do {
			const struct wh_delivery *d = oidx_iter_val(&it);
			if (!out[0] || strcmp(d->event, out) < 0)
				snprintf(out, ID_MAX_LEN, "%s", d->event);
		} while (oidx_next(&it));
}

int whd_prunable(const struct row *r, int64_t before_ms)
{
	const struct wh_delivery *d = (const struct wh_delivery *)r;
	return d->status != WHD_PENDING && d->created_ms < before_ms;
}

/* The time of event r (its id's); UINT64_MAX for an id without one. */
static uint64_t event_ms(const struct row *r)
{
	uint64_t ms;
	return id_time_ms(r->id, r->id_len, &ms) ? UINT64_MAX : ms;
}

/* One transaction: up to WHD_FANOUT_EVENTS events after the cursor and
 * before the horizon, their delivery rows and the cursor moved past them. */
static void fan_out(struct shard *sh)
{
	struct oidx_iter it;
	if (sh->txn_open || !table_count(&sh->tables[REC_T_WH_ENDPOINT]) || !fan_first(sh, &it))
		return; /* nobody to deliver to: no write (see whd_stage_cursor_at_end) */
	uint64_t horizon = fan_horizon(sh);
	if (event_ms(oidx_iter_val(&it)) >= horizon)
		return;
	struct fan f = {.sh = sh, .now = (int64_t)wall_ms()};
	fmt_rfc3339_ms(f.created_at, (unsigned long long)f.now);
	char last[ID_MAX_LEN] = "";
	unsigned n = 0;
	txn_begin(sh);
	do {
		const struct row *r = oidx_iter_val(&it);
		f.ev = r;
		f.ev_ms = event_ms(r);
		if (f.ev_ms >= horizon)
			break;
		f.type = event_type(r);
		row_id(r, f.event_id, sizeof(f.event_id));
		const char *ent = event_entity(r);
		if (ent[0] && strcmp(ent, WHE_PLATFORM))
			whe_each_of_owner(sh, ent, fan_one, &f);
		if (!f.failed)
			whe_each_of_owner(sh, WHE_PLATFORM, fan_one, &f);
		if (!f.failed)
			fan_parties(sh, r, ent, &f);
		if (f.failed)
			break;
		memcpy(last, f.event_id, sizeof(last));
		n++;
	} while (n < WHD_FANOUT_EVENTS && oidx_next(&it));
	char doc[ID_MAX_LEN + 48];
	int dl = snprintf(doc, sizeof(doc), "{\"id\":\"%s\",\"after\":\"%s\"}", WHD_CURSOR_ID, last);
	if (f.failed || !last[0] || txn_put(sh, REC_T_WH_CURSOR, WHD_CURSOR_ID, strlen(WHD_CURSOR_ID), doc, (size_t)dl) ||
	    !txn_commit_quiet(sh)) {
		txn_abort(sh);
		if (f.failed || last[0])
			log_error("msg=\"webhook fan-out could not commit; retried on the next tick\" events=%u", n);
		return;
	}
	wg.fanned += f.rows;
}

/* ---- sending ------------------------------------------------------------------------------ */

/* Stage d (id) as the outcome of one more attempt ending at now. */
static void finish(struct wh_delivery *d, enum whd_status st, int64_t now, long status, const char *err)
{
	d->status = (uint8_t)st;
	fmt_rfc3339_ms(d->last_attempt_at, (unsigned long long)now);
	d->last_status = status;
	snprintf(d->last_error, sizeof(d->last_error), "%s", err ? err : "");
	if (st == WHD_DELIVERED)
		memcpy(d->delivered_at, d->last_attempt_at, sizeof(d->delivered_at));
}

/* What a result does to its endpoint: nothing (e NULL), or its
 * failing-since time set or cleared, and it disabled for `why`. */
struct ep_change {
	const struct wh_endpoint *e;
	int64_t since_ms;
	const char *why;
};

/* The endpoint change after a delivery to e that succeeded (ok) or failed
 * at now: failing since its first failure after the last success; past
 * --webhook-disable-after-days of nothing but failures, disabled ("failing"). */
static struct ep_change health_after(const struct wh_endpoint *e, int ok, int64_t now)
{
	struct ep_change c = {0};
	if (!e || e->status != WHE_ENABLED)
		return c;
	if (ok) {
		if (e->failing_since_ms)
			c = (struct ep_change){.e = e, .since_ms = 0};
	} else if (!e->failing_since_ms) {
		c = (struct ep_change){.e = e, .since_ms = now};
	} else if (now - e->failing_since_ms >= wg.disable_after_ms) {
		c = (struct ep_change){.e = e, .since_ms = e->failing_since_ms, .why = "failing"};
		log_warn("msg=\"a webhook endpoint failed every delivery for too long: disabled; the owner re-enables it "
			 "with PATCH status enabled\" endpoint_id=%.*s failing_since_ms=%lld",
			 (int)e->row.id_len, e->row.id, (long long)e->failing_since_ms);
	}
	return c;
}

static void health_told(void *arg, const struct hc_response *r, const char *err)
{
	(void)arg;
	if (!r || r->status != 200)
		log_warn("msg=\"the home did not take a webhook endpoint's health; the next result tells it again\" "
			 "status=%d error=\"%s\"", r ? r->status : 0, err ? err : "-");
}

/* A shard other than the home holds a replica of the endpoints and never
 * writes one: it tells the home what a result did to the endpoint (which
 * applies it, internal_health) and sees it when the row comes back.
 * Told again by the next result that changes something if lost. */
static void health_tell_home(struct shard *sh, struct ep_change ch)
{
	char body[ID_MAX_LEN + 128];
	snprintf(body, sizeof(body), "{\"endpoint_id\":\"%.*s\",\"failing_since_ms\":%lld,\"disable\":%s%s%s}",
		 (int)ch.e->row.id_len, ch.e->row.id, (long long)ch.since_ms, ch.why ? "\"" : "",
		 ch.why ? ch.why : "null", ch.why ? "\"" : "");
	if (wh_home_call(sh, WHD_HEALTH_PATH, body, health_told, NULL))
		log_warn("msg=\"a webhook endpoint's health could not be sent to the home; the next result tells it "
			 "again\" endpoint_id=%.*s", (int)ch.e->row.id_len, ch.e->row.id);
}

/* Commit a single delivery's new state (and its endpoint's change: here
 * on the home, told to the home elsewhere). */
static void commit_one(struct shard *sh, const char *id, const struct wh_delivery *d, struct ep_change ch)
{
	if (ch.e && !whd_home(sh)) {
		health_tell_home(sh, ch);
		ch.e = NULL;
	}
	txn_begin(sh);
	if (whd_stage(sh, id, d) || (ch.e && whe_stage_health(sh, ch.e, ch.since_ms, ch.why)) || !txn_commit_quiet(sh)) {
		txn_abort(sh);
		log_error("msg=\"webhook delivery state could not commit\" delivery_id=%s", id);
	}
}

/* The members of an order event's payload an order's other parties (its
 * originators and fulfillers) receive: what happened to which order and
 * leg, never money or the consumer -- the order views' rule (an
 * originator never sees the consumer price or e-mail). */
static const char *const participant_payload[] = {"order_id", "status", "seller_id", "destination_country",
						  "occurred_at", NULL};
static const char *const participant_detail[] = {"leg_id", "leg_status", NULL};

/* Write the members of obj listed in keep (into an open object). */
static void kept_members(struct jw *w, const struct json_value *obj, const char *const *keep)
{
	for (uint32_t i = 0; obj && obj->type == JSON_OBJECT && i < obj->len; i++)
		for (unsigned k = 0; keep[k]; k++)
			if (!strcmp(obj->u.members[i].key, keep[k])) {
				jw_keyn(w, obj->u.members[i].key, obj->u.members[i].key_len);
				jw_value(w, &obj->u.members[i].value);
			}
}

/* The event document ev as an order's other party receives it, into out:
 * the event's own members, its payload cut to participant_payload (and
 * its detail to participant_detail when it names a leg).  0 or -1. */
static int participant_body(const struct row *ev, struct buf *out)
{
	struct json_doc *d = json_parse(ev->doc, ev->doc_len, NULL, NULL);
	if (!d)
		return -1;
	const struct json_value *root = json_root(d);
	struct jw w;
	jw_init(&w, out);
	jw_obj_begin(&w);
	for (uint32_t i = 0; root->type == JSON_OBJECT && i < root->len; i++) {
		const struct json_member *m = &root->u.members[i];
		jw_keyn(&w, m->key, m->key_len);
		if (strcmp(m->key, "payload")) {
			jw_value(&w, &m->value);
			continue;
		}
		jw_obj_begin(&w);
		kept_members(&w, &m->value, participant_payload);
		const struct json_value *det = json_get(&m->value, "detail");
		if (det && det->type == JSON_OBJECT && json_get(det, "leg_id")) {
			jw_key(&w, "detail");
			jw_obj_begin(&w);
			kept_members(&w, det, participant_detail);
			jw_obj_end(&w);
		}
		jw_obj_end(&w);
	}
	jw_obj_end(&w);
	int rc = w.err ? -1 : 0;
	json_doc_free(d);
	return rc;
}

/* Hand d to the thread: 0, or -1 (nothing to send now). */
static int submit(struct shard *sh, const struct wh_delivery *d, const struct wh_endpoint *e, int64_t now)
{
	const struct row *ev = table_get(&sh->tables[REC_T_EVENT], d->event, strlen(d->event));
	char id[WHD_ID_MAX];
	row_id(&d->row, id, sizeof(id));
	if (!ev) {
		struct wh_delivery n = *d;
		finish(&n, WHD_DEAD, now, 0, "the event is no longer in the log");
		commit_one(sh, id, &n, (struct ep_change){0});
		wg.dead++;
		return -1;
	}
#ifdef WM_TESTING
	/* Test builds talk to 127.0.0.0/8 only (the project's network rule):
	 * a delivery anywhere else -- a test's https://hooks.example.com -- is
	 * dead at once, before any name is resolved or packet sent. */
	const char *host = strstr(e->url, "://");
	if (!host || strncmp(host + 3, "127.", 4)) {
		struct wh_delivery n = *d;
		finish(&n, WHD_DEAD, now, 0, "test build: a destination outside 127.0.0.0/8 is never contacted");
		commit_one(sh, id, &n, (struct ep_change){0});
		wg.dead++;
		return -1;
	}
#endif
	int s = free_slot();
	if (s < 0)
		return -1;
	/* the event's own entity and the platform get the event as the log
	 * has it; an order's other parties their view of it */
	const char *ent = event_entity(ev);
	struct buf part;
	buf_init(&part, REC_MAX_VAL);
	const char *body = ev->doc;
	size_t body_len = ev->doc_len;
	if (strcmp(e->owner, WHE_PLATFORM) && strcmp(e->owner, ent)) {
		if (participant_body(ev, &part)) {
			buf_free(&part);
			log_error("msg=\"a participant's view of an event could not be written\" delivery_id=%s", id);
			return -1;
		}
		body = part.data;
		body_len = part.len;
	}
	struct wh_secret secrets[WH_SIGN_MAX_SECRETS];
	size_t ns = whe_signing_secrets(sh, e, now, secrets);
	if (!ns) {
		buf_free(&part);
		struct wh_delivery n = *d;
		finish(&n, WHD_DEAD, now, 0, "the endpoint's secret cannot be opened: rotate it");
		commit_one(sh, id, &n, (struct ep_change){0});
		wg.dead++;
		log_error("msg=\"a webhook endpoint's secret does not open with this deployment's key (was "
			  "consumer-token.key replaced?); its owner must rotate the secret\" endpoint_id=%s", d->endpoint);
		return -1;
	}
	struct wh_signed_headers sh_hdr;
	int signed_rc = wh_sign_headers(secrets, ns, d->event, strlen(d->event), now / 1000, body, body_len, &sh_hdr);
	OPENSSL_cleanse(secrets, sizeof(secrets));
	if (signed_rc) {
		buf_free(&part);
		log_error("msg=\"webhook could not be signed\" delivery_id=%s", id);
		return -1;
	}
	const char *hdrs[] = {sh_hdr.id, sh_hdr.timestamp, sh_hdr.signature, "Content-Type: application/json",
			      "User-Agent: wm-webhooks/1"};
	struct wh_http_request rq = {.tag = (uint64_t)s,
				     .url = e->url,
				     .headers = hdrs,
				     .n_headers = sizeof(hdrs) / sizeof(hdrs[0]),
				     .body = body,
				     .body_len = body_len,
				     .connect_timeout_ms = WHD_CONNECT_TIMEOUT_MS < wg.timeout_ms ? WHD_CONNECT_TIMEOUT_MS
												  : wg.timeout_ms,
				     .timeout_ms = wg.timeout_ms};
	int rc = wh_http_submit(wg.h, &rq); /* copies the body */
	buf_free(&part);
	if (rc)
		return -1;
	wg.slots[s].used = 1;
	memcpy(wg.slots[s].id, id, sizeof(id));
	wg.attempts++;
	return 0;
}

/* Due pending deliveries to the thread, oldest due first. */
static void feed(struct shard *sh)
{
	if (sh->txn_open)
		return;
	struct table *t = &sh->tables[REC_T_WH_DELIVERY];
	int64_t now = (int64_t)wall_ms();
	struct oidx_iter it;
	if (!oidx_seek_ge(table_oidx_ext(t), "", 0, &it))
		return;
	char gone[WHD_ID_MAX] = "";
	unsigned scanned = 0;
	do {
		const struct wh_delivery *d = oidx_iter_val(&it);
		if (d->next_ms > now || free_slot() < 0)
			break;
		char id[WHD_ID_MAX];
		row_id(&d->row, id, sizeof(id));
		if (in_flight(id))
			continue;
		const struct wh_endpoint *e = whe_get(sh, d->endpoint, strlen(d->endpoint));
		if (!e) {
			memcpy(gone, id, sizeof(gone)); /* deleted endpoint: drop it after the walk */
			break;
		}
		if (e->status != WHE_ENABLED)
			continue;
		if (submit(sh, d, e, now))
			break; /* the walk may have changed the index (a dead event): next poll */
	} while (++scanned < WHD_SCAN_MAX && oidx_next(&it));
	if (gone[0]) {
		txn_begin(sh);
		if (txn_del(sh, REC_T_WH_DELIVERY, gone, strlen(gone)) || !txn_commit_quiet(sh))
			txn_abort(sh);
	}
}

static void count_failure(const struct wh_http_result *r)
{
	if (!r->transport_ok)
		wg.fail_transport++;
	else if (r->status == 410)
		wg.fail_gone++;
	else if (r->status >= 400 && r->status < 500)
		wg.fail_4xx++;
	else if (r->status >= 500 && r->status < 600)
		wg.fail_5xx++;
	else
		wg.fail_other++;
}

/* Store what the thread finished: one transaction per result. */
static void collect(struct shard *sh)
{
	struct wh_http_result res[16];
	size_t n;
	while (!sh->txn_open && (n = wh_http_take(wg.h, res, sizeof(res) / sizeof(res[0]))) > 0) {
		for (size_t i = 0; i < n; i++) {
			const struct wh_http_result *r = &res[i];
			if (r->tag >= WHD_INFLIGHT_MAX || !wg.slots[r->tag].used)
				continue;
			struct slot *s = &wg.slots[r->tag];
			s->used = 0;
			const struct wh_delivery *d = (const struct wh_delivery *)table_get(
				&sh->tables[REC_T_WH_DELIVERY], s->id, strlen(s->id));
			if (!d || d->status != WHD_PENDING)
				continue; /* deleted or replayed meanwhile */
			int64_t now = (int64_t)wall_ms();
			struct wh_delivery nd = *d;
			nd.attempts = d->attempts + 1;
			int64_t at = now;
			enum wh_next nx = wh_after_attempt(r->cls, nd.attempts, now, next_rnd(),
							   (int64_t)r->retry_after_s * 1000, &at);
			char err[WHD_ERR_MAX];
			if (r->transport_ok)
				snprintf(err, sizeof(err), "HTTP %ld", r->status);
			else
				snprintf(err, sizeof(err), "%.150s", r->error[0] ? r->error : "no answer");
			const struct wh_endpoint *ep = whe_get(sh, d->endpoint, strlen(d->endpoint));
			struct ep_change ch = health_after(ep, nx == WH_NEXT_DONE, now);
			switch (nx) {
			case WH_NEXT_DONE:
				finish(&nd, WHD_DELIVERED, now, r->status, NULL);
				wg.delivered++;
				break;
			case WH_NEXT_DISABLE:
				count_failure(r);
				finish(&nd, WHD_DEAD, now, r->status, "410 Gone: the endpoint was disabled");
				if (ep && ep->status == WHE_ENABLED)
					ch = (struct ep_change){.e = ep, .since_ms = ep->failing_since_ms, .why = "gone"};
				wg.dead++;
				break;
			case WH_NEXT_RETRY:
				count_failure(r);
#ifdef WM_TESTING
				if (wg.retry_max_ms > 0 && at - now > wg.retry_max_ms)
					at = now + wg.retry_max_ms;
#endif
				finish(&nd, WHD_PENDING, now, r->transport_ok ? r->status : 0, err);
				nd.next_ms = at;
				break;
			case WH_NEXT_DEAD:
			default:
				count_failure(r);
				finish(&nd, WHD_DEAD, now, r->transport_ok ? r->status : 0, err);
				wg.dead++;
				break;
			}
			commit_one(sh, s->id, &nd, ch);
		}
	}
}

void webhooks_poll(struct shard *sh)
{
	if (!wg.started)
		return;
	collect(sh);
	fan_out(sh);
	feed(sh);
}

/* ---- /metrics ------------------------------------------------------------------------------- */

struct ep_stat {
	char id[ID_MAX_LEN];
	uint64_t pending;
	int64_t oldest_ms;
};

static int by_depth(const void *a, const void *b)
{
	const struct ep_stat *x = a, *y = b;
	return x->pending < y->pending ? 1 : x->pending > y->pending ? -1 : strcmp(x->id, y->id);
}

/* An operator's gauges, not partner data: the walk of the pending index
 * must not make /metrics wait for the newest state's fsync (table.h, the
 * read set; engine/stock/txn_part.c does the same). */
static void endpoint_metrics(struct shard *sh, struct buf *o);

void webhooks_metrics(struct shard *sh, struct buf *o)
{
	const uint64_t probes = idx_probes;
	endpoint_metrics(sh, o);
	idx_probes = probes;
}

static void endpoint_metrics(struct shard *sh, struct buf *o)
{
	buf_puts(o, "# TYPE wm_webhook_attempts_total counter\n# TYPE wm_webhook_delivered_total counter\n"
		    "# TYPE wm_webhook_dead_total counter\n# TYPE wm_webhook_fanned_out_total counter\n"
		    "# TYPE wm_webhook_failures_total counter\n# TYPE wm_webhook_pending gauge\n"
		    "# TYPE wm_webhook_endpoint_pending gauge\n# TYPE wm_webhook_endpoint_oldest_pending_seconds gauge\n");
	buf_printf(o, "wm_webhook_attempts_total %llu\n", (unsigned long long)wg.attempts);
	buf_printf(o, "wm_webhook_delivered_total %llu\n", (unsigned long long)wg.delivered);
	buf_printf(o, "wm_webhook_dead_total %llu\n", (unsigned long long)wg.dead);
	buf_printf(o, "wm_webhook_fanned_out_total %llu\n", (unsigned long long)wg.fanned);
	static const char *const cls[] = {"transport", "status_4xx", "status_5xx", "status_other", "gone"};
	const uint64_t *cnt[] = {&wg.fail_transport, &wg.fail_4xx, &wg.fail_5xx, &wg.fail_other, &wg.fail_gone};
	for (unsigned i = 0; i < 5; i++)
		buf_printf(o, "wm_webhook_failures_total{class=\"%s\"} %llu\n", cls[i], (unsigned long long)*cnt[i]);
	const struct table *t = &sh->tables[REC_T_WH_DELIVERY];
	buf_printf(o, "wm_webhook_pending %zu\n", oidx_count(table_oidx_ext(t)));
	struct ep_stat *st = calloc(WHD_METRICS_DISTINCT + 1, sizeof(*st));
	if (!st)
		return;
	unsigned n = 0;
	struct ep_stat other = {.id = "other"};
	struct oidx_iter it;
	int64_t now = (int64_t)wall_ms();
	if (oidx_seek_ge(table_oidx_ext(t), "", 0, &it)) {
		do {
			const struct wh_delivery *d = oidx_iter_val(&it);
			struct ep_stat *e = NULL;
			for (unsigned i = 0; i < n && !e; i++)
				if (!strcmp(st[i].id, d->endpoint))
					e = &st[i];
			if (!e && n < WHD_METRICS_DISTINCT) {
				e = &st[n++];
				memcpy(e->id, d->endpoint, sizeof(e->id));
				e->oldest_ms = d->created_ms;
			}
			if (!e)
				e = &other;
			e->pending++;
			if (!e->oldest_ms || d->created_ms < e->oldest_ms)
				e->oldest_ms = d->created_ms;
		} while (oidx_next(&it));
	}
	qsort(st, n, sizeof(*st), by_depth);
	for (unsigned i = WHD_METRICS_ENDPOINTS; i < n; i++) {
		other.pending += st[i].pending;
		if (!other.oldest_ms || st[i].oldest_ms < other.oldest_ms)
			other.oldest_ms = st[i].oldest_ms;
	}
	unsigned shown = n < WHD_METRICS_ENDPOINTS ? n : WHD_METRICS_ENDPOINTS;
	for (unsigned i = 0; i <= shown; i++) {
		const struct ep_stat *e = i < shown ? &st[i] : &other;
		if (i == shown && !other.pending)
			break;
		buf_printf(o, "wm_webhook_endpoint_pending{endpoint=\"%s\"} %llu\n", e->id,
			   (unsigned long long)e->pending);
		buf_printf(o, "wm_webhook_endpoint_oldest_pending_seconds{endpoint=\"%s\"} %lld\n", e->id,
			   (long long)(now > e->oldest_ms ? (now - e->oldest_ms) / 1000 : 0));
	}
	free(st);
}

/* ---- the dead-letter queue ------------------------------------------------------------------ */

static int is_dead(struct api_ctx *c, const struct row *r, void *arg)
{
	(void)c;
	(void)arg;
	return ((const struct wh_delivery *)r)->status == WHD_DEAD;
}

/* The endpoint's deliveries are the id range "<endpoint id>." of the
 * table, in event order. */
static void dead_letters_list(struct api_ctx *c)
{
	char id[ID_MAX_LEN];
	if (!whe_visible(c, id))
		return;
	struct api_page pg;
	if (api_page_parse(c, &pg))
		return;
	char prefix[ID_MAX_LEN + 1];
	int pl = snprintf(prefix, sizeof(prefix), "%s.", id);
	api_list(c, &c->sh->tables[REC_T_WH_DELIVERY].by_order, prefix, (uint32_t)pl, &pg, is_dead, NULL, NULL);
}

static int has_status(struct api_ctx *c, const struct row *r, void *arg)
{
	(void)c;
	return ((const struct wh_delivery *)r)->status == *(const int *)arg;
}

/* GET /v1/webhook-endpoints/{id}/deliveries[?status=pending|delivered|dead]:
 * the endpoint's deliveries in event order, every state (the portal's
 * "recent deliveries"; a delivered row is kept until retention prunes it). */
static void deliveries_list(struct api_ctx *c)
{
	char id[ID_MAX_LEN];
	if (!whe_visible(c, id))
		return;
	struct api_page pg;
	int st;
	if (api_page_parse(c, &pg) || api_query_enum(c, "status", whd_status_names, &st))
		return;
	char prefix[ID_MAX_LEN + 1];
	int pl = snprintf(prefix, sizeof(prefix), "%s.", id);
	api_list(c, &c->sh->tables[REC_T_WH_DELIVERY].by_order, prefix, (uint32_t)pl, &pg, st < 0 ? NULL : has_status,
		 &st, NULL);
}

static const char *const replay_known[] = {"delivery_id", "from", "to", NULL};

static void back_to_pending(struct wh_delivery *d, int64_t now)
{
	d->status = WHD_PENDING;
	d->attempts = 0;
	d->next_ms = now;
	d->last_error[0] = 0;
}

static void replay(struct api_ctx *c)
{
	char eid[ID_MAX_LEN];
	if (!whe_visible(c, eid))
		return;
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	fld_reject_unknown(c, body, replay_known, NULL);
	char did[WHD_ID_MAX], from[WHE_TS_MAX], to[WHE_TS_MAX];
	int rd = fld_str(c, body, "delivery_id", NULL, did, sizeof(did) - 1);
	int rf = fld_str(c, body, "from", NULL, from, sizeof(from) - 1);
	int rt = fld_str(c, body, "to", NULL, to, sizeof(to) - 1);
	long long from_ms = 0, to_ms = 0;
	int by_id = rd == FLD_SET, by_range = rf == FLD_SET || rt == FLD_SET;
	if (by_id && by_range)
		api_field_error(c, "delivery_id", "exclusive", "either delivery_id or from/to, not both");
	else if (!by_id && !by_range && !c->n_errs)
		api_field_error(c, "delivery_id", "required", "delivery_id, or from and to");
	if (by_range) {
		if (rf != FLD_SET || parse_rfc3339_ms(from, strlen(from), &from_ms))
			api_field_error(c, "from", "format", "an RFC 3339 time is required with to");
		if (rt != FLD_SET || parse_rfc3339_ms(to, strlen(to), &to_ms))
			api_field_error(c, "to", "format", "an RFC 3339 time is required with from");
		else if (rf == FLD_SET && to_ms <= from_ms)
			api_field_error(c, "to", "range", "must be after from");
	}
	if (c->n_errs) {
		api_validation_failed(c);
		return;
	}
	struct table *t = &c->sh->tables[REC_T_WH_DELIVERY];
	int64_t now = (int64_t)wall_ms();
	unsigned n = 0;
	int more = 0;
	txn_begin(c->sh);
	int failed = 0;
	if (by_id) {
		const struct wh_delivery *d = (const struct wh_delivery *)table_get(t, did, strlen(did));
		if (!d || strcmp(d->endpoint, eid)) {
			txn_abort(c->sh);
			api_error(c, 404, "not_found", "no delivery with this id at this endpoint");
			return;
		}
		if (d->status != WHD_DEAD) {
			txn_abort(c->sh);
			api_error(c, 409, "not_dead", "only a dead delivery (in the dead-letter queue) can be replayed");
			return;
		}
		struct wh_delivery nd = *d;
		back_to_pending(&nd, now);
		failed = whd_stage(c->sh, did, &nd);
		n = 1;
	} else {
		char prefix[ID_MAX_LEN + 1];
		int pl = snprintf(prefix, sizeof(prefix), "%s.", eid);
		struct oidx_iter it;
		if (oidx_seek_ge(&t->by_order, prefix, (uint32_t)pl, &it)) {
			do {
				uint32_t kl;
				const uint8_t *k = oidx_iter_key(&it, &kl);
				if (kl < (uint32_t)pl || memcmp(k, prefix, (size_t)pl))
					break;
				const struct wh_delivery *d = oidx_iter_val(&it);
				if (d->status != WHD_DEAD || d->created_ms < from_ms || d->created_ms >= to_ms)
					continue;
				if (n == WHD_REPLAY_MAX) {
					more = 1;
					break;
				}
				struct wh_delivery nd = *d;
				back_to_pending(&nd, now);
				char id[WHD_ID_MAX];
				row_id(&d->row, id, sizeof(id));
				if (whd_stage(c->sh, id, &nd)) {
					failed = 1;
					break;
				}
				n++;
			} while (oidx_next(&it));
		}
	}
	if (failed || (n && !txn_commit(c->sh))) {
		txn_abort(c->sh);
		api_error(c, 500, "commit_failed", "the replay could not be stored");
		return;
	}
	if (!n)
		txn_abort(c->sh);
	char doc[96];
	int dl = snprintf(doc, sizeof(doc), "{\"endpoint_id\":\"%s\",\"replayed\":%u,\"has_more\":%s}", eid, n,
			  more ? "true" : "false");
	api_send_doc(c, 200, doc, (size_t)dl);
}

const struct route webhook_dlq_routes[] = {
	{HTTP_M_GET, "/v1/webhook-endpoints/{id}/dead-letters", dead_letters_list, SC_READ_WEBHOOKS,
	 ACT_MANAGE_WEBHOOKS, "List an endpoint's dead deliveries (the dead-letter queue)", 0},
	{HTTP_M_GET, "/v1/webhook-endpoints/{id}/deliveries", deliveries_list, SC_READ_WEBHOOKS, ACT_MANAGE_WEBHOOKS,
	 "List an endpoint's deliveries (every state, or ?status=)", 0},
	{HTTP_M_POST, "/v1/webhook-endpoints/{id}/replay", replay, SC_WRITE_WEBHOOKS, ACT_MANAGE_WEBHOOKS,
	 "Put dead deliveries back to pending (one, or a time range)", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};

/* ---- an endpoint's health told by another shard (the home only) ----------------------------- */

static const char *const disable_reasons[] = {"gone", "failing", NULL};

/* POST /internal/webhooks/health {"endpoint_id", "failing_since_ms",
 * "disable": null|"gone"|"failing"} from a shard that delivered to the
 * endpoint (health_tell_home).  Applied as the home applies its own
 * results: the earliest failing-since is kept, a success clears it, a
 * disable disables an enabled endpoint once.  200 {"changed": bool}; 404
 * for an unknown endpoint; 422 for a malformed body; 421 off the home. */
static void internal_health(struct api_ctx *c)
{
	if (!whd_home(c->sh)) {
		api_error(c, 421, "not_home", "endpoints are written on the catalogue home");
		return;
	}
	const struct json_value *b = api_body(c);
	if (!b)
		return;
	char id[ID_MAX_LEN];
	int64_t since = -1;
	const struct json_value *ds = json_get(b, "disable");
	const char *why = NULL;
	for (unsigned i = 0; ds && ds->type == JSON_STRING && disable_reasons[i]; i++)
		if (!strcmp(ds->u.str, disable_reasons[i]))
			why = disable_reasons[i];
	if (fld_doc_str(b, "endpoint_id", id, sizeof(id)) || !id[0] || doc_int(b, "failing_since_ms", &since) ||
	    since < 0 || !ds || (ds->type != JSON_NULL && !why)) {
		api_error(c, 422, "validation_failed", "endpoint_id, failing_since_ms >= 0 and disable are required");
		return;
	}
	const struct wh_endpoint *e = whe_get(c->sh, id, strlen(id));
	if (!e) {
		api_error(c, 404, "not_found", "no such endpoint");
		return;
	}
	struct ep_change ch = {0};
	if (e->status == WHE_ENABLED) {
		if (why)
			ch = (struct ep_change){.e = e, .since_ms = e->failing_since_ms ? e->failing_since_ms : since, .why = why};
		else if (!since && e->failing_since_ms)
			ch = (struct ep_change){.e = e, .since_ms = 0};
		else if (since && !e->failing_since_ms)
			ch = (struct ep_change){.e = e, .since_ms = since};
	}
	if (ch.e) {
		txn_begin(c->sh);
		if (whe_stage_health(c->sh, ch.e, ch.since_ms, ch.why) || !txn_commit(c->sh)) {
			txn_abort(c->sh);
			api_error(c, 500, "commit_failed", "the endpoint's health could not be stored");
			return;
		}
		if (why)
			log_warn("msg=\"a webhook endpoint is disabled on another shard's results\" endpoint_id=%s reason=%s",
				 id, why);
	}
	const char *doc = ch.e ? "{\"changed\":true}" : "{\"changed\":false}";
	api_send_doc(c, 200, doc, strlen(doc));
}

const struct route webhook_internal_routes[] = {
	{HTTP_M_POST, WHD_HEALTH_PATH, internal_health, SC_PUBLIC, ACT_NONE,
	 "A webhook endpoint's health as another shard's deliveries found it", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
