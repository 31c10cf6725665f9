/*
 * test_snapshot.c -- snapshot files: round trips, bounds, corruption and
 * truncation anywhere, newest-valid selection, pruning, and the crash point
 * between "temp file synced" and "renamed".
 */
#include "tests/harness.h"
#include "tests/wm_test.h"
#include "net/buf.h"
#include "snapshot/snapshot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

/* ---- helpers ------------------------------------------------------------ */

static void mk_tmpdir(char *dir, size_t n)
{
	snprintf(dir, n, "/tmp/wm-snaptest.XXXXXX");
	cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
}

static void rm_tree(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	char p[PATH_MAX];
	while ((e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

static void snap_path(char *out, size_t n, const char *dir, uint64_t lsn, const char *suffix)
{
	snprintf(out, n, "%s/%020" PRIu64 "%s", dir, lsn, suffix);
}

static int exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Deterministic record i: size mostly 0..767, every 997th up to 64 KiB;
 * content half text-like (compressible), half random. */
static size_t gen_record(uint64_t i, uint8_t *out, size_t cap)
{
	uint64_t s = i * 7919u + 1;
	uint64_t r = splitmix(&s);
	size_t len = (i % 997 == 5) ? (size_t)(r % 65536) : (size_t)(r % 768);
	if (i == 0)
		len = 0;
	cr_assert_leq(len, cap);
	static const char txt[] = "{\"wine\":\"Chateau Margaux\",\"vintage\":2015,\"price_minor\":";
	for (size_t j = 0; j < len; j++) {
		if ((j / 16) % 2 == 0)
			out[j] = (uint8_t)txt[(j + i) % (sizeof(txt) - 1)];
		else {
			if (j % 8 == 0)
				r = splitmix(&s);
			out[j] = (uint8_t)(r >> (j % 8 * 8));
		}
	}
	return len;
}

#define GEN_CAP 65536

/* Write <dir>/<lsn>.snap with records 0..n-1 from gen_record.  Returns the
 * raw (uncompressed record) bytes written. */
static uint64_t write_snap(const char *dir, uint64_t lsn, uint64_t n)
{
	char err[512] = "";
	uint8_t *rec = malloc(GEN_CAP);
	uint64_t bytes = 0;
	struct snap_writer *w = snap_writer_open(dir, lsn, err, sizeof(err));
	cr_assert_not_null(w, "open: %s", err);
	for (uint64_t i = 0; i < n; i++) {
		size_t len = gen_record(i, rec, GEN_CAP);
		cr_assert_eq(snap_writer_add(w, rec, len), 0);
		bytes += len;
	}
	cr_assert_eq(snap_writer_commit(w, err, sizeof(err)), 0, "commit: %s", err);
	free(rec);
	return bytes;
}

struct check_ctx {
	uint64_t next;
	uint64_t mismatches;
	uint8_t *buf;
};

static int check_cb(void *vctx, const void *rec, size_t len)
{
	struct check_ctx *c = vctx;
	size_t want = gen_record(c->next, c->buf, GEN_CAP);
	if (want != len || (len && memcmp(rec, c->buf, len) != 0))
		c->mismatches++;
	c->next++;
	return 0;
}

/* Load and check byte-exactly against gen_record; returns records seen. */
static uint64_t load_check(const char *path, struct snap_info *info)
{
	char err[512] = "";
	struct check_ctx c = { 0, 0, malloc(GEN_CAP) };
	int rc = snap_load(path, check_cb, &c, info, err, sizeof(err));
	free(c.buf);
	cr_assert_eq(rc, 0, "load: %s", err);
	cr_assert_eq(c.mismatches, 0, "%" PRIu64 " records differ", c.mismatches);
	return c.next;
}

static int count_cb(void *ctx, const void *rec, size_t len)
{
	(void)rec;
	(void)len;
	++*(uint64_t *)ctx;
	return 0;
}

static void *read_file(const char *p, size_t *n)
{
	FILE *f = fopen(p, "rb");
	cr_assert_not_null(f);
	fseek(f, 0, SEEK_END);
	long sz = ftell(f);
	fseek(f, 0, SEEK_SET);
	void *d = malloc((size_t)sz + 1);
	cr_assert_eq(fread(d, 1, (size_t)sz, f), (size_t)sz);
	fclose(f);
	*n = (size_t)sz;
	return d;
}

static void write_file(const char *p, const void *d, size_t n)
{
	FILE *f = fopen(p, "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(d, 1, n, f), n);
	fclose(f);
}

/* Expect snap_load to refuse path without calling the callback, with an
 * error naming the file and an offset. */
static void expect_refused(const char *path, const char *what)
{
	char err[512] = "";
	uint64_t calls = 0;
	int rc = snap_load(path, count_cb, &calls, NULL, err, sizeof(err));
	cr_assert_eq(rc, -1, "%s: loaded a bad file", what);
	cr_assert_eq(calls, 0, "%s: records handed out before verification", what);
	cr_assert_not_null(strstr(err, path), "%s: error does not name the file: %s", what, err);
	cr_assert_not_null(strstr(err, "offset"), "%s: error gives no offset: %s", what, err);
}

/* Build a file with a correct header, trailer and checksums around an
 * arbitrary decompressed body `raw` (so framing checks are reachable). */
static void craft(const char *path, uint64_t lsn, const void *raw, size_t rawlen, uint64_t count,
		  int compressed)
{
	struct buf b;
	buf_init(&b, 0);
	uint8_t h[64] = "WMSNAP01";
	wr_u32(h + 8, 1);
	wr_u64(h + 24, lsn);
	wr_u64(h + 56, XXH3_64bits(h, 56));
	buf_append(&b, h, 64);
	if (compressed) {
		size_t cap = ZSTD_compressBound(rawlen);
		cr_assert_eq(buf_reserve(&b, cap), 0);
		size_t z = ZSTD_compress(b.data + b.len, cap, raw, rawlen, 1);
		cr_assert(!ZSTD_isError(z));
		b.len += z;
	} else {
		buf_append(&b, raw, rawlen);
	}
	uint8_t t[32] = "WMSNAPND";
	wr_u64(t + 8, count);
	wr_u64(t + 16, b.len - 64);
	wr_u64(t + 24, XXH3_64bits(b.data, b.len));
	buf_append(&b, t, 32);
	write_file(path, b.data, b.len);
	buf_free(&b);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- round trips -------------------------------------------------------- */

WM_TEST(snapshot, roundtrip_zero_records)
{
	char dir[64], p[PATH_MAX];
	mk_tmpdir(dir, sizeof(dir));
	write_snap(dir, 5, 0);
	snap_path(p, sizeof(p), dir, 5, ".snap");
	struct snap_info info;
	cr_assert_eq(load_check(p, &info), 0);
	cr_assert_eq(info.records, 0);
	cr_assert_eq(info.lsn, 5);
	cr_assert(!exists(strcat(p, ".inprogress")));
	rm_tree(dir);
}

WM_TEST(snapshot, roundtrip_one_record_and_info)
{
	char dir[64], p[PATH_MAX], err[512] = "";
	mk_tmpdir(dir, sizeof(dir));
	uint64_t t0 = (uint64_t)time(NULL) * 1000u;
	struct snap_writer *w = snap_writer_open(dir, 42, err, sizeof(err));
	cr_assert_not_null(w, "%s", err);
	cr_assert_eq(snap_writer_add(w, "hello, cellar", 13), 0);
	cr_assert_eq(snap_writer_commit(w, err, sizeof(err)), 0, "%s", err);
	snap_path(p, sizeof(p), dir, 42, ".snap");

	struct snap_info info;
	int rc = snap_load(p, NULL, NULL, &info, err, sizeof(err));
	cr_assert_eq(rc, 0, "%s", err);
	cr_assert_str_eq(info.path, p);
	cr_assert_eq(info.lsn, 42);
	cr_assert_eq(info.records, 1);
	struct stat st;
	cr_assert_eq(stat(p, &st), 0);
	cr_assert_eq(info.file_bytes, (uint64_t)st.st_size);
	cr_assert_geq(info.created_unix_ms + 2000, t0);
	cr_assert_leq(info.created_unix_ms, t0 + 2000 + 1000);
	rm_tree(dir);
}

static int append_cb(void *ctx, const void *rec, size_t len)
{
	struct buf *b = ctx;
	buf_put_u32(b, (uint32_t)len);
	return buf_append(b, rec, len);
}

WM_TEST(snapshot, roundtrip_one_record_bytes)
{
	char dir[64], p[PATH_MAX], err[512] = "";
	mk_tmpdir(dir, sizeof(dir));
	struct snap_writer *w = snap_writer_open(dir, 1, err, sizeof(err));
	cr_assert_not_null(w, "%s", err);
	const uint8_t rec[5] = { 0, 0xff, 'a', 0, 7 };
	cr_assert_eq(snap_writer_add(w, rec, sizeof(rec)), 0);
	cr_assert_eq(snap_writer_commit(w, err, sizeof(err)), 0, "%s", err);
	snap_path(p, sizeof(p), dir, 1, ".snap");
	struct buf got;
	buf_init(&got, 0);
	cr_assert_eq(snap_load(p, append_cb, &got, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(got.len, 4 + sizeof(rec));
	cr_assert_eq(rd_u32((uint8_t *)got.data), sizeof(rec));
	cr_assert_eq(memcmp(got.data + 4, rec, sizeof(rec)), 0);
	buf_free(&got);
	rm_tree(dir);
}

WM_TEST(snapshot, roundtrip_100k_varied)
{
	char dir[64], p[PATH_MAX];
	mk_tmpdir(dir, sizeof(dir));
	const uint64_t n = 100000;
	double t0 = now_s();
	uint64_t raw = write_snap(dir, 1000, n);
	double t1 = now_s();
	snap_path(p, sizeof(p), dir, 1000, ".snap");
	struct snap_info info;
	cr_assert_eq(load_check(p, &info), n);
	double t2 = now_s();
	cr_assert_eq(info.records, n);
	cr_assert_eq(info.lsn, 1000);
	/* Timings include generating/checking the records; sanitizer build. */
	fprintf(stderr,
		"snapshot 100k: %.1f MB raw -> %.1f MB file; write %.0f MB/s %.0f rec/s; "
		"load (verify + deliver) %.0f MB/s %.0f rec/s\n",
		(double)raw / 1e6, (double)info.file_bytes / 1e6, (double)raw / 1e6 / (t1 - t0),
		(double)n / (t1 - t0), (double)raw / 1e6 / (t2 - t1), (double)n / (t2 - t1));
	rm_tree(dir);
}

/* ---- bounds ------------------------------------------------------------- */

static int sizes_cb(void *ctx, const void *rec, size_t len)
{
	struct buf *b = ctx;
	const uint8_t *r = rec;
	/* check the pattern written below: byte k == (uint8_t)(k * 31) */
	for (size_t k = 0; k < len; k += 4093)
		if (r[k] != (uint8_t)(k * 31))
			return 99;
	return buf_put_u64(b, len);
}

WM_TEST(snapshot, record_at_max_and_one_past)
{
	char dir[64], p[PATH_MAX], err[512] = "";
	mk_tmpdir(dir, sizeof(dir));
	size_t big = (size_t)SNAP_MAX_RECORD + 1;
	uint8_t *rec = malloc(big);
	for (size_t k = 0; k < big; k++)
		rec[k] = (uint8_t)(k * 31);

	struct snap_writer *w = snap_writer_open(dir, 7, err, sizeof(err));
	cr_assert_not_null(w, "%s", err);
	cr_assert_eq(snap_writer_add(w, rec, SNAP_MAX_RECORD), 0, "at the bound");
	cr_assert_eq(snap_writer_add(w, rec, big), -1, "one past the bound");
	cr_assert_eq(snap_writer_add(w, rec, 3), 0, "writer usable after a refused record");
	cr_assert_eq(snap_writer_commit(w, err, sizeof(err)), 0, "%s", err);
	snap_path(p, sizeof(p), dir, 7, ".snap");
	struct buf sizes;
	buf_init(&sizes, 0);
	cr_assert_eq(snap_load(p, sizes_cb, &sizes, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sizes.len, 16);
	cr_assert_eq(rd_u64((uint8_t *)sizes.data), SNAP_MAX_RECORD);
	cr_assert_eq(rd_u64((uint8_t *)sizes.data + 8), 3);
	buf_free(&sizes);

	/* The loader refuses an entry one past the bound even when every
	 * checksum is right. */
	uint8_t *raw = malloc(4 + big);
	wr_u32(raw, (uint32_t)big);
	memcpy(raw + 4, rec, big);
	snap_path(p, sizeof(p), dir, 8, ".snap");
	craft(p, 8, raw, 4 + big, 1, 1);
	expect_refused(p, "record past SNAP_MAX_RECORD");
	char e2[512];
	snap_load(p, NULL, NULL, NULL, e2, sizeof(e2));
	cr_assert_not_null(strstr(e2, "exceeds"), "%s", e2);
	/* ... and accepts one exactly at it. */
	wr_u32(raw, SNAP_MAX_RECORD);
	craft(p, 8, raw, 4 + SNAP_MAX_RECORD, 1, 1);
	cr_assert_eq(snap_load(p, NULL, NULL, NULL, e2, sizeof(e2)), 0, "%s", e2);
	free(raw);
	free(rec);
	rm_tree(dir);
}

/* ---- corruption and truncation ------------------------------------------ */

WM_TEST(snapshot, every_single_bit_flip_refused_small_file)
{
	char dir[64], p[PATH_MAX], err[512] = "";
	mk_tmpdir(dir, sizeof(dir));
	struct snap_writer *w = snap_writer_open(dir, 3, err, sizeof(err));
	cr_assert_not_null(w, "%s", err);
	cr_assert_eq(snap_writer_add(w, "ab", 2), 0);
	cr_assert_eq(snap_writer_add(w, "", 0), 0);
	cr_assert_eq(snap_writer_add(w, "cde", 3), 0);
	cr_assert_eq(snap_writer_commit(w, err, sizeof(err)), 0, "%s", err);
	snap_path(p, sizeof(p), dir, 3, ".snap");
	size_t n;
	uint8_t *orig = read_file(p, &n);
	int fd = open(p, O_RDWR);
	cr_assert_geq(fd, 0);
	for (size_t i = 0; i < n; i++) {
		for (int bit = 0; bit < 8; bit++) {
			uint8_t c = orig[i] ^ (uint8_t)(1u << bit);
			cr_assert_eq(pwrite(fd, &c, 1, (off_t)i), 1);
			char what[64];
			snprintf(what, sizeof(what), "flip byte %zu of %zu, bit %d", i, n, bit);
			expect_refused(p, what);
		}
		cr_assert_eq(pwrite(fd, &orig[i], 1, (off_t)i), 1);
	}
	close(fd);
	uint64_t calls = 0;
	cr_assert_eq(snap_load(p, count_cb, &calls, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(calls, 3);
	free(orig);
	rm_tree(dir);
}

WM_TEST(snapshot, bit_flip_in_each_region_of_large_file_refused)
{
	char dir[64], p[PATH_MAX];
	mk_tmpdir(dir, sizeof(dir));
	write_snap(dir, 9, 5000);
	snap_path(p, sizeof(p), dir, 9, ".snap");
	size_t n;
	uint8_t *orig = read_file(p, &n);
	cr_assert_gt(n, (size_t)1 << 20, "want a body bigger than one read chunk");
	size_t at[] = { 0, 9, 20, 30, 47, 60, 63,        /* header */
			64, 65, 100, n / 3, n / 2, n - 40, n - 33, /* body */
			n - 32, n - 25, n - 20, n - 12, n - 1 };   /* trailer */
	const char *region[] = { "header", "body", "trailer" };
	for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
		orig[at[k]] ^= 0x10;
		write_file(p, orig, n);
		orig[at[k]] ^= 0x10;
		char what[64];
		snprintf(what, sizeof(what), "%s flip at %zu",
			 region[at[k] < 64 ? 0 : at[k] < n - 32 ? 1 : 2], at[k]);
		expect_refused(p, what);
	}
	write_file(p, orig, n);
	cr_assert_eq(load_check(p, NULL), 5000);
	free(orig);
	rm_tree(dir);
}

WM_TEST(snapshot, truncated_or_extended_refused)
{
	char dir[64], p[PATH_MAX];
	mk_tmpdir(dir, sizeof(dir));
	write_snap(dir, 11, 300);
	snap_path(p, sizeof(p), dir, 11, ".snap");
	size_t n;
	uint8_t *orig = read_file(p, &n);
	size_t cut[] = { 0, 1, 8, 63, 64, 65, 95, 96, n / 2, n - 33, n - 32, n - 31, n - 8, n - 1 };
	for (size_t k = 0; k < sizeof(cut) / sizeof(cut[0]); k++) {
		write_file(p, orig, cut[k]);
		char what[64];
		snprintf(what, sizeof(what), "truncated to %zu of %zu", cut[k], n);
		expect_refused(p, what);
	}
	uint8_t *longer = malloc(n + 1);
	memcpy(longer, orig, n);
	longer[n] = 0;
	write_file(p, longer, n + 1);
	expect_refused(p, "one byte appended");
	free(longer);
	free(orig);
	rm_tree(dir);
}

WM_TEST(snapshot, bad_framing_with_good_checksums_refused)
{
	char dir[64], p[PATH_MAX];
	mk_tmpdir(dir, sizeof(dir));
	snap_path(p, sizeof(p), dir, 1, ".snap");
	uint8_t raw[64];
	memset(raw, 'x', sizeof(raw));
	wr_u32(raw, 10);      /* entry 0: 10 bytes */
	wr_u32(raw + 14, 20); /* entry 1: 20 bytes, ends at 38 */

	craft(p, 1, raw, 38, 2, 1);
	cr_assert_eq(snap_load(p, NULL, NULL, NULL, NULL, 0), 0, "control: well-formed crafted file");
	craft(p, 1, raw, 38, 3, 1);
	expect_refused(p, "fewer records than the trailer says");
	craft(p, 1, raw, 38, 1, 1);
	expect_refused(p, "more records than the trailer says");
	craft(p, 1, raw, 37, 2, 1);
	expect_refused(p, "last entry cut short");
	craft(p, 1, raw, 40, 2, 1);
	expect_refused(p, "two stray bytes after the last entry");
	craft(p, 1, raw, 0, 0, 0);
	expect_refused(p, "empty body (no zstd frame)");
	craft(p, 1, raw, 38, 2, 0);
	expect_refused(p, "body not zstd");
	rm_tree(dir);
}

/* ---- the writer's hint -------------------------------------------------- */

struct hint_seen {
	int hints;               /* hint hook calls */
	uint64_t records;        /* the count it was given */
	size_t len;
	uint8_t bytes[SNAP_MAX_HINT];
	uint64_t census_before;  /* census calls before the hint */
	uint64_t census, fn;
};

static void hint_hook(void *ctx, const void *hint, size_t len, uint64_t records)
{
	struct hint_seen *h = ctx;
	h->hints++;
	h->census_before = h->census;
	h->records = records;
	h->len = len;
	cr_assert_leq(len, SNAP_MAX_HINT);
	memcpy(h->bytes, hint, len);
}

static void census_hook(void *ctx, const void *rec, size_t len)
{
	(void)rec;
	(void)len;
	((struct hint_seen *)ctx)->census++;
}

static int fn_hook(void *ctx, const void *rec, size_t len)
{
	(void)rec;
	(void)len;
	((struct hint_seen *)ctx)->fn++;
	return 0;
}

WM_TEST(snapshot, a_hint_goes_first_to_its_hook_and_never_to_fn)
{
	char dir[64], p[PATH_MAX], err[512] = "";
	mk_tmpdir(dir, sizeof(dir));
	uint8_t hint[SNAP_MAX_HINT + 1];
	for (size_t i = 0; i < sizeof(hint); i++)
		hint[i] = (uint8_t)(i * 31 + 7);
	/* the bound: SNAP_MAX_HINT bytes are taken, one more is refused and
	 * leaves the writer usable; a hint after a hint or after a record is
	 * refused too */
	struct snap_writer *w = snap_writer_open(dir, 9, err, sizeof(err));
	cr_assert_not_null(w, "%s", err);
	cr_assert_eq(snap_writer_hint(w, hint, SNAP_MAX_HINT + 1), -1, "a hint past SNAP_MAX_HINT");
	cr_assert_eq(snap_writer_hint(w, hint, SNAP_MAX_HINT), 0, "a hint of SNAP_MAX_HINT bytes");
	cr_assert_eq(snap_writer_hint(w, hint, 1), -1, "a second hint");
	cr_assert_eq(snap_writer_add(w, "rec-a", 5), 0);
	cr_assert_eq(snap_writer_add(w, "", 0), 0);
	cr_assert_eq(snap_writer_add(w, "rec-c", 5), 0);
	cr_assert_eq(snap_writer_commit(w, err, sizeof(err)), 0, "%s", err);
	w = snap_writer_open(dir, 10, err, sizeof(err));
	cr_assert_not_null(w, "%s", err);
	cr_assert_eq(snap_writer_add(w, "rec", 3), 0);
	cr_assert_eq(snap_writer_hint(w, hint, 1), -1, "a hint after a record");
	snap_writer_abort(w);

	snap_path(p, sizeof(p), dir, 9, ".snap");
	struct hint_seen *h = calloc(1, sizeof(*h));
	cr_assert_not_null(h);
	struct snap_load_hooks hk = {.hint = hint_hook, .census = census_hook, .fn = fn_hook, .ctx = h};
	struct snap_info si;
	cr_assert_eq(snap_load_hooked(p, &hk, &si, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(h->hints, 1, "the hint is handed over once (the verifying pass)");
	cr_assert_eq(h->census_before, 0, "before the first record");
	cr_assert_eq(h->len, SNAP_MAX_HINT);
	cr_assert_eq(memcmp(h->bytes, hint, SNAP_MAX_HINT), 0, "the hint's bytes as written");
	cr_assert_eq(h->records, 3, "with the trailer's count");
	cr_assert_eq(h->census, 3, "the census sees the records only");
	cr_assert_eq(h->fn, 3, "fn sees the records only");
	cr_assert_eq(si.records, 3, "the count leaves the hint out");
	uint64_t calls = 0;
	cr_assert_eq(snap_load(p, count_cb, &calls, NULL, err, sizeof(err)), 0, "without a hint hook: %s", err);
	cr_assert_eq(calls, 3);
	free(h);
	rm_tree(dir);
}

WM_TEST(snapshot, a_hint_out_of_place_or_too_long_is_refused_before_any_record)
{
	char dir[64], p[PATH_MAX];
	mk_tmpdir(dir, sizeof(dir));
	snap_path(p, sizeof(p), dir, 1, ".snap");
	uint8_t raw[64 + SNAP_MAX_HINT];
	memset(raw, 'h', sizeof(raw));
	/* control: an empty hint, then one record of 10 bytes */
	wr_u32(raw, 0x80000000u);
	wr_u32(raw + 4, 10);
	craft(p, 1, raw, 18, 1, 1);
	uint64_t calls = 0;
	cr_assert_eq(snap_load(p, count_cb, &calls, NULL, NULL, 0), 0, "control: a well-formed hinted file");
	cr_assert_eq(calls, 1);
	/* the hint as the second entry */
	wr_u32(raw, 10);
	wr_u32(raw + 14, 0x80000000u | 4);
	craft(p, 1, raw, 22, 1, 1);
	expect_refused(p, "a hint after a record");
	/* two hints */
	wr_u32(raw, 0x80000000u | 2);
	wr_u32(raw + 6, 0x80000000u | 2);
	wr_u32(raw + 12, 1);
	craft(p, 1, raw, 17, 1, 1);
	expect_refused(p, "a second hint");
	/* one byte past the bound, however many bytes follow */
	wr_u32(raw, 0x80000000u | (SNAP_MAX_HINT + 1));
	craft(p, 1, raw, 4 + SNAP_MAX_HINT + 1, 0, 1);
	expect_refused(p, "a hint of SNAP_MAX_HINT + 1 bytes");
	/* at the bound it is taken */
	wr_u32(raw, 0x80000000u | SNAP_MAX_HINT);
	craft(p, 1, raw, 4 + SNAP_MAX_HINT, 0, 1);
	cr_assert_eq(snap_load(p, NULL, NULL, NULL, NULL, 0), 0, "a hint of SNAP_MAX_HINT bytes");
	/* cut short */
	craft(p, 1, raw, 4 + SNAP_MAX_HINT - 1, 0, 1);
	expect_refused(p, "a hint cut short");
	rm_tree(dir);
}

WM_TEST(snapshot, unsupported_version_and_missing_file)
{
	char dir[64], p[PATH_MAX];
	mk_tmpdir(dir, sizeof(dir));
	write_snap(dir, 2, 1);
	snap_path(p, sizeof(p), dir, 2, ".snap");
	size_t n;
	uint8_t *d = read_file(p, &n);
	wr_u32(d + 8, 2);
	wr_u64(d + 56, XXH3_64bits(d, 56)); /* a consistent header of version 2 */
	write_file(p, d, n);
	expect_refused(p, "version 2");
	free(d);
	char err[512] = "";
	snap_path(p, sizeof(p), dir, 3, ".snap");
	cr_assert_eq(snap_load(p, NULL, NULL, NULL, err, sizeof(err)), -1);
	cr_assert_not_null(strstr(err, p), "%s", err);
	rm_tree(dir);
}

static int stop_at_3(void *ctx, const void *rec, size_t len)
{
	(void)rec;
	(void)len;
	return ++*(uint64_t *)ctx == 3 ? 7 : 0;
}

WM_TEST(snapshot, callback_return_value_stops_the_load)
{
	char dir[64], p[PATH_MAX];
	mk_tmpdir(dir, sizeof(dir));
	write_snap(dir, 4, 10);
	snap_path(p, sizeof(p), dir, 4, ".snap");
	uint64_t calls = 0;
	cr_assert_eq(snap_load(p, stop_at_3, &calls, NULL, NULL, 0), 7);
	cr_assert_eq(calls, 3);
	rm_tree(dir);
}

/* ---- latest, prune, crash ----------------------------------------------- */

WM_TEST(snapshot, find_latest_picks_newest_valid)
{
	char dir[64], p[PATH_MAX], q[PATH_MAX];
	mk_tmpdir(dir, sizeof(dir));
	struct snap_info info;
	cr_assert_eq(snap_find_latest(dir, &info), 0, "empty dir");
	cr_assert_eq(snap_find_latest("/nonexistent/wm-snap-dir", &info), 0, "missing dir");

	write_snap(dir, 10, 3);
	write_snap(dir, 20, 4);
	write_snap(dir, 30, 5);
	cr_assert_eq(snap_find_latest(dir, &info), 1);
	cr_assert_eq(info.lsn, 30);
	cr_assert_eq(info.records, 5);

	/* corrupt the newest: it is skipped */
	snap_path(p, sizeof(p), dir, 30, ".snap");
	size_t n;
	uint8_t *d = read_file(p, &n);
	d[n / 2] ^= 1;
	write_file(p, d, n);
	free(d);
	cr_assert_eq(snap_find_latest(dir, &info), 1);
	cr_assert_eq(info.lsn, 20);
	snap_path(q, sizeof(q), dir, 20, ".snap");
	cr_assert_str_eq(info.path, q);

	/* a valid file under a name that lies about its LSN is skipped */
	snap_path(q, sizeof(q), dir, 10, ".snap");
	snap_path(p, sizeof(p), dir, 40, ".snap");
	cr_assert_eq(link(q, p), 0);
	cr_assert_eq(snap_find_latest(dir, &info), 1);
	cr_assert_eq(info.lsn, 20);

	/* names that are not snapshots are ignored */
	snprintf(p, sizeof(p), "%s/99.snap", dir);
	write_file(p, "x", 1);
	snprintf(p, sizeof(p), "%s/000000000000000000500.snap", dir);
	write_file(p, "x", 1);
	cr_assert_eq(snap_find_latest(dir, &info), 1);
	cr_assert_eq(info.lsn, 20);
	rm_tree(dir);
}

WM_TEST(snapshot, stale_inprogress_ignored_then_pruned_live_one_kept)
{
	char dir[64], p[PATH_MAX], err[512] = "";
	mk_tmpdir(dir, sizeof(dir));
	write_snap(dir, 10, 2);
	/* a crash left a complete-looking temp file with a higher LSN */
	write_snap(dir, 50, 2);
	char fin[PATH_MAX], tmp[PATH_MAX];
	snap_path(fin, sizeof(fin), dir, 50, ".snap");
	snap_path(tmp, sizeof(tmp), dir, 50, ".snap.inprogress");
	cr_assert_eq(rename(fin, tmp), 0);

	struct snap_info info;
	cr_assert_eq(snap_find_latest(dir, &info), 1);
	cr_assert_eq(info.lsn, 10, ".inprogress must never be loaded");

	/* a writer in progress right now */
	struct snap_writer *w = snap_writer_open(dir, 60, err, sizeof(err));
	cr_assert_not_null(w, "%s", err);
	cr_assert_eq(snap_writer_add(w, "r", 1), 0);
	/* a second writer for the same LSN is refused while it lives */
	cr_assert_null(snap_writer_open(dir, 60, err, sizeof(err)));
	cr_assert_not_null(strstr(err, "another writer"), "%s", err);

	cr_assert_eq(snap_prune(dir, 3), 10);
	cr_assert(!exists(tmp), "stale temp file removed");
	snap_path(p, sizeof(p), dir, 60, ".snap.inprogress");
	cr_assert(exists(p), "live writer's temp file kept");
	cr_assert_eq(snap_writer_commit(w, err, sizeof(err)), 0, "%s", err);
	cr_assert(!exists(p));
	cr_assert_eq(snap_find_latest(dir, &info), 1);
	cr_assert_eq(info.lsn, 60);
	rm_tree(dir);
}

WM_TEST(snapshot, prune_keeps_newest_and_returns_oldest_kept)
{
	char dir[64], p[PATH_MAX];
	mk_tmpdir(dir, sizeof(dir));
	cr_assert_eq(snap_prune(dir, 2), 0, "nothing to keep");
	cr_assert_eq(snap_prune("/nonexistent/wm-snap-dir", 2), 0);
	for (uint64_t l = 100; l <= 500; l += 100)
		write_snap(dir, l, 2);

	cr_assert_eq(snap_prune(dir, 10), 100, "fewer than keep: nothing deleted");
	for (uint64_t l = 100; l <= 500; l += 100) {
		snap_path(p, sizeof(p), dir, l, ".snap");
		cr_assert(exists(p));
	}
	cr_assert_eq(snap_prune(dir, 3), 300);
	for (uint64_t l = 100; l <= 500; l += 100) {
		snap_path(p, sizeof(p), dir, l, ".snap");
		cr_assert_eq(exists(p), l >= 300, "lsn %" PRIu64, l);
	}
	/* a corrupt newest one does not count towards `keep` and is left for
	 * the operator; the two valid ones below it are kept */
	write_snap(dir, 600, 2);
	snap_path(p, sizeof(p), dir, 600, ".snap");
	size_t n;
	uint8_t *d = read_file(p, &n);
	d[70] ^= 4;
	write_file(p, d, n);
	free(d);
	cr_assert_eq(snap_prune(dir, 2), 400);
	cr_assert(exists(p));
	snap_path(p, sizeof(p), dir, 300, ".snap");
	cr_assert(!exists(p));
	/* keep == 0 is treated as 1, never "delete everything" */
	cr_assert_eq(snap_prune(dir, 0), 500);
	snap_path(p, sizeof(p), dir, 500, ".snap");
	cr_assert(exists(p));
	snap_path(p, sizeof(p), dir, 400, ".snap");
	cr_assert(!exists(p));
	rm_tree(dir);
}

WM_TEST(snapshot, crash_before_rename_leaves_previous_snapshot)
{
	char dir[64], p[PATH_MAX];
	mk_tmpdir(dir, sizeof(dir));
	write_snap(dir, 100, 50);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		setenv("WM_ERRINJ", "some_other_point,snap_crash_before_rename", 1);
		char err[512];
		struct snap_writer *w = snap_writer_open(dir, 200, err, sizeof(err));
		if (!w)
			_exit(2);
		uint8_t *rec = malloc(GEN_CAP);
		for (uint64_t i = 0; i < 1000; i++) {
			size_t len = gen_record(i, rec, GEN_CAP);
			if (snap_writer_add(w, rec, len))
				_exit(3);
		}
		snap_writer_commit(w, err, sizeof(err));
		_exit(0); /* reached only if the injection point did not fire */
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 137, "child status %d", st);

	snap_path(p, sizeof(p), dir, 200, ".snap");
	cr_assert(!exists(p), "no final file after a crash before rename");
	snap_path(p, sizeof(p), dir, 200, ".snap.inprogress");
	cr_assert(exists(p), "the temp file is what the crash leaves");
	struct snap_info info;
	cr_assert_eq(snap_find_latest(dir, &info), 1);
	cr_assert_eq(info.lsn, 100);
	cr_assert_eq(load_check(info.path, NULL), 50);

	cr_assert_eq(snap_prune(dir, 1), 100);
	cr_assert(!exists(p), "the dead writer's temp file is pruned");
	rm_tree(dir);
}

WM_TEST(snapshot, abort_and_open_failures_leave_nothing)
{
	char dir[64], p[PATH_MAX], err[512] = "";
	mk_tmpdir(dir, sizeof(dir));
	struct snap_writer *w = snap_writer_open(dir, 77, err, sizeof(err));
	cr_assert_not_null(w, "%s", err);
	cr_assert_eq(snap_writer_add(w, "abc", 3), 0);
	snap_path(p, sizeof(p), dir, 77, ".snap.inprogress");
	cr_assert(exists(p));
	snap_writer_abort(w);
	cr_assert(!exists(p));
	snap_path(p, sizeof(p), dir, 77, ".snap");
	cr_assert(!exists(p));

	cr_assert_null(snap_writer_open("/nonexistent/wm-snap-dir", 1, err, sizeof(err)));
	cr_assert_not_null(strstr(err, "/nonexistent/wm-snap-dir"), "%s", err);
	struct snap_info info;
	cr_assert_eq(snap_find_latest(dir, &info), 0);
	rm_tree(dir);
}

/* ---- snap_load_latest: one verifying pass, fallback, hooks -------------- */

struct hook_log {
	unsigned begins, verifieds;
	uint64_t census, records; /* census: since the last begin */
	uint64_t verified_lsn;
	int verified_rc;          /* what verified returns */
	uint64_t stop_at;         /* fn returns 5 at this record (0: never) */
};

static void h_begin(void *ctx)
{
	struct hook_log *l = ctx;
	l->begins++;
	l->census = 0;
}

static void h_census(void *ctx, const void *rec, size_t len)
{
	(void)rec;
	(void)len;
	struct hook_log *l = ctx;
	cr_assert_eq(l->records, 0, "census after records were handed out");
	l->census++;
}

static int h_verified(void *ctx, const struct snap_info *si)
{
	struct hook_log *l = ctx;
	cr_assert_eq(l->records, 0, "verified after records were handed out");
	cr_assert_eq(si->records, l->census, "census and trailer disagree");
	l->verifieds++;
	l->verified_lsn = si->lsn;
	return l->verified_rc;
}

static int h_record(void *ctx, const void *rec, size_t len)
{
	(void)rec;
	(void)len;
	struct hook_log *l = ctx;
	cr_assert_eq(l->verifieds, 1, "a record before the file verified");
	l->records++;
	return l->stop_at && l->records == l->stop_at ? 5 : 0;
}

/* snap_load_latest with stderr captured into out (NUL-terminated). */
static int load_latest_capture(const char *dir, struct hook_log *l, struct snap_info *si, char *err,
			       size_t errlen, char *out, size_t outlen)
{
	struct snap_load_hooks hk = { .begin = h_begin, .census = h_census, .verified = h_verified,
				      .fn = h_record, .ctx = l };
	struct stderr_capture c;
	stderr_capture_begin(&c);
	int rc = snap_load_latest(dir, &hk, si, err, errlen);
	stderr_capture_end(&c, out, outlen);
	return rc;
}

WM_TEST(snapshot, load_latest_verifies_once_and_falls_back_to_older)
{
	char dir[64], p[PATH_MAX], q[PATH_MAX], err[512], out[4096];
	mk_tmpdir(dir, sizeof(dir));
	struct snap_info si;
	struct hook_log l = { 0 };
	cr_assert_eq(load_latest_capture(dir, &l, &si, err, sizeof(err), out, sizeof(out)), 0, "empty dir");
	cr_assert_eq(l.begins + l.verifieds + l.records, 0);
	cr_assert_eq(load_latest_capture("/nonexistent/wm-snap-dir", &l, &si, err, sizeof(err), out, sizeof(out)),
		     0, "missing dir");

	write_snap(dir, 10, 3);
	write_snap(dir, 20, 4);
	write_snap(dir, 30, 5);
	memset(&l, 0, sizeof(l));
	cr_assert_eq(load_latest_capture(dir, &l, &si, err, sizeof(err), out, sizeof(out)), 1, "%s", err);
	cr_assert_eq(si.lsn, 30);
	cr_assert_eq(si.records, 5);
	cr_assert_eq(l.begins, 1, "the newest is verified once");
	cr_assert_eq(l.verifieds, 1);
	cr_assert_eq(l.records, 5);
	cr_assert_eq(out[0], 0, "nothing logged: %s", out);

	/* corrupt the newest: skipped, logged, the older one loaded */
	snap_path(p, sizeof(p), dir, 30, ".snap");
	size_t n;
	uint8_t *d = read_file(p, &n);
	d[n / 2] ^= 1;
	write_file(p, d, n);
	free(d);
	memset(&l, 0, sizeof(l));
	cr_assert_eq(load_latest_capture(dir, &l, &si, err, sizeof(err), out, sizeof(out)), 1, "%s", err);
	cr_assert_eq(si.lsn, 20);
	snap_path(q, sizeof(q), dir, 20, ".snap");
	cr_assert_str_eq(si.path, q);
	cr_assert_eq(l.begins, 2, "the corrupt one and the one loaded");
	cr_assert_eq(l.verifieds, 1, "verified only for the one loaded");
	cr_assert_eq(l.verified_lsn, 20);
	cr_assert_eq(l.records, 4, "only the older file's records");
	cr_assert_not_null(strstr(out, "snapshot: skipping invalid"), "not logged: %s", out);
	cr_assert_not_null(strstr(out, p), "the log does not name the file: %s", out);
	cr_assert_not_null(strstr(out, "checksum"), "the log does not say why: %s", out);

	/* a valid file under a name that lies about its LSN is skipped too */
	snap_path(q, sizeof(q), dir, 10, ".snap");
	snap_path(p, sizeof(p), dir, 40, ".snap");
	cr_assert_eq(link(q, p), 0);
	memset(&l, 0, sizeof(l));
	cr_assert_eq(load_latest_capture(dir, &l, &si, err, sizeof(err), out, sizeof(out)), 1, "%s", err);
	cr_assert_eq(si.lsn, 20);
	cr_assert_eq(l.records, 4);
	cr_assert_not_null(strstr(out, "does not match the name"), "%s", out);

	/* the chosen file's hook or record refused: -1, no older one tried */
	memset(&l, 0, sizeof(l));
	l.verified_rc = 3;
	cr_assert_eq(load_latest_capture(dir, &l, &si, err, sizeof(err), out, sizeof(out)), -1);
	cr_assert_eq(l.records, 0);
	cr_assert_eq(l.verifieds, 1);
	cr_assert_neq(err[0], 0, "no reason given");
	memset(&l, 0, sizeof(l));
	l.stop_at = 2;
	cr_assert_eq(load_latest_capture(dir, &l, &si, err, sizeof(err), out, sizeof(out)), -1);
	cr_assert_eq(l.records, 2, "stopped at the refused record");
	cr_assert_eq(l.verifieds, 1, "no fallback after records were handed out");

	/* nothing valid: 0, no record handed out */
	snap_path(p, sizeof(p), dir, 40, ".snap");
	cr_assert_eq(unlink(p), 0);
	for (uint64_t lsn = 10; lsn <= 20; lsn += 10) {
		snap_path(p, sizeof(p), dir, lsn, ".snap");
		d = read_file(p, &n);
		d[n - 1] ^= 0x10; /* the trailer's checksum */
		write_file(p, d, n);
		free(d);
	}
	memset(&l, 0, sizeof(l));
	cr_assert_eq(load_latest_capture(dir, &l, &si, err, sizeof(err), out, sizeof(out)), 0);
	cr_assert_eq(l.records + l.verifieds, 0);
	cr_assert_eq(l.begins, 3);
	rm_tree(dir);
}

WM_TEST(snapshot, load_hooked_refuses_bad_file_before_any_hook_but_census)
{
	char dir[64], p[PATH_MAX], err[512] = "";
	mk_tmpdir(dir, sizeof(dir));
	write_snap(dir, 50, 40);
	snap_path(p, sizeof(p), dir, 50, ".snap");
	struct hook_log l = { 0 };
	struct snap_load_hooks hk = { .begin = h_begin, .census = h_census, .verified = h_verified,
				      .fn = h_record, .ctx = &l };
	struct snap_info si;
	cr_assert_eq(snap_load_hooked(p, &hk, &si, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(l.census, 40);
	cr_assert_eq(l.records, 40);
	size_t n;
	uint8_t *d = read_file(p, &n);
	d[70] ^= 4;
	write_file(p, d, n);
	free(d);
	memset(&l, 0, sizeof(l));
	cr_assert_eq(snap_load_hooked(p, &hk, &si, err, sizeof(err)), -1);
	cr_assert_eq(l.verifieds + l.records, 0, "a hook past census ran on a bad file");
	cr_assert_not_null(strstr(err, "offset"), "%s", err);
	rm_tree(dir);
}
