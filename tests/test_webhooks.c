/*
 * test_webhooks.c -- the outbound webhook library (engine/events/, issue 18
 * items 2 and 4): Standard Webhooks signatures, the Svix retry schedule,
 * the destination policy and delivery with libcurl.
 *
 * Expected values never come from the code under test: the signature is
 * the Standard Webhooks reference vector (the one its test suites and the
 * Svix libraries use) and, for a second secret, OpenSSL's command line;
 * the schedule is the published list written out here again; address
 * ranges are the RFCs'.  Delivery tests run a receiver on 127.0.0.1 (a
 * thread per connection) that answers on demand by path and verifies every
 * signature it is sent.  No traffic leaves 127.0.0.0/8.
 */
#include "engine/events/webhook_http.h"
#include "engine/events/webhook_retry.h"
#include "engine/events/webhook_sign.h"
#include "engine/events/webhook_url.h"
#include "tests/wm_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* The Standard Webhooks reference vector. */
#define REF_SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define REF_ID "msg_p5jXN8AQM9LWM0D4loKWxJek"
#define REF_TS 1614265330
#define REF_TS_TEXT "1614265330"
#define REF_BODY "{\"test\": 2432232314}"
#define REF_SIG "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
/* A second secret (32 bytes: "secret-of-a-rotated-endpoint-32b"). */
#define OTHER_SECRET "whsec_c2VjcmV0LW9mLWEtcm90YXRlZC1lbmRwb2ludC0zMmI="

static struct wh_secret secret_of(const char *text)
{
	struct wh_secret s;
	cr_assert_eq(wh_secret_parse(text, strlen(text), &s), 0, "secret %s", text);
	return s;
}

/* base64(HMAC-SHA256(key, content)) by OpenSSL's command line. */
static void openssl_hmac_b64(const struct wh_secret *k, const char *content, char *out, size_t cap)
{
	char path[] = "/tmp/wm-wh-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
	char hex[2 * WH_SECRET_MAX + 1];
	for (size_t i = 0; i < k->len; i++)
		snprintf(hex + 2 * i, 3, "%02x", k->key[i]);
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "openssl dgst -sha256 -mac HMAC -macopt hexkey:%s -binary %s | base64 -w0", hex,
		 path);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	size_t n = fread(out, 1, cap - 1, p);
	out[n] = '\0';
	cr_assert_eq(pclose(p), 0);
	unlink(path);
}

WM_TEST(webhooks, signs_the_standard_webhooks_reference_vector)
{
	struct wh_secret s = secret_of(REF_SECRET);
	cr_assert_eq(s.len, 24);
	char sig[WH_SIG_OUT_MAX];
	int n = wh_sign(&s, 1, REF_ID, strlen(REF_ID), REF_TS, REF_BODY, strlen(REF_BODY), sig, sizeof(sig));
	cr_assert_eq(n, (int)strlen(REF_SIG));
	cr_assert_str_eq(sig, REF_SIG);
	cr_assert_eq(wh_verify(&s, REF_ID, strlen(REF_ID), REF_TS_TEXT, strlen(REF_TS_TEXT), REF_BODY,
			       strlen(REF_BODY), REF_SIG, strlen(REF_SIG), REF_TS + 10, WH_DEFAULT_TOLERANCE_S),
		     WH_OK);
	/* a changed body, id or timestamp does not verify */
	cr_assert_eq(wh_verify(&s, REF_ID, strlen(REF_ID), REF_TS_TEXT, strlen(REF_TS_TEXT), "{\"test\": 2432232315}",
			       strlen(REF_BODY), REF_SIG, strlen(REF_SIG), REF_TS, WH_DEFAULT_TOLERANCE_S),
		     WH_E_MISMATCH);
	cr_assert_eq(wh_verify(&s, "msg_other", 9, REF_TS_TEXT, strlen(REF_TS_TEXT), REF_BODY, strlen(REF_BODY),
			       REF_SIG, strlen(REF_SIG), REF_TS, WH_DEFAULT_TOLERANCE_S),
		     WH_E_MISMATCH);
	cr_assert_eq(wh_verify(&s, REF_ID, strlen(REF_ID), "1614265331", 10, REF_BODY, strlen(REF_BODY), REF_SIG,
			       strlen(REF_SIG), REF_TS, WH_DEFAULT_TOLERANCE_S),
		     WH_E_MISMATCH);
}

WM_TEST(webhooks, the_three_header_lines_carry_the_reference_values)
{
	struct wh_secret s = secret_of(REF_SECRET);
	struct wh_signed_headers h;
	cr_assert_eq(wh_sign_headers(&s, 1, REF_ID, strlen(REF_ID), REF_TS, REF_BODY, strlen(REF_BODY), &h), 0);
	cr_assert_str_eq(h.id, "webhook-id: " REF_ID);
	cr_assert_str_eq(h.timestamp, "webhook-timestamp: " REF_TS_TEXT);
	cr_assert_str_eq(h.signature, "webhook-signature: " REF_SIG);
	/* the longest id fits; an id with a space or past WH_ID_MAX is refused */
	char id[WH_ID_MAX + 2];
	memset(id, 'i', sizeof(id));
	cr_assert_eq(wh_sign_headers(&s, 1, id, WH_ID_MAX, INT64_MAX, "", 0, &h), 0);
	cr_assert_eq(strlen(h.id), 12 + WH_ID_MAX);
	cr_assert_eq(wh_sign_headers(&s, 1, id, WH_ID_MAX + 1, 1, "", 0, &h), -1);
	cr_assert_eq(wh_sign_headers(&s, 1, "a b", 3, 1, "", 0, &h), -1);
	cr_assert_eq(wh_sign_headers(&s, 1, "a\r\nb", 4, 1, "", 0, &h), -1);
	cr_assert_eq(wh_sign_headers(&s, 1, "ab", 2, -1, "", 0, &h), -1);
}

WM_TEST(webhooks, timestamp_tolerance_holds_at_and_past_its_edge)
{
	struct wh_secret s = secret_of(REF_SECRET);
	const char *t = REF_TS_TEXT;
	cr_assert_eq(wh_verify(&s, REF_ID, strlen(REF_ID), t, strlen(t), REF_BODY, strlen(REF_BODY), REF_SIG,
			       strlen(REF_SIG), REF_TS + 300, 300),
		     WH_OK);
	cr_assert_eq(wh_verify(&s, REF_ID, strlen(REF_ID), t, strlen(t), REF_BODY, strlen(REF_BODY), REF_SIG,
			       strlen(REF_SIG), REF_TS + 301, 300),
		     WH_E_SKEW);
	cr_assert_eq(wh_verify(&s, REF_ID, strlen(REF_ID), t, strlen(t), REF_BODY, strlen(REF_BODY), REF_SIG,
			       strlen(REF_SIG), REF_TS - 300, 300),
		     WH_OK);
	cr_assert_eq(wh_verify(&s, REF_ID, strlen(REF_ID), t, strlen(t), REF_BODY, strlen(REF_BODY), REF_SIG,
			       strlen(REF_SIG), REF_TS - 301, 300),
		     WH_E_SKEW);
}

