/*
 * doc_model.c -- validation and arithmetic of a document model
 * (doc_model.h).
 *
 * Why here and not in the renderer: the renderer trusts its model.  Every
 * bound (string sizes, counts, quantities, amounts) and every sum the
 * printed invoice shows (VAT per taxable line and per rate, totals) is
 * checked once, here, so that a document that would not reconcile is
 * refused with the field that is wrong instead of being printed.  Amounts are bounded by
 * DOC_AMOUNT_MAX so that base x rate and quantity x unit price fit in
 * int64 without overflow; sums use __int128 anyway.
 */
#include "engine/documents/doc_model.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "engine/base/iso.h"
#include "engine/documents/i18n.h"

const char *const doc_kind_names[DOC_KIND_COUNT] = {
	"consumer_invoice",     "transport_document",   "carrier_label",
	"originator_proforma",  "originator_invoice",   "fulfiller_instruction",
};

int doc_kind_per_leg(enum doc_kind k)
{
	return k == DOC_CARRIER_LABEL || k == DOC_ORIGINATOR_PROFORMA ||
	       k == DOC_ORIGINATOR_INVOICE || k == DOC_FULFILLER_INSTRUCTION;
}

int doc_line_printed(const struct doc_model *m, int i)
{
	return !doc_kind_per_leg(m->kind) || m->lines[i].leg == m->leg;
}

int doc_gs1_check_digit(const char *s17)
{
	int sum = 0;
	for (int i = 0; i < 17; i++) {
		if (s17[i] < '0' || s17[i] > '9')
			return -1;
		/* From the right, the digit next to the check digit weighs 3. */
		sum += (s17[i] - '0') * ((17 - i) % 2 ? 3 : 1);
	}
	return (10 - sum % 10) % 10;
}

int64_t doc_vat_of(int64_t base, int rate_bp)
{
	__int128 p = (__int128)base * rate_bp;
	__int128 mag = p < 0 ? -p : p;
	__int128 q = (mag + 5000) / 10000;
	return (int64_t)(p < 0 ? -q : q);
}

/* 1 if printed lines i and j are rows of one taxable line. */
static int same_taxable(const struct doc_model *m, int i, int j)
{
	return i == j || (m->lines[i].vat_group != 0 && m->lines[i].vat_group == m->lines[j].vat_group);
}

int doc_taxable_line(const struct doc_model *m, int i, int64_t *base, int64_t *vat)
{
	if (!doc_line_printed(m, i))
		return 0;
	for (int j = i + 1; j < m->n_lines; j++)
		if (doc_line_printed(m, j) && same_taxable(m, i, j))
			return 0;
	/* Validated nets make this at most DOC_LINES_MAX x DOC_AMOUNT_MAX; an
	 * unvalidated model (doc_model_sum's input) is clamped, never overflows. */
	__int128 b = 0;
	for (int j = 0; j <= i; j++)
		if (doc_line_printed(m, j) && same_taxable(m, i, j))
			b += m->lines[j].net;
	*base = b > INT64_MAX / 2 ? INT64_MAX / 2 : b < -(INT64_MAX / 2) ? -(INT64_MAX / 2) : (int64_t)b;
	*vat = doc_vat_of(*base, m->lines[i].vat_rate_bp);
	return 1;
}

/* The VAT of rate rate_bp: the sum of the VAT of the printed taxable lines
 * at that rate, each rounded once (never the base rounded again). */
static int64_t rate_vat(const struct doc_model *m, int rate_bp)
{
	__int128 sum = 0;
	for (int i = 0; i < m->n_lines; i++) {
		int64_t b, v;
		if (m->lines[i].vat_rate_bp == rate_bp && doc_taxable_line(m, i, &b, &v))
			sum += v;
	}
	return sum > INT64_MAX / 2 ? INT64_MAX / 2 : sum < -(INT64_MAX / 2) ? -(INT64_MAX / 2) : (int64_t)sum;
}

/* printf into err; always -1 so callers can `return fail(...)`. */
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

