/*
 * shard_fixture.h -- an in-process shard on a temporary data directory, for
 * unit tests that drive engine functions directly (no HTTP): WAL mode
 * "write" (durable enough to replay, no fsync wait), no periodic snapshots.
 */
#ifndef WM_SHARD_FIXTURE_H
#define WM_SHARD_FIXTURE_H

#include "engine/base/config.h"
#include "engine/storage/shard.h"

struct fixture {
	struct shard sh;
	struct config cfg;
	char dir[256];
};

/* A shard on a fresh /tmp/wm-<name>-units-XXXXXX (fails the test if it
 * cannot be opened). */
struct fixture *fixture_new(const char *name);
/* Open the fixture's shard again after shard_close(): recovery replays the
 * snapshot and the WAL. */
void fx_open(struct fixture *f);
/* Close the shard, remove its directory, free the fixture. */
void fixture_free(struct fixture *f);

#endif
