/*
 * refdata_fixture.c -- the repository's data/ for tests (refdata_fixture.h).
 */
#include "tests/refdata_fixture.h"

#include <stdio.h>
#include <stdlib.h>

#include "engine/pricing/refdata.h"
#include "tests/wm_test.h"

struct refdata *load_repo(void)
{
	const char *src = getenv("WM_SRC_DIR");
	char dir[512], err[512] = "";
	snprintf(dir, sizeof(dir), "%s/data", src ? src : ".");
	struct refdata *rd = NULL;
	cr_assert_eq(refdata_load_dir(dir, &rd, err, sizeof(err)), 0, "%s", err);
	return rd;
}
