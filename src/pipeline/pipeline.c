/*
 * pipeline.c - runs what pipeline_build.c wired (see pipeline.h): the flow
 * of records from inputs through the workers to the outputs, backpressure,
 * stopping, checkpoints and the counters, on the loop thread.
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
 * its share of memory_budget, or the records at the workers take their
 * quarter of it (bytes_at_workers), every input is paused. An output that fails for
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

#include "checkpoint_save.h"
#include "heap.h"
#include "log.h"
#include "metrics.h"
#include "passthrough.h"
#include "pipeline_internal.h"
#include "run_stats.h"
#include "sandbox_shelf.h"
#include "signals.h"

#define QUIET_LOOK_MS 1000

static work_job *take_job(pipeline *pl)
{
  work_job *job = pl->spare_jobs;

  if (job) {
    pl->spare_jobs = job->next;
    work_job_reset(job);
    return job;
  }
  job = malloc(sizeof *job);
  if (job && work_job_init(job, pl->noutputs + 1, pl->nfilters) != 0) {
    free(job);
    job = NULL;
  }
  return job;
}

void pipeline_record_lost(pipeline *pl, input *in, uint64_t position)
{
  log_error("input '%s': out of memory; record %" PRIu64 " is lost", in->name,
          position);
  pl->records_lost++;
  pl->status = 1;
}

/* The read being cut takes a checkpoint ticket with its first record. */
static void take_ticket(pipeline *pl, pl_source *src)
{
  if (src->ckpt && pl->store.state_file && !src->ticket)
    src->ticket = checkpoint_ticket_new(src->ckpt);
}

/* Copies the record into the job its worker will run, or hands it to the
 * passthrough. */
static void add_record(pipeline *pl, pl_source *src, const char *bytes,
                       size_t len, uint64_t position, unsigned piece)
{
  input *in = &src->in;

  take_ticket(pl, src);
  if (src->owner->passthrough) {
    passthrough_record(src, bytes, len, position, piece);
    return;
  }
  if (!src->job && !(src->job = take_job(pl))) {
    pipeline_record_lost(pl, in, position);
    return;
  }
  if (!work_job_add(src->job, bytes, len, position, piece, src->from))
    pipeline_record_lost(pl, in, position);
  else if (pl->probe.due)
    src->job->recs[src->job->nrecs - 1].due_us =
        pl->probe.due(pl->probe.ud, in, position);
}

static void add_joined(void *ud, const char *bytes, size_t len,
                       uint64_t position)
{
  pl_source *src = ud;

  add_record(src->owner->pl, src, bytes, len, position, 0);
}

/* A line goes to the joiner, if the source joins lines (join.h); pieces
 * of an overlong line go on as they are, after what the joiner held. */
static void on_record(void *ud, input *in, const char *bytes, size_t len,
                      uint64_t position, unsigned piece)
{
  pipeline *pl = ud;
  pl_source *src = (pl_source *)in;

  if (!src->join.rule) {
    add_record(pl, src, bytes, len, position, piece);
  } else if (piece) {
    join_flush(&src->join, add_joined, src);
    add_record(pl, src, bytes, len, position, piece);
  } else {
    join_line(&src->join, bytes, len, position, uv_now(pl->loop), add_joined,
              src);
  }
}

/* How far the source's records are all handed on: not past a line the
 * joiner holds. */
static uint64_t handed_on(const pl_source *src)
{
  const input *in = &src->in;

  if (src->join.rule && join_holding(&src->join) && in->is_offset &&
      join_held_position(&src->join) < in->done_offset)
    return join_held_position(&src->join);
  return in->done_offset;
}

void pipeline_each_sink(pipeline *pl, void (*fn)(output_sink *))
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

/* A source reads while no output is full and its worker is not behind. */
static void hold_or_go(pipeline *pl, pl_source *src)
{
  bool hold = pl->paused || src->in_flight >= MAX_JOBS_IN_FLIGHT;

  if (src->owner->kind->hold) src->owner->kind->hold(src, hold);
  else if (hold) input_pause(&src->in);
  else input_resume(&src->in);
}

/* What a job's records take while it is at a worker. */
static uint64_t job_weight(const work_job *job)
{
  return job->bytes.len + job->nrecs * sizeof *job->recs;
}

