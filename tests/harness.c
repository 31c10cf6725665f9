/*
 * harness.c -- real processes and raw HTTP for integration tests (see
 * harness.h).  Deliberately independent of the server's own code: the client
 * side parses responses itself, so a server bug cannot hide behind a shared
 * parser.
 *
 * Contract recording: when the environment names a directory in
 * WM_CONTRACT_DIR, every response this file reads is appended as one JSON
 * line (test, method, raw path, status, headers, body) to
 * <dir>/resp-<pid>.jsonl.  tests/contract/check.py then checks each line
 * against api/openapi.json after the Criterion run, so the document and the
 * service cannot drift apart.  One file per process because Criterion runs
 * each test in its own forked worker (possibly several at once); each line
 * is one write() on an O_APPEND descriptor, so a line is never interleaved.
 * Bodies are written as JSON strings of bytes (a byte >= 0x80 or a control
 * byte becomes \u00XX): the checker reads them back as Latin-1 to get the
 * exact bytes, binary media included.
 */
#include "tests/harness.h"
#include "tests/cluster_harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Remove one entry; a failure does not stop the walk (rm_rf walks again). */
static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	(void)remove(path);
	return 0;
}

/* A shard still open under path may add a file while the walk runs (the
 * WAL's background thread makes its spare segment): that directory's
 * rmdir then fails, and the walk goes again while the root is there (the
 * typed_put tests that end in SIGABRT left their roots this way).  A file
 * made after its directory is gone fails to be made. */
void rm_rf(const char *path)
{
	for (int i = 0; i < 5 && access(path, F_OK) == 0; i++)
		nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Leftovers.  A test that ends without wm_proc_cleanup (a failed
 * assertion, or a test that simply forgets) would leave its temporary
 * roots behind -- a cluster's is about 0.25 GB of preallocated WAL -- and a
 * long series of CI runs on one machine filled its disk.  So every root the
 * harness makes and every process it starts is tracked here, and when the
 * test's process exits whatever is still tracked is killed and removed
 * (WM_KEEP_TMP=1 keeps the roots for debugging).  Only the process that
 * tracked them sweeps: a child forked by a test inherits the handler but
 * not the ownership.  A pid is killed only while it is still this
 * process's unreaped child (waitpid says so), never a reused pid. */
#define TMP_TRACK 64
static char tmp_dirs[TMP_TRACK][256];
static pid_t tmp_pids[TMP_TRACK];
static pid_t tmp_owner;

/* 1 while pid is this process's child and not yet reaped (running or a
 * zombie); never reaps it, so wm_wait still sees its status. */
static int tmp_child(pid_t pid)
{
	siginfo_t si = {0};
	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0;
}

static void tmp_sweep(void)
{
	if (getpid() != tmp_owner)
		return;
	for (unsigned i = 0; i < TMP_TRACK; i++)
		if (tmp_pids[i] > 0 && tmp_child(tmp_pids[i])) {
			kill(tmp_pids[i], SIGKILL);
			waitpid(tmp_pids[i], NULL, 0);
		}
	for (unsigned i = 0; i < TMP_TRACK; i++)
		if (tmp_dirs[i][0] && !getenv("WM_KEEP_TMP"))
			rm_rf(tmp_dirs[i]);
}

static void tmp_own(void)
{
	if (tmp_owner != getpid()) {
		if (!tmp_owner)
			atexit(tmp_sweep);
		tmp_owner = getpid();
		memset(tmp_dirs, 0, sizeof(tmp_dirs));
		memset(tmp_pids, 0, sizeof(tmp_pids));
	}
}

void wm_tmp_track_dir(const char *dir)
{
	tmp_own();
	for (unsigned i = 0; i < TMP_TRACK; i++)
		if (!tmp_dirs[i][0]) {
			snprintf(tmp_dirs[i], sizeof(tmp_dirs[i]), "%s", dir);
			return;
		}
	fprintf(stderr, "harness: more than %d temporary roots; %s is not swept at exit\n", TMP_TRACK, dir);
}

void wm_tmp_untrack_dir(const char *dir)
{
	for (unsigned i = 0; i < TMP_TRACK; i++)
		if (!strcmp(tmp_dirs[i], dir))
			tmp_dirs[i][0] = 0;
}

void wm_tmp_track_pid(pid_t pid)
{
	tmp_own();
	for (unsigned i = 0; i < TMP_TRACK; i++)
		if (tmp_pids[i] <= 0 || !tmp_child(tmp_pids[i])) {
			tmp_pids[i] = pid;
			return;
		}
}

void wm_proc_init(struct wm_proc *p)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->dir, sizeof(p->dir), "/tmp/wm-it-XXXXXX");
	if (!mkdtemp(p->dir))
		abort();
	wm_tmp_track_dir(p->dir);
	snprintf(p->data_dir, sizeof(p->data_dir), "%s/data", p->dir);
}

