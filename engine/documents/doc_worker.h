/*
 * doc_worker.h -- rendering off the event loop (issue 17 item 4: "a shard
 * never stalls on a document").
 *
 * One worker thread, a bounded queue.  The loop thread submits a model
 * (copied: the caller's model may change or be freed right after) and
 * gets on with its requests; the worker renders it, stores the PDF in the
 * docstore and queues a completion; the loop learns of completions through
 * an eventfd it can add to its epoll set, and collects them with
 * doc_worker_poll().
 *
 * The bound counts every job from submit to collection (queued, being
 * rendered, or done and not yet collected), so neither the job queue nor
 * the completion queue can grow past it: submit answers EAGAIN when
 * `capacity` jobs are in flight, and the caller retries later (a document
 * is regenerated from the order, never lost).
 */
#ifndef WM_DOC_WORKER_H
#define WM_DOC_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "engine/documents/doc_model.h"
#include "engine/documents/docstore.h"

#define DOC_WORKER_CAPACITY_MAX 1024 /* jobs in flight, upper bound of capacity */
#define DOC_WORKER_NICE 19           /* the render thread's nice value: below every request */

struct doc_worker;

/* The outcome of one job. */
struct doc_result {
	uint64_t tag;                        /* the submitter's tag, as given */
	int ok;                              /* 1: rendered and stored */
	int pages;
	size_t bytes;
	char sha256[DOCSTORE_SHA_HEX + 1];   /* ok: the docstore name */
	char err[160];                       /* !ok: why */
};

/* Start a worker that stores into ds (which must outlive it) with room
 * for capacity jobs in flight, 1..DOC_WORKER_CAPACITY_MAX.  NULL with
 * errno (EINVAL for a capacity out of range). */
struct doc_worker *doc_worker_start(struct docstore *ds, int capacity);

/* Stop: finish the job being rendered, drop queued ones, join the thread,
 * close the eventfd, free everything.  NULL is a no-op. */
void doc_worker_stop(struct doc_worker *w);

/* The eventfd (EFD_NONBLOCK) that becomes readable when completions are
 * waiting; doc_worker_poll() drains it. */
int doc_worker_fd(const struct doc_worker *w);

/* Queue a copy of m, identified by tag.  0, or -1 with errno EAGAIN when
 * capacity jobs are in flight (nothing queued), ENOMEM. */
int doc_worker_submit(struct doc_worker *w, const struct doc_model *m, uint64_t tag);

/* Move up to max completions into out, oldest first; returns how many.
 * Never blocks. */
size_t doc_worker_poll(struct doc_worker *w, struct doc_result *out, size_t max);

/* Jobs in flight (submitted and not yet collected). */
int doc_worker_in_flight(struct doc_worker *w);

#endif
