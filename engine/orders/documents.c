/*
 * documents.c -- an order's trade documents (spec 2.8; issue 17; contract
 * in documents.h): the six kinds as PDF files, numbered, rendered off the
 * event loop, stored content-addressed, served to the parties each is for.
 *
 * One row per document, id "<order id>.D<k>", k the 1-based place in
 * doc_order_documents()'s fixed order (consumer invoice, transport
 * document, then per leg: label, fulfiller instruction, originator
 * proforma, originator final invoice).  The row is the durable truth:
 *   pending    numbered, not yet rendered (or rendered and not yet noted)
 *   generated  the file is in the store; sha256, bytes, pages
 *   failed     the order's figures did not make a valid document (the
 *              mapper's reason in `error`; a bug to look at, never retried)
 *
 * When (issue 17 item 5): the set of an order is created once it rests at
 * `reserved` or later (the invoice is true at `confirmed`, the transport
 * document and labels at `reserved`; placement happens in one request, so
 * one moment serves both), by documents_poll walking the orders behind a
 * cursor -- off the request path, so an order costs nothing more; the
 * originator's final invoice of a leg at that leg's delivery, in the
 * delivery's own transaction (documents_stage_delivered).
 *
 * Numbers (item 2): a durable, gap-free sequence per issuer and series
 * ("<series>.<issuer>" rows).  A number is taken in the same transaction
 * that writes its document's row, and rows are never deleted, so every
 * number of a series names exactly one document.  Series are per kind,
 * destination and year ("CI-DE-2026"): the destination's shard owns every
 * order of the destination, so one shard owns each series in a cluster.
 * The platform issues all but the originator's final invoice, which its
 * originator issues (its own series).
 *
 * Rendering (item 4): the model is built on the loop from the order's
 * document (doc_order_model: a pure function, reconciliation included) and
 * handed to the render thread (doc_worker), which writes the file to the
 * store (temp + fsync + rename); its completion comes back through an
 * eventfd and the row becomes `generated` in one transaction, with
 * `document.generated` when the order has no document left pending.
 * Everything a render reads is in the row or the order (the issue date is
 * stored with the number), so a render after a crash makes the same bytes:
 * a restart re-renders only rows still pending, and identical bytes land
 * on the same name.  A store error leaves the row pending (retried); a
 * model the mapper refuses marks it failed.
 *
 * Who sees what (item 6): the consumer invoice and the transport document
 * the seller; the transport document also every fulfiller of the order
 * (it travels in the parcel); a label and a fulfiller instruction the
 * leg's fulfiller (the carrier side); a proforma and a final invoice the
 * leg's originator; the order's consumer (its consumer token) its
 * invoice; the platform everything.  A document the caller may not see
 * answers as one that does not exist (404).
 */
#include "engine/orders/documents.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/iso.h"
#include "engine/base/log.h"
#include "engine/catalogue/partner.h"
#include "engine/catalogue/producer.h"
#include "engine/catalogue/wine.h"
#include "engine/cluster/shard_map.h"
#include "engine/documents/doc_order.h"
#include "engine/documents/doc_worker.h"
#include "engine/documents/docstore.h"
#include "engine/edge/api.h"
#include "engine/edge/fields.h"
#include "engine/edge/key.h"
#include "engine/orders/order.h"
#include "engine/orders/tracking.h"
#include "engine/stock/location.h"
#include "engine/storage/record.h"
#include "wal/wal.h"

#define DOC_ROW_ID_MAX (ID_MAX_LEN + 8)
#define DOC_SERIES_MAX 24
#define DOCS_GS1_PREFIX "0614141" /* GS1's own example company prefix (demo); production sets its licensed one */
#define DOCS_RETRY_MS 5000u       /* a store error: the render is tried again after this */

enum doc_status { DS_PENDING, DS_GENERATED, DS_FAILED, DOC_N_STATUS };
static const char *const doc_status_names[] = {"pending", "generated", "failed", NULL};
/* Series prefixes per kind (enum doc_kind order). */
static const char *const series_prefix[DOC_KIND_COUNT] = {"CI", "TD", "LB", "PF", "OI", "FI"};

struct document {
	struct row row;
	char order_id[ID_MAX_LEN];
	uint8_t kind, status, leg;
	char sha256[DOCSTORE_SHA_HEX + 1];
};

/* ---- the tables --------------------------------------------------------------------------- */

static int doc_index_add(struct table *t, struct row *r)
{
	return ((struct document *)r)->status == DS_PENDING && oidx_set(table_oidx_ext(t), r->id, r->id_len, r) ? -1
														: 0;
}

static void doc_index_del(struct table *t, struct row *r)
{
	if (oidx_get(table_oidx_ext(t), r->id, r->id_len) == r)
		oidx_del(table_oidx_ext(t), r->id, r->id_len);
}

static int doc_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct document *d = (struct document *)r;
	int kind = -1, status = -1;
	int64_t leg = 0;
	const struct json_value *lg = json_get(doc, "leg");
	char type[32];
	if (!fld_doc_str(doc, "type", type, sizeof(type)))
		for (int k = 0; k < DOC_KIND_COUNT; k++) /* doc_kind_names has no NULL end: not fld_enum's */
			if (!strcmp(doc_kind_names[k], type))
				kind = k;
	if (fld_doc_str(doc, "order_id", d->order_id, sizeof(d->order_id)) || !d->order_id[0] || kind < 0 ||
	    fld_enum(NULL, doc, "status", NULL, doc_status_names, &status) != FLD_SET || !lg ||
	    json_to_int64(lg, &leg) || leg < 0 || leg >= DOC_LEGS_MAX)
		return -1;
	d->kind = (uint8_t)kind;
	d->status = (uint8_t)status;
	d->leg = (uint8_t)leg;
	d->sha256[0] = 0;
	const struct json_value *sha = json_get(doc, "sha256");
	if (status == DS_GENERATED &&
	    (!sha || sha->type != JSON_STRING || sha->len != DOCSTORE_SHA_HEX ||
	     fld_doc_str(doc, "sha256", d->sha256, sizeof(d->sha256))))
		return -1;
	return 0;
}

