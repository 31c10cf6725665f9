/*
 * render.c -- the six document kinds of issue 17 as PDF: cairo's PDF
 * surface for the page, pango for every string (shaping, line breaking,
 * any script DejaVu Sans covers: Latin with diacritics, Greek, Cyrillic),
 * zint for the barcodes, drawn as vector rectangles so they stay sharp at
 * any print resolution.
 *
 * Why this shape:
 *  - Two passes over the same layout code.  The first ("dry") pass only
 *    measures: it finds where each page breaks and so how many pages there
 *    are; the second draws, and can print "Page 1/3" on the first page.
 *    The passes cannot disagree, because they are the same code with the
 *    same measurements (pango's layout of the same strings and widths).
 *  - Tables paginate: a row that does not fit below the current one starts
 *    a new page, whose first row is the table's header again, and blocks
 *    that must stay whole (VAT summary, totals) move to the next page as a
 *    unit.  Every page has the title, the number with its barcode, and a
 *    footer with "Page x/y".
 *  - Deterministic bytes: the PDF's creation and modification dates come
 *    from the model's issue date (cairo would otherwise write the clock),
 *    the font subset names cairo writes are derived from the glyphs used,
 *    and nothing else depends on time, addresses or randomness; tests
 *    render twice and compare the bytes.
 *  - Output goes to a growing heap buffer through cairo's stream surface,
 *    bounded by DOC_PDF_MAX: no temporary file, and the caller decides
 *    where the bytes go (docstore.c).
 *  - Barcodes: the label carries the SSCC as GS1-128 and the leg id as
 *    Code 128 (what carriers scan); every other kind carries its number
 *    as a QR code in the top right corner of every page.
 *  - The EMCS destination type is printed as its code (1..8), the form
 *    the e-AD itself uses in every language.
 *  - VAT per taxable line: an order line from one source printed as
 *    several rows (goods, service fee, freight, excise: one vat_group)
 *    gets a row after its last one with its taxable amount and its VAT, as
 *    the order rounded them; the VAT summary adds those up (doc_model.h).
 *    Rows without a group print as before.
 */
#include "engine/documents/render.h"

#include <cairo-pdf.h>
#include <cairo.h>
#include <pango/pangocairo.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zint.h>

#include "engine/base/iso.h"
#include "engine/documents/i18n.h"

#define CELL_MAX (DOC_STR_MAX * 4)  /* one table cell, after formatting */
#define SUB_MAX (DOC_STR_MAX * 8)   /* a line's label particulars */
#define COLS_MAX 8
#define MM (72.0 / 25.4)

enum align { LEFT, RIGHT };

struct col {
	enum i18n_key head;
	double w;
	enum align align;
};

/* Where the PDF bytes go: a heap buffer bounded by DOC_PDF_MAX. */
struct sink {
	uint8_t *p;
	size_t len, cap;
	int over;       /* a write would have passed DOC_PDF_MAX, or malloc failed */
};

/* One render: the model, the drawing state and the pass. */
struct rc {
	const struct doc_model *m;
	int lang;
	int digits;                  /* minor-unit digits of the currency */
	cairo_t *cr;
	PangoLayout *lay;
	PangoFontDescription *font;
	double pw, ph;               /* page size, points */
	double margin;
	double y;                    /* next free line on the page */
	double bottom;               /* lowest y a row may reach */
	int dry;                     /* measuring pass: draw nothing */
	int page;                    /* current page, 1-based */
	int pages;                   /* total, known in the drawing pass */
	const struct col *cols;      /* table whose header repeats, or NULL */
	int ncols;
	char docno[DOC_CODE_MAX + 24];
	int failed;                  /* a barcode could not be encoded */
	char err[128];
};

static cairo_status_t sink_write(void *closure, const unsigned char *data, unsigned int n)
{
	struct sink *s = closure;
	if (s->over || n > DOC_PDF_MAX - s->len) {
		s->over = 1;
		return CAIRO_STATUS_WRITE_ERROR;
	}
	if (s->len + n > s->cap) {
		size_t cap = s->cap ? s->cap : 64 * 1024;
		while (cap < s->len + n)
			cap *= 2;
		if (cap > DOC_PDF_MAX)
			cap = DOC_PDF_MAX;
		uint8_t *p = realloc(s->p, cap);
		if (!p) {
			s->over = 1;
			return CAIRO_STATUS_WRITE_ERROR;
		}
		s->p = p;
		s->cap = cap;
	}
	memcpy(s->p + s->len, data, n);
	s->len += n;
	return CAIRO_STATUS_SUCCESS;
}

