/*
 * endpoint.c -- webhook endpoints: where a partner (or the platform) wants
 * its events pushed (issue 18 item 1; spec 6; api-practices "Webhooks").
 *
 * Routes: POST/GET /v1/webhook-endpoints, GET/PATCH/DELETE
 * /v1/webhook-endpoints/{id}, POST /v1/webhook-endpoints/{id}/rotate-secret,
 * under the scopes read:webhooks / write:webhooks and the action
 * can_manage_webhooks (engine/edge/policy.c: a verified partner).
 *
 * Decisions, also in api/openapi.json:
 *
 *  - The owner is the caller's entity (a partner, or "platform" for an
 *    operator key); there is no owner_entity_id to name.  A partner lists
 *    and reads only its own endpoints; another entity's endpoint is a 404,
 *    exactly like an unknown id (existence is never revealed).  Operators
 *    see every endpoint.  At most WHE_PER_OWNER_MAX endpoints per owner
 *    (422 limit_reached): fan-out walks an owner's endpoints per event, so
 *    the bound is also the bound on that walk.
 *  - url: wh_url_parse under the operator's policy (--webhook-allow-http,
 *    --webhook-allow-private; both off by default).  An IP literal is
 *    checked against the private-address policy here (422 naming why:
 *    "loopback", "private", ...), as is the name "localhost".  A DNS name
 *    is not resolved on the event loop (getaddrinfo blocks); every address
 *    the delivery thread connects to is checked again there
 *    (webhook_http.h), so a name that resolves to a private address is
 *    refused at delivery time and the attempt fails like any transport
 *    error.
 *  - event_types: 1..WHE_TYPES_MAX patterns, each "*", an exact type
 *    ("order.delivered") or a prefix ("order.*"); duplicates refused.
 *  - The secret ("whsec_" + base64 of WHE_SECRET_BYTES random bytes,
 *    Standard Webhooks) is in the answer of the create and of
 *    rotate-secret only; it is stored in the row because it must sign
 *    every delivery (an HMAC key cannot be kept as a hash).  On rotation
 *    the previous secret keeps signing, as a second signature, for
 *    WHE_ROTATION_MS (24 h), so a receiver can switch keys without losing
 *    a message; a second rotation inside that window replaces the previous
 *    secret (at most two signatures, WH_SIGN_MAX_SECRETS).
 *  - status enabled | disabled (PATCH).  The service disables an endpoint
 *    that answered 410 Gone (delivery.c) and says so in disabled_reason;
 *    a PATCH to enabled clears it.  Deliveries of a disabled endpoint stay
 *    pending and go out when it is enabled again.
 *  - DELETE removes the row (200 with {id, deleted: true}); its delivery
 *    rows are dropped by the sender when it meets them (delivery.c).
 *  - Events webhook_endpoint.created/updated/deleted carry the public view
 *    (never a secret), scoped to the owner.
 *
 * The table (REC_T_WH_ENDPOINT) has one secondary index, by_owner
 * ("owner NUL id"), for the owner's list and for fan-out.
 */
#include "engine/webhooks/webhooks.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/log.h"
#include "engine/edge/fields.h"
#include "engine/storage/record.h"

#include <openssl/crypto.h>

const char *const whe_status_names[] = {"enabled", "disabled", NULL};

static const char *const create_known[] = {"url", "event_types", "description", NULL};
static const char *const patch_known[] = {"url", "event_types", "description", "status", NULL};

/* ---- patterns (pure) ------------------------------------------------------------ */

