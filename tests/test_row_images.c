/*
 * test_row_images.c -- snapshot records with row images (record.h
 * REC_V_IMAGE, engine/storage/image.h): offers, inventory levels and wines
 * are written with their typed values beside their documents, recovery
 * builds them from the images, and an image recovery cannot take refuses
 * the start like a document it cannot take.  (Test builds also decode every
 * image-built row's document and abort unless the two rows are equal:
 * table.c typed_check.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/catalogue/wine.h"
#include "engine/edge/api.h"
#include "engine/storage/image.h"
#include "engine/storage/record.h"
#include "engine/storage/shard.h"
#include "engine/stock/inventory.h"
#include "engine/supply/offer.h"
#include "snapshot/snapshot.h"
#include "tests/harness.h"
#include "tests/shard_fixture.h"
#include "tests/wm_test.h"

#define IMG_ROWS 2500 /* of each table: several of recovery's batches */

/* An offer document with every optional member and list shape in turn;
 * with the permissions of i % 6 == 5 it is the one the engine writes,
 * which an offer does not keep (table.h render), the others are kept. */
#define OFFER_RENDERED(i) ((i) % 6 == 5)
static int offer_doc(char *d, size_t n, int i)
{
	static const char *const perms[] = {
		"null",
		"{\"default\":\"any\"}",
		"{\"default\":\"none\",\"named_sellers\":[\"ptn_s1\",\"ptn_s2\"]}",
		"{\"default\":\"any\",\"allowed_countries\":[\"DE\",\"FR\",\"IT\"],\"blocked_countries\":[\"GB\"]}",
		"{\"default\":\"none\",\"blocked_countries\":[\"NO\",\"CH\"]}",
		"{\"default\":\"none\",\"allowed_countries\":[\"AT\"],\"blocked_countries\":[],\"named_sellers\":"
		"[\"ptn_s3\"]}",
	};
	static const char *const cur[] = {"EUR", "GBP", "JPY", "CHF"};
	static const char *const status[] = {"draft", "active", "paused", "withdrawn"};
	static const char *const cond[] = {"new", "bin_end", "mixed_vintage"};
	static const char *const inco[] = {"EXW", "FCA", "DAP", "DDP", "CIF"};
	const char *c = cur[i % 4];
	char price[32];
	if (!strcmp(c, "JPY"))
		snprintf(price, sizeof(price), "%d", 1 + i);
	else
		snprintf(price, sizeof(price), "%d.%02d", 1 + i % 500, i % 100);
	return snprintf(d, n,
			"{\"id\":\"ofr_%06d\",\"offer_id\":\"ofr_%06d\",\"wine_id\":\"wine_%05d\","
			"\"originator_id\":\"ptn_o%d\",\"seller_price\":%s,\"currency\":\"%s\",\"qty_available\":%d,"
			"\"condition\":\"%s\",\"incoterm\":\"%s\",\"min_order_qty\":%s,\"case_size\":%s,"
			"\"valid_from\":%s,\"valid_to\":%s,\"permissions\":%s,\"network_shareable\":%s,"
			"\"status\":\"%s\",\"source\":\"%s\",\"created_at\":\"2026-11-29T10:00:00.000Z\","
			"\"updated_at\":\"2026-11-29T10:00:01.000Z\"}",
			i, i, i / 3, i % 17, price, c, i % 7 == 0 ? 0 : i * 13 % 100000, cond[i % 3], inco[i % 5],
			i % 2 ? "6" : "null", i % 3 ? "12" : "null", i % 4 ? "null" : "\"2026-01-01T00:00:00.000Z\"",
			i % 5 ? "null" : "\"2027-06-30T00:00:00.000Z\"", perms[i % 6], i % 6 ? "true" : "false",
			status[i % 4], i % 2 ? "direct" : "feed");
}

/* A level document: for even i the one the engine writes (every member,
 * in its order, with atp and updated_at), which a level does not keep
 * (table.h render); for odd i one it does not write (no atp, no
 * updated_at), which the row keeps as it came. */
static int level_doc(char *d, size_t n, int i)
{
	static const char *const cond[] = {"sellable", "damaged", "quarantine"};
	long on = (long)i * 31 % 100000, res = on / 3, alloc = on / 5;
	if (i % 2)
		return snprintf(d, n,
				"{\"id\":\"inv_%06d\",\"sku\":\"SKU-%06d\",\"offer_id\":\"ofr_%06d\",\"owner_entity_id\":"
				"\"ptn_o%d\",\"location_id\":\"loc_%d\",\"condition\":\"%s\",\"on_hand\":%ld,\"incoming\":%d,"
				"\"reserved\":%ld,\"allocated\":%ld,\"created_at\":\"2026-11-29T10:00:00.000Z\"}",
				i, i, i, i % 17, i % 9, cond[i % 3], on, i % 11, res, alloc);
	return snprintf(d, n,
			"{\"id\":\"inv_%06d\",\"sku\":\"SKU-%06d\",\"offer_id\":\"ofr_%06d\",\"owner_entity_id\":"
			"\"ptn_o%d\",\"location_id\":\"loc_%d\",\"condition\":\"%s\",\"on_hand\":%ld,\"incoming\":%d,"
			"\"reserved\":%ld,\"allocated\":%ld,\"atp\":%ld,\"created_at\":\"2026-11-29T10:00:00.000Z\","
			"\"updated_at\":\"2026-11-29T10:00:0%d.000Z\"}",
			i, i, i, i % 17, i % 9, cond[i % 3], on, i % 11, res, alloc, on - res - alloc, i % 10);
}

