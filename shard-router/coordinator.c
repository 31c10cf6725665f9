/*
 * coordinator.c -- the router as the coordinator of cross-shard orders
 * (contract in coordinator.h; DESIGN.md sections 5 and 9).
 *
 * Why each step sits where it is:
 *  - PREPARE first and in parallel: stock is the scarce thing; a short leg
 *    stops the order before anyone is charged, and the participants'
 *    forced PREPARED holds are what lets them promise.
 *  - The charge after every yes vote and before the decision: a declined
 *    card aborts like a short leg, and the COMMIT record then means "the
 *    consumer paid and every unit is held" -- nothing after it can fail
 *    for a business reason, so the steps after it only go forward.
 *  - COMMIT forced in the decision log (decision_log.h) before any
 *    participant hears it: a router that crashes after telling one of them
 *    re-drives the rest from its log.  Presumed abort: nothing is written
 *    for an abort, and a participant that asks about a transaction the log
 *    does not know, while it is not in progress here, is told to abort.
 *  - The destination commits first (order.confirmed, order.sourced), then
 *    the participants (stock.reserved), then the destination rests the
 *    order at reserved: the spec's event order.
 *  - END only once every participant acknowledged; lazily.
 *
 * Ownership: a struct ctxn per transaction, in the active table until it is
 * done; it holds the client's request (struct fwd, owned by router.c) when
 * there is one -- none when re-driving after a restart -- and answers it
 * once (the host's finish).  The router is reached only through struct
 * coord_host (calls to shards, answers), so this file includes nothing of
 * router.c's and router.c includes it.
 */
#include "shard-router/coordinator.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "engine/base/log.h"
#include "engine/cluster/internal_headers.h"
#include "net/json.h"
#include "net/problem.h"
#include "wal/errinj.h"
#include "engine/cluster/shard_map.h"
#include "shard-router/decision_log.h"

#define COORD_MAX_PARTS 16 /* shards in one transaction (DLOG_MAX_PARTICIPANTS) */
#define COORD_MAX_LEGS 32  /* legs of one order (ORDER_MAX_LEGS) */
#define COORD_BODY_MAX 8192

enum ctxn_phase { CP_PREPARE, CP_REPLAN_RELEASE, CP_REPLAN, CP_CHARGE, CP_DECIDE, CP_COMMIT_DEST, CP_COMMIT_PARTS,
		  CP_REST, CP_ABORT_PARTS, CP_ABORT_DEST, CP_DONE };

#define COORD_SHORT_MAX 2048 /* the no votes' reported levels ({"level_id","atp"} items) */

struct cpart {
	struct ctxn *t;
	uint32_t shard;
	char body[COORD_BODY_MAX];   /* the PREPARE body */
	int yes, acked;
};

struct ctxn {
	struct coord *co;
	struct fwd *f;               /* the client's request, NULL when re-driving */
	char txn[DLOG_TXN_ID_MAX + 1];
	char order[64];
	uint32_t dest;
	enum ctxn_phase phase;
	struct cpart parts[COORD_MAX_PARTS];
	unsigned n_parts;
	unsigned pending;
	int abort_reason_stock;      /* a no vote (else a failure: interrupted) */
	int replanned;               /* the destination re-planned once (DESIGN.md 9 step 2) */
	int release_failed;          /* a participant did not confirm giving the first plan's holds back */
	char shortv[COORD_SHORT_MAX];/* the no votes' true ATP, JSON items for the re-plan */
	size_t short_len;
	uint64_t retry_at_ms;
	uint64_t started_ms;
};

struct coord {
	struct coord_host h;         /* the router's side (coordinator.h) */
	struct dlog *log;
	struct ev_handle log_h;
	char header[64];
	struct ctxn *active[COORD_MAX_ACTIVE];
	unsigned n_active;
	uint64_t next_prune_ms;
	uint64_t commits, aborts, redriven, replans;
};

static uint64_t now_ms(const struct coord *co) { return ev_now_ms(co->h.loop); }

/* Test builds: die here (WM_ERRINJ names the point) -- every step of the
 * protocol has one, and recovery must finish or undo what was begun. */
