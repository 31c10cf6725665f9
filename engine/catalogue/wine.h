/*
 * wine.h -- the canonical wine record (spec 2.2): its typed view, the
 * validated input, the dedup keys and the entry points shared by
 * wine.c (table, routes, ingest, publish), wine_validate.c (every field
 * rule), wine_match.c (tiers 1-3 and their indexes) and extid.c (the
 * crosswalk).  The why of each lives at the top of those files.
 */
#ifndef WM_WINE_H
#define WM_WINE_H

#include <stddef.h>
#include <stdint.h>

#include "engine/edge/api.h"
#include "engine/storage/id.h"
#include "engine/catalogue/producer.h"
#include "engine/storage/shard.h"
#include "engine/storage/table.h"
#include "engine/catalogue/wine_ident.h"

/* ---- enums (names in wine_validate.c, in this order) --------------------- */

enum wine_status { WS_DRAFT, WS_PUBLISHED, WS_ARCHIVED, WINE_N_STATUS };
enum wine_colour { WC_RED, WC_WHITE, WC_ROSE, WC_ORANGE, WINE_N_COLOUR };
enum wine_category {
	WCAT_WINE, WCAT_SPARKLING, WCAT_QUALITY_SPARKLING, WCAT_SEMI_SPARKLING, WCAT_FORTIFIED,
	WCAT_DESSERT, WCAT_MUST, WCAT_DEALCOHOLISED, WCAT_AROMATIC_QUALITY_SPARKLING,
	WCAT_AERATED_SPARKLING, WCAT_AERATED_SEMI_SPARKLING, WCAT_PARTIALLY_DEALCOHOLISED,
	WCAT_NEW_WINE, WCAT_RAISINED_GRAPES, WCAT_OVERRIPE_GRAPES, WINE_N_CATEGORY
};
enum wine_quality { WQ_PDO, WQ_PGI, WQ_GI_NONE, WINE_N_QUALITY };

extern const char *const wine_status_names[];
extern const char *const wine_colour_names[];
extern const char *const wine_category_names[];
extern const char *const wine_dosage_names[];
extern const char *const wine_quality_names[];
extern const char *const wine_allergen_names[];
extern const char *const wine_certification_names[];

/* 1 if the category is one of EU Annex VII Part II categories 4-7 (sparkling,
 * quality sparkling, quality aromatic sparkling, aerated sparkling), whose
 * label must state the sugar content: dosage_class is then a particular. */
int wine_category_is_sparkling_4_7(int category);

/* ---- bounds (each tested at and past its edge) ----------------------------- */

#define WINE_UNSET 0xff
#define WINE_VINTAGE_UNSET (-1)
#define WINE_MAX_TITLE 300
#define WINE_MAX_SLUG 120
#define WINE_SLUG_SUFFIX_MAX 99      /* "-2" .. "-99" tried when a derived slug is taken */
#define WINE_MAX_NAME 200            /* cuvee, label_name, designation, names of things */
#define WINE_MAX_MEDUSA 100
#define WINE_MAX_ADDRESS 500
#define WINE_MAX_LOT 64
#define WINE_MAX_INGREDIENTS 4000
#define WINE_MAX_URL 500
#define WINE_MAX_DESCRIPTION 20000
#define WINE_MAX_PROFILE 2000
#define WINE_MAX_ML_NAMES 16         /* languages of one multilingual name */
#define WINE_MAX_LANG 8              /* "pt-BR": 2-3 letters, optional -XX region */
#define WINE_MAX_GRAPES 20
#define WINE_MAX_VIVC 99999
#define WINE_MAX_PAIRINGS 32
#define WINE_MAX_GALLERY 32
#define WINE_MAX_RATINGS 32
#define WINE_MAX_GTINS 16
#define WINE_MAX_HS 13               /* "2204.21.79.11": 4 digits then up to 3 ".dd" groups */
#define WINE_DEFAULT_HS "2204.21.79"
#define WINE_Q_MAX 100               /* bytes of a title search */

