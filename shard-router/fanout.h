/*
 * fanout.h -- lists that span shards, as the router serves them
 * (DESIGN.md section 9, "Where each request goes"; issue 13 item 6):
 * a merged, tamper-evident cursor and the id-ordered k-way merge of one
 * page from every shard.  The why is at the top of fanout.c.
 *
 * The router's side of one merged page:
 *
 *   1. fanout_cursor_decode() the caller's ?cursor= (none: fanout_cursor_init),
 *      answering 400 with fanout_cursor_detail() on an error;
 *   2. for each shard 0..n-1 of the map: EXHAUSTED -> not asked; START ->
 *      asked without a cursor; AT -> asked with ?cursor=<pos.text>; all with
 *      the same page_size and the header X-WM-Fanout: 1, to which a shard
 *      answers its usual {"data":[...],"next_cursor":...,"has_more":...}
 *      plus "_cursors":["<b64url>",...], the shard cursor resuming right
 *      after each row of data (same length as data);
 *   3. fanout_merge() the pages into the merged body (502 on an error: a
 *      shard answered something a shard must not).
 *
 * Merged cursor wire format (all of it base64url without padding):
 *
 *     payload = 0x01                       format version
 *               map version                u64 little-endian
 *               list tag                   first 8 bytes of SHA-256(tag)
 *               n                          u8, entries that follow (<= 64)
 *               n x { shard id u8 (< 64, strictly increasing),
 *                     state u8 (1 = AT, 2 = EXHAUSTED),
 *                     AT only: len u16 LE (1..FANOUT_SHARD_RAW_MAX), the
 *                              shard cursor's bytes (its base64url decoded) }
 *     cursor  = b64url(payload || HMAC-SHA256(secret, "wm-fanout-cursor-v1\0"
 *                                             || payload)[0..16))
 *
 * A shard with no entry starts from the beginning of its list.
 */
#ifndef WM_FANOUT_H
#define WM_FANOUT_H

#include <stddef.h>
#include <stdint.h>

#include "net/buf.h"
#include "engine/cluster/cluster_auth.h"

/* ---- bounds (every one tested at and past its edge) -------------------- */
#define FANOUT_MAX_SHARDS 64         /* shard ids 0..63, as SMAP_MAX_SHARDS */
#define FANOUT_PAGE_MAX 200u         /* page_size, as API_PAGE_MAX */
/* A shard cursor's text: at most API_MAX_SPAN - 1 characters (api.h's
 * span buffers hold it with its NUL), i.e. at most 257 raw bytes. */
#define FANOUT_SHARD_CURSOR_MAX 343
#define FANOUT_SHARD_RAW_MAX 257
/* The merged cursor's text.  It travels in the request line (8192 bytes by
 * default, net/http.h), so it stays well inside it: 64 shards at 66-byte
 * shard keys fit (ids and index keys are under 60 bytes). */
#define FANOUT_CURSOR_MAX 6000
#define FANOUT_MAC_LEN 16            /* HMAC-SHA256 truncated */
#define FANOUT_TAG_LEN 8             /* bytes of SHA-256(list tag) carried */
#define FANOUT_ID_MAX 80             /* a row id, or a sub-row id "<id>.<id>" (a webhook delivery), NUL included: 2 x ID_MAX_LEN */

enum fanout_pos_state {
	FANOUT_START = 0,       /* not begun: ask without a cursor */
	FANOUT_AT = 1,          /* ask with ?cursor=text */
	FANOUT_EXHAUSTED = 2,   /* nothing more on this shard: do not ask */
};

struct fanout_pos {
	uint8_t state;                              /* enum fanout_pos_state */
	uint16_t len;                               /* AT: strlen(text) */
	char text[FANOUT_SHARD_CURSOR_MAX + 1];     /* AT: the shard's own cursor, NUL-terminated */
};

/* A merged position: where each shard of the map is in one list. */
struct fanout_cursor {
	uint64_t map_version;
	struct fanout_pos shard[FANOUT_MAX_SHARDS];
};

enum fanout_cursor_err {
	FC_OK = 0,
	FC_E_MALFORMED = -1,   /* not base64url, too short, or not the format above */
	FC_E_TOO_LARGE = -2,   /* past FANOUT_CURSOR_MAX, or an entry past its bound */
	FC_E_FORGED = -3,      /* the MAC does not match: forged or edited */
	FC_E_OTHER_LIST = -4,  /* a genuine cursor of another list (route, filters) */
	FC_E_MAP_CHANGED = -5, /* a genuine cursor from another shard-map version */
	FC_E_INTERNAL = -6,    /* the MAC could not be computed */
};

/* Every shard at START, for map version v. */
void fanout_cursor_init(struct fanout_cursor *c, uint64_t map_version);

/*
 * Encode c for the list named by tag[0..tag_len) (any bytes: the router
 * builds it from the route pattern, the query filters that define the list
 * and the caller's entity, so a cursor cannot be carried to another list
 * or another partner) into out (out_size >= FANOUT_CURSOR_MAX + 1),
 * NUL-terminated.  Returns the text length, or a fanout_cursor_err:
 * FC_E_MALFORMED for a state other than the three, an AT position whose
 * text is empty or not canonical base64url; FC_E_TOO_LARGE for a shard
 * text past FANOUT_SHARD_CURSOR_MAX or a result past FANOUT_CURSOR_MAX
 * (or out_size).
 */
