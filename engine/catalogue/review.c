/*
 * review.c -- tier 4 of wine dedup (spec 2.7: "label image"): the
 * manual-review queue.
 *
 * Why a queue and not a fourth matcher.  Tiers 1-3 decide from keys; what
 * is left is a `candidate` -- a wine that resembles an existing one (same
 * producer and cuvee in another vintage or format, the same LWIN-7 without
 * a vintage, ...) -- which only a person looking at the label can settle.
 * Ingest therefore never blocks on it: the new wine is created (201, match
 * result candidate) and, in the SAME transaction, one review entry is
 * opened naming both wines, the tier and confidence that produced the
 * candidate, a reason, and the new wine's main image as the label
 * evidence.  An operator then decides once:
 *   confirm  the two rows are one wine: the candidate is enriched with the
 *            members it lacks (the tier 1-3 enrichment, wine.c) and the new
 *            wine is archived with merged_into = the candidate
 *            (wine.matched with tier 4, wine.archived, review.confirmed);
 *   reject   they are different wines: both stay (review.rejected).
 * A decided review is final (409 review_decided); the whole decision is one
 * transaction, so a crash leaves either nothing or all of it.
 *
 * Representation: the stored document is what GET returns:
 *   id, wine_id, candidate_wine_id, tier, confidence, reason,
 *   label_media_id, status (pending | confirmed | rejected), created_at,
 *   decided_at, decided_by (the operator's key id).
 * The typed row keeps status and the two wine ids; an ordered index
 * "status NUL id" serves ?status= lists.  Reviews are platform records:
 * every route needs the operator scope, and their events are platform-wide.
 */
#include "engine/catalogue/review.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/edge/key.h"
#include "engine/base/log.h"
#include "engine/storage/resources.h"

const char *const review_status_names[] = {"pending", "confirmed", "rejected", NULL};

#define REVIEW_MAX_TS 32 /* an RFC 3339 timestamp with milliseconds */

/* Everything of one review document. */
struct review_vals {
	char id[ID_MAX_LEN], wine_id[ID_MAX_LEN], candidate_id[ID_MAX_LEN];
	int tier;
	int64_t confidence; /* WINE_CONF_SCALE */
	char reason[REVIEW_MAX_REASON + 1];
	char label_media_id[ID_MAX_LEN];
	uint8_t status;
	char created_at[REVIEW_MAX_TS], decided_at[REVIEW_MAX_TS], decided_by[ID_MAX_LEN];
	/* a submission review: who sent it and its body (points into the
	 * parsed document it was read from, or the caller's buffer) */
	char submitted_by[ID_MAX_LEN];
	const char *submission;
	size_t submission_len;
};

/* The submission member's text, re-serialised from the parsed document
 * into b (the review's lifetime is the caller's). */
static void submission_of(const struct json_value *doc, struct review_vals *v, struct buf *b)
{
	const struct json_value *sv = json_get(doc, "submission");
	if (!sv || sv->type != JSON_OBJECT)
		return;
	struct jw w;
	jw_init(&w, b);
	jw_value(&w, sv);
	if (!w.err) {
		v->submission = b->data;
		v->submission_len = b->len;
	}
}

/* Copy a string member (bounded); 1 if present and fitting, else 0 and "". */
static int doc_str(const struct json_value *doc, const char *name, char *out, size_t size)
{
	const struct json_value *v = json_get(doc, name);
	out[0] = 0;
	if (!v || v->type != JSON_STRING || v->len >= size)
		return 0;
	memcpy(out, v->u.str, v->len + 1);
	return 1;
}

/* Read a stored document; 0, or -1 if a required member is missing. */
static int review_read(const struct json_value *doc, struct review_vals *v)
{
	memset(v, 0, sizeof(*v));
	char st[16];
	doc_str(doc, "submitted_by", v->submitted_by, sizeof(v->submitted_by));
	int ok = doc_str(doc, "id", v->id, sizeof(v->id)) &&
		 (doc_str(doc, "wine_id", v->wine_id, sizeof(v->wine_id)) || v->submitted_by[0]) &&
		 doc_str(doc, "candidate_wine_id", v->candidate_id, sizeof(v->candidate_id)) &&
		 doc_str(doc, "created_at", v->created_at, sizeof(v->created_at)) &&
		 doc_str(doc, "status", st, sizeof(st));
	doc_str(doc, "reason", v->reason, sizeof(v->reason));
	doc_str(doc, "label_media_id", v->label_media_id, sizeof(v->label_media_id));
	doc_str(doc, "decided_at", v->decided_at, sizeof(v->decided_at));
	doc_str(doc, "decided_by", v->decided_by, sizeof(v->decided_by));
	const struct json_value *t = json_get(doc, "tier");
	const struct json_value *cf = json_get(doc, "confidence");
	int64_t tier = 0;
	if (!ok || !t || json_to_int64(t, &tier) || tier < TIER_NONE || tier > TIER_LABEL_REVIEW || !cf ||
	    json_to_fixed(cf, WINE_CONF_SCALE, &v->confidence))
		return -1;
	v->tier = (int)tier;
	for (int i = 0; i < REVIEW_N_STATUS; i++)
		if (!strcmp(review_status_names[i], st)) {
			v->status = (uint8_t)i;
			return 0;
		}
	return -1;
}

