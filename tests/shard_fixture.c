/* shard_fixture.c -- see shard_fixture.h. */
#include "tests/shard_fixture.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/harness.h"

void fx_open(struct fixture *f)
{
	char err[256];
	cr_assert_eq(shard_open(&f->sh, &f->cfg, err, sizeof(err)), 0, "%s", err);
}

struct fixture *fixture_new(const char *name)
{
	struct fixture *f = calloc(1, sizeof(*f));
	cr_assert_not_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/wm-%s-units-XXXXXX", name);
	cr_assert_not_null(mkdtemp(f->dir));
	wm_tmp_track_dir(f->dir); /* a test that fails before fixture_free leaves nothing behind */
	config_defaults(&f->cfg);
	snprintf(f->cfg.data_dir, sizeof(f->cfg.data_dir), "%s/data", f->dir);
	snprintf(f->cfg.wal_mode, sizeof(f->cfg.wal_mode), "write");
	f->cfg.snapshot_interval_s = 0;
	fx_open(f);
	return f;
}

void fixture_free(struct fixture *f)
{
	shard_close(&f->sh);
	rm_rf(f->dir);
	wm_tmp_untrack_dir(f->dir);
	free(f);
}