/* 1 if s is NUL-terminated within cap bytes and is valid UTF-8 without
 * control characters. */
static int str_ok(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);
	if (n == cap)
		return 0;
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		unsigned c = p[i];
		size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
			   : (c & 0xf8) == 0xf0 ? 4 : 0;
		if (len == 0 || i + len > n || (len == 1 && (c < 0x20 || c == 0x7f)))
			return 0;
		if (len == 2 && c < 0xc2)
			return 0; /* overlong */
		for (size_t k = 1; k < len; k++)
			if ((p[i + k] & 0xc0) != 0x80)
				return 0;
		i += len;
	}
	return 1;
}

#define CHECK_STR(field, cap, required, ...)                                        \
	do {                                                                        \
		if (!str_ok((field), (cap)))                                        \
			return fail(err, errlen, __VA_ARGS__);                      \
		if ((required) && (field)[0] == '\0')                               \
			return fail(err, errlen, __VA_ARGS__);                      \
	} while (0)

static int date_ok(const struct doc_date *d)
{
	static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (d->year < 2000 || d->year > 2999 || d->month < 1 || d->month > 12 || d->day < 1)
		return 0;
	int leap = (d->year % 4 == 0 && d->year % 100 != 0) || d->year % 400 == 0;
	int max = d->month == 2 && !leap ? 28 : mdays[d->month - 1];
	return d->day <= max;
}

static int party_ok(const struct doc_party *p, const char *what, int required, char *err,
		    size_t errlen)
{
	if (!required && p->name[0] == '\0')
		return 0;
	CHECK_STR(p->name, sizeof p->name, 1, "%s.name: required, valid UTF-8 under %d bytes",
		  what, DOC_STR_MAX);
	for (int i = 0; i < DOC_ADDR_LINES; i++)
		CHECK_STR(p->address[i], sizeof p->address[i], 0,
			  "%s.address[%d]: valid UTF-8 under %d bytes", what, i, DOC_STR_MAX);
	if (!iso_country_valid(p->country, strnlen(p->country, sizeof p->country)))
		return fail(err, errlen, "%s.country: not an ISO 3166 alpha-2 code", what);
	CHECK_STR(p->vat_id, sizeof p->vat_id, 0, "%s.vat_id: printable, under %d bytes", what,
		  DOC_CODE_MAX);
	CHECK_STR(p->excise_number, sizeof p->excise_number, 0,
		  "%s.excise_number: printable, under %d bytes", what, DOC_CODE_MAX);
	return 0;
}

static int leg_ok(const struct doc_model *m, int i, char *err, size_t errlen)
{
	const struct doc_leg *l = &m->legs[i];
	char what[32];
	CHECK_STR(l->id, sizeof l->id, 1, "legs[%d].id: required, under %d bytes", i, DOC_ID_MAX);
	for (const char *c = l->id; *c; c++)
		if (*c < 0x21 || *c > 0x7e)
			return fail(err, errlen, "legs[%d].id: printable ASCII only", i);
	snprintf(what, sizeof what, "legs[%d].originator", i);
	if (party_ok(&l->originator, what, 1, err, errlen))
		return -1;
	snprintf(what, sizeof what, "legs[%d].fulfiller", i);
	if (party_ok(&l->fulfiller, what, 1, err, errlen))
		return -1;
	if (strnlen(l->sscc, sizeof l->sscc) != DOC_SSCC_LEN ||
	    doc_gs1_check_digit(l->sscc) != l->sscc[17] - '0')
		return fail(err, errlen, "legs[%d].sscc: not 18 digits with a valid GS1 check digit", i);
	const struct doc_window *w = &l->pickup;
	if (!date_ok(&w->date) || w->from_min < 0 || w->from_min > w->to_min || w->to_min > 1439)
		return fail(err, errlen, "legs[%d].pickup: invalid date or window", i);
	return 0;
}

