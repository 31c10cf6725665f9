/*
 * ctl_cluster.c -- `wm-ctl cluster status`: every process of a cluster at
 * a glance (DESIGN.md section 9), for an operator at a terminal.
 *
 *   wm-ctl cluster status --shard-map FILE --cluster-secret-file FILE
 *                         [--router HOST:PORT ...]
 *
 * Each shard of the map, each router of its `router` lines and each router
 * named with --router is asked GET
 * /internal/cluster/status, signed with the cluster secret (the route a
 * router's readiness probe asks of the home).  One line per process; the exit
 * status is 1 when any process did not answer, so scripts can use it.
 *
 *   wm-ctl checks run --shard-map FILE --cluster-secret-file FILE [--in-doubt-limit-ms N]
 *
 * runs the consistency checks (engine/checks.c) on every shard (POST
 * /internal/checks/run: each flags its own findings), then `cluster check`
 * for what no shard can see alone (a leg's hold against its order, a
 * PREPARED hold without its transaction), whose violations it reports to
 * the home (POST /internal/checks/cluster), which flags them like its own.
 *
 * Why blocking sockets here: a CLI asks a handful of processes once, with
 * a time-out per process; the event-loop client (net/client.h) is for
 * servers.  Only numeric addresses are dialled (the map's), never a name.
 */
#include "shard-router/ctl_cluster.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "engine/cluster/cluster_auth.h"
#include "engine/cluster/shard_map.h"

#define CTL_TIMEOUT_MS 3000      /* per process: connect, send, answer */
#define CTL_MAX_ANSWER (16u << 20) /* a shard's holds and legs (check) fit */
#define CTL_MAX_HOLD_ENTRIES 4000000u /* holds + legs of the whole cluster the check joins */
#define CTL_MAX_ROUTERS 16

/* Wait for fd to be ready for `ev` until deadline (ms since an epoch). */
static int ctl_wait(int fd, short ev, long long deadline)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	long long now = ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
	if (now >= deadline)
		return -1;
	struct pollfd p = {.fd = fd, .events = ev};
	return poll(&p, 1, (int)(deadline - now)) == 1 ? 0 : -1;
}

static long long ctl_deadline(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000 + CTL_TIMEOUT_MS;
}

/* Write len bytes of p to the non-blocking fd by deadline.  0 or -1. */
static int ctl_write_all(int fd, const char *p, size_t len, long long deadline)
{
	while (len) {
		ssize_t k = write(fd, p, len);
		if (k < 0 && errno == EAGAIN && !ctl_wait(fd, POLLOUT, deadline))
			continue;
		if (k <= 0)
			return -1;
		p += k;
		len -= (size_t)k;
	}
	return 0;
}

/*
 * GET path from addr ("a.b.c.d:port"), with an optional signature header,
 * Connection: close.  The body into out (NUL-terminated); the status, or
 * -1 with the reason in out.
 */
static int ctl_http(const char *method, const char *addr, const char *path, const char *extra, const char *body,
		    char *out, size_t out_size)
{
	char host[64];
	const char *colon = strrchr(addr, ':');
	struct sockaddr_in sa = {.sin_family = AF_INET};
	if (!colon || (size_t)(colon - addr) >= sizeof(host)) {
		snprintf(out, out_size, "not a numeric HOST:PORT");
		return -1;
	}
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = 0;
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		snprintf(out, out_size, "not a numeric IPv4 address");
		return -1;
	}
	sa.sin_port = htons((uint16_t)atoi(colon + 1));
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	long long deadline = ctl_deadline();
	if (fd < 0 || (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) && errno != EINPROGRESS) ||
	    ctl_wait(fd, POLLOUT, deadline)) {
		snprintf(out, out_size, "cannot connect");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	int soerr = 0;
	socklen_t sl = sizeof(soerr);
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
	char req[2048];
	size_t bl = body ? strlen(body) : 0;
	int n = snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n%s", method, path, addr,
			 extra ? extra : "");
	if (n > 0 && (size_t)n < sizeof(req) && body)
		n += snprintf(req + n, sizeof(req) - (size_t)n, "Content-Type: application/json\r\nContent-Length: %zu\r\n",
			      bl);
	if (n > 0 && (size_t)n < sizeof(req))
		n += snprintf(req + n, sizeof(req) - (size_t)n, "\r\n");
	if (soerr || n <= 0 || (size_t)n >= sizeof(req) || ctl_write_all(fd, req, (size_t)n, deadline) ||
	    ctl_write_all(fd, body ? body : "", bl, deadline)) {
		snprintf(out, out_size, "cannot connect");
		close(fd);
		return -1;
	}
	static char buf[CTL_MAX_ANSWER + 1];
	size_t len = 0;
	for (;;) {
		if (len == CTL_MAX_ANSWER || ctl_wait(fd, POLLIN, deadline))
			break;
		ssize_t k = read(fd, buf + len, CTL_MAX_ANSWER - len);
		if (k <= 0)
			break;
		len += (size_t)k;
	}
	close(fd);
	buf[len] = 0;
	int status = 0;
	const char *answer = strstr(buf, "\r\n\r\n");
	if (sscanf(buf, "HTTP/1.1 %d", &status) != 1 || !answer) {
		snprintf(out, out_size, "no answer within %d ms", CTL_TIMEOUT_MS);
		return -1;
	}
	snprintf(out, out_size, "%s", answer + 4);
	return status;
}


