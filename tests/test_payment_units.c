/*
 * test_payment_units.c -- the sandbox payment provider and its ledger
 * (engine/orders/payment.c), in-process against a real shard: every charge
 * outcome with what it writes (row, event) or does not write, idempotency
 * by order id, refund/void and the late charge refused after
 * compensation, argument bounds at and one past each edge, a ledger that
 * cannot be written (ledger_unavailable, nothing applied), the table's
 * decode of stored documents, and the ledger rebuilt from the WAL and from
 * a snapshot on reopen.  (No route creates payments yet, so charges
 * happen here; the two GET routes are in test_payment.c.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/config.h"
#include "engine/orders/payment.h"
#include "engine/storage/record.h"
#include "engine/storage/shard.h"
#include "tests/harness.h"
#include "tests/shard_fixture.h"
#include "tests/wm_test.h"

static struct pay_request req(const char *order_id, int64_t amount, const char *cur, uint8_t method)
{
	struct pay_request r = {.order_id = order_id, .amount_minor = amount, .method = method};
	snprintf(r.currency, sizeof(r.currency), "%s", cur);
	return r;
}

static struct pay_result charge(struct fixture *f, const char *order_id, int64_t amount, const char *cur,
				uint8_t method)
{
	struct pay_request r = req(order_id, amount, cur, method);
	struct pay_result out;
	memset(&out, 0x5a, sizeof(out)); /* every field must be set by the call */
	pay_charge(&f->sh, &r, &out);
	return out;
}

static struct pay_result refund(struct fixture *f, const char *order_id)
{
	struct pay_result out;
	memset(&out, 0x5a, sizeof(out));
	pay_refund(&f->sh, order_id, &out);
	return out;
}

/* The ledger row's stored document by payment id (NULL when none). */
static const char *payment_doc(struct fixture *f, const char *pay_id)
{
	const struct row *r = table_get(&f->sh.tables[REC_T_PAYMENT], pay_id, strlen(pay_id));
	return r ? r->doc : NULL;
}

/* Events of `type` in the event table. */
static size_t count_events(struct fixture *f, const char *type)
{
	char pat[96];
	snprintf(pat, sizeof(pat), "\"type\":\"%s\"", type);
	size_t n = 0;
	struct oidx_iter it;
	for (int ok = oidx_seek_ge(&f->sh.tables[REC_T_EVENT].by_order, NULL, 0, &it); ok; ok = oidx_next(&it))
		if (strstr(((const struct row *)oidx_iter_val(&it))->doc, pat))
			n++;
	return n;
}

static size_t ledger_rows(struct fixture *f) { return table_count(&f->sh.tables[REC_T_PAYMENT]); }

static const char *oname(enum pay_outcome o) { return (unsigned)o <= PAY_ERROR ? pay_outcome_names[o] : "?"; }

static void expect(struct pay_result r, enum pay_outcome o, const char *code)
{
	cr_assert_eq(r.outcome, o, "outcome %s, want %s", oname(r.outcome), oname(o));
	cr_assert_str_eq(r.code, code);
}

/* A charge id: "pay_" and a well-formed body. */
static void expect_charge_id(const char *id)
{
	cr_assert(id_valid(id, strlen(id), "pay"), "charge id '%s'", id);
}

WM_TEST(payment, names_follow_the_enums)
{
	static const char *const outcomes[] = {"ok", "captured", "declined", "failed_after_charge", "timeout", "error"};
	for (int i = 0; i <= PAY_ERROR; i++)
		cr_assert_str_eq(pay_outcome_names[i], outcomes[i]);
	cr_assert_str_eq(pay_method_names[PM_SANDBOX_OK], "sandbox_ok");
	cr_assert_str_eq(pay_method_names[PM_SANDBOX_DECLINE], "sandbox_decline");
	cr_assert_str_eq(pay_method_names[PM_SANDBOX_FAIL_AFTER_CHARGE], "sandbox_fail_after_charge");
	cr_assert_str_eq(pay_method_names[PM_SANDBOX_TIMEOUT], "sandbox_timeout");
	cr_assert_null(pay_method_names[PAY_N_METHOD], "NULL-terminated");
	static const char *const states[] = {"none", "captured", "refunded", "voided"};
	for (int i = 0; i < PAY_N_STATE; i++)
		cr_assert_str_eq(pay_state_names[i], states[i]);
}

