/*
 * webhook_retry.h -- when a webhook delivery is tried again, and what an
 * answer means (issue 18 item 2).
 *
 * Why as data: the schedule is the one Svix publishes and partners expect
 * (attempt 1 immediately, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h
 * after the previous attempt: 8 attempts over about 28 hours), so it is a
 * table a reader can check against that list, not arithmetic.  Jitter
 * (+-WH_JITTER_PERMILLE of each delay) spreads the retries of a burst that
 * failed together; its randomness comes from the caller, so tests are
 * deterministic and a durable queue can record the value it drew.
 *
 * Classification: a 2xx status is delivered; 410 Gone means the endpoint
 * is gone (the caller disables it, no retry); any other status, a
 * transport error and a time-out are retried.  After the last attempt the
 * message is dead-lettered.  All times are integer milliseconds.
 */
#ifndef WM_WEBHOOK_RETRY_H
#define WM_WEBHOOK_RETRY_H

#include <stddef.h>
#include <stdint.h>

#define WH_ATTEMPTS 8            /* attempts in all, the first included */
#define WH_JITTER_PERMILLE 100   /* each delay varies by at most +-10 % */

/* wh_schedule_s[i]: seconds between attempt i and attempt i + 1 (0-based:
 * [0] is the delay before the first attempt, 0 = immediately). */
extern const uint32_t wh_schedule_s[WH_ATTEMPTS];

enum wh_class {
	WH_CLASS_DELIVERED = 0, /* 2xx */
	WH_CLASS_GONE = 1,      /* 410: disable the endpoint, do not retry */
	WH_CLASS_RETRY = 2,     /* any other status, transport error, time-out */
};

enum wh_next {
	WH_NEXT_DONE = 0,       /* delivered: nothing more to do */
	WH_NEXT_DISABLE = 1,    /* the endpoint is gone */
	WH_NEXT_RETRY = 2,      /* try again at *retry_at_ms */
	WH_NEXT_DEAD = 3,       /* the last attempt failed: dead-letter queue */
};

/* The class of an answer: transport_ok = 0 for a transport error or a
 * time-out (status is then ignored), else the HTTP status (100..599; a
 * status outside that range is retried). */
enum wh_class wh_classify(int transport_ok, long status);

/* The delay in ms before attempt number `attempt` (1-based, 1..WH_ATTEMPTS)
 * with jitter: wh_schedule_s[attempt - 1] * 1000 moved by
 * (rnd mod (2 * span + 1)) - span, span = delay * WH_JITTER_PERMILLE / 1000
 * (so the first attempt, delay 0, is always immediate).  -1 for an attempt
 * outside 1..WH_ATTEMPTS. */
int64_t wh_delay_ms(unsigned attempt, uint64_t rnd);

/* What follows attempt number attempts_made (1-based) that ended with
 * class c at now_ms: DONE, DISABLE, RETRY with *retry_at_ms = now_ms +
 * wh_delay_ms(attempts_made + 1, rnd), or DEAD when attempts_made >=
 * WH_ATTEMPTS.  attempts_made == 0 (nothing tried yet, c ignored) gives RETRY
 * at now_ms: the first attempt is immediate.  retry_after_ms > 0 (the
 * answer's Retry-After, see wh_http_result) moves a RETRY to no earlier
 * than now_ms + retry_after_ms: the receiver asked us to slow down. */
enum wh_next wh_after_attempt(enum wh_class c, unsigned attempts_made, int64_t now_ms, uint64_t rnd,
			      int64_t retry_after_ms, int64_t *retry_at_ms);

#endif
