/*
 * auth.c -- who is calling and may they (see auth.h; spec section 5,
 * DESIGN.md section 7).
 *
 * Every route that is not public passes here before its handler, in this
 * order, each step a clear problem response when it fails:
 *
 *   1. Authorization: Bearer <key>        401 missing_credentials /
 *                                             malformed_authorization
 *   2. the token's shape and checksum     401 malformed_key (no lookup)
 *   3. lookup by SHA-256, constant-time   401 unknown_key / key_revoked /
 *      digest comparison (key.c)              key_expired
 *   4. the key's rate bucket              429 rate_limited + Retry-After
 *   5. the route's scope on the key       403 insufficient_scope
 *   6. the route's action for the entity  403 entity_suspended /
 *      (policy.c: roles and status)           action_not_allowed
 *
 * A consumer token (consumer_token.h: "wm_ct_...") instead of a key is
 * checked against the path's order at step 3 (401 unknown_key when it is
 * not that order's token); steps 5 and 6 become "a route flagged
 * ROUTE_F_CONSUMER, of that order" (403 consumer_token_not_allowed).  Its
 * rate bucket and record quota are its order's.
 *
 * Rate limiting comes before the scope and action checks so that probing
 * what a key may do is itself limited.
 *
 * In a cluster this runs at the router (shard-router/edge.c), on its
 * replica of partners and keys, and the shard that serves the request
 * takes the caller from the signed X-WM-Principal instead (auth_forwarded):
 * steps 5 and 6 again, as a guard, but no bucket and no quota window --
 * the record quota left comes with the principal, and the rows the shard
 * returned go back to the router, which charges them.
 *
 * Runtime state -- token buckets, record-quota windows, read volume for
 * the audit alert -- is kept in two hash maps beside the tables (by key id,
 * by entity id).  It is deliberately not persisted: a restart refills the
 * buckets and forgets the quota windows, which errs towards availability;
 * the audit rows themselves are durable.
 *
 * Token bucket: tokens are counted in millionths; a key refills `rps`
 * millionths per microsecond up to `burst` tokens; a request takes one.
 * Record quota: a rolling period cut into 24 slots; the rows of the slots
 * inside the period are summed.  Both use the monotonic clock.
 */
#include "engine/edge/auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine/edge/consumer_token.h"
#include "engine/edge/key.h"
#include "engine/edge/principal.h"
#include "engine/base/log.h"

#define QUOTA_SLOTS 24
#define MICRO 1000000LL

struct key_rt {
	char id[ID_MAX_LEN];
	int64_t tokens;          /* millionths of a token */
	uint64_t refilled_us;
	/* read volume per audit window (alert) */
	uint64_t window;         /* window number (monotonic seconds / window length) */
	uint64_t window_rows;
	uint64_t avg_x16;        /* trailing average rows per window, x16 fixed point */
	int alerted;
};

struct entity_rt {
	char id[ID_MAX_LEN];
	uint64_t slot_epoch[QUOTA_SLOTS];
	uint64_t slot_rows[QUOTA_SLOTS];
};

struct auth_state {
	struct hidx keys;        /* key id -> struct key_rt */
	struct hidx entities;    /* entity id -> struct entity_rt */
};

static struct auth_state *state(struct shard *sh)
{
	if (!sh->auth) {
		sh->auth = calloc(1, sizeof(*sh->auth));
		if (!sh->auth)
			return NULL;
		hidx_init(&sh->auth->keys);
		hidx_init(&sh->auth->entities);
		sh->auth_free = auth_state_free; /* shard_close calls it */
	}
	return sh->auth;
}

void auth_state_free(struct shard *sh)
{
	struct auth_state *a = sh->auth;
	if (!a)
		return;
	struct hidx *maps[] = {&a->keys, &a->entities};
	for (int m = 0; m < 2; m++) {
		size_t pos = 0;
		const char *k;
		uint32_t kl;
		void *v;
		while ((v = hidx_next(maps[m], &pos, &k, &kl)))
			free(v);
		hidx_free(maps[m]);
	}
	free(a);
	sh->auth = NULL;
}

