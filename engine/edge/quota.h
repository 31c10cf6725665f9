/*
 * quota.h -- the per-entity record quota, as the request helpers below the
 * identity layer see it (api.c charges each list and detail read).  The
 * state and the rules live with identity in auth.c, which implements these;
 * this header is the narrow interface that keeps api.c below auth.c.
 */
#ifndef WM_QUOTA_H
#define WM_QUOTA_H

#include <stdint.h>

struct api_ctx;

/*
 * Record quota for reads.  auth_quota_left() is how many rows the caller's
 * entity may still receive now (UINT32_MAX when unlimited: the platform);
 * auth_quota_charge() counts rows actually returned.  auth_quota_refuse()
 * writes the 429 (with Retry-After) that replaces a read the quota does not
 * cover; the body says nothing about the rows.
 */
uint32_t auth_quota_left(struct api_ctx *c);
void auth_quota_charge(struct api_ctx *c, uint32_t rows);
void auth_quota_refuse(struct api_ctx *c);

#endif
