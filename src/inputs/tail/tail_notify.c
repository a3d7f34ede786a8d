/*
 * tail_notify.c - the inotify watches of a pipeline's tail_inputs: the
 * directories their patterns name (a file came, went or was renamed: a
 * scan) and the files they read (a file changed: read it), on two inotify
 * descriptors of the pipeline's (tail.h, "Finding files" and "Following").
 *
 * Why not libuv's uv_fs_event: it wakes the loop for every event, and a
 * directory's watch reports every write to every file in it. Writers that
 * append a line at a time to 50 files made about 100 wake-ups a second
 * and a read of a file a line, most of a tail_input's CPU on a VM. Here the
 * directories are watched without IN_MODIFY, and events are taken in
 * batches: once a batch is read (and each file it names read once), the
 * descriptor is left unread for read_interval_ms, the least of the
 * tail_inputs' (default 200). What is written meanwhile waits in the
 * kernel's queue and comes in the next batch: a lone line is read at once,
 * a busy file at most every read_interval_ms. A queue that overflowed
 * (IN_Q_OVERFLOW) has every file read and every directory scanned.
 *
 * The directories' events come on a descriptor of their own that never
 * rests: a file that a pattern matches is opened the moment it is created
 * (or moved in), and the descriptor held keeps it readable. Resting, a
 * file that lived less than read_interval_ms there (rotated, then deleted
 * or rotated out, under a fast writer) was gone before its event was
 * read: every line of it lost. Files come rarely beside writes; what else
 * the events ask for, a scan, waits for read_interval_ms as before, so a
 * busy directory of files no pattern matches costs no more than it did.
 *
 * inotify gives one watch descriptor per inode, whoever asks: two
 * tail_inputs following one file, or naming one directory, share it, so
 * each watch lists what it is for, and is removed with the last of them.
 * No watch (the descriptor or the watch limit ran out) is no loss: the
 * timed scans still find new files and see files grow.
 */
#include "tail_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "log.h"

#define FILE_EVENTS (IN_MODIFY | IN_ATTRIB | IN_MOVE_SELF | IN_DELETE_SELF)
#define DIR_EVENTS (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | \
                    IN_MOVE_SELF | IN_DELETE_SELF | IN_ONLYDIR)
#define READ_INTERVAL_UNSET UINT64_MAX

/* One watched inode and what watches it: files (of any tail_input), or a
 * directory and the tail_inputs whose patterns name it. */
typedef struct {
  int wd;
  tail_file **files;
  size_t nfiles;
  char *dir;                 /* a directory's path; NULL: a file's watch */
  tail **tails;              /* a directory's: whom its events concern */
  size_t ntails;
} watch;

/* An inotify descriptor and its watches (a watch descriptor is its
 * descriptor's). */
typedef struct {
  int fd;                    /* -1: none (its limit) */
  uv_poll_t poll;
  watch *watches;            /* sorted by wd */
  size_t nwatches, cap;
} watch_set;

struct tail_notify {
  uv_loop_t *loop;
  watch_set files;           /* fd -1: none: the scans do it all */
  watch_set dirs;            /* fd -1: none: files' takes the directories */
  uv_timer_t hold;           /* the files' descriptor rests between batches */
  int closing;               /* handles not yet closed */
  uint64_t interval_ms;      /* the tail_inputs' least read_interval_ms */
  tail **tails;              /* started, not yet closed */
  size_t ntails;
  tail_file **changed;       /* files a batch said changed, to read */
  size_t nchanged, changed_cap;
  bool warned;
};

static tail_notify **notify_of(tail *t)
{
  return (tail_notify **)pl_input_kind_state(t->pi);
}

/* The watch of wd, or where it would go (*at). */
static watch *find(watch_set *ws, int wd, size_t *at)
{
  size_t lo = 0, hi = ws->nwatches;

  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ws->watches[mid].wd < wd) lo = mid + 1;
    else hi = mid;
  }
  if (at) *at = lo;
  return lo < ws->nwatches && ws->watches[lo].wd == wd ? &ws->watches[lo]
                                                       : NULL;
}

