/*
 * router_main.c -- bin/wm-router: parse options, open the shard pools,
 * serve, drain (DESIGN.md section 9; the forwarding rules are router.c's).
 *
 * Signals come through a signalfd as in wm-shard: SIGTERM/SIGINT stop
 * accepting and finish what is in flight (a second one stops at once),
 * SIGHUP reloads the shard map (a file that does not load leaves the one
 * in force, with an error line) and the TLS certificate.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "engine/base/config.h"
#include "engine/base/log.h"
#include "engine/catalogue/partner.h"
#include "engine/edge/key.h"
#include "engine/replication/repl.h"
#include "shard-router/router.h"

#define ROUTER_TICK_MS 50 /* pool deadlines and server time-outs are swept this often */

/* The options wm-router takes (the rest are the engine's). */
static const char *const router_options[] = {
	"listen",	    "data-dir",		 "shard-map",	      "cluster-secret-file", "tls-cert",
	"tls-key",	    "max-conns",	 "max-conns-per-ip",  "header-timeout-ms",   "body-timeout-ms",
	"idle-timeout-ms",  "max-body-kb",	 "max-header-kb",     "max-headers",	     "log-level",
	"access-log",	    "forward-timeout-ms", "shard-conns", "router-id",
	/* the edge (shard-router/edge.h): keys, rates, quotas, audit, its store */
	"key-rate-rps", "key-rate-burst", "record-quota", "record-quota-period-s", "audit-keep",
	"audit-alert-factor", "audit-alert-min-rows", "audit-alert-window-s", "wal-mode", "wal-segment-mb",
	"snapshot-interval", "snapshot-keep", "salvage", NULL,
};

/* ---- bindings (what a shard binds in engine/routes.c) ------------------- *
 * Defined here, in the program's own object, so that the linker never
 * looks for them in the library's routes.o (which links every handler). */

/* The edge asks the catalogue for a key's partner: the router's replica
 * answers. */
int (*const key_partner_facts)(struct shard *sh, const char *id, uint8_t *roles,
			       uint8_t *status) = partner_facts;

/* Replication restages offers only at the catalogue home, never here. */
static const char *no_level_offer(struct shard *sh, const char *id, size_t len)
{
	(void)sh;
	(void)id;
	(void)len;
	return NULL;
}
static int no_restage(struct shard *sh, const char *offer_id)
{
	(void)sh;
	(void)offer_id;
	return 0;
}
const char *(*const repl_level_offer)(struct shard *sh, const char *level_id, size_t len) = no_level_offer;
int (*const repl_restage_offer)(struct shard *sh, const char *offer_id) = no_restage;

static int drain_requested;

struct router_proc {
	struct router r;
	struct ev_handle sig_h;
};

static void on_signal(struct ev_loop *loop, struct ev_handle *h, uint32_t events)
{
	(void)events;
	struct router *r = h->arg;
	struct signalfd_siginfo si;
	ssize_t n = read(h->fd, &si, sizeof(si));
	(void)n;
	if (si.ssi_signo == SIGHUP) {
		char err[512] = "";
		if (router_reload_map(r, err, sizeof(err)))
			log_error("msg=\"shard map reload refused; the previous map stays\" version=%llu error=\"%s\"",
				  (unsigned long long)r->map.version, err);
		int rc = srv_tls_reload(r->srv, err, sizeof(err));
		if (rc < 0)
			log_error("msg=\"TLS reload refused; the previous certificate stays\" error=\"%s\"", err);
		return;
	}
	log_info("msg=\"%s\" signal=%u", drain_requested ? "second signal: stopping now" : "draining", si.ssi_signo);
	srv_drain_on_signal(r->srv, loop, &drain_requested);
}

/* Once per loop iteration: the audit rows staged by it. */
static void on_prepare(struct ev_loop *loop, void *arg)
{
	(void)loop;
	struct router *r = arg;
	redge_prepare(&r->edge);
	router_edge_poll(r, 0);
}

