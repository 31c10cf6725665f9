/*
 * test_order_documents.c -- an order's trade documents over HTTP (issue
 * 17, engine/orders/documents.c): the set a reserved order gets (consumer
 * invoice, transport document, per leg label, fulfiller instruction and
 * originator proforma), the originator's final invoice at its leg's
 * delivery, gap-free numbers per series, the files (PDF, checksum = the
 * row's sha256, the amounts and number printed, read back with pdftotext),
 * who sees which, document.generated, and kill -9 before a render and
 * after a file is stored (the restart finishes, renders nothing twice and
 * keeps every number).
 *
 * The world (order_world.h): orders to DE (documents in German) of the
 * estate's wine; the estate ships its own leg.
 */
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/doc_fixtures.h"
#include "tests/harness.h"
#include "tests/order_world.h"
#include "tests/wm_test.h"

static const char *dump(json_t *j)
{
	static char b[32768];
	size_t n = json_dumpb(j, b, sizeof(b) - 1, JSON_COMPACT);
	b[n < sizeof(b) - 1 ? n : sizeof(b) - 1] = 0;
	return b;
}

/* A reserved order of qty: its id and total (cents). */
static void placed(struct oworld *x, int qty, char *id, long long *total)
{
	int st;
	json_t *o = ow_order(x, qty, NULL, NULL, &st);
	cr_assert_eq(st, 201, "%s", dump(o));
	snprintf(id, 64, "%s", tc_jstr(o, "id"));
	if (total)
		*total = ow_cents(o, "total");
	json_decref(o);
}

/* GET /v1/orders/{id}/documents as key (NULL: operator) until it lists
 * `want` documents, all generated (bounded: 30 s); the list (caller decrefs). */
static json_t *docs_when_ready(struct oworld *x, const char *key, const char *id, size_t want)
{
	char path[160];
	snprintf(path, sizeof(path), "/v1/orders/%s/documents", id);
	json_t *l = NULL;
	for (int t = 0; t < 600; t++) {
		json_decref(l);
		l = tc_expect(x->port, "GET", path, key, NULL, 200);
		json_t *data = json_object_get(l, "data"), *d;
		size_t i, ready = 0;
		json_array_foreach(data, i, d)
			ready += !strcmp(tc_jstr(d, "status"), "generated");
		if (json_array_size(data) == want && ready == want)
			return l;
		usleep(50 * 1000);
	}
	cr_assert_fail("the documents of %s did not all generate: %s", id, dump(l));
	return NULL;
}

/* The document of type `type` in list l (leg 0), or NULL. */
static json_t *of_type(json_t *l, const char *type)
{
	size_t i;
	json_t *d;
	json_array_foreach(json_object_get(l, "data"), i, d)
		if (!strcmp(tc_jstr(d, "type"), type))
			return d;
	return NULL;
}

/* The text of the PDF at path (pdftotext, white space squeezed) into out. */
static void pdf_text_into(const char *path, char *out, size_t n)
{
	char *t = docfix_pdf_text(path);
	snprintf(out, n, "%s", t);
	free(t);
}

/* Fetch a document's PDF (its url) as key; check it is a PDF whose SHA-256
 * is the row's; write it to path_out (a temporary file). */
