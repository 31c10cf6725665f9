/*
 * doc_fixtures.h -- document models for tests/test_documents.c: an order
 * from one source and a split order from two, with every amount chosen by
 * hand so the expected printed values (in the test) are computed on paper,
 * not by the code under test.
 */
#ifndef WM_DOC_FIXTURES_H
#define WM_DOC_FIXTURES_H

#include "engine/documents/doc_model.h"

/* A calloc'd model of kind k in language lang: split = 0 gives one leg
 * (both lines from Domaine Exemple), split = 1 two legs (line 0 from
 * Domaine Exemple, line 1 from a Greek estate).  For per-leg kinds the
 * model prints legs[leg].  VAT summary and totals are filled with the
 * hand-computed values (see the .c).  Free with free(). */
struct doc_model *docfix_order(enum doc_kind k, const char *lang, int split, int leg);

/* A calloc'd consumer invoice with n lines (1..DOC_LINES_MAX) of 1 unit
 * at 10.00 EUR each, 19 % VAT; sums filled by doc_model_sum. */
struct doc_model *docfix_many_lines(int n, const char *lang);

/* Run the shell command cmd: its exit status, its stdout (malloc'd) into
 * *out (out NULL: dropped).  Asserts that it could be started. */
int docfix_run(const char *cmd, char **out);
/* Collapse every run of white space in s into one space, in place. */
void docfix_squeeze(char *s);
/* The text `pdftotext -raw` reads from the PDF at path, white space
 * squeezed (malloc'd); asserts that pdftotext succeeded. */
char *docfix_pdf_text(const char *path);

#endif