/* A signed request to addr; the status, the body in out. */
static int ctl_signed(const struct cluster_key *k, const char *method, const char *addr, const char *path,
		      const char *body, char *out, size_t out_size)
{
	char sig[CK_HEADER_MAX], hdr[CK_HEADER_MAX + 32];
	if (ck_sign(k, method, strlen(method), path, strlen(path), (int64_t)time(NULL), body, body ? strlen(body) : 0,
		    sig))
		return -1;
	snprintf(hdr, sizeof(hdr), CK_HEADER_NAME ": %s\r\n", sig);
	return ctl_http(method, addr, path, hdr, body, out, out_size);
}

/* --shard-map F or --cluster-secret-file F at argv[*i] (its value at
 * argv[*i + 1], which the caller checked exists): 1 and *i past the name,
 * else 0. */
static int ctl_cluster_arg(char **argv, int *i, const char **map_path, const char **secret_path)
{
	if (!strcmp(argv[*i], "--shard-map"))
		*map_path = argv[++*i];
	else if (!strcmp(argv[*i], "--cluster-secret-file"))
		*secret_path = argv[++*i];
	else
		return 0;
	return 1;
}

/* The map and the cluster secret: 0, or 1 with the reason on stderr. */
static int ctl_load(const char *map_path, const char *secret_path, struct shard_map *m, struct cluster_key *k)
{
	char err[512];
	if (smap_load(map_path, NULL, 0, m, err, sizeof(err))) {
		fprintf(stderr, "wm-ctl: %s\n", err);
		return 1;
	}
	if (ck_load(secret_path, k, err, sizeof(err))) {
		fprintf(stderr, "wm-ctl: cluster secret %s: %s\n", secret_path, err);
		return 1;
	}
	return 0;
}

static int ctl_usage(void)
{
	fprintf(stderr, "usage: wm-ctl cluster status --shard-map FILE --cluster-secret-file FILE "
			"[--router HOST:PORT ...]\n"
			"       wm-ctl cluster check --shard-map FILE --cluster-secret-file FILE [--in-doubt-limit-ms N]\n"
			"       wm-ctl txn resolve TXN commit|abort --shard-map FILE --cluster-secret-file FILE\n"
			"       wm-ctl checks run --shard-map FILE --cluster-secret-file FILE [--in-doubt-limit-ms N]\n");
	return 2;
}

/*
 * `wm-ctl txn resolve TXN commit|abort`: the operator decides a cross-shard
 * transaction whose coordinator is gone for good (DESIGN.md 9).  Refused
 * while the router the id names still has a record of it (it decides, and
 * re-drives); a router that does not answer is taken as gone.  Then every
 * shard is told the decision (POST /internal/txn/commit or /abort: the
 * participants' holds) and the order's destination applies it (commit:
 * confirmed, sourced, reserved; abort: failed, refunded).  Each call is
 * idempotent: running it twice is safe.  Exit 0 when every shard took it.
 */
