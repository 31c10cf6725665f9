/*
 * refdata.h -- the reference data the landed-cost engine prices from: VAT
 * rates, excise regimes, a freight tariff and FX rates, read from plain
 * text tables in data/ (format in data/README.md).
 *
 * Why a strict loader: these figures drive money that is declared to tax
 * authorities, so a figure that cannot be traced to a publication must not
 * load.  Every figure line carries its source and as-of date; anything
 * malformed (wrong column count, inexact or negative decimal, unknown code,
 * duplicate, overlapping ABV band, over-long line, too many lines) refuses
 * the WHOLE version with "file:line: reason".  A loaded version is
 * immutable; a new version replaces it as a whole (refdata_set_current).
 *
 * Fixed-point conventions (no floating point anywhere):
 *   VAT           percent x 10^4   (19 % -> 190000; equals the fraction x 10^6)
 *   excise rate   major units of its currency x 10^4 per basis unit
 *   freight       EUR minor units (cents) per box
 *   FX            units of the currency per 1 EUR x 10^6
 *   ABV           hundredths of a percent (13.5 % -> 1350)
 */
#ifndef WM_REFDATA_H
#define WM_REFDATA_H

#include <stddef.h>
#include <stdint.h>

#define RD_MAX_LINE 1024        /* bytes per line, excluding the newline */
#define RD_MAX_ROWS 512         /* figure lines per file */
#define RD_CC_SLOTS (26 * 26)   /* two capital letters: a country's slot in the lookup indexes */
#define RD_MAX_FILE (1u << 20)  /* bytes per file */
#define RD_MAX_SOURCE 400       /* bytes of a source column */
#define RD_MAX_VERSION 31       /* bytes of a version name */
#define RD_MAX_ABV 2200         /* 22.00 % vol (spec section 8 field bound) */
#define RD_VAT_SCALE 4          /* decimals of rate_percent */
#define RD_RATE_SCALE 4         /* decimals of an excise rate */
#define RD_FX_SCALE 6           /* decimals of per_eur */
#define RD_MAX_VAT_E4 1000000   /* 100 % */
#define RD_MAX_RATE_E4 100000000000LL /* 10,000,000 major units per basis unit */
#define RD_MAX_FX_E6 1000000000000LL  /* 1,000,000 units per EUR */
#define RD_MAX_FREIGHT_CENTS 10000000 /* EUR 100,000 per box */
#define RD_FX_ONE 1000000       /* per_eur of EUR itself */

/* levies.tsv is OPTIONAL (a directory or upload without it has no levies);
 * every other file is required. */
enum rd_file { RD_F_VERSION, RD_F_VAT, RD_F_EXCISE, RD_F_FREIGHT, RD_F_FX, RD_F_LEVIES, RD_F_CAPS, RD_F_COUNT_ };
/* Files a version may lack (levies.tsv, caps.tsv). */
int rd_file_optional(enum rd_file f);
/* File name of each kind ("vat.tsv", ...). */
extern const char *const rd_file_names[RD_F_COUNT_];

enum rd_category { RD_CAT_STILL, RD_CAT_SPARKLING, RD_CAT_FORTIFIED, RD_CAT_COUNT_ };
extern const char *const rd_category_names[RD_CAT_COUNT_];
/* Harmonised EU excise product code of each category (W200, W300, I000). */
extern const char *const rd_category_codes[RD_CAT_COUNT_];
/* Category by name, or -1. */
int rd_category_find(const char *s, size_t len);

enum rd_basis { RD_B_PER_HL_PRODUCT, RD_B_PER_L_PURE_ALCOHOL, RD_B_PER_L_PER_PCT_VOL, RD_B_PER_L_PRODUCT,
		RD_B_COUNT_ };
extern const char *const rd_basis_names[RD_B_COUNT_];

struct rd_meta {
	uint32_t line;                 /* line in its file */
	char source[RD_MAX_SOURCE + 1];
	char as_of[11];                /* YYYY, YYYY-MM or YYYY-MM-DD */
};