/* Holds every input while any output is full, or the workers hold their
 * share of memory_budget; lets them go below the sinks' low-water mark
 * and under that share. Each sink's high-water mark is its share of
 * memory_budget (see share_budget). */
static void apply_backpressure(pipeline *pl)
{
  bool full = any_sink(pl, output_full) ||
              pl->bytes_at_workers >= pl->workers_budget;

  if (full == pl->paused) return;
  pl->paused = full;
  if (full) {
    pl->pauses++;
    pl->paused_since = uv_hrtime();
  } else {
    pl->paused_ns += uv_hrtime() - pl->paused_since;
  }
  /* Resuming may finish a followed file's source, and so free it. */
  for (size_t i = 0; i < pl->ninputs; i++)
    for (pl_source *src = pl->inputs[i].sources, *next; src; src = next) {
      next = src->next;
      hold_or_go(pl, src);
    }
}

/* The read is cut into records: its job goes to the source's worker, with
 * the checkpoint ticket's processing reference. */
static void on_chunk_done(void *ud, input *in)
{
  pipeline *pl = ud;
  pl_source *src = (pl_source *)in;
  work_job *job = src->job;

  if (!job) {
    if (src->ticket) src->ticket->end = handed_on(src);
    if (src->owner->passthrough) passthrough_read_done(src);
    checkpoint_unref(src->ticket);
    src->ticket = NULL;
    if (src->owner->passthrough) apply_backpressure(pl);
    return;
  }
  if (!src->w) pipeline_source_place(src);
  job->input = src->ri;
  job->source = src;
  job->file = src->names_file ? src->in.path : NULL;
  job->is_offset = in->is_offset;
  job->ticket = src->ticket;
  job->done_offset = handed_on(src);
  job->read_us = uv_hrtime() / 1000;
  src->job = NULL;
  src->ticket = NULL;
  src->in_flight++;
  if (pl->jobs_in_flight++ == 0) uv_ref((uv_handle_t *)&pl->notify);
  pl->bytes_at_workers += job_weight(job);
  worker_queue(src->w, job);
  if (pl->bytes_at_workers >= pl->workers_budget) apply_backpressure(pl);
  else hold_or_go(pl, src);
}

void pipeline_source_chunk_done(pl_source *src)
{
  on_chunk_done(src->owner->pl, &src->in);
}

void pipeline_source_flush(pl_source *src)
{
  if (!join_holding(&src->join)) return;
  join_flush(&src->join, add_joined, src);
  on_chunk_done(src->owner->pl, &src->in);
}

void pipeline_input_done(pl_input *pi)
{
  pi->done = true;
  pi->pl->running--;
}

/* The source read all it will and its jobs came back. */
static void source_finished(pipeline *pl, pl_source *src)
{
  pl_input *pi = src->owner;

  if (src->error) {
    snprintf(pi->failure, sizeof pi->failure, "stopped reading %s: %s",
             src->in.path ? src->in.path : "standard input", src->error);
    log_error("input '%s' %s", pi->name, pi->failure);
    pl->status = 1;
  }
  pi->kind->source_finished(pi, src);
}

void pipeline_add_counts(pipeline *pl, pl_input *pi, const router_counts *c)
{
  if (pi) {
    pi->records += c->records;
    pi->overlong += c->overlong;
    pi->truncated += c->truncated;
    pi->dead += c->dead;
    pi->dead_pieces += c->dead_pieces;
    pi->messages += c->messages;
    pi->empty += c->empty;
  }
  for (size_t i = 0; i < pl->nfilters; i++) {
    router_filter_counts *f = &pl->filters[i].counts;
    f->matched += c->filters[i].matched;
    f->injected += c->filters[i].injected;
    f->dropped += c->filters[i].dropped;
    f->failed += c->filters[i].failed;
    f->ticks += c->filters[i].ticks;
    f->ticks_failed += c->filters[i].ticks_failed;
  }
  pl->unrouted += c->unrouted;
  for (size_t i = 0; i < pl->noutputs; i++) {
    pl->outputs[i].encoded.matched += c->outputs[i].matched;
    pl->outputs[i].encoded.failed += c->outputs[i].failed;
    pl->outputs[i].encoded.skipped += c->outputs[i].skipped;
  }
}

