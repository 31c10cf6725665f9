/*
 * router.c -- wm-router: forwards every partner request to the shard that
 * owns it, signed, and relays the answer (DESIGN.md section 9).
 *
 * Why a router at all: partners must see one address and one API, whatever
 * the number of shards; the shards own countries, and the rules that send
 * a request to its owner (route_class.c) must live in one place that every
 * request crosses.  The router keeps no partner data of its own, so a lost
 * router is replaced by starting another.
 *
 * One request, one of four shapes (route_class.h):
 *   - one owner (RC_HOME, RC_PATH_ID, RC_BODY, RC_QUERY): sent to that shard;
 *   - RC_FIND: sent to every shard at once; the shard that knows the id
 *     answers, the others say 404 (and change nothing): the first answer
 *     that is not a 404 is relayed, else a 404;
 *   - RC_BROADCAST: every shard acts; the first failure is relayed, else
 *     the home's answer;
 *   - RC_FANOUT: one page from every shard, merged (router_fanout.c).
 * The process's own routes (/healthz, /readyz) and the partner portal's
 * static files (/portal/, portal.c) are answered here; /metrics
 * is the home's answer (it checks the operator key) followed by the
 * router's own series.
 *
 * Signing: every forwarded request carries X-WM-Signature over method,
 * target (path and query), time and body hash (cluster_auth.h), so a shard
 * in cluster mode serves partner routes only from a router.  Headers a
 * client sends that look internal (X-WM-*) are dropped, never forwarded.
 *
 * Failures are explicit and never retried behind the caller's back: a
 * shard that cannot be reached is a 503 with Retry-After, one that does
 * not answer within --forward-timeout-ms a 504.  The one exception is a
 * 421 misdirected_request: the shard says the request is not its own
 * under a newer map, so the router reloads its map file and sends the
 * request once more to the owner the new map names (nothing was done by
 * the shard that refused it).
 *
 * Ownership: a struct fwd holds copies of what the request needs after the
 * handler returns (the server's parse buffer is gone by then); it is freed
 * when the last of its calls has answered and the response was handed to
 * srv_complete.  "Freed" mostly means kept: up to ROUTER_FWD_SPARE of them
 * wait for the next requests with their buffers (target, body, headers,
 * the relayed answer), as the edge keeps its request states and the client
 * pools their calls.  A forwarded request used to cost a 5 KB calloc, an
 * 8 KB malloc (glibc consolidates its fastbins on every malloc that size)
 * and ~6 buffer growths; reused, the router's instructions per forwarded
 * quote fell by a fifth (perf/bench.sh, session 45).
 */
#include "shard-router/router.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "engine/base/log.h"
#include "net/buf.h"
#include "net/json.h"
#include "net/jsonw.h"
#include "net/problem.h"
#include "shard-router/coordinator.h"
#include "shard-router/fanout.h"
#include "shard-router/portal.h"
#include "engine/cluster/internal_headers.h"
#include "engine/cluster/route_class.h"

#define ROUTER_RETRY_AFTER "1"       /* seconds, on 503 shard_unavailable */
#define ROUTER_MAX_FWD_HEADERS 8192u /* bytes of the client headers forwarded */
#define API_PAGE_DEFAULT_ROUTER 50u  /* page_size when none is given (spec: default 50) */
#define FANOUT_TAG_BYTES 512         /* route, filters and caller of a fan-out list */
#define ROUTER_FWD_SPARE_BYTES (64u << 10) /* a spare request state keeps buffers of at most this */

struct fwd;

/* One call of a request to one shard. */
struct fwd_call {
	struct fwd *f;
	uint32_t shard;
	char *target;                 /* fan-out: this shard's own target; NULL = the request's */
	char *page;                   /* fan-out: the shard's 200 body, owned */
	size_t page_len;
	int asked;
};

#define BCAST_SUMS_MAX 8 /* members a summing broadcast adds up */

struct fwd {
	struct router *r;
	struct srv_deferred *d;
	const struct rc_rule *rule;
	uint8_t kind;                 /* enum rc_kind, RC_EDGE for /metrics */
	char method[16];
	char *target;                 /* path and query, as received (target_cap bytes) */
	struct buf hdrs;              /* forwarded client header lines */
	char *body;                   /* body_cap bytes */
	size_t body_len;
	size_t target_cap, body_cap;
	struct fwd *next_spare;       /* in the router's fwd_spare list */
	uint32_t shard;               /* one owner: its id */
	struct redge_req *eq;         /* the edge's state of an admitted request (edge.h), or NULL */
	struct redge_report rep;      /* what the answer returned, for the quota and the audit */
	uint64_t wait_lsn;            /* a key/partner write: the home LSN the edge must apply first */
	uint64_t wait_until_ms;

	int reloaded;                 /* a 421 made us reload and resend once */
	uint32_t pending;             /* calls outstanding */
	struct fwd_call calls[SMAP_MAX_SHARDS];
	/* fan-out (RC_FANOUT): the merged position the pages were asked from */
	struct fanout_cursor *from;
	uint32_t page_size;
	char tag[FANOUT_TAG_BYTES];
	size_t tag_len;
	/* several shards: the answer chosen so far */
	struct srv_response out;
	char out_ctype[128];
	int have_out, out_rank;
	uint32_t out_shard;
	/* a broadcast whose rule sums ("sum", "sum-find"): the 2xx answers' integer members
	 * added, their booleans or-ed (bcast_sum) */
	unsigned n_sums;
	char sum_keys[BCAST_SUMS_MAX][32];
	int64_t sums[BCAST_SUMS_MAX];
};

/* ---- helpers ------------------------------------------------------------ */

/* Add a 2xx broadcast answer's integer members to f's sums (booleans or-ed). */
static void bcast_sum(struct fwd *f, const struct hc_response *a)
{
	struct json_doc *d = json_parse(a->body, a->body_len, NULL, NULL);
	const struct json_value *root = d ? json_root(d) : NULL;
	for (uint32_t i = 0; root && root->type == JSON_OBJECT && i < root->len; i++) {
		const struct json_member *m = &root->u.members[i];
		int64_t v;
		if (m->value.type == JSON_TRUE || m->value.type == JSON_FALSE)
			v = m->value.type == JSON_TRUE;
		else if (m->value.type != JSON_NUMBER || json_to_int64(&m->value, &v))
			continue;
		unsigned k = 0;
		while (k < f->n_sums && strcmp(f->sum_keys[k], m->key))
			k++;
		if (k == f->n_sums) {
			if (k == BCAST_SUMS_MAX || m->key_len >= sizeof(f->sum_keys[k]))
				continue;
			memcpy(f->sum_keys[k], m->key, m->key_len + 1);
			f->sums[k] = 0;
			f->n_sums++;
		}
		if (m->value.type == JSON_NUMBER)
			f->sums[k] = f->sums[k] > INT64_MAX - v ? INT64_MAX : f->sums[k] + v;
		else
			f->sums[k] |= v;
	}
	json_doc_free(d);
}