static int word_char(char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_'; }

int whe_pattern_valid(const char *p, size_t n)
{
	if (n == 0 || n > EVENT_MAX_TYPE)
		return 0;
	if (n == 1 && p[0] == '*')
		return 1;
	size_t end = n;
	if (n >= 3 && p[n - 1] == '*' && p[n - 2] == '.')
		end = n - 2; /* "prefix.*" */
	size_t word = 0;
	for (size_t i = 0; i < end; i++) {
		if (p[i] == '.') {
			if (!word)
				return 0;
			word = 0;
		} else if (word_char(p[i]))
			word++;
		else
			return 0;
	}
	return word > 0;
}

int whe_pattern_match(const char *p, const char *type)
{
	size_t n = strlen(p);
	if (n == 1 && p[0] == '*')
		return 1;
	if (n >= 3 && p[n - 1] == '*' && p[n - 2] == '.')
		return strncmp(p, type, n - 1) == 0; /* the prefix with its dot */
	return strcmp(p, type) == 0;
}

int whe_wants(const struct wh_endpoint *e, const char *type)
{
	if (e->status != WHE_ENABLED)
		return 0;
	for (unsigned i = 0; i < e->n_types; i++)
		if (whe_pattern_match(e->types[i], type))
			return 1;
	return 0;
}

/* The shard's sealing key into key: 0, or -1 without a deployment key. */
static int seal_key(const struct shard *sh, uint8_t key[WH_SEAL_KEY_LEN])
{
	return sh->has_consumer_key ? wh_seal_key(sh->consumer_key, key) : -1;
}

/* One stored secret, opened: sealed text, else the plain one. 0 or -1. */
static int open_secret(const uint8_t *key, const struct wh_endpoint *e, const char *sealed,
		       const struct wh_secret *plain, struct wh_secret *out)
{
	if (!sealed[0]) {
		*out = *plain;
		return plain->len ? 0 : -1;
	}
	return key ? wh_unseal(key, e->row.id, e->row.id_len, sealed, strlen(sealed), out) : -1;
}

size_t whe_signing_secrets(struct shard *sh, const struct wh_endpoint *e, int64_t now_ms,
			   struct wh_secret out[WH_SIGN_MAX_SECRETS])
{
	uint8_t key[WH_SEAL_KEY_LEN];
	const uint8_t *k = seal_key(sh, key) ? NULL : key;
	size_t n = 0;
	if (open_secret(k, e, e->sealed, &e->secret, &out[0]) == 0) {
		n = 1;
		if ((e->prev_sealed[0] || e->prev.len) && now_ms < e->prev_until_ms &&
		    open_secret(k, e, e->prev_sealed, &e->prev, &out[1]) == 0)
			n = 2;
	}
	OPENSSL_cleanse(key, sizeof(key));
	return n;
}

struct wh_policy whe_policy(const struct shard *sh)
{
	return (struct wh_policy){.allow_http = sh->cfg.webhook_allow_http != 0,
				  .allow_private = sh->cfg.webhook_allow_private != 0};
}

/* ---- the table -------------------------------------------------------------------- */

static uint32_t owner_key(const char *owner, const struct row *r, uint8_t *out)
{
	size_t ol = strlen(owner);
	memcpy(out, owner, ol);
	out[ol] = 0;
	memcpy(out + ol + 1, r->id, r->id_len);
	return (uint32_t)(ol + 1 + r->id_len);
}

/* A secret member of a stored document into s (len 0 when absent/null):
 * 0, or -1 when present and not a valid secret. */
static int doc_secret(const struct json_value *doc, const char *name, struct wh_secret *s)
{
	const struct json_value *m = json_get(doc, name);
	s->len = 0;
	if (!m || m->type == JSON_NULL)
		return 0;
	return m->type == JSON_STRING && wh_secret_parse(m->u.str, m->len, s) == 0 ? 0 : -1;
}

/* A sealed secret member into out (WH_SEALED_TEXT_MAX + 1 bytes; "" when
 * absent/null): 0, or -1 when present and not of a sealed secret's shape. */
static int doc_sealed(const struct json_value *doc, const char *name, char *out)
{
	const struct json_value *m = json_get(doc, name);
	out[0] = 0;
	if (!m || m->type == JSON_NULL)
		return 0;
	if (m->type != JSON_STRING || !wh_sealed_shape(m->u.str, m->len))
		return -1;
	memcpy(out, m->u.str, m->len + 1);
	return 0;
}

static int whe_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct wh_endpoint *e = (struct wh_endpoint *)r;
	char st[16];
	if (fld_doc_str(doc, "owner_entity_id", e->owner, sizeof(e->owner)) || !e->owner[0] ||
	    fld_doc_str(doc, "url", e->url, sizeof(e->url)) || !e->url[0] ||
	    fld_doc_str(doc, "description", e->description, sizeof(e->description)) ||
	    fld_doc_str(doc, "created_at", e->created_at, sizeof(e->created_at)) ||
	    fld_doc_str(doc, "updated_at", e->updated_at, sizeof(e->updated_at)) ||
	    fld_doc_str(doc, "disabled_reason", e->disabled_reason, sizeof(e->disabled_reason)) ||
	    fld_doc_str(doc, "status", st, sizeof(st)))
		return -1;
	if (!strcmp(st, "enabled"))
		e->status = WHE_ENABLED;
	else if (!strcmp(st, "disabled"))
		e->status = WHE_DISABLED;
	else
		return -1;
	const struct json_value *ty = json_get(doc, "event_types");
	if (!ty || ty->type != JSON_ARRAY || ty->len < 1 || ty->len > WHE_TYPES_MAX)
		return -1;
	for (uint32_t i = 0; i < ty->len; i++) {
		const struct json_value *p = &ty->u.items[i];
		if (p->type != JSON_STRING || !whe_pattern_valid(p->u.str, p->len))
			return -1;
		memcpy(e->types[i], p->u.str, p->len + 1);
	}
	e->n_types = (uint8_t)ty->len;
	if (doc_sealed(doc, "secret_sealed", e->sealed) || doc_sealed(doc, "previous_secret_sealed", e->prev_sealed) ||
	    doc_secret(doc, "secret", &e->secret) || doc_secret(doc, "previous_secret", &e->prev) ||
	    (!e->sealed[0] && !e->secret.len))
		return -1;
	long long cms = 0;
	if (parse_rfc3339_ms(e->created_at, strlen(e->created_at), &cms))
		return -1;
	e->created_ms = cms;
	const struct json_value *fs = json_get(doc, "failing_since_ms");
	e->failing_since_ms = 0;
	if (fs && (json_to_int64(fs, &e->failing_since_ms) || e->failing_since_ms < 0))
		return -1;
	const struct json_value *until = json_get(doc, "previous_secret_until_ms");
	e->prev_until_ms = 0;
	if ((e->prev.len || e->prev_sealed[0]) && (!until || json_to_int64(until, &e->prev_until_ms)))
		return -1;
	return 0;
}

