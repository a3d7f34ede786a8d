/*
 * pipeline.c - wires inputs, decoders, the router, encoders and outputs
 * (see pipeline.h) and runs them on the loop thread.
 *
 * Per record: the input hands a line straight from its read buffer to the
 * router (router.h), which decodes, routes and encodes it into the queues
 * of the outputs (output.h). After each read the outputs are flushed, so
 * writes are batched per read, not per event. Each read of a file input
 * takes a checkpoint ticket that its records' outputs hold until written
 * (checkpoint.h). Anything that fails goes to the dead-letter path with its
 * reason and original bytes; the pipeline itself never stops on bad data.
 *
 * Delivery: an output counts a record delivered when the kernel took all
 * of its bytes. While any output (or the dead-letter path) holds more than
 * its share of memory_budget, every input is paused. An output that fails for
 * good hands its records to the dead-letter path and stops the run with
 * exit status 1; so does a dead letter that cannot be written.
 *
 * Stopping: a stop signal or a failed output stops the inputs (what they
 * read is still processed), then the loop runs until every output has
 * written what it holds. Past stop_timeout_ms (or at a second signal),
 * what is still queued fails with that reason.
 */
#include "pipeline.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "dead_letter.h"
#include "input.h"
#include "log.h"
#include "output.h"
#include "router.h"
#include "sandbox.h"
#include "signals.h"


typedef struct {
  char *label;               /* "output 'name'", for log lines */
  output_sink sink;
  uint64_t write_failed;     /* records the sink could not write */
} pl_output;

typedef struct {
  input in;                  /* first: the handler gets &in */
  pipeline *pl;
  router_input ri;
  checkpoint_source ckpt;    /* state_file NULL: not checkpointed */
  checkpoint_ticket *ticket; /* of the chunk being handed on */
} pl_input;

/* The pipeline keeps its own copies of the config's names and settings
 * (`kept`): queued records point to input names, and a reload will replace
 * the config while they wait. The config is read only while building. */
struct pipeline {
  uv_loop_t *loop;
  const config *cfg;         /* while building only */
  char **kept;               /* strings copied from the config */
  size_t nkept;
  unsigned stop_timeout_ms, checkpoint_interval_ms;
  bool checkpointing;
  sandbox_watchdog *wd;
  pl_input *inputs;
  size_t ninputs, running;
  pl_output *outputs;
  router_output *routes;     /* outputs[i]'s matcher and encoder */
  size_t noutputs;
  dead_letter dl;
  router router;
  uv_timer_t deadline;       /* started when stopping */
  uv_timer_t checkpoints;    /* saves them every checkpoint_interval_ms */
  bool stopping, paused, handles_closed;
  int status;
  uint64_t pauses;
  uint64_t paused_since, paused_ns; /* uv_hrtime */
  pipeline_stats snapshot;   /* pipeline_snapshot's storage */
};

static void on_record(void *ud, input *in, const char *bytes, size_t len,
                      uint64_t position, unsigned piece)
{
  pl_input *pi = (pl_input *)in;
  msg_origin o = {in->name, position, in->is_offset, bytes, len, NULL};

  if (pi->ckpt.state_file) {
    if (!pi->ticket) pi->ticket = checkpoint_ticket_new(&pi->ckpt);
    o.ack = pi->ticket;
  }
  router_record(&((pipeline *)ud)->router, &pi->ri, &o, piece);
}

static void each_sink(pipeline *pl, void (*fn)(output_sink *))
{
  for (size_t i = 0; i < pl->noutputs; i++) fn(&pl->outputs[i].sink);
  if (pl->dl.owns_sink) fn(&pl->dl.own);
}

static bool any_sink(pipeline *pl, bool (*test)(const output_sink *))
{
  for (size_t i = 0; i < pl->noutputs; i++)
    if (test(&pl->outputs[i].sink)) return true;
  return pl->dl.owns_sink && test(&pl->dl.own);
}

static bool busy(const output_sink *o)
{
  return !output_idle(o);
}