static void put_rows(struct fixture *f)
{
	char d[2048], id[32];
	for (int i = 0; i < IMG_ROWS; i++) {
		txn_begin(&f->sh);
		int dl = offer_doc(d, sizeof(d), i);
		int il = snprintf(id, sizeof(id), "ofr_%06d", i);
		cr_assert_eq(txn_put(&f->sh, REC_T_OFFER, id, (size_t)il, d, (size_t)dl), 0);
		dl = level_doc(d, sizeof(d), i);
		il = snprintf(id, sizeof(id), "inv_%06d", i);
		cr_assert_eq(txn_put(&f->sh, REC_T_INVENTORY, id, (size_t)il, d, (size_t)dl), 0);
		cr_assert_neq(txn_commit(&f->sh), 0, "row %d", i);
	}
	txn_begin(&f->sh); /* an event, and a row of a table without images */
	cr_assert_eq(txn_event(&f->sh, "t.images", NULL, "{}", 2), 0);
	cr_assert_eq(txn_put(&f->sh, REC_T_DOC_SEQ, "INV.ptn_o1", 10, "{\"last\":7}", 10), 0);
	cr_assert_neq(txn_commit(&f->sh), 0);
}

/* Every row of table tb with its document (stored or rendered: table.h
 * row_doc), whether it keeps it, and its typed fields, one line each. */
static char *dump(struct fixture *f, int tb)
{
	struct buf b, scratch;
	buf_init(&b, 1 << 26);
	buf_init(&scratch, 0);
	struct oidx_iter it;
	for (int ok = oidx_seek_ge(&f->sh.tables[tb].by_order, NULL, 0, &it); ok; ok = oidx_next(&it)) {
		const struct row *r = oidx_iter_val(&it);
		size_t dl;
		const char *doc = row_doc(r, &scratch, &dl);
		cr_assert_not_null(doc, "row %s has a document", r->id);
		cr_assert_eq(strlen(doc), dl);
		buf_printf(&b, "%s\t%s\t%s\t", r->id, r->doc ? "kept" : "rendered", doc);
		if (tb == REC_T_OFFER) {
			const struct offer *o = (const struct offer *)r;
			buf_printf(&b, "%s %s %s %u %u %u %u %u %u %lld %lld %lld %lld %lld %lld", o->wine_id,
				   o->originator_id, o->currency, o->status, o->condition, o->incoterm, o->source,
				   o->shareable, o->deflt, (long long)o->price_minor, (long long)o->qty,
				   (long long)o->moq, (long long)o->case_size, (long long)offer_window(o).from_ms,
				   (long long)offer_window(o).to_ms);
			for (unsigned k = 0; k < o->n_allowed + o->n_blocked; k++)
				buf_printf(&b, " %s%s", k < o->n_allowed ? "+" : "-", offer_countries(o)[k]);
			for (unsigned k = 0; k < o->n_named; k++)
				buf_printf(&b, " @%s", offer_named(o)[k]);
		} else {
			const struct inv_level *l = (const struct inv_level *)r;
			buf_printf(&b, "%s %s %s %s %u %lld %lld %lld %lld %lld %lld", inv_level_sku(l), l->offer_id, l->owner_id,
				   l->location_id, l->condition, (long long)l->on_hand, (long long)l->incoming,
				   (long long)l->reserved, (long long)l->allocated, (long long)l->created_ms,
				   (long long)l->updated_ms);
		}
		buf_printf(&b, "\n");
	}
	char *s = strndup(b.data ? b.data : "", b.len);
	buf_free(&b);
	buf_free(&scratch);
	return s;
}

struct recs {
	size_t n, cap;
	uint8_t **rec;
	size_t *len;
	size_t v2[REC_T_COUNT_], v1[REC_T_COUNT_];
	size_t docless[REC_T_COUNT_]; /* image records without a document */
};

static int collect(void *ctx, const void *rec, size_t len)
{
	struct recs *s = ctx;
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		s->rec = realloc(s->rec, s->cap * sizeof(*s->rec));
		s->len = realloc(s->len, s->cap * sizeof(*s->len));
		cr_assert(s->rec && s->len);
	}
	s->rec[s->n] = malloc(len);
	cr_assert_not_null(s->rec[s->n]);
	memcpy(s->rec[s->n], rec, len);
	s->len[s->n++] = len;
	size_t off = 0;
	struct rec_view rv;
	cr_assert_eq(rec_decode(rec, len, &off, &rv), 1);
	if (rv.version == REC_V_IMAGE) {
		s->v2[rv.table]++;
		const char *doc;
		uint32_t dl, il;
		const uint8_t *img;
		cr_assert_eq(rec_doc_image(&rv, &doc, &dl, &img, &il), 0);
		s->docless[rv.table] += dl == 0;
	} else
		s->v1[rv.table]++;
	return 0;
}

static void recs_free(struct recs *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->rec[i]);
	free(s->rec);
	free(s->len);
}

static void snap_path(const struct fixture *f, char *out, size_t n)
{
	snprintf(out, n, "%s/snap/%020llu.snap", f->cfg.data_dir, (unsigned long long)f->sh.lsn);
}

/* The snapshot at lsn rewritten from s, its record `at` replaced by rec. */
static void rewrite(const struct fixture *f, uint64_t lsn, const struct recs *s, size_t at, const void *rec,
		    size_t len)
{
	char dir[600], err[256], p[700];
	snprintf(dir, sizeof(dir), "%s/snap", f->cfg.data_dir);
	snprintf(p, sizeof(p), "%s/%020llu.snap", dir, (unsigned long long)lsn);
	unlink(p);
	struct snap_writer *w = snap_writer_open(dir, lsn, err, sizeof(err));
	cr_assert_not_null(w, "%s", err);
	for (size_t i = 0; i < s->n; i++)
		cr_assert_eq(i == at ? snap_writer_add(w, rec, len) : snap_writer_add(w, s->rec[i], s->len[i]), 0);
	cr_assert_eq(snap_writer_commit(w, err, sizeof(err)), 0, "%s", err);
}

