/*
 * test_webhook_delivery.c -- webhooks in the shard, end to end (issue 18,
 * engine/webhooks/): the /v1/webhook-endpoints API and the deliveries it
 * causes.
 *
 * Why a receiver of our own, and why it verifies with OpenSSL directly:
 * the point is that a partner with ANY Standard Webhooks implementation
 * can verify what we send, so the check must not share code with the
 * signer.  The receiver here (a thread on 127.0.0.1) only records what
 * arrives (webhook-id, webhook-timestamp, webhook-signature, body) and
 * answers with the status the test asks for (200, 500, 410); the test
 * thread verifies every recorded signature afterwards with HMAC() and
 * EVP_EncodeBlock (so a delivery that arrives before the test knows the
 * secret is still verified).  Shards run with --webhook-allow-http and
 * --webhook-allow-private (the receiver is plain HTTP on loopback) and,
 * test builds only, WM_WEBHOOK_RETRY_MAX_MS=100 so a whole retry schedule
 * takes about two seconds.
 *
 * Also through a router (WM_TEST_TOPOLOGY=cluster: a router in front of
 * 3 shards): the endpoints live on the catalogue home, and an order's
 * events leave from its destination's shard (DE: shard 1), so the order
 * tests check delivery from a shard that is not the home.
 */
#include <jansson.h>

#include "tests/api_client.h"
#include "tests/cluster_harness.h"
#include "tests/data_scan.h"
#include "tests/order_world.h"
#include "tests/wm_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---- the receiver ------------------------------------------------------------------ */

#define RX_MAX 2048
#define RX_REQ_MAX (256 * 1024)

struct rx_rec {
	char id[128], ts[32], sig[512];
	char *body;
	size_t body_len;
	int answered;
};

struct receiver {
	int fd, port;
	pthread_t th;
	atomic_int stop;
	atomic_int status;   /* what to answer */
	atomic_int fail_first; /* answer 500 to this many requests first */
	atomic_int slow_first; /* answer this many requests first only after slow_ms */
	atomic_int slow_ms;
	pthread_mutex_t mu;
	struct rx_rec recs[RX_MAX];
	unsigned n;
};

static int hdr(const char *head, const char *name, char *out, size_t cap)
{
	size_t nl = strlen(name);
	for (const char *p = head; (p = strstr(p, "\r\n")) != NULL;) {
		p += 2;
		if (!strncasecmp(p, name, nl) && p[nl] == ':') {
			const char *v = p + nl + 1;
			while (*v == ' ')
				v++;
			const char *e = strstr(v, "\r\n");
			size_t n = e ? (size_t)(e - v) : strlen(v);
			if (n >= cap)
				return -1;
			memcpy(out, v, n);
			out[n] = 0;
			return 0;
		}
	}
	return -1;
}

static void sleep_ms(int ms);

static void serve_one(struct receiver *r, int fd)
{
	char *buf = malloc(RX_REQ_MAX + 1);
	size_t len = 0, need = 0;
	char *body = NULL;
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	while (len < RX_REQ_MAX && poll(&pf, 1, 5000) > 0) {
		ssize_t k = read(fd, buf + len, RX_REQ_MAX - len);
		if (k <= 0)
			break;
		len += (size_t)k;
		buf[len] = 0;
		if (!body) {
			char *e = strstr(buf, "\r\n\r\n");
			if (!e)
				continue;
			body = e + 4;
			char cl[32];
			need = (size_t)(body - buf) + (hdr(buf, "Content-Length", cl, sizeof(cl)) ? 0 : strtoul(cl, NULL, 10));
		}
		if (len >= need)
			break;
	}
	if (body && len >= need) {
		int st = atomic_load(&r->status);
		if (atomic_load(&r->fail_first) > 0) {
			atomic_fetch_sub(&r->fail_first, 1);
			st = 500;
		}
		pthread_mutex_lock(&r->mu);
		if (r->n < RX_MAX) {
			struct rx_rec *x = &r->recs[r->n++];
			memset(x, 0, sizeof(*x));
			hdr(buf, "webhook-id", x->id, sizeof(x->id));
			hdr(buf, "webhook-timestamp", x->ts, sizeof(x->ts));
			hdr(buf, "webhook-signature", x->sig, sizeof(x->sig));
			x->body_len = need - (size_t)(body - buf);
			x->body = malloc(x->body_len + 1);
			memcpy(x->body, body, x->body_len);
			x->body[x->body_len] = 0;
			x->answered = st;
		}
		pthread_mutex_unlock(&r->mu);
		if (atomic_load(&r->slow_first) > 0) {
			atomic_fetch_sub(&r->slow_first, 1);
			sleep_ms(atomic_load(&r->slow_ms)); /* the sender's time-out comes first */
		}
		char out[128];
		int n = snprintf(out, sizeof(out), "HTTP/1.1 %d X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", st);
		if (write(fd, out, (size_t)n) < 0) {
			/* the sender gave up: it retries */
		}
	}
	free(buf);
	close(fd);
}

static void *rx_loop(void *arg)
{
	struct receiver *r = arg;
	while (!atomic_load(&r->stop)) {
		struct pollfd pf = {.fd = r->fd, .events = POLLIN};
		if (poll(&pf, 1, 100) <= 0)
			continue;
		int c = accept(r->fd, NULL, NULL);
		if (c >= 0)
			serve_one(r, c);
	}
	return NULL;
}

