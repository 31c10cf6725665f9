/*
 * partner.c -- partners (spec sections 1 and 2.1): one record per legal
 * entity, with roles as enabled capabilities, not separate programs.
 *
 * Representation (the stored document is exactly what GET returns):
 *   id, legal_name, country, contact {name, email, phone},
 *   roles[] (originator | fulfiller | seller, any combination),
 *   originator_type (estate | collector | stock; required with originator),
 *   capabilities {provides_wine_data, provides_inventory, permissions,
 *                 fulfills_orders, feeds_unoffered_wines, creates_orders,
 *                 curates_offers, sets_shelf_price},
 *   payout_provider, payout_account_id, payout_currency,
 *   status (applied -> verified -> roles_enabled -> configured ->
 *           integrated -> live; suspended from any, back to verified),
 *   created_at, updated_at.
 *
 * Payout identity is verified by the payment provider (spec onboarding step
 * 2) and not stored here: only the provider's account reference is.
 *
 * The routes are partner_routes.c.  Create and PATCH share one path: read the current values (nothing, or the
 * stored document), overlay the request (JSON merge-patch: null removes an
 * optional field), check every rule, collect every failing field, and only
 * then write the canonical document.  Capability flags a role does not
 * allow are refused; unspecified flags default from the roles (all of a
 * role's flags on, except feeds_unoffered_wines; fulfills_orders on for
 * originators, as the spec says).
 */
#include <stdio.h>
#include <string.h>

#include "engine/edge/api.h"
#include "engine/edge/fields.h"
#include "engine/base/iso.h"
#include "engine/base/log.h"
#include "engine/catalogue/partner.h"
#include "engine/storage/resources.h"

static const char *const originator_type_names[] = {"estate", "collector", "stock", NULL};

struct cap_def {
	const char *name;
	uint8_t roles;       /* roles that allow the flag */
	uint8_t default_on;  /* roles for which it defaults to true */
};

static const struct cap_def cap_defs[PARTNER_N_CAPS] = {
	{"provides_wine_data", ROLE_ORIGINATOR, ROLE_ORIGINATOR},
	{"provides_inventory", ROLE_ORIGINATOR, ROLE_ORIGINATOR},
	{"permissions", ROLE_ORIGINATOR, ROLE_ORIGINATOR},
	{"fulfills_orders", ROLE_ORIGINATOR | ROLE_FULFILLER, ROLE_ORIGINATOR | ROLE_FULFILLER},
	{"feeds_unoffered_wines", ROLE_FULFILLER, 0},
	{"creates_orders", ROLE_SELLER, ROLE_SELLER},
	{"curates_offers", ROLE_SELLER, ROLE_SELLER},
	{"sets_shelf_price", ROLE_SELLER, ROLE_SELLER},
};


static const char *const contact_fields[] = {"name", "email", "phone", NULL};

/* ---- reading a partner object (request body or stored document) -------- */

static void read_contact(struct api_ctx *c, const struct json_value *o, struct partner_vals *p)
{
	const struct json_value *ct = json_get(o, "contact");
	if (!ct)
		return;
	if (ct->type == JSON_NULL) {
		memset(&p->contact, 0, sizeof(p->contact));
		return;
	}
	if (ct->type != JSON_OBJECT) {
		if (c)
			api_field_error(c, "contact", "type", "must be an object");
		return;
	}
	fld_reject_unknown(c, ct, contact_fields, "contact.");
	if (fld_str(c, ct, "name", "contact.name", p->contact.name, sizeof(p->contact.name) - 1) == FLD_NULL)
		p->contact.name[0] = 0;
	int r = fld_str(c, ct, "email", "contact.email", p->contact.email, sizeof(p->contact.email) - 1);
	if (r == FLD_NULL)
		p->contact.email[0] = 0;
	else if (r == FLD_SET) {
		const char *at = strchr(p->contact.email, '@');
		if (!at || at == p->contact.email || !strchr(at, '.') || strchr(p->contact.email, ' ') ||
		    strchr(at + 1, '@')) {
			if (c)
				api_field_error(c, "contact.email", "email", "must be an e-mail address");
		}
	}
	if (fld_str(c, ct, "phone", "contact.phone", p->contact.phone, sizeof(p->contact.phone) - 1) == FLD_NULL)
		p->contact.phone[0] = 0;
}