static void crash_point(const struct ctxn *t, const char *name)
{
	(void)t;
	if (!ERRINJ(name))
		return;
	log_warn("msg=\"fault injection: crash\" point=%s txn=%s", name, t->txn);
	_exit(137);
}

/* Test builds: the whole router stalls here for COORD_TEST_STALL_MS (WM_ERRINJ
 * names the point; the log line says when): a window in which a test cuts
 * a link at exactly that step of the protocol. */
static void stall_point(const struct ctxn *t, const char *name)
{
	if (!ERRINJ(name))
		return;
	log_warn("msg=\"fault injection: stall\" point=%s txn=%s ms=%u", name, t->txn, COORD_TEST_STALL_MS);
	usleep(COORD_TEST_STALL_MS * 1000u);
}

const char *coord_header(const struct coord *co) { return co ? co->header : ""; }

/* ---- the active table -------------------------------------------------------- */

static struct ctxn *find(struct coord *co, const char *txn)
{
	for (unsigned i = 0; i < co->n_active; i++)
		if (!strcmp(co->active[i]->txn, txn))
			return co->active[i];
	return NULL;
}

static void done(struct ctxn *t)
{
	struct coord *co = t->co;
	for (unsigned i = 0; i < co->n_active; i++)
		if (co->active[i] == t) {
			co->active[i] = co->active[--co->n_active];
			break;
		}
	free(t);
}

/* ---- calls --------------------------------------------------------------------- */

static void step(struct ctxn *t);

/* Answer the client (if there is one) with a problem. */
static void answer_problem(struct ctxn *t, int status, const char *code, const char *detail)
{
	if (!t->f)
		return;
	struct srv_response rs = {0};
	buf_init(&rs.headers, 0);
	buf_init(&rs.body, 0);
	rs.status = status;
	rs.content_type = PROBLEM_CONTENT_TYPE;
	problem_write(&rs.body, status, code, http_reason(status), detail);
	if (status == 503 || status == 504)
		buf_puts(&rs.headers, "Retry-After: 1\r\n");
	buf_printf(&rs.headers, "Location: /v1/orders/%s\r\n", t->order);
	t->co->h.finish(t->f, &rs);
	t->f = NULL;
	buf_free(&rs.headers);
	buf_free(&rs.body);
}

/* Relay a destination's answer (rest or abort) to the client. */
static void answer_relay(struct ctxn *t, const struct hc_response *a)
{
	if (!t->f)
		return;
	struct srv_response rs = {0};
	buf_init(&rs.headers, 0);
	buf_init(&rs.body, 0);
	char ctype[128];
	t->co->h.relay(&rs, a, ctype, sizeof(ctype));
	t->co->h.finish(t->f, &rs);
	t->f = NULL;
	buf_free(&rs.headers);
	buf_free(&rs.body);
}

/* May the current phase's calls share a connection with others (client.h:
 * pipelining)?  The steps a shard answers from its own tables as soon as
 * their WAL transaction is durable: PREPARE, the commits, the rest.  Not the
 * charge or an abort (a refund): those wait for the payment provider, and
 * the calls behind them on a connection would wait as long.  A pipelined
 * step that fails with a companion's connection is what any failed call
 * is: an abort before the decision, a retry after it. */
static int phase_pipelined(enum ctxn_phase ph)
{
	return ph == CP_PREPARE || ph == CP_COMMIT_DEST || ph == CP_COMMIT_PARTS || ph == CP_REST;
}

/* One internal call of the protocol; the principal goes with the calls
 * whose answer the client sees. */
static int call(struct ctxn *t, uint32_t shard, const char *path, const char *body, int with_principal,
		hc_done_fn fn, void *arg)
{
	size_t plen = 0;
	const char *who = with_principal && t->f ? t->co->h.principal(t->f, &plen) : NULL;
	if (t->co->h.call(t->co->h.router, shard, "POST", path, body, strlen(body), who, plen, COORD_CALL_TIMEOUT_MS,
			  phase_pipelined(t->phase), fn, arg))
		return -1;
	t->pending++;
	return 0;
}

/* ---- before the decision ------------------------------------------------------- */

