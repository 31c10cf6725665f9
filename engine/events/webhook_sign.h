/*
 * webhook_sign.h -- signing of outbound webhooks as the Standard Webhooks
 * specification defines it (issue 18 item 2), and the matching verifier.
 *
 * Why this format: partners verify with any Standard Webhooks library, so
 * the bytes must be exactly the specification's:
 *
 *     webhook-id:        the message id (the event id)
 *     webhook-timestamp: unix seconds, decimal
 *     webhook-signature: v1,<base64 HMAC-SHA256(key, id "." timestamp "." body)>
 *
 * where key is the base64-decoded part of the secret "whsec_<base64>".
 * During a secret rotation the header carries two space-separated entries,
 * one per secret, and a receiver accepts the message when any entry matches.
 *
 * Everything here is strict: a secret is "whsec_" + canonical standard
 * base64 (with padding) of WH_SECRET_MIN..WH_SECRET_MAX bytes; a signature
 * header is 1..WH_SIG_PARSE_MAX entries "v<digits>,<base64>" separated by
 * exactly one space, no leading or trailing space.  The header parser reads
 * untrusted input (a future receiver) and has a fuzz target
 * (tests/fuzz/fuzz_webhook_sig.c).  Comparison is constant-time.
 */
#ifndef WM_WEBHOOK_SIGN_H
#define WM_WEBHOOK_SIGN_H

#include <stddef.h>
#include <stdint.h>

#define WH_SECRET_PREFIX "whsec_"
#define WH_SECRET_MIN 24         /* bytes of key */
#define WH_SECRET_MAX 64
#define WH_SECRET_TEXT_MAX (6 + 88) /* "whsec_" + base64 of 64 bytes */
#define WH_MAC_LEN 32            /* HMAC-SHA256 */
#define WH_MAC_B64_LEN 44        /* base64 of 32 bytes, padded */
#define WH_SIG_ENTRY_LEN (3 + WH_MAC_B64_LEN) /* "v1," + base64 */
#define WH_SIGN_MAX_SECRETS 2    /* the current secret and, during a rotation, the previous */
#define WH_SIG_PARSE_MAX 8       /* entries a header may carry (any version) */
#define WH_SIG_HEADER_MAX 1024   /* bytes of a signature header we read at most */
#define WH_SIG_OUT_MAX (WH_SIGN_MAX_SECRETS * (WH_SIG_ENTRY_LEN + 1)) /* what wh_sign writes, NUL included */
#define WH_ID_MAX 256            /* bytes of a webhook-id */
#define WH_TS_TEXT_MAX 19        /* digits of a timestamp (fits int64) */
#define WH_DEFAULT_TOLERANCE_S 300 /* the specification's 5 minutes */

struct wh_secret {
	uint8_t key[WH_SECRET_MAX];
	size_t len;
};

/* The v1 signatures a header carries; entries of other versions are
 * counted in n_entries but not kept (the specification says to ignore
 * them). */
struct wh_sig_list {
	size_t n_entries;              /* every entry, any version */
	size_t n_v1;
	uint8_t v1[WH_SIG_PARSE_MAX][WH_MAC_LEN];
};

enum wh_verify_result {
	WH_OK = 0,
	WH_E_MALFORMED = -1,  /* id, timestamp or signature header not well formed */
	WH_E_SKEW = -2,       /* the timestamp is further than the tolerance from now */
	WH_E_MISMATCH = -3,   /* no v1 entry matches */
	WH_E_INTERNAL = -4,   /* the MAC could not be computed */
};

/* Standard base64 with padding (RFC 4648 section 4).  Encode: the text
 * length written to out (NUL-terminated), or -1 if out_size is too small.
 * Decode: the byte count, or -1 for a character outside the alphabet, a
 * length not a multiple of 4, misplaced padding, non-zero trailing bits
 * (so every byte string has one text) or more than out_size bytes. */
int wh_b64_encode(const uint8_t *in, size_t n, char *out, size_t out_size);
int wh_b64_decode(const char *in, size_t n, uint8_t *out, size_t out_size);

/* Parse "whsec_<base64>" (text[0..n), no NUL needed): 0, or -1 when the
 * prefix is missing, the base64 is not canonical or the key is outside
 * WH_SECRET_MIN..WH_SECRET_MAX bytes.  out is written only on success. */
int wh_secret_parse(const char *text, size_t n, struct wh_secret *out);

/* Write "whsec_<base64>" into out (>= WH_SECRET_TEXT_MAX + 1 bytes): the
 * length, or -1 for a key of a length outside the bounds or a short out. */
int wh_secret_format(const struct wh_secret *s, char *out, size_t out_size);

/* A fresh secret of nbytes (WH_SECRET_MIN..WH_SECRET_MAX) random bytes
 * from OpenSSL's CSPRNG: 0, or -1 (bad length, no randomness). */
int wh_secret_generate(size_t nbytes, struct wh_secret *out);

/* 1 when id[0..n) is a usable webhook-id: 1..WH_ID_MAX bytes of visible
 * ASCII (0x21..0x7e), so it can sit in a header line as it is. */
int wh_id_valid(const char *id, size_t n);

/* The webhook-signature value for (id, ts, body) signed with each of
 * secrets[0..n_secrets) (1..WH_SIGN_MAX_SECRETS), entries in that order,
 * separated by one space, into out (>= WH_SIG_OUT_MAX bytes,
 * NUL-terminated): the length, or -1 (invalid id, negative ts, bad count,
 * short out, MAC failure). */
int wh_sign(const struct wh_secret *secrets, size_t n_secrets, const char *id, size_t id_len, int64_t ts,
	    const void *body, size_t body_len, char *out, size_t out_size);

/* The three header lines of a signed delivery, each "name: value",
 * NUL-terminated, ready for wh_http_request.headers. */
struct wh_signed_headers {
	char id[sizeof("webhook-id: ") + WH_ID_MAX];
	char timestamp[sizeof("webhook-timestamp: ") + WH_TS_TEXT_MAX];
	char signature[sizeof("webhook-signature: ") + WH_SIG_OUT_MAX];
};

/* Fill out for (id, ts, body) signed with secrets[0..n_secrets) as
 * wh_sign does: 0, or -1 on the errors of wh_sign. */
int wh_sign_headers(const struct wh_secret *secrets, size_t n_secrets, const char *id, size_t id_len, int64_t ts,
		    const void *body, size_t body_len, struct wh_signed_headers *out);

/* Parse a webhook-signature value hdr[0..n): 0, or -1 when malformed
 * (empty, longer than WH_SIG_HEADER_MAX, more than WH_SIG_PARSE_MAX
 * entries, a separator other than one space, an entry not
 * "v<1..9 digits>,<base64>", a v1 entry whose base64 is not exactly 32
 * bytes).  out is fully written on success. */
int wh_sig_parse(const char *hdr, size_t n, struct wh_sig_list *out);

/* Parse a webhook-timestamp ts[0..n): 1..WH_TS_TEXT_MAX decimal digits,
 * no sign, no leading zero (except "0"): 0 with *out set, or -1. */
int wh_ts_parse(const char *ts, size_t n, int64_t *out);

/* Verify a delivery as a receiver does: the timestamp within tolerance_s
 * of now_s, then HMAC over (id "." ts_text "." body) with secret compared
 * in constant time against every v1 entry of the signature header. */
enum wh_verify_result wh_verify(const struct wh_secret *secret, const char *id, size_t id_len, const char *ts_text,
				size_t ts_len, const void *body, size_t body_len, const char *sig_hdr, size_t sig_len,
				int64_t now_s, int64_t tolerance_s);

#endif