WM_TEST(payment, every_charge_outcome_and_what_it_writes)
{
	struct fixture *f = fixture_new("pay");
	/* sandbox_ok: captured, one row, one event, exact amount */
	uint64_t lsn = f->sh.lsn;
	struct pay_result r = charge(f, "ord_ok", 12345, "EUR", PM_SANDBOX_OK);
	expect(r, PAY_CAPTURED, "");
	expect_charge_id(r.charge_id);
	cr_assert_eq(f->sh.lsn, lsn + 1, "one transaction");
	cr_assert_eq(pay_state_of(&f->sh, "ord_ok"), PS_CAPTURED);
	const char *doc = payment_doc(f, r.charge_id);
	cr_assert_not_null(doc);
	char want[512];
	snprintf(want, sizeof(want),
		 "{\"id\":\"%s\",\"payment_id\":\"%s\",\"order_id\":\"ord_ok\",\"amount\":123.45,\"currency\":\"EUR\","
		 "\"method\":\"sandbox_ok\",\"state\":\"captured\",\"refunded\":0.00,\"refunds\":[],\"created_at\":\"",
		 r.charge_id, r.charge_id);
	cr_assert_eq(strncmp(doc, want, strlen(want)), 0, "%s", doc);
	cr_assert_not_null(strstr(doc, "\"updated_at\":\""), "%s", doc);
	cr_assert_eq(count_events(f, "payment.captured"), 1);

	/* sandbox_decline: nothing captured, nothing written */
	lsn = f->sh.lsn;
	r = charge(f, "ord_decl", 500, "EUR", PM_SANDBOX_DECLINE);
	expect(r, PAY_DECLINED, "card_declined");
	cr_assert_str_eq(r.charge_id, "");
	cr_assert_eq(f->sh.lsn, lsn, "a decline writes nothing");
	cr_assert_eq(pay_state_of(&f->sh, "ord_decl"), PS_NONE);
	cr_assert_eq(ledger_rows(f), 1);

	/* a declined order may be charged later with another method */
	r = charge(f, "ord_decl", 500, "EUR", PM_SANDBOX_OK);
	expect(r, PAY_CAPTURED, "");

	/* sandbox_fail_after_charge: the money moved, then an error */
	lsn = f->sh.lsn;
	r = charge(f, "ord_fail", 700, "GBP", PM_SANDBOX_FAIL_AFTER_CHARGE);
	expect(r, PAY_FAILED_AFTER_CHARGE, "provider_error");
	expect_charge_id(r.charge_id);
	cr_assert_eq(f->sh.lsn, lsn + 1);
	cr_assert_eq(pay_state_of(&f->sh, "ord_fail"), PS_CAPTURED, "captured before the error");
	cr_assert_not_null(strstr(payment_doc(f, r.charge_id), "\"method\":\"sandbox_fail_after_charge\""));

	/* sandbox_timeout: the worst case -- captured, caller not told */
	lsn = f->sh.lsn;
	r = charge(f, "ord_to", 1, "JPY", PM_SANDBOX_TIMEOUT);
	expect(r, PAY_TIMEOUT, "provider_timeout");
	expect_charge_id(r.charge_id);
	cr_assert_eq(f->sh.lsn, lsn + 1);
	cr_assert_eq(pay_state_of(&f->sh, "ord_to"), PS_CAPTURED, "a time-out captured");
	cr_assert_not_null(strstr(payment_doc(f, r.charge_id), "\"amount\":1,\"currency\":\"JPY\""), "JPY has no minor digits");

	/* three minor digits */
	r = charge(f, "ord_bhd", 1234, "BHD", PM_SANDBOX_OK);
	expect(r, PAY_CAPTURED, "");
	cr_assert_not_null(strstr(payment_doc(f, r.charge_id), "\"amount\":1.234,\"currency\":\"BHD\""));
	r = charge(f, "ord_cent", 5, "EUR", PM_SANDBOX_OK);
	cr_assert_not_null(strstr(payment_doc(f, r.charge_id), "\"amount\":0.05,"));

	cr_assert_eq(ledger_rows(f), 6);
	cr_assert_eq(count_events(f, "payment.captured"), 6, "one event per captured row");
	cr_assert_eq(count_events(f, "payment.refunded") + count_events(f, "payment.voided"), 0);
	fixture_free(f);
}

