/*
 * producer.c -- producers (estates), the `producer` a canonical wine refers
 * to (spec 2.2: "reference to producer/estate, independent of who sells
 * it").  The spec names no producer endpoints; the decisions here are
 * written into api/openapi.json as well:
 *
 *  - A producer is catalogue master data: every caller with read:wines
 *    sees every producer (there is no draft state to hide).
 *  - `slug` is unique and is the producer's dedup key: it defaults to the
 *    slug of the name (engine/catalogue/wine_ident.h wid_slug: accents folded, so
 *    "Château Margaux" and "CHATEAU MARGAUX" are one producer).  Creating
 *    a second producer with a taken slug is a 409 `producer_exists` naming
 *    the existing id; two estates that really share a name get explicit
 *    slugs.  Wine ingest resolves an inline producer object by the same
 *    slug (find, else create in the wine's transaction), so a feed that
 *    names its producer never creates duplicates either.
 *  - `partner_id` links the producer to the partner that IS the estate:
 *    the partner must exist, have the originator role and be of
 *    originator_type estate (422 otherwise).  This link is what "estate
 *    first" routing uses later, and what lets the estate see and edit the
 *    drafts of its wines.  A partner may link a producer to itself only;
 *    operators may link any.
 *  - Writes (PATCH) are open to the platform, the producer's creator and
 *    its linked partner; any other caller gets 404, as for a producer that
 *    does not exist (the same rule as wines).
 *  - The wine natural key embeds the producer NAME as it was when the wine
 *    was written (stored in the wine); renaming a producer does not re-key
 *    existing wines until they are next written.
 *
 * Create and PATCH share one path, as partners do: overlay the request on
 * the current values, check every rule collecting every error, then write
 * the canonical document with its event in one transaction.
 */
#include "engine/catalogue/producer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/edge/fields.h"
#include "engine/base/iso.h"
#include "engine/edge/key.h"
#include "engine/base/log.h"
#include "engine/catalogue/partner.h"
#include "engine/storage/resources.h"
#include "engine/catalogue/wine_ident.h"

#define PRODUCER_Q_MAX 100 /* bytes of the list's name search */

static const char *const producer_fields[] = {"name",	   "slug",    "country",     "region",
					      "partner_id", "website", "description", NULL};
static const char *const inline_fields[] = {"name", "country", "region", "website", NULL};
static const char *const readonly_fields[] = {"id", "created_by", "created_at", "updated_at", NULL};

/* Everything a producer document holds; text members point into the
 * request or the stored document (both outlive the handler's use). */
struct producer_vals {
	struct producer p;
	const char *region, *website, *description;
	char region_buf[PRODUCER_MAX_REGION + 1];
	char created_at[32], updated_at[32];
	char id[ID_MAX_LEN];
};

/* ---- table ------------------------------------------------------------- */

struct producer_ext {
	struct hidx by_slug;
};

static struct producer_ext *ext(const struct table *t) { return t->ext; }

static int producer_init(struct table *t)
{
	struct producer_ext *e = calloc(1, sizeof(*e));
	if (!e)
		return -1;
	hidx_init(&e->by_slug);
	t->ext = e;
	return 0;
}

static void producer_fini(struct table *t)
{
	hidx_free(&ext(t)->by_slug);
	free(t->ext);
	t->ext = NULL;
}

static int producer_index_add(struct table *t, struct row *r)
{
	struct producer *p = (struct producer *)r;
	return hidx_set(&ext(t)->by_slug, p->slug, (uint32_t)strlen(p->slug), p);
}

static void producer_index_del(struct table *t, struct row *r)
{
	struct producer *p = (struct producer *)r;
	if (hidx_get(&ext(t)->by_slug, p->slug, (uint32_t)strlen(p->slug)) == p)
		hidx_del(&ext(t)->by_slug, p->slug, (uint32_t)strlen(p->slug));
}

static int producer_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct producer *p = (struct producer *)r;
	if (fld_doc_str(doc, "name", p->name, sizeof(p->name)) || fld_doc_str(doc, "slug", p->slug, sizeof(p->slug)) ||
	    fld_doc_str(doc, "country", p->country, sizeof(p->country)) ||
	    fld_doc_str(doc, "partner_id", p->partner_id, sizeof(p->partner_id)) ||
	    fld_doc_str(doc, "created_by", p->created_by, sizeof(p->created_by)))
		return -1;
	return p->name[0] && p->slug[0] ? 0 : -1;
}

