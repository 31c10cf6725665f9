/*
 * fanout.c -- merged lists across shards: the cursor codec and the k-way
 * merge (contract and wire format in fanout.h).
 *
 * Why this shape:
 *   - One bounded request per shard per page.  Lists that span owners
 *     (orders, events, inventory levels, the network snapshot, the audit)
 *     are ordered by an id that sorts by creation time as a byte string, so
 *     a merged page is the page_size smallest ids among one page of
 *     page_size from every shard, each from its own position.  No shard is
 *     ever asked twice for one page and none is scanned: a page costs
 *     n_shards requests of page_size rows, whatever the list's length.  The
 *     only state is in the cursor: the router keeps none between pages.
 *   - A shard may end a page early and still have more (a page examines at
 *     most a budget of rows, engine/edge/api.h api_source).  Its unseen rows
 *     could sort before another shard's rows, so the merge never takes a
 *     row past the end of such a page; when every row it sent was taken it
 *     resumes at the page's next_cursor (past the rows it examined and
 *     hid).  A page can then hold fewer than page_size rows, never a wrong
 *     order or a lost row.
 *   - Why the cursor is MAC'd.  The read-path filter runs on the shards
 *     whatever the cursor says, so a forged position cannot reveal a row
 *     the caller may not see.  It could still let a caller steer the
 *     router: start a shard at a chosen key to probe which ranges exist
 *     (timing, page shape), mark shards exhausted, or carry a position from
 *     one list (another route, other filters, another partner) to another.
 *     HMAC-SHA256 under the cluster secret, over the whole payload including
 *     a hash of the list's tag and the map version, makes every cursor one
 *     this cluster issued for this very list; an edited byte is a 400.
 *     The MAC is compared in constant time (CRYPTO_memcmp) and checked
 *     before anything inside the payload is believed or reported on.
 *   - Why a map change invalidates cursors.  Positions are per shard id;
 *     moving a country moves its rows to another shard id, so an old
 *     position could skip rows or repeat them.  The map version is in the
 *     cursor and a cursor of another version is refused with its own code
 *     (the router answers 400 "cursor no longer valid after a shard map
 *     change"): restarting the list is rare and always correct.
 *   - Rows are copied byte for byte: the JSON parser (net/json.h) validates
 *     the whole page and gives ids and _cursors, and a small scanner over
 *     the validated text finds where each row of "data" starts and ends, so
 *     the merged body carries exactly what the shard serialised.
 *   - Shard cursors travel in the merged cursor as raw bytes (their
 *     base64url decoded; a shard's cursor is canonical base64url, which is
 *     checked), a quarter shorter: the merged cursor rides in a URL.
 *   - A shard answering something a shard must not (more rows than asked,
 *     _cursors of another length, ids out of order or on two shards, a
 *     next_cursor that does not move) is an error for the whole page (the
 *     router's 502), never a page that is quietly wrong.
 */
#include "shard-router/fanout.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/b64url.h"
#include "net/digest.h"
#include "net/json.h"
#include "net/jsonw.h"

#define FC_FORMAT 1
#define FC_HEAD (1 + 8 + FANOUT_TAG_LEN + 1)                  /* format, map version, tag, n */
#define FC_RAW_MAX ((size_t)FANOUT_CURSOR_MAX / 4 * 3 + 2)     /* payload + MAC bytes a text may hold */
#define FC_LABEL "wm-fanout-cursor-v1"                         /* domain separation from ck_sign */

_Static_assert(FANOUT_SHARD_RAW_MAX == FANOUT_SHARD_CURSOR_MAX * 6 / 8, "raw bound follows the text bound");

/* base64url (no padding, canonical): net/b64url.h */

/* ---- the cursor --------------------------------------------------------- */

void fanout_cursor_init(struct fanout_cursor *c, uint64_t map_version)
{
	memset(c, 0, sizeof(*c));
	c->map_version = map_version;
}