static int ctl_txn_resolve(const struct shard_map *m, const struct cluster_key *k, const char *txn, int commit)
{
	static char body[CTL_MAX_ANSWER + 1];
	const char *colon = strchr(txn, ':');
	int rid = -1;
	if (txn[0] == 'r' && colon && colon - txn <= 3 && colon[1])
		rid = atoi(txn + 1);
	if (rid < 0 || rid >= SMAP_MAX_ROUTERS || strlen(txn) > 64 || strchr(txn, '"') || strchr(txn, '\\')) {
		fprintf(stderr, "wm-ctl: \"%s\" is not a transaction id (r<router id>:<order id>)\n", txn);
		return 2;
	}
	char path[256], payload[128];
	if (m->routers[rid][0]) {
		snprintf(path, sizeof(path), "/internal/txn/status?txn=%s", txn);
		int st = ctl_signed(k, "GET", m->routers[rid], path, NULL, body, sizeof(body));
		if (st == 200 && (strstr(body, "\"decision\":\"commit\"") || strstr(body, "\"decision\":\"in_progress\""))) {
			fprintf(stderr, "wm-ctl: router %d (%s) still has a record of %s: it decides (%s)\n", rid,
				m->routers[rid], txn, body);
			return 1;
		}
		printf("router %d %s: %s\n", rid, m->routers[rid], st == 200 ? body : "does not answer: taken as gone");
	}
	snprintf(payload, sizeof(payload), "{\"txn\":\"%s\"}", txn);
	int bad = 0;
	for (uint32_t i = 0; i < m->n; i++) {
		int st = ctl_signed(k, "POST", m->shards[i].addr, commit ? "/internal/txn/commit" : "/internal/txn/abort",
				    payload, body, sizeof(body));
		int ok = st == 200 || (commit && st == 404); /* 404: no leg of it there */
		printf("shard %u %s: %d %s\n", i, m->shards[i].addr, st, ok ? "ok" : body);
		bad += !ok;
	}
	/* the destination: the order id "ord_CC_..." names its country */
	const char *order = colon + 1;
	char cc[3] = {order[4], order[5], 0};
	int dest = strncmp(order, "ord_", 4) || strlen(order) < 8 ? -1 : smap_owner(m, cc);
	if (dest < 0) {
		fprintf(stderr, "wm-ctl: no shard owns the destination of %s\n", order);
		return 1;
	}
	const char *steps_commit[] = {"commit", "rest", NULL}, *steps_abort[] = {"abort", NULL};
	for (const char *const *s = commit ? steps_commit : steps_abort; *s; s++) {
		snprintf(path, sizeof(path), "/internal/orders/%s/%s", order, *s);
		int st = ctl_signed(k, "POST", m->shards[dest].addr, path, commit ? "{}" : "{\"reason\":\"interrupted\"}",
				    body, sizeof(body));
		int ok = st == 200 || st == 201 || (!commit && st == 409 && strstr(body, "\"order\""));
		printf("destination shard %d: %s %d %s\n", dest, *s, st, ok ? "ok" : body);
		bad += !ok;
	}
	return bad ? 1 : 0;
}

int ctl_txn(int argc, char **argv)
{
	if (argc < 3 || strcmp(argv[0], "resolve") || (strcmp(argv[2], "commit") && strcmp(argv[2], "abort")))
		return ctl_usage();
	const char *map_path = NULL, *secret_path = NULL;
	for (int i = 3; i < argc; i++) {
		if (i + 1 >= argc || !ctl_cluster_arg(argv, &i, &map_path, &secret_path))
			return ctl_usage();
	}
	if (!map_path || !secret_path)
		return ctl_usage();
	static struct shard_map m;
	struct cluster_key k;
	if (ctl_load(map_path, secret_path, &m, &k))
		return 1;
	return ctl_txn_resolve(&m, &k, argv[1], !strcmp(argv[2], "commit"));
}

#define CTL_IN_DOUBT_LIMIT_MS 60000 /* older than this, a PREPARED transaction must still be in progress */

/*
 * The cross-shard findings of a check, for `wm-ctl checks run` to report
 * to the home (POST /internal/checks/cluster): a JSON body
 * {"truncated":bool,"findings":[[kind, id, id, text], ...]}, at most
 * CTL_MAX_REPORTED of them (past that, truncated: the home then closes
 * none of the open ones).
 */