/* The runtime record of a map entry, created on first use (NULL on OOM). */
static void *rt_get(struct hidx *h, const char *id, size_t size)
{
	size_t len = strlen(id);
	void *v = hidx_get_untracked(h, id, (uint32_t)len); /* memory only: reveals nothing durable */
	if (v)
		return v;
	char *e = calloc(1, size);
	if (!e)
		return NULL;
	memcpy(e, id, len + 1); /* both structs start with char id[ID_MAX_LEN] */
	if (hidx_put(h, e, (uint32_t)len, e)) {
		free(e);
		return NULL;
	}
	return e;
}

/* ---- problems --------------------------------------------------------- */

static void unauthorized(struct api_ctx *c, const char *code, const char *detail)
{
	buf_printf(&c->rs->headers, "WWW-Authenticate: Bearer realm=\"wine-market\"%s\r\n",
		   strcmp(code, "missing_credentials") ? ", error=\"invalid_token\"" : "");
	api_error(c, 401, code, detail);
}

static void forbidden_scope(struct api_ctx *c, const char *scope)
{
	char d[160];
	snprintf(d, sizeof(d), "this key lacks the scope \"%s\" that this endpoint needs", scope);
	buf_printf(&c->rs->headers, "WWW-Authenticate: Bearer realm=\"wine-market\", error=\"insufficient_scope\", "
		   "scope=\"%s\"\r\n", scope);
	api_error(c, 403, "insufficient_scope", d);
}

/* ---- rate ------------------------------------------------------------- */

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Take one token; 0 ok, else the seconds to wait.  Adds the headers. */
static int64_t rate_take(struct api_ctx *c, struct key_rt *rt)
{
	const struct config *cfg = &c->sh->cfg;
	int64_t rps = c->who.rate_rps ? c->who.rate_rps : (int64_t)cfg->key_rate_rps;
	int64_t burst = c->who.rate_burst ? c->who.rate_burst : (int64_t)cfg->key_rate_burst;
	int64_t cap = burst * MICRO;
	uint64_t now = ev_clock_us();
	if (!rt->refilled_us) {
		rt->tokens = cap;
	} else {
		uint64_t el = now - rt->refilled_us;
		uint64_t full_after = (uint64_t)ceil_div(cap, rps);
		rt->tokens = el >= full_after ? cap : rt->tokens + (int64_t)el * rps;
		if (rt->tokens > cap)
			rt->tokens = cap;
	}
	rt->refilled_us = now;
	int64_t wait = 0;
	if (rt->tokens >= MICRO)
		rt->tokens -= MICRO;
	else
		wait = ceil_div(ceil_div(MICRO - rt->tokens, rps), MICRO); /* us -> s */
	int64_t window = ceil_div(burst, rps);
	int64_t to_full = ceil_div(ceil_div(cap - rt->tokens, rps), MICRO);
	/* RateLimit-Policy: "key";q=B;w=W / RateLimit: "key";r=R;t=T, written
	 * without printf (every request writes them) */
	struct buf *h = &c->rs->headers;
	buf_puts(h, "RateLimit-Policy: \"key\";q=");
	buf_put_dec(h, burst);
	buf_puts(h, ";w=");
	buf_put_dec(h, window);
	buf_puts(h, "\r\nRateLimit: \"key\";r=");
	buf_put_dec(h, rt->tokens / MICRO);
	buf_puts(h, ";t=");
	buf_put_dec(h, to_full);
	buf_puts(h, "\r\n");
	return wait;
}

/* ---- authentication --------------------------------------------------- */

