/*
 * audit.h -- the read audit (spec section 8; implementation and the why in
 * audit.c).
 *
 * Every authenticated GET writes one audit row: key_id, entity_id,
 * endpoint, rows_returned, cursor_span, status, request_id, time.  The row
 * is committed with txn_commit_quiet(): it rides the next group commit and
 * no read waits for its fsync.  Memory keeps the newest --audit-keep rows;
 * older ones remain in the WAL (until snapshots let its segments be pruned).
 * GET /v1/audit (operators) lists them oldest first, filtered by key_id or
 * entity_id through secondary indexes.
 */
#ifndef WM_AUDIT_H
#define WM_AUDIT_H

#include <stdint.h>

#include "engine/api.h"
#include "engine/table.h"
#include "net/buf.h"

/* Audit records remembered until the WAL reports them durable; past this
 * many in flight the excess is still counted (never lost from the gauge). */
#define AUDIT_PENDING_MAX 65536u

/*
 * After a GET handler ran for an authenticated caller (api_run): commit one
 * audit row for the request in c (identity, route, c->rs->status,
 * c->rows_returned, c->span_from/span_to, request id) without moving the
 * shard's state LSN, and feed the key's read volume; when it exceeds
 * --audit-alert-factor x its trailing average (and --audit-alert-min-rows),
 * log a warning and commit a "key.abnormal_usage" event.  Never fails the
 * read: a record that cannot be committed is logged and counted.  Must not
 * be called inside an open transaction (it then records a failure).
 */
void audit_read(struct api_ctx *c);
/* Append Prometheus lines: wm_audit_records_total (committed since start),
 * wm_audit_records_unsynced (committed, not yet durable: a crash now could
 * lose them), wm_audit_records_failed_total, wm_audit_alerts_total.
 * Refreshes the unsynced count from the WAL first when one is open. */
void audit_metrics(struct shard *sh, struct buf *out);
/* The WAL reports everything up to durable_lsn durable: forget those
 * pending audit LSNs (and the overflow count once its highest LSN is). */
void audit_on_durable(struct shard *sh, uint64_t durable_lsn);

extern const struct table_ops audit_table_ops;
extern const struct route audit_routes[];

#endif
