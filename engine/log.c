/*
 * log.c -- logfmt lines on stderr.  One write(2) per line so lines from the
 * WAL thread and the loop thread never interleave mid-line.
 */
#include "engine/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static enum log_level log_min = LOG_INFO;
static const char *const level_names[] = {"debug", "info", "warn", "error"};

void log_set_level(enum log_level lvl) { log_min = lvl; }

unsigned long long wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (unsigned long long)ts.tv_sec * 1000ull + (unsigned long long)ts.tv_nsec / 1000000ull;
}

void fmt_rfc3339_ms(char *out, unsigned long long unix_ms)
{
	time_t s = (time_t)(unix_ms / 1000);
	struct tm tm;
	gmtime_r(&s, &tm);
	char tmp[64];
	snprintf(tmp, sizeof(tmp), "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", (tm.tm_year + 1900) % 10000,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)(unix_ms % 1000));
	memcpy(out, tmp, 25);
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