/* The token of "Authorization: Bearer <token>", or NULL (problem written). */
static const char *bearer_token(struct api_ctx *c, size_t *len)
{
	const struct http_header *a = http_find_header(c->http, "authorization");
	if (!a || a->value_len == 0) {
		unauthorized(c, "missing_credentials", "send Authorization: Bearer <API key>");
		return NULL;
	}
	const char *v = a->value, *end = a->value + a->value_len;
	if (a->value_len < 7 || strncasecmp(v, "Bearer ", 7) != 0) {
		unauthorized(c, "malformed_authorization",
			     "the Authorization header must be \"Bearer <API key>\"");
		return NULL;
	}
	v += 7;
	while (v < end && *v == ' ')
		v++;
	while (end > v && end[-1] == ' ')
		end--;
	if (v == end || memchr(v, ' ', (size_t)(end - v))) {
		unauthorized(c, "malformed_authorization",
			     "the Authorization header must be \"Bearer <API key>\" with one key");
		return NULL;
	}
	*len = (size_t)(end - v);
	return v;
}

/* The order a consumer token may act on: the path's {id} up to its first
 * '.' (an order id, or a row of the order: "<order id>.D1"), on a route
 * that takes consumer tokens (into order, ID_MAX_LEN bytes); 0, or -1. */
static int consumer_order(struct api_ctx *c, char *order)
{
	char id[ID_MAX_LEN + 16];
	if (!(c->route->flags & ROUTE_F_CONSUMER) || api_param(c, 0, id, sizeof(id)) <= 0)
		return -1;
	size_t n = strcspn(id, ".");
	if (n == 0 || n >= ID_MAX_LEN)
		return -1;
	memcpy(order, id, n);
	order[n] = 0;
	return 0;
}

static void consumer_refused(struct api_ctx *c)
{
	api_error(c, 403, "consumer_token_not_allowed",
		  "a consumer token opens only its own order's read, cancel and return routes");
}

/* Fill c->who from a consumer token (consumer_token.h) of the path's
 * order; 0, or -1 with the 401/403 written. */
static int identify_consumer(struct api_ctx *c, const char *tok, size_t len)
{
	char order[ID_MAX_LEN];
	if (consumer_order(c, order)) {
		consumer_refused(c);
		return -1;
	}
	if (!c->sh->has_consumer_key || !ct_check(c->sh->consumer_key, order, tok, len)) {
		unauthorized(c, "unknown_key", "this is not the consumer token of this order");
		return -1;
	}
	struct principal *w = &c->who;
	snprintf(w->key_id, sizeof(w->key_id), "%s", order);
	snprintf(w->entity_id, sizeof(w->entity_id), "%s", order);
	w->channel_id[0] = 0;
	w->scopes = SCOPE_BIT(SC_READ_ORDERS) | SCOPE_BIT(SC_WRITE_ORDERS);
	w->kind = PRINCIPAL_CONSUMER;
	w->is_platform = 0;
	w->authenticated = 1;
	return 0;
}

/* Fill c->who from a valid key; 0, or -1 with the 401 written. */
static int identify(struct api_ctx *c)
{
	size_t len;
	const char *tok = bearer_token(c, &len);
	if (!tok)
		return -1;
	if (ct_is_token(tok, len))
		return identify_consumer(c, tok, len);
	enum key_token t = key_token_parse(tok, len);
	if (t > KEY_TOK_RAW) {
		unauthorized(c, "malformed_key", key_token_error(t));
		return -1;
	}
	const struct api_key *k = key_lookup(c->sh, tok, len);
	if (!k) {
		unauthorized(c, "unknown_key", "no such API key");
		return -1;
	}
	if (k->revoked) {
		unauthorized(c, "key_revoked", "this API key has been revoked");
		return -1;
	}
	if (k->expires_ms && (int64_t)wall_ms() >= k->expires_ms) {
		unauthorized(c, "key_expired", "this API key has expired");
		return -1;
	}
	struct principal *w = &c->who;
	memcpy(w->key_id, k->row.id, k->row.id_len);
	w->key_id[k->row.id_len] = 0;
	buf_strcpy(w->entity_id, sizeof(w->entity_id), k->entity_id);
	buf_strcpy(w->channel_id, sizeof(w->channel_id), k->channel_id);
	w->scopes = k->scopes;
	w->kind = k->kind;
	w->rate_rps = k->rate_rps;
	w->rate_burst = k->rate_burst;
	w->is_platform = strcmp(k->entity_id, KEY_PLATFORM_ENTITY) == 0;
	if (!w->is_platform) {
		if (!key_partner_facts(c->sh, k->entity_id, &w->roles, &w->status)) {
			unauthorized(c, "unknown_key", "the entity of this API key no longer exists");
			return -1;
		}
	}
	w->authenticated = 1;
	return 0;
}