/* The watch of wd, made if new; NULL when out of memory. */
static watch *watch_of(watch_set *ws, int wd)
{
  size_t at;
  watch *w = find(ws, wd, &at);

  if (w) return w;
  if (ws->nwatches == ws->cap) {
    size_t cap = ws->cap ? 2 * ws->cap : 64;
    watch *p = realloc(ws->watches, cap * sizeof *p);
    if (!p) return NULL;
    ws->watches = p;
    ws->cap = cap;
  }
  memmove(ws->watches + at + 1, ws->watches + at,
          (ws->nwatches - at) * sizeof *ws->watches);
  ws->nwatches++;
  ws->watches[at] = (watch){.wd = wd};
  return &ws->watches[at];
}

static void drop_watch(watch_set *ws, watch *w, bool remove)
{
  if (remove) inotify_rm_watch(ws->fd, w->wd);
  free(w->files);
  free(w->dir);
  free(w->tails);
  memmove(w, w + 1,
          (size_t)(ws->watches + ws->nwatches - (w + 1)) * sizeof *w);
  ws->nwatches--;
}

/* Where the directories are watched: on their own descriptor, or on the
 * files' when there is none. */
static watch_set *dir_set(tail_notify *n)
{
  return n->dirs.fd >= 0 ? &n->dirs : &n->files;
}

static bool add_ptr(void ***list, size_t *len, void *p)
{
  void **grown = realloc(*list, (*len + 1) * sizeof *grown);

  if (!grown) return false;
  grown[(*len)++] = p;
  *list = grown;
  return true;
}

static void remove_ptr(void **list, size_t *len, const void *p)
{
  size_t kept = 0;

  for (size_t i = 0; i < *len; i++)
    if (list[i] != p) list[kept++] = list[i];
  *len = kept;
}

/* ---- events ---- */

static void file_changed(tail_notify *n, tail_file *f, uint64_t now)
{
  f->changed_ms = now;
  if (f->changed) return;
  if (n->nchanged == n->changed_cap) {
    size_t cap = n->changed_cap ? 2 * n->changed_cap : 64;
    tail_file **p = realloc(n->changed, cap * sizeof *p);
    if (!p) return; /* the scan sees it grew */
    n->changed = p;
    n->changed_cap = cap;
  }
  n->changed[n->nchanged++] = f;
  f->changed = true;
}

static void overflowed(tail_notify *n, uint64_t now)
{
  for (size_t i = 0; i < n->ntails; i++) {
    for (tail_file *f = n->tails[i]->files; f; f = f->next)
      if (f->src) file_changed(n, f, now);
    tail_schedule_scan(n->tails[i]);
  }
}

/* A directory's event: a file created or moved in is found now (a
 * pattern of one of them matching it); the scan that sees what went or
 * moved out comes once read_interval_ms is over (on the files'
 * descriptor, resting, it came no sooner). */
static void dir_event(tail_notify *n, watch *w, const struct inotify_event *e)
{
  char path[PATH_MAX];
  bool named = e->len > 0 && (e->mask & (IN_CREATE | IN_MOVED_TO)) &&
               snprintf(path, sizeof path, "%s/%s", w->dir, e->name) <
                   (int)sizeof path;

  for (size_t i = 0; i < w->ntails; i++) {
    if (named) tail_found_created(w->tails[i], path);
    tail_schedule_scan_within(w->tails[i], n->interval_ms);
  }
}

static void on_event(tail_notify *n, watch_set *ws,
                     const struct inotify_event *e, uint64_t now)
{
  watch *w;

  if (e->mask & IN_Q_OVERFLOW) {
    overflowed(n, now);
    return;
  }
  if (!(w = find(ws, e->wd, NULL))) return; /* removed since */
  if (e->mask & IN_IGNORED) { /* the inode went, or was unmounted */
    for (size_t i = 0; i < w->nfiles; i++) tail_schedule_scan(w->files[i]->t);
    for (size_t i = 0; i < w->ntails; i++) tail_schedule_scan(w->tails[i]);
    for (size_t i = 0; i < w->nfiles; i++) w->files[i]->watched = false;
    drop_watch(ws, w, false);
    return;
  }
  if (w->dir) {
    dir_event(n, w, e);
    return;
  }
  for (size_t i = 0; i < w->nfiles; i++) {
    tail_file *f = w->files[i];
    if (e->mask & (IN_MODIFY | IN_ATTRIB)) file_changed(n, f, now);
    if (e->mask & (IN_MOVE_SELF | IN_DELETE_SELF)) tail_schedule_scan(f->t);
  }
}

