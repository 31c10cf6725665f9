/*
 * quote.h -- POST /v1/orders/quote-calculate (spec 4.1, 2.8, 2.9; DESIGN.md
 * 5 and 6) and the routing function it previews.  The why is in quote.c.
 */
#ifndef WM_QUOTE_H
#define WM_QUOTE_H

#include <stdint.h>

#include "engine/id.h"
#include "engine/price.h"
#include "engine/route.h"

#define QUOTE_MAX_LINES 16      /* lines per quote */
#define QUOTE_MAX_SOURCES 4     /* allocations (sources) per line: 16 x 4 = PRICE_MAX_LINES */
#define QUOTE_MAX_CANDIDATES 32 /* sellable offers of one wine routing looks at (by-wine index order) */
#define QUOTE_PLATFORM_FEE_PPM 50000u /* default --platform-fee-ppm: F_Platform = 5 % of (P_B2B + M) */
#define QUOTE_RECRUITER_PPM 0u        /* R_Recruiter: no partner recruiter config exists yet */

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

/* Consumer volume caps (spec 8), microlitres per quote/order. */
struct quote_cap {
	char destination[3];      /* "" = every destination without its own row */
	int64_t still_ul, sparkling_ul; /* 0 = no cap */
};
/* The cap row for a destination (never NULL). */
const struct quote_cap *quote_cap_for(const char *destination);

extern const struct route quote_routes[];

#endif
