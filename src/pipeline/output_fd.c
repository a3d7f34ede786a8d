/*
 * output_fd.c - writes a sink's queue (output.c) to a file descriptor:
 * standard output or a file, each record acknowledged once write(2) took
 * its last byte (output.h says what each failure does).
 *
 * Writes run on the loop thread. Regular files and block devices take
 * plain blocking write(2) calls: the kernel takes the bytes or says why
 * not, without waiting on another process. Pipes, sockets, terminals and
 * character devices that can be polled may stall on a reader, so they are
 * written non-blocking and waited for with uv_poll. To make them
 * non-blocking without changing a shared open file description (the
 * shell's, or stderr's when both go to one pipe), standard output is
 * reopened through /proc/self/fd; where that is refused (sockets),
 * O_NONBLOCK is set on it and the old flags come back at close.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "checkpoint.h"
#include "log.h"
#include "output_internal.h"

#define RETRY_FIRST_MS 50
#define RETRY_MAX_MS 2000

static int sync_file(output_sink *o);
static const output_transport fd_transport;

static const char *target(const output_sink *o)
{
  return o->path ? o->path : "standard output";
}

static int open_path(const char *path)
{
  /* O_NONBLOCK: a FIFO without a reader fails with ENXIO, never blocks. */
  return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK,
              0644);
}

static void set_blocking(int fd, bool blocking)
{
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0)
    fcntl(fd, F_SETFL, blocking ? fl & ~O_NONBLOCK : fl | O_NONBLOCK);
}

/* Makes a stream fd we do not own non-blocking: a private reopen where the
 * kernel gives one, else the shared flags, restored at close. */
static void private_nonblocking(output_sink *o)
{
  char proc[32];
  int fd;

  snprintf(proc, sizeof proc, "/proc/self/fd/%d", o->fd);
  fd = open(proc, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd >= 0) {
    o->fd = fd;
    o->own_fd = true;
    return;
  }
  o->restore_fd = o->fd;
  o->restore_flags = fcntl(o->fd, F_GETFL);
  set_blocking(o->fd, false);
}

static void restore_flags(output_sink *o)
{
  if (o->restore_fd >= 0 && o->restore_flags >= 0)
    fcntl(o->restore_fd, F_SETFL, o->restore_flags);
  o->restore_fd = -1;
}

/* Decides how o->fd is written: see the top of the file. */
static int classify(output_sink *o, char *err, size_t errlen)
{
  struct stat st;

  if (fstat(o->fd, &st) != 0) {
    snprintf(err, errlen, "cannot use %s: %s", target(o), strerror(errno));
    return -1;
  }
  if (S_ISDIR(st.st_mode)) {
    snprintf(err, errlen, "%s is a directory", target(o));
    return -1;
  }
  o->truncatable = S_ISREG(st.st_mode);
  o->pollable = false;
  if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
    set_blocking(o->fd, true);
    return 0;
  }
  if (!o->own_fd) private_nonblocking(o);
  if (uv_poll_init(o->loop, &o->poll, o->fd) == 0) {
    o->pollable = true;
    o->poll.data = o;
  } else {
    /* Not pollable (/dev/null, /dev/full): its writes do not wait. */
    restore_flags(o);
    set_blocking(o->fd, true);
  }
  return 0;
}

static void close_fd(output_sink *o)
{
  restore_flags(o);
  if (o->own_fd) close(o->fd);
  o->own_fd = false;
  o->fd = -1;
}

/* Cuts a partial last line off a file of lines; -1 on an I/O error. */
static int cut_partial_line(output_sink *o)
{
  char chunk[4096];
  off_t size = lseek(o->fd, 0, SEEK_END), at = size, keep = 0;
  int rd = size > 0 ? open(o->path, O_RDONLY | O_CLOEXEC) : -1;

  if (size <= 0) return size < 0 ? -1 : 0;
  if (rd < 0) return -1;
  while (at > 0 && keep == 0) {
    size_t n = at < (off_t)sizeof chunk ? (size_t)at : sizeof chunk;
    at -= (off_t)n;
    if (pread(rd, chunk, n, at) != (ssize_t)n) {
      close(rd);
      return -1;
    }
    for (size_t i = n; i-- > 0 && keep == 0;)
      if (chunk[i] == '\n') keep = at + (off_t)i + 1;
  }
  close(rd);
  if (keep == size) return 0;
  log_warning("%s: cut off %lld bytes of a partly written line at the end of %s "
          "(an earlier run stopped while writing it)", o->name,
          (long long)(size - keep), o->path);
  return ftruncate(o->fd, keep);
}

