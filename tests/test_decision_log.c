/*
 * test_decision_log.c -- the 2PC coordinator's decision log
 * (shard-router/decision_log.c), suite `decision_log`.
 *
 * What must hold, each proved against a real log in a temporary directory:
 * a durable COMMIT survives a restart and is re-driven until its END; a
 * torn tail is cut and only what was never reported durable is lost; many
 * COMMITs share one fdatasync (WAL stats); every bound (id length and
 * charset, router id, participants, shard ids, queue limits) holds at its
 * edge and refuses one past it; a corrupt record stops the open with its
 * LSN; pruning never passes the oldest COMMIT without END.
 * The expected values come from the contract in decision_log.h, never from
 * running the implementation.
 */
#include "shard-router/decision_log.h"
#include "tests/harness.h"
#include "tests/wm_test.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void make_tmp(char *dir)
{
	strcpy(dir, "/tmp/dlog-test-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static struct dlog *open_log(const char *dir, enum wal_mode mode, uint64_t seg, uint32_t max_unended,
			     uint32_t max_waiting)
{
	struct dlog_config c = {.dir = dir, .mode = mode, .segment_size = seg, .max_unended = max_unended,
				.max_waiting = max_waiting};
	char err[512] = "";
	struct dlog *l = NULL;
	cr_assert_eq(dlog_open(&c, &l, err, sizeof(err)), 0, "dlog_open: %s", err);
	cr_assert_not_null(l);
	return l;
}

/* Callback bookkeeping: how many ran and in what order. */
struct seen {
	int calls;
	char last[DLOG_TXN_ID_MAX + 1];
	int in_order; /* ids "r1:o<N>" arrive with N = 0, 1, 2, ... */
};

static void on_durable(void *arg, const char *txn)
{
	struct seen *s = arg;
	char want[32];
	snprintf(want, sizeof(want), "r1:o%d", s->calls);
	if (strcmp(want, txn))
		s->in_order = 0;
	s->calls++;
	snprintf(s->last, sizeof(s->last), "%s", txn);
}

static void count_only(void *arg, const char *txn)
{
	(void)txn;
	(*(int *)arg)++;
}

/* Run the loop's part: wait on the eventfd and poll until `want` callbacks
 * ran in total (counter *calls) or 5 s passed. */
static void wait_calls(struct dlog *l, const int *calls, int want)
{
	for (int i = 0; i < 500 && *calls < want; i++) {
		struct pollfd p = {.fd = dlog_event_fd(l), .events = POLLIN};
		poll(&p, 1, 10);
		dlog_poll(l);
	}
	cr_assert_eq(*calls, want, "callbacks: %d of %d", *calls, want);
}

struct collected {
	int n;
	char ids[8][DLOG_TXN_ID_MAX + 1];
	uint8_t shards[8][DLOG_MAX_PARTICIPANTS];
	size_t nshards[8];
	uint64_t at_ms[8];
};

static void collect(void *arg, const char *txn, const uint8_t *shards, size_t n, uint64_t at_ms)
{
	struct collected *c = arg;
	if (c->n < 8) {
		snprintf(c->ids[c->n], sizeof(c->ids[0]), "%s", txn);
		memcpy(c->shards[c->n], shards, n);
		c->nshards[c->n] = n;
		c->at_ms[c->n] = at_ms;
	}
	c->n++;
}

static void count_visit(void *arg, const char *txn, const uint8_t *shards, size_t n, uint64_t at_ms)
{
	(void)arg, (void)txn, (void)shards, (void)n, (void)at_ms;
}

static int count_segments(const char *dir)
{
	DIR *d = opendir(dir);
	cr_assert_not_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strlen(e->d_name) == 24 && !strcmp(e->d_name + 20, ".wal"))
			n++;
	closedir(d);
	return n;
}

/* ---- restart ---------------------------------------------------------------- */

