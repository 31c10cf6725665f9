/*
 * test_held_txn.c -- held transactions (engine/storage/shard.h): every
 * commit of a request joins one image at one LSN and is logged as ONE WAL
 * transaction; an aborted transaction inside the request drops only its
 * own records; a join that would pass TXN_MAX_BYTES logs the held image
 * first and continues at the next LSN; a transaction too large on its own
 * is refused and the held one kept.  Each case is checked live, in the
 * WAL's own count of transactions, and again after recovery replays the
 * log.  Events (txn_event) are the rows: their table decodes any payload.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/log.h"
#include "engine/storage/events.h"
#include "engine/storage/record.h"
#include "engine/storage/shard.h"
#include "tests/shard_fixture.h"
#include "tests/wm_test.h"

/* Transactions the WAL has written so far (after waiting for it). */
static uint64_t wal_txns(struct fixture *f)
{
	wal_flush(f->sh.wal);
	struct wal_stats st;
	wal_stats(f->sh.wal, &st);
	return st.txns;
}

/* The one event of this type: its row, or NULL (fails on two). */
static const struct row *event_of(struct fixture *f, const char *type)
{
	const struct row *found = NULL;
	struct oidx_iter it;
	for (int ok = oidx_seek_ge(&f->sh.tables[REC_T_EVENT].by_order, NULL, 0, &it); ok; ok = oidx_next(&it)) {
		const struct row *r = oidx_iter_val(&it);
		if (!strcmp(event_type(r), type)) {
			cr_assert_null(found, "two events of type %s", type);
			found = r;
		}
	}
	return found;
}

/* Begin, add one event of this type with payload, commit: the LSN or 0. */
static uint64_t commit_event(struct fixture *f, const char *type, const char *payload)
{
	txn_begin(&f->sh);
	cr_assert_eq(txn_event(&f->sh, type, NULL, payload, strlen(payload)), 0);
	return txn_commit(&f->sh);
}

/* A JSON array of n strings of 60 bytes each (~62 n bytes); caller frees. */
static char *big_payload(unsigned n)
{
	size_t cap = (size_t)n * 64 + 8, len = 0;
	char *p = malloc(cap);
	cr_assert_not_null(p);
	p[len++] = '[';
	for (unsigned i = 0; i < n; i++)
		len += (size_t)snprintf(p + len, cap - len, "%s\"%060u\"", i ? "," : "", i);
	p[len++] = ']';
	p[len] = 0;
	return p;
}

WM_TEST(held_txn, a_request_is_one_wal_transaction_at_one_lsn)
{
	struct fixture *f = fixture_new("held");
	uint64_t before = wal_txns(f), lsn0 = f->sh.lsn;
	txn_hold(&f->sh);
	uint64_t a = commit_event(f, "t.a", "{}");
	cr_assert_eq(a, lsn0 + 1);
	cr_assert_eq(commit_event(f, "t.b", "{\"n\":1}"), a, "a second commit joins the first's LSN");
	/* an aborted transaction inside the request drops only its records */
	txn_begin(&f->sh);
	cr_assert_eq(txn_event(&f->sh, "t.c", NULL, "{}", 2), 0);
	txn_abort(&f->sh);
	cr_assert_eq(f->sh.txn_open, 2, "the held image is kept");
	/* an empty commit is refused and changes nothing */
	txn_begin(&f->sh);
	cr_assert_eq(txn_commit(&f->sh), 0);
	cr_assert_eq(commit_event(f, "t.d", "[1,2]"), a);
	cr_assert_eq(wal_txns(f), before, "nothing is logged before the release");
	/* records added after the last commit (the stored response) go too */
	const char *resp = "{\"id\":\"evt_x\",\"type\":\"t.e\",\"scope\":{\"entity_id\":null},\"payload\":{}}";
	cr_assert_eq(txn_put(&f->sh, REC_T_EVENT, "evt_x", 5, resp, strlen(resp)), 0);
	cr_assert_eq(txn_release(&f->sh), a);
	cr_assert_eq(wal_txns(f), before + 1, "one WAL transaction for four commits");
	cr_assert_eq(f->sh.lsn, a);
	const char *kept[] = {"t.a", "t.b", "t.d", "t.e"};
	for (unsigned i = 0; i < 4; i++) {
		const struct row *r = event_of(f, kept[i]);
		cr_assert_not_null(r, "%s applied", kept[i]);
		cr_assert_eq(r->lsn, a, "%s at the request's LSN", kept[i]);
	}
	cr_assert_null(event_of(f, "t.c"));
	/* recovery replays the one transaction to the same rows */
	shard_close(&f->sh);
	fx_open(f);
	cr_assert_eq(f->sh.lsn, a);
	for (unsigned i = 0; i < 4; i++)
		cr_assert_not_null(event_of(f, kept[i]), "%s after replay", kept[i]);
	cr_assert_null(event_of(f, "t.c"));
	/* outside a held request every commit is its own transaction */
	before = wal_txns(f);
	cr_assert_eq(commit_event(f, "t.f", "{}"), a + 1);
	cr_assert_eq(commit_event(f, "t.g", "{}"), a + 2);
	cr_assert_eq(wal_txns(f), before + 2);
	fixture_free(f);
}

