/*
 * test_engine_units.c -- pure engine pieces: ids, ISO tables, records,
 * cursors (base64url), configuration parsing, metrics rendering.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "engine/edge/api.h"
#include "engine/base/config.h"
#include "engine/storage/id.h"
#include "engine/base/iso.h"
#include "engine/base/log.h"
#include "engine/base/metrics.h"
#include "engine/storage/record.h"
#include "tests/wm_test.h"

WM_TEST(ids, time_ordered_unique_and_valid)
{
	struct id_clock c;
	id_clock_init(&c);
	char prev[ID_MAX_LEN] = "", cur[ID_MAX_LEN];
	for (int i = 0; i < 20000; i++) {
		size_t n = id_new(&c, "ptn", cur);
		cr_assert_eq(n, 4 + ID_BODY_LEN);
		cr_assert(id_valid(cur, n, "ptn"));
		cr_assert_gt(strcmp(cur, prev), 0, "ids strictly increase: %s after %s", cur, prev);
		strcpy(prev, cur);
	}
	cr_assert_not(id_valid(cur, strlen(cur), "wine"), "wrong prefix");
	cur[6] = 'U'; /* not in Crockford base32 */
	cr_assert_not(id_valid(cur, strlen(cur), "ptn"));
}

WM_TEST(ids, time_floor_sorts_between_the_ids_of_neighbouring_milliseconds)
{
	/* "evt_" + 10 base32 digits of 1000 ms: 1000 = 31*32 + 8 -> "00000000Z8" */
	char f[ID_MAX_LEN];
	cr_assert_eq(id_time_floor("evt", 1000, f), 14);
	cr_assert_str_eq(f, "evt_00000000Z8");
	const char *at = "evt_00000000Z80000000000", *before = "evt_00000000Z7ZZZZZZZZZZ";
	cr_assert_lt(strcmp(f, at), 0);
	cr_assert_gt(strcmp(f, before), 0);
	uint64_t ms = 0;
	cr_assert_eq(id_time_ms(at, strlen(at), &ms), 0);
	cr_assert_eq(ms, 1000);
	const char *cid = "loc_FR_0000000010AAAA000000";
	cr_assert_eq(id_time_ms(cid, strlen(cid), &ms), 0);
	cr_assert_eq(ms, 32, "the body after the country: '1' then '0' is 32 ms");
	cr_assert_eq(id_time_ms("evt_x", 5, &ms), -1);
	cr_assert_eq(id_time_ms("evt_0000000U00AAAA000000", 24, &ms), -1, "U is not Crockford base32");
	/* a prefix that leaves no room is refused */
	cr_assert_eq(id_time_floor("abcdefghijklmnopqrstuvwxyzabcdef", 1, f), 0);
	cr_assert_eq(f[0], 0);
	/* ids made now sort after the floor of a millisecond before */
	struct id_clock c;
	id_clock_init(&c);
	char id[ID_MAX_LEN];
	size_t n = id_new(&c, "evt", id);
	cr_assert_eq(id_time_ms(id, n, &ms), 0);
	id_time_floor("evt", ms, f);
	cr_assert_lt(strcmp(f, id), 0);
	id_time_floor("evt", ms + 1, f);
	cr_assert_gt(strcmp(f, id), 0);
}

