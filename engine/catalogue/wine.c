/*
 * wine.c -- the canonical wine (spec 2.2, 2.7, 3.3, 4.3): the table, the
 * stored document, the read-path filter, ingest with dedup, PATCH, the
 * publish gate, the match endpoint and the lists.
 *
 * Representation.  The typed struct wine holds what the engine computes
 * on: status, producer, country, vintage, colour, category, ABV (fixed
 * point), volume (microlitres), the dedup keys, slug, folded title for
 * search, creator.  Everything descriptive (terroir names, compliance
 * block, storytelling, ratings, media references) lives only in the
 * canonical JSON document, which is what GET returns.  Both are made from
 * the document by the same validator (wine_validate.c), live and on replay.
 * The document's members come in one fixed order (the field table), with
 * exact decimals rewritten canonically (12.50 -> 12.5, "75cl" -> 0.75),
 * GTINs in their 14-digit form, hs_code defaulted, then the members the
 * service assigns: slug, natural_key, status, created_at, updated_at,
 * published_at, and last created_by -- which only the platform and the
 * creator see (the member is cut from the document for everyone else,
 * see wine_emit_doc).
 *
 * Read-path filter (spec 5, DESIGN 7).  Published and archived wines are
 * visible to every caller holding read:wines; a draft only to the
 * platform, the entity that created it and the partner linked to its
 * producer (the estate).  Invisible rows are omitted from lists (a
 * predicate while walking the index, so they never fill a page or count
 * toward the quota) and answer 404 on detail reads.  Writes (PATCH,
 * publish, external-ids POST) are open to the same set whatever the
 * status; anybody else gets the 404 a missing wine gets.  Ingest is the
 * exception by design: a body that matches an existing wine enriches it
 * whoever sends it (the catalogue is shared and dedup must not fork it);
 * enrichment only fills members the wine lacks and never overwrites.  A
 * caller who may not see the matched draft gets {id, status, match} only.
 *
 * Status (spec 3.3 leaves transitions open; the table below is the rule):
 *   draft -> published    POST /v1/wines/{id}/publish, when the gate passes
 *   draft -> archived     PATCH {"status": "archived"}
 *   published -> archived PATCH {"status": "archived"}
 * Nothing leaves archived: an archived wine is read-only (PATCH, publish,
 * crosswalk writes are 409 wine_archived; a match is reported but does not
 * enrich it).  Publishing a published wine is a 409 already_published
 * (retries use Idempotency-Key).  A published wine stays publishable: a
 * PATCH that would fail the gate is refused with the gate's errors.
 *
 * Publish gate: the label particulars of spec 2.2 as a table (gate[]), each
 * one checked and EACH missing one listed in errors[].  Decisions: provenance
 * = country, plus designation when the quality scheme is PDO/PGI; an
 * importer is required when the wine's country is outside the EU (it is
 * then imported into the EU); allergens must name sulphites (the spec's
 * "sulphites" particular; a wine under 10 mg/l has no such statement and
 * cannot be published here -- a known limitation); ingredients and energy
 * may be given on the record or through e_label_url (spec wording).
 *
 * Identifiers (gtin/gtins/lwin) are set at ingest and added through the
 * crosswalk (POST /v1/wines/{id}/external-ids), never changed by PATCH:
 * the crosswalk rows and the dedup indexes must not drift apart.
 */
#include "engine/catalogue/wine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/edge/fields.h"
#include "engine/base/iso.h"
#include "engine/edge/key.h"
#include "engine/base/log.h"
#include "engine/storage/image.h"
#include "engine/storage/resources.h"

#define TAIL_MEMBER ",\"created_by\":"

/* Status moves: [from][to] = how (0 = never). */
enum { VIA_NONE = 0, VIA_PATCH = 1, VIA_PUBLISH = 2 };
static const uint8_t status_moves[WINE_N_STATUS][WINE_N_STATUS] = {
	[WS_DRAFT] = {[WS_PUBLISHED] = VIA_PUBLISH, [WS_ARCHIVED] = VIA_PATCH},
	[WS_PUBLISHED] = {[WS_ARCHIVED] = VIA_PATCH},
	[WS_ARCHIVED] = {0},
};

/* EU member states (ISO 3166-1 alpha-2; Greece is GR): a wine from
 * anywhere else is imported into the EU and names its importer. */
static const char eu_countries[][3] = {"AT", "BE", "BG", "HR", "CY", "CZ", "DK", "EE", "FI",
				       "FR", "DE", "GR", "HU", "IE", "IT", "LV", "LT", "LU",
				       "MT", "NL", "PL", "PT", "RO", "SK", "SI", "ES", "SE"};

static int in_eu(const char *cc)
{
	for (size_t i = 0; i < sizeof(eu_countries) / sizeof(eu_countries[0]); i++)
		if (!strcmp(eu_countries[i], cc))
			return 1;
	return 0;
}

/* ---- the assigned members of a document ---------------------------------- */

struct wine_meta {
	char id[ID_MAX_LEN];
	char slug[WINE_MAX_SLUG + 1];
	char nk[WID_NK_CAP];
	uint8_t status;
	char producer_id[ID_MAX_LEN];
	char created_by[ID_MAX_LEN];
	char created_at[32], updated_at[32], published_at[32];
	char merged_into[ID_MAX_LEN]; /* archived as a duplicate of this wine (tier 4), "" if not */
};

static void meta_load(const struct json_value *doc, const struct wine_in *in, struct wine_meta *m)
{
	memset(m, 0, sizeof(*m));
	fld_doc_str(doc, "id", m->id, sizeof(m->id));
	fld_doc_str(doc, "slug", m->slug, sizeof(m->slug));
	fld_doc_str(doc, "natural_key", m->nk, sizeof(m->nk));
	fld_doc_str(doc, "created_by", m->created_by, sizeof(m->created_by));
	fld_doc_str(doc, "created_at", m->created_at, sizeof(m->created_at));
	fld_doc_str(doc, "updated_at", m->updated_at, sizeof(m->updated_at));
	fld_doc_str(doc, "published_at", m->published_at, sizeof(m->published_at));
	fld_doc_str(doc, "merged_into", m->merged_into, sizeof(m->merged_into));
	m->status = in->status == WINE_UNSET ? WS_DRAFT : in->status;
	if (in->producer_id)
		snprintf(m->producer_id, sizeof(m->producer_id), "%s", in->producer_id);
}

/* ---- the canonical document -------------------------------------------- */

void wine_jw_decimal(struct jw *w, int64_t v, unsigned scale)
{
	while (scale && v % 10 == 0) {
		v /= 10;
		scale--;
	}
	jw_fixed(w, v, scale);
}

static void write_member(struct jw *w, int f, const struct wine_in *in, const struct wine_meta *m)
{
	const struct json_value *x = in->f[f];
	int64_t n;
	switch (f) {
	case WF_SLUG: case WF_IS_NV: case WF_GTIN: case WF_STATUS:
		return; /* written elsewhere */
	case WF_PRODUCER:
		jw_kstr(w, "producer", m->producer_id);
		return;
	case WF_VINTAGE:
		if (in->vintage == WINE_VINTAGE_UNSET)
			return;
		if (in->vintage == WID_NV)
			jw_knull(w, "vintage");
		else
			jw_kint(w, "vintage", in->vintage);
		jw_kbool(w, "is_non_vintage", in->vintage == WID_NV);
		return;
	case WF_VOLUME:
		if (in->volume_ul) {
			jw_key(w, "volume_in_liters");
			wine_jw_decimal(w, in->volume_ul, 6);
		}
		return;
	case WF_HS_CODE:
		jw_kstr(w, "hs_code", in->hs_code);
		return;
	case WF_GTINS:
		if (!in->n_gtins)
			return;
		jw_key(w, "gtins");
		jw_arr_begin(w);
		for (unsigned i = 0; i < in->n_gtins; i++)
			jw_str(w, in->gtins[i].digits);
		jw_arr_end(w);
		return;
	case WF_LWIN:
		if (in->has_lwin)
			jw_kstr(w, "lwin", in->lwin_text);
		return;
	default:
		break;
	}
	if (!x)
		return;
	jw_key(w, wine_field_name(f));
	if (f == WF_ABV || f == WF_NV_PCT || f == WF_ENERGY_KJ || f == WF_ENERGY_KCAL) {
		unsigned scale = f == WF_ABV ? WINE_ABV_SCALE : f == WF_NV_PCT ? WINE_PCT_SCALE : WINE_ENERGY_SCALE;
		if (!json_to_fixed(x, scale, &n)) {
			wine_jw_decimal(w, n, scale);
			return;
		}
	}
	jw_value(w, x);
}

/* The whole document: id, the input members in table order, then the
 * assigned members, created_by last. */
static void wine_write(struct jw *w, const struct wine_in *in, const struct wine_meta *m)
{
	jw_obj_begin(w);
	jw_kstr(w, "id", m->id);
	for (int f = 0; f < WF_COUNT; f++)
		write_member(w, f, in, m);
	jw_kstr(w, "slug", m->slug);
	if (m->nk[0])
		jw_kstr(w, "natural_key", m->nk);
	else
		jw_knull(w, "natural_key");
	jw_kstr(w, "status", wine_status_names[m->status]);
	jw_kstr(w, "created_at", m->created_at);
	jw_kstr(w, "updated_at", m->updated_at);
	if (m->published_at[0])
		jw_kstr(w, "published_at", m->published_at);
	else
		jw_knull(w, "published_at");
	if (m->merged_into[0])
		jw_kstr(w, "merged_into", m->merged_into);
	jw_kstr(w, "created_by", m->created_by);
	jw_obj_end(w);
}

