/*
 * permit.h -- the selling-permission evaluator (spec 2.3 "Permissions
 * object", 5 "read-path filter"; implementation and the why in permit.c).
 *
 * ONE function decides whether a seller entity may sell an originator's
 * offer, optionally to a destination country, and says why not.  Listing
 * creation, every read of offers and listings, quotes and order capture
 * all ask it, so the rule cannot drift between them.  Pure: no engine
 * state, no allocation.
 */
#ifndef WM_PERMIT_H
#define WM_PERMIT_H

#include <stddef.h>
#include <stdint.h>

#define PERMIT_MAX_COUNTRIES 64   /* allowed or blocked list entries */
#define PERMIT_MAX_SELLERS 64     /* named_sellers entries */
#define PERMIT_ID_MAX 40          /* an entity id, with its NUL */

enum permit_default { PERMIT_DEFAULT_ANY = 0, PERMIT_DEFAULT_NONE = 1 };

struct permit_rules {
	uint8_t deflt;                /* enum permit_default */
	uint8_t network_shareable;    /* may sellers other than the originator see/sell it */
	uint8_t n_allowed, n_blocked, n_named;
	char allowed[PERMIT_MAX_COUNTRIES][3];   /* ISO alpha-2; empty list = no restriction */
	char blocked[PERMIT_MAX_COUNTRIES][3];
	char named[PERMIT_MAX_SELLERS][PERMIT_ID_MAX]; /* empty list = no restriction */
};

/* The verdict; PERMIT_OK* allow, everything else denies with that reason. */
enum permit_verdict {
	PERMIT_OK = 0,                /* allowed by the rules */
	PERMIT_OK_OWNER,              /* the seller is the originator itself */
	PERMIT_NOT_SHAREABLE,         /* network_shareable is false */
	PERMIT_DEFAULT_DENY,          /* default none and no allowance names the seller */
	PERMIT_SELLER_NOT_NAMED,      /* named_sellers is set and lacks the seller */
	PERMIT_SELLER_COUNTRY_BLOCKED,
	PERMIT_SELLER_COUNTRY_NOT_ALLOWED,
	PERMIT_DESTINATION_BLOCKED,
	PERMIT_DESTINATION_NOT_ALLOWED,
	PERMIT_N_VERDICTS
};

struct permit_query {
	const char *originator_id;    /* the offer's owner */
	const char *seller_id;        /* the entity that lists / sells */
	const char *seller_country;   /* ISO alpha-2 of the seller, or NULL */
	const char *destination;      /* ISO alpha-2 of the buyer, or NULL (listing/read time) */
};

/*
 * Decide.  The originator may always sell its own offer.  For anyone else,
 * in this order: network_shareable, named_sellers, the seller's country
 * against blocked/allowed, then (when given) the destination against
 * blocked/allowed; with default none, a seller passes only when it is
 * named or its country is explicitly allowed.
 */
enum permit_verdict permit_check(const struct permit_rules *r, const struct permit_query *q);
static inline int permit_allowed(enum permit_verdict v) { return v == PERMIT_OK || v == PERMIT_OK_OWNER; }
/* Stable machine code ("destination_blocked") and human text for a verdict. */
const char *permit_code(enum permit_verdict v);
const char *permit_reason(enum permit_verdict v);

#endif
