/*
 * test_audit_units.c -- the read audit's engine side (engine/edge/audit.c),
 * in-process: the audit table's decode and trim, replay rebuilding exactly
 * the rows the live process had (and more under a larger --audit-keep,
 * because the WAL keeps them), and the bound of the pending-durability
 * ring behind wm_audit_records_unsynced.  (Kept apart from test_audit.c,
 * which parses responses with jansson: its JSON_* names clash with
 * net/json.h.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/edge/api.h"
#include "engine/edge/audit.h"
#include "engine/base/config.h"
#include "engine/storage/shard.h"
#include "tests/harness.h"
#include "tests/wm_test.h"

/* A stored audit document for row i of key k. */
static int unit_doc(char *out, size_t size, const char *id, const char *key_id, const char *entity)
{
	return snprintf(out, size,
			"{\"id\":\"%s\",\"key_id\":\"%s\",\"entity_id\":\"%s\",\"endpoint\":\"GET /v1/partners\","
			"\"status\":200,\"rows_returned\":1,\"cursor_span\":{\"from\":null,\"to\":null},"
			"\"request_id\":\"req_0\",\"at\":\"2026-01-01T00:00:00.000Z\"}",
			id, key_id, entity);
}

WM_TEST(audit, table_decode_and_trim_keep_the_newest)
{
	struct config cfg;
	config_defaults(&cfg);
	cfg.audit_keep = 16;
	struct table t;
	cr_assert_eq(table_init(&t, &audit_table_ops, &cfg), 0);
	cr_assert_not_null(audit_table_ops.trim, "the audit table bounds itself");
	struct id_clock clk;
	id_clock_init(&clk);
	char ids[40][ID_MAX_LEN], doc[1024], why[128];
	for (int i = 0; i < 40; i++) {
		size_t il = id_new(&clk, "aud", ids[i]);
		int n = unit_doc(doc, sizeof(doc), ids[i], i % 2 ? "key_A" : "key_B", "platform");
		cr_assert_eq(table_put(&t, ids[i], il, doc, (size_t)n, (uint64_t)i + 1, why), 0, "%s", why);
		t.ops->trim(&t); /* as shard_apply does after every put */
		size_t expect = i + 1 < 16 ? (size_t)i + 1 : 16;
		cr_assert_eq(table_count(&t), expect, "after %d puts", i + 1);
	}
	cr_assert_eq(oidx_count(&t.by_order), 16);
	for (int i = 0; i < 40; i++)
		cr_assert_eq(table_get(&t, ids[i], strlen(ids[i])) != NULL, i >= 24, "row %d", i);
	struct oidx_iter it;
	cr_assert(oidx_seek_ge(&t.by_order, NULL, 0, &it));
	cr_assert_str_eq(((const struct row *)oidx_iter_val(&it))->id, ids[24], "the oldest kept is the 25th");

	/* decode: ids required, strings, bounded */
	static const char *const bad[] = {
		"{\"entity_id\":\"platform\"}",
		"{\"key_id\":\"key_A\"}",
		"{\"key_id\":7,\"entity_id\":\"platform\"}",
		"{\"key_id\":\"\",\"entity_id\":\"platform\"}",
		"{\"key_id\":\"key_0123456789012345678901234567890123456789\",\"entity_id\":\"platform\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(table_put(&t, "aud_x", 5, bad[i], strlen(bad[i]), 99, why), -1, "accepted %s", bad[i]);
	cr_assert_eq(table_count(&t), 16, "a rejected document changes nothing");
	table_fini(&t);
}

/* A shard in a fresh temporary directory (no server). */
static void unit_shard(struct shard *sh, struct config *cfg, char *dir, const char *wal_mode, uint64_t keep)
{
	config_defaults(cfg);
	snprintf(cfg->data_dir, sizeof(cfg->data_dir), "%s", dir);
	snprintf(cfg->wal_mode, sizeof(cfg->wal_mode), "%s", wal_mode);
	cfg->snapshot_interval_s = 0;
	cfg->audit_keep = keep;
	char err[256];
	cr_assert_eq(shard_open(sh, cfg, err, sizeof(err)), 0, "%s", err);
}

/* A minimal authenticated GET context, as api_run() hands to audit_read(). */
struct fake_read {
	struct srv_request rq;
	struct srv_response rs;
	struct route route;
	struct api_ctx c;
};

static void fake_read(struct fake_read *f, struct shard *sh, int i)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->rq.request_id, sizeof(f->rq.request_id), "req_%016x", (unsigned)i);
	f->rs.status = 200;
	f->route = (struct route){HTTP_M_GET, "/v1/partners", NULL, SC_READ_PARTNERS, ACT_READ_PARTNERS, "", 0};
	f->c.sh = sh;
	f->c.rq = &f->rq;
	f->c.rs = &f->rs;
	f->c.route = &f->route;
	f->c.who.authenticated = 1;
	f->c.who.is_platform = 1;
	snprintf(f->c.who.key_id, sizeof(f->c.who.key_id), "%s", "key_unit");
	snprintf(f->c.who.entity_id, sizeof(f->c.who.entity_id), "%s", "platform");
}

