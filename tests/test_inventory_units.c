/*
 * test_inventory_units.c -- in-process tests of the pure location checks
 * (GLN check digit, SEED shape) and of the hold primitives against a real
 * shard: place/commit/release arithmetic, short ATP failing atomically,
 * idempotency by hold id, argument bounds, and the rebuild on reopen.
 * (Kill -9 with holds is in test_inventory.c, over HTTP.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/config.h"
#include "engine/stock/inventory.h"
#include "engine/stock/location.h"
#include "engine/storage/record.h"
#include "engine/storage/shard.h"
#include "engine/supply/offer.h"
#include "tests/harness.h"
#include "tests/shard_fixture.h"
#include "tests/wm_test.h"

/* ---- GLN and SEED ---------------------------------------------------------------- */

/* Independent GS1 mod-10 over 12 data digits: positions 1..12 from the
 * left get weights 1,3,1,3,... (the same as 3,1,... from the right). */
static int gln_digit(const char *d12)
{
	int odd = 0, even = 0;
	for (int i = 0; i < 12; i++) {
		if (i % 2 == 0)
			odd += d12[i] - '0';
		else
			even += d12[i] - '0';
	}
	return (10 - (odd + 3 * even) % 10) % 10;
}

WM_TEST(location, gln_check_digit_unit)
{
	/* a well-known valid EAN-13 (same GS1 key algorithm), then every check digit of several bases */
	cr_assert_eq(loc_gln_check("4006381333931", 13), LOC_KEY_OK);
	cr_assert_eq(loc_gln_check("4006381333932", 13), LOC_KEY_CHECK);
	static const char *const bases[] = {"000000000000", "999999999999", "123456789012", "614141000001", "870000000017"};
	for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
		char g[14];
		memcpy(g, bases[b], 12);
		g[13] = 0;
		int want = gln_digit(bases[b]);
		for (int d = 0; d < 10; d++) {
			g[12] = (char)('0' + d);
			cr_assert_eq(loc_gln_check(g, 13), d == want ? LOC_KEY_OK : LOC_KEY_CHECK, "%s", g);
		}
	}
	cr_assert_eq(loc_gln_check("400638133393", 12), LOC_KEY_LENGTH);
	cr_assert_eq(loc_gln_check("40063813339311", 14), LOC_KEY_LENGTH);
	cr_assert_eq(loc_gln_check("", 0), LOC_KEY_LENGTH);
	cr_assert_eq(loc_gln_check("40063813339a1", 13), LOC_KEY_CHARS);
	cr_assert_eq(loc_gln_check("400638133393 ", 13), LOC_KEY_CHARS);
}

WM_TEST(location, seed_shape_unit)
{
	cr_assert_eq(loc_seed_check("FR012345E1234", 13), LOC_KEY_OK);
	cr_assert_eq(loc_seed_check("DE0123456789A", 13), LOC_KEY_OK);
	cr_assert_eq(loc_seed_check("GBABCDEFGHIJK", 13), LOC_KEY_OK);
	cr_assert_eq(loc_seed_check("FR012345E123", 12), LOC_KEY_LENGTH);
	cr_assert_eq(loc_seed_check("FR012345E12345", 14), LOC_KEY_LENGTH);
	cr_assert_eq(loc_seed_check("fr012345E1234", 13), LOC_KEY_CHARS);
	cr_assert_eq(loc_seed_check("F1012345E1234", 13), LOC_KEY_CHARS);
	cr_assert_eq(loc_seed_check("FR012345e1234", 13), LOC_KEY_CHARS);
	cr_assert_eq(loc_seed_check("FR012345-1234", 13), LOC_KEY_CHARS);
}

/* ---- holds in-process ------------------------------------------------------------ */

/* A level document written straight to the table (no qty sync: the
 * offer's row is not touched), of offer `offer` at location loc. */