#define CTL_MAX_REPORTED 2000u
#define CTL_REPORT_MAX (CTL_MAX_REPORTED * 512u + 64u)
struct ctl_report {
	char *buf;       /* the findings' JSON array members so far */
	size_t len;
	unsigned n;
	int truncated;
};

/* s as a JSON string's contents into out (quotes, backslashes and control
 * characters dropped: ids and our own texts have none that matter). */
static size_t ctl_json_text(char *out, size_t cap, const char *s)
{
	size_t n = 0;
	for (; *s && n + 1 < cap; s++)
		if (*s != '"' && *s != '\\' && (unsigned char)*s >= 0x20)
			out[n++] = *s;
	out[n] = 0;
	return n;
}

static void ctl_report_add(struct ctl_report *r, const char *kind, const char *a, const char *b, const char *text)
{
	if (!r)
		return;
	if (r->n == CTL_MAX_REPORTED || (!r->buf && !(r->buf = malloc(CTL_REPORT_MAX)))) {
		r->truncated = 1;
		return;
	}
	char ea[160], eb[160], et[300];
	ctl_json_text(ea, sizeof(ea), a);
	ctl_json_text(eb, sizeof(eb), b);
	ctl_json_text(et, sizeof(et), text);
	int k = snprintf(r->buf + r->len, CTL_REPORT_MAX - r->len, "%s[\"%s\",\"%s\",\"%s\",\"%s\"]", r->n ? "," : "", kind,
			 ea, eb, et);
	if (k <= 0 || (size_t)k >= CTL_REPORT_MAX - r->len) {
		r->truncated = 1;
		return;
	}
	r->len += (size_t)k;
	r->n++;
}

/* One entry of /internal/check/holds. */
enum { HE_COMMITTED = 0, HE_LIVE = 1, HE_GONE = 2 };
struct hold_entry {
	char hold[128], order[64];
	long long qty;
	uint8_t kind;  /* HE_* */
	uint8_t shard;
};

struct hold_set {
	struct hold_entry *e;
	size_t n, cap;
};

/* A JSON string without escapes at p (ids never have any) into out (n
 * bytes): the byte after it, or NULL. */
static const char *read_id(const char *p, char *out, size_t n)
{
	size_t i = 0;
	if (*p++ != '"')
		return NULL;
	while (*p && *p != '"' && *p != '\\' && i + 1 < n)
		out[i++] = *p++;
	out[i] = 0;
	return *p == '"' ? p + 1 : NULL;
}

/* One ["hold","order",qty] at p into x: the byte after it, or NULL. */
static const char *read_entry(const char *p, struct hold_entry *x)
{
	char *end;
	if (*p++ != '[' || !(p = read_id(p, x->hold, sizeof(x->hold))) || *p++ != ',' ||
	    !(p = read_id(p, x->order, sizeof(x->order))) || *p++ != ',')
		return NULL;
	x->qty = strtoll(p, &end, 10);
	return end != p && *end == ']' ? end + 1 : NULL;
}

/* Read the [["hold","order",qty],...] array after `"<name>":[` in body
 * into set; 0, or -1 when it is not there, not of that form, or past
 * CTL_MAX_HOLD_ENTRIES. */
static int holds_parse(const char *body, const char *name, uint8_t kind, uint8_t shard, struct hold_set *set)
{
	char key[32];
	snprintf(key, sizeof(key), "\"%s\":[", name);
	const char *p = strstr(body, key);
	if (!p)
		return -1;
	p += strlen(key);
	while (*p == '[') {
		if (set->n == set->cap) {
			size_t cap = set->cap ? set->cap * 2 : 1024;
			struct hold_entry *e = cap <= CTL_MAX_HOLD_ENTRIES ? realloc(set->e, cap * sizeof(*e)) : NULL;
			if (!e)
				return -1;
			set->e = e;
			set->cap = cap;
		}
		struct hold_entry *x = &set->e[set->n];
		if (!(p = read_entry(p, x)))
			return -1;
		x->kind = kind;
		x->shard = shard;
		set->n++;
		if (*p == ',')
			p++;
	}
	return *p == ']' ? 0 : -1;
}

static int hold_cmp(const void *a, const void *b)
{
	const struct hold_entry *x = a, *y = b;
	int c = strcmp(x->hold, y->hold);
	return c ? c : (int)x->kind - (int)y->kind;
}

