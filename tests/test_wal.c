/*
 * test_wal.c -- the write-ahead log: frame codec, writer modes, group
 * commit, segments and rotation, recovery of torn tails at every byte,
 * corruption refusal and salvage, stale salts, pruning, inspection, and
 * crashes at the fault-injection points (in a forked child).
 *
 * Every test works in its own mkdtemp directory under /tmp and removes it.
 * Payloads are generated from their LSN so that recovery can be checked
 * byte for byte without keeping copies.
 */
#include "tests/wm_test.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>
#include <zstd.h>

#include "net/buf.h"
#include "wal/wal.h"
#include "wal/wal_format.h"

/* ---- helpers ------------------------------------------------------------ */

enum gen_kind { GEN_TEXT = 0, GEN_RANDOM = 1, GEN_SMALL = 2 };
#define GEN_MAX 512

static uint64_t splitmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The payload of transaction `lsn` for a generator kind; returns its length. */
static size_t gen(int kind, uint64_t lsn, uint8_t *out)
{
	static const char text[] = "{\"wine\":\"Chateau Margaux\",\"vintage\":2015,\"qty\":12,"
				   "\"country\":\"FR\",\"price_minor\":45000,\"currency\":\"EUR\"}";
	size_t len;
	switch (kind) {
	case GEN_RANDOM:
		len = 200 + (size_t)(lsn * 13 % 200);
		for (size_t i = 0; i < len; i++)
			out[i] = (uint8_t)(splitmix(lsn * 1000003u + i / 8) >> (8 * (i % 8)));
		return len;
	case GEN_SMALL:
		len = 48 + (size_t)(lsn % 97);
		break;
	default:
		len = (size_t)(lsn * 7 % 301); /* includes empty payloads */
		break;
	}
	for (size_t i = 0; i < len; i++)
		out[i] = (uint8_t)text[(i + lsn) % (sizeof(text) - 1)];
	if (len >= 8)
		wr_u64(out, lsn);
	return len;
}

struct chk {
	int kind;
	uint64_t next;  /* LSN expected next */
	uint64_t n;
	int bad;
	uint64_t stop_at; /* return 7 at this LSN (0: never) */
};

static int chk_fn(void *ctx, uint64_t lsn, const void *p, size_t len)
{
	struct chk *c = ctx;
	uint8_t exp[GEN_MAX];
	if (c->stop_at && lsn == c->stop_at)
		return 7;
	if (lsn != c->next)
		c->bad = 1;
	size_t el = gen(c->kind, lsn, exp);
	if (el != len || (len && memcmp(exp, p, len)))
		c->bad = 1;
	c->next = lsn + 1;
	c->n++;
	return 0;
}

static void chk_init(struct chk *c, int kind, uint64_t first)
{
	memset(c, 0, sizeof(*c));
	c->kind = kind;
	c->next = first;
}

/* Recovery log lines are captured (and counted) instead of printed. */
static int log_lines;
static char log_last[1024];
static void capture_log(const char *line)
{
	log_lines++;
	snprintf(log_last, sizeof(log_last), "%s", line);
}

static void make_tmp(char *dir)
{
	strcpy(dir, "/tmp/wal-test-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(path);
}

static void rm_rf(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A log without segment dictionaries: these tests place and cut frames by
 * their offsets (wal_dict below covers dictionaries). */
static struct wal *open_wal(const char *dir, enum wal_mode mode, uint64_t seg, uint32_t batch,
			    uint64_t next)
{
	struct wal_config cfg = { .dir = dir, .mode = mode, .segment_size = seg,
				  .max_batch_bytes = batch, .zstd_level = 1, .dict_bytes = WAL_DICT_NONE };
	char err[512] = "";
	struct wal *w = wal_open(&cfg, next, err, sizeof(err));
	cr_assert_not_null(w, "wal_open: %s", err);
	return w;
}

/* Append generated transactions [from, to], flushing every `every` (0: never). */
static void append_range(struct wal *w, int kind, uint64_t from, uint64_t to, uint64_t every)
{
	uint8_t p[GEN_MAX];
	for (uint64_t l = from; l <= to; l++) {
		size_t n = gen(kind, l, p);
		cr_assert_eq(wal_append(w, l, p, n), 0, "append %" PRIu64, l);
		if (every && (l - from + 1) % every == 0)
			wal_flush(w);
	}
}

static void seg_path(char *out, size_t n, const char *dir, uint64_t lsn)
{
	snprintf(out, n, "%s/%020" PRIu64 ".wal", dir, lsn);
}

/* Read a whole file into a malloc'd buffer. */
static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f, "open %s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc((size_t)n + 1);
	cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

static void spit(const char *path, const uint8_t *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(b, 1, n, f), n);
	fclose(f);
}

/* Offsets, lengths and last LSNs of the valid frames of a segment image
 * (up to max); returns the count. */
#define MAX_FRAMES 1024
static uint64_t frame_last[MAX_FRAMES];
static size_t frame_offsets(const uint8_t *b, size_t n, size_t *offs, size_t *lens, size_t max)
{
	uint64_t salt, first;
	cr_assert_eq(wal_seg_header_decode(b, n, &salt, &first, NULL), 0);
	struct buf raw;
	buf_init(&raw, 0);
	size_t off = WAL_SEG_HEADER_SIZE, k = 0;
	struct wal_frame_view fv;
	cr_assert_leq(max, MAX_FRAMES);
	while (k < max && wal_frame_decode(b + off, n - off, salt, &fv, &raw, NULL) == WAL_FRAME_OK) {
		offs[k] = off;
		lens[k] = fv.frame_len;
		frame_last[k] = fv.last_lsn;
		k++;
		off += fv.frame_len;
	}
	buf_free(&raw);
	return k;
}

static size_t count_files(const char *dir, const char *suffix)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "ls -1 %s 2>/dev/null | grep -c '%s$'", dir, suffix);
	FILE *p = popen(cmd, "r");
	size_t n = 0;
	if (fscanf(p, "%zu", &n) != 1)
		n = 0;
	pclose(p);
	return n;
}

/* ---- codec -------------------------------------------------------------- */

#define SALT 0x5a175a175a175a17ull

WM_TEST(wal_codec, roundtrip_single)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	struct buf raw, out, dec;
	buf_init(&raw, 0), buf_init(&out, 0), buf_init(&dec, 0);
	cr_assert_eq(wal_txn_put(&raw, 42, "hello wine", 10), 0);
	struct wal_frame_view fv, dv;
	cr_assert_eq(wal_frame_encode(cc, 1, SALT, (uint8_t *)raw.data, raw.len, &out, &fv), 0);
	cr_assert_eq(out.len, fv.frame_len);
	cr_assert_eq(fv.first_lsn, 42);
	cr_assert_eq(fv.last_lsn, 42);
	char why[96];
	cr_assert_eq(wal_frame_decode((uint8_t *)out.data, out.len, SALT, &dv, &dec, why), WAL_FRAME_OK,
		     "%s", why);
	cr_assert_eq(dv.txn_count, 1);
	cr_assert_eq(dv.frame_len, out.len);
	cr_assert_eq(dec.len, raw.len);
	size_t off = 0;
	uint64_t lsn;
	const uint8_t *p;
	uint32_t len;
	cr_assert_eq(wal_txn_next(&dec, &off, &lsn, &p, &len), 1);
	cr_assert_eq(lsn, 42);
	cr_assert_eq(len, 10);
	cr_assert_eq(memcmp(p, "hello wine", 10), 0);
	cr_assert_eq(wal_txn_next(&dec, &off, &lsn, &p, &len), 0);
	buf_free(&raw), buf_free(&out), buf_free(&dec);
	ZSTD_freeCCtx(cc);
}

WM_TEST(wal_codec, roundtrip_many_and_empty)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	struct buf raw, out, dec;
	buf_init(&raw, 0), buf_init(&out, 0), buf_init(&dec, 0);
	uint8_t p[GEN_MAX];
	int empties = 0;
	for (uint64_t l = 1; l <= 1000; l++) {
		size_t n = gen(GEN_TEXT, l, p);
		empties += n == 0;
		cr_assert_eq(wal_txn_put(&raw, l, p, (uint32_t)n), 0);
	}
	cr_assert_gt(empties, 0, "the generator must produce empty payloads too");
	struct wal_frame_view fv;
	cr_assert_eq(wal_frame_encode(cc, 1, SALT, (uint8_t *)raw.data, raw.len, &out, &fv), 0);
	cr_assert_lt(out.len, raw.len, "text must compress");
	cr_assert_eq(wal_frame_decode((uint8_t *)out.data, out.len, SALT, &fv, &dec, NULL), WAL_FRAME_OK);
	cr_assert_eq(fv.txn_count, 1000);
	size_t off = 0;
	uint64_t lsn;
	const uint8_t *q;
	uint32_t len;
	struct chk c;
	chk_init(&c, GEN_TEXT, 1);
	while (wal_txn_next(&dec, &off, &lsn, &q, &len))
		chk_fn(&c, lsn, q, len);
	cr_assert_eq(c.n, 1000);
	cr_assert_not(c.bad);

	/* A frame holding only one empty payload. */
	buf_reset(&raw), buf_reset(&out);
	cr_assert_eq(wal_txn_put(&raw, 7, NULL, 0), 0);
	cr_assert_eq(wal_frame_encode(cc, 1, SALT, (uint8_t *)raw.data, raw.len, &out, &fv), 0);
	cr_assert_eq(wal_frame_decode((uint8_t *)out.data, out.len, SALT, &fv, &dec, NULL), WAL_FRAME_OK);
	off = 0;
	cr_assert_eq(wal_txn_next(&dec, &off, &lsn, &q, &len), 1);
	cr_assert_eq(lsn, 7);
	cr_assert_eq(len, 0);
	buf_free(&raw), buf_free(&out), buf_free(&dec);
	ZSTD_freeCCtx(cc);
}

