/*
 * webhook_url.c -- the destination policy of webhooks (contract in
 * webhook_url.h).
 *
 * Why the checks are on addresses, after resolution, and not on the host
 * text: "localhost", "127.1", "0x7f000001", a name whose DNS answer is
 * 10.0.0.5 and "[::ffff:127.0.0.1]" all reach the same forbidden places;
 * only the address the connect will use tells.  The refused ranges are a
 * table (IPV4_REFUSED), and IPv6 forms that embed an IPv4 address
 * (::ffff:0:0/96 mapped, 64:ff9b::/96 NAT64, ::/96 compatible) are checked
 * as that IPv4 address.  A host whose last label starts with a digit must
 * be a strict dotted quad, so the text and the address cannot disagree.
 */
#include "engine/events/webhook_url.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

struct v4_range {
	uint32_t net;
	unsigned prefix;
	const char *reason;
};

/* Every IPv4 range that is not a public destination. */
static const struct v4_range IPV4_REFUSED[] = {
	{0x00000000u, 8, "this-network"},   /* 0.0.0.0/8 */
	{0x0a000000u, 8, "private"},        /* 10/8, RFC 1918 */
	{0x64400000u, 10, "cgnat"},         /* 100.64/10, RFC 6598 */
	{0x7f000000u, 8, "loopback"},       /* 127/8 */
	{0xa9fe0000u, 16, "link-local"},    /* 169.254/16 (cloud metadata) */
	{0xac100000u, 12, "private"},       /* 172.16/12 */
	{0xc0000000u, 24, "reserved"},      /* 192.0.0/24, IETF protocol assignments */
	{0xc0a80000u, 16, "private"},       /* 192.168/16 */
	{0xc6120000u, 15, "reserved"},      /* 198.18/15, benchmarking */
	{0xe0000000u, 4, "multicast"},      /* 224/4 */
	{0xf0000000u, 4, "reserved"},       /* 240/4, 255.255.255.255 broadcast included */
};

/* Copy a reason into err (NUL-terminated, errlen may be 0). */
static void set_err(char *err, size_t errlen, const char *what)
{
	if (errlen)
		snprintf(err, errlen, "%s", what);
}

/* Why the IPv4 address a (host order) is refused, or NULL. */
static const char *v4_refusal(uint32_t a)
{
	for (size_t i = 0; i < sizeof(IPV4_REFUSED) / sizeof(IPV4_REFUSED[0]); i++) {
		uint32_t mask = IPV4_REFUSED[i].prefix ? 0xffffffffu << (32 - IPV4_REFUSED[i].prefix) : 0;
		if ((a & mask) == IPV4_REFUSED[i].net)
			return IPV4_REFUSED[i].reason;
	}
	return NULL;
}

/* The IPv4 address in the last 4 bytes of b. */
static uint32_t tail_v4(const uint8_t *b)
{
	return (uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 | (uint32_t)b[14] << 8 | b[15];
}

/* Why the IPv6 address b[16] is refused, or NULL. */
static const char *v6_refusal(const uint8_t *b)
{
	static const uint8_t zero10[10] = {0};
	static const uint8_t nat64[12] = {0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
	if (memcmp(b, zero10, 10) == 0 && b[10] == 0xff && b[11] == 0xff)
		return v4_refusal(tail_v4(b)); /* ::ffff:a.b.c.d, mapped */
	if (memcmp(b, nat64, 12) == 0)
		return v4_refusal(tail_v4(b)); /* 64:ff9b::a.b.c.d, NAT64 */
	if (memcmp(b, zero10, 10) == 0 && b[10] == 0 && b[11] == 0) {
		uint32_t a = tail_v4(b);
		if (a == 0)
			return "unspecified"; /* :: */
		if (a == 1)
			return "loopback";    /* ::1 */
		return "ipv4-compatible";     /* ::a.b.c.d, deprecated: never public */
	}
	if ((b[0] & 0xfe) == 0xfc)
		return "private";             /* fc00::/7, ULA */
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
		return "link-local";          /* fe80::/10 */
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0)
		return "site-local";          /* fec0::/10, deprecated */
	if (b[0] == 0xff)
		return "multicast";           /* ff00::/8 */
	return NULL;
}

const char *wh_addr_refusal(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
		return v4_refusal(ntohl(in->sin_addr.s_addr));
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
		return v6_refusal(in6->sin6_addr.s6_addr);
	}
	return "family";
}

