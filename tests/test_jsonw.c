/*
 * test_jsonw.c -- the streaming JSON writer: escaping, UTF-8 repair,
 * commas and nesting, fixed-point formatting, sticky errors, and the
 * parse -> jw_value -> parse round trip.
 */
#include "tests/wm_test.h"
#include "net/buf.h"
#include "net/json.h"
#include "net/jsonw.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define L(s) s, sizeof(s) - 1

/* The buffer's contents must equal `want` exactly. */
static void out_is(const struct buf *b, const char *want, size_t wn)
{
	cr_assert_eq(b->len, wn, "got %zu bytes [%.*s], want %zu [%.*s]", b->len, (int)b->len,
		     b->data ? b->data : "", wn, (int)wn, want);
	cr_assert_eq(memcmp(b->data, want, wn), 0, "got [%.*s], want [%.*s]", (int)b->len,
		     b->data, (int)wn, want);
}

/* jw_strn(in) must produce exactly `want`. */
static void str_is(const char *in, size_t n, const char *want, size_t wn)
{
	struct buf b;
	buf_init(&b, 0);
	struct jw w;
	jw_init(&w, &b);
	jw_strn(&w, in, n);
	cr_assert_eq(w.err, 0);
	out_is(&b, want, wn);
	buf_free(&b);
}

WM_TEST(jw, escape_every_control_byte)
{
	static const char *want[0x20] = {
		"\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006",
		"\\u0007", "\\b", "\\t", "\\n", "\\u000b", "\\f", "\\r", "\\u000e", "\\u000f",
		"\\u0010", "\\u0011", "\\u0012", "\\u0013", "\\u0014", "\\u0015", "\\u0016",
		"\\u0017", "\\u0018", "\\u0019", "\\u001a", "\\u001b", "\\u001c", "\\u001d",
		"\\u001e", "\\u001f",
	};
	for (unsigned c = 0; c < 0x20; c++) {
		char in[3] = { 'a', (char)c, 'z' };
		char exp[16];
		int n = snprintf(exp, sizeof(exp), "\"a%sz\"", want[c]);
		str_is(in, 3, exp, (size_t)n);
	}
	str_is(L("\x7f"), L("\"\\u007f\""));
	/* All 33 at once, and the output parses back to the same bytes. */
	char all[0x21];
	for (unsigned c = 0; c < 0x20; c++)
		all[c] = (char)c;
	all[0x20] = 0x7f;
	struct buf b;
	buf_init(&b, 0);
	cr_assert_eq(jw_escape(&b, all, sizeof(all)), 0);
	for (size_t i = 0; i < b.len; i++)
		cr_assert((unsigned char)b.data[i] >= 0x20 && b.data[i] != 0x7f);
	struct json_doc *d = json_parse(b.data, b.len, NULL, NULL);
	cr_assert_not_null(d);
	cr_assert_eq(json_root(d)->len, sizeof(all));
	cr_assert_eq(memcmp(json_root(d)->u.str, all, sizeof(all)), 0);
	json_doc_free(d);
	buf_free(&b);
}

WM_TEST(jw, escape_quotes_backslashes)
{
	str_is(L("say \"hi\""), L("\"say \\\"hi\\\"\""));
	str_is(L("C:\\dir\\"), L("\"C:\\\\dir\\\\\""));
	str_is(L("a/b"), L("\"a/b\""));
	str_is(L(""), L("\"\""));
	str_is(L("\"\\"), L("\"\\\"\\\\\""));
}

WM_TEST(jw, utf8_passthrough)
{
	str_is(L("Ch\xc3\xa2teau \xe2\x82\xac \xf0\x9f\x8d\xb7"),
	       L("\"Ch\xc3\xa2teau \xe2\x82\xac \xf0\x9f\x8d\xb7\""));
	str_is(L("\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf"),
	       L("\"\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\""));
	str_is(L("\xed\x9f\xbf\xee\x80\x80"), L("\"\xed\x9f\xbf\xee\x80\x80\""));
}

#define FFFD "\xef\xbf\xbd"