static void put_level_full(struct fixture *f, const char *id, const char *offer, const char *loc, const char *cond,
			   long on_hand)
{
	char doc[512];
	int n = snprintf(doc, sizeof(doc),
			 "{\"id\":\"%s\",\"sku\":\"S\",\"offer_id\":\"%s\",\"owner_entity_id\":\"prt_x\","
			 "\"location_id\":\"%s\",\"condition\":\"%s\",\"on_hand\":%ld,\"incoming\":0,\"reserved\":0,"
			 "\"allocated\":0,\"atp\":%ld,\"created_at\":\"2025-01-01T00:00:00.000Z\","
			 "\"updated_at\":\"2025-01-01T00:00:00.000Z\"}",
			 id, offer, loc, cond, on_hand, on_hand);
	txn_begin(&f->sh);
	cr_assert_eq(txn_put(&f->sh, REC_T_INVENTORY, id, strlen(id), doc, (size_t)n), 0);
	cr_assert_gt(txn_commit(&f->sh), 0);
}

/* A level of the offer ofr_none (which has no row) at location loc. */
static void put_level_at(struct fixture *f, const char *id, const char *loc, const char *cond, long on_hand)
{
	put_level_full(f, id, "ofr_none", loc, cond, on_hand);
}

static void put_level(struct fixture *f, const char *id, const char *cond, long on_hand)
{
	put_level_at(f, id, "loc_x", cond, on_hand);
}

static const struct inv_level *lvl(struct fixture *f, const char *id)
{
	const struct inv_level *l = inv_level_get(&f->sh, id, strlen(id));
	cr_assert_not_null(l);
	return l;
}

static void expect_level(struct fixture *f, const char *id, long on_hand, long reserved, long allocated)
{
	const struct inv_level *l = lvl(f, id);
	cr_assert_eq(l->on_hand, on_hand, "on_hand %lld", (long long)l->on_hand);
	cr_assert_eq(l->reserved, reserved, "reserved %lld", (long long)l->reserved);
	cr_assert_eq(l->allocated, allocated, "allocated %lld", (long long)l->allocated);
	cr_assert_eq(inv_atp(l), on_hand - reserved - allocated);
	cr_assert_geq(inv_atp(l), 0);
}

static int state_of(struct fixture *f, const char *hid)
{
	const struct hold *h = hold_get(&f->sh, hid, strlen(hid));
	return h ? h->state : -1;
}

WM_TEST(hold, place_commit_release_arithmetic)
{
	struct fixture *f = fixture_new("inv");
	put_level(f, "inv_a", "sellable", 10);
	cr_assert_eq(hold_place(&f->sh, "inv_a", 4, "o1:l1"), HOLD_OK);
	expect_level(f, "inv_a", 10, 4, 0);
	cr_assert_eq(state_of(f, "o1:l1"), HS_PREPARED);
	cr_assert_eq(hold_commit(&f->sh, "o1:l1"), HOLD_OK);
	expect_level(f, "inv_a", 10, 0, 4);
	cr_assert_eq(state_of(f, "o1:l1"), HS_COMMITTED);
	cr_assert_eq(hold_place(&f->sh, "inv_a", 2, "o2:l1"), HOLD_OK);
	expect_level(f, "inv_a", 10, 2, 4);
	cr_assert_eq(hold_release(&f->sh, "o2:l1"), HOLD_OK);
	expect_level(f, "inv_a", 10, 0, 4);
	cr_assert_eq(hold_release(&f->sh, "o1:l1"), HOLD_OK, "a committed hold may be released (cancel)");
	expect_level(f, "inv_a", 10, 0, 0);
	cr_assert_eq(state_of(f, "o1:l1"), HS_RELEASED);
	fixture_free(f);
}

