/*
 * test_recovery_units.c -- shard recovery (engine/storage/shard.c
 * shard_load_with) through an in-process shard: the snapshot chosen, the
 * tables sized from it, the WAL tail on top.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "engine/storage/index.h"
#include "engine/storage/record.h"
#include "engine/storage/shard.h"
#include "net/buf.h"
#include "snapshot/snapshot.h"
#include "wal/wal.h"
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

/* ---- the snapshot load's two threads (engine/storage/recovery.c) ------------ */

/* More rows than the builder may queue ahead of the loop (LOAD_BATCH 512 x
 * (LOAD_RING 8 + a batch in each thread's hands)), so both sides wait on
 * each other during the load. */
#define PIPE_ROWS 6000

/* Every record of a snapshot file, in order (snap_load's fn). */
struct snap_recs {
	size_t n;
	void *rec[PIPE_ROWS + 64];
	size_t len[PIPE_ROWS + 64];
};

static int collect_rec(void *ctx, const void *rec, size_t len)
{
	struct snap_recs *s = ctx;
	cr_assert_lt(s->n, PIPE_ROWS + 64);
	s->rec[s->n] = malloc(len ? len : 1);
	cr_assert_not_null(s->rec[s->n]);
	memcpy(s->rec[s->n], rec, len);
	s->len[s->n++] = len;
	return 0;
}

static void recs_free(struct snap_recs *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->rec[i]);
	free(s);
}

static void snap_file(const struct fixture *f, uint64_t lsn, char *out, size_t n)
{
	snprintf(out, n, "%s/snap/%020llu.snap", f->cfg.data_dir, (unsigned long long)lsn);
}

/* Replace the snapshot at lsn with the records of s, and `bad` (a record
 * of table `table`, id "bad-row", document `doc`) put in at index `at`. */
static void write_with_bad(const struct fixture *f, uint64_t lsn, const struct snap_recs *s, size_t at,
			   uint8_t table, const char *doc)
{
	char dir[600], err[256], p[700];
	snprintf(dir, sizeof(dir), "%s/snap", f->cfg.data_dir);
	snap_file(f, lsn, p, sizeof(p));
	cr_assert_eq(unlink(p), 0, "%s", p);
	struct snap_writer *w = snap_writer_open(dir, lsn, err, sizeof(err));
	cr_assert_not_null(w, "%s", err);
	struct buf bad;
	buf_init(&bad, strlen(doc) + 4096);
	cr_assert_eq(rec_encode(&bad, REC_PUT, table, 1, "bad-row", 7, doc, strlen(doc)), 0);
	for (size_t i = 0; i <= s->n; i++) {
		if (i == at)
			cr_assert_eq(snap_writer_add(w, bad.data, bad.len), 0);
		if (i < s->n)
			cr_assert_eq(snap_writer_add(w, s->rec[i], s->len[i]), 0);
	}
	cr_assert_eq(snap_writer_commit(w, err, sizeof(err)), 0, "%s", err);
	buf_free(&bad);
}

