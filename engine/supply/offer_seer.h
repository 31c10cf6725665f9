/*
 * offer_seer.h -- the caller as the offer read-path filter sees it
 * (engine/supply/offer.c), alone in a header of no dependencies so that a
 * request's state that keeps one (struct quote) includes no table
 * machinery.
 */
#ifndef WM_OFFER_SEER_H
#define WM_OFFER_SEER_H

#include <stdint.h>

struct offer_query;

/* The caller as the read-path filter sees it, worked out once (its
 * partner's country, the clock) for a request that tests many offers;
 * q: a list's filters, NULL for the filter alone. */
struct offer_seer {
	const struct offer_query *q;
	int all;         /* the platform sees every row */
	const char *me;
	char country[3]; /* the caller partner's country, "" if none */
	int64_t now_ms;
};

#endif