WM_TEST(held_txn, a_join_past_the_bound_logs_the_held_image_first)
{
	struct fixture *f = fixture_new("held");
	char *big = big_payload(5000); /* ~310 KB: two do not fit TXN_MAX_BYTES */
	cr_assert_gt(2 * strlen(big), TXN_MAX_BYTES);
	cr_assert_lt(strlen(big) + 1024, TXN_MAX_BYTES);
	uint64_t before = wal_txns(f);
	txn_hold(&f->sh);
	uint64_t a = commit_event(f, "t.a", big);
	cr_assert_gt(a, 0);
	uint64_t b = commit_event(f, "t.b", big);
	cr_assert_eq(b, a + 1, "past the bound: the next LSN");
	cr_assert_eq(wal_txns(f), before + 1, "the first image was logged on its own");
	cr_assert_eq(commit_event(f, "t.c", "{}"), b, "a small commit joins the new held image");
	cr_assert_eq(txn_release(&f->sh), b);
	cr_assert_eq(wal_txns(f), before + 2);
	cr_assert_eq(event_of(f, "t.a")->lsn, a);
	cr_assert_eq(event_of(f, "t.b")->lsn, b);
	cr_assert_eq(event_of(f, "t.c")->lsn, b);
	shard_close(&f->sh);
	fx_open(f);
	cr_assert_eq(f->sh.lsn, b);
	cr_assert_not_null(event_of(f, "t.a"));
	cr_assert_not_null(event_of(f, "t.b"));
	cr_assert_not_null(event_of(f, "t.c"));
	free(big);
	fixture_free(f);
}

WM_TEST(held_txn, a_transaction_too_large_alone_is_refused_and_the_held_one_kept)
{
	struct fixture *f = fixture_new("held");
	char *big = big_payload(5000);
	uint64_t before = wal_txns(f);
	txn_hold(&f->sh);
	uint64_t a = commit_event(f, "t.a", "{}");
	/* two big events in one transaction: over TXN_MAX_BYTES by itself */
	txn_begin(&f->sh);
	cr_assert_eq(txn_event(&f->sh, "t.b", NULL, big, strlen(big)), 0);
	cr_assert_eq(txn_event(&f->sh, "t.c", NULL, big, strlen(big)), 0);
	cr_assert_eq(txn_commit(&f->sh), 0, "refused");
	cr_assert_eq(f->sh.txn_open, 2, "the held commit is kept");
	cr_assert_null(event_of(f, "t.b"));
	cr_assert_eq(txn_release(&f->sh), a);
	cr_assert_eq(wal_txns(f), before + 1);
	shard_close(&f->sh);
	fx_open(f);
	cr_assert_not_null(event_of(f, "t.a"));
	cr_assert_null(event_of(f, "t.b"));
	cr_assert_null(event_of(f, "t.c"));
	cr_assert_eq(f->sh.lsn, a);
	free(big);
	fixture_free(f);
}

WM_TEST(held_txn, a_crash_point_logs_what_is_held_and_the_request_goes_on)
{
	struct fixture *f = fixture_new("held");
	uint64_t before = wal_txns(f);
	txn_hold(&f->sh);
	uint64_t a = commit_event(f, "t.a", "{}");
	cr_assert_eq(commit_event(f, "t.b", "{}"), a);
	txn_flush_held(&f->sh); /* what saga_crash_point does before it exits */
	cr_assert_eq(wal_txns(f), before + 1);
	cr_assert_eq(commit_event(f, "t.c", "{}"), a + 1, "after a flush the next commit takes the next LSN");
	cr_assert_eq(txn_release(&f->sh), a + 1);
	cr_assert_eq(wal_txns(f), before + 2);
	shard_close(&f->sh);
	fx_open(f);
	cr_assert_eq(event_of(f, "t.c")->lsn, a + 1);
	cr_assert_eq(event_of(f, "t.b")->lsn, a);
	fixture_free(f);
}

/* ---- superseded puts (shard.c, image_drop_superseded) ---- */

