/*
 * test_consumer_token.c -- the consumer's side of an order (spec 3.1
 * "consumer or partner cancels"; issue 16 item 4, returns "by a
 * consumer-side request"): the per-order token the seller fetches and
 * hands to its customer (engine/edge/consumer_token.h), what it opens
 * (the order's read, cancel and returns), what it does not (every other
 * route, every other order), the consumer's view, and a restart.
 *
 * Unit tests of the token itself first (no shard), then integration tests
 * on the order world (order_world.h; through a router in the cluster run,
 * where the router checks the token at its edge).
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/edge/consumer_token.h"
#include "tests/harness.h"
#include "tests/order_world.h"
#include "tests/wm_test.h"

/* ---- the token, unit -------------------------------------------------------- */

WM_TEST(consumer_token, a_token_is_of_one_order_and_one_key)
{
	uint8_t k1[CT_KEY_LEN], k2[CT_KEY_LEN];
	memset(k1, 7, sizeof(k1));
	memset(k2, 7, sizeof(k2));
	k2[31] ^= 1;
	char t[CT_TOKEN_LEN + 1], u[CT_TOKEN_LEN + 1], v[CT_TOKEN_LEN + 1];
	cr_assert_eq(ct_make(k1, "ord_DE_abc", t), 0);
	cr_assert_eq(strlen(t), (size_t)CT_TOKEN_LEN);
	cr_assert_eq(strncmp(t, "wm_ct_", 6), 0);
	cr_assert(ct_is_token(t, strlen(t)));
	cr_assert_not(ct_is_token("wm_sk_abc", 9));
	cr_assert_eq(ct_make(k1, "ord_DE_abc", u), 0);
	cr_assert_str_eq(t, u, "the same order and key make the same token");
	cr_assert_eq(ct_make(k1, "ord_DE_abd", v), 0);
	cr_assert_str_neq(t, v, "another order, another token");
	cr_assert(ct_check(k1, "ord_DE_abc", t, CT_TOKEN_LEN));
	cr_assert_not(ct_check(k1, "ord_DE_abd", t, CT_TOKEN_LEN), "the token of another order");
	cr_assert_not(ct_check(k2, "ord_DE_abc", t, CT_TOKEN_LEN), "under another key");
	/* length at and past its edge: one short, one long */
	cr_assert_not(ct_check(k1, "ord_DE_abc", t, CT_TOKEN_LEN - 1));
	char longer[CT_TOKEN_LEN + 2];
	snprintf(longer, sizeof(longer), "%sA", t);
	cr_assert_not(ct_check(k1, "ord_DE_abc", longer, CT_TOKEN_LEN + 1));
	/* every single-character change of the MAC part is refused */
	for (size_t i = CT_PREFIX_LEN; i < CT_TOKEN_LEN; i++) {
		char f[CT_TOKEN_LEN + 1];
		memcpy(f, t, sizeof(f));
		f[i] = f[i] == 'A' ? 'B' : 'A';
		cr_assert_not(ct_check(k1, "ord_DE_abc", f, CT_TOKEN_LEN), "changed at %zu", i);
	}
	/* an order id past the bound makes no token */
	char big[80];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	cr_assert_eq(ct_make(k1, big, u), -1);
	cr_assert_not(ct_check(k1, big, t, CT_TOKEN_LEN));
}

WM_TEST(consumer_token, the_key_file_is_created_private_and_kept)
{
	char dir[] = "/tmp/wm-ct-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	uint8_t a[CT_KEY_LEN], b[CT_KEY_LEN];
	char err[256] = "";
	cr_assert_eq(ct_key_load_or_create(dir, a, err, sizeof(err)), 0, "%s", err);
	char path[400];
	snprintf(path, sizeof(path), "%s/%s", dir, CT_KEY_FILE);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	cr_assert_eq(st.st_size, CT_KEY_LEN);
	cr_assert_eq(ct_key_load_or_create(dir, b, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(memcmp(a, b, CT_KEY_LEN), 0, "a second start reads the same key");
	/* a file of the wrong size is refused, never replaced */
	int fd = open(path, O_WRONLY | O_APPEND);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "x", 1), 1);
	close(fd);
	cr_assert_eq(ct_key_load_or_create(dir, b, err, sizeof(err)), -1);
	cr_assert_not_null(strstr(err, "not a 32-byte key"), "%s", err);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_size, CT_KEY_LEN + 1, "the bad file is left for the operator");
	rm_rf(dir);
}

/* ---- integration ----------------------------------------------------------- */

static const char *dump(json_t *j)
{
	static char b[16384];
	size_t n = json_dumpb(j, b, sizeof(b) - 1, JSON_COMPACT);
	b[n < sizeof(b) - 1 ? n : sizeof(b) - 1] = 0;
	return b;
}

