/*
 * quote.h -- POST /v1/orders/quote-calculate (spec 4.1, 2.8, 2.9; DESIGN.md
 * 5 and 6) and the routing function it previews.  The why is in quote.c.
 */
#ifndef WM_QUOTE_H
#define WM_QUOTE_H

#include <stdint.h>

#include "engine/storage/id.h"
#include "engine/supply/offer_seer.h"
#include "engine/supply/permit.h"
#include "engine/pricing/price.h"
#include "engine/edge/route.h"

#define QUOTE_MAX_LINES 16      /* lines per quote */
#define QUOTE_MAX_SOURCES 4     /* allocations (sources) per line: 16 x 4 = PRICE_MAX_LINES */
#define QUOTE_MAX_CANDIDATES 32 /* candidates of one line routing prices: the first in routing order */
#define QUOTE_SCAN_MAX 1024     /* sellable, visible offers of one wine ranked for those places */
#define QUOTE_LEVELS_PER_SOURCE 4 /* stock locations one source may ship from (order legs); stock-backed
				    ATP counts only the ones with the most ATP */
#define QUOTE_PLATFORM_FEE_PPM 50000u /* default --platform-fee-ppm: F_Platform = 5 % of (P_B2B + M) */

_Static_assert(QUOTE_MAX_LINES * QUOTE_MAX_SOURCES <= PRICE_MAX_LINES, "every allocation is one priced line");

/* One candidate offer of a line, as the routing function sees it. */
struct route_cand {
	const char *offer_id;     /* NUL-terminated; the tie-break */
	int64_t atp;              /* units available to promise, >= 0 */
	int64_t cost;             /* landed cost of the whole line from this offer (destination minor units) */
	uint8_t is_estate;        /* originator = the partner linked to the wine's producer */
	uint8_t permitted;        /* permit_check allowed (seller, destination) */
	uint8_t compliant;        /* the price engine can price it (tariff, excise, FX) */
};

enum route_err {
	ROUTE_OK = 0,
	ROUTE_E_NO_OFFER,         /* no candidate at all */
	ROUTE_E_NOT_PERMITTED,    /* candidates exist, none permitted */
	ROUTE_E_NOT_PRICEABLE,    /* permitted ones exist, none priceable */
	ROUTE_E_INSUFFICIENT,     /* the permitted, priceable ATP together is short of qty */
	ROUTE_E_TOO_MANY_SOURCES, /* covering qty needs more than QUOTE_MAX_SOURCES offers */
};

enum route_split { ROUTE_SPLIT_NONE = 0, ROUTE_SPLIT_ESTATE_ATP_SHORT, ROUTE_SPLIT_MULTI_ORIGINATOR };
extern const char *const route_split_names[]; /* NULL, "estate_atp_short", "multi_originator_policy" */

struct route_alloc {
	unsigned cand;            /* index into the candidates */
	int64_t qty;
};

struct route_plan {
	unsigned n;
	struct route_alloc a[QUOTE_MAX_SOURCES];
	uint8_t split;            /* enum route_split */
};

/*
 * Route one line (spec 4.1 rules 1-4), a pure function of its inputs:
 *   1. an estate candidate (permitted, compliant) whose ATP covers qty wins
 *      alone (the cheapest such one if several);
 *   2. else the cheapest (cost, then offer id) other permitted, compliant
 *      candidate whose ATP covers qty wins alone;
 *   3. else split: the estate candidates' ATP first, then the others
 *      cheapest first, each allocation min(remaining, atp); split is
 *      estate_atp_short when an estate candidate had ATP > 0, else
 *      multi_originator_policy.
 * n <= QUOTE_MAX_CANDIDATES, qty >= 1.  Returns ROUTE_OK with *out, or why not.
 */
enum route_err route_line(const struct route_cand *c, unsigned n, int64_t qty, struct route_plan *out);

/* Answer 422 volume_cap_exceeded: the consumer would receive used_ul (its
 * other orders in the window) + requested_ul (this one) of category in
 * dest, past limit_ul over period_days (spec 8; data/caps.tsv). */
struct api_ctx;
void quote_cap_refusal(struct api_ctx *c, int category, const char *dest, int64_t limit_ul, uint32_t period_days,
		       int64_t used_ul, int64_t requested_ul);