WM_TEST(ids, country_ids_embed_the_country_and_stay_ordered)
{
	struct id_clock c;
	id_clock_init(&c);
	char prev[ID_MAX_LEN] = "", cur[ID_MAX_LEN], cc[3];
	for (int i = 0; i < 5000; i++) {
		size_t n = id_new_country(&c, "loc", "FR", cur);
		cr_assert_eq(n, 7 + ID_BODY_LEN);
		cr_assert_eq(strncmp(cur, "loc_FR_", 7), 0, "%s", cur);
		cr_assert(id_valid(cur, n, "loc"));
		cr_assert(id_country(cur, n, cc));
		cr_assert_str_eq(cc, "FR");
		cr_assert_gt(strcmp(cur, prev), 0, "ids strictly increase: %s after %s", cur, prev);
		strcpy(prev, cur);
	}
	cr_assert_not(id_valid(cur, strlen(cur), "inv"));
	cr_assert_eq(id_new_country(&c, "loc", "fr", cur), 0);
	cr_assert_eq(cur[0], 0);
	cr_assert_eq(id_new_country(&c, "loc", "FRA", cur), 0);
	/* a plain id carries no country */
	size_t n = id_new(&c, "loc", cur);
	cr_assert_not(id_country(cur, n, cc));
	cr_assert_eq(cc[0], 0);
	cr_assert(id_valid(cur, n, "loc"));
	/* observe reads the body of a country id */
	const char *future = "loc_DE_ZZZZZZZZZY0000000000";
	id_observe(&c, future, strlen(future));
	n = id_new_country(&c, "loc", "IT", cur);
	cr_assert_gt(strcmp(cur + 7, future + 7), 0, "%s after %s", cur, future);
}

WM_TEST(ids, every_byte_outside_the_alphabet_is_refused_in_every_position)
{
	static const char alphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
	struct id_clock c;
	id_clock_init(&c);
	char cur[ID_MAX_LEN];
	size_t n = id_new(&c, "ptn", cur);
	for (size_t pos = 4; pos < n; pos++) {
		for (int b = 0; b < 256; b++) {
			char t[ID_MAX_LEN];
			memcpy(t, cur, n + 1);
			t[pos] = (char)b;
			int in = b != 0 && strchr(alphabet, b) != NULL;
			cr_assert_eq(id_valid(t, n, "ptn"), in, "byte 0x%02x at %zu", b, pos);
		}
	}
	/* observe ignores a body with a byte outside the alphabet */
	static const unsigned char bad[] = { 0x00, 'U', 'I', 'L', 'O', 'a', 'z', 0x80, 0xff, '_' };
	for (size_t i = 0; i < sizeof(bad); i++) {
		char future[] = "ptn_ZZZZZZZZZZ0000000000";
		future[9] = (char)bad[i];
		struct id_clock d = c;
		id_observe(&d, future, sizeof(future) - 1);
		cr_assert_eq(d.last_ms, c.last_ms, "byte 0x%02x moved the clock", bad[i]);
		cr_assert_eq(d.seq, c.seq);
	}
	/* and decodes a valid one: every digit's value in the highest place */
	for (size_t v = 0; v < 32; v++) {
		char future[] = "ptn_00000000000000000000";
		future[4] = alphabet[v];
		struct id_clock d = { 0 };
		id_observe(&d, future, sizeof(future) - 1);
		cr_assert_eq(d.last_ms, (uint64_t)v << 45, "digit %c", alphabet[v]);
	}
}

WM_TEST(ids, observe_moves_clock_past_recovered_ids)
{
	struct id_clock c;
	id_clock_init(&c);
	/* an id from far in the future (clock stepped back since) */
	const char *future = "ptn_ZZZZZZZZZZ0000000000";
	id_observe(&c, future, strlen(future));
	char next[ID_MAX_LEN];
	id_new(&c, "ptn", next);
	cr_assert_gt(strcmp(next, future), 0, "%s must sort after %s", next, future);
	id_observe(&c, "garbage", 7); /* ignored */
}

/* The reference id_observe: decode the whole body, move the clock when
 * the body is valid and after it. */
static void observe_ref(uint64_t *ms, uint32_t *seq, const char *body)
{
	static const char alphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
	uint64_t t = 0, s = 0;
	for (int i = 0; i < ID_BODY_LEN; i++) {
		const char *p = body[i] ? strchr(alphabet, body[i]) : NULL;
		if (!p)
			return;
		uint64_t v = (uint64_t)(p - alphabet);
		if (i < 10)
			t = t << 5 | v;
		else if (i < 14)
			s = s << 5 | v;
	}
	if (t > *ms || (t == *ms && s > *seq)) {
		*ms = t;
		*seq = (uint32_t)s;
	}
}

