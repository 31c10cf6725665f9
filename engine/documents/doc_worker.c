/*
 * doc_worker.c -- the rendering thread and its bounded queues
 * (doc_worker.h).
 *
 * Why this shape:
 *  - A thread, not a process: the model is plain data copied into the job,
 *    the renderer is thread-safe (render.h), and a thread needs no
 *    serialisation of the model.  One thread is enough: rendering is
 *    milliseconds per document and documents follow order state changes,
 *    not requests.
 *  - Two intrusive FIFO lists under one mutex: jobs waiting for the
 *    worker, and results waiting for the loop.  The loop thread only ever
 *    takes the mutex for a list operation (never while rendering), so a
 *    submit or poll is O(1) and cannot stall behind a render.
 *  - The capacity bounds in_flight (queued + rendering + uncollected), so
 *    memory is bounded by capacity x sizeof(job) however slow the loop is
 *    to collect.
 *  - The eventfd counts completions; poll drains it before looking at the
 *    list, so a completion that lands between the two is seen either now
 *    or on the next wakeup, never lost.
 */
#include "engine/documents/doc_worker.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "engine/documents/render.h"

struct job {
	struct job *next;
	uint64_t tag;
	struct doc_result result;
	struct doc_model model;
};

struct doc_worker {
	struct docstore *ds;
	int capacity;
	int efd;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stopping;
	int in_flight;
	struct job *todo_head, *todo_tail;   /* waiting for the worker */
	struct job *done_head, *done_tail;   /* waiting for the loop */
};

static void push(struct job **head, struct job **tail, struct job *j)
{
	j->next = NULL;
	if (*tail)
		(*tail)->next = j;
	else
		*head = j;
	*tail = j;
}

static struct job *pop(struct job **head, struct job **tail)
{
	struct job *j = *head;
	if (j) {
		*head = j->next;
		if (!*head)
			*tail = NULL;
	}
	return j;
}

/* Render and store one job; fills j->result. */
static void run_job(struct doc_worker *w, struct job *j)
{
	struct doc_result *r = &j->result;
	struct doc_pdf pdf;
	*r = (struct doc_result){.tag = j->tag};
	if (doc_render_pdf(&j->model, &pdf, r->err, sizeof r->err))
		return;
	if (docstore_put(w->ds, pdf.data, pdf.len, r->sha256)) {
		snprintf(r->err, sizeof r->err, "docstore: %s", strerror(errno));
		r->sha256[0] = '\0';
	} else {
		r->ok = 1;
		r->pages = pdf.pages;
		r->bytes = pdf.len;
	}
	doc_pdf_free(&pdf);
}

static void *worker_main(void *arg)
{
	struct doc_worker *w = arg;
	/* rendering yields the CPU to the event loop: this thread alone runs
	 * at the lowest priority (on Linux a thread's nice value is its own),
	 * so a burst of documents yields to the requests and drains when the
	 * shard is less busy.  (SCHED_IDLE was measured too: no better on a
	 * 2-core box, where what a burst costs the quote is the second core,
	 * not the loop's time -- make bench, section p -- and it could starve
	 * documents under steady load.) */
	if (setpriority(PRIO_PROCESS, (id_t)gettid(), DOC_WORKER_NICE))
		(void)0; /* not fatal: documents just compete at normal priority */
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->stopping && !w->todo_head)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->stopping)
			break;
		struct job *j = pop(&w->todo_head, &w->todo_tail);
		pthread_mutex_unlock(&w->mu);
		run_job(w, j);
		pthread_mutex_lock(&w->mu);
		push(&w->done_head, &w->done_tail, j);
		uint64_t one = 1;
		/* The counter cannot overflow: at most capacity completions wait. */
		if (write(w->efd, &one, sizeof one) != sizeof one) {
			/* eventfd writes of 1 only fail on overflow; nothing to do */
		}
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

struct doc_worker *doc_worker_start(struct docstore *ds, int capacity)
{
	if (capacity < 1 || capacity > DOC_WORKER_CAPACITY_MAX) {
		errno = EINVAL;
		return NULL;
	}
	struct doc_worker *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	w->ds = ds;
	w->capacity = capacity;
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->efd < 0) {
		free(w);
		return NULL;
	}
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	int rc = pthread_create(&w->thread, NULL, worker_main, w);
	if (rc) {
		close(w->efd);
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
		free(w);
		errno = rc;
		return NULL;
	}
	pthread_setname_np(w->thread, "wm-docs"); /* top, perf and the benchmark find it by name */
	return w;
}

static void free_list(struct job *j)
{
	while (j) {
		struct job *n = j->next;
		free(j);
		j = n;
	}
}

void doc_worker_stop(struct doc_worker *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stopping = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	free_list(w->todo_head);
	free_list(w->done_head);
	close(w->efd);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	free(w);
}

int doc_worker_fd(const struct doc_worker *w)
{
	return w->efd;
}

int doc_worker_submit(struct doc_worker *w, const struct doc_model *m, uint64_t tag)
{
	pthread_mutex_lock(&w->mu);
	int full = w->in_flight >= w->capacity;
	if (!full)
		w->in_flight++; /* reserve the slot before the copy */
	pthread_mutex_unlock(&w->mu);
	if (full) {
		errno = EAGAIN;
		return -1;
	}
	struct job *j = malloc(sizeof *j);
	if (!j) {
		pthread_mutex_lock(&w->mu);
		w->in_flight--;
		pthread_mutex_unlock(&w->mu);
		errno = ENOMEM;
		return -1;
	}
	memcpy(&j->model, m, sizeof *m);
	j->tag = tag;
	pthread_mutex_lock(&w->mu);
	push(&w->todo_head, &w->todo_tail, j);
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

size_t doc_worker_poll(struct doc_worker *w, struct doc_result *out, size_t max)
{
	uint64_t n;
	if (read(w->efd, &n, sizeof n) < 0) {
		/* EAGAIN: nothing signalled since the last poll; still look */
	}
	size_t got = 0;
	pthread_mutex_lock(&w->mu);
	while (got < max) {
		struct job *j = pop(&w->done_head, &w->done_tail);
		if (!j)
			break;
		out[got++] = j->result;
		w->in_flight--;
		free(j);
	}
	/* Completions left behind (max too small) keep the fd readable. */
	if (w->done_head) {
		uint64_t one = 1;
		if (write(w->efd, &one, sizeof one) != sizeof one) {
			/* cannot overflow: bounded by capacity */
		}
	}
	pthread_mutex_unlock(&w->mu);
	return got;
}

int doc_worker_in_flight(struct doc_worker *w)
{
	pthread_mutex_lock(&w->mu);
	int n = w->in_flight;
	pthread_mutex_unlock(&w->mu);
	return n;
}
