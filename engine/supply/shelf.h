/*
 * shelf.h -- what sales channels and curated shops share (the "shelf"):
 * limits, statuses, the row head both rows start with; and, for channel.c
 * (the two resources: kinds, rules, tables) and channel_routes.c (their
 * routes) only, the values, kinds and helpers they drive each other with.
 * Other files include channel.h.
 */
#ifndef WM_SHELF_H
#define WM_SHELF_H

#include <stddef.h>
#include <stdint.h>

#include "engine/edge/api.h"
#include "engine/storage/id.h"
#include "engine/storage/table.h"

#define SHELF_MAX_NAME 120          /* bytes of a channel's or a shop's name */
#define SHOP_MARKUP_SCALE 2u        /* markup: percent with 2 decimals ... */
#define SHOP_MARKUP_MAX 100000      /* ... so 0..1000.00 % is 0..100000 (basis points) */
#define CHANNEL_LOCATIONS_MAX 32    /* stock locations one sales channel may link */
#define CHANNEL_AVAIL_BUDGET 10000  /* offers one availability page may examine */

enum shelf_status { SHELF_ACTIVE, SHELF_PAUSED, SHELF_CLOSED, SHELF_N_STATUS };
enum channel_kind { CHK_MARKETPLACE, CHK_WEBSHOP_CONNECT, CHK_POS_QR, CHANNEL_N_KIND };
enum shop_layout { LAYOUT_GRID, LAYOUT_LIST, LAYOUT_EDITORIAL, SHOP_N_LAYOUT };

extern const char *const shelf_status_names[];  /* NULL-terminated */
extern const char *const channel_kind_names[];
extern const char *const shop_layout_names[];

/* The head both rows share (the shared indexes read only this). */
struct shelf_row {
	struct row row;
	char seller_id[ID_MAX_LEN];          /* the owning seller partner */
	char name[SHELF_MAX_NAME + 1];
	uint8_t status;                      /* enum shelf_status */
	/* "seller_id NUL name folded to ASCII lower case": per-seller uniqueness */
	char nkey[ID_MAX_LEN + SHELF_MAX_NAME + 1];
	uint16_t nkey_len;
};

/* ---- for channel.c and channel_routes.c --------------------------------- */

#define SHELF_MAX_TS 32 /* an RFC 3339 timestamp with milliseconds */

/* Everything one document holds (both kinds; unused members stay zero). */
struct shelf_vals {
	char id[ID_MAX_LEN], seller_id[ID_MAX_LEN];
	char name[SHELF_MAX_NAME + 1];
	int status;
	char created_at[SHELF_MAX_TS], updated_at[SHELF_MAX_TS];
	/* sales channel */
	int kind;
	char country[3], currency[4];
	int n_locations;
	char location_ids[CHANNEL_LOCATIONS_MAX][ID_MAX_LEN];
	/* curated shop */
	int64_t markup;
	int layout;
	char channel_id[ID_MAX_LEN];
};

/* One resource of the shelf: what differs between channels and shops. */
struct shelf_kind {
	uint8_t table;                 /* enum rec_table */
	const char *id_prefix;         /* "chn" */
	const char *noun;              /* "sales channel" */
	const char *ev_created, *ev_updated;
	const char *name_taken;        /* 409 code */
	const char *closed_code;       /* 409 code for a PATCH of a closed row */
	const char *const *known;      /* writable + read-only members: anything else is unknown */
	const char *const *read_only;  /* members the service assigns */
	const char *const *required;   /* members a create must carry (not null) */
	int need_cap;                  /* enum partner_cap the seller needs, -1 none */
	void (*defaults)(struct shelf_vals *v);
	/* Overlay the kind's members of o on v (c NULL: a stored document). */
	void (*read)(struct api_ctx *c, const struct json_value *o, struct shelf_vals *v);
	/* Cross-record rules of a request body (c not NULL). */
	void (*check)(struct api_ctx *c, const struct json_value *body, const struct shelf_vals *v);
	/* Write the kind's members into the open document object. */
	void (*write)(struct jw *w, const struct shelf_vals *v);
	/* Copy the kind's typed members into the row. */
	void (*fill)(struct shelf_row *r, const struct shelf_vals *v);
	/* Is the row on the storefront channel ch (publishable keys)? */
	int (*on_channel)(const struct shelf_row *r, const char *ch);
};

extern const struct shelf_kind channel_kind, shop_kind;
/* Which status moves a PATCH may make: [from][to], 1 = allowed. */
extern const uint8_t shelf_moves[SHELF_N_STATUS][SHELF_N_STATUS];

/* The members both kinds share, overlaid from o (c NULL: a stored document). */
void shelf_common_read(struct api_ctx *c, const struct json_value *o, struct shelf_vals *v);
/* The values of a stored document; 0, or -1 when it lacks a required member. */
int shelf_load(const struct shelf_kind *k, const struct json_value *doc, struct shelf_vals *v);
/* "seller NUL name folded to ASCII lower case" into out; its length. */
uint16_t shelf_name_key(const char *seller, const char *name, char *out);
/* The rows by seller ("seller NUL id"), and the row with a name key. */
const struct oidx *shelf_by_seller(const struct table *t);
const struct row *shelf_by_name(const struct table *t, const char *nkey, uint16_t len);

#endif
