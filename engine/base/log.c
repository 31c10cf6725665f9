/*
 * log.c -- logfmt lines on stderr.  One write(2) per line so lines from the
 * WAL thread and the loop thread never interleave mid-line.
 */
#include "engine/base/log.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static enum log_level log_min = LOG_INFO;
static const char *const level_names[] = {"debug", "info", "warn", "error"};

void log_set_level(enum log_level lvl) { log_min = lvl; }

/* The calling thread's hold (wall_hold): 0 off, 1 on and not read yet, 2
 * on with held_ms read.  Per thread: only the thread that holds repeats. */
static _Thread_local int hold;
static _Thread_local unsigned long long held_ms;

static unsigned long long wall_read(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (unsigned long long)ts.tv_sec * 1000ull + (unsigned long long)ts.tv_nsec / 1000000ull;
}

unsigned long long wall_ms(void)
{
	if (hold == 2)
		return held_ms;
	if (hold == 0)
		return wall_read();
	held_ms = wall_read();
	hold = 2;
	return held_ms;
}

void wall_hold(void) { hold = 1; }

void wall_release(void) { hold = 0; }

/* n decimal digits of v (zero-padded, the high ones dropped) at p. */
static void put_digits(char *p, unsigned v, int n)
{
	while (n-- > 0) {
		p[n] = (char)('0' + v % 10);
		v /= 10;
	}
}

/* Every event and state row carries a timestamp: the calendar part of a
 * second is computed once per thread and kept in a few slots, the rest is
 * digits (no printf).  Several slots, not one: a request formats "now" and
 * the stored times of the rows it reads (a level's updated_at) in turn, and
 * with a single slot they evicted each other -- gmtime_r ran ~20 times per
 * order (issue 15). */
#define RFC3339_SLOTS 4

void fmt_rfc3339_ms(char *out, unsigned long long unix_ms)
{
	static _Thread_local struct {
		unsigned long long s; /* ~0: empty */
		char day[20];         /* "YYYY-MM-DDTHH:MM:SS" */
	} slot[RFC3339_SLOTS] = {{~0ull, ""}, {~0ull, ""}, {~0ull, ""}, {~0ull, ""}};
	static _Thread_local unsigned next;
	unsigned long long sec = unix_ms / 1000;
	unsigned i = 0;
	while (i < RFC3339_SLOTS && slot[i].s != sec)
		i++;
	if (i == RFC3339_SLOTS) {
		i = next++ % RFC3339_SLOTS; /* the oldest filled */
		char *day = slot[i].day;
		time_t s = (time_t)sec;
		struct tm tm;
		gmtime_r(&s, &tm);
		put_digits(day, (unsigned)((tm.tm_year + 1900) % 10000), 4);
		day[4] = '-';
		put_digits(day + 5, (unsigned)tm.tm_mon + 1, 2);
		day[7] = '-';
		put_digits(day + 8, (unsigned)tm.tm_mday, 2);
		day[10] = 'T';
		put_digits(day + 11, (unsigned)tm.tm_hour, 2);
		day[13] = ':';
		put_digits(day + 14, (unsigned)tm.tm_min, 2);
		day[16] = ':';
		put_digits(day + 17, (unsigned)tm.tm_sec, 2);
		slot[i].s = sec;
	}
	memcpy(out, slot[i].day, 19);
	out[19] = '.';
	put_digits(out + 20, (unsigned)(unix_ms % 1000), 3);
	out[23] = 'Z';
	out[24] = 0;
}

void wm_log(enum log_level lvl, const char *fmt, ...)
{
	if (lvl < log_min)
		return;
	char line[2048];
	char ts[32];
	fmt_rfc3339_ms(ts, wall_ms());
	int n = snprintf(line, sizeof(line), "ts=%s level=%s ", ts, level_names[lvl]);
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
	if (len > sizeof(line) - 2)
		len = sizeof(line) - 2;
	line[len++] = '\n';
	ssize_t w = write(STDERR_FILENO, line, len);
	(void)w;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static int digits(const char *s, int n, int *out)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

int parse_rfc3339_ms(const char *s, size_t n, long long *unix_ms)
{
	static const unsigned char mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int y, mo, d, h, mi, sec, ms = 0;
	if (n < 20 || n > 35 || digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &mo) || s[7] != '-' ||
	    digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') || digits(s + 11, 2, &h) || s[13] != ':' ||
	    digits(s + 14, 2, &mi) || s[16] != ':' || digits(s + 17, 2, &sec))
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || sec > 59)
		return -1;
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (mo == 2 && d == 29 && !leap)
		return -1;
	size_t i = 19;
	if (i < n && s[i] == '.') {
		size_t k = ++i;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == k || i - k > 9)
			return -1;
		for (size_t j = 0; j < 3; j++)
			ms = ms * 10 + (k + j < i ? s[k + j] - '0' : 0);
	}
	int off = 0;
	if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
		i++;
	} else if (i + 6 == n && (s[i] == '+' || s[i] == '-')) {
		int oh, om;
		if (digits(s + i + 1, 2, &oh) || s[i + 3] != ':' || digits(s + i + 4, 2, &om) || oh > 23 || om > 59)
			return -1;
		off = (oh * 60 + om) * (s[i] == '+' ? 1 : -1);
		i += 6;
	} else {
		return -1;
	}
	if (i != n)
		return -1;
	int64_t days = days_from_civil(y, (unsigned)mo, (unsigned)d);
	*unix_ms = (((days * 24 + h) * 60 + mi - off) * 60 + sec) * 1000LL + ms;
	return 0;
}

void log_set_level_named(const char *name)
{
	static const char *const lv[] = {"debug", "info", "warn", "error"};
	for (int i = 0; i < 4; i++)
		if (!strcmp(name, lv[i]))
			log_set_level((enum log_level)i);
}

int64_t rfc3339_ms_exact(const char *s)
{
	long long ms;
	char back[32];
	size_t n = strlen(s);
	if (parse_rfc3339_ms(s, n, &ms) || ms < 0 || ms > RFC3339_MS_MAX)
		return RFC3339_NO_MS;
	fmt_rfc3339_ms(back, (unsigned long long)ms);
	return strcmp(back, s) ? RFC3339_NO_MS : ms;
}

void fmt_rfc3339_ms_or_empty(int64_t ms, char *out)
{
	if (ms < 0 || ms > RFC3339_MS_MAX)
		out[0] = 0;
	else
		fmt_rfc3339_ms(out, (unsigned long long)ms);
}