/* Dates as YYYYMMDD integers (20260201), so that ranges compare as
 * numbers.  A row is in force on day D when from <= D <= to (both
 * inclusive); RD_DATE_MIN / RD_DATE_MAX stand for an open end ("-"). */
#define RD_DATE_MIN 0u
#define RD_DATE_MAX 99991231u

/* VAT product dimension: a category's own row, else the country's default. */
enum rd_vat_product { RD_VP_STILL = 0, RD_VP_SPARKLING, RD_VP_FORTIFIED, RD_VP_DEFAULT, RD_VP_COUNT_ };
extern const char *const rd_vat_product_names[RD_VP_COUNT_];

#define RD_MAX_REGION 7         /* bytes of a region code ("PT-30", "DE-BUS") */

struct rd_vat {
	char country[3];
	char region[RD_MAX_REGION + 1]; /* "" = the whole country / mainland */
	uint8_t product;               /* enum rd_vat_product */
	int64_t rate_e4;
	uint32_t from, to;             /* effective_from / effective_to, YYYYMMDD inclusive */
	struct rd_meta m;
};

struct rd_excise {
	char country[3];
	uint8_t category;              /* enum rd_category */
	uint8_t basis;                 /* enum rd_basis */
	uint8_t not_found;             /* published as NOT_FOUND: no citable figure */
	uint16_t abv_min, abv_max;     /* inclusive, hundredths of % */
	int64_t rate_e4;               /* 0 when not_found */
	char currency[4];
	uint32_t from, to;             /* effective_from / effective_to, YYYYMMDD inclusive */
	struct rd_meta m;
};

struct rd_freight {
	char origin[3], destination[3];
	uint8_t box_units;             /* 6 or 12 */
	int64_t price_cents;           /* EUR */
	struct rd_meta m;
};

struct rd_fx {
	char currency[4];
	int64_t per_eur_e6;
	struct rd_meta m;
};

/* A packaging / environmental levy of a destination (levies.tsv): reported
 * by the tax context, NOT charged by quotes (its base -- units, return
 * share, container type -- is not modelled). */
#define RD_MAX_LEVY_NAME 48
enum rd_levy_basis { RD_LB_PER_UNIT, RD_LB_PER_HL_PRODUCT, RD_LB_COUNT_ };
extern const char *const rd_levy_basis_names[RD_LB_COUNT_];
struct rd_levy {
	char country[3];
	char name[RD_MAX_LEVY_NAME + 1];  /* [a-z0-9_] */
	uint8_t basis;                    /* enum rd_levy_basis */
	uint8_t not_found;
	int64_t rate_e4;                  /* major units x 10^4 per basis unit; 0 when not_found */
	char currency[4];
	uint32_t from, to;
	struct rd_meta m;
};

/* A consumer volume cap (caps.tsv, spec 8): what one consumer may receive
 * of a category in a destination over a rolling period.  country "*" is
 * the row of every destination without its own. */
#define RD_MAX_CAP_DAYS 366
struct rd_cap {
	char country[3];               /* "*" for the default */
	uint8_t category;              /* enum rd_category: still or sparkling */
	int64_t limit_ul;              /* microlitres */
	uint32_t period_days;          /* 1..RD_MAX_CAP_DAYS */
	struct rd_meta m;
};

/* Where a version came from: the --data-ref-dir files at start-up, or an
 * operator upload (POST /v1/admin/reference-data, kept in the WAL). */
enum rd_source { RD_SRC_FILES, RD_SRC_API };
extern const char *const rd_source_names[2];

