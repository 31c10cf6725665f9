/*
 * shard_main.c -- bin/wm-shard: parse options, recover, serve, drain.
 *
 * Signals arrive through a signalfd so that SIGTERM/SIGINT are just another
 * event on the loop: the server stops accepting, finishes what is in flight,
 * the WAL is flushed, and the process exits 0.  A second signal during the
 * drain exits at once (everything acknowledged is durable anyway).  SIGHUP
 * reloads the TLS certificate and key from their files and the shard map
 * (a file that does not load leaves the one in force in place, with an
 * error line).
 *
 * --shard-map FILE --shard-id N (DESIGN.md section 9): the map is checked
 * at start against the countries the reference data prices (each must
 * belong to a shard) and this shard's id must be one of its shards; a map
 * that fails either refuses the start with FILE:LINE.  Without the option
 * the shard is a cluster of one, as it always was.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "engine/edge/consumer_token.h"
#include "engine/orders/documents.h"
#include "engine/retention.h"
#include "engine/webhooks/webhooks.h"
#include "engine/edge/api.h"
#include "engine/edge/dispatch.h"
#include "engine/edge/audit.h"
#include "engine/checks.h"
#include "engine/demo.h"
#include "engine/edge/idem.h"
#include "engine/edge/key.h"
#include "engine/edge/park.h"
#include "engine/base/log.h"
#include "engine/orders/fulfilment.h"
#include "engine/orders/order.h"
#include "engine/orders/returns.h"
#include "engine/pricing/refdata.h"
#include "engine/catalogue/media.h"
#include "engine/storage/shard.h"
#include "engine/replication/repl.h"
#include "engine/stock/inventory.h"
#include "engine/stock/txn_part.h"
#include "engine/cluster/cluster_auth.h"
#include "engine/cluster/shard_map.h"

static int drain_requested;

static void on_wal_progress(struct ev_loop *loop, struct ev_handle *h, uint32_t events)
{
	(void)loop;
	(void)events;
	struct shard *sh = h->arg;
	uint64_t v;
	ssize_t r = read(h->fd, &v, sizeof(v));
	(void)r;
	audit_on_durable(sh, wal_durable_lsn(sh->wal));
	srv_on_durable(sh->srv);
	repl_pub_wake(sh, 0); /* long-polls waiting for something new */
}

/* ---- the shard map (DESIGN.md section 9) ----------------------------------- */

static struct shard_map smap; /* in force when sh->smap_version != 0 */
static struct cluster_key ckey; /* cluster mode: signs and checks internal traffic */

/* The destination countries the reference data prices (its VAT rows): each
 * must belong to a shard of the map.  Unique codes into out; how many. */
static size_t priced_countries(const struct refdata *rd, const char *out[], size_t max)
{
	size_t n = 0;
	for (uint32_t i = 0; i < rd->n_vat; i++) {
		size_t j = 0;
		while (j < n && strcmp(out[j], rd->vat[i].country))
			j++;
		if (j == n && n < max)
			out[n++] = rd->vat[i].country;
	}
	return n;
}

/*
 * Load --shard-map into *m and check that --shard-id is one of its shards.
 * 0, or -1 with the reason in err (the map keeps FILE:LINE).
 */
static int shard_map_read(const struct config *cfg, struct shard_map *m, char *err, size_t errlen)
{
	static const char *req[26 * 26];
	size_t n = priced_countries(refdata_current(), req, sizeof(req) / sizeof(req[0]));
	if (smap_load(cfg->shard_map, req, n, m, err, errlen))
		return -1;
	if (cfg->shard_id >= m->n) {
		snprintf(err, errlen, "%s: --shard-id %llu is not one of its shards (ids 0..%u)", cfg->shard_map,
			 (unsigned long long)cfg->shard_id, m->n - 1);
		return -1;
	}
	return 0;
}

/* The cluster secret (--cluster-secret-file, required in cluster mode). */
static int cluster_secret_read(const struct config *cfg, char *err, size_t errlen)
{
	if (!cfg->cluster_secret_file[0]) {
		snprintf(err, errlen, "--shard-map needs --cluster-secret-file (the secret that signs internal traffic)");
		return -1;
	}
	char why[256];
	if (ck_load(cfg->cluster_secret_file, &ckey, why, sizeof(why))) {
		snprintf(err, errlen, "cluster secret %s: %s", cfg->cluster_secret_file, why);
		return -1;
	}
	return 0;
}

