/*
 * output.h - where encoded bytes go: stdout or a file opened for append.
 *
 * A sink batches what it is given and writes it out once flush_bytes are
 * pending, or when its owner flushes (the pipeline does after every input
 * chunk), so a busy pipeline makes one write(2) per batch, not per event.
 * Encoders write straight into `pending`. A file sink reopens its path on
 * output_reopen (SIGHUP), for log rotation.
 */
#ifndef LUMBERJIT_OUTPUT_H
#define LUMBERJIT_OUTPUT_H

#include <stdint.h>

#include "buf.h"

typedef struct {
  char *path;          /* NULL: standard output */
  int fd;
  buf pending;
  size_t flush_bytes;
  uint64_t bytes_written;
  uint64_t write_errors;
} output_sink;

/* path NULL means standard output. */
int output_open(output_sink *o, const char *path, size_t flush_bytes,
                char *err, size_t errlen);
/* Writes out what is pending once it reaches flush_bytes. */
int output_maybe_flush(output_sink *o);
int output_flush(output_sink *o);
int output_reopen(output_sink *o);
void output_close(output_sink *o);

#endif
