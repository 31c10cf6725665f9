/*
 * policy.h -- scopes and actions: the two questions every request answers
 * before a handler runs (DESIGN.md section 7, spec section 5).
 *
 *   scope   what the KEY was granted ("read:offers").  A key carries a set
 *           of scopes fixed at minting; a route names the one it needs.
 *           Missing scope -> 403 insufficient_scope.
 *   action  what the ENTITY may do right now ("can_write_listings"),
 *           decided by one table from the entity's enabled roles and its
 *           onboarding status.  The route names its action; api_handle asks
 *           policy_allows() before the handler runs.  Handlers never test
 *           roles themselves.  Missing action -> 403 action_not_allowed.
 *
 * Both tables are data: adding a scope or an action is one line here and
 * one in policy.c, and the OpenAPI test keeps the published list in step.
 * This header is pure (no engine types) so the OpenAPI test and the unit
 * tests can include it alone.
 */
#ifndef WM_POLICY_H
#define WM_POLICY_H

#include <stddef.h>
#include <stdint.h>

/* A partner's roles (bits) and onboarding statuses: the two inputs of the
 * action table, so they live with it (partner.c stores them). */
enum partner_role { ROLE_ORIGINATOR = 1, ROLE_FULFILLER = 2, ROLE_SELLER = 4 };

enum partner_status {
	PS_APPLIED, PS_VERIFIED, PS_ROLES_ENABLED, PS_CONFIGURED, PS_INTEGRATED, PS_LIVE,
	PS_SUSPENDED, PARTNER_N_STATUS
};

extern const char *const partner_role_names[];   /* by bit index, NULL-terminated */
extern const char *const partner_status_names[]; /* by enum partner_status, NULL-terminated */

/* Scope ids; 0 means "public: no key needed".  Bits in a scope_set are
 * (1u << id).  Append only (stored keys carry names, not ids, but keep the
 * order stable for readability). */
enum scope {
	SC_PUBLIC = 0,
	SC_READ_PARTNERS, SC_WRITE_PARTNERS,
	SC_READ_WINES, SC_WRITE_WINES,
	SC_READ_OFFERS, SC_WRITE_OFFERS,
	SC_READ_LISTINGS, SC_WRITE_LISTINGS,
	SC_READ_INVENTORY, SC_WRITE_INVENTORY,
	SC_READ_ORDERS, SC_WRITE_ORDERS,
	SC_READ_KEYS, SC_WRITE_KEYS,
	SC_READ_WEBHOOKS, SC_WRITE_WEBHOOKS,
	SC_READ_EVENTS,
	SC_READ_NETWORK,
	SC_OPERATOR,
	SC_WRITE_SYNC, SC_READ_SYNC,
	SC_COUNT_
};
typedef uint32_t scope_set;
#define SCOPE_BIT(s) ((scope_set)1u << (s))

enum scope_flag {
	SCF_PLATFORM_ONLY = 1, /* never issued to a partner key (read:network, operator) */
	SCF_PUBLISHABLE = 2,   /* may be held by a publishable (storefront) key */
	SCF_PARTNER_DEFAULT = 4 /* granted to a partner secret key when none are asked for */
};

struct scope_def {
	const char *name;
	uint8_t flags;
	const char *description;
};
extern const struct scope_def scope_defs[SC_COUNT_];

/* Scope id by name, or -1.  SC_PUBLIC has no name and is never found. */
int scope_find(const char *name, size_t len);

/* Actions.  0 = none needed (public routes). */
enum action {
	ACT_NONE = 0,
	ACT_READ_PARTNERS, ACT_CREATE_PARTNER, ACT_UPDATE_PARTNER,
	ACT_MINT_KEY, ACT_READ_KEYS,
	ACT_READ_EVENTS,
	ACT_READ_WINES, ACT_WRITE_WINES,
	ACT_READ_OFFERS, ACT_WRITE_OFFERS,
	ACT_READ_LISTINGS, ACT_WRITE_LISTINGS,
	ACT_READ_INVENTORY, ACT_WRITE_INVENTORY,
	ACT_READ_ORDERS, ACT_CREATE_ORDERS,
	ACT_MANAGE_WEBHOOKS,
	ACT_READ_NETWORK,
	ACT_OPERATE,
	ACT_PUSH_FEED, ACT_PULL_FEED, ACT_READ_FEED,
	ACT_COUNT_
};

enum action_flag { ACTF_PLATFORM_ONLY = 1 };

struct action_def {
	const char *name;     /* "can_read_offers" */
	uint8_t roles_any;    /* entity needs one of these role bits (0: no role needed) */
	uint16_t statuses;    /* bit per partner status in which it is allowed */
	uint8_t flags;
};
extern const struct action_def action_defs[ACT_COUNT_];

/*
 * May an entity with these enabled roles and this onboarding status take
 * the action?  The platform entity may take every action.  Pure.
 */
int policy_allows(enum action a, int is_platform, uint8_t roles, uint8_t status);

/*
 * Why a partner (not the platform) may not take the action, for a 403's
 * detail: what unlocks it, named from the table, and where the partner
 * stands, e.g. "the action can_create_orders requires onboarding status
 * live; partner is verified" or "... requires the originator role;
 * partner's roles: seller" (both clauses when both fail).  Writes a
 * NUL-terminated string of at most size bytes into out (truncated, never
 * overflowing).  Pure.
 */
void policy_explain(enum action a, uint8_t roles, uint8_t status, char *out, size_t size);

#endif
