/*
 * edge.c -- the edge at the router (contract in edge.h; DESIGN.md section
 * 9, "The edge").
 *
 * Why the router and not the shards: a key's rate bucket and its entity's
 * record quota are per key and per entity, not per shard.  Checked at each
 * shard, a key would get one bucket per shard it happens to reach, and a
 * fan-out page would charge each shard's quota for rows the merge then
 * drops.  Done here, once, they mean what they mean on a single shard.
 *
 * What the router holds to do it: a store of its own (the same storage
 * code as a shard's, opened with only the tables the edge reads -- see
 * shard_open_with), fed by WAL shipping from the catalogue home
 * (repl_sub_start_home): partners (roles, status) and API keys (hashes,
 * scopes, revocation, the channel of a publishable key).  A key
 * revoked at the home stops working here within the replication lag.  The
 * audit rows are written to the same store, through the same audit code,
 * so GET /v1/audit is answered here from the router's own log.  Several
 * routers keep several logs and several buckets: documented in the README
 * (a shared bucket is future work, DESIGN.md section 9).
 *
 * One request:
 *   1. the route from the OpenAPI document (route_spec.h): public or
 *      unknown paths pass untouched (the shard answers 404/405 and the
 *      public routes);
 *   2. auth_request(): 401, 429 (+ Retry-After, RateLimit), 403 exactly as
 *      a shard answers them; the refusal of an authenticated read is
 *      audited, as on a shard;
 *   3. the admitted request goes on with X-WM-Principal (who, and the rows
 *      the quota still allows), which the request's signature covers;
 *   4. the shard answers and reports X-WM-Rows / X-WM-Span-* (or, for a
 *      merged fan-out page, the router counts itself); redge_finish charges
 *      the quota, or turns the answer into the 429 when the read needed
 *      more rows than the quota allowed, and writes the audit row.
 * The RateLimit headers the edge wrote are added to whatever answer goes
 * back.
 */
#include "shard-router/edge.h"

#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "engine/base/log.h"
#include "engine/cluster/internal_headers.h"
#include "engine/edge/audit.h"
#include "engine/edge/auth.h"
#include "engine/edge/consumer_token.h"
#include "engine/edge/key.h"
#include "engine/edge/quota.h"
#include "engine/replication/repl.h"
#include "engine/storage/resources.h"

/* The tables of the router's store: what the edge reads (partners and
 * keys, replicated from the home; a key carries its channel id, so the
 * channels themselves are not needed) and what it writes (audit rows, the
 * abnormal-usage events, replication positions). */
static const struct table_ops *const redge_tables[] = {
	&repl_pos_table_ops, &partner_table_ops, &event_table_ops, &key_table_ops, &audit_table_ops, NULL,
};

/* ---- the store ------------------------------------------------------------ */

static void on_wal(struct ev_loop *loop, struct ev_handle *h, uint32_t events)
{
	(void)loop;
	(void)events;
	struct shard *sh = h->arg;
	uint64_t v;
	ssize_t r = read(h->fd, &v, sizeof(v));
	(void)r;
	audit_on_durable(sh, wal_durable_lsn(sh->wal));
}

int redge_open(struct redge *e, const struct config *cfg, struct ev_loop *loop, const struct shard_map *m,
	       const struct cluster_key *k, char *err, size_t errlen)
{
	memset(e, 0, sizeof(*e));
	if (rspec_load_builtin(&e->spec, err, errlen))
		return -1;
	struct shard_open_opts o = {.tables = redge_tables};
	if (shard_open_with(&e->sh, cfg, &o, err, errlen)) {
		rspec_free(&e->spec);
		return -1;
	}
	e->opened = 1;
	struct shard *sh = &e->sh;
	if (ct_key_derive(k, sh->consumer_key) == 0) /* consumer tokens are checked here, like keys */
		sh->has_consumer_key = 1;
	sh->loop = loop;
	sh->wal_h = (struct ev_handle){.fd = wal_event_fd(sh->wal), .fn = on_wal, .arg = sh};
	if (ev_add(loop, &sh->wal_h, EPOLLIN)) {
		snprintf(err, errlen, "cannot watch the store's WAL");
		redge_close(e);
		return -1;
	}
	sh->snap_next_due_ms = ev_clock_us() / 1000 + cfg->snapshot_interval_s * 1000;
	sh->ready = 1;
	if (repl_sub_start_home(sh, m, k, err, errlen)) {
		redge_close(e);
		return -1;
	}
	log_info("msg=\"router edge ready\" data_dir=%s lsn=%llu routes=%u", cfg->data_dir,
		 (unsigned long long)sh->lsn, e->spec.n);
	return 0;
}

void redge_remap(struct redge *e, const struct shard_map *m)
{
	if (e->opened)
		repl_sub_remap(&e->sh, m);
}

void redge_prepare(struct redge *e)
{
	if (e->opened)
		audit_flush(&e->sh);
}