static const char *const doc_keys[] = {"order_id", "type", "status", "leg", "sha256", NULL};

const struct table_ops document_table_ops = {
	.rec_table = REC_T_DOCUMENT,
	.name = "document",
	.row_size = sizeof(struct document),
	.decode = doc_decode,
	.decode_keys = doc_keys,
	.index_add = doc_index_add,
	.index_del = doc_index_del,
	.index_add_first = 1,
	.init = table_oidx_ext_init,
	.fini = table_oidx_ext_fini,
};

struct doc_seq {
	struct row row;
	uint64_t last;
};

static int seq_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	int64_t n;
	const struct json_value *v = json_get(doc, "last");
	if (!v || json_to_int64(v, &n) || n < 1)
		return -1;
	((struct doc_seq *)r)->last = (uint64_t)n;
	return 0;
}

static const char *const seq_keys[] = {"last", NULL};

const struct table_ops doc_seq_table_ops = {
	.rec_table = REC_T_DOC_SEQ,
	.name = "document_sequence",
	.row_size = sizeof(struct doc_seq),
	.decode = seq_decode,
	.decode_keys = seq_keys,
};

static const struct document *doc_get(struct shard *sh, const char *id)
{
	return (const struct document *)table_get(&sh->tables[REC_T_DOCUMENT], id, strlen(id));
}

/* ---- which documents, who issues them, their numbers ---------------------------------------- */

/* The k-th document (0-based) of an order: its kind and leg. */
static void doc_slot(unsigned k, enum doc_kind *kind, unsigned *leg)
{
	static const enum doc_kind per_leg[4] = {DOC_CARRIER_LABEL, DOC_FULFILLER_INSTRUCTION, DOC_ORIGINATOR_PROFORMA,
						 DOC_ORIGINATOR_INVOICE};
	*leg = k < 2 ? 0 : (k - 2) / 4;
	*kind = k == 0 ? DOC_CONSUMER_INVOICE : k == 1 ? DOC_TRANSPORT_DOCUMENT : per_leg[(k - 2) % 4];
}

static unsigned doc_count(const struct order *o) { return 2 + 4u * o->n_legs; }

/* Who issues document `kind` of leg g: the platform, or the leg's originator. */
static const char *issuer_of(const struct order *o, enum doc_kind kind, unsigned g)
{
	return kind == DOC_ORIGINATOR_INVOICE ? o->legs[g].originator_id : KEY_PLATFORM_ENTITY;
}

/* Who receives it: the partner (NULL: the consumer, customs, the carrier) and the role. */
static const char *recipient_of(const struct order *o, enum doc_kind kind, unsigned g, const char **role)
{
	switch (kind) {
	case DOC_CONSUMER_INVOICE:
		*role = "consumer";
		return NULL;
	case DOC_TRANSPORT_DOCUMENT:
		*role = "customs_and_carrier";
		return NULL;
	case DOC_CARRIER_LABEL:
		*role = "carrier";
		return o->legs[g].fulfiller_id;
	case DOC_FULFILLER_INSTRUCTION:
		*role = "fulfiller";
		return o->legs[g].fulfiller_id;
	case DOC_ORIGINATOR_PROFORMA:
		*role = "originator";
		return o->legs[g].originator_id;
	default:
		*role = "platform";
		return KEY_PLATFORM_ENTITY;
	}
}

/* The language of a document: the destination's for what reaches the
 * consumer, customs and the carrier's label; the partner's country's for
 * the rest (the fulfiller's instruction, the originator's proforma and its
 * own final invoice); English where i18n has no table for it. */
static const char *lang_of(struct shard *sh, const struct order *o, enum doc_kind kind, unsigned g)
{
	const char *role;
	const char *to = recipient_of(o, kind, g, &role);
	if (kind == DOC_CARRIER_LABEL)
		to = NULL; /* read where the parcel goes */
	else if (kind == DOC_ORIGINATOR_INVOICE)
		to = o->legs[g].originator_id; /* the originator writes it, in its language */
	const struct partner *p = to && strcmp(to, KEY_PLATFORM_ENTITY) ? partner_get(sh, to, strlen(to)) : NULL;
	return doc_order_lang(p ? p->v.country : o->dest);
}

/* Numbers taken in one transaction: the last number of each series used. */
struct seq_take {
	unsigned n;
	struct {
		char id[DOC_SERIES_MAX + ID_MAX_LEN + 2];
		uint64_t last;
	} s[8];
};

/* The next number of series (issuer's), counted in t; 0 when t is full. */
static uint64_t seq_next(struct shard *sh, struct seq_take *t, const char *series, const char *issuer)
{
	char id[sizeof(t->s[0].id)];
	snprintf(id, sizeof(id), "%s.%s", series, issuer);
	for (unsigned i = 0; i < t->n; i++)
		if (!strcmp(t->s[i].id, id))
			return ++t->s[i].last;
	if (t->n == sizeof(t->s) / sizeof(t->s[0]))
		return 0;
	const struct doc_seq *q = (const struct doc_seq *)table_get(&sh->tables[REC_T_DOC_SEQ], id, strlen(id));
	snprintf(t->s[t->n].id, sizeof(t->s[t->n].id), "%s", id);
	t->s[t->n].last = (q ? q->last : 0) + 1;
	return t->s[t->n++].last;
}

