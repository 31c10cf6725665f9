/*
 * table.c -- rows and their primary indexes (see table.h).
 *
 * Replacing a row allocates the new version first and only then unlinks
 * the old one, so a failed decode or OOM leaves the table untouched.
 */
#include "engine/storage/table.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/buf.h"
#include "net/jsonw.h"

/* The tables that render documents, by enum rec_table, for row_doc(),
 * which has only the row.  Filled by table_init; every shard of a process
 * sets the same ops, so one table serves them all. */
static const struct table_ops *renderers[256];

int table_init(struct table *t, const struct table_ops *ops, const struct config *cfg)
{
	assert(!ops->render || (ops->image && ops->from_image));
	if (ops->render)
		renderers[ops->rec_table] = ops;
	memset(t, 0, sizeof(*t));
	t->ops = ops;
	t->cfg = cfg;
	hidx_init_in_value(&t->by_id, ops->row_size); /* a row's id follows its typed struct */
	oidx_init(&t->by_order);
	if (idpool_init(&t->ids))
		return -1;
	if (ops->init && ops->init(t)) {
		idpool_fini(&t->ids);
		return -1;
	}
	return 0;
}

static void row_free(struct table *t, struct row *r)
{
	if (t->ops->release)
		t->ops->release(t, r);
	free(r);
}

void table_fini(struct table *t)
{
	if (!t->ops)
		return;
	size_t pos = 0;
	const char *k;
	uint32_t kl;
	struct row *r;
	while ((r = hidx_next(&t->by_id, &pos, &k, &kl)))
		row_free(t, r);
	if (t->ops->fini)
		t->ops->fini(t);
	idpool_fini(&t->ids); /* after the rows: their releases gave back what they held */
	hidx_free(&t->by_id);
	oidx_free(&t->by_order);
	t->ops = NULL;
}

/* The read set of the request in hand (table.h).  probes_at is idx_probes
 * when it began: any probe since that nobody noted makes it unknown. */
static struct {
	uint64_t lsn;
	uint64_t probes_at;
} reads;

void table_reads_begin(void)
{
	reads.lsn = 0;
	reads.probes_at = idx_probes;
}

void table_reads_note(uint64_t lsn)
{
	if (lsn > reads.lsn)
		reads.lsn = lsn;
}

uint64_t table_reads_end(uint64_t all)
{
	return idx_probes != reads.probes_at ? all : reads.lsn;
}

struct row *table_get(const struct table *t, const char *id, size_t id_len)
{
	if (id_len > IDX_MAX_KEY)
		return NULL;
	struct row *r = hidx_get_untracked(&t->by_id, id, (uint32_t)id_len);
	table_reads_note(r ? r->lsn : t->del_lsn);
	return r;
}

struct row *table_find(const struct table *t, const struct hidx *h, const char *key, size_t key_len)
{
	if (key_len > IDX_MAX_KEY)
		return NULL;
	struct row *r = hidx_get_untracked(h, key, (uint32_t)key_len);
	table_reads_note(r ? r->lsn : t->chg_lsn);
	return r;
}

/* Parse a document for decode(): whole, or (live, with decode_keys) only
 * the members decode() reads.  Test builds check that a live document
 * parses whole too: only text this process wrote may take the short way. */
static struct json_doc *doc_parse(const struct table *t, const char *doc, size_t doc_len, int live,
				  struct json_error *jerr)
{
	if (!live || !t->ops->decode_keys)
		return json_parse(doc, doc_len, NULL, jerr);
#ifdef WM_TESTING
	struct json_doc *whole = json_parse(doc, doc_len, NULL, jerr);
	if (!whole) {
		fprintf(stderr, "table %s: a live document does not parse whole: %s\n", t->ops->name, jerr->msg);
		abort();
	}
	json_doc_free(whole);
#endif
	return json_parse_keep(doc, doc_len, t->ops->decode_keys, jerr);
}

/* Is id_len a row id's length (1..IDX_MAX_KEY)?  1, or 0 with why. */
static int id_ok(size_t id_len, char *why)
{
	if (id_len == 0 || id_len > IDX_MAX_KEY) {
		snprintf(why, 128, "bad id length %zu", id_len);
		return 0;
	}
	return 1;
}

/* Contract (table.h): the bytes of a row block. */
size_t table_row_size(const struct table *t, size_t id_len, size_t doc_len)
{
	return t->ops->row_size + id_len + 1 + doc_len + 1;
}

