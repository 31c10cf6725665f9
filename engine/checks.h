/*
 * checks.h -- the nightly consistency checks (spec 1 item 9; the why in
 * checks.c):
 *
 *   POST /v1/admin/checks/run     run the checks now; the run's summary (operator)
 *   GET  /v1/admin/checks/findings the open findings, cursor-paginated, ?kind= (operator)
 *   POST /internal/checks/run     the same for `wm-ctl checks run` (cluster, signed)
 *   POST /internal/checks/cluster `wm-ctl checks run`'s cross-shard findings, to the home
 *
 * plus a run every day at --checks-at HH:MM (UTC) from the tick, and the
 * wm_checks_* lines of /metrics.
 */
#ifndef WM_CHECKS_H
#define WM_CHECKS_H

#include <stdint.h>

#include "engine/edge/route.h"
#include "engine/storage/shard.h"
#include "net/buf.h"

#define CHECKS_MAX_FINDINGS 10000u /* findings one run records; past it the run is `truncated` */
#define CHECKS_KIND_MAX 32u        /* longest kind name, with its NUL */
#define CHECKS_DETAIL_MAX 240u     /* a finding's line of text */
#define CK_FIRST_CLUSTER CK_HOLD_LEG_MISMATCH /* kinds from here on are the cluster report's */

/* The kinds a run reports, in the order of checks_kind_names (and of the
 * per-kind counts of /metrics). */
enum checks_kind {
	CK_WINE_NO_OFFER,          /* a wine no offer (other than withdrawn) sells */
	CK_OFFER_NO_STOCK,         /* a live offer with no inventory level at all */
	CK_LISTING_OFFER_MISSING,  /* a listing whose offer does not exist */
	CK_LISTING_OFFER_WITHDRAWN,/* a listing (not delisted) whose offer is withdrawn */
	CK_PAID_ORDER_NO_DUTY,     /* a paid order's delivered leg without its delivery register record */
	CK_DUTY_NO_PAID_ORDER,     /* register records of an order that is missing or was never paid */
	CK_PAYOUT_NO_PAID_ORDER,   /* payouts of an order that is missing or was never paid */
	CK_STOCK_INVARIANT,        /* a level against its holds and its history (engine/check.c) */
	CK_LEDGER_INVARIANT,       /* an order against its charge (engine/check.c) */
	/* the cross-shard half, reported by `wm-ctl checks run` to the home
	 * (POST /internal/checks/cluster): no shard's own run finds or closes
	 * them */
	CK_HOLD_LEG_MISMATCH,      /* a COMMITTED hold and its order's leg disagree (ids: hold, order) */
	CK_PREPARED_WITHOUT_TXN,   /* a PREPARED hold past the limit whose transaction is not in progress (ids: txn, shard) */
	CK_N_KIND
};
extern const char *const checks_kind_names[]; /* NULL-terminated */

/* What a run did (also the body of POST .../checks/run). */
struct checks_summary {
	uint64_t lsn;        /* the state the run read: every row up to this LSN */
	uint64_t findings;   /* found by this run */
	uint64_t flagged;    /* of them new: flagged (an event each) */
	uint64_t closed;     /* open findings this run no longer found */
	uint64_t open;       /* open after the run */
	uint64_t elapsed_us; /* the scan's wall time */
	int truncated;       /* more than CHECKS_MAX_FINDINGS were found */
	int failed;          /* out of memory or a commit refused: the open set was not updated */
};

/*
 * Run every check over this shard's rows now, then bring the open findings
 * up to date in transactions of this shard: each finding not open yet is
 * stored and flagged (one `pim.reconciliation.flagged` event and a log
 * line), each open one no longer found is closed (its row deleted, logged);
 * then the run's row.  When any finding is open after the run, an
 * operations alert: a log line at error and a `pim.reconciliation.flagged`
 * event of kind "summary".  Fills *out.
 */
void checks_run(struct shard *sh, struct checks_summary *out);

/*
 * The background run (the schedule's): fork a child that scans its copy of
 * the shard -- the state at this LSN, while the loop goes on -- and writes
 * the findings to <data_dir>/checks-run.tmp.  0 started, 1 one is running
 * already, -1 the fork failed (logged).
 */
int checks_start(struct shard *sh);
/* Reap the child when it is done (the tick) and apply its findings as
 * checks_run does, into *out: 1 applied, 2 dropped (a run of a later
 * state was applied meanwhile: its view is newer), -1 the child failed or
 * its file is unreadable (logged; the next run retries), 0 nothing to reap
 * (none running, or still scanning). */
int checks_poll(struct shard *sh, struct checks_summary *out);

/* "HH:MM" (UTC) as minutes after midnight, CHECKS_AT_OFF for "off", or -1
 * when s is neither. */
#define CHECKS_AT_OFF (-2)
int checks_parse_at(const char *s);

/* Did the wall clock pass at_min (minutes after midnight UTC, >= 0) in
 * (prev_ms, now_ms]?  1 or 0.  (The tick's schedule.) */
int checks_crossed(int at_min, uint64_t prev_ms, uint64_t now_ms);

/* The tick: a run when the clock passes --checks-at. */
void checks_tick(struct shard *sh);

/* The wm_checks_* lines of /metrics: open findings per kind, runs, the last
 * run's time and duration. */
void checks_metrics(struct shard *sh, struct buf *o);

extern const struct table_ops checks_finding_table_ops; /* REC_T_CHECK_FINDING */
extern const struct table_ops checks_run_table_ops;     /* REC_T_CHECK_RUN */
extern const struct route checks_routes[];
extern const struct route checks_internal_routes[];

#endif
