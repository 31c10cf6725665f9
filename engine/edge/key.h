/*
 * key.h -- API keys: format, storage, lookup, minting routes, bootstrap
 * (implementation and the why in key.c).
 *
 * Format of a minted key (42 characters):
 *
 *     wm_sk_<30 base62 random><6 base62 checksum>     secret
 *     wm_pk_<30 base62 random><6 base62 checksum>     publishable
 *
 * The checksum is XXH32 of everything before it, so a typo or truncation
 * is rejected before any lookup, and a leaked key is recognisable by
 * scanners from its prefix.  Only SHA-256 of the whole key is stored, with
 * a short display prefix ("wm_sk_" + 6 characters).  The operator key given
 * through WM_BOOTSTRAP_KEY may be any secret of 32..256 printable
 * characters; it is stored the same way.
 */
#ifndef WM_KEY_H
#define WM_KEY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/edge/api.h"
#include "engine/storage/id.h"
#include "engine/edge/policy.h"
#include "engine/storage/table.h"

#define KEY_PLATFORM_ENTITY "platform"
#define KEY_TOKEN_LEN 42
#define KEY_RANDOM_LEN 30
#define KEY_CHECK_LEN 6
#define KEY_DISPLAY_LEN 12   /* "wm_sk_" + 6 */
#define KEY_RAW_MIN 32       /* WM_BOOTSTRAP_KEY bounds */
#define KEY_RAW_MAX 256
#define KEY_MAX_NAME 100
#define KEY_MAX_CHANNEL 64
#define KEY_RATE_MAX 1000000u

enum key_kind { KEY_SECRET = 0, KEY_PUBLISHABLE = 1 };

/* What a bearer token looks like, decided without any lookup. */
enum key_token {
	KEY_TOK_SECRET = 0,      /* well-formed wm_sk_ */
	KEY_TOK_PUBLISHABLE,     /* well-formed wm_pk_ */
	KEY_TOK_RAW,             /* no wm_ prefix, 32..256 printable: a bootstrap secret */
	KEY_TOK_BAD_PREFIX,      /* wm_ but not a known kind */
	KEY_TOK_BAD_LENGTH,
	KEY_TOK_BAD_CHARSET,
	KEY_TOK_BAD_CHECKSUM,
};

/* Classify a bearer token (pure; fuzzed). */
enum key_token key_token_parse(const char *tok, size_t len);
/* Human text for a KEY_TOK_BAD_* value. */
const char *key_token_error(enum key_token t);
/* Write a new random key of the kind into out (>= KEY_TOKEN_LEN + 1). */
int key_token_new(enum key_kind kind, char out[KEY_TOKEN_LEN + 1]);

struct api_key {
	struct row row;
	uint8_t digest[32];             /* SHA-256 of the key */
	char entity_id[ID_MAX_LEN];
	uint8_t kind;                   /* enum key_kind */
	uint8_t revoked;
	scope_set scopes;
	int64_t expires_ms;             /* 0 = never */
	uint32_t rate_rps, rate_burst;  /* 0 = the configured default */
	char name[KEY_MAX_NAME + 1];
	char prefix[KEY_DISPLAY_LEN + 1];
	char channel_id[KEY_MAX_CHANNEL + 1];
	char created_at[32], expires_at[32], revoked_at[32];
};

/*
 * Find the key a token names: SHA-256 of the token, hash-index lookup on
 * the digest, then a constant-time comparison of the stored digest.
 * Returns the key (revoked and expired ones too: the caller decides) or NULL.
 */
const struct api_key *key_lookup(struct shard *sh, const char *tok, size_t len);

/* ---- for key_routes.c ---------------------------------------------------- */
extern const char *const key_kind_names[];   /* by enum key_kind, NULL-terminated */
/* SHA-256 of a token (what is stored, never the token): 0, or -1. */
int key_digest(const char *tok, size_t n, uint8_t out[32]);
/* The key's members into an open object; with_hash only for the stored
 * document.  key_write: the whole object. */
void key_fields(struct jw *w, const struct api_key *k, const char *id, int with_hash);
void key_write(struct jw *w, const struct api_key *k, const char *id, int with_hash);
/* Store the key row (and an event) in one transaction: the LSN, or 0. */
uint64_t key_store(struct shard *sh, const struct api_key *k, const char *id, const char *event);
/* The keys by entity ("<entity>\0<key id>"), for the list route. */
const struct oidx *key_by_entity(struct shard *sh);

/*
 * At start-up: make sure the platform entity has an operator key.  With
 * WM_BOOTSTRAP_KEY set (32..256 printable characters) that secret is stored
 * hashed if not already present; otherwise, when no active operator key
 * exists, a new one is minted and printed once to `out`.  0, or -1 with a
 * reason in err (a bad WM_BOOTSTRAP_KEY refuses to start).
 */
int key_bootstrap(struct shard *sh, FILE *out, char *err, size_t errlen);

extern const struct table_ops key_table_ops;
extern const struct route key_routes[];

/* Minting a channel-scoped publishable key asks: is `channel_id` a live
 * storefront of `seller_id` (exists, belongs to it, not closed)?  1 or 0.
 * Channels are the supply layer, above the edge, so the answer is bound
 * where the layers are assembled (engine/routes.c, to channel_of_seller)
 * and the edge does not include supply. */
extern int (*const key_channel_of_seller)(struct shard *sh, const char *channel_id, const char *seller_id);
/* The partner a key belongs to, as identity needs it: 1 with its roles and
 * onboarding status (policy.h), 0 when no such partner.  Bound in
 * engine/routes.c to the catalogue (partner_facts), for the same reason. */
extern int (*const key_partner_facts)(struct shard *sh, const char *id, uint8_t *roles, uint8_t *status);

#endif
