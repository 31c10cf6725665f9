/*
 * api_client.h -- helpers shared by the jansson-based integration tests.
 * A test file includes this (and jansson), never net/json.h: the JSON_*
 * names of the two clash.
 */
#ifndef WM_API_CLIENT_H
#define WM_API_CLIENT_H

#include <jansson.h>

#include "tests/harness.h"

/* Cluster tests: a function writing extra header lines for a request
 * (method, path, body) -- the cluster signature -- added to every tc_call
 * from then on in this test process; NULL (the default) adds none. */
typedef void (*tc_signer_fn)(const char *method, const char *path, const char *body, char *out, size_t n);
void tc_set_signer(tc_signer_fn fn);

/* Start a fresh wm-shard on a temporary data dir (fails the test if it
 * does not start). */
void tc_start(struct wm_proc *p);
/* One request as `key` (NULL: the operator key); the parsed body (the
 * caller decrefs), the status in *st.  Fails the test on no response or a
 * non-JSON body. */
json_t *tc_call(int port, const char *method, const char *path, const char *key, const char *body, int *st);
/* tc_call, failing the test unless the status is `want`. */
json_t *tc_expect(int port, const char *method, const char *path, const char *key, const char *body, int want);
/* tc_expect for a problem response whose "code" must be `code`. */
void tc_expect_code(int port, const char *method, const char *path, const char *key, const char *body, int want,
		    const char *code);
/* The string member k of o, or NULL. */
const char *tc_jstr(json_t *o, const char *k);
/* True if the problem's errors[] lists (field, rule). */
int tc_lists_error(json_t *problem, const char *field, const char *rule);
/* A partner of `country` with `roles` (a JSON array) and extra members (may
 * be NULL), created and moved through onboarding to live by the operator;
 * its id into out (>= 64 bytes).  It gets a sandbox payout account
 * ("acct_test") unless extra names payout_account_id itself. */
void tc_partner_live(int port, const char *name, const char *country, const char *roles, const char *extra,
		     char *out);
/* A secret key minted by the operator for `entity`; the plaintext into out
 * (>= 128 bytes). */
void tc_key_for(int port, const char *entity, char *out);

/* A published wine (operator); id into out. */
void tc_pub_wine(int port, const char *title, char *out);
/* The same, of `category` ("wine", "sparkling_wine", ...), its producer
 * linked to the estate partner `estate` (NULL: none). */
void tc_pub_wine_of(int port, const char *title, const char *estate, const char *category, char *out);
/* POST an offer: defaults for the required members that `members` does not
 * give (the parser refuses duplicate keys); id into out when created. */
json_t *tc_offer(int port, const char *key, const char *wine, const char *members, int want, char *out);
/* How many events of `type` the key (NULL: operator) can list. */
size_t tc_count_events(int port, const char *type, const char *key);

#endif
