/*
 * dispatch.h -- the server's entry points into the edge (dispatch.c).
 */
#ifndef WM_DISPATCH_H
#define WM_DISPATCH_H

#include <stdint.h>

#include "net/server.h"

/* The server's handler entry point (app = struct shard *). */
void api_handle(void *app, const struct srv_request *rq, struct srv_response *rs);
/* The server's done callback: metrics and the access log. */
void api_done(void *app, const struct srv_request *rq, const struct srv_response *rs,
	      uint64_t latency_us);

#endif
