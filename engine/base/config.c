/*
 * config.c -- table-driven options (see config.h).
 */
#include "engine/base/config.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "net/server.h"

enum opt_kind { OPT_STR, OPT_U64, OPT_BOOL, OPT_ENUM };

struct opt {
	const char *name;
	enum opt_kind kind;
	size_t off;
	size_t size;           /* for strings */
	uint64_t min, max;     /* for numbers */
	const char *enums;     /* for enums: "a|b|c" */
	const char *help;
};

#define S(f) offsetof(struct config, f), sizeof(((struct config *)0)->f)
#define N(f) offsetof(struct config, f), 0

static const struct opt opts[] = {
	{"listen", OPT_STR, S(listen), 0, 0, NULL, "HOST:PORT to listen on (port 0 = any free port)"},
	{"data-dir", OPT_STR, S(data_dir), 0, 0, NULL, "data directory (WAL in wal/, snapshots in snap/)"},
	{"data-ref-dir", OPT_STR, S(data_ref_dir), 0, 0, NULL, "pricing reference data: vat.tsv, excise.tsv, freight.tsv, fx.tsv, version.txt"},
	{"wal-mode", OPT_ENUM, S(wal_mode), 0, 0, "fsync|write|none", "durability: fsync (default), write, none"},
	{"wal-segment-mb", OPT_U64, N(wal_segment_mb), 1, 4096, NULL, "WAL segment size in MiB"},
	{"snapshot-interval", OPT_U64, N(snapshot_interval_s), 0, 86400 * 7, NULL, "seconds between snapshots (0 = off)"},
	{"snapshot-keep", OPT_U64, N(snapshot_keep), 1, 100, NULL, "snapshots kept by retention"},
	{"access-log", OPT_BOOL, N(access_log), 0, 1, NULL, "one log line per request (0 for benchmarks)"},
	{"demo", OPT_BOOL, N(demo), 0, 1, NULL, "seed demo data into an empty data directory"},
	{"retention-days", OPT_U64, N(retention_days), 0, 3650, NULL,
	 "events, delivered or dead webhook deliveries and released holds older than this are pruned (0: kept for ever)"},
	{"webhook-disable-after-days", OPT_U64, N(webhook_disable_after_days), 1, 365, NULL,
	 "disable a webhook endpoint whose deliveries have all failed for this many days (webhook.endpoint_disabled)"},
	{"documents", OPT_BOOL, N(documents), 0, 1, NULL,
	 "generate orders' trade documents (PDFs); 0: none (benchmarks of order capture, load tests)"},
	{"webhook-allow-http", OPT_BOOL, N(webhook_allow_http), 0, 1, NULL,
	 "webhook endpoints may use plain http:// (default: https only)"},
	{"webhook-allow-private", OPT_BOOL, N(webhook_allow_private), 0, 1, NULL,
	 "webhook endpoints may be loopback, private, link-local or other non-public addresses (default: refused)"},
	{"max-conns", OPT_U64, N(max_conns), 1, 100000, NULL, "maximum open connections (when full, the longest-idle one is closed for a new one)"},
	{"max-conns-per-ip", OPT_U64, N(max_conns_per_ip), 0, 100000, NULL, "open connections one client address may hold (0 = no cap)"},
	{"shard-map", OPT_STR, S(shard_map), 0, 0, NULL, "the cluster's shard map file (without it: a cluster of one); reloaded on SIGHUP"},
	{"shard-id", OPT_U64, N(shard_id), 0, 63, NULL, "this shard's id in --shard-map"},
	{"complaint-window-days", OPT_U64, N(complaint_window_days), 0, 365, NULL,
	 "days after delivery in which a return or refund may be requested (spec 8: 7)"},
	{"complaint-windows", OPT_STR, S(complaint_windows), 0, 0, NULL,
	 "per destination, \"CC=days,CC=days\" (0..365); other destinations take --complaint-window-days"},
	{"payout-days", OPT_STR, S(payout_days), 0, 0, NULL,
	 "days after a party's last leg is delivered before its payout is eligible, per role: "
	 "\"originator=7,seller=7,fulfiller=7\" (a role not named: the destination's complaint window)"},
	{"checks-at", OPT_STR, S(checks_at), 0, 0, NULL,
	 "time of day (UTC, HH:MM) of the nightly consistency checks, or \"off\" (POST /v1/admin/checks/run runs them any time)"},
	{"txn-timeout-ms", OPT_U64, N(txn_timeout_ms), 0, 3600000, NULL,
	 "a cross-shard transaction undecided this long on a shard is asked about at its router (0 = 10000)"},
	{"router-id", OPT_U64, N(router_id), 0, 15, NULL,
	 "wm-router: its id in --shard-map's router lines; it coordinates cross-shard orders as r<ID>"},
	{"cluster-secret-file", OPT_STR, S(cluster_secret_file), 0, 0, NULL, "the cluster secret (32..256 bytes, owner-only file) that signs internal traffic; required with --shard-map"},
	{"tls-cert", OPT_STR, S(tls_cert), 0, 0, NULL, "PEM certificate (chain) file: serve HTTPS only (TLS 1.2/1.3); reloaded on SIGHUP"},
	{"tls-key", OPT_STR, S(tls_key), 0, 0, NULL, "PEM private key file for --tls-cert"},
	{"header-timeout-ms", OPT_U64, N(header_timeout_ms), 10, 3600000, NULL, "time allowed for a request head (and TLS handshake), from accept or its first byte"},
	{"body-timeout-ms", OPT_U64, N(body_timeout_ms), 10, 3600000, NULL, "time allowed for a whole request"},
	{"idle-timeout-ms", OPT_U64, N(idle_timeout_ms), 10, 86400000, NULL, "keep-alive idle time-out"},
	{"max-body-kb", OPT_U64, N(max_body_kb), 1, 65536, NULL, "largest request body (KiB)"},
	{"max-header-kb", OPT_U64, N(max_header_kb), 1, 1024, NULL, "largest request head (KiB)"},
	{"max-headers", OPT_U64, N(max_headers), 1, 64, NULL, "most header fields in a request"},
	{"salvage", OPT_BOOL, N(salvage), 0, 1, NULL, "start even if the WAL is corrupt mid-log, dropping what follows (data loss)"},
	{"log-level", OPT_ENUM, S(log_level), 0, 0, "debug|info|warn|error", "least severe level logged"},
	{"key-rate-rps", OPT_U64, N(key_rate_rps), 1, 1000000, NULL, "default requests per second per API key"},
	{"key-rate-burst", OPT_U64, N(key_rate_burst), 1, 1000000, NULL, "default burst (bucket size) per API key"},
	{"record-quota", OPT_U64, N(record_quota), 1, 1000000000, NULL, "rows a partner may read per quota period"},
	{"record-quota-period-s", OPT_U64, N(record_quota_period_s), 24, 86400 * 31, NULL, "rolling record-quota period (seconds)"},
	{"idempotency-ttl-s", OPT_U64, N(idempotency_ttl_s), 1, 86400 * 30, NULL, "how long idempotency records are kept (seconds)"},
	{"audit-keep", OPT_U64, N(audit_keep), 16, 100000000, NULL, "read-audit rows kept in memory (older stay in the WAL)"},
	{"audit-alert-factor", OPT_U64, N(audit_alert_factor), 2, 1000, NULL, "alert when a key reads this many times its trailing average"},
	{"audit-alert-min-rows", OPT_U64, N(audit_alert_min_rows), 1, 1000000000, NULL, "... and at least this many rows in one window"},
	{"platform-fee-ppm", OPT_U64, N(platform_fee_ppm), 0, 1000000, NULL, "platform fee, parts per million of P_B2B + curator margin"},
	{"platform-fixed-fee-cents", OPT_U64, N(platform_fixed_fee_cents), 0, 1000000, NULL, "fixed platform fee per order (EUR cents)"},
	{"ref-max-age-days", OPT_U64, N(ref_max_age_days), 1, 3650, NULL, "reference data whose newest VAT/excise figure is older is stale (/metrics, log)"},
	{"audit-alert-window-s", OPT_U64, N(audit_alert_window_s), 1, 86400, NULL, "audit volume window (seconds)"},
	{"media-max-kb", OPT_U64, N(media_max_kb), 1, 65536, NULL, "largest media upload (KiB); at most --max-body-kb"},
	{"platform-legal-name", OPT_STR, S(platform_legal_name), 0, 0, NULL, "legal name of the platform, merchant of record on every order"},
	{"platform-country", OPT_STR, S(platform_country), 0, 0, NULL, "the platform's country on its documents (ISO 3166-1 alpha-2; default: the order's destination)"},
	{"platform-vat-id", OPT_STR, S(platform_vat_id), 0, 0, NULL, "the platform's VAT number on its invoices"},
	{"media-url-ttl-s", OPT_U64, N(media_url_ttl_s), 1, 86400 * 7, NULL, "lifetime of a signed media upload URL (seconds)"},
	{"forward-timeout-ms", OPT_U64, N(forward_timeout_ms), 10, 600000, NULL, "wm-router: how long a forwarded request may take at a shard"},
	{"shard-conns", OPT_U64, N(shard_conns), 1, 256, NULL, "wm-router: keep-alive connections to each shard"},
};
#define N_OPTS (sizeof(opts) / sizeof(opts[0]))