/* The relayed 2xx body of a summing broadcast, its members replaced by the sums. */
static void bcast_write_sums(struct fwd *f)
{
	struct json_doc *d = json_parse(f->out.body.data, f->out.body.len, NULL, NULL);
	const struct json_value *root = d ? json_root(d) : NULL;
	if (!root || root->type != JSON_OBJECT) {
		json_doc_free(d);
		return;
	}
	struct buf nb;
	buf_init(&nb, 1u << 16);
	struct jw w;
	jw_init(&w, &nb);
	jw_obj_begin(&w);
	for (uint32_t i = 0; i < root->len; i++) {
		const struct json_member *m = &root->u.members[i];
		unsigned k = 0;
		while (k < f->n_sums && strcmp(f->sum_keys[k], m->key))
			k++;
		jw_keyn(&w, m->key, m->key_len);
		if (k < f->n_sums && m->value.type == JSON_NUMBER)
			jw_int(&w, f->sums[k]);
		else if (k < f->n_sums && (m->value.type == JSON_TRUE || m->value.type == JSON_FALSE))
			jw_bool(&w, f->sums[k] != 0);
		else
			jw_value(&w, &m->value);
	}
	jw_obj_end(&w);
	if (!w.err) {
		buf_reset(&f->out.body);
		buf_append(&f->out.body, nb.data, nb.len);
	}
	buf_free(&nb);
	json_doc_free(d);
}

static uint64_t now_ms(const struct router *r) { return ev_now_ms(r->loop); }

/* The header lines a client sent that go on to the shard: not hop-by-hop,
 * not framing (the client pool writes Host and Content-Length), not
 * internal.  -1 when they do not fit the bound. */
static int fwd_copy_headers(struct buf *out, const struct http_request *h)
{
	static const char *const drop[] = {"host", "content-length", "connection", "keep-alive", "transfer-encoding",
					   "te", "upgrade", "proxy-connection", "expect", NULL};
	for (uint32_t i = 0; i < h->n_headers; i++) {
		const struct http_header *x = &h->headers[i];
		int skip = x->name_len >= 5 && strncasecmp(x->name, "x-wm-", 5) == 0;
		for (unsigned k = 0; drop[k] && !skip; k++)
			skip = strlen(drop[k]) == x->name_len && strncasecmp(x->name, drop[k], x->name_len) == 0;
		if (skip)
			continue;
		/* appends, not buf_printf: a vsnprintf per header was ~3,000 instructions a forwarded request */
		(void)(buf_append(out, x->name, x->name_len) || BUF_LIT(out, ": ") ||
		       buf_append(out, x->value, x->value_len) || BUF_LIT(out, "\r\n"));
	}
	return out->overflow || out->len > ROUTER_MAX_FWD_HEADERS ? -1 : 0;
}

/* Free f's own buffers and f. */
static void fwd_release(struct fwd *f)
{
	free(f->target);
	free(f->body);
	buf_free(&f->hdrs);
	buf_free(&f->out.headers);
	buf_free(&f->out.body);
	free(f);
}

/* Release f: its fan-out pages and edge state, then f itself, kept with its
 * buffers among the router's spares while there is room (fwd_alloc). */
static void fwd_free(struct fwd *f)
{
	struct router *r = f->r;
	if (f->from) /* only a fan-out has per-call targets and pages */
		for (uint32_t i = 0; i < SMAP_MAX_SHARDS; i++) {
			free(f->calls[i].target);
			free(f->calls[i].page);
		}
	redge_free(&r->edge, f->eq);
	free(f->from);
	size_t held = f->target_cap + f->body_cap + f->hdrs.cap + f->out.headers.cap + f->out.body.cap;
	if (!r->closing && r->n_fwd_spare < ROUTER_FWD_SPARE && held <= ROUTER_FWD_SPARE_BYTES) {
		f->next_spare = r->fwd_spare;
		r->fwd_spare = f;
		r->n_fwd_spare++;
		return;
	}
	fwd_release(f);
}

/* A zeroed request state for r, its buffers empty: a spare (keeping their
 * memory: no calloc of ~5 KB and no buffer growth per request) or a new
 * one.  NULL when out of memory. */
static struct fwd *fwd_alloc(struct router *r)
{
	struct fwd *f = r->fwd_spare;
	if (!f) {
		f = calloc(1, sizeof(*f));
		if (!f)
			return NULL;
		buf_init(&f->hdrs, ROUTER_MAX_FWD_HEADERS + 1024);
		buf_init(&f->out.headers, 0);
		buf_init(&f->out.body, 0);
		f->r = r;
		return f;
	}
	r->fwd_spare = f->next_spare;
	r->n_fwd_spare--;
	struct buf hdrs = f->hdrs, oh = f->out.headers, ob = f->out.body;
	char *target = f->target, *body = f->body;
	size_t target_cap = f->target_cap, body_cap = f->body_cap;
	memset(f, 0, sizeof(*f));
	f->hdrs = hdrs;
	f->out.headers = oh;
	f->out.body = ob;
	buf_reset(&f->hdrs);
	buf_reset(&f->out.headers);
	buf_reset(&f->out.body);
	f->target = target;
	f->target_cap = target_cap;
	f->body = body;
	f->body_cap = body_cap;
	f->r = r;
	return f;
}

/* Make *p hold at least `need` bytes (*cap its size).  0, or -1 (OOM, *p kept). */
static int fwd_room(char **p, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	char *n = realloc(*p, need);
	if (!n)
		return -1;
	*p = n;
	*cap = need;
	return 0;
}

/* The spare request states, freed (router_close: none is kept once it
 * has set `closing`). */
static void fwd_spares_free(struct router *r)
{
	while (r->fwd_spare) {
		struct fwd *f = r->fwd_spare;
		r->fwd_spare = f->next_spare;
		r->n_fwd_spare--;
		fwd_release(f);
	}
}

/* A problem+json answer into rs. */
static void answer_problem(struct srv_response *rs, int status, const char *code, const char *detail)
{
	buf_reset(&rs->body);
	rs->status = status;
	rs->content_type = PROBLEM_CONTENT_TYPE;
	problem_write(&rs->body, status, code, http_reason(status), detail);
}

/*
 * Copy a shard's answer into rs: status, Content-Type, the end-to-end
 * headers (ETag, Location, RateLimit, Retry-After, Allow, ...) and the
 * body.  Internal headers (X-WM-*) and the ones the server writes itself
 * are left out.  ctype receives the content type (rs points at it).
 */
static void router_relay_into(struct srv_response *rs, const struct hc_response *a, char *ctype, size_t ctype_size)
{
	static const char *const own[] = {"date", "content-length", "connection", "keep-alive", "x-request-id",
					  "transfer-encoding", NULL};
	rs->status = a->status;
	rs->content_type = NULL;
	const char *p = memchr(a->head, '\n', a->head_len), *end = a->head + a->head_len;
	while (p && ++p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			break;
		size_t ll = (size_t)(eol - p);
		if (ll && p[ll - 1] == '\r')
			ll--;
		const char *colon = memchr(p, ':', ll);
		if (colon) {
			size_t nl = (size_t)(colon - p);
			const char *v = colon + 1;
			while (v < p + ll && *v == ' ')
				v++;
			size_t vl = (size_t)(p + ll - v);
			int skip = nl >= 5 && strncasecmp(p, "x-wm-", 5) == 0;
			for (unsigned k = 0; own[k] && !skip; k++)
				skip = strlen(own[k]) == nl && strncasecmp(p, own[k], nl) == 0;
			if (nl == 12 && strncasecmp(p, "content-type", 12) == 0) {
				size_t cl = vl < ctype_size - 1 ? vl : ctype_size - 1; /* truncated as snprintf would */
				memcpy(ctype, v, cl);
				ctype[cl] = 0;
				rs->content_type = ctype;
			} else if (!skip) {
				(void)(buf_append(&rs->headers, p, ll) || BUF_LIT(&rs->headers, "\r\n"));
			}
		}
		p = eol;
	}
	buf_append(&rs->body, a->body, a->body_len);
}

