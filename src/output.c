/*
 * output.c - stdout and file sinks (see output.h). Writes are blocking
 * write(2) calls from the loop thread: a slow reader of stdout slows the
 * pipeline down rather than growing memory without bound.
 */
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static int open_path(const char *path)
{
  return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

int output_open(output_sink *o, const char *path, size_t flush_bytes,
                char *err, size_t errlen)
{
  memset(o, 0, sizeof *o);
  o->flush_bytes = flush_bytes ? flush_bytes : 1;
  if (!path) {
    o->fd = STDOUT_FILENO;
    return 0;
  }
  o->path = strdup(path);
  o->fd = o->path ? open_path(path) : -1;
  if (o->fd < 0) {
    snprintf(err, errlen, "cannot open %s for appending: %s", path,
             strerror(errno));
    free(o->path);
    o->path = NULL;
    return -1;
  }
  return 0;
}

/* Waits until a non-blocking fd (stdout may be one) can take more. */
static void wait_writable(int fd)
{
  struct pollfd p = {.fd = fd, .events = POLLOUT};
  poll(&p, 1, -1);
}

int output_flush(output_sink *o)
{
  size_t done = 0;

  while (done < o->pending.len) {
    ssize_t n = write(o->fd, o->pending.data + done, o->pending.len - done);
    if (n >= 0) {
      done += (size_t)n;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      wait_writable(o->fd);
    } else if (errno != EINTR) {
      o->write_errors++;
      log_msg("write to %s failed: %s; %zu bytes not written",
              o->path ? o->path : "stdout", strerror(errno),
              o->pending.len - done);
      buf_clear(&o->pending);
      return -1;
    }
  }
  o->bytes_written += done;
  buf_clear(&o->pending);
  return 0;
}

int output_maybe_flush(output_sink *o)
{
  return o->pending.len >= o->flush_bytes ? output_flush(o) : 0;
}

int output_reopen(output_sink *o)
{
  int fd;

  if (!o->path) return 0;
  output_flush(o);
  fd = open_path(o->path);
  if (fd < 0) {
    log_msg("cannot reopen %s: %s; still writing to the old file", o->path,
            strerror(errno));
    return -1;
  }
  close(o->fd);
  o->fd = fd;
  return 0;
}

void output_close(output_sink *o)
{
  output_flush(o);
  if (o->path) close(o->fd);
  free(o->path);
  buf_free(&o->pending);
  memset(o, 0, sizeof *o);
}
