/*
 * idem.c -- Idempotency-Key (see idem.h; DESIGN.md section 7; spec 1.8, 7).
 *
 * A client that did not see the answer to a write (time-out, dropped
 * connection, crash of either side) retries it.  With the same
 * Idempotency-Key the retry must not write twice: it gets the first
 * answer back, byte for byte.  What we do, and why:
 *
 *  - The record is keyed by (caller's entity, key): keys are per client
 *    (draft-ietf-httpapi-idempotency-key-header), so two partners may use
 *    the same key string without seeing each other's answers.  Operators
 *    share the "platform" entity.
 *
 *  - The record holds an XXH3-128 fingerprint of method, path, query and
 *    body.  The same key with another request is a client bug, answered
 *    422 idempotency_key_reused rather than silently replaying an answer
 *    to a different question.
 *
 *  - The record is written in the SAME transaction as the write it
 *    answers: idem_begin() calls txn_hold(), the handler commits as usual
 *    (memory changes at once, LSN assigned), idem_end() appends the record
 *    and txn_release() logs the whole image as one WAL transaction.  So the
 *    record can never be lost while the write survives (a retry after a
 *    crash would write twice), nor survive without the write.  A handler
 *    that commits several times (cancel and its compensation, fulfil's
 *    hold then order step) works the same way: its commits join one held
 *    image (shard.h) and the record joins them, so the record is on disk
 *    exactly when every write of the request is.
 *
 *  - Until that transaction is durable, its first response has not left
 *    (the server holds it), so the client cannot know the outcome.  A
 *    duplicate arriving in that window gets 409 idempotency_in_flight
 *    (Stripe and the IETF draft do the same) instead of a replay that
 *    would claim a result the log could still lose.  The test is simply
 *    "record LSN > wal_durable_lsn()".
 *
 *  - Only committed writes are remembered.  A request that fails
 *    validation, is not found, conflicts, ... changed nothing, so its retry
 *    (typically with a corrected body) runs afresh; remembering the 422
 *    would force the client to invent a new key for the corrected request.
 *
 *  - The response body is kept as raw JSON inside the record document, as
 *    the LAST member ("body"), preceded by "body_len".  decode() then knows
 *    its exact bytes inside the row (doc_len - 1 - body_len), so a replay
 *    is a memcpy of what the first response sent, with no re-serialisation
 *    that could change a byte.  Bounds: a body over IDEM_MAX_BODY (256 KiB;
 *    no write route answers anything close), one that would push the
 *    transaction over TXN_MAX_BYTES, or one the stored document could not
 *    hold within the JSON parser's default limits is not stored: the
 *    record keeps the status, and a replay answers that status with a
 *    small problem body saying so.  A response that carries a secret shown
 *    only once (POST /api/keys returns the plaintext key) is never stored
 *    either (key.c: only a digest of a key is ever kept); its replay says
 *    the key was minted and must be found in the key list.
 *
 *  - Index: a hash index from the key string to the record, chaining the
 *    records of other entities that used the same key string through
 *    `next`.  The obvious composite key entity '\0' key does not fit the
 *    index bound (IDX_MAX_KEY = 255 < 24 + 1 + 255), and a digest of it
 *    would trade exactness for a collision argument.  A chain holds one
 *    record per entity that used that exact key within the TTL: in
 *    practice one (keys are client-generated UUIDs).
 *
 *  - Records are kept cfg.idempotency_ttl_s (default 24 h, Stripe's
 *    figure), measured from created_at, and survive restarts like any row
 *    (WAL and snapshots).  idem_prune() deletes expired ones from the tick,
 *    oldest first: ids are time-ordered, so the table's id order is
 *    creation order and the walk stops at the first record still young.
 *    An expired record not yet pruned still replays: "kept at least".
 */
#include "engine/edge/idem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "engine/base/log.h"
#include "engine/storage/record.h"
#include "net/hex.h"
#include "net/problem.h"

