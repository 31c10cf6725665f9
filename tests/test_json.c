/*
 * test_json.c -- the JSON parser: grammar, exact numbers, bounds at and past
 * their edges, UTF-8 and escapes, error positions, exact conversions, and a
 * differential run against jansson.
 */
#include "tests/wm_test.h"

/*
 * jansson's json_type enumerators (JSON_OBJECT, JSON_NULL, ...) have the
 * same names as ours, so its header is included with them renamed to
 * JANSSON_*; the differential test compares json_typeof() against the
 * renamed values and never uses jansson's json_is_*() macros (which would
 * expand to our enumerators).
 */
#define JSON_OBJECT JANSSON_OBJECT
#define JSON_ARRAY JANSSON_ARRAY
#define JSON_STRING JANSSON_STRING
#define JSON_TRUE JANSSON_TRUE
#define JSON_FALSE JANSSON_FALSE
#define JSON_NULL JANSSON_NULL
#include <jansson.h>
#undef JSON_OBJECT
#undef JSON_ARRAY
#undef JSON_STRING
#undef JSON_TRUE
#undef JSON_FALSE
#undef JSON_NULL

#include "net/json.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A string literal with its exact length (so it may contain NUL bytes). */
#define L(s) s, sizeof(s) - 1

static struct json_doc *parse_ok(const char *s, size_t n)
{
	struct json_error err;
	struct json_doc *d = json_parse(s, n, NULL, &err);
	cr_assert_not_null(d, "rejected %.*s: %s at %zu", (int)n, s, err.msg, err.offset);
	return d;
}

static struct json_doc *parse_lim(const char *s, size_t n, const struct json_limits *lim,
				  struct json_error *err)
{
	return json_parse(s, n, lim, err);
}

/* Must be rejected with the error at `off` (pass (size_t)-1 to skip). */
static void parse_bad(const char *s, size_t n, size_t off, int too_large)
{
	struct json_error err;
	struct json_doc *d = json_parse(s, n, NULL, &err);
	if (d)
		json_doc_free(d);
	cr_assert_null(d, "accepted %.*s", (int)n, s);
	if (off != (size_t)-1)
		cr_assert_eq(err.offset, off, "%.*s: offset %zu, want %zu (%s)", (int)n, s,
			     err.offset, off, err.msg);
	cr_assert_eq(err.too_large, too_large, "%.*s: too_large %d (%s)", (int)n, s,
		     err.too_large, err.msg);
	cr_assert(err.msg[0] != 0);
	cr_assert(err.line >= 1 && err.column >= 1);
}

/* Parse a single string document and check its decoded bytes. */
static void string_is(const char *in, size_t n, const char *want, size_t wn)
{
	struct json_doc *d = parse_ok(in, n);
	const struct json_value *v = json_root(d);
	cr_assert_eq(v->type, JSON_STRING);
	cr_assert_eq(v->len, wn, "%.*s: len %u want %zu", (int)n, in, v->len, wn);
	cr_assert_eq(memcmp(v->u.str, want, wn), 0, "%.*s", (int)n, in);
	cr_assert_eq(v->u.str[wn], 0);
	json_doc_free(d);
}

/* ---------------------------------------------------------------------- */

WM_TEST(json, scalars)
{
	struct json_doc *d;
	d = parse_ok(L(" null "));
	cr_assert_eq(json_root(d)->type, JSON_NULL);
	json_doc_free(d);
	d = parse_ok(L("true"));
	cr_assert_eq(json_root(d)->type, JSON_TRUE);
	json_doc_free(d);
	d = parse_ok(L("\t\r\nfalse\n"));
	cr_assert_eq(json_root(d)->type, JSON_FALSE);
	json_doc_free(d);
	d = parse_ok(L("42"));
	cr_assert_eq(json_root(d)->type, JSON_NUMBER);
	cr_assert_str_eq(json_root(d)->u.num, "42");
	json_doc_free(d);
	string_is(L("\"hello\""), L("hello"));
	string_is(L("\"\""), L(""));
}

WM_TEST(json, containers)
{
	const char *t = "{\"name\":\"Ch\\u00e2teau\",\"vintage\":2015,\"tags\":[\"red\",true,null,[]],"
			"\"empty\":{},\"price\":\"12.30\"}";
	struct json_doc *d = parse_ok(t, strlen(t));
	const struct json_value *r = json_root(d);
	cr_assert_eq(r->type, JSON_OBJECT);
	cr_assert_eq(r->len, 5);
	cr_assert_str_eq(r->u.members[0].key, "name");
	cr_assert_str_eq(r->u.members[1].key, "vintage");
	cr_assert_str_eq(r->u.members[2].key, "tags");
	cr_assert_str_eq(r->u.members[3].key, "empty");
	cr_assert_str_eq(r->u.members[4].key, "price");
	cr_assert_str_eq(json_get(r, "name")->u.str, "Ch\xc3\xa2teau");
	const struct json_value *tags = json_get(r, "tags");
	cr_assert_eq(tags->type, JSON_ARRAY);
	cr_assert_eq(tags->len, 4);
	cr_assert_str_eq(tags->u.items[0].u.str, "red");
	cr_assert_eq(tags->u.items[1].type, JSON_TRUE);
	cr_assert_eq(tags->u.items[2].type, JSON_NULL);
	cr_assert_eq(tags->u.items[3].type, JSON_ARRAY);
	cr_assert_eq(tags->u.items[3].len, 0);
	cr_assert_eq(json_get(r, "empty")->type, JSON_OBJECT);
	cr_assert_eq(json_get(r, "empty")->len, 0);
	cr_assert_null(json_get(r, "missing"));
	cr_assert_null(json_get(tags, "name"));
	cr_assert_null(json_get(NULL, "name"));
	json_doc_free(d);
	json_doc_free(NULL);
}

WM_TEST(json, values_do_not_point_into_input)
{
	char *t = strdup("{\"k\":[\"v\",1.5]}");
	struct json_doc *d = parse_ok(t, strlen(t));
	memset(t, 'x', strlen(t));
	free(t);
	const struct json_value *r = json_root(d);
	cr_assert_str_eq(r->u.members[0].key, "k");
	cr_assert_str_eq(r->u.members[0].value.u.items[0].u.str, "v");
	cr_assert_str_eq(r->u.members[0].value.u.items[1].u.num, "1.5");
	json_doc_free(d);
}

WM_TEST(json, not_nul_terminated)
{
	/* Only `len` bytes are read: "12" out of "123". */
	struct json_doc *d = parse_ok("123", 2);
	cr_assert_str_eq(json_root(d)->u.num, "12");
	json_doc_free(d);
	parse_bad("\"ab\"", 3, 3, 0);
}

WM_TEST(json, number_text_is_exact)
{
	static const char *nums[] = {
		"-0", "1e400", "0.1", "123456789012345678901234567890", "1E-7", "-1.5e+10",
		"0e0", "0.000", "-9223372036854775809", "1E400", "2.50", "1e-400",
	};
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		struct json_doc *d = parse_ok(nums[i], strlen(nums[i]));
		const struct json_value *v = json_root(d);
		cr_assert_eq(v->type, JSON_NUMBER);
		cr_assert_str_eq(v->u.num, nums[i]);
		cr_assert_eq(v->len, strlen(nums[i]));
		json_doc_free(d);
	}
	struct json_doc *d = parse_ok(L("[ 0.1 ,-0,1E-7]"));
	cr_assert_str_eq(json_root(d)->u.items[0].u.num, "0.1");
	cr_assert_str_eq(json_root(d)->u.items[1].u.num, "-0");
	cr_assert_str_eq(json_root(d)->u.items[2].u.num, "1E-7");
	json_doc_free(d);
}