/* Holds every input while any output is full, lets them go below its
 * low-water mark. Each sink's high-water mark is its share of
 * memory_budget (see share_budget). */
static void apply_backpressure(pipeline *pl)
{
  bool full = any_sink(pl, output_full);

  if (full == pl->paused) return;
  pl->paused = full;
  if (full) {
    pl->pauses++;
    pl->paused_since = uv_hrtime();
  } else {
    pl->paused_ns += uv_hrtime() - pl->paused_since;
  }
  for (size_t i = 0; i < pl->ninputs; i++)
    if (full) input_pause(&pl->inputs[i].in);
    else input_resume(&pl->inputs[i].in);
}

static void on_chunk_done(void *ud, input *in)
{
  pipeline *pl = ud;
  pl_input *pi = (pl_input *)in;

  if (pi->ticket) {
    /* The chunk is handed on: its records' outputs hold it from here. */
    pi->ticket->end = in->done_offset;
    checkpoint_unref(pi->ticket);
    pi->ticket = NULL;
  }
  each_sink(pl, output_flush);
  apply_backpressure(pl);
}

static void save_checkpoints(pipeline *pl)
{
  for (size_t i = 0; i < pl->ninputs; i++) checkpoint_save(&pl->inputs[i].ckpt);
}

static void on_checkpoint_timer(uv_timer_t *t)
{
  save_checkpoints(t->data);
}

static void on_finished(void *ud, input *in, const char *error)
{
  pipeline *pl = ud;

  if (error) {
    log_msg("input '%s' stopped: %s", in->name, error);
    pl->status = 1;
  }
  pl->running--;
}

static void fail_queued(output_sink *o)
{
  if (busy(o)) output_fail(o, "the run stopped before the output took the "
                              "record (stop_timeout_ms)");
}

/* The stop deadline: what the outputs still hold fails, the dead-letter
 * path last, so that it can take the outputs' records if it still writes. */
static void on_deadline(uv_timer_t *t)
{
  pipeline *pl = t->data;

  if (!any_sink(pl, busy)) return;
  log_msg("outputs still hold records at the stop deadline; failing them");
  pl->status = 1;
  for (size_t i = 0; i < pl->noutputs; i++) fail_queued(&pl->outputs[i].sink);
  if (pl->dl.owns_sink) {
    output_flush(&pl->dl.own);
    fail_queued(&pl->dl.own);
  }
}

/* why: the signal's name, or NULL when the cause was logged already. */
static void pipeline_stop(pipeline *pl, const char *why)
{
  if (pl->stopping) {
    if (why) {
      log_msg("%s: stopping now", why);
      on_deadline(&pl->deadline);
    }
    return;
  }
  if (why) log_msg("%s: stopping", why);
  pl->stopping = true;
  for (size_t i = 0; i < pl->ninputs; i++) input_stop(&pl->inputs[i].in);
  uv_timer_start(&pl->deadline, on_deadline, pl->stop_timeout_ms, 0);
  uv_unref((uv_handle_t *)&pl->deadline);
}

static void on_stop_signal(void *ud, const char *signame)
{
  pipeline_stop(ud, signame);
}

static void reopen(output_sink *o)
{
  output_reopen(o);
}

static void on_reopen_signal(void *ud)
{
  log_msg("SIGHUP: reopening output files");
  each_sink(ud, reopen);
}

static pl_output *output_of(pipeline *pl, output_sink *s)
{
  for (size_t i = 0; i < pl->noutputs; i++)
    if (&pl->outputs[i].sink == s) return &pl->outputs[i];
  return NULL;
}

/* A record a sink could not write: an output's goes to the dead-letter
 * path; a dead letter is lost, counted, and makes the run fail. */
static void on_sink_failed(void *ud, output_sink *s, const output_record *r,
                           const char *bytes, size_t len, const char *reason)
{
  pipeline *pl = ud;
  pl_output *o = output_of(pl, s);
  const router_output *ro = o ? &pl->routes[o - pl->outputs] : NULL;
  msg_origin from = {r->input, r->position, r->is_offset, bytes, len, r->ack};

  pl->status = 1;
  if (r->dead_letter || !o) {
    pl->dl.failed++;
    return;
  }
  o->write_failed++;
  if (ro->newline && len > 0) from.len--; /* the output's, not the record's */
  dead_letter_write(&pl->dl, "output", ro->name, reason, &from);
}