WM_TEST(recovery, rows_built_on_the_second_thread_are_the_rows_written_in_their_order)
{
	struct fixture *f = fixture_new("recovery");
	char err[256];
	commit_events(f, PIPE_ROWS, "t.pipe");
	cr_assert_eq(shard_snapshot_write(&f->sh, err, sizeof(err)), 0, "%s", err);
	/* what the shard held: every event's id and document, in id order */
	struct table *t = &f->sh.tables[REC_T_EVENT];
	size_t n = table_count(t);
	cr_assert_geq(n, PIPE_ROWS);
	char **docs = calloc(n, sizeof(*docs)), **ids = calloc(n, sizeof(*ids));
	cr_assert(docs && ids);
	struct oidx_iter it;
	size_t k = 0;
	for (int ok = oidx_seek_ge(&t->by_order, NULL, 0, &it); ok; ok = oidx_next(&it), k++) {
		const struct row *r = oidx_iter_val(&it);
		ids[k] = strdup(r->id);
		docs[k] = strdup(r->doc);
	}
	cr_assert_eq(k, n);
	shard_close(&f->sh);
	/* a restart from the snapshot alone (no WAL past it) */
	fx_open(f);
	t = &f->sh.tables[REC_T_EVENT];
	cr_assert_eq(table_count(t), n);
	k = 0;
	for (int ok = oidx_seek_ge(&t->by_order, NULL, 0, &it); ok; ok = oidx_next(&it), k++) {
		const struct row *r = oidx_iter_val(&it);
		cr_assert_str_eq(r->id, ids[k]);
		cr_assert_str_eq(r->doc, docs[k], "row %s", ids[k]);
		cr_assert_eq(table_get(t, ids[k], strlen(ids[k])), r, "the id index finds row %zu", k);
	}
	cr_assert_eq(k, n);
	/* the id clock saw every id the builder built: a new event sorts last */
	commit_events(f, 1, "t.after");
	cr_assert_eq(table_count(t), n + 1);
	cr_assert(oidx_seek_le(&t->by_order, NULL, 0, &it));
	const struct row *last = oidx_iter_val(&it);
	cr_assert_gt(strcmp(last->id, ids[n - 1]), 0, "new id %s after %s", last->id, ids[n - 1]);
	cr_assert_not_null(strstr(last->doc, "t.after"), "the newest row is the new event: %s", last->doc);
	for (size_t i = 0; i < n; i++) {
		free(ids[i]);
		free(docs[i]);
	}
	free(ids);
	free(docs);
	fixture_free(f);
}