WM_TEST(wal_codec, max_raw_frame_and_one_over)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	struct buf raw, out, dec;
	buf_init(&raw, 0), buf_init(&out, 0), buf_init(&dec, 0);
	size_t plen = WAL_FRAME_MAX_RAW - WAL_TXN_HEADER_SIZE;
	uint8_t *p = malloc(plen + 1);
	for (size_t i = 0; i <= plen; i++)
		p[i] = (uint8_t)(i * 31 + (i >> 9));
	cr_assert_eq(wal_txn_put(&raw, 1, p, (uint32_t)plen), 0);
	cr_assert_eq(raw.len, WAL_FRAME_MAX_RAW);
	struct wal_frame_view fv;
	cr_assert_eq(wal_frame_encode(cc, 1, SALT, (uint8_t *)raw.data, raw.len, &out, &fv), 0);
	cr_assert_eq(wal_frame_decode((uint8_t *)out.data, out.len, SALT, &fv, &dec, NULL), WAL_FRAME_OK);
	cr_assert_eq(dec.len, WAL_FRAME_MAX_RAW);
	cr_assert_eq(memcmp(dec.data + WAL_TXN_HEADER_SIZE, p, plen), 0);
	/* One byte over the frame ceiling: the encoder refuses. */
	buf_reset(&raw), buf_reset(&out);
	cr_assert_eq(wal_txn_put(&raw, 1, p, (uint32_t)plen + 1), 0);
	cr_assert_eq(wal_frame_encode(cc, 1, SALT, (uint8_t *)raw.data, raw.len, &out, &fv), -1);
	cr_assert_eq(out.len, 0);
	free(p);
	buf_free(&raw), buf_free(&out), buf_free(&dec);
	ZSTD_freeCCtx(cc);
}

WM_TEST(wal_codec, append_at_and_past_max_payload)
{
	char dir[64];
	make_tmp(dir);
	uint32_t batch = 256u << 10;
	struct wal *w = open_wal(dir, WAL_MODE_WRITE, 64u << 10, batch, 1);
	size_t max = batch - WAL_TXN_HEADER_SIZE;
	uint8_t *p = malloc(max + 1);
	for (size_t i = 0; i <= max; i++)
		p[i] = (uint8_t)splitmix(i);
	cr_assert_eq(wal_append(w, 1, p, max + 1), -1, "one byte over max_batch_bytes - 12");
	cr_assert_eq(wal_append(w, 1, p, max), 0, "exactly max_batch_bytes - 12");
	cr_assert_eq(wal_append(w, 3, p, 1), -1, "LSN must be previous + 1");
	cr_assert_eq(wal_append(w, 2, p, 0), 0);
	wal_close(w);
	struct wal_recovery_report rep;
	cr_assert_eq(wal_recover(dir, 1, NULL, NULL, 0, &rep), 0, "%s", rep.error);
	cr_assert_eq(rep.txns_replayed, 1);
	cr_assert_eq(rep.last_lsn, 2);
	free(p);
	rm_rf(dir);
}

WM_TEST(wal_codec, decode_rejects)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	struct buf raw, out, dec;
	buf_init(&raw, 0), buf_init(&out, 0), buf_init(&dec, 0);
	uint8_t p[GEN_MAX];
	for (uint64_t l = 10; l < 20; l++)
		wal_txn_put(&raw, l, p, (uint32_t)gen(GEN_TEXT, l, p));
	struct wal_frame_view fv;
	cr_assert_eq(wal_frame_encode(cc, 1, SALT, (uint8_t *)raw.data, raw.len, &out, &fv), 0);
	uint8_t *f = (uint8_t *)out.data;
	size_t n = out.len;
	char why[96];
	cr_assert_eq(wal_frame_decode(f, n, SALT + 1, &fv, &dec, why), WAL_FRAME_BAD);
	cr_assert(strstr(why, "salt"), "%s", why);
	for (size_t cut = 1; cut < n; cut++)
		cr_assert_eq(wal_frame_decode(f, cut, SALT, &fv, &dec, NULL), WAL_FRAME_SHORT, "cut %zu", cut);
	uint8_t z[WAL_FRAME_HEADER_SIZE + 8] = { 0 };
	cr_assert_eq(wal_frame_decode(z, sizeof(z), SALT, &fv, &dec, NULL), WAL_FRAME_ZERO);
	cr_assert_eq(wal_frame_decode(z, 3, SALT, &fv, &dec, NULL), WAL_FRAME_ZERO);
	/* Every single-bit flip anywhere in the frame is caught. */
	for (size_t i = 0; i < n * 8; i++) {
		f[i / 8] ^= (uint8_t)(1u << (i % 8));
		enum wal_frame_status st = wal_frame_decode(f, n, SALT, &fv, &dec, NULL);
		cr_assert(st == WAL_FRAME_BAD || st == WAL_FRAME_SHORT, "bit %zu accepted", i);
		f[i / 8] ^= (uint8_t)(1u << (i % 8));
	}
	cr_assert_eq(wal_frame_decode(f, n, SALT, &fv, &dec, NULL), WAL_FRAME_OK);
	/* Segment header round trip and damage. */
	uint8_t h[WAL_SEG_HEADER_SIZE];
	uint64_t s, first;
	wal_seg_header_encode(h, SALT, 99);
	cr_assert_eq(wal_seg_header_decode(h, sizeof(h), &s, &first, NULL), 0);
	cr_assert_eq(s, SALT);
	cr_assert_eq(first, 99);
	cr_assert_eq(wal_seg_header_decode(h, sizeof(h) - 1, &s, &first, NULL), -1);
	h[20] ^= 1;
	cr_assert_eq(wal_seg_header_decode(h, sizeof(h), &s, &first, why), -1);
	uint64_t lsn;
	cr_assert_eq(wal_seg_name_parse("00000000000000000042.wal", &lsn), 1);
	cr_assert_eq(lsn, 42);
	cr_assert_eq(wal_seg_name_parse("00000000000000000000.wal", &lsn), 0);
	cr_assert_eq(wal_seg_name_parse("0000000000000000042.wal", &lsn), 0);
	cr_assert_eq(wal_seg_name_parse("00000000000000000042.wal.inprogress", &lsn), 0);
	cr_assert_eq(wal_seg_name_parse("99999999999999999999.wal", &lsn), 0, "overflow");
	buf_free(&raw), buf_free(&out), buf_free(&dec);
	ZSTD_freeCCtx(cc);
}

WM_TEST(wal_codec, txn_next_never_overreads)
{
	struct buf raw;
	buf_init(&raw, 0);
	size_t off = 0;
	uint64_t lsn;
	const uint8_t *p;
	uint32_t len;
	cr_assert_eq(wal_txn_next(&raw, &off, &lsn, &p, &len), 0, "empty block");
	wal_txn_put(&raw, 5, "abc", 3);
	raw.len -= 1; /* payload claims one byte more than there is */
	cr_assert_eq(wal_txn_next(&raw, &off, &lsn, &p, &len), 0);
	raw.len = 11; /* not even a header */
	cr_assert_eq(wal_txn_next(&raw, &off, &lsn, &p, &len), 0);
	off = 1000;
	raw.len = 15;
	cr_assert_eq(wal_txn_next(&raw, &off, &lsn, &p, &len), 0, "offset past the end");
	buf_free(&raw);
}

/* ---- writer modes ------------------------------------------------------- */

static void mode_roundtrip(enum wal_mode mode)
{
	char dir[64];
	make_tmp(dir);
	struct wal *w = open_wal(dir, mode, 256u << 10, 0, 1);
	const uint64_t N = 3000;
	append_range(w, GEN_TEXT, 1, N, 400);
	wal_flush(w);
	cr_assert_eq(wal_durable_lsn(w), N);
	uint64_t ev = 0;
	cr_assert_eq(read(wal_event_fd(w), &ev, 8), 8, "eventfd must be readable after progress");
	cr_assert_geq(ev, 1);
	struct wal_stats st;
	wal_stats(w, &st);
	cr_assert_eq(st.txns, N);
	cr_assert_eq(st.appended_lsn, N);
	cr_assert_eq(st.durable_lsn, N);
	if (mode == WAL_MODE_FSYNC)
		cr_assert_geq(st.syncs, 1);
	wal_close(w);
	struct wal_recovery_report rep;
	struct chk c;
	chk_init(&c, GEN_TEXT, 1);
	cr_assert_eq(wal_recover(dir, 0, chk_fn, &c, 0, &rep), 0, "%s", rep.error);
	cr_assert_eq(c.n, N);
	cr_assert_not(c.bad, "payload or LSN order mismatch");
	cr_assert_eq(rep.first_lsn, 1);
	cr_assert_eq(rep.last_lsn, N);
	cr_assert_eq(rep.txns_replayed, N);
	cr_assert_eq(rep.tail_cut, 0);
	/* after_lsn skips (but still validates) the prefix. */
	chk_init(&c, GEN_TEXT, N / 2 + 1);
	cr_assert_eq(wal_recover(dir, N / 2, chk_fn, &c, 0, &rep), 0, "%s", rep.error);
	cr_assert_eq(c.n, N - N / 2);
	cr_assert_not(c.bad);
	cr_assert_eq(rep.first_lsn, N / 2 + 1);
	cr_assert_eq(rep.last_lsn, N);
	chk_init(&c, GEN_TEXT, 1);
	cr_assert_eq(wal_recover(dir, N, chk_fn, &c, 0, &rep), 0, "%s", rep.error);
	cr_assert_eq(c.n, 0);
	cr_assert_eq(rep.first_lsn, 0);
	cr_assert_eq(rep.last_lsn, N);
	rm_rf(dir);
}

WM_TEST(wal_mode, fsync_roundtrip) { mode_roundtrip(WAL_MODE_FSYNC); }
WM_TEST(wal_mode, write_roundtrip) { mode_roundtrip(WAL_MODE_WRITE); }

