/*
 * checks_seed.h -- seeding inconsistencies on purpose, through the storage
 * layer, into the data directory of a STOPPED shard (the consistency-check
 * tests, tests/test_checks.c): the test process opens the directory itself
 * (shard_open, as recovery does), changes rows with txn_put/txn_del, and
 * closes it; the shard restarted on it replays those writes like its own.
 * No engine header leaks through this one (test_checks.c is jansson-based).
 */
#ifndef WM_CHECKS_SEED_H
#define WM_CHECKS_SEED_H

/* Open data_dir (fails the test if it cannot be opened). */
void seed_open(const char *data_dir);
/* Close it (every change is in its WAL). */
void seed_close(void);
/* Delete every row of `table` (enum rec_table) whose id starts with
 * id_prefix and whose document contains `has` (NULL: any); kept for
 * seed_restore.  How many. */
int seed_del(int table, const char *id_prefix, const char *has);
/* In every row of `table` whose id starts with id_prefix and whose document
 * contains `from`: its first `from` replaced by `to`; the original kept for
 * seed_restore.  How many. */
int seed_edit(int table, const char *id_prefix, const char *from, const char *to);
/* Write back the original of every row seed_del and seed_edit changed,
 * and forget them.  How many. */
int seed_restore(void);

#endif