static void fetch_pdf(struct oworld *x, const char *key, json_t *d, char *path_out, size_t n)
{
	struct http_resp r;
	char hdr[200];
	snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s\r\n", key);
	cr_assert_eq(http_do(x->port, "GET", tc_jstr(d, "url"), key ? hdr : NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200, "%s: %s", tc_jstr(d, "url"), r.body);
	cr_assert(r.body_len > 5 && !memcmp(r.body, "%PDF-", 5), "not a PDF");
	char ct[64];
	cr_assert_gt(http_header(&r, "Content-Type", ct, sizeof(ct)), 0);
	cr_assert_str_eq(ct, "application/pdf");
	uint8_t md[32];
	SHA256((const uint8_t *)r.body, r.body_len, md);
	char hex[65];
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	cr_assert_str_eq(hex, tc_jstr(d, "sha256"), "the file is the row's");
	cr_assert_eq((long long)r.body_len, json_integer_value(json_object_get(d, "bytes")));
	snprintf(path_out, n, "/tmp/wm-doc-%d-%s.pdf", getpid(), tc_jstr(d, "type"));
	FILE *f = fopen(path_out, "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(r.body, 1, r.body_len, f), r.body_len);
	fclose(f);
	http_resp_free(&r);
}

WM_TEST(order_documents, a_reserved_order_gets_its_set_numbered_and_rendered, .timeout = 120)
{
	struct oworld x;
	ow_start(&x, NULL, 24, 0);
	char a[64], b[64], pp[160];
	long long total_a;
	/* the estate's tax numbers, printed on its documents (and their format checked) */
	snprintf(pp, sizeof(pp), "/v1/partners/%s", x.est);
	json_t *e = tc_expect(x.port, "PATCH", pp, x.kest, "{\"vat_id\":\"FR1\",\"excise_number\":\"FR0123456789\"}", 422);
	cr_assert(tc_lists_error(e, "vat_id", "format") && tc_lists_error(e, "excise_number", "format"), "%s", dump(e));
	json_decref(e);
	json_decref(tc_expect(x.port, "PATCH", pp, x.kest, "{\"vat_id\":\"FR12345678901\",\"excise_number\":\"FR0123456789A\"}",
			      200));
	placed(&x, 6, a, &total_a);
	placed(&x, 3, b, NULL);
	json_t *la = docs_when_ready(&x, NULL, a, 5), *lb = docs_when_ready(&x, NULL, b, 5);
	static const char *const kinds[] = {"consumer_invoice", "transport_document", "carrier_label",
					    "fulfiller_instruction", "originator_proforma"};
	for (int k = 0; k < 5; k++)
		cr_assert_not_null(of_type(la, kinds[k]), "%s missing: %s", kinds[k], dump(la));
	cr_assert_null(of_type(la, "originator_invoice"), "not before the leg's delivery");
	/* gap-free numbers per series: b's invoice follows a's */
	json_t *ia = of_type(la, "consumer_invoice"), *ib = of_type(lb, "consumer_invoice");
	char series[64], year[40];
	ow_ago(0, year);
	year[4] = 0;
	snprintf(series, sizeof(series), "CI-DE-%s", year);
	cr_assert_str_eq(tc_jstr(ia, "series"), series);
	cr_assert_str_eq(tc_jstr(ib, "series"), series);
	long long na = json_integer_value(json_object_get(ia, "number")), nb = json_integer_value(json_object_get(ib, "number"));
	cr_assert_eq(na, 1, "%s", dump(ia));
	cr_assert_eq(nb, 2, "%s", dump(ib));
	cr_assert_str_eq(tc_jstr(ia, "language"), "de");
	cr_assert_str_eq(tc_jstr(json_object_get(ia, "issuer"), "partner_id"), "platform");

	/* the invoice's file: a PDF whose checksum is the row's, with the number and the total */
	char path[256], text[65536], want[96];
	fetch_pdf(&x, NULL, ia, path, sizeof(path));
	pdf_text_into(path, text, sizeof(text));
	unlink(path);
	snprintf(want, sizeof(want), "%s-%06lld", series, na);
	cr_assert_not_null(strstr(text, want), "the number %s: %s", want, text);
	snprintf(want, sizeof(want), "%lld,%02lld", total_a / 100, total_a % 100);
	cr_assert_not_null(strstr(text, want), "the total %s: %s", want, text);
	/* the transport document names the estate's excise number, the proforma its VAT number */
	fetch_pdf(&x, NULL, of_type(la, "transport_document"), path, sizeof(path));
	pdf_text_into(path, text, sizeof(text));
	unlink(path);
	cr_assert_not_null(strstr(text, "FR0123456789A"), "%s", text);
	fetch_pdf(&x, NULL, of_type(la, "originator_proforma"), path, sizeof(path));
	pdf_text_into(path, text, sizeof(text));
	unlink(path);
	cr_assert_not_null(strstr(text, "FR12345678901"), "%s", text);
	/* Accept: application/pdf on the metadata route gives the file too */
	struct http_resp r;
	char p2[200];
	snprintf(p2, sizeof(p2), "/v1/documents/%s", tc_jstr(ia, "document_id"));
	cr_assert_eq(http_do(x.port, "GET", p2, "Accept: application/pdf\r\n", NULL, &r), 0);
	cr_assert_eq(r.status, 200);
	cr_assert(r.body_len > 5 && !memcmp(r.body, "%PDF-", 5));
	http_resp_free(&r);
	json_t *meta = tc_expect(x.port, "GET", p2, NULL, NULL, 200);
	cr_assert_str_eq(tc_jstr(meta, "sha256"), tc_jstr(ia, "sha256"));
	json_decref(meta);

	/* who sees what: the seller its invoice and the transport document; the
	 * estate (originator and fulfiller of the leg) the rest but the invoice;
	 * a partner of no leg nothing */
	json_t *ls = docs_when_ready(&x, x.ksel, a, 2);
	cr_assert_not_null(of_type(ls, "consumer_invoice"));
	cr_assert_not_null(of_type(ls, "transport_document"));
	json_decref(ls);
	json_t *le = docs_when_ready(&x, x.kest, a, 4);
	cr_assert_null(of_type(le, "consumer_invoice"), "%s", dump(le));
	json_decref(le);
	json_decref(tc_expect(x.port, "GET", p2, x.kest, NULL, 404));
	snprintf(p2, sizeof(p2), "/v1/documents/%s/content", tc_jstr(ia, "document_id"));
	json_decref(tc_expect(x.port, "GET", p2, x.kest, NULL, 404));
	snprintf(p2, sizeof(p2), "/v1/orders/%s/documents", a);
	json_decref(tc_expect(x.port, "GET", p2, x.kstk, NULL, 404));
	/* the order itself lists the seller's documents */
	snprintf(p2, sizeof(p2), "/v1/orders/%s", a);
	json_t *o = tc_expect(x.port, "GET", p2, x.ksel, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(o, "documents")), 2, "%s", dump(json_object_get(o, "documents")));
	json_decref(o);
	cr_assert_geq(tc_count_events(x.port, "document.generated", NULL), 2);

	/* the estate's leg delivered: its final invoice, issued by the estate, numbered in its own series */
	ow_deliver(&x, a, 1, 60);
	json_t *la2 = docs_when_ready(&x, NULL, a, 6);
	json_t *fi = of_type(la2, "originator_invoice");
	cr_assert_not_null(fi, "%s", dump(la2));
	cr_assert_str_eq(tc_jstr(json_object_get(fi, "issuer"), "partner_id"), x.est);
	snprintf(series, sizeof(series), "OI-DE-%s", year);
	cr_assert_str_eq(tc_jstr(fi, "series"), series);
	cr_assert_eq(json_integer_value(json_object_get(fi, "number")), 1);
	json_decref(la2);
	json_decref(la);
	json_decref(lb);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

/* kill -9 at `point` (WM_ERRINJ) with an order's documents numbered: the
 * restart renders them with the same numbers; a later restart renders
 * nothing again (generated_at and files unchanged). */
static void crash_then_finish(const char *point)
{
	struct oworld x;
	ow_start(&x, point, 24, 0);
	char a[64];
	placed(&x, 6, a, NULL);
	cr_assert_eq(wm_wait(&x.p, 20000), 137, "the shard did not stop at %s", point);
	ow_restart(&x, NULL);
	json_t *l = docs_when_ready(&x, NULL, a, 5);
	json_t *ci = of_type(l, "consumer_invoice");
	cr_assert_eq(json_integer_value(json_object_get(ci, "number")), 1, "the number taken before the crash: %s",
		     dump(ci));
	char sha[80], at[40];
	snprintf(sha, sizeof(sha), "%s", tc_jstr(ci, "sha256"));
	snprintf(at, sizeof(at), "%s", tc_jstr(ci, "generated_at"));
	wm_kill9(&x.p);
	ow_restart(&x, NULL);
	usleep(600 * 1000); /* two ticks: time for a wrong re-render to show */
	json_t *l2 = docs_when_ready(&x, NULL, a, 5);
	json_t *ci2 = of_type(l2, "consumer_invoice");
	cr_assert_str_eq(tc_jstr(ci2, "sha256"), sha);
	cr_assert_str_eq(tc_jstr(ci2, "generated_at"), at, "rendered again after a restart");
	char path[256];
	fetch_pdf(&x, NULL, ci2, path, sizeof(path));
	unlink(path);
	/* a render in the restarted process made the very bytes of the one before
	 * the crash: one file per document in the store, no orphan */
	char cmd[512], out[64] = "";
	snprintf(cmd, sizeof(cmd), "find '%s/documents' -name '*.pdf' | wc -l", x.p.data_dir);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(out, sizeof(out), f));
	pclose(f);
	cr_assert_eq(atoi(out), 5, "files in the store: %s", out);
	/* a new order continues the series without a gap */
	char b[64];
	placed(&x, 2, b, NULL);
	json_t *lb = docs_when_ready(&x, NULL, b, 5);
	cr_assert_eq(json_integer_value(json_object_get(of_type(lb, "consumer_invoice"), "number")), 2);
	json_decref(lb);
	json_decref(l);
	json_decref(l2);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

WM_TEST(order_documents, kill9_before_the_render_is_finished_by_the_restart, .timeout = 120)
{
	crash_then_finish("documents_crash_before_render");
}

WM_TEST(order_documents, kill9_after_the_file_is_stored_is_finished_by_the_restart, .timeout = 120)
{
	crash_then_finish("documents_crash_after_store");
}

/* The consumer (its order's consumer token) lists and downloads its
 * invoice, and nothing else: not the transport document, not another
 * order's invoice. */
WM_TEST(order_documents, the_consumer_downloads_its_invoice_with_its_token, .timeout = 120)
{
	struct oworld x;
	ow_start(&x, NULL, 24, 0);
	char a[64], b[64], path[200];
	placed(&x, 6, a, NULL);
	placed(&x, 2, b, NULL);
	json_t *la = docs_when_ready(&x, NULL, a, 5), *lb = docs_when_ready(&x, NULL, b, 5);
	snprintf(path, sizeof(path), "/v1/orders/%s/consumer-token", a);
	json_t *t = tc_expect(x.port, "GET", path, x.ksel, NULL, 200);
	char tok[80];
	snprintf(tok, sizeof(tok), "%s", tc_jstr(t, "token"));
	json_decref(t);
	json_t *mine = docs_when_ready(&x, tok, a, 1);
	json_t *inv = of_type(mine, "consumer_invoice");
	cr_assert_not_null(inv, "%s", dump(mine));
	char file[256];
	fetch_pdf(&x, tok, inv, file, sizeof(file));
	unlink(file);
	/* its order's view lists the invoice only */
	snprintf(path, sizeof(path), "/v1/orders/%s", a);
	json_t *o = tc_expect(x.port, "GET", path, tok, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(o, "documents")), 1, "%s", dump(o));
	json_decref(o);
	/* the transport document of its own order: 404; another order's invoice: 401 */
	snprintf(path, sizeof(path), "/v1/documents/%s/content", tc_jstr(of_type(la, "transport_document"), "document_id"));
	json_decref(tc_expect(x.port, "GET", path, tok, NULL, 404));
	snprintf(path, sizeof(path), "/v1/documents/%s/content", tc_jstr(of_type(lb, "consumer_invoice"), "document_id"));
	json_t *e = tc_expect(x.port, "GET", path, tok, NULL, 401);
	cr_assert_str_eq(tc_jstr(e, "code"), "unknown_key");
	json_decref(e);
	json_decref(mine);
	json_decref(la);
	json_decref(lb);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}

/* A split order (estate 24 + stockist 6, two legs, two originators):
 * per-leg labels, instructions and proformas, each with its own leg and
 * numbers, and each originator sees only its own leg's. */
WM_TEST(order_documents, a_split_order_has_per_leg_documents, .timeout = 120)
{
	struct oworld x;
	ow_start(&x, NULL, 24, 24);
	char a[64];
	placed(&x, 30, a, NULL);
	json_t *l = docs_when_ready(&x, NULL, a, 8);
	static const char *const per_leg[] = {"carrier_label", "fulfiller_instruction", "originator_proforma"};
	for (int k = 0; k < 3; k++) {
		size_t i, n = 0;
		json_t *d;
		long long nums[2] = {0, 0};
		char legs[2][64] = {"", ""};
		json_array_foreach(json_object_get(l, "data"), i, d)
			if (!strcmp(tc_jstr(d, "type"), per_leg[k]) && n < 2) {
				nums[n] = json_integer_value(json_object_get(d, "number"));
				snprintf(legs[n++], 64, "%s", tc_jstr(d, "leg_id"));
			}
		cr_assert_eq(n, 2, "%s: one per leg: %s", per_leg[k], dump(l));
		cr_assert_str_neq(legs[0], legs[1]);
		cr_assert_eq(nums[1], nums[0] + 1, "%s: consecutive numbers", per_leg[k]);
	}
	/* each originator (shipping its own leg) sees the transport document and its leg's three */
	json_t *le = docs_when_ready(&x, x.kest, a, 4), *ls = docs_when_ready(&x, x.kstk, a, 4);
	json_t *pe = of_type(le, "originator_proforma"), *ps = of_type(ls, "originator_proforma");
	cr_assert_str_neq(tc_jstr(pe, "leg_id"), tc_jstr(ps, "leg_id"));
	cr_assert_str_eq(tc_jstr(json_object_get(pe, "recipient"), "partner_id"), x.est);
	cr_assert_str_eq(tc_jstr(json_object_get(ps, "recipient"), "partner_id"), x.stk);
	json_decref(le);
	json_decref(ls);
	json_decref(l);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}
