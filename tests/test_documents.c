/*
 * test_documents.c -- the document renderer of issue 17 and its store
 * (engine/documents/): model validation and its bounds, the locale
 * formats, the six kinds rendered for a single-source and a split order
 * in English, German and Greek and read back with poppler's pdftotext,
 * pdfinfo and pdftoppm, the label barcodes decoded with zbarimg, byte
 * identical output, pagination, the docstore's crash and corruption
 * behaviour, and the worker's queue bound.
 *
 * Every expected string is written here by hand from the fixture's
 * numbers (tests/doc_fixtures.c shows the arithmetic), never taken from
 * the code under test.  Text is compared after `pdftotext -raw` (content
 * stream order, so a table row reads left to right) with every run of
 * white space collapsed to one space.
 *
 * LeakSanitizer: fontconfig stores pointers inside its patterns as
 * offsets, so LSan cannot see that its caches are reachable and reports
 * them as leaks (a known false positive; they do not grow per document
 * once pango's font map exists).  The suppression below names only
 * libfontconfig.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/documents/doc_model.h"
#include "engine/documents/doc_worker.h"
#include "engine/documents/docstore.h"
#include "engine/documents/i18n.h"
#include "engine/documents/render.h"
#include "tests/doc_fixtures.h"
#include "tests/wm_test.h"

const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libfontconfig.so\n";
}

/* ---- helpers ----------------------------------------------------------- */

static char *make_tmpdir(void)
{
	char *d = strdup("/tmp/wm-docs-XXXXXX");
	cr_assert(d && mkdtemp(d), "mkdtemp: %s", strerror(errno));
	return d;
}