int wine_canonical_doc(const struct wine_in *in, const char *id, const char *producer_id, struct buf *out)
{
	struct wine_meta m;
	memset(&m, 0, sizeof(m));
	snprintf(m.id, sizeof(m.id), "%s", id);
	snprintf(m.producer_id, sizeof(m.producer_id), "%s", producer_id);
	snprintf(m.slug, sizeof(m.slug), "%s", in->slug ? in->slug : "wine");
	m.status = in->status == WINE_UNSET ? WS_DRAFT : in->status;
	snprintf(m.created_by, sizeof(m.created_by), "%s", KEY_PLATFORM_ENTITY);
	snprintf(m.created_at, sizeof(m.created_at), "2026-01-01T00:00:00.000Z");
	memcpy(m.updated_at, m.created_at, sizeof(m.created_at));
	struct jw w;
	jw_init(&w, out);
	wine_write(&w, in, &m);
	return w.err ? -1 : 0;
}

/* ---- the table ------------------------------------------------------------ */

/* Folded title for q: its slug, or ASCII-lower-cased when it cannot be
 * slugged (other scripts).  Also used on the query. */
static size_t fold_search(const char *s, size_t n, char *out, size_t cap)
{
	size_t len = 0;
	if (wid_slug(s, n, out, cap, &len) == WID_OK && len)
		return len;
	len = n < cap - 1 ? n : cap - 1;
	for (size_t i = 0; i < len; i++)
		out[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
	out[len] = 0;
	return len;
}

/* Slugs of a multilingual name, NUL-separated, appended at out; count. */
static unsigned region_slugs(const struct json_value *x, char *out, size_t cap, size_t *used)
{
	unsigned n = 0;
	uint32_t cnt = x->type == JSON_OBJECT ? x->len : 1;
	for (uint32_t i = 0; i < cnt; i++) {
		const struct json_value *s = x->type == JSON_OBJECT ? &x->u.members[i].value : x;
		size_t len = 0;
		if (s->type != JSON_STRING || *used + s->len + 1 > cap ||
		    wid_slug(s->u.str, s->len, out + *used, cap - *used, &len) != WID_OK || !len)
			continue;
		*used += len + 1;
		n++;
	}
	return n;
}

struct keys_builder {
	char buf[WINE_MAX_SLUG + 1 + WINE_MAX_TITLE + 1 + WID_NK_CAP + WINE_MAX_ML_NAMES * (WINE_MAX_NAME + 1) +
		 WINE_MAX_GTINS * WID_GTIN_LEN + WID_LWIN16_LEN + 1 + WID_LWIN11_LEN + 1 + WINE_MAX_MEDUSA + 1];
	size_t used;
};

static struct wine_keyref kb_add(struct keys_builder *b, const char *s, size_t n, int nul)
{
	struct wine_keyref r = {(uint16_t)b->used, (uint16_t)n};
	memcpy(b->buf + b->used, s, n);
	b->used += n;
	if (nul)
		b->buf[b->used++] = 0;
	return r;
}

static int wine_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct wine *w = (struct wine *)r;
	struct wine_vctx v = {NULL, 0, 1};
	struct wine_in in;
	if (wine_validate(&v, doc, &in) || !in.producer_id)
		return -1;
	struct wine_meta m;
	meta_load(doc, &in, &m);
	if (!m.slug[0] || !m.created_by[0])
		return -1;
	w->status = m.status;
	w->colour = in.colour;
	w->category = in.category;
	w->dosage = in.dosage;
	w->vintage = (int16_t)in.vintage;
	w->abv = (int32_t)in.abv;
	w->volume_ul = in.volume_ul;
	memcpy(w->country, in.country, 3);
	snprintf(w->producer_id, sizeof(w->producer_id), "%s", m.producer_id);
	snprintf(w->created_by, sizeof(w->created_by), "%s", m.created_by);
	const char *tail = NULL;
	for (const char *p = r->doc; (p = strstr(p, TAIL_MEMBER)); p++)
		tail = p;
	if (!tail)
		return -1;
	w->tail_off = (uint32_t)(tail - r->doc);
	struct wine_keys k;
	wine_keys_of(&in, NULL, NULL, &k);
	static _Thread_local struct keys_builder b; /* per thread: recovery decodes wines off the loop */
	b.used = 0;
	char tmp[WINE_MAX_TITLE + 1];
	w->slug = kb_add(&b, m.slug, strlen(m.slug), 1);
	size_t tl = fold_search(in.title, strlen(in.title), tmp, sizeof(tmp));
	w->search = kb_add(&b, tmp, tl, 1);
	w->nk = kb_add(&b, m.nk, strlen(m.nk), 1);
	size_t start = b.used;
	w->n_regions = in.f[WF_REGION] ? (uint8_t)region_slugs(in.f[WF_REGION], b.buf, sizeof(b.buf), &b.used) : 0;
	w->regions = (struct wine_keyref){(uint16_t)start, (uint16_t)(b.used - start)};
	w->units = (struct wine_keyref){(uint16_t)b.used, (uint16_t)(k.n_units * WID_GTIN_LEN)};
	for (unsigned i = 0; i < k.n_units; i++)
		kb_add(&b, k.units[i], WID_GTIN_LEN, 0);
	w->n_gtins = (uint8_t)k.n_units;
	w->l16 = kb_add(&b, k.l16, strlen(k.l16), 1);
	w->l11 = kb_add(&b, k.l11, strlen(k.l11), 1);
	w->medusa = in.medusa ? kb_add(&b, in.medusa, strlen(in.medusa), 1) : kb_add(&b, "", 0, 1);
	w->keys = malloc(b.used);
	if (!w->keys)
		return -1;
	memcpy(w->keys, b.buf, b.used);
	return 0;
}

static void wine_release(struct table *t, struct row *r)
{
	(void)t;
	free(((struct wine *)r)->keys);
}

/* ---- snapshot images (engine/storage/image.h) ------------------------------ */

/*
 * Why wines have images.  Decoding a wine is the costliest decode of a
 * snapshot: its document (~2.5 KB) parsed whole and validated, then the
 * keys derived from it (slug, folded title, natural key, region slugs,
 * unit GTINs, LWINs).  perf/bench_scale load: ~3 us of CPU per wine, the
 * 100,000 wines of its 1.7M rows ~17 % of the snapshot's time.  A wine's
 * image carries its typed fields and its keys blob as decode laid it out;
 * the document is still copied into the row (wines keep theirs).
 *
 * Layout (WINE_IMAGE_V1): u8 version; u8 status, colour, category,
 * dosage, n_gtins, n_regions; i64 vintage, abv, volume_ul, tail_off;
 * str country, producer_id, created_by; u16 (little-endian) the keys
 * blob's length, then its bytes.  The blob's references are not stored:
 * decode lays the blob out in a fixed order (wine_decode: slug, folded
 * title, natural key NUL-terminated; n_regions NUL-terminated region
 * slugs; n_gtins 14-digit unit GTINs; LWIN-16, LWIN-11 and medusa
 * NUL-terminated), so the reader walks it in that order and refuses an
 * image whose blob does not have exactly that shape.
 */
#define WINE_IMAGE_V1 1
#define WINE_KEYS_MAX sizeof(((struct keys_builder *)0)->buf)

/* The bytes of w's keys blob: up to medusa's NUL, the last it lays out. */
static size_t wine_keys_len(const struct wine *w) { return (size_t)w->medusa.off + w->medusa.len + 1u; }

static int wine_image(const struct row *r, struct buf *out)
{
	const struct wine *w = (const struct wine *)r;
	struct img_w iw = {out, 0};
	img_u8(&iw, WINE_IMAGE_V1);
	const unsigned small[] = {w->status, w->colour, w->category, w->dosage, w->n_gtins, w->n_regions};
	for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); i++)
		img_u8(&iw, small[i]);
	const int64_t num[] = {w->vintage, w->abv, w->volume_ul, w->tail_off};
	for (size_t i = 0; i < sizeof(num) / sizeof(num[0]); i++)
		img_i64(&iw, num[i]);
	img_str(&iw, w->country);
	img_str(&iw, w->producer_id);
	img_str(&iw, w->created_by);
	size_t kl = wine_keys_len(w);
	img_u8(&iw, (unsigned)(kl & 0xff));
	img_u8(&iw, (unsigned)(kl >> 8));
	img_put(&iw, w->keys, kl);
	return iw.err ? -1 : 0;
}

/* The next NUL-terminated string of the blob keys[0, len) from *pos, with
 * no NUL inside: its reference, *pos past its NUL; *bad set when there is
 * none (or when it is empty and must not be). */
static struct wine_keyref blob_str(const char *keys, size_t len, size_t *pos, int nonempty, int *bad)
{
	struct wine_keyref r = {(uint16_t)*pos, 0};
	const char *nul = *pos < len ? memchr(keys + *pos, 0, len - *pos) : NULL;
	if (!nul || (nonempty && nul == keys + *pos)) {
		*bad = 1;
		return r;
	}
	r.len = (uint16_t)(nul - (keys + *pos));
	*pos += r.len + 1u;
	return r;
}

static int digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

/* Walk w's keys blob (len bytes) in decode's order and set every
 * reference: 0, or -1 when the blob is not laid out that way. */
