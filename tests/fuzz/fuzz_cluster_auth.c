/*
 * fuzz_cluster_auth.c -- the internal-request signature check
 * (engine/cluster/cluster_auth.c) on arbitrary header values and bodies: it
 * must answer one of the enum ck_result codes, never read past its input,
 * and accept only what ck_sign produces for the same request.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cluster/cluster_auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cluster_key k = {.secret = "0123456789abcdef0123456789abcdef", .len = 32};
	size_t split = size ? data[0] % (size + 1) : 0; /* header | body */
	if (split > size)
		split = size;
	const char *hdr = (const char *)data;
	const uint8_t *body = data + split;
	size_t body_len = size - split;
	int r = ck_verify(&k, "POST", 4, "/internal/x", 11, body, body_len, hdr, split, 1000, 30);
	if (r != CK_OK && r != CK_E_MALFORMED && r != CK_E_SKEW && r != CK_E_MISMATCH && r != CK_E_INTERNAL)
		abort();
	if (r == CK_OK) {
		char want[CK_HEADER_MAX];
		int64_t ts = 0;
		for (size_t i = 2; i < split && hdr[i] != ','; i++)
			ts = ts * 10 + (hdr[i] - '0');
		if (ck_sign(&k, "POST", 4, "/internal/x", 11, ts, body, body_len, want) ||
		    strncmp(want, hdr, split) != 0 || strlen(want) != split)
			abort(); /* accepted something ck_sign would not produce */
	}
	return 0;
}
