/*
 * doc_fixtures.c -- see doc_fixtures.h.  The arithmetic, done on paper:
 *
 *   line 0:  6 x 16.90 =   101.40 at 19 %   VAT 19.266 -> 19.27
 *   line 1: 60 x 23.50 = 1,410.00 at  7 %   VAT 98.70
 *   both lines:  net 1,511.40  VAT 117.97  total 1,629.37
 *   leg 0 only:  net   101.40  VAT  19.27  total   120.67
 *   leg 1 only:  net 1,410.00  VAT  98.70  total 1,508.70
 *
 * SSCCs: GS1 mod-10 over 37612345000000001 gives 6, over
 * 37612345000000002 gives 3 (weights 3,1,3,... from the right).
 */
#include "tests/doc_fixtures.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <criterion/criterion.h>

static void set(char *dst, size_t cap, const char *s)
{
	snprintf(dst, cap, "%s", s);
}
#define SET(dst, s) set((dst), sizeof(dst), (s))

static void party(struct doc_party *p, const char *name, const char *a0, const char *a1,
		  const char *country, const char *vat, const char *excise)
{
	SET(p->name, name);
	SET(p->address[0], a0);
	SET(p->address[1], a1);
	SET(p->country, country);
	SET(p->vat_id, vat);
	SET(p->excise_number, excise);
}

static void wine(struct doc_wine *w, const char *name, int vintage, int abv, const char *producer,
		 const char *origin)
{
	SET(w->name, name);
	w->vintage = vintage;
	w->abv_centi = abv;
	w->volume_ml = 750;
	SET(w->allergens, "contains sulphites");
	SET(w->producer, producer);
	SET(w->origin, origin);
}

struct doc_model *docfix_order(enum doc_kind k, const char *lang, int split, int leg)
{
	struct doc_model *m = calloc(1, sizeof *m);
	if (!m)
		abort();
	m->kind = k;
	SET(m->lang, lang);
	SET(m->currency, "EUR");
	SET(m->series, "INV-DE-2026");
	m->number = 42;
	m->issue_date = (struct doc_date){2026, 11, 25};
	m->supply_date = (struct doc_date){2026, 11, 27};
	SET(m->order_id, "ord_7Hq2");
	party(&m->issuer, "Weinmarkt Plattform GmbH", "Beispielstraße 1", "10115 Berlin", "DE",
	      "DE123456789", "");
	party(&m->recipient, "Jürgen Müller-Łukasiewicz", "Hauptstraße 5", "80331 München", "DE",
	      "DE987654321", "DE00000111222");
	party(&m->ship_to, "Дмитрий Иванов", "Lindenallee 9", "80331 München", "DE", "", "");
	SET(m->seller_name, "Weinladen Beispiel GmbH");
	m->destination = DOC_DEST_DIRECT_DELIVERY;
	m->leg = leg;

	m->n_legs = split ? 2 : 1;
	struct doc_leg *a = &m->legs[0], *b = &m->legs[1];
	SET(a->id, "LEG-A1");
	party(&a->originator, "Domaine Exemple SARL", "1 rue des Vignes", "21200 Beaune", "FR",
	      "FR12345678901", "FR0123456789E");
	party(&a->fulfiller, "Cave de Beaune Logistique", "12 rue du Port", "21200 Beaune", "FR", "",
	      "FR0987654321E");
	SET(a->sscc, "376123450000000016");
	a->pickup = (struct doc_window){{2026, 11, 26}, 9 * 60, 12 * 60};
	if (split) {
		SET(b->id, "LEG-B2");
		party(&b->originator, "Κτήμα Άλφα Α.Ε.", "Οδός Αμπελώνων 3", "59100 Νάουσα", "GR",
		      "EL094123456", "GR00001234567");
		party(&b->fulfiller, "Κτήμα Άλφα Α.Ε.", "Οδός Αμπελώνων 3", "59100 Νάουσα", "GR", "",
		      "GR00001234567");
		SET(b->sscc, "376123450000000023");
		b->pickup = (struct doc_window){{2026, 11, 27}, 14 * 60, 17 * 60 + 30};
	}

	m->n_lines = 2;
	struct doc_line *l0 = &m->lines[0], *l1 = &m->lines[1];
	SET(l0->description, "Domaine Exemple Bourgogne Rouge 2022");
	wine(&l0->wine, "Bourgogne Rouge", 2022, 1300, "Domaine Exemple, 21200 Beaune",
	     "AOP Bourgogne, France");
	l0->leg = 0;
	l0->quantity = 6;
	l0->unit_price = 1690;
	l0->net = 10140;
	l0->vat_rate_bp = 1900;
	SET(l0->excise_code, "W200");
	SET(l0->cn_code, "22042109");
	l0->litres_cl = 450;
	l0->packages = 1;