static const char *bin_path(const struct wm_proc *p)
{
	static char path[512];
	const char *d = getenv("WM_BIN_DIR");
	snprintf(path, sizeof(path), "%s/%s", d ? d : "build/san/bin", p->program ? p->program : "wm-shard");
	return path;
}

static pid_t spawn(struct wm_proc *p, const char *const *args, const char *const *env, int *out_fd)
{
	int pipefd[2];
	if (pipe(pipefd))
		return -1;
	p->starts++;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		/* a failed assertion ends the test process without cleanup: the
		 * shard must not outlive it (CI would collect orphans) */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		char logp[400];
		snprintf(logp, sizeof(logp), "%s/shard-%d.log", p->dir, p->starts);
		int lf = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(pipefd[1], 1);
		if (lf >= 0)
			dup2(lf, 2);
		close(pipefd[0]);
		const char *argv[64];
		int n = 0;
		argv[n++] = bin_path(p);
		const char *base_shard[] = {"--listen", "127.0.0.1:0", "--data-dir", p->data_dir, "--access-log", "0",
					    "--snapshot-interval", "0", "--wal-segment-mb", "1",
					    /* no nightly consistency run in the middle of a test
					     * (its events would show in event lists); a test passes
					     * its own --checks-at after these */
					    "--checks-at", "off", NULL};
		const char *base_router[] = {"--listen", "127.0.0.1:0", "--data-dir", p->data_dir, "--access-log", "0",
					     NULL};
		const char *const *base = p->program && !strcmp(p->program, "wm-router") ? base_router : base_shard;
		for (int i = 0; base[i]; i++)
			argv[n++] = base[i];
		for (int i = 0; args && args[i] && n < 62; i++)
			argv[n++] = args[i];
		argv[n] = NULL;
		setenv("WM_BOOTSTRAP_KEY", WM_TEST_KEY, 1); /* callers' env may override */
		for (int i = 0; env && env[i]; i++)
			putenv((char *)env[i]);
		setenv("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0:exitcode=66", 1);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(pipefd[1]);
	*out_fd = pipefd[0];
	return pid;
}

int wm_topology_cluster(void)
{
	const char *t = getenv("WM_TEST_TOPOLOGY");
	return t && !strcmp(t, "cluster");
}

/* The clusters behind wm_procs (a test uses a few at most): a static pool,
 * so a test that ends without wm_proc_cleanup leaks no heap. */
#define TOPO_POOL 8
static struct wm_cluster topo_pool[TOPO_POOL];
static int topo_used[TOPO_POOL];

/* WM_TEST_TOPOLOGY=cluster: (re)start the whole cluster behind p. */
static int topo_start(struct wm_proc *p, const char *const *args, const char *const *env)
{
	if (!p->cluster) {
		for (unsigned k = 0; k < TOPO_POOL && !p->cluster; k++)
			if (!topo_used[k]) {
				topo_used[k] = 1;
				p->cluster = &topo_pool[k];
			}
		if (!p->cluster)
			return -1;
		wm_cluster_init(p->cluster, 3);
		static const char *const own[] = {NULL, "FR DE", "IT ES"};
		wm_cluster_set_countries(p->cluster, own);
	}
	struct wm_cluster *c = p->cluster;
	unsigned n = 0;
	for (; args && args[n] && n < WM_CLUSTER_MAX_ARGS; n++)
		c->extra[n] = args[n];
	c->extra[n] = NULL;
	/* the edge's options go to the router too: it checks keys, rates and
	 * quotas and keeps the audit (shard-router/edge.h) */
	static const char *const edge_opts[] = {"--key-rate-rps", "--key-rate-burst", "--record-quota",
						"--record-quota-period-s", "--audit-keep", "--audit-alert-factor",
						"--audit-alert-min-rows", "--audit-alert-window-s", NULL};
	unsigned m = 0;
	for (unsigned k = 0; k + 1 < n; k++)
		for (unsigned e = 0; edge_opts[e]; e++)
			if (!strcmp(args[k], edge_opts[e]) && m + 2 <= WM_CLUSTER_MAX_ARGS) {
				c->router_extra[m++] = args[k];
				c->router_extra[m++] = args[k + 1];
			}
	c->router_extra[m] = NULL;
	c->env = env;
	for (unsigned i = 0; i < c->n; i++) {
		c->shard[i].in_cluster = 1;
		if (c->shard[i].pid <= 0 && wm_cluster_start(c, i))
			return -1;
	}
	c->env = NULL;
	c->extra[0] = NULL;
	int rc = c->router_pid <= 0 ? wm_cluster_router_start(c) : 0;
	c->router_extra[0] = NULL; /* they point into the caller's args */
	if (rc)
		return -1;
	p->starts++;
	p->port = c->router_port;
	p->pid = c->router_pid;
	memcpy(p->banner, c->shard[0].banner, sizeof(p->banner));
	return 0;
}

