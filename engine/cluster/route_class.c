/*
 * route_class.c -- the cluster's routing table (route_class.h).
 *
 * Why one table of data: the router decides where a request goes and the
 * shard checks it was meant for it; if each carried its own chain of ifs
 * they would drift, and a drift is a request served by a shard that does
 * not own its data.  The table is ordered most specific first, so
 * "/v1/orders/quote-calculate" is never taken for "/v1/orders/{id}".
 *
 * Every path of api/openapi.json is named here (tests/test_route_class.c
 * walks the engine's route table and checks each has a rule).
 */
#include "engine/cluster/route_class.h"

#include <string.h>

#include "engine/storage/id.h"
#include "net/json.h"

#define R_BODY_JSON_MAX (1u << 20) /* a body parsed for its country; larger ones are invalid anyway */

static const struct rc_rule rules[] = {
	/* the process itself */
	{RC_READS, "/healthz", RC_EDGE, 0, NULL},
	{RC_READS, "/readyz", RC_EDGE, 0, NULL},
	{RC_READS, "/metrics", RC_EDGE, 0, NULL},
	{RC_READS, "/v1/openapi.json", RC_EDGE, 0, NULL},
	/* operator actions and lists kept per shard */
	{RC_ANY, "/v1/admin/snapshots", RC_BROADCAST, 0, NULL},
	{RC_ANY, "/v1/admin/payout-runs", RC_BROADCAST, 0, "sum"}, /* counts added up over the shards */
	{RC_ANY, "/v1/admin/checks/run", RC_BROADCAST, 0, "sum"}, /* every shard checks its rows; counts added up */
	{RC_READS, "/v1/admin/checks/findings", RC_FANOUT, 0, NULL}, /* each shard's open findings, merged */
	{RC_READS, "/v1/admin/payments/{order_id}", RC_PATH_ID, 0, NULL},
	{RC_READS, "/v1/admin/payments", RC_FANOUT, 0, NULL},
	{RC_ANY, "/v1/admin/reference-data", RC_HOME, 0, NULL},
	{RC_READS, "/v1/events", RC_FANOUT, 0, NULL},
	{RC_READS, "/v1/audit", RC_FANOUT, 0, NULL},
	/* stock: by the location's country */
	{RC_WRITES, "/v1/locations", RC_BODY, 0, "address.country"},
	{RC_WRITES, "/v1/stock-locations", RC_BODY, 0, "address.country"},
	/* lists of stock: every shard publishes its locations and levels to
	 * the home, whose replica is complete (a fan-out would list each
	 * row once per shard holding a copy) */
	{RC_READS, "/v1/stock-locations", RC_HOME, 0, NULL},
	{RC_ANY, "/v1/stock-locations/{id}", RC_PATH_ID, 0, NULL},
	{RC_READS, "/v1/inventory/network-snapshot", RC_HOME, 0, NULL},
	{RC_WRITES, "/v1/inventory", RC_BODY, 0, "#location_id"},
	{RC_READS, "/v1/inventory", RC_HOME, 0, NULL},
	{RC_ANY, "/v1/inventory/{id}", RC_PATH_ID, 0, NULL},
	{RC_WRITES, "/v1/holds", RC_BODY, 0, "#level_id"},
	{RC_ANY, "/v1/holds/{id}/commit", RC_FIND, 0, NULL},
	{RC_ANY, "/v1/holds/{id}/release", RC_FIND, 0, NULL},
	/* quotes and orders: by the destination */
	{RC_ANY, "/v1/orders/quote-calculate", RC_BODY, 0, "destination_country"},
	{RC_WRITES, "/v1/orders", RC_BODY, 0, "destination_country"},
	{RC_READS, "/v1/orders", RC_FANOUT, 0, NULL},
	{RC_ANY, "/v1/orders/{id}", RC_PATH_ID, 0, NULL},
	{RC_ANY, "/v1/orders/{id}/*", RC_PATH_ID, 0, NULL},
	{RC_WRITES, "/v1/pickups", RC_BODY, 0, "#order_id"},
	{RC_ANY, "/v1/pickups/{id}", RC_PATH_ID, 0, NULL},
	{RC_ANY, "/v1/pickups/{id}/*", RC_PATH_ID, 0, NULL},
	{RC_ANY, "/v1/documents/{id}", RC_PATH_ID, 0, NULL},
	{RC_ANY, "/v1/documents/{id}/*", RC_PATH_ID, 0, NULL},
	{RC_READS, "/v1/compliance/declarations", RC_QUERY, 0, "destination"},
	/* webhook deliveries: each shard fans its own events out to the
	 * endpoints (replicated from the home) and keeps their delivery rows
	 * (engine/webhooks/delivery.c) */
	{RC_READS, "/v1/webhook-endpoints/{id}/dead-letters", RC_FANOUT, 0, NULL},
	{RC_READS, "/v1/webhook-endpoints/{id}/deliveries", RC_FANOUT, 0, NULL},
	{RC_WRITES, "/v1/webhook-endpoints/{id}/replay", RC_BROADCAST, 0, "sum-find"}, /* one delivery: its shard acts */
	/* the feed: the home, its reads too -- the feed state (REC_T_SYNC_STATE)
	 * is never replicated and a pull walks the home's event log, where the
	 * catalogue's changes are written (engine/supply/sync.c) */
	{RC_ANY, "/v1/sync/*", RC_HOME, 0, NULL},
	/* the catalogue (and everything else): the home */
	{RC_ANY, "/v1/*", RC_HOME, 0, NULL},
	{RC_ANY, "/api/*", RC_HOME, 0, NULL},
	{0, NULL, 0, 0, NULL},
};