/* Place the document after the id of the block r (which has room for it)
 * and point the row at it. */
static void row_put_doc(struct row *r, const char *doc, size_t doc_len)
{
	char *p = (char *)r->id + r->id_len + 1;
	memcpy(p, doc, doc_len);
	p[doc_len] = 0;
	r->doc = p;
	r->doc_len = (uint32_t)doc_len;
}

/* Lay out a row block at r (table_row_size bytes): the typed struct
 * zeroed, then the id and the document (none when doc is NULL), each with
 * its NUL. */
static struct row *row_fill(const struct table *t, struct row *r, const char *id, size_t id_len,
			    const char *doc, size_t doc_len, uint64_t lsn)
{
	/* Only the typed struct needs zeroing: the id and the document (each
	 * with its NUL) fill the rest of the block. */
	memset(r, 0, t->ops->row_size);
	char *p = (char *)r + t->ops->row_size;
	memcpy(p, id, id_len);
	p[id_len] = 0;
	r->id = p;
	r->id_len = (uint16_t)id_len;
	r->table = t->ops->rec_table;
	if (doc)
		row_put_doc(r, doc, doc_len);
	r->lsn = lsn;
	return r;
}

/* Allocate a row block (row_fill's layout; no room for a document when doc
 * is NULL).  NULL on OOM. */
static struct row *row_alloc(const struct table *t, const char *id, size_t id_len, const char *doc,
			     size_t doc_len, uint64_t lsn)
{
	struct row *r = malloc(table_row_size(t, id_len, doc ? doc_len : 0));
	return r ? row_fill(t, r, id, id_len, doc, doc_len, lsn) : NULL;
}

/* 1 when the table renders r's document as exactly doc (table.h render). */
static int renders_as(const struct table *t, const struct row *r, const char *doc, size_t doc_len)
{
	char mem[ROW_RENDER_MAX];
	struct buf b;
	buf_init_fixed(&b, mem, sizeof(mem));
	struct jw w;
	jw_init(&w, &b);
	t->ops->render(r, &w);
	return !w.err && b.len == doc_len && !memcmp(mem, doc, doc_len);
}

/* The row r of a rendering table, built without a document from doc (the
 * one it was put with): r itself when render writes doc back, else a block
 * with doc in it that takes over r's typed struct (r is freed).  NULL on
 * OOM, with what the typed struct owns released and r freed. */
static struct row *row_keep_doc(struct table *t, struct row *r, const char *doc, size_t doc_len)
{
	if (renders_as(t, r, doc, doc_len))
		return r;
	struct row *w = malloc(table_row_size(t, r->id_len, doc_len));
	if (w) {
		memcpy(w, r, t->ops->row_size);
		char *p = (char *)w + t->ops->row_size;
		memcpy(p, r->id, r->id_len + 1u);
		w->id = p;
		row_put_doc(w, doc, doc_len);
	} else if (t->ops->release)
		t->ops->release(t, r);
	free(r);
	return w;
}

/* Decode doc (the block's own, or for a rendering table the one it was put
 * with) into r's typed struct (parsed whole, or live with the table's key
 * list).  0, or -1 with why; on failure decode's allocations are released,
 * the block itself is the caller's. */
static int row_decode(struct table *t, struct row *r, const char *doc, size_t doc_len, int live, char *why)
{
	struct json_error jerr;
	struct json_doc *jd = doc_parse(t, doc, doc_len, live, &jerr);
	if (!jd) {
		snprintf(why, 128, "%s document does not parse: %.60s at %zu", t->ops->name, jerr.msg, jerr.offset);
		return -1;
	}
	int rc = t->ops->decode ? t->ops->decode(t, r, json_root(jd)) : 0;
	json_doc_free(jd);
	if (rc) {
		snprintf(why, 128, "%s document %.*s does not decode", t->ops->name, (int)r->id_len, r->id);
		if (t->ops->release)
			t->ops->release(t, r);
		return -1;
	}
	return 0;
}

/* Allocate a row block and decode the document into it (a rendering
 * table's row keeps it only when render does not write it back). */
