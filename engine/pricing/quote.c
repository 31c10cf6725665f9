/*
 * quote.c -- POST /v1/orders/quote-calculate: a stateless landed-cost
 * preview with routing (spec 4.1 rules 1-4, 2.8 sourcing, 2.9 waterfall;
 * DESIGN.md 5 and 6).
 *
 * Why this shape:
 *  - Routing is route_line(), a PURE function of (candidates with ATP,
 *    landed cost, permission and compliance flags, qty): the same function
 *    will commit the sourcing at confirmed -> sourced, and it is unit-tested
 *    without a shard.  The handler only gathers its inputs: the wine's
 *    offers from the by-wine index that are sellable now (active, in their
 *    window), the permission evaluator's verdict for (seller, seller
 *    country, destination), ATP = the offer's qty_available (which follows
 *    its sellable inventory levels), and the landed cost of the whole line
 *    from that offer as the price engine computes it ("cheapest-compliant":
 *    an offer the engine cannot price -- no freight tariff, excise
 *    NOT_FOUND, no FX -- is not compliant).
 *  - Pricing is price_quote() once over every allocation (one priced line
 *    per source: a source is its own fulfilment leg, so freight boxes and
 *    rounding are per source), so a quote's figures are exactly the
 *    engine's and the components add up to the total by construction.
 *  - Nothing is written.  It is a POST (it carries a body), so api_run()
 *    offers it to idem.c like every write: WITHOUT an Idempotency-Key
 *    header nothing is stored; WITH one, idem.c stores the response like
 *    any write's (harmless: replaying it returns the same preview).
 *  - Candidates are what the caller may see (spec 5: the read-path filter
 *    applies before serialisation; DESIGN.md 7: rows of others answer as
 *    rows that do not exist).  An offer offer_visible_to() hides from the
 *    caller -- not shared, seller not named, the seller's country blocked
 *    or not allowed, default deny -- is dropped before it takes a
 *    candidate slot: not routed (it could never win), not listed, not
 *    explained, so a wine whose only offers are hidden answers exactly as a
 *    wine without offers (no_sellable_offer).  `not_permitted` remains for
 *    offers the seller sees but may not ship to the destination.  The
 *    platform sees every offer and gets every rule.
 *  - Scope write:orders ("quote, create and cancel orders") with action
 *    can_create_orders: quoting is the first step of selling.  A partner
 *    quotes as itself; the platform names the seller.
 *
 * Decisions where the spec is open (also in api/openapi.json):
 *  - `sku` is a wine id; an offer id is accepted too and pins the line to
 *    that offer (routing then has one candidate).
 *  - Freight origin = the country of the location of the offer's sellable
 *    level with the most ATP; fulfiller = who ships from that level
 *    (quote_fulfiller_of: a 3PL owning the location, else the stock owner;
 *    the one rule order legs use too).  An offer
 *    without levels ships from its originator's country, fulfilled by it.
 *  - Offer incoterms: DAP, DPU and DDP deliver (no freight); EXW, FCA, CPT,
 *    CIP as themselves; the sea terms (FAS, FOB, CFR, CIF) are priced like
 *    FCA (freight to the consumer is added).
 *  - M_Curator = shelf_price - seller_price of the seller's live listing of
 *    that offer (first in listing id order) when its currency is the
 *    offer's and the shelf is not below it; else 0 (an originator's own
 *    shop).  F_Platform = --platform-fee-ppm (default QUOTE_PLATFORM_FEE_PPM)
 *    plus --platform-fixed-fee-cents per order, R_Recruiter = the seller's
 *    recruiter_rate_percent x (P_B2B + M_Curator) when the seller has a
 *    recruiter (partner.c; 0 otherwise), paid to the recruiter (a
 *    settlement_split party with role seller and basis R_Recruiter).
 *  - Excise category: semi-sparkling and aerated semi-sparkling wines are
 *    still wine for excise (EU Directive 92/83/EEC art. 8: sparkling means
 *    > 3 bar); every sparkling kind is sparkling; fortified is fortified;
 *    everything else is still.
 *  - Volume caps: data/caps.tsv (refdata_cap), this quote's litres alone;
 *    a consumer's other orders are counted at capture (consumer_volume.c).
 *  - Sales channel (spec 2.5: "availability is scoped by the sales
 *    channel's linked locations"; spec 5's read-path filter: "the caller's
 *    channel scope admits it").  A quote goes through one channel of the
 *    seller: `channel_id`, else a channel-scoped key's channel, else the
 *    seller's only channel that is not closed (channel_default_of); a
 *    seller with several must name one (422 `required`), another seller's
 *    channel is answered like an unknown id (its existence is not
 *    revealed), a paused or closed one is a 422 `active`.  A seller that
 *    has no channel at all (onboarding step 4 not done) quotes unscoped:
 *    it has configured no shelf to scope by; the lead may decide to refuse
 *    it instead.  Through a channel, a candidate's ATP, shipping location
 *    and fulfiller come only from its sellable levels at the channel's
 *    linked locations (inv_offer_sellable_at), routing stays the same pure
 *    function of those inputs, and a permitted candidate with stock only
 *    elsewhere is listed with its own rule, not_on_channel (after
 *    not_permitted: a candidate the seller may not sell is named as such,
 *    never as being off the channel).  M_Curator is the seller's live
 *    listing of the offer on that channel.
 */
#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "engine/edge/api.h"
#include "engine/supply/channel.h"
#include "engine/stock/inventory.h"
#include "engine/base/iso.h"
#include "engine/supply/listing.h"
#include "engine/stock/location.h"
#include "engine/base/log.h"
#include "engine/supply/offer.h"
#include "engine/catalogue/partner.h"
#include "engine/supply/permit.h"
#include "engine/pricing/price.h"
#include "engine/catalogue/producer.h"
#include "engine/pricing/quote.h"
#include "engine/pricing/refdata.h"
#include "engine/pricing/taxctx.h"
#include "engine/catalogue/wine.h"

const char *const route_split_names[] = {NULL, "estate_atp_short", "multi_originator_policy"};
const char *const quote_rule_names[] = {
	[QR_SELECTED_ESTATE] = "estate_covers_line", [QR_SELECTED_CHEAPEST] = "cheapest_covering_offer",
	[QR_SELECTED_SPLIT] = "split_allocation",     [QR_NOT_PERMITTED] = "not_permitted",
	[QR_NOT_PRICEABLE] = "not_priceable",         [QR_NOT_ON_CHANNEL] = "not_on_channel",
	[QR_NO_ATP] = "no_atp",
	[QR_ATP_SHORT] = "atp_short",                 [QR_ESTATE_FIRST] = "estate_first",
	[QR_HIGHER_COST] = "higher_landed_cost",      [QR_NOT_NEEDED] = "split_already_covered",
	[QUOTE_N_RULE] = NULL,
};

/* ---- routing (pure) ---------------------------------------------------------- */

static int usable(const struct route_cand *c) { return c->permitted && c->compliant; }

/* a before b: cheaper landed cost, then smaller offer id. */
static int cheaper(const struct route_cand *a, const struct route_cand *b)
{
	if (a->cost != b->cost)
		return a->cost < b->cost;
	return strcmp(a->offer_id, b->offer_id) < 0;
}

enum route_err route_line(const struct route_cand *c, unsigned n, int64_t qty, struct route_plan *out)
{
	memset(out, 0, sizeof(*out));
	if (n == 0)
		return ROUTE_E_NO_OFFER;
	unsigned n_perm = 0, n_use = 0;
	int64_t total = 0;
	for (unsigned i = 0; i < n; i++) {
		n_perm += c[i].permitted != 0;
		if (usable(&c[i])) {
			n_use++;
			total += c[i].atp > 0 ? c[i].atp : 0; /* n <= QUOTE_MAX_CANDIDATES, atp <= 10^8: no overflow */
		}
	}
	if (!n_perm)
		return ROUTE_E_NOT_PERMITTED;
	if (!n_use)
		return ROUTE_E_NOT_PRICEABLE;
	/* rules 1 and 2: the best single covering candidate, estate tier first */
	for (int tier = 1; tier >= 0; tier--) {
		int best = -1;
		for (unsigned i = 0; i < n; i++)
			if (usable(&c[i]) && (c[i].is_estate != 0) == tier && c[i].atp >= qty &&
			    (best < 0 || cheaper(&c[i], &c[best])))
				best = (int)i;
		if (best >= 0) {
			out->n = 1;
			out->a[0] = (struct route_alloc){(unsigned)best, qty};
			return ROUTE_OK;
		}
	}
	if (total < qty)
		return ROUTE_E_INSUFFICIENT;
	/* rule 3: split, estate tier first, cheapest first within a tier */
	uint8_t taken[QUOTE_MAX_CANDIDATES] = {0};
	int64_t left = qty;
	int estate_had = 0;
	for (int tier = 1; tier >= 0 && left > 0; tier--) {
		for (;;) {
			int best = -1;
			for (unsigned i = 0; i < n && i < QUOTE_MAX_CANDIDATES; i++)
				if (!taken[i] && usable(&c[i]) && (c[i].is_estate != 0) == tier && c[i].atp > 0 &&
				    (best < 0 || cheaper(&c[i], &c[best])))
					best = (int)i;
			if (best < 0 || left == 0)
				break;
			taken[best] = 1;
			if (out->n == QUOTE_MAX_SOURCES) {
				memset(out, 0, sizeof(*out));
				return ROUTE_E_TOO_MANY_SOURCES;
			}
			int64_t q = c[best].atp < left ? c[best].atp : left;
			out->a[out->n++] = (struct route_alloc){(unsigned)best, q};
			left -= q;
			estate_had |= tier;
		}
	}
	out->split = estate_had ? ROUTE_SPLIT_ESTATE_ATP_SHORT : ROUTE_SPLIT_MULTI_ORIGINATOR;
	return ROUTE_OK;
}