static int blob_refs(struct wine *w, size_t len)
{
	const char *k = w->keys;
	size_t pos = 0;
	int bad = 0;
	w->slug = blob_str(k, len, &pos, 1, &bad);
	w->search = blob_str(k, len, &pos, 0, &bad);
	w->nk = blob_str(k, len, &pos, 0, &bad);
	size_t start = pos;
	for (unsigned i = 0; i < w->n_regions && !bad; i++)
		blob_str(k, len, &pos, 1, &bad);
	w->regions = (struct wine_keyref){(uint16_t)start, (uint16_t)(pos - start)};
	size_t ul = (size_t)w->n_gtins * WID_GTIN_LEN;
	if (bad || w->n_gtins > WINE_MAX_GTINS || len - pos < ul || !digits(k + pos, ul))
		return -1;
	w->units = (struct wine_keyref){(uint16_t)pos, (uint16_t)ul};
	pos += ul;
	w->l16 = blob_str(k, len, &pos, 0, &bad);
	w->l11 = blob_str(k, len, &pos, 0, &bad);
	w->medusa = blob_str(k, len, &pos, 0, &bad);
	if (bad || pos != len)
		return -1;
	/* the LWINs as wine_keys_of makes them: digits, of their lengths */
	int l16_ok = w->l16.len == 0 || w->l16.len == WID_LWIN16_LEN,
	    l11_ok = w->l11.len == 0 || w->l11.len == WID_LWIN11_LEN || w->l11.len == WID_LWIN7_LEN;
	return l16_ok && l11_ok && digits(k + w->l16.off, w->l16.len) && digits(k + w->l11.off, w->l11.len) ? 0 : -1;
}

/* Does the document hold the tail member at off, and none after it (the
 * last one: where wine_decode finds it)? */
static int tail_at(const struct row *r, int64_t off)
{
	size_t tl = sizeof(TAIL_MEMBER) - 1;
	if (!r->doc || off < 0 || (uint64_t)off > r->doc_len || r->doc_len - (size_t)off < tl)
		return 0;
	const char *p = r->doc + off;
	return !memcmp(p, TAIL_MEMBER, tl) && !strstr(p + 1, TAIL_MEMBER);
}

/* An enum byte: one of n names, or WINE_UNSET where unset is allowed. */
static int enum_ok(unsigned v, unsigned n, int unset_ok) { return v < n || (unset_ok && v == WINE_UNSET); }

static unsigned names_count(const char *const *names)
{
	unsigned n = 0;
	while (names[n])
		n++;
	return n;
}

static int wine_from_image(struct table *t, struct row *r, const uint8_t *img, size_t len)
{
	(void)t;
	struct wine *w = (struct wine *)r;
	struct img_r rd = {img, img + len, 0};
	if (img_get_u8(&rd) != WINE_IMAGE_V1)
		return -1;
	uint8_t *small[] = {&w->status, &w->colour, &w->category, &w->dosage, &w->n_gtins, &w->n_regions};
	for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); i++)
		*small[i] = (uint8_t)img_get_u8(&rd);
	int64_t vintage = img_get_i64(&rd);
	int64_t abv = img_get_i64(&rd);
	w->volume_ul = img_get_i64(&rd);
	int64_t tail = img_get_i64(&rd);
	img_get_str(&rd, w->country, sizeof(w->country));
	img_get_str(&rd, w->producer_id, sizeof(w->producer_id));
	img_get_str(&rd, w->created_by, sizeof(w->created_by));
	size_t kl = img_get_u8(&rd);
	kl |= (size_t)img_get_u8(&rd) << 8;
	if (rd.bad || !enum_ok(w->status, WINE_N_STATUS, 0) || !enum_ok(w->colour, WINE_N_COLOUR, 1) ||
	    !enum_ok(w->category, WINE_N_CATEGORY, 1) || !enum_ok(w->dosage, names_count(wine_dosage_names), 1) ||
	    vintage < WINE_VINTAGE_UNSET || vintage > INT16_MAX || abv < -1 || abv > INT32_MAX || w->volume_ul < 0 ||
	    (w->country[0] && !iso_country_valid(w->country, strlen(w->country))) || !w->producer_id[0] ||
	    !w->created_by[0] || !tail_at(r, tail) || !kl || kl > WINE_KEYS_MAX)
		return -1;
	w->vintage = (int16_t)vintage;
	w->abv = (int32_t)abv;
	w->tail_off = (uint32_t)tail;
	w->keys = malloc(kl);
	if (!w->keys)
		return -1;
	img_get_bytes(&rd, w->keys, kl);
	if (img_done(&rd) || blob_refs(w, kl)) {
		free(w->keys);
		w->keys = NULL;
		return -1;
	}
	return 0;
}

#ifdef WM_TESTING
/* Test builds (table.c typed_check): the typed fields equal but for the
 * keys pointer, and the keys blobs byte-equal. */
static int wine_typed_same(const struct row *a, const struct row *b)
{
	const struct wine *x = (const struct wine *)a, *y = (const struct wine *)b;
	size_t head = sizeof(struct row), at = offsetof(struct wine, keys), past = at + sizeof(x->keys);
	return !memcmp((const char *)x + head, (const char *)y + head, at - head) &&
	       !memcmp((const char *)x + past, (const char *)y + past, sizeof(struct wine) - past) &&
	       !memcmp(x->keys, y->keys, wine_keys_len(x));
}
#endif

static int wine_init(struct table *t) { return wine_indexes_init(t); }
static void wine_fini(struct table *t) { wine_indexes_fini(t); }

const struct table_ops wine_table_ops = {
	.rec_table = REC_T_WINE,
	.name = "wine",
	.row_size = sizeof(struct wine),
	.decode = wine_decode,
	.decode_pure = 1, /* recovery may build its rows off the loop (table.h) */
	.image = wine_image,
	.from_image = wine_from_image,
#ifdef WM_TESTING
	.typed_same = wine_typed_same,
#endif
	.release = wine_release,
	.index_add = wine_index_add,
	.index_del = wine_index_del,
	.init = wine_init,
	.fini = wine_fini,
};

const struct wine *wine_get(struct shard *sh, const char *id, size_t len)
{
	return (const struct wine *)table_get(&sh->tables[REC_T_WINE], id, len);
}

void wine_prefetch(struct shard *sh, const char *id, size_t len, int stage)
{
	table_prefetch(&sh->tables[REC_T_WINE], id, len, stage);
}

/* ---- the read-path filter ------------------------------------------------ */

/* Platform, creator, or the partner linked to the wine's producer. */
static int wine_insider(const struct api_ctx *c, const struct wine *w)
{
	if (c->who.is_platform)
		return 1;
	const char *me = c->who.entity_id;
	if (!strcmp(w->created_by, me))
		return 1;
	const struct producer *p = producer_get(c->sh, w->producer_id, strlen(w->producer_id));
	return p && p->partner_id[0] && !strcmp(p->partner_id, me);
}

int wine_visible(const struct api_ctx *c, const struct wine *w)
{
	/* Channel scope (spec 5, listings): a publishable storefront key sees
	 * only wines with a live listing on its channel (none without one). */
	if (c->who.kind == KEY_PUBLISHABLE && !c->who.is_platform)
		return c->who.channel_id[0] && w->status != WS_DRAFT &&
		       wine_channel_lists(c->sh, c->who.channel_id, w->row.id, w->row.id_len);
	return w->status != WS_DRAFT || wine_insider(c, w);
}

int wine_writable(const struct api_ctx *c, const struct wine *w) { return wine_insider(c, w); }

void wine_emit_doc(struct api_ctx *c, struct jw *w, const struct wine *wn, const char *extra)
{
	int full = c->who.is_platform || !strcmp(wn->created_by, c->who.entity_id);
	size_t cut = full ? wn->row.doc_len - 1 : wn->tail_off;
	size_t el = extra ? strlen(extra) : 0;
	char *tmp = malloc(cut + el + 2);
	if (!tmp) {
		w->err = 1;
		return;
	}
	memcpy(tmp, wn->row.doc, cut);
	if (el) {
		tmp[cut] = ',';
		memcpy(tmp + cut + 1, extra, el);
	}
	size_t n = cut + (el ? el + 1 : 0);
	tmp[n++] = '}';
	jw_raw(w, tmp, n);
	free(tmp);
}

/* The wine of the path if the caller may see it (write: may write it);
 * otherwise a 404 is written and NULL returned. */
static const struct wine *wine_from_path(struct api_ctx *c, int write)
{
	const struct wine *w = c->n_params ? wine_get(c->sh, c->params[0].p, c->params[0].len) : NULL;
	if (w && (write ? wine_writable(c, w) : wine_visible(c, w)))
		return w;
	api_error(c, 404, "not_found", "no wine with this id");
	return NULL;
}

/* ---- references -------------------------------------------------------- */

static void check_media(struct api_ctx *c, const char *path, const struct json_value *x)
{
	const struct table *mt = &c->sh->tables[REC_T_MEDIA];
	/* a malformed id already has its media_id error: one error per field */
	if (mt->ops && x->type == JSON_STRING && id_valid(x->u.str, x->len, "med") &&
	    !table_get(mt, x->u.str, x->len))
		api_field_error(c, path, "exists", "no media asset with this id");
}

/* Media rows exist (when the media table is part of this build). */
static void check_refs(struct api_ctx *c, const struct wine_in *in)
{
	if (!c->sh)
		return;
	if (in->f[WF_MAIN_IMAGE])
		check_media(c, "main_image", in->f[WF_MAIN_IMAGE]);
	const struct json_value *g = in->f[WF_GALLERY];
	for (uint32_t i = 0; g && g->type == JSON_ARRAY && i < g->len; i++) {
		char p[32];
		snprintf(p, sizeof(p), "gallery[%u]", i);
		check_media(c, p, &g->u.items[i]);
	}
}

/* The producer of a validated input: an id that must exist (error
 * recorded), or an inline object resolved by slug without creating.
 * Fills name/country (for the natural key); *prod the row or NULL. */
static void producer_of(struct api_ctx *c, const struct wine_in *in, const struct producer **prod,
			char id[ID_MAX_LEN], char name[PRODUCER_MAX_NAME + 1], char country[3])
{
	*prod = NULL;
	id[0] = name[0] = country[0] = 0;
	if (in->producer_obj) {
		producer_resolve_inline(c, in->producer_obj, 0, prod, id, name, country);
		return;
	}
	if (!in->producer_id)
		return;
	const struct producer *p = c->sh ? producer_get(c->sh, in->producer_id, strlen(in->producer_id)) : NULL;
	if (!p) {
		if (c->sh)
			api_field_error(c, "producer", "exists", "no producer with this id");
		return;
	}
	*prod = p;
	snprintf(id, ID_MAX_LEN, "%s", in->producer_id);
	snprintf(name, PRODUCER_MAX_NAME + 1, "%s", p->name);
	memcpy(country, p->country, 3);
}