/* The first FANOUT_TAG_LEN bytes of SHA-256(tag). */
static void tag_hash(const void *tag, size_t tag_len, uint8_t out[FANOUT_TAG_LEN])
{
	uint8_t h[DIGEST_SHA256_LEN];
	if (digest_sha256(tag, tag_len, h))
		memset(h, 0, sizeof(h)); /* no tag: a cursor of another request still fails its MAC */
	memcpy(out, h, FANOUT_TAG_LEN);
}

/* The truncated MAC of payload[0..len) into mac; 0 or -1. */
static int cursor_mac(const struct cluster_key *k, const uint8_t *payload, size_t len, uint8_t mac[FANOUT_MAC_LEN])
{
	uint8_t full[DIGEST_SHA256_LEN];
	/* label || NUL || payload, MAC'd in one call over a bounded buffer */
	static const char label[] = FC_LABEL; /* sizeof includes the NUL */
	uint8_t msg[sizeof(label) + FC_RAW_MAX];
	if (len > FC_RAW_MAX)
		return -1;
	memcpy(msg, label, sizeof(label));
	if (len)
		memcpy(msg + sizeof(label), payload, len);
	if (digest_hmac_sha256(k->secret, k->len, msg, sizeof(label) + len, full))
		return -1;
	memcpy(mac, full, FANOUT_MAC_LEN);
	OPENSSL_cleanse(full, sizeof(full));
	return 0;
}

int fanout_cursor_seal(const struct cluster_key *k, const void *payload, size_t len, char *out, size_t out_size)
{
	uint8_t raw[FC_RAW_MAX];
	if (!len) /* nothing of raw is read for an empty payload; say so to the flow analysis */
		raw[0] = 0;
	if (len > FC_RAW_MAX - FANOUT_MAC_LEN || b64url_len(len + FANOUT_MAC_LEN) > FANOUT_CURSOR_MAX ||
	    b64url_len(len + FANOUT_MAC_LEN) + 1 > out_size)
		return FC_E_TOO_LARGE;
	if (len)
		memcpy(raw, payload, len);
	if (cursor_mac(k, raw, len, raw + len))
		return FC_E_INTERNAL;
	b64url_encode(raw, len + FANOUT_MAC_LEN, out, b64url_len(len + FANOUT_MAC_LEN) + 1);
	return (int)b64url_len(len + FANOUT_MAC_LEN);
}

int fanout_cursor_encode(const struct cluster_key *k, const void *tag, size_t tag_len, const struct fanout_cursor *c,
			 char *out, size_t out_size)
{
	uint8_t p[FC_RAW_MAX];
	size_t n = 0;
	p[n++] = FC_FORMAT;
	for (int i = 0; i < 8; i++)
		p[n++] = (uint8_t)(c->map_version >> (8 * i));
	tag_hash(tag, tag_len, p + n);
	n += FANOUT_TAG_LEN;
	size_t count_at = n++;
	uint8_t count = 0;
	for (unsigned id = 0; id < FANOUT_MAX_SHARDS; id++) {
		const struct fanout_pos *s = &c->shard[id];
		if (s->state == FANOUT_START)
			continue;
		if (s->state != FANOUT_AT && s->state != FANOUT_EXHAUSTED)
			return FC_E_MALFORMED;
		if (n + 2 > FC_RAW_MAX - FANOUT_MAC_LEN)
			return FC_E_TOO_LARGE;
		p[n++] = (uint8_t)id;
		p[n++] = s->state;
		count++;
		if (s->state == FANOUT_EXHAUSTED)
			continue;
		if (s->len > FANOUT_SHARD_CURSOR_MAX)
			return FC_E_TOO_LARGE;
		if (s->len == 0 || strnlen(s->text, sizeof(s->text)) != s->len)
			return FC_E_MALFORMED;
		uint8_t raw[FANOUT_SHARD_RAW_MAX];
		long r = b64url_decode(s->text, s->len, raw, sizeof(raw));
		if (r <= 0)
			return FC_E_MALFORMED;
		if (n + 2 + (size_t)r > FC_RAW_MAX - FANOUT_MAC_LEN)
			return FC_E_TOO_LARGE;
		wr_u16(p + n, (uint16_t)r);
		memcpy(p + n + 2, raw, (size_t)r);
		n += 2 + (size_t)r;
	}
	p[count_at] = count;
	return fanout_cursor_seal(k, p, n, out, out_size);
}

