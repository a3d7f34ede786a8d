/*
 * run_stats.c - the run's figures in the log (run_stats.h).
 */
#include "run_stats.h"

#include <inttypes.h>
#include <stdio.h>
#include <sys/resource.h>

#include <uv.h>

#include "log.h"

#define RUN_STATS_PER_MILLION_MIN 100000

/* CPU seconds the process used, and its peak RSS in MiB; -1 CPU when
 * getrusage fails. */
static double cpu_seconds(double *peak_mib)
{
  struct rusage ru;

  if (getrusage(RUSAGE_SELF, &ru) != 0) return -1;
  *peak_mib = ru.ru_maxrss / 1024.0;
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static void totals(const pipeline_stats *st, uint64_t *read,
                   uint64_t *delivered, uint64_t *queued)
{
  *read = *delivered = *queued = 0;
  for (size_t i = 0; i < st->ninputs; i++) *read += st->inputs[i].records;
  for (size_t i = 0; i < st->noutputs; i++) {
    *delivered += st->outputs[i].delivered;
    *queued += st->outputs[i].queued_records;
  }
}

void run_stats_start(run_stats *rs)
{
  double peak;

  *rs = (run_stats){.started_ns = uv_hrtime()};
  rs->last_ns = rs->started_ns;
  rs->last_cpu = cpu_seconds(&peak);
}

void run_stats_interval(run_stats *rs, const pipeline_stats *st)
{
  uint64_t now = uv_hrtime(), read, delivered, queued;
  double secs = (double)(now - rs->last_ns) / 1e9, peak, cpu;

  totals(st, &read, &delivered, &queued);
  cpu = cpu_seconds(&peak);
  if (secs <= 0 || cpu < 0) return;
  log_msg("stats: %.1f s: %.0f records read/s, %.0f delivered/s; CPU %.2f "
          "cores; %" PRIu64 " records queued; inputs paused %" PRIu64 " ms; "
          "peak RSS %.1f MiB", secs, (double)(read - rs->last_read) / secs,
          (double)(delivered - rs->last_delivered) / secs,
          (cpu - rs->last_cpu) / secs, queued,
          st->paused_ms - rs->last_paused_ms, peak);
  rs->last_ns = now;
  rs->last_read = read;
  rs->last_delivered = delivered;
  rs->last_paused_ms = st->paused_ms;
  rs->last_cpu = cpu;
}

void run_stats_total(const run_stats *rs, const pipeline_stats *st)
{
  double secs = (double)(uv_hrtime() - rs->started_ns) / 1e9, peak, cpu;
  uint64_t read, delivered, queued;
  char per_million[64] = "";

  totals(st, &read, &delivered, &queued);
  cpu = cpu_seconds(&peak);
  if (cpu < 0) return;
  if (secs <= 0) secs = 1e-9;
  /* Below RUN_STATS_PER_MILLION_MIN records the start's cost is most of
   * the CPU time, and a figure per million records would mislead. */
  if (read >= RUN_STATS_PER_MILLION_MIN)
    snprintf(per_million, sizeof per_million, " (%.2f s per million records "
             "read)", cpu * 1e6 / (double)read);
  log_msg("run: %.2f s; %" PRIu64 " records read (%.0f/s), %" PRIu64
          " delivered (%.0f/s); CPU %.2f s%s; peak RSS %.1f MiB", secs, read,
          (double)read / secs, delivered, (double)delivered / secs, cpu,
          per_million, peak);
}