static int whe_index_add(struct table *t, struct row *r)
{
	struct wh_endpoint *e = (struct wh_endpoint *)r;
	uint8_t k[IDX_MAX_KEY];
	return oidx_put(table_oidx_ext(t), k, owner_key(e->owner, r, k), e) < 0 ? -1 : 0;
}

static void whe_index_del(struct table *t, struct row *r)
{
	struct wh_endpoint *e = (struct wh_endpoint *)r;
	uint8_t k[IDX_MAX_KEY];
	uint32_t kl = owner_key(e->owner, r, k);
	if (oidx_get(table_oidx_ext(t), k, kl) == e)
		oidx_del(table_oidx_ext(t), k, kl);
}

const struct table_ops wh_endpoint_table_ops = {
	.rec_table = REC_T_WH_ENDPOINT,
	.name = "webhook_endpoint",
	.row_size = sizeof(struct wh_endpoint),
	.decode = whe_decode,
	.index_add = whe_index_add,
	.index_del = whe_index_del,
	.init = table_oidx_ext_init,
	.fini = table_oidx_ext_fini,
};

const struct wh_endpoint *whe_get(struct shard *sh, const char *id, size_t len)
{
	return (const struct wh_endpoint *)table_get(&sh->tables[REC_T_WH_ENDPOINT], id, len);
}

int whe_each_of_owner(struct shard *sh, const char *owner, int (*fn)(const struct wh_endpoint *e, void *arg),
		      void *arg)
{
	uint8_t prefix[ID_MAX_LEN + 1];
	size_t ol = strlen(owner);
	if (ol >= ID_MAX_LEN)
		return 0;
	memcpy(prefix, owner, ol);
	prefix[ol] = 0;
	struct oidx_iter it;
	const struct oidx *idx = table_oidx_ext(&sh->tables[REC_T_WH_ENDPOINT]);
	if (!oidx_seek_ge(idx, prefix, (uint32_t)ol + 1, &it))
		return 0;
	do {
		uint32_t kl;
		const uint8_t *k = oidx_iter_key(&it, &kl);
		if (kl < ol + 1 || memcmp(k, prefix, ol + 1))
			break;
		int rc = fn(oidx_iter_val(&it), arg);
		if (rc)
			return rc;
	} while (oidx_next(&it));
	return 0;
}

