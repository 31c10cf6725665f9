/*
 * test_shard_map.c -- wm-shard with --shard-map/--shard-id (DESIGN.md
 * section 9): a map is checked at start (FILE:LINE for a bad line, every
 * country the reference data prices owned by a shard, the shard's own id in
 * the map), its version is in /metrics, SIGHUP reloads it and a broken file
 * on reload leaves the one in force.
 */
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/base/iso.h"
#include "engine/cluster/cluster_auth.h"
#include "tests/harness.h"
#include "tests/wm_test.h"

/* Write a map of `version` to path: shard 0 owns every assigned country but
 * `except` (NULL: none), shard 1 owns `except` when `two` is set. */
static void write_map(const char *path, int version, const char *except, int two, const char *extra_line)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f, "# test map\nversion %d\nshard 0 127.0.0.1:9100", version);
	char cc[3] = "AA";
	for (cc[0] = 'A'; cc[0] <= 'Z'; cc[0]++)
		for (cc[1] = 'A'; cc[1] <= 'Z'; cc[1]++)
			if (iso_country_valid(cc, 2) && (!except || strcmp(cc, except)))
				fprintf(f, " %s", cc);
	fprintf(f, "\n");
	if (two && except)
		fprintf(f, "shard 1 127.0.0.1:9101 %s\n", except);
	if (extra_line)
		fprintf(f, "%s\n", extra_line);
	fclose(f);
}

/* A 48-byte secret at <dir>/secret (mode 0600); its path into out. */
static void write_secret(const struct wm_proc *p, char *out, size_t n, struct cluster_key *k)
{
	snprintf(out, n, "%s/secret", p->dir);
	FILE *f = fopen(out, "w");
	cr_assert_not_null(f);
	fputs("test-cluster-secret-0123456789abcdefghijklmnopqr\n", f);
	fclose(f);
	cr_assert_eq(chmod(out, 0600), 0);
	char err[200];
	cr_assert_eq(ck_load(out, k, err, sizeof(err)), 0, "%s", err);
}

/* http_do with the cluster signature of (method, target, body) at now. */
static int signed_do(int port, const struct cluster_key *k, const char *method, const char *target,
		     const char *body, struct http_resp *r)
{
	char sig[CK_HEADER_MAX], hdr[CK_HEADER_MAX + 64];
	size_t bl = body ? strlen(body) : 0;
	cr_assert_eq(ck_sign(k, method, strlen(method), target, strlen(target), (int64_t)time(NULL), body, bl, sig), 0);
	snprintf(hdr, sizeof(hdr), CK_HEADER_NAME ": %s\r\n", sig);
	return http_do(port, method, target, hdr, body, r);
}

