/*
 * fuzz_wal.c -- libFuzzer target for everything that reads WAL bytes from
 * disk: the frame decoder, the transaction iterator, the segment header
 * decoder, and recovery/inspection of a whole segment file.
 *
 * Input: byte 0 selects the path, the rest is the body.
 *   bit 0 clear: in memory -- walk the body as a sequence of frames with
 *                wal_frame_decode_with and one dictionary state, as a
 *                reader walks a segment (fixed salt FUZZ_SALT), iterate the
 *                transactions of every valid frame, and also run
 *                wal_txn_next over the raw body and the segment header
 *                decoder over it.
 *   bit 0 set:   on disk -- write a valid segment header (FUZZ_SALT, first
 *                LSN 1) followed by the body as <tmp>/00..01.wal, then
 *                wal_inspect and wal_recover (bit 1 = salvage) on it.
 * Nothing may crash, leak or read out of bounds; recovery must either
 * refuse or leave a log that a second recovery accepts without a cut.
 *
 * Seeds: run with WAL_FUZZ_GEN_SEEDS=<dir> to write a few valid inputs
 * (built with the real encoder) into <dir> and exit; the committed seeds in
 * tests/fuzz/corpus/fuzz_wal/ were made that way.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "net/buf.h"
#include "wal/wal.h"
#include "wal/wal_format.h"

#define FUZZ_SALT 0x5a175a175a175a17ull

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char tmpdir[64];
static char segpath[128];
static struct buf raw;

static void quiet(const char *line) { (void)line; }

static void cleanup(void)
{
	unlink(segpath);
	rmdir(tmpdir);
	buf_free(&raw);
}

static int count_fn(void *ctx, uint64_t lsn, const void *p, size_t len)
{
	uint64_t *n = ctx;
	(void)lsn;
	if (len)
		*n += ((const uint8_t *)p)[len - 1]; /* touch the last byte */
	return 0;
}

static void inspect_fn(void *ctx, const struct wal_segment_info *info)
{
	(void)ctx;
	if (info->ok && info->bytes_used < WAL_SEG_HEADER_SIZE)
		abort();
}

/* ---- seed generator --------------------------------------------------------- */

/* A frame of count transactions from first, compressed against cd (made
 * from the dictionary whose id is id) when given. */
static void put_frame_dict(ZSTD_CCtx *cc, const ZSTD_CDict *cd, uint32_t id, struct buf *out, uint64_t first,
			   int count, int size)
{
	struct buf r;
	buf_init(&r, 0);
	char p[256];
	for (int i = 0; i < count; i++) {
		int n = (size + i * 7) % (int)sizeof(p);
		for (int j = 0; j < n; j++)
			p[j] = "{\"wine\":\"Barolo\",\"qty\":6}"[(i + j) % 26];
		wal_txn_put(&r, first + (uint64_t)i, p, (uint32_t)n);
	}
	wal_frame_encode_dict(cc, 1, cd, id, FUZZ_SALT, (const uint8_t *)r.data, r.len, out, NULL);
	buf_free(&r);
}

static void put_frame(ZSTD_CCtx *cc, struct buf *out, uint64_t first, int count, int size)
{
	put_frame_dict(cc, NULL, 0, out, first, count, size);
}

static void write_seed(const char *dir, const char *name, const struct buf *b)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(b->data, 1, b->len, f) != b->len)
		exit(1);
	fclose(f);
}

static void gen_seeds(const char *dir)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	struct buf b;
	buf_init(&b, 0);
	uint8_t zeros[512] = { 0 };

	buf_putc(&b, 0); /* one frame, in memory */
	put_frame(cc, &b, 1, 3, 40);
	write_seed(dir, "mem-one-frame", &b);

	buf_reset(&b); /* four frames, one with empty payloads */
	buf_putc(&b, 0);
	put_frame(cc, &b, 1, 5, 100);
	put_frame(cc, &b, 6, 1, 0);
	put_frame(cc, &b, 7, 20, 30);
	put_frame(cc, &b, 27, 2, 200);
	write_seed(dir, "mem-four-frames", &b);

	buf_reset(&b); /* a segment body with preallocated zeros */
	buf_putc(&b, 1);
	put_frame(cc, &b, 1, 4, 60);
	put_frame(cc, &b, 5, 4, 60);
	buf_append(&b, zeros, sizeof(zeros));
	write_seed(dir, "file-clean", &b);

	buf_reset(&b); /* a torn tail */
	buf_putc(&b, 1);
	put_frame(cc, &b, 1, 4, 60);
	size_t at = b.len;
	put_frame(cc, &b, 5, 4, 60);
	b.len = at + (b.len - at) / 2;
	write_seed(dir, "file-torn", &b);

	buf_reset(&b); /* corruption in the middle, with salvage */
	buf_putc(&b, 3);
	put_frame(cc, &b, 1, 4, 60);
	at = b.len;
	put_frame(cc, &b, 5, 4, 60);
	put_frame(cc, &b, 9, 4, 60);
	b.data[at + 70] ^= 0x20;
	write_seed(dir, "file-salvage", &b);

	/* segment dictionaries: a frame, a dictionary frame, frames using it */
	static const char dict[] = "{\"wine\":\"Barolo\",\"qty\":6}{\"wine\":\"Barolo\",\"qty\":12}";
	uint32_t id = wal_dict_id((const uint8_t *)dict, sizeof(dict) - 1);
	ZSTD_CDict *cd = ZSTD_createCDict(dict, sizeof(dict) - 1, 1);
	for (int disk = 0; disk <= 1; disk++) {
		buf_reset(&b);
		buf_putc(&b, (char)disk);
		put_frame(cc, &b, 1, 4, 60);
		wal_frame_encode_dictframe(cc, 1, FUZZ_SALT, (const uint8_t *)dict, sizeof(dict) - 1, &b, NULL);
		put_frame_dict(cc, cd, id, &b, 5, 4, 60);
		put_frame_dict(cc, cd, id, &b, 9, 3, 90);
		if (disk)
			buf_append(&b, zeros, sizeof(zeros));
		write_seed(dir, disk ? "file-dict" : "mem-dict", &b);
	}
	ZSTD_freeCDict(cd);

	buf_free(&b);
	ZSTD_freeCCtx(cc);
}