static int count_one(const struct wh_endpoint *e, void *arg)
{
	(void)e;
	(*(unsigned *)arg)++;
	return 0;
}

/* ---- documents --------------------------------------------------------------------- */

/* What a document shows: the public view, the public view plus the
 * current secret (create, rotate), or the stored row (both secrets). */
enum whe_view { VIEW_PUBLIC, VIEW_WITH_SECRET, VIEW_STORED };

static void whe_write(struct jw *w, const char *id, const struct wh_endpoint *e, enum whe_view view)
{
	jw_obj_begin(w);
	jw_kstr(w, "id", id);
	jw_kstr(w, "owner_entity_id", e->owner);
	jw_kstr(w, "url", e->url);
	jw_key(w, "event_types");
	jw_arr_begin(w);
	for (unsigned i = 0; i < e->n_types; i++)
		jw_str(w, e->types[i]);
	jw_arr_end(w);
	if (e->description[0])
		jw_kstr(w, "description", e->description);
	else
		jw_knull(w, "description");
	jw_kstr(w, "status", whe_status_names[e->status]);
	if (e->disabled_reason[0])
		jw_kstr(w, "disabled_reason", e->disabled_reason);
	else
		jw_knull(w, "disabled_reason");
	char ts[WHE_TS_MAX];
	if (e->failing_since_ms) {
		fmt_rfc3339_ms(ts, (unsigned long long)e->failing_since_ms);
		jw_kstr(w, "failing_since", ts);
	} else
		jw_knull(w, "failing_since");
	if (view == VIEW_STORED && e->failing_since_ms)
		jw_kint(w, "failing_since_ms", e->failing_since_ms);
	if (e->prev.len || e->prev_sealed[0]) {
		fmt_rfc3339_ms(ts, (unsigned long long)e->prev_until_ms);
		jw_kstr(w, "previous_secret_expires_at", ts);
	} else
		jw_knull(w, "previous_secret_expires_at");
	jw_kstr(w, "created_at", e->created_at);
	jw_kstr(w, "updated_at", e->updated_at);
	char sec[WH_SECRET_TEXT_MAX + 1];
	if (view == VIEW_WITH_SECRET && wh_secret_format(&e->secret, sec, sizeof(sec)) > 0)
		jw_kstr(w, "secret", sec);
	if (view == VIEW_STORED) { /* sealed by whe_stage; plain only in a row stored before sealing */
		if (e->sealed[0])
			jw_kstr(w, "secret_sealed", e->sealed);
		else if (wh_secret_format(&e->secret, sec, sizeof(sec)) > 0)
			jw_kstr(w, "secret", sec);
		if (e->prev_sealed[0])
			jw_kstr(w, "previous_secret_sealed", e->prev_sealed);
		else if (e->prev.len && wh_secret_format(&e->prev, sec, sizeof(sec)) > 0)
			jw_kstr(w, "previous_secret", sec);
		if (e->prev_sealed[0] || e->prev.len)
			jw_kint(w, "previous_secret_until_ms", e->prev_until_ms);
	}
	OPENSSL_cleanse(sec, sizeof(sec));
	jw_obj_end(w);
}

/* Stage e (id) in the open transaction with event `type` (NULL: none).
 * 0 or -1. */
