/*
 * fsutil.h -- file-system durability primitives shared by the WAL and
 * snapshots (both create files by temp name + rename and must make the
 * rename itself durable).
 */
#ifndef WM_FSUTIL_H
#define WM_FSUTIL_H

/* fsync a directory so renames/unlinks in it are durable.  0 or -1 (errno kept). */
int fs_fsync_dir(const char *dir);

#endif
