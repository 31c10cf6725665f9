/*
 * sync.c -- the two-way feed (spec 4.4, issue 18 items 6 and 7).
 *
 * PUSH (partner -> platform), POST /v1/sync/push, used by originators: a
 * batch {"items": [...]} of at most SYNC_PUSH_MAX_ITEMS items (more is a
 * 413 batch_too_large, nothing done), each either
 *     {"ref"?: "w1", "wine": {<a POST /v1/wines body>}}
 *     {"ref"?: "o1", "offer": {<a POST /v1/offers body>}, "wine_ref"?: "w1"}
 * Every item is resolved exactly as the single create resolves it -- the
 * same functions, not a copy: a wine through wine_ingest() (validation,
 * the match tiers of spec 2.7, enrichment of the matched wine, never a
 * second row for the same wine; a match to a wine the caller may not see
 * goes to review, 202), an offer through offer_put() in upsert mode (the
 * upsert key is wine_id + originator_id + condition: the caller's existing
 * offer is updated as a PATCH would be, or left alone when nothing
 * changes; absent `source` means "feed").  `wine_ref` names the `ref` of
 * an earlier wine item of the same batch that resolved to a wine, so a
 * feed sends a new wine and its offer together without knowing the id.
 *
 * Transactions: PER ITEM.  Each item commits on its own (exactly as its
 * single create would); a failing item changes nothing and does not undo
 * the others.  The answer is 200 with one result per item, in order:
 * index, ref, kind, the status the single create would have answered
 * (201 created, 200 matched/updated/unchanged, 202 pending_review, or the
 * error status), outcome, id, the wine's match, and for a failure the
 * problem's code, detail and errors[].  The whole request is still one
 * WAL transaction (dispatch.c holds every write), so a crash keeps all of
 * the batch or none of it, and with an Idempotency-Key the stored answer
 * -- the same per-item results -- is what a retry gets back (idem.c).  A
 * retry without a key is still safe: wines match themselves, offers are
 * upserts (unchanged).  Per item the key must hold the scope of the single
 * route (write:wines, write:offers) and the entity its action
 * (can_write_wines, can_write_offers): else that item fails 403.
 *
 * PULL (platform -> partner), POST /v1/sync/pull, used by sellers and
 * fulfillers: the catalogue's changes since a cursor.  The change feed is
 * the event log itself (engine/storage/events.c): wine.* , offer.* and
 * stock.changed events in log order; the cursor is opaque (the base64url
 * of the last event id examined).  Each change names its row and carries
 * the row's CURRENT document as GET returns it to this caller -- never
 * the event's payload, which was written for the row's owner.  The
 * read-path filter is the GET one (wine_visible, offer_visible_to): a row
 * the caller may not see now yields no change at all, exactly as if it
 * had never existed; a row that leaves the caller's view (withdrawn,
 * paused, permissions narrowed) simply stops appearing -- the feed does
 * not announce removals (that would reveal rows the caller never saw).
 * A row that changed several times within one page appears once.
 * Curation (sellers curate, never mirror blindly, spec 4.4): the body may
 * name `kinds` (wine, offer), `block_countries` (a wine of that country;
 * an offer whose wine or originator is of that country) and
 * `block_sellers` (offers of those originators).  They are the caller's
 * SYNC SETTINGS: stored with its feed state and used by every later pull
 * (and the status' pending count) until a pull names them again.  A key
 * sees the kinds its scopes read (read:wines, read:offers).
 * Paging: `limit` 1..SYNC_PULL_MAX (default SYNC_PULL_DEFAULT); a page
 * examines at most SYNC_SCAN_BUDGET events, then ends early with has_more.
 * `next_cursor` is where the next pull starts (also when has_more is
 * false: pull again later from there); null only when the log is empty.
 * An absent `cursor` resumes after the caller's stored last_cursor; an
 * explicit null starts from the beginning of the log.  A cursor given out
 * longer ago than the event retention (--retention-days) is 410
 * cursor_expired: retention prunes events past that age (stock.changed
 * among them), so changes made after it was given out may be gone; the
 * wine.* and offer.* events a resync walks are never pruned
 * (engine/retention.c).  The cursor is the base64url of "<event id>@<ms
 * it was given out>".  Every change
 * returned counts against the record quota as a list row does (a page the
 * quota does not cover is the 429 of lists, nothing stored); the route is
 * flagged ROUTE_F_READS so the router charges it and the audit logs it.
 *
 * Known gap (cluster): the feed is the catalogue home's log.  A stock move
 * at a location another shard owns writes its stock.changed there; the
 * home re-stages the offer's qty_available from the replicated level
 * without an event (engine/replication/repl_sub.c), so such a move reaches
 * a pull only with the offer's next change.  A cluster of one (and the
 * home's own countries) carry every stock.changed.
 *
 * STATUS, GET /v1/sync/status: last_cursor (the last pull's next_cursor,
 * durable), pending (changes after it that the caller's next pull with
 * its stored settings would return, counted up to SYNC_PENDING_MAX and
 * SYNC_SCAN_BUDGET events; pending_more says the count stopped there),
 * errors (failed items of the caller's last push), and the times of the
 * last push and pull.
 *
 * Both push and pull append sync.completed (scope: the caller; payload
 * {direction, entity_id, scope (the kinds), then items/succeeded/failed
 * for a push, changes/cursor/has_more for a pull}: spec 2.1's Feed sync
 * fields direction, scope, cursor) in the
 * transaction that stores the caller's feed state (REC_T_SYNC_STATE, one
 * row per entity, never replicated: the sync routes all run on the
 * catalogue home, engine/cluster/route_class.c).
 */
