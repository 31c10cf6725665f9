/*
 * key.c -- API keys (see key.h for the format).
 *
 * Why this shape:
 *  - Only a SHA-256 digest of a key is ever stored (WAL, snapshots,
 *    memory).  The plaintext exists in the minting response and nowhere
 *    else; reads show the display prefix.  A key is 178 random bits, so a
 *    fast unsalted hash is the right tool (as GitHub and Stripe do): there
 *    is nothing to brute-force.
 *  - Lookup is by digest through a hash index, then the stored digest is
 *    compared with CRYPTO_memcmp, so the comparison of secret-derived bytes
 *    takes the same time whatever the caller sent.
 *  - The checksum makes a mistyped or truncated key fail before any
 *    lookup, and the wm_sk_/wm_pk_ prefixes let secret scanners spot leaks.
 *  - Keys belong to exactly one entity (a partner id, or "platform" for
 *    operators) and carry their scopes.  A caller mints only for its own
 *    entity (operators for any), never scopes it does not hold itself, and
 *    never the platform-only scopes for a partner.  Publishable keys carry
 *    read scopes for a storefront only.
 *  - Rotation is mint-new then revoke-old; revocation and expiry take
 *    effect on the very next request (auth.c checks both every time).
 */
#include "engine/edge/key.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <xxhash.h>

#include "engine/edge/fields.h"
#include "engine/base/log.h"
#include "net/digest.h"
#include "net/hex.h"

static const char b62[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const char *const key_kind_names[] = {"secret", "publishable", NULL};
static const char *const kind_prefix[] = {"wm_sk_", "wm_pk_"};
#define KEY_PREFIX_LEN 6

/* ---- token format ------------------------------------------------------ */

static int is_b62(char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z');
}

/* The 6-character checksum of the first 36 characters. */
static void key_checksum(const char *tok, char out[KEY_CHECK_LEN])
{
	uint32_t h = XXH32(tok, KEY_PREFIX_LEN + KEY_RANDOM_LEN, 0);
	for (int i = KEY_CHECK_LEN - 1; i >= 0; i--) {
		out[i] = b62[h % 62];
		h /= 62;
	}
}

enum key_token key_token_parse(const char *tok, size_t len)
{
	if (len >= 3 && memcmp(tok, "wm_", 3) == 0) {
		int kind = -1;
		for (int k = 0; k < 2; k++)
			if (len >= KEY_PREFIX_LEN && memcmp(tok, kind_prefix[k], KEY_PREFIX_LEN) == 0)
				kind = k;
		if (kind < 0)
			return KEY_TOK_BAD_PREFIX;
		if (len != KEY_TOKEN_LEN)
			return KEY_TOK_BAD_LENGTH;
		for (size_t i = KEY_PREFIX_LEN; i < len; i++)
			if (!is_b62(tok[i]))
				return KEY_TOK_BAD_CHARSET;
		char sum[KEY_CHECK_LEN];
		key_checksum(tok, sum);
		if (memcmp(sum, tok + KEY_PREFIX_LEN + KEY_RANDOM_LEN, KEY_CHECK_LEN))
			return KEY_TOK_BAD_CHECKSUM;
		return kind == KEY_SECRET ? KEY_TOK_SECRET : KEY_TOK_PUBLISHABLE;
	}
	if (len < KEY_RAW_MIN || len > KEY_RAW_MAX)
		return KEY_TOK_BAD_LENGTH;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)tok[i] <= ' ' || (unsigned char)tok[i] >= 0x7f)
			return KEY_TOK_BAD_CHARSET;
	return KEY_TOK_RAW;
}

const char *key_token_error(enum key_token t)
{
	switch (t) {
	case KEY_TOK_BAD_PREFIX: return "the key does not start with wm_sk_ or wm_pk_";
	case KEY_TOK_BAD_LENGTH: return "the key has the wrong length (truncated or padded?)";
	case KEY_TOK_BAD_CHARSET: return "the key contains characters a key never has";
	case KEY_TOK_BAD_CHECKSUM: return "the key's checksum does not match (mistyped or altered?)";
	default: return "the key is well-formed";
	}
}

