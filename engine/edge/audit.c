/*
 * audit.c -- the read audit (spec section 8; contract in audit.h).
 *
 * Why it looks like this:
 *
 *  - An audit record is a row of its own table (REC_T_AUDIT), written
 *    through the ordinary transaction path.  It therefore gets everything
 *    rows get for free: the WAL's checksums and group commit, snapshots,
 *    recovery through the same decode() as the live path, id-ordered
 *    cursor pagination, and `wm-ctl wal inspect` for forensics.  There is
 *    no second log format to parse, rotate or lose.
 *
 *  - A read must never wait for its audit record's fsync.  The record is
 *    staged in a batch, and the batch is committed with txn_commit_quiet()
 *    once per event-loop iteration (audit_flush, from the loop's prepare
 *    hook) or when it reaches AUDIT_BATCH_BYTES: one WAL transaction for
 *    all the reads of an iteration instead of one each (measured: per-read
 *    commits cost more than half the read throughput).  The batch gets the
 *    next LSN and rides the next group commit, but the shard's state LSN -- what api_handle stamps
 *    on the response and what the server holds responses for -- does not
 *    move.  The price is explicit: a crash can lose the audit records of
 *    the last group commit window (reads whose responses may already have
 *    left).  That window is measured, not hidden: every committed audit
 *    LSN goes into a bounded ring until the WAL reports it durable, and
 *    wm_audit_records_unsynced is "records a crash right now could lose".
 *    If more than AUDIT_PENDING_MAX records are in flight, the excess is
 *    still counted (with the highest LSN among them, cleared once that LSN
 *    is durable), so the gauge may over-count for an instant but never
 *    under-counts.  "Durable" is the WAL's word for it: under --wal-mode
 *    write it means written, under --wal-mode none nothing is.
 *
 *  - Memory holds the newest --audit-keep rows (default 200000).  The
 *    bound is enforced by the table's trim hook, which shard_apply() runs
 *    after every applied put, live and in WAL replay alike, so replaying a
 *    log leaves exactly the rows the live process had after the same log.
 *    Older rows are deleted from memory only (no DEL
 *    record is logged): they remain in the WAL segments until a snapshot
 *    lets those segments be pruned (--snapshot-keep), and snapshots carry
 *    only the rows still in memory.  Operators who need the full history
 *    archive WAL segments before they are pruned.  A snapshot loaded under
 *    a smaller --audit-keep than it was written with is trimmed by the
 *    next audit write.
 *
 *  - GET /v1/audit is served from indexes, never a scan: the id order for
 *    the whole log, and two secondary ordered indexes (key_id NUL id,
 *    entity_id NUL id) for ?key_id= and ?entity_id=.  The indexes hold
 *    only what is in memory (see above).
 *
 *  - The abnormal-volume alert reuses the per-key read-volume windows of
 *    auth.c (EWMA trailing average, once per window).  An alert is a log
 *    line an operator can act on plus a "key.abnormal_usage" event, which
 *    is a normal state change (txn_commit): events are readable, so that
 *    one read does wait for durability, which is rare and fine.
 *
 *  - Every authenticated read is audited, refused ones included (403,
 *    404, 429): probing is exactly what an audit is for.  A 401 has no key
 *    to record and is in the access log only.
 *
 *  - Cost per read: one id, a timestamp formatted once per millisecond, a
 *    ~400-byte document written straight into a buffer owned by the table
 *    (no allocation once it has grown), the transaction image, and the row
 *    itself (parse + one allocation + three index inserts, one trim
 *    delete) -- the same path as any write, no extra copy.  Measured on a
 *    release build with 200000 rows kept: about 2.5 us per read on the
 *    event-loop thread, of which the document is about 0.2 us and the
 *    generic row path (json_parse in table_put first) most of the rest.
 *
 * Counters (records written, failed, alerts) and the pending ring are
 * runtime state of this process: not persisted, reset by a restart
 * (replayed records are durable by definition).
 */
#include "engine/edge/audit.h"