static void rx_start(struct receiver *r, int status)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
	atomic_store(&r->status, status);
	r->fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(r->fd, 0);
	int one = 1;
	setsockopt(r->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	cr_assert_eq(bind(r->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	socklen_t al = sizeof(a);
	getsockname(r->fd, (struct sockaddr *)&a, &al);
	r->port = ntohs(a.sin_port);
	cr_assert_eq(listen(r->fd, 64), 0);
	cr_assert_eq(pthread_create(&r->th, NULL, rx_loop, r), 0);
}

static void rx_stop(struct receiver *r)
{
	atomic_store(&r->stop, 1);
	pthread_join(r->th, NULL);
	close(r->fd);
	for (unsigned i = 0; i < r->n; i++)
		free(r->recs[i].body);
	pthread_mutex_destroy(&r->mu);
}

/* ---- an independent verifier (OpenSSL, not engine/events/) ----------------------------- */

/* The key of "whsec_<base64>" into key: its length, or -1. */
static int key_of(const char *secret, unsigned char *key)
{
	cr_assert_eq(strncmp(secret, "whsec_", 6), 0, "secret %s", secret);
	const char *b = secret + 6;
	size_t n = strlen(b);
	int k = EVP_DecodeBlock(key, (const unsigned char *)b, (int)n);
	if (k < 0)
		return -1;
	while (n && b[n - 1] == '=') {
		n--;
		k--;
	}
	return k;
}

/* 1 when the signature header of x has an entry "v1,<sig>" made with secret. */
static int signed_with(const struct rx_rec *x, const char *secret)
{
	unsigned char key[128], mac[EVP_MAX_MD_SIZE];
	int kl = key_of(secret, key);
	cr_assert_geq(kl, 24);
	size_t cl = strlen(x->id) + strlen(x->ts) + x->body_len + 2;
	char *content = malloc(cl + 1);
	snprintf(content, cl + 1, "%s.%s.", x->id, x->ts);
	memcpy(content + strlen(x->id) + strlen(x->ts) + 2, x->body, x->body_len);
	unsigned ml = 0;
	HMAC(EVP_sha256(), key, kl, (const unsigned char *)content, cl, mac, &ml);
	free(content);
	char want[3 + 64 + 1] = "v1,";
	EVP_EncodeBlock((unsigned char *)want + 3, mac, (int)ml);
	/* entries are separated by exactly one space */
	size_t wl = strlen(want);
	for (const char *p = x->sig; *p;) {
		const char *e = strchr(p, ' ');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n == wl && !memcmp(p, want, wl))
			return 1;
		if (!e)
			break;
		p = e + 1;
	}
	return 0;
}

/* Entries in the signature header of x. */
static int n_entries(const struct rx_rec *x)
{
	int n = x->sig[0] ? 1 : 0;
	for (const char *p = x->sig; *p; p++)
		n += *p == ' ';
	return n;
}

/* ---- helpers ------------------------------------------------------------------------ */

static void start_shard(struct wm_proc *p, int fresh)
{
	static const char *const args[] = {"--webhook-allow-http", "1", "--webhook-allow-private", "1",
					   "--key-rate-rps", "100000", "--key-rate-burst", "100000", NULL};
	static const char *const env[] = {"WM_WEBHOOK_RETRY_MAX_MS=100", NULL};
	if (fresh)
		wm_proc_init(p);
	cr_assert_eq(wm_start(p, args, env), 0, "wm-shard did not start (logs in %s)", p->dir);
}

/* An order world (tests/order_world.h) whose shards may deliver to the
 * plain-HTTP loopback receiver, with env ("K=V", NULL-terminated, may be
 * NULL) added to their environment.  Its arguments stay set for
 * ow_restart: each test runs in a process of its own. */
static void order_world(struct oworld *x, const char *const *env)
{
	static const char *const extra[] = {"--webhook-allow-http", "1", "--webhook-allow-private", "1", NULL};
	memcpy(ow_extra_args, extra, sizeof(extra));
	for (unsigned i = 0; env && env[i] && i + 1 < sizeof(ow_extra_env) / sizeof(ow_extra_env[0]); i++)
		ow_extra_env[i] = env[i];
	ow_start(x, NULL, 24, 0);
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Create an endpoint as key (NULL: operator) for the receiver: the created
 * endpoint (caller decrefs). */
static json_t *endpoint_for(int port, const char *key, const struct receiver *r, const char *types)
{
	char body[512];
	snprintf(body, sizeof(body), "{\"url\":\"http://127.0.0.1:%d/hook\",\"event_types\":%s}", r->port, types);
	return tc_expect(port, "POST", "/v1/webhook-endpoints", key, body, 201);
}

/* A new partner (operator): its partner.created event's id into ev (the
 * newest partner.created event). */
static void new_partner(int port, const char *name, char *ev, size_t cap)
{
	char body[256];
	snprintf(body, sizeof(body), "{\"legal_name\":\"%s\",\"country\":\"FR\",\"roles\":[\"seller\"]}", name);
	json_t *p = tc_expect(port, "POST", "/v1/partners", NULL, body, 201);
	const char *pid = tc_jstr(p, "id");
	cr_assert_not_null(pid);
	json_t *evs = tc_expect(port, "GET", "/v1/events?type=partner.created&page_size=200", NULL, NULL, 200);
	json_t *data = json_object_get(evs, "data");
	int found = 0;
	for (size_t i = 0; i < json_array_size(data); i++) {
		json_t *e = json_array_get(data, i);
		json_t *scope = json_object_get(e, "scope");
		if (scope && !strcmp(json_string_value(json_object_get(scope, "entity_id")), pid)) {
			snprintf(ev, cap, "%s", tc_jstr(e, "id"));
			found = 1;
		}
	}
	cr_assert(found, "no partner.created event for %s", pid);
	json_decref(evs);
	json_decref(p);
}

/* Wait (<= ms) until the receiver answered `status` to event id: 1, or 0. */
static int wait_answered(struct receiver *r, const char *id, int status, int ms)
{
	for (int waited = 0; waited <= ms; waited += 50) {
		pthread_mutex_lock(&r->mu);
		int got = 0;
		for (unsigned i = 0; i < r->n; i++)
			if (!strcmp(r->recs[i].id, id) && r->recs[i].answered == status)
				got = 1;
		pthread_mutex_unlock(&r->mu);
		if (got)
			return 1;
		sleep_ms(50);
	}
	return 0;
}

static unsigned count_of(struct receiver *r, const char *id)
{
	pthread_mutex_lock(&r->mu);
	unsigned n = 0;
	for (unsigned i = 0; i < r->n; i++)
		n += !strcmp(r->recs[i].id, id);
	pthread_mutex_unlock(&r->mu);
	return n;
}

/* Every recorded delivery carries a valid signature under secret (or,
 * when `other` is not NULL, under other). */
static void all_signed(struct receiver *r, const char *secret, const char *other)
{
	pthread_mutex_lock(&r->mu);
	for (unsigned i = 0; i < r->n; i++)
		cr_assert(signed_with(&r->recs[i], secret) || (other && signed_with(&r->recs[i], other)),
			  "delivery %u (%s) not signed: %s", i, r->recs[i].id, r->recs[i].sig);
	pthread_mutex_unlock(&r->mu);
}

/* ---- the API ------------------------------------------------------------------------- */

WM_TEST(webhook_delivery, endpoints_api_secret_once_owner_only_and_bounds, .timeout = 60)
{
	struct wm_proc p;
	tc_start(&p); /* no --webhook-allow-*: https only, public destinations only */
	int port = p.port;
	int st;
	/* plain http and private destinations are refused by default, naming why */
	json_t *j = tc_call(port, "POST", "/v1/webhook-endpoints", NULL,
			    "{\"url\":\"http://hooks.example.com/x\",\"event_types\":[\"*\"]}", &st);
	cr_assert_eq(st, 422);
	cr_assert(tc_lists_error(j, "url", "format"));
	json_decref(j);
	static const char *const private_urls[] = {"https://127.0.0.1/x", "https://10.1.2.3/x", "https://[::1]/x",
						   "https://169.254.169.254/latest", "https://localhost:8443/x", NULL};
	for (int i = 0; private_urls[i]; i++) {
		char body[256];
		snprintf(body, sizeof(body), "{\"url\":\"%s\",\"event_types\":[\"*\"]}", private_urls[i]);
		j = tc_call(port, "POST", "/v1/webhook-endpoints", NULL, body, &st);
		cr_assert_eq(st, 422, "%s: %d", private_urls[i], st);
		cr_assert(tc_lists_error(j, "url", "destination"), "%s", private_urls[i]);
		json_decref(j);
	}
	/* event_types: 1..16 patterns, well formed, no duplicates */
	char body[2048];
	char types[1024] = "[";
	for (int i = 0; i < 17; i++)
		snprintf(types + strlen(types), sizeof(types) - strlen(types), "%s\"t%d.*\"", i ? "," : "", i);
	strcat(types, "]");
	snprintf(body, sizeof(body), "{\"url\":\"https://hooks.example.com/a\",\"event_types\":%s}", types);
	tc_expect_code(port, "POST", "/v1/webhook-endpoints", NULL, body, 422, "validation_failed");
	char *cut = strrchr(types, ',');
	strcpy(cut, "]"); /* 16: at the bound */
	snprintf(body, sizeof(body), "{\"url\":\"https://hooks.example.com/a\",\"event_types\":%s}", types);
	json_decref(tc_expect(port, "POST", "/v1/webhook-endpoints", NULL, body, 201));
	static const char *const bad_types[] = {"[]", "[\"Order.*\"]", "[\"order.\"]", "[\"*.x\"]", "[\"a..b\"]",
						"[\"order.*\",\"order.*\"]", "[1]", NULL};
	for (int i = 0; bad_types[i]; i++) {
		snprintf(body, sizeof(body), "{\"url\":\"https://hooks.example.com/a\",\"event_types\":%s}", bad_types[i]);
		tc_expect_code(port, "POST", "/v1/webhook-endpoints", NULL, body, 422, "validation_failed");
	}
	tc_expect_code(port, "POST", "/v1/webhook-endpoints", NULL,
		       "{\"url\":\"https://hooks.example.com/a\",\"event_types\":[\"*\"],\"owner\":\"x\"}", 422,
		       "validation_failed");

	/* a partner's endpoint: the secret once, then never */
	char partner[64], key[128], other[64], okey[128];
	tc_partner_live(port, "Hooked", "FR", "[\"seller\"]", NULL, partner);
	tc_key_for(port, partner, key);
	tc_partner_live(port, "Nosy", "FR", "[\"seller\"]", NULL, other);
	tc_key_for(port, other, okey);
	json_t *e = tc_expect(port, "POST", "/v1/webhook-endpoints", key,
			      "{\"url\":\"https://hooks.example.com/orders\",\"event_types\":[\"order.*\",\"partner.updated\"],"
			      "\"description\":\"ERP\"}",
			      201);
	const char *secret = tc_jstr(e, "secret");
	cr_assert(secret && !strncmp(secret, "whsec_", 6), "secret shown on create");
	cr_assert_str_eq(tc_jstr(e, "owner_entity_id"), partner);
	cr_assert_str_eq(tc_jstr(e, "status"), "enabled");
	char id[64], path[128];
	snprintf(id, sizeof(id), "%s", tc_jstr(e, "id"));
	snprintf(path, sizeof(path), "/v1/webhook-endpoints/%s", id);
	json_t *g = tc_expect(port, "GET", path, key, NULL, 200);
	cr_assert_null(json_object_get(g, "secret"), "the secret is shown once");
	cr_assert_str_eq(tc_jstr(g, "description"), "ERP");
	json_decref(g);
	/* another partner: 404 as for an unknown id, and an empty list */
	tc_expect_code(port, "GET", path, okey, NULL, 404, "not_found");
	tc_expect_code(port, "PATCH", path, okey, "{\"status\":\"disabled\"}", 404, "not_found");
	tc_expect_code(port, "DELETE", path, okey, NULL, 404, "not_found");
	tc_expect_code(port, "GET", "/v1/webhook-endpoints/whe_nope", key, NULL, 404, "not_found");
	json_t *l = tc_expect(port, "GET", "/v1/webhook-endpoints", okey, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(l, "data")), 0);
	json_decref(l);
	l = tc_expect(port, "GET", "/v1/webhook-endpoints?page_size=1", key, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(l, "data")), 1);
	cr_assert_null(json_object_get(json_array_get(json_object_get(l, "data"), 0), "secret"));
	json_decref(l);
	/* operators see every endpoint */
	l = tc_expect(port, "GET", "/v1/webhook-endpoints?status=enabled", NULL, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(l, "data")), 2);
	json_decref(l);
	tc_expect_code(port, "GET", "/v1/webhook-endpoints?status=sleeping", NULL, NULL, 400, "invalid_filter");
	/* PATCH */
	json_t *u = tc_expect(port, "PATCH", path, key,
			      "{\"status\":\"disabled\",\"event_types\":[\"*\"],\"description\":null}", 200);
	cr_assert_str_eq(tc_jstr(u, "status"), "disabled");
	cr_assert(json_is_null(json_object_get(u, "description")));
	cr_assert_null(json_object_get(u, "secret"));
	json_decref(u);
	tc_expect_code(port, "PATCH", path, key, "{\"url\":\"https://192.168.1.1/x\"}", 422, "validation_failed");
	tc_expect_code(port, "PATCH", path, key, "{\"status\":\"paused\"}", 422, "validation_failed");
	/* rotation: a new secret, once; the previous one's expiry is shown */
	char rpath[160];
	snprintf(rpath, sizeof(rpath), "%s/rotate-secret", path);
	json_t *r = tc_expect(port, "POST", rpath, key, NULL, 200);
	cr_assert(tc_jstr(r, "secret") && strcmp(tc_jstr(r, "secret"), secret), "a new secret");
	cr_assert_not_null(tc_jstr(r, "previous_secret_expires_at"));
	json_decref(r);
	tc_expect_code(port, "POST", rpath, okey, NULL, 404, "not_found");
	/* the dead-letter queue of another's endpoint is not there either */
	char dpath[160];
	snprintf(dpath, sizeof(dpath), "%s/dead-letters", path);
	tc_expect_code(port, "GET", dpath, okey, NULL, 404, "not_found");
	l = tc_expect(port, "GET", dpath, key, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(l, "data")), 0);
	json_decref(l);
	/* events: created, updated, secret_rotated; never a secret in them */
	cr_assert_eq(tc_count_events(port, "webhook_endpoint.created", key), 1);
	cr_assert_eq(tc_count_events(port, "webhook_endpoint.secret_rotated", key), 1);
	json_t *evs = tc_expect(port, "GET", "/v1/events?page_size=200", key, NULL, 200);
	char *dump = json_dumps(evs, 0);
	cr_assert_null(strstr(dump, "whsec_"), "no secret in an event");
	free(dump);
	json_decref(evs);
	/* DELETE */
	json_t *dd = tc_expect(port, "DELETE", path, key, NULL, 200);
	cr_assert(json_is_true(json_object_get(dd, "deleted")));
	json_decref(dd);
	tc_expect_code(port, "GET", path, key, NULL, 404, "not_found");
	/* at most 16 endpoints per owner */
	for (int i = 0; i < 16; i++)
		json_decref(tc_expect(port, "POST", "/v1/webhook-endpoints", key,
				      "{\"url\":\"https://hooks.example.com/n\",\"event_types\":[\"*\"]}", 201));
	tc_expect_code(port, "POST", "/v1/webhook-endpoints", key,
		       "{\"url\":\"https://hooks.example.com/n\",\"event_types\":[\"*\"]}", 422, "limit_reached");
	json_decref(e);
	wm_proc_cleanup(&p);
}

