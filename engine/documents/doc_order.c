/*
 * doc_order.c -- a document model from an order's JSON (doc_order.h).
 *
 * How it works: one pass reads the whole order into small typed arrays
 * (struct ord: order lines, sources = taxable lines, legs, leg items) and
 * checks that its figures reconcile; a second step builds the one model
 * asked for from those arrays.  Every kind reads and checks the whole
 * order, so a document is never made from an order whose figures do not
 * add up, whichever document is asked for first.
 *
 * Why the consumer invoice groups rows by taxable line: the order prices
 * each order line from each source separately and rounds its VAT once on
 * the sum of that taxable line's rounded components (DESIGN.md 6).  Two
 * taxable lines that both round up give VAT per rate = the sum of the
 * rounded figures, which is not the rate applied once to the summed base
 * (tests/test_doc_order.c shows a real split order where the two differ by
 * a cent).  The invoice must print the order's figures, so the model's
 * rows carry the taxable line as their vat_group and doc_model.c sums per
 * taxable line the same way; V_VAT is checked against the rate x the
 * taxable line's components, rounded once, here.
 *
 * Why the goods row is P_B2B + R_Recruiter + M_Curator: that is the price
 * of the wine the consumer buys from the merchant of record; the split
 * between the originator, the recruiter and the seller is settlement, and
 * the originator's part is printed on the originator's documents.  The
 * platform fee, freight and excise are charges of their own rows, so every
 * amount of the financial breakdown is printed on some document.
 *
 * Apportioning: a source spread over two locations is two legs.  The
 * originator documents of each leg print that leg's share of the source's
 * P_B2B, cut by cumulative quantity (share of the first k units =
 * P x k / Q, half-up), so the shares add up to P_B2B exactly and are
 * p2b x qty exactly whenever P_B2B is p2b x Q (the same currency).
 *
 * Memory: the typed order (struct ord, about 300 KB at the bounds) is one
 * calloc freed before return; nothing else is allocated but the JSON
 * parser's arena.
 */
#include "engine/documents/doc_order.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/iso.h"
#include "engine/documents/i18n.h"
#include "net/json.h"

/* The waterfall components of spec 2.9, in the order the engine writes them. */
enum { C_P, C_R, C_M, C_F, C_C, C_E, C_V, COMP_N };
static const char *const comp_names[COMP_N] = {"P_B2B",	    "R_Recruiter", "M_Curator", "F_Platform",
					       "C_Freight", "E_Excise",	   "V_VAT"};

/* An order line. */
struct oline {
	char wine_id[DOC_ID_MAX];
	char sku[DOC_ID_MAX];
	int64_t qty;
	int box_units;                  /* 6 or 12 */
	int vat_bp;                     /* the VAT rate of its tax_breakdown */
	int64_t tb_vat, tb_taxable;     /* tax_breakdown vat: amount, taxable_amount */
	int64_t tb_excise;              /* tax_breakdown excise amount (0 when none) */
	char excise_code[DOC_CODE_MAX]; /* tax_breakdown excise_tax_category */
	char hs_code[DOC_CODE_MAX];     /* tax_breakdown hs_tariff_code */
	struct doc_order_wine w;        /* the catalogue's particulars (ctx->wine) */
};

/* A taxable line: one order line from one offer (a source). */
struct osrc {
	int line;
	char offer[DOC_ID_MAX];
	char originator[DOC_ID_MAX];
	int64_t qty;
	int64_t p2b;                    /* minor units of the p2b currency */
	int p2b_same;                   /* the p2b currency is the order's */
	int64_t comp[COMP_N];
	unsigned have;                  /* bit c: component c was listed */
	int first_leg;                  /* -1 until a leg carries it */
};

struct oleg {
	char id[DOC_ID_MAX], offer[DOC_ID_MAX], originator[DOC_ID_MAX], fulfiller[DOC_ID_MAX];
	char location[DOC_ID_MAX];
};

struct oitem {
	int leg, line, src;
	int64_t qty;
};

struct ord {
	char id[DOC_ID_MAX], currency[4], dest[3];
	int minor;
	struct doc_date created;
	char seller_id[DOC_ID_MAX];
	char seller_name[DOC_STR_MAX];
	struct doc_party consumer;
	int n_lines, n_src, n_legs, n_items;
	struct oline lines[DOC_LINES_MAX];
	struct osrc src[DOC_LINES_MAX];
	struct oleg legs[DOC_LEGS_MAX];
	struct oitem items[DOC_PICKS_MAX];
	int64_t total;                  /* financial_breakdown.total */
	char *err;
	size_t errlen;
};

