/*
 * ev.h -- single-threaded epoll event loop.
 *
 * One loop per process thread that owns the data.  Each registered fd has a
 * callback and an opaque pointer; the loop also calls a tick callback at
 * least every `tick_ms` (used for time-outs and periodic jobs), so no timer
 * data structure is needed: everything time-based is swept on the tick.
 */
#ifndef WM_EV_H
#define WM_EV_H

#include <stdint.h>

/* Events fetched per epoll_wait: a batch.  A server sends the answers of
 * a batch together once it is handled (srv_after_batch: the client is
 * woken once per batch, not per answer), so every answer of a batch waits
 * for its last request.  With 64 busy keep-alive connections a batch of
 * up to 256 was all 64 quotes, ~1 ms, and the 1-line quote's p99 at -c64
 * about twice its mean; batches of 16 cut that p99 by ~20 % (perf/ab.sh
 * quote1, three runs of 6-8 rounds: medians 2,216 -> 1,684 us and 2,132 ->
 * 1,737 us) for CPU per quote within the runs' noise (-7 % to +6 %).  The
 * events not fetched stay ready for the next epoll_wait, in order. */
#define EV_MAX_EVENTS 16

struct ev_loop;
struct ev_handle;

typedef void (*ev_fn)(struct ev_loop *loop, struct ev_handle *h, uint32_t events);
typedef void (*ev_tick_fn)(struct ev_loop *loop, void *arg);

/* Embedded by whoever owns the fd; must stay valid while registered. */
struct ev_handle {
	int fd;
	ev_fn fn;
	void *arg;
	uint32_t events; /* EPOLLIN/EPOLLOUT/... currently registered */
};

struct ev_loop *ev_new(void);
void ev_free(struct ev_loop *loop);
/* Register h->fd for `events`.  0 or -1 (errno set). */
int ev_add(struct ev_loop *loop, struct ev_handle *h, uint32_t events);
/* Change the event mask; no-op when unchanged. */
int ev_mod(struct ev_loop *loop, struct ev_handle *h, uint32_t events);
/* Unregister (before closing the fd).  An event of h still pending in the
 * batch being dispatched is dropped, so h may be freed right after. */
void ev_del(struct ev_loop *loop, struct ev_handle *h);
/* Tick callback, called at least every tick_ms while running. */
void ev_set_tick(struct ev_loop *loop, unsigned tick_ms, ev_tick_fn fn, void *arg);
/* Prepare callback, called once per loop iteration after the ready
 * events were handled, before waiting again (batching work such as
 * committing staged audit records).  NULL to remove. */
void ev_set_prepare(struct ev_loop *loop, ev_tick_fn fn, void *arg);
/* After-batch callbacks (at most EV_MAX_AFTER_BATCH, in the order added),
 * called once per loop iteration right after the ready events were
 * handled, before the prepare callback: a server sends the answers the
 * batch produced here, back to back (srv_new).  0, or -1 when full. */
#define EV_MAX_AFTER_BATCH 4
int ev_add_after_batch(struct ev_loop *loop, ev_tick_fn fn, void *arg);
void ev_del_after_batch(struct ev_loop *loop, ev_tick_fn fn, void *arg);
/* Is the loop dispatching a batch of ready events right now? */
int ev_in_batch(const struct ev_loop *loop);

/* A one-shot call after the batch being dispatched, for work that a
 * batch's handlers pile up and that is cheaper done once for all of them
 * (an outbound HTTP pool writes every request the batch gave one
 * connection in one syscall: client.c).  Owned by the caller, embedded
 * in its state; `armed` is the loop's.  ev_later_arm during a batch: fn
 * runs once right after it, before the after-batch callbacks (arming it
 * again before then changes nothing; fn may arm laters of its own, which
 * run in the same pass).  Armed outside a batch, it runs after the next
 * one.  ev_later_cancel before the owner goes away. */
struct ev_later {
	ev_tick_fn fn;
	void *arg;
	struct ev_later *next;
	int armed;
};
void ev_later_arm(struct ev_loop *loop, struct ev_later *l);
void ev_later_cancel(struct ev_loop *loop, struct ev_later *l);
/* Run until ev_stop().  Returns 0, or -1 on an epoll failure. */
int ev_run(struct ev_loop *loop);
void ev_stop(struct ev_loop *loop);
/* Monotonic milliseconds, cached per loop iteration. */
uint64_t ev_now_ms(const struct ev_loop *loop);
/* Fresh monotonic clock reading in microseconds. */
uint64_t ev_clock_us(void);

/* A program's control signals as loop events: blocks SIGTERM, SIGINT and
 * SIGHUP (they are read from the returned signalfd instead of interrupting
 * anything) and ignores SIGPIPE (a peer that closed is an error return, not
 * a death).  Call before any thread starts, so threads inherit the mask.
 * The non-blocking fd, or -1. */
int ev_control_signals(void);

#endif