/* The goods particulars of line i (not of a charge row). */
static int goods_ok(const struct doc_model *m, int i, char *err, size_t errlen)
{
	const struct doc_line *l = &m->lines[i];
	const struct doc_wine *w = &l->wine;
	CHECK_STR(w->name, sizeof w->name, 1, "lines[%d].wine.name: required", i);
	CHECK_STR(w->producer, sizeof w->producer, 1, "lines[%d].wine.producer: required", i);
	CHECK_STR(w->origin, sizeof w->origin, 1, "lines[%d].wine.origin: required", i);
	CHECK_STR(w->allergens, sizeof w->allergens, 0, "lines[%d].wine.allergens: invalid", i);
	CHECK_STR(l->excise_code, sizeof l->excise_code, 0, "lines[%d].excise_code: invalid", i);
	CHECK_STR(l->cn_code, sizeof l->cn_code, 0, "lines[%d].cn_code: invalid", i);
	if (w->vintage != 0 && (w->vintage < 1800 || w->vintage > 2999))
		return fail(err, errlen, "lines[%d].wine.vintage: %d is outside 1800..2999", i,
			    w->vintage);
	if (w->abv_centi < 1 || w->abv_centi > 10000)
		return fail(err, errlen, "lines[%d].wine.abv_centi: outside 1..10000", i);
	if (w->volume_ml < 1 || w->volume_ml > 100000)
		return fail(err, errlen, "lines[%d].wine.volume_ml: outside 1..100000", i);
	return 0;
}

static int line_ok(const struct doc_model *m, int i, char *err, size_t errlen)
{
	const struct doc_line *l = &m->lines[i];
	CHECK_STR(l->description, sizeof l->description, 1,
		  "lines[%d].description: required, valid UTF-8 under %d bytes", i, DOC_STR_MAX);
	if (l->charge != 0 && l->charge != 1)
		return fail(err, errlen, "lines[%d].charge: 0 or 1", i);
	if (l->charge && (l->litres_cl != 0 || l->packages != 0))
		return fail(err, errlen, "lines[%d]: a charge has no litres or packages", i);
	if (!l->charge && goods_ok(m, i, err, errlen))
		return -1;
	if (l->leg < 0 || l->leg >= m->n_legs)
		return fail(err, errlen, "lines[%d].leg: %d is not a leg", i, l->leg);
	if (l->quantity < 1 || l->quantity > DOC_QTY_MAX)
		return fail(err, errlen, "lines[%d].quantity: %lld is outside 1..%d", i,
			    (long long)l->quantity, DOC_QTY_MAX);
	if (l->unit_price < 0 || l->unit_price > DOC_AMOUNT_MAX || l->net < 0 ||
	    l->net > DOC_AMOUNT_MAX)
		return fail(err, errlen, "lines[%d]: amounts must be in 0..%lld", i, DOC_AMOUNT_MAX);
	/* The unit price shown is the line amount / quantity, rounded. */
	__int128 diff = (__int128)l->unit_price * l->quantity - l->net;
	if (diff < 0)
		diff = -diff;
	if (diff > l->quantity)
		return fail(err, errlen, "lines[%d].unit_price: quantity x unit_price is not net", i);
	if (l->vat_rate_bp < 0 || l->vat_rate_bp > DOC_VAT_RATE_MAX)
		return fail(err, errlen, "lines[%d].vat_rate_bp: outside 0..%d", i, DOC_VAT_RATE_MAX);
	if (l->vat_group < 0)
		return fail(err, errlen, "lines[%d].vat_group: negative", i);
	for (int j = 0; j < i && l->vat_group != 0; j++)
		if (m->lines[j].vat_group == l->vat_group &&
		    (m->lines[j].leg != l->leg || m->lines[j].vat_rate_bp != l->vat_rate_bp))
			return fail(err, errlen,
				    "lines[%d].vat_group: a taxable line's rows share one leg and one rate (lines[%d] differs)",
				    i, j);
	if (l->litres_cl < 0 || l->litres_cl > (int64_t)DOC_QTY_MAX * 10000 || l->packages < 0 ||
	    l->packages > DOC_QTY_MAX)
		return fail(err, errlen, "lines[%d]: litres or packages out of range", i);
	return 0;
}

