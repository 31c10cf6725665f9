/*
 * test_doc_order.c -- a document model from an order (engine/documents/
 * doc_order.c): every kind from a single-source and a split order written
 * here by hand in the shape GET /v1/orders/{id} gives the operator, the
 * per-line VAT rounding that a once-per-rate rounding would get wrong,
 * refusals that name the missing or inconsistent field, the bounds
 * (DOC_LINES_MAX rows, DOC_LEGS_MAX legs) at and past their edge, the
 * SSCC, and one real order from a running shard mapped, rendered and read
 * back with pdftotext and zbarimg.
 *
 * Every expected figure is computed by hand in the comments (the engine's
 * rule, DESIGN.md 6: each component rounded half-up per taxable line, VAT
 * = 19 % of the taxable line's components rounded once, then summed) or
 * read from the order JSON the engine returned, never from the code under
 * test.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "engine/documents/doc_model.h"
#include "engine/documents/doc_order.h"
#include "engine/documents/render.h"
#include "tests/doc_fixtures.h"
#include "tests/harness.h"
#include "tests/order_world.h"
#include "tests/wm_test.h"

/* ---- the catalogue the tests' ctx looks up -------------------------------- */

struct party_row {
	const char *id;
	struct doc_party p;
};

static const struct party_row parties[] = {
	{"ptn_EST", {"Domaine Exemple SARL", {"1 rue des Vignes", "21200 Beaune"}, "FR", "FR12345678901", "FR0123456789E"}},
	{"ptn_STK", {"Stockiste du Vin SAS", {"8 quai du Port", "69002 Lyon"}, "FR", "FR98765432109", "FR0000999888E"}},
	{"ptn_SEL", {"Weinladen Beispiel GmbH", {"Weinstrasse 9", "10115 Berlin"}, "DE", "DE123456789", ""}},
};

static const struct doc_party platform = {
	"Wine Marketplace Platform BV", {"Keizersgracht 1", "1015 CJ Amsterdam"}, "NL", "NL123456789B01", "NL00000123456"};

/* The integration test's world: its partner ids, filled in at run time. */
static struct oworld *world;

static int party_cb(void *arg, const char *id, struct doc_party *out)
{
	(void)arg;
	for (size_t i = 0; i < sizeof parties / sizeof parties[0]; i++)
		if (!strcmp(parties[i].id, id)) {
			*out = parties[i].p;
			return 0;
		}
	if (world && (!strcmp(id, world->est) || !strcmp(id, world->stk) || !strcmp(id, world->sel))) {
		*out = parties[!strcmp(id, world->est) ? 0 : !strcmp(id, world->stk) ? 1 : 2].p;
		return 0;
	}
	return -1;
}

static void set_wine(struct doc_order_wine *w, const char *name, int vintage, int abv, const char *cn)
{
	*w = (struct doc_order_wine){0};
	snprintf(w->wine.name, sizeof w->wine.name, "%s", name);
	w->wine.vintage = vintage;
	w->wine.abv_centi = abv;
	w->wine.volume_ml = 750;
	snprintf(w->wine.allergens, sizeof w->wine.allergens, "contains sulphites");
	snprintf(w->wine.producer, sizeof w->wine.producer, "Domaine Exemple, 21200 Beaune");
	snprintf(w->wine.origin, sizeof w->wine.origin, "AOP Bourgogne, France");
	snprintf(w->cn_code, sizeof w->cn_code, "%s", cn);
}

static int wine_cb(void *arg, const char *id, struct doc_order_wine *out)
{
	(void)arg;
	if (!strcmp(id, "wine_W1") || (world && !strcmp(id, world->w1))) {
		set_wine(out, "Bourgogne Rouge", 2022, 1300, "22042109");
		return 0;
	}
	if (!strcmp(id, "wine_SP")) {
		set_wine(out, "Crémant de Bourgogne", 0, 1200, ""); /* no CN code: the order's HS code */
		return 0;
	}
	return -1;
}

static int location_cb(void *arg, const char *id, char *out, size_t cap)
{
	(void)arg;
	if (!strcmp(id, "loc_EST") || (world && !strcmp(id, world->loc_est)))
		snprintf(out, cap, "Cuverie A-3");
	else if (world && !strcmp(id, world->loc_stk))
		snprintf(out, cap, "Lager B-7");
	else
		return -1;
	return 0;
}

static struct doc_order_ctx test_ctx(void)
{
	return (struct doc_order_ctx){
		.party = party_cb, .wine = wine_cb, .location = location_cb, .platform = platform,
		.series = "INV-DE-2026", .number = 7, .issue_date = {2026, 11, 29},
		.gs1_prefix = "4012345", .sscc_extension = 0};
}

/* ---- orders written by hand ---------------------------------------------- */

/*
 * Split order: 7 units of wine_W1 to DE, the estate holds 5 (10.00 EUR),
 * the stockist 2 (11.00 EUR); platform fee 5 % of P_B2B; freight 72.00 per
 * box of 12 per leg; still wine, DE excise 0; VAT 19 %:
 *   estate   5: P 50.00, F 2.50, C 72.00: base 124.50, VAT 23.655 -> 23.66
 *   stockist 2: P 22.00, F 1.10, C 72.00: base  95.10, VAT 18.069 -> 18.07
 *   VAT per line, summed: 41.73;  base 219.60; total 219.60 + 41.73 = 261.33
 *   19 % of 219.60 rounded ONCE would be 41.724 -> 41.72: one cent less.
 */
