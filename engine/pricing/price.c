/*
 * price.c -- landed-cost engine (see price.h).  Why rationals: the price
 * components are converted EUR -> destination at FX rates whose quotients
 * do not terminate in decimal (1 / 0.865), and DESIGN.md section 6 allows
 * exactly one rounding per component and line.  An exact numerator /
 * denominator pair carries the value untouched until that one rounding.
 */
#include "engine/pricing/price.h"

#include <assert.h>
#include <stddef.h>
#include <string.h>

#include "engine/base/iso.h"

const struct price_incoterm_def price_incoterms[PRICE_INCO_COUNT_] = {
	[PRICE_INCO_EXW] = {"EXW", 0}, [PRICE_INCO_FCA] = {"FCA", 0}, [PRICE_INCO_CPT] = {"CPT", 0},
	[PRICE_INCO_CIP] = {"CIP", 0}, [PRICE_INCO_DAP] = {"DAP", 1},
};

const char *const price_comp_names[PC_COUNT_] = {"P_B2B", "R_Recruiter", "M_Curator", "F_Platform",
						 "C_Freight", "E_Excise", "V_VAT"};

const char *const price_err_codes[PRICE_E_COUNT_] = {
	[PRICE_OK] = "ok",
	[PRICE_E_INPUT] = "invalid_line",
	[PRICE_E_COUNTRY] = "unknown_destination",
	[PRICE_E_NO_VAT] = "vat_rate_not_found",
	[PRICE_E_EXCISE_NOT_FOUND] = "excise_rate_not_found",
	[PRICE_E_NO_EXCISE_BAND] = "excise_band_not_found",
	[PRICE_E_NO_FREIGHT] = "freight_lane_not_found",
	[PRICE_E_NO_FX] = "fx_rate_not_found",
	[PRICE_E_OVERFLOW] = "amount_overflow",
};

int price_incoterm_find(const char *s, unsigned len)
{
	for (int i = 0; i < PRICE_INCO_COUNT_; i++)
		if (strlen(price_incoterms[i].name) == len && !memcmp(price_incoterms[i].name, s, len))
			return i;
	return -1;
}

/* Duty base of each basis: quantity = volume_ul x qty [x abv] / den, in the
 * basis unit (hl, l pure alcohol, l x % vol, l).  abv is in hundredths. */
static const struct {
	uint8_t uses_abv;
	int64_t den;
} basis_base[RD_B_COUNT_] = {
	[RD_B_PER_HL_PRODUCT] = {0, 100000000LL},         /* ul -> hl: 10^8 */
	[RD_B_PER_L_PURE_ALCOHOL] = {1, 10000000000LL},   /* ul -> l (10^6) x abv/100/100 (10^4) */
	[RD_B_PER_L_PER_PCT_VOL] = {1, 100000000LL},      /* ul -> l (10^6) x abv/100 (10^2) */
	[RD_B_PER_L_PRODUCT] = {0, 1000000LL},            /* ul -> l */
};

/* ---- exact non-negative rationals --------------------------------------- */

typedef __int128 i128;
struct q {
	i128 n, d; /* n >= 0, d > 0; not always reduced (q_mul) */
};

/* a / b for a >= 0, b > 0: the machine's 64-bit division when both fit
 * (the common case: cents and ppm), the 128-bit library call otherwise. */
static inline i128 div_nn(i128 a, i128 b)
{
	if (a <= (i128)UINT64_MAX && b <= (i128)UINT64_MAX)
		return (i128)((uint64_t)a / (uint64_t)b);
	return a / b;
}

/* gcd of a, b >= 0, finishing in 64 bits as soon as both fit. */
static i128 gcd128(i128 a, i128 b)
{
	while (b) {
		if (a <= (i128)UINT64_MAX && b <= (i128)UINT64_MAX) {
			uint64_t x = (uint64_t)a, y = (uint64_t)b;
			while (y) {
				uint64_t t = x % y;
				x = y;
				y = t;
			}
			return (i128)x;
		}
		i128 t = a % b;
		a = b;
		b = t;
	}
	return a;
}

