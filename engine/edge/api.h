/*
 * api.h -- the HTTP API of a shard: route table, request context and the
 * helpers every handler uses (errors, bodies, pagination).
 *
 * A handler receives a struct api_ctx, reads the request through it, and
 * writes its JSON body through ctx->w straight into the response buffer.
 * Handlers never set the response LSN: api_handle() stamps every response
 * with the shard's last state-changing LSN, so a read that follows a write
 * on another connection can never overtake that write's durability.
 */
#ifndef WM_API_H
#define WM_API_H

#include <stdint.h>

#include "engine/storage/id.h"
#include "engine/edge/policy.h"
#include "engine/edge/route.h"
#include "engine/storage/shard.h"
#include "net/b64url.h"
#include "net/http.h"
#include "net/json.h"
#include "net/jsonw.h"
#include "net/problem.h"
#include "net/server.h"

#define API_MAX_PARAMS 4
#define API_PAGE_DEFAULT 50u
#define API_PAGE_MAX 200u
#define API_MAX_FIELD_ERRORS 32

struct api_param {
	const char *p;
	uint32_t len;
};

struct api_key;

/* Who is calling: filled by auth_request() before the handler runs.  The
 * strings are copies: a handler may replace the key's own row (revoking
 * the key it was called with), and the principal must outlive that. */
struct principal {
	int authenticated;
	int is_platform;                /* the platform entity (operators) */
	char key_id[ID_MAX_LEN];
	char entity_id[ID_MAX_LEN];     /* "platform" or a partner id */
	scope_set scopes;
	uint8_t kind;                   /* enum key_kind, or PRINCIPAL_CONSUMER */
	uint8_t roles, status;          /* the partner's, for the policy */
	uint32_t rate_rps, rate_burst;  /* the key's own rate (0 = configured default) */
	char channel_id[65];            /* publishable keys: the storefront channel, "" if none */
};

/* who.kind of a consumer token's holder (consumer_token.h): entity_id and
 * key_id are its order's id; only ROUTE_F_CONSUMER routes of that order. */
#define PRINCIPAL_CONSUMER 2

#define API_MAX_SPAN 344 /* a cursor's text (base64url of <= 255 bytes) */

struct api_ctx {
	struct shard *sh;
	const struct srv_request *rq;
	const struct http_request *http;
	struct srv_response *rs;
	const struct route *route;
	struct jw w;
	struct api_param params[API_MAX_PARAMS];
	unsigned n_params;
	struct json_doc *body;
	struct principal who;
	int internal;                   /* an /internal/ route (cluster mode, signed) */
	int cluster_signed;             /* cluster mode: the request carried a valid signature */
	int fanout;                     /* signed, with X-WM-Fanout: lists add "_cursors" (api_list_source) */
	const struct http_header *principal_hdr; /* signed X-WM-Principal: the router did the edge */
	int forwarded;                  /* who came from the router's principal (auth_forwarded) */
	uint32_t fwd_quota_left;        /* ... with the rows its record quota still allows */
	/* what a read returned, for the audit and the record quota */
	uint32_t rows_returned;
	int quota_refused;              /* the read was refused by the record quota */
	char span_from[API_MAX_SPAN];   /* cursor the read started after ("" = start) */
	char span_to[API_MAX_SPAN];     /* next_cursor it returned ("" = none) */
	/* what the response reveals (table.h's read set), taken before the
	 * audit's own lookups; 0 = not yet taken */
	uint64_t reveals_lsn;
	int reveals_taken;
	int probe;                      /* etag.c runs a GET only for its ETag: no quota */
	/* per-field validation errors collected by a handler */
	struct problem_field errs[API_MAX_FIELD_ERRORS];
	char err_field[API_MAX_FIELD_ERRORS][64];
	char err_msg[API_MAX_FIELD_ERRORS][128];
	unsigned n_errs;
};



/* POST, PUT, PATCH, DELETE. */
int api_is_write(enum http_method m);
/* The route returns rows the record quota and the read audit count: every
 * GET, and a write flagged ROUTE_F_READS. */
int api_route_reads(const struct route *r);
/* Match path[0..plen) against a route pattern, filling c's path
 * parameters; 1 on match (etag.c runs a route on a path it derives). */