/* A job came back: its records go into the real sinks, in order. */
static void adopt(pipeline *pl, work_job *job)
{
  pl_source *src = job->source;

  pipeline_add_counts(pl, src ? src->owner : NULL, &job->counts);
  pl->routed_dead_letters += job->dead_letters;
  pl->routed_dead_letter_bytes += job->dead_letter_bytes;
  job->worker->stopped_role = job->stopped_role;
  job->worker->stopped_name = job->stopped_name;
  pl->bytes_at_workers -= job_weight(job);
  for (size_t i = 0; i < pl->noutputs; i++)
    output_adopt(&pl->outputs[i].sink, &job->out[i]);
  if (pl->dl.owns_sink) output_adopt(&pl->dl.own, &job->out[pl->noutputs]);
  if (job->ticket) job->ticket->end = job->done_offset;
  checkpoint_unref(job->ticket);
  job->next = pl->spare_jobs;
  pl->spare_jobs = job;
  pl->jobs_back++;
  if (--pl->jobs_in_flight == 0) uv_unref((uv_handle_t *)&pl->notify);
  if (!src) return; /* a tick */
  src->in_flight--;
  if (src->read_all && src->in_flight == 0) source_finished(pl, src);
  else hold_or_go(pl, src);
}

void pipeline_tick(pipeline *pl, pl_filter *f, bool last)
{
  int64_t now = msg_now_ns();

  for (size_t i = 0; i < pl->nworkers; i++) {
    work_job *job = take_job(pl);
    if (!job) {
      log_error("filter '%s': out of memory for its timer_event", f->name);
      continue;
    }
    job->tick_filter = (size_t)(f - pl->filters);
    job->tick_ns = now;
    job->tick_last = last;
    if (pl->jobs_in_flight++ == 0) uv_ref((uv_handle_t *)&pl->notify);
    worker_queue(&pl->workers[i], job);
  }
}

static void on_filter_tick(uv_timer_t *t)
{
  pl_filter *f = t->data;

  pipeline_tick(f->pl, f, false);
}

/* The inputs have all finished: each filter's timer stops, and its last
 * timer_event (shutdown) sends what it still holds on, before the outputs
 * drain. */
static void last_ticks(pipeline *pl)
{
  pl->last_ticks = true;
  for (size_t i = 0; i < pl->nfilters; i++) {
    if (!pl->filters[i].ticker_interval_ms) continue;
    uv_timer_stop(&pl->filters[i].tick);
    if (pl->filters[i].kept) continue; /* it goes on, with what it holds */
    pipeline_tick(pl, &pl->filters[i], true);
  }
}

/* Before the loop waits (prepare) and after its I/O callbacks (check):
 * what the iteration queued goes to the workers at once, and what the
 * passthrough queued to the outputs. */
static void send_jobs(pipeline *pl)
{
  for (size_t i = 0; i < pl->nworkers; i++) worker_send(&pl->workers[i]);
  if (pl->passed_unflushed) {
    pl->passed_unflushed = false;
    pipeline_each_sink(pl, output_flush);
    apply_backpressure(pl);
  }
}

void pipeline_send_before(uv_prepare_t *h)
{
  send_jobs(h->data);
}

void pipeline_send_after(uv_check_t *h)
{
  send_jobs(h->data);
}

void pipeline_jobs_back(uv_async_t *a)
{
  pipeline *pl = a->data;

  for (size_t i = 0; i < pl->nworkers; i++) {
    work_job *job;
    while ((job = worker_take_done(&pl->workers[i]))) adopt(pl, job);
  }
  pipeline_each_sink(pl, output_flush);
  apply_backpressure(pl);
}

/* Once a second: a pipeline that took no job back since the last look and
 * whose outputs hold nothing gives the memory it freed back to the kernel,
 * once each quiet spell (heap.h). */
static void on_quiet_timer(uv_timer_t *t)
{
  pipeline *pl = t->data;

  if (pl->jobs_back != pl->jobs_back_seen) {
    pl->jobs_back_seen = pl->jobs_back;
    pl->heap_dirty = true;
  } else if (pl->heap_dirty && !any_sink(pl, busy)) {
    heap_release();
    pl->heap_dirty = false;
  }
}

