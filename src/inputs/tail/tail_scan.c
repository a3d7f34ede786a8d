/*
 * tail_scan.c - finding a tail_input's files (tail.h, "Finding files"):
 * globbing its patterns at start and every scan_interval_ms (or at once
 * when a watch saw a file come or go), telling a file found before from a
 * new one by device and inode, opening new files where they start, and
 * looking at each open file: grown, truncated, moved, idle.
 */
#include "tail_internal.h"

#include <errno.h>
#include <fnmatch.h>
#include <glob.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd_limit.h"
#include "log.h"

static void on_scan_timer(uv_timer_t *h);

/* Young files are looked at again soon. */
static void arm_young_timer(tail *t)
{
  if (t->stopping || uv_is_active((uv_handle_t *)&t->soon)) return;
  for (const tail_file *f = t->files; f; f = f->next)
    if (f->young_fd >= 0) {
      uv_timer_start(&t->soon, on_scan_timer, YOUNG_FILE_WAIT_MS, 0);
      return;
    }
}

/* The first opening of a file: from its checkpoint, from where the first
 * scan found its end (or its head, with read_from_head), or, found later,
 * as a new file (tail_decide). */
static void open_new(tail *t, tail_file *f)
{
  struct stat sb;
  uint64_t offset;
  bool known;
  int fd;

  if (!tail_may_open(t, f) || (fd = tail_open_file(t, f, f->path, &sb)) < 0) return;
  if (!(f->ckpt = checkpoint_track(t->store, t->name, f->path,
                                   fd, &sb, &offset, &known))) {
    close(fd);
    return;
  }
  f->size = (uint64_t)sb.st_size;
  if (known) {
    log_msg("input '%s': resuming %s at offset %" PRIu64, t->name,
            f->path, offset);
    tail_start_at(t, f, fd, offset);
  } else if (f->at_start) {
    /* A file truncated or replaced while lumberjit was down is new. */
    tail_start_at(t, f, fd, f->ckpt->changed ? 0 : f->offset);
  } else {
    f->young_fd = fd;
    f->young_since_ms = uv_now(t->loop);
    t->open_files++;
    tail_decide(t, f, f->young_since_ms);
    arm_young_timer(t);
  }
}

static tail_file *new_file(tail *t, const char *path, const struct stat *sb,
                           bool at_start)
{
  tail_file *f = calloc(1, sizeof *f);

  if (!f || !(f->path = strdup(path))) {
    free(f);
    return NULL;
  }
  f->t = t;
  f->device = sb->st_dev;
  f->inode = sb->st_ino;
  f->found = true;
  f->found_ms = uv_now(t->loop);
  f->young_fd = -1;
  f->at_start = at_start;
  f->size = (uint64_t)sb->st_size;
  if (at_start && !t->cfg.read_from_head) f->offset = f->size;
  f->next = t->files;
  t->files = f;
  return f;
}

void tail_free_file(tail *t, tail_file *f)
{
  for (tail_file **p = &t->files; *p; p = &(*p)->next)
    if (*p == f) {
      *p = f->next;
      break;
    }
  tail_unwatch_file(f);
  if (f->young_fd >= 0) {
    close(f->young_fd);
    t->open_files--;
  }
  tail_stop_waiting(t, f);
  if (f->ckpt) checkpoint_retire(t->store, f->ckpt);
  tail_recent_free(&f->recent);
  free(f->path);
  free(f);
}

/* ---- scans ---- */

/* Where a file not being read was last found. */
static void set_path(tail_file *f, const char *path)
{
  char *copy;

  if (strcmp(path, f->path) == 0 || !(copy = strdup(path))) return;
  free(f->path);
  f->path = copy;
}

static tail_file *find_file(tail *t, const struct stat *sb)
{
  for (tail_file *f = t->files; f; f = f->next)
    if (f->device == sb->st_dev && f->inode == sb->st_ino) return f;
  return NULL;
}

static bool excluded(const tail *t, const char *path)
{
  for (char **p = t->cfg.exclude; *p; p++)
    if (fnmatch(*p, path, 0) == 0) return true;
  return false;
}

static void found_path(tail *t, const char *path, bool at_start);

