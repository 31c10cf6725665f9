/*
 * compliance.c -- the delivery register and the destination declarations
 * (spec 2.8 "Compliance record (delivery register, one per delivery)",
 * 2.9 compliance notes, 1.9; contract in compliance.h).
 *
 * One record per product per delivered leg ("<order id>.C<leg>.<line>"),
 * written in the SAME transaction as the scan that delivers the leg, so a
 * delivery is never without its register entry nor the reverse.  It
 * carries what the register needs (date, consignee, delivery address,
 * product, excise category code, commodity code of chapter 22, units,
 * unit capacity, ABV) and what the declaration adds up: litres, litres of
 * pure alcohol, and the excise and VAT the consumer paid for these units
 * (their share of the line's E_Excise and V_VAT, units / line units,
 * rounded half-up once), in the destination's currency, with the leg's
 * originator for the transport document.  Product facts (title, ABV,
 * volume, category) are read from the catalogue at delivery; the excise
 * category code and commodity code as the order was taxed.
 *
 * Why a record's period may differ from its delivery date: a declared
 * month is closed (immutable) once it has ended.  A delivery scanned
 * after the end of its month -- carriers report late -- is booked in the
 * month it was recorded, marked `late` with its real date: the correction
 * as a new line in the next declaration, as fiscal practice requires.  So
 * a closed month's figures never change.
 *
 * Returns and refunds correct the register the same way, never by
 * changing a record: when a return's money goes back (returns.c
 * refund_step, in that transaction) a correction record per leg and line
 * ("<return id>.X<leg>.<line>", `entry` "return" or "refund") is booked in
 * the month the money went back --
 *   return   the goods came back: units, litres, litres of pure alcohol,
 *            excise and VAT of those units, all negative (the excise is
 *            reclaimed: the goods left the destination's consumption);
 *   refund   money back, goods kept: the VAT share of the refunded units
 *            only (the taxable amount was reduced, VAT Directive art. 90);
 *            units and excise 0 (the goods stay released for consumption).
 * A delivery record carries `entry` "delivery" (records written before
 * corrections existed have none and read as deliveries).
 *
 * Declarations aggregate a destination's month per excise category from an
 * ordered index (destination, period, record id): no scan of the orders.
 */
#include "engine/orders/compliance.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/iso.h"
#include "engine/base/log.h"
#include "engine/catalogue/partner.h"
#include "engine/catalogue/wine.h"
#include "engine/edge/fields.h"
#include "engine/orders/order.h"
#include "engine/orders/tracking.h"
#include "engine/pricing/quote.h"
#include "engine/pricing/refdata.h"
#include "engine/storage/record.h"

#define CREC_ID_MAX (ID_MAX_LEN + 24)
#define CREC_KEY_MAX (CREC_ID_MAX + 16)

enum crec_entry { CE_DELIVERY = 0, CE_RETURN, CE_REFUND };
static const char *const crec_entry_names[] = {"delivery", "return", "refund", NULL};

struct crec {
	struct row row;
	uint8_t entry;                 /* enum crec_entry */
	char dest[3], period[8];       /* the declaration it belongs to: "DE", "2026-11" */
	uint8_t category;              /* enum rd_category */
	int64_t units, volume_ul, abv; /* abv: hundredths of % vol */
	int64_t excise_minor, vat_minor;
	char key[CREC_KEY_MAX];        /* "DE|2026-11|<id>": the declarations index */
};

/* ---- the table ------------------------------------------------------------------------------ */

static int crec_index_add(struct table *t, struct row *r)
{
	struct crec *c = (struct crec *)r;
	return oidx_set(table_oidx_ext(t), c->key, (uint32_t)strlen(c->key), r) ? -1 : 0;
}

static void crec_index_del(struct table *t, struct row *r)
{
	struct crec *c = (struct crec *)r;
	uint32_t n = (uint32_t)strlen(c->key);
	if (oidx_get(table_oidx_ext(t), c->key, n) == r)
		oidx_del(table_oidx_ext(t), c->key, n);
}

/* An exact decimal member at scale into out.  0 or -1. */
static int fixed(const struct json_value *doc, const char *k, unsigned scale, int64_t *out)
{
	const struct json_value *v = json_get(doc, k);
	return v && v->type == JSON_NUMBER && !json_to_fixed(v, scale, out) ? 0 : -1;
}