static void read_roles(struct api_ctx *c, const struct json_value *o, struct partner_vals *p)
{
	const struct json_value *rv = json_get(o, "roles");
	if (!rv)
		return;
	if (rv->type != JSON_ARRAY) {
		if (c)
			api_field_error(c, "roles", "type", "must be an array of role names");
		return;
	}
	uint8_t roles = 0;
	for (uint32_t i = 0; i < rv->len; i++) {
		const struct json_value *e = &rv->u.items[i];
		int found = -1;
		for (int j = 0; partner_role_names[j] && e->type == JSON_STRING; j++)
			if (strcmp(partner_role_names[j], e->u.str) == 0)
				found = j;
		char path[32];
		snprintf(path, sizeof(path), "roles[%u]", i);
		if (found < 0) {
			if (c)
				api_field_error(c, path, "enum", "must be one of: originator, fulfiller, seller");
		} else if (roles & (1u << found)) {
			if (c)
				api_field_error(c, path, "unique", "role listed twice");
		} else {
			roles |= (uint8_t)(1u << found);
		}
	}
	p->roles = roles;
}

static void read_caps(struct api_ctx *c, const struct json_value *o, struct partner_vals *p)
{
	const struct json_value *cv = json_get(o, "capabilities");
	if (!cv)
		return;
	if (cv->type == JSON_NULL) {
		p->caps_set = 0;
		return;
	}
	if (cv->type != JSON_OBJECT) {
		if (c)
			api_field_error(c, "capabilities", "type", "must be an object of true/false flags");
		return;
	}
	const char *names[PARTNER_N_CAPS + 1];
	for (int i = 0; i < PARTNER_N_CAPS; i++)
		names[i] = cap_defs[i].name;
	names[PARTNER_N_CAPS] = NULL;
	fld_reject_unknown(c, cv, names, "capabilities.");
	for (int i = 0; i < PARTNER_N_CAPS; i++) {
		char path[48];
		snprintf(path, sizeof(path), "capabilities.%s", cap_defs[i].name);
		int b;
		int r = fld_bool(c, cv, cap_defs[i].name, path, &b);
		if (r == FLD_SET) {
			p->caps_set |= (uint8_t)(1u << i);
			p->caps = (uint8_t)((p->caps & ~(1u << i)) | (unsigned)b << i);
		} else if (r == FLD_NULL) {
			p->caps_set &= (uint8_t)~(1u << i);
		}
	}
}

/* Overlay the members of `o` onto p (merge-patch semantics). */
/* An upper-case country code followed by n_min..n_max characters of
 * [0-9A-Z] (and, when plus, '+' '*' as some VAT formats have). */
static int tax_id_ok(const char *s, size_t n_min, size_t n_max, int plus)
{
	size_t n = strlen(s);
	if (n < 2 + n_min || n > 2 + n_max || !iso_country_valid(s, 2))
		return 0;
	for (size_t i = 2; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'A' && s[i] <= 'Z') || (plus && (s[i] == '+' || s[i] == '*'))))
			return 0;
	return 1;
}

/* vat_id (country + 2..12 characters, as VIES writes them) and
 * excise_number (a SEED number: country + 11 characters); null removes. */
static void read_tax_ids(struct api_ctx *c, const struct json_value *o, struct partner_vals *p)
{
	int r = fld_str(c, o, "vat_id", NULL, p->vat_id, sizeof(p->vat_id) - 1);
	if (r == FLD_NULL)
		p->vat_id[0] = 0;
	else if (r == FLD_SET && !tax_id_ok(p->vat_id, 2, PARTNER_MAX_VAT_ID - 2, 1))
		api_field_error(c, "vat_id", "format", "a VAT number: its country code and 2 to 12 characters (DE123456789)");
	r = fld_str(c, o, "excise_number", NULL, p->excise_number, sizeof(p->excise_number) - 1);
	if (r == FLD_NULL)
		p->excise_number[0] = 0;
	else if (r == FLD_SET && !tax_id_ok(p->excise_number, PARTNER_EXCISE_LEN - 2, PARTNER_EXCISE_LEN - 2, 0))
		api_field_error(c, "excise_number", "format", "a SEED excise number: its country code and 11 characters");
}

/* fiscal_representative_for: null or [] none, else at most
 * PARTNER_MAX_FISCAL distinct ISO countries (absent: unchanged). */