/* ---- deliveries ------------------------------------------------------------------------- */

WM_TEST(webhook_delivery, retried_until_delivered_signed_and_rotation_signs_twice, .timeout = 90)
{
	struct receiver rx;
	rx_start(&rx, 200);
	atomic_store(&rx.fail_first, 2); /* two 500s, then 200 */
	struct wm_proc p;
	start_shard(&p, 1);
	json_t *e = endpoint_for(p.port, NULL, &rx, "[\"partner.*\"]");
	char secret[128], id[64];
	snprintf(secret, sizeof(secret), "%s", tc_jstr(e, "secret"));
	snprintf(id, sizeof(id), "%s", tc_jstr(e, "id"));
	char ev[64];
	new_partner(p.port, "Retried SARL", ev, sizeof(ev));
	cr_assert(wait_answered(&rx, ev, 200, 15000), "the event was delivered after the retries");
	cr_assert_geq(count_of(&rx, ev), 3, "two failures, then the success");
	all_signed(&rx, secret, NULL);
	/* the body is the event as GET /v1/events shows it */
	pthread_mutex_lock(&rx.mu);
	json_t *b = json_loads(rx.recs[0].body, 0, NULL);
	pthread_mutex_unlock(&rx.mu);
	cr_assert_not_null(b);
	cr_assert_str_eq(tc_jstr(b, "type"), "partner.created");
	json_decref(b);
	/* the endpoint's own events do not match partner.* */
	char rpath[160];
	snprintf(rpath, sizeof(rpath), "/v1/webhook-endpoints/%s/rotate-secret", id);
	json_t *r = tc_expect(p.port, "POST", rpath, NULL, NULL, 200);
	char fresh[128];
	snprintf(fresh, sizeof(fresh), "%s", tc_jstr(r, "secret"));
	json_decref(r);
	char ev2[64];
	new_partner(p.port, "Rotated SARL", ev2, sizeof(ev2));
	cr_assert(wait_answered(&rx, ev2, 200, 15000));
	pthread_mutex_lock(&rx.mu);
	for (unsigned i = 0; i < rx.n; i++) {
		struct rx_rec *x = &rx.recs[i];
		if (strcmp(x->id, ev2))
			continue;
		cr_assert_eq(n_entries(x), 2, "two signatures during a rotation: %s", x->sig);
		cr_assert(signed_with(x, fresh), "signed with the new secret");
		cr_assert(signed_with(x, secret), "and with the previous one");
	}
	pthread_mutex_unlock(&rx.mu);
	/* /metrics: attempts, successes, failures by class, per-endpoint pending.
	 * The receiver has answered; the shard counts the delivery when its
	 * transfer completes, a moment later: poll for it (up to 5 s). */
	struct http_resp m;
	for (int tries = 0;; tries++) {
		cr_assert_eq(http_do(p.port, "GET", "/metrics", NULL, NULL, &m), 0);
		if (strstr(m.body, "wm_webhook_delivered_total 2") || tries == 250)
			break;
		http_resp_free(&m);
		usleep(20 * 1000);
	}
	cr_assert_not_null(strstr(m.body, "wm_webhook_attempts_total "));
	cr_assert_not_null(strstr(m.body, "wm_webhook_failures_total{class=\"status_5xx\"} 2"), "%s", m.body);
	cr_assert_not_null(strstr(m.body, "wm_webhook_delivered_total 2"));
	cr_assert_not_null(strstr(m.body, "wm_webhook_pending 0"));
	http_resp_free(&m);
	json_decref(e);
	wm_proc_cleanup(&p);
	rx_stop(&rx);
}