#include <stdlib.h>
#include <string.h>

#include "engine/edge/auth.h"
#include "engine/edge/fields.h"
#include "engine/base/log.h"

/* Bound on one audit document: ids (2 x 39), the endpoint (AUDIT_ENDPOINT_MAX),
 * two cursors (2 x API_MAX_SPAN), request id, time and member names fit in
 * well under 2 KiB. */
#define AUDIT_DOC_MAX 2048u
#define AUDIT_ENDPOINT_MAX 160u
/* --audit-keep when no configuration is attached (never 0). */
#define AUDIT_KEEP_DEFAULT 200000u

/* The typed row: what the indexes are built from. */
struct audit_rec {
	struct row row;
	char key_id[ID_MAX_LEN];
	char entity_id[ID_MAX_LEN];
};

struct audit_ext {
	struct oidx by_key;      /* key_id NUL id -> row */
	struct oidx by_entity;   /* entity_id NUL id -> row */
	struct buf doc;          /* document under construction (reused) */
	/* runtime accounting (this process only) */
	uint64_t written;        /* audit records committed */
	uint64_t failed;         /* reads whose record could not be committed */
	uint64_t alerts;         /* abnormal-usage alerts raised */
	uint32_t pend_head;      /* ring of committed, not yet durable batches */
	uint32_t pend_count;     /* batches in the ring */
	uint64_t pend_records;   /* records in those batches */
	uint64_t pend_over;      /* records past the ring's capacity ... */
	uint64_t pend_over_lsn;  /* ... all with LSN <= this */
	struct buf batch;        /* staged records (rec_encode), not yet committed */
	uint32_t batch_n;
	uint64_t at_ms;          /* the millisecond `at` was formatted for */
	char at[32];             /* RFC 3339 text of at_ms */
	struct { uint64_t lsn; uint32_t n; } pending[AUDIT_PENDING_MAX];
};

/* The table's audit state (set by audit_init for the table's lifetime). */
static struct audit_ext *ext(const struct table *t) { return t->ext; }

/* ---- table ------------------------------------------------------------- */

/* Allocate the secondary indexes, the document buffer and the ring
 * (about 0.5 MiB, zero pages until used).  0 or -1 (OOM). */
static int audit_init(struct table *t)
{
	struct audit_ext *e = calloc(1, sizeof(*e));
	if (!e)
		return -1;
	oidx_init(&e->by_key);
	oidx_init(&e->by_entity);
	buf_init(&e->doc, AUDIT_DOC_MAX);
	buf_init(&e->batch, AUDIT_BATCH_BYTES + AUDIT_DOC_MAX + 64);
	t->ext = e;
	return 0;
}

/* Free what audit_init made (rows are freed by table_fini). */
static void audit_fini(struct table *t)
{
	struct audit_ext *e = ext(t);
	oidx_free(&e->by_key);
	oidx_free(&e->by_entity);
	buf_free(&e->doc);
	buf_free(&e->batch);
	free(e);
	t->ext = NULL;
}

/* Secondary key: text, NUL, row id (decode() guarantees it fits). */
static uint32_t sec_key(const char *text, const struct row *r, uint8_t out[IDX_MAX_KEY])
{
	size_t n = strlen(text);
	memcpy(out, text, n);
	out[n] = 0;
	memcpy(out + n + 1, r->id, r->id_len);
	return (uint32_t)(n + 1 + r->id_len);
}

/* Add r to both secondary indexes; on OOM neither holds it and -1 is
 * returned (table_put treats that as fatal). */
static int audit_index_add(struct table *t, struct row *r)
{
	struct audit_rec *a = (struct audit_rec *)r;
	uint8_t k[IDX_MAX_KEY];
	if (oidx_set(&ext(t)->by_key, k, sec_key(a->key_id, r, k), r))
		return -1;
	if (oidx_set(&ext(t)->by_entity, k, sec_key(a->entity_id, r, k), r)) {
		oidx_del(&ext(t)->by_key, k, sec_key(a->key_id, r, k));
		return -1;
	}
	return 0;
}

