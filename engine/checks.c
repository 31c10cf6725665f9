/*
 * checks.c -- the nightly consistency checks (spec 1 item 9, issue 18 item
 * 8; contract in checks.h).
 *
 * What a run looks for, each finding a kind and the ids it names:
 *   catalogue (the catalogue home only: shard 0, or a cluster of one --
 *   wines, offers and listings are its rows; the other shards hold
 *   replicas, which would only repeat its findings):
 *     wine_no_offer             a wine that no offer sells (withdrawn
 *                               offers do not count);
 *     offer_no_stock            an offer not withdrawn with no inventory
 *                               level at all (a join failure, not a sold-out
 *                               offer: that one has a level at 0).  Levels
 *                               of every shard reach the home by
 *                               replication;
 *     listing_offer_missing     a listing naming an offer that does not exist;
 *     listing_offer_withdrawn   a listing not delisted whose offer is withdrawn;
 *   orders <-> settlement <-> compliance (every shard, its own orders):
 *     paid_order_no_duty        a paid order (captured, or refunded after)
 *                               with a delivered leg that has no delivery
 *                               register record ("<order>.C<leg>.*",
 *                               written in the scan that delivers the leg):
 *                               the duty was never filed;
 *     duty_no_paid_order        register records ("<order>.C..",
 *                               "<order>.R<n>.X..") of an order that does
 *                               not exist here or was never paid;
 *     payout_no_paid_order      payouts ("<order>.S<n>") of such an order;
 *   the shard's half of the whole-cluster invariants (engine/check.c, the
 *   walk GET /internal/check makes for `wm-ctl cluster check`):
 *     stock_invariant           a level against its holds and its history;
 *     ledger_invariant          an order against its charge.
 * The cross-shard half (a leg's hold lives on its stock's shard, the order
 * on its destination's) is joined by `wm-ctl checks run`, which runs every
 * shard's checks and then `wm-ctl cluster check`'s join
 * (shard-router/ctl_cluster.c).
 *
 * Flagged exactly once: the open findings are rows (REC_T_CHECK_FINDING,
 * id "<kind>/<id>[/<id>]").  A run stores and flags (one
 * `pim.reconciliation.flagged` event, one log line at warn) only what is
 * not open yet, and closes (deletes, logs) what it no longer finds; a
 * finding that comes back later is a new one and is flagged again.  The
 * run's row (REC_T_CHECK_RUN, one row "last") keeps the run count and
 * the last run for /metrics across restarts.  The operations alert: after
 * a run with any finding open, a log line at error and a
 * `pim.reconciliation.flagged` event of kind "summary" with the counts
 * (the spec's event list has no operations event; this one is the spec's
 * "nightly join-integrity failure", so a subscriber to it sees the alert).
 *
 * A consistent view that never blocks the loop (the nightly run): the
 * scan runs in a forked child, as the snapshot writer does (shard.c): its
 * copy-on-write memory is the shard's state at one LSN, frozen while the
 * loop goes on serving.  The child writes its findings to a file in the
 * data directory (<data_dir>/checks-run.tmp: a header with the LSN and
 * counts, a line per finding, an end mark) and exits; the tick reaps it and
 * applies them -- the only part on the loop: a hash lookup per finding and
 * a transaction per CHECKS_TXN_BATCH changes (flagged or closed), at most
 * CHECKS_MAX_FINDINGS findings.  The
 * findings are those of the state at the child's LSN: one fixed meanwhile
 * is flagged and closed by the next run; a run of a later state applied
 * meanwhile (POST) makes the child's result stale, and it is dropped.
 * The alternatives were a scan in slices over several ticks (the view
 * moves between slices: it needs a frozen copy or a multi-version store,
 * which do not exist) or a scan of the newest snapshot file on a thread
 * (an hour old, and its rows would have to be decoded into a second set
 * of tables).
 *
 * The operator's POST /v1/admin/checks/run (and /internal/checks/run)
 * answers with the run, so it scans in the loop, between two requests:
 * the loop is single-threaded and a request atomic, so that view is as
 * consistent (the state at the LSN the run reports).  It holds the loop
 * for one pass over the tables the checks read: O(wines + offers +
 * listings + levels + holds + stock events + orders + register records +
 * payouts), hash sets and no sorting -- on the demo data (3 wines) ~10 us;
 * 20 000 levels ~20 ms in the release build, plus ~40 ms to flag 10 000 new
 * findings (the run's `elapsed_us` is the scan's, also in /metrics).  Bounded: a run
 * records at most CHECKS_MAX_FINDINGS findings (the rest are counted,
 * `truncated`, and a truncated run closes nothing).
 *
 * Schedule: --checks-at HH:MM (UTC; default 03:00; "off": never) starts
 * the background run when the wall clock passes that time while the shard
 * runs (a shard down at that time waits for the next day or for an
 * operator's POST /v1/admin/checks/run).
 */
#include "engine/checks.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/base/log.h"
#include "engine/catalogue/wine.h"
#include "engine/check.h"
#include "engine/cluster/shard_map.h"
#include "engine/edge/api.h"
#include "engine/edge/fields.h"
#include "engine/orders/order.h"
#include "engine/orders/payment.h"
#include "engine/stock/inventory.h"
#include "engine/supply/listing.h"
#include "engine/supply/offer.h"
#include "net/jsonw.h"