static void read_fiscal(struct api_ctx *c, const struct json_value *o, struct partner_vals *p)
{
	static const char f[] = "fiscal_representative_for";
	const struct json_value *a = json_get(o, f);
	if (!a)
		return;
	p->n_fiscal_rep = 0;
	if (a->type == JSON_NULL)
		return;
	if (a->type != JSON_ARRAY || a->len > PARTNER_MAX_FISCAL) {
		api_field_error(c, f, "format", "an array of at most 8 ISO 3166-1 alpha-2 countries");
		return;
	}
	for (uint32_t i = 0; i < a->len; i++) {
		const struct json_value *x = &a->u.items[i];
		if (x->type != JSON_STRING || x->len != 2 || !iso_country_valid(x->u.str, 2)) {
			api_field_error(c, f, "format", "an array of at most 8 ISO 3166-1 alpha-2 countries");
			return;
		}
		for (unsigned k = 0; k < p->n_fiscal_rep; k++)
			if (!strcmp(p->fiscal_rep[k], x->u.str)) {
				api_field_error(c, f, "duplicate", "each country once");
				return;
			}
		memcpy(p->fiscal_rep[p->n_fiscal_rep++], x->u.str, 3);
	}
}

void partner_read(struct api_ctx *c, const struct json_value *o, struct partner_vals *p)
{
	if (fld_str(c, o, "legal_name", NULL, p->legal_name, sizeof(p->legal_name) - 1) == FLD_NULL)
		p->legal_name[0] = 0;
	if (fld_country(c, o, "country", NULL, p->country) == FLD_NULL)
		p->country[0] = 0;
	read_contact(c, o, p);
	read_roles(c, o, p);
	int e;
	int r = fld_enum(c, o, "originator_type", NULL, originator_type_names, &e);
	if (r == FLD_SET)
		p->originator_type = (int8_t)e;
	else if (r == FLD_NULL)
		p->originator_type = -1;
	read_caps(c, o, p);
	if (fld_str(c, o, "payout_provider", NULL, p->payout_provider, sizeof(p->payout_provider) - 1) == FLD_NULL)
		p->payout_provider[0] = 0;
	if (fld_str(c, o, "payout_account_id", NULL, p->payout_account_id, sizeof(p->payout_account_id) - 1) == FLD_NULL)
		p->payout_account_id[0] = 0;
	if (fld_currency(c, o, "payout_currency", NULL, p->payout_currency) == FLD_NULL)
		p->payout_currency[0] = 0;
	if (fld_str(c, o, "recruiter_id", NULL, p->recruiter_id, sizeof(p->recruiter_id) - 1) == FLD_NULL)
		p->recruiter_id[0] = 0;
	read_fiscal(c, o, p);
	read_tax_ids(c, o, p);
	const struct json_value *rate = json_get(o, "recruiter_rate_percent");
	int64_t e2;
	if (rate && rate->type == JSON_NULL)
		p->recruiter_rate_e2 = 0;
	else if (rate && (rate->type != JSON_NUMBER || json_to_fixed(rate, 2, &e2) || e2 < 0 ||
			  e2 > PARTNER_MAX_RECRUITER_E2))
		api_field_error(c, "recruiter_rate_percent", "range", "a percentage 0..25 with at most 2 decimals");
	else if (rate)
		p->recruiter_rate_e2 = e2;
}

/* Effective capability bits: explicit flags, else the role defaults. */
uint8_t partner_caps(const struct partner_vals *p)
{
	uint8_t out = 0;
	for (int i = 0; i < PARTNER_N_CAPS; i++) {
		int on = (p->caps_set & (1u << i)) ? (p->caps >> i) & 1 : (cap_defs[i].default_on & p->roles) != 0;
		if (on && (cap_defs[i].roles & p->roles))
			out |= (uint8_t)(1u << i);
	}
	return out;
}

