/*
 * test_idpool.c -- the pool of ids rows refer to (engine/storage/idpool.h):
 * one copy per text, its address stable while referred to, freed with the
 * last reference; the memo in front of the index; the bounds (text length,
 * a NUL inside, references per copy) at and past their edges; two threads
 * taking and giving back references at once.  And the pool in use: the
 * offer table keeps each wine and originator id once, through replaced
 * versions, deletes and a restart, and the inventory table each location
 * and owner id.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "engine/storage/idpool.h"
#include "engine/storage/shard.h"
#include "engine/stock/inventory.h"
#include "engine/supply/offer.h"
#include "tests/shard_fixture.h"
#include "tests/wm_test.h"

WM_TEST(idpool, one_copy_per_text_freed_with_its_last_reference)
{
	struct idpool p;
	cr_assert_eq(idpool_init(&p), 0);
	char a1[] = "wine_01M8RRNYW80000YHVC94", a2[] = "wine_01M8RRNYW80000YHVC94";
	const char *x = idpool_ref(&p, a1, strlen(a1));
	cr_assert_not_null(x);
	cr_assert_neq(x, a1, "a copy, not the caller's bytes");
	cr_assert_str_eq(x, a1);
	cr_assert_eq(idpool_ref(&p, a2, strlen(a2)), x, "the same text: the same copy");
	cr_assert_eq(idpool_find(&p, a2, strlen(a2)), x);
	cr_assert_eq(idpool_count(&p), 1);
	cr_assert_gt(idpool_bytes(&p), strlen(a1));
	cr_assert_null(idpool_find(&p, "wine_", 5), "a prefix is another text");
	cr_assert_null(idpool_find(&p, a1, strlen(a1) - 1));
	const char *y = idpool_ref(&p, "ptn_o1", 6);
	cr_assert_neq(y, x);
	cr_assert_eq(idpool_dup(&p, y), 0);
	cr_assert_eq(idpool_count(&p), 2);
	/* x: two references, y: two */
	idpool_drop(&p, x);
	cr_assert_eq(idpool_find(&p, a1, strlen(a1)), x, "one reference left");
	idpool_drop(&p, x);
	cr_assert_null(idpool_find(&p, a1, strlen(a1)), "freed with the last");
	cr_assert_eq(idpool_count(&p), 1);
	idpool_drop(&p, NULL); /* nothing */
	idpool_drop(&p, y);
	idpool_drop(&p, y);
	cr_assert_eq(idpool_count(&p), 0);
	/* the empty text is a text */
	const char *e = idpool_ref(&p, "", 0);
	cr_assert_not_null(e);
	cr_assert_str_eq(e, "");
	cr_assert_eq(idpool_ref(&p, NULL, 0), e);
	idpool_fini(&p); /* frees what is still referred to */
}

/* Texts of IDPOOL_MAX_LEN bytes are kept, one byte more is refused, as is
 * a NUL inside the text and NULL bytes with a length; a copy at
 * IDPOOL_REFS_MAX takes no more references (ref and dup refuse, nothing
 * changes) until one is given back. */