WM_TEST(decision_log, a_durable_commit_is_undecided_after_reopen)
{
	char dir[64];
	make_tmp(dir);
	struct dlog *l = open_log(dir, WAL_MODE_FSYNC, 0, 0, 0);
	int calls = 0;
	const uint8_t parts[] = {2, 0, 5};
	cr_assert_eq(dlog_commit(l, "r1:ord_FR_A", parts, 3, count_only, &calls), 0);
	cr_assert_eq(calls, 0, "the callback never runs inside dlog_commit");
	wait_calls(l, &calls, 1);
	cr_assert_eq(dlog_lookup(l, "r1:ord_FR_A"), DLOG_COMMITTED);
	dlog_close(l);

	l = open_log(dir, WAL_MODE_FSYNC, 0, 0, 0);
	struct collected c = {0};
	cr_assert_eq(dlog_undecided(l, collect, &c), 1);
	cr_assert_eq(c.n, 1);
	cr_assert_str_eq(c.ids[0], "r1:ord_FR_A");
	cr_assert_eq(c.nshards[0], 3);
	cr_assert_eq(memcmp(c.shards[0], parts, 3), 0, "participants survive in their order");
	cr_assert_gt(c.at_ms[0], 1700000000000ull, "the COMMIT time is a unix time in ms");
	cr_assert_eq(dlog_lookup(l, "r1:ord_FR_A"), DLOG_COMMITTED);
	cr_assert_eq(dlog_lookup(l, "r1:ord_FR_B"), DLOG_UNKNOWN, "presumed abort: never committed");
	struct dlog_stats st;
	dlog_stats(l, &st);
	cr_assert_eq(st.unended, 1);
	cr_assert_eq(st.oldest_unended_ms, c.at_ms[0]);
	cr_assert_eq(dlog_commit(l, "r1:ord_FR_A", parts, 1, count_only, &calls), DLOG_E_EXISTS,
		     "a second COMMIT for the same id is refused after a restart too");
	dlog_close(l);
	rm_rf(dir);
}

WM_TEST(decision_log, an_ended_commit_is_not_undecided_after_reopen)
{
	char dir[64];
	make_tmp(dir);
	struct dlog *l = open_log(dir, WAL_MODE_FSYNC, 0, 0, 0);
	int calls = 0;
	const uint8_t p1[] = {1}, p2[] = {1, 2};
	cr_assert_eq(dlog_end(l, "r1:never"), DLOG_E_STATE, "END without COMMIT");
	cr_assert_eq(dlog_commit(l, "r1:a", p1, 1, count_only, &calls), 0);
	cr_assert_eq(dlog_commit(l, "r1:b", p2, 2, count_only, &calls), 0);
	cr_assert_eq(dlog_commit(l, "r1:a", p1, 1, count_only, &calls), DLOG_E_EXISTS);
	wait_calls(l, &calls, 2);
	cr_assert_eq(dlog_end(l, "r1:a"), 0);
	cr_assert_eq(dlog_end(l, "r1:a"), 0, "a repeated END is a no-op");
	cr_assert_eq(dlog_lookup(l, "r1:a"), DLOG_ENDED);
	dlog_close(l);

	l = open_log(dir, WAL_MODE_FSYNC, 0, 0, 0);
	struct collected c = {0};
	cr_assert_eq(dlog_undecided(l, collect, &c), 1);
	cr_assert_str_eq(c.ids[0], "r1:b");
	cr_assert_eq(dlog_lookup(l, "r1:a"), DLOG_ENDED);
	cr_assert_eq(dlog_lookup(l, "r1:b"), DLOG_COMMITTED);
	struct dlog_stats st;
	dlog_stats(l, &st);
	cr_assert_eq(st.replayed, 3, "COMMIT a, COMMIT b, END a: got %llu", (unsigned long long)st.replayed);
	dlog_close(l);
	rm_rf(dir);
}

/* ---- torn tail ------------------------------------------------------------- */

struct seg_used {
	char path[256];
	uint64_t used;
};
static void last_seg(void *ctx, const struct wal_segment_info *info)
{
	struct seg_used *s = ctx;
	snprintf(s->path, sizeof(s->path), "%s", info->path);
	s->used = info->bytes_used;
}

