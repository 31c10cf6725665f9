/*
 * extid.c -- the external-ID crosswalk (spec 2.7): per wine, the ids other
 * systems know it by, each entry {source, external_id, url, confidence}.
 *
 * Sources are the spec's names: gtin, lwin, app_wine_id, app_vintage_id,
 * search_wine_id, cellar_iwine, retail_product_id, vivc_variety_number,
 * eambrosia_gi_id, eambrosia_gi_name.  Each has a value rule (table
 * sources[]): GTINs are checked with their GS1 check digit and stored in
 * their 14-digit form, LWINs by wid_lwin_parse, numeric ids as digits,
 * eAmbrosia file numbers as PDO|PGI-CC-Annnn[-AMnn].
 *
 * "An external id points to at most one wine" holds for the sources that
 * name one sellable item: gtin and retail_product_id (409
 * external_id_taken otherwise), and lwin through its format-level key
 * (LWIN-16: one per vintage + format, the dedup index).  The other sources
 * name something many rows of this catalogue share -- a row is one
 * vintage + format -- and may point to several wines, once per wine:
 * app_wine_id and search_wine_id (the wine across vintages),
 * app_vintage_id and cellar_iwine (a wine-vintage: the bottle and the
 * magnum), vivc_variety_number (a grape variety), eambrosia_gi_id/_name
 * (an appellation).  Refusing those would make the crosswalk unusable.
 *
 * GTIN and LWIN entries feed dedup: adding one also adds the identifier to
 * the wine's document (wine_add_identifier) in the same transaction, so the
 * tier-1/2 indexes see it; ingest creates entries for the identifiers a
 * body carries.  POSTing an entry the wine already has (same source and
 * external_id) refreshes its url and confidence ("refreshed by re-match")
 * and answers 200; a new entry answers 201.  Reading follows the wine's
 * read-path filter; writing needs write access to the wine, which must not
 * be archived.  confidence is an exact decimal 0-1 (4 places), default 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/edge/fields.h"
#include "engine/edge/key.h"
#include "engine/base/log.h"
#include "engine/storage/resources.h"
#include "engine/catalogue/wine.h"

#define EXTID_MAX_SOURCE 24
#define EXTID_MAX_DIGITS 20 /* numeric ids of other systems */

enum cardinality { ONE_WINE, PER_WINE };

struct source_def {
	const char *name;
	enum cardinality card;
	/* Check value; write the stored form into norm (cap EXTID_MAX_VALUE+1).
	 * NULL if fine, else the message. */
	const char *(*check)(const char *s, size_t n, char *norm);
};

static const char *copy(const char *s, size_t n, char *norm)
{
	memcpy(norm, s, n);
	norm[n] = 0;
	return NULL;
}

static const char *check_gtin(const char *s, size_t n, char *norm)
{
	struct wid_gtin g;
	enum wid_err e = wid_gtin_parse(s, n, &g);
	if (e != WID_OK)
		return wid_strerror(e);
	if (g.kind == WID_GTIN_VARIABLE)
		return "a variable-measure GTIN-14 (indicator 9) names no fixed format";
	return copy(g.digits, WID_GTIN_LEN, norm);
}

static const char *check_lwin(const char *s, size_t n, char *norm)
{
	struct wid_lwin l;
	enum wid_err e = wid_lwin_parse(s, n, &l);
	return e != WID_OK ? wid_strerror(e) : copy(s, n, norm);
}

static const char *check_digits(const char *s, size_t n, char *norm)
{
	if (n < 1 || n > EXTID_MAX_DIGITS)
		return "must be 1 to 20 digits";
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return "must be digits only";
	return copy(s, n, norm);
}

static const char *check_vivc(const char *s, size_t n, char *norm)
{
	if (check_digits(s, n, norm) || n > 5 || s[0] == '0')
		return "must be a VIVC variety number, 1 to 99999";
	return NULL;
}

static const char *check_token(const char *s, size_t n, char *norm)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return "must be visible ASCII without blanks";
	return copy(s, n, norm);
}