/* The record's `entry` (absent: a delivery).  0 or -1. */
static int entry_of(const struct json_value *doc, uint8_t *out)
{
	const struct json_value *e = json_get(doc, "entry");
	*out = CE_DELIVERY;
	if (!e)
		return 0;
	for (uint8_t i = 0; e->type == JSON_STRING && crec_entry_names[i]; i++)
		if (!strcmp(crec_entry_names[i], e->u.str)) {
			*out = i;
			return 0;
		}
	return -1;
}

/* The signs an entry's figures must have (units bounded by 10^8). */
static int figures_ok(const struct crec *c)
{
	switch (c->entry) {
	case CE_DELIVERY:
		return c->units >= 1 && c->units <= 100000000 && c->excise_minor >= 0 && c->vat_minor >= 0;
	case CE_RETURN:
		return c->units <= -1 && c->units >= -100000000 && c->excise_minor <= 0 && c->vat_minor <= 0;
	default:
		return c->units == 0 && c->excise_minor == 0 && c->vat_minor <= 0;
	}
}

static int crec_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct crec *c = (struct crec *)r;
	char code[16], cur[4];
	int minor;
	if (fld_doc_str(doc, "destination_country", c->dest, sizeof(c->dest)) || strlen(c->dest) != 2 ||
	    fld_doc_str(doc, "period", c->period, sizeof(c->period)) || strlen(c->period) != 7 ||
	    fld_doc_str(doc, "excise_category_code", code, sizeof(code)) ||
	    fld_doc_str(doc, "currency", cur, sizeof(cur)) || (minor = iso_currency_minor(cur, 3)) < 0 ||
	    fixed(doc, "units_delivered", 0, &c->units) || fixed(doc, "unit_capacity_litres", 6, &c->volume_ul) ||
	    fixed(doc, "abv", 2, &c->abv) || fixed(doc, "excise_due", (unsigned)minor, &c->excise_minor) ||
	    fixed(doc, "vat_due", (unsigned)minor, &c->vat_minor) || c->volume_ul < 0 || c->volume_ul > 100000000 ||
	    c->abv < 0 || c->abv > 10000 || entry_of(doc, &c->entry) || !figures_ok(c))
		return -1;
	int cat = -1;
	for (int i = 0; i < RD_CAT_COUNT_; i++)
		if (!strcmp(rd_category_codes[i], code))
			cat = i;
	if (cat < 0)
		return -1;
	c->category = (uint8_t)cat;
	int n = snprintf(c->key, sizeof(c->key), "%s|%s|%.*s", c->dest, c->period, (int)r->id_len, r->id);
	return n > 0 && (size_t)n < sizeof(c->key) ? 0 : -1;
}

static const char *const crec_keys[] = {"destination_country", "period", "excise_category_code", "currency",
					"units_delivered", "unit_capacity_litres", "abv", "excise_due", "vat_due", "entry", NULL};

const struct table_ops compliance_table_ops = {
	.rec_table = REC_T_COMPLIANCE,
	.name = "compliance",
	.row_size = sizeof(struct crec),
	.decode = crec_decode,
	.decode_keys = crec_keys,
	.index_add = crec_index_add,
	.index_del = crec_index_del,
	.index_add_first = 1,
	.init = table_oidx_ext_init,
	.fini = table_oidx_ext_fini,
};

/* ---- writing at delivery ------------------------------------------------------------------- */

/* a * b / d rounded half-up (all >= 0, d > 0). */
static int64_t mul_div(int64_t a, int64_t b, int64_t d)
{
	return (int64_t)(((__int128)a * b + d / 2) / d);
}

/* The same for a signed a: the magnitude rounded half-up, the sign kept
 * (a correction is exactly the negative of the delivery it reverses). */
static int64_t mul_div_signed(int64_t a, int64_t b, int64_t d)
{
	int64_t m = mul_div(a < 0 ? -a : a, b < 0 ? -b : b, d);
	return (a < 0) != (b < 0) ? -m : m;
}

/* The order's line i: units over all legs, and the E_Excise and V_VAT the
 * consumer paid for it; its tax breakdown's category and commodity codes. */