/* ---- merging ----------------------------------------------------------- */

enum merge_mode { MERGE_PATCH, MERGE_FILL };

static int is_input_field(const char *k)
{
	for (int f = 0; f < WF_COUNT; f++)
		if (!strcmp(wine_field_name(f), k))
			return 1;
	return 0;
}

static int is_gtin_member(const char *k) { return !strcmp(k, "gtin") || !strcmp(k, "gtins"); }

/* The GTINs of base and over together, each once (normalised), as "gtins". */
static unsigned write_gtin_union(struct jw *w, const struct json_value *base, const struct json_value *over)
{
	const struct json_value *src[4] = {json_get(base, "gtins"), json_get(base, "gtin"), json_get(over, "gtins"),
					   json_get(over, "gtin")};
	char seen[2 * WINE_MAX_GTINS + 2][WID_GTIN_LEN + 1];
	unsigned n = 0, from_base = 0;
	jw_key(w, "gtins");
	jw_arr_begin(w);
	for (int s = 0; s < 4; s++) {
		const struct json_value *x = src[s];
		if (!x)
			continue;
		uint32_t cnt = x->type == JSON_ARRAY ? x->len : 1;
		for (uint32_t i = 0; i < cnt; i++) {
			const struct json_value *e = x->type == JSON_ARRAY ? &x->u.items[i] : x;
			struct wid_gtin g;
			if (e->type != JSON_STRING || wid_gtin_parse(e->u.str, e->len, &g) != WID_OK) {
				jw_value(w, e); /* the validator reports it */
				continue;
			}
			int dup = 0;
			for (unsigned j = 0; j < n && !dup; j++)
				dup = !strcmp(seen[j], g.digits);
			if (dup || n >= sizeof(seen) / sizeof(seen[0]))
				continue;
			memcpy(seen[n++], g.digits, WID_GTIN_LEN + 1);
			if (s < 2)
				from_base++;
			jw_str(w, g.digits);
		}
	}
	jw_arr_end(w);
	return n - from_base;
}

/*
 * Write base merged with over.  PATCH (RFC 7386): over wins, null removes,
 * objects merge recursively.  FILL (enrichment): base wins, objects are
 * filled recursively, GTINs are united.  At the top level only input
 * members of base are kept (the assigned ones are rewritten later); every
 * member of over is kept so that the validator can refuse unknown ones.
 * Top-level members FILL added are counted in *filled and named in
 * names (comma-separated JSON strings, bounded).
 */
static void merge(struct jw *w, const struct json_value *base, const struct json_value *over, enum merge_mode mode,
		  int top, unsigned *filled, struct buf *names)
{
	jw_obj_begin(w);
	int gtins_done = 0;
	for (uint32_t i = 0; base && base->type == JSON_OBJECT && i < base->len; i++) {
		const struct json_member *bm = &base->u.members[i];
		if (top && !is_input_field(bm->key))
			continue;
		if (top && is_gtin_member(bm->key)) {
			if (!gtins_done && mode == MERGE_FILL) {
				unsigned added = write_gtin_union(w, base, over);
				if (added && filled) {
					(*filled)++;
					buf_printf(names, "%s\"gtins\"", names->len ? "," : "");
				}
				gtins_done = 1;
			} else if (mode == MERGE_PATCH && !json_get(over, bm->key)) {
				jw_key(w, bm->key);
				jw_value(w, &bm->value);
			}
			continue;
		}
		const struct json_value *ov = json_get(over, bm->key);
		if (mode == MERGE_PATCH && ov && ov->type == JSON_NULL)
			continue;
		jw_key(w, bm->key);
		if (ov && ov->type == JSON_OBJECT && bm->value.type == JSON_OBJECT)
			merge(w, &bm->value, ov, mode, 0, NULL, NULL);
		else
			jw_value(w, mode == MERGE_PATCH && ov ? ov : &bm->value);
	}
	for (uint32_t i = 0; over && over->type == JSON_OBJECT && i < over->len; i++) {
		const struct json_member *om = &over->u.members[i];
		if (json_get(base, om->key) && (!top || is_input_field(om->key)))
			continue;
		if (om->value.type == JSON_NULL)
			continue;
		if (top && mode == MERGE_FILL && is_gtin_member(om->key)) {
			if (!gtins_done) {
				unsigned added = write_gtin_union(w, base, over);
				if (added && filled) {
					(*filled)++;
					buf_printf(names, "%s\"gtins\"", names->len ? "," : "");
				}
				gtins_done = 1;
			}
			continue;
		}
		jw_key(w, om->key);
		jw_value(w, &om->value);
		if (top && filled && mode == MERGE_FILL) {
			(*filled)++;
			buf_printf(names, "%s\"%.40s\"", names->len ? "," : "", om->key);
		}
	}
	jw_obj_end(w);
}

/* Merge into text and parse it; NULL when too large (nothing written). */
static struct json_doc *merged_doc(const struct json_value *base, const struct json_value *over, enum merge_mode mode,
				   unsigned *filled, struct buf *names)
{
	struct buf out;
	buf_init(&out, REC_MAX_VAL);
	struct jw w;
	jw_init(&w, &out);
	merge(&w, base, over, mode, 1, filled, names);
	struct json_doc *d = w.err ? NULL : json_parse(out.data, out.len, NULL, NULL);
	buf_free(&out);
	return d;
}

/* ---- uniqueness ---------------------------------------------------------- */

/* Choose the slug: the given one (409 if another wine has it) or the slug
 * of the title, suffixed -2, -3, ... when taken.  0, or -1 with *code set. */
static int choose_slug(struct api_ctx *c, const struct wine_in *in, const struct wine *self, char *out,
		       const char **code, char *detail, size_t dlen)
{
	if (in->slug) {
		const struct wine *o = wine_by_slug(c->sh, in->slug, strlen(in->slug));
		if (o && o != self) {
			*code = "slug_taken";
			snprintf(detail, dlen, "another wine has the slug \"%s\"", in->slug);
			return -1;
		}
		snprintf(out, WINE_MAX_SLUG + 1, "%s", in->slug);
		return 0;
	}
	if (self) {
		memcpy(out, wine_key(self, self->slug), self->slug.len + 1);
		return 0;
	}
	char base[WINE_MAX_TITLE + 1];
	size_t n = 0;
	if (wid_slug(in->title, strlen(in->title), base, sizeof(base), &n) != WID_OK || !n)
		snprintf(base, sizeof(base), "wine"), n = 4;
	if (n > WINE_MAX_SLUG - 4)
		n = WINE_MAX_SLUG - 4;
	while (n && base[n - 1] == '-')
		n--;
	base[n] = 0;
	for (int i = 1; i <= WINE_SLUG_SUFFIX_MAX; i++) {
		if (i == 1)
			snprintf(out, WINE_MAX_SLUG + 1, "%.*s", (int)n, base);
		else
			snprintf(out, WINE_MAX_SLUG + 1, "%.*s-%d", (int)n, base, i);
		if (!wine_by_slug(c->sh, out, strlen(out)))
			return 0;
	}
	*code = "slug_taken";
	snprintf(detail, dlen, "the slugs derived from the title are all taken; give `slug`");
	return -1;
}

/* Unique keys (GTIN units, LWIN-16, natural key, medusa_product_id) held
 * by no other wine.  0, or -1 with code/detail. */
static int check_unique(struct api_ctx *c, const struct wine_in *in, const struct wine_keys *k,
			const struct wine *self, const char **code, char *detail, size_t dlen)
{
	const char *what = NULL;
	const struct wine *o = wine_key_owner(c->sh, k, self, &what);
	if (o) {
		*code = strcmp(what, "natural_key") ? "identifier_conflict" : "duplicate_wine";
		if (wine_visible(c, o)) /* never name a row the caller may not read */
			snprintf(detail, dlen, "wine %.*s already has this %s", (int)o->row.id_len, o->row.id, what);
		else
			snprintf(detail, dlen, "another wine already has this %s", what);
		return -1;
	}
	if (in->medusa) {
		o = wine_by_medusa(c->sh, in->medusa, strlen(in->medusa));
		if (o && o != self) {
			*code = "medusa_product_id_taken";
			if (wine_visible(c, o))
				snprintf(detail, dlen, "wine %.*s already has this medusa_product_id", (int)o->row.id_len,
					 o->row.id);
			else
				snprintf(detail, dlen, "another wine already has this medusa_product_id");
			return -1;
		}
	}
	return 0;
}

/* ---- the publish gate ---------------------------------------------------- */

struct gate_particular {
	const char *field;      /* where errors[] points */
	const char *particular; /* the label particular */
	int (*applies)(const struct wine_in *in);
	int (*present)(const struct wine_in *in);
};

static int always(const struct wine_in *in) { (void)in; return 1; }
static int has_category(const struct wine_in *in) { return in->f[WF_CATEGORY] != NULL; }
static int has_abv(const struct wine_in *in) { return in->abv >= 0; }
static int has_country(const struct wine_in *in) { return in->country[0] != 0; }
static int is_gi(const struct wine_in *in) { return in->quality == WQ_PDO || in->quality == WQ_PGI; }
static int has_designation(const struct wine_in *in) { return in->f[WF_DESIGNATION] != NULL; }
static int has_bottler(const struct wine_in *in) { return in->f[WF_BOTTLER] != NULL; }
static int imported(const struct wine_in *in) { return in->country[0] && !in_eu(in->country); }
static int has_importer(const struct wine_in *in) { return in->f[WF_IMPORTER] != NULL; }
static int has_volume(const struct wine_in *in) { return in->volume_ul > 0; }
static int has_lot(const struct wine_in *in) { return in->f[WF_LOT] != NULL; }
static int has_sulphites(const struct wine_in *in) { return (in->allergens & 1u) != 0; } /* [0] sulphites */
static int sparkling(const struct wine_in *in) { return wine_category_is_sparkling_4_7(in->category); }
static int has_dosage(const struct wine_in *in) { return in->f[WF_DOSAGE] != NULL; }
static int has_ingredients(const struct wine_in *in) { return in->f[WF_INGREDIENTS] || in->f[WF_E_LABEL]; }
/* kJ and kcal are two members: each is named when it is the one missing
 * (one row for both named energy_kj_per_100ml when only kcal was absent) */