static struct row *row_make(struct table *t, const char *id, size_t id_len, const char *doc,
			    size_t doc_len, uint64_t lsn, int live, char *why)
{
	int bare = t->ops->render != NULL;
	struct row *r = row_alloc(t, id, id_len, bare ? NULL : doc, doc_len, lsn);
	if (!r) {
		snprintf(why, 128, "out of memory");
		return NULL;
	}
	if (row_decode(t, r, bare ? doc : r->doc, doc_len, live, why)) {
		free(r);
		return NULL;
	}
	if (bare && !(r = row_keep_doc(t, r, doc, doc_len)))
		snprintf(why, 128, "out of memory");
	return r;
}

const char *row_doc(const struct row *r, struct buf *scratch, size_t *len)
{
	if (r->doc) {
		*len = r->doc_len;
		return r->doc;
	}
	const struct table_ops *ops = renderers[r->table];
	buf_reset(scratch);
	*len = 0;
	if (!ops)
		return NULL;
	struct jw w;
	jw_init(&w, scratch);
	ops->render(r, &w);
	if (w.err || buf_putc(scratch, 0))
		return NULL;
	*len = --scratch->len;
	return scratch->data;
}

void row_doc_write(struct jw *w, const struct row *r)
{
	const struct table_ops *ops = r->doc ? NULL : renderers[r->table];
	if (r->doc)
		jw_raw(w, r->doc, r->doc_len);
	else if (ops)
		ops->render(r, w);
	else
		w->err = 1;
}

#ifdef WM_TESTING
/* Test builds: the row decode_typed (or from_image) made must be the row
 * decode() makes of the same document (table.h); anything else is a bug
 * in the writer or in decode_typed, and stops the test. */
static void typed_check(struct table *t, const struct row *r)
{
	char why[128];
	struct buf scratch;
	buf_init(&scratch, 0);
	size_t dl;
	const char *doc = row_doc(r, &scratch, &dl);
	struct row *d = doc ? row_make(t, r->id, r->id_len, doc, dl, r->lsn, 0, why) : NULL;
	if (!doc)
		snprintf(why, sizeof(why), "its document does not render");
	if (!d) {
		fprintf(stderr, "table %s: a typed put's document does not decode: %s\n", t->ops->name, why);
		abort();
	}
	size_t head = sizeof(struct row);
	int same = t->ops->typed_same ? t->ops->typed_same(r, d)
				      : !memcmp((const char *)r + head, (const char *)d + head, t->ops->row_size - head);
	if (!same) {
		fprintf(stderr, "table %s: row %.*s from typed values differs from its document %s\n", t->ops->name,
			(int)r->id_len, r->id, doc);
		abort();
	}
	row_free(t, d);
	buf_free(&scratch);
}
#endif

/* Allocate a row block and fill it from the writer's typed values. */
static struct row *row_make_typed(struct table *t, const char *id, size_t id_len, const char *doc,
				  size_t doc_len, uint64_t lsn, const void *typed, char *why)
{
	int bare = t->ops->render != NULL;
	struct row *r = row_alloc(t, id, id_len, bare ? NULL : doc, doc_len, lsn);
	if (!r) {
		snprintf(why, 128, "out of memory");
		return NULL;
	}
	if (t->ops->decode_typed(t, r, typed)) {
		/* The values do not make a row: a writer's bug.  The document
		 * is what the log holds, so the row is decoded from it (the
		 * row recovery will make); test builds stop. */
#ifdef WM_TESTING
		fprintf(stderr, "table %s: typed values of %.*s refused\n", t->ops->name, (int)id_len, id);
		abort();
#endif
		row_free(t, r);
		return row_make(t, id, id_len, doc, doc_len, lsn, 1, why);
	}
#ifdef WM_TESTING
	if (bare && !renders_as(t, r, doc, doc_len)) {
		fprintf(stderr, "table %s: the document of %.*s is not what render writes: %.*s\n", t->ops->name,
			(int)id_len, id, (int)doc_len, doc);
		abort();
	}
#endif
	/* A typed put's document is what render writes back: its writer
	 * renders it with the function render calls, from the values the row
	 * was just filled with (test builds check both, above and in
	 * typed_check, on every typed put of the suite).  So the row keeps no
	 * document without rendering it a second time to compare (renders_as
	 * was ~2 % of an order's instructions: its level twice, its offer
	 * once).  A document past ROW_RENDER_MAX takes the general path, as
	 * an untyped put of it would. */
	if (bare && doc_len > ROW_RENDER_MAX && !(r = row_keep_doc(t, r, doc, doc_len))) {
		snprintf(why, 128, "out of memory");
		return NULL;
	}
#ifdef WM_TESTING
	typed_check(t, r);
#endif
	return r;
}