WM_TEST(jw, invalid_utf8_replaced)
{
	str_is(L("a\xff" "b"), L("\"a" FFFD "b\""));
	str_is(L("\xc0\x80"), L("\"" FFFD FFFD "\""));             /* overlong */
	str_is(L("\xe0\x80\x80"), L("\"" FFFD FFFD FFFD "\""));     /* overlong */
	str_is(L("\xed\xa0\x80"), L("\"" FFFD FFFD FFFD "\""));     /* surrogate */
	str_is(L("\xf4\x90\x80\x80"), L("\"" FFFD FFFD FFFD FFFD "\"")); /* > U+10FFFF */
	str_is(L("\xe2\x82"), L("\"" FFFD FFFD "\""));             /* truncated at end */
	str_is(L("\xe2\x82x"), L("\"" FFFD FFFD "x\""));           /* truncated */
	str_is(L("\xc3\xc3\xa9"), L("\"" FFFD "\xc3\xa9\""));      /* bad then good */
	str_is(L("\x80\xbf"), L("\"" FFFD FFFD "\""));             /* stray continuations */
	for (unsigned c = 0xF5; c <= 0xFF; c++) {
		char in[1] = { (char)c };
		str_is(in, 1, L("\"" FFFD "\""));
	}
	/* The output is always accepted by the strict parser. */
	struct buf b;
	buf_init(&b, 0);
	char junk[256];
	for (int i = 0; i < 256; i++)
		junk[i] = (char)(255 - i);
	cr_assert_eq(jw_escape(&b, junk, sizeof(junk)), 0);
	struct json_doc *d = json_parse(b.data, b.len, NULL, NULL);
	cr_assert_not_null(d);
	json_doc_free(d);
	buf_free(&b);
}

WM_TEST(jw, nesting_and_commas)
{
	struct buf b;
	buf_init(&b, 0);
	struct jw w;
	jw_init(&w, &b);
	jw_obj_begin(&w);
	jw_kstr(&w, "name", "Margaux");
	jw_kint(&w, "vintage", 2015);
	jw_kbool(&w, "organic", 1);
	jw_knull(&w, "notes");
	jw_key(&w, "tags");
	jw_arr_begin(&w);
	jw_str(&w, "red");
	jw_arr_begin(&w);
	jw_arr_end(&w);
	jw_obj_begin(&w);
	jw_obj_end(&w);
	jw_int(&w, -1);
	jw_uint(&w, UINT64_MAX);
	jw_bool(&w, 0);
	jw_null(&w);
	jw_arr_end(&w);
	jw_keyn(&w, "a\0b", 3);
	jw_raw(&w, "{\"x\":[1,2]}", 11);
	jw_key(&w, "price");
	jw_fixed(&w, 1230, 2);
	jw_key(&w, "nested");
	jw_obj_begin(&w);
	jw_key(&w, "o");
	jw_obj_begin(&w);
	jw_kint(&w, "min", INT64_MIN);
	jw_kint(&w, "max", INT64_MAX);
	jw_obj_end(&w);
	jw_obj_end(&w);
	jw_obj_end(&w);
	cr_assert_eq(w.err, 0);
	cr_assert_eq(w.depth, 0);
	const char *want =
		"{\"name\":\"Margaux\",\"vintage\":2015,\"organic\":true,\"notes\":null,"
		"\"tags\":[\"red\",[],{},-1,18446744073709551615,false,null],"
		"\"a\\u0000b\":{\"x\":[1,2]},\"price\":12.30,"
		"\"nested\":{\"o\":{\"min\":-9223372036854775808,\"max\":9223372036854775807}}}";
	out_is(&b, want, strlen(want));
	struct json_doc *d = json_parse(b.data, b.len, NULL, NULL);
	cr_assert_not_null(d);
	json_doc_free(d);
	buf_free(&b);
}

WM_TEST(jw, scalars_at_top_level)
{
	struct buf b;
	buf_init(&b, 0);
	struct jw w;
	jw_init(&w, &b);
	jw_int(&w, 0);
	out_is(&b, L("0"));
	buf_reset(&b);
	jw_init(&w, &b);
	jw_str(&w, "x");
	out_is(&b, L("\"x\""));
	buf_reset(&b);
	jw_init(&w, &b);
	jw_arr_begin(&w);
	jw_arr_end(&w);
	out_is(&b, L("[]"));
	buf_free(&b);
}