#define CHECKS_KEY_MAX 200u         /* a finding's row id: "<kind>/<id>[/<id>]" */
#define CHECKS_DOC_MAX 1024u        /* a finding's row or event document */
#define CHECKS_RUN_ID "last"        /* the run row's id */
#define CHECKS_TXN_BATCH 64u        /* findings flagged or closed per transaction (64 x ~2 KiB: far below TXN_MAX_BYTES) */
#define CHECKS_DAY_MS 86400000ULL
#define CHECKS_BG_FILE "checks-run.tmp" /* the scanning child's findings, in the data directory */
/* its largest size: a header, every finding's line ("F", kind, ids, text,
 * four tabs and the newline), the end */
#define CHECKS_BG_FILE_MAX ((size_t)CHECKS_MAX_FINDINGS * (8 + ID_MAX_LEN * 3 + CHECKS_DETAIL_MAX) + 128)

const char *const checks_kind_names[] = {
	"wine_no_offer",         "offer_no_stock",     "listing_offer_missing", "listing_offer_withdrawn",
	"paid_order_no_duty",    "duty_no_paid_order", "payout_no_paid_order",  CHECK_K_STOCK,
	CHECK_K_LEDGER,          "hold_leg_mismatch",  "prepared_without_txn",  NULL,
};
_Static_assert(sizeof(checks_kind_names) / sizeof(checks_kind_names[0]) == CK_N_KIND + 1, "one name per kind");

/* ---- the tables ----------------------------------------------------------------------------- */

struct check_finding {
	struct row row;
	uint8_t kind; /* enum checks_kind */
};

static int kind_of(const char *s)
{
	for (int k = 0; checks_kind_names[k]; k++)
		if (!strcmp(checks_kind_names[k], s))
			return k;
	return -1;
}

static int finding_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	char kind[CHECKS_KIND_MAX];
	int k = fld_doc_str(doc, "kind", kind, sizeof(kind)) ? -1 : kind_of(kind);
	if (k < 0)
		return -1;
	((struct check_finding *)r)->kind = (uint8_t)k;
	return 0;
}

static const char *const finding_keys[] = {"kind", NULL};

const struct table_ops checks_finding_table_ops = {
	.rec_table = REC_T_CHECK_FINDING,
	.name = "check_finding",
	.row_size = sizeof(struct check_finding),
	.decode = finding_decode,
	.decode_keys = finding_keys,
};

struct check_run_row {
	struct row row;
	uint64_t runs, last_unix_ms, last_elapsed_us, last_lsn;
};

static int u64_of(const struct json_value *doc, const char *k, uint64_t *out)
{
	int64_t v;
	const struct json_value *x = json_get(doc, k);
	if (!x || x->type != JSON_NUMBER || json_to_int64(x, &v) || v < 0)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

static int run_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct check_run_row *x = (struct check_run_row *)r;
	return u64_of(doc, "runs", &x->runs) || u64_of(doc, "last_run_unix_ms", &x->last_unix_ms) ||
			       u64_of(doc, "last_elapsed_us", &x->last_elapsed_us) || u64_of(doc, "last_lsn", &x->last_lsn)
		       ? -1
		       : 0;
}

const struct table_ops checks_run_table_ops = {
	.rec_table = REC_T_CHECK_RUN,
	.name = "check_run",
	.row_size = sizeof(struct check_run_row),
	.decode = run_decode,
};

/* ---- the scan ------------------------------------------------------------------------------- */

struct finding {
	char key[CHECKS_KEY_MAX];
	uint8_t kind;
	char a[ID_MAX_LEN * 2], b[ID_MAX_LEN];
	char detail[CHECKS_DETAIL_MAX];
};

/* What a scan found: the findings (keyed by their row id, so a finding
 * reported twice -- a level with two violations -- is kept once). */
struct scan {
	struct finding *f;
	size_t n, cap;
	struct hidx by_key;
	uint64_t found; /* distinct findings, recorded or not */
	int truncated, oom;
	int cluster;    /* the cluster report (its kinds), not a shard's own run */
};

/* Record the finding (kind, a, b) with its line of text, unless it is
 * recorded already or the run holds CHECKS_MAX_FINDINGS (then truncated).
 * 1 when it is new to the scan (counted in found), else 0. */
static int scan_put(struct scan *s, int kind, const char *a, const char *b, const char *detail)
{
	struct finding x = {.kind = (uint8_t)kind};
	snprintf(x.a, sizeof(x.a), "%s", a);
	snprintf(x.b, sizeof(x.b), "%s", b ? b : "");
	int kl = snprintf(x.key, sizeof(x.key), "%s/%s%s%s", checks_kind_names[kind], x.a, x.b[0] ? "/" : "", x.b);
	if (kl <= 0 || (size_t)kl >= sizeof(x.key) || hidx_get_untracked(&s->by_key, x.key, (uint32_t)kl))
		return 0;
	if (s->n == CHECKS_MAX_FINDINGS) {
		s->truncated = 1;
		return 1;
	}
	snprintf(x.detail, sizeof(x.detail), "%s", detail);
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct finding *f = realloc(s->f, cap * sizeof(*f));
		if (!f) {
			s->oom = 1;
			return 1;
		}
		/* the index points into the array: re-key it after the move */
		s->f = f;
		s->cap = cap;
		hidx_free(&s->by_key);
		hidx_init(&s->by_key);
		for (size_t i = 0; i < s->n; i++)
			if (hidx_put(&s->by_key, s->f[i].key, (uint32_t)strlen(s->f[i].key), &s->f[i]) < 0)
				s->oom = 1;
	}
	s->f[s->n] = x;
	if (hidx_put(&s->by_key, s->f[s->n].key, (uint32_t)kl, &s->f[s->n]) < 0)
		s->oom = 1;
	s->n++;
	return 1;
}

