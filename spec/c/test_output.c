/*
 * test_output.c - the output sink's record queue against real pipes: a slow
 * reader gets every byte in order with each record counted once written; a
 * closed reader fails each queued and later record with its exact bytes,
 * also when the failure callback writes to the same sink; the high-water
 * mark holds until the queue drains; a transport sees the records a
 * worker's collector handed over, in order, by peeking and taking, and
 * the queue keeps its buffer when it takes a smaller one's records; runs
 * of lines count line by line as a slow reader takes them, fail line by
 * line with each line's position, and go to a file without a copy.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "buf.h"
#include "check.h"
#include "output.h"

typedef struct {
  output_sink *sink;
  buf failed_bytes;
  uint64_t failed_positions[8]; /* of the first failed records */
  int failed, failed_dead_letters, changed;
  bool reenter; /* dead-letter each failure into the failing sink itself */
} watcher;

static void on_failed(void *ud, output_sink *o, const output_record *r,
                      const char *bytes, size_t len, const char *reason)
{
  watcher *w = ud;
  (void)reason;
  if (r->dead_letter) {
    w->failed_dead_letters++;
    return;
  }
  if (w->failed < 8) w->failed_positions[w->failed] = r->position;
  w->failed++;
  buf_append(&w->failed_bytes, bytes, len);
  if (w->reenter) {
    msg_origin from = {"in", r->position, false, bytes, len, NULL, NULL, NULL, 0};
    buf_append(output_buf(o), "dead\n", 5);
    output_commit(o, &from, true);
  }
}

static void on_changed(void *ud, output_sink *o)
{
  watcher *w = ud;
  (void)o;
  w->changed++;
}

/* The loop must finish closing the handles before the sink goes. */
static void close_sink(output_sink *o)
{
  output_close_handles(o);
  uv_run(uv_default_loop(), UV_RUN_NOWAIT);
  output_close(o);
}

/* Opens a sink on the write end of a new pipe; fds[0] is the read end. */
static void open_on_pipe(output_sink *o, watcher *w, int fds[2],
                         size_t flush_bytes)
{
  char path[32], err[256];
  output_events ev = {on_failed, on_changed, w};

  CHECK(pipe(fds) == 0);
  fcntl(fds[1], F_SETPIPE_SZ, 4096);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  snprintf(path, sizeof path, "/proc/self/fd/%d", fds[1]);
  CHECK(output_open(o, uv_default_loop(), "output 'test'", path, flush_bytes,
                    true, ev, err, sizeof err) == 0);
  CHECK(o->pollable);
  w->sink = o;
}

static void commit_record(output_sink *o, unsigned i, buf *expected)
{
  char line[128];
  int n = snprintf(line, sizeof line, "record %05u %080u\n", i, i);
  msg_origin from = {"in", i, false, line, (size_t)n, NULL, NULL, NULL,
                     uv_hrtime() / 1000};

  buf_append(output_buf(o), line, (size_t)n);
  if (expected) buf_append(expected, line, (size_t)n);
  output_commit(o, &from, false);
}

static void test_slow_reader(void)
{
  output_sink o;
  watcher w = {0};
  int fds[2];
  buf expected = {0}, got = {0};
  char chunk[1000];

  open_on_pipe(&o, &w, fds, 1);
  for (unsigned i = 0; i < 2000; i++) commit_record(&o, i, &expected);
  CHECK(o.state == OUTPUT_WAITING);
  CHECK(o.records_written < 2000);
  /* Read a little at a time, so writes keep landing part-way in records. */
  while (got.len < expected.len) {
    ssize_t n = read(fds[0], chunk, sizeof chunk);
    if (n > 0) buf_append(&got, chunk, (size_t)n);
    uv_run(uv_default_loop(), UV_RUN_NOWAIT);
  }
  CHECK(o.records_written == 2000);
  /* Every record bore the time it was read: each one's latency counts. */
  CHECK(o.latency.count == 2000);
  CHECK(output_idle(&o));
  CHECK(got.len == expected.len && memcmp(got.data, expected.data, got.len) == 0);
  CHECK(w.failed == 0);
  close_sink(&o);
  close(fds[0]);
  close(fds[1]);
  buf_free(&expected);
  buf_free(&got);
}