static void save_transport(output_sink *o)
{
  if (o->tx->checkpoint) o->tx->checkpoint(o);
}

static void on_checkpoint_timer(uv_timer_t *t)
{
  pipeline *pl = t->data;

  checkpoint_save_start(pl);
  pipeline_each_sink(pl, save_transport);
}

static void on_finished(void *ud, input *in, const char *error)
{
  pipeline *pl = ud;
  pl_source *src = (pl_source *)in;

  if (src->join.rule && !in->hold_partial) pipeline_source_flush(src);
  src->read_all = true;
  src->error = error;
  if (src->in_flight == 0) source_finished(pl, src);
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
  /* What fails makes the run fail (on_sink_failed); what a disk buffer
   * keeps does not. */
  pl->past_deadline = true;
  log_warning("outputs still hold records at the stop deadline; failing them, "
          "or keeping them in a disk buffer");
  for (size_t i = 0; i < pl->noutputs; i++) fail_queued(&pl->outputs[i].sink);
  if (pl->dl.owns_sink) {
    output_flush(&pl->dl.own);
    fail_queued(&pl->dl.own);
  }
}

/* why: the signal's name, or NULL when the cause was logged already. The
 * owner hears of a stop (hooks.stopping), but not of a reload's. */
static void pipeline_stop(pipeline *pl, const char *why)
{
  if (pl->stopping && pl->reloading && why && !pl->stop_after_reload) {
    /* A stop signal while a reload stops the run: the reload goes on, and
     * the owner stops the next pipeline once it runs, so that what this
     * one handed on (sandboxes, sockets, connections with a message
     * begun) is ended there as a stop ends it, not lost. */
    pl->stop_after_reload = true;
    log_msg("%s: stopping once the reload is done", why);
    if (pl->hooks.stopping) pl->hooks.stopping(pl->hooks.ud, why);
    return;
  }
  if (pl->stopping) {
    if (why) {
      log_msg("%s: stopping now", why);
      on_deadline(&pl->deadline);
    }
    return;
  }
  if (why) log_msg("%s: stopping", why);
  pl->stopping = true;
  if (pl->hooks.stopping && !pl->reloading)
    pl->hooks.stopping(pl->hooks.ud, why);
  for (size_t i = 0; i < pl->ninputs; i++)
    pl->inputs[i].kind->stop(&pl->inputs[i]);
  uv_timer_start(&pl->deadline, on_deadline, pl->stop_timeout_ms, 0);
  uv_unref((uv_handle_t *)&pl->deadline);
}

static void on_stop_signal(void *ud, const char *signame)
{
  pipeline_stop(ud, signame);
}

void pipeline_stop_signal(pipeline *pl, const char *signame)
{
  pipeline_stop(pl, signame);
}

static void reopen(output_sink *o)
{
  output_reopen(o);
}

void pipeline_reopen(pipeline *pl)
{
  pipeline_each_sink(pl, reopen);
}

static void on_reopen_signal(void *ud, const char *signame)
{
  log_msg("%s: reopening output files", signame);
  pipeline_reopen(ud);
}

/* SIGHUP: the owner reloads (hooks.reload), or else the files reopen. */
static void on_reload_signal(void *ud, const char *signame)
{
  pipeline *pl = ud;

  if (pl->hooks.reload) pl->hooks.reload(pl->hooks.ud, signame);
  else on_reopen_signal(pl, signame);
}

bool pipeline_stop_for_reload(pipeline *pl, const config *next)
{
  if (pl->stopping) return false;
  pl->reloading = true;
  for (size_t i = 0; i < pl->nfilters; i++) {
    pl_filter *f = &pl->filters[i];
    const config_plugin *p = config_find(next, f->name, PLUGIN_FILTER);
    f->kept = p && pipeline_digest(pl, PLUGIN_FILTER, f->name) ==
                       shelf_digest(next, p);
  }
  pl->next = next;
  pipeline_stop(pl, NULL);
  pl->next = NULL;
  return true;
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
  msg_origin from = {r->input, r->position, r->is_offset, bytes, len, r->ack,
                     NULL, NULL, 0};

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

  /* At the deadline, the failure is the stop's, logged by on_deadline. */
  if (s->state == OUTPUT_FAILED && !s->failure_reported && !pl->past_deadline) {
    s->failure_reported = true;
    log_error("%s failed: %s; stopping the run", s->name, s->error);
    pipeline_stop(pl, NULL);
  }
  apply_backpressure(pl);
}