const struct table_ops producer_table_ops = {
	.rec_table = REC_T_PRODUCER,
	.name = "producer",
	.row_size = sizeof(struct producer),
	.decode = producer_decode,
	.decode_pure = 1, /* recovery may build its rows off the loop (table.h) */
	.index_add = producer_index_add,
	.index_del = producer_index_del,
	.init = producer_init,
	.fini = producer_fini,
};

const struct producer *producer_get(struct shard *sh, const char *id, size_t len)
{
	return (const struct producer *)table_get(&sh->tables[REC_T_PRODUCER], id, len);
}

void producer_prefetch(struct shard *sh, const char *id, size_t len, int stage)
{
	table_prefetch(&sh->tables[REC_T_PRODUCER], id, len, stage);
}

const struct producer *producer_by_slug(struct shard *sh, const char *slug, size_t len)
{
	if (len > IDX_MAX_KEY)
		return NULL;
	return hidx_get(&ext(&sh->tables[REC_T_PRODUCER])->by_slug, slug, (uint32_t)len);
}

int producer_writable(const struct api_ctx *c, const struct producer *p)
{
	if (c->who.is_platform)
		return 1;
	const char *me = c->who.entity_id;
	return (p->created_by[0] && !strcmp(p->created_by, me)) || (p->partner_id[0] && !strcmp(p->partner_id, me));
}

/* ---- reading ----------------------------------------------------------- */

/* The slug of the name into out, or "" (error recorded at path) when the
 * name has no letters this catalogue can fold. */
static void derive_slug(struct api_ctx *c, const char *name, const char *path, char *out)
{
	char buf[PRODUCER_MAX_NAME + 1];
	size_t n = 0;
	enum wid_err e = wid_slug(name, strlen(name), buf, sizeof(buf), &n);
	out[0] = 0;
	if (e == WID_OK && n > PRODUCER_MAX_SLUG) { /* a long name: cut, no dangling '-' */
		n = PRODUCER_MAX_SLUG;
		while (n && buf[n - 1] == '-')
			n--;
		buf[n] = 0;
	}
	if (e != WID_OK || n == 0) {
		if (c)
			api_field_error(c, path, "sluggable",
					"must contain Latin letters or digits to derive a slug (%s); give `slug`",
					e == WID_OK ? "nothing left" : wid_strerror(e));
		return;
	}
	memcpy(out, buf, n + 1);
}

/* A given slug must already be a slug: slugging it changes nothing. */
static void check_slug(struct api_ctx *c, const char *s)
{
	char buf[PRODUCER_MAX_SLUG + 1];
	size_t n = 0;
	if (wid_slug(s, strlen(s), buf, sizeof(buf), &n) != WID_OK || strcmp(buf, s))
		api_field_error(c, "slug", "slug", "must be lower-case a-z, 0-9 and single '-' between them");
}

/* The partner link: an originator estate, and the caller's own unless the
 * caller is the platform. */
static void check_partner_link(struct api_ctx *c, const char *pid)
{
	const struct partner *pt = partner_get(c->sh, pid, strlen(pid));
	if (!c->who.is_platform && strcmp(pid, c->who.entity_id)) {
		api_field_error(c, "partner_id", "own_partner", "a partner may link a producer to itself only");
		return;
	}
	if (!pt)
		api_field_error(c, "partner_id", "exists", "no partner with this id");
	else if (!(pt->v.roles & ROLE_ORIGINATOR) || pt->v.originator_type != 0)
		api_field_error(c, "partner_id", "originator_estate",
				"must be a partner with the originator role and originator_type estate");
}

