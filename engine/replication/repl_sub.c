/*
 * repl_sub.c -- the subscriber side of replication (repl.h, DESIGN.md 9).
 *
 * Every shard in cluster mode subscribes to every other shard.  The state
 * lives in struct repl_sub (one struct repl_peer per publisher), not in
 * struct shard, so the router can reuse this loop later.  Per publisher:
 *
 *   streaming   GET /internal/replication/wal?from=<pos>&epoch=<e>&
 *               wait_ms=REPL_LONGPOLL_MS: apply the chunk and ask again
 *               at once; a caught-up fetch is held by the publisher
 *               until something new is durable (a long-poll, so a write
 *               reaches the replicas one round trip after its fsync, not
 *               after a poll interval); an empty answer that came back
 *               at once (the publisher's waiters were full) backs off
 *               from REPL_POLL_MIN_MS doubling to REPL_POLL_MAX_MS (the
 *               timings live in repl.h only);
 *   resyncing   after a 410 (the publisher cannot serve the position, or
 *               its epoch changed): GET /internal/replication/snapshot
 *               page by page, then streaming from the first page's LSN.
 *
 * Applying: each chunk is decoded strictly (repl_wire.c: only the tables
 * that publisher publishes), every PUT is checked against the table code
 * (table_check) BEFORE anything is logged, then its transactions are
 * applied as few local transactions as fit TXN_MAX_BYTES, each carrying
 * the position row (repl_pos.c) of the last publisher LSN it covers: the
 * records and the position are logged and applied together, so a
 * restart -- kill -9 included -- resumes exactly where the log says, with
 * no loss and no record applied twice from a different position.  The
 * records go through txn_put/txn_del and shard_apply, the code recovery
 * uses; the position row also marks the transaction as a replica's, which
 * the publisher side never ships on.
 *
 * A publisher that does not answer (down, refused, timed out, a chunk
 * that does not decode): the shard keeps serving what it has logged
 * (stale but consistent: only whole publisher transactions are ever
 * applied), retries from REPL_RETRY_MIN_MS doubling to REPL_RETRY_MAX_MS,
 * and logs one line when the episode starts and one when it ends.
 *
 * Scheduling uses one timerfd on the shard's loop, armed for the earliest
 * poll due; the outbound calls use net/client.h (one connection per
 * publisher, a deadline per call, signed with the cluster secret).
 */
#include "engine/replication/repl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "engine/base/log.h"
#include "engine/replication/repl_int.h"
#include "engine/storage/record.h"
#include "engine/storage/shard.h"
#include "net/client.h"
#include "engine/cluster/cluster_auth.h"
#include "engine/cluster/shard_map.h"
#include "wal/errinj.h"

struct repl_peer {
	uint32_t id;
	int active;                  /* a publisher this shard subscribes to */
	char addr[SMAP_MAX_ADDR];
	struct hc_pool *pool;
	struct repl_sub *sub;
	struct repl_pos pos;         /* applied (the logged row, or further for empty stretches) */
	uint64_t resync_base;        /* while resyncing: the first page's LSN */
	int resync_started;          /* a first page was applied */
	uint8_t cur_table;           /* the snapshot cursor: last record's table and id */
	char cur_after[REC_MAX_KEY];
	size_t cur_after_len;
	int inflight;
	uint64_t due_ms;             /* monotonic ms of the next call */
	uint32_t poll_ms, retry_ms;
	uint64_t sent_ms;            /* when the call in flight was sent (long-poll or not) */
	uint64_t sent_unix_ms;       /* the same, on the wall clock */
	uint64_t fresh_unix_ms;      /* every publisher write durable before this wall time is applied
				      * (the send time of the last answer that left us caught up) */
	int down;                    /* in a failure episode (logged once) */
	uint64_t pub_durable;        /* the publisher's durable LSN at the last answer */
	uint64_t caught_up_unix_ms;  /* when it was last known caught up (wall clock) */
	int synced;                  /* has been caught up with the publisher at least once */
	uint64_t bytes, resyncs, chunks, failures;
};

