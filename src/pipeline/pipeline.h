/*
 * pipeline.h - the running collector built from a config: inputs, their
 * decoders, the router (message matchers), the outputs' encoders and sinks,
 * and the dead-letter path, all on one libuv loop.
 *
 * Data flows one way: input -> decoder -> router -> encoder -> output.
 * Decoders and encoders run on `workers` threads, each with its own
 * instances; the loop thread does all the I/O.
 */
#ifndef LUMBERJIT_PIPELINE_H
#define LUMBERJIT_PIPELINE_H

#include <uv.h>

#include "config.h"
#include "filter_stage.h"
#include "input.h"
#include "output.h"
#include "plugin.h"

typedef struct pipeline pipeline;

/* The counters, as pipeline_snapshot reads them: the summary at exit and
 * the metrics file (metrics.h). */
typedef struct pipeline_input_stats {
  const char *name;
  uint64_t records, overlong, truncated, dead;
  uint64_t dead_pieces;   /* the dead letters of its overlong records'
                             pieces (each such record counts once in dead) */
  /* Messages its decoder made of its records (without a decoder, one a
   * record), and the records it made none of: records = records that
   * made messages + empty + dead. */
  uint64_t messages, empty;
  /* Its type's own counters (plugin.h: plugin_counter), {NULL}-ended,
   * and their values; NULL: none. */
  const plugin_counter *counters;
  uint64_t values[PLUGIN_COUNTERS_MAX];
  /* Why it failed to start or stopped on a read error; NULL: it did not. */
  const char *failure;
} pipeline_input_stats;

typedef struct {
  const char *name;
  /* Every message its matcher took is delivered, failed, skipped, left
   * for the next run to read again or still queued: matched = delivered +
   * failed + skipped + released + queued_records (+ what a transport holds
   * at a stop: Kafka's in flight and disk buffer). */
  uint64_t matched;
  uint64_t released;      /* left unacknowledged at a stop: its input can
                             read them again (output_release) */
  uint64_t delivered;     /* written: the kernel took every byte */
  uint64_t failed;        /* dead-lettered: encoder or write failures */
  uint64_t skipped;       /* the encoder chose not to write them */
  uint64_t queued_records, queued_bytes; /* in the queue now */
  bool has_tx;            /* a transport's (Kafka), in tx */
  output_tx_stats tx;
  /* From a record's read to its acknowledgement (output.h): how many
   * were timed and latency_report's quantiles, in ms. */
  uint64_t timed;
  double latency_ms[LATENCY_REPORTED];
  /* Why it failed, or why it is retrying now (a full disk); NULL: it is
   * writing, or waiting only for its destination to take more. */
  const char *failure;
} pipeline_output_stats;

/* A filter's counters (router.h: router_filter_counts says what each is),
 * added up over its instances. */
typedef struct {
  const char *name;
  uint64_t matched, injected, dropped, failed, ticks, ticks_failed;
} pipeline_filter_stats;

/* A decoder's, encoder's or filter's sandbox counts (sandbox.h), added up
 * over its instances on every worker (sandbox_stats_add). */
typedef struct {
  const char *name, *role; /* role: "decoder", "encoder" or "filter" */
  sandbox_stats sb;
} pipeline_plugin_stats;

typedef struct {
  size_t ninputs, noutputs, nfilters, nplugins;
  pipeline_input_stats *inputs;
  pipeline_output_stats *outputs;
  pipeline_filter_stats *filters;
  pipeline_plugin_stats *plugins;
  uint64_t dead_letters, dead_letters_written;
  uint64_t dead_letter_bytes; /* of the dead letters made */
  uint64_t dead_letters_lost; /* records neither written nor dead-lettered */
  uint64_t dead_letters_refused; /* of those: over dead_letter_max_bytes */
  uint64_t unrouted;      /* messages no output matched */
  bool paused;            /* the inputs are held now */
  uint64_t pauses, paused_ms;
  uint64_t paused_now_ms; /* how long they have been, when they are */
  /* A decoder, encoder or filter stopped after max_failures (as its
   * worker's last job back said): "decoder", ... and its name; NULL:
   * none. */
  const char *stopped_role, *stopped_name;
} pipeline_stats;

/* What the pipeline's owner hears of a run (the cli: systemd's READY=1
 * and STOPPING=1, which are the process's, not a pipeline's: a reload
 * replaces the pipeline). Any may be NULL. */
typedef struct {
  void (*started)(void *ud);    /* the inputs were started */
  void (*stopping)(void *ud, const char *why); /* a stop began (not a
                                                  reload's) */
  /* SIGHUP came (signame): NULL, the output files reopen instead. */
  void (*reload)(void *ud, const char *signame);
  void *ud;
} pipeline_hooks;

pipeline *pipeline_create(const config *cfg, uv_loop_t *loop, char *err,
                          size_t errlen);
