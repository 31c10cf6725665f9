/*
 * partner_routes.c -- the partner routes (spec 1 and 2.1): create, read,
 * merge-patch (status moves one onboarding step at a time), list.  The
 * partner itself (fields, rules, the stored document, the table) is
 * partner.c, below this file: what the router and identity need of a
 * partner links without these handlers.
 */
#include <stdio.h>
#include <string.h>

#include "engine/base/iso.h"
#include "engine/base/log.h"
#include "engine/catalogue/partner.h"
#include "engine/edge/api.h"
#include "engine/edge/fields.h"
#include "engine/storage/resources.h"

/* Allowed status moves: [from] = bitmask of `to`. */
static const uint8_t status_moves[PARTNER_N_STATUS] = {
	[PS_APPLIED] = 1u << PS_VERIFIED | 1u << PS_SUSPENDED,
	[PS_VERIFIED] = 1u << PS_ROLES_ENABLED | 1u << PS_SUSPENDED,
	[PS_ROLES_ENABLED] = 1u << PS_CONFIGURED | 1u << PS_SUSPENDED,
	[PS_CONFIGURED] = 1u << PS_INTEGRATED | 1u << PS_SUSPENDED,
	[PS_INTEGRATED] = 1u << PS_LIVE | 1u << PS_SUSPENDED,
	[PS_LIVE] = 1u << PS_SUSPENDED,
	[PS_SUSPENDED] = 1u << PS_VERIFIED,
};
static const char *const partner_fields[] = {
	"legal_name", "country", "contact", "roles", "originator_type", "capabilities",
	"payout_provider", "payout_account_id", "payout_currency", "recruiter_id", "recruiter_rate_percent",
	"fiscal_representative_for", "vat_id", "excise_number", "status", NULL};
static const char *const readonly_fields[] = {"id", "created_at", "updated_at", NULL};
/* Onboarding decisions that belong to the platform (steps 2, 3, 6): a
 * partner's own key cannot grant itself roles or move its status. */
static const char *const operator_fields[] = {"roles", "status", "recruiter_id", "recruiter_rate_percent",
					      "fiscal_representative_for", NULL};

/* ---- handlers ---------------------------------------------------------- */

/* Validate the merged values, write the document, commit with an event. */
static void partner_commit(struct api_ctx *c, struct partner_vals *p, const char *event, int status)
{
	partner_check(c, p);
	if (p->recruiter_id[0] && strcmp(p->recruiter_id, p->id) &&
	    !partner_get(c->sh, p->recruiter_id, strlen(p->recruiter_id)))
		api_field_error(c, "recruiter_id", "unknown", "no partner with this id");
	if (c->n_errs) {
		api_validation_failed(c);
		return;
	}
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	struct jw w;
	jw_init(&w, &doc);
	partner_write(&w, p);
	struct shard *sh = c->sh;
	txn_begin(sh);
	if (w.err || txn_put(sh, REC_T_PARTNER, p->id, strlen(p->id), doc.data, doc.len) ||
	    txn_event(sh, event, p->id, doc.data, doc.len) || !txn_commit(sh)) {
		txn_abort(sh);
		buf_free(&doc);
		api_error(c, 413, "record_too_large", "the partner record is too large to store");
		return;
	}
	api_send_doc(c, status, doc.data, doc.len);
	buf_free(&doc);
}

static void partners_create(struct api_ctx *c)
{
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	fld_reject_unknown(c, body, partner_fields, NULL);
	if (json_get(body, "status"))
		api_field_error(c, "status", "read_only_on_create",
				"a new partner always starts as \"applied\"; move it on with PATCH");
	for (int i = 0; readonly_fields[i]; i++)
		if (json_get(body, readonly_fields[i]))
			api_field_error(c, readonly_fields[i], "read_only", "is assigned by the service");
	static const char *const operator_set[] = {"recruiter_id", "recruiter_rate_percent", "fiscal_representative_for",
						   NULL};
	for (int i = 0; !c->who.is_platform && operator_set[i]; i++)
		if (json_get(body, operator_set[i])) {
			api_error(c, 403, "operator_only_field",
				  "a recruiter, its royalty and a fiscal representation are set by platform operators");
			return;
		}
	struct partner_vals p;
	memset(&p, 0, sizeof(p));
	p.originator_type = -1;
	p.status = PS_APPLIED;
	partner_read(c, body, &p);
	id_new(&c->sh->ids, "ptn", p.id);
	fmt_rfc3339_ms(p.created_at, wall_ms());
	memcpy(p.updated_at, p.created_at, sizeof(p.created_at));
	partner_commit(c, &p, "partner.created", 201);
}

/* The partner named by the path, if the caller may see it (its own, or any
 * for operators); otherwise 404, the same as for an unknown id. */
