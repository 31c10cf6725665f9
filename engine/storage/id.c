/*
 * id.c -- identifier generation (format in id.h).
 */
#include "engine/storage/id.h"

#include <string.h>
#include <sys/random.h>

#include "engine/base/log.h"
#include "net/buf.h"

static const char b32[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/* Each character of b32 -> its value + 1; every other byte 0.  (A table:
 * the strchr it replaces was ~1% of a snapshot load, one id per row.) */
static const uint8_t b32_rev[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8,
	['8'] = 9, ['9'] = 10, ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15,
	['F'] = 16, ['G'] = 17, ['H'] = 18, ['J'] = 19, ['K'] = 20, ['M'] = 21, ['N'] = 22,
	['P'] = 23, ['Q'] = 24, ['R'] = 25, ['S'] = 26, ['T'] = 27, ['V'] = 28, ['W'] = 29,
	['X'] = 30, ['Y'] = 31, ['Z'] = 32
};

/* The value of a base-32 digit, or -1 for any other byte (NUL included). */
static int b32_val(char ch)
{
	return (int)b32_rev[(unsigned char)ch] - 1;
}

void id_clock_init(struct id_clock *c)
{
	memset(c, 0, sizeof(*c));
	if (getrandom(&c->rng, sizeof(c->rng), 0) != sizeof(c->rng))
		c->rng = wall_ms() * 0x9e3779b97f4a7c15ull;
	c->rng |= 1;
}

static uint64_t id_rand(struct id_clock *c)
{
	/* xorshift64*: ids need uniqueness help, not secrecy */
	c->rng ^= c->rng >> 12;
	c->rng ^= c->rng << 25;
	c->rng ^= c->rng >> 27;
	return c->rng * 0x2545f4914f6cdd1dull;
}

static void put_b32(char *out, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--) {
		out[i] = b32[v & 31];
		v >>= 5;
	}
}

size_t id_new(struct id_clock *c, const char *prefix, char *out)
{
	uint64_t now = wall_ms();
	if (now > c->last_ms) {
		c->last_ms = now;
		c->seq = 0;
	} else if (++c->seq >= (1u << 20)) {
		c->last_ms++;
		c->seq = 0;
	}
	size_t pl = strlen(prefix);
	memcpy(out, prefix, pl);
	out[pl] = '_';
	put_b32(out + pl + 1, c->last_ms, 10);
	put_b32(out + pl + 11, c->seq, 4);
	put_b32(out + pl + 15, id_rand(c), 6);
	out[pl + 1 + ID_BODY_LEN] = 0;
	memcpy(c->at, out + pl + 1, ID_CLOCK_AT);
	return pl + 1 + ID_BODY_LEN;
}

static int is_cc(const char *cc) { return cc[0] >= 'A' && cc[0] <= 'Z' && cc[1] >= 'A' && cc[1] <= 'Z'; }

size_t id_new_country(struct id_clock *c, const char *prefix, const char *cc, char *out)
{
	if (!cc || strlen(cc) != 2 || !is_cc(cc)) {
		out[0] = 0;
		return 0;
	}
	char pre[ID_MAX_LEN];
	size_t pl = strlen(prefix);
	if (pl + 3 + ID_BODY_LEN + 1 > ID_MAX_LEN) {
		out[0] = 0;
		return 0;
	}
	memcpy(pre, prefix, pl);
	pre[pl] = '_';
	pre[pl + 1] = cc[0];
	pre[pl + 2] = cc[1];
	pre[pl + 3] = 0;
	return id_new(c, pre, out);
}

int id_country(const char *id, size_t len, char cc_out[3])
{
	cc_out[0] = 0;
	/* ..._CC_<body>: the country sits just before the body */
	if (len < ID_BODY_LEN + 5 || id[len - ID_BODY_LEN - 1] != '_' || id[len - ID_BODY_LEN - 4] != '_')
		return 0;
	const char *cc = id + len - ID_BODY_LEN - 3;
	if (!is_cc(cc))
		return 0;
	cc_out[0] = cc[0];
	cc_out[1] = cc[1];
	cc_out[2] = 0;
	return 1;
}

static int body_decode(const char *body, uint64_t *ms, uint32_t *seq)
{
	uint64_t t = 0, s = 0;
	for (int i = 0; i < ID_BODY_LEN; i++) {
		int v = b32_val(body[i]);
		if (v < 0)
			return -1;
		if (i < 10)
			t = t << 5 | (uint64_t)v;
		else if (i < 14)
			s = s << 5 | (uint64_t)v;
	}
	*ms = t;
	*seq = (uint32_t)s;
	return 0;
}

/* Do the first ID_CLOCK_AT bytes of body sort at or below at? */
static inline int body_at_or_below(const char *body, const char *at)
{
	uint64_t b = buf_be64(body), a = buf_be64(at);
	if (b != a)
		return b < a;
	return buf_be64(body + ID_CLOCK_AT - 8) <= buf_be64(at + ID_CLOCK_AT - 8);
}

/* Every row applied passes its key here (shard.c apply_records), and most
 * keys are ids the clock made, at or below it.  A body that sorts at or
 * below c->at as text is at or below the clock as a value, or is no body
 * (a byte outside the alphabet: the decode would refuse it), so it is
 * passed over without decoding (~250 instructions a key, ~5k an order).
 * Sound because base-32 digits sort as their values (b32 is in ASCII
 * order), and any byte outside b32 that sorts below the clock's digit at
 * the first difference leaves the body undecodable. */
void id_observe(struct id_clock *c, const char *id, size_t len)
{
	/* the body follows the last '_' (a country id has two) */
	if (len < ID_BODY_LEN + 1 || id[len - ID_BODY_LEN - 1] != '_')
		return;
	const char *body = id + len - ID_BODY_LEN;
	if (body_at_or_below(body, c->at))
		return;
	uint64_t ms;
	uint32_t seq;
	if (body_decode(body, &ms, &seq))
		return;
	if (ms > c->last_ms || (ms == c->last_ms && seq > c->seq)) {
		c->last_ms = ms;
		c->seq = seq;
		memcpy(c->at, body, ID_CLOCK_AT);
	}
}

int id_valid(const char *id, size_t len, const char *prefix)
{
	size_t pl = strlen(prefix);
	if (len == pl + 4 + ID_BODY_LEN && !memcmp(id, prefix, pl) && id[pl] == '_' && is_cc(id + pl + 1) &&
	    id[pl + 3] == '_')
		pl += 3; /* "<prefix>_<CC>_<body>" */
	if (len != pl + 1 + ID_BODY_LEN || memcmp(id, prefix, strlen(prefix)) || id[pl] != '_')
		return 0;
	uint64_t ms;
	uint32_t seq;
	return body_decode(id + pl + 1, &ms, &seq) == 0;
}

int id_time_ms(const char *id, size_t len, uint64_t *ms)
{
	uint32_t seq;
	if (len < ID_BODY_LEN + 1 || id[len - ID_BODY_LEN - 1] != '_')
		return -1;
	return body_decode(id + len - ID_BODY_LEN, ms, &seq);
}

size_t id_time_floor(const char *prefix, uint64_t ms, char *out)
{
	size_t pl = strlen(prefix);
	if (pl + 12 > ID_MAX_LEN) {
		out[0] = 0;
		return 0;
	}
	memcpy(out, prefix, pl);
	out[pl] = '_';
	put_b32(out + pl + 1, ms, 10);
	out[pl + 11] = 0;
	return pl + 11;
}