struct refdata {
	char version[RD_MAX_VERSION + 1];
	char effective_date[11];       /* YYYY-MM-DD */
	uint8_t source;                /* enum rd_source */
	char loaded_at[32];            /* RFC 3339 of the upload; "" for files */
	uint8_t have[RD_F_COUNT_];     /* file parsed */
	uint8_t dated[RD_F_COUNT_];    /* the file uses the dated layout (data/README.md) */
	uint32_t n_vat, n_excise, n_freight, n_fx, n_levies, n_caps;
	/* per-country indexes (refdata_finish): the rows of country slot s
	 * (RD_CC_SLOT) are *_idx[*_at[s] .. *_at[s + 1]), in file order; a
	 * quote looks up VAT and excise for every candidate it prices, and a
	 * scan of every row was its largest cost (issue 15).  Without them
	 * (indexed 0: a version not finished) lookups scan. */
	uint8_t indexed;
	uint16_t vat_at[RD_CC_SLOTS + 1], excise_at[RD_CC_SLOTS + 1];
	uint16_t vat_idx[RD_MAX_ROWS], excise_idx[RD_MAX_ROWS];
	struct rd_vat vat[RD_MAX_ROWS];
	struct rd_excise excise[RD_MAX_ROWS];
	struct rd_freight freight[RD_MAX_ROWS];
	struct rd_fx fx[RD_MAX_ROWS];
	struct rd_levy levies[RD_MAX_ROWS];
	struct rd_cap caps[RD_MAX_ROWS];
};

/* The cap of category in destination (its own row, else the "*" row), or
 * NULL when there is none. */
const struct rd_cap *refdata_cap(const struct refdata *rd, const char *destination, int category);

/* A zeroed version (NULL on allocation failure); free with refdata_free. */
struct refdata *refdata_new(void);
void refdata_free(struct refdata *rd);

/*
 * Parse one file's text into rd.  Returns 0, or -1 with "name:line: reason"
 * in err.  A file may be parsed once per version (a second time is refused).
 */
int refdata_parse(struct refdata *rd, enum rd_file f, const char *text, size_t len, char *err,
		  size_t errlen);
/* After every file is parsed: cross-file checks (each file present, every
 * excise currency other than EUR has an FX rate).  0 or -1 with err. */
int refdata_finish(struct refdata *rd, char *err, size_t errlen);
/* Read and parse every file of `dir` ("<dir>/vat.tsv", ...) and finish.
 * On success *out owns a new version; on failure err names file:line. */
int refdata_load_dir(const char *dir, struct refdata **out, char *err, size_t errlen);

/*
 * Build a version from an upload document (the body of POST
 * /v1/admin/reference-data, which is also the stored row):
 *   {"version": "...", "effective_date": "YYYY-MM-DD", "loaded_at"?: "...",
 *    "files": {"vat.tsv": "<text>", "excise.tsv": ..., "freight.tsv": ...,
 *              "fx.tsv": ...}}
 * Every one of the four tables is required and parsed by refdata_parse
 * exactly as from a directory (same bounds); version and effective_date go
 * through the version.txt rules.  Other members are ignored.  On success
 * *out owns a new version with source RD_SRC_API; on failure -1 and err
 * holds the first error: "vat.tsv:34: reason", "version: reason",
 * "files: reason".  Nothing global changes either way.
 */
struct json_value;
int refdata_from_json(const struct json_value *doc, struct refdata **out, char *err, size_t errlen);

/* ---- the process's current version (one shard per process) ---------- */
const struct refdata *refdata_current(void);
/* Install rd (owned from now on) and free the previous version; log a
 * warning when it is already stale (refdata_is_stale).  The event loop is
 * single-threaded: no request holds a pointer across this call. */
void refdata_set_current(struct refdata *rd);

/* ---- lookups (NULL / negative when absent) ---------------------------- */
/* Any VAT row of the country (whatever its date, region or product): the
 * destination is known to the reference data. */
const struct rd_vat *refdata_vat(const struct refdata *rd, const char *country);
/*
 * The VAT row in force on `ymd` for a delivery to (country, region) of a
 * wine of `category` (enum rd_category): the row for that category if one
 * is in force, else the country's `default` row.  region "" = the whole
 * country (mainland); a region is never answered by the mainland's rows
 * (its rate differs or is outside EU VAT): no row -> NULL.
 */
const struct rd_vat *refdata_vat_at(const struct refdata *rd, const char *country, const char *region,
				    int category, uint32_t ymd);
enum rd_lookup { RD_FOUND = 0, RD_NO_ENTRY = -1, RD_NOT_PUBLISHED = -2 };
/* The excise row for (country, category) in force on `ymd` whose band holds
 * abv.  RD_FOUND with *out; RD_NOT_PUBLISHED when the band is marked
 * NOT_FOUND (*out set, for its source note); RD_NO_ENTRY when no band in
 * force covers the ABV. */