static void on_abort_dest(void *arg, const struct hc_response *a, const char *err)
{
	struct ctxn *t = arg;
	t->pending--;
	if (a && (a->status == 201 || a->status == 402 || a->status == 409 || a->status == 502 || a->status == 503 ||
		  a->status == 504 || a->status == 500))
		answer_relay(t, a);
	else
		answer_problem(t, 503, "order_aborted",
			       "the order could not be completed across shards; it was rolled back");
	if (!a)
		log_warn("msg=\"abort at the destination failed; its own recovery fails the order\" txn=%s error=\"%s\"",
			 t->txn, err ? err : "-");
	t->co->aborts++;
	t->phase = CP_DONE;
	done(t);
}

static void on_abort_part(void *arg, const struct hc_response *a, const char *err)
{
	struct cpart *p = arg;
	struct ctxn *t = p->t;
	t->pending--;
	if (!a || a->status != 200)
		log_warn("msg=\"a participant did not confirm the abort; it releases on its own time-out\" txn=%s "
			 "shard=%u error=\"%s\"", t->txn, p->shard, err ? err : "-");
	if (!t->pending) {
		t->phase = CP_ABORT_DEST;
		step(t);
	}
}

static void abort_txn(struct ctxn *t)
{
	t->phase = CP_ABORT_PARTS;
	char body[128];
	snprintf(body, sizeof(body), "{\"txn\":\"%s\"}", t->txn);
	for (unsigned i = 0; i < t->n_parts; i++)
		call(t, t->parts[i].shard, "/internal/txn/abort", body, 0, on_abort_part, &t->parts[i]);
	if (!t->pending) {
		t->phase = CP_ABORT_DEST;
		step(t);
	}
}

/* Keep what a no vote reported ({"short":[{"level_id","atp"}]}) for the
 * re-plan; items that do not fit are dropped (the re-plan then sees the
 * replica's figure for them). */
static void note_short(struct ctxn *t, const struct hc_response *a)
{
	struct json_doc *d = json_parse(a->body, a->body_len, NULL, NULL);
	const struct json_value *sh = d ? json_get(json_root(d), "short") : NULL;
	for (uint32_t i = 0; sh && sh->type == JSON_ARRAY && i < sh->len; i++) {
		const struct json_value *lv = json_get(&sh->u.items[i], "level_id");
		const struct json_value *atp = json_get(&sh->u.items[i], "atp");
		int64_t n;
		if (!lv || lv->type != JSON_STRING || lv->len > 60 || !atp || json_to_int64(atp, &n) || n < 0)
			continue;
		for (uint32_t k = 0; k < lv->len; k++)
			if (lv->u.str[k] == '"' || lv->u.str[k] == '\\' || (unsigned char)lv->u.str[k] < 0x20)
				goto next;
		size_t room = sizeof(t->shortv) - t->short_len;
		int w = snprintf(t->shortv + t->short_len, room, "%s{\"level_id\":\"%s\",\"atp\":%lld}",
				 t->short_len ? "," : "", lv->u.str, (long long)n);
		if (w > 0 && (size_t)w < room)
			t->short_len += (size_t)w;
		else
			t->shortv[t->short_len] = 0;
	next:;
	}
	json_doc_free(d);
}

/* ---- the one re-plan (DESIGN.md 9 step 2) ---------------------------------------- */

/* Every participant answered the release: re-plan only when each confirmed
 * it -- a first-plan hold still PREPARED somewhere would be committed with
 * the new plan's (COMMIT takes every live hold of the transaction), so
 * without that certainty the order aborts instead. */
static void replan_or_abort(struct ctxn *t)
{
	if (t->release_failed) {
		abort_txn(t);
		return;
	}
	t->phase = CP_REPLAN;
	step(t);
}

static void on_replan_release(void *arg, const struct hc_response *a, const char *err)
{
	struct cpart *p = arg;
	struct ctxn *t = p->t;
	t->pending--;
	if (!a || a->status != 200) {
		t->release_failed = 1;
		log_warn("msg=\"a participant did not confirm releasing the first plan's holds; no re-plan, the order "
			 "fails\" txn=%s shard=%u error=\"%s\"", t->txn, p->shard, err ? err : "-");
	}
	if (!t->pending)
		replan_or_abort(t);
}