#define IDEM_HEADER "Idempotency-Key"
#define FP_HEX_LEN 32

static const char *const body_state_names[] = {"stored", "too_large", "withheld", "unavailable", NULL};

/* Write routes whose response carries a secret that must never be stored. */
static const struct {
	enum http_method method;
	const char *pattern;
} withheld_routes[] = {
	{HTTP_M_POST, "/api/keys"},
};

/* ---- the key and the fingerprint ------------------------------------------ */

int idem_key_valid(const char *key, size_t len)
{
	if (len == 0 || len > IDEM_MAX_KEY)
		return 0;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)key[i] < 0x21 || (unsigned char)key[i] > 0x7e)
			return 0;
	return 1;
}

/* The Idempotency-Key header, or NULL; *count = how many were sent. */
static const struct http_header *key_header(const struct http_request *h, unsigned *count)
{
	const struct http_header *found = NULL;
	size_t n = strlen(IDEM_HEADER);
	*count = 0;
	for (uint32_t i = 0; i < h->n_headers; i++) {
		const struct http_header *x = &h->headers[i];
		if (x->name_len == n && strncasecmp(x->name, IDEM_HEADER, n) == 0) {
			if (!found)
				found = x;
			++*count;
		}
	}
	return found;
}

static void fp_part(XXH3_state_t *st, const char *p, size_t n)
{
	uint8_t len[8];
	wr_u64(len, (uint64_t)n);
	XXH3_128bits_update(st, len, sizeof(len));
	if (n)
		XXH3_128bits_update(st, p, n);
}

/* XXH3-128 over method, path, query and body, each length-prefixed (so
 * no two different requests frame to the same bytes). */
void idem_fingerprint(const struct http_request *h, uint8_t out[16])
{
	XXH3_state_t st;
	XXH3_INITSTATE(&st);
	XXH3_128bits_reset(&st);
	fp_part(&st, h->method_str, h->method_len);
	fp_part(&st, h->path, h->path_len);
	fp_part(&st, h->query, h->query_len);
	fp_part(&st, h->body, h->body_len);
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&st));
	memcpy(out, c.digest, 16);
}

static void hex16(const uint8_t in[16], char out[FP_HEX_LEN + 1]) { hex_encode(in, 16, out); }

static int unhex16(const char *in, size_t n, uint8_t out[16])
{
	return n == FP_HEX_LEN ? hex_decode(in, 16, out) : -1;
}

/* ---- table -------------------------------------------------------------- */

struct idem_ext {
	struct hidx by_key; /* key string -> newest record with it (chain via next) */
};

static struct idem_ext *ext(const struct table *t) { return t->ext; }

static int idem_init(struct table *t)
{
	struct idem_ext *e = calloc(1, sizeof(*e));
	if (!e)
		return -1;
	hidx_init(&e->by_key);
	t->ext = e;
	return 0;
}

static void idem_fini(struct table *t)
{
	struct idem_ext *e = ext(t);
	hidx_free(&e->by_key);
	free(e);
	t->ext = NULL;
}

/* Push the record at the head of its key's chain (a second record for the
 * same entity and key -- which the engine never writes -- would shadow the
 * first until it is deleted). */
static int idem_index_add(struct table *t, struct row *r)
{
	struct idem_record *x = (struct idem_record *)r;
	struct idem_record *head = hidx_get(&ext(t)->by_key, x->key, x->key_len);
	x->next = head;
	return hidx_set(&ext(t)->by_key, x->key, x->key_len, x);
}

/* Unlink the record from its chain; the index entry moves to the next
 * record (its own copy of the key bytes) or goes away. */