WM_TEST(recovery, a_refused_record_on_either_thread_stops_the_load_and_frees_what_was_built)
{
	struct fixture *f = fixture_new("recovery");
	char err[256], out[16384], p[700];
	commit_events(f, PIPE_ROWS, "t.pipe");
	cr_assert_eq(shard_snapshot_write(&f->sh, err, sizeof(err)), 0, "%s", err);
	uint64_t lsn = f->sh.lsn;
	size_t want = events(f);
	cr_assert(f->sh.tables[REC_T_PARTNER].ops && !f->sh.tables[REC_T_PARTNER].ops->decode_pure,
		  "the partner table must stay a loop-decoded table for this test");
	cr_assert(f->sh.tables[REC_T_EVENT].ops->decode_pure);
	shard_close(&f->sh);
	snap_file(f, lsn, p, sizeof(p));
	struct snap_recs *good = calloc(1, sizeof(*good));
	cr_assert_not_null(good);
	cr_assert_eq(snap_load(p, collect_rec, good, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_geq(good->n, PIPE_ROWS);
	/* an event is built on the builder thread, a partner (no decode_pure)
	 * decoded on the loop; each refused well past the first batches, and
	 * (the event) also as the very first record */
	/* and a record past a batch's quarter slab (LOAD_BIG, 256 KiB), handed
	 * over as a malloc'd copy and decoded on the loop, for either kind */
	enum { BIG_STRINGS = 5, BIG_STRING = 60 * 1024 }; /* strings stay under the parser's 64 KiB */
	char *big = malloc(BIG_STRINGS * (BIG_STRING + 3) + 32);
	cr_assert_not_null(big);
	size_t bl = (size_t)sprintf(big, "{\"not\":[");
	for (int i = 0; i < BIG_STRINGS; i++) {
		bl += (size_t)sprintf(big + bl, "%s\"", i ? "," : "");
		memset(big + bl, 'a', BIG_STRING);
		bl += BIG_STRING;
		big[bl++] = '"';
	}
	strcpy(big + bl, "]}");
	cr_assert_gt(strlen(big), 256 * 1024);
	const char *small = "{\"not\":\"a row\"}";
	const struct {
		uint8_t table;
		size_t at;
		const char *doc;
	} cases[] = {{REC_T_EVENT, 3000, small}, {REC_T_PARTNER, 3000, small}, {REC_T_EVENT, 0, small},
		     {REC_T_PARTNER, PIPE_ROWS - 1, small}, {REC_T_EVENT, 2000, big}, {REC_T_PARTNER, 2000, big}};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		write_with_bad(f, lsn, good, cases[c].at, cases[c].table, cases[c].doc);
		struct stderr_capture cap;
		stderr_capture_begin(&cap);
		int rc = shard_open(&f->sh, &f->cfg, err, sizeof(err));
		stderr_capture_end(&cap, out, sizeof(out));
		cr_assert_eq(rc, -1, "case %zu: a refused record must fail the start", c);
		cr_assert_not_null(strstr(err, "failed to load"), "case %zu: %s", c, err);
		cr_assert_not_null(strstr(out, "snapshot record rejected"), "case %zu: %s", c, out);
		cr_assert_not_null(strstr(out, "bad-row"), "case %zu names the record: %s", c, out);
		shard_close(&f->sh);
	}
	/* the good file again: the whole state, as before */
	char dir[600];
	snprintf(dir, sizeof(dir), "%s/snap", f->cfg.data_dir);
	cr_assert_eq(unlink(p), 0);
	struct snap_writer *w = snap_writer_open(dir, lsn, err, sizeof(err));
	cr_assert_not_null(w, "%s", err);
	for (size_t i = 0; i < good->n; i++)
		cr_assert_eq(snap_writer_add(w, good->rec[i], good->len[i]), 0);
	cr_assert_eq(snap_writer_commit(w, err, sizeof(err)), 0, "%s", err);
	fx_open(f);
	cr_assert_eq(events(f), want);
	free(big);
	recs_free(good);
	fixture_free(f);
}

/* ---- the WAL tail's two threads (engine/storage/recovery.c) ------------------- */

/* n transactions, each an event (a decode_pure table: built off the loop)
 * and a webhook cursor row (decoded on the loop), the cursors replacing
 * each other among 7 ids. */
static void commit_mixed(struct fixture *f, int n, int from)
{
	for (int i = from; i < from + n; i++) {
		char payload[64], id[16], doc[64];
		int len = snprintf(payload, sizeof(payload), "{\"i\":%d}", i);
		int il = snprintf(id, sizeof(id), "c%d", i % 7);
		int dl = snprintf(doc, sizeof(doc), "{\"after\":\"evt_%d\"}", i);
		txn_begin(&f->sh);
		cr_assert_eq(txn_event(&f->sh, "t.wal", NULL, payload, (size_t)len), 0);
		cr_assert_eq(txn_put(&f->sh, REC_T_WH_CURSOR, id, (size_t)il, doc, (size_t)dl), 0);
		cr_assert_neq(txn_commit(&f->sh), 0);
	}
}

/* Every row of table tb, "id\tdoc\n" in id order, into a malloc'd string. */
static char *table_dump(struct fixture *f, int tb)
{
	struct buf b, scratch;
	buf_init(&b, 1 << 26);
	buf_init(&scratch, 0);
	struct oidx_iter it;
	for (int ok = oidx_seek_ge(&f->sh.tables[tb].by_order, NULL, 0, &it); ok; ok = oidx_next(&it)) {
		const struct row *r = oidx_iter_val(&it);
		size_t dl;
		const char *doc = row_doc(r, &scratch, &dl); /* stored or rendered (table.h) */
		cr_assert_not_null(doc);
		cr_assert_eq(buf_append(&b, r->id, r->id_len), 0);
		cr_assert_eq(buf_append(&b, "\t", 1), 0);
		cr_assert_eq(buf_append(&b, doc, dl), 0);
		cr_assert_eq(buf_append(&b, "\n", 1), 0);
	}
	char *s = strndup(b.data ? b.data : "", b.len);
	buf_free(&b);
	buf_free(&scratch);
	return s;
}

WM_TEST(recovery, a_wal_tail_replayed_on_two_threads_is_the_state_that_was_committed)
{
	struct fixture *f = fixture_new("recovery");
	char err[256];
	commit_mixed(f, 100, 0);
	cr_assert_eq(shard_snapshot_write(&f->sh, err, sizeof(err)), 0, "%s", err);
	commit_mixed(f, PIPE_ROWS, 100); /* the tail: more than the ring holds */
	uint64_t lsn = f->sh.lsn;
	char *events_before = table_dump(f, REC_T_EVENT), *cursors_before = table_dump(f, REC_T_WH_CURSOR);
	shard_close(&f->sh);
	char out[16384];
	open_capture(f, out, sizeof(out));
	cr_assert_eq(f->sh.lsn, lsn);
	/* each half's log line says how long it took and which side waited */
	cr_assert_not_null(strstr(out, "msg=\"snapshot loaded\""), "%s", out);
	cr_assert_not_null(strstr(out, "builder_wait_ms="), "%s", out);
	cr_assert_not_null(strstr(out, "wal_txns_replayed=6000"), "%s", out);
	cr_assert_not_null(strstr(out, "wal_ms="), "%s", out);
	cr_assert_leq(f->sh.wal_time.loop_wait_ms + f->sh.wal_time.builder_wait_ms, 2 * f->sh.wal_time.ms + 1,
		      "a side cannot wait longer than the replay took");
	char *events_after = table_dump(f, REC_T_EVENT), *cursors_after = table_dump(f, REC_T_WH_CURSOR);
	cr_assert_eq(strcmp(events_before, events_after), 0, "the events replayed differ");
	cr_assert_eq(strcmp(cursors_before, cursors_after), 0, "the cursors replayed differ:\n%s\n--\n%s",
		     cursors_before, cursors_after);
	cr_assert_not_null(strstr(cursors_after, "evt_6099"), "the last cursor write won: %s", cursors_after);
	/* the id clock saw every replayed event, the WAL continues */
	commit_mixed(f, 1, PIPE_ROWS + 100);
	cr_assert_eq(f->sh.lsn, lsn + 1);
	free(events_before);
	free(cursors_before);
	free(events_after);
	free(cursors_after);
	fixture_free(f);
}

WM_TEST(recovery, a_refused_wal_transaction_on_either_thread_refuses_the_start_where_it_is)
{
	/* the refused transaction early (the builder then runs far ahead and
	 * must be stopped) or last; in a table built off the loop (an event)
	 * or decoded on it (a webhook cursor) */
	const struct {
		uint8_t table;
		int before, after;
	} cases[] = {{REC_T_EVENT, 50, PIPE_ROWS}, {REC_T_WH_CURSOR, 50, PIPE_ROWS}, {REC_T_EVENT, 50, 0},
		     {REC_T_WH_CURSOR, 50, 0}};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct fixture *f = fixture_new("recovery");
		char err[256], out[16384];
		commit_mixed(f, cases[c].before, 0);
		/* a transaction the engine would never write, straight into the log */
		struct buf bad;
		buf_init(&bad, 4096);
		const char *doc = "{\"not\":\"a row\"}";
		cr_assert_eq(rec_encode(&bad, REC_PUT, cases[c].table, 1, "bad-row", 7, doc, strlen(doc)), 0);
		uint64_t bad_lsn = f->sh.lsn + 1;
		cr_assert_eq(wal_append(f->sh.wal, bad_lsn, bad.data, bad.len), 0);
		buf_free(&bad);
		f->sh.lsn = f->sh.state_lsn = bad_lsn; /* the log holds it; memory never did */
		commit_mixed(f, cases[c].after, cases[c].before);
		wal_flush(f->sh.wal);
		shard_close(&f->sh);
		struct stderr_capture cap;
		stderr_capture_begin(&cap);
		int rc = shard_open(&f->sh, &f->cfg, err, sizeof(err));
		stderr_capture_end(&cap, out, sizeof(out));
		cr_assert_eq(rc, -1, "case %zu: the start must be refused", c);
		char want[64];
		snprintf(want, sizeof(want), "WAL transaction %llu rejected", (unsigned long long)bad_lsn);
		cr_assert_not_null(strstr(err, want), "case %zu: %s", c, err);
		cr_assert_not_null(strstr(err, "bad-row"), "case %zu names the record: %s", c, err);
		snprintf(want, sizeof(want), "lsn=%llu", (unsigned long long)bad_lsn);
		cr_assert_not_null(strstr(out, "WAL transaction rejected during replay"), "case %zu: %s", c, out);
		cr_assert_not_null(strstr(out, want), "case %zu: %s", c, out);
		shard_close(&f->sh);
		/* an empty shard again, for fixture_free */
		char path[700];
		snprintf(path, sizeof(path), "%s/wal", f->cfg.data_dir);
		rm_rf(path);
		snprintf(path, sizeof(path), "%s/snap", f->cfg.data_dir);
		rm_rf(path);
		fx_open(f);
		fixture_free(f);
	}
}

