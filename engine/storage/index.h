/*
 * index.h -- the two index kinds every table is served from.
 *
 *  hidx: hash index, open addressing with linear probing, keyed by byte
 *        strings hashed with XXH3-64.  Used for lookup by id and for
 *        uniqueness (slug, GTIN, natural key, ...).  Keys are NOT copied: the
 *        caller guarantees that the key bytes live as long as the entry
 *        (normally they live inside the row the entry points to).
 *
 *  oidx: ordered index (B+tree) keyed by byte strings compared with memcmp
 *        then length (shorter first), serving cursor pagination and ranges:
 *        seek to the first key >= k, then walk forward (or backward) in
 *        order.  Keys ARE copied into the tree (composite keys such as
 *        country|id are built on the fly by callers).  Keys are unique; a
 *        secondary index makes them unique by appending the row id.
 *
 * Both map a key to an opaque `void *` (the row).  Neither allocates on a
 * lookup or a walk.  Both have explicit bounds: key length <= IDX_MAX_KEY.
 * Single-threaded: the event loop owns them.  Snapshots use fork(), so no
 * read-view machinery is needed here.
 */
#ifndef WM_INDEX_H
#define WM_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IDX_MAX_KEY 255u

/*
 * Lookups and walks since the process started (hidx_get, hidx_next,
 * oidx_get, oidx_seek_ge/le each add one).  The engine compares it before
 * and after a request to tell a response built only from rows it noted
 * precisely (table.h: the read set) from one that walked or probed an
 * index, whose dependencies are then unknown.  Single-threaded like the
 * indexes themselves.
 */
extern uint64_t idx_probes;

/* ---- hash index ------------------------------------------------------- */

/* A slot is 16 bytes: the key's address rides in the tag word with a byte
 * of its hash and its length (index.c's top).  An index made with
 * hidx_init_in_value keeps the tag word alone (8 bytes a slot): each value
 * holds its key at a fixed offset, so the value is the key's address less
 * that offset. */
struct hidx_slot {
	uint64_t tag;        /* 0 empty, 1 tombstone; live: key address << 16 | hash's top byte << 8 | length */
	void *val;
};

/* A new slot array of up to this many bytes is touched (its pages faulted
 * in) at once; a bigger one a few pages per incremental move step (one
 * made by hidx_reserve, a bulk load, at once whatever its size). */
#define HIDX_TOUCH_AT_ONCE ((size_t)256 << 10)

struct hidx {
	void *slots;         /* cap slots of hidx_slot_bytes() each */
	size_t cap;          /* power of two */
	size_t count;        /* live entries, in both arrays */
	size_t tombstones;   /* in slots */
	/* incremental rehash (index.c): the previous array while its entries move */
	void *old;
	size_t old_cap, moving, move_pos;
	size_t touched;      /* bytes of slots written once so far (index.c touch_pages) */
	size_t key_at;       /* in_value: where a value keeps its key */
	uint8_t slot_shift;  /* log2 of a slot's bytes: 4, or 3 when in_value */
	bool in_value;       /* hidx_init_in_value */
};

/* The bytes one slot of h takes (16, or 8 for an index in_value). */
static inline size_t hidx_slot_bytes(const struct hidx *h) { return (size_t)1 << h->slot_shift; }

/* While on, the arrays this thread grows are made as hidx_reserve makes
 * them: touched at once whatever their size.
 * Recovery turns it on around its installs: nothing is served yet, and a
 * probe into a page not yet touched maps the zero page, which the first
 * write then replaces (two faults, and a TLB shoot-down on the builder
 * thread's CPU). */
void hidx_bulk_load(bool on);

void hidx_init(struct hidx *h);
/* An index whose every value holds its key key_at bytes in (a table's
 * rows by id: the id right after the typed struct; offers by natural
 * key: a slice of the row).  A slot keeps only the key's address, and the
 * value is that address less key_at: 8 bytes a slot instead of 16.  Every
 * insert must then pass key == (const char *)val + key_at, else it is
 * refused (-1) and nothing changes; key may not be NULL. */
void hidx_init_in_value(struct hidx *h, size_t key_at);
/* Release the arrays; the index is empty again and keeps its kind. */
void hidx_free(struct hidx *h);
/* Insert; returns 0, 1 if the key already exists (nothing changed), -1 on
 * OOM, key too long, or key bytes at an address past 2^48 (a slot keeps
 * 48 bits of it: every user-space address of x86-64 and AArch64 Linux
 * fits unless mmap was asked for a higher one). */
