/*
 * channel_routes.c -- the routes of sales channels and curated shops (spec
 * 2.5): create, read, merge-patch, list, with the storefront view for
 * publishable keys.  The two resources themselves (kinds, rules, stored
 * documents, tables, lookups) are channel.c, below this file; what they
 * share is shelf.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/log.h"
#include "engine/catalogue/partner.h"
#include "engine/edge/fields.h"
#include "engine/edge/key.h"
#include "engine/storage/resources.h"
#include "engine/supply/channel.h"
#include "engine/supply/shelf.h"

/* ---- visibility ------------------------------------------------------------------ */

/* A publishable (storefront) key of a partner: it gets the storefront view. */
static int storefront(const struct api_ctx *c) { return c->who.kind == KEY_PUBLISHABLE && !c->who.is_platform; }

/* May the caller see the row: its seller's (or the platform); a publishable
 * key only its own storefront channel and that channel's shops, and nothing
 * without a channel (spec 5: a storefront sees what its shop page shows). */
static int shelf_visible(const struct api_ctx *c, const struct shelf_kind *k, const struct shelf_row *s)
{
	if (!api_owns(c, s->seller_id, strlen(s->seller_id)))
		return 0;
	if (storefront(c))
		return c->who.channel_id[0] && k->on_channel(s, c->who.channel_id);
	return 1;
}

/*
 * The storefront view: the members a shop page shows, nothing of how the
 * seller runs it (no warehouse location_ids, no markup, no seller id); a
 * channel's listings[] are those the key may see (its live ones).  One list
 * per kind, in the order of the stored document.
 */
static const char *const channel_storefront[] = {"id",	   "name",   "kind",	 "country",
						   "currency", "status", "listings", NULL};
static const char *const shop_storefront[] = {"id", "name", "layout", "channel_id", "status", NULL};

static int in_list(const char *const *list, const char *k)
{
	for (; *list; list++)
		if (!strcmp(*list, k))
			return 1;
	return 0;
}

/* Emit the members of r's document that `keep` names. */
static void storefront_emit(struct api_ctx *c, const struct row *r, const char *const *keep)
{
	struct json_doc *d = json_parse(r->doc, r->doc_len, NULL, NULL);
	if (!d) {
		c->w.err = 1;
		return;
	}
	const struct json_value *o = json_root(d);
	jw_obj_begin(&c->w);
	for (uint32_t i = 0; i < o->len; i++)
		if (in_list(keep, o->u.members[i].key)) {
			jw_key(&c->w, o->u.members[i].key);
			jw_value(&c->w, &o->u.members[i].value);
		}
	jw_obj_end(&c->w);
	json_doc_free(d);
}

static void channel_emit_only(struct api_ctx *c, const struct row *r, const char *const *keep);
static void channel_storefront_emit(struct api_ctx *c, const struct row *r) { channel_emit_only(c, r, channel_storefront); }
static void shop_storefront_emit(struct api_ctx *c, const struct row *r) { storefront_emit(c, r, shop_storefront); }

/* The visible row of the path, or NULL with the 404 written. */
static const struct shelf_row *shelf_from_path(struct api_ctx *c, const struct shelf_kind *k)
{
	const struct shelf_row *s = NULL;
	if (c->n_params)
		s = (const struct shelf_row *)table_get(&c->sh->tables[k->table], c->params[0].p, c->params[0].len);
	if (!s || !shelf_visible(c, k, s)) {
		char d[64];
		snprintf(d, sizeof(d), "no %s with this id", k->noun);
		api_error(c, 404, "not_found", d);
		return NULL;
	}
	return s;
}

static void channel_emit(struct api_ctx *c, const struct row *r);

/* ---- writing ---------------------------------------------------------------------- */

static void shelf_commit(struct api_ctx *c, const struct shelf_kind *k, const struct shelf_vals *v, const char *event,
			 int status)
{
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	struct jw w;
	jw_init(&w, &doc);
	jw_obj_begin(&w);
	jw_kstr(&w, "id", v->id);
	jw_kstr(&w, "seller_id", v->seller_id);
	jw_kstr(&w, "name", v->name);
	k->write(&w, v);
	jw_kstr(&w, "status", shelf_status_names[v->status]);
	jw_kstr(&w, "created_at", v->created_at);
	jw_kstr(&w, "updated_at", v->updated_at);
	jw_obj_end(&w);
	txn_begin(c->sh);
	if (w.err || txn_put(c->sh, k->table, v->id, strlen(v->id), doc.data, doc.len) ||
	    txn_event(c->sh, event, v->seller_id, doc.data, doc.len) || !txn_commit(c->sh)) {
		txn_abort(c->sh);
		buf_free(&doc);
		api_error(c, 500, "commit_failed", "the record could not be stored");
		return;
	}
	buf_free(&doc);
	const struct row *r = table_get(&c->sh->tables[k->table], v->id, strlen(v->id));
	if (!r) {
		api_error(c, 500, "commit_failed", "the record could not be read back");
		return;
	}
	if (k->table == REC_T_CHANNEL)
		channel_emit(c, r);
	else
		jw_raw(&c->w, r->doc, r->doc_len);
	c->rs->status = status;
}

