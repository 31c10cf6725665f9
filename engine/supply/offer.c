/*
 * offer.c -- offers (spec 2.3) and the read-path filter over them (spec 5).
 *
 * Decisions where the spec is open (also written into api/openapi.json):
 *  - The document carries `offer_id` and `id` (the same value, as every
 *    other resource has `id`).  seller_price is an exact decimal at the
 *    currency's minor unit (json_to_fixed, never a double), stored as int64
 *    minor units, > 0 and <= OFFER_PRICE_MAX_MINOR.  Changing `currency`
 *    needs `seller_price` in the same request (the old amount means nothing
 *    in the new currency).
 *  - incoterm: the eleven Incoterms 2020 (EXW FCA CPT CIP DAP DPU DDP FAS FOB
 *    CFR CIF).  condition default `new`, status default `draft` (a create
 *    may also say `active`), source default `direct`, network_shareable
 *    default FALSE (nothing is shared until the originator says so),
 *    permissions.default `any`.
 *  - Identity: wine_id + originator_id + condition is unique (409
 *    offer_exists naming the holder) and immutable after create.
 *  - Who writes: the policy action can_write_offers (Originator role) plus,
 *    here, the provides_inventory capability (403 capability_missing);
 *    a partner creates for itself only (403 not_own_originator); operators
 *    name any originator that has the role and the capability.  Writes on
 *    an offer the caller does not own are the 404 of an unknown id.
 *  - Status is a table (offer_moves): draft->active, active<->paused,
 *    any->withdrawn; withdrawn is final (any further write: 409).  An
 *    illegal move is 409 invalid_status_transition.
 *
 * THE READ PATH.  A caller sees a row when it owns it (originator) or is
 * the platform, or when the row is active, inside its validity window,
 * network_shareable, and permit_check() allows (offer, caller entity,
 * caller's country, ?destination).  Publishable keys: see channel_admits().
 *
 * NO PAGE SCANS THE TABLE.  Besides the uniqueness hash, four ordered
 * candidate indexes live in t->ext, each key ending with the offer id
 * (tail-keyed, index.h oidx_init_tail: an entry keeps what comes before
 * the id, the row keeps the id):
 *    by_orig     originator\0id   every offer (the owner's view)
 *    open        id               active+shareable, no named sellers, no
 *                                 allowed list, default any
 *    by_named    seller\0id       active+shareable with named_sellers: one
 *                                 entry per named seller
 *    by_country  CC id            active+shareable, no named sellers, with
 *                                 an allowed list: one entry per allowed
 *                                 country (default none and no lists can
 *                                 never be seen by another seller: unindexed)
 * (plus by_wine wine\0id for the platform's ?wine_id=).  Every row a
 * non-owner could be allowed is in at least one of open, by_named[me],
 * by_country[my country] -- this follows the evaluator's order of checks
 * (named sellers gate first, then an allowed list, then default).  A
 * partner's list is a k-way merge in id order of its <= 4 streams (own,
 * open, named, country), equal ids deduplicated, each candidate then judged
 * by the full evaluator, so the cost of a page is proportional to the
 * candidates of THIS caller, not the table.  The cursor is the offer id, so
 * it resumes every stream at once.  What the streams cannot exclude --
 * a blocked seller country, an expired window, non-indexed filters
 * (currency, condition) -- is examined and skipped; OFFER_SCAN_BUDGET caps
 * that work per page: the page then ends early with has_more and a cursor
 * after the last row examined (that cursor may name a hidden offer's id;
 * ids reveal a creation time, nothing of the offer).
 */
#include "engine/supply/offer.h"

#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/edge/auth.h"
#include "engine/edge/fields.h"
#include "engine/base/iso.h"
#include "engine/edge/key.h"
#include "engine/base/log.h"
#include "engine/catalogue/partner.h"
#include "engine/storage/idpool.h"
#include "engine/storage/image.h"
#include "engine/storage/resources.h"
#include "engine/catalogue/wine.h"

const char *const offer_status_names[] = {"draft", "active", "paused", "withdrawn", NULL};
const char *const offer_condition_names[] = {"new", "bin_end", "mixed_vintage", NULL};
const char *const offer_incoterm_names[] = {"EXW", "FCA", "CPT", "CIP", "DAP", "DPU",
					    "DDP", "FAS", "FOB", "CFR", "CIF", NULL};
const char *const offer_source_names[] = {"direct", "feed", "external_match", NULL};
static const char *const default_names[] = {"any", "none", NULL};

/* offer_moves[from][to]: the status table.  Same -> same is not a move. */
static const uint8_t offer_moves[OFFER_N_STATUS][OFFER_N_STATUS] = {
	[OS_DRAFT] = {[OS_ACTIVE] = 1, [OS_WITHDRAWN] = 1},
	[OS_ACTIVE] = {[OS_PAUSED] = 1, [OS_WITHDRAWN] = 1},
	[OS_PAUSED] = {[OS_ACTIVE] = 1, [OS_WITHDRAWN] = 1},
	[OS_WITHDRAWN] = {0},
};
/* Statuses a create may start in. */
static const uint8_t offer_initial[OFFER_N_STATUS] = {[OS_DRAFT] = 1, [OS_ACTIVE] = 1};

static const char *const offer_fields[] = {
	"wine_id", "originator_id", "seller_price", "currency", "qty_available", "condition",
	"incoterm", "min_order_qty", "case_size", "valid_from", "valid_to", "permissions",
	"network_shareable", "status", "source", NULL};
static const char *const readonly_fields[] = {"id", "offer_id", "created_at", "updated_at", NULL};
static const char *const immutable_fields[] = {"wine_id", "originator_id", "condition", NULL};
static const char *const permission_fields[] = {"default", "allowed_countries", "blocked_countries",
						"named_sellers", NULL};

#define TS_MAX 40 /* bytes of an RFC 3339 timestamp we accept */

/* Everything an offer document holds, as values. */
struct offer_vals {
	char id[ID_MAX_LEN];
	char wine_id[ID_MAX_LEN], originator_id[ID_MAX_LEN];
	char currency[4];
	int status, condition, incoterm, source, shareable;
	int64_t price_minor, qty, moq, case_size;
	int64_t from_ms, to_ms;
	const struct json_value *price;   /* the request's number (scaled once the currency is known) */
	struct permit_rules pr;           /* deflt and the lists; network_shareable lives in `shareable` */
	char created_at[32], updated_at[32];
};

/* ---- table ------------------------------------------------------------- */

struct offer_ext {
	struct hidx by_natural;
	struct oidx by_orig, by_wine, open, by_named, by_country;
	void (*count_levels)(struct table *offers, struct offer *o); /* offer_count_levels_with */
};

static struct offer_ext *ext(const struct table *t) { return t->ext; }

/* The row of the offer table (the typed struct alone). */
struct offer_row {
	struct offer o;
};

/* The natural key (wine, originator, condition) is a slice of the row
 * itself (offer.h): the uniqueness index points at it, and a row keeps no
 * copy (it kept an 85-byte one).  The ids in it are pooled addresses,
 * equal exactly when the ids are. */
#define OFFER_NKEY_LEN (2 * sizeof(const char *) + 1)
_Static_assert(offsetof(struct offer, originator_id) == offsetof(struct offer, wine_id) + sizeof(const char *) &&
		       offsetof(struct offer, condition) == offsetof(struct offer, originator_id) + sizeof(const char *),
	       "an offer's natural key is three adjacent fields");

static const char *offer_nkey(const struct offer *o) { return (const char *)&o->wine_id; }

static int offer_init(struct table *t)
{
	struct offer_ext *e = calloc(1, sizeof(*e));
	if (!e)
		return -1;
	hidx_init_in_value(&e->by_natural, offsetof(struct offer_row, o) + offsetof(struct offer, wine_id));
	/* every candidate key ends with the offer's id: its row keeps it */
	oidx_init_tail(&e->by_orig);
	oidx_init_tail(&e->by_wine);
	oidx_init_tail(&e->open);
	oidx_init_tail(&e->by_named);
	oidx_init_tail(&e->by_country);
	t->ext = e;
	return 0;
}

static void offer_fini(struct table *t)
{
	struct offer_ext *e = ext(t);
	hidx_free(&e->by_natural);
	oidx_free(&e->by_orig);
	oidx_free(&e->by_wine);
	oidx_free(&e->open);
	oidx_free(&e->by_named);
	oidx_free(&e->by_country);
	free(e);
	t->ext = NULL;
}

/* key = a (+ NUL when sep) + id; returns its length. */
static uint32_t key_of(uint8_t *out, const char *a, size_t al, int sep, const struct row *r)
{
	memcpy(out, a, al);
	size_t n = al;
	if (sep)
		out[n++] = 0;
	memcpy(out + n, r->id, r->id_len);
	return (uint32_t)(n + r->id_len);
}

/* Is the row a candidate for other sellers at all? */
static int offer_shared(const struct offer *o) { return o->status == OS_ACTIVE && o->shareable; }

/* Apply oidx_set (add) or a delete of the entries that still point at the
 * row (!add) to every candidate-index key of the row. */
static int offer_keys(struct table *t, struct row *r, int add)
{
	struct offer_ext *e = ext(t);
	struct offer *o = (struct offer *)r;
	uint8_t k[IDX_MAX_KEY + 1];
	int rc = 0;
#define KEY(idx, a, al, sep)                                                                                  \
	do {                                                                                                  \
		uint32_t kl_ = key_of(k, (a), (al), (sep), r);                                                \
		if (add)                                                                                      \
			rc |= oidx_set(&e->idx, k, kl_, r) < 0;                                               \
		else if (oidx_get(&e->idx, k, kl_) == r)                                                      \
			oidx_del(&e->idx, k, kl_);                                                            \
	} while (0)
	KEY(by_orig, o->originator_id, strlen(o->originator_id), 1);
	KEY(by_wine, o->wine_id, strlen(o->wine_id), 1);
	if (offer_shared(o)) {
		if (o->n_named) {
			for (unsigned i = 0; i < o->n_named; i++)
				KEY(by_named, offer_named(o)[i], strlen(offer_named(o)[i]), 1);
		} else if (o->n_allowed) {
			for (unsigned i = 0; i < o->n_allowed; i++)
				KEY(by_country, offer_countries(o)[i], 2, 0);
		} else if (o->deflt == PERMIT_DEFAULT_ANY) {
			KEY(open, "", 0, 0);
		}
	}
#undef KEY
	return rc ? -1 : 0;
}

/* index_add_ordered: the offer's entries in the candidate indexes */
static int offer_index_add_ordered(struct table *t, struct row *r) { return offer_keys(t, r, 1); }