/* eAmbrosia file number: PDO|PGI-CC-Annnn, optionally -AMnn. */
static const char *check_gi_id(const char *s, size_t n, char *norm)
{
	static const char *const msg = "must be an eAmbrosia file number such as PDO-FR-A1005 or PGI-FR-A1229-AM01";
	if (n != 12 && n != 17)
		return msg;
	if (memcmp(s, "PDO-", 4) && memcmp(s, "PGI-", 4))
		return msg;
	if (s[4] < 'A' || s[4] > 'Z' || s[5] < 'A' || s[5] > 'Z' || memcmp(s + 6, "-A", 2))
		return msg;
	for (int i = 8; i < 12; i++)
		if (s[i] < '0' || s[i] > '9')
			return msg;
	if (n == 17 && (memcmp(s + 12, "-AM", 3) || s[15] < '0' || s[15] > '9' || s[16] < '0' || s[16] > '9'))
		return msg;
	return copy(s, n, norm);
}

static const char *check_text(const char *s, size_t n, char *norm)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return "must not contain control characters";
	return copy(s, n, norm);
}

static const struct source_def sources[EXTID_N_SOURCES] = {
	[XS_GTIN] = {"gtin", ONE_WINE, check_gtin},
	[XS_LWIN] = {"lwin", PER_WINE, check_lwin}, /* one wine per LWIN-16: the dedup index */
	[XS_APP_WINE_ID] = {"app_wine_id", PER_WINE, check_digits},
	[XS_APP_VINTAGE_ID] = {"app_vintage_id", PER_WINE, check_digits},
	[XS_SEARCH_WINE_ID] = {"search_wine_id", PER_WINE, check_token},
	[XS_CELLAR_IWINE] = {"cellar_iwine", PER_WINE, check_digits},
	[XS_RETAIL_PRODUCT_ID] = {"retail_product_id", ONE_WINE, check_token},
	[XS_VIVC_VARIETY_NUMBER] = {"vivc_variety_number", PER_WINE, check_vivc},
	[XS_EAMBROSIA_GI_ID] = {"eambrosia_gi_id", PER_WINE, check_gi_id},
	[XS_EAMBROSIA_GI_NAME] = {"eambrosia_gi_name", PER_WINE, check_text},
};

static const char *const source_names[EXTID_N_SOURCES + 1] = {
	"gtin", "lwin", "app_wine_id", "app_vintage_id", "search_wine_id", "cellar_iwine",
	"retail_product_id", "vivc_variety_number", "eambrosia_gi_id", "eambrosia_gi_name", NULL};

/* ---- table ------------------------------------------------------------- */

struct extid {
	struct row row;
	uint8_t source;
	char wine_id[ID_MAX_LEN];
	char *value; /* its own small allocation: most ids are a few bytes */
};

struct extid_ext {
	struct oidx by_value; /* source NUL value NUL wine id */
	struct oidx by_wine;  /* wine id NUL extid id */
};

static struct extid_ext *ext(const struct table *t) { return t->ext; }
static struct extid_ext *sext(struct shard *sh) { return ext(&sh->tables[REC_T_EXTID]); }

static int extid_init(struct table *t)
{
	struct extid_ext *e = calloc(1, sizeof(*e));
	if (!e)
		return -1;
	oidx_init(&e->by_value);
	oidx_init(&e->by_wine);
	t->ext = e;
	return 0;
}

static void extid_fini(struct table *t)
{
	oidx_free(&ext(t)->by_value);
	oidx_free(&ext(t)->by_wine);
	free(t->ext);
	t->ext = NULL;
}

/* source NUL value NUL [wine id] into out; length, 0 if too long. */
static uint32_t value_key(int source, const char *value, const char *wine_id, uint8_t *out)
{
	size_t sl = strlen(sources[source].name), vl = strlen(value), wl = wine_id ? strlen(wine_id) : 0;
	if (sl + vl + wl + 2 > IDX_MAX_KEY)
		return 0;
	memcpy(out, sources[source].name, sl);
	out[sl] = 0;
	memcpy(out + sl + 1, value, vl);
	out[sl + 1 + vl] = 0;
	if (wl)
		memcpy(out + sl + vl + 2, wine_id, wl);
	return (uint32_t)(sl + vl + 2 + wl);
}

static uint32_t wine_key_of(const char *wine_id, const struct row *r, uint8_t *out)
{
	size_t wl = strlen(wine_id);
	memcpy(out, wine_id, wl);
	out[wl] = 0;
	memcpy(out + wl + 1, r->id, r->id_len);
	return (uint32_t)(wl + 1 + r->id_len);
}