/* id_observe passes over a body at or below the clock's text without
 * decoding it (id.c): ids at, just below and just above the clock, with
 * bytes outside the alphabet anywhere (the aliases I, L, O, U, lower case,
 * NUL, high bytes), move the clock exactly as decoding every body does. */
WM_TEST(ids, observe_moves_the_clock_exactly_as_decoding_would)
{
	static const char alphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
	static const unsigned char odd[] = {0x00, 'I', 'L', 'O', 'U', 'a', 'z', '0' - 1, 'Z' + 1, 0x80, 0xff, '_'};
	struct id_clock c;
	id_clock_init(&c);
	char id[ID_MAX_LEN];
	size_t n = id_new(&c, "evt", id);
	uint32_t rnd = 12345;
	char top[ID_BODY_LEN]; /* the greatest valid body seen: the clock's own or observed */
	memcpy(top, id + n - ID_BODY_LEN, ID_BODY_LEN);
	for (int it = 0; it < 200000; it++) {
		rnd = rnd * 1103515245u + 12345u;
		char t[ID_MAX_LEN];
		memcpy(t, id, n + 1);
		char *body = t + n - ID_BODY_LEN;
		int changes = 1 + (int)(rnd >> 28) % 3;
		for (int k = 0; k < changes; k++) {
			rnd = rnd * 1103515245u + 12345u;
			int pos = (int)(rnd >> 8) % ID_BODY_LEN;
			/* mostly the clock's own part, where the skip decides */
			if ((rnd >> 20) % 4)
				pos %= ID_CLOCK_AT;
			body[pos] = (rnd >> 16) % 5 ? alphabet[(rnd >> 4) % 32] : (char)odd[(rnd >> 4) % sizeof(odd)];
		}
		uint64_t ms = c.last_ms;
		uint32_t seq = c.seq;
		observe_ref(&ms, &seq, body);
		if (ms != c.last_ms || seq != c.seq)
			memcpy(top, body, ID_BODY_LEN);
		id_observe(&c, t, n);
		cr_assert_eq(c.last_ms, ms, "iteration %d: %.*s", it, (int)n, t);
		cr_assert_eq(c.seq, seq, "iteration %d: %.*s", it, (int)n, t);
		if (it % 64 == 0) { /* the clock moves on now and then */
			n = id_new(&c, "evt", id);
			cr_assert_gt(memcmp(id + n - ID_BODY_LEN, top, ID_CLOCK_AT), 0, "%s after %.20s", id, top);
			memcpy(top, id + n - ID_BODY_LEN, ID_BODY_LEN);
		}
	}
}

WM_TEST(iso, countries_and_currencies)
{
	cr_assert_eq(iso_country_count(), 249);
	cr_assert(iso_country_valid("FR", 2));
	cr_assert(iso_country_valid("ZW", 2));
	cr_assert(iso_country_valid("AD", 2));
	cr_assert_not(iso_country_valid("fr", 2));
	cr_assert_not(iso_country_valid("UK", 2), "UK is not the ISO code (GB is)");
	cr_assert_not(iso_country_valid("FRA", 3));
	cr_assert_eq(iso_currency_minor("EUR", 3), 2);
	cr_assert_eq(iso_currency_minor("JPY", 3), 0);
	cr_assert_eq(iso_currency_minor("BHD", 3), 3);
	cr_assert_eq(iso_currency_minor("EURO", 4), -1);
	cr_assert_eq(iso_currency_minor("XXX", 3), -1);
}

