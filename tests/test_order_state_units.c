/*
 * test_order_state_units.c -- an order as two rows (engine/orders/order_state.c):
 * the body written once at capture and the state each saga step replaces.
 *
 *  - The document reads return, assembled from a body and a state, is byte
 *    for byte the one the single-document build stored (the pre-split
 *    document is kept as a fuzz seed, fuzz_rows/order_presplit, beside the
 *    body and state seeds made from it), and such a pre-split document is
 *    refused as a body (its state members would appear twice).
 *  - The state document: written from typed values, decoded back to the
 *    same values; every member out of its set or bound refused.
 *  - order_state_apply: the patch's strings checked against their bounds,
 *    so a staged state always decodes (a failing apply aborts the shard).
 *  - Hostile logs: a state without its body, a body without its state, and
 *    a pair disagreeing on the number of legs are no order (order_get,
 *    order_state_get NULL); a pending orphan state is visited by
 *    saga_recover without harm; the same after a reopen (replay).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/config.h"
#include "engine/orders/order.h"
#include "engine/storage/record.h"
#include "engine/storage/shard.h"
#include "tests/harness.h"
#include "tests/shard_fixture.h"
#include "tests/wm_test.h"

#define SEED_ORDER_ID "ord_DE_01M7YK9RN60001C20B1S" /* the id inside the seeds */

/* A fuzz_rows seed's document (the bytes after the table byte); caller frees. */
static char *seed(const char *name, size_t *len)
{
	const char *src = getenv("WM_SRC_DIR");
	char path[1024];
	snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/fuzz_rows/%s", src ? src : ".", name);
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f, "cannot open %s", path);
	char *d = malloc(1 << 16);
	size_t n = fread(d, 1, 1 << 16, f);
	fclose(f);
	cr_assert_gt(n, 1, "%s is empty", path);
	memmove(d, d + 1, n - 1);
	d[n - 1] = 0;
	*len = n - 1;
	return d;
}

/* A table of its own (no shard), as the fuzz target uses one. */
static void table_of(struct table *t, const struct table_ops *ops)
{
	static struct config cfg;
	config_defaults(&cfg);
	cr_assert_eq(table_init(t, ops, &cfg), 0);
}

/* Put doc under id: 0, or -1 when refused. */
static int put(struct table *t, const char *id, const char *doc)
{
	char why[128];
	return table_put(t, id, strlen(id), doc, strlen(doc), 1, why);
}

WM_TEST(order_state, assembled_document_is_the_pre_split_one)
{
	size_t bl, sl, pl;
	char *body = seed("order", &bl), *state = seed("order_state", &sl), *pre = seed("order_presplit", &pl);
	struct table tb, ts;
	table_of(&tb, &order_table_ops);
	table_of(&ts, &order_state_table_ops);
	cr_assert_eq(put(&tb, SEED_ORDER_ID, body), 0, "the body seed decodes");
	cr_assert_eq(put(&ts, SEED_ORDER_ID, state), 0, "the state seed decodes");
	const struct order *o = (const struct order *)table_get(&tb, SEED_ORDER_ID, strlen(SEED_ORDER_ID));
	const struct order_state *s = (const struct order_state *)table_get(&ts, SEED_ORDER_ID, strlen(SEED_ORDER_ID));
	struct buf out;
	buf_init(&out, 0);
	cr_assert_eq(order_doc(o, s, &out), 0);
	cr_assert_eq(out.len, pl, "assembled %zu bytes, the pre-split document has %zu", out.len, pl);
	cr_assert_eq(memcmp(out.data, pre, pl), 0, "assembled:\n%.*s", (int)out.len, out.data);
	cr_assert_eq(put(&tb, "ord_2", pre), -1, "a pre-split document is not a body");
	buf_free(&out);
	table_fini(&tb);
	table_fini(&ts);
	free(body);
	free(state);
	free(pre);
}

/* Write v, decode it in t under "s": the decoded row. */
static const struct order_state *round_trip(struct table *t, const struct order_state_v *v)
{
	struct buf b;
	buf_init(&b, 0);
	struct jw w;
	jw_init(&w, &b);
	order_state_write(&w, v);
	cr_assert_eq(w.err, 0);
	char why[128];
	cr_assert_eq(table_put(t, "s", 1, b.data, b.len, 1, why), 0, "%s: %.*s", why, (int)b.len, b.data);
	buf_free(&b);
	return (const struct order_state *)table_get(t, "s", 1);
}