/* Dead after the last attempt; listed; replayed one by one and by range. */
WM_TEST(webhook_delivery, dead_letters_listed_and_replayed, .timeout = 90)
{
	struct receiver rx;
	rx_start(&rx, 500);
	struct wm_proc p;
	start_shard(&p, 1);
	json_t *e = endpoint_for(p.port, NULL, &rx, "[\"partner.created\"]");
	char secret[128], id[64], dpath[160], rpath[160];
	snprintf(secret, sizeof(secret), "%s", tc_jstr(e, "secret"));
	snprintf(id, sizeof(id), "%s", tc_jstr(e, "id"));
	snprintf(dpath, sizeof(dpath), "/v1/webhook-endpoints/%s/dead-letters", id);
	snprintf(rpath, sizeof(rpath), "/v1/webhook-endpoints/%s/replay", id);
	char ev1[64], ev2[64];
	new_partner(p.port, "Dead One", ev1, sizeof(ev1));
	new_partner(p.port, "Dead Two", ev2, sizeof(ev2));
	size_t n = 0;
	json_t *l = NULL;
	for (int i = 0; i < 200 && n < 2; i++) {
		sleep_ms(100);
		json_decref(l);
		l = tc_expect(p.port, "GET", dpath, NULL, NULL, 200);
		n = json_array_size(json_object_get(l, "data"));
	}
	cr_assert_eq(n, 2, "both deliveries dead after the last attempt");
	json_t *d0 = json_array_get(json_object_get(l, "data"), 0);
	cr_assert_str_eq(tc_jstr(d0, "status"), "dead");
	cr_assert_eq(json_integer_value(json_object_get(d0, "attempts")), 8);
	cr_assert_eq(json_integer_value(json_object_get(d0, "last_status")), 500);
	char did[128];
	snprintf(did, sizeof(did), "%s", tc_jstr(d0, "id"));
	json_decref(l);
	cr_assert_eq(count_of(&rx, ev1), 8, "eight attempts, no more");
	/* replay one: pending again, delivered */
	atomic_store(&rx.status, 200);
	char body[256];
	snprintf(body, sizeof(body), "{\"delivery_id\":\"%s\"}", did);
	json_t *r = tc_expect(p.port, "POST", rpath, NULL, body, 200);
	cr_assert_eq(json_integer_value(json_object_get(r, "replayed")), 1);
	json_decref(r);
	cr_assert(wait_answered(&rx, ev1, 200, 10000), "the replayed delivery arrived");
	/* replaying it again: it is not dead any more */
	for (int i = 0; i < 50; i++) {
		int st;
		json_t *x = tc_call(p.port, "POST", rpath, NULL, body, &st);
		json_decref(x);
		if (st == 409)
			break;
		sleep_ms(100);
	}
	tc_expect_code(p.port, "POST", rpath, NULL, body, 409, "not_dead");
	/* by time range: the other one */
	r = tc_expect(p.port, "POST", rpath, NULL, "{\"from\":\"2000-01-01T00:00:00Z\",\"to\":\"2999-01-01T00:00:00Z\"}",
		      200);
	cr_assert_eq(json_integer_value(json_object_get(r, "replayed")), 1);
	json_decref(r);
	cr_assert(wait_answered(&rx, ev2, 200, 10000));
	/* refusals */
	tc_expect_code(p.port, "POST", rpath, NULL, "{}", 422, "validation_failed");
	tc_expect_code(p.port, "POST", rpath, NULL,
		       "{\"delivery_id\":\"x\",\"from\":\"2000-01-01T00:00:00Z\",\"to\":\"2999-01-01T00:00:00Z\"}", 422,
		       "validation_failed");
	tc_expect_code(p.port, "POST", rpath, NULL, "{\"from\":\"2999-01-01T00:00:00Z\",\"to\":\"2000-01-01T00:00:00Z\"}",
		       422, "validation_failed");
	tc_expect_code(p.port, "POST", rpath, NULL, "{\"delivery_id\":\"whe_x.evt_y\"}", 404, "not_found");
	l = tc_expect(p.port, "GET", dpath, NULL, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(l, "data")), 0, "the queue is empty");
	json_decref(l);
	all_signed(&rx, secret, NULL);
	json_decref(e);
	wm_proc_cleanup(&p);
	rx_stop(&rx);
}