/* ---- the census hint ---- */

/* The census hint's layout, as engine/storage/recovery.c writes it (and
 * this test writes it independently): "WMCENS01", u32 tables, that many
 * u64 rows, u64 XXH3-64 of the bytes before it. */
#define HINT_BYTES (8u + 4u + 8u * REC_T_COUNT_ + 8u)

struct hint_got {
	int n;
	size_t len;
	uint8_t b[SNAP_MAX_HINT];
};

static void hint_copy(void *ctx, const void *hint, size_t len, uint64_t records)
{
	(void)records;
	struct hint_got *g = ctx;
	g->n++;
	cr_assert_leq(len, SNAP_MAX_HINT);
	memcpy(g->b, hint, len);
	g->len = len;
}

static void hint_seal(uint8_t *h) { wr_u64(h + HINT_BYTES - 8, XXH3_64bits(h, HINT_BYTES - 8)); }

/* The snapshot at lsn rewritten from s with the hint h (hl bytes; none
 * when h is NULL), and the shard restarted from it. */
static void restart_hinted(struct fixture *f, uint64_t lsn, const struct snap_recs *s, const uint8_t *h, size_t hl)
{
	char dir[600], err[256], p[700];
	shard_close(&f->sh);
	snprintf(dir, sizeof(dir), "%s/snap", f->cfg.data_dir);
	snap_file(f, lsn, p, sizeof(p));
	cr_assert_eq(unlink(p), 0, "%s", p);
	struct snap_writer *w = snap_writer_open(dir, lsn, err, sizeof(err));
	cr_assert_not_null(w, "%s", err);
	if (h)
		cr_assert_eq(snap_writer_hint(w, h, hl), 0);
	for (size_t i = 0; i < s->n; i++)
		cr_assert_eq(snap_writer_add(w, s->rec[i], s->len[i]), 0);
	cr_assert_eq(snap_writer_commit(w, err, sizeof(err)), 0, "%s", err);
	fx_open(f);
}