/* Takes every event queued on ws's descriptor. */
static void drain(tail_notify *n, watch_set *ws)
{
  char events[16384]
      __attribute__((aligned(__alignof__(struct inotify_event))));
  uint64_t now = uv_now(n->loop);
  ssize_t len;

  while ((len = read(ws->fd, events, sizeof events)) > 0) {
    for (char *p = events; p < events + len;) {
      const struct inotify_event *e = (const struct inotify_event *)p;
      on_event(n, ws, e, now);
      p += sizeof *e + e->len;
    }
  }
  if (len < 0 && errno != EAGAIN && errno != EINTR && !n->warned) {
    n->warned = true;
    log_warning("tail_input: reading inotify events failed: %s; the scans "
                "find changes from now on", strerror(errno));
  }
}

/* Each file a batch said changed is read once. A read that finds the file
 * truncated may finish its source and so free a moved file
 * (tail_source_finished), which takes itself off the list first
 * (tail_unwatch_file): the list is read from its end. */
static void read_changed(tail_notify *n)
{
  while (n->nchanged > 0) {
    tail_file *f = n->changed[--n->nchanged];
    f->changed = false;
    if (f->src) input_read_more(pl_source_reader(f->src));
  }
}

static void on_readable(uv_poll_t *h, int status, int events);

static void on_rested(uv_timer_t *h)
{
  tail_notify *n = h->data;

  if (n->ntails > 0) uv_poll_start(&n->files.poll, UV_READABLE, on_readable);
}

static void on_readable(uv_poll_t *h, int status, int events)
{
  tail_notify *n = h->data;

  (void)status;
  (void)events;
  drain(n, &n->files);
  read_changed(n);
  if (n->interval_ms == 0) return;
  uv_poll_stop(&n->files.poll);
  uv_timer_start(&n->hold, on_rested, n->interval_ms, 0);
}

/* The directories' descriptor never rests. What a created file's first
 * reading finds is read at once; its changes come on the files'. */
static void on_dir_readable(uv_poll_t *h, int status, int events)
{
  tail_notify *n = h->data;

  (void)status;
  (void)events;
  drain(n, &n->dirs);
}

void tail_notify_flush(tail *t)
{
  tail_notify *n = t->notify;

  if (!n) return;
  if (n->dirs.fd >= 0) drain(n, &n->dirs);
  if (n->files.fd < 0) return;
  drain(n, &n->files);
  read_changed(n);
}

/* ---- the descriptor ---- */

static void open_set(tail_notify *n, watch_set *ws)
{
  ws->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (ws->fd < 0) return;
  uv_poll_init(n->loop, &ws->poll, ws->fd);
  ws->poll.data = n;
}

static tail_notify *open_notify(tail *t)
{
  tail_notify **slot = notify_of(t);
  tail_notify *n;

  if (!slot) return NULL;
  if (*slot) return *slot;
  if (!(n = calloc(1, sizeof *n))) return NULL;
  n->loop = t->loop;
  n->interval_ms = READ_INTERVAL_UNSET;
  open_set(n, &n->files);
  if (n->files.fd < 0) {
    n->dirs.fd = -1;
    log_warning("input '%s': no inotify descriptor (%s): files are found, "
                "and read as they grow, at each scan (scan_interval_ms)",
                t->name, strerror(errno));
  } else {
    open_set(n, &n->dirs); /* none (its limit): the files' takes them */
  }
  uv_timer_init(n->loop, &n->hold);
  n->hold.data = n;
  *slot = n;
  return n;
}

static void free_set(watch_set *ws)
{
  while (ws->nwatches) drop_watch(ws, &ws->watches[ws->nwatches - 1], false);
  free(ws->watches);
  if (ws->fd >= 0) close(ws->fd);
}

static void closed(uv_handle_t *h)
{
  tail_notify *n = h->data;

  if (--n->closing > 0) return;
  free_set(&n->files);
  free_set(&n->dirs);
  free(n->tails);
  free(n->changed);
  free(n);
}

void tail_close_notify(void **state)
{
  tail_notify *n = *state;

  *state = NULL;
  if (!n) return;
  n->closing = 1;
  uv_close((uv_handle_t *)&n->hold, closed);
  if (n->files.fd >= 0) {
    n->closing++;
    uv_close((uv_handle_t *)&n->files.poll, closed);
  }
  if (n->dirs.fd >= 0) {
    n->closing++;
    uv_close((uv_handle_t *)&n->dirs.poll, closed);
  }
}

