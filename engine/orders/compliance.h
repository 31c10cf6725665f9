/*
 * compliance.h -- the delivery register (one record per product per
 * delivered leg) and the destination declarations (spec 2.8, 2.9, 1.9;
 * the rules and why in compliance.c):
 *
 *   GET /v1/orders/{id}/compliance                                  the order's records
 *   GET /v1/compliance/declarations?destination=CC&period=YYYY-MM    a month's declaration
 */
#ifndef WM_COMPLIANCE_H
#define WM_COMPLIANCE_H

#include "engine/edge/route.h"
#include "engine/storage/shard.h"

struct order;

/* Stage the register records of leg li of o, delivered at delivered_at
 * (the scan's normalised time), into the OPEN transaction.  0 or -1. */
int compliance_stage_leg(struct shard *sh, const struct order *o, unsigned li, const char *delivered_at);

/* Stage the correction records of return return_id of o (ret: its stored
 * document) into the OPEN transaction, booked now: goods_back (kind
 * return) per leg and line of its `legs` -- units, litres, alcohol, excise
 * and VAT negative; else (kind refund) per line of its `lines` -- the VAT
 * share only (compliance.c).  0 or -1. */
struct json_value;
int compliance_stage_return(struct shard *sh, const struct order *o, const char *return_id, int goods_back,
			    const struct json_value *ret);

extern const struct route compliance_routes[];
extern const struct table_ops compliance_table_ops;

#endif