int key_token_new(enum key_kind kind, char out[KEY_TOKEN_LEN + 1])
{
	memcpy(out, kind_prefix[kind], KEY_PREFIX_LEN);
	size_t n = 0;
	while (n < KEY_RANDOM_LEN) {
		uint8_t rnd[64];
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			return -1;
		for (size_t i = 0; i < sizeof(rnd) && n < KEY_RANDOM_LEN; i++)
			if (rnd[i] < 248) /* 248 = 4 * 62: no modulo bias */
				out[KEY_PREFIX_LEN + n++] = b62[rnd[i] % 62];
	}
	key_checksum(out, out + KEY_PREFIX_LEN + KEY_RANDOM_LEN);
	out[KEY_TOKEN_LEN] = 0;
	return 0;
}

/* SHA-256 (net/digest.h: fetched once per thread). */
int key_digest(const char *p, size_t n, uint8_t out[32])
{
	return digest_sha256(p, n, out);
}

/* ---- table ------------------------------------------------------------- */

struct key_ext {
	struct hidx by_digest;   /* 32-byte digest -> key */
	struct oidx by_entity;   /* entity_id '\0' key id -> key */
};

static struct key_ext *ext(const struct table *t) { return t->ext; }

const struct oidx *key_by_entity(struct shard *sh) { return &ext(&sh->tables[REC_T_KEY])->by_entity; }

static int key_init(struct table *t)
{
	struct key_ext *e = calloc(1, sizeof(*e));
	if (!e)
		return -1;
	hidx_init(&e->by_digest);
	oidx_init(&e->by_entity);
	t->ext = e;
	return 0;
}

static void key_fini(struct table *t)
{
	struct key_ext *e = ext(t);
	hidx_free(&e->by_digest);
	oidx_free(&e->by_entity);
	free(e);
	t->ext = NULL;
}

static uint32_t entity_key(const struct api_key *k, uint8_t *out)
{
	size_t el = strlen(k->entity_id);
	memcpy(out, k->entity_id, el);
	out[el] = 0;
	memcpy(out + el + 1, k->row.id, k->row.id_len);
	return (uint32_t)(el + 1 + k->row.id_len);
}

static int key_index_add(struct table *t, struct row *r)
{
	struct api_key *k = (struct api_key *)r;
	uint8_t ek[IDX_MAX_KEY];
	if (hidx_put(&ext(t)->by_digest, (const char *)k->digest, 32, k))
		return -1;
	if (oidx_put(&ext(t)->by_entity, ek, entity_key(k, ek), k)) {
		hidx_del(&ext(t)->by_digest, (const char *)k->digest, 32);
		return -1;
	}
	return 0;
}

static void key_index_del(struct table *t, struct row *r)
{
	struct api_key *k = (struct api_key *)r;
	uint8_t ek[IDX_MAX_KEY];
	hidx_del(&ext(t)->by_digest, (const char *)k->digest, 32);
	oidx_del(&ext(t)->by_entity, ek, entity_key(k, ek));
}

static int key_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct api_key *k = (struct api_key *)r;
	char hash[80], kind[16];
	if (fld_doc_str(doc, "key_hash", hash, sizeof(hash)) || strlen(hash) != 71 ||
	    memcmp(hash, "sha256:", 7) || hex_decode(hash + 7, 32, k->digest))
		return -1;
	if (fld_doc_str(doc, "entity_id", k->entity_id, sizeof(k->entity_id)) || !k->entity_id[0] ||
	    fld_doc_str(doc, "kind", kind, sizeof(kind)) || fld_doc_str(doc, "name", k->name, sizeof(k->name)) ||
	    fld_doc_str(doc, "prefix", k->prefix, sizeof(k->prefix)) ||
	    fld_doc_str(doc, "channel_id", k->channel_id, sizeof(k->channel_id)) ||
	    fld_doc_str(doc, "created_at", k->created_at, sizeof(k->created_at)) ||
	    fld_doc_str(doc, "expires_at", k->expires_at, sizeof(k->expires_at)) ||
	    fld_doc_str(doc, "revoked_at", k->revoked_at, sizeof(k->revoked_at)))
		return -1;
	k->kind = strcmp(kind, "publishable") == 0 ? KEY_PUBLISHABLE : KEY_SECRET;
	k->revoked = k->revoked_at[0] != 0;
	long long ms = 0;
	if (k->expires_at[0] && parse_rfc3339_ms(k->expires_at, strlen(k->expires_at), &ms))
		return -1;
	k->expires_ms = ms;
	const struct json_value *sc = json_get(doc, "scopes");
	if (!sc || sc->type != JSON_ARRAY)
		return -1;
	for (uint32_t i = 0; i < sc->len; i++) {
		const struct json_value *s = &sc->u.items[i];
		int id = s->type == JSON_STRING ? scope_find(s->u.str, s->len) : -1;
		if (id > 0) /* a scope this build does not know grants nothing */
			k->scopes |= SCOPE_BIT(id);
	}
	const struct json_value *rl = json_get(doc, "rate_limit");
	if (rl && rl->type == JSON_OBJECT) {
		int64_t v;
		const struct json_value *x = json_get(rl, "requests_per_second");
		if (x && !json_to_int64(x, &v) && v > 0 && v <= KEY_RATE_MAX)
			k->rate_rps = (uint32_t)v;
		x = json_get(rl, "burst");
		if (x && !json_to_int64(x, &v) && v > 0 && v <= KEY_RATE_MAX)
			k->rate_burst = (uint32_t)v;
	}
	return 0;
}