int wm_start(struct wm_proc *p, const char *const *args, const char *const *env)
{
	if (!p->program && !p->in_cluster && wm_topology_cluster())
		return topo_start(p, args, env);
	int fd;
	p->pid = spawn(p, args, env, &fd);
	if (p->pid > 0)
		wm_tmp_track_pid(p->pid);
	if (p->pid < 0)
		return -1;
	char buf[512];
	size_t len = 0;
	p->port = 0;
	while (len < sizeof(buf) - 1) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		if (poll(&pf, 1, 20000) <= 0)
			break;
		ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = 0;
		/* "listening on http://HOST:PORT" or "https://" with --tls-cert */
		const char *m = strstr(buf, "listening on http");
		const char *nl = m ? strchr(m, '\n') : NULL;
		if (m && nl) {
			const char *colon = strrchr(m + 17, ':');
			if (colon && colon < nl)
				p->port = atoi(colon + 1);
			break;
		}
	}
	close(fd);
	memcpy(p->banner, buf, len + 1);
	if (!p->port) {
		wm_kill9(p);
		return -1;
	}
	return 0;
}

int wm_start_expect_fail(struct wm_proc *p, const char *const *args, char *msg, size_t msg_size)
{
	int fd;
	p->pid = spawn(p, args, NULL, &fd);
	if (p->pid > 0)
		wm_tmp_track_pid(p->pid);
	close(fd);
	int st = wm_wait(p, 20000);
	char logp[400];
	snprintf(logp, sizeof(logp), "%s/shard-%d.log", p->dir, p->starts);
	FILE *f = fopen(logp, "r");
	msg[0] = 0;
	if (f) {
		size_t n = fread(msg, 1, msg_size - 1, f);
		msg[n] = 0;
		fclose(f);
	}
	return st;
}

int wm_wait(struct wm_proc *p, int timeout_ms)
{
	for (int waited = 0; p->pid > 0 && waited <= timeout_ms; waited += 10) {
		int st;
		pid_t r = waitpid(p->pid, &st, WNOHANG);
		if (r == p->pid) {
			p->pid = 0;
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
		usleep(10000);
	}
	return -1;
}

void wm_kill9(struct wm_proc *p)
{
	if (p->cluster) {
		wm_cluster_router_kill9(p->cluster);
		for (unsigned i = 0; i < p->cluster->n; i++)
			wm_kill9(&p->cluster->shard[i]);
		p->pid = 0;
		return;
	}
	if (p->pid > 0) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, NULL, 0);
		p->pid = 0;
	}
}

int wm_stop(struct wm_proc *p)
{
	if (p->cluster) {
		wm_cluster_router_kill9(p->cluster); /* holds nothing: its drain is not what a test asks about */
		int st = 0;
		for (unsigned i = p->cluster->n; i-- > 0;) {
			int s = wm_stop(&p->cluster->shard[i]);
			if (i == 0)
				st = s;
		}
		p->pid = 0;
		return st;
	}
	if (p->pid <= 0)
		return -1;
	kill(p->pid, SIGTERM);
	int st = wm_wait(p, 20000);
	if (st < 0)
		wm_kill9(p);
	return st;
}

void wm_proc_cleanup(struct wm_proc *p)
{
	wm_kill9(p);
	if (p->cluster) {
		wm_cluster_cleanup(p->cluster);
		topo_used[p->cluster - topo_pool] = 0;
		p->cluster = NULL;
	}
	if (!getenv("WM_KEEP_TMP"))
		rm_rf(p->dir);
	wm_tmp_untrack_dir(p->dir);
}

