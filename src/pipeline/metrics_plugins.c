/* metrics_plugins.c - the decoders', encoders' and filters' families: what
 * their sandboxes counted (sandbox.h: sandbox_stats), each plugin's
 * instances on every worker added up, labelled plugin="NAME" and
 * kind="decoder|encoder|filter". */
#include "metrics.h"
#include "metrics_internal.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "pipeline.h"

#define SB(f) offsetof(sandbox_stats, f)

/* Counters are uint64_t, memory figures size_t; cpu_ns is shown in
 * seconds. */
typedef enum { COUNT, BYTES, SECONDS } unit;

static const struct {
  const char *name, *type, *help;
  size_t off;
  unit u;
} families[] = {
  {"lumberjit_plugin_calls_total", "counter",
   "Calls of the plugin: records, messages, timer_events.", SB(calls), COUNT},
  {"lumberjit_plugin_rejected_calls_total", "counter",
   "Calls that returned -1 (or an encoder's result that is no string).",
   SB(rejected), COUNT},
  {"lumberjit_plugin_skipped_calls_total", "counter",
   "Encoder calls that returned -2: the record is not written.", SB(skipped),
   COUNT},
  {"lumberjit_plugin_stops_total", "counter",
   "Times the plugin stopped: max_failures failed calls in a row, or its "
   "state could not be rebuilt.", SB(stops), COUNT},
  {"lumberjit_plugin_restarts_total", "counter",
   "New states: rebuilt after a failed call, or restarted after a stop.",
   SB(restarts), COUNT},
  {"lumberjit_plugin_cpu_seconds_total", "counter",
   "CPU time of the worker threads in the plugin's calls.", SB(cpu_ns),
   SECONDS},
  {"lumberjit_plugin_memory_bytes", "gauge",
   "Bytes the plugin's Lua states hold now, its instances added up.",
   SB(memory), BYTES},
  {"lumberjit_plugin_memory_peak_bytes", "gauge",
   "The most bytes one instance's Lua state held (memory_limit bounds each).",
   SB(memory_peak), BYTES},
};

const char *metrics_failure_cause(sandbox_limit l)
{
  static const char *const causes[SANDBOX_LIMITS] = {
    [SANDBOX_LIMIT_NONE] = "error", [SANDBOX_LIMIT_INSTRUCTIONS] = "instructions",
    [SANDBOX_LIMIT_CPU] = "cpu", [SANDBOX_LIMIT_MEMORY] = "memory",
    [SANDBOX_LIMIT_OUTPUT] = "output", [SANDBOX_LIMIT_INPUT] = "input",
  };

  return causes[l];
}

static bool put_labels(buf *b, const char *name, const pipeline_plugin_stats *p)
{
  return buf_append_str(b, name) && metrics_label(b, "plugin", p->name, true) &&
         metrics_label(b, "kind", p->role, false);
}

static bool put_value(buf *b, const pipeline_plugin_stats *p, size_t off,
                      unit u)
{
  const char *at = (const char *)&p->sb + off;
  uint64_t n;
  size_t bytes;

  if (u == BYTES) {
    memcpy(&bytes, at, sizeof bytes);
    return buf_appendf(b, "} %zu\n", bytes);
  }
  memcpy(&n, at, sizeof n);
  return u == SECONDS ? buf_appendf(b, "} %.6f\n", (double)n / 1e9)
                      : buf_appendf(b, "} %" PRIu64 "\n", n);
}

static bool put_failures(buf *b, const pipeline_stats *st)
{
  const char *name = "lumberjit_plugin_failures_total";
  bool ok = metrics_head(b, name, "counter",
                         "Failed calls by cause: the limit broken, or error "
                         "(a Lua error); input: records refused before the "
                         "call, longer than input_limit.");

  for (size_t i = 0; ok && i < st->nplugins; i++)
    for (size_t c = 0; ok && c < SANDBOX_LIMITS; c++)
      ok = put_labels(b, name, &st->plugins[i]) &&
           metrics_label(b, "cause", metrics_failure_cause(c), false) &&
           buf_appendf(b, "} %" PRIu64 "\n", st->plugins[i].sb.failures[c]);
  return ok;
}

/* lumberjit_plugin_call_cpu_seconds: a histogram, its buckets cumulative
 * as Prometheus's are. */
static bool put_cpu_histogram(buf *b, const pipeline_stats *st)
{
  const char *name = "lumberjit_plugin_call_cpu_seconds";
  bool ok = metrics_head(b, name, "histogram",
                         "CPU per call, each batch's calls counted at their "
                         "average (the clock is read per batch).");

  for (size_t i = 0; ok && i < st->nplugins; i++) {
    const sandbox_stats *s = &st->plugins[i].sb;
    uint64_t below = 0;
    for (size_t k = 0; ok && k < SANDBOX_CPU_BUCKETS; k++) {
      char le[32];
      below += s->cpu_calls[k];
      if (k < SANDBOX_CPU_BUCKETS - 1)
        snprintf(le, sizeof le, "%g", (double)sandbox_cpu_bucket_ns[k] / 1e9);
      else
        snprintf(le, sizeof le, "+Inf");
      ok = put_labels(b, "lumberjit_plugin_call_cpu_seconds_bucket",
                      &st->plugins[i]) &&
           metrics_label(b, "le", le, false) &&
           buf_appendf(b, "} %" PRIu64 "\n", below);
    }
    ok = ok && put_labels(b, "lumberjit_plugin_call_cpu_seconds_sum",
                          &st->plugins[i]) &&
         buf_appendf(b, "} %.9f\n", (double)s->cpu_ns / 1e9) &&
         put_labels(b, "lumberjit_plugin_call_cpu_seconds_count",
                    &st->plugins[i]) &&
         buf_appendf(b, "} %" PRIu64 "\n", below);
  }
  return ok;
}

bool metrics_plugins(buf *b, const pipeline_stats *st)
{
  bool ok = true;

  if (!st->nplugins) return true;
  for (size_t k = 0; ok && k < sizeof families / sizeof *families; k++) {
    ok = metrics_head(b, families[k].name, families[k].type, families[k].help);
    for (size_t i = 0; ok && i < st->nplugins; i++)
      ok = put_labels(b, families[k].name, &st->plugins[i]) &&
           put_value(b, &st->plugins[i], families[k].off, families[k].u);
  }
  return ok && put_failures(b, st) && put_cpu_histogram(b, st);
}
