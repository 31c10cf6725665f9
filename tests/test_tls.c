/*
 * test_tls.c -- TLS at the edge (net/tls.c) against a real wm-shard.
 *
 * Every test makes a throw-away CA and server certificates with the openssl
 * CLI in its own temporary directory, then talks to the shard with curl
 * (an independent TLS client: certificate verification against that CA,
 * ALPN, protocol versions) and with raw sockets (a client that never
 * finishes its handshake).  Nothing leaves 127.0.0.1 (curl is told to use
 * no proxy).
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/wm_test.h"

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Run a shell command (stdout and stderr into out); its exit status. */
static int sh(char *out, size_t cap, const char *fmt, ...)
{
	char body[4096], cmd[4200];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(body, sizeof(body), fmt, ap);
	va_end(ap);
	cr_assert(n > 0 && (size_t)n < sizeof(body));
	snprintf(cmd, sizeof(cmd), "{ %s ; } 2>&1", body); /* the whole chain's stderr */
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f, "popen %s", cmd);
	size_t len = 0;
	if (out && cap) {
		len = fread(out, 1, cap - 1, f);
		out[len] = 0;
	}
	char sink[4096];
	while (fread(sink, 1, sizeof(sink), f) > 0)
		;
	int st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* A CA in dir/ca.{pem,key}. */
static void make_ca(const char *dir)
{
	static char out[8192];
	int rc = sh(out, sizeof(out),
		    "cd %s && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
		    "-keyout ca.key -out ca.pem -days 2 -subj /CN=wm-test-ca && "
		    "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\nbasicConstraints=CA:FALSE\\n"
		    "extendedKeyUsage=serverAuth\\n' > ext.cnf",
		    dir);
	cr_assert_eq(rc, 0, "openssl (CA): %s", out);
}

/* A server certificate signed by the CA: dir/<name>.{pem,key}, subject
 * CN=<name>, serial `serial`. */
static void make_cert(const char *dir, const char *name, int serial)
{
	static char out[8192];
	int rc = sh(out, sizeof(out),
		    "cd %s && openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout %s.key "
		    "-out %s.csr -subj /CN=%s && openssl x509 -req -in %s.csr -CA ca.pem -CAkey ca.key "
		    "-set_serial %d -days 2 -extfile ext.cnf -out %s.pem",
		    dir, name, name, name, name, serial, name);
	cr_assert_eq(rc, 0, "openssl (%s): %s", name, out);
}

/* curl against the shard: exit status, output (with -v details) in out. */
#define CURL "curl -sS --noproxy '*' --max-time 10 "

static void start_tls(struct wm_proc *p, const char *cert, const char *key, const char *const *more)
{
	static char c[400], k[400];
	snprintf(c, sizeof(c), "%s/%s", p->dir, cert);
	snprintf(k, sizeof(k), "%s/%s", p->dir, key);
	const char *args[16] = {"--tls-cert", c, "--tls-key", k};
	int n = 4;
	for (int i = 0; more && more[i] && n < 15; i++)
		args[n++] = more[i];
	args[n] = NULL;
	cr_assert_eq(wm_start(p, args, NULL), 0, "wm-shard did not start (logs in %s)", p->dir);
	cr_assert(strstr(p->banner, "listening on https://"), "banner: %s", p->banner);
}