/* ---- volume caps ---------------------------------------------------------------- */

/* ---- the handler ---------------------------------------------------------------- */

int quote_excise_category(int wine_cat)
{
	switch (wine_cat) {
	case WCAT_SPARKLING: case WCAT_QUALITY_SPARKLING: case WCAT_AROMATIC_QUALITY_SPARKLING:
	case WCAT_AERATED_SPARKLING:
		return RD_CAT_SPARKLING;
	case WCAT_FORTIFIED:
		return RD_CAT_FORTIFIED;
	default:
		return RD_CAT_STILL;
	}
}

static int price_incoterm_by_name(int offer_incoterm)
{
	const char *nm = offer_incoterm_names[offer_incoterm];
	if (!strcmp(nm, "DPU") || !strcmp(nm, "DDP"))
		return PRICE_INCO_DAP;
	int i = price_incoterm_find(nm, (unsigned)strlen(nm));
	return i >= 0 ? i : PRICE_INCO_FCA;
}

/* The pricing incoterm of an offer's (the lists are tied by name), worked
 * out once per incoterm: every candidate of every quote asks.  The loop's
 * thread only. */
static int price_incoterm_of(int offer_incoterm)
{
	static int8_t memo[16]; /* > the 11 offer incoterms; 0 = not yet, else 1 + the answer */
	if (offer_incoterm < 0 || offer_incoterm >= 16)
		return price_incoterm_by_name(offer_incoterm);
	if (!memo[offer_incoterm])
		memo[offer_incoterm] = (int8_t)(1 + price_incoterm_by_name(offer_incoterm));
	return memo[offer_incoterm] - 1;
}

/* quote_fulfiller_of with lv's location already looked up (loc, NULL
 * when it has none): a candidate finds it once, not twice. */
static const char *fulfiller_at(struct shard *sh, const struct inv_level *lv, const struct location *loc)
{
	if (loc && strcmp(loc->owner_id, lv->owner_id)) {
		const struct partner *p = partner_get(sh, loc->owner_id, strlen(loc->owner_id));
		if (p && (p->v.roles & ROLE_FULFILLER))
			return loc->owner_id;
	}
	return lv->owner_id;
}

static void cand_add(struct quote *s, struct quote_line *ql, const struct offer *o)
{
	/* o is eligible (cand_eligible); the bound is gather_candidates' */
	if (ql->ncand >= QUOTE_MAX_CANDIDATES)
		return;
	unsigned i = ql->ncand++;
	struct route_cand *rc = &ql->cand[i];
	ql->offer[i] = o;
	rc->offer_id = o->row.id;
	rc->atp = o->qty > 0 ? o->qty : 0;
	/* the levels this quote may ship from: the sales channel's linked
	 * locations (spec 2.5), or every location for a seller without one */
	struct inv_loc_set set;
	const struct inv_loc_set *at = quote_locations(s, &set);
	const struct inv_level *top[QUOTE_LEVELS_PER_SOURCE];
	int64_t at_sum = 0;
	unsigned nt = inv_offer_sellable_of(s->sh, o, at, top, QUOTE_LEVELS_PER_SOURCE, &at_sum);
	if (s->stock_backed) { /* order capture: only what holds can take, from the
				* QUOTE_LEVELS_PER_SOURCE levels a source's legs may use */
		int64_t lv_atp = 0;
		for (unsigned k = 0; k < nt; k++)
			lv_atp += inv_plan_atp(top[k]);
		/* in a cluster the offer's qty_available is the home's sum of
		 * every shard's levels, published a hop after the levels
		 * themselves: the levels (the caller's own writes are applied,
		 * engine/edge/park.h) are the fresher figure */
		rc->atp = s->sh->smap || lv_atp < rc->atp ? lv_atp : rc->atp;
	} else if (at) { /* preview through a channel: the stock at its locations */
		rc->atp = at_sum < rc->atp ? at_sum : rc->atp;
	}
	/* stock exists, but none where the channel may ship from */
	ql->off_channel[i] = (uint8_t)(at && at_sum == 0 && o->qty > 0);
	rc->is_estate = s->estate && !strcmp(s->estate, o->originator_id);
	struct permit_rules pr;
	offer_rules(o, &pr);
	struct permit_query pq = {o->originator_id, s->seller, s->seller_country, s->dest};
	enum permit_verdict v = permit_check(&pr, &pq);
	ql->verdict[i] = (uint8_t)v;
	rc->permitted = (uint8_t)permit_allowed(v);

	/* where it ships from, who fulfils */
	const char *origin = NULL;
	ql->fulfiller[i] = o->originator_id;
	ql->location[i] = NULL;
	const struct inv_level *lv = nt ? top[0] : NULL; /* the most ATP: where a leg ships from */
	if (lv) {
		const struct location *loc = location_get(s->sh, lv->location_id, strlen(lv->location_id));
		if (loc) {
			origin = loc->country;
			ql->fulfiller[i] = fulfiller_at(s->sh, lv, loc);
			ql->location[i] = lv->location_id;
		}
	}
	if (!origin) {
		const struct partner *op = partner_get(s->sh, o->originator_id, strlen(o->originator_id));
		origin = op ? op->v.country : "";
	}
	int64_t margin = 0;
	const struct listing *li = s->ch ? listing_live_on_channel(s->sh, o->row.id, s->channel_id)
					 : listing_live_of_seller(s->sh, o->row.id, s->seller);
	if (li && !strcmp(li->currency, o->currency) && li->shelf_minor >= o->price_minor)
		margin = li->shelf_minor - o->price_minor;
	struct price_line_in *p = &ql->pin[i];
	*p = (struct price_line_in){.p_b2b = o->price_minor, .margin = margin, .qty = (uint32_t)ql->qty,
				    .box_units = ql->box, .category = ql->cat,
				    .incoterm = (uint8_t)price_incoterm_of(o->incoterm),
				    .abv = (uint16_t)(ql->w->abv >= 0 && ql->w->abv <= RD_MAX_ABV ? ql->w->abv : 0xffff),
				    .volume_ul = ql->w->volume_ul > 0 && ql->w->volume_ul <= PRICE_MAX_VOLUME_UL
							 ? (uint32_t)ql->w->volume_ul : 0,
				    .recruiter_ppm = s->recruiter_ppm,
				    .platform_ppm = (uint32_t)s->sh->cfg.platform_fee_ppm};
	memcpy(p->currency, o->currency, sizeof(p->currency));
	size_t ol = strnlen(origin, sizeof(p->origin) - 1); /* a country code: truncated as snprintf would */
	memcpy(p->origin, origin, ol);
	p->origin[ol] = 0;
	/* compliance and landed cost: the whole line from this offer */
	struct price_order_in in = {.n_lines = 1, .lines = p, .date = s->date};
	memcpy(in.destination, s->dest, 3);
	memcpy(in.region, s->region, sizeof(in.region));
	ql->perr[i] = price_quote_memo(s->rd, &in, &s->one, &s->memo);
	rc->compliant = ql->perr[i] == PRICE_OK;
	rc->cost = rc->compliant ? s->one.total : INT64_MAX;
}

const char *quote_fulfiller_of(struct shard *sh, const struct inv_level *lv)
{
	return fulfiller_at(sh, lv, location_get(sh, lv->location_id, strlen(lv->location_id)));
}

int quote_permission_hidden(const char *code)
{
	for (int v = 0; v < PERMIT_N_VERDICTS; v++)
		if (!strcmp(permit_code((enum permit_verdict)v), code))
			return quote_verdict_hidden((enum permit_verdict)v);
	return 1; /* a code this build does not know: hide rather than guess */
}

int quote_verdict_hidden(enum permit_verdict v)
{
	switch (v) {
	case PERMIT_OK: case PERMIT_OK_OWNER:
	case PERMIT_DESTINATION_BLOCKED: case PERMIT_DESTINATION_NOT_ALLOWED:
		return 0; /* the seller passes every rule about itself: it sees the offer */
	default:
		return 1;
	}
}

