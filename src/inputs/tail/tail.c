/*
 * tail.c - see tail.h: the input's kind (build, start, stop, finishing),
 * its files' slots and descriptors, and reading one file. tail_scan.c
 * finds the files; tail_copy.c tells a copy from a new file;
 * tail_identity.c is the signature of what was read; tail_notify.c
 * watches directories and files with inotify.
 */
#define _GNU_SOURCE /* O_NOATIME */
#include "tail_internal.h"

#include <errno.h>
#include <fcntl.h>
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
    log_warning("input '%s': %zu files open (max_open_files); %s waits for a "
            "free slot, as will others", t->name, t->open_files, f->path);
  else if (no_fds && !t->warned_fds)
    log_warning("input '%s': no file descriptor free for %s (%zu files open; "
            "ulimit -n %" PRIu64 ", %d kept for checkpoints and outputs); it "
            "waits for one, as will others", t->name, f->path,
            t->open_files, fd_limit_current(), FD_LIMIT_RESERVED);
  if (no_fds) t->warned_fds = true;
  else t->warned_slots = true;
}

void tail_stop_waiting(tail *t, tail_file *f)
{
  if (!f->waiting) return;
  f->waiting = false;
  if (--t->nwaiting == 0) t->warned_slots = t->warned_fds = false;
}

/* Whether f may take a descriptor now: under max_open_files and the
 * descriptor budget, asked again at each scan. */
bool tail_may_open(tail *t, tail_file *f)
{
  bool slots = t->open_files < t->cfg.max_open_files;

  if (slots && t->fd_room > 0) return true;
  hold(t, f, slots);
  return false;
}

/* Opens f at path; -1 when it cannot be opened (a missing descriptor
 * makes f wait, a refusal is logged once) or is no longer f. */
int tail_open_file(tail *t, tail_file *f, const char *path, struct stat *sb)
{
  /* O_NOATIME where the kernel lets us (our files, or CAP_FOWNER): a file
   * written all the time has a new mtime at each read, so relatime would
   * write its inode for the access time at each read too. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOATIME);

  if (fd < 0 && errno == EPERM)
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd >= 0) fd_limit_opened();

  if (fd < 0) {
    if (fd_limit_exhausted(errno)) {
      t->fd_room = 0;
      hold(t, f, true);
    } else if (errno != ENOENT && !f->unreadable) {
      f->unreadable = true;
      t->unreadable++;
      log_warning("input '%s': cannot read %s: %s; it is read once it can be",
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
  tail_stop_waiting(t, f);
  return fd;
}

/* ---- reading one file ---- */

static void on_at_end(void *ud, input *in)
{
  (void)ud;
  ((tail_file *)pl_source_data(pl_source_of(in)))->size = in->read_offset;
}

void tail_log_truncated(const tail_file *f, const input *in)
{
  if (in && in->carry.len > 0)
    log_warning("input '%s': %s was truncated; reading it again from the start "
            "(the %zu bytes of an unfinished last line read before go to the "
            "dead-letter path, not on: a copy of the file, if followed, has "
            "the line whole)",
            f->t->name, f->path, in->carry.len);
  else
    log_warning("input '%s': %s was truncated; reading it again from the start",
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
  tail_log_truncated(f, in);
  f->truncated = true;
  return false;
}

/* Starts reading f on fd (open on it, a slot taken) from f->offset, where
 * f->sig ends. */
void tail_start_reading(tail *t, tail_file *f, int fd)
{
  pl_source *src;
  input *in;
  char err[512];

  if (!(src = pl_source_new(t->pi))) {
    log_error("input '%s': out of memory; %s is not read for now", t->name,
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
    log_error("%s", err);
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
  tail_watch_file(f);
  input_read_more(in); /* last: it may finish the source */
}

void tail_start_at(tail *t, tail_file *f, int fd, uint64_t offset)
{
  if (!tail_signature_load(&f->sig, fd, offset)) {
    offset = 0;
    tail_signature_load(&f->sig, fd, 0);
  }
  f->offset = f->ckpt->acked = offset;
  tail_start_reading(t, f, fd);
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
  tail_notify_start(t);
  tail_scan_start(t);
  return 0;
}

/* ---- finishing ---- */

static void close_handles(tail *t)
{
  if (!t || !t->handles) return;
  t->handles = false;
  uv_close((uv_handle_t *)&t->scan, NULL);
  uv_close((uv_handle_t *)&t->soon, NULL);
  tail_notify_stop(t);
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
  /* What was written up to the stop is read, not left to the next run
   * (without a state_dir, there is none for it). */
  tail_notify_flush(t);
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
  input *in = pl_source_reader(src);
  struct stat sb;

  f->offset = in->done_offset;
  f->closed_mtime = fstat(in->fd, &sb) == 0 ? sb.st_mtim
                                            : (struct timespec){0, 0};
  f->src = NULL;
  t->open_files--;
  t->fd_room++;
  tail_unwatch_file(f);
  pl_source_free(src);
  if (!f->truncated) tail_recent_free(&f->recent); /* note_truncated takes them */
  if (t->stopping) {
    done_if_drained(t);
    return;
  }
  if (f->truncated) {
    /* The records read before still hold the old source's tickets. */
    tail_found_truncated(t, f);
  } else if (f->moved) {
    tail_free_file(t, f);
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
  if (t) t->continues = p->continues;
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
  {"lumberjit_tail_open_files", "Files open now (young ones included).",
   "open"},
  {"lumberjit_tail_waiting_files", "Files waiting now for a free slot or "
   "file descriptor.", "waiting"},
  {"lumberjit_tail_unread_bytes", "Bytes of the open files not read yet: "
   "each one's size now less where its reading is.", "bytes not read yet"},
  {NULL, NULL, NULL}
};

/* What the open files hold past their reading, by their size now: a
 * file's size at the last look may be a scan old. One fstat a file, at
 * each look at the counters (the metrics' interval, a scrape). */
static uint64_t unread_bytes(const tail *t)
{
  uint64_t sum = 0;

  for (const tail_file *f = t->files; f; f = f->next) {
    const input *in = f->src ? pl_source_reader(f->src) : NULL;
    struct stat sb;
    if (in && in->fd >= 0 && fstat(in->fd, &sb) == 0 &&
        (uint64_t)sb.st_size > in->read_offset)
      sum += (uint64_t)sb.st_size - in->read_offset;
  }
  return sum;
}

static const plugin_counter *tail_count(pl_input *pi, uint64_t *values)
{
  tail *t = pl_input_state(pi);

  values[0] = t->waited;
  values[1] = t->unreadable;
  values[2] = t->open_files;
  values[3] = t->nwaiting;
  values[4] = unread_bytes(t);
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
  .close_shared = tail_close_notify,
};