static int q_norm(struct q *x)
{
	if (x->n == 0) {
		x->d = 1;
		return 0;
	}
	i128 g = gcd128(x->n, x->d);
	x->n = div_nn(x->n, g);
	x->d = div_nn(x->d, g);
	return 0;
}

/* *out = a * b for a, b >= 0; 0 if it overflows.  Two factors below 2^63
 * multiply without the overflow check's library call. */
static inline int mul_nn(i128 a, i128 b, i128 *out)
{
	if (a <= INT64_MAX && b <= INT64_MAX) {
		*out = a * b;
		return 1;
	}
	return !__builtin_mul_overflow(a, b, out);
}

/* x * (a / b) reducing at every step: x reduced first, the factors
 * cross-cancelled, the product reduced.  a >= 0, b > 0, neither 0 nor x 0.
 * -1 on overflow. */
static int q_mul_reduced(struct q *x, i128 a, i128 b)
{
	q_norm(x);
	i128 g1 = gcd128(a, x->d), g2 = gcd128(x->n, b);
	i128 n = div_nn(x->n, g2), d = div_nn(x->d, g1);
	if (__builtin_mul_overflow(n, div_nn(a, g1), &x->n) || __builtin_mul_overflow(d, div_nn(b, g2), &x->d))
		return -1;
	return q_norm(x);
}

/* x * (a / b); a >= 0, b > 0.  -1 on overflow.
 * The exact product is kept as it is when it fits: nothing downstream
 * depends on the representation, only on the value (q_round, the next
 * q_mul), and the three gcds of the reducing path were a tenth of a
 * quote's CPU.  When it does not fit, the reducing path runs on x: it
 * starts from the canonical form, so its result and its overflow verdict
 * are those of reducing at every step.  Test builds run the reducing path
 * beside every fast product and compare the values.
 * Always inlined: a priced line makes 8 products, half of them by an
 * integer (b == 1) that folds away, and the call with its 128-bit
 * arguments cost more than the product (quote 1 line 92,298 -> 89,409
 * instructions, perf/ir_per_request.sh). */
static inline __attribute__((always_inline)) int q_mul(struct q *x, i128 a, i128 b)
{
	if (a == 0 || x->n == 0) {
		x->n = 0;
		x->d = 1;
		return 0;
	}
	i128 pn, pd;
	if (!mul_nn(x->n, a, &pn) || !mul_nn(x->d, b, &pd))
		return q_mul_reduced(x, a, b);
#ifdef WM_TESTING
	struct q slow = *x, fast = {pn, pd};
	int rc = q_mul_reduced(&slow, a, b);
	q_norm(&fast);
	assert(rc == 0 && slow.n == fast.n && slow.d == fast.d);
#endif
	x->n = pn;
	x->d = pd;
	return 0;
}

#ifdef WM_TESTING
int price_test_q_mul(i128 xn, i128 xd, i128 a, i128 b, i128 *n, i128 *d)
{
	struct q x = {xn, xd};
	if (q_mul(&x, a, b))
		return -1;
	q_norm(&x);
	*n = x.n;
	*d = x.d;
	return 0;
}
#endif

/* VAT of a shown base (minor units, >= 0) at rate_e4 (percent x 10^4 =
 * fraction x 10^6), rounded half-up once.  -1 on overflow. */
static int vat_of(int64_t base, int64_t rate_e4, int64_t *out)
{
	i128 n = (i128)base * rate_e4, d = PRICE_MAX_PPM;
	i128 v = div_nn(n, d), r = n - v * d;
	if (r >= d - r)
		v++;
	if (v > INT64_MAX)
		return -1;
	*out = (int64_t)v;
	return 0;
}

/* Half-up to an integer: floor(n/d + 1/2) = floor((2n + d) / 2d). */
static int q_round(const struct q *x, int64_t *out)
{
	i128 v = div_nn(x->n, x->d), r = x->n - v * x->d;
	if (r >= x->d - r) /* r >= d/2, without doubling r */
		v++;
	if (v > INT64_MAX)
		return -1;
	*out = (int64_t)v;
	return 0;
}

static i128 pow10i(int k)
{
	i128 v = 1;
	while (k-- > 0)
		v *= 10;
	return v;
}

/* The factor turning minor units of a currency into destination minor
 * units: (u_D x f_D) / (u_X x f_X). */
