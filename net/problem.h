/*
 * problem.h -- RFC 9457 problem+json bodies (DESIGN.md section 7).
 *
 * Every error the service returns has this shape:
 *   {"type": "https://wm.example/problems/<code>", "title": ..., "status": N,
 *    "detail": ..., "code": "<code>", "errors": [{"field", "rule", "message"}]}
 * `code` is the stable machine code clients switch on.
 */
#ifndef WM_PROBLEM_H
#define WM_PROBLEM_H

#include "net/buf.h"
#include "net/jsonw.h"

#define PROBLEM_CONTENT_TYPE "application/problem+json"
#define PROBLEM_TYPE_BASE "https://wine-market.dev/problems/"

/* Per-field validation error. */
struct problem_field {
	const char *field;   /* JSON pointer-ish path, e.g. "roles[1]" */
	const char *rule;    /* machine rule, e.g. "required", "enum" */
	const char *message; /* human text */
};

/* Begin a problem body in `w`: writes type, title, status, code, detail
 * and leaves the object open so the caller may add members (e.g. errors
 * via problem_fields) before problem_end. */
void problem_begin(struct jw *w, int status, const char *code, const char *title,
		   const char *detail);
void problem_fields(struct jw *w, const struct problem_field *f, unsigned n);
void problem_end(struct jw *w);
/* Whole body in one call. */
void problem_write(struct buf *body, int status, const char *code, const char *title,
		   const char *detail);

#endif
