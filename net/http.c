/*
 * http.c -- HTTP/1.1 request-head parser (see http.h for the contract).
 *
 * Why it exists, and why it is shaped like this:
 *
 * The server reads bytes from a socket into a buffer and needs to know, after
 * every read, one of three things: "not enough yet", "here is one complete
 * request (head + Content-Length body) of N bytes", or "this is hostile or
 * broken, answer status S and close".  Keeping no state between calls makes
 * the parser trivially correct under arbitrary TCP segmentation (the tests
 * split a request at every byte) and keeps the server's connection struct
 * small.  The price is re-scanning the head on every read; that cost is
 * bounded because the head can never grow past max_header_bytes without an
 * error, and no byte is ever examined twice within one call.
 *
 * Strictness is deliberate.  Every place where two HTTP implementations can
 * disagree about where a request ends is an opening for request smuggling
 * through a proxy in front of us, so each such ambiguity is an error rather
 * than a guess:
 *   - lines end in CRLF only; a bare LF or a stray CR is 400;
 *   - a header line starting with SP/HTAB (obs-fold) is 400;
 *   - header names are RFC 9110 tokens and the colon follows the name
 *     directly ("Transfer-Encoding : chunked" is 400, not a new header);
 *   - Content-Length must be one header with 1*DIGIT that fits in 64 bits;
 *     repeated (even with equal values), empty, signed, hex, comma lists and
 *     overflow are all 400;
 *   - Transfer-Encoding with Content-Length is 400; any Transfer-Encoding on
 *     its own is 411 (we only accept Content-Length framed bodies);
 *   - control characters (other than HTAB inside header values) are 400
 *     anywhere in the head; the request target admits only visible ASCII.
 *
 * Limits are enforced on the bytes received so far, not only on complete
 * heads: once the first max_request_line bytes hold no line end the answer
 * is 414, once the head cannot end within max_header_bytes it is 431, and
 * once a header line beyond max_headers starts it is 431.  A Content-Length
 * over max_body is 413 as soon as the head is complete, so a client is never
 * invited to upload a body we will refuse (also not via 100-continue).
 *
 * Two choices the header leaves open:
 *   - Empty lines (CRLF) before the request line are skipped, as RFC 9112
 *     section 2.2 asks of servers (some clients append CRLF after a POST
 *     body).  They count towards head_len/total_len, so the caller consumes
 *     them, and towards max_header_bytes, so they cannot be used to stall.
 *   - "Expect: 100-continue" sets expect_continue on HTTP/1.1 only: RFC 9110
 *     section 10.1.1 says a server MUST ignore it in an HTTP/1.0 request.
 *
 * Nothing here allocates; every pointer handed back points into the caller's
 * buffer, and `query` points at the end of the target (length 0) when the
 * target has no '?', so it is never NULL.
 */
#include "net/http.h"

#include <limits.h>
#include <string.h>

/* Defaults named in struct http_limits. */
#define HTTP_DEF_MAX_REQUEST_LINE 8192u
#define HTTP_DEF_MAX_HEADERS 64u
#define HTTP_DEF_MAX_HEADER_BYTES 16384u
#define HTTP_DEF_MAX_BODY (1024u * 1024u)

void http_limits_default(struct http_limits *l)
{
	l->max_request_line = HTTP_DEF_MAX_REQUEST_LINE;
	l->max_headers = HTTP_DEF_MAX_HEADERS;
	l->max_header_bytes = HTTP_DEF_MAX_HEADER_BYTES;
	l->max_body = HTTP_DEF_MAX_BODY;
}

/* ---- character classes ---------------------------------------------------- */

/* tchar per RFC 9110 section 5.6.2. */
static int is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return 1;
	switch (c) {
	case '!': case '#': case '$': case '%': case '&': case '\'': case '*':
	case '+': case '-': case '.': case '^': case '_': case '`': case '|':
	case '~':
		return 1;
	default:
		return 0;
	}
}

/* field-value octets: HTAB, SP, VCHAR, obs-text.  Excludes CTLs and DEL. */
static int is_field_char(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/* Request-target octets: visible ASCII only (no SP, CTL, DEL, non-ASCII). */
static int is_target_char(unsigned char c) { return c > 0x20 && c < 0x7f; }

static int is_ows(char c) { return c == ' ' || c == '\t'; }

static unsigned char lower(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + ('a' - 'A')) : c;
}