const struct table_ops key_table_ops = {
	.rec_table = REC_T_KEY,
	.name = "key",
	.row_size = sizeof(struct api_key),
	.decode = key_decode,
	.index_add = key_index_add,
	.index_del = key_index_del,
	.init = key_init,
	.fini = key_fini,
};

const struct api_key *key_lookup(struct shard *sh, const char *tok, size_t len)
{
	uint8_t d[32];
	if (key_digest(tok, len, d))
		return NULL;
	const struct table *t = &sh->tables[REC_T_KEY];
	const struct api_key *k = (const struct api_key *)table_find(t, &ext(t)->by_digest, (const char *)d, 32);
	if (!k || CRYPTO_memcmp(k->digest, d, 32) != 0)
		return NULL;
	return k;
}

/* ---- documents --------------------------------------------------------- */

/* The key's members; with_hash only for the stored document. */
void key_fields(struct jw *w, const struct api_key *k, const char *id, int with_hash)
{
	jw_kstr(w, "id", id);
	jw_kstr(w, "object", "api_key");
	jw_kstr(w, "entity_id", k->entity_id);
	jw_kstr(w, "kind", key_kind_names[k->kind]);
	if (k->name[0])
		jw_kstr(w, "name", k->name);
	else
		jw_knull(w, "name");
	jw_kstr(w, "prefix", k->prefix);
	jw_key(w, "scopes");
	jw_arr_begin(w);
	for (int s = 1; s < SC_COUNT_; s++)
		if (k->scopes & SCOPE_BIT(s))
			jw_str(w, scope_defs[s].name);
	jw_arr_end(w);
	if (k->channel_id[0])
		jw_kstr(w, "channel_id", k->channel_id);
	else
		jw_knull(w, "channel_id");
	if (k->rate_rps) {
		jw_key(w, "rate_limit");
		jw_obj_begin(w);
		jw_kint(w, "requests_per_second", k->rate_rps);
		jw_kint(w, "burst", k->rate_burst);
		jw_obj_end(w);
	} else {
		jw_knull(w, "rate_limit");
	}
	jw_kstr(w, "created_at", k->created_at);
	if (k->expires_at[0])
		jw_kstr(w, "expires_at", k->expires_at);
	else
		jw_knull(w, "expires_at");
	if (k->revoked_at[0])
		jw_kstr(w, "revoked_at", k->revoked_at);
	else
		jw_knull(w, "revoked_at");
	if (with_hash) {
		char hx[80] = "sha256:";
		hex_encode(k->digest, 32, hx + 7);
		jw_kstr(w, "key_hash", hx);
	}
}

void key_write(struct jw *w, const struct api_key *k, const char *id, int with_hash)
{
	jw_obj_begin(w);
	key_fields(w, k, id, with_hash);
	jw_obj_end(w);
}

/* Store the key row (and an event) in one transaction.  Returns the LSN or 0. */
uint64_t key_store(struct shard *sh, const struct api_key *k, const char *id, const char *event)
{
	struct buf doc, pub;
	buf_init(&doc, REC_MAX_VAL);
	buf_init(&pub, REC_MAX_VAL);
	struct jw w;
	jw_init(&w, &doc);
	key_write(&w, k, id, 1);
	int bad = w.err;
	jw_init(&w, &pub);
	key_write(&w, k, id, 0);
	bad |= w.err;
	uint64_t lsn = 0;
	if (!bad) {
		txn_begin(sh);
		const char *scope = strcmp(k->entity_id, KEY_PLATFORM_ENTITY) ? k->entity_id : NULL;
		if (txn_put(sh, REC_T_KEY, id, strlen(id), doc.data, doc.len) ||
		    txn_event(sh, event, scope, pub.data, pub.len))
			txn_abort(sh);
		else
			lsn = txn_commit(sh);
	}
	buf_free(&doc);
	buf_free(&pub);
	return lsn;
}


