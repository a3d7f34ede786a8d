/*
 * plugin.h - the pipeline's part of a plugin type (plugin_type.h has the
 * config's part): what an input type does with its sources, and how an
 * output type opens its sink. A type fills one of these in its own folder
 * and points its plugin_type at it; nothing else in the pipeline names it.
 */
#ifndef LUMBERJIT_PLUGIN_H
#define LUMBERJIT_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "config.h"
#include "output.h"

typedef struct pl_input pl_input;
typedef struct pl_source pl_source;

/* A counter an input type keeps, declared so that the run's summary and
 * the metrics file show it with no edit elsewhere; or a gauge, a figure
 * of now (files open), read when they are shown. */
typedef struct plugin_counter {
  const char *metric;     /* "lumberjit_syslog_connections_total": a
                             Prometheus counter, labelled by input; a
                             name without "_total" is a gauge's, as
                             Prometheus's conventions have it */
  const char *help;       /* the metric's HELP text */
  const char *summary;    /* what the summary says after the number */
} plugin_counter;

/* Counters of one input at most. */
#define PLUGIN_COUNTERS_MAX 16

/* What an input type does in the pipeline. */
typedef struct input_kind {
  /* Builds what the input needs beyond pl_input: its sources or state. */
  int (*build)(pl_input *pi, const config_plugin *p, char *err,
               size_t errlen);
  int (*start)(pl_input *pi, char *err, size_t errlen);
  /* Stops reading; pipeline_input_done follows once all is read. */
  void (*stop)(pl_input *pi);
  /* A source read all it will and its jobs came back. */
  void (*source_finished)(pl_input *pi, pl_source *src);
  void (*close_handles)(pl_input *pi); /* may be NULL */
  void (*free)(pl_input *pi);          /* may be NULL */
  /* Holds a source's reading (an output is full, its worker behind) or
   * lets it go on; NULL: input_pause and input_resume its input. */
  void (*hold)(pl_source *src, bool hold);
  /* Its declared counters ({NULL}-ended; they may differ between its
   * inputs: a datagram listener has no connections), and their values
   * now, in that order. NULL: none. */
  const plugin_counter *(*counters)(pl_input *pi, uint64_t *values);
  /* File descriptors it may hold at most (tail's files, syslog's
   * connections), for the warning that the limit cannot give them all;
   * NULL: a few. */
  uint64_t (*descriptors)(const config_plugin *p);
  /* Closes the state its inputs share in a pipeline
   * (pipeline_kind_state), once, with the loop handles; NULL: none. */
  void (*close_shared)(void **state);
} input_kind;

/* What an output's sink is opened with. */
typedef struct {
  uv_loop_t *loop;
  const char *label;      /* "output 'name'", for log lines */
  output_events events;
  const char *state_dir;  /* NULL: none */
} output_host;

/* What an output's records carry before their encoded bytes, made on the
 * worker where the message is (Kafka's topic and key): the transport reads
 * it back (output_record.head says how long it is). */
typedef struct output_route {
  /* Appends the head of m's record to b: NULL, or why it cannot be made
   * (the record then goes to the dead-letter path with that reason). */
  const char *(*head)(void *state, const struct msg *m, buf *b);
  void (*free)(void *state);
  /* The head is the same for every message (a static topic, no key): the
   * passthrough makes it once (passthrough.h). NULL: it never is. */
  bool (*fixed)(const void *state);
} output_route;

/* What an output type does in the pipeline. */
typedef struct output_kind {
  /* Opens its sink: a file descriptor output.c writes (output_open), or a
   * transport of its own (output_open_transport). */
  int (*open)(output_sink *o, const output_host *h, const config_plugin *p,
              char *err, size_t errlen);
  /* What a start would fail on, found without opening anything (--check);
   * NULL: nothing. */
  int (*check)(const config_plugin *p, char *err, size_t errlen);
  /* On a worker: the output_route its records' heads are made by, and its
   * state (freed by route->free); NULL: its records have no head. */
  int (*route)(const config_plugin *p, const output_route **route,
               void **state, char *err, size_t errlen);
} output_kind;

#endif