static void on_sink_changed(void *ud, output_sink *s)
{
  pipeline *pl = ud;

  if (s->state == OUTPUT_FAILED && !s->failure_reported) {
    s->failure_reported = true;
    log_msg("%s failed: %s; stopping the run", s->name, s->error);
    pipeline_stop(pl, NULL);
  }
  apply_backpressure(pl);
}

static output_events sink_events(pipeline *pl)
{
  return (output_events){on_sink_failed, on_sink_changed, pl};
}

/* A copy of s that lives as long as the pipeline; NULL stays NULL. */
static const char *keep(pipeline *pl, const char *s)
{
  char **k, *copy;

  if (!s) return NULL;
  k = realloc(pl->kept, (pl->nkept + 1) * sizeof *k);
  copy = strdup(s);
  if (k) pl->kept = k;
  if (!k || !copy) {
    free(copy);
    return NULL;
  }
  return pl->kept[pl->nkept++] = copy;
}

static sandbox *make_sandbox(pipeline *pl, const config_plugin *p,
                             sandbox_kind kind, char *err, size_t errlen)
{
  sandbox_config sc = {
    .name = p->name, .filename = p->filename, .kind = kind,
    .settings = p->settings, .module_dirs = p->module_dirs,
    .limits = p->limits, .log = log_sandbox_line
  };
  char why[768];
  sandbox *sb = sandbox_create(&sc, pl->wd, why, sizeof why);

  if (!sb) snprintf(err, errlen, "%s:%d: %s '%s': %s", pl->cfg->file, p->line,
                    kind == SANDBOX_DECODER ? "decoder" : "encoder", p->name, why);
  return sb;
}

static int build_outputs(pipeline *pl, char *err, size_t errlen)
{
  const config *cfg = pl->cfg;

  for (size_t i = 0; i < cfg->nplugins; i++) {
    const config_plugin *p = &cfg->plugins[i];
    pl_output *o;
    router_output *ro;
    char why[256];
    if (p->role != PLUGIN_OUTPUT) continue;
    ro = &pl->routes[pl->noutputs];
    o = &pl->outputs[pl->noutputs++];
    *ro = (router_output){.name = keep(pl, p->name),
                          .encoder_name = keep(pl, p->encoder),
                          .newline = p->newline, .sink = &o->sink};
    if (!ro->name || (p->encoder && !ro->encoder_name)) {
      snprintf(err, errlen, "out of memory");
      return -1;
    }
    ro->match = matcher_compile(p->message_matcher, why, sizeof why);
    if (!ro->match) {
      snprintf(err, errlen, "%s:%d: output '%s': message_matcher: %s",
               cfg->file, p->line, p->name, why);
      return -1;
    }
    o->label = malloc(strlen(p->name) + sizeof "output ''");
    if (!o->label) {
      snprintf(err, errlen, "out of memory");
      return -1;
    }
    sprintf(o->label, "output '%s'", p->name);
    if (output_open(&o->sink, pl->loop, o->label,
                    p->type == OUTPUT_FILE ? p->path : NULL, p->flush_bytes,
                    p->newline, sink_events(pl), why, sizeof why) != 0) {
      snprintf(err, errlen, "%s:%d: output '%s': %s", cfg->file, p->line,
               p->name, why);
      return -1;
    }
    if (p->encoder) {
      ro->encoder = make_sandbox(pl, config_find(cfg, p->encoder, PLUGIN_ENCODER),
                                 SANDBOX_ENCODER, err, errlen);
      if (!ro->encoder) return -1;
    }
  }
  return 0;
}

