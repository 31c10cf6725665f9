/*
 * test_checks_units.c -- the consistency checks' schedule and bounds in
 * process (engine/checks.c): --checks-at's parser at and past its edges,
 * the "clock passed the time" test around the time and midnight, a run's
 * CHECKS_MAX_FINDINGS at and past the bound, and the background run (a
 * forked child scans the state at its start while the shard goes on), on
 * a real shard whose levels are written straight to the table (no
 * history: each one a stock_invariant finding).  The flows over HTTP are in test_checks.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/checks.h"
#include "engine/storage/record.h"
#include "engine/storage/shard.h"
#include "tests/shard_fixture.h"
#include "tests/wm_test.h"

WM_TEST(checks_units, checks_at_parses_hh_mm_and_off_only)
{
	cr_assert_eq(checks_parse_at("00:00"), 0);
	cr_assert_eq(checks_parse_at("03:00"), 180);
	cr_assert_eq(checks_parse_at("23:59"), 23 * 60 + 59);
	cr_assert_eq(checks_parse_at("off"), CHECKS_AT_OFF);
	static const char *const bad[] = {"24:00", "23:60", "3:00", "03:0", "03:000", "03-00", "0a:00", "", "OFF",
					  " 03:00", "03:00 ", "99:99"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(checks_parse_at(bad[i]), -1, "\"%s\"", bad[i]);
}

#define DAY 86400000ULL
#define MIN 60000ULL

WM_TEST(checks_units, a_run_is_due_when_the_clock_passes_the_time)
{
	const uint64_t d = 20000 * DAY; /* a midnight */
	const int at = 180;             /* 03:00 */
	cr_assert_eq(checks_crossed(at, d + 180 * MIN - 1, d + 180 * MIN), 1, "reaching 03:00:00.000");
	cr_assert_eq(checks_crossed(at, d + 180 * MIN - 250, d + 180 * MIN + 1), 1, "a tick across it");
	cr_assert_eq(checks_crossed(at, d + 180 * MIN, d + 180 * MIN + 250), 0, "already past at the last tick");
	cr_assert_eq(checks_crossed(at, d + 179 * MIN, d + 180 * MIN - 1), 0, "not yet");
	cr_assert_eq(checks_crossed(at, d + 181 * MIN, d + DAY - 1), 0, "the rest of the day");
	cr_assert_eq(checks_crossed(at, d + 180 * MIN - 1, d + 180 * MIN - 1), 0, "no time passed");
	cr_assert_eq(checks_crossed(at, d + 180 * MIN + 1, d + 180 * MIN - 1), 0, "the clock went back");
	cr_assert_eq(checks_crossed(0, d - 1, d), 1, "00:00, at midnight");
	cr_assert_eq(checks_crossed(0, d, d + 1), 0, "00:00, just after");
	cr_assert_eq(checks_crossed(23 * 60 + 59, d - 2 * MIN, d + MIN), 1, "23:59 of yesterday, seen after midnight");
	cr_assert_eq(checks_crossed(CHECKS_AT_OFF, d + 180 * MIN - 1, d + 180 * MIN), 0, "off");
	cr_assert_eq(checks_crossed(at, d + 180 * MIN - 1, d + DAY + 180 * MIN), 1, "a day's jump");
}

/* Levels "lvl_<i>" for i in [from, to), written straight to the table
 * (no stock.changed history: each is a stock_invariant finding). */
static void put_levels(struct fixture *f, unsigned from, unsigned to)
{
	char id[32], doc[512];
	for (unsigned i = from; i < to;) {
		txn_begin(&f->sh);
		for (unsigned k = 0; k < 500 && i < to; k++, i++) {
			snprintf(id, sizeof(id), "lvl_%05u", i);
			int n = snprintf(doc, sizeof(doc),
					 "{\"id\":\"%s\",\"sku\":\"S%u\",\"offer_id\":\"ofr_none\",\"owner_entity_id\":\"prt_x\","
					 "\"location_id\":\"loc_x\",\"condition\":\"sellable\",\"on_hand\":1,\"incoming\":0,"
					 "\"reserved\":0,\"allocated\":0,\"atp\":1,\"created_at\":\"2025-01-01T00:00:00.000Z\","
					 "\"updated_at\":\"2025-01-01T00:00:00.000Z\"}",
					 id, i);
			cr_assert_eq(txn_put(&f->sh, REC_T_INVENTORY, id, strlen(id), doc, (size_t)n), 0);
		}
		cr_assert_gt(txn_commit(&f->sh), 0);
	}
}