/* A closed file (idle), now sb: reopened when it grew, or changed since
 * it was closed (rewritten to the very length read: its mtime tells); if
 * it no longer holds what was read, it was truncated: a new file to read. */
static void look_at_closed(tail *t, tail_file *f, const struct stat *sb)
{
  struct stat now;
  int fd;

  if (((uint64_t)sb->st_size == f->sig.offset &&
       sb->st_mtim.tv_sec == f->closed_mtime.tv_sec &&
       sb->st_mtim.tv_nsec == f->closed_mtime.tv_nsec) ||
      !tail_may_open(t, f) ||
      (fd = tail_open_file(t, f, f->path, &now)) < 0)
    return;
  if (tail_signature_holds(&f->sig, fd, (uint64_t)now.st_size)) {
    tail_start_reading(t, f, fd);
    return;
  }
  close(fd);
  t->fd_room++;
  tail_log_truncated(f, NULL);
  tail_found_truncated(t, f);
}

static void found_path(tail *t, const char *path, bool at_start)
{
  struct stat sb;
  tail_file *f;

  if (excluded(t, path) || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) ||
      pl_input_writes(t->pi, &sb))
    return;
  f = find_file(t, &sb);
  if (!f) {
    if ((f = new_file(t, path, &sb, at_start))) open_new(t, f);
    return;
  }
  if (f->found) return;
  f->found = true;
  f->moved = false;
  /* Where it is now, in the state file too: a restart finds it there. An
   * open file's path is its reader's (and its watch's). */
  if (f->ckpt) checkpoint_moved(f->ckpt, path);
  if (!f->src) set_path(f, path);
  if (!f->ckpt) open_new(t, f);
  else if (!f->src && f->young_fd < 0 && !f->truncated)
    look_at_closed(t, f, &sb);
}

/* Its writer may not have reopened yet: rotate_wait_ms runs from now. */
static void mark_moved(tail_file *f, uint64_t now)
{
  if (f->moved) return;
  f->moved = true;
  f->moved_ms = now;
}

/* An open file that no longer holds what was read from it: once its
 * reading finishes, it is read again from 0. */
static void truncated(tail_file *f)
{
  input *in = pl_source_reader(f->src);

  tail_log_truncated(f, in);
  f->truncated = true;
  in->hold_partial = true; /* not a record: its end is gone */
  input_stop(in);
}

/* An open file: did it grow, shrink, or stop growing? */
static void look_at_open(tail *t, tail_file *f, uint64_t now)
{
  input *in = pl_source_reader(f->src);
  struct stat sb;

  if (in->stopping || in->finished || fstat(in->fd, &sb) != 0) return;
  if (sb.st_nlink == 0) mark_moved(f, now); /* deleted */
  if (!tail_signature_holds(&f->sig, in->fd, (uint64_t)sb.st_size)) {
    truncated(f);
    return;
  }
  if ((uint64_t)sb.st_size != f->size) {
    f->changed_ms = now;
    f->size = (uint64_t)sb.st_size;
    input_read_more(in);
    return;
  }
  if (!in->at_end) return;
  if (now - f->changed_ms >= t->cfg.last_line_timeout_ms)
    input_flush_partial(in);
  line_joiner *j = pl_source_joiner(f->src);

  if (join_holding(j) && now - j->held_since_ms >= t->cfg.join.flush_ms)
    pl_source_flush(f->src);
  if ((f->moved && now - f->changed_ms >= t->cfg.rotate_wait_ms &&
       now - f->moved_ms >= t->cfg.rotate_wait_ms) ||
      (now - f->changed_ms >= t->cfg.idle_close_ms &&
       in->carry.len == 0 && in->piece == 0))
    input_stop(in);
}

/* The input whose patterns are globbed now: glob(3)'s error callback
 * takes no argument of ours. */
static _Thread_local tail *globbing;

/* A directory glob could not list. ENOENT and ENOTDIR say it is gone, and
 * its files with it; any other error (out of descriptors or memory, a
 * permission) hides them, and this scan must not take them for gone: it
 * would forget their offsets and read them again from their head once a
 * scan lists them. Logged once until a scan lists every directory. */