struct line_facts {
	int64_t units, excise, vat;
	char cat_code[16], hs[16];
};

static void line_facts(const struct json_value *root, unsigned i, int minor, struct line_facts *f)
{
	memset(f, 0, sizeof(*f));
	int64_t l, q, a;
	const struct json_value *legs = json_get(root, "fulfillments");
	for (uint32_t g = 0; legs && legs->type == JSON_ARRAY && g < legs->len; g++) {
		const struct json_value *items = json_get(&legs->u.items[g], "items");
		for (uint32_t k = 0; items && items->type == JSON_ARRAY && k < items->len; k++)
			if (!json_to_int64(json_get(&items->u.items[k], "line"), &l) && l == (int64_t)i &&
			    !json_to_int64(json_get(&items->u.items[k], "qty"), &q))
				f->units += q;
	}
	const struct json_value *fb = json_get(root, "financial_breakdown");
	const struct json_value *fl = fb ? json_get(fb, "lines") : NULL;
	char comp[24];
	for (uint32_t k = 0; fl && fl->type == JSON_ARRAY && k < fl->len; k++) {
		const struct json_value *e = &fl->u.items[k];
		if (json_to_int64(json_get(e, "line"), &l) || l != (int64_t)i || fld_doc_str(e, "component", comp, sizeof(comp)) ||
		    json_to_fixed(json_get(e, "amount"), (unsigned)minor, &a))
			continue;
		if (!strcmp(comp, "E_Excise"))
			f->excise += a;
		else if (!strcmp(comp, "V_VAT"))
			f->vat += a;
	}
	const struct json_value *lines = json_get(root, "lines");
	const struct json_value *tb = lines && lines->type == JSON_ARRAY && i < lines->len
					      ? json_get(&lines->u.items[i], "tax_breakdown")
					      : NULL;
	for (uint32_t k = 0; tb && tb->type == JSON_ARRAY && k < tb->len; k++) {
		char tax[16];
		if (!fld_doc_str(&tb->u.items[k], "tax", tax, sizeof(tax)) && !strcmp(tax, "excise")) {
			fld_doc_str(&tb->u.items[k], "excise_tax_category", f->cat_code, sizeof(f->cat_code));
			fld_doc_str(&tb->u.items[k], "hs_tariff_code", f->hs, sizeof(f->hs));
		}
	}
}

/* What one record books. */
struct booking {
	const char *id;
	const char *delivered_at;  /* the leg's delivery (a correction: the delivery it corrects, or now) */
	const char *booked_at;     /* `date`: the delivery's day, or the day the money went back */
	const char *period;
	int late;
	uint8_t entry;             /* enum crec_entry */
	const char *return_id;     /* corrections: the return; NULL for a delivery */
	int64_t units;             /* > 0 delivered; corrections: the units returned or refunded (> 0) */
};