WM_TEST(webhook_delivery, gone_410_disables_the_endpoint, .timeout = 60)
{
	struct receiver rx;
	rx_start(&rx, 410);
	struct wm_proc p;
	start_shard(&p, 1);
	json_t *e = endpoint_for(p.port, NULL, &rx, "[\"partner.created\"]");
	char path[160];
	snprintf(path, sizeof(path), "/v1/webhook-endpoints/%s", tc_jstr(e, "id"));
	char ev[64];
	new_partner(p.port, "Gone GmbH", ev, sizeof(ev));
	cr_assert(wait_answered(&rx, ev, 410, 10000));
	json_t *g = NULL;
	for (int i = 0; i < 100; i++) {
		json_decref(g);
		g = tc_expect(p.port, "GET", path, NULL, NULL, 200);
		if (!strcmp(tc_jstr(g, "status"), "disabled"))
			break;
		sleep_ms(50);
	}
	cr_assert_str_eq(tc_jstr(g, "status"), "disabled");
	cr_assert_str_eq(tc_jstr(g, "disabled_reason"), "gone");
	json_decref(g);
	cr_assert_eq(tc_count_events(p.port, "webhook.endpoint_disabled", NULL), 1);
	/* no retry after a 410; a new event waits while disabled */
	char ev2[64];
	new_partner(p.port, "Waiting GmbH", ev2, sizeof(ev2));
	sleep_ms(800);
	cr_assert_eq(count_of(&rx, ev), 1, "a 410 is not retried");
	cr_assert_eq(count_of(&rx, ev2), 0, "a disabled endpoint gets nothing");
	json_decref(e);
	wm_proc_cleanup(&p);
	rx_stop(&rx);
}

/* kill -9 with deliveries not yet made (the receiver failing): after the
 * restart every event arrives, signed; none is lost. */
WM_TEST(webhook_delivery, kill9_loses_nothing, .timeout = 120)
{
	struct receiver rx;
	rx_start(&rx, 500);
	struct wm_proc p;
	start_shard(&p, 1);
	json_t *e = endpoint_for(p.port, NULL, &rx, "[\"partner.created\"]");
	char secret[128];
	snprintf(secret, sizeof(secret), "%s", tc_jstr(e, "secret"));
	enum { N = 12 };
	char evs[N][64];
	for (int i = 0; i < N; i++) {
		char name[32];
		snprintf(name, sizeof(name), "Crash %d", i);
		new_partner(p.port, name, evs[i], sizeof(evs[i]));
	}
	wm_kill9(&p);
	atomic_store(&rx.status, 200);
	start_shard(&p, 0);
	for (int i = 0; i < N; i++)
		cr_assert(wait_answered(&rx, evs[i], 200, 20000), "event %d (%s) delivered after the restart", i, evs[i]);
	all_signed(&rx, secret, NULL);
	/* nothing is pending or dead any more */
	char dpath[160];
	snprintf(dpath, sizeof(dpath), "/v1/webhook-endpoints/%s/dead-letters", tc_jstr(e, "id"));
	json_t *l = tc_expect(p.port, "GET", dpath, NULL, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(l, "data")), 0);
	json_decref(l);
	/* a second restart sends nothing delivered again */
	pthread_mutex_lock(&rx.mu);
	unsigned before = rx.n;
	pthread_mutex_unlock(&rx.mu);
	cr_assert_eq(wm_stop(&p), 0);
	start_shard(&p, 0);
	sleep_ms(1000);
	pthread_mutex_lock(&rx.mu);
	cr_assert_eq(rx.n, before, "a restart resends nothing delivered");
	pthread_mutex_unlock(&rx.mu);
	json_decref(e);
	wm_proc_cleanup(&p);
	rx_stop(&rx);
}

/* A partner's endpoint gets its own entity's events only, and none from
 * before it existed; the platform's gets every entity's. */
WM_TEST(webhook_delivery, a_partner_endpoint_gets_its_own_events_from_its_creation_on, .timeout = 60)
{
	struct receiver rx, prx;
	rx_start(&rx, 200);
	rx_start(&prx, 200);
	struct wm_proc p;
	start_shard(&p, 1);
	char a[64], akey[128], b[64];
	tc_partner_live(p.port, "Mine", "FR", "[\"seller\"]", NULL, a);
	tc_key_for(p.port, a, akey);
	tc_partner_live(p.port, "Theirs", "FR", "[\"seller\"]", NULL, b);
	json_t *e = endpoint_for(p.port, akey, &rx, "[\"partner.*\"]");
	json_t *pe = endpoint_for(p.port, NULL, &prx, "[\"partner.updated\"]");
	char path[128];
	snprintf(path, sizeof(path), "/v1/partners/%s", b);
	json_decref(tc_expect(p.port, "PATCH", path, NULL, "{\"legal_name\":\"Theirs Renamed\"}", 200));
	snprintf(path, sizeof(path), "/v1/partners/%s", a);
	json_decref(tc_expect(p.port, "PATCH", path, NULL, "{\"legal_name\":\"Mine Renamed\"}", 200));
	/* the platform's endpoint: both updates */
	for (int i = 0; i < 200; i++) {
		pthread_mutex_lock(&prx.mu);
		unsigned n = prx.n;
		pthread_mutex_unlock(&prx.mu);
		if (n >= 2)
			break;
		sleep_ms(50);
	}
	sleep_ms(600);
	pthread_mutex_lock(&prx.mu);
	cr_assert_eq(prx.n, 2, "the platform's endpoint gets every entity's partner.updated");
	pthread_mutex_unlock(&prx.mu);
	pthread_mutex_lock(&rx.mu);
	cr_assert_eq(rx.n, 1, "the partner's endpoint gets its own update only, nothing from before it existed");
	json_t *body = json_loads(rx.recs[0].body, 0, NULL);
	pthread_mutex_unlock(&rx.mu);
	cr_assert_str_eq(tc_jstr(body, "type"), "partner.updated");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(body, "scope"), "entity_id")), a);
	json_decref(body);
	all_signed(&rx, tc_jstr(e, "secret"), NULL);
	all_signed(&prx, tc_jstr(pe, "secret"), NULL);
	json_decref(e);
	json_decref(pe);
	wm_proc_cleanup(&p);
	rx_stop(&rx);
	rx_stop(&prx);
}

/* An endpoint whose every delivery fails for --webhook-disable-after-days
 * (here WM_WEBHOOK_DISABLE_AFTER_MS=1500, a test build's stand-in for
 * days) is disabled: reason "failing", webhook.endpoint_disabled.  One
 * that fails and then succeeds is healthy again (failing_since cleared)
 * and stays enabled; PATCH status enabled gives a disabled one a fresh
 * start. */
