/*
 * doc_model.h -- one trade document (issue 17) as plain C data: what the
 * renderer prints, and nothing it has to look up.
 *
 * Why this shape:
 *  - The renderer is a pure function of this struct.  A later step fills
 *    it from an order (financial_breakdown, tax_breakdown, legs) and hands
 *    it to doc_render_pdf() or the worker; no pointer leads back into the
 *    engine's tables, so a model can be copied into a worker queue and
 *    rendered on another thread while the shard keeps changing.
 *  - Fixed-size arrays with the bounds as data (DOC_*_MAX below): a model
 *    is one allocation, copied with memcpy, freed with free(), and every
 *    bound is checked by doc_model_validate() with an error that names the
 *    field, never by a truncating copy.
 *  - Money is int64 minor units of `currency` (ISO 4217; the minor-unit
 *    count comes from engine/base/iso.c), rates are basis points, volumes
 *    millilitres, alcohol hundredths of a % vol, litres centilitres.  No
 *    floating point anywhere (DESIGN.md section 6).
 *  - VAT reconciles by construction, the way the order computed it
 *    (spec 2.9: "tax components are rounded per line and then summed,
 *    never rounded twice"; DESIGN.md 6).  The unit of rounding is the
 *    order's taxable line -- one order line from one source -- whose VAT
 *    is its taxable amount (the sum of its rounded components) x rate,
 *    rounded half-up ONCE.  A document may print that taxable line as
 *    several rows (the wine, the service fee, the freight, the excise):
 *    rows with the same nonzero vat_group are one taxable line, a row with
 *    vat_group 0 is a taxable line on its own.  Each vat[] entry is one
 *    rate: its base is the sum of the nets at that rate and its VAT is
 *    the SUM of its taxable lines' VAT -- not base x rate rounded again,
 *    which differs by a cent or more as soon as two taxable lines both
 *    round up (2 x 0.005 is 0.01 each, 0.02 together; once it would be
 *    0.01).  Validation recomputes all of it and insists on the totals, so
 *    a model that does not add up is refused, never printed.
 *  - One model describes the whole order (every leg) so that a split order
 *    needs no second shape.  Kinds that are per leg or per source (label,
 *    fulfiller instruction, originator proforma and invoice) print
 *    legs[leg] and only the lines, picks and boxes of that leg; the
 *    consumer invoice and the transport document print every leg.
 */
#ifndef WM_DOC_MODEL_H
#define WM_DOC_MODEL_H

#include <stddef.h>
#include <stdint.h>

/* Bounds (bytes include the NUL).  The counts hold the largest order the
 * engine accepts (engine/orders/order.h, engine/pricing/quote.h; this layer
 * cannot include them): 16 lines x 4 sources = 64 taxable lines, each
 * printed as at most 4 rows (wine, service fee, freight, excise) on the
 * consumer invoice = 256 rows; 32 legs; a source spread over at most 4
 * locations gives at most 256 pick rows; 2 box sizes x 32 legs = 64 box
 * rows.  Ids are the engine's: "ord_DE_" + 20 characters, and a leg id
 * that adds ".L32" (31 bytes), with room to spare. */
#define DOC_STR_MAX 96       /* any name, description or address line */
#define DOC_CODE_MAX 24      /* VAT id, excise number, CN code, series */
#define DOC_ID_MAX 48        /* order id, leg id */
#define DOC_ADDR_LINES 4     /* address lines per party */
#define DOC_LINES_MAX 256    /* printed rows (order lines x sources x components) */
#define DOC_VAT_MAX 8        /* distinct VAT rates */
#define DOC_LEGS_MAX 32      /* fulfilment legs (source x location) */
#define DOC_PICKS_MAX 256    /* pick list rows */
#define DOC_BOXES_MAX 64     /* box packing rows */
#define DOC_QTY_MAX 100000   /* units on one line */
#define DOC_AMOUNT_MAX 100000000000000LL /* 10^14 minor units: no product overflows int64 */
#define DOC_VAT_RATE_MAX 10000 /* basis points: 100 % */
#define DOC_SSCC_LEN 18      /* GS1 SSCC digits including the check digit */