/* ---- what the tail_inputs watch ---- */

static void pattern_dir(const char *pattern, char *dir, size_t len)
{
  const char *slash = strrchr(pattern, '/');

  if (!slash) snprintf(dir, len, ".");
  else snprintf(dir, len, "%.*s", (int)(slash == pattern ? 1 : slash - pattern),
                pattern);
}

/* The directory of each pattern, when it has no wildcards, is watched: a
 * file created there is found at once. */
static void watch_dirs(tail_notify *n, tail *t)
{
  for (char **p = t->cfg.paths; *p; p++) {
    char dir[PATH_MAX];
    int wd;
    watch *w;
    pattern_dir(*p, dir, sizeof dir);
    if (strpbrk(dir, "*?[")) continue;
    /* Not watched (missing, the limit): the timed scans find files. */
    if ((wd = inotify_add_watch(dir_set(n)->fd, dir, DIR_EVENTS)) < 0) continue;
    if (!(w = watch_of(dir_set(n), wd))) continue;
    if (!w->dir && !(w->dir = strdup(dir))) continue;
    if (w->ntails > 0 && w->tails[w->ntails - 1] == t) continue;
    add_ptr((void ***)&w->tails, &w->ntails, t);
  }
}

void tail_notify_start(tail *t)
{
  tail_notify *n = open_notify(t);

  t->notify = n;
  if (!n) return;
  if (!add_ptr((void ***)&n->tails, &n->ntails, t)) {
    t->notify = NULL; /* out of memory: the scans do it */
    return;
  }
  if (n->files.fd >= 0 && n->ntails == 1 &&
      !uv_is_active((uv_handle_t *)&n->hold))
    uv_poll_start(&n->files.poll, UV_READABLE, on_readable);
  if (n->dirs.fd >= 0 && n->ntails == 1)
    uv_poll_start(&n->dirs.poll, UV_READABLE, on_dir_readable);
  if (t->cfg.read_interval_ms < n->interval_ms)
    n->interval_ms = t->cfg.read_interval_ms;
  if (n->files.fd >= 0) watch_dirs(n, t);
}

void tail_notify_stop(tail *t)
{
  tail_notify *n = t->notify;

  if (!n) return;
  watch_set *ds = dir_set(n);

  for (tail_file *f = t->files; f; f = f->next) tail_unwatch_file(f);
  for (size_t i = ds->nwatches; i-- > 0;) {
    watch *w = &ds->watches[i];
    if (!w->dir) continue;
    remove_ptr((void **)w->tails, &w->ntails, t);
    if (w->ntails == 0) drop_watch(ds, w, true);
  }
  remove_ptr((void **)n->tails, &n->ntails, t);
  t->notify = NULL;
  if (n->ntails > 0) return;
  /* The last one stopped: nothing here may keep the loop running. */
  if (n->files.fd >= 0) uv_poll_stop(&n->files.poll);
  if (n->dirs.fd >= 0) uv_poll_stop(&n->dirs.poll);
  uv_timer_stop(&n->hold);
}

void tail_watch_file(tail_file *f)
{
  tail_notify *n = f->t->notify;
  watch *w;
  int wd;

  if (!n || n->files.fd < 0 || f->watched) return;
  /* No watch (inotify's limit reached): the scans still see it grow. */
  if ((wd = inotify_add_watch(n->files.fd, f->path, FILE_EVENTS)) < 0) return;
  f->wd = wd;
  if (!(w = watch_of(&n->files, wd)) ||
      !add_ptr((void ***)&w->files, &w->nfiles, f)) {
    if (w && w->nfiles == 0 && !w->dir) drop_watch(&n->files, w, true);
    return;
  }
  f->watched = true;
}

void tail_unwatch_file(tail_file *f)
{
  tail_notify *n = f->t->notify;
  watch *w;

  if (f->changed && n) {
    remove_ptr((void **)n->changed, &n->nchanged, f);
    f->changed = false;
  }
  if (!f->watched) return;
  f->watched = false;
  if (!n || !(w = find(&n->files, f->wd, NULL))) return;
  remove_ptr((void **)w->files, &w->nfiles, f);
  if (w->nfiles == 0 && !w->dir) drop_watch(&n->files, w, true);
}
