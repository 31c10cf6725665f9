/*
 * fuzz_webhook_seal.c -- libFuzzer target for the opener of sealed
 * webhook secrets (engine/events/webhook_seal.c): the stored text of an
 * endpoint row is read back from a WAL, a snapshot or a replication
 * stream, so it is parsed as untrusted bytes.
 *
 * The input, from an exact-size copy, is (1) opened as a sealed text
 * under a fixed key and endpoint id: what does not have the shape never
 * opens, and nothing but a sealing by that key would (it cannot be
 * guessed, so an opening is a finding); (2) taken as a secret: when its
 * length is allowed, sealing it and opening the result gives it back, and
 * under another endpoint id it does not open.
 */
#include "engine/events/webhook_seal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t deploy[WH_SEAL_KEY_LEN] = {1, 2, 3};
	uint8_t key[WH_SEAL_KEY_LEN];
	check(wh_seal_key(deploy, key) == 0);
	char *in = malloc(size ? size : 1);
	if (!in)
		return 0;
	memcpy(in, data, size);
	struct wh_secret out = {.len = 0};
	int shape = wh_sealed_shape(in, size);
	int opened = wh_unseal(key, "whe_fuzz", 8, in, size, &out) == 0;
	check(!opened || shape);
	check(!opened); /* a forgery under a key the input cannot know */
	if (size >= WH_SECRET_MIN && size <= WH_SECRET_MAX) {
		struct wh_secret s = {.len = size};
		memcpy(s.key, in, size);
		char text[WH_SEALED_TEXT_MAX + 1];
		int n = wh_seal(key, "whe_fuzz", 8, &s, text, sizeof(text));
		check(n > 0 && wh_sealed_shape(text, (size_t)n));
		check(wh_unseal(key, "whe_fuzz", 8, text, (size_t)n, &out) == 0 && out.len == size &&
		      !memcmp(out.key, in, size));
		check(wh_unseal(key, "whe_other", 9, text, (size_t)n, &out) != 0);
	}
	free(in);
	return 0;
}
