/*
 * policy.c -- the scope list and the action policy table (see policy.h).
 *
 * Why a table: "who may do what" must be readable in one place and testable
 * as data.  Each action names the roles that may take it (any one of them)
 * and the onboarding statuses in which it is open.  The platform entity
 * (operators) may take every action; ACTF_PLATFORM_ONLY actions are open to
 * nobody else.  A suspended partner is in no status mask, so it can do
 * nothing but be un-suspended by an operator.
 */
#include "engine/edge/policy.h"

#include <stdio.h>
#include <string.h>

const char *const partner_role_names[] = {"originator", "fulfiller", "seller", NULL};
const char *const partner_status_names[] = {"applied", "verified", "roles_enabled", "configured",
					    "integrated", "live", "suspended", NULL};

const struct scope_def scope_defs[SC_COUNT_] = {
	[SC_PUBLIC] = {NULL, 0, "no key needed"},
	[SC_READ_PARTNERS] = {"read:partners", SCF_PARTNER_DEFAULT, "read the caller's own partner record"},
	[SC_WRITE_PARTNERS] = {"write:partners", SCF_PARTNER_DEFAULT, "update the caller's own partner record"},
	[SC_READ_WINES] = {"read:wines", SCF_PUBLISHABLE | SCF_PARTNER_DEFAULT, "read canonical wines within the entity's filter"},
	[SC_WRITE_WINES] = {"write:wines", SCF_PARTNER_DEFAULT, "create and update wines, producers, crosswalk and media"},
	[SC_READ_OFFERS] = {"read:offers", SCF_PUBLISHABLE | SCF_PARTNER_DEFAULT, "read offers within the entity's filter"},
	[SC_WRITE_OFFERS] = {"write:offers", SCF_PARTNER_DEFAULT, "create, update and withdraw the entity's own offers"},
	[SC_READ_LISTINGS] = {"read:listings", SCF_PUBLISHABLE | SCF_PARTNER_DEFAULT, "read listings within the entity's filter"},
	[SC_WRITE_LISTINGS] = {"write:listings", SCF_PARTNER_DEFAULT, "create and update the entity's own listings, channels and shops"},
	[SC_READ_INVENTORY] = {"read:inventory", SCF_PARTNER_DEFAULT, "read the entity's locations and inventory levels"},
	[SC_WRITE_INVENTORY] = {"write:inventory", SCF_PARTNER_DEFAULT, "declare locations and update inventory"},
	[SC_READ_ORDERS] = {"read:orders", SCF_PARTNER_DEFAULT, "read orders the entity participates in"},
	[SC_WRITE_ORDERS] = {"write:orders", SCF_PARTNER_DEFAULT, "quote, create and cancel orders"},
	[SC_READ_KEYS] = {"read:keys", SCF_PARTNER_DEFAULT, "list the entity's API keys (metadata only)"},
	[SC_WRITE_KEYS] = {"write:keys", SCF_PARTNER_DEFAULT, "mint, expire and revoke the entity's API keys"},
	[SC_READ_WEBHOOKS] = {"read:webhooks", SCF_PARTNER_DEFAULT, "read the entity's webhook subscriptions and deliveries"},
	[SC_WRITE_WEBHOOKS] = {"write:webhooks", SCF_PARTNER_DEFAULT, "manage the entity's webhook subscriptions"},
	[SC_READ_EVENTS] = {"read:events", SCF_PARTNER_DEFAULT, "read events scoped to the entity"},
	[SC_READ_NETWORK] = {"read:network", SCF_PLATFORM_ONLY, "whole-network snapshot; never issued to partner keys"},
	[SC_OPERATOR] = {"operator", SCF_PLATFORM_ONLY, "operations: metrics, snapshots, audit, every entity"},
	[SC_WRITE_SYNC] = {"write:sync", SCF_PARTNER_DEFAULT, "push batches of wines and offers through the feed (each item also needs write:wines or write:offers)"},
	[SC_READ_SYNC] = {"read:sync", SCF_PARTNER_DEFAULT, "pull the catalogue's changes through the feed (the kinds read:wines and read:offers allow) and read the feed status"},
};

int scope_find(const char *name, size_t len)
{
	for (int s = 1; s < SC_COUNT_; s++)
		if (strlen(scope_defs[s].name) == len && memcmp(scope_defs[s].name, name, len) == 0)
			return s;
	return -1;
}

#define ST(s) (1u << (s))
/* Statuses in which an entity is active enough to read and to manage itself. */
#define ST_ONBOARDING (ST(PS_APPLIED) | ST(PS_VERIFIED) | ST(PS_ROLES_ENABLED) | ST(PS_CONFIGURED) | \
		       ST(PS_INTEGRATED) | ST(PS_LIVE))
/* Verified by the payment provider onwards (credentials come at step 5). */
#define ST_VERIFIED (ST(PS_VERIFIED) | ST(PS_ROLES_ENABLED) | ST(PS_CONFIGURED) | ST(PS_INTEGRATED) | \
		     ST(PS_LIVE))
/* Roles enabled onwards: the role's own data may be written (first wine,
 * offer, listing are part of step 5 Integrate). */
#define ST_ROLES (ST(PS_ROLES_ENABLED) | ST(PS_CONFIGURED) | ST(PS_INTEGRATED) | ST(PS_LIVE))
/* Orders: only once live (step 6, go live: first order). */
#define ST_LIVE ST(PS_LIVE)

#define R_ANY 0
#define R_ORIG ROLE_ORIGINATOR
#define R_FULF ROLE_FULFILLER
#define R_SELL ROLE_SELLER

