/*
 * cluster_auth.c -- HMAC signatures of internal requests (contract and wire
 * format in cluster_auth.h).
 *
 * Why this shape:
 *   - The body enters the MAC as its SHA-256, so the signed string has a
 *     bounded size whatever the body, and the MAC is computed in one call
 *     over a small stack buffer (no allocation per request).
 *   - The header is parsed strictly (exact prefix, digits, exactly 64 lower-
 *     case hex digits, nothing after): anything else is malformed, never
 *     "probably fine".
 *   - The comparison is CRYPTO_memcmp over the 32 raw bytes, so the time it
 *     takes says nothing about how many bytes matched.
 *   - The skew check comes after the parse but before the MAC, and a
 *     signature is checked whatever the skew result would say of it: the
 *     answer codes differ only in what the sender can already know (its
 *     own clock), never in what part of a forged MAC was right.
 */
#include "engine/cluster/cluster_auth.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net/digest.h"
#include "net/hex.h"

#define CK_SIGNED_MAX (16 + 4096 + 24 + 64 + CK_PRINCIPAL_MAX + 8) /* method, path, ts, body hash, principal, separators */
#define CK_PATH_MAX 4096

int ck_load(const char *path, struct cluster_key *k, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (st.st_mode & 077) {
		snprintf(err, errlen, "%s: readable by group or others (mode %03o): chmod 600 it", path,
			 (unsigned)(st.st_mode & 0777));
		close(fd);
		return -1;
	}
	uint8_t buf[CK_SECRET_MAX + 2]; /* one byte more than a secret and its newline: too long */
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	size_t len = (size_t)n;
	if (len && buf[len - 1] == '\n')
		len--;
	if (len < CK_SECRET_MIN || len > CK_SECRET_MAX) {
		snprintf(err, errlen, "%s: the secret must be %d to %d bytes (a trailing newline aside)", path,
			 CK_SECRET_MIN, CK_SECRET_MAX);
		OPENSSL_cleanse(buf, sizeof(buf));
		return -1;
	}
	memcpy(k->secret, buf, len);
	k->len = len;
	OPENSSL_cleanse(buf, sizeof(buf));
	return 0;
}

/* v in decimal at out (at most 20 bytes, no NUL), as printf's %lld writes
 * it; the length.  (snprintf was ~900 instructions a call, twice a
 * signature.) */
static size_t put_i64(char *out, int64_t v)
{
	char d[24];
	size_t i = sizeof(d);
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	do {
		d[--i] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		d[--i] = '-';
	memcpy(out, d + i, sizeof(d) - i);
	return sizeof(d) - i;
}

/* The raw MAC of a request into mac (32 bytes); 0 or -1. */
static int ck_mac(const struct cluster_key *k, const char *method, size_t method_len, const char *path,
		  size_t path_len, int64_t ts, const void *body, size_t body_len, const char *principal,
		  size_t principal_len, uint8_t mac[32])
{
	if (method_len > 16 || path_len > CK_PATH_MAX || principal_len > CK_PRINCIPAL_MAX)
		return -1;
	uint8_t h[DIGEST_SHA256_LEN];
	if (digest_sha256(body, body_len, h)) /* net/digest.h: no fetch per call */
		return -1;
	char msg[CK_SIGNED_MAX];
	size_t n = 0;
	memcpy(msg + n, method, method_len);
	n += method_len;
	msg[n++] = '\n';
	memcpy(msg + n, path, path_len);
	n += path_len;
	msg[n++] = '\n';
	n += put_i64(msg + n, ts);
	msg[n++] = '\n';
	hex_encode(h, DIGEST_SHA256_LEN, msg + n);
	n += 2 * DIGEST_SHA256_LEN;
	if (principal_len) { /* the hex digest is fixed-length: no ambiguity */
		msg[n++] = '\n';
		memcpy(msg + n, principal, principal_len);
		n += principal_len;
	}
	return digest_hmac_sha256(k->secret, k->len, msg, n, mac);
}

int ck_sign(const struct cluster_key *k, const char *method, size_t method_len, const char *path, size_t path_len,
	    int64_t ts, const void *body, size_t body_len, char out[CK_HEADER_MAX])
{
	return ck_sign_principal(k, method, method_len, path, path_len, ts, body, body_len, NULL, 0, out);
}

int ck_sign_principal(const struct cluster_key *k, const char *method, size_t method_len, const char *path,
		      size_t path_len, int64_t ts, const void *body, size_t body_len, const char *principal,
		      size_t principal_len, char out[CK_HEADER_MAX])
{
	uint8_t mac[32];
	if (ts < 0 || ck_mac(k, method, method_len, path, path_len, ts, body, body_len, principal, principal_len, mac))
		return -1;
	memcpy(out, "t=", 2);
	size_t n = 2 + put_i64(out + 2, ts);
	memcpy(out + n, ",v1=", 4);
	hex_encode(mac, sizeof(mac), out + n + 4);
	return 0;
}

/* "t=<1..18 digits>,v1=<64 lower-case hex>" exactly: the timestamp and raw MAC; 0 or -1. */
static int parse_header(const char *h, size_t len, int64_t *ts, uint8_t mac[32])
{
	if (len < 2 || memcmp(h, "t=", 2))
		return -1;
	size_t i = 2;
	uint64_t t = 0;
	size_t digits = 0;
	for (; i < len && h[i] >= '0' && h[i] <= '9'; i++, digits++) {
		if (digits == 18)
			return -1; /* keeps t well inside int64 */
		t = t * 10 + (uint64_t)(h[i] - '0');
	}
	if (digits == 0 || len - i != 4 + 64 || memcmp(h + i, ",v1=", 4))
		return -1;
	i += 4;
	if (hex_decode(h + i, 32, mac))
		return -1;
	*ts = (int64_t)t;
	return 0;
}

int ck_verify(const struct cluster_key *k, const char *method, size_t method_len, const char *path, size_t path_len,
	      const void *body, size_t body_len, const char *hdr, size_t hdr_len, int64_t now, int64_t max_skew_s)
{
	return ck_verify_principal(k, method, method_len, path, path_len, body, body_len, NULL, 0, hdr, hdr_len, now,
				   max_skew_s);
}

int ck_verify_principal(const struct cluster_key *k, const char *method, size_t method_len, const char *path,
			size_t path_len, const void *body, size_t body_len, const char *principal,
			size_t principal_len, const char *hdr, size_t hdr_len, int64_t now, int64_t max_skew_s)
{
	int64_t ts;
	uint8_t got[32], want[32];
	if (!hdr || parse_header(hdr, hdr_len, &ts, got))
		return CK_E_MALFORMED;
	if (ck_mac(k, method, method_len, path, path_len, ts, body, body_len, principal, principal_len, want))
		return CK_E_INTERNAL;
	int match = CRYPTO_memcmp(got, want, sizeof(want)) == 0;
	int64_t d = ts > now ? ts - now : now - ts;
	if (d > max_skew_s)
		return CK_E_SKEW;
	return match ? CK_OK : CK_E_MISMATCH;
}