WM_TEST(idpool, bounds_at_and_past_their_edges)
{
	struct idpool p;
	cr_assert_eq(idpool_init(&p), 0);
	static char big[IDPOOL_MAX_LEN + 2];
	memset(big, 'k', sizeof(big) - 1);
	const char *at = idpool_ref(&p, big, IDPOOL_MAX_LEN);
	cr_assert_not_null(at);
	cr_assert_eq(strlen(at), IDPOOL_MAX_LEN);
	cr_assert_null(idpool_ref(&p, big, IDPOOL_MAX_LEN + 1));
	cr_assert_null(idpool_find(&p, big, IDPOOL_MAX_LEN + 1));
	cr_assert_null(idpool_ref(&p, "ab\0c", 4), "a NUL inside");
	cr_assert_null(idpool_ref(&p, NULL, 3));
	cr_assert_eq(idpool_count(&p), 1);
	const char *x = idpool_ref(&p, "ptn_x", 5);
	idpool_test_set_refs(&p, x, IDPOOL_REFS_MAX - 1);
	cr_assert_eq(idpool_ref(&p, "ptn_x", 5), x, "the last reference it can carry");
	cr_assert_null(idpool_ref(&p, "ptn_x", 5), "one past the bound");
	cr_assert_eq(idpool_dup(&p, x), -1);
	idpool_drop(&p, x);
	cr_assert_eq(idpool_dup(&p, x), 0, "room again after one is given back");
	idpool_test_set_refs(&p, x, 1);
	idpool_drop(&p, x);
	cr_assert_null(idpool_find(&p, "ptn_x", 5));
	idpool_drop(&p, at);
	cr_assert_eq(idpool_count(&p), 0);
	/* two at once: both or neither (the second past the bound: the
	 * first is not taken either) */
	const char *pa = "x", *pb = "y";
	cr_assert_eq(idpool_ref2(&p, "wine_a", 6, big, IDPOOL_MAX_LEN + 1, &pa, &pb), -1);
	cr_assert_null(pa);
	cr_assert_null(pb);
	cr_assert_eq(idpool_count(&p), 0, "nothing kept");
	const char *w = idpool_ref(&p, "wine_a", 6);
	idpool_test_set_refs(&p, w, IDPOOL_REFS_MAX);
	cr_assert_eq(idpool_ref2(&p, "ptn_b", 5, "wine_a", 6, &pa, &pb), -1, "the second at its bound");
	cr_assert_null(idpool_find(&p, "ptn_b", 5), "the first given back");
	idpool_test_set_refs(&p, w, 1);
	cr_assert_eq(idpool_ref2(&p, "ptn_b", 5, "wine_a", 6, &pa, &pb), 0);
	cr_assert_str_eq(pa, "ptn_b");
	cr_assert_eq(pb, w);
	idpool_drop2(&p, pa, pb);
	idpool_drop2(&p, NULL, w);
	idpool_drop2(&p, NULL, NULL);
	cr_assert_eq(idpool_count(&p), 0);
	idpool_fini(&p);
}

/* The memo answers for the last texts found, and a copy freed leaves it:
 * texts taken in every order of three (more than the memo holds), each
 * given back, then found again as new copies. */
WM_TEST(idpool, the_memo_never_answers_with_a_freed_copy)
{
	struct idpool p;
	cr_assert_eq(idpool_init(&p), 0);
	static const char *const texts[] = {"wine_a", "ptn_b", "loc_FR_c"};
	for (int round = 0; round < 200; round++) {
		const char *got[3];
		for (int i = 0; i < 3; i++) {
			int k = (i * (round % 3 + 1) + round) % 3;
			got[i] = idpool_ref(&p, texts[k], strlen(texts[k]));
			cr_assert_str_eq(got[i], texts[k], "round %d", round);
			if (round % 2)
				cr_assert_eq(idpool_find(&p, texts[k], strlen(texts[k])), got[i]);
		}
		for (int i = 0; i < 3; i++)
			idpool_drop(&p, got[(i + round) % 3]);
		cr_assert_eq(idpool_count(&p), 0, "round %d", round);
		for (int k = 0; k < 3; k++)
			cr_assert_null(idpool_find(&p, texts[k], strlen(texts[k])), "round %d: %s", round, texts[k]);
	}
	idpool_fini(&p);
}

struct churn {
	struct idpool *p;
	unsigned seed;
};

/* 20,000 rounds of taking and giving back references to 16 texts. */
static void *churn(void *arg)
{
	struct churn *c = arg;
	const char *held[16] = {0};
	char t[16];
	for (unsigned i = 0; i < 20000; i++) {
		unsigned k = (i * 7 + c->seed) % 16;
		if (held[k]) {
			idpool_drop(c->p, held[k]);
			held[k] = NULL;
		} else {
			int n = snprintf(t, sizeof(t), "ptn_%u", k);
			held[k] = idpool_ref(c->p, t, (size_t)n);
			if (!held[k] || strcmp(held[k], t))
				return "a wrong copy";
		}
	}
	for (unsigned k = 0; k < 16; k++)
		idpool_drop(c->p, held[k]);
	return NULL;
}

WM_TEST(idpool, two_threads_at_once)
{
	struct idpool p;
	cr_assert_eq(idpool_init(&p), 0);
	struct churn a = {&p, 0}, b = {&p, 5};
	pthread_t ta, tb;
	cr_assert_eq(pthread_create(&ta, NULL, churn, &a), 0);
	cr_assert_eq(pthread_create(&tb, NULL, churn, &b), 0);
	void *ra, *rb;
	pthread_join(ta, &ra);
	pthread_join(tb, &rb);
	cr_assert_null(ra);
	cr_assert_null(rb);
	cr_assert_eq(idpool_count(&p), 0, "every reference given back: every copy freed");
	idpool_fini(&p);
}