int tcp_connect(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

void read_until_close(int fd, char *buf, size_t cap)
{
	size_t len = 0;
	ssize_t k;
	while (len < cap - 1 && (k = read(fd, buf + len, cap - 1 - len)) > 0)
		len += (size_t)k;
	buf[len] = 0;
	close(fd);
}

static int read_response(int fd, struct http_resp *out, int timeout_ms)
{
	memset(out, 0, sizeof(*out));
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	size_t head_end = 0, want = 0;
	for (;;) {
		if (head_end) {
			if (len >= head_end + want)
				break;
		}
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		if (poll(&pf, 1, timeout_ms) <= 0)
			goto fail;
		if (len + 4096 > cap)
			buf = realloc(buf, cap *= 2);
		ssize_t n = read(fd, buf + len, cap - len - 1);
		if (n <= 0)
			goto fail;
		len += (size_t)n;
		buf[len] = 0;
		if (!head_end) {
			char *e = strstr(buf, "\r\n\r\n");
			if (e) {
				head_end = (size_t)(e - buf) + 4;
				char *cl = strcasestr(buf, "\r\nContent-Length:");
				want = cl && cl < e ? strtoul(cl + 17, NULL, 10) : 0;
			}
		}
	}
	size_t hl = head_end < sizeof(out->head) ? head_end : sizeof(out->head) - 1;
	memcpy(out->head, buf, hl);
	out->head[hl] = 0;
	out->status = atoi(buf + 9);
	out->body = malloc(want + 1);
	memcpy(out->body, buf + head_end, want);
	out->body[want] = 0;
	out->body_len = want;
	/* leftover bytes belong to the next pipelined response: push back is not
	 * supported, so callers reading pipelined responses use one read each */
	if (len > head_end + want) {
		free(buf);
		return (int)(len - head_end - want); /* >0: extra bytes were read */
	}
	free(buf);
	return 0;
fail:
	free(buf);
	return -1;
}


/* ---- contract recording (see the top comment) ---------------------------- */

/* Append s[0..n) to b as the inside of a JSON string, byte by byte. */
static void rec_str(char **b, size_t *len, size_t *cap, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (*len + 8 > *cap) {
			*cap = *cap * 2 + 64;
			*b = realloc(*b, *cap);
			if (!*b)
				abort();
		}
		unsigned char ch = (unsigned char)s[i];
		if (ch == '"' || ch == '\\') {
			(*b)[(*len)++] = '\\';
			(*b)[(*len)++] = (char)ch;
		} else if (ch < 0x20 || ch >= 0x7f) {
			*len += (size_t)snprintf(*b + *len, 8, "\\u%04x", ch);
		} else {
			(*b)[(*len)++] = (char)ch;
		}
	}
}

static void rec_lit(char **b, size_t *len, size_t *cap, const char *lit)
{
	size_t n = strlen(lit);
	if (*len + n + 1 > *cap) {
		*cap = *cap * 2 + n + 64;
		*b = realloc(*b, *cap);
		if (!*b)
			abort();
	}
	memcpy(*b + *len, lit, n);
	*len += n;
}

/* Record one response (method/path NULL when the caller wrote the request
 * itself and the harness does not know it).  No-op without WM_CONTRACT_DIR;
 * a recording failure is reported on stderr and never fails the test (the
 * checker then sees fewer responses, not wrong ones). */
static void contract_record(const char *method, const char *path, const struct http_resp *r)
{
	const char *dir = getenv("WM_CONTRACT_DIR");
	if (!dir || !*dir)
		return;
	char test[256] = "?";
	if (criterion_current_test && criterion_current_suite)
		snprintf(test, sizeof(test), "%s/%s", criterion_current_suite->name, criterion_current_test->name);
	size_t cap = 1024 + r->body_len * 2, len = 0;
	char *b = malloc(cap);
	if (!b)
		abort();
	char num[32];
	rec_lit(&b, &len, &cap, "{\"test\":\"");
	rec_str(&b, &len, &cap, test, strlen(test));
	rec_lit(&b, &len, &cap, "\",\"method\":");
	if (method) {
		rec_lit(&b, &len, &cap, "\"");
		rec_str(&b, &len, &cap, method, strlen(method));
		rec_lit(&b, &len, &cap, "\"");
	} else {
		rec_lit(&b, &len, &cap, "null");
	}
	rec_lit(&b, &len, &cap, ",\"path\":");
	if (path) {
		rec_lit(&b, &len, &cap, "\"");
		rec_str(&b, &len, &cap, path, strlen(path));
		rec_lit(&b, &len, &cap, "\"");
	} else {
		rec_lit(&b, &len, &cap, "null");
	}
	snprintf(num, sizeof(num), ",\"status\":%d", r->status);
	rec_lit(&b, &len, &cap, num);
	rec_lit(&b, &len, &cap, ",\"head\":\"");
	rec_str(&b, &len, &cap, r->head, strlen(r->head));
	rec_lit(&b, &len, &cap, "\",\"body\":\"");
	rec_str(&b, &len, &cap, r->body ? r->body : "", r->body_len);
	rec_lit(&b, &len, &cap, "\"}\n");
	char fn[512];
	snprintf(fn, sizeof(fn), "%s/resp-%d.jsonl", dir, (int)getpid());
	int fd = open(fn, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, b, len) != (ssize_t)len)
		fprintf(stderr, "contract: cannot record into %s\n", fn);
	if (fd >= 0)
		close(fd);
	free(b);
}