WM_TEST(decision_log, a_torn_tail_is_cut_and_earlier_commits_survive)
{
	char dir[64];
	make_tmp(dir);
	struct dlog *l = open_log(dir, WAL_MODE_FSYNC, 0, 0, 0);
	int calls = 0;
	const uint8_t p[] = {3, 4};
	cr_assert_eq(dlog_commit(l, "r1:first", p, 2, count_only, &calls), 0);
	wait_calls(l, &calls, 1);
	struct seg_used a = {0}, b = {0};
	cr_assert_eq(wal_inspect(dir, last_seg, &a), 0);
	cr_assert_eq(dlog_commit(l, "r1:second", p, 2, count_only, &calls), 0);
	wait_calls(l, &calls, 2);
	cr_assert_eq(wal_inspect(dir, last_seg, &b), 0);
	cr_assert_str_eq(a.path, b.path);
	cr_assert_gt(b.used, a.used);
	dlog_close(l);

	/* Garble one byte in the middle of the second COMMIT's frame: as if the
	 * crash came during its write. */
	int fd = open(b.path, O_RDWR);
	cr_assert_geq(fd, 0);
	off_t mid = (off_t)(a.used + (b.used - a.used) / 2);
	uint8_t byte;
	cr_assert_eq(pread(fd, &byte, 1, mid), 1);
	byte ^= 0x5a;
	cr_assert_eq(pwrite(fd, &byte, 1, mid), 1);
	close(fd);

	l = open_log(dir, WAL_MODE_FSYNC, 0, 0, 0);
	struct dlog_stats st;
	dlog_stats(l, &st);
	cr_assert_eq(st.tail_cut, 1, "the torn frame was cut");
	struct collected c = {0};
	cr_assert_eq(dlog_undecided(l, collect, &c), 1);
	cr_assert_str_eq(c.ids[0], "r1:first");
	cr_assert_eq(dlog_lookup(l, "r1:second"), DLOG_UNKNOWN);
	/* The log goes on: the lost id can be decided again. */
	cr_assert_eq(dlog_commit(l, "r1:second", p, 2, count_only, &calls), 0);
	wait_calls(l, &calls, 3);
	dlog_close(l);
	l = open_log(dir, WAL_MODE_FSYNC, 0, 0, 0);
	cr_assert_eq(dlog_lookup(l, "r1:second"), DLOG_COMMITTED);
	dlog_close(l);
	rm_rf(dir);
}

/* ---- group commit --------------------------------------------------------- */

WM_TEST(decision_log, many_commits_share_syncs_and_call_back_in_order)
{
	char dir[64];
	make_tmp(dir);
	struct dlog *l = open_log(dir, WAL_MODE_FSYNC, 0, 0, 0);
	enum { N = 2000 };
	struct seen s = {.in_order = 1};
	const uint8_t p[] = {1, 2, 3};
	for (int i = 0; i < N; i++) {
		char id[32];
		snprintf(id, sizeof(id), "r1:o%d", i);
		cr_assert_eq(dlog_commit(l, id, p, 3, on_durable, &s), 0);
	}
	wait_calls(l, &s.calls, N);
	cr_assert(s.in_order, "callbacks run in LSN order");
	struct dlog_stats st;
	dlog_stats(l, &st);
	cr_assert_eq(st.wal.txns, N);
	cr_assert_lt(st.wal.syncs, N, "group commit: %llu syncs for %d COMMITs",
		     (unsigned long long)st.wal.syncs, N);
	cr_assert_gt(st.wal.max_batch_txns, 1);
	cr_assert_eq(st.waiting, 0);
	cr_log_info("decision_log: %d COMMITs, %llu fdatasyncs, largest batch %llu", N,
		    (unsigned long long)st.wal.syncs, (unsigned long long)st.wal.max_batch_txns);
	dlog_close(l);
	rm_rf(dir);
}

/* ---- bounds ------------------------------------------------------------------ */

static void fill(char *s, char c, size_t n)
{
	memset(s, c, n);
	s[n] = 0;
}