WM_TEST(webhooks, rotation_carries_two_signatures_either_secret_verifies)
{
	struct wh_secret two[2] = {secret_of(OTHER_SECRET), secret_of(REF_SECRET)};
	cr_assert_eq(two[0].len, 32);
	char sig[WH_SIG_OUT_MAX];
	int n = wh_sign(two, 2, REF_ID, strlen(REF_ID), REF_TS, REF_BODY, strlen(REF_BODY), sig, sizeof(sig));
	cr_assert_eq(n, 2 * (int)strlen(REF_SIG) + 1);
	/* the second entry is the reference signature, the first OpenSSL's */
	cr_assert_str_eq(sig + strlen(REF_SIG) + 1, REF_SIG);
	char want[128];
	openssl_hmac_b64(&two[0], REF_ID "." REF_TS_TEXT "." REF_BODY, want, sizeof(want));
	cr_assert_eq(strncmp(sig, "v1,", 3), 0);
	cr_assert_eq(strncmp(sig + 3, want, WH_MAC_B64_LEN), 0, "%s vs %s", sig, want);
	cr_assert_eq(sig[strlen(REF_SIG)], ' ');
	for (int i = 0; i < 2; i++)
		cr_assert_eq(wh_verify(&two[i], REF_ID, strlen(REF_ID), REF_TS_TEXT, strlen(REF_TS_TEXT), REF_BODY,
				       strlen(REF_BODY), sig, (size_t)n, REF_TS, WH_DEFAULT_TOLERANCE_S),
			     WH_OK, "secret %d", i);
	struct wh_secret third;
	cr_assert_eq(wh_secret_generate(40, &third), 0);
	cr_assert_eq(wh_verify(&third, REF_ID, strlen(REF_ID), REF_TS_TEXT, strlen(REF_TS_TEXT), REF_BODY,
			       strlen(REF_BODY), sig, (size_t)n, REF_TS, WH_DEFAULT_TOLERANCE_S),
		     WH_E_MISMATCH);
	/* more than WH_SIGN_MAX_SECRETS is refused */
	struct wh_secret three[3] = {two[0], two[1], third};
	cr_assert_eq(wh_sign(three, 3, REF_ID, strlen(REF_ID), REF_TS, "", 0, sig, sizeof(sig)), -1);
}