/* Read the entries of a genuine payload p[FC_HEAD..len) into c. */
static int parse_entries(const uint8_t *p, size_t len, struct fanout_cursor *c)
{
	unsigned count = p[FC_HEAD - 1];
	if (count > FANOUT_MAX_SHARDS)
		return FC_E_TOO_LARGE;
	size_t i = FC_HEAD;
	int prev = -1;
	for (unsigned e = 0; e < count; e++) {
		if (len - i < 2)
			return FC_E_MALFORMED;
		unsigned id = p[i], state = p[i + 1];
		i += 2;
		if (id >= FANOUT_MAX_SHARDS)
			return FC_E_TOO_LARGE;
		if ((int)id <= prev)
			return FC_E_MALFORMED; /* one spelling: ascending, each shard once */
		prev = (int)id;
		struct fanout_pos *s = &c->shard[id];
		if (state == FANOUT_EXHAUSTED) {
			s->state = FANOUT_EXHAUSTED;
			continue;
		}
		if (state != FANOUT_AT || len - i < 2)
			return FC_E_MALFORMED;
		size_t rl = rd_u16(p + i);
		i += 2;
		if (rl > FANOUT_SHARD_RAW_MAX)
			return FC_E_TOO_LARGE;
		if (rl == 0 || len - i < rl)
			return FC_E_MALFORMED;
		s->state = FANOUT_AT;
		b64url_encode(p + i, rl, s->text, b64url_len(rl) + 1);
		s->len = (uint16_t)b64url_len(rl);
		i += rl;
	}
	return i == len ? FC_OK : FC_E_MALFORMED;
}

int fanout_cursor_decode(const struct cluster_key *k, const char *text, size_t len, const void *tag, size_t tag_len,
			 uint64_t map_version, struct fanout_cursor *c)
{
	if (len > FANOUT_CURSOR_MAX)
		return FC_E_TOO_LARGE;
	uint8_t raw[FC_RAW_MAX];
	long n = b64url_decode(text, len, raw, sizeof(raw));
	if (n < (long)(FC_HEAD + FANOUT_MAC_LEN))
		return FC_E_MALFORMED;
	size_t plen = (size_t)n - FANOUT_MAC_LEN;
	uint8_t want[FANOUT_MAC_LEN];
	if (cursor_mac(k, raw, plen, want))
		return FC_E_INTERNAL;
	if (CRYPTO_memcmp(want, raw + plen, FANOUT_MAC_LEN) != 0)
		return FC_E_FORGED;
	/* Genuine from here on: issued by this cluster, so what follows is
	 * reported precisely. */
	if (raw[0] != FC_FORMAT)
		return FC_E_MALFORMED;
	uint8_t th[FANOUT_TAG_LEN];
	tag_hash(tag, tag_len, th);
	if (memcmp(th, raw + 9, FANOUT_TAG_LEN))
		return FC_E_OTHER_LIST;
	if (rd_u64(raw + 1) != map_version)
		return FC_E_MAP_CHANGED;
	fanout_cursor_init(c, map_version);
	return parse_entries(raw, plen, c);
}

const char *fanout_cursor_detail(int err)
{
	switch (err) {
	case FC_OK:
		return "";
	case FC_E_TOO_LARGE:
		return "cursor is longer than any this API returns";
	case FC_E_OTHER_LIST:
		return "cursor does not belong to this list";
	case FC_E_MAP_CHANGED:
		return "cursor no longer valid after a shard map change";
	case FC_E_INTERNAL:
		return "cursor could not be checked";
	default: /* malformed and forged alike: nothing about which bytes were wrong */
		return "cursor is not one this API returned";
	}
}