/* Overlay the members of `o` onto v (merge-patch semantics). */
static void producer_read(struct api_ctx *c, const struct json_value *o, struct producer_vals *v)
{
	struct producer *p = &v->p;
	if (fld_str(c, o, "name", NULL, p->name, PRODUCER_MAX_NAME) == FLD_NULL)
		p->name[0] = 0;
	int r = fld_str(c, o, "slug", NULL, p->slug, PRODUCER_MAX_SLUG);
	if (r == FLD_NULL)
		p->slug[0] = 0;
	else if (r == FLD_SET && c)
		check_slug(c, p->slug);
	if (fld_country(c, o, "country", NULL, p->country) == FLD_NULL)
		p->country[0] = 0;
	r = fld_str(c, o, "region", NULL, v->region_buf, PRODUCER_MAX_REGION);
	if (r == FLD_SET)
		v->region = v->region_buf;
	else if (r == FLD_NULL)
		v->region = NULL;
	r = fld_str(c, o, "partner_id", NULL, p->partner_id, ID_MAX_LEN - 1);
	if (r == FLD_NULL)
		p->partner_id[0] = 0;
	else if (r == FLD_SET && c)
		check_partner_link(c, p->partner_id);
	const char *s = NULL;
	r = fld_url(c, o, "website", NULL, PRODUCER_MAX_URL, 0, &s);
	if (r == FLD_SET || r == FLD_NULL)
		v->website = r == FLD_SET ? s : NULL;
	r = fld_text(c, o, "description", NULL, &s, PRODUCER_MAX_DESCRIPTION);
	if (r == FLD_SET || r == FLD_NULL)
		v->description = r == FLD_SET ? s : NULL;
}

/* ---- the stored document ------------------------------------------------ */

static void kstr_or_null(struct jw *w, const char *k, const char *s)
{
	if (s && s[0])
		jw_var_str(w, k, s);
	else
		jw_var_null(w, k);
}

static void producer_write(struct jw *w, const struct producer_vals *v)
{
	jw_obj_begin(w);
	jw_kstr(w, "id", v->id);
	jw_kstr(w, "name", v->p.name);
	jw_kstr(w, "slug", v->p.slug);
	kstr_or_null(w, "country", v->p.country);
	kstr_or_null(w, "region", v->region);
	kstr_or_null(w, "partner_id", v->p.partner_id);
	kstr_or_null(w, "website", v->website);
	kstr_or_null(w, "description", v->description);
	jw_kstr(w, "created_by", v->p.created_by);
	jw_kstr(w, "created_at", v->created_at);
	jw_kstr(w, "updated_at", v->updated_at);
	jw_obj_end(w);
}

/* Add the producer's row and event to the open transaction. 0 or -1. */
static int producer_put(struct api_ctx *c, const struct producer_vals *v, const char *event, struct buf *doc)
{
	struct jw w;
	jw_init(&w, doc);
	producer_write(&w, v);
	const char *scope = c->who.is_platform ? NULL : c->who.entity_id;
	if (w.err || txn_put(c->sh, REC_T_PRODUCER, v->id, strlen(v->id), doc->data, doc->len) ||
	    txn_event(c->sh, event, scope, doc->data, doc->len))
		return -1;
	return 0;
}

static void producer_commit(struct api_ctx *c, struct producer_vals *v, const char *event, int status)
{
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	txn_begin(c->sh);
	if (producer_put(c, v, event, &doc) || !txn_commit(c->sh)) {
		txn_abort(c->sh);
		buf_free(&doc);
		api_error(c, 413, "record_too_large", "the producer record is too large to store");
		return;
	}
	api_send_doc(c, status, doc.data, doc.len);
	buf_free(&doc);
}

static void creator_of(const struct api_ctx *c, char out[ID_MAX_LEN])
{
	snprintf(out, ID_MAX_LEN, "%s", c->who.is_platform ? KEY_PLATFORM_ENTITY : c->who.entity_id);
}

/* A taken slug: 409 naming the producer that holds it. */
static int slug_taken(struct api_ctx *c, const char *slug, const char *self_id)
{
	const struct producer *o = producer_by_slug(c->sh, slug, strlen(slug));
	if (!o || (self_id && !strcmp(o->row.id, self_id)))
		return 0;
	char d[200];
	snprintf(d, sizeof(d), "producer %.*s already has the slug \"%s\"", (int)o->row.id_len, o->row.id, slug);
	api_error(c, 409, "producer_exists", d);
	return 1;
}

/* ---- handlers ---------------------------------------------------------- */

