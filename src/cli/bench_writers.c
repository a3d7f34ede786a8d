/*
 * bench_writers.c - the writers of `lumberjit bench --write-files N`
 * (bench.h): N threads appending generated lines to the files a
 * tail_input reads, as the applications of workload W1 do, so that tailing
 * is measured as users run it.
 *
 * Writer k of n writes its share of the lines, line j due at
 * t0 + (j * n + k) / rate (as fast as it can without a rate). It wakes
 * when its next line is due, a millisecond apart at the soonest, and
 * appends what is due by then in one write(2): each line is counted late
 * from its own due time, however the writer batched it or was held up.
 *
 * Each writer keeps a side table of the lines it wrote and not yet read,
 * (offset, due time), in order: the tail reads a file in order, so the
 * line at the offset a record comes from is at the head of its writer's
 * table (bench_writers_due, on the loop thread). Several writers may share
 * one file (O_APPEND: each write lands whole at the end, and the writer
 * learns where from its file offset after it); the record's line is then
 * at the head of one of their tables.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "line_generator.h"
#include "thread_name.h"

/* One write holds at most this many bytes of lines. */
#define BATCH_BYTES (64u << 10)

typedef struct {
  uint64_t offset, due_us;
} line_due;

typedef struct {
  bench_writers *all;
  unsigned k;
  pthread_t thread;
  bool started;
  const char *path;
  int fd;
  uint64_t lines, made;      /* its share; written so far */
  line_generator gen;
  char error[256];           /* why it stopped early; "" if it did not */
  double cpu;                /* its thread's CPU seconds, as it ends */
  pthread_mutex_t lock;      /* the table, shared with the loop thread */
  line_due *table;
  size_t head, len, cap;     /* table[head .. len) are unread */
} writer;

struct bench_writers {
  writer *w;
  unsigned n;
  double rate;               /* lines a second, all writers; 0: at once */
  uint64_t t0_us;            /* the schedule's 0 (uv_hrtime) */
  atomic_uint running;
  atomic_bool quit;
};

/* When line j of writer k is due, in us from t0. */
static uint64_t due_of(const bench_writers *b, unsigned k, uint64_t j)
{
  return (uint64_t)(((double)j * b->n + k) * 1e6 / b->rate);
}

/* How many of writer w's lines are due by now. */
static uint64_t due_by(const bench_writers *b, const writer *w, uint64_t now_us)
{
  double slots, lines;

  if (b->rate <= 0) return w->lines;
  slots = (double)(now_us - b->t0_us) * b->rate / 1e6;
  lines = slots < w->k ? 0 : (slots - w->k) / b->n + 1;
  return lines < (double)w->lines ? (uint64_t)lines : w->lines;
}

static int table_add(writer *w, uint64_t offset, uint64_t due_us)
{
  if (w->len == w->cap) {
    /* The read lines go first; then, if still full, more room. */
    if (w->head) {
      memmove(w->table, w->table + w->head, (w->len - w->head) * sizeof *w->table);
      w->len -= w->head;
      w->head = 0;
    }
    if (w->len == w->cap) {
      size_t cap = w->cap ? w->cap * 2 : 4096;
      line_due *t = realloc(w->table, cap * sizeof *t);
      if (!t) return -1;
      w->table = t;
      w->cap = cap;
    }
  }
  w->table[w->len++] = (line_due){offset, due_us};
  return 0;
}

/* Appends the lines due (up to a batch) in one write, and notes where
 * each landed. */
static int write_batch(writer *w, uint64_t upto, char *batch, line_due *lines)
{
  bench_writers *b = w->all;
  size_t len = 0, n = 0;
  ssize_t wrote;
  off_t end;

  while (w->made + n < upto && len + LINE_GENERATOR_MAX + 1 <= BATCH_BYTES) {
    size_t l = line_generator_next(&w->gen, batch + len, time(NULL));
    lines[n].offset = len;
    lines[n].due_us = b->rate > 0 ? b->t0_us + due_of(b, w->k, w->made + n)
                                  : uv_hrtime() / 1000;
    batch[len + l] = '\n';
    len += l + 1;
    n++;
  }
  wrote = write(w->fd, batch, len);
  if (wrote != (ssize_t)len || (end = lseek(w->fd, 0, SEEK_CUR)) < 0) {
    snprintf(w->error, sizeof w->error, "writing %s: %s", w->path,
             wrote < 0 ? strerror(errno) : "a short write");
    return -1;
  }
  pthread_mutex_lock(&w->lock);
  for (size_t i = 0; i < n; i++)
    if (table_add(w, (uint64_t)end - len + lines[i].offset, lines[i].due_us) != 0) {
      pthread_mutex_unlock(&w->lock);
      snprintf(w->error, sizeof w->error, "out of memory");
      return -1;
    }
  pthread_mutex_unlock(&w->lock);
  w->made += n;
  return 0;
}

