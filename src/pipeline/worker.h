/*
 * worker.h - a thread that runs the per-record path (router.h) for the
 * inputs pinned to it, so decoders and encoders use more than one core
 * while the loop thread does the I/O.
 *
 * The loop thread cuts a read into records and copies them into a job; the
 * job goes to the worker its input is pinned to, which routes each record
 * with its own router (its own sandboxes, created on its own thread so the
 * CPU limit measures the right clock) into the job's collectors: one
 * output_sink in collect mode per output and one for the dead-letter file.
 * The finished job comes back to the loop thread (uv_async), which moves
 * the collected records into the real sinks, in order. A source is always
 * on the same worker and jobs come back in the order they went, so each
 * source's records keep their order on every output. No Lua state and no
 * real sink is ever touched by two threads. A job also carries back what
 * routing counted, which the loop thread adds up, so the counters are
 * read there at any time.
 */
#ifndef LUMBERJIT_WORKER_H
#define LUMBERJIT_WORKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "buf.h"
#include "checkpoint.h"
#include "output.h"
#include "router.h"

typedef struct {
  size_t off, len;          /* the record's bytes in job->bytes */
  uint64_t position;
  unsigned piece;
  bool has_from;            /* its sender's address follows its bytes, */
                            /* NUL-terminated */
  uint64_t due_us;          /* when it was due (pipeline_set_probe); 0: its
                               latency counts from the job's read_us */
} work_record;

typedef struct work_job {
  struct work_job *next;
  router_input *input;      /* owned by the worker this job goes to; NULL:
                               a tick, no records */
  void *source;             /* the loop thread's: what was read */
  const char *file;         /* the file read (tail_input), or NULL */
  bool is_offset;
  buf bytes;
  work_record *recs;
  size_t nrecs, recs_cap;
  checkpoint_ticket *ticket; /* its processing reference, dropped on return */
  uint64_t done_offset;
  uint64_t read_us;         /* when the loop handed it on (msg_origin) */
  output_sink *out;         /* nsinks collectors; the last: dead letters */
  size_t nsinks, nfilters;
  router_counts counts;     /* what routing its records counted */
  uint64_t dead_letters;    /* records it dead-lettered */
  uint64_t dead_letter_bytes; /* and their bytes */
  /* A tick: filter tick_filter's timer_event(tick_ns, tick_last). */
  size_t tick_filter;
  int64_t tick_ns;
  bool tick_last;
  struct worker *worker;    /* where it ran (worker_queue) */
  /* A plugin of that worker that is stopped as the job ends (sandbox.h:
   * max_failures), read there, where its sandbox is: "decoder", "encoder"
   * or "filter", and its name; NULL: none. */
  const char *stopped_role, *stopped_name;
} work_job;

typedef struct worker worker;

/* One of a worker's sandboxes and what it counted as of the worker's last
 * job: the worker copies the counts in under its lock as each job ends (a
 * few small structs a job, nothing a record), and the loop thread reads
 * them under it (worker_plugin_stats), so no sandbox is read off its own
 * thread. */
typedef struct {
  const char *role;             /* "decoder", "encoder" or "filter" */
  const char *name;             /* the plugin's */
  const sandbox *sb;            /* the worker's only */
  sandbox_stats stats;
} worker_plugin;

/* Builds the worker's router on the worker's thread: encoders and matchers
 * for every output, decoders for the pinned inputs. */
typedef int (*worker_build_fn)(void *ud, worker *w, char *err, size_t errlen);

struct worker {
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  work_job *todo, *todo_tail;   /* to the worker */
  work_job *queued, *queued_tail; /* the loop thread's, until worker_send */
  work_job *done, *done_tail;   /* back to the loop */
  bool quit, started, ready, failed;
  /* It has no thread: its jobs run on the loop thread as they are sent
   * (workers = 0), its sandboxes made there. */
  bool on_loop;
  unsigned id;                  /* names the thread: lj:worker<id> */
  char error[512];
  uv_async_t *notify;           /* the loop's: jobs came back */

  worker_build_fn build;
  /* On the thread as it ends, before its router is freed: may take the
   * sandboxes a reload keeps out of it (sandbox_shelf.h). NULL: none. */
  void (*shelve)(void *ud, worker *w);
  void *build_ud;
  router router;                /* built on the thread */
  router_output *outputs;       /* its matchers and encoders */
  size_t noutputs;
  router_filter *filters;       /* its filters' instances */
  size_t nfilters;
  router_input **inputs;        /* pinned to it; built on the thread */
  size_t ninputs;
  dead_letter dl;               /* sink: the job's last collector */
  size_t dl_output;             /* dead letters go to this output's
                                   collector; noutputs: their own file */
  worker_plugin *plugins;       /* its sandboxes, once built; freed with
                                   outputs and filters */
  size_t nplugins;
  /* The loop thread's: what its last job back said was stopped. */
  const char *stopped_role, *stopped_name;
};

/* Starts the thread and waits until it has built its router (on_loop:
 * builds it here); -1 with the reason when building failed. */
int worker_start(worker *w, uv_async_t *notify, char *err, size_t errlen);
/* Loop thread: queues a job; worker_send hands the queue over with one
 * lock and one wake-up, so the reads of one loop iteration (many files
 * changing at once) cost the worker one wake-up, not one each. */
void worker_queue(worker *w, work_job *job);
void worker_send(worker *w);
/* The next job that came back, or NULL. Loop thread. */
work_job *worker_take_done(worker *w);
/* Stops and joins the thread; its router is freed on the thread. */
void worker_stop(worker *w);
/* Loop thread: calls fn with each of the worker's plugins and its counts
 * as of its last job (after worker_stop too: the final counts). */
void worker_plugin_stats(worker *w, void (*fn)(void *ud, const worker_plugin *p),
                         void *ud);

/* Collector sinks for a job: one per output plus one for dead letters;
 * and counts for nfilters filters. */
int work_job_init(work_job *job, size_t nsinks, size_t nfilters);
void work_job_free(work_job *job);
/* Appends one record (copied) to the job, with its sender's address
 * (NULL: none). */
bool work_job_add(work_job *job, const char *bytes, size_t len,
                  uint64_t position, unsigned piece, const char *from);
/* Empties it (records and counts) for the next use, keeping its memory. */
void work_job_reset(work_job *job);

#endif
