/*
 * consumer_volume.c -- consumer volume caps across orders (spec 8: "Order
 * volume caps, e.g. 90 L still / 60 L sparkling per consumer;
 * destination-dependent"; the caps and their window in data/caps.tsv).
 *
 * Who a consumer is: the destination and the e-mail address (case-folded):
 * the one identity every seller's order carries; consumer_id is the
 * seller's own reference and would let two shops double a cap.  The row's
 * id is a hash of both ("cv_<CC>_<16 hex>"), so no address is a key.
 *
 * Where the counter lives: with the consumer's orders, on the shard of the
 * destination (DESIGN.md 2) -- every order to DE is captured on DE's shard,
 * whatever shards its stock is on -- so the check and the new entry are in
 * the SAME transaction as the order itself: two racing orders cannot both
 * pass (one event loop), and a crash keeps both or neither.
 *
 * What counts: one entry per order (its lines: category, unit volume,
 * units); at a check, the entries inside the category's window whose order
 * is not failed or cancelled, less the units returned or refunded since.
 * Releases are therefore read, not written: a cancel, a failure or a
 * refund frees volume the moment it happens, with nothing to keep in step.
 * Entries past the longest window (or of failed and cancelled orders) are
 * dropped when the row is next written.
 */
#include "engine/orders/consumer_volume.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "engine/base/log.h"
#include "engine/edge/fields.h"
#include "engine/orders/order.h"
#include "engine/orders/returns.h"
#include "engine/pricing/quote.h"
#include "engine/pricing/refdata.h"
#include "engine/storage/record.h"
#include "net/hex.h"

#define CV_ID_MAX 32

struct cv_row {
	struct row row;
	uint16_t n_entries;
};

static int cv_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	const struct json_value *e = json_get(doc, "entries");
	if (!e || e->type != JSON_ARRAY || e->len > CV_ENTRIES_MAX)
		return -1;
	for (uint32_t i = 0; i < e->len; i++) {
		const struct json_value *x = &e->u.items[i], *lines = json_get(x, "lines");
		char oid[ID_MAX_LEN];
		int64_t at;
		if (x->type != JSON_OBJECT || fld_doc_str(x, "order_id", oid, sizeof(oid)) || !oid[0] ||
		    json_to_int64(json_get(x, "at_ms"), &at) || !lines || lines->type != JSON_ARRAY ||
		    lines->len > QUOTE_MAX_LINES)
			return -1;
	}
	((struct cv_row *)r)->n_entries = (uint16_t)e->len;
	return 0;
}

static const char *const cv_keys[] = {"entries", NULL};

/* The typed fast path (table.h): stage_row hands the entry count it wrote
 * (kept + 1, within CV_ENTRIES_MAX), the row's one typed field. */
static int cv_decode_typed(struct table *t, struct row *r, const void *typed)
{
	(void)t;
	uint16_t n;
	memcpy(&n, typed, sizeof(n));
	if (n > CV_ENTRIES_MAX)
		return -1;
	((struct cv_row *)r)->n_entries = n;
	return 0;
}

const struct table_ops consumer_volume_table_ops = {
	.rec_table = REC_T_CONSUMER_VOLUME,
	.name = "consumer_volume",
	.row_size = sizeof(struct cv_row),
	.decode = cv_decode,
	.decode_pure = 1, /* recovery may build its rows off the loop (table.h) */
	.decode_keys = cv_keys,
	.decode_typed = cv_decode_typed,
	.typed_size = sizeof(uint16_t),
};

/* The consumer's row id: destination and the case-folded address, hashed. */
static void cv_id(const char *dest, const char *email, char out[CV_ID_MAX])
{
	char folded[ORDER_EMAIL_MAX + 1];
	size_t n = strnlen(email, ORDER_EMAIL_MAX);
	for (size_t i = 0; i < n; i++)
		folded[i] = (char)tolower((unsigned char)email[i]);
	/* "cv_%.2s_%016llx" written by hand (snprintf was ~1,300 instructions
	 * of an order's capture: issue 15), the hash big end first through
	 * hex_encode; test builds compare the two */
	uint64_t h = XXH3_64bits(folded, n);
	uint8_t be[8];
	for (unsigned i = 0; i < 8; i++)
		be[i] = (uint8_t)(h >> (56 - 8 * i));
	size_t dl = strnlen(dest, 2), o = 3;
	_Static_assert(CV_ID_MAX >= 3 + 2 + 1 + 16 + 1, "a consumer row id fits");
	memcpy(out, "cv_", 3);
	memcpy(out + o, dest, dl);
	o += dl;
	out[o++] = '_';
	hex_encode(be, sizeof(be), out + o); /* 16 digits and the NUL */
#ifdef WM_TESTING
	char want[CV_ID_MAX];
	snprintf(want, sizeof(want), "cv_%.2s_%016llx", dest, (unsigned long long)h);
	assert(!strcmp(out, want));
#endif
}

/* Does entry x still count (its order neither failed nor cancelled)? */
static int entry_live(struct shard *sh, const char *order_id)
{
	const struct order_state *s = order_state_get(sh, order_id, strlen(order_id));
	return s && s->v.status != ORD_FAILED && s->v.status != ORD_CANCELLED;
}

/* The microlitres of each category (still, sparkling) entry x still
 * counts into ul[]: its lines' units less those returned or refunded since;
 * nothing for an order that failed or was cancelled. */