static const char split_order[] =
	"{\"order_id\":\"ord_DE_01TESTSPLIT0000000A\",\"status\":\"reserved\",\"channel\":\"webshop_connect\","
	"\"consumer\":{\"consumer_id\":\"cons_1\",\"name\":\"Erika Mustermann\",\"email\":\"erika@example.de\","
	"\"address\":{\"line1\":\"Weinstrasse 1\",\"city\":\"Berlin\",\"postal_code\":\"10115\",\"country\":\"DE\"},"
	"\"country\":\"DE\"},"
	"\"seller\":{\"partner_id\":\"ptn_SEL\",\"roles\":[\"seller\"],\"legal_name\":\"Shop am Markt\",\"country\":\"DE\"},"
	"\"platform_entity\":{\"entity_id\":\"platform\",\"legal_name\":\"Wine Marketplace Platform\"},"
	"\"destination_country\":\"DE\",\"currency\":\"EUR\","
	"\"lines\":[{\"line\":0,\"sku\":\"wine_W1\",\"wine_id\":\"wine_W1\",\"offer_id\":\"ofr_EST\",\"qty\":7,"
	"\"box_units\":12,\"p2b\":10.00,\"p2b_currency\":\"EUR\",\"unit_price_net\":31.37,\"total\":261.33,"
	"\"tax_breakdown\":[{\"tax\":\"excise\",\"excise_tax_category\":\"W200\",\"hs_tariff_code\":\"220421\","
	"\"rate\":0.00,\"amount\":0.00},{\"tax\":\"vat\",\"rate_percent\":19.0,\"taxable_amount\":219.60,"
	"\"amount\":41.73}]}],"
	"\"sourcing\":{\"priority\":\"estate_first\",\"split_reason\":\"estate_atp_short\",\"source\":["
	"{\"line\":0,\"offer_id\":\"ofr_EST\",\"originator_id\":\"ptn_EST\",\"qty\":5,\"p2b\":10.00,"
	"\"p2b_currency\":\"EUR\",\"incoterm\":\"EXW\",\"fulfiller_id\":\"ptn_EST\"},"
	"{\"line\":0,\"offer_id\":\"ofr_STK\",\"originator_id\":\"ptn_STK\",\"qty\":2,\"p2b\":11.00,"
	"\"p2b_currency\":\"EUR\",\"incoterm\":\"EXW\",\"fulfiller_id\":\"ptn_STK\"}]},"
	"\"fulfillments\":["
	"{\"leg_id\":\"ord_DE_01TESTSPLIT0000000A.L1\",\"status\":\"reserved\",\"offer_id\":\"ofr_EST\","
	"\"originator_id\":\"ptn_EST\",\"fulfiller_id\":\"ptn_EST\",\"location_id\":\"loc_EST\",\"qty\":5,"
	"\"items\":[{\"line\":0,\"sku\":\"wine_W1\",\"wine_id\":\"wine_W1\",\"offer_id\":\"ofr_EST\",\"qty\":5}],"
	"\"carrier\":null,\"tracking\":[]},"
	"{\"leg_id\":\"ord_DE_01TESTSPLIT0000000A.L2\",\"status\":\"reserved\",\"offer_id\":\"ofr_STK\","
	"\"originator_id\":\"ptn_STK\",\"fulfiller_id\":\"ptn_STK\",\"location_id\":\"loc_STK\",\"qty\":2,"
	"\"items\":[{\"line\":0,\"sku\":\"wine_W1\",\"wine_id\":\"wine_W1\",\"offer_id\":\"ofr_STK\",\"qty\":2}],"
	"\"carrier\":null,\"tracking\":[]}],"
	"\"financial_breakdown\":{\"currency\":\"EUR\",\"lines\":["
	"{\"component\":\"P_B2B\",\"amount\":50.00,\"offer_id\":\"ofr_EST\",\"line\":0},"
	"{\"component\":\"R_Recruiter\",\"amount\":0.00,\"offer_id\":\"ofr_EST\",\"line\":0},"
	"{\"component\":\"M_Curator\",\"amount\":0.00,\"offer_id\":\"ofr_EST\",\"line\":0},"
	"{\"component\":\"F_Platform\",\"amount\":2.50,\"offer_id\":\"ofr_EST\",\"line\":0},"
	"{\"component\":\"C_Freight\",\"amount\":72.00,\"offer_id\":\"ofr_EST\",\"line\":0},"
	"{\"component\":\"E_Excise\",\"amount\":0.00,\"offer_id\":\"ofr_EST\",\"line\":0},"
	"{\"component\":\"V_VAT\",\"amount\":23.66,\"offer_id\":\"ofr_EST\",\"line\":0},"
	"{\"component\":\"P_B2B\",\"amount\":22.00,\"offer_id\":\"ofr_STK\",\"line\":0},"
	"{\"component\":\"R_Recruiter\",\"amount\":0.00,\"offer_id\":\"ofr_STK\",\"line\":0},"
	"{\"component\":\"M_Curator\",\"amount\":0.00,\"offer_id\":\"ofr_STK\",\"line\":0},"
	"{\"component\":\"F_Platform\",\"amount\":1.10,\"offer_id\":\"ofr_STK\",\"line\":0},"
	"{\"component\":\"C_Freight\",\"amount\":72.00,\"offer_id\":\"ofr_STK\",\"line\":0},"
	"{\"component\":\"E_Excise\",\"amount\":0.00,\"offer_id\":\"ofr_STK\",\"line\":0},"
	"{\"component\":\"V_VAT\",\"amount\":18.07,\"offer_id\":\"ofr_STK\",\"line\":0}],\"total\":261.33},"
	"\"settlement_split\":{\"currency\":\"EUR\",\"parties\":["
	"{\"partner_id\":\"ptn_EST\",\"role\":\"originator\",\"amount\":50.00,\"basis\":\"P_B2B\"},"
	"{\"partner_id\":\"ptn_SEL\",\"role\":\"seller\",\"amount\":0.00,\"basis\":\"M_Curator+R_Recruiter\"},"
	"{\"partner_id\":\"ptn_EST\",\"role\":\"fulfiller\",\"amount\":72.00,\"basis\":\"C_Freight\"},"
	"{\"partner_id\":\"ptn_STK\",\"role\":\"originator\",\"amount\":22.00,\"basis\":\"P_B2B\"},"
	"{\"partner_id\":\"ptn_STK\",\"role\":\"fulfiller\",\"amount\":72.00,\"basis\":\"C_Freight\"}],"
	"\"platform_fee\":3.60,\"escrowed_taxes\":{\"excise\":0.00,\"vat\":41.73,\"authority_country\":\"DE\"}},"
	"\"total\":261.33,\"documents\":[],\"created_at\":\"2026-11-28T23:29:10.036Z\"}";

/*
 * Single source: 6 bottles of sparkling wine_SP from the estate (8.00 EUR),
 * shelf price 12.50 (M_Curator 6 x 4.50 = 27.00), recruiter 2 % of 75.00 =
 * 1.50, platform fee 5 % of 75.00 = 3.75, freight 36.00 (a box of 6), DE
 * sparkling excise 136.00 EUR/hl x 0.045 hl = 6.12:
 *   goods row 48.00 + 1.50 + 27.00 = 76.50 (unit 12.75); fee 3.75; freight
 *   36.00; excise 6.12; base 122.37; VAT 19 % = 23.2503 -> 23.25;
 *   total 145.62.  Settlement: estate 48.00, seller 28.50, fulfiller 36.00.
 */
static const char single_order[] =
	"{\"order_id\":\"ord_DE_01TESTSINGLE000000B\",\"status\":\"reserved\","
	"\"consumer\":{\"name\":\"Jürgen Müller\",\"address\":{\"line1\":\"Hauptstraße 5\",\"line2\":\"3. OG\","
	"\"city\":\"München\",\"postal_code\":\"80331\"},\"country\":\"DE\"},"
	"\"seller\":{\"partner_id\":\"ptn_SEL\",\"roles\":[\"seller\"],\"legal_name\":\"Shop am Markt\"},"
	"\"destination_country\":\"DE\",\"currency\":\"EUR\","
	"\"lines\":[{\"line\":0,\"sku\":\"SP-6\",\"wine_id\":\"wine_SP\",\"offer_id\":\"ofr_SP\",\"qty\":6,"
	"\"box_units\":6,\"p2b\":8.00,\"p2b_currency\":\"EUR\","
	"\"tax_breakdown\":[{\"tax\":\"excise\",\"excise_tax_category\":\"W300\",\"hs_tariff_code\":\"220410\","
	"\"amount\":6.12},{\"tax\":\"vat\",\"rate_percent\":19.0,\"taxable_amount\":122.37,\"amount\":23.25}]}],"
	"\"sourcing\":{\"source\":[{\"line\":0,\"offer_id\":\"ofr_SP\",\"originator_id\":\"ptn_EST\",\"qty\":6,"
	"\"p2b\":8.00,\"p2b_currency\":\"EUR\",\"fulfiller_id\":\"ptn_EST\"}]},"
	"\"fulfillments\":[{\"leg_id\":\"ord_DE_01TESTSINGLE000000B.L1\",\"offer_id\":\"ofr_SP\","
	"\"originator_id\":\"ptn_EST\",\"fulfiller_id\":\"ptn_EST\",\"location_id\":\"loc_EST\",\"qty\":6,"
	"\"items\":[{\"line\":0,\"sku\":\"SP-6\",\"offer_id\":\"ofr_SP\",\"qty\":6}]}],"
	"\"financial_breakdown\":{\"currency\":\"EUR\",\"lines\":["
	"{\"component\":\"P_B2B\",\"amount\":48.00,\"offer_id\":\"ofr_SP\",\"line\":0},"
	"{\"component\":\"R_Recruiter\",\"amount\":1.50,\"offer_id\":\"ofr_SP\",\"line\":0},"
	"{\"component\":\"M_Curator\",\"amount\":27.00,\"offer_id\":\"ofr_SP\",\"line\":0},"
	"{\"component\":\"F_Platform\",\"amount\":3.75,\"offer_id\":\"ofr_SP\",\"line\":0},"
	"{\"component\":\"C_Freight\",\"amount\":36.00,\"offer_id\":\"ofr_SP\",\"line\":0},"
	"{\"component\":\"E_Excise\",\"amount\":6.12,\"offer_id\":\"ofr_SP\",\"line\":0},"
	"{\"component\":\"V_VAT\",\"amount\":23.25,\"offer_id\":\"ofr_SP\",\"line\":0}],\"total\":145.62},"
	"\"settlement_split\":{\"currency\":\"EUR\",\"parties\":["
	"{\"partner_id\":\"ptn_EST\",\"role\":\"originator\",\"amount\":48.00,\"basis\":\"P_B2B\"},"
	"{\"partner_id\":\"ptn_SEL\",\"role\":\"seller\",\"amount\":28.50,\"basis\":\"M_Curator+R_Recruiter\"},"
	"{\"partner_id\":\"ptn_EST\",\"role\":\"fulfiller\",\"amount\":36.00,\"basis\":\"C_Freight\"}]},"
	"\"total\":145.62,\"created_at\":\"2026-11-27T10:00:00Z\"}";

/* src with the first occurrence of `from` replaced by `to` (malloc'd). */
static char *edit(const char *src, const char *from, const char *to)
{
	const char *p = strstr(src, from);
	cr_assert(p, "test bug: \"%s\" not in the order", from);
	size_t a = (size_t)(p - src), fl = strlen(from), tl = strlen(to), n = strlen(src);
	char *out = malloc(n - fl + tl + 1);
	cr_assert(out);
	memcpy(out, src, a);
	memcpy(out + a, to, tl);
	memcpy(out + a + tl, p + fl, n - a - fl + 1);
	return out;
}