static int has_energy_kj(const struct wine_in *in) { return in->f[WF_ENERGY_KJ] || in->f[WF_E_LABEL]; }
static int has_energy_kcal(const struct wine_in *in) { return in->f[WF_ENERGY_KCAL] || in->f[WF_E_LABEL]; }

/* Spec 2.2 "Label particulars that must be describable", in label order. */
static const struct gate_particular gate[] = {
	{"category", "category of the grapevine product", always, has_category},
	{"abv", "actual alcoholic strength", always, has_abv},
	{"country", "indication of provenance (country)", always, has_country},
	{"designation", "protected designation or indication named by the PDO/PGI", is_gi, has_designation},
	{"bottler", "bottler (name and address)", always, has_bottler},
	{"importer", "importer (the wine's country is outside the EU)", imported, has_importer},
	{"volume_in_liters", "nominal volume", always, has_volume},
	{"lot_number", "lot number", always, has_lot},
	{"allergens", "allergen statement naming sulphites", always, has_sulphites},
	{"dosage_class", "sugar content (sparkling categories 4-7)", sparkling, has_dosage},
	{"ingredients", "ingredients list (on the record or via e_label_url)", always, has_ingredients},
	{"energy_kj_per_100ml", "energy value in kJ per 100 ml (on the record or via e_label_url)", always,
	 has_energy_kj},
	{"energy_kcal_per_100ml", "energy value in kcal per 100 ml (on the record or via e_label_url)", always,
	 has_energy_kcal},
};

/* Record one field error per missing particular; returns how many. */
static unsigned gate_check(struct api_ctx *c, const struct wine_in *in)
{
	unsigned missing = 0;
	for (size_t i = 0; i < sizeof(gate) / sizeof(gate[0]); i++)
		if (gate[i].applies(in) && !gate[i].present(in)) {
			api_field_error(c, gate[i].field, "required_to_publish", "%s is a compulsory label particular",
					gate[i].particular);
			missing++;
		}
	return missing;
}

/* ---- writing a wine ------------------------------------------------------- */

static const char *scope_of(const struct api_ctx *c) { return c->who.is_platform ? NULL : c->who.entity_id; }

static void creator_of(const struct api_ctx *c, char out[ID_MAX_LEN])
{
	snprintf(out, ID_MAX_LEN, "%s", c->who.is_platform ? KEY_PLATFORM_ENTITY : c->who.entity_id);
}

/*
 * Add an event whose payload is the wine document `doc`, as the acting
 * entity would read it: without created_by unless it is the platform or
 * the creator (the estate publishing a negociant's wine does not learn who
 * created it from its own event stream).
 */
static int wine_event(struct api_ctx *c, const char *type, const struct wine_meta *m, const struct buf *doc)
{
	if (c->who.is_platform || !strcmp(m->created_by, c->who.entity_id))
		return txn_event(c->sh, type, scope_of(c), doc->data, doc->len);
	const char *tail = NULL;
	for (const char *p = doc->data; (p = memmem(p, doc->len - (size_t)(p - doc->data), TAIL_MEMBER,
						  sizeof(TAIL_MEMBER) - 1));
	     p++)
		tail = p;
	if (!tail)
		return -1;
	struct buf cut;
	buf_init(&cut, REC_MAX_VAL);
	int rc = buf_append(&cut, doc->data, (size_t)(tail - doc->data)) || buf_putc(&cut, '}') ||
		 txn_event(c->sh, type, scope_of(c), cut.data, cut.len);
	buf_free(&cut);
	return rc ? -1 : 0;
}

/* Build the document into doc and add it to the open transaction. */
static int put_wine(struct api_ctx *c, const struct wine_in *in, const struct wine_meta *m, struct buf *doc)
{
	struct jw w;
	jw_init(&w, doc);
	wine_write(&w, in, m);
	return w.err || txn_put(c->sh, REC_T_WINE, m->id, strlen(m->id), doc->data, doc->len) ? -1 : 0;
}

/* The buffer's bytes as a C string (NUL kept after len; "" on failure). */
static const char *buf_cstr(struct buf *b)
{
	if (buf_putc(b, 0))
		return "";
	b->len--;
	return b->data;
}

static void fail(struct wine_ingest_result *out, int status, const char *code, const char *detail)
{
	out->status = status;
	out->code = code;
	snprintf(out->detail, sizeof(out->detail), "%s", detail);
}

/* The match member text: {"result":..,"tier":..,"confidence":..,"wine_id":..}. */
static void match_json(struct buf *b, const struct wine_match *m, const char *enriched)
{
	struct jw w;
	jw_init(&w, b);
	jw_obj_begin(&w);
	jw_kstr(&w, "result", wine_result_names[m->result]);
	if (m->tier)
		jw_kint(&w, "tier", m->tier);
	else
		jw_knull(&w, "tier");
	jw_key(&w, "confidence");
	wine_jw_decimal(&w, m->confidence, WINE_CONF_SCALE);
	if (m->wine) {
		jw_key(&w, "wine_id");
		jw_strn(&w, m->wine->row.id, m->wine->row.id_len);
	} else {
		jw_knull(&w, "wine_id");
	}
	if (enriched) {
		jw_key(&w, "enriched");
		jw_arr_begin(&w);
		if (enriched[0])
			jw_raw(&w, enriched, strlen(enriched));
		jw_arr_end(&w);
	}
	jw_obj_end(&w);
}

/*
 * Tier 4 hook: a created wine that a tier found similar to an existing one
 * (result candidate) gets a manual-review entry in the same transaction,
 * with the new wine's main image as the label evidence (review.c).  Any
 * other result adds nothing.  0, or -1 (the transaction must be aborted).
 */
static int open_review(struct api_ctx *c, const struct wine_in *in, const struct wine_meta *m,
		       const struct wine_ingest_result *out)
{
	if (out->match.result != WR_CANDIDATE || !out->match.wine)
		return 0;
	const struct json_value *img = in->f[WF_MAIN_IMAGE];
	return wine_review_open(c, m->id, &out->match, img && img->type == JSON_STRING ? img->u.str : NULL);
}

/* Create: slug, uniqueness, inline producer, row, crosswalk, event. */
static int ingest_create(struct api_ctx *c, const struct wine_in *in, const struct wine_keys *k,
			 const char *producer_id, struct wine_ingest_result *out)
{
	struct wine_meta m;
	memset(&m, 0, sizeof(m));
	const char *code = NULL;
	if (choose_slug(c, in, NULL, m.slug, &code, out->detail, sizeof(out->detail)) ||
	    check_unique(c, in, k, NULL, &code, out->detail, sizeof(out->detail))) {
		out->status = 409;
		out->code = code;
		return out->status;
	}
	id_new(&c->sh->ids, "wine", m.id);
	snprintf(m.nk, sizeof(m.nk), "%s", k->nk);
	m.status = WS_DRAFT;
	creator_of(c, m.created_by);
	fmt_rfc3339_ms(m.created_at, wall_ms());
	memcpy(m.updated_at, m.created_at, sizeof(m.created_at));
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	txn_begin(c->sh);
	int bad = 0;
	snprintf(m.producer_id, sizeof(m.producer_id), "%s", producer_id);
	if (in->producer_obj && !producer_id[0]) {
		const struct producer *p;
		char name[PRODUCER_MAX_NAME + 1], cc[3];
		bad = producer_resolve_inline(c, in->producer_obj, 1, &p, m.producer_id, name, cc);
	}
	bad = bad || put_wine(c, in, &m, &doc) || extid_put_identifiers(c, m.id, in) ||
	      wine_event(c, "wine.created", &m, &doc) || open_review(c, in, &m, out) || !txn_commit(c->sh);
	buf_free(&doc);
	if (bad) {
		txn_abort(c->sh);
		fail(out, 413, "record_too_large", "the wine record is too large to store");
		return out->status;
	}
	snprintf(out->wine_id, sizeof(out->wine_id), "%s", m.id);
	out->status = 201;
	return 201;
}

