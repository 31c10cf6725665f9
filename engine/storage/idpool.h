/*
 * idpool.h -- the ids a table's rows refer to, each kept once.
 *
 * An offer names its wine and its originator, an inventory level its
 * location and its owner: ids of other rows, from a few thousand partners
 * and locations and at most one wine per ten offers.  A row that keeps
 * each as a fixed 40-byte field pays 80 bytes an offer and 80 a level for
 * what the pool keeps once: a row keeps the pooled copy's address instead
 * (8 bytes), reads it as the NUL-terminated string it is, and two rows
 * name the same id exactly when they hold the same address -- so a
 * natural key made of pooled ids is a slice of the row that compares and
 * hashes as bytes (offer.c, inventory.c).
 *
 * A pooled copy lives while a row refers to it: each row holds one
 * reference per field (taken by its decode, given back by its release),
 * and the copy is freed with the last.  The pool is shared by the threads
 * that build rows (recovery decodes on a second thread while the loop
 * installs and releases): every call takes its mutex.  Nothing else of a
 * row's is shared.
 */
#ifndef WM_IDPOOL_H
#define WM_IDPOOL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/storage/index.h"

struct pooled;

/* The longest string a pool keeps (an index key's bound; ids are far
 * shorter: engine/storage/id.h ID_MAX_LEN). */
#define IDPOOL_MAX_LEN IDX_MAX_KEY
/* References one pooled copy can carry; one more is refused. */
#define IDPOOL_REFS_MAX UINT32_MAX

/* Cache-line aligned (and so padded to whole lines): the pool sits in
 * struct table, whose other members the loop writes on every install
 * while recovery's builder thread takes the pool's mutex for every row
 * it decodes; sharing a line with them made each lock a cache miss. */
#define IDPOOL_MEMO 2
struct idpool {
	_Alignas(64) pthread_mutex_t mu;
	struct hidx by_text; /* text -> its pooled copy (the key is the copy itself) */
	size_t bytes;        /* malloc'd for the copies (usable sizes) */
	/* The copies the last calls found, most recent first (idpool.c:
	 * rows come in runs that name the same wine or partner) */
	struct pooled *memo[IDPOOL_MEMO];
};

/* An empty pool.  0, or -1 (the mutex could not be made). */
int idpool_init(struct idpool *p);
/* Free every copy, referred to or not (the rows are gone). */
void idpool_fini(struct idpool *p);
/* The pooled copy of s[0, len), with one reference more (made, with one,
 * when the pool has none).  NULL when len > IDPOOL_MAX_LEN, s holds a NUL
 * before len, the copy carries IDPOOL_REFS_MAX already, or on OOM. */
const char *idpool_ref(struct idpool *p, const char *s, size_t len);
/* idpool_ref of two texts under one lock (a row's two pooled fields):
 * 0 with both copies in *pa and *pb, or -1 with neither taken (both
 * NULL). */
int idpool_ref2(struct idpool *p, const char *a, size_t al, const char *b, size_t bl, const char **pa,
		const char **pb);
/* One reference more to a pooled copy (a row made from another one's
 * fields).  0, or -1 at IDPOOL_REFS_MAX (nothing changed). */
int idpool_dup(struct idpool *p, const char *pooled);
/* Give back one reference (NULL: nothing); the copy is freed with its
 * last. */
void idpool_drop(struct idpool *p, const char *pooled);
/* idpool_drop of two copies (either may be NULL) under one lock. */
void idpool_drop2(struct idpool *p, const char *a, const char *b);
/* The pooled copy of s[0, len) without taking a reference, or NULL when
 * the pool has none (then no row refers to that id). */
const char *idpool_find(struct idpool *p, const char *s, size_t len);
/* How many distinct strings the pool keeps. */
size_t idpool_count(struct idpool *p);
/* The memory it takes: its copies (malloc's usable sizes) and its hash
 * index's slots. */
size_t idpool_bytes(struct idpool *p);

#ifdef WM_TESTING
/* Test builds: set a pooled copy's reference count (to reach
 * IDPOOL_REFS_MAX without four billion rows). */
void idpool_test_set_refs(struct idpool *p, const char *pooled, uint32_t refs);
#endif

#endif
