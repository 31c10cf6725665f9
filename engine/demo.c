/*
 * demo.c -- a small, realistic set of partners so that `make run` shows
 * something on the first GET.  Seeded through the same validation and
 * transaction path as the API, and only into an empty data directory, so it
 * is durable like any other write and never duplicated on restart.
 */
#include "engine/demo.h"

#include <stdio.h>
#include <string.h>

#include "engine/base/log.h"
#include "engine/catalogue/partner.h"
#include "engine/catalogue/wine.h"

static const char *const demo_partners[] = {
	"{\"legal_name\":\"Domaine des Trois Chênes SARL\",\"country\":\"FR\",\"roles\":[\"originator\"],"
	"\"originator_type\":\"estate\",\"contact\":{\"name\":\"Claire Martin\",\"email\":\"claire@troischenes.example\"},"
	"\"payout_provider\":\"sandbox\",\"payout_account_id\":\"acct_demo_1\",\"payout_currency\":\"EUR\"}",
	"{\"legal_name\":\"Cantina Colli Alti S.r.l.\",\"country\":\"IT\",\"roles\":[\"originator\",\"seller\"],"
	"\"originator_type\":\"estate\",\"payout_provider\":\"sandbox\",\"payout_account_id\":\"acct_demo_2\",\"payout_currency\":\"EUR\"}",
	"{\"legal_name\":\"Weinhandel Nord GmbH\",\"country\":\"DE\",\"roles\":[\"seller\"],\"payout_provider\":\"sandbox\",\"payout_account_id\":\"acct_demo_3\",\"payout_currency\":\"EUR\"}",
	"{\"legal_name\":\"Nordic Cellar Logistics AS\",\"country\":\"NO\",\"roles\":[\"fulfiller\"],"
	"\"capabilities\":{\"feeds_unoffered_wines\":true},\"payout_provider\":\"sandbox\",\"payout_account_id\":\"acct_demo_4\",\"payout_currency\":\"NOK\"}",
	"{\"legal_name\":\"Private Cellar of J. Smith\",\"country\":\"GB\",\"roles\":[\"originator\"],"
	"\"originator_type\":\"collector\",\"payout_provider\":\"sandbox\",\"payout_account_id\":\"acct_demo_5\",\"payout_currency\":\"GBP\"}",
};

/* A few canonical wines (drafts, with inline producers), ingested through
 * the same validation and dedup path as POST /v1/wines. */
static const char *const demo_wines[] = {
	"{\"title\":\"Domaine des Trois Chênes Chablis Premier Cru 2021\",\"producer\":{\"name\":\"Domaine des Trois "
	"Chênes\",\"country\":\"FR\",\"region\":\"Bourgogne\"},\"cuvee\":\"Chablis Premier Cru\",\"vintage\":2021,"
	"\"colour\":\"white\",\"category\":\"wine\",\"abv\":12.5,\"volume_in_liters\":0.75,\"country\":\"FR\","
	"\"region\":\"Bourgogne\",\"appellation\":\"Chablis Premier Cru\",\"quality_scheme\":\"PDO\","
	"\"grape_varieties\":[{\"variety\":\"Chardonnay\",\"percentage\":100}],\"allergens\":[\"sulphites\"]}",
	"{\"title\":\"Cantina Colli Alti Prosecco Superiore Brut NV\",\"producer\":{\"name\":\"Cantina Colli Alti\","
	"\"country\":\"IT\"},\"cuvee\":\"Prosecco Superiore\",\"is_non_vintage\":true,\"colour\":\"white\","
	"\"category\":\"quality_sparkling\",\"dosage_class\":\"brut\",\"abv\":11,\"volume_in_liters\":0.75,"
	"\"country\":\"IT\",\"region\":\"Veneto\",\"quality_scheme\":\"PDO\",\"allergens\":[\"sulphites\"]}",
	"{\"title\":\"Cantina Colli Alti Rosso Riserva 2018 Magnum\",\"producer\":{\"name\":\"Cantina Colli Alti\","
	"\"country\":\"IT\"},\"cuvee\":\"Rosso Riserva\",\"vintage\":2018,\"colour\":\"red\",\"category\":\"wine\","
	"\"abv\":14,\"volume_in_liters\":1.5,\"country\":\"IT\",\"region\":\"Toscana\",\"allergens\":[\"sulphites\"]}",
};

static int demo_wine(struct shard *sh, const char *json)
{
	static struct api_ctx c; /* large; seeded once at start-up */
	memset(&c, 0, sizeof(c));
	c.sh = sh;
	c.who.authenticated = c.who.is_platform = 1;
	snprintf(c.who.entity_id, sizeof(c.who.entity_id), "platform");
	struct json_doc *d = json_parse(json, strlen(json), NULL, NULL);
	if (!d)
		return -1;
	struct wine_ingest_result r;
	memset(&r, 0, sizeof(r));
	int st = wine_ingest(&c, json_root(d), &r);
	json_doc_free(d);
	if (st != 201 && st != 200)
		log_error("msg=\"demo wine rejected\" status=%d code=%s first_error=\"%s: %s\"", st,
			  r.code ? r.code : "-", c.n_errs ? c.err_field[0] : "-", c.n_errs ? c.err_msg[0] : "-");
	return st == 201 || st == 200 ? 0 : -1;
}

int demo_seed_if_empty(struct shard *sh)
{
	if (table_count(&sh->tables[REC_T_PARTNER]) != 0)
		return 0;
	for (size_t i = 0; i < sizeof(demo_partners) / sizeof(demo_partners[0]); i++)
		if (partner_seed(sh, demo_partners[i]))
			return -1;
	for (size_t i = 0; i < sizeof(demo_wines) / sizeof(demo_wines[0]); i++)
		if (demo_wine(sh, demo_wines[i]))
			return -1;
	wal_flush(sh->wal);
	log_info("msg=\"demo data seeded\" partners=%zu wines=%zu", sizeof(demo_partners) / sizeof(demo_partners[0]),
		 sizeof(demo_wines) / sizeof(demo_wines[0]));
	return 0;
}