static int extid_index_add(struct table *t, struct row *r)
{
	struct extid *x = (struct extid *)r;
	uint8_t k[IDX_MAX_KEY + 1];
	uint32_t kl = value_key(x->source, x->value, x->wine_id, k);
	if (!kl || oidx_set(&ext(t)->by_value, k, kl, x))
		return -1;
	kl = wine_key_of(x->wine_id, r, k);
	return oidx_set(&ext(t)->by_wine, k, kl, x);
}

static void extid_index_del(struct table *t, struct row *r)
{
	struct extid *x = (struct extid *)r;
	uint8_t k[IDX_MAX_KEY + 1];
	uint32_t kl = value_key(x->source, x->value, x->wine_id, k);
	if (kl && oidx_get(&ext(t)->by_value, k, kl) == x)
		oidx_del(&ext(t)->by_value, k, kl);
	kl = wine_key_of(x->wine_id, r, k);
	oidx_del(&ext(t)->by_wine, k, kl);
}

static int extid_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct extid *x = (struct extid *)r;
	int src;
	char value[EXTID_MAX_VALUE + 1];
	if (fld_enum(NULL, doc, "source", NULL, source_names, &src) != FLD_SET ||
	    fld_str(NULL, doc, "wine_id", NULL, x->wine_id, ID_MAX_LEN - 1) != FLD_SET ||
	    fld_str(NULL, doc, "external_id", NULL, value, EXTID_MAX_VALUE) != FLD_SET)
		return -1;
	x->source = (uint8_t)src;
	uint8_t k[IDX_MAX_KEY + 1];
	if (!value_key(x->source, value, x->wine_id, k) || !(x->value = strdup(value)))
		return -1;
	return 0;
}

static void extid_release(struct table *t, struct row *r)
{
	(void)t;
	free(((struct extid *)r)->value);
}

const struct table_ops extid_table_ops = {
	.rec_table = REC_T_EXTID,
	.name = "extid",
	.row_size = sizeof(struct extid),
	.decode = extid_decode,
	.release = extid_release,
	.index_add = extid_index_add,
	.index_del = extid_index_del,
	.init = extid_init,
	.fini = extid_fini,
};

/* The entry (source, value) of wine_id, or (wine_id NULL) of any other wine
 * than `not_wine`; NULL if none. */
static const struct extid *find(struct shard *sh, int source, const char *value, const char *wine_id,
				const char *not_wine)
{
	uint8_t k[IDX_MAX_KEY + 1];
	uint32_t kl = value_key(source, value, wine_id, k);
	if (!kl)
		return NULL;
	if (wine_id)
		return oidx_get(&sext(sh)->by_value, k, kl);
	struct oidx_iter it;
	for (int ok = oidx_seek_ge(&sext(sh)->by_value, k, kl, &it); ok; ok = oidx_next(&it)) {
		uint32_t l;
		const uint8_t *key = oidx_iter_key(&it, &l);
		if (l < kl || memcmp(key, k, kl))
			break;
		const struct extid *x = oidx_iter_val(&it);
		if (!not_wine || strcmp(x->wine_id, not_wine))
			return x;
	}
	return NULL;
}

/* ---- documents ---------------------------------------------------------- */

struct extid_vals {
	char id[ID_MAX_LEN];
	const char *wine_id;
	int source;
	const char *value;
	const char *url;
	int64_t confidence;
	char created_by[ID_MAX_LEN];
	char created_at[32], updated_at[32];
};

static void extid_write(struct jw *w, const struct extid_vals *v)
{
	jw_obj_begin(w);
	jw_kstr(w, "id", v->id);
	jw_kstr(w, "wine_id", v->wine_id);
	jw_kstr(w, "source", sources[v->source].name);
	jw_kstr(w, "external_id", v->value);
	if (v->url)
		jw_kstr(w, "url", v->url);
	else
		jw_knull(w, "url");
	jw_key(w, "confidence");
	wine_jw_decimal(w, v->confidence, WINE_CONF_SCALE);
	jw_kstr(w, "created_by", v->created_by);
	jw_kstr(w, "created_at", v->created_at);
	jw_kstr(w, "updated_at", v->updated_at);
	jw_obj_end(w);
}

