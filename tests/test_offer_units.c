/*
 * test_offer_units.c -- the offers' candidate-stream merge in-process: a
 * k-way merge of ordered-index streams (each key = prefix + offer id) must
 * yield every id once, in id order, strictly after the cursor, never a key
 * of another prefix, and refuse a stream past OFFER_MAX_STREAMS.  And
 * offer_wine_any, which prefetches rows ahead of the one it hands over:
 * every offer of the wine once, in id order, none of another wine, at the
 * counts around its look-ahead and past a leaf.
 */
#include <stdio.h>
#include <string.h>

#include "engine/storage/shard.h"
#include "engine/supply/offer.h"
#include "tests/shard_fixture.h"
#include "tests/wm_test.h"

/* ---- the merge, in-process --------------------------------------------------- */

WM_TEST(offer_units, merge_yields_each_id_once_in_order_after_the_cursor)
{
	struct oidx a, b, c;
	oidx_init(&a);
	oidx_init(&b);
	oidx_init(&c);
	static struct row rows[10];
	static char ids[10][16];
	for (int i = 0; i < 10; i++) {
		snprintf(ids[i], sizeof(ids[i]), "ofr_%d", i);
		rows[i].id = ids[i];
		rows[i].id_len = (uint16_t)strlen(ids[i]);
	}
	/* a: "P\0" + {0,3,5,9}; b: bare {1,3,4,9}; c: "DE" + {2,5,8}, "FR" + {0,1} */
	uint8_t k[64];
	int in_a[] = {0, 3, 5, 9}, in_b[] = {1, 3, 4, 9}, in_c[] = {2, 5, 8};
	for (size_t i = 0; i < 4; i++) {
		memcpy(k, "P\0", 2);
		memcpy(k + 2, ids[in_a[i]], rows[in_a[i]].id_len);
		cr_assert_eq(oidx_put(&a, k, 2u + rows[in_a[i]].id_len, &rows[in_a[i]]), 0);
		cr_assert_eq(oidx_put(&b, ids[in_b[i]], rows[in_b[i]].id_len, &rows[in_b[i]]), 0);
	}
	memcpy(k, "Q\0ofr_7", 7); /* another prefix in a: never yielded */
	oidx_put(&a, k, 7, &rows[7]);
	for (size_t i = 0; i < 3; i++) {
		memcpy(k, "DE", 2);
		memcpy(k + 2, ids[in_c[i]], rows[in_c[i]].id_len);
		oidx_put(&c, k, 2u + rows[in_c[i]].id_len, &rows[in_c[i]]);
	}
	memcpy(k, "FRofr_0", 7);
	oidx_put(&c, k, 7, &rows[0]);
	struct offer_merge m;
	const struct row *r;
	const char *id;
	uint32_t il;
	for (int pass = 0; pass < 2; pass++) {
		const char *after = pass ? "ofr_3" : NULL;
		offer_merge_init(&m);
		cr_assert_eq(offer_merge_add(&m, &a, "P\0", 2, after, after ? 5 : 0), 0);
		cr_assert_eq(offer_merge_add(&m, &b, "", 0, after, after ? 5 : 0), 0);
		cr_assert_eq(offer_merge_add(&m, &c, "DE", 2, after, after ? 5 : 0), 0);
		cr_assert_eq(offer_merge_add(&m, &c, "FR", 2, after, after ? 5 : 0), 0);
		cr_assert_eq(offer_merge_add(&m, &c, "XX", 2, NULL, 0), -1, "OFFER_MAX_STREAMS is the bound");
		static const int want0[] = {0, 1, 2, 3, 4, 5, 8, 9}, want1[] = {4, 5, 8, 9};
		const int *want = pass ? want1 : want0;
		size_t nw = pass ? 4 : 8, n = 0;
		while (offer_merge_next(&m, &r, &id, &il)) {
			cr_assert_lt(n, nw);
			cr_assert_str_eq(id, ids[want[n]]);
			cr_assert_eq(r, &rows[want[n]]);
			n++;
		}
		cr_assert_eq(n, nw);
	}
	/* empty merge */
	offer_merge_init(&m);
	cr_assert_eq(offer_merge_next(&m, &r, &id, &il), 0);
	oidx_free(&a);
	oidx_free(&b);
	oidx_free(&c);
}

/* ---- offer_wine_any ---------------------------------------------------------- */