WM_TEST(payment, charge_is_idempotent_by_order_id)
{
	struct fixture *f = fixture_new("pay");
	struct pay_result first = charge(f, "ord_1", 1000, "EUR", PM_SANDBOX_OK);
	expect(first, PAY_CAPTURED, "");
	uint64_t lsn = f->sh.lsn;
	/* the same order again, whatever the method or amount: the same charge */
	for (uint8_t m = 0; m < PAY_N_METHOD; m++) {
		struct pay_result again = charge(f, "ord_1", 1000 + m, "EUR", m);
		expect(again, PAY_CAPTURED, "");
		cr_assert_str_eq(again.charge_id, first.charge_id);
	}
	cr_assert_eq(f->sh.lsn, lsn, "no money moves twice: nothing written");
	cr_assert_eq(ledger_rows(f), 1);
	cr_assert_eq(count_events(f, "payment.captured"), 1);
	cr_assert_not_null(strstr(payment_doc(f, first.charge_id), "\"amount\":10.00,"), "the first amount stays");

	/* after a time-out the saga retries and learns the charge happened */
	struct pay_result to = charge(f, "ord_2", 2500, "EUR", PM_SANDBOX_TIMEOUT);
	expect(to, PAY_TIMEOUT, "provider_timeout");
	lsn = f->sh.lsn;
	struct pay_result retry = charge(f, "ord_2", 2500, "EUR", PM_SANDBOX_OK);
	expect(retry, PAY_CAPTURED, "");
	cr_assert_str_eq(retry.charge_id, to.charge_id);
	cr_assert_eq(f->sh.lsn, lsn);
	/* and after a failure-after-charge likewise */
	struct pay_result fl = charge(f, "ord_3", 2500, "EUR", PM_SANDBOX_FAIL_AFTER_CHARGE);
	retry = charge(f, "ord_3", 2500, "EUR", PM_SANDBOX_FAIL_AFTER_CHARGE);
	expect(retry, PAY_CAPTURED, "");
	cr_assert_str_eq(retry.charge_id, fl.charge_id);
	cr_assert_eq(ledger_rows(f), 3);
	fixture_free(f);
}

WM_TEST(payment, refund_after_charge_then_again_then_charge_refused)
{
	struct fixture *f = fixture_new("pay");
	struct pay_result c = charge(f, "ord_r", 4999, "EUR", PM_SANDBOX_OK);
	expect(c, PAY_CAPTURED, "");
	uint64_t lsn = f->sh.lsn;
	struct pay_result r = refund(f, "ord_r");
	expect(r, PAY_OK, "");
	cr_assert_str_eq(r.charge_id, c.charge_id, "the charge's own row is refunded");
	cr_assert_eq(f->sh.lsn, lsn + 1, "one transaction");
	cr_assert_eq(pay_state_of(&f->sh, "ord_r"), PS_REFUNDED);
	cr_assert_eq(ledger_rows(f), 1);
	const char *doc = payment_doc(f, c.charge_id);
	cr_assert_not_null(strstr(doc, "\"amount\":49.99,\"currency\":\"EUR\",\"method\":\"sandbox_ok\",\"state\":\"refunded\""),
			   "%s", doc);
	cr_assert_eq(count_events(f, "payment.refunded"), 1);

	/* refund twice: PAY_OK, nothing written */
	lsn = f->sh.lsn;
	r = refund(f, "ord_r");
	expect(r, PAY_OK, "");
	cr_assert_str_eq(r.charge_id, c.charge_id);
	cr_assert_eq(f->sh.lsn, lsn);
	cr_assert_eq(count_events(f, "payment.refunded"), 1);

	/* an order is charged at most once in its life */
	for (uint8_t m = 0; m < PAY_N_METHOD; m++) {
		struct pay_result late = charge(f, "ord_r", 4999, "EUR", m);
		expect(late, PAY_DECLINED, "order_compensated");
		cr_assert_str_eq(late.charge_id, c.charge_id, "the row that refuses it");
	}
	cr_assert_eq(f->sh.lsn, lsn, "a refused charge writes nothing");
	cr_assert_eq(pay_state_of(&f->sh, "ord_r"), PS_REFUNDED);

	/* the same for a charge that failed after capturing or timed out */
	charge(f, "ord_t", 100, "EUR", PM_SANDBOX_TIMEOUT);
	expect(refund(f, "ord_t"), PAY_OK, "");
	cr_assert_eq(pay_state_of(&f->sh, "ord_t"), PS_REFUNDED, "the money a time-out took is returned");
	charge(f, "ord_f", 100, "EUR", PM_SANDBOX_FAIL_AFTER_CHARGE);
	expect(refund(f, "ord_f"), PAY_OK, "");
	cr_assert_eq(pay_state_of(&f->sh, "ord_f"), PS_REFUNDED);
	cr_assert_eq(count_events(f, "payment.refunded"), 3);
	fixture_free(f);
}

/* Partial refunds (returns): idempotent by refund id, never past the
 * charge, the row "refunded" exactly when all of it is back; the bound. */