int hidx_put(struct hidx *h, const char *key, uint32_t key_len, void *val);
/* Make room for n live entries in all, so inserts up to n never rehash
 * (sized as growth would have sized it: no memory beyond that).  0, or -1
 * on OOM (index unchanged; inserts still grow it as they go). */
int hidx_reserve(struct hidx *h, size_t n);
/* Insert or replace the value (and the key pointer, which must compare
 * equal).  Returns 0 or -1. */
int hidx_set(struct hidx *h, const char *key, uint32_t key_len, void *val);
/* hidx_set that also stores in *prev the value it replaced (NULL when the
 * key was absent): one probe instead of a get and a set.  0 or -1 (bad
 * key / OOM: nothing changed, *prev NULL). */
int hidx_swap(struct hidx *h, const char *key, uint32_t key_len, void *val, void **prev);
/* hidx_swap, unless the key is present and keep(its value, arg) is true
 * (keep NULL: never): then nothing changes and *prev is that value.  One
 * probe either way (a table's install asks whether the stored version can
 * be overwritten in place, and installs the new one when not).  0
 * swapped, 1 kept, -1 bad key / OOM (nothing changed, *prev NULL). */
int hidx_swap_unless(struct hidx *h, const char *key, uint32_t key_len, void *val, void **prev,
		     bool (*keep)(const void *old, const void *arg), const void *arg);
void *hidx_get(const struct hidx *h, const char *key, uint32_t key_len);
/* A hint: start loading the home slot of key in the current array (a
 * lookup or insert of it a little later then finds it in the cache).
 * Changes nothing; an empty index or a key out of bounds is ignored. */
void hidx_prefetch(const struct hidx *h, const char *key, uint32_t key_len);
/* The hint's second stage, some time after hidx_prefetch(h, key): a guess
 * of key's value, to start loading what it points at (a table's id index:
 * the stored row, which the lookup's compare and its caller read next) --
 * the value of key's home slot in the current array when that slot holds
 * an entry of key's hash, else NULL.  Not compared: it may be another
 * key's value, so never a lookup.  Reads the slot only; changes nothing. */
const void *hidx_peek(const struct hidx *h, const char *key, uint32_t key_len);
/* hidx_get without counting a probe: for a caller that accounts for what it
 * reads itself (table.h's read set notes the row's LSN; runtime maps such as
 * rate-limit buckets hold nothing durable). */
void *hidx_get_untracked(const struct hidx *h, const char *key, uint32_t key_len);
/* Remove; returns the old value or NULL. */
void *hidx_del(struct hidx *h, const char *key, uint32_t key_len);
static inline size_t hidx_count(const struct hidx *h) { return h->count; }
/* Iterate all entries in unspecified order: *pos starts at 0; returns the
 * value and sets *key and *key_len, or NULL at the end. */
void *hidx_next(const struct hidx *h, size_t *pos, const char **key, uint32_t *key_len);

/* ---- ordered index ---------------------------------------------------- */

struct oidx_node;

struct oidx {
	struct oidx_node *root;
	size_t count;
	uint32_t height;
	uint32_t tail; /* oidx_init_tail: a key's last part is its value's id, kept there only */
};

/* A position in the tree; invalid once the tree is modified.  key[] is
 * where oidx_iter_key puts the key whole. */
struct oidx_iter {
	struct oidx_node *leaf;
	uint32_t pos;
	uint8_t key[IDX_MAX_KEY];
};

#ifdef WM_TESTING
/* Test builds: entries hidx_del and oidx_del have removed, in every index
 * (table.c checks with it that a put index_keys_same calls equal deletes
 * nothing). */
extern unsigned long idx_test_deletions;
#endif

void oidx_init(struct oidx *t);
/*
 * oidx_init for a tree whose every key ends with its value's id, as a
 * table's secondary index files rows (head | row id): each value starts
 * with a `const char *` to that id, NUL-terminated, non-empty, never
 * changed while the value is in the tree (struct row's id).  A leaf keeps
 * each key's head only and reads the rest from the value: the id is not
 * stored twice (issue 15's memory per row: a secondary entry of an offer
 * or a level was ~40 bytes, most of it the row id).  The order, the keys
 * the iterators give and every call are as for oidx_init; put and set
 * refuse (-1) a key that does not end with the value's id, and set the
 * value of a key stored with an id of another length (the same bytes cut
 * elsewhere).  A search reads a value's id only where the key searched
 * goes on past that entry's head, equal up to there: a seek by a head
 * alone, where no head is a proper prefix of another (a table's heads end
 * with a NUL or are of one length), reads none.  So a value in the tree
 * must stay readable while the tree holds it (a table takes a row's
 * entries out before it frees the row).
 */