WM_TEST(tls, verified_https_alpn_and_versions, .timeout = 120)
{
	struct wm_proc p;
	wm_proc_init(&p);
	make_ca(p.dir);
	make_cert(p.dir, "srv", 1001);
	start_tls(&p, "srv.pem", "srv.key", NULL);
	static char out[1 << 16];

	/* verified against the throw-away CA (no -k), ALPN http/1.1 */
	int rc = sh(out, sizeof(out), CURL "-v --cacert %s/ca.pem https://127.0.0.1:%d/healthz", p.dir, p.port);
	cr_assert_eq(rc, 0, "curl: %s", out);
	cr_assert(strstr(out, "{\"status\":\"ok\","), "%s", out);
	cr_assert(strstr(out, "ALPN: server accepted http/1.1"), "ALPN not negotiated:\n%s", out);
	cr_assert(strstr(out, "subject: CN=srv"), "%s", out);

	/* without the CA the certificate does not verify (curl exit 60) */
	rc = sh(out, sizeof(out), CURL "https://127.0.0.1:%d/healthz", p.port);
	cr_assert_eq(rc, 60, "unverified certificate accepted? rc %d: %s", rc, out);

	/* TLS 1.2 and 1.3 both work */
	rc = sh(out, sizeof(out), CURL "-v --cacert %s/ca.pem --tlsv1.2 --tls-max 1.2 https://127.0.0.1:%d/healthz",
		p.dir, p.port);
	cr_assert_eq(rc, 0, "TLS 1.2: %s", out);
	cr_assert(strstr(out, "SSL connection using TLSv1.2"), "%s", out);
	rc = sh(out, sizeof(out), CURL "-v --cacert %s/ca.pem --tlsv1.3 https://127.0.0.1:%d/healthz", p.dir,
		p.port);
	cr_assert_eq(rc, 0, "TLS 1.3: %s", out);
	cr_assert(strstr(out, "SSL connection using TLSv1.3"), "%s", out);

	/* TLS 1.1 is refused by the server (a protocol_version alert) */
	rc = sh(out, sizeof(out), CURL "--cacert %s/ca.pem --tls-max 1.1 https://127.0.0.1:%d/healthz", p.dir,
		p.port);
	cr_assert_eq(rc, 35, "TLS 1.1 accepted? rc %d: %s", rc, out);

	/* a write and a large response (partial TLS writes) */
	rc = sh(out, sizeof(out),
		CURL "--cacert %s/ca.pem -H 'Authorization: Bearer " WM_TEST_KEY "' -H 'Content-Type: application/json' "
		     "-d '{\"legal_name\":\"TLS Co\",\"country\":\"AT\"}' -w ' status=%%{http_code}' "
		     "https://127.0.0.1:%d/v1/partners",
		p.dir, p.port);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "status=201") && strstr(out, "\"legal_name\":\"TLS Co\""), "%s", out);
	rc = sh(out, sizeof(out),
		CURL "--cacert %s/ca.pem -o /dev/null -w 'status=%%{http_code} size=%%{size_download}' "
		     "https://127.0.0.1:%d/v1/openapi.json",
		p.dir, p.port);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "status=200"), "%s", out);
	const char *sz = strstr(out, "size=");
	cr_assert(sz && atol(sz + 5) > 65536, "a response larger than one TLS record: %s", out);

	/* plain HTTP to the TLS port gets no HTTP answer */
	int fd = tcp_connect(p.port);
	const char req[] = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";
	cr_assert_eq(write(fd, req, sizeof(req) - 1), (ssize_t)sizeof(req) - 1);
	char buf[64] = "";
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	cr_assert_eq(poll(&pf, 1, 5000), 1);
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	cr_assert(n <= 0 || strncmp(buf, "HTTP/", 5), "plain HTTP answered on the TLS port");
	close(fd);
	wm_proc_cleanup(&p);
}

