/*
 * test_http.c -- the HTTP/1.1 request parser: valid requests, pipelining,
 * byte-by-byte splitting, every limit at and past its edge, malformed and
 * smuggling inputs, keep-alive, and the query-string helper.
 *
 * Inputs are copied into heap buffers of exactly their length before
 * parsing, so AddressSanitizer catches any read past the bytes received.
 */
#include "tests/wm_test.h"
#include "net/http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers -------------------------------------------------------------- */

struct parsed {
	int rc;
	struct http_request req;
	struct http_error err;
	char *copy; /* exact-size heap copy the request points into */
};

static struct http_limits lim_default(void)
{
	struct http_limits l;
	http_limits_default(&l);
	return l;
}

/* Parse s[0..n) from an exact-size heap copy (kept in p->copy). */
static void parse_n_lim(struct parsed *p, const char *s, size_t n, const struct http_limits *l)
{
	memset(p, 0, sizeof(*p));
	p->copy = malloc(n ? n : 1);
	cr_assert_not_null(p->copy);
	memcpy(p->copy, s, n);
	p->rc = http_parse_request(p->copy, n, l, &p->req, &p->err);
}

static void parse_n(struct parsed *p, const char *s, size_t n)
{
	struct http_limits l = lim_default();
	parse_n_lim(p, s, n, &l);
}

static void parse_s(struct parsed *p, const char *s) { parse_n(p, s, strlen(s)); }

static void done(struct parsed *p)
{
	free(p->copy);
	p->copy = NULL;
}

/* Parse s with default limits and expect an error with `status`. */
static void expect_status_lim(const char *s, size_t n, const struct http_limits *l, int status)
{
	struct parsed p;
	parse_n_lim(&p, s, n, l);
	cr_assert_eq(p.rc, HTTP_PARSE_ERROR, "expected error %d, got rc %d for [%.*s]", status,
		     p.rc, (int)(n > 200 ? 200 : n), s);
	cr_assert_eq(p.err.status, status, "expected %d, got %d (%s) for [%.*s]", status,
		     p.err.status, p.err.msg, (int)(n > 200 ? 200 : n), s);
	cr_assert_neq(p.err.msg[0], '\0', "error without message");
	done(&p);
}

static void expect_status(const char *s, int status)
{
	struct http_limits l = lim_default();
	expect_status_lim(s, strlen(s), &l, status);
}

static int span_eq(const char *p, size_t n, const char *s)
{
	return strlen(s) == n && memcmp(p, s, n) == 0;
}

/* Value of header `name`, compared to `want`. */
static void expect_header(const struct http_request *r, const char *name, const char *want)
{
	const struct http_header *h = http_find_header(r, name);
	cr_assert_not_null(h, "header %s missing", name);
	cr_assert(span_eq(h->value, h->value_len, want), "header %s = [%.*s], want [%s]", name,
		  (int)h->value_len, h->value, want);
}

/* A heap string: prefix, then `fill` repeated `count` times, then suffix. */
static char *build(const char *prefix, char fill, size_t count, const char *suffix, size_t *n_out)
{
	size_t a = strlen(prefix), c = strlen(suffix);
	char *s = malloc(a + count + c + 1);
	cr_assert_not_null(s);
	memcpy(s, prefix, a);
	memset(s + a, fill, count);
	memcpy(s + a + count, suffix, c);
	s[a + count + c] = '\0';
	*n_out = a + count + c;
	return s;
}

/* ---- valid requests -------------------------------------------------------- */

WM_TEST(http, valid_get)
{
	struct parsed p;
	const char *s = "GET /v1/wines?color=red&page=2 HTTP/1.1\r\n"
			"Host: example.com\r\n"
			"Accept:   application/json  \r\n"
			"X-Empty:\r\n"
			"\r\n";
	parse_s(&p, s);
	cr_assert_eq(p.rc, HTTP_PARSE_OK, "%s", p.err.msg);
	const struct http_request *r = &p.req;
	cr_assert_eq(r->method, HTTP_M_GET);
	cr_assert(span_eq(r->method_str, r->method_len, "GET"));
	cr_assert(span_eq(r->target, r->target_len, "/v1/wines?color=red&page=2"));
	cr_assert(span_eq(r->path, r->path_len, "/v1/wines"));
	cr_assert(span_eq(r->query, r->query_len, "color=red&page=2"));
	cr_assert_eq(r->version_minor, 1);
	cr_assert_eq(r->n_headers, 3);
	expect_header(r, "host", "example.com");
	expect_header(r, "ACCEPT", "application/json");
	expect_header(r, "x-empty", "");
	cr_assert_null(http_find_header(r, "Content-Type"));
	cr_assert_null(http_find_header(r, "Hos"));
	cr_assert_null(http_find_header(r, "Hostx"));
	cr_assert_eq(r->has_content_length, 0);
	cr_assert_eq(r->keep_alive, 1);
	cr_assert_eq(r->expect_continue, 0);
	cr_assert_eq(r->head_len, strlen(s));
	cr_assert_eq(r->body_len, 0);
	cr_assert_eq(r->total_len, strlen(s));
	cr_assert_eq(r->body, p.copy + strlen(s));
	done(&p);
}

