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
 * a stream (pipe, FIFO, terminal, socket, character device) gives its
 * 1-based sequence number.
 *
 * How each kind of file is read (libuv has a primitive for each):
 *   regular file, block device   uv_fs_read at offsets, on the thread pool
 *   character device (/dev/null) uv_fs_read at the current position
 *   pipe, FIFO, socket           uv_pipe, non-blocking on the loop
 *   terminal                     uv_tty
 *   directory                    refused with a clear error
 * A FIFO is opened non-blocking, so one without a writer waits on the loop
 * (and a stop signal ends it) instead of blocking in open(2).
 *
 * Line endings: a line ends at LF; a CR before the LF is part of the
 * ending and dropped, unless keep_cr (a lone CR inside a line stays).
 *
 * Stopping (a signal, a failed output) never loses read bytes and never
 * hands on part of a line as a record: a read in flight is split when it
 * lands, and a line the stop came inside of is held back when a
 * checkpoint keeps its place (hold_partial: its offset is not
 * acknowledged, so a resumed run reads the line whole), else cut: its
 * bytes go to the handler's cut, which dead-letters them. At the end of
 * input a last line without its newline is a record.
 *
 * Following (tail.h): a regular file is read on the loop thread (pread:
 * what was just written is in the page cache), from where input_read_more
 * is first called up to its end, and waits there (at_end) until the next
 * input_read_more, instead of finishing. input_read_more and input_resume
 * may then finish the input, which frees it: callers touch it no more.
 */
#ifndef LUMBERJIT_INPUT_H
#define LUMBERJIT_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <uv.h>

#include "buf.h"

typedef struct input input;

/* The most lines in one run (input_handler.lines): a count that fits in
 * 16 bits once the first is taken away (output.h: output_record.more). */
#define INPUT_RUN_MAX 65536

/* Walks a run's lines one by one, for those who must take them one at a
 * time (a join, a failure, a write that stopped inside the run). */
typedef struct {
  const char *at, *end;  /* the bytes not walked yet */
  uint64_t position;     /* the position of the line at `at` */
  bool is_offset;        /* positions are byte offsets, not numbers */
} input_run_cursor;

/* Takes the next line, with its LF, and its position; false when none is
 * left or the bytes end inside it. */
static inline bool input_run_next(input_run_cursor *c, const char **line,
                                  size_t *len, uint64_t *position)
{
  const char *nl;

  if (c->at >= c->end ||
      !(nl = memchr(c->at, '\n', (size_t)(c->end - c->at))))
    return false;
  *line = c->at;
  *len = (size_t)(nl + 1 - c->at);
  *position = c->position;
  c->position += c->is_offset ? *len : 1;
  c->at = nl + 1;
  return true;
}

typedef struct {
  /* piece: 0 for a whole line, else the number of this piece of a line
   * longer than max_line. */
  void (*record)(void *ud, input *in, const char *bytes, size_t len,
                 uint64_t position, unsigned piece);
  /* Optional: a run of count whole lines straight from the read buffer,
   * in place of a record call each: every one ends in its LF (bytes and
   * len take them in), none is longer than max_line or loses a CR, and
   * the first is at position (the others follow it: offsets go on by each
   * line's length with its LF, sequence numbers by one). At most
   * INPUT_RUN_MAX lines. */
  void (*lines)(void *ud, input *in, const char *bytes, size_t len,
                size_t count, uint64_t position);
  /* A stop came inside a line that no checkpoint keeps, or the file was
   * truncated under it (follows): the bytes read of it, which are no
   * record (the rest will not be read), and why. */
  void (*cut)(void *ud, input *in, const char *bytes, size_t len,
              uint64_t position, const char *reason);
  /* After each read: the moment to flush what the records produced. */
  void (*chunk_done)(void *ud, input *in);
  /* Following a file: it has nothing more to read for now (optional). */
  void (*at_end)(void *ud, input *in);
  /* Once, at the end of input or after input_stop; error is NULL, or why
   * reading stopped. */
  void (*finished)(void *ud, input *in, const char *error);
  void *ud;
  /* Following a file (optional): called with each read's bytes, read at
   * in->read_offset (len 0: none, the reading is at the file's end),
   * before they are split. False: they do not follow the bytes read
   * before (the file was truncated or rewritten under the reader), so the
   * read is dropped, the unfinished last line held is not handed on (it
   * would be torn: it goes to cut instead) and the input finishes. */
  bool (*follows)(void *ud, input *in, const char *data, size_t len);
} input_handler;

struct input {
  const char *name;
  const char *path;      /* NULL: standard input */
  size_t max_line;
  bool is_offset;        /* positions are byte offsets */
  bool follow;           /* a file's end is not the input's: wait there */
  bool hold_partial;     /* a checkpoint keeps the place of a line a stop
                            comes inside of: hold it back */
  const char *cut_reason; /* why a line is cut, if not a stop (input.h) */
  bool keep_cr;          /* a CR before LF is part of the line */
  input_handler handler;

  uv_loop_t *loop;
  int fd;                /* -1: input_start opens path (or stdin) */
  enum { INPUT_SEEKABLE, INPUT_DEVICE, INPUT_STREAM } kind;
  union {
    uv_pipe_t pipe;
    uv_tty_t tty;
  } stream;
  uv_fs_t req;
  char *readbuf;
  size_t readbuf_size;   /* 0: input_start picks 1 MiB */
  uint64_t read_offset;  /* bytes read so far; where a file read starts */
  uint64_t done_offset;  /* past the last whole line handed on */
  buf carry;             /* a line split across reads */
  uint64_t carry_pos;
  uint64_t seq;
  unsigned piece;        /* pieces of the current overlong line handed on */
  bool started;
  bool reading;          /* a uv_fs_read is in flight */
  bool busy;             /* inside a read callback: stop and pause wait */
  bool paused;
  bool at_end;           /* following: read up to the end, waiting */
  bool stopping;
  bool finished;
};

/* Starts reading; returns 0, or -1 with a message in err. */
int input_start(input *in, uv_loop_t *loop, char *err, size_t errlen);
/* Stops reading early; what was read is still handed on, then finished
 * is called. */
void input_stop(input *in);
/* Holds reading while an output is full, and takes it up again. */
void input_pause(input *in);
void input_resume(input *in);
/* Following a file: reads on from where it waits at the end (the file
 * grew, or may have); the first call starts the reading. */
void input_read_more(input *in);
/* Following a file that waits at its end: hands on an unterminated last
 * line as a record (its writer took too long to end it). */
void input_flush_partial(input *in);
/* Frees what the input holds, once the loop has closed its handles. */
void input_free(input *in);

#endif