WM_TEST(hold, short_atp_fails_atomically)
{
	struct fixture *f = fixture_new("inv");
	put_level(f, "inv_a", "sellable", 10);
	uint64_t lsn = f->sh.lsn;
	cr_assert_eq(hold_place(&f->sh, "inv_a", 11, "big"), HOLD_E_SHORT);
	cr_assert_eq(f->sh.lsn, lsn, "nothing was written");
	cr_assert_eq(state_of(f, "big"), -1, "no hold row");
	expect_level(f, "inv_a", 10, 0, 0);
	cr_assert_eq(hold_place(&f->sh, "inv_a", 10, "all"), HOLD_OK, "atp exactly the quantity");
	expect_level(f, "inv_a", 10, 10, 0);
	cr_assert_eq(hold_place(&f->sh, "inv_a", 1, "one"), HOLD_E_SHORT, "atp 0 holds nothing");
	cr_assert_eq(hold_release(&f->sh, "all"), HOLD_OK);
	cr_assert_eq(hold_place(&f->sh, "inv_a", 11, "big"), HOLD_E_SHORT);
	cr_assert_eq(hold_place(&f->sh, "inv_a", 10, "big"), HOLD_OK, "a failed id may be placed later");
	put_level(f, "inv_d", "damaged", 5);
	cr_assert_eq(hold_place(&f->sh, "inv_d", 1, "dmg"), HOLD_E_NOT_SELLABLE);
	cr_assert_eq(hold_place(&f->sh, "inv_zz", 1, "nolevel"), HOLD_E_NO_LEVEL);
	fixture_free(f);
}

WM_TEST(hold, idempotent_by_id_and_bounds)
{
	struct fixture *f = fixture_new("inv");
	put_level(f, "inv_a", "sellable", INV_QTY_MAX);
	put_level(f, "inv_b", "sellable", 10);
	cr_assert_eq(hold_place(&f->sh, "inv_a", 3, "h"), HOLD_OK);
	uint64_t lsn = f->sh.lsn;
	cr_assert_eq(hold_place(&f->sh, "inv_a", 3, "h"), HOLD_OK);
	cr_assert_eq(f->sh.lsn, lsn, "the second placement writes nothing");
	expect_level(f, "inv_a", INV_QTY_MAX, 3, 0);
	cr_assert_eq(hold_place(&f->sh, "inv_a", 4, "h"), HOLD_E_CONFLICT);
	cr_assert_eq(hold_place(&f->sh, "inv_b", 3, "h"), HOLD_E_CONFLICT);
	cr_assert_eq(hold_commit(&f->sh, "h"), HOLD_OK);
	lsn = f->sh.lsn;
	cr_assert_eq(hold_commit(&f->sh, "h"), HOLD_OK);
	cr_assert_eq(f->sh.lsn, lsn);
	cr_assert_eq(hold_place(&f->sh, "inv_a", 3, "h"), HOLD_OK, "placing a committed id again is a no-op");
	expect_level(f, "inv_a", INV_QTY_MAX, 0, 3);
	cr_assert_eq(hold_release(&f->sh, "h"), HOLD_OK);
	cr_assert_eq(hold_release(&f->sh, "h"), HOLD_OK);
	cr_assert_eq(hold_commit(&f->sh, "h"), HOLD_E_STATE);
	expect_level(f, "inv_a", INV_QTY_MAX, 0, 0);
	cr_assert_eq(hold_commit(&f->sh, "unknown"), HOLD_E_NOT_FOUND);
	cr_assert_eq(hold_release(&f->sh, "unknown"), HOLD_E_NOT_FOUND);
	/* bounds: qty 1..INV_QTY_MAX, id 1..INV_HOLD_ID_MAX of [A-Za-z0-9_.:-] */
	cr_assert_eq(hold_place(&f->sh, "inv_a", 0, "q0"), HOLD_E_ARG);
	cr_assert_eq(hold_place(&f->sh, "inv_a", INV_QTY_MAX + 1, "qmax1"), HOLD_E_ARG);
	cr_assert_eq(hold_place(&f->sh, "inv_a", INV_QTY_MAX, "qmax"), HOLD_OK);
	expect_level(f, "inv_a", INV_QTY_MAX, INV_QTY_MAX, 0);
	char id[INV_HOLD_ID_MAX + 2];
	memset(id, 'x', sizeof(id));
	id[INV_HOLD_ID_MAX] = 0;
	cr_assert_eq(hold_place(&f->sh, "inv_b", 1, id), HOLD_OK, "an id at the bound");
	id[INV_HOLD_ID_MAX] = 'x';
	id[INV_HOLD_ID_MAX + 1] = 0;
	cr_assert_eq(hold_place(&f->sh, "inv_b", 1, id), HOLD_E_ARG, "one past the bound");
	cr_assert_eq(hold_place(&f->sh, "inv_b", 1, ""), HOLD_E_ARG);
	cr_assert_eq(hold_place(&f->sh, "inv_b", 1, "a b"), HOLD_E_ARG);
	fixture_free(f);
}