WM_TEST(wal_mode, none_writes_nothing)
{
	char dir[64], sub[128];
	make_tmp(dir);
	snprintf(sub, sizeof(sub), "%s/never", dir);
	struct wal *w = open_wal(sub, WAL_MODE_NONE, 0, 0, 1);
	uint8_t p[GEN_MAX];
	for (uint64_t l = 1; l <= 100; l++) {
		cr_assert_eq(wal_append(w, l, p, gen(GEN_TEXT, l, p)), 0);
		cr_assert_eq(wal_durable_lsn(w), l, "durable at once");
	}
	uint64_t ev = 0;
	cr_assert_eq(read(wal_event_fd(w), &ev, 8), 8);
	cr_assert_eq(ev, 100, "one signal per append");
	wal_flush(w);
	struct wal_stats st;
	wal_stats(w, &st);
	cr_assert_eq(st.txns, 100);
	cr_assert_eq(st.syncs, 0);
	cr_assert_eq(st.durable_lsn, 100);
	wal_close(w);
	struct stat sb;
	cr_assert_neq(stat(sub, &sb), 0, "mode none must not even create the directory");
	struct wal_recovery_report rep;
	cr_assert_eq(wal_recover(sub, 0, NULL, NULL, 0, &rep), 0, "missing dir = empty log");
	cr_assert_eq(rep.segments, 0);
	rm_rf(dir);
}

WM_TEST(wal_mode, config_bounds)
{
	char dir[64];
	make_tmp(dir);
	struct wal_config cfg = { .dir = dir, .mode = WAL_MODE_WRITE };
	char err[512];
	cfg.segment_size = (64u << 10) - 1;
	cr_assert_null(wal_open(&cfg, 1, err, sizeof(err)), "segment_size below 64 KiB");
	cr_assert(strstr(err, "segment_size"), "%s", err);
	cfg.segment_size = 64u << 10;
	cfg.max_batch_bytes = WAL_FRAME_MAX_RAW + 1;
	cr_assert_null(wal_open(&cfg, 1, err, sizeof(err)), "batch over the frame ceiling");
	cfg.max_batch_bytes = WAL_FRAME_MAX_RAW;
	cr_assert_null(wal_open(&cfg, 0, err, sizeof(err)), "LSN 0 is not an LSN");
	cfg.zstd_level = 1000;
	cr_assert_null(wal_open(&cfg, 1, err, sizeof(err)));
	cfg.zstd_level = 0;
	struct wal *w = wal_open(&cfg, 1, err, sizeof(err)); /* exactly at both bounds */
	cr_assert_not_null(w, "%s", err);
	append_range(w, GEN_TEXT, 1, 10, 0);
	wal_close(w);
	/* A segment already holding data at/after next_lsn: refuse. */
	cr_assert_null(wal_open(&cfg, 1, err, sizeof(err)));
	cr_assert(strstr(err, "00000000000000000001.wal"), "%s", err);
	/* An empty segment at next_lsn (opened, never written) is replaced. */
	w = wal_open(&cfg, 11, err, sizeof(err));
	cr_assert_not_null(w, "%s", err);
	wal_close(w);
	w = wal_open(&cfg, 11, err, sizeof(err));
	cr_assert_not_null(w, "%s", err);
	append_range(w, GEN_TEXT, 11, 20, 0);
	wal_close(w);
	struct wal_recovery_report rep;
	struct chk c;
	chk_init(&c, GEN_TEXT, 1);
	cr_assert_eq(wal_recover(dir, 0, chk_fn, &c, 0, &rep), 0, "%s", rep.error);
	cr_assert_eq(c.n, 20);
	cr_assert_not(c.bad);
	cr_assert_eq(rep.segments, 2);
	rm_rf(dir);
}

WM_TEST(wal_mode, callback_stops_recovery)
{
	char dir[64];
	make_tmp(dir);
	struct wal *w = open_wal(dir, WAL_MODE_WRITE, 64u << 10, 0, 1);
	append_range(w, GEN_TEXT, 1, 50, 10);
	wal_close(w);
	struct wal_recovery_report rep;
	struct chk c;
	chk_init(&c, GEN_TEXT, 1);
	c.stop_at = 23;
	cr_assert_eq(wal_recover(dir, 0, chk_fn, &c, 0, &rep), 7);
	cr_assert_eq(c.n, 22);
	cr_assert_eq(rep.txns_replayed, 22);
	rm_rf(dir);
}

WM_TEST(wal_mode, backpressure_past_64mib)
{
	char dir[64];
	make_tmp(dir);
	struct wal *w = open_wal(dir, WAL_MODE_WRITE, 1u << 20, 0, 1);
	size_t len = (1u << 20) - WAL_TXN_HEADER_SIZE; /* the largest allowed */
	uint8_t *p = calloc(1, len);
	for (uint64_t l = 1; l <= 72; l++) { /* 72 MiB: past the queue bound */
		wr_u64(p, l);
		cr_assert_eq(wal_append(w, l, p, len), 0);
	}
	wal_flush(w);
	struct wal_stats st;
	wal_stats(w, &st);
	cr_assert_eq(st.durable_lsn, 72);
	cr_assert_eq(st.txns, 72);
	cr_assert_geq(st.frames, 72, "each max-size txn is a frame of its own");
	wal_close(w);
	struct wal_recovery_report rep;
	cr_assert_eq(wal_recover(dir, 0, NULL, NULL, 0, &rep), 0, "%s", rep.error);
	cr_assert_eq(rep.txns_replayed, 72);
	free(p);
	rm_rf(dir);
}

/* ---- torn tails ----------------------------------------------------------- */

/* Writes 1..29 in at least three frames (the WAL thread may cut a batch
 * earlier than our flushes) and 30 alone in the last frame. */
static void write_four_frames(const char *dir, int kind)
{
	struct wal *w = open_wal(dir, WAL_MODE_WRITE, 64u << 10, 0, 1);
	append_range(w, kind, 1, 10, 0);
	wal_flush(w);
	append_range(w, kind, 11, 20, 0);
	wal_flush(w);
	append_range(w, kind, 21, 29, 0);
	wal_flush(w);
	append_range(w, kind, 30, 30, 0);
	wal_close(w);
}

/* write_four_frames into a fresh dir; the segment's path and bytes (*n
 * of them, caller frees) and its frames' offsets and lengths (the count). */
static uint8_t *four_frames_image(char dir[64], char path[256], size_t *n, size_t *offs, size_t *lens,
				  size_t *k)
{
	make_tmp(dir);
	write_four_frames(dir, GEN_RANDOM);
	seg_path(path, 256, dir, 1);
	uint8_t *orig = slurp(path, n);
	*k = frame_offsets(orig, *n, offs, lens, MAX_FRAMES);
	return orig;
}

WM_TEST(wal_torn, every_offset_of_last_frame)
{
	char dir[64], path[256];
	size_t n, k, offs[MAX_FRAMES], lens[MAX_FRAMES];
	uint8_t *orig = four_frames_image(dir, path, &n, offs, lens, &k);
	cr_assert_eq(n, 64u << 10);
	cr_assert_geq(k, 4);
	cr_assert_eq(frame_last[k - 1], 30);
	cr_assert_eq(frame_last[k - 2], 29, "txn 30 alone in the last frame");
	size_t L = offs[k - 1], flen = lens[k - 1];
	uint8_t *img = malloc(n);
	wal_set_recovery_log(capture_log);
	for (int zero_fill = 0; zero_fill <= 1; zero_fill++) {
		for (size_t cut = 0; cut < flen; cut++) {
			size_t sz = zero_fill ? n : L + cut;
			memcpy(img, orig, n);
			if (zero_fill)
				memset(img + L + cut, 0, flen - cut);
			spit(path, img, sz);
			struct wal_recovery_report rep;
			struct chk c;
			chk_init(&c, GEN_RANDOM, 1);
			cr_assert_eq(wal_recover(dir, 0, chk_fn, &c, 0, &rep), 0, "cut %zu: %s", cut,
				     rep.error);
			cr_assert_eq(c.n, 29, "cut %zu zero %d: %" PRIu64, cut, zero_fill, c.n);
			cr_assert_not(c.bad);
			cr_assert_eq(rep.last_lsn, 29);
			if (cut == 0) {
				/* Nothing of the frame remains: indistinguishable from the clean end. */
				cr_assert_eq(rep.tail_cut, 0);
			} else {
				cr_assert_eq(rep.tail_cut, 1, "cut %zu zero %d", cut, zero_fill);
				cr_assert(strstr(log_last, "torn tail"), "the cut is logged: %s", log_last);
				log_last[0] = 0;
				cr_assert_eq(rep.tail_offset, L);
				cr_assert_eq(rep.tail_bytes, sz - L);
				cr_assert(strstr(rep.tail_file, "00000000000000000001.wal"));
				struct stat sb;
				cr_assert_eq(stat(path, &sb), 0);
				cr_assert_eq((size_t)sb.st_size, L, "file cut at the last good frame");
			}
			chk_init(&c, GEN_RANDOM, 1);
			cr_assert_eq(wal_recover(dir, 0, chk_fn, &c, 0, &rep), 0, "%s", rep.error);
			cr_assert_eq(rep.tail_cut, 0, "second recovery is clean");
			cr_assert_eq(c.n, 29);
		}
	}
	/* After a cut, the log continues in a new segment. */
	struct wal *w = open_wal(dir, WAL_MODE_WRITE, 64u << 10, 0, 30);
	append_range(w, GEN_RANDOM, 30, 40, 0);
	wal_close(w);
	struct wal_recovery_report rep;
	struct chk c;
	chk_init(&c, GEN_RANDOM, 1);
	cr_assert_eq(wal_recover(dir, 0, chk_fn, &c, 0, &rep), 0, "%s", rep.error);
	cr_assert_eq(c.n, 40);
	cr_assert_not(c.bad);
	free(img);
	free(orig);
	rm_rf(dir);
}

