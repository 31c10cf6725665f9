/*
 * sync.h -- the two-way feed (spec 4.4): POST /v1/sync/push (originators
 * send wines and offers in batches), POST /v1/sync/pull (sellers and
 * fulfillers take the catalogue's changes since a cursor) and GET
 * /v1/sync/status.  The why and the decisions are in sync.c.
 */
#ifndef WM_SYNC_H
#define WM_SYNC_H

#include "engine/edge/route.h"
#include "engine/storage/table.h"

#define SYNC_PUSH_MAX_ITEMS 100u      /* items of one push; more is a 413 batch_too_large */
#define SYNC_REF_MAX 64u              /* bytes of an item's `ref` */
#define SYNC_PULL_DEFAULT 50u         /* changes one pull returns when `limit` is absent */
#define SYNC_PULL_MAX 200u            /* largest `limit` (the list page maximum) */
#define SYNC_SCAN_BUDGET 10000u       /* events one pull page (or a status count) may examine */
#define SYNC_PENDING_MAX 1000u        /* the status counts pending changes up to this */
#define SYNC_MAX_BLOCK_COUNTRIES 64u  /* entries of block_countries */
#define SYNC_MAX_BLOCK_SELLERS 64u    /* entries of block_sellers */

/* The per-caller feed state (REC_T_SYNC_STATE, one row per entity). */
extern const struct table_ops sync_state_table_ops;
extern const struct route sync_routes[];

#endif