/* ---- bootstrap --------------------------------------------------------- */

/* The platform's first usable operator key, or NULL. */
static const struct api_key *operator_key(struct shard *sh)
{
	const struct oidx *t = &ext(&sh->tables[REC_T_KEY])->by_entity;
	struct oidx_iter it;
	const char prefix[] = KEY_PLATFORM_ENTITY; /* followed by NUL in the index key */
	long long now = (long long)wall_ms();
	for (int ok = oidx_seek_ge(t, prefix, sizeof(prefix), &it); ok; ok = oidx_next(&it)) {
		uint32_t kl;
		const char *k = oidx_iter_key(&it, &kl);
		if (kl < sizeof(prefix) || memcmp(k, prefix, sizeof(prefix)))
			break;
		const struct api_key *key = oidx_iter_val(&it);
		if (!key->revoked && (!key->expires_ms || key->expires_ms > now) &&
		    (key->scopes & SCOPE_BIT(SC_OPERATOR)))
			return key;
	}
	return NULL;
}

static int store_operator_key(struct shard *sh, const char *tok, size_t len, const char *name,
			      const char *prefix)
{
	struct api_key k;
	memset(&k, 0, sizeof(k));
	if (key_digest(tok, len, k.digest))
		return -1;
	strcpy(k.entity_id, KEY_PLATFORM_ENTITY);
	k.kind = KEY_SECRET;
	for (int s = 1; s < SC_COUNT_; s++)
		k.scopes |= SCOPE_BIT(s);
	snprintf(k.name, sizeof(k.name), "%s", name);
	snprintf(k.prefix, sizeof(k.prefix), "%s", prefix);
	fmt_rfc3339_ms(k.created_at, wall_ms());
	char id[ID_MAX_LEN];
	id_new(&sh->ids, "key", id);
	return key_store(sh, &k, id, "key.created") ? 0 : -1;
}

int key_bootstrap(struct shard *sh, FILE *out, char *err, size_t errlen)
{
	const char *env = getenv("WM_BOOTSTRAP_KEY");
	if (env && *env) { /* set and empty counts as unset */
		size_t len = strlen(env);
		enum key_token t = key_token_parse(env, len);
		if (t > KEY_TOK_RAW) {
			snprintf(err, errlen, "WM_BOOTSTRAP_KEY is not usable: %s (use 32 to 256 printable characters, "
				 "no spaces)", t == KEY_TOK_BAD_LENGTH ? "wrong length" : key_token_error(t));
			return -1;
		}
		const struct api_key *k = key_lookup(sh, env, len);
		if (k) {
			if (k->revoked)
				log_warn("msg=\"WM_BOOTSTRAP_KEY names a revoked key; it will not authenticate\" "
					 "action=\"set a new WM_BOOTSTRAP_KEY\"");
			return 0;
		}
		if (store_operator_key(sh, env, len, "bootstrap (WM_BOOTSTRAP_KEY)", "bootstrap")) {
			snprintf(err, errlen, "could not store the bootstrap operator key");
			return -1;
		}
		log_info("msg=\"operator key from WM_BOOTSTRAP_KEY stored (hashed)\"");
		return 0;
	}
	const struct api_key *op = operator_key(sh);
	if (op) {
		fprintf(out, "operator key: %s... (its plaintext was shown when it was minted; to add one you "
			"know, start with WM_BOOTSTRAP_KEY=<32 or more characters>)\n", op->prefix);
		fflush(out);
		return 0;
	}
	char tok[KEY_TOKEN_LEN + 1], prefix[KEY_DISPLAY_LEN + 1];
	if (key_token_new(KEY_SECRET, tok)) {
		snprintf(err, errlen, "no entropy for the operator key");
		return -1;
	}
	memcpy(prefix, tok, KEY_DISPLAY_LEN);
	prefix[KEY_DISPLAY_LEN] = 0;
	if (store_operator_key(sh, tok, KEY_TOKEN_LEN, "operator (first start)", prefix)) {
		snprintf(err, errlen, "could not store the operator key");
		return -1;
	}
	fprintf(out, "operator key (shown once, store it now): %s\n", tok);
	fflush(out);
	log_info("msg=\"operator key minted and printed on stdout\" prefix=%s", prefix);
	explicit_bzero(tok, sizeof(tok));
	return 0;
}