/* Starts a file input where its checkpoint says. */
static int resume_input(pl_input *pi, const config *cfg, const config_plugin *p,
                        char *err, size_t errlen)
{
  uint64_t offset;
  char why[512];

  if (checkpoint_open(&pi->ckpt, cfg->state_dir, p->name, p->path, &offset,
                      why, sizeof why) != 0) {
    snprintf(err, errlen, "%s:%d: input '%s': %s", cfg->file, p->line,
             p->name, why);
    return -1;
  }
  if (offset > 0)
    log_msg("input '%s': resuming %s at offset %" PRIu64 " (%s)", p->name,
            p->path, offset, pi->ckpt.state_file);
  pi->in.read_offset = pi->in.done_offset = offset;
  return 0;
}

static int build_inputs(pipeline *pl, char *err, size_t errlen)
{
  const config *cfg = pl->cfg;

  for (size_t i = 0; i < cfg->nplugins; i++) {
    const config_plugin *p = &cfg->plugins[i];
    pl_input *pi;
    if (p->role != PLUGIN_INPUT) continue;
    pi = &pl->inputs[pl->ninputs++];
    pi->pl = pl;
    pi->in.name = keep(pl, p->name);
    pi->in.path = p->type == INPUT_FILE ? keep(pl, p->path) : NULL;
    if (!pi->in.name || (p->type == INPUT_FILE && !pi->in.path)) {
      snprintf(err, errlen, "out of memory");
      return -1;
    }
    pi->in.max_line = p->max_line;
    pi->in.fd = -1;
    pi->in.handler = (input_handler){on_record, on_chunk_done, on_finished, pl};
    if (p->type == INPUT_FILE && cfg->state_dir &&
        resume_input(pi, cfg, p, err, errlen) != 0)
      return -1;
    pi->ri = (router_input){.name = pi->in.name, .max_line = p->max_line,
                            .decoder_name = keep(pl, p->decoder)};
    if (p->decoder) {
      pi->ri.decoder = make_sandbox(pl, config_find(cfg, p->decoder,
                                                    PLUGIN_DECODER),
                                    SANDBOX_DECODER, err, errlen);
      if (!pi->ri.decoder) return -1;
    }
  }
  return 0;
}

static int build_dead_letter(pipeline *pl, char *err, size_t errlen)
{
  output_sink *shared = NULL;
  char why[256];

  for (size_t i = 0; i < pl->noutputs && pl->cfg->dead_letter_output; i++)
    if (strcmp(pl->routes[i].name, pl->cfg->dead_letter_output) == 0)
      shared = &pl->outputs[i].sink;
  if (dead_letter_open(&pl->dl, pl->loop, pl->cfg->dead_letter_path, shared,
                       sink_events(pl), why, sizeof why) != 0) {
    snprintf(err, errlen, "%s: dead-letter path: %s", pl->cfg->file, why);
    return -1;
  }
  return 0;
}

/* What is queued for writing is bounded by memory_budget: each sink (the
 * outputs and the dead-letter file) gets an equal share as its high-water
 * mark, so the inputs pause before the queues pass the budget. */
static void share_budget(pipeline *pl)
{
  size_t sinks = pl->noutputs + (pl->dl.owns_sink ? 1 : 0);
  size_t share = (size_t)(pl->cfg->memory_budget / (sinks ? sinks : 1));

  for (size_t i = 0; i < pl->noutputs; i++)
    output_set_high_water(&pl->outputs[i].sink, share);
  if (pl->dl.owns_sink) output_set_high_water(&pl->dl.own, share);
}

/* The watchdog thread runs only when some plugin has a CPU or instruction
 * limit: with none, nothing wakes up every interval. */
static int start_watchdog(const config *cfg, sandbox_watchdog **wd, char *err,
                          size_t errlen)
{
  bool needed = false;

  *wd = NULL;
  for (size_t i = 0; i < cfg->nplugins; i++) {
    const sandbox_limits *l = &cfg->plugins[i].limits;
    if ((cfg->plugins[i].role == PLUGIN_DECODER ||
         cfg->plugins[i].role == PLUGIN_ENCODER) &&
        (l->cpu_limit_ms || l->instruction_limit))
      needed = true;
  }
  if (!needed) return 0;
  *wd = sandbox_watchdog_start(cfg->watchdog_interval_ms, err, errlen);
  return *wd ? 0 : -1;
}

