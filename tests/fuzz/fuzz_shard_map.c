/*
 * fuzz_shard_map.c -- the shard map loader (engine/cluster/shard_map.c) on
 * arbitrary bytes: it must return 0 or -1, never read past the input, and a
 * map it accepts must satisfy its own invariants (ids 0..n-1 present, every
 * owner a known shard, owned countries counted once).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cluster/shard_map.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct shard_map m;
	char err[256];
	static const char *const req[] = {"FR"};
	if (smap_parse((const char *)data, size, "fuzz", req, size & 1, &m, err, sizeof(err)))
		return 0;
	if (m.version == 0 || m.n == 0 || m.n > SMAP_MAX_SHARDS)
		abort();
	unsigned counted = 0, owned = 0;
	for (uint32_t i = 0; i < m.n; i++) {
		if (m.shards[i].id != i || !m.shards[i].addr[0])
			abort();
		counted += m.shards[i].n_countries;
	}
	for (size_t c = 0; c < sizeof(m.owner); c++) {
		if (m.owner[c] > m.n)
			abort();
		owned += m.owner[c] != 0;
	}
	if (counted != owned)
		abort();
	return 0;
}