/* Exact decimals: value x 10^scale in an int64, never a double. */
#define WINE_ABV_SCALE 2             /* 12.5 % vol -> 1250 */
#define WINE_ABV_MAX 2200            /* 22 % vol (spec 8) */
#define WINE_PCT_SCALE 2             /* grape share, nv base share */
#define WINE_PCT_MAX 10000           /* 100 % */
#define WINE_ENERGY_SCALE 2
#define WINE_ENERGY_KJ_MAX 400000    /* 4000 kJ / 100 ml: far above any wine (~300) */
#define WINE_ENERGY_KCAL_MAX 100000  /* 1000 kcal / 100 ml */
#define WINE_NUTRIENT_MAX 10000      /* 100 g / 100 ml */
#define WINE_SCORE_SCALE 2
#define WINE_SCORE_MAX 100000        /* a rating scale of at most 1000 points */
#define WINE_CONF_SCALE 4            /* confidence 0-1 -> 0-10000 */
#define WINE_CONF_ONE 10000

/* ---- fields of the input, in document order ------------------------------- */

enum wine_field {
	WF_TITLE, WF_SLUG, WF_PRODUCER, WF_CUVEE, WF_LABEL_NAME, WF_MEDUSA,
	WF_VINTAGE, WF_IS_NV, WF_NV_PCT,
	WF_COLOUR, WF_CATEGORY, WF_DOSAGE,
	WF_ABV, WF_VOLUME, WF_HS_CODE,
	WF_COUNTRY, WF_REGION, WF_SUB_REGION, WF_APPELLATION, WF_DESIGNATION, WF_QUALITY, WF_GRAPES,
	WF_BOTTLER, WF_IMPORTER, WF_LOT, WF_ALLERGENS, WF_INGREDIENTS, WF_ENERGY_KJ, WF_ENERGY_KCAL,
	WF_E_LABEL, WF_NUTRITION,
	WF_CERTS,
	WF_DESCRIPTION, WF_AROMA, WF_PALATE, WF_FOOD, WF_MAIN_IMAGE, WF_GALLERY,
	WF_RATINGS,
	WF_GTIN, WF_GTINS, WF_LWIN,
	WF_STATUS,
	WF_COUNT
};

/* The member name of field f ("title", ...), "?" out of range. */
const char *wine_field_name(int f);
/* Members of a stored wine that no request may set. */
extern const char *const wine_readonly_fields[];

/* What validation makes of a wine object (request body or stored document).
 * Pointers point into the parsed JSON, which must outlive this. */
struct wine_in {
	const struct json_value *f[WF_COUNT]; /* members present (null counts as absent) */
	const char *title;
	const char *slug;                     /* given slug, NULL if none */
	const char *producer_id;              /* producer as an id ... */
	const struct json_value *producer_obj; /* ... or as an inline object */
	const char *cuvee;
	const char *medusa;
	int vintage;                          /* year, WID_NV, or WINE_VINTAGE_UNSET */
	int64_t nv_pct;                       /* -1 unset */
	uint8_t colour, category, dosage, quality, status; /* WINE_UNSET when absent */
	int64_t abv;                          /* -1 unset */
	int64_t volume_ul;                    /* 0 unset */
	char country[3];
	char hs_code[WINE_MAX_HS + 1];
	uint32_t allergens;                   /* bit per wine_allergen_names entry */
	struct wid_gtin gtins[WINE_MAX_GTINS]; /* normalised, as given (cases stay cases) */
	unsigned n_gtins;
	struct wid_lwin lwin;
	int has_lwin;
	const char *lwin_text;
};

/* Validation context: errors go to c (may be NULL: decoding a stored
 * document) and are counted in n_bad either way. */
struct wine_vctx {
	struct api_ctx *c;
	unsigned n_bad;
	int stored;                           /* a stored document: read-only members allowed */
};