WM_TEST(hold, levels_and_holds_rebuilt_on_reopen)
{
	struct fixture *f = fixture_new("inv");
	put_level(f, "inv_a", "sellable", 10);
	cr_assert_eq(hold_place(&f->sh, "inv_a", 2, "p"), HOLD_OK);
	cr_assert_eq(hold_place(&f->sh, "inv_a", 3, "c"), HOLD_OK);
	cr_assert_eq(hold_commit(&f->sh, "c"), HOLD_OK);
	cr_assert_eq(hold_place(&f->sh, "inv_a", 1, "r"), HOLD_OK);
	cr_assert_eq(hold_release(&f->sh, "r"), HOLD_OK);
	shard_close(&f->sh);
	fx_open(f);
	expect_level(f, "inv_a", 10, 2, 3);
	cr_assert_eq(state_of(f, "p"), HS_PREPARED);
	cr_assert_eq(state_of(f, "c"), HS_COMMITTED);
	cr_assert_eq(state_of(f, "r"), HS_RELEASED);
	cr_assert_eq(hold_place(&f->sh, "inv_a", 2, "p"), HOLD_OK);
	expect_level(f, "inv_a", 10, 2, 3);
	cr_assert_eq(hold_commit(&f->sh, "p"), HOLD_OK);
	expect_level(f, "inv_a", 10, 0, 5);
	fixture_free(f);
}

/* What the by_offer and by_location indexes say about ofr_none: the level
 * the offer's walk finds (NULL: none) and its ATP, the ATP at loc_x and at
 * loc_y. */
static const struct inv_level *filed(struct fixture *f, int64_t *by_offer, int64_t *at_x, int64_t *at_y)
{
	const struct inv_level *out[4];
	unsigned n = inv_offer_sellable(&f->sh, "ofr_none", out, 4, by_offer);
	cr_assert_leq(n, 1);
	*at_x = inv_location_offer_atp(&f->sh, "loc_x", "ofr_none");
	*at_y = inv_location_offer_atp(&f->sh, "loc_y", "ofr_none");
	return n ? out[0] : NULL;
}

/* table.c install_in_place: a put that changes none of the keys a level is
 * filed under rewrites the row in its own block, and every index still
 * finds it with the new values; one that moves it to another location is
 * filed anew and leaves nothing under the old key; a restart agrees. */
WM_TEST(inventory_level, a_put_that_keeps_its_keys_replaces_the_row_in_place)
{
	struct fixture *f = fixture_new("inv");
	int64_t by_offer, at_x, at_y;
	put_level(f, "inv_a", "sellable", 10);
	const struct inv_level *first = lvl(f, "inv_a");
	cr_assert_eq(filed(f, &by_offer, &at_x, &at_y), first);
	cr_assert(by_offer == 10 && at_x == 10 && at_y == 0);

	put_level(f, "inv_a", "sellable", 20);
	const struct inv_level *second = lvl(f, "inv_a");
	cr_assert_eq(second, first, "the same keys: the row stays in its block");
	cr_assert_eq(second->on_hand, 20);
	cr_assert_eq(filed(f, &by_offer, &at_x, &at_y), second);
	cr_assert(by_offer == 20 && at_x == 20 && at_y == 0, "by offer %lld, at x %lld, at y %lld",
		  (long long)by_offer, (long long)at_x, (long long)at_y);

	put_level_at(f, "inv_a", "loc_y", "sellable", 30);
	const struct inv_level *moved = lvl(f, "inv_a");
	cr_assert_eq(moved->on_hand, 30);
	cr_assert_eq(filed(f, &by_offer, &at_x, &at_y), moved);
	cr_assert(by_offer == 30 && at_x == 0 && at_y == 30, "by offer %lld, at x %lld, at y %lld",
		  (long long)by_offer, (long long)at_x, (long long)at_y);

	put_level_at(f, "inv_a", "loc_y", "damaged", 40); /* not sellable: off the offer's walk */
	cr_assert_eq(filed(f, &by_offer, &at_x, &at_y), NULL);
	cr_assert(by_offer == 0 && at_x == 0 && at_y == 0);
	put_level_at(f, "inv_a", "loc_y", "sellable", 50);
	shard_close(&f->sh);
	fx_open(f);
	cr_assert_eq(lvl(f, "inv_a")->on_hand, 50);
	cr_assert_eq(filed(f, &by_offer, &at_x, &at_y), lvl(f, "inv_a"));
	cr_assert(by_offer == 50 && at_x == 0 && at_y == 50);
	put_level_at(f, "inv_a", "loc_y", "sellable", 60); /* replayed rows are replaced in place too */
	cr_assert(filed(f, &by_offer, &at_x, &at_y) && by_offer == 60 && at_y == 60);
	fixture_free(f);
}