/* 1 when c may appear in a DNS host name as we accept it. */
static int host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

/* Check a DNS name or IPv4 literal h[0..n) and copy it lower-cased into
 * out: 0 or -1. */
static int parse_name(const char *h, size_t n, char *out, char *err, size_t errlen)
{
	if (n == 0 || n > WH_HOST_MAX) {
		set_err(err, errlen, "host empty or too long");
		return -1;
	}
	size_t label = 0, last_label = 0;
	for (size_t i = 0; i < n; i++) {
		char c = h[i];
		if (!host_char(c)) {
			set_err(err, errlen, "host has a character outside [A-Za-z0-9.-]");
			return -1;
		}
		if (c == '.') {
			if (label == 0 || h[i - 1] == '-') {
				set_err(err, errlen, "host has an empty label or a label ending in '-'");
				return -1;
			}
			label = 0;
			last_label = i + 1;
		} else {
			if (label == 0 && c == '-') {
				set_err(err, errlen, "host has a label starting with '-'");
				return -1;
			}
			if (++label > WH_LABEL_MAX) {
				set_err(err, errlen, "host label longer than 63");
				return -1;
			}
		}
		out[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
	}
	out[n] = '\0';
	if (label == 0 || h[n - 1] == '-') {
		set_err(err, errlen, "host ends with '.' or '-'");
		return -1;
	}
	/* A last label starting with a digit (no top-level domain does) makes
	 * the host an IPv4 literal: only a strict dotted quad, not "127.1",
	 * "2130706433" or "0x7f.0.0.1", which resolvers also accept. */
	struct in_addr a4;
	if (out[last_label] >= '0' && out[last_label] <= '9' && inet_pton(AF_INET, out, &a4) != 1) {
		set_err(err, errlen, "numeric host is not a dotted quad");
		return -1;
	}
	return 0;
}

/* Parse ":port" text p[0..n) (digits only): the port, or -1. */
static long parse_port(const char *p, size_t n)
{
	if (n == 0 || n > 5 || p[0] == '0')
		return -1;
	long v = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	return v >= 1 && v <= 65535 ? v : -1;
}

/* Case-insensitive prefix test of s[0..n) against lower-case pre. */
static int has_prefix_ci(const char *s, size_t n, const char *pre)
{
	size_t pl = strlen(pre);
	if (n < pl)
		return 0;
	for (size_t i = 0; i < pl; i++) {
		char c = s[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != pre[i])
			return 0;
	}
	return 1;
}

int wh_url_parse(const char *url, size_t n, const struct wh_policy *p, struct wh_url *out, char *err,
		 size_t errlen)
{
	if (n == 0 || n > WH_URL_MAX) {
		set_err(err, errlen, "URL empty or longer than 2048 bytes");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)url[i] < 0x21 || (unsigned char)url[i] > 0x7e || url[i] == '\\') {
			set_err(err, errlen, "URL has whitespace, a control byte, a backslash or non-ASCII");
			return -1;
		}
	struct wh_url u = {0};
	size_t i;
	if (has_prefix_ci(url, n, "https://")) {
		u.https = 1;
		u.port = 443;
		i = 8;
	} else if (has_prefix_ci(url, n, "http://")) {
		if (!p->allow_http) {
			set_err(err, errlen, "http:// is not allowed (https only)");
			return -1;
		}
		u.port = 80;
		i = 7;
	} else {
		set_err(err, errlen, "scheme must be https://");
		return -1;
	}
	size_t a = i;
	while (i < n && url[i] != '/' && url[i] != '?' && url[i] != '#')
		i++;
	size_t auth_end = i;
	if (memchr(url + i, '#', n - i)) {
		set_err(err, errlen, "URL has a fragment");
		return -1;
	}
	if (memchr(url + a, '@', auth_end - a)) {
		set_err(err, errlen, "URL has user information");
		return -1;
	}
	size_t host_end, port_at = 0;
	if (a < auth_end && url[a] == '[') {
		const char *close = memchr(url + a, ']', auth_end - a);
		size_t hl = close ? (size_t)(close - (url + a)) - 1 : 0;
		char lit[WH_ADDR_TEXT_MAX];
		struct in6_addr a6;
		if (!close || hl == 0 || hl >= sizeof(lit)) {
			set_err(err, errlen, "bad IPv6 literal");
			return -1;
		}
		memcpy(lit, url + a + 1, hl);
		lit[hl] = '\0';
		if (inet_pton(AF_INET6, lit, &a6) != 1) {
			set_err(err, errlen, "bad IPv6 literal");
			return -1;
		}
		for (size_t k = 0; k <= hl; k++)
			u.host[k] = (lit[k] >= 'A' && lit[k] <= 'Z') ? (char)(lit[k] - 'A' + 'a') : lit[k];
		host_end = (size_t)(close - url) + 1;
		if (host_end < auth_end && url[host_end] != ':') {
			set_err(err, errlen, "junk after the IPv6 literal");
			return -1;
		}
	} else {
		const char *colon = memchr(url + a, ':', auth_end - a);
		host_end = colon ? (size_t)(colon - url) : auth_end;
		if (parse_name(url + a, host_end - a, u.host, err, errlen) != 0)
			return -1;
	}
	if (host_end < auth_end) {
		port_at = host_end + 1;
		long port = parse_port(url + port_at, auth_end - port_at);
		if (port < 0) {
			set_err(err, errlen, "bad port");
			return -1;
		}
		u.port = (uint16_t)port;
	}
	*out = u;
	return 0;
}

