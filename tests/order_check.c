/* order_check.c -- see order_check.h. */
#include "tests/order_check.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *ow_list_all(struct oworld *x, const char *path)
{
	json_t *all = json_array();
	char p[512], cursor[256] = "";
	for (int page = 0; page < 1000; page++) {
		snprintf(p, sizeof(p), "%s%s%s", path, cursor[0] ? "&cursor=" : "", cursor);
		json_t *j = ow_get(x, p);
		json_t *data = json_object_get(j, "data");
		cr_assert(json_is_array(data), "GET %s: no data[]", p);
		json_array_extend(all, data);
		const char *next = tc_jstr(j, "next_cursor");
		int more = json_is_true(json_object_get(j, "has_more"));
		cr_assert(!more || next, "GET %s: has_more without next_cursor", p);
		if (next)
			snprintf(cursor, sizeof(cursor), "%s", next);
		json_decref(j);
		if (!more)
			return all;
	}
	cr_assert_fail("GET %s: more than 1000 pages", path);
	return all;
}

static const char *payload_str(json_t *ev, const char *k)
{
	return tc_jstr(json_object_get(ev, "payload"), k);
}

size_t ow_order_events(json_t *events, const char *order_id, const char **types, size_t max)
{
	char hold_prefix[128];
	snprintf(hold_prefix, sizeof(hold_prefix), "%s.H", order_id);
	size_t n = 0, i;
	json_t *ev;
	json_array_foreach(events, i, ev)
	{
		const char *type = tc_jstr(ev, "type");
		const char *oid = payload_str(ev, "order_id"), *hid = payload_str(ev, "id");
		int mine = (!strncmp(type, "order.", 6) && oid && !strcmp(oid, order_id)) ||
			   (!strcmp(type, "stock.reserved") && hid && !strncmp(hid, hold_prefix, strlen(hold_prefix)));
		if (mine) {
			cr_assert_lt(n, max, "order %s has more than %zu events", order_id, max);
			types[n++] = type;
		}
	}
	return n;
}

size_t ow_payment_events(json_t *events, const char *order_id, const char **types, size_t max)
{
	size_t n = 0, i;
	json_t *ev;
	json_array_foreach(events, i, ev)
	{
		const char *type = tc_jstr(ev, "type"), *oid = payload_str(ev, "order_id");
		if (!strncmp(type, "payment.", 8) && oid && !strcmp(oid, order_id)) {
			cr_assert_lt(n, max, "order %s has more than %zu payment events", order_id, max);
			types[n++] = type;
		}
	}
	return n;
}

static int status_in(const char *s, const char *const *set)
{
	for (; *set; set++)
		if (!strcmp(s, *set))
			return 1;
	return 0;
}

static json_t *by_member(json_t *arr, const char *k, const char *v)
{
	size_t i;
	json_t *e;
	json_array_foreach(arr, i, e)
	{
		const char *s = tc_jstr(e, k);
		if (s && !strcmp(s, v))
			return e;
	}
	return NULL;
}

/* The order's event sequence against the spec's, given its status and legs. */
static void check_sequence(json_t *events, json_t *o)
{
	static const char *const ok_head[] = {"order.placed", "order.paid", "order.confirmed", "order.sourced"};
	const char *id = tc_jstr(o, "id"), *st = tc_jstr(o, "status");
	const char *types[64];
	size_t n = ow_order_events(events, id, types, 64);
	size_t legs = json_array_size(json_object_get(o, "fulfillments"));
	if (!strcmp(st, "reserved")) {
		cr_assert_eq(n, 4 + legs, "reserved order %s: %zu events, want %zu", id, n, 4 + legs);
		for (size_t i = 0; i < n; i++)
			cr_assert_str_eq(types[i], i < 4 ? ok_head[i] : "stock.reserved", "order %s event %zu", id, i);
	} else if (!strcmp(st, "failed")) {
		cr_assert(n == 2 || n == 3, "failed order %s: %zu events", id, n);
		cr_assert_str_eq(types[0], "order.placed", "order %s", id);
		if (n == 3)
			cr_assert_str_eq(types[1], "order.paid", "order %s", id);
		cr_assert_str_eq(types[n - 1], "order.failed", "order %s", id);
	} else {
		cr_assert_fail("order %s: unexpected status %s", id, st);
	}
}

