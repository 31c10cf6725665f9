/*
 * tracking.h -- a fulfilment leg's carrier and tracking[] (spec 2.8: "each
 * with its own pickup, carrier, tracking and delivery scan"): one row per
 * leg (REC_T_LEG_TRACK, id = the leg id), written when the leg ships or a
 * carrier scans it, read into the leg of every order document.
 *
 * Below the order module: it knows leg ids and order ids as strings, not
 * struct order (order.c reads it, fulfilment.c writes it).
 */
#ifndef WM_TRACKING_H
#define WM_TRACKING_H

#include <stdint.h>

#include "engine/storage/id.h"
#include "engine/storage/shard.h"
#include "net/buf.h"

#define TRACK_SCANS_MAX 64   /* scans one leg keeps; one more is 409 tracking_full */
#define TRACK_REF_MAX 64     /* carrier, tracking_number, scan_id: bytes */
#define TRACK_PLACE_MAX 200  /* a scan's location, received_by: bytes */
#define TRACK_TS_MAX 32
#define TRACK_LEG_ID_MAX 64

/* Scan types, stored by name (append only). */
enum scan_type { SCAN_PICKED_UP, SCAN_IN_TRANSIT, SCAN_OUT_FOR_DELIVERY, SCAN_DELIVERED, SCAN_EXCEPTION, SCAN_N_TYPE };
extern const char *const scan_type_names[]; /* NULL-terminated */

/* One carrier scan. */
struct scan {
	char scan_id[TRACK_REF_MAX + 1];
	uint8_t type;                         /* enum scan_type */
	char occurred_at[TRACK_TS_MAX];       /* RFC 3339 UTC with ms (normalised) */
	char carrier[TRACK_REF_MAX + 1];
	char tracking_number[TRACK_REF_MAX + 1];
	char location[TRACK_PLACE_MAX + 1];   /* "" = null */
	char received_by[TRACK_PLACE_MAX + 1];/* "" = null */
};

/* The row (REC_T_LEG_TRACK). */
struct leg_track {
	struct row row;
	char order_id[ID_MAX_LEN];
	char carrier[TRACK_REF_MAX + 1];          /* "" = null */
	char tracking_number[TRACK_REF_MAX + 1];  /* "" = null */
	char delivered_at[TRACK_TS_MAX];          /* the first delivered scan's occurred_at, "" if none */
	uint16_t n_scans;
};

const struct leg_track *leg_track_get(struct shard *sh, const char *leg_id);

enum { TRACK_OK = 0, TRACK_DUP = 1, TRACK_CONFLICT = 2, TRACK_FULL = 3, TRACK_STORE = -1 };
/*
 * Stage the leg's track with carrier and tracking_number (each NULL or ""
 * to keep what the row has; a row without them takes them from the first
 * scan) and, when scan, the scan inserted in (occurred_at, scan_id) order,
 * at time now, into the OPEN transaction.  TRACK_OK (staged), TRACK_DUP
 * (the scan id is there with the same values: nothing staged), TRACK_CONFLICT
 * (the scan id is there with other values), TRACK_FULL (TRACK_SCANS_MAX
 * scans), TRACK_STORE.
 */
int leg_track_stage(struct shard *sh, const char *order_id, const char *leg_id, const char *carrier,
		    const char *tracking_number, const struct scan *scan, const char *now);
/*
 * The order document in doc, with each leg that has a track row showing
 * its carrier, tracking_number and tracking[] (time order).  leg_ids: the
 * order's n legs, to look up first (no row: doc is left as it is, no
 * parse).  0, or -1 (doc unchanged).
 */
int leg_tracks_splice(struct shard *sh, const char *const *leg_ids, unsigned n, struct buf *doc);

extern const struct table_ops leg_track_table_ops;

#endif