/* Map (kind, leg) of text, expecting success; calloc'd model. */
static struct doc_model *map_ok(const char *text, const struct doc_order_ctx *ctx, enum doc_kind k, int leg)
{
	struct doc_model *m = calloc(1, sizeof *m);
	cr_assert(m);
	char err[300];
	int rc = doc_order_model(text, strlen(text), ctx, k, leg, m, err, sizeof err);
	cr_assert_eq(rc, 0, "%s leg %d: %s", doc_kind_names[k], leg, err);
	cr_assert_eq(doc_model_validate(m, err, sizeof err), 0, "%s", err);
	return m;
}

/* Map expecting a refusal whose message contains `named`. */
static void map_refused(const char *text, const struct doc_order_ctx *ctx, enum doc_kind k, int leg,
			const char *named)
{
	struct doc_model *m = calloc(1, sizeof *m);
	cr_assert(m);
	char err[300];
	int rc = doc_order_model(text, strlen(text), ctx, k, leg, m, err, sizeof err);
	cr_expect_eq(rc, -1, "accepted; expected an error naming %s", named);
	cr_expect(strstr(err, named) != NULL, "error \"%s\" does not name \"%s\"", err, named);
	free(m);
}

/* The GS1 mod-10 check of an 18-digit SSCC, written here independently:
 * weights 3, 1, 3, ... from the digit left of the check digit. */
static int sscc_ok(const char *s)
{
	if (strlen(s) != 18)
		return 0;
	int sum = 0;
	for (int i = 16, w = 3; i >= 0; i--, w = 4 - w) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		sum += (s[i] - '0') * w;
	}
	return (10 - sum % 10) % 10 == s[17] - '0';
}

/* ---- every kind --------------------------------------------------------- */

WM_TEST(doc_order, single_source_every_kind)
{
	struct doc_order_ctx ctx = test_ctx();
	struct doc_order_doc docs[DOC_ORDER_DOCS_MAX];
	char err[200];
	int n = doc_order_documents(single_order, strlen(single_order), docs, DOC_ORDER_DOCS_MAX, err, sizeof err);
	cr_assert_eq(n, 6, "%s", err);
	static const enum doc_kind want[6] = {DOC_CONSUMER_INVOICE, DOC_TRANSPORT_DOCUMENT, DOC_CARRIER_LABEL,
					      DOC_FULFILLER_INSTRUCTION, DOC_ORIGINATOR_PROFORMA, DOC_ORIGINATOR_INVOICE};
	for (int i = 0; i < n; i++) {
		cr_expect_eq(docs[i].kind, want[i], "docs[%d]", i);
		cr_expect_eq(docs[i].leg, 0);
		free(map_ok(single_order, &ctx, docs[i].kind, docs[i].leg));
	}

	/* The invoice: a goods row and three charges, one taxable line. */
	struct doc_model *m = map_ok(single_order, &ctx, DOC_CONSUMER_INVOICE, 0);
	cr_expect_str_eq(m->lang, "de"); /* DE's language when ctx.lang is NULL */
	cr_expect_str_eq(m->issuer.name, "Wine Marketplace Platform BV");
	cr_expect_str_eq(m->recipient.name, "Jürgen Müller");
	cr_expect_str_eq(m->recipient.address[0], "Hauptstraße 5");
	cr_expect_str_eq(m->recipient.address[1], "3. OG");
	cr_expect_str_eq(m->recipient.address[2], "80331 München");
	cr_expect_str_eq(m->recipient.country, "DE");
	cr_expect_str_eq(m->seller_name, "Shop am Markt");
	cr_expect_str_eq(m->order_id, "ord_DE_01TESTSINGLE000000B");
	cr_expect_eq(m->supply_date.day, 27); /* created_at */
	cr_assert_eq(m->n_lines, 4);
	static const int64_t nets[4] = {7650, 375, 3600, 612};
	for (int i = 0; i < 4; i++) {
		cr_expect_eq(m->lines[i].net, nets[i], "lines[%d]", i);
		cr_expect_eq(m->lines[i].vat_group, 1);
		cr_expect_eq(m->lines[i].vat_rate_bp, 1900);
		cr_expect_eq(m->lines[i].charge, i > 0);
	}
	cr_expect_eq(m->lines[0].quantity, 6);
	cr_expect_eq(m->lines[0].unit_price, 1275);
	cr_expect(strstr(m->lines[1].description, "Servicegebühr"), "%s", m->lines[1].description);
	cr_expect(strstr(m->lines[2].description, "Fracht"), "%s", m->lines[2].description);
	cr_expect(strstr(m->lines[3].description, "Verbrauchsteuer"), "%s", m->lines[3].description);
	cr_assert_eq(m->n_vat, 1);
	cr_expect_eq(m->vat[0].base, 12237);
	cr_expect_eq(m->vat[0].vat, 2325);
	cr_expect_eq(m->total_gross, 14562);
	free(m);

	/* Transport: the excise code and (no CN in the catalogue) the HS code of
	 * the order; 6 x 0.75 l = 4.50 l; one box of 6. */
	m = map_ok(single_order, &ctx, DOC_TRANSPORT_DOCUMENT, 0);
	cr_assert_eq(m->n_lines, 1);
	cr_expect_str_eq(m->lines[0].excise_code, "W300");
	cr_expect_str_eq(m->lines[0].cn_code, "220410");
	cr_expect_eq(m->lines[0].litres_cl, 450);
	cr_expect_eq(m->lines[0].packages, 1);
	cr_expect_eq(m->destination, DOC_DEST_DIRECT_DELIVERY);
	free(m);

	/* Originator documents: 6 x 8.00 = 48.00, the settlement's amount. */
	m = map_ok(single_order, &ctx, DOC_ORIGINATOR_PROFORMA, 0);
	cr_expect_str_eq(m->recipient.name, "Domaine Exemple SARL");
	cr_expect_eq(m->lines[0].unit_price, 800);
	cr_expect_eq(m->total_net, 4800);
	cr_expect_eq(m->total_gross, 4800);
	free(m);
	ctx.originator_vat_bp = 2000; /* a domestic supply at 20 %: 9.60 */
	m = map_ok(single_order, &ctx, DOC_ORIGINATOR_INVOICE, 0);
	cr_expect_str_eq(m->issuer.name, "Domaine Exemple SARL");
	cr_expect_str_eq(m->recipient.name, "Wine Marketplace Platform BV");
	cr_expect_eq(m->total_vat, 960);
	cr_expect_eq(m->total_gross, 5760);
	free(m);

	/* Instruction: the pick location's name, one box of 6. */
	ctx.lang = "en";
	m = map_ok(single_order, &ctx, DOC_FULFILLER_INSTRUCTION, 0);
	cr_expect_str_eq(m->lang, "en");
	cr_expect_str_eq(m->recipient.name, "Domaine Exemple SARL");
	cr_assert_eq(m->n_picks, 1);
	cr_expect_str_eq(m->picks[0].location, "Cuverie A-3");
	cr_expect_str_eq(m->picks[0].sku, "SP-6");
	cr_expect_eq(m->picks[0].quantity, 6);
	cr_assert_eq(m->n_boxes, 1);
	cr_expect_eq(m->boxes[0].box_units, 6);
	cr_expect_eq(m->boxes[0].count, 1);
	/* The default pickup window: the whole supply date. */
	cr_expect_eq(m->legs[0].pickup.date.day, 27);
	cr_expect_eq(m->legs[0].pickup.from_min, 0);
	cr_expect_eq(m->legs[0].pickup.to_min, 23 * 60 + 59);
	free(m);
}

