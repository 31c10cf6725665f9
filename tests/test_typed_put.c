/*
 * test_typed_put.c -- the typed fast path (engine/storage/table.h
 * decode_typed, shard.h txn_put_typed): a row a writer staged with its
 * typed values is built from them, and is the row decode() makes of its
 * document.  Test builds decode the document too and stop on any
 * difference, so values that disagree with their document abort the test
 * process (the property every writer's staging is held to); values are
 * matched to their records by position, so an aborted transaction's
 * values never reach a later record, and past the bounds a record is
 * decoded from its document.  The order-state table stands in for every
 * table with a fast path.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "engine/orders/order.h"
#include "engine/storage/record.h"
#include "engine/storage/shard.h"
#include "net/jsonw.h"
#include "tests/harness.h"
#include "tests/shard_fixture.h"
#include "tests/wm_test.h"

/* The state document of v, in buf (caller frees). */
static void state_doc(const struct order_state_v *v, struct buf *b)
{
	buf_init(b, REC_MAX_VAL);
	struct jw w;
	jw_init(&w, b);
	order_state_write(&w, v);
	cr_assert_eq(w.err, 0);
}

/* An order state of n legs at status st (a fixed time). */
static struct order_state_v state_of(int st, unsigned n)
{
	struct order_state_v v;
	order_state_initial(&v, n, "2026-11-28T10:00:00.000Z");
	v.status = (uint8_t)st;
	return v;
}

/* Stage id's state row with its document from doc_v and typed values from typed_v. */
static void stage(struct fixture *f, const char *id, const struct order_state_v *doc_v,
		  const struct order_state_v *typed_v)
{
	struct buf b;
	state_doc(doc_v, &b);
	cr_assert_eq(txn_put_typed(&f->sh, REC_T_ORDER_STATE, id, strlen(id), b.data, b.len, typed_v), 0);
	buf_free(&b);
}

static const struct order_state *state_row(struct fixture *f, const char *id)
{
	return (const struct order_state *)table_get(&f->sh.tables[REC_T_ORDER_STATE], id, strlen(id));
}

WM_TEST(typed_put, the_row_is_the_row_its_document_decodes_to)
{
	struct fixture *f = fixture_new("typed");
	struct order_state_v v = state_of(ORD_PAID, 3);
	v.leg_status[1] = LS_HELD;
	snprintf(v.charge_id, sizeof(v.charge_id), "pay_X1");
	snprintf(v.pay_state, sizeof(v.pay_state), "captured");
	txn_begin(&f->sh);
	stage(f, "ord_A", &v, &v);
	cr_assert_eq(f->sh.n_typed, 1, "the values are staged with the record");
	cr_assert_neq(txn_commit(&f->sh), 0);
	cr_assert_eq(f->sh.n_typed, 0, "applied values are forgotten");
	const struct order_state *s = state_row(f, "ord_A");
	cr_assert_not_null(s);
	cr_assert_eq(s->v.status, ORD_PAID);
	cr_assert_eq(s->v.n_legs, 3);
	cr_assert_eq(s->v.leg_status[1], LS_HELD);
	cr_assert_str_eq(s->v.charge_id, "pay_X1");
	/* the same row after a restart, where it is decoded from the log */
	wal_flush(f->sh.wal);
	shard_close(&f->sh);
	fx_open(f);
	s = state_row(f, "ord_A");
	cr_assert_not_null(s);
	cr_assert_eq(s->v.status, ORD_PAID);
	cr_assert_eq(s->v.leg_status[1], LS_HELD);
	cr_assert_str_eq(s->v.pay_state, "captured");
	fixture_free(f);
}

/* A writer whose values say one thing and its document another: the test
 * build stops at the commit (a release build keeps the logged document's
 * row, which recovery makes too). */
WM_TEST(typed_put, values_that_disagree_with_the_document_stop_a_test_build, .signal = SIGABRT)
{
	struct fixture *f = fixture_new("typed-bad");
	rm_rf(f->dir); /* the test ends in SIGABRT, past any cleanup: its files go now (open ones stay usable) */
	struct order_state_v doc_v = state_of(ORD_PAID, 1), typed_v = state_of(ORD_CONFIRMED, 1);
	txn_begin(&f->sh);
	stage(f, "ord_B", &doc_v, &typed_v);
	txn_commit(&f->sh);
	cr_assert_fail("the commit applied values its document does not hold");
}