	SET(l1->description, "Κτήμα Άλφα Ξινόμαυρο 2020");
	wine(&l1->wine, "Ξινόμαυρο", 2020, 1350, "Κτήμα Άλφα, Νάουσα", "ΠΟΠ Νάουσα, Ελλάδα");
	l1->leg = split ? 1 : 0;
	l1->quantity = 60;
	l1->unit_price = 2350;
	l1->net = 141000;
	l1->vat_rate_bp = 700;
	SET(l1->excise_code, "W200");
	SET(l1->cn_code, "22042198");
	l1->litres_cl = 4500;
	l1->packages = 5;

	m->n_picks = 2;
	m->picks[0] = (struct doc_pick){.leg = 0, .quantity = 6};
	SET(m->picks[0].location, "A-03-2");
	SET(m->picks[0].sku, "EX-BR-22");
	SET(m->picks[0].description, "Bourgogne Rouge 2022");
	m->picks[1] = (struct doc_pick){.leg = split ? 1 : 0, .quantity = 60};
	SET(m->picks[1].location, "Θ-4 Κελάρι");
	SET(m->picks[1].sku, "KA-XI-20");
	SET(m->picks[1].description, "Ξινόμαυρο 2020");
	m->n_boxes = 2;
	m->boxes[0] = (struct doc_box){.leg = 0, .box_units = 6, .count = 1};
	m->boxes[1] = (struct doc_box){.leg = split ? 1 : 0, .box_units = 12, .count = 5};

	/* The sums, from the table at the top of this file. */
	int only0 = split && doc_kind_per_leg(k) && leg == 0;
	int only1 = split && doc_kind_per_leg(k) && leg == 1;
	if (only0) {
		m->n_vat = 1;
		m->vat[0] = (struct doc_vat){1900, 10140, 1927};
		m->total_net = 10140;
		m->total_vat = 1927;
		m->total_gross = 12067;
	} else if (only1) {
		m->n_vat = 1;
		m->vat[0] = (struct doc_vat){700, 141000, 9870};
		m->total_net = 141000;
		m->total_vat = 9870;
		m->total_gross = 150870;
	} else {
		m->n_vat = 2;
		m->vat[0] = (struct doc_vat){1900, 10140, 1927};
		m->vat[1] = (struct doc_vat){700, 141000, 9870};
		m->total_net = 151140;
		m->total_vat = 11797;
		m->total_gross = 162937;
	}
	return m;
}

struct doc_model *docfix_many_lines(int n, const char *lang)
{
	struct doc_model *m = docfix_order(DOC_CONSUMER_INVOICE, lang, 0, 0);
	m->n_lines = n;
	for (int i = 0; i < n; i++) {
		struct doc_line *l = &m->lines[i];
		*l = m->lines[0];
		snprintf(l->description, sizeof l->description, "Wine number %03d", i + 1);
		l->quantity = 1;
		l->unit_price = 1000;
		l->net = 1000;
		l->vat_rate_bp = 1900;
	}
	char err[160];
	if (doc_model_sum(m, err, sizeof err))
		abort();
	return m;
}

int docfix_run(const char *cmd, char **out)
{
	FILE *p = popen(cmd, "r");
	cr_assert(p, "popen %s", cmd);
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	cr_assert(buf);
	size_t n;
	while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (cap - len < 1024) {
			cap *= 2;
			buf = realloc(buf, cap);
			cr_assert(buf);
		}
	}
	buf[len] = '\0';
	int st = pclose(p);
	if (out)
		*out = buf;
	else
		free(buf);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void docfix_squeeze(char *s)
{
	char *w = s;
	int space = 0;
	for (char *r = s; *r; r++) {
		if (*r == ' ' || *r == '\n' || *r == '\t' || *r == '\f' || *r == '\r') {
			space = 1;
			continue;
		}
		if (space && w != s)
			*w++ = ' ';
		space = 0;
		*w++ = *r;
	}
	*w = '\0';
}

char *docfix_pdf_text(const char *path)
{
	char cmd[700], *out;
	snprintf(cmd, sizeof cmd, "pdftotext -enc UTF-8 -raw '%s' - 2>/dev/null", path);
	cr_assert_eq(docfix_run(cmd, &out), 0, "pdftotext %s", path);
	docfix_squeeze(out);
	return out;
}
