/*
 * wine_match.c -- dedup at ingest (spec 2.7): the keys of a wine, the
 * indexes that map each key to its wine, and the tier resolution that
 * POST /v1/wines and POST /v1/wines/match share.
 *
 * A row of the wine table is one vintage + format SKU (spec 2.2: "a wine
 * has many vintage + format variants").  The keys, and what they identify:
 *
 *  tier 1  unit GTIN-14 (wid_gtin_parse, 14-digit form).  A GTIN names one
 *          format of one wine, usually one vintage.  A case GTIN-14
 *          (indicator 1-8) resolves to the unit it groups (GS1: indicator +
 *          the unit's first 12 digits + check), so "a case of 6" and "the
 *          bottle" find the same wine; that derivation assumes the GS1
 *          convention, which the standard does not force, so a match found
 *          only through a case scores a little lower (0.95 vs 1.0).
 *          A GTIN that hits a wine of ANOTHER vintage or volume is not a
 *          match but a conflict (producers do reuse barcodes across
 *          vintages): ingest answers 409, match answers `candidate`.
 *  tier 2  LWIN.  LWIN-7 names the wine, LWIN-11 the wine-vintage, LWIN-16
 *          (format-level key, the spec's "+ case = 16") the SKU.  The
 *          wine's LWIN-7 is combined with its vintage (or NV, Liv-ex code
 *          1000) and bottle size in ml to build its LWIN-16 and LWIN-11
 *          whatever length was given (an LWIN-18's case count is dropped:
 *          a case of 6 and of 12 are the same SKU).  LWIN-16 equal =>
 *          matched (0.98).  An incoming LWIN-11 without a volume matches
 *          when exactly one SKU of that wine-vintage exists (0.90); several,
 *          or a hit in another format, make a `candidate` (0.60); an
 *          LWIN-7 alone (no vintage) only ever makes a candidate (0.50).
 *  tier 3  natural key producer|cuvee|vintage-or-nv|ml|country
 *          (wid_natural_key: slugs, NV spellings and volume units
 *          unified).  Equal => matched (0.90), unless both wines carry
 *          LWINs naming different wines (a conflict).  Same producer and
 *          cuvee but another vintage, format or country => `candidate`
 *          (0.50).
 *
 * Tiers run 1 -> 2 -> 3; the first match wins, a candidate never stops a
 * later tier from matching.  Tier 4 (label image, manual review) is
 * review.c: a candidate at ingest opens a review an operator decides.
 *
 * Indexes (t->ext): hash indexes for the unique keys (unit GTIN, LWIN-16,
 * slug, medusa_product_id) whose key bytes live in the row's key block;
 * ordered indexes for prefix walks (natural key: exact and "same producer
 * and cuvee"; LWIN-11/7; and the list filters producer, status, country,
 * each key suffixed with the wine id so that they are unique and walk in
 * creation order).  Uniqueness is enforced by the handlers before commit
 * (wine_key_owner); the index functions replace rather than fail, and
 * remove a key only when it still points at the row being removed, so a
 * replay can never abort on them.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/catalogue/wine.h"

const char *const wine_result_names[] = {"new", "candidate", "matched", "candidate", "pending_review", NULL};

/* Confidence of each outcome, 0..WINE_CONF_ONE (scale 4). */
enum {
	CONF_GTIN_UNIT = 10000,
	CONF_GTIN_CASE = 9500,
	CONF_LWIN16 = 9800,
	CONF_LWIN11_ONLY = 9000,
	CONF_NATURAL_KEY = 9000,
	CONF_LWIN11_OTHER = 6000,
	CONF_LWIN7 = 5000,
	CONF_NK_PREFIX = 5000,
	CONF_CONFLICT = 3000,
};

struct wine_ext {
	struct hidx by_slug, by_unit, by_l16, by_medusa;
	struct oidx by_nk;       /* natural key -> wine (unique) */
	struct oidx by_l11;      /* LWIN-11 or LWIN-7, NUL, id */
	struct oidx by_producer; /* producer id, NUL, id */
	struct oidx by_status;   /* status name, NUL, id */
	struct oidx by_country;  /* country, NUL, id */
};