WM_TEST(http, valid_post_with_body)
{
	struct parsed p;
	const char *head = "POST /v1/orders HTTP/1.1\r\n"
			   "Host: x\r\n"
			   "Content-Type: application/json\r\n"
			   "Content-Length: 12\r\n"
			   "\r\n";
	char s[256];
	snprintf(s, sizeof(s), "%s{\"qty\": 12}\n", head);
	parse_s(&p, s);
	cr_assert_eq(p.rc, HTTP_PARSE_OK, "%s", p.err.msg);
	cr_assert_eq(p.req.method, HTTP_M_POST);
	cr_assert_eq(p.req.has_content_length, 1);
	cr_assert_eq(p.req.content_length, 12);
	cr_assert_eq(p.req.head_len, strlen(head));
	cr_assert_eq(p.req.body, p.copy + strlen(head));
	cr_assert(span_eq(p.req.body, p.req.body_len, "{\"qty\": 12}\n"));
	cr_assert_eq(p.req.total_len, strlen(s));
	cr_assert_eq(p.req.query_len, 0);
	cr_assert_not_null(p.req.query);
	done(&p);

	/* Body not all there yet. */
	parse_n(&p, s, strlen(s) - 1);
	cr_assert_eq(p.rc, HTTP_PARSE_INCOMPLETE);
	done(&p);

	/* Content-Length: 0 and leading zeros. */
	parse_s(&p, "PUT /a HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
	cr_assert_eq(p.rc, HTTP_PARSE_OK);
	cr_assert_eq(p.req.method, HTTP_M_PUT);
	cr_assert_eq(p.req.has_content_length, 1);
	cr_assert_eq(p.req.body_len, 0);
	done(&p);
	parse_s(&p, "PATCH /a HTTP/1.1\r\nContent-Length: 003\r\n\r\nabc");
	cr_assert_eq(p.rc, HTTP_PARSE_OK);
	cr_assert_eq(p.req.method, HTTP_M_PATCH);
	cr_assert_eq(p.req.body_len, 3);
	done(&p);
}

WM_TEST(http, methods)
{
	static const struct {
		const char *m;
		enum http_method e;
	} tab[] = {
		{"GET", HTTP_M_GET},       {"HEAD", HTTP_M_HEAD},     {"POST", HTTP_M_POST},
		{"PUT", HTTP_M_PUT},       {"PATCH", HTTP_M_PATCH},   {"DELETE", HTTP_M_DELETE},
		{"OPTIONS", HTTP_M_OPTIONS}, {"TRACE", HTTP_M_OTHER}, {"get", HTTP_M_OTHER},
		{"BREW", HTTP_M_OTHER},    {"M-SEARCH", HTTP_M_OTHER}, {"X!#$%&'*+.^_`|~", HTTP_M_OTHER},
	};
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		char s[128];
		snprintf(s, sizeof(s), "%s / HTTP/1.1\r\n\r\n", tab[i].m);
		struct parsed p;
		parse_s(&p, s);
		cr_assert_eq(p.rc, HTTP_PARSE_OK, "%s: %s", tab[i].m, p.err.msg);
		cr_assert_eq(p.req.method, tab[i].e, "%s", tab[i].m);
		cr_assert(span_eq(p.req.method_str, p.req.method_len, tab[i].m));
		done(&p);
	}
	/* Non-token characters in the method. */
	expect_status("GE(T / HTTP/1.1\r\n\r\n", 400);
	expect_status("GE\"T / HTTP/1.1\r\n\r\n", 400);
	expect_status("G\x01T / HTTP/1.1\r\n\r\n", 400);
	expect_status("G\xc3\xa9T / HTTP/1.1\r\n\r\n", 400);
}

WM_TEST(http, options_star_and_targets)
{
	struct parsed p;
	parse_s(&p, "OPTIONS * HTTP/1.1\r\n\r\n");
	cr_assert_eq(p.rc, HTTP_PARSE_OK);
	cr_assert(span_eq(p.req.target, p.req.target_len, "*"));
	cr_assert(span_eq(p.req.path, p.req.path_len, "*"));
	cr_assert_eq(p.req.query_len, 0);
	done(&p);

	parse_s(&p, "GET /? HTTP/1.1\r\n\r\n");
	cr_assert_eq(p.rc, HTTP_PARSE_OK);
	cr_assert(span_eq(p.req.path, p.req.path_len, "/"));
	cr_assert_eq(p.req.query_len, 0);
	cr_assert_eq(p.req.query, p.req.target + 2);
	done(&p);

	parse_s(&p, "GET /a?b?c=d HTTP/1.0\r\n\r\n");
	cr_assert_eq(p.rc, HTTP_PARSE_OK);
	cr_assert(span_eq(p.req.path, p.req.path_len, "/a"));
	cr_assert(span_eq(p.req.query, p.req.query_len, "b?c=d"));
	cr_assert_eq(p.req.version_minor, 0);
	done(&p);

	expect_status("GET * HTTP/1.1\r\n\r\n", 400);
	expect_status("OPTIONS ** HTTP/1.1\r\n\r\n", 400);
	expect_status("GET http://example.com/ HTTP/1.1\r\n\r\n", 400); /* absolute-form */
	expect_status("CONNECT example.com:443 HTTP/1.1\r\n\r\n", 400); /* authority-form */
	expect_status("GET a/b HTTP/1.1\r\n\r\n", 400);
	expect_status("GET /a\x01 HTTP/1.1\r\n\r\n", 400);   /* control char */
	expect_status("GET /a\x7f HTTP/1.1\r\n\r\n", 400);   /* DEL */
	expect_status("GET /\xc3\xa9 HTTP/1.1\r\n\r\n", 400); /* raw non-ASCII */
	expect_status("GET /a\tb HTTP/1.1\r\n\r\n", 400);    /* HTAB in the request line */
	expect_status("GET /a\rb HTTP/1.1\r\n\r\n", 400);    /* stray CR */
}

/* ---- pipelining ------------------------------------------------------------- */