/* A participant voted no for want of stock: give every hold of the first
 * plan back, then ask the destination for a plan with the true figures. */
static void replan_release(struct ctxn *t)
{
	t->replanned = 1;
	t->co->replans++;
	t->phase = CP_REPLAN_RELEASE;
	char body[128];
	snprintf(body, sizeof(body), "{\"txn\":\"%s\"}", t->txn);
	for (unsigned i = 0; i < t->n_parts; i++)
		if (call(t, t->parts[i].shard, "/internal/txn/abort", body, 0, on_replan_release, &t->parts[i]))
			t->release_failed = 1;
	if (!t->pending)
		replan_or_abort(t);
}

static int plan_parts(struct ctxn *t, const char *legs);

static void on_replan(void *arg, const struct hc_response *a, const char *err)
{
	struct ctxn *t = arg;
	t->pending--;
	static char legs[8192];
	memset(t->parts, 0, sizeof(t->parts));
	t->n_parts = 0; /* the first plan's holds are released */
	if (a && a->status == 202 && hc_header(a, WM_H_TXN_LEGS, legs, sizeof(legs)) == 1) {
		if (plan_parts(t, legs) == 0) {
			crash_point(t, "txn_router_crash_after_replan");
			log_info("msg=\"cross-shard order re-planned; preparing again\" txn=%s participants=%u", t->txn,
				 t->n_parts);
			t->phase = CP_PREPARE;
			step(t);
			return;
		}
		log_error("msg=\"a re-plan with legs the map cannot place\" txn=%s legs=\"%.200s\"", t->txn, legs);
		memset(t->parts, 0, sizeof(t->parts));
		t->n_parts = 0;
	} else {
		log_info("msg=\"no re-plan covers the order; it fails\" txn=%s status=%d error=\"%s\"", t->txn,
			 a ? a->status : 0, err ? err : "-");
	}
	abort_txn(t); /* nothing is held: straight to the destination's abort */
}

/* The destination's re-plan call: the reported figures and the client's
 * request; the principal goes along (the capture runs in its view). */
static void replan_send(struct ctxn *t)
{
	size_t blen = 0;
	const char *req = t->f ? t->co->h.request_body(t->f, &blen) : NULL;
	char path[160];
	snprintf(path, sizeof(path), "/internal/orders/%s/replan", t->order);
	size_t cap = blen + t->short_len + 64;
	char *body = req ? malloc(cap) : NULL;
	if (body) {
		memcpy(body, "{\"atp\":[", 8);
		memcpy(body + 8, t->shortv, t->short_len);
		size_t n = 8 + t->short_len;
		memcpy(body + n, "],\"request\":", 12);
		n += 12;
		memcpy(body + n, req, blen);
		n += blen;
		body[n++] = '}';
		body[n] = 0;
	}
	if (!body || call(t, t->dest, path, body, 1, on_replan, t)) {
		log_warn("msg=\"the re-plan could not be asked; the order fails\" txn=%s", t->txn);
		abort_txn(t);
	}
	free(body);
}

static void on_prepare(void *arg, const struct hc_response *a, const char *err)
{
	struct cpart *p = arg;
	struct ctxn *t = p->t;
	t->pending--;
	p->yes = a && a->status == 200 && memmem(a->body, a->body_len, "\"vote\":\"yes\"", 12);
	if (a && a->status == 409 && memmem(a->body, a->body_len, "insufficient_stock", 18)) {
		t->abort_reason_stock = 1;
		note_short(t, a);
	}
	if (!p->yes)
		log_info("msg=\"a participant voted no\" txn=%s shard=%u status=%d answer=\"%.*s\" error=\"%s\"", t->txn,
			 p->shard, a ? a->status : 0, a ? (int)(a->body_len > 200 ? 200 : a->body_len) : 0, a ? a->body : "",
			 err ? err : "-");
	if (t->pending)
		return;
	for (unsigned i = 0; i < t->n_parts; i++)
		if (!t->parts[i].yes) {
			if (t->abort_reason_stock && !t->replanned && t->f && t->short_len)
				replan_release(t); /* short, not refused: re-plan once */
			else
				abort_txn(t);
			return;
		}
	crash_point(t, "txn_router_crash_after_prepared");
	t->phase = CP_CHARGE;
	step(t);
}

