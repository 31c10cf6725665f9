/*
 * test_replication.c -- replication by WAL shipping between real wm-shard
 * processes on loopback (DESIGN.md section 9, engine/replication/):
 * catalogue writes on the home reach the other shards, stock written on a
 * country shard reaches the others (read through the quotes that need
 * it), a subscriber killed with kill -9 while a writer goes on resumes
 * without loss or duplication, a publisher restarted from a snapshot that
 * no longer covers a subscriber's position makes it resync (snapshot +
 * tail), a subscriber restarted while its publisher is down still quotes
 * from its logged replica, and the internal routes refuse unsigned or
 * forged requests.
 *
 * Every request to a shard in cluster mode is signed with the cluster
 * secret (tc_set_signer), as the router will sign them.
 */
#include <jansson.h>
#include <signal.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/replication/repl_wire.h"
#include "engine/storage/record.h"
#include "tests/api_client.h"
#include "tests/cluster_harness.h"
#include "tests/wm_test.h"

static struct wm_cluster *cur; /* the cluster whose secret signs tc_call */

static void sign_cur(const char *method, const char *path, const char *body, char *out, size_t n)
{
	wm_cluster_sig(cur, method, path, body, out, n);
}

static void cluster_up(struct wm_cluster *c, unsigned n)
{
	wm_cluster_init(c, n);
	cur = c;
	tc_set_signer(sign_cur);
	wm_cluster_start_all(c);
}

