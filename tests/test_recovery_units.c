/*
 * test_recovery_units.c -- shard recovery (engine/storage/shard.c
 * shard_load_with) through an in-process shard: the snapshot chosen, the
 * tables sized from it, the WAL tail on top.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/storage/record.h"
#include "engine/storage/shard.h"
#include "tests/harness.h"
#include "tests/shard_fixture.h"
#include "tests/wm_test.h"

static void commit_events(struct fixture *f, int n, const char *type)
{
	for (int i = 0; i < n; i++) {
		char payload[64];
		int len = snprintf(payload, sizeof(payload), "{\"i\":%d}", i);
		txn_begin(&f->sh);
		cr_assert_eq(txn_event(&f->sh, type, NULL, payload, (size_t)len), 0);
		cr_assert_neq(txn_commit(&f->sh), 0);
	}
}

static size_t events(struct fixture *f) { return table_count(&f->sh.tables[REC_T_EVENT]); }

/* fx_open with stderr captured into out. */
static void open_capture(struct fixture *f, char *out, size_t outlen)
{
	struct stderr_capture c;
	stderr_capture_begin(&c);
	fx_open(f);
	stderr_capture_end(&c, out, outlen);
}

WM_TEST(recovery, corrupt_newest_snapshot_falls_back_to_the_older_one_and_is_logged)
{
	struct fixture *f = fixture_new("recovery");
	char err[256], out[16384];
	commit_events(f, 30, "t.a");
	cr_assert_eq(shard_snapshot_write(&f->sh, err, sizeof(err)), 0, "%s", err);
	uint64_t older = f->sh.lsn;
	commit_events(f, 20, "t.b");
	cr_assert_eq(shard_snapshot_write(&f->sh, err, sizeof(err)), 0, "%s", err);
	uint64_t newer = f->sh.lsn;
	commit_events(f, 10, "t.c");
	size_t want = events(f);
	uint64_t lsn = f->sh.lsn;
	cr_assert_gt(newer, older);

	/* both good: the newest loaded, the WAL tail on top, nothing skipped */
	shard_close(&f->sh);
	open_capture(f, out, sizeof(out));
	cr_assert_eq(events(f), want);
	cr_assert_eq(f->sh.lsn, lsn);
	cr_assert_eq(f->sh.snap_last_lsn, newer);
	cr_assert_null(strstr(out, "skipping invalid"), "%s", out);
	/* the id index was sized from the snapshot: no rehash left moving */
	cr_assert_null(f->sh.tables[REC_T_EVENT].by_id.old);

	/* a bit flip in the newest: the older one and a longer WAL tail */
	shard_close(&f->sh);
	char p[700];
	snprintf(p, sizeof(p), "%s/snap/%020llu.snap", f->cfg.data_dir, (unsigned long long)newer);
	FILE *fp = fopen(p, "r+b");
	cr_assert_not_null(fp, "%s", p);
	cr_assert_eq(fseek(fp, 80, SEEK_SET), 0);
	int c = fgetc(fp);
	cr_assert_eq(fseek(fp, 80, SEEK_SET), 0);
	fputc(c ^ 0x20, fp);
	fclose(fp);
	open_capture(f, out, sizeof(out));
	cr_assert_eq(events(f), want, "every event, from the older snapshot + the WAL");
	cr_assert_eq(f->sh.lsn, lsn);
	cr_assert_eq(f->sh.snap_last_lsn, older);
	cr_assert_not_null(strstr(out, "snapshot: skipping invalid"), "not logged: %s", out);
	cr_assert_not_null(strstr(out, p), "the log does not name the file: %s", out);
	cr_assert_not_null(strstr(out, "snapshot loaded"), "%s", out);
	fixture_free(f);
}