/* ---- target ------------------------------------------------------------------- */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	const char *g = getenv("WAL_FUZZ_GEN_SEEDS");
	if (g) {
		gen_seeds(g);
		exit(0);
	}
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(tmpdir, sizeof(tmpdir), "%s/fuzz-wal-XXXXXX", base);
	if (!mkdtemp(tmpdir))
		abort();
	snprintf(segpath, sizeof(segpath), "%s/00000000000000000001.wal", tmpdir);
	buf_init(&raw, 0);
	wal_set_recovery_log(quiet);
	atexit(cleanup);
	return 0;
}

static void in_memory(const uint8_t *p, size_t n)
{
	static ZSTD_DCtx *dctx;
	if (!dctx && !(dctx = ZSTD_createDCtx()))
		abort();
	struct wal_dict dict = {0};
	size_t off = 0;
	uint64_t sum = 0;
	while (off < n) {
		struct wal_frame_view fv;
		char why[96];
		enum wal_frame_status st = wal_frame_decode_with(dctx, &dict, p + off, n - off, FUZZ_SALT, &fv, &raw, why);
		if (st != WAL_FRAME_OK)
			break;
		if (fv.frame_len > n - off || fv.frame_len <= WAL_FRAME_HEADER_SIZE)
			abort(); /* an OK frame always lies within the input */
		size_t t = 0;
		uint64_t lsn, expect = fv.first_lsn, cnt = 0;
		const uint8_t *pl;
		uint32_t len;
		while (wal_txn_next(&raw, &t, &lsn, &pl, &len)) {
			if (lsn != expect++)
				abort(); /* decode promised contiguous LSNs */
			if (len)
				sum += pl[len - 1];
			cnt++;
		}
		if (cnt != fv.txn_count || t != raw.len)
			abort();
		if ((fv.flags & WAL_FRAME_F_DICT) && (cnt || dict.id != fv.dict_id || !dict.ddict))
			abort(); /* a dictionary frame holds nothing and becomes the dictionary */
		off += fv.frame_len;
	}
	wal_dict_free(&dict);
	/* The iterator on arbitrary bytes. */
	buf_reset(&raw);
	buf_append(&raw, p, n);
	size_t t = 0;
	uint64_t lsn;
	const uint8_t *pl;
	uint32_t len;
	while (wal_txn_next(&raw, &t, &lsn, &pl, &len))
		if (len)
			sum += pl[0] + pl[len - 1];
	uint64_t salt, first;
	(void)wal_seg_header_decode(p, n, &salt, &first, NULL);
	(void)sum;
}

static void on_disk(const uint8_t *p, size_t n, int salvage)
{
	FILE *f = fopen(segpath, "wb");
	if (!f)
		abort();
	uint8_t h[WAL_SEG_HEADER_SIZE];
	wal_seg_header_encode(h, FUZZ_SALT, 1);
	if (fwrite(h, 1, sizeof(h), f) != sizeof(h) || (n && fwrite(p, 1, n, f) != n))
		abort();
	fclose(f);
	(void)wal_inspect(tmpdir, inspect_fn, NULL);
	struct wal_recovery_report rep;
	uint64_t sum = 0;
	int rc = wal_recover(tmpdir, 0, count_fn, &sum, salvage, &rep);
	if (rc == 0) {
		/* Whatever recovery accepted (after a cut or salvage) is now clean. */
		int rc2 = wal_recover(tmpdir, 0, NULL, NULL, 0, &rep);
		if (rc2 != 0 || rep.tail_cut)
			abort();
	}
	unlink(segpath);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] & 1)
		on_disk(data + 1, size - 1, (data[0] >> 1) & 1);
	else
		in_memory(data + 1, size - 1);
	return 0;
}