WM_TEST(payment, partial_refunds_are_idempotent_by_id_and_never_exceed_the_charge)
{
	struct fixture *f = fixture_new("payp");
	struct pay_result r = charge(f, "ord_p", 10000, "EUR", PM_SANDBOX_OK);
	expect(r, PAY_CAPTURED, "");
	struct pay_result out;
	pay_refund_part(&f->sh, "ord_p", "ord_p.R1", 2500, &out);
	expect(out, PAY_OK, "");
	cr_assert_eq(pay_refunded_of(&f->sh, "ord_p"), 2500);
	cr_assert_eq(pay_state_of(&f->sh, "ord_p"), PS_CAPTURED, "part of it: still captured");
	uint64_t lsn = f->sh.lsn;
	pay_refund_part(&f->sh, "ord_p", "ord_p.R1", 2500, &out); /* the same refund again */
	expect(out, PAY_OK, "");
	cr_assert_eq(f->sh.lsn, lsn, "nothing written the second time");
	cr_assert_eq(pay_refunded_of(&f->sh, "ord_p"), 2500);
	pay_refund_part(&f->sh, "ord_p", "ord_p.R2", 7501, &out);
	expect(out, PAY_ERROR, "exceeds_charge");
	pay_refund_part(&f->sh, "ord_p", "ord_p.R2", 0, &out);
	expect(out, PAY_ERROR, "exceeds_charge");
	pay_refund_part(&f->sh, "ord_p", "ord_p.R2", 7500, &out);
	expect(out, PAY_OK, "");
	cr_assert_eq(pay_state_of(&f->sh, "ord_p"), PS_REFUNDED, "all of it: refunded");
	cr_assert_eq(pay_refunded_of(&f->sh, "ord_p"), 10000);
	pay_refund_part(&f->sh, "ord_p", "ord_p.R3", 1, &out);
	expect(out, PAY_ERROR, "already_refunded");
	pay_refund_part(&f->sh, "ord_p", "ord_p.R2", 7500, &out); /* a retry after the end */
	expect(out, PAY_OK, "");
	cr_assert_eq(count_events(f, "payment.refunded"), 2);
	/* no charge: nothing to refund */
	pay_refund_part(&f->sh, "ord_none", "ord_none.R1", 1, &out);
	expect(out, PAY_ERROR, "not_captured");
	/* at most 16 partial refunds of one charge */
	expect(charge(f, "ord_many", 100000, "EUR", PM_SANDBOX_OK), PAY_CAPTURED, "");
	char rid[32];
	for (int i = 0; i < 16; i++) {
		snprintf(rid, sizeof(rid), "ord_many.R%d", i);
		pay_refund_part(&f->sh, "ord_many", rid, 1, &out);
		expect(out, PAY_OK, "");
	}
	pay_refund_part(&f->sh, "ord_many", "ord_many.R16", 1, &out);
	expect(out, PAY_ERROR, "too_many_refunds");
	/* a full refund after partial ones: the rest, the list kept */
	pay_refund(&f->sh, "ord_many", &out);
	expect(out, PAY_OK, "");
	cr_assert_eq(pay_refunded_of(&f->sh, "ord_many"), 100000);
	const char *doc = payment_doc(f, out.charge_id);
	cr_assert(doc && strstr(doc, "\"refund_id\":\"ord_many.R15\""), "%s", doc ? doc : "-");
	fixture_free(f);
}

WM_TEST(payment, refund_before_charge_voids_and_refuses_the_late_charge)
{
	struct fixture *f = fixture_new("pay");
	cr_assert_eq(pay_state_of(&f->sh, "ord_v"), PS_NONE);
	uint64_t lsn = f->sh.lsn;
	struct pay_result v = refund(f, "ord_v");
	expect(v, PAY_OK, "");
	expect_charge_id(v.charge_id);
	cr_assert_eq(f->sh.lsn, lsn + 1);
	cr_assert_eq(pay_state_of(&f->sh, "ord_v"), PS_VOIDED);
	const char *doc = payment_doc(f, v.charge_id);
	cr_assert_not_null(doc);
	cr_assert_not_null(strstr(doc, "\"order_id\":\"ord_v\",\"amount\":0,\"currency\":\"\",\"method\":null,"
				       "\"state\":\"voided\""),
			   "%s", doc);
	cr_assert_eq(count_events(f, "payment.voided"), 1);

	/* the charge arriving late is refused; nothing moves */
	lsn = f->sh.lsn;
	struct pay_result late = charge(f, "ord_v", 100, "EUR", PM_SANDBOX_OK);
	expect(late, PAY_DECLINED, "order_compensated");
	cr_assert_str_eq(late.charge_id, v.charge_id);
	late = charge(f, "ord_v", 100, "EUR", PM_SANDBOX_TIMEOUT);
	expect(late, PAY_DECLINED, "order_compensated");
	cr_assert_eq(f->sh.lsn, lsn);
	cr_assert_eq(pay_state_of(&f->sh, "ord_v"), PS_VOIDED);

	/* voiding again is PAY_OK with nothing written */
	struct pay_result again = refund(f, "ord_v");
	expect(again, PAY_OK, "");
	cr_assert_str_eq(again.charge_id, v.charge_id);
	cr_assert_eq(f->sh.lsn, lsn);
	cr_assert_eq(ledger_rows(f), 1);
	cr_assert_eq(count_events(f, "payment.voided"), 1);
	cr_assert_eq(count_events(f, "payment.captured"), 0);
	fixture_free(f);
}