/* Write one record's document. */
static void write_record(struct jw *w, const struct booking *b, const struct order *o, const struct order_leg *l,
			 const struct json_value *consumer, unsigned line, const char *sku, const struct wine *wn,
			 const char *title, int cat, const struct line_facts *f, int minor)
{
	/* the goods' figures: delivered (+), came back (-), kept (0) */
	int64_t goods = b->entry == CE_DELIVERY ? b->units : b->entry == CE_RETURN ? -b->units : 0;
	int64_t vat_units = b->entry == CE_DELIVERY ? b->units : -b->units;
	jw_obj_begin(w);
	jw_kstr(w, "id", b->id);
	jw_kstr(w, "order_id", o->row.id);
	jw_kstr(w, "leg_id", l->leg_id);
	jw_kint(w, "line", line);
	char date[11];
	snprintf(date, sizeof(date), "%.10s", b->booked_at);
	jw_kstr(w, "date", date);
	jw_kstr(w, "delivered_at", b->delivered_at);
	jw_kstr(w, "period", b->period);
	jw_kbool(w, "late", b->late);
	jw_kstr(w, "entry", crec_entry_names[b->entry]);
	if (b->return_id)
		jw_kstr(w, "return_id", b->return_id);
	const struct json_value *name = consumer ? json_get(consumer, "name") : NULL;
	const struct json_value *addr = consumer ? json_get(consumer, "address") : NULL;
	jw_key(w, "consignee");
	if (name)
		jw_value(w, name);
	else
		jw_null(w);
	jw_key(w, "delivery_address");
	if (addr)
		jw_value(w, addr);
	else
		jw_null(w);
	jw_kstr(w, "destination_country", o->dest);
	jw_kstr(w, "product_description", title);
	jw_kstr(w, "sku", sku);
	jw_kstr(w, "wine_id", wn ? wn->row.id : sku);
	jw_kstr(w, "excise_category", rd_category_names[cat]);
	jw_kstr(w, "excise_category_code", f->cat_code[0] ? f->cat_code : rd_category_codes[cat]);
	jw_kstr(w, "commodity_code", f->hs[0] ? f->hs : refdata_hs_code(cat, wn ? wn->volume_ul : 750000));
	jw_kint(w, "units_delivered", goods);
	int64_t vol = wn && wn->volume_ul > 0 ? wn->volume_ul : 0, abv = wn && wn->abv >= 0 ? wn->abv : 0;
	jw_kfixed(w, "unit_capacity_litres", vol, 6);
	jw_kfixed(w, "abv", abv, 2);
	jw_kfixed(w, "litres", goods * vol, 6);
	/* litres of pure alcohol = litres x abv / 100, to 0.1 ml, half-up */
	jw_kfixed(w, "litres_pure_alcohol", mul_div_signed(goods * vol, abv, 1000000), 4);
	int64_t e = f->units ? mul_div_signed(f->excise, goods, f->units) : 0;
	int64_t v = f->units ? mul_div_signed(vat_units, f->vat, f->units) : 0;
	quote_write_money(w, "excise_due", e, minor);
	quote_write_money(w, "vat_due", v, minor);
	jw_kstr(w, "currency", o->currency);
	jw_kstr(w, "originator_id", l->originator_id);
	jw_kstr(w, "fulfiller_id", l->fulfiller_id);
	jw_obj_end(w);
}

/* Stage the record b of line `line` (sku, wine wid) of leg li of o (root:
 * its parsed body) into the OPEN transaction.  0 or -1. */
static int stage_record(struct shard *sh, const struct order *o, const struct json_value *root, unsigned li,
			int64_t line, const char *sku, const char *wid, const struct booking *b, int minor)
{
	char title[256];
	const struct wine *wn = wine_get(sh, wid, strlen(wid));
	struct json_doc *wd = wn ? json_parse(wn->row.doc, wn->row.doc_len, NULL, NULL) : NULL;
	if (!wd || fld_doc_str(json_root(wd), "title", title, sizeof(title)) || !title[0])
		snprintf(title, sizeof(title), "wine %s", wid);
	json_doc_free(wd);
	int cat = wn ? quote_excise_category(wn->category) : RD_CAT_STILL;
	struct line_facts f;
	line_facts(root, (unsigned)line, minor, &f);
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	struct jw w;
	jw_init(&w, &doc);
	write_record(&w, b, o, &o->legs[li], json_get(root, "consumer"), (unsigned)line, sku, wn, title, cat, &f, minor);
	int rc = w.err || txn_put(sh, REC_T_COMPLIANCE, b->id, strlen(b->id), doc.data, doc.len) ? -1 : 0;
	buf_free(&doc);
	return rc;
}

/* The items of leg li of the parsed body root, or NULL. */
static const struct json_value *leg_items(const struct json_value *root, unsigned li)
{
	const struct json_value *legs = root ? json_get(root, "fulfillments") : NULL;
	const struct json_value *items = legs && legs->type == JSON_ARRAY && li < legs->len
						 ? json_get(&legs->u.items[li], "items")
						 : NULL;
	return items && items->type == JSON_ARRAY ? items : NULL;
}

/* The declaration month of a booking at `at`: its own month, or this one
 * when that has ended (a closed month never changes).  1 if late. */
static int period_of(const char *at, char period[8])
{
	char now[32];
	fmt_rfc3339_ms(now, wall_ms());
	int late = strncmp(at, now, 7) < 0;
	snprintf(period, 8, "%.7s", late ? now : at);
	return late;
}

