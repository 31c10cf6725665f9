/*
 * fuzz_dlog_record.c -- libFuzzer target for the decision log's record
 * decoder (shard-router/decision_log.c dlog_record_decode), which recovery
 * runs on every record of the coordinator's log.
 *
 * The input is decoded from an exact-size copy (ASan sees any read past
 * it).  The format is canonical, so an accepted record must re-encode to
 * exactly the input, and every decoded field must respect its bound; a
 * refused one must come with a reason.
 */
#include "shard-router/decision_log.h"

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
	uint8_t *v = malloc(size ? size : 1);
	if (!v)
		return 0;
	memcpy(v, data, size);
	struct dlog_record r;
	char why[160] = "";
	if (dlog_record_decode(v, size, &r, why, sizeof(why)) == 0) {
		check(r.type == DLOG_REC_COMMIT || r.type == DLOG_REC_END);
		check(r.id_len >= 3 && r.id_len <= DLOG_TXN_ID_MAX && strlen(r.id) == r.id_len);
		check(dlog_txn_valid(r.id, r.id_len));
		if (r.type == DLOG_REC_COMMIT) {
			check(r.n >= 1 && r.n <= DLOG_MAX_PARTICIPANTS);
			for (size_t i = 0; i < r.n; i++)
				check(r.shards[i] < DLOG_SHARD_ID_LIMIT);
		}
		uint8_t out[DLOG_RECORD_MAX];
		size_t n = dlog_record_encode(&r, out, sizeof(out));
		check(n == size && memcmp(out, v, size) == 0);
	} else {
		check(why[0] != 0);
	}
	free(v);
	return 0;
}