/* The seller a row is for: a seller partner (with the kind's capability),
 * and the caller itself unless the caller is the platform. */
static void seller_check(struct api_ctx *c, const struct shelf_kind *k, const char *sid)
{
	if (!c->who.is_platform && strcmp(sid, c->who.entity_id)) {
		api_field_error(c, "seller_id", "own", "a partner runs its own %ss only", k->noun);
		return;
	}
	const struct partner *p = partner_get(c->sh, sid, strlen(sid));
	if (!p)
		api_field_error(c, "seller_id", "exists", "no partner with this id");
	else if (!(p->v.roles & ROLE_SELLER))
		api_field_error(c, "seller_id", "seller_role", "must be a partner with the seller role");
	else if (k->need_cap >= 0 && !(partner_caps(&p->v) & (1u << k->need_cap)))
		api_field_error(c, "seller_id", "curates_offers", "the seller lacks the curates_offers capability");
}

/* A partner caller without the kind's capability: 403 written, 1. */
static int lacks_capability(struct api_ctx *c, const struct shelf_kind *k)
{
	if (c->who.is_platform || k->need_cap < 0)
		return 0;
	const struct partner *p = partner_get(c->sh, c->who.entity_id, strlen(c->who.entity_id));
	if (p && (partner_caps(&p->v) & (1u << k->need_cap)))
		return 0;
	api_error(c, 403, "action_not_allowed", "curated shops need the curates_offers capability");
	return 1;
}

/* Members the service assigns, and required members given as null. */
static void body_rules(struct api_ctx *c, const struct shelf_kind *k, const struct json_value *body, int create)
{
	fld_reject_unknown(c, body, k->known, NULL);
	for (int i = 0; k->read_only[i]; i++)
		if (json_get(body, k->read_only[i]))
			api_field_error(c, k->read_only[i], "read_only", "is assigned by the service");
	for (int i = 0; k->required[i]; i++) {
		const struct json_value *m = json_get(body, k->required[i]);
		if (create ? !m || m->type == JSON_NULL : m && m->type == JSON_NULL)
			api_field_error(c, k->required[i], "required", create ? "is required" : "cannot be removed");
	}
}

/* Another row of the seller holds the name: 409 naming it, 1. */
static int name_taken(struct api_ctx *c, const struct shelf_kind *k, const struct shelf_vals *v)
{
	char key[ID_MAX_LEN + SHELF_MAX_NAME + 1];
	uint16_t kl = shelf_name_key(v->seller_id, v->name, key);
	const struct shelf_row *o = (const struct shelf_row *)shelf_by_name(&c->sh->tables[k->table], key, kl);
	if (!o || !strcmp(o->row.id, v->id))
		return 0;
	char d[256];
	snprintf(d, sizeof(d), "%s %.*s of this seller is already named \"%s\"", k->noun, (int)o->row.id_len, o->row.id,
		 o->name);
	api_error(c, 409, k->name_taken, d);
	return 1;
}

static void shelf_create(struct api_ctx *c, const struct shelf_kind *k)
{
	if (lacks_capability(c, k))
		return;
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	body_rules(c, k, body, 1);
	struct shelf_vals v;
	memset(&v, 0, sizeof(v));
	k->defaults(&v);
	int r = fld_str(c, body, "seller_id", NULL, v.seller_id, ID_MAX_LEN - 1);
	if (r == FLD_ABSENT || r == FLD_NULL) {
		if (c->who.is_platform)
			api_field_error(c, "seller_id", "required", "operators name the seller");
		else
			snprintf(v.seller_id, sizeof(v.seller_id), "%s", c->who.entity_id);
	}
	shelf_common_read(c, body, &v);
	k->read(c, body, &v);
	if (v.status == SHELF_CLOSED)
		api_field_error(c, "status", "initial", "a new %s starts active or paused", k->noun);
	if (v.seller_id[0])
		seller_check(c, k, v.seller_id);
	k->check(c, body, &v);
	if (c->n_errs) {
		api_validation_failed(c);
		return;
	}
	if (name_taken(c, k, &v))
		return;
	id_new(&c->sh->ids, k->id_prefix, v.id);
	fmt_rfc3339_ms(v.created_at, wall_ms());
	memcpy(v.updated_at, v.created_at, sizeof(v.created_at));
	shelf_commit(c, k, &v, k->ev_created, 201);
}