struct repl_sub {
	struct shard *sh;
	const struct cluster_key *key;
	uint32_t self;
	int home_only;               /* a router: the home only, into the few tables it has */
	struct repl_peer peers[REPL_MAX_PUBLISHERS];
	struct ev_handle th;         /* the timerfd */
	struct buf scratch;          /* records of one local transaction */
};

static uint64_t mono_ms(void) { return ev_clock_us() / 1000; }

/* ---- scheduling ------------------------------------------------------------- */

static void arm(struct repl_sub *s)
{
	uint64_t now = mono_ms(), due = UINT64_MAX;
	for (uint32_t i = 0; i < REPL_MAX_PUBLISHERS; i++) {
		struct repl_peer *p = &s->peers[i];
		if (p->active && !p->inflight && p->due_ms < due)
			due = p->due_ms;
	}
	struct itimerspec its;
	memset(&its, 0, sizeof(its));
	if (due != UINT64_MAX) {
		uint64_t wait_ms = due > now ? due - now : 0;
		uint64_t ns = wait_ms ? wait_ms * 1000000ull : 100000ull; /* "now": 0.1 ms (0 would disarm) */
		its.it_value.tv_sec = (time_t)(ns / 1000000000ull);
		its.it_value.tv_nsec = (long)(ns % 1000000000ull);
	}
	timerfd_settime(s->th.fd, 0, &its, NULL);
}

static void schedule(struct repl_peer *p, uint32_t delay_ms) { p->due_ms = mono_ms() + delay_ms; }

/* An answer that moved nothing: the idle poll backs off. */
static void schedule_idle(struct repl_peer *p)
{
	schedule(p, p->poll_ms);
	p->poll_ms = p->poll_ms * 2 > REPL_POLL_MAX_MS ? REPL_POLL_MAX_MS : p->poll_ms * 2;
}

static void episode_end(struct repl_peer *p)
{
	p->retry_ms = REPL_RETRY_MIN_MS;
	if (p->down) {
		p->down = 0;
		log_info("msg=\"replication publisher reachable again\" publisher=%u addr=%s applied_lsn=%llu", p->id,
			 p->addr, (unsigned long long)p->pos.lsn);
	}
}

/* A failed call or a refused chunk: retry with backoff, log once. */
static void failure(struct repl_peer *p, const char *why)
{
	p->failures++;
	if (!p->down) {
		p->down = 1;
		log_warn("msg=\"replication publisher unavailable; serving the logged replica (stale) and retrying\" "
			 "publisher=%u addr=%s applied_lsn=%llu error=\"%s\" action=\"check that shard %u runs and "
			 "listens on %s (shard map); the next success is logged\"",
			 p->id, p->addr, (unsigned long long)p->pos.lsn, why, p->id, p->addr);
	}
	schedule(p, p->retry_ms);
	p->retry_ms = p->retry_ms * 2 > REPL_RETRY_MAX_MS ? REPL_RETRY_MAX_MS : p->retry_ms * 2;
}

/* ---- applying ----------------------------------------------------------------- */

/* Check every record of one publisher transaction against the table code. */
static int check_txn(struct shard *sh, const uint8_t *rec, uint32_t len, char *why)
{
	size_t off = 0;
	struct rec_view rv;
	while (rec_decode(rec, len, &off, &rv) == 1) {
		struct table *t = &sh->tables[rv.table];
		if (!t->ops && sh->repl_sub->home_only)
			continue; /* a router keeps only the tables its edge reads */
		if (!t->ops) {
			snprintf(why, 128, "table %u unknown here", rv.table);
			return -1;
		}
		/* the reference data's decode makes it current: checked by its
		 * publisher's own commit, applied here by the commit only */
		if (rv.op == REC_PUT && rv.table != REC_T_REFDATA &&
		    table_check(t, rv.key, rv.key_len, rv.val, rv.val_len, why))
			return -1;
	}
	return 0;
}