WM_TEST(recovery, the_census_hint_sizes_the_tables_early_and_a_wrong_one_changes_nothing)
{
	struct fixture *f = fixture_new("recovery");
	char err[256], p[700];
	commit_events(f, PIPE_ROWS, "t.hint");
	cr_assert_eq(shard_snapshot_write(&f->sh, err, sizeof(err)), 0, "%s", err);
	uint64_t lsn = f->sh.lsn;
	size_t n_events = events(f), total = 0;
	for (int i = 0; i < REC_T_COUNT_; i++)
		total += f->sh.tables[i].ops ? table_count(&f->sh.tables[i]) : 0;
	char *before = table_dump(f, REC_T_EVENT);
	/* the writer's hint: every table's rows, adding up to the records */
	snap_file(f, lsn, p, sizeof(p));
	struct hint_got *g = calloc(1, sizeof(*g));
	struct snap_recs *s = calloc(1, sizeof(*s));
	cr_assert(g && s);
	struct snap_load_hooks hk = {.hint = hint_copy, .ctx = g};
	struct snap_info si;
	cr_assert_eq(snap_load_hooked(p, &hk, &si, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(g->n, 1, "a shard's snapshot has a hint");
	cr_assert_eq(g->len, HINT_BYTES);
	cr_assert_eq(memcmp(g->b, "WMCENS01", 8), 0);
	cr_assert_eq(rd_u32(g->b + 8), REC_T_COUNT_);
	for (int i = 0; i < REC_T_COUNT_; i++)
		cr_assert_eq(rd_u64(g->b + 12 + 8 * i), f->sh.tables[i].ops ? table_count(&f->sh.tables[i]) : 0,
			     "table %d", i);
	cr_assert_eq(rd_u64(g->b + HINT_BYTES - 8), XXH3_64bits(g->b, HINT_BYTES - 8));
	cr_assert_eq(si.records, total);
	cr_assert_eq(snap_load(p, collect_rec, s, NULL, err, sizeof(err)), 0, "%s", err);
	uint8_t good[HINT_BYTES], h[HINT_BYTES];
	memcpy(good, g->b, HINT_BYTES);

	/* a restart from it sizes the tables from the hint */
	shard_close(&f->sh);
	fx_open(f);
	cr_assert_eq(f->sh.snap_time.census_hint, 1, "sized from the hint");
	char *after = table_dump(f, REC_T_EVENT);
	cr_assert_str_eq(after, before);
	free(after);

	/* hints that do not check out are ignored; one that checks out but
	 * is wrong (every row said to be a partner) sizes the wrong tables,
	 * and the verifying pass's census sizes the right ones: the same rows
	 * either way, every one in the events' id index */
	struct {
		const char *what;
		int hinted;
	} cases[] = {
		{"a count changed under its checksum", 0},
		{"one row fewer than the trailer's count", 0},
		{"one row more than the trailer's count", 0},
		{"another magic", 0},
		{"one byte short", 0},
		{"no hint at all", 0},
		{"every row a partner", 1},
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		memcpy(h, good, HINT_BYTES);
		size_t hl = HINT_BYTES;
		const uint8_t *hp = h;
		switch (c) {
		case 0: wr_u64(h + 12 + 8 * REC_T_EVENT, n_events - 1); break;
		case 1: wr_u64(h + 12 + 8 * REC_T_EVENT, n_events - 1), hint_seal(h); break;
		case 2: wr_u64(h + 12 + 8 * REC_T_EVENT, n_events + 1), hint_seal(h); break;
		case 3: h[7] = '2', hint_seal(h); break;
		case 4: hl--; break;
		case 5: hp = NULL; break;
		default:
			for (int i = 0; i < REC_T_COUNT_; i++)
				wr_u64(h + 12 + 8 * i, i == REC_T_PARTNER ? total : 0);
			hint_seal(h);
		}
		restart_hinted(f, lsn, s, hp, hl);
		cr_assert_eq(f->sh.snap_time.census_hint, cases[c].hinted, "%s", cases[c].what);
		after = table_dump(f, REC_T_EVENT);
		cr_assert_str_eq(after, before, "%s", cases[c].what);
		free(after);
		const struct hidx *ids = &f->sh.tables[REC_T_EVENT].by_id;
		cr_assert_eq(hidx_count(ids), n_events, "%s", cases[c].what);
		for (size_t i = 0; i < s->n; i++) {
			size_t off = 0;
			struct rec_view rv;
			cr_assert_eq(rec_decode(s->rec[i], s->len[i], &off, &rv), 1);
			if (rv.table == REC_T_EVENT)
				cr_assert_not_null(hidx_get(ids, rv.key, rv.key_len), "%s: row %zu", cases[c].what, i);
		}
	}
	free(before);
	free(g);
	recs_free(s);
	fixture_free(f);
}