WM_TEST(http, pipelined_two_and_three)
{
	const char *reqs[] = {
		"GET /one HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST /two HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
		"DELETE /three?x=1 HTTP/1.1\r\nConnection: close\r\n\r\n",
	};
	const char *paths[] = {"/one", "/two", "/three"};
	for (size_t count = 2; count <= 3; count++) {
		char all[512] = "";
		for (size_t i = 0; i < count; i++)
			strcat(all, reqs[i]);
		size_t n = strlen(all);
		char *copy = malloc(n);
		cr_assert_not_null(copy);
		memcpy(copy, all, n);
		size_t off = 0;
		for (size_t i = 0; i < count; i++) {
			struct http_request r;
			struct http_error e;
			int rc = http_parse_request(copy + off, n - off, NULL, &r, &e);
			cr_assert_eq(rc, HTTP_PARSE_OK, "request %zu: %s", i, e.msg);
			cr_assert_eq(r.total_len, strlen(reqs[i]));
			cr_assert(span_eq(r.path, r.path_len, paths[i]));
			if (i == 1)
				cr_assert(span_eq(r.body, r.body_len, "hello"));
			if (i == 2)
				cr_assert_eq(r.keep_alive, 0);
			off += r.total_len;
		}
		cr_assert_eq(off, n);
		struct http_request r;
		struct http_error e;
		cr_assert_eq(http_parse_request(copy + off, 0, NULL, &r, &e), HTTP_PARSE_INCOMPLETE);
		free(copy);
	}
}

WM_TEST(http, leading_empty_lines_skipped)
{
	/* RFC 9112 2.2: a CRLF after a POST body must not break the next request. */
	struct parsed p;
	const char *s = "\r\n\r\nGET /x HTTP/1.1\r\n\r\n";
	parse_s(&p, s);
	cr_assert_eq(p.rc, HTTP_PARSE_OK, "%s", p.err.msg);
	cr_assert_eq(p.req.method_str, p.copy + 4);
	cr_assert_eq(p.req.head_len, strlen(s));
	cr_assert_eq(p.req.total_len, strlen(s));
	done(&p);
	parse_s(&p, "\r");
	cr_assert_eq(p.rc, HTTP_PARSE_INCOMPLETE);
	done(&p);
	parse_s(&p, "\r\n\r\n");
	cr_assert_eq(p.rc, HTTP_PARSE_INCOMPLETE);
	done(&p);
	expect_status("\rGET / HTTP/1.1\r\n\r\n", 400);
	expect_status("\nGET / HTTP/1.1\r\n\r\n", 400);
	expect_status("\r\n\nGET / HTTP/1.1\r\n\r\n", 400);
}

/* ---- split at every byte ------------------------------------------------------ */