/* The value of a metric line "name value" in text (-1 if absent). */
static long long metric(const char *text, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = text; (p = strstr(p, name)); p += n)
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return atoll(p + n + 1);
	return -1;
}

static long long unit_metric(struct shard *sh, const char *name, int refresh)
{
	struct wal *w = sh->wal;
	if (!refresh)
		sh->wal = NULL; /* render without asking the WAL what is durable */
	struct buf b;
	buf_init(&b, 0);
	audit_metrics(sh, &b);
	buf_putc(&b, 0);
	long long v = metric(b.data, name);
	buf_free(&b);
	sh->wal = w;
	return v;
}

WM_TEST(audit, pending_ring_counts_past_its_bound)
{
	char dir[] = "/tmp/wm-audit-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	struct shard sh;
	struct config cfg;
	unit_shard(&sh, &cfg, dir, "none", 16);
	struct fake_read *f = calloc(1, sizeof(*f));
	cr_assert_not_null(f);
	uint64_t first = 0;
	for (unsigned i = 0; i < AUDIT_PENDING_MAX + 5; i++) {
		uint64_t lsn = sh.lsn + 1;
		if (!first)
			first = lsn;
		fake_read(f, &sh, (int)i);
		audit_read(&f->c);
		audit_flush(&sh);
		cr_assert_eq(sh.lsn, lsn, "one quiet commit per read");
		if (i + 1 == AUDIT_PENDING_MAX) {
			cr_assert_eq(unit_metric(&sh, "wm_audit_records_unsynced", 0), AUDIT_PENDING_MAX,
				     "at the bound: every record counted");
		}
	}
	uint64_t last = sh.lsn;
	cr_assert_eq(sh.state_lsn, 0, "audit commits never move the state LSN");
	cr_assert_eq(unit_metric(&sh, "wm_audit_records_total", 0), AUDIT_PENDING_MAX + 5);
	cr_assert_eq(unit_metric(&sh, "wm_audit_records_unsynced", 0), AUDIT_PENDING_MAX + 5,
		     "past the bound: the excess is still counted");
	cr_assert_eq(unit_metric(&sh, "wm_audit_records_failed_total", 0), 0);
	cr_assert_eq(table_count(&sh.tables[REC_T_AUDIT]), 16, "memory holds --audit-keep rows");

	/* durable progress drops confirmed records, oldest first */
	audit_on_durable(&sh, first + 9);
	cr_assert_eq(unit_metric(&sh, "wm_audit_records_unsynced", 0), AUDIT_PENDING_MAX + 5 - 10);
	/* the excess stays counted until its highest LSN is durable */
	audit_on_durable(&sh, last - 1);
	cr_assert_geq(unit_metric(&sh, "wm_audit_records_unsynced", 0), 1, "never under-counts");
	audit_on_durable(&sh, last);
	cr_assert_eq(unit_metric(&sh, "wm_audit_records_unsynced", 0), 0);

	/* with the WAL asked (mode none: all durable at once) */
	fake_read(f, &sh, 1);
	audit_read(&f->c);
	audit_flush(&sh);
	cr_assert_eq(unit_metric(&sh, "wm_audit_records_unsynced", 1), 0);
	cr_assert_eq(unit_metric(&sh, "wm_audit_records_total", 1), AUDIT_PENDING_MAX + 6);

	/* staged rows wait while a transaction is open, then commit together */
	fake_read(f, &sh, 3);
	audit_read(&f->c);
	txn_begin(&sh);
	uint64_t before = sh.lsn;
	audit_read(&f->c);
	audit_flush(&sh);
	cr_assert_eq(sh.lsn, before, "never joins an open transaction");
	txn_abort(&sh);
	cr_assert_eq(unit_metric(&sh, "wm_audit_records_unsynced", 0), 2, "staged rows count as exposed");
	audit_flush(&sh);
	cr_assert_eq(sh.lsn, before + 1, "one transaction for the whole batch");
	cr_assert_eq(unit_metric(&sh, "wm_audit_records_total", 1), AUDIT_PENDING_MAX + 8);
	cr_assert_eq(unit_metric(&sh, "wm_audit_records_failed_total", 0), 0);

	/* ids are escaped in the document; ids decode() would refuse are not
	 * committed (that would stop the process) but counted */
	fake_read(f, &sh, 2);
	snprintf(f->c.who.entity_id, sizeof(f->c.who.entity_id), "%s", "ent\"\\x");
	f->c.who.is_platform = 0;
	audit_read(&f->c);
	audit_flush(&sh);
	struct oidx_iter it;
	cr_assert(oidx_seek_le(&sh.tables[REC_T_AUDIT].by_order, NULL, 0, &it));
	const struct row *r = oidx_iter_val(&it);
	cr_assert(strstr(r->doc, "\"entity_id\":\"ent\\\"\\\\x\""), "%s", r->doc);
	static const char *const refused[] = {"ent\x01", ""}; /* (over-long ids cannot exist: the principal holds ID_MAX_LEN) */
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		before = sh.lsn;
		snprintf(f->c.who.entity_id, sizeof(f->c.who.entity_id), "%s", refused[i]);
		audit_read(&f->c);
		audit_flush(&sh);
		cr_assert_eq(sh.lsn, before, "%zu", i);
	}
	cr_assert_eq(unit_metric(&sh, "wm_audit_records_failed_total", 0), 2);
	free(f);
	shard_close(&sh);
	rm_rf(dir);
}