static void review_write(struct jw *w, const struct review_vals *v)
{
	jw_obj_begin(w);
	jw_kstr(w, "id", v->id);
	jw_kstr(w, "kind", v->submitted_by[0] ? "submission" : "candidate");
	if (v->wine_id[0])
		jw_kstr(w, "wine_id", v->wine_id);
	else
		jw_knull(w, "wine_id");
	jw_kstr(w, "candidate_wine_id", v->candidate_id);
	jw_kint(w, "tier", v->tier);
	jw_key(w, "confidence");
	wine_jw_decimal(w, v->confidence, WINE_CONF_SCALE);
	jw_kstr(w, "reason", v->reason);
	if (v->label_media_id[0])
		jw_kstr(w, "label_media_id", v->label_media_id);
	else
		jw_knull(w, "label_media_id");
	jw_kstr(w, "status", review_status_names[v->status]);
	jw_kstr(w, "created_at", v->created_at);
	if (v->decided_at[0]) {
		jw_kstr(w, "decided_at", v->decided_at);
		jw_kstr(w, "decided_by", v->decided_by);
	} else {
		jw_knull(w, "decided_at");
		jw_knull(w, "decided_by");
	}
	if (v->submitted_by[0]) {
		jw_kstr(w, "submitted_by", v->submitted_by);
		jw_key(w, "submission");
		jw_raw(w, v->submission, v->submission_len);
	}
	jw_obj_end(w);
}

/* ---- the table ------------------------------------------------------------ */

static int review_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct review *rv = (struct review *)r;
	struct review_vals v;
	if (review_read(doc, &v))
		return -1;
	rv->status = v.status;
	memcpy(rv->wine_id, v.wine_id, sizeof(rv->wine_id));
	memcpy(rv->candidate_id, v.candidate_id, sizeof(rv->candidate_id));
	return 0;
}

struct review_ext {
	struct oidx by_status; /* status name NUL id -> review */
};

static struct review_ext *ext(const struct table *t) { return t->ext; }

static int review_init(struct table *t)
{
	struct review_ext *e = calloc(1, sizeof(*e));
	if (!e)
		return -1;
	oidx_init(&e->by_status);
	t->ext = e;
	return 0;
}

static void review_fini(struct table *t)
{
	oidx_free(&ext(t)->by_status);
	free(t->ext);
	t->ext = NULL;
}

/* "status NUL id" into out (IDX_MAX_KEY bytes); its length. */
static uint32_t status_key(const struct review *rv, uint8_t *out)
{
	const char *s = review_status_names[rv->status];
	size_t n = strlen(s);
	memcpy(out, s, n);
	out[n] = 0;
	memcpy(out + n + 1, rv->row.id, rv->row.id_len);
	return (uint32_t)(n + 1 + rv->row.id_len);
}

static int review_index_add(struct table *t, struct row *r)
{
	uint8_t k[IDX_MAX_KEY];
	return oidx_put(&ext(t)->by_status, k, status_key((struct review *)r, k), r) ? -1 : 0;
}

static void review_index_del(struct table *t, struct row *r)
{
	uint8_t k[IDX_MAX_KEY];
	oidx_del(&ext(t)->by_status, k, status_key((struct review *)r, k));
}

const struct table_ops review_table_ops = {
	.rec_table = REC_T_REVIEW,
	.name = "review",
	.row_size = sizeof(struct review),
	.decode = review_decode,
	.index_add = review_index_add,
	.index_del = review_index_del,
	.init = review_init,
	.fini = review_fini,
};

const struct review *review_get(struct shard *sh, const char *id, size_t len)
{
	return (const struct review *)table_get(&sh->tables[REC_T_REVIEW], id, len);
}

/* ---- writing ---------------------------------------------------------------- */

/* Put the document and its event into the open transaction; 0 or -1. */
static int review_put(struct api_ctx *c, const struct review_vals *v, const char *event, struct buf *doc)
{
	struct jw w;
	jw_init(&w, doc);
	review_write(&w, v);
	return w.err || txn_put(c->sh, REC_T_REVIEW, v->id, strlen(v->id), doc->data, doc->len) ||
			       txn_event(c->sh, event, NULL, doc->data, doc->len)
		       ? -1
		       : 0;
}

