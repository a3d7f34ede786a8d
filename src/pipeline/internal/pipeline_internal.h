/*
 * pipeline_internal.h - what pipeline.c (running), pipeline_build.c
 * (building and tearing down) and input_host.c (the inputs' view) share:
 * the pipeline's structs and the callbacks the built parts are wired to.
 * No other module sees it (CMakeLists.txt: internal/).
 */
#ifndef LUMBERJIT_PIPELINE_INTERNAL_H
#define LUMBERJIT_PIPELINE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "checkpoint.h"
#include "config.h"
#include "dead_letter.h"
#include "input.h"
#include "join.h"
#include "output.h"
#include "pipeline.h"
#include "plugin.h"
#include "router.h"
#include "run_stats.h"
#include "sandbox.h"
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
  router_output_counts encoded; /* matched, and the encoder's failed and
                                   skipped */
  bool passes;               /* the passthrough writes every record to it, */
  buf pass_head;             /* after this head (plugin.h: output_route) */
} pl_output;


/* One thing an input reads: standard input, a file_input's file, or one
 * file of a tail_input (tail.h). */
/* A filter: each worker runs an instance of it (router_filter). */
typedef struct {
  const char *name;
  const config_plugin *cfg;  /* while building only */
  uint64_t ticker_interval_ms; /* 0: no timer_event */
  bool kept;                 /* a reload keeps its sandboxes: no last
                                timer_event */
  uv_timer_t tick;           /* started when ticker_interval_ms */
  pipeline *pl;
  router_filter_counts counts; /* added up as jobs come back */
} pl_filter;

struct pl_source {
  input in;                  /* first: the handler gets &in */
  pl_input *owner;
  struct pl_source *next;    /* the owner's sources */
  work_job *job;             /* being filled from the current read */
  unsigned in_flight;        /* jobs at the worker */
  bool read_all;             /* finished; jobs may be in flight */
  const char *error;         /* why it finished, if it failed */
  checkpoint_source *ckpt;   /* its file's; NULL: not a file */
  checkpoint_ticket *ticket; /* of the chunk being handed on */
  void *data;                /* its input type's (a file, a connection) */
  bool names_file;           /* its records name in.path (path_field) */
  const char *from;          /* the sender of the records being read, for
                                the message's sender_field; NULL: none */
  worker *w;                 /* its jobs' worker, and the decoder there: */
  router_input *ri;          /* set as its first job goes */
  line_joiner join;          /* rule NULL: lines are records */
  uint64_t read_us;          /* passthrough: when the read being cut was
                                handed on (uv_hrtime in us); 0: not yet */
};

struct pl_input {
  pipeline *pl;
  const char *name;
  const config_plugin *cfg;  /* while building only */
  router_input ri;           /* pinned: used by its worker only */
  worker *w;                 /* pinned: its worker */
  /* An input with many sources (files, connections) may spread them over
   * the workers, each source staying on one, so its order holds: then
   * each worker has its own router_input (decoder) for it. */
  bool spreads;              /* set by its kind's build */
  router_input *spread;      /* spreads: one per worker it takes, */
  size_t nspread, spread_first; /* workers first .. first + n - 1 */
  size_t next_worker;        /* spreads: where the next source goes */
  pl_source *sources;        /* reading now */
  const struct input_kind *kind;
  void *state;               /* the kind's own */
  bool keep_cr;              /* its sources keep a CR before LF */
  bool passthrough;          /* its records skip the workers (passthrough.h) */
  bool done;                 /* read all it will; jobs came back */
  /* Counted by the jobs that came back. */
  uint64_t records, overlong, truncated, dead, dead_pieces;
  uint64_t messages, empty;  /* made of its records; records that made none */
  char failure[512];         /* why it failed to start or read; "": not */
};