WM_TEST(json, numbers_rejected)
{
	parse_bad(L("01"), 1, 0);
	parse_bad(L("-01"), 2, 0);
	parse_bad(L("00"), 1, 0);
	parse_bad(L("1."), 2, 0);
	parse_bad(L("1.e5"), 2, 0);
	parse_bad(L(".5"), 0, 0);
	parse_bad(L("+1"), 0, 0);
	parse_bad(L("-"), 1, 0);
	parse_bad(L("--1"), 1, 0);
	parse_bad(L("- 1"), 1, 0);
	parse_bad(L("1e"), 2, 0);
	parse_bad(L("1e+"), 3, 0);
	parse_bad(L("1E-x"), 3, 0);
	parse_bad(L("NaN"), 0, 0);
	parse_bad(L("Infinity"), 0, 0);
	parse_bad(L("-Infinity"), 1, 0);
	parse_bad(L("0x10"), 1, 0);
	parse_bad(L("1.5.3"), 3, 0);
	parse_bad(L("[01]"), 2, 0);
	parse_bad(L("{\"a\":1.}"), 7, 0);
}

WM_TEST(json, syntax_errors)
{
	parse_bad(L(""), 0, 0);
	parse_bad(L("   "), 3, 0);
	parse_bad(L("["), 1, 0);
	parse_bad(L("{"), 1, 0);
	parse_bad(L("]"), 0, 0);
	parse_bad(L("[1,]"), 3, 0);
	parse_bad(L("[,1]"), 1, 0);
	parse_bad(L("{\"a\":1,}"), 7, 0);
	parse_bad(L("{,}"), 1, 0);
	parse_bad(L("[1 2]"), 3, 0);
	parse_bad(L("{\"a\" 1}"), 5, 0);
	parse_bad(L("{\"a\":}"), 5, 0);
	parse_bad(L("{1:2}"), 1, 0);
	parse_bad(L("{'a':1}"), 1, 0);
	parse_bad(L("[1}"), 2, 0);
	parse_bad(L("{\"a\":1]"), 6, 0);
	parse_bad(L("\"abc"), 4, 0);
	parse_bad(L("tru"), 3, 0);
	parse_bad(L("trUe"), 2, 0);
	parse_bad(L("truex"), 4, 0);
	parse_bad(L("nul"), 3, 0);
	parse_bad(L("[] []"), 3, 0);
	parse_bad(L("1 2"), 2, 0);
	parse_bad(L("\xef\xbb\xbf{}"), 0, 0); /* byte order mark */
	parse_bad(L("/*c*/1"), 0, 0);
	parse_bad(L("\0"), 0, 0);
	parse_bad(L("1\0"), 1, 0);
	parse_bad(L("\f1"), 0, 0); /* form feed is not JSON whitespace */
	parse_bad(L("\xc2\xa0" "1"), 0, 0);
}

WM_TEST(json, duplicate_keys)
{
	struct json_error err;
	cr_assert_null(json_parse(L("{\"a\":1,\"a\":2}"), NULL, &err));
	cr_assert_eq(err.offset, 7);
	cr_assert_str_eq(err.msg, "duplicate key \"a\"");
	cr_assert_eq(err.too_large, 0);
	/* Equal after unescaping. */
	cr_assert_null(json_parse(L("{\"a\":1,\"\\u0061\":2}"), NULL, &err));
	cr_assert_eq(err.offset, 7);
	cr_assert_null(json_parse(L("{\"\\u00e9\":1,\"\xc3\xa9\":2}"), NULL, &err));
	cr_assert_null(json_parse(L("{\"\":1,\"\":2}"), NULL, &err));
	cr_assert_eq(err.offset, 6);
	cr_assert_null(json_parse(L("{\"a\\u0000\":1,\"a\\u0000\":2}"), NULL, &err));
	cr_assert_null(json_parse(L("{\"x\":{\"a\":1,\"b\":{},\"a\":3}}"), NULL, &err));
	cr_assert_eq(err.offset, 19);
	/* Not duplicates: different objects, case, embedded NUL position. */
	json_doc_free(parse_ok(L("{\"a\":{\"a\":{\"a\":1}},\"b\":{\"a\":2}}")));
	json_doc_free(parse_ok(L("[{\"a\":1},{\"a\":1}]")));
	json_doc_free(parse_ok(L("{\"a\":1,\"A\":2,\"a \":3,\"\":4}")));
	json_doc_free(parse_ok(L("{\"a\\u0000b\":1,\"a\\u0000c\":2,\"a\":3}")));
	/* A key reused after its object closed is fine in the parent. */
	json_doc_free(parse_ok(L("{\"o\":{\"k\":1},\"k\":2}")));
}

WM_TEST(json, duplicate_key_in_large_object)
{
	/* 5000 distinct keys, then one repeated: found, at the right offset. */
	size_t cap = 5001 * 16 + 64, n = 0;
	char *t = malloc(cap);
	t[n++] = '{';
	for (int i = 0; i < 5000; i++)
		n += (size_t)snprintf(t + n, cap - n, "%s\"k%d\":%d", i ? "," : "", i, i);
	size_t at = n + 1;
	n += (size_t)snprintf(t + n, cap - n, ",\"k2500\":0}");
	struct json_error err;
	cr_assert_null(json_parse(t, n, NULL, &err));
	cr_assert_eq(err.offset, at);
	cr_assert_str_eq(err.msg, "duplicate key \"k2500\"");
	/* Without the duplicate it parses and keeps the order. */
	n = at - 1;
	t[n++] = '}';
	struct json_doc *d = parse_ok(t, n);
	cr_assert_eq(json_root(d)->len, 5000);
	cr_assert_str_eq(json_root(d)->u.members[4999].key, "k4999");
	cr_assert_str_eq(json_get(json_root(d), "k1234")->u.num, "1234");
	json_doc_free(d);
	free(t);
}

/* "[[[...1...]]]" with `depth` levels. */
static char *nested(uint32_t depth, size_t *n)
{
	char *t = malloc(2 * (size_t)depth + 2);
	size_t k = 0;
	for (uint32_t i = 0; i < depth; i++)
		t[k++] = '[';
	t[k++] = '1';
	for (uint32_t i = 0; i < depth; i++)
		t[k++] = ']';
	*n = k;
	return t;
}

WM_TEST(json, limit_depth)
{
	size_t n;
	struct json_error err;
	char *t = nested(JSON_DEFAULT_MAX_DEPTH, &n);
	struct json_doc *d = json_parse(t, n, NULL, &err);
	cr_assert_not_null(d);
	json_doc_free(d);
	free(t);
	t = nested(JSON_DEFAULT_MAX_DEPTH + 1, &n);
	cr_assert_null(json_parse(t, n, NULL, &err));
	cr_assert_eq(err.too_large, 1);
	cr_assert_eq(err.offset, JSON_DEFAULT_MAX_DEPTH);
	free(t);
	/* Custom bound, with objects. */
	struct json_limits lim = { .max_depth = 3 };
	d = parse_lim(L("{\"a\":[{}]}"), &lim, &err);
	cr_assert_not_null(d);
	json_doc_free(d);
	cr_assert_null(parse_lim(L("{\"a\":[{\"b\":[]}]}"), &lim, &err));
	cr_assert_eq(err.too_large, 1);
	cr_assert_eq(err.offset, 11);
	/* Scalars are depth 0. */
	lim.max_depth = 1;
	d = parse_lim(L("[1]"), &lim, &err);
	cr_assert_not_null(d);
	json_doc_free(d);
	cr_assert_null(parse_lim(L("[[]]"), &lim, &err));
	cr_assert_eq(err.too_large, 1);
	/* A deep hostile input far past the bound fails cleanly (no recursion). */
	t = nested(200000, &n);
	cr_assert_null(json_parse(t, n, NULL, &err));
	cr_assert_eq(err.too_large, 1);
	free(t);
}