int refdata_excise(const struct refdata *rd, const char *country, int category, uint32_t abv, uint32_t ymd,
		   const struct rd_excise **out);
/* 1 if the country has any excise row in force on ymd for the category. */
int refdata_excise_category_known(const struct refdata *rd, const char *country, int category, uint32_t ymd);
/* The freight row of a lane: the lane's own row, else the row of its
 * (origin zone, destination zone) (refdata_freight_zone); NULL if neither. */
const struct rd_freight *refdata_freight(const struct refdata *rd, const char *origin,
					 const char *destination, unsigned box_units);
/* The SAMPLE tariff's freight zone of a country ("Z1".."Z4"), or NULL. */
const char *refdata_freight_zone(const char *country);
/* Units per EUR x 10^6 of a currency (RD_FX_ONE for EUR), or -1. */
int64_t refdata_fx(const struct refdata *rd, const char *currency, const struct rd_fx **row);
/* 1 if the country is an EU member state (at the version's effective date). */
int refdata_is_eu(const char *country);
/* The currency consumers in `country` are charged in, or NULL if unknown. */
const char *refdata_country_currency(const char *country);

/* ---- dates and regions ------------------------------------------------- */
/* "YYYY-MM-DD" -> YYYYMMDD, or 0 when not a valid calendar date. */
uint32_t rd_ymd_parse(const char *p, size_t n);
/* YYYYMMDD -> "YYYY-MM-DD" (out holds 11 bytes); "-" for an open end. */
void rd_ymd_format(uint32_t ymd, char out[11]);
/*
 * Today's date (UTC) as YYYYMMDD: the day rates are looked up for.  In a
 * test build (-DWM_TESTING) only, the file named by WM_TEST_DATE_FILE, when
 * set and holding "YYYY-MM-DD", overrides the clock (read on every call, so
 * a test moves a running shard's day by rewriting the file).
 */
uint32_t refdata_today(void);
/* The newest effective_from / as_of date of any VAT or excise row, YYYYMMDD
 * (an as_of of YYYY or YYYY-MM counts as its first day). */
uint32_t refdata_newest(const struct refdata *rd);
/*
 * The VAT region of a delivery postal code in `country` (fixed table in
 * refdata.c: PT Madeira/Azores, ES Canarias/Ceuta/Melilla, DE Buesingen/
 * Heligoland): the region code, or "" for the mainland (also for a postal
 * code the table does not name).  NULL when the postal code is malformed
 * for a country the table covers (digits expected).
 */
const char *refdata_region_of_postal(const char *country, const char *postal);

/* HS 2022 subheading (WCO heading 22.04; EU CN chapter 22) of a wine of
 * `category` in a container of volume_ul: 220410 sparkling; other wine
 * (still, fortified/liqueur) 220421 <= 2 l, 220422 <= 10 l, else 220429. */
const char *refdata_hs_code(int category, int64_t volume_ul);

/* ---- staleness ----------------------------------------------------------- */
#define RD_DEFAULT_MAX_AGE_DAYS 365   /* --ref-max-age-days default */
#define RD_MAX_MAX_AGE_DAYS 3650
/* The configured age (days, 1..RD_MAX_MAX_AGE_DAYS) past which the newest
 * VAT/excise figure makes the version stale. */
void refdata_set_max_age_days(uint32_t days);
/* Whole days from the version's newest figure (refdata_newest) to `today`
 * (YYYYMMDD); negative when the newest figure is in the future. */
int64_t refdata_age_days(const struct refdata *rd, uint32_t today);
/* 1 when refdata_age_days(rd, today) > the configured maximum. */
int refdata_is_stale(const struct refdata *rd, uint32_t today);
/* Prometheus gauges of the current version (for /metrics):
 * wm_reference_data_age_days, wm_reference_data_max_age_days,
 * wm_reference_data_stale (0/1). */
struct buf;
void refdata_metrics(struct buf *out);

#endif
