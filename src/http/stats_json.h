/*
 * stats_json.h - what /api/v1/stats answers: the pipeline's counters
 * (pipeline_snapshot) as one JSON object, for scripts (jq) rather than
 * Prometheus:
 *
 *   {"inputs":{"NAME":{"records":N,...,"TYPE_COUNTER_total":N}},
 *    "filters":{"NAME":{...}},
 *    "outputs":{"NAME":{"matched":N,...,"latency_ms":{"p50":X,...},
 *                       "transport":{...}}},
 *    "dead_letters":{"records":N,"written":N,"lost":N,"refused":N},
 *    "unrouted":N,"paused":false,"pauses":N,"paused_ms":N}
 *
 * Each counter is the one the metrics file has (metrics.h says what it
 * counts), named without the lumberjit_ and the role's prefix; a type's
 * own counters (plugin_counter) keep their metric name less lumberjit_.
 */
#ifndef LUMBERJIT_STATS_JSON_H
#define LUMBERJIT_STATS_JSON_H

#include <stdbool.h>

#include "buf.h"
#include "pipeline.h"

/* Appends st's object to b; false when memory ran out. */
bool stats_json(buf *b, const pipeline_stats *st);

#endif