/* jw_fixed(v, scale) must produce exactly `want`. */
static void fixed_is(int64_t v, unsigned scale, const char *want)
{
	struct buf b;
	buf_init(&b, 0);
	struct jw w;
	jw_init(&w, &b);
	jw_fixed(&w, v, scale);
	cr_assert_eq(w.err, 0);
	out_is(&b, want, strlen(want));
	/* And it converts back exactly. */
	int64_t back;
	cr_assert_eq(json_text_to_fixed(b.data, b.len, scale, &back), 0, "%s", want);
	cr_assert_eq(back, v, "%s", want);
	buf_free(&b);
}

WM_TEST(jw, fixed)
{
	fixed_is(1230, 2, "12.30");
	fixed_is(-1230, 2, "-12.30");
	fixed_is(-5, 2, "-0.05");
	fixed_is(5, 2, "0.05");
	fixed_is(0, 2, "0.00");
	fixed_is(0, 0, "0");
	fixed_is(123, 0, "123");
	fixed_is(-123, 0, "-123");
	fixed_is(100, 2, "1.00");
	fixed_is(1, 1, "0.1");
	fixed_is(12, 2, "0.12");   /* as many digits as the scale */
	fixed_is(-12, 2, "-0.12");
	fixed_is(123, 2, "1.23");  /* one more */
	fixed_is(123456789012345678, 18, "0.123456789012345678");
	fixed_is(-1, 18, "-0.000000000000000001");
	fixed_is(INT64_MAX, 18, "9.223372036854775807");
	fixed_is(INT64_MIN, 18, "-9.223372036854775808");
	fixed_is(INT64_MIN, 0, "-9223372036854775808");
	fixed_is(INT64_MAX, 2, "92233720368547758.07");
	/* In an array, with commas. */
	struct buf b;
	buf_init(&b, 0);
	struct jw w;
	jw_init(&w, &b);
	jw_arr_begin(&w);
	jw_fixed(&w, 1, 2);
	jw_fixed(&w, -1, 2);
	jw_arr_end(&w);
	out_is(&b, L("[0.01,-0.01]"));
	/* scale > 18 is an error. */
	buf_reset(&b);
	jw_init(&w, &b);
	jw_fixed(&w, 1, 19);
	cr_assert_neq(w.err, 0);
	cr_assert_eq(b.len, 0);
	buf_free(&b);
}

/* jb_fixed and buf_put_dec write in place when the buffer has room for any
 * number (48 / 24 bytes) and copy the exact bytes otherwise: both write
 * what jw_fixed / printf write, after text already in the buffer, and a
 * fixed buffer with room for exactly the number (less than the in-place
 * room) takes it, one byte less refuses it and keeps what it had. */
WM_TEST(jw, fixed_shape_numbers_in_place_and_at_the_bound)
{
	static const int64_t vals[] = {0, 1, -1, 5, 12, 123, -1230, 99999, 1234567890123LL, INT64_MAX, INT64_MIN};
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
		for (unsigned sc = 0; sc <= 18; sc++) {
			char want[64];
			size_t wl = jw_fixed_text(vals[i], sc, want);
			struct buf b;
			buf_init(&b, 0);
			cr_assert_eq(buf_reserve(&b, 256), 0); /* room: the in-place path */
			cr_assert_eq(BUF_LIT(&b, "x="), 0);
			cr_assert_eq(jb_fixed(&b, vals[i], sc), 0);
			cr_assert(b.len == 2 + wl && !memcmp(b.data + 2, want, wl), "%lld/%u", (long long)vals[i], sc);
			cr_assert_eq(json_text_to_fixed(b.data + 2, wl, sc, &(int64_t){0}), 0);
			buf_free(&b);
			/* a fixed buffer with room for "x=" and the number, and one byte less */
			for (size_t less = 0; less < 2; less++) {
				char mem[64];
				buf_init_fixed(&b, mem, 2 + wl - less);
				cr_assert_eq(BUF_LIT(&b, "x="), 0);
				cr_assert_eq(jb_fixed(&b, vals[i], sc), less ? -1 : 0, "%lld/%u less %zu", (long long)vals[i],
					     sc, less);
				cr_assert_eq(b.len, less ? 2 : 2 + wl);
				cr_assert(!memcmp(mem, "x=", 2) && (less || !memcmp(mem + 2, want, wl)));
			}
		}
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		char want[32];
		int wl = snprintf(want, sizeof(want), "%lld", (long long)vals[i]);
		for (size_t less = 0; less < 2; less++) {
			char mem[64];
			struct buf b;
			buf_init_fixed(&b, mem, (size_t)wl + 2 - less);
			cr_assert_eq(BUF_LIT(&b, "x="), 0);
			cr_assert_eq(buf_put_dec(&b, vals[i]), less ? -1 : 0);
			cr_assert_eq(b.len, less ? 2 : 2 + (size_t)wl);
			cr_assert(less || !memcmp(mem + 2, want, (size_t)wl), "%lld", (long long)vals[i]);
		}
	}
}