WM_TEST(row_images, offers_and_levels_come_back_from_their_images)
{
	struct fixture *f = fixture_new("images");
	char err[256];
	put_rows(f);
	cr_assert_eq(shard_snapshot_write(&f->sh, err, sizeof(err)), 0, "%s", err);
	char *offers = dump(f, REC_T_OFFER), *levels = dump(f, REC_T_INVENTORY);
	char p[700];
	snap_path(f, p, sizeof(p));
	struct recs s = {0};
	cr_assert_eq(snap_load(p, collect, &s, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.v2[REC_T_OFFER], IMG_ROWS, "every offer is written with its image");
	cr_assert_eq(s.v2[REC_T_INVENTORY], IMG_ROWS);
	cr_assert_eq(s.v1[REC_T_OFFER] + s.v1[REC_T_INVENTORY], 0);
	size_t v2 = 0;
	for (int t = 0; t < REC_T_COUNT_; t++)
		v2 += s.v2[t];
	size_t v1 = 0;
	for (int t = 0; t < REC_T_COUNT_; t++)
		v1 += s.v1[t];
	cr_assert_eq(v1, 1, "a table without images keeps its documents alone");
	cr_assert_eq(s.v1[REC_T_DOC_SEQ], 1);
	cr_assert_eq(s.v2[REC_T_EVENT], 1, "the event is written with its image");
	cr_assert_eq(s.docless[REC_T_EVENT], 0, "and with its document (events keep theirs)");
	cr_assert_eq(v2, 2 * IMG_ROWS + 1, "only offers, levels and the event have images");
	cr_assert_eq(s.docless[REC_T_INVENTORY], IMG_ROWS / 2, "a level the engine would write has no document");
	size_t rendered = 0;
	for (int i = 0; i < IMG_ROWS; i++)
		rendered += OFFER_RENDERED(i);
	cr_assert_gt(rendered, 0);
	cr_assert_eq(s.docless[REC_T_OFFER], rendered, "an offer the engine would write has no document");
	shard_close(&f->sh);
	/* a restart from the snapshot (nothing in the WAL past it): the same
	 * rows, field by field */
	fx_open(f);
	char *offers2 = dump(f, REC_T_OFFER), *levels2 = dump(f, REC_T_INVENTORY);
	cr_assert_eq(strcmp(offers, offers2), 0, "the offers differ after the restart");
	cr_assert_eq(strcmp(levels, levels2), 0, "the levels differ after the restart");
	cr_assert_not_null(strstr(offers2, "+DE +FR +IT -GB"), "a row with both country lists came back");
	cr_assert_not_null(strstr(offers2, " @ptn_s1 @ptn_s2"), "a row with named sellers came back");
	char d[2048];
	level_doc(d, sizeof(d), 2);
	cr_assert_not_null(strstr(levels2, "inv_000002\trendered\t"), "%.300s", levels2);
	cr_assert_not_null(strstr(levels2, d), "the rendered document is the one put, byte for byte");
	level_doc(d, sizeof(d), 3);
	cr_assert_not_null(strstr(levels2, "inv_000003\tkept\t"));
	cr_assert_not_null(strstr(levels2, d), "a kept document is the one put");
	offer_doc(d, sizeof(d), 11);
	cr_assert_not_null(strstr(offers2, "ofr_000011\trendered\t"), "%.300s", offers2);
	cr_assert_not_null(strstr(offers2, d), "the rendered offer is the one put, byte for byte");
	offer_doc(d, sizeof(d), 10);
	cr_assert_not_null(strstr(offers2, "ofr_000010\tkept\t"));
	cr_assert_not_null(strstr(offers2, d));
	/* and they are indexed: by natural key, offer and location */
	const struct inv_level *best = inv_offer_best_level(&f->sh, "ofr_000003");
	cr_assert_not_null(best);
	cr_assert_str_eq(best->row.id, "inv_000003");
	free(offers);
	free(levels);
	free(offers2);
	free(levels2);
	recs_free(&s);
	fixture_free(f);
}

/* The index in s of the first record of table tb. */
static size_t find_table_rec(const struct recs *s, int tb)
{
	for (size_t i = 0; i < s->n; i++) {
		size_t off = 0;
		struct rec_view rv;
		cr_assert_eq(rec_decode(s->rec[i], s->len[i], &off, &rv), 1);
		if (rv.table == tb)
			return i;
	}
	cr_assert_fail("no record of table %d", tb);
	return 0;
}

/* The index in s of the record of row id. */
static size_t find_rec(const struct recs *s, const char *id)
{
	for (size_t i = 0; i < s->n; i++) {
		size_t off = 0;
		struct rec_view rv;
		cr_assert_eq(rec_decode(s->rec[i], s->len[i], &off, &rv), 1);
		if (rv.key_len == strlen(id) && !memcmp(rv.key, id, rv.key_len))
			return i;
	}
	cr_assert_fail("no record %s", id);
	return 0;
}

/* Offers found through the by-wine index, per wine of put_rows (wine_%05d
 * = i / 3), written one line per wine. */
static int count_cb(const struct offer *o, void *arg)
{
	(void)o;
	(*(int *)arg)++;
	return 0;
}

static char *by_wine_counts(struct fixture *f)
{
	struct buf b;
	buf_init(&b, 1 << 20);
	char w[32];
	for (int i = 0; i <= (IMG_ROWS - 1) / 3; i++) {
		int n = 0, wl = snprintf(w, sizeof(w), "wine_%05d", i);
		offer_wine_any(&f->sh, w, (size_t)wl, count_cb, &n);
		buf_printf(&b, "%s %d\n", w, n);
	}
	char *s = strndup(b.data, b.len);
	buf_free(&b);
	return s;
}

/* The best level of every offer of put_rows (by-offer index), one line
 * per offer ("-" none). */
static char *best_levels(struct fixture *f)
{
	struct buf b;
	buf_init(&b, 1 << 20);
	char id[32];
	for (int i = 0; i < IMG_ROWS; i++) {
		snprintf(id, sizeof(id), "ofr_%06d", i);
		const struct inv_level *l = inv_offer_best_level(&f->sh, id);
		buf_printf(&b, "%s %s\n", id, l ? l->row.id : "-");
	}
	char *s = strndup(b.data, b.len);
	buf_free(&b);
	return s;
}

/* Recovery files the offers in their ordered indexes beside the levels'
 * install (recovery.c ordered_plan: 2500 levels follow the 2500 offers).
 * After a restart every offer is found by wine and every level by offer,
 * also when a record of an offer comes again after the levels (the loop
 * waits for that filing before installing it). */
WM_TEST(row_images, ordered_indexes_built_beside_the_load_are_whole)
{
	struct fixture *f = fixture_new("ordered");
	char err[256];
	put_rows(f);
	char *want = by_wine_counts(f), *want_lv = best_levels(f);
	cr_assert_not_null(strstr(want, "wine_00001 3\n"), "%.200s", want);
	cr_assert_not_null(strstr(want_lv, "ofr_000003 inv_000003\n"), "%.200s", want_lv);
	cr_assert_eq(shard_snapshot_write(&f->sh, err, sizeof(err)), 0, "%s", err);
	uint64_t lsn = f->sh.lsn;
	char p[700];
	snap_path(f, p, sizeof(p));
	struct recs s = {0};
	cr_assert_eq(snap_load(p, collect, &s, NULL, err, sizeof(err)), 0, "%s", err);
	for (int round = 0; round < 2; round++) {
		if (round == 1) { /* ofr_000005 moved past the last level */
			size_t at = find_rec(&s, "ofr_000005");
			uint8_t *moved = s.rec[at];
			size_t ml = s.len[at];
			memmove(&s.rec[at], &s.rec[at + 1], (s.n - at - 1) * sizeof(s.rec[0]));
			memmove(&s.len[at], &s.len[at + 1], (s.n - at - 1) * sizeof(s.len[0]));
			s.rec[s.n - 1] = moved;
			s.len[s.n - 1] = ml;
			rewrite(f, lsn, &s, SIZE_MAX, NULL, 0);
		}
		shard_close(&f->sh);
		fx_open(f);
		char *got = by_wine_counts(f);
		cr_assert_str_eq(got, want, "round %d: offers by wine differ after the restart", round);
		free(got);
		char *lv = best_levels(f);
		cr_assert_str_eq(lv, want_lv, "round %d: levels by offer differ after the restart", round);
		free(lv);
	}
	free(want);
	free(want_lv);
	recs_free(&s);
	fixture_free(f);
}

/* A writable copy of record `at` of s (one spare byte past it), decoded:
 * its view, document and image point into the copy. */
struct rec_copy {
	uint8_t *r;
	size_t len;
	struct rec_view rv;
	const char *doc;
	uint32_t dl, il;
	const uint8_t *img;
};

static void rec_copy_of(const struct recs *s, size_t at, struct rec_copy *c)
{
	c->r = malloc(s->len[at] + 1);
	cr_assert_not_null(c->r);
	memcpy(c->r, s->rec[at], s->len[at]);
	c->len = s->len[at];
	size_t off = 0;
	cr_assert_eq(rec_decode(c->r, c->len, &off, &c->rv), 1);
	cr_assert_eq(rec_doc_image(&c->rv, &c->doc, &c->dl, &c->img, &c->il), 0);
}

/* Write f's snapshot, collect its records into *s, close the shard: the
 * snapshot's LSN. */
static uint64_t snapshot_and_close(struct fixture *f, struct recs *s)
{
	char err[256], p[700];
	cr_assert_eq(shard_snapshot_write(&f->sh, err, sizeof(err)), 0, "%s", err);
	uint64_t lsn = f->sh.lsn;
	snap_path(f, p, sizeof(p));
	cr_assert_eq(snap_load(p, collect, s, NULL, err, sizeof(err)), 0, "%s", err);
	shard_close(&f->sh);
	return lsn;
}

/* Open f's shard expecting the start to fail: what it logged into out. */
static void start_refused(struct fixture *f, char *out, size_t n, const char *what)
{
	char err[256];
	struct stderr_capture cap;
	stderr_capture_begin(&cap);
	int rc = shard_open(&f->sh, &f->cfg, err, sizeof(err));
	stderr_capture_end(&cap, out, n);
	cr_assert_eq(rc, -1, "%s: a refused image must fail the start", what);
	cr_assert_not_null(strstr(out, "snapshot"), "%s: %s", what, out);
}

WM_TEST(row_images, an_image_recovery_cannot_take_refuses_the_start)
{
	struct fixture *f = fixture_new("images");
	char out[16384];
	put_rows(f);
	struct recs s = {0};
	uint64_t lsn = snapshot_and_close(f, &s);
	/* each case edits one record: an offer early (built on the builder
	 * thread), a level late */
	enum { TRUNCATE, EXTEND, BAD_VERSION, BAD_ENUM, BAD_QTY, BAD_DOCLEN, NO_DOC, NO_STAMP, LEVEL_NO_STAMP, EVENT_CTRL };
	const struct {
		const char *id;
		int how;
	} cases[] = {{"ofr_000002", TRUNCATE}, {"inv_002400", TRUNCATE}, {"ofr_000010", EXTEND},
		     {"inv_001000", EXTEND},   {"ofr_000011", BAD_VERSION}, {"inv_000012", BAD_VERSION},
		     {"ofr_002300", BAD_ENUM}, {"inv_000013", BAD_QTY},     {"ofr_000014", BAD_DOCLEN},
		     {"evt", NO_DOC},          {"ofr_000017", NO_STAMP},    {"inv_000016", LEVEL_NO_STAMP},
		     {"evt", EVENT_CTRL}};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		int evt = cases[c].how == NO_DOC || cases[c].how == EVENT_CTRL;
		size_t at = evt ? find_table_rec(&s, REC_T_EVENT) : find_rec(&s, cases[c].id);
		struct rec_copy cp;
		rec_copy_of(&s, at, &cp);
		uint8_t *r = cp.r;
		size_t len = cp.len;
		struct rec_view rv = cp.rv;
		uint32_t dl = cp.dl, il = cp.il;
		const uint8_t *img = cp.img;
		if (cases[c].how == NO_DOC) { /* an event: a document alone */
			img = (const uint8_t *)"\1";
			il = 1;
		}
		cr_assert_not_null(img);
		uint8_t *im = (uint8_t *)img;
		switch (cases[c].how) {
		case TRUNCATE: /* one byte short: the record's length says so */
			len--;
			wr_u32(r + 6, rv.val_len - 1);
			break;
		case EXTEND: /* one byte too many */
			r[len++] = 0;
			wr_u32(r + 6, rv.val_len + 1);
			break;
		case BAD_VERSION:
			im[0] = 99;
			break;
		case BAD_ENUM: { /* the offer's status: after the version, two strings and the currency */
			size_t k = 1;
			k += 1 + im[k];
			k += 1 + im[k];
			k += 3;
			im[k] = 200;
			break;
		}
		case BAD_QTY: { /* the level's on_hand: after the version, four strings and the condition */
			size_t k = 1;
			for (int sidx = 0; sidx < 4; sidx++)
				k += 1 + im[k];
			k += 1;
			wr_u32(im + k, 0xffffffffu);
			wr_u32(im + k + 4, 0x7fffffffu);
			break;
		}
		case BAD_DOCLEN: /* a document length past the value */
			wr_u32((uint8_t *)rv.val, rv.val_len);
			break;
		case NO_DOC: /* an image and no document, of a table that renders none */
			break;
		case EVENT_CTRL: /* the event's type (after the version and its length) with a control byte */
			cr_assert_gt(il, 3);
			im[2] = 1;
			break;
		case NO_STAMP: { /* an offer without its document and a stamp it cannot render: after
				  * the version, two strings, the currency, 9 bytes and 6 numbers */
			size_t k = 1;
			k += 1 + im[k];
			k += 1 + im[k];
			k += 3 + 9 + 6 * 8;
			cr_assert_lt(k + 8, il);
			wr_u64(im + k, (uint64_t)INT64_MIN);
			break;
		}
		case LEVEL_NO_STAMP: { /* a level without its document (even: rendered) and its updated_at
					* unrenderable: after the version, four strings, the condition and
					* four quantities, then created and updated */
			size_t k = 1;
			for (int sidx = 0; sidx < 4; sidx++)
				k += 1 + im[k];
			k += 1 + 4 * 8 + 8;
			cr_assert_eq(dl, 0, "inv_000016 keeps no document");
			cr_assert_eq(k + 8, il);
			wr_u64(im + k, (uint64_t)INT64_MIN);
			break;
		}
		}
		struct buf nd;
		buf_init(&nd, 0);
		if (cases[c].how == NO_DOC || cases[c].how == NO_STAMP) {
			cr_assert_eq(rec_encode_image(&nd, rv.table, rv.key, rv.key_len, "", 0, img, il), 0);
			rewrite(f, lsn, &s, at, nd.data, nd.len);
		} else
			rewrite(f, lsn, &s, at, r, len);
		buf_free(&nd);
		free(r);
		start_refused(f, out, sizeof(out), cases[c].id);
		if (cases[c].how != BAD_DOCLEN) /* a bad frame is a malformed record, not a row */
			cr_assert_not_null(strstr(out, evt ? "event" : cases[c].id),
					   "case %zu names the record: %s", c, out);
		if (cases[c].how == NO_DOC)
			cr_assert_not_null(strstr(out, "without its document"), "%s", out);
		shard_close(&f->sh);
	}
	/* the good records again: the start succeeds */
	rewrite(f, lsn, &s, SIZE_MAX, NULL, 0);
	fx_open(f);
	cr_assert_eq(table_count(&f->sh.tables[REC_T_OFFER]), IMG_ROWS);
	cr_assert_eq(table_count(&f->sh.tables[REC_T_INVENTORY]), IMG_ROWS);
	recs_free(&s);
	fixture_free(f);
}