/*
 * The check's cross-shard half: every COMMITTED hold is named by a leg that
 * should hold it (of a reserved order, not shipped), and every such leg's
 * hold is COMMITTED with the leg's units.  Holds live on the stock's
 * shard and orders on the destination's, so this is joined here from each
 * shard's GET /internal/check/holds.  Prints each violation (naming the
 * order); their count.  A shard that does not answer counts in *down.
 */
static unsigned long long ctl_check_holds(const struct shard_map *m, const struct cluster_key *k, int *down,
					  struct ctl_report *rep)
{
	static char body[CTL_MAX_ANSWER + 1];
	struct hold_set set = {0};
	unsigned long long bad = 0;
	for (uint32_t i = 0; i < m->n; i++) {
		int st = ctl_signed(k, "GET", m->shards[i].addr, "/internal/check/holds", NULL, body, sizeof(body));
		if (st != 200 || holds_parse(body, "committed", HE_COMMITTED, (uint8_t)i, &set) ||
		    holds_parse(body, "live", HE_LIVE, (uint8_t)i, &set) || holds_parse(body, "gone", HE_GONE, (uint8_t)i, &set)) {
			printf("shard %u %s: no readable holds (%.200s)\n", i, m->shards[i].addr, st == 200 ? "bad form" : body);
			(*down)++;
		}
	}
	if (set.n)
		qsort(set.e, set.n, sizeof(*set.e), hold_cmp);
	for (size_t a = 0, b; a < set.n; a = b) {
		const struct hold_entry *c = NULL, *l = NULL, *g = NULL;
		for (b = a; b < set.n && !strcmp(set.e[b].hold, set.e[a].hold); b++) {
			const struct hold_entry *x = &set.e[b];
			if (x->kind == HE_COMMITTED)
				c = x;
			else if (x->kind == HE_LIVE)
				l = x;
			else
				g = x;
		}
		char t[300];
		t[0] = 0;
		const struct hold_entry *h = c ? c : l;
		if (c && g)
			snprintf(t, sizeof(t), "hold %s on shard %u is COMMITTED (%lld units) but order %s's leg is shipped, "
				 "released or compensated", c->hold, c->shard, c->qty, g->order);
		else if (c && !l)
			snprintf(t, sizeof(t), "hold %s on shard %u is COMMITTED (%lld units) and no reserved order's leg holds "
				 "it (its order: %s)", c->hold, c->shard, c->qty, c->order[0] ? c->order : "none");
		else if (l && !c)
			snprintf(t, sizeof(t), "order %s (shard %u) has a reserved leg of %lld units whose hold %s is not "
				 "COMMITTED", l->order, l->shard, l->qty, l->hold);
		else if (l && c && l->qty != c->qty)
			snprintf(t, sizeof(t), "order %s's leg holds %lld units but its hold %s holds %lld", l->order, l->qty,
				 l->hold, c->qty);
		if (t[0]) {
			printf("violation: %s\n", t);
			ctl_report_add(rep, "hold_leg_mismatch", h->hold, g ? g->order : l ? l->order : h->order, t);
			bad++;
		}
	}
	printf("holds: %zu entries joined, %llu violation(s)\n", set.n, bad);
	free(set.e);
	return bad;
}

/*
 * `wm-ctl cluster check`: the whole-cluster invariants (issue 14).  Each
 * shard checks its own rows (GET /internal/check, engine/check.c: levels
 * against their holds, orders against their charges) and lists the
 * transactions it holds PREPARED; one older than CTL_IN_DOUBT_LIMIT_MS must
 * be in progress at its router, else it is a PREPARED hold without a
 * transaction.  Prints every violation; exit 1 on any (or on a process
 * that does not answer), 0 when the cluster is consistent.
 */
