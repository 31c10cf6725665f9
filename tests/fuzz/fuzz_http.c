/*
 * fuzz_http.c -- libFuzzer target for the HTTP/1.1 request parser.
 *
 * Feeds arbitrary bytes to http_parse_request with the default limits and
 * abort()s when a contract invariant breaks: on OK the request fits in the
 * input, head + body == total and every pointer points into the input; on
 * ERROR the status is one the parser may answer.  Statelessness is checked
 * too: re-parsing exactly the consumed bytes (from an exact-size copy, so
 * ASan sees over-reads) gives the same request, and one byte fewer is
 * INCOMPLETE.  The query helper and header lookup run on what was parsed.
 * http_check_host must agree with an independent count of Host headers.
 * Each input is parsed with the default limits and again with small ones,
 * so that short inputs also reach the 414/431/413 paths.
 */
#include "net/http.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

static int inside(const char *p, size_t n, const char *buf, size_t size)
{
	return p && p >= buf && p <= buf + size && n <= (size_t)(buf + size - p);
}

static void check_ok(const struct http_request *r, const struct http_limits *l, const char *buf,
		     size_t size)
{
	check(r->total_len <= size);
	check(r->head_len + r->body_len == r->total_len);
	check(r->head_len <= l->max_header_bytes);
	check(r->body == buf + r->head_len);
	check(r->body_len == (r->has_content_length ? r->content_length : 0));
	check(r->body_len <= l->max_body);
	check(r->n_headers <= l->max_headers && r->n_headers <= HTTP_MAX_HEADERS_CAP);
	check(r->version_minor <= 1);
	check(r->keep_alive == 0 || r->keep_alive == 1);
	check(r->method_len > 0 && inside(r->method_str, r->method_len, buf, r->head_len));
	check(r->target_len > 0 && r->target_len < l->max_request_line);
	check(inside(r->target, r->target_len, buf, r->head_len));
	check(r->path == r->target && r->path_len <= r->target_len);
	check(inside(r->query, r->query_len, buf, r->head_len));
	check(r->target[0] == '/' || (r->target_len == 1 && r->method == HTTP_M_OPTIONS));
	for (uint32_t i = 0; i < r->n_headers; i++) {
		const struct http_header *h = &r->headers[i];
		check(h->name_len > 0 && inside(h->name, h->name_len, buf, r->head_len));
		check(inside(h->value, h->value_len, buf, r->head_len));
		for (uint32_t k = 0; k < h->value_len; k++)
			check((unsigned char)h->value[k] >= 0x20 || h->value[k] == '\t');
		check(http_find_header(r, "content-length") == NULL || r->has_content_length);
	}
	check(http_find_header(r, "transfer-encoding") == NULL);

	/* Host rule (RFC 9112 section 3.2), counted independently. */
	uint32_t hosts = 0;
	for (uint32_t i = 0; i < r->n_headers; i++)
		hosts += r->headers[i].name_len == 4 && strncasecmp(r->headers[i].name, "host", 4) == 0;
	struct http_error herr;
	int hc = http_check_host(r, &herr);
	check(hc == ((hosts == 1 || (hosts == 0 && r->version_minor == 0)) ? HTTP_PARSE_OK : HTTP_PARSE_ERROR));
	check(hc == HTTP_PARSE_OK || herr.status == 400);

	char out[8];
	int q = http_query_get(r->query, r->query_len, "a", out, sizeof(out));
	check(q >= -2 && q < (int)sizeof(out));
	if (q >= 0)
		check(strlen(out) == (size_t)q);
}

/* One parse with `lim` and every invariant that applies to its result. */
static void run(const char *buf, size_t size, const struct http_limits *lim)
{
	static struct http_request req, again;
	struct http_error err;

	int rc = http_parse_request(buf, size, lim, &req, &err);
	if (rc == HTTP_PARSE_ERROR) {
		check(err.status == 400 || err.status == 411 || err.status == 413 ||
		      err.status == 414 || err.status == 431 || err.status == 505);
		check(memchr(err.msg, '\0', sizeof(err.msg)) != NULL && err.msg[0] != '\0');
		return;
	}
	if (rc == HTTP_PARSE_INCOMPLETE) {
		/* Incomplete with max_header_bytes in hand: the head must have ended. */
		if (size >= lim->max_header_bytes)
			check(memmem(buf, lim->max_header_bytes, "\r\n\r\n", 4) != NULL);
		return;
	}
	check(rc == HTTP_PARSE_OK);
	check_ok(&req, lim, buf, size);

	/* Stateless: exactly the consumed bytes parse to the same request... */
	char *copy = malloc(req.total_len ? req.total_len : 1);
	check(copy != NULL);
	memcpy(copy, buf, req.total_len);
	rc = http_parse_request(copy, req.total_len, lim, &again, &err);
	check(rc == HTTP_PARSE_OK && again.total_len == req.total_len &&
	      again.head_len == req.head_len && again.n_headers == req.n_headers &&
	      again.method == req.method && again.keep_alive == req.keep_alive &&
	      again.expect_continue == req.expect_continue &&
	      again.target - copy == req.target - buf && again.target_len == req.target_len);
	/* ...and one byte fewer is not yet a request. */
	if (req.total_len > 0) {
		rc = http_parse_request(copy, req.total_len - 1, lim, &again, &err);
		check(rc == HTTP_PARSE_INCOMPLETE);
	}
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The default limits (the contract under test), then small ones so that
	 * inputs of libFuzzer's usual lengths also reach every limit's edge. */
	struct http_limits def, small = {
		.max_request_line = 48,
		.max_headers = 4,
		.max_header_bytes = 160,
		.max_body = 16,
	};
	http_limits_default(&def);
	run((const char *)data, size, &def);
	run((const char *)data, size, &small);
	return 0;
}