static int conv_factor(const struct refdata *rd, const char *cur, int64_t f_dest, int u_dest, struct q *k,
		       int64_t *f_out)
{
	int minor = iso_currency_minor(cur, strlen(cur));
	int64_t f = refdata_fx(rd, cur, NULL);
	if (minor < 0 || f <= 0)
		return -1;
	*f_out = f;
	k->n = pow10i(u_dest) * f_dest;
	k->d = pow10i(minor) * f;
	return q_norm(k);
}

/* The length of the string in a code field of `cap` bytes (a country, a
 * currency, a region), or cap when it has no NUL: strnlen, inline.  The
 * fields are a few bytes, and price_run checks them for every candidate a
 * quote prices (six libc calls per price_run, ~40 per 1-line quote). */
#define CODE_LEN(field) code_len((field), sizeof(field))
static inline size_t code_len(const char *s, size_t cap)
{
	size_t n = 0;
	while (n < cap && s[n])
		n++;
	return n;
}

/* ---- the memo (price.h): each lookup first asks m, when there is one ---- */

/* a (a kept code: exactly 3 characters, since conv_factor refuses any
 * other length) equals the string b: compared character by character, so a
 * shorter b is never read past its end. */
static inline int code3_eq(const char a[4], const char *b)
{
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && b[3] == 0;
}

/* conv_factor, kept in m per currency (the first PRICE_MEMO_FX of them). */
static int conv_memo(const struct refdata *rd, const char *cur, int64_t f_dest, int u_dest, struct q *k,
		     int64_t *f_out, struct price_memo *m)
{
	if (m)
		for (unsigned i = 0; i < m->n_fx; i++)
			if (code3_eq(m->fx[i].cur, cur)) {
				*k = (struct q){m->fx[i].kn, m->fx[i].kd};
				*f_out = m->fx[i].f;
				return 0;
			}
	if (conv_factor(rd, cur, f_dest, u_dest, k, f_out))
		return -1;
	if (m && m->n_fx < PRICE_MEMO_FX && strlen(cur) < sizeof(m->fx[0].cur)) {
		unsigned i = m->n_fx++;
		strcpy(m->fx[i].cur, cur);
		m->fx[i].kn = k->n;
		m->fx[i].kd = k->d;
		m->fx[i].f = *f_out;
	}
	return 0;
}

/* refdata_vat_at for the call's destination, region and day. */
static const struct rd_vat *vat_memo(const struct refdata *rd, const struct price_order_in *in, int product,
				     struct price_memo *m)
{
	if (!m || product < 0 || product >= RD_VP_COUNT_)
		return refdata_vat_at(rd, in->destination, in->region, product, in->date);
	if (!m->vat[product])
		m->vat[product] = refdata_vat_at(rd, in->destination, in->region, product, in->date);
	return m->vat[product];
}

/* refdata_excise for the call's destination and day; every answer is kept
 * (a missing band fails every candidate of the line alike), the oldest of
 * PRICE_MEMO_EXCISE replaced first. */
static int excise_memo(const struct refdata *rd, const struct price_order_in *in, const struct price_line_in *l,
		       const struct rd_excise **out, int *duty_minor, struct price_memo *m,
		       struct price_memo_excise **kept)
{
	*kept = NULL;
	if (m)
		for (unsigned i = 0; i < m->n_excise; i++)
			if (m->excise[i].category == l->category && m->excise[i].abv == l->abv) {
				*out = m->excise[i].ex;
				*duty_minor = m->excise[i].duty_minor;
				*kept = &m->excise[i];
				return m->excise[i].r;
			}
	*out = NULL;
	int r = refdata_excise(rd, in->destination, l->category, l->abv, in->date, out);
	*duty_minor = r == RD_FOUND ? iso_currency_minor((*out)->currency, 3) : 0;
	if (m) {
		unsigned i = m->n_excise < PRICE_MEMO_EXCISE ? m->n_excise++ : m->next_excise++ % PRICE_MEMO_EXCISE;
		m->excise[i] = (struct price_memo_excise){.category = l->category, .abv = l->abv, .r = r, .ex = *out,
							  .duty_minor = *duty_minor};
		*kept = &m->excise[i];
	}
	return r;
}