/* The zeros behind the last frame are checked to the file's last byte: one
 * non-zero byte anywhere in them (first byte after the frames, either side
 * of the check's 4 KiB blocks, the very last byte) is not the clean end.
 * Nothing valid follows it, so it is cut as a torn tail and every
 * transaction before it is kept. */
WM_TEST(wal_torn, stray_byte_in_the_zero_tail)
{
	char dir[64], path[256];
	size_t n, k, offs[MAX_FRAMES], lens[MAX_FRAMES];
	uint8_t *orig = four_frames_image(dir, path, &n, offs, lens, &k);
	cr_assert_geq(k, 4);
	size_t end = offs[k - 1] + lens[k - 1];
	cr_assert_lt(end + WAL_FRAME_HEADER_SIZE + 8192, n);
	size_t at[] = {end + WAL_FRAME_HEADER_SIZE, end + WAL_FRAME_HEADER_SIZE + 4095,
		       end + WAL_FRAME_HEADER_SIZE + 4096, n - 4097, n - 4096, n - 2, n - 1};
	uint8_t *img = malloc(n);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		memcpy(img, orig, n);
		img[at[i]] = 0x01;
		spit(path, img, n);
		struct wal_recovery_report rep;
		struct chk c;
		chk_init(&c, GEN_RANDOM, 1);
		cr_assert_eq(wal_recover(dir, 0, chk_fn, &c, 0, &rep), 0, "byte %zu: %s", at[i], rep.error);
		cr_assert_eq(c.n, 30, "byte %zu", at[i]);
		cr_assert_not(c.bad);
		cr_assert_eq(rep.tail_cut, 1, "a stray byte at %zu of %zu is not the clean end", at[i], n);
		cr_assert_eq(rep.tail_offset, end);
	}
	/* and the same file with its zeros intact is the clean end */
	spit(path, orig, n);
	struct wal_recovery_report rep;
	struct chk c;
	chk_init(&c, GEN_RANDOM, 1);
	cr_assert_eq(wal_recover(dir, 0, chk_fn, &c, 0, &rep), 0, "%s", rep.error);
	cr_assert_eq(c.n, 30);
	cr_assert_eq(rep.tail_cut, 0);
	free(img);
	free(orig);
	rm_rf(dir);
}

/* ---- corruption ------------------------------------------------------------ */

WM_TEST(wal_corrupt, middle_frame_bitflip_refused_then_salvaged)
{
	char dir[64], path[256];
	wal_set_recovery_log(capture_log);
	make_tmp(dir);
	write_four_frames(dir, GEN_TEXT);
	seg_path(path, sizeof(path), dir, 1);
	size_t n;
	uint8_t *b = slurp(path, &n);
	size_t offs[MAX_FRAMES], lens[MAX_FRAMES];
	cr_assert_geq(frame_offsets(b, n, offs, lens, MAX_FRAMES), 4);
	uint64_t kept = frame_last[0];
	b[offs[1] + lens[1] / 2] ^= 0x10;
	spit(path, b, n);
	struct wal_recovery_report rep;
	struct chk c;
	chk_init(&c, GEN_TEXT, 1);
	cr_assert_eq(wal_recover(dir, 0, chk_fn, &c, 0, &rep), -1);
	char off[64];
	snprintf(off, sizeof(off), "offset %zu", offs[1]);
	cr_assert(strstr(rep.error, "00000000000000000001.wal"), "%s", rep.error);
	cr_assert(strstr(rep.error, off), "%s (want %s)", rep.error, off);
	/* Refusal must not have touched the file. */
	size_t n2;
	uint8_t *b2 = slurp(path, &n2);
	cr_assert_eq(n2, n);
	cr_assert_eq(memcmp(b, b2, n), 0);
	free(b2);
	/* Salvage: keep the prefix (the first frame), cut the rest. */
	chk_init(&c, GEN_TEXT, 1);
	cr_assert_eq(wal_recover(dir, 0, chk_fn, &c, 1, &rep), 0, "%s", rep.error);
	cr_assert_eq(c.n, kept);
	cr_assert_not(c.bad);
	cr_assert_eq(rep.last_lsn, kept);
	cr_assert_eq(rep.tail_cut, 1);
	cr_assert_eq(rep.tail_offset, offs[1]);
	chk_init(&c, GEN_TEXT, 1);
	cr_assert_eq(wal_recover(dir, 0, chk_fn, &c, 0, &rep), 0, "%s", rep.error);
	cr_assert_eq(c.n, kept);
	cr_assert_eq(rep.tail_cut, 0);
	free(b);
	rm_rf(dir);
}

struct seginfo_list {
	struct wal_segment_info v[64];
	size_t n;
};

static void collect_seg(void *ctx, const struct wal_segment_info *info)
{
	struct seginfo_list *l = ctx;
	if (l->n < 64)
		l->v[l->n++] = *info;
}

/* Fill several 64 KiB segments with incompressible txns 1..N. */
static uint64_t write_segments(const char *dir, struct seginfo_list *l)
{
	const uint64_t N = 1500;
	struct wal *w = open_wal(dir, WAL_MODE_WRITE, 64u << 10, 0, 1);
	append_range(w, GEN_RANDOM, 1, N, 25);
	struct wal_stats st;
	wal_flush(w);
	wal_stats(w, &st);
	wal_close(w);
	memset(l, 0, sizeof(*l));
	cr_assert_eq(wal_inspect(dir, collect_seg, l), 0);
	cr_assert_eq(l->n, st.segments_created);
	cr_assert_geq(l->n, 5, "expected many segments, got %zu", l->n);
	uint64_t frames = 0, txns = 0;
	for (size_t i = 0; i < l->n; i++) {
		cr_assert(l->v[i].ok, "%s: %s", l->v[i].path, l->v[i].error);
		if (i)
			cr_assert_eq(l->v[i].first_lsn, l->v[i - 1].last_lsn + 1);
		cr_assert_eq(l->v[i].txns, l->v[i].last_lsn - l->v[i].first_lsn + 1);
		frames += l->v[i].frames;
		txns += l->v[i].txns;
	}
	cr_assert_eq(frames, st.frames);
	cr_assert_eq(txns, N);
	cr_assert_eq(l->v[l->n - 1].last_lsn, N);
	return N;
}

WM_TEST(wal_corrupt, non_last_segment_refused)
{
	char dir[64];
	wal_set_recovery_log(capture_log);
	make_tmp(dir);
	struct seginfo_list l;
	write_segments(dir, &l);
	/* Flip a bit in the LAST frame of the first segment: nothing valid
	 * follows it inside that file, but it is not the last segment. */
	size_t n;
	uint8_t *b = slurp(l.v[0].path, &n);
	size_t offs[MAX_FRAMES], lens[MAX_FRAMES];
	size_t k = frame_offsets(b, n, offs, lens, MAX_FRAMES);
	cr_assert_eq(offs[k - 1] + lens[k - 1], l.v[0].bytes_used);
	b[offs[k - 1] + lens[k - 1] - 3] ^= 0x01;
	spit(l.v[0].path, b, n);
	struct wal_recovery_report rep;
	cr_assert_eq(wal_recover(dir, 0, NULL, NULL, 0, &rep), -1);
	cr_assert(strstr(rep.error, "00000000000000000001.wal"), "%s", rep.error);
	char off[64];
	snprintf(off, sizeof(off), "offset %zu", offs[k - 1]);
	cr_assert(strstr(rep.error, off), "%s", rep.error);
	struct seginfo_list l2 = { .n = 0 };
	cr_assert_eq(wal_inspect(dir, collect_seg, &l2), -1);
	cr_assert_eq(l2.v[0].ok, 0);
	cr_assert_eq(l2.v[0].bad_offset, offs[k - 1]);
	/* Restore it and damage the second segment's header instead. */
	b[offs[k - 1] + lens[k - 1] - 3] ^= 0x01;
	spit(l.v[0].path, b, n);
	free(b);
	b = slurp(l.v[1].path, &n);
	b[30] ^= 0x80;
	spit(l.v[1].path, b, n);
	cr_assert_eq(wal_recover(dir, 0, NULL, NULL, 0, &rep), -1);
	cr_assert(strstr(rep.error, l.v[1].path), "%s", rep.error);
	cr_assert(strstr(rep.error, "offset 0"), "%s", rep.error);
	/* Salvage keeps segment 1 and removes the rest. */
	struct chk c;
	chk_init(&c, GEN_RANDOM, 1);
	cr_assert_eq(wal_recover(dir, 0, chk_fn, &c, 1, &rep), 0, "%s", rep.error);
	cr_assert_eq(c.n, l.v[0].txns);
	cr_assert_not(c.bad);
	cr_assert_eq(count_files(dir, ".wal"), 1);
	free(b);
	rm_rf(dir);
}

