/*
 * heapwarm.c -- fault in the heap's fresh pages ahead of a bulk load.
 *
 * Why.  Recovery installs a million rows on the loop thread, each a malloc
 * of a few hundred bytes plus index nodes, so the heap grows by hundreds
 * of megabytes, and every fresh 4 KiB page costs the loop a page fault:
 * a trap, the kernel zeroing the page, a page-table update.  perf record
 * of perf/bench_scale load put ~18 % of the loop's samples there, while
 * the builder thread beside it waited ~1 s for room.  So the builder
 * faults the pages in first: malloc grows the heap by HEAPWARM_TOP_PAD at
 * a time (M_TOP_PAD), and between two batches the builder asks the kernel
 * to populate the next HEAPWARM_STEP bytes below the program break.  The
 * loop's later writes find the pages present.
 *
 * Safety.  MADV_POPULATE_WRITE (Linux 5.14) faults pages in as a write
 * would but writes nothing: a page the loop has already written keeps its
 * bytes, one it writes meanwhile is its own.  Only [what was warmed, the
 * current break) is touched, memory the process owns and malloc hands out.
 * A kernel without it answers EINVAL and the warmer turns itself off.
 * Under AddressSanitizer malloc does not use the break; nothing happens.
 * The loop warms too while it waits for rows, with the builder's warmer:
 * a step claims its range by moving w->to with a compare-and-swap before
 * populating it, so the two threads never populate a page twice.
 *
 * A side effect, measured.  Setting M_TOP_PAD turns off glibc's dynamic
 * mmap threshold for the rest of the process (checked on glibc 2.36: after
 * any mallopt of it, a 512 KiB malloc is mmap'd even once a 1 MiB block
 * was freed), and heapwarm_end can only set the pad back.  So after
 * recovery a block of 128 KiB or more is always its own mapping.  The
 * shard's hot paths allocate nothing that large: perf/ab.sh of a build
 * with and without the pad, 3 rounds each, orders (-c16, fsync) 4.26-4.60
 * against 3.96-4.57 page faults and the same CPU per order within the
 * noise, 5-line quotes 41,247 against 41,819 req/s (median).  Without
 * the pad the heap grows 128 KiB at a time, the warmer can only stay that
 * far ahead, and recovery keeps about half its gain (perf/bench_scale
 * load: ~1.07M rows/s without, ~1.2M with).
 */
#include "engine/base/heapwarm.h"

#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define HEAPWARM_PAGE ((uintptr_t)4096)

/* The current program break (brk(0) asks without moving it). */
static uintptr_t program_break(void) { return (uintptr_t)syscall(SYS_brk, 0); }

void heapwarm_begin(struct heapwarm *w, size_t pad, size_t step)
{
	if (pad)
		(void)mallopt(M_TOP_PAD, (int)pad);
	atomic_store(&w->to, program_break() & ~(HEAPWARM_PAGE - 1));
	w->step = step & ~(size_t)(HEAPWARM_PAGE - 1);
}

size_t heapwarm_step(struct heapwarm *w)
{
	uintptr_t from = atomic_load(&w->to), end;
	do { /* claim [from, end): another thread may claim first */
		if (!from || !w->step)
			return 0;
		end = program_break() & ~(HEAPWARM_PAGE - 1);
		if (end <= from)
			return 0;
		if (end - from > w->step)
			end = from + w->step;
	} while (!atomic_compare_exchange_weak(&w->to, &from, end));
	if (madvise((void *)from, end - from, MADV_POPULATE_WRITE)) {
		if (errno == EINVAL)
			atomic_store(&w->to, 0); /* not this kernel: off */
		return 0;
	}
	return end - from;
}

void heapwarm_end(struct heapwarm *w, size_t pad)
{
	if (pad)
		(void)mallopt(M_TOP_PAD, (int)HEAPWARM_TOP_PAD_DEFAULT);
	atomic_store(&w->to, 0);
}
