/*
 * repl_pub.c -- the publisher side of replication (repl.h, DESIGN.md 9).
 *
 * Why a buffer in memory and not a reader of the WAL files: the WAL thread
 * owns its segments (it writes, rotates and recycles them), and a second
 * reader on the loop thread would have to follow rotations and torn tails
 * and decompress frames only to throw most records away.  The engine
 * already sees every transaction image as it is logged (shard.h
 * `logged`), and recovery replays every WAL transaction above the newest
 * snapshot through the same hook at start-up, so the buffer holds
 * exactly "everything published since the snapshot the shard started
 * from", bounded by REPL_BUFFER_BYTES: a subscriber whose position is
 * older than that (`base_lsn`) -- the WAL pruned past it, or the buffer
 * overflowed while it was away -- gets a 410 and resyncs.  Only what is
 * durable is ever served (the response reads wal_durable_lsn first), so a
 * publisher that crashes can never have shipped a transaction it loses.
 *
 * Filtering happens once, when a transaction is logged: only records of
 * the published tables are kept (repl_published), and a transaction that
 * carries a replication position row is skipped whole (it was applied
 * here as a subscriber; shipping it again would loop stale copies).
 *
 * The resync ("snapshot + tail"): GET /internal/replication/snapshot walks
 * the published tables in memory in (table, id) order, a bounded page per
 * request, from a cursor the subscriber derives from the last record it
 * got.  The first page names L0 = the publisher's state LSN; the
 * subscriber then streams the tail from L0.  Pages taken later may show
 * rows newer than L0: the tail re-applies those rows' versions in order,
 * so the end state is the publisher's.  That holds because records are
 * whole after-images and the published tables never delete rows (no
 * txn_del on them today; a delete that happened while a subscriber was
 * away and resyncing would leave the row behind -- noted in repl.h's
 * callers' report).  A page's response waits (the server's durability
 * hold, api.c) until everything it reveals is durable.  Why not the
 * snapshot FILE: it is zstd-framed per file, holds every table (holds,
 * orders, audit) that must not leave the shard, and may not exist at all
 * when the buffer overflowed without a snapshot; the walk is filtered by
 * construction and needs no fork.  Rows of stock locations and inventory
 * levels are walked only when this shard owns them (the country in the
 * id, shard map), never the copies it holds of other shards' stock.
 */
#include "engine/replication/repl.h"
#include "engine/replication/repl_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "engine/base/log.h"
#include "engine/edge/api.h"
#include "engine/storage/record.h"
#include "engine/storage/shard.h"
#include "engine/cluster/shard_map.h"
#include "net/problem.h"

/* ---- the buffer of published transactions --------------------------------- */

struct ring_txn {
	uint64_t lsn;
	uint32_t len;
	uint8_t data[];
};

struct repl_ring {
	struct ring_txn **v;  /* circular: v[(head + i) % cap], i < n */
	size_t cap, head, n;
	size_t bytes, max_bytes;
	uint64_t base_lsn;    /* every published transaction above it is held */
	uint64_t last_lsn;    /* newest LSN seen (published or not) */
	int seen;
};

struct repl_ring *repl_ring_new(size_t max_bytes)
{
	struct repl_ring *r = calloc(1, sizeof(*r));
	if (r)
		r->max_bytes = max_bytes;
	return r;
}

void repl_ring_free(struct repl_ring *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		free(r->v[(r->head + i) % r->cap]);
	free(r->v);
	free(r);
}

static struct ring_txn *ring_at(const struct repl_ring *r, size_t i) { return r->v[(r->head + i) % r->cap]; }

static void ring_pop(struct repl_ring *r)
{
	struct ring_txn *t = r->v[r->head];
	r->base_lsn = t->lsn;
	r->bytes -= sizeof(*t) + t->len;
	free(t);
	r->head = (r->head + 1) % r->cap;
	r->n--;
}

void repl_ring_start(struct repl_ring *r, uint64_t lsn)
{
	if (!r->seen) {
		r->seen = 1;
		r->base_lsn = lsn;
		r->last_lsn = lsn;
	}
}