static void on_charge(void *arg, const struct hc_response *a, const char *err)
{
	struct ctxn *t = arg;
	(void)err;
	t->pending--;
	if (a && a->status == 200) {
		crash_point(t, "txn_router_crash_after_charged");
		t->phase = CP_DECIDE;
		step(t);
		return;
	}
	abort_txn(t); /* declined, failed, or not known: the destination fails and refunds */
}

/* ---- the decision and after ---------------------------------------------------- */

static void on_logged(void *arg, const char *txn_id)
{
	struct coord *co = arg;
	struct ctxn *t = find(co, txn_id);
	if (!t)
		return;
	crash_point(t, "txn_router_crash_after_decision");
	stall_point(t, "txn_router_stall_after_decision");
	t->phase = CP_COMMIT_DEST;
	step(t);
}

static void retry_later(struct ctxn *t, const char *what, const char *err, int status)
{
	t->retry_at_ms = now_ms(t->co) + COORD_RETRY_MS;
	log_warn("msg=\"a committed transaction's step failed; retrying\" txn=%s step=%s status=%d error=\"%s\"", t->txn,
		 what, status, err ? err : "-");
}

static void on_commit_dest(void *arg, const struct hc_response *a, const char *err)
{
	struct ctxn *t = arg;
	t->pending--;
	if (!a || a->status != 200) {
		retry_later(t, "commit at the destination", err, a ? a->status : 0);
		return;
	}
	crash_point(t, "txn_router_crash_after_commit_dest");
	t->phase = CP_COMMIT_PARTS;
	step(t);
}

static void on_commit_part(void *arg, const struct hc_response *a, const char *err)
{
	struct cpart *p = arg;
	struct ctxn *t = p->t;
	t->pending--;
	if (a && a->status == 200)
		p->acked = 1;
	else
		retry_later(t, "commit at a participant", err, a ? a->status : 0);
	if (t->pending)
		return;
	for (unsigned i = 0; i < t->n_parts; i++)
		if (!t->parts[i].acked)
			return; /* the tick sends the missing ones again */
	t->phase = CP_REST;
	step(t);
}

static void on_rest(void *arg, const struct hc_response *a, const char *err)
{
	struct ctxn *t = arg;
	t->pending--;
	if (!a || a->status != 201) {
		retry_later(t, "rest at the destination", err, a ? a->status : 0);
		return;
	}
	answer_relay(t, a);
	crash_point(t, "txn_router_crash_before_end");
	if (dlog_end(t->co->log, t->txn))
		log_warn("msg=\"END could not be appended; the transaction is re-driven at the next start\" txn=%s",
			 t->txn);
	t->co->commits++;
	t->phase = CP_DONE;
	done(t);
}