static const struct partner *partner_from_path(struct api_ctx *c)
{
	const struct partner *pt = NULL;
	if (c->n_params && api_owns(c, c->params[0].p, c->params[0].len))
		pt = partner_get(c->sh, c->params[0].p, c->params[0].len);
	if (!pt)
		api_error(c, 404, "not_found", "no partner with this id");
	return pt;
}

static void partners_get(struct api_ctx *c)
{
	const struct partner *pt = partner_from_path(c);
	if (pt)
		api_send_doc(c, 200, pt->row.doc, pt->row.doc_len);
}

static void partners_patch(struct api_ctx *c)
{
	const struct partner *pt = partner_from_path(c);
	if (!pt)
		return;
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	if (!c->who.is_platform)
		for (int i = 0; operator_fields[i]; i++)
			if (json_get(body, operator_fields[i])) {
				char d[160];
				snprintf(d, sizeof(d), "\"%s\" is changed by platform operators only (onboarding)",
					 operator_fields[i]);
				api_error(c, 403, "operator_only_field", d);
				return;
			}
	fld_reject_unknown(c, body, partner_fields, NULL);
	for (int i = 0; readonly_fields[i]; i++)
		if (json_get(body, readonly_fields[i]))
			api_field_error(c, readonly_fields[i], "read_only", "cannot be changed");
	struct partner_vals p = pt->v;
	partner_read(c, body, &p);
	int st;
	int r = fld_enum(c, body, "status", NULL, partner_status_names, &st);
	if (r == FLD_NULL)
		api_field_error(c, "status", "required", "cannot be removed");
	if (c->n_errs) {
		api_validation_failed(c);
		return;
	}
	if (r == FLD_SET && st != pt->v.status) {
		if (!(status_moves[pt->v.status] & (1u << st))) {
			char d[160];
			snprintf(d, sizeof(d), "a partner cannot move from \"%s\" to \"%s\"",
				 partner_status_names[pt->v.status], partner_status_names[st]);
			api_error(c, 409, "invalid_status_transition", d);
			return;
		}
		if (st >= PS_ROLES_ENABLED && st != PS_SUSPENDED && p.roles == 0) {
			api_error(c, 409, "roles_required", "enable at least one role before this step");
			return;
		}
		p.status = (uint8_t)st;
	}
	fmt_rfc3339_ms(p.updated_at, wall_ms());
	partner_commit(c, &p, "partner.updated", 200);
}

/* Filters on the list: country, role, status. */
struct partner_filter {
	char country[3];
	int role;   /* -1 any */
	int status; /* -1 any */
};

static int partner_match(struct api_ctx *c, const struct row *r, void *arg)
{
	(void)c;
	const struct partner_filter *f = arg;
	const struct partner_vals *p = &((const struct partner *)r)->v;
	if (f->country[0] && strcmp(f->country, p->country))
		return 0;
	if (f->role >= 0 && !(p->roles & (1u << f->role)))
		return 0;
	if (f->status >= 0 && p->status != f->status)
		return 0;
	return 1;
}

static void partners_list(struct api_ctx *c)
{
	struct api_page pg;
	if (api_page_parse(c, &pg))
		return;
	struct partner_filter f = {.role = -1, .status = -1};
	char v[8];
	int n = api_query(c, "country", v, sizeof(v));
	if (n >= 0) {
		if (!iso_country_valid(v, (size_t)n)) {
			api_error(c, 400, "invalid_filter", "country must be an ISO 3166-1 alpha-2 code");
			return;
		}
		memcpy(f.country, v, 3);
	}
	if (api_query_enum(c, "role", partner_role_names, &f.role) ||
	    api_query_enum(c, "status", partner_status_names, &f.status))
		return;
	/* Read-path filter: a partner sees its own record only (ids have a
	 * fixed length, so the id as a prefix matches exactly one row). */
	const char *own = c->who.is_platform ? NULL : c->who.entity_id;
	api_list(c, &c->sh->tables[REC_T_PARTNER].by_order, own, own ? (uint32_t)strlen(own) : 0, &pg,
		 partner_match, &f, NULL);
}

const struct route partner_routes[] = {
	{HTTP_M_GET, "/v1/partners", partners_list, SC_READ_PARTNERS, ACT_READ_PARTNERS, "List partners", 0},
	{HTTP_M_POST, "/v1/partners", partners_create, SC_WRITE_PARTNERS, ACT_CREATE_PARTNER, "Create a partner (onboarding step 1)", 0},
	{HTTP_M_GET, "/v1/partners/{id}", partners_get, SC_READ_PARTNERS, ACT_READ_PARTNERS, "Retrieve a partner", 0},
	{HTTP_M_PATCH, "/v1/partners/{id}", partners_patch, SC_WRITE_PARTNERS, ACT_UPDATE_PARTNER,
	 "Update a partner (merge patch; status moves one onboarding step)", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