static double thread_cpu_seconds(void)
{
  struct timespec ts;

  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *writer_main(void *arg)
{
  writer *w = arg;
  bench_writers *b = w->all;
  char name[16], *batch = malloc(BATCH_BYTES);
  line_due *lines = malloc(BATCH_BYTES / 2 * sizeof *lines);

  snprintf(name, sizeof name, "lj:writer%u", w->k + 1);
  thread_name_set(name);
  if (!batch || !lines) snprintf(w->error, sizeof w->error, "out of memory");
  while (!w->error[0] && w->made < w->lines && !atomic_load(&b->quit)) {
    uint64_t now = uv_hrtime() / 1000, upto = due_by(b, w, now);
    if (upto > w->made) {
      write_batch(w, upto, batch, lines);
      continue;
    }
    /* Until the next line is due, a millisecond at least. */
    uint64_t next = b->t0_us + due_of(b, w->k, w->made);
    uint64_t us = next > now + 1000 ? next - now : 1000;
    nanosleep(&(struct timespec){(time_t)(us / 1000000),
                                 (long)(us % 1000000) * 1000}, NULL);
  }
  free(batch);
  free(lines);
  w->cpu = thread_cpu_seconds();
  atomic_fetch_sub(&b->running, 1);
  return NULL;
}

bench_writers *bench_writers_start(char *const *paths, unsigned n,
                                   const char *format, uint64_t count,
                                   uint64_t rate, char *err, size_t errlen)
{
  bench_writers *b = calloc(1, sizeof *b);
  line_format lf = LINES_TEMPLATE;

  for (int i = 0; line_format_names[i]; i++)
    if (strcmp(format, line_format_names[i]) == 0) lf = (line_format)i;
  if (!b || !(b->w = calloc(n, sizeof *b->w))) {
    free(b);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  b->n = n;
  b->rate = (double)rate;
  atomic_init(&b->quit, false);
  atomic_init(&b->running, 0);
  for (unsigned k = 0; k < n; k++) {
    writer *w = &b->w[k];
    w->all = b;
    w->k = k;
    w->path = paths[k];
    w->lines = count / n + (k < count % n);
    w->fd = -1;
    pthread_mutex_init(&w->lock, NULL);
    line_generator_init(&w->gen, lf, lf == LINES_TEMPLATE ? format : NULL, k + 1);
  }
  for (unsigned k = 0; k < n; k++) {
    writer *w = &b->w[k];
    w->fd = open(w->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (w->fd < 0) {
      snprintf(err, errlen, "--write-files: cannot open %s: %s", w->path,
               strerror(errno));
      bench_writers_stop(b, NULL, NULL, NULL, 0);
      return NULL;
    }
  }
  b->t0_us = uv_hrtime() / 1000;
  for (unsigned k = 0; k < n; k++) {
    atomic_fetch_add(&b->running, 1);
    if (pthread_create(&b->w[k].thread, NULL, writer_main, &b->w[k]) != 0) {
      snprintf(err, errlen, "--write-files: cannot start a writer thread");
      bench_writers_stop(b, NULL, NULL, NULL, 0);
      return NULL;
    }
    b->w[k].started = true;
  }
  return b;
}

uint64_t bench_writers_due(bench_writers *b, const char *path, uint64_t position)
{
  uint64_t due = 0;

  for (unsigned k = 0; k < b->n && !due; k++) {
    writer *w = &b->w[k];
    if (!path || strcmp(path, w->path) != 0) continue;
    pthread_mutex_lock(&w->lock);
    /* Lines before it that were never handed on (dead-lettered at the
     * read) go. */
    while (w->head < w->len && w->table[w->head].offset < position) w->head++;
    if (w->head < w->len && w->table[w->head].offset == position)
      due = w->table[w->head++].due_us;
    pthread_mutex_unlock(&w->lock);
  }
  return due;
}

bool bench_writers_done(bench_writers *b)
{
  return atomic_load(&b->running) == 0;
}

uint64_t bench_writers_written(const bench_writers *b)
{
  uint64_t n = 0;

  /* Read once the threads are done: made is theirs until then. */
  for (unsigned k = 0; k < b->n; k++) n += b->w[k].made;
  return n;
}

int bench_writers_stop(bench_writers *b, uint64_t *written, double *cpu,
                       char *err, size_t errlen)
{
  int rc = 0;

  atomic_store(&b->quit, true);
  for (unsigned k = 0; k < b->n; k++)
    if (b->w[k].started) pthread_join(b->w[k].thread, NULL);
  if (written) *written = bench_writers_written(b);
  if (cpu)
    for (unsigned k = 0; k < b->n; k++) *cpu += b->w[k].cpu;
  for (unsigned k = 0; k < b->n; k++) {
    writer *w = &b->w[k];
    if (w->fd >= 0) close(w->fd);
    if (w->error[0] && rc == 0 && err) {
      snprintf(err, errlen, "--write-files: %s", w->error);
      rc = -1;
    }
    pthread_mutex_destroy(&w->lock);
    free(w->table);
  }
  free(b->w);
  free(b);
  return rc;
}
