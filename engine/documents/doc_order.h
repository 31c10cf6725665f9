/*
 * doc_order.h -- one trade document model (doc_model.h) filled from an
 * order as the engine returns it to the platform (GET /v1/orders/{id} with
 * the operator key): issue 17's "generated from the same order data".
 *
 * Why this shape:
 *  - A pure function of (order JSON text, a small context, kind, leg).  It
 *    reads no table and no global, so the shard can call it on the loop or
 *    the render thread can call it on a copy of the text, and tests feed it
 *    hand-written orders.  The order text is parsed with net/json.h, whose
 *    numbers keep their exact text: every amount becomes int64 minor units
 *    without passing through a double (DESIGN.md section 6).
 *  - The order carries every amount and every id: lines bound to offers
 *    with p2b and qty, sourcing (who originates each source), the legs
 *    (location, fulfiller, items), the financial breakdown per (line,
 *    source), the tax breakdown per line and the settlement split.  What it
 *    does not carry comes from the caller through struct doc_order_ctx: the
 *    parties' addresses, VAT and excise numbers (by partner id), the wine's
 *    label particulars (by wine id), the platform entity, the language, the
 *    number the sequence gave, the dates, the GS1 company prefix, and
 *    optionally the name of a pick location and a leg's pickup window.
 *  - Figures are the order's, and they must reconcile or nothing is made:
 *    the consumer invoice prints every component the consumer pays, one
 *    taxable line (an order line from one source) as a goods row (P_B2B +
 *    R_Recruiter + M_Curator: the price of the wine) plus a row per
 *    non-zero service fee, freight and excise duty, all of one vat_group,
 *    so the VAT printed per taxable line is the order's V_VAT and the VAT
 *    per rate is their sum (spec 2.9: rounded per line, then summed).  The
 *    mapper checks, and refuses with the figure that disagrees: V_VAT =
 *    rate x the taxable line's components rounded once, the line's
 *    tax_breakdown (VAT amount, taxable amount, excise) = the sum of its
 *    sources, the components add up to financial_breakdown.total, quantities
 *    of sources and legs add up to the line's.  Originator documents print
 *    the leg's P_B2B (p2b x qty), and the originator's P_B2B over the whole
 *    order must equal its settlement_split amount.
 *  - Documents per order (spec 2.8): the consumer invoice and the transport
 *    document once; per leg (a source at one location, what one fulfiller
 *    ships and one carrier moves) the label, the fulfiller instruction, the
 *    originator proforma and the originator final invoice, so a split order
 *    emits per-source originator documents and per-leg labels, and each
 *    final invoice matches its leg.
 */
#ifndef WM_DOC_ORDER_H
#define WM_DOC_ORDER_H

#include <stddef.h>
#include <stdint.h>

#include "engine/documents/doc_model.h"

/* Every document of an order: 2 per order, 4 per leg. */
#define DOC_ORDER_DOCS_MAX (2 + 4 * DOC_LEGS_MAX)
/* An order text larger than this is refused (a 32-leg, 64-source order
 * with every candidate is well under it). */
#define DOC_ORDER_JSON_MAX ((size_t)1 << 20)

/* What the catalogue knows of a wine that an order does not carry. */
struct doc_order_wine {
	struct doc_wine wine;           /* the label particulars (spec 2.2) */
	char cn_code[DOC_CODE_MAX];     /* combined nomenclature; "": the order's hs_tariff_code */
	char excise_code[DOC_CODE_MAX]; /* excise product code; "": the order's excise_tax_category */
};

struct doc_order_ctx {
	/* A party by partner id (sellers, originators, fulfillers the order
	 * names): 0 with *out filled, -1 unknown.  Required. */
	int (*party)(void *arg, const char *partner_id, struct doc_party *out);
	/* A wine by wine id: 0 with *out filled, -1 unknown.  Required. */
	int (*wine)(void *arg, const char *wine_id, struct doc_order_wine *out);
	/* Optional: the pick location's name (cellar, bin) of a location id
	 * into out[cap]: 0, or -1 unknown.  NULL: the pick list prints the id. */
	int (*location)(void *arg, const char *location_id, char *out, size_t cap);
	/* Optional: the pickup window of a leg: 0, or -1 unknown.  NULL: the
	 * whole supply date (00:00-23:59). */
	int (*pickup)(void *arg, const char *leg_id, struct doc_window *out);
	void *arg;                      /* passed to every callback */
	struct doc_party platform;      /* the platform entity, merchant of record */
	const char *lang;               /* "de", ...; NULL: doc_order_lang(destination) */
	const char *series;             /* numbering series of this document */
	uint64_t number;                /* its number in the series (>= 1) */
	struct doc_date issue_date;
	struct doc_date supply_date;    /* {0}: the date of the order's created_at */
	const char *gs1_prefix;         /* GS1 company prefix: 7 to 10 digits */
	int sscc_extension;             /* SSCC extension digit, 0..9 */
	int originator_vat_bp;          /* VAT on the originator's supply to the platform
					 * (0: intra-EU B2B, reverse charge), 0..10000 */
	enum doc_destination destination; /* 0: DOC_DEST_DIRECT_DELIVERY */
};

/* One document an order has. */
struct doc_order_doc {
	enum doc_kind kind;
	int leg;                        /* the leg of a per-leg kind; 0 otherwise */
};

/*
 * Fill *out with the document `kind` of the order in order_json[0..len)
 * (for a per-leg kind, of fulfillments[leg]).  0 with a model that passes
 * doc_model_validate(), or -1 with err naming what is missing, invalid or
 * does not reconcile ("financial_breakdown: V_VAT of line 0 from offer
 * ofr_X is 2365, not 1900 bp x 12450 rounded once (2366)"; amounts in
 * minor units), err always NUL-terminated when errlen > 0.
 * *out is overwritten either way.
 */
int doc_order_model(const char *order_json, size_t len, const struct doc_order_ctx *ctx,
		    enum doc_kind kind, int leg, struct doc_model *out, char *err, size_t errlen);

/*
 * The documents the order in order_json[0..len) has, in a fixed order:
 * consumer invoice, transport document, then per leg its label, fulfiller
 * instruction, originator proforma and originator final invoice.  The
 * count (at most cap), or -1 with err when the order has no legs, more
 * than DOC_LEGS_MAX, cannot be read, or cap is too small.
 */
int doc_order_documents(const char *order_json, size_t len, struct doc_order_doc *out, int cap,
			char *err, size_t errlen);

/* The document language of a destination country: its official language
 * among i18n.h's (AT DE -> de, BE FR LU -> fr, NL -> nl, CY GR -> el, ...),
 * "en" otherwise.  Never NULL. */
const char *doc_order_lang(const char *country);

/*
 * A leg's SSCC, deterministic: the extension digit, the GS1 company prefix
 * (7..10 digits), a serial reference of the remaining digits made of a
 * hash of the order id (FNV-1a, all but the last two digits) and the leg
 * index (the last two), and the GS1 check digit; 18 digits into out.
 * 0, or -1 when the prefix, extension or leg (0..99) is invalid.
 */
int doc_order_sscc(const char *gs1_prefix, int extension, const char *order_id, int leg,
		   char out[DOC_SSCC_LEN + 1]);

#endif