static void shard_map_log(const struct config *cfg, const struct shard_map *m, const char *what)
{
	log_info("msg=\"%s\" file=%s version=%llu shards=%u shard_id=%llu countries=%u addr=%s", what, cfg->shard_map,
		 (unsigned long long)m->version, m->n, (unsigned long long)cfg->shard_id,
		 (unsigned)m->shards[cfg->shard_id].n_countries, m->shards[cfg->shard_id].addr);
}

/* SIGHUP: a map that loads replaces the one in force; one that does not
 * leaves it in force, with the reason logged. */
static void shard_map_reload(struct shard *sh)
{
	if (!sh->cfg.shard_map[0])
		return;
	static struct shard_map next;
	char err[512];
	if (shard_map_read(&sh->cfg, &next, err, sizeof(err))) {
		log_error("msg=\"shard map reload refused; the previous map stays\" version=%llu error=\"%s\"",
			  (unsigned long long)sh->smap_version, err);
		return;
	}
	smap = next;
	sh->smap_version = smap.version;
	shard_map_log(&sh->cfg, &smap, "shard map reloaded");
	repl_sub_remap(sh, &smap);
}

static void on_signal(struct ev_loop *loop, struct ev_handle *h, uint32_t events)
{
	(void)events;
	struct shard *sh = h->arg;
	struct signalfd_siginfo si;
	ssize_t r = read(h->fd, &si, sizeof(si));
	(void)r;
	if (si.ssi_signo == SIGHUP) {
		shard_map_reload(sh);
		char err[512] = "";
		int rc = srv_tls_reload(sh->srv, err, sizeof(err));
		if (rc == 0)
			log_info("msg=\"TLS certificate reloaded\" cert=\"%s\"", sh->cfg.tls_cert);
		else if (rc < 0)
			log_error("msg=\"TLS reload refused; the previous certificate stays\" error=\"%s\"", err);
		else
			log_info("msg=\"SIGHUP: nothing to reload (plain HTTP)\"");
		return;
	}
	log_info("msg=\"%s\" signal=%u", drain_requested ? "second signal: stopping now" : "draining", si.ssi_signo);
	srv_drain_on_signal(sh->srv, loop, &drain_requested);
}

/* The render thread finished documents: note them, hand it more. */
static void on_documents(struct ev_loop *loop, struct ev_handle *h, uint32_t events)
{
	(void)loop;
	(void)events;
	documents_poll(h->arg);
}

/* The webhook thread finished deliveries: store them, send more. */
static void on_webhooks(struct ev_loop *loop, struct ev_handle *h, uint32_t events)
{
	(void)loop;
	(void)events;
	webhooks_poll(h->arg);
}

/* Once per loop iteration: commit the read-audit rows staged by it. */
static void on_prepare(struct ev_loop *loop, void *arg)
{
	(void)loop;
	audit_flush(arg);
	park_poll(arg, api_handle);
	fulfil_poll(arg); /* cross-shard legs shipping: consume their holds */
}

static void on_tick(struct ev_loop *loop, void *arg)
{
	struct shard *sh = arg;
	audit_flush(sh);
	srv_tick(sh->srv);
	shard_snapshot_poll(sh);
	shard_space_poll(sh);
	idem_prune(sh);
	repl_tick(sh);
	txn_part_tick(sh); /* in-doubt holds: ask their coordinator */
	order_txn_tick(sh); /* cross-shard orders left placed or paid: the same */
	returns_poll(sh); /* returns left refunding, stock to tell another shard */
	documents_poll(sh); /* orders due their documents, renders to hand out */
	webhooks_poll(sh); /* new events fanned out to endpoints, due deliveries sent */
	retention_tick(sh); /* events, deliveries and released holds past --retention-days */
	checks_tick(sh); /* the nightly consistency checks, at --checks-at */
	inv_count_step(sh, INV_COUNT_STEP); /* after a restart: the offers' counts of their levels */
	repl_pub_wake(sh, 0); /* long-polls whose wait is over */
	uint64_t now = ev_now_ms(loop);
	if (sh->cfg.snapshot_interval_s && now >= sh->snap_next_due_ms) {
		sh->snap_next_due_ms = now + sh->cfg.snapshot_interval_s * 1000;
		if (sh->lsn != sh->snap_last_lsn)
			shard_snapshot_start(sh);
	}
	if (drain_requested && srv_drained(sh->srv))
		ev_stop(loop);
}

static uint64_t durable_lsn(void *app)
{
	struct shard *sh = app;
	return wal_durable_lsn(sh->wal);
}

