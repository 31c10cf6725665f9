/*
 * webhook_url.h -- where a webhook may be sent (issue 18 item 4).
 *
 * Why: the URL of an endpoint is chosen by a partner, and the platform
 * makes the request from inside its own network.  Without a policy a
 * partner could make the platform call its loopback admin ports, the
 * cloud metadata address (169.254.169.254) or any private service (SSRF).
 * So:
 *   - the URL is parsed strictly: https:// (http:// only when the operator
 *     allows plain HTTP), a host (DNS name, IPv4 literal or [IPv6]), an
 *     optional port, an optional path and query of visible ASCII; no
 *     userinfo, no fragment, no whitespace or control bytes;
 *   - the host is resolved (getaddrinfo: this runs off the event loop, on
 *     the delivery thread or a worker) and every address must be public:
 *     loopback, link-local, private (RFC 1918, ULA fc00::/7), CGNAT
 *     100.64/10, 0.0.0.0/8, multicast, broadcast/reserved 240/4, the
 *     unspecified address, and the IPv4-mapped / NAT64 forms of all of
 *     these are refused unless the operator allows private destinations
 *     (an explicit flag; tests set it to reach 127.0.0.1);
 *   - the address that passed is pinned for the request
 *     (CURLOPT_RESOLVE "host:port:addr"), so a second DNS answer cannot
 *     change the destination between the check and the connect.
 */
#ifndef WM_WEBHOOK_URL_H
#define WM_WEBHOOK_URL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define WH_URL_MAX 2048          /* bytes of an endpoint URL */
#define WH_HOST_MAX 253          /* bytes of a DNS name (RFC 1035) */
#define WH_LABEL_MAX 63
#define WH_ADDR_TEXT_MAX 48      /* an IPv6 address in text, brackets and NUL included */
#define WH_RESOLVE_MAX (WH_HOST_MAX + 1 + 5 + 1 + WH_ADDR_TEXT_MAX + 1) /* "host:port:addr" */

struct wh_policy {
	int allow_http;          /* accept http:// (operator setting; default off) */
	int allow_private;       /* accept non-public destinations (operator setting; default off) */
};

struct wh_url {
	int https;
	char host[WH_HOST_MAX + 1];  /* as written, brackets of an IPv6 literal removed, lower case */
	uint16_t port;               /* explicit or the scheme's default */
};

/* A destination after resolution: the address that passed the policy,
 * and the CURLOPT_RESOLVE entry that pins it. */
struct wh_target {
	char addr[WH_ADDR_TEXT_MAX];
	char resolve[WH_RESOLVE_MAX];
};

/* Parse url[0..n) under policy p into out: 0, or -1 with the reason in
 * err (errlen bytes, NUL-terminated).  Scheme and host are case-
 * insensitive; the port is 1..65535 without leading zeros. */
int wh_url_parse(const char *url, size_t n, const struct wh_policy *p, struct wh_url *out, char *err,
		 size_t errlen);

/* Why an address is not a public destination ("loopback", "private",
 * "link-local", ...), or NULL when it is.  sa is AF_INET or AF_INET6;
 * any other family is refused ("family"). */
const char *wh_addr_refusal(const struct sockaddr *sa);

/* Resolve u's host and check every address under p: 0 with t filled (the
 * first address), or -1 with the reason in err (no address, or an address
 * refused: one refused address refuses the host, so a name cannot mix a
 * public and a private answer). */
int wh_url_resolve(const struct wh_url *u, const struct wh_policy *p, struct wh_target *t, char *err,
		   size_t errlen);

#endif