static int whe_stage(struct shard *sh, const char *id, const struct wh_endpoint *in, const char *type)
{
	/* a plain secret (a new one, or one stored before sealing) is sealed
	 * for this endpoint before it is written */
	struct wh_endpoint n = *in;
	const struct wh_endpoint *e = &n;
	uint8_t key[WH_SEAL_KEY_LEN];
	if (!seal_key(sh, key)) {
		int bad = (n.secret.len && wh_seal(key, id, strlen(id), &n.secret, n.sealed, sizeof(n.sealed)) < 0) ||
			  (n.prev.len && wh_seal(key, id, strlen(id), &n.prev, n.prev_sealed, sizeof(n.prev_sealed)) < 0);
		OPENSSL_cleanse(key, sizeof(key));
		if (bad)
			return -1;
		OPENSSL_cleanse(&n.secret, sizeof(n.secret));
		OPENSSL_cleanse(&n.prev, sizeof(n.prev));
	}
	struct buf doc, pub;
	buf_init(&doc, REC_MAX_VAL);
	buf_init(&pub, REC_MAX_VAL);
	struct jw w, wp;
	jw_init(&w, &doc);
	jw_init(&wp, &pub);
	whe_write(&w, id, e, VIEW_STORED);
	whe_write(&wp, id, e, VIEW_PUBLIC);
	int rc = w.err || wp.err || txn_put(sh, REC_T_WH_ENDPOINT, id, strlen(id), doc.data, doc.len) ||
			 (type && txn_event(sh, type, e->owner, pub.data, pub.len))
		     ? -1
		     : 0;
	buf_free(&doc);
	buf_free(&pub);
	OPENSSL_cleanse(&n, sizeof(n));
	return rc;
}

int whe_stage_health(struct shard *sh, const struct wh_endpoint *e, int64_t since_ms, const char *why)
{
	struct wh_endpoint n = *e;
	char id[ID_MAX_LEN];
	if (e->row.id_len >= sizeof(id))
		return -1;
	memcpy(id, e->row.id, e->row.id_len);
	id[e->row.id_len] = 0;
	n.failing_since_ms = since_ms;
	if (why) {
		n.status = WHE_DISABLED;
		snprintf(n.disabled_reason, sizeof(n.disabled_reason), "%s", why);
		fmt_rfc3339_ms(n.updated_at, wall_ms());
	}
	return whe_stage(sh, id, &n, why ? "webhook.endpoint_disabled" : NULL);
}

int whe_stage_disable(struct shard *sh, const struct wh_endpoint *e, const char *why)
{
	struct wh_endpoint n = *e;
	char id[ID_MAX_LEN];
	if (e->row.id_len >= sizeof(id))
		return -1;
	memcpy(id, e->row.id, e->row.id_len);
	id[e->row.id_len] = 0;
	n.status = WHE_DISABLED;
	snprintf(n.disabled_reason, sizeof(n.disabled_reason), "%s", why);
	fmt_rfc3339_ms(n.updated_at, wall_ms());
	return whe_stage(sh, id, &n, "webhook.endpoint_disabled");
}

/* Answer the view of e with status. */
static void whe_send(struct api_ctx *c, int status, const char *id, const struct wh_endpoint *e, enum whe_view view)
{
	struct buf b;
	buf_init(&b, REC_MAX_VAL);
	struct jw w;
	jw_init(&w, &b);
	whe_write(&w, id, e, view);
	if (w.err)
		api_error(c, 500, "internal", "the endpoint could not be written");
	else
		api_send_doc(c, status, b.data, b.len);
	buf_free(&b);
}

/* ---- reading a request ---------------------------------------------------------------- */

/* url member: parsed under the operator's policy; an IP literal (and
 * "localhost") checked against the private-address policy.  Copied into
 * e->url on success; an error recorded otherwise. */
static void read_url(struct api_ctx *c, const struct json_value *body, struct wh_endpoint *e, int required)
{
	const struct json_value *m = json_get(body, "url");
	if (!m || m->type == JSON_NULL) {
		if (required || m)
			api_field_error(c, "url", "required", "is required");
		return;
	}
	if (m->type != JSON_STRING) {
		api_field_error(c, "url", "type", "must be a string");
		return;
	}
	if (m->len > WH_URL_MAX) {
		api_field_error(c, "url", "max_length", "at most %u bytes", WH_URL_MAX);
		return;
	}
	struct wh_policy pol = whe_policy(c->sh);
	struct wh_url u;
	char err[128];
	if (wh_url_parse(m->u.str, m->len, &pol, &u, err, sizeof(err))) {
		api_field_error(c, "url", "format", "%s", err);
		return;
	}
	if (!pol.allow_private) {
		const char *why = NULL;
		struct sockaddr_in a4 = {.sin_family = AF_INET};
		struct sockaddr_in6 a6 = {.sin6_family = AF_INET6};
		if (inet_pton(AF_INET, u.host, &a4.sin_addr) == 1)
			why = wh_addr_refusal((const struct sockaddr *)&a4);
		else if (inet_pton(AF_INET6, u.host, &a6.sin6_addr) == 1)
			why = wh_addr_refusal((const struct sockaddr *)&a6);
		else if (!strcmp(u.host, "localhost") ||
			 (strlen(u.host) > 10 && !strcmp(u.host + strlen(u.host) - 10, ".localhost")))
			why = "loopback";
		if (why) {
			api_field_error(c, "url", "destination",
					"a %s address is not a public destination (the operator allows it with "
					"--webhook-allow-private)",
					why);
			return;
		}
	}
	memcpy(e->url, m->u.str, m->len + 1);
}