pipeline *pipeline_create(const config *cfg, uv_loop_t *loop, char *err,
                          size_t errlen)
{
  pipeline *pl = calloc(1, sizeof *pl);

  if (!pl) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  pl->loop = loop;
  pl->cfg = cfg;
  pl->stop_timeout_ms = cfg->stop_timeout_ms;
  pl->checkpoint_interval_ms = cfg->checkpoint_interval_ms;
  pl->checkpointing = cfg->state_dir != NULL;
  uv_timer_init(loop, &pl->deadline);
  pl->deadline.data = pl;
  uv_timer_init(loop, &pl->checkpoints);
  pl->checkpoints.data = pl;
  pl->inputs = calloc(cfg->nplugins, sizeof *pl->inputs);
  pl->outputs = calloc(cfg->nplugins, sizeof *pl->outputs);
  pl->routes = calloc(cfg->nplugins, sizeof *pl->routes);
  pl->snapshot.inputs = calloc(cfg->nplugins, sizeof *pl->snapshot.inputs);
  pl->snapshot.outputs = calloc(cfg->nplugins, sizeof *pl->snapshot.outputs);
  if (!pl->inputs || !pl->outputs || !pl->routes || !pl->snapshot.inputs ||
      !pl->snapshot.outputs) {
    snprintf(err, errlen, "out of memory");
    pipeline_destroy(pl);
    return NULL;
  }
  if (start_watchdog(cfg, &pl->wd, err, errlen) != 0 ||
      build_outputs(pl, err, errlen) != 0 || build_inputs(pl, err, errlen) != 0 ||
      build_dead_letter(pl, err, errlen) != 0) {
    pipeline_destroy(pl);
    return NULL;
  }
  router_init(&pl->router, pl->routes, pl->noutputs, &pl->dl);
  share_budget(pl);
  pl->cfg = NULL;
  return pl;
}

int pipeline_check(const config *cfg, char *err, size_t errlen)
{
  pipeline pl = {.cfg = cfg};
  int rc = 0;

  if (start_watchdog(cfg, &pl.wd, err, errlen) != 0) return -1;
  for (size_t i = 0; i < cfg->nplugins && rc == 0; i++) {
    const config_plugin *p = &cfg->plugins[i];
    sandbox *sb;
    if (p->role != PLUGIN_DECODER && p->role != PLUGIN_ENCODER) continue;
    sb = make_sandbox(&pl, p, p->role == PLUGIN_DECODER ? SANDBOX_DECODER
                                                        : SANDBOX_ENCODER,
                      err, errlen);
    if (!sb) rc = -1;
    sandbox_destroy(sb);
  }
  sandbox_watchdog_stop(pl.wd);
  return rc;
}

const pipeline_stats *pipeline_snapshot(pipeline *pl)
{
  pipeline_stats *st = &pl->snapshot;

  st->ninputs = pl->ninputs;
  for (size_t i = 0; i < pl->ninputs; i++) {
    const router_input *ri = &pl->inputs[i].ri;
    st->inputs[i] = (pipeline_input_stats){ri->name, ri->records, ri->overlong,
                                           ri->dead};
  }
  st->noutputs = pl->noutputs;
  for (size_t i = 0; i < pl->noutputs; i++) {
    const pl_output *o = &pl->outputs[i];
    const router_output *ro = &pl->routes[i];
    st->outputs[i] = (pipeline_output_stats){
      ro->name, o->sink.records_written, ro->failed + o->write_failed,
      ro->skipped, output_queued(&o->sink)};
  }
  st->dead_letters = pl->dl.count;
  st->dead_letters_written = dead_letter_written(&pl->dl);
  st->dead_letters_lost = pl->dl.failed;
  st->unrouted = pl->router.unrouted;
  st->pauses = pl->pauses;
  st->paused_ms = (pl->paused_ns + (pl->paused ? uv_hrtime() - pl->paused_since
                                               : 0)) / 1000000;
  return st;
}

