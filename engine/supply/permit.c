/*
 * permit.c -- the selling-permission evaluator (see permit.h).
 *
 * Why the order of checks: the cheapest and broadest refusal first
 * (network_shareable), then who (named sellers), then where the seller is,
 * then where the wine goes.  "Allowed" lists restrict (if present, only
 * these); "blocked" lists exclude and win over "allowed".  Lists are short
 * (bounded by PERMIT_MAX_*), so a linear scan beats any index here.  The
 * destination is optional because a listing is judged before any buyer
 * exists; quotes and order capture pass it and get the full answer.
 */
#include "engine/supply/permit.h"

#include <string.h>

static const struct {
	const char *code;
	const char *reason;
} verdicts[PERMIT_N_VERDICTS] = {
	[PERMIT_OK] = {"allowed", "the offer's permissions allow this seller"},
	[PERMIT_OK_OWNER] = {"owner", "the seller is the offer's originator"},
	[PERMIT_NOT_SHAREABLE] = {"not_network_shareable", "the originator does not share this offer with other sellers"},
	[PERMIT_DEFAULT_DENY] = {"default_deny", "the offer is closed by default and does not name this seller or its country"},
	[PERMIT_SELLER_NOT_NAMED] = {"seller_not_named", "the offer is restricted to named sellers and this seller is not one"},
	[PERMIT_SELLER_COUNTRY_BLOCKED] = {"seller_country_blocked", "the offer blocks sellers in this seller's country"},
	[PERMIT_SELLER_COUNTRY_NOT_ALLOWED] = {"seller_country_not_allowed", "the offer allows only sellers in other countries"},
	[PERMIT_DESTINATION_BLOCKED] = {"destination_blocked", "the offer may not be sold to this destination country"},
	[PERMIT_DESTINATION_NOT_ALLOWED] = {"destination_not_allowed", "the offer may be sold only to other destination countries"},
};

static int in_countries(const char (*list)[3], unsigned n, const char *cc)
{
	for (unsigned i = 0; cc && i < n; i++)
		if (list[i][0] == cc[0] && list[i][1] == cc[1] && cc[2] == 0)
			return 1;
	return 0;
}

static int in_sellers(const struct permit_rules *r, const char *id)
{
	for (unsigned i = 0; id && i < r->n_named; i++)
		if (strcmp(r->named[i], id) == 0)
			return 1;
	return 0;
}

enum permit_verdict permit_check(const struct permit_rules *r, const struct permit_query *q)
{
	if (q->originator_id && q->seller_id && strcmp(q->originator_id, q->seller_id) == 0)
		return PERMIT_OK_OWNER;
	if (!r->network_shareable)
		return PERMIT_NOT_SHAREABLE;
	int named = in_sellers(r, q->seller_id);
	if (r->n_named && !named)
		return PERMIT_SELLER_NOT_NAMED;
	if (in_countries(r->blocked, r->n_blocked, q->seller_country))
		return PERMIT_SELLER_COUNTRY_BLOCKED;
	int country_allowed = in_countries(r->allowed, r->n_allowed, q->seller_country);
	if (r->n_allowed && !country_allowed && !named)
		return PERMIT_SELLER_COUNTRY_NOT_ALLOWED;
	if (r->deflt == PERMIT_DEFAULT_NONE && !named && !country_allowed)
		return PERMIT_DEFAULT_DENY;
	if (q->destination) {
		if (in_countries(r->blocked, r->n_blocked, q->destination))
			return PERMIT_DESTINATION_BLOCKED;
		if (r->n_allowed && !in_countries(r->allowed, r->n_allowed, q->destination))
			return PERMIT_DESTINATION_NOT_ALLOWED;
	}
	return PERMIT_OK;
}

const char *permit_code(enum permit_verdict v)
{
	return (unsigned)v < PERMIT_N_VERDICTS ? verdicts[v].code : "unknown";
}

const char *permit_reason(enum permit_verdict v)
{
	return (unsigned)v < PERMIT_N_VERDICTS ? verdicts[v].reason : "unknown verdict";
}
