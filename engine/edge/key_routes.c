/*
 * key_routes.c -- the key routes (spec 5, "issued through the partner
 * portal"): mint (the plaintext shown once), read, rename or re-scope,
 * revoke, list.  The key itself (token format, digest, the table, lookup,
 * the stored document, the bootstrap key) is key.c, below this file, so
 * identity links without these handlers.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/base/log.h"
#include "engine/edge/fields.h"
#include "engine/edge/key.h"
#include "engine/storage/resources.h"

/* ---- routes ------------------------------------------------------------ */

static const char *const mint_fields[] = {"entity_id", "kind", "name", "scopes", "expires_at",
					  "channel_id", "rate_limit", NULL};

/* expires_at: RFC 3339 in the future; FLD_* as fields.c. */
static int read_expiry(struct api_ctx *c, const struct json_value *body, struct api_key *k)
{
	const struct json_value *v = json_get(body, "expires_at");
	if (!v)
		return FLD_ABSENT;
	if (v->type == JSON_NULL) {
		k->expires_at[0] = 0;
		k->expires_ms = 0;
		return FLD_NULL;
	}
	long long ms;
	if (v->type != JSON_STRING || v->len >= sizeof(k->expires_at) || parse_rfc3339_ms(v->u.str, v->len, &ms)) {
		api_field_error(c, "expires_at", "format", "must be an RFC 3339 timestamp");
		return FLD_BAD;
	}
	if (ms <= (long long)wall_ms()) {
		api_field_error(c, "expires_at", "future", "must be in the future");
		return FLD_BAD;
	}
	k->expires_ms = ms;
	fmt_rfc3339_ms(k->expires_at, (unsigned long long)ms);
	return FLD_SET;
}

/* scopes[]: known, allowed for the entity and kind, held by the caller. */
static void read_scopes(struct api_ctx *c, const struct json_value *body, struct api_key *k, int platform)
{
	const struct json_value *v = json_get(body, "scopes");
	scope_set want = 0;
	if (!v || v->type == JSON_NULL) {
		for (int s = 1; s < SC_COUNT_; s++) {
			uint8_t f = scope_defs[s].flags;
			int ok = k->kind == KEY_PUBLISHABLE ? (f & SCF_PUBLISHABLE) != 0
				 : platform		    ? 1
							    : (f & SCF_PARTNER_DEFAULT) != 0;
			if (ok)
				want |= SCOPE_BIT(s);
		}
		if (!c->who.is_platform)
			want &= c->who.scopes;
		k->scopes = want;
		return;
	}
	if (v->type != JSON_ARRAY || v->len == 0 || v->len > SC_COUNT_) {
		api_field_error(c, "scopes", "type", "must be a non-empty array of scope names");
		return;
	}
	for (uint32_t i = 0; i < v->len; i++) {
		const struct json_value *s = &v->u.items[i];
		char path[32];
		snprintf(path, sizeof(path), "scopes[%u]", i);
		int id = s->type == JSON_STRING ? scope_find(s->u.str, s->len) : -1;
		if (id < 0) {
			api_field_error(c, path, "enum", "is not a known scope (see the OpenAPI document)");
			continue;
		}
		uint8_t f = scope_defs[id].flags;
		if ((f & SCF_PLATFORM_ONLY) && !platform)
			api_field_error(c, path, "platform_only", "%s is never issued to partner keys", s->u.str);
		else if (k->kind == KEY_PUBLISHABLE && !(f & SCF_PUBLISHABLE))
			api_field_error(c, path, "publishable", "%s cannot be held by a publishable key", s->u.str);
		else if (!c->who.is_platform && !(c->who.scopes & SCOPE_BIT(id)))
			api_field_error(c, path, "exceeds_caller", "a key cannot grant %s, which it does not hold",
					s->u.str);
		else if (want & SCOPE_BIT(id))
			api_field_error(c, path, "duplicate", "is listed twice");
		want |= SCOPE_BIT(id);
	}
	k->scopes = want;
}