WM_TEST(jw, sticky_error_on_buffer_bound)
{
	struct buf b;
	buf_init(&b, 16);
	struct jw w;
	jw_init(&w, &b);
	jw_arr_begin(&w);
	jw_str(&w, "0123456789"); /* [ + 12 = 13 bytes */
	cr_assert_eq(w.err, 0);
	jw_str(&w, "abc"); /* , + 5 -> 19 > 16 */
	cr_assert_neq(w.err, 0);
	size_t len = b.len;
	cr_assert_leq(len, 16);
	int err = w.err;
	/* Everything after is a no-op, even what would fit. */
	jw_arr_end(&w);
	jw_int(&w, 1);
	jw_null(&w);
	jw_obj_begin(&w);
	jw_key(&w, "k");
	jw_value(&w, NULL);
	cr_assert_eq(b.len, len);
	cr_assert_eq(w.err, err);
	buf_free(&b);

	/* Exactly at the bound is fine; one byte more is not. */
	buf_init(&b, 7);
	jw_init(&w, &b);
	jw_str(&w, "abcde"); /* 7 bytes */
	cr_assert_eq(w.err, 0);
	out_is(&b, L("\"abcde\""));
	jw_init(&w, &b);
	buf_reset(&b);
	jw_str(&w, "abcdef"); /* 8 bytes */
	cr_assert_neq(w.err, 0);
	cr_assert_eq(b.len, 0); /* a failed string is rolled back */
	buf_free(&b);

	/* jw_escape rolls back too. */
	buf_init(&b, 8);
	buf_puts(&b, "xy");
	cr_assert_eq(jw_escape(&b, "\x01\x02", 2), -1);
	out_is(&b, L("xy"));
	buf_free(&b);
}

WM_TEST(jw, depth_bound)
{
	struct buf b;
	buf_init(&b, 0);
	struct jw w;
	jw_init(&w, &b);
	for (int i = 0; i < JW_MAX_DEPTH; i++)
		jw_arr_begin(&w);
	cr_assert_eq(w.err, 0);
	for (int i = 0; i < JW_MAX_DEPTH; i++)
		jw_arr_end(&w);
	cr_assert_eq(w.err, 0);
	cr_assert_eq(b.len, 2 * JW_MAX_DEPTH);
	buf_reset(&b);
	jw_init(&w, &b);
	for (int i = 0; i <= JW_MAX_DEPTH; i++)
		jw_obj_begin(&w);
	cr_assert_neq(w.err, 0);
	cr_assert_eq(b.len, JW_MAX_DEPTH);
	/* Closing more than was opened is an error as well. */
	buf_reset(&b);
	jw_init(&w, &b);
	jw_arr_end(&w);
	cr_assert_neq(w.err, 0);
	cr_assert_eq(b.len, 0);
	buf_free(&b);
}

WM_TEST(jw, key_misuse)
{
	struct buf b;
	buf_init(&b, 0);
	struct jw w;
	jw_init(&w, &b);
	jw_key(&w, "top"); /* no enclosing object */
	cr_assert_neq(w.err, 0);
	cr_assert_eq(b.len, 0);
	jw_init(&w, &b);
	jw_obj_begin(&w);
	jw_key(&w, "a");
	jw_key(&w, "b"); /* a key where a value is due */
	cr_assert_neq(w.err, 0);
	out_is(&b, L("{\"a\":"));
	buf_reset(&b);
	jw_init(&w, &b);
	jw_obj_begin(&w);
	jw_key(&w, "a");
	jw_obj_end(&w); /* closing with a dangling key */
	cr_assert_neq(w.err, 0);
	buf_free(&b);
}