#include "engine/supply/sync.h"

#include <stdio.h>
#include <string.h>

#include "engine/base/iso.h"
#include "engine/base/log.h"
#include "engine/catalogue/partner.h"
#include "engine/catalogue/wine.h"
#include "engine/edge/api.h"
#include "engine/edge/fields.h"
#include "engine/edge/quota.h"
#include "engine/storage/events.h"
#include "engine/supply/offer.h"

/* ---- the feed state row ---------------------------------------------------- */

enum { K_WINE = 1, K_OFFER = 2, K_ALL = K_WINE | K_OFFER };
static const char *const kind_names[] = {"wine", "offer", NULL}; /* bit i = 1 << i */

struct sync_state {
	struct row row;
	char last_cursor[API_MAX_SPAN];       /* "" = none yet */
	char last_pull_at[32], last_push_at[32];
	uint8_t kinds;                        /* K_* bits; 0 = not set (all) */
	uint8_t n_bc, n_bs;
	char bc[SYNC_MAX_BLOCK_COUNTRIES][3];
	char bs[SYNC_MAX_BLOCK_SELLERS][ID_MAX_LEN];
	int64_t push_items, push_failed;
};

/* Copy a string member of a stored document; -1 when it is not one or does not fit. */
static int doc_str(const struct json_value *d, const char *k, char *out, size_t n)
{
	return fld_doc_str(d, k, out, n);
}

static int doc_int(const struct json_value *d, const char *k, int64_t *out)
{
	const struct json_value *v = json_get(d, k);
	*out = 0;
	return v && json_to_int64(v, out) ? -1 : 0;
}

/* A stored string array into fixed slots; -1 on a bad member. */
static int doc_list(const struct json_value *d, const char *k, char *slots, size_t width, unsigned max,
		    uint8_t *n)
{
	const struct json_value *a = json_get(d, k);
	*n = 0;
	if (!a)
		return 0;
	if (a->type != JSON_ARRAY || a->len > max)
		return -1;
	for (uint32_t i = 0; i < a->len; i++) {
		const struct json_value *s = &a->u.items[i];
		if (s->type != JSON_STRING || s->len == 0 || s->len >= width)
			return -1;
		memcpy(slots + (size_t)i * width, s->u.str, (size_t)s->len + 1);
	}
	*n = (uint8_t)a->len;
	return 0;
}

static int state_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct sync_state *s = (struct sync_state *)r;
	const struct json_value *last = json_get(doc, "last_push");
	const struct json_value *kinds = json_get(doc, "kinds");
	if (doc->type != JSON_OBJECT || doc_str(doc, "last_cursor", s->last_cursor, sizeof(s->last_cursor)) ||
	    doc_str(doc, "last_pull_at", s->last_pull_at, sizeof(s->last_pull_at)) ||
	    doc_str(doc, "last_push_at", s->last_push_at, sizeof(s->last_push_at)) ||
	    doc_list(doc, "block_countries", &s->bc[0][0], 3, SYNC_MAX_BLOCK_COUNTRIES, &s->n_bc) ||
	    doc_list(doc, "block_sellers", &s->bs[0][0], ID_MAX_LEN, SYNC_MAX_BLOCK_SELLERS, &s->n_bs) ||
	    (last && (last->type != JSON_OBJECT || doc_int(last, "items", &s->push_items) ||
		      doc_int(last, "failed", &s->push_failed))))
		return -1;
	s->kinds = 0;
	if (kinds) {
		if (kinds->type != JSON_ARRAY)
			return -1;
		for (uint32_t i = 0; i < kinds->len; i++) {
			int k = -1;
			for (int j = 0; kinds->u.items[i].type == JSON_STRING && kind_names[j]; j++)
				if (!strcmp(kind_names[j], kinds->u.items[i].u.str))
					k = j;
			if (k < 0)
				return -1;
			s->kinds |= (uint8_t)(1u << k);
		}
	}
	return 0;
}

const struct table_ops sync_state_table_ops = {
	.rec_table = REC_T_SYNC_STATE,
	.name = "sync_state",
	.row_size = sizeof(struct sync_state),
	.decode = state_decode,
};

/* The caller's state (a copy; zeroed with its id when it has none). */
static void state_load(struct api_ctx *c, struct sync_state *s)
{
	const struct row *r = table_get(&c->sh->tables[REC_T_SYNC_STATE], c->who.entity_id, strlen(c->who.entity_id));
	if (r) {
		memcpy(s, r, sizeof(*s));
	} else {
		memset(s, 0, sizeof(*s));
	}
	memset(&s->row, 0, sizeof(s->row));
}

static void jw_str_or_null(struct jw *w, const char *k, const char *s)
{
	if (s[0])
		jw_var_str(w, k, s);
	else
		jw_var_null(w, k);
}

/* The kinds a state selects (0 = all). */
static unsigned state_kinds(const struct sync_state *s) { return s->kinds ? s->kinds : K_ALL; }

static void write_kinds(struct jw *w, const char *key, unsigned kinds)
{
	jw_key(w, key);
	jw_arr_begin(w);
	for (int j = 0; kind_names[j]; j++)
		if (kinds & (1u << j))
			jw_str(w, kind_names[j]);
	jw_arr_end(w);
}