void config_defaults(struct config *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->listen, "127.0.0.1:8080");
	strcpy(c->data_dir, "./var");
	strcpy(c->data_ref_dir, "./data");
	strcpy(c->wal_mode, "fsync");
	c->documents = 1;
	c->retention_days = 30;
	strcpy(c->checks_at, "03:00");
	c->webhook_disable_after_days = 5; /* Svix disables after 5 days of failures */
	c->wal_segment_mb = 64;
	c->snapshot_interval_s = 3600;
	c->snapshot_keep = 2;
	c->complaint_window_days = 7;
	c->access_log = 1;
	c->max_conns = 1024;
	c->max_conns_per_ip = 256;
	c->header_timeout_ms = 10000;
	c->body_timeout_ms = 30000;
	c->idle_timeout_ms = 60000;
	c->max_body_kb = 1024;
	c->max_header_kb = 16;
	c->max_headers = 64;
	strcpy(c->log_level, "info");
	c->key_rate_rps = 100;
	c->key_rate_burst = 200;
	c->record_quota = 50000;
	c->record_quota_period_s = 86400;
	c->idempotency_ttl_s = 86400;
	c->audit_keep = 200000;
	c->audit_alert_factor = 10;
	c->audit_alert_min_rows = 1000;
	c->audit_alert_window_s = 60;
	c->platform_fee_ppm = 50000; /* = QUOTE_PLATFORM_FEE_PPM (engine/pricing/quote.h) */
	c->platform_fixed_fee_cents = 0;
	c->ref_max_age_days = 365; /* = RD_DEFAULT_MAX_AGE_DAYS (engine/pricing/refdata.h) */
	c->media_max_kb = 1024;
	c->media_url_ttl_s = 900;
	c->forward_timeout_ms = 30000;
	c->shard_conns = 32;
	strcpy(c->platform_legal_name, "Wine Marketplace Platform");
}