/* Counts the records whose last byte was written. */
static void ack(output_sink *o)
{
  uint64_t now_us = uv_hrtime() / 1000;
  size_t boundary = o->boundary;

  while (o->rec_head < o->nrecs && o->recs[o->rec_head].end <= o->head) {
    const output_record *r = &o->recs[o->rec_head++];
    output_count_written(o, r, now_us);
    o->boundary = r->end;
    checkpoint_unref(r->ack);
  }
  /* Lines of a run that went out whole count now, so a disk with less
   * room than a run still takes its lines one by one. */
  if (o->rec_head < o->nrecs && o->recs[o->rec_head].more)
    output_ack_run_front(o, o->head, now_us);
  if (o->backoff_ms && o->boundary != boundary) {
    /* A whole record went out: space is back. Bytes of a record that was
     * then cut off again do not count. */
    log_msg("%s: writing to %s again", o->name, target(o));
    o->backoff_ms = 0;
  }
}

/* Cuts the written part of the first unwritten record off the file, so
 * that the file ends with a whole record. */
static int cut_torn(output_sink *o)
{
  size_t torn = o->head - o->boundary;
  off_t end;

  if (torn == 0 || !o->truncatable) return 0;
  end = lseek(o->fd, 0, SEEK_CUR);
  if (end < (off_t)torn || ftruncate(o->fd, end - (off_t)torn) != 0 ||
      lseek(o->fd, end - (off_t)torn, SEEK_SET) < 0)
    return -1;
  o->head = o->boundary;
  o->bytes_written -= torn;
  /* What a sync made durable of the cut bytes is gone with them. */
  if (o->synced_bytes > o->bytes_written) o->synced_bytes = o->bytes_written;
  o->file_bytes -= torn;
  return 0;
}

static void on_writable(uv_poll_t *p, int status, int events)
{
  output_sink *o = p->data;
  (void)events;
  uv_poll_stop(p);
  if (o->state != OUTPUT_WAITING) return;
  o->state = OUTPUT_READY;
  /* An error from poll (libuv says EBADF for a reader that went away) is
   * best told by the write itself: EPIPE. */
  output_flush(o);
  if (status < 0 && o->state == OUTPUT_WAITING) {
    uv_poll_stop(p);
    snprintf(o->error, sizeof o->error, "waiting to write to %s failed: %s",
             target(o), uv_strerror(status));
    output_fail(o, o->error);
  }
}

static void on_retry(uv_timer_t *t)
{
  output_sink *o = t->data;
  if (o->state != OUTPUT_RETRYING) return;
  o->state = OUTPUT_READY;
  output_flush(o);
}

/* The disk is full: keep the queue, cut any torn record, retry later. */
static void hold_for_space(output_sink *o, int err)
{
  if (cut_torn(o) != 0) {
    snprintf(o->error, sizeof o->error, "write to %s failed: %s, and cutting "
             "off the partly written record failed: %s", target(o),
             strerror(err), strerror(errno));
    output_fail(o, o->error);
    return;
  }
  snprintf(o->error, sizeof o->error, "write to %s failed: %s", target(o),
           strerror(err));
  if (o->backoff_ms == 0) {
    /* The inputs pause once the queue reaches its high-water mark. */
    log_warning("%s: %s; holding its records and retrying", o->name, o->error);
    o->backoff_ms = RETRY_FIRST_MS;
  } else if (o->backoff_ms < RETRY_MAX_MS) {
    o->backoff_ms = o->backoff_ms * 2 < RETRY_MAX_MS ? o->backoff_ms * 2
                                                     : RETRY_MAX_MS;
  }
  o->state = OUTPUT_RETRYING;
  uv_timer_start(&o->retry, on_retry, o->backoff_ms, 0);
}

/* ---- the size cap (output.h) ---- */