/* Copy one publisher transaction's records into the open transaction. */
static int copy_txn(struct shard *sh, const uint8_t *rec, uint32_t len)
{
	size_t off = 0;
	struct rec_view rv;
	while (rec_decode(rec, len, &off, &rv) == 1) {
		if (!sh->tables[rv.table].ops)
			continue; /* a router's: check_txn let only those through */
		int rc = rv.op == REC_PUT ? txn_put(sh, rv.table, rv.key, rv.key_len, rv.val, rv.val_len)
					  : txn_del(sh, rv.table, rv.key, rv.key_len);
		if (rc)
			return -1;
	}
	return 0;
}

/* Log and apply the open transaction with position *pos.  0 or -1. */
static int commit_with(struct repl_peer *p, const struct repl_pos *pos)
{
	struct shard *sh = p->sub->sh;
	if (repl_pos_put(sh, pos)) {
		txn_abort(sh);
		return -1;
	}
	return txn_commit_replica(sh) ? 0 : -1;
}

/* Apply a WAL chunk (already decoded and checked). */
static int apply_wal(struct repl_peer *p, const struct repl_chunk *c, char *why)
{
	struct shard *sh = p->sub->sh;
	size_t off = 0;
	uint64_t lsn;
	const uint8_t *rec;
	uint32_t len;
	while (repl_chunk_next(c, &off, &lsn, &rec, &len))
		if (check_txn(sh, rec, len, why))
			return -1;
	off = 0;
	int open = 0;
	size_t group = 0;
	struct repl_pos pos = p->pos;
	while (repl_chunk_next(c, &off, &lsn, &rec, &len)) {
		if (open && group + len > TXN_MAX_BYTES) {
			if (commit_with(p, &pos)) {
				snprintf(why, 128, "the local commit was refused (disk full?)");
				return -1;
			}
			p->pos = pos;
			open = 0;
		}
		if (!open) {
			txn_begin(sh);
			open = 1;
			group = 0;
		}
		if (copy_txn(sh, rec, len)) {
			txn_abort(sh);
			snprintf(why, 128, "a transaction does not fit");
			return -1;
		}
		group += len;
		pos.lsn = lsn;
	}
	if (open) {
		if (commit_with(p, &pos)) {
			snprintf(why, 128, "the local commit was refused (disk full?)");
			return -1;
		}
	}
	/* the stretch after the last transaction published nothing for us */
	p->pos = pos;
	p->pos.lsn = c->to_lsn;
	return 0;
}

/*
 * The catalogue home derives each offer's qty_available from the levels of
 * every shard (offer.h, inventory.c): after applying levels another shard
 * wrote, it recomputes the offers they belong to in a transaction of its
 * own -- without a position row, so it is published like any catalogue
 * write and every shard converges on the home's figure.  At most
 * REPL_RESTAGE_MAX offers per local transaction.
 */
#define REPL_RESTAGE_MAX 64u

static void restage_flush(struct shard *sh, char (*ids)[ID_MAX_LEN], unsigned n)
{
	if (!n)
		return;
	txn_begin(sh);
	unsigned staged = 0;
	for (unsigned i = 0; i < n; i++) {
		int r = repl_restage_offer(sh, ids[i]);
		if (r < 0)
			log_error("msg=\"offer quantity could not be recomputed from replicated stock\" offer_id=%s", ids[i]);
		staged += r > 0;
	}
	if (!staged || !txn_commit(sh))
		txn_abort(sh);
}

static void home_restage(struct repl_peer *p, const struct repl_chunk *c)
{
	struct shard *sh = p->sub->sh;
	if (p->sub->self != REPL_HOME || p->id == REPL_HOME)
		return;
	char ids[REPL_RESTAGE_MAX][ID_MAX_LEN];
	unsigned n = 0;
	size_t off = 0;
	uint64_t lsn;
	const uint8_t *rec;
	uint32_t len;
	while (repl_chunk_next(c, &off, &lsn, &rec, &len)) {
		size_t o = 0;
		struct rec_view rv;
		while (rec_decode(rec, len, &o, &rv) == 1) {
			if (rv.table != REC_T_INVENTORY || rv.op != REC_PUT)
				continue;
			const char *offer = repl_level_offer(sh, rv.key, rv.key_len);
			unsigned j = 0;
			while (offer && j < n && strcmp(ids[j], offer))
				j++;
			if (!offer || j < n)
				continue;
			snprintf(ids[n++], ID_MAX_LEN, "%s", offer);
			if (n == REPL_RESTAGE_MAX) {
				restage_flush(sh, ids, n);
				n = 0;
			}
		}
	}
	restage_flush(sh, ids, n);
}

