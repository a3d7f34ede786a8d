/*
 * pipeline.c - wires inputs, decoders, the router, encoders and outputs
 * (see pipeline.h) and runs them on the loop thread.
 *
 * Per read: the input cuts it into records, which are copied into a job
 * for the worker thread the input is pinned to (worker.h); the worker's
 * router (router.h) decodes, routes and encodes them into the job's
 * collectors; back on the loop thread the job's records move into the
 * outputs' queues (output.h) in order and the outputs are flushed, so
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
#include <stddef.h>
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
#include "worker.h"


/* Jobs of one input at a worker at once: reading runs ahead by this many
 * reads at most. */
#define MAX_JOBS_IN_FLIGHT 2

typedef struct {
  const char *name;
  bool newline;
  const config_plugin *cfg;  /* while building only */
  char *label;               /* "output 'name'", for log lines */
  output_sink sink;
  uint64_t write_failed;     /* records the sink could not write */
} pl_output;

typedef struct {
  input in;                  /* first: the handler gets &in */
  pipeline *pl;
  const config_plugin *cfg;  /* while building only */
  router_input ri;           /* used by its worker only */
  worker *w;
  work_job *job;             /* being filled from the current read */
  unsigned in_flight;        /* jobs at the worker */
  bool read_all;             /* the input finished; jobs may be in flight */
  const char *error;         /* why it finished, if it failed */
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
  size_t noutputs;
  dead_letter dl;
  worker *workers;
  size_t nworkers;
  uv_async_t notify;         /* workers: jobs came back */
  work_job *spare_jobs;
  size_t jobs_in_flight;
  uv_timer_t deadline;       /* started when stopping */
  uv_timer_t checkpoints;    /* saves them every checkpoint_interval_ms */
  bool stopping, paused, handles_closed;
  int status;
  uint64_t pauses;
  uint64_t paused_since, paused_ns; /* uv_hrtime */
  pipeline_stats snapshot;   /* pipeline_snapshot's storage */
};

static work_job *take_job(pipeline *pl)
{
  work_job *job = pl->spare_jobs;

  if (job) {
    pl->spare_jobs = job->next;
    work_job_reset(job);
    return job;
  }
  job = malloc(sizeof *job);
  if (job && work_job_init(job, pl->noutputs + 1) != 0) {
    free(job);
    job = NULL;
  }
  return job;
}

/* Copies the record into the job its worker will run. */
static void on_record(void *ud, input *in, const char *bytes, size_t len,
                      uint64_t position, unsigned piece)
{
  pipeline *pl = ud;
  pl_input *pi = (pl_input *)in;

  if (pi->ckpt.state_file && !pi->ticket)
    pi->ticket = checkpoint_ticket_new(&pi->ckpt);
  if (!pi->job && !(pi->job = take_job(pl))) {
    log_msg("input '%s': out of memory; record %" PRIu64 " is lost", in->name,
            position);
    pl->status = 1;
    return;
  }
  if (!work_job_add(pi->job, bytes, len, position, piece)) {
    log_msg("input '%s': out of memory; record %" PRIu64 " is lost", in->name,
            position);
    pl->status = 1;
  }
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
/* An input reads while no output is full and its worker is not behind. */
static void hold_or_go(pipeline *pl, pl_input *pi)
{
  if (pl->paused || pi->in_flight >= MAX_JOBS_IN_FLIGHT) input_pause(&pi->in);
  else input_resume(&pi->in);
}

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
  for (size_t i = 0; i < pl->ninputs; i++) hold_or_go(pl, &pl->inputs[i]);
}

/* The read is cut into records: its job goes to the input's worker, with
 * the checkpoint ticket's processing reference. */
static void on_chunk_done(void *ud, input *in)
{
  pipeline *pl = ud;
  pl_input *pi = (pl_input *)in;
  work_job *job = pi->job;

  if (!job) {
    if (pi->ticket) pi->ticket->end = in->done_offset;
    checkpoint_unref(pi->ticket);
    pi->ticket = NULL;
    return;
  }
  job->input = &pi->ri;
  job->is_offset = in->is_offset;
  job->ticket = pi->ticket;
  job->done_offset = in->done_offset;
  pi->job = NULL;
  pi->ticket = NULL;
  pi->in_flight++;
  if (pl->jobs_in_flight++ == 0) uv_ref((uv_handle_t *)&pl->notify);
  worker_submit(pi->w, job);
  hold_or_go(pl, pi);
}

static void finish_input(pipeline *pl, pl_input *pi)
{
  if (pi->error) {
    log_msg("input '%s' stopped: %s", pi->in.name, pi->error);
    pl->status = 1;
  }
  pl->running--;
}

