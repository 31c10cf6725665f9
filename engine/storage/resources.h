/*
 * resources.h -- the registry of resource modules: their tables and routes.
 * Adding a resource = one table_ops and its routes, listed here and in
 * routes.c; nothing else in the engine changes.
 */
#ifndef WM_RESOURCES_H
#define WM_RESOURCES_H

#include "engine/storage/table.h"

extern const struct table_ops event_table_ops;
extern const struct table_ops partner_table_ops;
extern const struct table_ops key_table_ops;
extern const struct table_ops idem_table_ops;
extern const struct table_ops audit_table_ops;
extern const struct table_ops media_table_ops;
extern const struct table_ops producer_table_ops;
extern const struct table_ops wine_table_ops;
extern const struct table_ops extid_table_ops;
extern const struct table_ops review_table_ops;
extern const struct table_ops channel_table_ops;
extern const struct table_ops listing_table_ops;
extern const struct table_ops shop_table_ops;
extern const struct table_ops offer_table_ops;
extern const struct table_ops location_table_ops;
extern const struct table_ops inventory_table_ops;
extern const struct table_ops hold_table_ops;
extern const struct table_ops refdata_table_ops;
extern const struct table_ops payment_table_ops;
extern const struct table_ops order_table_ops;
extern const struct table_ops order_state_table_ops;
extern const struct table_ops leg_track_table_ops;
extern const struct table_ops pickup_table_ops;
extern const struct table_ops return_table_ops;
extern const struct table_ops payout_ledger_table_ops;
extern const struct table_ops compliance_table_ops;
extern const struct table_ops consumer_volume_table_ops;
extern const struct table_ops document_table_ops;
extern const struct table_ops doc_seq_table_ops;
extern const struct table_ops wh_endpoint_table_ops;  /* engine/webhooks/endpoint.c */
extern const struct table_ops wh_delivery_table_ops;  /* engine/webhooks/delivery.c */
extern const struct table_ops wh_cursor_table_ops;    /* engine/webhooks/delivery.c */
extern const struct table_ops stock_fold_table_ops;   /* engine/retention.c */
extern const struct table_ops sync_state_table_ops; /* engine/supply/sync.c */
extern const struct table_ops checks_finding_table_ops; /* engine/checks.c */
extern const struct table_ops checks_run_table_ops;     /* engine/checks.c */
extern const struct table_ops repl_pos_table_ops; /* REC_T_META: replication positions (engine/replication/repl_pos.c) */

/* NULL-terminated list of every table the shard has. */
extern const struct table_ops *const resource_tables[];

#endif