#define WA_WINES 8
/* offers per wine: none, one, around the look-ahead, and more than a leaf
 * of the by-wine index holds (at most 121 entries, index.c) */
static const int wa_count[WA_WINES] = {0, 1, OFFER_ROW_PREFETCH_AHEAD - 1, OFFER_ROW_PREFETCH_AHEAD,
				       OFFER_ROW_PREFETCH_AHEAD + 1, 2 * OFFER_ROW_PREFETCH_AHEAD + 3, 130, 2};

struct wa_seen {
	char ids[200][32];
	int n, stop_at;
};

static int wa_cb(const struct offer *o, void *arg)
{
	struct wa_seen *s = arg;
	cr_assert_lt(s->n, 200);
	snprintf(s->ids[s->n], sizeof(s->ids[0]), "%s", o->row.id);
	s->n++;
	return s->n == s->stop_at ? 7 : 0;
}

WM_TEST(offer_units, wine_any_yields_each_offer_of_the_wine_once_in_order)
{
	struct fixture *f = fixture_new("wineany");
	/* offers created round-robin over the wines still short of their
	 * count, so the by-wine runs of neighbouring wines interleave by id */
	int made[WA_WINES] = {0}, total = 0, left = 1;
	char d[1024], id[32];
	for (int i = 0; left; i++) {
		left = 0;
		for (int w = 0; w < WA_WINES; w++) {
			if (made[w] >= wa_count[w])
				continue;
			left = 1;
			int il = snprintf(id, sizeof(id), "ofr_%06d", total);
			int dl = snprintf(d, sizeof(d),
					  "{\"id\":\"%s\",\"offer_id\":\"%s\",\"wine_id\":\"wine_%d\","
					  "\"originator_id\":\"ptn_o1\",\"seller_price\":10.00,\"currency\":\"EUR\","
					  "\"qty_available\":5,\"condition\":\"new\",\"incoterm\":\"EXW\","
					  "\"min_order_qty\":null,\"case_size\":null,\"valid_from\":null,\"valid_to\":null,"
					  "\"permissions\":null,\"network_shareable\":true,\"status\":\"active\","
					  "\"source\":\"direct\",\"created_at\":\"2026-11-29T10:00:00.000Z\","
					  "\"updated_at\":\"2026-11-29T10:00:00.000Z\"}",
					  id, id, w);
			txn_begin(&f->sh);
			cr_assert_eq(txn_put(&f->sh, REC_T_OFFER, id, (size_t)il, d, (size_t)dl), 0, "%s", id);
			cr_assert_neq(txn_commit(&f->sh), 0);
			made[w]++;
			total++;
		}
	}
	for (int w = 0; w < WA_WINES; w++) {
		char wine[16];
		int wl = snprintf(wine, sizeof(wine), "wine_%d", w);
		struct wa_seen s = {.stop_at = -1};
		cr_assert_eq(offer_wine_any(&f->sh, wine, (size_t)wl, wa_cb, &s), 0, "%s: no fn stopped it", wine);
		cr_assert_eq(s.n, wa_count[w], "%s: %d offers handed over, %d made", wine, s.n, wa_count[w]);
		for (int k = 0; k < s.n; k++) {
			const struct offer *o = offer_get(&f->sh, s.ids[k], strlen(s.ids[k]));
			cr_assert_not_null(o, "%s", s.ids[k]);
			cr_assert_str_eq(o->wine_id, wine, "%s handed over for %s", s.ids[k], wine);
			cr_assert(k == 0 || strcmp(s.ids[k - 1], s.ids[k]) < 0, "%s: %s after %s", wine, s.ids[k],
				  s.ids[k - 1]);
		}
		if (wa_count[w] >= 3) { /* fn's nonzero return stops the walk and is returned */
			struct wa_seen t = {.stop_at = 3};
			cr_assert_eq(offer_wine_any(&f->sh, wine, (size_t)wl, wa_cb, &t), 7);
			cr_assert_eq(t.n, 3, "%s: stopped at the third", wine);
		}
	}
	struct wa_seen none = {.stop_at = -1};
	cr_assert_eq(offer_wine_any(&f->sh, "wine_99", 7, wa_cb, &none), 0);
	cr_assert_eq(none.n, 0, "a wine without offers");
	cr_assert_eq(offer_wine_any(&f->sh, "wine_", 5, wa_cb, &none), 0);
	cr_assert_eq(none.n, 0, "a prefix of wine ids is not a wine");
	fixture_free(f);
}
