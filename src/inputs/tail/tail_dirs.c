/*
 * tail_dirs.c - the directories tail_inputs' patterns name, watched with
 * inotify so a new file is found at once (tail.h, "Finding files").
 */
#include "tail_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A watched directory, shared by every tail_input whose patterns name it:
 * inotify reports each write to a file there too, and one handle per
 * input would pass each of them to every input. */
struct tail_dir {
  struct tail_dir *next;
  char *path;
  uv_fs_event_t handle;
  tail **tails;
  size_t ntails;
};

/* A file came, went or was renamed (UV_RENAME); writes to the files there
 * (UV_CHANGE) are their own watches' business. */
static void on_dir_event(uv_fs_event_t *h, const char *name, int events,
                         int status)
{
  struct tail_dir *d = h->data;

  (void)name;
  if (status != 0 || !(events & UV_RENAME)) return;
  for (size_t i = 0; i < d->ntails; i++) tail_schedule_scan(d->tails[i]);
}

/* The directories the pipeline's tail_inputs watch (NULL: out of
 * memory). */
static struct tail_dir **watched(tail *t)
{
  return (struct tail_dir **)pl_input_kind_state(t->pi);
}

static void pattern_dir(const char *pattern, char *dir, size_t len)
{
  const char *slash = strrchr(pattern, '/');

  if (!slash) snprintf(dir, len, ".");
  else snprintf(dir, len, "%.*s", (int)(slash == pattern ? 1 : slash - pattern),
                pattern);
}

static struct tail_dir *new_dir(tail *t, const char *path)
{
  struct tail_dir **dirs = watched(t);
  struct tail_dir *d = dirs ? calloc(1, sizeof *d) : NULL;

  if (!d || !(d->path = strdup(path))) {
    free(d);
    return NULL;
  }
  uv_fs_event_init(t->loop, &d->handle);
  d->handle.data = d;
  /* Not watched (missing, inotify's limit): the timed scans find files. */
  uv_fs_event_start(&d->handle, on_dir_event, path, 0);
  d->next = *dirs;
  *dirs = d;
  return d;
}

/* The directory of each pattern, when it has no wildcards, is watched: a
 * file created there is found at once. */
void tail_watch_dirs(tail *t)
{
  struct tail_dir **dirs = watched(t);

  for (char **p = t->cfg.paths; dirs && *p; p++) {
    struct tail_dir *d = *dirs;
    char dir[4096];
    tail **tails;
    pattern_dir(*p, dir, sizeof dir);
    if (strpbrk(dir, "*?[")) continue;
    while (d && strcmp(d->path, dir) != 0) d = d->next;
    if (!d && !(d = new_dir(t, dir))) continue;
    if (d->ntails > 0 && d->tails[d->ntails - 1] == t) continue;
    tails = realloc(d->tails, (d->ntails + 1) * sizeof *tails);
    if (!tails) continue;
    d->tails = tails;
    d->tails[d->ntails++] = t;
  }
}

static void free_dir(uv_handle_t *h)
{
  struct tail_dir *d = h->data;

  free(d->path);
  free(d->tails);
  free(d);
}

void tail_close_dirs(void **state)
{
  struct tail_dir **dirs = (struct tail_dir **)state;

  while (*dirs) {
    struct tail_dir *d = *dirs;
    *dirs = d->next;
    uv_close((uv_handle_t *)&d->handle, free_dir);
  }
}

/* t watches no more: a directory no input watches is closed (its handle
 * would keep the loop running). */
void tail_unwatch_dirs(tail *t)
{
  struct tail_dir **dirs = watched(t);

  for (struct tail_dir **p = dirs; p && *p;) {
    struct tail_dir *d = *p;
    size_t kept = 0;
    for (size_t i = 0; i < d->ntails; i++)
      if (d->tails[i] != t) d->tails[kept++] = d->tails[i];
    d->ntails = kept;
    if (kept > 0) {
      p = &d->next;
      continue;
    }
    *p = d->next;
    uv_close((uv_handle_t *)&d->handle, free_dir);
  }
}