/* ---- the offer table's pool ----------------------------------------------- */

static void put_offer(struct fixture *f, const char *id, const char *wine, const char *orig, int qty)
{
	char d[1024];
	int dl = snprintf(d, sizeof(d),
			  "{\"id\":\"%s\",\"offer_id\":\"%s\",\"wine_id\":\"%s\","
			  "\"originator_id\":\"%s\",\"seller_price\":10.00,\"currency\":\"EUR\","
			  "\"qty_available\":%d,\"condition\":\"new\",\"incoterm\":\"EXW\","
			  "\"min_order_qty\":null,\"case_size\":null,\"valid_from\":null,\"valid_to\":null,"
			  "\"permissions\":null,\"network_shareable\":true,\"status\":\"active\","
			  "\"source\":\"direct\",\"created_at\":\"2026-11-29T10:00:00.000Z\","
			  "\"updated_at\":\"2026-11-29T10:00:00.000Z\"}",
			  id, id, wine, orig, qty);
	txn_begin(&f->sh);
	cr_assert_eq(txn_put(&f->sh, REC_T_OFFER, id, strlen(id), d, (size_t)dl), 0, "%s", id);
	cr_assert_neq(txn_commit(&f->sh), 0);
}

static void del_offer(struct fixture *f, const char *id)
{
	txn_begin(&f->sh);
	cr_assert_eq(txn_del(&f->sh, REC_T_OFFER, id, strlen(id)), 0, "%s", id);
	cr_assert_neq(txn_commit(&f->sh), 0);
}

static const struct offer *get(struct fixture *f, const char *id)
{
	const struct offer *o = offer_get(&f->sh, id, strlen(id));
	cr_assert_not_null(o, "%s", id);
	return o;
}

/* Six offers of three wines by two originators: five ids kept, each once
 * (offers naming the same id hold the same address); a new version keeps
 * them; the deletes free a wine's id with its last offer; a restart
 * builds the same pool again from the snapshot and the WAL. */
WM_TEST(idpool, the_offer_table_keeps_each_id_once)
{
	struct fixture *f = fixture_new("idpool");
	struct idpool *pool = &f->sh.tables[REC_T_OFFER].ids;
	static const char *const wines[] = {"wine_a", "wine_b", "wine_c"}, *const origs[] = {"ptn_o1", "ptn_o2"};
	char id[16];
	for (int i = 0; i < 6; i++) {
		snprintf(id, sizeof(id), "ofr_%d", i);
		put_offer(f, id, wines[i / 2], origs[i % 2], 5);
	}
	for (int pass = 0; pass < 2; pass++) {
		cr_assert_eq(idpool_count(pool), 5, "pass %d", pass);
		cr_assert_eq(get(f, "ofr_0")->wine_id, get(f, "ofr_1")->wine_id, "one copy of wine_a");
		cr_assert_eq(get(f, "ofr_0")->originator_id, get(f, "ofr_2")->originator_id, "one copy of ptn_o1");
		cr_assert_neq(get(f, "ofr_0")->wine_id, get(f, "ofr_2")->wine_id);
		cr_assert_str_eq(get(f, "ofr_5")->wine_id, "wine_c");
		cr_assert_str_eq(get(f, "ofr_5")->originator_id, "ptn_o2");
		if (pass == 0) {
			put_offer(f, "ofr_3", "wine_b", "ptn_o2", 9); /* a new version, the same ids */
			cr_assert_eq(get(f, "ofr_3")->qty, 9);
			shard_close(&f->sh);
			fx_open(f);
			pool = &f->sh.tables[REC_T_OFFER].ids;
		}
	}
	del_offer(f, "ofr_4");
	cr_assert_eq(idpool_count(pool), 5, "wine_c: one offer left");
	del_offer(f, "ofr_5");
	cr_assert_eq(idpool_count(pool), 4, "wine_c freed with its last offer");
	cr_assert_null(idpool_find(pool, "wine_c", 6));
	put_offer(f, "ofr_6", "wine_a", "ptn_o3", 1); /* an originator new to the pool */
	cr_assert_eq(idpool_count(pool), 5);
	for (int i = 0; i < 4; i++) {
		snprintf(id, sizeof(id), "ofr_%d", i);
		del_offer(f, id);
	}
	del_offer(f, "ofr_6");
	cr_assert_eq(idpool_count(pool), 0, "no offer left: no id kept");
	fixture_free(f);
}

