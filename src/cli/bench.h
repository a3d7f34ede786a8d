/*
 * bench.h - `lumberjit bench CONFIG ...`: the config's pipeline run in
 * steps at offered rates, each measured as a load test measures (bench.c
 * says how a step runs), and reported as a table, JSON, CSV and an SVG
 * plot (bench_report.c).
 *
 * The load is the config's generator_inputs (or one generator of
 * --format in place of its inputs), or with --write-files N writer
 * threads appending lines to N files its tail_input reads
 * (bench_writers.c). Latency counts from each line's due time on the
 * schedule, not from when it was made or read: a stall that holds the
 * generator or a writer shows in full (coordinated omission). CPU time is
 * read by thread from /proc/self/task (bench_threads.c).
 */
#ifndef LUMBERJIT_BENCH_H
#define LUMBERJIT_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "latency.h"

/* The threads whose CPU time a step reports, by their names. */
typedef enum {
  BENCH_LOOP,     /* the main thread: the event loop, all I/O */
  BENCH_WORKERS,  /* lj:worker*: decoders, filters, encoders */
  BENCH_KAFKA,    /* rdk:*: librdkafka's */
  BENCH_OTHER,    /* libuv's thread pool, the sandbox watchdog */
  BENCH_WRITERS,  /* lj:writer*: the load of --write-files, not lumberjit */
  BENCH_THREAD_KINDS
} bench_thread_kind;

extern const char *const bench_thread_names[BENCH_THREAD_KINDS];

/* What one step measured. */
typedef struct {
  double offered;        /* lines a second asked for; 0: as fast as taken */
  double seconds;        /* from the inputs' start until drained */
  double achieved;       /* lines delivered (or dead-lettered) a second */
  uint64_t generated;    /* lines the generators or writers made */
  uint64_t delivered;    /* records the outputs wrote, over all outputs */
  uint64_t dead_lettered, failed;
  /* Generated and never accounted for: not read, or read and neither
   * delivered, failed, skipped nor dead-lettered. Must be 0. */
  uint64_t lost;
  double cpu[BENCH_THREAD_KINDS]; /* CPU seconds by thread */
  double peak_rss_mib;
  /* The latency of the output whose p99 is worst: p50, p95, p99, p99.9,
   * max, in ms (latency.h), from the due time when there is a schedule,
   * else from the read. */
  double latency_ms[LATENCY_REPORTED];
  /* What latency counts from: "due" (the schedule), "written" (a
   * writer's write, at full speed) or "read" (a generator at full
   * speed: no schedule). */
  const char *latency_from;
  int status;            /* pipeline_run's */
  bool passed;           /* under --max-p99, and near the offered rate */
} bench_step;

/* The run: its options and its steps. */
typedef struct {
  const char *config_path;
  const char *format;    /* --format: w1, syslog, nginx or a template */
  uint64_t *rates;       /* --rate or --sweep; one 0: as fast as taken */
  size_t nrates;
  double duration_s;     /* --duration; 0: not given */
  uint64_t count;        /* --count; 0: not given */
  double max_p99_ms;     /* --max-p99; 0: no bound */
  unsigned write_files;  /* --write-files */
  const char *json_path, *csv_path, *plot_path;
  bench_step *steps;     /* run so far */
  size_t nsteps;
  double sustainable;    /* the highest step that passed; 0: none */
} bench_run;

/* A step holds when its achieved rate is at least this share of the
 * offered one: a generator held by backpressure falls behind its
 * schedule, and so does the step's rate. */
#define BENCH_RATE_TOLERANCE 0.9

/* `lumberjit bench ...` (argv[0] is "bench"); the exit status: 0, 1 when
 * a step lost a record or failed to run, 2 on a usage error. */
int bench_main(int argc, char **argv);

/* bench_report.c: the table (f: stdout), and the files; -1 with the
 * reason in err when a file cannot be written. */
void bench_print_table(const bench_run *run, FILE *f);
int bench_write_json(const bench_run *run, const char *path, char *err,
                     size_t errlen);
int bench_write_csv(const bench_run *run, const char *path, char *err,
                    size_t errlen);
int bench_write_plot(const bench_run *run, const char *path, char *err,
                     size_t errlen);

/* bench_threads.c: the CPU seconds each thread kind used so far, and the
 * process's peak RSS since the last bench_reset_peak_rss. */
void bench_thread_cpu(double cpu[BENCH_THREAD_KINDS]);
void bench_reset_peak_rss(void);
double bench_peak_rss_mib(void);

/* bench_writers.c: n threads appending count lines in all of format (a
 * line_format's name or a template) at rate lines a second in all (0: as
 * fast as they can) to paths[0 .. n-1], which may name one file n times;
 * NULL with the reason in err. */
typedef struct bench_writers bench_writers;
bench_writers *bench_writers_start(char *const *paths, unsigned n,
                                   const char *format, uint64_t count,
                                   uint64_t rate, char *err, size_t errlen);
/* When the line the record at `position` of the file at `path` is was due
 * (uv_hrtime us); 0: not one of theirs. Loop thread, in each file's order. */
uint64_t bench_writers_due(bench_writers *b, const char *path,
                           uint64_t position);
/* Every writer is done: all written, or stopped by an error. */
bool bench_writers_done(bench_writers *b);
/* Lines written in all; once done. */
uint64_t bench_writers_written(const bench_writers *b);
/* Stops and joins them, with the lines they wrote and the CPU seconds
 * their threads used in *written and *cpu (when not NULL: a thread's time
 * goes when it ends, so each reads its own); -1 with the first writer's
 * error in err (when not NULL). */
int bench_writers_stop(bench_writers *b, uint64_t *written, double *cpu,
                       char *err, size_t errlen);

#endif