/* snprintf that never fails the caller: the result is truncated to cap,
 * which the bounds of the model make impossible for the sizes used. */
__attribute__((format(printf, 3, 4))) static void fmt(char *out, size_t cap, const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	vsnprintf(out, cap, f, ap);
	va_end(ap);
}

static const char *L(const struct rc *c, enum i18n_key k)
{
	return i18n_label(c->lang, k);
}

static void money(const struct rc *c, int64_t v, char *out, size_t cap)
{
	if (i18n_decimal(c->lang, v, c->digits, out, cap) < 0 && cap)
		out[0] = '\0';
}

/* Lay s out at (x, y), wrapped to width w (w <= 0: one line), size pt,
 * bold or not, aligned in w; draw it unless dry.  Returns its height. */
static double text(struct rc *c, double x, double y, double w, double pt, int bold,
		   enum align a, const char *s)
{
	pango_font_description_set_absolute_size(c->font, pt * PANGO_SCALE);
	pango_font_description_set_weight(c->font, bold ? PANGO_WEIGHT_BOLD : PANGO_WEIGHT_NORMAL);
	pango_layout_set_font_description(c->lay, c->font);
	pango_layout_set_width(c->lay, w > 0 ? (int)(w * PANGO_SCALE) : -1);
	pango_layout_set_wrap(c->lay, PANGO_WRAP_WORD_CHAR);
	pango_layout_set_alignment(c->lay, a == RIGHT ? PANGO_ALIGN_RIGHT : PANGO_ALIGN_LEFT);
	pango_layout_set_text(c->lay, s, -1);
	int lw, lh;
	pango_layout_get_size(c->lay, &lw, &lh);
	if (!c->dry) {
		cairo_move_to(c->cr, x, y);
		pango_cairo_show_layout(c->cr, c->lay);
	}
	return (double)lh / PANGO_SCALE;
}

static void hline(struct rc *c, double x0, double x1, double y, double width)
{
	if (c->dry)
		return;
	cairo_set_line_width(c->cr, width);
	cairo_move_to(c->cr, x0, y);
	cairo_line_to(c->cr, x1, y);
	cairo_stroke(c->cr);
}

/* Draw data as a zint barcode into the box (x, y, w, h), unless dry.  A
 * symbology zint refuses marks the render failed (reported by the caller). */
static void barcode(struct rc *c, int symbology, const char *data, double x, double y, double w,
		    double h)
{
	if (c->dry)
		return;
	struct zint_symbol *s = ZBarcode_Create();
	if (!s) {
		c->failed = 1;
		fmt(c->err, sizeof c->err, "barcode: out of memory");
		return;
	}
	s->symbology = symbology;
	s->show_hrt = 0;
	s->height = 50.0f;
	int rc = ZBarcode_Encode_and_Buffer_Vector(s, (const unsigned char *)data, (int)strlen(data), 0);
	if (rc >= ZINT_ERROR || !s->vector || s->vector->width <= 0 || s->vector->height <= 0) {
		c->failed = 1;
		fmt(c->err, sizeof c->err, "barcode: zint refused \"%s\": %s", data, s->errtxt);
		ZBarcode_Delete(s);
		return;
	}
	double sx = w / s->vector->width, sy = h / s->vector->height;
	cairo_save(c->cr);
	cairo_set_source_rgb(c->cr, 0, 0, 0);
	for (const struct zint_vector_rect *r = s->vector->rectangles; r; r = r->next)
		if (r->colour == -1 || r->colour == 7)
			cairo_rectangle(c->cr, x + r->x * sx, y + r->y * sy, r->width * sx,
					r->height * sy);
	cairo_fill(c->cr);
	cairo_restore(c->cr);
	ZBarcode_Delete(s);
}

static enum i18n_key title_key(enum doc_kind k)
{
	switch (k) {
	case DOC_CONSUMER_INVOICE: return I18N_TITLE_CONSUMER_INVOICE;
	case DOC_TRANSPORT_DOCUMENT: return I18N_TITLE_TRANSPORT;
	case DOC_CARRIER_LABEL: return I18N_TITLE_LABEL;
	case DOC_ORIGINATOR_PROFORMA: return I18N_TITLE_PROFORMA;
	case DOC_ORIGINATOR_INVOICE: return I18N_TITLE_ORIGINATOR_INVOICE;
	case DOC_FULFILLER_INSTRUCTION: return I18N_TITLE_INSTRUCTION;
	case DOC_KIND_COUNT: break;
	}
	return I18N_TITLE_CONSUMER_INVOICE;
}