static void read_types(struct api_ctx *c, const struct json_value *body, struct wh_endpoint *e, int required)
{
	const struct json_value *m = json_get(body, "event_types");
	if (!m || m->type == JSON_NULL) {
		if (required || m)
			api_field_error(c, "event_types", "required", "is required");
		return;
	}
	if (m->type != JSON_ARRAY) {
		api_field_error(c, "event_types", "type", "must be an array of event type patterns");
		return;
	}
	if (m->len < 1 || m->len > WHE_TYPES_MAX) {
		api_field_error(c, "event_types", m->len ? "max_items" : "min_items", "1 to %u patterns",
				WHE_TYPES_MAX);
		return;
	}
	unsigned bad = 0;
	for (uint32_t i = 0; i < m->len; i++) {
		const struct json_value *p = &m->u.items[i];
		if (p->type != JSON_STRING || !whe_pattern_valid(p->u.str, p->len)) {
			api_field_error(c, "event_types", "pattern",
					"item %u is not an event type pattern (\"*\", \"order.*\", \"order.delivered\")", i);
			bad = 1;
			continue;
		}
		for (uint32_t j = 0; j < i; j++)
			if (m->u.items[j].type == JSON_STRING && !strcmp(m->u.items[j].u.str, p->u.str)) {
				api_field_error(c, "event_types", "duplicate", "item %u repeats item %u", i, j);
				bad = 1;
			}
	}
	if (bad)
		return;
	for (uint32_t i = 0; i < m->len; i++)
		memcpy(e->types[i], m->u.items[i].u.str, m->u.items[i].len + 1);
	e->n_types = (uint8_t)m->len;
}

static void read_description(struct api_ctx *c, const struct json_value *body, struct wh_endpoint *e)
{
	const char *d = NULL;
	int r = fld_text(c, body, "description", NULL, &d, WHE_DESC_MAX);
	if (r == FLD_SET)
		snprintf(e->description, sizeof(e->description), "%s", d);
	else if (r == FLD_NULL)
		e->description[0] = 0;
}

/* The endpoint named by the path, visible to the caller, or NULL with the
 * 404 written (another entity's endpoint is as unknown as a missing one). */
const struct wh_endpoint *whe_visible(struct api_ctx *c, char id[ID_MAX_LEN])
{
	const struct wh_endpoint *e = NULL;
	if (api_param(c, 0, id, ID_MAX_LEN) > 0)
		e = whe_get(c->sh, id, strlen(id));
	if (!e || !api_owns(c, e->owner, strlen(e->owner))) {
		api_error(c, 404, "not_found", "no webhook endpoint with this id");
		return NULL;
	}
	return e;
}

/* ---- routes ------------------------------------------------------------------------ */