/* Stage the sequences t moved.  0 or -1. */
static int seq_stage(struct shard *sh, const struct seq_take *t)
{
	for (unsigned i = 0; i < t->n; i++) {
		char doc[96];
		int n = snprintf(doc, sizeof(doc), "{\"last\":%llu}", (unsigned long long)t->s[i].last);
		if (txn_put(sh, REC_T_DOC_SEQ, t->s[i].id, strlen(t->s[i].id), doc, (size_t)n))
			return -1;
	}
	return 0;
}

/* A party's {partner_id, name} (id NULL: the consumer side, the order's). */
static void write_party(struct shard *sh, struct jw *w, const char *key, const char *id, const char *role)
{
	jw_key(w, key);
	jw_obj_begin(w);
	if (id && strcmp(id, KEY_PLATFORM_ENTITY)) {
		const struct partner *p = partner_get(sh, id, strlen(id));
		jw_kstr(w, "partner_id", id);
		jw_kstr(w, "name", p ? p->v.legal_name : id);
	} else if (id) {
		jw_kstr(w, "partner_id", KEY_PLATFORM_ENTITY);
		jw_kstr(w, "name", sh->cfg.platform_legal_name);
	} else {
		jw_knull(w, "partner_id");
		jw_knull(w, "name");
	}
	if (role)
		jw_kstr(w, "role", role);
	jw_obj_end(w);
}

/* Stage the row of document k of o, numbered from t, dated now.  0 or -1. */
static int stage_doc(struct shard *sh, const struct order *o, unsigned k, struct seq_take *t, const char *now)
{
	enum doc_kind kind;
	unsigned g;
	doc_slot(k, &kind, &g);
	char id[DOC_ROW_ID_MAX], series[DOC_SERIES_MAX];
	snprintf(id, sizeof(id), "%s.D%u", o->row.id, k + 1);
	snprintf(series, sizeof(series), "%s-%s-%.4s", series_prefix[kind], o->dest, now);
	const char *issuer = issuer_of(o, kind, g), *role;
	const char *to = recipient_of(o, kind, g, &role);
	uint64_t number = seq_next(sh, t, series, issuer);
	if (!number)
		return -1;
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	struct jw w;
	jw_init(&w, &doc);
	jw_obj_begin(&w);
	jw_kstr(&w, "document_id", id);
	jw_kstr(&w, "order_id", o->row.id);
	jw_kstr(&w, "type", doc_kind_names[kind]);
	jw_kint(&w, "leg", g);
	if (doc_kind_per_leg(kind))
		jw_kstr(&w, "leg_id", o->legs[g].leg_id);
	else
		jw_knull(&w, "leg_id");
	jw_kstr(&w, "language", lang_of(sh, o, kind, g));
	jw_kstr(&w, "series", series);
	jw_kint(&w, "number", (int64_t)number);
	char date[11];
	snprintf(date, sizeof(date), "%.10s", now);
	jw_kstr(&w, "issue_date", date);
	write_party(sh, &w, "issuer", issuer, NULL);
	write_party(sh, &w, "recipient", to, role);
	jw_kstr(&w, "status", "pending");
	jw_knull(&w, "sha256");
	jw_knull(&w, "bytes");
	jw_knull(&w, "pages");
	char url[DOC_ROW_ID_MAX + 32];
	snprintf(url, sizeof(url), "/v1/documents/%s/content", id);
	jw_kstr(&w, "url", url);
	jw_kstr(&w, "created_at", now);
	jw_knull(&w, "generated_at");
	jw_knull(&w, "error");
	jw_obj_end(&w);
	int rc = w.err || txn_put(sh, REC_T_DOCUMENT, id, strlen(id), doc.data, doc.len) ? -1 : 0;
	buf_free(&doc);
	return rc;
}

/* Is leg g of o delivered (its track has a delivered scan)? */
static int leg_delivered(struct shard *sh, const struct order *o, unsigned g)
{
	const struct leg_track *t = leg_track_get(sh, o->legs[g].leg_id);
	return t && t->delivered_at[0];
}

int documents_stage_delivered(struct shard *sh, const struct order *o, unsigned li, const char *at)
{
	(void)at;
	if (!sh->cfg.documents || li >= o->n_legs || li >= DOC_LEGS_MAX)
		return 0; /* off, or an order past the documents' bound (none; logged at creation) */
	char id[DOC_ROW_ID_MAX], now[32];
	unsigned k = 2 + 4 * li + 3;
	snprintf(id, sizeof(id), "%s.D%u", o->row.id, k + 1);
	if (doc_get(sh, id))
		return 0;
	fmt_rfc3339_ms(now, wall_ms());
	struct seq_take t = {0};
	return stage_doc(sh, o, k, &t, now) || seq_stage(sh, &t) ? -1 : 0;
}

/* ---- creating an order's set ---------------------------------------------------------------- */

/* Does this shard own the order (its destination's shard)? */
static int own_order(struct shard *sh, const struct order *o)
{
	int owner = sh->smap ? smap_owner(sh->smap, o->dest) : -1;
	return owner < 0 || (uint64_t)owner == sh->cfg.shard_id;
}