/* The options this program takes (config_select); NULL = every one. */
static const char *const *selected;

static int opt_selected(const struct opt *o)
{
	if (!selected)
		return 1;
	for (const char *const *n = selected; *n; n++)
		if (!strcmp(*n, o->name))
			return 1;
	return 0;
}

void config_select(const char *const *names) { selected = names; }

void config_srv_limits(const struct config *c, struct srv_limits *l)
{
	srv_limits_default(l);
	l->max_conns = (uint32_t)c->max_conns;
	l->max_conns_per_ip = (uint32_t)c->max_conns_per_ip;
	l->header_timeout_ms = (uint32_t)c->header_timeout_ms;
	l->body_timeout_ms = (uint32_t)c->body_timeout_ms;
	l->idle_timeout_ms = (uint32_t)c->idle_timeout_ms;
	l->http.max_body = c->max_body_kb << 10;
	l->http.max_header_bytes = (uint32_t)(c->max_header_kb << 10);
	l->http.max_headers = (uint32_t)c->max_headers;
}

static const struct opt *opt_find_any(const char *name, size_t len);

static const struct opt *opt_find(const char *name, size_t len)
{
	const struct opt *o = opt_find_any(name, len);
	return o && opt_selected(o) ? o : NULL;
}

static const struct opt *opt_find_any(const char *name, size_t len)
{
	for (size_t i = 0; i < N_OPTS; i++)
		if (strlen(opts[i].name) == len && memcmp(opts[i].name, name, len) == 0)
			return &opts[i];
	/* the config file may spell options with underscores */
	char tmp[64];
	if (len >= sizeof(tmp))
		return NULL;
	for (size_t i = 0; i < len; i++)
		tmp[i] = name[i] == '_' ? '-' : name[i];
	for (size_t i = 0; i < N_OPTS; i++)
		if (strlen(opts[i].name) == len && memcmp(opts[i].name, tmp, len) == 0)
			return &opts[i];
	return NULL;
}

static int enum_has(const char *list, const char *v)
{
	size_t n = strlen(v);
	for (const char *p = list; p && *p;) {
		const char *bar = strchr(p, '|');
		size_t l = bar ? (size_t)(bar - p) : strlen(p);
		if (l == n && memcmp(p, v, n) == 0)
			return 1;
		p = bar ? bar + 1 : NULL;
	}
	return 0;
}

