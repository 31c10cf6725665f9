/*
 * consumer_token.h -- the consumer's credential for one order (spec 3.1:
 * "consumer or partner cancels"; issue 16 item 4: returns "by a
 * consumer-side or platform request").
 *
 * A consumer has no API key: publishable storefront keys cannot hold
 * write:orders (a public key must never cancel anyone's order), and a
 * consumer is not a partner.  What a consumer holds instead is a token for
 * one order, which the order's seller fetches
 * (GET /v1/orders/{id}/consumer-token) and hands to its customer (the
 * confirmation e-mail, the storefront's order page).  The token opens only
 * the routes flagged ROUTE_F_CONSUMER (route.h), and only for its order.
 *
 * Why derived and not stored: token = "wm_ct_" + base64url(HMAC-SHA256(K,
 * "wm-consumer-token v1\0" + order id)).  Nothing is kept at rest (the
 * standard "keys hashed at rest" holds trivially), every shard and router
 * of a cluster checks it without a lookup (the router at the edge, before
 * forwarding; K is derived from the cluster secret they share), and the
 * seller can fetch it again at any time.  Checked in constant time.
 * A single shard without a cluster secret keeps K in its data directory
 * (consumer-token.key, 32 random bytes, mode 600, fsync'd on creation).
 */
#ifndef WM_CONSUMER_TOKEN_H
#define WM_CONSUMER_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#define CT_PREFIX "wm_ct_"
#define CT_PREFIX_LEN 6
#define CT_MAC_B64_LEN 43                          /* base64url of 32 bytes, no padding */
#define CT_TOKEN_LEN (CT_PREFIX_LEN + CT_MAC_B64_LEN) /* 49 */
#define CT_KEY_LEN 32
#define CT_KEY_FILE "consumer-token.key"

struct cluster_key;

/* K from the cluster secret (HMAC of a fixed label): 0, or -1. */
int ct_key_derive(const struct cluster_key *ck, uint8_t out[CT_KEY_LEN]);

/* K from <dir>/consumer-token.key, created (random, mode 600, file and
 * directory fsync'd) when missing: 0, or -1 with the reason in err. */
int ct_key_load_or_create(const char *dir, uint8_t out[CT_KEY_LEN], char *err, size_t errlen);

/* The token of order_id (NUL-terminated, CT_TOKEN_LEN chars): 0, or -1. */
int ct_make(const uint8_t key[CT_KEY_LEN], const char *order_id, char out[CT_TOKEN_LEN + 1]);

/* 1 if tok (len bytes) starts with CT_PREFIX: a consumer token, well-formed
 * or not (the caller then answers with ct_check's verdict, never tries it
 * as an API key). */
int ct_is_token(const char *tok, size_t len);

/* 1 if tok (len bytes) is order_id's token, compared in constant time;
 * 0 otherwise (wrong length, wrong order, forged). */
int ct_check(const uint8_t key[CT_KEY_LEN], const char *order_id, const char *tok, size_t len);

#endif
