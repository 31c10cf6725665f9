/*
 * metrics.c -- request counters and latency histogram (see metrics.h).
 */
#include "engine/base/metrics.h"

#include <stdio.h>
#include <string.h>

const int metrics_statuses[METRICS_N_STATUS] = {200, 201, 202, 204, 304, 400, 401, 403,
						404, 405, 408, 409, 411, 413, 414, 415,
						422, 429, 431, 500, 501, 503, 505, 410};
const uint32_t metrics_lat_bounds_us[METRICS_LAT_BUCKETS] = {
	50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 1000000};

/* The route's slot: found by pointer first (a route's name is the one
 * string of the route table, so every request of it passes the same
 * pointer), by content only when no pointer matches (a name built
 * elsewhere); a new slot when neither does.  -1 when all are taken.  (One
 * strcmp per route registered before it cost a quote ~9 libc calls.) */
int metrics_route(struct metrics *m, const char *name)
{
	for (uint32_t i = 0; i < m->n_routes; i++)
		if (m->route_names[i] == name)
			return (int)i;
	for (uint32_t i = 0; i < m->n_routes; i++)
		if (strcmp(m->route_names[i], name) == 0)
			return (int)i;
	if (m->n_routes >= METRICS_MAX_ROUTES)
		return -1;
	m->route_names[m->n_routes] = name;
	return (int)m->n_routes++;
}

void metrics_record(struct metrics *m, const char *route, int status, uint64_t latency_us)
{
	int r = metrics_route(m, route ? route : "-");
	if (r >= 0) {
		int si = METRICS_N_STATUS;
		for (int i = 0; i < METRICS_N_STATUS; i++)
			if (metrics_statuses[i] == status) {
				si = i;
				break;
			}
		m->req[r][si]++;
	}
	int b = 0;
	while (b < METRICS_LAT_BUCKETS && latency_us > metrics_lat_bounds_us[b])
		b++;
	m->lat[b]++;
	m->lat_sum_us += latency_us;
	m->lat_count++;
}

void metrics_render(const struct metrics *m, struct buf *out)
{
	buf_puts(out, "# HELP wm_http_requests_total HTTP requests by route and status.\n"
		      "# TYPE wm_http_requests_total counter\n");
	for (uint32_t r = 0; r < m->n_routes; r++)
		for (int s = 0; s <= METRICS_N_STATUS; s++) {
			if (!m->req[r][s])
				continue;
			char st[8] = "other";
			if (s < METRICS_N_STATUS)
				snprintf(st, sizeof(st), "%d", metrics_statuses[s]);
			buf_printf(out, "wm_http_requests_total{route=\"%s\",status=\"%s\"} %llu\n",
				   m->route_names[r], st, (unsigned long long)m->req[r][s]);
		}
	buf_puts(out, "# HELP wm_http_request_duration_seconds Handler latency.\n"
		      "# TYPE wm_http_request_duration_seconds histogram\n");
	uint64_t cum = 0;
	for (int b = 0; b < METRICS_LAT_BUCKETS; b++) {
		cum += m->lat[b];
		buf_printf(out, "wm_http_request_duration_seconds_bucket{le=\"%g\"} %llu\n",
			   metrics_lat_bounds_us[b] / 1e6, (unsigned long long)cum);
	}
	cum += m->lat[METRICS_LAT_BUCKETS];
	buf_printf(out, "wm_http_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
			"wm_http_request_duration_seconds_sum %.6f\n"
			"wm_http_request_duration_seconds_count %llu\n",
		   (unsigned long long)cum, m->lat_sum_us / 1e6, (unsigned long long)m->lat_count);
}