void redge_tick(struct redge *e)
{
	struct shard *sh = &e->sh;
	if (!e->opened)
		return;
	audit_flush(sh);
	shard_snapshot_poll(sh);
	shard_space_poll(sh);
	repl_tick(sh);
	uint64_t now = ev_clock_us() / 1000;
	if (sh->cfg.snapshot_interval_s && now >= sh->snap_next_due_ms) {
		sh->snap_next_due_ms = now + sh->cfg.snapshot_interval_s * 1000;
		if (sh->lsn != sh->snap_last_lsn)
			shard_snapshot_start(sh);
	}
}

/* Free q's buffers and q. */
static void redge_release(struct redge_req *q)
{
	buf_free(&q->rs.headers);
	buf_free(&q->rs.body);
	free(q);
}

void redge_close(struct redge *e)
{
	if (e->opened) {
		audit_flush(&e->sh);
		wal_flush(e->sh.wal);
		repl_close(&e->sh);
		shard_close(&e->sh);
	}
	rspec_free(&e->spec);
	e->opened = 0;
	while (e->spare) {
		struct redge_req *q = e->spare;
		e->spare = q->next_spare;
		redge_release(q);
	}
	e->n_spare = 0;
}

int redge_ready(struct redge *e) { return e->opened && repl_synced(&e->sh, REPL_HOME); }

uint64_t redge_applied(struct redge *e) { return e->opened ? repl_applied_lsn(&e->sh, REPL_HOME) : 0; }

/* ---- one request ---------------------------------------------------------- */

void redge_free(struct redge *e, struct redge_req *q)
{
	if (!q)
		return;
	if (e->opened && e->n_spare < REDGE_SPARE && q->rs.headers.cap + q->rs.body.cap <= REDGE_SPARE_BYTES) {
		q->next_spare = e->spare;
		e->spare = q;
		e->n_spare++;
		return;
	}
	redge_release(q);
}

/* A request state: a spare or a new one, zeroed but for the context's
 * field-error arrays (~7.5 KB of its 8), which api_field_error fills as
 * n_errs grows -- as api_handle does.  Its buffers are empty.  NULL: out of
 * memory. */
static struct redge_req *redge_alloc(struct redge *e)
{
	_Static_assert(offsetof(struct redge_req, c) == 0, "the context first");
	_Static_assert(offsetof(struct api_ctx, n_errs) ==
			       offsetof(struct api_ctx, err_msg) + sizeof(((struct api_ctx *)0)->err_msg),
		       "from errs on: the error arrays, then n_errs");
	struct redge_req *q = e->spare;
	struct buf h = {0}, b = {0};
	if (q) {
		e->spare = q->next_spare;
		e->n_spare--;
		h = q->rs.headers;
		b = q->rs.body;
	} else if (!(q = malloc(sizeof(*q)))) {
		return NULL;
	} else {
		buf_init(&h, 0);
		buf_init(&b, 0);
	}
	memset(&q->c, 0, offsetof(struct api_ctx, errs));
	q->c.n_errs = 0;
	memset((char *)q + sizeof(q->c), 0, sizeof(*q) - sizeof(q->c));
	q->rs.headers = h;
	q->rs.body = b;
	buf_reset(&q->rs.headers);
	buf_reset(&q->rs.body);
	return q;
}

/* Copy the edge's own answer into rs. */
static void answer_from(struct redge_req *q, struct srv_response *rs)
{
	rs->status = q->rs.status;
	rs->content_type = q->rs.content_type;
	buf_append(&rs->headers, q->rs.headers.data, q->rs.headers.len);
	buf_reset(&rs->body);
	buf_append(&rs->body, q->rs.body.data, q->rs.body.len);
}

/* The audit row of an authenticated read, with the status rs carries. */
static void audit_with(struct redge *e, struct redge_req *q, struct srv_response *rs)
{
	if (!q->c.who.authenticated || !api_route_reads(q->c.route))
		return;
	struct srv_response *own = q->c.rs;
	q->c.rs = rs;
	audit_read(&q->c);
	q->c.rs = own;
	e->audited++;
}

/* GET /v1/audit: the router's own log (audit.c's handler). */
static int is_audit_route(const struct route *r)
{
	return r->method == audit_routes[0].method && !strcmp(r->pattern, audit_routes[0].pattern);
}