static int ctl_check(const struct shard_map *m, const struct cluster_key *k, long long limit_ms, struct ctl_report *rep)
{
	static char body[CTL_MAX_ANSWER + 1], rb[4096];
	unsigned long long total = 0;
	int down = 0;
	for (uint32_t i = 0; i < m->n; i++) {
		int st = ctl_signed(k, "GET", m->shards[i].addr, "/internal/check", NULL, body, sizeof(body));
		if (st != 200) {
			printf("shard %u %s: no answer (%s)\n", i, m->shards[i].addr, body);
			down++;
			continue;
		}
		const char *vc = strstr(body, "\"violation_count\":");
		unsigned long long n = vc ? strtoull(vc + 18, NULL, 10) : 1;
		total += n;
		printf("shard %u %s: %s\n", i, m->shards[i].addr, body);
		/* every in-doubt transaction past the limit must be in progress */
		for (const char *p = strstr(body, "\"in_doubt\":["); p && (p = strstr(p, "{\"txn\":\"")); p++) {
			char txn[80];
			long long age = 0;
			if (sscanf(p, "{\"txn\":\"%79[^\"]\",\"age_ms\":%lld", txn, &age) != 2 || age < limit_ms)
				continue;
			int rid = txn[0] == 'r' ? atoi(txn + 1) : -1;
			const char *raddr = rid >= 0 && rid < SMAP_MAX_ROUTERS ? m->routers[rid] : "";
			char path[160];
			snprintf(path, sizeof(path), "/internal/txn/status?txn=%s", txn);
			int rs = raddr[0] ? ctl_signed(k, "GET", raddr, path, NULL, rb, sizeof(rb)) : -1;
			if (rs != 200 || !strstr(rb, "\"decision\":\"in_progress\"")) {
				printf("violation: shard %u holds %s PREPARED for %lld ms and its router says %s\n", i, txn, age,
				       rs == 200 ? rb : "nothing (it does not answer)");
				char t[300], sid[16];
				snprintf(t, sizeof(t), "shard %u holds %s PREPARED for %lld ms and its router says %.120s", i, txn,
					 age, rs == 200 ? rb : "nothing (it does not answer)");
				snprintf(sid, sizeof(sid), "%u", i);
				ctl_report_add(rep, "prepared_without_txn", txn, sid, t);
				total++;
			}
		}
	}
	total += ctl_check_holds(m, k, &down, rep);
	if (rep && down)
		rep->truncated = 1; /* a partial view: the home closes nothing */
	printf("%llu violation(s)%s\n", total, down ? ", and a shard did not answer" : "");
	return total || down ? 1 : 0;
}

int ctl_cluster(int argc, char **argv)
{
	const char *map_path = NULL, *secret_path = NULL, *routers[CTL_MAX_ROUTERS + SMAP_MAX_ROUTERS];
	unsigned n_routers = 0;
	int check = argc >= 1 && !strcmp(argv[0], "check");
	long long limit_ms = CTL_IN_DOUBT_LIMIT_MS;
	if (argc < 1 || (strcmp(argv[0], "status") && !check))
		return ctl_usage();
	for (int i = 1; i < argc; i++) {
		if (i + 1 >= argc)
			return ctl_usage();
		if (ctl_cluster_arg(argv, &i, &map_path, &secret_path))
			continue;
		if (!strcmp(argv[i], "--router") && n_routers < CTL_MAX_ROUTERS)
			routers[n_routers++] = argv[++i];
		else if (check && !strcmp(argv[i], "--in-doubt-limit-ms"))
			limit_ms = atoll(argv[++i]);
		else
			return ctl_usage();
	}
	if (!map_path || !secret_path)
		return ctl_usage();
	static struct shard_map m;
	struct cluster_key k;
	if (ctl_load(map_path, secret_path, &m, &k))
		return 1;
	if (check)
		return ctl_check(&m, &k, limit_ms, NULL);
	int down = 0;
	static char body[CTL_MAX_ANSWER + 1];
	printf("map %s version %llu, %u shards\n", map_path, (unsigned long long)m.version, m.n);
	static const char path[] = "/internal/cluster/status";
	for (uint32_t i = 0; i < m.n; i++) {
		int st = ctl_signed(&k, "GET", m.shards[i].addr, path, NULL, body, sizeof(body));
		printf("shard %u %s%s %s\n", i, m.shards[i].addr, i == 0 ? " (home)" : "",
		       st == 200 ? body : st < 0 ? body : "unexpected answer");
		down += st != 200;
	}
	/* the routers the map names (its coordinators), then those named on
	 * the command line that the map does not */
	for (unsigned r = 0; r < SMAP_MAX_ROUTERS && n_routers < CTL_MAX_ROUTERS + SMAP_MAX_ROUTERS; r++) {
		int dup = 0;
		for (unsigned j = 0; j < n_routers && m.routers[r][0]; j++)
			dup |= !strcmp(routers[j], m.routers[r]);
		if (m.routers[r][0] && !dup)
			routers[n_routers++] = m.routers[r];
	}
	for (unsigned i = 0; i < n_routers; i++) {
		int st = ctl_signed(&k, "GET", routers[i], path, NULL, body, sizeof(body));
		printf("router %s %s\n", routers[i], st == 200 ? body : st < 0 ? body : "unexpected answer");
		down += st != 200;
	}
	if (down)
		printf("%d process(es) did not answer\n", down);
	return down ? 1 : 0;
}