void doc_number_text(const struct doc_model *m, char *out, size_t cap)
{
	fmt(out, cap, "%s-%06llu", m->series, (unsigned long long)m->number);
}

/* ---- page frame ---------------------------------------------------- */

static void page_footer(struct rc *c)
{
	char s[96];
	fmt(s, sizeof s, "%s %d/%d", L(c, I18N_PAGE), c->page, c->pages);
	double y = c->ph - c->margin + 6;
	hline(c, c->margin, c->pw - c->margin, y - 3, 0.4);
	text(c, c->margin, y, c->pw - 2 * c->margin - 80, 6.5, 0, LEFT, c->m->issuer.name);
	text(c, c->pw - c->margin - 80, y, 80, 6.5, 0, RIGHT, s);
}

static void table_head(struct rc *c);

/* Start page c->page + 1: close the current one, draw the title, the
 * number and its barcode, and repeat the current table's header. */
static void new_page(struct rc *c)
{
	if (c->page > 0) {
		page_footer(c);
		if (!c->dry)
			cairo_show_page(c->cr);
	}
	c->page++;
	double x = c->margin, w = c->pw - 2 * c->margin;
	text(c, x, c->margin, w - 60, 14, 1, LEFT, L(c, title_key(c->m->kind)));
	char s[160];
	fmt(s, sizeof s, "%s: %s", L(c, I18N_NUMBER), c->docno);
	text(c, x, c->margin + 24, w - 60, 8, 1, LEFT, s);
	/* QR: stays at least 1.5 pt per module for the longest number, which a
	 * Code 128 of 31 characters in this corner would not. */
	barcode(c, BARCODE_QRCODE, c->docno, c->pw - c->margin - 40, c->margin - 6, 40, 40);
	c->y = c->margin + 46;
	hline(c, x, x + w, c->y - 4, 0.8);
	c->bottom = c->ph - c->margin - 8;
	if (c->cols)
		table_head(c);
}

/* Make room for h points, starting a new page when they do not fit. */
static void need(struct rc *c, double h)
{
	if (c->y + h > c->bottom)
		new_page(c);
}

/* ---- blocks ---------------------------------------------------------- */

/* A party: heading, name (bold), address lines, country, VAT id, excise
 * number.  Returns the height used. */
static double party_block(struct rc *c, double x, double y, double w, enum i18n_key head,
			  const struct doc_party *p)
{
	double y0 = y;
	char s[DOC_STR_MAX + 64];
	y += text(c, x, y, w, 7, 1, LEFT, L(c, head));
	y += text(c, x, y, w, 8.5, 1, LEFT, p->name);
	for (int i = 0; i < DOC_ADDR_LINES; i++)
		if (p->address[i][0])
			y += text(c, x, y, w, 8, 0, LEFT, p->address[i]);
	y += text(c, x, y, w, 8, 0, LEFT, p->country);
	if (p->vat_id[0]) {
		fmt(s, sizeof s, "%s: %s", L(c, I18N_VAT_ID), p->vat_id);
		y += text(c, x, y, w, 8, 0, LEFT, s);
	}
	if (p->excise_number[0]) {
		fmt(s, sizeof s, "%s: %s", L(c, I18N_EXCISE_NO), p->excise_number);
		y += text(c, x, y, w, 8, 0, LEFT, s);
	}
	return y - y0;
}

/* Two parties side by side; advances c->y past the taller. */
static void two_parties(struct rc *c, enum i18n_key lh, const struct doc_party *l,
			enum i18n_key rh, const struct doc_party *r)
{
	double w = (c->pw - 2 * c->margin - 20) / 2;
	double a = party_block(c, c->margin, c->y, w, lh, l);
	double b = r ? party_block(c, c->margin + w + 20, c->y, w, rh, r) : 0;
	c->y += (a > b ? a : b) + 10;
}

/* "Label: value" on one line. */
static void meta(struct rc *c, enum i18n_key k, const char *v)
{
	char s[DOC_STR_MAX * 2 + 64];
	fmt(s, sizeof s, "%s: %s", L(c, k), v);
	need(c, 12);
	c->y += text(c, c->margin, c->y, c->pw - 2 * c->margin, 8, 0, LEFT, s);
}

static void date_text(const struct rc *c, const struct doc_date *d, char *out, size_t cap)
{
	if (i18n_date(c->lang, d->year, d->month, d->day, out, cap) < 0 && cap)
		out[0] = '\0';
}