output_events pipeline_sink_events(pipeline *pl)
{
  return (output_events){on_sink_failed, on_sink_changed, pl};
}

/* A stop came inside a line no checkpoint keeps (input.h), or the file
 * was truncated under it: a record read, and dead-lettered with its bytes
 * and why. */
static void on_cut(void *ud, input *in, const char *bytes, size_t len,
                   uint64_t position, const char *reason)
{
  pipeline *pl = ud;
  pl_input *pi = ((pl_source *)in)->owner;
  msg_origin from = {in->name, position, in->is_offset, bytes, len, NULL,
                     in->path, ((pl_source *)in)->from, 0};

  pi->records++;
  pi->dead++;
  dead_letter_write(&pl->dl, "input", in->name, reason, &from);
}

/* A run of whole lines of a source that passes through (input.h): the
 * passthrough takes it whole, unless its lines are joined or a benchmark
 * times each one (pipeline_set_probe). */
static void on_lines(void *ud, input *in, const char *bytes, size_t len,
                     size_t count, uint64_t position)
{
  pipeline *pl = ud;
  pl_source *src = (pl_source *)in;
  input_run_cursor c = {bytes, bytes + len, position, in->is_offset};
  size_t n;

  if (!src->join.rule && !pl->probe.due) {
    take_ticket(pl, src);
    passthrough_lines(src, bytes, len, count, position);
    return;
  }
  while (input_run_next(&c, &bytes, &n, &position))
    on_record(pl, in, bytes, n - 1, position, 0);
}

input_handler pipeline_input_handler(const pl_input *pi)
{
  pipeline *pl = pi->pl;

  return (input_handler){on_record, pi->passthrough && pl->pass_lines
                                        ? on_lines : NULL,
                         on_cut, on_chunk_done, NULL, on_finished, pl, NULL};
}

static bool writes(const output_sink *o, const struct stat *sb)
{
  struct stat os;

  return o->path && fstat(o->fd, &os) == 0 && os.st_dev == sb->st_dev &&
         os.st_ino == sb->st_ino;
}

bool pipeline_writes(pipeline *pl, const struct stat *sb)
{
  for (size_t i = 0; i < pl->noutputs; i++)
    if (writes(&pl->outputs[i].sink, sb)) return true;
  return pl->dl.owns_sink && writes(&pl->dl.own, sb);
}

typedef struct {
  pipeline_stats *st;
  size_t max;              /* room in st->plugins */
} plugin_sum;

/* Adds a worker's instance of a plugin into the plugin's total. */
static void add_plugin(void *ud, const worker_plugin *p)
{
  plugin_sum *sum = ud;
  pipeline_stats *st = sum->st;
  size_t i = 0;

  while (i < st->nplugins && (strcmp(st->plugins[i].role, p->role) != 0 ||
                              strcmp(st->plugins[i].name, p->name) != 0))
    i++;
  if (i == st->nplugins) {
    if (i == sum->max) return;
    st->plugins[st->nplugins++] = (pipeline_plugin_stats){p->name, p->role, {0}};
  }
  sandbox_stats_add(&st->plugins[i].sb, &p->stats);
}

/* Every counter here is the loop thread's: workers' counts come back with
 * their jobs, their plugins' under each worker's lock. */