static void rm_rf(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

static void write_file(const char *path, const uint8_t *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	cr_assert(f, "open %s", path);
	cr_assert_eq(fwrite(data, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
}

/* Render m to DIR/NAME.pdf; returns the page count. */
static int render_to(const struct doc_model *m, const char *dir, const char *name, char *path,
		     size_t cap)
{
	struct doc_pdf pdf;
	char err[200];
	cr_assert_eq(doc_render_pdf(m, &pdf, err, sizeof err), 0, "%s: %s", name, err);
	snprintf(path, cap, "%s/%s.pdf", dir, name);
	write_file(path, pdf.data, pdf.len);
	int pages = pdf.pages;
	doc_pdf_free(&pdf);
	return pages;
}

/* The page count pdfinfo reports (poppler's own parse of the file). */
static int pdfinfo_pages(const char *path)
{
	char cmd[700], *out;
	snprintf(cmd, sizeof cmd, "pdfinfo '%s' 2>/dev/null", path);
	cr_assert_eq(docfix_run(cmd, &out), 0, "pdfinfo %s", path);
	const char *p = strstr(out, "Pages:");
	cr_assert(p, "pdfinfo: no Pages line");
	int n = atoi(p + 6);
	free(out);
	return n;
}

/* pdftoppm renders every page without error: one PNG per page. */
static void assert_rasterises(const char *path, const char *dir, int pages)
{
	char cmd[800], prefix[600];
	snprintf(prefix, sizeof prefix, "%s/ppm", dir);
	rm_rf(prefix);
	cr_assert_eq(mkdir(prefix, 0755), 0);
	snprintf(cmd, sizeof cmd, "pdftoppm -r 30 -png '%s' '%s/p' 2>&1", path, prefix);
	char *out;
	cr_assert_eq(docfix_run(cmd, &out), 0, "pdftoppm failed on %s: %s", path, out);
	cr_assert_eq(out[0], '\0', "pdftoppm complained about %s: %s", path, out);
	free(out);
	DIR *d = opendir(prefix);
	cr_assert(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += strstr(e->d_name, ".png") != NULL;
	closedir(d);
	cr_assert_eq(n, pages, "%s: %d page images for %d pages", path, n, pages);
}

#define HAS(text, s) cr_expect(strstr((text), (s)) != NULL, "%s: missing \"%s\"", what, (s))
#define HASNT(text, s) cr_expect(strstr((text), (s)) == NULL, "%s: unexpected \"%s\"", what, (s))

/* ---- what each language must print, written by hand ------------------- */

struct expect {
	const char *lang;
	const char *title[DOC_KIND_COUNT];
	const char *page1;          /* "Page 1/1" */
	const char *issue, *supply; /* dates */
	const char *pickup0, *pickup1;
	/* line rows: qty unit rate net */
	const char *row0, *row1;
	/* VAT rows: rate base vat */
	const char *vat0, *vat1;
	/* totals (all lines, leg 0 only, leg 1 only): net, vat, gross */
	const char *tot_all[3], *tot_0[3], *tot_1[3];
	/* transport rows: excise CN qty litres abv packages */
	const char *trow0, *trow1;
	const char *abv0, *abv1;  /* in the particulars: "13.0 % vol" */
	const char *packages;     /* the label's "Packages" */
};

static const struct expect EN = {
	"en",
	{"Invoice", "Accompanying document (excise goods)", "Carrier label", "Proforma invoice",
	 "Final invoice", "Fulfilment instruction"},
	"Page 1/1", "25/11/2026", "27/11/2026", "26/11/2026 09:00–12:00", "27/11/2026 14:00–17:30",
	"6 16.90 19 % 101.40", "60 23.50 7 % 1,410.00",
	"19 % 101.40 19.27", "7 % 1,410.00 98.70",
	{"1,511.40 EUR", "117.97 EUR", "1,629.37 EUR"},
	{"101.40 EUR", "19.27 EUR", "120.67 EUR"},
	{"1,410.00 EUR", "98.70 EUR", "1,508.70 EUR"},
	"W200 22042109 6 4.50 13.0 1", "W200 22042198 60 45.00 13.5 5",
	"13.0 % vol", "13.5 % vol", "Packages",
};

static const struct expect DE = {
	"de",
	{"Rechnung", "Begleitdokument", "Versandetikett", "Proformarechnung", "Schlussrechnung",
	 "Versandauftrag"},
	"Seite 1/1", "25.11.2026", "27.11.2026", "26.11.2026 09:00–12:00", "27.11.2026 14:00–17:30",
	"6 16,90 19 % 101,40", "60 23,50 7 % 1.410,00",
	"19 % 101,40 19,27", "7 % 1.410,00 98,70",
	{"1.511,40 EUR", "117,97 EUR", "1.629,37 EUR"},
	{"101,40 EUR", "19,27 EUR", "120,67 EUR"},
	{"1.410,00 EUR", "98,70 EUR", "1.508,70 EUR"},
	"W200 22042109 6 4,50 13,0 1", "W200 22042198 60 45,00 13,5 5",
	"13,0 % vol", "13,5 % vol", "Packstücke",
};

static const struct expect EL = {
	"el",
	{"Τιμολόγιο", "Συνοδευτικό έγγραφο", "Ετικέτα μεταφορέα", "Προτιμολόγιο", "Τελικό τιμολόγιο",
	 "Οδηγία εκτέλεσης"},
	"Σελίδα 1/1", "25/11/2026", "27/11/2026", "26/11/2026 09:00–12:00", "27/11/2026 14:00–17:30",
	"6 16,90 19 % 101,40", "60 23,50 7 % 1.410,00",
	"19 % 101,40 19,27", "7 % 1.410,00 98,70",
	{"1.511,40 EUR", "117,97 EUR", "1.629,37 EUR"},
	{"101,40 EUR", "19,27 EUR", "120,67 EUR"},
	{"1.410,00 EUR", "98,70 EUR", "1.508,70 EUR"},
	"W200 22042109 6 4,50 13,0 1", "W200 22042198 60 45,00 13,5 5",
	"13,0 % vol", "13,5 % vol", "Δέματα",
};

/* The particulars of fixture line i (spec 2.2 label particulars). */
static void expect_line(const char *t, const struct expect *e, int i, const char *what)
{
	if (i == 0) {
		HAS(t, "Domaine Exemple Bourgogne Rouge 2022");
		HAS(t, "Bourgogne Rouge · 2022 · ");
		HAS(t, e->abv0);
		HAS(t, "Domaine Exemple, 21200 Beaune");
		HAS(t, "AOP Bourgogne, France");
	} else {
		HAS(t, "Κτήμα Άλφα Ξινόμαυρο 2020");
		HAS(t, "Ξινόμαυρο · 2020 · ");
		HAS(t, e->abv1);
		HAS(t, "Κτήμα Άλφα, Νάουσα");
		HAS(t, "ΠΟΠ Νάουσα, Ελλάδα");
	}
	HAS(t, "750 ml");
	HAS(t, "contains sulphites");
}

/* Check one rendered document's text against the fixture. */
static void expect_kind(const char *t, const struct expect *e, enum doc_kind k, int split,
			int leg, const char *what)
{
	int per_leg = doc_kind_per_leg(k);
	int show0 = !split || !per_leg || leg == 0;
	int show1 = !split || !per_leg || leg == 1;
	HAS(t, e->title[k]);
	HAS(t, "INV-DE-2026-000042");
	if (k != DOC_CARRIER_LABEL)
		HAS(t, e->page1);
	switch (k) {
	case DOC_CONSUMER_INVOICE:
	case DOC_ORIGINATOR_PROFORMA:
	case DOC_ORIGINATOR_INVOICE: {
		/* EU VAT invoice particulars (2006/112/EC art. 226). */
		HAS(t, e->issue);
		HAS(t, e->supply);
		HAS(t, "Weinmarkt Plattform GmbH");
		HAS(t, "Beispielstraße 1");
		HAS(t, "DE123456789");
		HAS(t, "Jürgen Müller-Łukasiewicz");
		HAS(t, "DE987654321");
		const char *const *tot = !split || !per_leg ? e->tot_all : leg == 0 ? e->tot_0 : e->tot_1;
		for (int i = 0; i < 3; i++)
			HAS(t, tot[i]);
		if (show0) {
			HAS(t, e->row0);
			HAS(t, e->vat0);
			expect_line(t, e, 0, what);
		} else {
			HASNT(t, "Bourgogne Rouge");
		}
		if (show1) {
			HAS(t, e->row1);
			HAS(t, e->vat1);
			expect_line(t, e, 1, what);
		} else {
			HASNT(t, "Ξινόμαυρο");
		}
		if (k == DOC_CONSUMER_INVOICE)
			HAS(t, "Weinladen Beispiel GmbH");
		if (per_leg)
			HAS(t, leg == 0 ? "LEG-A1" : "LEG-B2");
		break;
	}
	case DOC_TRANSPORT_DOCUMENT:
		HAS(t, "Weinmarkt Plattform GmbH");          /* consignor */
		HAS(t, "Jürgen Müller-Łukasiewicz");          /* consignee */
		HAS(t, "DE00000111222");                      /* consignee excise */
		HAS(t, "Дмитрий Иванов");                     /* delivery place */
		HAS(t, "Lindenallee 9");
		HAS(t, e->trow0);
		HAS(t, e->trow1);
		expect_line(t, e, 0, what);
		expect_line(t, e, 1, what);
		HAS(t, "Domaine Exemple SARL");               /* originator of leg A */
		HAS(t, "FR0123456789E");
		HAS(t, "Cave de Beaune Logistique");         /* place of dispatch */
		HAS(t, "FR0987654321E");
		if (split) {
			HAS(t, "Κτήμα Άλφα Α.Ε.");
			HAS(t, "GR00001234567");
			HAS(t, "LEG-B2");
		}
		HAS(t, ": 4");                                /* destination type */
		break;
	case DOC_CARRIER_LABEL: {
		char pk[64];
		/* packages: leg A has 1 box, leg B 5; one source ships all 6 */
		snprintf(pk, sizeof pk, "%s: %d", e->packages, leg == 1 ? 5 : split ? 1 : 6);
		HAS(t, pk);
		HAS(t, "Дмитрий Иванов");
		HAS(t, "Lindenallee 9");
		HAS(t, "80331 München");
		if (leg == 0) {
			HAS(t, "Cave de Beaune Logistique");
			HAS(t, "(00) 376123450000000016");
			HAS(t, "LEG-A1");
		} else {
			HAS(t, "Οδός Αμπελώνων 3");
			HAS(t, "(00) 376123450000000023");
			HAS(t, "LEG-B2");
		}
		break;
	}
	case DOC_FULFILLER_INSTRUCTION:
		HAS(t, "Дмитрий Иванов");
		if (leg == 0) {
			HAS(t, "Cave de Beaune Logistique");
			HAS(t, "LEG-A1");
			HAS(t, e->pickup0);
			HAS(t, "A-03-2 EX-BR-22 Bourgogne Rouge 2022 6");
			HAS(t, "6 1");                        /* 1 box of 6 */
		} else {
			HAS(t, "LEG-B2");
			HAS(t, e->pickup1);
			HAS(t, "12 5");                       /* 5 boxes of 12 */
		}
		if (show1)
			HAS(t, "Θ-4 Κελάρι KA-XI-20 Ξινόμαυρο 2020 60");
		else
			HASNT(t, "KA-XI-20");
		if (!show0)
			HASNT(t, "A-03-2");
		break;
	case DOC_KIND_COUNT:
		break;
	}
}

/* Render the six kinds, single-source and split (every leg of the per-leg
 * kinds), read each back, rasterise every page. */
static void render_language(const struct expect *e)
{
	char *dir = make_tmpdir();
	for (int k = 0; k < DOC_KIND_COUNT; k++)
		for (int split = 0; split < 2; split++)
			for (int leg = 0; leg < (split && doc_kind_per_leg(k) ? 2 : 1); leg++) {
				struct doc_model *m = docfix_order(k, e->lang, split, leg);
				char name[96], path[700], what[160];
				snprintf(name, sizeof name, "%s-%d-%d", doc_kind_names[k], split, leg);
				snprintf(what, sizeof what, "%s %s", e->lang, name);
				int pages = render_to(m, dir, name, path, sizeof path);
				cr_expect_eq(pages, 1, "%s: %d pages", what, pages);
				cr_expect_eq(pdfinfo_pages(path), pages, "%s: pdfinfo disagrees", what);
				char *t = docfix_pdf_text(path);
				expect_kind(t, e, k, split, leg, what);
				free(t);
				assert_rasterises(path, dir, pages);
				free(m);
			}
	rm_rf(dir);
	free(dir);
}

WM_TEST(documents, render_six_kinds_english)
{
	render_language(&EN);
}

WM_TEST(documents, render_six_kinds_german)
{
	render_language(&DE);
}

WM_TEST(documents, render_six_kinds_greek)
{
	render_language(&EL);
}

/* Every language renders an invoice with its own number and date format
 * (written here by hand from each country's convention). */
WM_TEST(documents, every_language_renders)
{
	static const struct {
		const char *lang, *total, *date;
	} cases[] = {
		{"en", "1,629.37 EUR", "25/11/2026"}, {"de", "1.629,37 EUR", "25.11.2026"},
		{"fr", "1 629,37 EUR", "25/11/2026"}, {"it", "1.629,37 EUR", "25/11/2026"},
		{"es", "1.629,37 EUR", "25/11/2026"}, {"pt", "1 629,37 EUR", "25/11/2026"},
		{"nl", "1.629,37 EUR", "25-11-2026"}, {"pl", "1 629,37 EUR", "25.11.2026"},
		{"sv", "1 629,37 EUR", "2026-11-25"}, {"da", "1.629,37 EUR", "25.11.2026"},
		{"fi", "1 629,37 EUR", "25.11.2026"}, {"cs", "1 629,37 EUR", "25.11.2026"},
		{"el", "1.629,37 EUR", "25/11/2026"}, {"no", "1 629,37 EUR", "25.11.2026"},
	};
	cr_assert_eq(sizeof cases / sizeof cases[0], I18N_LANG_COUNT);
	char *dir = make_tmpdir();
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct doc_model *m = docfix_order(DOC_CONSUMER_INVOICE, cases[i].lang, 1, 0);
		char path[700];
		const char *what = cases[i].lang;
		int pages = render_to(m, dir, cases[i].lang, path, sizeof path);
		char *t = docfix_pdf_text(path);
		HAS(t, cases[i].total);
		HAS(t, cases[i].date);
		HAS(t, "Jürgen Müller-Łukasiewicz");
		HAS(t, "Дмитрий Иванов");
		HAS(t, "Κτήμα Άλφα Α.Ε.");
		free(t);
		assert_rasterises(path, dir, pages);
		free(m);
	}
	rm_rf(dir);
	free(dir);
}

/* ---- barcodes ------------------------------------------------------------ */

/* zbarimg decodes the label's GS1-128 to "(00)" + SSCC (zbar prints the AI
 * digits without parentheses) and the leg id's Code 128. */
WM_TEST(documents, label_barcodes_decode)
{
	char *dir = make_tmpdir();
	static const struct {
		int split, leg;
		const char *sscc_line, *leg_line;
	} cases[] = {
		{0, 0, "CODE-128:00376123450000000016\n", "CODE-128:LEG-A1\n"},
		{1, 1, "CODE-128:00376123450000000023\n", "CODE-128:LEG-B2\n"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct doc_model *m = docfix_order(DOC_CARRIER_LABEL, "en", cases[i].split, cases[i].leg);
		char path[700], cmd[1600], *out;
		render_to(m, dir, "label", path, sizeof path);
		snprintf(cmd, sizeof cmd,
			 "pdftoppm -r 300 -png -singlefile '%s' '%s/label' && zbarimg -q '%s/label.png' 2>/dev/null",
			 path, dir, dir);
		cr_assert_eq(docfix_run(cmd, &out), 0, "zbarimg found no barcode");
		cr_expect(strstr(out, cases[i].sscc_line), "SSCC not decoded: %s", out);
		cr_expect(strstr(out, cases[i].leg_line), "leg id not decoded: %s", out);
		cr_expect(strstr(out, "INV-DE-2026") == NULL, "unexpected barcode on the label: %s", out);
		free(out);
		free(m);
	}
	/* The other kinds carry the document number as a QR code. */
	struct doc_model *m = docfix_order(DOC_CONSUMER_INVOICE, "de", 1, 0);
	char path[700], cmd[1600], *out;
	render_to(m, dir, "inv", path, sizeof path);
	snprintf(cmd, sizeof cmd,
		 "pdftoppm -r 200 -png -singlefile '%s' '%s/inv' && zbarimg -q '%s/inv.png' 2>/dev/null",
		 path, dir, dir);
	cr_assert_eq(docfix_run(cmd, &out), 0, "zbarimg found no barcode on the invoice");
	cr_expect(strstr(out, "QR-Code:INV-DE-2026-000042\n"), "number not decoded: %s", out);
	free(out);
	free(m);
	rm_rf(dir);
	free(dir);
}

/* ---- determinism, metadata, font ---------------------------------------- */

WM_TEST(documents, same_model_same_bytes)
{
	for (int k = 0; k < DOC_KIND_COUNT; k++) {
		struct doc_model *m = docfix_order(k, "el", 1, 1);
		struct doc_pdf a, b;
		char err[200];
		cr_assert_eq(doc_render_pdf(m, &a, err, sizeof err), 0, "%s", err);
		cr_assert_eq(doc_render_pdf(m, &b, err, sizeof err), 0, "%s", err);
		cr_expect_eq(a.len, b.len, "%s: lengths differ", doc_kind_names[k]);
		cr_expect(a.len == b.len && memcmp(a.data, b.data, a.len) == 0,
			  "%s: two renders of one model differ", doc_kind_names[k]);
		/* A different issue date changes the bytes (the date is printed
		 * and is the metadata date), so the comparison can fail. */
		m->issue_date.day = 24;
		struct doc_pdf c;
		cr_assert_eq(doc_render_pdf(m, &c, err, sizeof err), 0, "%s", err);
		cr_expect(c.len != a.len || memcmp(a.data, c.data, a.len) != 0);
		doc_pdf_free(&a);
		doc_pdf_free(&b);
		doc_pdf_free(&c);
		free(m);
	}
}

/* The metadata dates are the issue date (not the clock), and the only
 * font is DejaVu Sans, embedded. */
WM_TEST(documents, metadata_date_and_embedded_font)
{
	char *dir = make_tmpdir();
	struct doc_model *m = docfix_order(DOC_CONSUMER_INVOICE, "el", 0, 0);
	char path[700], cmd[800], *out;
	render_to(m, dir, "inv", path, sizeof path);
	snprintf(cmd, sizeof cmd, "pdfinfo -isodates '%s' 2>/dev/null", path);
	cr_assert_eq(docfix_run(cmd, &out), 0);
	cr_expect(strstr(out, "CreationDate:    2026-11-25T00:00:00Z"), "%s", out);
	cr_expect(strstr(out, "ModDate:         2026-11-25T00:00:00Z"), "%s", out);
	cr_expect(strstr(out, "Page size:       595.276 x 841.89 pts (A4)"), "%s", out);
	free(out);
	snprintf(cmd, sizeof cmd, "pdffonts '%s' 2>/dev/null | tail -n +3", path);
	cr_assert_eq(docfix_run(cmd, &out), 0);
	int fonts = 0;
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		fonts++;
		cr_expect(strstr(line, "+DejaVuSans") != NULL, "font other than DejaVu: %s", line);
		cr_expect(strstr(line, " yes yes ") != NULL, "font not embedded: %s", line);
	}
	cr_expect_gt(fonts, 0);
	free(out);
	free(m);
	m = docfix_order(DOC_CARRIER_LABEL, "en", 0, 0);
	render_to(m, dir, "label", path, sizeof path);
	snprintf(cmd, sizeof cmd, "pdfinfo '%s' 2>/dev/null", path);
	cr_assert_eq(docfix_run(cmd, &out), 0);
	cr_expect(strstr(out, "Page size:       297.638 x 419.528 pts\n" /* A6: 105 x 148 mm */), "%s", out);
	free(out);
	free(m);
	rm_rf(dir);
	free(dir);
}

/* ---- pagination ----------------------------------------------------------- */

/* Count occurrences of needle in hay. */
static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static void expect_paginated(int lines, int min_pages)
{
	char *dir = make_tmpdir();
	struct doc_model *m = docfix_many_lines(lines, "en");
	char path[700], what[64];
	snprintf(what, sizeof what, "%d lines", lines);
	int pages = render_to(m, dir, "many", path, sizeof path);
	cr_expect_geq(pages, min_pages, "%s: %d pages", what, pages);
	cr_expect_eq(pdfinfo_pages(path), pages);
	char *t = docfix_pdf_text(path);
	for (int p = 1; p <= pages; p++) {
		char s[32];
		snprintf(s, sizeof s, "Page %d/%d", p, pages);
		HAS(t, s);
	}
	/* The table header repeats on every page, and every line is there once. */
	cr_expect_eq(count(t, "Description Qty Unit price VAT rate Net amount"), pages, "%s", what);
	for (int i = 1; i <= lines; i++) {
		char s[48];
		snprintf(s, sizeof s, "Wine number %03d ", i);
		cr_expect_eq(count(t, s), 1, "%s: %s", what, s);
	}
	/* lines x 10.00 at 19 %, by hand: 30 lines -> 300.00 + 57.00 = 357.00 */
	if (lines == 30) {
		HAS(t, "19 % 300.00 57.00");
		HAS(t, "357.00 EUR");
	}
	free(t);
	assert_rasterises(path, dir, pages);
	free(m);
	rm_rf(dir);
	free(dir);
}

WM_TEST(documents, thirty_lines_paginate)
{
	expect_paginated(30, 2);
}

/* The largest order a model holds renders too (DOC_LINES_MAX lines). */
WM_TEST(documents, max_lines_paginate)
{
	expect_paginated(DOC_LINES_MAX, 4);
}

/* ---- model validation ------------------------------------------------------ */

static void expect_refused(const struct doc_model *m, const char *field)
{
	char err[200];
	cr_expect_eq(doc_model_validate(m, err, sizeof err), -1, "accepted; expected %s", field);
	cr_expect(strstr(err, field) != NULL, "error \"%s\" does not name %s", err, field);
	struct doc_pdf pdf;
	cr_expect_eq(doc_render_pdf(m, &pdf, err, sizeof err), -1, "rendered; expected %s", field);
}

static void expect_valid(const struct doc_model *m)
{
	char err[200];
	cr_expect_eq(doc_model_validate(m, err, sizeof err), 0, "%s", err);
}

WM_TEST(documents, vat_is_rate_times_base)
{
	/* Half-up once, by hand. */
	cr_expect_eq(doc_vat_of(10140, 1900), 1927);  /* 1926.6 */
	cr_expect_eq(doc_vat_of(141000, 700), 9870);
	cr_expect_eq(doc_vat_of(5, 1000), 1);         /* 0.5 -> 1 */
	cr_expect_eq(doc_vat_of(4, 1000), 0);         /* 0.4 -> 0 */
	cr_expect_eq(doc_vat_of(-5, 1000), -1);
	cr_expect_eq(doc_vat_of(DOC_AMOUNT_MAX, DOC_VAT_RATE_MAX), DOC_AMOUNT_MAX);

	struct doc_model *m = docfix_order(DOC_CONSUMER_INVOICE, "en", 1, 0);
	expect_valid(m);
	m->vat[0].vat = 1926; /* truncated instead of rounded */
	expect_refused(m, "vat[0].vat");
	m->vat[0].vat = 1927;
	m->vat[1].base = 140999;
	expect_refused(m, "vat[1].base");
	m->vat[1].base = 141000;
	m->total_gross += 1;
	expect_refused(m, "total_gross");
	m->total_gross -= 1;
	m->total_vat += 1;
	expect_refused(m, "total_vat");
	m->total_vat -= 1;
	m->n_vat = 1; /* the 7 % line has no rate entry */
	expect_refused(m, "vat[");
	m->n_vat = 2;
	m->lines[1].unit_price = 2352; /* 60 x 23.52 is not 1,410.00 */
	expect_refused(m, "lines[1].unit_price");
	m->lines[1].unit_price = 2350;
	expect_valid(m);

	/* doc_model_sum computes what the fixture wrote by hand. */
	struct doc_model *s = docfix_order(DOC_ORIGINATOR_INVOICE, "en", 1, 1);
	memset(s->vat, 0, sizeof s->vat);
	s->n_vat = 0;
	s->total_net = s->total_vat = s->total_gross = 0;
	char err[160];
	cr_assert_eq(doc_model_sum(s, err, sizeof err), 0);
	cr_expect_eq(s->n_vat, 1);
	cr_expect_eq(s->vat[0].rate_bp, 700);
	cr_expect_eq(s->vat[0].base, 141000);
	cr_expect_eq(s->vat[0].vat, 9870);
	cr_expect_eq(s->total_gross, 150870);
	free(s);
	free(m);
}

WM_TEST(documents, sscc_check_digit)
{
	/* GS1 General Specifications' SSCC example: (00) 1 0614141 123456789 7 */
	cr_expect_eq(doc_gs1_check_digit("10614141123456789"), 7);
	cr_expect_eq(doc_gs1_check_digit("37612345000000001"), 6);
	cr_expect_eq(doc_gs1_check_digit("00000000000000000"), 0);
	cr_expect_eq(doc_gs1_check_digit("1061414112345678x"), -1);
	struct doc_model *m = docfix_order(DOC_CARRIER_LABEL, "en", 0, 0);
	expect_valid(m);
	m->legs[0].sscc[17] = '7';
	expect_refused(m, "legs[0].sscc");
	m->legs[0].sscc[17] = '\0';
	expect_refused(m, "legs[0].sscc");
	free(m);
}

WM_TEST(documents, model_bounds)
{
	struct doc_model *m = docfix_many_lines(DOC_LINES_MAX, "de");
	expect_valid(m);
	m->n_lines = DOC_LINES_MAX + 1;
	expect_refused(m, "n_lines");
	m->n_lines = 0;
	expect_refused(m, "n_lines");
	free(m);

	m = docfix_order(DOC_CONSUMER_INVOICE, "en", 0, 0);
	/* quantity at and past its bound (unit price 0 keeps net consistent) */
	struct doc_line *l = &m->lines[0];
	l->quantity = DOC_QTY_MAX;
	l->unit_price = 0;
	l->net = 0;
	m->vat[0] = (struct doc_vat){1900, 0, 0};
	m->total_net = 141000;
	m->total_vat = 9870;
	m->total_gross = 150870;
	expect_valid(m);
	l->quantity = DOC_QTY_MAX + 1;
	expect_refused(m, "lines[0].quantity");
	l->quantity = 0;
	expect_refused(m, "lines[0].quantity");
	free(m);

	m = docfix_order(DOC_CONSUMER_INVOICE, "en", 0, 0);
	/* a string of DOC_STR_MAX - 1 bytes fits; DOC_STR_MAX without a NUL does not */
	memset(m->recipient.name, 'a', DOC_STR_MAX - 1);
	m->recipient.name[DOC_STR_MAX - 1] = '\0';
	expect_valid(m);
	memset(m->recipient.name, 'a', DOC_STR_MAX);
	expect_refused(m, "recipient.name");
	snprintf(m->recipient.name, sizeof m->recipient.name, "bad \xff utf-8");
	expect_refused(m, "recipient.name");
	snprintf(m->recipient.name, sizeof m->recipient.name, "tab\there");
	expect_refused(m, "recipient.name");
	snprintf(m->recipient.name, sizeof m->recipient.name, "%s", "");
	expect_refused(m, "recipient.name");
	snprintf(m->recipient.name, sizeof m->recipient.name, "%s", "Ok");
	expect_valid(m);
	snprintf(m->lang, sizeof m->lang, "%s", "xx");
	expect_refused(m, "lang");
	snprintf(m->lang, sizeof m->lang, "%s", "no");
	expect_valid(m);
	snprintf(m->currency, sizeof m->currency, "%s", "EUX");
	expect_refused(m, "currency");
	snprintf(m->currency, sizeof m->currency, "%s", "EUR");
	m->issue_date.day = 31; /* 31 November */
	expect_refused(m, "issue_date");
	m->issue_date.day = 25;
	m->leg = 1;
	expect_refused(m, "leg");
	m->leg = 0;
	m->n_legs = DOC_LEGS_MAX + 1;
	expect_refused(m, "n_legs");
	m->n_legs = 1;
	m->boxes[0].box_units = 8;
	expect_refused(m, "boxes[0]");
	m->boxes[0].box_units = 6;
	m->n_picks = DOC_PICKS_MAX + 1;
	expect_refused(m, "n_picks");
	m->n_picks = 2;
	m->lines[1].vat_rate_bp = DOC_VAT_RATE_MAX + 1;
	expect_refused(m, "lines[1].vat_rate_bp");
	m->lines[1].vat_rate_bp = 700;
	m->kind = DOC_KIND_COUNT;
	expect_refused(m, "kind");
	m->kind = DOC_CONSUMER_INVOICE;
	expect_valid(m);
	free(m);
}

/* ---- i18n ------------------------------------------------------------------- */

WM_TEST(documents, every_label_in_every_language)
{
	static const char *const codes[] = {"en", "de", "fr", "it", "es", "pt", "nl",
					    "pl", "sv", "da", "fi", "cs", "el", "no"};
	cr_assert_eq(sizeof codes / sizeof codes[0], I18N_LANG_COUNT);
	for (int i = 0; i < I18N_LANG_COUNT; i++) {
		int lang = i18n_lang_find(codes[i]);
		cr_assert_geq(lang, 0, "%s missing", codes[i]);
		cr_expect_str_eq(i18n_lang_code(lang), codes[i]);
		for (int k = 0; k < I18N_KEY_COUNT; k++) {
			const char *s = i18n_label(lang, (enum i18n_key)k);
			cr_expect(s && s[0], "%s: label %d missing", codes[i], k);
		}
		/* Each language's titles are its own (no untranslated column). */
		if (strcmp(codes[i], "en") != 0)
			cr_expect_str_neq(i18n_label(lang, I18N_TITLE_TRANSPORT),
					  i18n_label(0, I18N_TITLE_TRANSPORT), "%s", codes[i]);
	}
	cr_expect_eq(i18n_lang_find("xx"), -1);
	cr_expect_eq(i18n_lang_find("EN"), -1);
	cr_expect_eq(i18n_lang_find(""), -1);
}

WM_TEST(documents, locale_formats)
{
	char b[40];
	int en = i18n_lang_find("en"), de = i18n_lang_find("de"), fr = i18n_lang_find("fr");
	int sv = i18n_lang_find("sv"), nl = i18n_lang_find("nl");
	cr_expect_eq(i18n_decimal(en, 123456789, 2, b, sizeof b), 12);
	cr_expect_str_eq(b, "1,234,567.89");
	i18n_decimal(de, 123456789, 2, b, sizeof b);
	cr_expect_str_eq(b, "1.234.567,89");
	i18n_decimal(fr, 123456789, 2, b, sizeof b);
	cr_expect_str_eq(b, "1 234 567,89");
	i18n_decimal(de, -5, 2, b, sizeof b);
	cr_expect_str_eq(b, "-0,05");
	i18n_decimal(en, 100000, 0, b, sizeof b);
	cr_expect_str_eq(b, "100,000");
	i18n_decimal(en, 999, 0, b, sizeof b);
	cr_expect_str_eq(b, "999");
	i18n_decimal(en, INT64_MIN, 2, b, sizeof b);
	cr_expect_str_eq(b, "-92,233,720,368,547,758.08");
	/* bounds: digits 0..6; too small a buffer is refused, not truncated */
	cr_expect_eq(i18n_decimal(en, 1, 6, b, sizeof b), 8);
	cr_expect_str_eq(b, "0.000001");
	cr_expect_eq(i18n_decimal(en, 1, 7, b, sizeof b), -1);
	cr_expect_eq(i18n_decimal(en, 123456, 2, b, 9), 8); /* "1,234.56" + NUL */
	cr_expect_eq(i18n_decimal(en, 123456, 2, b, 8), -1);
	cr_expect_str_eq(b, "");
	i18n_percent_bp(de, 1900, b, sizeof b);
	cr_expect_str_eq(b, "19 %");
	i18n_percent_bp(de, 550, b, sizeof b);
	cr_expect_str_eq(b, "5,5 %");
	i18n_percent_bp(en, 2125, b, sizeof b);
	cr_expect_str_eq(b, "21.25 %");
	i18n_percent_bp(en, 0, b, sizeof b);
	cr_expect_str_eq(b, "0 %");
	i18n_date(en, 2026, 3, 7, b, sizeof b);
	cr_expect_str_eq(b, "07/03/2026");
	i18n_date(de, 2026, 3, 7, b, sizeof b);
	cr_expect_str_eq(b, "07.03.2026");
	i18n_date(sv, 2026, 3, 7, b, sizeof b);
	cr_expect_str_eq(b, "2026-03-07");
	i18n_date(nl, 2026, 3, 7, b, sizeof b);
	cr_expect_str_eq(b, "07-03-2026");
	cr_expect_eq(i18n_date(en, 2026, 3, 7, b, 10), -1);
}

/* ---- docstore ---------------------------------------------------------------- */

static void crash_now(void)
{
	_exit(7);
}

static int count_tmp(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += strncmp(e->d_name, ".tmp-", 5) == 0;
	closedir(d);
	return n;
}

/* SHA-256 of "hello\n" (sha256sum, by hand outside this code). */
#define HELLO_SHA "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"

WM_TEST(documents, docstore_crash_before_rename_leaves_no_file)
{
	char *dir = make_tmpdir();
	char root[600], final[700], sub[700];
	snprintf(root, sizeof root, "%s/docs", dir);
	struct docstore ds;
	cr_assert_eq(docstore_open(&ds, root), 0);
	cr_assert_eq(docstore_path(&ds, HELLO_SHA, final, sizeof final), 0);
	snprintf(sub, sizeof sub, "%s/58", root);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char hex[DOCSTORE_SHA_HEX + 1];
		docstore_test_before_rename = crash_now;
		docstore_put(&ds, (const uint8_t *)"hello\n", 6, hex);
		_exit(0); /* not reached: the hook exits first */
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 7, "the simulated crash did not happen");
	cr_expect_eq(access(final, F_OK), -1, "a file exists under the final name");
	cr_expect_eq(count_tmp(sub), 1, "the crash should have left one temporary file");
	/* Reopening sweeps the temporary file; a new put completes. */
	cr_assert_eq(docstore_open(&ds, root), 0);
	cr_expect_eq(count_tmp(sub), 0);
	char hex[DOCSTORE_SHA_HEX + 1];
	cr_assert_eq(docstore_put(&ds, (const uint8_t *)"hello\n", 6, hex), 0);
	cr_expect_str_eq(hex, HELLO_SHA);
	cr_expect_eq(access(final, F_OK), 0);
	uint8_t *data;
	size_t len;
	cr_assert_eq(docstore_get(&ds, HELLO_SHA, &data, &len), 0);
	cr_expect(len == 6 && memcmp(data, "hello\n", 6) == 0);
	free(data);
	/* The same bytes again: one file, same name. */
	cr_assert_eq(docstore_put(&ds, (const uint8_t *)"hello\n", 6, hex), 0);
	cr_expect_eq(count_tmp(sub), 0);
	rm_rf(dir);
	free(dir);
}

WM_TEST(documents, docstore_refuses_corrupt_files)
{
	char *dir = make_tmpdir();
	struct docstore ds;
	cr_assert_eq(docstore_open(&ds, dir), 0);
	struct doc_model *m = docfix_order(DOC_TRANSPORT_DOCUMENT, "de", 1, 0);
	struct doc_pdf pdf;
	char err[200], hex[DOCSTORE_SHA_HEX + 1], path[700];
	cr_assert_eq(doc_render_pdf(m, &pdf, err, sizeof err), 0, "%s", err);
	cr_assert_eq(docstore_put(&ds, pdf.data, pdf.len, hex), 0);
	uint8_t *data;
	size_t len;
	cr_assert_eq(docstore_get(&ds, hex, &data, &len), 0);
	cr_expect(len == pdf.len && memcmp(data, pdf.data, len) == 0);
	free(data);
	/* One flipped byte in the middle. */
	cr_assert_eq(docstore_path(&ds, hex, path, sizeof path), 0);
	int fd = open(path, O_RDWR);
	cr_assert_geq(fd, 0);
	uint8_t byte;
	off_t mid = (off_t)(pdf.len / 2);
	cr_assert_eq(pread(fd, &byte, 1, mid), 1);
	byte ^= 0x01;
	cr_assert_eq(pwrite(fd, &byte, 1, mid), 1);
	errno = 0;
	cr_expect_eq(docstore_get(&ds, hex, &data, &len), -1);
	cr_expect_eq(errno, EBADMSG);
	cr_expect_null(data);
	close(fd);
	/* Storing the same bytes again replaces the corrupt copy. */
	cr_assert_eq(docstore_put(&ds, pdf.data, pdf.len, hex), 0);
	cr_assert_eq(docstore_get(&ds, hex, &data, &len), 0, "corrupt copy not replaced");
	free(data);
	/* Truncated. */
	cr_assert_eq(truncate(path, (off_t)pdf.len - 1), 0);
	errno = 0;
	cr_expect_eq(docstore_get(&ds, hex, &data, &len), -1);
	cr_expect_eq(errno, EBADMSG);
	/* Names that are not a SHA-256, and an absent one. */
	errno = 0;
	cr_expect_eq(docstore_get(&ds, "../../etc/passwd", &data, &len), -1);
	cr_expect_eq(errno, EINVAL);
	char upper[DOCSTORE_SHA_HEX + 1];
	snprintf(upper, sizeof upper, "%s", HELLO_SHA);
	upper[0] = 'A';
	cr_expect_eq(docstore_get(&ds, upper, &data, &len), -1);
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_eq(docstore_get(&ds, HELLO_SHA, &data, &len), -1);
	cr_expect_eq(errno, ENOENT);
	doc_pdf_free(&pdf);
	free(m);
	rm_rf(dir);
	free(dir);
}

WM_TEST(documents, docstore_bounds)
{
	char *dir = make_tmpdir();
	struct docstore ds;
	/* root: DOCSTORE_ROOT_MAX - 1 bytes works, DOCSTORE_ROOT_MAX does not */
	char root[DOCSTORE_ROOT_MAX + 1];
	size_t n = (size_t)snprintf(root, sizeof root, "%s", dir);
	/* directories of 200 bytes (a name is at most 255) until the last fits */
	while (DOCSTORE_ROOT_MAX - 1 - n > 201) {
		root[n++] = '/';
		memset(root + n, 'a', 200);
		n += 200;
		root[n] = '\0';
		cr_assert_eq(mkdir(root, 0755), 0, "%s", strerror(errno));
	}
	root[n++] = '/';
	memset(root + n, 'b', DOCSTORE_ROOT_MAX - 1 - n);
	root[DOCSTORE_ROOT_MAX - 1] = '\0';
	cr_assert_eq(strlen(root), DOCSTORE_ROOT_MAX - 1);
	cr_expect_eq(docstore_open(&ds, root), 0, "%s", strerror(errno));
	root[DOCSTORE_ROOT_MAX - 1] = 'b';
	root[DOCSTORE_ROOT_MAX] = '\0';
	errno = 0;
	cr_expect_eq(docstore_open(&ds, root), -1);
	cr_expect_eq(errno, ENAMETOOLONG);
	/* file size: DOCSTORE_FILE_MAX is stored, one byte more is refused */
	cr_assert_eq(docstore_open(&ds, dir), 0);
	uint8_t *big = calloc(1, DOCSTORE_FILE_MAX + 1);
	cr_assert(big);
	char hex[DOCSTORE_SHA_HEX + 1];
	cr_expect_eq(docstore_put(&ds, big, DOCSTORE_FILE_MAX, hex), 0);
	errno = 0;
	cr_expect_eq(docstore_put(&ds, big, DOCSTORE_FILE_MAX + 1, hex), -1);
	cr_expect_eq(errno, EFBIG);
	free(big);
	rm_rf(dir);
	free(dir);
}

/* ---- worker ---------------------------------------------------------------------- */

/* Wait (at most 20 s) until n completions are collected into out. */
static size_t collect(struct doc_worker *w, struct doc_result *out, size_t n)
{
	size_t got = 0;
	for (int i = 0; i < 200 && got < n; i++) {
		struct pollfd p = {.fd = doc_worker_fd(w), .events = POLLIN};
		if (poll(&p, 1, 100) > 0)
			got += doc_worker_poll(w, out + got, n - got);
	}
	return got;
}

WM_TEST(documents, worker_queue_bound)
{
	char *dir = make_tmpdir();
	struct docstore ds;
	cr_assert_eq(docstore_open(&ds, dir), 0);
	/* capacity bounds */
	errno = 0;
	cr_expect_null(doc_worker_start(&ds, 0));
	cr_expect_eq(errno, EINVAL);
	cr_expect_null(doc_worker_start(&ds, DOC_WORKER_CAPACITY_MAX + 1));
	struct doc_worker *big = doc_worker_start(&ds, DOC_WORKER_CAPACITY_MAX);
	cr_expect_not_null(big);
	doc_worker_stop(big);

	enum { CAP = 3 };
	struct doc_worker *w = doc_worker_start(&ds, CAP);
	cr_assert_not_null(w);
	struct doc_model *m = docfix_order(DOC_CARRIER_LABEL, "el", 1, 1);
	/* CAP jobs are accepted; the next is refused however fast the worker
	 * is, because uncollected completions count as in flight. */
	for (int i = 0; i < CAP; i++)
		cr_assert_eq(doc_worker_submit(w, m, (uint64_t)i + 100), 0, "job %d refused", i);
	errno = 0;
	cr_expect_eq(doc_worker_submit(w, m, 999), -1);
	cr_expect_eq(errno, EAGAIN);
	cr_expect_eq(doc_worker_in_flight(w), CAP);

	struct doc_result r[CAP + 1];
	cr_assert_eq(collect(w, r, 1), 1);
	cr_expect_eq(doc_worker_in_flight(w), CAP - 1);
	cr_expect_eq(doc_worker_submit(w, m, 103), 0, "a collected slot is free again");
	errno = 0;
	cr_expect_eq(doc_worker_submit(w, m, 999), -1);
	cr_expect_eq(errno, EAGAIN);
	cr_assert_eq(collect(w, r + 1, CAP), CAP);
	cr_expect_eq(doc_worker_in_flight(w), 0);

	/* Every job rendered and stored, in order, byte-identical to a
	 * render on this thread. */
	struct doc_pdf pdf;
	char err[200], hex[DOCSTORE_SHA_HEX + 1];
	cr_assert_eq(doc_render_pdf(m, &pdf, err, sizeof err), 0, "%s", err);
	cr_assert_eq(docstore_put(&ds, pdf.data, pdf.len, hex), 0);
	for (int i = 0; i <= CAP; i++) {
		cr_expect_eq(r[i].tag, (uint64_t)i + 100);
		cr_expect(r[i].ok, "job %d: %s", i, r[i].err);
		cr_expect_str_eq(r[i].sha256, hex);
		cr_expect_eq(r[i].pages, 1);
		cr_expect_eq(r[i].bytes, pdf.len);
	}
	doc_pdf_free(&pdf);

	/* A model that fails validation completes with the reason. */
	m->lines[0].quantity = 0;
	cr_assert_eq(doc_worker_submit(w, m, 7), 0);
	cr_assert_eq(collect(w, r, 1), 1);
	cr_expect_eq(r[0].ok, 0);
	cr_expect(strstr(r[0].err, "quantity") != NULL, "%s", r[0].err);

	/* Stopping with uncollected work frees it. */
	m->lines[0].quantity = 6;
	cr_assert_eq(doc_worker_submit(w, m, 8), 0);
	doc_worker_stop(w);
	free(m);
	rm_rf(dir);
	free(dir);
}
