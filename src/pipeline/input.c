/*
 * input.c - stdin and file inputs, and the line splitter they share.
 */
#define _GNU_SOURCE /* preadv2, RWF_NOWAIT */
#include "input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define READ_BUF_SIZE (1u << 20)

/* The pieces of an overlong line share its record number. */
static uint64_t next_position(input *in, uint64_t offset, unsigned piece)
{
  if (in->is_offset) return offset;
  return piece > 1 ? in->seq : ++in->seq;
}

static void emit(input *in, const char *bytes, size_t len, uint64_t offset,
                 unsigned piece)
{
  in->handler.record(in->handler.ud, in, bytes, len, next_position(in, offset, piece),
                     piece);
}

/* Carried bytes past max_line (a CR, carry_append) go on: the first
 * max_line of them as a piece. */
static void carry_spill(input *in)
{
  size_t rest = in->carry.len - in->max_line;

  emit(in, in->carry.data, in->max_line, in->carry_pos, ++in->piece);
  memmove(in->carry.data, in->carry.data + in->max_line, rest);
  in->carry.len = rest;
  in->carry_pos += in->max_line;
}

/* Adds bytes to the carried partial line, handing on max_line pieces of an
 * overlong one as they fill up. A CR that ends a read once max_line bytes
 * are carried is carried past max_line: it may be the CR of the line's
 * CRLF, no part of it (drop_carried_cr), and the next byte says; else a
 * line of max_line bytes whose read ended between its last byte and its CR
 * would go on in pieces (the last empty) when it comes whole in one read. */
static void carry_append(input *in, const char *p, size_t len, uint64_t offset)
{
  if (in->carry.len == 0 && len > 0) in->carry_pos = offset;
  while (len > 0) {
    if (in->carry.len == in->max_line && len == 1 && *p == '\r' &&
        !in->keep_cr) {
      buf_append(&in->carry, p, 1);
      return;
    }
    if (in->carry.len >= in->max_line) carry_spill(in); /* more came */
    size_t room = in->max_line - in->carry.len;
    size_t n = len < room ? len : room;
    buf_append(&in->carry, p, n);
    p += n;
    len -= n;
  }
}

/* Hands on the carried line, or the last piece of an overlong one. */
static void flush_carry(input *in)
{
  if (in->carry.len == 0 && in->piece == 0) return;
  if (in->carry.len > in->max_line) carry_spill(in); /* a kept CR */
  emit(in, in->carry.data, in->carry.len, in->carry_pos,
       in->piece ? ++in->piece : 0);
  buf_clear(&in->carry);
  in->piece = 0;
}

/* A CR before its LF is part of the line ending, as syslog framing has it
 * (RFC 6587), unless the input keeps it: dropped from a line's length, or
 * from the carried line when the CR came at the end of the last read. */
static size_t without_cr(const input *in, const char *line, size_t len)
{
  return !in->keep_cr && len > 0 && line[len - 1] == '\r' ? len - 1 : len;
}

static void drop_carried_cr(input *in)
{
  in->carry.len = without_cr(in, in->carry.data, in->carry.len);
}

/* The whole lines in [p, end) from p on that go on as one run: it ends
 * before the first line a record call must take (too long, or losing a
 * CR), at the last LF, or at INPUT_RUN_MAX lines. Returns its end (p: no
 * run) and sets *count, and *stop to the LF of the line after it (NULL:
 * there is none in [p, end), or it was not looked for). */
static const char *run_of_lines(const input *in, const char *p,
                                const char *end, size_t *count,
                                const char **stop)
{
  const char *run_end = p, *nl = NULL;
  size_t n = 0;

  while (n < INPUT_RUN_MAX &&
         (nl = memchr(run_end, '\n', (size_t)(end - run_end)))) {
    size_t len = (size_t)(nl - run_end);
    if (len > in->max_line || without_cr(in, run_end, len) != len) break;
    run_end = nl + 1;
    nl = NULL;
    n++;
  }
  *count = n;
  *stop = nl;
  return run_end;
}

