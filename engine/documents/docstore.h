/*
 * docstore.h -- rendered documents on disk, content-addressed: a file's
 * name is the SHA-256 of its bytes (issue 17 item 4: "stored
 * content-addressed and fsync'd like media, checksum verified on read").
 *
 * Layout: ROOT/<first 2 hex>/<64 hex>.pdf.  A write goes to
 * ROOT/<2 hex>/.tmp-<64 hex>-<unique>, is fsynced, renamed to its final
 * name and the directory fsynced, so a name that exists always holds the
 * whole file, durably; a crash before the rename leaves only a .tmp- file,
 * which docstore_open() removes.  Identical bytes are stored once.
 */
#ifndef WM_DOCSTORE_H
#define WM_DOCSTORE_H

#include <stddef.h>
#include <stdint.h>

#define DOCSTORE_ROOT_MAX 512          /* bytes of the root path */
#define DOCSTORE_SHA_HEX 64
#define DOCSTORE_FILE_MAX (16u << 20)  /* largest file put or read */

struct docstore {
	char root[DOCSTORE_ROOT_MAX];
};

/* Create ROOT (and its parents' last level) when missing, and delete the
 * .tmp- files a crash left.  0, or -1 with errno (ENAMETOOLONG for a root
 * of DOCSTORE_ROOT_MAX bytes or more). */
int docstore_open(struct docstore *ds, const char *root);

/* Store data[0..len) and write its lower-case hex SHA-256 to sha_hex
 * (DOCSTORE_SHA_HEX + 1 bytes).  Durable when it returns 0; -1 with errno
 * otherwise (EFBIG over DOCSTORE_FILE_MAX), leaving no file under the
 * final name. */
int docstore_put(struct docstore *ds, const uint8_t *data, size_t len, char *sha_hex);

/* Read the file named sha_hex into a malloc'd buffer (*data, *len; the
 * caller frees) after checking that its SHA-256 is its name.  -1 with
 * errno: ENOENT when absent, EINVAL for a name that is not 64 lower-case
 * hex digits, EBADMSG when the bytes do not match (a corrupt file is never
 * returned), EFBIG over DOCSTORE_FILE_MAX. */
int docstore_get(struct docstore *ds, const char *sha_hex, uint8_t **data, size_t *len);

/* The final path of sha_hex into out[cap]; 0 or -1 (too small). */
int docstore_path(const struct docstore *ds, const char *sha_hex, char *out, size_t cap);

#ifdef WM_TESTING
/* Test builds: when set, docstore_put calls it after the temporary file is
 * written and fsynced and before the rename (a test makes it _exit() to
 * simulate a crash at that point). */
extern void (*docstore_test_before_rename)(void);
#endif

#endif
