/*
 * tracking.c -- a leg's carrier and its carrier scans (contract in
 * tracking.h).
 *
 * Why one row per leg holding its scans, not a row per scan: a leg's
 * scans are few (a handful; TRACK_SCANS_MAX bounds them) and are always
 * read together, in time order, inside the leg of an order document.  One
 * row keeps them sorted as they are written, so a read never sorts, and
 * idempotency by scan id is a walk of at most TRACK_SCANS_MAX items in the
 * row it rewrites anyway.
 *
 * Why scans are ordered by the time they happened and not by arrival:
 * carriers deliver scans late and out of order (a hub uploads in batches);
 * tracking[] is the parcel's history, so each scan is inserted at its
 * occurred_at (then scan id, so equal times have one order on every
 * replica).  Times are normalised to UTC with milliseconds when the scan
 * is accepted, which makes their byte order their time order.
 */
#include "engine/orders/tracking.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/edge/fields.h"
#include "engine/storage/record.h"
#include "net/json.h"
#include "net/jsonw.h"

const char *const scan_type_names[] = {"picked_up", "in_transit", "out_for_delivery", "delivered", "exception", NULL};

const struct leg_track *leg_track_get(struct shard *sh, const char *leg_id)
{
	return (const struct leg_track *)table_get(&sh->tables[REC_T_LEG_TRACK], leg_id, strlen(leg_id));
}

/* ---- the row -------------------------------------------------------------------------- */

/* A scan item of a stored row: a scan_id and a known type.  0 or -1. */
static int scan_item_ok(const struct json_value *it)
{
	char id[TRACK_REF_MAX + 1], type[24], at[TRACK_TS_MAX];
	int t = -1;
	if (it->type == JSON_OBJECT && !fld_doc_str(it, "scan_id", id, sizeof(id)) &&
	    !fld_doc_str(it, "type", type, sizeof(type)) && !fld_doc_str(it, "occurred_at", at, sizeof(at)))
		for (int i = 0; scan_type_names[i]; i++)
			if (!strcmp(scan_type_names[i], type))
				t = i;
	return t >= 0 && id[0] && at[0] ? 0 : -1;
}

static int track_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct leg_track *k = (struct leg_track *)r;
	const struct json_value *tr = json_get(doc, "tracking");
	if (fld_doc_str(doc, "order_id", k->order_id, sizeof(k->order_id)) || !k->order_id[0] ||
	    fld_doc_str(doc, "carrier", k->carrier, sizeof(k->carrier)) ||
	    fld_doc_str(doc, "tracking_number", k->tracking_number, sizeof(k->tracking_number)) || !tr ||
	    tr->type != JSON_ARRAY || tr->len > TRACK_SCANS_MAX)
		return -1;
	for (uint32_t i = 0; i < tr->len; i++) {
		char type[24];
		if (scan_item_ok(&tr->u.items[i]))
			return -1;
		fld_doc_str(&tr->u.items[i], "type", type, sizeof(type));
		if (!k->delivered_at[0] && !strcmp(type, "delivered"))
			fld_doc_str(&tr->u.items[i], "occurred_at", k->delivered_at, sizeof(k->delivered_at));
	}
	k->n_scans = (uint16_t)tr->len;
	return 0;
}

static const char *const track_keys[] = {"order_id", "carrier", "tracking_number", "tracking", NULL};

const struct table_ops leg_track_table_ops = {
	.rec_table = REC_T_LEG_TRACK,
	.name = "leg_track",
	.row_size = sizeof(struct leg_track),
	.decode = track_decode,
	.decode_keys = track_keys,
};

/* ---- writing ---------------------------------------------------------------------------- */

/* A string member, or null when s is "". */
static void kstr_or_null(struct jw *w, const char *k, const char *s)
{
	if (s && s[0])
		jw_var_str(w, k, s);
	else
		jw_var_null(w, k);
}

/* The scan as a tracking[] item. */
static void write_scan(struct jw *w, const struct scan *s, const char *now)
{
	jw_obj_begin(w);
	jw_kstr(w, "scan_id", s->scan_id);
	jw_kstr(w, "type", scan_type_names[s->type]);
	jw_kstr(w, "occurred_at", s->occurred_at);
	jw_kstr(w, "carrier", s->carrier);
	jw_kstr(w, "tracking_number", s->tracking_number);
	kstr_or_null(w, "location", s->location);
	kstr_or_null(w, "received_by", s->received_by);
	jw_kstr(w, "recorded_at", now);
	jw_obj_end(w);
}

/* The stored item it is the same scan as s (every value the carrier sent). */
static int same_scan(const struct json_value *it, const struct scan *s)
{
	enum { n = TRACK_PLACE_MAX + 1 };
	char type[24], at[TRACK_TS_MAX], carrier[TRACK_REF_MAX + 1], tn[TRACK_REF_MAX + 1], loc[n], rb[n];
	return !fld_doc_str(it, "type", type, sizeof(type)) && !strcmp(type, scan_type_names[s->type]) &&
	       !fld_doc_str(it, "occurred_at", at, sizeof(at)) && !strcmp(at, s->occurred_at) &&
	       !fld_doc_str(it, "carrier", carrier, sizeof(carrier)) && !strcmp(carrier, s->carrier) &&
	       !fld_doc_str(it, "tracking_number", tn, sizeof(tn)) && !strcmp(tn, s->tracking_number) &&
	       !fld_doc_str(it, "location", loc, n) && !strcmp(loc, s->location) &&
	       !fld_doc_str(it, "received_by", rb, n) && !strcmp(rb, s->received_by);
}

/* Where s goes among the items (their (occurred_at, scan_id) order), or a
 * TRACK_ code when its id is there already. */