/* The caller's curation settings as JSON members. */
static void write_settings(struct jw *w, const struct sync_state *s)
{
	write_kinds(w, "kinds", state_kinds(s));
	jw_key(w, "block_countries");
	jw_arr_begin(w);
	for (unsigned i = 0; i < s->n_bc; i++)
		jw_str(w, s->bc[i]);
	jw_arr_end(w);
	jw_key(w, "block_sellers");
	jw_arr_begin(w);
	for (unsigned i = 0; i < s->n_bs; i++)
		jw_str(w, s->bs[i]);
	jw_arr_end(w);
}

/*
 * Add the caller's state and a sync.completed event (payload written by
 * `ev` into the open object) to a transaction of their own and commit.
 * 0, or -1 (nothing stored).
 */
static int state_store(struct api_ctx *c, const struct sync_state *s, const char *direction,
		       void (*ev)(struct jw *w, const void *arg), const void *arg)
{
	struct buf doc, evb;
	buf_init(&doc, REC_MAX_VAL);
	buf_init(&evb, REC_MAX_VAL);
	struct jw w, e;
	jw_init(&w, &doc);
	jw_obj_begin(&w);
	jw_kstr(&w, "id", c->who.entity_id);
	jw_str_or_null(&w, "last_cursor", s->last_cursor);
	jw_str_or_null(&w, "last_pull_at", s->last_pull_at);
	jw_str_or_null(&w, "last_push_at", s->last_push_at);
	write_settings(&w, s);
	jw_key(&w, "last_push");
	jw_obj_begin(&w);
	jw_kint(&w, "items", s->push_items);
	jw_kint(&w, "failed", s->push_failed);
	jw_obj_end(&w);
	jw_obj_end(&w);
	jw_init(&e, &evb);
	jw_obj_begin(&e);
	jw_kstr(&e, "direction", direction);
	jw_kstr(&e, "entity_id", c->who.entity_id);
	ev(&e, arg);
	jw_obj_end(&e);
	const char *id = c->who.entity_id;
	txn_begin(c->sh);
	int bad = w.err || e.err || txn_put(c->sh, REC_T_SYNC_STATE, id, strlen(id), doc.data, doc.len) ||
		  txn_event(c->sh, "sync.completed", c->who.is_platform ? NULL : id, evb.data, evb.len) ||
		  !txn_commit(c->sh);
	if (bad)
		txn_abort(c->sh);
	buf_free(&doc);
	buf_free(&evb);
	return bad ? -1 : 0;
}

/* ---- push ------------------------------------------------------------------ */

static const char *const item_members[] = {"ref", "wine", "offer", "wine_ref", NULL};

/* The refs of the batch: every one seen (unique), and those of the wine
 * items that resolved to a wine (what wine_ref may name). */
struct push_refs {
	unsigned n_used;
	char used[SYNC_PUSH_MAX_ITEMS][SYNC_REF_MAX + 1];
	unsigned n;
	char ref[SYNC_PUSH_MAX_ITEMS][SYNC_REF_MAX + 1];
	char wine[SYNC_PUSH_MAX_ITEMS][ID_MAX_LEN];
};

struct push_totals {
	unsigned items, succeeded, failed;
};