void oidx_init_tail(struct oidx *t);
/* Free every node; the tree is then empty, of the same kind. */
void oidx_free(struct oidx *t);
/* Insert (key copied); 0, 1 if present (nothing changed), -1 OOM/too long. */
int oidx_put(struct oidx *t, const void *key, uint32_t key_len, void *val);
/* Replace the value of an existing key, or insert.  0 or -1. */
int oidx_set(struct oidx *t, const void *key, uint32_t key_len, void *val);
void *oidx_get(const struct oidx *t, const void *key, uint32_t key_len);
/* Remove; returns the old value or NULL. */
void *oidx_del(struct oidx *t, const void *key, uint32_t key_len);
static inline size_t oidx_count(const struct oidx *t) { return t->count; }

/* Position at the first key >= key (key NULL/len 0: the first key).
 * Returns 1 if positioned on an entry, 0 if past the end. */
int oidx_seek_ge(const struct oidx *t, const void *key, uint32_t key_len, struct oidx_iter *it);
/* oidx_seek_ge of n keys at once (n <= OIDX_SEEK_MANY_MAX): its[i] and
 * ok[i] as oidx_seek_ge(t, keys[i], lens[i], &its[i]) would give them.
 * The n descents go down together, a level at a time, each level's nodes
 * prefetched before any of them is searched: in a tree far bigger than
 * the cache their misses overlap (about a height of round trips to
 * memory instead of n heights).  Adds n to idx_probes. */
#define OIDX_SEEK_MANY_MAX 16u
void oidx_seek_ge_many(const struct oidx *t, unsigned n, const void *const keys[], const uint32_t lens[],
		       struct oidx_iter its[], int ok[]);
/* Position at the first key, without adding to idx_probes (a bulk pass
 * over the whole tree, not a request's read: table_build_ordered, which
 * may run on a second thread).  1 or 0 (empty tree). */
int oidx_first(const struct oidx *t, struct oidx_iter *it);
/* Position at the last key <= key (key NULL: the last key).  1 or 0. */
int oidx_seek_le(const struct oidx *t, const void *key, uint32_t key_len, struct oidx_iter *it);
/* Current entry; valid only after a seek/next/prev returned 1.  The key
 * is copied whole into it->key (a leaf keeps the prefix its keys share
 * once, apart from them): valid until the iterator is used again. */
void *oidx_iter_val(const struct oidx_iter *it);
const void *oidx_iter_key(struct oidx_iter *it, uint32_t *key_len);
/* Does the current key start with pfx[0, len)?  No copy. */
bool oidx_iter_has_prefix(const struct oidx_iter *it, const void *pfx, uint32_t len);
/* The current key against key[0, len) in the index's order (bytes, a
 * proper prefix first): <0, 0 or >0 as memcmp.  No copy. */
int oidx_iter_cmp(const struct oidx_iter *it, const void *key, uint32_t len);
/* Step; returns 1 if on an entry, 0 when walked off the end. */
int oidx_next(struct oidx_iter *it);
int oidx_prev(struct oidx_iter *it);

#ifdef WM_TESTING
/* Test builds only: verify ordering, separator bounds, counts, leaf links
 * (both ways), equal leaf depth and node fill.  0, or -1 after printing the
 * first violation to stderr.  O(n). */
int oidx_check(const struct oidx *t);

/* Test builds only: how full the leaves are.  A leaf keeps the prefix
 * its keys share once (at most prefix_max bytes) and each key's bytes
 * after it.  An entry is charged entry_overhead + the length it is stored
 * with (slot, length byte, value), but at least min_charge; fill is the
 * charges summed over all leaves, vfill the same with every key counted
 * whole, cap what one leaf can hold, node_bytes what one leaf costs in
 * memory, leaf_min the least vfill of a leaf off the right spine,
 * prefix_bytes the leaves' prefix lengths summed. */
struct oidx_leaf_stats {
	size_t leaves, fill, vfill, cap, node_bytes, entry_overhead, min_charge, leaf_min, prefix_max, prefix_bytes;
};
void oidx_leaf_stats(const struct oidx *t, struct oidx_leaf_stats *s);
/* Test builds only: the length of the prefix the leaf under a valid
 * iterator keeps. */
uint32_t oidx_iter_leaf_prefix(const struct oidx_iter *it);
#endif

#endif