/* ---- the inventory table's pool ------------------------------------------- */

static void put_level(struct fixture *f, int i, const char *owner, const char *loc, long on_hand)
{
	char d[1024], id[16];
	int il = snprintf(id, sizeof(id), "inv_%06d", i);
	int dl = snprintf(d, sizeof(d),
			  "{\"id\":\"%s\",\"sku\":\"SKU-%06d\",\"offer_id\":\"ofr_%06d\",\"owner_entity_id\":\"%s\","
			  "\"location_id\":\"%s\",\"condition\":\"sellable\",\"on_hand\":%ld,\"incoming\":0,"
			  "\"reserved\":0,\"allocated\":0,\"atp\":%ld,\"created_at\":\"2026-11-29T10:00:00.000Z\","
			  "\"updated_at\":\"2026-11-29T10:00:00.000Z\"}",
			  id, i, i, owner, loc, on_hand, on_hand);
	txn_begin(&f->sh);
	cr_assert_eq(txn_put(&f->sh, REC_T_INVENTORY, id, (size_t)il, d, (size_t)dl), 0, "%s", id);
	cr_assert_neq(txn_commit(&f->sh), 0);
}

static const struct inv_level *level(struct fixture *f, int i)
{
	char id[16];
	int il = snprintf(id, sizeof(id), "inv_%06d", i);
	const struct inv_level *l = inv_level_get(&f->sh, id, (size_t)il);
	cr_assert_not_null(l, "%s", id);
	return l;
}

/* Eight levels at two locations of two owners: four ids kept, each once;
 * a new version of a level keeps them, a restart builds them again, and
 * the deletes free each with its last level. */
WM_TEST(idpool, the_inventory_table_keeps_each_location_and_owner_once)
{
	struct fixture *f = fixture_new("idpool-inv");
	struct idpool *pool = &f->sh.tables[REC_T_INVENTORY].ids;
	for (int i = 0; i < 8; i++)
		put_level(f, i, i % 2 ? "ptn_o1" : "ptn_o2", i < 4 ? "loc_FR_a" : "loc_DE_b", 10 + i);
	for (int pass = 0; pass < 2; pass++) {
		cr_assert_eq(idpool_count(pool), 4, "pass %d", pass);
		cr_assert_eq(level(f, 0)->location_id, level(f, 3)->location_id, "one copy of loc_FR_a");
		cr_assert_eq(level(f, 1)->owner_id, level(f, 7)->owner_id, "one copy of ptn_o1");
		cr_assert_str_eq(level(f, 6)->location_id, "loc_DE_b");
		cr_assert_str_eq(level(f, 6)->owner_id, "ptn_o2");
		if (pass == 0) {
			put_level(f, 2, "ptn_o2", "loc_FR_a", 99); /* a new version, the same ids */
			cr_assert_eq(level(f, 2)->on_hand, 99);
			shard_close(&f->sh);
			fx_open(f);
			pool = &f->sh.tables[REC_T_INVENTORY].ids;
		}
	}
	char id[16];
	for (int i = 4; i < 8; i++) {
		int il = snprintf(id, sizeof(id), "inv_%06d", i);
		txn_begin(&f->sh);
		cr_assert_eq(txn_del(&f->sh, REC_T_INVENTORY, id, (size_t)il), 0);
		cr_assert_neq(txn_commit(&f->sh), 0);
	}
	cr_assert_eq(idpool_count(pool), 3, "loc_DE_b freed with its last level");
	cr_assert_null(idpool_find(pool, "loc_DE_b", 8));
	for (int i = 0; i < 4; i++) {
		int il = snprintf(id, sizeof(id), "inv_%06d", i);
		txn_begin(&f->sh);
		cr_assert_eq(txn_del(&f->sh, REC_T_INVENTORY, id, (size_t)il), 0);
		cr_assert_neq(txn_commit(&f->sh), 0);
	}
	cr_assert_eq(idpool_count(pool), 0);
	fixture_free(f);
}
