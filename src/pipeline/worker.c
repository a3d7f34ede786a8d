/* worker.c - see worker.h. */
#include "worker.h"

#include "thread_name.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int work_job_init(work_job *job, size_t nsinks, size_t nfilters)
{
  memset(job, 0, sizeof *job);
  job->out = calloc(nsinks, sizeof *job->out);
  job->counts.outputs = calloc(nsinks, sizeof *job->counts.outputs);
  job->counts.filters = calloc(nfilters ? nfilters : 1,
                               sizeof *job->counts.filters);
  if (!job->out || !job->counts.outputs || !job->counts.filters) {
    free(job->out);
    free(job->counts.outputs);
    free(job->counts.filters);
    return -1;
  }
  job->nsinks = nsinks;
  job->nfilters = nfilters;
  for (size_t i = 0; i < nsinks; i++) output_collector_init(&job->out[i]);
  return 0;
}

void work_job_free(work_job *job)
{
  for (size_t i = 0; i < job->nsinks; i++) output_close(&job->out[i]);
  free(job->out);
  free(job->counts.outputs);
  free(job->counts.filters);
  free(job->recs);
  buf_free(&job->bytes);
}

void work_job_reset(work_job *job)
{
  job->next = NULL;
  job->input = NULL;
  job->source = NULL;
  job->file = NULL;
  buf_clear(&job->bytes);
  job->nrecs = 0;
  job->ticket = NULL;
  job->done_offset = 0;
  memset(job->counts.outputs, 0, job->nsinks * sizeof *job->counts.outputs);
  memset(job->counts.filters, 0,
         job->nfilters * sizeof *job->counts.filters);
  job->counts = (router_counts){.outputs = job->counts.outputs,
                                .filters = job->counts.filters};
  job->dead_letters = 0;
  job->dead_letter_bytes = 0;
  job->tick_last = false;
}

bool work_job_add(work_job *job, const char *bytes, size_t len,
                  uint64_t position, unsigned piece, const char *from)
{
  if (job->nrecs == job->recs_cap) {
    size_t cap = job->recs_cap ? job->recs_cap * 2 : 1024;
    work_record *p = realloc(job->recs, cap * sizeof *p);
    if (!p) return false;
    job->recs = p;
    job->recs_cap = cap;
  }
  job->recs[job->nrecs] = (work_record){job->bytes.len, len, position, piece,
                                        from != NULL, 0};
  if (!buf_append(&job->bytes, bytes, len) ||
      (from && !buf_append(&job->bytes, from, strlen(from) + 1)))
    return false;
  job->nrecs++;
  return true;
}

/* Notes in the job the first of the worker's plugins that is stopped,
 * for /health: only this thread may look at its sandboxes. */
static void note_stopped(worker *w, work_job *job)
{
  job->stopped_role = job->stopped_name = NULL;
  if (job->input && job->input->decoder &&
      sandbox_is_stopped(job->input->decoder)) {
    job->stopped_role = "decoder";
    job->stopped_name = job->input->decoder_name;
    return;
  }
  for (size_t i = 0; i < w->noutputs; i++)
    if (w->outputs[i].encoder && sandbox_is_stopped(w->outputs[i].encoder)) {
      job->stopped_role = "encoder";
      job->stopped_name = w->outputs[i].encoder_name;
      return;
    }
  for (size_t i = 0; i < w->nfilters; i++)
    if (w->filters[i].sb && sandbox_is_stopped(w->filters[i].sb)) {
      job->stopped_role = "filter";
      job->stopped_name = w->filters[i].name;
      return;
    }
}

/* Every sandbox's counts, since an encoder or filter may have run for any
 * input's job: as a job ends, under the worker's lock, and once built,
 * before the loop thread looks. */
static void copy_plugin_stats(worker *w)
{
  for (size_t i = 0; i < w->nplugins; i++)
    sandbox_get_stats(w->plugins[i].sb, &w->plugins[i].stats);
}

