/*
 * log.h -- structured log lines (logfmt) on stderr, one event per line:
 *   ts=2026-11-21T10:00:00.123Z level=info msg="wal recovered" lsn=42 ...
 * Operators grep and parse them; every line says what happened and what to
 * do about it when it is an error.
 */
#ifndef WM_LOG_H
#define WM_LOG_H

#include <stddef.h>
#include <stdint.h>

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

void log_set_level(enum log_level lvl);
/* The level by its option name (debug|info|warn|error); others are ignored. */
void log_set_level_named(const char *name);
/* fmt is the rest of the line after ts/level, already in key=value form. */
void wm_log(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_info(...) wm_log(LOG_INFO, __VA_ARGS__)
#define log_warn(...) wm_log(LOG_WARN, __VA_ARGS__)
#define log_error(...) wm_log(LOG_ERROR, __VA_ARGS__)

/* RFC 3339 UTC with milliseconds for a unix-ms time into out (>= 25 bytes). */
void fmt_rfc3339_ms(char *out, unsigned long long unix_ms);
/* Parse an RFC 3339 timestamp ("2026-11-21T10:00:00Z", fractions and
 * +hh:mm offsets allowed; leap seconds not) into unix ms.  0 or -1. */
int parse_rfc3339_ms(const char *s, size_t n, long long *unix_ms);
/* A stamp a row holds as a number (an offer's or a level's created_at):
 * s's unix ms when fmt_rfc3339_ms writes exactly s back, else
 * RFC3339_NO_MS (the row then keeps its document: table.h render). */
#define RFC3339_MS_MAX 253402300799999LL /* 9999-12-31T23:59:59.999Z */
#define RFC3339_NO_MS INT64_MIN
int64_t rfc3339_ms_exact(const char *s);
/* A stamp such a row may hold: RFC3339_NO_MS or 0..RFC3339_MS_MAX. */
static inline int rfc3339_ms_storable(int64_t ms) { return ms == RFC3339_NO_MS || (ms >= 0 && ms <= RFC3339_MS_MAX); }
/* fmt_rfc3339_ms for ms in 0..RFC3339_MS_MAX, else "" (out >= 25 bytes). */
void fmt_rfc3339_ms_or_empty(int64_t ms, char *out);
/* Wall clock in unix milliseconds.  Between wall_hold() and wall_release()
 * on the calling thread, every call answers the first call's reading: a
 * request's timestamps and ids are one instant (an order read the clock
 * ~40 times, each a vDSO call of ~45 ns on this machine kind). */
unsigned long long wall_ms(void);
/* Start holding (the next wall_ms reads the clock, later ones repeat it). */
void wall_hold(void);
/* Stop holding: every wall_ms reads the clock again. */
void wall_release(void);

#endif