enum doc_kind {
	DOC_CONSUMER_INVOICE,
	DOC_TRANSPORT_DOCUMENT,
	DOC_CARRIER_LABEL,
	DOC_ORIGINATOR_PROFORMA,
	DOC_ORIGINATOR_INVOICE,
	DOC_FULFILLER_INSTRUCTION,
	DOC_KIND_COUNT
};

/* The API names of the kinds ("consumer_invoice", ...), index = enum. */
extern const char *const doc_kind_names[DOC_KIND_COUNT];

/* EMCS destination types (the code printed on the transport document). */
enum doc_destination {
	DOC_DEST_TAX_WAREHOUSE = 1,
	DOC_DEST_REGISTERED_CONSIGNEE = 2,
	DOC_DEST_TEMP_REGISTERED_CONSIGNEE = 3,
	DOC_DEST_DIRECT_DELIVERY = 4,
	DOC_DEST_EXEMPTED = 5,
	DOC_DEST_EXPORT = 6,
	DOC_DEST_UNKNOWN = 8
};

struct doc_date {
	int year;   /* 2000..2999 */
	int month;  /* 1..12 */
	int day;    /* 1..days in month */
};

struct doc_party {
	char name[DOC_STR_MAX];                     /* required */
	char address[DOC_ADDR_LINES][DOC_STR_MAX];  /* unused lines are "" */
	char country[3];                            /* ISO 3166 alpha-2, required */
	char vat_id[DOC_CODE_MAX];                  /* "" when none */
	char excise_number[DOC_CODE_MAX];           /* SEED number, "" when none */
};

/* The wine label particulars of spec 2.2 that a document repeats. */
struct doc_wine {
	char name[DOC_STR_MAX];       /* required */
	int vintage;                  /* 0 = non-vintage */
	int abv_centi;                /* % vol x 100 (1350 = 13.5 % vol), 1..10000 */
	int volume_ml;                /* nominal volume, 1..100000 */
	char allergens[DOC_STR_MAX];  /* "contains sulphites"; "" when none */
	char producer[DOC_STR_MAX];   /* producer / bottler line, required */
	char origin[DOC_STR_MAX];     /* "AOP Bourgogne, France", required */
};

struct doc_line {
	char description[DOC_STR_MAX]; /* required */
	struct doc_wine wine;
	int leg;                       /* index into legs[] */
	int64_t quantity;              /* units, 1..DOC_QTY_MAX */
	int64_t unit_price;            /* net per unit, minor units */
	int64_t net;                   /* taxable line amount, minor units */
	int vat_rate_bp;               /* basis points, 0..DOC_VAT_RATE_MAX */
	int vat_group;                 /* 0: a taxable line alone; else the rows with this
					* value are one taxable line (same leg, same rate),
					* its VAT rounded once on the sum of their nets */
	char excise_code[DOC_CODE_MAX]; /* excise product code (W200), "" if none */
	char cn_code[DOC_CODE_MAX];     /* combined nomenclature (22042109) */
	int64_t litres_cl;             /* litres x 100 of product on the line */
	int packages;                  /* packages (boxes) for the line, >= 0 */
	int charge;                    /* 1: a charge the buyer pays with the goods (service
					* fee, freight, excise duty), not goods: no wine
					* particulars (wine is ignored), no litres or packages */
};

struct doc_vat {
	int rate_bp;                   /* basis points */
	int64_t base;                  /* sum of line nets at this rate */
	int64_t vat;                   /* sum of the VAT of its taxable lines */
};

/* A pickup window: a date and minutes after midnight (local to the fulfiller). */
struct doc_window {
	struct doc_date date;
	int from_min;                  /* 0..1439 */
	int to_min;                    /* from_min..1439 */
};

