/*
 * test_wal_space.c -- the WAL's refusal point on a full disk, at and past
 * its edge (wal.c, "Running out of space"; issue 21, item 2).
 *
 * The errinj wal_spare_enospc makes the spare-segment preparer fail as on
 * a full disk (it is read at every attempt, so unsetting it is "space
 * returned").  Then the WAL must accept exactly what the current segment
 * is certain to hold -- each transaction counted at its worst-case frame
 * size, wal_txn_worst() -- and refuse the rest with WAL_E_NOSPACE before
 * queueing anything; and accept writes again by itself once the spare can
 * be made.  What was accepted is what recovery replays.
 */
#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wal/wal.h"
#include "wal/wal_format.h"
#include "tests/wm_test.h"

#define SEG (64u << 10) /* the smallest segment */

static void sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(path);
}

struct seen {
	uint64_t lsns[8];
	size_t lens[8];
	int n;
};

static int replay(void *ctx, uint64_t lsn, const void *payload, size_t len)
{
	(void)payload;
	struct seen *s = ctx;
	cr_assert_lt(s->n, 8);
	s->lsns[s->n] = lsn;
	s->lens[s->n++] = len;
	return 0;
}

WM_TEST(wal_space, refused_past_the_edge_accepted_at_it_resumes_when_space_returns, .timeout = 30)
{
	char dir[64] = "/tmp/wal-space-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	setenv("WM_ERRINJ", "wal_spare_enospc", 1);
	struct wal_config cfg = {.dir = dir, .mode = WAL_MODE_FSYNC, .segment_size = SEG};
	char err[512] = "";
	struct wal *w = wal_open(&cfg, 1, err, sizeof(err));
	cr_assert_not_null(w, "%s", err);
	int waited = 0;
	while (wal_space(w, 0, NULL) == 0 && waited < 5000) {
		sleep_ms(10);
		waited += 10;
	}
	uint64_t room = 0;
	cr_assert_eq(wal_space(w, 0, &room), 1, "the failed spare did not make space low");
	cr_assert_eq(room, SEG - WAL_SEG_HEADER_SIZE, "room = the empty segment after its header");

	/* the largest payload whose worst case fits exactly */
	size_t len = 0;
	while (wal_txn_worst(len + 1) <= room)
		len++;
	cr_assert_leq(wal_txn_worst(len), room);
	cr_assert_gt(wal_txn_worst(len + 1), room);
	cr_assert_eq(wal_space(w, len, NULL), 1, "fits at the edge");
	cr_assert_eq(wal_space(w, len + 1, NULL), 2, "one byte past the edge does not");
	cr_assert_eq(wal_reserve(w, len + 1), WAL_E_NOSPACE);
	cr_assert_eq(wal_reserve(w, len), 0);
	cr_assert_eq(wal_reserve(w, 0), WAL_E_NOSPACE, "the reservation took the whole room");
	wal_unreserve(w, len);

	uint8_t *p = malloc(len);
	cr_assert_not_null(p);
	unsigned x = 1;
	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
	cr_assert_eq(wal_append(w, 1, p, len), 0, "append at the edge");
	cr_assert_eq(wal_append(w, 2, p, 1000), WAL_E_NOSPACE, "past the edge: refused, nothing queued");
	wal_flush(w);
	cr_assert_eq(wal_durable_lsn(w), 1);
	struct wal_stats st;
	wal_stats(w, &st);
	cr_assert(st.space_low && st.nospace_refusals >= 3, "stats: low %d refusals %llu", st.space_low,
		  (unsigned long long)st.nospace_refusals);

	/* space returns: the preparer's next attempt succeeds, writes go on
	 * (the segment is full: LSN 2 rotates into the new spare) */
	unsetenv("WM_ERRINJ");
	for (waited = 0; wal_space(w, 0, NULL) != 0 && waited < 5000; waited += 10)
		sleep_ms(10);
	cr_assert_eq(wal_space(w, 0, NULL), 0, "writes not accepted again after space returned");
	cr_assert_eq(wal_append(w, 2, p, 1000), 0);
	wal_flush(w);
	cr_assert_eq(wal_durable_lsn(w), 2);
	wal_close(w);

	struct seen s = {0};
	struct wal_recovery_report rep;
	memset(&rep, 0, sizeof(rep));
	cr_assert_eq(wal_recover(dir, 0, replay, &s, 0, &rep), 0, "%s", rep.error);
	cr_assert_eq(s.n, 2);
	cr_assert_eq(s.lsns[0], 1);
	cr_assert_eq(s.lens[0], len);
	cr_assert_eq(s.lsns[1], 2);
	cr_assert_eq(s.lens[1], 1000);
	free(p);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}