static void scan_add(struct scan *s, int kind, const char *a, const char *b, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void scan_add(struct scan *s, int kind, const char *a, const char *b, const char *fmt, ...)
{
	char detail[CHECKS_DETAIL_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	s->found += (uint64_t)scan_put(s, kind, a, b, detail);
}

static void scan_free(struct scan *s)
{
	free(s->f);
	hidx_free(&s->by_key);
	memset(s, 0, sizeof(*s));
}

/* A set of ids (the keys live in the rows: the scan runs between requests,
 * nothing frees them meanwhile). */
static void set_add(struct hidx *h, const char *id, int *oom)
{
	size_t n = strnlen(id, ID_MAX_LEN);
	if (n && n < ID_MAX_LEN && hidx_put(h, id, (uint32_t)n, (void *)id) < 0)
		*oom = 1;
}

static int set_has(const struct hidx *h, const char *id)
{
	size_t n = strnlen(id, ID_MAX_LEN);
	return n && n < ID_MAX_LEN && hidx_get_untracked(h, id, (uint32_t)n) != NULL;
}

/* Every row of table tbl in id order as `const T *var` (a block follows). */
#define FOR_ROWS(sh, tbl, T, var, it, ok)                                                                  \
	for (int ok = oidx_seek_ge(&(sh)->tables[tbl].by_order, "", 0, &it); ok; ok = oidx_next(&it))         \
		for (const T *var = oidx_iter_val(&it); var; var = NULL)

/* Wines without offers, offers without levels, listings without offers. */
static void scan_catalogue(struct shard *sh, struct scan *s)
{
	struct hidx offered, stocked;
	hidx_init(&offered);
	hidx_init(&stocked);
	int oom = 0;
	struct oidx_iter it;
	FOR_ROWS(sh, REC_T_OFFER, struct offer, o, it, ok) {
		if (o->status != OS_WITHDRAWN)
			set_add(&offered, o->wine_id, &oom);
	}
	FOR_ROWS(sh, REC_T_INVENTORY, struct inv_level, l, it, ok) {
		set_add(&stocked, l->offer_id, &oom);
	}
	if (oom) {
		s->oom = 1;
	} else {
		FOR_ROWS(sh, REC_T_WINE, struct wine, w, it, ok) {
			if (!set_has(&offered, w->row.id))
				scan_add(s, CK_WINE_NO_OFFER, w->row.id, NULL, "wine %s (%s) has no offer", w->row.id,
					 wine_status_names[w->status]);
		}
		FOR_ROWS(sh, REC_T_OFFER, struct offer, o, it, ok) {
			if (o->status != OS_WITHDRAWN && !set_has(&stocked, o->row.id))
				scan_add(s, CK_OFFER_NO_STOCK, o->row.id, NULL, "offer %s (%s) has no inventory level",
					 o->row.id, offer_status_names[o->status]);
		}
	}
	FOR_ROWS(sh, REC_T_LISTING, struct listing, l, it, ok) {
		if (l->status == LS_DELISTED)
			continue;
		const struct row *o = hidx_get_untracked(&sh->tables[REC_T_OFFER].by_id, l->offer_id,
							  (uint32_t)strlen(l->offer_id));
		if (!o)
			scan_add(s, CK_LISTING_OFFER_MISSING, l->row.id, NULL, "listing %s names offer %s, which does not exist",
				 l->row.id, l->offer_id);
		else if (((const struct offer *)o)->status == OS_WITHDRAWN)
			scan_add(s, CK_LISTING_OFFER_WITHDRAWN, l->row.id, NULL, "listing %s (%s) sells offer %s, which is withdrawn",
				 l->row.id, listing_status_names[l->status], l->offer_id);
	}
	hidx_free(&offered);
	hidx_free(&stocked);
}

/* Was the order paid (its charge captured, and maybe refunded since)?
 * 1, 0, or -1 when this shard has no such order. */
static int order_paid(struct shard *sh, const char *id, size_t len)
{
	if (!hidx_get_untracked(&sh->tables[REC_T_ORDER].by_id, id, (uint32_t)len))
		return -1;
	char oid[ID_MAX_LEN];
	snprintf(oid, sizeof(oid), "%.*s", (int)len, id);
	enum pay_state ps = pay_state_of(sh, oid);
	return ps == PS_CAPTURED || ps == PS_REFUNDED;
}

/* Rows of `tbl` whose id is "<order id>.<suffix>" (register records,
 * payouts) of an order that is missing or was never paid: one finding per
 * order. */
static void scan_order_children(struct shard *sh, struct scan *s, int tbl, int kind, const char *what)
{
	struct oidx_iter it;
	FOR_ROWS(sh, tbl, struct row, r, it, ok) {
		const char *dot = memchr(r->id, '.', r->id_len);
		size_t len = dot ? (size_t)(dot - r->id) : r->id_len;
		if (len == 0 || len >= ID_MAX_LEN)
			continue;
		int paid = order_paid(sh, r->id, len);
		if (paid != 1) {
			char oid[ID_MAX_LEN];
			snprintf(oid, sizeof(oid), "%.*s", (int)len, r->id);
			scan_add(s, kind, oid, NULL, "%s %.*s: its order %s %s", what, (int)r->id_len, r->id, oid,
				 paid < 0 ? "does not exist" : "was never paid");
		}
	}
}

/* Paid orders' delivered legs against the delivery register. */
static void scan_duty(struct shard *sh, struct scan *s)
{
	struct oidx_iter it, rit;
	const struct oidx *reg = &sh->tables[REC_T_COMPLIANCE].by_order;
	FOR_ROWS(sh, REC_T_ORDER, struct order, o, it, ok) {
		const struct order_state *st = order_state_get(sh, o->row.id, o->row.id_len);
		if (!st || order_paid(sh, o->row.id, o->row.id_len) != 1)
			continue;
		for (unsigned g = 0; g < o->n_legs && g < st->v.n_legs; g++) {
			if (st->v.leg_status[g] != LS_DELIVERED)
				continue;
			char prefix[ID_MAX_LEN + 16], leg[16];
			int pl = snprintf(prefix, sizeof(prefix), "%s.C%u.", o->row.id, g + 1);
			int filed = oidx_seek_ge(reg, prefix, (uint32_t)pl, &rit) &&
				    !strncmp(((const struct row *)oidx_iter_val(&rit))->id, prefix, (size_t)pl);
			if (!filed) {
				snprintf(leg, sizeof(leg), "%u", g + 1);
				scan_add(s, CK_PAID_ORDER_NO_DUTY, o->row.id, leg,
					 "order %s is paid and its leg %u delivered, but no duty is filed for it", o->row.id, g + 1);
			}
		}
	}
	scan_order_children(sh, s, REC_T_COMPLIANCE, CK_DUTY_NO_PAID_ORDER, "register record");
}

/* engine/check.c's violations as findings. */
static void invariant_sink(void *arg, const char *kind, const char *id, const char *text)
{
	int k = kind_of(kind);
	if (k >= 0)
		scan_add(arg, k, id, NULL, "%s", text);
}

static int catalogue_home(const struct shard *sh)
{
	return !sh->smap || sh->cfg.shard_id == 0;
}

/* Every check over this shard's rows into s. */
static void scan_all(struct shard *sh, struct scan *s)
{
	if (catalogue_home(sh))
		scan_catalogue(sh, s);
	scan_duty(sh, s);
	scan_order_children(sh, s, REC_T_PAYOUT, CK_PAYOUT_NO_PAID_ORDER, "payout");
	check_invariants(sh, invariant_sink, s);
}

/* ---- bringing the open set up to date ------------------------------------------------------ */

/* The finding's row document, or its event's payload. */
static size_t finding_doc(struct shard *sh, const struct finding *f, const char *at, struct buf *b)
{
	struct jw w;
	buf_reset(b);
	jw_init(&w, b);
	jw_obj_begin(&w);
	jw_kstr(&w, "id", f->key);
	jw_kstr(&w, "kind", checks_kind_names[f->kind]);
	jw_key(&w, "ids");
	jw_arr_begin(&w);
	jw_str(&w, f->a);
	if (f->b[0])
		jw_str(&w, f->b);
	jw_arr_end(&w);
	jw_kstr(&w, "detail", f->detail);
	jw_kint(&w, "shard_id", (int64_t)sh->cfg.shard_id);
	jw_kint(&w, "lsn", (int64_t)sh->lsn);
	jw_kstr(&w, "flagged_at", at);
	jw_obj_end(&w);
	return b->overflow ? 0 : b->len;
}

/* Stage f's row and its event into the open transaction.  0 or -1. */
static int stage_flag(struct shard *sh, const struct finding *f, const char *at, struct buf *b)
{
	size_t n = finding_doc(sh, f, at, b);
	return !n || txn_put(sh, REC_T_CHECK_FINDING, f->key, strlen(f->key), (const char *)b->data, n) ||
			       txn_event(sh, "pim.reconciliation.flagged", NULL, (const char *)b->data, n)
		       ? -1
		       : 0;
}

/* Store and flag the findings of s not open yet, CHECKS_TXN_BATCH per
 * transaction, each logged once its transaction committed.  Their count;
 * *failed set when a transaction was refused (the rest then waits for the
 * next run). */
static uint64_t flag_new(struct shard *sh, const struct scan *s, const char *at, int *failed)
{
	uint64_t flagged = 0;
	struct buf b;
	buf_init(&b, CHECKS_DOC_MAX);
	for (size_t i = 0; i < s->n && !*failed;) {
		size_t staged[CHECKS_TXN_BATCH];
		unsigned k = 0;
		txn_begin(sh);
		for (; i < s->n && k < CHECKS_TXN_BATCH && !*failed; i++) {
			const struct finding *f = &s->f[i];
			if (table_get(&sh->tables[REC_T_CHECK_FINDING], f->key, strlen(f->key)))
				continue;
			if (stage_flag(sh, f, at, &b))
				*failed = 1;
			else
				staged[k++] = i;
		}
		if (*failed || !k || !txn_commit(sh)) {
			txn_abort(sh);
			*failed |= k > 0;
			continue;
		}
		for (unsigned x = 0; x < k; x++) {
			const struct finding *f = &s->f[staged[x]];
			log_warn("msg=\"consistency check: flagged\" kind=%s ids=%s%s%s detail=\"%s\"", checks_kind_names[f->kind],
				 f->a, f->b[0] ? "," : "", f->b, f->detail);
		}
		flagged += k;
	}
	buf_free(&b);
	return flagged;
}

/* Close the open findings s no longer has, of the kinds s reports: a
 * shard's own run the kinds before CK_FIRST_CLUSTER, the cluster report
 * the others; CHECKS_TXN_BATCH per transaction.  Their count. */
static uint64_t close_gone(struct shard *sh, const struct scan *s, int *failed)
{
	uint64_t closed = 0;
	struct oidx_iter it;
	static char keys[CHECKS_TXN_BATCH][CHECKS_KEY_MAX];
	const struct oidx *open = &sh->tables[REC_T_CHECK_FINDING].by_order;
	int ok = !s->truncated && oidx_seek_ge(open, "", 0, &it);
	while (ok) {
		unsigned k = 0;
		txn_begin(sh);
		/* a delete is applied at the commit: the walk goes on over the rows meanwhile */
		for (; ok && k < CHECKS_TXN_BATCH; ok = oidx_next(&it)) {
			const struct row *r = oidx_iter_val(&it);
			int theirs = (((const struct check_finding *)r)->kind >= CK_FIRST_CLUSTER) == s->cluster;
			if (!theirs || hidx_get_untracked(&s->by_key, r->id, r->id_len) || r->id_len >= CHECKS_KEY_MAX)
				continue;
			memcpy(keys[k], r->id, r->id_len);
			keys[k][r->id_len] = 0;
			if (txn_del(sh, REC_T_CHECK_FINDING, keys[k], r->id_len)) {
				*failed = 1;
				break;
			}
			k++;
		}
		if (*failed || !k || !txn_commit(sh)) {
			txn_abort(sh);
			*failed |= k > 0;
			break;
		}
		for (unsigned x = 0; x < k; x++)
			log_info("msg=\"consistency check: closed (no longer found)\" finding=%s", keys[x]);
		closed += k;
		/* the rows are gone: resume after the last one */
		ok = ok && oidx_seek_ge(open, keys[k - 1], (uint32_t)strlen(keys[k - 1]), &it);
	}
	return closed;
}

static void write_run_row(struct shard *sh, uint64_t runs, uint64_t now_ms, const struct checks_summary *r, int *failed)
{
	char doc[256];
	int n = snprintf(doc, sizeof(doc),
			 "{\"id\":\"" CHECKS_RUN_ID "\",\"runs\":%llu,\"last_run_unix_ms\":%llu,\"last_elapsed_us\":%llu,"
			 "\"last_lsn\":%llu,\"last_findings\":%llu,\"last_open\":%llu}",
			 (unsigned long long)runs, (unsigned long long)now_ms, (unsigned long long)r->elapsed_us,
			 (unsigned long long)r->lsn, (unsigned long long)r->findings, (unsigned long long)r->open);
	txn_begin(sh);
	if (txn_put(sh, REC_T_CHECK_RUN, CHECKS_RUN_ID, strlen(CHECKS_RUN_ID), doc, (size_t)n) || !txn_commit(sh)) {
		txn_abort(sh);
		*failed = 1;
	}
}

/* Open findings per kind into counts[CK_N_KIND]; their total. */
static uint64_t open_counts(struct shard *sh, uint64_t *counts)
{
	uint64_t total = 0;
	memset(counts, 0, CK_N_KIND * sizeof(*counts));
	struct oidx_iter it;
	FOR_ROWS(sh, REC_T_CHECK_FINDING, struct check_finding, f, it, ok) {
		counts[f->kind]++;
		total++;
	}
	return total;
}

/* The operations alert: a log line at error and a summary event. */
static void alert(struct shard *sh, const struct checks_summary *r, const uint64_t *counts, const char *at)
{
	char doc[CHECKS_DOC_MAX], by_kind[CHECKS_DOC_MAX / 2];
	size_t bl = 0;
	by_kind[0] = 0;
	for (int k = 0; k < CK_N_KIND; k++)
		if (counts[k] && bl < sizeof(by_kind))
			bl += (size_t)snprintf(by_kind + bl, sizeof(by_kind) - bl, "%s\"%s\":%llu", bl ? "," : "",
					       checks_kind_names[k], (unsigned long long)counts[k]);
	if (bl >= sizeof(by_kind))
		return; /* cannot happen: CK_N_KIND short names */
	int n = snprintf(doc, sizeof(doc),
			 "{\"kind\":\"summary\",\"shard_id\":%llu,\"lsn\":%llu,\"open\":%llu,\"flagged\":%llu,"
			 "\"closed\":%llu,\"by_kind\":{%s},\"flagged_at\":\"%s\"}",
			 (unsigned long long)sh->cfg.shard_id, (unsigned long long)r->lsn, (unsigned long long)r->open,
			 (unsigned long long)r->flagged, (unsigned long long)r->closed, by_kind, at);
	log_error("msg=\"consistency checks: findings open\" action=\"see the pim.reconciliation.flagged events and "
		  "wm_checks_open_findings\" open=%llu flagged=%llu closed=%llu by_kind={%s}",
		  (unsigned long long)r->open, (unsigned long long)r->flagged, (unsigned long long)r->closed, by_kind);
	if (n <= 0 || (size_t)n >= sizeof(doc))
		return;
	txn_begin(sh);
	if (txn_event(sh, "pim.reconciliation.flagged", NULL, doc, (size_t)n) || !txn_commit(sh))
		txn_abort(sh);
}

/* Bring the open findings up to date with the scan s of the state at LSN
 * out->lsn (out's lsn, findings, elapsed_us and truncated are the scan's):
 * flag what is new, close what is gone, write the run's row, alert. */
static void apply(struct shard *sh, const struct scan *s, struct checks_summary *out)
{
	uint64_t now = wall_ms();
	char at[40];
	fmt_rfc3339_ms(at, now);
	int failed = s->oom;
	if (!failed)
		out->flagged = flag_new(sh, s, at, &failed);
	if (!failed)
		out->closed = close_gone(sh, s, &failed);
	uint64_t counts[CK_N_KIND];
	out->open = open_counts(sh, counts);
	const struct check_run_row *prev =
		(const struct check_run_row *)table_get(&sh->tables[REC_T_CHECK_RUN], CHECKS_RUN_ID, strlen(CHECKS_RUN_ID));
	if (!s->cluster) /* the run's row is the shard's own runs' */
		write_run_row(sh, (prev ? prev->runs : 0) + 1, now, out, &failed);
	out->failed = failed;
	log_info("msg=\"consistency checks run\" lsn=%llu findings=%llu flagged=%llu closed=%llu open=%llu elapsed_us=%llu%s",
		 (unsigned long long)out->lsn, (unsigned long long)out->findings, (unsigned long long)out->flagged,
		 (unsigned long long)out->closed, (unsigned long long)out->open, (unsigned long long)out->elapsed_us,
		 s->truncated ? " truncated=1" : "");
	if (failed)
		log_error("msg=\"consistency checks: the open findings could not be brought up to date (out of memory or "
			  "a refused commit); the next run retries\"");
	if (out->open)
		alert(sh, out, counts, at);
}

/* Scan the state as it is now into s; its LSN and time into out. */
static void scan_now(struct shard *sh, struct scan *s, struct checks_summary *out)
{
	memset(out, 0, sizeof(*out));
	memset(s, 0, sizeof(*s));
	hidx_init(&s->by_key);
	out->lsn = sh->lsn;
	uint64_t t0 = ev_clock_us();
	scan_all(sh, s);
	out->elapsed_us = ev_clock_us() - t0;
	out->findings = s->found;
	out->truncated = s->truncated;
}

void checks_run(struct shard *sh, struct checks_summary *out)
{
	const uint64_t probes = idx_probes; /* see check.c: an operator's walk */
	struct scan s;
	scan_now(sh, &s, out);
	apply(sh, &s, out);
	scan_free(&s);
	idx_probes = probes;
}

/* ---- the background run: a forked child scans, the loop applies --------------------------- */

static pid_t bg_pid;      /* the scanning child, 0 if none */
static uint64_t bg_lsn;   /* the LSN it scans at */

static void bg_path(const struct shard *sh, char *out, size_t n)
{
	snprintf(out, n, "%s/" CHECKS_BG_FILE, sh->cfg.data_dir);
}

/* A finding's text on one line of the child's file: no tab, no newline. */
static void one_line(char *s)
{
	for (; *s; s++)
		if (*s == '\t' || *s == '\n' || *s == '\r')
			*s = ' ';
}

/* The child: scan its copy of the shard (the state at bg_lsn) and write
 * the findings to the file.  The exit status: 0 when the file is whole. */
static int bg_child(struct shard *sh)
{
	struct checks_summary r;
	struct scan s;
	scan_now(sh, &s, &r);
	char path[700];
	bg_path(sh, path, sizeof(path));
	FILE *f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "H\t%llu\t%llu\t%d\t%d\t%llu\n", (unsigned long long)r.lsn, (unsigned long long)s.found,
		s.truncated, s.oom, (unsigned long long)r.elapsed_us);
	for (size_t i = 0; i < s.n; i++) {
		one_line(s.f[i].detail);
		fprintf(f, "F\t%u\t%s\t%s\t%s\n", s.f[i].kind, s.f[i].a, s.f[i].b, s.f[i].detail);
	}
	fputs("E\n", f);
	int bad = ferror(f);
	return fclose(f) || bad ? 1 : 0;
}

int checks_start(struct shard *sh)
{
	if (bg_pid > 0)
		return 1;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		log_error("msg=\"consistency checks: fork failed; the next run retries\" error=\"%s\"", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		/* as the snapshot child (shard.c): dies with the shard, holds none
		 * of its descriptors */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
			_exit(3);
		close_range(3, ~0U, 0);
		_exit(bg_child(sh));
	}
	bg_pid = pid;
	bg_lsn = sh->lsn;
	log_info("msg=\"consistency checks started\" lsn=%llu pid=%d", (unsigned long long)bg_lsn, (int)pid);
	return 0;
}

/* Parse the child's file (its text, NUL-terminated) into s and the scan's
 * figures into out.  0, or -1 when it is not whole. */
static int bg_parse(char *text, struct scan *s, struct checks_summary *out)
{
	unsigned long long lsn, found, elapsed;
	int truncated, oom, whole = 0;
	char *save = NULL, *line = strtok_r(text, "\n", &save);
	if (!line || sscanf(line, "H\t%llu\t%llu\t%d\t%d\t%llu", &lsn, &found, &truncated, &oom, &elapsed) != 5)
		return -1;
	out->lsn = lsn;
	out->findings = found;
	out->elapsed_us = elapsed;
	s->oom = oom;
	while ((line = strtok_r(NULL, "\n", &save))) {
		if (!strcmp(line, "E")) {
			whole = 1;
			break;
		}
		/* F <kind> <a> <b> <detail>: b may be empty */
		char *rest = line, *tag = strsep(&rest, "\t");
		char *k = rest ? strsep(&rest, "\t") : NULL, *a = rest ? strsep(&rest, "\t") : NULL;
		char *b = rest ? strsep(&rest, "\t") : NULL, *end = NULL;
		unsigned long kind = k ? strtoul(k, &end, 10) : CK_N_KIND;
		if (strcmp(tag, "F") || !end || *end || kind >= CK_N_KIND || !a || !a[0] || !b || !rest)
			return -1;
		scan_put(s, (int)kind, a, b[0] ? b : NULL, rest);
	}
	s->truncated = truncated || s->truncated;
	out->truncated = s->truncated;
	return whole ? 0 : -1;
}

int checks_poll(struct shard *sh, struct checks_summary *out)
{
	if (bg_pid <= 0)
		return 0;
	int st;
	pid_t r = waitpid(bg_pid, &st, WNOHANG);
	if (r == 0)
		return 0;
	bg_pid = 0;
	char path[700];
	bg_path(sh, path, sizeof(path));
	memset(out, 0, sizeof(*out));
	if (r < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		log_error("msg=\"consistency checks: the scanning child failed; the next run retries\" status=%d", st);
		unlink(path);
		return -1;
	}
	const struct check_run_row *prev =
		(const struct check_run_row *)table_get(&sh->tables[REC_T_CHECK_RUN], CHECKS_RUN_ID, strlen(CHECKS_RUN_ID));
	if (prev && prev->last_lsn > bg_lsn) {
		/* a run of a later state (POST .../checks/run) was applied meanwhile */
		log_info("msg=\"consistency checks: a later run was applied meanwhile; this one's findings are dropped\" "
			 "lsn=%llu", (unsigned long long)bg_lsn);
		unlink(path);
		return 2;
	}
	FILE *f = fopen(path, "r");
	char *text = malloc(CHECKS_BG_FILE_MAX + 2);
	size_t n = f && text ? fread(text, 1, CHECKS_BG_FILE_MAX + 1, f) : 0;
	int too_big = n > CHECKS_BG_FILE_MAX;
	if (f)
		fclose(f);
	unlink(path);
	struct scan s = {0};
	hidx_init(&s.by_key);
	int rc = -1;
	if (text && n && !too_big) {
		text[n] = 0;
		rc = bg_parse(text, &s, out);
	}
	free(text);
	if (rc) {
		log_error("msg=\"consistency checks: the scanning child's findings are unreadable; the next run retries\" "
			  "file=%s", path);
		scan_free(&s);
		return -1;
	}
	const uint64_t probes = idx_probes;
	apply(sh, &s, out);
	idx_probes = probes;
	scan_free(&s);
	return 1;
}

/* ---- schedule ------------------------------------------------------------------------------- */

int checks_parse_at(const char *s)
{
	if (!strcmp(s, "off"))
		return CHECKS_AT_OFF;
	if (strlen(s) != 5 || s[2] != ':')
		return -1;
	for (int i = 0; i < 5; i++)
		if (i != 2 && (s[i] < '0' || s[i] > '9'))
			return -1;
	int h = (s[0] - '0') * 10 + (s[1] - '0'), m = (s[3] - '0') * 10 + (s[4] - '0');
	return h < 24 && m < 60 ? h * 60 + m : -1;
}

int checks_crossed(int at_min, uint64_t prev_ms, uint64_t now_ms)
{
	if (at_min < 0 || now_ms <= prev_ms)
		return 0;
	/* the at-times of now's day and the day before: one of them is the
	 * last at or before now */
	uint64_t day = now_ms / CHECKS_DAY_MS * CHECKS_DAY_MS, at = (uint64_t)at_min * 60000ULL;
	uint64_t last = day + at <= now_ms ? day + at : (day >= CHECKS_DAY_MS ? day - CHECKS_DAY_MS + at : 0);
	return last > prev_ms && last <= now_ms;
}

void checks_tick(struct shard *sh)
{
	static uint64_t prev_ms;
	static int at = -3; /* not parsed yet */
	struct checks_summary r;
	checks_poll(sh, &r);
	uint64_t now = wall_ms();
	if (at == -3)
		at = checks_parse_at(sh->cfg.checks_at);
	if (prev_ms && checks_crossed(at, prev_ms, now)) {
		log_info("msg=\"consistency checks: the scheduled run\" at=%s", sh->cfg.checks_at);
		checks_start(sh);
	}
	prev_ms = now;
}

/* ---- metrics and routes --------------------------------------------------------------------- */

void checks_metrics(struct shard *sh, struct buf *o)
{
	const uint64_t probes = idx_probes;
	uint64_t counts[CK_N_KIND];
	open_counts(sh, counts);
	idx_probes = probes;
	buf_printf(o, "# HELP wm_checks_open_findings Consistency-check findings open (flagged and still found).\n"
		      "# TYPE wm_checks_open_findings gauge\n");
	for (int k = 0; k < CK_N_KIND; k++)
		buf_printf(o, "wm_checks_open_findings{kind=\"%s\"} %llu\n", checks_kind_names[k],
			   (unsigned long long)counts[k]);
	const struct row *r = hidx_get_untracked(&sh->tables[REC_T_CHECK_RUN].by_id, CHECKS_RUN_ID, strlen(CHECKS_RUN_ID));
	const struct check_run_row *x = (const struct check_run_row *)r;
	buf_printf(o, "# TYPE wm_checks_runs_total counter\nwm_checks_runs_total %llu\n"
		      "# HELP wm_checks_last_run_timestamp_seconds Unix time of the last run (0: none yet).\n"
		      "# TYPE wm_checks_last_run_timestamp_seconds gauge\nwm_checks_last_run_timestamp_seconds %.3f\n"
		      "# HELP wm_checks_last_run_seconds How long the last run's scan held the loop.\n"
		      "# TYPE wm_checks_last_run_seconds gauge\nwm_checks_last_run_seconds %.6f\n",
		   (unsigned long long)(x ? x->runs : 0), x ? (double)x->last_unix_ms / 1000.0 : 0.0,
		   x ? (double)x->last_elapsed_us / 1e6 : 0.0);
}

static void summary_body(struct jw *w, const struct checks_summary *r)
{
	jw_obj_begin(w);
	jw_kint(w, "findings", (int64_t)r->findings);
	jw_kint(w, "flagged", (int64_t)r->flagged);
	jw_kint(w, "closed", (int64_t)r->closed);
	jw_kint(w, "open", (int64_t)r->open);
	jw_kint(w, "elapsed_us", (int64_t)r->elapsed_us);
	jw_kbool(w, "truncated", r->truncated);
	jw_kbool(w, "failed", r->failed);
	jw_obj_end(w);
}

/* POST /v1/admin/checks/run (and /internal/checks/run): run now. */
static void checks_run_route(struct api_ctx *c)
{
	struct checks_summary r;
	checks_run(c->sh, &r);
	c->rs->status = 200;
	summary_body(&c->w, &r);
}

static int kind_match(struct api_ctx *c, const struct row *r, void *arg)
{
	(void)c;
	return ((const struct check_finding *)r)->kind == *(const int *)arg;
}

/* GET /v1/admin/checks/findings: the open findings in id ("<kind>/<ids>")
 * order, cursor-paginated; ?kind= one kind (another value: 400). */
static void findings_list(struct api_ctx *c)
{
	struct api_page pg;
	if (api_page_parse(c, &pg))
		return;
	int kind;
	if (api_query_enum(c, "kind", checks_kind_names, &kind))
		return;
	api_list(c, &c->sh->tables[REC_T_CHECK_FINDING].by_order, NULL, 0, &pg, kind >= 0 ? kind_match : NULL, &kind,
		 NULL);
}

const struct route checks_routes[] = {
	{HTTP_M_POST, "/v1/admin/checks/run", checks_run_route, SC_OPERATOR, ACT_OPERATE,
	 "Run the consistency checks now (operators)", 0},
	{HTTP_M_GET, "/v1/admin/checks/findings", findings_list, SC_OPERATOR, ACT_OPERATE,
	 "The open consistency-check findings (operators)", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};

/* A string member of the report's entry e at i, or NULL. */
static const char *entry_str(const struct json_value *e, uint32_t i)
{
	const struct json_value *v = i < e->len ? &e->u.items[i] : NULL;
	return v && v->type == JSON_STRING ? v->u.str : NULL;
}

/*
 * POST /internal/checks/cluster (the home, from `wm-ctl checks run`): the
 * cross-shard findings of the cluster check, {"truncated": bool,
 * "findings": [[kind, id, id, text], ...]} with kinds from
 * CK_FIRST_CLUSTER on (at most CHECKS_MAX_FINDINGS, ids "" for none),
 * brought up to date as a run's: new ones flagged, open ones of those
 * kinds no longer reported closed (unless truncated).  400 on a body of
 * another form; 200 with the counts.
 */
static void checks_cluster_route(struct api_ctx *c)
{
	const struct json_value *b = api_body(c);
	if (!b)
		return;
	const struct json_value *fs = json_get(b, "findings"), *tr = json_get(b, "truncated");
	if (!fs || fs->type != JSON_ARRAY || fs->len > CHECKS_MAX_FINDINGS || !tr ||
	    (tr->type != JSON_TRUE && tr->type != JSON_FALSE)) {
		api_error(c, 400, "invalid_report", "want {\"truncated\": bool, \"findings\": [[kind, id, id, text], ...]}");
		return;
	}
	struct scan s = {.cluster = 1, .truncated = tr->type == JSON_TRUE};
	hidx_init(&s.by_key);
	for (uint32_t i = 0; i < fs->len; i++) {
		const struct json_value *e = &fs->u.items[i];
		const char *k = e->type == JSON_ARRAY && e->len == 4 ? entry_str(e, 0) : NULL;
		const char *a = k ? entry_str(e, 1) : NULL, *id2 = k ? entry_str(e, 2) : NULL, *t = k ? entry_str(e, 3) : NULL;
		int kind = k ? kind_of(k) : -1;
		if (kind < (int)CK_FIRST_CLUSTER || !a || !a[0] || strlen(a) >= ID_MAX_LEN * 2 || !id2 ||
		    strlen(id2) >= sizeof(((struct finding *)0)->b) || !t) {
			scan_free(&s);
			api_error(c, 400, "invalid_report", "a finding is not [kind, id, id, text] of a cluster kind");
			return;
		}
		s.found += (uint64_t)scan_put(&s, kind, a, id2[0] ? id2 : NULL, t);
	}
	struct checks_summary r = {.lsn = c->sh->lsn, .findings = s.found, .truncated = s.truncated};
	const uint64_t probes = idx_probes;
	apply(c->sh, &s, &r);
	idx_probes = probes;
	scan_free(&s);
	c->rs->status = 200;
	summary_body(&c->w, &r);
}

const struct route checks_internal_routes[] = {
	{HTTP_M_POST, "/internal/checks/run", checks_run_route, SC_PUBLIC, ACT_NONE,
	 "Run this shard's consistency checks now (wm-ctl checks run)", 0},
	{HTTP_M_POST, "/internal/checks/cluster", checks_cluster_route, SC_PUBLIC, ACT_NONE,
	 "The cluster check's cross-shard findings (wm-ctl checks run), at the home", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
