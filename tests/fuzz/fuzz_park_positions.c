/*
 * fuzz_park_positions.c -- libFuzzer target for the X-WM-Min-Position
 * parser (engine/edge/park.c park_positions_parse), which a shard runs on
 * internal traffic.
 *
 * The input is parsed from an exact-size copy (ASan sees any read past
 * it).  An accepted value must re-serialise as "<pub>:<lsn>" joined by ','
 * to exactly the input when the input has no leading zeros (canonical),
 * and every entry must respect the bounds.
 */
#include "engine/edge/park.h"

#include <inttypes.h>
#include <stdio.h>
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
	char *v = malloc(size ? size : 1);
	if (!v)
		return 0;
	memcpy(v, data, size);
	struct park_position ps[PARK_MAX_PUBLISHERS];
	int k = park_positions_parse(v, size, ps, PARK_MAX_PUBLISHERS);
	check(k == -1 || (k >= 1 && k <= PARK_MAX_PUBLISHERS));
	if (k > 0) {
		char out[PARK_MAX_PUBLISHERS * 24 + 1];
		size_t o = 0;
		for (int i = 0; i < k; i++) {
			check(ps[i].publisher < PARK_MAX_PUBLISHERS);
			o += (size_t)snprintf(out + o, sizeof(out) - o, "%s%" PRIu32 ":%" PRIu64, i ? "," : "",
					      ps[i].publisher, ps[i].lsn);
		}
		/* canonical inputs (no leading zeros) round-trip byte for byte */
		int canonical = 1;
		for (size_t i = 0; i + 1 < size; i++)
			if ((i == 0 || v[i - 1] == ',' || v[i - 1] == ':') && v[i] == '0' && v[i + 1] >= '0' &&
			    v[i + 1] <= '9')
				canonical = 0;
		if (canonical)
			check(o == size && memcmp(out, v, size) == 0);
	}
	free(v);
	return 0;
}
