/* http_endpoint.c - see http_endpoint.h. */
#include "http_endpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health.h"
#include "http_server.h"
#include "log.h"
#include "metrics.h"
#include "stats_json.h"

struct http_endpoint {
  http_server *srv;
  pipeline *pl;             /* NULL: none runs */
  uint64_t health_paused_ms;
};

/* Prometheus's text exposition format, version 0.0.4. */
#define METRICS_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define JSON_TYPE "application/json"

static const char *const paths[] = {"/metrics", "/health", "/api/v1/stats",
                                    NULL};

static void answer(void *ud, const char *path, bool read, http_response *res)
{
  http_endpoint *e = ud;
  const pipeline_stats *st;
  size_t route = 0;
  bool ok = true;

  while (paths[route] && strcmp(paths[route], path) != 0) route++;
  if (!paths[route]) {
    res->status = 404;
    ok = buf_append_str(&res->body, "not found: try /metrics, /health or "
                        "/api/v1/stats\n");
  } else if (!read) {
    res->status = 405;
    res->allow = "GET, HEAD";
    ok = buf_append_str(&res->body, "only GET and HEAD\n");
  } else if (!e->pl) {
    res->status = 503;
    res->content_type = JSON_TYPE;
    ok = buf_append_str(&res->body, "{\"status\":\"not running\"}\n");
  } else {
    st = pipeline_snapshot(e->pl);
    switch (route) {
    case 0:
      res->content_type = METRICS_TYPE;
      ok = metrics_format(&res->body, st);
      break;
    case 1:
      res->content_type = JSON_TYPE;
      res->status = health_report(st, e->health_paused_ms, &res->body);
      break;
    default:
      res->content_type = JSON_TYPE;
      ok = stats_json(&res->body, st);
    }
  }
  if (!ok || res->status == 500) {
    buf_clear(&res->body);
    res->status = 500;
    res->content_type = "text/plain";
    buf_append_str(&res->body, "out of memory\n");
  }
}

http_endpoint *http_endpoint_start(uv_loop_t *loop, const char *address,
                                   char *err, size_t errlen)
{
  http_endpoint *e = calloc(1, sizeof *e);
  char bound[128];

  if (!e) {
    snprintf(err, errlen, "http_address '%s': out of memory", address);
    return NULL;
  }
  e->srv = http_server_start(loop, address, answer, e, bound, sizeof bound,
                             err, errlen);
  if (!e->srv) {
    free(e);
    return NULL;
  }
  log_msg("http: serving /metrics, /health and /api/v1/stats on %s", bound);
  return e;
}

void http_endpoint_serve(http_endpoint *e, pipeline *pl,
                         uint64_t health_paused_ms)
{
  e->pl = pl;
  e->health_paused_ms = health_paused_ms;
}

void http_endpoint_close(http_endpoint *e)
{
  if (!e) return;
  http_server_close(e->srv);
  free(e);
}
