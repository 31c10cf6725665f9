/*
 * table.h -- in-memory tables of typed rows.
 *
 * A row is one allocation: the resource's typed struct (which starts with
 * struct row), then the id bytes, then the row's canonical JSON document.
 * The document is what the WAL and snapshots store and what reads return;
 * the typed fields are what the engine computes on (status, country, roles,
 * prices, ...).  Both are made from the same document by the resource's
 * decode(), whether the row comes from a live write or from recovery, so
 * replay and the live path cannot disagree.
 *
 * Every table has a hash index by id and an ordered index by id (ids are
 * time-ordered, so id order is creation order: the default list order).
 * Resources add secondary indexes in index_add/index_del.
 */
#ifndef WM_TABLE_H
#define WM_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "engine/index.h"
#include "net/json.h"

struct config;

struct row {
	const char *id;
	uint16_t id_len;
	const char *doc;      /* canonical JSON, NUL-terminated */
	uint32_t doc_len;
	uint64_t lsn;         /* LSN of the write that produced this version */
};

struct table;

struct table_ops {
	uint8_t rec_table;    /* enum rec_table */
	const char *name;
	size_t row_size;      /* sizeof the typed struct (>= sizeof(struct row)) */
	/* Fill the typed fields from the parsed document.  0 or -1 (bad doc). */
	int (*decode)(struct table *t, struct row *r, const struct json_value *doc);
	/* Free anything decode() allocated (may be NULL). */
	void (*release)(struct row *r);
	/* Maintain secondary indexes (may be NULL). */
	int (*index_add)(struct table *t, struct row *r);
	void (*index_del)(struct table *t, struct row *r);
	/* Set up / tear down the resource's per-table state in t->ext. */
	int (*init)(struct table *t);
	void (*fini)(struct table *t);
	/* After every applied put (live and replay): enforce a bound such as
	 * "keep the newest N rows" deterministically (may be NULL). */
	void (*trim)(struct table *t);
};

struct table {
	const struct table_ops *ops;
	struct hidx by_id;
	struct oidx by_order;
	void *ext;            /* resource-owned secondary indexes */
	const struct config *cfg; /* the shard's configuration (bounds such as audit_keep) */
};

int table_init(struct table *t, const struct table_ops *ops, const struct config *cfg);
void table_fini(struct table *t);
static inline size_t table_count(const struct table *t) { return hidx_count(&t->by_id); }
struct row *table_get(const struct table *t, const char *id, size_t id_len);

/*
 * Install a new version of a row (insert or replace).  The document is
 * parsed and decoded; on failure nothing changes and -1 is returned with a
 * reason in why (>= 128 bytes).
 */
int table_put(struct table *t, const char *id, size_t id_len, const char *doc, size_t doc_len,
	      uint64_t lsn, char *why);
/* Remove a row; 0, or -1 if absent. */
int table_del(struct table *t, const char *id, size_t id_len);

#endif