WM_TEST(wal_corrupt, stale_salt_frame_not_accepted)
{
	char a[64], b[64], pa[256], pb[256];
	wal_set_recovery_log(capture_log);
	make_tmp(a);
	make_tmp(b);
	/* Two logs with identical LSNs; log B's txn 30 carries other bytes. */
	write_four_frames(a, GEN_TEXT);
	write_four_frames(b, GEN_RANDOM);
	seg_path(pa, sizeof(pa), a, 1);
	seg_path(pb, sizeof(pb), b, 1);
	size_t na, nb;
	uint8_t *ia = slurp(pa, &na), *ib = slurp(pb, &nb);
	size_t oa[MAX_FRAMES], la[MAX_FRAMES], ob[MAX_FRAMES], lb[MAX_FRAMES];
	size_t ka = frame_offsets(ia, na, oa, la, MAX_FRAMES);
	size_t kb = frame_offsets(ib, nb, ob, lb, MAX_FRAMES);
	cr_assert_geq(ka, 4);
	cr_assert_geq(kb, 4);
	/* Replace A's last frame with B's frame for the same LSN (30). */
	memset(ia + oa[ka - 1], 0, la[ka - 1]);
	memcpy(ia + oa[ka - 1], ib + ob[kb - 1], lb[kb - 1]);
	spit(pa, ia, na);
	struct buf raw;
	buf_init(&raw, 0);
	uint64_t salt, first;
	cr_assert_eq(wal_seg_header_decode(ia, na, &salt, &first, NULL), 0);
	char why[96];
	struct wal_frame_view fv;
	cr_assert_eq(wal_frame_decode(ia + oa[ka - 1], na - oa[ka - 1], salt, &fv, &raw, why),
		     WAL_FRAME_BAD);
	cr_assert(strstr(why, "salt"), "%s", why);
	buf_free(&raw);
	struct wal_recovery_report rep;
	struct chk c;
	chk_init(&c, GEN_TEXT, 1);
	cr_assert_eq(wal_recover(a, 0, chk_fn, &c, 0, &rep), 0, "%s", rep.error);
	cr_assert_eq(c.n, 29, "the stale frame must not be replayed");
	cr_assert_not(c.bad);
	cr_assert_eq(rep.tail_cut, 1);
	cr_assert_eq(rep.tail_offset, oa[ka - 1]);
	/* A stale frame in the middle (valid frames after it) is corruption. */
	free(ia);
	rm_rf(a);
	make_tmp(a);
	write_four_frames(a, GEN_TEXT);
	seg_path(pa, sizeof(pa), a, 1);
	ia = slurp(pa, &na);
	ka = frame_offsets(ia, na, oa, la, MAX_FRAMES);
	cr_assert_geq(ka, 4);
	/* Put B's first frame in place of A's second one (shifting A's later
	 * frames): a wrong-salt frame with valid frames after it. */
	size_t tail = oa[ka - 1] + la[ka - 1] - oa[2];
	uint8_t *rest = malloc(tail);
	memcpy(rest, ia + oa[2], tail);
	memset(ia + oa[1], 0, na - oa[1]);
	memcpy(ia + oa[1], ib + ob[0], lb[0]);
	memcpy(ia + oa[1] + lb[0], rest, tail);
	spit(pa, ia, na);
	free(rest);
	cr_assert_eq(wal_recover(a, 0, NULL, NULL, 0, &rep), -1);
	cr_assert(strstr(rep.error, "salt"), "%s", rep.error);
	free(ia);
	free(ib);
	rm_rf(a);
	rm_rf(b);
}

WM_TEST(wal_corrupt, lsn_gap_between_segments)
{
	char dir[64];
	wal_set_recovery_log(capture_log);
	make_tmp(dir);
	struct wal *w = open_wal(dir, WAL_MODE_WRITE, 64u << 10, 0, 1);
	append_range(w, GEN_TEXT, 1, 10, 0);
	wal_close(w);
	w = open_wal(dir, WAL_MODE_WRITE, 64u << 10, 0, 20); /* 11..19 never logged */
	append_range(w, GEN_TEXT, 20, 25, 0);
	wal_close(w);
	struct wal_recovery_report rep;
	cr_assert_eq(wal_recover(dir, 0, NULL, NULL, 0, &rep), -1);
	cr_assert(strstr(rep.error, "gap"), "%s", rep.error);
	cr_assert(strstr(rep.error, "00000000000000000020.wal"), "%s", rep.error);
	cr_assert_eq(wal_recover(dir, 18, NULL, NULL, 0, &rep), -1, "LSN 19 is still missing");
	/* A snapshot at 19 covers the gap. */
	struct chk c;
	chk_init(&c, GEN_TEXT, 20);
	cr_assert_eq(wal_recover(dir, 19, chk_fn, &c, 0, &rep), 0, "%s", rep.error);
	cr_assert_eq(c.n, 6);
	cr_assert_not(c.bad);
	/* Stale temp files from a crash during segment creation are removed. */
	char tmp[256];
	snprintf(tmp, sizeof(tmp), "%s/00000000000000000026.wal.inprogress", dir);
	spit(tmp, (const uint8_t *)"junk", 4);
	cr_assert_eq(wal_recover(dir, 19, NULL, NULL, 0, &rep), 0, "%s", rep.error);
	struct stat sb;
	cr_assert_neq(stat(tmp, &sb), 0);
	cr_assert(strstr(log_last, "stale"), "%s", log_last);
	rm_rf(dir);
}

/* ---- segments ---------------------------------------------------------------- */

WM_TEST(wal_seg, rotation_prune_inspect)
{
	char dir[64];
	make_tmp(dir);
	struct seginfo_list l;
	uint64_t N = write_segments(dir, &l);
	struct wal_recovery_report rep;
	struct chk c;
	chk_init(&c, GEN_RANDOM, 1);
	cr_assert_eq(wal_recover(dir, 0, chk_fn, &c, 0, &rep), 0, "%s", rep.error);
	cr_assert_eq(c.n, N);
	cr_assert_not(c.bad);
	cr_assert_eq(rep.segments, l.n);
	/* One LSN short of covering segment 4: only segments 1..3 go. */
	cr_assert_eq(wal_prune(dir, l.v[3].last_lsn - 1), 3);
	cr_assert_eq(count_files(dir, ".wal"), l.n - 3);
	/* Exactly covering segment 4. */
	uint64_t upto = l.v[3].last_lsn;
	cr_assert_eq(wal_prune(dir, upto), 1);
	cr_assert_eq(wal_prune(dir, upto), 0, "idempotent");
	cr_assert_eq(count_files(dir, ".wal"), l.n - 4);
	chk_init(&c, GEN_RANDOM, upto + 1);
	cr_assert_eq(wal_recover(dir, upto, chk_fn, &c, 0, &rep), 0, "%s", rep.error);
	cr_assert_eq(c.n, N - upto);
	cr_assert_not(c.bad);
	cr_assert_eq(wal_recover(dir, 0, NULL, NULL, 0, &rep), -1, "LSNs 1..upto are gone");
	/* The newest segment is never pruned. */
	cr_assert_eq(wal_prune(dir, UINT64_MAX - 1), (int)(l.n - 5));
	cr_assert_eq(count_files(dir, ".wal"), 1);
	struct seginfo_list l2 = { .n = 0 };
	cr_assert_eq(wal_inspect(dir, collect_seg, &l2), 0);
	cr_assert_eq(l2.n, 1);
	cr_assert_eq(l2.v[0].last_lsn, N);
	cr_assert_eq(wal_prune("/tmp/wal-test-does-not-exist", 5), 0);
	rm_rf(dir);
}

/*
 * Rotation takes the pre-zeroed spare when the preparer has made one: the
 * segment it publishes reads back like any other, the spare's own file
 * (next-segment.spare) is ignored by recovery, inspection and pruning, and
 * a leftover spare from an earlier run is simply remade.
 */
WM_TEST(wal_seg, rotation_uses_the_prepared_spare)
{
	char dir[64], spare[128];
	make_tmp(dir);
	snprintf(spare, sizeof(spare), "%s/next-segment.spare", dir);
	const uint64_t per_round = 400, rounds = 6;
	/* 8 KiB frames: segment-sized rotations (a bigger frame gets a segment of its own size, inline) */
	struct wal *w = open_wal(dir, WAL_MODE_FSYNC, 64u << 10, 8u << 10, 1);
	uint64_t l = 1;
	for (uint64_t r = 0; r < rounds; r++) {
		/* give the preparer time to have a spare before the next rotation
		 * (generous: its fdatasync competes with every parallel test's) */
		for (int t = 0; t < 1500 && access(spare, F_OK); t++)
			usleep(10000);
		cr_assert_eq(access(spare, F_OK), 0, "no spare segment after 15 s");
		append_range(w, GEN_RANDOM, l, l + per_round - 1, 0); /* > 64 KiB: at least one rotation */
		wal_flush(w);
		l += per_round;
	}
	struct wal_stats st;
	wal_stats(w, &st);
	wal_close(w);
	cr_assert_geq(st.segments_created, rounds, "expected a rotation per round, got %" PRIu64,
		      st.segments_created);
	cr_assert_geq(st.segments_from_spare, 1, "no rotation used the spare");
	cr_assert_leq(st.segments_from_spare, st.segments_created - 1, "the first segment is always inline");
	struct wal_recovery_report rep;
	struct chk c;
	chk_init(&c, GEN_RANDOM, 1);
	cr_assert_eq(wal_recover(dir, 0, chk_fn, &c, 0, &rep), 0, "%s", rep.error);
	cr_assert_eq(c.n, l - 1);
	cr_assert_not(c.bad);
	cr_assert_eq(rep.segments, st.segments_created, "the spare is not a segment");
	struct seginfo_list li = { .n = 0 };
	cr_assert_eq(wal_inspect(dir, collect_seg, &li), 0);
	cr_assert_eq(li.n, st.segments_created);
	/* reopen with the leftover spare present: appends go on, recovery agrees */
	w = open_wal(dir, WAL_MODE_FSYNC, 64u << 10, 8u << 10, l);
	append_range(w, GEN_RANDOM, l, l + per_round - 1, 0);
	wal_flush(w);
	wal_close(w);
	chk_init(&c, GEN_RANDOM, 1);
	cr_assert_eq(wal_recover(dir, 0, chk_fn, &c, 0, &rep), 0, "%s", rep.error);
	cr_assert_eq(c.n, l + per_round - 1);
	cr_assert_not(c.bad);
	rm_rf(dir);
}