/* 1: o rests at reserved or later (its documents are due); 0: not yet
 * (being placed); -1: never (failed, or cancelled before the walk came:
 * nothing was shipped or invoiced; a set created before a cancel stays,
 * true of what was issued -- its credit note is future work). */
static int order_due(struct shard *sh, const struct order *o)
{
	const struct order_state *s = order_state_get(sh, o->row.id, o->row.id_len);
	if (!s)
		return 0;
	int st = s->v.status;
	if (st == ORD_FAILED || st == ORD_CANCELLED)
		return -1;
	return st >= ORD_RESERVED ? 1 : 0;
}

/* Create the missing rows of o's set (all but the final invoices of legs
 * not delivered) in one transaction.  0, or -1 (logged). */
static int create_set(struct shard *sh, const struct order *o)
{
	if (o->n_legs > DOC_LEGS_MAX) {
		log_warn("msg=\"an order has more legs than a document set takes: no documents\" order=%s legs=%u max=%d",
			 o->row.id, o->n_legs, DOC_LEGS_MAX);
		return 0;
	}
	char now[32];
	fmt_rfc3339_ms(now, wall_ms());
	struct seq_take t = {0};
	int rc = 0;
	txn_begin(sh);
	for (unsigned k = 0; k < doc_count(o) && !rc; k++) {
		enum doc_kind kind;
		unsigned g;
		doc_slot(k, &kind, &g);
		char id[DOC_ROW_ID_MAX];
		snprintf(id, sizeof(id), "%s.D%u", o->row.id, k + 1);
		if (doc_get(sh, id) || (kind == DOC_ORIGINATOR_INVOICE && !leg_delivered(sh, o, g)))
			continue;
		rc = stage_doc(sh, o, k, &t, now);
	}
	if (rc || seq_stage(sh, &t) || !txn_commit(sh)) {
		txn_abort(sh);
		log_error("msg=\"an order's documents could not be created; retried\" order=%s", o->row.id);
		return -1;
	}
	return 0;
}

/* ---- rendering ------------------------------------------------------------------------------ */

static struct {
	struct docstore store;
	struct doc_worker *worker;
	int started;
	char cursor[ID_MAX_LEN];                  /* the orders walked so far (by id) */
	char inflight[DOCS_WORKER_JOBS][DOC_ROW_ID_MAX]; /* "" = free slot */
	uint64_t retry_at_ms;                     /* after a store error */
	uint64_t rendered, failed;
} dg;

int documents_start(struct shard *sh, char *err, size_t errlen)
{
	if (!sh->cfg.documents) {
		log_info("msg=\"trade documents are off (--documents 0): orders get none\"");
		return 0;
	}
	if (sh->cfg.platform_country[0] && !iso_country_valid(sh->cfg.platform_country, strlen(sh->cfg.platform_country))) {
		snprintf(err, errlen, "--platform-country %s is not an ISO 3166-1 alpha-2 country", sh->cfg.platform_country);
		return -1;
	}
	char root[DOCSTORE_ROOT_MAX];
	if (snprintf(root, sizeof(root), "%s/documents", sh->cfg.data_dir) >= (int)sizeof(root) ||
	    docstore_open(&dg.store, root)) {
		snprintf(err, errlen, "the document store %s/documents cannot be opened: %s", sh->cfg.data_dir,
			 strerror(errno));
		return -1;
	}
	if (!(dg.worker = doc_worker_start(&dg.store, DOCS_WORKER_JOBS))) {
		snprintf(err, errlen, "the document render thread cannot start: %s", strerror(errno));
		return -1;
	}
	dg.started = 1;
	dg.cursor[0] = 0;
	memset(dg.inflight, 0, sizeof(dg.inflight));
	return 0;
}

void documents_stop(void)
{
	doc_worker_stop(dg.worker);
	dg.worker = NULL;
	dg.started = 0;
}

int documents_fd(void) { return dg.worker ? doc_worker_fd(dg.worker) : -1; }

/* src into dst[cap], cut at cap - 1 bytes (a document line has a bound;
 * a longer name is printed cut, never refused). */
static void put_cut(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%.*s", (int)(cap - 1), src);
}

/* The renderer's view of the world: parties, wines and locations from the tables. */
static int ctx_party(void *arg, const char *id, struct doc_party *out)
{
	struct shard *sh = arg;
	memset(out, 0, sizeof(*out));
	const struct partner *p = partner_get(sh, id, strlen(id));
	if (!p)
		return -1;
	put_cut(out->name, sizeof(out->name), p->v.legal_name);
	snprintf(out->country, sizeof(out->country), "%s", p->v.country);
	if (p->v.contact.name[0])
		put_cut(out->address[0], sizeof(out->address[0]), p->v.contact.name);
	if (p->v.contact.email[0])
		put_cut(out->address[1], sizeof(out->address[1]), p->v.contact.email);
	put_cut(out->vat_id, sizeof(out->vat_id), p->v.vat_id);
	put_cut(out->excise_number, sizeof(out->excise_number), p->v.excise_number);
	return 0;
}

/* A multilingual name member (a string, or {"en": ..., ...}: English, else the first). */
static const char *ml_name(const struct json_value *doc, const char *k)
{
	const struct json_value *v = json_get(doc, k);
	if (v && v->type == JSON_STRING)
		return v->u.str;
	if (!v || v->type != JSON_OBJECT || !v->len)
		return NULL;
	const struct json_value *en = json_get(v, "en");
	const struct json_value *x = en ? en : &v->u.members[0].value;
	return x->type == JSON_STRING ? x->u.str : NULL;
}

