/*
 * wm_test.h -- the one way to declare a test in this project.
 *
 * WM_TEST(suite, name) is Criterion's Test() with a leak check at the end
 * of the body.  LeakSanitizer on its own reports only after Criterion has
 * marked the test passed and the run still exits 0, and an assertion in a
 * .fini hook does not fail the test either; asserting inside the body is
 * the only form that makes a leak fail the test that leaked.
 */
#ifndef WM_TEST_H
#define WM_TEST_H

#include <criterion/criterion.h>
#include <sanitizer/lsan_interface.h>

#define WM_TEST(suite, name, ...)                                              \
	static void suite##_##name##_body(void);                               \
	Test(suite, name, ##__VA_ARGS__)                                       \
	{                                                                      \
		suite##_##name##_body();                                       \
		cr_assert_eq(__lsan_do_recoverable_leak_check(), 0,            \
			     "memory leaked (see the LeakSanitizer report)");   \
	}                                                                      \
	static void suite##_##name##_body(void)

#endif