void output_cap_size(output_sink *o, uint64_t max_bytes, unsigned keep)
{
  struct stat st;

  if (!o->path || !o->truncatable) return;
  o->max_file_bytes = max_bytes;
  o->keep_files = keep;
  o->file_bytes = fstat(o->fd, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* Where this write ends: after the whole records that fit under the cap
 * (the rest of one begun, or one alone in an empty file, always fits).
 * head itself: the file is full. */
static size_t write_end(const output_sink *o)
{
  uint64_t room = o->max_file_bytes > o->file_bytes
                      ? o->max_file_bytes - o->file_bytes : 0;
  size_t end = o->head;

  if (!o->max_file_bytes) return o->committed;
  for (size_t i = o->rec_head; i < o->nrecs; i++) {
    if (o->recs[i].end - o->head > room &&
        !(i == o->rec_head && (o->head > o->boundary || o->file_bytes == 0)))
      break;
    end = o->recs[i].end;
  }
  return end;
}

static void rotated_name(char *name, size_t len, const char *path,
                         unsigned k)
{
  snprintf(name, len, "%s.%u", path, k);
}

/* PATH.k-1 to PATH.k, ..., PATH to PATH.1, and a new PATH; -1 with nothing
 * renamed when PATH.keep_files is there (or cannot be made). */
static int rotate(output_sink *o)
{
  size_t len = strlen(o->path) + 16;
  char *from = malloc(len), *to = malloc(len);
  int fd = -1;

  if (!from || !to) goto done;
  rotated_name(to, len, o->path, o->keep_files);
  if (o->keep_files == 0 || access(to, F_OK) == 0) goto done;
  for (unsigned k = o->keep_files; k > 1; k--) {
    rotated_name(from, len, o->path, k - 1);
    rotated_name(to, len, o->path, k);
    if (rename(from, to) != 0 && errno != ENOENT) goto done;
  }
  rotated_name(to, len, o->path, 1);
  sync_file(o);
  if (rename(o->path, to) != 0 || (fd = open_path(o->path)) < 0) goto done;
  set_blocking(fd, true);
  close(o->fd);
  o->fd = fd;
  o->file_bytes = 0;
  log_msg("%s: %s reached %llu bytes: rotated to %s", o->name, o->path,
          (unsigned long long)o->max_file_bytes, to);
done:
  free(from);
  free(to);
  return fd < 0 ? -1 : 0;
}

/* The file and its rotated files are full: every queued record fails. */
static void refuse_queue(output_sink *o)
{
  uint64_t now = uv_now(o->loop);
  char reason[256];
  size_t start = o->boundary;

  snprintf(reason, sizeof reason, "%s is full: %llu bytes in it and %u "
           "rotated files (dead_letter_max_bytes, dead_letter_keep)", o->path,
           (unsigned long long)o->max_file_bytes, o->keep_files);
  while (o->rec_head < o->nrecs) {
    output_record r = o->recs[o->rec_head++];
    output_fail_record(o, &r, o->pending.data + start, r.end - start, reason);
    checkpoint_unref(r.ack);
    start = o->boundary = o->head = r.end;
    o->records_refused += 1 + (uint64_t)r.more;
  }
  if (o->refused_logged == 0 || now - o->refused_logged_ms >= 10000) {
    log_warning("%s: %s; %llu records refused so far, counted as failed", o->name,
            reason, (unsigned long long)o->records_refused);
    o->refused_logged = o->records_refused;
    o->refused_logged_ms = now;
  }
}

static void write_queue(output_sink *o)
{
  while (o->head < o->committed) {
    size_t end = write_end(o);
    ssize_t n;
    int err;
    if (end == o->head) {
      if (rotate(o) != 0) {
        refuse_queue(o);
        return;
      }
      continue;
    }
    n = write(o->fd, o->pending.data + o->head, end - o->head);
    err = errno;
    if (n > 0) {
      o->head += (size_t)n;
      o->bytes_written += (uint64_t)n;
      o->file_bytes += (uint64_t)n;
      ack(o);
      continue;
    }
    if (n < 0 && err == EINTR) continue;
    if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK) && o->pollable) {
      o->state = OUTPUT_WAITING;
      uv_poll_start(&o->poll, UV_WRITABLE, on_writable);
      return;
    }
    if (n < 0 && (err == ENOSPC || err == EDQUOT) && o->truncatable) {
      hold_for_space(o, err);
      return;
    }
    snprintf(o->error, sizeof o->error, "write to %s failed: %s", target(o),
             n < 0 ? strerror(err) : "it took no bytes");
    output_fail(o, o->error);
    return;
  }
}

static void fd_send(output_sink *o)
{
  write_queue(o);
}

/* The queue and then lines from the caller's buffer, in one writev, as
 * write_queue writes: a write that takes less, or fails, leaves the rest
 * to the queue, which tries it again and says why. */