/* Run the transaction's current phase. */
static void step(struct ctxn *t)
{
	char path[160], body[128];
	snprintf(body, sizeof(body), "{\"txn\":\"%s\"}", t->txn);
	switch (t->phase) {
	case CP_PREPARE:
		for (unsigned i = 0; i < t->n_parts; i++)
			if (call(t, t->parts[i].shard, "/internal/txn/prepare", t->parts[i].body, 0, on_prepare,
				 &t->parts[i]))
				t->parts[i].yes = 0;
		if (!t->pending)
			abort_txn(t);
		return;
	case CP_REPLAN_RELEASE:
		return;
	case CP_REPLAN:
		replan_send(t);
		return;
	case CP_CHARGE:
		snprintf(path, sizeof(path), "/internal/orders/%s/charge", t->order);
		if (call(t, t->dest, path, "{}", 0, on_charge, t))
			abort_txn(t);
		return;
	case CP_DECIDE: {
		uint8_t shards[COORD_MAX_PARTS];
		for (unsigned i = 0; i < t->n_parts; i++)
			shards[i] = (uint8_t)t->parts[i].shard;
		int rc = dlog_commit(t->co->log, t->txn, shards, t->n_parts, on_logged, t->co);
		if (rc) {
			log_error("msg=\"the COMMIT decision could not be logged; aborting\" txn=%s rc=%d", t->txn, rc);
			abort_txn(t);
		}
		return;
	}
	case CP_COMMIT_DEST:
		snprintf(path, sizeof(path), "/internal/orders/%s/commit", t->order);
		if (call(t, t->dest, path, "{}", 0, on_commit_dest, t))
			retry_later(t, "commit at the destination", "the pool refused", 0);
		return;
	case CP_COMMIT_PARTS:
		for (unsigned i = 0; i < t->n_parts; i++)
			if (!t->parts[i].acked &&
			    call(t, t->parts[i].shard, "/internal/txn/commit", body, 0, on_commit_part, &t->parts[i]))
				retry_later(t, "commit at a participant", "the pool refused", 0);
		return;
	case CP_REST:
		snprintf(path, sizeof(path), "/internal/orders/%s/rest", t->order);
		if (call(t, t->dest, path, "{}", 1, on_rest, t))
			retry_later(t, "rest at the destination", "the pool refused", 0);
		return;
	case CP_ABORT_PARTS:
		return;
	case CP_ABORT_DEST: {
		snprintf(path, sizeof(path), "/internal/orders/%s/abort", t->order);
		char ab[96];
		snprintf(ab, sizeof(ab), "{\"reason\":\"%s\"}", t->abort_reason_stock ? "insufficient_stock" : "interrupted");
		if (call(t, t->dest, path, ab, 1, on_abort_dest, t)) {
			answer_problem(t, 503, "order_aborted", "the order could not be completed across shards");
			t->phase = CP_DONE;
			done(t);
		}
		return;
	}
	case CP_DONE:
		return;
	}
}

/* ---- starting ------------------------------------------------------------------ */

static struct ctxn *txn_new(struct coord *co, const char *txn)
{
	if (co->n_active == COORD_MAX_ACTIVE)
		return NULL;
	struct ctxn *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->co = co;
	snprintf(t->txn, sizeof(t->txn), "%s", txn);
	const char *colon = strchr(txn, ':');
	snprintf(t->order, sizeof(t->order), "%s", colon ? colon + 1 : txn);
	t->started_ms = now_ms(co);
	co->active[co->n_active++] = t;
	return t;
}

/* The participant slot of shard s (made when new), or NULL past the bound. */
static struct cpart *part_of(struct ctxn *t, uint32_t s)
{
	for (unsigned i = 0; i < t->n_parts; i++)
		if (t->parts[i].shard == s)
			return &t->parts[i];
	if (t->n_parts == COORD_MAX_PARTS)
		return NULL;
	struct cpart *p = &t->parts[t->n_parts++];
	p->t = t;
	p->shard = s;
	return p;
}

/* Parse "<hold> <level> <qty>[,...]" into PREPARE bodies per owner shard;
 * 0, or -1 when a leg is malformed or its country has no shard. */
static int plan_parts(struct ctxn *t, const char *legs)
{
	char hold[80], level[64];
	long long qty;
	const char *p = legs;
	int n = 0;
	while (*p) {
		int used = 0;
		if (n == COORD_MAX_LEGS || sscanf(p, "%79s %63s %lld%n", hold, level, &qty, &used) != 3 || used <= 0)
			return -1;
		p += used;
		if (*p == ',')
			p++;
		char *comma = strchr(level, ',');
		if (comma)
			*comma = 0;
		if (strncmp(level, "inv_", 4) || strlen(level) < 8 || level[6] != '_')
			return -1;
		char cc[3] = {level[4], level[5], 0};
		int owner = smap_owner(t->co->h.map, cc);
		struct cpart *pt = owner >= 0 ? part_of(t, (uint32_t)owner) : NULL;
		if (!pt)
			return -1;
		size_t bl = strlen(pt->body);
		int w = snprintf(pt->body + bl, sizeof(pt->body) - bl, "%s{\"hold_id\":\"%s\",\"level_id\":\"%s\",\"qty\":%lld}",
				 bl ? "," : "", hold, level, qty);
		if (w < 0 || (size_t)w >= sizeof(pt->body) - bl)
			return -1;
		n++;
	}
	/* wrap each participant's holds into its PREPARE body */
	for (unsigned i = 0; i < t->n_parts; i++) {
		char holds[COORD_BODY_MAX];
		snprintf(holds, sizeof(holds), "%s", t->parts[i].body);
		int w = snprintf(t->parts[i].body, sizeof(t->parts[i].body), "{\"txn\":\"%s\",\"holds\":[%s]}", t->txn,
				 holds);
		if (w < 0 || (size_t)w >= sizeof(t->parts[i].body))
			return -1;
	}
	return n ? 0 : -1;
}