static void endpoints_create(struct api_ctx *c)
{
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	fld_reject_unknown(c, body, create_known, NULL);
	struct wh_endpoint e;
	memset(&e, 0, sizeof(e));
	snprintf(e.owner, sizeof(e.owner), "%s", c->who.is_platform ? WHE_PLATFORM : c->who.entity_id);
	read_url(c, body, &e, 1);
	read_types(c, body, &e, 1);
	read_description(c, body, &e);
	if (c->n_errs) {
		api_validation_failed(c);
		return;
	}
	unsigned n = 0;
	whe_each_of_owner(c->sh, e.owner, count_one, &n);
	if (n >= WHE_PER_OWNER_MAX) {
		char d[128];
		snprintf(d, sizeof(d), "an entity has at most %u webhook endpoints", WHE_PER_OWNER_MAX);
		api_error(c, 422, "limit_reached", d);
		return;
	}
	if (wh_secret_generate(WHE_SECRET_BYTES, &e.secret)) {
		api_error(c, 500, "internal", "no randomness for the secret");
		return;
	}
	e.status = WHE_ENABLED;
	fmt_rfc3339_ms(e.created_at, wall_ms());
	memcpy(e.updated_at, e.created_at, sizeof(e.created_at));
	char id[ID_MAX_LEN];
	id_new(&c->sh->ids, "whe", id);
	int first = table_count(&c->sh->tables[REC_T_WH_ENDPOINT]) == 0;
	txn_begin(c->sh);
	if ((first && whd_stage_cursor_at_end(c->sh)) || whe_stage(c->sh, id, &e, "webhook_endpoint.created") ||
	    !txn_commit(c->sh)) {
		txn_abort(c->sh);
		api_error(c, 500, "commit_failed", "the endpoint could not be stored");
		return;
	}
	whe_send(c, 201, id, &e, VIEW_WITH_SECRET);
}

static void emit_public(struct api_ctx *c, const struct row *r)
{
	char id[ID_MAX_LEN];
	size_t n = r->id_len < sizeof(id) - 1 ? r->id_len : sizeof(id) - 1;
	memcpy(id, r->id, n);
	id[n] = 0;
	whe_write(&c->w, id, (const struct wh_endpoint *)r, VIEW_PUBLIC);
}

static int status_match(struct api_ctx *c, const struct row *r, void *arg)
{
	(void)c;
	int want = *(const int *)arg;
	return want < 0 || ((const struct wh_endpoint *)r)->status == want;
}

/* A partner walks its own range of by_owner; operators every row. */
static void endpoints_list(struct api_ctx *c)
{
	struct api_page pg;
	if (api_page_parse(c, &pg))
		return;
	int st = -1;
	if (api_query_enum(c, "status", whe_status_names, &st))
		return;
	const struct table *t = &c->sh->tables[REC_T_WH_ENDPOINT];
	if (c->who.is_platform) {
		api_list(c, &t->by_order, NULL, 0, &pg, status_match, &st, emit_public);
		return;
	}
	uint8_t prefix[ID_MAX_LEN + 1];
	size_t ol = strlen(c->who.entity_id);
	memcpy(prefix, c->who.entity_id, ol);
	prefix[ol] = 0;
	api_list(c, table_oidx_ext(t), prefix, (uint32_t)ol + 1, &pg, status_match, &st, emit_public);
}

static void endpoints_get(struct api_ctx *c)
{
	char id[ID_MAX_LEN];
	const struct wh_endpoint *e = whe_visible(c, id);
	if (!e || api_read_row(c))
		return;
	whe_send(c, 200, id, e, VIEW_PUBLIC);
}

static void endpoints_patch(struct api_ctx *c)
{
	char id[ID_MAX_LEN];
	const struct wh_endpoint *cur = whe_visible(c, id);
	if (!cur)
		return;
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	fld_reject_unknown(c, body, patch_known, NULL);
	struct wh_endpoint e = *cur;
	read_url(c, body, &e, 0);
	read_types(c, body, &e, 0);
	read_description(c, body, &e);
	int st = -1;
	int r = fld_enum(c, body, "status", NULL, whe_status_names, &st);
	if (r == FLD_NULL)
		api_field_error(c, "status", "required", "enabled or disabled");
	if (c->n_errs) {
		api_validation_failed(c);
		return;
	}
	if (r == FLD_SET) {
		e.status = (uint8_t)st;
		e.disabled_reason[0] = 0; /* an operator's or the owner's decision now */
		e.failing_since_ms = 0;   /* ... and a fresh start for the failing-days rule */
	}
	fmt_rfc3339_ms(e.updated_at, wall_ms());
	txn_begin(c->sh);
	if (whe_stage(c->sh, id, &e, "webhook_endpoint.updated") || !txn_commit(c->sh)) {
		txn_abort(c->sh);
		api_error(c, 500, "commit_failed", "the endpoint could not be stored");
		return;
	}
	whe_send(c, 200, id, &e, VIEW_PUBLIC);
}

