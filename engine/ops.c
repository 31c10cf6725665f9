/*
 * ops.c -- what operators and load balancers talk to.
 *   /healthz  the process answers (liveness)
 *   /readyz   recovery finished and the WAL writer runs (readiness)
 *   /metrics  Prometheus text: requests, latency, WAL, snapshots, connections, read audit
 *   /v1/openapi.json  the API description
 *   /v1/admin/snapshots  take a snapshot now (POST) / last snapshot (GET)
 *
 * It sits at the top of engine/, beside routes.c, because /metrics reads
 * every layer (the WAL, the read audit at the edge, the reference data of
 * pricing): in engine/edge/ it included pricing, above it.
 */
#include <string.h>

#include "engine/orders/documents.h"
#include "engine/retention.h"
#include "engine/webhooks/webhooks.h"
#include "engine/edge/audit.h"
#include "engine/edge/park.h"
#include "engine/base/log.h"
#include "engine/ops.h"
#include "engine/checks.h"

#include "engine/stock/txn_part.h"
#include "engine/pricing/refdata.h"
#include "engine/replication/repl.h"

/* "storage": "ok"; "low" when the WAL's spare segment cannot be made
 * (disk full) but the current segment still takes writes; "full" while
 * writes are refused with 507.  The process is alive and serves reads:
 * neither probe fails for it. */
static void storage(struct api_ctx *c)
{
	static const char *const names[] = {"ok", "low", "full"};
	int st = c->sh->wal ? wal_space(c->sh->wal, SHARD_WRITE_HEADROOM, NULL) : 0;
	shard_space_poll(c->sh);
	jw_kstr(&c->w, "storage", names[st < 0 || st > 2 ? 0 : st]);
}

static void healthz(struct api_ctx *c)
{
	jw_obj_begin(&c->w);
	jw_kstr(&c->w, "status", "ok");
	storage(c);
	jw_obj_end(&c->w);
}

static void readyz(struct api_ctx *c)
{
	if (!c->sh->ready) {
		api_error(c, 503, "not_ready", "recovery has not finished");
		return;
	}
	jw_obj_begin(&c->w);
	jw_kstr(&c->w, "status", "ready");
	jw_kint(&c->w, "lsn", (int64_t)c->sh->lsn);
	storage(c);
	jw_obj_end(&c->w);
}

