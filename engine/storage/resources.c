/*
 * resources.c -- the list of tables a shard has, and the shard_open()
 * family that opens a data directory with all of them (the router opens
 * its own with a few: shard.h, shard_open_with).  Order is irrelevant for
 * correctness (records name their table); it is the snapshot write order.
 */
#include "engine/storage/resources.h"

#include "engine/storage/shard.h"

const struct table_ops *const resource_tables[] = {
	&repl_pos_table_ops, /* REC_T_META: replication positions */
	&partner_table_ops,
	&event_table_ops,
	&key_table_ops,
	&idem_table_ops,
	&audit_table_ops,
	&media_table_ops,
	&producer_table_ops, /* before wines: snapshot order */
	&wine_table_ops,
	&extid_table_ops,
	&review_table_ops,
	&channel_table_ops, /* before shops: snapshot order */
	&shop_table_ops,
	&offer_table_ops, /* after wines */
	&listing_table_ops, /* after offers and channels */
	&location_table_ops,
	&inventory_table_ops, /* after offers and locations */
	&hold_table_ops, /* after levels */
	&order_table_ops, /* after holds */
	&order_state_table_ops, /* after order bodies: snapshot order */
	&refdata_table_ops, /* one row: an uploaded reference-data version (engine/pricing/refadmin.c) */
	&payment_table_ops, /* the sandbox payment ledger, one row per order (engine/orders/payment.c) */
	&leg_track_table_ops, /* a leg's carrier and scans, after order bodies (engine/orders/tracking.c) */
	&pickup_table_ops, /* carrier pickups per order and location, after order bodies (engine/orders/pickup.c) */
	&return_table_ops, /* returns and refunds, after order bodies (engine/orders/returns.c) */
	&payout_ledger_table_ops, /* the sandbox provider's payouts (engine/orders/payment.c) */
	&compliance_table_ops, /* the delivery register (engine/orders/compliance.c) */
	&consumer_volume_table_ops, /* consumers' orders against the volume caps (engine/orders/consumer_volume.c) */
	&document_table_ops, /* an order's trade documents, after order bodies (engine/orders/documents.c) */
	&doc_seq_table_ops, /* their numbering sequences (engine/orders/documents.c) */
	&wh_endpoint_table_ops, /* webhook endpoints (engine/webhooks/endpoint.c) */
	&wh_delivery_table_ops, /* their deliveries, one per (endpoint, event) (engine/webhooks/delivery.c) */
	&wh_cursor_table_ops, /* the fan-out's position in the event log (engine/webhooks/delivery.c) */
	&stock_fold_table_ops, /* levels' pruned stock.changed events, summed (engine/retention.c) */
	&sync_state_table_ops, /* each caller's feed state (engine/supply/sync.c) */
	&checks_finding_table_ops, /* open consistency-check findings (engine/checks.c) */
	&checks_run_table_ops, /* the checks' last run (engine/checks.c) */
	NULL,
};

int shard_open(struct shard *sh, const struct config *cfg, char *err, size_t errlen)
{
	struct shard_open_opts o = {.tables = resource_tables};
	return shard_open_with(sh, cfg, &o, err, errlen);
}

int shard_open_logged(struct shard *sh, const struct config *cfg, shard_logged_fn logged, struct repl_pub *pub,
		      char *err, size_t errlen)
{
	struct shard_open_opts o = {.tables = resource_tables, .logged = logged, .pub = pub};
	return shard_open_with(sh, cfg, &o, err, errlen);
}

int shard_load(struct shard *sh, const struct config *cfg, const char *snap_path, uint64_t upto_lsn,
	       char *err, size_t errlen)
{
	struct shard_open_opts o = {.tables = resource_tables, .snap_path = snap_path, .upto_lsn = upto_lsn};
	return shard_load_with(sh, cfg, &o, err, errlen);
}