/* ---- an offer's count of its levels (offer.h n_levels_p1) -------------------------------- */

/* An offer document straight to the table, at seller_price price. */
static void put_offer(struct fixture *f, const char *id, const char *price)
{
	char d[1024];
	int dl = snprintf(d, sizeof(d),
			  "{\"id\":\"%s\",\"offer_id\":\"%s\",\"wine_id\":\"wine_1\",\"originator_id\":\"ptn_o1\","
			  "\"seller_price\":%s,\"currency\":\"EUR\",\"qty_available\":5,\"condition\":\"new\","
			  "\"incoterm\":\"EXW\",\"min_order_qty\":null,\"case_size\":null,\"valid_from\":null,"
			  "\"valid_to\":null,\"permissions\":null,\"network_shareable\":true,\"status\":\"active\","
			  "\"source\":\"direct\",\"created_at\":\"2026-11-29T10:00:00.000Z\","
			  "\"updated_at\":\"2026-11-29T10:00:00.000Z\"}",
			  id, id, price);
	txn_begin(&f->sh);
	cr_assert_eq(txn_put(&f->sh, REC_T_OFFER, id, strlen(id), d, (size_t)dl), 0, "%s", id);
	cr_assert_gt(txn_commit(&f->sh), 0);
}

/* A sellable level of offer `offer` at loc_x with on_hand units. */
static void put_level_of(struct fixture *f, const char *id, const char *offer, long on_hand)
{
	put_level_full(f, id, offer, "loc_x", "sellable", on_hand);
}

static const struct offer *ofr(struct fixture *f, const char *id)
{
	const struct offer *o = offer_get(&f->sh, id, strlen(id));
	cr_assert_not_null(o, "%s", id);
	return o;
}

/* inv_offer_sellable_of of offer `id`: the same levels and ATP as the
 * index walk (inv_offer_sellable_at), which it must be; returns how many. */
static unsigned sellable_of(struct fixture *f, const char *id, int64_t *sum)
{
	const struct inv_level *a[8], *b[8];
	int64_t walk_sum;
	unsigned n = inv_offer_sellable_of(&f->sh, ofr(f, id), NULL, a, 8, sum);
	unsigned m = inv_offer_sellable_at(&f->sh, id, NULL, b, 8, &walk_sum);
	cr_assert_eq(n, m, "%s: %u levels from the count's path, %u from the walk", id, n, m);
	cr_assert_eq(*sum, walk_sum);
	for (unsigned i = 0; i < n; i++)
		cr_assert_eq(a[i], b[i]);
	return n;
}

/* The stored row of offer `id`'s only level, as a quote finds it without
 * a walk (offer.h one_level), or NULL when not known. */
static const struct row *one_level(struct fixture *f, const char *id) { return ofr(f, id)->one_level; }

