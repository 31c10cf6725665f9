/*
 * location.h -- stock locations (spec 2.5/2.6): one physical cellar,
 * warehouse, shop or container where an originator's or a logistics
 * partner's stock sits.  The why and the rules are in location.c.
 */
#ifndef WM_LOCATION_H
#define WM_LOCATION_H

#include <stddef.h>
#include <stdint.h>

#include "engine/edge/api.h"
#include "engine/storage/id.h"
#include "engine/storage/shard.h"
#include "engine/storage/table.h"

#define LOC_GLN_LEN 13              /* a GLN is a 13-digit GS1 key */
#define LOC_SEED_LEN 13             /* EMCS SEED excise number: 2 letters + 11 */
#define LOC_NAME_MAX 120            /* bytes of a location's name */
#define LOC_LINE_MAX 200            /* bytes of an address line */
#define LOC_CITY_MAX 100            /* bytes of a city / region / state */
#define LOC_POSTAL_MAX 16           /* bytes of a postal code */
#define LOC_ZONE_MAX 32             /* bytes of an excise tax zone id */
#define LOC_GEO_SCALE 6u            /* coordinates: exact decimals, 6 places (micro-degrees) */
#define LOC_LAT_MAX 90000000LL      /* 90 degrees at LOC_GEO_SCALE */
#define LOC_LON_MAX 180000000LL     /* 180 degrees at LOC_GEO_SCALE */

enum loc_type {
	LT_WINERY_ESTATE, LT_BONDED_WAREHOUSE, LT_DUTY_PAID_WAREHOUSE, LT_RETAIL_STORE,
	LT_3PL_FULFILLMENT_CENTER, LT_CONSIGNMENT_CELLAR, LT_IN_TRANSIT_CONTAINER, LOC_N_TYPE
};
enum loc_cap { LC_D2C, LC_B2B, LC_BONDED_TRANSFER, LC_TEMPERATURE, LOC_N_CAP };
enum loc_status { LS_ACTIVE, LS_INACTIVE, LOC_N_STATUS };

extern const char *const loc_type_names[];   /* NULL-terminated */
extern const char *const loc_cap_names[];
extern const char *const loc_status_names[];

struct location {
	struct row row;
	char owner_id[ID_MAX_LEN];       /* owner_entity_id: an originator or fulfiller */
	char gln[LOC_GLN_LEN + 1];       /* "" when none */
	char country[3];                 /* address.country = tax_jurisdiction.country: the shard key */
	uint8_t type, caps, status;      /* enum loc_type; bit per enum loc_cap; enum loc_status */
	uint8_t has_geo;
	int64_t lat, lon;                /* LOC_GEO_SCALE fixed point when has_geo */
};

/* Results of loc_gln_check / loc_seed_check. */
enum loc_key_err { LOC_KEY_OK = 0, LOC_KEY_LENGTH, LOC_KEY_CHARS, LOC_KEY_CHECK };

/* A GLN: exactly LOC_GLN_LEN ASCII digits whose last is the GS1 mod-10
 * check digit of the first twelve.  Pure. */
enum loc_key_err loc_gln_check(const char *s, size_t len);
/* An EMCS SEED excise number's shape: LOC_SEED_LEN bytes, two upper-case
 * letters (the member state) then eleven upper-case letters or digits.
 * The shape only: SEED itself is the register of record.  Pure. */
enum loc_key_err loc_seed_check(const char *s, size_t len);

/* A location by id, or NULL. */
const struct location *location_get(struct shard *sh, const char *id, size_t len);

extern const struct table_ops location_table_ops;
extern const struct route location_routes[];

#endif