int http_read_response(int fd, struct http_resp *out, int timeout_ms)
{
	int rc = read_response(fd, out, timeout_ms);
	if (rc >= 0)
		contract_record(NULL, NULL, out);
	return rc;
}

int http_do(int port, const char *method, const char *path, const char *headers,
	    const char *body, struct http_resp *out)
{
	int fd = tcp_connect(port);
	if (fd < 0)
		return -1;
	size_t bl = body ? strlen(body) : 0;
	size_t cap = 1024 + strlen(method) + strlen(path) + bl + (headers ? strlen(headers) : 0);
	char *req = malloc(cap);
	/* The operator key unless the test names its own Authorization (or
	 * says "Authorization: none" to send none). */
	int own_auth = headers && strcasestr(headers, "Authorization:");
	int no_auth = headers && strcasestr(headers, "Authorization: none\r\n");
	int n = snprintf(req, cap, "%s %s HTTP/1.1\r\nHost: test\r\nConnection: close\r\n%s%s%s",
			 method, path, own_auth ? "" : "Authorization: Bearer " WM_TEST_KEY "\r\n",
			 no_auth ? "" : headers ? headers : "", body ? "Content-Type: application/json\r\n" : "");
	if (body)
		n += snprintf(req + n, cap - (size_t)n, "Content-Length: %zu\r\n", bl);
	n += snprintf(req + n, cap - (size_t)n, "\r\n");
	if (body) {
		memcpy(req + n, body, bl);
		n += (int)bl;
	}
	int rc = write(fd, req, (size_t)n) == n ? 0 : -2;
	free(req);
	if (rc == 0)
		rc = read_response(fd, out, 30000) < 0 ? -2 : 0;
	/* the public contract: a request signed with the cluster secret is
	 * internal traffic (router -> shard), not a partner's */
	if (rc == 0 && !(headers && strcasestr(headers, "X-WM-Signature:")))
		contract_record(method, path, out);
	close(fd);
	return rc;
}

int http_header(const struct http_resp *r, const char *name, char *out, size_t out_size)
{
	char pat[128];
	snprintf(pat, sizeof(pat), "\r\n%s:", name);
	const char *h = strcasestr(r->head, pat);
	if (!h)
		return -1;
	h += strlen(pat);
	while (*h == ' ')
		h++;
	const char *e = strstr(h, "\r\n");
	size_t n = e ? (size_t)(e - h) : strlen(h);
	if (n >= out_size)
		n = out_size - 1;
	memcpy(out, h, n);
	out[n] = 0;
	return (int)n;
}

void http_resp_free(struct http_resp *r)
{
	free(r->body);
	r->body = NULL;
}

int wm_ctl_run(const char *args, char *out, size_t n)
{
	char cmd[2048];
	const char *d = getenv("WM_BIN_DIR");
	snprintf(cmd, sizeof(cmd), "%s/wm-ctl %s 2>&1", d ? d : "build/san/bin", args);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	size_t len = fread(out, 1, n - 1, p);
	out[len] = 0;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void stderr_capture_begin(struct stderr_capture *c)
{
	snprintf(c->path, sizeof(c->path), "/tmp/wm-stderr-XXXXXX");
	c->fd = mkstemp(c->path);
	cr_assert_geq(c->fd, 0);
	fflush(stderr);
	c->saved = dup(2);
	cr_assert_geq(c->saved, 0);
	dup2(c->fd, 2);
}

void stderr_capture_end(struct stderr_capture *c, char *out, size_t outlen)
{
	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	ssize_t n = pread(c->fd, out, outlen - 1, 0);
	out[n > 0 ? n : 0] = 0;
	close(c->fd);
	unlink(c->path);
}