const pipeline_stats *pipeline_snapshot(pipeline *pl)
{
  pipeline_stats *st = &pl->snapshot;
  uint64_t lost = pl->dl.failed + pl->records_lost, held_ns;

  st->ninputs = pl->ninputs;
  for (size_t i = 0; i < pl->ninputs; i++) {
    const pl_input *pi = &pl->inputs[i];
    st->inputs[i] = (pipeline_input_stats){
      .name = pi->name, .records = pi->records, .overlong = pi->overlong,
      .truncated = pi->truncated, .dead = pi->dead,
      .dead_pieces = pi->dead_pieces, .messages = pi->messages,
      .empty = pi->empty};
    st->inputs[i].counters = pi->kind->counters
        ? pi->kind->counters((pl_input *)pi, st->inputs[i].values) : NULL;
    st->inputs[i].failure = pi->failure[0] ? pi->failure : NULL;
  }
  st->noutputs = pl->noutputs;
  for (size_t i = 0; i < pl->noutputs; i++) {
    const pl_output *o = &pl->outputs[i];
    st->outputs[i] = (pipeline_output_stats){
      .name = o->name, .matched = o->encoded.matched,
      .delivered = o->sink.records_written,
      .failed = o->write_failed + o->encoded.failed,
      .skipped = o->encoded.skipped, .released = o->sink.records_released,
      .queued_records = output_queued_records(&o->sink),
      .queued_bytes = output_queued(&o->sink), .has_tx = o->sink.tx->stats != NULL,
      .timed = o->sink.latency.count};
    latency_report(&o->sink.latency, st->outputs[i].latency_ms);
    if (o->sink.state == OUTPUT_FAILED || o->sink.state == OUTPUT_RETRYING)
      st->outputs[i].failure = o->sink.error;
    if (o->sink.tx->stats) o->sink.tx->stats(&o->sink, &st->outputs[i].tx);
    lost += o->sink.records_lost;
  }
  st->nfilters = pl->nfilters;
  for (size_t i = 0; i < pl->nfilters; i++) {
    const router_filter_counts *c = &pl->filters[i].counts;
    st->filters[i] = (pipeline_filter_stats){
      .name = pl->filters[i].name, .matched = c->matched,
      .injected = c->injected, .dropped = c->dropped, .failed = c->failed,
      .ticks = c->ticks, .ticks_failed = c->ticks_failed};
  }
  if (pl->dl.owns_sink) lost += pl->dl.own.records_lost;
  st->dead_letters = pl->dl.count + pl->routed_dead_letters;
  st->dead_letter_bytes = pl->dl.bytes + pl->routed_dead_letter_bytes;
  st->dead_letters_written = dead_letter_written(&pl->dl);
  st->dead_letters_refused = pl->dl.owns_sink ? pl->dl.own.records_refused : 0;
  st->dead_letters_lost = lost;
  st->unrouted = pl->unrouted;
  st->paused = pl->paused;
  st->pauses = pl->pauses;
  held_ns = pl->paused ? uv_hrtime() - pl->paused_since : 0;
  st->paused_ms = (pl->paused_ns + held_ns) / 1000000;
  st->paused_now_ms = held_ns / 1000000;
  st->stopped_role = st->stopped_name = NULL;
  for (size_t i = 0; i < pl->nworkers && !st->stopped_role; i++) {
    st->stopped_role = pl->workers[i].stopped_role;
    st->stopped_name = pl->workers[i].stopped_name;
  }
  st->nplugins = 0;
  for (size_t i = 0; i < pl->nworkers; i++)
    worker_plugin_stats(&pl->workers[i], add_plugin,
                        &(plugin_sum){st, pl->ninputs_max});
  return st;
}

/* Rewrites the metrics file; a failure is logged once, until a write
 * works again. */
static void write_metrics(pipeline *pl)
{
  char err[512];

  if (metrics_write(pl->metrics_path, pipeline_snapshot(pl), err,
                    sizeof err) != 0) {
    if (!pl->metrics_failing) log_warning("metrics: %s", err);
    pl->metrics_failing = true;
  } else if (pl->metrics_failing) {
    log_msg("metrics: %s written again", pl->metrics_path);
    pl->metrics_failing = false;
  }
}

static void on_metrics_timer(uv_timer_t *t)
{
  write_metrics(t->data);
}

static void on_stats_timer(uv_timer_t *t)
{
  pipeline *pl = t->data;
  run_stats_interval(&pl->stats, pipeline_snapshot(pl));
}