/* Deep structural equality of two parsed trees. */
static void same_value(const struct json_value *a, const struct json_value *b)
{
	cr_assert_eq(a->type, b->type);
	cr_assert_eq(a->len, b->len);
	switch (a->type) {
	case JSON_NUMBER:
		cr_assert_str_eq(a->u.num, b->u.num);
		break;
	case JSON_STRING:
		cr_assert_eq(memcmp(a->u.str, b->u.str, a->len), 0);
		break;
	case JSON_ARRAY:
		for (uint32_t i = 0; i < a->len; i++)
			same_value(&a->u.items[i], &b->u.items[i]);
		break;
	case JSON_OBJECT:
		for (uint32_t i = 0; i < a->len; i++) {
			cr_assert_eq(a->u.members[i].key_len, b->u.members[i].key_len);
			cr_assert_eq(memcmp(a->u.members[i].key, b->u.members[i].key,
					    a->u.members[i].key_len), 0);
			same_value(&a->u.members[i].value, &b->u.members[i].value);
		}
		break;
	default:
		break;
	}
}

WM_TEST(jw, round_trip)
{
	static const struct {
		const char *s;
		size_t n;
		const char *compact; /* expected jw_value output, NULL = same as input */
	} cases[] = {
		{ L("null"), NULL },
		{ L("[true,false,null]"), NULL },
		{ L("[-0,1e400,0.1,123456789012345678901234567890,1E-7,-1.5e+10]"), NULL },
		{ L(" { \"a\" : [ 1 , { } , [ ] ] ,\n \"b\" : \"x\" } "),
		  "{\"a\":[1,{},[]],\"b\":\"x\"}" },
		{ L("\"\\u0041\\u00e9\\ud83c\\udf77\\/\\u007f\\u0000\\u001f\\b\\f\\n\\r\\t\\\"\\\\\""),
		  "\"A\xc3\xa9\xf0\x9f\x8d\xb7/\\u007f\\u0000\\u001f\\b\\f\\n\\r\\t\\\"\\\\\"" },
		{ L("{\"z\":1,\"a\":2,\"m\":{\"k\\u0000\":[[[[\"deep\"]]]]}}"),
		  "{\"z\":1,\"a\":2,\"m\":{\"k\\u0000\":[[[[\"deep\"]]]]}}" },
		{ L("[\"Ch\xc3\xa2teau\",\"\x7f\"]"), "[\"Ch\xc3\xa2teau\",\"\\u007f\"]" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json_doc *d1 = json_parse(cases[i].s, cases[i].n, NULL, NULL);
		cr_assert_not_null(d1, "%s", cases[i].s);
		struct buf b1, b2;
		buf_init(&b1, 0);
		buf_init(&b2, 0);
		struct jw w;
		jw_init(&w, &b1);
		jw_value(&w, json_root(d1));
		cr_assert_eq(w.err, 0);
		const char *want = cases[i].compact ? cases[i].compact : cases[i].s;
		out_is(&b1, want, strlen(want));
		struct json_doc *d2 = json_parse(b1.data, b1.len, NULL, NULL);
		cr_assert_not_null(d2);
		same_value(json_root(d1), json_root(d2));
		jw_init(&w, &b2);
		jw_value(&w, json_root(d2));
		out_is(&b2, b1.data, b1.len);
		json_doc_free(d1);
		json_doc_free(d2);
		buf_free(&b1);
		buf_free(&b2);
	}
}

WM_TEST(jw, value_inside_writer)
{
	/* jw_value as a member value and as an array element. */
	struct json_doc *d = json_parse(L("{\"q\":[1,2]}"), NULL, NULL);
	cr_assert_not_null(d);
	struct buf b;
	buf_init(&b, 0);
	struct jw w;
	jw_init(&w, &b);
	jw_arr_begin(&w);
	jw_int(&w, 0);
	jw_value(&w, json_root(d));
	jw_obj_begin(&w);
	jw_key(&w, "doc");
	jw_value(&w, json_get(json_root(d), "q"));
	jw_obj_end(&w);
	jw_arr_end(&w);
	cr_assert_eq(w.err, 0);
	out_is(&b, L("[0,{\"q\":[1,2]},{\"doc\":[1,2]}]"));
	json_doc_free(d);
	buf_free(&b);
}

/* The reference for ASCII input with lone bytes from 0x80 up (each one
 * not well-formed UTF-8 on its own: U+FFFD): each byte on its own, by the
 * rules of jsonw.h (the writer scans 16 and 8 bytes at a time; this never
 * does). */
static size_t ref_escape_ascii(const unsigned char *s, size_t n, char *out)
{
	size_t o = 0;
	out[o++] = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];
		const char *sh = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\b' ? "\\b" : c == '\f' ? "\\f"
			       : c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
		if (sh)
			o += (size_t)sprintf(out + o, "%s", sh);
		else if (c < 0x20 || c == 0x7f)
			o += (size_t)sprintf(out + o, "\\u%04x", c);
		else if (c >= 0x80)
			o += (size_t)sprintf(out + o, "\xEF\xBF\xBD");
		else
			out[o++] = (char)c;
	}
	out[o++] = '"';
	return o;
}