/* Fill the block r (laid out, typed struct zeroed) from an image; on a
 * refusal what from_image allocated is released.  0, or -1 with why. */
static int row_from_image(struct table *t, struct row *r, const uint8_t *img, size_t img_len, char *why)
{
	if (!t->ops->from_image || t->ops->from_image(t, r, img, img_len)) {
		snprintf(why, 128, "%s image of %.*s refused", t->ops->name, (int)r->id_len, r->id);
		if (t->ops->release)
			t->ops->release(t, r);
		return -1;
	}
#if defined(WM_TESTING) && !defined(WM_FUZZ)
	typed_check(t, r);
#endif
	return 0;
}

/* An image record's id and document: the id fits, and a record without a
 * document is one of a table that renders them.  1, or 0 with why. */
static int image_rec_ok(const struct table *t, const char *id, size_t id_len, size_t doc_len, char *why)
{
	if (!id_ok(id_len, why))
		return 0;
	if (!doc_len && !t->ops->render) {
		snprintf(why, 128, "%s image of %.*s without its document", t->ops->name, (int)id_len, id);
		return 0;
	}
	return 1;
}

int table_row_build_image_at(struct table *t, void *at, const char *id, size_t id_len, const char *doc,
			     size_t doc_len, const uint8_t *img, size_t img_len, uint64_t lsn, char *why)
{
	if (!image_rec_ok(t, id, id_len, doc_len, why))
		return -1;
	return row_from_image(t, row_fill(t, at, id, id_len, doc_len ? doc : NULL, doc_len, lsn), img, img_len,
			      why);
}

int table_put_image(struct table *t, const char *id, size_t id_len, const char *doc, size_t doc_len,
		    const uint8_t *img, size_t img_len, uint64_t lsn, char *why)
{
	if (!image_rec_ok(t, id, id_len, doc_len, why))
		return -1;
	struct row *r = row_alloc(t, id, id_len, doc_len ? doc : NULL, doc_len, lsn);
	if (!r) {
		snprintf(why, 128, "out of memory");
		return -1;
	}
	if (row_from_image(t, r, img, img_len, why)) {
		free(r);
		return -1;
	}
	table_row_install(t, r);
	return 0;
}

/* Contract (table.h): size the id index for `rows` rows in all. */
int table_reserve(struct table *t, size_t rows)
{
	int rc = hidx_reserve(&t->by_id, rows);
	if (t->ops->index_reserve && t->ops->index_reserve(t, rows))
		rc = -1;
	return rc;
}

/* Contract (table.h): a row decoded from a stored document into the
 * caller's memory, not installed.  Touches only t->ops and t->cfg (and
 * what decode reads). */
int table_row_build_at(struct table *t, void *at, const char *id, size_t id_len, const char *doc, size_t doc_len,
		       uint64_t lsn, char *why)
{
	if (!id_ok(id_len, why))
		return -1;
	if (!t->ops->render) {
		struct row *r = row_fill(t, at, id, id_len, doc, doc_len, lsn);
		return row_decode(t, r, r->doc, r->doc_len, 0, why);
	}
	/* at has room for the document: it goes in only when render does not
	 * write it back */
	struct row *r = row_fill(t, at, id, id_len, NULL, doc_len, lsn);
	if (row_decode(t, r, doc, doc_len, 0, why))
		return -1;
	if (!renders_as(t, r, doc, doc_len))
		row_put_doc(r, doc, doc_len);
	return 0;
}

struct row *table_row_adopt(const struct table *t, const struct row *at)
{
	size_t sz = table_row_size(t, at->id_len, at->doc_len);
	struct row *r = malloc(sz);
	if (!r)
		return NULL;
	memcpy(r, at, sz);
	r->id = (char *)r + t->ops->row_size;
	if (at->doc)
		r->doc = r->id + r->id_len + 1;
	return r;
}

int table_defer_ordered(struct table *t)
{
	t->ordered_later = t->ops->index_add_ordered != NULL;
	return t->ordered_later;
}