/* A job came back: its records go into the real sinks, in order. */
static void adopt(pipeline *pl, work_job *job)
{
  pl_input *pi = (pl_input *)((char *)job->input - offsetof(pl_input, ri));

  for (size_t i = 0; i < pl->noutputs; i++)
    output_adopt(&pl->outputs[i].sink, &job->out[i]);
  if (pl->dl.owns_sink) output_adopt(&pl->dl.own, &job->out[pl->noutputs]);
  if (job->ticket) job->ticket->end = job->done_offset;
  checkpoint_unref(job->ticket);
  job->next = pl->spare_jobs;
  pl->spare_jobs = job;
  if (--pl->jobs_in_flight == 0) uv_unref((uv_handle_t *)&pl->notify);
  pi->in_flight--;
  if (pi->read_all && pi->in_flight == 0) finish_input(pl, pi);
  else hold_or_go(pl, pi);
}

static void on_jobs_back(uv_async_t *a)
{
  pipeline *pl = a->data;

  for (size_t i = 0; i < pl->nworkers; i++) {
    work_job *job;
    while ((job = worker_take_done(&pl->workers[i]))) adopt(pl, job);
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
  pl_input *pi = (pl_input *)in;

  pi->read_all = true;
  pi->error = error;
  if (pi->in_flight == 0) finish_input(pl, pi);
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
  msg_origin from = {r->input, r->position, r->is_offset, bytes, len, r->ack};

  pl->status = 1;
  if (r->dead_letter || !o) {
    pl->dl.failed++;
    return;
  }
  o->write_failed++;
  if (o->newline && len > 0) from.len--; /* the output's, not the record's */
  dead_letter_write(&pl->dl, "output", o->name, reason, &from);
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
    char why[256];
    if (p->role != PLUGIN_OUTPUT) continue;
    o = &pl->outputs[pl->noutputs++];
    o->cfg = p;
    o->name = keep(pl, p->name);
    o->newline = p->newline;
    o->label = malloc(strlen(p->name) + sizeof "output ''");
    if (!o->name || !o->label) {
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
  }
  return 0;
}

/* On the worker's thread: its matchers, encoders and decoders. */
static int build_worker(void *ud, worker *w, char *err, size_t errlen)
{
  pipeline *pl = ud;
  const config *cfg = pl->cfg;

  w->outputs = calloc(pl->noutputs ? pl->noutputs : 1, sizeof *w->outputs);
  if (!w->outputs) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  w->noutputs = pl->noutputs;
  w->dl_output = pl->noutputs;
  for (size_t i = 0; i < pl->noutputs; i++) {
    const config_plugin *p = pl->outputs[i].cfg;
    router_output *ro = &w->outputs[i];
    char why[256];
    *ro = (router_output){.name = pl->outputs[i].name,
                          .encoder_name = keep(pl, p->encoder),
                          .newline = p->newline};
    if (cfg->dead_letter_output && strcmp(p->name, cfg->dead_letter_output) == 0)
      w->dl_output = i;
    ro->match = matcher_compile(p->message_matcher, why, sizeof why);
    if (!ro->match) {
      snprintf(err, errlen, "%s:%d: output '%s': message_matcher: %s",
               cfg->file, p->line, p->name, why);
      return -1;
    }
    if (p->encoder) {
      ro->encoder = make_sandbox(pl, config_find(cfg, p->encoder, PLUGIN_ENCODER),
                                 SANDBOX_ENCODER, err, errlen);
      if (!ro->encoder) return -1;
    }
  }
  for (size_t i = 0; i < w->ninputs; i++) {
    pl_input *pi = (pl_input *)((char *)w->inputs[i] - offsetof(pl_input, ri));
    const config_plugin *p = pi->cfg;
    if (!p->decoder) continue;
    pi->ri.decoder = make_sandbox(pl, config_find(cfg, p->decoder,
                                                  PLUGIN_DECODER),
                                  SANDBOX_DECODER, err, errlen);
    if (!pi->ri.decoder) return -1;
  }
  return 0;
}

/* Pins input i to worker i % N and starts the workers: no more than there
 * are inputs, at least one. */
static int start_workers(pipeline *pl, char *err, size_t errlen)
{
  size_t n = pl->cfg->workers < pl->ninputs ? pl->cfg->workers : pl->ninputs;

  pl->nworkers = n ? n : 1;
  pl->workers = calloc(pl->nworkers, sizeof *pl->workers);
  if (!pl->workers) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (size_t k = 0; k < pl->nworkers; k++) {
    worker *w = &pl->workers[k];
    w->build = build_worker;
    w->build_ud = pl;
    w->inputs = calloc(pl->ninputs ? pl->ninputs : 1, sizeof *w->inputs);
    if (!w->inputs) {
      snprintf(err, errlen, "out of memory");
      return -1;
    }
    for (size_t i = k; i < pl->ninputs; i += pl->nworkers) {
      pl->inputs[i].w = w;
      w->inputs[w->ninputs++] = &pl->inputs[i].ri;
    }
    if (worker_start(w, &pl->notify, err, errlen) != 0) return -1;
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
    pi->cfg = p;
    pi->ri = (router_input){.name = pi->in.name, .max_line = p->max_line,
                            .decoder_name = keep(pl, p->decoder)};
  }
  return 0;
}

static int build_dead_letter(pipeline *pl, char *err, size_t errlen)
{
  output_sink *shared = NULL;
  char why[256];

  for (size_t i = 0; i < pl->noutputs && pl->cfg->dead_letter_output; i++)
    if (strcmp(pl->outputs[i].name, pl->cfg->dead_letter_output) == 0)
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
  uv_async_init(loop, &pl->notify, on_jobs_back);
  pl->notify.data = pl;
  uv_unref((uv_handle_t *)&pl->notify);
  pl->inputs = calloc(cfg->nplugins, sizeof *pl->inputs);
  pl->outputs = calloc(cfg->nplugins, sizeof *pl->outputs);
  pl->snapshot.inputs = calloc(cfg->nplugins, sizeof *pl->snapshot.inputs);
  pl->snapshot.outputs = calloc(cfg->nplugins, sizeof *pl->snapshot.outputs);
  if (!pl->inputs || !pl->outputs || !pl->snapshot.inputs ||
      !pl->snapshot.outputs) {
    snprintf(err, errlen, "out of memory");
    pipeline_destroy(pl);
    return NULL;
  }
  if (start_watchdog(cfg, &pl->wd, err, errlen) != 0 ||
      build_outputs(pl, err, errlen) != 0 || build_inputs(pl, err, errlen) != 0 ||
      build_dead_letter(pl, err, errlen) != 0 ||
      start_workers(pl, err, errlen) != 0) {
    pipeline_destroy(pl);
    return NULL;
  }
  share_budget(pl);
  for (size_t i = 0; i < pl->noutputs; i++) pl->outputs[i].cfg = NULL;
  for (size_t i = 0; i < pl->ninputs; i++) pl->inputs[i].cfg = NULL;
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

/* Reads counters the workers keep: call it once they have stopped. */
const pipeline_stats *pipeline_snapshot(pipeline *pl)
{
  pipeline_stats *st = &pl->snapshot;
  uint64_t lost = 0;

  st->ninputs = pl->ninputs;
  for (size_t i = 0; i < pl->ninputs; i++) {
    const router_input *ri = &pl->inputs[i].ri;
    st->inputs[i] = (pipeline_input_stats){ri->name, ri->records, ri->overlong,
                                           ri->dead};
  }
  st->noutputs = pl->noutputs;
  for (size_t i = 0; i < pl->noutputs; i++) {
    const pl_output *o = &pl->outputs[i];
    st->outputs[i] = (pipeline_output_stats){o->name, o->sink.records_written,
                                             o->write_failed, 0,
                                             output_queued(&o->sink)};
    lost += o->sink.records_lost;
  }
  st->dead_letters = pl->dl.count;
  st->unrouted = 0;
  for (size_t k = 0; k < pl->nworkers; k++) {
    const worker *w = &pl->workers[k];
    for (size_t i = 0; i < w->noutputs && i < pl->noutputs; i++) {
      st->outputs[i].failed += w->outputs[i].failed;
      st->outputs[i].skipped += w->outputs[i].skipped;
    }
    st->dead_letters += w->dl.count;
    st->unrouted += w->router.unrouted;
  }
  if (pl->dl.owns_sink) lost += pl->dl.own.records_lost;
  st->dead_letters_written = dead_letter_written(&pl->dl);
  st->dead_letters_lost = pl->dl.failed + lost;
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

/* Joins the workers; their sandboxes go with them. */
static void stop_workers(pipeline *pl)
{
  for (size_t k = 0; k < pl->nworkers; k++) worker_stop(&pl->workers[k]);
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
  stop_workers(pl);
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
  uv_close((uv_handle_t *)&pl->notify, NULL);
  uv_run(pl->loop, UV_RUN_NOWAIT);
}

int pipeline_destroy(pipeline *pl)
{
  int rc = 0;

  if (!pl) return 0;
  stop_workers(pl); /* before the async handle closes */
  close_handles(pl);
  for (size_t i = 0; i < pl->nworkers; i++) {
    free(pl->workers[i].outputs);
    free(pl->workers[i].inputs);
  }
  free(pl->workers);
  for (size_t i = 0; i < pl->ninputs; i++) {
    input_free(&pl->inputs[i].in);
    if (pl->inputs[i].job) {
      work_job_free(pl->inputs[i].job);
      free(pl->inputs[i].job);
    }
  }
  while (pl->spare_jobs) {
    work_job *job = pl->spare_jobs;
    pl->spare_jobs = job->next;
    work_job_free(job);
    free(job);
  }
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
  free(pl->snapshot.inputs);
  free(pl->snapshot.outputs);
  for (size_t i = 0; i < pl->nkept; i++) free(pl->kept[i]);
  free(pl->kept);
  free(pl);
  return rc;
}