static int offer_index_add(struct table *t, struct row *r)
{
	struct offer_row *or = (struct offer_row *)r;
	if (hidx_set(&ext(t)->by_natural, offer_nkey(&or->o), OFFER_NKEY_LEN, r))
		return -1;
	return t->ordered_later ? 0 : offer_keys(t, r, 1);
}

/* index_prefetch: the natural key's slot, offer_index_add's first probe */
static void offer_index_prefetch(const struct table *t, const struct row *r)
{
	hidx_prefetch(&ext(t)->by_natural, offer_nkey(&((const struct offer_row *)r)->o), OFFER_NKEY_LEN);
}

/* index_reserve: by_natural holds one entry per offer (natural keys are unique) */
static int offer_index_reserve(struct table *t, size_t rows) { return hidx_reserve(&ext(t)->by_natural, rows); }

/* (index_add_first) only the entries that still point at r */
static void offer_index_del(struct table *t, struct row *r)
{
	struct offer_row *or = (struct offer_row *)r;
	if (hidx_get(&ext(t)->by_natural, offer_nkey(&or->o), OFFER_NKEY_LEN) == r)
		hidx_del(&ext(t)->by_natural, offer_nkey(&or->o), OFFER_NKEY_LEN);
	offer_keys(t, r, 0);
}

/* index_keys_same: offer_keys files an offer under its originator, its
 * wine and, when shared, its named sellers, allowed countries or the open
 * stream (each key ends with the id, the same in both versions); by_natural
 * under its natural key. */
static int offer_keys_same(const struct row *a, const struct row *b)
{
	const struct offer_row *x = (const struct offer_row *)a, *y = (const struct offer_row *)b;
	const struct offer *p = &x->o, *q = &y->o;
	if (memcmp(offer_nkey(p), offer_nkey(q), OFFER_NKEY_LEN) || offer_shared(p) != offer_shared(q))
		return 0;
	if (!offer_shared(p))
		return 1;
	return p->n_named == q->n_named && p->n_allowed == q->n_allowed && p->deflt == q->deflt &&
	       (!p->n_named || !memcmp(offer_named(p), offer_named(q), (size_t)PERMIT_ID_MAX * p->n_named)) &&
	       (!p->n_allowed || !memcmp(offer_countries(p), offer_countries(q), 3u * p->n_allowed));
}

/* ---- reading values (requests and stored documents) -------------------- */

/* A list member of permissions: countries (cc set) or seller ids. */
static void read_list(struct api_ctx *c, const struct json_value *pv, const char *name, int sellers,
		      struct permit_rules *pr, char (*cc)[3], uint8_t *n)
{
	char path[64] = "";
	if (c) /* the paths only name fields in errors for a request */
		snprintf(path, sizeof(path), "permissions.%s", name);
	const struct json_value *v = json_get(pv, name);
	if (!v)
		return;
	if (v->type == JSON_NULL) {
		*n = 0;
		return;
	}
	unsigned max = sellers ? PERMIT_MAX_SELLERS : PERMIT_MAX_COUNTRIES;
	if (v->type != JSON_ARRAY) {
		if (c)
			api_field_error(c, path, "type", "must be an array");
		return;
	}
	if (v->len > max) {
		if (c)
			api_field_error(c, path, "max_items", "may hold at most %u entries", max);
		return;
	}
	unsigned k = 0;
	for (unsigned i = 0; i < v->len; i++) {
		const struct json_value *x = &v->u.items[i];
		char ip[80];
		ip[0] = 0;
		if (c)
			snprintf(ip, sizeof(ip), "%s[%u]", path, i);
		if (sellers) {
			if (x->type != JSON_STRING || x->len == 0 || x->len >= PERMIT_ID_MAX ||
			    (c && !partner_get(c->sh, x->u.str, x->len))) {
				if (c)
					api_field_error(c, ip, "partner", "must be the id of an existing partner");
				continue;
			}
			int dup = 0;
			for (unsigned j = 0; j < k; j++)
				dup |= !strcmp(pr->named[j], x->u.str);
			if (dup) {
				if (c)
					api_field_error(c, ip, "unique", "is listed twice");
				continue;
			}
			memcpy(pr->named[k++], x->u.str, x->len + 1);
		} else {
			if (x->type != JSON_STRING || !iso_country_valid(x->u.str, x->len)) {
				if (c)
					api_field_error(c, ip, "country", "must be an ISO 3166-1 alpha-2 code");
				continue;
			}
			int dup = 0;
			for (unsigned j = 0; j < k; j++)
				dup |= !memcmp(cc[j], x->u.str, 2);
			if (dup) {
				if (c)
					api_field_error(c, ip, "unique", "is listed twice");
				continue;
			}
			memcpy(cc[k++], x->u.str, 3);
		}
	}
	*n = (uint8_t)k;
}

static void read_permissions(struct api_ctx *c, const struct json_value *o, struct offer_vals *v)
{
	const struct json_value *pv = json_get(o, "permissions");
	if (!pv)
		return;
	if (pv->type == JSON_NULL) { /* back to unrestricted */
		v->pr.deflt = PERMIT_DEFAULT_ANY;
		v->pr.n_allowed = v->pr.n_blocked = v->pr.n_named = 0;
		return;
	}
	if (pv->type != JSON_OBJECT) {
		if (c)
			api_field_error(c, "permissions", "type", "must be an object");
		return;
	}
	if (c)
		fld_reject_unknown(c, pv, permission_fields, "permissions.");
	int d = 0;
	int r = fld_enum(c, pv, "default", "permissions.default", default_names, &d);
	if (r == FLD_SET)
		v->pr.deflt = (uint8_t)d;
	else if (r == FLD_NULL)
		v->pr.deflt = PERMIT_DEFAULT_ANY;
	read_list(c, pv, "allowed_countries", 0, &v->pr, v->pr.allowed, &v->pr.n_allowed);
	read_list(c, pv, "blocked_countries", 0, &v->pr, v->pr.blocked, &v->pr.n_blocked);
	read_list(c, pv, "named_sellers", 1, &v->pr, NULL, &v->pr.n_named);
}

/* An optional timestamp member: ms into *out (INT64_MIN/MAX = absent via `none`). */
static void read_ts(struct api_ctx *c, const struct json_value *o, const char *name, int64_t none, int64_t *out)
{
	char buf[TS_MAX + 1];
	int r = fld_str(c, o, name, NULL, buf, TS_MAX);
	long long ms;
	if (r == FLD_NULL)
		*out = none;
	else if (r == FLD_SET) {
		if (parse_rfc3339_ms(buf, strlen(buf), &ms)) {
			if (c)
				api_field_error(c, name, "timestamp", "must be an RFC 3339 timestamp");
		} else
			*out = ms;
	}
}

/* An optional positive bounded integer; null removes it (0). */
static void read_opt_int(struct api_ctx *c, const struct json_value *o, const char *name, int64_t max, int64_t *out)
{
	int64_t x;
	int r = fld_int(c, o, name, NULL, 1, max, &x);
	if (r == FLD_SET)
		*out = x;
	else if (r == FLD_NULL)
		*out = 0;
}

static void read_enum(struct api_ctx *c, const struct json_value *o, const char *name, const char *const *names,
		      int *out)
{
	int x;
	int r = fld_enum(c, o, name, NULL, names, &x);
	if (r == FLD_SET)
		*out = x;
	else if (r == FLD_NULL && c)
		api_field_error(c, name, "required", "cannot be null");
}

/* Overlay the members of o onto v (merge patch).  seller_price is kept as
 * the JSON number in v->price; price_scale() turns it into minor units. */
static void offer_read(struct api_ctx *c, const struct json_value *o, struct offer_vals *v)
{
	int r = fld_str(c, o, "wine_id", NULL, v->wine_id, ID_MAX_LEN - 1);
	if (r == FLD_NULL && c)
		api_field_error(c, "wine_id", "required", "cannot be null");
	r = fld_str(c, o, "originator_id", NULL, v->originator_id, ID_MAX_LEN - 1);
	if (r == FLD_NULL && c)
		api_field_error(c, "originator_id", "required", "cannot be null");
	r = fld_currency(c, o, "currency", NULL, v->currency);
	if (r == FLD_NULL && c)
		api_field_error(c, "currency", "required", "cannot be null");
	const struct json_value *p = json_get(o, "seller_price");
	if (p) {
		if (p->type != JSON_NUMBER) {
			if (c)
				api_field_error(c, "seller_price", "type", "must be a decimal number");
		} else
			v->price = p;
	}
	int64_t x;
	r = fld_int(c, o, "qty_available", NULL, 0, OFFER_QTY_MAX, &x);
	if (r == FLD_SET)
		v->qty = x;
	else if (r == FLD_NULL && c)
		api_field_error(c, "qty_available", "required", "cannot be null");
	read_enum(c, o, "condition", offer_condition_names, &v->condition);
	read_enum(c, o, "incoterm", offer_incoterm_names, &v->incoterm);
	read_opt_int(c, o, "min_order_qty", OFFER_MOQ_MAX, &v->moq);
	read_opt_int(c, o, "case_size", OFFER_CASE_MAX, &v->case_size);
	read_ts(c, o, "valid_from", INT64_MIN, &v->from_ms);
	read_ts(c, o, "valid_to", INT64_MAX, &v->to_ms);
	read_permissions(c, o, v);
	int b;
	r = fld_bool(c, o, "network_shareable", NULL, &b);
	if (r == FLD_SET)
		v->shareable = b;
	else if (r == FLD_NULL && c)
		api_field_error(c, "network_shareable", "required", "cannot be null");
	read_enum(c, o, "status", offer_status_names, &v->status);
	read_enum(c, o, "source", offer_source_names, &v->source);
}

/* seller_price at the currency's minor unit.  0, or -1 (error recorded). */
static int price_scale(struct api_ctx *c, struct offer_vals *v)
{
	if (!v->price)
		return 0;
	int minor = v->currency[0] ? iso_currency_minor(v->currency, 3) : -1;
	if (minor < 0)
		return -1; /* the currency has its own error */
	int64_t m;
	if (json_to_fixed(v->price, (unsigned)minor, &m)) {
		if (c)
			api_field_error(c, "seller_price", "precision",
					"must be an exact decimal with at most %d fraction digits for %s", minor,
					v->currency);
		return -1;
	}
	if (m <= 0 || m > OFFER_PRICE_MAX_MINOR) {
		if (c)
			api_field_error(c, "seller_price", "range", "must be greater than 0 and at most %lld minor units",
					(long long)OFFER_PRICE_MAX_MINOR);
		return -1;
	}
	v->price_minor = m;
	return 0;
}