/* Splits one read into records. */
static void split_lines(input *in, const char *data, size_t len)
{
  uint64_t base = in->read_offset;
  const char *p = data, *end = data + len, *nl;
  size_t n, count;

  while (p < end) {
    bool looked = false;
    if (in->handler.lines && in->carry.len == 0 && in->piece == 0) {
      const char *run_end = run_of_lines(in, p, end, &count, &nl);
      if (count > 0) {
        uint64_t first = in->is_offset ? base + (uint64_t)(p - data)
                                       : in->seq + 1;
        in->seq += in->is_offset ? 0 : count;
        in->done_offset = base + (uint64_t)(run_end - data);
        in->handler.lines(in->handler.ud, in, p, (size_t)(run_end - p),
                          count, first);
        p = run_end;
        continue;
      }
      looked = true; /* the first line is not for a run: nl is its LF */
    }
    if (!looked) nl = memchr(p, '\n', (size_t)(end - p));
    uint64_t off = base + (uint64_t)(p - data);
    if (!nl) {
      carry_append(in, p, (size_t)(end - p), off);
      break;
    }
    in->done_offset = base + (uint64_t)(nl - data) + 1;
    n = without_cr(in, p, (size_t)(nl - p));
    if (in->carry.len == 0 && in->piece == 0 && n <= in->max_line) {
      emit(in, p, n, off, 0); /* straight from the buffer */
    } else {
      if (nl == p) drop_carried_cr(in);
      carry_append(in, p, n, off);
      /* A line that is empty once its carried CR went (the CR and the LF
       * came in different reads) is a record too, as when it comes whole. */
      if (in->carry.len == 0 && in->piece == 0)
        emit(in, p, 0, in->carry_pos, 0);
      else
        flush_carry(in);
    }
    p = nl + 1;
  }
  in->read_offset += len;
  in->handler.chunk_done(in->handler.ud, in);
}

static const char *describe(const input *in)
{
  return in->path ? in->path : "standard input";
}

/* Hands on a last line that has no newline (yet) as a record. */
static void hand_on_partial(input *in)
{
  in->done_offset = in->read_offset;
  drop_carried_cr(in);
  flush_carry(in);
  in->handler.chunk_done(in->handler.ud, in);
}

/* A stop came inside a line: what was read of it is no record. Held back
 * (hold_partial: its offset is not acknowledged, so a resumed run reads
 * the line whole), or cut: handed to the handler, which dead-letters the
 * bytes with the reason (nothing will read the rest of the line). */
static void cut_partial(input *in)
{
  if (in->carry.len > 0 && !in->hold_partial)
    in->handler.cut(in->handler.ud, in, in->carry.data, in->carry.len,
                    in->is_offset ? in->carry_pos : in->seq + 1,
                    in->cut_reason ? in->cut_reason
                                   : "the run stopped inside this line: the "
                                     "rest of it was not read");
  buf_clear(&in->carry);
  in->piece = 0;
}

/* At the end of input a last line without a newline is a record; at a
 * stop it is held back or cut. */
static void finish(input *in, const char *error)
{
  if (in->finished) return;
  in->finished = true;
  if (in->stopping) cut_partial(in);
  else hand_on_partial(in);
  if (in->kind == INPUT_STREAM) {
    uv_read_stop((uv_stream_t *)&in->stream);
    uv_close((uv_handle_t *)&in->stream, NULL);
    if (in->path) in->fd = -1; /* libuv closes it (never stdin's) */
  }
  in->handler.finished(in->handler.ud, in, error);
}

/* ---- followed files: read on the loop thread ----
 *
 * What a writer just wrote is in the page cache: reading it here costs less
 * than a thread-pool round trip per change. Reading never runs ahead of the
 * pipeline: chunk_done pauses the input once its worker has enough. The
 * only call that may finish the input (and so free it) is the last. */

static void reached_end(input *in)
{
  in->at_end = true;
  if (in->handler.at_end) in->handler.at_end(in->handler.ud, in);
}

