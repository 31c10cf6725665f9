/*
 * webhook_sign.c -- Standard Webhooks signatures (contract in
 * webhook_sign.h).
 *
 * Why these choices:
 *   - The MAC is computed with EVP_MAC streaming over id, ".", ts, ".",
 *     body, so a large body is never copied to build the signed content.
 *   - Base64 is our own strict codec rather than EVP_DecodeBlock, which
 *     accepts whitespace and does not report padding: a secret or a
 *     signature has exactly one text, so two spellings cannot pass as one.
 *   - The verifier compares with CRYPTO_memcmp against every v1 entry
 *     (no early exit on the first match), so its time does not depend on
 *     where or whether a match was found.
 */
#include "engine/events/webhook_sign.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The value of one base64 character, or -1. */
static int b64_val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int wh_b64_encode(const uint8_t *in, size_t n, char *out, size_t out_size)
{
	size_t need = (n + 2) / 3 * 4;
	if (out_size < need + 1)
		return -1;
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < n)
			v |= in[i + 2];
		out[o++] = B64[(v >> 18) & 63];
		out[o++] = B64[(v >> 12) & 63];
		out[o++] = i + 1 < n ? B64[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? B64[v & 63] : '=';
	}
	out[o] = '\0';
	return (int)o;
}

int wh_b64_decode(const char *in, size_t n, uint8_t *out, size_t out_size)
{
	if (n % 4 != 0)
		return -1;
	size_t o = 0;
	for (size_t i = 0; i < n; i += 4) {
		int last = i + 4 == n;
		int pad = 0;
		if (last && in[i + 3] == '=')
			pad = in[i + 2] == '=' ? 2 : 1;
		uint32_t v = 0;
		for (size_t j = 0; j < 4; j++) {
			int d;
			if (j >= 4 - (size_t)pad) {
				d = 0;
			} else {
				d = b64_val((unsigned char)in[i + j]);
				if (d < 0)
					return -1;
			}
			v = v << 6 | (uint32_t)d;
		}
		/* canonical: the bits under the padding are zero */
		if ((pad == 1 && (v & 0xff) != 0) || (pad == 2 && (v & 0xffff) != 0))
			return -1;
		size_t nb = 3 - (size_t)pad;
		if (o + nb > out_size)
			return -1;
		out[o++] = (uint8_t)(v >> 16);
		if (nb > 1)
			out[o++] = (uint8_t)(v >> 8);
		if (nb > 2)
			out[o++] = (uint8_t)v;
	}
	return (int)o;
}

int wh_secret_parse(const char *text, size_t n, struct wh_secret *out)
{
	size_t pl = sizeof(WH_SECRET_PREFIX) - 1;
	if (n < pl || n > WH_SECRET_TEXT_MAX || memcmp(text, WH_SECRET_PREFIX, pl) != 0)
		return -1;
	uint8_t key[WH_SECRET_MAX];
	int len = wh_b64_decode(text + pl, n - pl, key, sizeof(key));
	if (len < WH_SECRET_MIN || len > WH_SECRET_MAX)
		return -1;
	memcpy(out->key, key, (size_t)len);
	out->len = (size_t)len;
	OPENSSL_cleanse(key, sizeof(key));
	return 0;
}

int wh_secret_format(const struct wh_secret *s, char *out, size_t out_size)
{
	size_t pl = sizeof(WH_SECRET_PREFIX) - 1;
	if (s->len < WH_SECRET_MIN || s->len > WH_SECRET_MAX || out_size < pl + 1)
		return -1;
	memcpy(out, WH_SECRET_PREFIX, pl);
	int n = wh_b64_encode(s->key, s->len, out + pl, out_size - pl);
	return n < 0 ? -1 : (int)pl + n;
}

int wh_secret_generate(size_t nbytes, struct wh_secret *out)
{
	if (nbytes < WH_SECRET_MIN || nbytes > WH_SECRET_MAX)
		return -1;
	if (RAND_bytes(out->key, (int)nbytes) != 1)
		return -1;
	out->len = nbytes;
	return 0;
}

int wh_id_valid(const char *id, size_t n)
{
	if (n == 0 || n > WH_ID_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)id[i] < 0x21 || (unsigned char)id[i] > 0x7e)
			return 0;
	return 1;
}

/* HMAC-SHA256(key, id "." ts "." body) into mac[WH_MAC_LEN]: 0 or -1. */
static int mac_compute(const struct wh_secret *s, const char *id, size_t id_len, const char *ts, size_t ts_len,
		       const void *body, size_t body_len, uint8_t mac[WH_MAC_LEN])
{
	EVP_MAC *m = EVP_MAC_fetch(NULL, "HMAC", NULL);
	EVP_MAC_CTX *ctx = m ? EVP_MAC_CTX_new(m) : NULL;
	int rc = -1;
	if (!ctx)
		goto out;
	char digest[] = "SHA256";
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
		OSSL_PARAM_construct_end(),
	};
	size_t ml = 0;
	if (EVP_MAC_init(ctx, s->key, s->len, params) != 1 || EVP_MAC_update(ctx, (const uint8_t *)id, id_len) != 1 ||
	    EVP_MAC_update(ctx, (const uint8_t *)".", 1) != 1 ||
	    EVP_MAC_update(ctx, (const uint8_t *)ts, ts_len) != 1 ||
	    EVP_MAC_update(ctx, (const uint8_t *)".", 1) != 1 ||
	    (body_len && EVP_MAC_update(ctx, body, body_len) != 1) ||
	    EVP_MAC_final(ctx, mac, &ml, WH_MAC_LEN) != 1 || ml != WH_MAC_LEN)
		goto out;
	rc = 0;