/* Every value at its default (zero unless set below), except the
 * entries of the permission lists, which every reader takes only up to
 * their counts (n_allowed, n_blocked, n_named: zero here).  Those ~3 KB
 * (mostly 64 named sellers of 40 bytes) were cleared too: a 3 KB memset
 * for every offer decoded, ~8 % of a recovery's samples at a million
 * offers (perf/bench_scale load). */
static void vals_defaults(struct offer_vals *v)
{
	size_t lists = offsetof(struct offer_vals, pr) + offsetof(struct permit_rules, allowed),
	       after = offsetof(struct offer_vals, pr) + sizeof(v->pr);
	memset(v, 0, lists);
	memset((char *)v + after, 0, sizeof(*v) - after);
	v->status = OS_DRAFT;
	v->condition = OC_NEW;
	v->incoterm = -1;
	v->source = OSRC_DIRECT;
	v->from_ms = INT64_MIN;
	v->to_ms = INT64_MAX;
	v->pr.deflt = PERMIT_DEFAULT_ANY;
}

/* ---- decode ------------------------------------------------------------ */

/* The document's created_at and updated_at members into v (each left as
 * it was when absent, not a string, or too long). */
static void stamps_of(const struct json_value *doc, struct offer_vals *v)
{
	const struct json_value *x = json_get(doc, "created_at");
	if (x && x->type == JSON_STRING && x->len < sizeof(v->created_at))
		memcpy(v->created_at, x->u.str, x->len + 1);
	x = json_get(doc, "updated_at");
	if (x && x->type == JSON_STRING && x->len < sizeof(v->updated_at))
		memcpy(v->updated_at, x->u.str, x->len + 1);
}

static void offer_release(struct table *t, struct row *r)
{
	struct offer *o = (struct offer *)r;
	free(o->lists);
	o->lists = NULL;
	idpool_drop2(&t->ids, o->wine_id, o->originator_id);
	o->wine_id = o->originator_id = NULL;
}

/* qty, moq and case_size within their bounds (what the row's 32-bit
 * fields hold). */
static int offer_qtys_ok(const struct offer_vals *v)
{
	return v->qty >= 0 && v->qty <= OFFER_QTY_MAX && v->moq >= 0 && v->moq <= OFFER_MOQ_MAX && v->case_size >= 0 &&
	       v->case_size <= OFFER_CASE_MAX;
}

/* The row of values v (decode, from_image), its ids from the pool of t.
 * 0, or -1 (a quantity out of bounds; OOM: the ids and lists taken so far
 * are the row's, for release). */
static int offer_fill(struct table *t, struct offer_row *or, const struct offer_vals *v)
{
	struct offer *o = &or->o;
	if (idpool_ref2(&t->ids, v->wine_id, strlen(v->wine_id), v->originator_id, strlen(v->originator_id), &o->wine_id,
			&o->originator_id))
		return -1;
	memcpy(o->currency, v->currency, 4);
	o->status = (uint8_t)v->status;
	o->condition = (uint8_t)v->condition;
	o->incoterm = (uint8_t)v->incoterm;
	o->source = (uint8_t)v->source;
	o->shareable = (uint8_t)v->shareable;
	o->deflt = v->pr.deflt;
	o->price_minor = v->price_minor;
	if (!offer_qtys_ok(v)) /* the bounds the 32-bit fields rely on */
		return -1;
	o->qty = (int32_t)v->qty;
	o->moq = (int32_t)v->moq;
	o->case_size = (int32_t)v->case_size;
	o->windowed = v->from_ms != INT64_MIN || v->to_ms != INT64_MAX;
	o->created_ms = rfc3339_ms_exact(v->created_at);
	o->updated_ms = rfc3339_ms_exact(v->updated_at);
	o->n_allowed = v->pr.n_allowed;
	o->n_blocked = v->pr.n_blocked;
	o->n_named = v->pr.n_named;
	size_t nc = o->n_allowed + o->n_blocked, bytes = offer_lists_bytes(o);
	if (!bytes)
		return 0;
	if (!(o->lists = malloc(bytes)))
		return -1;
	if (o->windowed)
		memcpy(o->lists, &(struct offer_window){v->from_ms, v->to_ms}, sizeof(struct offer_window));
	char *cc = (char *)offer_countries(o);
	memcpy(cc, v->pr.allowed, 3u * o->n_allowed);
	memcpy(cc + 3u * o->n_allowed, v->pr.blocked, 3u * o->n_blocked);
	/* zero-padded (rows compare their lists whole: offer_typed_same,
	 * index_keys_same), whatever follows each id in v */
	char *named = cc + 3 * nc;
	for (unsigned i = 0; i < o->n_named; i++, named += PERMIT_ID_MAX) {
		size_t n = strnlen(v->pr.named[i], PERMIT_ID_MAX - 1);
		memcpy(named, v->pr.named[i], n);
		memset(named + n, 0, PERMIT_ID_MAX - n);
	}
	return 0;
}

static int offer_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	struct offer_vals *v = malloc(sizeof(*v));
	if (!v)
		return -1;
	vals_defaults(v);
	offer_read(NULL, doc, v);
	stamps_of(doc, v);
	int rc = -1;
	if (v->wine_id[0] && v->originator_id[0] && v->incoterm >= 0 && !price_scale(NULL, v) && v->price)
		rc = offer_fill(t, (struct offer_row *)r, v);
	free(v);
	return rc;
}

/* ---- snapshot images (engine/storage/image.h) ---------------------------- */

/* V2 adds created_ms and updated_ms after the numbers (an offer renders
 * its document from its row: table.h render); a V1 image comes with its
 * document, which the row then keeps. */
#define OFFER_IMAGE_V1 1
#define OFFER_IMAGE_V2 2

static int offer_image(const struct row *r, struct buf *out)
{
	const struct offer *o = &((const struct offer_row *)r)->o;
	struct img_w w = {out, 0};
	img_u8(&w, OFFER_IMAGE_V2);
	img_str(&w, o->wine_id);
	img_str(&w, o->originator_id);
	img_put(&w, o->currency, 3);
	const unsigned small[] = {o->status, o->condition, o->incoterm, o->source, o->shareable, o->deflt,
				  o->n_allowed, o->n_blocked, o->n_named};
	for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); i++)
		img_u8(&w, small[i]);
	const int64_t num[] = {o->price_minor,   o->qty,         o->moq,        o->case_size,
			       offer_window(o).from_ms, offer_window(o).to_ms, o->created_ms, o->updated_ms};
	for (size_t i = 0; i < sizeof(num) / sizeof(num[0]); i++)
		img_i64(&w, num[i]);
	for (unsigned i = 0; i < o->n_allowed + o->n_blocked; i++)
		img_put(&w, offer_countries(o)[i], 2);
	for (unsigned i = 0; i < o->n_named; i++)
		img_str(&w, offer_named(o)[i]);
	return w.err ? -1 : 0;
}

/* Are the values what offer_read and price_scale let through? */
static int image_vals_ok(const struct offer_vals *v)
{
	int minor = iso_currency_minor(v->currency, 3);
	return v->wine_id[0] && v->originator_id[0] && minor >= 0 && v->status >= 0 && v->status < OFFER_N_STATUS &&
	       v->condition >= 0 && v->condition < OFFER_N_CONDITION && v->incoterm >= 0 &&
	       v->incoterm < (int)(sizeof(offer_incoterm_names) / sizeof(offer_incoterm_names[0])) - 1 && v->source >= 0 && v->source < OFFER_N_SOURCE &&
	       (v->shareable == 0 || v->shareable == 1) &&
	       (v->pr.deflt == PERMIT_DEFAULT_ANY || v->pr.deflt == PERMIT_DEFAULT_NONE) && v->price_minor > 0 &&
	       v->price_minor <= OFFER_PRICE_MAX_MINOR && offer_qtys_ok(v);
}

static int tail_stamps(const char *doc, size_t len, struct offer_vals *v);
static void stamps_parsed(const char *doc, size_t len, struct offer_vals *v);

/* n country codes (2 bytes each) into cc[]: ISO alpha-2 or bad. */
static void image_countries(struct img_r *rd, char (*cc)[3], unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		img_get_bytes(rd, cc[i], 2);
		cc[i][2] = 0;
		if (!rd->bad && !iso_country_valid(cc[i], 2))
			rd->bad = 1;
	}
}

static int offer_from_image(struct table *t, struct row *r, const uint8_t *img, size_t len)
{
	struct offer_vals *v = malloc(sizeof(*v));
	if (!v)
		return -1;
	vals_defaults(v);
	struct img_r rd = {img, img + len, 0};
	int rc = -1;
	unsigned version = img_get_u8(&rd);
	if (version != OFFER_IMAGE_V1 && version != OFFER_IMAGE_V2)
		goto out;
	img_get_str(&rd, v->wine_id, sizeof(v->wine_id));
	img_get_str(&rd, v->originator_id, sizeof(v->originator_id));
	img_get_bytes(&rd, v->currency, 3);
	v->currency[3] = 0;
	v->status = (int)img_get_u8(&rd);
	v->condition = (int)img_get_u8(&rd);
	v->incoterm = (int)img_get_u8(&rd);
	v->source = (int)img_get_u8(&rd);
	v->shareable = (int)img_get_u8(&rd);
	v->pr.deflt = (uint8_t)img_get_u8(&rd);
	v->pr.n_allowed = (uint8_t)img_get_u8(&rd);
	v->pr.n_blocked = (uint8_t)img_get_u8(&rd);
	v->pr.n_named = (uint8_t)img_get_u8(&rd);
	int64_t *num[] = {&v->price_minor, &v->qty, &v->moq, &v->case_size, &v->from_ms, &v->to_ms};
	for (size_t i = 0; i < sizeof(num) / sizeof(num[0]); i++)
		*num[i] = img_get_i64(&rd);
	int64_t stamps[2] = {RFC3339_NO_MS, RFC3339_NO_MS};
	for (unsigned i = 0; version >= OFFER_IMAGE_V2 && i < 2; i++)
		if (!rfc3339_ms_storable(stamps[i] = img_get_i64(&rd)))
			rd.bad = 1;
	/* a row without its document renders both stamps */
	if (!r->doc && (stamps[0] == RFC3339_NO_MS || stamps[1] == RFC3339_NO_MS))
		rd.bad = 1;
	if (rd.bad || v->pr.n_allowed > PERMIT_MAX_COUNTRIES || v->pr.n_blocked > PERMIT_MAX_COUNTRIES ||
	    v->pr.n_named > PERMIT_MAX_SELLERS || !image_vals_ok(v))
		goto out;
	image_countries(&rd, v->pr.allowed, v->pr.n_allowed);
	image_countries(&rd, v->pr.blocked, v->pr.n_blocked);
	for (unsigned i = 0; i < v->pr.n_named; i++) {
		img_get_str(&rd, v->pr.named[i], sizeof(v->pr.named[i]));
		if (!v->pr.named[i][0])
			rd.bad = 1;
	}
	if (img_done(&rd))
		goto out;
	if (version == OFFER_IMAGE_V1 && r->doc && tail_stamps(r->doc, r->doc_len, v))
		stamps_parsed(r->doc, r->doc_len, v); /* a V1 image's stamps are its document's */
	if (!(rc = offer_fill(t, (struct offer_row *)r, v)) && version >= OFFER_IMAGE_V2) {
		((struct offer_row *)r)->o.created_ms = stamps[0];
		((struct offer_row *)r)->o.updated_ms = stamps[1];
	}
out:
	free(v);
	return rc;
}