/*
 * Validate a wine object: every member known, every member's type, bounds
 * and allowed values, the cross-field rules (vintage xor non-vintage,
 * grape shares <= 100 %, LWIN vintage and size agree with vintage and
 * volume, ...).  Every failing field is recorded, not just the first.
 * Does not look anything up (producer, media): wine_check_refs does.
 * Returns the number of failures (0 = valid).
 */
unsigned wine_validate(struct wine_vctx *v, const struct json_value *obj, struct wine_in *in);

/* ---- the typed row ----------------------------------------------------- */

struct wine_keyref {
	uint16_t off, len;
};

struct wine {
	struct row row;
	uint8_t status, colour, category, dosage;
	uint8_t n_gtins, n_regions;
	int16_t vintage;              /* year, WID_NV, or WINE_VINTAGE_UNSET */
	int32_t abv;                  /* hundredths of % vol; -1 unset */
	int64_t volume_ul;            /* 0 unset */
	char country[3];
	char producer_id[ID_MAX_LEN];
	char created_by[ID_MAX_LEN];  /* entity that created it ("platform" for operators) */
	uint32_t tail_off;            /* offset of the ,"created_by" member in the document */
	char *keys;                   /* the derived strings below, one allocation */
	struct wine_keyref slug;      /* unique URL key */
	struct wine_keyref search;    /* folded title for q */
	struct wine_keyref nk;        /* tier-3 natural key ("" if not computable) */
	struct wine_keyref regions;   /* slugs of region names, NUL-separated */
	struct wine_keyref units;     /* n_gtins unit GTIN-14s, 14 bytes each (tier 1) */
	struct wine_keyref l16;       /* LWIN-16 (tier 2, exact) */
	struct wine_keyref l11;       /* LWIN-11, or LWIN-7 when the vintage is unknown */
	struct wine_keyref medusa;
};

static inline const char *wine_key(const struct wine *w, struct wine_keyref k) { return w->keys + k.off; }

const struct wine *wine_get(struct shard *sh, const char *id, size_t len);
/* table_prefetch of the wine id (its stage 0, then 1): before wine_get of
 * several ids in a row. */
void wine_prefetch(struct shard *sh, const char *id, size_t len, int stage);

/* Read-path filter: published and archived wines are visible to every
 * reader; drafts to the platform, their creator and the partner linked to
 * their producer.  Writes are open to that same set for every status. */
int wine_visible(const struct api_ctx *c, const struct wine *w);

/* wine_visible's question for a publishable (storefront) key: does channel
 * `channel_id` have a live listing over any offer of wine `wine_id`?  1 or
 * 0.  Listings are the supply layer, above the catalogue, so the answer is
 * bound where the layers are assembled (engine/routes.c, to
 * listing_channel_has_wine) and the catalogue does not include supply. */
extern int (*const wine_channel_lists)(struct shard *sh, const char *channel_id, const char *wine_id,
				       size_t wine_len);
int wine_writable(const struct api_ctx *c, const struct wine *w);

/* ---- dedup (wine_match.c) ----------------------------------------------- */

enum wine_tier { TIER_NONE = 0, TIER_GTIN = 1, TIER_LWIN = 2, TIER_NATURAL_KEY = 3, TIER_LABEL_REVIEW = 4 };
/* WR_PENDING: the keys lead to a wine the caller may not read; the
 * submission waits in the review queue (wine.c, wine_ingest). */
enum wine_result { WR_NEW = 0, WR_CANDIDATE, WR_MATCHED, WR_CONFLICT, WR_PENDING };
extern const char *const wine_result_names[];

#define WINE_NK_PREFIX_CAP (2 * WID_NK_PART_MAX + 3)

/* Every dedup key of one wine (incoming or stored). */
struct wine_keys {
	char units[WINE_MAX_GTINS][WID_GTIN_LEN + 1]; /* unit GTIN-14 of each GTIN */
	uint8_t via_case[WINE_MAX_GTINS];              /* derived from a case GTIN-14 */
	unsigned n_units;
	char l16[WID_LWIN16_LEN + 1];                  /* "" if not computable */
	char l11[WID_LWIN11_LEN + 1];                  /* LWIN-11, or LWIN-7 without vintage; "" none */
	char nk[WID_NK_CAP];                           /* "" if not computable */
	char nk_prefix[WINE_NK_PREFIX_CAP];            /* "producer|cuvee|", "" if no producer */
};