/* The records the WAL holds at one LSN, in order: op, key and the event
 * type of a put ("" for a delete). */
struct logged_rec {
	uint8_t op;
	char key[32];
	char type[32];
};
struct logged {
	uint64_t lsn;
	unsigned n, txns;
	struct logged_rec r[TXN_SUPERSEDE_MAX + 8];
};

static int collect(void *ctx, uint64_t lsn, const void *payload, size_t len)
{
	struct logged *lg = ctx;
	if (lsn != lg->lsn)
		return 0;
	lg->txns++;
	size_t off = 0;
	struct rec_view rv;
	while (rec_decode(payload, len, &off, &rv) == 1) {
		cr_assert_lt(lg->n, sizeof(lg->r) / sizeof(lg->r[0]));
		struct logged_rec *r = &lg->r[lg->n++];
		memset(r, 0, sizeof(*r));
		r->op = rv.op;
		cr_assert_lt(rv.key_len, sizeof(r->key));
		memcpy(r->key, rv.key, rv.key_len);
		const char *t = rv.op == REC_PUT ? memmem(rv.val, rv.val_len, "\"type\":\"", 8) : NULL;
		if (t) {
			t += 8;
			const char *e = memchr(t, '"', (size_t)(rv.val + rv.val_len - t));
			cr_assert_not_null(e);
			cr_assert_lt((size_t)(e - t), sizeof(r->type));
			memcpy(r->type, t, (size_t)(e - t));
		}
	}
	return 0;
}

/* Read the fixture's WAL (flushed) for the records of lsn. */
static void wal_records(struct fixture *f, uint64_t lsn, struct logged *lg)
{
	wal_flush(f->sh.wal);
	memset(lg, 0, sizeof(*lg));
	lg->lsn = lsn;
	struct wal_recovery_report rep;
	cr_assert_geq(wal_recover(f->sh.wal_dir, lsn - 1, collect, lg, 0, &rep), 0);
	cr_assert_eq(lg->txns, 1, "LSN %llu is one WAL transaction", (unsigned long long)lsn);
}

/* Put an event row with this key and type into the open transaction. */
static void put_event(struct fixture *f, const char *key, const char *type)
{
	char doc[256];
	int n = snprintf(doc, sizeof(doc), "{\"id\":\"%s\",\"type\":\"%s\",\"scope\":{\"entity_id\":null},\"payload\":{}}",
			 key, type);
	cr_assert_eq(txn_put(&f->sh, REC_T_EVENT, key, strlen(key), doc, (size_t)n), 0);
}

static void expect_rec(const struct logged *lg, unsigned i, uint8_t op, const char *key, const char *type)
{
	cr_assert_lt(i, lg->n);
	cr_assert_eq(lg->r[i].op, op, "record %u: op %u", i, lg->r[i].op);
	cr_assert_str_eq(lg->r[i].key, key, "record %u", i);
	cr_assert_str_eq(lg->r[i].type, type, "record %u", i);
}

WM_TEST(held_txn, a_put_superseded_by_a_later_put_of_its_row_is_not_logged)
{
	struct fixture *f = fixture_new("held");
	txn_hold(&f->sh);
	txn_begin(&f->sh);
	put_event(f, "evt_x", "x.v1");
	uint64_t a = txn_commit(&f->sh);
	cr_assert_gt(a, 0);
	txn_begin(&f->sh);
	put_event(f, "evt_x", "x.v2");
	put_event(f, "evt_y", "y.v1");
	cr_assert_eq(txn_commit(&f->sh), a);
	txn_begin(&f->sh);
	cr_assert_eq(txn_del(&f->sh, REC_T_EVENT, "evt_y", 5), 0);
	cr_assert_eq(txn_commit(&f->sh), a);
	txn_begin(&f->sh);
	put_event(f, "evt_y", "y.v2");
	put_event(f, "evt_x", "x.v3");
	cr_assert_eq(txn_commit(&f->sh), a);
	put_event(f, "evt_z", "z.v1"); /* after the last commit, as a stored response is */
	cr_assert_eq(txn_release(&f->sh), a);
	/* live: every version was applied as it came; the last stands */
	cr_assert_not_null(event_of(f, "x.v3"));
	cr_assert_null(event_of(f, "x.v1"));
	cr_assert_null(event_of(f, "x.v2"));
	cr_assert_not_null(event_of(f, "y.v2"));
	cr_assert_null(event_of(f, "y.v1"));
	/* logged: x's first two versions go (a later put of x follows each);
	 * y's first put stays (a delete follows it), and so does the delete */
	struct logged lg;
	wal_records(f, a, &lg);
	cr_assert_eq(lg.n, 5, "%u records logged", lg.n);
	expect_rec(&lg, 0, REC_PUT, "evt_y", "y.v1");
	expect_rec(&lg, 1, REC_DEL, "evt_y", "");
	expect_rec(&lg, 2, REC_PUT, "evt_y", "y.v2");
	expect_rec(&lg, 3, REC_PUT, "evt_x", "x.v3");
	expect_rec(&lg, 4, REC_PUT, "evt_z", "z.v1");
	/* replay rebuilds the same rows */
	shard_close(&f->sh);
	fx_open(f);
	cr_assert_eq(f->sh.lsn, a);
	const char *kept[] = {"x.v3", "y.v2", "z.v1"}, *gone[] = {"x.v1", "x.v2", "y.v1"};
	for (unsigned i = 0; i < 3; i++) {
		const struct row *r = event_of(f, kept[i]);
		cr_assert_not_null(r, "%s after replay", kept[i]);
		cr_assert_eq(r->lsn, a);
		cr_assert_null(event_of(f, gone[i]), "%s after replay", gone[i]);
	}
	fixture_free(f);
}

