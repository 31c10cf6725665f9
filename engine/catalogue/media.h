/*
 * media.h -- media assets: signed uploads of label and bottle images,
 * stored content-addressed under the data directory (the why in media.c).
 */
#ifndef WM_MEDIA_H
#define WM_MEDIA_H

#include <stddef.h>
#include <stdint.h>

#include "engine/edge/api.h"
#include "engine/storage/id.h"
#include "engine/catalogue/image.h"
#include "engine/storage/shard.h"
#include "engine/storage/table.h"

#define MEDIA_MAX_ALT 500        /* alt text, bytes */
#define MEDIA_MAX_FILENAME 255   /* the uploader's file name (metadata only, never a path) */
#define MEDIA_SECRET_LEN 32      /* HMAC key bytes in DATA_DIR/media/secret.key */
#define MEDIA_SHA_HEX 64         /* sha256 as lower-case hex */
#define MEDIA_EXPIRES_MAX_DIGITS 19 /* ?expires=<unix seconds> */
#define MEDIA_DIR "media"        /* under the data directory */
#define MEDIA_SECRET_FILE "secret.key"

enum media_status { MEDIA_PENDING = 0, MEDIA_READY, MEDIA_N_STATUS };

/* What the asset shows (decides where a storefront places it). */
enum media_role {
	MEDIA_ROLE_LABEL_FRONT, MEDIA_ROLE_LABEL_BACK, MEDIA_ROLE_BOTTLE, MEDIA_ROLE_CASE,
	MEDIA_ROLE_PRODUCER, MEDIA_ROLE_GALLERY, MEDIA_N_ROLES
};

extern const char *const media_status_names[];
extern const char *const media_role_names[];

struct media_vals {
	char id[ID_MAX_LEN];
	char entity_id[ID_MAX_LEN];     /* owner: the uploading partner, or "platform" */
	uint8_t status;                 /* enum media_status */
	uint8_t type;                   /* enum image_type: the declared (signed) type */
	uint8_t role;                   /* enum media_role */
	char alt[MEDIA_MAX_ALT + 1];
	char filename[MEDIA_MAX_FILENAME + 1]; /* "" = none */
	uint64_t max_bytes;             /* the signed size limit */
	uint64_t bytes;                 /* ready: stored size */
	uint32_t width, height;         /* ready: from the file header */
	char sha256[MEDIA_SHA_HEX + 1]; /* ready: content address */
	char created_at[32];
	char updated_at[32];
};

struct media {
	struct row row;
	struct media_vals v;
};

const struct media *media_get(struct shard *sh, const char *id, size_t len);

/*
 * At start-up, after recovery (the server is not listening yet): clamp
 * --media-max-kb to --max-body-kb (with a log line), create
 * DATA_DIR/media/ and load the URL-signing secret from
 * DATA_DIR/media/secret.key, generating it (32 random bytes, mode 0600) on
 * the first start.  0, or -1 with a reason in err (the service then does
 * not start).  Until it has run, the media routes answer 503.
 */
int media_start(struct shard *sh, char *err, size_t errlen);

extern const struct table_ops media_table_ops;
extern const struct route media_routes[];

#endif
