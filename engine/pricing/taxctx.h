/*
 * taxctx.h -- GET /v1/tax-context?origin=&destination=: the spec 2.6
 * tax/duty context of a route, read from the current reference-data
 * version (engine/pricing/refdata.h).  Why a route of its own: sellers and
 * storefronts show the duty and VAT regime before they quote, and auditors
 * check a quote's tax_breakdown against the same figures and sources.
 */
#ifndef WM_TAXCTX_H
#define WM_TAXCTX_H

#include "engine/edge/route.h"

extern const struct route taxctx_routes[];

/* Spec 2.6 duty_status of stock shipped from a location of each enum
 * loc_type (engine/stock/location.h): BONDED_WAREHOUSE EXCISE_SUSPENDED,
 * IN_TRANSIT_CONTAINER PRE_ARRIVAL, every other type DUTY_PAID. */
extern const char *const taxctx_duty_by_type[];

#endif