static void window_text(const struct rc *c, const struct doc_window *w, char *out, size_t cap)
{
	char d[32];
	date_text(c, &w->date, d, sizeof d);
	fmt(out, cap, "%s %02d:%02d\u2013%02d:%02d", d, w->from_min / 60, w->from_min % 60,
	    w->to_min / 60, w->to_min % 60);
}

static void dates_block(struct rc *c)
{
	char d[32];
	date_text(c, &c->m->issue_date, d, sizeof d);
	meta(c, I18N_ISSUE_DATE, d);
	date_text(c, &c->m->supply_date, d, sizeof d);
	meta(c, I18N_SUPPLY_DATE, d);
	if (c->m->order_id[0])
		meta(c, I18N_ORDER, c->m->order_id);
}

/* The recipient of the goods: ship_to when given, else the recipient. */
static const struct doc_party *ship_to(const struct doc_model *m)
{
	return m->ship_to.name[0] ? &m->ship_to : &m->recipient;
}

/* ---- tables ------------------------------------------------------------ */

static void table_head(struct rc *c)
{
	double x = c->margin, h = 0;
	for (int i = 0; i < c->ncols; i++) {
		double t = text(c, x + 2, c->y, c->cols[i].w - 4, 7, 1, c->cols[i].align,
				L(c, c->cols[i].head));
		h = t > h ? t : h;
		x += c->cols[i].w;
	}
	c->y += h + 2;
	hline(c, c->margin, x, c->y, 0.5);
	c->y += 3;
}

/* Begin a table: its header repeats on every page until table_end(). */
static void table_begin(struct rc *c, const struct col *cols, int n)
{
	c->cols = NULL;
	need(c, 40);
	c->cols = cols;
	c->ncols = n;
	table_head(c);
}

static void table_end(struct rc *c)
{
	c->cols = NULL;
	c->ncols = 0;
	c->y += 6;
}

/* One row: cells[i] in column i, and an optional smaller second line
 * spanning the first column (the label particulars).  Moves to a new page
 * when the row does not fit. */
static void table_row(struct rc *c, char cells[][CELL_MAX], const char *sub)
{
	for (int pass = 0; pass < 2; pass++) {
		/* Measure without drawing, then draw on the right page. */
		int dry = c->dry;
		c->dry = pass == 0 ? 1 : dry;
		double x = c->margin, h = 0;
		for (int i = 0; i < c->ncols; i++) {
			double t = text(c, x + 2, c->y, c->cols[i].w - 4, 7.5, 0, c->cols[i].align,
					cells[i]);
			if (i == 0 && sub && sub[0])
				t += text(c, x + 2, c->y + t, c->cols[i].w - 4, 6, 0, LEFT, sub);
			h = t > h ? t : h;
			x += c->cols[i].w;
		}
		c->dry = dry;
		if (pass == 0)
			need(c, h + 3);
		else
			c->y += h + 3;
	}
}

/* A full-width row in bold (the leg / source a group of lines belongs to). */
static void table_group(struct rc *c, const char *s)
{
	int dry = c->dry;
	c->dry = 1;
	double w = c->pw - 2 * c->margin;
	double h = text(c, c->margin + 2, c->y, w - 4, 7.5, 1, LEFT, s);
	c->dry = dry;
	need(c, h + 16); /* never leave a group heading alone at a page end */
	c->y += 2;
	c->y += text(c, c->margin + 2, c->y, w - 4, 7.5, 1, LEFT, s) + 2;
}

static void particulars(const struct rc *c, const struct doc_wine *w, char *out, size_t cap)
{
	char vintage[48], abv[32];
	if (w->vintage)
		fmt(vintage, sizeof vintage, "%d", w->vintage);
	else
		fmt(vintage, sizeof vintage, "%s", L(c, I18N_NON_VINTAGE));
	int digits = w->abv_centi % 10 ? 2 : 1;
	if (i18n_decimal(c->lang, digits == 2 ? w->abv_centi : w->abv_centi / 10, digits, abv,
			 sizeof abv) < 0)
		abv[0] = '\0';
	fmt(out, cap, "%s \u00b7 %s \u00b7 %s %% vol \u00b7 %d ml%s%s \u00b7 %s: %s \u00b7 %s: %s",
	    w->name, vintage, abv, w->volume_ml, w->allergens[0] ? " \u00b7 " : "", w->allergens,
	    L(c, I18N_PRODUCER), w->producer, L(c, I18N_ORIGIN), w->origin);
}

/* The heading of a leg's group of lines: leg id, originator with its VAT
 * and excise numbers, and (transport) the place of dispatch. */
