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

#include "engine/edge/api.h"
#include "engine/storage/table.h"
#include "net/buf.h"

/* Audit records remembered until the WAL reports them durable; past this
 * many in flight the excess is still counted (never lost from the gauge). */
#define AUDIT_PENDING_MAX 65536u
/* Staged audit bytes that force a flush before the loop iteration ends. */
#define AUDIT_BATCH_BYTES (128u << 10)

/*
 * After a GET handler ran for an authenticated caller (api_run): stage one
 * audit row for the request in c (identity, route, c->rs->status,
 * c->rows_returned, c->span_from/span_to, request id) and feed the key's
 * read volume; when it exceeds --audit-alert-factor x its trailing average
 * (and --audit-alert-min-rows), log a warning and commit a
 * "key.abnormal_usage" event.  Never fails the read: a record that cannot
 * be staged is logged and counted.
 */
void audit_read(struct api_ctx *c);
/* Commit the staged rows as ONE quiet transaction (the state LSN does not
 * move, so no read waits for it).  No-op when nothing is staged or a
 * transaction is open (the next call takes them).  Called once per
 * event-loop iteration, on the tick, before GET /v1/audit answers and at
 * shutdown; also by audit_read when AUDIT_BATCH_BYTES are staged. */
void audit_flush(struct shard *sh);
/* Append Prometheus lines: wm_audit_records_total (committed since start),
 * wm_audit_records_unsynced (staged or committed, not yet durable: a crash
 * now could lose them), wm_audit_records_failed_total, wm_audit_alerts_total.
 * Refreshes the unsynced count from the WAL first when one is open. */
void audit_metrics(struct shard *sh, struct buf *out);
/* The WAL reports everything up to durable_lsn durable: forget those
 * pending audit LSNs (and the overflow count once its highest LSN is). */
void audit_on_durable(struct shard *sh, uint64_t durable_lsn);

extern const struct table_ops audit_table_ops;
extern const struct route audit_routes[];

#endif
