/*
 * cluster_auth.h -- authentication of internal traffic between the
 * processes of a cluster (DESIGN.md section 9, "Internal traffic").
 *
 * Every internal request (router -> shard, shard -> shard) carries
 *
 *     X-WM-Signature: t=<unix seconds>,v1=<64 hex digits>
 *
 * where v1 = HMAC-SHA256(cluster secret,
 *                        METHOD "\n" PATH "\n" t "\n" hex(SHA-256(body))).
 * The receiver recomputes it, compares in constant time and refuses a
 * timestamp further than the allowed skew from its own clock, so a captured
 * request cannot be replayed later nor altered (method, path, body).
 * Partner keys never reach /internal/: a request without a valid signature
 * is a 401 there.
 *
 * The secret is a file of CK_SECRET_MIN..CK_SECRET_MAX bytes (a trailing
 * newline is not part of it) readable by its owner only.
 */
#ifndef WM_CLUSTER_AUTH_H
#define WM_CLUSTER_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define CK_SECRET_MIN 32
#define CK_SECRET_MAX 256
#define CK_HEADER_MAX 96         /* "t=" + 20 digits + ",v1=" + 64 hex + NUL fits */
#define CK_HEADER_NAME "X-WM-Signature"
#define CK_DEFAULT_SKEW_S 30     /* how far the sender's clock may be from ours */
#define CK_PRINCIPAL_MAX 512     /* bytes of a signed principal header value */

struct cluster_key {
	uint8_t secret[CK_SECRET_MAX];
	size_t len;
};

enum ck_result {
	CK_OK = 0,
	CK_E_MALFORMED = -1,  /* not "t=<digits>,v1=<64 hex>" */
	CK_E_SKEW = -2,       /* the timestamp is outside the allowed skew */
	CK_E_MISMATCH = -3,   /* the signature does not match */
	CK_E_INTERNAL = -4,   /* the MAC could not be computed */
};

/* Load the secret file at path: 0, or -1 with the reason in err (a file of
 * the wrong size, readable by group or others, unreadable). */
int ck_load(const char *path, struct cluster_key *k, char *err, size_t errlen);

/* The header value for a request signed at ts into out (CK_HEADER_MAX
 * bytes, NUL-terminated); 0, or -1 if the MAC could not be computed. */
int ck_sign(const struct cluster_key *k, const char *method, size_t method_len, const char *path, size_t path_len,
	    int64_t ts, const void *body, size_t body_len, char out[CK_HEADER_MAX]);

/*
 * The same, covering the principal a router forwards with a partner
 * request (X-WM-Principal, engine/edge/principal.h): the MAC input gets
 * "\n" PRINCIPAL appended when principal_len > 0, so a principal can be
 * neither added, removed nor altered without the secret.  At most
 * CK_PRINCIPAL_MAX bytes (else -1 / CK_E_INTERNAL).
 */
int ck_sign_principal(const struct cluster_key *k, const char *method, size_t method_len, const char *path,
		      size_t path_len, int64_t ts, const void *body, size_t body_len, const char *principal,
		      size_t principal_len, char out[CK_HEADER_MAX]);
int ck_verify_principal(const struct cluster_key *k, const char *method, size_t method_len, const char *path,
			size_t path_len, const void *body, size_t body_len, const char *principal,
			size_t principal_len, const char *hdr, size_t hdr_len, int64_t now, int64_t max_skew_s);

/* Check a received header value (hdr_len bytes, not NUL-terminated) for the
 * request, at time now with the allowed skew in seconds: an enum ck_result. */
int ck_verify(const struct cluster_key *k, const char *method, size_t method_len, const char *path, size_t path_len,
	      const void *body, size_t body_len, const char *hdr, size_t hdr_len, int64_t now, int64_t max_skew_s);

#endif
