/*
 * heapwarm.h -- fault in the heap's fresh pages from a second thread while
 * a bulk load fills them (recovery: engine/storage/recovery.c).
 */
#ifndef WM_HEAPWARM_H
#define WM_HEAPWARM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes the heap grows by at once during a bulk load (glibc's M_TOP_PAD):
 * room for the warmer to work ahead of the allocations. */
#define HEAPWARM_TOP_PAD ((size_t)32 << 20)
/* glibc's own M_TOP_PAD, restored by heapwarm_end. */
#define HEAPWARM_TOP_PAD_DEFAULT ((size_t)128 << 10)
/* At most this many bytes populated per heapwarm_step call, so that the
 * warming thread's other work (building rows) never waits long for it. */
#define HEAPWARM_STEP ((size_t)1 << 20)

struct heapwarm {
	_Atomic uintptr_t to; /* the heap is claimed for populating up to here (page aligned); 0: off */
	size_t step;          /* bytes per heapwarm_step, at most (set by heapwarm_begin) */
};

/* Start: the heap (main arena) grows by `pad` bytes at a time from now on
 * (0: leave malloc's setting alone), and w warms from the current program
 * break on, at most `step` bytes a call.  Call on the thread that
 * allocates, before the warming thread starts. */
void heapwarm_begin(struct heapwarm *w, size_t pad, size_t step);
/* Populate (MADV_POPULATE_WRITE: fault in writable, contents unchanged)
 * the next at most w->step bytes between w->to and the current program
 * break, rounded down to whole pages.  Safe while another thread
 * allocates there: no byte is written.  Two threads may call it on the
 * same w at once: each claims its range first (w->to moves atomically),
 * so no range is populated twice.  Returns the bytes this call populated
 * (0: nothing new, or a kernel without MADV_POPULATE_WRITE, which turns w
 * off). */
size_t heapwarm_step(struct heapwarm *w);
/* End: malloc's growth back to HEAPWARM_TOP_PAD_DEFAULT (when begin set a
 * pad), w off. */
void heapwarm_end(struct heapwarm *w, size_t pad);

#endif