int wine_enrich(struct api_ctx *c, const struct wine *w, const struct json_value *body, const struct wine_match *match,
		struct wine_ingest_result *out)
{
	memcpy(out->wine_id, w->row.id, w->row.id_len);
	out->wine_id[w->row.id_len] = 0;
	struct json_doc *stored = json_parse(w->row.doc, w->row.doc_len, NULL, NULL);
	if (!stored) {
		fail(out, 500, "corrupt_record", "the stored wine does not parse");
		return out->status;
	}
	struct buf names, doc, ev;
	buf_init(&names, 4096);
	buf_init(&doc, REC_MAX_VAL);
	buf_init(&ev, REC_MAX_VAL);
	struct json_doc *md = NULL;
	int archived = w->status == WS_ARCHIVED;
	unsigned filled = 0;
	struct wine_in in;
	struct wine_keys k;
	struct wine_meta m;
	const char *code = NULL;
	if (!archived) {
		md = merged_doc(json_root(stored), body, MERGE_FILL, &filled, &names);
		if (!md) {
			fail(out, 413, "record_too_large", "the enriched wine is too large");
			goto done;
		}
		struct wine_vctx v = {c, 0, 0};
		if (wine_validate(&v, json_root(md), &in)) {
			fail(out, 422, "validation_failed", "the enriched wine is invalid");
			goto done;
		}
		const struct producer *p = producer_get(c->sh, w->producer_id, strlen(w->producer_id));
		wine_keys_of(&in, p ? p->name : NULL, p ? p->country : NULL, &k);
		meta_load(json_root(stored), &in, &m);
		snprintf(m.nk, sizeof(m.nk), "%s", k.nk);
		if (check_unique(c, &in, &k, w, &code, out->detail, sizeof(out->detail))) {
			out->status = 409;
			out->code = code;
			goto done;
		}
	}
	out->n_enriched = filled;
	if (filled) {
		fmt_rfc3339_ms(m.updated_at, wall_ms());
		if (put_wine(c, &in, &m, &doc) || extid_put_identifiers(c, m.id, &in)) {
			fail(out, 413, "record_too_large", "the wine record is too large to store");
			goto done;
		}
	}
	/* event payload: {"wine_id", "match": {...}} */
	if (names.overflow || names.len >= sizeof(out->enriched))
		buf_reset(&names);
	snprintf(out->enriched, sizeof(out->enriched), "%s", buf_cstr(&names));
	buf_printf(&ev, "{\"wine_id\":\"%s\",\"match\":", out->wine_id);
	match_json(&ev, match, out->enriched);
	buf_puts(&ev, "}");
	if (ev.overflow || txn_event(c->sh, "wine.matched", scope_of(c), ev.data, ev.len)) {
		fail(out, 413, "record_too_large", "the wine record is too large to store");
		goto done;
	}
	out->status = 200;
done:
	json_doc_free(md);
	json_doc_free(stored);
	buf_free(&names);
	buf_free(&doc);
	buf_free(&ev);
	return out->status;
}

/* Enrich the matched wine (wine_enrich) in a transaction of its own. */
static int ingest_enrich(struct api_ctx *c, const struct json_value *body, struct wine_ingest_result *out)
{
	txn_begin(c->sh);
	if (wine_enrich(c, out->match.wine, body, &out->match, out) != 200 || !txn_commit(c->sh)) {
		txn_abort(c->sh);
		if (out->status == 200)
			fail(out, 413, "record_too_large", "the wine record is too large to store");
		return out->status;
	}
	/* the commit replaced the row: the old pointer is gone */
	out->match.wine = wine_get(c->sh, out->wine_id, strlen(out->wine_id));
	return out->status;
}

/*
 * The keys led to a wine the caller may not read: keep the submission in a
 * review for the platform (review.c) and answer 202 pending_review, naming
 * nothing of that wine.  Nothing else changes.
 */
static int ingest_pending(struct api_ctx *c, const struct json_value *body, struct wine_ingest_result *out)
{
	struct buf sub;
	buf_init(&sub, REC_MAX_VAL);
	struct jw w;
	jw_init(&w, &sub);
	jw_value(&w, body);
	txn_begin(c->sh);
	if (w.err || wine_review_open_submission(c, &out->match, sub.data, sub.len, out->review_id) ||
	    !txn_commit(c->sh)) {
		txn_abort(c->sh);
		fail(out, 413, "record_too_large", "the submission is too large to store");
	} else {
		out->status = 202;
	}
	buf_free(&sub);
	out->match = (struct wine_match){.result = WR_PENDING};
	return out->status;
}

/* Members of a duplicate that a tier-4 merge does not carry over: the
 * identifiers and unique keys stay on the archived row, which keeps
 * holding them in the unique indexes (moving them is not supported). */
static const char *const merge_kept_members[] = {"gtin", "gtins", "lwin", "slug", "medusa_product_id",
						 "status", "producer", NULL};

static int merge_kept(const char *k)
{
	for (int i = 0; merge_kept_members[i]; i++)
		if (!strcmp(merge_kept_members[i], k))
			return 1;
	return 0;
}

int wine_merge_duplicate(struct api_ctx *c, const struct wine *dup, const struct wine *into, const char **code,
			 char *detail, size_t dlen)
{
	if (dup->status == WS_ARCHIVED || into->status == WS_ARCHIVED) {
		*code = "wine_archived";
		snprintf(detail, dlen, "wine %.*s is archived", (int)(dup->status == WS_ARCHIVED ? dup : into)->row.id_len,
			 (dup->status == WS_ARCHIVED ? dup : into)->row.id);
		return -1;
	}
	struct json_doc *dd = json_parse(dup->row.doc, dup->row.doc_len, NULL, NULL);
	struct json_doc *id_ = json_parse(into->row.doc, into->row.doc_len, NULL, NULL);
	struct json_doc *over = NULL, *md = NULL;
	struct buf ob, names, doc, ev;
	buf_init(&ob, REC_MAX_VAL);
	buf_init(&names, 4096);
	buf_init(&doc, REC_MAX_VAL);
	buf_init(&ev, REC_MAX_VAL);
	int rc = -1;
	*code = "corrupt_record";
	snprintf(detail, dlen, "a stored wine does not decode");
	struct wine_in din, in;
	struct wine_vctx v = {NULL, 0, 1};
	if (!dd || !id_ || wine_validate(&v, json_root(dd), &din))
		goto out;
	/* the duplicate's descriptive input members, as an enrichment body */
	struct jw w;
	jw_init(&w, &ob);
	jw_obj_begin(&w);
	const struct json_value *dr = json_root(dd);
	for (uint32_t i = 0; i < dr->len; i++)
		if (is_input_field(dr->u.members[i].key) && !merge_kept(dr->u.members[i].key)) {
			jw_key(&w, dr->u.members[i].key);
			jw_value(&w, &dr->u.members[i].value);
		}
	jw_obj_end(&w);
	over = w.err ? NULL : json_parse(ob.data, ob.len, NULL, NULL);
	unsigned filled = 0;
	md = over ? merged_doc(json_root(id_), json_root(over), MERGE_FILL, &filled, &names) : NULL;
	v = (struct wine_vctx){NULL, 0, 0};
	if (!md || wine_validate(&v, json_root(md), &in)) {
		*code = "record_too_large";
		snprintf(detail, dlen, "the merged wine is too large or invalid");
		goto out;
	}
	const struct producer *p = producer_get(c->sh, into->producer_id, strlen(into->producer_id));
	struct wine_keys k;
	wine_keys_of(&in, p ? p->name : NULL, p ? p->country : NULL, &k);
	struct wine_meta m;
	meta_load(json_root(id_), &in, &m);
	snprintf(m.nk, sizeof(m.nk), "%s", k.nk);
	if (check_unique(c, &in, &k, into, code, detail, dlen))
		goto out;
	*code = "record_too_large";
	snprintf(detail, dlen, "the wine record is too large to store");
	if (filled) {
		fmt_rfc3339_ms(m.updated_at, wall_ms());
		if (put_wine(c, &in, &m, &doc))
			goto out;
	}
	/* wine.matched {wine_id, match{matched, tier 4, ...}, merged: the duplicate} */
	char enriched[sizeof(((struct wine_ingest_result *)0)->enriched)];
	if (names.overflow || names.len >= sizeof(enriched))
		buf_reset(&names);
	snprintf(enriched, sizeof(enriched), "%s", buf_cstr(&names));
	struct wine_match wm = {WR_MATCHED, TIER_LABEL_REVIEW, WINE_CONF_ONE, into, ""};
	buf_printf(&ev, "{\"wine_id\":\"%s\",\"match\":", m.id);
	match_json(&ev, &wm, enriched);
	buf_printf(&ev, ",\"merged\":\"%.*s\"}", (int)dup->row.id_len, dup->row.id);
	if (ev.overflow || txn_event(c->sh, "wine.matched", scope_of(c), ev.data, ev.len))
		goto out;
	/* archive the duplicate, recording what it was merged into */
	struct wine_meta dm;
	meta_load(dr, &din, &dm);
	dm.status = WS_ARCHIVED;
	snprintf(dm.merged_into, sizeof(dm.merged_into), "%s", m.id);
	fmt_rfc3339_ms(dm.updated_at, wall_ms());
	buf_reset(&doc);
	if (put_wine(c, &din, &dm, &doc) || wine_event(c, "wine.archived", &dm, &doc))
		goto out;
	rc = 0;
out:
	json_doc_free(md);
	json_doc_free(over);
	json_doc_free(id_);
	json_doc_free(dd);
	buf_free(&ob);
	buf_free(&names);
	buf_free(&doc);
	buf_free(&ev);
	return rc;
}

/* Validate a body and resolve its producer; 0, or -1 (errors in c). */
static int validate_body(struct api_ctx *c, const struct json_value *body, struct wine_in *in,
			 const struct producer **prod, char pid[ID_MAX_LEN], char pname[PRODUCER_MAX_NAME + 1],
			 char pcc[3])
{
	struct wine_vctx v = {c, 0, 0};
	wine_validate(&v, body, in);
	producer_of(c, in, prod, pid, pname, pcc);
	check_refs(c, in);
	return v.n_bad || c->n_errs ? -1 : 0;
}