int fanout_cursor_encode(const struct cluster_key *k, const void *tag, size_t tag_len, const struct fanout_cursor *c,
			 char *out, size_t out_size);

/*
 * Decode text[0..len) (untrusted: the caller's query string) for the list
 * tag at map version map_version into *c.  FC_OK, or, checked in this order
 * so no answer says anything about a forged cursor beyond "forged":
 * FC_E_TOO_LARGE (len past FANOUT_CURSOR_MAX), FC_E_MALFORMED (alphabet,
 * length), FC_E_FORGED (constant-time MAC compare), then on a genuine
 * cursor FC_E_MALFORMED (format), FC_E_OTHER_LIST, FC_E_MAP_CHANGED,
 * FC_E_TOO_LARGE (an entry past its bound).  *c is unspecified on error.
 *
 * A cursor from another map version is refused rather than translated:
 * the positions are per shard id, and after a change of the map a shard id
 * may own other countries (other rows), so an old position could skip or
 * repeat rows.  The router answers 400 "cursor no longer valid after a
 * shard map change" and the client starts the list over.
 */
int fanout_cursor_decode(const struct cluster_key *k, const char *text, size_t len, const void *tag, size_t tag_len,
			 uint64_t map_version, struct fanout_cursor *c);

/* The 400 detail for a decode error (a static string). */
const char *fanout_cursor_detail(int err);

/*
 * The cursor text for an arbitrary payload (the bytes before the MAC):
 * b64url(payload || MAC) into out, NUL-terminated; the length, or
 * FC_E_TOO_LARGE / FC_E_INTERNAL.  For tests and the fuzz target, which
 * need genuine cursors whose payload breaks the format.
 */
int fanout_cursor_seal(const struct cluster_key *k, const void *payload, size_t len, char *out, size_t out_size);

/* ---- the merge ---------------------------------------------------------- */

/* One shard's answer.  body must outlive the fanout_merge call. */
struct fanout_page {
	int asked;              /* 0: the shard was EXHAUSTED and not asked */
	const char *body;       /* asked: the response body, body_len bytes */
	size_t body_len;
};

struct fanout_merge_args {
	const struct cluster_key *key;
	const void *tag;              /* the list's tag (see fanout_cursor_encode) */
	size_t tag_len;
	const struct fanout_cursor *from;  /* the positions the pages were asked from */
	uint32_t n_shards;            /* shards of the map, 0..FANOUT_MAX_SHARDS */
	const struct fanout_page *pages;   /* n_shards entries, indexed by shard id */
	uint32_t page_size;           /* 1..FANOUT_PAGE_MAX, the one every shard was asked for */
	size_t max_page_bytes;        /* bound on each shard's body (and its parse) */
};

enum fanout_merge_err {
	FM_OK = 0,
	FM_E_ARGS = -1,           /* a caller's mistake: bounds, pages vs positions (500) */
	FM_E_PAGE_TOO_LARGE = -2, /* a shard body past max_page_bytes (502 from here on) */
	FM_E_PAGE_MALFORMED = -3, /* not the list shape: JSON, data, ids, _cursors text, next_cursor */
	FM_E_CURSORS = -4,        /* _cursors missing or not as long as data */
	FM_E_TOO_MANY_ROWS = -5,  /* a shard returned more rows than page_size */
	FM_E_ORDER = -6,          /* one shard's ids not strictly increasing */
	FM_E_DUPLICATE = -7,      /* the same id on two shards */
	FM_E_STALLED = -8,        /* has_more, no row, and a next_cursor that does not move */
	FM_E_OUTPUT = -9,         /* the body or the next cursor could not be written */
};

struct fanout_result {
	uint32_t rows;                 /* rows in the merged page (the record quota's count) */
	int has_more;
	struct fanout_cursor next;     /* positions after this page */
	char next_text[FANOUT_CURSOR_MAX + 1]; /* the encoded next cursor; "" when !has_more */
	/* cursor_span for the audit: the first and last id returned ("" if none) */
	char first_id[FANOUT_ID_MAX];
	char last_id[FANOUT_ID_MAX];
	int err_shard;                 /* the shard whose page was refused, or -1 */
	char detail[160];              /* what was wrong, for the log (never for the partner) */
};

/*
 * Merge the shards' pages into out as
 *     {"data":[row,...],"next_cursor":"<merged>"|null,"has_more":bool}
 * with each row copied byte for byte as its shard serialised it: the
 * page_size smallest ids among the pages (strcmp order), never past the end
 * of a page whose shard has more (its unseen rows could sort earlier).
 * Each shard's new position is after the last row taken from it, or its
 * page's next_cursor when every row it sent was taken and it has more, or
 * EXHAUSTED when every row it sent was taken and it has no more, or the
 * old position when none was taken.  has_more: a shard is not EXHAUSTED.
 * Returns FM_OK, or a fanout_merge_err with res->detail and
 * res->err_shard set and out left as it was.
 */
int fanout_merge(const struct fanout_merge_args *a, struct buf *out, struct fanout_result *res);

#endif
