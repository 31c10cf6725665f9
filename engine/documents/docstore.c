/*
 * docstore.c -- the content-addressed document files (docstore.h).
 *
 * Why this shape: the same discipline as media files
 * (engine/catalogue/media.c), without depending on it: name = SHA-256 of
 * the bytes, so a second render of the same model (byte-identical by
 * construction, render.c) finds its file already there and a reader can
 * verify what it got.  Temp file + fsync + rename + fsync of the directory
 * makes the final name all-or-nothing across a crash; the temp name is
 * unique per process and call (pid + counter), so two writers of the same
 * bytes never write into one temp file.  SHA-256 is OpenSSL's (already a
 * dependency of the engine).
 */
#include "engine/documents/docstore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net/digest.h"
#include "net/hex.h"
#include "wal/fsutil.h"

#define PATH_CAP (DOCSTORE_ROOT_MAX + 128)

#ifdef WM_TESTING
void (*docstore_test_before_rename)(void);
#endif

static atomic_uint tmp_counter;

/* SHA-256 as hex (net/digest.h); errno EIO when OpenSSL fails. */
static int sha256_hex(const uint8_t *data, size_t len, char *hex)
{
	if (digest_sha256_hex(data, len, hex)) {
		errno = EIO;
		return -1;
	}
	return 0;
}

static int hex_name_ok(const char *s)
{
	for (int i = 0; i < DOCSTORE_SHA_HEX; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[DOCSTORE_SHA_HEX] == '\0';
}

static int mkdir_one(const char *p)
{
	if (mkdir(p, 0755) == 0)
		return 0;
	return errno == EEXIST ? 0 : -1;
}

/* Remove ROOT/<xx>/.tmp-* left by a crash. */
static void sweep_tmp(const char *root)
{
	DIR *d = opendir(root);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strlen(e->d_name) != 2 || e->d_name[0] == '.')
			continue;
		char sub[PATH_CAP];
		int n = snprintf(sub, sizeof sub, "%s/%s", root, e->d_name);
		if (n < 0 || (size_t)n >= sizeof sub)
			continue;
		DIR *s = opendir(sub);
		if (!s)
			continue;
		struct dirent *f;
		while ((f = readdir(s)))
			if (strncmp(f->d_name, ".tmp-", 5) == 0)
				unlinkat(dirfd(s), f->d_name, 0);
		closedir(s);
	}
	closedir(d);
}

int docstore_open(struct docstore *ds, const char *root)
{
	size_t n = strlen(root);
	if (n == 0 || n >= DOCSTORE_ROOT_MAX) {
		errno = n ? ENAMETOOLONG : EINVAL;
		return -1;
	}
	memcpy(ds->root, root, n + 1);
	if (mkdir_one(ds->root))
		return -1;
	sweep_tmp(ds->root);
	return 0;
}

int docstore_path(const struct docstore *ds, const char *sha_hex, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s/%.2s/%s.pdf", ds->root, sha_hex, sha_hex);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* Write all of data to fd; 0 or -1 (errno). */
static int write_all(int fd, const uint8_t *data, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, data, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		data += w;
		len -= (size_t)w;
	}
	return 0;
}

int docstore_put(struct docstore *ds, const uint8_t *data, size_t len, char *sha_hex)
{
	if (len > DOCSTORE_FILE_MAX) {
		errno = EFBIG;
		return -1;
	}
	if (sha256_hex(data, len, sha_hex))
		return -1;
	char dir[PATH_CAP], final[PATH_CAP], tmp[PATH_CAP];
	int n = snprintf(dir, sizeof dir, "%s/%.2s", ds->root, sha_hex);
	if (n < 0 || (size_t)n >= sizeof dir || docstore_path(ds, sha_hex, final, sizeof final)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (mkdir_one(dir))
		return -1;
	struct stat st;
	if (stat(final, &st) == 0 && (size_t)st.st_size == len) {
		/* Stored already (durably: it has its final name); a corrupt
		 * copy is replaced below by the rename. */
		uint8_t *old;
		size_t old_len;
		if (docstore_get(ds, sha_hex, &old, &old_len) == 0) {
			free(old);
			return 0;
		}
	}
	n = snprintf(tmp, sizeof tmp, "%s/.tmp-%s-%ld-%u", dir, sha_hex, (long)getpid(),
		     atomic_fetch_add(&tmp_counter, 1));
	if (n < 0 || (size_t)n >= sizeof tmp) {
		errno = ENAMETOOLONG;
		return -1;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	if (write_all(fd, data, len) || fsync(fd)) {
		int e = errno;
		close(fd);
		unlink(tmp);
		errno = e;
		return -1;
	}
	if (close(fd)) {
		int e = errno;
		unlink(tmp);
		errno = e;
		return -1;
	}
#ifdef WM_TESTING
	if (docstore_test_before_rename)
		docstore_test_before_rename();
#endif
	if (rename(tmp, final)) {
		int e = errno;
		unlink(tmp);
		errno = e;
		return -1;
	}
	return fs_fsync_dir(dir);
}

int docstore_get(struct docstore *ds, const char *sha_hex, uint8_t **data, size_t *len)
{
	*data = NULL;
	*len = 0;
	if (!hex_name_ok(sha_hex)) {
		errno = EINVAL;
		return -1;
	}
	char path[PATH_CAP];
	if (docstore_path(ds, sha_hex, path, sizeof path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st)) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	if (st.st_size < 0 || (uint64_t)st.st_size > DOCSTORE_FILE_MAX) {
		close(fd);
		errno = EFBIG;
		return -1;
	}
	size_t n = (size_t)st.st_size, got = 0;
	uint8_t *buf = malloc(n ? n : 1);
	if (!buf) {
		close(fd);
		errno = ENOMEM;
		return -1;
	}
	while (got < n) {
		ssize_t r = read(fd, buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	char hex[DOCSTORE_SHA_HEX + 1];
	if (got != n || sha256_hex(buf, n, hex) || strcmp(hex, sha_hex) != 0) {
		free(buf);
		errno = EBADMSG;
		return -1;
	}
	*data = buf;
	*len = n;
	return 0;
}