/*
 * Candidates in routing order (issue 15): a wine may have more sellable
 * offers than a line prices (QUOTE_MAX_CANDIDATES), so the ones priced are
 * the first by a bound routing itself respects -- the estate's offer first
 * (rule 1), then the lowest seller_price (P_B2B: what a landed cost grows
 * from; offers in another currency after those in the estate's or first
 * seen one), then offer id -- not the first in index order.  At most
 * QUOTE_SCAN_MAX sellable offers the caller may see are ranked; the line's
 * sourcing says how many were considered and whether any were cut.
 */
struct cand_scan {
	struct quote *s;
	const struct offer **o;          /* s->scan */
	unsigned n;
	uint8_t more;                    /* a sellable, visible offer past QUOTE_SCAN_MAX */
};

/* May o be a candidate of this quote at all?  Sellable now, and visible
 * to the caller (one it may not see is not counted, explained or routed). */
static int cand_eligible(const struct quote *s, const struct offer *o)
{
	return offer_sellable(o, s->now_ms) && offer_seen_by(s->caller, &s->seer, o);
}

static int cand_cb(const struct offer *o, void *arg)
{
	struct cand_scan *cs = arg;
	if (!cand_eligible(cs->s, o))
		return 0;
	if (cs->n == QUOTE_SCAN_MAX) {
		cs->more = 1;
		return 1;
	}
	cs->o[cs->n++] = o;
	return 0;
}

/* a before b in routing order (see struct cand_scan); estate: its partner
 * id or NULL; cur: the currency ranked first. */
static struct quote_rank rank_of(const struct offer *o, const char *estate, const char *cur)
{
	return (struct quote_rank){.cls = (uint8_t)((estate && !strcmp(o->originator_id, estate)) * 2 +
						    !strcmp(o->currency, cur)),
				   .price = o->price_minor};
}

/* a (key ka) before b (kb) in routing order: the estate's offers, then
 * those in the ranked currency, cheapest first, then by id. */
static int rank_before(const struct offer *a, struct quote_rank ka, const struct offer *b, struct quote_rank kb)
{
	if (ka.cls != kb.cls)
		return ka.cls > kb.cls;
	if ((ka.cls & 1) && ka.price != kb.price)
		return ka.price < kb.price;
	return strcmp(a->row.id, b->row.id) < 0;
}

/* The line's candidates: the wine's sellable offers the caller sees, the
 * first QUOTE_MAX_CANDIDATES in routing order. */
static void gather_candidates(struct quote *s, struct quote_line *ql, const struct offer_wine_at *at)
{
	struct cand_scan scan = {.s = s, .o = s->scan}, *cs = &scan;
	offer_wine_any_at(s->sh, ql->w->row.id, ql->w->row.id_len, at, cand_cb, cs);
	const char *cur = cs->n ? cs->o[0]->currency : "";
	for (unsigned i = 0; i < cs->n && s->estate; i++)
		if (!strcmp(cs->o[i]->originator_id, s->estate))
			cur = cs->o[i]->currency;
	/* a partial selection sort: only the places priced are ordered; the
	 * keys are worked out once (string compares), not per comparison */
	struct quote_rank *rk = s->rank;
	for (unsigned i = 0; i < cs->n; i++)
		rk[i] = rank_of(cs->o[i], s->estate, cur);
	unsigned keep = cs->n < QUOTE_MAX_CANDIDATES ? cs->n : QUOTE_MAX_CANDIDATES;
	for (unsigned i = 0; i < keep; i++) {
		unsigned best = i;
		for (unsigned j = i + 1; j < cs->n; j++)
			if (rank_before(cs->o[j], rk[j], cs->o[best], rk[best]))
				best = j;
		const struct offer *t = cs->o[i];
		struct quote_rank tk = rk[i];
		cs->o[i] = cs->o[best];
		rk[i] = rk[best];
		cs->o[best] = t;
		rk[best] = tk;
		cand_add(s, ql, cs->o[i]);
	}
	ql->considered = cs->n;
	ql->scan_cut = cs->more;
}

/* A 422 with a code of ours and the collected field errors. */
static void fail(struct api_ctx *c, const char *code, const char *detail)
{
	buf_reset(&c->rs->body);
	jw_init(&c->w, &c->rs->body);
	c->rs->status = 422;
	c->rs->content_type = PROBLEM_CONTENT_TYPE;
	problem_begin(&c->w, 422, code, "Unprocessable Content", detail);
	problem_fields(&c->w, c->errs, c->n_errs);
	problem_end(&c->w);
}

static int upper2(const char *s, uint32_t len)
{
	return len == 2 && s[0] >= 'A' && s[0] <= 'Z' && s[1] >= 'A' && s[1] <= 'Z';
}

/* Resolve every parsed line's sku to a visible wine (or offer), listing
 * each sku that names nothing as a field error (lines whose sku did not
 * parse are skipped).  Returns how many it listed; writes no response. */
static unsigned resolve_skus(struct api_ctx *c, struct quote *s)
{
	unsigned unknown = 0;
	/* each line's wine is a lookup of its own below, a miss or two each in
	 * a big catalogue (the id's hash slot, then the row): start them all
	 * at once first */
	for (int stage = 0; stage < 2; stage++)
		for (unsigned i = 0; i < s->n; i++)
			if (s->l[i].sku)
				wine_prefetch(c->sh, s->l[i].sku, strlen(s->l[i].sku), stage);
	for (unsigned i = 0; i < s->n; i++) {
		struct quote_line *ql = &s->l[i];
		if (!ql->sku)
			continue;
		size_t kl = strlen(ql->sku);
		ql->w = wine_get(c->sh, ql->sku, kl);
		if (!ql->w && (ql->only = offer_get(c->sh, ql->sku, kl)) && offer_seen_by(c, &s->seer, ql->only))
			ql->w = wine_get(c->sh, ql->only->wine_id, strlen(ql->only->wine_id));
		if (!ql->w || !wine_visible(c, ql->w)) {
			char f[64];
			snprintf(f, sizeof(f), "lines[%u].sku", i);
			api_field_error(c, f, "unknown_sku", "no wine or offer %s", ql->sku);
			unknown++;
			continue;
		}
		ql->cat = (uint8_t)quote_excise_category(ql->w->category);
	}
	return unknown;
}

/*
 * The sales channel the quote sells through (spec 2.5), into s->ch: the
 * body's `channel_id`, else the channel of a channel-scoped key, else the
 * seller's only channel.  A field error on `channel_id` when it names no
 * channel of the seller (another seller's channel answers the same as an
 * unknown id: its existence is not revealed), when the channel is not
 * active (paused or closed: a storefront that does not sell), when it
 * differs from the key's channel, or when none is named and the seller has
 * several (or only closed ones).  A seller without any channel quotes
 * unscoped (s->ch NULL).  s->seller is set.
 */
static void parse_channel(struct api_ctx *c, const struct json_value *b, struct quote *s)
{
	const struct json_value *v = json_get(b, "channel_id");
	const char *key_ch = c->who.channel_id[0] ? c->who.channel_id : NULL;
	const struct channel *ch = NULL;
	if (v && v->type != JSON_NULL) {
		if (v->type != JSON_STRING || v->len == 0 || v->len >= ID_MAX_LEN) {
			api_field_error(c, "channel_id", "type", "a sales channel id");
			return;
		}
		if (key_ch && strcmp(key_ch, v->u.str)) {
			api_field_error(c, "channel_id", "key_channel", "this key sells through channel %s only", key_ch);
			return;
		}
		ch = channel_get(c->sh, v->u.str, v->len);
		if (!ch || strcmp(ch->s.seller_id, s->seller)) {
			api_field_error(c, "channel_id", "unknown", "no sales channel %s of seller %s", v->u.str, s->seller);
			return;
		}
	} else if (key_ch) {
		ch = channel_get(c->sh, key_ch, strlen(key_ch));
		if (!ch || strcmp(ch->s.seller_id, s->seller)) {
			api_field_error(c, "channel_id", "unknown", "the key's sales channel %s is gone", key_ch);
			return;
		}
	} else {
		switch (channel_default_of(c->sh, s->seller, &ch)) {
		case CHP_NONE:
			return; /* not configured yet: unscoped */
		case CHP_ONE:
			break;
		case CHP_NO_OPEN:
			api_field_error(c, "channel_id", "required", "every sales channel of seller %s is closed", s->seller);
			return;
		case CHP_SEVERAL:
			api_field_error(c, "channel_id", "required",
					"seller %s has several sales channels: name the one this sale goes through",
					s->seller);
			return;
		}
	}
	if (ch->s.status != SHELF_ACTIVE) {
		api_field_error(c, "channel_id", "active", "sales channel %.*s is %s; only an active channel sells",
				(int)ch->s.row.id_len, ch->s.row.id, shelf_status_names[ch->s.status]);
		return;
	}
	s->ch = ch;
	snprintf(s->channel_id, sizeof(s->channel_id), "%.*s", (int)ch->s.row.id_len, ch->s.row.id);
}