/* Reap the background run (bounded wait for the child to finish its scan). */
static int poll_done(struct fixture *f, struct checks_summary *r)
{
	int rc = 0;
	for (int t = 0; t < 3000 && !rc; t++)
		if (!(rc = checks_poll(&f->sh, r)))
			usleep(10 * 1000);
	return rc;
}

WM_TEST(checks_units, a_run_records_at_most_the_bound, .timeout = 120)
{
	struct fixture *f = fixture_new("checks");
	struct checks_summary r;
	checks_run(&f->sh, &r);
	cr_assert(r.findings == 0 && r.open == 0 && !r.truncated && !r.failed, "an empty shard");
	/* at the bound: every finding recorded and flagged */
	put_levels(f, 0, CHECKS_MAX_FINDINGS);
	checks_run(&f->sh, &r);
	cr_assert_eq(r.findings, CHECKS_MAX_FINDINGS);
	cr_assert_eq(r.flagged, CHECKS_MAX_FINDINGS);
	cr_assert_eq(r.open, CHECKS_MAX_FINDINGS);
	cr_assert(!r.truncated && !r.failed);
	cr_assert_eq(table_count(&f->sh.tables[REC_T_CHECK_FINDING]), CHECKS_MAX_FINDINGS);
	/* past it: counted, not recorded, and nothing closed on a partial view */
	put_levels(f, CHECKS_MAX_FINDINGS, CHECKS_MAX_FINDINGS + 1);
	checks_run(&f->sh, &r);
	cr_assert_eq(r.findings, CHECKS_MAX_FINDINGS + 1);
	cr_assert(r.truncated && !r.failed);
	cr_assert_eq(r.flagged, 0, "the first %u in id order are all open already", CHECKS_MAX_FINDINGS);
	cr_assert_eq(r.closed, 0);
	cr_assert_eq(r.open, CHECKS_MAX_FINDINGS);
	/* one fixed: back at the bound, the last one recorded, the fixed one closed */
	txn_begin(&f->sh);
	cr_assert_eq(txn_del(&f->sh, REC_T_INVENTORY, "lvl_00000", 9), 0);
	cr_assert_gt(txn_commit(&f->sh), 0);
	checks_run(&f->sh, &r);
	cr_assert_eq(r.findings, CHECKS_MAX_FINDINGS);
	cr_assert(!r.truncated);
	cr_assert_eq(r.flagged, 1);
	cr_assert_eq(r.closed, 1);
	cr_assert_eq(r.open, CHECKS_MAX_FINDINGS);
	cr_assert_null(table_get(&f->sh.tables[REC_T_CHECK_FINDING], "stock_invariant/lvl_00000", 25));
	cr_assert_not_null(table_get(&f->sh.tables[REC_T_CHECK_FINDING], "stock_invariant/lvl_10000", 25));
	/* the open set and the run count survive a restart */
	shard_close(&f->sh);
	fx_open(f);
	cr_assert_eq(table_count(&f->sh.tables[REC_T_CHECK_FINDING]), CHECKS_MAX_FINDINGS);
	checks_run(&f->sh, &r);
	cr_assert_eq(r.flagged, 0, "nothing flagged twice across a restart");
	cr_assert_eq(r.closed, 0);
	/* the background run past the bound: its file carries the count and the truncation */
	put_levels(f, CHECKS_MAX_FINDINGS + 1, CHECKS_MAX_FINDINGS + 2);
	cr_assert_eq(checks_start(&f->sh), 0);
	cr_assert_eq(poll_done(f, &r), 1);
	cr_assert_eq(r.findings, CHECKS_MAX_FINDINGS + 1);
	cr_assert(r.truncated && !r.failed);
	cr_assert(r.flagged == 0 && r.closed == 0 && r.open == CHECKS_MAX_FINDINGS);
	fixture_free(f);
}

