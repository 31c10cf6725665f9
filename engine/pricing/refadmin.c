/*
 * refadmin.c -- POST/GET /v1/admin/reference-data and the reference_data
 * table (see refadmin.h).  Decisions:
 *   - the body is {version, effective_date, files: {vat.tsv, excise.tsv,
 *     freight.tsv, fx.tsv, levies.tsv?}}: all four tables (levies.tsv is
 *     optional: no levies without it), each parsed by the loader
 *     with the loader's bounds; the request is bounded by --max-body-kb and
 *     each file's text by the JSON string bound (64 KiB);
 *   - the whole version is validated BEFORE anything changes: 422
 *     reference_data_invalid naming the first error as file:line (the
 *     loader stops at the first error);
 *   - a version whose name equals the active one is 409 version_unchanged
 *     (names are free-form, so no ordering is imposed: going back to older
 *     figures is a new upload under a new name);
 *   - one transaction: the row "current" and the event reference_data.loaded
 *     (platform-wide; payload: version, effective_date, previous_version,
 *     rows per file).
 */
#include "engine/pricing/refadmin.h"

#include <stdio.h>
#include <string.h>

#include "engine/edge/api.h"
#include "engine/base/log.h"
#include "engine/pricing/refdata.h"

/* ---- table --------------------------------------------------------------- */

/* Parse the stored upload and make it current.  Runs for the live commit,
 * WAL replay and snapshot load; a row the loader refuses is a bad document
 * (nothing switches). */
static int refrow_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	if (r->id_len != strlen(REFDATA_ROW_KEY) || memcmp(r->id, REFDATA_ROW_KEY, r->id_len))
		return -1;
	struct refdata *rd = NULL;
	char err[256];
	if (refdata_from_json(doc, &rd, err, sizeof(err))) {
		log_error("msg=\"stored reference data refused\" error=\"%s\"", err);
		return -1;
	}
	refdata_set_current(rd);
	return 0;
}

const struct table_ops refdata_table_ops = {
	.rec_table = REC_T_REFDATA,
	.name = "reference_data",
	.row_size = sizeof(struct row),
	.decode = refrow_decode,
};

/* ---- routes -------------------------------------------------------------- */

static const enum rd_file upload_files[] = {RD_F_VAT, RD_F_EXCISE, RD_F_FREIGHT, RD_F_FX, RD_F_LEVIES, RD_F_CAPS};
#define N_UPLOAD_FILES (sizeof(upload_files) / sizeof(upload_files[0]))

static uint32_t rows_of(const struct refdata *rd, enum rd_file f)
{
	switch (f) {
	case RD_F_VAT: return rd->n_vat;
	case RD_F_EXCISE: return rd->n_excise;
	case RD_F_FREIGHT: return rd->n_freight;
	case RD_F_FX: return rd->n_fx;
	case RD_F_LEVIES: return rd->n_levies;
	case RD_F_CAPS: return rd->n_caps;
	default: return 0;
	}
}

/* {"vat.tsv": n, ...} */
static void write_rows(struct jw *w, const struct refdata *rd)
{
	jw_obj_begin(w);
	for (size_t i = 0; i < N_UPLOAD_FILES; i++)
		jw_var_int(w, rd_file_names[upload_files[i]], rows_of(rd, upload_files[i]));
	jw_obj_end(w);
}

static void write_summary(struct jw *w, const struct refdata *rd)
{
	jw_obj_begin(w);
	jw_kstr(w, "version", rd->version);
	jw_kstr(w, "effective_date", rd->effective_date);
	jw_kstr(w, "source", rd_source_names[rd->source ? 1 : 0]);
	if (rd->loaded_at[0])
		jw_kstr(w, "loaded_at", rd->loaded_at);
	else
		jw_knull(w, "loaded_at");
	jw_key(w, "rows");
	write_rows(w, rd);
	jw_obj_end(w);
}

static void refdata_get(struct api_ctx *c)
{
	const struct refdata *rd = refdata_current();
	if (!rd) {
		api_error(c, 503, "reference_data_unavailable", "no reference-data version is loaded");
		return;
	}
	write_summary(&c->w, rd);
}