/* The image helpers at their edges: a string of 255 bytes and one more, a
 * string that does not fit its field, a read past the end. */
WM_TEST(row_images, image_reader_and_writer_at_their_bounds)
{
	struct buf b;
	buf_init(&b, 4096);
	struct img_w w = {&b, 0};
	char s255[256], s256[257];
	memset(s255, 'a', 255);
	s255[255] = 0;
	memset(s256, 'b', 256);
	s256[256] = 0;
	img_str(&w, s255);
	cr_assert_eq(w.err, 0);
	img_i64(&w, INT64_MIN);
	img_u8(&w, 7);
	cr_assert_eq(b.len, 1 + 255 + 8 + 1);
	img_str(&w, s256);
	cr_assert_eq(w.err, 1, "a string past 255 bytes cannot be written");
	char dst[256];
	struct img_r r = {(const uint8_t *)b.data, (const uint8_t *)b.data + 1 + 255 + 8 + 1, 0};
	img_get_str(&r, dst, sizeof(dst));
	cr_assert_str_eq(dst, s255);
	cr_assert_eq(img_get_i64(&r), INT64_MIN);
	cr_assert_eq(img_get_u8(&r), 7u);
	cr_assert_eq(img_done(&r), 0);
	cr_assert_eq(img_get_u8(&r), 0u);
	cr_assert_eq(r.bad, 1, "a read past the end is bad");
	/* 255 bytes into a field of 255 (no room for the NUL) */
	struct img_r r2 = {(const uint8_t *)b.data, (const uint8_t *)b.data + b.len, 0};
	char small[255];
	img_get_str(&r2, small, sizeof(small));
	cr_assert_eq(r2.bad, 1);
	cr_assert_eq(small[0], 0, "a refused string leaves its field empty");
	/* a string with a NUL inside */
	const uint8_t nul[] = {3, 'a', 0, 'b'};
	struct img_r r3 = {nul, nul + sizeof(nul), 0};
	img_get_str(&r3, dst, sizeof(dst));
	cr_assert_eq(r3.bad, 1);
	/* an i64 with 7 bytes left */
	const uint8_t seven[7] = {0};
	struct img_r r4 = {seven, seven + 7, 0};
	cr_assert_eq(img_get_i64(&r4), 0);
	cr_assert_eq(r4.bad, 1);
	buf_free(&b);
}