/* Remove r from both secondary indexes (before it is freed). */
static void audit_index_del(struct table *t, struct row *r)
{
	struct audit_rec *a = (struct audit_rec *)r;
	uint8_t k[IDX_MAX_KEY];
	oidx_del(&ext(t)->by_key, k, sec_key(a->key_id, r, k));
	oidx_del(&ext(t)->by_entity, k, sec_key(a->entity_id, r, k));
}

/*
 * The typed fields from a stored document: the same function for a live
 * commit, a WAL replay and a snapshot load.  Rejects a document whose ids
 * are missing or too long for the secondary keys (index_add must not fail
 * for any row decode accepted).
 */
static int audit_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct audit_rec *a = (struct audit_rec *)r;
	if (fld_str(NULL, doc, "key_id", NULL, a->key_id, ID_MAX_LEN - 1) != FLD_SET ||
	    fld_str(NULL, doc, "entity_id", NULL, a->entity_id, ID_MAX_LEN - 1) != FLD_SET)
		return -1;
	if ((size_t)r->id_len + ID_MAX_LEN > IDX_MAX_KEY)
		return -1;
	return 0;
}

/* The in-memory bound: --audit-keep (>= 16 by the option's bounds). */
static uint64_t audit_keep(const struct table *t)
{
	return t->cfg && t->cfg->audit_keep ? t->cfg->audit_keep : AUDIT_KEEP_DEFAULT;
}

/*
 * After every applied put: delete the oldest rows (the first ids of the id
 * order) until at most audit_keep remain.  Deterministic, so replay ends
 * with the rows the live process had.  Memory only: nothing is logged.
 */
static void audit_trim(struct table *t)
{
	uint64_t keep = audit_keep(t);
	while (table_count(t) > keep) {
		struct oidx_iter it;
		if (!oidx_seek_ge(&t->by_order, NULL, 0, &it))
			break;
		const struct row *r = oidx_iter_val(&it);
		if (table_del(t, r->id, r->id_len, t->chg_lsn))
			break; /* indexes disagree: never loop forever */
	}
}

/* What audit_decode reads: an audit row is written for every read. */
static const char *const audit_decode_keys[] = {"key_id", "entity_id", NULL};

const struct table_ops audit_table_ops = {
	.rec_table = REC_T_AUDIT,
	.name = "audit",
	.row_size = sizeof(struct audit_rec),
	.decode = audit_decode,
	.index_add = audit_index_add,
	.index_del = audit_index_del,
	.init = audit_init,
	.fini = audit_fini,
	.trim = audit_trim,
	.decode_keys = audit_decode_keys,
};

/* ---- durability accounting --------------------------------------------- */

/* Remember a committed batch (its LSN, n records) until the WAL reports
 * it durable. */
static void pending_push(struct audit_ext *e, uint64_t lsn, uint32_t n)
{
	if (e->pend_count < AUDIT_PENDING_MAX) {
		uint32_t i = (e->pend_head + e->pend_count) % AUDIT_PENDING_MAX;
		e->pending[i].lsn = lsn;
		e->pending[i].n = n;
		e->pend_count++;
		e->pend_records += n;
		return;
	}
	e->pend_over += n;
	e->pend_over_lsn = lsn; /* LSNs only grow: the highest of the excess */
}

void audit_on_durable(struct shard *sh, uint64_t durable_lsn)
{
	struct audit_ext *e = ext(&sh->tables[REC_T_AUDIT]);
	if (!e)
		return;
	while (e->pend_count && e->pending[e->pend_head].lsn <= durable_lsn) {
		e->pend_records -= e->pending[e->pend_head].n;
		e->pend_head = (e->pend_head + 1) % AUDIT_PENDING_MAX;
		e->pend_count--;
	}
	if (e->pend_over && e->pend_over_lsn <= durable_lsn)
		e->pend_over = 0;
}