static void leg_group(struct rc *c, int leg, int dispatch)
{
	const struct doc_leg *l = &c->m->legs[leg];
	const struct doc_party *o = &l->originator, *f = &l->fulfiller;
	char s[DOC_STR_MAX * 8];
	size_t n = 0;
	n += (size_t)snprintf(s + n, sizeof s - n, "%s %s \u2014 %s: %s, %s", L(c, I18N_LEG), l->id,
			      L(c, I18N_ORIGINATOR), o->name, o->country);
	if (o->vat_id[0] && n < sizeof s)
		n += (size_t)snprintf(s + n, sizeof s - n, ", %s %s", L(c, I18N_VAT_ID), o->vat_id);
	if (o->excise_number[0] && n < sizeof s)
		n += (size_t)snprintf(s + n, sizeof s - n, ", %s %s", L(c, I18N_EXCISE_NO),
				      o->excise_number);
	if (dispatch && n < sizeof s) {
		n += (size_t)snprintf(s + n, sizeof s - n, " \u2014 %s: %s", L(c, I18N_DISPATCH),
				      f->name);
		for (int i = 0; i < DOC_ADDR_LINES && n < sizeof s; i++)
			if (f->address[i][0])
				n += (size_t)snprintf(s + n, sizeof s - n, ", %s", f->address[i]);
		if (n < sizeof s)
			n += (size_t)snprintf(s + n, sizeof s - n, ", %s", f->country);
		if (f->excise_number[0] && n < sizeof s)
			snprintf(s + n, sizeof s - n, ", %s %s", L(c, I18N_EXCISE_NO),
				 f->excise_number);
	}
	table_group(c, s);
}

/* After the last row of a taxable line printed as several rows (vat_group
 * != 0): its taxable amount and its VAT, as the order rounded them (once
 * per taxable line; the VAT summary adds these up). */
static void taxable_row(struct rc *c, int i)
{
	int64_t base, vat;
	if (!doc_taxable_line(c->m, i, &base, &vat))
		return;
	char cells[COLS_MAX][CELL_MAX], b[32], v[32], rate[32];
	money(c, base, b, sizeof b);
	money(c, vat, v, sizeof v);
	if (i18n_percent_bp(c->lang, c->m->lines[i].vat_rate_bp, rate, sizeof rate) < 0)
		rate[0] = '\0';
	fmt(cells[0], CELL_MAX, "%s %s \u00b7 %s %s %s", L(c, I18N_TAX_BASE), b, L(c, I18N_VAT), rate, v);
	for (int k = 1; k < c->ncols; k++)
		cells[k][0] = '\0';
	table_row(c, cells, NULL);
}

/* Lines in leg order (a split order's lines grouped by source), with a
 * group heading per leg on the kinds that print every leg. */
static void lines_table(struct rc *c, const struct col *cols, int ncols, int transport)
{
	const struct doc_model *m = c->m;
	char cells[COLS_MAX][CELL_MAX];
	char sub[SUB_MAX];
	table_begin(c, cols, ncols);
	for (int leg = 0; leg < m->n_legs; leg++) {
		if (doc_kind_per_leg(m->kind) && leg != m->leg)
			continue;
		int any = 0;
		for (int i = 0; i < m->n_lines; i++) {
			const struct doc_line *l = &m->lines[i];
			if (l->leg != leg || !doc_line_printed(m, i))
				continue;
			if (!any && !doc_kind_per_leg(m->kind))
				leg_group(c, leg, transport);
			any = 1;
			fmt(cells[0], CELL_MAX, "%s", l->description);
			sub[0] = '\0';
			if (!l->charge)
				particulars(c, &l->wine, sub, sizeof sub);
			if (transport) {
				fmt(cells[1], CELL_MAX, "%s", l->excise_code);
				fmt(cells[2], CELL_MAX, "%s", l->cn_code);
				fmt(cells[3], CELL_MAX, "%lld", (long long)l->quantity);
				if (i18n_decimal(c->lang, l->litres_cl, 2, cells[4], CELL_MAX) < 0)
					cells[4][0] = '\0';
				int d = l->wine.abv_centi % 10 ? 2 : 1;
				if (i18n_decimal(c->lang, d == 2 ? l->wine.abv_centi : l->wine.abv_centi / 10,
						 d, cells[5], CELL_MAX) < 0)
					cells[5][0] = '\0';
				fmt(cells[6], CELL_MAX, "%d", l->packages);
			} else {
				fmt(cells[1], CELL_MAX, "%lld", (long long)l->quantity);
				money(c, l->unit_price, cells[2], CELL_MAX);
				if (i18n_percent_bp(c->lang, l->vat_rate_bp, cells[3], CELL_MAX) < 0)
					cells[3][0] = '\0';
				money(c, l->net, cells[4], CELL_MAX);
			}
			table_row(c, cells, sub);
			if (!transport && l->vat_group != 0)
				taxable_row(c, i);
		}
	}
	table_end(c);
}

