/*
 * media.c -- media assets (spec 2.1 and 4.3; issue 4, Media): label and
 * bottle images that wines reference by id, never inline.
 *
 * Why this shape:
 *  - Two steps, like object stores do it.  POST /v1/media (a keyed write)
 *    records what will come -- declared mime, size limit, alt text, role --
 *    as a "pending" row owned by the caller's entity, and answers a signed,
 *    expiring upload URL.  PUT on that URL carries the bytes.  The URL is a
 *    capability: the route is public and the signature is the credential,
 *    so an uploader (a partner's CDN job, a browser) never holds an API key.
 *  - The signature is HMAC-SHA256 over "id|max_bytes|mime|expires" with a
 *    per-data-directory secret (32 random bytes made at the first start,
 *    DATA_DIR/media/secret.key, mode 0600).  The secret is never logged
 *    and never in the WAL or a snapshot; it is compared in constant time.
 *    Size limit and mime come from the row, so a URL cannot be stretched to
 *    another size or type; expires comes from the URL and is signed.
 *  - The bytes decide the type.  engine/catalogue/image.c reads the magic bytes and
 *    the header: unknown types are 415, unreadable headers 422 with the
 *    field that failed, and a file whose declared type (the signed mime,
 *    or the request's Content-Type) disagrees with its magic bytes is a
 *    "lying header", 422.  Width and height always come from the header.
 *  - Storage is content-addressed: DATA_DIR/media/<2 hex>/<sha256 hex>,
 *    written to a temporary name, fsynced, renamed, and the directory
 *    fsynced -- all before the row that names it is committed to the WAL,
 *    so a committed "ready" row always has its file.  Identical bytes are
 *    stored once (two rows, one file).  A crash between the file and the
 *    commit leaves an unreferenced file, never a row without bytes.
 *  - Reads verify: GET .../content re-hashes the file and answers 500 (and
 *    logs the path) on a mismatch -- a corrupt file is reported, never
 *    served.
 *  - Visibility: a ready asset is readable by every caller with read:wines
 *    (wines reference it publicly); a pending one only by its owner and
 *    operators; everyone else gets the 404 of an unknown id.  The owner's
 *    entity id is stored but never shown.
 *
 * Stored document (the API document is the same without entity_id):
 *   id, object "media", entity_id, status (pending | ready), mime, role,
 *   alt, filename, max_bytes, bytes, width, height, sha256, url,
 *   created_at, updated_at.
 */
#include "engine/catalogue/media.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/edge/fields.h"
#include "engine/edge/key.h"
#include "engine/base/log.h"
#include "engine/storage/resources.h"
#include "net/digest.h"
#include "net/hex.h"
#include "wal/fsutil.h"

const char *const media_status_names[] = {"pending", "ready", NULL};
const char *const media_role_names[] = {"label_front", "label_back", "bottle", "case",
					"producer", "gallery", NULL};
/* The accepted types as request values, index + 1 = enum image_type. */
static const char *const mime_names[] = {"image/png", "image/jpeg", "image/webp", NULL};

static const char *const create_fields[] = {"mime", "size", "alt", "role", "filename", NULL};

#define MEDIA_ROOT_MAX 600                    /* DATA_DIR/media (data_dir is < 512) */
#define MEDIA_PATH_MAX (MEDIA_ROOT_MAX + 100) /* root/<2 hex>/.tmp-<64 hex> */
#define MEDIA_SIGN_MSG_MAX 160

/* Per-table state: where the files live and the URL-signing secret. */
struct media_ext {
	int ready;                      /* media_start() ran */
	char root[MEDIA_ROOT_MAX];      /* DATA_DIR/media */
	uint8_t secret[MEDIA_SECRET_LEN];
};

static struct media_ext *ext(const struct table *t) { return t->ext; }

/* ---- small helpers --------------------------------------------------------- */

/* The largest upload in bytes: --media-max-kb, never above --max-body-kb. */
static uint64_t media_limit(const struct config *cfg)
{
	uint64_t kb = cfg->media_max_kb < cfg->max_body_kb ? cfg->media_max_kb : cfg->max_body_kb;
	return kb << 10;
}