/* Ids of the audit table in id order, newline-separated (caller frees). */
static char *audit_ids(struct shard *sh)
{
	struct buf b;
	buf_init(&b, 0);
	struct oidx_iter it;
	for (int ok = oidx_seek_ge(&sh->tables[REC_T_AUDIT].by_order, NULL, 0, &it); ok; ok = oidx_next(&it)) {
		const struct row *r = oidx_iter_val(&it);
		buf_append(&b, r->id, r->id_len);
		buf_putc(&b, '\n');
	}
	buf_putc(&b, 0);
	return b.data;
}

WM_TEST(audit, replay_rebuilds_the_same_rows_and_the_wal_keeps_older_ones)
{
	char dir[] = "/tmp/wm-audit-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	struct shard sh;
	struct config cfg;
	unit_shard(&sh, &cfg, dir, "write", 16);
	struct fake_read f;
	for (int i = 0; i < 50; i++) {
		fake_read(&f, &sh, i);
		f.c.rows_returned = (uint32_t)(i % 3);
		f.rs.status = i % 5 ? 200 : 404;
		audit_read(&f.c);
		audit_flush(&sh);
	}
	cr_assert_eq(table_count(&sh.tables[REC_T_AUDIT]), 16);
	char *live = audit_ids(&sh);
	shard_close(&sh);

	unit_shard(&sh, &cfg, dir, "write", 16);
	char *replayed = audit_ids(&sh);
	cr_assert_str_eq(replayed, live, "replay trims exactly as the live path did");
	free(replayed);
	shard_close(&sh);

	unit_shard(&sh, &cfg, dir, "write", 1000);
	cr_assert_eq(table_count(&sh.tables[REC_T_AUDIT]), 50, "older rows were still in the WAL");
	char *all = audit_ids(&sh);
	cr_assert(strstr(all, live) && strlen(strstr(all, live)) == strlen(live), "the kept rows are the newest");
	const struct row *r = table_get(&sh.tables[REC_T_AUDIT], live, 24);
	cr_assert_not_null(r);
	cr_assert(strstr(r->doc, "\"endpoint\":\"GET /v1/partners\""), "%s", r->doc);
	free(all);
	free(live);
	shard_close(&sh);
	rm_rf(dir);
}