static struct wine_ext *ext(const struct table *t) { return t->ext; }
static struct wine_ext *sext(struct shard *sh) { return ext(&sh->tables[REC_T_WINE]); }

int wine_indexes_init(struct table *t)
{
	struct wine_ext *e = calloc(1, sizeof(*e));
	if (!e)
		return -1;
	hidx_init(&e->by_slug);
	hidx_init(&e->by_unit);
	hidx_init(&e->by_l16);
	hidx_init(&e->by_medusa);
	oidx_init(&e->by_nk);
	/* the suffixed keys (text NUL id, list_keys): tail-keyed (index.h oidx_init_tail) */
	oidx_init_tail(&e->by_l11);
	oidx_init_tail(&e->by_producer);
	oidx_init_tail(&e->by_status);
	oidx_init_tail(&e->by_country);
	t->ext = e;
	return 0;
}

void wine_indexes_fini(struct table *t)
{
	struct wine_ext *e = ext(t);
	hidx_free(&e->by_slug);
	hidx_free(&e->by_unit);
	hidx_free(&e->by_l16);
	hidx_free(&e->by_medusa);
	oidx_free(&e->by_nk);
	oidx_free(&e->by_l11);
	oidx_free(&e->by_producer);
	oidx_free(&e->by_status);
	oidx_free(&e->by_country);
	free(e);
	t->ext = NULL;
}

/* text NUL id into out (>= IDX_MAX_KEY + 1 bytes); 0 length if too long. */
static uint32_t suffixed(const char *text, size_t tl, const struct row *r, uint8_t *out)
{
	if (tl + 1 + r->id_len > IDX_MAX_KEY)
		return 0;
	memcpy(out, text, tl);
	out[tl] = 0;
	memcpy(out + tl + 1, r->id, r->id_len);
	return (uint32_t)(tl + 1 + r->id_len);
}

/* The suffixed keys of a wine: [0] producer, [1] status, [2] country, [3] l11. */
static unsigned list_keys(const struct wine *w, uint8_t k[4][IDX_MAX_KEY + 1], uint32_t len[4])
{
	const char *st = wine_status_names[w->status < WINE_N_STATUS ? w->status : 0];
	len[0] = suffixed(w->producer_id, strlen(w->producer_id), &w->row, k[0]);
	len[1] = suffixed(st, strlen(st), &w->row, k[1]);
	len[2] = w->country[0] ? suffixed(w->country, 2, &w->row, k[2]) : 0;
	len[3] = w->l11.len ? suffixed(wine_key(w, w->l11), w->l11.len, &w->row, k[3]) : 0;
	return 4;
}

static int hset(struct hidx *h, const struct wine *w, struct wine_keyref k)
{
	return k.len ? hidx_set(h, wine_key(w, k), k.len, (void *)w) : 0;
}

static void hdel(struct hidx *h, const struct wine *w, const char *key, uint32_t len)
{
	if (len && hidx_get(h, key, len) == w)
		hidx_del(h, key, len);
}

int wine_index_add(struct table *t, struct row *r)
{
	struct wine_ext *e = ext(t);
	struct wine *w = (struct wine *)r;
	if (hset(&e->by_slug, w, w->slug) || hset(&e->by_l16, w, w->l16) || hset(&e->by_medusa, w, w->medusa))
		return -1;
	for (unsigned i = 0; i < w->n_gtins; i++)
		if (hidx_set(&e->by_unit, wine_key(w, w->units) + i * WID_GTIN_LEN, WID_GTIN_LEN, w))
			return -1;
	if (w->nk.len && oidx_set(&e->by_nk, wine_key(w, w->nk), w->nk.len, w))
		return -1;
	uint8_t k[4][IDX_MAX_KEY + 1];
	uint32_t len[4];
	struct oidx *ix[4] = {&e->by_producer, &e->by_status, &e->by_country, &e->by_l11};
	for (unsigned i = 0; i < list_keys(w, k, len); i++)
		if (len[i] && oidx_set(ix[i], k[i], len[i], w))
			return -1;
	return 0;
}

