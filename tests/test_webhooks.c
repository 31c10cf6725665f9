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
#include "engine/events/webhook_retry.h"
#include "engine/events/webhook_sign.h"
#include "tests/wm_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	cr_assert_eq(wh_after_attempt(WH_CLASS_RETRY, 0, 1000, 7, &at), WH_NEXT_RETRY);
	cr_assert_eq(at, 1000);
	cr_assert_eq(wh_after_attempt(WH_CLASS_DELIVERED, 3, 1000, 0, &at), WH_NEXT_DONE);
	cr_assert_eq(wh_after_attempt(WH_CLASS_GONE, 1, 1000, 0, &at), WH_NEXT_DISABLE);
	/* attempt 1 failed at t: attempt 2 at t + 5 s -10 % (rnd 0) */
	cr_assert_eq(wh_after_attempt(WH_CLASS_RETRY, 1, 1000, 0, &at), WH_NEXT_RETRY);
	cr_assert_eq(at, 1000 + 4500);
	/* attempt 7 failed: attempt 8 at t + 10 h (rnd at the middle) */
	cr_assert_eq(wh_after_attempt(WH_CLASS_RETRY, WH_ATTEMPTS - 1, 0, 3600000, &at), WH_NEXT_RETRY);
	cr_assert_eq(at, 36000000);
	/* attempt 8, the last, failed: dead letter; past it too */
	at = -1;
	cr_assert_eq(wh_after_attempt(WH_CLASS_RETRY, WH_ATTEMPTS, 0, 0, &at), WH_NEXT_DEAD);
	cr_assert_eq(wh_after_attempt(WH_CLASS_RETRY, WH_ATTEMPTS + 1, 0, 0, &at), WH_NEXT_DEAD);
	cr_assert_eq(at, -1);
}
