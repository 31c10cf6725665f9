/*
 * park.c -- requests waiting for the replica (park.h has the protocol).
 *
 * Why park at the shard and not retry at the router: the shard knows the
 * moment its replica applies the position (no polling across the network),
 * and the request keeps its place: it runs once, when it can be answered
 * truthfully.  Why a copy of the bytes: the server's parse buffer belongs
 * to the connection and moves on; re-parsing a copy with the same parser
 * gives back an identical request.
 *
 * Ownership: each parked entry owns its copy and its deferred token until
 * it is answered (park_poll frees both); the table is a fixed array of
 * PARK_MAX slots, no allocation beyond the copies.
 */
#include "engine/edge/park.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/log.h"
#include "net/problem.h"

struct parked {
	struct srv_deferred *d;
	char *raw;               /* the request's bytes, owned */
	size_t len;
	const char *pos;         /* its X-WM-Min-Position value, inside raw */
	size_t pos_len;
	char request_id[24];
	uint64_t start_us;
	char peer[64];
	uint32_t publisher;
	uint64_t lsn;
	uint64_t deadline_ms;
};

static struct parked slots[PARK_MAX];

/* The replica of `pub` has applied `lsn` (no replication = nothing to wait for). */
static int applied(struct shard *sh, uint32_t pub, uint64_t lsn)
{
	if (!sh->repl_applied || pub == sh->cfg.shard_id)
		return 1;
	return sh->repl_applied(sh, pub) >= lsn;
}
static uint32_t n_parked;

uint32_t park_count(void) { return n_parked; }

/* A decimal of 1..20 digits into *out without overflow: 0, or -1. */
static int parse_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	if (n == 0 || n > 20)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int park_positions_parse(const char *v, size_t n, struct park_position *out, unsigned max)
{
	unsigned k = 0;
	if (n == 0 || n > PARK_HEADER_MAX)
		return -1;
	for (;;) {
		const char *comma = memchr(v, ',', n);
		size_t len = comma ? (size_t)(comma - v) : n;
		const char *colon = memchr(v, ':', len);
		uint64_t pub, lsn;
		if (!colon || k == max || parse_u64(v, (size_t)(colon - v), &pub) || pub >= PARK_MAX_PUBLISHERS ||
		    parse_u64(colon + 1, len - (size_t)(colon - v) - 1, &lsn))
			return -1;
		out[k++] = (struct park_position){.publisher = (uint32_t)pub, .lsn = lsn};
		if (!comma)
			return (int)k;
		v += len + 1;
		n -= len + 1;
	}
}

/* The first position of the header's list that this shard's replica has
 * not applied: 1 with it in the out parameters, 0 when every one is
 * applied (a malformed header is ignored: only a router sends one). */
static int first_unapplied(struct shard *sh, const char *v, size_t n, uint32_t *pub, uint64_t *lsn)
{
	struct park_position ps[PARK_MAX_PUBLISHERS];
	int k = park_positions_parse(v, n, ps, PARK_MAX_PUBLISHERS);
	for (int i = 0; i < k; i++)
		if (!applied(sh, ps[i].publisher, ps[i].lsn)) {
			*pub = ps[i].publisher;
			*lsn = ps[i].lsn;
			return 1;
		}
	return 0;
}


static void answer_behind(struct api_ctx *c, uint32_t pub, uint64_t lsn)
{
	char d[160];
	snprintf(d, sizeof(d), "this shard's replica of shard %u has not yet applied position %" PRIu64
			       " (your own earlier write); retry shortly", pub, lsn);
	api_error(c, 503, "replica_behind", d);
	buf_printf(&c->rs->headers, "Retry-After: 1\r\n");
}

int park_check(struct api_ctx *c)
{
	const struct http_request *h = c->http;
	const struct http_header *x = http_find_header(h, WM_H_MIN_POSITION);
	uint32_t pub;
	uint64_t lsn;
	if (!x || !first_unapplied(c->sh, x->value, x->value_len, &pub, &lsn))
		return 0;
	if (n_parked == PARK_MAX) {
		answer_behind(c, pub, lsn);
		return 1;
	}
	struct parked *p = &slots[n_parked];
	size_t len = h->total_len - h->start_off;
	p->raw = malloc(len);
	if (!p->raw) {
		answer_behind(c, pub, lsn);
		return 1;
	}
	p->d = srv_defer(c->sh->srv, c->rq);
	if (!p->d) {
		free(p->raw);
		answer_behind(c, pub, lsn);
		return 1;
	}
	memcpy(p->raw, h->method_str, len);
	p->len = len;
	p->pos = p->raw + (x->value - h->method_str);
	p->pos_len = x->value_len;
	memcpy(p->request_id, c->rq->request_id, sizeof(p->request_id));
	p->start_us = c->rq->start_us;
	snprintf(p->peer, sizeof(p->peer), "%s", c->rq->peer ? c->rq->peer : "-");
	p->publisher = pub;
	p->lsn = lsn;
	p->deadline_ms = ev_now_ms(c->sh->loop) + PARK_WAIT_MS;
	n_parked++;
	return 1;
}

/* Run a parked request now (its position is applied, or its wait is over:
 * then it is answered 503 by park_check itself, the header still naming
 * an unapplied position). */
static void park_run(struct shard *sh, struct parked *p, int expired, srv_handler_fn run)
{
	struct http_limits lim;
	http_limits_default(&lim);
	lim.max_body = p->len;
	lim.max_header_bytes = (uint32_t)(p->len < UINT32_MAX ? p->len : UINT32_MAX);
	struct http_request req;
	struct http_error herr;
	struct srv_response rs = {.status = 200};
	buf_init(&rs.headers, 0);
	buf_init(&rs.body, 0);
	struct srv_request rq = {.http = &req, .start_us = p->start_us, .peer = p->peer};
	memcpy(rq.request_id, p->request_id, sizeof(rq.request_id));
	if (http_parse_request(p->raw, p->len, &lim, &req, &herr) != HTTP_PARSE_OK) {
		/* cannot happen: these bytes parsed once already */
		rs.status = 500;
		rs.content_type = PROBLEM_CONTENT_TYPE;
		problem_write(&rs.body, 500, "internal", "Internal Server Error", "a parked request could not be resumed");
	} else if (expired) {
		struct api_ctx c;
		memset(&c, 0, offsetof(struct api_ctx, errs));
		c.sh = sh;
		c.rq = &rq;
		c.http = &req;
		c.rs = &rs;
		jw_init(&c.w, &rs.body);
		answer_behind(&c, p->publisher, p->lsn);
		rs.route = "-replica-behind";
	} else {
		run(sh, &rq, &rs);
	}
	srv_complete(sh->srv, p->d, &rs);
	buf_free(&rs.headers);
	buf_free(&rs.body);
	free(p->raw);
}

void park_poll(struct shard *sh, srv_handler_fn run)
{
	if (!n_parked)
		return;
	uint64_t now = ev_now_ms(sh->loop);
	for (uint32_t i = 0; i < n_parked;) {
		struct parked p = slots[i];
		/* every position of its list: it runs only when none is left,
		 * so running it never parks it again */
		int ready = !first_unapplied(sh, p.pos, p.pos_len, &p.publisher, &p.lsn);
		if (!ready && now < p.deadline_ms) {
			i++;
			continue;
		}
		/* take it out first: running it may park another */
		slots[i] = slots[--n_parked];
		park_run(sh, &p, !ready, run);
	}
}