struct wine_match {
	enum wine_result result;
	enum wine_tier tier;
	int64_t confidence;                            /* WINE_CONF_SCALE */
	const struct wine *wine;                       /* matched / candidate row, or NULL */
	char why[160];                                 /* for a conflict: what contradicts */
};

/*
 * Keys of a validated input: units from its GTINs (a case resolves to its
 * unit), LWIN-16/11 from the LWIN with the vintage and volume, the natural
 * key from producer_name, cuvee, vintage or NV, volume and country.
 */
void wine_keys_of(const struct wine_in *in, const char *producer_name, const char *country,
		  struct wine_keys *k);

/*
 * Resolve tiers 1 -> 2 -> 3 against the catalogue (no writes).  `in` is
 * used for contradiction checks (a GTIN of a wine of another vintage or
 * volume is a conflict, not a match).
 */
void wine_resolve(struct shard *sh, const struct wine_in *in, const struct wine_keys *k,
		  struct wine_match *m);

/* The wine other than `self` that already holds one of k's unique keys
 * (unit GTIN, LWIN-16, natural key), with which one in *what; NULL if none. */
const struct wine *wine_key_owner(struct shard *sh, const struct wine_keys *k, const struct wine *self,
				  const char **what);

/* Secondary indexes of the wine table (wine_match.c owns them). */
int wine_indexes_init(struct table *t);
void wine_indexes_fini(struct table *t);
int wine_index_add(struct table *t, struct row *r);
void wine_index_del(struct table *t, struct row *r);
const struct wine *wine_by_slug(struct shard *sh, const char *slug, size_t len);
const struct wine *wine_by_medusa(struct shard *sh, const char *id, size_t len);
struct wine_lists {
	const struct oidx *by_producer, *by_status, *by_country;
};
void wine_list_indexes(struct shard *sh, struct wine_lists *out);

/* ---- ingest (wine.c) ---------------------------------------------------- */

struct wine_ingest_result {
	int status;                   /* 201 created, 200 matched, 202 pending review, else the error status */
	const char *code;             /* problem code when status >= 400 */
	char detail[200];
	struct wine_match match;
	char wine_id[ID_MAX_LEN];
	unsigned n_enriched;          /* members a match added to the existing wine */
	char enriched[512];           /* their names as JSON strings, comma-separated */
	char review_id[ID_MAX_LEN];   /* 202: the review the submission waits in */
};

/*
 * Ingest one wine body as the caller c->who (c->sh the shard; no HTTP is
 * touched: field errors go to c->errs, the outcome to *out): validate, resolve
 * tiers 1-3, then either enrich the matched wine (missing members filled,
 * never overwritten; new identifiers added) with a wine.matched event, or
 * create the wine (and an inline producer) with wine.created -- one
 * transaction, committed before return.  When the keys lead to a wine the
 * caller may not read (another entity's draft), nothing of it is changed or
 * revealed: the submission is stored in a review for the platform (202,
 * result pending_review, no id, no tier), keeping dedup's promise of one
 * canonical row.  Used by POST /v1/wines and by the catalogue benchmark.
 * Returns out->status.
 */
int wine_ingest(struct api_ctx *c, const struct json_value *body, struct wine_ingest_result *out);

/*
 * Enrich `w` with `body` (an ingest body, already validated once) as the
 * tier-1..4 enrichment does: members w lacks are filled, nothing is
 * overwritten, and a wine.matched event with `m` is added -- all into the
 * OPEN transaction (the caller commits).  Returns 200, or the error status
 * with code/detail in *out.  review.c uses it to confirm a submission.
 */
int wine_enrich(struct api_ctx *c, const struct wine *w, const struct json_value *body, const struct wine_match *m,
		struct wine_ingest_result *out);

