/*
 * record.c -- encode/decode of logical records (format in record.h).
 * Decoding treats its input as untrusted: it runs on WAL and snapshot bytes
 * that passed a checksum, but a checksum is not a proof of well-formedness.
 */
#include "engine/storage/record.h"

static const char *const rec_names[REC_T_COUNT_] = {
	[REC_T_META] = "meta",         [REC_T_EVENT] = "event",
	[REC_T_PARTNER] = "partner",   [REC_T_KEY] = "api_key",
	[REC_T_IDEMPOTENCY] = "idempotency", [REC_T_AUDIT] = "audit",
	[REC_T_PRODUCER] = "producer", [REC_T_WINE] = "wine",
	[REC_T_EXTID] = "external_id", [REC_T_MEDIA] = "media",
	[REC_T_OFFER] = "offer",       [REC_T_LISTING] = "listing",
	[REC_T_CHANNEL] = "sales_channel", [REC_T_SHOP] = "curated_shop",
	[REC_T_LOCATION] = "location", [REC_T_INVENTORY] = "inventory",
	[REC_T_HOLD] = "hold",         [REC_T_REFDATA] = "refdata",
	[REC_T_REVIEW] = "wine_review", [REC_T_PAYMENT] = "payment",
	[REC_T_ORDER] = "order",       [REC_T_ORDER_STATE] = "order_state",
	[REC_T_LEG_TRACK] = "leg_track", [REC_T_PICKUP] = "pickup",
	[REC_T_RETURN] = "order_return", [REC_T_PAYOUT] = "payout",
	[REC_T_COMPLIANCE] = "compliance", [REC_T_CONSUMER_VOLUME] = "consumer_volume",
	[REC_T_DOCUMENT] = "document", [REC_T_DOC_SEQ] = "doc_seq",
	[REC_T_WH_ENDPOINT] = "webhook_endpoint", [REC_T_WH_DELIVERY] = "webhook_delivery",
	[REC_T_WH_CURSOR] = "webhook_cursor", [REC_T_SYNC_STATE] = "sync_state",
	[REC_T_CHECK_FINDING] = "check_finding", [REC_T_CHECK_RUN] = "check_run",
	[REC_T_STOCK_FOLD] = "stock_fold",
};

const char *rec_table_name(unsigned table)
{
	return table < REC_T_COUNT_ && rec_names[table] ? rec_names[table] : "?";
}

int rec_encode(struct buf *out, uint8_t op, uint8_t table, uint8_t version,
	       const char *key, size_t key_len, const char *val, size_t val_len)
{
	if (key_len > REC_MAX_KEY || val_len > REC_MAX_VAL)
		return -1;
	uint8_t h[REC_HEADER_SIZE] = {op, table, version, 0};
	wr_u16(h + 4, (uint16_t)key_len);
	wr_u32(h + 6, (uint32_t)val_len);
	size_t save = out->len;
	if (buf_append(out, h, sizeof(h)) || buf_append(out, key, key_len) ||
	    buf_append(out, val, val_len)) {
		out->len = save;
		return -1;
	}
	return 0;
}

int rec_decode(const uint8_t *p, size_t len, size_t *off, struct rec_view *rv)
{
	if (*off == len)
		return 0;
	if (*off > len || len - *off < REC_HEADER_SIZE)
		return -1;
	const uint8_t *h = p + *off;
	rv->op = h[0];
	rv->table = h[1];
	rv->version = h[2];
	rv->key_len = rd_u16(h + 4);
	rv->val_len = rd_u32(h + 6);
	if ((rv->op != REC_PUT && rv->op != REC_DEL) || rv->table >= REC_T_COUNT_ ||
	    rv->key_len > REC_MAX_KEY || rv->val_len > REC_MAX_VAL)
		return -1;
	size_t need = (size_t)REC_HEADER_SIZE + rv->key_len + rv->val_len;
	if (len - *off < need)
		return -1;
	rv->key = (const char *)h + REC_HEADER_SIZE;
	rv->val = rv->key + rv->key_len;
	*off += need;
	return 1;
}

int rec_encode_image(struct buf *out, uint8_t table, const char *key, size_t key_len, const char *doc,
		     size_t doc_len, const void *img, size_t img_len)
{
	if (key_len > REC_MAX_KEY || doc_len > REC_MAX_VAL || img_len > REC_MAX_VAL ||
	    4 + doc_len + img_len > REC_MAX_VAL)
		return -1;
	size_t val_len = 4 + doc_len + img_len;
	uint8_t h[REC_HEADER_SIZE] = {REC_PUT, table, REC_V_IMAGE, 0};
	wr_u16(h + 4, (uint16_t)key_len);
	wr_u32(h + 6, (uint32_t)val_len);
	uint8_t dl[4];
	wr_u32(dl, (uint32_t)doc_len);
	size_t save = out->len;
	if (buf_append(out, h, sizeof(h)) || buf_append(out, key, key_len) || buf_append(out, dl, 4) ||
	    buf_append(out, doc, doc_len) || buf_append(out, img, img_len)) {
		out->len = save;
		return -1;
	}
	return 0;
}

int rec_doc_image(const struct rec_view *rv, const char **doc, uint32_t *doc_len, const uint8_t **img,
		  uint32_t *img_len)
{
	if (rv->version == REC_V_DOC) {
		*doc = rv->val;
		*doc_len = rv->val_len;
		*img = NULL;
		*img_len = 0;
		return 0;
	}
	if (rv->version != REC_V_IMAGE || rv->op != REC_PUT || rv->val_len < 4)
		return -1;
	uint32_t dl = rd_u32((const uint8_t *)rv->val);
	if (dl > rv->val_len - 4)
		return -1;
	*doc = rv->val + 4;
	*doc_len = dl;
	*img = (const uint8_t *)rv->val + 4 + dl;
	*img_len = rv->val_len - 4 - dl;
	return 0;
}