/* ---- byte spans of a validated JSON text ---------------------------------- */

/* The index of the first non-whitespace byte at or after i (n at the end). */
static size_t skip_ws(const char *s, size_t n, size_t i)
{
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	return i;
}

/* The index just after the string whose opening quote is at s[i], or n. */
static size_t skip_string(const char *s, size_t n, size_t i)
{
	for (i++; i < n; i++) {
		if (s[i] == '\\')
			i++;
		else if (s[i] == '"')
			return i + 1;
	}
	return n;
}

/*
 * The index just after the value starting at s[i] (no leading whitespace).
 * Only ever called on text json_parse accepted, so it need not validate;
 * it still never reads past n (it returns n on a text cut short).
 * Iterative: nesting depth costs no stack.
 */
static size_t skip_value(const char *s, size_t n, size_t i)
{
	if (i >= n)
		return n;
	if (s[i] == '"')
		return skip_string(s, n, i);
	if (s[i] != '{' && s[i] != '[') {
		while (i < n && s[i] != ',' && s[i] != ']' && s[i] != '}' && s[i] != ' ' && s[i] != '\t' &&
		       s[i] != '\n' && s[i] != '\r')
			i++;
		return i;
	}
	size_t depth = 0;
	while (i < n) {
		char ch = s[i];
		if (ch == '"') {
			i = skip_string(s, n, i);
			continue;
		}
		if (ch == '{' || ch == '[')
			depth++;
		else if ((ch == '}' || ch == ']') && --depth == 0)
			return i + 1;
		i++;
	}
	return n;
}

/*
 * In the validated object text s[0..n), the value of member number `member`
 * (input order, as json_parse keeps it) is an array: write where each of
 * its elements starts and how long it is (at most max).  The element
 * count, or -1 if the text is not as expected.
 */
static long array_spans(const char *s, size_t n, uint32_t member, uint32_t *off, uint32_t *len, uint32_t max)
{
	size_t i = skip_ws(s, n, 0);
	if (i >= n || s[i] != '{')
		return -1;
	i++;
	for (uint32_t m = 0;; m++) {
		i = skip_ws(s, n, i);
		if (i >= n || s[i] != '"')
			return -1;
		i = skip_ws(s, n, skip_string(s, n, i));
		if (i >= n || s[i] != ':')
			return -1;
		i = skip_ws(s, n, i + 1);
		if (m == member)
			break;
		i = skip_ws(s, n, skip_value(s, n, i));
		if (i >= n || s[i] != ',')
			return -1;
		i++;
	}
	if (i >= n || s[i] != '[')
		return -1;
	i = skip_ws(s, n, i + 1);
	uint32_t k = 0;
	if (i < n && s[i] == ']')
		return 0;
	for (;;) {
		if (k == max || i >= n)
			return -1;
		size_t e = skip_value(s, n, i);
		off[k] = (uint32_t)i;
		len[k] = (uint32_t)(e - i);
		k++;
		i = skip_ws(s, n, e);
		if (i < n && s[i] == ']')
			return k;
		if (i >= n || s[i] != ',')
			return -1;
		i = skip_ws(s, n, i + 1);
	}
}

/* ---- the merge ---------------------------------------------------------- */

/* One shard's page, parsed and checked.  Pointers are into doc's arena
 * (ids, cursors) or the caller's body (row spans). */
struct shard_view {
	struct json_doc *doc;
	uint32_t n;                              /* rows */
	uint32_t head;                           /* rows taken so far */
	int has_more;
	const char *next;                        /* has_more: the page's next_cursor */
	uint32_t next_len;
	const char *id[FANOUT_PAGE_MAX];
	const char *cur[FANOUT_PAGE_MAX];        /* _cursors[i] */
	uint32_t cur_len[FANOUT_PAGE_MAX];
	uint32_t off[FANOUT_PAGE_MAX], len[FANOUT_PAGE_MAX]; /* row i's bytes in the body */
};