/* The router's own series, appended to the home's /metrics. */
static void router_metrics(const struct router *r, struct buf *b)
{
	static const char *const kinds[RC_N_KIND] = {"",	 "edge", "home",      "path_id", "body",
						     "fanout", "find", "broadcast", "query"};
	buf_printf(b, "# TYPE wm_router_requests_total counter\n");
	for (unsigned k = 1; k < RC_N_KIND; k++)
		buf_printf(b, "wm_router_requests_total{kind=\"%s\"} %llu\n", kinds[k],
			   (unsigned long long)r->st.by_kind[k]);
	buf_printf(b,
		   "wm_router_forwarded_total %llu\nwm_router_failed_total %llu\nwm_router_timeouts_total %llu\n"
		   "wm_router_refused_full_total %llu\nwm_router_misdirected_total %llu\n"
		   "wm_router_map_reloads_total %llu\nwm_router_map_version %llu\n",
		   (unsigned long long)r->st.forwarded, (unsigned long long)r->st.failed,
		   (unsigned long long)r->st.timeouts, (unsigned long long)r->st.refused_full,
		   (unsigned long long)r->st.misdirected, (unsigned long long)r->st.map_reloads,
		   (unsigned long long)r->map.version);
	/* the states kept for reuse (memory held between requests) and their bounds */
	buf_printf(b,
		   "# TYPE wm_router_spare_states gauge\nwm_router_spare_states{kind=\"forward\"} %u\n"
		   "wm_router_spare_states{kind=\"edge\"} %u\n"
		   "# TYPE wm_router_spare_states_limit gauge\nwm_router_spare_states_limit{kind=\"forward\"} %u\n"
		   "wm_router_spare_states_limit{kind=\"edge\"} %u\nwm_router_spare_states_limit{kind=\"shard_call\"} %u\n",
		   r->n_fwd_spare, r->edge.n_spare, ROUTER_FWD_SPARE, REDGE_SPARE, HC_CALL_SPARE);
	for (uint32_t i = 0; i < r->map.n; i++) {
		struct hc_stats s;
		hc_stats(r->pools[i], &s);
		buf_printf(b,
			   "wm_router_shard_calls_total{shard=\"%u\"} %llu\nwm_router_shard_failed_total{shard=\"%u\"} "
			   "%llu\nwm_router_shard_open_conns{shard=\"%u\"} %u\nwm_router_shard_queued{shard=\"%u\"} %u\n"
			   "wm_router_shard_spare_calls{shard=\"%u\"} %u\n",
			   i, (unsigned long long)s.calls, i, (unsigned long long)s.failed, i, s.open, i, s.queued, i,
			   s.spare);
	}
}

/* ---- read-your-writes ---------------------------------------------------- */

/* X-WM-Min-Position for a call to `shard`: the writes acknowledged
 * through this router on the other shards, which that shard reads through
 * its replicas. */
static void ryw_header(const struct fwd *f, uint32_t shard, struct buf *h)
{
	const struct router_ryw *w = &f->r->ryw;
	int first = 1;
	for (uint32_t p = 0; p < f->r->map.n; p++) {
		if (p == shard || !w->lsn[p])
			continue;
		buf_printf(h, "%s%u:%llu", first ? WM_H_MIN_POSITION ": " : ",", p, (unsigned long long)w->lsn[p]);
		first = 0;
	}
	if (!first)
		buf_puts(h, "\r\n");
}

/* The shard's LSN after a write it answered (X-WM-LSN), or 0. */
static uint64_t answer_lsn(const struct hc_response *a)
{
	char v[32];
	if (!a || hc_header(a, WM_H_LSN, v, sizeof(v)) != 1)
		return 0;
	char *end;
	unsigned long long lsn = strtoull(v, &end, 10);
	return *end == 0 ? lsn : 0;
}

/* A shard answered a write: remember its position. */
static void ryw_note(struct fwd *f, uint32_t shard, const struct hc_response *a)
{
	uint64_t lsn = answer_lsn(a);
	if (shard < SMAP_MAX_SHARDS && lsn > f->r->ryw.lsn[shard])
		f->r->ryw.lsn[shard] = lsn;
}

/* ---- sending ------------------------------------------------------------ */

static void on_answer(void *arg, const struct hc_response *a, const char *err);
static void fanout_answer(struct fwd *f, struct fwd_call *call, const struct hc_response *a);

/* The signature line (and the principal's, when there is one) of a call to
 * a shard, in the router's scratch buffer, which the caller appends to and
 * hands to hc_send: hc_send copies the lines into its call and never calls
 * back from inside (client.h). */
static struct buf *signed_headers(struct router *r, const char *sig, const char *who, size_t who_len)
{
	struct buf *h = &r->call_hdrs;
	buf_reset(h);
	(void)(BUF_LIT(h, CK_HEADER_NAME ": ") || buf_puts(h, sig) || BUF_LIT(h, "\r\n"));
	if (who)
		(void)(BUF_LIT(h, WM_H_PRINCIPAL ": ") || buf_append(h, who, who_len) || BUF_LIT(h, "\r\n"));
	return h;
}

/* May the request share a connection to its shard with others (client.h:
 * pipelining)?  Only the quick ones, that the shard answers as soon as it
 * reads them: reads (GET; a HEAD goes on as one, fwd_new) and the quote (a
 * read by POST) -- and only
 * when no read-your-writes position goes with it (fwd_send), since a shard
 * behind that position parks the request (up to PARK_WAIT_MS) and those
 * behind it on the connection would wait as long.  Writes keep a
 * connection each: their answers wait for an fsync. */
static int fwd_quick(const struct fwd *f)
{
	if (!strcmp(f->method, "GET"))
		return 1;
	return f->rule && !strcmp(f->method, "POST") && !strcmp(f->rule->pattern, "/v1/orders/quote-calculate");
}

/* Send the request to one shard (the call slot of that shard).  0, or -1
 * when the shard's pool and queue are full or the request cannot be
 * signed (the caller answers 503). */