/* The typed fast path (table.h).  offer_stage_qty's put is the stored
 * version with only qty_available and updated_at changed, so its typed
 * value is the two of them, and the row is the version being replaced
 * with those: its lists copied, nothing parsed.  (Applied before the old
 * version is unlinked: table.c.) */
struct offer_qty_move {
	int64_t qty, updated_ms;
};

static int offer_decode_typed(struct table *t, struct row *r, const void *typed)
{
	const struct offer_row *cur = hidx_get_untracked(&t->by_id, r->id, r->id_len);
	struct offer_qty_move mv;
	memcpy(&mv, typed, sizeof(mv));
	int64_t qty = mv.qty;
	if (!cur || qty < 0 || qty > OFFER_QTY_MAX || mv.updated_ms < 0 || mv.updated_ms > RFC3339_MS_MAX)
		return -1;
	struct offer_row *nr = (struct offer_row *)r;
	size_t head = sizeof(struct row);
	memcpy((char *)nr + head, (const char *)cur + head, sizeof(*nr) - head);
	struct offer *o = &nr->o;
	o->n_levels_p1 = 0; /* values only: offer_changed carries the count and the level */
	o->one_level = NULL;
	o->lists = NULL;
	/* the ids are cur's pooled copies: one reference more each (what
	 * this row does not hold, its release must not give back) */
	if (idpool_dup(&t->ids, o->wine_id)) {
		o->wine_id = o->originator_id = NULL;
		return -1;
	}
	if (idpool_dup(&t->ids, o->originator_id)) {
		o->originator_id = NULL;
		return -1;
	}
	size_t bytes = offer_lists_bytes(o);
	if (bytes && !(o->lists = malloc(bytes)))
		return -1;
	if (bytes)
		memcpy(o->lists, cur->o.lists, bytes);
	o->qty = qty;
	o->updated_ms = mv.updated_ms;
	return 0;
}

/* Test builds' check of the fast path: the same fields and lists (not
 * n_levels_p1 and one_level before them, which are no values of the
 * offer's). */
static int offer_typed_same(const struct row *a, const struct row *b)
{
	_Static_assert(sizeof(struct offer) <= 120, "an offer row and its id (up to 24 bytes and a NUL) fit a 160-byte malloc chunk");
	const struct offer_row *x = (const struct offer_row *)a, *y = (const struct offer_row *)b;
	size_t from = offsetof(struct offer, currency), lists = offsetof(struct offer, lists);
	_Static_assert(offsetof(struct offer, n_levels_p1) < offsetof(struct offer, currency) &&
			       offsetof(struct offer, one_level) < offsetof(struct offer, currency),
		       "the offer's values follow what it keeps of its levels");
	size_t bytes = offer_lists_bytes(&x->o);
	return !memcmp((const char *)x + from, (const char *)y + from, lists - from) &&
	       (!bytes || !memcmp(x->o.lists, y->o.lists, bytes));
}

static void offer_render(const struct row *r, struct jw *w);

/* changed: a new version of an offer has the levels its predecessor had
 * (levels are filed under the offer's id, which both share): the count
 * and the only level's row.  A new offer's are counted by the inventory
 * (offer_count_levels_with), once it keeps them. */
static void offer_changed(struct table *t, const struct row *old, struct row *r, const struct row *at)
{
	(void)at;
	if (old && r) {
		((struct offer_row *)r)->o.n_levels_p1 = ((const struct offer_row *)old)->o.n_levels_p1;
		((struct offer_row *)r)->o.one_level = ((const struct offer_row *)old)->o.one_level;
	} else if (r && ext(t)->count_levels) {
		ext(t)->count_levels(t, &((struct offer_row *)r)->o);
	}
}

void offer_count_levels_with(struct table *offers, void (*count)(struct table *offers, struct offer *o))
{
	ext(offers)->count_levels = count;
}

const struct table_ops offer_table_ops = {
	.rec_table = REC_T_OFFER,
	.name = "offer",
	.row_size = sizeof(struct offer_row),
	.decode = offer_decode,
	.decode_pure = 1, /* recovery may build its rows off the loop (table.h) */
	.decode_typed = offer_decode_typed,
	.typed_size = sizeof(struct offer_qty_move),
	.typed_same = offer_typed_same,
	.changed = offer_changed,
	.image = offer_image,
	.from_image = offer_from_image,
	.render = offer_render, /* an offer keeps no document (table.h) */
	.release = offer_release,
	.index_add = offer_index_add,
	.index_del = offer_index_del,
	.index_add_ordered = offer_index_add_ordered,
	.index_add_first = 1, /* sets, and deletes only what points at the row */
	.index_keys_same = offer_keys_same,
	.index_prefetch = offer_index_prefetch,
	.index_reserve = offer_index_reserve,
	.init = offer_init,
	.fini = offer_fini,
};

const struct offer *offer_get(struct shard *sh, const char *id, size_t len)
{
	return (const struct offer *)table_get(&sh->tables[REC_T_OFFER], id, len);
}

void offer_rules(const struct offer *o, struct permit_rules *out)
{
	out->deflt = o->deflt;
	out->network_shareable = o->shareable;
	out->n_allowed = o->n_allowed;
	out->n_blocked = o->n_blocked;
	out->n_named = o->n_named;
	if (o->n_allowed)
		memcpy(out->allowed, offer_countries(o), o->n_allowed * sizeof(out->allowed[0]));
	if (o->n_blocked)
		memcpy(out->blocked, offer_countries(o) + o->n_allowed, o->n_blocked * sizeof(out->blocked[0]));
	if (o->n_named)
		memcpy(out->named, offer_named(o), o->n_named * sizeof(out->named[0]));
}

int offer_sellable(const struct offer *o, int64_t now_ms)
{
	if (o->status != OS_ACTIVE)
		return 0;
	struct offer_window w = offer_window(o); /* (no read of lists unless windowed) */
	return now_ms >= w.from_ms && now_ms < w.to_ms;
}

/* ---- the document -------------------------------------------------------- */

/*
 * The document's one writer.  An offer document has a fixed shape, so it
 * is written as literals and values appended to the output (no member by
 * member bookkeeping): writes and reads of an offer that keeps no
 * document (table.h render) both come here, and a list page writes one
 * per row.  What it says, from the writer's values or a stored row:
 */
struct offer_view {
	const char *id, *wine_id, *originator_id, *currency, *created_at, *updated_at;
	int status, condition, incoterm, source, shareable, deflt;
	int64_t price_minor, qty, moq, case_size, from_ms, to_ms;
	const char (*allowed)[3], (*blocked)[3];
	const char (*named)[PERMIT_ID_MAX];
	unsigned n_allowed, n_blocked, n_named;
};

/* A list of strings of `size` bytes each: ["a","b"] */
static int put_list(struct buf *b, const char *first, size_t size, unsigned n)
{
	int bad = buf_putc(b, '[');
	for (unsigned i = 0; i < n && !bad; i++)
		bad = (i && buf_putc(b, ',')) || jb_str(b, first + i * size);
	return bad || buf_putc(b, ']');
}

/* An optional count: N, or null for 0. */
static int put_opt(struct buf *b, int64_t x) { return x ? buf_put_dec(b, x) : JB_LIT(b, "null"); }

/* An optional instant: "RFC 3339", or null for `none`. */
static int put_ts(struct buf *b, int64_t ms, int64_t none)
{
	char t[32];
	if (ms == none)
		return JB_LIT(b, "null");
	fmt_rfc3339_ms(t, (unsigned long long)ms);
	return jb_str(b, t);
}

/* {"default":..,"allowed_countries":[..],"blocked_countries":[..],"named_sellers":[..]} */
static int put_permissions(struct buf *b, const struct offer_view *v)
{
	return JB_LIT(b, "{\"default\":") || jb_str(b, default_names[v->deflt]) || JB_LIT(b, ",\"allowed_countries\":") ||
	       put_list(b, (const char *)v->allowed, 3, v->n_allowed) || JB_LIT(b, ",\"blocked_countries\":") ||
	       put_list(b, (const char *)v->blocked, 3, v->n_blocked) || JB_LIT(b, ",\"named_sellers\":") ||
	       put_list(b, (const char *)v->named, PERMIT_ID_MAX, v->n_named) || buf_putc(b, '}');
}

/* The permissions object of rules pr as one value of w. */
static void jw_permissions(struct jw *w, const struct permit_rules *pr)
{
	const struct offer_view v = {.deflt = pr->deflt, .allowed = (const char (*)[3])pr->allowed,
				     .blocked = (const char (*)[3])pr->blocked,
				     .named = (const char (*)[PERMIT_ID_MAX])pr->named, .n_allowed = pr->n_allowed,
				     .n_blocked = pr->n_blocked, .n_named = pr->n_named};
	struct buf *b = jw_raw_begin(w);
	if (b && put_permissions(b, &v))
		w->err = 1;
}