WM_TEST(decision_log, txn_ids_hold_their_bounds_at_and_past_the_edge)
{
	char router[40], order[80], id[100], out[DLOG_TXN_ID_MAX + 1];
	/* router id: 16 bytes fit, 17 do not */
	fill(router, 'r', 16);
	cr_assert_eq(dlog_txn_format(router, "ord_1", out, sizeof(out)), 16 + 1 + 5);
	fill(router, 'r', 17);
	cr_assert_eq(dlog_txn_format(router, "ord_1", out, sizeof(out)), 0);
	cr_assert_eq(out[0], 0);
	/* the whole id: 64 bytes fit, 65 do not */
	fill(order, 'o', 64 - 3);
	cr_assert_eq(dlog_txn_format("r1", order, out, sizeof(out)), 64);
	cr_assert(dlog_txn_valid(out, 64));
	fill(order, 'o', 64 - 2);
	cr_assert_eq(dlog_txn_format("r1", order, out, sizeof(out)), 0);
	snprintf(id, sizeof(id), "r1:%s", order);
	cr_assert_not(dlog_txn_valid(id, strlen(id)));
	/* a buffer one byte short of the id and its NUL */
	cr_assert_eq(dlog_txn_format("r1", "ab", out, 5), 0);
	cr_assert_eq(dlog_txn_format("r1", "ab", out, 6), 5);
	cr_assert_str_eq(out, "r1:ab");
	/* charset and shape */
	cr_assert(dlog_txn_valid("r-1_A:ord_FR_0123-z", 19));
	const char *bad[] = {"r1", ":ord", "r1:", "r1:o:d", "r 1:ord", "r1:ord!", "r1:ord\n", "r1:ord/x", ""};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_not(dlog_txn_valid(bad[i], strlen(bad[i])), "%s must be refused", bad[i]);
	cr_assert_not(dlog_txn_valid("r1:o\0x", 6), "a NUL inside is refused");
	const char *r, *o;
	size_t rl, ol;
	cr_assert_eq(dlog_txn_parse("rt7:ord_DE_X", 12, &r, &rl, &o, &ol), 0);
	cr_assert_eq(rl, 3);
	cr_assert_eq(memcmp(r, "rt7", 3), 0);
	cr_assert_eq(ol, 8);
	cr_assert_eq(memcmp(o, "ord_DE_X", 8), 0);
	cr_assert_eq(dlog_txn_parse("rt7ord", 6, &r, &rl, &o, &ol), -1);
}

WM_TEST(decision_log, commit_refuses_what_breaks_a_bound_and_appends_nothing)
{
	char dir[64];
	make_tmp(dir);
	struct dlog *l = open_log(dir, WAL_MODE_FSYNC, 0, 0, 0);
	int calls = 0;
	uint8_t p[DLOG_MAX_PARTICIPANTS + 1];
	for (int i = 0; i <= DLOG_MAX_PARTICIPANTS; i++)
		p[i] = (uint8_t)(i + 47); /* 47 .. 63, then 64 below */
	cr_assert_eq(dlog_commit(l, "r1:p16", p, 16, count_only, &calls), 0, "16 participants, the last 62");
	cr_assert_eq(dlog_commit(l, "r1:p17", p, 17, count_only, &calls), DLOG_E_INVAL, "17 participants");
	cr_assert_eq(dlog_commit(l, "r1:p0", p, 0, count_only, &calls), DLOG_E_INVAL, "no participant");
	uint8_t s63[] = {63}, s64[] = {64}, twice[] = {3, 7, 3};
	cr_assert_eq(dlog_commit(l, "r1:s63", s63, 1, count_only, &calls), 0);
	cr_assert_eq(dlog_commit(l, "r1:s64", s64, 1, count_only, &calls), DLOG_E_INVAL);
	cr_assert_eq(dlog_commit(l, "r1:twice", twice, 3, count_only, &calls), DLOG_E_INVAL);
	char id[80];
	fill(id, 'x', 64);
	id[2] = ':';
	cr_assert_eq(dlog_commit(l, id, s63, 1, count_only, &calls), 0, "a 64-byte id");
	fill(id, 'x', 65);
	id[2] = ':';
	cr_assert_eq(dlog_commit(l, id, s63, 1, count_only, &calls), DLOG_E_INVAL, "a 65-byte id");
	cr_assert_eq(dlog_commit(l, "no-colon", s63, 1, count_only, &calls), DLOG_E_INVAL);
	wait_calls(l, &calls, 3);
	struct dlog_stats st;
	dlog_stats(l, &st);
	cr_assert_eq(st.wal.txns, 3, "refused COMMITs append nothing");
	dlog_close(l);
	l = open_log(dir, WAL_MODE_FSYNC, 0, 0, 0);
	struct collected c = {0};
	cr_assert_eq(dlog_undecided(l, collect, &c), 3);
	cr_assert_eq(c.nshards[0], 16);
	cr_assert_eq(c.shards[0][15], 62);
	dlog_close(l);
	rm_rf(dir);
}

