/*
 * try_watch.c - --try --watch (try.h): a run, then another whenever the
 * config, a plugin's file, a sample or --expect's golden file changes, on
 * a libuv loop. A fs_poll
 * handle polls each file (it sees an editor's rename over the file, which
 * inotify on the old inode would not), and a change arms a short timer
 * before the next run, since a save is often several writes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "signals.h"
#include "try_internal.h"

#define TRY_POLL_MS 250
#define TRY_SETTLE_MS 100

/* --watch: the files a run reads, polled, and the settle timer. The
 * polls live across runs, so a change made while a run goes on, or just
 * after it, is seen and runs again. */
typedef struct watcher watcher;

typedef struct {
  uv_fs_poll_t handle;
  watcher *w;
  char *path;
} watched_file;

struct watcher {
  const try_options *o;
  const buf *stdin_copy;
  plugin_files files;
  watched_file **polls;   /* the config, the samples and the golden file */
  size_t npolls;
  watched_file *plugin_polls[2]; /* the decoder's and encoder's files */
  uv_timer_t settle;
  char *changed;       /* the path whose change armed the timer */
  unsigned runs;
  int status;          /* the last run's */
  bool stopping;
};

static void run_again(uv_timer_t *timer);

static void free_watched(uv_handle_t *h)
{
  watched_file *f = h->data;
  free(f->path);
  free(f);
}

static void unpoll(watched_file *f)
{
  if (f) uv_close((uv_handle_t *)&f->handle, free_watched);
}

static void on_change(uv_fs_poll_t *h, int status, const uv_stat_t *prev,
                      const uv_stat_t *curr)
{
  watched_file *f = h->data;
  watcher *w = f->w;
  (void)curr;
  /* A file missing at the start is reported once as missing: that is no
   * change, it is the run's error already printed. */
  if (status < 0 && prev->st_ino == 0) return;
  if (!w->changed) w->changed = strdup(f->path);
  uv_timer_start(&w->settle, run_again, TRY_SETTLE_MS, 0);
}

/* A poll of path, or NULL (said on stderr). */
static watched_file *poll_path(watcher *w, const char *path)
{
  watched_file *f = calloc(1, sizeof *f);

  if (f) f->path = strdup(path);
  if (!f || !f->path) {
    if (f) free(f->path);
    free(f);
    fprintf(stderr, "lumberjit: --watch: out of memory; %s is not watched\n",
            path);
    return NULL;
  }
  f->w = w;
  uv_fs_poll_init(w->settle.loop, &f->handle);
  f->handle.data = f;
  uv_fs_poll_start(&f->handle, on_change, path, TRY_POLL_MS);
  return f;
}

/* The config, the sample files and --expect's golden file, polled for
 * good; not the golden file --update writes, which would run again after
 * each run. */
static void poll_inputs(watcher *w)
{
  size_t n = 2 + w->o->nsamples;

  w->polls = calloc(n, sizeof *w->polls);
  if (!w->polls) return;
  w->polls[w->npolls++] = poll_path(w, w->o->config_path);
  for (size_t i = 0; i < w->o->nsamples; i++)
    if (strcmp(w->o->samples[i], "-") != 0)
      w->polls[w->npolls++] = poll_path(w, w->o->samples[i]);
  if (w->o->expect && !w->o->update)
    w->polls[w->npolls++] = poll_path(w, w->o->expect);
}

/* plugin_files' hook: polls the plugins' files the config names now. */
static void poll_plugins(void *ud)
{
  watcher *w = ud;
  const char *files[2] = {w->files.decoder_file, w->files.encoder_file};

  for (int i = 0; i < 2; i++) {
    watched_file *f = w->plugin_polls[i];
    if (f && files[i] && strcmp(f->path, files[i]) == 0) continue;
    unpoll(f);
    w->plugin_polls[i] = files[i] ? poll_path(w, files[i]) : NULL;
  }
}

static void waiting(const watcher *w)
{
  fprintf(stderr, "lumberjit: --watch: run %u done; waiting for a change of "
          "%s, the plugins' files%s or the samples (Ctrl-C stops)\n", w->runs,
          w->o->config_path,
          w->o->expect && !w->o->update ? ", the golden file" : "");
}

static void run_again(uv_timer_t *timer)
{
  watcher *w = timer->data;

  printf("== run %u: %s changed ==\n", ++w->runs,
         w->changed ? w->changed : "a file");
  fflush(stdout);
  free(w->changed);
  w->changed = NULL;
  w->status = try_once(w->o, w->stdin_copy, &w->files);
  waiting(w);
}

static void stop_watching(void *ud, const char *signame)
{
  watcher *w = ud;
  (void)signame;
  if (w->stopping) return;
  w->stopping = true;
  for (size_t i = 0; i < w->npolls; i++) unpoll(w->polls[i]);
  unpoll(w->plugin_polls[0]);
  unpoll(w->plugin_polls[1]);
  uv_close((uv_handle_t *)&w->settle, NULL);
}

/* Standard input, read whole: every run reads it again. */
static int read_all(FILE *f, buf *b)
{
  char chunk[65536];
  size_t n;

  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    if (!buf_append(b, chunk, n)) return -1;
  return ferror(f) ? -1 : 0;
}

static bool reads_stdin(const try_options *o)
{
  if (o->nsamples == 0) return true;
  for (size_t i = 0; i < o->nsamples; i++)
    if (strcmp(o->samples[i], "-") == 0) return true;
  return false;
}

int try_watch(const try_options *o)
{
  uv_loop_t *loop = uv_default_loop();
  buf stdin_copy = {0};
  watcher w = {.o = o, .stdin_copy = reads_stdin(o) ? &stdin_copy : NULL,
               .files = {.loaded = poll_plugins, .ud = &w}, .runs = 1};
  signals_handler sh = {.stop = stop_watching, .ud = &w};

  if (w.stdin_copy && read_all(stdin, &stdin_copy) != 0) {
    fprintf(stderr, "lumberjit: --try: cannot read standard input: %s\n",
            strerror(errno));
    buf_free(&stdin_copy);
    return 1;
  }
  uv_timer_init(loop, &w.settle);
  w.settle.data = &w;
  poll_inputs(&w);
  w.status = try_once(o, w.stdin_copy, &w.files);
  waiting(&w);
  signals_set_handler(&sh);
  uv_run(loop, UV_RUN_DEFAULT);
  signals_set_handler(NULL);
  free(w.polls);
  free(w.changed);
  free(w.files.decoder_file);
  free(w.files.encoder_file);
  buf_free(&stdin_copy);
  return w.status;
}