/* A sandboxed plugin and what it is (sandbox_shelf.h: shelf_digest). */
typedef struct {
  config_role role;
  const char *name;          /* kept */
  uint64_t digest;
} pl_digest;

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
  pl_digest *digests;        /* of its decoders, encoders and filters */
  size_t ndigests;
  /* Stopping for a reload: the workers' sandboxes go on the shelf, the
   * filters marked kept get no last timer_event, and listeners hand their
   * sockets on (pl_input_handing_over). */
  bool reloading;
  bool stop_after_reload;    /* a stop signal came during the reload */
  const config *next;        /* the reload's, while the inputs stop */
  pl_input *inputs;
  size_t ninputs, running;
  size_t ninputs_max;        /* room in inputs: the config's plugins */
  pl_output *outputs;
  size_t noutputs;
  pl_filter *filters;        /* in the config's order */
  size_t nfilters;
  bool last_ticks;           /* the filters' last timer_events were sent */
  dead_letter dl;
  checkpoint_store store;    /* the files' acknowledged offsets */
  struct checkpoint_job *saving; /* the save running (checkpoint_save.h) */
  struct {                   /* what the inputs of a kind share */
    const input_kind *kind;
    void *state;
  } *kind_states;
  size_t nkind_states;
  join_matcher *join_matcher; /* multiline patterns' Lua state, if any */
  worker *workers;
  size_t nworkers;
  uv_async_t notify;         /* workers: jobs came back */
  uv_prepare_t send_before;  /* queued jobs go to the workers: before the */
  uv_check_t send_after;     /* loop waits and after its I/O callbacks */
  work_job *spare_jobs;
  size_t jobs_in_flight;
  /* Bytes of the records at the workers (job_weight), and the most they
   * may hold before the inputs pause: a quarter of memory_budget. */
  uint64_t bytes_at_workers, workers_budget;
  uv_timer_t deadline;       /* started when stopping */
  uv_timer_t checkpoints;    /* saves them every checkpoint_interval_ms */
  uv_timer_t quiet;          /* gives freed memory back once idle (heap.h) */
  uv_timer_t metrics;        /* rewrites the metrics file (metrics.h) */
  const char *metrics_path;  /* NULL: no metrics file */
  unsigned metrics_interval_ms;
  bool metrics_failing;      /* the last write failed, and was logged */
  /* Jobs came back or reads passed through: not quiet. */
  uint64_t jobs_back, jobs_back_seen;
  router_counts passed;      /* the passthrough's, until its read is done */
  bool pass_lines;           /* it takes runs of lines (passthrough.h) */
  bool passed_unflushed;     /* it queued records the outputs have not
                                been asked to write (send_jobs) */
  bool heap_dirty;           /* memory was freed since the last release */
  bool stopping, paused, handles_closed;
  bool past_deadline;        /* stop_timeout_ms passed: queues fail */
  int status;
  uint64_t unrouted, routed_dead_letters; /* counted by the jobs */
  uint64_t routed_dead_letter_bytes;
  uint64_t records_lost;     /* no memory to take them from the input */
  pipeline_probe probe;      /* a benchmark's (pipeline_set_probe) */
  uint64_t pauses;
  uint64_t paused_since, paused_ns; /* uv_hrtime */
  run_stats stats;           /* the figures of the log (run_stats.h) */
  uv_timer_t stats_timer;    /* logs them every stats_interval_ms */
  unsigned stats_interval_ms; /* 0: only at exit */
  pipeline_stats snapshot;   /* pipeline_snapshot's storage */
  pipeline_hooks hooks;      /* the owner's */
};

/* pipeline.c: what inputs, sinks, workers and timers call back. */
input_handler pipeline_input_handler(const pl_input *pi);
/* Hands on the record the source's joiner holds (multiline flush_ms). */
void pipeline_source_flush(pl_source *src);
/* The input has read all it will (a tail_input after its stop). */
void pipeline_input_done(pl_input *pi);
/* Whether an output or the dead-letter path writes the file sb is of: an
 * input must never read it. */
bool pipeline_writes(pipeline *pl, const struct stat *sb);
output_events pipeline_sink_events(pipeline *pl);
void pipeline_jobs_back(uv_async_t *a);
/* What routing counted (a job's, or the passthrough's) goes to the
 * pipeline's counters, and input pi's (NULL: a tick's, of no input). */
void pipeline_add_counts(pipeline *pl, pl_input *pi, const router_counts *c);
/* Out of memory for a record: it counts with the dead letters that could
 * not be written, and the run fails. */
void pipeline_record_lost(pipeline *pl, input *in, uint64_t position);
/* What the loop iteration queued goes to the workers (worker_send). */
void pipeline_send_before(uv_prepare_t *h);
void pipeline_send_after(uv_check_t *h);
/* Sends every worker a tick of filter f: its timer_event (the last one,
 * with `last`), whose messages come back as a job's. */
void pipeline_tick(pipeline *pl, pl_filter *f, bool last);
/* Calls fn on every sink: the outputs', then the dead-letter file's. */
void pipeline_each_sink(pipeline *pl, void (*fn)(output_sink *));
/* pipeline_build.c */
void pipeline_stop_workers(pipeline *pl);
/* The digest of pl's sandboxed plugin of role and name (every one has
 * its own: sandbox_shelf.h); 0 when pl has none such. */
uint64_t pipeline_digest(const pipeline *pl, config_role role,
                         const char *name);
/* A copy of s that lives as long as the pipeline; NULL when s is NULL or
 * memory ran out. */
const char *pipeline_keep(pipeline *pl, const char *s);
/* The state the inputs of kind share in pl (tail_inputs' directory
 * watches): NULL at first; kind->close_shared closes it. NULL when out of
 * memory. */
void **pipeline_kind_state(pipeline *pl, const input_kind *kind);
/* A source of pi, reading nothing yet: set its input's path or fd, then
 * input_start it. NULL when out of memory. */
pl_source *pipeline_source_new(pl_input *pi);
/* The source's records so far go to its worker (after a read). */
void pipeline_source_chunk_done(pl_source *src);
/* Picks the worker the source's jobs go to (pipeline_build.c). */
void pipeline_source_place(pl_source *src);
/* Unlinks and frees a finished source whose jobs came back. */
void pipeline_source_free(pl_source *src);

#endif
