/*
 * dispatch.c -- one request through the edge (DESIGN.md 5 and 9): the
 * cluster gate (signatures, ownership, read-your-writes), the route, then
 * identity (key, scope, action, rate) -> idempotency -> If-Match -> space
 * -> handler -> ETag -> audit, and the LSN the response waits for.
 *
 * Routing is a linear walk over a small table of patterns, segment by
 * segment, with "{name}" matching one non-empty segment; the route table
 * stays the single source of truth (the OpenAPI test reads the same
 * table).  A route without parameters (POST /v1/orders/quote-calculate,
 * POST /v1/orders) is first looked up by method and path in hash indexes
 * built from the table once (lit_find): with ~150 routes the walk took ~2,000
 * instructions to reach them, 2 % of a quote (issue 15).  Only routes that
 * no earlier route matches go into it, so the answer is the walk's; test
 * builds check that on every request.
 *
 * This is the top of the edge: it includes the modules it runs, and none
 * of them includes it (they share the request context of api.h).
 */
#include "engine/edge/dispatch.h"

#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "engine/base/log.h"
#include "engine/cluster/cluster_auth.h"
#include "engine/cluster/internal_headers.h"
#include "engine/cluster/route_class.h"
#include "engine/cluster/shard_map.h"
#include "engine/edge/audit.h"
#include "engine/edge/auth.h"
#include "engine/edge/etag.h"
#include "engine/edge/idem.h"
#include "engine/edge/park.h"
#include "engine/edge/principal.h"
#include "engine/storage/index.h"

/* ---- routing ----------------------------------------------------------- */

/* The literal routes of one table, a hash index per method keyed by the
 * pattern (the route table's own string, static: hidx copies no key). */
#define LIT_METHODS (HTTP_M_OPTIONS + 1)
struct lit_index {
	const struct route *table; /* built for it; NULL: not yet */
	struct hidx by_path[LIT_METHODS];
};

/* Each route without "{" that no earlier route matches (the walk would
 * find it first), keyed by its pattern.  A pattern the index cannot take
 * (too long, out of memory) is left to the walk. */
static void lit_build(struct lit_index *li, const struct route *table)
{
	static struct api_ctx scratch; /* api_route_bind writes only its params */
	for (unsigned m = 0; m < LIT_METHODS; m++)
		hidx_init(&li->by_path[m]);
	for (const struct route *r = table; r->pattern; r++) {
		size_t n = strlen(r->pattern);
		int shadowed = strchr(r->pattern, '{') != NULL || r->method >= LIT_METHODS || n > IDX_MAX_KEY;
		for (const struct route *e = table; e < r && !shadowed; e++)
			shadowed = e->method == r->method && api_route_bind(e->pattern, r->pattern, (uint32_t)n, &scratch);
		if (!shadowed)
			(void)hidx_put(&li->by_path[r->method], r->pattern, (uint32_t)n, (void *)r);
	}
	li->table = table;
}

/* The route the walk would find for (m, path) when it has no parameters,
 * else NULL. */
static const struct route *lit_find(const struct route *table, enum http_method m, const char *path, uint32_t len)
{
	static struct lit_index pub, internal;
	struct lit_index *li = table == api_route_table() ? &pub : &internal;
	if (li->table != table)
		lit_build(li, table);
	if ((unsigned)m >= LIT_METHODS || len > IDX_MAX_KEY)
		return NULL;
	return hidx_get_untracked(&li->by_path[m], path, len);
}

static const struct route *route_walk(struct api_ctx *c, const struct route *table, enum http_method m,
				      int *path_known);

static const struct route *route_find(struct api_ctx *c, int *path_known)
{
	const struct http_request *h = c->http;
	enum http_method m = h->method == HTTP_M_HEAD ? HTTP_M_GET : h->method;
	*path_known = 0;
	const struct route *table = c->internal ? api_internal_route_table() : api_route_table();
	const struct route *r = lit_find(table, m, h->path, h->path_len);
	if (!r)
		return route_walk(c, table, m, path_known);
#ifdef WM_TESTING
	int known;
	assert(route_walk(c, table, m, &known) == r && known);
#endif
	c->n_params = 0;
	*path_known = 1;
	return r;
}

/* The first route of table for m that binds the request's path (path_known
 * set when any route of any method binds it). */
