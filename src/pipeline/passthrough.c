/* passthrough.c - see passthrough.h. */
#include "passthrough.h"

#include <stdio.h>
#include <stdlib.h>

#include "log.h"
#include "matcher.h"
#include "plugin.h"

/* The head of output o's records when it is the same for every message
 * (output_route.fixed), made once; false when it is not, or cannot be made. */
static bool fixed_head(pl_output *o, char *err, size_t errlen)
{
  const config_plugin *p = o->cfg;
  const output_route *route;
  void *state;
  bool fixed;
  msg m;

  if (p->type->output->route(p, &route, &state, err, errlen) != 0) return false;
  fixed = route->fixed && route->fixed(state);
  if (fixed) {
    msg_init(&m);
    fixed = route->head(state, &m, &o->pass_head) == NULL;
    msg_free(&m);
  }
  route->free(state);
  return fixed;
}

/* Whether output o takes every record (*all) or none, as read: false when
 * its records need a worker. */
static bool output_passes(pl_output *o, bool *all, char *err, size_t errlen)
{
  const config_plugin *p = o->cfg;
  matcher *mt = matcher_compile(p->message_matcher, err, errlen);
  bool constant = mt && matcher_constant(mt, all);

  matcher_free(mt);
  if (!constant || !*all) return constant;
  if (p->encoder) return false;
  return !p->type->output->route || fixed_head(o, err, errlen);
}

int passthrough_plan(pipeline *pl, char *err, size_t errlen)
{
  char why[256];

  if (pl->nfilters) return 0;
  for (size_t i = 0; i < pl->noutputs; i++)
    if (!output_passes(&pl->outputs[i], &pl->outputs[i].passes, why,
                       sizeof why))
      return 0;
  pl->passed.outputs = calloc(pl->noutputs ? pl->noutputs : 1,
                              sizeof *pl->passed.outputs);
  if (!pl->passed.outputs) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  pl->pass_lines = true;
  for (size_t i = 0; i < pl->noutputs; i++) {
    pl_output *o = &pl->outputs[i];
    if (o->passes && !(o->newline && !o->pass_head.len &&
                       output_takes_lines(&o->sink)))
      pl->pass_lines = false;
  }
  for (size_t i = 0; i < pl->ninputs; i++) {
    pl_input *pi = &pl->inputs[i];
    pi->passthrough = !pi->ri.decoder_name;
    /* Sources made as their input was built (a file_input's) learn it. */
    for (pl_source *src = pi->sources; src; src = src->next)
      src->in.handler = pipeline_input_handler(pi);
    if (pi->passthrough)
      log_debug("input '%s': its records go straight to the outputs (no "
                "decoder, filter or encoder touches them)", pi->name);
  }
  return 0;
}

/* Where src's bytes at position come from, read at the time of the read
 * they are cut from (or a benchmark's due time for them). */
static msg_origin origin(pl_source *src, const char *bytes, size_t len,
                         uint64_t position)
{
  pipeline *pl = src->owner->pl;
  msg_origin o = {src->owner->name, position, src->in.is_offset, bytes, len,
                  src->ticket, src->names_file ? src->in.path : NULL,
                  src->from, src->read_us};

  if (pl->probe.due) o.read_us = pl->probe.due(pl->probe.ud, &src->in, position);
  else if (!o.read_us) o.read_us = src->read_us = uv_hrtime() / 1000;
  return o;
}

/* Every output that passes takes every message the passthrough makes:
 * counted once a read, not per record. */
void passthrough_record(pl_source *src, const char *bytes, size_t len,
                        uint64_t position, unsigned piece)
{
  pl_input *pi = src->owner;
  pipeline *pl = pi->pl;
  msg_origin o = origin(src, bytes, len, position);

  if (!router_piece_goes_on(&pi->ri, &pl->passed, &pl->dl, &o, piece))
    return;
  pl->passed.messages++;
  for (size_t i = 0; i < pl->noutputs; i++) {
    pl_output *out = &pl->outputs[i];
    buf *b = &out->sink.pending;
    size_t head = out->pass_head.len;
    if (!out->passes) continue;
    if ((head && !buf_append(b, out->pass_head.data, head)) ||
        !buf_append(b, bytes, len) ||
        (out->newline && !buf_append(b, "\n", 1))) {
      b->len = out->sink.committed;
      pipeline_record_lost(pl, &src->in, position);
      continue;
    }
    if (head) output_commit_routed(&out->sink, &o, (uint32_t)head);
    else output_commit(&out->sink, &o, false);
  }
}

void passthrough_lines(pl_source *src, const char *bytes, size_t len,
                       size_t count, uint64_t position)
{
  pipeline *pl = src->owner->pl;
  msg_origin o = origin(src, bytes, len, position);

  pl->passed.records += count;
  pl->passed.messages += count;
  for (size_t i = 0; i < pl->noutputs; i++)
    if (pl->outputs[i].passes)
      output_commit_lines(&pl->outputs[i].sink, &o, count);
}

void passthrough_read_done(pl_source *src)
{
  pipeline *pl = src->owner->pl;
  router_counts *c = &pl->passed;
  router_output_counts *outputs = c->outputs;
  bool taken = false;

  for (size_t i = 0; i < pl->noutputs; i++) {
    outputs[i] = (router_output_counts){0};
    if (!pl->outputs[i].passes) continue;
    outputs[i].matched = c->messages;
    taken = true;
  }
  if (!taken) c->unrouted = c->messages;
  src->read_us = 0;
  pipeline_add_counts(pl, src->owner, c);
  *c = (router_counts){.outputs = outputs};
  pl->jobs_back++;
  pl->passed_unflushed = true;
}

void passthrough_free(pipeline *pl)
{
  for (size_t i = 0; i < pl->noutputs; i++) buf_free(&pl->outputs[i].pass_head);
  free(pl->passed.outputs);
  pl->passed.outputs = NULL;
}
