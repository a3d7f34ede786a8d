/*
 * try.h - `lumberjit -c FILE --try DECODER`: the edit-test loop of someone
 * writing a decoder (or an encoder). The named plugins of the config run in
 * their sandboxes, with their settings and limits, on sample lines; every
 * message is printed whole (message_text.h), every rejected or failed line
 * with its reason, and with --watch the run starts again whenever the
 * config, a plugin's file or a sample changes. Nothing else of the config
 * runs: no input is read and no output written.
 */
#ifndef LUMBERJIT_TRY_H
#define LUMBERJIT_TRY_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
  const char *config_path;
  const char *decoder;   /* the decoder instance to run */
  const char *encoder;   /* an encoder instance for its messages, or NULL */
  bool watch;            /* run again on every change, until SIGINT/SIGTERM */
  const char *expect;    /* a golden file the output is compared with, or NULL */
  bool update;           /* with expect: write it instead */
  char **samples;        /* sample files, "-" for standard input */
  size_t nsamples;       /* 0: standard input */
} try_options;

/* Runs; returns the exit status: 0 when every line decoded and every
 * message encoded (or was skipped), 1 otherwise or on an error. With
 * expect: 0 when the output is the golden file's (or, with update, was
 * written to it), 1 otherwise or on an error. */
int try_run(const try_options *o);

#endif