/* Field validation and sku resolution; every error at once (an unknown sku
 * is listed beside the other field errors, not after they are fixed).  0 or
 * -1 (response written). */
static int parse(struct api_ctx *c, const struct json_value *b, struct quote *s)
{
	const struct json_value *v = json_get(b, "destination_country");
	if (!v || v->type != JSON_STRING || !upper2(v->u.str, v->len))
		api_field_error(c, "destination_country", "iso_country", "an ISO 3166-1 alpha-2 code is required");
	else if (!refdata_country_currency(v->u.str) || !refdata_vat(s->rd, v->u.str))
		api_field_error(c, "destination_country", "unsupported", "no reference data for %s", v->u.str);
	else
		memcpy(s->dest, v->u.str, 3);

	v = json_get(b, "seller");
	const char *me = c->who.entity_id;
	if (v && v->type != JSON_STRING)
		api_field_error(c, "seller", "type", "a partner id string");
	else if (!v && c->who.is_platform)
		api_field_error(c, "seller", "required", "the platform must name the seller");
	else {
		const char *id = v ? v->u.str : me;
		const struct partner *p = strlen(id) < ID_MAX_LEN ? partner_get(c->sh, id, strlen(id)) : NULL;
		if (!c->who.is_platform && strcmp(id, me))
			api_field_error(c, "seller", "not_caller", "a partner quotes as itself");
		else if (!p || !(p->v.roles & (ROLE_SELLER | ROLE_ORIGINATOR)))
			api_field_error(c, "seller", "unknown", "no such seller");
		else {
			buf_strcpy(s->seller, sizeof(s->seller), id);
			s->seller_country = p->v.country[0] ? p->v.country : NULL;
			/* R_Recruiter: the seller's recruiter and rate (percent x 100 -> ppm) */
			buf_strcpy(s->recruiter, sizeof(s->recruiter), p->v.recruiter_id);
			s->recruiter_ppm = p->v.recruiter_id[0] ? (uint32_t)(p->v.recruiter_rate_e2 * 100) : 0;
			parse_channel(c, b, s);
		}
	}

	v = json_get(b, "lines");
	if (!v || v->type != JSON_ARRAY || v->len == 0 || v->len > QUOTE_MAX_LINES) {
		api_field_error(c, "lines", "count", "1 to %d lines", QUOTE_MAX_LINES);
	} else {
		s->n = v->len;
		for (uint32_t i = 0; i < v->len; i++) {
			const struct json_value *ln = &v->u.items[i];
			struct quote_line *ql = &s->l[i];
			memset(ql, 0, sizeof(*ql)); /* quote_alloc zeroes the header only */
			char f[64];
			if (ln->type != JSON_OBJECT) {
				snprintf(f, sizeof(f), "lines[%u]", i);
				api_field_error(c, f, "type", "an object");
				continue;
			}
			/* the field's name is formatted only for an error */
			const struct json_value *x = json_get(ln, "sku");
			if (x && x->type == JSON_STRING && x->len > 0 && x->len < ID_MAX_LEN) {
				ql->sku = x->u.str;
			} else {
				snprintf(f, sizeof(f), "lines[%u].sku", i);
				api_field_error(c, f, "required", "a wine id (or an offer id)");
			}
			x = json_get(ln, "qty");
			int64_t q;
			if (x && !json_to_int64(x, &q) && q >= 1 && q <= PRICE_MAX_QTY) {
				ql->qty = q;
			} else {
				snprintf(f, sizeof(f), "lines[%u].qty", i);
				api_field_error(c, f, "range", "an integer 1..%d", PRICE_MAX_QTY);
			}
			x = json_get(ln, "box_units");
			if (x && !json_to_int64(x, &q) && (q == 6 || q == 12)) {
				ql->box = (uint8_t)q;
			} else {
				snprintf(f, sizeof(f), "lines[%u].box_units", i);
				api_field_error(c, f, "invalid_box_size", "box_units must be 6 or 12");
			}
		}
	}
	unsigned unknown = resolve_skus(c, s);
	if (!c->n_errs)
		return 0;
	int only_box = 1;
	for (unsigned i = 0; i < c->n_errs; i++)
		only_box &= !strcmp(c->errs[i].rule, "invalid_box_size");
	if (unknown == c->n_errs)
		fail(c, "unknown_sku", "a sku names no wine or offer; see errors[]");
	else
		fail(c, only_box ? "invalid_box_size" : "validation_failed", "one or more fields are invalid; see errors[]");
	return -1;
}

/*
 * The response's repeated objects are written as fixed shapes (issue 15:
 * the response was half of a quote's instructions, member by member):
 * literal fragments and values appended to the buffer jw_raw_begin()
 * returns (net/jsonw.h, JB_LIT and jb_*).  Each writer returns 0 or -1
 * (no room); its caller sets w->err.
 */

/* The waterfall's components as an object keyed by their names (the
 * order of price_comp_names; test builds compare the keys with it). */
static int comps_put(struct buf *b, const int64_t *c, unsigned mn)
{
	_Static_assert(PC_COUNT_ == 7, "a waterfall component the writer below does not name");
	size_t from = b->len;
	int bad = JB_LIT(b, "{\"P_B2B\":") || jb_fixed(b, c[PC_P_B2B], mn) || JB_LIT(b, ",\"R_Recruiter\":") ||
		  jb_fixed(b, c[PC_R_RECRUITER], mn) || JB_LIT(b, ",\"M_Curator\":") || jb_fixed(b, c[PC_M_CURATOR], mn) ||
		  JB_LIT(b, ",\"F_Platform\":") || jb_fixed(b, c[PC_F_PLATFORM], mn) || JB_LIT(b, ",\"C_Freight\":") ||
		  jb_fixed(b, c[PC_C_FREIGHT], mn) || JB_LIT(b, ",\"E_Excise\":") || jb_fixed(b, c[PC_E_EXCISE], mn) ||
		  JB_LIT(b, ",\"V_VAT\":") || jb_fixed(b, c[PC_V_VAT], mn) || buf_putc(b, '}');
#ifdef WM_TESTING
	const char *p = b->data + from;
	for (int k = 0; !bad && k < PC_COUNT_; k++) {
		size_t n = strlen(price_comp_names[k]);
		assert(p[1] == '"' && !memcmp(p + 2, price_comp_names[k], n) && p[2 + n] == '"');
		p = memchr(p + 1, ',', (size_t)(b->data + b->len - p - 1));
		assert(p || k == PC_COUNT_ - 1);
	}
#else
	(void)from;
#endif
	return bad;
}

static void write_comps(struct jw *w, const int64_t *comp, int minor)
{
	struct buf *b = jw_raw_begin(w);
	if (b && comps_put(b, comp, (unsigned)minor))
		w->err = 1;
}

int64_t quote_line_sums(const struct quote *q, unsigned i, int64_t *comp)
{
	const struct quote_line *ql = &q->l[i];
	int64_t total = 0;
	for (int x = 0; x < PC_COUNT_; x++)
		comp[x] = 0;
	for (unsigned k = 0; k < ql->plan.n; k++) {
		const struct price_line_out *o = &q->all.lines[ql->first + k];
		for (int x = 0; x < PC_COUNT_; x++)
			comp[x] += o->comp[x];
		total += o->total;
	}
	return total;
}

/* ,"effective_from":..,"effective_to":..,"priced_on":..: the days a rate
 * is in force (null: open) and the day it was applied for. */
static int in_force_put(struct buf *b, uint32_t from, uint32_t to, uint32_t priced_on)
{
	char f[11], t[11], d[11];
	rd_ymd_format(from, f);
	rd_ymd_format(to, t);
	rd_ymd_format(priced_on, d);
	return JB_LIT(b, ",\"effective_from\":") || jb_str_or_null(b, from == RD_DATE_MIN ? NULL : f) ||
	       JB_LIT(b, ",\"effective_to\":") || jb_str_or_null(b, to >= RD_DATE_MAX ? NULL : t) ||
	       JB_LIT(b, ",\"priced_on\":") || jb_str(b, d);
}

/* ,"source":..,"as_of":..,"effective_from":..,"effective_to":..,"priced_on":..,
 * "reference_version":..,"effective_date":..} of a tax entry, written. */
static int tail_write(struct buf *b, const struct rd_meta *m, uint32_t from, uint32_t to, const struct quote *q)
{
	return JB_LIT(b, ",\"source\":") || jb_str(b, m->source) || JB_LIT(b, ",\"as_of\":") || jb_str(b, m->as_of) ||
	       in_force_put(b, from, to, q->all.date) || JB_LIT(b, ",\"reference_version\":") ||
	       jb_str(b, q->all.version) || JB_LIT(b, ",\"effective_date\":") || jb_str(b, q->all.effective_date) ||
	       buf_putc(b, '}');
}