WM_TEST(records, round_trip_and_malformed)
{
	struct buf b;
	buf_init(&b, 0);
	cr_assert_eq(rec_encode(&b, REC_PUT, REC_T_PARTNER, 1, "ptn_1", 5, "{\"a\":1}", 7), 0);
	cr_assert_eq(rec_encode(&b, REC_DEL, REC_T_EVENT, 1, "evt_1", 5, "", 0), 0);
	size_t off = 0;
	struct rec_view rv;
	cr_assert_eq(rec_decode((const uint8_t *)b.data, b.len, &off, &rv), 1);
	cr_assert_eq(rv.op, REC_PUT);
	cr_assert_eq(rv.table, REC_T_PARTNER);
	cr_assert_eq(rv.val_len, 7);
	cr_assert_eq(memcmp(rv.val, "{\"a\":1}", 7), 0);
	cr_assert_eq(rec_decode((const uint8_t *)b.data, b.len, &off, &rv), 1);
	cr_assert_eq(rv.op, REC_DEL);
	cr_assert_eq(rec_decode((const uint8_t *)b.data, b.len, &off, &rv), 0, "clean end");
	for (size_t cut = 1; cut < b.len; cut++) {
		size_t o = 0;
		int r;
		while ((r = rec_decode((const uint8_t *)b.data, cut, &o, &rv)) == 1)
			;
		cr_assert(r == 0 || r == -1);
		if (cut != 22) /* 22 = exactly the first record */
			cr_assert_eq(r, -1, "a truncated record at %zu is malformed", cut);
	}
	b.data[1] = (char)REC_T_COUNT_; /* unknown table */
	off = 0;
	cr_assert_eq(rec_decode((const uint8_t *)b.data, b.len, &off, &rv), -1);
	char big[300];
	memset(big, 'k', sizeof(big));
	cr_assert_eq(rec_encode(&b, REC_PUT, 1, 1, big, REC_MAX_KEY + 1, "", 0), -1, "key past the bound");
	cr_assert_eq(rec_encode(&b, REC_PUT, 1, 1, big, REC_MAX_KEY, "", 0), 0, "key at the bound");
	buf_free(&b);
}

WM_TEST(cursor, base64url_round_trip_and_rejects)
{
	uint8_t in[256], out[256];
	char enc[400];
	for (int n = 0; n < 256; n++) {
		for (int i = 0; i < n; i++)
			in[i] = (uint8_t)(i * 37 + n);
		int e = b64url_encode(in, (size_t)n, enc, sizeof(enc));
		cr_assert_geq(e, 0);
		cr_assert_null(strpbrk(enc, "+/="), "url-safe, unpadded");
		int d = b64url_decode(enc, (size_t)e, out, sizeof(out));
		cr_assert_eq(d, n);
		cr_assert_eq(memcmp(in, out, (size_t)n), 0);
	}
	cr_assert_eq(b64url_decode("a", 1, out, sizeof(out)), -1);
	cr_assert_eq(b64url_decode("ab!d", 4, out, sizeof(out)), -1);
	cr_assert_eq(b64url_decode("QR", 2, out, sizeof(out)), -1, "non-canonical trailing bits");
	cr_assert_eq(b64url_decode("QUJD", 4, out, 2), -1, "output bound");
}

WM_TEST(config, flags_file_and_bounds)
{
	struct config c;
	config_defaults(&c);
	cr_assert_str_eq(c.data_dir, "./var");
	char path[] = "/tmp/wm-cfg-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	fprintf(f, "# comment\nwal_mode = write\nmax-conns = 7\nlisten = 0.0.0.0:9\n");
	fclose(f);
	char *argv1[] = {"wm", "--config", path, "--max-conns", "9", "--demo", NULL};
	FILE *err = fopen("/dev/null", "w");
	cr_assert_eq(config_parse_args(&c, 6, argv1, err), 0);
	cr_assert_str_eq(c.wal_mode, "write", "file applies");
	cr_assert_eq(c.max_conns, 9, "flags override the file");
	cr_assert_eq(c.demo, 1, "bare boolean flag");
	cr_assert_str_eq(c.listen, "0.0.0.0:9");
	char *bad[][3] = {{"wm", "--max-conns", "0"},       {"wm", "--max-conns", "100001"},
			  {"wm", "--wal-mode", "sometimes"}, {"wm", "--nonsense", "1"},
			  {"wm", "--max-conns", "-1"},       {"wm", "--max-conns", "12x"}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		config_defaults(&c);
		cr_assert_eq(config_parse_args(&c, 3, bad[i], err), -1, "%s %s accepted", bad[i][1], bad[i][2]);
	}
	char *edge[] = {"wm", "--max-conns", "100000"};
	cr_assert_eq(config_parse_args(&c, 3, edge, err), 0, "upper bound itself is fine");
	fclose(err);
	remove(path);
}