/* VAT per rate and the totals, kept together on one page. */
static void vat_and_totals(struct rc *c)
{
	const struct doc_model *m = c->m;
	static const struct col vat_cols[] = {
		{I18N_VAT_RATE, 90, RIGHT}, {I18N_TAX_BASE, 110, RIGHT}, {I18N_VAT, 90, RIGHT}};
	double block = 16 + 14 * (m->n_vat + 1) + 3 * 14 + 20;
	need(c, block);
	c->y += text(c, c->margin, c->y, 300, 8, 1, LEFT, L(c, I18N_VAT_SUMMARY)) + 2;
	char cells[COLS_MAX][CELL_MAX];
	table_begin(c, vat_cols, 3);
	for (int k = 0; k < m->n_vat; k++) {
		if (i18n_percent_bp(c->lang, m->vat[k].rate_bp, cells[0], CELL_MAX) < 0)
			cells[0][0] = '\0';
		money(c, m->vat[k].base, cells[1], CELL_MAX);
		money(c, m->vat[k].vat, cells[2], CELL_MAX);
		table_row(c, cells, NULL);
	}
	table_end(c);
	static const enum i18n_key keys[3] = {I18N_TOTAL_NET, I18N_TOTAL_VAT, I18N_TOTAL};
	const int64_t vals[3] = {m->total_net, m->total_vat, m->total_gross};
	double x = c->pw - c->margin - 260;
	for (int i = 0; i < 3; i++) {
		char v[64], s[96];
		money(c, vals[i], v, sizeof v);
		fmt(s, sizeof s, "%s %s", v, m->currency);
		text(c, x, c->y, 150, 8.5, i == 2, LEFT, L(c, keys[i]));
		c->y += text(c, x + 150, c->y, 110, 8.5, i == 2, RIGHT, s) + 2;
	}
}

/* ---- the kinds ------------------------------------------------------- */

static void invoice_body(struct rc *c)
{
	const struct doc_model *m = c->m;
	static const struct col cols[] = {{I18N_DESCRIPTION, 245, LEFT}, {I18N_QTY, 40, RIGHT},
					  {I18N_UNIT_PRICE, 70, RIGHT}, {I18N_VAT_RATE, 55, RIGHT},
					  {I18N_NET, 85, RIGHT}};
	two_parties(c, I18N_SUPPLIER, &m->issuer, I18N_CUSTOMER, &m->recipient);
	dates_block(c);
	if (m->kind == DOC_CONSUMER_INVOICE && m->seller_name[0])
		meta(c, I18N_SOLD_BY, m->seller_name);
	if (doc_kind_per_leg(m->kind))
		meta(c, I18N_LEG, m->legs[m->leg].id);
	meta(c, I18N_CURRENCY, m->currency);
	if (m->ship_to.name[0]) {
		need(c, 70);
		c->y += 6;
		two_parties(c, I18N_SHIP_TO, &m->ship_to, I18N_SHIP_TO, NULL);
	}
	c->y += 8;
	lines_table(c, cols, 5, 0);
	vat_and_totals(c);
}

static void transport_body(struct rc *c)
{
	const struct doc_model *m = c->m;
	static const struct col cols[] = {
		{I18N_DESCRIPTION, 170, LEFT}, {I18N_EXCISE_CODE, 60, LEFT}, {I18N_CN_CODE, 60, LEFT},
		{I18N_QTY, 45, RIGHT},        {I18N_LITRES, 50, RIGHT},     {I18N_ALCOHOL, 50, RIGHT},
		{I18N_PACKAGES, 55, RIGHT}};
	char s[16];
	two_parties(c, I18N_CONSIGNOR, &m->issuer, I18N_CONSIGNEE, &m->recipient);
	need(c, 70);
	two_parties(c, I18N_DELIVERY, ship_to(m), I18N_DELIVERY, NULL);
	dates_block(c);
	fmt(s, sizeof s, "%d", (int)m->destination);
	meta(c, I18N_DEST_TYPE, s);
	c->y += 8;
	lines_table(c, cols, 7, 1);
}