static void add_plugin(worker *w, const char *role, const char *name,
                       const sandbox *sb)
{
  if (sb) w->plugins[w->nplugins++] = (worker_plugin){role, name, sb, {0}};
}

/* On the thread, once built: the list of its sandboxes whose counts go
 * back to the loop thread. -1 when out of memory. */
static int list_plugins(worker *w)
{
  w->plugins = calloc(w->ninputs + w->noutputs + w->nfilters + 1,
                      sizeof *w->plugins);
  if (!w->plugins) {
    snprintf(w->error, sizeof w->error, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < w->ninputs; i++)
    add_plugin(w, "decoder", w->inputs[i]->decoder_name,
               w->inputs[i]->decoder);
  for (size_t i = 0; i < w->noutputs; i++)
    add_plugin(w, "encoder", w->outputs[i].encoder_name,
               w->outputs[i].encoder);
  for (size_t i = 0; i < w->nfilters; i++)
    add_plugin(w, "filter", w->filters[i].name, w->filters[i].sb);
  /* A worker no job reaches still holds its states. */
  copy_plugin_stats(w);
  return 0;
}

/* Routes every record of the job into its collectors. */
static void run_job(worker *w, work_job *job)
{
  uint64_t dead_letters = w->dl.count, bytes = w->dl.bytes;

  w->router.counts = &job->counts;
  for (size_t i = 0; i < w->noutputs; i++) w->outputs[i].sink = &job->out[i];
  w->dl.sink = &job->out[w->dl_output < w->noutputs ? w->dl_output
                                                    : job->nsinks - 1];
  if (!job->input) {
    router_tick(&w->router, job->tick_filter, job->tick_ns, job->tick_last);
    job->dead_letters = w->dl.count - dead_letters;
    job->dead_letter_bytes = w->dl.bytes - bytes;
    note_stopped(w, job);
    return;
  }
  for (size_t i = 0; i < job->nrecs; i++) {
    const work_record *r = &job->recs[i];
    msg_origin o = {job->input->name, r->position, job->is_offset,
                    job->bytes.data + r->off, r->len, job->ticket,
                    job->file,
                    r->has_from ? job->bytes.data + r->off + r->len : NULL,
                    r->due_us ? r->due_us : job->read_us};
    router_record(&w->router, job->input, &o, r->piece);
  }
  router_flush(&w->router);
  job->dead_letters = w->dl.count - dead_letters;
  job->dead_letter_bytes = w->dl.bytes - bytes;
  note_stopped(w, job);
}

/* On the thread that runs its jobs: its router and sandboxes. */
static int build_router(worker *w)
{
  int rc = w->build(w->build_ud, w, w->error, sizeof w->error);

  if (rc == 0) rc = list_plugins(w);
  /* Also after a failure: router_free then frees what was built. */
  router_init(&w->router, w->outputs, w->noutputs, w->filters, w->nfilters,
              &w->dl);
  return rc;
}

/* On the same thread, as it ends. */
static void free_router(worker *w)
{
  /* The sandboxes go on the thread that made them, but for those a reload
   * keeps. */
  if (w->shelve) w->shelve(w->build_ud, w);
  for (size_t i = 0; i < w->ninputs; i++) router_input_free(w->inputs[i]);
  router_free(&w->router);
  /* The counts stay for the summary; the sandboxes are gone. */
  for (size_t i = 0; i < w->nplugins; i++) w->plugins[i].sb = NULL;
}

/* The job is done: it goes back to the loop. Under the lock. */
static void job_done(worker *w, work_job *job)
{
  copy_plugin_stats(w);
  job->next = NULL;
  if (w->done_tail) w->done_tail->next = job;
  else w->done = job;
  w->done_tail = job;
}

static void *worker_main(void *arg)
{
  worker *w = arg;
  char name[16];
  int rc;

  snprintf(name, sizeof name, "lj:worker%u", w->id);
  thread_name_set(name);
  rc = build_router(w);
  pthread_mutex_lock(&w->lock);
  w->ready = true;
  w->failed = rc != 0;
  pthread_cond_broadcast(&w->wake);
  while (rc == 0) {
    work_job *job;
    while (!w->todo && !w->quit) pthread_cond_wait(&w->wake, &w->lock);
    if (!w->todo) break;
    job = w->todo;
    w->todo = job->next;
    if (!w->todo) w->todo_tail = NULL;
    pthread_mutex_unlock(&w->lock);
    run_job(w, job);
    pthread_mutex_lock(&w->lock);
    job_done(w, job);
    uv_async_send(w->notify);
  }
  pthread_mutex_unlock(&w->lock);
  free_router(w);
  return NULL;
}

int worker_start(worker *w, uv_async_t *notify, char *err, size_t errlen)
{
  int rc;

  w->notify = notify;
  pthread_mutex_init(&w->lock, NULL);
  pthread_cond_init(&w->wake, NULL);
  if (w->on_loop) {
    w->started = true;
    if (build_router(w) == 0) return 0;
    snprintf(err, errlen, "%s", w->error);
    return -1;
  }
  rc = pthread_create(&w->thread, NULL, worker_main, w);
  if (rc != 0) {
    snprintf(err, errlen, "cannot start a worker thread: %s", strerror(rc));
    return -1;
  }
  w->started = true;
  pthread_mutex_lock(&w->lock);
  while (!w->ready) pthread_cond_wait(&w->wake, &w->lock);
  pthread_mutex_unlock(&w->lock);
  if (w->failed) {
    snprintf(err, errlen, "%s", w->error);
    return -1;
  }
  return 0;
}

void worker_queue(worker *w, work_job *job)
{
  job->next = NULL;
  job->worker = w;
  if (w->queued_tail) w->queued_tail->next = job;
  else w->queued = job;
  w->queued_tail = job;
}

void worker_send(worker *w)
{
  if (!w->queued) return;
  if (w->on_loop) {
    /* The jobs run now; they come back on the loop's next turn, as a
     * thread's do. */
    for (work_job *job = w->queued, *next; job; job = next) {
      next = job->next;
      run_job(w, job);
      job_done(w, job);
    }
    w->queued = w->queued_tail = NULL;
    uv_async_send(w->notify);
    return;
  }
  pthread_mutex_lock(&w->lock);
  if (w->todo_tail) w->todo_tail->next = w->queued;
  else w->todo = w->queued;
  w->todo_tail = w->queued_tail;
  pthread_cond_signal(&w->wake);
  pthread_mutex_unlock(&w->lock);
  w->queued = w->queued_tail = NULL;
}

work_job *worker_take_done(worker *w)
{
  work_job *job;

  pthread_mutex_lock(&w->lock);
  job = w->done;
  if (job) {
    w->done = job->next;
    if (!w->done) w->done_tail = NULL;
  }
  pthread_mutex_unlock(&w->lock);
  return job;
}

void worker_stop(worker *w)
{
  if (!w->started) return;
  if (w->on_loop) {
    free_router(w);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    w->started = false;
    return;
  }
  pthread_mutex_lock(&w->lock);
  w->quit = true;
  pthread_cond_broadcast(&w->wake);
  pthread_mutex_unlock(&w->lock);
  pthread_join(w->thread, NULL);
  pthread_cond_destroy(&w->wake);
  pthread_mutex_destroy(&w->lock);
  w->started = false;
}

void worker_plugin_stats(worker *w, void (*fn)(void *ud, const worker_plugin *p),
                         void *ud)
{
  /* Before worker_start or after worker_stop, the thread does not write. */
  if (w->started) pthread_mutex_lock(&w->lock);
  for (size_t i = 0; i < w->nplugins; i++) fn(ud, &w->plugins[i]);
  if (w->started) pthread_mutex_unlock(&w->lock);
}
