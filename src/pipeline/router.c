/* router.c - see router.h. */
#include "router.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* An inline filter failed on m: it goes to the dead-letter path. */
static void filter_failed(void *ud, const router_filter *f, const msg *m,
                          const char *reason)
{
  router *r = ud;

  dead_letter_write(r->dl, "filter", f->name, reason, &m->origin);
}

void router_init(router *r, router_output *outputs, size_t noutputs,
                 router_filter *filters, size_t nfilters, dead_letter *dl)
{
  r->outputs = outputs;
  r->noutputs = noutputs;
  filter_stage_init(&r->stage, filters, nfilters, filter_failed, r);
  r->dl = dl;
  r->batch = (msg_batch){0};
  r->counts = NULL;
  r->nwaiting = 0;
  r->now_ns = 0;
  r->chosen = NULL;
  r->matched = NULL;
  r->choice_cap = 0;
  msg_init(&r->plain);
}

static void encoding_failed(router *r, size_t out, const msg *m,
                            const char *stage, const char *name,
                            const char *reason)
{
  r->counts->outputs[out].failed++;
  dead_letter_write(r->dl, stage, name, reason, &m->origin);
}

/* Before the i-th message chosen for the output being delivered to: its
 * head (an output_route), if the output takes one. False leaves the message out. */
static bool delivery_begin(void *ud, size_t i)
{
  router *r = ud;
  router_output *o = &r->outputs[r->out];
  const msg *m = r->chosen[i];
  buf *b = output_buf(o->sink);
  const char *why;

  r->start = b->len;
  r->head = 0;
  if (!o->route) return true;
  why = o->route->head(o->route_state, m, b);
  if (why) {
    b->len = r->start;
    encoding_failed(r, r->out, m, "output", o->name, why);
    return false;
  }
  r->head = b->len - r->start;
  return true;
}

/* After it, its bytes written: the record is committed to the sink. */
static void delivery_end(void *ud, size_t i, const sandbox_result *res)
{
  router *r = ud;
  router_output *o = &r->outputs[r->out];
  const msg *m = r->chosen[i];
  buf *b = output_buf(o->sink);

  if (res->status == SANDBOX_SKIPPED) {
    b->len = r->start;
    r->counts->outputs[r->out].skipped++;
    return;
  }
  if (res->status != SANDBOX_OK) {
    b->len = r->start;
    encoding_failed(r, r->out, m, "encoder", o->encoder_name, res->reason);
    return;
  }
  if (o->newline) buf_append(b, "\n", 1);
  if (r->head) output_commit_routed(o->sink, &m->origin, (uint32_t)r->head);
  else output_commit(o->sink, &m->origin, false);
}

/* Encodes the n chosen messages for output `out` into its sink's queue:
 * through its encoder, all in one batch, else as their payloads. */
static void deliver(router *r, size_t out, size_t n)
{
  router_output *o = &r->outputs[out];
  sandbox_each each = {delivery_begin, delivery_end, r};
  sandbox_result ok = {.status = SANDBOX_OK};

  r->out = out;
  if (o->encoder) {
    sandbox_encode_many(o->encoder, r->chosen, n, output_buf(o->sink), &each);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    const msg *m = r->chosen[i];
    if (!delivery_begin(r, i)) continue;
    buf_append(output_buf(o->sink), msg_str(m, m->payload), m->payload.len);
    delivery_end(r, i, &ok);
  }
}

static bool grow_choice(router *r, uint32_t n)
{
  const msg **chosen;
  bool *matched;

  if (n <= r->choice_cap) return true;
  chosen = realloc(r->chosen, n * sizeof *chosen);
  if (chosen) r->chosen = chosen;
  matched = realloc(r->matched, n * sizeof *matched);
  if (matched) r->matched = matched;
  if (!chosen || !matched) return false;
  r->choice_cap = n;
  return true;
}

/* Each message of the batch goes to every output whose matcher takes it,
 * output by output, in the batch's order. */
static void route(router *r)
{
  uint32_t n = r->batch.len;

  if (n == 0) return;
  if (!grow_choice(r, n)) {
    r->counts->dead += n;
    for (uint32_t i = 0; i < n; i++)
      dead_letter_write(r->dl, "router", "-", "out of memory",
                        &r->batch.msgs[i].origin);
    return;
  }
  memset(r->matched, 0, n * sizeof *r->matched);
  for (size_t out = 0; out < r->noutputs; out++) {
    size_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
      const msg *m = &r->batch.msgs[i];
      if (!matcher_eval(r->outputs[out].match, m)) continue;
      r->matched[i] = true;
      r->chosen[k++] = m;
    }
    r->counts->outputs[out].matched += k;
    if (k) deliver(r, out, k);
  }
  for (uint32_t i = 0; i < n; i++) r->counts->unrouted += !r->matched[i];
}