static void read_rate(struct api_ctx *c, const struct json_value *body, struct api_key *k)
{
	const struct json_value *v = json_get(body, "rate_limit");
	if (!v || v->type == JSON_NULL)
		return;
	if (!c->who.is_platform) {
		api_field_error(c, "rate_limit", "operator_only", "is set by platform operators");
		return;
	}
	if (v->type != JSON_OBJECT) {
		api_field_error(c, "rate_limit", "type", "must be an object {requests_per_second, burst}");
		return;
	}
	static const char *const known[] = {"requests_per_second", "burst", NULL};
	fld_reject_unknown(c, v, known, "rate_limit.");
	int64_t rps, burst;
	int a = fld_int(c, v, "requests_per_second", "rate_limit.requests_per_second", 1, KEY_RATE_MAX, &rps);
	int b = fld_int(c, v, "burst", "rate_limit.burst", 1, KEY_RATE_MAX, &burst);
	if (a == FLD_ABSENT)
		api_field_error(c, "rate_limit.requests_per_second", "required", "is required");
	if (a == FLD_SET) {
		k->rate_rps = (uint32_t)rps;
		k->rate_burst = b == FLD_SET ? (uint32_t)burst : (uint32_t)rps;
	}
}

static void mint(struct api_ctx *c)
{
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	struct api_key k;
	memset(&k, 0, sizeof(k));
	fld_reject_unknown(c, body, mint_fields, NULL);
	int kind = KEY_SECRET;
	fld_enum(c, body, "kind", NULL, key_kind_names, &kind);
	k.kind = (uint8_t)kind;
	int er = fld_str(c, body, "entity_id", NULL, k.entity_id, ID_MAX_LEN - 1);
	if (er != FLD_SET)
		snprintf(k.entity_id, sizeof(k.entity_id), "%s", c->who.entity_id);
	int platform = strcmp(k.entity_id, KEY_PLATFORM_ENTITY) == 0;
	if (!api_owns(c, k.entity_id, strlen(k.entity_id))) {
		/* Another entity: the same answer whether it exists or not. */
		api_error(c, 404, "not_found", "no such entity");
		return;
	}
	uint8_t roles, status;
	if (!platform && !key_partner_facts(c->sh, k.entity_id, &roles, &status))
		api_field_error(c, "entity_id", "exists", "no partner with this id");
	if (platform && k.kind == KEY_PUBLISHABLE)
		api_field_error(c, "kind", "platform", "the platform entity holds secret keys only");
	fld_str(c, body, "name", NULL, k.name, KEY_MAX_NAME);
	if (fld_str(c, body, "channel_id", NULL, k.channel_id, KEY_MAX_CHANNEL) == FLD_SET) {
		/* A storefront key is scoped to one open sales channel of its own
		 * entity; another entity's channel answers as an unknown one. */
		if (k.kind != KEY_PUBLISHABLE)
			api_field_error(c, "channel_id", "publishable", "only publishable keys are channel-scoped");
		else if (!key_channel_of_seller(c->sh, k.channel_id, k.entity_id))
			api_field_error(c, "channel_id", "sales_channel",
					"must name an open sales channel of the key's entity");
	}
	read_scopes(c, body, &k, platform);
	read_expiry(c, body, &k);
	read_rate(c, body, &k);
	if (c->n_errs) {
		api_validation_failed(c);
		return;
	}
	char tok[KEY_TOKEN_LEN + 1], id[ID_MAX_LEN];
	if (key_token_new((enum key_kind)k.kind, tok) || key_digest(tok, KEY_TOKEN_LEN, k.digest)) {
		api_error(c, 503, "entropy_unavailable", "could not generate a key; retry");
		return;
	}
	memcpy(k.prefix, tok, KEY_DISPLAY_LEN);
	k.prefix[KEY_DISPLAY_LEN] = 0;
	fmt_rfc3339_ms(k.created_at, wall_ms());
	id_new(&c->sh->ids, "key", id);
	if (!key_store(c->sh, &k, id, "key.created")) {
		api_error(c, 500, "commit_failed", "the key could not be stored");
		return;
	}
	/* The one and only time the plaintext is seen. */
	c->rs->status = 201;
	jw_obj_begin(&c->w);
	key_fields(&c->w, &k, id, 0);
	jw_kstr(&c->w, "key", tok);
	jw_obj_end(&c->w);
	explicit_bzero(tok, sizeof(tok));
}

/* The key named by the path if the caller owns it; 404 otherwise. */
static const struct api_key *key_from_path(struct api_ctx *c)
{
	const struct api_key *k = NULL;
	if (c->n_params)
		k = (const struct api_key *)table_get(&c->sh->tables[REC_T_KEY], c->params[0].p, c->params[0].len);
	if (!k || !api_owns(c, k->entity_id, strlen(k->entity_id))) {
		api_error(c, 404, "not_found", "no API key with this id");
		return NULL;
	}
	return k;
}

static void send_key(struct api_ctx *c, int status, const struct api_key *k)
{
	if (api_read_row(c))
		return;
	c->rs->status = status;
	key_write(&c->w, k, k->row.id, 0);
}