int doc_model_sum(struct doc_model *m, char *err, size_t errlen)
{
	m->n_vat = 0;
	m->total_net = 0;
	m->total_vat = 0;
	for (int i = 0; i < m->n_lines; i++) {
		if (!doc_line_printed(m, i))
			continue;
		int k = 0;
		while (k < m->n_vat && m->vat[k].rate_bp != m->lines[i].vat_rate_bp)
			k++;
		if (k == m->n_vat) {
			if (m->n_vat == DOC_VAT_MAX)
				return fail(err, errlen, "vat: more than %d rates", DOC_VAT_MAX);
			m->vat[k] = (struct doc_vat){.rate_bp = m->lines[i].vat_rate_bp};
			m->n_vat++;
		}
		m->vat[k].base += m->lines[i].net;
	}
	for (int k = 0; k < m->n_vat; k++) {
		m->vat[k].vat = rate_vat(m, m->vat[k].rate_bp);
		m->total_net += m->vat[k].base;
		m->total_vat += m->vat[k].vat;
	}
	m->total_gross = m->total_net + m->total_vat;
	return 0;
}

/* The sums: each vat[] rate's base is the sum of the printed lines at that
 * rate, its VAT the sum of its taxable lines' VAT (each rate x its base,
 * rounded once), every printed line's rate is listed, and the totals add
 * up. */
static int sums_ok(const struct doc_model *m, char *err, size_t errlen)
{
	__int128 net = 0, vat = 0;
	for (int k = 0; k < m->n_vat; k++) {
		const struct doc_vat *v = &m->vat[k];
		__int128 base = 0;
		int used = 0;
		for (int j = 0; j < k; j++)
			if (m->vat[j].rate_bp == v->rate_bp)
				return fail(err, errlen, "vat[%d]: rate listed twice", k);
		for (int i = 0; i < m->n_lines; i++)
			if (doc_line_printed(m, i) && m->lines[i].vat_rate_bp == v->rate_bp) {
				base += m->lines[i].net;
				used = 1;
			}
		if (!used || base != v->base)
			return fail(err, errlen, "vat[%d].base: %lld is not the sum of the lines at %d bp",
				    k, (long long)v->base, v->rate_bp);
		int64_t want = rate_vat(m, v->rate_bp);
		if (v->vat != want)
			return fail(err, errlen,
				    "vat[%d].vat: %lld is not the sum of its taxable lines' VAT, each rate x base rounded once (%lld)",
				    k, (long long)v->vat, (long long)want);
		net += v->base;
		vat += v->vat;
	}
	for (int i = 0; i < m->n_lines; i++) {
		if (!doc_line_printed(m, i))
			continue;
		int k = 0;
		while (k < m->n_vat && m->vat[k].rate_bp != m->lines[i].vat_rate_bp)
			k++;
		if (k == m->n_vat)
			return fail(err, errlen, "lines[%d].vat_rate_bp: rate missing from vat[]", i);
	}
	if (net != m->total_net)
		return fail(err, errlen, "total_net: not the sum of the VAT bases");
	if (vat != m->total_vat)
		return fail(err, errlen, "total_vat: not the sum of the VAT amounts");
	if (net + vat != m->total_gross)
		return fail(err, errlen, "total_gross: not total_net + total_vat");
	return 0;
}

