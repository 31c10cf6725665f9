/*
 * fuzz_principal.c -- X-WM-Principal (engine/edge/principal.c) on arbitrary
 * bytes: the decoder must never read past its input, and what it accepts
 * must encode back to exactly the same bytes (one wire form per principal).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/edge/principal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct principal who;
	uint32_t q;
	if (principal_decode((const char *)data, size, &who, &q))
		return 0;
	char again[PRINCIPAL_MAX];
	int n = principal_encode(&who, q, again);
	if (n < 0 || (size_t)n != size || memcmp(again, data, size))
		abort(); /* accepted a form the encoder does not produce */
	return 0;
}