WM_TEST(webhooks, secret_parsing_is_strict_and_bounded)
{
	struct wh_secret s;
	char text[WH_SECRET_TEXT_MAX + 1];
	/* 24 and 64 bytes are accepted and format back to the same text */
	for (size_t len = WH_SECRET_MIN; len <= WH_SECRET_MAX; len += WH_SECRET_MAX - WH_SECRET_MIN) {
		cr_assert_eq(wh_secret_generate(len, &s), 0);
		int n = wh_secret_format(&s, text, sizeof(text));
		cr_assert_gt(n, 0);
		struct wh_secret back;
		cr_assert_eq(wh_secret_parse(text, (size_t)n, &back), 0);
		cr_assert_eq(back.len, len);
		cr_assert_eq(memcmp(back.key, s.key, len), 0);
	}
	/* 23 and 65 bytes are not generated, formatted nor parsed */
	cr_assert_eq(wh_secret_generate(WH_SECRET_MIN - 1, &s), -1);
	cr_assert_eq(wh_secret_generate(WH_SECRET_MAX + 1, &s), -1);
	uint8_t raw[WH_SECRET_MAX + 1] = {0};
	char b64[128];
	strcpy(b64, "whsec_");
	wh_b64_encode(raw, WH_SECRET_MIN - 1, b64 + 6, sizeof(b64) - 6);
	cr_assert_eq(wh_secret_parse(b64, strlen(b64), &s), -1, "23 bytes");
	wh_b64_encode(raw, WH_SECRET_MAX + 1, b64 + 6, sizeof(b64) - 6);
	cr_assert_eq(wh_secret_parse(b64, strlen(b64), &s), -1, "65 bytes");
	const char *bad[] = {
		"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",        /* no prefix */
		"whsek_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",  /* wrong prefix */
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS",   /* length not a multiple of 4 */
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS_",  /* base64url, not base64 */
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw ", /* trailing space */
		"whsec_c2VjcmV0LW9mLWEtcm90YXRlZC1lbmRwb2ludC0zMmJ=", /* non-zero bits under padding */
		"whsec_",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(wh_secret_parse(bad[i], strlen(bad[i]), &s), -1, "%s", bad[i]);
}

WM_TEST(webhooks, signature_header_parsing_is_strict_and_bounded)
{
	struct wh_sig_list l;
	const char *ok[] = {REF_SIG, REF_SIG " " REF_SIG, "v2,AAAA " REF_SIG, "v1a,AAAA"};
	for (size_t i = 0; i < 3; i++)
		cr_assert_eq(wh_sig_parse(ok[i], strlen(ok[i]), &l), 0, "%s", ok[i]);
	cr_assert_eq(wh_sig_parse(ok[2], strlen(ok[2]), &l), 0);
	cr_assert_eq(l.n_entries, 2);
	cr_assert_eq(l.n_v1, 1);
	const char *bad[] = {
		"",
		" " REF_SIG,
		REF_SIG " ",
		REF_SIG "  " REF_SIG,
		REF_SIG "," REF_SIG,
		"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE",  /* unpadded */
		"v1,AAAA",                                         /* v1 but not 32 bytes */
		"v1=g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
		"v,AAAA",
		"v1,",
		"v1234567890,AAAA",                                /* version of 10 digits */
		"v1a,AAAA",                                        /* version not digits */
		"V1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
		"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=\t",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(wh_sig_parse(bad[i], strlen(bad[i]), &l), -1, "%s", bad[i]);
	/* WH_SIG_PARSE_MAX entries parse, one more does not */
	char hdr[2048] = "";
	for (int i = 0; i < WH_SIG_PARSE_MAX; i++)
		strcat(strcat(hdr, i ? " " : ""), "v2,AAAA");
	cr_assert_eq(wh_sig_parse(hdr, strlen(hdr), &l), 0);
	cr_assert_eq(l.n_entries, WH_SIG_PARSE_MAX);
	strcat(hdr, " v2,AAAA");
	cr_assert_eq(wh_sig_parse(hdr, strlen(hdr), &l), -1);
	/* WH_SIG_HEADER_MAX bytes parse, one more does not */
	char big[WH_SIG_HEADER_MAX + 2];
	memset(big, 'A', sizeof(big));
	memcpy(big, "v2,", 3);
	/* "v2," + base64 of length multiple of 4: total WH_SIG_HEADER_MAX = 1024 = 3 + 1021: use v22 */
	memcpy(big, "v22,", 4); /* 4 + 1020 */
	cr_assert_eq(wh_sig_parse(big, WH_SIG_HEADER_MAX, &l), 0);
	memcpy(big, "v222,", 5); /* 5 + 1020 = 1025 */
	cr_assert_eq(wh_sig_parse(big, WH_SIG_HEADER_MAX + 1, &l), -1);
}

WM_TEST(webhooks, retry_schedule_is_the_svix_list)
{
	const int64_t want_s[WH_ATTEMPTS] = {0, 5, 300, 1800, 7200, 18000, 36000, 36000};
	for (unsigned a = 1; a <= WH_ATTEMPTS; a++) {
		int64_t base = want_s[a - 1] * 1000;
		int64_t span = base / 10;
		/* rnd 0 is the low edge, rnd 2 * span the high edge, one more wraps to the low edge */
		cr_assert_eq(wh_delay_ms(a, 0), base - span, "attempt %u", a);
		cr_assert_eq(wh_delay_ms(a, (uint64_t)span), base, "attempt %u", a);
		cr_assert_eq(wh_delay_ms(a, (uint64_t)(2 * span)), base + span, "attempt %u", a);
		cr_assert_eq(wh_delay_ms(a, (uint64_t)(2 * span + 1)), base - span, "attempt %u", a);
		for (uint64_t r = UINT64_MAX - 50; r != 0; r++) {
			int64_t d = wh_delay_ms(a, r);
			cr_assert(d >= base - span && d <= base + span, "attempt %u rnd %llu: %lld", a,
				  (unsigned long long)r, (long long)d);
		}
	}
	cr_assert_eq(wh_delay_ms(0, 0), -1);
	cr_assert_eq(wh_delay_ms(WH_ATTEMPTS + 1, 0), -1);
}

WM_TEST(webhooks, an_answer_is_classified_and_the_last_failure_is_dead_lettered)
{
	cr_assert_eq(wh_classify(1, 200), WH_CLASS_DELIVERED);
	cr_assert_eq(wh_classify(1, 204), WH_CLASS_DELIVERED);
	cr_assert_eq(wh_classify(1, 299), WH_CLASS_DELIVERED);
	cr_assert_eq(wh_classify(1, 300), WH_CLASS_RETRY);
	cr_assert_eq(wh_classify(1, 199), WH_CLASS_RETRY);
	cr_assert_eq(wh_classify(1, 302), WH_CLASS_RETRY);
	cr_assert_eq(wh_classify(1, 404), WH_CLASS_RETRY);
	cr_assert_eq(wh_classify(1, 410), WH_CLASS_GONE);
	cr_assert_eq(wh_classify(1, 500), WH_CLASS_RETRY);
	cr_assert_eq(wh_classify(0, 200), WH_CLASS_RETRY, "a transport error is retried whatever the status");
	int64_t at = -1;
	cr_assert_eq(wh_after_attempt(WH_CLASS_RETRY, 0, 1000, 7, 0, &at), WH_NEXT_RETRY);
	cr_assert_eq(at, 1000);
	cr_assert_eq(wh_after_attempt(WH_CLASS_DELIVERED, 3, 1000, 0, 0, &at), WH_NEXT_DONE);
	cr_assert_eq(wh_after_attempt(WH_CLASS_GONE, 1, 1000, 0, 0, &at), WH_NEXT_DISABLE);
	/* attempt 1 failed at t: attempt 2 at t + 5 s -10 % (rnd 0) */
	cr_assert_eq(wh_after_attempt(WH_CLASS_RETRY, 1, 1000, 0, 0, &at), WH_NEXT_RETRY);
	cr_assert_eq(at, 1000 + 4500);
	/* attempt 7 failed: attempt 8 at t + 10 h (rnd at the middle) */
	cr_assert_eq(wh_after_attempt(WH_CLASS_RETRY, WH_ATTEMPTS - 1, 0, 3600000, 0, &at), WH_NEXT_RETRY);
	cr_assert_eq(at, 36000000);
	/* a Retry-After later than the schedule wins; an earlier one does not */
	cr_assert_eq(wh_after_attempt(WH_CLASS_RETRY, 1, 1000, 0, 120000, &at), WH_NEXT_RETRY);
	cr_assert_eq(at, 1000 + 120000);
	cr_assert_eq(wh_after_attempt(WH_CLASS_RETRY, 1, 1000, 0, 4500, &at), WH_NEXT_RETRY);
	cr_assert_eq(at, 1000 + 4500, "equal to the schedule");
	cr_assert_eq(wh_after_attempt(WH_CLASS_RETRY, 1, 1000, 0, 4501, &at), WH_NEXT_RETRY);
	cr_assert_eq(at, 1000 + 4501, "one past the schedule");
	cr_assert_eq(wh_after_attempt(WH_CLASS_RETRY, 1, 1000, 0, 1, &at), WH_NEXT_RETRY);
	cr_assert_eq(at, 1000 + 4500);
	/* attempt 8, the last, failed: dead letter; past it too */
	at = -1;
	cr_assert_eq(wh_after_attempt(WH_CLASS_RETRY, WH_ATTEMPTS, 0, 0, 0, &at), WH_NEXT_DEAD);
	cr_assert_eq(wh_after_attempt(WH_CLASS_RETRY, WH_ATTEMPTS + 1, 0, 0, 0, &at), WH_NEXT_DEAD);
	cr_assert_eq(at, -1);
}

/* ---- destination policy ------------------------------------------------ */

/* wh_addr_refusal of an address in text (v4 or v6). */
static const char *refusal_of(const char *text)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, text, &in->sin_addr) == 1)
		in->sin_family = AF_INET;
	else if (inet_pton(AF_INET6, text, &in6->sin6_addr) == 1)
		in6->sin6_family = AF_INET6;
	else
		cr_assert_fail("bad test address %s", text);
	return wh_addr_refusal((struct sockaddr *)&ss);
}

