/*
 * idem.h -- Idempotency-Key for every write route (implementation and the
 * why in idem.c; DESIGN.md section 7).
 *
 * api_run() calls idem_begin() before a write handler and idem_end() after
 * it.  The stored response travels in the SAME WAL transaction as the
 * (last) write it answers (txn_hold/txn_release), so a crash can never keep
 * the write and lose the record that would stop a retry from repeating it.
 * A handler may commit several times: the record joins the last commit.
 */
#ifndef WM_IDEM_H
#define WM_IDEM_H

#include <stdint.h>

#include "engine/edge/api.h"
#include "engine/storage/id.h"
#include "engine/storage/table.h"

#define IDEM_MAX_KEY 255            /* Idempotency-Key: 1..255 visible ASCII bytes */
#define IDEM_MAX_BODY (256u << 10)  /* larger response bodies are not stored (status only) */
#define IDEM_PRUNE_BATCH 1000u      /* records deleted per idem_prune() call at most */

/* What became of the response body in a record ("body_state"). */
enum idem_body {
	IDEM_BODY_STORED = 0,   /* body_len bytes at body_off in the document (0 = empty body) */
	IDEM_BODY_TOO_LARGE,    /* over IDEM_MAX_BODY, or no room left in the transaction */
	IDEM_BODY_WITHHELD,     /* carries a secret shown only once (a minted API key) */
	IDEM_BODY_UNAVAILABLE,  /* not a JSON body, or the response could not be built */
};

/* One stored response (table REC_T_IDEMPOTENCY), decoded from its document. */
struct idem_record {
	struct row row;
	struct idem_record *next;   /* another entity's record under the same key (idem.c) */
	uint64_t created_ms;        /* unix ms, from created_at: the TTL counts from here */
	uint8_t fingerprint[16];    /* XXH3-128 of method, path, query, body */
	uint16_t status;
	uint8_t problem;            /* content type: 1 application/problem+json, 0 application/json */
	uint8_t body_state;         /* enum idem_body */
	uint32_t body_off, body_len; /* the raw body inside row.doc */
	uint16_t key_len;
	char entity_id[ID_MAX_LEN];
	char key[IDEM_MAX_KEY + 1];
};

/*
 * For POST/PUT/PATCH/DELETE by an authenticated caller (c->who filled).
 * Without the header: returns 0 (run the handler, nothing stored).  With it:
 *   - malformed (empty, > 255 bytes, a byte outside 0x21..0x7e, or the
 *     header given twice) -> 400 invalid_idempotency_key, returns 1
 *   - a record for (caller's entity, key) exists:
 *       different method/path/query/body -> 422 idempotency_key_reused, returns 1
 *       its LSN not yet durable          -> 409 idempotency_in_flight
 *                                           (Retry-After: 1), returns 1
 *       else the stored status, content type and body, with the header
 *       "Idempotent-Replayed: true", returns 1
 *   - no record: holds the transaction (txn_hold) and returns 0.
 */
int idem_begin(struct api_ctx *c);

/*
 * After the handler.  If idem_begin() held the transaction and the handler
 * committed, add the idempotency record (entity, key, fingerprint, status,
 * content type, body, created_at) to the held (last) commit; then release
 * it, so the last write and its record are one WAL transaction at that
 * write's LSN (if the last commit was refused after earlier ones were
 * logged, the record gets a transaction of its own after them).  A handler
 * that did not commit (validation error, 404, ...) or a request answered
 * 507 (disk full) stores nothing: a retry with the same key runs again.
 * Safe to call when idem_begin() held nothing (does nothing then).
 */
void idem_end(struct api_ctx *c);

/*
 * Periodic, from the loop tick (never inside a request): delete records
 * created more than cfg.idempotency_ttl_s seconds ago, oldest first, at most
 * IDEM_PRUNE_BATCH per call, in one quiet transaction.
 */
void idem_prune(struct shard *sh);

/* The record for (entity_id, key), or NULL. */
const struct idem_record *idem_find(const struct table *t, const char *entity_id, const char *key,
				    size_t key_len);

/* The request's Idempotency-Key: 0 none, 1 (*key, *len set: not
 * NUL-terminated), or -1 with the 400 invalid_idempotency_key written. */
int idem_request_key(struct api_ctx *c, const char **key, size_t *len);
/* XXH3-128 of method, path, query and body (what "the same request" means). */
void idem_fingerprint(const struct http_request *h, uint8_t out[16]);

/* True if key[0..len) is a well-formed Idempotency-Key. */
int idem_key_valid(const char *key, size_t len);

extern const struct table_ops idem_table_ops;

#endif
