/*
 * idpool.c -- the pool of ids rows refer to (see idpool.h for why).
 *
 * A copy is one malloc: its reference count, then the text and a NUL.
 * The pool's hash index is keyed by the text inside the copy
 * (hidx_init_in_value: 8 bytes a slot), so the copy is both key and value
 * and a row's pointer to the text finds its block by subtracting the
 * count's offset.  Counts change under the pool's mutex only.
 *
 * The memo.  Rows arrive in runs: a snapshot is written in id order, and
 * offers are made a wine or a partner's feed at a time, so consecutive
 * rows mostly name the ids the rows before them named.  A lookup first
 * compares the IDPOOL_MEMO copies the last lookups found (an offer names
 * a wine and a partner: two) and hashes only when they differ.  A copy
 * leaves the memo when it is freed.  Measured by `bench_scale load` of
 * 1M offers (a wine's ten offers together): with the mutex on a line of
 * its own but no memo, recovery ran ~12 % slower than before the pool;
 * with both, ~3.5 % (perf/bench.sh, session 54).
 */
#include "engine/storage/idpool.h"

#include <assert.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

struct pooled {
	uint32_t refs;
	uint16_t len;
	char text[];
};

_Static_assert(IDPOOL_MAX_LEN <= UINT16_MAX, "a copy's length fits its field");

static struct pooled *pooled_of(const char *text)
{
	return (struct pooled *)(uintptr_t)((uintptr_t)text - offsetof(struct pooled, text));
}

int idpool_init(struct idpool *p)
{
	memset(p, 0, sizeof(*p));
	hidx_init_in_value(&p->by_text, offsetof(struct pooled, text));
	/* adaptive: a holder keeps the mutex for a probe and a count, so a
	 * caller that finds it taken spins a little before it sleeps (WAL
	 * replay: the builder takes references while the loop gives back
	 * the replaced versions'; sleeping on every such meeting cost a
	 * futex wake each) */
	pthread_mutexattr_t a;
	if (pthread_mutexattr_init(&a))
		return -1;
	int rc = pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP) || pthread_mutex_init(&p->mu, &a) ? -1 : 0;
	pthread_mutexattr_destroy(&a);
	return rc;
}

void idpool_fini(struct idpool *p)
{
	size_t pos = 0;
	struct pooled *e;
	while ((e = hidx_next(&p->by_text, &pos, NULL, NULL)))
		free(e);
	hidx_free(&p->by_text);
	pthread_mutex_destroy(&p->mu);
	p->bytes = 0;
}

/* A new copy of s with one reference, filed; NULL on OOM (nothing
 * changed).  Under the mutex. */
static struct pooled *pooled_new(struct idpool *p, const char *s, size_t len)
{
	struct pooled *e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return NULL;
	e->refs = 1;
	e->len = (uint16_t)len;
	memcpy(e->text, s, len);
	e->text[len] = 0;
	if (hidx_put(&p->by_text, e->text, (uint32_t)len, e)) {
		free(e);
		return NULL;
	}
	p->bytes += malloc_usable_size(e);
	return e;
}

/* Make e the memo's first; the ones before `at` (its place in the memo,
 * or IDPOOL_MEMO when it was not in it) move down a place. */
static void memo_front(struct idpool *p, struct pooled *e, unsigned at)
{
	for (unsigned j = at < IDPOOL_MEMO ? at : IDPOOL_MEMO - 1; j > 0; j--)
		p->memo[j] = p->memo[j - 1];
	p->memo[0] = e;
}

/* The copy of s[0, len), NULL when none: the memo, then the index; a
 * copy found becomes the memo's first.  Under the mutex. */
static struct pooled *pooled_find(struct idpool *p, const char *s, size_t len)
{
	for (unsigned i = 0; i < IDPOOL_MEMO; i++) {
		struct pooled *m = p->memo[i];
		if (m && m->len == len && !memcmp(m->text, s, len)) {
			memo_front(p, m, i);
			return m;
		}
	}
	struct pooled *e = hidx_get_untracked(&p->by_text, s, (uint32_t)len);
	if (e)
		memo_front(p, e, IDPOOL_MEMO);
	return e;
}

