/*
 * taxctx.h -- GET /v1/tax-context?origin=&destination=: the spec 2.6
 * tax/duty context of a route, read from the current reference-data
 * version (engine/refdata.h).  Why a route of its own: sellers and
 * storefronts show the duty and VAT regime before they quote, and auditors
 * check a quote's tax_breakdown against the same figures and sources.
 */
#ifndef WM_TAXCTX_H
#define WM_TAXCTX_H

#include "engine/route.h"

extern const struct route taxctx_routes[];

#endif
