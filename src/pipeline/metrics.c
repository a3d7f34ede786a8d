/* metrics.c - see metrics.h. */
#include "metrics.h"

#include "metrics_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* One metric: a uint64_t at `off` in each input's or output's stats.
 * Prometheus wants every sample of a name together, under one HELP and
 * TYPE: so names go outside, inputs or outputs inside. */
typedef struct {
  const char *name, *type, *help;
  size_t off;
  int only; /* which of them have it: see has() */
} family;

enum { ALL, TRANSPORT, DISK_BUFFER };

#define IN(f) offsetof(pipeline_input_stats, f)
#define OUT(f) offsetof(pipeline_output_stats, f)

static const family input_families[] = {
  {"lumberjit_input_records_total", "counter", "Records read.", IN(records), ALL},
  {"lumberjit_input_overlong_records_total", "counter",
   "Records longer than max_line.", IN(overlong), ALL},
  {"lumberjit_input_truncated_pieces_total", "counter",
   "Pieces of overlong records cut off.", IN(truncated), ALL},
  {"lumberjit_input_dead_letter_records_total", "counter",
   "The input's records sent to the dead-letter path.", IN(dead), ALL},
  {"lumberjit_input_dead_letter_pieces_total", "counter",
   "Dead letters of the pieces of its records longer than max_line "
   "(long_lines = dead_letter); each such record counts once in "
   "lumberjit_input_dead_letter_records_total.", IN(dead_pieces), ALL},
  {"lumberjit_input_messages_total", "counter",
   "Messages made of the input's records (by its decoder).", IN(messages),
   ALL},
  {"lumberjit_input_empty_records_total", "counter",
   "Records the decoder made no message of.", IN(empty), ALL},
};

static const family output_families[] = {
  {"lumberjit_output_matched_messages_total", "counter",
   "Messages the output's matcher took.", OUT(matched), ALL},
  {"lumberjit_output_delivered_records_total", "counter",
   "Records written (the kernel took them) or acknowledged by the broker.",
   OUT(delivered), ALL},
  {"lumberjit_output_failed_records_total", "counter",
   "Records dead-lettered: encoding or writing failed.", OUT(failed), ALL},
  {"lumberjit_output_skipped_records_total", "counter",
   "Records the encoder chose not to write.", OUT(skipped), ALL},
  {"lumberjit_output_released_records_total", "counter",
   "Records left unacknowledged at a stop, for the next run to read again.",
   OUT(released), ALL},
  {"lumberjit_output_queued_records", "gauge",
   "Records in the output's queue.", OUT(queued_records), ALL},
  {"lumberjit_output_queued_bytes", "gauge",
   "Bytes the output's queue holds, its index included.", OUT(queued_bytes), ALL},
  {"lumberjit_output_sent_records_total", "counter",
   "Records handed to the transport (librdkafka).", OUT(tx.sent), TRANSPORT},
  {"lumberjit_output_refused_records_total", "counter",
   "Records the broker refused for good (dead-lettered).", OUT(tx.refused),
   TRANSPORT},
  {"lumberjit_output_in_flight_records", "gauge",
   "Records the transport (librdkafka) holds, not yet acknowledged.",
   OUT(tx.in_flight), TRANSPORT},
  {"lumberjit_output_in_flight_bytes", "gauge",
   "Their payloads and keys.", OUT(tx.in_flight_bytes), TRANSPORT},
  {"lumberjit_output_disk_buffer_records", "gauge",
   "Records in the disk buffer.", OUT(tx.disk_records), DISK_BUFFER},
  {"lumberjit_output_disk_buffer_bytes", "gauge",
   "Bytes the disk buffer's records take.", OUT(tx.disk_bytes), DISK_BUFFER},
  {"lumberjit_output_disk_buffer_put_records_total", "counter",
   "Records put in the disk buffer.", OUT(tx.disk_put), DISK_BUFFER},
  {"lumberjit_output_disk_buffer_delivered_records_total", "counter",
   "Records delivered from the disk buffer.", OUT(tx.disk_delivered),
   DISK_BUFFER},
  {"lumberjit_output_disk_buffer_dropped_records_total", "counter",
   "Records the full disk buffer dropped, oldest first (when_full = "
   "\"drop_oldest\").", OUT(tx.disk_dropped), DISK_BUFFER},
};

/* Whether an input (out NULL) or output has family `only`'s samples. */
static bool has(int only, const pipeline_output_stats *out)
{
  switch (only) {
  case TRANSPORT: return out && out->has_tx;
  case DISK_BUFFER: return out && out->has_tx && out->tx.has_disk_buffer;
  default: return true;
  }
}

