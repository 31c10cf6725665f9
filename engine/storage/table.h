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
 * A table whose rows can write their own document back from their typed
 * fields (table_ops.render: offers and inventory levels, the tables that
 * grow with the catalogue) keeps no document in a row for which that
 * gives exactly the bytes it was put with -- checked on every put, so a
 * read always returns the bytes that were written.  Such a row's block is
 * the typed struct and the id alone (an offer's document was half of its
 * memory), and every reader gets documents through row_doc() or
 * row_doc_write(), never r->doc directly.
 *
 * Every table has a hash index by id and an ordered index by id (ids are
 * time-ordered, so id order is creation order: the default list order).
 * Resources add secondary indexes in index_add/index_del.
 */
#ifndef WM_TABLE_H
#define WM_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine/storage/idpool.h"
#include "engine/storage/index.h"
#include "net/json.h"

struct buf;
struct config;
struct jw;

struct row {
	const char *id;
	const char *doc;      /* canonical JSON, NUL-terminated; NULL for a row
			       * that keeps none (table_ops.render): read a
			       * row's document with row_doc() */
	uint64_t lsn;         /* LSN of the write that produced this version */
	uint32_t doc_len;     /* 0 when doc is NULL */
	uint16_t id_len;      /* (widest members first: 32 bytes, not 40) */
	uint8_t table;        /* its table's enum rec_table (row_doc) */
};
/* A row starts with its id's address: a tail-keyed index (index.h
 * oidx_init_tail) reads a row's id through it. */
_Static_assert(offsetof(struct row, id) == 0, "a row is a tail-keyed index's value");

struct table;

