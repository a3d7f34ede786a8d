/*
 * http_endpoint.h - lumberjit's HTTP endpoint, on the config's
 * http_address (off unless set), for scrapers, probes and scripts:
 *
 *   GET /metrics        the metrics file's text (metrics.h), in
 *                       Prometheus's text format 0.0.4
 *   GET /health         200 {"status":"ok"} or 503 with the reasons
 *                       (health.h)
 *   GET /api/v1/stats   the counters as JSON (stats_json.h)
 *
 * HEAD too; another method on these is 405, another path 404. Served by
 * http_server.h, bounded and never blocking the loop; every answer is made
 * from pipeline_snapshot on the loop thread, where the counters are.
 *
 * It lives beside the pipeline, not in it: the cli starts it once and
 * points it at the pipeline that runs (http_endpoint_serve), so that a
 * reload can point it at the next one and the port stays open. With none
 * (while the run ends) it answers 503, {"status":"not running"}.
 */
#ifndef LUMBERJIT_HTTP_ENDPOINT_H
#define LUMBERJIT_HTTP_ENDPOINT_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "pipeline.h"

typedef struct http_endpoint http_endpoint;

/* Listens on address; NULL with the reason in err. Logs where it serves. */
http_endpoint *http_endpoint_start(uv_loop_t *loop, const char *address,
                                   char *err, size_t errlen);
/* Answers from pl (NULL: none) and holds /health to health_paused_ms. */
void http_endpoint_serve(http_endpoint *e, pipeline *pl,
                         uint64_t health_paused_ms);
/* Stops listening and closes the connections (the loop must run once
 * more for the handles); NULL does nothing. */
void http_endpoint_close(http_endpoint *e);

#endif
