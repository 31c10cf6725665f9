/*
 * producer.h -- producers (estates) of the canonical catalogue: the typed
 * view, the lookups wines need, and the inline find-or-create used by wine
 * ingest (see producer.c for the why).
 */
#ifndef WM_PRODUCER_H
#define WM_PRODUCER_H

#include <stddef.h>
#include <stdint.h>

#include "engine/edge/api.h"
#include "engine/storage/id.h"
#include "engine/storage/shard.h"
#include "engine/storage/table.h"

#define PRODUCER_MAX_NAME 200
#define PRODUCER_MAX_SLUG 120
#define PRODUCER_MAX_REGION 200
#define PRODUCER_MAX_URL 500
#define PRODUCER_MAX_DESCRIPTION 5000

struct producer {
	struct row row;
	char name[PRODUCER_MAX_NAME + 1];
	char slug[PRODUCER_MAX_SLUG + 1];
	char country[3];
	char partner_id[ID_MAX_LEN]; /* linked originator estate, "" if none */
	char created_by[ID_MAX_LEN]; /* entity that created it ("platform" for operators) */
};

const struct producer *producer_get(struct shard *sh, const char *id, size_t len);
/* table_prefetch of the producer id (its stage 0, then 1): before
 * producer_get of several ids in a row. */
void producer_prefetch(struct shard *sh, const char *id, size_t len, int stage);
const struct producer *producer_by_slug(struct shard *sh, const char *slug, size_t len);

/* May the caller change this producer (platform, its creator, its linked
 * partner)? */
int producer_writable(const struct api_ctx *c, const struct producer *p);

/*
 * Inline producer of a wine body ({"name": ..., "country": ..., "region":
 * ..., "website": ...}): validate it (errors under "producer."), find an
 * existing producer whose slug is the slug of the name, or, when `create`
 * is set, add a new producer's row and its producer.created event to the
 * OPEN transaction and return its id.  *found is set to the existing row or
 * NULL.  The name is copied to name_out (for the natural key) and the
 * country to country_out ("" if none).  Returns 0, or -1 when the object is
 * invalid (field errors recorded on c) or the row cannot be built.
 */
int producer_resolve_inline(struct api_ctx *c, const struct json_value *obj, int create,
			    const struct producer **found, char id_out[ID_MAX_LEN],
			    char name_out[PRODUCER_MAX_NAME + 1], char country_out[3]);

extern const struct route producer_routes[];

#endif
