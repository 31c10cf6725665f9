/*
 * idem.c -- Idempotency-Key (see idem.h).  STUB: to be implemented.
 */
#include "engine/idem.h"

int idem_begin(struct api_ctx *c)
{
	(void)c;
	return 0;
}

void idem_end(struct api_ctx *c) { (void)c; }

void idem_prune(struct shard *sh) { (void)sh; }

static int idem_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	(void)r;
	(void)doc;
	return 0;
}

const struct table_ops idem_table_ops = {
	.rec_table = REC_T_IDEMPOTENCY,
	.name = "idempotency",
	.row_size = sizeof(struct row),
	.decode = idem_decode,
};
