/*
 * fuzz_refdata.c -- libFuzzer target for the pricing reference-data loader
 * (engine/pricing/refdata.c) and the delivery postal-code reader.
 *
 * Why: the tables arrive from an operator upload (POST
 * /v1/admin/reference-data: untrusted bytes inside a JSON string) as well
 * as from files, in two layouts per table (original and dated, with
 * effective dates, VAT regions/products and freight zones), and a quote or
 * order body carries a postal code that picks a VAT region.  The loader
 * must refuse anything malformed with "file:line: reason" or load it --
 * never crash, overflow a row array or read past the text.  Input: byte 0
 * picks the table (mod 5, levies.tsv included) and the postal-code country, the rest is the
 * table text; a successful parse is then queried on a few dates.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine/pricing/refdata.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	static const enum rd_file kinds[5] = {RD_F_VAT, RD_F_EXCISE, RD_F_FREIGHT, RD_F_FX, RD_F_LEVIES};
	static const char *const cc[4] = {"PT", "ES", "DE", "FR"};
	struct refdata *rd = refdata_new();
	if (!rd)
		return 0;
	char err[256];
	const char *text = (const char *)data + 1;
	if (!refdata_parse(rd, kinds[data[0] % 5], text, size - 1, err, sizeof(err))) {
		const struct rd_excise *e;
		static const uint32_t days[3] = {20250101, 20260201, 20991231};
		for (int i = 0; i < 3; i++) {
			(void)refdata_vat_at(rd, "PT", "", RD_CAT_STILL, days[i]);
			(void)refdata_vat_at(rd, "PT", "PT-30", RD_CAT_SPARKLING, days[i]);
			(void)refdata_excise(rd, "GB", RD_CAT_STILL, 1300, days[i], &e);
		}
		(void)refdata_freight(rd, "FR", "PL", 6);
		(void)refdata_newest(rd);
		(void)refdata_age_days(rd, 20261125);
	}
	refdata_free(rd);
	/* the postal code: NUL-terminated copy of at most 16 bytes */
	char pc[17];
	size_t n = size - 1 < 16 ? size - 1 : 16;
	memcpy(pc, text, n);
	pc[n] = 0;
	(void)refdata_region_of_postal(cc[data[0] / 5 % 4], pc);
	return 0;
}