WM_TEST(wal_seg, frame_larger_than_segment)
{
	char dir[64];
	make_tmp(dir);
	uint32_t batch = 256u << 10;
	struct wal *w = open_wal(dir, WAL_MODE_FSYNC, 64u << 10, batch, 1);
	append_range(w, GEN_TEXT, 1, 5, 0);
	size_t big = 200u << 10;
	uint8_t *p = malloc(big);
	for (size_t i = 0; i < big; i++)
		p[i] = (uint8_t)(splitmix(i / 8) >> (8 * (i % 8)));
	wal_flush(w);
	cr_assert_eq(wal_append(w, 6, p, big), 0);
	wal_flush(w);
	uint8_t q[GEN_MAX];
	for (uint64_t l = 7; l <= 20; l++)
		cr_assert_eq(wal_append(w, l, q, gen(GEN_TEXT, l, q)), 0);
	wal_close(w);
	char path[256];
	seg_path(path, sizeof(path), dir, 6);
	struct stat sb;
	cr_assert_eq(stat(path, &sb), 0, "txn 6 starts its own segment");
	cr_assert_gt((size_t)sb.st_size, big, "sized to fit");
	struct seginfo_list l = { .n = 0 };
	cr_assert_eq(wal_inspect(dir, collect_seg, &l), 0);
	cr_assert_geq(l.n, 2);
	cr_assert_eq(l.v[0].last_lsn, 5);
	cr_assert_eq(l.v[1].first_lsn, 6);
	cr_assert_eq(l.v[l.n - 1].last_lsn, 20);
	struct wal_recovery_report rep;
	cr_assert_eq(wal_recover(dir, 0, NULL, NULL, 0, &rep), 0, "%s", rep.error);
	cr_assert_eq(rep.txns_replayed, 20);
	free(p);
	rm_rf(dir);
}

/* ---- group commit -------------------------------------------------------------- */

WM_TEST(wal_gc, many_txns_fewer_syncs)
{
	char dir[64];
	make_tmp(dir);
	struct wal *w = open_wal(dir, WAL_MODE_FSYNC, 8u << 20, 0, 1);
	const uint64_t N = 20000;
	append_range(w, GEN_SMALL, 1, N, 0); /* as fast as the one loop thread can */
	wal_flush(w);
	struct wal_stats st;
	wal_stats(w, &st);
	wal_close(w);
	cr_assert_eq(st.txns, N);
	cr_assert_geq(st.syncs, 1);
	cr_assert_lt(st.syncs, N, "batching must have happened");
	uint64_t hist = 0;
	for (size_t i = 0; i <= WAL_LAT_BUCKETS; i++)
		hist += st.sync_lat[i];
	cr_assert_eq(hist, st.syncs, "every sync lands in one latency bucket");
	fprintf(stderr, "wal_gc: %" PRIu64 " txns, %" PRIu64 " fdatasyncs (%.1f txns/sync, max batch %" PRIu64
		"), mean sync %" PRIu64 " us, %" PRIu64 " frames, ratio %.2f\n",
		st.txns, st.syncs, (double)st.txns / (double)st.syncs, st.max_batch_txns,
		st.sync_us_total / st.syncs, st.frames, (double)st.bytes_raw / (double)st.bytes_written);

	/* Closed loop: 64 "connections", each waiting for its commit before it
	 * sends the next one (the loop keeps at most 64 txns not yet durable,
	 * woken by the eventfd).  Still far fewer syncs than txns. */
	const uint64_t N2 = 4000, WIN = 64;
	w = open_wal(dir, WAL_MODE_FSYNC, 8u << 20, 0, N + 1);
	struct pollfd pfd = { .fd = wal_event_fd(w), .events = POLLIN };
	uint8_t p[GEN_MAX];
	for (uint64_t l = N + 1; l <= N + N2; l++) {
		while (l - wal_durable_lsn(w) > WIN) {
			cr_assert_geq(poll(&pfd, 1, 5000), 1);
			uint64_t ev;
			cr_assert_eq(read(pfd.fd, &ev, 8), 8);
		}
		cr_assert_eq(wal_append(w, l, p, gen(GEN_SMALL, l, p)), 0);
	}
	wal_flush(w);
	wal_stats(w, &st);
	wal_close(w);
	cr_assert_lt(st.syncs, N2);
	cr_assert_geq(st.syncs, N2 / WIN);
	fprintf(stderr, "wal_gc: closed loop, window %" PRIu64 ": %" PRIu64 " txns, %" PRIu64
		" fdatasyncs (%.1f txns/sync), mean sync %" PRIu64 " us\n",
		WIN, st.txns, st.syncs, (double)st.txns / (double)st.syncs, st.sync_us_total / st.syncs);

	struct wal_recovery_report rep;
	struct chk c;
	chk_init(&c, GEN_SMALL, 1);
	cr_assert_eq(wal_recover(dir, 0, chk_fn, &c, 0, &rep), 0, "%s", rep.error);
	cr_assert_eq(c.n, N + N2);
	cr_assert_not(c.bad);
	rm_rf(dir);
}

/* ---- crashes at the fault-injection points -------------------------------------- */

/* Child: log 1..100 durably, then crash at `point` while logging 101..400. */
static void crash_child(const char *dir, const char *point)
{
	struct wal_config cfg = { .dir = dir, .mode = WAL_MODE_FSYNC, .segment_size = 256u << 10 };
	char err[256];
	struct wal *w = wal_open(&cfg, 1, err, sizeof(err));
	if (!w)
		_exit(2);
	uint8_t p[GEN_MAX];
	for (uint64_t l = 1; l <= 100; l++)
		if (wal_append(w, l, p, gen(GEN_TEXT, l, p)))
			_exit(3);
	wal_close(w);
	setenv("WM_ERRINJ", point, 1);
	w = wal_open(&cfg, 101, err, sizeof(err));
	if (!w)
		_exit(4);
	for (uint64_t l = 101; l <= 400; l++)
		if (wal_append(w, l, p, gen(GEN_TEXT, l, p)))
			_exit(5);
	wal_flush(w); /* never returns: the WAL thread dies at the point */
	_exit(6);
}

static void crash_test(const char *point, uint64_t min_recovered)
{
	char dir[64];
	wal_set_recovery_log(capture_log);
	make_tmp(dir);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		crash_child(dir, point);
	int status = 0;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "child did not exit");
	cr_assert_eq(WEXITSTATUS(status), 137, "child exit %d", WEXITSTATUS(status));
	struct wal_recovery_report rep;
	struct chk c;
	chk_init(&c, GEN_TEXT, 1);
	cr_assert_eq(wal_recover(dir, 0, chk_fn, &c, 0, &rep), 0, "%s", rep.error);
	cr_assert_not(c.bad, "a contiguous prefix with the right bytes");
	cr_assert_geq(c.n, min_recovered, "%s: %" PRIu64 " recovered", point, c.n);
	cr_assert_leq(c.n, 400);
	cr_assert_eq(count_files(dir, ".inprogress"), 0);

	/* Power loss on top: the unsynced (after_write) or last frame is torn in
	 * half.  Recovery cuts it and keeps everything before. */
	char path[256];
	seg_path(path, sizeof(path), dir, 101);
	size_t n;
	uint8_t *b = slurp(path, &n);
	size_t offs[MAX_FRAMES], lens[MAX_FRAMES];
	size_t k = frame_offsets(b, n, offs, lens, MAX_FRAMES);
	cr_assert_geq(k, 1);
	memset(b + offs[k - 1] + lens[k - 1] / 2, 0, lens[k - 1] - lens[k - 1] / 2);
	spit(path, b, n);
	free(b);
	chk_init(&c, GEN_TEXT, 1);
	cr_assert_eq(wal_recover(dir, 0, chk_fn, &c, 0, &rep), 0, "%s", rep.error);
	cr_assert_not(c.bad);
	cr_assert_eq(rep.tail_cut, 1);
	cr_assert_eq(rep.tail_offset, offs[k - 1]);
	cr_assert_geq(c.n, 100, "everything durable before the crash survives");
	struct seginfo_list l = { .n = 0 };
	cr_assert_eq(wal_inspect(dir, collect_seg, &l), 0, "clean after the cut");
	rm_rf(dir);
}

WM_TEST(wal_errinj, crash_after_write) { crash_test("wal_crash_after_write", 100); }
/* After the sync the first batch of 101.. was durable: more than 100 survive. */
WM_TEST(wal_errinj, crash_after_sync) { crash_test("wal_crash_after_sync", 101); }

/* A write failure in the WAL thread (here: the file size limit hit while
 * preallocating a segment sized for a big frame) is fatal: the process
 * exits with EXIT_FAILURE, nothing is reported durable that is not on disk,
 * and recovery removes the half-made segment and keeps everything before. */
WM_TEST(wal_errinj, write_failure_exits)
{
	char dir[64];
	make_tmp(dir);
	wal_set_recovery_log(capture_log);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct rlimit rl = { .rlim_cur = 100u << 10, .rlim_max = 100u << 10 };
		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl))
			_exit(2);
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 2); /* the fatal message is expected */
		struct wal_config cfg = { .dir = dir, .mode = WAL_MODE_FSYNC,
					  .segment_size = 64u << 10, .max_batch_bytes = 256u << 10 };
		char err[256];
		struct wal *w = wal_open(&cfg, 1, err, sizeof(err));
		if (!w)
			_exit(3);
		uint8_t p[GEN_MAX];
		for (uint64_t l = 1; l <= 10; l++)
			if (wal_append(w, l, p, gen(GEN_TEXT, l, p)))
				_exit(4);
		wal_flush(w);
		size_t big = 150u << 10;
		uint8_t *q = malloc(big);
		for (size_t i = 0; i < big; i++)
			q[i] = (uint8_t)(splitmix(i / 8) >> (8 * (i % 8)));
		if (wal_append(w, 11, q, big))
			_exit(5);
		wal_flush(w); /* never returns */
		_exit(6);
	}
	int status = 0;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status));
	cr_assert_eq(WEXITSTATUS(status), EXIT_FAILURE, "exit %d", WEXITSTATUS(status));
	cr_assert_eq(count_files(dir, ".inprogress"), 0, "the half-made segment was removed");
	struct wal_recovery_report rep;
	struct chk c;
	chk_init(&c, GEN_TEXT, 1);
	cr_assert_eq(wal_recover(dir, 0, chk_fn, &c, 0, &rep), 0, "%s", rep.error);
	cr_assert_eq(c.n, 10);
	cr_assert_not(c.bad);
	cr_assert_eq(count_files(dir, ".inprogress"), 0, "and none appears later");
	rm_rf(dir);
}