static void shelf_patch(struct api_ctx *c, const struct shelf_kind *k)
{
	const struct shelf_row *cur = shelf_from_path(c, k);
	if (!cur)
		return;
	if (cur->status == SHELF_CLOSED) {
		char d[64];
		snprintf(d, sizeof(d), "the %s is closed", k->noun);
		api_error(c, 409, k->closed_code, d);
		return;
	}
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	body_rules(c, k, body, 0);
	if (json_get(body, "seller_id"))
		api_field_error(c, "seller_id", "read_only", "cannot be changed");
	struct json_doc *stored = json_parse(cur->row.doc, cur->row.doc_len, NULL, NULL);
	struct shelf_vals v;
	if (!stored || shelf_load(k, json_root(stored), &v)) {
		json_doc_free(stored);
		api_error(c, 500, "corrupt_record", "the stored record does not parse");
		return;
	}
	shelf_common_read(c, body, &v);
	k->read(c, body, &v);
	k->check(c, body, &v);
	json_doc_free(stored); /* v holds copies only */
	if (c->n_errs) {
		api_validation_failed(c);
		return;
	}
	if (!shelf_moves[cur->status][v.status]) {
		char d[128];
		snprintf(d, sizeof(d), "a %s cannot move from \"%s\" to \"%s\"", k->noun, shelf_status_names[cur->status],
			 shelf_status_names[v.status]);
		api_error(c, 409, "invalid_status_transition", d);
		return;
	}
	if (name_taken(c, k, &v))
		return;
	fmt_rfc3339_ms(v.updated_at, wall_ms());
	shelf_commit(c, k, &v, k->ev_updated, 200);
}

/* A channel as reads return it: the stored members, with `listings`
 * filled from the listings-by-channel index (see the top). */
/* The channel document with its listings[] joined (those the caller may
 * see); keep: the members to emit (NULL: all). */
static void channel_emit_only(struct api_ctx *c, const struct row *r, const char *const *keep)
{
	struct json_doc *d = json_parse(r->doc, r->doc_len, NULL, NULL);
	if (!d) {
		c->w.err = 1;
		return;
	}
	const struct json_value *o = json_root(d);
	char id[ID_MAX_LEN];
	snprintf(id, sizeof(id), "%.*s", (int)r->id_len, r->id);
	jw_obj_begin(&c->w);
	int more = 0;
	for (uint32_t i = 0; i < o->len; i++) {
		const struct json_member *m = &o->u.members[i];
		if (keep && !in_list(keep, m->key))
			continue;
		jw_key(&c->w, m->key);
		if (!strcmp(m->key, "listings"))
			more = channel_listing_ids(c, id, &c->w);
		else
			jw_value(&c->w, &m->value);
	}
	jw_kbool(&c->w, "listings_truncated", more);
	jw_obj_end(&c->w);
	json_doc_free(d);
}

static void channel_emit(struct api_ctx *c, const struct row *r) { channel_emit_only(c, r, NULL); }

static void shelf_get(struct api_ctx *c, const struct shelf_kind *k)
{
	const struct shelf_row *s = shelf_from_path(c, k);
	if (!s)
		return;
	if (storefront(c)) {
		if (api_read_row(c))
			return;
		(k->table == REC_T_CHANNEL ? channel_storefront_emit : shop_storefront_emit)(c, &s->row);
		c->rs->status = 200;
		return;
	}
	if (k->table != REC_T_CHANNEL) {
		api_send_doc(c, 200, s->row.doc, s->row.doc_len);
		return;
	}
	if (api_read_row(c))
		return;
	channel_emit(c, &s->row);
	c->rs->status = 200;
}

struct shelf_filter {
	const struct shelf_kind *k;
	int status;               /* -1 any */
	int none;                 /* a partner filtering on another seller: nothing */
};

static int shelf_match(struct api_ctx *c, const struct row *r, void *arg)
{
	const struct shelf_filter *f = arg;
	const struct shelf_row *s = (const struct shelf_row *)r;
	return !f->none && (f->status < 0 || s->status == f->status) && shelf_visible(c, f->k, s);
}