static int ctx_wine(void *arg, const char *id, struct doc_order_wine *out)
{
	struct shard *sh = arg;
	memset(out, 0, sizeof(*out));
	const struct wine *wn = wine_get(sh, id, strlen(id));
	struct json_doc *d = wn ? json_parse(wn->row.doc, wn->row.doc_len, NULL, NULL) : NULL;
	if (!d)
		return -1;
	const struct json_value *root = json_root(d);
	struct doc_wine *w = &out->wine;
	const char *title = ml_name(root, "title");
	snprintf(w->name, sizeof(w->name), "%s", title ? title : id);
	w->vintage = wn->vintage > 0 ? wn->vintage : 0;
	w->abv_centi = wn->abv > 0 ? wn->abv : 1;
	w->volume_ml = wn->volume_ul > 0 ? (int)(wn->volume_ul / 1000) : 750;
	const struct json_value *al = json_get(root, "allergens");
	for (uint32_t i = 0; al && al->type == JSON_ARRAY && i < al->len; i++)
		if (al->u.items[i].type == JSON_STRING && !strcmp(al->u.items[i].u.str, "sulphites"))
			snprintf(w->allergens, sizeof(w->allergens), "contains sulphites");
	const struct producer *pr = producer_get(sh, wn->producer_id, strlen(wn->producer_id));
	put_cut(w->producer, sizeof(w->producer), pr && pr->name[0] ? pr->name : "-");
	const char *place = ml_name(root, "appellation");
	place = place ? place : ml_name(root, "region");
	if (place)
		snprintf(w->origin, sizeof(w->origin), "%s, %s", place, wn->country);
	else
		snprintf(w->origin, sizeof(w->origin), "%s", wn->country[0] ? wn->country : "-");
	json_doc_free(d);
	return 0;
}

static int ctx_location(void *arg, const char *id, char *out, size_t cap)
{
	struct shard *sh = arg;
	const struct location *l = location_get(sh, id, strlen(id));
	struct json_doc *d = l ? json_parse(l->row.doc, l->row.doc_len, NULL, NULL) : NULL;
	const struct json_value *name = d ? json_get(json_root(d), "name") : NULL;
	int rc = name && name->type == JSON_STRING ? (snprintf(out, cap, "%s", name->u.str), 0) : -1;
	json_doc_free(d);
	return rc;
}

/* "YYYY-MM-DD" into d; 0 or -1. */
static int parse_day(const char *s, struct doc_date *d)
{
	return sscanf(s, "%4d-%2d-%2d", &d->year, &d->month, &d->day) == 3 ? 0 : -1;
}

/* The platform's view of o (the document the mapper reads) into out.  0 or -1. */
static int order_text(struct shard *sh, const struct order *o, struct buf *out)
{
	const struct order_state *s = order_state_get(sh, o->row.id, o->row.id_len);
	const char *legs[ORDER_MAX_LEGS];
	for (unsigned i = 0; i < o->n_legs; i++)
		legs[i] = o->legs[i].leg_id;
	return !s || order_doc(o, s, out) || leg_tracks_splice(sh, legs, o->n_legs, out) ? -1 : 0;
}

/* Set row id's status (with its file's figures, or the reason it
 * failed) in the OPEN transaction.  0 or -1. */
static int stage_status(struct shard *sh, const struct document *d, int status, const struct doc_result *res,
			const char *why)
{
	struct json_doc *jd = json_parse(d->row.doc, d->row.doc_len, NULL, NULL);
	if (!jd)
		return -1;
	const struct json_value *root = json_root(jd);
	char now[32];
	fmt_rfc3339_ms(now, wall_ms());
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	struct jw w;
	jw_init(&w, &doc);
	jw_obj_begin(&w);
	for (uint32_t i = 0; i < root->len; i++) {
		const struct json_member *m = &root->u.members[i];
		jw_keyn(&w, m->key, m->key_len);
		if (!strcmp(m->key, "status"))
			jw_str(&w, doc_status_names[status]);
		else if (!strcmp(m->key, "sha256") && res)
			jw_str(&w, res->sha256);
		else if (!strcmp(m->key, "bytes") && res)
			jw_int(&w, (int64_t)res->bytes);
		else if (!strcmp(m->key, "pages") && res)
			jw_int(&w, res->pages);
		else if (!strcmp(m->key, "generated_at") && res)
			jw_str(&w, now);
		else if (!strcmp(m->key, "error") && why)
			jw_str(&w, why);
		else
			jw_value(&w, &m->value);
	}
	jw_obj_end(&w);
	int rc = w.err || txn_put(sh, REC_T_DOCUMENT, d->row.id, d->row.id_len, doc.data, doc.len) ? -1 : 0;
	buf_free(&doc);
	json_doc_free(jd);
	return rc;
}

/* The generated documents of o, as a JSON array of ids, into out; how many
 * are still pending. */
static unsigned set_ids(struct shard *sh, const struct order *o, char *out, size_t cap)
{
	unsigned pending = 0;
	size_t at = 0;
	out[at++] = '[';
	for (unsigned k = 0; k < doc_count(o) && k < DOC_ORDER_DOCS_MAX; k++) {
		char id[DOC_ROW_ID_MAX];
		snprintf(id, sizeof(id), "%s.D%u", o->row.id, k + 1);
		const struct document *d = doc_get(sh, id);
		if (!d)
			continue;
		pending += d->status == DS_PENDING;
		if (d->status == DS_GENERATED && at + strlen(id) + 4 < cap)
			at += (size_t)snprintf(out + at, cap - at, "%s\"%s\"", at > 1 ? "," : "", id);
	}
	snprintf(out + at, cap - at, "]");
	return pending;
}