WM_TEST(order_state, document_round_trip)
{
	struct table t;
	table_of(&t, &order_state_table_ops);
	struct order_state_v v;
	order_state_initial(&v, 3, "2026-01-02T03:04:05.006Z");
	const struct order_state *s = round_trip(&t, &v);
	cr_assert_eq(memcmp(&s->v, &v, sizeof(v)), 0, "initial state");
	uint8_t legs[3] = {LS_RELEASED, LS_FULFILLED, LS_HELD};
	struct order_patch p = {.status = ORD_FAILED, .leg_status = legs, .failure = OF_PAYMENT_TIMEOUT,
				.failure_detail = "quote \" backslash \\ tab \t", .compensated = 1,
				.pay_state = "refunded", .charge_id = "pay_X"};
	cr_assert_eq(order_state_apply(&v, &p, "2026-01-02T03:04:05.007Z"), 0);
	s = round_trip(&t, &v);
	cr_assert_eq(memcmp(&s->v, &v, sizeof(v)), 0, "patched state");
	cr_assert_eq(s->v.failure, OF_PAYMENT_TIMEOUT);
	cr_assert_str_eq(s->v.failure_detail, "quote \" backslash \\ tab \t");
	cr_assert_str_eq(s->v.failure_at, "2026-01-02T03:04:05.007Z");
	cr_assert_str_eq(s->v.charge_id, "pay_X");
	cr_assert_eq(s->v.leg_status[1], LS_FULFILLED);
	table_fini(&t);
}

WM_TEST(order_state, document_refused_out_of_bounds)
{
	static const char *const bad[] = {
		"[]",
		"{\"status\":\"lost\",\"legs\":[],\"payment\":{\"state\":\"pending\",\"charge_id\":null},\"failure\":null,"
		"\"saga\":{\"compensated\":false},\"updated_at\":\"t\"}",
		"{\"status\":\"placed\",\"legs\":[\"lost\"],\"payment\":{\"state\":\"pending\",\"charge_id\":null},"
		"\"failure\":null,\"saga\":{\"compensated\":false},\"updated_at\":\"t\"}",
		"{\"status\":\"placed\",\"legs\":[1],\"payment\":{\"state\":\"pending\",\"charge_id\":null},"
		"\"failure\":null,\"saga\":{\"compensated\":false},\"updated_at\":\"t\"}",
		"{\"status\":\"placed\",\"legs\":[],\"payment\":{\"state\":\"\",\"charge_id\":null},\"failure\":null,"
		"\"saga\":{\"compensated\":false},\"updated_at\":\"t\"}",
		"{\"status\":\"placed\",\"legs\":[],\"payment\":{\"state\":\"pending\",\"charge_id\":null},"
		"\"failure\":{\"code\":\"lost\",\"detail\":\"\",\"at\":\"t\"},\"saga\":{\"compensated\":false},"
		"\"updated_at\":\"t\"}",
		"{\"status\":\"placed\",\"legs\":[],\"payment\":{\"state\":\"pending\",\"charge_id\":null},"
		"\"failure\":\"payment_declined\",\"saga\":{\"compensated\":false},\"updated_at\":\"t\"}",
		"{\"status\":\"placed\",\"legs\":[],\"payment\":{\"state\":\"pending\",\"charge_id\":null},"
		"\"failure\":null,\"saga\":{\"compensated\":1},\"updated_at\":\"t\"}",
		"{\"status\":\"placed\",\"legs\":[],\"payment\":{\"state\":\"pending\",\"charge_id\":null},"
		"\"failure\":null,\"saga\":{},\"updated_at\":\"t\"}",
		"{\"status\":\"placed\",\"legs\":[],\"payment\":{\"state\":\"pending\",\"charge_id\":null},"
		"\"failure\":null,\"saga\":{\"compensated\":false}}",
		NULL,
	};
	struct table t;
	table_of(&t, &order_state_table_ops);
	for (unsigned i = 0; bad[i]; i++)
		cr_assert_eq(put(&t, "s", bad[i]), -1, "accepted: %s", bad[i]);
	/* legs: ORDER_MAX_LEGS at the edge, one more refused */
	char doc[1024];
	for (unsigned n = ORDER_MAX_LEGS; n <= ORDER_MAX_LEGS + 1; n++) {
		int at = snprintf(doc, sizeof(doc), "{\"status\":\"placed\",\"legs\":[");
		for (unsigned i = 0; i < n; i++)
			at += snprintf(doc + at, sizeof(doc) - (size_t)at, "%s\"pending\"", i ? "," : "");
		snprintf(doc + at, sizeof(doc) - (size_t)at,
			 "],\"payment\":{\"state\":\"pending\",\"charge_id\":null},\"failure\":null,"
			 "\"saga\":{\"compensated\":false},\"updated_at\":\"t\"}");
		cr_assert_eq(put(&t, "s", doc), n == ORDER_MAX_LEGS ? 0 : -1, "%u legs", n);
	}
	table_fini(&t);
}