static void resync_begin(struct repl_peer *p, const char *why)
{
	p->resyncs++;
	p->pos.state = REPL_ST_RESYNCING;
	p->resync_started = 0;
	p->cur_table = 0;
	p->cur_after_len = 0;
	log_warn("msg=\"replication resync: snapshot + tail\" publisher=%u addr=%s applied_lsn=%llu reason=\"%s\"",
		 p->id, p->addr, (unsigned long long)p->pos.lsn, why);
}

/* Apply a snapshot page (already decoded and checked). */
static int apply_page(struct repl_peer *p, const struct repl_chunk *c, char *why)
{
	struct shard *sh = p->sub->sh;
	if (!p->resync_started) {
		p->resync_base = c->to_lsn;
		p->pos.epoch = c->epoch;
	} else if (c->epoch != p->pos.epoch) {
		snprintf(why, 128, "the publisher's epoch changed during the resync");
		return 1;
	}
	size_t off = 0;
	uint64_t lsn;
	const uint8_t *rec = NULL;
	uint32_t len = 0;
	int has = repl_chunk_next(c, &off, &lsn, &rec, &len);
	if (has && check_txn(sh, rec, len, why))
		return -1;
	struct repl_pos pos = {.publisher = p->id, .epoch = c->epoch, .lsn = p->resync_base,
			       .state = (c->flags & REPL_F_LAST) ? REPL_ST_STREAMING : REPL_ST_RESYNCING};
	txn_begin(sh);
	if ((has && copy_txn(sh, rec, len)) || commit_with(p, &pos)) {
		if (sh->txn_open)
			txn_abort(sh);
		snprintf(why, 128, "the local commit was refused");
		return -1;
	}
	p->resync_started = 1;
	p->pos = pos;
	if (has) { /* the cursor: the page's last record */
		size_t o = 0;
		struct rec_view rv, last;
		memset(&last, 0, sizeof(last));
		while (rec_decode(rec, len, &o, &rv) == 1)
			last = rv;
		p->cur_table = last.table;
		memcpy(p->cur_after, last.key, last.key_len);
		p->cur_after_len = last.key_len;
	}
	if (pos.state == REPL_ST_STREAMING)
		log_info("msg=\"replication resync done; streaming the tail\" publisher=%u from_lsn=%llu", p->id,
			 (unsigned long long)pos.lsn);
	return 0;
}

/* ---- calls -------------------------------------------------------------------- */

static void on_answer(void *arg, const struct hc_response *r, const char *err);

static void call(struct repl_peer *p)
{
	char target[128 + 2 * REC_MAX_KEY];
	if (p->pos.state == REPL_ST_RESYNCING) {
		char hex[2 * REC_MAX_KEY + 1] = "";
		if (p->resync_started)
			repl_hex_key(p->cur_after, p->cur_after_len, hex);
		snprintf(target, sizeof(target), "/internal/replication/snapshot?table=%u&max_bytes=%u%s%s",
			 p->resync_started ? p->cur_table : 0u, REPL_FETCH_BYTES, hex[0] ? "&after=" : "", hex);
	} else {
		snprintf(target, sizeof(target), "/internal/replication/wal?from=%" PRIu64 "&epoch=%016" PRIx64
			 "&max_bytes=%u&wait_ms=%u", p->pos.lsn, p->pos.epoch, REPL_FETCH_BYTES, REPL_LONGPOLL_MS);
	}
	char sig[CK_HEADER_MAX], hdr[CK_HEADER_MAX + 32];
	if (ck_sign(p->sub->key, "GET", 3, target, strlen(target), (int64_t)time(NULL), "", 0, sig)) {
		failure(p, "the request could not be signed");
		return;
	}
	snprintf(hdr, sizeof(hdr), CK_HEADER_NAME ": %s\r\n", sig);
	struct hc_request rq = {.method = "GET", .path = target, .headers = hdr, .timeout_ms = REPL_CALL_TIMEOUT_MS};
	if (hc_send(p->pool, &rq, on_answer, p)) {
		failure(p, "the connection pool refused the call");
		return;
	}
	p->inflight = 1;
	p->sent_ms = mono_ms();
	p->sent_unix_ms = wall_ms();
}