static int view_write(struct buf *b, const struct offer_view *v)
{
	char price[48];
	size_t pl = jw_fixed_text(v->price_minor, (unsigned)iso_currency_minor(v->currency, 3), price);
	return JB_LIT(b, "{\"id\":") || jb_str(b, v->id) || JB_LIT(b, ",\"offer_id\":") || jb_str(b, v->id) ||
	       JB_LIT(b, ",\"wine_id\":") || jb_str(b, v->wine_id) || JB_LIT(b, ",\"originator_id\":") ||
	       jb_str(b, v->originator_id) || JB_LIT(b, ",\"seller_price\":") || buf_append(b, price, pl) ||
	       JB_LIT(b, ",\"currency\":") || jb_str(b, v->currency) || JB_LIT(b, ",\"qty_available\":") ||
	       buf_put_dec(b, v->qty) || JB_LIT(b, ",\"condition\":") || jb_str(b, offer_condition_names[v->condition]) ||
	       JB_LIT(b, ",\"incoterm\":") || jb_str(b, offer_incoterm_names[v->incoterm]) ||
	       JB_LIT(b, ",\"min_order_qty\":") || put_opt(b, v->moq) || JB_LIT(b, ",\"case_size\":") ||
	       put_opt(b, v->case_size) || JB_LIT(b, ",\"valid_from\":") || put_ts(b, v->from_ms, INT64_MIN) ||
	       JB_LIT(b, ",\"valid_to\":") || put_ts(b, v->to_ms, INT64_MAX) ||
	       JB_LIT(b, ",\"permissions\":") || put_permissions(b, v) || JB_LIT(b, ",\"network_shareable\":") ||
	       (v->shareable ? JB_LIT(b, "true") : JB_LIT(b, "false")) ||
	       JB_LIT(b, ",\"status\":") || jb_str(b, offer_status_names[v->status]) || JB_LIT(b, ",\"source\":") ||
	       jb_str(b, offer_source_names[v->source]) || JB_LIT(b, ",\"created_at\":") || jb_str(b, v->created_at) ||
	       JB_LIT(b, ",\"updated_at\":") || jb_str(b, v->updated_at) || buf_putc(b, '}');
}

/* The view in w as one value. */
static void view_to(struct jw *w, const struct offer_view *v)
{
	struct buf *b = jw_raw_begin(w);
	if (b && view_write(b, v))
		w->err = 1;
}

static void offer_write(struct jw *w, const struct offer_vals *v)
{
	const struct offer_view view = {
		.id = v->id, .wine_id = v->wine_id, .originator_id = v->originator_id, .currency = v->currency,
		.created_at = v->created_at, .updated_at = v->updated_at, .status = v->status,
		.condition = v->condition, .incoterm = v->incoterm, .source = v->source, .shareable = v->shareable,
		.deflt = v->pr.deflt, .price_minor = v->price_minor, .qty = v->qty, .moq = v->moq,
		.case_size = v->case_size, .from_ms = v->from_ms, .to_ms = v->to_ms,
		.allowed = (const char (*)[3])v->pr.allowed, .blocked = (const char (*)[3])v->pr.blocked,
		.named = (const char (*)[PERMIT_ID_MAX])v->pr.named, .n_allowed = v->pr.n_allowed,
		.n_blocked = v->pr.n_blocked, .n_named = v->pr.n_named};
	view_to(w, &view);
}

/* The stored document's created_at and updated_at, read with the JSON
 * parser (the general path). */
static void stamps_parsed(const char *doc, size_t len, struct offer_vals *v)
{
	struct json_doc *d = json_parse(doc, len, NULL, NULL);
	if (!d)
		return;
	stamps_of(json_root(d), v);
	json_doc_free(d);
}

/* The string value of `"key":"` found in doc[from..len), up to its closing
 * quote, into out (size n).  0, or -1 when absent, too long or escaped. */
static int tail_str(const char *doc, size_t from, size_t len, const char *key, char *out, size_t n)
{
	size_t kl = strlen(key);
	const char *k = memmem(doc + from, len - from, key, kl);
	if (!k)
		return -1;
	const char *s = k + kl, *end = doc + len;
	const char *q = memchr(s, '"', (size_t)(end - s));
	if (!q || (size_t)(q - s) >= n || memchr(s, '\\', (size_t)(q - s)))
		return -1;
	memcpy(out, s, (size_t)(q - s));
	out[q - s] = 0;
	return 0;
}

/* The stamps without a parse.  offer_write() ends every document with
 * ,"created_at":"...","updated_at":"..."} and a quote inside a JSON string
 * is always escaped, so the byte pattern "created_at":" can only be a key:
 * in the document's last 96 bytes, the top-level one.  0, or -1 (not in
 * that shape: the caller parses).  Test builds compare with the parse. */
static int tail_stamps(const char *doc, size_t len, struct offer_vals *v)
{
	enum { TAIL = 96 };
	size_t from = len > TAIL ? len - TAIL : 0;
	if (len < 2 || doc[len - 1] != '}')
		return -1;
	if (tail_str(doc, from, len, "\"created_at\":\"", v->created_at, sizeof(v->created_at)))
		return -1;
	return tail_str(doc, from, len, "\"updated_at\":\"", v->updated_at, sizeof(v->updated_at));
}

/* The values of a stored offer (the typed row plus its timestamps). */
static void offer_load(const struct offer *o, struct offer_vals *v)
{
	vals_defaults(v);
	memcpy(v->id, o->row.id, o->row.id_len);
	v->id[o->row.id_len] = 0;
	snprintf(v->wine_id, sizeof(v->wine_id), "%s", o->wine_id);
	snprintf(v->originator_id, sizeof(v->originator_id), "%s", o->originator_id);
	memcpy(v->currency, o->currency, 4);
	v->status = o->status;
	v->condition = o->condition;
	v->incoterm = o->incoterm;
	v->source = o->source;
	v->shareable = o->shareable;
	v->price_minor = o->price_minor;
	v->qty = o->qty;
	v->moq = o->moq;
	v->case_size = o->case_size;
	v->from_ms = offer_window(o).from_ms;
	v->to_ms = offer_window(o).to_ms;
	offer_rules(o, &v->pr);
	/* writers set their own updated_at; an upsert compares it.  A row
	 * without its document holds both stamps (table.h render). */
	if (!o->row.doc) {
		fmt_rfc3339_ms_or_empty(o->created_ms, v->created_at);
		fmt_rfc3339_ms_or_empty(o->updated_ms, v->updated_at);
		return;
	}
	if (tail_stamps(o->row.doc, o->row.doc_len, v)) {
		stamps_parsed(o->row.doc, o->row.doc_len, v);
		return;
	}
#ifdef WM_TESTING
	struct offer_vals chk;
	vals_defaults(&chk);
	stamps_parsed(o->row.doc, o->row.doc_len, &chk);
	if (strcmp(chk.created_at, v->created_at) || strcmp(chk.updated_at, v->updated_at)) {
		log_error("msg=\"offer stamps read from the tail differ from the parsed document\" offer=%s", v->id);
		abort();
	}
#endif
}

/* ---- checks -------------------------------------------------------------- */

/* The offer's document from its row (table.h render): what offer_write
 * wrote for the same values, straight from the row (a row keeps no
 * document only when both its stamps render). */
static void offer_render(const struct row *r, struct jw *w)
{
	const struct offer *o = (const struct offer *)r;
	char id[ID_MAX_LEN], created[32], updated[32];
	memcpy(id, r->id, r->id_len);
	id[r->id_len] = 0;
	fmt_rfc3339_ms_or_empty(o->created_ms, created);
	fmt_rfc3339_ms_or_empty(o->updated_ms, updated);
	const struct offer_view view = {
		.id = id, .wine_id = o->wine_id, .originator_id = o->originator_id, .currency = o->currency,
		.created_at = created, .updated_at = updated, .status = o->status, .condition = o->condition,
		.incoterm = o->incoterm, .source = o->source, .shareable = o->shareable, .deflt = o->deflt,
		.price_minor = o->price_minor, .qty = o->qty, .moq = o->moq, .case_size = o->case_size,
		.from_ms = offer_window(o).from_ms, .to_ms = offer_window(o).to_ms, .allowed = offer_countries(o),
		.blocked = o->n_blocked ? offer_countries(o) + o->n_allowed : NULL, .named = offer_named(o),
		.n_allowed = o->n_allowed, .n_blocked = o->n_blocked, .n_named = o->n_named};
	view_to(w, &view);
}

static int has_cap(const struct partner *p, enum partner_cap cap)
{
	return p && (partner_caps(&p->v) >> cap) & 1;
}

/* Cross-field and reference rules on the merged values. */
static void offer_check(struct api_ctx *c, const struct json_value *b, struct offer_vals *v, int creating)
{
	if (creating) {
		static const char *const required[] = {"wine_id", "seller_price", "currency", "qty_available",
						       "incoterm", NULL};
		for (int i = 0; required[i]; i++)
			if (!json_get(b, required[i]))
				api_field_error(c, required[i], "required", "is required");
		if (!offer_initial[v->status])
			api_field_error(c, "status", "initial", "a new offer starts as draft or active");
		if (v->wine_id[0]) {
			const struct wine *w = wine_get(c->sh, v->wine_id, strlen(v->wine_id));
			if (!w || !wine_visible(c, w))
				api_field_error(c, "wine_id", "exists", "no wine with this id");
			else if (w->status == WS_ARCHIVED)
				api_field_error(c, "wine_id", "not_archived", "an archived wine cannot get offers");
		}
		if (c->who.is_platform) {
			const struct partner *p =
				v->originator_id[0] ? partner_get(c->sh, v->originator_id, strlen(v->originator_id)) : NULL;
			if (!v->originator_id[0])
				api_field_error(c, "originator_id", "required", "operators name the originator");
			else if (!p || !(p->v.roles & ROLE_ORIGINATOR) || !has_cap(p, CAP_PROVIDES_INVENTORY))
				api_field_error(c, "originator_id", "originator",
						"must be a partner with the originator role and provides_inventory");
		}
	}
	if (v->price)
		price_scale(c, v);
	if (v->from_ms != INT64_MIN && v->to_ms != INT64_MAX && v->from_ms >= v->to_ms)
		api_field_error(c, "valid_to", "after_valid_from", "must be later than valid_from");
	for (unsigned i = 0; i < v->pr.n_allowed; i++)
		for (unsigned j = 0; j < v->pr.n_blocked; j++)
			if (!memcmp(v->pr.allowed[i], v->pr.blocked[j], 2))
				api_field_error(c, "permissions.blocked_countries", "conflict",
						"%s is both allowed and blocked", v->pr.blocked[j]);
}

/* Build the offer's document into doc (NUL-free JSON).  0, or -1. */
static int offer_doc(const struct offer_vals *v, struct buf *doc)
{
	struct jw w;
	jw_init(&w, doc);
	offer_write(&w, v);
	return w.err ? -1 : 0;
}

/* Store the offer's row and its event in a transaction of their own.
 * 0, or -1 (too large: nothing stored). */
static int offer_store(struct api_ctx *c, const struct offer_vals *v, const char *event)
{
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	int bad = offer_doc(v, &doc);
	txn_begin(c->sh);
	if (bad || txn_put(c->sh, REC_T_OFFER, v->id, strlen(v->id), doc.data, doc.len) ||
	    txn_event(c->sh, event, v->originator_id, doc.data, doc.len) || !txn_commit(c->sh)) {
		txn_abort(c->sh);
		bad = 1;
	}
	buf_free(&doc);
	return bad ? -1 : 0;
}