WM_TEST(webhook_delivery, failing_for_too_long_disables_and_a_success_clears_failing_since, .timeout = 60)
{
	struct receiver ok, bad;
	rx_start(&ok, 200);
	atomic_store(&ok.fail_first, 2);
	rx_start(&bad, 500);
	struct wm_proc p;
	static const char *const args[] = {"--webhook-allow-http", "1", "--webhook-allow-private", "1", NULL};
	static const char *const env[] = {"WM_WEBHOOK_RETRY_MAX_MS=100", "WM_WEBHOOK_DISABLE_AFTER_MS=1500", NULL};
	wm_proc_init(&p);
	cr_assert_eq(wm_start(&p, args, env), 0, "wm-shard did not start (logs in %s)", p.dir);
	json_t *ea = endpoint_for(p.port, NULL, &ok, "[\"partner.created\"]");
	json_t *eb = endpoint_for(p.port, NULL, &bad, "[\"partner.created\"]");
	char pa[160], pb[160], ev[64];
	snprintf(pa, sizeof(pa), "/v1/webhook-endpoints/%s", tc_jstr(ea, "id"));
	snprintf(pb, sizeof(pb), "/v1/webhook-endpoints/%s", tc_jstr(eb, "id"));
	new_partner(p.port, "Flaky GmbH", ev, sizeof(ev));
	/* the flaky receiver: two 500s, then delivered, and healthy again */
	cr_assert(wait_answered(&ok, ev, 200, 10000));
	sleep_ms(300);
	json_t *g = tc_expect(p.port, "GET", pa, NULL, NULL, 200);
	cr_assert_str_eq(tc_jstr(g, "status"), "enabled");
	cr_assert(json_is_null(json_object_get(g, "failing_since")), "cleared by the success: %s",
		  json_dumps(g, JSON_COMPACT));
	json_decref(g);
	/* the failing one: failing_since set at once, disabled once it has failed for 1.5 s */
	int seen_failing = 0, disabled = 0;
	for (int i = 0; i < 200 && !disabled; i++) {
		g = tc_expect(p.port, "GET", pb, NULL, NULL, 200);
		seen_failing |= json_is_string(json_object_get(g, "failing_since"));
		disabled = !strcmp(tc_jstr(g, "status"), "disabled");
		if (disabled)
			cr_assert_str_eq(tc_jstr(g, "disabled_reason"), "failing");
		json_decref(g);
		if (!disabled)
			sleep_ms(50);
	}
	cr_assert(seen_failing, "failing_since was never set");
	cr_assert(disabled, "an endpoint failing for longer than the limit was not disabled");
	cr_assert_eq(tc_count_events(p.port, "webhook.endpoint_disabled", NULL), 1);
	g = tc_expect(p.port, "GET", pa, NULL, NULL, 200);
	cr_assert_str_eq(tc_jstr(g, "status"), "enabled", "the flaky one stays enabled");
	json_decref(g);
	/* enabled again by its owner: a fresh start */
	g = tc_expect(p.port, "PATCH", pb, NULL, "{\"status\":\"enabled\"}", 200);
	cr_assert(json_is_null(json_object_get(g, "failing_since")));
	cr_assert(json_is_null(json_object_get(g, "disabled_reason")));
	json_decref(g);
	json_decref(ea);
	json_decref(eb);
	wm_stop(&p);
	wm_proc_cleanup(&p);
	rx_stop(&ok);
	rx_stop(&bad);
}

/* A receiver slower than the sender's time-out (WM_WEBHOOK_TIMEOUT_MS=300,
 * a test build's; the first answer comes after 1.5 s): the attempt is a
 * transport failure, counted as such, and retried until delivered. */
WM_TEST(webhook_delivery, a_receiver_slower_than_the_time_out_is_retried, .timeout = 60)
{
	struct receiver rx;
	rx_start(&rx, 200);
	atomic_store(&rx.slow_ms, 1500);
	atomic_store(&rx.slow_first, 1);
	struct wm_proc p;
	static const char *const args[] = {"--webhook-allow-http", "1", "--webhook-allow-private", "1", NULL};
	static const char *const env[] = {"WM_WEBHOOK_RETRY_MAX_MS=100", "WM_WEBHOOK_TIMEOUT_MS=300", NULL};
	wm_proc_init(&p);
	cr_assert_eq(wm_start(&p, args, env), 0, "wm-shard did not start (logs in %s)", p.dir);
	json_t *e = endpoint_for(p.port, NULL, &rx, "[\"partner.created\"]");
	char ev[64];
	new_partner(p.port, "Slow GmbH", ev, sizeof(ev));
	long delivered = 0, transport = 0;
	for (int i = 0; i < 200 && !delivered; i++) {
		struct http_resp r;
		cr_assert_eq(http_do(p.port, "GET", "/metrics", NULL, NULL, &r), 0);
		const char *d = strstr(r.body, "\nwm_webhook_delivered_total ");
		const char *t = strstr(r.body, "wm_webhook_failures_total{class=\"transport\"} ");
		delivered = d ? strtol(d + strlen("\nwm_webhook_delivered_total "), NULL, 10) : 0;
		transport = t ? strtol(t + strlen("wm_webhook_failures_total{class=\"transport\"} "), NULL, 10) : 0;
		http_resp_free(&r);
		if (!delivered)
			sleep_ms(50);
	}
	cr_assert_eq(delivered, 1, "never delivered");
	cr_assert_geq(transport, 1, "the slow answer was not a transport failure (time-out)");
	cr_assert_geq(count_of(&rx, ev), 2, "the timed-out attempt was not retried");
	json_decref(e);
	wm_stop(&p);
	wm_proc_cleanup(&p);
	rx_stop(&rx);
}

/* An order's events go to every party of the order: the seller (the
 * events' own entity) gets them as the log has them; the estate, the
 * originator and fulfiller of its leg, gets them too, in a participant's
 * view -- the order, its status and legs, never the consumer price or
 * the consumer; the stockist, no party of this order, gets nothing.
 * Every delivery is signed with its own endpoint's secret. */
WM_TEST(webhook_delivery, an_orders_events_reach_every_party_in_its_view, .timeout = 90)
{
	struct receiver rs, re, rk;
	rx_start(&rs, 200);
	rx_start(&re, 200);
	rx_start(&rk, 200);
	struct oworld x;
	order_world(&x, NULL);
	json_t *es = endpoint_for(x.port, x.ksel, &rs, "[\"order.*\"]");
	json_t *ee = endpoint_for(x.port, x.kest, &re, "[\"order.*\"]");
	json_t *ek = endpoint_for(x.port, x.kstk, &rk, "[\"order.*\"]");
	int st;
	json_t *o = ow_order(&x, 6, NULL, NULL, &st);
	cr_assert_eq(st, 201);
	char id[64];
	snprintf(id, sizeof(id), "%s", tc_jstr(o, "id"));
	json_decref(o);
	/* order.placed ... order.sourced: wait until both parties have as many as the log */
	size_t want = 0;
	json_t *evs = tc_expect(x.port, "GET", "/v1/events?type=order.sourced", NULL, NULL, 200);
	want = json_array_size(json_object_get(evs, "data"));
	json_decref(evs);
	cr_assert_geq(want, 1);
	char sourced_id[64];
	evs = tc_expect(x.port, "GET", "/v1/events?type=order.sourced", NULL, NULL, 200);
	snprintf(sourced_id, sizeof(sourced_id), "%s", tc_jstr(json_array_get(json_object_get(evs, "data"), 0), "id"));
	json_decref(evs);
	cr_assert(wait_answered(&rs, sourced_id, 200, 15000), "the seller did not get order.sourced");
	cr_assert(wait_answered(&re, sourced_id, 200, 15000), "the estate did not get order.sourced");
	sleep_ms(500);
	pthread_mutex_lock(&rk.mu);
	unsigned stockist = rk.n;
	pthread_mutex_unlock(&rk.mu);
	cr_assert_eq(stockist, 0, "the stockist is no party of this order");
	/* the seller's copy carries the money; the estate's never does */
	pthread_mutex_lock(&rs.mu);
	int seller_total = 0;
	for (unsigned i = 0; i < rs.n; i++)
		seller_total |= strstr(rs.recs[i].body, "\"total\"") != NULL;
	pthread_mutex_unlock(&rs.mu);
	cr_assert(seller_total, "the seller's order events carry the total");
	pthread_mutex_lock(&re.mu);
	cr_assert_gt(re.n, 0);
	for (unsigned i = 0; i < re.n; i++) {
		const char *b = re.recs[i].body;
		cr_assert_null(strstr(b, "\"total\""), "an originator got the consumer price: %s", b);
		cr_assert_null(strstr(b, "\"currency\""), "%s", b);
		cr_assert_null(strstr(b, "example.de"), "an originator got the consumer's e-mail: %s", b);
		cr_assert_not_null(strstr(b, id), "the order is named: %s", b);
	}
	pthread_mutex_unlock(&re.mu);
	all_signed(&rs, tc_jstr(es, "secret"), NULL);
	all_signed(&re, tc_jstr(ee, "secret"), NULL);
	json_decref(es);
	json_decref(ee);
	json_decref(ek);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
	rx_stop(&rs);
	rx_stop(&re);
	rx_stop(&rk);
}