const struct rc_rule *rc_table(void) { return rules; }

/*
 * Match path against pattern: "{x}" is one non-empty segment, a final
 * star any non-empty rest.  If pi >= 0, the pi-th parameter's span is
 * returned in *pv and *pl.  1 on match.
 */
static int rc_match(const char *pat, const char *path, size_t len, int pi, const char **pv, size_t *pl)
{
	const char *p = path, *end = path + len;
	int np = 0;
	while (*pat) {
		if (pat[0] == '*' && pat[1] == 0)
			return p < end;
		if (*pat == '{') {
			const char *close = strchr(pat, '}');
			const char *seg = memchr(p, '/', (size_t)(end - p));
			if (!seg)
				seg = end;
			if (seg == p || !close)
				return 0;
			if (np == pi) {
				*pv = p;
				*pl = (size_t)(seg - p);
			}
			np++;
			p = seg;
			pat = close + 1;
			continue;
		}
		if (p >= end || *p != *pat)
			return 0;
		p++;
		pat++;
	}
	return p == end;
}

const struct rc_rule *rc_find(enum http_method m, const char *path, size_t path_len)
{
	for (const struct rc_rule *r = rules; r->pattern; r++)
		if ((r->methods & RC_M(m)) && rc_match(r->pattern, path, path_len, -1, NULL, NULL))
			return r;
	return NULL;
}

int rc_path_country(const struct rc_rule *r, const char *path, size_t path_len, char cc[3])
{
	const char *v = NULL;
	size_t vl = 0;
	cc[0] = 0;
	if (r->kind != RC_PATH_ID || !rc_match(r->pattern, path, path_len, r->param, &v, &vl) || !v)
		return 0;
	/* a sub-resource's id is its owner's id and a suffix ("<order id>.P1",
	 * a pickup): the owner's id says where it lives */
	const char *dot = memchr(v, '.', vl);
	return id_country(v, dot ? (size_t)(dot - v) : vl, cc);
}

int rc_query_country(const struct rc_rule *r, const char *target, size_t len, char cc[3])
{
	cc[0] = 0;
	const char *q = memchr(target, '?', len), *end = target + len;
	size_t nl = r->fields ? strlen(r->fields) : 0;
	if (r->kind != RC_QUERY || !q || !nl)
		return 0;
	for (const char *p = q + 1; p < end;) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *stop = amp ? amp : end;
		if ((size_t)(stop - p) == nl + 3 && !memcmp(p, r->fields, nl) && p[nl] == '=' && p[nl + 1] >= 'A' &&
		    p[nl + 1] <= 'Z' && p[nl + 2] >= 'A' && p[nl + 2] <= 'Z') {
			cc[0] = p[nl + 1];
			cc[1] = p[nl + 2];
			cc[2] = 0;
			return 1;
		}
		p = stop + 1;
	}
	return 0;
}

/* The value at a dotted path ("address.country") of an object, or NULL. */
static const struct json_value *rc_dig(const struct json_value *o, const char *f, size_t fl)
{
	char part[64];
	while (o && fl) {
		const char *dot = memchr(f, '.', fl);
		size_t n = dot ? (size_t)(dot - f) : fl;
		if (n == 0 || n >= sizeof(part))
			return NULL;
		memcpy(part, f, n);
		part[n] = 0;
		o = json_get(o, part);
		f += n + (dot != NULL);
		fl -= n + (dot != NULL);
	}
	return o;
}

int rc_body_country(const struct rc_rule *r, const char *body, size_t body_len, char cc[3])
{
	cc[0] = 0;
	if (r->kind != RC_BODY || !r->fields || !body || !body_len)
		return 0;
	struct json_limits lim = {.max_bytes = R_BODY_JSON_MAX};
	struct json_doc *d = json_parse(body, body_len, &lim, NULL);
	if (!d)
		return 0;
	int found = 0;
	for (const char *f = r->fields; *f && !found;) {
		const char *bar = strchr(f, '|');
		size_t fl = bar ? (size_t)(bar - f) : strlen(f);
		int as_id = *f == '#';
		const struct json_value *v = rc_dig(json_root(d), f + as_id, fl - (size_t)as_id);
		if (v && v->type == JSON_STRING) {
			if (as_id)
				found = id_country(v->u.str, v->len, cc);
			else if (v->len == 2 && v->u.str[0] >= 'A' && v->u.str[0] <= 'Z' && v->u.str[1] >= 'A' &&
				 v->u.str[1] <= 'Z') {
				cc[0] = v->u.str[0];
				cc[1] = v->u.str[1];
				cc[2] = 0;
				found = 1;
			}
		}
		f += fl + (bar != NULL);
	}
	json_doc_free(d);
	return found;
}