/* refdata_freight to the call's destination; the first PRICE_MEMO_FREIGHT
 * (origin, box size) answers are kept, NULL ones too. */
static const struct rd_freight *freight_memo(const struct refdata *rd, const struct price_order_in *in,
					     const struct price_line_in *l, struct price_memo *m)
{
	if (m)
		for (unsigned i = 0; i < m->n_freight; i++)
			if (m->freight[i].box_units == l->box_units && !memcmp(m->freight[i].origin, l->origin, 3))
				return m->freight[i].f;
	const struct rd_freight *f = refdata_freight(rd, l->origin, in->destination, l->box_units);
	if (m && m->n_freight < PRICE_MEMO_FREIGHT) {
		unsigned i = m->n_freight++;
		memcpy(m->freight[i].origin, l->origin, 3); /* line_valid: a 2-letter code and its NUL */
		m->freight[i].box_units = (uint8_t)l->box_units;
		m->freight[i].f = f;
	}
	return f;
}

static int line_valid(const struct price_line_in *l)
{
	return l->p_b2b >= 0 && l->p_b2b <= PRICE_MAX_UNIT && l->margin >= 0 && l->margin <= PRICE_MAX_UNIT &&
	       l->qty >= 1 && l->qty <= PRICE_MAX_QTY && (l->box_units == 6 || l->box_units == 12) &&
	       l->category < RD_CAT_COUNT_ && l->incoterm < PRICE_INCO_COUNT_ && l->abv <= RD_MAX_ABV &&
	       l->volume_ul >= 1 && l->volume_ul <= PRICE_MAX_VOLUME_UL && l->recruiter_ppm <= PRICE_MAX_PPM &&
	       l->platform_ppm <= PRICE_MAX_PPM && iso_country_valid(l->origin, CODE_LEN(l->origin)) &&
	       CODE_LEN(l->currency) == 3;
}

#define TRY(x, e)                          \
	do {                               \
		if (x)                     \
			return (e);        \
	} while (0)

/* The line's excise duty, rounded to the destination's minor unit, and the
 * duty currency's FX (into *amt and *fx_e6): rate (published currency,
 * x10^4 major) x base quantity (volume x qty, x ABV by the band's basis),
 * converted exactly, rounded once.  It depends on the band, the quantity
 * and the volume only (the memo's key fixes destination, region and day),
 * so the band's memo entry `kept` (or NULL) keeps the last answer: a
 * quote's candidates all price the same line.  0, or a price_err. */
static enum price_err excise_amount(const struct refdata *rd, const struct price_line_in *l, const struct rd_excise *ex,
				    int duty_minor, int64_t f_dest, int u_dest, struct price_memo *m,
				    struct price_memo_excise *kept, int64_t *amt, int64_t *fx_e6)
{
	if (kept && kept->amt_qty == l->qty && kept->amt_volume_ul == l->volume_ul) {
		*amt = kept->amt;
		*fx_e6 = kept->amt_fx_e6;
		return PRICE_OK;
	}
	struct q e;
	TRY(conv_memo(rd, ex->currency, f_dest, u_dest, &e, fx_e6, m), PRICE_E_NO_FX);
	i128 qty_num = (i128)l->volume_ul * l->qty * (basis_base[ex->basis].uses_abv ? l->abv : 1);
	TRY(q_mul(&e, (i128)ex->rate_e4 * pow10i(duty_minor), pow10i(RD_RATE_SCALE)), PRICE_E_OVERFLOW);
	TRY(q_mul(&e, qty_num, basis_base[ex->basis].den), PRICE_E_OVERFLOW);
	TRY(q_round(&e, amt), PRICE_E_OVERFLOW);
	if (kept) { /* line_valid: qty >= 1, so amt_qty 0 never matches */
		kept->amt_qty = l->qty;
		kept->amt_volume_ul = l->volume_ul;
		kept->amt = *amt;
		kept->amt_fx_e6 = *fx_e6;
	}
	return PRICE_OK;
}

/* *o zeroed with constant-size stores (no `rep stos`: see price_run).  The
 * asserts stop a member added to either struct from being left out here or
 * in price_run. */
