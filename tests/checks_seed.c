/* checks_seed.c -- see checks_seed.h. */
#include "tests/checks_seed.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/config.h"
#include "engine/storage/shard.h"

#define SEED_MAX_SAVED 256

static struct shard seed_sh;
static struct config seed_cfg;
static struct saved {
	int table;
	char *id, *doc;
} saved[SEED_MAX_SAVED];
static unsigned n_saved;

void seed_open(const char *data_dir)
{
	char err[256];
	memset(&seed_sh, 0, sizeof(seed_sh));
	config_defaults(&seed_cfg);
	snprintf(seed_cfg.data_dir, sizeof(seed_cfg.data_dir), "%s", data_dir);
	snprintf(seed_cfg.wal_mode, sizeof(seed_cfg.wal_mode), "write");
	seed_cfg.snapshot_interval_s = 0;
	cr_assert_eq(shard_open(&seed_sh, &seed_cfg, err, sizeof(err)), 0, "seed: %s", err);
}

void seed_close(void)
{
	shard_close(&seed_sh);
}

/* Row r's document (stored or rendered: table.h row_doc), valid until the
 * next call. */
static const char *doc_of(const struct row *r, size_t *len)
{
	static struct buf scratch;
	const char *d = row_doc(r, &scratch, len);
	cr_assert_not_null(d, "row %.*s has a document", (int)r->id_len, r->id);
	return d;
}

static void save(int table, const struct row *r)
{
	cr_assert_lt(n_saved, SEED_MAX_SAVED);
	saved[n_saved].table = table;
	saved[n_saved].id = strndup(r->id, r->id_len);
	size_t dl;
	const char *d = doc_of(r, &dl);
	saved[n_saved].doc = strndup(d, dl);
	cr_assert(saved[n_saved].id && saved[n_saved].doc);
	n_saved++;
}

/* The ids of the rows of table matching (prefix, has), copied (the walk
 * must not run over rows it changes). */
static unsigned matching(int table, const char *id_prefix, const char *has, char ids[][256], unsigned max)
{
	unsigned n = 0;
	struct oidx_iter it;
	size_t pl = strlen(id_prefix);
	for (int ok = oidx_seek_ge(&seed_sh.tables[table].by_order, id_prefix, (uint32_t)pl, &it); ok;
	     ok = oidx_next(&it)) {
		const struct row *r = oidx_iter_val(&it);
		if (r->id_len < pl || memcmp(r->id, id_prefix, pl))
			break;
		size_t dl;
		if ((!has || strstr(doc_of(r, &dl), has)) && n < max && r->id_len < 256)
			snprintf(ids[n++], 256, "%.*s", (int)r->id_len, r->id);
	}
	return n;
}

int seed_del(int table, const char *id_prefix, const char *has)
{
	static char ids[64][256];
	unsigned n = matching(table, id_prefix, has, ids, 64);
	for (unsigned i = 0; i < n; i++) {
		const struct row *r = table_get(&seed_sh.tables[table], ids[i], strlen(ids[i]));
		cr_assert_not_null(r);
		save(table, r);
		txn_begin(&seed_sh);
		cr_assert_eq(txn_del(&seed_sh, (uint8_t)table, ids[i], strlen(ids[i])), 0);
		cr_assert_gt(txn_commit(&seed_sh), 0, "seed: delete %s", ids[i]);
	}
	return (int)n;
}

int seed_edit(int table, const char *id_prefix, const char *from, const char *to)
{
	static char ids[64][256];
	unsigned n = matching(table, id_prefix, from, ids, 64);
	for (unsigned i = 0; i < n; i++) {
		const struct row *r = table_get(&seed_sh.tables[table], ids[i], strlen(ids[i]));
		cr_assert_not_null(r);
		save(table, r);
		size_t dl;
		const char *rd = doc_of(r, &dl);
		const char *at = strstr(rd, from);
		size_t fl = strlen(from), tl = strlen(to), pre = (size_t)(at - rd);
		size_t len = dl - fl + tl;
		char *doc = malloc(len + 1);
		cr_assert_not_null(doc);
		memcpy(doc, rd, pre);
		memcpy(doc + pre, to, tl);
		memcpy(doc + pre + tl, at + fl, dl - pre - fl);
		doc[len] = 0;
		txn_begin(&seed_sh);
		cr_assert_eq(txn_put(&seed_sh, (uint8_t)table, ids[i], strlen(ids[i]), doc, len), 0);
		cr_assert_gt(txn_commit(&seed_sh), 0, "seed: edit %s: %s", ids[i], doc);
		free(doc);
	}
	return (int)n;
}

int seed_restore(void)
{
	int n = (int)n_saved;
	/* last change first: a row changed twice gets its first original */
	while (n_saved) {
		struct saved *s = &saved[--n_saved];
		txn_begin(&seed_sh);
		cr_assert_eq(txn_put(&seed_sh, (uint8_t)s->table, s->id, strlen(s->id), s->doc, strlen(s->doc)), 0);
		cr_assert_gt(txn_commit(&seed_sh), 0, "seed: restore %s", s->id);
		free(s->id);
		free(s->doc);
	}
	return n;
}