static void idem_index_del(struct table *t, struct row *r)
{
	struct idem_record *x = (struct idem_record *)r;
	struct hidx *h = &ext(t)->by_key;
	struct idem_record *head = hidx_get(h, x->key, x->key_len);
	if (head == x) {
		if (x->next) {
			if (hidx_set(h, x->next->key, x->next->key_len, x->next)) {
				log_error("msg=\"idempotency index update failed\"");
				abort(); /* replacing an existing entry never allocates */
			}
		} else {
			hidx_del(h, x->key, x->key_len);
		}
	} else {
		for (struct idem_record *p = head; p; p = p->next) {
			if (p->next == x) {
				p->next = x->next;
				break;
			}
		}
	}
	x->next = NULL;
}

const struct idem_record *idem_find(const struct table *t, const char *entity_id, const char *key,
				    size_t key_len)
{
	if (key_len == 0 || key_len > IDEM_MAX_KEY)
		return NULL;
	const struct idem_record *x = hidx_get(&ext(t)->by_key, key, (uint32_t)key_len);
	for (; x; x = x->next)
		if (strcmp(x->entity_id, entity_id) == 0)
			return x;
	return NULL;
}

/* A string member copied into out (< size bytes, no NUL inside).  0 or -1. */
static int doc_str(const struct json_value *doc, const char *name, char *out, size_t size)
{
	const struct json_value *v = json_get(doc, name);
	if (!v || v->type != JSON_STRING || v->len >= size || strlen(v->u.str) != v->len)
		return -1;
	memcpy(out, v->u.str, (size_t)v->len + 1);
	return 0;
}

static int doc_int(const struct json_value *doc, const char *name, int64_t min, int64_t max, int64_t *out)
{
	const struct json_value *v = json_get(doc, name);
	if (!v || json_to_int64(v, out) || *out < min || *out > max)
		return -1;
	return 0;
}

/* The first byte a value of this type is written with. */
static int opens_like(const struct json_value *v, char ch)
{
	switch (v->type) {
	case JSON_OBJECT: return ch == '{';
	case JSON_ARRAY: return ch == '[';
	case JSON_STRING: return ch == '"';
	case JSON_NULL: return ch == 'n';
	case JSON_TRUE: return ch == 't';
	case JSON_FALSE: return ch == 'f';
	case JSON_NUMBER: return ch == '-' || (ch >= '0' && ch <= '9');
	}
	return 0;
}

/*
 * Locate the raw body: the document is {..., "body_len": N, "body": <N
 * bytes>} with "body" the last member and no whitespace (idem_write_doc
 * writes it so, and the WAL and snapshots keep documents byte for byte).
 */
static int locate_body(struct idem_record *x, const struct json_value *doc, uint32_t body_len)
{
	static const char tag[] = "\"body\":";
	const size_t tl = sizeof(tag) - 1;
	const struct json_value *b = json_get(doc, "body");
	if (body_len == 0)
		return b ? -1 : 0;
	if (!b || doc->len == 0 || strcmp(doc->u.members[doc->len - 1].key, "body") != 0)
		return -1;
	size_t dl = x->row.doc_len;
	if (dl < (size_t)body_len + tl + 2 || x->row.doc[dl - 1] != '}')
		return -1;
	size_t off = dl - 1 - body_len;
	if (memcmp(x->row.doc + off - tl, tag, tl) != 0 || !opens_like(b, x->row.doc[off]))
		return -1;
	x->body_off = (uint32_t)off;
	x->body_len = body_len;
	return 0;
}

