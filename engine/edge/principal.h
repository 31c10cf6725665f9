/*
 * principal.h -- the caller's identity as the router forwards it to a
 * shard (DESIGN.md section 9, "The edge"): X-WM-Principal.
 *
 * The router checks the key, the scope, the action and the rate once, then
 * sends the resolved principal with the request; the signature of the
 * request covers the header (cluster_auth.h, ck_sign_principal), so a
 * shard takes it as is.  It also carries how many rows the entity's record
 * quota still allows: the shard refuses a read needing more, the router
 * charges what the shard reports back (X-WM-Rows).
 *
 * Wire form, one line, fields in this order, single spaces:
 *   v1 k=<key id> e=<entity id> s=<scope bits, hex> t=<key kind>
 *      r=<roles> st=<status> c=<channel id or -> q=<rows left>
 * ids are 1..ID_MAX_LEN-1 bytes of [A-Za-z0-9_-]; numbers are decimal
 * (s hex), bounded by their types; q=4294967295 means unlimited.
 */
#ifndef WM_PRINCIPAL_H
#define WM_PRINCIPAL_H

#include <stddef.h>
#include <stdint.h>

#include "engine/edge/api.h"

#define PRINCIPAL_MAX 256 /* bytes of the header value: fits every field at its bound */

/* Write who (authenticated) and quota_left into out (PRINCIPAL_MAX bytes,
 * NUL-terminated); its length, or -1 if a field is outside the wire form. */
int principal_encode(const struct principal *who, uint32_t quota_left, char out[PRINCIPAL_MAX]);

/* Parse a received value (len bytes, not NUL-terminated) into *who
 * (authenticated, is_platform derived from the entity) and *quota_left;
 * 0, or -1 when it is not exactly the wire form. */
int principal_decode(const char *v, size_t len, struct principal *who, uint32_t *quota_left);

#endif