int doc_model_validate(const struct doc_model *m, char *err, size_t errlen)
{
	if (errlen > 0)
		err[0] = '\0';
	if ((unsigned)m->kind >= DOC_KIND_COUNT)
		return fail(err, errlen, "kind: unknown");
	if (strnlen(m->lang, sizeof m->lang) == sizeof m->lang || i18n_lang_find(m->lang) < 0)
		return fail(err, errlen, "lang: not a supported language");
	if (strnlen(m->currency, sizeof m->currency) != 3 ||
	    iso_currency_minor(m->currency, 3) < 0)
		return fail(err, errlen, "currency: not an ISO 4217 code");
	CHECK_STR(m->series, sizeof m->series, 1, "series: required, under %d bytes", DOC_CODE_MAX);
	CHECK_STR(m->order_id, sizeof m->order_id, 0, "order_id: under %d bytes", DOC_ID_MAX);
	CHECK_STR(m->seller_name, sizeof m->seller_name, 0, "seller_name: under %d bytes",
		  DOC_STR_MAX);
	if (m->number < 1)
		return fail(err, errlen, "number: must be >= 1");
	if (!date_ok(&m->issue_date))
		return fail(err, errlen, "issue_date: not a date in 2000..2999");
	if (!date_ok(&m->supply_date))
		return fail(err, errlen, "supply_date: not a date in 2000..2999");
	if (party_ok(&m->issuer, "issuer", 1, err, errlen) ||
	    party_ok(&m->recipient, "recipient", 1, err, errlen) ||
	    party_ok(&m->ship_to, "ship_to", 0, err, errlen))
		return -1;
	switch (m->destination) {
	case DOC_DEST_TAX_WAREHOUSE: case DOC_DEST_REGISTERED_CONSIGNEE:
	case DOC_DEST_TEMP_REGISTERED_CONSIGNEE: case DOC_DEST_DIRECT_DELIVERY:
	case DOC_DEST_EXEMPTED: case DOC_DEST_EXPORT: case DOC_DEST_UNKNOWN:
		break;
	default:
		return fail(err, errlen, "destination: not an EMCS destination type");
	}
	if (m->n_legs < 1 || m->n_legs > DOC_LEGS_MAX)
		return fail(err, errlen, "n_legs: %d is outside 1..%d", m->n_legs, DOC_LEGS_MAX);
	if (m->leg < 0 || m->leg >= m->n_legs)
		return fail(err, errlen, "leg: %d is not a leg", m->leg);
	if (m->n_lines < 1 || m->n_lines > DOC_LINES_MAX)
		return fail(err, errlen, "n_lines: %d is outside 1..%d", m->n_lines, DOC_LINES_MAX);
	if (m->n_vat < 0 || m->n_vat > DOC_VAT_MAX)
		return fail(err, errlen, "n_vat: %d is outside 0..%d", m->n_vat, DOC_VAT_MAX);
	if (m->n_picks < 0 || m->n_picks > DOC_PICKS_MAX)
		return fail(err, errlen, "n_picks: %d is outside 0..%d", m->n_picks, DOC_PICKS_MAX);
	if (m->n_boxes < 0 || m->n_boxes > DOC_BOXES_MAX)
		return fail(err, errlen, "n_boxes: %d is outside 0..%d", m->n_boxes, DOC_BOXES_MAX);
	for (int i = 0; i < m->n_legs; i++)
		if (leg_ok(m, i, err, errlen))
			return -1;
	int printed = 0;
	for (int i = 0; i < m->n_lines; i++) {
		if (line_ok(m, i, err, errlen))
			return -1;
		printed += doc_line_printed(m, i);
	}
	if (printed == 0)
		return fail(err, errlen, "lines: none belongs to legs[%d]", m->leg);
	for (int i = 0; i < m->n_picks; i++) {
		const struct doc_pick *p = &m->picks[i];
		CHECK_STR(p->location, sizeof p->location, 1, "picks[%d].location: required", i);
		CHECK_STR(p->sku, sizeof p->sku, 1, "picks[%d].sku: required", i);
		CHECK_STR(p->description, sizeof p->description, 0, "picks[%d].description", i);
		if (p->leg < 0 || p->leg >= m->n_legs || p->quantity < 1 || p->quantity > DOC_QTY_MAX)
			return fail(err, errlen, "picks[%d]: leg or quantity out of range", i);
	}
	for (int i = 0; i < m->n_boxes; i++) {
		const struct doc_box *b = &m->boxes[i];
		if (b->leg < 0 || b->leg >= m->n_legs || (b->box_units != 6 && b->box_units != 12) ||
		    b->count < 1 || b->count > DOC_QTY_MAX)
			return fail(err, errlen, "boxes[%d]: leg, box_units (6 or 12) or count invalid", i);
	}
	return sums_ok(m, err, errlen);
}