/* An offer's only level, once counted, is read without a walk,
 * and the row read is always the level's stored version: through an
 * in-place update, a new version in a new block (a new location: new
 * index keys), a second level (not known which is read: none cached) and
 * its removal (the walk learns the survivor), a move to another offer, a
 * delete and a new version of the offer.  A stale pointer here would be a
 * quote reading freed memory (ASan) or old stock (the sums). */
WM_TEST(inventory_level, an_offers_only_level_is_read_as_stored)
{
	struct fixture *f = fixture_new("onelevel");
	int64_t sum;
	put_offer(f, "ofr_a", "10.00");
	put_offer(f, "ofr_b", "11.00");
	put_level_of(f, "inv_1", "ofr_a", 10);
	cr_assert_eq(one_level(f, "ofr_a"), &lvl(f, "inv_1")->row, "counted as it came: the offer had none");
	cr_assert_eq(sellable_of(f, "ofr_a", &sum), 1);
	cr_assert_eq(one_level(f, "ofr_a"), &lvl(f, "inv_1")->row);

	put_level_of(f, "inv_1", "ofr_a", 12); /* same keys: overwritten in place */
	cr_assert_eq(one_level(f, "ofr_a"), &lvl(f, "inv_1")->row);
	cr_assert_eq(sellable_of(f, "ofr_a", &sum), 1);
	cr_assert_eq(sum, 12);
	const struct row *before = &lvl(f, "inv_1")->row;
	put_level_full(f, "inv_1", "ofr_a", "loc_y", "sellable", 13); /* new keys: a new block */
	cr_assert_neq(&lvl(f, "inv_1")->row, before, "the level moved to a new block");
	cr_assert_eq(one_level(f, "ofr_a"), &lvl(f, "inv_1")->row, "and the offer follows it");
	cr_assert_eq(sellable_of(f, "ofr_a", &sum), 1);
	cr_assert_eq(sum, 13);

	put_level_of(f, "inv_2", "ofr_a", 4); /* a second level: which one is no longer one */
	cr_assert_null(one_level(f, "ofr_a"));
	cr_assert_eq(sellable_of(f, "ofr_a", &sum), 2);
	cr_assert_eq(sum, 17);
	cr_assert_null(one_level(f, "ofr_a"), "two levels: nothing cached");
	txn_begin(&f->sh);
	cr_assert_eq(txn_del(&f->sh, REC_T_INVENTORY, "inv_1", 5), 0);
	cr_assert_gt(txn_commit(&f->sh), 0);
	cr_assert_null(one_level(f, "ofr_a"), "one left, not known which until a walk");
	cr_assert_eq(sellable_of(f, "ofr_a", &sum), 1);
	cr_assert_eq(sum, 4);
	cr_assert_eq(one_level(f, "ofr_a"), &lvl(f, "inv_2")->row);

	put_offer(f, "ofr_a", "12.00"); /* a new version of the offer carries it */
	cr_assert_eq(one_level(f, "ofr_a"), &lvl(f, "inv_2")->row);
	cr_assert_eq(sellable_of(f, "ofr_b", &sum), 0); /* ofr_b: known to have none */
	put_level_of(f, "inv_2", "ofr_b", 6);           /* moved: ofr_a has none, ofr_b this one */
	cr_assert_null(one_level(f, "ofr_a"));
	cr_assert_eq(ofr(f, "ofr_a")->n_levels_p1, 1);
	cr_assert_eq(one_level(f, "ofr_b"), &lvl(f, "inv_2")->row, "the first level of an offer that had none");
	cr_assert_eq(sellable_of(f, "ofr_b", &sum), 1);
	cr_assert_eq(sum, 6);
	cr_assert_eq(sellable_of(f, "ofr_a", &sum), 0);

	txn_begin(&f->sh);
	cr_assert_eq(txn_del(&f->sh, REC_T_INVENTORY, "inv_2", 5), 0);
	cr_assert_gt(txn_commit(&f->sh), 0);
	cr_assert_null(one_level(f, "ofr_b"));
	cr_assert_eq(sellable_of(f, "ofr_b", &sum), 0);
	fixture_free(f);
}