WM_TEST(doc_order, split_order_per_source_documents)
{
	struct doc_order_ctx ctx = test_ctx();
	struct doc_order_doc docs[DOC_ORDER_DOCS_MAX];
	char err[200];
	int n = doc_order_documents(split_order, strlen(split_order), docs, DOC_ORDER_DOCS_MAX, err, sizeof err);
	cr_assert_eq(n, 10, "%s", err);
	cr_expect_eq(docs[0].kind, DOC_CONSUMER_INVOICE);
	cr_expect_eq(docs[1].kind, DOC_TRANSPORT_DOCUMENT);
	for (int g = 0; g < 2; g++) {
		cr_expect_eq(docs[2 + 4 * g].kind, DOC_CARRIER_LABEL);
		cr_expect_eq(docs[3 + 4 * g].kind, DOC_FULFILLER_INSTRUCTION);
		cr_expect_eq(docs[4 + 4 * g].kind, DOC_ORIGINATOR_PROFORMA);
		cr_expect_eq(docs[5 + 4 * g].kind, DOC_ORIGINATOR_INVOICE);
		for (int k = 2; k < 6; k++)
			cr_expect_eq(docs[k + 4 * g].leg, g);
	}
	cr_expect_eq(doc_order_documents(split_order, strlen(split_order), docs, 9, err, sizeof err), -1);
	cr_expect(strstr(err, "room for 9"), "%s", err);
	for (int i = 0; i < n; i++)
		free(map_ok(split_order, &ctx, docs[i].kind, docs[i].leg));

	/* Each source's originator documents: its own leg, its own P_B2B. */
	static const struct {
		const char *originator;
		int64_t qty, unit, net;
	} src[2] = {{"Domaine Exemple SARL", 5, 1000, 5000}, {"Stockiste du Vin SAS", 2, 1100, 2200}};
	for (int g = 0; g < 2; g++) {
		struct doc_model *p = map_ok(split_order, &ctx, DOC_ORIGINATOR_PROFORMA, g);
		struct doc_model *f = map_ok(split_order, &ctx, DOC_ORIGINATOR_INVOICE, g);
		cr_expect_str_eq(p->recipient.name, src[g].originator);
		cr_expect_str_eq(f->issuer.name, src[g].originator);
		for (int i = 0; i < p->n_lines; i++)
			cr_expect_eq(p->lines[i].leg, g);
		cr_assert_eq(p->n_lines, 1);
		cr_expect_eq(p->lines[0].quantity, src[g].qty);
		cr_expect_eq(p->lines[0].unit_price, src[g].unit);
		cr_expect_eq(p->total_gross, src[g].net);
		cr_expect_eq(f->total_gross, src[g].net);
		free(p);
		free(f);
	}

	/* Labels: one SSCC per leg, valid, different, deterministic. */
	struct doc_model *a = map_ok(split_order, &ctx, DOC_CARRIER_LABEL, 0);
	struct doc_model *b = map_ok(split_order, &ctx, DOC_CARRIER_LABEL, 1);
	struct doc_model *a2 = map_ok(split_order, &ctx, DOC_CARRIER_LABEL, 0);
	cr_expect(sscc_ok(a->legs[0].sscc), "%s", a->legs[0].sscc);
	cr_expect(sscc_ok(b->legs[1].sscc), "%s", b->legs[1].sscc);
	cr_expect_str_neq(a->legs[0].sscc, a->legs[1].sscc);
	cr_expect_str_eq(a->legs[0].sscc, a2->legs[0].sscc);
	cr_expect_eq(strncmp(a->legs[0].sscc, "04012345", 8), 0, "%s", a->legs[0].sscc);
	cr_expect_str_eq(a->legs[1].id, "ord_DE_01TESTSPLIT0000000A.L2");
	cr_expect_str_eq(a->legs[1].fulfiller.name, "Stockiste du Vin SAS");
	/* each leg one box of 12 (5 and 2 units) */
	cr_assert_eq(b->n_boxes, 2);
	cr_expect_eq(b->boxes[1].leg, 1);
	cr_expect_eq(b->boxes[1].box_units, 12);
	cr_expect_eq(b->boxes[1].count, 1);
	free(a);
	free(b);
	free(a2);

	/* Transport: every leg, with its originator. */
	struct doc_model *t = map_ok(split_order, &ctx, DOC_TRANSPORT_DOCUMENT, 0);
	cr_assert_eq(t->n_lines, 2);
	cr_expect_eq(t->lines[0].leg, 0);
	cr_expect_eq(t->lines[1].leg, 1);
	cr_expect_eq(t->lines[1].quantity, 2);
	cr_expect_eq(t->lines[1].litres_cl, 150);
	cr_expect_str_eq(t->lines[1].cn_code, "22042109");
	cr_expect_str_eq(t->legs[0].originator.name, "Domaine Exemple SARL");
	cr_expect_str_eq(t->legs[1].originator.name, "Stockiste du Vin SAS");
	free(t);
}

/* ---- per-line rounding ----------------------------------------------------- */

/*
 * The split order's invoice (see the order's comment): rows per taxable
 * line, each taxable line's VAT as the order rounded it, and the 19 %
 * summary = 23.66 + 18.07 = 41.73 on 219.60 -- while 19 % of 219.60
 * rounded once is 41.72.  The once-rounded figure is refused.
 */
WM_TEST(doc_order, per_line_rounding_is_the_orders)
{
	struct doc_order_ctx ctx = test_ctx();
	struct doc_model *m = map_ok(split_order, &ctx, DOC_CONSUMER_INVOICE, 0);
	cr_assert_eq(m->n_lines, 6);
	static const struct {
		int64_t net;
		int group, leg, charge;
	} rows[6] = {{5000, 1, 0, 0}, {250, 1, 0, 1}, {7200, 1, 0, 1},
		     {2200, 2, 1, 0}, {110, 2, 1, 1}, {7200, 2, 1, 1}};
	for (int i = 0; i < 6; i++) {
		cr_expect_eq(m->lines[i].net, rows[i].net, "lines[%d]", i);
		cr_expect_eq(m->lines[i].vat_group, rows[i].group, "lines[%d]", i);
		cr_expect_eq(m->lines[i].leg, rows[i].leg, "lines[%d]", i);
		cr_expect_eq(m->lines[i].charge, rows[i].charge, "lines[%d]", i);
	}
	int64_t base, vat;
	cr_expect_eq(doc_taxable_line(m, 1, &base, &vat), 0); /* not the group's last row */
	cr_assert_eq(doc_taxable_line(m, 2, &base, &vat), 1);
	cr_expect_eq(base, 12450);
	cr_expect_eq(vat, 2366);
	cr_assert_eq(doc_taxable_line(m, 5, &base, &vat), 1);
	cr_expect_eq(base, 9510);
	cr_expect_eq(vat, 1807);
	cr_assert_eq(m->n_vat, 1);
	cr_expect_eq(m->vat[0].base, 21960);
	cr_expect_eq(m->vat[0].vat, 4173);
	cr_expect_eq(m->total_net, 21960);
	cr_expect_eq(m->total_vat, 4173);
	cr_expect_eq(m->total_gross, 26133);
	cr_expect_eq(doc_vat_of(21960, 1900), 4172, "the once-rounded figure differs");

	char err[300];
	m->vat[0].vat = 4172;
	m->total_vat = 4172;
	m->total_gross = 26132;
	cr_expect_eq(doc_model_validate(m, err, sizeof err), -1);
	cr_expect(strstr(err, "vat[0].vat"), "%s", err);
	m->vat[0].vat = 4173;
	m->total_vat = 4173;
	m->total_gross = 26133;
	cr_expect_eq(doc_model_validate(m, err, sizeof err), 0, "%s", err);
	/* A taxable line's rows share a leg and a rate. */
	m->lines[1].leg = 1;
	cr_expect_eq(doc_model_validate(m, err, sizeof err), -1);
	cr_expect(strstr(err, "lines[1].vat_group"), "%s", err);
	m->lines[1].leg = 0;
	m->lines[4].vat_rate_bp = 700;
	cr_expect_eq(doc_model_validate(m, err, sizeof err), -1);
	cr_expect(strstr(err, "vat_group"), "%s", err);
	m->lines[4].vat_rate_bp = 1900;
	m->lines[4].vat_group = -1;
	cr_expect_eq(doc_model_validate(m, err, sizeof err), -1);
	cr_expect(strstr(err, "lines[4].vat_group: negative"), "%s", err);
	m->lines[4].vat_group = 2;
	/* A charge row: 0 or 1, no litres or packages, no wine needed. */
	cr_expect_eq(m->lines[4].charge, 1);
	cr_expect_eq(m->lines[4].wine.name[0], '\0');
	m->lines[4].charge = 2;
	cr_expect_eq(doc_model_validate(m, err, sizeof err), -1);
	cr_expect(strstr(err, "lines[4].charge"), "%s", err);
	m->lines[4].charge = 1;
	m->lines[4].packages = 1;
	cr_expect_eq(doc_model_validate(m, err, sizeof err), -1);
	cr_expect(strstr(err, "lines[4]: a charge has no litres or packages"), "%s", err);
	m->lines[4].packages = 0;
	m->lines[4].charge = 0; /* as goods it needs a wine */
	cr_expect_eq(doc_model_validate(m, err, sizeof err), -1);
	cr_expect(strstr(err, "lines[4].wine.name"), "%s", err);
	m->lines[4].charge = 1;
	cr_expect_eq(doc_model_validate(m, err, sizeof err), 0, "%s", err);
	free(m);

	/* An order that rounded its VAT once per rate (41.72, the stockist's
	 * taxable line 18.06, totals 261.32) is refused, naming the line. */
	char *o1 = edit(split_order, "\"amount\":18.07", "\"amount\":18.06");
	char *o2 = edit(o1, "\"total\":261.33},", "\"total\":261.32},");
	char *o3 = edit(o2, "\"total\":261.33,\"documents\"", "\"total\":261.32,\"documents\"");
	char *o4 = edit(o3, "\"amount\":41.73}", "\"amount\":41.72}");
	map_refused(o4, &ctx, DOC_CONSUMER_INVOICE, 0, "V_VAT of line 0 from offer ofr_STK is 1806, not 1900 bp x 9510 rounded once (1807)");
	free(o1);
	free(o2);
	free(o3);
	free(o4);
}