/* Note one finished render (or a refusal) in its row; the set's event
 * when the order has nothing left pending. */
static void note_done(struct shard *sh, const char *id, int status, const struct doc_result *res, const char *why)
{
	const struct document *d = doc_get(sh, id);
	const struct order *o = d ? order_get(sh, d->order_id, strlen(d->order_id)) : NULL;
	if (!d || !o || d->status != DS_PENDING)
		return;
	txn_begin(sh);
	int rc = stage_status(sh, d, status, res, why);
	if (!rc && !txn_commit(sh))
		rc = -1;
	if (rc) {
		txn_abort(sh);
		log_error("msg=\"a rendered document could not be noted; rendered again later\" document=%s", id);
		return;
	}
	static char ids[DOC_ORDER_DOCS_MAX * (DOC_ROW_ID_MAX + 3) + 64];
	if (set_ids(sh, o, ids, sizeof(ids)))
		return;
	char extra[sizeof(ids) + 32];
	snprintf(extra, sizeof(extra), "{\"documents\":%s}", ids);
	const struct order_state *s = order_state_get(sh, o->row.id, o->row.id_len);
	txn_begin(sh);
	if (!s || order_stage_event(sh, o, s->v.status, "document.generated", extra) || !txn_commit(sh)) {
		txn_abort(sh);
		log_error("msg=\"document.generated could not be written\" order=%s", o->row.id);
	}
}

/* Build document d's model and hand it to the render thread.  0 queued,
 * 1 the worker is full, -1 refused (the row marked failed). */
static int submit(struct shard *sh, const struct document *d, unsigned slot)
{
	const struct order *o = order_get(sh, d->order_id, strlen(d->order_id));
	struct json_doc *jd = json_parse(d->row.doc, d->row.doc_len, NULL, NULL);
	const struct json_value *root = jd ? json_root(jd) : NULL;
	char series[DOC_SERIES_MAX] = "", day[16] = "", lang[4] = "en", err[256] = "";
	int64_t number = 0;
	struct doc_model *m = calloc(1, sizeof(*m));
	struct buf text;
	buf_init(&text, REC_MAX_VAL);
	int rc = -1;
	if (!o || !root || !m || fld_doc_str(root, "series", series, sizeof(series)) ||
	    fld_doc_str(root, "issue_date", day, sizeof(day)) || fld_doc_str(root, "language", lang, sizeof(lang)) ||
	    json_to_int64(json_get(root, "number"), &number) || number < 1 || order_text(sh, o, &text)) {
		snprintf(err, sizeof(err), "the document's order or row could not be read");
	} else {
		struct doc_order_ctx ctx = {.party = ctx_party, .wine = ctx_wine, .location = ctx_location, .arg = sh,
					    .lang = lang, .series = series, .number = (uint64_t)number,
					    .gs1_prefix = DOCS_GS1_PREFIX};
		put_cut(ctx.platform.name, sizeof(ctx.platform.name), sh->cfg.platform_legal_name);
		snprintf(ctx.platform.country, sizeof(ctx.platform.country), "%s",
			 sh->cfg.platform_country[0] ? sh->cfg.platform_country : o->dest);
		put_cut(ctx.platform.vat_id, sizeof(ctx.platform.vat_id), sh->cfg.platform_vat_id);
		if (parse_day(day, &ctx.issue_date))
			snprintf(err, sizeof(err), "issue_date %s", day);
		else if (!doc_order_model(text.data, text.len, &ctx, (enum doc_kind)d->kind, d->leg, m, err, sizeof(err)))
			rc = doc_worker_submit(dg.worker, m, slot) ? (errno == EAGAIN ? 1 : 2) : 0;
	}
	buf_free(&text);
	free(m);
	json_doc_free(jd);
	if (rc == 0 || rc == 1)
		return rc;
	if (rc == 2) {
		dg.retry_at_ms = wall_ms() + DOCS_RETRY_MS;
		return 1;
	}
	dg.failed++;
	log_error("msg=\"an order's figures do not make a valid document; marked failed\" document=%.*s error=\"%s\"",
		  (int)d->row.id_len, d->row.id, err);
	char id[DOC_ROW_ID_MAX];
	snprintf(id, sizeof(id), "%.*s", (int)d->row.id_len, d->row.id);
	note_done(sh, id, DS_FAILED, NULL, err);
	return -1;
}

/* Collect the render thread's completions. */
static void collect(struct shard *sh)
{
	struct doc_result res[DOCS_WORKER_JOBS];
	size_t n = doc_worker_poll(dg.worker, res, DOCS_WORKER_JOBS);
	for (size_t i = 0; i < n; i++) {
		unsigned slot = (unsigned)res[i].tag;
		if (slot >= DOCS_WORKER_JOBS || !dg.inflight[slot][0])
			continue;
		char id[DOC_ROW_ID_MAX];
		memcpy(id, dg.inflight[slot], sizeof(id));
		dg.inflight[slot][0] = 0;
		if (!res[i].ok) {
			/* the store (disk full, I/O): the row stays pending, tried again */
			log_error("msg=\"a document could not be rendered or stored; retried\" document=%s error=\"%s\"", id,
				  res[i].err);
			dg.retry_at_ms = wall_ms() + DOCS_RETRY_MS;
			continue;
		}
		dg.rendered++;
		saga_crash_point(sh, "documents_crash_after_store"); /* the file stored, its row not told */
		note_done(sh, id, DS_GENERATED, &res[i], NULL);
	}
}