int table_build_ordered(struct table *t)
{
	if (!t->ordered_later)
		return 0;
	t->ordered_later = 0;
	struct oidx_iter it;
	for (int ok = oidx_first(&t->by_order, &it); ok; ok = oidx_next(&it))
		if (t->ops->index_add_ordered(t, oidx_iter_val(&it)))
			return -1;
	return 0;
}

void table_prefetch(const struct table *t, const char *id, size_t id_len, int stage)
{
	if (id_len > IDX_MAX_KEY)
		return;
	if (!stage) {
		hidx_prefetch(&t->by_id, id, (uint32_t)id_len);
		return;
	}
	/* the whole typed struct, not only its first line: a quote reads a
	 * wine's producer, volume and abv, a producer's partner (PGO=0,
	 * bench_scale's catalogues, 5-line p50 big 24.1 -> 23.6 us) */
	const struct row *r = hidx_peek(&t->by_id, id, (uint32_t)id_len);
	if (r)
		table_row_prefetch_body(t, r);
}

void table_row_prefetch(const struct table *t, const struct row *r)
{
	hidx_prefetch(&t->by_id, r->id, r->id_len);
	if (t->ops->index_prefetch)
		t->ops->index_prefetch(t, r);
}

void table_row_prefetch_body(const struct table *t, const struct row *r)
{
	const char *p = (const char *)r, *end = p + t->ops->row_size;
	for (; p < end; p += 64)
		__builtin_prefetch(p);
	__builtin_prefetch(end); /* the id: row_fill lays it out right after */
}

void table_row_release(struct table *t, struct row *r)
{
	if (t->ops->release)
		t->ops->release(t, r);
}

/* An index that cannot take a row leaves the table's indexes disagreeing
 * with each other: never continue past it. */
static _Noreturn void index_failed(const struct table *t, const char *what)
{
	fprintf(stderr, "table %s: %s failed (out of memory): stopping, indexes would be inconsistent\n",
		t->ops->name, what);
	abort();
}

/* index_del of an add-first table's replaced version old, unless
 * index_keys_same says the index_add of r left nothing of it. */
static void del_left(struct table *t, struct row *old, const struct row *r)
{
	if (!t->ops->index_keys_same || !t->ops->index_keys_same(old, r)) {
		t->ops->index_del(t, old);
		return;
	}
#ifdef WM_TESTING
	unsigned long before = idx_test_deletions;
	t->ops->index_del(t, old);
	assert(idx_test_deletions == before && "index_keys_same: the old version kept an entry");
#endif
}

/*
 * Install r over the version old of its row inside old's own block, when
 * every index can stay as it is: the blocks are the same size (same id,
 * same document length: 0 for a table that renders its documents) and
 * the table says both versions are filed under the same keys
 * (index_keys_same: fits_in_place).  Then no index entry changes --
 * by_id, by_order and every secondary entry keep pointing at the same
 * block, which now holds the new version -- and r's block is freed (what
 * its typed struct owns now belongs to old's; what old's owned is
 * released first).
 *
 * Why.  Most replacing puts are stock moves: an order rewrites its level
 * twice and its offer once, nothing either is filed under changes, and
 * the usual way still pays a hash swap, a by_order descent and one
 * descent per secondary index (three for a level) to repoint each entry
 * at the new block, a malloc'd block's first touch, and a free.  No
 * pointer to a row survives a put of it anywhere (the old block used to
 * be freed), so no reader can tell which block holds the new version.
 * Test builds check the verdict the usual way first (index_add of r, then
 * del_left, which aborts if index_del would remove an entry), then point
 * the entries back at old's block.
 */
static void install_over(struct table *t, struct row *old, struct row *r)
{
	size_t sz = table_row_size(t, r->id_len, r->doc ? r->doc_len : 0);
#ifdef WM_TESTING
	if (t->ops->index_add(t, r))
		index_failed(t, "a secondary index");
	del_left(t, old, r);
#endif
	if (t->ops->release)
		t->ops->release(t, old);
	memcpy(old, r, sz);
	old->id = (char *)old + t->ops->row_size;
	if (old->doc)
		old->doc = old->id + old->id_len + 1;
#ifdef WM_TESTING
	if (t->ops->index_add(t, old)) /* before r goes: its entries' keys may be slices of r */
		index_failed(t, "a secondary index");
#endif
	free(r);
	t->chg_lsn = old->lsn;
}

