/*
 * record.h -- logical records: the unit of the WAL and of snapshots.
 *
 * A transaction image (the payload the engine hands to wal_append) is a
 * sequence of records; a snapshot is a sequence of PUT records.  A record
 * is the after-image of one row (DESIGN.md section 3):
 *
 *   u8 op (REC_PUT | REC_DEL)   u8 table (enum rec_table)
 *   u8 format version           u8 reserved (0)
 *   u16 key_len                 u32 val_len
 *   key bytes (the row id)      value bytes (the row's stored document)
 *
 * The value is the row's canonical JSON document; the engine rebuilds its
 * typed C struct from it on replay, through the same decoder as on create.
 * The header is 10 bytes, little-endian.
 *
 * Format versions.  REC_V_DOC (1): the value is the document.  REC_V_IMAGE
 * (2, snapshots only, for a table with table_ops.image): the value is
 *
 *   u32 doc_len   document bytes   image bytes (the rest)
 *
 * the document as in version 1, then the row's typed values as the table
 * wrote them (engine/storage/image.h); recovery fills the row from the
 * image and only copies the document.  The WAL holds version 1 only.
 */
#ifndef WM_RECORD_H
#define WM_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "net/buf.h"

#define REC_HEADER_SIZE 10u
#define REC_MAX_KEY 255u
#define REC_MAX_VAL (4u << 20)

enum rec_op { REC_PUT = 1, REC_DEL = 2 };
enum rec_version { REC_V_DOC = 1, REC_V_IMAGE = 2 };

/* Table ids are part of the on-disk format: append only, never renumber. */
enum rec_table {
	REC_T_META = 0,      /* engine metadata (id clock, ...) */
	REC_T_EVENT = 1,
	REC_T_PARTNER = 2,
	REC_T_KEY = 3,
	REC_T_IDEMPOTENCY = 4,
	REC_T_AUDIT = 5,
	REC_T_PRODUCER = 6,
	REC_T_WINE = 7,
	REC_T_EXTID = 8,
	REC_T_MEDIA = 9,
	REC_T_OFFER = 10,
	REC_T_LISTING = 11,
	REC_T_CHANNEL = 12,
	REC_T_SHOP = 13,
	REC_T_LOCATION = 14,
	REC_T_INVENTORY = 15,
	REC_T_HOLD = 16,
	REC_T_REFDATA = 17,
	REC_T_REVIEW = 18,
	REC_T_PAYMENT = 19,  /* the sandbox payment provider's ledger (engine/orders/payment.c) */
	REC_T_ORDER = 20,    /* an order's body, written once at capture (engine/orders/order.c) */
	REC_T_ORDER_STATE = 21, /* an order's mutable state, id = the order id (engine/orders/order_state.c) */
	REC_T_LEG_TRACK = 22, /* a fulfilment leg's carrier and scans, id = the leg id (engine/orders/tracking.c) */
	REC_T_PICKUP = 23,    /* a carrier pickup per order and location (engine/orders/pickup.c) */
	REC_T_RETURN = 24,    /* a return or refund of an order, id "<order id>.R<n>" (engine/orders/returns.c) */
	REC_T_PAYOUT = 25,    /* the payment provider's payouts to partners, id "<order id>.S<n>" (engine/orders/payment.c) */
	REC_T_COMPLIANCE = 26, /* the delivery register, id "<order id>.C<leg>.<line>" (engine/orders/compliance.c) */
	REC_T_CONSUMER_VOLUME = 27, /* a consumer's orders against the volume caps (engine/orders/consumer_volume.c) */
	REC_T_DOCUMENT = 28,  /* an order's trade document, id "<order id>.D<k>" (engine/orders/documents.c) */
	REC_T_DOC_SEQ = 29,   /* a document numbering sequence, id "<series>.<issuer>" (engine/orders/documents.c) */
	REC_T_WH_ENDPOINT = 30, /* a webhook endpoint (subscription) with its signing secrets (engine/webhooks/endpoint.c) */
	REC_T_WH_DELIVERY = 31, /* one (endpoint, event) delivery, id "<endpoint id>.<event id>" (engine/webhooks/delivery.c) */
	REC_T_WH_CURSOR = 32,   /* the fan-out's position in the event log, one row "fanout" (engine/webhooks/delivery.c) */
	REC_T_SYNC_STATE = 33,  /* a caller's feed state: last pull cursor, curation settings, last push (engine/supply/sync.c) */
	/* 34: reserved for the feed (engine/supply/sync.c), unused so far */
	REC_T_CHECK_FINDING = 35, /* an open consistency-check finding, id "<kind>/<id>[/<id>]" (engine/checks.c) */
	REC_T_CHECK_RUN = 36,     /* the consistency checks' last run, one row "last" (engine/checks.c) */
	REC_T_STOCK_FOLD = 37,  /* a level's pruned stock.changed events, summed, id = the level id (engine/retention.c) */
	REC_T_COUNT_
};

struct rec_view {
	uint8_t op, table, version;
	const char *key;
	uint16_t key_len;
	const char *val;
	uint32_t val_len;
};

/* Human name of a table id ("partner", ...), "?" if unknown. */
const char *rec_table_name(unsigned table);

/* Append one record to `out`.  Returns 0, or -1 on bound/OOM. */
int rec_encode(struct buf *out, uint8_t op, uint8_t table, uint8_t version,
	       const char *key, size_t key_len, const char *val, size_t val_len);

/*
 * Decode the record at p[*off..len).  Returns 1 and advances *off, 0 at the
 * clean end (*off == len), -1 on a malformed record (truncated, lengths
 * past the end or over the bounds, unknown op or table).
 */
int rec_decode(const uint8_t *p, size_t len, size_t *off, struct rec_view *rv);

/* Append a REC_V_IMAGE put: the document, then img_len bytes of image.
 * 0, or -1 on bound/OOM (out unchanged). */
int rec_encode_image(struct buf *out, uint8_t table, const char *key, size_t key_len, const char *doc,
		     size_t doc_len, const void *img, size_t img_len);

/* A record's document and image: version 1, the whole value and no image
 * (*img NULL); version 2, split as above.  0, or -1 (an unknown version,
 * or a version 2 value too short for its document length). */
int rec_doc_image(const struct rec_view *rv, const char **doc, uint32_t *doc_len, const uint8_t **img,
		  uint32_t *img_len);

#endif