int repl_ring_push(struct repl_ring *r, uint64_t lsn, const void *data, size_t len)
{
	repl_ring_start(r, lsn - 1);
	if (lsn <= r->last_lsn)
		return 0; /* seen already (cannot happen: LSNs are logged in order) */
	r->last_lsn = lsn;
	if (len == 0)
		return 0;
	if (r->n == r->cap) {
		size_t nc = r->cap ? r->cap * 2 : 64;
		struct ring_txn **nv = malloc(nc * sizeof(*nv));
		if (!nv)
			return -1;
		for (size_t i = 0; i < r->n; i++)
			nv[i] = ring_at(r, i);
		free(r->v);
		r->v = nv;
		r->cap = nc;
		r->head = 0;
	}
	struct ring_txn *t = malloc(sizeof(*t) + len);
	if (!t)
		return -1;
	t->lsn = lsn;
	t->len = (uint32_t)len;
	memcpy(t->data, data, len);
	r->v[(r->head + r->n) % r->cap] = t;
	r->n++;
	r->bytes += sizeof(*t) + len;
	while (r->bytes > r->max_bytes && r->n)
		ring_pop(r);
	return 0;
}

uint64_t repl_ring_base(const struct repl_ring *r) { return r->base_lsn; }
size_t repl_ring_bytes(const struct repl_ring *r) { return r->bytes; }
size_t repl_ring_count(const struct repl_ring *r) { return r->n; }

int repl_ring_fill(const struct repl_ring *r, const struct repl_chunk *h, uint64_t max_bytes, struct buf *out)
{
	if (h->from_lsn < r->base_lsn || h->from_lsn > h->durable_lsn)
		return 1;
	/* first held transaction above from */
	size_t lo = 0, hi = r->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ring_at(r, mid)->lsn <= h->from_lsn)
			lo = mid + 1;
		else
			hi = mid;
	}
	struct repl_chunk hc = *h;
	hc.to_lsn = h->durable_lsn;
	size_t at;
	if (repl_chunk_begin(out, &hc, &at))
		return -1;
	uint64_t body = 0;
	for (size_t i = lo; i < r->n; i++) {
		const struct ring_txn *t = ring_at(r, i);
		if (t->lsn > h->durable_lsn)
			break;
		if (body && (body + REPL_TXN_HEADER + t->len > max_bytes ||
			     body + REPL_TXN_HEADER + t->len > REPL_MAX_CHUNK_BODY)) {
			/* the chunk is full: it covers up to the previous transaction */
			wr_u64((uint8_t *)out->data + at + 40, ring_at(r, i - 1)->lsn);
			break;
		}
		if (repl_chunk_add(out, at, t->lsn, t->data, t->len))
			return -1;
		body += REPL_TXN_HEADER + t->len;
	}
	return repl_chunk_finish(out, at) ? -1 : 0;
}

/* ---- the publisher ---------------------------------------------------------- */

/* A long-poll held until something new is durable (repl.h). */
struct repl_waiter {
	struct srv_deferred *d;
	uint64_t from, max_bytes, deadline_ms;
};

struct repl_pub {
	uint32_t self;
	uint64_t epoch;
	repl_tables mask;
	struct repl_ring *ring;
	struct buf scratch;   /* the filtered image being built */
	uint64_t chunks_served, bytes_served, gone;
	struct repl_waiter waiters[REPL_WAITERS];
	unsigned n_waiters;
};

/* The shard's log hook: keep the published part of a transaction. */
static void pub_logged(struct shard *sh, uint64_t lsn, const void *img, size_t len)
{
	struct repl_pub *p = sh->repl_pub;
	if (repl_is_replica_txn(img, len)) {
		repl_ring_push(p->ring, lsn, NULL, 0);
		return;
	}
	buf_reset(&p->scratch);
	size_t off = 0, start = 0;
	struct rec_view rv;
	while (rec_decode(img, len, &off, &rv) == 1) {
		if (rv.table < 32 && (p->mask & REPL_T(rv.table)))
			buf_append(&p->scratch, (const uint8_t *)img + start, off - start);
		start = off;
	}
	if (p->scratch.overflow || repl_ring_push(p->ring, lsn, p->scratch.data, p->scratch.len))
		log_error("msg=\"replication buffer could not keep a transaction; subscribers will resync\" lsn=%llu",
			  (unsigned long long)lsn);
}

