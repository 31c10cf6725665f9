/*
 * errinj.h -- named fault-injection points (as Tarantool's errinj.h).
 *
 * Why it lives in wal/: the points are set by the WAL, the snapshot writer
 * and the engine (order, saga, shard), and wal/ is the lowest folder all
 * three already build on (snapshot/ and engine/ include wal/; wal/ includes
 * nothing above net/).  Kept in engine/ it made wal/ include upward.  It
 * depends on nothing but libc.
 *
 * In test builds (-DWM_TESTING) ERRINJ("name") is true when the environment
 * variable WM_ERRINJ lists that name (comma-separated), read once.  Tests
 * start a real wm-shard with e.g. WM_ERRINJ=wal_crash_after_write to make it
 * die at that exact point.  In release builds every point compiles to 0.
 *
 * Points in use (grep ERRINJ for the full list):
 *   wal_crash_after_write    WAL thread: _exit after write(2), before fdatasync
 *   wal_crash_after_sync     WAL thread: _exit after fdatasync, before publishing
 *   wal_slow_sync            WAL thread: sleep 400 ms before every fdatasync (a slow
 *                            disk: keeps a write "in flight" long enough to race it)
 *   snap_crash_before_rename snapshot: _exit after writing the temp file
 *   repl_sub_frozen          replication: subscribe to no publisher (replicas stay
 *                            as they were at the start)
 *   inv_lose_stock_event     inventory: an API write's stock.changed event is not
 *                            written (a bug the cluster checker's history finds)
 */
#ifndef WM_ERRINJ_H
#define WM_ERRINJ_H

#ifdef WM_TESTING
int errinj_enabled(const char *name);
#define ERRINJ(name) errinj_enabled(name)
#else
#define ERRINJ(name) 0
#endif

#endif