/* A metric's value on shard i (labels included in name), -1 if absent. */
static double metric(struct wm_cluster *c, unsigned i, const char *name)
{
	struct http_resp r;
	cr_assert_eq(http_do(c->port[i], "GET", "/metrics", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200, "metrics: %d %s", r.status, r.body);
	char line[200];
	snprintf(line, sizeof(line), "\n%s ", name);
	const char *at = strstr(r.body, line);
	double v = at ? strtod(at + strlen(line), NULL) : -1;
	http_resp_free(&r);
	return v;
}

/* The body of a signed GET on shard i when it answers `want`, else NULL. */
static char *get_body(struct wm_cluster *c, unsigned i, const char *path, int want)
{
	struct http_resp r;
	if (wm_cluster_do(c, i, "GET", path, NULL, &r))
		return NULL;
	char *b = r.status == want ? strdup(r.body) : NULL;
	http_resp_free(&r);
	return b;
}

/* Wait (bounded) until shard i serves path with exactly the home's body. */
static void wait_same(struct wm_cluster *c, unsigned i, const char *path)
{
	char *home = NULL, *got = NULL;
	for (int t = 0; t < 1000; t++) {
		free(home); /* the home's answer may change too (stock it receives) */
		home = get_body(c, 0, path, 200);
		cr_assert_not_null(home, "the home does not serve %s", path);
		got = get_body(c, i, path, 200);
		if (got && !strcmp(got, home))
			break;
		free(got);
		got = NULL;
		usleep(10000);
	}
	if (!got) {
		struct http_resp r;
		cr_assert_eq(wm_cluster_do(c, i, "GET", path, NULL, &r), 0);
		cr_assert_fail("shard %u never served %s as the home does: %s; it answers %d %s", i, path, home, r.status,
			       r.body);
	}
	free(got);
	free(home);
}

/* Wait (bounded) until shard i has applied everything the home made
 * durable: its applied LSN from publisher 0 reaches the home's durable LSN
 * (measured after the last write). */
static void wait_caught_up(struct wm_cluster *c, unsigned i, unsigned publisher)
{
	double target = metric(c, publisher, "wm_durable_lsn");
	char name[64];
	snprintf(name, sizeof(name), "wm_repl_applied_lsn{publisher=\"%u\"}", publisher);
	double got = -1;
	for (int t = 0; t < 1000 && got < target; t++) {
		got = metric(c, i, name);
		if (got < target)
			usleep(10000);
	}
	cr_assert(got >= target, "shard %u applied %g of publisher %u, which is at %g", i, got, publisher, target);
}

/* The whole partner list of shard i (page_size 200, every page). */
static json_t *all_partners(struct wm_cluster *c, unsigned i)
{
	json_t *all = json_array();
	char path[512] = "/v1/partners?page_size=200";
	for (;;) {
		char *b = get_body(c, i, path, 200);
		cr_assert_not_null(b, "shard %u: %s", i, path);
		json_t *j = json_loads(b, 0, NULL);
		free(b);
		cr_assert_not_null(j);
		json_array_extend(all, json_object_get(j, "data"));
		const char *next = tc_jstr(j, "next_cursor");
		if (!next) {
			json_decref(j);
			return all;
		}
		snprintf(path, sizeof(path), "/v1/partners?page_size=200&cursor=%s", next);
		json_decref(j);
	}
}

static void expect_same_partners(struct wm_cluster *c, unsigned i, size_t at_least)
{
	json_t *a = all_partners(c, 0), *b = all_partners(c, i);
	cr_assert_geq(json_array_size(a), at_least);
	char *da = json_dumps(a, JSON_COMPACT), *db = json_dumps(b, JSON_COMPACT);
	cr_assert_eq(json_array_size(a), json_array_size(b), "home has %zu partners, shard %u %zu",
		     json_array_size(a), i, json_array_size(b));
	cr_assert_str_eq(da, db, "shard %u's partners differ from the home's", i);
	free(da);
	free(db);
	json_decref(a);
	json_decref(b);
}

static void new_partner(int port, int n, char *out)
{
	char body[160];
	snprintf(body, sizeof(body), "{\"legal_name\":\"Writer %d\",\"country\":\"AT\",\"roles\":[\"seller\"]}", n);
	json_t *j = tc_expect(port, "POST", "/v1/partners", NULL, body, 201);
	if (out)
		snprintf(out, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
}

/* A world to quote in: an originator (FR) with an offer published on the
 * home, a seller (DE) with a key; the originator's bonded warehouse in FR
 * and its stock are written on shard 1 (FR's shard). */
struct world {
	char orig[64], sel[64], korig[128], ksel[128], wine[64], offer[64], loc[64], level[64];
};

static void world(struct wm_cluster *c, struct world *w)
{
	int home = c->port[0];
	tc_partner_live(home, "Domaine", "FR", "[\"originator\"]", "\"originator_type\":\"stock\"", w->orig);
	tc_partner_live(home, "Seller", "DE", "[\"seller\"]", NULL, w->sel);
	tc_key_for(home, w->orig, w->korig);
	tc_key_for(home, w->sel, w->ksel);
	tc_pub_wine_of(home, "Replica Rouge", NULL, "wine", w->wine);
	json_decref(tc_offer(home, w->korig, w->wine,
			     "\"seller_price\":10.00,\"qty_available\":0,\"incoterm\":\"EXW\",\"status\":\"active\","
			     "\"network_shareable\":true",
			     201, w->offer));
	/* the keys must have reached FR's shard before they are used there */
	char path[128];
	snprintf(path, sizeof(path), "/v1/offers/%s", w->offer);
	wait_same(c, 1, path);
	wait_caught_up(c, 1, 0);
	json_t *j = tc_expect(c->port[1], "POST", "/v1/stock-locations", w->korig,
			      "{\"location_type\":\"BONDED_WAREHOUSE\",\"name\":\"Cellar\",\"address\":{\"line1\":\"1 rue "
			      "du Vin\",\"city\":\"Beaune\",\"postal_code\":\"21200\",\"country\":\"FR\"}}",
			      201);
	snprintf(w->loc, sizeof(w->loc), "%s", tc_jstr(j, "id"));
	json_decref(j);
	char body[400];
	snprintf(body, sizeof(body), "{\"sku\":\"SKU-R\",\"offer_id\":\"%s\",\"location_id\":\"%s\",\"on_hand\":30}",
		 w->offer, w->loc);
	j = tc_expect(c->port[1], "POST", "/v1/inventory", w->korig, body, 201);
	snprintf(w->level, sizeof(w->level), "%s", tc_jstr(j, "id"));
	json_decref(j);
}

/* A quote of 6 bottles to `dest` on shard i as the seller: its only source
 * must be the FR warehouse (the stock shard 1 wrote). */
static void quote_from_fr(struct wm_cluster *c, unsigned i, const struct world *w, const char *dest)
{
	char body[400];
	snprintf(body, sizeof(body), "{\"destination_country\":\"%s\",\"lines\":[{\"sku\":\"%s\",\"qty\":6,\"box_units\":6}]}",
		 dest, w->wine);
	json_t *q = tc_expect(c->port[i], "POST", "/v1/orders/quote-calculate", w->ksel, body, 200);
	json_t *src = json_object_get(json_object_get(json_array_get(json_object_get(q, "lines"), 0), "sourcing"),
				      "source");
	char *dump = json_dumps(q, JSON_COMPACT);
	cr_assert_eq(json_array_size(src), 1, "shard %u: one source expected: %s", i, dump);
	cr_assert_str_eq(tc_jstr(json_array_get(src, 0), "location_id"), w->loc, "shard %u: %s", i, dump);
	cr_assert_str_eq(tc_jstr(json_array_get(src, 0), "offer_id"), w->offer, "shard %u: %s", i, dump);
	free(dump);
	json_decref(q);
}

/* Wait (bounded) until shard i's stock replica lets it quote from FR: the
 * offer's quantity comes from the home, its levels and location from
 * shard 1, by two streams that need not arrive together. */
static void wait_quotable(struct wm_cluster *c, unsigned i, const struct world *w, const char *dest)
{
	char body[400];
	snprintf(body, sizeof(body), "{\"destination_country\":\"%s\",\"lines\":[{\"sku\":\"%s\",\"qty\":6,\"box_units\":6}]}",
		 dest, w->wine);
	int st = 0;
	for (int t = 0; t < 1000; t++) {
		json_t *q = tc_call(c->port[i], "POST", "/v1/orders/quote-calculate", w->ksel, body, &st);
		json_t *src = json_object_get(
			json_object_get(json_array_get(json_object_get(q, "lines"), 0), "sourcing"), "source");
		const char *loc = tc_jstr(json_array_get(src, 0), "location_id");
		int ok = st == 200 && loc && !strcmp(loc, w->loc);
		json_decref(q);
		if (ok)
			break;
		usleep(10000);
	}
	quote_from_fr(c, i, w, dest);
}

/* Every record the home publishes from LSN 0 on (its whole stream, read as
 * a subscriber would): how many are PUTs of row `id`. */
static int home_ships(struct wm_cluster *c, const char *id)
{
	char *st = get_body(c, 0, "/internal/cluster/status", 200);
	cr_assert_not_null(st);
	json_t *sj = json_loads(st, 0, NULL);
	free(st);
	char epoch[20];
	snprintf(epoch, sizeof(epoch), "%s", tc_jstr(json_object_get(sj, "publisher"), "epoch"));
	json_decref(sj);
	int found = 0;
	uint64_t from = 0;
	for (int guard = 0; guard < 100; guard++) {
		char path[160];
		snprintf(path, sizeof(path), "/internal/replication/wal?from=%llu&epoch=%s&max_bytes=65536",
			 (unsigned long long)from, epoch);
		struct http_resp r;
		cr_assert_eq(wm_cluster_do(c, 0, "GET", path, NULL, &r), 0);
		cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
		struct repl_chunk ch;
		char why[128];
		cr_assert_eq(repl_chunk_decode((const uint8_t *)r.body, r.body_len, repl_published(0), &ch, why), 0, "%s",
			     why);
		size_t off = 0;
		uint64_t lsn;
		const uint8_t *rec;
		uint32_t len;
		while (repl_chunk_next(&ch, &off, &lsn, &rec, &len)) {
			size_t o = 0;
			struct rec_view rv;
			while (rec_decode(rec, len, &o, &rv) == 1)
				found += rv.key_len == strlen(id) && !memcmp(rv.key, id, rv.key_len);
		}
		int done = ch.to_lsn >= ch.durable_lsn;
		from = ch.to_lsn;
		http_resp_free(&r);
		if (done)
			return found;
	}
	cr_assert_fail("the home's stream never ended");
	return -1;
}

WM_TEST(replication, catalogue_and_stock_reach_every_shard, .timeout = 60)
{
	struct wm_cluster c;
	cluster_up(&c, 3);
	struct world w;
	world(&c, &w);
	char path[128];
	/* catalogue rows written on the home, read straight from shards 1 and 2 */
	const char *const kinds[][2] = {{"/v1/partners/", w.orig}, {"/v1/partners/", w.sel},
					{"/v1/wines/", w.wine}, {"/v1/offers/", w.offer}};
	for (unsigned s = 1; s <= 2; s++)
		for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
			snprintf(path, sizeof(path), "%s%s", kinds[k][0], kinds[k][1]);
			wait_same(&c, s, path);
		}
	/* the offer's stock lives on shard 1; shards 0 and 2 quote from it */
	wait_quotable(&c, 2, &w, "DE");
	wait_quotable(&c, 0, &w, "AT");
	quote_from_fr(&c, 1, &w, "FR");
	/* an update travels too: the home pauses the offer, shard 2 follows */
	snprintf(path, sizeof(path), "/v1/offers/%s", w.offer);
	json_decref(tc_expect(c.port[0], "PATCH", path, w.korig, "{\"status\":\"paused\"}", 200));
	wait_same(&c, 2, path);
	/* lag and position metrics per publisher; the status lists positions */
	wait_caught_up(&c, 2, 0);
	wait_caught_up(&c, 2, 1);
	cr_assert_eq(metric(&c, 2, "wm_repl_lag_lsn{publisher=\"0\"}"), 0);
	cr_assert_geq(metric(&c, 2, "wm_repl_bytes_total{publisher=\"0\"}"), 1);
	cr_assert_geq(metric(&c, 2, "wm_repl_lag_seconds{publisher=\"1\"}"), 0);
	char *st = get_body(&c, 2, "/internal/cluster/status", 200);
	cr_assert_not_null(st);
	json_t *sj = json_loads(st, 0, NULL);
	free(st);
	json_t *reps = json_object_get(sj, "replication");
	cr_assert_eq(json_array_size(reps), 2, "publishers 0 and 1");
	cr_assert_gt(json_integer_value(json_object_get(json_array_get(reps, 0), "applied_lsn")), 0);
	cr_assert_not_null(json_object_get(sj, "map_version"), "the fields that were there stay");
	json_decref(sj);
	/* the home applied shard 1's stock as a subscriber: it never ships it
	 * on (stale copies would loop), while its own rows are shipped */
	cr_assert_eq(home_ships(&c, w.level), 0, "the home re-published a replicated level");
	cr_assert_eq(home_ships(&c, w.loc), 0, "the home re-published a replicated location");
	cr_assert_geq(home_ships(&c, w.offer), 1, "the home ships its own offer");
	wm_cluster_cleanup(&c);
}

WM_TEST(replication, subscriber_killed_mid_stream_resumes_without_loss_or_duplication, .timeout = 90)
{
	struct wm_cluster c;
	cluster_up(&c, 2);
	int home = c.port[0];
	for (int n = 0; n < 40; n++)
		new_partner(home, n, NULL);
	wm_cluster_kill9(&c, 1); /* the subscriber dies while the writer goes on */
	for (int n = 40; n < 80; n++)
		new_partner(home, n, NULL);
	cr_assert_eq(wm_cluster_start(&c, 1), 0);
	for (int n = 80; n < 100; n++) {
		new_partner(home, n, NULL);
		if (n == 85) { /* and once more, mid-stream, right after its restart */
			wm_cluster_kill9(&c, 1);
			cr_assert_eq(wm_cluster_start(&c, 1), 0);
		}
	}
	wait_caught_up(&c, 1, 0);
	expect_same_partners(&c, 1, 100);
	/* it resumed from its logged position: no resync after either restart */
	cr_assert_eq(metric(&c, 1, "wm_repl_resyncs_total{publisher=\"0\"}"), 0);
	cr_assert_eq(metric(&c, 0, "wm_repl_positions_gone_total"), 0);
	/* the replica's rows are the home's: nothing was applied twice as a new row */
	cr_assert_eq(metric(&c, 1, "wm_table_rows{table=\"partner\"}"), metric(&c, 0, "wm_table_rows{table=\"partner\"}"));
	wm_cluster_cleanup(&c);
}

WM_TEST(replication, a_position_the_publisher_no_longer_keeps_resyncs_by_snapshot_and_tail, .timeout = 90)
{
	struct wm_cluster c;
	cluster_up(&c, 2);
	int home = c.port[0];
	for (int n = 0; n < 10; n++)
		new_partner(home, n, NULL);
	wait_caught_up(&c, 1, 0);
	cr_assert_eq(wm_cluster_stop(&c, 1), 0);
	for (int n = 10; n < 30; n++)
		new_partner(home, n, NULL);
	/* a snapshot, then a restart: the publisher keeps only what follows it */
	json_t *j = tc_expect(home, "POST", "/v1/admin/snapshots", NULL, NULL, 202);
	json_decref(j);
	for (int t = 0; t < 500; t++) {
		j = tc_expect(home, "GET", "/v1/admin/snapshots", NULL, NULL, 200);
		int done = json_integer_value(json_object_get(j, "taken")) >= 1;
		json_decref(j);
		if (done)
			break;
		usleep(10000);
	}
	cr_assert_eq(wm_cluster_stop(&c, 0), 0);
	cr_assert_eq(wm_cluster_start(&c, 0), 0);
	cr_assert_gt(metric(&c, 0, "wm_repl_buffer_base_lsn"), 0, "the restarted publisher starts at its snapshot");
	for (int n = 30; n < 40; n++)
		new_partner(home, n, NULL);
	cr_assert_eq(wm_cluster_start(&c, 1), 0);
	wait_caught_up(&c, 1, 0);
	expect_same_partners(&c, 1, 40);
	cr_assert_eq(metric(&c, 1, "wm_repl_resyncs_total{publisher=\"0\"}"), 1);
	cr_assert_geq(metric(&c, 0, "wm_repl_positions_gone_total"), 1);
	/* and it streams on from there */
	new_partner(home, 40, NULL);
	wait_caught_up(&c, 1, 0);
	expect_same_partners(&c, 1, 41);
	wm_cluster_cleanup(&c);
}

WM_TEST(replication, publisher_down_while_a_subscriber_restarts_it_still_quotes, .timeout = 90)
{
	struct wm_cluster c;
	cluster_up(&c, 3);
	struct world w;
	world(&c, &w);
	wait_quotable(&c, 2, &w, "DE");
	wm_cluster_kill9(&c, 0); /* the catalogue home is gone */
	wm_cluster_kill9(&c, 2);
	cr_assert_eq(wm_cluster_start(&c, 2), 0);
	quote_from_fr(&c, 2, &w, "DE"); /* from its logged replica of 0's catalogue and 1's stock */
	double up = 1;
	for (int t = 0; t < 300 && up != 0; t++) {
		up = metric(&c, 2, "wm_repl_publisher_up{publisher=\"0\"}");
		if (up != 0)
			usleep(10000);
	}
	cr_assert_eq(up, 0, "the home is reported down");
	usleep(20000);
	cr_assert_gt(metric(&c, 2, "wm_repl_lag_seconds{publisher=\"0\"}"), 0, "lag grows while the home is down");
	cr_assert_eq(metric(&c, 2, "wm_repl_publisher_up{publisher=\"1\"}"), 1);
	/* the home returns: streaming resumes without a resync */
	cr_assert_eq(wm_cluster_start(&c, 0), 0);
	new_partner(c.port[0], 1, NULL);
	wait_caught_up(&c, 2, 0);
	cr_assert_eq(metric(&c, 2, "wm_repl_resyncs_total{publisher=\"0\"}"), 0);
	wm_cluster_cleanup(&c);
}

WM_TEST(replication, internal_routes_refuse_unsigned_and_forged_requests, .timeout = 60)
{
	struct wm_cluster c;
	wm_cluster_init(&c, 2);
	wm_cluster_start_all(&c);
	const char *path = "/internal/replication/wal?from=0&epoch=0123456789abcdef&max_bytes=4096";
	struct http_resp r;
	/* unsigned */
	cr_assert_eq(http_do(c.port[0], "GET", path, NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 401, "%d %s", r.status, r.body);
	http_resp_free(&r);
	/* signed with another secret */
	struct cluster_key other = c.key;
	other.secret[0] ^= 1;
	char sig[CK_HEADER_MAX], hdr[CK_HEADER_MAX + 32];
	cr_assert_eq(ck_sign(&other, "GET", 3, path, strlen(path), (int64_t)time(NULL), "", 0, sig), 0);
	snprintf(hdr, sizeof(hdr), CK_HEADER_NAME ": %s\r\n", sig);
	cr_assert_eq(http_do(c.port[0], "GET", path, hdr, NULL, &r), 0);
	cr_assert_eq(r.status, 401);
	http_resp_free(&r);
	/* signed for another path (the query is part of what is signed) */
	wm_cluster_sig(&c, "GET", "/internal/replication/wal?from=0&epoch=0123456789abcdef&max_bytes=4097", NULL, hdr,
		       sizeof(hdr));
	cr_assert_eq(http_do(c.port[0], "GET", path, hdr, NULL, &r), 0);
	cr_assert_eq(r.status, 401);
	http_resp_free(&r);
	/* signed: a foreign epoch is 410, bad bounds 400 (at and past the edge) */
	cr_assert_eq(wm_cluster_do(&c, 0, "GET", path, NULL, &r), 0);
	cr_assert_eq(r.status, 410, "%d %s", r.status, r.body);
	cr_assert(strstr(r.body, "replication_position_gone"));
	http_resp_free(&r);
	cr_assert_eq(wm_cluster_do(&c, 0, "GET", "/internal/replication/wal?from=0&epoch=0123456789abcdef&max_bytes=0",
				   NULL, &r), 0);
	cr_assert_eq(r.status, 400);
	http_resp_free(&r);
	cr_assert_eq(wm_cluster_do(&c, 0, "GET",
				   "/internal/replication/wal?from=0&epoch=0123456789abcdef&max_bytes=2097153", NULL, &r), 0);
	cr_assert_eq(r.status, 400);
	http_resp_free(&r);
	cr_assert_eq(wm_cluster_do(&c, 0, "GET", "/internal/replication/snapshot?max_bytes=2097152", NULL, &r), 0);
	cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
	http_resp_free(&r);
	cr_assert_eq(wm_cluster_do(&c, 0, "GET", "/internal/replication/snapshot?table=99", NULL, &r), 0);
	cr_assert_eq(r.status, 400);
	http_resp_free(&r);
	/* the router slot: started when the binary exists (the lead's wm-router) */
	int rs = wm_cluster_router_start(&c);
	cr_assert(rs == 0 || rs == 1, "wm-router exists but did not start (log in %s/router.log)", c.root);
	wm_cluster_cleanup(&c);
}

/* A signed GET to shard i on its own socket, answered later. */
static int send_signed(struct wm_cluster *c, unsigned i, const char *target)
{
	char sig[CK_HEADER_MAX + 64], req[1024];
	wm_cluster_sig(c, "GET", target, NULL, sig, sizeof(sig));
	int fd = tcp_connect(c->port[i]);
	cr_assert_geq(fd, 0);
	int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: t\r\n%sConnection: close\r\n\r\n", target, sig);
	cr_assert_eq(write(fd, req, (size_t)n), n);
	return fd;
}

/*
 * Long-poll (engine/replication/repl.h): a caught-up subscriber's fetch
 * with wait_ms is held until something new is durable, then answered
 * with it; with nothing new it is answered, empty, when its wait is over;
 * wait_ms is bounded (1..5000).
 */
WM_TEST(replication, a_caught_up_fetch_waits_for_the_next_write, .timeout = 60)
{
	struct wm_cluster c;
	cluster_up(&c, 2);
	/* shard 1 streams from the home, caught up */
	for (int t = 0; t < 500; t++) {
		char *s1 = get_body(&c, 1, "/internal/cluster/status", 200);
		int ok = s1 && strstr(s1, "\"state\":\"streaming\"") && strstr(s1, "\"lag_lsn\":0");
		free(s1);
		if (ok)
			break;
		usleep(20 * 1000);
	}
	/* and the home writes nothing more of its own (start-up positions) */
	char *st = NULL;
	unsigned long long last = 0;
	for (int t = 0; t < 50; t++) {
		free(st);
		st = get_body(&c, 0, "/internal/cluster/status", 200);
		cr_assert_not_null(st);
		unsigned long long now = strtoull(strstr(st, "\"durable_lsn\":") + 14, NULL, 10);
		if (t && now == last)
			break;
		last = now;
		usleep(300 * 1000);
	}
	const char *d = strstr(st, "\"durable_lsn\":"), *e = strstr(st, "\"epoch\":\"");
	cr_assert(d && e, "%s", st);
	unsigned long long durable = strtoull(d + 14, NULL, 10);
	char epoch[17];
	snprintf(epoch, sizeof(epoch), "%.16s", e + 9);
	free(st);
	char target[256];
	/* bounds */
	struct http_resp r;
	static const char *const waits[] = {"0", "5001", NULL};
	for (int k = 0; waits[k]; k++) {
		snprintf(target, sizeof(target), "/internal/replication/wal?from=%llu&epoch=%s&max_bytes=65536&wait_ms=%s",
			 durable, epoch, waits[k]);
		cr_assert_eq(wm_cluster_do(&c, 0, "GET", target, NULL, &r), 0);
		cr_assert_eq(r.status, 400, "wait_ms=%s: %s", waits[k], r.body);
		http_resp_free(&r);
	}
	/* held until the next write, then answered with it */
	snprintf(target, sizeof(target), "/internal/replication/wal?from=%llu&epoch=%s&max_bytes=65536&wait_ms=5000",
		 durable, epoch);
	int fd = send_signed(&c, 0, target);
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	if (poll(&pf, 1, 400) != 0) {
		cr_assert_eq(http_read_response(fd, &r, 3000), 0);
		cr_assert_fail("a caught-up fetch (from %llu) was answered before anything new existed: %d, %zu bytes, %s",
			       durable, r.status, r.body_len, r.head);
	}
	char id[64];
	new_partner(c.port[0], 1, id);
	cr_assert_eq(http_read_response(fd, &r, 3000), 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_gt(r.body_len, REPL_HEADER_SIZE, "the held fetch came back without the new write");
	http_resp_free(&r);
	close(fd);
	/* nothing new: answered, empty, when its wait is over */
	st = get_body(&c, 0, "/internal/cluster/status", 200);
	d = strstr(st, "\"durable_lsn\":");
	durable = strtoull(d + 14, NULL, 10);
	free(st);
	snprintf(target, sizeof(target), "/internal/replication/wal?from=%llu&epoch=%s&max_bytes=65536&wait_ms=300",
		 durable, epoch);
	fd = send_signed(&c, 0, target);
	cr_assert_eq(http_read_response(fd, &r, 3000), 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_eq(r.body_len, REPL_HEADER_SIZE, "an empty chunk is its header alone");
	http_resp_free(&r);
	close(fd);
	wm_cluster_cleanup(&c);
}

/*
 * A publisher that moves (a new address in a new map version, SIGHUP) is
 * followed: the subscriber's calls to the old address fail, and after the
 * reload it streams from the new one, from where it was.
 */
WM_TEST(replication, a_publisher_that_moves_is_followed_after_a_map_reload, .timeout = 90)
{
	struct wm_cluster c;
	cluster_up(&c, 2);
	char id[64], path[128];
	new_partner(c.port[0], 1, id);
	snprintf(path, sizeof(path), "/v1/partners/%s", id);
	wait_same(&c, 1, path);
	/* the home moves to a new port */
	cr_assert_eq(wm_cluster_stop(&c, 0), 0);
	wm_cluster_move(&c, 0);
	cr_assert_eq(wm_cluster_start(&c, 0), 0, "the home did not start on its new address");
	cr_assert_eq(kill(c.shard[1].pid, SIGHUP), 0);
	/* a write at its new address reaches shard 1 */
	new_partner(c.port[0], 2, id);
	snprintf(path, sizeof(path), "/v1/partners/%s", id);
	wait_same(&c, 1, path);
	wm_cluster_cleanup(&c);
}