static void producers_create(struct api_ctx *c)
{
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	fld_reject_unknown(c, body, producer_fields, NULL);
	for (int i = 0; readonly_fields[i]; i++)
		if (json_get(body, readonly_fields[i]))
			api_field_error(c, readonly_fields[i], "read_only", "is assigned by the service");
	struct producer_vals v;
	memset(&v, 0, sizeof(v));
	producer_read(c, body, &v);
	if (!v.p.name[0] && !json_get(body, "name"))
		api_field_error(c, "name", "required", "is required");
	if (v.p.name[0] && !v.p.slug[0] && !json_get(body, "slug"))
		derive_slug(c, v.p.name, "name", v.p.slug);
	if (c->n_errs) {
		api_validation_failed(c);
		return;
	}
	if (slug_taken(c, v.p.slug, NULL))
		return;
	id_new(&c->sh->ids, "prd", v.id);
	creator_of(c, v.p.created_by);
	fmt_rfc3339_ms(v.created_at, wall_ms());
	memcpy(v.updated_at, v.created_at, sizeof(v.created_at));
	producer_commit(c, &v, "producer.created", 201);
}

/* The producer of the path (visible to every reader), or a 404. */
static const struct producer *producer_from_path(struct api_ctx *c)
{
	const struct producer *p = c->n_params ? producer_get(c->sh, c->params[0].p, c->params[0].len) : NULL;
	if (!p)
		api_error(c, 404, "not_found", "no producer with this id");
	return p;
}

static void producers_get(struct api_ctx *c)
{
	const struct producer *p = producer_from_path(c);
	if (p)
		api_send_doc(c, 200, p->row.doc, p->row.doc_len);
}

/* The current values of a stored producer (text members point into `doc`,
 * which must outlive v). */
static void producer_load(const struct producer *p, const struct json_value *doc, struct producer_vals *v)
{
	memset(v, 0, sizeof(*v));
	v->p = *p;
	producer_read(NULL, doc, v);
	memcpy(v->id, p->row.id, p->row.id_len);
	v->id[p->row.id_len] = 0;
	fld_doc_str(doc, "created_at", v->created_at, sizeof(v->created_at));
}

static void producers_patch(struct api_ctx *c)
{
	const struct producer *cur = producer_from_path(c);
	if (!cur)
		return;
	if (!producer_writable(c, cur)) {
		api_error(c, 404, "not_found", "no producer with this id");
		return;
	}
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	fld_reject_unknown(c, body, producer_fields, NULL);
	for (int i = 0; readonly_fields[i]; i++)
		if (json_get(body, readonly_fields[i]))
			api_field_error(c, readonly_fields[i], "read_only", "cannot be changed");
	struct json_doc *stored = json_parse(cur->row.doc, cur->row.doc_len, NULL, NULL);
	if (!stored) {
		api_error(c, 500, "corrupt_record", "the stored producer does not parse");
		return;
	}
	struct producer_vals v;
	producer_load(cur, json_root(stored), &v);
	producer_read(c, body, &v);
	if (!v.p.name[0])
		api_field_error(c, "name", "required", "cannot be removed");
	if (!v.p.slug[0] && v.p.name[0])
		derive_slug(c, v.p.name, "name", v.p.slug);
	if (c->n_errs)
		api_validation_failed(c);
	else if (!slug_taken(c, v.p.slug, v.id)) {
		fmt_rfc3339_ms(v.updated_at, wall_ms());
		producer_commit(c, &v, "producer.updated", 200);
	}
	json_doc_free(stored);
}

struct producer_filter {
	char country[3];
	char partner_id[ID_MAX_LEN];
	char q[PRODUCER_Q_MAX + 1];
};

static int producer_match(struct api_ctx *c, const struct row *r, void *arg)
{
	(void)c;
	const struct producer_filter *f = arg;
	const struct producer *p = (const struct producer *)r;
	if (f->country[0] && strcmp(f->country, p->country))
		return 0;
	if (f->partner_id[0] && strcmp(f->partner_id, p->partner_id))
		return 0;
	return !f->q[0] || strstr(p->slug, f->q) != NULL;
}