/* The count a quote skips the walk by is known from an offer's creation
 * and stays exact: through a level's add, in-place update, move to another
 * offer and delete, and a new version of the offer.  A restart loads the
 * offers uncounted (0: a quote walks), and inv_count_step counts them.  A
 * count left behind (a level added and not counted) would hide that
 * level's stock from quotes. */
WM_TEST(inventory_level, an_offers_level_count_follows_every_add_move_and_delete)
{
	struct fixture *f = fixture_new("lvcount");
	int64_t sum;
	put_offer(f, "ofr_a", "10.00");
	put_offer(f, "ofr_b", "11.00");
	cr_assert_eq(ofr(f, "ofr_a")->n_levels_p1, 1, "a new offer is counted as it is stored: none");
	put_level_of(f, "inv_1", "ofr_a", 10);
	cr_assert_eq(ofr(f, "ofr_a")->n_levels_p1, 2);
	cr_assert_eq(sellable_of(f, "ofr_a", &sum), 1);
	cr_assert_eq(sum, 10);
	cr_assert_eq(ofr(f, "ofr_a")->n_levels_p1, 2);
	cr_assert_eq(sellable_of(f, "ofr_b", &sum), 0);
	cr_assert_eq(ofr(f, "ofr_b")->n_levels_p1, 1, "known to have none");

	put_level_of(f, "inv_2", "ofr_b", 7); /* the first level of an offer known to have none */
	cr_assert_eq(ofr(f, "ofr_b")->n_levels_p1, 2);
	cr_assert_eq(sellable_of(f, "ofr_b", &sum), 1);
	cr_assert_eq(sum, 7);
	put_level_of(f, "inv_2", "ofr_b", 9); /* same keys: replaced in place */
	cr_assert_eq(ofr(f, "ofr_b")->n_levels_p1, 2);
	put_level_of(f, "inv_3", "ofr_a", 5);
	cr_assert_eq(ofr(f, "ofr_a")->n_levels_p1, 3);
	cr_assert_eq(sellable_of(f, "ofr_a", &sum), 2);
	cr_assert_eq(sum, 15);

	put_offer(f, "ofr_a", "12.00"); /* a new version carries the count */
	cr_assert_eq(ofr(f, "ofr_a")->n_levels_p1, 3);
	cr_assert_eq(sellable_of(f, "ofr_a", &sum), 2);

	put_level_of(f, "inv_3", "ofr_b", 5); /* moved to the other offer */
	cr_assert_eq(ofr(f, "ofr_a")->n_levels_p1, 2);
	cr_assert_eq(ofr(f, "ofr_b")->n_levels_p1, 3);
	cr_assert_eq(sellable_of(f, "ofr_b", &sum), 2);
	cr_assert_eq(sum, 14);

	txn_begin(&f->sh);
	cr_assert_eq(txn_del(&f->sh, REC_T_INVENTORY, "inv_1", 5), 0);
	cr_assert_gt(txn_commit(&f->sh), 0);
	cr_assert_eq(ofr(f, "ofr_a")->n_levels_p1, 1, "its last level gone: known to have none");
	cr_assert_eq(sellable_of(f, "ofr_a", &sum), 0);

	shard_close(&f->sh);
	fx_open(f);
	cr_assert_eq(ofr(f, "ofr_a")->n_levels_p1, 0, "a restart loads the offers uncounted");
	cr_assert_eq(ofr(f, "ofr_b")->n_levels_p1, 0);
	cr_assert_eq(sellable_of(f, "ofr_b", &sum), 2, "a quote's walk, before the count");
	cr_assert_eq(sum, 14);
	cr_assert_eq(ofr(f, "ofr_b")->n_levels_p1, 3, "and learns it");
	put_level_of(f, "inv_4", "ofr_a", 3); /* an unknown count stays unknown */
	cr_assert_eq(ofr(f, "ofr_a")->n_levels_p1, 0);
	cr_assert_eq(inv_count_step(&f->sh, INV_COUNT_STEP), 0, "one step counts both");
	cr_assert_eq(ofr(f, "ofr_a")->n_levels_p1, 2);
	cr_assert_eq(one_level(f, "ofr_a"), &lvl(f, "inv_4")->row);
	cr_assert_eq(ofr(f, "ofr_b")->n_levels_p1, 3);
	cr_assert_null(one_level(f, "ofr_b"));
	cr_assert_eq(inv_count_step(&f->sh, INV_COUNT_STEP), 0, "nothing left to count");
	put_level_of(f, "inv_5", "ofr_a", 4);
	cr_assert_eq(ofr(f, "ofr_a")->n_levels_p1, 3);
	cr_assert_eq(sellable_of(f, "ofr_a", &sum), 2);
	cr_assert_eq(sum, 7);
	put_offer(f, "ofr_c", "9.00"); /* new after the restart: counted as it is stored */
	cr_assert_eq(ofr(f, "ofr_c")->n_levels_p1, 1);
	fixture_free(f);
}