WM_TEST(payment, argument_bounds)
{
	struct fixture *f = fixture_new("pay");
	/* amount 1 .. 10^13 */
	expect(charge(f, "a0", 0, "EUR", PM_SANDBOX_OK), PAY_ERROR, "invalid_argument");
	expect(charge(f, "a0", -1, "EUR", PM_SANDBOX_OK), PAY_ERROR, "invalid_argument");
	expect(charge(f, "a0", INT64_MIN, "EUR", PM_SANDBOX_OK), PAY_ERROR, "invalid_argument");
	expect(charge(f, "a1", 10000000000001LL, "EUR", PM_SANDBOX_OK), PAY_ERROR, "invalid_argument");
	expect(charge(f, "a1", INT64_MAX, "EUR", PM_SANDBOX_OK), PAY_ERROR, "invalid_argument");
	cr_assert_eq(ledger_rows(f), 0);
	expect(charge(f, "a2", 1, "EUR", PM_SANDBOX_OK), PAY_CAPTURED, "");
	struct pay_result max = charge(f, "a3", 10000000000000LL, "EUR", PM_SANDBOX_OK);
	expect(max, PAY_CAPTURED, "");
	cr_assert_not_null(strstr(payment_doc(f, max.charge_id), "\"amount\":100000000000.00,"));
	struct pay_result max3 = charge(f, "a4", 10000000000000LL, "BHD", PM_SANDBOX_OK);
	cr_assert_not_null(strstr(payment_doc(f, max3.charge_id), "\"amount\":10000000000.000,"));

	/* order id: 1 .. ID_MAX_LEN-1 bytes of printable ASCII, no blanks */
	char id[ID_MAX_LEN + 1];
	memset(id, 'o', sizeof(id));
	id[ID_MAX_LEN - 1] = 0;
	struct pay_result at_edge = charge(f, id, 100, "EUR", PM_SANDBOX_OK);
	expect(at_edge, PAY_CAPTURED, "");
	cr_assert_eq(pay_state_of(&f->sh, id), PS_CAPTURED, "an id at the bound");
	id[ID_MAX_LEN - 1] = 'o';
	id[ID_MAX_LEN] = 0;
	expect(charge(f, id, 100, "EUR", PM_SANDBOX_OK), PAY_ERROR, "invalid_argument");
	expect(refund(f, id), PAY_ERROR, "invalid_argument");
	cr_assert_eq(pay_state_of(&f->sh, id), PS_NONE, "one past the bound");
	expect(charge(f, "", 100, "EUR", PM_SANDBOX_OK), PAY_ERROR, "invalid_argument");
	expect(charge(f, NULL, 100, "EUR", PM_SANDBOX_OK), PAY_ERROR, "invalid_argument");
	expect(charge(f, "ord 1", 100, "EUR", PM_SANDBOX_OK), PAY_ERROR, "invalid_argument");
	expect(charge(f, "ord\n1", 100, "EUR", PM_SANDBOX_OK), PAY_ERROR, "invalid_argument");
	expect(charge(f, "ord\xc3\xa9", 100, "EUR", PM_SANDBOX_OK), PAY_ERROR, "invalid_argument");
	expect(charge(f, "o\"\\{}", 100, "EUR", PM_SANDBOX_OK), PAY_CAPTURED, ""); /* JSON-special bytes round-trip */
	cr_assert_eq(pay_state_of(&f->sh, "o\"\\{}"), PS_CAPTURED);
	expect(refund(f, ""), PAY_ERROR, "invalid_argument");
	expect(refund(f, NULL), PAY_ERROR, "invalid_argument");
	cr_assert_eq(pay_state_of(&f->sh, ""), PS_NONE);
	cr_assert_eq(pay_state_of(&f->sh, NULL), PS_NONE);

	/* currency: three upper-case letters with a known minor unit */
	static const char *const bad_cur[] = {"", "EU", "eur", "Eur", "E1R", "XXX", "ZZZ"};
	for (size_t i = 0; i < sizeof(bad_cur) / sizeof(bad_cur[0]); i++)
		expect(charge(f, "c1", 100, bad_cur[i], PM_SANDBOX_OK), PAY_ERROR, "invalid_argument");
	struct pay_request unterminated = req("c1", 100, "EUR", PM_SANDBOX_OK);
	unterminated.currency[3] = 'O';
	struct pay_result out;
	pay_charge(&f->sh, &unterminated, &out);
	expect(out, PAY_ERROR, "invalid_argument");

	/* method < PAY_N_METHOD */
	expect(charge(f, "m1", 100, "EUR", PAY_N_METHOD), PAY_ERROR, "invalid_argument");
	expect(charge(f, "m1", 100, "EUR", 255), PAY_ERROR, "invalid_argument");
	expect(charge(f, "m1", 100, "EUR", PAY_N_METHOD - 1), PAY_TIMEOUT, "provider_timeout");

	/* no request at all */
	memset(&out, 0x5a, sizeof(out));
	pay_charge(&f->sh, NULL, &out);
	expect(out, PAY_ERROR, "invalid_argument");
	cr_assert_str_eq(out.charge_id, "");

	cr_assert_eq(ledger_rows(f), 6, "only the valid charges wrote");
	cr_assert_eq(pay_state_of(&f->sh, "c1"), PS_NONE);
	fixture_free(f);
}