/* <data_dir>/repl-epoch: 16 hex digits, made once (temp + rename + sync). */
static int epoch_load(const char *data_dir, uint64_t *epoch, char *err, size_t errlen)
{
	char path[700], tmp[720];
	snprintf(path, sizeof(path), "%s/repl-epoch", data_dir);
	FILE *f = fopen(path, "r");
	if (f) {
		char line[40] = "";
		char *end = NULL;
		int ok = fgets(line, sizeof(line), f) != NULL;
		fclose(f);
		*epoch = ok ? strtoull(line, &end, 16) : 0;
		if (!ok || end != line + 16 || (*end != '\n' && *end) || *epoch == 0) {
			snprintf(err, errlen, "%s is not 16 hex digits: remove it to start a new epoch (every "
				 "subscriber then resyncs)", path);
			return -1;
		}
		return 0;
	}
	if (errno != ENOENT) {
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	do {
		if (getrandom(epoch, sizeof(*epoch), 0) != sizeof(*epoch)) {
			snprintf(err, errlen, "getrandom failed: %s", strerror(errno));
			return -1;
		}
	} while (*epoch == 0);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	char line[20];
	int n = snprintf(line, sizeof(line), "%016" PRIx64 "\n", *epoch);
	if (fd < 0 || write(fd, line, (size_t)n) != n || fsync(fd) || close(fd) || rename(tmp, path)) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	int dfd = open(data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	log_info("msg=\"replication epoch created\" epoch=%016" PRIx64 " file=%s", *epoch, path);
	return 0;
}

struct repl_pub *repl_pub_new(uint32_t self, char *err, size_t errlen)
{
	struct repl_pub *p = calloc(1, sizeof(*p));
	if (p) {
		p->self = self;
		p->mask = repl_published(self);
		p->ring = repl_ring_new(REPL_BUFFER_BYTES);
		buf_init(&p->scratch, TXN_MAX_BYTES + 4096);
	}
	if (!p || !p->ring) {
		free(p);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	return p;
}

void repl_pub_logged(struct shard *sh, uint64_t lsn, const void *img, size_t len) { pub_logged(sh, lsn, img, len); }

int repl_pub_opened(struct shard *sh, char *err, size_t errlen)
{
	if (!sh->repl_pub)
		return 0;
	repl_ring_start(sh->repl_pub->ring, sh->lsn);
	return epoch_load(sh->cfg.data_dir, &sh->repl_pub->epoch, err, errlen);
}

uint64_t repl_epoch(const struct shard *sh) { return sh->repl_pub ? sh->repl_pub->epoch : 0; }

void repl_pub_free(struct shard *sh)
{
	struct repl_pub *p = sh->repl_pub;
	if (!p)
		return;
	repl_ring_free(p->ring);
	buf_free(&p->scratch);
	free(p);
	sh->repl_pub = NULL;
	sh->logged = NULL;
}

void repl_pub_metrics(struct shard *sh, struct buf *o)
{
	struct repl_pub *p = sh->repl_pub;
	if (!p)
		return;
	buf_printf(o, "# HELP wm_repl_published_bytes_total Replication chunk bytes this shard served as a publisher.\n"
		      "# TYPE wm_repl_published_bytes_total counter\nwm_repl_published_bytes_total %llu\n"
		      "# TYPE wm_repl_buffer_bytes gauge\nwm_repl_buffer_bytes %zu\n"
		      "# HELP wm_repl_buffer_base_lsn Positions at or above it are served from memory; older ones resync.\n"
		      "# TYPE wm_repl_buffer_base_lsn gauge\nwm_repl_buffer_base_lsn %llu\n"
		      "# TYPE wm_repl_positions_gone_total counter\nwm_repl_positions_gone_total %llu\n",
		   (unsigned long long)p->bytes_served, repl_ring_bytes(p->ring),
		   (unsigned long long)repl_ring_base(p->ring), (unsigned long long)p->gone);
}

void repl_pub_status(struct shard *sh, struct jw *w)
{
	struct repl_pub *p = sh->repl_pub;
	if (!p)
		return;
	char ep[20];
	snprintf(ep, sizeof(ep), "%016" PRIx64, p->epoch);
	jw_key(w, "publisher");
	jw_obj_begin(w);
	jw_kstr(w, "epoch", ep);
	jw_kint(w, "buffer_base_lsn", (int64_t)repl_ring_base(p->ring));
	jw_kint(w, "buffer_transactions", (int64_t)repl_ring_count(p->ring));
	jw_kint(w, "buffer_bytes", (int64_t)repl_ring_bytes(p->ring));
	jw_obj_end(w);
}

/* ---- routes ----------------------------------------------------------------- */

/* A query parameter as an unsigned decimal (base 10) or, with hex, 16 hex
 * digits.  1 parsed, 0 absent, -1 malformed (the 400 is written). */
static int q_u64(struct api_ctx *c, const char *k, int hex, uint64_t *out)
{
	char v[32];
	int n = api_query(c, k, v, sizeof(v));
	if (n == -1)
		return 0;
	char *end = NULL;
	errno = 0;
	*out = n > 0 && v[0] != '-' && v[0] != '+' ? strtoull(v, &end, hex ? 16 : 10) : 0;
	if (n <= 0 || errno || !end || *end || (hex && n != 16)) {
		char d[96];
		snprintf(d, sizeof(d), "query parameter %s must be %s", k, hex ? "16 hex digits" : "a decimal integer");
		api_error(c, 400, "invalid_query", d);
		return -1;
	}
	return 1;
}

static int q_max_bytes(struct api_ctx *c, uint64_t *mb)
{
	*mb = REPL_FETCH_BYTES;
	int r = q_u64(c, "max_bytes", 0, mb);
	if (r < 0)
		return -1;
	if (*mb == 0 || *mb > REPL_MAX_CHUNK_BODY) {
		api_error(c, 400, "invalid_query", "max_bytes must be 1..2097152");
		return -1;
	}
	return 0;
}

static void gone(struct api_ctx *c, const char *detail)
{
	struct repl_pub *p = c->sh->repl_pub;
	p->gone++;
	api_error(c, 410, "replication_position_gone", detail);
	buf_printf(&c->rs->headers, "X-WM-Repl-Epoch: %016" PRIx64 "\r\n", p->epoch);
}

static void send_chunk(struct api_ctx *c, struct buf *b)
{
	struct repl_pub *p = c->sh->repl_pub;
	c->rs->status = 200;
	c->rs->content_type = "application/octet-stream";
	buf_reset(&c->rs->body);
	buf_append(&c->rs->body, b->data, b->len);
	p->chunks_served++;
	p->bytes_served += b->len;
	buf_printf(&c->rs->headers, "X-WM-Repl-Epoch: %016" PRIx64 "\r\n", p->epoch);
}

/* GET /internal/replication/wal?from=<lsn>&epoch=<16 hex>&max_bytes=<n>:
 * the published durable transactions after `from`, one chunk of at most
 * max_bytes of body (but always a whole first transaction); 410 when this
 * epoch is not the subscriber's or `from` is outside what the buffer
 * covers. */
static void wal_route(struct api_ctx *c)
{
	struct shard *sh = c->sh;
	struct repl_pub *p = sh->repl_pub;
	if (!p) {
		api_error(c, 404, "not_found", "this shard does not publish");
		return;
	}
	uint64_t from = 0, epoch = 0, mb;
	int hf = q_u64(c, "from", 0, &from), he = hf < 0 ? -1 : q_u64(c, "epoch", 1, &epoch);
	if (hf < 0 || he < 0 || q_max_bytes(c, &mb))
		return;
	if (!hf || !he) {
		api_error(c, 400, "invalid_query", "from and epoch are required");
		return;
	}
	struct repl_chunk h = {.kind = REPL_K_WAL, .publisher = p->self, .epoch = p->epoch, .from_lsn = from,
			       .durable_lsn = wal_durable_lsn(sh->wal), .pub_unix_ms = wall_ms()};
	if (epoch != p->epoch) {
		gone(c, "the publisher's epoch changed (its data directory was replaced): resync");
		return;
	}
	/* caught up and willing to wait: hold it until something is new */
	uint64_t wait = 0;
	int hw = q_u64(c, "wait_ms", 0, &wait);
	if (hw < 0)
		return;
	if (hw && (wait == 0 || wait > REPL_LONGPOLL_MAX_MS)) {
		api_error(c, 400, "invalid_query", "wait_ms must be from 1 to 5000");
		return;
	}
	if (hw && from == h.durable_lsn && p->n_waiters < REPL_WAITERS && sh->srv) {
		struct srv_deferred *d = srv_defer(sh->srv, c->rq);
		if (d) {
			p->waiters[p->n_waiters++] =
				(struct repl_waiter){.d = d, .from = from, .max_bytes = mb,
						     .deadline_ms = ev_now_ms(sh->loop) + wait};
			return;
		}
	}
	struct buf b;
	buf_init(&b, REPL_HEADER_SIZE + REPL_MAX_CHUNK_BODY);
	int r = repl_ring_fill(p->ring, &h, mb, &b);
	if (r == 1)
		gone(c, "the position is older than what the publisher keeps, or ahead of it: resync");
	else if (r < 0)
		api_error(c, 500, "replication_chunk_failed", "the chunk could not be built");
	else
		send_chunk(c, &b);
	buf_free(&b);
}

/* Answer one held long-poll now: the chunk after its position (empty when
 * nothing is new), or 410 when the position left the buffer meanwhile. */
static void waiter_answer(struct shard *sh, struct repl_waiter *w)
{
	struct repl_pub *p = sh->repl_pub;
	struct srv_response rs = {.status = 200, .content_type = "application/octet-stream",
				  .route = "/internal/replication/wal"};
	buf_init(&rs.headers, 0);
	buf_init(&rs.body, REPL_HEADER_SIZE + REPL_MAX_CHUNK_BODY);
	buf_printf(&rs.headers, "X-WM-Repl-Epoch: %016" PRIx64 "\r\n", p->epoch);
	struct repl_chunk h = {.kind = REPL_K_WAL, .publisher = p->self, .epoch = p->epoch, .from_lsn = w->from,
			       .durable_lsn = wal_durable_lsn(sh->wal), .pub_unix_ms = wall_ms()};
	int r = repl_ring_fill(p->ring, &h, w->max_bytes, &rs.body);
	if (r != 0) {
		buf_reset(&rs.body);
		rs.status = r == 1 ? 410 : 500;
		rs.content_type = PROBLEM_CONTENT_TYPE;
		p->gone += r == 1;
		problem_write(&rs.body, rs.status, r == 1 ? "replication_position_gone" : "replication_chunk_failed",
			      http_reason(rs.status),
			      r == 1 ? "the position is older than what the publisher keeps: resync"
				     : "the chunk could not be built");
	} else {
		p->chunks_served++;
		p->bytes_served += rs.body.len;
	}
	srv_complete(sh->srv, w->d, &rs);
	buf_free(&rs.headers);
	buf_free(&rs.body);
}

void repl_pub_wake(struct shard *sh, int all)
{
	struct repl_pub *p = sh->repl_pub;
	if (!p || !p->n_waiters)
		return;
	uint64_t durable = wal_durable_lsn(sh->wal), now = ev_now_ms(sh->loop);
	for (unsigned i = 0; i < p->n_waiters;) {
		struct repl_waiter w = p->waiters[i];
		if (!all && durable <= w.from && now < w.deadline_ms) {
			i++;
			continue;
		}
		p->waiters[i] = p->waiters[--p->n_waiters];
		waiter_answer(sh, &w);
	}
}

/* Is this row of a published table this shard's own (not a replica of
 * another shard's stock)? */
static int row_is_own(const struct shard *sh, uint32_t self, unsigned table, const struct row *r)
{
	if (table != REC_T_LOCATION && table != REC_T_INVENTORY)
		return self == REPL_HOME;
	char cc[3];
	if (!id_country(r->id, r->id_len, cc) || !sh->smap)
		return self == REPL_HOME;
	int owner = smap_owner(sh->smap, cc);
	return owner < 0 ? self == REPL_HOME : (uint32_t)owner == self;
}

/* Hex of a key into out (2 * len + 1). */
static void hex_key(const char *k, size_t len, char *out)
{
	static const char hx[] = "0123456789abcdef";
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = hx[(uint8_t)k[i] >> 4];
		out[2 * i + 1] = hx[(uint8_t)k[i] & 15];
	}
	out[2 * len] = 0;
}

static int unhex_key(const char *h, size_t hl, char *out, size_t *len)
{
	if (hl % 2 || hl / 2 > REC_MAX_KEY)
		return -1;
	for (size_t i = 0; i < hl / 2; i++) {
		int v = 0;
		for (int j = 0; j < 2; j++) {
			char ch = h[2 * i + (size_t)j];
			int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
			if (d < 0)
				return -1;
			v = v * 16 + d;
		}
		out[i] = (char)v;
	}
	*len = hl / 2;
	return 0;
}

/* GET /internal/replication/snapshot?table=<t>&after=<hex id>&max_bytes=<n>:
 * one page of the publisher's own rows of its published tables in (table,
 * id) order after the cursor (none: from the start); the chunk's to_lsn
 * is the state the tail continues from, REPL_F_LAST marks the end. */
static void snapshot_route(struct api_ctx *c)
{
	struct shard *sh = c->sh;
	struct repl_pub *p = sh->repl_pub;
	if (!p) {
		api_error(c, 404, "not_found", "this shard does not publish");
		return;
	}
	uint64_t table = 0, mb;
	char after_hex[2 * REC_MAX_KEY + 2], after[REC_MAX_KEY + 1];
	size_t after_len = 0;
	int ht = q_u64(c, "table", 0, &table);
	if (ht < 0 || q_max_bytes(c, &mb))
		return;
	int ah = api_query(c, "after", after_hex, sizeof(after_hex));
	if (table >= REC_T_COUNT_ || ah == -2 || (ah >= 0 && unhex_key(after_hex, (size_t)ah, after, &after_len))) {
		api_error(c, 400, "invalid_query", "table must be a table id and after the hex of a row id");
		return;
	}
	struct repl_chunk h = {.kind = REPL_K_SNAPSHOT, .publisher = p->self, .epoch = p->epoch,
			       .to_lsn = sh->state_lsn, .durable_lsn = sh->state_lsn, .pub_unix_ms = wall_ms()};
	struct buf recs, b, scratch; /* scratch: a rendered row document (table.h row_doc) */
	buf_init(&recs, REPL_MAX_CHUNK_BODY);
	buf_init(&b, REPL_HEADER_SIZE + REPL_MAX_CHUNK_BODY);
	buf_init(&scratch, REC_MAX_VAL);
	int last = 1;
	for (unsigned t = (unsigned)table; t < REC_T_COUNT_ && last; t++) {
		const struct table *tb = &sh->tables[t];
		if (!tb->ops || t >= 32 || !(p->mask & REPL_T(t))) /* tables 32+ are never published */
			continue;
		struct oidx_iter it;
		int first = t == table && ah > 0;
		for (int ok = oidx_seek_ge(&tb->by_order, first ? after : NULL, first ? (uint32_t)after_len : 0, &it);
		     ok; ok = oidx_next(&it)) {
			const struct row *r = oidx_iter_val(&it);
			if (first && r->id_len == after_len && !memcmp(r->id, after, after_len))
				continue;
			if (!row_is_own(sh, p->self, t, r))
				continue;
			size_t dl;
			const char *doc = row_doc(r, &scratch, &dl);
			size_t need = REC_HEADER_SIZE + r->id_len + dl;
			if (doc && recs.len && recs.len + need + REPL_TXN_HEADER > mb) {
				last = 0;
				break;
			}
			if (!doc || rec_encode(&recs, REC_PUT, (uint8_t)t, 1, r->id, r->id_len, doc, dl)) {
				api_error(c, 500, "replication_chunk_failed", "a row does not fit a page");
				goto out;
			}
		}
	}
	h.flags = last ? REPL_F_LAST : 0;
	size_t at;
	if (repl_chunk_begin(&b, &h, &at) || (recs.len && repl_chunk_add(&b, at, h.to_lsn, recs.data, recs.len)) ||
	    repl_chunk_finish(&b, at)) {
		api_error(c, 500, "replication_chunk_failed", "the page could not be built");
		goto out;
	}
	/* the page reveals rows up to the state LSN: hold it until durable */
	table_reads_note(sh->state_lsn);
	send_chunk(c, &b);
out:
	buf_free(&recs);
	buf_free(&b);
	buf_free(&scratch);
}

const struct route repl_internal_routes[] = {
	{HTTP_M_GET, "/internal/replication/wal", wal_route, SC_PUBLIC, ACT_NONE, "Published transactions after a position", 0},
	{HTTP_M_GET, "/internal/replication/snapshot", snapshot_route, SC_PUBLIC, ACT_NONE, "A page of the published rows", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};

void repl_hex_key(const char *k, size_t len, char *out) { hex_key(k, len, out); }