WM_TEST(decision_log, unended_and_waiting_limits_hold_at_the_edge)
{
	char dir[64];
	make_tmp(dir);
	/* max_unended = 3 */
	struct dlog *l = open_log(dir, WAL_MODE_FSYNC, 0, 3, 0);
	int calls = 0;
	const uint8_t p[] = {1};
	cr_assert_eq(dlog_commit(l, "r1:a", p, 1, count_only, &calls), 0);
	cr_assert_eq(dlog_commit(l, "r1:b", p, 1, count_only, &calls), 0);
	cr_assert_eq(dlog_commit(l, "r1:c", p, 1, count_only, &calls), 0);
	cr_assert_eq(dlog_commit(l, "r1:d", p, 1, count_only, &calls), DLOG_E_FULL);
	wait_calls(l, &calls, 3);
	cr_assert_eq(dlog_end(l, "r1:b"), 0);
	cr_assert_eq(dlog_commit(l, "r1:d", p, 1, count_only, &calls), 0, "an END makes room");
	wait_calls(l, &calls, 4);
	dlog_close(l);
	rm_rf(dir);

	/* max_waiting = 3: callbacks not yet run by dlog_poll */
	make_tmp(dir);
	l = open_log(dir, WAL_MODE_FSYNC, 0, 0, 3);
	calls = 0;
	cr_assert_eq(dlog_commit(l, "r1:a", p, 1, count_only, &calls), 0);
	cr_assert_eq(dlog_commit(l, "r1:b", p, 1, count_only, &calls), 0);
	cr_assert_eq(dlog_commit(l, "r1:c", p, 1, count_only, &calls), 0);
	dlog_flush(l); /* durable, but nobody polled: still waiting */
	cr_assert_eq(dlog_commit(l, "r1:d", p, 1, count_only, &calls), DLOG_E_FULL);
	cr_assert_eq(dlog_lookup(l, "r1:d"), DLOG_UNKNOWN, "the refused COMMIT left nothing");
	cr_assert_eq(dlog_poll(l), 3);
	cr_assert_eq(dlog_commit(l, "r1:d", p, 1, count_only, &calls), 0);
	dlog_close(l); /* runs the last callback */
	cr_assert_eq(calls, 4);
	rm_rf(dir);
}

/* ---- corrupt records ------------------------------------------------------ */

