/*
 * test_fanout.c -- merged lists across shards (shard-router/fanout.c).
 *
 * The merge is proved against a model of the shards written here, not
 * against itself: fake shards hold sorted arrays of ids and answer one page
 * the way engine/edge/api.c api_list_source does (page_size rows after a
 * position, next_cursor, has_more, and the fan-out's "_cursors"), using the
 * project's own base64url (engine/edge/api.h) for their cursors.  Paging
 * through the merged list must give, page for page, the bytes a single
 * shard holding every id gives: no duplicate, nothing lost, same order,
 * same page sizes and has_more.  The cursor's wire format is checked
 * against a vector computed independently (Python hmac/hashlib), and every
 * bound at and past its edge.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/edge/api.h"
#include "engine/storage/id.h"
#include "net/buf.h"
#include "net/json.h"
#include "shard-router/fanout.h"
#include "engine/cluster/shard_map.h"
#include "tests/wm_test.h"

#define SECRET "0123456789abcdef0123456789abcdef"
#define TAG "GET /v1/orders?status=paid entity=ptn_1"
#define MAP_V 7u
#define MAX_IDS 1000

static struct cluster_key key(void)
{
	struct cluster_key k;
	memcpy(k.secret, SECRET, 32);
	k.len = 32;
	return k;
}

/* ---- a deterministic generator (fixed seeds) ----------------------------- */

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* ---- fake shards ---------------------------------------------------------- */

struct fake_shard {
	char ids[MAX_IDS][FANOUT_ID_MAX];
	uint32_t n;
	uint32_t budget;       /* rows one page may examine (0 = no bound) */
	uint32_t hide_mod;     /* rows with seq % hide_mod == 0 are hidden (0 = none) */
};

/* A row as a shard might serialise it: spaces and an escape that a
 * re-serialisation would change, so the test sees whether rows are copied
 * byte for byte. */
static void row_text(const char *id, char *out, size_t out_size)
{
	snprintf(out, out_size, "{\"id\": \"%s\" ,\"total\":12.50,\"note\":\"caf\\u00e9 %c\"}", id, id[4]);
}

/* Whether the read-path filter hides the row with this id (by the id
 * itself, so the same whichever shard holds it); mod 0 hides none. */
static int id_hidden(const char *id, uint32_t mod)
{
	if (!mod)
		return 0;
	uint32_t h = 0;
	for (const char *p = id; *p; p++)
		h = h * 31 + (unsigned char)*p;
	return h % mod == 0;
}

static void b64(const char *s, char *out)
{
	cr_assert_gt(b64url_encode((const uint8_t *)s, strlen(s), out, API_MAX_SPAN), 0);
}

/*
 * One page of shard f after position pos (a cursor text, NULL = start),
 * as api_list_source writes it, plus "_cursors" when fanout is set.
 */
static void fake_page(const struct fake_shard *f, const char *pos, uint32_t page_size, int fanout, struct buf *out)
{
	uint32_t i = 0;
	if (pos) {
		uint8_t k[IDX_MAX_KEY + 1];
		int kl = b64url_decode(pos, strlen(pos), k, sizeof(k) - 1);
		cr_assert_gt(kl, 0, "the merge handed a shard a cursor it never issued: %s", pos);
		k[kl] = 0;
		while (i < f->n && strcmp(f->ids[i], (const char *)k) <= 0)
			i++;
	}
	uint32_t taken[FANOUT_PAGE_MAX + 1], n = 0, examined = 0;
	int more = 0;
	const char *last = NULL;
	for (; i < f->n; i++) {
		if (f->budget && examined == f->budget) {
			more = 1;
			break;
		}
		examined++;
		if (id_hidden(f->ids[i], f->hide_mod)) {
			if (f->budget)
				last = f->ids[i];
			continue;
		}
		if (n == page_size) {
			more = 1;
			break;
		}
		taken[n++] = i;
		last = f->ids[i];
	}
	if (!last)
		more = 0;
	char row[256], cur[API_MAX_SPAN];
	buf_puts(out, "{\"data\":[");
	for (uint32_t j = 0; j < n; j++) {
		row_text(f->ids[taken[j]], row, sizeof(row));
		buf_printf(out, "%s%s", j ? "," : "", row);
	}
	buf_puts(out, "],\"next_cursor\":");
	if (more) {
		b64(last, cur);
		buf_printf(out, "\"%s\"", cur);
	} else {
		buf_puts(out, "null");
	}
	buf_printf(out, ",\"has_more\":%s", more ? "true" : "false");
	if (fanout) {
		buf_puts(out, ",\"_cursors\":[");
		for (uint32_t j = 0; j < n; j++) {
			b64(f->ids[taken[j]], cur);
			buf_printf(out, "%s\"%s\"", j ? "," : "", cur);
		}
		buf_puts(out, "]");
	}
	buf_puts(out, "}");
	cr_assert(!out->overflow);
}

static int cmp_id(const void *a, const void *b) { return strcmp(a, b); }

