/*
 * fuzz_json.c -- libFuzzer target for the JSON parser and writer.
 *
 * Why: json_parse() is the first code that sees untrusted request bodies,
 * and jw_value() is how stored documents go back out.  For every input the
 * parser accepts, the tree is serialised, the output re-parsed (it must be
 * accepted: the writer only produces valid JSON) and serialised again; the
 * two serialisations must be byte-identical, i.e. parse∘write is a fixed
 * point.  Numbers in the tree also go through the exact conversions so the
 * sanitizers see that arithmetic, and the raw input is fed to
 * json_text_to_fixed() directly.  json_scan_top_string() (the light scan
 * of our own response bodies) must stay inside every input and, on the
 * writer's text, find what the parser found.  json_parse_keep() must accept
 * what json_parse() accepts and build its kept members identically.  Any disagreement calls
 * abort().
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/buf.h"
#include "net/json.h"
#include "net/jsonw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Exercise the conversions on every number; cross-check int64 vs fixed. */
static void check_numbers(const struct json_value *v, unsigned depth)
{
	if (depth > JSON_DEFAULT_MAX_DEPTH + 1)
		abort();
	switch (v->type) {
	case JSON_NUMBER: {
		int64_t a, b;
		int ra = json_to_int64(v, &a);
		int rb = json_to_fixed(v, 0, &b);
		if (ra == 0 && (rb != 0 || a != b))
			abort();
		for (unsigned s = 0; s <= 18; s += 6)
			(void)json_to_fixed(v, s, &b);
		if (v->u.num[v->len] != 0 || strlen(v->u.num) != v->len)
			abort();
		break;
	}
	case JSON_STRING:
		if (v->u.str[v->len] != 0)
			abort();
		break;
	case JSON_ARRAY:
		for (uint32_t i = 0; i < v->len; i++)
			check_numbers(&v->u.items[i], depth + 1);
		break;
	case JSON_OBJECT:
		for (uint32_t i = 0; i < v->len; i++) {
			if (json_get(v, v->u.members[i].key) == NULL &&
			    strlen(v->u.members[i].key) == v->u.members[i].key_len)
				abort();
			check_numbers(&v->u.members[i].value, depth + 1);
		}
		break;
	default:
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int64_t x;
	(void)json_text_to_fixed((const char *)data, size, (unsigned)(size % 19), &x);

	/* the light scan must stay inside any input, however shaped */
	const char *sv;
	size_t sl;
	if (json_scan_top_string((const char *)data, size, "id", &sv, &sl) == 0 &&
	    (sv < (const char *)data || sv + sl > (const char *)data + size))
		abort();

	struct json_error err;
	static const char *const keep[] = {"id", "a", NULL};
	struct json_doc *dk = json_parse_keep((const char *)data, size, keep, &err);
	struct json_doc *d1 = json_parse((const char *)data, size, NULL, &err);
	if (d1 && !dk)
		abort(); /* what parses whole parses with a key list */
	if (d1 && json_root(d1)->type == JSON_OBJECT) {
		/* the kept members are built exactly as the whole parse builds them */
		const struct json_value *kr = json_root(dk), *wr = json_root(d1);
		if (kr->type != JSON_OBJECT || kr->len > wr->len)
			abort(); /* it may stop after its last listed member */
		for (unsigned i = 0; keep[i]; i++) {
			const struct json_value *a = json_get(kr, keep[i]), *b = json_get(wr, keep[i]);
			struct buf ba, bb;
			buf_init(&ba, 0);
			buf_init(&bb, 0);
			struct jw wa, wb;
			jw_init(&wa, &ba);
			jw_init(&wb, &bb);
			if (a)
				jw_value(&wa, a);
			if (b)
				jw_value(&wb, b);
			if (!a != !b || ba.len != bb.len || (ba.len && memcmp(ba.data, bb.data, ba.len)))
				abort();
			buf_free(&ba);
			buf_free(&bb);
		}
	}
	json_doc_free(dk);
	if (!d1) {
		if (err.offset > size || err.line < 1 || err.column < 1 ||
		    memchr(err.msg, 0, sizeof(err.msg)) == NULL)
			abort();
		return 0;
	}
	check_numbers(json_root(d1), 0);

	struct buf b1, b2;
	buf_init(&b1, 0);
	buf_init(&b2, 0);
	struct jw w;
	jw_init(&w, &b1);
	jw_value(&w, json_root(d1));
	if (w.err)
		abort();

	/* Escaping may grow the text (e.g. raw U+007F -> \u007f), so the
	 * re-parse gets room for that; the other bounds are unchanged. */
	struct json_limits lim = { .max_bytes = b1.len + 1 };
	struct json_doc *d2 = json_parse(b1.data ? b1.data : "", b1.len, &lim, &err);
	if (!d2)
		abort();
	jw_init(&w, &b2);
	jw_value(&w, json_root(d2));
	if (w.err || b1.len != b2.len || memcmp(b1.data, b2.data, b1.len) != 0)
		abort();

	/* on the writer's text, what the scan finds is what the parser found */
	if (json_scan_top_string(b1.data ? b1.data : "", b1.len, "id", &sv, &sl) == 0) {
		const struct json_value *id = json_get(json_root(d2), "id");
		if (!id || id->type != JSON_STRING || id->len != sl || memcmp(id->u.str, sv, sl))
			abort();
	}

	json_doc_free(d2);
	json_doc_free(d1);
	buf_free(&b1);
	buf_free(&b2);
	return 0;
}
