/*
 * health.h - what /health answers (http_endpoint.h): whether the run is
 * well, from the pipeline's counters, for a load balancer, a container
 * runtime or an alert.
 *
 * It is well (200, {"status":"ok"}) unless
 *   - an input failed to start or stopped on a read error;
 *   - an output failed, or retries now (a full disk);
 *   - a decoder, encoder or filter is stopped after max_failures failed
 *     calls in a row (until it restarts);
 *   - the inputs have been held (backpressure) longer than paused_max_ms
 *     (0: never counts);
 * then it is 503, {"status":"failing","reasons":["output 'out': ...", ...]}.
 * An output whose transport waits for its destination (a Kafka broker, a
 * syslog server that is down) holds records: it shows as held inputs once
 * its queue is full.
 */
#ifndef LUMBERJIT_HEALTH_H
#define LUMBERJIT_HEALTH_H

#include <stdint.h>

#include "buf.h"
#include "pipeline.h"

/* Appends the JSON answer for st to body; returns the status, 200 or 503
 * (500 when memory ran out). */
int health_report(const pipeline_stats *st, uint64_t paused_max_ms, buf *body);

#endif