/* One item's failure: its problem as the result's "error". */
static void item_error(struct api_ctx *c, struct jw *w, int status, const char *code, const char *detail)
{
	jw_kint(w, "status", status);
	jw_kstr(w, "outcome", "failed");
	jw_key(w, "error");
	jw_obj_begin(w);
	jw_kstr(w, "code", code);
	jw_kstr(w, "detail", detail);
	jw_key(w, "errors");
	jw_arr_begin(w);
	for (unsigned i = 0; i < c->n_errs; i++) {
		jw_obj_begin(w);
		jw_kstr(w, "field", c->errs[i].field);
		jw_kstr(w, "rule", c->errs[i].rule);
		jw_kstr(w, "message", c->errs[i].message);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

/* The item may be done with this scope and action; else its 403 is written. */
static int item_allowed(struct api_ctx *c, struct jw *w, enum scope sc, enum action a)
{
	if (!c->who.is_platform && !(c->who.scopes & SCOPE_BIT(sc))) {
		char d[120];
		snprintf(d, sizeof(d), "this item needs the scope %s", scope_defs[sc].name);
		item_error(c, w, 403, "insufficient_scope", d);
		return 0;
	}
	if (!policy_allows(a, c->who.is_platform, c->who.roles, c->who.status)) {
		char d[240];
		policy_explain(a, c->who.roles, c->who.status, d, sizeof(d));
		item_error(c, w, 403, "action_not_allowed", d);
		return 0;
	}
	return 1;
}

/* The wine's match as the single create answers it. */
static void write_match(struct jw *w, const struct wine_ingest_result *r)
{
	jw_key(w, "match");
	jw_obj_begin(w);
	jw_kstr(w, "result", wine_result_names[r->match.result]);
	if (r->match.tier)
		jw_kint(w, "tier", r->match.tier);
	else
		jw_knull(w, "tier");
	jw_key(w, "confidence");
	wine_jw_decimal(w, r->match.confidence, WINE_CONF_SCALE);
	jw_obj_end(w);
}

static int push_wine(struct api_ctx *c, struct jw *w, const struct json_value *body, const char *ref,
		     struct push_refs *refs)
{
	jw_kstr(w, "kind", "wine");
	if (!item_allowed(c, w, SC_WRITE_WINES, ACT_WRITE_WINES))
		return 0;
	if (body->type != JSON_OBJECT) {
		api_field_error(c, "wine", "type", "must be an object");
		item_error(c, w, 422, "validation_failed", "one or more fields are invalid; see errors[]");
		return 0;
	}
	struct wine_ingest_result r;
	wine_ingest(c, body, &r);
	if (r.status >= 400) {
		item_error(c, w, r.status, r.code, r.detail);
		return 0;
	}
	jw_kint(w, "status", r.status);
	jw_kstr(w, "outcome", r.status == 201 ? "created" : r.status == 202 ? "pending_review" : "matched");
	if (r.status == 202) {
		jw_knull(w, "id");
		jw_kstr(w, "review_id", r.review_id);
	} else {
		jw_kstr(w, "id", r.wine_id);
		write_match(w, &r);
		if (ref[0] && refs->n < SYNC_PUSH_MAX_ITEMS) {
			snprintf(refs->ref[refs->n], sizeof(refs->ref[0]), "%s", ref);
			snprintf(refs->wine[refs->n], sizeof(refs->wine[0]), "%s", r.wine_id);
			refs->n++;
		}
	}
	return 1;
}

/* The offer body with wine_id set to the wine `wine_ref` resolved to. */
static struct json_doc *with_wine_id(const struct json_value *body, const char *wine_id)
{
	struct buf b;
	buf_init(&b, JSON_DEFAULT_MAX_BYTES);
	struct jw w;
	jw_init(&w, &b);
	jw_obj_begin(&w);
	jw_kstr(&w, "wine_id", wine_id);
	for (uint32_t i = 0; i < body->len; i++) {
		const struct json_member *m = &body->u.members[i];
		jw_keyn(&w, m->key, m->key_len);
		jw_value(&w, &m->value);
	}
	jw_obj_end(&w);
	struct json_doc *d = w.err ? NULL : json_parse(b.data, b.len, NULL, NULL);
	buf_free(&b);
	return d;
}

static int push_offer(struct api_ctx *c, struct jw *w, const struct json_value *body,
		      const struct json_value *wine_ref, const struct push_refs *refs)
{
	jw_kstr(w, "kind", "offer");
	if (!item_allowed(c, w, SC_WRITE_OFFERS, ACT_WRITE_OFFERS))
		return 0;
	if (body->type != JSON_OBJECT)
		api_field_error(c, "offer", "type", "must be an object");
	struct json_doc *joined = NULL;
	if (wine_ref && !c->n_errs) {
		const char *wid = NULL;
		for (unsigned i = 0; wine_ref->type == JSON_STRING && i < refs->n; i++)
			if (!strcmp(refs->ref[i], wine_ref->u.str))
				wid = refs->wine[i];
		if (json_get(body, "wine_id"))
			api_field_error(c, "wine_ref", "exclusive", "give offer.wine_id or wine_ref, not both");
		else if (!wid)
			api_field_error(c, "wine_ref", "unresolved",
					"must be the ref of an earlier wine item of this batch that resolved to a wine");
		else if (!(joined = with_wine_id(body, wid)))
			api_field_error(c, "offer", "too_large", "the offer body is too large");
	}
	if (c->n_errs) {
		item_error(c, w, 422, "validation_failed", "one or more fields are invalid; see errors[]");
		return 0;
	}
	struct offer_put_result r;
	offer_put(c, joined ? json_root(joined) : body, 1, &r);
	json_doc_free(joined);
	if (r.status >= 400) {
		item_error(c, w, r.status, r.code, r.detail);
		return 0;
	}
	jw_kint(w, "status", r.status);
	jw_kstr(w, "outcome", r.status == 201 ? "created" : r.unchanged ? "unchanged" : "updated");
	jw_kstr(w, "id", r.id);
	return 1;
}

/* One item's result object into w; 1 succeeded, 0 failed. */
static int push_item(struct api_ctx *c, struct jw *w, unsigned index, const struct json_value *it,
		     struct push_refs *refs)
{
	c->n_errs = 0;
	jw_obj_begin(w);
	jw_kint(w, "index", index);
	char ref[SYNC_REF_MAX + 1] = "";
	const struct json_value *wine = NULL, *offer = NULL, *wine_ref = NULL;
	if (it->type != JSON_OBJECT) {
		api_field_error(c, "item", "type", "must be an object");
	} else {
		fld_reject_unknown(c, it, item_members, NULL);
		if (fld_str(c, it, "ref", NULL, ref, SYNC_REF_MAX) == FLD_NULL)
			ref[0] = 0;
		wine = json_get(it, "wine");
		offer = json_get(it, "offer");
		wine_ref = json_get(it, "wine_ref");
		if (!wine == !offer)
			api_field_error(c, wine ? "offer" : "wine", "one_of", "an item holds exactly one of wine, offer");
		if (wine_ref && (wine_ref->type != JSON_STRING || !offer))
			api_field_error(c, "wine_ref", wine_ref->type != JSON_STRING ? "type" : "offer_only",
					"is the ref (a string) of a wine item, on an offer item only");
		int seen = 0;
		for (unsigned i = 0; ref[0] && i < refs->n_used; i++)
			seen |= !strcmp(refs->used[i], ref);
		if (seen)
			api_field_error(c, "ref", "unique", "another item of this batch has this ref");
		else if (ref[0] && refs->n_used < SYNC_PUSH_MAX_ITEMS)
			memcpy(refs->used[refs->n_used++], ref, sizeof(ref));
	}
	if (ref[0])
		jw_kstr(w, "ref", ref);
	else
		jw_knull(w, "ref");
	int ok = 0;
	if (c->n_errs) {
		jw_kstr(w, "kind", wine ? "wine" : offer ? "offer" : "unknown");
		item_error(c, w, 422, "validation_failed", "one or more fields are invalid; see errors[]");
	} else if (wine) {
		ok = push_wine(c, w, wine, ref, refs);
	} else {
		ok = push_offer(c, w, offer, wine_ref, refs);
	}
	jw_obj_end(w);
	c->n_errs = 0;
	return ok;
}

static void push_event(struct jw *w, const void *arg)
{
	const struct push_totals *t = arg;
	jw_key(w, "scope");
	jw_arr_begin(w);
	jw_str(w, "wine");
	jw_str(w, "offer");
	jw_arr_end(w);
	jw_kint(w, "items", t->items);
	jw_kint(w, "succeeded", t->succeeded);
	jw_kint(w, "failed", t->failed);
}

static void sync_push(struct api_ctx *c)
{
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	static const char *const members[] = {"items", NULL};
	fld_reject_unknown(c, body, members, NULL);
	const struct json_value *items = json_get(body, "items");
	if (items && items->type == JSON_ARRAY && items->len > SYNC_PUSH_MAX_ITEMS) {
		char d[120];
		snprintf(d, sizeof(d), "a push holds at most %u items; this one holds %u", SYNC_PUSH_MAX_ITEMS,
			 (unsigned)items->len);
		api_error(c, 413, "batch_too_large", d);
		return;
	}
	if (!items)
		api_field_error(c, "items", "required", "is required");
	else if (items->type != JSON_ARRAY || items->len == 0)
		api_field_error(c, "items", "type", "must be an array of 1 to %u items", SYNC_PUSH_MAX_ITEMS);
	if (c->n_errs) {
		api_validation_failed(c);
		return;
	}
	static struct push_refs refs; /* 17 KiB: one request at a time on the loop thread */
	refs.n = refs.n_used = 0;
	struct push_totals t = {items->len, 0, 0};
	struct jw *w = &c->w;
	jw_obj_begin(w);
	jw_key(w, "results");
	jw_arr_begin(w);
	for (uint32_t i = 0; i < items->len; i++) {
		if (push_item(c, w, i, &items->u.items[i], &refs))
			t.succeeded++;
		else
			t.failed++;
	}
	jw_arr_end(w);
	jw_kint(w, "items", t.items);
	jw_kint(w, "succeeded", t.succeeded);
	jw_kint(w, "failed", t.failed);
	jw_obj_end(w);
	struct sync_state s;
	state_load(c, &s);
	fmt_rfc3339_ms(s.last_push_at, wall_ms());
	s.push_items = t.items;
	s.push_failed = t.failed;
	if (state_store(c, &s, "push", push_event, &t)) {
		api_error(c, 413, "record_too_large", "the feed state is too large to store");
		return;
	}
	c->rs->status = 200;
}

/* ---- the change feed ----------------------------------------------------- */

/* Event types that are changes of the feed, and the kind of row they name. */
static const struct {
	const char *type;
	uint8_t kind;
} feed_types[] = {
	{"wine.created", K_WINE},    {"wine.matched", K_WINE},      {"wine.updated", K_WINE},
	{"wine.published", K_WINE},  {"wine.archived", K_WINE},     {"offer.created", K_OFFER},
	{"offer.updated", K_OFFER},  {"offer.withdrawn", K_OFFER},  {"stock.changed", K_OFFER},
};

/* A change the caller may see: its kind and row. */
struct change {
	unsigned kind;
	const struct wine *wine;
	const struct offer *offer;
	const char *id;
	size_t id_len;
};

static int blocked_country(const struct sync_state *s, const char *cc)
{
	for (unsigned i = 0; cc && cc[0] && i < s->n_bc; i++)
		if (!strcmp(s->bc[i], cc))
			return 1;
	return 0;
}

static int blocked_seller(const struct sync_state *s, const char *id)
{
	for (unsigned i = 0; i < s->n_bs; i++)
		if (!strcmp(s->bs[i], id))
			return 1;
	return 0;
}

/* The kinds the caller's key may read. */
static unsigned readable_kinds(const struct api_ctx *c)
{
	if (c->who.is_platform)
		return K_ALL;
	return ((c->who.scopes & SCOPE_BIT(SC_READ_WINES)) ? K_WINE : 0u) |
	       ((c->who.scopes & SCOPE_BIT(SC_READ_OFFERS)) ? K_OFFER : 0u);
}

/*
 * Is event row r a change the caller sees under settings s?  1 with *ch
 * set, else 0.  The read-path filter (the GET predicates) and the
 * curation rules; the row named is looked up now (its current state).
 */
static int change_of(struct api_ctx *c, const struct sync_state *s, unsigned kinds, const struct row *r,
		     struct change *ch)
{
	const char *type = event_type(r);
	unsigned kind = 0;
	for (size_t i = 0; i < sizeof(feed_types) / sizeof(feed_types[0]) && !kind; i++)
		if (!strcmp(feed_types[i].type, type))
			kind = feed_types[i].kind;
	if (!(kind & kinds))
		return 0;
	struct json_doc *d = json_parse(r->doc, r->doc_len, NULL, NULL);
	const struct json_value *p = d ? json_get(json_root(d), "payload") : NULL;
	const struct json_value *id = p ? json_get(p, kind == K_WINE ? "wine_id" : "offer_id") : NULL;
	if (p && (!id || id->type != JSON_STRING))
		id = json_get(p, "id");
	int ok = 0;
	memset(ch, 0, sizeof(*ch));
	ch->kind = kind;
	if (id && id->type == JSON_STRING) {
		if (kind == K_WINE) {
			const struct wine *w = wine_get(c->sh, id->u.str, id->len);
			ok = w && wine_visible(c, w) && !blocked_country(s, w->country);
			ch->wine = w;
			if (w) {
				ch->id = w->row.id;
				ch->id_len = w->row.id_len;
			}
		} else {
			const struct offer *o = offer_get(c->sh, id->u.str, id->len);
			ok = o && offer_visible_to(c, o) && !blocked_seller(s, o->originator_id);
			if (ok && s->n_bc) {
				const struct partner *pa = partner_get(c->sh, o->originator_id, strlen(o->originator_id));
				const struct wine *w = wine_get(c->sh, o->wine_id, strlen(o->wine_id));
				ok = !(pa && blocked_country(s, pa->v.country)) && !(w && blocked_country(s, w->country));
			}
			ch->offer = o;
			if (o) {
				ch->id = o->row.id;
				ch->id_len = o->row.id_len;
			}
		}
	}
	json_doc_free(d);
	return ok;
}

/* The walk of the event log after a cursor (raw event id bytes, or none). */
struct feed_walk {
	struct oidx_iter it;
	int ok;
};

static void walk_start(struct api_ctx *c, struct feed_walk *fw, const uint8_t *after, uint32_t after_len)
{
	const struct oidx *idx = &c->sh->tables[REC_T_EVENT].by_order;
	fw->ok = oidx_seek_ge(idx, after ? after : (const uint8_t *)"", after ? after_len : 0, &fw->it);
	uint32_t kl;
	const void *k;
	if (fw->ok && after && (k = oidx_iter_key(&fw->it, &kl)) && kl == after_len && !memcmp(k, after, kl))
		fw->ok = oidx_next(&fw->it);
}

static int walk_next(struct feed_walk *fw, const struct row **r, const void **key, uint32_t *key_len)
{
	if (!fw->ok)
		return 0;
	/* by_order is keyed by the row's id: the row's copy of it outlives the
	 * walk's step (the caller keeps the last key as the page's cursor) */
	*r = oidx_iter_val(&fw->it);
	*key = (*r)->id;
	*key_len = (*r)->id_len;
	fw->ok = oidx_next(&fw->it);
	return 1;
}

/* A cursor is the base64url of "<event id>@<ms>": the last event a page
 * examined and when the page was made (wall ms; retention, pull_parse).
 * One without "@<ms>" (made before it was added) is read with *issued 0.
 * Decode text into the event id's bytes (out) and *issued: the id's
 * length, or -1 (not ours). */
static int cursor_decode(const char *text, size_t n, uint8_t *out, size_t size, uint64_t *issued)
{
	int k = n ? b64url_decode(text, n, out, size) : -1;
	*issued = 0;
	if (k <= 0)
		return -1;
	const uint8_t *at = memchr(out, '@', (size_t)k);
	if (at) {
		size_t dl = (size_t)k - (size_t)(at - out) - 1;
		uint64_t v = 0;
		if (dl == 0 || dl > 15)
			return -1;
		for (size_t i = 1; i <= dl; i++) {
			if (at[i] < '0' || at[i] > '9')
				return -1;
			v = v * 10 + (uint64_t)(at[i] - '0');
		}
		*issued = v;
		k = (int)(at - out);
	}
	return id_valid((const char *)out, (size_t)k, "evt") ? k : -1;
}

/* The cursor text for the last event examined, key[0..len), made now:
 * into cur (API_MAX_SPAN bytes); "" when it does not fit. */
static void cursor_encode(const void *key, uint32_t len, char cur[API_MAX_SPAN])
{
	uint8_t raw[IDX_MAX_KEY + 24];
	cur[0] = 0;
	if (len > IDX_MAX_KEY)
		return;
	memcpy(raw, key, len);
	int dl = snprintf((char *)raw + len, sizeof(raw) - len, "@%llu", (unsigned long long)wall_ms());
	if (dl <= 0 || b64url_encode(raw, len + (size_t)dl, cur, API_MAX_SPAN) <= 0)
		cur[0] = 0;
}

/* ---- pull -------------------------------------------------------------------- */

/* A string array of the body into fixed slots, each checked by ok(). */
static void body_list(struct api_ctx *c, const struct json_value *b, const char *name, char *slots, size_t width,
		      unsigned max, uint8_t *n, int (*ok)(const char *s, size_t len), const char *what)
{
	const struct json_value *a = json_get(b, name);
	if (a->type != JSON_ARRAY || a->len > max) {
		api_field_error(c, name, "type", "must be an array of at most %u %s", max, what);
		return;
	}
	*n = 0;
	for (uint32_t i = 0; i < a->len; i++) {
		const struct json_value *s = &a->u.items[i];
		if (s->type != JSON_STRING || s->len == 0 || s->len >= width || !ok(s->u.str, s->len)) {
			char f[64];
			snprintf(f, sizeof(f), "%s[%u]", name, (unsigned)i);
			api_field_error(c, f, "format", "must be %s", what);
			continue;
		}
		memcpy(slots + (size_t)(*n) * width, s->u.str, (size_t)s->len + 1);
		(*n)++;
	}
}

static int country_ok(const char *s, size_t n) { return n == 2 && iso_country_valid(s, n); }
static int partner_id_ok(const char *s, size_t n) { return id_valid(s, n, "ptn"); }

struct pull_req {
	uint32_t limit;
	int has_after;                 /* start after `after` (else the beginning) */
	uint8_t after[IDX_MAX_KEY + 1];
	uint32_t after_len;
	char after_text[API_MAX_SPAN];
};

/* The body into q and the settings in s (which hold the stored ones).
 * 0, or -1 with the 400/422 written. */
static int pull_parse(struct api_ctx *c, const struct json_value *b, struct sync_state *s, struct pull_req *q)
{
	static const char *const members[] = {"cursor", "limit", "kinds", "block_countries", "block_sellers", NULL};
	fld_reject_unknown(c, b, members, NULL);
	int64_t lim = SYNC_PULL_DEFAULT;
	fld_int(c, b, "limit", NULL, 1, SYNC_PULL_MAX, &lim);
	q->limit = (uint32_t)lim;
	const struct json_value *k = json_get(b, "kinds");
	if (k) {
		unsigned bits = 0;
		if (k->type != JSON_ARRAY || k->len == 0 || k->len > 2)
			api_field_error(c, "kinds", "type", "must be a non-empty array of wine, offer");
		for (uint32_t i = 0; k->type == JSON_ARRAY && i < k->len; i++) {
			int found = -1;
			for (int j = 0; k->u.items[i].type == JSON_STRING && kind_names[j]; j++)
				if (!strcmp(kind_names[j], k->u.items[i].u.str))
					found = j;
			if (found < 0)
				api_field_error(c, "kinds", "enum", "entries must be wine or offer");
			else
				bits |= 1u << found;
		}
		s->kinds = (uint8_t)bits;
	}
	if (json_get(b, "block_countries"))
		body_list(c, b, "block_countries", &s->bc[0][0], 3, SYNC_MAX_BLOCK_COUNTRIES, &s->n_bc, country_ok,
			  "ISO 3166-1 alpha-2 countries");
	if (json_get(b, "block_sellers"))
		body_list(c, b, "block_sellers", &s->bs[0][0], ID_MAX_LEN, SYNC_MAX_BLOCK_SELLERS, &s->n_bs,
			  partner_id_ok, "partner ids");
	if (c->n_errs) {
		api_validation_failed(c);
		return -1;
	}
	const struct json_value *cur = json_get(b, "cursor");
	const char *text = cur ? (cur->type == JSON_STRING ? cur->u.str : NULL) : s->last_cursor;
	size_t tl = cur ? (cur->type == JSON_STRING ? cur->len : 0) : strlen(s->last_cursor);
	if (cur && cur->type != JSON_STRING && cur->type != JSON_NULL) {
		api_error(c, 400, "invalid_cursor", "cursor is not one this API returned");
		return -1;
	}
	q->has_after = text && tl;
	if (q->has_after) {
		uint64_t issued = 0;
		int n = tl < sizeof(q->after_text) ? cursor_decode(text, tl, q->after, sizeof(q->after) - 1, &issued) : -1;
		if (n < 0) {
			api_error(c, 400, "invalid_cursor", "cursor is not one this API returned");
			return -1;
		}
		q->after_len = (uint32_t)n;
		memcpy(q->after_text, text, tl + 1);
		/* retention prunes events past its age (never wine.* and
		 * offer.*, events.h): every change made after a cursor was given
		 * out is still in the log while the cursor is younger than the
		 * retention; an older one could silently miss stock changes */
		uint64_t keep = event_retention_ms(&c->sh->cfg);
		if (keep && issued && issued + keep < wall_ms()) {
			api_error(c, 410, "cursor_expired",
				  "the cursor was given out longer ago than the event retention (--retention-days): changes after it may "
				  "have been pruned; pull with \"cursor\": null to resync");
			return -1;
		}
	}
	return 0;
}

/* Write one change: {change_id, type, occurred_at, kind, id, data}. */
static void emit_change(struct api_ctx *c, const struct row *ev, const struct change *ch)
{
	struct jw *w = &c->w;
	jw_obj_begin(w);
	jw_key(w, "change_id");
	jw_strn(w, ev->id, ev->id_len);
	jw_kstr(w, "type", event_type(ev));
	struct json_doc *d = json_parse(ev->doc, ev->doc_len, NULL, NULL);
	const struct json_value *at = d ? json_get(json_root(d), "occurred_at") : NULL;
	if (at && at->type == JSON_STRING)
		jw_kstr(w, "occurred_at", at->u.str);
	else
		jw_knull(w, "occurred_at");
	json_doc_free(d);
	jw_kstr(w, "kind", ch->kind == K_WINE ? "wine" : "offer");
	jw_key(w, "id");
	jw_strn(w, ch->id, ch->id_len);
	jw_key(w, "data");
	if (ch->wine)
		wine_emit_doc(c, w, ch->wine, NULL);
	else
		row_doc_write(w, &ch->offer->row);
	jw_obj_end(w);
}

struct pull_done {
	uint32_t changes;
	int more;
	const char *cursor;
	unsigned kinds;
};

static void pull_event(struct jw *w, const void *arg)
{
	const struct pull_done *p = arg;
	write_kinds(w, "scope", p->kinds); /* spec 2.1 Feed sync: direction, scope, cursor */
	jw_kint(w, "changes", p->changes);
	jw_str_or_null(w, "cursor", p->cursor);
	jw_kbool(w, "has_more", p->more);
}

static void sync_pull(struct api_ctx *c)
{
	const struct json_value *b = api_body(c);
	if (!b)
		return;
	struct sync_state s;
	state_load(c, &s);
	struct pull_req q;
	memset(&q, 0, sizeof(q));
	if (pull_parse(c, b, &s, &q))
		return;
	if (q.has_after)
		memcpy(c->span_from, q.after_text, strlen(q.after_text) + 1);
	unsigned kinds = state_kinds(&s) & readable_kinds(c);
	uint32_t quota = auth_quota_left(c);
	struct feed_walk fw;
	walk_start(c, &fw, q.has_after ? q.after : NULL, q.after_len);
	static char seen[SYNC_PULL_MAX][ID_MAX_LEN]; /* rows of this page (the loop runs one request at a time) */
	struct jw *w = &c->w;
	jw_obj_begin(w);
	jw_key(w, "data");
	jw_arr_begin(w);
	uint32_t n = 0, examined = 0;
	int more = 0;
	const void *last = q.has_after ? q.after : NULL, *k;
	uint32_t last_len = q.after_len, kl;
	const struct row *r;
	while (walk_next(&fw, &r, &k, &kl)) {
		if (examined == SYNC_SCAN_BUDGET) {
			more = 1;
			break;
		}
		examined++;
		struct change ch;
		int dup = 0;
		if (change_of(c, &s, kinds, r, &ch))
			for (uint32_t i = 0; i < n && !dup; i++)
				dup = strlen(seen[i]) == ch.id_len && !memcmp(seen[i], ch.id, ch.id_len);
		else
			dup = 1; /* not a change for this caller: step over it */
		if (dup) {
			last = k;
			last_len = kl;
			continue;
		}
		if (n == q.limit) {
			more = 1;
			break;
		}
		if (n == quota) {
			auth_quota_refuse(c);
			return;
		}
		emit_change(c, r, &ch);
		snprintf(seen[n], sizeof(seen[n]), "%.*s", (int)ch.id_len, ch.id);
		n++;
		last = k;
		last_len = kl;
	}
	jw_arr_end(w);
	char cur[API_MAX_SPAN] = "";
	if (last)
		cursor_encode(last, last_len, cur);
	jw_str_or_null(w, "next_cursor", cur);
	jw_kbool(w, "has_more", more);
	jw_obj_end(w);
	auth_quota_charge(c, n);
	c->rows_returned = n;
	memcpy(c->span_to, cur, strlen(cur) + 1);
	memcpy(s.last_cursor, cur, strlen(cur) + 1);
	fmt_rfc3339_ms(s.last_pull_at, wall_ms());
	struct pull_done pd = {n, more, cur, kinds};
	if (state_store(c, &s, "pull", pull_event, &pd)) {
		api_error(c, 413, "record_too_large", "the feed state is too large to store");
		return;
	}
	c->rs->status = 200;
}

/* ---- status ---------------------------------------------------------------------- */

static void sync_status(struct api_ctx *c)
{
	struct sync_state s;
	state_load(c, &s);
	uint8_t after[IDX_MAX_KEY + 1];
	uint64_t issued;
	int al = s.last_cursor[0] ? cursor_decode(s.last_cursor, strlen(s.last_cursor), after, sizeof(after) - 1, &issued)
				  : -1;
	unsigned kinds = state_kinds(&s) & readable_kinds(c);
	struct feed_walk fw;
	walk_start(c, &fw, al > 0 ? after : NULL, al > 0 ? (uint32_t)al : 0);
	uint32_t pending = 0, examined = 0, kl;
	int more = 0;
	const struct row *r;
	const void *k;
	while (walk_next(&fw, &r, &k, &kl)) {
		struct change ch;
		if (examined == SYNC_SCAN_BUDGET || pending == SYNC_PENDING_MAX) {
			more = 1;
			break;
		}
		examined++;
		pending += (uint32_t)change_of(c, &s, kinds, r, &ch);
	}
	struct jw *w = &c->w;
	jw_obj_begin(w);
	jw_kstr(w, "entity_id", c->who.entity_id);
	jw_str_or_null(w, "last_cursor", s.last_cursor);
	jw_kint(w, "pending", pending);
	jw_kbool(w, "pending_more", more);
	jw_kint(w, "errors", s.push_failed);
	jw_str_or_null(w, "last_pull_at", s.last_pull_at);
	jw_str_or_null(w, "last_push_at", s.last_push_at);
	jw_key(w, "last_push");
	jw_obj_begin(w);
	jw_kint(w, "items", s.push_items);
	jw_kint(w, "failed", s.push_failed);
	jw_obj_end(w);
	jw_key(w, "settings");
	jw_obj_begin(w);
	write_settings(w, &s);
	jw_obj_end(w);
	jw_obj_end(w);
	c->rs->status = 200;
}

const struct route sync_routes[] = {
	{HTTP_M_POST, "/v1/sync/push", sync_push, SC_WRITE_SYNC, ACT_PUSH_FEED,
	 "Push a batch of wines and offers (upserts, per-item results)", 0},
	{HTTP_M_POST, "/v1/sync/pull", sync_pull, SC_READ_SYNC, ACT_PULL_FEED,
	 "Pull the catalogue's changes since a cursor (read-path filtered, curated)", ROUTE_F_READS},
	{HTTP_M_GET, "/v1/sync/status", sync_status, SC_READ_SYNC, ACT_READ_FEED,
	 "The caller's feed state: last cursor, pending changes, push errors", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