int main(int argc, char **argv)
{
	static struct shard sh;
	struct config cfg;
	config_defaults(&cfg);
	int pr = config_parse_args(&cfg, argc, argv, stderr);
	if (pr)
		return pr > 0 ? 0 : 2;
	log_set_level_named(cfg.log_level);
	if (checks_parse_at(cfg.checks_at) == -1) {
		fprintf(stderr, "wm-shard: --checks-at %s: not HH:MM (UTC, 00:00..23:59) nor \"off\"\n", cfg.checks_at);
		return 2;
	}

	int sfd = ev_control_signals(); /* before any thread starts */
	if (sfd < 0) {
		perror("signalfd");
		return 1;
	}

	char err[1024] = "";
	struct refdata *rd = NULL;
	if (refdata_load_dir(cfg.data_ref_dir, &rd, err, sizeof(err))) {
		log_error("msg=\"reference data refused\" dir=\"%s\" error=\"%s\"", cfg.data_ref_dir, err);
		fprintf(stderr, "wm-shard: reference data in %s: %s\n", cfg.data_ref_dir, err);
		return 1;
	}
	refdata_set_max_age_days((uint32_t)cfg.ref_max_age_days);
	refdata_set_current(rd);
	if (cfg.shard_map[0] && (shard_map_read(&cfg, &smap, err, sizeof(err)) || cluster_secret_read(&cfg, err, sizeof(err)))) {
		log_error("msg=\"cluster configuration refused\" error=\"%s\"", err);
		fprintf(stderr, "wm-shard: %s\n", err);
		refdata_set_current(NULL);
		return 1;
	}
	/* cluster mode: every shard publishes (engine/replication/); the hook
	 * goes in before recovery so the replayed WAL tail is buffered too */
	struct repl_pub *pub = NULL;
	if (cfg.shard_map[0] && !(pub = repl_pub_new((uint32_t)cfg.shard_id, err, sizeof(err)))) {
		fprintf(stderr, "wm-shard: %s\n", err);
		return 1;
	}
	if (shard_open_logged(&sh, &cfg, pub ? repl_pub_logged : NULL, pub, err, sizeof(err)) ||
	    repl_pub_opened(&sh, err, sizeof(err))) {
		log_error("msg=\"cannot start\" error=\"%s\"", err);
		fprintf(stderr, "wm-shard: %s\n", err);
		return 1;
	}
	/* consumer tokens: derived from the cluster secret (the router checks
	 * them too), else the data directory's own key */
	if (cfg.shard_map[0] ? ct_key_derive(&ckey, sh.consumer_key)
			     : ct_key_load_or_create(cfg.data_dir, sh.consumer_key, err, sizeof(err))) {
		if (cfg.shard_map[0])
			snprintf(err, sizeof(err), "the consumer-token key cannot be derived");
		log_error("msg=\"cannot start\" error=\"%s\"", err);
		fprintf(stderr, "wm-shard: %s\n", err);
		shard_close(&sh);
		return 1;
	}
	sh.has_consumer_key = 1;
	/* precedence: an uploaded version recovered from the snapshot/WAL
	 * (engine/pricing/refadmin.c) replaced the --data-ref-dir files during shard_open */
	const struct refdata *act = refdata_current();
	log_info("msg=\"reference data active\" version=%s effective_date=%s source=%s%s%s", act->version,
		 act->effective_date, rd_source_names[act->source ? 1 : 0],
		 act->source == RD_SRC_API ? " overrides_dir=" : " dir=", cfg.data_ref_dir);
	/* orders a crash left between saga steps: forward or compensated,
	 * before anyone can read them */
	unsigned resumed = saga_recover(&sh);
	if (resumed)
		log_warn("msg=\"orders resumed after restart\" count=%u", resumed);
	/* in a cluster the catalogue (demo partners and wines, the operator
	 * key) is written once, at the home; the other shards get it by
	 * replication */
	int catalogue_home = !cfg.shard_map[0] || cfg.shard_id == 0;
	if (cfg.demo && catalogue_home && demo_seed_if_empty(&sh)) {
		log_error("msg=\"demo data could not be seeded\"");
		shard_close(&sh);
		return 1;
	}
	if ((catalogue_home && key_bootstrap(&sh, stdout, err, sizeof(err))) || media_start(&sh, err, sizeof(err))) {
		log_error("msg=\"cannot start\" error=\"%s\"", err);
		fprintf(stderr, "wm-shard: %s\n", err);
		shard_close(&sh);
		return 1;
	}
	sh.loop = ev_new();
	struct srv_config sc = {.listen = cfg.listen, .tls_cert = cfg.tls_cert, .tls_key = cfg.tls_key,
				.handler = api_handle, .done = api_done, .durable_lsn = durable_lsn, .app = &sh};
	config_srv_limits(&cfg, &sc.lim);
	sh.srv = srv_new(sh.loop, &sc, err, sizeof(err));
	if (!sh.srv) {
		log_error("msg=\"cannot listen\" error=\"%s\"", err);
		fprintf(stderr, "wm-shard: %s\n", err);
		shard_close(&sh);
		ev_free(sh.loop);
		return 1;
	}
	sh.wal_h = (struct ev_handle){.fd = wal_event_fd(sh.wal), .fn = on_wal_progress, .arg = &sh};
	ev_add(sh.loop, &sh.wal_h, EPOLLIN);
	sh.sig_h = (struct ev_handle){.fd = sfd, .fn = on_signal, .arg = &sh};
	ev_add(sh.loop, &sh.sig_h, EPOLLIN);
	/* trade documents: rendered on their own thread, collected here */
	if (documents_start(&sh, err, sizeof(err))) {
		log_error("msg=\"cannot start\" error=\"%s\"", err);
		fprintf(stderr, "wm-shard: %s\n", err);
		srv_free(sh.srv);
		shard_close(&sh);
		ev_free(sh.loop);
		return 1;
	}
	static struct ev_handle docs_h;
	docs_h = (struct ev_handle){.fd = documents_fd(), .fn = on_documents, .arg = &sh};
	if (docs_h.fd >= 0)
		ev_add(sh.loop, &docs_h, EPOLLIN);
	/* outbound webhooks: sent on their own thread (engine/webhooks/delivery.c) */
	if (webhooks_start(&sh, err, sizeof(err))) {
		log_error("msg=\"cannot start\" error=\"%s\"", err);
		fprintf(stderr, "wm-shard: %s\n", err);
		documents_stop();
		srv_free(sh.srv);
		shard_close(&sh);
		ev_free(sh.loop);
		return 1;
	}
	static struct ev_handle hooks_h;
	hooks_h = (struct ev_handle){.fd = webhooks_fd(), .fn = on_webhooks, .arg = &sh};
	if (hooks_h.fd >= 0)
		ev_add(sh.loop, &hooks_h, EPOLLIN);
	ev_set_tick(sh.loop, 250, on_tick, &sh);
	ev_set_prepare(sh.loop, on_prepare, &sh);
	sh.snap_next_due_ms = ev_clock_us() / 1000 + cfg.snapshot_interval_s * 1000;
	sh.ready = 1;
	if (cfg.shard_map[0]) {
		sh.smap_version = smap.version;
		sh.smap = &smap;
		sh.ckey = &ckey;
		shard_map_log(&cfg, &smap, "shard map loaded");
		if (repl_sub_start(&sh, &smap, &ckey, err, sizeof(err))) {
			log_error("msg=\"cannot start replication\" error=\"%s\"", err);
			fprintf(stderr, "wm-shard: %s\n", err);
			repl_close(&sh);
			srv_free(sh.srv);
			shard_close(&sh);
			ev_free(sh.loop);
			return 1;
		}
		sh.repl_applied = repl_applied_lsn; /* read-your-writes (engine/edge/park.c) */
	}

	char host[128];
	snprintf(host, sizeof(host), "%s", cfg.listen);
	char *colon = strrchr(host, ':');
	if (colon)
		*colon = 0;
	const char *scheme = srv_is_tls(sh.srv) ? "https" : "http";
	log_info("msg=\"listening\" url=%s://%s:%d data_dir=%s wal_mode=%s lsn=%llu", scheme, host,
		 srv_port(sh.srv), cfg.data_dir, cfg.wal_mode, (unsigned long long)sh.lsn);
	if (!srv_is_tls(sh.srv) && !srv_is_loopback(sh.srv))
		log_warn("msg=\"plain HTTP on a non-loopback address: API keys cross the network in clear; "
			 "use --tls-cert/--tls-key\" listen=%s", cfg.listen);
	printf("wm-shard listening on %s://%s:%d (data in %s)\n", scheme, host, srv_port(sh.srv), cfg.data_dir);
	fflush(stdout);

	int rc = ev_run(sh.loop);
	repl_pub_wake(&sh, 1); /* every held long-poll answered before the server goes */
	srv_free(sh.srv);
	webhooks_stop(); /* before the tables go: deliveries in flight stay pending in their rows */
	documents_stop(); /* before the tables go: pending renders stay pending in their rows */
	repl_close(&sh);
	txn_part_close();
	close(sfd);
	audit_flush(&sh);
	wal_flush(sh.wal);
	log_info("msg=\"stopped\" lsn=%llu", (unsigned long long)sh.lsn);
	shard_close(&sh);
	refdata_set_current(NULL);
	ev_free(sh.loop);
	return rc ? 1 : 0;
}