/* ---- refusals ------------------------------------------------------------ */

WM_TEST(doc_order, missing_or_inconsistent_fields_refused)
{
	struct doc_order_ctx ctx = test_ctx();
	static const struct {
		const char *from, *to, *named;
	} cases[] = {
		{"\"order_id\":", "\"order_idx\":", "order.order_id: missing"},
		{"\"currency\":\"EUR\",\"lines\"", "\"currency\":\"EUX\",\"lines\"", "order.currency"},
		{"\"destination_country\":\"DE\"", "\"destination_country\":\"XX\"", "order.destination_country"},
		{"\"created_at\":\"2026", "\"created_at\":\"20x6", "order.created_at"},
		{"\"name\":\"Erika Mustermann\"", "\"name\":\"\"", "consumer.name: empty"},
		{"\"line1\":\"Weinstrasse 1\",", "", "consumer.address.line1: missing"},
		{"\"wine_id\":\"wine_W1\",\"offer_id\":\"ofr_EST\",\"qty\":7", "\"wine_id\":\"wine_ZZ\",\"offer_id\":\"ofr_EST\",\"qty\":7", "lines[0].wine_id: wine_ZZ is unknown"},
		{"\"box_units\":12", "\"box_units\":8", "lines[0].box_units"},
		{"\"qty\":7", "\"qty\":0", "lines[0].qty"},
		{"\"rate_percent\":19.0", "\"rate_percent\":19.125", "rate_percent"},
		{"\"taxable_amount\":219.60", "\"taxable_amount\":219.61", "lines[0].tax_breakdown: taxable_amount"},
		{"\"taxable_amount\":219.60,\"amount\":41.73", "\"taxable_amount\":219.60,\"amount\":41.72", "lines[0].tax_breakdown: VAT 4172"},
		{"\"originator_id\":\"ptn_STK\",\"qty\":2", "\"originator_id\":\"ptn_ZZZ\",\"qty\":2", "originator_id"},
		{"\"location_id\":\"loc_STK\",\"qty\":2,\"items\":[{\"line\":0,\"sku\":\"wine_W1\",\"wine_id\":\"wine_W1\",\"offer_id\":\"ofr_STK\",\"qty\":2}",
		 "\"location_id\":\"loc_STK\",\"qty\":2,\"items\":[{\"line\":0,\"sku\":\"wine_W1\",\"wine_id\":\"wine_W1\",\"offer_id\":\"ofr_STK\",\"qty\":1}",
		 "fulfillments: the legs carry 1 units of line 0 from offer ofr_STK"},
		{"\"location_id\":\"loc_EST\"", "\"location_idx\":\"loc_EST\"", "fulfillments[0].location_id: missing"},
		{"\"amount\":2.50", "\"amount\":2.505", "financial_breakdown.lines[3].amount: not an amount"},
		{"\"amount\":2.50", "\"amount\":-2.50", "financial_breakdown.lines[3].amount: outside"},
		{"{\"component\":\"F_Platform\",\"amount\":2.50", "{\"component\":\"F_Fee\",\"amount\":2.50", "F_Fee is not a component"},
		{"\"total\":261.33},", "\"total\":261.34},", "financial_breakdown.total"},
		{"\"role\":\"originator\",\"amount\":22.00", "\"role\":\"originator\",\"amount\":22.01", "settlement_split: originator ptn_STK is paid 2201"},
		{"\"p2b\":11.00,\"p2b_currency\":\"EUR\",\"incoterm\"", "\"p2b\":11.50,\"p2b_currency\":\"EUR\",\"incoterm\"", "P_B2B of line 0 from offer ofr_STK is 2200, not p2b x qty (2300)"},
		{"\"total\":261.33,\"documents\"", "\"total\":261.30,\"documents\"", "order.total"},
		{"\"settlement_split\":", "\"settlement_splitx\":", "order.settlement_split: missing"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *t = edit(split_order, cases[i].from, cases[i].to);
		map_refused(t, &ctx, DOC_CONSUMER_INVOICE, 0, cases[i].named);
		map_refused(t, &ctx, DOC_CARRIER_LABEL, 1, cases[i].named);
		free(t);
	}
	/* A source without its V_VAT (the total without it too). */
	char *t1 = edit(split_order, "{\"component\":\"V_VAT\",\"amount\":23.66,\"offer_id\":\"ofr_EST\",\"line\":0},", "");
	char *t2 = edit(t1, "\"total\":261.33},", "\"total\":237.67},");
	char *t3 = edit(t2, "\"total\":261.33,\"documents\"", "\"total\":237.67,\"documents\"");
	map_refused(t3, &ctx, DOC_CONSUMER_INVOICE, 0, "financial_breakdown: line 0 from offer ofr_EST lacks V_VAT");
	free(t1);
	free(t2);
	free(t3);
	/* Not JSON, not an object, NULL. */
	map_refused("{\"order_id\":", &ctx, DOC_CONSUMER_INVOICE, 0, "order: not JSON");
	map_refused("[1,2]", &ctx, DOC_CONSUMER_INVOICE, 0, "order: not a JSON object");
	struct doc_model *m = calloc(1, sizeof *m);
	char err[200];
	cr_expect_eq(doc_order_model(NULL, 0, &ctx, DOC_CONSUMER_INVOICE, 0, m, err, sizeof err), -1);
	cr_expect(strstr(err, "order: NULL"), "%s", err);
	/* errlen 0: still refused, nothing written */
	cr_expect_eq(doc_order_model("x", 1, &ctx, DOC_CONSUMER_INVOICE, 0, m, NULL, 0), -1);
	free(m);
	/* The size bound: DOC_ORDER_JSON_MAX bytes (the order and trailing
	 * white space) maps, one byte more is refused. */
	char *big = malloc(DOC_ORDER_JSON_MAX + 2);
	cr_assert(big);
	size_t n = strlen(split_order);
	memcpy(big, split_order, n);
	memset(big + n, ' ', DOC_ORDER_JSON_MAX + 1 - n);
	m = calloc(1, sizeof *m);
	cr_expect_eq(doc_order_model(big, DOC_ORDER_JSON_MAX, &ctx, DOC_CONSUMER_INVOICE, 0, m, err, sizeof err), 0, "%s", err);
	cr_expect_eq(doc_order_model(big, DOC_ORDER_JSON_MAX + 1, &ctx, DOC_CONSUMER_INVOICE, 0, m, err, sizeof err), -1);
	cr_expect(strstr(err, "order: 1048577 bytes, more than 1048576"), "%s", err);
	struct doc_order_doc docs[DOC_ORDER_DOCS_MAX];
	cr_expect_eq(doc_order_documents(big, DOC_ORDER_JSON_MAX, docs, DOC_ORDER_DOCS_MAX, err, sizeof err), 10, "%s", err);
	cr_expect_eq(doc_order_documents(big, DOC_ORDER_JSON_MAX + 1, docs, DOC_ORDER_DOCS_MAX, err, sizeof err), -1);
	free(m);
	free(big);
	/* The leg of a kind, and the context. */
	map_refused(split_order, &ctx, DOC_CARRIER_LABEL, 2, "leg: 2 is not a leg");
	map_refused(split_order, &ctx, DOC_CARRIER_LABEL, -1, "leg: -1");
	map_refused(split_order, &ctx, DOC_CONSUMER_INVOICE, 1, "leg: 1");
	map_refused(split_order, &ctx, DOC_KIND_COUNT, 0, "kind: unknown");
	struct doc_order_ctx c = ctx;
	c.gs1_prefix = "401234";
	map_refused(split_order, &c, DOC_CARRIER_LABEL, 0, "ctx.gs1_prefix");
	c = ctx;
	c.gs1_prefix = "40123456789";
	map_refused(split_order, &c, DOC_CONSUMER_INVOICE, 0, "ctx.gs1_prefix");
	c = ctx;
	c.lang = "xx";
	map_refused(split_order, &c, DOC_CONSUMER_INVOICE, 0, "ctx.lang");
	c = ctx;
	c.series = NULL;
	map_refused(split_order, &c, DOC_CONSUMER_INVOICE, 0, "ctx.series");
	c = ctx;
	c.wine = NULL;
	map_refused(split_order, &c, DOC_CONSUMER_INVOICE, 0, "ctx:");
	c = ctx;
	c.originator_vat_bp = DOC_VAT_RATE_MAX + 1;
	map_refused(split_order, &c, DOC_ORIGINATOR_INVOICE, 0, "ctx.originator_vat_bp");
	c.originator_vat_bp = DOC_VAT_RATE_MAX;
	free(map_ok(split_order, &c, DOC_ORIGINATOR_INVOICE, 0));
	c = ctx;
	c.number = 0; /* the model's own validation still runs */
	map_refused(split_order, &c, DOC_CONSUMER_INVOICE, 0, "number");
	c = ctx;
	c.issue_date.month = 13;
	map_refused(split_order, &c, DOC_CONSUMER_INVOICE, 0, "issue_date");
}

/* ---- SSCC -------------------------------------------------------------- */

WM_TEST(doc_order, sscc_deterministic_with_check_digit)
{
	char a[DOC_SSCC_LEN + 1], b[DOC_SSCC_LEN + 1];
	/* 7- and 10-digit prefixes: 9- and 6-digit serial references */
	cr_assert_eq(doc_order_sscc("4012345", 3, "ord_DE_X", 0, a), 0);
	cr_expect(sscc_ok(a), "%s", a);
	cr_expect_eq(strncmp(a, "34012345", 8), 0, "%s", a);
	cr_expect_eq(strncmp(a + 15, "00", 2), 0, "leg 0 in the last two serial digits: %s", a);
	cr_assert_eq(doc_order_sscc("4012345", 3, "ord_DE_X", 0, b), 0);
	cr_expect_str_eq(a, b);
	cr_assert_eq(doc_order_sscc("4012345", 3, "ord_DE_X", 31, b), 0);
	cr_expect_eq(strncmp(a, b, 15), 0, "same order, same hash digits: %s %s", a, b);
	cr_expect_eq(strncmp(b + 15, "31", 2), 0, "%s", b);
	cr_expect(sscc_ok(b), "%s", b);
	cr_assert_eq(doc_order_sscc("4012345", 3, "ord_DE_Y", 0, b), 0);
	cr_expect_str_neq(a, b);
	cr_assert_eq(doc_order_sscc("4012345678", 0, "ord_DE_X", 99, a), 0);
	cr_expect(sscc_ok(a), "%s", a);
	cr_expect_eq(strncmp(a, "04012345678", 11), 0, "%s", a);
	cr_expect_eq(strncmp(a + 15, "99", 2), 0, "%s", a);
	/* past the edges */
	cr_expect_eq(doc_order_sscc("401234", 0, "o", 0, a), -1);
	cr_expect_eq(doc_order_sscc("40123456789", 0, "o", 0, a), -1);
	cr_expect_eq(doc_order_sscc("40123x5", 0, "o", 0, a), -1);
	cr_expect_eq(doc_order_sscc("4012345", 10, "o", 0, a), -1);
	cr_expect_eq(doc_order_sscc("4012345", -1, "o", 0, a), -1);
	cr_expect_eq(doc_order_sscc("4012345", 0, "o", 100, a), -1);
	cr_expect_eq(doc_order_sscc("4012345", 0, "o", -1, a), -1);
	cr_expect_eq(doc_order_sscc(NULL, 0, "o", 0, a), -1);
}

WM_TEST(doc_order, language_of_destination)
{
	cr_expect_str_eq(doc_order_lang("DE"), "de");
	cr_expect_str_eq(doc_order_lang("AT"), "de");
	cr_expect_str_eq(doc_order_lang("FR"), "fr");
	cr_expect_str_eq(doc_order_lang("GR"), "el");
	cr_expect_str_eq(doc_order_lang("NO"), "no");
	cr_expect_str_eq(doc_order_lang("SE"), "sv");
	cr_expect_str_eq(doc_order_lang("IE"), "en");
	cr_expect_str_eq(doc_order_lang("GB"), "en");
	cr_expect_str_eq(doc_order_lang(NULL), "en");
}

/* ---- bounds ------------------------------------------------------------ */

/* A growing string (the generated orders). */
struct sb {
	char *p;
	size_t n, cap;
};

__attribute__((format(printf, 2, 3))) static void sb_add(struct sb *b, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		size_t room = b->cap - b->n;
		int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? room : 0, fmt, ap);
		va_end(ap);
		cr_assert_geq(k, 0);
		if (b->p && (size_t)k < room) {
			b->n += (size_t)k;
			return;
		}
		b->cap = b->cap ? b->cap * 2 : 1 << 16;
		b->p = realloc(b->p, b->cap);
		cr_assert(b->p);
	}
}