/* printf into the error; always -1 so callers can `return fail(...)`. */
__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	if (errlen > 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

#define FAIL(o, ...) fail((o)->err, (o)->errlen, __VA_ARGS__)

/* ---- JSON members ------------------------------------------------------ */

/* String member key of obj into out[cap]: 0, or -1 with "<path>.<key>: ..."
 * when absent (and required), not a string, empty (and required), longer
 * than cap - 1 bytes or holding a NUL. */
static int get_str(struct ord *o, const struct json_value *obj, const char *path, const char *key,
		   char *out, size_t cap, int required)
{
	const struct json_value *v = json_get(obj, key);
	out[0] = '\0';
	if (!v || v->type == JSON_NULL) {
		if (required)
			return FAIL(o, "%s.%s: missing", path, key);
		return 0;
	}
	if (v->type != JSON_STRING)
		return FAIL(o, "%s.%s: not a string", path, key);
	if (v->len >= cap || strlen(v->u.str) != v->len)
		return FAIL(o, "%s.%s: longer than %zu bytes", path, key, cap - 1);
	if (required && v->len == 0)
		return FAIL(o, "%s.%s: empty", path, key);
	memcpy(out, v->u.str, (size_t)v->len + 1);
	return 0;
}

/* Integer member key of obj in lo..hi. */
static int get_int(struct ord *o, const struct json_value *obj, const char *path, const char *key,
		   int64_t lo, int64_t hi, int64_t *out)
{
	const struct json_value *v = json_get(obj, key);
	if (!v)
		return FAIL(o, "%s.%s: missing", path, key);
	if (json_to_int64(v, out))
		return FAIL(o, "%s.%s: not an integer", path, key);
	if (*out < lo || *out > hi)
		return FAIL(o, "%s.%s: %lld is outside %lld..%lld", path, key, (long long)*out,
			    (long long)lo, (long long)hi);
	return 0;
}

/* Money member key of obj: exact decimal with at most `minor` fraction
 * digits, 0..DOC_AMOUNT_MAX minor units. */
static int get_money(struct ord *o, const struct json_value *obj, const char *path, const char *key,
		     int minor, int64_t *out)
{
	const struct json_value *v = json_get(obj, key);
	if (!v)
		return FAIL(o, "%s.%s: missing", path, key);
	if (json_to_fixed(v, (unsigned)minor, out))
		return FAIL(o, "%s.%s: not an amount with at most %d decimals", path, key, minor);
	if (*out < 0 || *out > DOC_AMOUNT_MAX)
		return FAIL(o, "%s.%s: outside 0..%lld minor units", path, key, DOC_AMOUNT_MAX);
	return 0;
}

/* Array member key of obj with 1..max elements (min 0 when empty_ok). */
static const struct json_value *get_arr(struct ord *o, const struct json_value *obj, const char *path,
					const char *key, int max, int empty_ok)
{
	const struct json_value *v = json_get(obj, key);
	if (!v || v->type != JSON_ARRAY) {
		FAIL(o, "%s.%s: missing or not an array", path, key);
		return NULL;
	}
	if (v->len == 0 && !empty_ok) {
		FAIL(o, "%s.%s: empty", path, key);
		return NULL;
	}
	if (v->len > (uint32_t)max) {
		FAIL(o, "%s.%s: %u entries, more than %d", path, key, v->len, max);
		return NULL;
	}
	return v;
}

static const struct json_value *get_obj(struct ord *o, const struct json_value *obj, const char *path,
					const char *key)
{
	const struct json_value *v = json_get(obj, key);
	if (!v || v->type != JSON_OBJECT) {
		FAIL(o, "%s.%s: missing or not an object", path, key);
		return NULL;
	}
	return v;
}

/* "YYYY-MM-DD..." of an RFC 3339 time. */
static int parse_date(const char *s, struct doc_date *d)
{
	for (int i = 0; i < 10; i++)
		if (i == 4 || i == 7 ? s[i] != '-' : (s[i] < '0' || s[i] > '9'))
			return -1;
	d->year = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
	d->month = (s[5] - '0') * 10 + (s[6] - '0');
	d->day = (s[8] - '0') * 10 + (s[9] - '0');
	return 0;
}

/* a x b / c rounded half-up, all non-negative, c > 0. */
static int64_t muldiv(int64_t a, int64_t b, int64_t c)
{
	__int128 p = (__int128)a * b;
	return (int64_t)((p + c / 2) / c);
}

/* ---- reading the order ------------------------------------------------- */

static int read_consumer(struct ord *o, const struct json_value *root)
{
	const struct json_value *c = get_obj(o, root, "order", "consumer");
	if (!c)
		return -1;
	struct doc_party *p = &o->consumer;
	char cc[8];
	if (get_str(o, c, "consumer", "name", p->name, sizeof p->name, 1))
		return -1;
	const struct json_value *a = get_obj(o, c, "consumer", "address");
	if (!a)
		return -1;
	char city[DOC_STR_MAX], pc[32];
	if (get_str(o, a, "consumer.address", "line1", p->address[0], sizeof p->address[0], 1) ||
	    get_str(o, a, "consumer.address", "line2", p->address[1], sizeof p->address[1], 0) ||
	    get_str(o, a, "consumer.address", "city", city, sizeof city, 1) ||
	    get_str(o, a, "consumer.address", "postal_code", pc, sizeof pc, 0) ||
	    get_str(o, a, "consumer.address", "country", cc, sizeof cc, 0))
		return -1;
	int k = p->address[1][0] ? 2 : 1;
	if ((size_t)snprintf(p->address[k], sizeof p->address[k], "%s%s%s", pc, pc[0] ? " " : "", city) >=
	    sizeof p->address[k])
		return FAIL(o, "consumer.address: postal code and city longer than %d bytes", DOC_STR_MAX - 1);
	if (!cc[0] && get_str(o, c, "consumer", "country", cc, sizeof cc, 0))
		return -1;
	const char *country = cc[0] ? cc : o->dest;
	if (strlen(country) != 2 || !iso_country_valid(country, 2))
		return FAIL(o, "consumer.country: not an ISO 3166 alpha-2 code");
	memcpy(p->country, country, 3);
	return 0;
}

static int read_lines(struct ord *o, const struct json_value *root, const struct doc_order_ctx *ctx)
{
	const struct json_value *ls = get_arr(o, root, "order", "lines", DOC_LINES_MAX, 0);
	if (!ls)
		return -1;
	o->n_lines = (int)ls->len;
	for (int i = 0; i < o->n_lines; i++) {
		const struct json_value *v = &ls->u.items[i];
		struct oline *l = &o->lines[i];
		char path[48];
		int64_t x;
		snprintf(path, sizeof path, "lines[%d]", i);
		if (v->type != JSON_OBJECT)
			return FAIL(o, "%s: not an object", path);
		if (json_get(v, "line") && (get_int(o, v, path, "line", 0, DOC_LINES_MAX, &x) || x != i))
			return o->err[0] ? -1 : FAIL(o, "%s.line: not %d", path, i);
		if (get_str(o, v, path, "wine_id", l->wine_id, sizeof l->wine_id, 1) ||
		    get_str(o, v, path, "sku", l->sku, sizeof l->sku, 0) ||
		    get_int(o, v, path, "qty", 1, DOC_QTY_MAX, &l->qty) ||
		    get_int(o, v, path, "box_units", 6, 12, &x))
			return -1;
		if (x != 6 && x != 12)
			return FAIL(o, "%s.box_units: %lld is not 6 or 12", path, (long long)x);
		l->box_units = (int)x;
		if (!l->sku[0])
			memcpy(l->sku, l->wine_id, sizeof l->sku);
		const struct json_value *tb = get_arr(o, v, path, "tax_breakdown", 16, 0);
		if (!tb)
			return -1;
		int vat = 0;
		for (uint32_t k = 0; k < tb->len; k++) {
			const struct json_value *t = &tb->u.items[k];
			char tp[80], tax[16];
			snprintf(tp, sizeof tp, "%s.tax_breakdown[%u]", path, k);
			if (get_str(o, t, tp, "tax", tax, sizeof tax, 1))
				return -1;
			if (!strcmp(tax, "vat")) {
				int64_t bp;
				const struct json_value *r = json_get(t, "rate_percent");
				if (!r || json_to_fixed(r, 2, &bp) || bp < 0 || bp > DOC_VAT_RATE_MAX)
					return FAIL(o, "%s.rate_percent: missing, or not a percentage 0..100 with at most 2 decimals", tp);
				l->vat_bp = (int)bp;
				if (get_money(o, t, tp, "amount", o->minor, &l->tb_vat) ||
				    get_money(o, t, tp, "taxable_amount", o->minor, &l->tb_taxable))
					return -1;
				vat++;
			} else if (!strcmp(tax, "excise")) {
				if (get_money(o, t, tp, "amount", o->minor, &l->tb_excise) ||
				    get_str(o, t, tp, "excise_tax_category", l->excise_code, sizeof l->excise_code, 0) ||
				    get_str(o, t, tp, "hs_tariff_code", l->hs_code, sizeof l->hs_code, 0))
					return -1;
			}
		}
		if (vat != 1)
			return FAIL(o, "%s.tax_breakdown: %d vat entries, expected exactly one", path, vat);
		if (ctx->wine(ctx->arg, l->wine_id, &l->w))
			return FAIL(o, "%s.wine_id: %s is unknown to the catalogue (ctx.wine)", path, l->wine_id);
		if (!l->w.cn_code[0])
			memcpy(l->w.cn_code, l->hs_code, sizeof l->w.cn_code);
		if (!l->w.excise_code[0])
			memcpy(l->w.excise_code, l->excise_code, sizeof l->w.excise_code);
	}
	return 0;
}

/* The source (line, offer), or -1. */
static int find_src(const struct ord *o, int64_t line, const char *offer)
{
	for (int s = 0; s < o->n_src; s++)
		if (o->src[s].line == line && !strcmp(o->src[s].offer, offer))
			return s;
	return -1;
}

static int read_sourcing(struct ord *o, const struct json_value *root)
{
	const struct json_value *sg = get_obj(o, root, "order", "sourcing");
	if (!sg)
		return -1;
	const struct json_value *ss = get_arr(o, sg, "sourcing", "source", DOC_LINES_MAX, 0);
	if (!ss)
		return -1;
	for (uint32_t k = 0; k < ss->len; k++) {
		const struct json_value *v = &ss->u.items[k];
		char path[48], cur[4] = "";
		int64_t line;
		snprintf(path, sizeof path, "sourcing.source[%u]", k);
		struct osrc *s = &o->src[o->n_src];
		*s = (struct osrc){.first_leg = -1};
		if (get_int(o, v, path, "line", 0, o->n_lines - 1, &line) ||
		    get_str(o, v, path, "offer_id", s->offer, sizeof s->offer, 1) ||
		    get_str(o, v, path, "originator_id", s->originator, sizeof s->originator, 1) ||
		    get_int(o, v, path, "qty", 1, DOC_QTY_MAX, &s->qty) ||
		    get_str(o, v, path, "p2b_currency", cur, sizeof cur, 0))
			return -1;
		if (!cur[0])
			memcpy(cur, o->currency, sizeof cur);
		int pm = iso_currency_minor(cur, strlen(cur));
		if (pm < 0)
			return FAIL(o, "%s.p2b_currency: not an ISO 4217 code", path);
		if (get_money(o, v, path, "p2b", pm, &s->p2b))
			return -1;
		s->p2b_same = !strcmp(cur, o->currency);
		s->line = (int)line;
		if (find_src(o, line, s->offer) >= 0)
			return FAIL(o, "%s: line %lld from offer %s listed twice", path, (long long)line, s->offer);
		o->n_src++;
	}
	for (int i = 0; i < o->n_lines; i++) {
		int64_t q = 0;
		for (int s = 0; s < o->n_src; s++)
			q += o->src[s].line == i ? o->src[s].qty : 0;
		if (q != o->lines[i].qty)
			return FAIL(o, "sourcing.source: the sources of line %d hold %lld units, the line %lld", i,
				    (long long)q, (long long)o->lines[i].qty);
	}
	return 0;
}

static int read_legs(struct ord *o, const struct json_value *root)
{
	const struct json_value *fs = get_arr(o, root, "order", "fulfillments", DOC_LEGS_MAX, 0);
	if (!fs)
		return -1;
	o->n_legs = (int)fs->len;
	for (int g = 0; g < o->n_legs; g++) {
		const struct json_value *v = &fs->u.items[g];
		struct oleg *l = &o->legs[g];
		char path[48];
		snprintf(path, sizeof path, "fulfillments[%d]", g);
		if (get_str(o, v, path, "leg_id", l->id, sizeof l->id, 1) ||
		    get_str(o, v, path, "offer_id", l->offer, sizeof l->offer, 1) ||
		    get_str(o, v, path, "originator_id", l->originator, sizeof l->originator, 1) ||
		    get_str(o, v, path, "fulfiller_id", l->fulfiller, sizeof l->fulfiller, 1) ||
		    get_str(o, v, path, "location_id", l->location, sizeof l->location, 1))
			return -1;
		for (int h = 0; h < g; h++)
			if (!strcmp(o->legs[h].id, l->id))
				return FAIL(o, "%s.leg_id: %s repeats fulfillments[%d]", path, l->id, h);
		const struct json_value *its = get_arr(o, v, path, "items", DOC_PICKS_MAX, 0);
		if (!its)
			return -1;
		for (uint32_t k = 0; k < its->len; k++) {
			const struct json_value *it = &its->u.items[k];
			char ip[80], offer[DOC_ID_MAX];
			int64_t line, qty;
			snprintf(ip, sizeof ip, "%s.items[%u]", path, k);
			if (get_int(o, it, ip, "line", 0, o->n_lines - 1, &line) ||
			    get_int(o, it, ip, "qty", 1, DOC_QTY_MAX, &qty) ||
			    get_str(o, it, ip, "offer_id", offer, sizeof offer, 0))
				return -1;
			if (offer[0] && strcmp(offer, l->offer))
				return FAIL(o, "%s.offer_id: %s is not the leg's offer %s", ip, offer, l->offer);
			int s = find_src(o, line, l->offer);
			if (s < 0)
				return FAIL(o, "%s: no source of line %lld from offer %s", ip, (long long)line, l->offer);
			if (strcmp(o->src[s].originator, l->originator))
				return FAIL(o, "%s.originator_id: %s, but the source's originator is %s", path,
					    l->originator, o->src[s].originator);
			if (o->n_items == DOC_PICKS_MAX)
				return FAIL(o, "fulfillments: more than %d items in all", DOC_PICKS_MAX);
			o->items[o->n_items++] = (struct oitem){.leg = g, .line = (int)line, .src = s, .qty = qty};
			if (o->src[s].first_leg < 0)
				o->src[s].first_leg = g;
		}
	}
	for (int s = 0; s < o->n_src; s++) {
		int64_t q = 0;
		for (int k = 0; k < o->n_items; k++)
			q += o->items[k].src == s ? o->items[k].qty : 0;
		if (q != o->src[s].qty)
			return FAIL(o, "fulfillments: the legs carry %lld units of line %d from offer %s, the source %lld",
				    (long long)q, o->src[s].line, o->src[s].offer, (long long)o->src[s].qty);
	}
	return 0;
}

static int read_breakdown(struct ord *o, const struct json_value *root)
{
	const struct json_value *fb = get_obj(o, root, "order", "financial_breakdown");
	if (!fb)
		return -1;
	char cur[4];
	if (get_str(o, fb, "financial_breakdown", "currency", cur, sizeof cur, 1))
		return -1;
	if (strcmp(cur, o->currency))
		return FAIL(o, "financial_breakdown.currency: %s is not the order's %s", cur, o->currency);
	const struct json_value *ls = get_arr(o, fb, "financial_breakdown", "lines", DOC_LINES_MAX * COMP_N, 0);
	if (!ls || get_money(o, fb, "financial_breakdown", "total", o->minor, &o->total))
		return -1;
	__int128 sum = 0;
	for (uint32_t k = 0; k < ls->len; k++) {
		const struct json_value *v = &ls->u.items[k];
		char path[64], comp[24], offer[DOC_ID_MAX];
		int64_t line, amount;
		snprintf(path, sizeof path, "financial_breakdown.lines[%u]", k);
		if (get_str(o, v, path, "component", comp, sizeof comp, 1) ||
		    get_str(o, v, path, "offer_id", offer, sizeof offer, 1) ||
		    get_int(o, v, path, "line", 0, o->n_lines - 1, &line) ||
		    get_money(o, v, path, "amount", o->minor, &amount))
			return -1;
		int c = 0;
		while (c < COMP_N && strcmp(comp_names[c], comp))
			c++;
		if (c == COMP_N)
			return FAIL(o, "%s.component: %s is not a component of spec 2.9", path, comp);
		int s = find_src(o, line, offer);
		if (s < 0)
			return FAIL(o, "%s: line %lld from offer %s is not a source of the order", path,
				    (long long)line, offer);
		if (o->src[s].have & (1u << c))
			return FAIL(o, "%s: %s of line %lld from offer %s listed twice", path, comp, (long long)line,
				    offer);
		o->src[s].have |= 1u << c;
		o->src[s].comp[c] = amount;
		sum += amount;
	}
	if (sum != o->total)
		return FAIL(o, "financial_breakdown.total: %lld minor units, the components add up to %lld",
			    (long long)o->total, (long long)sum);
	const struct json_value *t = json_get(root, "total");
	int64_t top;
	if (t && (get_money(o, root, "order", "total", o->minor, &top) || top != o->total))
		return o->err[0] ? -1 : FAIL(o, "order.total: not financial_breakdown.total");
	return 0;
}

/* The figures reconcile: each taxable line's VAT, each line's tax
 * breakdown, each originator's settlement amount. */
static int reconcile(struct ord *o, const struct json_value *root)
{
	for (int s = 0; s < o->n_src; s++) {
		const struct osrc *x = &o->src[s];
		const struct oline *l = &o->lines[x->line];
		if (!(x->have & (1u << C_P)) || !(x->have & (1u << C_V)))
			return FAIL(o, "financial_breakdown: line %d from offer %s lacks %s", x->line, x->offer,
				    x->have & (1u << C_P) ? "V_VAT" : "P_B2B");
		int64_t base = 0;
		for (int c = C_P; c < C_V; c++)
			base += x->comp[c];
		int64_t want = doc_vat_of(base, l->vat_bp);
		if (x->comp[C_V] != want)
			return FAIL(o,
				    "financial_breakdown: V_VAT of line %d from offer %s is %lld, not %d bp x %lld rounded once (%lld)",
				    x->line, x->offer, (long long)x->comp[C_V], l->vat_bp, (long long)base,
				    (long long)want);
		if (x->p2b_same && (__int128)x->p2b * x->qty != x->comp[C_P])
			return FAIL(o, "financial_breakdown: P_B2B of line %d from offer %s is %lld, not p2b x qty (%lld)",
				    x->line, x->offer, (long long)x->comp[C_P], (long long)((__int128)x->p2b * x->qty));
	}
	for (int i = 0; i < o->n_lines; i++) {
		const struct oline *l = &o->lines[i];
		int64_t vat = 0, base = 0, exc = 0;
		for (int s = 0; s < o->n_src; s++) {
			if (o->src[s].line != i)
				continue;
			for (int c = C_P; c < C_V; c++)
				base += o->src[s].comp[c];
			vat += o->src[s].comp[C_V];
			exc += o->src[s].comp[C_E];
		}
		if (vat != l->tb_vat)
			return FAIL(o, "lines[%d].tax_breakdown: VAT %lld is not the sum of its sources' V_VAT (%lld)", i,
				    (long long)l->tb_vat, (long long)vat);
		if (base != l->tb_taxable)
			return FAIL(o, "lines[%d].tax_breakdown: taxable_amount %lld is not the sum of its sources' components (%lld)",
				    i, (long long)l->tb_taxable, (long long)base);
		if (exc != l->tb_excise)
			return FAIL(o, "lines[%d].tax_breakdown: excise %lld is not the sum of its sources' E_Excise (%lld)",
				    i, (long long)l->tb_excise, (long long)exc);
	}
	const struct json_value *ss = get_obj(o, root, "order", "settlement_split");
	if (!ss)
		return -1;
	const struct json_value *ps = get_arr(o, ss, "settlement_split", "parties", 4 * DOC_LINES_MAX, 0);
	if (!ps)
		return -1;
	for (int s = 0; s < o->n_src; s++) {
		const char *who = o->src[s].originator;
		int64_t want = 0, got = -1;
		int seen = 0;
		for (int t = 0; t < s && !seen; t++)
			seen = !strcmp(o->src[t].originator, who);
		if (seen)
			continue;
		for (int t = s; t < o->n_src; t++)
			want += strcmp(o->src[t].originator, who) ? 0 : o->src[t].comp[C_P];
		for (uint32_t k = 0; k < ps->len; k++) {
			const struct json_value *p = &ps->u.items[k];
			char path[48], id[DOC_ID_MAX], role[24];
			snprintf(path, sizeof path, "settlement_split.parties[%u]", k);
			if (get_str(o, p, path, "partner_id", id, sizeof id, 1) ||
			    get_str(o, p, path, "role", role, sizeof role, 1))
				return -1;
			if (!strcmp(id, who) && !strcmp(role, "originator") &&
			    get_money(o, p, path, "amount", o->minor, &got))
				return -1;
		}
		if (got != want)
			return FAIL(o, "settlement_split: originator %s is paid %lld, its sources' P_B2B is %lld", who,
				    (long long)got, (long long)want);
	}
	return 0;
}

static int read_order(struct ord *o, const char *text, size_t len, const struct doc_order_ctx *ctx)
{
	if (len > DOC_ORDER_JSON_MAX)
		return FAIL(o, "order: %zu bytes, more than %zu", len, DOC_ORDER_JSON_MAX);
	struct json_limits lim = {.max_bytes = DOC_ORDER_JSON_MAX};
	struct json_error je;
	struct json_doc *doc = json_parse(text, len, &lim, &je);
	if (!doc)
		return FAIL(o, "order: not JSON (byte %zu: %s)", je.offset, je.msg);
	const struct json_value *root = json_root(doc);
	int rc = -1;
	char created[40];
	const struct json_value *seller;
	if (root->type != JSON_OBJECT) {
		FAIL(o, "order: not a JSON object");
		goto out;
	}
	if (get_str(o, root, "order", "order_id", o->id, sizeof o->id, 1) ||
	    get_str(o, root, "order", "currency", o->currency, sizeof o->currency, 1) ||
	    get_str(o, root, "order", "destination_country", o->dest, sizeof o->dest, 1) ||
	    get_str(o, root, "order", "created_at", created, sizeof created, 1))
		goto out;
	o->minor = iso_currency_minor(o->currency, strlen(o->currency));
	if (o->minor < 0) {
		FAIL(o, "order.currency: %s is not an ISO 4217 code", o->currency);
		goto out;
	}
	if (!iso_country_valid(o->dest, strlen(o->dest))) {
		FAIL(o, "order.destination_country: %s is not an ISO 3166 alpha-2 code", o->dest);
		goto out;
	}
	if (parse_date(created, &o->created)) {
		FAIL(o, "order.created_at: not an RFC 3339 time");
		goto out;
	}
	if (!(seller = get_obj(o, root, "order", "seller")) ||
	    get_str(o, seller, "seller", "partner_id", o->seller_id, sizeof o->seller_id, 1) ||
	    get_str(o, seller, "seller", "legal_name", o->seller_name, sizeof o->seller_name, 0))
		goto out;
	if (read_consumer(o, root) || read_lines(o, root, ctx) || read_sourcing(o, root) ||
	    read_legs(o, root) || read_breakdown(o, root) || reconcile(o, root))
		goto out;
	rc = 0;
out:
	json_doc_free(doc);
	return rc;
}

/* ---- building the model ------------------------------------------------ */

const char *doc_order_lang(const char *country)
{
	static const char *const map[][2] = {
		{"AT", "de"}, {"DE", "de"}, {"LI", "de"}, {"BE", "fr"}, {"FR", "fr"}, {"LU", "fr"},
		{"MC", "fr"}, {"IT", "it"}, {"SM", "it"}, {"ES", "es"}, {"PT", "pt"}, {"NL", "nl"},
		{"PL", "pl"}, {"SE", "sv"}, {"DK", "da"}, {"FI", "fi"}, {"CZ", "cs"}, {"GR", "el"},
		{"CY", "el"}, {"NO", "no"},
	};
	for (size_t i = 0; country && i < sizeof map / sizeof map[0]; i++)
		if (!strcmp(map[i][0], country))
			return map[i][1];
	return "en";
}

int doc_order_sscc(const char *gs1_prefix, int extension, const char *order_id, int leg,
		   char out[DOC_SSCC_LEN + 1])
{
	size_t p = gs1_prefix ? strlen(gs1_prefix) : 0;
	out[0] = '\0';
	if (p < 7 || p > 10 || extension < 0 || extension > 9 || leg < 0 || leg > 99 || !order_id)
		return -1;
	for (size_t i = 0; i < p; i++)
		if (gs1_prefix[i] < '0' || gs1_prefix[i] > '9')
			return -1;
	uint64_t h = 1469598103934665603ULL; /* FNV-1a 64 */
	for (const unsigned char *c = (const unsigned char *)order_id; *c; c++)
		h = (h ^ *c) * 1099511628211ULL;
	int sd = 16 - (int)p;   /* serial reference digits: 6..9 */
	uint64_t mod = 1;
	for (int i = 0; i < sd - 2; i++)
		mod *= 10;
	uint64_t serial = (h % mod) * 100 + (uint64_t)leg;
	char s17[18];
	snprintf(s17, sizeof s17, "%d%s%0*llu", extension, gs1_prefix, sd, (unsigned long long)serial);
	int cd = doc_gs1_check_digit(s17);
	snprintf(out, DOC_SSCC_LEN + 1, "%s%d", s17, cd);
	return 0;
}

/* ctx->party(id) into *out, or -1 naming the field. */
static int party_of(struct ord *o, const struct doc_order_ctx *ctx, const char *id, const char *what,
		    struct doc_party *out)
{
	*out = (struct doc_party){0};
	if (ctx->party(ctx->arg, id, out))
		return FAIL(o, "%s: partner %s is unknown (ctx.party)", what, id);
	return 0;
}

static int fill_legs(struct ord *o, const struct doc_order_ctx *ctx, struct doc_model *m)
{
	m->n_legs = o->n_legs;
	for (int g = 0; g < o->n_legs; g++) {
		const struct oleg *l = &o->legs[g];
		struct doc_leg *d = &m->legs[g];
		char what[64];
		memcpy(d->id, l->id, sizeof d->id);
		snprintf(what, sizeof what, "fulfillments[%d].originator_id", g);
		if (party_of(o, ctx, l->originator, what, &d->originator))
			return -1;
		snprintf(what, sizeof what, "fulfillments[%d].fulfiller_id", g);
		if (party_of(o, ctx, l->fulfiller, what, &d->fulfiller))
			return -1;
		if (doc_order_sscc(ctx->gs1_prefix, ctx->sscc_extension, o->id, g, d->sscc))
			return FAIL(o, "ctx.gs1_prefix: not 7 to 10 digits, or ctx.sscc_extension not 0..9");
		d->pickup = (struct doc_window){m->supply_date, 0, 23 * 60 + 59};
		if (ctx->pickup && ctx->pickup(ctx->arg, l->id, &d->pickup))
			return FAIL(o, "fulfillments[%d]: no pickup window for leg %s (ctx.pickup)", g, l->id);
	}
	return 0;
}

/* Picks (one per leg item) and boxes (per leg and box size: each item in
 * boxes of its line's box_units, rounded up). */
static int fill_picks(struct ord *o, const struct doc_order_ctx *ctx, struct doc_model *m)
{
	for (int k = 0; k < o->n_items; k++) {
		const struct oitem *it = &o->items[k];
		const struct oline *l = &o->lines[it->line];
		struct doc_pick *p = &m->picks[m->n_picks++];
		p->leg = it->leg;
		p->quantity = it->qty;
		memcpy(p->sku, l->sku, sizeof p->sku);
		memcpy(p->description, l->w.wine.name, sizeof p->description);
		const char *loc = o->legs[it->leg].location;
		if (!ctx->location || ctx->location(ctx->arg, loc, p->location, sizeof p->location))
			snprintf(p->location, sizeof p->location, "%s", loc);
	}
	for (int g = 0; g < o->n_legs; g++)
		for (int b = 6; b <= 12; b += 6) {
			int64_t n = 0;
			for (int k = 0; k < o->n_items; k++)
				if (o->items[k].leg == g && o->lines[o->items[k].line].box_units == b)
					n += (o->items[k].qty + b - 1) / b;
			if (n == 0)
				continue;
			if (m->n_boxes == DOC_BOXES_MAX)
				return FAIL(o, "fulfillments: more than %d box rows", DOC_BOXES_MAX);
			m->boxes[m->n_boxes++] = (struct doc_box){.leg = g, .box_units = b, .count = (int)n};
		}
	return 0;
}

/* A new row, or NULL (with the error) past DOC_LINES_MAX. */
static struct doc_line *row(struct ord *o, struct doc_model *m, int rows_needed)
{
	if (m->n_lines == DOC_LINES_MAX) {
		FAIL(o, "lines: the %s needs %d rows, more than DOC_LINES_MAX (%d)", doc_kind_names[m->kind],
		     rows_needed, DOC_LINES_MAX);
		return NULL;
	}
	struct doc_line *d = &m->lines[m->n_lines++];
	*d = (struct doc_line){0};
	return d;
}

/* A goods row of order line `line`: the catalogue's particulars. */
static void goods(const struct oline *l, struct doc_line *d, int leg, int64_t qty)
{
	d->wine = l->w.wine;
	memcpy(d->description, l->w.wine.name, sizeof d->description);
	memcpy(d->excise_code, l->w.excise_code, sizeof d->excise_code);
	memcpy(d->cn_code, l->w.cn_code, sizeof d->cn_code);
	d->leg = leg;
	d->quantity = qty;
}

/* The consumer invoice: per taxable line a goods row and its charges. */
static int invoice_rows(struct ord *o, struct doc_model *m, int lang)
{
	int need = 0;
	for (int s = 0; s < o->n_src; s++)
		need += 1 + (o->src[s].comp[C_F] != 0) + (o->src[s].comp[C_C] != 0) + (o->src[s].comp[C_E] != 0);
	static const struct {
		int comp;
		enum i18n_key label;
	} charges[3] = {{C_F, I18N_SERVICE_FEE}, {C_C, I18N_FREIGHT}, {C_E, I18N_EXCISE_DUTY}};
	for (int s = 0; s < o->n_src; s++) {
		const struct osrc *x = &o->src[s];
		const struct oline *l = &o->lines[x->line];
		struct doc_line *d = row(o, m, need);
		if (!d)
			return -1;
		goods(l, d, x->first_leg, x->qty);
		d->net = x->comp[C_P] + x->comp[C_R] + x->comp[C_M];
		d->unit_price = muldiv(d->net, 1, x->qty);
		d->vat_rate_bp = l->vat_bp;
		d->vat_group = s + 1;
		for (int c = 0; c < 3; c++) {
			if (x->comp[charges[c].comp] == 0)
				continue;
			if (!(d = row(o, m, need)))
				return -1;
			snprintf(d->description, sizeof d->description, "%s \u2014 %s", i18n_label(lang, charges[c].label),
				 l->w.wine.name);
			d->charge = 1;
			d->leg = x->first_leg;
			d->quantity = 1;
			d->net = d->unit_price = x->comp[charges[c].comp];
			d->vat_rate_bp = l->vat_bp;
			d->vat_group = s + 1;
		}
	}
	return 0;
}

/* The originator documents of leg g: each item's share of its source's
 * P_B2B (see the top of the file), at the originator's VAT rate. */
static int originator_rows(struct ord *o, struct doc_model *m, int g, int vat_bp)
{
	for (int k = 0; k < o->n_items; k++) {
		const struct oitem *it = &o->items[k];
		if (it->leg != g)
			continue;
		const struct osrc *x = &o->src[it->src];
		int64_t before = 0;
		for (int j = 0; j < k; j++)
			before += o->items[j].src == it->src ? o->items[j].qty : 0;
		struct doc_line *d = row(o, m, o->n_items);
		if (!d)
			return -1;
		goods(&o->lines[it->line], d, g, it->qty);
		d->net = muldiv(x->comp[C_P], before + it->qty, x->qty) - muldiv(x->comp[C_P], before, x->qty);
		d->unit_price = x->p2b_same ? x->p2b : muldiv(d->net, 1, it->qty);
		d->vat_rate_bp = vat_bp;
	}
	return 0;
}

/* Transport, label, instruction: the goods each leg carries, no amounts. */
static int goods_rows(struct ord *o, struct doc_model *m)
{
	for (int k = 0; k < o->n_items; k++) {
		const struct oitem *it = &o->items[k];
		const struct oline *l = &o->lines[it->line];
		struct doc_line *d = row(o, m, o->n_items);
		if (!d)
			return -1;
		goods(l, d, it->leg, it->qty);
		d->litres_cl = muldiv(it->qty, l->w.wine.volume_ml, 10);
		d->packages = (int)((it->qty + l->box_units - 1) / l->box_units);
	}
	return 0;
}

static int check_ctx(struct ord *o, const struct doc_order_ctx *ctx, enum doc_kind kind)
{
	if (!ctx || !ctx->party || !ctx->wine)
		return FAIL(o, "ctx: the party and wine look-ups are required");
	if (!ctx->series || !ctx->series[0])
		return FAIL(o, "ctx.series: required");
	if ((unsigned)kind >= DOC_KIND_COUNT)
		return FAIL(o, "kind: unknown");
	if (ctx->originator_vat_bp < 0 || ctx->originator_vat_bp > DOC_VAT_RATE_MAX)
		return FAIL(o, "ctx.originator_vat_bp: outside 0..%d", DOC_VAT_RATE_MAX);
	return 0;
}

static int build(struct ord *o, const struct doc_order_ctx *ctx, enum doc_kind kind, int leg,
		 struct doc_model *m)
{
	if (doc_kind_per_leg(kind) ? leg < 0 || leg >= o->n_legs : leg != 0)
		return FAIL(o, "leg: %d is not a leg of the order (%d legs)", leg, o->n_legs);
	const char *lang = ctx->lang ? ctx->lang : doc_order_lang(o->dest);
	int li = i18n_lang_find(lang);
	if (li < 0)
		return FAIL(o, "ctx.lang: %s is not a supported language", lang);
	m->kind = kind;
	m->leg = leg;
	snprintf(m->lang, sizeof m->lang, "%s", lang);
	memcpy(m->currency, o->currency, sizeof m->currency);
	if ((size_t)snprintf(m->series, sizeof m->series, "%s", ctx->series) >= sizeof m->series)
		return FAIL(o, "ctx.series: longer than %d bytes", DOC_CODE_MAX - 1);
	m->number = ctx->number;
	m->issue_date = ctx->issue_date;
	m->supply_date = ctx->supply_date.year ? ctx->supply_date : o->created;
	memcpy(m->order_id, o->id, sizeof m->order_id);
	m->destination = ctx->destination ? ctx->destination : DOC_DEST_DIRECT_DELIVERY;
	if (fill_legs(o, ctx, m) || fill_picks(o, ctx, m))
		return -1;
	m->ship_to = o->consumer;
	switch (kind) {
	case DOC_CONSUMER_INVOICE:
		m->issuer = ctx->platform;
		m->recipient = o->consumer;
		m->ship_to = (struct doc_party){0}; /* the customer's address is the delivery address */
		if (o->seller_name[0])
			memcpy(m->seller_name, o->seller_name, sizeof m->seller_name);
		else {
			struct doc_party s;
			if (party_of(o, ctx, o->seller_id, "seller.partner_id", &s))
				return -1;
			memcpy(m->seller_name, s.name, sizeof m->seller_name);
		}
		if (invoice_rows(o, m, li))
			return -1;
		break;
	case DOC_ORIGINATOR_PROFORMA:
		m->issuer = ctx->platform;
		m->recipient = m->legs[leg].originator;
		m->ship_to = (struct doc_party){0};
		if (originator_rows(o, m, leg, ctx->originator_vat_bp))
			return -1;
		break;
	case DOC_ORIGINATOR_INVOICE:
		m->issuer = m->legs[leg].originator;
		m->recipient = ctx->platform;
		m->ship_to = (struct doc_party){0};
		if (originator_rows(o, m, leg, ctx->originator_vat_bp))
			return -1;
		break;
	case DOC_FULFILLER_INSTRUCTION:
		m->issuer = ctx->platform;
		m->recipient = m->legs[leg].fulfiller;
		if (goods_rows(o, m))
			return -1;
		break;
	case DOC_TRANSPORT_DOCUMENT:
	case DOC_CARRIER_LABEL:
		m->issuer = ctx->platform;
		m->recipient = o->consumer;
		if (goods_rows(o, m))
			return -1;
		break;
	case DOC_KIND_COUNT:
		return FAIL(o, "kind: unknown");
	}
	if (doc_model_sum(m, o->err, o->errlen))
		return -1;
	if (kind == DOC_CONSUMER_INVOICE && m->total_gross != o->total)
		return FAIL(o, "financial_breakdown.total: %lld, the invoice adds up to %lld", (long long)o->total,
			    (long long)m->total_gross);
	if (doc_model_validate(m, o->err, o->errlen))
		return -1;
	return 0;
}

int doc_order_model(const char *order_json, size_t len, const struct doc_order_ctx *ctx,
		    enum doc_kind kind, int leg, struct doc_model *out, char *err, size_t errlen)
{
	char scratch[1];
	if (errlen == 0) {
		err = scratch;
		errlen = sizeof scratch;
	}
	err[0] = '\0';
	memset(out, 0, sizeof *out);
	struct ord *o = calloc(1, sizeof *o);
	if (!o)
		return fail(err, errlen, "out of memory");
	o->err = err;
	o->errlen = errlen;
	int rc = -1;
	if (!order_json)
		FAIL(o, "order: NULL");
	else if (!check_ctx(o, ctx, kind) && !read_order(o, order_json, len, ctx) && !build(o, ctx, kind, leg, out))
		rc = 0;
	free(o);
	return rc;
}

int doc_order_documents(const char *order_json, size_t len, struct doc_order_doc *out, int cap,
			char *err, size_t errlen)
{
	char scratch[1];
	if (errlen == 0) {
		err = scratch;
		errlen = sizeof scratch;
	}
	err[0] = '\0';
	if (!order_json)
		return fail(err, errlen, "order: NULL");
	if (len > DOC_ORDER_JSON_MAX)
		return fail(err, errlen, "order: %zu bytes, more than %zu", len, DOC_ORDER_JSON_MAX);
	struct json_limits lim = {.max_bytes = DOC_ORDER_JSON_MAX};
	struct json_error je;
	struct json_doc *doc = json_parse(order_json, len, &lim, &je);
	if (!doc)
		return fail(err, errlen, "order: not JSON (byte %zu: %s)", je.offset, je.msg);
	const struct json_value *fs = json_get(json_root(doc), "fulfillments");
	int legs = fs && fs->type == JSON_ARRAY ? (int)(fs->len > DOC_LEGS_MAX ? DOC_LEGS_MAX + 1 : fs->len) : -1;
	json_doc_free(doc);
	if (legs < 1)
		return fail(err, errlen, "order.fulfillments: missing, not an array or empty");
	if (legs > DOC_LEGS_MAX)
		return fail(err, errlen, "order.fulfillments: more than DOC_LEGS_MAX (%d) legs", DOC_LEGS_MAX);
	int n = 2 + 4 * legs;
	if (n > cap)
		return fail(err, errlen, "out: %d documents, room for %d", n, cap);
	static const enum doc_kind per_leg[4] = {DOC_CARRIER_LABEL, DOC_FULFILLER_INSTRUCTION,
						 DOC_ORIGINATOR_PROFORMA, DOC_ORIGINATOR_INVOICE};
	out[0] = (struct doc_order_doc){DOC_CONSUMER_INVOICE, 0};
	out[1] = (struct doc_order_doc){DOC_TRANSPORT_DOCUMENT, 0};
	for (int g = 0; g < legs; g++)
		for (int k = 0; k < 4; k++)
			out[2 + 4 * g + k] = (struct doc_order_doc){per_leg[k], g};
	return n;
}