static void on_answer(void *arg, const struct hc_response *r, const char *err)
{
	struct repl_peer *p = arg;
	struct repl_sub *s = p->sub;
	p->inflight = 0;
	char why[160];
	if (!r) {
		failure(p, err ? err : "no response");
		goto out;
	}
	if (r->status == 410) {
		episode_end(p);
		resync_begin(p, p->pos.state == REPL_ST_RESYNCING ? "the publisher could not serve the resync" :
			     "the publisher no longer serves our position (pruned, or a new epoch)");
		schedule(p, 0);
		goto out;
	}
	if (r->status != 200) {
		snprintf(why, sizeof(why), "status %d", r->status);
		failure(p, why);
		goto out;
	}
	struct repl_chunk c;
	why[0] = 0;
	if (repl_chunk_decode((const uint8_t *)r->body, r->body_len, repl_published(p->id), &c, why) ||
	    c.publisher != p->id) {
		if (c.publisher != p->id && !why[0])
			snprintf(why, sizeof(why), "chunk of publisher %u", c.publisher);
		log_error("msg=\"replication chunk refused\" publisher=%u error=\"%s\"", p->id, why);
		failure(p, why);
		goto out;
	}
	int rc;
	why[0] = 0;
	if (c.kind == REPL_K_WAL) {
		if (p->pos.state != REPL_ST_STREAMING || c.epoch != p->pos.epoch || c.from_lsn != p->pos.lsn) {
			failure(p, "a chunk for another position");
			goto out;
		}
		rc = apply_wal(p, &c, why);
	} else {
		if (p->pos.state != REPL_ST_RESYNCING) {
			failure(p, "a snapshot page while streaming");
			goto out;
		}
		rc = apply_page(p, &c, why);
		if (rc == 1) {
			resync_begin(p, why);
			rc = 0;
		}
	}
	if (rc) {
		log_error("msg=\"replication chunk not applied\" publisher=%u error=\"%s\"", p->id, why);
		failure(p, why);
		goto out;
	}
	home_restage(p, &c);
	episode_end(p);
	p->chunks++;
	p->bytes += r->body_len;
	p->pub_durable = c.durable_lsn;
	if (p->pos.state == REPL_ST_STREAMING && p->pos.lsn >= c.durable_lsn) {
		p->caught_up_unix_ms = wall_ms();
		p->fresh_unix_ms = p->sent_unix_ms;
		p->synced = 1;
	}
	if (c.kind == REPL_K_SNAPSHOT || c.n_txns || p->pos.lsn < c.durable_lsn) {
		p->poll_ms = REPL_POLL_MIN_MS;
		schedule(p, 0);
	} else if (mono_ms() - p->sent_ms >= REPL_LONGPOLL_MS / 2) {
		/* the publisher held the long-poll for its wait: ask again now */
		p->poll_ms = REPL_POLL_MIN_MS;
		schedule(p, 0);
	} else {
		schedule_idle(p); /* answered empty at once (its waiters were full): back off */
	}
out:
	arm(s);
}