static int fwd_send(struct fwd *f, uint32_t shard)
{
	struct router *r = f->r;
	char sig[CK_HEADER_MAX];
	const char *target = shard < SMAP_MAX_SHARDS && f->calls[shard].target ? f->calls[shard].target : f->target;
	const char *who = f->eq ? f->eq->principal : NULL;
	size_t who_len = f->eq ? (size_t)f->eq->principal_len : 0;
	if (shard >= r->map.n ||
	    ck_sign_principal(&r->key, f->method, strlen(f->method), target, strlen(target), (int64_t)time(NULL),
			      f->body, f->body_len, who, who_len, sig))
		return -1;
	struct buf *h = signed_headers(r, sig, who, who_len);
	size_t before_ryw = h->len;
	ryw_header(f, shard, h);
	int may_park = h->len != before_ryw;
	if (f->kind == RC_FANOUT)
		buf_puts(h, WM_H_FANOUT ": 1\r\n");
	if (f->rule && !strcmp(f->method, "POST") && !strcmp(f->rule->pattern, "/v1/orders"))
		buf_puts(h, coord_header(r->coord)); /* it may coordinate the order across shards */
	buf_append(h, f->hdrs.data, f->hdrs.len);
	buf_append(h, "", 1); /* NUL for hc_request.headers */
	struct hc_request rq = {.method = f->method, .path = target, .headers = h->data, .body = f->body,
				.body_len = f->body_len, .timeout_ms = (uint32_t)r->cfg.forward_timeout_ms,
				.pipeline = !may_park && fwd_quick(f)};
	f->calls[shard].f = f;
	f->calls[shard].shard = shard;
	f->calls[shard].asked = 1;
	int rc = h->overflow ? -1 : hc_send(r->pools[shard], &rq, on_answer, &f->calls[shard]);
	if (h->cap > ROUTER_FWD_SPARE_BYTES) /* a rare large one is not kept */
		buf_free(h);
	if (rc) {
		r->st.refused_full++;
		return -1;
	}
	f->pending++;
	r->st.forwarded++;
	return 0;
}

/* Hand rs to the server for the deferred request and free f; an admitted
 * request's quota and audit first (edge.h). */
static void fwd_finish(struct fwd *f, struct srv_response *rs)
{
	if (f->eq) {
		redge_finish(&f->r->edge, f->eq, &f->rep, rs);
		f->eq = NULL;
	}
	if (f->d) /* NULL: the request was answered at once (no memory to defer) */
		srv_complete(f->r->srv, f->d, rs);
	fwd_free(f);
}

/* ---- for the coordinator (coordinator.h: struct coord_host) ---- */

static void router_fwd_finish(struct fwd *f, struct srv_response *rs) { fwd_finish(f, rs); }

static const char *router_fwd_principal(const struct fwd *f, size_t *len)
{
	if (!f->eq)
		return NULL;
	*len = (size_t)f->eq->principal_len;
	return f->eq->principal;
}

static const char *router_fwd_body(const struct fwd *f, size_t *len)
{
	*len = f->body ? f->body_len : 0;
	return f->body ? f->body : "";
}

/* A signed internal call to shard `shard` (principal may be NULL; pipeline:
 * hc_request.pipeline): 0, or -1 when the shard's pool is full or the
 * router is stopping (done is not called then). */
static int router_call(struct router *r, uint32_t shard, const char *method, const char *path, const char *body,
		       size_t body_len, const char *principal, size_t principal_len, uint32_t timeout_ms, int pipeline,
		       hc_done_fn done, void *arg)
{
	char sig[CK_HEADER_MAX];
	if (r->closing || shard >= r->map.n || !r->pools[shard] ||
	    ck_sign_principal(&r->key, method, strlen(method), path, strlen(path), (int64_t)time(NULL), body, body_len,
			      principal, principal_len, sig))
		return -1;
	struct buf *h = signed_headers(r, sig, principal, principal_len);
	if (body_len)
		BUF_LIT(h, "Content-Type: application/json\r\n");
	buf_append(h, "", 1);
	struct hc_request rq = {.method = method, .path = path, .headers = h->data, .body = body, .body_len = body_len,
				.timeout_ms = timeout_ms, .pipeline = pipeline};
	int rc = h->overflow ? -1 : hc_send(r->pools[shard], &rq, done, arg);
	if (h->cap > ROUTER_FWD_SPARE_BYTES)
		buf_free(h);
	return rc;
}

/* Answer with a problem (503/504/502) and finish. */
static void fwd_fail(struct fwd *f, int status, const char *code, const char *detail)
{
	struct srv_response rs = {0};
	buf_init(&rs.headers, 0);
	buf_init(&rs.body, 0);
	answer_problem(&rs, status, code, detail);
	if (status == 503)
		buf_printf(&rs.headers, "Retry-After: " ROUTER_RETRY_AFTER "\r\n");
	rs.route = f->rule ? f->rule->pattern : "-";
	f->r->st.failed++;
	fwd_finish(f, &rs);
	buf_free(&rs.headers);
	buf_free(&rs.body);
}

/* The owner of a one-owner request under the map in force. */
static uint32_t fwd_owner(const struct router *r, const struct fwd *f)
{
	char cc[3] = "";
	int found = 0;
	if (f->rule && f->rule->kind == RC_PATH_ID)
		found = rc_path_country(f->rule, f->target, strcspn(f->target, "?"), cc);
	else if (f->rule && f->rule->kind == RC_BODY)
		found = rc_body_country(f->rule, f->body, f->body_len, cc);
	else if (f->rule && f->rule->kind == RC_QUERY)
		found = rc_query_country(f->rule, f->target, strlen(f->target), cc);
	int owner = found ? smap_owner(&r->map, cc) : -1;
	return owner >= 0 ? (uint32_t)owner : 0; /* no country: the home validates and answers */
}

/* A broadcast whose rule sums the 2xx answers: "sum", or "sum-find",
 * where a shard that does not know the resource answers 404 and that
 * answer loses to any 2xx (a replay of one delivery: only the shard that
 * holds it acts). */
static int rule_sums(const struct rc_rule *r) { return r->fields && !strncmp(r->fields, "sum", 3); }
static int rule_finds(const struct rc_rule *r) { return r->fields && !strcmp(r->fields, "sum-find"); }

/* Rank of an answer for RC_FIND/RC_BROADCAST under rule r: the higher is relayed. */
static int answer_rank(const struct rc_rule *r, uint8_t kind, int status, uint32_t shard)
{
	if (kind == RC_FIND)
		return status == 404 ? (shard == 0 ? 1 : 0) : 3;
	if (status == 404 && rule_finds(r))
		return 0;
	/* broadcast: a failure wins, then the home's answer */
	return status >= 400 ? 3 : (shard == 0 ? 2 : 1);
}

/* A write the edge reads back (API keys, partners: the tables of its
 * replica, edge.h). */