/*
 * `wm-ctl checks run`: the consistency checks across the cluster.  Every
 * shard runs its own (POST /internal/checks/run: its findings flagged as
 * pim.reconciliation.flagged events and counted in its /metrics; the
 * catalogue's at the home); its summary is printed.  Then the cross-shard
 * half, `wm-ctl cluster check` (ctl_check: the whole-cluster stock and
 * ledger invariants, PREPARED holds against their transactions, the
 * legs-vs-holds join), whose violations go to the home as a report (kinds
 * hold_leg_mismatch, prepared_without_txn): flagged once, closed when a
 * later whole report lacks them (a shard that did not answer makes the
 * report partial: nothing is closed).  Exit 0 when no finding is open, the
 * cluster check found nothing and every shard answered; 1 otherwise.
 */
int ctl_checks(int argc, char **argv)
{
	const char *map_path = NULL, *secret_path = NULL;
	long long limit_ms = CTL_IN_DOUBT_LIMIT_MS;
	if (argc < 1 || strcmp(argv[0], "run"))
		return ctl_usage();
	for (int i = 1; i < argc; i++) {
		if (i + 1 >= argc)
			return ctl_usage();
		if (ctl_cluster_arg(argv, &i, &map_path, &secret_path))
			continue;
		if (!strcmp(argv[i], "--in-doubt-limit-ms"))
			limit_ms = atoll(argv[++i]);
		else
			return ctl_usage();
	}
	if (!map_path || !secret_path)
		return ctl_usage();
	static struct shard_map m;
	struct cluster_key k;
	if (ctl_load(map_path, secret_path, &m, &k))
		return 1;
	static char body[CTL_MAX_ANSWER + 1];
	unsigned long long open = 0, home_open = 0; /* the home's own count also holds the cluster findings */
	int down = 0;
	for (uint32_t i = 0; i < m.n; i++) {
		int st = ctl_signed(&k, "POST", m.shards[i].addr, "/internal/checks/run", "{}", body, sizeof(body));
		const char *o = st == 200 ? strstr(body, "\"open\":") : NULL;
		if (!o) {
			printf("shard %u %s: checks did not run (%.200s)\n", i, m.shards[i].addr, body);
			down++;
			continue;
		}
		unsigned long long n = strtoull(o + 7, NULL, 10);
		open += n;
		home_open = i == 0 ? n : home_open;
		printf("shard %u %s checks: %s\n", i, m.shards[i].addr, body);
	}
	struct ctl_report rep = {0};
	int cluster = ctl_check(&m, &k, limit_ms, &rep);
	/* the cross-shard findings to the home, which flags and counts them */
	char *report = malloc(CTL_REPORT_MAX + 64);
	int st = -1;
	if (report) {
		snprintf(report, CTL_REPORT_MAX + 64, "{\"truncated\":%s,\"findings\":[%.*s]}", rep.truncated ? "true" : "false",
			 (int)rep.len, rep.buf ? rep.buf : "");
		st = ctl_signed(&k, "POST", m.shards[0].addr, "/internal/checks/cluster", report, body, sizeof(body));
	}
	const char *o = st == 200 ? strstr(body, "\"open\":") : NULL;
	if (o) {
		open = open - home_open + strtoull(o + 7, NULL, 10); /* the home's count after the report */
		printf("cluster findings at the home: %s\n", body);
	} else {
		printf("cluster findings: the home did not take them (%.200s)\n", report ? body : "out of memory");
		down++;
	}
	free(report);
	free(rep.buf);
	printf("checks: %llu finding(s) open%s\n", open, down ? ", and a shard did not run them" : "");
	return open || down || cluster ? 1 : 0;
}