/* The route's scope on the key, the action for the entity: 0, or -1 with
 * the 403 written. */
static int route_allowed(struct api_ctx *c)
{
	const struct route *r = c->route;
	if (c->who.kind == PRINCIPAL_CONSUMER) { /* its own order's consumer routes, nothing else */
		char order[ID_MAX_LEN];
		if (consumer_order(c, order) || strcmp(order, c->who.entity_id)) {
			consumer_refused(c);
			return -1;
		}
		return 0;
	}
	if (!(c->who.scopes & SCOPE_BIT(r->scope))) {
		forbidden_scope(c, scope_defs[r->scope].name);
		return -1;
	}
	if (!policy_allows((enum action)r->action, c->who.is_platform, c->who.roles, c->who.status)) {
		char d[200];
		if (!c->who.is_platform && c->who.status == PS_SUSPENDED) {
			api_error(c, 403, "entity_suspended", "this partner is suspended; contact the platform operator");
			return -1;
		}
		policy_explain((enum action)r->action, c->who.roles, c->who.status, d, sizeof(d));
		api_error(c, 403, "action_not_allowed", d);
		return -1;
	}
	return 0;
}

int auth_forwarded(struct api_ctx *c)
{
	const struct http_header *h = c->principal_hdr;
	if (!h || principal_decode(h->value, h->value_len, &c->who, &c->fwd_quota_left)) {
		memset(&c->who, 0, sizeof(c->who));
		api_error(c, 400, "bad_principal", "the router's principal header is not in its wire form");
		return -1;
	}
	c->forwarded = 1;
	return route_allowed(c);
}

int auth_request(struct api_ctx *c)
{
	if (identify(c))
		return -1;
	struct auth_state *a = state(c->sh);
	struct key_rt *rt = a ? rt_get(&a->keys, c->who.key_id, sizeof(struct key_rt)) : NULL;
	if (!rt) {
		api_error(c, 503, "out_of_memory", "the service cannot take this request now");
		return -1;
	}
	int64_t wait = rate_take(c, rt);
	if (wait) {
		buf_printf(&c->rs->headers, "Retry-After: %lld\r\n", (long long)wait);
		api_error(c, 429, "rate_limited", "this API key is over its request rate; retry after Retry-After seconds");
		return -1;
	}
	return route_allowed(c);
}

/* ---- record quota ----------------------------------------------------- */

static struct entity_rt *quota_rt(struct api_ctx *c)
{
	if (!c->who.authenticated || c->who.is_platform || c->forwarded)
		return NULL; /* forwarded: the router keeps the window */
	struct auth_state *a = state(c->sh);
	return a ? rt_get(&a->entities, c->who.entity_id, sizeof(struct entity_rt)) : NULL;
}

static uint64_t slot_us(const struct config *cfg) { return cfg->record_quota_period_s * 1000000 / QUOTA_SLOTS; }

static uint64_t quota_used(const struct entity_rt *e, uint64_t now_slot)
{
	uint64_t used = 0;
	for (int i = 0; i < QUOTA_SLOTS; i++)
		if (e->slot_epoch[i] + QUOTA_SLOTS > now_slot)
			used += e->slot_rows[i];
	return used;
}