WM_TEST(held_txn, an_image_past_the_supersede_bound_is_logged_as_it_is)
{
	for (unsigned extra = 0; extra < 2; extra++) {
		/* TXN_SUPERSEDE_MAX records (searched) and one more (not) */
		unsigned n = TXN_SUPERSEDE_MAX + extra;
		struct fixture *f = fixture_new("held");
		txn_hold(&f->sh);
		txn_begin(&f->sh);
		char type[32];
		for (unsigned i = 0; i < n; i++) {
			snprintf(type, sizeof(type), "w.v%u", i);
			put_event(f, "evt_w", type);
		}
		uint64_t a = txn_commit(&f->sh);
		cr_assert_gt(a, 0);
		cr_assert_eq(txn_release(&f->sh), a);
		struct logged lg;
		wal_records(f, a, &lg);
		snprintf(type, sizeof(type), "w.v%u", n - 1);
		if (!extra) {
			cr_assert_eq(lg.n, 1, "at the bound: only the last put is logged (%u)", lg.n);
			expect_rec(&lg, 0, REC_PUT, "evt_w", type);
		} else {
			cr_assert_eq(lg.n, n, "past the bound: every record is logged (%u)", lg.n);
			expect_rec(&lg, n - 1, REC_PUT, "evt_w", type);
		}
		shard_close(&f->sh);
		fx_open(f);
		cr_assert_not_null(event_of(f, type), "%s after replay", type);
		cr_assert_null(event_of(f, "w.v0"));
		fixture_free(f);
	}
}

/* An event's document is DESIGN.md 7's envelope, its members in this
 * order: {"id","type","occurred_at","scope":{"entity_id"},"payload"}, the
 * entity null for a platform-wide event, the payload as given (shard.c
 * txn_event appends it as it is written). */
WM_TEST(held_txn, an_event_document_is_its_envelope_with_the_payload_as_given)
{
	struct fixture *f = fixture_new("envelope");
	const char *payload = "{\"s\":\"q\\\"b\",\"n\":[1,2.50,null]}";
	txn_begin(&f->sh);
	cr_assert_eq(txn_event(&f->sh, "t.scoped", "ptn_1", payload, strlen(payload)), 0);
	cr_assert_eq(txn_event(&f->sh, "t.platform", NULL, "{}", 2), 0);
	cr_assert_neq(txn_commit(&f->sh), 0);
	const char *types[2] = {"t.scoped", "t.platform"}, *scopes[2] = {"\"ptn_1\"", "null"},
		   *payloads[2] = {payload, "{}"};
	for (int i = 0; i < 2; i++) {
		const struct row *r = event_of(f, types[i]);
		cr_assert_not_null(r);
		cr_assert_not_null(r->doc);
		const char *at = strstr(r->doc, "\"occurred_at\":\"");
		cr_assert_not_null(at, "%s", r->doc);
		at += 15;
		long long ms;
		cr_assert_eq(parse_rfc3339_ms(at, 24, &ms), 0, "%s", r->doc);
		char want[512];
		snprintf(want, sizeof(want),
			 "{\"id\":\"%s\",\"type\":\"%s\",\"occurred_at\":\"%.24s\",\"scope\":{\"entity_id\":%s},"
			 "\"payload\":%s}",
			 r->id, types[i], at, scopes[i], payloads[i]);
		cr_assert_eq(r->doc_len, strlen(want), "%s", r->doc);
		cr_assert_str_eq(r->doc, want);
	}
	fixture_free(f);
}