int coord_begin(struct coord *co, struct fwd *f, uint32_t dest, const struct hc_response *a)
{
	char txn[DLOG_TXN_ID_MAX + 8];
	static char legs[8192];
	if (!co || a->status != 202 || hc_header(a, WM_H_TXN, txn, sizeof(txn)) != 1 ||
	    hc_header(a, WM_H_TXN_LEGS, legs, sizeof(legs)) != 1)
		return 0;
	struct ctxn *t = dlog_txn_valid(txn, strlen(txn)) ? txn_new(co, txn) : NULL;
	if (!t) {
		log_error("msg=\"cross-shard order refused by the coordinator\" txn=\"%.80s\" action=\"the destination "
			  "fails it at its restart or when asked\"", txn);
		return 0;
	}
	t->f = f;
	t->dest = dest;
	if (plan_parts(t, legs)) {
		log_error("msg=\"cross-shard order with legs the map cannot place\" txn=%s legs=\"%.200s\"", txn, legs);
		t->n_parts = 0;
		abort_txn(t);
		return 1;
	}
	t->phase = CP_PREPARE;
	step(t);
	return 1;
}

/* Re-drive a committed transaction found in the log (coord_open). */
static void redrive(void *arg, const char *txn_id, const uint8_t *shards, size_t n, uint64_t at_ms)
{
	(void)at_ms;
	struct coord *co = arg;
	struct ctxn *t = txn_new(co, txn_id);
	if (!t)
		return;
	char cc[3] = "";
	/* the order id "ord_CC_..." names the destination's country */
	if (!strncmp(t->order, "ord_", 4) && strlen(t->order) > 7) {
		cc[0] = t->order[4];
		cc[1] = t->order[5];
	}
	int dest = smap_owner(co->h.map, cc);
	t->dest = dest >= 0 ? (uint32_t)dest : 0;
	for (size_t i = 0; i < n && i < COORD_MAX_PARTS; i++)
		part_of(t, shards[i]);
	t->phase = CP_COMMIT_DEST;
	co->redriven++;
	log_warn("msg=\"re-driving a committed transaction after a restart\" txn=%s participants=%zu", txn_id, n);
}

static void on_log(struct ev_loop *loop, struct ev_handle *h, uint32_t events)
{
	(void)loop;
	(void)events;
	struct coord *co = h->arg;
	dlog_poll(co->log);
}

int coord_open(const struct coord_host *host, struct coord **out, char *err, size_t errlen)
{
	struct coord *co = calloc(1, sizeof(*co));
	*out = NULL;
	if (!co) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	co->h = *host;
	char dir[700];
	snprintf(dir, sizeof(dir), "%s/decisions", host->data_dir);
	enum wal_mode mode = !strcmp(host->wal_mode, "none")	 ? WAL_MODE_NONE
			     : !strcmp(host->wal_mode, "write") ? WAL_MODE_WRITE
							       : WAL_MODE_FSYNC;
	struct dlog_config dc = {.dir = dir, .mode = mode};
	if (dlog_open(&dc, &co->log, err, errlen)) {
		free(co);
		return -1;
	}
	snprintf(co->header, sizeof(co->header), WM_H_COORDINATOR ": r%llu\r\n", (unsigned long long)host->router_id);
	co->log_h = (struct ev_handle){.fd = dlog_event_fd(co->log), .fn = on_log, .arg = co};
	ev_add(host->loop, &co->log_h, EPOLLIN);
	*out = co;
	size_t n = dlog_undecided(co->log, redrive, co);
	for (unsigned i = 0; i < co->n_active; i++)
		step(co->active[i]);
	if (n)
		log_warn("msg=\"decision log: committed transactions without END re-driven\" count=%zu", n);
	return 0;
}