/* n distinct ids "ord_" + 20 Crockford characters, sorted, into ids. */
static uint32_t make_ids(uint64_t *seed, uint32_t n, char (*ids)[FANOUT_ID_MAX])
{
	static const char crock[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
	for (uint32_t i = 0; i < n; i++) {
		memcpy(ids[i], "ord_", 4);
		for (int j = 0; j < 20; j++)
			ids[i][4 + j] = crock[rng_next(seed) % 32];
		ids[i][24] = 0;
	}
	qsort(ids, n, FANOUT_ID_MAX, cmp_id);
	uint32_t m = 0;
	for (uint32_t i = 0; i < n; i++)
		if (!m || strcmp(ids[m - 1], ids[i]))
			memmove(ids[m++], ids[i], FANOUT_ID_MAX);
	return m;
}

/* ---- paging through the merge ----------------------------------------------- */

struct run {
	struct buf rows;       /* every data row, comma-separated, as returned */
	uint32_t pages, total;
	uint32_t page_rows[MAX_IDS + 2];
	int page_more[MAX_IDS + 2];
};

/* The "data" array's inner text of a body that starts {"data":[ and whose
 * rows contain no ']' (ours don't): appended to r->rows. */
static void take_data(struct run *r, const char *body, size_t len, uint32_t rows)
{
	cr_assert(len > 9 && memcmp(body, "{\"data\":[", 9) == 0, "body: %.*s", (int)len, body);
	const char *end = memchr(body + 9, ']', len - 9);
	cr_assert_not_null(end);
	if (rows && r->rows.len)
		buf_putc(&r->rows, ',');
	buf_append(&r->rows, body + 9, (size_t)(end - body - 9));
}

/* Page a single shard (the reference) through its list. */
static void run_single(const struct fake_shard *f, uint32_t page_size, struct run *r)
{
	char pos[API_MAX_SPAN] = "";
	for (;;) {
		struct buf b;
		buf_init(&b, 0);
		fake_page(f, pos[0] ? pos : NULL, page_size, 0, &b);
		struct json_doc *d = json_parse(b.data, b.len, NULL, NULL);
		cr_assert_not_null(d);
		const struct json_value *root = json_root(d);
		uint32_t n = json_get(root, "data")->len;
		int more = json_get(root, "has_more")->type == JSON_TRUE;
		take_data(r, b.data, b.len, n);
		r->page_rows[r->pages] = n;
		r->page_more[r->pages] = more;
		r->pages++;
		r->total += n;
		if (more)
			snprintf(pos, sizeof(pos), "%s", json_get(root, "next_cursor")->u.str);
		json_doc_free(d);
		buf_free(&b);
		if (!more)
			break;
		cr_assert_lt(r->pages, MAX_IDS + 1, "the single shard never ends");
	}
}

/* Page the merged list of shards f[0..n) through, the way the router will:
 * decode the cursor, ask each live shard once, merge. */
static void run_merged(struct fake_shard *f, uint32_t n, uint32_t page_size, struct run *r)
{
	struct cluster_key k = key();
	static struct fanout_cursor from;
	static struct fanout_result res;
	char text[FANOUT_CURSOR_MAX + 1] = "";
	uint32_t max_pages = MAX_IDS + 2;
	for (;;) {
		if (text[0])
			cr_assert_eq(fanout_cursor_decode(&k, text, strlen(text), TAG, strlen(TAG), MAP_V, &from), FC_OK);
		else
			fanout_cursor_init(&from, MAP_V);
		struct buf pb[4];
		struct fanout_page pages[4];
		for (uint32_t s = 0; s < n; s++) {
			buf_init(&pb[s], 0);
			pages[s] = (struct fanout_page){0};
			if (from.shard[s].state == FANOUT_EXHAUSTED)
				continue;
			fake_page(&f[s], from.shard[s].state == FANOUT_AT ? from.shard[s].text : NULL, page_size, 1,
				  &pb[s]);
			pages[s] = (struct fanout_page){.asked = 1, .body = pb[s].data, .body_len = pb[s].len};
		}
		struct fanout_merge_args a = {.key = &k, .tag = TAG, .tag_len = strlen(TAG), .from = &from,
					      .n_shards = n, .pages = pages, .page_size = page_size,
					      .max_page_bytes = 1 << 20};
		struct buf out;
		buf_init(&out, 0);
		int rc = fanout_merge(&a, &out, &res);
		cr_assert_eq(rc, FM_OK, "merge: %d %s", rc, res.detail);
		struct json_doc *d = json_parse(out.data, out.len, NULL, NULL);
		cr_assert_not_null(d, "merged body is not JSON: %.*s", (int)out.len, out.data);
		const struct json_value *root = json_root(d);
		cr_assert_eq(json_get(root, "data")->len, res.rows);
		int more = json_get(root, "has_more")->type == JSON_TRUE;
		cr_assert_eq(more, res.has_more);
		const struct json_value *nc = json_get(root, "next_cursor");
		if (more)
			cr_assert(nc->type == JSON_STRING && strcmp(nc->u.str, res.next_text) == 0);
		else
			cr_assert(nc->type == JSON_NULL);
		take_data(r, out.data, out.len, res.rows);
		r->page_rows[r->pages] = res.rows;
		r->page_more[r->pages] = more;
		r->pages++;
		r->total += res.rows;
		snprintf(text, sizeof(text), "%s", more ? res.next_text : "");
		json_doc_free(d);
		buf_free(&out);
		for (uint32_t s = 0; s < n; s++)
			buf_free(&pb[s]);
		if (!more)
			break;
		cr_assert_lt(r->pages, max_pages, "the merged list never ends");
	}
}

/* Distribute ids over n shards: 0 uniform random, 1 all on the last shard,
 * 2 round robin. */
static void distribute(char (*ids)[FANOUT_ID_MAX], uint32_t m, struct fake_shard *f, uint32_t n, int how,
		       uint64_t *seed)
{
	for (uint32_t s = 0; s < n; s++)
		f[s].n = 0;
	for (uint32_t i = 0; i < m; i++) {
		uint32_t s = how == 0 ? (uint32_t)(rng_next(seed) % n) : how == 1 ? n - 1 : i % n;
		memcpy(f[s].ids[f[s].n++], ids[i], FANOUT_ID_MAX);
	}
}

WM_TEST(fanout, merged_pages_equal_single_shard_pages)
{
	static struct fake_shard f[3], all;
	static char ids[MAX_IDS][FANOUT_ID_MAX];
	static struct run single, merged;
	static const uint32_t sizes[] = {1, 7, 50, 200};
	static const uint32_t totals[] = {0, 1, 7, 200, 201, 437};
	uint32_t runs = 0;
	for (uint32_t n = 0; n <= 3; n++)
		for (int how = 0; how < 3; how++)
			for (uint32_t ti = 0; ti < sizeof(totals) / sizeof(totals[0]); ti++) {
				uint64_t seed = 0x9e3779b97f4a7c15ull ^ (n * 1000 + (uint64_t)how * 100 + ti);
				uint32_t m = n ? make_ids(&seed, totals[ti], ids) : 0;
				distribute(ids, m, f, n, how, &seed);
				memcpy(all.ids, ids, sizeof(ids));
				all.n = m;
				for (uint32_t si = 0; si < 4; si++) {
					memset(&single, 0, sizeof(single));
					memset(&merged, 0, sizeof(merged));
					buf_init(&single.rows, 0);
					buf_init(&merged.rows, 0);
					run_single(&all, sizes[si], &single);
					run_merged(f, n, sizes[si], &merged);
					cr_assert_eq(single.total, m);
					cr_assert_eq(merged.total, m, "n=%u how=%d total=%u size=%u", n, how, m, sizes[si]);
					cr_assert_eq(merged.pages, single.pages, "n=%u how=%d total=%u size=%u", n, how,
						     m, sizes[si]);
					for (uint32_t p = 0; p < single.pages; p++) {
						cr_assert_eq(merged.page_rows[p], single.page_rows[p]);
						cr_assert_eq(merged.page_more[p], single.page_more[p]);
					}
					cr_assert_eq(merged.rows.len, single.rows.len);
					cr_assert(merged.rows.len == 0 ||
						  memcmp(merged.rows.data, single.rows.data, single.rows.len) == 0,
						  "rows differ: n=%u how=%d total=%u size=%u", n, how, m, sizes[si]);
					buf_free(&single.rows);
					buf_free(&merged.rows);
					runs++;
				}
			}
	cr_assert_eq(runs, 4 * 3 * 6 * 4);
}

/* Shards whose pages end early (a budget of rows examined, some hidden by
 * the read-path filter): pages may be short, the rows are still exactly
 * the visible ones in order. */
WM_TEST(fanout, short_pages_lose_and_repeat_nothing)
{
	static struct fake_shard f[3];
	static char ids[MAX_IDS][FANOUT_ID_MAX], want[MAX_IDS][FANOUT_ID_MAX];
	static struct run merged;
	static const uint32_t sizes[] = {1, 7, 50, 200};
	static const uint32_t budgets[] = {1, 3, 60};
	for (uint32_t bi = 0; bi < 3; bi++)
		for (uint32_t si = 0; si < 4; si++) {
			uint64_t seed = 42 + bi * 10 + si;
			uint32_t m = make_ids(&seed, 300, ids);
			distribute(ids, m, f, 3, 0, &seed);
			uint32_t w = 0;
			for (uint32_t s = 0; s < 3; s++) {
				f[s].budget = budgets[bi];
				f[s].hide_mod = 3;
			}
			for (uint32_t i = 0; i < m; i++)
				if (!id_hidden(ids[i], 3))
					memcpy(want[w++], ids[i], FANOUT_ID_MAX);
			memset(&merged, 0, sizeof(merged));
			buf_init(&merged.rows, 0);
			run_merged(f, 3, sizes[si], &merged);
			struct buf exp;
			buf_init(&exp, 0);
			char row[256];
			for (uint32_t i = 0; i < w; i++) {
				row_text(want[i], row, sizeof(row));
				buf_printf(&exp, "%s%s", i ? "," : "", row);
			}
			cr_assert_eq(merged.total, w, "budget %u size %u", budgets[bi], sizes[si]);
			cr_assert_eq(merged.rows.len, exp.len);
			cr_assert(memcmp(merged.rows.data, exp.data, exp.len) == 0);
			for (uint32_t p = 0; p < merged.pages; p++)
				cr_assert_leq(merged.page_rows[p], sizes[si]);
			buf_free(&exp);
			buf_free(&merged.rows);
		}
}

/* ---- the merge's own rules, on hand-made pages ------------------------------ */

struct merge_fx {
	struct cluster_key k;
	struct fanout_cursor from;
	struct fanout_page pages[FANOUT_MAX_SHARDS + 1];
	struct fanout_merge_args a;
	struct fanout_result res;
	struct buf out;
};

/* n_shards pages from bodies (NULL = not asked, its position EXHAUSTED). */
static struct merge_fx *fx_new(uint32_t n, const char *const *bodies, uint32_t page_size)
{
	struct merge_fx *x = calloc(1, sizeof(*x));
	cr_assert_not_null(x);
	x->k = key();
	fanout_cursor_init(&x->from, MAP_V);
	for (uint32_t s = 0; s < n && bodies; s++) {
		if (!bodies[s]) {
			x->from.shard[s].state = FANOUT_EXHAUSTED;
			continue;
		}
		x->pages[s] = (struct fanout_page){.asked = 1, .body = bodies[s], .body_len = strlen(bodies[s])};
	}
	x->a = (struct fanout_merge_args){.key = &x->k, .tag = TAG, .tag_len = strlen(TAG), .from = &x->from,
					  .n_shards = n, .pages = x->pages, .page_size = page_size,
					  .max_page_bytes = 1 << 16};
	buf_init(&x->out, 0);
	buf_puts(&x->out, "PRE"); /* what an error must leave as it was */
	return x;
}

static int fx_merge(struct merge_fx *x) { return fanout_merge(&x->a, &x->out, &x->res); }

static void fx_free(struct merge_fx *x)
{
	buf_free(&x->out);
	free(x);
}

/* An error leaves out as it was. */
static void assert_refused(struct merge_fx *x, int want)
{
	int rc = fx_merge(x);
	cr_assert_eq(rc, want, "got %d (%s), want %d", rc, x->res.detail, want);
	cr_assert_eq(x->out.len, 3);
	cr_assert(memcmp(x->out.data, "PRE", 3) == 0);
	cr_assert_neq(x->res.detail[0], 0);
}

/* page text with the given ids (each row {"id":"<id>"}), cursors = b64(id). */
static char *page_of(const char *const *ids, uint32_t n, int more, const char *next)
{
	struct buf b;
	buf_init(&b, 0);
	buf_puts(&b, "{\"data\":[");
	for (uint32_t i = 0; i < n; i++)
		buf_printf(&b, "%s{\"id\":\"%s\"}", i ? "," : "", ids[i]);
	buf_printf(&b, "],\"next_cursor\":%s%s%s,\"has_more\":%s,\"_cursors\":[", next ? "\"" : "",
		   next ? next : "null", next ? "\"" : "", more ? "true" : "false");
	char cur[API_MAX_SPAN];
	for (uint32_t i = 0; i < n; i++) {
		b64(ids[i], cur);
		buf_printf(&b, "%s\"%s\"", i ? "," : "", cur);
	}
	buf_puts(&b, "]}");
	buf_putc(&b, 0);
	return b.data;
}

WM_TEST(fanout, duplicate_id_across_shards_is_refused)
{
	const char *a_ids[] = {"ord_1", "ord_3"}, *b_ids[] = {"ord_2", "ord_3"};
	char *p0 = page_of(a_ids, 2, 0, NULL), *p1 = page_of(b_ids, 2, 0, NULL);
	const char *bodies[] = {p0, p1};
	struct merge_fx *x = fx_new(2, bodies, 10);
	assert_refused(x, FM_E_DUPLICATE);
	cr_assert(x->res.err_shard == 0 || x->res.err_shard == 1);
	fx_free(x);
	free(p0);
	free(p1);
}

WM_TEST(fanout, cursors_not_as_long_as_data_is_refused)
{
	const char *bodies[][1] = {
		{"{\"data\":[{\"id\":\"ord_1\"},{\"id\":\"ord_2\"}],\"next_cursor\":null,\"has_more\":false,"
		 "\"_cursors\":[\"b3JkXzE\"]}"},
		{"{\"data\":[{\"id\":\"ord_1\"}],\"next_cursor\":null,\"has_more\":false,"
		 "\"_cursors\":[\"b3JkXzE\",\"b3JkXzI\"]}"},
		{"{\"data\":[{\"id\":\"ord_1\"}],\"next_cursor\":null,\"has_more\":false}"},
		{"{\"data\":[],\"next_cursor\":null,\"has_more\":false,\"_cursors\":{}}"},
	};
	for (int i = 0; i < 4; i++) {
		struct merge_fx *x = fx_new(1, bodies[i], 10);
		assert_refused(x, FM_E_CURSORS);
		cr_assert_eq(x->res.err_shard, 0);
		fx_free(x);
	}
	/* the same shape with matching lengths is accepted */
	const char *ok[] = {"{\"data\":[{\"id\":\"ord_1\"}],\"next_cursor\":null,\"has_more\":false,"
			    "\"_cursors\":[\"b3JkXzE\"]}"};
	struct merge_fx *x = fx_new(1, ok, 10);
	cr_assert_eq(fx_merge(x), FM_OK, "%s", x->res.detail);
	fx_free(x);
}

WM_TEST(fanout, rows_out_of_order_on_one_shard_are_refused)
{
	const char *down[] = {"ord_2", "ord_1"}, *same[] = {"ord_1", "ord_1"};
	char *p = page_of(down, 2, 0, NULL), *q = page_of(same, 2, 0, NULL);
	const char *b1[] = {p}, *b2[] = {q};
	struct merge_fx *x = fx_new(1, b1, 10);
	assert_refused(x, FM_E_ORDER);
	fx_free(x);
	x = fx_new(1, b2, 10);
	assert_refused(x, FM_E_ORDER);
	fx_free(x);
	free(p);
	free(q);
}

WM_TEST(fanout, page_size_bound)
{
	static char ids[201][FANOUT_ID_MAX];
	const char *ptr[201];
	for (int i = 0; i < 201; i++) {
		snprintf(ids[i], FANOUT_ID_MAX, "ord_%04d", i);
		ptr[i] = ids[i];
	}
	char *p200 = page_of(ptr, 200, 0, NULL), *p201 = page_of(ptr, 201, 0, NULL);
	const char *b200[] = {p200}, *b201[] = {p201};
	/* 200 rows at page_size 200: the edge, accepted */
	struct merge_fx *x = fx_new(1, b200, FANOUT_PAGE_MAX);
	cr_assert_eq(fx_merge(x), FM_OK, "%s", x->res.detail);
	cr_assert_eq(x->res.rows, 200);
	cr_assert_str_eq(x->res.first_id, "ord_0000");
	cr_assert_str_eq(x->res.last_id, "ord_0199");
	fx_free(x);
	/* page_size past 200, or 0: the caller's mistake */
	x = fx_new(1, b200, FANOUT_PAGE_MAX + 1);
	assert_refused(x, FM_E_ARGS);
	fx_free(x);
	x = fx_new(1, b200, 0);
	assert_refused(x, FM_E_ARGS);
	fx_free(x);
	/* a shard answering more rows than asked: at 199 and at 200 */
	x = fx_new(1, b200, 199);
	assert_refused(x, FM_E_TOO_MANY_ROWS);
	fx_free(x);
	x = fx_new(1, b201, FANOUT_PAGE_MAX);
	assert_refused(x, FM_E_TOO_MANY_ROWS);
	fx_free(x);
	free(p200);
	free(p201);
}

/* A row id of FANOUT_ID_MAX - 1 bytes (a webhook delivery's "<endpoint
 * id>.<event id>" is about 49) merges; one byte more is refused. */
WM_TEST(fanout, row_id_length_bound)
{
	char edge[FANOUT_ID_MAX + 1], past[FANOUT_ID_MAX + 1];
	memset(edge, 'a', FANOUT_ID_MAX - 1);
	edge[FANOUT_ID_MAX - 1] = 0;
	memset(past, 'a', FANOUT_ID_MAX);
	past[FANOUT_ID_MAX] = 0;
	const char *one[] = {edge}, *two[] = {past};
	char *p = page_of(one, 1, 0, NULL), *q = page_of(two, 1, 0, NULL);
	const char *b1[] = {p}, *b2[] = {q};
	struct merge_fx *x = fx_new(1, b1, 10);
	cr_assert_eq(fx_merge(x), FM_OK, "%s", x->res.detail);
	cr_assert_eq(x->res.rows, 1);
	cr_assert_str_eq(x->res.first_id, edge);
	fx_free(x);
	x = fx_new(1, b2, 10);
	assert_refused(x, FM_E_PAGE_MALFORMED);
	fx_free(x);
	free(p);
	free(q);
}

WM_TEST(fanout, shard_count_bound)
{
	static char ids[FANOUT_MAX_SHARDS + 1][FANOUT_ID_MAX];
	char *bodies[FANOUT_MAX_SHARDS + 1];
	for (int i = 0; i <= FANOUT_MAX_SHARDS; i++) {
		snprintf(ids[i], FANOUT_ID_MAX, "ord_%03d", FANOUT_MAX_SHARDS - i); /* shard 0 holds the last */
		const char *one[] = {ids[i]};
		bodies[i] = page_of(one, 1, 0, NULL);
	}
	struct merge_fx *x = fx_new(FANOUT_MAX_SHARDS, (const char *const *)bodies, 100);
	cr_assert_eq(fx_merge(x), FM_OK, "%s", x->res.detail);
	cr_assert_eq(x->res.rows, FANOUT_MAX_SHARDS);
	cr_assert_str_eq(x->res.first_id, "ord_001");
	cr_assert_str_eq(x->res.last_id, "ord_064");
	cr_assert_eq(x->res.has_more, 0);
	fx_free(x);
	x = fx_new(FANOUT_MAX_SHARDS, (const char *const *)bodies, 100);
	x->a.n_shards = FANOUT_MAX_SHARDS + 1;
	assert_refused(x, FM_E_ARGS);
	fx_free(x);
	/* a position for a shard the map does not have */
	x = fx_new(2, (const char *const *)bodies, 100);
	x->from.shard[2].state = FANOUT_EXHAUSTED;
	assert_refused(x, FM_E_ARGS);
	fx_free(x);
	/* a live shard not asked, an exhausted one asked */
	x = fx_new(2, (const char *const *)bodies, 100);
	x->pages[1].asked = 0;
	assert_refused(x, FM_E_ARGS);
	fx_free(x);
	x = fx_new(2, (const char *const *)bodies, 100);
	x->from.shard[1].state = FANOUT_EXHAUSTED;
	assert_refused(x, FM_E_ARGS);
	fx_free(x);
	/* a position in no known state */
	x = fx_new(2, (const char *const *)bodies, 100);
	x->from.shard[0].state = FANOUT_EXHAUSTED + 1;
	assert_refused(x, FM_E_ARGS);
	fx_free(x);
	for (int i = 0; i <= FANOUT_MAX_SHARDS; i++)
		free(bodies[i]);
}

WM_TEST(fanout, page_bytes_bound)
{
	const char *ids[] = {"ord_1", "ord_2"};
	char *p = page_of(ids, 2, 0, NULL);
	const char *b[] = {p};
	struct merge_fx *x = fx_new(1, b, 10);
	x->a.max_page_bytes = strlen(p);
	cr_assert_eq(fx_merge(x), FM_OK, "%s", x->res.detail);
	fx_free(x);
	x = fx_new(1, b, 10);
	x->a.max_page_bytes = strlen(p) - 1;
	assert_refused(x, FM_E_PAGE_TOO_LARGE);
	fx_free(x);
	x = fx_new(1, b, 10);
	x->a.max_page_bytes = 0;
	assert_refused(x, FM_E_ARGS);
	fx_free(x);
	free(p);
}

WM_TEST(fanout, output_bound_leaves_out_untouched)
{
	const char *ids[] = {"ord_1", "ord_2"};
	char *p = page_of(ids, 2, 0, NULL);
	const char *b[] = {p};
	/* {"data":[{"id":"ord_1"},{"id":"ord_2"}],"next_cursor":null,"has_more":false} after "PRE" */
	size_t need = 3 + strlen("{\"data\":[{\"id\":\"ord_1\"},{\"id\":\"ord_2\"}],\"next_cursor\":null,"
				 "\"has_more\":false}");
	struct merge_fx *x = fx_new(1, b, 10);
	buf_free(&x->out);
	buf_init(&x->out, need - 1);
	buf_puts(&x->out, "PRE");
	assert_refused(x, FM_E_OUTPUT);
	cr_assert_eq(x->out.overflow, 0);
	fx_free(x);
	x = fx_new(1, b, 10);
	buf_free(&x->out);
	buf_init(&x->out, need);
	buf_puts(&x->out, "PRE");
	cr_assert_eq(fx_merge(x), FM_OK, "%s", x->res.detail);
	cr_assert_eq(x->out.len, need);
	fx_free(x);
	free(p);
}

WM_TEST(fanout, malformed_pages_are_refused)
{
	char longid[FANOUT_ID_MAX + 1];
	memset(longid, 'A', FANOUT_ID_MAX);
	longid[FANOUT_ID_MAX] = 0; /* FANOUT_ID_MAX characters: one past the bound */
	char body_long[256];
	snprintf(body_long, sizeof(body_long),
		 "{\"data\":[{\"id\":\"%s\"}],\"next_cursor\":null,\"has_more\":false,\"_cursors\":[\"QQ\"]}",
		 longid);
	char long_cur[FANOUT_SHARD_CURSOR_MAX + 2];
	memset(long_cur, 'A', FANOUT_SHARD_CURSOR_MAX + 1); /* 344 characters */
	long_cur[FANOUT_SHARD_CURSOR_MAX + 1] = 0;
	char body_lcur[1024];
	snprintf(body_lcur, sizeof(body_lcur),
		 "{\"data\":[{\"id\":\"ord_1\"}],\"next_cursor\":null,\"has_more\":false,\"_cursors\":[\"%s\"]}",
		 long_cur);
	const char *bad[] = {
		"",
		"not json",
		"[]",
		"{\"next_cursor\":null,\"has_more\":false,\"_cursors\":[]}",
		"{\"data\":{},\"next_cursor\":null,\"has_more\":false,\"_cursors\":[]}",
		"{\"data\":[],\"next_cursor\":null,\"_cursors\":[]}",
		"{\"data\":[],\"next_cursor\":null,\"has_more\":1,\"_cursors\":[]}",
		"{\"data\":[],\"has_more\":false,\"_cursors\":[]}",
		"{\"data\":[],\"next_cursor\":\"QQ\",\"has_more\":false,\"_cursors\":[]}",
		"{\"data\":[],\"next_cursor\":null,\"has_more\":true,\"_cursors\":[]}",
		"{\"data\":[],\"next_cursor\":\"@@\",\"has_more\":true,\"_cursors\":[]}",
		"{\"data\":[1],\"next_cursor\":null,\"has_more\":false,\"_cursors\":[\"QQ\"]}",
		"{\"data\":[{\"ref\":\"x\"}],\"next_cursor\":null,\"has_more\":false,\"_cursors\":[\"QQ\"]}",
		"{\"data\":[{\"id\":7}],\"next_cursor\":null,\"has_more\":false,\"_cursors\":[\"QQ\"]}",
		"{\"data\":[{\"id\":\"\"}],\"next_cursor\":null,\"has_more\":false,\"_cursors\":[\"QQ\"]}",
		"{\"data\":[{\"id\":\"a\\u0000b\"}],\"next_cursor\":null,\"has_more\":false,\"_cursors\":[\"QQ\"]}",
		"{\"data\":[{\"id\":\"ord_1\"}],\"next_cursor\":null,\"has_more\":false,\"_cursors\":[\"\"]}",
		"{\"data\":[{\"id\":\"ord_1\"}],\"next_cursor\":null,\"has_more\":false,\"_cursors\":[\"Q\"]}",
		"{\"data\":[{\"id\":\"ord_1\"}],\"next_cursor\":null,\"has_more\":false,\"_cursors\":[\"QR\"]}",
		"{\"data\":[{\"id\":\"ord_1\"}],\"next_cursor\":null,\"has_more\":false,\"_cursors\":[7]}",
		body_long,
		body_lcur,
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *b[] = {bad[i]};
		struct merge_fx *x = fx_new(1, b, 10);
		assert_refused(x, FM_E_PAGE_MALFORMED);
		cr_assert_eq(x->res.err_shard, 0, "case %zu", i);
		fx_free(x);
	}
	/* the edges themselves are accepted: an id of FANOUT_ID_MAX - 1
	 * characters, a shard cursor of FANOUT_SHARD_CURSOR_MAX characters */
	longid[FANOUT_ID_MAX - 1] = 0;
	snprintf(body_long, sizeof(body_long),
		 "{\"data\":[{\"id\":\"%s\"}],\"next_cursor\":null,\"has_more\":false,\"_cursors\":[\"QQ\"]}",
		 longid);
	long_cur[FANOUT_SHARD_CURSOR_MAX] = 0;
	long_cur[FANOUT_SHARD_CURSOR_MAX - 1] = 'A'; /* 343 = 3 mod 4: 257 bytes, 'A' keeps the trailing bits 0 */
	snprintf(body_lcur, sizeof(body_lcur),
		 "{\"data\":[{\"id\":\"ord_1\"}],\"next_cursor\":\"%s\",\"has_more\":true,\"_cursors\":[\"%s\"]}",
		 long_cur, long_cur);
	const char *good[] = {body_long, body_lcur};
	for (int i = 0; i < 2; i++) {
		const char *b[] = {good[i]};
		struct merge_fx *x = fx_new(1, b, 10);
		cr_assert_eq(fx_merge(x), FM_OK, "case %d: %s", i, x->res.detail);
		fx_free(x);
	}
}

WM_TEST(fanout, stalled_shard_is_refused)
{
	const char *b[] = {"{\"data\":[],\"next_cursor\":\"b3JkXzE\",\"has_more\":true,\"_cursors\":[]}"};
	struct merge_fx *x = fx_new(1, b, 10);
	x->from.shard[0] = (struct fanout_pos){.state = FANOUT_AT, .len = 7};
	memcpy(x->from.shard[0].text, "b3JkXzE", 8);
	assert_refused(x, FM_E_STALLED);
	fx_free(x);
	/* the same page from another position moves on: accepted, no row, more */
	x = fx_new(1, b, 10);
	cr_assert_eq(fx_merge(x), FM_OK, "%s", x->res.detail);
	cr_assert_eq(x->res.rows, 0);
	cr_assert_eq(x->res.has_more, 1);
	cr_assert_eq(x->res.next.shard[0].state, FANOUT_AT);
	cr_assert_str_eq(x->res.next.shard[0].text, "b3JkXzE");
	fx_free(x);
}

/* A shard whose page ended early with more to come stops the merge at its
 * last row: its unseen rows could sort before the other shard's. */
WM_TEST(fanout, short_page_with_more_bounds_the_merge)
{
	const char *a_ids[] = {"ord_2"}, *b_ids[] = {"ord_1", "ord_3", "ord_4"};
	char next[API_MAX_SPAN];
	b64("ord_25", next); /* the shard examined past ord_2 (hidden rows) */
	char *p0 = page_of(a_ids, 1, 1, next), *p1 = page_of(b_ids, 3, 0, NULL);
	const char *bodies[] = {p0, p1};
	struct merge_fx *x = fx_new(2, bodies, 4);
	cr_assert_eq(fx_merge(x), FM_OK, "%s", x->res.detail);
	cr_assert_eq(x->res.rows, 2);
	cr_assert_str_eq(x->res.first_id, "ord_1");
	cr_assert_str_eq(x->res.last_id, "ord_2");
	cr_assert_eq(x->res.has_more, 1);
	const char *want = "PRE{\"data\":[{\"id\":\"ord_1\"},{\"id\":\"ord_2\"}],\"next_cursor\":\"";
	cr_assert(x->out.len > strlen(want) && memcmp(x->out.data, want, strlen(want)) == 0);
	/* positions: shard 0 at its page's next_cursor, shard 1 after ord_1 */
	struct fanout_cursor c;
	cr_assert_eq(fanout_cursor_decode(&x->k, x->res.next_text, strlen(x->res.next_text), TAG, strlen(TAG), MAP_V,
					  &c),
		     FC_OK);
	char a1[API_MAX_SPAN];
	b64("ord_1", a1);
	cr_assert_eq(c.shard[0].state, FANOUT_AT);
	cr_assert_str_eq(c.shard[0].text, next);
	cr_assert_eq(c.shard[1].state, FANOUT_AT);
	cr_assert_str_eq(c.shard[1].text, a1);
	fx_free(x);
	free(p0);
	free(p1);
}

WM_TEST(fanout, no_shards_is_an_empty_page)
{
	struct merge_fx *x = fx_new(0, NULL, 50);
	cr_assert_eq(fx_merge(x), FM_OK);
	cr_assert_eq(x->out.len, 3 + strlen("{\"data\":[],\"next_cursor\":null,\"has_more\":false}"));
	cr_assert(memcmp(x->out.data + 3, "{\"data\":[],\"next_cursor\":null,\"has_more\":false}", x->out.len - 3) == 0);
	cr_assert_str_eq(x->res.first_id, "");
	fx_free(x);
}

/* ---- the cursor ------------------------------------------------------------- */

WM_TEST(fanout, bounds_follow_the_rest_of_the_code)
{
	cr_assert_eq(FANOUT_SHARD_CURSOR_MAX + 1, API_MAX_SPAN);
	cr_assert_eq(FANOUT_ID_MAX, 2 * ID_MAX_LEN, "a sub-row id: <id>.<id>");
	cr_assert_eq(FANOUT_MAX_SHARDS, SMAP_MAX_SHARDS);
	cr_assert_eq(FANOUT_PAGE_MAX, API_PAGE_MAX);
}

/* Expected text from Python, not from this code:
 *   p = bytes([1]) + struct.pack('<Q', 7) + sha256(TAG).digest()[:8] + bytes([2])
 *   p += bytes([0, 1]) + struct.pack('<H', 6) + b"ord_01" + bytes([2, 2])
 *   mac = hmac.new(SECRET, b"wm-fanout-cursor-v1\0" + p, sha256).digest()[:16]
 *   urlsafe_b64encode(p + mac).rstrip(b'=') */
WM_TEST(fanout, cursor_known_vector)
{
	struct cluster_key k = key();
	static struct fanout_cursor c, d;
	fanout_cursor_init(&c, MAP_V);
	c.shard[0] = (struct fanout_pos){.state = FANOUT_AT, .len = 8};
	memcpy(c.shard[0].text, "b3JkXzAx", 9); /* "ord_01" */
	c.shard[2].state = FANOUT_EXHAUSTED;
	char out[FANOUT_CURSOR_MAX + 1];
	const char *want = "AQcAAAAAAAAA92XRTfa8MDwCAAEGAG9yZF8wMQICbMwSOCGJIyD8v3ETuRnDVw";
	cr_assert_eq(fanout_cursor_encode(&k, TAG, strlen(TAG), &c, out, sizeof(out)), (int)strlen(want));
	cr_assert_str_eq(out, want);
	cr_assert_eq(fanout_cursor_decode(&k, want, strlen(want), TAG, strlen(TAG), MAP_V, &d), FC_OK);
	cr_assert_eq(d.map_version, MAP_V);
	cr_assert_eq(d.shard[0].state, FANOUT_AT);
	cr_assert_eq(d.shard[0].len, 8);
	cr_assert_str_eq(d.shard[0].text, "b3JkXzAx");
	cr_assert_eq(d.shard[1].state, FANOUT_START);
	cr_assert_eq(d.shard[2].state, FANOUT_EXHAUSTED);
	for (int i = 3; i < FANOUT_MAX_SHARDS; i++)
		cr_assert_eq(d.shard[i].state, FANOUT_START);
}

static void sample_cursor(struct fanout_cursor *c)
{
	fanout_cursor_init(c, MAP_V);
	char t[API_MAX_SPAN];
	b64("ord_01KBX3M9ZQ0000ABCDEF", t);
	c->shard[1] = (struct fanout_pos){.state = FANOUT_AT, .len = (uint16_t)strlen(t)};
	memcpy(c->shard[1].text, t, strlen(t) + 1);
	c->shard[5].state = FANOUT_EXHAUSTED;
	c->shard[63] = c->shard[1];
}

WM_TEST(fanout, cursor_edited_or_forged_is_refused)
{
	struct cluster_key k = key(), other = key();
	other.secret[0] ^= 1;
	static struct fanout_cursor c, d;
	sample_cursor(&c);
	char out[FANOUT_CURSOR_MAX + 1], ed[FANOUT_CURSOR_MAX + 1];
	int n = fanout_cursor_encode(&k, TAG, strlen(TAG), &c, out, sizeof(out));
	cr_assert_gt(n, 0);
	cr_assert_eq(fanout_cursor_decode(&k, out, (size_t)n, TAG, strlen(TAG), MAP_V, &d), FC_OK);
	cr_assert_eq(memcmp(&c, &d, sizeof(c)), 0);
	/* every character changed to every other: never accepted, and a
	 * change that still decodes as base64url is "forged" */
	static const char alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	for (int i = 0; i < n; i++)
		for (int j = 0; j < 64; j++) {
			if (alpha[j] == out[i])
				continue;
			memcpy(ed, out, (size_t)n + 1);
			ed[i] = alpha[j];
			int r = fanout_cursor_decode(&k, ed, (size_t)n, TAG, strlen(TAG), MAP_V, &d);
			cr_assert(r == FC_E_FORGED || (i == n - 1 && r == FC_E_MALFORMED), "pos %d char %c: %d", i,
				  alpha[j], r);
		}
	/* the same cursor under another secret, truncated, extended */
	cr_assert_eq(fanout_cursor_decode(&other, out, (size_t)n, TAG, strlen(TAG), MAP_V, &d), FC_E_FORGED);
	int r = fanout_cursor_decode(&k, out, (size_t)n - 1, TAG, strlen(TAG), MAP_V, &d);
	cr_assert(r == FC_E_FORGED || r == FC_E_MALFORMED);
	memcpy(ed, out, (size_t)n);
	memcpy(ed + n, "AAAA", 5);
	cr_assert_eq(fanout_cursor_decode(&k, ed, (size_t)n + 4, TAG, strlen(TAG), MAP_V, &d), FC_E_FORGED);
	/* a payload of our own sealed with another secret: forged */
	uint8_t p[64] = {1};
	char forged[FANOUT_CURSOR_MAX + 1];
	int fl = fanout_cursor_seal(&other, p, 18, forged, sizeof(forged));
	cr_assert_gt(fl, 0);
	cr_assert_eq(fanout_cursor_decode(&k, forged, (size_t)fl, TAG, strlen(TAG), MAP_V, &d), FC_E_FORGED);
	cr_assert_str_eq(fanout_cursor_detail(FC_E_FORGED), "cursor is not one this API returned");
}

WM_TEST(fanout, cursor_of_another_list_or_map_is_refused)
{
	struct cluster_key k = key();
	static struct fanout_cursor c, d;
	sample_cursor(&c);
	char out[FANOUT_CURSOR_MAX + 1];
	int n = fanout_cursor_encode(&k, TAG, strlen(TAG), &c, out, sizeof(out));
	cr_assert_gt(n, 0);
	const char *other = "GET /v1/orders?status=shipped entity=ptn_1";
	cr_assert_eq(fanout_cursor_decode(&k, out, (size_t)n, other, strlen(other), MAP_V, &d), FC_E_OTHER_LIST);
	cr_assert_eq(fanout_cursor_decode(&k, out, (size_t)n, TAG, strlen(TAG), MAP_V + 1, &d), FC_E_MAP_CHANGED);
	cr_assert_eq(fanout_cursor_decode(&k, out, (size_t)n, TAG, strlen(TAG), MAP_V - 1, &d), FC_E_MAP_CHANGED);
	cr_assert_str_eq(fanout_cursor_detail(FC_E_MAP_CHANGED), "cursor no longer valid after a shard map change");
	cr_assert_str_eq(fanout_cursor_detail(FC_E_OTHER_LIST), "cursor does not belong to this list");
	/* an empty tag is a tag like any other */
	n = fanout_cursor_encode(&k, "", 0, &c, out, sizeof(out));
	cr_assert_gt(n, 0);
	cr_assert_eq(fanout_cursor_decode(&k, out, (size_t)n, "", 0, MAP_V, &d), FC_OK);
	cr_assert_eq(fanout_cursor_decode(&k, out, (size_t)n, TAG, strlen(TAG), MAP_V, &d), FC_E_OTHER_LIST);
}

WM_TEST(fanout, cursor_malformed_text_is_refused)
{
	struct cluster_key k = key();
	static struct fanout_cursor d;
	const char *bad[] = {"", "A", "!!!!", "AAAA AAAA", "AAAAA", "AAAA=", "AAAB",
			     /* 33 bytes: one short of header + MAC */
			     "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(fanout_cursor_decode(&k, bad[i], strlen(bad[i]), TAG, strlen(TAG), MAP_V, &d),
			     FC_E_MALFORMED, "case %zu", i);
	/* non-canonical trailing bits of a genuine cursor: malformed, not forged */
	static struct fanout_cursor c;
	fanout_cursor_init(&c, MAP_V);
	char out[FANOUT_CURSOR_MAX + 1];
	int n = fanout_cursor_encode(&k, TAG, strlen(TAG), &c, out, sizeof(out));
	cr_assert_gt(n, 0);
	cr_assert_neq(n % 4, 0, "the test needs a text with trailing bits");
	cr_assert_eq(fanout_cursor_decode(&k, out, (size_t)n, TAG, strlen(TAG), MAP_V, &d), FC_OK);
	/* the last character carries 2 or 4 data bits and zero padding bits:
	 * setting the lowest bit breaks only the padding */
	const char *alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	int v = (int)(strchr(alpha, out[n - 1]) - alpha);
	out[n - 1] = alpha[v | 1];
	cr_assert_eq(fanout_cursor_decode(&k, out, (size_t)n, TAG, strlen(TAG), MAP_V, &d), FC_E_MALFORMED);
}

/* Build a genuine payload: header for TAG at MAP_V, then the raw bytes e. */
static size_t payload(uint8_t *p, uint8_t count, const uint8_t *e, size_t elen)
{
	/* the header, taken from a real cursor so the tag hash is right */
	struct cluster_key k = key();
	static struct fanout_cursor c;
	fanout_cursor_init(&c, MAP_V);
	char t[FANOUT_CURSOR_MAX + 1];
	int n = fanout_cursor_encode(&k, TAG, strlen(TAG), &c, t, sizeof(t));
	cr_assert_gt(n, 0);
	uint8_t raw[64];
	int rl = b64url_decode(t, (size_t)n, raw, sizeof(raw));
	cr_assert_eq(rl, 18 + FANOUT_MAC_LEN);
	memcpy(p, raw, 18);
	p[17] = count;
	if (elen)
		memcpy(p + 18, e, elen);
	return 18 + elen;
}

static int decode_payload(const uint8_t *p, size_t len)
{
	struct cluster_key k = key();
	static char t[FANOUT_CURSOR_MAX + 1];
	static struct fanout_cursor d;
	int n = fanout_cursor_seal(&k, p, len, t, sizeof(t));
	cr_assert_gt(n, 0);
	return fanout_cursor_decode(&k, t, (size_t)n, TAG, strlen(TAG), MAP_V, &d);
}

WM_TEST(fanout, cursor_genuine_but_malformed_payload_is_refused)
{
	static uint8_t p[FANOUT_CURSOR_MAX];
	struct {
		uint8_t count;
		uint8_t e[8];
		size_t len;
		int want;
	} cases[] = {
		{0, {0}, 0, FC_OK},
		{1, {3, 2}, 2, FC_OK},                            /* shard 3 exhausted */
		{1, {3, 1, 1, 0, 'x'}, 5, FC_OK},                 /* shard 3 at "x" */
		{1, {3, 2, 0}, 3, FC_E_MALFORMED},                /* a trailing byte */
		{2, {3, 2}, 2, FC_E_MALFORMED},                   /* one entry short */
		{2, {3, 2, 3, 2}, 4, FC_E_MALFORMED},             /* the same shard twice */
		{2, {4, 2, 3, 2}, 4, FC_E_MALFORMED},             /* descending */
		{1, {3, 0}, 2, FC_E_MALFORMED},                   /* state START is never written */
		{1, {3, 3}, 2, FC_E_MALFORMED},                   /* no such state */
		{1, {3, 1, 0, 0}, 4, FC_E_MALFORMED},             /* an empty position */
		{1, {3, 1, 2, 0, 'x'}, 5, FC_E_MALFORMED},        /* position cut short */
		{1, {3, 1, 1}, 3, FC_E_MALFORMED},                /* length cut short */
		{1, {63, 2}, 2, FC_OK},                           /* the last shard id */
		{1, {64, 2}, 2, FC_E_TOO_LARGE},                  /* past it */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = payload(p, cases[i].count, cases[i].e, cases[i].len);
		cr_assert_eq(decode_payload(p, n), cases[i].want, "case %zu", i);
	}
	/* another format version */
	size_t n = payload(p, 0, NULL, 0);
	p[0] = 2;
	cr_assert_eq(decode_payload(p, n), FC_E_MALFORMED);
	/* 65 entries announced (64 are possible) */
	n = payload(p, 65, NULL, 0);
	cr_assert_eq(decode_payload(p, n), FC_E_TOO_LARGE);
	/* a position of FANOUT_SHARD_RAW_MAX bytes, and one more */
	uint8_t e[4 + FANOUT_SHARD_RAW_MAX + 1];
	memset(e, 'k', sizeof(e));
	e[0] = 0;
	e[1] = 1;
	wr_u16(e + 2, FANOUT_SHARD_RAW_MAX);
	n = payload(p, 1, e, 4 + FANOUT_SHARD_RAW_MAX);
	cr_assert_eq(decode_payload(p, n), FC_OK);
	wr_u16(e + 2, FANOUT_SHARD_RAW_MAX + 1);
	n = payload(p, 1, e, 4 + FANOUT_SHARD_RAW_MAX + 1);
	cr_assert_eq(decode_payload(p, n), FC_E_TOO_LARGE);
}

WM_TEST(fanout, cursor_shard_text_bound)
{
	struct cluster_key k = key();
	static struct fanout_cursor c, d;
	fanout_cursor_init(&c, MAP_V);
	char out[FANOUT_CURSOR_MAX + 1];
	/* FANOUT_SHARD_CURSOR_MAX characters (343 = 257 bytes): the edge */
	memset(c.shard[0].text, 'g', FANOUT_SHARD_CURSOR_MAX);
	c.shard[0].text[FANOUT_SHARD_CURSOR_MAX - 1] = 'A'; /* zero trailing bits */
	c.shard[0].text[FANOUT_SHARD_CURSOR_MAX] = 0;
	c.shard[0].state = FANOUT_AT;
	c.shard[0].len = FANOUT_SHARD_CURSOR_MAX;
	int n = fanout_cursor_encode(&k, TAG, strlen(TAG), &c, out, sizeof(out));
	cr_assert_gt(n, 0);
	cr_assert_eq(fanout_cursor_decode(&k, out, (size_t)n, TAG, strlen(TAG), MAP_V, &d), FC_OK);
	cr_assert_str_eq(d.shard[0].text, c.shard[0].text);
	/* len disagreeing with the text */
	c.shard[0].len = 5;
	cr_assert_eq(fanout_cursor_encode(&k, TAG, strlen(TAG), &c, out, sizeof(out)), FC_E_MALFORMED);
	c.shard[0].len = FANOUT_SHARD_CURSOR_MAX;
	/* a text the shard could not have issued, empty, or not canonical */
	c.shard[0].text[5] = '*';
	cr_assert_eq(fanout_cursor_encode(&k, TAG, strlen(TAG), &c, out, sizeof(out)), FC_E_MALFORMED);
	c.shard[0].len = 0;
	c.shard[0].text[0] = 0;
	cr_assert_eq(fanout_cursor_encode(&k, TAG, strlen(TAG), &c, out, sizeof(out)), FC_E_MALFORMED);
	memcpy(c.shard[0].text, "QR", 3); /* 'R' leaves a bit in the padding */
	c.shard[0].len = 2;
	cr_assert_eq(fanout_cursor_encode(&k, TAG, strlen(TAG), &c, out, sizeof(out)), FC_E_MALFORMED);
	/* past the bound: len says 344 */
	c.shard[0].len = FANOUT_SHARD_CURSOR_MAX + 1;
	cr_assert_eq(fanout_cursor_encode(&k, TAG, strlen(TAG), &c, out, sizeof(out)), FC_E_TOO_LARGE);
	/* a state that does not exist */
	c.shard[0].state = 9;
	cr_assert_eq(fanout_cursor_encode(&k, TAG, strlen(TAG), &c, out, sizeof(out)), FC_E_MALFORMED);
}

/* Every one of the 64 shards at a position: the merged text is exactly
 * FANOUT_CURSOR_MAX characters (decoded), one byte more is too large. */
WM_TEST(fanout, cursor_total_bound)
{
	struct cluster_key k = key();
	static struct fanout_cursor c, d;
	fanout_cursor_init(&c, MAP_V);
	/* text of FANOUT_CURSOR_MAX (6000, = 0 mod 4) chars = 4500 bytes =
	 * 18 header + 16 MAC + 64 x (4 + L_i): sum L_i = 4210 */
	size_t raw_total = (size_t)FANOUT_CURSOR_MAX / 4 * 3;
	cr_assert_eq(FANOUT_CURSOR_MAX % 4, 0);
	size_t sum = raw_total - 18 - FANOUT_MAC_LEN - FANOUT_MAX_SHARDS * 4;
	for (int s = 0; s < FANOUT_MAX_SHARDS; s++) {
		size_t l = sum / FANOUT_MAX_SHARDS + ((size_t)s < sum % FANOUT_MAX_SHARDS);
		uint8_t raw[FANOUT_SHARD_RAW_MAX];
		memset(raw, 's' + s % 5, l);
		c.shard[s].state = FANOUT_AT;
		c.shard[s].len = (uint16_t)b64url_encode(raw, l, c.shard[s].text, sizeof(c.shard[s].text));
	}
	char out[FANOUT_CURSOR_MAX + 1];
	int n = fanout_cursor_encode(&k, TAG, strlen(TAG), &c, out, sizeof(out));
	cr_assert_eq(n, FANOUT_CURSOR_MAX);
	cr_assert_eq(fanout_cursor_decode(&k, out, (size_t)n, TAG, strlen(TAG), MAP_V, &d), FC_OK);
	cr_assert_eq(memcmp(&c, &d, sizeof(c)), 0);
	/* an output buffer one short */
	cr_assert_eq(fanout_cursor_encode(&k, TAG, strlen(TAG), &c, out, FANOUT_CURSOR_MAX), FC_E_TOO_LARGE);
	/* one byte more in one position: past the bound */
	uint8_t raw[FANOUT_SHARD_RAW_MAX];
	int rl = b64url_decode(c.shard[0].text, c.shard[0].len, raw, sizeof(raw));
	cr_assert_gt(rl, 0);
	raw[rl] = 'z';
	c.shard[0].len = (uint16_t)b64url_encode(raw, (size_t)rl + 1, c.shard[0].text, sizeof(c.shard[0].text));
	cr_assert_eq(fanout_cursor_encode(&k, TAG, strlen(TAG), &c, out, sizeof(out)), FC_E_TOO_LARGE);
	/* a text past FANOUT_CURSOR_MAX is refused before anything else */
	static char big[FANOUT_CURSOR_MAX + 2];
	memset(big, 'A', FANOUT_CURSOR_MAX + 1);
	cr_assert_eq(fanout_cursor_decode(&k, big, FANOUT_CURSOR_MAX + 1, TAG, strlen(TAG), MAP_V, &d), FC_E_TOO_LARGE);
	cr_assert_eq(fanout_cursor_decode(&k, big, FANOUT_CURSOR_MAX, TAG, strlen(TAG), MAP_V, &d), FC_E_FORGED);
	/* and sealing a payload that would pass it */
	static uint8_t p[FANOUT_CURSOR_MAX];
	memset(p, 0, sizeof(p));
	char t[FANOUT_CURSOR_MAX + 1];
	cr_assert_eq(fanout_cursor_seal(&k, p, raw_total - FANOUT_MAC_LEN, t, sizeof(t)), FANOUT_CURSOR_MAX);
	cr_assert_eq(fanout_cursor_seal(&k, p, raw_total - FANOUT_MAC_LEN + 1, t, sizeof(t)), FC_E_TOO_LARGE);
}
