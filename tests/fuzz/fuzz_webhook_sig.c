/*
 * fuzz_webhook_sig.c -- libFuzzer target for the parsers of
 * engine/events/webhook_sign.c that a webhook receiver feeds with
 * untrusted bytes: the webhook-signature header (wh_sig_parse), a secret
 * (wh_secret_parse) and a webhook-timestamp (wh_ts_parse).
 *
 * The input is used from an exact-size copy (so ASan sees any read past
 * it).  Each parser is strict and canonical, so whatever it accepts must
 * format back to the very same bytes:
 *   - a header whose entries are all v1: "v1,<base64>" joined by one space;
 *   - a secret: wh_secret_format;
 *   - a timestamp: its decimal text.
 * And the bounds hold: at most WH_SIG_PARSE_MAX entries, v1 ones among them.
 * Finally wh_verify on the input as header never crashes and never says OK
 * for a key the input did not sign (it cannot know one: the key is fixed
 * and the MAC would have to be guessed).
 */
#include "engine/events/webhook_sign.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

static void header_roundtrip(const char *in, size_t n)
{
	struct wh_sig_list l;
	if (wh_sig_parse(in, n, &l) != 0)
		return;
	check(n > 0 && n <= WH_SIG_HEADER_MAX);
	check(l.n_entries >= 1 && l.n_entries <= WH_SIG_PARSE_MAX && l.n_v1 <= l.n_entries);
	if (l.n_v1 != l.n_entries)
		return;
	char out[WH_SIG_PARSE_MAX * (WH_SIG_ENTRY_LEN + 1) + 1];
	size_t o = 0;
	for (size_t i = 0; i < l.n_v1; i++) {
		if (i)
			out[o++] = ' ';
		memcpy(out + o, "v1,", 3);
		o += 3;
		int w = wh_b64_encode(l.v1[i], WH_MAC_LEN, out + o, sizeof(out) - o);
		check(w == WH_MAC_B64_LEN);
		o += (size_t)w;
	}
	check(o == n && memcmp(out, in, n) == 0);
}

static void secret_roundtrip(const char *in, size_t n)
{
	struct wh_secret s;
	if (wh_secret_parse(in, n, &s) != 0)
		return;
	check(s.len >= WH_SECRET_MIN && s.len <= WH_SECRET_MAX);
	char out[WH_SECRET_TEXT_MAX + 1];
	int w = wh_secret_format(&s, out, sizeof(out));
	check(w >= 0 && (size_t)w == n && memcmp(out, in, n) == 0);
}

static void ts_roundtrip(const char *in, size_t n)
{
	int64_t v;
	if (wh_ts_parse(in, n, &v) != 0)
		return;
	char out[32];
	int w = snprintf(out, sizeof(out), "%lld", (long long)v);
	check(w > 0 && (size_t)w == n && memcmp(out, in, n) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = malloc(size ? size : 1);
	if (!in)
		return 0;
	memcpy(in, data, size);
	header_roundtrip(in, size);
	secret_roundtrip(in, size);
	ts_roundtrip(in, size);
	static const struct wh_secret key = {.key = "fuzz-key-of-twenty-four-b", .len = 24};
	enum wh_verify_result r =
		wh_verify(&key, "msg_1", 5, "1700000000", 10, "{}", 2, in, size, 1700000000, WH_DEFAULT_TOLERANCE_S);
	check(r == WH_E_MALFORMED || r == WH_E_MISMATCH);
	free(in);
	return 0;
}