WM_TEST(decision_log, the_record_decoder_refuses_every_broken_field)
{
	struct dlog_record r = {.type = DLOG_REC_COMMIT, .at_ms = 1234567890123ull, .n = 2, .shards = {9, 4}};
	strcpy(r.id, "r1:ord");
	r.id_len = 6;
	uint8_t b[DLOG_RECORD_MAX + 4];
	size_t n = dlog_record_encode(&r, b, sizeof(b));
	cr_assert_eq(n, 3 + 6 + 8 + 1 + 2);
	/* the layout of decision_log.h, byte by byte */
	const uint8_t want[] = {1, 1, 6, 'r', '1', ':', 'o', 'r', 'd', 0xcb, 0x04, 0xfb, 0x71, 0x1f, 0x01, 0, 0, 2, 9, 4};
	cr_assert_eq(memcmp(b, want, sizeof(want)), 0);
	struct dlog_record d;
	char why[160];
	cr_assert_eq(dlog_record_decode(b, n, &d, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(d.at_ms, r.at_ms);
	cr_assert_eq(d.n, 2);
	cr_assert_str_eq(d.id, "r1:ord");

	struct {
		size_t at;
		uint8_t val;
		const char *reason;
	} breaks[] = {
		{0, 2, "version"}, {1, 3, "type"}, {2, 200, "past"}, {2, 0, "invalid transaction id"},
		{4, '!', "invalid transaction id"}, {17, 17, "participants"}, {17, 3, "participants"},
		{18, 64, "shard id"}, {19, 9, "twice"},
	};
	for (size_t i = 0; i < sizeof(breaks) / sizeof(breaks[0]); i++) {
		uint8_t c[sizeof(b)];
		memcpy(c, b, n);
		c[breaks[i].at] = breaks[i].val;
		why[0] = 0;
		cr_assert_eq(dlog_record_decode(c, n, &d, why, sizeof(why)), -1, "break %zu accepted", i);
		cr_assert(strstr(why, breaks[i].reason), "break %zu: reason '%s'", i, why);
	}
	for (size_t cut = 0; cut < n; cut++)
		cr_assert_eq(dlog_record_decode(b, cut, &d, NULL, 0), -1, "%zu of %zu bytes accepted", cut, n);
	b[n] = 0;
	cr_assert_eq(dlog_record_decode(b, n + 1, &d, why, sizeof(why)), -1, "a trailing byte");
	/* END: exactly header + id */
	const uint8_t end[] = {1, 2, 4, 'r', ':', 'o', 'k'};
	cr_assert_eq(dlog_record_decode(end, sizeof(end), &d, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(d.type, DLOG_REC_END);
	const uint8_t end_trail[] = {1, 2, 3, 'r', ':', 'o', 'k'};
	cr_assert_eq(dlog_record_decode(end_trail, sizeof(end_trail), &d, why, sizeof(why)), -1);
	cr_assert(strstr(why, "trailing"), "%s", why);
}

WM_TEST(decision_log, a_corrupt_record_in_the_log_stops_the_open_with_its_lsn)
{
	char dir[64];
	make_tmp(dir);
	/* A valid WAL (frames checksum fine) whose second transaction is not a
	 * decision record: only the decoder can see it. */
	struct wal_config wc = {.dir = dir, .mode = WAL_MODE_FSYNC};
	char err[512] = "";
	struct wal *w = wal_open(&wc, 1, err, sizeof(err));
	cr_assert_not_null(w, "%s", err);
	struct dlog_record r = {.type = DLOG_REC_COMMIT, .n = 1, .shards = {2}, .id_len = 4};
	strcpy(r.id, "r:ok");
	uint8_t b[DLOG_RECORD_MAX];
	size_t n = dlog_record_encode(&r, b, sizeof(b));
	cr_assert_gt(n, 0);
	cr_assert_eq(wal_append(w, 1, b, n), 0);
	b[n - 1] = 99; /* shard id 99 */
	cr_assert_eq(wal_append(w, 2, b, n), 0);
	wal_close(w);

	struct dlog_config c = {.dir = dir, .mode = WAL_MODE_FSYNC};
	struct dlog *l = NULL;
	cr_assert_eq(dlog_open(&c, &l, err, sizeof(err)), -1);
	cr_assert_null(l);
	cr_assert(strstr(err, "LSN 2") && strstr(err, "shard id"), "the error names the LSN and the field: %s", err);

	/* A corrupt floor file is refused too, not read as 0. */
	rm_rf(dir);
	make_tmp(dir);
	char path[128];
	snprintf(path, sizeof(path), "%s/dlog.floor", dir);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("WMDLOGFLOOR 1 12x\n", f);
	fclose(f);
	cr_assert_eq(dlog_open(&c, &l, err, sizeof(err)), -1);
	cr_assert(strstr(err, "dlog.floor"), "%s", err);
	rm_rf(dir);
}

/* ---- pruning ---------------------------------------------------------------- */

/* Commit, wait, end one transaction "r1:e<i>" (i counts up). */
static void commit_end(struct dlog *l, int *i)
{
	char id[32];
	snprintf(id, sizeof(id), "r1:e%d", (*i)++);
	int calls = 0;
	const uint8_t p[] = {1, 2};
	cr_assert_eq(dlog_commit(l, id, p, 2, count_only, &calls), 0);
	dlog_flush(l);
	cr_assert_eq(dlog_poll(l), 1);
	cr_assert_eq(dlog_end(l, id), 0);
	dlog_flush(l);
}

WM_TEST(decision_log, pruning_never_passes_the_oldest_commit_without_end)
{
	char dir[64];
	make_tmp(dir);
	const uint64_t seg = 64 * 1024; /* the WAL's smallest segment */
	struct dlog *l = open_log(dir, WAL_MODE_WRITE, seg, 0, 0);
	int i = 0;
	while (count_segments(dir) < 2)
		commit_end(l, &i);
	/* segment 2 holds the undecided one */
	int calls = 0;
	const uint8_t p[] = {4};
	cr_assert_eq(dlog_commit(l, "r1:keep", p, 1, count_only, &calls), 0);
	wait_calls(l, &calls, 1);
	int after_keep = i;
	while (count_segments(dir) < 4)
		commit_end(l, &i);
	cr_assert_eq(dlog_prune(l), 1, "only the first segment holds nothing but ended transactions");
	cr_assert_eq(count_segments(dir), 3);
	cr_assert_eq(dlog_prune(l), 0, "nothing more may go");
	cr_assert_eq(dlog_lookup(l, "r1:e0"), DLOG_UNKNOWN, "pruned: forgotten");
	cr_assert_eq(dlog_lookup(l, "r1:keep"), DLOG_COMMITTED);
	char last[32];
	snprintf(last, sizeof(last), "r1:e%d", i - 1);
	cr_assert_eq(dlog_lookup(l, last), DLOG_ENDED);
	struct dlog_stats st;
	dlog_stats(l, &st);
	uint64_t floor = st.floor_lsn;
	cr_assert_gt(floor, 0);
	dlog_close(l);

	/* What was forgotten stays forgotten after a restart, and the
	 * undecided one is still there to re-drive. */
	l = open_log(dir, WAL_MODE_WRITE, seg, 0, 0);
	struct collected c = {0};
	cr_assert_eq(dlog_undecided(l, collect, &c), 1);
	cr_assert_str_eq(c.ids[0], "r1:keep");
	cr_assert_eq(dlog_lookup(l, "r1:e0"), DLOG_UNKNOWN);
	char first_after[32];
	snprintf(first_after, sizeof(first_after), "r1:e%d", after_keep);
	cr_assert_eq(dlog_lookup(l, first_after), DLOG_ENDED, "above the floor: still known");
	cr_assert_eq(dlog_lookup(l, last), DLOG_ENDED);
	dlog_stats(l, &st);
	cr_assert_eq(st.floor_lsn, floor);

	cr_assert_eq(dlog_end(l, "r1:keep"), 0);
	dlog_flush(l);
	cr_assert_geq(dlog_prune(l), 2, "with everything ended, every segment but the newest may go");
	cr_assert_eq(count_segments(dir), 1);
	cr_assert_eq(dlog_lookup(l, "r1:keep"), DLOG_UNKNOWN);
	dlog_close(l);
	l = open_log(dir, WAL_MODE_WRITE, seg, 0, 0);
	cr_assert_eq(dlog_undecided(l, collect, &c), 0);
	cr_assert_eq(dlog_lookup(l, last), DLOG_UNKNOWN);
	/* the log goes on after the floor */
	cr_assert_eq(dlog_commit(l, "r1:next", p, 1, count_only, &calls), 0);
	wait_calls(l, &calls, 2);
	dlog_close(l);
	l = open_log(dir, WAL_MODE_WRITE, seg, 0, 0);
	cr_assert_eq(dlog_lookup(l, "r1:next"), DLOG_COMMITTED);
	dlog_close(l);
	rm_rf(dir);
}

WM_TEST(decision_log, an_end_not_yet_durable_holds_the_prune_horizon)
{
	/* wal_slow_sync (wal/errinj.h, test builds): every fdatasync takes
	 * 400 ms more, so an END appended right before dlog_prune is certainly
	 * not durable yet.  The floor must then stay below its COMMIT: a crash
	 * could lose the END and leave the COMMIT pruned.  The variable is set
	 * before the WAL thread starts and cleared after it stopped. */
	char dir[64];
	make_tmp(dir);
	cr_assert_eq(setenv("WM_ERRINJ", "wal_slow_sync", 1), 0);
	struct dlog *l = open_log(dir, WAL_MODE_FSYNC, 0, 0, 0);
	int calls = 0;
	const uint8_t p[] = {1};
	cr_assert_eq(dlog_commit(l, "r1:x", p, 1, count_only, &calls), 0);
	wait_calls(l, &calls, 1);
	struct dlog_stats st;
	dlog_stats(l, &st);
	uint64_t commit_lsn = st.wal.durable_lsn;
	cr_assert_eq(dlog_end(l, "r1:x"), 0);
	cr_assert_eq(dlog_prune(l), 0);
	dlog_stats(l, &st);
	cr_assert_lt(st.wal.durable_lsn, st.wal.appended_lsn, "the END is still in flight (slow sync)");
	cr_assert_lt(st.floor_lsn, commit_lsn, "END not durable: floor %llu must stay below COMMIT %llu",
		     (unsigned long long)st.floor_lsn, (unsigned long long)commit_lsn);
	cr_assert_eq(dlog_lookup(l, "r1:x"), DLOG_ENDED, "still known");
	dlog_flush(l);
	cr_assert_geq(dlog_prune(l), 0);
	dlog_stats(l, &st);
	cr_assert_geq(st.floor_lsn, commit_lsn, "once the END is durable the COMMIT may be forgotten");
	cr_assert_eq(dlog_lookup(l, "r1:x"), DLOG_UNKNOWN);
	dlog_close(l);
	unsetenv("WM_ERRINJ");
	rm_rf(dir);
}

WM_TEST(decision_log, a_full_disk_refuses_a_commit_and_leaves_nothing, .timeout = 60)
{
	/* wal_spare_enospc (wal/errinj.h): the WAL cannot make its next
	 * segment, as on a full disk, so once the current 64 KiB segment is
	 * full it refuses appends (WAL_E_NOSPACE) before queueing them.  A
	 * refused COMMIT must leave no trace: no callback, not in memory, not
	 * on disk; a refused END leaves the transaction to re-drive. */
	char dir[64];
	make_tmp(dir);
	cr_assert_eq(setenv("WM_ERRINJ", "wal_spare_enospc", 1), 0);
	struct dlog *l = open_log(dir, WAL_MODE_WRITE, 64 * 1024, 0, 0);
	struct dlog_stats st;
	for (int i = 0; i < 500; i++) {
		dlog_stats(l, &st);
		if (st.wal.space_low)
			break;
		usleep(10000);
	}
	cr_assert(st.wal.space_low, "the failed spare makes space low");
	int i = 0, rc = 0, calls = 0;
	const uint8_t p[] = {1, 2};
	char id[32];
	for (; i < 100000; i++) {
		snprintf(id, sizeof(id), "r1:f%d", i);
		rc = dlog_commit(l, id, p, 2, count_only, &calls);
		if (rc)
			break;
		dlog_flush(l);
	}
	cr_assert_eq(rc, DLOG_E_NOSPACE, "the WAL refused at some point (rc %d after %d commits)", rc, i);
	cr_assert_gt(i, 10);
	cr_assert_eq(dlog_lookup(l, id), DLOG_UNKNOWN, "the refused COMMIT is not in memory");
	dlog_stats(l, &st);
	cr_assert_eq(st.unended, (uint64_t)i);
	cr_assert_eq(st.waiting, (uint64_t)i);
	cr_assert_eq(dlog_poll(l), (size_t)i, "one callback per accepted COMMIT, none for the refused one");
	cr_assert_eq(dlog_end(l, "r1:f0"), DLOG_E_NOSPACE);
	cr_assert_eq(dlog_lookup(l, "r1:f0"), DLOG_COMMITTED, "a refused END leaves it to re-drive");

	/* space returns: the same id can be committed, once */
	unsetenv("WM_ERRINJ");
	int ok = -1;
	for (int k = 0; k < 500 && ok; k++) {
		ok = dlog_commit(l, id, p, 2, count_only, &calls);
		if (ok)
			usleep(10000);
	}
	cr_assert_eq(ok, 0, "commits are accepted again once space returned");
	dlog_close(l);
	l = open_log(dir, WAL_MODE_WRITE, 64 * 1024, 0, 0);
	cr_assert_eq(dlog_undecided(l, count_visit, NULL), (size_t)i + 1,
		     "every accepted COMMIT and the retried one, nothing else");
	dlog_close(l);
	rm_rf(dir);
}

/* A callback that ends its own transaction and commits the next one, as a
 * coordinator does once the participants acknowledged (here at once). */
struct chain {
	struct dlog *l;
	int calls, left;
};
static void chain_cb(void *arg, const char *txn)
{
	struct chain *c = arg;
	c->calls++;
	cr_assert_eq(dlog_end(c->l, txn), 0, "END from inside the callback");
	if (c->left-- > 0) {
		char id[32];
		const uint8_t p[] = {5};
		snprintf(id, sizeof(id), "r1:c%d", c->left);
		cr_assert_eq(dlog_commit(c->l, id, p, 1, chain_cb, c), 0, "COMMIT from inside the callback");
	}
	cr_assert_geq(dlog_prune(c->l), 0);
}

WM_TEST(decision_log, a_callback_may_end_prune_and_commit_again)
{
	char dir[64];
	make_tmp(dir);
	struct dlog *l = open_log(dir, WAL_MODE_FSYNC, 0, 0, 0);
	struct chain c = {.l = l, .left = 20};
	const uint8_t p[] = {5};
	cr_assert_eq(dlog_commit(l, "r1:start", p, 1, chain_cb, &c), 0);
	wait_calls(l, &c.calls, 21);
	struct dlog_stats st;
	dlog_stats(l, &st);
	cr_assert_eq(st.unended, 0);
	cr_assert_eq(st.waiting, 0);
	dlog_close(l);
	l = open_log(dir, WAL_MODE_FSYNC, 0, 0, 0);
	cr_assert_eq(dlog_undecided(l, count_visit, NULL), 0);
	dlog_close(l);
	rm_rf(dir);
}