/* The level at id: whether it keeps its document, and that its document
 * (stored or rendered) is exactly doc. */
static void level_is(struct fixture *f, const char *id, const char *doc, int kept)
{
	const struct inv_level *l = inv_level_get(&f->sh, id, strlen(id));
	cr_assert_not_null(l, "%s", id);
	cr_assert_eq(l->row.doc != NULL, kept, "%s %s its document", id, kept ? "keeps" : "does not keep");
	cr_assert_eq(l->row.doc_len == 0, !kept);
	struct buf scratch;
	buf_init(&scratch, 0);
	size_t dl;
	const char *d = row_doc(&l->row, &scratch, &dl);
	cr_assert_not_null(d);
	cr_assert_eq(dl, strlen(doc), "%s: %s", id, d);
	cr_assert_str_eq(d, doc);
	buf_free(&scratch);
}

/* A level whose document is what the engine writes keeps none (table.h
 * render): on a put, after WAL replay and after a snapshot; one it would
 * not write is kept as it came, and a row moves between the two as its
 * document does. */
WM_TEST(row_images, a_level_keeps_no_document_it_renders)
{
	struct fixture *f = fixture_new("images");
	char d[4][2048], id[4][32], err[256];
	for (int i = 0; i < 4; i++) {
		int dl = level_doc(d[i], sizeof(d[i]), i);
		snprintf(id[i], sizeof(id[i]), "inv_%06d", i);
		txn_begin(&f->sh);
		cr_assert_eq(txn_put(&f->sh, REC_T_INVENTORY, id[i], strlen(id[i]), d[i], (size_t)dl), 0);
		cr_assert_neq(txn_commit(&f->sh), 0);
	}
	for (int i = 0; i < 4; i++)
		level_is(f, id[i], d[i], i % 2);
	/* inv_000000 rewritten with the same values, its sku last: kept */
	const char *moved = "{\"id\":\"inv_000000\",\"offer_id\":\"ofr_000000\",\"owner_entity_id\":\"ptn_o0\","
			    "\"location_id\":\"loc_0\",\"condition\":\"sellable\",\"on_hand\":0,\"incoming\":0,"
			    "\"reserved\":0,\"allocated\":0,\"atp\":0,\"created_at\":\"2026-11-29T10:00:00.000Z\","
			    "\"updated_at\":\"2026-11-29T10:00:00.000Z\",\"sku\":\"SKU-000000\"}";
	txn_begin(&f->sh);
	cr_assert_eq(txn_put(&f->sh, REC_T_INVENTORY, id[0], strlen(id[0]), moved, strlen(moved)), 0);
	cr_assert_neq(txn_commit(&f->sh), 0);
	level_is(f, id[0], moved, 1);
	/* a restart replaying the WAL: the same */
	shard_close(&f->sh);
	fx_open(f);
	level_is(f, id[0], moved, 1);
	for (int i = 1; i < 4; i++)
		level_is(f, id[i], d[i], i % 2);
	/* inv_000000 back to the engine's own document: rendered again */
	txn_begin(&f->sh);
	cr_assert_eq(txn_put(&f->sh, REC_T_INVENTORY, id[0], strlen(id[0]), d[0], strlen(d[0])), 0);
	cr_assert_neq(txn_commit(&f->sh), 0);
	level_is(f, id[0], d[0], 0);
	/* a snapshot and a restart from it alone */
	cr_assert_eq(shard_snapshot_write(&f->sh, err, sizeof(err)), 0, "%s", err);
	char p[700];
	snap_path(f, p, sizeof(p));
	struct recs s = {0};
	cr_assert_eq(snap_load(p, collect, &s, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.docless[REC_T_INVENTORY], 2);
	cr_assert_eq(s.v2[REC_T_INVENTORY], 4);
	recs_free(&s);
	shard_close(&f->sh);
	fx_open(f);
	for (int i = 0; i < 4; i++)
		level_is(f, id[i], d[i], i % 2);
	fixture_free(f);
}

/* A typed put of a rendering table (a hold staging its level: shard.h
 * txn_put_typed) keeps no document and is not rendered a second time to
 * check (table.c row_make_typed): what the row renders is what the WAL
 * logged, so a restart replaying that document (an untyped put, which
 * does compare) finds the same bytes and keeps none either. */
WM_TEST(row_images, a_typed_put_of_a_level_keeps_no_document_and_renders_what_was_logged)
{
	struct fixture *f = fixture_new("images");
	char d[2048], id[32];
	int dl = level_doc(d, sizeof(d), 6); /* sellable, atp 87 */
	snprintf(id, sizeof(id), "inv_%06d", 6);
	txn_begin(&f->sh);
	cr_assert_eq(txn_put(&f->sh, REC_T_INVENTORY, id, strlen(id), d, (size_t)dl), 0);
	cr_assert_neq(txn_commit(&f->sh), 0);
	level_is(f, id, d, 0);
	cr_assert_eq(hold_place(&f->sh, id, 5, "o1:l1"), HOLD_OK);
	const struct inv_level *l = inv_level_get(&f->sh, id, strlen(id));
	cr_assert_not_null(l);
	cr_assert_null(l->row.doc, "a typed put keeps no document");
	struct buf scratch;
	buf_init(&scratch, 0);
	size_t n;
	const char *r = row_doc(&l->row, &scratch, &n);
	cr_assert_not_null(r);
	char after[2048];
	cr_assert_lt(n, sizeof(after));
	memcpy(after, r, n + 1);
	buf_free(&scratch);
	cr_assert(strstr(after, "\"reserved\":67,") && strstr(after, "\"atp\":82,"), "62 + the hold's 5 units reserved: %s", after);
	cr_assert_str_neq(after, d);
	/* the WAL holds the writer's document: replayed, it renders the same */
	shard_close(&f->sh);
	fx_open(f);
	level_is(f, id, after, 0);
	fixture_free(f);
}

/* ---- wines --------------------------------------------------------------------- */

/* Wine bodies covering the shapes of a wine's keys blob (wine.c
 * wine_image): regions as a string, as several languages and none; unit
 * GTINs (one given as a case code); LWIN-16, LWIN-7, none; a medusa id;
 * a non-vintage wine; a title that cannot be slugged (its folded search
 * text); unset colour and dosage next to set ones. */
static const char *const wine_bodies[] = {
	"{\"title\":\"Meursault Premier Cru\",\"producer\":{\"name\":\"Domaine Image\",\"country\":\"FR\"},"
	"\"cuvee\":\"Perrieres\",\"vintage\":2015,\"volume_in_liters\":0.75,\"abv\":13.5,\"colour\":\"white\","
	"\"category\":\"wine\",\"country\":\"FR\",\"region\":{\"fr\":\"Bourgogne\",\"en\":\"Burgundy\"},"
	"\"gtins\":[\"8904000210037\"],\"lwin\":\"1012361201500750\",\"medusa_product_id\":\"prod_image_1\"}",
	"{\"title\":\"Cuvee Speciale Brut\",\"producer\":{\"name\":\"Maison Image\",\"country\":\"FR\"},"
	"\"cuvee\":\"Speciale\",\"is_non_vintage\":true,\"colour\":\"white\",\"category\":\"sparkling\","
	"\"dosage_class\":\"brut\",\"country\":\"FR\",\"region\":\"Champagne\",\"lwin\":\"1098765\"}",
	"{\"title\":\"Rioja Reserva\",\"producer\":{\"name\":\"Bodega Image\",\"country\":\"ES\"},"
	"\"vintage\":2018,\"category\":\"wine\",\"country\":\"ES\"}",
	"{\"title\":\"\u5c71\u6893\u9152\",\"producer\":{\"name\":\"Image Winery\",\"country\":\"JP\"},"
	"\"vintage\":2020,\"colour\":\"red\",\"category\":\"wine\",\"country\":\"JP\","
	"\"region\":{\"ja\":\"\u5c71\u68a8\",\"en\":\"Yamanashi\"},"
	"\"gtins\":[\"4006381333931\",\"00012345600012\"]}",
};
#define N_WINE_BODIES (sizeof(wine_bodies) / sizeof(wine_bodies[0]))

/* Every wine with its document and typed fields, its keys one by one. */
static char *dump_wines(struct fixture *f)
{
	struct buf b;
	buf_init(&b, 1 << 20);
	struct oidx_iter it;
	for (int ok = oidx_seek_ge(&f->sh.tables[REC_T_WINE].by_order, NULL, 0, &it); ok; ok = oidx_next(&it)) {
		const struct wine *w = oidx_iter_val(&it);
		buf_printf(&b, "%s\t%s\t%u %u %u %u %u %u %d %d %lld %s %s %s %u\t", w->row.id, w->row.doc, w->status,
			   w->colour, w->category, w->dosage, w->n_gtins, w->n_regions, w->vintage, w->abv,
			   (long long)w->volume_ul, w->country, w->producer_id, w->created_by, w->tail_off);
		const struct wine_keyref refs[] = {w->slug, w->search, w->nk, w->regions, w->units, w->l16, w->l11, w->medusa};
		for (size_t k = 0; k < sizeof(refs) / sizeof(refs[0]); k++) {
			buf_printf(&b, "[");
			for (unsigned j = 0; j < refs[k].len; j++) {
				char c = wine_key(w, refs[k])[j];
				buf_printf(&b, c ? "%c" : "|", c);
			}
			buf_printf(&b, "]");
		}
		buf_printf(&b, "\n");
	}
	char *s = strndup(b.data ? b.data : "", b.len);
	buf_free(&b);
	return s;
}

/* Create a wine of every body in f's shard (as the platform); their ids
 * into ids[]. */
static void put_wines(struct fixture *f, char (*ids)[ID_MAX_LEN])
{
	struct api_ctx *pc = calloc(1, sizeof(*pc));
	cr_assert_not_null(pc);
	pc->sh = &f->sh;
	pc->who.authenticated = pc->who.is_platform = 1;
	snprintf(pc->who.entity_id, sizeof(pc->who.entity_id), "platform");
	for (size_t i = 0; i < N_WINE_BODIES; i++) {
		struct json_doc *d = json_parse(wine_bodies[i], strlen(wine_bodies[i]), NULL, NULL);
		cr_assert_not_null(d, "body %zu", i);
		struct wine_ingest_result r;
		memset(&r, 0, sizeof(r));
		pc->n_errs = 0;
		wine_ingest(pc, json_root(d), &r);
		json_doc_free(d);
		cr_assert_eq(r.status, 201, "body %zu: %s", i, pc->n_errs ? pc->err_msg[0] : "not created");
		memcpy(ids[i], r.wine_id, ID_MAX_LEN);
	}
	free(pc);
}

WM_TEST(row_images, wines_come_back_from_their_images)
{
	struct fixture *f = fixture_new("wineimg");
	char ids[N_WINE_BODIES][ID_MAX_LEN];
	put_wines(f, ids);
	char *before = dump_wines(f);
	/* the shapes the blob must carry back (dump_wines writes NUL as |) */
	cr_assert_not_null(strstr(before, "[bourgogne|burgundy|][08904000210037][1012361201500750]"), "%s", before);
	cr_assert_not_null(strstr(before, "[0400638133393100012345600012]"), "two unit GTINs: %s", before);
	cr_assert_not_null(strstr(before, "[wine][\u5c71\u6893\u9152]"), "a title folded, not slugged: %s", before);
	cr_assert_not_null(strstr(before, "[cuvee-speciale-brut][cuvee-speciale-brut][][champagne|]"), "%s", before);
	char err[256], p[700];
	cr_assert_eq(shard_snapshot_write(&f->sh, err, sizeof(err)), 0, "%s", err);
	snap_path(f, p, sizeof(p));
	struct recs s = {0};
	cr_assert_eq(snap_load(p, collect, &s, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.v2[REC_T_WINE], N_WINE_BODIES, "every wine is written with its image");
	cr_assert_eq(s.v1[REC_T_WINE] + s.docless[REC_T_WINE], 0, "and with its document (wines keep theirs)");
	shard_close(&f->sh);
	/* a restart from the snapshot: test builds compare every row built
	 * from an image with its document decoded (table.c typed_check) */
	fx_open(f);
	char *after = dump_wines(f);
	cr_assert_str_eq(after, before, "the wines differ after the restart");
	/* and their indexes answer */
	for (size_t i = 0; i < N_WINE_BODIES; i++) {
		const struct wine *w = wine_get(&f->sh, ids[i], strlen(ids[i]));
		cr_assert_not_null(w, "%s", ids[i]);
		cr_assert_eq(wine_by_slug(&f->sh, wine_key(w, w->slug), w->slug.len), w, "%s by its slug", ids[i]);
	}
	cr_assert_not_null(wine_by_medusa(&f->sh, "prod_image_1", 12), "by its medusa id");
	free(before);
	free(after);
	recs_free(&s);
	fixture_free(f);
}

/* A wine image (wine.c wine_image) that is not what wine_image writes
 * fails the start, naming the wine; the good snapshot then starts. */
WM_TEST(row_images, a_wine_image_recovery_cannot_take_refuses_the_start)
{
	struct fixture *f = fixture_new("wineimg");
	char ids[N_WINE_BODIES][ID_MAX_LEN], out[16384];
	put_wines(f, ids);
	struct recs s = {0};
	uint64_t lsn = snapshot_and_close(f, &s);
	/* the image: version, six bytes (status .. n_regions), four numbers
	 * (vintage, abv, volume, tail_off at 31), three strings, the keys
	 * blob's length (2 bytes) and the blob */
	enum { TRUNCATE, BAD_STATUS, BAD_COLOUR, MORE_REGIONS, FEWER_GTINS, TAIL_OFF, SHORT_BLOB, BAD_VINTAGE };
	for (int how = TRUNCATE; how <= BAD_VINTAGE; how++) {
		size_t at = find_rec(&s, ids[0]);
		struct rec_copy cp;
		rec_copy_of(&s, at, &cp);
		uint8_t *r = cp.r;
		size_t len = cp.len;
		struct rec_view rv = cp.rv;
		uint32_t il = cp.il;
		cr_assert_not_null(cp.img, "a wine record carries its image");
		uint8_t *im = (uint8_t *)cp.img;
		size_t k = 39; /* the strings */
		for (int str = 0; str < 3; str++)
			k += 1u + im[k];
		cr_assert_lt(k + 2, il);
		switch (how) {
		case TRUNCATE: /* one byte short: the record's length says so */
			len--;
			wr_u32(r + 6, rv.val_len - 1);
			break;
		case BAD_STATUS:
			im[1] = WINE_N_STATUS;
			break;
		case BAD_COLOUR:
			im[2] = WINE_N_COLOUR;
			break;
		case MORE_REGIONS: /* the blob holds two region slugs */
			im[6]++;
			break;
		case FEWER_GTINS: /* and one unit GTIN */
			cr_assert_eq(im[5], 1);
			im[5] = 0;
			break;
		case TAIL_OFF: /* not where the document's tail member is */
			im[31]++;
			break;
		case SHORT_BLOB: /* its last byte (medusa's NUL) left out of the blob */
			cr_assert_gt(im[k], 0);
			im[k]--;
			break;
		case BAD_VINTAGE: /* below "unset" (-1) */
			wr_u64(im + 7, (uint64_t)-2);
			break;
		}
		rewrite(f, lsn, &s, at, r, len);
		free(r);
		char what[32];
		snprintf(what, sizeof(what), "wine case %d", how);
		start_refused(f, out, sizeof(out), what);
		cr_assert_not_null(strstr(out, ids[0]), "case %d names the wine: %s", how, out);
		shard_close(&f->sh);
	}
	rewrite(f, lsn, &s, SIZE_MAX, NULL, 0);
	fx_open(f);
	cr_assert_not_null(wine_get(&f->sh, ids[0], strlen(ids[0])));
	recs_free(&s);
	fixture_free(f);
}
