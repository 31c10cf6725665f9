/*
 * test_read_set_units.c -- the read set (engine/storage/table.h): what a response
 * depends on, from the rows it read; tests/test_reveals.c checks the same
 * rule on a live shard.
 */
#include "engine/storage/table.h"
#include "tests/wm_test.h"


static int plain_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	(void)r;
	(void)doc;
	return 0;
}

static const struct table_ops plain_ops = {
	.rec_table = 0, .name = "plain", .row_size = sizeof(struct row), .decode = plain_decode,
};

WM_TEST(reveals, read_set_rules)
{
	struct table t;
	char why[128];
	cr_assert_eq(table_init(&t, &plain_ops, NULL), 0);
	cr_assert_eq(table_put(&t, "a", 1, "{}", 2, 5, why), 0);
	cr_assert_eq(table_put(&t, "b", 1, "{}", 2, 7, why), 0);
	cr_assert_eq(table_del(&t, "b", 1, 9), 0);
	cr_assert_eq(table_put(&t, "c", 1, "{}", 2, 11, why), 0);
	const uint64_t all = 1000;

	table_reads_begin();
	cr_assert_eq(table_reads_end(all), 0, "nothing read depends on nothing");
	table_reads_begin();
	cr_assert_not_null(table_get(&t, "a", 1));
	cr_assert_eq(table_reads_end(all), 5, "a hit depends on the row's version");
	table_reads_begin();
	cr_assert_null(table_get(&t, "b", 1));
	cr_assert_eq(table_reads_end(all), 9, "a miss depends on the table's last delete");
	table_reads_begin();
	cr_assert_not_null(table_get(&t, "a", 1));
	cr_assert_not_null(table_get(&t, "c", 1));
	cr_assert_eq(table_reads_end(all), 11, "the highest of what was read");
	table_reads_begin();
	cr_assert_not_null(table_find(&t, &t.by_id, "a", 1));
	cr_assert_eq(table_reads_end(all), 5);
	table_reads_begin();
	cr_assert_null(table_find(&t, &t.by_id, "zz", 2));
	cr_assert_eq(table_reads_end(all), 11, "a secondary miss depends on the table's last change");
	table_reads_begin();
	cr_assert_not_null(table_get(&t, "a", 1));
	cr_assert_not_null(hidx_get(&t.by_id, "c", 1));
	cr_assert_eq(table_reads_end(all), all, "an unnoted probe makes the dependencies unknown");
	table_reads_begin();
	struct oidx_iter it;
	cr_assert_eq(oidx_seek_ge(&t.by_order, NULL, 0, &it), 1);
	cr_assert_eq(table_reads_end(all), all, "a walk makes the dependencies unknown");
	table_fini(&t);
}