_Static_assert(sizeof(struct price_line_out) == (PC_COUNT_ + 2) * 8 + 8 + 3 * sizeof(void *) + 3 * 8,
	       "line_out_clear zeroes every member of struct price_line_out");
_Static_assert(sizeof(struct price_quote) == offsetof(struct price_quote, lines) +
						     PRICE_MAX_LINES * sizeof(struct price_line_out) +
						     (3 + PC_COUNT_) * 8 + 2 * sizeof(char *) + 8,
	       "price_run sets every member of struct price_quote");
static inline void line_out_clear(struct price_line_out *o)
{
	for (int c = 0; c < PC_COUNT_; c++)
		o->comp[c] = 0;
	o->total = o->vat_base = 0;
	o->boxes = 0;
	o->vat = NULL;
	o->excise = NULL;
	o->freight = NULL;
	o->fx_offer_e6 = o->fx_dest_e6 = o->fx_duty_e6 = 0;
}

/* Lines [from, used) of out zeroed (a failed run leaves the lines it did
 * not price as zeros, as it always has); returns e. */
static enum price_err lines_cleared(struct price_quote *out, size_t from, size_t used, enum price_err e)
{
	for (size_t j = from; j < used; j++)
		line_out_clear(&out->lines[j]);
	return e;
}

static enum price_err price_line(const struct refdata *rd, const struct price_order_in *in,
				 const struct price_line_in *l, int64_t f_dest, int u_dest, struct price_line_out *o,
				 struct price_memo *m)
{
	const enum price_err OV = PRICE_E_OVERFLOW;
	line_out_clear(o);
	o->fx_dest_e6 = f_dest;
	if (!line_valid(l))
		return PRICE_E_INPUT;
	/* VAT by product and delivery region, in force on the day */
	const struct rd_vat *vat = vat_memo(rd, in, l->category, m);
	if (!vat)
		return PRICE_E_NO_VAT;
	o->vat = vat;
	struct q k_offer, k_eur, exact[PC_COUNT_];
	int64_t f_eur;
	TRY(conv_memo(rd, l->currency, f_dest, u_dest, &k_offer, &o->fx_offer_e6, m), PRICE_E_NO_FX);
	TRY(conv_memo(rd, "EUR", f_dest, u_dest, &k_eur, &f_eur, m), PRICE_E_NO_FX);

	/* P, M and their base B = (P + M) */
	struct q base = k_offer;
	exact[PC_P_B2B] = k_offer;
	exact[PC_M_CURATOR] = k_offer;
	TRY(q_mul(&exact[PC_P_B2B], (i128)l->p_b2b * l->qty, 1), OV);
	TRY(q_mul(&exact[PC_M_CURATOR], (i128)l->margin * l->qty, 1), OV);
	TRY(q_mul(&base, ((i128)l->p_b2b + l->margin) * l->qty, 1), OV);
	exact[PC_R_RECRUITER] = base;
	exact[PC_F_PLATFORM] = base;
	TRY(q_mul(&exact[PC_R_RECRUITER], l->recruiter_ppm, PRICE_MAX_PPM), OV);
	TRY(q_mul(&exact[PC_F_PLATFORM], l->platform_ppm, PRICE_MAX_PPM), OV);

	/* C: boxes x tariff (EUR cents), unless the incoterm delivers */
	exact[PC_C_FREIGHT] = (struct q){0, 1};
	if (!price_incoterms[l->incoterm].delivered) {
		o->freight = freight_memo(rd, in, l, m);
		if (!o->freight)
			return PRICE_E_NO_FREIGHT;
		o->boxes = (l->qty + l->box_units - 1u) / l->box_units;
		exact[PC_C_FREIGHT] = k_eur;
		TRY(q_mul(&exact[PC_C_FREIGHT], (i128)o->boxes * o->freight->price_cents, 1), OV);
	}

	/* E: excise_amount, rounded there */
	int duty_minor;
	struct price_memo_excise *kept;
	int r = excise_memo(rd, in, l, &o->excise, &duty_minor, m, &kept);
	if (r == RD_NOT_PUBLISHED)
		return PRICE_E_EXCISE_NOT_FOUND;
	if (r != RD_FOUND)
		return PRICE_E_NO_EXCISE_BAND;
	enum price_err ee = excise_amount(rd, l, o->excise, duty_minor, f_dest, u_dest, m, kept,
					  &o->comp[PC_E_EXCISE], &o->fx_duty_e6);
	if (ee)
		return ee;