static long metric(int port, const char *name)
{
	struct http_resp r;
	cr_assert_eq(http_do(port, "GET", "/metrics", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200);
	const char *at = strstr(r.body, name);
	long v = at ? strtol(at + strlen(name), NULL, 10) : -1;
	http_resp_free(&r);
	return v;
}

WM_TEST(shard_map_proc, refused_maps_name_file_and_line, .timeout = 60)
{
	struct wm_proc p;
	wm_proc_init(&p);
	char path[400], msg[2048];
	snprintf(path, sizeof(path), "%s/map.conf", p.dir);
	char secret[400];
	struct cluster_key k;
	write_secret(&p, secret, sizeof(secret), &k);
	const char *args[] = {"--shard-map", path, "--shard-id", "0", "--cluster-secret-file", secret, NULL};
	/* no secret: refused */
	write_map(path, 1, NULL, 0, NULL);
	const char *nosecret[] = {"--shard-map", path, "--shard-id", "0", NULL};
	cr_assert_neq(wm_start_expect_fail(&p, nosecret, msg, sizeof(msg)), 0);
	cr_assert(strstr(msg, "--shard-map needs --cluster-secret-file"), "%s", msg);
	/* a secret others may read: refused */
	cr_assert_eq(chmod(secret, 0644), 0);
	cr_assert_neq(wm_start_expect_fail(&p, args, msg, sizeof(msg)), 0);
	cr_assert(strstr(msg, "cluster secret"), "%s", msg);
	cr_assert_eq(chmod(secret, 0600), 0);
	/* a priced country no shard owns */
	write_map(path, 1, "FR", 0, NULL);
	cr_assert_neq(wm_start_expect_fail(&p, args, msg, sizeof(msg)), 0);
	cr_assert(strstr(msg, "country FR has reference data but no shard owns it"), "%s", msg);
	/* a bad line */
	write_map(path, 1, NULL, 0, "shard 1 127.0.0.1:9101 FR");
	cr_assert_neq(wm_start_expect_fail(&p, args, msg, sizeof(msg)), 0);
	cr_assert(strstr(msg, "map.conf:4: country FR is already owned by shard 0 (line 3)"), "%s", msg);
	/* this shard's id is not in the map */
	write_map(path, 1, "FR", 1, NULL);
	const char *args2[] = {"--shard-map", path, "--shard-id", "2", "--cluster-secret-file", secret, NULL};
	cr_assert_neq(wm_start_expect_fail(&p, args2, msg, sizeof(msg)), 0);
	cr_assert(strstr(msg, "--shard-id 2 is not one of its shards (ids 0..1)"), "%s", msg);
	wm_proc_cleanup(&p);
}

WM_TEST(shard_map_proc, loaded_shown_and_reloaded_on_sighup, .timeout = 60)
{
	struct wm_proc p;
	wm_proc_init(&p);
	char path[400];
	snprintf(path, sizeof(path), "%s/map.conf", p.dir);
	write_map(path, 3, "FR", 1, NULL);
	char secret[400];
	struct cluster_key k;
	write_secret(&p, secret, sizeof(secret), &k);
	/* the home: it holds the operator key /metrics needs (the other
	 * shards get keys by replication) */
	const char *args[] = {"--shard-map", path, "--shard-id", "0", "--cluster-secret-file", secret, NULL};
	cr_assert_eq(wm_start(&p, args, NULL), 0, "did not start (logs in %s)", p.dir);
	cr_assert_eq(metric(p.port, "\nwm_shard_map_version "), 3);
	cr_assert_eq(metric(p.port, "\nwm_shard_id "), 0);
	/* a new version: reloaded */
	write_map(path, 4, "FR", 1, NULL);
	cr_assert_eq(kill(p.pid, SIGHUP), 0);
	long v = -1;
	for (int i = 0; i < 200 && (v = metric(p.port, "\nwm_shard_map_version ")) != 4; i++)
		usleep(20 * 1000);
	cr_assert_eq(v, 4, "SIGHUP did not reload the map");
	/* a broken file: the map in force stays, the shard serves on */
	write_map(path, 5, "FR", 1, "shard x bad");
	cr_assert_eq(kill(p.pid, SIGHUP), 0);
	usleep(300 * 1000);
	cr_assert_eq(metric(p.port, "\nwm_shard_map_version "), 4, "a broken map replaced the one in force");
	/* without the option: a cluster of one, no map metric */
	wm_stop(&p);
	cr_assert_eq(wm_start(&p, NULL, NULL), 0);
	cr_assert_eq(metric(p.port, "\nwm_shard_map_version "), -1);
	wm_proc_cleanup(&p);
}

/*
 * Cluster mode at a shard (DESIGN.md 9, "Internal traffic"): partner routes
 * need the router's signature, /internal/ needs one too, the process's own
 * routes stay reachable, and a request for data another shard owns is a
 * 421 naming the map version.
 */
WM_TEST(shard_map_proc, cluster_gate_signatures_and_misdirected, .timeout = 60)
{
	struct wm_proc p, q;
	wm_proc_init(&p);
	wm_proc_init(&q);
	char path[400], secret[400];
	snprintf(path, sizeof(path), "%s/map.conf", p.dir);
	write_map(path, 7, "FR", 1, NULL);
	struct cluster_key k;
	write_secret(&p, secret, sizeof(secret), &k);
	/* p: the home (shard 0, holds the operator key); q: shard 1, owns FR */
	const char *args[] = {"--shard-map", path, "--shard-id", "0", "--cluster-secret-file", secret, "--demo", NULL};
	cr_assert_eq(wm_start(&p, args, NULL), 0, "did not start (logs in %s)", p.dir);
	const char *args1[] = {"--shard-map", path, "--shard-id", "1", "--cluster-secret-file", secret, NULL};
	cr_assert_eq(wm_start(&q, args1, NULL), 0, "did not start (logs in %s)", q.dir);
	struct http_resp r;
	/* a partner route with a valid key but no signature: 401 */
	cr_assert_eq(http_do(p.port, "GET", "/v1/partners", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 401);
	cr_assert(strstr(r.body, "cluster_signature_required"), "%s", r.body);
	http_resp_free(&r);
	/* a forged signature: 401 */
	cr_assert_eq(http_do(p.port, "GET", "/v1/partners",
			     CK_HEADER_NAME ": t=1,v1=0000000000000000000000000000000000000000000000000000000000000000\r\n",
			     NULL, &r), 0);
	cr_assert_eq(r.status, 401);
	http_resp_free(&r);
	/* signed: served */
	cr_assert_eq(signed_do(p.port, &k, "GET", "/v1/partners?page_size=1", NULL, &r), 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	http_resp_free(&r);
	/* a router's fan-out page: the shard cursor after each row; never
	 * for an unsigned caller (the gate refuses it) */
	char fsig[CK_HEADER_MAX], fhdr[CK_HEADER_MAX + 64];
	cr_assert_eq(ck_sign(&k, "GET", 3, "/v1/partners?page_size=1", 24, (int64_t)time(NULL), NULL, 0, fsig), 0);
	snprintf(fhdr, sizeof(fhdr), CK_HEADER_NAME ": %s\r\nX-WM-Fanout: 1\r\n", fsig);
	cr_assert_eq(http_do(p.port, "GET", "/v1/partners?page_size=1", fhdr, NULL, &r), 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	const char *cur = strstr(r.body, "\"_cursors\":[\"");
	cr_assert_not_null(cur, "%s", r.body);
	/* one row, one cursor, and it is the page's next_cursor */
	char next[400];
	const char *nc = strstr(r.body, "\"next_cursor\":\"");
	cr_assert_not_null(nc, "%s", r.body);
	snprintf(next, sizeof(next), "\"_cursors\":[\"%.*s\"]", (int)strcspn(nc + 15, "\""), nc + 15);
	cr_assert(strstr(r.body, next), "%s", r.body);
	http_resp_free(&r);
	/* the signature covers the query: another query with it is refused */
	char sig[CK_HEADER_MAX], hdr[CK_HEADER_MAX + 64];
	cr_assert_eq(ck_sign(&k, "GET", 3, "/v1/partners?page_size=1", 24, (int64_t)time(NULL), NULL, 0, sig), 0);
	snprintf(hdr, sizeof(hdr), CK_HEADER_NAME ": %s\r\n", sig);
	cr_assert_eq(http_do(p.port, "GET", "/v1/partners?page_size=2", hdr, NULL, &r), 0);
	cr_assert_eq(r.status, 401);
	http_resp_free(&r);
	/* the process's own routes need no router */
	cr_assert_eq(http_do(q.port, "GET", "/healthz", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200);
	http_resp_free(&r);
	cr_assert_eq(metric(p.port, "\nwm_shard_id "), 0);
	/* /internal/: unsigned 401 (a partner key is not enough), signed 200 */
	cr_assert_eq(http_do(q.port, "GET", "/internal/cluster/status", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 401);
	http_resp_free(&r);
	cr_assert_eq(signed_do(q.port, &k, "GET", "/internal/cluster/status", NULL, &r), 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(strstr(r.body, "\"shard_id\":1"), "%s", r.body);
	cr_assert(strstr(r.body, "\"map_version\":7"), "%s", r.body);
	http_resp_free(&r);
	/* misdirected: a catalogue write on shard 1; an order of FR at the home */
	cr_assert_eq(signed_do(q.port, &k, "POST", "/v1/producers", "{\"name\":\"x\"}", &r), 0);
	cr_assert_eq(r.status, 421, "%s", r.body);
	char v[32];
	cr_assert_gt(http_header(&r, "X-WM-Map-Version", v, sizeof(v)), 0);
	cr_assert_str_eq(v, "7");
	http_resp_free(&r);
	cr_assert_eq(signed_do(p.port, &k, "GET", "/v1/orders/ord_FR_01HZZZZZZZ0000ABCDEF", NULL, &r), 0);
	cr_assert_eq(r.status, 421, "%s", r.body);
	http_resp_free(&r);
	/* a body naming another shard's country: a location in FR at the
	 * home, a quote to FR at the home */
	cr_assert_eq(signed_do(p.port, &k, "POST", "/v1/stock-locations",
			       "{\"name\":\"x\",\"address\":{\"country\":\"FR\"}}", &r), 0);
	cr_assert_eq(r.status, 421, "%s", r.body);
	http_resp_free(&r);
	cr_assert_eq(signed_do(p.port, &k, "POST", "/v1/orders/quote-calculate",
			       "{\"destination_country\":\"FR\",\"lines\":[]}", &r), 0);
	cr_assert_eq(r.status, 421, "%s", r.body);
	http_resp_free(&r);
	/* an order of DE (the home's): its own answer (404: none exists) */
	cr_assert_eq(signed_do(p.port, &k, "GET", "/v1/orders/ord_DE_01HZZZZZZZ0000ABCDEF", NULL, &r), 0);
	cr_assert_eq(r.status, 404, "%s", r.body);
	http_resp_free(&r);
	wm_proc_cleanup(&q);
	wm_proc_cleanup(&p);
}

/* Without a map there is no /internal/: 404, as for any unknown path. */
WM_TEST(shard_map_proc, no_internal_routes_in_a_cluster_of_one, .timeout = 30)
{
	struct wm_proc p;
	wm_proc_init(&p);
	cr_assert_eq(wm_start(&p, NULL, NULL), 0);
	struct http_resp r;
	cr_assert_eq(http_do(p.port, "GET", "/internal/cluster/status", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 404);
	http_resp_free(&r);
	wm_proc_cleanup(&p);
}