/* Record an error (what, and the shard at fault or -1) in res; returns code. */
static int fail(struct fanout_result *res, int code, int shard, const char *what)
{
	res->err_shard = shard;
	if (shard >= 0)
		snprintf(res->detail, sizeof(res->detail), "shard %d: %s", shard, what);
	else
		snprintf(res->detail, sizeof(res->detail), "%s", what);
	return code;
}

/* A shard cursor's text: 1..FANOUT_SHARD_CURSOR_MAX characters of
 * canonical base64url. */
static int shard_cursor_ok(const struct json_value *v)
{
	uint8_t tmp[FANOUT_SHARD_RAW_MAX];
	return v && v->type == JSON_STRING && v->len >= 1 && v->len <= FANOUT_SHARD_CURSOR_MAX &&
	       b64url_decode(v->u.str, v->len, tmp, sizeof(tmp)) > 0;
}

/* The index of member key in object o, or -1. */
static long member_index(const struct json_value *o, const char *key)
{
	size_t kl = strlen(key);
	for (uint32_t i = 0; i < o->len; i++)
		if (o->u.members[i].key_len == kl && memcmp(o->u.members[i].key, key, kl) == 0)
			return i;
	return -1;
}

/* Parse and check shard sid's page (asked from position *from) into v. */
static int parse_page(const struct fanout_merge_args *a, int sid, const struct fanout_pos *from,
		      struct shard_view *v, struct fanout_result *res)
{
	const struct fanout_page *pg = &a->pages[sid];
	if (pg->body_len > a->max_page_bytes)
		return fail(res, FM_E_PAGE_TOO_LARGE, sid, "page body past the bound");
	struct json_limits lim = {.max_bytes = a->max_page_bytes};
	struct json_error je;
	v->doc = json_parse(pg->body_len ? pg->body : "", pg->body_len, &lim, &je);
	if (!v->doc)
		return fail(res, je.too_large ? FM_E_PAGE_TOO_LARGE : FM_E_PAGE_MALFORMED, sid, je.msg);
	const struct json_value *root = json_root(v->doc);
	if (root->type != JSON_OBJECT)
		return fail(res, FM_E_PAGE_MALFORMED, sid, "page is not an object");
	long di = member_index(root, "data");
	const struct json_value *data = di < 0 ? NULL : &root->u.members[di].value;
	const struct json_value *more = json_get(root, "has_more");
	const struct json_value *next = json_get(root, "next_cursor");
	const struct json_value *curs = json_get(root, "_cursors");
	if (!data || data->type != JSON_ARRAY)
		return fail(res, FM_E_PAGE_MALFORMED, sid, "no data array");
	if (!more || (more->type != JSON_TRUE && more->type != JSON_FALSE))
		return fail(res, FM_E_PAGE_MALFORMED, sid, "has_more is not a boolean");
	if (data->len > a->page_size)
		return fail(res, FM_E_TOO_MANY_ROWS, sid, "more rows than page_size");
	if (!curs || curs->type != JSON_ARRAY || curs->len != data->len)
		return fail(res, FM_E_CURSORS, sid, "_cursors missing or not as long as data");
	v->n = data->len;
	v->has_more = more->type == JSON_TRUE;
	if (v->has_more) {
		if (!shard_cursor_ok(next))
			return fail(res, FM_E_PAGE_MALFORMED, sid, "has_more without a valid next_cursor");
		v->next = next->u.str;
		v->next_len = next->len;
		if (v->n == 0 && from->state == FANOUT_AT && from->len == next->len &&
		    memcmp(from->text, next->u.str, next->len) == 0)
			return fail(res, FM_E_STALLED, sid, "no row and a next_cursor that does not move");
	} else if (!next || next->type != JSON_NULL) {
		return fail(res, FM_E_PAGE_MALFORMED, sid, "next_cursor without has_more");
	}
	for (uint32_t i = 0; i < v->n; i++) {
		const struct json_value *row = &data->u.items[i];
		const struct json_value *id = json_get(row, "id");
		if (row->type != JSON_OBJECT || !id || id->type != JSON_STRING || id->len == 0 ||
		    id->len >= FANOUT_ID_MAX || strlen(id->u.str) != id->len)
			return fail(res, FM_E_PAGE_MALFORMED, sid, "a row without a valid id");
		if (i && strcmp(v->id[i - 1], id->u.str) >= 0)
			return fail(res, FM_E_ORDER, sid, "ids not strictly increasing");
		v->id[i] = id->u.str;
		const struct json_value *c = &curs->u.items[i];
		if (!shard_cursor_ok(c))
			return fail(res, FM_E_PAGE_MALFORMED, sid, "a _cursors entry is not a cursor");
		v->cur[i] = c->u.str;
		v->cur_len[i] = c->len;
	}
	if (array_spans(pg->body, pg->body_len, (uint32_t)di, v->off, v->len, FANOUT_PAGE_MAX) != (long)v->n)
		return fail(res, FM_E_PAGE_MALFORMED, sid, "data rows could not be located");
	return FM_OK;
}