/* Commit the offer's row and its event; respond with the document. */
static void offer_commit(struct api_ctx *c, struct offer_vals *v, const char *event, int status)
{
	if (offer_store(c, v, event)) {
		api_error(c, 413, "record_too_large", "the offer record is too large to store");
		return;
	}
	const struct offer *o = offer_get(c->sh, v->id, strlen(v->id));
	if (!o) {
		api_error(c, 500, "internal_error", "the stored offer is missing");
		return;
	}
	api_send_row(c, status, &o->row);
}

/* Inventory drives qty_available (offer.h): the stored offer with only
 * qty_available and updated_at changed, staged in the caller's transaction. */
int offer_stage_qty(struct shard *sh, const struct offer *o, int64_t qty)
{
	if (qty < 0 || qty > OFFER_QTY_MAX)
		return -1;
	struct offer_vals v;
	offer_load(o, &v);
	v.qty = qty;
	struct offer_qty_move mv = {qty, (int64_t)wall_ms()};
	fmt_rfc3339_ms(v.updated_at, (unsigned long long)mv.updated_ms);
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	struct jw w;
	jw_init(&w, &doc);
	offer_write(&w, &v);
	int rc = w.err || txn_put_typed(sh, REC_T_OFFER, v.id, strlen(v.id), doc.data, doc.len, &mv) ? -1 : 0;
	buf_free(&doc);
	return rc;
}

static const struct offer *offer_by_natural(struct shard *sh, const struct offer_vals *v)
{
	struct table *t = &sh->tables[REC_T_OFFER];
	struct offer_ext *e = ext(t);
	struct offer key = {.wine_id = idpool_find(&t->ids, v->wine_id, strlen(v->wine_id)),
			    .originator_id = idpool_find(&t->ids, v->originator_id, strlen(v->originator_id)),
			    .condition = (uint8_t)v->condition};
	/* an id no offer names: no offer has this natural key */
	return key.wine_id && key.originator_id ? hidx_get(&e->by_natural, offer_nkey(&key), OFFER_NKEY_LEN) : NULL;
}

/* ---- the read-path filter ----------------------------------------------- */

/* Who is looking, resolved once per request. */
static void seer_init(struct api_ctx *c, const struct offer_query *q, struct offer_seer *s)
{
	memset(s, 0, sizeof(*s));
	s->q = q;
	s->all = c->who.is_platform;
	s->me = c->who.entity_id;
	const struct partner *p = s->all ? NULL : partner_get(c->sh, s->me, strlen(s->me));
	if (p)
		memcpy(s->country, p->v.country, 3);
	s->now_ms = (int64_t)wall_ms();
}

/*
 * Channel scope (spec 5: "the caller's channel scope admits it"): a
 * publishable storefront key sees an offer only while its channel has a
 * LIVE listing of it (one hash lookup in the listings table); a
 * publishable key without a channel sees none.  Secret keys: no channel
 * scope.
 */
static int channel_admits(const struct api_ctx *c, const struct offer *o)
{
	if (c->who.kind != KEY_PUBLISHABLE)
		return 1;
	return c->who.channel_id[0] && offer_listing_live_on(c->sh, o->row.id, o->row.id_len, c->who.channel_id);
}

/* The permissions' destination rules alone (for owners and the platform,
 * who pass the seller checks by definition). */
static int destination_ok(const struct offer *o, const char *dest)
{
	if (!dest || !dest[0])
		return 1;
	for (unsigned i = 0; i < o->n_blocked; i++)
		if (!memcmp(offer_countries(o)[o->n_allowed + i], dest, 2))
			return 0;
	if (!o->n_allowed)
		return 1;
	for (unsigned i = 0; i < o->n_allowed; i++)
		if (!memcmp(offer_countries(o)[i], dest, 2))
			return 1;
	return 0;
}

/* The caller's verdict on o (for the permissions endpoint too). */
static enum permit_verdict seer_verdict(const struct offer_seer *s, const struct offer *o, const char *seller,
					const char *seller_country, const char *dest)
{
	struct permit_rules pr;
	offer_rules(o, &pr);
	struct permit_query pq = {.originator_id = o->originator_id,
				  .seller_id = seller,
				  .seller_country = seller_country && seller_country[0] ? seller_country : NULL,
				  .destination = dest && dest[0] ? dest : NULL};
	(void)s;
	return permit_check(&pr, &pq);
}

/* May the caller see the row at all? */
static int offer_visible(const struct api_ctx *c, const struct offer_seer *s, const struct offer *o)
{
	if (s->all)
		return 1;
	if (!channel_admits(c, o)) /* a storefront key: its channel's live listings only, own offers too */
		return 0;
	if (!strcmp(o->originator_id, s->me))
		return 1;
	if (!offer_sellable(o, s->now_ms) || !o->shareable)
		return 0;
	const char *dest = s->q ? s->q->destination : NULL;
	return permit_allowed(seer_verdict(s, o, s->me, s->country, dest));
}

/* The list predicate: visible, then the query's filters. */
static int offer_match(struct api_ctx *c, const struct row *r, void *arg)
{
	const struct offer_seer *s = arg;
	const struct offer *o = (const struct offer *)r;
	const struct offer_query *q = s->q;
	if (q->wine_id[0] && strcmp(q->wine_id, o->wine_id))
		return 0;
	if (q->originator_id[0] && strcmp(q->originator_id, o->originator_id))
		return 0;
	if (q->currency[0] && memcmp(q->currency, o->currency, 3))
		return 0;
	if ((q->status >= 0 && q->status != o->status) || (q->condition >= 0 && q->condition != o->condition))
		return 0;
	if (!offer_visible(c, s, o))
		return 0;
	/* an owner's or the platform's rows still answer ?destination= */
	return !(s->all || !strcmp(o->originator_id, s->me)) || destination_ok(o, q->destination);
}

/* ---- the candidate-stream merge ------------------------------------------ */

void offer_merge_init(struct offer_merge *m) { m->n = 0; }

int offer_merge_add(struct offer_merge *m, const struct oidx *idx, const void *prefix, uint32_t prefix_len,
		    const char *after, uint32_t after_len)
{
	if (m->n == OFFER_MAX_STREAMS || prefix_len + after_len > IDX_MAX_KEY)
		return -1;
	struct offer_stream *s = &m->s[m->n++];
	s->prefix = prefix;
	s->prefix_len = prefix_len;
	uint8_t k[IDX_MAX_KEY + 1];
	memcpy(k, prefix, prefix_len);
	if (after_len)
		memcpy(k + prefix_len, after, after_len);
	uint32_t kl = prefix_len + after_len;
	s->ok = oidx_seek_ge(idx, k, kl, &s->it);
	uint32_t gl;
	const void *g;
	if (after_len && s->ok && (g = oidx_iter_key(&s->it, &gl)) && gl == kl && !memcmp(g, k, kl))
		s->ok = oidx_next(&s->it);
	return 0;
}

/* The id under stream s (and whether it is still inside its prefix). */
static int stream_id(struct offer_stream *s, const uint8_t **id, uint32_t *len)
{
	if (!s->ok)
		return 0;
	uint32_t kl;
	const uint8_t *k = oidx_iter_key(&s->it, &kl);
	if (kl <= s->prefix_len || memcmp(k, s->prefix, s->prefix_len)) {
		s->ok = 0;
		return 0;
	}
	*id = k + s->prefix_len;
	*len = kl - s->prefix_len;
	return 1;
}

/* The ordered index's order: bytes, then length. */
static int id_cmp(const uint8_t *a, uint32_t al, const uint8_t *b, uint32_t bl)
{
	int d = memcmp(a, b, al < bl ? al : bl);
	return d ? d : (al > bl) - (al < bl);
}

int offer_merge_next(struct offer_merge *m, const struct row **r, const char **id, uint32_t *id_len)
{
	const uint8_t *best = NULL, *x;
	uint32_t best_len = 0, xl;
	unsigned who = 0;
	for (unsigned i = 0; i < m->n; i++)
		if (stream_id(&m->s[i], &x, &xl) && (!best || id_cmp(x, xl, best, best_len) < 0)) {
			best = x;
			best_len = xl;
			who = i;
		}
	if (!best)
		return 0;
	*r = oidx_iter_val(&m->s[who].it);
	*id = (*r)->id;
	*id_len = (*r)->id_len;
	for (unsigned i = 0; i < m->n; i++)
		if (stream_id(&m->s[i], &x, &xl) && xl == *id_len && !memcmp(x, *id, xl))
			m->s[i].ok = oidx_next(&m->s[i].it);
	return 1;
}

static int merge_source_next(void *self, const struct row **r, const void **key, uint32_t *key_len)
{
	const char *id;
	if (!offer_merge_next(self, r, &id, key_len))
		return 0;
	*key = id;
	return 1;
}

/* ---- list ------------------------------------------------------------------ */

uint32_t offer_list(struct api_ctx *c, const struct offer_query *q, const struct api_page *pg, uint32_t *examined)
{
	struct table *t = &c->sh->tables[REC_T_OFFER];
	struct offer_ext *e = ext(t);
	struct offer_seer s;
	seer_init(c, q, &s);
	const char *after = pg->has_cursor ? (const char *)pg->cursor : NULL;
	uint32_t after_len = pg->has_cursor ? pg->cursor_len : 0;
	/* stream prefixes: originator\0, me\0, country (must outlive the merge) */
	uint8_t p_orig[ID_MAX_LEN + 1], p_me[ID_MAX_LEN + 1], p_wine[ID_MAX_LEN + 1];
	uint32_t l_orig = (uint32_t)strlen(q->originator_id) + 1, l_me = (uint32_t)strlen(s.me) + 1;
	uint32_t l_wine = (uint32_t)strlen(q->wine_id) + 1;
	memcpy(p_orig, q->originator_id, l_orig);
	memcpy(p_me, s.me, l_me);
	memcpy(p_wine, q->wine_id, l_wine);
	struct offer_merge m;
	offer_merge_init(&m);
	if (s.all) {
		if (q->originator_id[0])
			offer_merge_add(&m, &e->by_orig, p_orig, l_orig, after, after_len);
		else if (q->wine_id[0])
			offer_merge_add(&m, &e->by_wine, p_wine, l_wine, after, after_len);
		else
			offer_merge_add(&m, &t->by_order, "", 0, after, after_len);
	} else {
		int mine_only = q->originator_id[0] && !strcmp(q->originator_id, s.me);
		if (!q->originator_id[0] || mine_only)
			offer_merge_add(&m, &e->by_orig, p_me, l_me, after, after_len);
		if (!mine_only) {
			offer_merge_add(&m, &e->open, "", 0, after, after_len);
			offer_merge_add(&m, &e->by_named, p_me, l_me, after, after_len);
			if (s.country[0])
				offer_merge_add(&m, &e->by_country, s.country, 2, after, after_len);
		}
	}
	struct api_source src = {.next = merge_source_next, .self = &m, .budget = OFFER_SCAN_BUDGET};
	uint32_t n = api_list_source(c, &src, pg, offer_match, &s, NULL);
	if (examined)
		*examined = src.examined;
	return n;
}