static void endpoints_delete(struct api_ctx *c)
{
	char id[ID_MAX_LEN];
	const struct wh_endpoint *e = whe_visible(c, id);
	if (!e)
		return;
	struct buf pub;
	buf_init(&pub, REC_MAX_VAL);
	struct jw w;
	jw_init(&w, &pub);
	whe_write(&w, id, e, VIEW_PUBLIC);
	char owner[ID_MAX_LEN];
	memcpy(owner, e->owner, sizeof(owner));
	txn_begin(c->sh);
	if (w.err || txn_del(c->sh, REC_T_WH_ENDPOINT, id, strlen(id)) ||
	    txn_event(c->sh, "webhook_endpoint.deleted", owner, pub.data, pub.len) || !txn_commit(c->sh)) {
		txn_abort(c->sh);
		buf_free(&pub);
		api_error(c, 500, "commit_failed", "the endpoint could not be deleted");
		return;
	}
	buf_free(&pub);
	char doc[ID_MAX_LEN + 48];
	int n = snprintf(doc, sizeof(doc), "{\"id\":\"%s\",\"deleted\":true}", id);
	api_send_doc(c, 200, doc, (size_t)n);
}

static void endpoints_rotate(struct api_ctx *c)
{
	char id[ID_MAX_LEN];
	const struct wh_endpoint *cur = whe_visible(c, id);
	if (!cur)
		return;
	struct wh_endpoint e = *cur;
	int64_t now = (int64_t)wall_ms();
	e.prev = cur->secret; /* as stored: sealed, or plain in a row from before sealing */
	memcpy(e.prev_sealed, cur->sealed, sizeof(e.prev_sealed));
	e.sealed[0] = 0;      /* the new secret is sealed when staged */
	e.prev_until_ms = now + WHE_ROTATION_MS;
	if (wh_secret_generate(WHE_SECRET_BYTES, &e.secret)) {
		api_error(c, 500, "internal", "no randomness for the secret");
		return;
	}
	fmt_rfc3339_ms(e.updated_at, (unsigned long long)now);
	txn_begin(c->sh);
	if (whe_stage(c->sh, id, &e, "webhook_endpoint.secret_rotated") || !txn_commit(c->sh)) {
		txn_abort(c->sh);
		api_error(c, 500, "commit_failed", "the endpoint could not be stored");
		return;
	}
	whe_send(c, 200, id, &e, VIEW_WITH_SECRET);
}

const struct route webhook_routes[] = {
	{HTTP_M_POST, "/v1/webhook-endpoints", endpoints_create, SC_WRITE_WEBHOOKS, ACT_MANAGE_WEBHOOKS,
	 "Create a webhook endpoint (its secret is in this answer only)", 0},
	{HTTP_M_GET, "/v1/webhook-endpoints", endpoints_list, SC_READ_WEBHOOKS, ACT_MANAGE_WEBHOOKS,
	 "List webhook endpoints", 0},
	{HTTP_M_GET, "/v1/webhook-endpoints/{id}", endpoints_get, SC_READ_WEBHOOKS, ACT_MANAGE_WEBHOOKS,
	 "Retrieve a webhook endpoint", 0},
	{HTTP_M_PATCH, "/v1/webhook-endpoints/{id}", endpoints_patch, SC_WRITE_WEBHOOKS, ACT_MANAGE_WEBHOOKS,
	 "Update a webhook endpoint (url, event types, description, status)", 0},
	{HTTP_M_DELETE, "/v1/webhook-endpoints/{id}", endpoints_delete, SC_WRITE_WEBHOOKS, ACT_MANAGE_WEBHOOKS,
	 "Delete a webhook endpoint", 0},
	{HTTP_M_POST, "/v1/webhook-endpoints/{id}/rotate-secret", endpoints_rotate, SC_WRITE_WEBHOOKS,
	 ACT_MANAGE_WEBHOOKS, "Rotate an endpoint's secret (the new one is in this answer only)", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
