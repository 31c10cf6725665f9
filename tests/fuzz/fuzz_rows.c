/*
 * fuzz_rows.c -- libFuzzer target for the stored-document decoders of
 * every table (table_ops.decode, index_add/index_del, release, trim).
 *
 * A WAL frame or snapshot record passes its checksum and still carries a
 * document nobody validated this run: a backup restored from elsewhere, a
 * file written by an older or buggy build.  Recovery hands it to
 * table_put(), which must refuse it cleanly or install a row whose typed
 * fields and indexes are consistent -- never crash, leak or read out of
 * bounds.  Input: byte 0 picks the table (mod the table count), the rest
 * is the document; it is put twice under the same id (insert, then
 * replace: index_del of the first version), then under a second id, and
 * the table is torn down (release of every row).  A table whose rows
 * recovery builds off the loop (decode_pure) also takes the document the
 * way engine/storage/recovery.c does: built in foreign memory
 * (table_row_build_at), copied out (table_row_adopt) and installed.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/config.h"
#include "engine/storage/resources.h"
#include "engine/storage/table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned n = 0;
	while (resource_tables[n])
		n++;
	static struct config cfg;
	config_defaults(&cfg);
	struct table t;
	if (table_init(&t, resource_tables[data[0] % n], &cfg))
		return 0;
	char why[128];
	const char *doc = (const char *)data + 1;
	table_put(&t, "row_1", 5, doc, size - 1, 1, why);
	table_put(&t, "row_1", 5, doc, size - 1, 2, why);
	table_put(&t, "row_2", 5, doc, size - 1, 3, why);
	table_del(&t, "row_2", 5, 2);
	if (t.ops->decode_pure) {
		size_t sz = table_row_size(&t, 5, size - 1);
		struct row *at = malloc(sz);
		if (at && !table_row_build_at(&t, at, "row_1", 5, doc, size - 1, 4, why)) {
			struct row *r = table_row_adopt(&t, at);
			if (r)
				table_row_install(&t, r); /* replaces the first put's row */
			else
				table_row_release(&t, at);
		}
		free(at);
	}
	table_fini(&t);
	return 0;
}