void coord_close(struct coord *co)
{
	if (!co)
		return;
	while (co->n_active) {
		struct ctxn *t = co->active[--co->n_active];
		if (t->f)
			answer_problem(t, 503, "router_stopping", "the router is stopping; the order is resumed at its start");
		free(t);
	}
	ev_del(co->h.loop, &co->log_h);
	dlog_flush(co->log);
	dlog_close(co->log);
	free(co);
}

void coord_tick(struct coord *co)
{
	if (!co)
		return;
	uint64_t now = now_ms(co);
	for (unsigned i = 0; i < co->n_active; i++) {
		struct ctxn *t = co->active[i];
		if (t->retry_at_ms && now >= t->retry_at_ms && !t->pending) {
			t->retry_at_ms = 0;
			step(t);
		}
	}
	/* segments holding only ended transactions go (never past the oldest
	 * COMMIT without a durable END: decision_log.h) */
	if (now >= co->next_prune_ms) {
		co->next_prune_ms = now + COORD_PRUNE_EVERY_MS;
		if (dlog_prune(co->log) < 0)
			log_warn("msg=\"decision log prune failed; retried\"");
	}
}

void coord_status(struct coord *co, const char *query, size_t query_len, struct srv_response *rs)
{
	char txn[DLOG_TXN_ID_MAX + 1];
	int n = http_query_get(query, query_len, "txn", txn, sizeof(txn));
	if (!co || n <= 0 || !dlog_txn_valid(txn, (size_t)n)) {
		rs->status = 400;
		rs->content_type = PROBLEM_CONTENT_TYPE;
		problem_write(&rs->body, 400, "invalid_txn", "Bad Request", "txn must be a transaction id");
		return;
	}
	const char *decision;
	enum dlog_status st = dlog_lookup(co->log, txn);
	struct ctxn *t = find(co, txn);
	if (st == DLOG_COMMITTED || st == DLOG_ENDED)
		decision = "commit";
	else if (st == DLOG_COMMITTING || (t && t->phase <= CP_DECIDE))
		decision = "in_progress";
	else
		decision = "abort"; /* presumed abort */
	rs->status = 200;
	buf_printf(&rs->body, "{\"txn\":\"%s\",\"decision\":\"%s\"}", txn, decision);
}

uint64_t coord_in_doubt(struct coord *co)
{
	if (!co)
		return 0;
	struct dlog_stats s;
	dlog_stats(co->log, &s);
	return s.unended;
}

void coord_metrics(struct coord *co, struct buf *b)
{
	if (!co)
		return;
	struct dlog_stats s;
	dlog_stats(co->log, &s);
	uint64_t wall = (uint64_t)time(NULL) * 1000;
	buf_printf(b,
		   "# TYPE wm_router_txn_active gauge\nwm_router_txn_active %u\n"
		   "# HELP wm_router_txn_in_doubt Committed cross-shard transactions without END (being driven).\n"
		   "# TYPE wm_router_txn_in_doubt gauge\nwm_router_txn_in_doubt %llu\n"
		   "# TYPE wm_router_txn_in_doubt_oldest_seconds gauge\nwm_router_txn_in_doubt_oldest_seconds %.3f\n"
		   "# TYPE wm_router_txn_total counter\nwm_router_txn_total{outcome=\"commit\"} %llu\n"
		   "wm_router_txn_total{outcome=\"abort\"} %llu\n"
		   "# TYPE wm_router_txn_redriven_total counter\nwm_router_txn_redriven_total %llu\n"
		   "# HELP wm_router_txn_replans_total Cross-shard orders planned again after a no vote for want of stock.\n"
		   "# TYPE wm_router_txn_replans_total counter\nwm_router_txn_replans_total %llu\n"
		   "# TYPE wm_router_decision_log_syncs_total counter\nwm_router_decision_log_syncs_total %llu\n",
		   co->n_active, (unsigned long long)s.unended,
		   s.oldest_unended_ms && wall > s.oldest_unended_ms ? (double)(wall - s.oldest_unended_ms) / 1000.0 : 0.0,
		   (unsigned long long)co->commits, (unsigned long long)co->aborts, (unsigned long long)co->redriven,
		   (unsigned long long)co->replans, (unsigned long long)s.wal.syncs);
}
