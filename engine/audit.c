/*
 * audit.c -- the read audit (see audit.h).  STUB: to be implemented.
 */
#include "engine/audit.h"

void audit_read(struct api_ctx *c) { (void)c; }

void audit_metrics(struct shard *sh, struct buf *out)
{
	(void)sh;
	(void)out;
}

void audit_on_durable(struct shard *sh, uint64_t durable_lsn)
{
	(void)sh;
	(void)durable_lsn;
}

static int audit_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	(void)r;
	(void)doc;
	return 0;
}

const struct table_ops audit_table_ops = {
	.rec_table = REC_T_AUDIT,
	.name = "audit",
	.row_size = sizeof(struct row),
	.decode = audit_decode,
};

static void audit_list(struct api_ctx *c)
{
	struct api_page pg;
	if (api_page_parse(c, &pg) == 0)
		api_list(c, &c->sh->tables[REC_T_AUDIT].by_order, NULL, 0, &pg, NULL, NULL, NULL);
}

const struct route audit_routes[] = {
	{HTTP_M_GET, "/v1/audit", audit_list, SC_OPERATOR, ACT_OPERATE,
	 "Read audit (operators only): one record per authenticated read"},
	{0, NULL, NULL, 0, 0, NULL},
};