int wh_url_resolve(const struct wh_url *u, const struct wh_policy *p, struct wh_target *t, char *err,
		   size_t errlen)
{
	struct in6_addr a6;
	struct in_addr a4;
	int literal = inet_pton(AF_INET6, u->host, &a6) == 1 || inet_pton(AF_INET, u->host, &a4) == 1;
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				 .ai_flags = literal ? AI_NUMERICHOST : 0};
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(u->host, NULL, &hints, &res);
	if (rc != 0 || !res) {
		if (errlen)
			snprintf(err, errlen, "cannot resolve host: %s", rc ? gai_strerror(rc) : "no address");
		if (res)
			freeaddrinfo(res);
		return -1;
	}
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		const char *why = wh_addr_refusal(ai->ai_addr);
		if (why && !p->allow_private) {
			if (errlen)
				snprintf(err, errlen, "destination refused: %s address", why);
			freeaddrinfo(res);
			return -1;
		}
	}
	const void *src = res->ai_family == AF_INET
				  ? (const void *)&((const struct sockaddr_in *)(const void *)res->ai_addr)->sin_addr
				  : (const void *)&((const struct sockaddr_in6 *)(const void *)res->ai_addr)->sin6_addr;
	char txt[WH_ADDR_TEXT_MAX];
	int ok = inet_ntop(res->ai_family, src, txt, sizeof(txt)) != NULL;
	int v6 = res->ai_family == AF_INET6;
	freeaddrinfo(res);
	if (!ok) {
		set_err(err, errlen, "cannot format the address");
		return -1;
	}
	snprintf(t->addr, sizeof(t->addr), "%s", txt);
	/* A literal needs no pin (no DNS is asked); a name is pinned. */
	if (literal)
		t->resolve[0] = '\0';
	else
		snprintf(t->resolve, sizeof(t->resolve), v6 ? "%s:%u:[%s]" : "%s:%u:%s", u->host, (unsigned)u->port,
			 txt);
	return 0;
}