/* A reserved order of qty units: its id into id (64 bytes). */
static void placed(struct oworld *x, int qty, char *id)
{
	int st;
	json_t *o = ow_order(x, qty, NULL, NULL, &st);
	cr_assert_eq(st, 201, "%s", dump(o));
	cr_assert_str_eq(tc_jstr(o, "status"), "reserved");
	snprintf(id, 64, "%s", tc_jstr(o, "id"));
	json_decref(o);
}

/* The order's consumer token as its seller fetches it (key: the seller's,
 * NULL the operator's), into tok (CT_TOKEN_LEN + 1 bytes). */
static void token_of(struct oworld *x, const char *key, const char *id, char *tok)
{
	char path[160];
	snprintf(path, sizeof(path), "/v1/orders/%s/consumer-token", id);
	json_t *t = tc_expect(x->port, "GET", path, key, NULL, 200);
	cr_assert_str_eq(tc_jstr(t, "order_id"), id);
	const char *s = tc_jstr(t, "token");
	cr_assert_eq(strlen(s), (size_t)CT_TOKEN_LEN, "%s", dump(t));
	snprintf(tok, CT_TOKEN_LEN + 1, "%s", s);
	json_decref(t);
}

/* method path with the bearer tok: the problem's code, which must come with want. */
static void refused(struct oworld *x, const char *method, const char *path, const char *tok, const char *body,
		    int want, const char *code)
{
	json_t *e = tc_expect(x->port, method, path, tok, body, want);
	cr_assert_str_eq(tc_jstr(e, "code"), code, "%s %s: %s", method, path, dump(e));
	json_decref(e);
}

