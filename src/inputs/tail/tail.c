/* tail.c - see tail.h: files found, opened, read and finished. */
#include "tail_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd_limit.h"
#include "log.h"

static void free_tail(tail *t)
{
  if (!t) return;
  while (t->files) {
    tail_file *f = t->files;
    t->files = f->next;
    if (f->young_fd >= 0) close(f->young_fd);
    tail_recent_free(&f->recent);
    free(f->path);
    free(f);
  }
  for (size_t i = 0; i < TRUNCATED_KEPT; i++)
    tail_recent_free(&t->truncated[i].recent);
  config_list_free(t->cfg.paths);
  config_list_free(t->cfg.exclude);
  free(t->cfg.join.pattern);
  free(t);
}

static tail *tail_create(pl_input *pi, const config_tail *cfg, char *err,
                         size_t errlen)
{
  tail *t = calloc(1, sizeof *t);

  if (t) {
    t->pi = pi;
    t->name = pl_input_name(pi);
    t->store = pl_input_checkpoints(pi);
    t->loop = pl_input_loop(pi);
    t->cfg = *cfg;
    t->cfg.paths = config_list_copy(cfg->paths);
    t->cfg.exclude = config_list_copy(cfg->exclude);
    t->cfg.join.pattern = cfg->join.pattern ? strdup(cfg->join.pattern) : NULL;
  }
  if (!t || !t->cfg.paths || !t->cfg.exclude ||
      (cfg->join.pattern && !t->cfg.join.pattern)) {
    snprintf(err, errlen, "input '%s': out of memory", pl_input_name(pi));
    free_tail(t);
    return NULL;
  }
  return t;
}

/* ---- descriptors ---- */

/* A file that may not be opened now waits: the next scan finds it again.
 * Counted once per wait; logged once until no file waits. */
static void hold(tail *t, tail_file *f, bool no_fds)
{
  if (f->waiting) return;
  f->waiting = true;
  t->nwaiting++;
  t->waited++;
  if (!no_fds && !t->warned_slots)
    log_msg("input '%s': %zu files open (max_open_files); %s waits for a "
            "free slot, as will others", t->name, t->open_files, f->path);
  else if (no_fds && !t->warned_fds)
    log_msg("input '%s': no file descriptor free for %s (%zu files open; "
            "ulimit -n %" PRIu64 ", %d kept for checkpoints and outputs); it "
            "waits for one, as will others", t->name, f->path,
            t->open_files, fd_limit_current(), FD_LIMIT_RESERVED);
  if (no_fds) t->warned_fds = true;
  else t->warned_slots = true;
}

static void stop_waiting(tail *t, tail_file *f)
{
  if (!f->waiting) return;
  f->waiting = false;
  if (--t->nwaiting == 0) t->warned_slots = t->warned_fds = false;
}

/* Whether f may take a descriptor now: under max_open_files and the
 * descriptor budget, asked again at each scan. */
static bool may_open(tail *t, tail_file *f)
{
  bool slots = t->open_files < t->cfg.max_open_files;

  if (slots && t->fd_room > 0) return true;
  hold(t, f, slots);
  return false;
}

/* Opens f at path; -1 when it cannot be opened (a missing descriptor
 * makes f wait, a refusal is logged once) or is no longer f. */
static int open_file(tail *t, tail_file *f, const char *path, struct stat *sb)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

  if (fd < 0) {
    if (fd_limit_exhausted(errno)) {
      t->fd_room = 0;
      hold(t, f, true);
    } else if (errno != ENOENT && !f->unreadable) {
      f->unreadable = true;
      t->unreadable++;
      log_msg("input '%s': cannot read %s: %s; it is read once it can be",
              t->name, path, strerror(errno));
    }
    return -1;
  }
  if (fstat(fd, sb) != 0 || !S_ISREG(sb->st_mode) ||
      sb->st_dev != f->device || sb->st_ino != f->inode) {
    close(fd);
    return -1;
  }
  t->fd_room--;
  f->unreadable = false;
  stop_waiting(t, f);
  return fd;
}

/* ---- reading one file ---- */

static void on_file_event(uv_fs_event_t *h, const char *name, int events,
                          int status);

static void on_at_end(void *ud, input *in)
{
  (void)ud;
  ((tail_file *)pl_source_data(pl_source_of(in)))->size = in->read_offset;
}

static void log_truncated(const tail_file *f, const input *in)
{
  if (in && in->carry.len > 0)
    log_msg("input '%s': %s was truncated; reading it again from the start "
            "(the %zu bytes of an unfinished last line read before go to the "
            "dead-letter path, not on: a copy of the file, if followed, has "
            "the line whole)",
            f->t->name, f->path, in->carry.len);
  else
    log_msg("input '%s': %s was truncated; reading it again from the start",
            f->t->name, f->path);
}

/* What a restart needs to know the file holds what was read: its first
 * bytes and its last (checkpoint.h). */
static void remember_read(tail_file *f)
{
  checkpoint_set_fingerprint(f->ckpt, f->sig.head_len, f->sig.head_hash);
  checkpoint_set_window(f->ckpt, f->sig.offset, f->sig.window,
                        f->sig.window_len);
}