/* ---- the quote engine, shared by quote-calculate and order capture ---------- */

struct offer;
struct channel;
struct inv_loc_set;
struct wine;
struct refdata;
struct shard;
struct jw;
struct api_ctx;
struct json_value;

/* Why a candidate offer of a line won or lost (GET /v1/orders/{id}/sourcing). */
enum quote_rule {
	QR_SELECTED_ESTATE,       /* rule 1: the estate's offer covers the line */
	QR_SELECTED_CHEAPEST,     /* rule 2: the cheapest covering offer */
	QR_SELECTED_SPLIT,        /* rule 3: one allocation of a split */
	QR_NOT_PERMITTED,         /* the permission evaluator refused (seller, destination) */
	QR_NOT_PRICEABLE,         /* the price engine cannot price it (tariff, excise, FX) */
	QR_NOT_ON_CHANNEL,        /* its stock lies only at locations the sales channel is not linked to */
	QR_NO_ATP,                /* nothing available to promise */
	QR_ATP_SHORT,             /* cannot cover the line alone and a single offer won */
	QR_ESTATE_FIRST,          /* covers the line, but an estate offer won (priority 1) */
	QR_HIGHER_COST,           /* covers the line, but a cheaper one won */
	QR_NOT_NEEDED,            /* the split was covered before reaching it */
	QUOTE_N_RULE
};
extern const char *const quote_rule_names[];

struct quote_line {
	const char *sku;
	const struct wine *w;
	const struct offer *only;        /* sku named an offer */
	int64_t qty;
	uint8_t box, cat;
	unsigned ncand;
	unsigned considered;             /* sellable offers the caller sees, ranked (<= QUOTE_SCAN_MAX) */
	uint8_t scan_cut;                /* the wine had more than QUOTE_SCAN_MAX of them */
	struct route_cand cand[QUOTE_MAX_CANDIDATES];
	const struct offer *offer[QUOTE_MAX_CANDIDATES];
	struct price_line_in pin[QUOTE_MAX_CANDIDATES];
	const char *fulfiller[QUOTE_MAX_CANDIDATES];
	const char *location[QUOTE_MAX_CANDIDATES];
	uint8_t verdict[QUOTE_MAX_CANDIDATES];
	uint8_t off_channel[QUOTE_MAX_CANDIDATES]; /* has stock, none at the channel's locations */
	enum price_err perr[QUOTE_MAX_CANDIDATES];
	struct route_plan plan;
	unsigned first;                  /* index of its first priced line in all.lines */
};

struct quote {
	struct shard *sh;
	struct api_ctx *caller;          /* whose read-path filter decides which offers are candidates */
	struct offer_seer seer;          /* the caller's, worked out once per quote */
	const struct refdata *rd;
	char dest[3];
	char seller[ID_MAX_LEN];
	const char *seller_country;
	char recruiter[ID_MAX_LEN];      /* the seller's recruiter (spec 2.9 R_Recruiter), "" if none */
	uint32_t recruiter_ppm;          /* its royalty rate, parts per million */
	/* the sales channel sold through (spec 2.5): its linked locations scope
	 * every candidate's stock; NULL = a seller without any channel (unscoped) */
	const struct channel *ch;
	char channel_id[ID_MAX_LEN];     /* "" when ch is NULL */
	const char *estate;              /* the current wine's estate partner id or NULL */
	int64_t now_ms;
	uint32_t date;                   /* YYYYMMDD the rates are taken for (refdata_today) */
	char region[RD_MAX_REGION + 1];  /* VAT region of the delivery postal code, "" = mainland */
	uint8_t postal_given;            /* 0 none, 1 a postal code chose the region, 2 one the region table could not read */
	uint8_t stock_backed;            /* ATP = the offer's sellable inventory levels (order capture) */
	unsigned n;
	struct quote_line l[QUOTE_MAX_LINES];
	struct price_line_in flat[PRICE_MAX_LINES];
	struct price_quote one, all;
	struct price_memo memo;          /* the lookups every candidate's pricing shares (price.h) */
	const struct offer *scan[QUOTE_SCAN_MAX]; /* a line's sellable offers being ranked (quote.c) */
	struct quote_rank {                       /* scan[i]'s routing-order key, worked out once */
		uint8_t cls;                      /* 2: the estate's, +1: in the ranked currency */
		int64_t price;
	} rank[QUOTE_SCAN_MAX];
};