WM_TEST(webhooks, each_non_public_range_is_refused_at_its_edges)
{
	const char *refused[] = {
		"0.0.0.0", "0.255.255.255",           /* 0/8 */
		"10.0.0.0", "10.255.255.255",         /* RFC 1918 */
		"100.64.0.0", "100.127.255.255",      /* CGNAT */
		"127.0.0.1", "127.255.255.255",       /* loopback */
		"169.254.0.0", "169.254.169.254",     /* link-local, metadata */
		"172.16.0.0", "172.31.255.255",       /* RFC 1918 */
		"192.168.0.0", "192.168.255.255",     /* RFC 1918 */
		"224.0.0.0", "239.255.255.255",       /* multicast */
		"240.0.0.0", "255.255.255.255",       /* reserved, broadcast */
		"::", "::1",                          /* unspecified, loopback */
		"fc00::", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", /* ULA */
		"fe80::1", "febf:ffff::1",            /* link-local */
		"ff02::1",                            /* multicast */
		"::ffff:127.0.0.1", "::ffff:10.1.2.3", "::ffff:169.254.169.254", "::ffff:100.64.0.1",
		"::ffff:192.168.1.1", "::ffff:0.0.0.0", "::ffff:224.0.0.1", "::ffff:255.255.255.255",
		"64:ff9b::127.0.0.1", "64:ff9b::10.0.0.1",
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		cr_assert_not_null(refusal_of(refused[i]), "%s must be refused", refused[i]);
	const char *public[] = {
		"1.0.0.0", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0", "126.255.255.255",
		"128.0.0.0", "169.253.255.255", "169.255.0.0", "172.15.255.255", "172.32.0.0", "192.167.255.255",
		"192.169.0.0", "223.255.255.255", "2001:db8::1", "2606:4700::1", "fbff:ffff::1", "fe00::1",
		"::ffff:8.8.8.8", "64:ff9b::8.8.8.8",
	};
	for (size_t i = 0; i < sizeof(public) / sizeof(public[0]); i++)
		cr_assert_null(refusal_of(public[i]), "%s must be allowed: %s", public[i], refusal_of(public[i]));
	cr_assert_str_eq(refusal_of("127.0.0.1"), "loopback");
	cr_assert_str_eq(refusal_of("10.0.0.1"), "private");
	cr_assert_str_eq(refusal_of("fd00::1"), "private");
	cr_assert_str_eq(refusal_of("169.254.169.254"), "link-local");
	cr_assert_str_eq(refusal_of("100.64.0.1"), "cgnat");
}

static int parses(const char *url, int allow_http)
{
	struct wh_policy p = {.allow_http = allow_http};
	struct wh_url u;
	char err[128];
	return wh_url_parse(url, strlen(url), &p, &u, err, sizeof(err)) == 0;
}

WM_TEST(webhooks, url_parsing_is_strict_and_bounded)
{
	struct wh_policy p = {0};
	struct wh_url u;
	char err[128];
	cr_assert_eq(wh_url_parse("HTTPS://Hooks.Example.COM:8443/a/b?c=d", 38, &p, &u, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_str_eq(u.host, "hooks.example.com");
	cr_assert_eq(u.port, 8443);
	cr_assert_eq(u.https, 1);
	cr_assert(parses("https://example.com", 0));
	cr_assert(parses("https://[2001:db8::1]:443/x", 0));
	cr_assert(parses("https://93.184.216.34/x", 0));
	cr_assert(parses("https://example.com:65535/", 0));
	cr_assert(parses("https://example.com:1/", 0));
	cr_assert(!parses("http://example.com/", 0), "plain http needs the operator's flag");
	cr_assert(parses("http://example.com/", 1));
	const char *bad[] = {
		"ftp://example.com/", "https:/example.com", "example.com", "https://", "https:///x",
		"https://user:pw@example.com/", "https://example.com@10.0.0.1/", "https://example.com/#frag",
		"https://example.com:0/", "https://example.com:65536/", "https://example.com:080/", "https://example.com:/",
		"https://example.com:8a/", "https://exa mple.com/", "https://example.com/a b", "https://exa_mple.com/",
		"https://-example.com/", "https://example-.com/", "https://example..com/", "https://example.com./",
		"https://127.1/", "https://2130706433/", "https://0x7f.0.0.1/", "https://[::1/", "https://[fe80::1%25eth0]/",
		"https://[::1]x/", "https://example.com\\@evil/", "https://ex\xc3\xa4mple.com/",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert(!parses(bad[i], 1), "%s must be refused", bad[i]);
	/* length bounds: URL 2048 / 2049, host 253 / 254, label 63 / 64 */
	char url[WH_URL_MAX + 2];
	int n = snprintf(url, sizeof(url), "https://example.com/");
	memset(url + n, 'a', sizeof(url) - (size_t)n);
	url[WH_URL_MAX] = '\0';
	cr_assert(parses(url, 0));
	url[WH_URL_MAX] = 'a';
	url[WH_URL_MAX + 1] = '\0';
	cr_assert(!parses(url, 0));
	char host[300];
	/* 3 labels of 63 + 1 of 61 = 250 + 3 dots = 253 */
	snprintf(host, sizeof(host), "https://%.63s.%.63s.%.63s.%.61s/", url + n, url + n, url + n, url + n);
	cr_assert(parses(host, 0));
	snprintf(host, sizeof(host), "https://%.63s.%.63s.%.63s.%.62s/", url + n, url + n, url + n, url + n);
	cr_assert(!parses(host, 0));
	snprintf(host, sizeof(host), "https://%.63s.com/", url + n);
	cr_assert(parses(host, 0));
	snprintf(host, sizeof(host), "https://%.64s.com/", url + n);
	cr_assert(!parses(host, 0));
}

WM_TEST(webhooks, a_private_destination_is_refused_unless_the_operator_allows_it)
{
	const char *urls[] = {"https://127.0.0.1/h", "https://localhost:8443/h", "https://[::1]/h",
			      "https://[::ffff:127.0.0.1]/h", "https://10.1.2.3/h", "https://169.254.169.254/latest"};
	for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
		struct wh_policy strict = {0}, open = {.allow_private = 1};
		struct wh_url u;
		struct wh_target t;
		char err[160];
		cr_assert_eq(wh_url_parse(urls[i], strlen(urls[i]), &strict, &u, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(wh_url_resolve(&u, &strict, &t, err, sizeof(err)), -1, "%s", urls[i]);
		cr_assert(strstr(err, "destination refused"), "%s: %s", urls[i], err);
		cr_assert_eq(wh_url_resolve(&u, &open, &t, err, sizeof(err)), 0, "%s: %s", urls[i], err);
	}
	/* a name is pinned to the address that passed; a literal needs no pin */
	struct wh_policy open = {.allow_private = 1};
	struct wh_url u;
	struct wh_target t;
	char err[160];
	cr_assert_eq(wh_url_parse("https://localhost:8443/h", 24, &open, &u, err, sizeof(err)), 0);
	cr_assert_eq(wh_url_resolve(&u, &open, &t, err, sizeof(err)), 0);
	char want[WH_RESOLVE_MAX];
	snprintf(want, sizeof(want), strchr(t.addr, ':') ? "localhost:8443:[%s]" : "localhost:8443:%s", t.addr);
	cr_assert_str_eq(t.resolve, want);
	cr_assert_eq(wh_url_parse("https://127.0.0.1/h", 19, &open, &u, err, sizeof(err)), 0);
	cr_assert_eq(wh_url_resolve(&u, &open, &t, err, sizeof(err)), 0);
	cr_assert_str_eq(t.addr, "127.0.0.1");
	cr_assert_str_eq(t.resolve, "");
}

/* ---- delivery: a receiver on 127.0.0.1 ---------------------------------- */

#define RCV_THREADS 64
#define HUGE_BYTES (1 << 20)

struct receiver {
	int lfd;
	uint16_t port;
	pthread_t accept_thr;
	atomic_int stop;
	pthread_mutex_t mu;
	pthread_t thr[RCV_THREADS];
	int n_thr;
	int cur, max_conc;      /* connections being served, and the most at once */
	int requests, verified, unverified, target_hits, tls_refused;
	int empty;              /* connections that carried no request */
	struct wh_secret secret;
	SSL_CTX *tls;           /* serve https with this context, or NULL for http */
};

/* The TLS session of the connection a serving thread handles, or NULL. */
static _Thread_local SSL *t_ssl;

struct conn_arg {
	struct receiver *r;
	int fd;
};

/* The value of header name in the request head h (NUL-terminated), copied
 * into out: 1 when present. */
static int header_value(const char *h, const char *name, char *out, size_t cap)
{
	size_t nl = strlen(name);
	for (const char *p = strstr(h, "\r\n"); p; p = strstr(p + 2, "\r\n")) {
		const char *line = p + 2;
		if (strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
			const char *v = line + nl + 1;
			while (*v == ' ')
				v++;
			const char *e = strstr(v, "\r\n");
			size_t n = (size_t)(e - v);
			if (n >= cap)
				return 0;
			memcpy(out, v, n);
			out[n] = '\0';
			return 1;
		}
	}
	return 0;
}

static void send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = t_ssl ? SSL_write(t_ssl, p, (int)n) : send(fd, p, n, MSG_NOSIGNAL);
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void answer(int fd, int status, const char *extra)
{
	char buf[256];
	int n = snprintf(buf, sizeof(buf), "HTTP/1.1 %d X\r\nContent-Length: 2\r\nConnection: close\r\n%s\r\nok",
			 status, extra);
	send_all(fd, buf, (size_t)n);
}

/* Serve one request on a connection, then close it. */
static void *serve(void *arg)
{
	struct conn_arg *a = arg;
	struct receiver *r = a->r;
	int fd = a->fd;
	free(a);
	pthread_mutex_lock(&r->mu);
	if (++r->cur > r->max_conc)
		r->max_conc = r->cur;
	pthread_mutex_unlock(&r->mu);
	t_ssl = NULL;
	if (r->tls) {
		SSL *s = SSL_new(r->tls);
		if (!s || SSL_set_fd(s, fd) != 1 || SSL_accept(s) != 1) {
			SSL_free(s);
			pthread_mutex_lock(&r->mu);
			r->tls_refused++;
			r->cur--;
			pthread_mutex_unlock(&r->mu);
			close(fd);
			return NULL;
		}
		t_ssl = s;
	}
	static _Thread_local char req[65536];
	size_t got = 0;
	char *body = NULL;
	long clen = -1;
	while (got < sizeof(req) - 1) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		if (!(t_ssl && SSL_pending(t_ssl)) && poll(&pf, 1, 5000) <= 0)
			break;
		ssize_t n = t_ssl ? SSL_read(t_ssl, req + got, (int)(sizeof(req) - 1 - got))
				  : recv(fd, req + got, sizeof(req) - 1 - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
		req[got] = '\0';
		char *end = strstr(req, "\r\n\r\n");
		if (end && clen < 0) {
			char cl[32];
			clen = header_value(req, "content-length", cl, sizeof(cl)) ? atol(cl) : 0;
			body = end + 4;
		}
		if (body && (long)(got - (size_t)(body - req)) >= clen)
			break;
	}
	char path[64] = "";
	sscanf(req, "POST %63s", path);
	char id[WH_ID_MAX + 1], ts[32], sig[WH_SIG_HEADER_MAX + 1];
	int ok = body && header_value(req, "webhook-id", id, sizeof(id)) &&
		 header_value(req, "webhook-timestamp", ts, sizeof(ts)) &&
		 header_value(req, "webhook-signature", sig, sizeof(sig)) &&
		 wh_verify(&r->secret, id, strlen(id), ts, strlen(ts), body, (size_t)clen, sig, strlen(sig),
			   (int64_t)time(NULL), WH_DEFAULT_TOLERANCE_S) == WH_OK;
	pthread_mutex_lock(&r->mu);
	if (!path[0]) {
		/* the client left without a request (e.g. it refused our certificate) */
		r->empty++;
		r->cur--;
		pthread_mutex_unlock(&r->mu);
		goto out;
	}
	r->requests++;
	if (ok)
		r->verified++;
	else
		r->unverified++;
	if (strcmp(path, "/target") == 0)
		r->target_hits++;
	pthread_mutex_unlock(&r->mu);
	if (strcmp(path, "/hold") == 0)
		usleep(200 * 1000);
	/* no longer counted once the answer starts: the client may reuse the slot */
	pthread_mutex_lock(&r->mu);
	r->cur--;
	pthread_mutex_unlock(&r->mu);
	if (strcmp(path, "/500") == 0) {
		answer(fd, 500, "");
	} else if (strcmp(path, "/429") == 0) {
		answer(fd, 429, "Retry-After: 120\r\n");
	} else if (strcmp(path, "/410") == 0) {
		answer(fd, 410, "");
	} else if (strcmp(path, "/redirect") == 0) {
		char loc[96];
		snprintf(loc, sizeof(loc), "Location: http://127.0.0.1:%u/target\r\n", r->port);
		answer(fd, 302, loc);
	} else if (strcmp(path, "/slow") == 0) {
		/* answer after 3 s, or stop when the client gives up and closes */
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		if (poll(&pf, 1, 3000) == 0)
			answer(fd, 200, "");
	} else if (strcmp(path, "/huge") == 0) {
		char head[128];
		int n = snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
				 HUGE_BYTES);
		send_all(fd, head, (size_t)n);
		static _Thread_local char chunk[16384];
		memset(chunk, 'x', sizeof(chunk));
		for (int sent = 0; sent < HUGE_BYTES; sent += (int)sizeof(chunk))
			send_all(fd, chunk, sizeof(chunk));
	} else {
		answer(fd, 200, "");
	}
out:
	if (t_ssl) {
		SSL_shutdown(t_ssl);
		SSL_free(t_ssl);
		t_ssl = NULL;
	}
	close(fd);
	return NULL;
}

static void *accept_loop(void *arg)
{
	struct receiver *r = arg;
	while (!atomic_load(&r->stop)) {
		struct pollfd pf = {.fd = r->lfd, .events = POLLIN};
		if (poll(&pf, 1, 50) <= 0)
			continue;
		int fd = accept(r->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		pthread_mutex_lock(&r->mu);
		int slot = r->n_thr < RCV_THREADS ? r->n_thr++ : -1;
		pthread_mutex_unlock(&r->mu);
		struct conn_arg *a = malloc(sizeof(*a));
		if (slot < 0 || !a) {
			free(a);
			close(fd);
			continue;
		}
		a->r = r;
		a->fd = fd;
		pthread_create(&r->thr[slot], NULL, serve, a);
	}
	return NULL;
}

static void receiver_start(struct receiver *r)
{
	signal(SIGPIPE, SIG_IGN); /* SSL_write to a peer that left */
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
	r->secret = secret_of(REF_SECRET);
	r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(r->lfd, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	cr_assert_eq(bind(r->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(r->lfd, 64), 0);
	socklen_t sl = sizeof(sa);
	getsockname(r->lfd, (struct sockaddr *)&sa, &sl);
	r->port = ntohs(sa.sin_port);
	pthread_create(&r->accept_thr, NULL, accept_loop, r);
}

static void receiver_stop(struct receiver *r)
{
	atomic_store(&r->stop, 1);
	pthread_join(r->accept_thr, NULL);
	for (int i = 0; i < r->n_thr; i++)
		pthread_join(r->thr[i], NULL);
	close(r->lfd);
	pthread_mutex_destroy(&r->mu);
	SSL_CTX_free(r->tls);
}

/* Submit a signed POST to url (pinned by resolve when not NULL). */
static int submit_signed_url(struct wh_http *h, const struct receiver *r, const char *url, const char *resolve,
			     uint64_t tag, long timeout_ms)
{
	static const char body[] = "{\"type\":\"order.created\",\"data\":{\"id\":\"ord_1\"}}";
	char id[64];
	snprintf(id, sizeof(id), "evt_%llu", (unsigned long long)tag);
	struct wh_signed_headers sh;
	cr_assert_eq(wh_sign_headers(&r->secret, 1, id, strlen(id), (int64_t)time(NULL), body, strlen(body), &sh), 0);
	const char *headers[] = {"Content-Type: application/json", sh.id, sh.timestamp, sh.signature};
	struct wh_http_request req = {.tag = tag, .url = url, .resolve = resolve, .headers = headers, .n_headers = 4,
				      .body = body, .body_len = strlen(body), .connect_timeout_ms = 2000,
				      .timeout_ms = timeout_ms};
	return wh_http_submit(h, &req);
}

/* Submit a signed POST to http(s)://127.0.0.1:port<path>. */
static int submit_signed(struct wh_http *h, const struct receiver *r, const char *path, uint64_t tag, long timeout_ms)
{
	char url[96];
	snprintf(url, sizeof(url), "%s://127.0.0.1:%u%s", r->tls ? "https" : "http", r->port, path);
	return submit_signed_url(h, r, url, NULL, tag, timeout_ms);
}

/* Wait for n completions through the eventfd, results by tag into out[]. */
static void wait_results(struct wh_http *h, struct wh_http_result *out, size_t n)
{
	size_t have = 0;
	time_t give_up = time(NULL) + 20;
	while (have < n) {
		struct pollfd pf = {.fd = wh_http_eventfd(h), .events = POLLIN};
		cr_assert(time(NULL) < give_up, "only %zu of %zu completions", have, n);
		if (poll(&pf, 1, 1000) <= 0)
			continue;
		struct wh_http_result tmp[8];
		size_t k;
		while ((k = wh_http_take(h, tmp, 8)) > 0)
			for (size_t i = 0; i < k; i++) {
				cr_assert_lt(tmp[i].tag, n);
				out[tmp[i].tag] = tmp[i];
				have++;
			}
	}
}

static struct wh_http *start_http(unsigned queue_cap, unsigned host_conns, size_t response_cap)
{
	struct wh_http_config c = {.queue_cap = queue_cap, .max_host_conns = host_conns,
				   .response_cap = response_cap, .allow_http = 1, .allow_private = 1};
	struct wh_http *h = wh_http_start(&c);
	cr_assert_not_null(h);
	return h;
}

WM_TEST(webhooks, delivery_classifies_each_answer_and_the_receiver_verifies_every_signature)
{
	struct receiver r;
	receiver_start(&r);
	struct wh_http *h = start_http(16, 4, 4096);
	const char *paths[] = {"/200", "/500", "/410", "/redirect", "/slow", "/huge", "/429"};
	enum { N = 7 };
	for (uint64_t i = 0; i < N; i++)
		cr_assert_eq(submit_signed(h, &r, paths[i], i, i == 4 ? 300 : 5000), 0, "%s", paths[i]);
	struct wh_http_result res[N];
	memset(res, 0, sizeof(res));
	wait_results(h, res, N);
	cr_assert_eq(wh_http_outstanding(h), 0);

	cr_assert(res[0].transport_ok && res[0].status == 200 && res[0].cls == WH_CLASS_DELIVERED);
	cr_assert_eq(res[0].bytes_read, 2);
	cr_assert(res[1].transport_ok && res[1].status == 500 && res[1].cls == WH_CLASS_RETRY);
	cr_assert(res[2].transport_ok && res[2].status == 410 && res[2].cls == WH_CLASS_GONE);
	/* the redirect is not followed: its status is the answer, a retry */
	cr_assert(res[3].transport_ok && res[3].status == 302 && res[3].cls == WH_CLASS_RETRY);
	/* the slow answer times out: a transport failure with libcurl's text */
	cr_assert(!res[4].transport_ok && res[4].status == 0 && res[4].cls == WH_CLASS_RETRY);
	cr_assert(strstr(res[4].error, "imed out") || strstr(res[4].error, "imeout"), "%s", res[4].error);
	/* the huge body is read up to the cap only; its 200 still counts */
	cr_assert(res[5].transport_ok && res[5].status == 200 && res[5].cls == WH_CLASS_DELIVERED);
	cr_assert_eq(res[5].bytes_read, 4096);
	cr_assert_eq(res[5].truncated, 1);
	/* 429 is retried, and its Retry-After is reported for the scheduler */
	cr_assert(res[6].transport_ok && res[6].status == 429 && res[6].cls == WH_CLASS_RETRY);
	cr_assert_eq(res[6].retry_after_s, 120);
	cr_assert_eq(res[0].retry_after_s, 0);
	wh_http_stop(h);
	receiver_stop(&r);
	cr_assert_eq(r.target_hits, 0, "the redirect was followed");
	cr_assert_eq(r.requests, N);
	cr_assert_eq(r.verified, N, "%d unverified", r.unverified);
}

WM_TEST(webhooks, the_response_cap_holds_at_its_edge)
{
	struct receiver r;
	receiver_start(&r);
	/* "ok" is 2 bytes: a cap of 2 reads it whole, a cap of 1 truncates */
	struct wh_http *h = start_http(4, 1, 2);
	struct wh_http_result res[1];
	cr_assert_eq(submit_signed(h, &r, "/200", 0, 5000), 0);
	wait_results(h, res, 1);
	cr_assert(res[0].transport_ok && res[0].bytes_read == 2 && !res[0].truncated);
	wh_http_stop(h);
	h = start_http(4, 1, 1);
	cr_assert_eq(submit_signed(h, &r, "/200", 0, 5000), 0);
	wait_results(h, res, 1);
	cr_assert(res[0].transport_ok && res[0].status == 200 && res[0].bytes_read == 1 && res[0].truncated);
	wh_http_stop(h);
	receiver_stop(&r);
}

WM_TEST(webhooks, the_per_host_connection_cap_holds)
{
	struct receiver r;
	receiver_start(&r);
	struct wh_http *h = start_http(16, 2, 1024);
	enum { N = 6 };
	for (uint64_t i = 0; i < N; i++)
		cr_assert_eq(submit_signed(h, &r, "/hold", i, 10000), 0);
	struct wh_http_result res[N];
	wait_results(h, res, N);
	for (int i = 0; i < N; i++)
		cr_assert(res[i].transport_ok && res[i].cls == WH_CLASS_DELIVERED, "%d: %s", i, res[i].error);
	wh_http_stop(h);
	receiver_stop(&r);
	cr_assert_eq(r.requests, N);
	cr_assert_eq(r.verified, N);
	/* without the cap all 6 are served at once (seen: 6) */
	cr_assert(r.max_conc >= 1 && r.max_conc <= 2, "at most 2 connections to one host at once, saw %d", r.max_conc);
}

WM_TEST(webhooks, the_submit_queue_refuses_when_full_and_requests_are_bounded)
{
	struct receiver r;
	receiver_start(&r);
	struct wh_http *h = start_http(3, 1, 1024);
	for (uint64_t i = 0; i < 3; i++)
		cr_assert_eq(submit_signed(h, &r, "/hold", i, 10000), 0);
	errno = 0;
	cr_assert_eq(submit_signed(h, &r, "/hold", 3, 10000), -1);
	cr_assert_eq(errno, EAGAIN);
	cr_assert_eq(wh_http_outstanding(h), 3);
	struct wh_http_result res[3];
	wait_results(h, res, 3);
	/* taken back: room again */
	cr_assert_eq(submit_signed(h, &r, "/200", 0, 5000), 0);
	wait_results(h, res, 1);
	/* request bounds: headers, body, time-outs */
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/200", r.port);
	const char *many[WH_HTTP_HEADERS_MAX + 1];
	for (int i = 0; i <= WH_HTTP_HEADERS_MAX; i++)
		many[i] = "X-A: b";
	struct wh_http_request q = {.url = url, .headers = many, .n_headers = WH_HTTP_HEADERS_MAX + 1,
				    .connect_timeout_ms = 1000, .timeout_ms = 1000};
	cr_assert_eq(wh_http_submit(h, &q), -1);
	cr_assert_eq(errno, EINVAL);
	const char *split[] = {"X-A: b\r\nX-Injected: 1"};
	q.headers = split;
	q.n_headers = 1;
	cr_assert_eq(wh_http_submit(h, &q), -1, "a header with CR/LF is refused");
	q.n_headers = 0;
	q.timeout_ms = WH_HTTP_TIMEOUT_MAX_MS + 1;
	cr_assert_eq(wh_http_submit(h, &q), -1);
	q.timeout_ms = 1000;
	q.connect_timeout_ms = 0;
	cr_assert_eq(wh_http_submit(h, &q), -1);
	q.connect_timeout_ms = 1000;
	static char big[WH_HTTP_BODY_MAX + 1];
	q.body = big;
	q.body_len = WH_HTTP_BODY_MAX + 1;
	cr_assert_eq(wh_http_submit(h, &q), -1);
	cr_assert_eq(wh_http_outstanding(h), 0);
	/* config bounds */
	struct wh_http_config c = {.queue_cap = WH_HTTP_QUEUE_MAX + 1, .max_host_conns = 1};
	cr_assert_null(wh_http_start(&c));
	c.queue_cap = 0;
	cr_assert_null(wh_http_start(&c));
	c.queue_cap = 1;
	c.max_host_conns = 0;
	cr_assert_null(wh_http_start(&c));
	c.max_host_conns = WH_HTTP_HOST_CONNS_MAX + 1;
	cr_assert_null(wh_http_start(&c));
	c.max_host_conns = 1;
	c.response_cap = WH_HTTP_RESPONSE_MAX + 1;
	cr_assert_null(wh_http_start(&c));
	wh_http_stop(h);
	receiver_stop(&r);
}

WM_TEST(webhooks, delivery_refuses_private_addresses_and_plain_http_unless_allowed)
{
	struct receiver r;
	receiver_start(&r);
	/* private destinations not allowed: the connect to 127.0.0.1 is refused */
	struct wh_http_config c = {.queue_cap = 4, .max_host_conns = 1, .response_cap = 64, .allow_http = 1};
	struct wh_http *h = wh_http_start(&c);
	cr_assert_not_null(h);
	struct wh_http_result res[1];
	cr_assert_eq(submit_signed(h, &r, "/200", 0, 5000), 0);
	wait_results(h, res, 1);
	cr_assert(!res[0].transport_ok && res[0].cls == WH_CLASS_RETRY);
	cr_assert(strstr(res[0].error, "destination refused"), "%s", res[0].error);
	wh_http_stop(h);
	/* plain http not allowed: libcurl refuses the protocol */
	c.allow_http = 0;
	c.allow_private = 1;
	h = wh_http_start(&c);
	cr_assert_not_null(h);
	cr_assert_eq(submit_signed(h, &r, "/200", 0, 5000), 0);
	wait_results(h, res, 1);
	cr_assert(!res[0].transport_ok && res[0].cls == WH_CLASS_RETRY, "%s", res[0].error);
	wh_http_stop(h);
	receiver_stop(&r);
	cr_assert_eq(r.requests, 0, "nothing reached the receiver");
}

WM_TEST(webhooks, the_pinned_address_is_the_one_connected_to)
{
	struct receiver r;
	receiver_start(&r);
	struct wh_http *h = start_http(4, 1, 64);
	/* hooks.invalid has no DNS answer (RFC 6761): only the pin can reach the receiver */
	char url[96], pin[96];
	snprintf(url, sizeof(url), "http://hooks.invalid:%u/200", r.port);
	snprintf(pin, sizeof(pin), "hooks.invalid:%u:127.0.0.1", r.port);
	cr_assert_eq(submit_signed_url(h, &r, url, pin, 0, 5000), 0);
	struct wh_http_result res[1];
	wait_results(h, res, 1);
	cr_assert(res[0].transport_ok && res[0].status == 200, "%s", res[0].error);
	wh_http_stop(h);
	receiver_stop(&r);
	cr_assert_eq(r.verified, 1);
}

WM_TEST(webhooks, stop_abandons_a_transfer_in_flight)
{
	struct receiver r;
	receiver_start(&r);
	struct wh_http *h = start_http(4, 1, 64);
	cr_assert_eq(submit_signed(h, &r, "/slow", 0, 60000), 0);
	cr_assert_eq(submit_signed(h, &r, "/slow", 1, 60000), 0); /* waits behind the host cap */
	time_t t0 = time(NULL);
	for (int seen = 0; !seen && time(NULL) - t0 < 5;) {
		usleep(10 * 1000);
		pthread_mutex_lock(&r.mu);
		seen = r.requests > 0;
		pthread_mutex_unlock(&r.mu);
	}
	wh_http_stop(h);
	cr_assert_leq(time(NULL) - t0, 2, "stop waited for the slow answer");
	receiver_stop(&r);
}

/* A self-signed certificate for CN=localhost, IP 127.0.0.1, made by
 * OpenSSL's command line in a temporary directory: dir/c.pem, dir/k.pem. */
static void make_cert(char *dir)
{
	cr_assert_not_null(mkdtemp(dir));
	char cmd[512];
	snprintf(cmd, sizeof(cmd),
		 "cd %s && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout k.pem "
		 "-out c.pem -days 2 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1,DNS:localhost "
		 ">/dev/null 2>&1",
		 dir);
	cr_assert_eq(system(cmd), 0);
}

static void tls_receiver_start(struct receiver *r, const char *dir)
{
	receiver_start(r);
	char c[128], k[128];
	snprintf(c, sizeof(c), "%s/c.pem", dir);
	snprintf(k, sizeof(k), "%s/k.pem", dir);
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	cr_assert_not_null(ctx);
	cr_assert_eq(SSL_CTX_use_certificate_file(ctx, c, SSL_FILETYPE_PEM), 1);
	cr_assert_eq(SSL_CTX_use_PrivateKey_file(ctx, k, SSL_FILETYPE_PEM), 1);
	r->tls = ctx; /* before the first connection: tests connect after this */
}

static void rm_dir(const char *dir)
{
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

WM_TEST(webhooks, tls_is_verified_against_the_trust_anchors_and_the_host_name)
{
	char dir[] = "/tmp/wm-wh-tls-XXXXXX";
	make_cert(dir);
	struct receiver r;
	tls_receiver_start(&r, dir);
	struct wh_http_result res[1];
	/* the system's trust anchors do not know this certificate: refused */
	struct wh_http *h = start_http(4, 1, 64);
	cr_assert_eq(submit_signed(h, &r, "/200", 0, 5000), 0);
	wait_results(h, res, 1);
	cr_assert(!res[0].transport_ok && res[0].cls == WH_CLASS_RETRY);
	cr_assert(strstr(res[0].error, "certificate"), "%s", res[0].error);
	wh_http_stop(h);
	/* trusted, and the host matches the certificate: delivered */
	char ca[128];
	snprintf(ca, sizeof(ca), "%s/c.pem", dir);
	struct wh_http_config c = {.queue_cap = 4, .max_host_conns = 1, .response_cap = 64, .allow_private = 1,
				   .ca_file = ca};
	h = wh_http_start(&c);
	cr_assert_not_null(h);
	cr_assert_eq(submit_signed(h, &r, "/200", 0, 5000), 0);
	wait_results(h, res, 1);
	cr_assert(res[0].transport_ok && res[0].status == 200, "%s", res[0].error);
	/* trusted, but the name asked for is not the certificate's: refused */
	char url[96], pin[96];
	snprintf(url, sizeof(url), "https://other.invalid:%u/200", r.port);
	snprintf(pin, sizeof(pin), "other.invalid:%u:127.0.0.1", r.port);
	cr_assert_eq(submit_signed_url(h, &r, url, pin, 0, 5000), 0);
	wait_results(h, res, 1);
	cr_assert(!res[0].transport_ok, "a certificate for localhost was accepted for other.invalid");
	wh_http_stop(h);
	receiver_stop(&r);
	cr_assert_eq(r.requests, 1, "only the verified connection carried a request: %d requests, %d tls refused", r.requests, r.tls_refused);
	cr_assert_eq(r.verified, 1);
	cr_assert_eq(r.tls_refused + r.empty, 2);
	rm_dir(dir);
}
