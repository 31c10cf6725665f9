/*
 * idem.h -- Idempotency-Key for every write route (implementation and the
 * why in idem.c; DESIGN.md section 7).
 *
 * api_handle() calls idem_begin() before a write handler and idem_end()
 * after it.  The stored response travels in the SAME WAL transaction as
 * the write it answers (txn_hold/txn_release), so a crash can never keep
 * the write and lose the record that would stop a retry from repeating it.
 */
#ifndef WM_IDEM_H
#define WM_IDEM_H

#include "engine/api.h"
#include "engine/table.h"

#define IDEM_MAX_KEY 255

/*
 * For POST/PUT/PATCH/DELETE by an authenticated caller.  Without the header:
 * returns 0 (run the handler, nothing stored).  With it:
 *   - malformed header (empty, > 255 chars, not visible ASCII) -> 400, returns 1
 *   - a record for (entity, key) exists:
 *       different method/path/body  -> 422 idempotency_key_reused, returns 1
 *       its LSN not yet durable     -> 409 idempotency_in_flight, returns 1
 *       else the stored status and body, with "Idempotent-Replayed: true", returns 1
 *   - no record: holds the transaction (txn_hold) and returns 0.
 */
int idem_begin(struct api_ctx *c);
/* After the handler: if it committed, add the idempotency record (status,
 * body, fingerprint) to the held transaction and release it; the response
 * LSN is that transaction's.  Always safe to call. */
void idem_end(struct api_ctx *c);
/* Periodic: delete records older than the configured TTL (bounded work per
 * call).  Called from the loop tick. */
void idem_prune(struct shard *sh);

extern const struct table_ops idem_table_ops;

#endif