/* "input 'tcp': 3 connections, 0 refused over max_connections, ...". */
static void log_counters(const pipeline_input_stats *in)
{
  char line[1024];
  size_t n = 0;

  for (size_t i = 0; in->counters[i].metric && n < sizeof line; i++)
    n += (size_t)snprintf(line + n, sizeof line - n, "%s%" PRIu64 " %s",
                          i ? ", " : "", in->values[i],
                          in->counters[i].summary);
  log_msg("input '%s': %s", in->name, line);
}

/* "decoder 'json': 9 calls, 2 failed (1 error, 1 cpu), ...": the failures
 * by cause name only the causes that happened. */
static void log_plugin(const pipeline_plugin_stats *p)
{
  const sandbox_stats *s = &p->sb;
  char causes[256] = "";
  size_t n = 0;

  for (int c = SANDBOX_LIMIT_NONE; c <= SANDBOX_LIMIT_OUTPUT; c++)
    if (s->failures[c] && n < sizeof causes)
      n += (size_t)snprintf(causes + n, sizeof causes - n, "%s%" PRIu64 " %s",
                            n ? ", " : " (", s->failures[c],
                            metrics_failure_cause(c));
  log_msg("%s '%s': %" PRIu64 " calls, %" PRIu64 " failed%s%s, %" PRIu64
          " rejected, %" PRIu64 " over input_limit, %" PRIu64 " stops, %"
          PRIu64 " restarts; CPU %.3f s, memory %zu bytes (peak %zu)", p->role,
          p->name, s->calls, s->failed, causes, n ? ")" : "", s->rejected,
          s->failures[SANDBOX_LIMIT_INPUT], s->stops, s->restarts,
          (double)s->cpu_ns / 1e9, s->memory, s->memory_peak);
}

static void log_summary(pipeline *pl)
{
  const pipeline_stats *st = pipeline_snapshot(pl);

  for (size_t i = 0; i < st->ninputs; i++) {
    const pipeline_input_stats *in = &st->inputs[i];
    char pieces[64] = "";
    if (in->dead_pieces)
      snprintf(pieces, sizeof pieces, " (overlong ones in %" PRIu64 " pieces)",
               in->dead_pieces);
    log_msg("input '%s': %" PRIu64 " records (%" PRIu64 " longer than "
            "max_line, %" PRIu64 " pieces truncated), %" PRIu64 " dead-letter "
            "records%s; %" PRIu64 " messages made of them, %" PRIu64 " records "
            "made none", in->name, in->records, in->overlong, in->truncated,
            in->dead, pieces, in->messages, in->empty);
    if (in->counters) log_counters(in);
  }
  for (size_t i = 0; i < st->nfilters; i++) {
    const pipeline_filter_stats *f = &st->filters[i];
    log_msg("filter '%s': %" PRIu64 " messages matched, %" PRIu64
            " injected, %" PRIu64 " dropped, %" PRIu64 " failed; %" PRIu64
            " timer events (%" PRIu64 " failed)", f->name, f->matched,
            f->injected, f->dropped, f->failed, f->ticks, f->ticks_failed);
  }
  for (size_t i = 0; i < st->nplugins; i++) log_plugin(&st->plugins[i]);
  for (size_t i = 0; i < st->noutputs; i++) {
    output_sink *o = &pl->outputs[i].sink;
    char more[512] = "";
    log_msg("output '%s': %" PRIu64 " delivered, %" PRIu64 " failed, %" PRIu64
            " skipped, %" PRIu64 " left for the next run, %" PRIu64 " queued, "
            "of %" PRIu64 " messages matched", st->outputs[i].name,
            st->outputs[i].delivered, st->outputs[i].failed,
            st->outputs[i].skipped, st->outputs[i].released,
            st->outputs[i].queued_records, st->outputs[i].matched);
    if (st->outputs[i].timed) {
      const double *ms = st->outputs[i].latency_ms;
      log_msg("output '%s': latency from read to acknowledged p50 %.1f ms, p95 "
              "%.1f ms, p99 %.1f ms, p99.9 %.1f ms, max %.1f ms",
              st->outputs[i].name, ms[0], ms[1], ms[2], ms[3], ms[4]);
    }
    if (o->tx->summary) o->tx->summary(o, more, sizeof more);
    if (more[0]) log_msg("output '%s': %s", st->outputs[i].name, more);
  }
  log_msg("%" PRIu64 " dead-letter records (%" PRIu64 " written, %" PRIu64
          " could not be written), %" PRIu64 " messages matched no output, "
          "inputs paused %" PRIu64 " times for %" PRIu64 " ms",
          st->dead_letters, st->dead_letters_written, st->dead_letters_lost,
          st->unrouted, st->pauses, st->paused_ms);
  if (st->dead_letters_refused)
    log_msg("%" PRIu64 " dead-letter records could not be written because "
            "the dead-letter path was full (dead_letter_max_bytes %" PRIu64
            ", dead_letter_keep %u)", st->dead_letters_refused,
            pl->dl.own.max_file_bytes, pl->dl.own.keep_files);
  run_stats_total(&pl->stats, st);
}