enum redge_verdict redge_admit(struct redge *e, const struct srv_request *rq, struct srv_response *rs,
			       struct redge_req **out)
{
	static struct api_ctx probe; /* path parameters of the lookup only (one thread) */
	const struct http_request *h = rq->http;
	*out = NULL;
	int known;
	const struct route *r = rspec_find(&e->spec, h->method, h->path, h->path_len, &probe, &known);
	if (!r || r->scope == SC_PUBLIC || !e->opened)
		return REDGE_PASS;
	if (!redge_ready(e)) {
		/* a key minted a moment ago may be missing here: say so, not 401 */
		rs->status = 503;
		rs->content_type = PROBLEM_CONTENT_TYPE;
		problem_write(&rs->body, 503, "not_ready", http_reason(503),
			      "the router has not yet caught up with the catalogue home's keys; retry shortly");
		buf_puts(&rs->headers, "Retry-After: 1\r\n");
		return REDGE_ANSWERED;
	}
	struct redge_req *q = redge_alloc(e);
	if (!q) {
		rs->status = 503;
		rs->content_type = PROBLEM_CONTENT_TYPE;
		problem_write(&rs->body, 503, "overloaded", http_reason(503), "the router is out of memory");
		return REDGE_ANSWERED;
	}
	memcpy(q->rq.request_id, rq->request_id, sizeof(q->rq.request_id));
	struct api_ctx *c = &q->c;
	c->sh = &e->sh;
	c->rq = &q->rq;
	c->http = h;
	c->rs = &q->rs;
	c->route = r;
	jw_init(&c->w, &q->rs.body);
	api_route_bind(r->pattern, h->path, h->path_len, c);
	table_reads_begin();
	int refused = auth_request(c);
	if (!refused && is_audit_route(r)) {
		audit_routes[0].fn(c);
		if (!q->rs.status)
			q->rs.status = 200;
	}
	table_reads_end(0);
	json_doc_free(c->body);
	c->body = NULL;
	if (refused || is_audit_route(r)) {
		e->refused += refused != 0;
		answer_from(q, rs);
		audit_with(e, q, rs);
		redge_free(e, q);
		return REDGE_ANSWERED;
	}
	q->quota_left = api_route_reads(r) ? auth_quota_left(c) : UINT32_MAX;
	q->principal_len = principal_encode(&c->who, q->quota_left, q->principal);
	if (q->principal_len < 0) {
		log_error("msg=\"a principal does not fit its wire form\" key_id=%.40s", c->who.key_id);
		api_error(c, 500, "internal_error", "the caller's identity could not be forwarded");
		answer_from(q, rs);
		redge_free(e, q);
		return REDGE_ANSWERED;
	}
	/* the cursor the read starts after, for the audit's span */
	if (!api_is_write(r->method) && api_query(c, "cursor", c->span_from, sizeof(c->span_from)) < 0)
		c->span_from[0] = 0;
	c->http = NULL; /* the server's parse is gone once the handler returns */
	e->admitted++;
	*out = q;
	return REDGE_FORWARD;
}

/* A numeric internal header of a shard's answer, or def. */
static uint32_t header_u32(const struct hc_response *a, const char *name, uint32_t def)
{
	char v[16];
	if (!a || hc_header(a, name, v, sizeof(v)) != 1)
		return def;
	char *end;
	unsigned long x = strtoul(v, &end, 10);
	return *end || x > UINT32_MAX ? def : (uint32_t)x;
}

void redge_report_from(const struct hc_response *a, struct redge_report *rep)
{
	memset(rep, 0, sizeof(*rep));
	rep->rows = header_u32(a, WM_H_ROWS, 0);
	rep->quota_refused = header_u32(a, WM_H_QUOTA_REFUSED, 0) == 1;
	if (a && hc_header(a, WM_H_SPAN_FROM, rep->span_from, sizeof(rep->span_from)) != 1)
		rep->span_from[0] = 0;
	if (a && hc_header(a, WM_H_SPAN_TO, rep->span_to, sizeof(rep->span_to)) != 1)
		rep->span_to[0] = 0;
}

void redge_finish(struct redge *e, struct redge_req *q, const struct redge_report *rep, struct srv_response *final)
{
	struct api_ctx *c = &q->c;
	if (api_route_reads(c->route)) {
		if (rep->quota_refused || rep->rows > q->quota_left) {
			/* the 429 the router's quota window explains (Retry-After) */
			buf_reset(&final->headers);
			c->rs = final;
			jw_init(&c->w, &final->body);
			auth_quota_refuse(c);
			c->rs = &q->rs;
		} else {
			auth_quota_charge(c, rep->rows);
			c->rows_returned = rep->rows;
			if (rep->span_from[0])
				memcpy(c->span_from, rep->span_from, sizeof(c->span_from));
			memcpy(c->span_to, rep->span_to, sizeof(c->span_to));
		}
	}
	buf_append(&final->headers, q->rs.headers.data, q->rs.headers.len);
	audit_with(e, q, final);
	redge_free(e, q);
}

void redge_metrics(struct redge *e, struct buf *b)
{
	if (!e->opened)
		return;
	/* named for the router: the body already holds the home's wm_repl_*
	 * and wm_audit_* series, and a name may have one TYPE line only */
	buf_printf(b,
		   "# TYPE wm_router_edge_admitted_total counter\nwm_router_edge_admitted_total %llu\n"
		   "# TYPE wm_router_edge_refused_total counter\nwm_router_edge_refused_total %llu\n"
		   "# TYPE wm_router_edge_audited_total counter\nwm_router_edge_audited_total %llu\n"
		   "# HELP wm_router_edge_replica_lsn The catalogue home's LSN the router's key replica has applied.\n"
		   "# TYPE wm_router_edge_replica_lsn gauge\nwm_router_edge_replica_lsn %llu\n"
		   "# TYPE wm_router_edge_replica_synced gauge\nwm_router_edge_replica_synced %d\n",
		   (unsigned long long)e->admitted, (unsigned long long)e->refused, (unsigned long long)e->audited,
		   (unsigned long long)redge_applied(e), redge_ready(e));
}