static int edge_write(const struct fwd *f)
{
	static const char *const prefixes[] = {"/api/keys", "/v1/partners", NULL};
	if (!f->eq || !api_is_write(f->eq->c.route->method))
		return 0;
	for (int i = 0; prefixes[i]; i++)
		if (!strncmp(f->eq->c.route->pattern, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

/* A home's answer to a key or partner write the edge has not applied yet:
 * keep it in f->out until it has (router_edge_poll).  1 = kept. */
static int edge_wait(struct fwd *f, const struct hc_response *a)
{
	struct router *r = f->r;
	uint64_t lsn = answer_lsn(a);
	if (f->shard != 0 || !lsn || !edge_write(f) || redge_applied(&r->edge) >= lsn ||
	    r->n_edge_wait == ROUTER_EDGE_WAIT_MAX)
		return 0;
	buf_reset(&f->out.headers);
	buf_reset(&f->out.body);
	router_relay_into(&f->out, a, f->out_ctype, sizeof(f->out_ctype));
	f->out.route = f->rule ? f->rule->pattern : "-";
	f->wait_lsn = lsn;
	f->wait_until_ms = now_ms(r) + ROUTER_EDGE_WAIT_MS;
	r->edge_wait[r->n_edge_wait++] = f;
	return 1;
}

void router_edge_poll(struct router *r, int all)
{
	uint64_t applied = redge_applied(&r->edge), now = now_ms(r);
	for (uint32_t i = 0; i < r->n_edge_wait;) {
		struct fwd *f = r->edge_wait[i];
		int late = now >= f->wait_until_ms;
		if (!all && !late && applied < f->wait_lsn) {
			i++;
			continue;
		}
		r->edge_wait[i] = r->edge_wait[--r->n_edge_wait];
		if (late)
			log_warn("msg=\"a key or partner write is answered before the router's replica shows it\" "
				 "lsn=%llu applied=%llu action=\"check the replication from shard 0 (wm_repl_lag_lsn)\"",
				 (unsigned long long)f->wait_lsn, (unsigned long long)applied);
		r->st.relayed++;
		fwd_finish(f, &f->out);
	}
}

static void on_answer(void *arg, const struct hc_response *a, const char *err)
{
	struct fwd_call *call = arg;
	struct fwd *f = call->f;
	struct router *r = f->r;
	f->pending--;
	if (a && call->shard == 0)
		r->home_seen_ms = now_ms(r);
	if (a)
		ryw_note(f, call->shard, a);
	if (err) {
		int timeout = strstr(err, "timed out") != NULL;
		r->st.timeouts += timeout;
		log_warn("msg=\"shard call failed\" shard=%u addr=%s target=\"%.200s\" error=\"%s\"", call->shard,
			 call->shard < r->map.n ? r->map.shards[call->shard].addr : "-", f->target, err);
	}
	if (f->kind == RC_FANOUT) {
		fanout_answer(f, call, a);
		return;
	}
	if (f->kind == RC_FIND || f->kind == RC_BROADCAST) {
		int status = a ? a->status : 0;
		int rank = a ? answer_rank(f->rule, f->kind, status, call->shard) : 4; /* an unreachable shard wins */
		if (!f->have_out || rank > f->out_rank) {
			buf_reset(&f->out.headers);
			buf_reset(&f->out.body);
			if (a)
				router_relay_into(&f->out, a, f->out_ctype, sizeof(f->out_ctype));
			else
				answer_problem(&f->out, 503, "shard_unavailable", "a shard of the cluster did not answer");
			redge_report_from(a, &f->rep);
			f->have_out = 1;
			f->out_rank = rank;
		}
		if (a && status / 100 == 2 && f->kind == RC_BROADCAST && rule_sums(f->rule))
			bcast_sum(f, a);
		if (f->pending == 0) {
			if (f->n_sums && f->out.status / 100 == 2)
				bcast_write_sums(f);
			f->out.route = f->rule->pattern;
			if (f->out.status == 503 && !a)
				buf_printf(&f->out.headers, "Retry-After: " ROUTER_RETRY_AFTER "\r\n");
			r->st.relayed++;
			fwd_finish(f, &f->out);
		}
		return;
	}
	if (!a) {
		char d[256];
		snprintf(d, sizeof(d), "shard %u (%s) %s", call->shard, r->map.shards[call->shard].addr,
			 strstr(err, "timed out") ? "did not answer in time" : "cannot be reached");
		if (strstr(err, "timed out"))
			fwd_fail(f, 504, "shard_timeout", d);
		else
			fwd_fail(f, 503, "shard_unavailable", d);
		return;
	}
	if (a->status == 421 && !f->reloaded) {
		/* the shard's map is newer than ours: reload, resend once */
		r->st.misdirected++;
		f->reloaded = 1;
		char e[512];
		if (router_reload_map(r, e, sizeof(e)))
			log_warn("msg=\"shard map reload after 421 failed\" error=\"%s\"", e);
		if (fwd_send(f, fwd_owner(r, f)) == 0)
			return;
		fwd_fail(f, 503, "shard_unavailable", "the owning shard cannot take the request now");
		return;
	}
	if (edge_wait(f, a))
		return;
	if (a->status == 202 && coord_begin(r->coord, f, call->shard, a))
		return; /* a cross-shard order: the coordinator answers it */
	struct srv_response *rs = &f->out; /* one owner: the fwd's own answer is free, its buffers kept */
	buf_reset(&rs->headers);
	buf_reset(&rs->body);
	router_relay_into(rs, a, f->out_ctype, sizeof(f->out_ctype));
	redge_report_from(a, &f->rep);
	if (f->kind == RC_EDGE && a->status == 200) {
		router_metrics(r, &rs->body);
		redge_metrics(&r->edge, &rs->body);
		coord_metrics(r->coord, &rs->body);
	}
	rs->route = f->rule ? f->rule->pattern : "-";
	r->st.relayed++;
	fwd_finish(f, rs);
}

/* ---- fan-out lists (shard-router/fanout.h) ------------------------------ */

/* The query without its cursor parameter into out (NUL-terminated). */
static void query_without_cursor(const char *q, size_t n, struct buf *out)
{
	while (n) {
		const char *amp = memchr(q, '&', n);
		size_t k = amp ? (size_t)(amp - q) : n;
		if (k && !(k >= 7 && !memcmp(q, "cursor=", 7)) && !(k == 6 && !memcmp(q, "cursor", 6))) {
			if (out->len)
				buf_append(out, "&", 1);
			buf_append(out, q, k);
		}
		q += k + (amp != NULL);
		n -= k + (amp != NULL);
	}
}

/*
 * Prepare a fan-out: the list's tag (route, the filters of the query, the
 * caller), its page size and the merged position to start from; each
 * shard's target.  0 = ready to send; otherwise the status of the answer
 * written into rs (400 for a cursor that is not this list's, or a page
 * size that is not one: the shards would say the same).
 */
static int fanout_prepare(struct fwd *f, const struct http_request *h, struct srv_response *rs)
{
	struct router *r = f->r;
	char v[FANOUT_CURSOR_MAX + 1];
	f->page_size = API_PAGE_DEFAULT_ROUTER;
	int n = http_query_get(h->query, h->query_len, "page_size", v, sizeof(v));
	if (n >= 0) {
		char *end;
		unsigned long ps = strtoul(v, &end, 10);
		if (n == 0 || *end || ps < 1 || ps > FANOUT_PAGE_MAX)
			return -1; /* the home answers the 400 with the exact wording */
		f->page_size = (uint32_t)ps;
	} else if (n == -2) {
		return -1;
	}
	struct buf q;
	buf_init(&q, 0);
	query_without_cursor(h->query, h->query_len, &q);
	const struct http_header *auth = http_find_header(h, "Authorization");
	uint64_t who = auth ? XXH3_64bits(auth->value, auth->value_len) : 0;
	int tl = snprintf(f->tag, sizeof(f->tag), "%s\n%.*s\n%016llx", f->rule->pattern, (int)q.len, q.data ? q.data : "",
			  (unsigned long long)who);
	f->tag_len = tl > 0 && (size_t)tl < sizeof(f->tag) ? (size_t)tl : sizeof(f->tag) - 1;
	f->from = malloc(sizeof(*f->from));
	if (!f->from) {
		buf_free(&q);
		return -1;
	}
	n = http_query_get(h->query, h->query_len, "cursor", v, sizeof(v));
	if (n == -1) {
		fanout_cursor_init(f->from, r->map.version);
	} else {
		int e = n < 0 ? FC_E_TOO_LARGE
			      : fanout_cursor_decode(&r->key, v, (size_t)n, f->tag, f->tag_len, r->map.version, f->from);
		if (e != FC_OK) {
			buf_free(&q);
			answer_problem(rs, 400, "invalid_cursor", fanout_cursor_detail(e));
			return 400;
		}
	}
	/* each shard's target: the path, the filters, its own cursor */
	for (uint32_t i = 0; i < r->map.n; i++) {
		const struct fanout_pos *p = &f->from->shard[i];
		if (p->state == FANOUT_EXHAUSTED)
			continue;
		struct buf t;
		buf_init(&t, 0);
		buf_printf(&t, "%.*s?%.*s%s", (int)h->path_len, h->path, (int)q.len, q.data ? q.data : "", q.len ? "&" : "");
		if (p->state == FANOUT_AT)
			buf_printf(&t, "cursor=%s&", p->text);
		t.len--; /* the last '&' (or the '?' of an empty query) */
		buf_append(&t, "", 1);
		f->calls[i].target = t.overflow ? NULL : strdup(t.data);
		buf_free(&t);
		if (!f->calls[i].target) {
			buf_free(&q);
			return -1;
		}
	}
	buf_free(&q);
	return 0;
}

/* Send one page request to every shard not exhausted: how many were sent. */
static int fanout_send(struct fwd *f)
{
	int sent = 0, wanted = 0;
	for (uint32_t i = 0; i < f->r->map.n; i++) {
		if (!f->calls[i].target)
			continue;
		wanted++;
		sent += fwd_send(f, i) == 0;
	}
	if (wanted == 0) {
		/* every shard exhausted: an empty last page, nobody asked */
		return 0;
	}
	if (sent && sent < wanted) {
		f->have_out = 1;
		f->out_rank = 4;
		answer_problem(&f->out, 503, "shard_unavailable", "a shard of the cluster is overloaded");
	}
	return sent;
}

/* Merge the pages (every call answered 200) into the answer. */
static void fanout_complete(struct fwd *f)
{
	struct router *r = f->r;
	struct fanout_page pages[SMAP_MAX_SHARDS];
	for (uint32_t i = 0; i < r->map.n; i++)
		pages[i] = (struct fanout_page){.asked = f->calls[i].asked, .body = f->calls[i].page,
						.body_len = f->calls[i].page_len};
	struct fanout_merge_args ma = {.key = &r->key, .tag = f->tag, .tag_len = f->tag_len, .from = f->from,
				       .n_shards = r->map.n, .pages = pages, .page_size = f->page_size,
				       .max_page_bytes = ROUTER_MAX_RESPONSE};
	struct fanout_result *res = malloc(sizeof(*res));
	struct buf body;
	buf_init(&body, 0);
	int e = res ? fanout_merge(&ma, &body, res) : FM_E_OUTPUT;
	if (e == FM_OK) {
		buf_reset(&f->out.body);
		buf_append(&f->out.body, body.data, body.len);
		f->out.status = 200;
		/* the audit's span of a merged page: the first and last id it
		 * returned (the merged cursor is longer than a span holds) */
		memset(&f->rep, 0, sizeof(f->rep));
		f->rep.rows = res->rows;
		snprintf(f->rep.span_from, sizeof(f->rep.span_from), "%s", res->first_id);
		snprintf(f->rep.span_to, sizeof(f->rep.span_to), "%s", res->last_id);
	} else {
		log_error("msg=\"fan-out merge refused\" route=\"%s\" shard=%d error=%d detail=\"%s\"", f->rule->pattern,
			  res ? res->err_shard : -1, e, res ? res->detail : "out of memory");
		buf_reset(&f->out.headers);
		answer_problem(&f->out, 502, "bad_shard_answer", "a shard answered a list page the router cannot merge");
		r->st.failed++;
	}
	buf_free(&body);
	free(res);
}

/* One shard's page (or failure) of a fan-out; the answer once all are in:
 * the first failure by shard order (a 401, a 429, a 503 ...), else the
 * merged page with the lowest shard's headers (its RateLimit). */
static void fanout_answer(struct fwd *f, struct fwd_call *call, const struct hc_response *a)
{
	int rank = !a ? 4 : a->status != 200 ? 3 : 1;
	if (rank == 1) {
		call->page = malloc(a->body_len + 1);
		if (call->page) {
			memcpy(call->page, a->body, a->body_len);
			call->page_len = a->body_len;
		} else {
			rank = 4;
		}
	}
	if (!f->have_out || rank > f->out_rank || (rank == f->out_rank && rank != 1 && call->shard < f->out_shard)) {
		buf_reset(&f->out.headers);
		buf_reset(&f->out.body);
		if (a && rank != 4)
			router_relay_into(&f->out, a, f->out_ctype, sizeof(f->out_ctype));
		else
			answer_problem(&f->out, 503, "shard_unavailable", "a shard of the cluster did not answer");
		redge_report_from(rank == 3 ? a : NULL, &f->rep); /* a relayed refusal: the shard's report */
		f->have_out = 1;
		f->out_rank = rank;
		f->out_shard = call->shard;
	}
	if (f->pending)
		return;
	if (f->out_rank == 1)
		fanout_complete(f);
	else if (f->out_rank == 4)
		buf_printf(&f->out.headers, "Retry-After: " ROUTER_RETRY_AFTER "\r\n");
	f->out.route = f->rule->pattern;
	f->r->st.relayed++;
	fwd_finish(f, &f->out);
}

/* ---- the process's own routes ------------------------------------------ */

/* /healthz and /readyz answer as a shard's do (the contract does not
 * change with the deployment): the router's storage is its data directory,
 * which it only reads and locks; its readiness LSN is the home's last one
 * seen by the probe. */
static void answer_healthz(struct router *r, struct srv_response *rs)
{
	(void)r;
	buf_puts(&rs->body, "{\"status\":\"ok\",\"storage\":\"ok\"}");
}

static void answer_readyz(struct router *r, struct srv_response *rs)
{
	uint64_t now = now_ms(r);
	if (r->home_seen_ms && now - r->home_seen_ms <= ROUTER_READY_WINDOW_MS && redge_ready(&r->edge)) {
		buf_printf(&rs->body, "{\"status\":\"ready\",\"lsn\":%llu,\"storage\":\"ok\"}",
			   (unsigned long long)r->home_lsn);
		return;
	}
	char d[200];
	if (!redge_ready(&r->edge))
		snprintf(d, sizeof(d), "the router's replica of the keys has not yet caught up with the catalogue home "
			 "(shard 0 at %s)", r->map.shards[0].addr);
	else
		snprintf(d, sizeof(d), "the catalogue home (shard 0 at %s) has not answered for %u ms or more",
			 r->map.shards[0].addr, ROUTER_READY_WINDOW_MS);
	answer_problem(rs, 503, "not_ready", d);
	buf_printf(&rs->headers, "Retry-After: " ROUTER_RETRY_AFTER "\r\n");
}

/*
 * /internal/ at the router (signed with the cluster secret, as at a shard;
 * never forwarded): GET /internal/cluster/status for `wm-ctl cluster
 * status`.  Anything else there is a 404; unsigned, a 401.
 */
static void answer_internal(struct router *r, const struct http_request *h, struct srv_response *rs)
{
	const struct http_header *sig = http_find_header(h, CK_HEADER_NAME);
	if (!sig || ck_verify(&r->key, h->method_str, h->method_len, h->target, h->target_len, h->body, h->body_len,
			      sig->value, sig->value_len, (int64_t)time(NULL), CK_DEFAULT_SKEW_S) != CK_OK) {
		answer_problem(rs, 401, "cluster_signature_required", "internal routes need a valid cluster signature");
		rs->route = "-internal";
		return;
	}
	if (h->method == HTTP_M_GET && h->path_len == 20 && !memcmp(h->path, "/internal/txn/status", 20)) {
		rs->route = "/internal/txn/status";
		coord_status(r->coord, h->query, h->query_len, rs);
		return;
	}
	if (h->method != HTTP_M_GET || h->path_len != 24 || memcmp(h->path, "/internal/cluster/status", 24)) {
		answer_problem(rs, 404, "not_found", "no such endpoint");
		rs->route = "-internal";
		return;
	}
	rs->route = "/internal/cluster/status";
	uint64_t now = now_ms(r);
	buf_printf(&rs->body,
		   "{\"process\":\"wm-router\",\"map_version\":%llu,\"shards\":%u,\"home_lsn\":%llu,"
		   "\"ready\":%s,\"forwarded\":%llu,\"failed\":%llu,\"in_doubt\":%llu}",
		   (unsigned long long)r->map.version, r->map.n, (unsigned long long)r->home_lsn,
		   r->home_seen_ms && now - r->home_seen_ms <= ROUTER_READY_WINDOW_MS ? "true" : "false",
		   (unsigned long long)r->st.forwarded, (unsigned long long)r->st.failed,
		   (unsigned long long)coord_in_doubt(r->coord));
}

/* ---- the handler -------------------------------------------------------- */

/* Copy what the calls need of the request; NULL when a bound is passed
 * (the caller answers). */
static struct fwd *fwd_new(struct router *r, const struct srv_request *rq, const struct rc_rule *rule)
{
	const struct http_request *h = rq->http;
	struct fwd *f = fwd_alloc(r);
	if (!f)
		return NULL;
	f->rule = rule;
	/* HEAD goes on as GET: a shard's answer to HEAD announces a body it
	 * does not send, which the client pool would wait for; the server
	 * strips the body of the relayed answer for the HEAD it deferred */
	if (h->method == HTTP_M_HEAD)
		memcpy(f->method, "GET", 4);
	else if (h->method_len < sizeof(f->method)) {
		memcpy(f->method, h->method_str, h->method_len);
		f->method[h->method_len] = 0;
	}
	size_t tl = strnlen(h->target, h->target_len); /* as strndup took it */
	if (h->method_len >= sizeof(f->method) || fwd_room(&f->target, &f->target_cap, tl + 1) ||
	    fwd_room(&f->body, &f->body_cap, h->body_len + 1) || fwd_copy_headers(&f->hdrs, h)) {
		fwd_free(f);
		return NULL;
	}
	memcpy(f->target, h->target, tl);
	f->target[tl] = 0;
	f->body_len = h->body_len;
	if (h->body_len)
		memcpy(f->body, h->body, h->body_len);
	return f;
}

/* The router answers rs itself, at once: the edge's quota and audit of an
 * admitted request, then f is freed. */
static void fwd_answer_now(struct fwd *f, struct srv_response *rs)
{
	if (f->eq) {
		redge_finish(&f->r->edge, f->eq, &f->rep, rs);
		f->eq = NULL;
	}
	fwd_free(f);
}

void router_handle(void *app, const struct srv_request *rq, struct srv_response *rs)
{
	struct router *r = app;
	const struct http_request *h = rq->http;
	const struct rc_rule *rule = rc_find(h->method, h->path, h->path_len);
	uint8_t kind = rule ? rule->kind : RC_HOME;
	r->st.by_kind[kind]++;
	rs->route = rule ? rule->pattern : "-other";
	if (kind == RC_EDGE && h->path_len == 8 && !memcmp(h->path, "/healthz", 8)) {
		answer_healthz(r, rs);
		return;
	}
	if (kind == RC_EDGE && h->path_len == 7 && !memcmp(h->path, "/readyz", 7)) {
		answer_readyz(r, rs);
		return;
	}
	if (h->path_len >= 10 && !memcmp(h->path, "/internal/", 10)) {
		answer_internal(r, h, rs);
		return;
	}
	if (!rule && portal_owns(h->path, h->path_len)) { /* the partner portal: static, no key */
		portal_answer(h, rs);
		return;
	}
	/* the edge: key, rate, scope, action (the process's own /metrics is
	 * the home's to check) */
	struct redge_req *eq = NULL;
	int own_metrics = kind == RC_EDGE && h->path_len == 8 && !memcmp(h->path, "/metrics", 8);
	if (!own_metrics && redge_admit(&r->edge, rq, rs, &eq) == REDGE_ANSWERED)
		return;
	struct fwd *f = fwd_new(r, rq, rule);
	if (!f) {
		redge_free(&r->edge, eq);
		answer_problem(rs, 431, "headers_too_large", "the request's headers are too large to forward");
		return;
	}
	f->eq = eq;
	/* /metrics: the home checks the operator key, the router adds its
	 * own series; /v1/openapi.json is the home's */
	f->kind = own_metrics ? RC_EDGE : kind == RC_EDGE ? RC_HOME : kind;
	int sent = 0;
	if (f->kind == RC_FANOUT) {
		int st = fanout_prepare(f, h, rs);
		if (st > 0) {
			fwd_answer_now(f, rs);
			return;
		}
		if (st < 0) /* a page size the shards refuse: the home says how */
			f->kind = RC_HOME;
	}
	if (f->kind == RC_FANOUT) {
		sent = fanout_send(f);
		if (sent == 0 && !f->have_out) {
			/* nothing left anywhere: the empty last page */
			buf_puts(&rs->body, "{\"data\":[],\"next_cursor\":null,\"has_more\":false}");
			rs->status = 200;
			fwd_answer_now(f, rs);
			return;
		}
	} else if (f->kind == RC_FIND || f->kind == RC_BROADCAST) {
		for (uint32_t i = 0; i < r->map.n; i++)
			sent += fwd_send(f, i) == 0;
		if (sent && sent < (int)r->map.n) {
			/* some shards refused at once: they count as unreachable */
			f->have_out = 1;
			f->out_rank = 4;
			answer_problem(&f->out, 503, "shard_unavailable", "a shard of the cluster is overloaded");
		}
	} else {
		f->shard = f->kind == RC_EDGE || f->kind == RC_HOME ? 0 : fwd_owner(r, f);
		sent = fwd_send(f, f->shard) == 0;
	}
	if (!sent) {
		answer_problem(rs, 503, "shard_unavailable", "the owning shard cannot take the request now");
		buf_printf(&rs->headers, "Retry-After: " ROUTER_RETRY_AFTER "\r\n");
		r->st.failed++;
		fwd_answer_now(f, rs);
		return;
	}
	f->d = srv_defer(r->srv, rq);
	if (!f->d) {
		/* cannot defer: the calls answer into nothing; keep f until they do */
		answer_problem(rs, 503, "overloaded", "the router is out of memory");
	}
}

/* ---- lifecycle ---------------------------------------------------------- */

/* Replace the pools whose shard's address changed (or that are new);
 * retired pools with calls in flight are kept until close. */
static int router_pools(struct router *r, const struct shard_map *old, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < r->map.n; i++) {
		if (r->pools[i] && old && i < old->n && !strcmp(old->shards[i].addr, r->map.shards[i].addr))
			continue;
		struct hc_config hc = {.addr = r->map.shards[i].addr, .max_conns = (uint32_t)r->cfg.shard_conns,
				       .max_queue = ROUTER_QUEUE_PER_SHARD, .max_response_bytes = ROUTER_MAX_RESPONSE,
				       .pipeline = ROUTER_SHARD_PIPELINE};
		struct hc_pool *p = hc_pool_new(r->loop, &hc, err, errlen);
		if (!p)
			return -1;
		/* an old pool may be the one whose callback is running: it is
		 * freed at the next tick (its calls then fail "pool closed") */
		if (r->pools[i]) {
			if (r->n_retired == ROUTER_MAX_RETIRED) {
				hc_pool_free(p);
				snprintf(err, errlen, "too many shard address changes in one tick");
				return -1;
			}
			r->retired[r->n_retired++] = r->pools[i];
		}
		r->pools[i] = p;
	}
	return 0;
}

int router_reload_map(struct router *r, char *err, size_t errlen)
{
	struct shard_map next;
	if (smap_load(r->cfg.shard_map, NULL, 0, &next, err, errlen))
		return -1;
	if (next.version < r->map.version) {
		snprintf(err, errlen, "%s has version %llu, older than the map in force (%llu)", r->cfg.shard_map,
			 (unsigned long long)next.version, (unsigned long long)r->map.version);
		return -1;
	}
	struct shard_map old = r->map;
	r->map = next;
	if (router_pools(r, &old, err, errlen)) {
		r->map = old;
		return -1;
	}
	r->st.map_reloads++;
	redge_remap(&r->edge, &r->map);
	log_info("msg=\"shard map reloaded\" file=%s version=%llu shards=%u", r->cfg.shard_map,
		 (unsigned long long)r->map.version, r->map.n);
	return 0;
}

static void on_probe(void *arg, const struct hc_response *a, const char *err)
{
	(void)err;
	struct router *r = arg;
	r->probe_busy = 0;
	if (!a || a->status != 200)
		return;
	r->home_seen_ms = now_ms(r);
	/* {"process":"wm-shard","shard_id":0,"map_version":N,"lsn":N,...} */
	const char *l = memmem(a->body, a->body_len, "\"lsn\":", 6);
	if (l && (size_t)(l - a->body) + 6 < a->body_len)
		r->home_lsn = strtoull(l + 6, NULL, 10);
}

/* Ask the home whether it answers (for /readyz). */
static void router_probe(struct router *r)
{
	static const char path[] = "/internal/cluster/status";
	char sig[CK_HEADER_MAX], hdr[CK_HEADER_MAX + 32];
	if (r->probe_busy || ck_sign(&r->key, "GET", 3, path, sizeof(path) - 1, (int64_t)time(NULL), NULL, 0, sig))
		return;
	snprintf(hdr, sizeof(hdr), CK_HEADER_NAME ": %s\r\n", sig);
	struct hc_request rq = {.method = "GET", .path = path, .headers = hdr, .timeout_ms = ROUTER_PROBE_MS};
	if (hc_send(r->pools[0], &rq, on_probe, r) == 0)
		r->probe_busy = 1;
}

void router_tick(struct router *r)
{
	while (r->n_retired)
		hc_pool_free(r->retired[--r->n_retired]);
	for (uint32_t i = 0; i < r->map.n; i++)
		hc_tick(r->pools[i]);
	router_edge_poll(r, 0);
	coord_tick(r->coord);
	if (now_ms(r) >= r->next_probe_ms) {
		r->next_probe_ms = now_ms(r) + ROUTER_PROBE_MS;
		router_probe(r);
	}
}

static int host_call(void *router, uint32_t shard, const char *method, const char *path, const char *body,
		     size_t body_len, const char *principal, size_t principal_len, uint32_t timeout_ms, int pipeline,
		     hc_done_fn done, void *arg)
{
	return router_call(router, shard, method, path, body, body_len, principal, principal_len, timeout_ms, pipeline,
			   done, arg);
}

/* The coordinator of cross-shard orders (coordinator.h) on this router. */
static int router_coord_open(struct router *r, char *err, size_t errlen)
{
	struct coord_host h = {.router = r, .loop = r->loop, .map = &r->map, .data_dir = r->cfg.data_dir,
			       .wal_mode = r->cfg.wal_mode, .router_id = r->cfg.router_id, .call = host_call,
			       .finish = router_fwd_finish, .principal = router_fwd_principal,
			       .request_body = router_fwd_body,
			       .relay = router_relay_into};
	return coord_open(&h, &r->coord, err, errlen);
}

int router_open(struct router *r, const struct config *cfg, struct ev_loop *loop, char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	buf_init(&r->call_hdrs, 0);
	r->cfg = *cfg;
	r->loop = loop;
	char why[256];
	if (!cfg->shard_map[0] || !cfg->cluster_secret_file[0]) {
		snprintf(err, errlen, "wm-router needs --shard-map FILE and --cluster-secret-file FILE");
		return -1;
	}
	if (smap_load(cfg->shard_map, NULL, 0, &r->map, err, errlen))
		return -1;
	if (ck_load(cfg->cluster_secret_file, &r->key, why, sizeof(why))) {
		snprintf(err, errlen, "cluster secret %s: %s", cfg->cluster_secret_file, why);
		return -1;
	}
	if (router_pools(r, NULL, err, errlen) || redge_open(&r->edge, cfg, loop, &r->map, &r->key, err, errlen) ||
	    router_coord_open(r, err, errlen)) {
		router_close(r);
		return -1;
	}
	r->started_ms = now_ms(r);
	return 0;
}

void router_close(struct router *r)
{
	router_edge_poll(r, 1);
	r->closing = 1; /* the calls failing below start no new one */
	for (uint32_t i = 0; i < SMAP_MAX_SHARDS; i++) {
		hc_pool_free(r->pools[i]);
		r->pools[i] = NULL;
	}
	while (r->n_retired)
		hc_pool_free(r->retired[--r->n_retired]);
	coord_close(r->coord); /* after the pools: every call of a transaction has failed */
	r->coord = NULL;
	redge_close(&r->edge); /* after the pools: their failed calls audited first */
	fwd_spares_free(r);
	buf_free(&r->call_hdrs);
}