static void test_closed_reader(bool reenter)
{
  output_sink o;
  watcher w = {.reenter = reenter};
  int fds[2];
  buf expected = {0};

  open_on_pipe(&o, &w, fds, 1u << 20);
  close(fds[0]);
  for (unsigned i = 0; i < 3; i++) commit_record(&o, i, &expected);
  output_flush(&o);
  CHECK(o.state == OUTPUT_FAILED);
  CHECK_CONTAINS(o.error, "Broken pipe");
  commit_record(&o, 3, &expected); /* fails at once */
  CHECK(w.failed == 4);
  CHECK(w.failed_dead_letters == (reenter ? 4 : 0));
  CHECK(w.failed_bytes.len == expected.len &&
        memcmp(w.failed_bytes.data, expected.data, expected.len) == 0);
  CHECK(o.records_written == 0 && output_idle(&o));
  close_sink(&o);
  close(fds[1]);
  buf_free(&expected);
  buf_free(&w.failed_bytes);
}

static void test_high_water(void)
{
  output_sink o;
  watcher w = {0};
  int fds[2];
  char chunk[65536];
  unsigned i = 0;

  open_on_pipe(&o, &w, fds, 1);
  while (!output_full(&o)) commit_record(&o, i++, NULL);
  CHECK(o.state == OUTPUT_WAITING);
  w.changed = 0;
  while (!output_idle(&o)) {
    while (read(fds[0], chunk, sizeof chunk) > 0)
      ;
    uv_run(uv_default_loop(), UV_RUN_NOWAIT);
  }
  CHECK(!output_full(&o));
  CHECK(w.changed >= 1);
  CHECK(o.records_written == i);
  close_sink(&o);
  close(fds[0]);
  close(fds[1]);
}

/* A transport that takes nothing by itself: the test takes for it. */
static void held_send(output_sink *o) { (void)o; }
static bool held_busy(const output_sink *o) { (void)o; return false; }
static void held_fail(output_sink *o, const char *reason) { (void)o; (void)reason; }
static void held_checkpoint(output_sink *o) { (void)o; }
static void held_summary(output_sink *o, char *line, size_t len)
{
  (void)o;
  snprintf(line, len, "%s", "");
}
static void held_stats(const output_sink *o, output_tx_stats *st)
{
  (void)o;
  *st = (output_tx_stats){0};
}
static void held_close_handles(output_sink *o) { (void)o; }
static int held_close(output_sink *o) { (void)o; return 0; }

static const output_transport held = {held_send, held_busy, held_fail,
                                      held_checkpoint, held_summary,
                                      held_stats, held_close_handles,
                                      held_close, NULL};

/* Record i of commit_record, as peeked at. */
static bool peeks(output_sink *o, size_t n, unsigned i)
{
  char line[128];
  const char *bytes;
  size_t len;
  int want = snprintf(line, sizeof line, "record %05u %080u\n", i, i);

  return output_peek(o, n, &bytes, &len) && len == (size_t)want &&
         memcmp(bytes, line, len) == 0;
}

static void test_transport_queue(void)
{
  output_sink t, big, small;
  watcher w = {0};
  const char *bytes;
  size_t len, cap;

  output_open_transport(&t, uv_default_loop(), "output 'test'", &held, NULL,
                        (output_events){on_failed, on_changed, &w});
  output_collector_init(&big);
  output_collector_init(&small);
  for (unsigned i = 0; i < 300; i++) commit_record(&big, i, NULL);
  output_adopt(&t, &big);
  CHECK(peeks(&t, 0, 0) && peeks(&t, 1, 1) && peeks(&t, 299, 299));
  CHECK(!output_peek(&t, 300, &bytes, &len));
  output_take(&t);
  CHECK(peeks(&t, 0, 1) && peeks(&t, 298, 299));
  CHECK(output_front(&t, &bytes, &len) == output_peek(&t, 0, &bytes, &len));
  commit_record(&small, 300, NULL);
  output_adopt(&t, &small);
  CHECK(peeks(&t, 298, 299) && peeks(&t, 299, 300));
  while (output_front(&t, &bytes, &len)) {
    output_record r = t.recs[t.rec_head];
    output_take(&t);
    output_delivered(&t, &r, uv_hrtime() / 1000);
  }
  CHECK(t.records_written == 300);
  CHECK(t.latency.count == 300);
  /* Empty now, the queue takes a one-record job by copying it into its own
   * buffer, not by swapping its buffer for the job's small one. */
  output_flush(&t);
  cap = t.pending.cap;
  commit_record(&small, 301, NULL);
  output_adopt(&t, &small);
  CHECK(t.pending.cap == cap);
  CHECK(peeks(&t, 0, 301));
  output_take(&t);
  close_sink(&t);
  output_close(&big);
  output_close(&small);
}

/* Commits n lines of 100 bytes (with the LF) as one run, the first at
 * offset `first`. */