/* A label: backslash, double quote and newline escaped in its value. */
bool metrics_label(buf *b, const char *key, const char *value, bool first)
{
  bool ok = buf_appendf(b, "%s%s=\"", first ? "{" : ",", key);

  for (const char *p = value; ok && *p; p++) {
    if (*p == '\\') ok = buf_append(b, "\\\\", 2);
    else if (*p == '"') ok = buf_append(b, "\\\"", 2);
    else if (*p == '\n') ok = buf_append(b, "\\n", 2);
    else ok = buf_append(b, p, 1);
  }
  return ok && buf_append(b, "\"", 1);
}

static bool put_label(buf *b, const char *key, const char *value)
{
  return metrics_label(b, key, value, true);
}

bool metrics_head(buf *b, const char *name, const char *type,
                  const char *help)
{
  return buf_appendf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static bool put_family(buf *b, const family *f, const void *items,
                       size_t size, size_t n, bool inputs)
{
  bool headed = false, ok = true;

  for (size_t i = 0; ok && i < n; i++) {
    const char *item = (const char *)items + i * size;
    const pipeline_input_stats *in = inputs ? (const void *)item : NULL;
    const pipeline_output_stats *out = inputs ? NULL : (const void *)item;
    uint64_t v;
    if (!has(f->only, out)) continue;
    if (!headed && !(ok = metrics_head(b, f->name, f->type, f->help))) break;
    headed = true;
    memcpy(&v, item + f->off, sizeof v);
    ok = buf_appendf(b, "%s", f->name) &&
         put_label(b, inputs ? "input" : "output", inputs ? in->name : out->name) &&
         buf_appendf(b, "} %" PRIu64 "\n", v);
  }
  return ok;
}

#define FILTER(f) offsetof(pipeline_filter_stats, f)

static const family filter_families[] = {
  {"lumberjit_filter_matched_messages_total", "counter",
   "Messages the filter's matcher took.", FILTER(matched), ALL},
  {"lumberjit_filter_injected_messages_total", "counter",
   "Messages the filter injected (its timer_event's too).", FILTER(injected),
   ALL},
  {"lumberjit_filter_dropped_messages_total", "counter",
   "Messages an inline filter took and replaced by nothing.",
   FILTER(dropped), ALL},
  {"lumberjit_filter_failed_messages_total", "counter",
   "Messages the filter rejected or failed on (inline: dead-lettered).",
   FILTER(failed), ALL},
  {"lumberjit_filter_timer_events_total", "counter",
   "Calls of the filter's timer_event, on every worker.", FILTER(ticks), ALL},
  {"lumberjit_filter_failed_timer_events_total", "counter",
   "Calls of its timer_event that failed.", FILTER(ticks_failed), ALL},
};

static bool put_filters(buf *b, const pipeline_stats *st)
{
  bool ok = true;

  for (size_t k = 0; ok && st->nfilters &&
                     k < sizeof filter_families / sizeof *filter_families; k++) {
    const family *f = &filter_families[k];
    ok = metrics_head(b, f->name, f->type, f->help);
    for (size_t i = 0; ok && i < st->nfilters; i++) {
      uint64_t v;
      memcpy(&v, (const char *)&st->filters[i] + f->off, sizeof v);
      ok = buf_appendf(b, "%s", f->name) &&
           put_label(b, "filter", st->filters[i].name) &&
           buf_appendf(b, "} %" PRIu64 "\n", v);
    }
  }
  return ok;
}

/* plugin.h: a declared figure is a counter when its name says so. */
static bool is_counter(const char *name)
{
  size_t n = strlen(name);

  return n > 6 && strcmp(name + n - 6, "_total") == 0;
}

/* The input types' declared counters and gauges (plugin_counter): each
 * name once, under the HELP of its first input, with every input that has
 * it. */
static bool put_type_counters(buf *b, const pipeline_stats *st)
{
  bool ok = true;

  for (size_t i = 0; ok && i < st->ninputs; i++)
    for (size_t c = 0; ok && st->inputs[i].counters &&
                       st->inputs[i].counters[c].metric; c++) {
      const char *name = st->inputs[i].counters[c].metric;
      bool seen = false;
      for (size_t j = 0; j < i && !seen; j++)
        for (size_t d = 0; !seen && st->inputs[j].counters &&
                           st->inputs[j].counters[d].metric; d++)
          seen = strcmp(st->inputs[j].counters[d].metric, name) == 0;
      if (seen) continue;
      ok = metrics_head(b, name, is_counter(name) ? "counter" : "gauge",
                        st->inputs[i].counters[c].help);
      for (size_t j = i; ok && j < st->ninputs; j++)
        for (size_t d = 0; ok && st->inputs[j].counters &&
                           st->inputs[j].counters[d].metric; d++)
          if (strcmp(st->inputs[j].counters[d].metric, name) == 0)
            ok = buf_appendf(b, "%s", name) &&
                 put_label(b, "input", st->inputs[j].name) &&
                 buf_appendf(b, "} %" PRIu64 "\n", st->inputs[j].values[d]);
    }
  return ok;
}

/* Latency quantiles: a summary without its sum and count (the histogram
 * keeps neither); typed summary, as a quantile label must be (promtool
 * check metrics). transport: the transport's delivery latency, for outputs that
 * have one; else the latency from read to acknowledgement, for outputs
 * that timed a record. */
static bool put_latency(buf *b, const pipeline_stats *st, bool transport)
{
  static const char *const q[] = {"0.5", "0.95", "0.99", "0.999", "1"};
  const char *name = transport ? "lumberjit_output_delivery_latency_seconds"
                               : "lumberjit_output_latency_seconds";
  bool ok = true, headed = false;

  for (size_t i = 0; ok && i < st->noutputs; i++) {
    const pipeline_output_stats *o = &st->outputs[i];
    if (transport ? !o->has_tx : !o->timed) continue;
    if (!headed)
      ok = metrics_head(b, name, "summary", transport
                    ? "From handing a record on to its acknowledgement, by "
                      "quantile; quantile=\"1\" is the largest."
                    : "From a record's read to its acknowledgement (written, "
                      "or delivered), by quantile; quantile=\"1\" is the "
                      "largest.");
    headed = true;
    for (size_t j = 0; ok && j < LATENCY_REPORTED; j++)
      ok = buf_appendf(b, "%s", name) && put_label(b, "output", o->name) &&
           buf_appendf(b, ",quantile=\"%s\"} %.6f\n", q[j],
               (transport ? o->tx.latency_ms[j] : o->latency_ms[j]) / 1e3);
  }
  return ok;
}

static bool put_total(buf *b, const char *name, const char *type,
                      const char *help, uint64_t v)
{
  return metrics_head(b, name, type, help) &&
         buf_appendf(b, "%s %" PRIu64 "\n", name, v);
}

bool metrics_format(buf *b, const pipeline_stats *st)
{
  bool ok = true;

  for (size_t i = 0; ok && i < sizeof input_families / sizeof *input_families; i++)
    ok = put_family(b, &input_families[i], st->inputs, sizeof *st->inputs,
                    st->ninputs, true);
  ok = ok && put_type_counters(b, st) && put_filters(b, st) &&
       metrics_plugins(b, st);
  for (size_t i = 0; ok && i < sizeof output_families / sizeof *output_families; i++)
    ok = put_family(b, &output_families[i], st->outputs, sizeof *st->outputs,
                    st->noutputs, false);
  return ok && put_latency(b, st, false) && put_latency(b, st, true) &&
         put_total(b, "lumberjit_dead_letter_records_total", "counter",
                   "Records sent to the dead-letter path.", st->dead_letters) &&
         put_total(b, "lumberjit_dead_letter_bytes_total", "counter",
                   "Bytes of the dead-letter records made (their JSON lines).",
                   st->dead_letter_bytes) &&
         put_total(b, "lumberjit_dead_letter_written_records_total", "counter",
                   "Dead-letter records written.", st->dead_letters_written) &&
         put_total(b, "lumberjit_dead_letter_refused_records_total", "counter",
                   "Dead-letter records refused: the path was full "
                   "(dead_letter_max_bytes, dead_letter_keep).",
                   st->dead_letters_refused) &&
         put_total(b, "lumberjit_lost_records_total", "counter",
                   "Records neither written nor dead-lettered (the run "
                   "exits with status 1).", st->dead_letters_lost) &&
         put_total(b, "lumberjit_unrouted_messages_total", "counter",
                   "Messages no output matched.", st->unrouted) &&
         put_total(b, "lumberjit_inputs_paused", "gauge",
                   "1 while the inputs are held for full outputs.", st->paused) &&
         put_total(b, "lumberjit_input_pauses_total", "counter",
                   "Times the inputs were held.", st->pauses) &&
         metrics_head(b, "lumberjit_inputs_paused_seconds_total", "counter",
                  "Time the inputs were held.") &&
         buf_appendf(b, "lumberjit_inputs_paused_seconds_total %.3f\n",
                    st->paused_ms / 1e3) &&
         metrics_process(b);
}

int metrics_write(const char *path, const pipeline_stats *st, char *err,
                  size_t errlen)
{
  char tmp[4096];
  buf b = {0};
  int fd, rc = -1;

  if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
    snprintf(err, errlen, "%s: the path is too long", path);
    return -1;
  }
  if (!metrics_format(&b, st)) {
    snprintf(err, errlen, "out of memory");
    buf_free(&b);
    return -1;
  }
  errno = 0;
  fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    bool written = write(fd, b.data, b.len) == (ssize_t)b.len;
    if (close(fd) == 0 && written && rename(tmp, path) == 0) rc = 0;
  }
  if (rc != 0) {
    snprintf(err, errlen, "cannot write %s: %s", fd < 0 ? tmp : path,
             strerror(errno ? errno : EIO));
    unlink(tmp);
  }
  buf_free(&b);
  return rc;
}