static void entry_ul(struct shard *sh, const struct json_value *x, int64_t ul[2])
{
	char oid[ID_MAX_LEN];
	ul[0] = ul[1] = 0;
	if (fld_doc_str(x, "order_id", oid, sizeof(oid)) || !entry_live(sh, oid))
		return;
	int64_t back[QUOTE_MAX_LINES] = {0};
	order_units_back(sh, oid, back, QUOTE_MAX_LINES);
	const struct json_value *lines = json_get(x, "lines");
	for (uint32_t i = 0; lines && i < lines->len; i++) {
		const struct json_value *l = &lines->u.items[i];
		int64_t line, cat, unit, qty;
		if (json_to_int64(json_get(l, "line"), &line) || json_to_int64(json_get(l, "category"), &cat) ||
		    json_to_int64(json_get(l, "unit_ul"), &unit) || json_to_int64(json_get(l, "qty"), &qty) ||
		    (cat != RD_CAT_STILL && cat != RD_CAT_SPARKLING) || line < 0 || line >= QUOTE_MAX_LINES)
			continue;
		int64_t left = qty - back[line];
		ul[cat] += left > 0 ? left * unit : 0;
	}
}

/* Write the row: the kept entries of old (inside the longest window, of
 * live orders) and the new one. */
static int stage_row(struct shard *sh, const char *id, const char *dest, const struct json_value *old,
		     const char *order_id, long long now, const struct order_volume_line *l, unsigned n)
{
	struct buf doc;
	buf_init_hint(&doc, REC_MAX_VAL, BUF_DOC_HINT);
	struct jw w;
	jw_init(&w, &doc);
	jw_obj_begin(&w);
	jw_kstr(&w, "id", id);
	jw_kstr(&w, "destination", dest);
	jw_key(&w, "entries");
	jw_arr_begin(&w);
	unsigned kept = 0;
	long long cutoff = now - (long long)RD_MAX_CAP_DAYS * 86400000LL;
	for (uint32_t i = 0; old && i < old->len; i++) {
		const struct json_value *x = &old->u.items[i];
		char oid[ID_MAX_LEN];
		int64_t at;
		if (fld_doc_str(x, "order_id", oid, sizeof(oid)) || json_to_int64(json_get(x, "at_ms"), &at) || at < cutoff ||
		    !entry_live(sh, oid) || !strcmp(oid, order_id))
			continue;
		jw_value(&w, x);
		kept++;
	}
	jw_obj_begin(&w);
	jw_kstr(&w, "order_id", order_id);
	jw_kint(&w, "at_ms", now);
	jw_key(&w, "lines");
	jw_arr_begin(&w);
	for (unsigned i = 0; i < n; i++) {
		jw_obj_begin(&w);
		jw_kint(&w, "line", i);
		jw_kint(&w, "category", l[i].category);
		jw_kint(&w, "unit_ul", l[i].unit_ul);
		jw_kint(&w, "qty", l[i].qty);
		jw_obj_end(&w);
	}
	jw_arr_end(&w);
	jw_obj_end(&w);
	jw_arr_end(&w);
	jw_obj_end(&w);
	uint16_t n_entries = (uint16_t)(kept + 1);
	int rc = kept + 1 > CV_ENTRIES_MAX ? 1
		 : w.err || txn_put_typed(sh, REC_T_CONSUMER_VOLUME, id, strlen(id), doc.data, doc.len, &n_entries)
			 ? -1
			 : 0;
	buf_free(&doc);
	return rc;
}

int consumer_volume_capture(struct api_ctx *c, const char *order_id, const char *dest, const char *email,
			    const struct order_volume_line *l, unsigned n)
{
	const struct refdata *rd = refdata_current();
	if (!refdata_cap(rd, dest, RD_CAT_STILL) && !refdata_cap(rd, dest, RD_CAT_SPARKLING))
		return 0; /* no cap for this destination: nothing to count */
	char id[CV_ID_MAX];
	cv_id(dest, email, id);
	const struct row *r = table_get(&c->sh->tables[REC_T_CONSUMER_VOLUME], id, strlen(id));
	struct json_doc *d = r ? json_parse(r->doc, r->doc_len, NULL, NULL) : NULL;
	const struct json_value *entries = d ? json_get(json_root(d), "entries") : NULL;
	long long now = (long long)wall_ms();
	const struct rd_cap *cap[2] = {refdata_cap(rd, dest, RD_CAT_STILL), refdata_cap(rd, dest, RD_CAT_SPARKLING)};
	int64_t want[2] = {0, 0}, used[2] = {0, 0};
	for (unsigned i = 0; i < n; i++)
		if (l[i].category == RD_CAT_STILL || l[i].category == RD_CAT_SPARKLING)
			want[l[i].category] += l[i].unit_ul * l[i].qty;
	/* one pass over the entries: each counts in the windows it falls in */
	for (uint32_t i = 0; entries && i < entries->len; i++) {
		int64_t at, ul[2];
		if (json_to_int64(json_get(&entries->u.items[i], "at_ms"), &at))
			continue;
		int in[2];
		for (int k = 0; k < 2; k++)
			in[k] = cap[k] && want[k] && at >= now - (long long)cap[k]->period_days * 86400000LL;
		if (!in[0] && !in[1])
			continue;
		entry_ul(c->sh, &entries->u.items[i], ul);
		for (int k = 0; k < 2; k++)
			used[k] += in[k] ? ul[k] : 0;
	}
	for (int k = 0; k < 2; k++)
		if (cap[k] && want[k] && used[k] + want[k] > cap[k]->limit_ul) {
			json_doc_free(d);
			quote_cap_refusal(c, k, dest, cap[k]->limit_ul, cap[k]->period_days, used[k], want[k]);
			return 1;
		}
	int rc = stage_row(c->sh, id, dest, entries, order_id, now, l, n);
	json_doc_free(d);
	if (rc == 1) {
		api_error(c, 409, "too_many_orders_in_window",
			  "this consumer has more orders to this destination in the cap window than the engine keeps (256)");
		return 1;
	}
	return rc;
}