/* Runs until every input has reached its end (or was stopped by SIGINT,
 * SIGTERM or a failed output) and every output has written what it holds.
 * Returns 0, or 1 when an input stopped on a read error, an output failed,
 * or a record could be neither written nor dead-lettered. */
int pipeline_run(pipeline *pl);
/* Sets who hears of the run (before pipeline_run). */
void pipeline_set_hooks(pipeline *pl, const pipeline_hooks *hooks);
/* Reopens the output files (log rotation: SIGUSR1, and SIGHUP without a
 * reload hook). */
void pipeline_reopen(pipeline *pl);
/* Stops the run for a reload to `next`, a config that passed
 * pipeline_check: the inputs stop, and pipeline_run returns once what they
 * read is written and their checkpoints saved, as at a stop; but the
 * owner hears no `stopping`, and the sandboxes of the plugins `next`
 * keeps unchanged outlive the run for the next pipeline to take (its
 * filters get no last timer_event, keeping what they hold). False when
 * the run is stopping already. A stop signal that comes after it is told
 * to the owner (hooks.stopping), and the reload goes on: the owner stops
 * the next pipeline once it has started (pipeline_stop_signal), which
 * ends what this one handed on as a stop ends it. A second one stops this
 * run now, as at a stop. */
bool pipeline_stop_for_reload(pipeline *pl, const config *next);
/* Stops the run as the stop signal signame does. */
void pipeline_stop_signal(pipeline *pl, const char *signame);
/* After the pipeline that follows a reload was built (or failed to be):
 * destroys the kept sandboxes it did not take; returns how many it took. */
size_t pipeline_reload_finish(void);
/* What a run of cfg depends on: its files' bytes, and each sandboxed
 * plugin's file, settings and limits. The same digest: a reload would
 * change nothing. */
uint64_t pipeline_config_digest(const config *cfg);
/* What a benchmark run measures with (lumberjit bench), set before
 * pipeline_run; any may be NULL.
 *   due      when a record was due, for latency counted from a schedule
 *            rather than from the read (a generator's or a writer's time
 *            for the line, so a stall that delays the making shows):
 *            called on the loop thread for each record an input hands on;
 *            uv_hrtime in us, or 0 for "when read"
 *   drained  the inputs ended and the outputs drained; the workers are
 *            still up (their threads' CPU time can be read) */
typedef uint64_t (*pipeline_due_fn)(void *ud, const input *in,
                                    uint64_t position);
typedef struct {
  pipeline_due_fn due;
  void (*drained)(void *ud);
  void *ud;
} pipeline_probe;
void pipeline_set_probe(pipeline *pl, const pipeline_probe *probe);
/* Stops the inputs, as SIGTERM does (without its log line): what they read
 * is still delivered, then pipeline_run returns. */
void pipeline_request_stop(pipeline *pl);
/* The counters, at any time on the loop thread (workers' counts arrive as
 * their jobs come back); valid until the next call. */
const pipeline_stats *pipeline_snapshot(pipeline *pl);
/* Closes everything, fsyncing output files; -1 when an fsync failed. */
int pipeline_destroy(pipeline *pl);
/* Loads every decoder and encoder once, as --check does, without opening
 * inputs or outputs. */
int pipeline_check(const config *cfg, char *err, size_t errlen);
/* Starts the watchdog the config's sandboxes need: only when a decoder or
 * encoder has a CPU or instruction limit (*wd stays NULL otherwise). */
int pipeline_start_watchdog(const config *cfg, sandbox_watchdog **wd,
                            char *err, size_t errlen);
/* The most output one decoder or encoder call may make: what a call makes
 * is held in memory until it ends (a decoder's messages, then their
 * encoded records, at once, several times the bytes counted), so a call
 * gets a 32nd of memory_budget, but never less than
 * PIPELINE_CALL_OUTPUT_FLOOR (the default output_limit). A plugin's
 * output_limit above it is held to it: a call past it fails, and its
 * record is dead-lettered. */
#define PIPELINE_CALL_OUTPUT_FLOOR (64u << 10)
uint64_t pipeline_call_output_max(const config *cfg);
/* Loads a decoder's or encoder's plugin, its runtime log going to `log`;
 * NULL with "FILE:LINE: decoder 'NAME': why" in err when it does not load. */
sandbox *pipeline_plugin_sandbox(const config *cfg, const config_plugin *p,
                                 sandbox_watchdog *wd, sandbox_log_fn log,
                                 void *log_ud, char *err, size_t errlen);
/* An instance of filter p, named `name` (a string that outlives it): its
 * matcher and its sandbox: sb, or with sb NULL pipeline_plugin_sandbox's;
 * -1 with "FILE:LINE: filter 'NAME': why" in err (sb is then the
 * caller's still). */
int pipeline_filter_build(const config *cfg, const config_plugin *p,
                          const char *name, sandbox *sb, sandbox_watchdog *wd,
                          sandbox_log_fn log, void *log_ud, router_filter *f,
                          char *err, size_t errlen);

#endif
