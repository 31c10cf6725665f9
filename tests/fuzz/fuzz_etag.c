/*
 * fuzz_etag.c -- libFuzzer target for the If-Match list rule
 * (engine/edge/etag.c etag_list_matches), the parser an untrusted If-Match
 * header reaches.
 *
 * The input is used as the header value from an exact-size copy (so ASan
 * sees any read past it) and the rule is checked against an independent
 * model: the answer is 1 exactly when some comma-separated member, spaces
 * and tabs trimmed, is "*" or the tag itself.  Appending ", <tag>" to any
 * input must match; a value without '*' and without the tag's bytes must
 * not.
 */
#include "engine/edge/etag.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char TAG[] = "\"0123456789abcdef0123456789abcdef\"";

static void check(int ok)
{
	if (!ok)
		abort();
}

/* The model: split on ',', trim ' ' and '\t', compare. */
static int model(const char *v, size_t n)
{
	size_t i = 0;
	while (i <= n) {
		size_t j = i;
		while (j < n && v[j] != ',')
			j++;
		size_t a = i, b = j;
		while (a < b && (v[a] == ' ' || v[a] == '\t'))
			a++;
		while (b > a && (v[b - 1] == ' ' || v[b - 1] == '\t'))
			b--;
		if ((b - a == 1 && v[a] == '*') || (b - a == strlen(TAG) && !memcmp(v + a, TAG, b - a)))
			return 1;
		i = j + 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *v = malloc(size ? size : 1);
	if (!v)
		return 0;
	memcpy(v, data, size);
	int got = etag_list_matches(v, size, TAG);
	check(got == 0 || got == 1);
	check(got == model(v, size));
	if (!memchr(v, '*', size) && !memmem(v, size, TAG, strlen(TAG)))
		check(got == 0);
	free(v);
	size_t n2 = size + 2 + strlen(TAG);
	char *w = malloc(n2);
	if (!w)
		return 0;
	memcpy(w, data, size);
	memcpy(w + size, ", ", 2);
	memcpy(w + size + 2, TAG, strlen(TAG));
	check(etag_list_matches(w, n2, TAG) == 1);
	free(w);
	return 0;
}