static void on_tick(struct ev_loop *loop, void *arg)
{
	struct router *r = arg;
	srv_tick(r->srv);
	router_tick(r);
	redge_tick(&r->edge);
	if (drain_requested && srv_drained(r->srv))
		ev_stop(loop);
}

static void on_done(void *app, const struct srv_request *rq, const struct srv_response *rs, uint64_t latency_us)
{
	struct router *r = app;
	if (!r->cfg.access_log)
		return;
	const struct http_request *h = rq->http;
	log_info("msg=access request_id=%s peer=%s method=%.*s path=\"%.*s\" route=\"%s\" status=%d bytes=%zu us=%llu",
		 rq->request_id, rq->peer, h ? (int)h->method_len : 1, h ? h->method_str : "-",
		 h ? (int)(h->path_len > 200 ? 200 : h->path_len) : 1, h ? h->path : "-", rs->route ? rs->route : "-",
		 rs->status, rs->body.len, (unsigned long long)latency_us);
}

int main(int argc, char **argv)
{
	static struct router_proc proc;
	struct router *r = &proc.r;
	struct config cfg;
	config_defaults(&cfg);
	strcpy(cfg.data_dir, "./var/router"); /* beside, never inside, a shard's ./var */
	config_select(router_options);
	static struct config shown;
	shown = cfg;
	config_usage_defaults(&shown);
	int pr = config_parse_args(&cfg, argc, argv, stderr);
	if (pr)
		return pr > 0 ? 0 : 2;
	log_set_level_named(cfg.log_level);

	int sfd = ev_control_signals(); /* before any thread starts */
	if (sfd < 0) {
		perror("signalfd");
		return 1;
	}

	char err[1024] = "";
	struct ev_loop *loop = ev_new();
	if (router_open(r, &cfg, loop, err, sizeof(err))) {
		log_error("msg=\"cannot start\" error=\"%s\"", err);
		fprintf(stderr, "wm-router: %s\n", err);
		ev_free(loop);
		return 1;
	}
	struct srv_config sc = {.listen = cfg.listen, .tls_cert = cfg.tls_cert, .tls_key = cfg.tls_key,
				.handler = router_handle, .done = on_done, .app = r};
	config_srv_limits(&cfg, &sc.lim);
	r->srv = srv_new(loop, &sc, err, sizeof(err));
	if (!r->srv) {
		log_error("msg=\"cannot listen\" error=\"%s\"", err);
		fprintf(stderr, "wm-router: %s\n", err);
		router_close(r);
		ev_free(loop);
		return 1;
	}
	proc.sig_h = (struct ev_handle){.fd = sfd, .fn = on_signal, .arg = r};
	ev_add(loop, &proc.sig_h, EPOLLIN);
	ev_set_tick(loop, ROUTER_TICK_MS, on_tick, r);
	ev_set_prepare(loop, on_prepare, r);
	router_tick(r); /* first probe of the home now */

	char host[128];
	snprintf(host, sizeof(host), "%s", cfg.listen);
	char *colon = strrchr(host, ':');
	if (colon)
		*colon = 0;
	const char *scheme = srv_is_tls(r->srv) ? "https" : "http";
	log_info("msg=\"listening\" url=%s://%s:%d shard_map=%s version=%llu shards=%u", scheme, host, srv_port(r->srv),
		 cfg.shard_map, (unsigned long long)r->map.version, r->map.n);
	if (!srv_is_tls(r->srv) && !srv_is_loopback(r->srv))
		log_warn("msg=\"plain HTTP on a non-loopback address: API keys cross the network in clear; "
			 "use --tls-cert/--tls-key\" listen=%s", cfg.listen);
	printf("wm-router listening on %s://%s:%d (%u shards, map version %llu)\n", scheme, host, srv_port(r->srv),
	       r->map.n, (unsigned long long)r->map.version);
	fflush(stdout);

	int rc = ev_run(loop);
	router_close(r); /* in-flight calls fail; their deferred answers complete */
	srv_free(r->srv);
	close(sfd);
	ev_free(loop);
	log_info("msg=\"stopped\"");
	return rc ? 1 : 0;
}