WM_TEST(metrics, counts_by_route_and_status)
{
	static struct metrics m;
	memset(&m, 0, sizeof(m));
	metrics_record(&m, "/v1/partners", 201, 300);
	metrics_record(&m, "/v1/partners", 201, 300);
	metrics_record(&m, "/v1/partners", 599, 5000000);
	struct buf b;
	buf_init(&b, 0);
	metrics_render(&m, &b);
	buf_putc(&b, 0);
	cr_assert(strstr(b.data, "wm_http_requests_total{route=\"/v1/partners\",status=\"201\"} 2"), "%s", b.data);
	cr_assert(strstr(b.data, "status=\"other\"} 1"));
	cr_assert(strstr(b.data, "wm_http_request_duration_seconds_bucket{le=\"0.0005\"} 2"), "%s", b.data);
	cr_assert(strstr(b.data, "wm_http_request_duration_seconds_count 3"));
	buf_free(&b);
}

/* metrics_route: a route's slot is found by its name's pointer or, for a
 * copy of the name, by its content; a new name takes the next slot until
 * METRICS_MAX_ROUTES are taken, then -1 (and metrics_record counts only
 * the latency). */
WM_TEST(metrics, route_slots_by_pointer_or_content_up_to_the_bound)
{
	static struct metrics m;
	memset(&m, 0, sizeof(m));
	static char names[METRICS_MAX_ROUTES + 1][16];
	for (int i = 0; i <= METRICS_MAX_ROUTES; i++)
		snprintf(names[i], sizeof(names[i]), "/r/%d", i);
	for (int i = 0; i < METRICS_MAX_ROUTES; i++)
		cr_assert_eq(metrics_route(&m, names[i]), i);
	cr_assert_eq(metrics_route(&m, names[METRICS_MAX_ROUTES]), -1, "past the bound");
	char copy[16];
	for (int i = 0; i < METRICS_MAX_ROUTES; i += 17) {
		cr_assert_eq(metrics_route(&m, names[i]), i, "the same pointer");
		memcpy(copy, names[i], sizeof(copy));
		cr_assert_eq(metrics_route(&m, copy), i, "a copy of the name");
	}
	cr_assert_eq(m.n_routes, METRICS_MAX_ROUTES);
	metrics_record(&m, names[METRICS_MAX_ROUTES], 200, 10);
	metrics_record(&m, "/r/5", 200, 10);
	cr_assert_eq(m.req[5][0], 1);
	cr_assert_eq(m.lat_count, 2);
}

/* A thread that reads the wall clock once (wall_hold is per thread). */
static void *read_wall(void *out)
{
	*(unsigned long long *)out = wall_ms();
	return NULL;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {0, ms * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* wall_hold: one reading for the holding thread until wall_release; other
 * threads, a release and a new hold read the clock again. */
WM_TEST(wall_clock, held_for_the_holder_until_released_read_by_everyone_else)
{
	unsigned long long before = wall_ms();
	wall_hold();
	unsigned long long a = wall_ms();
	sleep_ms(5);
	unsigned long long b = wall_ms();
	cr_assert(a >= before);
	cr_assert_eq(a, b, "a held clock moved: %llu -> %llu", a, b);
	unsigned long long other = 0;
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, read_wall, &other), 0);
	pthread_join(th, NULL);
	cr_assert(other >= a + 5, "another thread saw the hold: %llu vs %llu", other, a);
	wall_hold(); /* a new hold reads anew */
	unsigned long long c = wall_ms();
	cr_assert(c >= a + 5, "a new hold kept the old reading: %llu vs %llu", c, a);
	wall_release();
	sleep_ms(5);
	unsigned long long d = wall_ms();
	cr_assert(d >= c + 5, "released, the clock stayed: %llu vs %llu", d, c);
	sleep_ms(2);
	cr_assert(wall_ms() > d);
}
