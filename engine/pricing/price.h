/*
 * price.h -- the landed-cost engine of DESIGN.md section 6 as a pure
 * function: order lines + a reference-data version in, every waterfall
 * component per line out, in the destination currency's minor units.
 *
 * Why pure: quote-calculate, orders and the tests all price the same way,
 * and a quote must be reproducible from its inputs and the version named in
 * its tax_breakdown.  No I/O, no clock, no global state.
 *
 * Arithmetic: every component is first computed as an EXACT rational
 * (numerator/denominator in __int128, reduced by gcd) in destination minor
 * units -- FX conversions, percentages and duty bases included -- and then
 * rounded half-up ONCE per line.  VAT is the VAT rate times the line's
 * taxable amount AS SHOWN (the sum of its rounded components), rounded
 * half-up once, so every invoice reconciles: shown base x rate = VAT shown
 * (DESIGN.md section 6; the order's fixed fee likewise).  The line total is the sum of
 * its rounded components; the quote total is the sum of line totals plus the
 * order-level fixed fee (and its VAT), so the components always add up.
 * Any intermediate that would overflow __int128 fails with PRICE_E_OVERFLOW
 * (the input bounds below keep every legitimate quote far from it).
 *
 * Freight is per line (a line = all units of one order line from one source
 * is its own fulfilment leg): boxes = ceil(qty / box_units).
 */
#ifndef WM_PRICE_H
#define WM_PRICE_H

#include <stdint.h>

#include "engine/pricing/refdata.h"

#define PRICE_MAX_LINES 64
#define PRICE_MAX_QTY 10000                 /* units per line */
#define PRICE_MAX_UNIT 100000000000LL       /* minor units per unit price / margin */
#define PRICE_MAX_VOLUME_UL 30000000u       /* 30 L per unit */
#define PRICE_MAX_PPM 1000000               /* rates as parts per million: 100 % */
#define PRICE_MAX_FIXED_FEE 100000000LL     /* EUR cents per order */

enum price_incoterm { PRICE_INCO_EXW, PRICE_INCO_FCA, PRICE_INCO_CPT, PRICE_INCO_CIP, PRICE_INCO_DAP,
		      PRICE_INCO_COUNT_ };
/* name, and whether the seller's price already delivers to the destination
 * (then the quote adds no freight). */
extern const struct price_incoterm_def {
	const char *name;
	uint8_t delivered;
} price_incoterms[PRICE_INCO_COUNT_];
int price_incoterm_find(const char *s, unsigned len);

struct price_line_in {
	int64_t p_b2b;            /* per unit, minor units of `currency` (the offer's) */
	int64_t margin;           /* curator margin per unit (shelf - P_B2B), same currency, >= 0 */
	char currency[4];
	uint32_t qty;             /* 1..PRICE_MAX_QTY */
	uint8_t box_units;        /* 6 or 12 */
	uint8_t category;         /* enum rd_category */
	uint8_t incoterm;         /* enum price_incoterm */
	uint16_t abv;             /* hundredths of % vol, 0..RD_MAX_ABV */
	uint32_t volume_ul;       /* per unit, microlitres, 1..PRICE_MAX_VOLUME_UL */
	char origin[3];
	uint32_t recruiter_ppm;   /* recruiter royalty rate x (P_B2B + M) */
	uint32_t platform_ppm;    /* platform fee rate x (P_B2B + M) */
};

struct price_order_in {
	char destination[3];
	char region[RD_MAX_REGION + 1]; /* VAT region of the delivery ("" = mainland) */
	uint32_t date;            /* YYYYMMDD: rates in force on this day (required) */
	int64_t fixed_fee_cents;  /* optional platform fee per order, EUR cents */
	unsigned n_lines;
	const struct price_line_in *lines;
};

enum price_comp { PC_P_B2B, PC_R_RECRUITER, PC_M_CURATOR, PC_F_PLATFORM, PC_C_FREIGHT, PC_E_EXCISE, PC_V_VAT,
		  PC_COUNT_ };
/* Spec names: "P_B2B", "R_Recruiter", ... */
extern const char *const price_comp_names[PC_COUNT_];

enum price_err {
	PRICE_OK = 0,
	PRICE_E_INPUT,            /* a field outside its bounds */
	PRICE_E_COUNTRY,          /* destination has no known currency */
	PRICE_E_NO_VAT,           /* no VAT rate for the destination */
	PRICE_E_EXCISE_NOT_FOUND, /* the figure is NOT_FOUND in the references */
	PRICE_E_NO_EXCISE_BAND,   /* no band of the destination covers category/ABV */
	PRICE_E_NO_FREIGHT,       /* no freight lane for origin/destination/box size */
	PRICE_E_NO_FX,            /* no FX rate for a currency */
	PRICE_E_OVERFLOW,
	PRICE_E_COUNT_
};
/* Stable error codes for APIs ("excise_rate_not_found", ...). */
extern const char *const price_err_codes[PRICE_E_COUNT_];