/* A row being installed into its table (fits_in_place's argument). */
struct installing {
	const struct table *t;
	const struct row *r;
};

/* hidx_swap_unless's keep: may the row being installed go into the block
 * of its stored version old (install_over)? */
static bool fits_in_place(const void *old_, const void *arg)
{
	const struct installing *in = arg;
	const struct row *old = old_, *r = in->r;
	return old->doc_len == r->doc_len && !old->doc == !r->doc && in->t->ops->index_keys_same(old, r);
}

void table_row_install(struct table *t, struct row *r)
{
	/* One probe finds the version replaced and either keeps it, to be
	 * overwritten in place, or installs the new one (the secondary index
	 * hooks never read by_id). */
	void *prev;
	struct installing in = {t, r};
	int kept = hidx_swap_unless(&t->by_id, r->id, r->id_len, r, &prev,
				    t->ops->index_keys_same ? fits_in_place : NULL, &in);
	if (kept < 0)
		index_failed(t, "the id index");
	if (t->ops->changed)
		t->ops->changed(t, prev, r, kept ? prev : r);
	if (kept) {
		install_over(t, prev, r);
		return;
	}
	struct row *old = prev;
	int add_first = old && t->ops->index_add_first;
	if (old && !add_first && t->ops->index_del)
		t->ops->index_del(t, old);
	if (oidx_set(&t->by_order, r->id, r->id_len, r))
		index_failed(t, "the ordered id index");
	if (t->ops->index_add && t->ops->index_add(t, r))
		index_failed(t, "a secondary index");
	if (add_first && t->ops->index_del)
		del_left(t, old, r); /* only what still points at old */
	if (old)
		row_free(t, old);
	t->chg_lsn = r->lsn;
}

/* Install a row: built from typed values when given (live), else decoded
 * from the document (live: with the table's key list). */
static int put_as(struct table *t, const char *id, size_t id_len, const char *doc, size_t doc_len,
		  uint64_t lsn, int live, const void *typed, char *why)
{
	if (!id_ok(id_len, why))
		return -1;
	struct row *r = typed ? row_make_typed(t, id, id_len, doc, doc_len, lsn, typed, why)
			      : row_make(t, id, id_len, doc, doc_len, lsn, live, why);
	if (!r)
		return -1;
	table_row_install(t, r);
	return 0;
}

int table_put(struct table *t, const char *id, size_t id_len, const char *doc, size_t doc_len,
	      uint64_t lsn, char *why)
{
	return put_as(t, id, id_len, doc, doc_len, lsn, 0, NULL, why);
}

int table_put_live(struct table *t, const char *id, size_t id_len, const char *doc, size_t doc_len,
		   uint64_t lsn, char *why)
{
	return put_as(t, id, id_len, doc, doc_len, lsn, 1, NULL, why);
}

int table_put_typed(struct table *t, const char *id, size_t id_len, const char *doc, size_t doc_len,
		    uint64_t lsn, const void *typed, char *why)
{
	return put_as(t, id, id_len, doc, doc_len, lsn, 1, t->ops->decode_typed ? typed : NULL, why);
}

int table_check(struct table *t, const char *id, size_t id_len, const char *doc, size_t doc_len, char *why)
{
	if (!id_ok(id_len, why))
		return -1;
	struct row *r = row_make(t, id, id_len, doc, doc_len, 0, 0, why);
	if (!r)
		return -1;
	row_free(t, r);
	return 0;
}

int table_del(struct table *t, const char *id, size_t id_len, uint64_t lsn)
{
	struct row *old = table_get(t, id, id_len);
	if (!old)
		return -1;
	if (t->ops->index_del)
		t->ops->index_del(t, old);
	hidx_del(&t->by_id, id, (uint32_t)id_len);
	oidx_del(&t->by_order, id, (uint32_t)id_len);
	if (t->ops->changed)
		t->ops->changed(t, old, NULL, NULL);
	row_free(t, old);
	t->chg_lsn = t->del_lsn = lsn;
	return 0;
}

int table_oidx_ext_init(struct table *t)
{
	struct oidx *x = calloc(1, sizeof(*x));
	if (!x)
		return -1;
	oidx_init(x);
	t->ext = x;
	return 0;
}

void table_oidx_ext_fini(struct table *t)
{
	if (!t->ext)
		return;
	oidx_free(t->ext);
	free(t->ext);
	t->ext = NULL;
}
