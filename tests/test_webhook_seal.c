/*
 * test_webhook_seal.c -- webhook signing secrets sealed at rest
 * (engine/events/webhook_seal.h): round trips at the length bounds, every
 * tampering refused, the endpoint id bound in, the text's shape bounds.
 */
#include <string.h>

#include "engine/events/webhook_seal.h"
#include "tests/wm_test.h"

static void secret_of(size_t n, uint8_t fill, struct wh_secret *s)
{
	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < n; i++)
		s->key[i] = (uint8_t)(fill + i);
	s->len = n;
}

static void key_of(uint8_t k[WH_SEAL_KEY_LEN], uint8_t fill)
{
	uint8_t deploy[WH_SEAL_KEY_LEN];
	memset(deploy, fill, sizeof(deploy));
	cr_assert_eq(wh_seal_key(deploy, k), 0);
}

WM_TEST(webhook_seal, round_trip_at_the_length_bounds_and_not_past_them)
{
	uint8_t k[WH_SEAL_KEY_LEN];
	key_of(k, 7);
	char text[WH_SEALED_TEXT_MAX + 1];
	const size_t ok[] = {WH_SECRET_MIN, 32, WH_SECRET_MAX};
	for (unsigned i = 0; i < 3; i++) {
		struct wh_secret s, o;
		secret_of(ok[i], (uint8_t)i, &s);
		int n = wh_seal(k, "whe_1", 5, &s, text, sizeof(text));
		cr_assert_gt(n, 3, "length %zu", ok[i]);
		cr_assert_eq((size_t)n, strlen(text));
		cr_assert_eq(strncmp(text, "v1.", 3), 0);
		/* nonce + secret + tag, base64url without padding */
		cr_assert_eq((size_t)n, 3 + ((WH_SEAL_NONCE + ok[i] + WH_SEAL_TAG) * 4 + 2) / 3);
		cr_assert(wh_sealed_shape(text, (size_t)n));
		cr_assert_eq(wh_unseal(k, "whe_1", 5, text, (size_t)n, &o), 0);
		cr_assert_eq(o.len, s.len);
		cr_assert_eq(memcmp(o.key, s.key, s.len), 0);
	}
	cr_assert_eq((size_t)3 + ((WH_SEAL_RAW_MAX * 4 + 2) / 3), (size_t)WH_SEALED_TEXT_MAX, "the text bound is the 64-byte secret's");
	struct wh_secret s;
	secret_of(WH_SECRET_MIN - 1, 1, &s);
	cr_assert_eq(wh_seal(k, "whe_1", 5, &s, text, sizeof(text)), -1);
	secret_of(WH_SECRET_MAX, 1, &s);
	s.len = WH_SECRET_MAX + 1;
	cr_assert_eq(wh_seal(k, "whe_1", 5, &s, text, sizeof(text)), -1);
	secret_of(WH_SECRET_MAX, 1, &s);
	cr_assert_eq(wh_seal(k, "whe_1", 5, &s, text, WH_SEALED_TEXT_MAX), -1, "no room for the NUL");
	cr_assert_gt(wh_seal(k, "whe_1", 5, &s, text, WH_SEALED_TEXT_MAX + 1), 0);
}

WM_TEST(webhook_seal, every_tampering_the_wrong_endpoint_or_key_is_refused)
{
	uint8_t k[WH_SEAL_KEY_LEN], k2[WH_SEAL_KEY_LEN];
	key_of(k, 1);
	key_of(k2, 2);
	struct wh_secret s, o = {.len = 0};
	secret_of(32, 9, &s);
	char text[WH_SEALED_TEXT_MAX + 1], again[WH_SEALED_TEXT_MAX + 1];
	int n = wh_seal(k, "whe_A", 5, &s, text, sizeof(text));
	cr_assert_gt(n, 0);
	cr_assert_gt(wh_seal(k, "whe_A", 5, &s, again, sizeof(again)), 0);
	cr_assert_str_neq(text, again, "a fresh nonce each time");
	cr_assert_eq(wh_unseal(k, "whe_B", 5, text, (size_t)n, &o), -1, "another endpoint's row");
	cr_assert_eq(wh_unseal(k2, "whe_A", 5, text, (size_t)n, &o), -1, "another deployment's key");
	for (int i = 3; i < n; i++) {
		char t[WH_SEALED_TEXT_MAX + 1];
		memcpy(t, text, (size_t)n + 1);
		t[i] = t[i] == 'A' ? 'B' : 'A';
		int r = wh_unseal(k, "whe_A", 5, t, (size_t)n, &o);
		/* the last character's low bits may be padding: then the decoder
		 * refuses it as not canonical; either way it does not open */
		cr_assert_eq(r, -1, "a change at %d opened", i);
	}
	/* shape: version, length, alphabet */
	char t[WH_SEALED_TEXT_MAX + 8];
	memcpy(t, text, (size_t)n + 1);
	t[1] = '2';
	cr_assert_not(wh_sealed_shape(t, (size_t)n));
	cr_assert_eq(wh_unseal(k, "whe_A", 5, t, (size_t)n, &o), -1);
	/* 68 base64url characters are 51 bytes: one short of a nonce, a
	 * 24-byte secret and a tag */
	cr_assert_not(wh_sealed_shape(text, 3 + 68), "shorter than nonce + 24 bytes + tag");
	cr_assert_not(wh_sealed_shape("v1.", 3));
	cr_assert_not(wh_sealed_shape("", 0));
	memset(t, 'A', sizeof(t));
	memcpy(t, "v1.", 3);
	cr_assert_not(wh_sealed_shape(t, WH_SEALED_TEXT_MAX + 1), "past the text bound");
	memcpy(t, text, (size_t)n + 1);
	t[10] = '=';
	cr_assert_not(wh_sealed_shape(t, (size_t)n), "outside the alphabet");
	cr_assert_eq(o.len, 0, "out is written only on success");
}