struct table_ops {
	uint8_t rec_table;    /* enum rec_table */
	const char *name;
	size_t row_size;      /* sizeof the typed struct (>= sizeof(struct row)) */
	/* Fill the typed fields from the parsed document.  0 or -1 (bad doc). */
	int (*decode)(struct table *t, struct row *r, const struct json_value *doc);
	/* Free anything decode() allocated (may be NULL). */
	void (*release)(struct table *t, struct row *r);
	/* Maintain secondary indexes (may be NULL). */
	int (*index_add)(struct table *t, struct row *r);
	void (*index_del)(struct table *t, struct row *r);
	/* The entries index_add files r under in the ordered (B+tree)
	 * indexes of t->ext, alone (may be NULL).  A table with it lets a
	 * bulk load leave those entries out while it installs rows
	 * (table_defer_ordered: index_add then skips them while
	 * t->ordered_later is set) and file every row in one pass at the
	 * end, on another thread (table_build_ordered). */
	int (*index_add_ordered)(struct table *t, struct row *r);
	/* Set when index_add only inserts-or-replaces (hidx_set, oidx_set) and
	 * index_del only removes entries that still point at the row it is
	 * given: a replacing put then indexes the new version first and
	 * removes what is left of the old one, so a key both versions share
	 * is replaced in place (one B+tree descent) instead of deleted and
	 * inserted again. */
	uint8_t index_add_first;
	/* With index_add_first (may be NULL): 1 when two versions of a row
	 * have the same secondary-index keys.  The index_add of the new one
	 * then replaced every entry of the old one in place, and the put
	 * skips index_del, which would only look each key up again and find
	 * the new row there.  Most replacing puts are such: a stock move
	 * rewrites a level and its offer without changing what either is
	 * filed under.  When the two blocks are also the same size, the new
	 * version is copied into the old one's block and no index is touched
	 * at all (table.c install_over).  Test builds run index_del anyway
	 * and abort if it removes an entry (the verdict was wrong). */
	int (*index_keys_same)(const struct row *old, const struct row *r);
	/* A hint (may be NULL): prefetch what index_add(r) will probe first in
	 * a hash index of t->ext (the slot of r's natural key), so that a bulk
	 * install can start the cache miss a few rows ahead
	 * (table_row_prefetch).  Reads r and the index; changes nothing. */
	void (*index_prefetch)(const struct table *t, const struct row *r);
	/* With table_reserve (may be NULL): size the hash indexes of t->ext
	 * whose entries are one per row for `rows` in all.  0, or -1 on OOM
	 * (the index then grows as rows come). */
	int (*index_reserve)(struct table *t, size_t rows);
	/*
	 * After a row was added (old NULL) or removed (r NULL), or as it is
	 * replaced (both: old is still stored, r is the version going in and
	 * may be written) -- table_row_install and table_del, nothing else
	 * adds or removes a row.  `at` is the block that holds the new version
	 * once installed: r, or old's own block when r is copied over it in
	 * place (table.c install_over; r is then freed); NULL on a removal.
	 * For state a row keeps apart from its values, derived from another
	 * table (may be NULL): an offer's count of its inventory levels and
	 * the row of its only level (offer.h n_levels_p1, one_level), which a
	 * new version carries over and the inventory table's changes keep
	 * exact.
	 */
	void (*changed)(struct table *t, const struct row *old, struct row *r, const struct row *at);
	/* Recovery has installed every row of every table (the snapshot, then
	 * the WAL tail; also a shard that started empty), and the loop is
	 * about to serve: state derived from whole tables, built in one pass
	 * rather than row by row while they load (may be NULL).  Called once
	 * per load, on the loop, before the first request; the table's
	 * ordered indexes are complete. */
	void (*loaded)(struct table *t);
	/* Set up / tear down the resource's per-table state in t->ext. */
	int (*init)(struct table *t);
	void (*fini)(struct table *t);
	/* After every applied put (live and replay): enforce a bound such as
	 * "keep the newest N rows" deterministically (may be NULL). */
	void (*trim)(struct table *t);
	/* The top-level keys decode() reads (NULL-terminated), or NULL.  With
	 * a list, a put this process just wrote (table_put_live) builds only
	 * those members (json_parse_keep); recovery and replicas parse and
	 * validate every document whole.  Test builds parse live documents
	 * whole as well and abort when decode() reads a key not listed. */
	const char *const *decode_keys;
	/*
	 * The typed fast path (all three may be NULL).  A writer that built
	 * the document from typed values may stage those values with it
	 * (txn_put_typed, shard.h): applying its own commit then fills the
	 * row with decode_typed() from them instead of parsing the document.
	 * typed_size is the size of that value (a resource-defined struct,
	 * copied by value: it must not point at anything the commit does not
	 * outlive).  decode_typed must produce exactly the row decode() makes
	 * of the document: test builds decode the document as well and abort
	 * unless typed_same() (default: the typed fields are byte-equal, so
	 * both must leave unused bytes zero) says the two rows are equal.
	 */
	int (*decode_typed)(struct table *t, struct row *r, const void *typed);
	size_t typed_size;
	int (*typed_same)(const struct row *a, const struct row *b);
	/* Set when decode() and release() touch nothing but the document,
	 * the row they are given and data that never changes once the shard
	 * is open (t->ops, t->cfg, constant tables): no t->ext, no other
	 * table, no static buffer.  Recovery then builds this table's rows
	 * on a second thread while the loop installs the rows before them
	 * (engine/storage/recovery.c); a table without it is decoded on the
	 * loop, in its place in the snapshot's order. */
	uint8_t decode_pure;
	/*
	 * Snapshot images (both NULL, or both set; engine/storage/image.h).
	 * image appends the row's typed values to out; 0, or -1 (bound).
	 * from_image fills the typed struct of r (zeroed, with its id and
	 * document in place) from an image: the row decode() makes of the
	 * document, through the same checks a typed put's values pass; 0,
	 * or -1 for an image it refuses (short, overlong, a value out of
	 * bounds, an unknown layout version), with nothing left allocated.
	 * Like decode, it may read only t->ops, t->cfg and the image (it
	 * runs on recovery's builder thread).  Test builds decode the
	 * document as well and abort unless typed_same() (default: the typed
	 * fields are byte-equal) says the two rows are equal.
	 */
	int (*image)(const struct row *r, struct buf *out);
	int (*from_image)(struct table *t, struct row *r, const uint8_t *img, size_t len);
	/*
	 * Documents from typed fields (may be NULL; needs image and
	 * from_image).  render writes the document of r, from its typed
	 * fields alone, as one value into w (errors in w->err).  With it, a row keeps no
	 * stored document when render writes back exactly the one it was put
	 * with (compared byte for byte on every put; a document it does not
	 * reproduce, say one an older version wrote, is kept as it came), and
	 * a snapshot record of such a row holds its image and no document.
	 * Every read of a document then goes through row_doc().  decode() of
	 * such a table keeps no pointer into the document it is given: the
	 * row may not hold it.  Test builds abort when a typed put's document
	 * is not what render writes (the writer and render disagree).
	 */
	void (*render)(const struct row *r, struct jw *w);
};

/* Bytes of a document a put compares with what render writes, on the
 * stack; a longer one is kept as it came. */
#define ROW_RENDER_MAX 4096

/*
 * The document of row r: its stored one, or the one its table renders
 * (table_ops.render) written into scratch, which is reset first and owned
 * by the caller.  Either way NUL-terminated, with its length in *len; valid
 * until the row changes or scratch is used again.  NULL (with *len 0) when
 * rendering fails (scratch's bound, OOM).
 */