/* Lists walk the seller's range of the by-seller index (a partner's own,
 * or an operator's ?seller_id); operators without it walk every row. */
static void shelf_list(struct api_ctx *c, const struct shelf_kind *k)
{
	struct api_page pg;
	if (api_page_parse(c, &pg))
		return;
	struct shelf_filter f = {k, -1, 0};
	char st[16], sid[ID_MAX_LEN];
	int n = api_query(c, "status", st, sizeof(st));
	if (n != -1) {
		for (int i = 0; n > 0 && shelf_status_names[i]; i++)
			if (!strcmp(shelf_status_names[i], st))
				f.status = i;
		if (f.status < 0) {
			api_error(c, 400, "invalid_filter", "status must be active, paused or closed");
			return;
		}
	}
	n = api_query(c, "seller_id", sid, sizeof(sid));
	if (n == 0 || n == -2) {
		api_error(c, 400, "invalid_filter", "seller_id must be a partner id");
		return;
	}
	const struct table *t = &c->sh->tables[k->table];
	const struct oidx *idx = &t->by_order;
	uint8_t prefix[IDX_MAX_KEY];
	uint32_t pl = 0;
	const char *seller = c->who.is_platform ? (n > 0 ? sid : NULL) : c->who.entity_id;
	if (!c->who.is_platform && n > 0 && strcmp(sid, c->who.entity_id))
		f.none = 1;
	if (seller) {
		size_t sl = strlen(seller);
		idx = shelf_by_seller(t);
		memcpy(prefix, seller, sl);
		prefix[sl] = 0;
		pl = (uint32_t)sl + 1;
	}
	api_row_emit emit = k->table == REC_T_CHANNEL ? channel_emit : NULL;
	if (storefront(c))
		emit = k->table == REC_T_CHANNEL ? channel_storefront_emit : shop_storefront_emit;
	api_list(c, idx, prefix, pl, &pg, shelf_match, &f, emit);
}

const struct channel *channel_from_path(struct api_ctx *c)
{
	return (const struct channel *)shelf_from_path(c, &channel_kind);
}

int channel_storefront_key(const struct api_ctx *c) { return storefront(c); }

static void channels_list(struct api_ctx *c) { shelf_list(c, &channel_kind); }
static void channels_create(struct api_ctx *c) { shelf_create(c, &channel_kind); }
static void channels_get(struct api_ctx *c) { shelf_get(c, &channel_kind); }
static void channels_patch(struct api_ctx *c) { shelf_patch(c, &channel_kind); }
static void shops_list(struct api_ctx *c) { shelf_list(c, &shop_kind); }
static void shops_create(struct api_ctx *c) { shelf_create(c, &shop_kind); }
static void shops_get(struct api_ctx *c) { shelf_get(c, &shop_kind); }
static void shops_patch(struct api_ctx *c) { shelf_patch(c, &shop_kind); }

const struct route channel_routes[] = {
	{HTTP_M_GET, "/v1/sales-channels", channels_list, SC_READ_LISTINGS, ACT_READ_LISTINGS, "List sales channels", 0},
	{HTTP_M_POST, "/v1/sales-channels", channels_create, SC_WRITE_LISTINGS, ACT_WRITE_LISTINGS,
	 "Create a sales channel", 0},
	{HTTP_M_GET, "/v1/sales-channels/{id}", channels_get, SC_READ_LISTINGS, ACT_READ_LISTINGS,
	 "Retrieve a sales channel", 0},
	{HTTP_M_PATCH, "/v1/sales-channels/{id}", channels_patch, SC_WRITE_LISTINGS, ACT_WRITE_LISTINGS,
	 "Update a sales channel (merge patch)", 0},
	{HTTP_M_GET, "/v1/curated-shops", shops_list, SC_READ_LISTINGS, ACT_READ_LISTINGS, "List curated shops", 0},
	{HTTP_M_POST, "/v1/curated-shops", shops_create, SC_WRITE_LISTINGS, ACT_WRITE_LISTINGS,
	 "Create a curated shop", 0},
	{HTTP_M_GET, "/v1/curated-shops/{id}", shops_get, SC_READ_LISTINGS, ACT_READ_LISTINGS,
	 "Retrieve a curated shop", 0},
	{HTTP_M_PATCH, "/v1/curated-shops/{id}", shops_patch, SC_WRITE_LISTINGS, ACT_WRITE_LISTINGS,
	 "Update a curated shop (merge patch)", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