static void on_timer(struct ev_loop *loop, struct ev_handle *h, uint32_t events)
{
	(void)loop;
	(void)events;
	struct repl_sub *s = h->arg;
	uint64_t v;
	ssize_t n = read(h->fd, &v, sizeof(v));
	(void)n;
	uint64_t now = mono_ms();
	for (uint32_t i = 0; i < REPL_MAX_PUBLISHERS; i++) {
		struct repl_peer *p = &s->peers[i];
		if (p->active && !p->inflight && p->due_ms <= now)
			call(p);
	}
	arm(s);
}

/* ---- life cycle ----------------------------------------------------------------- */

/* A pool to publisher i at addr; NULL with err. */
static struct hc_pool *peer_pool(struct shard *sh, const char *addr, char *err, size_t errlen)
{
	struct hc_config hc = {.addr = addr, .max_conns = 1, .max_queue = 1,
			       .max_response_bytes = REPL_HEADER_SIZE + REPL_MAX_CHUNK_BODY};
	return hc_pool_new(sh->loop, &hc, err, errlen);
}

/* Subscribe to publisher i at addr, from its logged position.  0, or -1. */
static int peer_start(struct repl_sub *s, uint32_t i, const char *addr, char *err, size_t errlen)
{
	struct shard *sh = s->sh;
	struct repl_peer *p = &s->peers[i];
	memset(p, 0, sizeof(*p));
	p->id = i;
	p->sub = s;
	snprintf(p->addr, sizeof(p->addr), "%s", addr);
	char why[200];
	p->pool = peer_pool(sh, p->addr, why, sizeof(why));
	if (!p->pool) {
		snprintf(err, errlen, "shard %u address %s: %s", i, p->addr, why);
		return -1;
	}
	p->active = 1;
	repl_pos_get(sh, i, &p->pos);
	p->pos.publisher = i;
	if (p->pos.epoch == 0 || p->pos.state == REPL_ST_RESYNCING) {
		/* never synced, or a resync the restart interrupted: from scratch */
		p->resyncs++;
		p->pos.state = REPL_ST_RESYNCING;
	}
	p->poll_ms = REPL_POLL_MIN_MS;
	p->retry_ms = REPL_RETRY_MIN_MS;
	p->caught_up_unix_ms = wall_ms();
	log_info("msg=\"replication subscribed\" publisher=%u addr=%s state=%s epoch=%016" PRIx64 " lsn=%llu", i,
		 p->addr, p->pos.state ? "resyncing" : "streaming", p->pos.epoch, (unsigned long long)p->pos.lsn);
	schedule(p, 0);
	return 0;
}

static int sub_start(struct shard *sh, const struct shard_map *m, const struct cluster_key *k, int home_only,
		     char *err, size_t errlen)
{
	struct repl_sub *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	s->sh = sh;
	s->key = k;
	s->self = home_only ? REPL_NO_SELF : (uint32_t)sh->cfg.shard_id;
	s->home_only = home_only;
	s->th.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	s->th.fn = on_timer;
	s->th.arg = s;
	sh->repl_sub = s;
	if (s->th.fd < 0 || ev_add(sh->loop, &s->th, EPOLLIN)) {
		snprintf(err, errlen, "cannot create the replication timer");
		return -1;
	}
	/* test builds: repl_sub_frozen keeps every replica as it was at the
	 * restart (a destination planning on stale stock, DESIGN.md 9 step 2) */
	int frozen = ERRINJ("repl_sub_frozen");
	if (frozen)
		log_warn("msg=\"fault injection: replication frozen\"");
	for (uint32_t i = 0; !frozen && i < m->n && i < REPL_MAX_PUBLISHERS; i++)
		if (i != s->self && (!home_only || i == REPL_HOME) && peer_start(s, i, m->shards[i].addr, err, errlen))
			return -1;
	arm(s);
	return 0;
}

int repl_sub_start(struct shard *sh, const struct shard_map *m, const struct cluster_key *k, char *err,
		   size_t errlen)
{
	return sub_start(sh, m, k, 0, err, errlen);
}

int repl_sub_start_home(struct shard *sh, const struct shard_map *m, const struct cluster_key *k, char *err,
			size_t errlen)
{
	return sub_start(sh, m, k, 1, err, errlen);
}