void wine_index_del(struct table *t, struct row *r)
{
	struct wine_ext *e = ext(t);
	struct wine *w = (struct wine *)r;
	hdel(&e->by_slug, w, wine_key(w, w->slug), w->slug.len);
	hdel(&e->by_l16, w, wine_key(w, w->l16), w->l16.len);
	hdel(&e->by_medusa, w, wine_key(w, w->medusa), w->medusa.len);
	for (unsigned i = 0; i < w->n_gtins; i++)
		hdel(&e->by_unit, w, wine_key(w, w->units) + i * WID_GTIN_LEN, WID_GTIN_LEN);
	if (w->nk.len && oidx_get(&e->by_nk, wine_key(w, w->nk), w->nk.len) == w)
		oidx_del(&e->by_nk, wine_key(w, w->nk), w->nk.len);
	uint8_t k[4][IDX_MAX_KEY + 1];
	uint32_t len[4];
	struct oidx *ix[4] = {&e->by_producer, &e->by_status, &e->by_country, &e->by_l11};
	for (unsigned i = 0; i < list_keys(w, k, len); i++)
		if (len[i])
			oidx_del(ix[i], k[i], len[i]);
}

const struct wine *wine_by_slug(struct shard *sh, const char *slug, size_t len)
{
	return len <= IDX_MAX_KEY ? hidx_get(&sext(sh)->by_slug, slug, (uint32_t)len) : NULL;
}

const struct wine *wine_by_medusa(struct shard *sh, const char *id, size_t len)
{
	return len <= IDX_MAX_KEY ? hidx_get(&sext(sh)->by_medusa, id, (uint32_t)len) : NULL;
}

void wine_list_indexes(struct shard *sh, struct wine_lists *out)
{
	struct wine_ext *e = sext(sh);
	out->by_producer = &e->by_producer;
	out->by_status = &e->by_status;
	out->by_country = &e->by_country;
}

/* ---- keys ------------------------------------------------------------------ */

/* Whole millilitres of a volume, 0 when it is not a whole number of ml an
 * LWIN can carry. */
static unsigned whole_ml(int64_t ul)
{
	if (ul <= 0 || ul % WID_UL_PER_ML || ul / WID_UL_PER_ML > WID_LWIN_BOTTLE_ML_MAX)
		return 0;
	return (unsigned)(ul / WID_UL_PER_ML);
}

/* "slug(producer)|slug(cuvee)|" into out, "" when the producer has no slug. */
static void nk_prefix(const char *producer, const char *cuvee, char *out)
{
	char p[WID_NK_PART_MAX + 1], q[WID_NK_PART_MAX + 1];
	size_t np = 0, nq = 0;
	out[0] = 0;
	if (wid_slug(producer, strlen(producer), p, sizeof(p), &np) != WID_OK || !np)
		return;
	if (cuvee && wid_slug(cuvee, strlen(cuvee), q, sizeof(q), &nq) != WID_OK)
		return;
	memcpy(out, p, np);
	out[np] = '|';
	memcpy(out + np + 1, q, nq);
	out[np + 1 + nq] = '|';
	out[np + 2 + nq] = 0;
}