/* Each read must follow the bytes read before: a file truncated (and
 * perhaps rewritten past the offset) since is read again from 0, and the
 * bytes now at the offset, the middle of some new line, are not taken. */
static bool on_read(void *ud, input *in, const char *data, size_t len)
{
  tail_file *f = pl_source_data(pl_source_of(in));

  (void)ud;
  if (f->sig.offset == in->read_offset &&
      tail_signature_window_holds(&f->sig, in->fd)) {
    tail_signature_extend(&f->sig, data, len);
    tail_recent_add(&f->recent, data, len);
    remember_read(f);
    return true;
  }
  log_truncated(f, in);
  f->truncated = true;
  return false;
}

static void watch_file(tail_file *f)
{
  f->watch = malloc(sizeof *f->watch);
  if (!f->watch) return;
  uv_fs_event_init(f->t->loop, f->watch);
  f->watch->data = f;
  /* No watch (inotify's limit reached): the scans still see it grow. */
  uv_fs_event_start(f->watch, on_file_event, f->path, 0);
}

static void free_handle(uv_handle_t *h)
{
  free(h);
}

static void unwatch_file(tail_file *f)
{
  if (f->watch) uv_close((uv_handle_t *)f->watch, free_handle);
  f->watch = NULL;
}

/* Starts reading f on fd (open on it, a slot taken) from f->offset, where
 * f->sig ends. */
static void start_reading(tail *t, tail_file *f, int fd)
{
  pl_source *src;
  input *in;
  char err[512];

  if (!(src = pl_source_new(t->pi))) {
    log_msg("input '%s': out of memory; %s is not read for now", t->name,
            f->path);
    close(fd);
    return;
  }
  in = pl_source_reader(src);
  pl_source_set_data(src, f);
  pl_source_set_file(src, f->ckpt);
  in->path = f->path;
  in->fd = fd;
  in->follow = true;
  in->readbuf_size = t->cfg.read_buffer;
  in->read_offset = in->done_offset = f->offset;
  in->handler.at_end = on_at_end;
  in->handler.follows = on_read;
  if (t->cfg.join.mode != JOIN_NONE)
    join_init(pl_source_joiner(src), &t->cfg.join,
              pl_input_join_matcher(t->pi));
  if (input_start(in, t->loop, err, sizeof err) != 0) {
    log_msg("%s", err);
    pl_source_free(src);
    return;
  }
  remember_read(f);
  /* Without them (out of memory) only a copy as long as what was read is
   * recognised. */
  tail_recent_load(&f->recent, fd, f->sig.offset);
  f->src = src;
  f->changed_ms = uv_now(t->loop);
  t->open_files++;
  watch_file(f);
  input_read_more(in); /* last: it may finish the source */
}

void tail_start_at(tail *t, tail_file *f, int fd, uint64_t offset)
{
  if (!tail_signature_load(&f->sig, fd, offset)) {
    offset = 0;
    tail_signature_load(&f->sig, fd, 0);
  }
  f->offset = f->ckpt->acked = offset;
  start_reading(t, f, fd);
}

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

  if (!may_open(t, f) || (fd = open_file(t, f, f->path, &sb)) < 0) return;
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