void repl_sub_remap(struct shard *sh, const struct shard_map *m)
{
	struct repl_sub *s = sh->repl_sub;
	if (!s)
		return;
	for (uint32_t i = 0; i < REPL_MAX_PUBLISHERS; i++) {
		struct repl_peer *p = &s->peers[i];
		int in_map = i < m->n && i != s->self && (!s->home_only || i == REPL_HOME);
		char err[256];
		if (p->active && !in_map) {
			/* the shard left the map: stop asking it (its rows stay, stale) */
			struct hc_pool *old = p->pool;
			p->active = 0;
			p->pool = NULL;
			hc_pool_free(old);
			log_warn("msg=\"replication stopped: the publisher left the shard map\" publisher=%u", i);
		} else if (!p->active && in_map) {
			if (peer_start(s, i, m->shards[i].addr, err, sizeof(err)))
				log_error("msg=\"cannot subscribe to a new shard\" publisher=%u error=\"%s\"", i, err);
		} else if (p->active && strcmp(p->addr, m->shards[i].addr)) {
			struct hc_pool *np = peer_pool(sh, m->shards[i].addr, err, sizeof(err));
			if (!np) {
				log_error("msg=\"replication keeps the old address: the new one is refused\" publisher=%u "
					  "addr=%s error=\"%s\"", i, m->shards[i].addr, err);
				continue;
			}
			/* swap first: the call in flight fails with "pool closed" and is
			 * retried on the new pool */
			struct hc_pool *old = p->pool;
			log_info("msg=\"replication follows the publisher to its new address\" publisher=%u from=%s to=%s", i,
				 p->addr, m->shards[i].addr);
			snprintf(p->addr, sizeof(p->addr), "%s", m->shards[i].addr);
			p->pool = np;
			p->retry_ms = REPL_RETRY_MIN_MS;
			hc_pool_free(old);
			schedule(p, 0);
		}
	}
	arm(s);
}

void repl_tick(struct shard *sh)
{
	struct repl_sub *s = sh->repl_sub;
	if (!s)
		return;
	for (uint32_t i = 0; i < REPL_MAX_PUBLISHERS; i++)
		if (s->peers[i].pool)
			hc_tick(s->peers[i].pool);
}

uint64_t repl_applied_lsn(struct shard *sh, uint32_t publisher)
{
	struct repl_sub *s = sh->repl_sub;
	if (!s || publisher >= REPL_MAX_PUBLISHERS || !s->peers[publisher].active ||
	    s->peers[publisher].pos.state != REPL_ST_STREAMING)
		return 0;
	return s->peers[publisher].pos.lsn;
}

int repl_synced(struct shard *sh, uint32_t publisher)
{
	struct repl_sub *s = sh->repl_sub;
	return s && publisher < REPL_MAX_PUBLISHERS && s->peers[publisher].active && s->peers[publisher].synced;
}

uint64_t repl_fresh_ms(struct shard *sh, uint32_t publisher)
{
	struct repl_sub *s = sh->repl_sub;
	if (!s || publisher >= REPL_MAX_PUBLISHERS || !s->peers[publisher].active)
		return 0;
	return s->peers[publisher].fresh_unix_ms;
}

static double lag_seconds(const struct repl_peer *p, uint64_t now)
{
	if (p->pos.state == REPL_ST_STREAMING && p->pos.lsn >= p->pub_durable && !p->down)
		return 0;
	return now > p->caught_up_unix_ms ? (double)(now - p->caught_up_unix_ms) / 1000.0 : 0;
}