const char *row_doc(const struct row *r, struct buf *scratch, size_t *len);
/* Write row r's document into w as one value (jw_raw of the stored one,
 * or rendered there). */
void row_doc_write(struct jw *w, const struct row *r);

/* For decode_typed: copy the string src into the zeroed field dst of cap
 * bytes (at most cap - 1 of them, so the field stays NUL-terminated and
 * its unused bytes zero, as decode() leaves them).  0, or -1 when src does
 * not fit (decode() refuses such a document too). */
static inline int typed_str(char *dst, size_t cap, const char *src)
{
	size_t n = strnlen(src, cap);
	if (n >= cap)
		return -1;
	memcpy(dst, src, n);
	return 0;
}

struct table {
	const struct table_ops *ops;
	struct hidx by_id;
	struct oidx by_order;
	void *ext;            /* resource-owned secondary indexes */
	/* The ids of other rows this table's rows name, kept once (idpool.h):
	 * an offer's wine and originator, a level's location and owner.  A
	 * row's decode takes its references, its release gives them back;
	 * empty for the tables that keep none. */
	struct idpool ids;
	const struct config *cfg; /* the shard's configuration (bounds such as audit_keep) */
	uint64_t chg_lsn;     /* LSN of the last put or delete */
	uint64_t del_lsn;     /* LSN of the last delete */
	uint8_t ordered_later; /* table_defer_ordered: the ordered secondary entries wait for table_build_ordered */
	/* The shard's tables, indexed by enum rec_table (shard.c sets it), for
	 * a table_ops.changed that keeps another table's rows in step; NULL
	 * for a table on its own (a scratch one: perf/bench_scale). */
	struct table *siblings;
};

int table_init(struct table *t, const struct table_ops *ops, const struct config *cfg);

/* For a table whose extension (t->ext) is one ordered index of its own
 * (a work queue, a secondary key): table_ops.init and .fini, and the index. */
int table_oidx_ext_init(struct table *t);
void table_oidx_ext_fini(struct table *t);
static inline struct oidx *table_oidx_ext(const struct table *t) { return t->ext; }
void table_fini(struct table *t);
static inline size_t table_count(const struct table *t) { return hidx_count(&t->by_id); }
/* The row with this id, or NULL.  Adds what it saw to the read set (below):
 * the row's LSN, or for a miss the table's last delete. */
struct row *table_get(const struct table *t, const char *id, size_t id_len);
/* A lookup in one of the table's secondary hash indexes (h lives in t->ext)
 * whose value is a row of t, added to the read set precisely: the row's
 * LSN, or for a miss the table's last change (a put can move a secondary
 * key away).  Use it where a request reads through such an index. */
struct row *table_find(const struct table *t, const struct hidx *h, const char *key, size_t key_len);

/*
 * Install a new version of a row (insert or replace).  The document is
 * parsed and decoded; on failure nothing changes and -1 is returned with a
 * reason in why (>= 128 bytes).
 */
int table_put(struct table *t, const char *id, size_t id_len, const char *doc, size_t doc_len,
	      uint64_t lsn, char *why);
/* table_put for a document this process wrote on its live path (a commit
 * of its own, or a replica's record table_check accepted): the same row,
 * built with the table's decode_keys when it has them. */
int table_put_live(struct table *t, const char *id, size_t id_len, const char *doc, size_t doc_len,
		   uint64_t lsn, char *why);
/* table_put_live for a document staged with its typed values (see
 * decode_typed above): the row is built from `typed`, and the document is
 * only stored.  Falls back to table_put_live when the table has no
 * decode_typed. */
int table_put_typed(struct table *t, const char *id, size_t id_len, const char *doc, size_t doc_len,
		    uint64_t lsn, const void *typed, char *why);
/* A bulk load (snapshot recovery) that knows how many rows the table will
 * hold: size the hash index by id, and the table's own one-per-row hash
 * indexes (index_reserve), for `rows` in all, so the load never rehashes
 * them (hidx_reserve: no bigger than growth would make it).  0, or -1 on
 * OOM (an index not sized then grows as rows come). */
int table_reserve(struct table *t, size_t rows);
/*
 * table_put in halves, for recovery's builder thread
 * (engine/storage/recovery.c), which builds rows in memory of its own
 * and hands them to the loop:
 *   table_row_size      the bytes of a row block for this id and document;
 *   table_row_build_at  lay out a row block at `at` (that many bytes,
 *                       max-aligned) and decode its document into it, in
 *                       no index: 0, or -1 with why (>= 128 bytes; what
 *                       decode allocated is released).  Reads only t->ops,
 *                       t->cfg and what decode() reads, so for a
 *                       decode_pure table it may run on another thread
 *                       while the loop installs rows;
 *   table_row_adopt     a malloc'd copy of such a row, which takes over
 *                       what the typed struct owns (decode's allocations):
 *                       the original is then dropped without a release.
 *                       NULL on OOM;
 *   table_row_release   release what such a row owns, for one never adopted;
 *   table_row_install   install a malloc'd row as its id's version (the
 *                       loop only; never fails: an index that cannot take
 *                       it stops the process, as every put does).
 */
