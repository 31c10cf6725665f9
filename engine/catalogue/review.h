/*
 * review.h -- tier 4 of wine dedup (spec 2.7): the manual-review queue.
 * A wine ingest that ends in `candidate` opens one review entry; an
 * operator confirms it (the two wines are one: merge) or rejects it (they
 * are different wines).  The why lives at the top of review.c.
 */
#ifndef WM_REVIEW_H
#define WM_REVIEW_H

#include "engine/edge/api.h"
#include "engine/storage/table.h"
#include "engine/catalogue/wine.h"

enum review_status { RVS_PENDING, RVS_CONFIRMED, RVS_REJECTED, REVIEW_N_STATUS };
extern const char *const review_status_names[];

#define REVIEW_MAX_REASON 200 /* bytes of the reason text */

struct review {
	struct row row;
	uint8_t status;                     /* enum review_status */
	char wine_id[ID_MAX_LEN];           /* the wine the ingest created ("" for a submission) */
	char candidate_id[ID_MAX_LEN];      /* the existing wine it resembles */
};

/*
 * Open a pending review in the OPEN transaction: the new wine `wine_id`,
 * the candidate m->wine with m->tier and m->confidence, a reason text from
 * the tier, label_media_id (the new wine's main image, NULL if none), and
 * a review.opened event.  0, or -1 (the caller aborts the transaction).
 */
int review_open(struct api_ctx *c, const char *wine_id, const struct wine_match *m, const char *label_media_id);

/*
 * Open a pending submission review in the OPEN transaction: an ingest body
 * (canonical JSON text, body_len bytes) from c->who whose keys led to the
 * wine m->wine that the sender may not read.  Confirming it enriches that
 * wine with the body (tier 4); rejecting it drops the body.  The review id
 * into review_id; 0, or -1 (the caller aborts the transaction).
 */
int review_open_submission(struct api_ctx *c, const struct wine_match *m, const char *body, size_t body_len,
			   char review_id[ID_MAX_LEN]);

const struct review *review_get(struct shard *sh, const char *id, size_t len);

extern const struct table_ops review_table_ops;
extern const struct route review_routes[];

#endif
