/*
 * id.h -- opaque, type-prefixed, time-ordered identifiers.
 *
 *   <prefix>_<10 chars ms time><4 chars sequence><6 chars random>
 *
 * in Crockford base32 (0-9, A-Z without I L O U), so that ids sort by
 * creation time as plain byte strings: the ordered index over ids is also
 * the creation-time order, which is what cursor pagination walks.  Within
 * one millisecond the sequence increments; the clock never goes backwards
 * (it is advanced past every id seen during recovery, see id_observe), so
 * ids stay unique and ordered across restarts and wall-clock steps.
 */
#ifndef WM_ID_H
#define WM_ID_H

#include <stddef.h>
#include <stdint.h>

#define ID_BODY_LEN 20
#define ID_MAX_LEN 40 /* prefix (<= 16) + '_' [+ CC + '_'] + body + NUL, with room */

struct id_clock {
	uint64_t last_ms;
	uint32_t seq;
	uint64_t rng;
	/* A lower bound of (last_ms, seq) as the first ID_CLOCK_AT characters
	 * of a body (base 32, which sort as their values do): id_new and
	 * id_observe keep it exact, and a zeroed clock's is below any body.
	 * id_observe passes over a body at or below it without decoding. */
	char at[14];
};
#define ID_CLOCK_AT 14

void id_clock_init(struct id_clock *c);
/* Write "<prefix>_<body>" into out (>= ID_MAX_LEN bytes); returns length. */
size_t id_new(struct id_clock *c, const char *prefix, char *out);
/*
 * Country-owned records (DESIGN.md 2: their ids embed the owner's country):
 * "<prefix>_<CC>_<body>", CC two upper-case ASCII letters, the body as
 * above (so within one prefix and country ids still sort by creation
 * time).  cc must be two letters A-Z; returns the length, or 0 (out[0] =
 * NUL) when it is not.
 */
size_t id_new_country(struct id_clock *c, const char *prefix, const char *cc, char *out);
/* The country of a "<prefix>_<CC>_<body>" id into cc_out[3]: 1, or 0 (and
 * "") when the id carries none. */
int id_country(const char *id, size_t len, char cc_out[3]);
/* Advance the clock past an existing id (any prefix); ignores other text. */
void id_observe(struct id_clock *c, const char *id, size_t len);
/* True if `id` has the given prefix and a well-formed body, with or
 * without an embedded country ("<prefix>_<CC>_<body>"). */
int id_valid(const char *id, size_t len, const char *prefix);

/* The creation time (ms since the epoch) of any well-formed id into *ms:
 * 0, or -1 when the id has no well-formed body. */
int id_time_ms(const char *id, size_t len, uint64_t *ms);
/* "<prefix>_<ms in 10 base32 chars>" into out (>= ID_MAX_LEN bytes): a
 * key that sorts before every id of prefix made at ms or later and after
 * every one made earlier (country-less ids).  The length, or 0. */
size_t id_time_floor(const char *prefix, uint64_t ms, char *out);

#endif