static void sb_common_head(struct sb *b, const char *id)
{
	sb_add(b, "{\"order_id\":\"%s\",\"consumer\":{\"name\":\"Erika Mustermann\",\"address\":{\"line1\":"
		  "\"Weinstrasse 1\",\"city\":\"Berlin\",\"postal_code\":\"10115\"}},\"seller\":{\"partner_id\":"
		  "\"ptn_SEL\",\"legal_name\":\"Shop am Markt\"},\"destination_country\":\"DE\",\"currency\":\"EUR\","
		  "\"created_at\":\"2026-11-28T10:00:00Z\",",
	       id);
}

static void sb_comp(struct sb *b, int *first, const char *c, long long cents, int line)
{
	sb_add(b, "%s{\"component\":\"%s\",\"amount\":%lld.%02lld,\"offer_id\":\"ofr_EST\",\"line\":%d}",
	       *first ? "" : ",", c, cents / 100, cents % 100, line);
	*first = 0;
}

/*
 * n_full + n_plain lines of one bottle each from the estate's offer, all in
 * one leg.  A full line prints 4 rows: P 10.00, F 0.50, C 1.00, E 0.10:
 * base 11.60, VAT 19 % = 2.204 -> 2.20, total 13.80.  A plain line prints
 * one: P 10.00, VAT 1.90, total 11.90.
 */
static char *gen_rows(int n_full, int n_plain)
{
	struct sb b = {0};
	int n = n_full + n_plain;
	sb_common_head(&b, "ord_DE_ROWS");
	sb_add(&b, "\"lines\":[");
	for (int i = 0; i < n; i++) {
		int full = i < n_full;
		sb_add(&b, "%s{\"line\":%d,\"wine_id\":\"wine_W1\",\"qty\":1,\"box_units\":6,\"tax_breakdown\":["
			   "{\"tax\":\"excise\",\"amount\":%s},{\"tax\":\"vat\",\"rate_percent\":19,"
			   "\"taxable_amount\":%s,\"amount\":%s}]}",
		       i ? "," : "", i, full ? "0.10" : "0.00", full ? "11.60" : "10.00", full ? "2.20" : "1.90");
	}
	sb_add(&b, "],\"sourcing\":{\"source\":[");
	for (int i = 0; i < n; i++)
		sb_add(&b, "%s{\"line\":%d,\"offer_id\":\"ofr_EST\",\"originator_id\":\"ptn_EST\",\"qty\":1,"
			   "\"p2b\":10.00,\"p2b_currency\":\"EUR\"}",
		       i ? "," : "", i);
	sb_add(&b, "]},\"fulfillments\":[{\"leg_id\":\"ord_DE_ROWS.L1\",\"offer_id\":\"ofr_EST\",\"originator_id\":"
		   "\"ptn_EST\",\"fulfiller_id\":\"ptn_EST\",\"location_id\":\"loc_EST\",\"items\":[");
	for (int i = 0; i < n; i++)
		sb_add(&b, "%s{\"line\":%d,\"qty\":1}", i ? "," : "", i);
	sb_add(&b, "]}],\"financial_breakdown\":{\"currency\":\"EUR\",\"lines\":[");
	int first = 1;
	for (int i = 0; i < n; i++) {
		int full = i < n_full;
		sb_comp(&b, &first, "P_B2B", 1000, i);
		sb_comp(&b, &first, "R_Recruiter", 0, i);
		sb_comp(&b, &first, "M_Curator", 0, i);
		sb_comp(&b, &first, "F_Platform", full ? 50 : 0, i);
		sb_comp(&b, &first, "C_Freight", full ? 100 : 0, i);
		sb_comp(&b, &first, "E_Excise", full ? 10 : 0, i);
		sb_comp(&b, &first, "V_VAT", full ? 220 : 190, i);
	}
	long long total = 1380LL * n_full + 1190LL * n_plain;
	sb_add(&b, "],\"total\":%lld.%02lld},\"settlement_split\":{\"parties\":[{\"partner_id\":\"ptn_EST\","
		   "\"role\":\"originator\",\"amount\":%d.00}]}}",
	       total / 100, total % 100, 10 * n);
	return b.p;
}

/*
 * One line of n bottles from the estate's offer, one bottle per leg at n
 * locations: P n x 10.00, F n x 0.50, base n x 10.50; for 32 legs base
 * 336.00, VAT 19 % = 63.84 exactly, total 399.84; for 33 legs base 346.50,
 * VAT 65.835 -> 65.84, total 412.34.
 */