int offer_visible_to(struct api_ctx *c, const struct offer *o)
{
	struct offer_seer s;
	seer_init(c, NULL, &s);
	return offer_visible(c, &s, o);
}

void offer_seer_init(struct api_ctx *c, struct offer_seer *s) { seer_init(c, NULL, s); }

int offer_seen_by(struct api_ctx *c, const struct offer_seer *s, const struct offer *o)
{
	return offer_visible(c, s, o);
}

/* Start loading what a quote reads of o beside its row: its only
 * inventory level, when known, and its permission lists (blocks of their
 * own; bench_scale's big catalogue, one offer in five has one: 5-line p50
 * 23.6 -> 23.2 us).  o's row must be loaded, or this waits for it. */
static void parts_prefetch(struct shard *sh, const struct offer *o)
{
	if (o->one_level)
		table_row_prefetch_body(&sh->tables[REC_T_INVENTORY], o->one_level);
	if (o->lists)
		__builtin_prefetch(o->lists);
}

/* The by-wine index's prefix of a wine's keys (the id and a NUL) into k;
 * its length, or 0 for an id too long to have offers. */
static uint32_t wine_prefix(uint8_t k[IDX_MAX_KEY + 1], const char *wine_id, size_t wine_len)
{
	if (wine_len + 1 > IDX_MAX_KEY)
		return 0;
	memcpy(k, wine_id, wine_len);
	k[wine_len] = 0;
	return (uint32_t)wine_len + 1;
}

void offer_wines_seek(struct shard *sh, unsigned n, const char *const ids[], const size_t lens[],
		      struct offer_wine_at at[])
{
	assert(n <= OFFER_WINES_SEEK_MAX);
	struct offer_ext *e = ext(&sh->tables[REC_T_OFFER]);
	uint8_t k[OFFER_WINES_SEEK_MAX][IDX_MAX_KEY + 1];
	const void *keys[OFFER_WINES_SEEK_MAX];
	uint32_t kl[OFFER_WINES_SEEK_MAX];
	struct oidx_iter its[OFFER_WINES_SEEK_MAX];
	int ok[OFFER_WINES_SEEK_MAX];
	unsigned m = 0, of[OFFER_WINES_SEEK_MAX]; /* the wines that may have offers */
	for (unsigned i = 0; i < n; i++) {
		at[i].ok = 0;
		if (e && (kl[m] = wine_prefix(k[m], ids[i], lens[i]))) {
			keys[m] = k[m];
			of[m++] = i;
		}
	}
	if (!m)
		return;
	oidx_seek_ge_many(&e->by_wine, m, keys, kl, its, ok);
	for (unsigned j = 0; j < m; j++) {
		struct offer_wine_at *a = &at[of[j]];
		a->it = its[j];
		a->ok = ok[j];
		struct oidx_iter ahead = its[j];
		for (unsigned r = 0, more = ok[j]; more && r < OFFER_ROW_PREFETCH_AHEAD; r++) {
			table_row_prefetch_body(&sh->tables[REC_T_OFFER], oidx_iter_val(&ahead));
			more = oidx_next(&ahead);
		}
	}
}

int offer_wine_any(struct shard *sh, const char *wine_id, size_t wine_len,
		   int (*fn)(const struct offer *o, void *arg), void *arg)
{
	struct offer_wine_at at;
	offer_wines_seek(sh, 1, &wine_id, &wine_len, &at);
	return offer_wine_any_at(sh, wine_id, wine_len, &at, fn, arg);
}

int offer_wine_any_at(struct shard *sh, const char *wine_id, size_t wine_len, const struct offer_wine_at *at,
		      int (*fn)(const struct offer *o, void *arg), void *arg)
{
	uint8_t k[IDX_MAX_KEY + 1];
	uint32_t pl = wine_prefix(k, wine_id, wine_len);
	if (!pl || !at->ok)
		return 0;
	struct oidx_iter it = at->it, ahead, lv;
	int ok = 1, more = 1, lmore = 1;
	ahead = lv = it;
	for (unsigned i = 0; more && i < OFFER_ROW_PREFETCH_AHEAD; i++)
		more = oidx_next(&ahead); /* (offer_wines_seek prefetched these rows) */
	for (unsigned i = 0; lmore && i < OFFER_LEVEL_PREFETCH_AHEAD; i++) {
		parts_prefetch(sh, oidx_iter_val(&lv));
		lmore = oidx_next(&lv);
	}
	for (; ok; ok = oidx_next(&it)) {
		if (!oidx_iter_has_prefix(&it, k, pl))
			break;
		if (more) { /* the row OFFER_ROW_PREFETCH_AHEAD on */
			table_row_prefetch_body(&sh->tables[REC_T_OFFER], oidx_iter_val(&ahead));
			more = oidx_next(&ahead);
		}
		if (lmore) { /* the parts of the offer OFFER_LEVEL_PREFETCH_AHEAD on */
			parts_prefetch(sh, oidx_iter_val(&lv));
			lmore = oidx_next(&lv);
		}
		int r = fn(oidx_iter_val(&it), arg);
		if (r)
			return r;
	}
	return 0;
}

/* ---- handlers ---------------------------------------------------------- */

/* The offer of the path if the caller may see it (write: owns it), else
 * the same 404 as an unknown id. */
static const struct offer *offer_from_path(struct api_ctx *c, int write)
{
	const struct offer *o = c->n_params ? offer_get(c->sh, c->params[0].p, c->params[0].len) : NULL;
	if (o) {
		struct offer_query q;
		memset(&q, 0, sizeof(q));
		q.status = q.condition = -1;
		struct offer_seer s;
		seer_init(c, &q, &s);
		if (write ? api_owns(c, o->originator_id, strlen(o->originator_id)) : offer_visible(c, &s, o))
			return o;
	}
	api_error(c, 404, "not_found", "no offer with this id");
	return NULL;
}

static void reject_members(struct api_ctx *c, const struct json_value *body, const char *const *names,
			   const char *rule, const char *msg)
{
	for (int i = 0; names[i]; i++)
		if (json_get(body, names[i]))
			api_field_error(c, names[i], rule, "%s", msg);
}

static void put_fail(struct offer_put_result *out, int status, const char *code, const char *detail)
{
	out->status = status;
	out->code = code;
	snprintf(out->detail, sizeof(out->detail), "%s", detail);
}

/* The caller may create offers at all (the provides_inventory capability;
 * the role is the route's action).  0, or -1 with the 403 in *out. */
static int offer_cap_ok(struct api_ctx *c, struct offer_put_result *out)
{
	if (c->who.is_platform)
		return 0;
	const struct partner *me = partner_get(c->sh, c->who.entity_id, strlen(c->who.entity_id));
	if (has_cap(me, CAP_PROVIDES_INVENTORY))
		return 0;
	put_fail(out, 403, "capability_missing", "creating offers needs the provides_inventory capability");
	return -1;
}

static void validation_fail(struct offer_put_result *out)
{
	put_fail(out, 422, "validation_failed", "one or more fields are invalid; see errors[]");
}

/* Status move through the table: 1 allowed (or no move), 0 not. */
static int move_ok(int from, int to) { return (from == to && from != OS_WITHDRAWN) || offer_moves[from][to]; }

/* The body's members over v (cur's values), as an update reads them:
 * field errors into c->errs (a new currency needs its seller_price). */
static void offer_read_update(struct api_ctx *c, const struct json_value *body, const struct offer *cur,
			      struct offer_vals *v)
{
	offer_read(c, body, v);
	if (strcmp(v->currency, cur->currency) && !v->price)
		api_field_error(c, "seller_price", "required_with_currency",
				"a new currency needs the seller_price in that currency");
	offer_check(c, body, v, 0);
}

/*
 * The upsert's update: `cur` (the caller's, same identity) takes the
 * body's members as a PATCH would; a body that changes nothing writes
 * nothing (out->unchanged).  Returns out->status.
 */
static int offer_put_update(struct api_ctx *c, const struct json_value *body, const struct offer *cur,
			    struct offer_put_result *out)
{
	memcpy(out->id, cur->row.id, cur->row.id_len);
	out->id[cur->row.id_len] = 0;
	struct offer_vals v;
	offer_load(cur, &v);
	int from = v.status;
	if (from == OS_WITHDRAWN) {
		put_fail(out, 409, "invalid_status_transition", "a withdrawn offer is final");
		return out->status;
	}
	offer_read_update(c, body, cur, &v);
	if (c->n_errs) {
		validation_fail(out);
		return out->status;
	}
	if (!move_ok(from, v.status)) {
		char d[120];
		snprintf(d, sizeof(d), "an offer cannot move from %s to %s", offer_status_names[from],
			 offer_status_names[v.status]);
		put_fail(out, 409, "invalid_status_transition", d);
		return out->status;
	}
	/* the same document at the stored updated_at: nothing to write */
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	struct buf scratch;
	buf_init(&scratch, REC_MAX_VAL);
	size_t cl;
	const char *cd = row_doc(&cur->row, &scratch, &cl);
	int same = cd && !offer_doc(&v, &doc) && doc.len == cl && !memcmp(doc.data, cd, cl);
	buf_free(&doc);
	buf_free(&scratch);
	if (same) {
		out->unchanged = 1;
		out->status = 200;
		return 200;
	}
	fmt_rfc3339_ms(v.updated_at, wall_ms());
	if (offer_store(c, &v, v.status == OS_WITHDRAWN ? "offer.withdrawn" : "offer.updated")) {
		put_fail(out, 413, "record_too_large", "the offer record is too large to store");
		return out->status;
	}
	out->status = 200;
	return 200;
}