static const char *scope_of(const struct api_ctx *c) { return c->who.is_platform ? NULL : c->who.entity_id; }

/* Add an entry's row (and its event unless event is NULL) to the open
 * transaction; doc keeps the text. */
static int extid_put(struct api_ctx *c, const struct extid_vals *v, const char *event, struct buf *doc)
{
	struct jw w;
	jw_init(&w, doc);
	extid_write(&w, v);
	return w.err || txn_put(c->sh, REC_T_EXTID, v->id, strlen(v->id), doc->data, doc->len) ||
			       (event && txn_event(c->sh, event, scope_of(c), doc->data, doc->len))
		       ? -1
		       : 0;
}

static void new_vals(struct api_ctx *c, struct extid_vals *v)
{
	id_new(&c->sh->ids, "xid", v->id);
	snprintf(v->created_by, sizeof(v->created_by), "%s", c->who.is_platform ? KEY_PLATFORM_ENTITY : c->who.entity_id);
	fmt_rfc3339_ms(v->created_at, wall_ms());
	memcpy(v->updated_at, v->created_at, sizeof(v->created_at));
}

int extid_put_identifiers(struct api_ctx *c, const char *wine_id, const struct wine_in *in)
{
	for (unsigned i = 0; i <= in->n_gtins; i++) {
		int src = i < in->n_gtins ? XS_GTIN : XS_LWIN;
		const char *value = i < in->n_gtins ? in->gtins[i].digits : in->has_lwin ? in->lwin_text : NULL;
		if (!value || find(c->sh, src, value, wine_id, NULL))
			continue;
		struct extid_vals v;
		memset(&v, 0, sizeof(v));
		new_vals(c, &v);
		v.wine_id = wine_id;
		v.source = src;
		v.value = value;
		v.confidence = WINE_CONF_ONE;
		struct buf doc;
		buf_init(&doc, REC_MAX_VAL);
		/* no event of its own: the wine.created / wine.matched event of the
		 * same transaction carries the identifiers */
		int rc = extid_put(c, &v, NULL, &doc);
		buf_free(&doc);
		if (rc)
			return -1;
	}
	return 0;
}

/* ---- routes ---------------------------------------------------------------- */

static const struct wine *wine_of_path(struct api_ctx *c, int write)
{
	const struct wine *w = c->n_params ? wine_get(c->sh, c->params[0].p, c->params[0].len) : NULL;
	if (w && (write ? wine_writable(c, w) : wine_visible(c, w)))
		return w;
	api_error(c, 404, "not_found", "no wine with this id");
	return NULL;
}

static void extids_list(struct api_ctx *c)
{
	const struct wine *w = wine_of_path(c, 0);
	if (!w)
		return;
	struct api_page pg;
	if (api_page_parse(c, &pg))
		return;
	uint8_t prefix[ID_MAX_LEN + 1];
	memcpy(prefix, w->row.id, w->row.id_len);
	prefix[w->row.id_len] = 0;
	api_list(c, &sext(c->sh)->by_wine, prefix, (uint32_t)w->row.id_len + 1, &pg, NULL, NULL, NULL);
}

static const char *const extid_fields[] = {"source", "external_id", "url", "confidence", NULL};