static void check_every_split(const char *s)
{
	size_t n = strlen(s);
	struct parsed full;
	parse_s(&full, s);
	cr_assert_eq(full.rc, HTTP_PARSE_OK, "%s", full.err.msg);
	cr_assert_eq(full.req.total_len, n);
	for (size_t k = 0; k < n; k++) {
		struct parsed p;
		parse_n(&p, s, k);
		cr_assert_eq(p.rc, HTTP_PARSE_INCOMPLETE, "prefix of %zu/%zu bytes: rc %d (%d %s)", k,
			     n, p.rc, p.err.status, p.err.msg);
		done(&p);
	}
	/* Full request again, parsed from a buffer with trailing bytes: same fields. */
	char *more = malloc(n + 7);
	cr_assert_not_null(more);
	memcpy(more, s, n);
	memcpy(more + n, "GET / H", 7);
	struct http_request r;
	struct http_error e;
	cr_assert_eq(http_parse_request(more, n + 7, NULL, &r, &e), HTTP_PARSE_OK);
	const struct http_request *f = &full.req;
#define SAME_SPAN(fld, len)                                                                \
	cr_assert_eq(r.fld - more, f->fld - full.copy, #fld);                              \
	cr_assert_eq(r.len, f->len, #len)
	SAME_SPAN(method_str, method_len);
	SAME_SPAN(target, target_len);
	SAME_SPAN(path, path_len);
	SAME_SPAN(query, query_len);
	SAME_SPAN(body, body_len);
	cr_assert_eq(r.n_headers, f->n_headers);
	for (uint32_t i = 0; i < r.n_headers; i++) {
		SAME_SPAN(headers[i].name, headers[i].name_len);
		SAME_SPAN(headers[i].value, headers[i].value_len);
	}
#undef SAME_SPAN
	cr_assert_eq(r.method, f->method);
	cr_assert_eq(r.version_minor, f->version_minor);
	cr_assert_eq(r.has_content_length, f->has_content_length);
	cr_assert_eq(r.content_length, f->content_length);
	cr_assert_eq(r.keep_alive, f->keep_alive);
	cr_assert_eq(r.expect_continue, f->expect_continue);
	cr_assert_eq(r.head_len, f->head_len);
	cr_assert_eq(r.total_len, f->total_len);
	free(more);
	done(&full);
}

WM_TEST(http, split_at_every_byte)
{
	check_every_split("POST /v1/orders?dry_run=1&x=%41 HTTP/1.1\r\n"
			  "Host: shard-1.example:8080\r\n"
			  "Content-Type: application/json; charset=utf-8\r\n"
			  "Connection: keep-alive, Upgrade\r\n"
			  "Expect: 100-continue\r\n"
			  "X-Tab:\tvalue\twith\ttabs\t\r\n"
			  "Content-Length: 26\r\n"
			  "\r\n"
			  "{\"wine\":\"barolo\",\"qty\":6}\n");
	check_every_split("\r\nGET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
	check_every_split("OPTIONS * HTTP/1.1\r\n\r\n");
}

/* ---- malformed request lines ------------------------------------------------- */

WM_TEST(http, malformed_request_lines)
{
	expect_status("GET\r\n\r\n", 400);
	expect_status("GET /\r\n\r\n", 400);          /* HTTP/0.9 style */
	expect_status("GET / \r\n\r\n", 400);
	expect_status("/ HTTP/1.1\r\n\r\n", 400);
	expect_status(" GET / HTTP/1.1\r\n\r\n", 400);
	expect_status("GET  / HTTP/1.1\r\n\r\n", 400); /* double spaces */
	expect_status("GET /  HTTP/1.1\r\n\r\n", 400);
	expect_status("GET / HTTP/1.1 \r\n\r\n", 400); /* trailing space */
	expect_status("GET\t/ HTTP/1.1\r\n\r\n", 400);
	expect_status("GET / http/1.1\r\n\r\n", 400);  /* lowercase */
	expect_status("GET / HTTP/1\r\n\r\n", 400);
	expect_status("GET / HTTP/1.10\r\n\r\n", 400);
	expect_status("GET / HTTP/1.x\r\n\r\n", 400);
	expect_status("GET / HTTP/11\r\n\r\n", 400);
	expect_status("GET / HTTPS/1.1\r\n\r\n", 400);
	expect_status("GET / HTTP/2.0\r\n\r\n", 505);
	expect_status("GET / HTTP/1.2\r\n\r\n", 505);
	expect_status("GET / HTTP/0.9\r\n\r\n", 505);
	expect_status("GET / HTTP/3.1\r\n\r\n", 505);
	static const char nul[] = "GET / HTTP/1.1\0\r\n\r\n";
	struct http_limits l = lim_default();
	expect_status_lim(nul, sizeof(nul) - 1, &l, 400);
	expect_status("GET / HTTP/1.1\n\r\n", 400); /* bare LF after the request line */
	expect_status("GET / HTTP/1.1\r\r\n\r\n", 400);
	/* Error as soon as the bad line is complete, before the head is. */
	expect_status("GET / HTTP/2.0\r\n", 505);
	expect_status("GET  / HTTP/1.1\r\n", 400);
}

/* ---- limits at and past their edges ------------------------------------------- */

WM_TEST(http, limit_request_line)
{
	struct http_limits l = lim_default();
	/* "GET /" + k*'a' + " HTTP/1.1\r\n" is k + 16 bytes including CRLF. */
	size_t n;
	char *s = build("GET /", 'a', l.max_request_line - 16, " HTTP/1.1\r\n\r\n", &n);
	struct parsed p;
	parse_n_lim(&p, s, n, &l);
	cr_assert_eq(p.rc, HTTP_PARSE_OK, "%s", p.err.msg);
	cr_assert_eq(p.req.head_len, l.max_request_line + 2);
	done(&p);
	free(s);

	s = build("GET /", 'a', l.max_request_line - 15, " HTTP/1.1\r\n\r\n", &n);
	expect_status_lim(s, n, &l, 414);
	/* Incomplete: the first max_request_line bytes hold no line end -> 414 now. */
	expect_status_lim(s, l.max_request_line, &l, 414);
	free(s);

	/* One byte short of the limit with no line end yet: still incomplete. */
	s = build("GET /", 'a', 10000, "", &n);
	parse_n_lim(&p, s, l.max_request_line - 1, &l);
	cr_assert_eq(p.rc, HTTP_PARSE_INCOMPLETE);
	done(&p);
	expect_status_lim(s, l.max_request_line, &l, 414);
	expect_status_lim(s, n, &l, 414);
	free(s);

	/* A small custom limit. */
	struct http_limits small = l;
	small.max_request_line = 20; /* "GET /abcd HTTP/1.1\r\n" */
	expect_status_lim("GET /abcde HTTP/1.1\r\n\r\n", 23, &small, 414);
	parse_n_lim(&p, "GET /abcd HTTP/1.1\r\n\r\n", 22, &small);
	cr_assert_eq(p.rc, HTTP_PARSE_OK);
	done(&p);
}

/* A request with `count` headers "H<i>: v". */
static char *many_headers(size_t count, size_t *n_out)
{
	size_t cap = 32 + count * 16;
	char *s = malloc(cap);
	cr_assert_not_null(s);
	size_t n = (size_t)snprintf(s, cap, "GET / HTTP/1.1\r\n");
	for (size_t i = 0; i < count; i++)
		n += (size_t)snprintf(s + n, cap - n, "H%zu: v\r\n", i);
	n += (size_t)snprintf(s + n, cap - n, "\r\n");
	*n_out = n;
	return s;
}

WM_TEST(http, limit_header_count)
{
	struct http_limits l = lim_default();
	size_t n;
	char *s = many_headers(l.max_headers, &n);
	struct parsed p;
	parse_n_lim(&p, s, n, &l);
	cr_assert_eq(p.rc, HTTP_PARSE_OK, "%s", p.err.msg);
	cr_assert_eq(p.req.n_headers, l.max_headers);
	expect_header(&p.req, "h63", "v");
	done(&p);
	free(s);

	s = many_headers(l.max_headers + 1, &n);
	expect_status_lim(s, n, &l, 431);
	/* Incomplete head: 431 as soon as header max+1 has started. */
	expect_status_lim(s, n - 2, &l, 431);
	expect_status_lim(s, n - 9, &l, 431); /* "H64: v\r\n\r\n" cut after 'H' */
	parse_n_lim(&p, s, n - 10, &l);       /* 64 complete headers so far */
	cr_assert_eq(p.rc, HTTP_PARSE_INCOMPLETE);
	done(&p);
	free(s);

	/* max_headers above the compile-time cap is clamped to it. */
	struct http_limits big = l;
	big.max_headers = HTTP_MAX_HEADERS_CAP + 10;
	s = many_headers(HTTP_MAX_HEADERS_CAP + 1, &n);
	expect_status_lim(s, n, &big, 431);
	free(s);

	struct http_limits small = l;
	small.max_headers = 2;
	s = many_headers(2, &n);
	parse_n_lim(&p, s, n, &small);
	cr_assert_eq(p.rc, HTTP_PARSE_OK);
	done(&p);
	free(s);
	s = many_headers(3, &n);
	expect_status_lim(s, n, &small, 431);
	free(s);
	small.max_headers = 0;
	parse_n_lim(&p, "GET / HTTP/1.1\r\n\r\n", 18, &small);
	cr_assert_eq(p.rc, HTTP_PARSE_OK);
	done(&p);
	expect_status_lim("GET / HTTP/1.1\r\nA: b\r\n\r\n", 24, &small, 431);
}

WM_TEST(http, limit_head_bytes)
{
	struct http_limits l = lim_default();
	/* "GET / HTTP/1.1\r\n" (16) + "X-Pad: " (7) + pad + "\r\n\r\n" (4) */
	size_t n;
	char *s = build("GET / HTTP/1.1\r\nX-Pad: ", 'p', l.max_header_bytes - 27, "\r\n\r\n", &n);
	cr_assert_eq(n, l.max_header_bytes);
	struct parsed p;
	parse_n_lim(&p, s, n, &l);
	cr_assert_eq(p.rc, HTTP_PARSE_OK, "%s", p.err.msg);
	cr_assert_eq(p.req.head_len, l.max_header_bytes);
	cr_assert_eq(p.req.headers[0].value_len, l.max_header_bytes - 27);
	done(&p);
	parse_n_lim(&p, s, n - 1, &l);
	cr_assert_eq(p.rc, HTTP_PARSE_INCOMPLETE);
	done(&p);
	free(s);

	s = build("GET / HTTP/1.1\r\nX-Pad: ", 'p', l.max_header_bytes - 26, "\r\n\r\n", &n);
	expect_status_lim(s, n, &l, 431);
	/* The bytes so far already exceed the bound: 431 while incomplete. */
	expect_status_lim(s, l.max_header_bytes, &l, 431);
	expect_status_lim(s, l.max_header_bytes + 1, &l, 431);
	parse_n_lim(&p, s, l.max_header_bytes - 1, &l);
	cr_assert_eq(p.rc, HTTP_PARSE_INCOMPLETE);
	done(&p);
	free(s);

	/* Leading empty lines count towards the head. */
	char *crlfs = malloc(l.max_header_bytes + 32);
	cr_assert_not_null(crlfs);
	for (size_t i = 0; i < l.max_header_bytes + 32; i += 2)
		memcpy(crlfs + i, "\r\n", 2);
	expect_status_lim(crlfs, l.max_header_bytes + 32, &l, 431);
	free(crlfs);

	/* Head limit smaller than the request-line limit: the head limit wins. */
	struct http_limits small = l;
	small.max_header_bytes = 20;
	parse_n_lim(&p, "GET /ab HTTP/1.1\r\n\r\n", 20, &small);
	cr_assert_eq(p.rc, HTTP_PARSE_OK);
	done(&p);
	expect_status_lim("GET /abc HTTP/1.1\r\n\r\n", 21, &small, 431);
	expect_status_lim("GET /abcdefghijklmnopqrstuvwxyz", 31, &small, 431);
}

WM_TEST(http, limit_body)
{
	struct http_limits l = lim_default();
	char head[128];
	int hn = snprintf(head, sizeof(head), "POST /b HTTP/1.1\r\nContent-Length: %llu\r\n\r\n",
			  (unsigned long long)l.max_body);
	size_t n = (size_t)hn + (size_t)l.max_body;
	char *s = malloc(n);
	cr_assert_not_null(s);
	memcpy(s, head, (size_t)hn);
	memset(s + hn, 'b', (size_t)l.max_body);
	struct parsed p;
	parse_n_lim(&p, s, n, &l);
	cr_assert_eq(p.rc, HTTP_PARSE_OK, "%s", p.err.msg);
	cr_assert_eq(p.req.body_len, l.max_body);
	cr_assert_eq(p.req.total_len, n);
	done(&p);
	parse_n_lim(&p, s, (size_t)hn, &l); /* head only: wait for the body */
	cr_assert_eq(p.rc, HTTP_PARSE_INCOMPLETE);
	done(&p);
	free(s);

	/* One past: 413 as soon as the head is complete, before any body byte. */
	hn = snprintf(head, sizeof(head), "POST /b HTTP/1.1\r\nContent-Length: %llu\r\n\r\n",
		      (unsigned long long)l.max_body + 1);
	expect_status_lim(head, (size_t)hn, &l, 413);
	struct parsed q;
	parse_n_lim(&q, head, (size_t)hn - 1, &l);
	cr_assert_eq(q.rc, HTTP_PARSE_INCOMPLETE);
	done(&q);

	/* UINT64_MAX fits the syntax; it is just too big. */
	expect_status("POST / HTTP/1.1\r\nContent-Length: 18446744073709551615\r\n\r\n", 413);

	struct http_limits zero = l;
	zero.max_body = 0;
	parse_n_lim(&p, "POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 38, &zero);
	cr_assert_eq(p.rc, HTTP_PARSE_OK);
	done(&p);
	expect_status_lim("POST / HTTP/1.1\r\nContent-Length: 1\r\n\r\n", 38, &zero, 413);
}

/* ---- Content-Length and smuggling ---------------------------------------------- */

WM_TEST(http, bad_content_length)
{
	static const char *bad[] = {
		"-1", "1 2", "+5", "0x10", "99999999999999999999", "18446744073709551616", "",
		"5,5", "5, 5", "1.0", "1e3", "5a", "\xd9\xa5" /* Arabic-Indic five */,
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char s[160];
		snprintf(s, sizeof(s), "POST / HTTP/1.1\r\nContent-Length: %s\r\n\r\n", bad[i]);
		expect_status(s, 400);
	}
	/* OWS around a valid value is fine. */
	struct parsed p;
	parse_s(&p, "POST / HTTP/1.1\r\nContent-Length: \t 2 \t\r\n\r\nok");
	cr_assert_eq(p.rc, HTTP_PARSE_OK, "%s", p.err.msg);
	cr_assert_eq(p.req.content_length, 2);
	done(&p);
	parse_s(&p, "POST / HTTP/1.1\r\ncOnTeNt-LeNgTh: 2\r\n\r\nok");
	cr_assert_eq(p.rc, HTTP_PARSE_OK, "%s", p.err.msg);
	cr_assert_eq(p.req.body_len, 2);
	done(&p);
}

WM_TEST(http, smuggling)
{
	expect_status("POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
		      400);
	expect_status("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
		      400);
	expect_status("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411);
	expect_status("POST / HTTP/1.1\r\ntransfer-encoding: identity\r\n\r\n", 411);
	expect_status("POST / HTTP/1.1\r\nTransfer-Encoding:\r\n\r\n", 411);
	expect_status("POST / HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n", 400);
	expect_status("POST / HTTP/1.1\r\nTransfer-Encoding\t: chunked\r\n\r\n", 400);
	expect_status("POST / HTTP/1.1\r\nContent-Length : 5\r\n\r\nhello", 400);
	expect_status("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
		      400);
	expect_status("POST / HTTP/1.1\r\nContent-Length: 5\r\ncontent-length: 6\r\n\r\nhello!",
		      400);
	expect_status("GET / HTTP/1.1\r\nFoo Bar: x\r\n\r\n", 400);   /* space in name */
	expect_status("GET / HTTP/1.1\r\n: x\r\n\r\n", 400);          /* empty name */
	expect_status("GET / HTTP/1.1\r\nFoo\r\n\r\n", 400);          /* no colon */
	expect_status("GET / HTTP/1.1\r\nF(o): x\r\n\r\n", 400);      /* non-token name */
	expect_status("GET / HTTP/1.1\nHost: a\n\n", 400);            /* bare LF everywhere */
	expect_status("GET / HTTP/1.1\r\nHost: a\n\r\n", 400);        /* bare LF in a header */
	expect_status("GET / HTTP/1.1\r\nHost: a\r\n\n", 400);        /* bare LF terminator */
	expect_status("GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", 400); /* bare CR */
	expect_status("GET / HTTP/1.1\r\nHost: a\r\n\r\r\n", 400);
	expect_status("GET / HTTP/1.1\r\nX-A: one\r\n two\r\n\r\n", 400);  /* obs-fold */
	expect_status("GET / HTTP/1.1\r\nX-A: one\r\n\ttwo\r\n\r\n", 400); /* obs-fold */
	expect_status("GET / HTTP/1.1\r\n Host: a\r\n\r\n", 400);
	expect_status("GET / HTTP/1.1\r\nX-A: \x7f\r\n\r\n", 400);
	expect_status("GET / HTTP/1.1\r\nX-A: a\x1b[0m\r\n\r\n", 400);
	static const char nul[] = "GET / HTTP/1.1\r\nX-A: a\0b\r\n\r\n";
	struct http_limits l = lim_default();
	expect_status_lim(nul, sizeof(nul) - 1, &l, 400);
	static const char nul_name[] = "GET / HTTP/1.1\r\nX\0A: ab\r\n\r\n";
	expect_status_lim(nul_name, sizeof(nul_name) - 1, &l, 400);
	/* obs-text and HTAB are allowed inside values. */
	struct parsed p;
	parse_s(&p, "GET / HTTP/1.1\r\nX-A: caf\xc3\xa9\tbar\r\n\r\n");
	cr_assert_eq(p.rc, HTTP_PARSE_OK, "%s", p.err.msg);
	expect_header(&p.req, "x-a", "caf\xc3\xa9\tbar");
	done(&p);
}

/* ---- keep-alive and Expect ---------------------------------------------------- */

static void expect_keep_alive(const char *s, int want)
{
	struct parsed p;
	parse_s(&p, s);
	cr_assert_eq(p.rc, HTTP_PARSE_OK, "%s", p.err.msg);
	cr_assert_eq(p.req.keep_alive, want, "[%s]", s);
	done(&p);
}

WM_TEST(http, keep_alive)
{
	expect_keep_alive("GET / HTTP/1.1\r\n\r\n", 1);
	expect_keep_alive("GET / HTTP/1.0\r\n\r\n", 0);
	expect_keep_alive("GET / HTTP/1.1\r\nConnection: close\r\n\r\n", 0);
	expect_keep_alive("GET / HTTP/1.1\r\nconnection: CLOSE\r\n\r\n", 0);
	expect_keep_alive("GET / HTTP/1.1\r\nConnection: Upgrade,  Close \r\n\r\n", 0);
	expect_keep_alive("GET / HTTP/1.1\r\nConnection: closed\r\n\r\n", 1);
	expect_keep_alive("GET / HTTP/1.1\r\nConnection: x-close\r\n\r\n", 1);
	expect_keep_alive("GET / HTTP/1.1\r\nConnection: keep-alive\r\n\r\n", 1);
	expect_keep_alive("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 1);
	expect_keep_alive("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", 1);
	expect_keep_alive("GET / HTTP/1.0\r\nConnection: TE,keep-alive\r\n\r\n", 1);
	expect_keep_alive("GET / HTTP/1.0\r\nConnection: keep-alived\r\n\r\n", 0);
	expect_keep_alive("GET / HTTP/1.0\r\nConnection: ,,\r\n\r\n", 0);
	expect_keep_alive("GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n", 0);
	expect_keep_alive("GET / HTTP/1.1\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n",
			  0);
	expect_keep_alive("GET / HTTP/1.0\r\nConnection: upgrade\r\nConnection: keep-alive\r\n\r\n",
			  1);
}

WM_TEST(http, expect_continue)
{
	struct parsed p;
	parse_s(&p, "POST / HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n");
	cr_assert_eq(p.rc, HTTP_PARSE_INCOMPLETE); /* body not here yet */
	done(&p);
	parse_s(&p, "POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc");
	cr_assert_eq(p.rc, HTTP_PARSE_OK);
	cr_assert_eq(p.req.expect_continue, 1);
	done(&p);
	parse_s(&p, "POST / HTTP/1.1\r\nExpect: 200-ok\r\n\r\n");
	cr_assert_eq(p.rc, HTTP_PARSE_OK);
	cr_assert_eq(p.req.expect_continue, 0);
	done(&p);
	/* RFC 9110 10.1.1: ignored in HTTP/1.0 requests. */
	parse_s(&p, "POST / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n");
	cr_assert_eq(p.rc, HTTP_PARSE_OK);
	cr_assert_eq(p.req.expect_continue, 0);
	done(&p);
	/* A body over the limit is refused even when the client waits for 100. */
	expect_status("POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2000000\r\n\r\n",
		      413);
}

/* ---- helpers: find_header, reason, query -------------------------------------- */

WM_TEST(http, find_header_and_reason)
{
	struct parsed p;
	parse_s(&p, "GET / HTTP/1.1\r\nX-Dup: first\r\nx-dup: second\r\n\r\n");
	cr_assert_eq(p.rc, HTTP_PARSE_OK);
	expect_header(&p.req, "X-DUP", "first");
	cr_assert_null(http_find_header(&p.req, ""));
	cr_assert_null(http_find_header(&p.req, NULL));
	done(&p);

	cr_assert_str_eq(http_reason(200), "OK");
	cr_assert_str_eq(http_reason(404), "Not Found");
	cr_assert_str_eq(http_reason(400), "Bad Request");
	cr_assert_str_eq(http_reason(411), "Length Required");
	cr_assert_str_eq(http_reason(413), "Content Too Large");
	cr_assert_str_eq(http_reason(414), "URI Too Long");
	cr_assert_str_eq(http_reason(431), "Request Header Fields Too Large");
	cr_assert_str_eq(http_reason(505), "HTTP Version Not Supported");
	cr_assert_str_eq(http_reason(0), "Unknown");
	cr_assert_str_eq(http_reason(299), "Unknown");
	cr_assert_str_eq(http_reason(-1), "Unknown");
}

static int qget(const char *q, const char *key, char *out, size_t out_size)
{
	size_t n = strlen(q);
	char *copy = malloc(n ? n : 1);
	cr_assert_not_null(copy);
	memcpy(copy, q, n);
	int rc = http_query_get(copy, n, key, out, out_size);
	free(copy);
	return rc;
}

WM_TEST(http, query_get)
{
	char out[16];
	cr_assert_eq(qget("a=1&b=2", "b", out, sizeof(out)), 1);
	cr_assert_str_eq(out, "2");
	cr_assert_eq(qget("a=1&b=2", "c", out, sizeof(out)), -1); /* missing */
	cr_assert_str_eq(out, "");
	cr_assert_eq(qget("", "a", out, sizeof(out)), -1);
	cr_assert_eq(http_query_get(NULL, 0, "a", out, sizeof(out)), -1);
	cr_assert_eq(qget("a=&b=2", "a", out, sizeof(out)), 0); /* empty value */
	cr_assert_str_eq(out, "");
	cr_assert_eq(qget("flag&b=2", "flag", out, sizeof(out)), 0); /* no '=' */
	cr_assert_eq(qget("a=%zz", "a", out, sizeof(out)), -2);      /* malformed */
	cr_assert_str_eq(out, "");
	cr_assert_eq(qget("a=%4", "a", out, sizeof(out)), -2);
	cr_assert_eq(qget("a=x%", "a", out, sizeof(out)), -2);
	cr_assert_eq(qget("a=%00", "a", out, sizeof(out)), -2);
	cr_assert_eq(qget("a=%41", "a", out, sizeof(out)), 1);
	cr_assert_str_eq(out, "A");
	cr_assert_eq(qget("a=%c3%A9", "a", out, sizeof(out)), 2);
	cr_assert_str_eq(out, "\xc3\xa9");
	cr_assert_eq(qget("q=red+wine", "q", out, sizeof(out)), 8);
	cr_assert_str_eq(out, "red wine");
	cr_assert_eq(qget("q=a%2Bb%26c%3Dd", "q", out, sizeof(out)), 7);
	cr_assert_str_eq(out, "a+b&c=d");
	cr_assert_eq(qget("q=a=b", "q", out, sizeof(out)), 3);
	cr_assert_str_eq(out, "a=b");
	/* Prefix keys must not match each other. */
	cr_assert_eq(qget("ab=1&a=2", "a", out, sizeof(out)), 1);
	cr_assert_str_eq(out, "2");
	cr_assert_eq(qget("a=1&ab=2", "ab", out, sizeof(out)), 1);
	cr_assert_str_eq(out, "2");
	cr_assert_eq(qget("ab=1", "a", out, sizeof(out)), -1);
	cr_assert_eq(qget("a=1", "ab", out, sizeof(out)), -1);
	/* Keys are compared decoded; first match wins; empty pairs skipped. */
	cr_assert_eq(qget("&&my+key=v&my%20key=w", "my key", out, sizeof(out)), 1);
	cr_assert_str_eq(out, "v");
	cr_assert_eq(qget("%zz=1&a=2", "a", out, sizeof(out)), 1);
	cr_assert_eq(qget("a=1&a=2", "a", out, sizeof(out)), 1);
	cr_assert_str_eq(out, "1");
	/* Bounds: out_size - 1 characters fit, one more does not. */
	char small[4];
	cr_assert_eq(qget("k=abc", "k", small, sizeof(small)), 3);
	cr_assert_str_eq(small, "abc");
	cr_assert_eq(qget("k=abcd", "k", small, sizeof(small)), -2);
	cr_assert_str_eq(small, "");
	cr_assert_eq(qget("k=%41%42%43", "k", small, sizeof(small)), 3);
	cr_assert_eq(qget("k=%41%42%43%44", "k", small, sizeof(small)), -2);
	cr_assert_eq(qget("k=", "k", small, 1), 0);
	cr_assert_eq(qget("k=a", "k", small, 1), -2);
	cr_assert_eq(qget("k=", "k", NULL, 0), -2);
	/* Works on the span the parser hands back. */
	struct parsed p;
	parse_s(&p, "GET /s?color=ros%C3%A9&page=3 HTTP/1.1\r\n\r\n");
	cr_assert_eq(p.rc, HTTP_PARSE_OK);
	cr_assert_eq(http_query_get(p.req.query, p.req.query_len, "page", out, sizeof(out)), 1);
	cr_assert_str_eq(out, "3");
	cr_assert_eq(http_query_get(p.req.query, p.req.query_len, "color", out, sizeof(out)), 5);
	done(&p);
}

WM_TEST(http, null_limits_and_error_reset)
{
	/* NULL limits mean the defaults; err may be NULL. */
	struct http_request r;
	static const char s[] = "GET / HTTP/1.1\r\n\r\n";
	cr_assert_eq(http_parse_request(s, sizeof(s) - 1, NULL, &r, NULL), HTTP_PARSE_OK);
	static const char bad[] = "GET / HTTP/9.9\r\n\r\n";
	cr_assert_eq(http_parse_request(bad, sizeof(bad) - 1, NULL, &r, NULL), HTTP_PARSE_ERROR);
	cr_assert_eq(http_parse_request(NULL, 0, NULL, &r, NULL), HTTP_PARSE_INCOMPLETE);
	struct http_limits l;
	http_limits_default(&l);
	cr_assert_eq(l.max_request_line, 8192);
	cr_assert_eq(l.max_headers, 64);
	cr_assert_eq(l.max_header_bytes, 16384);
	cr_assert_eq(l.max_body, 1024 * 1024);
}

/* ---- Host (RFC 9112 section 3.2) ------------------------------------------ */

/* Parse s (must frame as one request) and return http_check_host's verdict;
 * the error status into *status (0 when accepted). */
static int host_verdict(const char *s, int *status)
{
	struct parsed p;
	parse_s(&p, s);
	cr_assert_eq(p.rc, HTTP_PARSE_OK, "framing failed for [%s]", s);
	struct http_error e = {0};
	int rc = http_check_host(&p.req, &e);
	*status = rc == HTTP_PARSE_OK ? 0 : e.status;
	if (rc != HTTP_PARSE_OK)
		cr_assert_neq(e.msg[0], '\0', "error without message");
	done(&p);
	return rc;
}

WM_TEST(http, host_rules)
{
	int st;
	/* HTTP/1.1: exactly one Host */
	cr_assert_eq(host_verdict("GET / HTTP/1.1\r\nHost: a\r\n\r\n", &st), HTTP_PARSE_OK);
	cr_assert_eq(host_verdict("GET / HTTP/1.1\r\nhOsT: a:8080\r\n\r\n", &st), HTTP_PARSE_OK);
	cr_assert_eq(host_verdict("GET / HTTP/1.1\r\nHost:\r\n\r\n", &st), HTTP_PARSE_OK, "empty Host is allowed");
	cr_assert_eq(host_verdict("GET / HTTP/1.1\r\n\r\n", &st), HTTP_PARSE_ERROR);
	cr_assert_eq(st, 400);
	cr_assert_eq(host_verdict("GET / HTTP/1.1\r\nX-Host: a\r\nHosts: b\r\n\r\n", &st), HTTP_PARSE_ERROR,
		     "only the Host field counts");
	cr_assert_eq(st, 400);
	cr_assert_eq(host_verdict("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", &st), HTTP_PARSE_ERROR,
		     "two Host headers, even equal");
	cr_assert_eq(st, 400);
	cr_assert_eq(host_verdict("GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\nHOST: b\r\n\r\n", &st),
		     HTTP_PARSE_ERROR);
	cr_assert_eq(st, 400);
	/* HTTP/1.0: Host optional, but never two */
	cr_assert_eq(host_verdict("GET / HTTP/1.0\r\n\r\n", &st), HTTP_PARSE_OK);
	cr_assert_eq(host_verdict("GET / HTTP/1.0\r\nHost: a\r\n\r\n", &st), HTTP_PARSE_OK);
	cr_assert_eq(host_verdict("GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", &st), HTTP_PARSE_ERROR);
	cr_assert_eq(st, 400);
}