uint32_t auth_quota_left(struct api_ctx *c)
{
	if (c->forwarded)
		return c->fwd_quota_left; /* the router's figure (principal.h) */
	if (!c->who.authenticated || c->who.is_platform)
		return UINT32_MAX;
	struct entity_rt *e = quota_rt(c);
	if (!e)
		return 0;
	uint64_t used = quota_used(e, ev_clock_us() / slot_us(&c->sh->cfg));
	uint64_t q = c->sh->cfg.record_quota;
	return used >= q ? 0 : (uint32_t)(q - used > UINT32_MAX - 1 ? UINT32_MAX - 1 : q - used);
}

void auth_quota_charge(struct api_ctx *c, uint32_t rows)
{
	struct entity_rt *e = quota_rt(c);
	if (!e || !rows)
		return;
	uint64_t now_slot = ev_clock_us() / slot_us(&c->sh->cfg);
	int i = (int)(now_slot % QUOTA_SLOTS);
	if (e->slot_epoch[i] != now_slot) {
		e->slot_epoch[i] = now_slot;
		e->slot_rows[i] = 0;
	}
	e->slot_rows[i] += rows;
}

void auth_quota_refuse(struct api_ctx *c)
{
	const struct config *cfg = &c->sh->cfg;
	uint64_t su = slot_us(cfg), now = ev_clock_us(), now_slot = now / su;
	uint64_t wait_s = cfg->record_quota_period_s;
	struct entity_rt *e = quota_rt(c);
	if (e) {
		/* Oldest slots expire first: find when enough rows fall out of
		 * the period for one more row to fit. */
		uint64_t used = quota_used(e, now_slot), freed = 0;
		for (uint64_t s = now_slot + 1 - QUOTA_SLOTS; s <= now_slot; s++) {
			int i = (int)(s % QUOTA_SLOTS);
			if (e->slot_epoch[i] != s)
				continue;
			freed += e->slot_rows[i];
			if (used - freed < cfg->record_quota) {
				uint64_t at = (s + QUOTA_SLOTS) * su;
				wait_s = (at - now + 999999) / 1000000;
				break;
			}
		}
	}
	if (wait_s < 1)
		wait_s = 1;
	c->rows_returned = 0;
	c->quota_refused = 1;
	c->span_to[0] = 0;
	buf_printf(&c->rs->headers, "Retry-After: %llu\r\n", (unsigned long long)wait_s);
	char d[200];
	snprintf(d, sizeof(d), "the record quota of %llu rows per %llu seconds is used up; retry after Retry-After seconds",
		 (unsigned long long)cfg->record_quota, (unsigned long long)cfg->record_quota_period_s);
	api_error(c, 429, "quota_exceeded", d);
}

/* ---- read volume (audit alert) ---------------------------------------- */

int auth_volume_add(struct api_ctx *c, uint32_t rows, uint64_t *window_rows, uint64_t *avg)
{
	const struct config *cfg = &c->sh->cfg;
	struct auth_state *a = state(c->sh);
	struct key_rt *rt = a && c->who.key_id[0] ? rt_get(&a->keys, c->who.key_id, sizeof(struct key_rt)) : NULL;
	if (!rt)
		return 0;
	uint64_t win = ev_clock_us() / (cfg->audit_alert_window_s * 1000000);
	if (win != rt->window) {
		/* Close the windows that passed: EWMA with weight 1/8, empty
		 * windows decaying the average. */
		uint64_t passed = rt->window ? win - rt->window : 1;
		for (uint64_t i = 0; i < passed && i < 64; i++) {
			uint64_t x = i == 0 ? rt->window_rows : 0;
			rt->avg_x16 = (rt->avg_x16 * 7 + x * 16) / 8;
		}
		rt->window = win;
		rt->window_rows = 0;
		rt->alerted = 0;
	}
	rt->window_rows += rows;
	*window_rows = rt->window_rows;
	*avg = rt->avg_x16 / 16;
	if (rt->alerted || rt->window_rows < cfg->audit_alert_min_rows ||
	    rt->window_rows * 16 <= rt->avg_x16 * cfg->audit_alert_factor)
		return 0;
	rt->alerted = 1;
	return 1;
}