void audit_metrics(struct shard *sh, struct buf *out)
{
	struct audit_ext *e = ext(&sh->tables[REC_T_AUDIT]);
	if (!e)
		return;
	if (sh->wal)
		audit_on_durable(sh, wal_durable_lsn(sh->wal));
	buf_printf(out,
		   "# HELP wm_audit_records_total Read-audit records committed since start.\n"
		   "# TYPE wm_audit_records_total counter\nwm_audit_records_total %llu\n"
		   "# HELP wm_audit_records_unsynced Read-audit records not yet durable: a crash now could lose them.\n"
		   "# TYPE wm_audit_records_unsynced gauge\nwm_audit_records_unsynced %llu\n"
		   "# HELP wm_audit_records_failed_total Reads whose audit record could not be committed.\n"
		   "# TYPE wm_audit_records_failed_total counter\nwm_audit_records_failed_total %llu\n"
		   "# HELP wm_audit_alerts_total Abnormal read-volume alerts raised (key.abnormal_usage).\n"
		   "# TYPE wm_audit_alerts_total counter\nwm_audit_alerts_total %llu\n",
		   (unsigned long long)e->written, (unsigned long long)(e->pend_records + e->pend_over + e->batch_n),
		   (unsigned long long)e->failed, (unsigned long long)e->alerts);
}

/* ---- writing ----------------------------------------------------------- */

/* "GET", ... for the endpoint text; "OTHER" for anything unknown. */
static const char *method_name(enum http_method m)
{
	static const char *const names[] = {"OTHER", "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"};
	return (unsigned)m < sizeof(names) / sizeof(names[0]) ? names[m] : "OTHER";
}

/* Append an unsigned decimal integer. */
static int put_u64(struct buf *b, uint64_t v)
{
	char tmp[20]; /* UINT64_MAX has 20 digits */
	size_t i = sizeof(tmp);
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v && i);
	return buf_append(b, tmp + i, sizeof(tmp) - i);
}

/* One end of cursor_span: the cursor text, or null when there is none. */
static int put_span_end(struct buf *b, const char *cursor)
{
	return cursor[0] ? jb_str(b, cursor) : JB_LIT(b, "null");
}

/* The current time as RFC 3339 with ms; formatted once per millisecond
 * (reads that share a millisecond share the text). */
static const char *now_text(struct audit_ext *e)
{
	uint64_t ms = wall_ms();
	if (ms != e->at_ms || !e->at[0]) {
		fmt_rfc3339_ms(e->at, ms);
		e->at_ms = ms;
	}
	return e->at;
}

/*
 * Build the audit document for this read into e->doc; 0 or -1 (bound).
 * Written straight into the reused buffer, member names as literals and
 * every string value through jw_escape: the same canonical JSON the
 * streaming writer would produce, without its per-member bookkeeping (this
 * runs on every read).
 */
static int audit_doc(const struct api_ctx *c, struct audit_ext *e, const char *id, size_t id_len)
{
	const char *method = method_name(c->route->method), *pattern = c->route->pattern;
	size_t ml = strlen(method), pl = strlen(pattern);
	char endpoint[AUDIT_ENDPOINT_MAX];
	if (ml + 1 + pl >= sizeof(endpoint))
		return -1;
	memcpy(endpoint, method, ml);
	endpoint[ml] = ' ';
	memcpy(endpoint + ml + 1, pattern, pl + 1);
	/* api_handle() turns a writer error into a 500 after the handler */
	int status = c->w.err ? 500 : c->rs->status;
	struct buf *b = &e->doc;
	buf_reset(b);
	int rc = JB_LIT(b, "{\"id\":") | jw_escape(b, id, id_len);
	rc |= JB_LIT(b, ",\"key_id\":") | jb_str(b, c->who.key_id);
	rc |= JB_LIT(b, ",\"entity_id\":") | jb_str(b, c->who.entity_id);
	rc |= JB_LIT(b, ",\"endpoint\":") | jw_escape(b, endpoint, ml + 1 + pl);
	rc |= JB_LIT(b, ",\"status\":") | put_u64(b, status > 0 ? (uint64_t)status : 0);
	rc |= JB_LIT(b, ",\"rows_returned\":") | put_u64(b, c->rows_returned);
	rc |= JB_LIT(b, ",\"cursor_span\":{\"from\":") | put_span_end(b, c->span_from);
	rc |= JB_LIT(b, ",\"to\":") | put_span_end(b, c->span_to);
	rc |= JB_LIT(b, "},\"request_id\":") | jb_str(b, c->rq->request_id);
	rc |= JB_LIT(b, ",\"at\":") | jb_str(b, now_text(e));
	rc |= buf_putc(b, '}');
	return rc ? -1 : 0;
}

