/*
 * harness.h -- integration-test support: start real wm-shard processes on a
 * free port with a temporary data directory, talk HTTP to them over plain
 * sockets, kill them with SIGKILL or stop them with SIGTERM.
 *
 * The binary is $WM_BIN_DIR/wm-shard (make test sets it to the sanitized
 * build).  Each process logs to <tmp>/shard-<n>.log, kept for debugging.
 */
#ifndef WM_HARNESS_H
#define WM_HARNESS_H

#include <stddef.h>
#include <sys/types.h>

/* Every process the harness starts gets WM_BOOTSTRAP_KEY=WM_TEST_KEY (an
 * operator key), and http_do() sends it unless the test's own headers
 * carry an Authorization line ("Authorization: none\r\n" sends none). */
#define WM_TEST_KEY "wm-test-operator-key-0123456789-abcdefghij"

struct wm_proc {
	pid_t pid;
	int port;
	char dir[256];      /* temporary root; data dir is <dir>/data */
	char data_dir[300];
	int starts;
	char banner[512];   /* what the last start printed on stdout up to "listening" */
	const char *program; /* binary in $WM_BIN_DIR: NULL = "wm-shard", or "wm-router" */
	/* WM_TEST_TOPOLOGY=cluster: a wm-shard process is a whole local cluster
	 * (tests/cluster_harness.h: a router in front of three shards, split as
	 * `make run` splits them) and port is the router's, so the HTTP suites
	 * run unchanged through a router.  NULL otherwise. */
	struct wm_cluster *cluster;
	int in_cluster;      /* this process is a shard of such a cluster */
};

/* 1 when WM_TEST_TOPOLOGY=cluster (see struct wm_proc). */
int wm_topology_cluster(void);
/* Make a fresh temporary root (no process yet). */
void wm_proc_init(struct wm_proc *p);
/* Start wm-shard on the same data dir with extra args (NULL-terminated,
 * may be NULL) and extra environment "K=V" entries (NULL-terminated, may be
 * NULL).  Returns 0 once it listens, -1 if it exited first. */
int wm_start(struct wm_proc *p, const char *const *args, const char *const *env);
/* Like wm_start but expect the process to fail: returns its exit status and
 * copies the tail of its log into msg. */
int wm_start_expect_fail(struct wm_proc *p, const char *const *args, char *msg, size_t msg_size);
void wm_kill9(struct wm_proc *p);
/* SIGTERM and wait; returns the exit status (or 128+signal). */
int wm_stop(struct wm_proc *p);
/* Wait for the process to exit on its own (ms); returns status or -1. */
int wm_wait(struct wm_proc *p, int timeout_ms);
/* Stop if running and delete the temporary directory. */
void wm_proc_cleanup(struct wm_proc *p);

struct http_resp {
	int status;
	char head[8192];    /* status line + headers */
	char *body;         /* malloc'd, NUL-terminated */
	size_t body_len;
};

/* One request on a new connection (Connection: close).  `headers` are extra
 * "Name: value\r\n" lines (may be NULL); body may be NULL.  Sends the
 * operator key unless headers say otherwise (see WM_TEST_KEY).  0; -1 when
 * the connection was refused (nothing was sent); -2 when the request may
 * have been sent but no complete response came (the peer died, or the
 * 30 s read time-out): what a client must treat as ambiguous. */
int http_do(int port, const char *method, const char *path, const char *headers,
	    const char *body, struct http_resp *out);
/* Header value from a response (case-insensitive), copied into out; -1 if absent. */
int http_header(const struct http_resp *r, const char *name, char *out, size_t out_size);
void http_resp_free(struct http_resp *r);

/* Run $WM_BIN_DIR/wm-ctl with args (a shell word list), stderr with
 * stdout; its output into out (n bytes, NUL-terminated); the exit status,
 * or -1 when it did not exit normally. */
int wm_ctl_run(const char *args, char *out, size_t n);

/* What this process writes to stderr between stderr_capture_begin and
 * stderr_capture_end (in-process code that logs there: recovery, the
 * snapshot reader), into out (outlen bytes, NUL-terminated). */
struct stderr_capture {
	char path[40];
	int fd, saved;
};
void stderr_capture_begin(struct stderr_capture *c);
void stderr_capture_end(struct stderr_capture *c, char *out, size_t outlen);

/* Connected socket to the port (blocking), or -1. */
int tcp_connect(int port);
/* Read fd until EOF (or cap - 1 bytes) into buf, NUL-terminated; close fd. */
void read_until_close(int fd, char *buf, size_t cap);
/* Read one full response from a socket (Content-Length framing). 0 or -1. */
int http_read_response(int fd, struct http_resp *out, int timeout_ms);

/* Recursively delete a directory. */
void rm_rf(const char *path);
/* Temporary roots and child processes swept when the test's process
 * exits (harness.c "Leftovers"): a root until untracked, a pid while it
 * is still an unreaped child. */
void wm_tmp_track_dir(const char *dir);
void wm_tmp_untrack_dir(const char *dir);
void wm_tmp_track_pid(pid_t pid);

#endif