/* Cross-field rules on the merged values. */
void partner_check(struct api_ctx *c, const struct partner_vals *p)
{
	if (!p->legal_name[0])
		api_field_error(c, "legal_name", "required", "is required");
	if (!p->country[0])
		api_field_error(c, "country", "required", "is required");
	int orig = (p->roles & ROLE_ORIGINATOR) != 0;
	if (orig && p->originator_type < 0)
		api_field_error(c, "originator_type", "required_with_role",
				"is required when the originator role is enabled (estate, collector or stock)");
	if (!orig && p->originator_type >= 0)
		api_field_error(c, "originator_type", "requires_role", "needs the originator role");
	for (int i = 0; i < PARTNER_N_CAPS; i++) {
		if ((p->caps_set & (1u << i)) && ((p->caps >> i) & 1) && !(cap_defs[i].roles & p->roles)) {
			char path[48];
			snprintf(path, sizeof(path), "capabilities.%s", cap_defs[i].name);
			api_field_error(c, path, "requires_role", "needs the %s role",
					cap_defs[i].roles & ROLE_SELLER	     ? "seller"
					: cap_defs[i].roles & ROLE_FULFILLER ? "fulfiller or originator"
									     : "originator");
		}
	}
	if ((p->payout_account_id[0] != 0) != (p->payout_provider[0] != 0))
		api_field_error(c, "payout_account_id", "together",
				"payout_provider and payout_account_id are set together");
	if ((p->recruiter_id[0] != 0) != (p->recruiter_rate_e2 != 0))
		api_field_error(c, "recruiter_id", "together",
				"recruiter_id and a recruiter_rate_percent above 0 are set together");
	if (p->recruiter_id[0] && !strcmp(p->recruiter_id, p->id))
		api_field_error(c, "recruiter_id", "self", "a partner does not recruit itself");
}

/* ---- the stored document ------------------------------------------------ */

void partner_write(struct jw *w, const struct partner_vals *p)
{
	jw_obj_begin(w);
	jw_kstr(w, "id", p->id);
	jw_kstr(w, "legal_name", p->legal_name);
	jw_kstr(w, "country", p->country);
	jw_key(w, "contact");
	if (p->contact.name[0] || p->contact.email[0] || p->contact.phone[0]) {
		jw_obj_begin(w);
		if (p->contact.name[0])
			jw_kstr(w, "name", p->contact.name);
		if (p->contact.email[0])
			jw_kstr(w, "email", p->contact.email);
		if (p->contact.phone[0])
			jw_kstr(w, "phone", p->contact.phone);
		jw_obj_end(w);
	} else {
		jw_null(w);
	}
	jw_key(w, "roles");
	jw_arr_begin(w);
	for (int i = 0; partner_role_names[i]; i++)
		if (p->roles & (1u << i))
			jw_str(w, partner_role_names[i]);
	jw_arr_end(w);
	if (p->originator_type >= 0)
		jw_kstr(w, "originator_type", originator_type_names[p->originator_type]);
	else
		jw_knull(w, "originator_type");
	jw_key(w, "capabilities");
	jw_obj_begin(w);
	uint8_t eff = partner_caps(p);
	for (int i = 0; i < PARTNER_N_CAPS; i++)
		jw_var_bool(w, cap_defs[i].name, (eff >> i) & 1);
	jw_obj_end(w);
	/* explicit flags, kept so that a later role change re-derives defaults */
	jw_key(w, "capabilities_explicit");
	jw_arr_begin(w);
	for (int i = 0; i < PARTNER_N_CAPS; i++)
		if (p->caps_set & (1u << i))
			jw_str(w, cap_defs[i].name);
	jw_arr_end(w);
	if (p->payout_provider[0])
		jw_kstr(w, "payout_provider", p->payout_provider);
	else
		jw_knull(w, "payout_provider");
	if (p->payout_account_id[0])
		jw_kstr(w, "payout_account_id", p->payout_account_id);
	else
		jw_knull(w, "payout_account_id");
	if (p->payout_currency[0])
		jw_kstr(w, "payout_currency", p->payout_currency);
	else
		jw_knull(w, "payout_currency");
	if (p->vat_id[0])
		jw_kstr(w, "vat_id", p->vat_id);
	else
		jw_knull(w, "vat_id");
	if (p->excise_number[0])
		jw_kstr(w, "excise_number", p->excise_number);
	else
		jw_knull(w, "excise_number");
	jw_key(w, "fiscal_representative_for");
	jw_arr_begin(w);
	for (unsigned i = 0; i < p->n_fiscal_rep; i++)
		jw_str(w, p->fiscal_rep[i]);
	jw_arr_end(w);
	if (p->recruiter_id[0]) {
		jw_kstr(w, "recruiter_id", p->recruiter_id);
		jw_kfixed(w, "recruiter_rate_percent", p->recruiter_rate_e2, 2);
	} else {
		jw_knull(w, "recruiter_id");
		jw_knull(w, "recruiter_rate_percent");
	}
	jw_kstr(w, "status", partner_status_names[p->status]);
	jw_kstr(w, "created_at", p->created_at);
	jw_kstr(w, "updated_at", p->updated_at);
	jw_obj_end(w);
}