static void read_now(input *in)
{
  while (!in->paused && !in->stopping && !in->at_end) {
    ssize_t n = pread(in->fd, in->readbuf, in->readbuf_size,
                      (off_t)in->read_offset);
    if (n >= 0 && in->handler.follows &&
        !in->handler.follows(in->handler.ud, in, in->readbuf, (size_t)n)) {
      /* The line held was never ended in the file: a dead letter. */
      in->hold_partial = false;
      in->cut_reason = "the file was truncated or rewritten before this "
                       "line was ended";
      in->stopping = true;
    } else if (n > 0) {
      in->busy = true;
      split_lines(in, in->readbuf, (size_t)n);
      in->busy = false;
      /* A short read got to the end: what a writer adds later wakes the
       * input again (inotify, or the size the poll sees), so no read is
       * spent to be told 0. */
      if ((size_t)n < in->readbuf_size && !in->stopping) reached_end(in);
    } else if (n == 0) {
      reached_end(in);
    } else if (errno != EINTR) {
      finish(in, strerror(errno));
      return;
    }
  }
  if (in->stopping) finish(in, NULL);
}

/* ---- regular files and devices: uv_fs_read on the thread pool ---- */

static void on_file_read(uv_fs_t *req);

static void read_chunk(input *in)
{
  uv_buf_t b = uv_buf_init(in->readbuf, (unsigned)in->readbuf_size);
  /* A device has no offsets: read at its current position. */
  int64_t at = in->kind == INPUT_SEEKABLE ? (int64_t)in->read_offset : -1;
  int rc;

  if (in->follow) {
    read_now(in);
    return;
  }
  rc = uv_fs_read(in->loop, &in->req, in->fd, &b, 1, at, on_file_read);
  if (rc < 0) finish(in, uv_strerror(rc));
  else in->reading = true;
}

/* Reads of a file the page cache already holds, in a row on the loop,
 * before one goes to the thread pool again: the loop's other work (timers,
 * signals, other inputs) waits no longer than this many reads. */
#define CACHED_READS_MAX 16

/* What the page cache holds of a regular file is read here, on the loop
 * (preadv2 with RWF_NOWAIT), as a followed file is: a thread-pool round
 * trip per read, with the bytes crossing to another core, costs more than
 * the read. What is not cached goes to the pool, so the loop never waits
 * on a disk. Runs only at the end of a read callback, the one place that
 * may finish (and so free) the input. False: the next read is the pool's. */
static bool read_cached(input *in)
{
  for (int i = 0; i < CACHED_READS_MAX; i++) {
    struct iovec v = {in->readbuf, in->readbuf_size};
    ssize_t n = preadv2(in->fd, &v, 1, (off_t)in->read_offset, RWF_NOWAIT);
    if (n < 0 && errno == EINTR) continue;
    /* Not cached; or no RWF_NOWAIT here (a kernel or file system without
     * it): the pool's read says what a real error is. */
    if (n < 0 && (errno == EAGAIN || errno == EOPNOTSUPP || errno == EINVAL))
      return false;
    if (n <= 0) {
      finish(in, n < 0 ? strerror(errno) : NULL);
      return true;
    }
    in->busy = true;
    split_lines(in, in->readbuf, (size_t)n);
    in->busy = false;
    if (in->stopping) {
      finish(in, NULL);
      return true;
    }
    if (in->paused) return true;
  }
  return false;
}

/* After a read callback: finish a stop asked for during it, or read on. */
static void after_read(input *in)
{
  in->busy = false;
  if (in->stopping) finish(in, NULL);
  else if (in->kind != INPUT_STREAM && !in->paused &&
           !(in->kind == INPUT_SEEKABLE && !in->follow && read_cached(in)))
    read_chunk(in);
}

static void on_file_read(uv_fs_t *req)
{
  input *in = req->data;
  ssize_t n = req->result;

  uv_fs_req_cleanup(req);
  in->reading = false;
  if (n > 0) {
    in->busy = true;
    split_lines(in, in->readbuf, (size_t)n);
    after_read(in);
  } else {
    finish(in, n < 0 && n != UV_ECANCELED ? uv_strerror((int)n) : NULL);
  }
}

