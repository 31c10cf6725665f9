/*
 * fuzz_row_images.c -- libFuzzer target for the row images of snapshot
 * records (table_ops.from_image, engine/storage/image.h).
 *
 * A snapshot record passes its checksum and still carries an image nobody
 * validated this run (a backup from elsewhere, a file written by a buggy
 * build).  Recovery hands it to from_image, which must refuse it cleanly or
 * fill a row whose typed fields and indexes are consistent -- never crash,
 * leak or read out of bounds.  Input: byte 0 picks one of the tables with
 * images, the rest is the image; it is put twice under the same id (insert,
 * then replace), built in foreign memory and adopted the way recovery's
 * builder thread does, and the table is torn down.  (Fuzz builds skip the
 * test builds' comparison with the document, which is "{}" here.)
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "engine/base/config.h"
#include "engine/storage/record.h"
#include "engine/storage/resources.h"
#include "engine/storage/table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const struct table_ops *with[REC_T_COUNT_];
	unsigned n = 0;
	for (unsigned i = 0; resource_tables[i]; i++)
		if (resource_tables[i]->from_image)
			with[n++] = resource_tables[i];
	if (!n)
		return 0;
	static struct config cfg;
	config_defaults(&cfg);
	struct table t;
	if (table_init(&t, with[data[0] % n], &cfg))
		return 0;
	char why[128];
	const uint8_t *img = data + 1;
	table_put_image(&t, "row_1", 5, "{}", 2, img, size - 1, 1, why);
	table_put_image(&t, "row_1", 5, "{}", 2, img, size - 1, 2, why);
	size_t sz = table_row_size(&t, 5, 2);
	struct row *at = malloc(sz);
	if (at && !table_row_build_image_at(&t, at, "row_2", 5, "{}", 2, img, size - 1, 3, why)) {
		struct row *r = table_row_adopt(&t, at);
		if (r)
			table_row_install(&t, r);
		else
			table_row_release(&t, at);
	}
	free(at);
	table_fini(&t);
	return 0;
}
