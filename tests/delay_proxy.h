/*
 * delay_proxy.h -- start and steer tests/tools/wm-delay-proxy from a test
 * (the partition and delay tests of issue 14 put it between processes).
 *
 * The binary is $WM_BIN_DIR/wm-delay-proxy (make test-build builds it
 * sanitized there).  These functions return codes instead of asserting, so
 * any test file (or harness) can use them; the caller asserts.
 */
#ifndef WM_TEST_DELAY_PROXY_H
#define WM_TEST_DELAY_PROXY_H

#include <stddef.h>
#include <sys/types.h>

struct wm_delay_proxy {
	pid_t pid;
	int port;   /* where clients connect */
	int cport;  /* the control port (0 when started without --control) */
};

/*
 * Run the proxy with exactly args (NULL-terminated, after argv[0]).
 * Returns -1 once it printed its ready line (p filled, the process runs),
 * or its exit status when it exited first (msg gets the start of its
 * stderr), or -2 when it neither got ready nor exited within 5 s (killed).
 */
int wm_delay_proxy_run(struct wm_delay_proxy *p, const char *const *args, char *msg, size_t msglen);

/* --listen 127.0.0.1:0 --target 127.0.0.1:<target_port> --delay-ms <delay_ms>
 * --control 127.0.0.1:0 plus extra (NULL-terminated, may be NULL).
 * 0 once ready, -1 with msg otherwise. */
int wm_delay_proxy_start(struct wm_delay_proxy *p, int target_port, int delay_ms, const char *const *extra,
			 char *msg, size_t msglen);

/* One control command (without newline); the reply line into out.  0, or
 * -1 when the control port did not answer within 5 s. */
int wm_delay_proxy_control(const struct wm_delay_proxy *p, const char *cmd, char *out, size_t outlen);

/* SIGTERM and wait: the exit status (128+signal when killed). */
int wm_delay_proxy_stop(struct wm_delay_proxy *p);

#endif
