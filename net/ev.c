/*
 * ev.c -- the epoll loop (contract in ev.h).
 *
 * Level-triggered epoll: simpler to reason about than edge-triggered, and a
 * handler that stops reading (back-pressure) just removes EPOLLIN.  The loop
 * caches "now" once per iteration so that time-out bookkeeping in handlers
 * costs no system call.
 *
 * A handler may unregister and free another handle whose event is still
 * waiting later in the same batch (the server closes idle connections to
 * admit a new one; a WAL event releases and closes other connections).
 * ev_del therefore blanks that handle's pending entries in the batch being
 * dispatched, so no event is ever delivered to freed memory -- nor to a new
 * handle that happens to reuse its address.
 */
#include "net/ev.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

struct ev_loop {
	int epfd;
	int running;
	unsigned tick_ms;
	ev_tick_fn tick;
	void *tick_arg;
	ev_tick_fn prepare;
	void *prepare_arg;
	uint64_t now_ms;
	uint64_t last_tick_ms;
	struct epoll_event *batch; /* events being dispatched; NULL outside ev_run's loop */
	int batch_n;
	struct ev_later *later;    /* armed one-shot calls (ev_later_arm), newest first */
	unsigned n_after;
	struct {
		ev_tick_fn fn;
		void *arg;
	} after[EV_MAX_AFTER_BATCH];
};

uint64_t ev_clock_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

struct ev_loop *ev_new(void)
{
	struct ev_loop *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		free(l);
		return NULL;
	}
	l->tick_ms = 1000;
	l->now_ms = ev_clock_us() / 1000;
	return l;
}

void ev_free(struct ev_loop *loop)
{
	if (!loop)
		return;
	close(loop->epfd);
	free(loop);
}

int ev_add(struct ev_loop *loop, struct ev_handle *h, uint32_t events)
{
	struct epoll_event e = {.events = events, .data.ptr = h};
	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, h->fd, &e))
		return -1;
	h->events = events;
	return 0;
}

int ev_mod(struct ev_loop *loop, struct ev_handle *h, uint32_t events)
{
	if (h->events == events)
		return 0;
	struct epoll_event e = {.events = events, .data.ptr = h};
	if (epoll_ctl(loop->epfd, EPOLL_CTL_MOD, h->fd, &e))
		return -1;
	h->events = events;
	return 0;
}

void ev_del(struct ev_loop *loop, struct ev_handle *h)
{
	epoll_ctl(loop->epfd, EPOLL_CTL_DEL, h->fd, NULL);
	h->events = 0;
	for (int i = 0; loop->batch && i < loop->batch_n; i++)
		if (loop->batch[i].data.ptr == h)
			loop->batch[i].data.ptr = NULL;
}

int ev_add_after_batch(struct ev_loop *loop, ev_tick_fn fn, void *arg)
{
	if (loop->n_after == EV_MAX_AFTER_BATCH)
		return -1;
	loop->after[loop->n_after].fn = fn;
	loop->after[loop->n_after++].arg = arg;
	return 0;
}

void ev_del_after_batch(struct ev_loop *loop, ev_tick_fn fn, void *arg)
{
	for (unsigned i = 0; i < loop->n_after; i++)
		if (loop->after[i].fn == fn && loop->after[i].arg == arg) {
			for (unsigned j = i + 1; j < loop->n_after; j++)
				loop->after[j - 1] = loop->after[j];
			loop->n_after--;
			return;
		}
}

int ev_in_batch(const struct ev_loop *loop) { return loop->batch != NULL; }

void ev_later_arm(struct ev_loop *loop, struct ev_later *l)
{
	if (l->armed)
		return;
	l->armed = 1;
	l->next = loop->later;
	loop->later = l;
}

void ev_later_cancel(struct ev_loop *loop, struct ev_later *l)
{
	if (!l->armed)
		return;
	for (struct ev_later **pp = &loop->later; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	l->armed = 0;
}

/* Run the armed laters (ev_later_arm), each once; those they arm too. */
static void run_laters(struct ev_loop *loop)
{
	while (loop->later) {
		struct ev_later *l = loop->later;
		loop->later = l->next;
		l->armed = 0;
		l->next = NULL;
		l->fn(loop, l->arg);
	}
}

void ev_set_prepare(struct ev_loop *loop, ev_tick_fn fn, void *arg)
{
	loop->prepare = fn;
	loop->prepare_arg = arg;
}

void ev_set_tick(struct ev_loop *loop, unsigned tick_ms, ev_tick_fn fn, void *arg)
{
	loop->tick_ms = tick_ms ? tick_ms : 1000;
	loop->tick = fn;
	loop->tick_arg = arg;
}

uint64_t ev_now_ms(const struct ev_loop *loop) { return loop->now_ms; }

void ev_stop(struct ev_loop *loop) { loop->running = 0; }

int ev_run(struct ev_loop *loop)
{
	struct epoll_event evs[EV_MAX_EVENTS];
	loop->running = 1;
	loop->last_tick_ms = loop->now_ms = ev_clock_us() / 1000;
	while (loop->running) {
		int n = epoll_wait(loop->epfd, evs, EV_MAX_EVENTS, (int)loop->tick_ms);
		if (n < 0 && errno != EINTR)
			return -1;
		loop->now_ms = ev_clock_us() / 1000;
		loop->batch = evs;
		loop->batch_n = n > 0 ? n : 0;
		for (int i = 0; i < n; i++) {
			struct ev_handle *h = evs[i].data.ptr;
			if (h) /* NULL: unregistered by an earlier handler of this batch */
				h->fn(loop, h, evs[i].events);
		}
		loop->batch = NULL;
		loop->batch_n = 0;
		run_laters(loop);
		for (unsigned i = 0; i < loop->n_after; i++)
			loop->after[i].fn(loop, loop->after[i].arg);
		if (loop->prepare)
			loop->prepare(loop, loop->prepare_arg);
		if (loop->tick && loop->now_ms - loop->last_tick_ms >= loop->tick_ms) {
			loop->last_tick_ms = loop->now_ms;
			loop->tick(loop, loop->tick_arg);
		}
	}
	return 0;
}

int ev_control_signals(void)
{
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL))
		return -1;
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
}