/* ---- segment dictionaries (wal.c) ---------------------------------------- */

#define DICT_BYTES 1024u
#define DICT_EVERY 4096u

static struct wal *open_wal_dict(const char *dir, uint64_t seg, uint64_t next)
{
	struct wal_config cfg = { .dir = dir, .mode = WAL_MODE_WRITE, .segment_size = seg, .zstd_level = 1,
				  .dict_bytes = DICT_BYTES, .dict_refresh = DICT_EVERY };
	char err[512] = "";
	struct wal *w = wal_open(&cfg, next, err, sizeof(err));
	cr_assert_not_null(w, "wal_open: %s", err);
	return w;
}

/* Every sound frame of a segment image, walked by header and checksum only
 * (no dictionary needed): offsets, lengths, flags; returns the count. */
static size_t sound_frames(const uint8_t *b, size_t n, size_t *offs, size_t *lens, uint16_t *flags, size_t max)
{
	uint64_t salt, first;
	cr_assert_eq(wal_seg_header_decode(b, n, &salt, &first, NULL), 0);
	size_t off = WAL_SEG_HEADER_SIZE, k = 0;
	struct wal_frame_view fv;
	while (k < max && wal_frame_sound(b + off, n - off, salt, &fv, NULL) == WAL_FRAME_OK) {
		offs[k] = off;
		lens[k] = fv.frame_len;
		flags[k] = fv.flags;
		k++;
		off += fv.frame_len;
	}
	return k;
}

/* Encode a frame of txns [from, to] (GEN_TEXT) with or without a dictionary. */
static void dict_txn_frame(ZSTD_CCtx *cc, const ZSTD_CDict *cd, uint32_t id, uint64_t from, uint64_t to,
			   struct buf *out, struct wal_frame_view *fv)
{
	struct buf raw;
	buf_init(&raw, 0);
	uint8_t p[GEN_MAX];
	for (uint64_t l = from; l <= to; l++)
		cr_assert_eq(wal_txn_put(&raw, l, p, (uint32_t)gen(GEN_TEXT, l, p)), 0);
	cr_assert_eq(wal_frame_encode_dict(cc, 1, cd, id, SALT, (uint8_t *)raw.data, raw.len, out, fv), 0);
	buf_free(&raw);
}

/* A dictionary frame decodes to no transactions and, read with a
 * dictionary state, becomes the dictionary the next frames need; a frame
 * that uses one decodes only with that very one. */
WM_TEST(wal_dict, codec_roundtrip_and_refusals)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	uint8_t dict[4096];
	for (size_t i = 0; i < sizeof(dict); i++)
		dict[i] = (uint8_t)"{\"wine\":\"Chateau Margaux\",\"vintage\":2015}"[i % 40];
	uint32_t id = wal_dict_id(dict, sizeof(dict));
	cr_assert_neq(id, 0);
	ZSTD_CDict *cd = ZSTD_createCDict(dict, sizeof(dict), 1);
	struct buf df, tf, raw;
	buf_init(&df, 0), buf_init(&tf, 0), buf_init(&raw, 0);
	struct wal_frame_view fv;
	cr_assert_eq(wal_frame_encode_dictframe(cc, 1, SALT, dict, sizeof(dict), &df, &fv), 0);
	cr_assert_eq(fv.flags, WAL_FRAME_F_DICT);
	cr_assert_eq(fv.dict_id, id);
	cr_assert_eq(fv.txn_count, 0);
	dict_txn_frame(cc, cd, id, 7, 19, &tf, &fv);
	cr_assert_eq(fv.flags, WAL_FRAME_F_USES_DICT);
	cr_assert_eq(fv.dict_id, id);
	char why[96];
	/* without a dictionary state: the dictionary frame is sound and empty,
	 * the frame using it is refused */
	cr_assert_eq(wal_frame_decode((uint8_t *)df.data, df.len, SALT, &fv, &raw, why), WAL_FRAME_OK, "%s", why);
	cr_assert_eq(raw.len, 0);
	cr_assert_eq(wal_frame_decode((uint8_t *)tf.data, tf.len, SALT, &fv, &raw, why), WAL_FRAME_BAD);
	cr_assert(strstr(why, "needs dictionary"), "%s", why);
	cr_assert_eq(wal_frame_sound((uint8_t *)tf.data, tf.len, SALT, &fv, why), WAL_FRAME_OK, "%s", why);
	/* with one: the dictionary frame installs it, the next frame decodes */
	ZSTD_DCtx *dc = ZSTD_createDCtx();
	struct wal_dict d = {0};
	cr_assert_eq(wal_frame_decode_with(dc, &d, (uint8_t *)tf.data, tf.len, SALT, &fv, &raw, why), WAL_FRAME_BAD);
	cr_assert_eq(wal_frame_decode_with(dc, &d, (uint8_t *)df.data, df.len, SALT, &fv, &raw, why), WAL_FRAME_OK,
		     "%s", why);
	cr_assert_eq(d.id, id);
	cr_assert_eq(raw.len, 0);
	cr_assert_eq(wal_frame_decode_with(dc, &d, (uint8_t *)tf.data, tf.len, SALT, &fv, &raw, why), WAL_FRAME_OK,
		     "%s", why);
	struct chk c;
	chk_init(&c, GEN_TEXT, 7);
	size_t off = 0;
	uint64_t lsn;
	const uint8_t *pl;
	uint32_t len;
	while (wal_txn_next(&raw, &off, &lsn, &pl, &len))
		chk_fn(&c, lsn, pl, len);
	cr_assert_eq(c.n, 13);
	cr_assert_not(c.bad);
	/* another dictionary in the state: refused */
	dict[0] ^= 1;
	struct buf df2;
	buf_init(&df2, 0);
	cr_assert_eq(wal_frame_encode_dictframe(cc, 1, SALT, dict, sizeof(dict), &df2, &fv), 0);
	cr_assert_eq(wal_frame_decode_with(dc, &d, (uint8_t *)df2.data, df2.len, SALT, &fv, &raw, why),
		     WAL_FRAME_OK);
	cr_assert_neq(d.id, id);
	cr_assert_eq(wal_frame_decode_with(dc, &d, (uint8_t *)tf.data, tf.len, SALT, &fv, &raw, why), WAL_FRAME_BAD);
	cr_assert(strstr(why, "another"), "%s", why);
	/* bounds of a dictionary frame: 1 .. WAL_DICT_MAX bytes */
	size_t before = df2.len;
	cr_assert_eq(wal_frame_encode_dictframe(cc, 1, SALT, dict, 0, &df2, &fv), -1);
	uint8_t *big = calloc(1, WAL_DICT_MAX + 1);
	cr_assert_eq(wal_frame_encode_dictframe(cc, 1, SALT, big, WAL_DICT_MAX + 1, &df2, &fv), -1);
	cr_assert_eq(df2.len, before, "a refused encode leaves out unchanged");
	cr_assert_eq(wal_frame_encode_dictframe(cc, 1, SALT, big, WAL_DICT_MAX, &df2, &fv), 0);
	free(big);
	/* an id the content does not hash to (header re-checksummed): refused */
	uint8_t *h = (uint8_t *)df.data;
	wr_u32(h + 44, id ^ 0x100);
	XXH3_state_t st;
	XXH3_64bits_reset(&st);
	XXH3_64bits_update(&st, h, 48);
	XXH3_64bits_update(&st, h + WAL_FRAME_HEADER_SIZE, df.len - WAL_FRAME_HEADER_SIZE);
	wr_u64(h + 48, XXH3_64bits_digest(&st));
	cr_assert_eq(wal_frame_sound(h, df.len, SALT, &fv, why), WAL_FRAME_OK, "%s", why);
	cr_assert_eq(wal_frame_decode_with(dc, &d, h, df.len, SALT, &fv, &raw, why), WAL_FRAME_BAD);
	cr_assert(strstr(why, "does not match its id"), "%s", why);
	/* flags: unknown bit, both bits, a plain frame with an id: refused */
	static const uint16_t bad_flags[] = {0x4, WAL_FRAME_F_DICT | WAL_FRAME_F_USES_DICT, 0};
	for (size_t i = 0; i < sizeof(bad_flags) / sizeof(bad_flags[0]); i++) {
		struct buf t;
		buf_init(&t, 0);
		dict_txn_frame(cc, cd, id, 1, 3, &t, &fv);
		uint8_t *th = (uint8_t *)t.data;
		wr_u16(th + 6, bad_flags[i]);
		XXH3_64bits_reset(&st);
		XXH3_64bits_update(&st, th, 48);
		XXH3_64bits_update(&st, th + WAL_FRAME_HEADER_SIZE, t.len - WAL_FRAME_HEADER_SIZE);
		wr_u64(th + 48, XXH3_64bits_digest(&st));
		cr_assert_eq(wal_frame_sound(th, t.len, SALT, &fv, why), WAL_FRAME_BAD, "flags %#x", bad_flags[i]);
		buf_free(&t);
	}
	wal_dict_free(&d);
	cr_assert_null(d.ddict);
	wal_dict_free(&d); /* twice is harmless */
	ZSTD_freeCDict(cd);
	ZSTD_freeCCtx(cc);
	ZSTD_freeDCtx(dc);
	buf_free(&df), buf_free(&df2), buf_free(&tf), buf_free(&raw);
}

/* Written with small dictionaries renewed often over many 64 KiB segments:
 * every segment holds dictionary frames, never as its first frame, frames
 * use them, and recovery and inspection read every transaction back. */