static int scan_slot(const struct json_value *tr, const struct scan *s, uint32_t *at)
{
	*at = tr ? tr->len : 0;
	for (uint32_t i = 0; tr && i < tr->len; i++) {
		const struct json_value *it = &tr->u.items[i];
		char id[TRACK_REF_MAX + 1], when[TRACK_TS_MAX];
		fld_doc_str(it, "scan_id", id, sizeof(id));
		fld_doc_str(it, "occurred_at", when, sizeof(when));
		if (!strcmp(id, s->scan_id))
			return same_scan(it, s) ? TRACK_DUP : TRACK_CONFLICT;
		int c = strcmp(s->occurred_at, when);
		if (*at == tr->len && (c < 0 || (c == 0 && strcmp(s->scan_id, id) < 0)))
			*at = i;
	}
	return tr && tr->len >= TRACK_SCANS_MAX ? TRACK_FULL : TRACK_OK;
}

int leg_track_stage(struct shard *sh, const char *order_id, const char *leg_id, const char *carrier,
		    const char *tracking_number, const struct scan *scan, const char *now)
{
	const struct leg_track *old = leg_track_get(sh, leg_id);
	struct json_doc *d = old ? json_parse(old->row.doc, old->row.doc_len, NULL, NULL) : NULL;
	if (old && !d)
		return TRACK_STORE;
	const struct json_value *tr = d ? json_get(json_root(d), "tracking") : NULL;
	uint32_t at = 0;
	int rc = scan ? scan_slot(tr, scan, &at) : TRACK_OK;
	if (rc != TRACK_OK) {
		json_doc_free(d);
		return rc;
	}
	/* the leg's carrier: what it has, else what the caller names, else the first scan's */
	const char *cr = old && old->carrier[0] ? old->carrier : carrier && carrier[0] ? carrier : scan ? scan->carrier : "";
	const char *tn = old && old->tracking_number[0]	 ? old->tracking_number
			 : tracking_number && tracking_number[0] ? tracking_number
			 : scan				 ? scan->tracking_number
							 : "";
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	struct jw w;
	jw_init(&w, &doc);
	jw_obj_begin(&w);
	jw_kstr(&w, "leg_id", leg_id);
	jw_kstr(&w, "order_id", order_id);
	kstr_or_null(&w, "carrier", cr);
	kstr_or_null(&w, "tracking_number", tn);
	jw_key(&w, "tracking");
	jw_arr_begin(&w);
	uint32_t n = tr ? tr->len : 0;
	for (uint32_t i = 0; i <= n; i++) {
		if (scan && i == at)
			write_scan(&w, scan, now);
		if (i < n)
			jw_value(&w, &tr->u.items[i]);
	}
	jw_arr_end(&w);
	jw_obj_end(&w);
	rc = w.err || txn_put(sh, REC_T_LEG_TRACK, leg_id, strlen(leg_id), doc.data, doc.len) ? TRACK_STORE : TRACK_OK;
	buf_free(&doc);
	json_doc_free(d);
	return rc;
}

/* ---- reading into the order document ------------------------------------------------------ */

/* A leg object of the document, with its track's values when it has one. */
static void write_leg(struct shard *sh, struct jw *w, const struct json_value *leg)
{
	char id[TRACK_LEG_ID_MAX];
	const struct leg_track *t = NULL;
	if (!fld_doc_str(leg, "leg_id", id, sizeof(id)) && id[0])
		t = leg_track_get(sh, id);
	struct json_doc *td = t ? json_parse(t->row.doc, t->row.doc_len, NULL, NULL) : NULL;
	if (!td) {
		jw_value(w, leg);
		return;
	}
	const struct json_value *tr = json_get(json_root(td), "tracking");
	jw_obj_begin(w);
	for (uint32_t i = 0; i < leg->len; i++) {
		const struct json_member *m = &leg->u.members[i];
		if (!strcmp(m->key, "tracking_number"))
			continue; /* written after carrier */
		if (!strcmp(m->key, "carrier")) {
			kstr_or_null(w, "carrier", t->carrier);
			kstr_or_null(w, "tracking_number", t->tracking_number);
			continue;
		}
		jw_keyn(w, m->key, m->key_len);
		if (!strcmp(m->key, "tracking") && tr)
			jw_value(w, tr);
		else
			jw_value(w, &m->value);
	}
	jw_obj_end(w);
	json_doc_free(td);
}

int leg_tracks_splice(struct shard *sh, const char *const *leg_ids, unsigned n, struct buf *doc)
{
	unsigned any = 0;
	for (unsigned i = 0; i < n && !any; i++)
		any = leg_track_get(sh, leg_ids[i]) != NULL;
	if (!any)
		return 0;
	struct json_doc *d = json_parse(doc->data, doc->len, NULL, NULL);
	if (!d)
		return -1;
	const struct json_value *root = json_root(d);
	struct buf out;
	buf_init(&out, REC_MAX_VAL);
	struct jw w;
	jw_init(&w, &out);
	jw_obj_begin(&w);
	for (uint32_t i = 0; root->type == JSON_OBJECT && i < root->len; i++) {
		const struct json_member *m = &root->u.members[i];
		jw_keyn(&w, m->key, m->key_len);
		if (strcmp(m->key, "fulfillments") || m->value.type != JSON_ARRAY) {
			jw_value(&w, &m->value);
			continue;
		}
		jw_arr_begin(&w);
		for (uint32_t g = 0; g < m->value.len; g++)
			write_leg(sh, &w, &m->value.u.items[g]);
		jw_arr_end(&w);
	}
	jw_obj_end(&w);
	int rc = w.err ? -1 : 0;
	if (!rc) {
		buf_reset(doc);
		rc = buf_append(doc, out.data, out.len);
	}
	buf_free(&out);
	json_doc_free(d);
	return rc;
}