static void instruction_body(struct rc *c)
{
	const struct doc_model *m = c->m;
	const struct doc_leg *l = &m->legs[m->leg];
	static const struct col pick_cols[] = {{I18N_LOCATION, 120, LEFT}, {I18N_SKU, 90, LEFT},
					       {I18N_DESCRIPTION, 225, LEFT}, {I18N_QTY, 55, RIGHT}};
	static const struct col box_cols[] = {{I18N_BOX_SIZE, 140, RIGHT}, {I18N_BOXES, 70, RIGHT}};
	char cells[COLS_MAX][CELL_MAX];
	char w[96];
	two_parties(c, I18N_FULFILLER, &l->fulfiller, I18N_SHIP_TO, ship_to(m));
	dates_block(c);
	meta(c, I18N_LEG, l->id);
	meta(c, I18N_ORIGINATOR, l->originator.name);
	window_text(c, &l->pickup, w, sizeof w);
	meta(c, I18N_PICKUP, w);
	c->y += 8;
	need(c, 40);
	c->y += text(c, c->margin, c->y, 300, 9, 1, LEFT, L(c, I18N_PICK_LIST)) + 2;
	table_begin(c, pick_cols, 4);
	for (int i = 0; i < m->n_picks; i++) {
		const struct doc_pick *p = &m->picks[i];
		if (p->leg != m->leg)
			continue;
		fmt(cells[0], CELL_MAX, "%s", p->location);
		fmt(cells[1], CELL_MAX, "%s", p->sku);
		fmt(cells[2], CELL_MAX, "%s", p->description);
		fmt(cells[3], CELL_MAX, "%lld", (long long)p->quantity);
		table_row(c, cells, NULL);
	}
	table_end(c);
	need(c, 40);
	c->y += text(c, c->margin, c->y, 300, 9, 1, LEFT, L(c, I18N_PACKING)) + 2;
	table_begin(c, box_cols, 2);
	for (int i = 0; i < m->n_boxes; i++) {
		const struct doc_box *b = &m->boxes[i];
		if (b->leg != m->leg)
			continue;
		fmt(cells[0], CELL_MAX, "%d", b->box_units);
		fmt(cells[1], CELL_MAX, "%d", b->count);
		table_row(c, cells, NULL);
	}
	table_end(c);
}

/* The A6 carrier label: one page, no tables. */
static void label_body(struct rc *c)
{
	const struct doc_model *m = c->m;
	const struct doc_leg *l = &m->legs[m->leg];
	double x = c->margin, w = c->pw - 2 * c->margin, y = c->margin;
	char s[DOC_STR_MAX + 64];
	c->page = 1;
	y += text(c, x, y, w, 9, 1, LEFT, L(c, I18N_TITLE_LABEL)) + 4;
	y += party_block(c, x, y, w, I18N_FROM, &l->fulfiller) + 6;
	hline(c, x, x + w, y - 3, 0.6);
	y += party_block(c, x, y, w, I18N_SHIP_TO, ship_to(m)) + 6;
	hline(c, x, x + w, y - 3, 0.6);
	int packages = 0;
	for (int i = 0; i < m->n_boxes; i++)
		if (m->boxes[i].leg == m->leg)
			packages += m->boxes[i].count;
	if (m->order_id[0]) {
		fmt(s, sizeof s, "%s: %s", L(c, I18N_ORDER), m->order_id);
		y += text(c, x, y, w, 8, 0, LEFT, s);
	}
	fmt(s, sizeof s, "%s: %d", L(c, I18N_PACKAGES), packages);
	y += text(c, x, y, w, 8, 0, LEFT, s);
	fmt(s, sizeof s, "%s: %s", L(c, I18N_NUMBER), c->docno);
	y += text(c, x, y, w, 7, 0, LEFT, s) + 8;
	/* GS1-128: (00) SSCC; zint computes nothing here, the check digit is
	 * the model's and validation has verified it. */
	char gs1[32];
	fmt(gs1, sizeof gs1, "[00]%s", l->sscc);
	barcode(c, BARCODE_GS1_128, gs1, x + w * 0.08, y, w * 0.84, 62); /* quiet zones: 10 modules */
	y += 64;
	fmt(s, sizeof s, "(00) %s", l->sscc);
	y += text(c, x, y, w, 9, 1, LEFT, s) + 10;
	barcode(c, BARCODE_CODE128, l->id, x + w * 0.15, y, w * 0.7, 34);
	y += 36;
	fmt(s, sizeof s, "%s: %s", L(c, I18N_LEG), l->id);
	text(c, x, y, w, 10, 1, LEFT, s);
	if (!c->dry)
		cairo_show_page(c->cr);
}

