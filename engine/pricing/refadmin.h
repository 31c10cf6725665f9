/*
 * refadmin.h -- runtime reload of the pricing reference data (issue 6).
 *
 *   POST /v1/admin/reference-data  upload a new version (operators)
 *   GET  /v1/admin/reference-data  the active version, its source and row counts
 *
 * Why through the WAL: an uploaded version must survive a restart (and a
 * kill -9) exactly like any other write.  The upload is stored as ONE row
 * of table REC_T_REFDATA under the key "current"; the table's decode()
 * parses the row with the same strict loader (refdata_from_json) and makes
 * it the process's current version -- on the live commit, on WAL replay and
 * on snapshot load alike, so recovery cannot disagree with what was served.
 *
 * Precedence: the --data-ref-dir files are loaded (and must be valid)
 * before recovery; an uploaded version found in the snapshot/WAL then
 * replaces them.  wm-shard logs which one is active at start-up.
 */
#ifndef WM_REFADMIN_H
#define WM_REFADMIN_H

#include "engine/edge/route.h"
#include "engine/storage/table.h"

#define REFDATA_ROW_KEY "current"

extern const struct route refadmin_routes[];
extern const struct table_ops refdata_table_ops;

#endif