/* What made a tier call two wines similar (wine_match.c's candidates). */
static const char *reason_of(const struct wine_match *m)
{
	if (m->why[0])
		return m->why;
	switch (m->tier) {
	case TIER_GTIN:
		return "a GTIN of the existing wine with contradicting vintage or volume";
	case TIER_LWIN:
		return "the same LWIN wine in another format, or without a vintage";
	case TIER_NATURAL_KEY:
		return "the same producer and cuvee in another vintage, format or country";
	default:
		return "similar to an existing wine";
	}
}

int review_open(struct api_ctx *c, const char *wine_id, const struct wine_match *m, const char *label_media_id)
{
	if (!m->wine)
		return -1;
	struct review_vals v;
	memset(&v, 0, sizeof(v));
	id_new(&c->sh->ids, "rev", v.id);
	snprintf(v.wine_id, sizeof(v.wine_id), "%s", wine_id);
	snprintf(v.candidate_id, sizeof(v.candidate_id), "%.*s", (int)m->wine->row.id_len, m->wine->row.id);
	v.tier = (int)m->tier;
	v.confidence = m->confidence;
	snprintf(v.reason, sizeof(v.reason), "%s", reason_of(m));
	if (label_media_id)
		snprintf(v.label_media_id, sizeof(v.label_media_id), "%s", label_media_id);
	v.status = RVS_PENDING;
	fmt_rfc3339_ms(v.created_at, wall_ms());
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	int rc = review_put(c, &v, "review.opened", &doc);
	buf_free(&doc);
	return rc;
}

int review_open_submission(struct api_ctx *c, const struct wine_match *m, const char *body, size_t body_len,
			   char review_id[ID_MAX_LEN])
{
	if (!m->wine)
		return -1;
	struct review_vals v;
	memset(&v, 0, sizeof(v));
	id_new(&c->sh->ids, "rev", v.id);
	snprintf(v.candidate_id, sizeof(v.candidate_id), "%.*s", (int)m->wine->row.id_len, m->wine->row.id);
	v.tier = (int)m->tier;
	v.confidence = m->confidence;
	snprintf(v.reason, sizeof(v.reason), "%s",
		 "a submission whose identifiers lead to a draft its sender may not read");
	snprintf(v.submitted_by, sizeof(v.submitted_by), "%s",
		 c->who.is_platform ? KEY_PLATFORM_ENTITY : c->who.entity_id);
	v.submission = body;
	v.submission_len = body_len;
	v.status = RVS_PENDING;
	fmt_rfc3339_ms(v.created_at, wall_ms());
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	int rc = review_put(c, &v, "review.opened", &doc);
	buf_free(&doc);
	if (!rc)
		memcpy(review_id, v.id, sizeof(v.id));
	return rc;
}

/* ---- handlers ------------------------------------------------------------------ */

/* The review of the path; otherwise the 404 is written and NULL returned. */
static const struct review *review_from_path(struct api_ctx *c)
{
	const struct review *rv = c->n_params ? review_get(c->sh, c->params[0].p, c->params[0].len) : NULL;
	if (!rv)
		api_error(c, 404, "not_found", "no wine review with this id");
	return rv;
}

static void reviews_get(struct api_ctx *c)
{
	const struct review *rv = review_from_path(c);
	if (rv)
		api_send_doc(c, 200, rv->row.doc, rv->row.doc_len);
}

static void reviews_list(struct api_ctx *c)
{
	struct api_page pg;
	if (api_page_parse(c, &pg))
		return;
	char st[16];
	int n = api_query(c, "status", st, sizeof(st));
	const struct oidx *idx = &c->sh->tables[REC_T_REVIEW].by_order;
	uint8_t prefix[IDX_MAX_KEY];
	uint32_t pl = 0;
	if (n != -1) {
		int found = -1;
		for (int i = 0; n > 0 && i < REVIEW_N_STATUS; i++)
			if (!strcmp(review_status_names[i], st))
				found = i;
		if (found < 0) {
			api_error(c, 400, "invalid_filter", "status must be pending, confirmed or rejected");
			return;
		}
		idx = &ext(&c->sh->tables[REC_T_REVIEW])->by_status;
		size_t sl = strlen(review_status_names[found]);
		memcpy(prefix, review_status_names[found], sl + 1);
		pl = (uint32_t)sl + 1;
	}
	api_list(c, idx, prefix, pl, &pg, NULL, NULL, NULL);
}

