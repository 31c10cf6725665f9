/*
 * errinj.c -- test-build fault injection (see errinj.h).  The environment is
 * read on every call: these points sit on rare paths (crash simulation), not
 * on hot ones, and re-reading keeps the code free of global state.
 */
#include "wal/errinj.h"

#ifdef WM_TESTING
#include <stdlib.h>
#include <string.h>

int errinj_enabled(const char *name)
{
	const char *v = getenv("WM_ERRINJ");
	size_t n = strlen(name);
	while (v && *v) {
		const char *end = strchr(v, ',');
		size_t len = end ? (size_t)(end - v) : strlen(v);
		if (len == n && memcmp(v, name, n) == 0)
			return 1;
		v = end ? end + 1 : NULL;
	}
	return 0;
}
#else
typedef int errinj_unused_t; /* keep the translation unit non-empty */
#endif
