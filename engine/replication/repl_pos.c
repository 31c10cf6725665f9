/*
 * repl_pos.c -- the subscriber's logged positions: one row per publisher
 * in the META table, id "repl/pos/<publisher id>", document
 *
 *   {"publisher":1,"epoch":"89ab...","lsn":1234,"state":"streaming"}
 *
 * Why a row and not a file: the position must move in the SAME WAL
 * transaction as the records it covers, so that a crash (kill -9
 * included) leaves both or neither; recovery then rebuilds the position
 * exactly with the data, and the subscriber resumes without loss or
 * duplicate application.  "resyncing" marks a snapshot walk in progress:
 * its pages are not a consistent position, so a restart starts the resync
 * over.  The row doubles as the marker of a transaction applied as a
 * subscriber (repl_is_replica_txn): a publisher never ships those.
 *
 * Also where the published table sets are decided (repl_published).
 */
#include "engine/replication/repl.h"
#include "engine/replication/repl_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/storage/record.h"
#include "engine/storage/shard.h"
#include "net/json.h"

repl_tables repl_published(uint32_t publisher)
{
	repl_tables stock = REPL_T(REC_T_LOCATION) | REPL_T(REC_T_INVENTORY);
	if (publisher != REPL_HOME)
		return stock;
	return stock | REPL_T(REC_T_PARTNER) | REPL_T(REC_T_KEY) | REPL_T(REC_T_PRODUCER) | REPL_T(REC_T_WINE) |
	       REPL_T(REC_T_EXTID) | REPL_T(REC_T_MEDIA) | REPL_T(REC_T_OFFER) | REPL_T(REC_T_LISTING) |
	       REPL_T(REC_T_CHANNEL) | REPL_T(REC_T_SHOP) | REPL_T(REC_T_REVIEW) | REPL_T(REC_T_REFDATA) |
	       REPL_T(REC_T_WH_ENDPOINT);
}

struct pos_row {
	struct row row;
	struct repl_pos pos;
};

static const char *const state_names[] = {"streaming", "resyncing"};

/* Parse a position document; 0 or -1. */
static int pos_parse(const struct json_value *doc, struct repl_pos *p)
{
	const struct json_value *pub = json_get(doc, "publisher"), *ep = json_get(doc, "epoch"),
				*lsn = json_get(doc, "lsn"), *st = json_get(doc, "state");
	int64_t v, l;
	if (!pub || !ep || !lsn || !st || json_to_int64(pub, &v) || v < 0 || v >= (int64_t)REPL_MAX_PUBLISHERS ||
	    json_to_int64(lsn, &l) || l < 0 || ep->type != JSON_STRING || ep->len != 16 || st->type != JSON_STRING)
		return -1;
	char *end;
	uint64_t e = strtoull(ep->u.str, &end, 16);
	if (*end)
		return -1;
	int s = -1;
	for (int i = 0; i < 2; i++)
		if (!strcmp(st->u.str, state_names[i]))
			s = i;
	if (s < 0)
		return -1;
	p->publisher = (uint32_t)v;
	p->epoch = e;
	p->lsn = (uint64_t)l;
	p->state = (uint8_t)s;
	return 0;
}

/* Only position rows live in META today; any other id is refused so a
 * stray record cannot be taken for one. */
static int pos_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	size_t pl = sizeof(REPL_POS_PREFIX) - 1;
	if (r->id_len <= pl || memcmp(r->id, REPL_POS_PREFIX, pl))
		return -1;
	struct pos_row *pr = (struct pos_row *)r;
	if (pos_parse(doc, &pr->pos))
		return -1;
	char want[32];
	snprintf(want, sizeof(want), REPL_POS_PREFIX "%u", pr->pos.publisher);
	return strlen(want) == r->id_len && !memcmp(want, r->id, r->id_len) ? 0 : -1;
}

const struct table_ops repl_pos_table_ops = {
	.rec_table = REC_T_META,
	.name = "replication_position",
	.row_size = sizeof(struct pos_row),
	.decode = pos_decode,
};

int repl_pos_get(struct shard *sh, uint32_t publisher, struct repl_pos *p)
{
	memset(p, 0, sizeof(*p));
	char id[32];
	int n = snprintf(id, sizeof(id), REPL_POS_PREFIX "%u", publisher);
	const struct row *r = table_get(&sh->tables[REC_T_META], id, (size_t)n);
	if (!r)
		return 0;
	*p = ((const struct pos_row *)r)->pos;
	return 1;
}

int repl_pos_put(struct shard *sh, const struct repl_pos *p)
{
	char id[32], doc[REPL_POS_MAX_DOC];
	int il = snprintf(id, sizeof(id), REPL_POS_PREFIX "%u", p->publisher);
	int dl = snprintf(doc, sizeof(doc), "{\"publisher\":%u,\"epoch\":\"%016" PRIx64 "\",\"lsn\":%" PRIu64
			  ",\"state\":\"%s\"}", p->publisher, p->epoch, p->lsn, state_names[p->state ? 1 : 0]);
	return txn_put(sh, REC_T_META, id, (size_t)il, doc, (size_t)dl);
}

int repl_is_replica_txn(const void *img, size_t len)
{
	size_t off = 0, pl = sizeof(REPL_POS_PREFIX) - 1;
	struct rec_view rv;
	while (rec_decode(img, len, &off, &rv) == 1)
		if (rv.table == REC_T_META && rv.key_len > pl && !memcmp(rv.key, REPL_POS_PREFIX, pl))
			return 1;
	return 0;
}