WM_TEST(json, limit_bytes)
{
	struct json_error err;
	struct json_limits lim = { .max_bytes = 7 };
	struct json_doc *d = parse_lim(L("[1,2,3]"), &lim, &err);
	cr_assert_not_null(d);
	json_doc_free(d);
	cr_assert_null(parse_lim(L("[1,2,3] "), &lim, &err));
	cr_assert_eq(err.too_large, 1);
	cr_assert_eq(err.offset, 7);
	/* Default: 1 MiB of whitespace around a value, then one byte more. */
	size_t n = JSON_DEFAULT_MAX_BYTES;
	char *t = malloc(n + 1);
	memset(t, ' ', n + 1);
	t[0] = '0';
	d = json_parse(t, n, NULL, &err);
	cr_assert_not_null(d);
	json_doc_free(d);
	cr_assert_null(json_parse(t, n + 1, NULL, &err));
	cr_assert_eq(err.too_large, 1);
	cr_assert_eq(err.offset, JSON_DEFAULT_MAX_BYTES);
	free(t);
}

/* "\"xxx...\"" with `len` x's. */
static char *long_string(size_t len, size_t *n)
{
	char *t = malloc(len + 2);
	t[0] = '"';
	memset(t + 1, 'x', len);
	t[len + 1] = '"';
	*n = len + 2;
	return t;
}

WM_TEST(json, limit_string)
{
	struct json_error err;
	size_t n;
	char *t = long_string(JSON_DEFAULT_MAX_STRING, &n);
	struct json_doc *d = json_parse(t, n, NULL, &err);
	cr_assert_not_null(d);
	cr_assert_eq(json_root(d)->len, JSON_DEFAULT_MAX_STRING);
	json_doc_free(d);
	free(t);
	t = long_string(JSON_DEFAULT_MAX_STRING + 1, &n);
	cr_assert_null(json_parse(t, n, NULL, &err));
	cr_assert_eq(err.too_large, 1);
	cr_assert_eq(err.offset, 0);
	free(t);
	/* Custom bound counts decoded bytes: \u00e9 is 2 bytes, \n is 1. */
	struct json_limits lim = { .max_string = 4 };
	d = parse_lim(L("[\"ab\\u00e9\",\"\\n\\n\\n\\n\"]"), &lim, &err);
	cr_assert_not_null(d);
	json_doc_free(d);
	cr_assert_null(parse_lim(L("[\"abc\\u00e9\"]"), &lim, &err));
	cr_assert_eq(err.too_large, 1);
	cr_assert_eq(err.offset, 1);
	cr_assert_null(parse_lim(L("[\"\xf0\x9f\x8d\xb7x\"]"), &lim, &err));
	cr_assert_eq(err.too_large, 1);
	/* Keys too. */
	d = parse_lim(L("{\"abcd\":1}"), &lim, &err);
	cr_assert_not_null(d);
	json_doc_free(d);
	cr_assert_null(parse_lim(L("{\"abcde\":1}"), &lim, &err));
	cr_assert_eq(err.too_large, 1);
	cr_assert_eq(err.offset, 1);
}

/* An array or object with `count` members. */
static char *many(uint32_t count, int obj, size_t *n)
{
	size_t cap = (size_t)count * 16 + 8, k = 0;
	char *t = malloc(cap);
	t[k++] = obj ? '{' : '[';
	for (uint32_t i = 0; i < count; i++) {
		if (obj)
			k += (size_t)snprintf(t + k, cap - k, "%s\"%u\":0", i ? "," : "", i);
		else
			k += (size_t)snprintf(t + k, cap - k, "%s0", i ? "," : "");
	}
	t[k++] = obj ? '}' : ']';
	*n = k;
	return t;
}

WM_TEST(json, limit_members)
{
	struct json_error err;
	for (int obj = 0; obj <= 1; obj++) {
		size_t n;
		char *t = many(JSON_DEFAULT_MAX_MEMBERS, obj, &n);
		struct json_doc *d = json_parse(t, n, NULL, &err);
		cr_assert_not_null(d, "%s", err.msg);
		cr_assert_eq(json_root(d)->len, JSON_DEFAULT_MAX_MEMBERS);
		json_doc_free(d);
		free(t);
		t = many(JSON_DEFAULT_MAX_MEMBERS + 1, obj, &n);
		cr_assert_null(json_parse(t, n, NULL, &err));
		cr_assert_eq(err.too_large, 1);
		free(t);
	}
	struct json_limits lim = { .max_members = 3 };
	struct json_doc *d = parse_lim(L("[[1,2,3],{\"a\":1,\"b\":2,\"c\":3},3]"), &lim, &err);
	cr_assert_not_null(d);
	json_doc_free(d);
	cr_assert_null(parse_lim(L("[1,2,3, 4]"), &lim, &err));
	cr_assert_eq(err.too_large, 1);
	cr_assert_eq(err.offset, 8);
	cr_assert_null(parse_lim(L("{\"a\":1,\"b\":2,\"c\":3, \"d\":4}"), &lim, &err));
	cr_assert_eq(err.too_large, 1);
	cr_assert_eq(err.offset, 20);
	cr_assert_null(parse_lim(L("[1,2,3,4,5]"), &lim, &err));
	cr_assert_eq(err.too_large, 1);
	cr_assert_eq(err.offset, 7);
}

WM_TEST(json, limit_number)
{
	struct json_error err;
	char t[JSON_DEFAULT_MAX_NUMBER + 2];
	memset(t, '9', sizeof(t));
	t[0] = '-';
	struct json_doc *d = json_parse(t, JSON_DEFAULT_MAX_NUMBER, NULL, &err);
	cr_assert_not_null(d);
	cr_assert_eq(json_root(d)->len, JSON_DEFAULT_MAX_NUMBER);
	json_doc_free(d);
	cr_assert_null(json_parse(t, JSON_DEFAULT_MAX_NUMBER + 1, NULL, &err));
	cr_assert_eq(err.too_large, 1);
	cr_assert_eq(err.offset, 0);
	struct json_limits lim = { .max_number = 5 };
	d = parse_lim(L("[12345,-1234,1.5e3,-0.01]"), &lim, &err);
	cr_assert_not_null(d);
	json_doc_free(d);
	cr_assert_null(parse_lim(L("[1, 123456]"), &lim, &err));
	cr_assert_eq(err.too_large, 1);
	cr_assert_eq(err.offset, 4);
	cr_assert_null(parse_lim(L("1.5e+3"), &lim, &err));
	cr_assert_eq(err.too_large, 1);
}

WM_TEST(json, utf8_valid)
{
	string_is(L("\"\xc2\x80\xdf\xbf\""), L("\xc2\x80\xdf\xbf"));               /* U+0080, U+07FF */
	string_is(L("\"\xe0\xa0\x80\xef\xbf\xbf\""), L("\xe0\xa0\x80\xef\xbf\xbf")); /* U+0800, U+FFFF */
	string_is(L("\"\xed\x9f\xbf\xee\x80\x80\""), L("\xed\x9f\xbf\xee\x80\x80")); /* U+D7FF, U+E000 */
	string_is(L("\"\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\""),
		  L("\xf0\x90\x80\x80\xf4\x8f\xbf\xbf"));                            /* U+10000, U+10FFFF */
	string_is(L("\"Ch\xc3\xa2teau \xe2\x82\xac \xf0\x9f\x8d\xb7\""),
		  L("Ch\xc3\xa2teau \xe2\x82\xac \xf0\x9f\x8d\xb7"));
	string_is(L("\"\x7f\""), L("\x7f")); /* DEL needs no escape */
}