static int idem_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct idem_record *x = (struct idem_record *)r;
	char fp[FP_HEX_LEN + 1], ct[32], ts[40], state[16];
	int64_t status, body_len;
	long long ms = 0;
	if (doc->type != JSON_OBJECT || doc_str(doc, "entity_id", x->entity_id, sizeof(x->entity_id)) ||
	    !x->entity_id[0] || doc_str(doc, "key", x->key, sizeof(x->key)) ||
	    !idem_key_valid(x->key, strlen(x->key)) || doc_str(doc, "fingerprint", fp, sizeof(fp)) ||
	    unhex16(fp, strlen(fp), x->fingerprint) || doc_int(doc, "status", 100, 599, &status) ||
	    doc_str(doc, "content_type", ct, sizeof(ct)) || doc_str(doc, "created_at", ts, sizeof(ts)) ||
	    parse_rfc3339_ms(ts, strlen(ts), &ms) || ms < 0 ||
	    doc_str(doc, "body_state", state, sizeof(state)) ||
	    doc_int(doc, "body_len", 0, IDEM_MAX_BODY, &body_len))
		return -1;
	x->key_len = (uint16_t)strlen(x->key);
	x->status = (uint16_t)status;
	x->created_ms = (uint64_t)ms;
	if (strcmp(ct, PROBLEM_CONTENT_TYPE) == 0)
		x->problem = 1;
	else if (strcmp(ct, "application/json") == 0)
		x->problem = 0;
	else
		return -1;
	int s = -1;
	for (int i = 0; body_state_names[i]; i++)
		if (strcmp(state, body_state_names[i]) == 0)
			s = i;
	if (s < 0 || (s != IDEM_BODY_STORED && body_len != 0))
		return -1;
	x->body_state = (uint8_t)s;
	return locate_body(x, doc, (uint32_t)body_len);
}

const struct table_ops idem_table_ops = {
	.rec_table = REC_T_IDEMPOTENCY,
	.name = "idempotency",
	.row_size = sizeof(struct idem_record),
	.decode = idem_decode,
	.index_add = idem_index_add,
	.index_del = idem_index_del,
	.init = idem_init,
	.fini = idem_fini,
};

/* ---- answering from a record -------------------------------------------- */

static void replay(struct api_ctx *c, const struct idem_record *x)
{
	struct srv_response *rs = c->rs;
	buf_reset(&rs->body);
	jw_init(&c->w, &rs->body);
	buf_puts(&rs->headers, "Idempotent-Replayed: true\r\n");
	rs->status = x->status;
	if (x->body_state == IDEM_BODY_STORED) {
		rs->content_type = x->problem ? PROBLEM_CONTENT_TYPE : NULL;
		if (x->body_len && buf_append(&rs->body, x->row.doc + x->body_off, x->body_len))
			c->w.err = 1; /* api_handle answers 500 */
		return;
	}
	static const char *const why[] = {
		[IDEM_BODY_TOO_LARGE] = "the request was already processed; its response was too large to keep "
					"(over 256 KiB, or no room left in its transaction), so only its status is "
					"replayed",
		[IDEM_BODY_WITHHELD] = "the request was already processed; its response carried a secret that is "
				       "shown only once and never stored: find the key with GET /api/keys",
		[IDEM_BODY_UNAVAILABLE] = "the request was already processed; its response could not be kept, so only "
					  "its status is replayed",
	};
	rs->content_type = PROBLEM_CONTENT_TYPE;
	problem_begin(&c->w, x->status, "idempotent_response_not_stored", http_reason(x->status),
		      why[x->body_state]);
	problem_end(&c->w);
}

int idem_request_key(struct api_ctx *c, const char **key, size_t *len)
{
	unsigned count;
	const struct http_header *h = key_header(c->http, &count);
	if (!h)
		return 0;
	if (count > 1 || !idem_key_valid(h->value, h->value_len)) {
		api_error(c, 400, "invalid_idempotency_key",
			  count > 1 ? "send one Idempotency-Key header, not several"
				    : "Idempotency-Key must be 1 to 255 visible ASCII characters (0x21-0x7E)");
		return -1;
	}
	*key = h->value;
	*len = h->value_len;
	return 1;
}