int compliance_stage_leg(struct shard *sh, const struct order *o, unsigned li, const char *delivered_at)
{
	struct json_doc *d = json_parse(o->row.doc, o->row.doc_len, NULL, NULL);
	const struct json_value *root = d ? json_root(d) : NULL;
	const struct json_value *items = leg_items(root, li);
	int minor = iso_currency_minor(o->currency, 3);
	if (!items || minor < 0) {
		json_doc_free(d);
		return -1;
	}
	char period[8];
	int late = period_of(delivered_at, period);
	int rc = 0;
	for (uint32_t k = 0; k < items->len && !rc; k++) {
		const struct json_value *it = &items->u.items[k];
		int64_t line, units;
		char sku[ID_MAX_LEN], wid[ID_MAX_LEN], id[CREC_ID_MAX];
		if (json_to_int64(json_get(it, "line"), &line) || json_to_int64(json_get(it, "qty"), &units) ||
		    fld_doc_str(it, "sku", sku, sizeof(sku)) || fld_doc_str(it, "wine_id", wid, sizeof(wid))) {
			rc = -1;
			break;
		}
		snprintf(id, sizeof(id), "%s.C%u.%lld", o->row.id, li + 1, (long long)line);
		struct booking b = {.id = id, .delivered_at = delivered_at, .booked_at = delivered_at, .period = period,
				    .late = late, .entry = CE_DELIVERY, .units = units};
		rc = stage_record(sh, o, root, li, line, sku, wid, &b, minor);
	}
	json_doc_free(d);
	return rc;
}

/* The first leg of o (parsed body root) that carries line `line`, with the
 * item's sku and wine id; -1 if none. */
static int leg_of_line(const struct order *o, const struct json_value *root, int64_t line, char *sku, char *wid)
{
	for (unsigned g = 0; g < o->n_legs; g++) {
		const struct json_value *items = leg_items(root, g);
		for (uint32_t k = 0; items && k < items->len; k++) {
			int64_t l;
			const struct json_value *it = &items->u.items[k];
			if (!json_to_int64(json_get(it, "line"), &l) && l == line &&
			    !fld_doc_str(it, "sku", sku, ID_MAX_LEN) && !fld_doc_str(it, "wine_id", wid, ID_MAX_LEN))
				return (int)g;
		}
	}
	return -1;
}

/* The leg index of leg id, or -1. */
static int leg_index(const struct order *o, const char *leg_id)
{
	for (unsigned g = 0; g < o->n_legs; g++)
		if (!strcmp(o->legs[g].leg_id, leg_id))
			return (int)g;
	return -1;
}

int compliance_stage_return(struct shard *sh, const struct order *o, const char *return_id, int goods_back,
			    const struct json_value *ret)
{
	struct json_doc *d = json_parse(o->row.doc, o->row.doc_len, NULL, NULL);
	const struct json_value *root = d ? json_root(d) : NULL;
	/* goods back: per leg and line as they came back; kept: per line */
	const struct json_value *parts = json_get(ret, goods_back ? "legs" : "lines");
	int minor = iso_currency_minor(o->currency, 3);
	if (!root || !parts || parts->type != JSON_ARRAY || minor < 0) {
		json_doc_free(d);
		return -1;
	}
	char now[32], period[8];
	fmt_rfc3339_ms(now, wall_ms());
	period_of(now, period);
	int rc = 0;
	for (uint32_t k = 0; k < parts->len && !rc; k++) {
		const struct json_value *e = &parts->u.items[k];
		int64_t line, qty;
		char leg_id[64], sku[ID_MAX_LEN], wid[ID_MAX_LEN], id[CREC_ID_MAX + 8];
		int g = -1;
		if (!json_to_int64(json_get(e, "line"), &line) && !json_to_int64(json_get(e, "qty"), &qty) && qty > 0) {
			int lg = leg_of_line(o, root, line, sku, wid);
			g = !goods_back ? lg
			    : lg >= 0 && !fld_doc_str(e, "leg_id", leg_id, sizeof(leg_id)) ? leg_index(o, leg_id)
										       : -1;
		}
		if (g < 0) {
			rc = -1;
			break;
		}
		const struct leg_track *t = leg_track_get(sh, o->legs[g].leg_id);
		snprintf(id, sizeof(id), "%s.X%d.%lld", return_id, g + 1, (long long)line);
		struct booking b = {.id = id, .delivered_at = t && t->delivered_at[0] ? t->delivered_at : now,
				    .booked_at = now, .period = period, .late = 0,
				    .entry = goods_back ? CE_RETURN : CE_REFUND, .return_id = return_id, .units = qty};
		rc = stage_record(sh, o, root, (unsigned)g, line, sku, wid, &b, minor);
	}
	json_doc_free(d);
	return rc;
}

