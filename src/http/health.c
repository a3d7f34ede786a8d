/* health.c - see health.h. */
#include "health.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "json_message.h"

typedef struct {
  buf *b;
  size_t n;       /* reasons so far */
  bool ok;        /* memory held out */
} reasons;

static void add(reasons *r, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));

static void add(reasons *r, const char *fmt, ...)
{
  char text[1024];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  r->ok = r->ok && buf_append_str(r->b, r->n++ ? "," : "") &&
          json_quoted(r->b, text, strlen(text));
}

int health_report(const pipeline_stats *st, uint64_t paused_max_ms, buf *body)
{
  size_t start = body->len;
  reasons r = {body, 0, true};

  r.ok = buf_append_str(body, "{\"status\":\"failing\",\"reasons\":[");
  for (size_t i = 0; i < st->ninputs; i++)
    if (st->inputs[i].failure)
      add(&r, "input '%s': %s", st->inputs[i].name, st->inputs[i].failure);
  for (size_t i = 0; i < st->noutputs; i++)
    if (st->outputs[i].failure)
      add(&r, "output '%s': %s", st->outputs[i].name, st->outputs[i].failure);
  if (st->stopped_role)
    add(&r, "%s '%s' is stopped after max_failures failed calls in a row",
        st->stopped_role, st->stopped_name);
  if (paused_max_ms && st->paused && st->paused_now_ms > paused_max_ms)
    add(&r, "the inputs have been held for %" PRIu64 " ms (health_paused_ms "
        "%" PRIu64 "): an output does not take records as fast as they come",
        st->paused_now_ms, paused_max_ms);
  if (r.n == 0) {
    body->len = start;
    return buf_append_str(body, "{\"status\":\"ok\"}\n") ? 200 : 500;
  }
  return r.ok && buf_append_str(body, "]}\n") ? 503 : 500;
}