int idem_begin(struct api_ctx *c)
{
	const char *hv;
	size_t hl;
	int got = idem_request_key(c, &hv, &hl);
	if (got <= 0)
		return -got;
	struct shard *sh = c->sh;
	const char *ent = c->who.entity_id;
	if (!ent || !ent[0] || strlen(ent) >= ID_MAX_LEN)
		return 0; /* cannot happen for an authenticated caller: run without */
	const struct idem_record *x = idem_find(&sh->tables[REC_T_IDEMPOTENCY], ent, hv, hl);
	if (!x) {
		txn_hold(sh);
		return 0;
	}
	uint8_t fp[16];
	idem_fingerprint(c->http, fp);
	if (memcmp(fp, x->fingerprint, sizeof(fp)) != 0) {
		api_error(c, 422, "idempotency_key_reused",
			  "this Idempotency-Key was already used for a different request (method, path or "
			  "body); use a new key for a new request");
		return 1;
	}
	uint64_t durable = sh->wal ? wal_durable_lsn(sh->wal) : sh->lsn;
	if (x->row.lsn > durable) {
		api_error(c, 409, "idempotency_in_flight",
			  "the first request with this Idempotency-Key is still being processed; retry shortly");
		buf_puts(&c->rs->headers, "Retry-After: 1\r\n");
		return 1;
	}
	replay(c, x);
	return 1;
}

/* ---- storing a response -------------------------------------------------- */

static int route_withheld(const struct route *r)
{
	for (size_t i = 0; r && i < sizeof(withheld_routes) / sizeof(withheld_routes[0]); i++)
		if (r->method == withheld_routes[i].method && strcmp(r->pattern, withheld_routes[i].pattern) == 0)
			return 1;
	return 0;
}

/* What the record can keep of the response about to leave. */
static enum idem_body body_state_of(const struct api_ctx *c, int *status)
{
	const struct srv_response *rs = c->rs;
	*status = rs->status;
	if (c->w.err) {
		*status = 500; /* api_handle turns the response into a 500 */
		return IDEM_BODY_UNAVAILABLE;
	}
	if (rs->status < 100 || rs->status > 599) {
		*status = 500; /* never sent by a handler; keep the record decodable */
		return IDEM_BODY_UNAVAILABLE;
	}
	if (route_withheld(c->route))
		return IDEM_BODY_WITHHELD;
	if (rs->content_type && strcmp(rs->content_type, PROBLEM_CONTENT_TYPE) != 0 &&
	    strcmp(rs->content_type, "application/json") != 0)
		return IDEM_BODY_UNAVAILABLE;
	if (rs->body.len > IDEM_MAX_BODY)
		return IDEM_BODY_TOO_LARGE;
	return IDEM_BODY_STORED;
}

/* The record document; "body" is the last member (see locate_body). */
static void idem_write_doc(struct buf *out, const struct api_ctx *c, const char *id, const char *key,
			   const uint8_t fp[16], int status, enum idem_body state, const char *created)
{
	const struct srv_response *rs = c->rs;
	char fph[FP_HEX_LEN + 1];
	hex16(fp, fph);
	int problem = rs->content_type && strcmp(rs->content_type, PROBLEM_CONTENT_TYPE) == 0;
	size_t body_len = state == IDEM_BODY_STORED ? rs->body.len : 0;
	struct jw w;
	buf_reset(out);
	jw_init(&w, out);
	jw_obj_begin(&w);
	jw_kstr(&w, "id", id);
	jw_kstr(&w, "entity_id", c->who.entity_id);
	jw_kstr(&w, "key", key);
	jw_kstr(&w, "fingerprint", fph);
	jw_kint(&w, "status", status);
	jw_kstr(&w, "content_type", problem || state != IDEM_BODY_STORED ? PROBLEM_CONTENT_TYPE : "application/json");
	jw_kstr(&w, "created_at", created);
	jw_kstr(&w, "body_state", body_state_names[state]);
	jw_kint(&w, "body_len", (int64_t)body_len);
	if (body_len) {
		jw_key(&w, "body");
		jw_raw(&w, rs->body.data, body_len);
	}
	jw_obj_end(&w);
	if (w.err)
		out->overflow = 1;
}

/* True if the document will be accepted by table_put (the parse row_make
 * does, with the same default limits: depth, string and member bounds) and
 * the transaction has room for it.  A failure there, after the write was
 * applied, would stop the process. */
