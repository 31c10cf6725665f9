/*
 * cluster_harness.h -- integration-test support for a multi-process
 * cluster (DESIGN.md section 9, "Testing a cluster"): N wm-shard processes
 * (N <= WM_CLUSTER_MAX) on loopback with a generated shard map, a
 * generated cluster secret and a temporary data directory each; kill -9,
 * stop and restart one of them; signed requests to any of them; and a slot
 * for the router (bin/wm-router, started only when $WM_BIN_DIR has it).
 *
 * Addresses are chosen before anything starts (bind port 0 on 127.0.0.1,
 * read the port, close) because the map names every shard's address and
 * every process reads the same map.  The map's countries: shard 1 owns FR,
 * shard 2 owns DE, shard 3 owns IT; shard 0 (the catalogue home) owns
 * every other officially assigned country (and FR/DE/IT when the cluster
 * has no shard for them).  The secret is 48 bytes, mode 0600.
 *
 * Every process gets the harness's operator key (WM_TEST_KEY): the home
 * stores it, the other shards receive it by replication.
 */
#ifndef WM_CLUSTER_HARNESS_H
#define WM_CLUSTER_HARNESS_H

#include <stddef.h>
#include <sys/types.h>

#include "engine/cluster/cluster_auth.h"
#include "tests/harness.h"

#define WM_CLUSTER_MAX 4
#define WM_CLUSTER_MAX_ARGS 16

struct wm_cluster {
	unsigned n;
	struct wm_proc shard[WM_CLUSTER_MAX];
	int port[WM_CLUSTER_MAX];          /* chosen before start, in the map */
	int listen_port[WM_CLUSTER_MAX];   /* where shard i really listens when not port[i] (a proxy
					    * between, at port[i]); 0 = port[i] */
	char root[256];                    /* temporary root: map, secret, router data */
	char map_path[320], secret_path[320];
	struct cluster_key key;
	const char *extra[WM_CLUSTER_MAX_ARGS + 1]; /* extra arguments for every shard (NULL-terminated) */
	/* extra arguments for the router (NULL-terminated): the edge's options
	 * (rates, quotas, audit) a test gives a single shard */
	const char *router_extra[WM_CLUSTER_MAX_ARGS + 1];
	const char *const *router_env;     /* extra environment for the router's next start ("K=V", NULL-terminated) */
	const char *own[WM_CLUSTER_MAX];   /* wm_cluster_set_countries; own[1] NULL = the default split */
	const char *const *env;            /* extra environment for the next starts ("K=V", NULL-terminated) */
	unsigned map_version;              /* the map file's version (0 = 1) */
	/* the router slot */
	pid_t router_pid;
	int router_port;
	char router_dir[320];
	/* a second router (router 1 of the map), after wm_cluster_add_router2 */
	pid_t router2_pid;
	int router2_port;
	char router2_dir[320];
};

/* Choose addresses, write the map (version 1) and the secret; no process
 * yet.  n in 1..WM_CLUSTER_MAX.  Fails the test on error. */
void wm_cluster_init(struct wm_cluster *c, unsigned n);
/* Before any start: shard i >= 1 owns the space-separated countries own[i]
 * ("FR DE"), the home every other one; rewrites the map. */
void wm_cluster_set_countries(struct wm_cluster *c, const char *const *own);
/* Give shard i (stopped) a new address: a new free port, the map rewritten
 * with the next version.  The running processes learn it on SIGHUP. */
void wm_cluster_move(struct wm_cluster *c, unsigned i);
/* Start (or restart on its data directory) shard i; 0 once it listens. */
int wm_cluster_start(struct wm_cluster *c, unsigned i);
/* Start every shard; fails the test when one does not start. */
void wm_cluster_start_all(struct wm_cluster *c);
void wm_cluster_kill9(struct wm_cluster *c, unsigned i);
/* SIGTERM and wait; the exit status. */
int wm_cluster_stop(struct wm_cluster *c, unsigned i);
/* Stop everything, delete every temporary directory. */
void wm_cluster_cleanup(struct wm_cluster *c);

/* The X-WM-Signature header line ("Name: value\r\n") for a request signed
 * now with the cluster secret, into out (>= CK_HEADER_MAX + 32). */
void wm_cluster_sig(const struct wm_cluster *c, const char *method, const char *target, const char *body, char *out,
		    size_t n);
/* http_do to shard i, signed (plus the operator key, as http_do sends). */
int wm_cluster_do(const struct wm_cluster *c, unsigned i, const char *method, const char *target, const char *body,
		  struct http_resp *r);

/* The router slot: start $WM_BIN_DIR/wm-router --listen 127.0.0.1:PORT
 * --shard-map --cluster-secret-file --data-dir; 0 once it answers
 * /healthz, 1 when the binary does not exist (not built yet), -1 when it
 * failed to start. */
int wm_cluster_router_start(struct wm_cluster *c); /* returns once /readyz says ready */
void wm_cluster_router_kill9(struct wm_cluster *c);
/* A second router, router 1 of the map (its own port and data directory,
 * the same router_extra, no router_env): add it before anything starts
 * (rewrites the map), then start and kill it like the first. */
void wm_cluster_add_router2(struct wm_cluster *c);
int wm_cluster_router2_start(struct wm_cluster *c);
void wm_cluster_router2_kill9(struct wm_cluster *c);
/* Shard i's wm_txn_in_doubt (transactions it holds PREPARED holds for),
 * or -1 when its /metrics cannot be read. */
long wm_cluster_in_doubt(const struct wm_cluster *c, unsigned i);
/* `wm-ctl cluster check` against c (in-doubt transactions younger than
 * the limit are not violations): its exit status, its report into out. */
int wm_cluster_check(const struct wm_cluster *c, long long in_doubt_limit_ms, char *out, size_t n);
/* A loopback port reserved for this test (cluster_harness.c, free_port):
 * no other test, bind(0) or connection gets it; a server that binds it
 * with SO_REUSEADDR may.  wm_cluster_release_port gives it back (for a
 * program that does not set SO_REUSEADDR). */
int wm_cluster_free_port(void);
void wm_cluster_release_port(int port);
/* Three shards (the home, FR and DE's, AT the home's) and a router, ready
 * for orders: no key rate in the way, --txn-timeout-ms for the shards
 * (a decimal string with static storage), router_env for the router's
 * start (may be NULL).  Asserts that everything started. */
void wm_cluster_for_orders(struct wm_cluster *c, const char *txn_timeout_ms, const char *const *router_env);
/* Its first half: the cluster initialised with those options, nothing
 * started (for a test that adds a proxy or a second router first). */
void wm_cluster_orders_config(struct wm_cluster *c, const char *txn_timeout_ms);

#endif
