/*
 * fields.h -- reading typed fields out of a JSON object with per-field
 * errors.  Resources use these to validate request bodies and to decode
 * their own stored documents (then `c` is NULL and errors are not recorded:
 * a stored document was validated when it was written).
 *
 * Each reader returns FLD_SET, FLD_ABSENT, FLD_NULL (explicit null: "remove"
 * in a merge patch) or FLD_BAD (an error was recorded against the field).
 */
#ifndef WM_FIELDS_H
#define WM_FIELDS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/edge/api.h"
#include "net/json.h"

enum { FLD_BAD = -1, FLD_ABSENT = 0, FLD_SET = 1, FLD_NULL = 2 };

/* Text of 1..max bytes (max excludes NUL), valid UTF-8 is guaranteed by
 * the parser; control characters are rejected. */
int fld_str(struct api_ctx *c, const struct json_value *obj, const char *name, const char *path,
	    char *out, size_t max);
int fld_bool(struct api_ctx *c, const struct json_value *obj, const char *name, const char *path,
	     int *out);
/* Integer within [min, max]. */
int fld_int(struct api_ctx *c, const struct json_value *obj, const char *name, const char *path,
	    int64_t min, int64_t max, int64_t *out);
/* One of a NULL-terminated list of strings; *out = index. */
int fld_enum(struct api_ctx *c, const struct json_value *obj, const char *name, const char *path,
	     const char *const *values, int *out);
/* ISO 3166-1 alpha-2 country (upper case). */
int fld_country(struct api_ctx *c, const struct json_value *obj, const char *name,
		const char *path, char out[3]);
/* ISO 4217 currency. */
int fld_currency(struct api_ctx *c, const struct json_value *obj, const char *name,
		 const char *path, char out[4]);
/* Text of 1..max bytes where line breaks and tabs are allowed (rich text:
 * descriptions, addresses); other control characters are rejected. */
int fld_text(struct api_ctx *c, const struct json_value *obj, const char *name, const char *path,
	     const char **out, size_t max);
/* An absolute http(s) URL of at most max bytes: scheme, a host, no blanks
 * or control characters; https_only refuses http. */
int fld_url(struct api_ctx *c, const struct json_value *obj, const char *name, const char *path,
	    size_t max, int https_only, const char **out);
/* A string member of a STORED document (the decode path: no error is
 * recorded): copied into out (< size bytes); "" when absent or null.
 * 0, or -1 (out "") when the member is not a string or does not fit.
 * Callers for which a bad member is harmless may ignore the result. */
int fld_doc_str(const struct json_value *doc, const char *name, char *out, size_t size);
/* Record an error for every member of obj not in the NULL-terminated list. */
void fld_reject_unknown(struct api_ctx *c, const struct json_value *obj, const char *const *known,
			const char *path_prefix);

#endif