void wine_keys_of(const struct wine_in *in, const char *producer_name, const char *country,
		  struct wine_keys *k)
{
	memset(k, 0, sizeof(*k));
	for (unsigned i = 0; i < in->n_gtins; i++) {
		const struct wid_gtin *g = &in->gtins[i];
		struct wid_gtin u;
		if (g->kind == WID_GTIN_CASE && wid_gtin_unit_of_case(g, &u) == WID_OK) {
			memcpy(k->units[k->n_units], u.digits, WID_GTIN_LEN + 1);
			k->via_case[k->n_units] = 1;
		} else if (g->kind == WID_GTIN_UNIT) {
			memcpy(k->units[k->n_units], g->digits, WID_GTIN_LEN + 1);
		} else {
			continue;
		}
		int dup = 0;
		for (unsigned j = 0; j < k->n_units && !dup; j++)
			dup = !strcmp(k->units[j], k->units[k->n_units]);
		if (!dup)
			k->n_units++;
	}
	if (in->has_lwin) {
		struct wid_lwin parts = in->lwin;
		parts.vintage = in->vintage == WINE_VINTAGE_UNSET ? WID_VINTAGE_NONE : in->vintage;
		parts.bottle_ml = whole_ml(in->volume_ul);
		if (wid_lwin_build(&parts, WID_LWIN16_LEN, k->l16, sizeof(k->l16)) != WID_OK)
			k->l16[0] = 0;
		if (wid_lwin_build(&parts, WID_LWIN11_LEN, k->l11, sizeof(k->l11)) != WID_OK)
			memcpy(k->l11, parts.wine, WID_LWIN7_LEN + 1);
	}
	if (!producer_name || !producer_name[0])
		return;
	const char *cc = in->country[0] ? in->country : country;
	nk_prefix(producer_name, in->cuvee, k->nk_prefix);
	if (in->vintage == WINE_VINTAGE_UNSET || !in->volume_ul || !cc || !cc[0])
		return;
	struct wid_nk nk = {producer_name, strlen(producer_name), in->cuvee, in->cuvee ? strlen(in->cuvee) : 0,
			    in->vintage, in->volume_ul, cc, 2};
	size_t n;
	if (wid_natural_key(&nk, k->nk, sizeof(k->nk), &n) != WID_OK)
		k->nk[0] = 0;
}

/* ---- resolution --------------------------------------------------------------- */

static void outcome(struct wine_match *m, enum wine_result r, enum wine_tier t, int64_t conf,
		    const struct wine *w)
{
	m->result = r;
	m->tier = t;
	m->confidence = conf;
	m->wine = w;
}

/* Does the stored wine contradict the incoming one on vintage or volume? */
static const char *contradiction(const struct wine_in *in, const struct wine *w)
{
	if (in->vintage != WINE_VINTAGE_UNSET && w->vintage != WINE_VINTAGE_UNSET && in->vintage != w->vintage)
		return "vintage";
	if (in->volume_ul && w->volume_ul && in->volume_ul != w->volume_ul)
		return "volume_in_liters";
	return NULL;
}

/* Tier 1: every unit GTIN that hits must hit the same wine. 1 if decided. */
static int tier_gtin(struct shard *sh, const struct wine_in *in, const struct wine_keys *k, struct wine_match *m)
{
	const struct wine *hit = NULL;
	int only_case = 1;
	for (unsigned i = 0; i < k->n_units; i++) {
		const struct wine *w = hidx_get(&sext(sh)->by_unit, k->units[i], WID_GTIN_LEN);
		if (!w)
			continue;
		if (hit && hit != w) {
			outcome(m, WR_CONFLICT, TIER_GTIN, CONF_CONFLICT, hit);
			snprintf(m->why, sizeof(m->why), "the GTINs name two different wines (%.*s and %.*s)",
				 (int)hit->row.id_len, hit->row.id, (int)w->row.id_len, w->row.id);
			return 1;
		}
		hit = w;
		only_case &= k->via_case[i];
	}
	if (!hit)
		return 0;
	const char *what = contradiction(in, hit);
	if (what) {
		outcome(m, WR_CONFLICT, TIER_GTIN, CONF_CONFLICT, hit);
		snprintf(m->why, sizeof(m->why), "a GTIN of wine %.*s, whose %s differs", (int)hit->row.id_len,
			 hit->row.id, what);
		return 1;
	}
	outcome(m, WR_MATCHED, TIER_GTIN, only_case ? CONF_GTIN_CASE : CONF_GTIN_UNIT, hit);
	return 1;
}

