/*
 * test_documents_units.c -- the document row's decoder (engine/orders/
 * documents.c, table "document"): what a WAL record, a snapshot or a
 * replica may hand it.  fuzz_rows found that a row whose `type` is none of
 * the six kinds read past the end of doc_kind_names (it has no NULL end);
 * the refusal below runs under AddressSanitizer, which reports such a
 * read.  Bounds: the leg index 0..DOC_LEGS_MAX - 1, a generated row's
 * 64-hex sha256.
 */
#include <stdio.h>
#include <string.h>

#include "engine/base/config.h"
#include "engine/documents/doc_model.h"
#include "engine/orders/documents.h"
#include "engine/storage/table.h"
#include "tests/wm_test.h"

static int put(struct table *t, const char *type, int leg, const char *status, const char *sha, uint64_t lsn)
{
	char doc[512], why[128];
	int n = snprintf(doc, sizeof(doc),
			 "{\"document_id\":\"ord_DE_1.D1\",\"order_id\":\"ord_DE_1\",\"type\":\"%s\",\"leg\":%d,"
			 "\"status\":\"%s\",\"sha256\":%s%s%s}",
			 type, leg, status, sha ? "\"" : "", sha ? sha : "null", sha ? "\"" : "");
	return table_put(t, "ord_DE_1.D1", 11, doc, (size_t)n, lsn, why);
}

WM_TEST(documents_units, the_row_decoder_refuses_what_no_document_is)
{
	struct config cfg;
	config_defaults(&cfg);
	struct table t;
	cr_assert_eq(table_init(&t, &document_table_ops, &cfg), 0);
	static const char sha[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	uint64_t lsn = 1;
	/* every kind, pending and generated; the last leg */
	for (int k = 0; k < DOC_KIND_COUNT; k++) {
		cr_assert_eq(put(&t, doc_kind_names[k], 0, "pending", NULL, lsn++), 0, "%s", doc_kind_names[k]);
		cr_assert_eq(put(&t, doc_kind_names[k], DOC_LEGS_MAX - 1, "generated", sha, lsn++), 0);
	}
	/* no such kind (the fuzz case), a prefix of one, one past the last leg,
	 * a negative leg, an unknown status, a generated row without its file's
	 * checksum or with a short one */
	cr_assert_neq(put(&t, "consumeri_nvoice", 0, "pending", NULL, lsn++), 0);
	cr_assert_neq(put(&t, "consumer", 0, "pending", NULL, lsn++), 0);
	cr_assert_neq(put(&t, "carrier_label", DOC_LEGS_MAX, "pending", NULL, lsn++), 0);
	cr_assert_neq(put(&t, "carrier_label", -1, "pending", NULL, lsn++), 0);
	cr_assert_neq(put(&t, "carrier_label", 0, "printed", NULL, lsn++), 0);
	cr_assert_neq(put(&t, "carrier_label", 0, "generated", NULL, lsn++), 0);
	cr_assert_neq(put(&t, "carrier_label", 0, "generated", "0123", lsn++), 0);
	cr_assert_eq(table_count(&t), 1);
	table_fini(&t);
}
