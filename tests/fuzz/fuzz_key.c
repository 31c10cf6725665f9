/*
 * fuzz_key.c -- libFuzzer target for the bearer-key parser and the RFC 3339
 * parser (expiry), both of which read attacker-controlled bytes before any
 * authentication.  Checks: no crash, no out-of-bounds read, and a token
 * classified as well-formed really has the documented shape.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/edge/key.h"
#include "engine/base/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy = malloc(size ? size : 1); /* exact size: ASan sees any over-read */
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	enum key_token t = key_token_parse(copy, size);
	if (t == KEY_TOK_SECRET || t == KEY_TOK_PUBLISHABLE) {
		if (size != KEY_TOKEN_LEN || memcmp(copy, t == KEY_TOK_SECRET ? "wm_sk_" : "wm_pk_", 6))
			abort();
	} else if (t == KEY_TOK_RAW) {
		if (size < KEY_RAW_MIN || size > KEY_RAW_MAX || (size >= 3 && !memcmp(copy, "wm_", 3)))
			abort();
	}
	(void)key_token_error(t);
	long long ms;
	(void)parse_rfc3339_ms(copy, size, &ms);
	free(copy);
	return 0;
}
