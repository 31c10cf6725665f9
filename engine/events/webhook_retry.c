/*
 * webhook_retry.c -- the Svix retry schedule with jitter and the
 * classification of answers (contract in webhook_retry.h).
 *
 * Why integer milliseconds: the result is stored and compared as a time;
 * no floating point means the same rnd gives the same time everywhere, and
 * the bounds (delay +- 10 %) are exact, so tests can assert them at the
 * edge.
 */
#include "engine/events/webhook_retry.h"

const uint32_t wh_schedule_s[WH_ATTEMPTS] = {
	0,          /* attempt 1: immediately */
	5,          /* attempt 2: 5 seconds */
	5 * 60,     /* attempt 3: 5 minutes */
	30 * 60,    /* attempt 4: 30 minutes */
	2 * 3600,   /* attempt 5: 2 hours */
	5 * 3600,   /* attempt 6: 5 hours */
	10 * 3600,  /* attempt 7: 10 hours */
	10 * 3600,  /* attempt 8: 10 hours */
};

enum wh_class wh_classify(int transport_ok, long status)
{
	if (!transport_ok)
		return WH_CLASS_RETRY;
	if (status >= 200 && status <= 299)
		return WH_CLASS_DELIVERED;
	if (status == 410)
		return WH_CLASS_GONE;
	return WH_CLASS_RETRY;
}

int64_t wh_delay_ms(unsigned attempt, uint64_t rnd)
{
	if (attempt < 1 || attempt > WH_ATTEMPTS)
		return -1;
	int64_t base = (int64_t)wh_schedule_s[attempt - 1] * 1000;
	int64_t span = base * WH_JITTER_PERMILLE / 1000;
	int64_t off = (int64_t)(rnd % (uint64_t)(2 * span + 1)) - span;
	return base + off;
}

enum wh_next wh_after_attempt(enum wh_class c, unsigned attempts_made, int64_t now_ms, uint64_t rnd,
			      int64_t retry_after_ms, int64_t *retry_at_ms)
{
	if (attempts_made > 0 && c == WH_CLASS_DELIVERED)
		return WH_NEXT_DONE;
	if (attempts_made > 0 && c == WH_CLASS_GONE)
		return WH_NEXT_DISABLE;
	if (attempts_made >= WH_ATTEMPTS)
		return WH_NEXT_DEAD;
	int64_t at = now_ms + wh_delay_ms(attempts_made + 1, rnd);
	if (retry_after_ms > 0 && at < now_ms + retry_after_ms)
		at = now_ms + retry_after_ms;
	*retry_at_ms = at;
	return WH_NEXT_RETRY;
}