static const struct route *route_walk(struct api_ctx *c, const struct route *table, enum http_method m,
				      int *path_known)
{
	const struct http_request *h = c->http;
	*path_known = 0;
	/* the request's method first: a pattern is bound (parsed against the
	 * path) only for the routes that could answer; the others only when
	 * none does, to tell 405 from 404 */
	for (const struct route *r = table; r->pattern; r++)
		if (r->method == m && api_route_bind(r->pattern, h->path, h->path_len, c)) {
			*path_known = 1;
			return r;
		}
	for (const struct route *r = table; r->pattern; r++)
		if (api_route_bind(r->pattern, h->path, h->path_len, c)) {
			*path_known = 1;
			break;
		}
	return NULL;
}

static void allow_header(struct api_ctx *c)
{
	struct buf *hb = &c->rs->headers;
	buf_puts(hb, "Allow: ");
	int first = 1;
	static const char *const names[] = {"", "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"};
	for (const struct route *r = api_route_table(); r->pattern; r++) {
		if (!api_route_bind(r->pattern, c->http->path, c->http->path_len, c))
			continue;
		buf_printf(hb, "%s%s", first ? "" : ", ", names[r->method]);
		first = 0;
	}
	buf_puts(hb, "\r\n");
}


/* Close the read set before anything that reads for the engine's own sake
 * (the audit); UINT64_MAX = unknown, resolved to the newest state. */
static void api_take_reveals(struct api_ctx *c)
{
	if (c->reveals_taken)
		return;
	c->reveals_lsn = table_reads_end(UINT64_MAX);
	c->reveals_taken = 1;
}

#define API_NOSPACE_RETRY_AFTER_S 10 /* Retry-After of a 507: the WAL retries its spare every 0.5 s */

/* 507 insufficient_storage (shard.h, "A full disk"). */
static void nospace_error(struct api_ctx *c)
{
	api_error(c, 507, "insufficient_storage",
		  "the data directory's file system is full: writes are refused until space is freed; reads go on");
	buf_printf(&c->rs->headers, "Retry-After: %d\r\n", API_NOSPACE_RETRY_AFTER_S);
}

/* Run a write handler unless the disk is full; a commit the WAL refused
 * during it turns the answer into a 507 (what it committed before, if
 * anything, is durable and a retry sees it). */
static void run_write(struct api_ctx *c)
{
	struct shard *sh = c->sh;
	if (shard_write_admit(sh)) {
		nospace_error(c);
		return;
	}
	/* every commit of the request is one WAL transaction (shard.h); an
	 * Idempotency-Key's record holds it already (idem.c) */
	int own_hold = !sh->txn_hold;
	if (own_hold)
		txn_hold(sh);
	c->route->fn(c);
	if (own_hold)
		txn_release(sh);
	if (sh->nospace_in_request)
		nospace_error(c);
}

/* A request the router authenticated: what the router charges to the
 * record quota and writes in its audit (internal_headers.h). */
static void report_read(struct api_ctx *c)
{
	if (!api_route_reads(c->route))
		return;
	struct buf *hb = &c->rs->headers;
	buf_printf(hb, WM_H_ROWS ": %u\r\n", c->rows_returned);
	if (c->span_from[0])
		buf_printf(hb, WM_H_SPAN_FROM ": %s\r\n", c->span_from);
	if (c->span_to[0])
		buf_printf(hb, WM_H_SPAN_TO ": %s\r\n", c->span_to);
	if (c->quota_refused)
		buf_puts(hb, WM_H_QUOTA_REFUSED ": 1\r\n");
}

/*
 * The request pipeline of a routed request: identity (key, scope, action,
 * rate) -> idempotency (writes) -> If-Match (writes, etag.c) -> space
 * (writes) -> handler -> ETag (etag.c) -> audit (reads).  Public routes skip
 * identity, idempotency, the ETag and audit.
 */
static void api_run(struct api_ctx *c)
{
	const struct route *r = c->route;
	c->sh->nospace_in_request = 0;
	if (r->scope == SC_PUBLIC) {
		if (api_is_write(r->method))
			run_write(c);
		else
			r->fn(c);
		return;
	}
	int authed = c->principal_hdr ? auth_forwarded(c) : auth_request(c);
	if (authed == 0) {
		int ran = 1;
		if (api_is_write(r->method) && !(r->flags & ROUTE_F_OWN_IDEM)) {
			ran = idem_begin(c) == 0;
			if (ran) {
				if (etag_precondition(c) == 0)
					run_write(c);
				idem_end(c);
			}
		} else if (api_is_write(r->method)) {
			run_write(c);
		} else {
			r->fn(c);
		}
		if (ran)
			etag_stamp(c); /* not on a replay: its body is the stored one */
	}
	api_take_reveals(c);
	if (c->forwarded)
		report_read(c);
	else if (c->who.authenticated && api_route_reads(r))
		audit_read(c);
}