/* An order's events leave from its destination's shard (through the
 * router: shard 1 of 3, not the catalogue home, which holds the
 * endpoints): every one arrives signed, the deliveries list shows them, a
 * 410 from that shard disables the endpoint on the home, and a replay of
 * one dead delivery acts on the shard that holds it (the others do not
 * know it). */
WM_TEST(webhook_delivery, an_orders_events_leave_from_its_shard_and_a_410_there_disables, .timeout = 90)
{
	struct receiver rx;
	rx_start(&rx, 200);
	struct oworld x;
	order_world(&x, NULL);
	json_t *e = endpoint_for(x.port, x.ksel, &rx, "[\"order.*\"]");
	char eid[64], lpath[200], rpath[160];
	snprintf(eid, sizeof(eid), "%s", tc_jstr(e, "id"));
	snprintf(lpath, sizeof(lpath), "/v1/webhook-endpoints/%s/deliveries", eid);
	snprintf(rpath, sizeof(rpath), "/v1/webhook-endpoints/%s/replay", eid);
	int st;
	json_t *o = ow_order(&x, 2, NULL, NULL, &st);
	cr_assert_eq(st, 201);
	json_decref(o);
	json_t *evs = tc_expect(x.port, "GET", "/v1/events?type=order.placed", NULL, NULL, 200);
	char placed[64];
	snprintf(placed, sizeof(placed), "%s", tc_jstr(json_array_get(json_object_get(evs, "data"), 0), "id"));
	json_decref(evs);
	cr_assert(wait_answered(&rx, placed, 200, 15000), "order.placed did not arrive");
	all_signed(&rx, tc_jstr(e, "secret"), NULL);
	/* the list shows it delivered, and filters by state */
	json_t *l = tc_expect(x.port, "GET", lpath, x.ksel, NULL, 200);
	json_t *data = json_object_get(l, "data");
	int seen = 0;
	for (size_t i = 0; i < json_array_size(data); i++) {
		json_t *d = json_array_get(data, i);
		if (!strcmp(tc_jstr(d, "event_id"), placed)) {
			seen = 1;
			cr_assert_str_eq(tc_jstr(d, "status"), "delivered");
		}
	}
	cr_assert(seen, "order.placed is not in the endpoint's deliveries");
	json_decref(l);
	char q[260];
	snprintf(q, sizeof(q), "%s?status=dead", lpath);
	l = tc_expect(x.port, "GET", q, x.ksel, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(l, "data")), 0, "nothing is dead yet");
	json_decref(l);
	snprintf(q, sizeof(q), "%s?status=lost", lpath);
	tc_expect_code(x.port, "GET", q, x.ksel, NULL, 400, "invalid_filter");
	/* another entity's endpoint is as unknown as a missing one */
	tc_expect_code(x.port, "GET", lpath, x.kest, NULL, 404, "not_found");
	/* 410 on the next order's events: the endpoint is disabled on the home */
	atomic_store(&rx.status, 410);
	o = ow_order(&x, 1, NULL, NULL, &st);
	cr_assert_eq(st, 201);
	json_decref(o);
	char path[160];
	snprintf(path, sizeof(path), "/v1/webhook-endpoints/%s", eid);
	json_t *g = NULL;
	for (int i = 0; i < 300; i++) {
		json_decref(g);
		g = tc_expect(x.port, "GET", path, x.ksel, NULL, 200);
		if (!strcmp(tc_jstr(g, "status"), "disabled"))
			break;
		sleep_ms(50);
	}
	cr_assert_str_eq(tc_jstr(g, "status"), "disabled", "a 410 from the order's shard did not disable the endpoint");
	cr_assert_str_eq(tc_jstr(g, "disabled_reason"), "gone");
	json_decref(g);
	/* the dead delivery, replayed by id once the endpoint is enabled again */
	snprintf(q, sizeof(q), "%s?status=dead", lpath);
	l = tc_expect(x.port, "GET", q, x.ksel, NULL, 200);
	/* the 410's delivery, and any sent beside it before the disable */
	cr_assert_geq(json_array_size(json_object_get(l, "data")), 1, "the 410's delivery is dead");
	char did[128], dev[64];
	snprintf(did, sizeof(did), "%s", tc_jstr(json_array_get(json_object_get(l, "data"), 0), "id"));
	snprintf(dev, sizeof(dev), "%s", tc_jstr(json_array_get(json_object_get(l, "data"), 0), "event_id"));
	json_decref(l);
	atomic_store(&rx.status, 200);
	json_decref(tc_expect(x.port, "PATCH", path, x.ksel, "{\"status\":\"enabled\"}", 200));
	char body[200];
	snprintf(body, sizeof(body), "{\"delivery_id\":\"%s\"}", did);
	json_t *r = tc_expect(x.port, "POST", rpath, x.ksel, body, 200);
	cr_assert_eq(json_integer_value(json_object_get(r, "replayed")), 1, "exactly one shard replays it");
	json_decref(r);
	cr_assert(wait_answered(&rx, dev, 200, 15000), "the replayed delivery did not arrive");
	json_decref(e);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
	rx_stop(&rx);
}

/* Retention (engine/retention.c) never takes an event a delivery still
 * needs: past the retention, an event whose delivery keeps failing stays
 * in the log (and is sent again) while its delivery is pending; once it is
 * delivered, the event and then its delivery row are pruned. */