static void free_file(tail *t, tail_file *f)
{
  for (tail_file **p = &t->files; *p; p = &(*p)->next)
    if (*p == f) {
      *p = f->next;
      break;
    }
  unwatch_file(f);
  if (f->young_fd >= 0) {
    close(f->young_fd);
    t->open_files--;
  }
  stop_waiting(t, f);
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

/* A closed file (idle), now sb: reopened when it grew; if it no longer
 * holds what was read, it was truncated: a new file to read. */
static void look_at_closed(tail *t, tail_file *f, const struct stat *sb)
{
  struct stat now;
  char *path;
  int fd;

  if ((uint64_t)sb->st_size == f->sig.offset || !may_open(t, f) ||
      (fd = open_file(t, f, f->path, &now)) < 0)
    return;
  if (tail_signature_holds(&f->sig, fd, (uint64_t)now.st_size)) {
    start_reading(t, f, fd);
    return;
  }
  close(fd);
  t->fd_room++;
  log_truncated(f, NULL);
  tail_note_truncated(t, f);
  path = strdup(f->path);
  free_file(t, f);
  if (path) found_path(t, path, false);
  free(path);
  tail_schedule_scan(t);
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

  log_truncated(f, in);
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

static void scan(tail *t)
{
  uint64_t now = uv_now(t->loop);

  t->fd_room = fd_limit_budget();
  for (tail_file *f = t->files; f; f = f->next) f->found = false;
  for (char **p = t->cfg.paths; *p; p++) {
    glob_t g;
    if (glob(*p, GLOB_NOSORT, NULL, &g) != 0) continue;
    for (size_t i = 0; i < g.gl_pathc && !t->stopping; i++)
      found_path(t, g.gl_pathv[i], t->first_scan);
    globfree(&g);
  }
  /* Deciding may start a file's reading, which may finish and free it. */
  for (tail_file *f = t->files, *next; f; f = next) {
    next = f->next;
    if (f->young_fd >= 0) tail_decide(t, f, now);
  }
  for (tail_file *f = t->files, *next; f; f = next) {
    next = f->next;
    if (f->young_fd >= 0) continue;
    if (!f->found && !f->src && !f->truncated) free_file(t, f);
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

static void on_file_event(uv_fs_event_t *h, const char *name, int events,
                          int status)
{
  tail_file *f = h->data;

  (void)name;
  if (status < 0) return;
  if (events & UV_RENAME) tail_schedule_scan(f->t);
  if ((events & UV_CHANGE) && f->src) {
    f->changed_ms = uv_now(f->t->loop);
    input_read_more(pl_source_reader(f->src));
  }
}

static int tail_start(pl_input *pi, char *err, size_t errlen)
{
  tail *t = pl_input_state(pi);

  (void)err;
  (void)errlen;
  uv_timer_init(t->loop, &t->scan);
  uv_timer_init(t->loop, &t->soon);
  t->scan.data = t->soon.data = t;
  t->handles = true;
  tail_watch_dirs(t);
  t->first_scan = true;
  scan(t);
  uv_timer_start(&t->scan, on_scan_timer, t->cfg.scan_interval_ms,
                 t->cfg.scan_interval_ms);
  return 0;
}

/* ---- finishing ---- */

static void close_handles(tail *t)
{
  if (!t || !t->handles) return;
  t->handles = false;
  uv_close((uv_handle_t *)&t->scan, NULL);
  uv_close((uv_handle_t *)&t->soon, NULL);
  tail_unwatch_dirs(t);
  for (tail_file *f = t->files; f; f = f->next) unwatch_file(f);
}

static void done_if_drained(tail *t)
{
  if (!t->stopping || pl_input_sources(t->pi) || pl_input_is_done(t->pi))
    return;
  close_handles(t);
  pl_input_done(t->pi);
}

static void tail_stop(pl_input *pi)
{
  tail *t = pl_input_state(pi);

  if (t->stopping) return;
  t->stopping = true;
  if (!t->handles) return;
  uv_timer_stop(&t->scan);
  uv_timer_stop(&t->soon);
  for (pl_source *src = pl_input_sources(t->pi), *next; src; src = next) {
    input *in = pl_source_reader(src);
    next = pl_source_next(src);
    in->hold_partial = t->store->state_file != NULL;
    input_stop(in);
  }
  done_if_drained(t);
}

static void tail_source_finished(pl_input *pi, pl_source *src)
{
  tail *t = pl_input_state(pi);
  tail_file *f = pl_source_data(src);

  f->offset = pl_source_reader(src)->done_offset;
  f->src = NULL;
  t->open_files--;
  t->fd_room++;
  unwatch_file(f);
  pl_source_free(src);
  if (!f->truncated) tail_recent_free(&f->recent); /* note_truncated takes them */
  if (t->stopping) {
    done_if_drained(t);
    return;
  }
  if (f->truncated) {
    /* The records read before still hold the old source's tickets. */
    char *path = strdup(f->path);
    tail_note_truncated(t, f);
    free_file(t, f);
    if (path) found_path(t, path, false);
    free(path);
    tail_schedule_scan(t); /* young files: one may be its copy */
  } else if (f->moved) {
    free_file(t, f);
  }
  if (t->nwaiting > 0) tail_schedule_scan(t); /* a slot is free */
}
static int tail_build(pl_input *pi, const config_plugin *p, char *err,
                      size_t errlen)
{
  const config_tail *cfg = p->settings;
  tail *t;

  if ((cfg->join.pattern && !pl_input_join_matcher(pi)) ||
      pl_input_set_fields(pi, cfg->path_field, NULL, NULL) != 0) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  pl_input_spread(pi);
  t = tail_create(pi, cfg, err, errlen);
  pl_input_set_state(pi, t);
  return t ? 0 : -1;
}

static void tail_close_handles(pl_input *pi)
{
  close_handles(pl_input_state(pi));
}

static const plugin_counter tail_counters[] = {
  {"lumberjit_tail_waiting_files_total",
   "Files that waited for a free slot or file descriptor.",
   "files waited for a free slot or file descriptor"},
  {"lumberjit_tail_unreadable_files_total",
   "Files that could not be opened (permissions): read once they can be.",
   "could not be read (permissions)"},
  {NULL, NULL, NULL}
};

static const plugin_counter *tail_count(pl_input *pi, uint64_t *values)
{
  tail *t = pl_input_state(pi);

  values[0] = t->waited;
  values[1] = t->unreadable;
  return tail_counters;
}

static void tail_free(pl_input *pi)
{
  free_tail(pl_input_state(pi));
  pl_input_set_state(pi, NULL);
}

static uint64_t tail_descriptors(const config_plugin *p)
{
  return ((const config_tail *)p->settings)->max_open_files;
}

const input_kind tail_input_kind = {
  .build = tail_build, .start = tail_start, .stop = tail_stop,
  .source_finished = tail_source_finished,
  .close_handles = tail_close_handles, .free = tail_free,
  .counters = tail_count, .descriptors = tail_descriptors,
  .close_shared = tail_close_dirs,
};