WM_TEST(order_state, apply_checks_bounds)
{
	struct order_state_v v;
	order_state_initial(&v, 1, "t");
	char detail[ORDER_DETAIL_MAX + 2], pay[ORDER_PAY_STATE_MAX + 1], charge[ID_MAX_LEN + 1];
	memset(detail, 'd', sizeof(detail) - 1);
	detail[ORDER_DETAIL_MAX] = 0; /* at the bound */
	struct order_patch p = {.status = ORD_FAILED, .failure = OF_STORE, .failure_detail = detail, .compensated = -1};
	cr_assert_eq(order_state_apply(&v, &p, "t"), 0);
	detail[ORDER_DETAIL_MAX] = 'd'; /* one past */
	detail[ORDER_DETAIL_MAX + 1] = 0;
	cr_assert_eq(order_state_apply(&v, &p, "t"), -1);
	memset(pay, 'p', sizeof(pay) - 1);
	pay[ORDER_PAY_STATE_MAX - 1] = 0;
	struct order_patch q = {.status = -1, .compensated = -1, .pay_state = pay, .charge_id = charge};
	memset(charge, 'c', sizeof(charge) - 1);
	charge[ID_MAX_LEN - 1] = 0;
	cr_assert_eq(order_state_apply(&v, &q, "t"), 0);
	pay[ORDER_PAY_STATE_MAX - 1] = 'p';
	pay[ORDER_PAY_STATE_MAX] = 0;
	cr_assert_eq(order_state_apply(&v, &q, "t"), -1, "pay state one past its bound");
	pay[ORDER_PAY_STATE_MAX - 1] = 0;
	charge[ID_MAX_LEN - 1] = 'c';
	charge[ID_MAX_LEN] = 0;
	cr_assert_eq(order_state_apply(&v, &q, "t"), -1, "charge id one past its bound");
	struct order_patch r = {.status = ORDER_N_STATUS, .compensated = -1};
	cr_assert_eq(order_state_apply(&v, &r, "t"), -1, "status out of range");
	uint8_t legs[1] = {ORDER_N_LEG_STATUS};
	struct order_patch l = {.status = -1, .leg_status = legs, .compensated = -1};
	cr_assert_eq(order_state_apply(&v, &l, "t"), -1, "leg status out of range");
}

/* Commit one record of table tab under the seeds' order id. */
static void commit_row(struct fixture *f, uint8_t tab, const char *doc)
{
	txn_begin(&f->sh);
	cr_assert_eq(txn_put(&f->sh, tab, SEED_ORDER_ID, strlen(SEED_ORDER_ID), doc, strlen(doc)), 0);
	cr_assert_neq(txn_commit(&f->sh), 0);
}

/* What the shard makes of the seeds' order: 1 if it is an order. */
static int is_order(struct fixture *f)
{
	const struct order *o = order_get(&f->sh, SEED_ORDER_ID, strlen(SEED_ORDER_ID));
	const struct order_state *s = order_state_get(&f->sh, SEED_ORDER_ID, strlen(SEED_ORDER_ID));
	cr_assert_eq(!o, !s, "order_get and order_state_get agree");
	return o != NULL;
}

WM_TEST(order_state, orphans_are_no_orders)
{
	struct fixture *f = fixture_new("ostate");
	size_t bl, sl;
	char *body = seed("order", &bl), *state = seed("order_state", &sl);
	char id[ID_MAX_LEN];
	/* a pending state without its body: no order; saga_recover visits it harmlessly */
	commit_row(f, REC_T_ORDER_STATE,
		   "{\"status\":\"paid\",\"legs\":[\"held\"],\"payment\":{\"state\":\"captured\",\"charge_id\":\"pay_1\"},"
		   "\"failure\":null,\"saga\":{\"compensated\":false},\"updated_at\":\"t\"}");
	cr_assert(!is_order(f));
	cr_assert_eq(order_pending_next(&f->sh, "", id), 1);
	cr_assert_str_eq(id, SEED_ORDER_ID);
	cr_assert_eq(saga_recover(&f->sh), 1);
	cr_assert(!is_order(f));
	/* its body arrives: with that state (1 leg, like the body) it is an order */
	commit_row(f, REC_T_ORDER, body);
	cr_assert(is_order(f));
	/* a state disagreeing on the number of legs: no order */
	commit_row(f, REC_T_ORDER_STATE,
		   "{\"status\":\"reserved\",\"legs\":[\"reserved\",\"reserved\"],\"payment\":{\"state\":\"captured\","
		   "\"charge_id\":\"pay_1\"},\"failure\":null,\"saga\":{\"compensated\":false},\"updated_at\":\"t\"}");
	cr_assert(!is_order(f));
	cr_assert_eq(order_pending_next(&f->sh, "", id), 0, "reserved is at rest");
	/* the same after a replay of all of it */
	shard_close(&f->sh);
	fx_open(f);
	cr_assert(!is_order(f));
	commit_row(f, REC_T_ORDER_STATE, state);
	cr_assert(is_order(f));
	cr_assert_eq(order_get(&f->sh, SEED_ORDER_ID, strlen(SEED_ORDER_ID))->n_legs, 1);
	/* a body without its state (deleted): no order */
	txn_begin(&f->sh);
	cr_assert_eq(txn_del(&f->sh, REC_T_ORDER_STATE, SEED_ORDER_ID, strlen(SEED_ORDER_ID)), 0);
	cr_assert_neq(txn_commit(&f->sh), 0);
	cr_assert(!is_order(f));
	free(body);
	free(state);
	fixture_free(f);
}