/* Case-insensitive compare of p[0..n) with the NUL-terminated ASCII `s`. */
static inline int ieq(const char *p, size_t n, const char *s)
{
	/* the length first: most compares are of a header name with another
	 * (strlen of a literal folds once this is inlined) */
	if (strlen(s) != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (lower((unsigned char)p[i]) != lower((unsigned char)s[i]))
			return 0;
	return 1;
}

/* Exact compare of p[0..n) with the NUL-terminated `s`. */
static int eq(const char *p, size_t n, const char *s)
{
	return strlen(s) == n && memcmp(p, s, n) == 0;
}

/* ---- errors --------------------------------------------------------------- */

/* Record `status` and `msg` in err (may be NULL); returns HTTP_PARSE_ERROR. */
static int fail(struct http_error *err, int status, const char *msg)
{
	if (err) {
		size_t n = strlen(msg);
		if (n >= sizeof(err->msg))
			n = sizeof(err->msg) - 1;
		err->status = status;
		memcpy(err->msg, msg, n);
		err->msg[n] = '\0';
	}
	return HTTP_PARSE_ERROR;
}

/* ---- line scanning -------------------------------------------------------- */

enum line_result { LINE_BARE_LF = -1, LINE_NONE = 0, LINE_FOUND = 1 };

/*
 * Look for the end of the line starting at buf[start], within at most
 * `window` bytes of it (and of what has arrived).  On LINE_FOUND *eol is the
 * index of the CR and *next the index just after the LF.  LINE_BARE_LF when
 * the first LF is not preceded by CR.  LINE_NONE when no LF is in the part
 * examined; the caller compares len - start with window to tell a limit
 * violation from "incomplete".
 */
static enum line_result find_line(const char *buf, size_t len, size_t start, size_t window,
				  size_t *eol, size_t *next)
{
	size_t avail = len - start;
	if (avail > window)
		avail = window;
	if (avail == 0)
		return LINE_NONE;
	const char *lf = memchr(buf + start, '\n', avail);
	if (!lf)
		return LINE_NONE;
	size_t i = (size_t)(lf - buf);
	if (i == start || buf[i - 1] != '\r')
		return LINE_BARE_LF;
	*eol = i - 1;
	*next = i + 1;
	return LINE_FOUND;
}

/* ---- request line --------------------------------------------------------- */

static enum http_method method_of(const char *p, size_t n)
{
	static const struct {
		const char *name;
		enum http_method m;
	} tab[] = {
		{"GET", HTTP_M_GET},       {"HEAD", HTTP_M_HEAD},   {"POST", HTTP_M_POST},
		{"PUT", HTTP_M_PUT},       {"PATCH", HTTP_M_PATCH}, {"DELETE", HTTP_M_DELETE},
		{"OPTIONS", HTTP_M_OPTIONS},
	};
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (eq(p, n, tab[i].name)) /* methods are case-sensitive */
			return tab[i].m;
	return HTTP_M_OTHER;
}

/*
 * Parse "method SP request-target SP HTTP-version" in buf[s..eol) into req.
 * Exactly one SP between the parts, nothing before or after.
 */
static int parse_request_line(const char *buf, size_t s, size_t eol, struct http_request *req,
			      struct http_error *err)
{
	size_t i = s;
	while (i < eol && is_tchar((unsigned char)buf[i]))
		i++;
	if (i == s)
		return fail(err, 400, "request line: missing or invalid method");
	if (i == eol || buf[i] != ' ')
		return fail(err, 400, "request line: invalid character after method");
	req->method_str = buf + s;
	req->method_len = (uint32_t)(i - s);
	req->method = method_of(req->method_str, req->method_len);

	size_t t = ++i;
	while (i < eol && is_target_char((unsigned char)buf[i]))
		i++;
	if (i == t)
		return fail(err, 400, "request line: missing request target");
	if (i == eol)
		return fail(err, 400, "request line: missing HTTP version");
	if (buf[i] != ' ')
		return fail(err, 400, "request line: invalid character in request target");
	req->target = buf + t;
	req->target_len = (uint32_t)(i - t);

	if (buf[t] == '/') {
		const char *q = memchr(req->target, '?', req->target_len);
		if (q) {
			req->path = req->target;
			req->path_len = (uint32_t)(q - req->target);
			req->query = q + 1;
			req->query_len = req->target_len - req->path_len - 1;
		} else {
			req->path = req->target;
			req->path_len = req->target_len;
			req->query = req->target + req->target_len;
			req->query_len = 0;
		}
	} else if (req->target_len == 1 && buf[t] == '*' && req->method == HTTP_M_OPTIONS) {
		req->path = req->target;
		req->path_len = 1;
		req->query = req->target + 1;
		req->query_len = 0;
	} else {
		return fail(err, 400, "request line: target must be origin-form");
	}

	/* HTTP-version = "HTTP/" DIGIT "." DIGIT, then the line ends. */
	const char *v = buf + i + 1;
	size_t vlen = eol - (i + 1);
	if (vlen != 8 || memcmp(v, "HTTP/", 5) != 0 || v[5] < '0' || v[5] > '9' || v[6] != '.' ||
	    v[7] < '0' || v[7] > '9')
		return fail(err, 400, "request line: malformed HTTP version");
	if (v[5] != '1' || (v[7] != '0' && v[7] != '1'))
		return fail(err, 505, "HTTP version not supported");
	req->version_minor = (uint8_t)(v[7] - '0');
	return HTTP_PARSE_OK;
}

/* ---- header lines --------------------------------------------------------- */

/* Parse "name:" OWS value OWS in buf[s..eol) into *h. */
static int parse_header_line(const char *buf, size_t s, size_t eol, struct http_header *h,
			     struct http_error *err)
{
	if (is_ows(buf[s]))
		return fail(err, 400, "header: line folding or leading whitespace");
	size_t i = s;
	while (i < eol && is_tchar((unsigned char)buf[i]))
		i++;
	if (i == s)
		return fail(err, 400, "header: missing or invalid name");
	if (i == eol || buf[i] != ':')
		return fail(err, 400, "header: invalid character in name");
	h->name = buf + s;
	h->name_len = (uint32_t)(i - s);

	for (size_t k = i + 1; k < eol; k++)
		if (!is_field_char((unsigned char)buf[k]))
			return fail(err, 400, "header: control character in value");
	size_t vs = i + 1, ve = eol;
	while (vs < ve && is_ows(buf[vs]))
		vs++;
	while (ve > vs && is_ows(buf[ve - 1]))
		ve--;
	h->value = buf + vs;
	h->value_len = (uint32_t)(ve - vs);
	return HTTP_PARSE_OK;
}

/* Content-Length = 1*DIGIT, fitting in uint64_t.  0 on success, -1 else. */
static int parse_content_length(const char *p, size_t n, uint64_t *out)
{
	if (n == 0)
		return -1;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		unsigned d = (unsigned)(p[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/*
 * Connection = #connection-option: look at each comma-separated token
 * (OWS trimmed, case-insensitive) for "close" and "keep-alive".
 */
static void scan_connection(const char *p, size_t n, int *saw_close, int *saw_keep)
{
	size_t i = 0;
	while (i <= n) {
		size_t j = i;
		while (j < n && p[j] != ',')
			j++;
		size_t a = i, b = j;
		while (a < b && is_ows(p[a]))
			a++;
		while (b > a && is_ows(p[b - 1]))
			b--;
		if (ieq(p + a, b - a, "close"))
			*saw_close = 1;
		else if (ieq(p + a, b - a, "keep-alive"))
			*saw_keep = 1;
		i = j + 1;
	}
}

/* Apply the framing and connection semantics of the complete header set. */
static int interpret_headers(struct http_request *req, const struct http_limits *lim,
			     struct http_error *err)
{
	int has_te = 0, saw_close = 0, saw_keep = 0;
	for (uint32_t i = 0; i < req->n_headers; i++) {
		const struct http_header *h = &req->headers[i];
		if (ieq(h->name, h->name_len, "content-length")) {
			if (req->has_content_length)
				return fail(err, 400, "several Content-Length headers");
			if (parse_content_length(h->value, h->value_len, &req->content_length))
				return fail(err, 400, "invalid Content-Length");
			req->has_content_length = 1;
		} else if (ieq(h->name, h->name_len, "transfer-encoding")) {
			has_te = 1;
		} else if (ieq(h->name, h->name_len, "connection")) {
			scan_connection(h->value, h->value_len, &saw_close, &saw_keep);
		} else if (ieq(h->name, h->name_len, "expect")) {
			if (req->version_minor == 1 && ieq(h->value, h->value_len, "100-continue"))
				req->expect_continue = 1;
		}
	}
	if (has_te && req->has_content_length)
		return fail(err, 400, "Transfer-Encoding together with Content-Length");
	if (has_te)
		return fail(err, 411, "Transfer-Encoding not accepted; send Content-Length");
	if (req->has_content_length && req->content_length > lim->max_body)
		return fail(err, 413, "request body larger than allowed");
	if (saw_close)
		req->keep_alive = 0;
	else if (saw_keep)
		req->keep_alive = 1;
	else
		req->keep_alive = req->version_minor == 1;
	return HTTP_PARSE_OK;
}

/* ---- the parser ----------------------------------------------------------- */

int http_parse_request(const char *buf, size_t len, const struct http_limits *lim,
		       struct http_request *req, struct http_error *err)
{
	struct http_limits def;
	if (!lim) {
		http_limits_default(&def);
		lim = &def;
	}
	const size_t max_line = lim->max_request_line;
	const size_t max_head = lim->max_header_bytes;
	const uint32_t max_hdrs =
		lim->max_headers < HTTP_MAX_HEADERS_CAP ? lim->max_headers : HTTP_MAX_HEADERS_CAP;

	memset(req, 0, sizeof(*req));
	if (err) {
		err->status = 0;
		err->msg[0] = '\0';
	}
	if (!buf)
		len = 0;

	/* Empty lines before the request line (RFC 9112 section 2.2). */
	size_t pos = 0;
	while (pos < len && buf[pos] == '\r') {
		if (pos + 2 > max_head)
			return fail(err, 431, "request head too large");
		if (pos + 1 == len)
			return HTTP_PARSE_INCOMPLETE;
		if (buf[pos + 1] != '\n')
			return fail(err, 400, "stray CR before request line");
		pos += 2;
	}

	req->start_off = pos;

	/* Request line: must end within max_request_line and within the head. */
	size_t head_room = max_head > pos ? max_head - pos : 0;
	size_t window = max_line < head_room ? max_line : head_room;
	size_t eol = 0, next = 0;
	switch (find_line(buf, len, pos, window, &eol, &next)) {
	case LINE_BARE_LF:
		return fail(err, 400, "request line: bare LF line ending");
	case LINE_NONE:
		if (len - pos < window)
			return HTTP_PARSE_INCOMPLETE;
		if (window == max_line)
			return fail(err, 414, "request line too long");
		return fail(err, 431, "request head too large");
	case LINE_FOUND:
		break;
	}
	if (parse_request_line(buf, pos, eol, req, err) != HTTP_PARSE_OK)
		return HTTP_PARSE_ERROR;

	/* Header lines up to the empty line. */
	size_t ls = next;
	for (;;) {
		if (ls < len && buf[ls] != '\r' && req->n_headers >= max_hdrs)
			return fail(err, 431, "too many header fields");
		window = max_head - ls; /* ls <= max_head: every line found ends inside it */
		switch (find_line(buf, len, ls, window, &eol, &next)) {
		case LINE_BARE_LF:
			return fail(err, 400, "header: bare LF line ending");
		case LINE_NONE:
			if (len - ls < window)
				return HTTP_PARSE_INCOMPLETE;
			return fail(err, 431, "request head too large");
		case LINE_FOUND:
			break;
		}
		if (eol == ls)
			break;
		if (req->n_headers >= max_hdrs) /* unreachable: caught above; kept as a guard */
			return fail(err, 431, "too many header fields");
		if (parse_header_line(buf, ls, eol, &req->headers[req->n_headers], err) !=
		    HTTP_PARSE_OK)
			return HTTP_PARSE_ERROR;
		req->n_headers++;
		ls = next;
	}
	req->head_len = next;

	if (interpret_headers(req, lim, err) != HTTP_PARSE_OK)
		return HTTP_PARSE_ERROR;

	size_t body_len = 0;
	if (req->has_content_length) {
		if (req->content_length > (uint64_t)(SIZE_MAX - req->head_len))
			return fail(err, 413, "request body larger than allowed");
		body_len = (size_t)req->content_length;
	}
	if (len - req->head_len < body_len)
		return HTTP_PARSE_INCOMPLETE;
	req->body = buf + req->head_len;
	req->body_len = body_len;
	req->total_len = req->head_len + body_len;
	return HTTP_PARSE_OK;
}

/* ---- helpers -------------------------------------------------------------- */

int http_check_host(const struct http_request *req, struct http_error *err)
{
	uint32_t hosts = 0;
	uint32_t n = req->n_headers < HTTP_MAX_HEADERS_CAP ? req->n_headers : HTTP_MAX_HEADERS_CAP;
	for (uint32_t i = 0; i < n; i++)
		hosts += ieq(req->headers[i].name, req->headers[i].name_len, "host");
	if (hosts > 1)
		return fail(err, 400, "more than one Host header");
	if (hosts == 0 && req->version_minor >= 1)
		return fail(err, 400, "HTTP/1.1 request without a Host header");
	return HTTP_PARSE_OK;
}

const struct http_header *http_find_header(const struct http_request *req, const char *name)
{
	if (!req || !name)
		return NULL;
	uint32_t n = req->n_headers < HTTP_MAX_HEADERS_CAP ? req->n_headers : HTTP_MAX_HEADERS_CAP;
	size_t len = strlen(name);
	for (uint32_t i = 0; i < n; i++)
		if (req->headers[i].name_len == len && ieq(req->headers[i].name, len, name))
			return &req->headers[i];
	return NULL;
}

const char *http_reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 101: return "Switching Protocols";
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 301: return "Moved Permanently";
	case 302: return "Found";
	case 303: return "See Other";
	case 304: return "Not Modified";
	case 307: return "Temporary Redirect";
	case 308: return "Permanent Redirect";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 406: return "Not Acceptable";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 410: return "Gone";
	case 411: return "Length Required";
	case 412: return "Precondition Failed";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 415: return "Unsupported Media Type";
	case 416: return "Range Not Satisfiable";
	case 417: return "Expectation Failed";
	case 422: return "Unprocessable Content";
	case 425: return "Too Early";
	case 426: return "Upgrade Required";
	case 428: return "Precondition Required";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 505: return "HTTP Version Not Supported";
	case 507: return "Insufficient Storage";
	default: return "Unknown";
	}
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Decode one form-urlencoded octet at p[*i] (p[0..n)), advancing *i.
 * Returns the octet (0..255) or -1 when a '%' is not followed by two hex
 * digits.
 */
static int form_decode_at(const char *p, size_t n, size_t *i)
{
	char c = p[*i];
	if (c == '+') {
		(*i)++;
		return ' ';
	}
	if (c != '%') {
		(*i)++;
		return (unsigned char)c;
	}
	if (n - *i < 3)
		return -1;
	int hi = hexval(p[*i + 1]), lo = hexval(p[*i + 2]);
	if (hi < 0 || lo < 0)
		return -1;
	*i += 3;
	return hi * 16 + lo;
}

/* Does the encoded key p[0..n) decode to exactly `key`?  Malformed: no. */
static int form_key_matches(const char *p, size_t n, const char *key)
{
	size_t i = 0, k = 0;
	while (i < n) {
		int c = form_decode_at(p, n, &i);
		if (c < 0 || key[k] == '\0' || (unsigned char)key[k] != (unsigned)c)
			return 0;
		k++;
	}
	return key[k] == '\0';
}

/*
 * Pairs are separated by '&'; a pair without '=' has an empty value; empty
 * pairs are skipped.  Keys are compared after decoding.  The first match
 * wins.  A value that decodes to a NUL octet ("%00") counts as malformed:
 * `out` is used as a C string and an embedded NUL would silently truncate it.
 * On -1/-2, out (if out_size > 0) holds the empty string.
 */
int http_query_get(const char *query, size_t query_len, const char *key, char *out,
		   size_t out_size)
{
	if (out && out_size > 0)
		out[0] = '\0';
	if (!key || (!query && query_len > 0))
		return -1;
	size_t i = 0;
	while (i < query_len) {
		size_t s = i;
		while (i < query_len && query[i] != '&')
			i++;
		size_t e = i; /* pair is query[s..e) */
		i++;          /* skip '&' (or step past the end) */
		if (e == s)
			continue;
		const char *eqs = memchr(query + s, '=', e - s);
		size_t kend = eqs ? (size_t)(eqs - query) : e;
		if (!form_key_matches(query + s, kend - s, key))
			continue;

		size_t vs = eqs ? kend + 1 : e, o = 0;
		const char *v = query + vs;
		size_t vn = e - vs, j = 0;
		while (j < vn) {
			int c = form_decode_at(v, vn, &j);
			if (c <= 0 || !out || o + 1 >= out_size || o >= (size_t)INT_MAX) {
				if (out && out_size > 0)
					out[0] = '\0';
				return -2;
			}
			out[o++] = (char)c;
		}
		if (!out || out_size == 0)
			return -2;
		out[o] = '\0';
		return (int)o;
	}
	return -1;
}