/* Is row id being rendered? */
static int in_flight(const char *id, uint32_t len)
{
	for (unsigned s = 0; s < DOCS_WORKER_JOBS; s++)
		if (strlen(dg.inflight[s]) == len && !memcmp(dg.inflight[s], id, len))
			return 1;
	return 0;
}

/* Hand pending rows (durable ones: a file never outlives its row's
 * promise) to the free slots of the render thread. */
static void feed(struct shard *sh)
{
	if (wall_ms() < dg.retry_at_ms)
		return;
	uint64_t durable = sh->wal ? wal_durable_lsn(sh->wal) : UINT64_MAX;
	struct oidx *pending = table_oidx_ext(&sh->tables[REC_T_DOCUMENT]);
	char ids[DOCS_WORKER_JOBS * 4][DOC_ROW_ID_MAX];
	unsigned n = 0;
	struct oidx_iter it;
	for (int ok = oidx_seek_ge(pending, "", 0, &it); ok && n < DOCS_WORKER_JOBS * 4; ok = oidx_next(&it)) {
		uint32_t kl;
		const char *k = oidx_iter_key(&it, &kl);
		if (kl < DOC_ROW_ID_MAX && !in_flight(k, kl)) {
			memcpy(ids[n], k, kl);
			ids[n++][kl] = 0;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		unsigned slot = 0;
		while (slot < DOCS_WORKER_JOBS && dg.inflight[slot][0])
			slot++;
		if (slot == DOCS_WORKER_JOBS)
			return;
		const struct document *d = doc_get(sh, ids[i]);
		if (!d || d->status != DS_PENDING || d->row.lsn > durable)
			continue;
		memcpy(dg.inflight[slot], ids[i], DOC_ROW_ID_MAX);
		saga_crash_point(sh, "documents_crash_before_render"); /* numbered, durable, not rendered */
		int rc = submit(sh, d, slot);
		if (rc)
			dg.inflight[slot][0] = 0;
		if (rc == 1)
			return;
	}
}

/* Walk the orders behind the cursor: create the sets that are due. */
static void walk(struct shard *sh)
{
	struct oidx_iter it;
	const struct table *ot = &sh->tables[REC_T_ORDER];
	unsigned seen = 0, created = 0;
	size_t cl = strlen(dg.cursor);
	for (int ok = oidx_seek_ge(&ot->by_order, dg.cursor, (uint32_t)cl, &it); ok; ok = oidx_next(&it)) {
		const struct order *o = oidx_iter_val(&it);
		if (cl && !strcmp(o->row.id, dg.cursor))
			continue;
		if (seen++ == DOCS_SCAN_PER_POLL || created == DOCS_CREATE_PER_POLL)
			return;
		if (own_order(sh, o)) {
			int due = order_due(sh, o);
			if (due == 0)
				return; /* being placed: the walk waits for it */
			char id[DOC_ROW_ID_MAX];
			snprintf(id, sizeof(id), "%s.D1", o->row.id);
			if (due > 0 && !doc_get(sh, id)) {
				if (create_set(sh, o))
					return;
				created++;
			}
		}
		snprintf(dg.cursor, sizeof(dg.cursor), "%s", o->row.id);
	}
}

void documents_metrics(struct shard *sh, struct buf *o)
{
	const uint64_t probes = idx_probes; /* an operator's gauge: no fsync wait */
	size_t pending = oidx_count(table_oidx_ext(&sh->tables[REC_T_DOCUMENT]));
	idx_probes = probes;
	buf_printf(o, "# HELP wm_documents_rendered_total Trade documents rendered and stored since start.\n"
		      "# TYPE wm_documents_rendered_total counter\nwm_documents_rendered_total %llu\n"
		      "# HELP wm_documents_failed_total Documents whose order's figures made no valid document (see the log).\n"
		      "# TYPE wm_documents_failed_total counter\nwm_documents_failed_total %llu\n"
		      "# HELP wm_documents_pending Documents numbered and not yet rendered.\n"
		      "# TYPE wm_documents_pending gauge\nwm_documents_pending %zu\n",
		   (unsigned long long)dg.rendered, (unsigned long long)dg.failed, pending);
}

void documents_poll(struct shard *sh)
{
	if (!dg.started)
		return;
	collect(sh);
	walk(sh);
	feed(sh);
}

/* ---- who sees what ---------------------------------------------------------------------------- */

/* The caller of c may see document d of o (the rules at the top). */
static int doc_visible(const struct api_ctx *c, const struct order *o, const struct document *d)
{
	if (c->who.is_platform)
		return 1;
	const char *me = c->who.entity_id;
	if (c->who.kind == PRINCIPAL_CONSUMER)
		return d->kind == DOC_CONSUMER_INVOICE && !strcmp(me, o->row.id);
	const struct order_leg *l = d->leg < o->n_legs ? &o->legs[d->leg] : NULL;
	switch (d->kind) {
	case DOC_CONSUMER_INVOICE:
		return !strcmp(o->seller_id, me);
	case DOC_TRANSPORT_DOCUMENT:
		if (!strcmp(o->seller_id, me))
			return 1;
		for (unsigned g = 0; g < o->n_legs; g++)
			if (!strcmp(o->legs[g].fulfiller_id, me))
				return 1;
		return 0;
	case DOC_CARRIER_LABEL:
	case DOC_FULFILLER_INSTRUCTION:
		return l && !strcmp(l->fulfiller_id, me);
	default:
		return l && !strcmp(l->originator_id, me);
	}
}

/* Write the rows of o the caller sees, as array elements. */
static void write_visible(struct api_ctx *c, struct jw *w, const struct order *o)
{
	for (unsigned k = 0; k < doc_count(o) && k < DOC_ORDER_DOCS_MAX; k++) {
		char id[DOC_ROW_ID_MAX];
		snprintf(id, sizeof(id), "%s.D%u", o->row.id, k + 1);
		const struct document *d = doc_get(c->sh, id);
		if (d && doc_visible(c, o, d))
			jw_raw(w, d->row.doc, d->row.doc_len);
	}
}

int documents_splice(struct api_ctx *c, const struct order *o, struct buf *doc)
{
	static const char empty[] = "\"documents\":[]";
	char id[DOC_ROW_ID_MAX];
	buf_str_tag_u(id, sizeof(id), o->row.id, ".D", 1);
	if (!doc_get(c->sh, id))
		return 0;
	const char *at = memmem(doc->data, doc->len, empty, sizeof(empty) - 1);
	if (!at)
		return 0;
	size_t head = (size_t)(at - doc->data) + sizeof(empty) - 3; /* up to the '[' */
	struct buf out;
	buf_init(&out, REC_MAX_VAL);
	buf_append(&out, doc->data, head);
	struct jw w;
	jw_init(&w, &out);
	jw_arr_begin(&w);
	write_visible(c, &w, o);
	jw_arr_end(&w);
	int rc = w.err || buf_append(&out, doc->data + head + 2, doc->len - head - 2) ? -1 : 0;
	if (!rc) {
		buf_reset(doc);
		rc = buf_append(doc, out.data, out.len);
	}
	buf_free(&out);
	return rc;
}

/* ---- the routes ----------------------------------------------------------------------------- */

/* GET /v1/orders/{id}/documents */
static void order_documents(struct api_ctx *c)
{
	const struct order *o = order_sublist_begin(c);
	if (!o)
		return;
	write_visible(c, &c->w, o);
	order_sublist_end(c);
}

/* The document of the path (param 0) the caller may see, with its order;
 * NULL with 404 answered. */
static const struct document *path_doc(struct api_ctx *c, const struct order **op)
{
	char id[DOC_ROW_ID_MAX];
	const struct document *d = api_param(c, 0, id, sizeof(id)) > 0 ? doc_get(c->sh, id) : NULL;
	const struct order *o = d ? order_get(c->sh, d->order_id, strlen(d->order_id)) : NULL;
	if (!o || !doc_visible(c, o, d)) {
		api_error(c, 404, "not_found", "no document with this id");
		return NULL;
	}
	*op = o;
	return d;
}

/* Serve d's file, its checksum verified. */
static void send_pdf(struct api_ctx *c, const struct document *d)
{
	if (d->status != DS_GENERATED) {
		char det[160];
		snprintf(det, sizeof(det), "the document is %s; its file is not there yet", doc_status_names[d->status]);
		api_error(c, 409, "document_not_ready", det);
		buf_puts(&c->rs->headers, "Retry-After: 1\r\n");
		return;
	}
	if (api_read_row(c))
		return;
	uint8_t *data = NULL;
	size_t len = 0;
	if (!dg.started || docstore_get(&dg.store, d->sha256, &data, &len)) {
		int e = errno;
		log_error("msg=\"a document's file is missing or corrupt: not served\" document=%.*s sha256=%s error=\"%s\" "
			  "action=\"the file regenerates from the order: mark the row pending (or restore the file)\"",
			  (int)d->row.id_len, d->row.id, d->sha256, strerror(e));
		api_error(c, 500, "document_corrupt", "the stored file failed its checksum or is missing; it was not served");
		return;
	}
	buf_reset(&c->rs->body);
	buf_append(&c->rs->body, data, len);
	free(data);
	c->rs->status = 200;
	c->rs->content_type = "application/pdf";
	buf_printf(&c->rs->headers, "ETag: \"%s\"\r\nX-Content-Type-Options: nosniff\r\n", d->sha256);
}

/* Does the request ask for the PDF (Accept: application/pdf)? */
static int wants_pdf(const struct api_ctx *c)
{
	const struct http_header *a = http_find_header(c->http, "accept");
	return a && memmem(a->value, a->value_len, "application/pdf", 15);
}

/* GET /v1/documents/{id} */
static void document_read(struct api_ctx *c)
{
	const struct order *o;
	const struct document *d = path_doc(c, &o);
	if (!d)
		return;
	if (wants_pdf(c)) {
		send_pdf(c, d);
		return;
	}
	api_send_doc(c, 200, d->row.doc, d->row.doc_len);
}

/* GET /v1/documents/{id}/content */
static void document_content(struct api_ctx *c)
{
	const struct order *o;
	const struct document *d = path_doc(c, &o);
	if (d)
		send_pdf(c, d);
}

const struct route document_routes[] = {
	{HTTP_M_GET, "/v1/orders/{id}/documents", order_documents, SC_READ_ORDERS, ACT_READ_ORDERS,
	 "The order's documents the caller may see", ROUTE_F_CONSUMER},
	{HTTP_M_GET, "/v1/documents/{id}", document_read, SC_READ_ORDERS, ACT_READ_ORDERS,
	 "One document: its metadata, or its PDF (Accept: application/pdf)", ROUTE_F_CONSUMER},
	{HTTP_M_GET, "/v1/documents/{id}/content", document_content, SC_READ_ORDERS, ACT_READ_ORDERS,
	 "One document's PDF, checksum verified", ROUTE_F_CONSUMER},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