/*
 * Confirm a submission review: the sender's body enriches the candidate as
 * a tier 4 match would have (wine_enrich, in the open transaction).  0, or
 * -1 with code/detail.
 */
static int confirm_submission(struct api_ctx *c, const struct review_vals *v, const struct wine *into,
			      const char **code, char *detail, size_t dlen)
{
	struct json_doc *body = json_parse(v->submission, v->submission_len, NULL, NULL);
	struct wine_ingest_result out;
	memset(&out, 0, sizeof(out));
	struct wine_match m = {WR_MATCHED, TIER_LABEL_REVIEW, WINE_CONF_ONE, into, ""};
	int rc = body && wine_enrich(c, into, json_root(body), &m, &out) == 200 ? 0 : -1;
	json_doc_free(body);
	if (rc) {
		*code = body ? (out.code ? out.code : "validation_failed") : "corrupt_record";
		snprintf(detail, dlen, "%s", body ? out.detail : "the stored submission does not parse");
	}
	return rc;
}

/*
 * Decide the review of the path: confirm (merge the new wine into the
 * candidate) or reject.  One transaction; the answer is the decided review.
 */
static void review_decide(struct api_ctx *c, int confirm)
{
	const struct review *rv = review_from_path(c);
	if (!rv)
		return;
	if (rv->status != RVS_PENDING) {
		char d[96];
		snprintf(d, sizeof(d), "the review is %s already", review_status_names[rv->status]);
		api_error(c, 409, "review_decided", d);
		return;
	}
	struct json_doc *d = json_parse(rv->row.doc, rv->row.doc_len, NULL, NULL);
	struct review_vals v;
	struct buf sub;
	buf_init(&sub, REC_MAX_VAL);
	int bad = !d || review_read(json_root(d), &v);
	if (!bad && v.submitted_by[0]) {
		submission_of(json_root(d), &v, &sub);
		bad = !v.submission;
	}
	json_doc_free(d);
	if (bad) {
		buf_free(&sub);
		api_error(c, 500, "corrupt_record", "the stored review does not decode");
		return;
	}
	const struct wine *dup = v.wine_id[0] ? wine_get(c->sh, v.wine_id, strlen(v.wine_id)) : NULL;
	const struct wine *into = wine_get(c->sh, v.candidate_id, strlen(v.candidate_id));
	if (confirm && ((!dup && !v.submitted_by[0]) || !into)) {
		buf_free(&sub);
		api_error(c, 409, "wine_missing", "a wine of the review no longer exists");
		return;
	}
	v.status = confirm ? RVS_CONFIRMED : RVS_REJECTED;
	fmt_rfc3339_ms(v.decided_at, wall_ms());
	snprintf(v.decided_by, sizeof(v.decided_by), "%s", c->who.key_id[0] ? c->who.key_id : KEY_PLATFORM_ENTITY);
	const char *code = "record_too_large";
	char detail[200] = "the review record is too large to store";
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	txn_begin(c->sh);
	if ((confirm && (dup ? wine_merge_duplicate(c, dup, into, &code, detail, sizeof(detail))
			     : confirm_submission(c, &v, into, &code, detail, sizeof(detail)))) ||
	    review_put(c, &v, confirm ? "review.confirmed" : "review.rejected", &doc) || !txn_commit(c->sh)) {
		txn_abort(c->sh);
		int status = !strcmp(code, "record_too_large") ? 413 : !strcmp(code, "corrupt_record") ? 500 : 409;
		api_error(c, status, code, detail);
	} else {
		c->rs->status = 200;
		buf_append(&c->rs->body, doc.data, doc.len);
	}
	buf_free(&doc);
	buf_free(&sub);
}

static void reviews_confirm(struct api_ctx *c) { review_decide(c, 1); }
static void reviews_reject(struct api_ctx *c) { review_decide(c, 0); }

const struct route review_routes[] = {
	{HTTP_M_GET, "/v1/wine-reviews", reviews_list, SC_OPERATOR, ACT_OPERATE,
	 "List wine reviews (tier 4 manual-review queue), oldest first; filter by status", 0},
	{HTTP_M_GET, "/v1/wine-reviews/{id}", reviews_get, SC_OPERATOR, ACT_OPERATE, "Retrieve a wine review", 0},
	{HTTP_M_POST, "/v1/wine-reviews/{id}/confirm", reviews_confirm, SC_OPERATOR, ACT_OPERATE,
	 "Confirm a review: the two wines are one (merge into the candidate)", 0},
	{HTTP_M_POST, "/v1/wine-reviews/{id}/reject", reviews_reject, SC_OPERATOR, ACT_OPERATE,
	 "Reject a review: the two wines are different", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