struct doc_leg {
	char id[DOC_ID_MAX];           /* leg id, required, printable ASCII */
	struct doc_party originator;   /* the source that sells this leg's wine */
	struct doc_party fulfiller;    /* who ships it (place of dispatch) */
	char sscc[DOC_SSCC_LEN + 1];   /* 18 digits with GS1 check digit */
	struct doc_window pickup;
};

struct doc_pick {
	int leg;
	char location[DOC_STR_MAX];    /* bin / cellar position */
	char sku[DOC_ID_MAX];          /* the seller's SKU or the wine id */
	char description[DOC_STR_MAX];
	int64_t quantity;              /* 1..DOC_QTY_MAX */
};

struct doc_box {
	int leg;
	int box_units;                 /* 6 or 12 */
	int count;                     /* boxes of that size, >= 1 */
};

struct doc_model {
	enum doc_kind kind;
	char lang[3];                  /* "en", "de", ... (i18n.h) */
	char currency[4];              /* ISO 4217 */
	char series[DOC_CODE_MAX];     /* numbering series, required */
	uint64_t number;               /* sequential number in the series, >= 1 */
	struct doc_date issue_date;    /* also the PDF creation date */
	struct doc_date supply_date;
	char order_id[DOC_ID_MAX];
	struct doc_party issuer;
	struct doc_party recipient;
	struct doc_party ship_to;      /* delivery place / consignee address */
	char seller_name[DOC_STR_MAX]; /* consumer invoice: the seller named */
	enum doc_destination destination;
	int leg;                       /* per-leg kinds: which legs[] entry */
	int n_legs, n_lines, n_vat, n_picks, n_boxes;
	struct doc_leg legs[DOC_LEGS_MAX];
	struct doc_line lines[DOC_LINES_MAX];
	struct doc_vat vat[DOC_VAT_MAX];
	struct doc_pick picks[DOC_PICKS_MAX];
	struct doc_box boxes[DOC_BOXES_MAX];
	int64_t total_net;             /* sum of the printed lines' net */
	int64_t total_vat;             /* sum of vat[].vat */
	int64_t total_gross;           /* total_net + total_vat */
};

/* 1 if the kind prints only legs[m->leg] (label, instruction, originator). */
int doc_kind_per_leg(enum doc_kind k);

/* 1 if line i is printed on m's document (all lines, or the lines of
 * legs[m->leg] for a per-leg kind). */
int doc_line_printed(const struct doc_model *m, int i);

/* The GS1 mod-10 check digit of the first 17 digits of s; -1 if any of
 * them is not a digit. */
int doc_gs1_check_digit(const char *s17);

/* VAT of base at rate_bp basis points, rounded half-up (away from zero for
 * a negative base) once; base bounded by DOC_AMOUNT_MAX. */
int64_t doc_vat_of(int64_t base, int rate_bp);

/* The taxable line that printed line i closes: 1 when i is the last
 * printed line of its vat_group (always, for vat_group 0), with the sum of
 * the group's printed nets in *base and its VAT (base x its rate, half-up
 * once) in *vat; 0 otherwise.  Where the renderer prints an order's
 * per-line VAT. */
int doc_taxable_line(const struct doc_model *m, int i, int64_t *base, int64_t *vat);

/* Fill m->vat[] and the totals from the printed lines (the rates in order
 * of first appearance; each rate's VAT the sum of its taxable lines').
 * 0, or -1 with err when more than DOC_VAT_MAX rates are used. */
int doc_model_sum(struct doc_model *m, char *err, size_t errlen);

/* Check every field against its bound and the arithmetic (each taxable
 * line in one leg at one rate, VAT per rate = the sum of the taxable
 * lines' VAT, totals, SSCC check digit).  0, or -1 with a message naming the first
 * offending field ("lines[3].quantity: 0 is outside 1..100000") in err
 * (always NUL-terminated when errlen > 0). */
int doc_model_validate(const struct doc_model *m, char *err, size_t errlen);

#endif
