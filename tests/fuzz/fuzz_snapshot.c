/*
 * fuzz_snapshot.c -- libFuzzer target for the snapshot loader.
 *
 * Each input is written to a temp file and loaded twice: once as is (the
 * header/trailer/size/checksum checks), and once with the header checksum,
 * the trailer's body length and the file checksum recomputed, so mutations
 * of the zstd body, the record framing and the trailer count reach the
 * decoder instead of all dying at the checksum.  The callback reads every
 * byte it is given so ASan sees any out-of-bounds record, and so does the
 * hint hook (at most once, before any record, within SNAP_MAX_HINT).  Seeds in
 * tests/fuzz/corpus/fuzz_snapshot/ are real snapshot files.
 */
#include "net/buf.h"
#include "snapshot/snapshot.h"

#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char g_path[PATH_MAX];

static void cleanup(void)
{
	if (g_path[0])
		unlink(g_path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(g_path, sizeof(g_path), "%s/fuzz_snapshot.%d.snap", base, (int)getpid());
	atexit(cleanup);
	return 0;
}

struct seen {
	uint64_t n;
	uint64_t sum;
	uint64_t hints;
};

/* The hint hook: at most once a file, before any record, within its bound. */
static void hint_cb(void *ctx, const void *hint, size_t len, uint64_t records)
{
	struct seen *s = ctx;
	const uint8_t *h = hint;
	if (len > SNAP_MAX_HINT || s->n || s->hints++)
		abort();
	for (size_t i = 0; i < len; i++)
		s->sum += h[i];
	s->sum += records;
}

static int touch_cb(void *ctx, const void *rec, size_t len)
{
	struct seen *s = ctx;
	const uint8_t *r = rec;
	if (len > SNAP_MAX_RECORD)
		abort(); /* the loader promised the bound */
	for (size_t i = 0; i < len; i++)
		s->sum += r[i];
	s->n++;
	return 0;
}

static void load(const uint8_t *data, size_t size)
{
	int fd = open(g_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
	char err[512];
	struct seen s = { 0, 0, 0 };
	struct snap_info info;
	struct snap_load_hooks hk = { .hint = hint_cb, .fn = touch_cb, .ctx = &s };
	int rc = snap_load_hooked(g_path, &hk, &info, err, sizeof(err));
	if (rc == 0 && s.n != info.records)
		abort(); /* verified file must deliver exactly its count */
	if (rc == -1 && strstr(err, g_path) == NULL)
		abort(); /* every error names the file */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!g_path[0])
		LLVMFuzzerInitialize(NULL, NULL);
	load(data, size);
	if (size < 96)
		return 0;
	/* Second run with consistent checksums and length. */
	uint8_t *d = malloc(size);
	if (!d)
		return 0;
	memcpy(d, data, size);
	wr_u64(d + 56, XXH3_64bits(d, 56));
	wr_u64(d + size - 16, (uint64_t)(size - 96));
	wr_u64(d + size - 8, XXH3_64bits(d, size - 32));
	load(d, size);
	free(d);
	return 0;
}