int api_route_bind(const char *pattern, const char *path, uint32_t plen, struct api_ctx *c);

/* ---- responses --------------------------------------------------------- */
void api_error(struct api_ctx *c, int status, const char *code, const char *detail);
/* Add a per-field error (formatted message); ignored past the bound. */
void api_field_error(struct api_ctx *c, const char *field, const char *rule, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* 422 with every collected field error. */
void api_validation_failed(struct api_ctx *c);
/* A detail read is about to return one row: 0 if the record quota covers
 * it (counted), else the 429 is written and -1 returned.  Writes: 0. */
int api_read_row(struct api_ctx *c);
/* Respond with a stored document as the body (counts as a read row). */
void api_send_doc(struct api_ctx *c, int status, const char *doc, size_t len);
/* api_send_doc of row r's document (stored or rendered: table.h row_doc). */
void api_send_row(struct api_ctx *c, int status, const struct row *r);

/* ---- requests ---------------------------------------------------------- */
/* Parse the JSON body (must be an object).  On failure the error response
 * is written and NULL returned. */
const struct json_value *api_body(struct api_ctx *c);
/* Query parameter (decoded) into out; -1 absent, -2 malformed, else length. */
int api_query(struct api_ctx *c, const char *key, char *out, size_t out_size);
/* An enum filter ?key=value: *out = index into the NULL-terminated names,
 * or -1 when absent; 0, or -1 with a 400 invalid_filter written. */
int api_query_enum(struct api_ctx *c, const char *key, const char *const *names, int *out);
/* Copy path parameter i into out (NUL-terminated); returns length or -1. */
int api_param(struct api_ctx *c, unsigned i, char *out, size_t out_size);

/* ---- ownership -------------------------------------------------------- */
/* True if the caller may act on a row belonging to entity_id: its own, or
 * any when the caller is the platform.  Handlers answer 404 otherwise, the
 * same as for a row that does not exist (existence is never revealed). */
int api_owns(const struct api_ctx *c, const char *entity_id, size_t len);

/* ---- lists ------------------------------------------------------------- */
struct api_page {
	uint32_t size;
	int has_cursor;
	uint8_t cursor[IDX_MAX_KEY + 1];
	uint32_t cursor_len;
};

/* Read page_size and cursor; on bad values writes a 400 and returns -1. */
int api_page_parse(struct api_ctx *c, struct api_page *pg);

typedef int (*api_row_filter)(struct api_ctx *c, const struct row *r, void *arg);
typedef void (*api_row_emit)(struct api_ctx *c, const struct row *r);

/*
 * Write {"data":[...],"next_cursor":...,"has_more":...} from ordered index
 * `idx`, restricted to keys starting with prefix (may be empty), after the
 * page's cursor, rows passing `filter` (NULL = all), each written by `emit`
 * (NULL = its stored document).  Filtered rows never fill the page.
 * Returns the number of rows written.
 */
uint32_t api_list(struct api_ctx *c, const struct oidx *idx, const void *prefix,
		  uint32_t prefix_len, const struct api_page *pg, api_row_filter filter, void *arg,
		  api_row_emit emit);

/*
 * A row source for api_list_source(): next() yields candidate rows in
 * strictly increasing cursor-key order (1 with *r, *key, *key_len set; 0 at
 * the end), already positioned after the page's cursor.  `budget` bounds
 * the rows one page may examine (0 = none): when it is reached before the
 * page is full the page ends early with has_more and a cursor after the
 * last row examined, so no page costs more than `budget` steps however
 * few of the candidates pass the filter.  `examined` reports the work.
 */
struct api_source {
	int (*next)(void *self, const struct row **r, const void **key, uint32_t *key_len);
	void *self;
	uint32_t budget;
	uint32_t examined;   /* out: rows the page looked at */
};

/* api_list() over any source: same body, quota, audit span and filter
 * semantics (hidden rows never fill the page or count toward the quota). */
uint32_t api_list_source(struct api_ctx *c, struct api_source *src, const struct api_page *pg,
			 api_row_filter filter, void *arg, api_row_emit emit);

/* The page a list answers when nothing can match (another entity's rows,
 * an impossible filter): the same bytes as an empty index walk. */
void api_list_empty(struct api_ctx *c);


#endif