/* ---- cluster mode (DESIGN.md 9) --------------------------------------- */

#define API_INTERNAL_PREFIX "/internal/"

/* The request carries a valid router/shard signature (cluster_auth.h). */
static int cluster_signed(struct api_ctx *c)
{
	const struct http_request *h = c->http;
	const struct http_header *sig = http_find_header(h, CK_HEADER_NAME);
	if (!sig)
		return 0;
	const struct http_header *p = http_find_header(h, WM_H_PRINCIPAL);
	if (ck_verify_principal(c->sh->ckey, h->method_str, h->method_len, h->target, h->target_len, h->body,
				h->body_len, p ? p->value : NULL, p ? p->value_len : 0, sig->value, sig->value_len,
				(int64_t)time(NULL), CK_DEFAULT_SKEW_S) != CK_OK)
		return 0;
	c->principal_hdr = p; /* covered by the signature: the router did the edge */
	return 1;
}

/* 421: the request is for data another shard owns; the map version tells
 * a router with an older map to reload before it retries. */
static void cluster_misdirected(struct api_ctx *c, const char *what)
{
	char d[160];
	snprintf(d, sizeof(d), "this shard does not own %s (shard map version %llu)", what,
		 (unsigned long long)c->sh->smap_version);
	api_error(c, 421, "misdirected_request", d);
	buf_printf(&c->rs->headers, WM_H_MAP_VERSION ": %llu\r\n", (unsigned long long)c->sh->smap_version);
}

/* Does this shard own the request (route_class.h)?  Writes to the
 * catalogue belong to the home; a path id names its country's shard, and
 * so does the country a body names (a location, a level, an order's
 * destination: a replica must never take a write for a row another shard
 * owns -- the owner's copy would collide with it).  Catalogue reads are
 * served from the replica. */
static int cluster_owns(struct api_ctx *c, const struct rc_rule *r)
{
	const struct http_request *h = c->http;
	uint64_t me = c->sh->cfg.shard_id;
	if (!r)
		return 1;
	if (r->kind == RC_HOME && api_is_write(h->method) && me != 0) {
		cluster_misdirected(c, "catalogue writes: they go to the catalogue home, shard 0");
		return 0;
	}
	char cc[3];
	if ((r->kind == RC_PATH_ID && rc_path_country(r, h->path, h->path_len, cc)) ||
	    (r->kind == RC_BODY && rc_body_country(r, h->body, h->body_len, cc))) {
		int owner = smap_owner(c->sh->smap, cc);
		if (owner >= 0 && (uint64_t)owner != me) {
			char what[48];
			snprintf(what, sizeof(what), "country %s", cc);
			cluster_misdirected(c, what);
			return 0;
		}
	}
	return 1;
}

/*
 * The cluster gate, before routing: /internal/ needs a valid signature
 * (then the internal table serves it); a partner route needs the
 * router's signature and must be this shard's.  0 = go on, 1 = answered.
 */
static int cluster_gate(struct api_ctx *c)
{
	const struct http_request *h = c->http;
	size_t pl = sizeof(API_INTERNAL_PREFIX) - 1;
	c->internal = h->path_len >= pl && memcmp(h->path, API_INTERNAL_PREFIX, pl) == 0;
	if (!c->sh->ckey) {
		c->internal = 0; /* a cluster of one has no internal routes: 404 */
		return 0;
	}
	int known;
	const struct route *r = route_find(c, &known);
	const struct rc_rule *rule = rc_find(h->method, h->path, h->path_len);
	/* the process's own routes (/metrics with an operator key) stay
	 * reachable without a router */
	int needs_sig = c->internal || (r && r->scope != SC_PUBLIC && !(rule && rule->kind == RC_EDGE));
	if (needs_sig && !cluster_signed(c)) {
		c->rs->route = c->internal ? "-internal" : "-unsigned";
		api_error(c, 401, "cluster_signature_required",
			  c->internal ? "internal routes need a valid cluster signature"
				      : "this shard is part of a cluster: partner requests come through the router");
		return 1;
	}
	if (!c->internal && r && r->scope != SC_PUBLIC && !cluster_owns(c, rule)) {
		c->rs->route = r->pattern;
		return 1;
	}
	/* read-your-writes: wait (bounded) for the replica of the caller's
	 * last write */
	if (needs_sig && !c->internal && park_check(c)) {
		c->rs->route = r ? r->pattern : "-";
		return 1;
	}
	c->cluster_signed = needs_sig;
	/* a router merging one page per shard (shard-router/fanout.h) needs
	 * the shard cursor after each row */
	c->fanout = needs_sig && http_find_header(h, WM_H_FANOUT) != NULL;
	return 0;
}