static char *gen_legs(int n)
{
	cr_assert(n == 32 || n == 33, "test bug: hand figures for 32 and 33 legs only");
	long long vat = n == 32 ? 6384 : 6584, base = 1050LL * n;
	struct sb b = {0};
	sb_common_head(&b, "ord_DE_LEGS");
	sb_add(&b, "\"lines\":[{\"line\":0,\"wine_id\":\"wine_W1\",\"qty\":%d,\"box_units\":6,\"tax_breakdown\":["
		   "{\"tax\":\"vat\",\"rate_percent\":19,\"taxable_amount\":%lld.%02lld,\"amount\":%lld.%02lld}]}],",
	       n, base / 100, base % 100, vat / 100, vat % 100);
	sb_add(&b, "\"sourcing\":{\"source\":[{\"line\":0,\"offer_id\":\"ofr_EST\",\"originator_id\":\"ptn_EST\","
		   "\"qty\":%d,\"p2b\":10.00,\"p2b_currency\":\"EUR\"}]},\"fulfillments\":[",
	       n);
	for (int g = 0; g < n; g++)
		sb_add(&b, "%s{\"leg_id\":\"ord_DE_LEGS.L%d\",\"offer_id\":\"ofr_EST\",\"originator_id\":\"ptn_EST\","
			   "\"fulfiller_id\":\"ptn_EST\",\"location_id\":\"loc_%d\",\"items\":[{\"line\":0,\"qty\":1}]}",
		       g ? "," : "", g + 1, g);
	sb_add(&b, "],\"financial_breakdown\":{\"currency\":\"EUR\",\"lines\":[");
	int first = 1;
	sb_comp(&b, &first, "P_B2B", 1000LL * n, 0);
	sb_comp(&b, &first, "F_Platform", 50LL * n, 0);
	sb_comp(&b, &first, "V_VAT", vat, 0);
	long long total = base + vat;
	sb_add(&b, "],\"total\":%lld.%02lld},\"settlement_split\":{\"parties\":[{\"partner_id\":\"ptn_EST\","
		   "\"role\":\"originator\",\"amount\":%d.00}]}}",
	       total / 100, total % 100, 10 * n);
	return b.p;
}

WM_TEST(doc_order, rows_at_and_past_doc_lines_max)
{
	struct doc_order_ctx ctx = test_ctx();
	cr_assert_eq(DOC_LINES_MAX % 4, 0);
	/* 64 full lines: exactly DOC_LINES_MAX rows */
	char *t = gen_rows(DOC_LINES_MAX / 4, 0);
	struct doc_model *m = map_ok(t, &ctx, DOC_CONSUMER_INVOICE, 0);
	cr_expect_eq(m->n_lines, DOC_LINES_MAX);
	cr_expect_eq(m->total_gross, 1380LL * (DOC_LINES_MAX / 4));
	cr_expect_eq(m->total_vat, 220LL * (DOC_LINES_MAX / 4)); /* per line, not 19 % of 742.40 once */
	free(m);
	free(t);
	/* one more row: refused, naming the bound */
	t = gen_rows(DOC_LINES_MAX / 4, 1);
	map_refused(t, &ctx, DOC_CONSUMER_INVOICE, 0, "more than DOC_LINES_MAX (256)");
	free(map_ok(t, &ctx, DOC_TRANSPORT_DOCUMENT, 0)); /* 65 goods rows fit */
	free(t);
	/* DOC_LINES_MAX order lines: one row each; one more line is refused */
	t = gen_rows(0, DOC_LINES_MAX);
	m = map_ok(t, &ctx, DOC_CONSUMER_INVOICE, 0);
	cr_expect_eq(m->n_lines, DOC_LINES_MAX);
	cr_expect_eq(m->total_gross, 1190LL * DOC_LINES_MAX);
	free(m);
	free(map_ok(t, &ctx, DOC_FULFILLER_INSTRUCTION, 0));
	free(t);
	t = gen_rows(0, DOC_LINES_MAX + 1);
	map_refused(t, &ctx, DOC_CONSUMER_INVOICE, 0, "order.lines: 257 entries, more than 256");
	free(t);
}

WM_TEST(doc_order, legs_at_and_past_doc_legs_max)
{
	struct doc_order_ctx ctx = test_ctx();
	struct doc_order_doc docs[DOC_ORDER_DOCS_MAX];
	char err[200];
	cr_assert_eq(DOC_LEGS_MAX, 32);
	char *t = gen_legs(DOC_LEGS_MAX);
	int n = doc_order_documents(t, strlen(t), docs, DOC_ORDER_DOCS_MAX, err, sizeof err);
	cr_assert_eq(n, DOC_ORDER_DOCS_MAX, "%s", err);
	cr_expect_eq(docs[n - 1].kind, DOC_ORIGINATOR_INVOICE);
	cr_expect_eq(docs[n - 1].leg, DOC_LEGS_MAX - 1);
	for (int i = 0; i < n; i++) {
		struct doc_model *m = map_ok(t, &ctx, docs[i].kind, docs[i].leg);
		cr_expect_eq(m->n_legs, DOC_LEGS_MAX);
		if (docs[i].kind == DOC_CONSUMER_INVOICE)
			cr_expect_eq(m->total_gross, 39984);
		if (docs[i].kind == DOC_ORIGINATOR_PROFORMA)
			cr_expect_eq(m->total_gross, 1000, "leg %d", docs[i].leg); /* its one bottle */
		free(m);
	}
	free(t);
	t = gen_legs(DOC_LEGS_MAX + 1);
	cr_expect_eq(doc_order_documents(t, strlen(t), docs, DOC_ORDER_DOCS_MAX, err, sizeof err), -1);
	cr_expect(strstr(err, "more than DOC_LEGS_MAX (32)"), "%s", err);
	map_refused(t, &ctx, DOC_CONSUMER_INVOICE, 0, "order.fulfillments: 33 entries, more than 32");
	map_refused(t, &ctx, DOC_CARRIER_LABEL, 32, "order.fulfillments: 33 entries");
	free(t);
}

/* ---- rendered and read back ------------------------------------------------ */

/* Render m to dir/name.pdf (its path into path); the text pdftotext reads
 * back, white space squeezed (malloc'd). */
static char *render_text(const struct doc_model *m, const char *dir, const char *name, char *path, size_t cap)
{
	struct doc_pdf pdf;
	char err[300], cmd[900], *out;
	cr_assert_eq(doc_render_pdf(m, &pdf, err, sizeof err), 0, "%s: %s", name, err);
	snprintf(path, cap, "%s/%s.pdf", dir, name);
	FILE *f = fopen(path, "wb");
	cr_assert(f, "open %s", path);
	cr_assert_eq(fwrite(pdf.data, 1, pdf.len, f), pdf.len);
	cr_assert_eq(fclose(f), 0);
	doc_pdf_free(&pdf);
	snprintf(cmd, sizeof cmd, "pdftotext -enc UTF-8 -raw '%s' - 2>/dev/null", path);
	cr_assert_eq(docfix_run(cmd, &out), 0, "pdftotext %s", path);
	docfix_squeeze(out);
	return out;
}

/* An amount as German documents print it ("1.234,56"), written here by
 * hand rather than with i18n.c. */
static void de_money(long long cents, char *out, size_t cap)
{
	char digits[32], grouped[48];
	snprintf(digits, sizeof digits, "%lld", cents / 100);
	size_t n = strlen(digits), k = 0;
	for (size_t i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			grouped[k++] = '.';
		grouped[k++] = digits[i];
	}
	grouped[k] = '\0';
	snprintf(out, cap, "%s,%02lld", grouped, cents % 100);
}

#define HAS_MONEY(text, cents, what)                                                        \
	do {                                                                                \
		char m_[48];                                                                \
		de_money((cents), m_, sizeof m_);                                           \
		cr_expect(strstr((text), m_) != NULL, "%s: %s not printed", (what), m_);     \
	} while (0)

/* The hand-written split order printed: each taxable line's VAT, the sum,
 * never the once-rounded 41,72. */
