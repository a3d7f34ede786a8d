/*
 * input.h - inputs that read bytes and cut them into records (lines).
 *
 * An input reads standard input or a file to its end on the libuv loop and
 * hands each line, without its newline, to its handler; a last line without
 * a newline is a record too. A line longer than max_line is handed on in
 * max_line pieces numbered from 1, so that nothing is lost and memory stays
 * bounded. Lines are passed straight from the read buffer when they fit in
 * it; only a line split across two reads is copied.
 *
 * Positions: inputs reading a regular file give each record's byte offset;
 * a stream (pipe, terminal, socket) gives its 1-based sequence number.
 */
#ifndef LUMBERJIT_INPUT_H
#define LUMBERJIT_INPUT_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "buf.h"

typedef struct input input;

typedef struct {
  /* piece: 0 for a whole line, else the number of this piece of a line
   * longer than max_line. */
  void (*record)(void *ud, input *in, const char *bytes, size_t len,
                 uint64_t position, unsigned piece);
  /* After each read: the moment to flush what the records produced. */
  void (*chunk_done)(void *ud, input *in);
  /* At the end of input; error is NULL, or why reading stopped. */
  void (*finished)(void *ud, input *in, const char *error);
  void *ud;
} input_handler;

struct input {
  const char *name;
  const char *path;      /* NULL: standard input */
  size_t max_line;
  bool is_offset;        /* positions are byte offsets */
  input_handler handler;

  uv_loop_t *loop;
  int fd;
  bool is_stream;
  union {
    uv_pipe_t pipe;
    uv_tty_t tty;
  } stream;
  uv_fs_t req;
  char *readbuf;
  size_t readbuf_size;
  uint64_t read_offset;  /* bytes read so far */
  buf carry;             /* a line split across reads */
  uint64_t carry_pos;
  uint64_t seq;
  unsigned piece;        /* pieces of the current overlong line handed on */
  bool closing;
};

/* Starts reading; returns 0, or -1 with a message in err. */
int input_start(input *in, uv_loop_t *loop, char *err, size_t errlen);
/* Stops reading early (a signal); finished is not called. */
void input_stop(input *in);
/* Frees what the input holds, once the loop has closed its handles. */
void input_free(input *in);

#endif