/* Every byte at every position of runs of 1..40 plain bytes (so in every
 * lane of the 16-byte scan, of its overlapping last vector, of the 8-byte
 * scan, and in the bytewise tail), as a value and as a key: the output is
 * the reference's. */
WM_TEST(jw, word_scan_finds_every_special_byte_in_every_lane)
{
	unsigned char in[40];
	char want[40 * 6 + 8];
	for (size_t n = 1; n <= sizeof(in); n++)
		for (size_t pos = 0; pos < n; pos++)
			for (unsigned c = 0; c < 0x100; c++) {
				for (size_t i = 0; i < n; i++)
					in[i] = (unsigned char)('a' + i % 26);
				in[pos] = (unsigned char)c;
				size_t wn = ref_escape_ascii(in, n, want);
				str_is((const char *)in, n, want, wn);
				struct buf b;
				buf_init(&b, 0);
				struct jw w;
				jw_init(&w, &b);
				jw_obj_begin(&w);
				jw_keyn(&w, (const char *)in, n);
				jw_null(&w);
				jw_obj_end(&w);
				cr_assert_eq(w.err, 0);
				cr_assert_eq(b.len, wn + 7, "key of %zu bytes, 0x%02x at %zu", n, c, pos);
				cr_assert_eq(memcmp(b.data + 1, want, wn), 0, "key 0x%02x at %zu", c, pos);
				cr_assert_eq(memcmp(b.data + 1 + wn, ":null}", 6), 0);
				buf_free(&b);
			}
}

/* One member written both ways into an object: the fused writer (kind) and
 * jw_keyn followed by the value's own writer.  kind: 0 string, 1 int,
 * 2 fixed (scale sc), 3 bool, 4 null.  `before` members precede it. */