const struct action_def action_defs[ACT_COUNT_] = {
	[ACT_NONE] = {"none", R_ANY, 0xffff, 0},
	[ACT_READ_PARTNERS] = {"can_read_partners", R_ANY, ST_ONBOARDING, 0},
	[ACT_CREATE_PARTNER] = {"can_create_partner", R_ANY, 0, ACTF_PLATFORM_ONLY},
	[ACT_UPDATE_PARTNER] = {"can_update_partner", R_ANY, ST_ONBOARDING, 0},
	[ACT_MINT_KEY] = {"can_mint_key", R_ANY, ST_VERIFIED, 0},
	[ACT_READ_KEYS] = {"can_read_keys", R_ANY, ST_ONBOARDING, 0},
	[ACT_READ_EVENTS] = {"can_read_events", R_ANY, ST_ONBOARDING, 0},
	[ACT_READ_WINES] = {"can_read_wines", R_ANY, ST_VERIFIED, 0},
	[ACT_WRITE_WINES] = {"can_write_wines", R_ORIG | R_FULF, ST_ROLES, 0},
	[ACT_READ_OFFERS] = {"can_read_offers", R_ANY, ST_VERIFIED, 0},
	[ACT_WRITE_OFFERS] = {"can_write_offers", R_ORIG, ST_ROLES, 0},
	[ACT_READ_LISTINGS] = {"can_read_listings", R_ANY, ST_VERIFIED, 0},
	[ACT_WRITE_LISTINGS] = {"can_write_listings", R_SELL, ST_ROLES, 0},
	[ACT_READ_INVENTORY] = {"can_read_inventory", R_ORIG | R_FULF | R_SELL, ST_VERIFIED, 0},
	[ACT_WRITE_INVENTORY] = {"can_write_inventory", R_ORIG | R_FULF, ST_ROLES, 0},
	[ACT_READ_ORDERS] = {"can_read_orders", R_ANY, ST_VERIFIED, 0},
	[ACT_CREATE_ORDERS] = {"can_create_orders", R_SELL, ST_LIVE, 0},
	[ACT_MANAGE_WEBHOOKS] = {"can_manage_webhooks", R_ANY, ST_VERIFIED, 0},
	[ACT_READ_NETWORK] = {"can_read_network", R_ANY, 0, ACTF_PLATFORM_ONLY},
	[ACT_OPERATE] = {"can_operate", R_ANY, 0, ACTF_PLATFORM_ONLY},
	/* the feed (spec 4.4): originators (and fulfillers feeding wines) push,
	 * sellers and fulfillers pull; any partner reads its own feed status */
	[ACT_PUSH_FEED] = {"can_push_feed", R_ORIG | R_FULF, ST_ROLES, 0},
	[ACT_PULL_FEED] = {"can_pull_feed", R_SELL | R_FULF, ST_VERIFIED, 0},
	[ACT_READ_FEED] = {"can_read_feed_status", R_ANY, ST_ONBOARDING, 0},
};

/* Append to out[*at..size): snprintf that never moves *at past the end. */
static void put(char *out, size_t size, size_t *at, const char *s)
{
	if (*at >= size)
		return;
	int n = snprintf(out + *at, size - *at, "%s", s);
	*at = n < 0 ? size : *at + (size_t)n;
}

/* The roles in a role mask, as "a, b" ("none" when empty). */
static void put_roles(char *out, size_t size, size_t *at, uint8_t roles, const char *sep)
{
	int any = 0;
	for (int i = 0; partner_role_names[i]; i++)
		if (roles & (1u << i)) {
			put(out, size, at, any ? sep : "");
			put(out, size, at, partner_role_names[i]);
			any = 1;
		}
	if (!any)
		put(out, size, at, "none");
}

void policy_explain(enum action a, uint8_t roles, uint8_t status, char *out, size_t size)
{
	size_t at = 0;
	if (!size)
		return;
	out[0] = 0;
	if ((unsigned)a >= ACT_COUNT_)
		return;
	const struct action_def *d = &action_defs[a];
	put(out, size, &at, "the action ");
	put(out, size, &at, d->name);
	if (d->flags & ACTF_PLATFORM_ONLY || !d->statuses) {
		put(out, size, &at, " is open to the platform only");
		return;
	}
	int clause = 0;
	if (status >= 16 || !(d->statuses & (1u << status))) {
		/* the first status that opens it, and whether every later one does too */
		int first = -1, through = 1;
		for (int s = 0; s <= PS_LIVE; s++)
			if (d->statuses & (1u << s)) {
				if (first < 0)
					first = s;
			} else if (first >= 0) {
				through = 0;
			}
		put(out, size, &at, " requires onboarding status ");
		put(out, size, &at, first >= 0 ? partner_status_names[first] : "(none)");
		if (first >= 0 && first < PS_LIVE && through)
			put(out, size, &at, " or later");
		put(out, size, &at, "; partner is ");
		put(out, size, &at, status < PARTNER_N_STATUS ? partner_status_names[status] : "unknown");
		clause = 1;
	}
	if (d->roles_any && !(roles & d->roles_any)) {
		put(out, size, &at, clause ? ", and requires the " : " requires the ");
		put_roles(out, size, &at, d->roles_any, " or ");
		put(out, size, &at, " role; partner's roles: ");
		put_roles(out, size, &at, roles, ", ");
	}
}

int policy_allows(enum action a, int is_platform, uint8_t roles, uint8_t status)
{
	if ((unsigned)a >= ACT_COUNT_)
		return 0;
	if (a == ACT_NONE || is_platform)
		return 1;
	const struct action_def *d = &action_defs[a];
	if (d->flags & ACTF_PLATFORM_ONLY)
		return 0;
	if (status >= 16 || !(d->statuses & (1u << status)))
		return 0;
	return d->roles_any == 0 || (roles & d->roles_any) != 0;
}
