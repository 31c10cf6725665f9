/*
 * test_heapwarm.c -- engine/base/heapwarm.c: the heap faulted in ahead of a
 * bulk load, a bounded step at a time, never past the program break.
 *
 * The break is moved by the test itself (sbrk): under AddressSanitizer
 * malloc does not use it, so nothing else moves it meanwhile.  Residency
 * is read with mincore(2): a page the kernel has not faulted in is not
 * resident, one MADV_POPULATE_WRITE populated is.  Two threads may step
 * the same warmer (recovery's loop and builder): each page once, none
 * left out.
 */
#include "tests/wm_test.h"
#include "engine/base/heapwarm.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE ((uintptr_t)4096)

/* How many of the pages in [from, to) are resident. */
static size_t resident_pages(uintptr_t from, uintptr_t to)
{
	static unsigned char vec[(4 * HEAPWARM_STEP) / 4096 + 8];
	size_t n = (to - from) / PAGE;
	cr_assert_leq(n, sizeof(vec));
	cr_assert_eq(mincore((void *)from, to - from, vec), 0, "mincore");
	size_t r = 0;
	for (size_t i = 0; i < n; i++)
		r += vec[i] & 1;
	return r;
}

WM_TEST(heapwarm, populates_a_step_at_a_time_up_to_the_break_never_past_it)
{
	struct heapwarm w;
	heapwarm_begin(&w, 0, HEAPWARM_STEP); /* pad 0: malloc's settings left alone */
	uintptr_t start = w.to, brk0 = (uintptr_t)sbrk(0);
	cr_assert(start && start % PAGE == 0 && start <= brk0 && brk0 - start < PAGE);
	cr_assert_eq(heapwarm_step(&w), 0, "nothing between the start and the break yet");

	/* the break moves to 4 steps and half a page past the start */
	intptr_t grow = (intptr_t)(start + 4 * HEAPWARM_STEP + PAGE / 2 - brk0);
	cr_assert_neq(sbrk(grow), (void *)-1, "sbrk");
	uintptr_t first = start + PAGE; /* the page of the old break may be resident already */
	cr_assert_eq(resident_pages(first, start + 4 * HEAPWARM_STEP), 0, "fresh pages start out not resident");

	for (unsigned k = 1; k <= 4; k++) {
		cr_assert_eq(heapwarm_step(&w), HEAPWARM_STEP, "step %u: one whole step", k);
		cr_assert_eq(w.to, start + k * HEAPWARM_STEP);
		size_t want = (k * HEAPWARM_STEP - PAGE) / PAGE;
		cr_assert_eq(resident_pages(first, w.to), want, "step %u: every page up to the step's end", k);
		if (k < 4)
			cr_assert_eq(resident_pages(w.to, start + 4 * HEAPWARM_STEP), 0, "step %u: none past it", k);
	}
	/* the half page below the break is not a whole page: never populated */
	cr_assert_eq(heapwarm_step(&w), 0);
	cr_assert_eq(w.to, start + 4 * HEAPWARM_STEP);

	/* the break moved back below what was warmed: nothing happens */
	cr_assert_neq(sbrk(-grow), (void *)-1, "sbrk back");
	cr_assert_eq(heapwarm_step(&w), 0);
	cr_assert_eq(w.to, start + 4 * HEAPWARM_STEP);
	heapwarm_end(&w, 0);
	cr_assert_eq(w.to, 0);
	cr_assert_eq(heapwarm_step(&w), 0, "off after heapwarm_end");
}

WM_TEST(heapwarm, a_step_smaller_than_a_page_is_off)
{
	struct heapwarm w;
	heapwarm_begin(&w, 0, PAGE - 1);
	uintptr_t start = w.to;
	intptr_t grow = (intptr_t)(start + 4 * PAGE - (uintptr_t)sbrk(0));
	cr_assert_neq(sbrk(grow), (void *)-1, "sbrk");
	cr_assert_eq(heapwarm_step(&w), 0, "a step rounds down to whole pages: none");
	cr_assert_eq(w.to, start);
	cr_assert_neq(sbrk(-grow), (void *)-1, "sbrk back");
	heapwarm_end(&w, 0);
}

#define CLAIM_PAGES 256u /* of 4-page steps: 64 claims for two threads to race for */

struct stepper {
	struct heapwarm *w;
	size_t bytes, calls;
};

static void *step_all(void *arg)
{
	struct stepper *st = arg;
	size_t n;
	while ((n = heapwarm_step(st->w))) {
		st->bytes += n;
		st->calls++;
	}
	return NULL;
}

WM_TEST(heapwarm, two_threads_stepping_one_warmer_populate_each_page_once)
{
	struct heapwarm w;
	heapwarm_begin(&w, 0, 4 * PAGE);
	uintptr_t start = w.to;
	intptr_t grow = (intptr_t)(start + CLAIM_PAGES * PAGE + PAGE / 2 - (uintptr_t)sbrk(0));
	cr_assert_neq(sbrk(grow), (void *)-1, "sbrk");
	struct stepper a = {&w, 0, 0}, b = {&w, 0, 0};
	pthread_t ta, tb;
	cr_assert_eq(pthread_create(&ta, NULL, step_all, &a), 0);
	cr_assert_eq(pthread_create(&tb, NULL, step_all, &b), 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	cr_assert_eq(a.bytes + b.bytes, CLAIM_PAGES * PAGE, "every page claimed once: %zu + %zu bytes", a.bytes,
		     b.bytes);
	cr_assert_eq(a.calls + b.calls, CLAIM_PAGES / 4, "one step per 4 pages");
	cr_assert_eq(w.to, start + CLAIM_PAGES * PAGE);
	cr_assert_eq(resident_pages(start + PAGE, w.to), CLAIM_PAGES - 1, "every page resident");
	cr_assert_eq(heapwarm_step(&w), 0, "nothing left");
	cr_assert_neq(sbrk(-grow), (void *)-1, "sbrk back");
	heapwarm_end(&w, 0);
}