/* Values no row can have (a status past the enum) stop a test build too. */
WM_TEST(typed_put, values_no_row_can_have_stop_a_test_build, .signal = SIGABRT)
{
	struct fixture *f = fixture_new("typed-refused");
	rm_rf(f->dir); /* the test ends in SIGABRT, past any cleanup: its files go now (open ones stay usable) */
	struct order_state_v doc_v = state_of(ORD_PAID, 1), typed_v = doc_v;
	typed_v.status = ORDER_N_STATUS;
	txn_begin(&f->sh);
	stage(f, "ord_C", &doc_v, &typed_v);
	txn_commit(&f->sh);
	cr_assert_fail("the commit applied values no row can have");
}

/* An aborted transaction's values are dropped with it: the next record at
 * the same place in the image is decoded from its own document (were the
 * stale values used, the check above would stop the test). */
WM_TEST(typed_put, an_aborted_transactions_values_never_reach_a_later_record)
{
	struct fixture *f = fixture_new("typed-abort");
	struct order_state_v a = state_of(ORD_PAID, 1), b = state_of(ORD_SOURCED, 2);
	txn_begin(&f->sh);
	stage(f, "ord_D", &a, &a);
	txn_abort(&f->sh);
	cr_assert_eq(f->sh.n_typed, 0);
	txn_begin(&f->sh);
	struct buf doc;
	state_doc(&b, &doc);
	cr_assert_eq(txn_put(&f->sh, REC_T_ORDER_STATE, "ord_D", 5, doc.data, doc.len), 0);
	buf_free(&doc);
	cr_assert_neq(txn_commit(&f->sh), 0);
	cr_assert_eq(state_row(f, "ord_D")->v.status, ORD_SOURCED);
	cr_assert_eq(state_row(f, "ord_D")->v.n_legs, 2);
	/* the same inside a held request: the abort keeps the held commit's rows */
	txn_hold(&f->sh);
	txn_begin(&f->sh);
	stage(f, "ord_E", &a, &a);
	cr_assert_neq(txn_commit(&f->sh), 0);
	txn_begin(&f->sh);
	stage(f, "ord_F", &b, &b);
	txn_abort(&f->sh);
	txn_begin(&f->sh);
	state_doc(&a, &doc);
	cr_assert_eq(txn_put(&f->sh, REC_T_ORDER_STATE, "ord_F", 5, doc.data, doc.len), 0);
	buf_free(&doc);
	cr_assert_neq(txn_commit(&f->sh), 0);
	cr_assert_neq(txn_release(&f->sh), 0);
	cr_assert_eq(state_row(f, "ord_E")->v.status, ORD_PAID);
	cr_assert_eq(state_row(f, "ord_F")->v.status, ORD_PAID);
	fixture_free(f);
}

/* Past TXN_TYPED_MAX values in one commit, the rest are decoded from their
 * documents: every row is still right. */
WM_TEST(typed_put, past_the_bound_records_are_decoded_from_their_documents)
{
	struct fixture *f = fixture_new("typed-bound");
	enum { N = TXN_TYPED_MAX + 8 };
	txn_begin(&f->sh);
	for (unsigned i = 0; i < N; i++) {
		char id[32];
		snprintf(id, sizeof(id), "ord_%03u", i);
		struct order_state_v v = state_of(i % 2 ? ORD_PAID : ORD_CONFIRMED, 1 + i % ORDER_MAX_LEGS);
		stage(f, id, &v, &v);
	}
	cr_assert_eq(f->sh.n_typed, TXN_TYPED_MAX, "the bound holds");
	cr_assert_neq(txn_commit(&f->sh), 0);
	for (unsigned i = 0; i < N; i++) {
		char id[32];
		snprintf(id, sizeof(id), "ord_%03u", i);
		const struct order_state *s = state_row(f, id);
		cr_assert_not_null(s, "%s", id);
		cr_assert_eq(s->v.status, i % 2 ? ORD_PAID : ORD_CONFIRMED, "%s", id);
		cr_assert_eq(s->v.n_legs, 1 + i % ORDER_MAX_LEGS, "%s", id);
	}
	fixture_free(f);
}