static int unlisted(const char *dir, int err)
{
  tail *t = globbing;

  if (err == ENOENT || err == ENOTDIR) return 0;
  t->listed_all = false;
  if (!t->warned_unlisted)
    log_warning("input '%s': cannot list %s: %s; the files it held are kept "
                "as they were (no file found there is taken for gone) until "
                "a scan lists it", t->name, dir, strerror(err));
  t->warned_unlisted = true;
  return 0; /* list the others */
}

/* Globs the patterns, each path found once; listed_all says whether every
 * directory could be listed. */
static void glob_paths(tail *t)
{
  globbing = t;
  t->listed_all = true;
  for (char **p = t->cfg.paths; *p; p++) {
    glob_t g;
    int rc = glob(*p, GLOB_NOSORT, unlisted, &g);
    if (rc == GLOB_NOSPACE) unlisted(*p, ENOMEM);
    if (rc != 0) continue;
    for (size_t i = 0; i < g.gl_pathc && !t->stopping; i++)
      found_path(t, g.gl_pathv[i], t->first_scan);
    globfree(&g);
  }
  if (t->listed_all && t->warned_unlisted) {
    log_msg("input '%s': every directory of its patterns is listed again",
            t->name);
    t->warned_unlisted = false;
  }
}

static void scan(tail *t)
{
  uint64_t now = uv_now(t->loop);

  t->fd_room = fd_limit_budget();
  for (tail_file *f = t->files; f; f = f->next) f->found = false;
  glob_paths(t);
  /* A scan that could not list a directory saw nothing of the files not
   * found: they are where they were. */
  if (!t->listed_all)
    for (tail_file *f = t->files; f; f = f->next) f->found = true;
  /* Deciding may start a file's reading, which may finish and free it. */
  for (tail_file *f = t->files, *next; f; f = next) {
    next = f->next;
    if (f->young_fd >= 0) tail_decide(t, f, now);
  }
  for (tail_file *f = t->files, *next; f; f = next) {
    next = f->next;
    if (f->young_fd >= 0) continue;
    if (!f->found && !f->src && !f->truncated) tail_free_file(t, f);
    else if (!f->found) mark_moved(f, now);
  }
  /* Looking may finish a file, and so free it. */
  for (tail_file *f = t->files, *next; f; f = next) {
    next = f->next;
    if (f->src) look_at_open(t, f, now);
  }
  t->first_scan = false;
  arm_young_timer(t);
}

static void on_scan_timer(uv_timer_t *h)
{
  scan(h->data);
}

void tail_schedule_scan(tail *t)
{
  if (t->stopping) return;
  uv_timer_stop(&t->soon);
  uv_timer_start(&t->soon, on_scan_timer, 0, 0);
}

void tail_schedule_scan_within(tail *t, uint64_t ms)
{
  if (t->stopping || uv_is_active((uv_handle_t *)&t->soon)) return;
  uv_timer_start(&t->soon, on_scan_timer, ms, 0);
}

/* Opened at once, not at the next scan: a file rotated away and deleted
 * sooner would be lost whole. glob(3) lists no name that starts with a
 * dot unless the pattern's does (FNM_PERIOD). */
void tail_found_created(tail *t, const char *path)
{
  if (t->stopping) return;
  for (char **p = t->cfg.paths; *p; p++)
    if (fnmatch(*p, path, FNM_PATHNAME | FNM_PERIOD) == 0) {
      found_path(t, path, false);
      return;
    }
}

void tail_found_truncated(tail *t, tail_file *f)
{
  char *path = strdup(f->path);

  tail_note_truncated(t, f);
  tail_free_file(t, f);
  if (path) found_path(t, path, false);
  free(path);
  tail_schedule_scan(t); /* young files: one may be its copy */
}

void tail_scan_start(tail *t)
{
  /* After a reload the files the scan finds are not where a run starts:
   * those without a checkpoint are new. */
  t->first_scan = !t->continues;
  checkpoint_know_input(t->store, t->name);
  scan(t);
  uv_timer_start(&t->scan, on_scan_timer, t->cfg.scan_interval_ms,
                 t->cfg.scan_interval_ms);
}
