/*
 * audit.h -- the read audit (spec section 8; implementation and the why in
 * audit.c).
 *
 * Every authenticated GET writes one audit row: key_id, entity_id,
 * endpoint, rows_returned, cursor_span, status, request_id, time.  The row
 * is committed with txn_commit_quiet(): it rides the next group commit and
 * no read waits for its fsync.  Memory keeps the newest --audit-keep rows;
 * older ones remain in the WAL.
 */
#ifndef WM_AUDIT_H
#define WM_AUDIT_H

#include <stdint.h>

#include "engine/api.h"
#include "engine/table.h"
#include "net/buf.h"

/* After a GET handler ran for an authenticated caller (api_handle). */
void audit_read(struct api_ctx *c);
/* Prometheus lines: audit rows written, rows not yet durable (a crash could
 * lose them), alerts raised. */
void audit_metrics(struct shard *sh, struct buf *out);
/* The WAL reported durable progress (drops confirmed entries). */
void audit_on_durable(struct shard *sh, uint64_t durable_lsn);

extern const struct table_ops audit_table_ops;
extern const struct route audit_routes[];

#endif
