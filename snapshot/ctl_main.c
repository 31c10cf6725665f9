/*
 * ctl_main.c -- bin/wm-ctl, the operator CLI for WAL segments and snapshots.
 *
 *   wm-ctl wal inspect DIR            per segment: LSN range, frames, txns, bytes
 *   wm-ctl wal verify DIR             exit 0 if every frame verifies, 1 otherwise
 *   wm-ctl snapshot inspect FILE      LSN, records, size, and records per table
 *   wm-ctl snapshot verify FILE       exit 0 if the file verifies, 1 otherwise
 *   wm-ctl snapshot take DATA_DIR     offline snapshot (the service must be stopped)
 *   wm-ctl counts DATA_DIR            rows per table and the LSN after recovery
 *   wm-ctl cluster status --shard-map FILE --cluster-secret-file FILE [--router HOST:PORT ...]
 *                                     every process of a cluster: map version, LSN,
 *                                     replication, in-doubt count (shard-router/ctl_cluster.c)
 *   wm-ctl cluster check --shard-map FILE --cluster-secret-file FILE
 *                                     the whole-cluster invariants: exit 1 on any violation
 *   wm-ctl txn resolve TXN commit|abort --shard-map FILE --cluster-secret-file FILE
 *                                     decide a cross-shard transaction whose router is gone
 *                                     for good (refused while it has a record)
 *   wm-ctl checks run --shard-map FILE --cluster-secret-file FILE
 *                                     the consistency checks on every shard (each flags its
 *                                     findings), then `cluster check`: exit 1 on any finding
 *   wm-ctl restore SRC DST [--upto-lsn N]
 *                                     rebuild SRC's state (up to LSN N) into a new
 *                                     data directory DST as one snapshot
 *
 * Commands that recover a data directory take its lock, so they refuse to
 * run against a live service instead of racing it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/storage/record.h"
#include "engine/storage/shard.h"
#include "shard-router/ctl_cluster.h"
#include "snapshot/snapshot.h"
#include "wal/wal.h"

static void usage(FILE *o)
{
	fprintf(o, "usage:\n"
		   "  wm-ctl wal inspect DIR\n  wm-ctl wal verify DIR\n"
		   "  wm-ctl snapshot inspect FILE\n  wm-ctl snapshot verify FILE\n"
		   "  wm-ctl snapshot take DATA_DIR\n  wm-ctl counts DATA_DIR\n"
		   "  wm-ctl restore SRC_DATA_DIR DST_DATA_DIR [--upto-lsn N]\n"
		   "  wm-ctl cluster status --shard-map FILE --cluster-secret-file FILE [--router HOST:PORT ...]\n"
		   "  wm-ctl cluster check --shard-map FILE --cluster-secret-file FILE\n"
		   "  wm-ctl txn resolve TXN commit|abort --shard-map FILE --cluster-secret-file FILE\n"
		   "  wm-ctl checks run --shard-map FILE --cluster-secret-file FILE [--in-doubt-limit-ms N]\n");
}

static void print_segment(void *ctx, const struct wal_segment_info *si)
{
	int *bad = ctx;
	printf("%s first_lsn=%" PRIu64 " last_lsn=%" PRIu64 " frames=%" PRIu64 " txns=%" PRIu64
	       " bytes_used=%" PRIu64 " %s",
	       si->path, si->first_lsn, si->last_lsn, si->frames, si->txns, si->bytes_used,
	       si->ok ? "ok" : "BAD");
	if (!si->ok) {
		printf(" bad_offset=%" PRIu64 " error=\"%s\"", si->bad_offset, si->error);
		*bad = 1;
	}
	printf("\n");
}

static int cmd_wal(const char *sub, const char *dir)
{
	int bad = 0;
	int rc = wal_inspect(dir, print_segment, &bad);
	if (!strcmp(sub, "verify"))
		printf("%s\n", rc || bad ? "WAL verification FAILED" : "WAL ok");
	return rc || bad ? 1 : 0;
}

struct table_counts {
	uint64_t n[REC_T_COUNT_];
};

static int count_record(void *ctx, const void *rec, size_t len)
{
	struct table_counts *tc = ctx;
	size_t off = 0;
	struct rec_view rv;
	if (rec_decode(rec, len, &off, &rv) != 1)
		return -1;
	tc->n[rv.table]++;
	return 0;
}

static int cmd_snapshot_file(const char *sub, const char *path)
{
	struct snap_info si;
	struct table_counts tc;
	memset(&tc, 0, sizeof(tc));
	char err[512];
	int rc = snap_load(path, count_record, &tc, &si, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "snapshot %s: %s\n", path, err);
		return 1;
	}
	printf("%s lsn=%" PRIu64 " records=%" PRIu64 " bytes=%" PRIu64 " created_unix_ms=%" PRIu64 " ok\n",
	       path, si.lsn, si.records, si.file_bytes, si.created_unix_ms);
	if (!strcmp(sub, "inspect"))
		for (int i = 0; i < REC_T_COUNT_; i++)
			if (tc.n[i])
				printf("  %-14s %" PRIu64 "\n", rec_table_name((unsigned)i), tc.n[i]);
	return 0;
}

static int load_dir(struct shard *sh, const char *dir, uint64_t upto)
{
	struct config cfg;
	config_defaults(&cfg);
	snprintf(cfg.data_dir, sizeof(cfg.data_dir), "%s", dir);
	char err[1024];
	if (shard_load(sh, &cfg, NULL, upto, err, sizeof(err))) {
		fprintf(stderr, "wm-ctl: %s\n", err);
		return -1;
	}
	return 0;
}

static int cmd_counts(const char *dir)
{
	static struct shard sh;
	if (load_dir(&sh, dir, 0))
		return 1;
	printf("lsn=%" PRIu64 "\n", sh.lsn);
	for (int i = 0; i < REC_T_COUNT_; i++)
		if (sh.tables[i].ops)
			printf("  %-14s %zu\n", sh.tables[i].ops->name, table_count(&sh.tables[i]));
	shard_close(&sh);
	return 0;
}

static int cmd_take(const char *dir)
{
	static struct shard sh;
	if (load_dir(&sh, dir, 0))
		return 1;
	char err[512];
	int rc = shard_snapshot_write(&sh, err, sizeof(err));
	if (rc)
		fprintf(stderr, "wm-ctl: snapshot failed: %s\n", err);
	else
		printf("snapshot written at lsn=%" PRIu64 " in %s\n", sh.lsn, sh.snap_dir);
	shard_close(&sh);
	return rc ? 1 : 0;
}

static int cmd_restore(const char *src, const char *dst, uint64_t upto)
{
	struct stat st;
	if (stat(dst, &st) == 0) {
		fprintf(stderr, "wm-ctl: %s exists; restore only into a new directory\n", dst);
		return 1;
	}
	static struct shard sh;
	if (load_dir(&sh, src, upto))
		return 1;
	if (upto && sh.lsn < upto)
		fprintf(stderr, "wm-ctl: warning: the log ends at LSN %" PRIu64 ", before %" PRIu64 "\n", sh.lsn, upto);
	char snapdir[600];
	snprintf(snapdir, sizeof(snapdir), "%s/snap", dst);
	if (mkdir(dst, 0755) || mkdir(snapdir, 0755)) {
		fprintf(stderr, "wm-ctl: cannot create %s: %s\n", snapdir, strerror(errno));
		shard_close(&sh);
		return 1;
	}
	snprintf(sh.snap_dir, sizeof(sh.snap_dir), "%s", snapdir);
	char err[512];
	int rc = shard_snapshot_write(&sh, err, sizeof(err));
	if (rc)
		fprintf(stderr, "wm-ctl: restore failed: %s\n", err);
	else
		printf("restored lsn=%" PRIu64 " into %s\n", sh.lsn, dst);
	shard_close(&sh);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "wal") && (!strcmp(argv[2], "inspect") || !strcmp(argv[2], "verify")))
		return cmd_wal(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "snapshot") &&
	    (!strcmp(argv[2], "inspect") || !strcmp(argv[2], "verify")))
		return cmd_snapshot_file(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "snapshot") && !strcmp(argv[2], "take"))
		return cmd_take(argv[3]);
	if (argc >= 3 && !strcmp(argv[1], "cluster"))
		return ctl_cluster(argc - 2, argv + 2);
	if (argc >= 3 && !strcmp(argv[1], "txn"))
		return ctl_txn(argc - 2, argv + 2);
	if (argc >= 3 && !strcmp(argv[1], "checks"))
		return ctl_checks(argc - 2, argv + 2);
	if (argc == 3 && !strcmp(argv[1], "counts"))
		return cmd_counts(argv[2]);
	if ((argc == 4 || argc == 6) && !strcmp(argv[1], "restore")) {
		uint64_t upto = 0;
		if (argc == 6) {
			char *end;
			upto = strtoull(argv[5], &end, 10);
			if (strcmp(argv[4], "--upto-lsn") || *end || !upto) {
				usage(stderr);
				return 2;
			}
		}
		return cmd_restore(argv[2], argv[3], upto);
	}
	usage(stderr);
	return 2;
}