void repl_metrics(struct shard *sh, struct buf *o)
{
	repl_pub_metrics(sh, o);
	struct repl_sub *s = sh->repl_sub;
	if (!s)
		return;
	uint64_t now = wall_ms();
	static const char *const fams[] = {
		"# HELP wm_repl_lag_lsn Publisher durable LSN at the last answer minus the LSN applied from it.\n"
		"# TYPE wm_repl_lag_lsn gauge\n",
		"# HELP wm_repl_lag_seconds Seconds since this shard was last caught up with the publisher (0 while it is).\n"
		"# TYPE wm_repl_lag_seconds gauge\n",
		"# HELP wm_repl_resyncs_total Snapshot + tail resyncs started (the first sync included).\n"
		"# TYPE wm_repl_resyncs_total counter\n",
		"# HELP wm_repl_bytes_total Replication chunk bytes received from the publisher.\n"
		"# TYPE wm_repl_bytes_total counter\n",
		"# TYPE wm_repl_applied_lsn gauge\n",
		"# HELP wm_repl_publisher_up 1 while the publisher answers, 0 during a failure episode.\n"
		"# TYPE wm_repl_publisher_up gauge\n",
	};
	static const char *const names[] = {"wm_repl_lag_lsn", "wm_repl_lag_seconds", "wm_repl_resyncs_total",
					    "wm_repl_bytes_total", "wm_repl_applied_lsn", "wm_repl_publisher_up"};
	for (int f = 0; f < 6; f++) {
		buf_puts(o, fams[f]);
		for (uint32_t i = 0; i < REPL_MAX_PUBLISHERS; i++) {
			const struct repl_peer *p = &s->peers[i];
			if (!p->active)
				continue;
			buf_printf(o, "%s{publisher=\"%u\"} ", names[f], i);
			switch (f) {
			case 0: buf_printf(o, "%llu\n", (unsigned long long)(p->pub_durable > p->pos.lsn ?
									     p->pub_durable - p->pos.lsn : 0)); break;
			case 1: buf_printf(o, "%.3f\n", lag_seconds(p, now)); break;
			case 2: buf_printf(o, "%llu\n", (unsigned long long)p->resyncs); break;
			case 3: buf_printf(o, "%llu\n", (unsigned long long)p->bytes); break;
			case 4: buf_printf(o, "%llu\n", (unsigned long long)repl_applied_lsn(sh, i)); break;
			default: buf_printf(o, "%d\n", p->down ? 0 : 1); break;
			}
		}
	}
}

void repl_status(struct shard *sh, struct jw *w)
{
	repl_pub_status(sh, w);
	struct repl_sub *s = sh->repl_sub;
	if (!s)
		return;
	uint64_t now = wall_ms();
	jw_key(w, "replication");
	jw_arr_begin(w);
	for (uint32_t i = 0; i < REPL_MAX_PUBLISHERS; i++) {
		const struct repl_peer *p = &s->peers[i];
		if (!p->active)
			continue;
		char ep[20];
		snprintf(ep, sizeof(ep), "%016" PRIx64, p->pos.epoch);
		jw_obj_begin(w);
		jw_kint(w, "publisher", i);
		jw_kstr(w, "addr", p->addr);
		jw_kstr(w, "state", p->pos.state ? "resyncing" : "streaming");
		jw_kstr(w, "epoch", ep);
		jw_kint(w, "applied_lsn", (int64_t)repl_applied_lsn(sh, i));
		jw_kint(w, "publisher_durable_lsn", (int64_t)p->pub_durable);
		jw_kint(w, "lag_lsn", (int64_t)(p->pub_durable > p->pos.lsn ? p->pub_durable - p->pos.lsn : 0));
		char lag[32];
		snprintf(lag, sizeof(lag), "%.3f", lag_seconds(p, now));
		jw_key(w, "lag_seconds");
		jw_raw(w, lag, strlen(lag));
		jw_kbool(w, "up", !p->down);
		jw_kint(w, "resyncs", (int64_t)p->resyncs);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

void repl_close(struct shard *sh)
{
	struct repl_sub *s = sh->repl_sub;
	if (s) {
		for (uint32_t i = 0; i < REPL_MAX_PUBLISHERS; i++)
			if (s->peers[i].pool)
				hc_pool_free(s->peers[i].pool);
		if (s->th.fd >= 0) {
			ev_del(sh->loop, &s->th);
			close(s->th.fd);
		}
		buf_free(&s->scratch);
		free(s);
		sh->repl_sub = NULL;
	}
	repl_pub_free(sh);
}
