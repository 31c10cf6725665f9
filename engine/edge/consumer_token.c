/*
 * consumer_token.c -- the consumer's per-order token (contract and the why
 * in consumer_token.h).
 *
 * The key file of a single shard is created by temp name + rename, so a
 * crash leaves either no key (a new one is drawn on the next start: no
 * token was handed out with the lost one, since the shard had not started
 * serving) or the whole key.
 */
#include "engine/edge/consumer_token.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "engine/cluster/cluster_auth.h"
#include "net/b64url.h"
#include "net/digest.h"
#include "wal/fsutil.h"

static const char ct_label[] = "wm-consumer-token v1"; /* with its NUL, the MAC's domain */

int ct_key_derive(const struct cluster_key *ck, uint8_t out[CT_KEY_LEN])
{
	_Static_assert(CT_KEY_LEN == DIGEST_SHA256_LEN, "the key is one HMAC-SHA256");
	return ck && ck->len && !digest_hmac_sha256(ck->secret, ck->len, "wm consumer key", 15, out) ? 0 : -1;
}

/* Read exactly CT_KEY_LEN bytes of the key file: 1 read, 0 missing, -1 bad. */
static int key_read(const char *path, uint8_t out[CT_KEY_LEN], char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	uint8_t buf[CT_KEY_LEN + 1];
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n != CT_KEY_LEN) {
		snprintf(err, errlen, "%s: not a %d-byte key (%zd bytes); remove it to draw a new one (every consumer token "
				      "given out so far stops working)", path, CT_KEY_LEN, n);
		OPENSSL_cleanse(buf, sizeof(buf));
		return -1;
	}
	memcpy(out, buf, CT_KEY_LEN);
	OPENSSL_cleanse(buf, sizeof(buf));
	return 1;
}

int ct_key_load_or_create(const char *dir, uint8_t out[CT_KEY_LEN], char *err, size_t errlen)
{
	char path[4096], tmp[4120];
	if (snprintf(path, sizeof(path), "%s/%s", dir, CT_KEY_FILE) >= (int)sizeof(path)) {
		snprintf(err, errlen, "the data directory's path is too long");
		return -1;
	}
	int r = key_read(path, out, err, errlen);
	if (r)
		return r > 0 ? 0 : -1;
	if (getrandom(out, CT_KEY_LEN, 0) != CT_KEY_LEN) {
		snprintf(err, errlen, "getrandom: %s", strerror(errno));
		return -1;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int ok = fd >= 0 && write(fd, out, CT_KEY_LEN) == CT_KEY_LEN && fsync(fd) == 0;
	if (fd >= 0 && close(fd))
		ok = 0;
	if (!ok || rename(tmp, path) || fs_fsync_dir(dir)) {
		snprintf(err, errlen, "%s: cannot store the consumer-token key: %s", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* The raw MAC of order_id. */
static int ct_mac(const uint8_t key[CT_KEY_LEN], const char *order_id, uint8_t mac[32])
{
	uint8_t msg[sizeof(ct_label) + 64];
	size_t il = strlen(order_id);
	if (il > 64)
		return -1;
	memcpy(msg, ct_label, sizeof(ct_label));
	memcpy(msg + sizeof(ct_label), order_id, il);
	return digest_hmac_sha256(key, CT_KEY_LEN, msg, sizeof(ct_label) + il, mac);
}

int ct_make(const uint8_t key[CT_KEY_LEN], const char *order_id, char out[CT_TOKEN_LEN + 1])
{
	uint8_t mac[32];
	if (ct_mac(key, order_id, mac))
		return -1;
	memcpy(out, CT_PREFIX, CT_PREFIX_LEN);
	return b64url_encode(mac, sizeof(mac), out + CT_PREFIX_LEN, CT_MAC_B64_LEN + 1) < 0 ? -1 : 0;
}

int ct_is_token(const char *tok, size_t len)
{
	return len >= CT_PREFIX_LEN && !memcmp(tok, CT_PREFIX, CT_PREFIX_LEN);
}

int ct_check(const uint8_t key[CT_KEY_LEN], const char *order_id, const char *tok, size_t len)
{
	char want[CT_TOKEN_LEN + 1];
	if (len != CT_TOKEN_LEN || ct_make(key, order_id, want))
		return 0;
	int same = CRYPTO_memcmp(want, tok, CT_TOKEN_LEN) == 0;
	OPENSSL_cleanse(want, sizeof(want));
	return same;
}
