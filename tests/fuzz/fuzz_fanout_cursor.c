/*
 * fuzz_fanout_cursor.c -- the merged-list cursor and page merge
 * (shard-router/fanout.c) on arbitrary bytes.  The cursor is the caller's
 * query string and the pages are what shards answered: neither may crash
 * the router, read past its input or be accepted when it is not exactly
 * what this code would have written.
 *
 * Byte 0 picks the mode (mod 4), the rest is the input:
 *   0  a cursor text as a caller sends it: one of the enum fanout_cursor_err
 *      codes; an accepted one re-encodes to the same text.
 *   1  a payload sealed with the right secret (with a genuine header for
 *      the list unless bit 2 of byte 0 is set), so the decoder's structure
 *      checks behind the MAC are reached; an accepted cursor re-encodes to
 *      the same text.
 *   2  one shard's page (byte 1: page_size, mod 202, so 0 and 201 occur);
 *   3  two shards' pages split at byte 1's share of the rest: the merge
 *      answers a fanout_merge_err; on success the body is JSON with at
 *      most page_size rows and its next cursor decodes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "net/buf.h"
#include "net/json.h"
#include "shard-router/fanout.h"

#define TAG "GET /v1/orders entity=ptn_fuzz"
#define MAP_V 3

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct cluster_key *key(void)
{
	static struct cluster_key k = {.secret = "0123456789abcdef0123456789abcdef", .len = 32};
	return &k;
}

/* Decode text; on success it must re-encode to exactly text. */
static void decode_check(const char *text, size_t len)
{
	static struct fanout_cursor c;
	static char again[FANOUT_CURSOR_MAX + 1];
	int r = fanout_cursor_decode(key(), text, len, TAG, strlen(TAG), MAP_V, &c);
	if (r > FC_OK || r < FC_E_INTERNAL)
		abort();
	if (r != FC_OK)
		return;
	int n = fanout_cursor_encode(key(), TAG, strlen(TAG), &c, again, sizeof(again));
	if (n < 0 || (size_t)n != len || memcmp(again, text, len) != 0)
		abort(); /* accepted a text this code would not write */
}

static void sealed(const uint8_t *p, size_t len, int keep_header)
{
	static uint8_t buf[FANOUT_CURSOR_MAX];
	static char text[FANOUT_CURSOR_MAX + 1];
	if (len > sizeof(buf))
		return;
	memcpy(buf, p, len);
	if (!keep_header && len >= 17) {
		/* a genuine header (fanout.h): format 1, the map version, the
		 * tag's hash; the entry count and entries stay the fuzzer's */
		uint8_t h[SHA256_DIGEST_LENGTH];
		SHA256((const uint8_t *)TAG, strlen(TAG), h);
		buf[0] = 1;
		for (int i = 0; i < 8; i++)
			buf[1 + i] = (uint8_t)((uint64_t)MAP_V >> (8 * i));
		memcpy(buf + 9, h, FANOUT_TAG_LEN);
	}
	int n = fanout_cursor_seal(key(), buf, len, text, sizeof(text));
	if (n == FC_E_TOO_LARGE)
		return;
	if (n < 0)
		abort();
	decode_check(text, (size_t)n);
}

static void merge(const uint8_t *d, size_t size, int two)
{
	if (size < 1)
		return;
	uint32_t page_size = d[0] % (FANOUT_PAGE_MAX + 2);
	const char *body = (const char *)d + 1;
	size_t len = size - 1;
	static struct fanout_cursor from;
	static struct fanout_result res;
	fanout_cursor_init(&from, MAP_V);
	struct fanout_page pages[2] = {{.asked = 1, .body = body, .body_len = len}, {.asked = 1}};
	if (two) {
		size_t cut = len * d[0] / 255;
		pages[0].body_len = cut;
		pages[1].body = body + cut;
		pages[1].body_len = len - cut;
	}
	struct fanout_merge_args a = {.key = key(), .tag = TAG, .tag_len = strlen(TAG), .from = &from,
				      .n_shards = two ? 2 : 1, .pages = pages, .page_size = page_size,
				      .max_page_bytes = 1 << 16};
	struct buf out;
	buf_init(&out, 1 << 20);
	int r = fanout_merge(&a, &out, &res);
	if (r > FM_OK || r < FM_E_OUTPUT)
		abort();
	if (r == FM_OK) {
		struct json_doc *doc = json_parse(out.data, out.len, NULL, NULL);
		if (!doc)
			abort(); /* the merged body is not JSON */
		const struct json_value *rows = json_get(json_root(doc), "data");
		if (!rows || rows->type != JSON_ARRAY || rows->len != res.rows || res.rows > page_size)
			abort();
		json_doc_free(doc);
		if (res.has_more) {
			static struct fanout_cursor back;
			if (fanout_cursor_decode(key(), res.next_text, strlen(res.next_text), TAG, strlen(TAG), MAP_V,
						 &back) != FC_OK)
				abort();
		}
	} else if (out.len != 0) {
		abort(); /* an error must leave the output as it was */
	}
	buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 4) {
	case 0:
		decode_check((const char *)data + 1, size - 1);
		break;
	case 1:
		sealed(data + 1, size - 1, data[0] & 4);
		break;
	default:
		merge(data + 1, size - 1, data[0] % 4 == 3);
		break;
	}
	return 0;
}