/* 422 reference_data_invalid: detail and errors[0] carry the loader's message. */
static void refused(struct api_ctx *c, const char *err)
{
	const char *colon = strchr(err, ':');
	char field[64];
	snprintf(field, sizeof(field), "%.*s", colon ? (int)(colon - err) : (int)strlen(err), err);
	if (strstr(field, ".tsv")) {
		char f2[64];
		snprintf(f2, sizeof(f2), "files.%.50s", field);
		memcpy(field, f2, sizeof(field));
	}
	api_field_error(c, field, "reference_data", "%s", err);
	buf_reset(&c->rs->body);
	jw_init(&c->w, &c->rs->body);
	c->rs->status = 422;
	c->rs->content_type = PROBLEM_CONTENT_TYPE;
	problem_begin(&c->w, 422, "reference_data_invalid", "Unprocessable Content", err);
	problem_fields(&c->w, c->errs, c->n_errs);
	problem_end(&c->w);
}

static void refdata_post(struct api_ctx *c)
{
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	struct refdata *rd = NULL;
	char err[512];
	if (refdata_from_json(body, &rd, err, sizeof(err))) {
		refused(c, err);
		return;
	}
	const struct refdata *cur = refdata_current();
	if (cur && !strcmp(cur->version, rd->version)) {
		refdata_free(rd);
		api_error(c, 409, "version_unchanged",
			  "this version is already active; upload the new figures under a new version name");
		return;
	}
	char prev[RD_MAX_VERSION + 1] = "";
	if (cur)
		memcpy(prev, cur->version, sizeof(prev));
	char at[32];
	fmt_rfc3339_ms(at, wall_ms());

	/* the row: version, date, upload time and caller, the texts (four, or five with levies.tsv) */
	struct buf doc, ev;
	buf_init(&doc, REC_MAX_VAL);
	buf_init(&ev, 4096);
	struct jw w, we;
	jw_init(&w, &doc);
	jw_obj_begin(&w);
	jw_kstr(&w, "version", rd->version);
	jw_kstr(&w, "effective_date", rd->effective_date);
	jw_kstr(&w, "loaded_at", at);
	jw_kstr(&w, "loaded_by", c->who.key_id);
	jw_key(&w, "files");
	jw_obj_begin(&w);
	const struct json_value *files = json_get(body, "files");
	for (size_t i = 0; i < N_UPLOAD_FILES; i++) {
		const struct json_value *v = json_get(files, rd_file_names[upload_files[i]]);
		if (!v) /* levies.tsv and caps.tsv are optional (refdata_from_json checked the rest) */
			continue;
		jw_key(&w, rd_file_names[upload_files[i]]);
		jw_strn(&w, v->u.str, v->len);
	}
	jw_obj_end(&w);
	jw_obj_end(&w);

	jw_init(&we, &ev);
	jw_obj_begin(&we);
	jw_kstr(&we, "version", rd->version);
	jw_kstr(&we, "effective_date", rd->effective_date);
	if (prev[0])
		jw_kstr(&we, "previous_version", prev);
	else
		jw_knull(&we, "previous_version");
	jw_key(&we, "rows");
	write_rows(&we, rd);
	jw_obj_end(&we);
	refdata_free(rd);
	rd = NULL;

	int too_big = w.err || doc.len > TXN_MAX_BYTES;
	txn_begin(c->sh);
	if (too_big || we.err ||
	    txn_put(c->sh, REC_T_REFDATA, REFDATA_ROW_KEY, strlen(REFDATA_ROW_KEY), doc.data, doc.len) ||
	    txn_event(c->sh, "reference_data.loaded", NULL, ev.data, ev.len) || !txn_commit(c->sh)) {
		txn_abort(c->sh);
		buf_free(&doc);
		buf_free(&ev);
		if (too_big)
			api_error(c, 413, "record_too_large", "the version is too large to store in one transaction");
		else
			api_error(c, 500, "commit_failed", "the reference data could not be stored");
		return;
	}
	buf_free(&doc);
	buf_free(&ev);
	/* the commit's decode() made the upload current */
	cur = refdata_current();
	log_info("msg=\"reference data loaded\" version=%s effective_date=%s previous=%s source=api", cur->version,
		 cur->effective_date, prev[0] ? prev : "-");
	write_summary(&c->w, cur);
}

const struct route refadmin_routes[] = {
	{HTTP_M_GET, "/v1/admin/reference-data", refdata_get, SC_OPERATOR, ACT_OPERATE,
	 "Active reference-data version, source and row counts", 0},
	{HTTP_M_POST, "/v1/admin/reference-data", refdata_post, SC_OPERATOR, ACT_OPERATE,
	 "Load a new reference-data version at run time (durable via the WAL)", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