WM_TEST(tls, slow_handshake_closed_at_head_timeout, .timeout = 120)
{
	struct wm_proc p;
	wm_proc_init(&p);
	make_ca(p.dir);
	make_cert(p.dir, "srv", 1001);
	const char *more[] = {"--header-timeout-ms", "1000", NULL};
	start_tls(&p, "srv.pem", "srv.key", more);
	uint64_t t0 = now_ms();
	int silent = tcp_connect(p.port);
	int partial = tcp_connect(p.port);
	/* the first bytes of a ClientHello record, then nothing */
	static const char hello[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03";
	cr_assert_eq(write(partial, hello, sizeof(hello) - 1), (ssize_t)sizeof(hello) - 1);
	/* meanwhile other clients are served */
	static char out[8192];
	for (int i = 0; i < 3; i++) {
		int rc = sh(out, sizeof(out), CURL "--cacert %s/ca.pem https://127.0.0.1:%d/healthz", p.dir, p.port);
		cr_assert_eq(rc, 0, "%s", out);
		cr_assert(strstr(out, "{\"status\":\"ok\","), "%s", out);
	}
	int fds[2] = {silent, partial};
	for (int i = 0; i < 2; i++) {
		struct pollfd pf = {.fd = fds[i], .events = POLLIN};
		int left = (int)(t0 + 5000 - now_ms());
		cr_assert_eq(poll(&pf, 1, left > 0 ? left : 0), 1, "handshake %d not closed in time", i);
		char x;
		ssize_t n = recv(fds[i], &x, 1, 0);
		cr_assert(n == 0 || (n < 0 && errno == ECONNRESET), "closed without a byte (%zd)", n);
		uint64_t took = now_ms() - t0;
		cr_assert_geq(took, 1000, "closed after %llu ms: before the time-out", (unsigned long long)took);
		cr_assert_lt(took, 3000, "closed after %llu ms", (unsigned long long)took);
		close(fds[i]);
	}
	wm_proc_cleanup(&p);
}

/* The log of the current start of p, into out. */
static void read_log(const struct wm_proc *p, char *out, size_t cap)
{
	char path[400];
	snprintf(path, sizeof(path), "%s/shard-%d.log", p->dir, p->starts);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	size_t n = fread(out, 1, cap - 1, f);
	out[n] = 0;
	fclose(f);
}

WM_TEST(tls, sighup_reloads_the_certificate_and_keeps_it_on_a_bad_file, .timeout = 120)
{
	struct wm_proc p;
	wm_proc_init(&p);
	make_ca(p.dir);
	make_cert(p.dir, "one", 1001);
	make_cert(p.dir, "two", 2002);
	static char out[1 << 15];
	cr_assert_eq(sh(out, sizeof(out), "cd %s && cp one.pem live.pem && cp one.key live.key", p.dir), 0);
	start_tls(&p, "live.pem", "live.key", NULL);
	int rc = sh(out, sizeof(out), CURL "-v --cacert %s/ca.pem https://127.0.0.1:%d/healthz", p.dir, p.port);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "subject: CN=one"), "%s", out);

	/* new files + SIGHUP: new connections get the new certificate */
	cr_assert_eq(sh(out, sizeof(out), "cd %s && cp two.pem live.pem && cp two.key live.key", p.dir), 0);
	cr_assert_eq(kill(p.pid, SIGHUP), 0);
	int seen = 0;
	for (int i = 0; i < 50 && !seen; i++) {
		usleep(100 * 1000);
		rc = sh(out, sizeof(out), CURL "-v --cacert %s/ca.pem https://127.0.0.1:%d/healthz", p.dir, p.port);
		cr_assert_eq(rc, 0, "%s", out);
		seen = strstr(out, "subject: CN=two") != NULL;
	}
	cr_assert(seen, "the reloaded certificate is not served:\n%s", out);

	/* a broken file + SIGHUP: the running certificate stays, an error is logged */
	cr_assert_eq(sh(out, sizeof(out), "cd %s && echo garbage > live.pem", p.dir), 0);
	cr_assert_eq(kill(p.pid, SIGHUP), 0);
	static char log[1 << 16];
	int logged = 0;
	for (int i = 0; i < 50 && !logged; i++) {
		usleep(100 * 1000);
		read_log(&p, log, sizeof(log));
		logged = strstr(log, "TLS reload refused") != NULL;
	}
	cr_assert(logged, "no error line for the refused reload:\n%s", log);
	rc = sh(out, sizeof(out), CURL "-v --cacert %s/ca.pem https://127.0.0.1:%d/healthz", p.dir, p.port);
	cr_assert_eq(rc, 0, "the shard stopped serving TLS after a bad reload: %s", out);
	cr_assert(strstr(out, "subject: CN=two") && strstr(out, "{\"status\":\"ok\","), "%s", out);
	cr_assert_eq(kill(p.pid, 0), 0, "still running");
	wm_proc_cleanup(&p);
}

WM_TEST(tls, bad_files_refuse_to_start, .timeout = 120)
{
	struct wm_proc p;
	wm_proc_init(&p);
	make_ca(p.dir);
	make_cert(p.dir, "one", 1001);
	make_cert(p.dir, "two", 2002);
	char c1[400], k2[400], missing[400], msg[2048];
	snprintf(c1, sizeof(c1), "%s/one.pem", p.dir);
	snprintf(k2, sizeof(k2), "%s/two.key", p.dir);
	snprintf(missing, sizeof(missing), "%s/missing.pem", p.dir);
	const char *mismatch[] = {"--tls-cert", c1, "--tls-key", k2, NULL};
	cr_assert_neq(wm_start_expect_fail(&p, mismatch, msg, sizeof(msg)), 0);
	cr_assert(strstr(msg, "mismatch") || strstr(msg, "does not match"), "%s", msg);
	const char *nofile[] = {"--tls-cert", missing, "--tls-key", k2, NULL};
	cr_assert_neq(wm_start_expect_fail(&p, nofile, msg, sizeof(msg)), 0);
	cr_assert(strstr(msg, "missing.pem"), "%s", msg);
	const char *nokey[] = {"--tls-cert", c1, NULL};
	cr_assert_neq(wm_start_expect_fail(&p, nokey, msg, sizeof(msg)), 0);
	cr_assert(strstr(msg, "key"), "%s", msg);
	wm_proc_cleanup(&p);
}