size_t table_row_size(const struct table *t, size_t id_len, size_t doc_len);
int table_row_build_at(struct table *t, void *at, const char *id, size_t id_len, const char *doc, size_t doc_len,
		       uint64_t lsn, char *why);
/* table_row_build_at from a REC_V_IMAGE record: the typed struct from the
 * image (from_image), the document only copied.  -1 with why when the
 * table has no images or refuses this one. */
int table_row_build_image_at(struct table *t, void *at, const char *id, size_t id_len, const char *doc,
			     size_t doc_len, const uint8_t *img, size_t img_len, uint64_t lsn, char *why);
/* table_put of such a record (the loop's own build of a snapshot record). */
int table_put_image(struct table *t, const char *id, size_t id_len, const char *doc, size_t doc_len,
		    const uint8_t *img, size_t img_len, uint64_t lsn, char *why);
struct row *table_row_adopt(const struct table *t, const struct row *at);
void table_row_release(struct table *t, struct row *r);
void table_row_install(struct table *t, struct row *r);
/*
 * Bulk loads (recovery's snapshot): table_defer_ordered makes t's installs
 * leave out the entries of its ordered secondary indexes
 * (table_ops.index_add_ordered; 1 when t has them, else 0 and nothing
 * changes).  table_build_ordered then files every row of t there, in id
 * order, and ends the deferral: 0, or -1 (out of memory: the indexes are
 * incomplete, the load must fail).  It reads and writes t alone -- its
 * rows, its by_order and t->ext -- so it may run on a second thread while
 * the loop installs rows of other tables, as long as nothing touches t
 * meanwhile (no lookup, no put) until it has returned.  Until then a
 * lookup through one of those indexes misses rows.
 */
int table_defer_ordered(struct table *t);
int table_build_ordered(struct table *t);
/* A hint before table_row_install(t, r) a few rows later: prefetch the
 * slot of r's id in the id index and what index_prefetch names.  In a
 * table of a million rows each is a cache (and TLB) miss the install would
 * otherwise wait for (recovery.c).  Changes nothing. */
/* A hint before table_get(t, id) a little later, for a caller about to
 * look up several ids one after another (each a miss or two in a big
 * table): stage 0 starts loading the id's slot in the id index; stage 1,
 * after stage 0 of every id, the typed struct and id of the row that slot
 * points at (hidx_peek, table_row_prefetch_body).  Changes nothing; an id
 * out of bounds is ignored. */
void table_prefetch(const struct table *t, const char *id, size_t id_len, int stage);
void table_row_prefetch(const struct table *t, const struct row *r);
/* A hint before reading row r of t: start loading its typed struct and
 * its id (a walk that reads each row it reaches calls it a few rows
 * ahead).  Changes nothing. */
void table_row_prefetch_body(const struct table *t, const struct row *r);
/* Would table_put accept this document?  Parses and decodes it into a
 * scratch row and frees it; nothing changes.  0, or -1 with why (>= 128
 * bytes).  The replication subscriber checks every record it received
 * before it logs any (a logged record that then fails to apply stops the
 * process, see shard.c). */
int table_check(struct table *t, const char *id, size_t id_len, const char *doc, size_t doc_len, char *why);
/* Remove a row (the delete has LSN lsn); 0, or -1 if absent. */
int table_del(struct table *t, const char *id, size_t id_len, uint64_t lsn);

/*
 * The read set: what the response being built may reveal (DESIGN.md
 * section 3: no response reveals state that is not yet durable, and only
 * what it reveals need be durable).  The loop thread handles one request at
 * a time, so there is one read set:
 *   table_reads_begin()  before the request is handled;
 *   table_get/table_find add the LSN of each row they return (a miss adds
 *                        the LSN of the change that could have removed it);
 *   table_reads_end(all) after it: the highest LSN noted, or `all` (the
 *                        shard's newest state) when the request walked or
 *                        probed an index without noting what it found
 *                        (index.h: idx_probes), whose dependencies are
 *                        then unknown.
 * So a /healthz, a 401 or a 405 depends on nothing, a read by id on its
 * rows, a list on everything: never less than it reveals.
 */
void table_reads_begin(void);
void table_reads_note(uint64_t lsn);
uint64_t table_reads_end(uint64_t all);

#endif
