/*
 * partner.h -- the partner record's typed view (see partner.c for the why).
 */
#ifndef WM_PARTNER_H
#define WM_PARTNER_H

#include <stddef.h>
#include <stdint.h>

#include "engine/edge/api.h"
#include "engine/edge/policy.h" /* roles and onboarding statuses */
#include "engine/storage/id.h"
#include "engine/storage/shard.h"
#include "engine/storage/table.h"

enum partner_cap {
	CAP_PROVIDES_WINE_DATA, CAP_PROVIDES_INVENTORY, CAP_PERMISSIONS, CAP_FULFILLS_ORDERS,
	CAP_FEEDS_UNOFFERED_WINES, CAP_CREATES_ORDERS, CAP_CURATES_OFFERS, CAP_SETS_SHELF_PRICE,
	PARTNER_N_CAPS
};

#define PARTNER_MAX_NAME 200
#define PARTNER_MAX_RECRUITER_E2 2500 /* a recruiter royalty of at most 25.00 % */
#define PARTNER_MAX_FISCAL 8          /* destinations one fiscal representative files for */
#define PARTNER_MAX_VAT_ID 14         /* "DE" + at most 12 characters (the longest EU format) */
#define PARTNER_EXCISE_LEN 13         /* a SEED excise number: country + 11 characters */

struct partner_vals {
	char id[ID_MAX_LEN];
	char legal_name[PARTNER_MAX_NAME + 1];
	char country[3];
	struct {
		char name[121];
		char email[255];
		char phone[33];
	} contact;
	uint8_t roles;          /* enum partner_role bits */
	int8_t originator_type; /* -1 none, else index of estate/collector/stock */
	uint8_t caps_set;       /* flags given explicitly */
	uint8_t caps;           /* their values */
	uint8_t status;         /* enum partner_status */
	char payout_provider[33];
	char payout_account_id[65];
	char payout_currency[4];
	/* printed on its trade documents (engine/orders/documents.c): the VAT
	 * identification number and the excise (SEED) number, "" when none */
	char vat_id[PARTNER_MAX_VAT_ID + 1];
	char excise_number[PARTNER_EXCISE_LEN + 1];
	/* spec 2.9 R_Recruiter: the partner that recruited this one (as a
	 * seller) and its royalty, percent x 100 of (P_B2B + M_Curator) */
	char recruiter_id[ID_MAX_LEN];
	int64_t recruiter_rate_e2;
	/* spec 2.8/1.9: the destinations whose declarations this partner files
	 * as the platform's fiscal representative (set by operators) */
	char fiscal_rep[PARTNER_MAX_FISCAL][3];
	uint8_t n_fiscal_rep;
	char created_at[32];
	char updated_at[32];
};

struct partner {
	struct row row;
	struct partner_vals v;
};

/* The fields of a partner object (request body or stored document) over
 * *p: a missing field leaves its value; each invalid one is a field error
 * on c (NULL: none is reported). */
void partner_read(struct api_ctx *c, const struct json_value *o, struct partner_vals *p);
/* Every rule of a complete partner (roles and originator type, capability
 * flags the roles allow, currency): field errors on c. */
void partner_check(struct api_ctx *c, const struct partner_vals *p);
/* The canonical stored document, which is exactly what GET returns. */
void partner_write(struct jw *w, const struct partner_vals *p);

/* Effective capability bits (explicit flags, else role defaults). */
uint8_t partner_caps(const struct partner_vals *p);
const struct partner *partner_get(struct shard *sh, const char *id, size_t len);
/* 1 if partner id (NUL-terminated) is the fiscal representative of
 * destination cc (fiscal_representative_for), else 0. */
int partner_represents(struct shard *sh, const char *id, const char *cc);
/* Roles and onboarding status of partner `id` (NUL-terminated): 1, or 0
 * when there is none (the edge's key_partner_facts, bound in routes.c). */
int partner_facts(struct shard *sh, const char *id, uint8_t *roles, uint8_t *status);
/* Create a partner from a JSON object without HTTP (demo data). */
int partner_seed(struct shard *sh, const char *json);

extern const struct route partner_routes[];

#endif