/* ---- reading ------------------------------------------------------------------------------ */

/* GET /v1/orders/{id}/compliance: the order's register records the caller
 * may see (the platform and the seller all; a partner those of its legs). */
static void compliance_read(struct api_ctx *c)
{
	const struct order *o = order_visible(c);
	if (!o || api_read_row(c))
		return;
	c->rs->status = 200;
	jw_obj_begin(&c->w);
	jw_kstr(&c->w, "order_id", o->row.id);
	jw_key(&c->w, "data");
	jw_arr_begin(&c->w);
	for (unsigned g = 0; g < o->n_legs; g++) {
		if (!order_leg_in_view(c, o, g))
			continue;
		char prefix[CREC_ID_MAX];
		int pl = snprintf(prefix, sizeof(prefix), "%s.C%u.", o->row.id, g + 1);
		for (unsigned line = 0; line < QUOTE_MAX_LINES; line++) {
			char id[CREC_ID_MAX];
			snprintf(id, sizeof(id), "%.*s%u", pl, prefix, line);
			const struct row *r = table_get(&c->sh->tables[REC_T_COMPLIANCE], id, strlen(id));
			if (r)
				jw_raw(&c->w, r->doc, r->doc_len);
		}
	}
	/* the corrections of its returns and refunds, in return order */
	for (unsigned n = 1; n <= ORDER_RETURNS_MAX; n++)
		for (unsigned g = 0; g < o->n_legs; g++) {
			if (!order_leg_in_view(c, o, g))
				continue;
			for (unsigned line = 0; line < QUOTE_MAX_LINES; line++) {
				char id[CREC_ID_MAX + 8];
				snprintf(id, sizeof(id), "%s.R%u.X%u.%u", o->row.id, n, g + 1, line);
				const struct row *r = table_get(&c->sh->tables[REC_T_COMPLIANCE], id, strlen(id));
				if (r)
					jw_raw(&c->w, r->doc, r->doc_len);
			}
		}
	jw_arr_end(&c->w);
	jw_obj_end(&c->w);
}

/* "YYYY-MM" with a real month.  0 or -1. */
static int period_ok(const char *p)
{
	return strlen(p) == 7 && p[4] == '-' && p[0] >= '1' && p[0] <= '9' && p[1] >= '0' && p[1] <= '9' &&
			       p[2] >= '0' && p[2] <= '9' && p[3] >= '0' && p[3] <= '9' &&
			       ((p[5] == '0' && p[6] >= '1' && p[6] <= '9') || (p[5] == '1' && p[6] >= '0' && p[6] <= '2'))
		       ? 0
		       : -1;
}

struct decl_sum {
	__int128 records, corrections, units, litres_ul, lpa_e10, excise, vat; /* sums of int64s: no overflow */
};

/* Every sum fits the int64 it is written as. */
static int sums_fit(const struct decl_sum *s)
{
	const __int128 *v[] = {&s->records, &s->units, &s->litres_ul, &s->excise, &s->vat};
	for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (*v[i] > INT64_MAX || *v[i] < INT64_MIN)
			return 0;
	return s->lpa_e10 / 1000000 < INT64_MAX && s->lpa_e10 / 1000000 > INT64_MIN;
}

/* x / 10^6 rounded half-up in magnitude (a month of corrections only is negative). */
static int64_t round_e6(__int128 x)
{
	return (int64_t)(x < 0 ? -((-x + 500000) / 1000000) : (x + 500000) / 1000000);
}