/*
 * Validate destination_country, seller, channel_id and lines[] of a body and resolve
 * skus (adding to any field errors the caller already collected: all,
 * unknown skus included, are answered at once), check the volume caps,
 * gather candidates, route every line
 * and price every allocation.  stock_backed: a candidate's ATP is the sum of
 * its offer's sellable inventory levels (what holds can take) instead of
 * qty_available.  Returns a heap quote (quote_free), or NULL with the error
 * response written.  Pointers in it are valid until the next write.
 */
struct quote *quote_compute(struct api_ctx *c, const struct json_value *body, int stock_backed);
void quote_free(struct quote *q);

/* The quote's sales channel's linked locations as a set for
 * inv_offer_sellable_at (built in *tmp, pointing into the channel row), or
 * NULL when the quote is unscoped (a seller without a channel). */
const struct inv_loc_set *quote_locations(const struct quote *q, struct inv_loc_set *tmp);

/* Who ships a level's units: the location's owner when it is a Fulfiller
 * partner other than the stock owner (a 3PL holding the stock), else the
 * stock owner.  The one rule for a quote's sources and an order's legs. */
struct inv_level;
const char *quote_fulfiller_of(struct shard *sh, const struct inv_level *lv);

/* A candidate whose permission verdict for its seller is v is hidden from
 * that seller (the read-path filter refuses the offer itself: not shared,
 * seller not named, the seller's country blocked or not allowed, default
 * deny): 1 hidden, 0 visible (allowed, or refused only for the
 * destination).  quote_permission_hidden takes the stored code
 * ("seller_not_named"); an unknown code is hidden. */
int quote_verdict_hidden(enum permit_verdict v);
int quote_permission_hidden(const char *code);

/* Why candidate k of line i won or lost. */
enum quote_rule quote_rule_of(const struct quote *q, unsigned i, unsigned k);

/* Writers (into an object being written): the members of the quote-calculate
 * response, reused by the order document. */
/* A money member: v minor units with `minor` decimals, under a literal key. */
#define quote_write_money(w, key, v, minor) jw_kfixed((w), key, (v), (unsigned)(minor))
/* The excise category (enum rd_category) of a catalogue wine category. */
int quote_excise_category(int wine_cat);
/* One line's {line, priority, split_reason, source[]}; with_candidates adds
 * candidates[] with their outcome and rule. */
void quote_write_line_sourcing(struct jw *w, const struct quote *q, unsigned i, int with_candidates);
/*
 * The tails of tax entries already written in one pass over a quote's
 * lines (source, as_of, the days in force, reference_version,
 * effective_date: a reference entry's and the quote's, the same for every
 * line that entry prices), by entry, as offsets into the buffer they were
 * written to.  A writer declares one, zeroed, before its loop over the
 * lines and passes it to each quote_write_line_tax of that loop, all into
 * one buffer that nothing resets meanwhile; a later line with the same
 * entry copies its tail from there instead of writing it again (a 5-line
 * quote wrote the same ten tails five times).  Kept for up to
 * QUOTE_TAILS_MAX entries; past them a tail is written as before.
 */
#define QUOTE_TAILS_MAX 8
struct quote_tax_tail {
	const void *entry; /* the reference entry (struct rd_excise / rd_vat) */
	size_t at, len;    /* its tail's bytes in the buffer */
};
struct quote_tax_tails {
	const struct buf *b; /* the buffer the offsets are in (NULL: none yet) */
	unsigned n;
	struct quote_tax_tail t[QUOTE_TAILS_MAX];
};
/* The tax_breakdown array of line i (rates, bases, sources, version);
 * tails: the pass's (above), or NULL. */
void quote_write_line_tax(struct jw *w, const struct quote *q, unsigned i, struct quote_tax_tails *tails);
/* Sums of line i's priced allocations: components into comp[PC_COUNT_], returns the total. */
int64_t quote_line_sums(const struct quote *q, unsigned i, int64_t *comp);
/* "financial_breakdown", "settlement_split", "components", "total" and
 * "reference_data" members. */
void quote_write_totals(struct jw *w, const struct quote *q);

extern const struct route quote_routes[];

#endif
