/*
 * render.h -- a document model (doc_model.h) to PDF bytes, with cairo's
 * PDF surface, pango for text and zint for barcodes (issue 17 item 4).
 *
 * The call is synchronous and takes milliseconds to tens of milliseconds:
 * never call it on an event loop thread; doc_worker.h runs it on its own
 * thread.  It is thread-safe: each call has its own cairo surface and
 * pango layout, pango's font map is per thread, zint keeps no state.
 */
#ifndef WM_DOC_RENDER_H
#define WM_DOC_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "engine/documents/doc_model.h"

#define DOC_PDF_MAX (8u << 20) /* bytes: a larger document is refused */
/* The font the documents use (Debian fonts-dejavu-core); the renderer
 * refuses to run without it rather than let fontconfig substitute. */
#define DOC_FONT_FAMILY "DejaVu Sans"
#define DOC_FONT_FILE "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"

/* A rendered document.  data is malloc'd and owned by the holder. */
struct doc_pdf {
	uint8_t *data;
	size_t len;
	int pages;
};

/* Render m.  0 and *out filled (free with doc_pdf_free), or -1 with the
 * reason in err: the model's validation error, a missing font, a barcode
 * zint refused, or output over DOC_PDF_MAX.  The same model always gives
 * the same bytes: the PDF creation and modification dates are the model's
 * issue date, and nothing else in the file depends on time or randomness. */
int doc_render_pdf(const struct doc_model *m, struct doc_pdf *out, char *err, size_t errlen);

void doc_pdf_free(struct doc_pdf *p);

/* The printed document number: "<series>-<number, at least 6 digits>"
 * ("INV-DE-2026-000042"), also the content of the document's barcode.
 * out must hold DOC_CODE_MAX + 24 bytes. */
void doc_number_text(const struct doc_model *m, char *out, size_t cap);

#endif