/* ---- streams: pipes, FIFOs, sockets, terminals ---- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
  input *in = h->data;
  (void)suggested;
  *b = uv_buf_init(in->readbuf, (unsigned)in->readbuf_size);
}

static void on_stream_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
  input *in = s->data;

  if (n > 0) {
    in->busy = true;
    split_lines(in, b->base, (size_t)n);
    after_read(in);
  } else if (n < 0) {
    finish(in, n == UV_EOF ? NULL : uv_strerror((int)n));
  }
}

static int start_stream(input *in, char *err, size_t errlen)
{
  uv_stream_t *s = (uv_stream_t *)&in->stream;
  int rc;

  if (isatty(in->fd)) {
    rc = uv_tty_init(in->loop, &in->stream.tty, in->fd, 1);
  } else {
    rc = uv_pipe_init(in->loop, &in->stream.pipe, 0);
    if (rc == 0) rc = uv_pipe_open(&in->stream.pipe, in->fd);
  }
  if (rc == 0) {
    s->data = in;
    rc = uv_read_start(s, on_alloc, on_stream_read);
  }
  if (rc != 0) {
    snprintf(err, errlen, "input '%s': cannot read %s: %s", in->name,
             describe(in), uv_strerror(rc));
    return -1;
  }
  return 0;
}

int input_start(input *in, uv_loop_t *loop, char *err, size_t errlen)
{
  struct stat st;

  in->loop = loop;
  if (!in->readbuf_size) in->readbuf_size = READ_BUF_SIZE;
  in->readbuf = malloc(in->readbuf_size);
  if (!in->readbuf) {
    snprintf(err, errlen, "input '%s': out of memory", in->name);
    return -1;
  }
  in->req.data = in;
  if (in->fd < 0)
    in->fd = in->path ? open(in->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
                      : STDIN_FILENO;
  if (in->fd < 0 || fstat(in->fd, &st) != 0) {
    snprintf(err, errlen, "input '%s': cannot open %s: %s", in->name,
             describe(in), strerror(errno));
    return -1;
  }
  if (S_ISDIR(st.st_mode)) {
    snprintf(err, errlen, "input '%s': %s is a directory", in->name,
             describe(in));
    return -1;
  }
  in->started = true;
  if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
    in->kind = INPUT_SEEKABLE;
    in->is_offset = true;
  } else if (S_ISCHR(st.st_mode) && !isatty(in->fd)) {
    in->kind = INPUT_DEVICE;
  } else {
    in->kind = INPUT_STREAM;
    if (start_stream(in, err, errlen) != 0) {
      in->started = false;
      return -1;
    }
    return 0;
  }
  if (in->path) fcntl(in->fd, F_SETFL, fcntl(in->fd, F_GETFL) & ~O_NONBLOCK);
  if (in->follow) in->at_end = true; /* input_read_more reads */
  else read_chunk(in);
  return 0;
}

void input_stop(input *in)
{
  if (!in->started || in->finished || in->stopping) return;
  in->stopping = true;
  if (in->busy) return; /* the read callback finishes */
  if (in->reading) uv_cancel((uv_req_t *)&in->req); /* on_file_read finishes */
  else finish(in, NULL);
}

void input_pause(input *in)
{
  if (in->paused) return;
  in->paused = true;
  if (in->started && !in->finished && in->kind == INPUT_STREAM)
    uv_read_stop((uv_stream_t *)&in->stream);
}

void input_resume(input *in)
{
  if (!in->paused) return;
  in->paused = false;
  if (!in->started || in->finished || in->stopping) return;
  if (in->kind == INPUT_STREAM)
    uv_read_start((uv_stream_t *)&in->stream, on_alloc, on_stream_read);
  else if (!in->reading && !in->busy && !in->at_end)
    read_chunk(in);
}

void input_read_more(input *in)
{
  if (!in->at_end || in->finished || in->stopping) return;
  in->at_end = false;
  if (!in->paused) read_chunk(in);
}

void input_flush_partial(input *in)
{
  if (in->at_end && !in->finished && (in->carry.len > 0 || in->piece > 0))
    hand_on_partial(in);
}

void input_free(input *in)
{
  if (in->path && in->fd >= 0) close(in->fd);
  in->fd = -1;
  free(in->readbuf);
  buf_free(&in->carry);
  in->readbuf = NULL;
}