WM_TEST(payment, ledger_unavailable_writes_nothing)
{
	struct fixture *f = fixture_new("pay");
	struct pay_result ok = charge(f, "ord_c", 100, "EUR", PM_SANDBOX_OK);
	expect(ok, PAY_CAPTURED, "");
	/* the WAL refuses the next append (its LSN is not the next one):
	 * the storage failure path, nothing applied */
	f->sh.lsn += 1;
	uint64_t lsn = f->sh.lsn;
	size_t events = table_count(&f->sh.tables[REC_T_EVENT]);
	struct pay_result r = charge(f, "ord_x", 100, "EUR", PM_SANDBOX_OK);
	expect(r, PAY_ERROR, "ledger_unavailable");
	cr_assert_str_eq(r.charge_id, "");
	r = charge(f, "ord_x", 100, "EUR", PM_SANDBOX_TIMEOUT);
	expect(r, PAY_ERROR, "ledger_unavailable");
	r = refund(f, "ord_c");
	expect(r, PAY_ERROR, "ledger_unavailable");
	r = refund(f, "ord_y");
	expect(r, PAY_ERROR, "ledger_unavailable");
	cr_assert_eq(f->sh.lsn, lsn);
	cr_assert_eq(pay_state_of(&f->sh, "ord_x"), PS_NONE);
	cr_assert_eq(pay_state_of(&f->sh, "ord_c"), PS_CAPTURED, "the refund did not happen");
	cr_assert_eq(pay_state_of(&f->sh, "ord_y"), PS_NONE);
	cr_assert_eq(table_count(&f->sh.tables[REC_T_EVENT]), events, "no event either");
	/* reads and idempotent answers need no write */
	expect(charge(f, "ord_c", 100, "EUR", PM_SANDBOX_OK), PAY_CAPTURED, "");
	f->sh.lsn -= 1;

	/* called inside an open transaction: refused, the transaction intact */
	txn_begin(&f->sh);
	r = charge(f, "ord_z", 100, "EUR", PM_SANDBOX_OK);
	expect(r, PAY_ERROR, "ledger_unavailable");
	expect(refund(f, "ord_c"), PAY_ERROR, "ledger_unavailable");
	cr_assert_eq(f->sh.txn_open, 1);
	txn_abort(&f->sh);

	/* the ledger works again */
	expect(charge(f, "ord_x", 100, "EUR", PM_SANDBOX_OK), PAY_CAPTURED, "");
	expect(refund(f, "ord_c"), PAY_OK, "");
	cr_assert_eq(pay_state_of(&f->sh, "ord_c"), PS_REFUNDED);
	fixture_free(f);
}