out:
	EVP_MAC_CTX_free(ctx);
	EVP_MAC_free(m);
	return rc;
}

int wh_sign(const struct wh_secret *secrets, size_t n_secrets, const char *id, size_t id_len, int64_t ts,
	    const void *body, size_t body_len, char *out, size_t out_size)
{
	if (n_secrets < 1 || n_secrets > WH_SIGN_MAX_SECRETS || !wh_id_valid(id, id_len) || ts < 0 ||
	    out_size < n_secrets * (WH_SIG_ENTRY_LEN + 1))
		return -1;
	char tsb[WH_TS_TEXT_MAX + 2];
	int tl = snprintf(tsb, sizeof(tsb), "%lld", (long long)ts);
	size_t o = 0;
	for (size_t i = 0; i < n_secrets; i++) {
		uint8_t mac[WH_MAC_LEN];
		if (secrets[i].len < WH_SECRET_MIN || secrets[i].len > WH_SECRET_MAX ||
		    mac_compute(&secrets[i], id, id_len, tsb, (size_t)tl, body, body_len, mac) != 0)
			return -1;
		if (i > 0)
			out[o++] = ' ';
		memcpy(out + o, "v1,", 3);
		o += 3;
		o += (size_t)wh_b64_encode(mac, sizeof(mac), out + o, out_size - o);
	}
	out[o] = '\0';
	return (int)o;
}

int wh_sign_headers(const struct wh_secret *secrets, size_t n_secrets, const char *id, size_t id_len, int64_t ts,
		    const void *body, size_t body_len, struct wh_signed_headers *out)
{
	char sig[WH_SIG_OUT_MAX];
	if (wh_sign(secrets, n_secrets, id, id_len, ts, body, body_len, sig, sizeof(sig)) < 0)
		return -1;
	/* the sizes of out's fields hold the longest id, timestamp and signature */
	memcpy(out->id, "webhook-id: ", 12);
	memcpy(out->id + 12, id, id_len);
	out->id[12 + id_len] = '\0';
	snprintf(out->timestamp, sizeof(out->timestamp), "webhook-timestamp: %lld", (long long)ts);
	memcpy(out->signature, "webhook-signature: ", 19);
	memcpy(out->signature + 19, sig, strlen(sig) + 1);
	return 0;
}

/* One entry e[0..n) ("v<digits>,<base64>") into l: 0 or -1. */
static int parse_entry(const char *e, size_t n, struct wh_sig_list *l)
{
	size_t i = 1, digits = 0;
	if (n < 3 || e[0] != 'v')
		return -1;
	while (i < n && e[i] >= '0' && e[i] <= '9' && digits <= 9) {
		i++;
		digits++;
	}
	if (digits == 0 || digits > 9 || i >= n || e[i] != ',')
		return -1;
	const char *b = e + i + 1;
	size_t bl = n - i - 1;
	if (bl == 0)
		return -1;
	uint8_t tmp[WH_SIG_HEADER_MAX];
	int len = wh_b64_decode(b, bl, tmp, sizeof(tmp));
	if (len <= 0)
		return -1;
	if (digits == 1 && e[1] == '1') {
		if (len != WH_MAC_LEN)
			return -1;
		memcpy(l->v1[l->n_v1++], tmp, WH_MAC_LEN);
	}
	l->n_entries++;
	return 0;
}

int wh_sig_parse(const char *hdr, size_t n, struct wh_sig_list *out)
{
	struct wh_sig_list l = {0};
	if (n == 0 || n > WH_SIG_HEADER_MAX)
		return -1;
	size_t start = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && hdr[i] != ' ')
			continue;
		/* an empty entry: leading, trailing or doubled space */
		if (i == start || l.n_entries == WH_SIG_PARSE_MAX)
			return -1;
		if (parse_entry(hdr + start, i - start, &l) != 0)
			return -1;
		start = i + 1;
	}
	*out = l;
	return 0;
}

int wh_ts_parse(const char *ts, size_t n, int64_t *out)
{
	if (n == 0 || n > WH_TS_TEXT_MAX || (n > 1 && ts[0] == '0'))
		return -1;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (ts[i] < '0' || ts[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(ts[i] - '0');
	}
	if (v > (uint64_t)INT64_MAX)
		return -1;
	*out = (int64_t)v;
	return 0;
}

enum wh_verify_result wh_verify(const struct wh_secret *secret, const char *id, size_t id_len, const char *ts_text,
				size_t ts_len, const void *body, size_t body_len, const char *sig_hdr, size_t sig_len,
				int64_t now_s, int64_t tolerance_s)
{
	int64_t ts;
	struct wh_sig_list l;
	if (!wh_id_valid(id, id_len) || wh_ts_parse(ts_text, ts_len, &ts) != 0 ||
	    wh_sig_parse(sig_hdr, sig_len, &l) != 0)
		return WH_E_MALFORMED;
	/* |now - ts| > tolerance without overflow: ts >= 0 and now_s >= 0 */
	if (tolerance_s < 0 || now_s < 0 || (now_s > ts && now_s - ts > tolerance_s) || (ts > now_s && ts - now_s > tolerance_s))
		return WH_E_SKEW;
	uint8_t mac[WH_MAC_LEN];
	if (secret->len < WH_SECRET_MIN || secret->len > WH_SECRET_MAX ||
	    mac_compute(secret, id, id_len, ts_text, ts_len, body, body_len, mac) != 0)
		return WH_E_INTERNAL;
	int match = 0;
	for (size_t i = 0; i < l.n_v1; i++)
		match |= CRYPTO_memcmp(mac, l.v1[i], WH_MAC_LEN) == 0;
	return match ? WH_OK : WH_E_MISMATCH;
}