/* The batch goes through the filters from `first` on, then to the
 * outputs, and is emptied. */
static void finish_batch(router *r, size_t first)
{
  r->stage.counts = r->counts->filters;
  filter_stage_run(&r->stage, &r->batch, first);
  route(r);
  msg_batch_clear(&r->batch);
  msg_batch_trim(&r->batch, ROUTER_BATCH);
  r->decoded = 0;
  r->now_ns = 0;
}

/* Routes the batch's messages and empties it. */
static void route_all(router *r)
{
  finish_batch(r, 0);
}

void router_tick(router *r, size_t f, int64_t now_ns, bool shutdown)
{
  router_flush(r);
  r->stage.counts = r->counts->filters;
  filter_stage_tick(&r->stage, f, now_ns, shutdown, &r->batch);
  route(r);
  msg_batch_clear(&r->batch);
  msg_batch_trim(&r->batch, ROUTER_BATCH);
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

/* The decoder is done with the i-th record waiting: its messages are the
 * batch's last, or it goes to the dead letters. */
static void decoded(void *ud, size_t i, const sandbox_result *res)
{
  router *r = ud;
  router_input *ri = r->waiting_input;

  if (res->status != SANDBOX_OK) {
    r->counts->dead++;
    dead_letter_write(r->dl, "decoder", ri->decoder_name, res->reason,
                      &r->waiting[i]);
    return;
  }
  r->counts->messages += r->batch.len - r->decoded;
  r->counts->empty += r->batch.len == r->decoded;
  for (uint32_t k = r->decoded; k < r->batch.len; k++)
    add_origin(ri, &r->batch.msgs[k]);
  r->decoded = r->batch.len;
  /* Records that each make many messages are routed as they come, so the
   * batch holds about ROUTER_BATCH messages, not that many records' worth.
   * The decoder takes up its next record after this, where the batch then
   * ends. */
  if (r->batch.len >= ROUTER_BATCH) route_all(r);
}

void router_flush(router *r)
{
  if (r->nwaiting) {
    sandbox_each each = {NULL, decoded, r};
    r->decoded = r->batch.len;
    sandbox_decode_many(r->waiting_input->decoder, r->waiting, r->nwaiting,
                        &r->batch, &each);
    r->nwaiting = 0;
  }
  route_all(r);
}

bool router_long_piece_goes_on(const router_input *ri, router_counts *c,
                               dead_letter *dl, const msg_origin *o,
                               unsigned piece)
{
  if (piece == 1) c->records++;
  c->overlong += piece == 1;
  if (piece > 1 && ri->long_lines == LONG_LINES_TRUNCATE) {
    c->truncated++;
    return false;
  }
  if (piece && ri->long_lines == LONG_LINES_DEAD_LETTER) {
    char reason[128];
    snprintf(reason, sizeof reason, "line longer than max_line (%zu bytes): "
             "piece %u", ri->max_line, piece);
    c->dead += piece == 1; /* a record, however many pieces */
    c->dead_pieces++;
    dead_letter_write(dl, "input", ri->name, reason, o);
    return false;
  }
  return true;
}

void router_record(router *r, router_input *ri, const msg_origin *o,
                   unsigned piece)
{
  router_counts *c = r->counts;

  if (!router_piece_goes_on(ri, c, r->dl, o, piece)) return;
  if ((r->nwaiting && ri != r->waiting_input) ||
      r->nwaiting == ROUTER_BATCH || r->batch.len >= ROUTER_BATCH)
    router_flush(r);
  if (ri->decoder) {
    r->waiting_input = ri;
    r->waiting[r->nwaiting++] = *o;
    return;
  }
  msg_reset(&r->plain);
  msg_store(&r->plain, o->bytes, o->len, &r->plain.payload);
  if (!r->now_ns) r->now_ns = msg_now_ns(); /* one reading a batch */
  r->plain.timestamp = r->now_ns;
  r->plain.origin = *o;
  add_origin(ri, &r->plain);
  if (!msg_batch_push(&r->batch, &r->plain)) {
    c->dead++;
    dead_letter_write(r->dl, "input", ri->name, "out of memory", o);
  } else {
    c->messages++;
  }
}

void router_input_free(router_input *ri)
{
  sandbox_destroy(ri->decoder);
  ri->decoder = NULL;
}

void router_free(router *r)
{
  filter_stage_free(&r->stage);
  for (size_t i = 0; i < r->noutputs; i++) {
    sandbox_destroy(r->outputs[i].encoder);
    matcher_free(r->outputs[i].match);
    if (r->outputs[i].route) r->outputs[i].route->free(r->outputs[i].route_state);
  }
  msg_batch_free(&r->batch);
  msg_free(&r->plain);
  free(r->chosen);
  free(r->matched);
}
