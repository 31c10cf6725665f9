/*
 * documents.h -- an order's trade documents (spec 2.8; issue 17): which
 * exist, their numbers, their rendering off the event loop, and the routes
 * (the rules and the why in documents.c):
 *
 *   GET /v1/orders/{id}/documents      the order's documents the caller may see
 *   GET /v1/documents/{id}             one document's metadata (or its PDF: Accept)
 *   GET /v1/documents/{id}/content     the PDF, checksum verified
 */
#ifndef WM_ORDER_DOCUMENTS_H
#define WM_ORDER_DOCUMENTS_H

#include <stddef.h>

#include "engine/edge/route.h"
#include "engine/storage/shard.h"
#include "net/buf.h"

struct order;
struct api_ctx;

#define DOCS_WORKER_JOBS 8        /* renders in flight */
#define DOCS_CREATE_PER_POLL 16   /* orders whose document rows one poll creates */
#define DOCS_SCAN_PER_POLL 4096   /* orders one poll looks at for missing documents */

extern const struct route document_routes[];
extern const struct table_ops document_table_ops;
extern const struct table_ops doc_seq_table_ops;

/* Open the document store (<data_dir>/documents) and start the render
 * thread.  0, or -1 with err. */
int documents_start(struct shard *sh, char *err, size_t errlen);
/* Stop the render thread (the job being rendered finishes; the rest stay
 * pending in their rows and are rendered after the next start). */
void documents_stop(void);
/* The render thread's completion eventfd (readable: call documents_poll),
 * or -1 before documents_start. */
int documents_fd(void);
/* Create the rows of orders that reached `reserved` (numbered), hand
 * pending rows to the render thread, store what it finished.  Cheap when
 * there is nothing to do; call on every tick and on the eventfd. */
void documents_poll(struct shard *sh);
/* wm_documents_rendered_total, _failed_total, _pending into o (/metrics). */
void documents_metrics(struct shard *sh, struct buf *o);
/* Leg li of o was delivered at `at`: stage its originator's final invoice
 * (numbered, pending) into the OPEN transaction.  0 or -1. */
int documents_stage_delivered(struct shard *sh, const struct order *o, unsigned li, const char *at);
/* Replace the order document's `"documents":[]` in doc with the documents
 * the caller of c may see.  0 or -1. */
int documents_splice(struct api_ctx *c, const struct order *o, struct buf *doc);

#endif
