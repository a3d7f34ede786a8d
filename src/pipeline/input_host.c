/*
 * input_host.c - the pipeline as input types see it (input_host.h): thin
 * accessors over pipeline_internal.h's structs, so that those can change
 * without an input type's noticing.
 */
#include "input_host.h"

#include "dead_letter.h"
#include "pipeline_internal.h"

const char *pl_input_name(const pl_input *pi) { return pi->name; }
uv_loop_t *pl_input_loop(const pl_input *pi) { return pi->pl->loop; }
void *pl_input_state(const pl_input *pi) { return pi->state; }
void pl_input_set_state(pl_input *pi, void *state) { pi->state = state; }
const config *pl_input_config(const pl_input *pi) { return pi->pl->cfg; }
void pl_input_spread(pl_input *pi) { pi->spreads = true; }
bool pl_input_held(const pl_input *pi) { return pi->pl->paused; }
bool pl_input_is_done(const pl_input *pi) { return pi->done; }
pl_source *pl_input_sources(const pl_input *pi) { return pi->sources; }

checkpoint_store *pl_input_checkpoints(pl_input *pi)
{
  return &pi->pl->store;
}

uint64_t pl_input_stop_timeout_ms(const pl_input *pi)
{
  return pi->pl->stop_timeout_ms;
}

bool pl_input_handing_over(const pl_input *pi)
{
  return pi->pl->reloading;
}

const config *pl_input_next_config(const pl_input *pi)
{
  return pi->pl->next;
}

int pl_input_set_fields(pl_input *pi, const char *path_field,
                        const char *sender_field, const char *listener_field)
{
  pi->ri.path_field = pipeline_keep(pi->pl, path_field);
  pi->ri.sender_field = pipeline_keep(pi->pl, sender_field);
  pi->ri.listener_field = pipeline_keep(pi->pl, listener_field);
  return (path_field && !pi->ri.path_field) ||
         (sender_field && !pi->ri.sender_field) ||
         (listener_field && !pi->ri.listener_field) ? -1 : 0;
}

join_matcher *pl_input_join_matcher(pl_input *pi)
{
  if (!pi->pl->join_matcher) pi->pl->join_matcher = join_matcher_new();
  return pi->pl->join_matcher;
}

void **pl_input_kind_state(pl_input *pi)
{
  return pipeline_kind_state(pi->pl, pi->kind);
}

bool pl_input_writes(const pl_input *pi, const struct stat *sb)
{
  return pipeline_writes(pi->pl, sb);
}

void pl_input_dead_letter(pl_input *pi, const char *from, uint64_t position,
                          const char *bytes, size_t len, const char *reason)
{
  msg_origin o = {pi->name, position, false, bytes, len, NULL, NULL, from, 0};

  dead_letter_write(&pi->pl->dl, "input", pi->name, reason, &o);
  output_flush(pi->pl->dl.sink);
}

void pl_input_done(pl_input *pi) { pipeline_input_done(pi); }

pl_source *pl_source_new(pl_input *pi) { return pipeline_source_new(pi); }
void pl_source_free(pl_source *src) { pipeline_source_free(src); }
pl_source *pl_source_next(const pl_source *src) { return src->next; }
pl_input *pl_source_owner(const pl_source *src) { return src->owner; }
input *pl_source_reader(pl_source *src) { return &src->in; }
pl_source *pl_source_of(input *in) { return (pl_source *)in; }
void *pl_source_data(const pl_source *src) { return src->data; }
void pl_source_set_data(pl_source *src, void *data) { src->data = data; }
line_joiner *pl_source_joiner(pl_source *src) { return &src->join; }
void pl_source_flush(pl_source *src) { pipeline_source_flush(src); }
void pl_source_chunk_done(pl_source *src) { pipeline_source_chunk_done(src); }

void pl_source_set_file(pl_source *src, checkpoint_source *ckpt)
{
  src->names_file = true;
  src->ckpt = ckpt;
}

void pl_source_set_sender(pl_source *src, const char *from)
{
  src->from = from;
}