struct price_line_out {
	int64_t comp[PC_COUNT_];  /* destination minor units, each rounded half-up once */
	int64_t total;
	int64_t vat_base;         /* the taxable amount shown: sum of comp[] before V */
	uint32_t boxes;           /* 0 when the incoterm delivers */
	/* the figures used (pointers into the reference version) */
	const struct rd_vat *vat;
	const struct rd_excise *excise;
	const struct rd_freight *freight; /* NULL when delivered */
	int64_t fx_offer_e6, fx_dest_e6, fx_duty_e6;
};

struct price_quote {
	char currency[4];         /* destination currency */
	int minor;                /* its minor-unit digits */
	unsigned n_lines;
	struct price_line_out lines[PRICE_MAX_LINES];
	int64_t order_fee, order_fee_vat; /* fixed fee and its VAT, destination minor units */
	int64_t comp_total[PC_COUNT_];    /* sum over lines, plus the fixed fee in F and V */
	int64_t total;
	const char *version, *effective_date;
	uint32_t date;            /* the day priced (YYYYMMDD) */
	unsigned err_line;        /* on error: the index of the failing line */
};

/*
 * Price an order.  Returns PRICE_OK with *out filled, or an error code with
 * out->err_line naming the line.  rd must be a finished version.
 */
enum price_err price_quote(const struct refdata *rd, const struct price_order_in *in, struct price_quote *out);

/*
 * The lookups a run of price_quote calls shares.  A quote prices every
 * candidate offer of a line as its own one-line order: the destination's
 * currency and FX, the VAT row of the wine's category, the excise band of
 * its category and ABV and the conversion factor of each currency are the
 * same for all of them, and looking them up again (string compares,
 * binary searches, gcds) was a third of each candidate's pricing.
 *
 * A memo is keyed by the reference version, destination, region and day of
 * the calls it serves: a call with any other key empties it first, so a
 * memo is never wrong, only cold.  It holds pointers into rd (the version
 * must outlive the memo's use, as it outlives a quote) and nothing it
 * must free.  Failed lookups are not kept (the call fails the same way
 * again).  The answers are exactly price_quote's: test builds price every
 * memo call a second time without the memo and compare.
 */
#define PRICE_MEMO_FX 4      /* currencies kept (offer, EUR, duty): more are looked up */
#define PRICE_MEMO_EXCISE 4  /* (category, ABV) bands kept */
#define PRICE_MEMO_FREIGHT 4 /* (origin, box size) tariffs kept */
struct price_memo {
	const struct refdata *rd;    /* NULL: empty */
	char destination[3];
	char region[RD_MAX_REGION + 1];
	uint32_t date;
	const char *cur;             /* the destination's currency, its minor digits and FX */
	int minor;
	int64_t f_dest;
	unsigned n_fx, n_excise, next_excise;
	struct {
		char cur[4];
		__int128 kn, kd;         /* minor units of cur -> destination minor units */
		int64_t f;
	} fx[PRICE_MEMO_FX];
	const struct rd_vat *vat[RD_VP_COUNT_]; /* NULL: not looked up yet */
	struct price_memo_excise {
		uint8_t category;
		uint16_t abv;
		int r;                   /* refdata_excise's answer */
		const struct rd_excise *ex;
		int duty_minor;          /* iso_currency_minor of ex's currency (r == RD_FOUND) */
		/* the duty of the last (qty, volume) priced at this band, rounded
		 * in the destination currency, and the duty currency's FX: the
		 * same for every candidate of a line (amt_qty 0: none yet) */
		uint32_t amt_qty, amt_volume_ul;
		int64_t amt, amt_fx_e6;
	} excise[PRICE_MEMO_EXCISE];
	unsigned n_freight;
	struct {
		char origin[3];
		uint8_t box_units;
		const struct rd_freight *f; /* refdata_freight's answer (NULL: none) */
	} freight[PRICE_MEMO_FREIGHT];
};

/* An empty memo. */
void price_memo_init(struct price_memo *m);
/* price_quote, with the lookups of m (which it fills). */
enum price_err price_quote_memo(const struct refdata *rd, const struct price_order_in *in, struct price_quote *out,
				struct price_memo *m);

#ifdef WM_TESTING
/* Test builds only: the exact product (xn / xd) * (a / b) by the pricing's
 * rational multiply (xn, a >= 0; xd, b > 0), reduced into *n / *d.  0, or
 * -1 when it does not fit 128 bits even reduced at every step. */
int price_test_q_mul(__int128 xn, __int128 xd, __int128 a, __int128 b, __int128 *n, __int128 *d);
#endif

#endif