/* The count after a restart goes a step at a time, each step on from where
 * the last stopped, with writes between the steps: every offer ends with
 * the count a walk finds (sellable_of checks it against the walk), an
 * offer with more levels than a step's budget included, and the steps
 * stop once all are counted.  A step that did not move on would never end
 * (the tick calls it forever); one that skipped an offer would leave it
 * to the walk, and one that counted wrong would hide stock. */
WM_TEST(inventory_level, the_loaded_offers_are_counted_step_by_step)
{
	struct fixture *f = fixture_new("lvsteps");
	static const struct {
		const char *offer;
		int levels;
	} want[] = {{"ofr_a", 1}, {"ofr_b", 0}, {"ofr_c", 2}, {"ofr_d", 1}, {"ofr_e", 0}, {"ofr_f", 3}, {"ofr_g", 1}};
	const unsigned n = sizeof(want) / sizeof(want[0]);
	int lv = 0;
	for (unsigned i = 0; i < n; i++) {
		put_offer(f, want[i].offer, "10.00");
		for (int k = 0; k < want[i].levels; k++) {
			char id[16];
			snprintf(id, sizeof(id), "inv_%02d", lv++);
			put_level_of(f, id, want[i].offer, 5);
		}
	}
	/* levels of offers this shard does not store, before the first and
	 * between two: skipped */
	put_level_full(f, "inv_80", "ofr_0", "loc_x", "sellable", 5);
	put_level_full(f, "inv_81", "ofr_cc", "loc_x", "sellable", 5);
	put_level_full(f, "inv_82", "ofr_cc", "loc_y", "sellable", 5);
	shard_close(&f->sh);
	fx_open(f);
	for (unsigned i = 0; i < n; i++)
		cr_assert_eq(ofr(f, want[i].offer)->n_levels_p1, 0, "%s: loaded uncounted", want[i].offer);
	unsigned steps = 0;
	while (inv_count_step(&f->sh, 2)) {
		cr_assert_lt(++steps, 2 * n, "a step that does not move on");
		if (steps == 1) { /* between two steps: a level added to ofr_f (not counted yet), one to ofr_b */
			put_level_of(f, "inv_90", "ofr_f", 5);
			put_level_of(f, "inv_91", "ofr_b", 5);
		}
	}
	cr_assert_geq(steps, 3, "a budget of 2 takes several steps (%u)", steps);
	cr_assert_eq(inv_count_step(&f->sh, 2), 0, "and then there is nothing left");
	for (unsigned i = 0; i < n; i++) {
		const struct offer *o = ofr(f, want[i].offer);
		int64_t sum;
		unsigned levels = (unsigned)want[i].levels + (!strcmp(want[i].offer, "ofr_f") || !strcmp(want[i].offer, "ofr_b"));
		cr_assert_eq(o->n_levels_p1, levels + 1, "%s: %u levels, count %u", want[i].offer, levels, o->n_levels_p1);
		cr_assert_eq(!!o->one_level, levels == 1, "%s", want[i].offer);
		cr_assert_eq(sellable_of(f, want[i].offer, &sum), levels, "%s", want[i].offer);
		cr_assert_eq(sum, 5 * (int64_t)levels);
	}
	fixture_free(f);
}