static uint64_t now_s(void) { return wall_ms() / 1000; }

/* ---- the signature ---------------------------------------------------------- */

/* HMAC-SHA256 over "id|max_bytes|mime|expires" (expires as the URL's text). */
static int media_sign(const struct media_ext *e, const char *id, uint64_t max_bytes, const char *mime,
		      const char *expires, uint8_t mac[32])
{
	char msg[MEDIA_SIGN_MSG_MAX];
	int n = snprintf(msg, sizeof(msg), "%s|%llu|%s|%s", id, (unsigned long long)max_bytes, mime, expires);
	if (n < 0 || (size_t)n >= sizeof(msg) || digest_hmac_sha256(e->secret, MEDIA_SECRET_LEN, msg, (size_t)n, mac))
		return -1;
	return 0;
}

/* expires text: 1..MEDIA_EXPIRES_MAX_DIGITS decimal digits, no sign. */
static int parse_expires(const char *s, int len, uint64_t *out)
{
	if (len < 1 || len > MEDIA_EXPIRES_MAX_DIGITS)
		return -1;
	uint64_t v = 0;
	for (int i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}

/* Does the URL's signature match the row?  Constant-time comparison. */
static int media_sig_ok(const struct media_ext *e, const struct media_vals *m, const char *expires,
			const char *sig, int sig_len)
{
	uint8_t want[32], got[32];
	if (sig_len != 2 * (int)sizeof(got) || hex_decode(sig, sizeof(got), got) ||
	    media_sign(e, m->id, m->max_bytes, image_mime((enum image_type)m->type), expires, want))
		return 0;
	return CRYPTO_memcmp(want, got, sizeof(want)) == 0;
}

/* ---- files ------------------------------------------------------------------- */

/* Create dir (mode 0700) if missing; a new entry is made durable by
 * fsyncing its parent.  0 or -1 (errno kept). */
static int mkdir_durable(const char *dir, const char *parent)
{
	if (mkdir(dir, 0700) == 0)
		return fs_fsync_dir(parent);
	return errno == EEXIST ? 0 : -1;
}

/* Write all of p[0..n) to fd; 0 or -1. */
static int write_all(int fd, const void *p, size_t n)
{
	const char *s = p;
	while (n) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Read the whole regular file at path into out (appending).  Returns the
 * byte count, or -1 (missing, unreadable, or over `max` bytes). */
static ssize_t read_file(const char *path, struct buf *out, uint64_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max ||
	    buf_reserve(out, (size_t)st.st_size + 1)) {
		close(fd);
		return -1;
	}
	size_t got = 0, want = (size_t)st.st_size;
	while (got <= want) { /* one byte more than fstat said: a file that grew is caught */
		ssize_t r = read(fd, out->data + out->len + got, want + 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			close(fd);
			return -1;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (got > want)
		return -1;
	out->len += got;
	return (ssize_t)got;
}

static void content_path(const struct media_ext *e, const char *sha, char *out, size_t size)
{
	snprintf(out, size, "%s/%.2s/%s", e->root, sha, sha);
}

/* 1 if path holds exactly these bytes' content (size and sha256), else 0. */
static int file_holds(const char *path, const char *sha, uint64_t len)
{
	struct buf b;
	buf_init(&b, 0);
	char got[MEDIA_SHA_HEX + 1];
	ssize_t n = read_file(path, &b, len);
	int ok = n >= 0 && (uint64_t)n == len && !digest_sha256_hex(b.data, (size_t)n, got) && !strcmp(got, sha);
	buf_free(&b);
	return ok;
}

/*
 * Store the bytes at their content address, durably: temp file, fsync,
 * rename, fsync the directory.  Bytes already stored intact are not
 * written again.  0, or -1 with the failing step in why.
 */
static int media_store(const struct media_ext *e, const char *sha, const void *p, size_t n, const char **why)
{
	char dir[MEDIA_PATH_MAX], path[MEDIA_PATH_MAX], tmp[MEDIA_PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/%.2s", e->root, sha);
	content_path(e, sha, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s/%.2s/.tmp-%s", e->root, sha, sha);
	if (mkdir_durable(dir, e->root)) {
		*why = "mkdir";
		return -1;
	}
	if (file_holds(path, sha, n))
		return 0;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		*why = "open";
		return -1;
	}
	*why = write_all(fd, p, n) ? "write" : fsync(fd) ? "fsync" : NULL;
	if (close(fd) && !*why)
		*why = "close";
	if (!*why && rename(tmp, path))
		*why = "rename";
	if (!*why && fs_fsync_dir(dir))
		*why = "fsync_dir";
	if (*why) {
		int saved = errno; /* the caller logs the failing step's error */
		unlink(tmp);
		errno = saved;
		return -1;
	}
	return 0;
}

/* ---- the secret ---------------------------------------------------------------- */

/* Read an existing secret file (exactly MEDIA_SECRET_LEN bytes, regular,
 * mode tightened to 0600 if it was looser).  0, or -1 with err. */
static int secret_read(struct media_ext *e, const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	ssize_t r = -1;
	if (fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size == MEDIA_SECRET_LEN)
		r = read(fd, e->secret, MEDIA_SECRET_LEN);
	if (r != MEDIA_SECRET_LEN) {
		snprintf(err, errlen, "media signing secret %s is unreadable or not %d bytes (%s); restore it from a "
			 "backup, or delete it to invalidate every outstanding upload URL",
			 path, MEDIA_SECRET_LEN, fd < 0 ? strerror(errno) : "wrong size or type");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (st.st_mode & 077) {
		log_warn("msg=\"media signing secret was readable by others; mode set to 0600\" file=%s", path);
		if (fchmod(fd, 0600))
			log_warn("msg=\"could not chmod the media signing secret\" file=%s error=\"%s\"", path,
				 strerror(errno));
	}
	close(fd);
	return 0;
}

/* Make a new secret: random bytes to a temp file (0600), fsync, rename,
 * fsync the directory.  0, or -1 with err. */
static int secret_create(struct media_ext *e, const char *path, char *err, size_t errlen)
{
	char tmp[MEDIA_PATH_MAX + 8];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (getrandom(e->secret, MEDIA_SECRET_LEN, 0) != MEDIA_SECRET_LEN) {
		snprintf(err, errlen, "no entropy for the media signing secret");
		return -1;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	int bad = fd < 0 || write_all(fd, e->secret, MEDIA_SECRET_LEN) || fsync(fd);
	if (fd >= 0)
		bad |= close(fd) != 0;
	if (bad || rename(tmp, path) || fs_fsync_dir(e->root)) {
		snprintf(err, errlen, "cannot write the media signing secret %s: %s", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	log_info("msg=\"media signing secret created\" file=%s", path);
	return 0;
}

int media_start(struct shard *sh, char *err, size_t errlen)
{
	struct media_ext *e = ext(&sh->tables[REC_T_MEDIA]);
	if (sh->cfg.media_max_kb > sh->cfg.max_body_kb) {
		log_warn("msg=\"--media-max-kb clamped to --max-body-kb: an upload is one request body\" "
			 "media_max_kb=%llu max_body_kb=%llu",
			 (unsigned long long)sh->cfg.media_max_kb, (unsigned long long)sh->cfg.max_body_kb);
		sh->cfg.media_max_kb = sh->cfg.max_body_kb;
	}
	int n = snprintf(e->root, sizeof(e->root), "%s/" MEDIA_DIR, sh->cfg.data_dir);
	char path[MEDIA_PATH_MAX];
	if (n < 0 || (size_t)n + sizeof(MEDIA_SECRET_FILE) + MEDIA_SHA_HEX + 8 >= sizeof(e->root)) {
		snprintf(err, errlen, "data directory path too long for media storage");
		return -1;
	}
	if (mkdir_durable(e->root, sh->cfg.data_dir)) {
		snprintf(err, errlen, "cannot create %s: %s", e->root, strerror(errno));
		return -1;
	}
	snprintf(path, sizeof(path), "%s/" MEDIA_SECRET_FILE, e->root);
	struct stat st;
	int rc = lstat(path, &st) == 0 ? secret_read(e, path, err, errlen) : secret_create(e, path, err, errlen);
	e->ready = rc == 0;
	return rc;
}

/* ---- table ---------------------------------------------------------------------- */

static int media_init(struct table *t)
{
	struct media_ext *e = calloc(1, sizeof(*e));
	if (!e)
		return -1;
	t->ext = e;
	return 0;
}

static void media_fini(struct table *t)
{
	struct media_ext *e = ext(t);
	if (e) {
		explicit_bzero(e->secret, sizeof(e->secret));
		free(e);
	}
	t->ext = NULL;
}

/* Optional unsigned integer member; 0 when absent or null.  0 or -1. */
static int doc_uint(const struct json_value *doc, const char *name, uint64_t max, uint64_t *out)
{
	int64_t v = 0;
	int r = fld_int(NULL, doc, name, NULL, 0, (int64_t)max, &v);
	*out = r == FLD_SET ? (uint64_t)v : 0;
	return r == FLD_BAD ? -1 : 0;
}

static int media_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct media_vals *m = &((struct media *)r)->v;
	memset(m, 0, sizeof(*m));
	int st, role, mime;
	uint64_t w, h;
	if (fld_str(NULL, doc, "id", NULL, m->id, sizeof(m->id) - 1) != FLD_SET ||
	    fld_str(NULL, doc, "entity_id", NULL, m->entity_id, sizeof(m->entity_id) - 1) != FLD_SET ||
	    fld_enum(NULL, doc, "status", NULL, media_status_names, &st) != FLD_SET ||
	    fld_enum(NULL, doc, "role", NULL, media_role_names, &role) != FLD_SET ||
	    fld_enum(NULL, doc, "mime", NULL, mime_names, &mime) != FLD_SET ||
	    fld_str(NULL, doc, "alt", NULL, m->alt, MEDIA_MAX_ALT) != FLD_SET ||
	    fld_str(NULL, doc, "filename", NULL, m->filename, MEDIA_MAX_FILENAME) == FLD_BAD ||
	    fld_str(NULL, doc, "sha256", NULL, m->sha256, MEDIA_SHA_HEX) == FLD_BAD ||
	    fld_str(NULL, doc, "created_at", NULL, m->created_at, sizeof(m->created_at) - 1) != FLD_SET ||
	    fld_str(NULL, doc, "updated_at", NULL, m->updated_at, sizeof(m->updated_at) - 1) != FLD_SET ||
	    doc_uint(doc, "max_bytes", UINT32_MAX, &m->max_bytes) || doc_uint(doc, "bytes", UINT32_MAX, &m->bytes) ||
	    doc_uint(doc, "width", IMAGE_MAX_DIM, &w) || doc_uint(doc, "height", IMAGE_MAX_DIM, &h))
		return -1;
	m->status = (uint8_t)st;
	m->role = (uint8_t)role;
	m->type = (uint8_t)(mime + 1);
	m->width = (uint32_t)w;
	m->height = (uint32_t)h;
	if (m->status == MEDIA_READY && (strlen(m->sha256) != MEDIA_SHA_HEX || !m->width || !m->height))
		return -1;
	return 0;
}

const struct table_ops media_table_ops = {
	.rec_table = REC_T_MEDIA,
	.name = "media",
	.row_size = sizeof(struct media),
	.decode = media_decode,
	.init = media_init,
	.fini = media_fini,
};

const struct media *media_get(struct shard *sh, const char *id, size_t len)
{
	return (const struct media *)table_get(&sh->tables[REC_T_MEDIA], id, len);
}

/* ---- documents ------------------------------------------------------------------- */

static void kstr_or_null(struct jw *w, const char *k, const char *v)
{
	if (v[0])
		jw_var_str(w, k, v);
	else
		jw_var_null(w, k);
}

/* The members of a media document; the owner only in the stored one. */
static void media_fields(struct jw *w, const struct media_vals *m, int stored)
{
	int ready = m->status == MEDIA_READY;
	jw_kstr(w, "id", m->id);
	jw_kstr(w, "object", "media");
	if (stored)
		jw_kstr(w, "entity_id", m->entity_id);
	jw_kstr(w, "status", media_status_names[m->status]);
	jw_kstr(w, "mime", image_mime((enum image_type)m->type));
	jw_kstr(w, "role", media_role_names[m->role]);
	jw_kstr(w, "alt", m->alt);
	kstr_or_null(w, "filename", m->filename);
	jw_kint(w, "max_bytes", (int64_t)m->max_bytes);
	if (ready) {
		char url[ID_MAX_LEN + 32];
		snprintf(url, sizeof(url), "/v1/media/%s/content", m->id);
		jw_kint(w, "bytes", (int64_t)m->bytes);
		jw_kint(w, "width", m->width);
		jw_kint(w, "height", m->height);
		jw_kstr(w, "sha256", m->sha256);
		jw_kstr(w, "url", url);
	} else {
		static const char *const unset[] = {"bytes", "width", "height", "sha256", "url"};
		for (size_t i = 0; i < sizeof(unset) / sizeof(unset[0]); i++)
			jw_var_null(w, unset[i]);
	}
	jw_kstr(w, "created_at", m->created_at);
	jw_kstr(w, "updated_at", m->updated_at);
}

static void media_write(struct jw *w, const struct media_vals *m, int stored)
{
	jw_obj_begin(w);
	media_fields(w, m, stored);
	jw_obj_end(w);
}

/* Store the row and its event in one transaction.  Returns the LSN or 0. */
static uint64_t media_commit(struct shard *sh, const struct media_vals *m, const char *event)
{
	struct buf doc, pub;
	buf_init(&doc, REC_MAX_VAL);
	buf_init(&pub, REC_MAX_VAL);
	struct jw w;
	jw_init(&w, &doc);
	media_write(&w, m, 1);
	int bad = w.err;
	jw_init(&w, &pub);
	media_write(&w, m, 0);
	bad |= w.err;
	uint64_t lsn = 0;
	if (!bad) {
		const char *scope = strcmp(m->entity_id, KEY_PLATFORM_ENTITY) ? m->entity_id : NULL;
		txn_begin(sh);
		if (txn_put(sh, REC_T_MEDIA, m->id, strlen(m->id), doc.data, doc.len) ||
		    txn_event(sh, event, scope, pub.data, pub.len))
			txn_abort(sh);
		else
			lsn = txn_commit(sh);
	}
	buf_free(&doc);
	buf_free(&pub);
	return lsn;
}

/* ---- POST /v1/media ------------------------------------------------------------------ */

/* Read and check the create body into m (every failing field collected). */
static void media_read_create(struct api_ctx *c, const struct json_value *body, struct media_vals *m)
{
	fld_reject_unknown(c, body, create_fields, NULL);
	int mime = -1, role = -1;
	int64_t size = 0;
	uint64_t limit = media_limit(&c->sh->cfg);
	int r = fld_enum(c, body, "mime", NULL, mime_names, &mime);
	if (r == FLD_ABSENT || r == FLD_NULL)
		api_field_error(c, "mime", "required", "is required: image/png, image/jpeg or image/webp");
	r = fld_int(c, body, "size", NULL, 1, (int64_t)limit, &size);
	if (r == FLD_ABSENT || r == FLD_NULL)
		api_field_error(c, "size", "required", "is required: the file's size in bytes, 1 to %llu",
				(unsigned long long)limit);
	r = fld_str(c, body, "alt", NULL, m->alt, MEDIA_MAX_ALT);
	if (r == FLD_ABSENT || r == FLD_NULL)
		api_field_error(c, "alt", "required", "is required: a text alternative for the image");
	r = fld_enum(c, body, "role", NULL, media_role_names, &role);
	if (r == FLD_ABSENT || r == FLD_NULL)
		api_field_error(c, "role", "required", "is required");
	fld_str(c, body, "filename", NULL, m->filename, MEDIA_MAX_FILENAME);
	if (mime >= 0)
		m->type = (uint8_t)(mime + 1);
	if (role >= 0)
		m->role = (uint8_t)role;
	m->max_bytes = size > 0 ? (uint64_t)size : 0;
}

static void media_create(struct api_ctx *c)
{
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	struct media_vals m;
	memset(&m, 0, sizeof(m));
	media_read_create(c, body, &m);
	if (c->n_errs) {
		api_validation_failed(c);
		return;
	}
	const struct media_ext *e = ext(&c->sh->tables[REC_T_MEDIA]);
	if (!e->ready) {
		api_error(c, 503, "media_unavailable", "media storage is not initialised");
		return;
	}
	id_new(&c->sh->ids, "med", m.id);
	snprintf(m.entity_id, sizeof(m.entity_id), "%s", c->who.entity_id);
	m.status = MEDIA_PENDING;
	fmt_rfc3339_ms(m.created_at, wall_ms());
	memcpy(m.updated_at, m.created_at, sizeof(m.created_at));
	uint64_t expires = now_s() + c->sh->cfg.media_url_ttl_s;
	char exp[24], sig[2 * 32 + 1], exp_at[32];
	uint8_t mac[32];
	snprintf(exp, sizeof(exp), "%llu", (unsigned long long)expires);
	const char *mime = image_mime((enum image_type)m.type);
	if (media_sign(e, m.id, m.max_bytes, mime, exp, mac)) {
		api_error(c, 500, "signing_failed", "the upload URL could not be signed");
		return;
	}
	hex_encode(mac, sizeof(mac), sig);
	fmt_rfc3339_ms(exp_at, expires * 1000);
	if (!media_commit(c->sh, &m, "media.created")) {
		api_error(c, 500, "commit_failed", "the media record could not be stored");
		return;
	}
	char url[ID_MAX_LEN + 160];
	snprintf(url, sizeof(url), "/v1/media/%s/content?expires=%s&sig=%s", m.id, exp, sig);
	struct jw *w = &c->w;
	c->rs->status = 201;
	jw_obj_begin(w);
	media_fields(w, &m, 0);
	jw_key(w, "upload");
	jw_obj_begin(w);
	jw_kstr(w, "method", "PUT");
	jw_kstr(w, "url", url);
	jw_kstr(w, "expires_at", exp_at);
	jw_kint(w, "max_bytes", (int64_t)m.max_bytes);
	jw_kstr(w, "mime", mime);
	jw_obj_end(w);
	jw_obj_end(w);
}

/* ---- PUT /v1/media/{id}/content (public: the signature is the credential) ------------ */

/* What the request's Content-Type claims: an accepted type, IMG_NONE when
 * it claims nothing (absent or application/octet-stream), -1 otherwise. */
static int declared_type(const struct http_request *h)
{
	const struct http_header *ct = http_find_header(h, "content-type");
	if (!ct)
		return IMG_NONE;
	size_t n = 0;
	while (n < ct->value_len && ct->value[n] != ';' && ct->value[n] != ' ' && ct->value[n] != '\t')
		n++;
	static const char octet[] = "application/octet-stream";
	if (n == sizeof(octet) - 1 && !strncasecmp(ct->value, octet, n))
		return IMG_NONE;
	enum image_type t = image_type_from_mime(ct->value, n);
	return t == IMG_NONE ? -1 : (int)t;
}

/* The 422 code for each header error (IMG_ERR_UNKNOWN_TYPE is a 415). */
static const char *const image_err_codes[IMG_ERR_COUNT_] = {
	[IMG_ERR_TRUNCATED] = "image_truncated",
	[IMG_ERR_BAD_HEADER] = "image_bad_header",
	[IMG_ERR_BAD_CRC] = "image_bad_checksum",
	[IMG_ERR_ZERO_DIMENSION] = "image_zero_dimension",
	[IMG_ERR_TOO_LARGE] = "image_dimensions_too_large",
};

/* Check the body against the row: size, declared and actual type, header.
 * Fills info; on a refusal writes the error and returns -1. */
static int media_check_body(struct api_ctx *c, const struct media_vals *m, struct image_info *info)
{
	const struct http_request *h = c->http;
	char d[256];
	const char *want = image_mime((enum image_type)m->type);
	if (h->body_len == 0) {
		api_error(c, 400, "body_required", "send the image bytes as the request body");
		return -1;
	}
	if (h->body_len > m->max_bytes) {
		snprintf(d, sizeof(d), "the body is %zu bytes; this upload URL allows at most %llu", h->body_len,
			 (unsigned long long)m->max_bytes);
		api_error(c, 413, "media_too_large", d);
		return -1;
	}
	int decl = declared_type(h);
	if (decl < 0) {
		api_error(c, 415, "unsupported_media_type",
			  "Content-Type must be the declared image type (or application/octet-stream)");
		return -1;
	}
	if (decl != IMG_NONE && decl != m->type) {
		snprintf(d, sizeof(d), "Content-Type says %s but this upload was declared as %s",
			 image_mime((enum image_type)decl), want);
		api_error(c, 422, "lying_header", d);
		return -1;
	}
	enum image_err ie = image_probe(h->body, h->body_len, info);
	if (ie == IMG_ERR_UNKNOWN_TYPE) {
		api_error(c, 415, "unsupported_image_type", "the bytes are not a PNG, JPEG or WebP file");
		return -1;
	}
	if (info->type != IMG_NONE && info->type != m->type) {
		snprintf(d, sizeof(d), "declared %s but the file's magic bytes say %s", want,
			 image_mime(info->type));
		api_error(c, 422, "lying_header", d);
		return -1;
	}
	if (ie != IMG_OK) {
		snprintf(d, sizeof(d), "the image header cannot be read: %s", info->detail);
		api_error(c, 422, image_err_codes[ie] ? image_err_codes[ie] : "image_unreadable", d);
		return -1;
	}
	return 0;
}

static void media_upload(struct api_ctx *c)
{
	struct shard *sh = c->sh;
	const struct media_ext *e = ext(&sh->tables[REC_T_MEDIA]);
	if (!e->ready) {
		api_error(c, 503, "media_unavailable", "media storage is not initialised");
		return;
	}
	char exp[MEDIA_EXPIRES_MAX_DIGITS + 2], sig[2 * 32 + 2];
	int el = api_query(c, "expires", exp, sizeof(exp));
	int sl = api_query(c, "sig", sig, sizeof(sig));
	const struct media *row = c->n_params ? media_get(sh, c->params[0].p, c->params[0].len) : NULL;
	uint64_t expires = 0;
	if (!row || parse_expires(exp, el, &expires) || !media_sig_ok(e, &row->v, exp, sig, sl)) {
		api_error(c, 403, "invalid_signature",
			  "the upload URL is not valid (altered or unknown); POST /v1/media for a new one");
		return;
	}
	if (expires <= now_s()) {
		api_error(c, 403, "upload_url_expired", "the upload URL has expired; POST /v1/media for a new one");
		return;
	}
	if (row->v.status == MEDIA_READY) {
		api_error(c, 409, "already_uploaded", "this media asset already has its content");
		return;
	}
	struct media_vals m = row->v; /* the row is replaced by the commit below */
	struct image_info info;
	if (media_check_body(c, &m, &info))
		return;
	const char *why = NULL;
	if (digest_sha256_hex(c->http->body, c->http->body_len, m.sha256) ||
	    media_store(e, m.sha256, c->http->body, c->http->body_len, &why)) {
		if (errno == ENOSPC || errno == EDQUOT)
			shard_note_nospace(c->sh); /* answered 507 by api.c, logged once */
		log_error("msg=\"media content could not be stored\" media_id=%s step=%s error=\"%s\" "
			  "action=\"check space and permissions of %s\"",
			  m.id, why ? why : "sha256", strerror(errno), e->root);
		api_error(c, 500, "storage_failed", "the content could not be stored; retry later");
		return;
	}
	m.status = MEDIA_READY;
	m.bytes = c->http->body_len;
	m.width = info.width;
	m.height = info.height;
	fmt_rfc3339_ms(m.updated_at, wall_ms());
	if (!media_commit(sh, &m, "media.ready")) {
		api_error(c, 500, "commit_failed", "the media record could not be stored");
		return;
	}
	c->rs->status = 200;
	media_write(&c->w, &m, 0);
}

/* ---- reads --------------------------------------------------------------------------------- */

/* The media named by the path if the caller may see it: ready ones for
 * every reader, pending ones for the owner and operators; 404 otherwise. */
static const struct media *media_from_path(struct api_ctx *c)
{
	const struct media *m = c->n_params ? media_get(c->sh, c->params[0].p, c->params[0].len) : NULL;
	if (m && m->v.status != MEDIA_READY && !api_owns(c, m->v.entity_id, strlen(m->v.entity_id)))
		m = NULL;
	if (!m)
		api_error(c, 404, "not_found", "no media with this id");
	return m;
}

static void media_show(struct api_ctx *c)
{
	const struct media *m = media_from_path(c);
	if (!m || api_read_row(c))
		return;
	c->rs->status = 200;
	media_write(&c->w, &m->v, 0);
}

/* Stream the stored bytes, verified against the row's size and sha256. */
static void media_content(struct api_ctx *c)
{
	const struct media *m = media_from_path(c);
	if (!m)
		return;
	if (m->v.status != MEDIA_READY) {
		api_error(c, 409, "media_not_ready", "the content has not been uploaded yet");
		return;
	}
	if (api_read_row(c))
		return;
	const struct media_ext *e = ext(&c->sh->tables[REC_T_MEDIA]);
	char path[MEDIA_PATH_MAX], got[MEDIA_SHA_HEX + 1] = "";
	content_path(e, m->v.sha256, path, sizeof(path));
	struct buf *body = &c->rs->body;
	buf_reset(body);
	ssize_t n = e->ready ? read_file(path, body, m->v.bytes) : -1;
	if (n < 0 || (uint64_t)n != m->v.bytes || digest_sha256_hex(body->data, (size_t)n, got) ||
	    strcmp(got, m->v.sha256)) {
		log_error("msg=\"media content missing or corrupt: not served\" media_id=%s file=%s expected_sha256=%s "
			  "actual_sha256=%s bytes=%zd action=\"restore the file from a backup or re-upload the asset\"",
			  m->v.id, path, m->v.sha256, got[0] ? got : "-", n);
		api_error(c, 500, "media_corrupt", "the stored content failed its checksum and was not served");
		return;
	}
	c->rs->status = 200;
	c->rs->content_type = image_mime((enum image_type)m->v.type);
	buf_printf(&c->rs->headers, "ETag: \"%s\"\r\nX-Content-Type-Options: nosniff\r\n", m->v.sha256);
}

const struct route media_routes[] = {
	{HTTP_M_POST, "/v1/media", media_create, SC_WRITE_WINES, ACT_WRITE_WINES,
	 "Declare a media asset and get a signed, expiring upload URL", 0},
	{HTTP_M_GET, "/v1/media/{id}", media_show, SC_READ_WINES, ACT_READ_WINES, "Retrieve a media asset", 0},
	{HTTP_M_PUT, "/v1/media/{id}/content", media_upload, SC_PUBLIC, ACT_NONE,
	 "Upload the bytes to a signed URL (the signature is the credential)", 0},
	{HTTP_M_GET, "/v1/media/{id}/content", media_content, SC_READ_WINES, ACT_READ_WINES,
	 "Fetch a media asset's bytes (checksum verified)", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
