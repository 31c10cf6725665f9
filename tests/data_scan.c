/*
 * data_scan.c -- see data_scan.h.
 */
#include "tests/data_scan.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "snapshot/snapshot.h"
#include "wal/wal.h"

struct scan {
	const char *needle;
	size_t needle_len;
	int found;
	unsigned long records;
};

static int mem_has(const void *hay, size_t n, const char *needle, size_t nl)
{
	return nl <= n && memmem(hay, n, needle, nl) != NULL;
}

static int scan_wal(void *ctx, uint64_t lsn, const void *payload, size_t len)
{
	(void)lsn;
	struct scan *s = ctx;
	s->records++;
	s->found |= mem_has(payload, len, s->needle, s->needle_len);
	return 0;
}

static int scan_snap(void *ctx, const void *rec, size_t len)
{
	struct scan *s = ctx;
	s->records++;
	s->found |= mem_has(rec, len, s->needle, s->needle_len);
	return 0;
}

void data_scan(const char *data_dir, const char *needle, int *in_wal, int *in_snap)
{
	char dir[400];
	struct scan s = {needle, strlen(needle), 0, 0};
	snprintf(dir, sizeof(dir), "%s/wal", data_dir);
	struct wal_recovery_report rep;
	memset(&rep, 0, sizeof(rep));
	cr_assert_eq(wal_recover(dir, 0, scan_wal, &s, 0, &rep), 0, "%s", rep.error);
	cr_assert_gt(s.records, 0);
	*in_wal = s.found;
	s.found = 0;
	s.records = 0;
	snprintf(dir, sizeof(dir), "%s/snap", data_dir);
	struct snap_info si;
	cr_assert_eq(snap_find_latest(dir, &si), 1, "a snapshot was taken");
	char err[256], path[sizeof(si.path)];
	memcpy(path, si.path, sizeof(path));
	cr_assert_eq(snap_load(path, scan_snap, &s, &si, err, sizeof(err)), 0, "%s", err);
	cr_assert_gt(s.records, 0);
	*in_snap = s.found;
}