void pipeline_set_hooks(pipeline *pl, const pipeline_hooks *hooks)
{
  pl->hooks = *hooks;
}

int pipeline_run(pipeline *pl)
{
  char err[512];
  signals_handler sh = {on_stop_signal, on_reload_signal, on_reopen_signal, pl};

  run_stats_start(&pl->stats);
  if (pl->stats_interval_ms) {
    uv_timer_start(&pl->stats_timer, on_stats_timer, pl->stats_interval_ms,
                   pl->stats_interval_ms);
    uv_unref((uv_handle_t *)&pl->stats_timer);
  }
  if (pl->checkpointing) {
    uv_timer_start(&pl->checkpoints, on_checkpoint_timer,
                   pl->checkpoint_interval_ms, pl->checkpoint_interval_ms);
    uv_unref((uv_handle_t *)&pl->checkpoints);
  }
  /* What building the pipeline freed goes at the first quiet look. */
  pl->heap_dirty = true;
  uv_timer_start(&pl->quiet, on_quiet_timer, QUIET_LOOK_MS, QUIET_LOOK_MS);
  uv_unref((uv_handle_t *)&pl->quiet);
  if (pl->metrics_path) {
    write_metrics(pl);
    uv_timer_start(&pl->metrics, on_metrics_timer, pl->metrics_interval_ms,
                   pl->metrics_interval_ms);
    uv_unref((uv_handle_t *)&pl->metrics);
  }
  for (size_t i = 0; i < pl->nfilters; i++) {
    pl_filter *f = &pl->filters[i];
    if (!f->ticker_interval_ms) continue;
    uv_timer_start(&f->tick, on_filter_tick, f->ticker_interval_ms,
                   f->ticker_interval_ms);
    uv_unref((uv_handle_t *)&f->tick);
  }
  for (size_t i = 0; i < pl->ninputs; i++) {
    pl_input *pi = &pl->inputs[i];
    if (pi->kind->start(pi, err, sizeof err) != 0) {
      log_error("%s", err);
      snprintf(pi->failure, sizeof pi->failure, "%s", err);
      pl->status = 1;
      continue;
    }
    pl->running++;
  }
  if (pl->hooks.started) pl->hooks.started(pl->hooks.ud);
  /* Only now: a stop or reload signal that came before (during a reload,
   * between two pipelines) stops inputs that have started, which an
   * input's stop expects; signals.c held it until here. */
  signals_set_handler(&sh);
  /* The loop ends when every input has finished and no output waits. */
  do {
    uv_run(pl->loop, UV_RUN_DEFAULT);
    if (pl->running == 0 && !pl->last_ticks) last_ticks(pl);
    pipeline_each_sink(pl, output_flush);
    apply_backpressure(pl);
  } while (pl->running > 0 || pl->jobs_in_flight > 0 || any_sink(pl, busy));
  signals_set_handler(NULL);
  checkpoint_save_now(pl);
  pipeline_each_sink(pl, save_transport);
  if (pl->probe.drained) pl->probe.drained(pl->probe.ud);
  pipeline_stop_workers(pl);
  log_summary(pl);
  if (pl->metrics_path) write_metrics(pl);
  if (pipeline_snapshot(pl)->dead_letters_lost > 0) pl->status = 1;
  return pl->status;
}

void pipeline_set_probe(pipeline *pl, const pipeline_probe *probe)
{
  pl->probe = *probe;
}

void pipeline_request_stop(pipeline *pl)
{
  pipeline_stop(pl, NULL);
}