/* Tier 2. 1 if matched; a candidate is recorded and 0 returned. */
static int tier_lwin(struct shard *sh, const struct wine_in *in, const struct wine_keys *k, struct wine_match *m)
{
	if (k->l16[0]) {
		const struct wine *w = hidx_get(&sext(sh)->by_l16, k->l16, WID_LWIN16_LEN);
		if (w) {
			outcome(m, WR_MATCHED, TIER_LWIN, CONF_LWIN16, w);
			return 1;
		}
	}
	if (!k->l11[0])
		return 0;
	/* an LWIN-11 walks its own entries; an LWIN-7 every vintage of the wine */
	size_t pl = strlen(k->l11);
	uint8_t prefix[WID_LWIN11_LEN + 1];
	memcpy(prefix, k->l11, pl);
	prefix[pl] = 0;
	if (pl == WID_LWIN11_LEN)
		pl++;
	struct oidx_iter it;
	const struct wine *first = NULL;
	unsigned n = 0;
	for (int ok = oidx_seek_ge(&sext(sh)->by_l11, prefix, (uint32_t)pl, &it); ok && n < 2; ok = oidx_next(&it)) {
		uint32_t kl;
		const uint8_t *key = oidx_iter_key(&it, &kl);
		if (kl < pl || memcmp(key, prefix, pl))
			break;
		if (!first)
			first = oidx_iter_val(&it);
		n++;
	}
	if (!n)
		return 0;
	if (strlen(k->l11) == WID_LWIN11_LEN && !in->volume_ul && n == 1) {
		outcome(m, WR_MATCHED, TIER_LWIN, CONF_LWIN11_ONLY, first);
		return 1;
	}
	if (m->result == WR_NEW)
		outcome(m, WR_CANDIDATE, TIER_LWIN, strlen(k->l11) == WID_LWIN11_LEN ? CONF_LWIN11_OTHER : CONF_LWIN7,
			first);
	return 0;
}

/* Tier 3. 1 if decided (matched or conflict). */
static int tier_nk(struct shard *sh, const struct wine_in *in, const struct wine_keys *k, struct wine_match *m)
{
	struct wine_ext *e = sext(sh);
	if (k->nk[0]) {
		const struct wine *w = oidx_get(&e->by_nk, k->nk, (uint32_t)strlen(k->nk));
		if (w) {
			if (in->has_lwin && w->l11.len && memcmp(wine_key(w, w->l11), in->lwin.wine, WID_LWIN7_LEN)) {
				outcome(m, WR_CONFLICT, TIER_NATURAL_KEY, CONF_CONFLICT, w);
				snprintf(m->why, sizeof(m->why),
					 "the natural key names wine %.*s, whose LWIN names another wine",
					 (int)w->row.id_len, w->row.id);
				return 1;
			}
			outcome(m, WR_MATCHED, TIER_NATURAL_KEY, CONF_NATURAL_KEY, w);
			return 1;
		}
	}
	if (!k->nk_prefix[0] || m->result != WR_NEW)
		return 0;
	size_t pl = strlen(k->nk_prefix);
	struct oidx_iter it;
	if (oidx_seek_ge(&e->by_nk, k->nk_prefix, (uint32_t)pl, &it)) {
		uint32_t kl;
		const char *key = oidx_iter_key(&it, &kl);
		if (kl >= pl && !memcmp(key, k->nk_prefix, pl))
			outcome(m, WR_CANDIDATE, TIER_NATURAL_KEY, CONF_NK_PREFIX, oidx_iter_val(&it));
	}
	return 0;
}

void wine_resolve(struct shard *sh, const struct wine_in *in, const struct wine_keys *k, struct wine_match *m)
{
	memset(m, 0, sizeof(*m));
	outcome(m, WR_NEW, TIER_NONE, 0, NULL);
	if (tier_gtin(sh, in, k, m))
		return;
	if (tier_lwin(sh, in, k, m))
		return;
	tier_nk(sh, in, k, m);
}

const struct wine *wine_key_owner(struct shard *sh, const struct wine_keys *k, const struct wine *self,
				  const char **what)
{
	struct wine_ext *e = sext(sh);
	const struct wine *w;
	for (unsigned i = 0; i < k->n_units; i++)
		if ((w = hidx_get(&e->by_unit, k->units[i], WID_GTIN_LEN)) && w != self) {
			*what = "gtin";
			return w;
		}
	if (k->l16[0] && (w = hidx_get(&e->by_l16, k->l16, WID_LWIN16_LEN)) && w != self) {
		*what = "lwin";
		return w;
	}
	if (k->nk[0] && (w = oidx_get(&e->by_nk, k->nk, (uint32_t)strlen(k->nk))) && w != self) {
		*what = "natural_key";
		return w;
	}
	return NULL;
}