static void body(struct rc *c)
{
	c->page = 0;
	c->cols = NULL;
	if (c->m->kind == DOC_CARRIER_LABEL) {
		label_body(c);
		return;
	}
	new_page(c);
	switch (c->m->kind) {
	case DOC_CONSUMER_INVOICE:
	case DOC_ORIGINATOR_PROFORMA:
	case DOC_ORIGINATOR_INVOICE:
		invoice_body(c);
		break;
	case DOC_TRANSPORT_DOCUMENT:
		transport_body(c);
		break;
	case DOC_FULFILLER_INSTRUCTION:
		instruction_body(c);
		break;
	case DOC_CARRIER_LABEL:
	case DOC_KIND_COUNT:
		break;
	}
	page_footer(c);
	if (!c->dry)
		cairo_show_page(c->cr);
}

/* ---- entry point ----------------------------------------------------- */

static int render_fail(char *err, size_t errlen, const char *msg)
{
	if (errlen)
		snprintf(err, errlen, "%s", msg);
	return -1;
}

int doc_render_pdf(const struct doc_model *m, struct doc_pdf *out, char *err, size_t errlen)
{
	*out = (struct doc_pdf){0};
	if (doc_model_validate(m, err, errlen))
		return -1;
	if (access(DOC_FONT_FILE, R_OK) != 0)
		return render_fail(err, errlen, "font " DOC_FONT_FILE " missing (fonts-dejavu-core)");
	struct rc c = {.m = m, .lang = i18n_lang_find(m->lang),
		       .digits = iso_currency_minor(m->currency, 3)};
	if (m->kind == DOC_CARRIER_LABEL) {
		c.pw = 105 * MM;
		c.ph = 148 * MM;
		c.margin = 5 * MM;
	} else {
		c.pw = 210 * MM;
		c.ph = 297 * MM;
		c.margin = 15 * MM;
	}
	doc_number_text(m, c.docno, sizeof c.docno);
	struct sink sink = {0};
	cairo_surface_t *surf = cairo_pdf_surface_create_for_stream(sink_write, &sink, c.pw, c.ph);
	char title[DOC_STR_MAX * 2], date[40];
	fmt(title, sizeof title, "%s %s", L(&c, title_key(m->kind)), c.docno);
	fmt(date, sizeof date, "%04d-%02d-%02dT00:00:00Z", m->issue_date.year, m->issue_date.month,
	    m->issue_date.day);
	cairo_pdf_surface_set_metadata(surf, CAIRO_PDF_METADATA_TITLE, title);
	cairo_pdf_surface_set_metadata(surf, CAIRO_PDF_METADATA_AUTHOR, m->issuer.name);
	cairo_pdf_surface_set_metadata(surf, CAIRO_PDF_METADATA_CREATOR, "wine-marketplace documents");
	cairo_pdf_surface_set_metadata(surf, CAIRO_PDF_METADATA_CREATE_DATE, date);
	cairo_pdf_surface_set_metadata(surf, CAIRO_PDF_METADATA_MOD_DATE, date);
	c.cr = cairo_create(surf);
	c.lay = pango_cairo_create_layout(c.cr);
	c.font = pango_font_description_from_string(DOC_FONT_FAMILY " 8");
	cairo_set_source_rgb(c.cr, 0, 0, 0);

	c.dry = 1;
	body(&c);
	c.pages = c.page;
	c.dry = 0;
	c.failed = 0;
	body(&c);

	pango_font_description_free(c.font);
	g_object_unref(c.lay);
	cairo_status_t st = cairo_status(c.cr);
	cairo_destroy(c.cr);
	cairo_surface_finish(surf);
	if (st == CAIRO_STATUS_SUCCESS)
		st = cairo_surface_status(surf);
	cairo_surface_destroy(surf);
	if (c.failed || sink.over || st != CAIRO_STATUS_SUCCESS) {
		free(sink.p);
		if (c.failed)
			return render_fail(err, errlen, c.err);
		if (sink.over)
			return render_fail(err, errlen, "document larger than DOC_PDF_MAX");
		return render_fail(err, errlen, cairo_status_to_string(st));
	}
	out->data = sink.p;
	out->len = sink.len;
	out->pages = c.pages;
	return 0;
}

void doc_pdf_free(struct doc_pdf *p)
{
	free(p->data);
	*p = (struct doc_pdf){0};
}
