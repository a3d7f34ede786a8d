/* stats_json.c - see stats_json.h. */
#include "stats_json.h"

#include <inttypes.h>
#include <string.h>

#include "json_message.h"
#include "metrics.h"

/* "NAME":{ after a comma when it is not the first. */
static bool open_named(buf *b, const char *name, bool first)
{
  return buf_append_str(b, first ? "" : ",") &&
         json_quoted(b, name, strlen(name)) && buf_append_str(b, ":{");
}

/* "key":N, after a comma unless it is the object's first. */
static bool count(buf *b, const char *key, uint64_t v, bool first)
{
  return buf_appendf(b, "%s\"%s\":%" PRIu64, first ? "" : ",", key, v);
}

static bool input_json(buf *b, const pipeline_input_stats *in, bool first)
{
  bool ok = open_named(b, in->name, first) &&
            count(b, "records", in->records, true) &&
            count(b, "overlong", in->overlong, false) &&
            count(b, "truncated", in->truncated, false) &&
            count(b, "dead_letters", in->dead, false) &&
            count(b, "messages", in->messages, false) &&
            count(b, "empty", in->empty, false);

  for (size_t i = 0; ok && in->counters && in->counters[i].metric; i++) {
    const char *name = in->counters[i].metric;
    if (strncmp(name, "lumberjit_", 10) == 0) name += 10;
    ok = count(b, name, in->values[i], false);
  }
  if (ok && in->failure)
    ok = buf_append_str(b, ",\"failure\":") &&
         json_quoted(b, in->failure, strlen(in->failure));
  return ok && buf_append_str(b, "}");
}

static bool filter_json(buf *b, const pipeline_filter_stats *f, bool first)
{
  return open_named(b, f->name, first) &&
         count(b, "matched", f->matched, true) &&
         count(b, "injected", f->injected, false) &&
         count(b, "dropped", f->dropped, false) &&
         count(b, "failed", f->failed, false) &&
         count(b, "ticks", f->ticks, false) &&
         count(b, "ticks_failed", f->ticks_failed, false) &&
         buf_append_str(b, "}");
}

/* A decoder's, encoder's or filter's sandbox counts; the failures by
 * cause as the metrics label them (the input limit's are refusals). */
static bool plugin_json(buf *b, const pipeline_plugin_stats *p, bool first)
{
  const sandbox_stats *s = &p->sb;
  bool ok = open_named(b, p->name, first) &&
            buf_appendf(b, "\"kind\":\"%s\"", p->role) &&
            count(b, "calls", s->calls, false) &&
            count(b, "rejected", s->rejected, false) &&
            count(b, "skipped", s->skipped, false) &&
            count(b, "failed", s->failed, false) &&
            count(b, "stops", s->stops, false) &&
            count(b, "restarts", s->restarts, false) &&
            buf_appendf(b, ",\"cpu_seconds\":%.6f", (double)s->cpu_ns / 1e9) &&
            count(b, "memory_bytes", s->memory, false) &&
            count(b, "memory_peak_bytes", s->memory_peak, false) &&
            buf_append_str(b, ",\"failures\":{");

  for (size_t c = 0; ok && c < SANDBOX_LIMITS; c++)
    ok = count(b, metrics_failure_cause(c), s->failures[c], c == 0);
  return ok && buf_append_str(b, "}}");
}

/* latency_report's quantiles, in their order. */
static bool latency_json(buf *b, const double *ms)
{
  return buf_appendf(b, ",\"latency_ms\":{\"p50\":%.3f,\"p95\":%.3f,"
                     "\"p99\":%.3f,\"p999\":%.3f,\"max\":%.3f}",
                     ms[0], ms[1], ms[2], ms[3], ms[4]);
}

static bool transport_json(buf *b, const output_tx_stats *tx)
{
  bool ok = buf_append_str(b, ",\"transport\":{") &&
            count(b, "sent", tx->sent, true) &&
            count(b, "delivered", tx->delivered, false) &&
            count(b, "refused", tx->refused, false) &&
            count(b, "in_flight", tx->in_flight, false) &&
            count(b, "in_flight_bytes", tx->in_flight_bytes, false) &&
            count(b, "connects", tx->connects, false) &&
            count(b, "connect_failures", tx->connect_failures, false);

  if (ok && tx->has_disk_buffer)
    ok = count(b, "disk_records", tx->disk_records, false) &&
         count(b, "disk_bytes", tx->disk_bytes, false) &&
         count(b, "disk_put", tx->disk_put, false) &&
         count(b, "disk_delivered", tx->disk_delivered, false);
  return ok && buf_append_str(b, "}");
}

static bool output_json(buf *b, const pipeline_output_stats *o, bool first)
{
  bool ok = open_named(b, o->name, first) &&
            count(b, "matched", o->matched, true) &&
            count(b, "delivered", o->delivered, false) &&
            count(b, "failed", o->failed, false) &&
            count(b, "skipped", o->skipped, false) &&
            count(b, "released", o->released, false) &&
            count(b, "queued_records", o->queued_records, false) &&
            count(b, "queued_bytes", o->queued_bytes, false);

  if (ok && o->timed) ok = latency_json(b, o->latency_ms);
  if (ok && o->has_tx) ok = transport_json(b, &o->tx);
  if (ok && o->failure)
    ok = buf_append_str(b, ",\"failure\":") &&
         json_quoted(b, o->failure, strlen(o->failure));
  return ok && buf_append_str(b, "}");
}

bool stats_json(buf *b, const pipeline_stats *st)
{
  bool ok = buf_append_str(b, "{\"inputs\":{");

  for (size_t i = 0; ok && i < st->ninputs; i++)
    ok = input_json(b, &st->inputs[i], i == 0);
  ok = ok && buf_append_str(b, "},\"filters\":{");
  for (size_t i = 0; ok && i < st->nfilters; i++)
    ok = filter_json(b, &st->filters[i], i == 0);
  ok = ok && buf_append_str(b, "},\"plugins\":{");
  for (size_t i = 0; ok && i < st->nplugins; i++)
    ok = plugin_json(b, &st->plugins[i], i == 0);
  ok = ok && buf_append_str(b, "},\"outputs\":{");
  for (size_t i = 0; ok && i < st->noutputs; i++)
    ok = output_json(b, &st->outputs[i], i == 0);
  return ok && buf_append_str(b, "},\"dead_letters\":{") &&
         count(b, "records", st->dead_letters, true) &&
         count(b, "written", st->dead_letters_written, false) &&
         count(b, "lost", st->dead_letters_lost, false) &&
         count(b, "refused", st->dead_letters_refused, false) &&
         count(b, "bytes", st->dead_letter_bytes, false) &&
         buf_append_str(b, "}") && count(b, "unrouted", st->unrouted, false) &&
         buf_appendf(b, ",\"paused\":%s", st->paused ? "true" : "false") &&
         count(b, "pauses", st->pauses, false) &&
         count(b, "paused_ms", st->paused_ms, false) &&
         buf_append_str(b, "}\n");
}