/* GET /v1/compliance/declarations?destination=DE&period=2026-11 (platform). */
static void declarations_read(struct api_ctx *c)
{
	char dest[8] = "", period[16] = "";
	if (api_query(c, "destination", dest, sizeof(dest)) < 0 || strlen(dest) != 2 || dest[0] < 'A' || dest[0] > 'Z' ||
	    dest[1] < 'A' || dest[1] > 'Z')
		api_field_error(c, "destination", "format", "an ISO 3166-1 alpha-2 country (upper case)");
	if (api_query(c, "period", period, sizeof(period)) < 0 || period_ok(period))
		api_field_error(c, "period", "format", "a month, YYYY-MM");
	if (c->n_errs) {
		api_validation_failed(c);
		return;
	}
	if (!c->who.is_platform && !partner_represents(c->sh, c->who.entity_id, dest)) {
		api_error(c, 403, "not_fiscal_representative",
			  "a destination's declarations are the platform's and its fiscal representative's there");
		return;
	}
	if (api_read_row(c))
		return;
	struct decl_sum sum[RD_CAT_COUNT_];
	memset(sum, 0, sizeof(sum));
	char prefix[16], cur[4] = "";
	int pl = snprintf(prefix, sizeof(prefix), "%s|%s|", dest, period);
	struct oidx_iter it;
	struct oidx *x = table_oidx_ext(&c->sh->tables[REC_T_COMPLIANCE]);
	for (int ok = oidx_seek_ge(x, prefix, (uint32_t)pl, &it); ok; ok = oidx_next(&it)) {
		uint32_t kl;
		const char *k = oidx_iter_key(&it, &kl);
		if (kl < (uint32_t)pl || memcmp(k, prefix, (size_t)pl))
			break;
		const struct crec *r = oidx_iter_val(&it);
		struct decl_sum *s = &sum[r->category];
		s->records++;
		s->corrections += r->entry != CE_DELIVERY;
		s->units += r->units;
		s->litres_ul += (__int128)r->units * r->volume_ul;
		s->lpa_e10 += (__int128)r->units * r->volume_ul * r->abv;
		s->excise += r->excise_minor;
		s->vat += r->vat_minor;
		if (!cur[0]) {
			struct json_doc *d = json_parse(r->row.doc, r->row.doc_len, NULL, NULL);
			if (d)
				fld_doc_str(json_root(d), "currency", cur, sizeof(cur));
			json_doc_free(d);
		}
	}
	for (int k = 0; k < RD_CAT_COUNT_; k++)
		if (!sums_fit(&sum[k])) {
			api_error(c, 500, "declaration_too_large", "the month's sums exceed the engine's bounds");
			return;
		}
	char now[32];
	fmt_rfc3339_ms(now, wall_ms());
	int minor = cur[0] ? iso_currency_minor(cur, 3) : 2;
	struct jw *w = &c->w;
	c->rs->status = 200;
	jw_obj_begin(w);
	jw_kstr(w, "destination", dest);
	jw_kstr(w, "period", period);
	jw_kbool(w, "closed", strncmp(period, now, 7) < 0);
	if (cur[0])
		jw_kstr(w, "currency", cur);
	else
		jw_knull(w, "currency");
	jw_key(w, "declarations");
	jw_arr_begin(w);
	for (int k = 0; k < RD_CAT_COUNT_; k++) {
		const struct decl_sum *s = &sum[k];
		if (!s->records)
			continue;
		jw_obj_begin(w);
		jw_kstr(w, "excise_category", rd_category_names[k]);
		jw_kstr(w, "excise_category_code", rd_category_codes[k]);
		jw_kint(w, "records", (int64_t)s->records);
		jw_kint(w, "corrections", (int64_t)s->corrections);
		jw_kint(w, "units", (int64_t)s->units);
		jw_kfixed(w, "litres", (int64_t)s->litres_ul, 6);
		jw_key(w, "litres_pure_alcohol"); /* to 0.1 ml, half-up, once over the month */
		jw_fixed(w, round_e6(s->lpa_e10), 4);
		quote_write_money(w, "excise_due", (int64_t)s->excise, minor);
		quote_write_money(w, "vat_due", (int64_t)s->vat, minor);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

const struct route compliance_routes[] = {
	{HTTP_M_GET, "/v1/orders/{id}/compliance", compliance_read, SC_READ_ORDERS, ACT_READ_ORDERS,
	 "Delivery-register records of the order", 0},
	{HTTP_M_GET, "/v1/compliance/declarations", declarations_read, SC_READ_ORDERS, ACT_READ_ORDERS,
	 "A destination's monthly excise and VAT declaration (platform, the destination's fiscal representative)", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