int offer_put(struct api_ctx *c, const struct json_value *body, int upsert, struct offer_put_result *out)
{
	memset(out, 0, sizeof(*out));
	if (offer_cap_ok(c, out))
		return out->status;
	struct offer_vals v;
	vals_defaults(&v);
	if (upsert)
		v.source = OSRC_FEED; /* what a feed pushes, unless it says otherwise */
	offer_read(c, body, &v);
	if (!c->who.is_platform) {
		if (v.originator_id[0] && strcmp(v.originator_id, c->who.entity_id)) {
			put_fail(out, 403, "not_own_originator", "a partner creates offers for itself only");
			return out->status;
		}
		snprintf(v.originator_id, sizeof(v.originator_id), "%s", c->who.entity_id);
	}
	fld_reject_unknown(c, body, offer_fields, NULL);
	reject_members(c, body, readonly_fields, "read_only", "is assigned by the service");
	const struct offer *dup = c->n_errs ? NULL : offer_by_natural(c->sh, &v);
	if (dup && upsert && api_owns(c, dup->originator_id, strlen(dup->originator_id)))
		return offer_put_update(c, body, dup, out);
	offer_check(c, body, &v, 1);
	if (c->n_errs) {
		validation_fail(out);
		return out->status;
	}
	if (dup) {
		char d[200];
		snprintf(d, sizeof(d), "offer %.*s already exists for this wine, originator and condition",
			 (int)dup->row.id_len, dup->row.id);
		put_fail(out, 409, "offer_exists", d);
		return out->status;
	}
	id_new(&c->sh->ids, "ofr", v.id);
	fmt_rfc3339_ms(v.created_at, wall_ms());
	memcpy(v.updated_at, v.created_at, sizeof(v.created_at));
	if (offer_store(c, &v, "offer.created")) {
		put_fail(out, 413, "record_too_large", "the offer record is too large to store");
		return out->status;
	}
	snprintf(out->id, sizeof(out->id), "%s", v.id);
	out->status = 201;
	return 201;
}

static void offers_create(struct api_ctx *c)
{
	struct offer_put_result r;
	memset(&r, 0, sizeof(r));
	if (offer_cap_ok(c, &r)) {
		api_error(c, r.status, r.code, r.detail);
		return;
	}
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	offer_put(c, body, 0, &r);
	if (r.status == 422 && c->n_errs) {
		api_validation_failed(c);
		return;
	}
	if (r.status >= 400) {
		api_error(c, r.status, r.code, r.detail);
		return;
	}
	const struct offer *o = offer_get(c->sh, r.id, strlen(r.id));
	if (o)
		api_send_row(c, r.status, &o->row);
	else
		api_error(c, 500, "internal_error", "the stored offer is missing");
}

static void offers_get(struct api_ctx *c)
{
	const struct offer *o = offer_from_path(c, 0);
	if (o)
		api_send_row(c, 200, &o->row);
}

/* Move cur to status `to` through the table; 0, or -1 with the 409 written. */
static int status_move(struct api_ctx *c, int from, int to)
{
	if (from == to && from != OS_WITHDRAWN)
		return 0;
	if (offer_moves[from][to])
		return 0;
	char d[120];
	snprintf(d, sizeof(d), "an offer cannot move from %s to %s", offer_status_names[from], offer_status_names[to]);
	api_error(c, 409, "invalid_status_transition", d);
	return -1;
}

static void offers_patch(struct api_ctx *c)
{
	const struct offer *cur = offer_from_path(c, 1);
	if (!cur)
		return;
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	struct offer_vals v;
	offer_load(cur, &v);
	int from = v.status;
	if (from == OS_WITHDRAWN) {
		api_error(c, 409, "invalid_status_transition", "a withdrawn offer is final");
		return;
	}
	fld_reject_unknown(c, body, offer_fields, NULL);
	reject_members(c, body, readonly_fields, "read_only", "cannot be changed");
	reject_members(c, body, immutable_fields, "immutable",
		       "is the offer's identity; withdraw it and create another");
	offer_read_update(c, body, cur, &v);
	if (c->n_errs) {
		api_validation_failed(c);
		return;
	}
	if (status_move(c, from, v.status))
		return;
	fmt_rfc3339_ms(v.updated_at, wall_ms());
	offer_commit(c, &v, v.status == OS_WITHDRAWN ? "offer.withdrawn" : "offer.updated", 200);
}

static void offers_withdraw(struct api_ctx *c)
{
	const struct offer *cur = offer_from_path(c, 1);
	if (!cur || status_move(c, cur->status, OS_WITHDRAWN))
		return;
	struct offer_vals v;
	offer_load(cur, &v);
	v.status = OS_WITHDRAWN;
	fmt_rfc3339_ms(v.updated_at, wall_ms());
	offer_commit(c, &v, "offer.withdrawn", 200);
}

/* ?destination= as a country ("" if absent); -1 with a 400 written. */
static int query_country(struct api_ctx *c, const char *name, char out[3])
{
	char b[8];
	int n = api_query(c, name, b, sizeof(b));
	out[0] = 0;
	if (n == -1)
		return 0;
	if (n < 0 || !iso_country_valid(b, (size_t)n)) {
		char d[100];
		snprintf(d, sizeof(d), "%s must be an ISO 3166-1 alpha-2 code", name);
		api_error(c, 400, "invalid_filter", d);
		return -1;
	}
	memcpy(out, b, 3);
	return 0;
}

static void offers_permissions(struct api_ctx *c)
{
	const struct offer *o = offer_from_path(c, 0);
	if (!o)
		return;
	struct offer_query q;
	memset(&q, 0, sizeof(q));
	q.status = q.condition = -1;
	if (query_country(c, "destination", q.destination))
		return;
	struct offer_seer s;
	seer_init(c, &q, &s);
	/* The owner and the platform may ask about any seller (?seller_id=). */
	char seller[ID_MAX_LEN];
	const char *who = s.me, *country = s.country;
	int n = api_query(c, "seller_id", seller, sizeof(seller));
	const struct partner *sp = NULL;
	if (n >= 0 && api_owns(c, o->originator_id, strlen(o->originator_id))) {
		sp = partner_get(c->sh, seller, (size_t)n);
		if (!sp) {
			api_error(c, 400, "invalid_filter", "seller_id must name an existing partner");
			return;
		}
		who = seller;
		country = sp->v.country;
	} else if (n == -2 || (n >= 0 && !api_owns(c, o->originator_id, strlen(o->originator_id)))) {
		api_error(c, 400, "invalid_filter", "seller_id is for the offer's originator and operators");
		return;
	}
	if (api_read_row(c))
		return;
	enum permit_verdict vd = seer_verdict(&s, o, who, country, q.destination);
	struct permit_rules pr;
	offer_rules(o, &pr);
	struct jw *w = &c->w;
	jw_obj_begin(w);
	jw_kstr(w, "offer_id", o->row.id);
	jw_key(w, "permissions");
	jw_permissions(w, &pr);
	jw_kbool(w, "network_shareable", o->shareable);
	jw_kbool(w, "sellable", offer_sellable(o, s.now_ms));
	jw_key(w, "verdict");
	jw_obj_begin(w);
	jw_kstr(w, "seller_id", who);
	if (q.destination[0])
		jw_kstr(w, "destination", q.destination);
	else
		jw_knull(w, "destination");
	jw_kbool(w, "allowed", permit_allowed(vd));
	jw_kstr(w, "code", permit_code(vd));
	jw_kstr(w, "reason", permit_reason(vd));
	jw_obj_end(w);
	jw_obj_end(w);
	c->rs->status = 200;
}

static void offers_list(struct api_ctx *c)
{
	struct api_page pg;
	if (api_page_parse(c, &pg))
		return;
	if (pg.has_cursor && !id_valid((const char *)pg.cursor, pg.cursor_len, "ofr")) {
		api_error(c, 400, "invalid_cursor", "cursor does not belong to this list");
		return;
	}
	struct offer_query q;
	memset(&q, 0, sizeof(q));
	q.status = q.condition = -1;
	static const struct {
		const char *name;
		size_t off;
	} ids[] = {{"wine_id", offsetof(struct offer_query, wine_id)},
		   {"originator_id", offsetof(struct offer_query, originator_id)}};
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		int n = api_query(c, ids[i].name, (char *)&q + ids[i].off, ID_MAX_LEN);
		if (n == 0 || n == -2) {
			char d[80];
			snprintf(d, sizeof(d), "%s must be an id", ids[i].name);
			api_error(c, 400, "invalid_filter", d);
			return;
		}
	}
	static const struct {
		const char *name;
		const char *const *values;
		size_t off;
	} enums[] = {{"status", offer_status_names, offsetof(struct offer_query, status)},
		     {"condition", offer_condition_names, offsetof(struct offer_query, condition)}};
	for (size_t i = 0; i < sizeof(enums) / sizeof(enums[0]); i++) {
		char b[32];
		int n = api_query(c, enums[i].name, b, sizeof(b));
		if (n == -1)
			continue;
		int found = -1;
		for (int k = 0; n >= 0 && enums[i].values[k]; k++)
			if (!strcmp(enums[i].values[k], b))
				found = k;
		if (found < 0) {
			char d[80];
			snprintf(d, sizeof(d), "%s is not one of its values", enums[i].name);
			api_error(c, 400, "invalid_filter", d);
			return;
		}
		memcpy((char *)&q + enums[i].off, &found, sizeof(int));
	}
	char cur[8];
	int n = api_query(c, "currency", cur, sizeof(cur));
	if (n != -1) {
		if (n != 3 || iso_currency_minor(cur, 3) < 0) {
			api_error(c, 400, "invalid_filter", "currency must be an ISO 4217 code");
			return;
		}
		memcpy(q.currency, cur, 4);
	}
	if (query_country(c, "destination", q.destination))
		return;
	offer_list(c, &q, &pg, NULL);
}

const struct route offer_routes[] = {
	{HTTP_M_GET, "/v1/offers", offers_list, SC_READ_OFFERS, ACT_READ_OFFERS,
	 "List the offers the caller may see", 0},
	{HTTP_M_POST, "/v1/offers", offers_create, SC_WRITE_OFFERS, ACT_WRITE_OFFERS, "Create an offer", 0},
	{HTTP_M_GET, "/v1/offers/{id}", offers_get, SC_READ_OFFERS, ACT_READ_OFFERS, "Retrieve an offer", 0},
	{HTTP_M_PATCH, "/v1/offers/{id}", offers_patch, SC_WRITE_OFFERS, ACT_WRITE_OFFERS,
	 "Update an offer (merge patch)", 0},
	{HTTP_M_POST, "/v1/offers/{id}/withdraw", offers_withdraw, SC_WRITE_OFFERS, ACT_WRITE_OFFERS,
	 "Withdraw an offer (final)", 0},
	{HTTP_M_GET, "/v1/offers/{id}/permissions", offers_permissions, SC_READ_OFFERS, ACT_READ_OFFERS,
	 "Selling permissions of an offer and the caller's verdict", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