WM_TEST(payment, table_decode_accepts_the_rows_and_refuses_bad_documents)
{
	struct config cfg;
	config_defaults(&cfg);
	struct table t;
	cr_assert_eq(table_init(&t, &payment_table_ops, &cfg), 0);
	char why[128];
	static const char *const good[] = {
		"{\"id\":\"pay_A\",\"payment_id\":\"pay_A\",\"order_id\":\"o1\",\"amount\":12.30,\"currency\":\"EUR\","
		"\"method\":\"sandbox_ok\",\"state\":\"captured\",\"created_at\":\"t\",\"updated_at\":\"t\"}",
		/* extra zero digits are exact */
		"{\"id\":\"pay_A\",\"payment_id\":\"pay_A\",\"order_id\":\"o1\",\"amount\":12.300,\"currency\":\"EUR\","
		"\"method\":\"sandbox_ok\",\"state\":\"refunded\",\"created_at\":\"t\",\"updated_at\":\"t\"}",
		"{\"id\":\"pay_A\",\"payment_id\":\"pay_A\",\"order_id\":\"o1\",\"amount\":0,\"currency\":\"\","
		"\"method\":null,\"state\":\"voided\",\"created_at\":\"t\",\"updated_at\":\"t\"}",
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		cr_assert_eq(table_put(&t, "pay_A", 5, good[i], strlen(good[i]), i + 1, why), 0, "%zu: %s", i, why);
	cr_assert_eq(table_count(&t), 1, "one row per payment id, replaced");
	static const char *const bad[] = {
		/* sub-minor-unit amount */
		"{\"id\":\"pay_B\",\"payment_id\":\"pay_B\",\"order_id\":\"o2\",\"amount\":12.305,\"currency\":\"EUR\","
		"\"method\":\"sandbox_ok\",\"state\":\"captured\",\"created_at\":\"t\",\"updated_at\":\"t\"}",
		/* amount 0 on a capture, over the bound, as a string */
		"{\"id\":\"pay_B\",\"payment_id\":\"pay_B\",\"order_id\":\"o2\",\"amount\":0,\"currency\":\"EUR\","
		"\"method\":\"sandbox_ok\",\"state\":\"captured\",\"created_at\":\"t\",\"updated_at\":\"t\"}",
		"{\"id\":\"pay_B\",\"payment_id\":\"pay_B\",\"order_id\":\"o2\",\"amount\":100000000000.01,\"currency\":\"EUR\","
		"\"method\":\"sandbox_ok\",\"state\":\"captured\",\"created_at\":\"t\",\"updated_at\":\"t\"}",
		"{\"id\":\"pay_B\",\"payment_id\":\"pay_B\",\"order_id\":\"o2\",\"amount\":\"1\",\"currency\":\"EUR\","
		"\"method\":\"sandbox_ok\",\"state\":\"captured\",\"created_at\":\"t\",\"updated_at\":\"t\"}",
		/* unknown currency, state, method; a void with money or a method */
		"{\"id\":\"pay_B\",\"payment_id\":\"pay_B\",\"order_id\":\"o2\",\"amount\":1,\"currency\":\"XXX\","
		"\"method\":\"sandbox_ok\",\"state\":\"captured\",\"created_at\":\"t\",\"updated_at\":\"t\"}",
		"{\"id\":\"pay_B\",\"payment_id\":\"pay_B\",\"order_id\":\"o2\",\"amount\":1,\"currency\":\"EUR\","
		"\"method\":\"sandbox_ok\",\"state\":\"none\",\"created_at\":\"t\",\"updated_at\":\"t\"}",
		"{\"id\":\"pay_B\",\"payment_id\":\"pay_B\",\"order_id\":\"o2\",\"amount\":1,\"currency\":\"EUR\","
		"\"method\":\"card\",\"state\":\"captured\",\"created_at\":\"t\",\"updated_at\":\"t\"}",
		"{\"id\":\"pay_B\",\"payment_id\":\"pay_B\",\"order_id\":\"o2\",\"amount\":1,\"currency\":\"EUR\","
		"\"method\":null,\"state\":\"captured\",\"created_at\":\"t\",\"updated_at\":\"t\"}",
		"{\"id\":\"pay_B\",\"payment_id\":\"pay_B\",\"order_id\":\"o2\",\"amount\":1,\"currency\":\"\","
		"\"method\":null,\"state\":\"voided\",\"created_at\":\"t\",\"updated_at\":\"t\"}",
		"{\"id\":\"pay_B\",\"payment_id\":\"pay_B\",\"order_id\":\"o2\",\"amount\":0,\"currency\":\"\","
		"\"method\":\"sandbox_ok\",\"state\":\"voided\",\"created_at\":\"t\",\"updated_at\":\"t\"}",
		/* order id missing, empty, too long, with a blank; payment id not the row's */
		"{\"id\":\"pay_B\",\"payment_id\":\"pay_B\",\"amount\":1,\"currency\":\"EUR\","
		"\"method\":\"sandbox_ok\",\"state\":\"captured\",\"created_at\":\"t\",\"updated_at\":\"t\"}",
		"{\"id\":\"pay_B\",\"payment_id\":\"pay_B\",\"order_id\":\"\",\"amount\":1,\"currency\":\"EUR\","
		"\"method\":\"sandbox_ok\",\"state\":\"captured\",\"created_at\":\"t\",\"updated_at\":\"t\"}",
		"{\"id\":\"pay_B\",\"payment_id\":\"pay_B\",\"order_id\":\"0123456789012345678901234567890123456789\","
		"\"amount\":1,\"currency\":\"EUR\",\"method\":\"sandbox_ok\",\"state\":\"captured\",\"created_at\":\"t\","
		"\"updated_at\":\"t\"}",
		"{\"id\":\"pay_B\",\"payment_id\":\"pay_B\",\"order_id\":\"o 2\",\"amount\":1,\"currency\":\"EUR\","
		"\"method\":\"sandbox_ok\",\"state\":\"captured\",\"created_at\":\"t\",\"updated_at\":\"t\"}",
		"{\"id\":\"pay_B\",\"payment_id\":\"pay_C\",\"order_id\":\"o2\",\"amount\":1,\"currency\":\"EUR\","
		"\"method\":\"sandbox_ok\",\"state\":\"captured\",\"created_at\":\"t\",\"updated_at\":\"t\"}",
		/* no created_at */
		"{\"id\":\"pay_B\",\"payment_id\":\"pay_B\",\"order_id\":\"o2\",\"amount\":1,\"currency\":\"EUR\","
		"\"method\":\"sandbox_ok\",\"state\":\"captured\",\"updated_at\":\"t\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(table_put(&t, "pay_B", 5, bad[i], strlen(bad[i]), 10 + i, why), -1, "accepted bad[%zu]", i);
		cr_assert_null(table_get(&t, "pay_B", 5));
	}
	cr_assert_eq(table_count(&t), 1);
	table_fini(&t);
}

WM_TEST(payment, ledger_rebuilt_from_the_wal_and_a_snapshot)
{
	struct fixture *f = fixture_new("pay");
	struct pay_result c = charge(f, "ord_c", 12345, "EUR", PM_SANDBOX_OK);
	struct pay_result r = charge(f, "ord_r", 500, "GBP", PM_SANDBOX_OK);
	expect(refund(f, "ord_r"), PAY_OK, "");
	struct pay_result v = refund(f, "ord_v");
	struct pay_result t = charge(f, "ord_t", 7, "JPY", PM_SANDBOX_TIMEOUT);
	char doc_c[1024];
	snprintf(doc_c, sizeof(doc_c), "%s", payment_doc(f, c.charge_id));

	/* reopen: WAL replay only */
	shard_close(&f->sh);
	fx_open(f);
	cr_assert_eq(ledger_rows(f), 4);
	cr_assert_eq(pay_state_of(&f->sh, "ord_c"), PS_CAPTURED);
	cr_assert_eq(pay_state_of(&f->sh, "ord_r"), PS_REFUNDED);
	cr_assert_eq(pay_state_of(&f->sh, "ord_v"), PS_VOIDED);
	cr_assert_eq(pay_state_of(&f->sh, "ord_t"), PS_CAPTURED);
	cr_assert_str_eq(payment_doc(f, c.charge_id), doc_c, "the same document");
	/* the order-id index is rebuilt: idempotency and refusals hold */
	uint64_t lsn = f->sh.lsn;
	struct pay_result again = charge(f, "ord_c", 12345, "EUR", PM_SANDBOX_OK);
	expect(again, PAY_CAPTURED, "");
	cr_assert_str_eq(again.charge_id, c.charge_id);
	again = charge(f, "ord_t", 7, "JPY", PM_SANDBOX_OK);
	cr_assert_str_eq(again.charge_id, t.charge_id);
	expect(charge(f, "ord_r", 500, "GBP", PM_SANDBOX_OK), PAY_DECLINED, "order_compensated");
	expect(charge(f, "ord_v", 500, "GBP", PM_SANDBOX_OK), PAY_DECLINED, "order_compensated");
	again = refund(f, "ord_v");
	cr_assert_str_eq(again.charge_id, v.charge_id);
	again = refund(f, "ord_r");
	cr_assert_str_eq(again.charge_id, r.charge_id);
	cr_assert_eq(f->sh.lsn, lsn, "nothing written after the reload");

	/* a snapshot, one more change on top, reopen: snapshot + WAL tail */
	char err[256];
	cr_assert_eq(shard_snapshot_write(&f->sh, err, sizeof(err)), 0, "%s", err);
	expect(refund(f, "ord_c"), PAY_OK, "");
	struct pay_result n = charge(f, "ord_n", 1, "EUR", PM_SANDBOX_OK);
	shard_close(&f->sh);
	fx_open(f);
	cr_assert_eq(ledger_rows(f), 5);
	cr_assert_eq(pay_state_of(&f->sh, "ord_c"), PS_REFUNDED, "the change after the snapshot");
	cr_assert_eq(pay_state_of(&f->sh, "ord_n"), PS_CAPTURED);
	cr_assert_eq(pay_state_of(&f->sh, "ord_v"), PS_VOIDED);
	cr_assert_str_eq(charge(f, "ord_n", 1, "EUR", PM_SANDBOX_OK).charge_id, n.charge_id);
	/* new ids still sort after the recovered ones */
	struct pay_result later = charge(f, "ord_later", 1, "EUR", PM_SANDBOX_OK);
	cr_assert_gt(strcmp(later.charge_id, n.charge_id), 0);
	fixture_free(f);
}
