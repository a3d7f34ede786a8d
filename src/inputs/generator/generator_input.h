/*
 * generator_input.h - generator_input: varied log lines made up on the
 * loop (line_generator.h), for benchmark runs and for trying a pipeline
 * without a source of logs.
 *
 *   bench = { type = "generator_input", format = "syslog", count = 1000000,
 *             rate = 50000, decoder = "rsyslog" }
 *
 * Settings:
 *   format  "w1", "syslog" (the default) or "nginx"
 *   count   lines in all, then the input ends; 0 (the default): until
 *           stopped
 *   rate    lines per second, evened out over 10 ms ticks; 0 (the
 *           default): as fast as the pipeline takes them
 *   seed    the random sequence (default 1): the same seed makes the same
 *           lines, but for their times
 *
 * Each line is a record whose position is its sequence number, from 1.
 * Backpressure holds the generator as it holds a file; with a rate, the
 * lines a hold delays are made once it ends, so the rate holds on average.
 */
#ifndef LUMBERJIT_GENERATOR_INPUT_H
#define LUMBERJIT_GENERATOR_INPUT_H

#include "plugin.h"

/* Its settings (generator_config.c reads them). */
typedef struct {
  int format;            /* a line_format */
  uint64_t count;        /* lines in all; 0: until stopped */
  uint64_t rate;         /* lines per second; 0: as fast as they are taken */
  uint64_t seed;
} config_generator;

extern const input_kind generator_input_kind;
extern const plugin_type generator_input_type;

#endif
