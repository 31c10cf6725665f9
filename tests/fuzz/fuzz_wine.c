/*
 * fuzz_wine.c -- libFuzzer target for the wine ingest validator
 * (engine/catalogue/wine_validate.c), the first code a partner's wine body meets
 * after the JSON parser, run without a server: parse, validate (and the
 * inline producer object), then, when the body is valid, check that the
 * canonical document it becomes is itself valid, decodes to the same
 * typed values, and writes back byte for byte (the stored form is a fixed
 * point: replay cannot drift from the live write).  The dedup keys of
 * every valid body are computed too (no crash, bounded).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/edge/api.h"
#include "engine/catalogue/wine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void must(int cond)
{
	if (!cond)
		abort();
}

#define PRD "prd_01M7YD76420001QQVSYV"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_doc *d = json_parse((const char *)data, size, NULL, NULL);
	if (!d)
		return 0;
	static struct api_ctx c; /* no shard: lookups are skipped */
	memset(&c, 0, sizeof(c));
	c.who.is_platform = 1;
	struct wine_vctx v = {&c, 0, 0};
	struct wine_in in;
	unsigned bad = wine_validate(&v, json_root(d), &in);
	must(bad == v.n_bad);
	must(c.n_errs <= API_MAX_FIELD_ERRORS && (bad == 0) == (c.n_errs == 0));
	char pname[PRODUCER_MAX_NAME + 1] = "Producer", pcc[3] = "FR", pid[ID_MAX_LEN];
	if (in.producer_obj) {
		const struct producer *found;
		if (producer_resolve_inline(&c, in.producer_obj, 0, &found, pid, pname, pcc))
			bad++;
		must(found == NULL);
	}
	if (!bad && !c.n_errs) {
		struct wine_keys k;
		wine_keys_of(&in, pname, pcc, &k);
		must(strlen(k.nk) < sizeof(k.nk) && k.n_units <= in.n_gtins);
		struct buf a, b;
		buf_init(&a, 0);
		buf_init(&b, 0);
		if (wine_canonical_doc(&in, "wine_01M7YD76420001QQVSYV", PRD, &a) == 0) {
			struct json_doc *d2 = json_parse(a.data, a.len, NULL, NULL);
			must(d2 != NULL);
			struct wine_vctx v2 = {NULL, 0, 1};
			struct wine_in in2;
			must(wine_validate(&v2, json_root(d2), &in2) == 0);
			must(in2.vintage == in.vintage && in2.abv == in.abv && in2.volume_ul == in.volume_ul);
			must(in2.n_gtins == in.n_gtins && in2.colour == in.colour && in2.category == in.category);
			must(in2.has_lwin == in.has_lwin && !strcmp(in2.hs_code, in.hs_code));
			must(wine_canonical_doc(&in2, "wine_01M7YD76420001QQVSYV", PRD, &b) == 0);
			must(a.len == b.len && !memcmp(a.data, b.data, a.len));
			json_doc_free(d2);
		}
		buf_free(&a);
		buf_free(&b);
	}
	json_doc_free(d);
	return 0;
}
