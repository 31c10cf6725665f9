/*
 * fields.c -- typed field readers with per-field errors (see fields.h).
 */
#include "engine/edge/fields.h"

#include <stdio.h>
#include <string.h>

#include "engine/base/iso.h"

static const char *fpath(const char *path, const char *name) { return path ? path : name; }

#define ERR(...)                                                                  \
	do {                                                                      \
		if (c)                                                            \
			api_field_error(c, fpath(path, name), __VA_ARGS__);       \
		return FLD_BAD;                                                   \
	} while (0)

int fld_str(struct api_ctx *c, const struct json_value *obj, const char *name, const char *path,
	    char *out, size_t max)
{
	const struct json_value *v = json_get(obj, name);
	if (!v)
		return FLD_ABSENT;
	if (v->type == JSON_NULL)
		return FLD_NULL;
	if (v->type != JSON_STRING)
		ERR("type", "must be a string");
	if (v->len == 0)
		ERR("min_length", "must not be empty");
	if (v->len > max)
		ERR("max_length", "must be at most %zu bytes", max);
	for (uint32_t i = 0; i < v->len; i++)
		if ((unsigned char)v->u.str[i] < 0x20 || v->u.str[i] == 0x7f)
			ERR("control_character", "must not contain control characters");
	memcpy(out, v->u.str, v->len);
	out[v->len] = 0;
	return FLD_SET;
}

int fld_bool(struct api_ctx *c, const struct json_value *obj, const char *name, const char *path,
	     int *out)
{
	const struct json_value *v = json_get(obj, name);
	if (!v)
		return FLD_ABSENT;
	if (v->type == JSON_NULL)
		return FLD_NULL;
	if (v->type != JSON_TRUE && v->type != JSON_FALSE)
		ERR("type", "must be true or false");
	*out = v->type == JSON_TRUE;
	return FLD_SET;
}

int fld_int(struct api_ctx *c, const struct json_value *obj, const char *name, const char *path,
	    int64_t min, int64_t max, int64_t *out)
{
	const struct json_value *v = json_get(obj, name);
	if (!v)
		return FLD_ABSENT;
	if (v->type == JSON_NULL)
		return FLD_NULL;
	int64_t x;
	if (v->type != JSON_NUMBER || json_to_int64(v, &x))
		ERR("type", "must be an integer");
	if (x < min || x > max)
		ERR("range", "must be between %lld and %lld", (long long)min, (long long)max);
	*out = x;
	return FLD_SET;
}

int fld_enum(struct api_ctx *c, const struct json_value *obj, const char *name, const char *path,
	     const char *const *values, int *out)
{
	const struct json_value *v = json_get(obj, name);
	if (!v)
		return FLD_ABSENT;
	if (v->type == JSON_NULL)
		return FLD_NULL;
	if (v->type == JSON_STRING)
		for (int i = 0; values[i]; i++)
			if (strlen(values[i]) == v->len && memcmp(values[i], v->u.str, v->len) == 0) {
				*out = i;
				return FLD_SET;
			}
	char list[256] = "";
	for (int i = 0; values[i]; i++) {
		size_t l = strlen(list);
		snprintf(list + l, sizeof(list) - l, "%s%s", i ? ", " : "", values[i]);
	}
	ERR("enum", "must be one of: %s", list);
}

int fld_country(struct api_ctx *c, const struct json_value *obj, const char *name,
		const char *path, char out[3])
{
	const struct json_value *v = json_get(obj, name);
	if (!v)
		return FLD_ABSENT;
	if (v->type == JSON_NULL)
		return FLD_NULL;
	if (v->type != JSON_STRING || !iso_country_valid(v->u.str, v->len))
		ERR("iso3166_alpha2", "must be an ISO 3166-1 alpha-2 country code in upper case, e.g. \"FR\"");
	memcpy(out, v->u.str, 2);
	out[2] = 0;
	return FLD_SET;
}

int fld_currency(struct api_ctx *c, const struct json_value *obj, const char *name,
		 const char *path, char out[4])
{
	const struct json_value *v = json_get(obj, name);
	if (!v)
		return FLD_ABSENT;
	if (v->type == JSON_NULL)
		return FLD_NULL;
	if (v->type != JSON_STRING || iso_currency_minor(v->u.str, v->len) < 0)
		ERR("iso4217", "must be a supported ISO 4217 currency code, e.g. \"EUR\"");
	memcpy(out, v->u.str, 3);
	out[3] = 0;
	return FLD_SET;
}

int fld_text(struct api_ctx *c, const struct json_value *obj, const char *name, const char *path,
	     const char **out, size_t max)
{
	const struct json_value *v = json_get(obj, name);
	if (!v)
		return FLD_ABSENT;
	if (v->type == JSON_NULL)
		return FLD_NULL;
	if (v->type != JSON_STRING)
		ERR("type", "must be a string");
	if (v->len == 0)
		ERR("min_length", "must not be empty");
	if (v->len > max)
		ERR("max_length", "must be at most %zu bytes", max);
	for (uint32_t i = 0; i < v->len; i++) {
		unsigned char ch = (unsigned char)v->u.str[i];
		if ((ch < 0x20 && ch != '\n' && ch != '\r' && ch != '\t') || ch == 0x7f)
			ERR("control_character", "must not contain control characters other than line breaks and tabs");
	}
	*out = v->u.str;
	return FLD_SET;
}

int fld_url(struct api_ctx *c, const struct json_value *obj, const char *name, const char *path,
	    size_t max, int https_only, const char **out)
{
	const struct json_value *v = json_get(obj, name);
	if (!v)
		return FLD_ABSENT;
	if (v->type == JSON_NULL)
		return FLD_NULL;
	if (v->type != JSON_STRING)
		ERR("type", "must be a string");
	if (v->len > max)
		ERR("max_length", "must be at most %zu bytes", max);
	const char *s = v->u.str;
	size_t skip = !strncmp(s, "https://", 8) ? 8 : (!https_only && !strncmp(s, "http://", 7)) ? 7 : 0;
	int ok = skip && v->len > skip && s[skip] != '/' && s[skip] != '.';
	for (uint32_t i = 0; ok && i < v->len; i++)
		ok = (unsigned char)s[i] > 0x20 && s[i] != 0x7f;
	if (!ok)
		ERR("url", "must be an absolute %s URL without blanks", https_only ? "https" : "http(s)");
	*out = s;
	return FLD_SET;
}

void fld_reject_unknown(struct api_ctx *c, const struct json_value *obj, const char *const *known,
			const char *path_prefix)
{
	if (!c || obj->type != JSON_OBJECT)
		return;
	for (uint32_t i = 0; i < obj->len; i++) {
		const char *k = obj->u.members[i].key;
		int found = 0;
		for (int j = 0; known[j] && !found; j++)
			found = strcmp(known[j], k) == 0;
		if (!found) {
			char p[64];
			snprintf(p, sizeof(p), "%s%.40s", path_prefix ? path_prefix : "", k);
			api_field_error(c, p, "unknown_field", "is not a field of this resource");
		}
	}
}

int fld_doc_str(const struct json_value *doc, const char *name, char *out, size_t size)
{
	const struct json_value *v = json_get(doc, name);
	out[0] = 0;
	if (!v || v->type == JSON_NULL)
		return 0;
	if (v->type != JSON_STRING || v->len >= size)
		return -1;
	memcpy(out, v->u.str, (size_t)v->len + 1);
	return 0;
}