static void log_summary(pipeline *pl)
{
  const pipeline_stats *st = pipeline_snapshot(pl);

  for (size_t i = 0; i < st->ninputs; i++)
    log_msg("input '%s': %" PRIu64 " records (%" PRIu64 " longer than "
            "max_line), %" PRIu64 " dead-letter records", st->inputs[i].name,
            st->inputs[i].records, st->inputs[i].overlong, st->inputs[i].dead);
  for (size_t i = 0; i < st->noutputs; i++)
    log_msg("output '%s': %" PRIu64 " delivered, %" PRIu64 " failed, %" PRIu64
            " skipped", st->outputs[i].name, st->outputs[i].delivered,
            st->outputs[i].failed, st->outputs[i].skipped);
  log_msg("%" PRIu64 " dead-letter records (%" PRIu64 " written, %" PRIu64
          " could not be written), %" PRIu64 " messages matched no output, "
          "inputs paused %" PRIu64 " times for %" PRIu64 " ms",
          st->dead_letters, st->dead_letters_written, st->dead_letters_lost,
          st->unrouted, st->pauses, st->paused_ms);
}

int pipeline_run(pipeline *pl)
{
  char err[512];
  signals_handler sh = {on_stop_signal, on_reopen_signal, pl};

  signals_set_handler(&sh);
  if (pl->checkpointing) {
    uv_timer_start(&pl->checkpoints, on_checkpoint_timer,
                   pl->checkpoint_interval_ms, pl->checkpoint_interval_ms);
    uv_unref((uv_handle_t *)&pl->checkpoints);
  }
  for (size_t i = 0; i < pl->ninputs; i++) {
    if (input_start(&pl->inputs[i].in, pl->loop, err, sizeof err) != 0) {
      log_msg("%s", err);
      pl->status = 1;
      continue;
    }
    pl->running++;
  }
  /* The loop ends when every input has finished and no output waits. */
  do {
    uv_run(pl->loop, UV_RUN_DEFAULT);
    each_sink(pl, output_flush);
    apply_backpressure(pl);
  } while (pl->running > 0 || any_sink(pl, busy));
  signals_set_handler(NULL);
  save_checkpoints(pl);
  log_summary(pl);
  return pl->status;
}

/* Closes every loop handle and lets the loop finish closing them. */
static void close_handles(pipeline *pl)
{
  if (pl->handles_closed) return;
  pl->handles_closed = true;
  each_sink(pl, output_close_handles);
  uv_close((uv_handle_t *)&pl->deadline, NULL);
  uv_close((uv_handle_t *)&pl->checkpoints, NULL);
  uv_run(pl->loop, UV_RUN_NOWAIT);
}

int pipeline_destroy(pipeline *pl)
{
  int rc = 0;

  if (!pl) return 0;
  close_handles(pl);
  for (size_t i = 0; i < pl->ninputs; i++) {
    input_free(&pl->inputs[i].in);
    router_input_free(&pl->inputs[i].ri);
  }
  pl->router.outputs = pl->routes; /* also when create failed half-way */
  pl->router.noutputs = pl->noutputs;
  router_free(&pl->router);
  for (size_t i = 0; i < pl->noutputs; i++) {
    if (output_close(&pl->outputs[i].sink) != 0) rc = -1;
    free(pl->outputs[i].label);
  }
  if (dead_letter_close(&pl->dl) != 0) rc = -1;
  /* After the sinks: their records no longer hold tickets. */
  for (size_t i = 0; i < pl->ninputs; i++) checkpoint_close(&pl->inputs[i].ckpt);
  sandbox_watchdog_stop(pl->wd);
  free(pl->inputs);
  free(pl->outputs);
  free(pl->routes);
  free(pl->snapshot.inputs);
  free(pl->snapshot.outputs);
  for (size_t i = 0; i < pl->nkept; i++) free(pl->kept[i]);
  free(pl->kept);
  free(pl);
  return rc;
}