/*
 * Tier 4 confirmed by an operator (review.c): `dup` and `into` are the same
 * wine.  Adds to the OPEN transaction: `into` filled with the descriptive
 * members of `dup` it lacks (the tier 1-3 enrichment: nothing overwritten;
 * identifiers, slug and medusa_product_id stay on `dup`), a wine.matched
 * event {wine_id, match {matched, tier 4, confidence 1, enriched[]},
 * merged: dup's id}, and `dup` archived with merged_into = into's id
 * (wine.archived).  Neither pointer may be used after the commit.
 * 0, or -1 with *code and detail (409 wine_archived / duplicate_wine /
 * identifier_conflict, else a 413 or 500 code); the caller aborts.
 */
int wine_merge_duplicate(struct api_ctx *c, const struct wine *dup, const struct wine *into, const char **code,
			 char *detail, size_t dlen);

/* The match endpoint's work, without HTTP: validate and resolve (no writes). */
int wine_match_body(struct api_ctx *c, const struct json_value *body, struct wine_match *m);

/* ---- crosswalk (extid.c) ------------------------------------------------- */

enum extid_source {
	XS_GTIN, XS_LWIN, XS_APP_WINE_ID, XS_APP_VINTAGE_ID, XS_SEARCH_WINE_ID, XS_CELLAR_IWINE,
	XS_RETAIL_PRODUCT_ID, XS_VIVC_VARIETY_NUMBER, XS_EAMBROSIA_GI_ID, XS_EAMBROSIA_GI_NAME,
	EXTID_N_SOURCES
};
#define EXTID_MAX_VALUE 200

/*
 * Add crosswalk rows for the wine's identifiers given at ingest (source
 * gtin / lwin, confidence 1) to the OPEN transaction, skipping those the
 * wine already has.  0 or -1.
 */
int extid_put_identifiers(struct api_ctx *c, const char *wine_id, const struct wine_in *in);

/*
 * Add a GTIN or the LWIN (member "gtin" / "lwin", value already validated)
 * to the wine's document in the OPEN transaction: 0 added, 1 already
 * there, -1 refused with *code and detail (a 409: another wine holds it,
 * the wine has another LWIN, or it contradicts the wine's vintage/volume).
 */
int wine_add_identifier(struct api_ctx *c, const struct wine *w, const char *member, const char *value,
			const char **code, char *detail, size_t dlen);

extern const struct route wine_routes[];
extern const struct route extid_routes[];

/* Write a wine's document for the caller: the stored document, without the
 * internal created_by member unless the caller is platform/creator; extra
 * (a JSON member text such as "\"match\":{...}", may be NULL) appended. */
void wine_emit_doc(struct api_ctx *c, struct jw *w, const struct wine *wn, const char *extra);

/*
 * The canonical document of a validated input with fixed assigned members
 * (id and producer as given, slug the given one or "wine", status draft
 * unless given, fixed timestamps, created_by platform): what the fuzz
 * target and the unit tests round-trip.  0 or -1 (too large).
 */
int wine_canonical_doc(const struct wine_in *in, const char *id, const char *producer_id, struct buf *out);

/* Write a fixed-point decimal without trailing zeros (12.50 -> 12.5). */
void wine_jw_decimal(struct jw *w, int64_t v, unsigned scale);

/*
 * Tier 4 (spec 2.7): an ingest that ends in `candidate` or in a wine the
 * sender may not read opens a manual review.  The review queue sits above
 * the wines it compares (review.c reads and merges them), so the two calls
 * are bound where the layers are assembled (engine/routes.c, to
 * review_open and review_open_submission) and this file includes nothing
 * of it.  Contracts: review.h.
 */
extern int (*const wine_review_open)(struct api_ctx *c, const char *wine_id, const struct wine_match *m,
				     const char *label_media_id);
extern int (*const wine_review_open_submission)(struct api_ctx *c, const struct wine_match *m, const char *body,
						size_t body_len, char review_id[ID_MAX_LEN]);

#endif
