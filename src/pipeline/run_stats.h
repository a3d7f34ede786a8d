/*
 * run_stats.h - the run's figures in the log, for an operator watching it
 * and for a benchmark script: with stats_interval_ms, a line each interval
 * of what it did (as rsyslog's impstats logs), and at exit the line that
 * ends the summary, of the whole run:
 *
 *   stats: 10.0 s: 512034 records read/s, 511200 delivered/s; CPU 0.98 cores;
 *          1234 records queued; inputs paused 0 ms; peak RSS 45.1 MiB
 *   run: 1.09 s; 1000000 records read (920121/s), 1000000 delivered
 *        (920121/s); CPU 1.45 s (1.45 s per million records read); peak RSS
 *        9.4 MiB
 *
 * Delivered counts each output's records: a record two outputs write
 * counts twice. CPU is the process's, user and system.
 */
#ifndef LUMBERJIT_RUN_STATS_H
#define LUMBERJIT_RUN_STATS_H

#include <stdint.h>

#include "pipeline.h"

typedef struct {
  uint64_t started_ns;   /* uv_hrtime at the start */
  /* At the last interval's line (or the start). */
  uint64_t last_ns, last_read, last_delivered, last_paused_ms;
  double last_cpu;
} run_stats;

void run_stats_start(run_stats *rs);
/* Logs what the run did since the last call (or the start). */
void run_stats_interval(run_stats *rs, const pipeline_stats *st);
/* Logs the whole run. */
void run_stats_total(const run_stats *rs, const pipeline_stats *st);

#endif