/* True if s is an id decode() accepts: 1..ID_MAX_LEN-1 bytes, no control
 * characters.  Checked before committing, because a committed record that
 * does not decode stops the process (memory must follow the WAL). */
static int id_ok(const char *s)
{
	size_t i = 0;
	for (; s[i]; i++)
		if (i >= ID_MAX_LEN - 1 || (unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return i > 0;
}

/* Stage the audit row for this read in the batch; 0, or -1 when it cannot
 * be recorded (bad ids, bound). */
static int audit_stage(struct api_ctx *c, struct audit_ext *e)
{
	struct shard *sh = c->sh;
	if (!id_ok(c->who.key_id) || !id_ok(c->who.entity_id))
		return -1;
	char id[ID_MAX_LEN];
	size_t il = id_new(&sh->ids, "aud", id);
	if (audit_doc(c, e, id, il) ||
	    rec_encode(&e->batch, REC_PUT, REC_T_AUDIT, 1, id, il, e->doc.data, e->doc.len))
		return -1;
	e->batch_n++;
	return 0;
}

void audit_flush(struct shard *sh)
{
	struct audit_ext *e = ext(&sh->tables[REC_T_AUDIT]);
	if (!e || !e->batch_n || sh->txn_open || sh->txn_hold)
		return; /* inside a transaction: the next flush takes it */
	txn_begin(sh);
	uint64_t lsn = 0;
	if (!buf_append(&sh->txn, e->batch.data, e->batch.len))
		lsn = txn_commit_quiet(sh);
	else
		txn_abort(sh);
	if (lsn) {
		e->written += e->batch_n;
		pending_push(e, lsn, e->batch_n);
	} else {
		e->failed += e->batch_n;
		if (!sh->disk_full) /* a full disk is logged once, by shard.c */
			log_error("msg=\"read audit records could not be committed\" records=%u "
				  "action=\"check the WAL (disk space, errors above); these reads are not audited\"",
				  e->batch_n);
	}
	buf_reset(&e->batch);
	e->batch_n = 0;
}

/* The key read far above its trailing average: count it, log a warning
 * that says what to do, and commit a key.abnormal_usage event (scoped to
 * the entity; platform-wide for operator keys).  Reuses e->doc. */
static void audit_alert(struct api_ctx *c, struct audit_ext *e, uint64_t window_rows, uint64_t avg)
{
	struct shard *sh = c->sh;
	const struct config *cfg = &sh->cfg;
	e->alerts++;
	log_warn("msg=\"API key read far above its trailing average\" event=key.abnormal_usage key_id=%s "
		 "entity_id=%s window_rows=%llu trailing_avg=%llu window_s=%llu factor=%llu "
		 "action=\"review the key; revoke it with POST /api/keys/%s/revoke if unexpected\"",
		 c->who.key_id, c->who.entity_id, (unsigned long long)window_rows, (unsigned long long)avg,
		 (unsigned long long)cfg->audit_alert_window_s, (unsigned long long)cfg->audit_alert_factor,
		 c->who.key_id);
	if (sh->txn_open || sh->txn_hold)
		return;
	/* e->doc is free again: the audit document was copied into the WAL
	 * image and the row by audit_commit(). */
	buf_reset(&e->doc);
	struct jw w;
	jw_init(&w, &e->doc);
	jw_obj_begin(&w);
	jw_kstr(&w, "key_id", c->who.key_id);
	jw_kstr(&w, "entity_id", c->who.entity_id);
	jw_key(&w, "window_rows");
	jw_uint(&w, window_rows);
	jw_key(&w, "trailing_average");
	jw_uint(&w, avg);
	jw_key(&w, "window_s");
	jw_uint(&w, cfg->audit_alert_window_s);
	jw_key(&w, "factor");
	jw_uint(&w, cfg->audit_alert_factor);
	jw_obj_end(&w);
	const char *scope = c->who.is_platform ? NULL : c->who.entity_id;
	txn_begin(sh);
	if (w.err || txn_event(sh, "key.abnormal_usage", scope, e->doc.data, e->doc.len)) {
		txn_abort(sh);
		log_error("msg=\"abnormal-usage event could not be built\" key_id=%s", c->who.key_id);
		return;
	}
	if (!txn_commit(sh))
		log_error("msg=\"abnormal-usage event could not be committed\" key_id=%s "
			  "action=\"check the WAL; the log line above is the only trace of this alert\"",
			  c->who.key_id);
}

void audit_read(struct api_ctx *c)
{
	struct audit_ext *e = ext(&c->sh->tables[REC_T_AUDIT]);
	if (!e || !c->who.authenticated || !c->route)
		return;
	if (audit_stage(c, e)) {
		e->failed++;
		log_error("msg=\"read audit record could not be staged\" request_id=%s key_id=%s",
			  c->rq->request_id, c->who.key_id);
	} else if (e->batch.len >= AUDIT_BATCH_BYTES) {
		audit_flush(c->sh);
	}
	uint64_t window_rows, avg;
	if (c->rows_returned && auth_volume_add(c, c->rows_returned, &window_rows, &avg) == 1)
		audit_alert(c, e, window_rows, avg);
}

/* ---- GET /v1/audit ----------------------------------------------------- */

/*
 * GET /v1/audit: oldest first.  ?key_id= or ?entity_id= (not both: 400
 * invalid_filter) walk a secondary index with the value and its NUL as the
 * prefix; a value that matches nothing gives the empty list; an empty or
 * undecodable value (or one over IDX_MAX_KEY bytes) is a 400.
 */
static void audit_list(struct api_ctx *c)
{
	audit_flush(c->sh); /* what earlier reads staged is part of the answer */
	struct api_page pg;
	if (api_page_parse(c, &pg))
		return;
	struct audit_ext *e = ext(&c->sh->tables[REC_T_AUDIT]);
	char kv[IDX_MAX_KEY + 1], ev[IDX_MAX_KEY + 1];
	int kn = api_query(c, "key_id", kv, sizeof(kv));
	int en = api_query(c, "entity_id", ev, sizeof(ev));
	if (kn >= 0 && en >= 0) {
		api_error(c, 400, "invalid_filter", "filter by key_id or by entity_id, not both");
		return;
	}
	if (kn == -2 || kn == 0 || en == -2 || en == 0) {
		api_error(c, 400, "invalid_filter", kn != -1 ? "key_id must be an API key id"
							       : "entity_id must be an entity id");
		return;
	}
	if (kn < 0 && en < 0) {
		api_list(c, &c->sh->tables[REC_T_AUDIT].by_order, NULL, 0, &pg, NULL, NULL, NULL);
		return;
	}
	const char *v = kn > 0 ? kv : ev;
	size_t n = (size_t)(kn > 0 ? kn : en);
	if (n >= ID_MAX_LEN || memchr(v, 0, n)) {
		api_list_empty(c); /* no stored id is this long (or holds a NUL) */
		return;
	}
	/* The prefix is the value and its NUL terminator. */
	api_list(c, kn > 0 ? &e->by_key : &e->by_entity, v, (uint32_t)n + 1, &pg, NULL, NULL, NULL);
}

const struct route audit_routes[] = {
	{HTTP_M_GET, "/v1/audit", audit_list, SC_OPERATOR, ACT_OPERATE,
	 "Read audit (operators only): one record per authenticated read", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