/* Set *p to the shard cursor text[0..len) (checked by shard_cursor_ok). */
static void set_at(struct fanout_pos *p, const char *text, uint32_t len)
{
	p->state = FANOUT_AT;
	p->len = (uint16_t)len;
	memcpy(p->text, text, len);
	p->text[len] = 0;
}

/* The caller's side of the contract: bounds, and pages that match the
 * positions they were asked from. */
static int check_args(const struct fanout_merge_args *a, struct buf *out, struct fanout_result *res)
{
	if (!a->key || !a->from || !out || a->n_shards > FANOUT_MAX_SHARDS || (a->n_shards && !a->pages) ||
	    a->page_size < 1 || a->page_size > FANOUT_PAGE_MAX || a->max_page_bytes == 0)
		return fail(res, FM_E_ARGS, -1, "arguments out of bounds");
	for (int i = 0; i < FANOUT_MAX_SHARDS; i++) {
		if (a->from->shard[i].state > FANOUT_EXHAUSTED)
			return fail(res, FM_E_ARGS, i, "a position in no known state");
		int live = a->from->shard[i].state != FANOUT_EXHAUSTED;
		if ((unsigned)i >= a->n_shards) {
			if (a->from->shard[i].state != FANOUT_START)
				return fail(res, FM_E_ARGS, i, "a position for a shard not in the map");
			continue;
		}
		if (a->pages[i].asked != live || (live && !a->pages[i].body && a->pages[i].body_len))
			return fail(res, FM_E_ARGS, i, "asked and exhausted disagree");
	}
	return FM_OK;
}

/* The k-way merge over the parsed views: the order rows are taken in,
 * as shard ids in pick[0..*taken).  FM_OK or FM_E_DUPLICATE. */
static int merge_views(const struct fanout_merge_args *a, struct shard_view *v, uint8_t *pick, uint32_t *taken,
		       struct fanout_result *res)
{
	uint32_t t = 0;
	while (t < a->page_size) {
		int best = -1, blocked = 0;
		for (uint32_t s = 0; s < a->n_shards; s++) {
			if (!a->pages[s].asked)
				continue;
			if (v[s].head == v[s].n) {
				blocked |= v[s].has_more; /* its unseen rows could sort first */
				continue;
			}
			if (best < 0) {
				best = (int)s;
				continue;
			}
			int c = strcmp(v[s].id[v[s].head], v[best].id[v[best].head]);
			if (c == 0)
				return fail(res, FM_E_DUPLICATE, (int)s, "an id another shard also returned");
			if (c < 0)
				best = (int)s;
		}
		if (blocked || best < 0)
			break;
		pick[t++] = (uint8_t)best;
		v[best].head++;
	}
	*taken = t;
	return FM_OK;
}