	/* every component but V rounded once; their sum is the taxable base
	 * the consumer's document shows */
	_Static_assert(PC_E_EXCISE == PC_V_VAT - 1, "the rounding loop below stops before E");
	int64_t base_shown = 0;
	for (int c = 0; c < PC_E_EXCISE; c++) {
		TRY(q_round(&exact[c], &o->comp[c]), OV);
		TRY(__builtin_add_overflow(base_shown, o->comp[c], &base_shown), OV);
	}
	TRY(__builtin_add_overflow(base_shown, o->comp[PC_E_EXCISE], &base_shown), OV);
	/* V: rate x the SHOWN base, rounded half-up once (DESIGN.md 6: the
	 * invoice reconciles -- shown base x rate = VAT shown) */
	TRY(vat_of(base_shown, vat->rate_e4, &o->comp[PC_V_VAT]), OV);
	o->vat_base = base_shown;
	TRY(__builtin_add_overflow(base_shown, o->comp[PC_V_VAT], &o->total), OV);
	return PRICE_OK;
}

/* price_quote's work, with the memo m or none (m is keyed already). */
static enum price_err price_run(const struct refdata *rd, const struct price_order_in *in, struct price_quote *out,
				struct price_memo *m)
{
	/* zero all but the lines no one will read: a quote prices each candidate
	 * as a one-line order, and zeroing PRICE_MAX_LINES lines every time was
	 * most of its memset (issue 15).  The lines are zeroed as they are
	 * priced (price_line), the rest of them on a failure (lines_cleared); every
	 * store has a constant size: the variable-length memsets were `rep
	 * stos` loops, whose start-up cost 1.8 % of a 1-line quote's CPU
	 * samples (perf record, 2026-11-30). */
	size_t used = in->n_lines < PRICE_MAX_LINES ? in->n_lines : PRICE_MAX_LINES;
	memset(out->currency, 0, sizeof(out->currency));
	out->minor = 0;
	out->n_lines = 0;
	out->order_fee = out->order_fee_vat = out->total = 0;
	for (int c = 0; c < PC_COUNT_; c++)
		out->comp_total[c] = 0;
	out->err_line = 0;
	out->version = rd->version;
	out->effective_date = rd->effective_date;
	out->date = in->date;
	if (!in->n_lines || in->n_lines > PRICE_MAX_LINES || !in->lines || in->fixed_fee_cents < 0 ||
	    in->fixed_fee_cents > PRICE_MAX_FIXED_FEE || CODE_LEN(in->destination) != 2 || !in->date ||
	    in->date >= RD_DATE_MAX || CODE_LEN(in->region) == sizeof(in->region))
		return lines_cleared(out, 0, used, PRICE_E_INPUT);
	const char *cur;
	int64_t f_dest;
	if (m && m->cur) {
		cur = m->cur;
		out->minor = m->minor;
		f_dest = m->f_dest;
	} else {
		cur = refdata_country_currency(in->destination);
		if (!cur)
			return lines_cleared(out, 0, used, PRICE_E_COUNTRY);
		out->minor = iso_currency_minor(cur, 3);
		f_dest = refdata_fx(rd, cur, NULL);
		if (f_dest <= 0)
			return lines_cleared(out, 0, used, PRICE_E_NO_FX);
		if (m) {
			m->cur = cur;
			m->minor = out->minor;
			m->f_dest = f_dest;
		}
	}
	memcpy(out->currency, cur, 4);
	for (unsigned i = 0; i < in->n_lines; i++) {
		enum price_err e = price_line(rd, in, &in->lines[i], f_dest, out->minor, &out->lines[i], m);
		if (e) {
			out->err_line = i;
			return lines_cleared(out, i + 1, used, e);
		}
		out->n_lines++;
		for (int c = 0; c < PC_COUNT_; c++)
			TRY(__builtin_add_overflow(out->comp_total[c], out->lines[i].comp[c], &out->comp_total[c]),
			    PRICE_E_OVERFLOW);
		TRY(__builtin_add_overflow(out->total, out->lines[i].total, &out->total), PRICE_E_OVERFLOW);
	}
	/* the order's fixed fee: converted exactly, shown rounded, VAT on the
	 * shown fee at the destination's default rate (a service, not a wine) */
	if (in->fixed_fee_cents) {
		const struct rd_vat *vat = vat_memo(rd, in, RD_VP_DEFAULT, m);
		if (!vat)
			return PRICE_E_NO_VAT;
		struct q fee;
		int64_t f_eur;
		TRY(conv_memo(rd, "EUR", f_dest, out->minor, &fee, &f_eur, m), PRICE_E_NO_FX);
		TRY(q_mul(&fee, in->fixed_fee_cents, 1), PRICE_E_OVERFLOW);
		/* the fee as shown, then its VAT on that shown amount */
		TRY(q_round(&fee, &out->order_fee) || vat_of(out->order_fee, vat->rate_e4, &out->order_fee_vat),
		    PRICE_E_OVERFLOW);
		out->comp_total[PC_F_PLATFORM] += out->order_fee;
		out->comp_total[PC_V_VAT] += out->order_fee_vat;
		out->total += out->order_fee + out->order_fee_vat;
	}
	return PRICE_OK;
}

