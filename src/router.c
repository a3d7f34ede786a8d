/* router.c - see router.h. */
#include "router.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static int64_t now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void router_init(router *r, router_output *outputs, size_t noutputs,
                 dead_letter *dl)
{
  r->outputs = outputs;
  r->noutputs = noutputs;
  r->dl = dl;
  r->batch = (msg_batch){0};
  r->counts = NULL;
  msg_init(&r->plain);
}

/* Encodes m for output o straight into its sink's queue. */
static void deliver(router *r, size_t out, const msg *m)
{
  router_output *o = &r->outputs[out];
  buf *b = output_buf(o->sink);

  if (o->encoder) {
    sandbox_result res;
    sandbox_encode(o->encoder, m, b, &res);
    if (res.status == SANDBOX_SKIPPED) {
      r->counts->outputs[out].skipped++;
      return;
    }
    if (res.status != SANDBOX_OK) {
      r->counts->outputs[out].failed++;
      dead_letter_write(r->dl, "encoder", o->encoder_name, res.reason,
                        &m->origin);
      return;
    }
  } else {
    buf_append(b, msg_str(m, m->payload), m->payload.len);
  }
  if (o->newline) buf_append(b, "\n", 1);
  output_commit(o->sink, &m->origin, false);
}

static void route(router *r, const msg *m)
{
  bool matched = false;

  for (size_t i = 0; i < r->noutputs; i++) {
    if (!matcher_eval(r->outputs[i].match, m)) continue;
    matched = true;
    deliver(r, i, m);
  }
  if (!matched) r->counts->unrouted++;
}

static void add_text_field(msg *m, const char *name, const char *value)
{
  msg_field *f;
  msg_span s;

  if (!name || !value || !msg_store(m, value, strlen(value), &s)) return;
  f = msg_add_field(m, name, strlen(name), MSG_STRING, 1);
  if (f) msg_field_values(m, f)[0].s = s;
}

/* Where the message came from: the file read, the sender, the listener,
 * in the fields the input names. */
static void add_origin(const router_input *ri, msg *m)
{
  add_text_field(m, ri->path_field, m->origin.file);
  add_text_field(m, ri->sender_field, m->origin.from);
  add_text_field(m, ri->listener_field, ri->name);
}

void router_record(router *r, router_input *ri, const msg_origin *o,
                   unsigned piece)
{
  router_counts *c = r->counts;
  sandbox_result res;

  if (piece <= 1) c->records++;
  c->overlong += piece == 1;
  if (piece > 1 && ri->long_lines == LONG_LINES_TRUNCATE) {
    c->truncated++;
    return;
  }
  if (piece && ri->long_lines == LONG_LINES_DEAD_LETTER) {
    char reason[128];
    snprintf(reason, sizeof reason, "line longer than max_line (%zu bytes): "
             "piece %u", ri->max_line, piece);
    c->dead++;
    dead_letter_write(r->dl, "input", ri->name, reason, o);
    return;
  }
  if (!ri->decoder) {
    msg_reset(&r->plain);
    msg_store(&r->plain, o->bytes, o->len, &r->plain.payload);
    r->plain.timestamp = now_ns();
    r->plain.origin = *o;
    add_origin(ri, &r->plain);
    route(r, &r->plain);
    return;
  }
  msg_batch_clear(&r->batch);
  sandbox_decode(ri->decoder, o, &r->batch, &res);
  if (res.status != SANDBOX_OK) {
    c->dead++;
    dead_letter_write(r->dl, "decoder", ri->decoder_name, res.reason, o);
    return;
  }
  for (uint32_t i = 0; i < r->batch.len; i++) {
    add_origin(ri, &r->batch.msgs[i]);
    route(r, &r->batch.msgs[i]);
  }
  msg_batch_trim(&r->batch, 64);
}

void router_input_free(router_input *ri)
{
  sandbox_destroy(ri->decoder);
  ri->decoder = NULL;
}

void router_free(router *r)
{
  for (size_t i = 0; i < r->noutputs; i++) {
    sandbox_destroy(r->outputs[i].encoder);
    matcher_free(r->outputs[i].match);
  }
  msg_batch_free(&r->batch);
  msg_free(&r->plain);
}