WM_TEST(webhook_delivery, retention_keeps_an_event_until_its_delivery_ends, .timeout = 90)
{
	struct receiver rx;
	rx_start(&rx, 500);
	static const char *const args[] = {"--webhook-allow-http", "1", "--webhook-allow-private", "1", NULL};
	static const char *const env[] = {"WM_WEBHOOK_RETRY_MAX_MS=400", "WM_RETENTION_MS=1000", NULL};
	struct wm_proc p;
	wm_proc_init(&p);
	cr_assert_eq(wm_start(&p, args, env), 0, "wm-shard did not start (logs in %s)", p.dir);
	json_t *e = endpoint_for(p.port, NULL, &rx, "[\"partner.created\"]");
	char ev[64], epath[160], lpath[200];
	new_partner(p.port, "Kept Until Sent", ev, sizeof(ev));
	snprintf(epath, sizeof(epath), "/v1/events?type=partner.created&page_size=200");
	snprintf(lpath, sizeof(lpath), "/v1/webhook-endpoints/%s/deliveries", tc_jstr(e, "id"));
	/* three retentions later the delivery is still failing: the event stays */
	sleep_ms(3000);
	cr_assert_geq(count_of(&rx, ev), 2, "the delivery is being retried");
	json_t *l = tc_expect(p.port, "GET", epath, NULL, NULL, 200);
	int present = 0;
	for (size_t i = 0; i < json_array_size(json_object_get(l, "data")); i++)
		present |= !strcmp(tc_jstr(json_array_get(json_object_get(l, "data"), i), "id"), ev);
	json_decref(l);
	cr_assert(present, "an event with a pending delivery was pruned");
	/* delivered: the event goes, then the delivered row */
	atomic_store(&rx.status, 200);
	cr_assert(wait_answered(&rx, ev, 200, 15000));
	size_t left = 1, rows = 1;
	for (int t = 0; t < 100 && (left || rows); t++) {
		sleep_ms(100);
		l = tc_expect(p.port, "GET", epath, NULL, NULL, 200);
		left = 0;
		for (size_t i = 0; i < json_array_size(json_object_get(l, "data")); i++)
			left += !strcmp(tc_jstr(json_array_get(json_object_get(l, "data"), i), "id"), ev);
		json_decref(l);
		l = tc_expect(p.port, "GET", lpath, NULL, NULL, 200);
		rows = json_array_size(json_object_get(l, "data"));
		json_decref(l);
	}
	cr_assert_eq(left, 0, "the delivered event was not pruned");
	cr_assert_eq(rows, 0, "the delivered row was not pruned");
	json_decref(e);
	wm_proc_cleanup(&p);
	rx_stop(&rx);
}

/* Signing secrets are sealed at rest (engine/events/webhook_seal.h):
 * after a rotation, neither secret is anywhere in the WAL or a snapshot,
 * and after a restart both still sign (the previous one during its
 * rotation window). */
WM_TEST(webhook_delivery, secrets_are_sealed_at_rest_and_sign_after_a_restart, .timeout = 90)
{
	struct receiver rx;
	rx_start(&rx, 200);
	struct wm_proc p;
	start_shard(&p, 1);
	json_t *e = endpoint_for(p.port, NULL, &rx, "[\"partner.created\"]");
	char first[128], second[128], path[160];
	snprintf(first, sizeof(first), "%s", tc_jstr(e, "secret"));
	snprintf(path, sizeof(path), "/v1/webhook-endpoints/%s/rotate-secret", tc_jstr(e, "id"));
	json_t *r = tc_expect(p.port, "POST", path, NULL, NULL, 200);
	snprintf(second, sizeof(second), "%s", tc_jstr(r, "secret"));
	json_decref(r);
	cr_assert_str_neq(first, second);
	json_decref(tc_expect(p.port, "POST", "/v1/admin/snapshots", NULL, NULL, 202));
	sleep_ms(500);
	cr_assert_eq(wm_stop(&p), 0);
	/* every data directory: the shard's, or each shard's of the cluster
	 * behind it (the endpoints replicate to every shard) */
	unsigned dirs = p.cluster ? p.cluster->n : 1;
	for (unsigned d = 0; d < dirs; d++) {
		const char *dd = p.cluster ? p.cluster->shard[d].data_dir : p.data_dir;
		int in_wal, in_snap;
		data_scan(dd, first + 6, &in_wal, &in_snap);
		cr_assert(!in_wal && !in_snap, "the first secret is in %s (wal %d, snapshot %d)", dd, in_wal, in_snap);
		data_scan(dd, second + 6, &in_wal, &in_snap);
		cr_assert(!in_wal && !in_snap, "the second secret is in %s (wal %d, snapshot %d)", dd, in_wal, in_snap);
		data_scan(dd, "\"secret_sealed\":\"v1.", &in_wal, &in_snap);
		cr_assert(in_wal && in_snap, "no sealed secret in %s (wal %d, snapshot %d)", dd, in_wal, in_snap);
	}
	start_shard(&p, 0);
	char ev[64];
	new_partner(p.port, "Sealed Signs", ev, sizeof(ev));
	cr_assert(wait_answered(&rx, ev, 200, 10000));
	pthread_mutex_lock(&rx.mu);
	for (unsigned i = 0; i < rx.n; i++) {
		cr_assert(signed_with(&rx.recs[i], second), "not signed with the current secret: %s", rx.recs[i].sig);
		cr_assert(signed_with(&rx.recs[i], first), "not signed with the previous secret: %s", rx.recs[i].sig);
		cr_assert_eq(n_entries(&rx.recs[i]), 2);
	}
	pthread_mutex_unlock(&rx.mu);
	json_decref(e);
	wm_proc_cleanup(&p);
	rx_stop(&rx);
}

/* An order's deliveries survive a kill -9 of the shard that sends them
 * (through a router: its destination's shard, not the home): every event
 * of the order arrives after the restart, signed, none is lost. */
WM_TEST(webhook_delivery, an_orders_deliveries_survive_kill9_of_their_shard, .timeout = 120)
{
	struct receiver rx;
	rx_start(&rx, 500);
	static const char *const env[] = {"WM_WEBHOOK_RETRY_MAX_MS=200", NULL};
	struct oworld x;
	order_world(&x, env);
	json_t *e = endpoint_for(x.port, x.ksel, &rx, "[\"order.*\"]");
	char secret[128];
	snprintf(secret, sizeof(secret), "%s", tc_jstr(e, "secret"));
	int st;
	json_t *o = ow_order(&x, 2, NULL, NULL, &st);
	cr_assert_eq(st, 201);
	json_decref(o);
	/* the order's events, as the log has them */
	json_t *evs = tc_expect(x.port, "GET", "/v1/events?page_size=200", NULL, NULL, 200);
	char ids[16][64];
	unsigned m = 0;
	for (size_t i = 0; i < json_array_size(json_object_get(evs, "data")) && m < 16; i++) {
		json_t *ev = json_array_get(json_object_get(evs, "data"), i);
		if (!strncmp(tc_jstr(ev, "type"), "order.", 6))
			snprintf(ids[m++], sizeof(ids[0]), "%s", tc_jstr(ev, "id"));
	}
	json_decref(evs);
	cr_assert_geq(m, 4, "placed, paid, confirmed, sourced at least");
	/* failing attempts are under way: then the sender dies */
	for (int t = 0; t < 200 && !count_of(&rx, ids[0]); t++)
		sleep_ms(50);
	cr_assert_gt(count_of(&rx, ids[0]), 0, "no attempt before the crash");
	wm_kill9(&x.p);
	atomic_store(&rx.status, 200);
	ow_restart(&x, NULL); /* the same arguments and environment */
	for (unsigned i = 0; i < m; i++)
		cr_assert(wait_answered(&rx, ids[i], 200, 30000), "event %u (%s) delivered after the restart", i, ids[i]);
	all_signed(&rx, secret, NULL);
	json_decref(e);
	wm_stop(&x.p);
	wm_proc_cleanup(&x.p);
	rx_stop(&rx);
}