static void metrics(struct api_ctx *c)
{
	struct shard *sh = c->sh;
	struct buf *o = &c->rs->body;
	c->rs->content_type = "text/plain; version=0.0.4";
	metrics_render(&sh->metrics, o);
	struct wal_stats ws;
	wal_stats(sh->wal, &ws);
	buf_printf(o, "# TYPE wm_wal_fsync_seconds histogram\n");
	uint64_t cum = 0;
	for (int b = 0; b < WAL_LAT_BUCKETS; b++) {
		cum += ws.sync_lat[b];
		buf_printf(o, "wm_wal_fsync_seconds_bucket{le=\"%g\"} %llu\n", wal_lat_bounds_us[b] / 1e6,
			   (unsigned long long)cum);
	}
	cum += ws.sync_lat[WAL_LAT_BUCKETS];
	buf_printf(o, "wm_wal_fsync_seconds_bucket{le=\"+Inf\"} %llu\nwm_wal_fsync_seconds_sum %.6f\n"
		      "wm_wal_fsync_seconds_count %llu\n",
		   (unsigned long long)cum, ws.sync_us_total / 1e6, (unsigned long long)ws.syncs);
	buf_printf(o, "# TYPE wm_wal_transactions_total counter\nwm_wal_transactions_total %llu\n"
		      "# TYPE wm_wal_frames_total counter\nwm_wal_frames_total %llu\n"
		      "# TYPE wm_wal_bytes_written_total counter\nwm_wal_bytes_written_total %llu\n"
		      "# HELP wm_wal_bytes_raw_total Transactions' bytes before compression.\n"
		      "# TYPE wm_wal_bytes_raw_total counter\nwm_wal_bytes_raw_total %llu\n"
		      "# HELP wm_wal_dict_frames_total Dictionary frames written (later frames of the segment are compressed against them).\n"
		      "# TYPE wm_wal_dict_frames_total counter\nwm_wal_dict_frames_total %llu\n"
		      "# TYPE wm_wal_batch_transactions_avg gauge\nwm_wal_batch_transactions_avg %.3f\n"
		      "# TYPE wm_wal_batch_transactions_max gauge\nwm_wal_batch_transactions_max %llu\n"
		      "# TYPE wm_lsn gauge\nwm_lsn %llu\n"
		      "# TYPE wm_durable_lsn gauge\nwm_durable_lsn %llu\n"
		      "# HELP wm_wal_segments_total WAL segments created (from_spare: the pre-zeroed spare, no stall).\n"
		      "# TYPE wm_wal_segments_total counter\nwm_wal_segments_total{how=\"inline\"} %llu\n"
		      "wm_wal_segments_total{how=\"from_spare\"} %llu\n",
		   (unsigned long long)ws.txns, (unsigned long long)ws.frames,
		   (unsigned long long)ws.bytes_written, (unsigned long long)ws.bytes_raw,
		   (unsigned long long)ws.dict_frames, ws.syncs ? (double)ws.txns / (double)ws.syncs : 0.0,
		   (unsigned long long)ws.max_batch_txns, (unsigned long long)sh->lsn,
		   (unsigned long long)wal_durable_lsn(sh->wal),
		   (unsigned long long)(ws.segments_created - ws.segments_from_spare),
		   (unsigned long long)ws.segments_from_spare);
	double age = sh->snap_last_unix_ms ? (double)(wall_ms() - sh->snap_last_unix_ms) / 1000.0 : -1;
	buf_printf(o, "# HELP wm_snapshot_age_seconds Seconds since the last snapshot (-1: none yet).\n"
		      "# TYPE wm_snapshot_age_seconds gauge\nwm_snapshot_age_seconds %.3f\n"
		      "# TYPE wm_snapshot_lsn gauge\nwm_snapshot_lsn %llu\n"
		      "# TYPE wm_snapshots_total counter\nwm_snapshots_total{result=\"ok\"} %llu\n"
		      "wm_snapshots_total{result=\"failed\"} %llu\n",
		   age, (unsigned long long)sh->snap_last_lsn, (unsigned long long)sh->snaps_taken,
		   (unsigned long long)sh->snaps_failed);
	if (sh->smap_version)
		buf_printf(o, "# HELP wm_shard_map_version Version of the shard map in force (--shard-map).\n"
			      "# TYPE wm_shard_map_version gauge\nwm_shard_map_version %llu\n"
			      "# TYPE wm_shard_id gauge\nwm_shard_id %llu\n"
			      "# HELP wm_parked_requests Requests waiting for this shard's replica to apply the caller's "
			      "own earlier write (read-your-writes).\n# TYPE wm_parked_requests gauge\nwm_parked_requests %u\n",
			   (unsigned long long)sh->smap_version, (unsigned long long)sh->cfg.shard_id, park_count());
	struct srv_stats ss;
	srv_get_stats(sh->srv, &ss);
	buf_printf(o, "# TYPE wm_connections_open gauge\nwm_connections_open %llu\n"
		      "# HELP wm_connections_rejected_total Connections refused at accept: the table was full of busy "
		      "connections, or the client address had --max-conns-per-ip open.\n"
		      "# TYPE wm_connections_rejected_total counter\n"
		      "wm_connections_rejected_total{reason=\"full\"} %llu\n"
		      "wm_connections_rejected_total{reason=\"per_ip\"} %llu\n"
		      "# HELP wm_connections_evicted_total Idle connections closed to admit a new one.\n"
		      "# TYPE wm_connections_evicted_total counter\nwm_connections_evicted_total %llu\n"
		      "# TYPE wm_tls_handshake_failures_total counter\nwm_tls_handshake_failures_total %llu\n"
		      "# TYPE wm_http_timeouts_total counter\nwm_http_timeouts_total %llu\n"
		      "# TYPE wm_http_parse_errors_total counter\nwm_http_parse_errors_total %llu\n",
		   (unsigned long long)ss.open, (unsigned long long)ss.rejected_full,
		   (unsigned long long)ss.rejected_per_ip, (unsigned long long)ss.evicted_idle,
		   (unsigned long long)ss.tls_handshake_failures, (unsigned long long)ss.timeouts,
		   (unsigned long long)ss.parse_errors);
	audit_metrics(sh, o);
	refdata_metrics(o);
	repl_metrics(sh, o);
	txn_part_metrics(sh, o);
	documents_metrics(sh, o);
	webhooks_metrics(sh, o);
	retention_metrics(o);
	checks_metrics(sh, o);
	for (int i = 0; i < REC_T_COUNT_; i++)
		if (sh->tables[i].ops)
			buf_printf(o, "wm_table_rows{table=\"%s\"} %zu\n", sh->tables[i].ops->name,
				   table_count(&sh->tables[i]));
}