/* Can s[0, len) be pooled?  (The empty text may come as NULL.) */
static int text_ok(const char *s, size_t len)
{
	return len <= IDPOOL_MAX_LEN && (!len || (s && !memchr(s, 0, len)));
}

/* One reference more to the copy of s[0, len), made when there is none;
 * NULL at IDPOOL_REFS_MAX or on OOM.  Under the mutex. */
static struct pooled *ref_locked(struct idpool *p, const char *s, size_t len)
{
	if (!len)
		s = "";
	struct pooled *e = pooled_find(p, s, len);
	if (e)
		return e->refs < IDPOOL_REFS_MAX ? (e->refs++, e) : NULL;
	if ((e = pooled_new(p, s, len)))
		memo_front(p, e, IDPOOL_MEMO);
	return e;
}

/* Give back one reference to e (NULL: nothing); free it with its last.
 * Under the mutex. */
static void unref_locked(struct idpool *p, struct pooled *e)
{
	if (!e)
		return;
	assert(e->refs > 0);
	if (--e->refs)
		return;
	for (unsigned i = 0; i < IDPOOL_MEMO; i++)
		if (p->memo[i] == e)
			p->memo[i] = NULL;
	void *was = hidx_del(&p->by_text, e->text, e->len);
	assert(was == e);
	(void)was;
	p->bytes -= malloc_usable_size(e);
	free(e);
}

const char *idpool_ref(struct idpool *p, const char *s, size_t len)
{
	if (!text_ok(s, len))
		return NULL;
	pthread_mutex_lock(&p->mu);
	struct pooled *e = ref_locked(p, s, len);
	pthread_mutex_unlock(&p->mu);
	return e ? e->text : NULL;
}

int idpool_ref2(struct idpool *p, const char *a, size_t al, const char *b, size_t bl, const char **pa,
		const char **pb)
{
	*pa = *pb = NULL;
	if (!text_ok(a, al) || !text_ok(b, bl))
		return -1;
	pthread_mutex_lock(&p->mu);
	struct pooled *x = ref_locked(p, a, al), *y = x ? ref_locked(p, b, bl) : NULL;
	if (x && !y)
		unref_locked(p, x);
	pthread_mutex_unlock(&p->mu);
	if (!x || !y)
		return -1;
	*pa = x->text;
	*pb = y->text;
	return 0;
}

int idpool_dup(struct idpool *p, const char *pooled)
{
	struct pooled *e = pooled_of(pooled);
	pthread_mutex_lock(&p->mu);
	int rc = e->refs < IDPOOL_REFS_MAX ? (e->refs++, 0) : -1;
	pthread_mutex_unlock(&p->mu);
	return rc;
}

void idpool_drop(struct idpool *p, const char *pooled)
{
	idpool_drop2(p, pooled, NULL);
}

void idpool_drop2(struct idpool *p, const char *a, const char *b)
{
	if (!a && !b)
		return;
	pthread_mutex_lock(&p->mu);
	unref_locked(p, a ? pooled_of(a) : NULL);
	unref_locked(p, b ? pooled_of(b) : NULL);
	pthread_mutex_unlock(&p->mu);
}

const char *idpool_find(struct idpool *p, const char *s, size_t len)
{
	if (len > IDPOOL_MAX_LEN || (len && !s))
		return NULL;
	if (!len)
		s = "";
	pthread_mutex_lock(&p->mu);
	struct pooled *e = pooled_find(p, s, len);
	pthread_mutex_unlock(&p->mu);
	return e ? e->text : NULL;
}

size_t idpool_bytes(struct idpool *p)
{
	pthread_mutex_lock(&p->mu);
	size_t n = p->bytes + (p->by_text.cap + p->by_text.old_cap) * hidx_slot_bytes(&p->by_text);
	pthread_mutex_unlock(&p->mu);
	return n;
}

#ifdef WM_TESTING
void idpool_test_set_refs(struct idpool *p, const char *pooled, uint32_t refs)
{
	pthread_mutex_lock(&p->mu);
	pooled_of(pooled)->refs = refs;
	pthread_mutex_unlock(&p->mu);
}
#endif

size_t idpool_count(struct idpool *p)
{
	pthread_mutex_lock(&p->mu);
	size_t n = hidx_count(&p->by_text);
	pthread_mutex_unlock(&p->mu);
	return n;
}