static int partner_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct partner *pt = (struct partner *)r;
	struct partner_vals *p = &pt->v;
	memset(p, 0, sizeof(*p));
	p->originator_type = -1;
	partner_read(NULL, doc, p);
	/* explicit capability flags: only those listed keep their stored value */
	const struct json_value *ex = json_get(doc, "capabilities_explicit");
	uint8_t explicit_set = 0;
	for (uint32_t i = 0; ex && ex->type == JSON_ARRAY && i < ex->len; i++)
		for (int j = 0; j < PARTNER_N_CAPS; j++)
			if (ex->u.items[i].type == JSON_STRING && !strcmp(ex->u.items[i].u.str, cap_defs[j].name))
				explicit_set |= (uint8_t)(1u << j);
	p->caps_set &= explicit_set;
	int st;
	if (fld_enum(NULL, doc, "status", NULL, partner_status_names, &st) != FLD_SET)
		return -1;
	p->status = (uint8_t)st;
	if (fld_str(NULL, doc, "id", NULL, p->id, sizeof(p->id) - 1) != FLD_SET ||
	    fld_str(NULL, doc, "created_at", NULL, p->created_at, sizeof(p->created_at) - 1) != FLD_SET ||
	    fld_str(NULL, doc, "updated_at", NULL, p->updated_at, sizeof(p->updated_at) - 1) != FLD_SET)
		return -1;
	return p->legal_name[0] && p->country[0] ? 0 : -1;
}

const struct table_ops partner_table_ops = {
	.rec_table = REC_T_PARTNER,
	.name = "partner",
	.row_size = sizeof(struct partner),
	.decode = partner_decode,
};

const struct partner *partner_get(struct shard *sh, const char *id, size_t len)
{
	return (const struct partner *)table_get(&sh->tables[REC_T_PARTNER], id, len);
}

int partner_represents(struct shard *sh, const char *id, const char *cc)
{
	const struct partner *p = partner_get(sh, id, strlen(id));
	for (unsigned i = 0; p && i < p->v.n_fiscal_rep; i++)
		if (!strcmp(p->v.fiscal_rep[i], cc))
			return 1;
	return 0;
}

int partner_facts(struct shard *sh, const char *id, uint8_t *roles, uint8_t *status)
{
	const struct partner *p = partner_get(sh, id, strlen(id));
	if (!p)
		return 0;
	*roles = p->v.roles;
	*status = p->v.status;
	return 1;
}


/* Insert one partner directly (demo seed); returns 0 or -1. */
int partner_seed(struct shard *sh, const char *json)
{
	struct api_ctx c;
	memset(&c, 0, sizeof(c));
	c.sh = sh;
	struct json_doc *d = json_parse(json, strlen(json), NULL, NULL);
	if (!d)
		return -1;
	struct partner_vals p;
	memset(&p, 0, sizeof(p));
	p.originator_type = -1;
	const struct json_value *root = json_root(d);
	partner_read(&c, root, &p);
	int st;
	p.status = fld_enum(&c, root, "status", NULL, partner_status_names, &st) == FLD_SET ? (uint8_t)st : PS_LIVE;
	json_doc_free(d);
	id_new(&sh->ids, "ptn", p.id);
	fmt_rfc3339_ms(p.created_at, wall_ms());
	memcpy(p.updated_at, p.created_at, sizeof(p.created_at));
	partner_check(&c, &p);
	if (c.n_errs)
		return -1;
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	struct jw w;
	jw_init(&w, &doc);
	partner_write(&w, &p);
	txn_begin(sh);
	int rc = txn_put(sh, REC_T_PARTNER, p.id, strlen(p.id), doc.data, doc.len) ||
			 txn_event(sh, "partner.created", p.id, doc.data, doc.len) || !txn_commit(sh)
		 ? -1
		 : 0;
	buf_free(&doc);
	return rc;
}