WM_TEST(consumer_token, the_seller_fetches_it_and_it_opens_only_its_order)
{
	struct oworld x;
	ow_start(&x, NULL, 24, 0);
	char a[64], b[64], ta[CT_TOKEN_LEN + 1], ta2[CT_TOKEN_LEN + 1], tb[CT_TOKEN_LEN + 1], path[200];
	placed(&x, 2, a);
	placed(&x, 3, b);
	token_of(&x, x.ksel, a, ta);
	token_of(&x, NULL, a, ta2); /* the platform gets the same one */
	cr_assert_str_eq(ta, ta2);
	token_of(&x, x.ksel, b, tb);
	cr_assert_str_neq(ta, tb);

	/* not cached anywhere, and it says what it opens */
	struct http_resp r;
	char hdr[200], cc[64];
	snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s\r\n", x.ksel);
	snprintf(path, sizeof(path), "/v1/orders/%s/consumer-token", a);
	cr_assert_eq(http_do(x.port, "GET", path, hdr, NULL, &r), 0);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(http_header(&r, "Cache-Control", cc, sizeof(cc)), (int)strlen("no-store"));
	cr_assert_str_eq(cc, "no-store");
	cr_assert_not_null(strstr(r.body, "\"POST /v1/orders/{id}/cancel\""), "%s", r.body);
	cr_assert_not_null(strstr(r.body, "\"POST /v1/orders/{id}/returns\""), "%s", r.body);
	cr_assert_null(strstr(r.body, "sourcing"), "%s", r.body);
	http_resp_free(&r);

	/* only the seller and the platform fetch it: the originator is a party (403) */
	refused(&x, "GET", path, x.kest, NULL, 403, "not_order_seller");

	/* the consumer reads its order: its view */
	snprintf(path, sizeof(path), "/v1/orders/%s", a);
	json_t *o = tc_expect(x.port, "GET", path, ta, NULL, 200);
	cr_assert_str_eq(tc_jstr(o, "id"), a);
	cr_assert_str_eq(tc_jstr(o, "status"), "reserved");
	cr_assert_not_null(json_object_get(o, "financial_breakdown"), "%s", dump(o));
	cr_assert_not_null(tc_jstr(json_object_get(o, "consumer"), "email"), "its own e-mail");
	static const char *const hidden[] = {"sourcing", "settlement_split", "saga", "idempotency", "reference_data",
					     "channel_id", "compliance", NULL};
	for (int i = 0; hidden[i]; i++)
		cr_assert_null(json_object_get(o, hidden[i]), "%s shown to the consumer: %s", hidden[i], dump(o));
	json_t *l0 = json_array_get(json_object_get(o, "lines"), 0), *g0 = json_array_get(json_object_get(o, "fulfillments"), 0);
	cr_assert_not_null(json_object_get(l0, "qty"));
	cr_assert_null(json_object_get(l0, "p2b"), "the B2B price: %s", dump(l0));
	cr_assert_null(json_object_get(l0, "sources"));
	cr_assert_not_null(json_object_get(g0, "leg_id"));
	cr_assert_null(json_object_get(g0, "hold_id"), "%s", dump(g0));
	cr_assert_null(json_object_get(g0, "level_id"));
	cr_assert_null(json_object_get(g0, "p2b"));
	json_decref(o);

	/* another order's token, a forged one and a short one: 401 unknown_key,
	 * the same answer (which order exists is not told) */
	refused(&x, "GET", path, tb, NULL, 401, "unknown_key");
	char forged[CT_TOKEN_LEN + 1];
	memcpy(forged, ta, sizeof(forged));
	forged[10] = forged[10] == 'x' ? 'y' : 'x';
	refused(&x, "GET", path, forged, NULL, 401, "unknown_key");
	refused(&x, "GET", path, "wm_ct_short", NULL, 401, "unknown_key");
	snprintf(path, sizeof(path), "/v1/orders/ord_DE_nosuchorder0000/cancel");
	refused(&x, "POST", path, ta, "{}", 401, "unknown_key");

	/* every other route: 403, whatever order it names */
	char p2[200];
	snprintf(p2, sizeof(p2), "/v1/orders/%s/sourcing", a);
	refused(&x, "GET", p2, ta, NULL, 403, "consumer_token_not_allowed");
	snprintf(p2, sizeof(p2), "/v1/orders/%s/consumer-token", a);
	refused(&x, "GET", p2, ta, NULL, 403, "consumer_token_not_allowed");
	snprintf(p2, sizeof(p2), "/v1/orders/%s/fulfillments/%s.L1/ship", a, a);
	refused(&x, "POST", p2, ta, "{}", 403, "consumer_token_not_allowed");
	refused(&x, "GET", "/v1/orders", ta, NULL, 403, "consumer_token_not_allowed");
	refused(&x, "GET", "/v1/wines", ta, NULL, 403, "consumer_token_not_allowed");
	refused(&x, "POST", "/v1/orders", ta, "{}", 403, "consumer_token_not_allowed");
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

WM_TEST(consumer_token, the_consumer_cancels_its_order)
{
	struct oworld x;
	ow_start(&x, NULL, 24, 0);
	char a[64], ta[CT_TOKEN_LEN + 1], path[200];
	placed(&x, 4, a);
	token_of(&x, x.ksel, a, ta);
	long long reserved, allocated, on_hand;
	ow_level(&x, x.lv_est, &reserved, &allocated, &on_hand);
	cr_assert_eq(allocated, 4);
	snprintf(path, sizeof(path), "/v1/orders/%s/cancel", a);
	json_t *o = tc_expect(x.port, "POST", path, ta, "{}", 200);
	cr_assert_str_eq(tc_jstr(o, "status"), "cancelled", "%s", dump(o));
	cr_assert_null(json_object_get(o, "settlement_split"), "the answer is the consumer's view");
	json_decref(o);
	ow_level_wait(&x, x.lv_est, 0, 0, &reserved, &allocated);
	cr_assert_eq(allocated, 0, "the cancel released the hold");
	/* the event names who cancelled */
	json_t *ev = tc_expect(x.port, "GET", "/v1/events?type=order.cancelled", NULL, NULL, 200);
	json_t *e0 = json_array_get(json_object_get(ev, "data"), 0);
	cr_assert_not_null(e0, "%s", dump(ev));
	cr_assert_str_eq(tc_jstr(json_object_get(json_object_get(e0, "payload"), "detail"), "cancelled_by"), "consumer", "%s",
			 dump(e0));
	json_decref(ev);
	/* a second cancel: no longer cancellable */
	refused(&x, "POST", path, ta, "{}", 409, "invalid_order_state");
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

WM_TEST(consumer_token, the_consumer_asks_for_a_refund_after_delivery_and_a_restart)
{
	struct oworld x;
	ow_start(&x, NULL, 24, 0);
	char a[64], ta[CT_TOKEN_LEN + 1], tb[CT_TOKEN_LEN + 1], path[200];
	placed(&x, 2, a);
	token_of(&x, x.ksel, a, ta);
	snprintf(path, sizeof(path), "/v1/orders/%s/returns", a);
	/* not delivered yet */
	refused(&x, "POST", path, ta, "{\"kind\":\"refund\",\"reason\":\"damaged\"}", 409, "invalid_order_state");
	ow_deliver(&x, a, ~0u, 60);
	/* the token outlives a kill -9: the key is the data directory's (or
	 * the cluster secret's) */
	wm_kill9(&x.p);
	ow_restart(&x, NULL);
	token_of(&x, x.ksel, a, tb);
	cr_assert_str_eq(ta, tb, "the same token after a restart");
	json_t *r = tc_expect(x.port, "POST", path, ta, "{\"kind\":\"refund\",\"reason\":\"damaged\"}", 201);
	cr_assert_str_eq(tc_jstr(r, "requested_by"), "consumer", "%s", dump(r));
	cr_assert_str_eq(tc_jstr(r, "kind"), "refund");
	json_decref(r);
	json_t *l = tc_expect(x.port, "GET", path, ta, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(l, "data")), 1, "%s", dump(l));
	json_decref(l);
	char p2[200];
	snprintf(p2, sizeof(p2), "/v1/orders/%s", a);
	json_t *o = tc_expect(x.port, "GET", p2, ta, NULL, 200);
	cr_assert_str_eq(tc_jstr(o, "status"), "refunded", "%s", dump(o));
	json_decref(o);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}
