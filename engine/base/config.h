/*
 * config.h -- the shard's configuration: one table of options (name, type,
 * bounds, default, help) drives the config file parser, the command-line
 * parser and --help, so an option exists in exactly one place.
 *
 * Precedence: built-in defaults < config file (--config FILE, "key = value"
 * lines, '#' comments) < command-line flags (--key VALUE or --key=VALUE).
 */
#ifndef WM_CONFIG_H
#define WM_CONFIG_H

#include <stdint.h>
#include <stdio.h>

struct config {
	char listen[128];          /* HOST:PORT */
	char data_dir[512];
	char data_ref_dir[512];     /* pricing reference data (engine/pricing/refdata.h), relative to the cwd */
	char wal_mode[8];          /* fsync | write | none */
	uint64_t wal_segment_mb;
	uint64_t snapshot_interval_s; /* 0 = no periodic snapshots */
	uint64_t snapshot_keep;
	uint64_t access_log;       /* 0/1 */
	uint64_t demo;             /* seed demo data on first start */
	uint64_t documents;        /* generate orders' trade documents (engine/orders/documents.c) */
	uint64_t retention_days;    /* events, deliveries and released holds kept this long (0: for ever) */
	uint64_t webhook_disable_after_days; /* an endpoint failing every delivery this long is disabled */
	uint64_t max_conns;
	uint64_t max_conns_per_ip; /* 0 = no cap */
	char tls_cert[512];        /* "" = plain HTTP */
	char shard_map[512];       /* the cluster's shard map (engine/cluster/shard_map.h); "" = a cluster of one */
	uint64_t shard_id;         /* this shard's id in the map */
	uint64_t txn_timeout_ms;   /* in doubt past this, a shard asks the coordinator (0 = default) */
	uint64_t complaint_window_days; /* returns/refunds after delivery (spec 8: 7) */
	char complaint_windows[256];    /* per destination: "CC=days,CC=days" (others: complaint_window_days) */
	char checks_at[8];              /* the nightly consistency checks: "HH:MM" UTC, or "off" (engine/checks.c) */
	char payout_days[128];          /* per role: "originator=7,seller=7,fulfiller=7" (others: the complaint window) */
	uint64_t router_id;        /* a router's id in the map's router lines (2PC coordinator r<id>) */
	char cluster_secret_file[512]; /* cluster mode: the secret of internal signatures (engine/cluster/cluster_auth.h) */
	char tls_key[512];
	uint64_t header_timeout_ms;
	uint64_t body_timeout_ms;
	uint64_t idle_timeout_ms;
	uint64_t max_body_kb;
	uint64_t max_header_kb;
	uint64_t max_headers;
	uint64_t salvage;          /* start even if the WAL is corrupt mid-log (loses data) */
	char log_level[8];         /* debug | info | warn | error */
	/* identity and access (engine/edge/auth.c, idem.c, audit.c) */
	uint64_t key_rate_rps;     /* default per-key request rate (token refill per second) */
	uint64_t key_rate_burst;   /* default per-key bucket size */
	uint64_t record_quota;     /* rows a partner entity may read per period */
	uint64_t record_quota_period_s;
	uint64_t idempotency_ttl_s; /* idempotency records kept at least this long */
	uint64_t audit_keep;       /* audit rows kept in memory (older ones stay in the WAL) */
	uint64_t audit_alert_factor;   /* alert when a window exceeds factor x trailing average */
	uint64_t audit_alert_min_rows; /* ... and at least this many rows */
	uint64_t audit_alert_window_s;
	/* pricing (engine/pricing/quote.c) */
	uint64_t platform_fee_ppm;        /* F_Platform rate, parts per million of (P_B2B + M) */
	uint64_t platform_fixed_fee_cents; /* optional fixed platform fee per order, EUR cents */
	uint64_t ref_max_age_days;   /* reference data older than this is stale (warning) */
	char platform_legal_name[128];     /* merchant of record on every order (platform_entity) */
	char platform_country[3];          /* its country, printed on its documents ("" = each order's destination) */
	char platform_vat_id[24];          /* its VAT number, printed on its invoices ("" = none printed) */
	/* outbound webhooks (engine/webhooks/) */
	uint64_t webhook_allow_http;    /* endpoints may be plain http:// */
	uint64_t webhook_allow_private; /* endpoints may be loopback/private/link-local addresses */
	/* media uploads (engine/catalogue/media.c) */
	uint64_t media_max_kb;     /* largest image accepted (KiB); clamped to max_body_kb at start */
	uint64_t media_url_ttl_s;  /* lifetime of a signed upload URL */
	/* wm-router (shard-router/router.c) */
	uint64_t forward_timeout_ms; /* deadline of one forwarded call */
	uint64_t shard_conns;        /* keep-alive connections per shard */
};

void config_defaults(struct config *c);
/* Parse argv (and any --config file it names).  Returns 0 to run, 1 if
 * --help was printed, -1 on an error (message printed to `err`). */
int config_parse_args(struct config *c, int argc, char **argv, FILE *err);
void config_usage(FILE *out, const char *prog);
struct srv_limits;
/* The server's limits from the options (connections, time-outs, request
 * sizes), as wm-shard and wm-router both take them. */
void config_srv_limits(const struct config *c, struct srv_limits *l);
/* Restrict the options accepted and listed to names (NULL-terminated;
 * NULL = all): wm-router takes the edge's options, not the engine's. */
void config_select(const char *const *names);
/* The defaults --help lists, for a program whose defaults differ from
 * config_defaults() (wm-router's data directory); d must outlive parsing. */
void config_usage_defaults(const struct config *d);

#endif