/* A tax entry's tail (tail_write): copied from where tails (quote.h) saw
 * entry's written in b, or written and noted there.  Test builds write a
 * copied one afresh too and stop unless the bytes are the same. */
static int tail_put(struct buf *b, struct quote_tax_tails *tails, const void *entry, const struct rd_meta *m,
		    uint32_t from, uint32_t to, const struct quote *q)
{
	if (tails && tails->b == b)
		for (unsigned k = 0; k < tails->n; k++)
			if (tails->t[k].entry == entry) {
				size_t at = tails->t[k].at, len = tails->t[k].len;
				assert(at + len <= b->len);
				if (buf_reserve(b, len))
					return -1;
				memcpy(b->data + b->len, b->data + at, len); /* reserved first: data may have moved */
				b->len += len;
#ifdef WM_TESTING
				struct buf fresh;
				buf_init(&fresh, 0);
				assert(!tail_write(&fresh, m, from, to, q) && fresh.len == len &&
				       !memcmp(fresh.data, b->data + b->len - len, len));
				buf_free(&fresh);
#endif
				return 0;
			}
	size_t at = b->len;
	if (tail_write(b, m, from, to, q))
		return -1;
	if (tails) {
		if (tails->b != b)
			*tails = (struct quote_tax_tails){.b = b};
		if (tails->n < QUOTE_TAILS_MAX)
			tails->t[tails->n++] = (struct quote_tax_tail){entry, at, b->len - at};
	}
	return 0;
}

/* The excise entry of a line's tax_breakdown. */
static int excise_put(struct buf *b, const struct quote *q, unsigned i, int64_t amount, struct quote_tax_tails *tails)
{
	const struct quote_line *ql = &q->l[i];
	const struct rd_excise *e = q->all.lines[ql->first].excise;
	/* the first source's shipping location: its stock's duty status (tax-context's map) */
	const char *lid = ql->plan.n ? ql->location[ql->plan.a[0].cand] : NULL;
	const struct location *loc = lid ? location_get(q->sh, lid, strlen(lid)) : NULL;
	return JB_LIT(b, "{\"tax\":\"excise\",\"category\":") || jb_name(b, rd_category_names[e->category]) ||
	       JB_LIT(b, ",\"excise_tax_category\":") || jb_name(b, rd_category_codes[e->category]) ||
	       JB_LIT(b, ",\"hs_tariff_code\":") || jb_str(b, refdata_hs_code(e->category, ql->w->volume_ul)) ||
	       JB_LIT(b, ",\"origin_duty_status\":") ||
	       jb_str_or_null(b, loc && loc->type < LOC_N_TYPE ? taxctx_duty_by_type[loc->type] : NULL) ||
	       JB_LIT(b, ",\"rate\":") || jb_fixed(b, e->rate_e4, RD_RATE_SCALE) ||
	       JB_LIT(b, ",\"rate_currency\":") || jb_str(b, e->currency) || JB_LIT(b, ",\"basis\":") ||
	       jb_name(b, rd_basis_names[e->basis]) || JB_LIT(b, ",\"abv_band\":[") || jb_fixed(b, e->abv_min, 2) ||
	       buf_putc(b, ',') || jb_fixed(b, e->abv_max, 2) || JB_LIT(b, "],\"amount\":") ||
	       jb_fixed(b, amount, (unsigned)q->all.minor) || tail_put(b, tails, e, &e->m, e->from, e->to, q);
}

/* The VAT entry of a line's tax_breakdown (total: the line's, VAT included). */
static int vat_put(struct buf *b, const struct quote *q, unsigned i, int64_t total, int64_t vat,
		   struct quote_tax_tails *tails)
{
	const struct rd_vat *v = q->all.lines[q->l[i].first].vat;
	unsigned mn = (unsigned)q->all.minor;
	return JB_LIT(b, "{\"tax\":\"vat\",\"rate_percent\":") || jb_fixed(b, v->rate_e4, RD_VAT_SCALE) ||
	       JB_LIT(b, ",\"basis\":\"percent\",\"applies_to\":"
			 "\"P_B2B+R_Recruiter+M_Curator+F_Platform+C_Freight+E_Excise\",\"taxable_amount\":") ||
	       jb_fixed(b, total - vat, mn) || JB_LIT(b, ",\"amount\":") || jb_fixed(b, vat, mn) ||
	       JB_LIT(b, ",\"product\":") || jb_name(b, rd_vat_product_names[v->product]) ||
	       JB_LIT(b, ",\"region\":") || jb_str_or_null(b, v->region[0] ? v->region : NULL) ||
	       JB_LIT(b, ",\"region_basis\":") ||
	       jb_name(b, q->postal_given == 1   ? "delivery_postal_code"
			 : q->postal_given == 2 ? "mainland_postal_code_not_recognised"
						: "mainland_without_postal_code") ||
	       tail_put(b, tails, v, &v->m, v->from, v->to, q);
}

void quote_write_line_tax(struct jw *w, const struct quote *q, unsigned i, struct quote_tax_tails *tails)
{
	const struct price_line_out *o = &q->all.lines[q->l[i].first];
	int64_t comp[PC_COUNT_];
	int64_t total = quote_line_sums(q, i, comp); /* over the line's sources: each reconciles on its own */
	struct buf *b = jw_raw_begin(w);
	if (b && (buf_putc(b, '[') || (o->excise && excise_put(b, q, i, comp[PC_E_EXCISE], tails)) ||
		  (o->vat && ((o->excise && buf_putc(b, ',')) || vat_put(b, q, i, total, comp[PC_V_VAT], tails))) ||
		  buf_putc(b, ']')))
		w->err = 1;
}

/* The settlement split has one party per (id, role): at most an originator
 * and a fulfiller per priced line (PRICE_MAX_LINES of them), and the seller
 * with its recruiter (both role seller).  (It was 2 x lines + 1, one short
 * of that count, and a party past it was dropped without a word; a full
 * list now fails the response instead.) */
#define QUOTE_MAX_PARTIES (2 * PRICE_MAX_LINES + 2)
struct party {
	const char *id, *role, *basis;
	int64_t amount;
};

/* Add amt to the party (id, role), listing it if new.  0, or -1 when the
 * list is full (not reachable: see QUOTE_MAX_PARTIES). */
static int party_add(struct party *p, unsigned *n, const char *id, const char *role, const char *basis, int64_t amt)
{
	for (unsigned i = 0; i < *n; i++)
		if (!strcmp(p[i].id, id) && !strcmp(p[i].role, role)) {
			p[i].amount += amt;
			return 0;
		}
	assert(*n < QUOTE_MAX_PARTIES);
	if (*n >= QUOTE_MAX_PARTIES)
		return -1;
	p[(*n)++] = (struct party){id, role, basis, amt};
	return 0;
}

/* One allocation of a line: the offer it takes from and where it ships from. */
static int source_put(struct buf *b, const struct quote_line *ql, const struct route_alloc *a)
{
	const struct offer *o = ql->offer[a->cand];
	int om = iso_currency_minor(o->currency, 3);
	return JB_LIT(b, "{\"offer_id\":") || jb_str(b, o->row.id) || JB_LIT(b, ",\"originator_id\":") ||
	       jb_str(b, o->originator_id) || JB_LIT(b, ",\"qty\":") || buf_put_dec(b, a->qty) ||
	       JB_LIT(b, ",\"p2b\":") || jb_fixed(b, o->price_minor, (unsigned)(om < 0 ? 2 : om)) ||
	       JB_LIT(b, ",\"p2b_currency\":") || jb_str(b, o->currency) || JB_LIT(b, ",\"incoterm\":") ||
	       jb_name(b, offer_incoterm_names[o->incoterm]) || JB_LIT(b, ",\"fulfiller_id\":") ||
	       jb_str(b, ql->fulfiller[a->cand]) || JB_LIT(b, ",\"location_id\":") ||
	       jb_str_or_null(b, ql->location[a->cand]) || JB_LIT(b, ",\"origin_country\":") ||
	       jb_str(b, ql->pin[a->cand].origin) || JB_LIT(b, ",\"estate\":") ||
	       jb_bool(b, ql->cand[a->cand].is_estate) || buf_putc(b, '}');
}

