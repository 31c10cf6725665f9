/*
 * data_scan.h -- does a stopped shard's data directory hold a byte string?
 * Decompresses every WAL transaction (wal_recover) and reads every record
 * of the newest snapshot (snap_load), so a secret that must never be
 * stored in the clear (API keys, webhook signing secrets) is looked for
 * where it would be, not in the compressed files.
 */
#ifndef WM_DATA_SCAN_H
#define WM_DATA_SCAN_H

/* *in_wal / *in_snap: 1 when needle occurs in a WAL transaction / in a
 * record of the newest snapshot.  Asserts that both hold records and that
 * a snapshot exists. */
void data_scan(const char *data_dir, const char *needle, int *in_wal, int *in_snap);

#endif