static void member_both(int kind, const char *key, size_t klen, const char *s, size_t slen, int64_t v,
			unsigned sc, int before)
{
	struct buf a, b;
	buf_init(&a, 0);
	buf_init(&b, 0);
	struct jw wa, wb;
	jw_init(&wa, &a);
	jw_init(&wb, &b);
	jw_obj_begin(&wa);
	jw_obj_begin(&wb);
	for (int i = 0; i < before; i++) {
		jw_kint(&wa, "n", i);
		jw_key(&wb, "n");
		jw_int(&wb, i);
	}
	switch (kind) {
	case 0: jw_member_str(&wa, key, klen, s, slen); break;
	case 1: jw_member_int(&wa, key, klen, v); break;
	case 2: jw_member_fixed(&wa, key, klen, v, sc); break;
	case 3: jw_member_bool(&wa, key, klen, (int)v); break;
	default: jw_member_null(&wa, key, klen); break;
	}
	jw_keyn(&wb, key, klen);
	switch (kind) {
	case 0: jw_strn(&wb, s, slen); break;
	case 1: jw_int(&wb, v); break;
	case 2: jw_fixed(&wb, v, sc); break;
	case 3: jw_bool(&wb, (int)v); break;
	default: jw_null(&wb); break;
	}
	jw_obj_end(&wa);
	jw_obj_end(&wb);
	cr_assert_eq(!!wa.err, !!wb.err, "kind %d key [%.*s]: err %d vs %d", kind, (int)klen, key, wa.err, wb.err);
	if (!wa.err)
		out_is(&a, b.data, b.len);
	/* the pre-quoted form (jw_kstr and friends) of a plain key writes the
	 * same; so does the fixed-shape form of the value (jb_*) */
	int plain_key = klen > 0;
	for (size_t i = 0; i < klen; i++)
		plain_key &= key[i] >= 0x20 && key[i] < 0x7f && key[i] != '"' && key[i] != '\\';
	if (plain_key && klen < 60 && !wb.err) {
		char q[64];
		int ql = snprintf(q, sizeof(q), "\"%.*s\":", (int)klen, key);
		struct buf c;
		buf_init(&c, 0);
		struct jw wc;
		jw_init(&wc, &c);
		jw_obj_begin(&wc);
		for (int i = 0; i < before; i++)
			jw_kint(&wc, "n", i);
		switch (kind) {
		case 0: jw_q_str(&wc, q, (size_t)ql, s, slen); break;
		case 1: jw_q_int(&wc, q, (size_t)ql, v); break;
		case 2: jw_q_fixed(&wc, q, (size_t)ql, v, sc); break;
		case 3: jw_q_bool(&wc, q, (size_t)ql, (int)v); break;
		default: jw_q_null(&wc, q, (size_t)ql); break;
		}
		jw_obj_end(&wc);
		cr_assert_eq(wc.err, 0, "kind %d key [%.*s]", kind, (int)klen, key);
		out_is(&c, b.data, b.len);
		/* the value alone through jb_*: the bytes after the key */
		buf_reset(&c);
		int bad = 0;
		switch (kind) {
		case 0: bad = slen == strlen(s) ? jb_str(&c, s) : jw_escape(&c, s, slen); break;
		case 1: bad = buf_put_dec(&c, v); break;
		case 2: bad = jb_fixed(&c, v, sc); break;
		case 3: bad = jb_bool(&c, (int)v); break;
		default: bad = jb_str_or_null(&c, NULL); break;
		}
		cr_assert_eq(bad, 0);
		size_t at = b.len - 1 - c.len; /* before the closing brace */
		cr_assert(b.len > c.len + 1 && !memcmp(b.data + at, c.data, c.len), "kind %d value [%.*s]", kind,
			  (int)c.len, c.data);
		buf_free(&c);
	}
	buf_free(&a);
	buf_free(&b);
}

/* The fused member writers (jw_kstr and friends go through them) write
 * what a key and then its value write, for plain keys and keys that need
 * escaping, strings that need escaping or repair, the integer extremes,
 * fixed scales up to the bound and past it; and they refuse what jw_keyn
 * refuses. */