/* The merged body into out; 0 or -1 (out's bound). */
static int write_body(const struct fanout_merge_args *a, struct shard_view *v, const uint8_t *pick, uint32_t taken,
		      const struct fanout_result *res, struct buf *out)
{
	uint32_t at[FANOUT_MAX_SHARDS] = {0};
	struct jw w;
	jw_init(&w, out);
	jw_obj_begin(&w);
	jw_key(&w, "data");
	jw_arr_begin(&w);
	for (uint32_t t = 0; t < taken; t++) {
		uint8_t s = pick[t];
		uint32_t i = at[s]++;
		jw_raw(&w, a->pages[s].body + v[s].off[i], v[s].len[i]);
	}
	jw_arr_end(&w);
	if (res->has_more)
		jw_kstr(&w, "next_cursor", res->next_text);
	else
		jw_knull(&w, "next_cursor");
	jw_kbool(&w, "has_more", res->has_more);
	jw_obj_end(&w);
	return w.err || out->overflow ? -1 : 0;
}

int fanout_merge(const struct fanout_merge_args *a, struct buf *out, struct fanout_result *res)
{
	memset(res, 0, sizeof(*res));
	res->err_shard = -1;
	int rc = check_args(a, out, res);
	if (rc)
		return rc;
	res->next = *a->from;
	struct shard_view *v = a->n_shards ? calloc(a->n_shards, sizeof(*v)) : NULL;
	if (a->n_shards && !v)
		return fail(res, FM_E_OUTPUT, -1, "out of memory");
	uint8_t pick[FANOUT_PAGE_MAX];
	uint32_t taken = 0;
	size_t out_len = out->len;
	int out_overflow = out->overflow;
	for (uint32_t s = 0; s < a->n_shards && rc == FM_OK; s++)
		if (a->pages[s].asked)
			rc = parse_page(a, (int)s, &a->from->shard[s], &v[s], res);
	if (rc == FM_OK)
		rc = merge_views(a, v, pick, &taken, res);
	if (rc == FM_OK) {
		for (uint32_t s = 0; s < a->n_shards; s++) {
			struct fanout_pos *p = &res->next.shard[s];
			if (!a->pages[s].asked)
				continue;
			if (v[s].head == v[s].n && !v[s].has_more)
				p->state = FANOUT_EXHAUSTED;
			else if (v[s].head == v[s].n)
				set_at(p, v[s].next, v[s].next_len);
			else if (v[s].head)
				set_at(p, v[s].cur[v[s].head - 1], v[s].cur_len[v[s].head - 1]);
			if (p->state != FANOUT_EXHAUSTED)
				res->has_more = 1;
		}
		res->rows = taken;
		if (taken) {
			/* cursor_span for the audit: the first row taken is row 0 of
			 * its shard, the last one is the last taken from its shard */
			const struct shard_view *f = &v[pick[0]], *l = &v[pick[taken - 1]];
			snprintf(res->first_id, sizeof(res->first_id), "%s", f->id[0]);
			snprintf(res->last_id, sizeof(res->last_id), "%s", l->id[l->head - 1]);
		}
	}
	if (rc == FM_OK && res->has_more) {
		int n = fanout_cursor_encode(a->key, a->tag, a->tag_len, &res->next, res->next_text,
					     sizeof(res->next_text));
		if (n < 0)
			rc = fail(res, FM_E_OUTPUT, -1, "the next cursor could not be encoded");
	}
	if (rc == FM_OK && write_body(a, v, pick, taken, res, out))
		rc = fail(res, FM_E_OUTPUT, -1, "the merged body is past its bound");
	if (rc != FM_OK) {
		out->len = out_len;
		out->overflow = out_overflow;
	}
	for (uint32_t s = 0; s < a->n_shards; s++)
		json_doc_free(v[s].doc);
	free(v);
	return rc;
}