/* Validate the body into v (value normalised into norm); 0 or -1 (errors on c). */
static int read_entry(struct api_ctx *c, const struct json_value *body, struct extid_vals *v, char *norm)
{
	fld_reject_unknown(c, body, extid_fields, NULL);
	for (int i = 0; wine_readonly_fields[i]; i++)
		if (json_get(body, wine_readonly_fields[i]))
			api_field_error(c, wine_readonly_fields[i], "read_only", "is assigned by the service");
	int r = fld_enum(c, body, "source", NULL, source_names, &v->source);
	if (r == FLD_ABSENT || r == FLD_NULL)
		api_field_error(c, "source", "required", "is required");
	const struct json_value *x = json_get(body, "external_id");
	if (!x || x->type == JSON_NULL)
		api_field_error(c, "external_id", "required", "is required");
	else if (x->type != JSON_STRING || x->len == 0 || x->len > EXTID_MAX_VALUE)
		api_field_error(c, "external_id", "type", "must be a string of 1 to %d bytes", EXTID_MAX_VALUE);
	else if (r == FLD_SET) {
		const char *why = sources[v->source].check(x->u.str, x->len, norm);
		if (why)
			api_field_error(c, "external_id", sources[v->source].name, "%s", why);
		v->value = norm;
	}
	const char *url = NULL;
	if (fld_url(c, body, "url", NULL, WINE_MAX_URL, 0, &url) == FLD_SET)
		v->url = url;
	v->confidence = WINE_CONF_ONE;
	const struct json_value *cf = json_get(body, "confidence");
	if (cf && cf->type != JSON_NULL &&
	    (cf->type != JSON_NUMBER || json_to_fixed(cf, WINE_CONF_SCALE, &v->confidence) || v->confidence < 0 ||
	     v->confidence > WINE_CONF_ONE))
		api_field_error(c, "confidence", "range", "must be a number from 0 to 1 with at most 4 decimals");
	return c->n_errs ? -1 : 0;
}

static void extids_create(struct api_ctx *c)
{
	const struct wine *w = wine_of_path(c, 1);
	if (!w)
		return;
	if (w->status == WS_ARCHIVED) {
		api_error(c, 409, "wine_archived", "an archived wine cannot be changed");
		return;
	}
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	struct extid_vals v;
	memset(&v, 0, sizeof(v));
	char norm[EXTID_MAX_VALUE + 1], wine_id[ID_MAX_LEN], detail[200];
	if (read_entry(c, body, &v, norm)) {
		api_validation_failed(c);
		return;
	}
	memcpy(wine_id, w->row.id, w->row.id_len);
	wine_id[w->row.id_len] = 0;
	v.wine_id = wine_id;
	const struct extid *other = sources[v.source].card == ONE_WINE ? find(c->sh, v.source, v.value, NULL, wine_id) : NULL;
	if (other) {
		snprintf(detail, sizeof(detail), "%s %s already points to wine %s", sources[v.source].name, v.value,
			 other->wine_id);
		api_error(c, 409, "external_id_taken", detail);
		return;
	}
	const struct extid *mine = find(c->sh, v.source, v.value, wine_id, NULL);
	if (mine) { /* refresh: same id, new url/confidence */
		memcpy(v.id, mine->row.id, mine->row.id_len);
		v.id[mine->row.id_len] = 0;
		struct json_doc *d = json_parse(mine->row.doc, mine->row.doc_len, NULL, NULL);
		if (d) {
			fld_str(NULL, json_root(d), "created_by", NULL, v.created_by, ID_MAX_LEN - 1);
			fld_str(NULL, json_root(d), "created_at", NULL, v.created_at, sizeof(v.created_at) - 1);
		}
		json_doc_free(d);
		fmt_rfc3339_ms(v.updated_at, wall_ms());
	} else {
		new_vals(c, &v);
	}
	txn_begin(c->sh);
	const char *code = NULL;
	if (v.source == XS_GTIN || v.source == XS_LWIN) {
		/* the dedup indexes learn it too (same transaction) */
		int rc = wine_add_identifier(c, w, v.source == XS_GTIN ? "gtin" : "lwin", v.value, &code, detail,
					     sizeof(detail));
		if (rc < 0) {
			txn_abort(c->sh);
			api_error(c, strcmp(code, "record_too_large") ? 409 : 413, code, detail);
			return;
		}
	}
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	if (extid_put(c, &v, mine ? "wine.external_id.updated" : "wine.external_id.added", &doc) || !txn_commit(c->sh)) {
		txn_abort(c->sh);
		api_error(c, 413, "record_too_large", "the crosswalk entry is too large to store");
	} else {
		c->rs->status = mine ? 200 : 201;
		buf_append(&c->rs->body, doc.data, doc.len);
	}
	buf_free(&doc);
}

const struct route extid_routes[] = {
	{HTTP_M_GET, "/v1/wines/{id}/external-ids", extids_list, SC_READ_WINES, ACT_READ_WINES,
	 "List a wine's crosswalk entries", 0},
	{HTTP_M_POST, "/v1/wines/{id}/external-ids", extids_create, SC_WRITE_WINES, ACT_WRITE_WINES,
	 "Add or refresh a crosswalk entry", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