int wine_ingest(struct api_ctx *c, const struct json_value *body, struct wine_ingest_result *out)
{
	memset(out, 0, sizeof(*out));
	struct wine_in in;
	const struct producer *prod;
	char pid[ID_MAX_LEN], pname[PRODUCER_MAX_NAME + 1], pcc[3];
	int rc = validate_body(c, body, &in, &prod, pid, pname, pcc);
	if (in.status != WINE_UNSET && in.status != WS_DRAFT) {
		api_field_error(c, "status", "read_only_on_create",
				"a new wine starts as draft; publish it with POST /v1/wines/{id}/publish");
		rc = -1;
	}
	if (rc) {
		fail(out, 422, "validation_failed", "one or more fields are invalid; see errors[]");
		return out->status;
	}
	struct wine_keys k;
	wine_keys_of(&in, pname, pcc, &k);
	wine_resolve(c->sh, &in, &k, &out->match);
	const struct wine *hidden = out->match.wine && !wine_visible(c, out->match.wine) ? out->match.wine : NULL;
	const char *what;
	const struct wine *owner = wine_key_owner(c->sh, &k, NULL, &what);
	if (!hidden && owner && !wine_visible(c, owner) && out->match.result != WR_MATCHED)
		hidden = owner; /* a unique key another entity's draft holds */
	if (hidden && out->match.result != WR_CANDIDATE) {
		out->match.wine = hidden;
		return ingest_pending(c, body, out);
	}
	if (out->match.result == WR_CONFLICT) {
		fail(out, 409, "identifier_conflict", out->match.why);
		return out->status;
	}
	if (out->match.result == WR_MATCHED)
		return ingest_enrich(c, body, out);
	rc = ingest_create(c, &in, &k, pid, out);
	if (hidden) /* similar to a hidden draft: the platform's review names it, the caller hears "new" */
		out->match = (struct wine_match){.result = WR_NEW};
	return rc;
}

int wine_match_body(struct api_ctx *c, const struct json_value *body, struct wine_match *m)
{
	struct wine_in in;
	const struct producer *prod;
	char pid[ID_MAX_LEN], pname[PRODUCER_MAX_NAME + 1], pcc[3];
	memset(m, 0, sizeof(*m));
	if (validate_body(c, body, &in, &prod, pid, pname, pcc))
		return -1;
	struct wine_keys k;
	wine_keys_of(&in, pname, pcc, &k);
	wine_resolve(c->sh, &in, &k, m);
	if (m->wine && !wine_visible(c, m->wine))
		*m = (struct wine_match){.result = WR_NEW}; /* as for a wine nobody has */
	return 0;
}

/* ---- handlers ------------------------------------------------------------ */

static void wines_create(struct api_ctx *c)
{
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	struct wine_ingest_result r;
	wine_ingest(c, body, &r);
	if (r.status == 422 && c->n_errs) {
		api_validation_failed(c);
		return;
	}
	if (r.status >= 400) {
		api_error(c, r.status, r.code, r.detail);
		return;
	}
	struct buf mb;
	buf_init(&mb, 64 * 1024);
	buf_puts(&mb, "\"match\":");
	size_t at = mb.len;
	/* created: new, or candidate naming the wine it resembles; 200: matched */
	match_json(&mb, &r.match, r.status == 200 ? r.enriched : NULL);
	c->rs->status = r.status;
	if (r.status == 202) {
		/* pending review: the review's id and the match, nothing else */
		jw_obj_begin(&c->w);
		jw_kstr(&c->w, "status", "pending_review");
		jw_kstr(&c->w, "review_id", r.review_id);
		jw_key(&c->w, "match");
		jw_raw(&c->w, mb.data + at, mb.len - at);
		jw_obj_end(&c->w);
	} else {
		const struct wine *w = wine_get(c->sh, r.wine_id, strlen(r.wine_id));
		wine_emit_doc(c, &c->w, w, buf_cstr(&mb));
	}
	buf_free(&mb);
}

static void wines_get(struct api_ctx *c)
{
	const struct wine *w = wine_from_path(c, 0);
	if (!w || api_read_row(c))
		return;
	c->rs->status = 200;
	wine_emit_doc(c, &c->w, w, NULL);
}

static void wines_match(struct api_ctx *c)
{
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	struct wine_match m;
	if (wine_match_body(c, body, &m)) {
		api_validation_failed(c);
		return;
	}
	c->rs->status = 200;
	match_json(&c->rs->body, &m, NULL);
}

/* Respond with the stored wine after a write. */
static void send_wine(struct api_ctx *c, const char *id, int status)
{
	const struct wine *w = wine_get(c->sh, id, strlen(id));
	c->rs->status = status;
	wine_emit_doc(c, &c->w, w, NULL);
}

/* A stored wine parsed and validated (NULL and a 500 on failure). */
static struct json_doc *load_stored(struct api_ctx *c, const struct wine *w, struct wine_in *in)
{
	struct json_doc *d = json_parse(w->row.doc, w->row.doc_len, NULL, NULL);
	struct wine_vctx v = {NULL, 0, 1};
	if (!d || wine_validate(&v, json_root(d), in)) {
		json_doc_free(d);
		api_error(c, 500, "corrupt_record", "the stored wine does not decode");
		return NULL;
	}
	return d;
}

static void wines_publish(struct api_ctx *c)
{
	const struct wine *w = wine_from_path(c, 1);
	if (!w)
		return;
	if (w->status == WS_PUBLISHED) {
		api_error(c, 409, "already_published", "the wine is published already");
		return;
	}
	if (status_moves[w->status][WS_PUBLISHED] != VIA_PUBLISH) {
		api_error(c, 409, "wine_archived", "an archived wine cannot be published again");
		return;
	}
	struct wine_in in;
	struct json_doc *d = load_stored(c, w, &in);
	if (!d)
		return;
	if (gate_check(c, &in)) {
		json_doc_free(d);
		api_validation_failed(c);
		return;
	}
	struct wine_meta m;
	meta_load(json_root(d), &in, &m);
	m.status = WS_PUBLISHED;
	fmt_rfc3339_ms(m.updated_at, wall_ms());
	memcpy(m.published_at, m.updated_at, sizeof(m.updated_at));
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	txn_begin(c->sh);
	if (put_wine(c, &in, &m, &doc) || wine_event(c, "wine.published", &m, &doc) ||
	    !txn_commit(c->sh)) {
		txn_abort(c->sh);
		api_error(c, 413, "record_too_large", "the wine record is too large to store");
	} else {
		send_wine(c, m.id, 200);
	}
	buf_free(&doc);
	json_doc_free(d);
}

/* Members PATCH refuses: identifiers belong to the crosswalk. */
static const char *const crosswalk_members[] = {"gtin", "gtins", "lwin", NULL};

/* The status the PATCH asks for (current when absent); -1 if refused (409 written). */
static int patch_status(struct api_ctx *c, const struct wine *w, const struct json_value *body)
{
	const struct json_value *s = json_get(body, "status");
	if (!s || s->type != JSON_STRING)
		return w->status;
	for (int to = 0; to < WINE_N_STATUS; to++) {
		if (strcmp(wine_status_names[to], s->u.str))
			continue;
		if (to == w->status)
			return to;
		if (status_moves[w->status][to] == VIA_PATCH)
			return to;
		char d[200];
		snprintf(d, sizeof(d), "a wine cannot move from \"%s\" to \"%s\"%s", wine_status_names[w->status],
			 wine_status_names[to],
			 status_moves[w->status][to] == VIA_PUBLISH ? " by PATCH; use POST /v1/wines/{id}/publish" : "");
		api_error(c, 409, "invalid_status_transition", d);
		return -1;
	}
	return w->status; /* not a status name: the validator reports it */
}

static void wines_patch(struct api_ctx *c)
{
	const struct wine *w = wine_from_path(c, 1);
	if (!w)
		return;
	if (w->status == WS_ARCHIVED) {
		api_error(c, 409, "wine_archived", "an archived wine cannot be changed");
		return;
	}
	const struct json_value *body = api_body(c);
	if (!body)
		return;
	int to = patch_status(c, w, body);
	if (to < 0)
		return;
	for (int i = 0; crosswalk_members[i]; i++)
		if (json_get(body, crosswalk_members[i]))
			api_field_error(c, crosswalk_members[i], "managed_by_crosswalk",
					"identifiers are added with POST /v1/wines/{id}/external-ids");
	const struct json_value *pv = json_get(body, "producer");
	if (pv && pv->type == JSON_OBJECT)
		api_field_error(c, "producer", "producer_id", "a PATCH names the producer by id");
	struct wine_in cur;
	struct json_doc *stored = load_stored(c, w, &cur);
	if (!stored)
		return;
	struct json_doc *md = merged_doc(json_root(stored), body, MERGE_PATCH, NULL, NULL);
	if (!md) {
		json_doc_free(stored);
		api_error(c, 413, "record_too_large", "the merged wine is too large");
		return;
	}
	struct wine_in in;
	const struct producer *prod;
	char pid[ID_MAX_LEN], pname[PRODUCER_MAX_NAME + 1], pcc[3];
	int rc = validate_body(c, json_root(md), &in, &prod, pid, pname, pcc);
	if (!rc && to == WS_PUBLISHED && gate_check(c, &in))
		rc = -1;
	struct wine_keys k;
	struct wine_meta m;
	const char *code = NULL;
	char detail[200];
	if (rc) {
		api_validation_failed(c);
	} else {
		wine_keys_of(&in, pname, pcc, &k);
		meta_load(json_root(stored), &cur, &m);
		snprintf(m.producer_id, sizeof(m.producer_id), "%s", pid);
		snprintf(m.nk, sizeof(m.nk), "%s", k.nk);
		m.status = (uint8_t)to;
		if (choose_slug(c, &in, w, m.slug, &code, detail, sizeof(detail)) ||
		    check_unique(c, &in, &k, w, &code, detail, sizeof(detail))) {
			api_error(c, 409, code, detail);
		} else {
			fmt_rfc3339_ms(m.updated_at, wall_ms());
			struct buf doc;
			buf_init(&doc, REC_MAX_VAL);
			const char *ev = to == WS_ARCHIVED && w->status != WS_ARCHIVED ? "wine.archived" : "wine.updated";
			txn_begin(c->sh);
			if (put_wine(c, &in, &m, &doc) || wine_event(c, ev, &m, &doc) ||
			    !txn_commit(c->sh)) {
				txn_abort(c->sh);
				api_error(c, 413, "record_too_large", "the wine record is too large to store");
			} else {
				send_wine(c, m.id, 200);
			}
			buf_free(&doc);
		}
	}
	json_doc_free(md);
	json_doc_free(stored);
}