WM_TEST(wal_dict, many_segments_roundtrip)
{
	char dir[64];
	make_tmp(dir);
	const uint64_t N = 40000; /* GEN_TEXT compresses ~50x against a dictionary */
	struct wal *w = open_wal_dict(dir, 64u << 10, 1);
	append_range(w, GEN_TEXT, 1, N, 7);
	wal_flush(w);
	struct wal_stats st;
	wal_stats(w, &st);
	wal_close(w);
	cr_assert_geq(st.segments_created, 3, "%" PRIu64 " segments", st.segments_created);
	cr_assert_geq(st.dict_frames, st.segments_created, "%" PRIu64 " dictionary frames", st.dict_frames);
	struct seginfo_list l;
	memset(&l, 0, sizeof(l));
	cr_assert_eq(wal_inspect(dir, collect_seg, &l), 0);
	uint64_t txns = 0, frames = 0, uses = 0, dicts = 0;
	for (size_t i = 0; i < l.n; i++) {
		cr_assert(l.v[i].ok, "%s: %s", l.v[i].path, l.v[i].error);
		txns += l.v[i].txns;
		frames += l.v[i].frames;
		size_t n, offs[MAX_FRAMES], lens[MAX_FRAMES];
		uint16_t flags[MAX_FRAMES];
		uint8_t *b = slurp(l.v[i].path, &n);
		size_t k = sound_frames(b, n, offs, lens, flags, MAX_FRAMES);
		cr_assert_gt(k, 1);
		cr_assert_eq(flags[0] & WAL_FRAME_F_DICT, 0, "a segment never starts with a dictionary");
		cr_assert_eq(flags[0] & WAL_FRAME_F_USES_DICT, 0, "nor with a frame needing one");
		for (size_t j = 0; j < k; j++) {
			dicts += !!(flags[j] & WAL_FRAME_F_DICT);
			uses += !!(flags[j] & WAL_FRAME_F_USES_DICT);
		}
		free(b);
	}
	cr_assert_eq(txns, N);
	cr_assert_eq(frames, st.frames);
	cr_assert_eq(dicts, st.dict_frames);
	cr_assert_gt(uses, frames / 2, "most frames use a dictionary: %" PRIu64 " of %" PRIu64, uses, frames);
	struct wal_recovery_report rep;
	struct chk c;
	chk_init(&c, GEN_TEXT, 1);
	cr_assert_eq(wal_recover(dir, 0, chk_fn, &c, 0, &rep), 0, "%s", rep.error);
	cr_assert_eq(c.n, N);
	cr_assert_not(c.bad);
	cr_assert_eq(rep.tail_cut, 0);
	rm_rf(dir);
}

/* A fresh dir with txns 1..last (GEN_TEXT, flushed every 3) in one 1 MiB
 * segment with dictionaries: its path and bytes (*n, caller frees), its
 * sound frames (*k), and the index of the first (or the last, want_last)
 * dictionary frame with a frame behind it (k when there is none). */
static uint8_t *dict_image(char dir[64], char path[256], uint64_t last, size_t *n, size_t *offs, size_t *lens,
			   uint16_t *flags, size_t *k, int want_last, size_t *d)
{
	make_tmp(dir);
	struct wal *w = open_wal_dict(dir, 1u << 20, 1);
	append_range(w, GEN_TEXT, 1, last, 3);
	wal_close(w);
	seg_path(path, 256, dir, 1);
	uint8_t *b = slurp(path, n);
	*k = sound_frames(b, *n, offs, lens, flags, MAX_FRAMES);
	*d = *k;
	for (size_t j = 1; j + 1 < *k; j++)
		if ((flags[j] & WAL_FRAME_F_DICT) && (want_last || *d == *k))
			*d = j;
	return b;
}

/* The last segment cut at every offset from just before its last
 * dictionary frame to the end of the frame after it: a dictionary frame
 * at the very end is a clean end (nothing lost, the log goes on), a torn
 * one or a torn frame behind it is cut, and every transaction before the
 * cut comes back. */
WM_TEST(wal_dict, torn_at_and_after_a_dictionary_frame)
{
	char dir[64], path[256];
	size_t n, k, d, offs[MAX_FRAMES], lens[MAX_FRAMES];
	uint16_t flags[MAX_FRAMES];
	uint8_t *orig = dict_image(dir, path, 400, &n, offs, lens, flags, &k, 1, &d);
	cr_assert_lt(d, k, "a dictionary frame was written");
	cr_assert(flags[d + 1] & WAL_FRAME_F_USES_DICT);
	/* the transactions before the dictionary frame, and those of the frame behind it */
	struct buf raw;
	buf_init(&raw, 0);
	struct wal_frame_view fv;
	uint64_t salt, first;
	cr_assert_eq(wal_seg_header_decode(orig, n, &salt, &first, NULL), 0);
	uint64_t before = 0;
	for (size_t j = d; j-- > 0;) {
		cr_assert_eq(wal_frame_sound(orig + offs[j], n - offs[j], salt, &fv, NULL), WAL_FRAME_OK);
		if (!(fv.flags & WAL_FRAME_F_DICT)) {
			before = fv.last_lsn;
			break;
		}
	}
	cr_assert_gt(before, 0);
	cr_assert_eq(wal_frame_sound(orig + offs[d + 1], n - offs[d + 1], salt, &fv, NULL), WAL_FRAME_OK);
	uint64_t behind = fv.last_lsn;
	size_t from = offs[d], to = offs[d + 1] + lens[d + 1];
	uint8_t *img = malloc(n);
	wal_set_recovery_log(capture_log);
	for (size_t cut = from; cut <= to; cut += (cut < from + 64 || cut + 64 > to || cut == offs[d + 1]) ? 1 : 37) {
		memcpy(img, orig, n);
		memset(img + cut, 0, n - cut);
		spit(path, img, n);
		struct wal_recovery_report rep;
		struct chk c;
		chk_init(&c, GEN_TEXT, 1);
		cr_assert_eq(wal_recover(dir, 0, chk_fn, &c, 0, &rep), 0, "cut %zu: %s", cut, rep.error);
		cr_assert_not(c.bad);
		uint64_t want = cut < to ? before : behind;
		cr_assert_eq(c.n, want, "cut %zu (dictionary %zu..%zu, next ends %zu): %" PRIu64, cut, offs[d],
			     offs[d + 1], to, c.n);
		int clean = cut == from || cut == offs[d + 1] || cut == to;
		cr_assert_eq(rep.tail_cut, !clean, "cut %zu", cut);
	}
	/* a log that ends in a dictionary frame goes on */
	memcpy(img, orig, n);
	memset(img + offs[d + 1], 0, n - offs[d + 1]);
	spit(path, img, n);
	struct wal *w = open_wal_dict(dir, 1u << 20, before + 1);
	append_range(w, GEN_TEXT, before + 1, before + 50, 0);
	wal_close(w);
	struct wal_recovery_report rep;
	struct chk c;
	chk_init(&c, GEN_TEXT, 1);
	cr_assert_eq(wal_recover(dir, 0, chk_fn, &c, 0, &rep), 0, "%s", rep.error);
	cr_assert_eq(c.n, before + 50);
	cr_assert_not(c.bad);
	buf_free(&raw);
	free(img);
	free(orig);
	rm_rf(dir);
}

/* A damaged dictionary frame with frames behind it is corruption of
 * durable data, not a torn tail: refused (file untouched), salvage keeps
 * what precedes it. */
WM_TEST(wal_dict, damaged_dictionary_frame_refused)
{
	char dir[64], path[256];
	wal_set_recovery_log(capture_log);
	size_t n, k, d, offs[MAX_FRAMES], lens[MAX_FRAMES];
	uint16_t flags[MAX_FRAMES];
	uint8_t *b = dict_image(dir, path, 300, &n, offs, lens, flags, &k, 0, &d);
	cr_assert_lt(d, k, "a dictionary frame with frames behind it");
	b[offs[d] + lens[d] / 2] ^= 0x20;
	spit(path, b, n);
	struct wal_recovery_report rep;
	struct chk c;
	chk_init(&c, GEN_TEXT, 1);
	cr_assert_eq(wal_recover(dir, 0, chk_fn, &c, 0, &rep), -1, "refused, not cut");
	char off[64];
	snprintf(off, sizeof(off), "offset %zu", offs[d]);
	cr_assert(strstr(rep.error, off), "%s (want %s)", rep.error, off);
	size_t n2;
	uint8_t *b2 = slurp(path, &n2);
	cr_assert_eq(n2, n);
	cr_assert_eq(memcmp(b, b2, n), 0, "refusal leaves the file as it was");
	free(b2);
	uint64_t kept = c.n;
	chk_init(&c, GEN_TEXT, 1);
	cr_assert_eq(wal_recover(dir, 0, chk_fn, &c, 1, &rep), 0, "%s", rep.error);
	cr_assert_eq(c.n, kept);
	cr_assert_gt(kept, 0);
	cr_assert_not(c.bad);
	cr_assert_eq(rep.tail_offset, offs[d]);
	free(b);
	rm_rf(dir);
}

/* Out-of-range dictionary settings are refused at open. */
WM_TEST(wal_dict, config_bounds)
{
	char dir[64];
	make_tmp(dir);
	char err[256];
	struct wal_config cfg = { .dir = dir, .mode = WAL_MODE_WRITE, .dict_bytes = 255 };
	cr_assert_null(wal_open(&cfg, 1, err, sizeof(err)));
	cr_assert(strstr(err, "dict_bytes"), "%s", err);
	cfg.dict_bytes = WAL_DICT_MAX + 1;
	cr_assert_null(wal_open(&cfg, 1, err, sizeof(err)));
	cfg.dict_bytes = 4096;
	cfg.dict_refresh = 4095;
	cr_assert_null(wal_open(&cfg, 1, err, sizeof(err)));
	cfg.dict_refresh = 4096;
	struct wal *w = wal_open(&cfg, 1, err, sizeof(err));
	cr_assert_not_null(w, "%s", err);
	wal_close(w);
	cfg.dict_bytes = WAL_DICT_MAX;
	cfg.dict_refresh = 0;
	w = wal_open(&cfg, 1, err, sizeof(err));
	cr_assert_not_null(w, "at the bound: %s", err);
	wal_close(w);
	rm_rf(dir);
}
