/*
 * problem.c -- RFC 9457 bodies.  Kept tiny on purpose: one function writes
 * the members every problem has, so no handler can forget `code`.
 */
#include "net/problem.h"

#include <string.h>

void problem_begin(struct jw *w, int status, const char *code, const char *title,
		   const char *detail)
{
	char type[128];
	size_t n = strlen(PROBLEM_TYPE_BASE);
	memcpy(type, PROBLEM_TYPE_BASE, n);
	size_t c = strlen(code);
	if (c > sizeof(type) - n - 1)
		c = sizeof(type) - n - 1;
	memcpy(type + n, code, c);
	type[n + c] = 0;
	jw_obj_begin(w);
	jw_kstr(w, "type", type);
	jw_kstr(w, "title", title);
	jw_kint(w, "status", status);
	jw_kstr(w, "code", code);
	if (detail)
		jw_kstr(w, "detail", detail);
}

void problem_fields(struct jw *w, const struct problem_field *f, unsigned n)
{
	jw_key(w, "errors");
	jw_arr_begin(w);
	for (unsigned i = 0; i < n; i++) {
		jw_obj_begin(w);
		jw_kstr(w, "field", f[i].field);
		jw_kstr(w, "rule", f[i].rule);
		jw_kstr(w, "message", f[i].message);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

void problem_end(struct jw *w) { jw_obj_end(w); }

void problem_write(struct buf *body, int status, const char *code, const char *title,
		   const char *detail)
{
	struct jw w;
	jw_init(&w, body);
	problem_begin(&w, status, code, title, detail);
	problem_end(&w);
}