static int doc_fits(const struct shard *sh, const struct buf *doc, size_t id_len)
{
	if (doc->overflow || sh->txn.len + REC_HEADER_SIZE + id_len + doc->len > TXN_MAX_BYTES)
		return 0;
	struct json_doc *jd = json_parse(doc->data, doc->len, NULL, NULL);
	json_doc_free(jd);
	return jd != NULL;
}

/* Append the record for this committed request to the held transaction. */
static void idem_store(struct api_ctx *c)
{
	struct shard *sh = c->sh;
	unsigned count;
	const struct http_header *h = key_header(c->http, &count);
	if (!h || count != 1 || !idem_key_valid(h->value, h->value_len))
		return; /* idem_begin held only for a valid key */
	char key[IDEM_MAX_KEY + 1], id[ID_MAX_LEN], created[40];
	memcpy(key, h->value, h->value_len);
	key[h->value_len] = 0;
	uint8_t fp[16];
	idem_fingerprint(c->http, fp);
	size_t il = id_new(&sh->ids, "idem", id);
	fmt_rfc3339_ms(created, wall_ms());
	int status;
	enum idem_body state = body_state_of(c, &status);
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	idem_write_doc(&doc, c, id, key, fp, status, state, created);
	if (!doc_fits(sh, &doc, il) && state == IDEM_BODY_STORED) {
		state = IDEM_BODY_TOO_LARGE;
		idem_write_doc(&doc, c, id, key, fp, status, state, created);
	}
	if (!doc_fits(sh, &doc, il) || txn_put(sh, REC_T_IDEMPOTENCY, id, il, doc.data, doc.len))
		log_warn("msg=\"idempotency record not stored: transaction full\" lsn=%llu entity_id=%s",
			 (unsigned long long)sh->held_lsn, c->who.entity_id);
	buf_free(&doc);
}

void idem_end(struct api_ctx *c)
{
	struct shard *sh = c->sh;
	if (!sh->txn_hold)
		return;
	unsigned commits = sh->held_commits;
	if (sh->nospace_in_request) {
		/* answered 507: a retry must run again, so nothing is stored */
		txn_release(sh);
		return;
	}
	if (sh->txn_open == 2) { /* the request's last commit: the record joins it */
		idem_store(c);
		txn_release(sh);
		return;
	}
	txn_release(sh);
	if (!commits)
		return; /* nothing written: a retry runs afresh */
	/* The last commit was refused after earlier ones had been logged: the
	 * record goes in a transaction of its own, after them. */
	txn_begin(sh);
	idem_store(c);
	if (!txn_commit(sh))
		log_warn("msg=\"idempotency record not stored\" entity_id=%s", c->who.entity_id);
}

/* ---- expiry ------------------------------------------------------------- */

void idem_prune(struct shard *sh)
{
	struct table *t = &sh->tables[REC_T_IDEMPOTENCY];
	if (table_count(t) == 0 || sh->txn_open || sh->txn_hold)
		return;
	uint64_t now = wall_ms(), ttl_ms = sh->cfg.idempotency_ttl_s * 1000u;
	struct oidx_iter it;
	unsigned n = 0;
	/* txn_del only encodes: the table (and so the iterator) is untouched
	 * until the commit. */
	for (int ok = oidx_seek_ge(&t->by_order, NULL, 0, &it); ok && n < IDEM_PRUNE_BATCH; ok = oidx_next(&it)) {
		const struct idem_record *x = oidx_iter_val(&it);
		if (x->created_ms + ttl_ms > now)
			break;
		if (n == 0)
			txn_begin(sh);
		if (txn_del(sh, REC_T_IDEMPOTENCY, x->row.id, x->row.id_len))
			break;
		n++;
	}
	if (n && !txn_commit_quiet(sh))
		log_warn("msg=\"idempotency records not pruned: commit failed\" records=%u", n);
}
