/*
 * test_offer_units.c -- the offers' candidate-stream merge in-process: a
 * k-way merge of ordered-index streams (each key = prefix + offer id) must
 * yield every id once, in id order, strictly after the cursor, never a key
 * of another prefix, and refuse a stream past OFFER_MAX_STREAMS.
 */
#include <stdio.h>
#include <string.h>

#include "engine/supply/offer.h"
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