WM_TEST(jw, members_write_what_key_and_value_write)
{
	static const char *const keys[] = {"a", "order_id", "a_key_longer_than_sixteen_bytes_x", "q\"uote",
					   "back\\slash", "ctl\x01", "caf\xc3\xa9", "bad\xff"};
	static const char *const strs[] = {"", "x", "plain value of some length", "with \"quotes\"",
					   "tab\there", "\xc3\xa9t\xc3\xa9", "broken \xe2\x82", "0123456789abcdef"};
	static const int64_t ints[] = {0, 1, -1, 9, 10, 123456789, INT64_MAX, INT64_MIN};
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		for (int before = 0; before < 2; before++) {
			size_t kl = strlen(keys[k]);
			for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
				member_both(0, keys[k], kl, strs[i], strlen(strs[i]), 0, 0, before);
			member_both(0, keys[k], kl, "nul\0inside", 10, 0, 0, before);
			for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
				member_both(1, keys[k], kl, NULL, 0, ints[i], 0, before);
				for (unsigned sc = 0; sc <= 19; sc += (sc < 3 ? 1 : 8))
					member_both(2, keys[k], kl, NULL, 0, ints[i], sc, before);
			}
			member_both(3, keys[k], kl, NULL, 0, 1, 0, before);
			member_both(3, keys[k], kl, NULL, 0, 0, 0, before);
			member_both(4, keys[k], kl, NULL, 0, 0, 0, before);
		}

	/* by hand: the first member has no comma, later ones do */
	struct buf b;
	buf_init(&b, 0);
	struct jw w;
	jw_init(&w, &b);
	jw_obj_begin(&w);
	jw_kstr(&w, "id", "o_1");
	jw_kint(&w, "n", -42);
	jw_kfixed(&w, "eur", 5, 2);
	jw_kbool(&w, "ok", 1);
	jw_knull(&w, "z");
	jw_obj_end(&w);
	cr_assert_eq(w.err, 0);
	out_is(&b, L("{\"id\":\"o_1\",\"n\":-42,\"eur\":0.05,\"ok\":true,\"z\":null}"));

	/* misuse: outside any object, after a key, a scale past 18 */
	buf_reset(&b);
	jw_init(&w, &b);
	jw_kstr(&w, "top", "v");
	cr_assert_neq(w.err, 0);
	cr_assert_eq(b.len, 0);
	jw_init(&w, &b);
	jw_obj_begin(&w);
	jw_key(&w, "a");
	jw_kint(&w, "b", 1);
	cr_assert_neq(w.err, 0);
	out_is(&b, L("{\"a\":"));
	buf_reset(&b);
	jw_init(&w, &b);
	jw_obj_begin(&w);
	jw_kfixed(&w, "x", 1, 19);
	cr_assert_neq(w.err, 0);
	out_is(&b, L("{"));
	buf_free(&b);

	/* the bound: a member that fits exactly, and one byte more */
	buf_init(&b, 10);
	jw_init(&w, &b);
	jw_obj_begin(&w);
	jw_kstr(&w, "k", "abc"); /* {"k":"abc" = 10 bytes */
	cr_assert_eq(w.err, 0);
	out_is(&b, L("{\"k\":\"abc\""));
	buf_reset(&b);
	jw_init(&w, &b);
	jw_obj_begin(&w);
	jw_kstr(&w, "k", "abcd");
	cr_assert_neq(w.err, 0);
	out_is(&b, L("{"));
	buf_free(&b);
}

/* jw_raw_again copies a value already written, as one value: with its
 * separator, across the buffer's growth (the source moves), and refuses a
 * range past what is written or past the buffer's bound. */
WM_TEST(jw, raw_again_repeats_a_value_written_before)
{
	struct buf b;
	buf_init(&b, 0);
	struct jw w;
	jw_init(&w, &b);
	jw_obj_begin(&w);
	jw_key(&w, "first");
	size_t at = b.len;
	jw_obj_begin(&w);
	jw_kstr(&w, "id", "ofr_1");
	jw_kint(&w, "n", 3);
	jw_obj_end(&w);
	size_t len = b.len - at;
	jw_key(&w, "again");
	jw_arr_begin(&w);
	for (int i = 0; i < 200; i++) /* ~3 KB: the buffer grows under the copies */
		jw_raw_again(&w, at, len);
	jw_arr_end(&w);
	jw_obj_end(&w);
	cr_assert_eq(w.err, 0);
	struct buf want;
	buf_init(&want, 0);
	buf_printf(&want, "{\"first\":{\"id\":\"ofr_1\",\"n\":3},\"again\":[");
	for (int i = 0; i < 200; i++)
		buf_printf(&want, "%s{\"id\":\"ofr_1\",\"n\":3}", i ? "," : "");
	buf_printf(&want, "]}");
	cr_assert_eq(b.len, want.len);
	cr_assert_eq(memcmp(b.data, want.data, b.len), 0, "%.*s", (int)b.len, b.data);
	/* a range past the end is misuse */
	struct jw w2;
	jw_init(&w2, &b);
	jw_raw_again(&w2, b.len - 1, 2);
	cr_assert_neq(w2.err, 0);
	jw_init(&w2, &b);
	jw_raw_again(&w2, b.len + 1, 0);
	cr_assert_neq(w2.err, 0);
	/* past the buffer's bound: the writer's error */
	struct buf small;
	buf_init(&small, 64);
	struct jw w3;
	jw_init(&w3, &small);
	jw_arr_begin(&w3);
	jw_str(&w3, "0123456789012345678901234567890123456789");
	jw_raw_again(&w3, 1, 42);
	cr_assert_neq(w3.err, 0);
	cr_assert_leq(small.len, 64u);
	buf_free(&small);
	buf_free(&want);
	buf_free(&b);
}