static int opt_set(struct config *c, const struct opt *o, const char *v, FILE *err)
{
	char *field = (char *)c + o->off;
	switch (o->kind) {
	case OPT_ENUM:
		if (!enum_has(o->enums, v)) {
			fprintf(err, "--%s: \"%s\" is not one of %s\n", o->name, v, o->enums);
			return -1;
		}
		/* fall through */
	case OPT_STR:
		if (strlen(v) >= o->size || !*v) {
			fprintf(err, "--%s: value empty or longer than %zu bytes\n", o->name, o->size - 1);
			return -1;
		}
		strcpy(field, v);
		return 0;
	case OPT_BOOL:
		if (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "on")) {
			*(uint64_t *)(void *)field = 1;
			return 0;
		}
		if (!strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "off")) {
			*(uint64_t *)(void *)field = 0;
			return 0;
		}
		fprintf(err, "--%s: expected true or false, got \"%s\"\n", o->name, v);
		return -1;
	case OPT_U64: {
		char *end;
		errno = 0;
		unsigned long long x = strtoull(v, &end, 10);
		if (errno || end == v || *end || v[0] == '-' || x < o->min || x > o->max) {
			fprintf(err, "--%s: expected an integer in %llu..%llu, got \"%s\"\n", o->name,
				(unsigned long long)o->min, (unsigned long long)o->max, v);
			return -1;
		}
		*(uint64_t *)(void *)field = x;
		return 0;
	}
	}
	return -1;
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = 0;
	return s;
}

static int config_load_file(struct config *c, const char *path, FILE *err)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(err, "cannot open config file %s: %s\n", path, strerror(errno));
		return -1;
	}
	char line[1024];
	int lineno = 0, rc = 0;
	while (rc == 0 && fgets(line, sizeof(line), f)) {
		lineno++;
		char *s = trim(line);
		if (!*s || *s == '#')
			continue;
		char *eq = strchr(s, '=');
		if (!eq) {
			fprintf(err, "%s:%d: expected key = value\n", path, lineno);
			rc = -1;
			break;
		}
		*eq = 0;
		char *k = trim(s), *v = trim(eq + 1);
		const struct opt *o = opt_find(k, strlen(k));
		if (!o) {
			fprintf(err, "%s:%d: unknown option \"%s\"\n", path, lineno, k);
			rc = -1;
			break;
		}
		rc = opt_set(c, o, v, err);
	}
	fclose(f);
	return rc;
}

/* The defaults --help shows, when a program has its own (config_select's
 * caller); NULL = config_defaults(). */
static const struct config *usage_defaults;

void config_usage_defaults(const struct config *d) { usage_defaults = d; }

void config_usage(FILE *out, const char *prog)
{
	fprintf(out, "usage: %s [--config FILE] [--OPTION VALUE ...]\n\noptions:\n", prog);
	struct config d;
	config_defaults(&d);
	if (usage_defaults)
		d = *usage_defaults;
	for (size_t i = 0; i < N_OPTS; i++) {
		const struct opt *o = &opts[i];
		if (!opt_selected(o))
			continue;
		char def[64];
		if (o->kind == OPT_STR || o->kind == OPT_ENUM)
			snprintf(def, sizeof(def), "%s", *((const char *)&d + o->off) ? (const char *)&d + o->off : "none");
		else
			snprintf(def, sizeof(def), "%llu", (unsigned long long)*(const uint64_t *)(const void *)((const char *)&d + o->off));
		fprintf(out, "  --%-20s %s (default %s)\n", o->name, o->help, def);
	}
	fprintf(out, "  --%-20s %s\n  --%-20s %s\n", "config FILE", "read options from FILE (flags override it)",
		"help", "print this text");
}

int config_parse_args(struct config *c, int argc, char **argv, FILE *err)
{
	/* First pass: --help and --config, so the file applies before flags. */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			config_usage(stdout, argv[0]);
			return 1;
		}
		if (!strncmp(argv[i], "--config", 8)) {
			const char *path = argv[i][8] == '=' ? argv[i] + 9 : (i + 1 < argc ? argv[i + 1] : NULL);
			if (!path || (argv[i][8] && argv[i][8] != '=')) {
				fprintf(err, "--config needs a file name\n");
				return -1;
			}
			if (config_load_file(c, path, err))
				return -1;
		}
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strncmp(a, "--", 2)) {
			fprintf(err, "unexpected argument \"%s\" (see --help)\n", a);
			return -1;
		}
		a += 2;
		const char *eq = strchr(a, '=');
		size_t klen = eq ? (size_t)(eq - a) : strlen(a);
		if (klen == 6 && !strncmp(a, "config", 6)) {
			if (!eq)
				i++;
			continue;
		}
		const struct opt *o = opt_find(a, klen);
		if (!o) {
			fprintf(err, "unknown option --%.*s (see --help)\n", (int)klen, a);
			return -1;
		}
		const char *v;
		if (eq)
			v = eq + 1;
		else if (o->kind == OPT_BOOL && (i + 1 >= argc || !strncmp(argv[i + 1], "--", 2)))
			v = "1";
		else if (i + 1 < argc)
			v = argv[++i];
		else {
			fprintf(err, "--%s needs a value\n", o->name);
			return -1;
		}
		if (opt_set(c, o, v, err))
			return -1;
	}
	return 0;
}
