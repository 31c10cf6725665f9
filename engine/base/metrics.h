/*
 * metrics.h -- counters and histograms rendered in Prometheus text format.
 * Fixed-size arrays indexed by route and by a small status table: recording
 * a request is two increments, no allocation, no hashing.
 */
#ifndef WM_METRICS_H
#define WM_METRICS_H

#include <stdint.h>

#include "net/buf.h"

#define METRICS_MAX_ROUTES 128
#define METRICS_N_STATUS 24
#define METRICS_LAT_BUCKETS 12

extern const int metrics_statuses[METRICS_N_STATUS];
extern const uint32_t metrics_lat_bounds_us[METRICS_LAT_BUCKETS];

struct metrics {
	const char *route_names[METRICS_MAX_ROUTES]; /* route patterns, index = route id */
	uint32_t n_routes;
	uint64_t req[METRICS_MAX_ROUTES][METRICS_N_STATUS + 1]; /* last = other status */
	uint64_t lat[METRICS_LAT_BUCKETS + 1];
	uint64_t lat_sum_us, lat_count;
};

/* Index of a route name, registering it on first use (-1 if full). */
int metrics_route(struct metrics *m, const char *name);
void metrics_record(struct metrics *m, const char *route, int status, uint64_t latency_us);
/* Render the request metrics (the caller appends engine/WAL gauges). */
void metrics_render(const struct metrics *m, struct buf *out);

#endif