WM_TEST(doc_order, split_invoice_prints_per_line_vat)
{
	struct doc_order_ctx ctx = test_ctx();
	char dir[] = "/tmp/wm-doc-order-XXXXXX", path[200];
	cr_assert(mkdtemp(dir));
	struct doc_model *m = map_ok(split_order, &ctx, DOC_CONSUMER_INVOICE, 0);
	char *t = render_text(m, dir, "invoice", path, sizeof path);
	/* each taxable line: "Steuerbemessungsgrundlage 124,50 · USt 19 % 23,66" */
	cr_expect(strstr(t, "124,50 \u00b7"), "%s", t);
	cr_expect(strstr(t, "19 % 23,66"), "%s", t);
	cr_expect(strstr(t, "95,10 \u00b7"), "%s", t);
	cr_expect(strstr(t, "19 % 18,07"), "%s", t);
	cr_expect(strstr(t, "19 % 219,60 41,73"), "VAT summary: %s", t);
	cr_expect(strstr(t, "261,33 EUR"), "%s", t);
	cr_expect(strstr(t, "41,72") == NULL, "the once-rounded VAT is printed: %s", t);
	cr_expect(strstr(t, "Fracht"), "%s", t);
	cr_expect(strstr(t, "Shop am Markt"), "%s", t);
	free(t);
	free(m);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

/* The expected figures of one taxable line, read from the order JSON. */
struct fig {
	char offer[64];
	long long line, comp[7];
};

static long long cents_of(json_t *v)
{
	cr_assert(json_is_number(v));
	return llround(json_number_value(v) * 100.0);
}

/*
 * A real order from a running shard (tests/order_world.c: the estate holds
 * 5 at 10.00 EUR, the stockist 10 at 11.00 EUR; 7 units to DE split 5 + 2,
 * the figures of split_order above): GET as the operator, every document
 * mapped and rendered, every amount of the financial breakdown found by
 * pdftotext on the document it belongs to, each label's SSCC decoded by
 * zbarimg.  The order's own VAT (per taxable line) differs from 19 % of
 * its summed base rounded once, which is what made the model change.
 */
WM_TEST(doc_order, real_order_documents_reconcile)
{
	struct oworld x;
	ow_start(&x, NULL, 5, 2); /* neither covers 7 alone: estate first, then the stockist */
	world = &x;
	int st;
	json_t *placed = ow_order(&x, 7, NULL, NULL, &st);
	cr_assert_eq(st, 201);
	char path[200];
	snprintf(path, sizeof path, "/v1/orders/%s", json_string_value(json_object_get(placed, "order_id")));
	json_decref(placed);
	struct http_resp r;
	cr_assert_eq(http_do(x.port, "GET", path, NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	json_error_t je;
	json_t *o = json_loadb(r.body, r.body_len, 0, &je);
	cr_assert(o, "%s", je.text);

	/* The figures, from the JSON (component order: spec 2.9's). */
	static const char *const comps[7] = {"P_B2B", "R_Recruiter", "M_Curator", "F_Platform",
					     "C_Freight", "E_Excise", "V_VAT"};
	struct fig f[8];
	int nf = 0;
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(json_object_get(o, "financial_breakdown"), "lines"), i, e)
	{
		const char *offer = json_string_value(json_object_get(e, "offer_id"));
		long long line = json_integer_value(json_object_get(e, "line"));
		int k = 0;
		while (k < nf && (strcmp(f[k].offer, offer) || f[k].line != line))
			k++;
		if (k == nf) {
			cr_assert_lt(nf, 8);
			memset(&f[nf], 0, sizeof f[nf]);
			snprintf(f[nf].offer, sizeof f[nf].offer, "%s", offer);
			f[nf++].line = line;
		}
		int c = 0;
		while (c < 7 && strcmp(comps[c], json_string_value(json_object_get(e, "component"))))
			c++;
		cr_assert_lt(c, 7);
		f[k].comp[c] = cents_of(json_object_get(e, "amount"));
	}
	cr_assert_eq(nf, 2, "a split order: two taxable lines");
	long long base_sum = 0, vat_sum = 0;
	for (int k = 0; k < nf; k++) {
		for (int c = 0; c < 6; c++)
			base_sum += f[k].comp[c];
		vat_sum += f[k].comp[6];
	}
	long long total = cents_of(json_object_get(json_object_get(o, "financial_breakdown"), "total"));
	cr_assert_eq(base_sum + vat_sum, total);
	json_t *vat = json_array_get(json_object_get(json_array_get(json_object_get(o, "lines"), 0), "tax_breakdown"), 1);
	long long rate_bp = cents_of(json_object_get(vat, "rate_percent"));
	cr_assert_eq(rate_bp, 1900);
	long long once = (base_sum * rate_bp + 5000) / 10000;
	cr_expect_neq(once, vat_sum, "this order's per-line VAT %lld equals the once-rounded %lld", vat_sum, once);

	struct doc_order_ctx ctx = test_ctx();
	struct doc_order_doc docs[DOC_ORDER_DOCS_MAX];
	char err[300], dir[] = "/tmp/wm-doc-order-XXXXXX", pdf[200], name[64], cmd[900];
	cr_assert(mkdtemp(dir));
	int n = doc_order_documents(r.body, r.body_len, docs, DOC_ORDER_DOCS_MAX, err, sizeof err);
	cr_assert_eq(n, 10, "%s", err);
	json_t *legs = json_object_get(o, "fulfillments");
	for (int d = 0; d < n; d++) {
		struct doc_model *m = calloc(1, sizeof *m);
		cr_assert(m);
		cr_assert_eq(doc_order_model(r.body, r.body_len, &ctx, docs[d].kind, docs[d].leg, m, err, sizeof err), 0,
			     "%s leg %d: %s", doc_kind_names[docs[d].kind], docs[d].leg, err);
		snprintf(name, sizeof name, "%s-%d", doc_kind_names[docs[d].kind], docs[d].leg);
		char *t = render_text(m, dir, name, pdf, sizeof pdf);
		json_t *leg = json_array_get(legs, (size_t)docs[d].leg);
		const char *leg_offer = json_string_value(json_object_get(leg, "offer_id"));
		switch (docs[d].kind) {
		case DOC_CONSUMER_INVOICE:
			for (int k = 0; k < nf; k++) {
				long long b = 0;
				for (int c = 0; c < 6; c++)
					b += f[k].comp[c];
				HAS_MONEY(t, f[k].comp[0] + f[k].comp[1] + f[k].comp[2], "goods");
				for (int c = 3; c < 7; c++)
					if (f[k].comp[c])
						HAS_MONEY(t, f[k].comp[c], comps[c]);
				HAS_MONEY(t, b, "taxable line");
			}
			HAS_MONEY(t, base_sum, "VAT base");
			HAS_MONEY(t, vat_sum, "VAT");
			HAS_MONEY(t, total, "total");
			{
				char s[48];
				de_money(once, s, sizeof s);
				cr_expect(strstr(t, s) == NULL, "the once-rounded VAT %s is printed", s);
			}
			cr_expect(strstr(t, "Rechnung"), "not German: %s", t);
			break;
		case DOC_ORIGINATOR_PROFORMA:
		case DOC_ORIGINATOR_INVOICE:
			for (int k = 0; k < nf; k++)
				if (!strcmp(f[k].offer, leg_offer))
					HAS_MONEY(t, f[k].comp[0], "P_B2B of the leg");
			break;
		case DOC_CARRIER_LABEL: {
			const char *sscc = m->legs[docs[d].leg].sscc;
			cr_expect(sscc_ok(sscc), "%s", sscc);
			char *out, want[64];
			snprintf(cmd, sizeof cmd,
				 "pdftoppm -r 300 -png -singlefile '%s' '%s/label' && zbarimg -q '%s/label.png' 2>/dev/null",
				 pdf, dir, dir);
			cr_assert_eq(docfix_run(cmd, &out), 0, "zbarimg found no barcode");
			snprintf(want, sizeof want, "CODE-128:00%s\n", sscc);
			cr_expect(strstr(out, want), "SSCC %s not decoded: %s", sscc, out);
			snprintf(want, sizeof want, "CODE-128:%s\n", json_string_value(json_object_get(leg, "leg_id")));
			cr_expect(strstr(out, want), "leg id not decoded: %s", out);
			free(out);
			break;
		}
		case DOC_TRANSPORT_DOCUMENT:
			cr_expect(strstr(t, "W200"), "%s", t);
			cr_expect(strstr(t, "22042109"), "%s", t);
			break;
		case DOC_FULFILLER_INSTRUCTION: {
			/* the pick row: location (ctx), SKU, wine, the leg's quantity */
			char want[160];
			snprintf(want, sizeof want, "%s ", docs[d].leg == 0 ? "Cuverie A-3" : "Lager B-7");
			cr_expect(strstr(t, want), "%s", t);
			snprintf(want, sizeof want, "Bourgogne Rouge %lld ",
				  (long long)json_integer_value(json_object_get(leg, "qty")));
			cr_expect(strstr(t, want), "%s", t);
			break;
		}
		case DOC_KIND_COUNT:
			break;
		}
		free(t);
		free(m);
	}
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
	json_decref(o);
	http_resp_free(&r);
	world = NULL;
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
}