static void producers_list(struct api_ctx *c)
{
	struct api_page pg;
	if (api_page_parse(c, &pg))
		return;
	struct producer_filter f;
	memset(&f, 0, sizeof(f));
	char v[PRODUCER_Q_MAX + 2];
	int n = api_query(c, "country", v, sizeof(v));
	if (n >= 0) {
		if (!iso_country_valid(v, (size_t)n)) {
			api_error(c, 400, "invalid_filter", "country must be an ISO 3166-1 alpha-2 code");
			return;
		}
		memcpy(f.country, v, 3);
	}
	n = api_query(c, "partner_id", f.partner_id, sizeof(f.partner_id));
	if (n == 0 || n == -2) {
		api_error(c, 400, "invalid_filter", "partner_id must be a partner id");
		return;
	}
	n = api_query(c, "q", v, sizeof(v));
	if (n == -2 || n == 0 || n > PRODUCER_Q_MAX) {
		api_error(c, 400, "invalid_filter", "q must be 1 to 100 bytes");
		return;
	}
	size_t ql = 0;
	if (n > 0 && (wid_slug(v, (size_t)n, f.q, sizeof(f.q), &ql) != WID_OK || ql == 0)) {
		api_error(c, 400, "invalid_filter", "q must contain Latin letters or digits");
		return;
	}
	api_list(c, &c->sh->tables[REC_T_PRODUCER].by_order, NULL, 0, &pg, producer_match, &f, NULL);
}

const struct route producer_routes[] = {
	{HTTP_M_GET, "/v1/producers", producers_list, SC_READ_WINES, ACT_READ_WINES, "List producers", 0},
	{HTTP_M_POST, "/v1/producers", producers_create, SC_WRITE_WINES, ACT_WRITE_WINES, "Create a producer (estate)", 0},
	{HTTP_M_GET, "/v1/producers/{id}", producers_get, SC_READ_WINES, ACT_READ_WINES, "Retrieve a producer", 0},
	{HTTP_M_PATCH, "/v1/producers/{id}", producers_patch, SC_WRITE_WINES, ACT_WRITE_WINES,
	 "Update a producer (merge patch)", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};

/* ---- inline resolution (wine ingest) ------------------------------------ */

int producer_resolve_inline(struct api_ctx *c, const struct json_value *obj, int create,
			    const struct producer **found, char id_out[ID_MAX_LEN],
			    char name_out[PRODUCER_MAX_NAME + 1], char country_out[3])
{
	*found = NULL;
	id_out[0] = 0;
	unsigned errs = c->n_errs;
	fld_reject_unknown(c, obj, inline_fields, "producer.");
	struct producer_vals v;
	memset(&v, 0, sizeof(v));
	int r = fld_str(c, obj, "name", "producer.name", v.p.name, PRODUCER_MAX_NAME);
	if (r == FLD_ABSENT || r == FLD_NULL)
		api_field_error(c, "producer.name", "required", "is required");
	fld_country(c, obj, "country", "producer.country", v.p.country);
	const char *s;
	if (fld_str(c, obj, "region", "producer.region", v.region_buf, PRODUCER_MAX_REGION) == FLD_SET)
		v.region = v.region_buf;
	if (fld_url(c, obj, "website", "producer.website", PRODUCER_MAX_URL, 0, &s) == FLD_SET)
		v.website = s;
	if (v.p.name[0])
		derive_slug(c, v.p.name, "producer.name", v.p.slug);
	if (c->n_errs != errs)
		return -1;
	snprintf(name_out, PRODUCER_MAX_NAME + 1, "%s", v.p.name);
	const struct producer *p = c->sh ? producer_by_slug(c->sh, v.p.slug, strlen(v.p.slug)) : NULL;
	if (p) {
		*found = p;
		memcpy(id_out, p->row.id, p->row.id_len);
		id_out[p->row.id_len] = 0;
		snprintf(name_out, PRODUCER_MAX_NAME + 1, "%s", p->name);
		memcpy(country_out, p->country[0] ? p->country : v.p.country, 3);
		return 0;
	}
	memcpy(country_out, v.p.country, 3);
	if (!create)
		return 0;
	id_new(&c->sh->ids, "prd", v.id);
	creator_of(c, v.p.created_by);
	fmt_rfc3339_ms(v.created_at, wall_ms());
	memcpy(v.updated_at, v.created_at, sizeof(v.created_at));
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	int rc = producer_put(c, &v, "producer.created", &doc);
	buf_free(&doc);
	if (rc)
		return -1;
	memcpy(id_out, v.id, ID_MAX_LEN);
	return 0;
}