/* ---- identifiers added through the crosswalk ------------------------------ */

int wine_add_identifier(struct api_ctx *c, const struct wine *w, const char *member, const char *value,
			const char **code, char *detail, size_t dlen)
{
	struct wine_in cur;
	struct json_doc *stored = json_parse(w->row.doc, w->row.doc_len, NULL, NULL);
	struct wine_vctx v = {NULL, 0, 1};
	if (!stored || wine_validate(&v, json_root(stored), &cur)) {
		json_doc_free(stored);
		*code = "corrupt_record";
		snprintf(detail, dlen, "the stored wine does not decode");
		return -1;
	}
	char over_text[256];
	snprintf(over_text, sizeof(over_text), "{\"%s\":\"%s\"}", member, value);
	struct json_doc *over = json_parse(over_text, strlen(over_text), NULL, NULL);
	int rc = -1;
	struct json_doc *md = NULL;
	if (!strcmp(member, "lwin") && cur.has_lwin) {
		rc = strcmp(cur.lwin_text, value) ? -1 : 1;
		*code = "identifier_conflict";
		snprintf(detail, dlen, "the wine has another LWIN (%s)", cur.lwin_text);
		goto out;
	}
	unsigned filled = 0;
	struct buf names;
	buf_init(&names, 1024);
	md = over ? merged_doc(json_root(stored), json_root(over), MERGE_FILL, &filled, &names) : NULL;
	buf_free(&names);
	struct wine_in in;
	v = (struct wine_vctx){NULL, 0, 0};
	if (!md || wine_validate(&v, json_root(md), &in)) {
		*code = "identifier_conflict";
		snprintf(detail, dlen, "the %s does not agree with the wine's vintage or volume", member);
		goto out;
	}
	if (!filled) {
		rc = 1;
		goto out;
	}
	const struct producer *p = producer_get(c->sh, w->producer_id, strlen(w->producer_id));
	struct wine_keys k;
	wine_keys_of(&in, p ? p->name : NULL, p ? p->country : NULL, &k);
	if (check_unique(c, &in, &k, w, code, detail, dlen))
		goto out;
	struct wine_meta m;
	meta_load(json_root(stored), &in, &m);
	snprintf(m.nk, sizeof(m.nk), "%s", k.nk);
	fmt_rfc3339_ms(m.updated_at, wall_ms());
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	rc = put_wine(c, &in, &m, &doc) ? -1 : 0;
	buf_free(&doc);
	if (rc) {
		*code = "record_too_large";
		snprintf(detail, dlen, "the wine record is too large to store");
	}
out:
	json_doc_free(md);
	json_doc_free(over);
	json_doc_free(stored);
	return rc;
}

/* ---- lists ---------------------------------------------------------------- */

struct wine_filter {
	char country[3];
	char region[WINE_MAX_NAME + 1];
	int colour, category, status; /* -1 any */
	int vintage;                  /* WINE_VINTAGE_UNSET any, WID_NV, or a year */
	char producer[ID_MAX_LEN];
	char q[WINE_Q_MAX + 1];
	size_t q_len;
};

static int has_region(const struct wine *w, const char *slug)
{
	const char *p = wine_key(w, w->regions);
	for (unsigned i = 0; i < w->n_regions; i++, p += strlen(p) + 1)
		if (!strcmp(p, slug))
			return 1;
	return 0;
}

static int wine_match_filter(struct api_ctx *c, const struct row *r, void *arg)
{
	const struct wine_filter *f = arg;
	const struct wine *w = (const struct wine *)r;
	if (!wine_visible(c, w))
		return 0;
	if ((f->country[0] && strcmp(f->country, w->country)) || (f->colour >= 0 && w->colour != f->colour) ||
	    (f->category >= 0 && w->category != f->category) || (f->status >= 0 && w->status != f->status) ||
	    (f->vintage != WINE_VINTAGE_UNSET && w->vintage != f->vintage) ||
	    (f->producer[0] && strcmp(f->producer, w->producer_id)))
		return 0;
	if (f->region[0] && !has_region(w, f->region))
		return 0;
	return !f->q_len || memmem(wine_key(w, w->search), w->search.len, f->q, f->q_len) != NULL;
}

/* Parse the list's query; 0, or -1 with the 400 written. */
static int parse_filter(struct api_ctx *c, struct wine_filter *f, char *medusa, size_t msize)
{
	memset(f, 0, sizeof(*f));
	f->vintage = WINE_VINTAGE_UNSET;
	if (api_query_enum(c, "colour", wine_colour_names, &f->colour) ||
	    api_query_enum(c, "category", wine_category_names, &f->category) ||
	    api_query_enum(c, "status", wine_status_names, &f->status))
		return -1;
	char v[WINE_Q_MAX + 2];
	int n = api_query(c, "country", v, sizeof(v));
	if (n != -1) {
		if (n < 0 || !iso_country_valid(v, (size_t)n)) {
			api_error(c, 400, "invalid_filter", "country must be an ISO 3166-1 alpha-2 code");
			return -1;
		}
		memcpy(f->country, v, 3);
	}
	n = api_query(c, "vintage", v, sizeof(v));
	if (n != -1 && (n < 0 || wid_vintage_parse(v, (size_t)n, &f->vintage) != WID_OK)) {
		api_error(c, 400, "invalid_filter", "vintage must be a year 1900-2099 or nv");
		return -1;
	}
	n = api_query(c, "producer", f->producer, sizeof(f->producer));
	if (n != -1 && (n < 0 || !id_valid(f->producer, (size_t)n, "prd"))) {
		api_error(c, 400, "invalid_filter", "producer must be a producer id");
		return -1;
	}
	n = api_query(c, "region", v, sizeof(v));
	size_t len = 0;
	if (n != -1 && (n <= 0 || n > WINE_MAX_NAME ||
			wid_slug(v, (size_t)n, f->region, sizeof(f->region), &len) != WID_OK || !len)) {
		api_error(c, 400, "invalid_filter", "region must be a region name");
		return -1;
	}
	n = api_query(c, "q", v, sizeof(v));
	if (n != -1) {
		if (n <= 0 || n > WINE_Q_MAX) {
			api_error(c, 400, "invalid_filter", "q must be 1 to 100 bytes");
			return -1;
		}
		f->q_len = fold_search(v, (size_t)n, f->q, sizeof(f->q));
		if (!f->q_len) {
			api_error(c, 400, "invalid_filter", "q must contain letters or digits");
			return -1;
		}
	}
	n = api_query(c, "medusa_product_id", medusa, msize);
	if (n == 0 || n == -2 || (n > 0 && (size_t)n > WINE_MAX_MEDUSA)) {
		api_error(c, 400, "invalid_filter", "medusa_product_id must be 1 to 100 characters");
		return -1;
	}
	if (n < 0)
		medusa[0] = 0;
	return 0;
}

/* prefix = text NUL into out; its length. */
static uint32_t list_prefix(const char *text, uint8_t *out)
{
	size_t n = strlen(text);
	memcpy(out, text, n);
	out[n] = 0;
	return (uint32_t)n + 1;
}

static void wine_list_emit(struct api_ctx *c, const struct row *r)
{
	wine_emit_doc(c, &c->w, (const struct wine *)r, NULL);
}

static void wines_list(struct api_ctx *c)
{
	struct api_page pg;
	if (api_page_parse(c, &pg))
		return;
	struct wine_filter f;
	char medusa[WINE_MAX_MEDUSA + 2];
	if (parse_filter(c, &f, medusa, sizeof(medusa)))
		return;
	struct wine_lists ix;
	wine_list_indexes(c->sh, &ix);
	uint8_t prefix[IDX_MAX_KEY + 1];
	const struct oidx *idx = &c->sh->tables[REC_T_WINE].by_order;
	uint32_t pl = 0;
	/* the most selective index the query allows; other filters are predicates */
	if (medusa[0]) {
		const struct wine *w = wine_by_medusa(c->sh, medusa, strlen(medusa));
		memcpy(prefix, w ? w->row.id : "\xff", w ? w->row.id_len : 1);
		pl = w ? w->row.id_len : 1;
	} else if (f.producer[0]) {
		idx = ix.by_producer;
		pl = list_prefix(f.producer, prefix);
	} else if (f.status >= 0) {
		idx = ix.by_status;
		pl = list_prefix(wine_status_names[f.status], prefix);
	} else if (f.country[0]) {
		idx = ix.by_country;
		pl = list_prefix(f.country, prefix);
	}
	api_list(c, idx, prefix, pl, &pg, wine_match_filter, &f, wine_list_emit);
}

const struct route wine_routes[] = {
	{HTTP_M_GET, "/v1/wines", wines_list, SC_READ_WINES, ACT_READ_WINES, "List canonical wines", 0},
	{HTTP_M_POST, "/v1/wines", wines_create, SC_WRITE_WINES, ACT_WRITE_WINES,
	 "Ingest a wine (dedup by tiers 1-3: enrich the match or create)", 0},
	{HTTP_M_POST, "/v1/wines/match", wines_match, SC_READ_WINES, ACT_READ_WINES,
	 "Match a wine against the catalogue without writing", 0},
	{HTTP_M_GET, "/v1/wines/{id}", wines_get, SC_READ_WINES, ACT_READ_WINES, "Retrieve a wine", 0},
	{HTTP_M_PATCH, "/v1/wines/{id}", wines_patch, SC_WRITE_WINES, ACT_WRITE_WINES, "Update a wine (merge patch)", 0},
	{HTTP_M_POST, "/v1/wines/{id}/publish", wines_publish, SC_WRITE_WINES, ACT_WRITE_WINES,
	 "Publish a wine (publish gate)", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
