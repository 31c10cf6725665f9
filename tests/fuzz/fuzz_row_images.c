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
 * builder thread does, every row's document is read (rendered from the
 * row when it keeps none: table.h render), and the table is torn down.
 * Bit 7 of byte 0 puts the record without a document (as a snapshot
 * holds a row that renders its own), else with "{}", or with bit 6 with
 * TAIL_DOC: a document whose last member is created_by at offset 9 (a
 * wine's image names where that member is, and is refused unless it is
 * there, before its keys are read).  (Fuzz builds skip the test builds'
 * comparison with the document.)
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/config.h"
#include "engine/storage/record.h"
#include "engine/storage/resources.h"
#include "engine/storage/table.h"
#include "net/buf.h"
#include "net/json.h"

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
	static const char TAIL_DOC[] = "{\"id\":\"w\",\"created_by\":\"platform\"}";
	const char *body = data[0] & 0x40 ? TAIL_DOC : "{}";
	size_t dl = data[0] & 0x80 ? 0 : strlen(body);
	table_put_image(&t, "row_1", 5, body, dl, img, size - 1, 1, why);
	table_put_image(&t, "row_1", 5, body, dl, img, size - 1, 2, why);
	size_t sz = table_row_size(&t, 5, dl);
	struct row *at = malloc(sz);
	if (at && !table_row_build_image_at(&t, at, "row_2", 5, body, dl, img, size - 1, 3, why)) {
		struct row *r = table_row_adopt(&t, at);
		if (r)
			table_row_install(&t, r);
		else
			table_row_release(&t, at);
	}
	free(at);
	struct buf doc;
	buf_init(&doc, 1 << 20);
	const char *ids[] = {"row_1", "row_2"};
	for (unsigned i = 0; i < 2; i++) {
		const struct row *r = table_get(&t, ids[i], 5);
		size_t len;
		const char *d = r ? row_doc(r, &doc, &len) : NULL;
		if (!d || r->doc)
			continue;
		/* a rendered document is JSON, whatever image the row came from */
		struct json_doc *jd = json_parse(d, len, NULL, NULL);
		if (!jd)
			abort();
		json_doc_free(jd);
	}
	buf_free(&doc);
	table_fini(&t);
	return 0;
}