static void commit_run(output_sink *o, unsigned n, uint64_t first,
                       buf *expected)
{
  buf lines = {0};
  msg_origin from = {"in", first, true, NULL, 0, NULL, NULL, NULL,
                     uv_hrtime() / 1000};

  for (unsigned i = 0; i < n; i++) {
    char line[128];
    int len = snprintf(line, sizeof line, "line %05u %088u\n", i, i);
    buf_append(&lines, line, (size_t)len);
  }
  from.bytes = lines.data;
  from.len = lines.len;
  if (expected) buf_append(expected, lines.data, lines.len);
  output_commit_lines(o, &from, n);
  buf_free(&lines);
}

static void test_runs_slow_reader(void)
{
  output_sink o;
  watcher w = {0};
  int fds[2];
  buf expected = {0}, got = {0};
  char chunk[1000];
  bool partly = false;

  open_on_pipe(&o, &w, fds, 1);
  commit_run(&o, 3000, 0, &expected);
  commit_run(&o, 1000, 300000, &expected);
  CHECK(output_queued_records(&o) + o.records_written == 4000);
  while (got.len < expected.len) {
    ssize_t n = read(fds[0], chunk, sizeof chunk);
    if (n > 0) buf_append(&got, chunk, (size_t)n);
    uv_run(uv_default_loop(), UV_RUN_NOWAIT);
    /* Lines count as they go out, not once their run is all out. */
    partly |= o.records_written > 0 && o.records_written < 3000;
  }
  CHECK(partly);
  CHECK(o.records_written == 4000 && o.latency.count == 4000);
  CHECK(output_queued_records(&o) == 0 && output_idle(&o));
  CHECK(got.len == expected.len && memcmp(got.data, expected.data, got.len) == 0);
  close_sink(&o);
  close(fds[0]);
  close(fds[1]);
  buf_free(&expected);
  buf_free(&got);
}

static void test_runs_fail(void)
{
  output_sink o;
  watcher w = {0};
  int fds[2];
  buf expected = {0};

  open_on_pipe(&o, &w, fds, 1u << 20);
  close(fds[0]);
  commit_run(&o, 5, 1000, &expected);
  output_flush(&o);
  CHECK(o.state == OUTPUT_FAILED);
  commit_run(&o, 2, 5000, &expected); /* fails at once */
  CHECK(w.failed == 7);
  CHECK(w.failed_positions[0] == 1000 && w.failed_positions[1] == 1100 &&
        w.failed_positions[4] == 1400 && w.failed_positions[5] == 5000 &&
        w.failed_positions[6] == 5100);
  CHECK(w.failed_bytes.len == expected.len &&
        memcmp(w.failed_bytes.data, expected.data, expected.len) == 0);
  close_sink(&o);
  close(fds[1]);
  buf_free(&expected);
  buf_free(&w.failed_bytes);
}

static void test_runs_to_file(void)
{
  char path[] = "/tmp/lumberjit-test-output-XXXXXX", err[256];
  output_sink o;
  watcher w = {0};
  output_events ev = {on_failed, on_changed, &w};
  buf expected = {0};
  int fd = mkstemp(path);

  CHECK(fd >= 0);
  CHECK(output_open(&o, uv_default_loop(), "output 'test'", path, 4096, true,
                    ev, err, sizeof err) == 0);
  CHECK(output_takes_lines(&o));
  commit_record(&o, 0, &expected);   /* queued: under flush_bytes */
  commit_run(&o, 10, 100, &expected); /* queued too */
  CHECK(o.records_written == 0);
  commit_run(&o, 500, 2000, &expected); /* written, with what was queued */
  CHECK(o.records_written == 511 && output_idle(&o));
  CHECK(o.pending.cap < 50000); /* the big run was never copied in */
  close_sink(&o);
  {
    buf got = {0};
    char chunk[4096];
    ssize_t n;
    while ((n = read(fd, chunk, sizeof chunk)) > 0)
      buf_append(&got, chunk, (size_t)n);
    CHECK(got.len == expected.len &&
          memcmp(got.data, expected.data, got.len) == 0);
    buf_free(&got);
  }
  close(fd);
  unlink(path);
  buf_free(&expected);
}

int main(void)
{
  signal(SIGPIPE, SIG_IGN); /* as main.c: EPIPE, not a kill */
  test_slow_reader();
  test_closed_reader(false);
  test_closed_reader(true);
  test_high_water();
  test_transport_queue();
  test_runs_slow_reader();
  test_runs_fail();
  test_runs_to_file();
  uv_run(uv_default_loop(), UV_RUN_NOWAIT);
  uv_loop_close(uv_default_loop());
  return check_summary();
}
