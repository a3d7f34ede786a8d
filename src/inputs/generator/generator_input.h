/*
 * generator_input.h - generator_input: varied log lines made up on the
 * loop (line_generator.h), for benchmark runs and for trying a pipeline
 * without a source of logs.
 *
 *   bench = { type = "generator_input", format = "syslog", count = 1000000,
 *             rate = 50000, decoder = "rsyslog" }
 *
 * Settings:
 *   format  "w1", "syslog" (the default), "nginx" or "template"
 *   template  with format "template": the line, whose placeholders
 *           (line_generator.h) each line fills anew
 *   count   lines in all, then the input ends; 0 (the default): until
 *           stopped
 *   rate    lines per second, each made when it is due (line n at
 *           start + (n - 1) / rate, a millisecond late at most); 0 (the
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

#include "input.h"
#include "plugin.h"

/* Its settings (generator_config.c reads them). */
typedef struct {
  int format;            /* a line_format */
  char *template;        /* format "template"'s line; NULL otherwise */
  uint64_t count;        /* lines in all; 0: until stopped */
  uint64_t rate;         /* lines per second; 0: as fast as they are taken */
  uint64_t seed;
} config_generator;

extern const input_kind generator_input_kind;
/* When line seq (from 1) of the generator reading with `in` is due on its
 * schedule, in uv_hrtime microseconds; 0 without a rate (as fast as
 * taken: no schedule). For lumberjit bench's pipeline_set_due. */
uint64_t generator_input_due_us(input *in, uint64_t seq);
extern const plugin_type generator_input_type;

#endif
