#include "tests/wm_test.h"
#include "net/buf.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>

WM_TEST(buf, append_and_bound)
{
	struct buf b;
	buf_init(&b, 16);
	cr_assert_eq(buf_puts(&b, "0123456789"), 0);
	cr_assert_eq(buf_puts(&b, "abcdef"), 0); /* exactly 16: at the bound */
	cr_assert_eq(b.len, 16);
	cr_assert_leq(b.cap, 16, "the storage never exceeds the bound (buf_append's inline path relies on it)");
	cr_assert_eq(buf_putc(&b, 'x'), -1); /* one past the bound */
	cr_assert(b.overflow);
	cr_assert_eq(b.len, 16);
	cr_assert_eq(memcmp(b.data, "0123456789abcdef", 16), 0);
	buf_consume(&b, 10);
	cr_assert_eq(b.len, 6);
	cr_assert_eq(memcmp(b.data, "abcdef", 6), 0);
	buf_free(&b);
}

WM_TEST(buf, printf_long_and_le_ints)
{
	struct buf b;
	buf_init(&b, 0);
	char big[1000];
	memset(big, 'q', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	cr_assert_eq(buf_printf(&b, "%s-%d", big, 42), 0);
	cr_assert_eq(b.len, 999 + 3);
	buf_reset(&b);
	buf_put_u64(&b, 0x0102030405060708ULL);
	buf_put_u32(&b, 0xa1b2c3d4u);
	cr_assert_eq(rd_u64((const uint8_t *)b.data), 0x0102030405060708ULL);
	cr_assert_eq((uint8_t)b.data[0], 0x08);
	cr_assert_eq(rd_u32((const uint8_t *)b.data + 8), 0xa1b2c3d4u);
	buf_free(&b);
}

/* buf_put_dec writes what printf's %lld writes, the extremes included,
 * and leaves the buffer as it was when the digits do not fit. */
WM_TEST(buf, decimal_append_matches_printf)
{
	static const int64_t vals[] = {0, 1, -1, 9, 10, 99, 100, -100, 1234567890123LL, INT64_MAX, INT64_MIN,
				       INT64_MIN + 1};
	struct buf b, want;
	buf_init(&b, 0);
	buf_init(&want, 0);
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		buf_reset(&b);
		buf_reset(&want);
		cr_assert_eq(buf_puts(&b, "q="), 0);
		cr_assert_eq(buf_put_dec(&b, vals[i]), 0);
		cr_assert_eq(buf_printf(&want, "q=%lld", (long long)vals[i]), 0);
		cr_assert_eq(b.len, want.len, "%lld", (long long)vals[i]);
		cr_assert_eq(memcmp(b.data, want.data, b.len), 0, "%lld", (long long)vals[i]);
	}
	/* digits come two at a time (buf_utoa_rev): every value up to 10^5,
	 * and each power of ten and its neighbours, odd and even lengths */
	char t[24];
	for (uint64_t v = 0; v <= 100000; v++) {
		char *p = buf_utoa_rev(v, t + sizeof(t));
		char ref[24];
		int n = snprintf(ref, sizeof(ref), "%llu", (unsigned long long)v);
		cr_assert(t + sizeof(t) - p == n && !memcmp(p, ref, (size_t)n), "%llu", (unsigned long long)v);
	}
	for (uint64_t p10 = 10; p10 && p10 <= UINT64_MAX / 10; p10 *= 10)
		for (uint64_t v = p10 - 1; v <= p10 + 1; v++) {
			char *p = buf_utoa_rev(v, t + sizeof(t));
			char ref[24];
			int n = snprintf(ref, sizeof(ref), "%llu", (unsigned long long)v);
			cr_assert(t + sizeof(t) - p == n && !memcmp(p, ref, (size_t)n), "%llu", (unsigned long long)v);
		}
	char *p = buf_utoa_rev(UINT64_MAX, t + sizeof(t));
	cr_assert(t + sizeof(t) - p == 20 && !memcmp(p, "18446744073709551615", 20));
	buf_free(&b);
	buf_free(&want);
	buf_init(&b, 4);
	cr_assert_eq(buf_puts(&b, "ab"), 0);
	cr_assert_eq(buf_put_dec(&b, 12), 0); /* exactly at the bound */
	cr_assert_eq(buf_put_dec(&b, 5), -1); /* one past it */
	cr_assert_eq(b.len, 4);
	cr_assert_eq(memcmp(b.data, "ab12", 4), 0);
	buf_free(&b);
}

/* buf_str_tag_u writes what snprintf(dst, size, "%s%s%u", a, tag, n)
 * writes, at every size from 1 up, across the whole string and the digits,
 * and returns the length it wrote. */
WM_TEST(buf, str_tag_u_matches_snprintf_at_every_size)
{
	static const char *const as[] = {"", "ord_DE_01M8N9A6NC002PEDQQKM", "x"};
	static const char *const tags[] = {"", ".L", ".H"};
	static const unsigned ns[] = {0, 1, 9, 10, 32, 1000, 4294967295u};
	char got[64], want[64];
	for (size_t i = 0; i < sizeof(as) / sizeof(as[0]); i++)
		for (size_t j = 0; j < sizeof(tags) / sizeof(tags[0]); j++)
			for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++)
				for (size_t size = 1; size <= sizeof(got); size++) {
					memset(got, '#', sizeof(got));
					memset(want, '#', sizeof(want));
					size_t n = buf_str_tag_u(got, size, as[i], tags[j], ns[k]);
					snprintf(want, size, "%s%s%u", as[i], tags[j], ns[k]);
					cr_assert_eq(memcmp(got, want, sizeof(got)), 0, "[%s%s%u] in %zu bytes: [%s] vs [%s]",
						     as[i], tags[j], ns[k], size, got, want);
					cr_assert_eq(n, strlen(want));
				}
}