enum price_err price_quote(const struct refdata *rd, const struct price_order_in *in, struct price_quote *out)
{
	return price_run(rd, in, out, NULL);
}

void price_memo_init(struct price_memo *m)
{
	memset(m, 0, sizeof(*m));
}

/* The memo's key is the call's: else empty it. */
static void memo_key(struct price_memo *m, const struct refdata *rd, const struct price_order_in *in)
{
	if (m->rd == rd && !memcmp(m->destination, in->destination, sizeof(m->destination)) &&
	    !strncmp(m->region, in->region, sizeof(m->region)) && m->date == in->date)
		return;
	price_memo_init(m);
	m->rd = rd;
	memcpy(m->destination, in->destination, sizeof(m->destination));
	memcpy(m->region, in->region, sizeof(m->region));
	m->date = in->date;
}

#ifdef WM_TESTING
/* Test builds: the memo's answer is the plain one, field by field. */
static void memo_check(const struct refdata *rd, const struct price_order_in *in, enum price_err e,
		       const struct price_quote *got)
{
	static struct price_quote want; /* test builds only; the engine is one thread */
	enum price_err we = price_run(rd, in, &want, NULL);
	assert(we == e);
	if (e) {
		assert(want.err_line == got->err_line);
		return;
	}
	assert(want.n_lines == got->n_lines && want.total == got->total && want.minor == got->minor &&
	       !memcmp(want.currency, got->currency, 4) && want.order_fee == got->order_fee &&
	       want.order_fee_vat == got->order_fee_vat && !memcmp(want.comp_total, got->comp_total, sizeof(want.comp_total)));
	for (unsigned i = 0; i < want.n_lines; i++) {
		const struct price_line_out *a = &want.lines[i], *b = &got->lines[i];
		assert(!memcmp(a->comp, b->comp, sizeof(a->comp)) && a->total == b->total && a->vat_base == b->vat_base &&
		       a->boxes == b->boxes && a->vat == b->vat && a->excise == b->excise && a->freight == b->freight &&
		       a->fx_offer_e6 == b->fx_offer_e6 && a->fx_dest_e6 == b->fx_dest_e6 &&
		       a->fx_duty_e6 == b->fx_duty_e6);
	}
}
#endif

enum price_err price_quote_memo(const struct refdata *rd, const struct price_order_in *in, struct price_quote *out,
				struct price_memo *m)
{
	if (!m)
		return price_run(rd, in, out, NULL);
	/* the key's checks that price_run makes before any lookup */
	if (CODE_LEN(in->destination) != 2 || CODE_LEN(in->region) == sizeof(in->region))
		return price_run(rd, in, out, NULL);
	memo_key(m, rd, in);
	enum price_err e = price_run(rd, in, out, m);
#ifdef WM_TESTING
	memo_check(rd, in, e, out);
#endif
	return e;
}