WM_TEST(json, utf8_invalid)
{
	/* Each case: a string starting at offset 0, bad byte at offset 2. */
	static const struct {
		const char *s;
		size_t n;
	} bad[] = {
		{ L("\"a\xc0\x80\"") },         /* overlong NUL */
		{ L("\"a\xc1\xbf\"") },         /* overlong 2-byte */
		{ L("\"a\xe0\x80\x80\"") },     /* overlong 3-byte */
		{ L("\"a\xe0\x9f\xbf\"") },     /* overlong U+07FF */
		{ L("\"a\xf0\x80\x80\x80\"") }, /* overlong 4-byte */
		{ L("\"a\xf0\x8f\xbf\xbf\"") }, /* overlong U+FFFF */
		{ L("\"a\xed\xa0\x80\"") },     /* U+D800 encoded */
		{ L("\"a\xed\xbf\xbf\"") },     /* U+DFFF encoded */
		{ L("\"a\xed\xa0\xbd\xed\xb2\xa9\"") }, /* CESU-8 pair */
		{ L("\"a\xf4\x90\x80\x80\"") }, /* U+110000 */
		{ L("\"a\xc3\"") },             /* truncated 2-byte */
		{ L("\"a\xe2\x82\"") },         /* truncated 3-byte */
		{ L("\"a\xf0\x9f\x8d\"") },     /* truncated 4-byte */
		{ L("\"a\xc3x\"") },            /* bad continuation */
		{ L("\"a\xe2x\xac\"") },
		{ L("\"a\x80\"") },             /* stray continuation */
		{ L("\"a\xbf\"") },
		{ L("\"a\xfe\xff\"") },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		parse_bad(bad[i].s, bad[i].n, 2, 0);
	/* Every byte F5..FF. */
	for (unsigned b = 0xF5; b <= 0xFF; b++) {
		char t[] = "\"ab?\x80\x80\x80\"";
		t[3] = (char)b;
		parse_bad(t, sizeof(t) - 1, 3, 0);
	}
	/* Truncated by the end of input, and in a key. */
	parse_bad(L("\"\xe2\x82"), 1, 0);
	parse_bad(L("{\"k\xff\":1}"), 3, 0);
	/* Outside strings any non-ASCII byte is simply unexpected. */
	parse_bad(L("[\xc3\xa9]"), 1, 0);
}

WM_TEST(json, control_characters)
{
	for (unsigned c = 0; c < 0x20; c++) {
		char t[] = "\"ab?\"";
		t[3] = (char)c;
		parse_bad(t, sizeof(t) - 1, 3, 0);
	}
	string_is(L("\"a\x7f" "b\""), L("a\x7f" "b"));
}

WM_TEST(json, escapes)
{
	string_is(L("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\""), L("\"\\/\b\f\n\r\t"));
	string_is(L("\"\\u0041\\u00e9\\u00E9\\u20AC\\uFFFF\""),
		  L("A\xc3\xa9\xc3\xa9\xe2\x82\xac\xef\xbf\xbf"));
	string_is(L("\"\\u0000\""), L("\0"));
	string_is(L("\"a\\u0000b\""), L("a\0b"));
	string_is(L("\"\\u007f\\u0080\\u07ff\\u0800\""), L("\x7f\xc2\x80\xdf\xbf\xe0\xa0\x80"));
	/* Surrogate pairs: U+1F377, U+10000, U+10FFFF. */
	string_is(L("\"\\ud83c\\udf77\""), L("\xf0\x9f\x8d\xb7"));
	string_is(L("\"\\uD800\\uDC00\""), L("\xf0\x90\x80\x80"));
	string_is(L("\"\\udbff\\udfff\""), L("\xf4\x8f\xbf\xbf"));
	string_is(L("\"x\\ud83c\\udf77y\\ud83c\\udf77\""), L("x\xf0\x9f\x8d\xb7y\xf0\x9f\x8d\xb7"));
	/* Lone and misordered surrogates: error at the backslash. */
	parse_bad(L("\"ab\\ud800\""), 3, 0);
	parse_bad(L("\"ab\\ud800x\""), 3, 0);
	parse_bad(L("\"ab\\ud800\\n\""), 3, 0);
	parse_bad(L("\"ab\\ud800\\u0041\""), 3, 0);
	parse_bad(L("\"ab\\ud800\\ud800\""), 3, 0);
	parse_bad(L("\"ab\\udc00\""), 3, 0);
	parse_bad(L("\"ab\\udfff\\ud800\""), 3, 0);
	parse_bad(L("\"ab\\ud800"), 3, 0);
	/* Bad escapes. */
	parse_bad(L("\"\\x\""), 2, 0);
	parse_bad(L("\"\\'\""), 2, 0);
	parse_bad(L("\"\\U0041\""), 2, 0);
	parse_bad(L("\"\\u12G4\""), 5, 0);
	parse_bad(L("\"\\u12\""), 5, 0);
	parse_bad(L("\"\\u12"), 5, 0);
	parse_bad(L("\"\\"), 2, 0);
	parse_bad(L("\"\\ud800\\u12\""), 11, 0);
}

WM_TEST(json, error_position)
{
	const char *t = "{\n"
			"  \"a\": [1, 2,\n"
			"  3],\n"
			"  \"b\": 01\n"
			"}";
	struct json_error err;
	cr_assert_null(json_parse(t, strlen(t), NULL, &err));
	cr_assert_eq(err.offset, 30, "offset %zu", err.offset);
	cr_assert_eq(err.line, 4);
	cr_assert_eq(err.column, 9);
	cr_assert_eq(err.too_large, 0);
	cr_assert(strstr(err.msg, "leading zero") != NULL, "%s", err.msg);

	/* Control character on line 3, column 4 (CRLF line ends). */
	const char *u = "[\r\n1,\r\n\"a\tb\"]";
	cr_assert_null(json_parse(u, strlen(u), NULL, &err));
	cr_assert_eq(err.offset, 9);
	cr_assert_eq(err.line, 3);
	cr_assert_eq(err.column, 3);

	/* End of input: offset is the length, column one past the last byte. */
	const char *v = "{\"a\":\n [1,\n  2";
	cr_assert_null(json_parse(v, strlen(v), NULL, &err));
	cr_assert_eq(err.offset, strlen(v));
	cr_assert_eq(err.line, 3);
	cr_assert_eq(err.column, 4);
	cr_assert(strstr(err.msg, "end of input") != NULL, "%s", err.msg);

	/* First byte of the first line. */
	cr_assert_null(json_parse(L("x"), NULL, &err));
	cr_assert_eq(err.offset, 0);
	cr_assert_eq(err.line, 1);
	cr_assert_eq(err.column, 1);

	/* err may be NULL. */
	cr_assert_null(json_parse(L("x"), NULL, NULL));
}

/* ---------------------------------------------------------------------- */
/* Conversions                                                            */
/* ---------------------------------------------------------------------- */

static int num_int64(const char *s, int64_t *out)
{
	struct json_doc *d = parse_ok(s, strlen(s));
	int rc = json_to_int64(json_root(d), out);
	json_doc_free(d);
	return rc;
}

static int num_fixed(const char *s, unsigned scale, int64_t *out)
{
	struct json_doc *d = parse_ok(s, strlen(s));
	int rc = json_to_fixed(json_root(d), scale, out);
	json_doc_free(d);
	return rc;
}

WM_TEST(json, to_int64)
{
	int64_t v;
	cr_assert_eq(num_int64("0", &v), 0);
	cr_assert_eq(v, 0);
	cr_assert_eq(num_int64("-0", &v), 0);
	cr_assert_eq(v, 0);
	cr_assert_eq(num_int64("12", &v), 0);
	cr_assert_eq(v, 12);
	cr_assert_eq(num_int64("-3", &v), 0);
	cr_assert_eq(v, -3);
	cr_assert_eq(num_int64("9223372036854775807", &v), 0);
	cr_assert_eq(v, INT64_MAX);
	cr_assert_eq(num_int64("-9223372036854775808", &v), 0);
	cr_assert_eq(v, INT64_MIN);
	cr_assert_eq(num_int64("9223372036854775808", &v), -1);
	cr_assert_eq(num_int64("-9223372036854775809", &v), -1);
	cr_assert_eq(num_int64("18446744073709551616", &v), -1);
	cr_assert_eq(num_int64("123456789012345678901234567890", &v), -1);
	cr_assert_eq(num_int64("1.0", &v), -1);
	cr_assert_eq(num_int64("1e2", &v), -1);
	cr_assert_eq(num_int64("1E0", &v), -1);
	/* Not a number. */
	struct json_doc *d = parse_ok(L("[\"12\",null]"));
	cr_assert_eq(json_to_int64(&json_root(d)->u.items[0], &v), -1);
	cr_assert_eq(json_to_int64(&json_root(d)->u.items[1], &v), -1);
	cr_assert_eq(json_to_int64(json_root(d), &v), -1);
	cr_assert_eq(json_to_fixed(&json_root(d)->u.items[0], 2, &v), -1);
	json_doc_free(d);
	cr_assert_eq(json_to_int64(NULL, &v), -1);
}

WM_TEST(json, to_fixed)
{
	static const struct {
		const char *s;
		unsigned scale;
		int rc;
		int64_t want;
	} cases[] = {
		{ "12.3", 2, 0, 1230 },
		{ "12.30", 2, 0, 1230 },
		{ "1.230", 2, 0, 123 },         /* extra zero digit */
		{ "1.23000000000000000000", 2, 0, 123 },
		{ "1.235", 2, -1, 0 },          /* would round */
		{ "1.5e1", 0, 0, 15 },
		{ "1.5E+1", 2, 0, 1500 },
		{ "1.5e-1", 1, -1, 0 },
		{ "1.5e-1", 2, 0, 15 },
		{ "150e-2", 0, -1, 0 },
		{ "150e-1", 0, 0, 15 },
		{ "100e-2", 0, 0, 1 },
		{ "1000000000000000000000e-21", 0, 0, 1 },
		{ "-0.05", 2, 0, -5 },
		{ "-0", 2, 0, 0 },
		{ "0.000", 0, 0, 0 },
		{ "0e999999999999999999999", 0, 0, 0 },
		{ "0.0e-99999", 18, 0, 0 },
		{ "1e-999999999999", 18, -1, 0 },
		{ "1e999999999999", 0, -1, 0 },
		{ "12", 0, 0, 12 },              /* scale 0 */
		{ "12.0", 0, 0, 12 },
		{ "12.5", 0, -1, 0 },
		{ "1", 18, 0, 1000000000000000000 },  /* scale 18 */
		{ "9.223372036854775807", 18, 0, INT64_MAX },
		{ "9.223372036854775808", 18, -1, 0 },
		{ "-9.223372036854775808", 18, 0, INT64_MIN },
		{ "-9.223372036854775809", 18, -1, 0 },
		{ "10", 18, -1, 0 },
		{ "0.000000000000000001", 18, 0, 1 },
		{ "0.0000000000000000001", 18, -1, 0 },
		{ "0.00000000000000000010", 18, -1, 0 },
		{ "0.000000000000000000100e1", 18, 0, 1 },
		{ "92233720368547758.07", 2, 0, INT64_MAX },
		{ "92233720368547758.08", 2, -1, 0 },
		{ "-92233720368547758.08", 2, 0, INT64_MIN },
		{ "9223372036854775807", 0, 0, INT64_MAX },
		{ "9223372036854775808", 0, -1, 0 },
		{ "922337203685477580.7e1", 0, 0, INT64_MAX },
		{ "9.223372036854775807e18", 0, 0, INT64_MAX },
		{ "9.223372036854775807e17", 0, -1, 0 },
		{ "123456789012345678901234567890", 0, -1, 0 },
		{ "1e18", 0, 0, 1000000000000000000 },
		{ "1e19", 0, -1, 0 },
		{ "1e-7", 7, 0, 1 },
		{ "1E-7", 6, -1, 0 },
		{ "0.1", 1, 0, 1 },
		{ "0.1", 0, -1, 0 },
		{ "1e400", 2, -1, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t v = 777;
		int rc = num_fixed(cases[i].s, cases[i].scale, &v);
		cr_assert_eq(rc, cases[i].rc, "%s scale %u: rc %d", cases[i].s, cases[i].scale, rc);
		if (rc == 0)
			cr_assert_eq(v, cases[i].want, "%s scale %u: %lld", cases[i].s,
				     cases[i].scale, (long long)v);
	}
	int64_t v;
	cr_assert_eq(num_fixed("1", 19, &v), -1); /* scale > 18 */
}

WM_TEST(json, text_to_fixed)
{
	int64_t v;
	cr_assert_eq(json_text_to_fixed(L("12.30"), 2, &v), 0);
	cr_assert_eq(v, 1230);
	cr_assert_eq(json_text_to_fixed("12.345", 4, 2, &v), 0); /* only len bytes */
	cr_assert_eq(v, 1230);
	cr_assert_eq(json_text_to_fixed(L("-0.05"), 2, &v), 0);
	cr_assert_eq(v, -5);
	static const char *bad[] = { "", " 1", "1 ", "+1", "1.", ".5", "01", "-", "1e", "abc",
				     "1,5", "0x10", "NaN", "--1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(json_text_to_fixed(bad[i], strlen(bad[i]), 2, &v), -1, "%s", bad[i]);
	cr_assert_eq(json_text_to_fixed(NULL, 0, 2, &v), -1);
}

WM_TEST(json, large_document_arena)
{
	/* Strings bigger than an arena block, many small values, deep-ish
	 * nesting: exercises every arena path; the leak check covers free. */
	size_t cap = 3 * 60000 + 200000, n = 0;
	char *t = malloc(cap);
	n += (size_t)snprintf(t + n, cap - n, "{\"big\":[");
	for (int i = 0; i < 3; i++) {
		t[n++] = i ? ',' : ' ';
		t[n++] = '"';
		memset(t + n, 'a' + i, 60000);
		n += 60000;
		t[n++] = '"';
	}
	n += (size_t)snprintf(t + n, cap - n, "],\"small\":[");
	for (int i = 0; i < 9000; i++)
		n += (size_t)snprintf(t + n, cap - n, "%s{\"i\":%d}", i ? "," : "", i);
	n += (size_t)snprintf(t + n, cap - n, "]}");
	struct json_doc *d = parse_ok(t, n);
	const struct json_value *big = json_get(json_root(d), "big");
	cr_assert_eq(big->len, 3);
	cr_assert_eq(big->u.items[2].len, 60000);
	cr_assert_eq(big->u.items[2].u.str[59999], 'c');
	const struct json_value *small = json_get(json_root(d), "small");
	cr_assert_eq(small->len, 9000);
	int64_t v;
	cr_assert_eq(json_to_int64(json_get(&small->u.items[8999], "i"), &v), 0);
	cr_assert_eq(v, 8999);
	json_doc_free(d);
	free(t);
}

/* ---------------------------------------------------------------------- */
/* Differential test against jansson                                      */
/* ---------------------------------------------------------------------- */

/*
 * Deliberate differences, marked in the table and checked on our side only:
 *  NUL   jansson rejects "\u0000" without JSON_ALLOW_NUL; we accept it (the
 *        length is explicit).
 *  BIG   jansson rejects integers outside json_int_t and reals that overflow
 *        a double ("1e400"); we keep the text and let the caller decide.
 *  DEPTH jansson allows 2048 levels; our default bound is 32.
 *  EOFNUL jansson's json_loadb() treats a NUL byte after a complete value
 *        as the end of input ("1\0" accepted); we read exactly `len` bytes
 *        and reject the NUL as trailing garbage.
 */
enum { SAME = 0, NUL = 1, BIG = 2, DEPTH = 3, EOFNUL = 4 };

static void same_tree(const struct json_value *v, json_t *j, const char *in)
{
	cr_assert_not_null(j, "%s", in);
	switch (v->type) {
	case JSON_NULL:
		cr_assert(json_typeof(j) == JANSSON_NULL, "%s", in);
		break;
	case JSON_TRUE:
		cr_assert(json_typeof(j) == JANSSON_TRUE, "%s", in);
		break;
	case JSON_FALSE:
		cr_assert(json_typeof(j) == JANSSON_FALSE, "%s", in);
		break;
	case JSON_NUMBER: {
		cr_assert((json_typeof(j) == JSON_INTEGER || json_typeof(j) == JSON_REAL), "%s", in);
		int64_t x;
		if (json_typeof(j) == JSON_INTEGER) {
			cr_assert_eq(json_to_int64(v, &x), 0, "%s", in);
			cr_assert_eq(x, (int64_t)json_integer_value(j), "%s", in);
		} else {
			cr_assert_eq(json_to_int64(v, &x), -1, "%s: jansson says real", in);
		}
		break;
	}
	case JSON_STRING:
		cr_assert(json_typeof(j) == JANSSON_STRING, "%s", in);
		cr_assert_eq(v->len, json_string_length(j), "%s", in);
		cr_assert_eq(memcmp(v->u.str, json_string_value(j), v->len), 0, "%s", in);
		break;
	case JSON_ARRAY:
		cr_assert(json_typeof(j) == JANSSON_ARRAY, "%s", in);
		cr_assert_eq(v->len, json_array_size(j), "%s", in);
		for (uint32_t i = 0; i < v->len; i++)
			same_tree(&v->u.items[i], json_array_get(j, i), in);
		break;
	case JSON_OBJECT:
		cr_assert(json_typeof(j) == JANSSON_OBJECT, "%s", in);
		cr_assert_eq(v->len, json_object_size(j), "%s", in);
		for (uint32_t i = 0; i < v->len; i++) {
			const struct json_member *m = &v->u.members[i];
			json_t *jv = json_object_getn(j, m->key, m->key_len);
			cr_assert_not_null(jv, "%s: key %s missing in jansson", in, m->key);
			same_tree(&m->value, jv, in);
		}
		break;
	}
}

WM_TEST(json, differential_jansson)
{
	static const struct {
		const char *s;
		size_t n;
		int diff;
	} cases[] = {
		/* valid */
		{ L("null"), SAME }, { L("true"), SAME }, { L("false"), SAME },
		{ L("0"), SAME }, { L("-0"), SAME }, { L("1"), SAME }, { L("-1"), SAME },
		{ L("123"), SAME }, { L("0.5"), SAME }, { L("-0.5"), SAME }, { L("1e10"), SAME },
		{ L("1E+2"), SAME }, { L("1e-2"), SAME }, { L("2.5E-3"), SAME }, { L("1e-400"), SAME },
		{ L("9223372036854775807"), SAME }, { L("-9223372036854775808"), SAME },
		{ L("\"\""), SAME }, { L("\"abc\""), SAME }, { L("\"\\u00e9\""), SAME },
		{ L("\"\\ud83c\\udf77\""), SAME }, { L("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\""), SAME },
		{ L("\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x8d\xb7\""), SAME }, { L("\"\x7f\""), SAME },
		{ L("\"\xf4\x8f\xbf\xbf\""), SAME }, { L("\"\xef\xbf\xbf\""), SAME },
		{ L("\"\xed\x9f\xbf\xee\x80\x80\""), SAME }, { L("\"\\uFFFF\\uE000\""), SAME },
		{ L("[]"), SAME }, { L("{}"), SAME }, { L("[1,2,3]"), SAME },
		{ L("[[],[[]],{}]"), SAME }, { L("{\"a\":{\"b\":{\"c\":[1,{\"d\":null}]}}}"), SAME },
		{ L("{\"a\":1,\"b\":2}"), SAME }, { L(" \t\r\n[ 1 , 2 ] \n"), SAME },
		{ L("{\"a\":[1,2],\"A\":true}"), SAME }, { L("{\"\":0}"), SAME },
		{ L("{\"a\":{\"a\":1}}"), SAME }, { L("[{\"a\":1},{\"a\":2}]"), SAME },
		{ L("{\"\\u00e9\":1,\"\xc3\xa9x\":2}"), SAME },
		{ L("{\"name\":\"Ch\\u00e2teau Margaux\",\"vintage\":2015,\"price\":1234.5,"
		    "\"tags\":[\"red\",\"bordeaux\"],\"organic\":false,\"notes\":null}"), SAME },
		{ L("[[[[[[[[[[[[[[[[[[[[\"deep\"]]]]]]]]]]]]]]]]]]]]"), SAME },
		{ L("{\"a\":{\"b\":{\"c\":{\"d\":{\"e\":{\"f\":{}}}}}}}"), SAME },
		/* invalid */
		{ L(""), SAME }, { L(" "), SAME }, { L("["), SAME }, { L("]"), SAME }, { L("{"), SAME },
		{ L("}"), SAME }, { L("[1,]"), SAME }, { L("{\"a\":1,}"), SAME }, { L("[1 2]"), SAME },
		{ L("{\"a\" 1}"), SAME }, { L("{\"a\":}"), SAME }, { L("{1:2}"), SAME },
		{ L("{'a':1}"), SAME }, { L("01"), SAME }, { L("1."), SAME }, { L(".5"), SAME },
		{ L("+1"), SAME }, { L("-"), SAME }, { L("1e"), SAME }, { L("1e+"), SAME },
		{ L("NaN"), SAME }, { L("Infinity"), SAME }, { L("-Infinity"), SAME },
		{ L("0x10"), SAME }, { L("tru"), SAME }, { L("truex"), SAME }, { L("nul"), SAME },
		{ L("[] []"), SAME }, { L("\"abc"), SAME }, { L("\"\\x\""), SAME },
		{ L("\"\\u12\""), SAME }, { L("\"\\ud800\""), SAME }, { L("\"\\udc00\""), SAME },
		{ L("\"\\ud800\\u0041\""), SAME }, { L("\"\x01\""), SAME }, { L("\"\t\""), SAME },
		{ L("\"\xc0\x80\""), SAME }, { L("\"\xc1\xbf\""), SAME }, { L("\"\xe0\x80\x80\""), SAME },
		{ L("\"\xed\xa0\x80\""), SAME }, { L("\"\xf0\x80\x80\x80\""), SAME },
		{ L("\"\xf4\x90\x80\x80\""), SAME }, { L("\"\xf5\x80\x80\x80\""), SAME },
		{ L("\"\xff\""), SAME }, { L("\"\x80\""), SAME }, { L("\"\xc3\""), SAME },
		{ L("\"\xe2\x82\""), SAME }, { L("\xef\xbb\xbf{}"), SAME },
		{ L("{\"a\":1,\"a\":2}"), SAME }, { L("{\"a\":1,\"\\u0061\":2}"), SAME },
		{ L("{\"x\":{\"k\":1,\"k\":2}}"), SAME }, { L("/* c */ 1"), SAME },
		{ L("[1]x"), SAME }, { L("\0"), SAME }, { L("1\0"), EOFNUL }, { L("[\"a\",\n]"), SAME },
		{ L("{\"a\":[1,{\"b\":2]}"), SAME }, { L("\"\\u0041\\"), SAME },
		/* deliberate differences */
		{ L("\"\\u0000\""), NUL }, { L("[\"a\\u0000b\"]"), NUL },
		{ L("123456789012345678901234567890"), BIG }, { L("-9223372036854775809"), BIG },
		{ L("9223372036854775808"), BIG }, { L("1e400"), BIG }, { L("[-1E400]"), BIG },
		{ L("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[0]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"), DEPTH },
	};
	size_t ncases = sizeof(cases) / sizeof(cases[0]), compared = 0;
	cr_assert_geq(ncases, 60);
	for (size_t i = 0; i < ncases; i++) {
		const char *s = cases[i].s;
		size_t n = cases[i].n;
		json_error_t jerr;
		json_t *j = json_loadb(s, n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
		struct json_error err;
		struct json_doc *d = json_parse(s, n, NULL, &err);
		switch (cases[i].diff) {
		case SAME:
			cr_assert_eq(d != NULL, j != NULL, "case %zu %.*s: ours %s (%s), jansson %s (%s)",
				     i, (int)n, s, d ? "accepts" : "rejects", d ? "" : err.msg,
				     j ? "accepts" : "rejects", j ? "" : jerr.text);
			if (d && j) {
				same_tree(json_root(d), j, s);
				compared++;
			}
			break;
		case NUL:
		case BIG:
			cr_assert_null(j, "case %zu: jansson now accepts %s", i, s);
			cr_assert_not_null(d, "case %zu: %s: %s", i, s, err.msg);
			break;
		case DEPTH:
		case EOFNUL:
			cr_assert_not_null(j, "case %zu: %s", i, jerr.text);
			cr_assert_null(d);
			cr_assert_eq(err.too_large, cases[i].diff == DEPTH);
			break;
		}
		json_doc_free(d);
		json_decref(j);
	}
	cr_assert_geq(compared, 40);
}

/* json_scan_top_string: 0 and the bytes, or -1 (scan_id below). */
static int scan_id(const char *text, char *out)
{
	const char *v;
	size_t n;
	out[0] = 0;
	if (json_scan_top_string(text, strlen(text), "id", &v, &n))
		return -1;
	memcpy(out, v, n);
	out[n] = 0;
	return 0;
}

WM_TEST(json, scan_top_string_finds_only_the_top_level_member)
{
	char got[64];
	static const struct { const char *text, *want; } ok[] = {
		{"{\"id\":\"a1\"}", "a1"},
		{" { \"x\" : 1 , \"id\" : \"b2\" } ", "b2"},
		/* nested ids, braces and escaped quotes inside strings are skipped */
		{"{\"o\":{\"id\":\"no\"},\"a\":[\"}\",{\"id\":\"no\"},\"\\\"]\"],\"s\":\"{\\\\\",\"id\":\"c3\"}", "c3"},
		{"{\"n\":-1.5e3,\"t\":true,\"z\":null,\"id\":\"d4\",\"id2\":\"x\"}", "d4"},
		{"{\"idx\":\"no\",\"i\":\"no\",\"id\":\"e5\"}", "e5"},
		{"{\"id\":\"\"}", ""}, /* empty, found (body_id refuses it) */
		{"{\"id\":\"\\u00e9\",\"id\":\"f6\"}", NULL}, /* the first id has an escape: -1, never the second */
	};
	for (unsigned i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int rc = scan_id(ok[i].text, got);
		if (ok[i].want) {
			cr_assert_eq(rc, 0, "%s", ok[i].text);
			cr_assert_str_eq(got, ok[i].want, "%s", ok[i].text);
		} else {
			cr_assert_eq(rc, -1, "%s: got %s", ok[i].text, got);
		}
	}
	static const char *const none[] = {
		"", "[\"id\",\"x\"]", "{}", "{\"o\":{\"id\":\"x\"}}", "{\"id\":5}", "{\"id\":null}",
		"{\"i\\u0064\":\"x\"}", "\"id\"", "{\"a\" 1,\"id\":\"x\"}",
	};
	for (unsigned i = 0; i < sizeof(none) / sizeof(none[0]); i++)
		cr_assert_eq(scan_id(none[i], got), -1, "%s: got %s", none[i], got);
	/* every prefix of a body: never past its end (ASan), found only when whole */
	const char *body = "{\"o\":{\"k\":[1,\"]\"]},\"id\":\"ord_1\"}";
	size_t bl = strlen(body);
	for (size_t n = 0; n <= bl; n++) {
		char *cut = malloc(n ? n : 1); /* exactly n bytes: ASan sees any over-read */
		cr_assert_not_null(cut);
		memcpy(cut, body, n);
		const char *v;
		size_t vl;
		int rc = json_scan_top_string(cut, n, "id", &v, &vl);
		cr_assert_eq(rc, n >= bl - 1 ? 0 : -1, "prefix of %zu bytes: %d", n, rc);
		if (!rc)
			cr_assert(vl == 5 && !memcmp(v, "ord_1", 5));
		free(cut);
	}
}

/* The scratch one thread keeps between parses (json.c, json_scratch): a
 * parse that failed inside objects leaves no member behind for the next
 * (whose same keys are not duplicates), plain strings read in place and
 * escaped ones decoded give the same values, and a thread that parsed and
 * exited frees its scratch (the leak check at the end of the test). */
static void *parse_in_thread(void *arg)
{
	(void)arg;
	const char *t = "{\"k\":[\"v\",{\"x\":1}]}";
	struct json_doc *d = json_parse(t, strlen(t), NULL, NULL);
	json_doc_free(d);
	return d ? (void *)1 : NULL;
}

WM_TEST(json, the_kept_scratch_carries_nothing_to_the_next_parse)
{
	struct json_error err;
	for (int round = 0; round < 3; round++) {
		/* fails with "a" and "b" (and "c" one level down) still on the stacks */
		cr_assert_null(json_parse(L("{\"a\":1,\"b\":{\"c\":2,\"c\""), NULL, &err));
		struct json_doc *d = parse_ok(L("{\"a\":1,\"b\":{\"c\":2}}"));
		cr_assert_eq(json_root(d)->len, 2);
		json_doc_free(d);
		/* a duplicate is still one, plain or escaped */
		parse_bad(L("{\"a\":1,\"a\":2}"), 7, 0);
		parse_bad(L("{\"a\":1,\"\\u0061\":2}"), 7, 0);
	}
	/* plain, escaped and non-ASCII strings side by side decode alike */
	struct json_doc *d = parse_ok(L("[\"plain\",\"pl\\u0061in\",\"pl\\\"ain\",\"pl\xc3\xa9in\",\"\"]"));
	const struct json_value *r = json_root(d);
	cr_assert_str_eq(r->u.items[0].u.str, "plain");
	cr_assert_str_eq(r->u.items[1].u.str, "plain");
	cr_assert_str_eq(r->u.items[2].u.str, "pl\"ain");
	cr_assert_str_eq(r->u.items[3].u.str, "pl\xc3\xa9in");
	cr_assert_eq(r->u.items[4].len, 0);
	json_doc_free(d);
	/* a document larger than what is kept still parses, and the next too */
	size_t n = 300000;
	char *big = malloc(n + 3);
	cr_assert_not_null(big);
	big[0] = '"';
	memset(big + 1, 'x', n);
	big[n + 1] = '"';
	struct json_limits lim = {.max_string = (uint32_t)n, .max_bytes = n + 2};
	d = parse_lim(big, n + 2, &lim, &err);
	cr_assert_not_null(d, "%s", err.msg);
	cr_assert_eq(json_root(d)->len, n);
	json_doc_free(d);
	free(big);
	d = parse_ok(L("{\"a\":1}"));
	json_doc_free(d);
	pthread_t t;
	void *ok = NULL;
	cr_assert_eq(pthread_create(&t, NULL, parse_in_thread, NULL), 0);
	cr_assert_eq(pthread_join(t, &ok), 0);
	cr_assert_not_null(ok);
}

/* {"k0":0,...,"k<n-1>":n-1} with `extra` spliced in before the '}'. */
static char *object_of(unsigned n, const char *extra, size_t *len)
{
	size_t cap = (size_t)n * 24 + strlen(extra) + 8, k = 0;
	char *t = malloc(cap);
	cr_assert_not_null(t);
	t[k++] = '{';
	for (unsigned i = 0; i < n; i++)
		k += (size_t)snprintf(t + k, cap - k, "%s\"k%u\":%u", i ? "," : "", i, i);
	k += (size_t)snprintf(t + k, cap - k, "%s}", extra);
	*len = k;
	return t;
}

/* Duplicates at and past the size where an object switches from comparing
 * keys to its hash chains (json.c JSON_LINEAR_KEYS = 8), and objects of
 * both kinds nested in each other. */
WM_TEST(json, duplicate_keys_across_the_linear_bound)
{
	for (unsigned n = 1; n <= 20; n++) {
		for (unsigned d = 0; d < n; d++) {
			char extra[32];
			snprintf(extra, sizeof(extra), ",\"k%u\":0", d);
			size_t len;
			char *t = object_of(n, extra, &len);
			struct json_error err;
			struct json_doc *doc = json_parse(t, len, NULL, &err);
			cr_assert_null(doc, "%u members, k%u repeated: accepted", n, d);
			cr_assert(strstr(err.msg, "duplicate key"), "%s", err.msg);
			free(t);
		}
		size_t len;
		char *t = object_of(n, ",\"kx\":0", &len);
		struct json_doc *doc = parse_ok(t, len);
		cr_assert_eq(json_root(doc)->len, n + 1);
		json_doc_free(doc);
		free(t);
	}
	/* a large object inside a small one and the reverse: the same keys at
	 * two levels are no duplicates, and each level still finds its own */
	static const char *const ok[] = {
		"{\"a\":{\"k0\":0,\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8,\"k9\":9},\"k0\":0}",
		"{\"k0\":0,\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8,\"o\":{\"k0\":0,\"k8\":1},\"k9\":9}",
		"{\"k0\":0,\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8,\"o\":{\"k0\":0,\"k1\":1,\"k2\":2,"
		"\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8},\"k9\":9}",
	};
	for (unsigned i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		json_doc_free(parse_ok(ok[i], strlen(ok[i])));
	static const char *const dup[] = {
		"{\"a\":{\"k0\":0,\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8,\"k3\":9},\"k0\":0}",
		"{\"k0\":0,\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8,\"o\":{\"k0\":0,\"k8\":1},\"o\":9}",
		"{\"k0\":0,\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8,\"o\":{\"k0\":0,\"k1\":1,\"k2\":2,"
		"\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8},\"k2\":9}",
	};
	for (unsigned i = 0; i < sizeof(dup) / sizeof(dup[0]); i++) {
		struct json_error err;
		cr_assert_null(json_parse(dup[i], strlen(dup[i]), NULL, &err), "accepted %s", dup[i]);
		cr_assert(strstr(err.msg, "duplicate key"), "%s", err.msg);
	}
}

/* json_parse_keep: the listed top-level members are built exactly as
 * json_parse builds them; the others are stepped over whatever they hold;
 * the grammar of what is read, duplicates and truncation still fail. */
WM_TEST(json, parse_keep_builds_only_the_listed_top_level_members)
{
	static const char *const keep[] = {"id", "legs", "total", NULL};
	const char *text =
		"{\"id\":\"o1\",\"lines\":[{\"s\":\"a]\\\"}\"},[1,{\"x\":null}]],\"legs\":[{\"id\":\"L\",\"q\":2}],"
		"\"n\":-1.5e3,\"t\":true,\"z\":null,\"s\":\"{\\\\\",\"o\":{\"id\":\"inner\"},\"total\":12.50}";
	struct json_error err;
	struct json_doc *k = json_parse_keep(text, strlen(text), keep, &err);
	cr_assert_not_null(k, "%s", err.msg);
	struct json_doc *w = parse_ok(text, strlen(text));
	const struct json_value *kr = json_root(k), *wr = json_root(w);
	cr_assert_eq(kr->len, wr->len, "every member up to the last listed one is there, skipped or built");
	cr_assert_str_eq(json_get(kr, "id")->u.str, "o1");
	cr_assert_str_eq(json_get(kr, "total")->u.num, "12.50");
	const struct json_value *legs = json_get(kr, "legs");
	cr_assert_eq(legs->type, JSON_ARRAY);
	cr_assert_eq(legs->len, 1);
	cr_assert_str_eq(json_get(&legs->u.items[0], "id")->u.str, "L", "nested members of a kept one are built");
	cr_assert_str_eq(json_get(&legs->u.items[0], "q")->u.num, "2");
	for (uint32_t i = 0; i < kr->len; i++) {
		const struct json_member *m = &kr->u.members[i];
		cr_assert_str_eq(m->key, wr->u.members[i].key, "keys in input order");
		int listed = !strcmp(m->key, "id") || !strcmp(m->key, "legs") || !strcmp(m->key, "total");
		if (!listed)
			cr_assert(m->value.type == JSON_NULL && m->value.len != 0, "%s is skipped", m->key);
	}
	json_doc_free(k);
	json_doc_free(w);
	/* what is still refused */
	static const char *const bad[] = {
		"{\"id\":\"o1\",\"id\":\"o2\"}",           /* duplicate, kept */
		"{\"x\":1,\"x\":2}",                       /* duplicate, skipped */
		"{\"x\":[1,2,\"id\":\"a\"}",               /* a skipped value that does not close: nothing after */
		"{\"x\":\"abc",                            /* truncated in a skipped string */
		"{\"id\":\"o1\",\"x\":}",                  /* no value */
		"{\"id\":01}",                             /* grammar of a kept value */
		"{\"x\":1",                                /* no closing brace */
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct json_doc *d = json_parse_keep(bad[i], strlen(bad[i]), keep, &err);
		cr_assert_null(d, "accepted %s", bad[i]);
		cr_assert_lt(err.offset, strlen(bad[i]) + 1);
	}
	/* every prefix of the text: refused (the last listed value must be
	 * followed by ',' or '}'), never read past its end (ASan) */
	size_t tl = strlen(text);
	for (size_t n = 0; n < tl; n++) {
		char *cut = malloc(n ? n : 1);
		cr_assert_not_null(cut);
		memcpy(cut, text, n);
		cr_assert_null(json_parse_keep(cut, n, keep, &err), "prefix of %zu accepted", n);
		free(cut);
	}
	/* once every listed member is built, the rest is not read: members after
	 * it are not in the object, whatever they hold */
	const char *early = "{\"x\":1,\"total\":2,\"legs\":[],\"id\":\"e\",\"after\":[}";
	struct json_doc *de = json_parse_keep(early, strlen(early), keep, &err);
	cr_assert_not_null(de, "%s", err.msg);
	cr_assert_eq(json_root(de)->len, 4);
	cr_assert_str_eq(json_get(json_root(de), "id")->u.str, "e");
	json_doc_free(de);
	/* a key with a NUL inside that starts like a listed one is not it (found
	 * by fuzz_json: the comparison read past the listed key) */
	const char *nul = "{\"id\\u0000xyz\":[1],\"id\":\"o\"}";
	struct json_doc *dn = json_parse_keep(nul, strlen(nul), keep, &err);
	cr_assert_not_null(dn, "%s", err.msg);
	cr_assert_eq(json_root(dn)->u.members[0].value.type, JSON_NULL, "skipped");
	cr_assert_str_eq(json_get(json_root(dn), "id")->u.str, "o");
	json_doc_free(dn);
	/* an array root, or an empty list, is parsed whole */
	struct json_doc *a = json_parse_keep(L("[{\"x\":1}]"), keep, &err);
	cr_assert_not_null(a);
	cr_assert_str_eq(json_get(&json_root(a)->u.items[0], "x")->u.num, "1");
	json_doc_free(a);
}