void ow_check_invariants(struct oworld *x)
{
	static const char *const live[] = {"reserved", "fulfilled", "in_transit", "delivered", "settled", NULL};
	/* a live order's legs at rest; those still holding their allocation */
	static const char *const leg_live[] = {"reserved",  "picked",	  "packed",    "fulfilled",
					       "picked_up", "in_transit", "delivered", NULL};
	static const char *const leg_held[] = {"reserved", "picked", "packed", NULL};
	static const char *const dead[] = {"failed", "cancelled", NULL};
	json_t *orders = ow_list_all(x, "/v1/orders?page_size=200");
	json_t *levels = ow_list_all(x, "/v1/inventory?page_size=200");
	json_t *ledger = ow_list_all(x, "/v1/admin/payments?page_size=200");
	json_t *events = ow_list_all(x, "/v1/events?page_size=200");
	json_t *alloc = json_object(); /* level id -> units allocated to live orders */
	size_t i, j;
	json_t *o, *leg, *lv, *pay;

	json_array_foreach(orders, i, o)
	{
		const char *id = tc_jstr(o, "id"), *st = tc_jstr(o, "status");
		json_t *saga = json_object_get(o, "saga"), *payment = json_object_get(o, "payment");
		int comp = json_is_true(json_object_get(saga, "compensated"));
		cr_assert(status_in(st, live) || (status_in(st, dead) && comp),
			  "order %s is not at rest: %s, compensated %d", id, st, comp);
		json_array_foreach(json_object_get(o, "fulfillments"), j, leg)
		{
			const char *ls = tc_jstr(leg, "status");
			if (status_in(st, dead))
				cr_assert_str_eq(ls, "released", "order %s (%s) leg %zu", id, st, j);
			else
				cr_assert(status_in(ls, leg_live), "order %s (%s) leg %zu: %s", id, st, j, ls);
			if (status_in(ls, leg_held)) {
				const char *lid = tc_jstr(leg, "level_id");
				json_int_t had = json_integer_value(json_object_get(alloc, lid));
				json_int_t qty = json_integer_value(json_object_get(leg, "qty"));
				json_object_set_new(alloc, lid, json_integer(had + qty));
			}
		}
		/* the ledger, and the order's copy of it */
		char path[160];
		snprintf(path, sizeof(path), "/v1/admin/payments/%s", id);
		int code;
		json_t *row = tc_call(x->port, "GET", path, NULL, NULL, &code);
		cr_assert_eq(code, 200, "order %s (%s) has no ledger row", id, st);
		const char *ps = tc_jstr(row, "state");
		if (status_in(st, dead))
			cr_assert(!strcmp(ps, "refunded") || !strcmp(ps, "voided"), "%s order %s: payment %s", st, id,
				  ps);
		else
			cr_assert_str_eq(ps, "captured", "%s order %s: payment", st, id);
		cr_assert_str_eq(tc_jstr(payment, "state"), ps, "order %s: payment.state vs the ledger", id);
		json_decref(row);
		check_sequence(events, o);
	}

	/* nothing held without a live order */
	json_array_foreach(levels, i, lv)
	{
		const char *lid = tc_jstr(lv, "id");
		long long reserved = json_integer_value(json_object_get(lv, "reserved"));
		long long allocated = json_integer_value(json_object_get(lv, "allocated"));
		long long want = json_integer_value(json_object_get(alloc, lid));
		cr_assert_eq(reserved, 0, "level %s: %lld units prepared with every order at rest", lid, reserved);
		cr_assert_eq(allocated, want, "level %s: %lld allocated, live orders hold %lld", lid, allocated, want);
	}
	/* every level a live order draws on was listed */
	const char *lid;
	json_t *v;
	json_object_foreach(alloc, lid, v) cr_assert_not_null(by_member(levels, "id", lid), "level %s not listed", lid);

	/* no captured money without a live order; one ledger row per order */
	json_array_foreach(ledger, i, pay)
	{
		const char *oid = tc_jstr(pay, "order_id"), *ps = tc_jstr(pay, "state");
		for (j = 0; j < i; j++)
			cr_assert_str_neq(tc_jstr(json_array_get(ledger, j), "order_id"), oid, "two ledger rows for %s",
					  oid);
		json_t *ord = by_member(orders, "id", oid);
		cr_assert_not_null(ord, "ledger row %s for no order (%s)", tc_jstr(pay, "payment_id"), oid);
		if (!strcmp(ps, "captured"))
			cr_assert(status_in(tc_jstr(ord, "status"), live), "captured payment of a %s order %s",
				  tc_jstr(ord, "status"), oid);
	}
	json_decref(alloc);
	json_decref(events);
	json_decref(ledger);
	json_decref(levels);
	json_decref(orders);
}
