/*
 * demo.c -- a small, realistic set of partners so that `make run` shows
 * something on the first GET.  Seeded through the same validation and
 * transaction path as the API, and only into an empty data directory, so it
 * is durable like any other write and never duplicated on restart.
 */
#include "engine/demo.h"

#include "engine/log.h"
#include "engine/partner.h"

static const char *const demo_partners[] = {
	"{\"legal_name\":\"Domaine des Trois Chênes SARL\",\"country\":\"FR\",\"roles\":[\"originator\"],"
	"\"originator_type\":\"estate\",\"contact\":{\"name\":\"Claire Martin\",\"email\":\"claire@troischenes.example\"},"
	"\"payout_currency\":\"EUR\"}",
	"{\"legal_name\":\"Cantina Colli Alti S.r.l.\",\"country\":\"IT\",\"roles\":[\"originator\",\"seller\"],"
	"\"originator_type\":\"estate\",\"payout_currency\":\"EUR\"}",
	"{\"legal_name\":\"Weinhandel Nord GmbH\",\"country\":\"DE\",\"roles\":[\"seller\"],\"payout_currency\":\"EUR\"}",
	"{\"legal_name\":\"Nordic Cellar Logistics AS\",\"country\":\"NO\",\"roles\":[\"fulfiller\"],"
	"\"capabilities\":{\"feeds_unoffered_wines\":true},\"payout_currency\":\"NOK\"}",
	"{\"legal_name\":\"Private Cellar of J. Smith\",\"country\":\"GB\",\"roles\":[\"originator\"],"
	"\"originator_type\":\"collector\",\"payout_currency\":\"GBP\"}",
};

int demo_seed_if_empty(struct shard *sh)
{
	if (table_count(&sh->tables[REC_T_PARTNER]) != 0)
		return 0;
	for (size_t i = 0; i < sizeof(demo_partners) / sizeof(demo_partners[0]); i++)
		if (partner_seed(sh, demo_partners[i]))
			return -1;
	wal_flush(sh->wal);
	log_info("msg=\"demo data seeded\" partners=%zu", sizeof(demo_partners) / sizeof(demo_partners[0]));
	return 0;
}