void api_handle(void *app, const struct srv_request *rq, struct srv_response *rs)
{
	struct shard *sh = app;
	struct api_ctx c;
	memset(&c, 0, offsetof(struct api_ctx, errs));
	c.n_errs = 0;
	c.sh = sh;
	c.rq = rq;
	c.http = rq->http;
	c.rs = rs;
	jw_init(&c.w, &rs->body);
	uint64_t state_before = sh->state_lsn;
	wall_hold(); /* one instant per request: its timestamps and ids agree */
	table_reads_begin();
	int known = 0;
	const struct route *r = NULL;
	if (cluster_gate(&c))
		goto answered;
	r = route_find(&c, &known);
	if (!r) {
		rs->route = known ? "-method" : "-unknown";
		if (known) {
			allow_header(&c);
			api_error(&c, 405, "method_not_allowed", "this path does not support that method");
		} else {
			api_error(&c, 404, "not_found", "no such endpoint");
		}
	} else {
		c.route = r;
		rs->route = r->pattern;
		if (c.internal) {
			/* signed by the cluster; a router may name the caller
			 * whose view an answer is written in (order_txn.c) */
			if (c.principal_hdr && principal_decode(c.principal_hdr->value, c.principal_hdr->value_len,
								&c.who, &c.fwd_quota_left) == 0)
				c.forwarded = 1;
			r->fn(&c);
		}
		else
			api_run(&c);
	}
answered:
	wall_release();
	json_doc_free(c.body);
	if (c.w.err) {
		buf_reset(&rs->body);
		problem_write(&rs->body, 500, "response_too_large", "Internal Server Error",
			      "the response could not be built");
		rs->status = 500;
		rs->content_type = PROBLEM_CONTENT_TYPE;
	}
	/*
	 * The LSN the response waits for: what it reveals.  A request that
	 * committed state depends on its own commit (the newest state); one
	 * that only read depends on the rows it read (DESIGN.md section 3), so
	 * a /healthz, a 401 or a read of old rows never waits for another
	 * connection's fsync.
	 */
	api_take_reveals(&c);
	if (sh->state_lsn != state_before || c.reveals_lsn == UINT64_MAX)
		rs->lsn = sh->state_lsn;
	else
		rs->lsn = c.reveals_lsn;
	/* a router remembers the position of the caller's writes
	 * (read-your-writes, engine/edge/park.h) */
	if (c.cluster_signed && sh->state_lsn != state_before)
		buf_printf(&rs->headers, WM_H_LSN ": %llu\r\n", (unsigned long long)sh->state_lsn);
}

void api_done(void *app, const struct srv_request *rq, const struct srv_response *rs,
	      uint64_t latency_us)
{
	struct shard *sh = app;
	metrics_record(&sh->metrics, rs->route, rs->status, latency_us);
	/* replication polls (engine/replication/: every shard asks every other
	 * one up to every 50 ms when idle) are counted in /metrics but not
	 * logged line by line when they succeed */
	static const char repl_prefix[] = "/internal/replication/";
	int repl_poll = rs->status == 200 && rs->route && !strncmp(rs->route, repl_prefix, sizeof(repl_prefix) - 1);
	if (sh->cfg.access_log && !repl_poll) {
		const struct http_request *h = rq->http;
		log_info("msg=access request_id=%s peer=%s method=%.*s path=\"%.*s\" route=\"%s\" status=%d "
			 "bytes=%zu us=%llu lsn=%llu",
			 rq->request_id, rq->peer, h ? (int)h->method_len : 1, h ? h->method_str : "-",
			 h ? (int)(h->path_len > 200 ? 200 : h->path_len) : 1, h ? h->path : "-",
			 rs->route ? rs->route : "-", rs->status, rs->body.len,
			 (unsigned long long)latency_us, (unsigned long long)rs->lsn);
	}
}