enum quote_rule quote_rule_of(const struct quote *q, unsigned i, unsigned k)
{
	const struct quote_line *ql = &q->l[i];
	const struct route_cand *rc = &ql->cand[k];
	for (unsigned a = 0; a < ql->plan.n; a++)
		if (ql->plan.a[a].cand == k)
			return ql->plan.n > 1 ? QR_SELECTED_SPLIT
					      : rc->is_estate ? QR_SELECTED_ESTATE : QR_SELECTED_CHEAPEST;
	if (!rc->permitted)
		return QR_NOT_PERMITTED;
	if (!rc->compliant)
		return QR_NOT_PRICEABLE;
	if (ql->off_channel[k])
		return QR_NOT_ON_CHANNEL;
	if (rc->atp <= 0)
		return QR_NO_ATP;
	if (ql->plan.n > 1)
		return QR_NOT_NEEDED;
	if (rc->atp < ql->qty)
		return QR_ATP_SHORT;
	if (ql->plan.n == 1 && ql->cand[ql->plan.a[0].cand].is_estate && !rc->is_estate)
		return QR_ESTATE_FIRST;
	return QR_HIGHER_COST;
}

/* Candidate k of line i as its object. */
static int candidate_put(struct buf *b, const struct quote *q, unsigned i, unsigned k)
{
	const struct quote_line *ql = &q->l[i];
	const struct route_cand *rc = &ql->cand[k];
	enum quote_rule r = quote_rule_of(q, i, k);
	int bad = JB_LIT(b, "{\"offer_id\":") || jb_str(b, rc->offer_id) || JB_LIT(b, ",\"originator_id\":") ||
		  jb_str(b, ql->offer[k]->originator_id) || JB_LIT(b, ",\"atp\":") || buf_put_dec(b, rc->atp) ||
		  JB_LIT(b, ",\"estate\":") || jb_bool(b, rc->is_estate) || JB_LIT(b, ",\"permitted\":") ||
		  jb_bool(b, rc->permitted);
	if (!rc->permitted)
		bad = bad || JB_LIT(b, ",\"permission\":") || jb_name(b, permit_code(ql->verdict[k]));
	bad = bad || JB_LIT(b, ",\"compliant\":") || jb_bool(b, rc->compliant);
	if (rc->compliant)
		bad = bad || JB_LIT(b, ",\"landed_cost\":") || jb_fixed(b, rc->cost, (unsigned)q->all.minor);
	else
		bad = bad || JB_LIT(b, ",\"pricing_error\":") || jb_name(b, price_err_codes[ql->perr[k]]);
	return bad || JB_LIT(b, ",\"outcome\":") || jb_name(b, r <= QR_SELECTED_SPLIT ? "selected" : "ruled_out") ||
	       JB_LIT(b, ",\"rule\":") || jb_name(b, quote_rule_names[r]) || buf_putc(b, '}');
}

/* Line i's candidates as an array. */
static int candidates_put(struct buf *b, const struct quote *q, unsigned i)
{
	int bad = buf_putc(b, '[');
	for (unsigned k = 0; k < q->l[i].ncand && !bad; k++)
		bad = (k && buf_putc(b, ',')) || candidate_put(b, q, i, k);
	return bad || buf_putc(b, ']');
}

static void write_candidates(struct jw *w, const struct quote *q, unsigned i)
{
	jw_key(w, "candidates");
	struct buf *b = jw_raw_begin(w);
	if (b && candidates_put(b, q, i))
		w->err = 1;
}

void quote_write_line_sourcing(struct jw *w, const struct quote *q, unsigned i, int with_candidates)
{
	const struct quote_line *ql = &q->l[i];
	struct buf *b = jw_raw_begin(w);
	int bad = !b || JB_LIT(b, "{\"line\":") || buf_put_dec(b, i) ||
		  JB_LIT(b, ",\"priority\":\"estate_first\",\"split_reason\":") ||
		  (ql->plan.split ? jb_name(b, route_split_names[ql->plan.split]) : JB_LIT(b, "null")) ||
		  JB_LIT(b, ",\"source\":[");
	for (unsigned k = 0; k < ql->plan.n && !bad; k++)
		bad = (k && buf_putc(b, ',')) || source_put(b, ql, &ql->plan.a[k]);
	/* how many offers were ranked, and whether some were not priced */
	bad = bad || JB_LIT(b, "],\"candidates_considered\":") || buf_put_dec(b, ql->considered) ||
	      JB_LIT(b, ",\"candidates_cut\":") || jb_bool(b, ql->considered > ql->ncand || ql->scan_cut);
	if (with_candidates)
		bad = bad || JB_LIT(b, ",\"candidates\":") || candidates_put(b, q, i);
	if (b && (bad || buf_putc(b, '}')))
		w->err = 1;
}

static void write_settlement(struct jw *w, const struct quote *s)
{
	const struct price_quote *q = &s->all;
	int mn = q->minor;
	struct party pp[QUOTE_MAX_PARTIES]; /* ~4 KiB on the loop's stack: no allocation per quote */
	unsigned np = 0;
	int full = 0;
	for (unsigned i = 0; i < s->n; i++) {
		const struct quote_line *ql = &s->l[i];
		for (unsigned k = 0; k < ql->plan.n; k++) {
			const struct price_line_out *o = &q->lines[ql->first + k];
			unsigned ci = ql->plan.a[k].cand;
			full |= party_add(pp, &np, ql->offer[ci]->originator_id, "originator", "P_B2B", o->comp[PC_P_B2B]);
			/* the royalty goes to the seller's recruiter when it has one (listed
			 * with role seller, the spec's roles, basis R_Recruiter) */
			if (s->recruiter[0]) {
				full |= party_add(pp, &np, s->seller, "seller", "M_Curator", o->comp[PC_M_CURATOR]);
				full |= party_add(pp, &np, s->recruiter, "seller", "R_Recruiter", o->comp[PC_R_RECRUITER]);
			} else {
				full |= party_add(pp, &np, s->seller, "seller", "M_Curator+R_Recruiter",
						  o->comp[PC_M_CURATOR] + o->comp[PC_R_RECRUITER]);
			}
			if (o->comp[PC_C_FREIGHT])
				full |= party_add(pp, &np, ql->fulfiller[ci], "fulfiller", "C_Freight",
						  o->comp[PC_C_FREIGHT]);
		}
	}
	if (full)
		w->err = 1; /* never a split that silently lacks its parties */
	jw_key(w, "settlement_split");
	struct buf *b = jw_raw_begin(w);
	int bad = !b || JB_LIT(b, "{\"currency\":") || jb_str(b, q->currency) || JB_LIT(b, ",\"parties\":[");
	for (unsigned i = 0; i < np && !bad; i++)
		bad = (i && buf_putc(b, ',')) || JB_LIT(b, "{\"partner_id\":") || jb_str(b, pp[i].id) ||
		      JB_LIT(b, ",\"role\":") || jb_name(b, pp[i].role) || JB_LIT(b, ",\"amount\":") ||
		      jb_fixed(b, pp[i].amount, (unsigned)mn) || JB_LIT(b, ",\"basis\":") || jb_name(b, pp[i].basis) ||
		      buf_putc(b, '}');
	bad = bad || JB_LIT(b, "],\"platform_fee\":") || jb_fixed(b, q->comp_total[PC_F_PLATFORM], (unsigned)mn) ||
	      JB_LIT(b, ",\"escrowed_taxes\":{\"excise\":") || jb_fixed(b, q->comp_total[PC_E_EXCISE], (unsigned)mn) ||
	      JB_LIT(b, ",\"vat\":") || jb_fixed(b, q->comp_total[PC_V_VAT], (unsigned)mn) ||
	      JB_LIT(b, ",\"authority_country\":") || jb_str(b, s->dest) || JB_LIT(b, "}}");
	if (b && bad)
		w->err = 1;
}

void quote_write_totals(struct jw *w, const struct quote *s)
{
	const struct price_quote *q = &s->all;
	int mn = q->minor;
	/* spec 2.9 financial_breakdown: component lines per source */
	jw_key(w, "financial_breakdown");
	jw_obj_begin(w);
	jw_kstr(w, "currency", q->currency);
	jw_key(w, "lines");
	struct buf *b = jw_raw_begin(w);
	int bad = !b || buf_putc(b, '[');
	for (unsigned i = 0; i < s->n && !bad; i++) {
		const struct quote_line *ql = &s->l[i];
		for (unsigned k = 0; k < ql->plan.n && !bad; k++)
			for (int x = 0; x < PC_COUNT_ && !bad; x++)
				bad = ((i || k || x) && buf_putc(b, ',')) || JB_LIT(b, "{\"component\":") ||
				      jb_name(b, price_comp_names[x]) || JB_LIT(b, ",\"amount\":") ||
				      jb_fixed(b, q->lines[ql->first + k].comp[x], (unsigned)mn) ||
				      JB_LIT(b, ",\"offer_id\":") || jb_str(b, ql->offer[ql->plan.a[k].cand]->row.id) ||
				      JB_LIT(b, ",\"line\":") || buf_put_dec(b, i) || buf_putc(b, '}');
	}
	if (b && (bad || buf_putc(b, ']')))
		w->err = 1;
	quote_write_money(w, "total", q->total, mn);
	jw_obj_end(w);
	write_settlement(w, s);
	jw_key(w, "components");
	write_comps(w, q->comp_total, mn);
	quote_write_money(w, "total", q->total, mn);
	jw_key(w, "reference_data");
	jw_obj_begin(w);
	jw_kstr(w, "version", q->version);
	jw_kstr(w, "effective_date", q->effective_date);
	jw_obj_end(w);
}