WM_TEST(checks_units, a_background_run_reads_the_state_at_its_start, .timeout = 120)
{
	struct fixture *f = fixture_new("checks");
	struct checks_summary r;
	cr_assert_eq(checks_poll(&f->sh, &r), 0, "nothing running");
	put_levels(f, 0, 3);
	uint64_t at = f->sh.lsn;
	cr_assert_eq(checks_start(&f->sh), 0);
	cr_assert_eq(checks_start(&f->sh), 1, "one at a time");
	/* the loop goes on writing while the child scans its copy */
	put_levels(f, 3, 5);
	cr_assert_eq(poll_done(f, &r), 1);
	cr_assert_eq(r.lsn, at, "the child's view is the state at its start");
	cr_assert_eq(r.findings, 3, "not the two levels written after it");
	cr_assert_eq(r.flagged, 3);
	cr_assert_eq(r.open, 3);
	cr_assert_eq(table_count(&f->sh.tables[REC_T_CHECK_FINDING]), 3);
	char path[600];
	snprintf(path, sizeof(path), "%s/checks-run.tmp", f->cfg.data_dir);
	cr_assert_neq(access(path, F_OK), 0, "the child's file is gone once applied");
	checks_run(&f->sh, &r);
	cr_assert_eq(r.flagged, 2, "the later two, by a run of the present state");
	cr_assert_eq(r.open, 5);
	/* again in the background: nothing new */
	cr_assert_eq(checks_start(&f->sh), 0);
	cr_assert_eq(poll_done(f, &r), 1);
	cr_assert(r.findings == 5 && r.flagged == 0 && r.closed == 0 && r.open == 5);
	/* a run of a later state applied while the child scans: its older view is dropped */
	cr_assert_eq(checks_start(&f->sh), 0);
	txn_begin(&f->sh);
	cr_assert_eq(txn_del(&f->sh, REC_T_INVENTORY, "lvl_00000", 9), 0);
	cr_assert_gt(txn_commit(&f->sh), 0);
	checks_run(&f->sh, &r);
	cr_assert_eq(r.closed, 1);
	cr_assert_eq(poll_done(f, &r), 2, "dropped, not applied");
	cr_assert_eq(table_count(&f->sh.tables[REC_T_CHECK_FINDING]), 4, "the closed one stays closed");
	fixture_free(f);
}

WM_TEST(checks_units, a_failed_background_run_changes_nothing_and_the_next_one_runs, .timeout = 60)
{
	struct fixture *f = fixture_new("checks");
	put_levels(f, 0, 2);
	/* the child cannot write its file (a directory stands where it goes) */
	char path[600];
	snprintf(path, sizeof(path), "%s/checks-run.tmp", f->cfg.data_dir);
	cr_assert_eq(mkdir(path, 0700), 0);
	struct checks_summary r;
	cr_assert_eq(checks_start(&f->sh), 0);
	cr_assert_eq(poll_done(f, &r), -1, "the child failed");
	cr_assert_eq(table_count(&f->sh.tables[REC_T_CHECK_FINDING]), 0, "nothing applied");
	cr_assert_null(table_get(&f->sh.tables[REC_T_CHECK_RUN], "last", 4), "no run counted");
	cr_assert_eq(rmdir(path), 0);
	cr_assert_eq(checks_start(&f->sh), 0, "not left running");
	cr_assert_eq(poll_done(f, &r), 1);
	cr_assert(r.flagged == 2 && r.open == 2);
	fixture_free(f);
}

WM_TEST(checks_units, findings_are_flagged_and_closed_in_batches_across_their_edges, .timeout = 60)
{
	struct fixture *f = fixture_new("checks");
	/* 2 batches and 22 over: 150 flagged in three transactions */
	put_levels(f, 0, 150);
	uint64_t lsn = f->sh.lsn;
	struct checks_summary r;
	checks_run(&f->sh, &r);
	cr_assert(r.flagged == 150 && r.open == 150);
	cr_assert_eq(f->sh.lsn - lsn, 3 + 1 + 1, "three flag transactions, the run's row, the alert");
	/* 130 fixed, in the middle and at both ends: closed in three transactions, the other 20 stay */
	txn_begin(&f->sh);
	for (unsigned i = 0; i < 150; i++)
		if (i < 10 || i >= 30) {
			char id[32];
			snprintf(id, sizeof(id), "lvl_%05u", i);
			cr_assert_eq(txn_del(&f->sh, REC_T_INVENTORY, id, strlen(id)), 0);
		}
	cr_assert_gt(txn_commit(&f->sh), 0);
	lsn = f->sh.lsn;
	checks_run(&f->sh, &r);
	cr_assert_eq(r.closed, 130);
	cr_assert(r.flagged == 0 && r.open == 20);
	cr_assert_eq(f->sh.lsn - lsn, 3 + 1 + 1, "three close transactions, the run's row, the alert");
	for (unsigned i = 0; i < 150; i++) {
		char key[64];
		snprintf(key, sizeof(key), "stock_invariant/lvl_%05u", i);
		cr_assert_eq(table_get(&f->sh.tables[REC_T_CHECK_FINDING], key, strlen(key)) != NULL, i >= 10 && i < 30, "%s",
			     key);
	}
	fixture_free(f);
}