static void openapi(struct api_ctx *c)
{
	buf_puts(&c->rs->body, openapi_json);
}

static void snapshot_status(struct api_ctx *c)
{
	struct shard *sh = c->sh;
	jw_obj_begin(&c->w);
	jw_kbool(&c->w, "in_progress", sh->snap_pid > 0);
	jw_kint(&c->w, "last_lsn", (int64_t)sh->snap_last_lsn);
	if (sh->snap_last_unix_ms) {
		char ts[32];
		fmt_rfc3339_ms(ts, sh->snap_last_unix_ms);
		jw_kstr(&c->w, "last_at", ts);
	} else {
		jw_knull(&c->w, "last_at");
	}
	jw_kint(&c->w, "taken", (int64_t)sh->snaps_taken);
	jw_kint(&c->w, "failed", (int64_t)sh->snaps_failed);
	jw_obj_end(&c->w);
}

static void snapshot_take(struct api_ctx *c)
{
	int r = shard_snapshot_start(c->sh);
	if (r < 0 && c->sh->wal && wal_space(c->sh->wal, 0, NULL) != 0) {
		api_error(c, 507, "insufficient_storage", "the data directory's file system is full: no snapshot now");
		buf_puts(&c->rs->headers, "Retry-After: 10\r\n");
		return;
	}
	if (r < 0) {
		api_error(c, 500, "snapshot_failed", "the snapshot could not be started; see the log");
		return;
	}
	c->rs->status = 202;
	jw_obj_begin(&c->w);
	jw_kstr(&c->w, "status", r == 1 ? "already_running" : "started");
	jw_kint(&c->w, "lsn", (int64_t)c->sh->snap_pending_lsn);
	jw_obj_end(&c->w);
}

/* GET /internal/cluster/status: what `wm-ctl cluster status` shows of
 * this shard (signed by the cluster secret). */
static void cluster_status(struct api_ctx *c)
{
	struct shard *sh = c->sh;
	jw_obj_begin(&c->w);
	jw_kstr(&c->w, "process", "wm-shard");
	jw_kint(&c->w, "shard_id", (int64_t)sh->cfg.shard_id);
	jw_kint(&c->w, "map_version", (int64_t)sh->smap_version);
	jw_kint(&c->w, "lsn", (int64_t)sh->lsn);
	jw_kint(&c->w, "durable_lsn", (int64_t)wal_durable_lsn(sh->wal));
	jw_kbool(&c->w, "ready", sh->ready);
	jw_kint(&c->w, "in_doubt", (int64_t)txn_part_in_doubt(sh)); /* cross-shard transactions prepared here */
	repl_status(sh, &c->w); /* "publisher" and "replication" (per publisher: applied_lsn, lag) */
	jw_obj_end(&c->w);
}

const struct route ops_internal_routes[] = {
	{HTTP_M_GET, "/internal/cluster/status", cluster_status, SC_PUBLIC, ACT_NONE, "This shard's cluster status", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};

const struct route ops_routes[] = {
	{HTTP_M_GET, "/healthz", healthz, SC_PUBLIC, ACT_NONE, "Liveness", 0},
	{HTTP_M_GET, "/readyz", readyz, SC_PUBLIC, ACT_NONE, "Readiness", 0},
	{HTTP_M_GET, "/metrics", metrics, SC_OPERATOR, ACT_OPERATE, "Prometheus metrics", 0},
	{HTTP_M_GET, "/v1/openapi.json", openapi, SC_PUBLIC, ACT_NONE, "This API description", 0},
	{HTTP_M_GET, "/v1/admin/snapshots", snapshot_status, SC_OPERATOR, ACT_OPERATE, "Last snapshot", 0},
	{HTTP_M_POST, "/v1/admin/snapshots", snapshot_take, SC_OPERATOR, ACT_OPERATE, "Take a snapshot now", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