static size_t fd_write_lines(output_sink *o, const char *bytes, size_t len)
{
  size_t queued = o->committed - o->head, done = 0;
  struct iovec iov[2];

  if (o->pollable) return 0; /* may block: the queue waits with poll */
  while (done < queued + len) {
    int n = 0;
    size_t past = done > queued ? done - queued : 0;
    ssize_t w;
    if (done < queued)
      iov[n++] = (struct iovec){o->pending.data + o->head + done,
                                queued - done};
    iov[n++] = (struct iovec){(char *)bytes + past, len - past};
    w = writev(o->fd, iov, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += (size_t)w;
  }
  o->bytes_written += done;
  o->file_bytes += done;
  if (queued) {
    o->head += done < queued ? done : queued;
    ack(o);
  }
  return done > queued ? done - queued : 0;
}

/* What it writes is acknowledged as it goes: it holds no record. */
static bool fd_busy(const output_sink *o)
{
  (void)o;
  return false;
}

/* Cuts a torn record off the file and stops waiting. */
static void fd_fail(output_sink *o, const char *reason)
{
  (void)reason;
  cut_torn(o);
  if (o->pollable) uv_poll_stop(&o->poll);
  if (o->handles_open) uv_timer_stop(&o->retry);
}

/* fsync where it means something: on files, not on pipes or devices. */
static int sync_file(output_sink *o)
{
  if (!o->truncatable || fsync(o->fd) == 0) return 0;
  log_error("%s: fsync of %s failed: %s; records counted as written may be "
          "lost", o->name, target(o), strerror(errno));
  return -1;
}

int output_reopen(output_sink *o)
{
  struct stat st;
  int fd, rc;

  /* Rotation concerns files; pipes and devices stay as they are. */
  if (!o->path || !o->truncatable || o->state == OUTPUT_FAILED) return 0;
  output_flush(o);
  fd = open_path(o->path);
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    log_warning("%s: cannot reopen %s: %s; still writing to the old file",
            o->name, o->path, fd < 0 ? strerror(errno) : "not a regular file");
    if (fd >= 0) close(fd);
    return -1;
  }
  set_blocking(fd, true);
  rc = sync_file(o);
  close(o->fd);
  o->fd = fd;
  o->file_bytes = (uint64_t)st.st_size;
  output_flush(o);
  return rc;
}

int output_unsynced_fd(const output_sink *o, uint64_t *mark)
{
  if (o->tx != &fd_transport || !o->truncatable || o->fd < 0 ||
      o->bytes_written == o->synced_bytes)
    return -1;
  *mark = o->bytes_written;
  return fcntl(o->fd, F_DUPFD_CLOEXEC, 0);
}

void output_synced(output_sink *o, uint64_t mark)
{
  if (mark > o->synced_bytes) o->synced_bytes = mark;
}

static void fd_close_handles(output_sink *o)
{
  if (!o->handles_open) return;
  o->handles_open = false;
  uv_close((uv_handle_t *)&o->retry, NULL);
  if (o->pollable) uv_close((uv_handle_t *)&o->poll, NULL);
}

static int fd_close(output_sink *o)
{
  int rc = o->fd >= 0 ? sync_file(o) : 0;

  close_fd(o);
  free(o->path);
  o->path = NULL;
  return rc;
}

static const output_transport fd_transport = {
  .send = fd_send, .write_lines = fd_write_lines, .busy = fd_busy,
  .fail = fd_fail, .close_handles = fd_close_handles, .close = fd_close,
};

int output_open(output_sink *o, uv_loop_t *loop, const char *name,
                const char *path, size_t flush_bytes, bool lines,
                output_events ev, char *err, size_t errlen)
{
  memset(o, 0, sizeof *o);
  o->tx = &fd_transport;
  o->name = name;
  o->loop = loop;
  o->ev = ev;
  o->restore_fd = -1;
  o->flush_bytes = flush_bytes ? flush_bytes : 1;
  output_set_high_water(o, OUTPUT_HIGH_WATER);
  o->fd = STDOUT_FILENO;
  if (path) {
    o->path = strdup(path);
    o->fd = o->path ? open_path(path) : -1;
    if (o->fd < 0) {
      snprintf(err, errlen, "cannot open %s for appending: %s", path,
               errno == ENXIO ? "it is a FIFO that no process reads"
                              : strerror(errno));
      free(o->path);
      o->path = NULL;
      return -1;
    }
    o->own_fd = true;
  }
  uv_timer_init(loop, &o->retry);
  o->retry.data = o;
  o->handles_open = true;
  if (classify(o, err, errlen) != 0) goto fail;
  if (lines && o->path && o->truncatable && cut_partial_line(o) != 0) {
    snprintf(err, errlen, "cannot repair the end of %s: %s", o->path,
             strerror(errno));
    goto fail;
  }
  return 0;
fail:
  fd_close_handles(o);
  close_fd(o);
  return -1;
}