static void respond(struct api_ctx *c, struct quote *s)
{
	const struct price_quote *q = &s->all;
	int mn = q->minor;
	struct jw *w = &c->w;
	c->rs->status = 200;
	jw_obj_begin(w);
	jw_kstr(w, "currency", q->currency);
	jw_kstr(w, "destination_country", s->dest);
	jw_kstr(w, "seller", s->seller);
	if (s->ch)
		jw_kstr(w, "channel_id", s->channel_id);
	else
		jw_knull(w, "channel_id");
	/* each line's sourcing object is written twice (here and in its line):
	 * once, then copied */
	size_t at[QUOTE_MAX_LINES], len[QUOTE_MAX_LINES];
	jw_key(w, "sourcing");
	jw_arr_begin(w);
	for (unsigned i = 0; i < s->n; i++) {
		size_t from = w->out->len;
		quote_write_line_sourcing(w, s, i, 0);
		if (from < w->out->len && w->out->data[from] == ',')
			from++; /* the separator before it */
		at[i] = from;
		len[i] = w->out->len - from;
	}
	jw_arr_end(w);

	struct quote_tax_tails tails = {0}; /* this loop's, into w's buffer */
	jw_key(w, "lines");
	jw_arr_begin(w);
	for (unsigned i = 0; i < s->n; i++) {
		const struct quote_line *ql = &s->l[i];
		int64_t comp[PC_COUNT_];
		int64_t total = quote_line_sums(s, i, comp);
		jw_obj_begin(w);
		jw_kint(w, "line", i);
		jw_kstr(w, "sku", ql->sku);
		jw_kstr(w, "wine_id", ql->w->row.id);
		jw_kint(w, "qty", ql->qty);
		jw_kint(w, "box_units", ql->box);
		jw_kstr(w, "excise_category", rd_category_names[ql->cat]);
		jw_key(w, "sourcing");
		jw_raw_again(w, at[i], len[i]);
		write_candidates(w, s, i);
		jw_key(w, "components");
		write_comps(w, comp, mn);
		quote_write_money(w, "total", total, mn);
		jw_key(w, "sources");
		jw_arr_begin(w);
		for (unsigned k = 0; k < ql->plan.n; k++) {
			const struct price_line_out *o = &q->lines[ql->first + k];
			struct buf *b = jw_raw_begin(w);
			if (b && (JB_LIT(b, "{\"offer_id\":") || jb_str(b, ql->offer[ql->plan.a[k].cand]->row.id) ||
				  JB_LIT(b, ",\"qty\":") || buf_put_dec(b, ql->plan.a[k].qty) ||
				  JB_LIT(b, ",\"boxes\":") || buf_put_dec(b, o->boxes) ||
				  JB_LIT(b, ",\"components\":") || comps_put(b, o->comp, (unsigned)mn) ||
				  JB_LIT(b, ",\"total\":") || jb_fixed(b, o->total, (unsigned)mn) || buf_putc(b, '}')))
				w->err = 1;
		}
		jw_arr_end(w);
		jw_key(w, "tax_breakdown");
		quote_write_line_tax(w, s, i, &tails);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	quote_write_totals(w, s);
	jw_obj_end(w);
}

static const char *const route_err_codes[] = {
	[ROUTE_OK] = NULL,
	[ROUTE_E_NO_OFFER] = "no_sellable_offer",
	[ROUTE_E_NOT_PERMITTED] = "not_permitted",
	[ROUTE_E_NOT_PRICEABLE] = "pricing_unavailable",
	[ROUTE_E_INSUFFICIENT] = "insufficient_stock",
	[ROUTE_E_TOO_MANY_SOURCES] = "insufficient_stock",
};

/* The consumer volume caps (spec 8; data/caps.tsv) against this quote or
 * order alone (the consumer's other orders in the window are counted at
 * capture, engine/orders/consumer_volume.c): 0, or -1 with the 422 written. */
static int check_caps(struct api_ctx *c, const struct quote *s)
{
	int64_t litres[RD_CAT_COUNT_] = {0};
	for (unsigned i = 0; i < s->n; i++)
		litres[s->l[i].cat] += s->l[i].qty * (s->l[i].w->volume_ul > 0 ? s->l[i].w->volume_ul : 0);
	for (int k = RD_CAT_STILL; k <= RD_CAT_SPARKLING; k++) {
		const struct rd_cap *cap = refdata_cap(s->rd, s->dest, k);
		if (!cap || litres[k] <= cap->limit_ul)
			continue;
		quote_cap_refusal(c, k, s->dest, cap->limit_ul, cap->period_days, 0, litres[k]);
		return -1;
	}
	return 0;
}

void quote_cap_refusal(struct api_ctx *c, int category, const char *dest, int64_t limit_ul, uint32_t period_days,
		       int64_t used_ul, int64_t requested_ul)
{
	buf_reset(&c->rs->body);
	jw_init(&c->w, &c->rs->body);
	c->rs->status = 422;
	c->rs->content_type = PROBLEM_CONTENT_TYPE;
	problem_begin(&c->w, 422, "volume_cap_exceeded", "Unprocessable Content",
		      category == RD_CAT_STILL ? "the consumer volume cap for still wine is exceeded"
					       : "the consumer volume cap for sparkling wine is exceeded");
	jw_key(&c->w, "cap");
	jw_obj_begin(&c->w);
	jw_kstr(&c->w, "category", rd_category_names[category]);
	jw_kstr(&c->w, "destination_country", dest);
	jw_key(&c->w, "limit_liters");
	jw_fixed(&c->w, limit_ul, 6);
	jw_kint(&c->w, "period_days", period_days);
	jw_key(&c->w, "used_liters");
	jw_fixed(&c->w, used_ul, 6);
	jw_key(&c->w, "requested_liters");
	jw_fixed(&c->w, requested_ul, 6);
	jw_key(&c->w, "excess_liters");
	jw_fixed(&c->w, used_ul + requested_ul - limit_ul, 6);
	jw_obj_end(&c->w);
	problem_end(&c->w);
}

/* One refusal per (line, candidate the engine could not price): its stable
 * code (price_err_codes[]: excise_rate_not_found, excise_band_not_found,
 * vat_rate_not_found, freight_lane_not_found, fx_rate_not_found, ...) and
 * what it concerns, so a partner sees WHY a route is refused. */
static void write_refusals(struct jw *w, const struct quote *s, const uint8_t *line_err)
{
	jw_key(w, "refusals");
	jw_arr_begin(w);
	for (unsigned i = 0; i < s->n; i++) {
		const struct quote_line *ql = &s->l[i];
		if (line_err[i] != ROUTE_E_NOT_PRICEABLE)
			continue;
		for (unsigned k = 0; k < ql->ncand; k++) {
			const struct route_cand *rc = &ql->cand[k];
			if (!rc->permitted || rc->compliant)
				continue;
			const struct price_line_in *p = &ql->pin[k];
			jw_obj_begin(w);
			jw_kint(w, "line", i);
			jw_kstr(w, "sku", ql->sku);
			jw_kstr(w, "code", price_err_codes[ql->perr[k]]);
			jw_kstr(w, "offer_id", rc->offer_id);
			jw_kstr(w, "origin_country", p->origin);
			jw_kstr(w, "destination_country", s->dest);
			jw_kstr(w, "category", rd_category_names[ql->cat]);
			jw_key(w, "abv");
			if (p->abv <= RD_MAX_ABV)
				jw_fixed(w, p->abv, 2);
			else
				jw_null(w);
			jw_kint(w, "box_units", ql->box);
			jw_kstr(w, "incoterm", price_incoterms[p->incoterm].name);
			char d[11];
			rd_ymd_format(s->date, d);
			jw_kstr(w, "priced_on", d);
			jw_obj_end(w);
		}
	}
	jw_arr_end(w);
}

/* Gather candidates and route every line: 0, or -1 with the 422 written.
 * A line no permitted candidate can be priced for is 422
 * pricing_unavailable with, per line, errors[].rule = the first
 * candidate's cause and refusals[] naming every candidate's cause. */
_Static_assert(QUOTE_MAX_LINES <= OFFER_WINES_SEEK_MAX, "route_all finds every line's offers at once");

static int route_all(struct api_ctx *c, struct quote *s)
{
	const char *first = NULL;
	uint8_t line_err[QUOTE_MAX_LINES] = {0};
	int unpriceable = 0;
	/* where every line's offers start, found at once: the index's descents
	 * miss the cache in a big catalogue, and together their misses overlap
	 * (PGO=0, bench_scale 5-line p50 in two runs: big 24.7 -> 23.3 and 23.7
	 * -> 22.6 us, small 15.3 -> 15.1 and 15.2 -> 15.1) */
	struct offer_wine_at at[QUOTE_MAX_LINES];
	const char *wid[QUOTE_MAX_LINES];
	size_t wl[QUOTE_MAX_LINES];
	unsigned nw = 0, wat[QUOTE_MAX_LINES];
	for (unsigned i = 0; i < s->n; i++)
		if (!s->l[i].only) {
			wat[i] = nw;
			wid[nw] = s->l[i].w->row.id;
			wl[nw++] = s->l[i].w->row.id_len;
		}
	offer_wines_seek(c->sh, nw, wid, wl, at);
	for (int stage = 0; stage < 2; stage++) /* as resolve_skus does for the wines */
		for (unsigned i = 0; i < s->n; i++)
			producer_prefetch(c->sh, s->l[i].w->producer_id, strlen(s->l[i].w->producer_id), stage);
	for (unsigned i = 0; i < s->n; i++) {
		struct quote_line *ql = &s->l[i];
		const struct producer *pr = producer_get(c->sh, ql->w->producer_id, strlen(ql->w->producer_id));
		s->estate = pr && pr->partner_id[0] ? pr->partner_id : NULL;
		if (ql->only) {
			if (cand_eligible(s, ql->only))
				cand_add(s, ql, ql->only);
			ql->considered = ql->ncand;
		} else {
			gather_candidates(s, ql, &at[wat[i]]);
		}
		enum route_err e = route_line(ql->cand, ql->ncand, ql->qty, &ql->plan);
		line_err[i] = (uint8_t)e;
		if (e == ROUTE_E_NOT_PRICEABLE) {
			unsigned k = 0;
			while (k < ql->ncand && !(ql->cand[k].permitted && !ql->cand[k].compliant))
				k++;
			char f[64];
			snprintf(f, sizeof(f), "lines[%u]", i);
			api_field_error(c, f, price_err_codes[ql->perr[k]],
					"line %u (sku %s) cannot be priced into %s: %s (offer %s from %s; see refusals[])", i,
					ql->sku, s->dest, price_err_codes[ql->perr[k]], ql->cand[k].offer_id,
					ql->pin[k].origin);
			first = first ? first : route_err_codes[e];
			unpriceable = 1;
		} else if (e != ROUTE_OK) {
			char f[64];
			snprintf(f, sizeof(f), "lines[%u]", i);
			api_field_error(c, f, route_err_codes[e], "line %u (sku %s) cannot be routed: %s", i, ql->sku,
					route_err_codes[e]);
			first = first ? first : route_err_codes[e];
		}
	}
	if (!first)
		return 0;
	if (!unpriceable) {
		fail(c, first, "a line cannot be routed; see errors[]");
		return -1;
	}
	buf_reset(&c->rs->body);
	jw_init(&c->w, &c->rs->body);
	c->rs->status = 422;
	c->rs->content_type = PROBLEM_CONTENT_TYPE;
	problem_begin(&c->w, 422, first, "Unprocessable Content",
		      "a line cannot be routed or priced; see errors[] and refusals[]");
	problem_fields(&c->w, c->errs, c->n_errs);
	write_refusals(&c->w, s, line_err);
	problem_end(&c->w);
	return -1;
}

/* The delivery postal code: quote-calculate's `delivery_postal_code`, or
 * an order's consumer.address.postal_code; NULL when neither is given. */
static const char *postal_of(const struct json_value *b)
{
	const struct json_value *v = json_get(b, "delivery_postal_code");
	if (!v) {
		const struct json_value *cv = json_get(b, "consumer");
		const struct json_value *av = cv && cv->type == JSON_OBJECT ? json_get(cv, "address") : NULL;
		v = av && av->type == JSON_OBJECT ? json_get(av, "postal_code") : NULL;
	}
	return v && v->type == JSON_STRING && v->len >= 1 && v->len <= 16 ? v->u.str : NULL;
}

/* The VAT region of the delivery (refdata_region_of_postal): "" (mainland)
 * without a postal code, or with one the destination's region table cannot
 * read (the order module owns postal-code format; the breakdown says which,
 * region_basis).  0, or -1 with the 422 written for a delivery_postal_code
 * that is not a string of 1..16 bytes. */
static int delivery_region(struct api_ctx *c, const struct json_value *b, struct quote *s)
{
	const struct json_value *v = json_get(b, "delivery_postal_code");
	if (v && (v->type != JSON_STRING || v->len < 1 || v->len > 16)) {
		api_field_error(c, "delivery_postal_code", "format", "a postal code of 1..16 characters");
		fail(c, "validation_failed", "one or more fields are invalid; see errors[]");
		return -1;
	}
	const char *pc = postal_of(b);
	s->region[0] = 0;
	if (!pc)
		return 0;
	const char *r = refdata_region_of_postal(s->dest, pc);
	buf_strcpy(s->region, sizeof(s->region), r ? r : "");
	s->postal_given = r ? 1 : 2;
	return 0;
}

/*
 * The working state of a quote is large (QUOTE_MAX_LINES lines of
 * QUOTE_MAX_CANDIDATES candidates: ~100 KB); calloc'ing it per request
 * zeroed it all, ~4 % of a 1-line quote's CPU (perf, issue 15).  One spare
 * is kept for the next quote (the event loop computes one quote at a time;
 * quote_free gives it back), and only its header is zeroed here: parse()
 * zeroes each line as it reads it, and nothing reads a line past s->n or
 * the priced outputs before price_quote writes them.
 */
static struct quote *quote_spare;

static struct quote *quote_alloc(void)
{
	struct quote *s = quote_spare ? quote_spare : malloc(sizeof(*s));
	quote_spare = NULL;
	if (s)
		memset(s, 0, offsetof(struct quote, l));
	return s;
}

void quote_free(struct quote *q)
{
	if (q && !quote_spare)
		quote_spare = q;
	else
		free(q);
}

struct quote *quote_compute(struct api_ctx *c, const struct json_value *b, int stock_backed)
{
	const struct refdata *rd = refdata_current();
	if (!rd) {
		api_error(c, 503, "reference_data_unavailable", "no reference-data version is loaded");
		return NULL;
	}
	struct quote *s = quote_alloc();
	if (!s) {
		api_error(c, 503, "overloaded", "out of memory");
		return NULL;
	}
	s->sh = c->sh;
	s->caller = c;
	s->rd = rd;
	s->now_ms = (int64_t)wall_ms();
	offer_seer_init(c, &s->seer);
	s->seer.now_ms = s->now_ms; /* one clock for the whole quote */
	s->date = refdata_today();
	s->stock_backed = (uint8_t)(stock_backed != 0);
	price_memo_init(&s->memo);
	if (parse(c, b, s) || delivery_region(c, b, s) || check_caps(c, s) || route_all(c, s))
		goto fail;

	/* price every allocation at once */
	unsigned nf = 0;
	for (unsigned i = 0; i < s->n; i++) {
		struct quote_line *ql = &s->l[i];
		ql->first = nf;
		for (unsigned k = 0; k < ql->plan.n; k++) {
			s->flat[nf] = ql->pin[ql->plan.a[k].cand];
			s->flat[nf].qty = (uint32_t)ql->plan.a[k].qty;
			nf++;
		}
	}
	struct price_order_in in = {.n_lines = nf, .lines = s->flat, .date = s->date,
				    .fixed_fee_cents = (int64_t)s->sh->cfg.platform_fixed_fee_cents};
	memcpy(in.destination, s->dest, 3);
	memcpy(in.region, s->region, sizeof(in.region));
	enum price_err pe = price_quote_memo(rd, &in, &s->all, &s->memo);
	if (pe != PRICE_OK) {
		api_error(c, 422, price_err_codes[pe], "the quote cannot be priced from the reference data");
		goto fail;
	}
	return s;
fail:
	quote_free(s);
	return NULL;
}

const struct inv_loc_set *quote_locations(const struct quote *q, struct inv_loc_set *tmp)
{
	if (!q->ch)
		return NULL;
	tmp->n = q->ch->n_locations;
	tmp->ids = q->ch->location_ids;
	return tmp;
}

static void quote_calculate(struct api_ctx *c)
{
	const struct json_value *b = api_body(c);
	if (!b)
		return;
	struct quote *s = quote_compute(c, b, 0);
	if (s)
		respond(c, s);
	quote_free(s);
}

const struct route quote_routes[] = {
	{HTTP_M_POST, "/v1/orders/quote-calculate", quote_calculate, SC_WRITE_ORDERS, ACT_CREATE_ORDERS,
	 "Stateless landed-cost quote with routing preview (estate first, split, taxes)", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