static void key_get(struct api_ctx *c)
{
	const struct api_key *k = key_from_path(c);
	if (k)
		send_key(c, 200, k);
}

/* Store a new version of key `cur` (which is freed by the replacement:
 * callers must not touch cur afterwards, nor c->who if it was the caller's
 * own key) and answer it. */
static void key_update(struct api_ctx *c, const struct api_key *cur, struct api_key *k, const char *event)
{
	char id[ID_MAX_LEN];
	memcpy(id, cur->row.id, cur->row.id_len);
	id[cur->row.id_len] = 0;
	if (!key_store(c->sh, k, id, event)) {
		api_error(c, 500, "commit_failed", "the key could not be stored");
		return;
	}
	const struct api_key *now = (const struct api_key *)table_get(&c->sh->tables[REC_T_KEY], id, strlen(id));
	send_key(c, 200, now);
}

static void key_patch(struct api_ctx *c)
{
	const struct api_key *cur = key_from_path(c);
	if (!cur)
		return;
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	static const char *const known[] = {"name", "expires_at", NULL};
	fld_reject_unknown(c, body, known, NULL);
	struct api_key k = *cur;
	if (fld_str(c, body, "name", NULL, k.name, KEY_MAX_NAME) == FLD_NULL)
		k.name[0] = 0;
	read_expiry(c, body, &k);
	if (c->n_errs) {
		api_validation_failed(c);
		return;
	}
	if (cur->revoked) {
		api_error(c, 409, "key_revoked", "a revoked key cannot be changed");
		return;
	}
	key_update(c, cur, &k, "key.updated");
}

static void key_revoke(struct api_ctx *c)
{
	const struct api_key *cur = key_from_path(c);
	if (!cur)
		return;
	if (cur->revoked) { /* already revoked: the same answer again */
		send_key(c, 200, cur);
		return;
	}
	struct api_key k = *cur;
	k.revoked = 1;
	fmt_rfc3339_ms(k.revoked_at, wall_ms());
	log_info("msg=\"api key revoked\" key_id=%.*s entity_id=%s by_key=%s", (int)cur->row.id_len, cur->row.id,
		 cur->entity_id, c->who.key_id);
	key_update(c, cur, &k, "key.revoked"); /* replaces the row: cur is gone after this */
}

static void key_emit(struct api_ctx *c, const struct row *r)
{
	key_write(&c->w, (const struct api_key *)r, r->id, 0);
}

static void key_list(struct api_ctx *c)
{
	struct api_page pg;
	if (api_page_parse(c, &pg))
		return;
	char ent[ID_MAX_LEN];
	int n = api_query(c, "entity_id", ent, sizeof(ent));
	if (n == -2 || n == 0) {
		api_error(c, 400, "invalid_filter", "entity_id must be an entity id");
		return;
	}
	if (n < 0)
		snprintf(ent, sizeof(ent), "%s", c->who.is_platform ? "" : c->who.entity_id);
	if (ent[0] && !api_owns(c, ent, strlen(ent))) {
		/* Another entity's keys: the empty list an entity without keys
		 * gets, so existence is not revealed. */
		api_list_empty(c);
		return;
	}
	if (!ent[0]) {
		api_list(c, &c->sh->tables[REC_T_KEY].by_order, NULL, 0, &pg, NULL, NULL, key_emit);
		return;
	}
	uint8_t prefix[ID_MAX_LEN + 1];
	size_t el = strlen(ent);
	memcpy(prefix, ent, el);
	prefix[el] = 0;
	api_list(c, key_by_entity(c->sh), prefix, (uint32_t)el + 1, &pg, NULL, NULL,
		 key_emit);
}

const struct route key_routes[] = {
	{HTTP_M_POST, "/api/keys", mint, SC_WRITE_KEYS, ACT_MINT_KEY,
	 "Mint an API key (the plaintext is returned once)", 0},
	{HTTP_M_GET, "/api/keys", key_list, SC_READ_KEYS, ACT_READ_KEYS, "List API keys (metadata only)", 0},
	{HTTP_M_GET, "/api/keys/{id}", key_get, SC_READ_KEYS, ACT_READ_KEYS, "Retrieve an API key's metadata", 0},
	{HTTP_M_PATCH, "/api/keys/{id}", key_patch, SC_WRITE_KEYS, ACT_MINT_KEY,
	 "Rename a key or set/clear its expiry", 0},
	{HTTP_M_POST, "/api/keys/{id}/revoke", key_revoke, SC_WRITE_KEYS, ACT_MINT_KEY,
	 "Revoke a key (takes effect on the next request)", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
