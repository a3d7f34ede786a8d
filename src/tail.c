/* tail.c - see tail.h. */
#include "tail.h"

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

#include "log.h"

typedef struct tail tail;

typedef struct tail_file {
  struct tail_file *next;
  tail *t;
  char *path;              /* where it was opened (or last found) */
  checkpoint_source *ckpt; /* identity and acknowledged offset */
  uint64_t offset;         /* where the next opening reads from */
  uint64_t size;           /* at the last look */
  uint64_t changed_ms;     /* loop time it last grew */
  pl_source *src;          /* reading it; NULL: closed */
  uv_fs_event_t *watch;    /* its inotify watch while open; freed when
                              closed, so the file may go before */
  bool found;              /* the current scan found it */
  bool moved;              /* no pattern leads to it any more */
  uint64_t moved_ms;       /* loop time that was first seen */
  bool truncated;          /* read it again from 0 once finished */
  int young_fd;            /* a new file too short to tell whether it is a
                              copy: open, waiting until young_until_ms */
  uint64_t young_until_ms;
} tail_file;

/* A file read up to `offset` that was then truncated (copytruncate): a new
 * file with the same first bytes is its copy, to be read from there. */
typedef struct {
  uint32_t len;
  uint64_t fingerprint, offset, until_ms;
} truncated_file;

/* Fewer first bytes are no proof that one file is a copy of another. */
#define COPY_MIN_FINGERPRINT 64
#define TRUNCATED_KEPT 16
/* How soon a young file is looked at again. */
#define YOUNG_FILE_WAIT_MS 100

struct tail {
  pl_input *pi;
  uv_loop_t *loop;
  config_tail cfg;         /* paths and exclude are copies */
  uv_timer_t scan, soon;   /* every scan_interval_ms; after an event */
  tail_file *files;
  size_t open_files;
  truncated_file truncated[TRUNCATED_KEPT]; /* a ring, for rotate_wait_ms */
  size_t ntruncated;
  bool handles, first_scan, stopping, warned_full;
};

static void free_tail(tail *t)
{
  if (!t) return;
  while (t->files) {
    tail_file *f = t->files;
    t->files = f->next;
    if (f->young_fd >= 0) close(f->young_fd);
    free(f->path);
    free(f);
  }
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
    t->cfg = *cfg;
    t->cfg.paths = config_list_copy(cfg->paths);
    t->cfg.exclude = config_list_copy(cfg->exclude);
    t->cfg.join.pattern = cfg->join.pattern ? strdup(cfg->join.pattern) : NULL;
  }
  if (!t || !t->cfg.paths || !t->cfg.exclude ||
      (cfg->join.pattern && !t->cfg.join.pattern)) {
    snprintf(err, errlen, "input '%s': out of memory", pi->name);
    free_tail(t);
    return NULL;
  }
  return t;
}

/* ---- reading one file ---- */

static void on_file_event(uv_fs_event_t *h, const char *name, int events,
                          int status);

static void schedule_scan(tail *t);

static void on_at_end(void *ud, input *in)
{
  (void)ud;
  ((pl_source *)in)->file->size = in->read_offset;
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

/* Starts reading f on fd (open on it) from f->offset. */
static void open_source(tail *t, tail_file *f, int fd)
{
  pl_source *src;
  char err[512];

  if (t->open_files >= t->cfg.max_open_files) {
    if (!t->warned_full)
      log_msg("input '%s': %zu files open (max_open_files); %s waits for a "
              "free slot", t->pi->name, t->open_files, f->path);
    t->warned_full = true;
    close(fd);
    return;
  }
  if (!(src = pipeline_source_new(t->pi))) {
    log_msg("input '%s': out of memory; %s is not read for now", t->pi->name,
            f->path);
    close(fd);
    return;
  }
  src->file = f;
  src->ckpt = f->ckpt;
  src->in.path = f->path;
  src->in.fd = fd;
  src->in.follow = true;
  src->in.readbuf_size = t->cfg.read_buffer;
  src->in.read_offset = src->in.done_offset = f->offset;
  src->in.handler.at_end = on_at_end;
  if (t->cfg.join.mode != JOIN_NONE)
    join_init(&src->join, &t->cfg.join, t->pi->pl->join_matcher);
  if (input_start(&src->in, t->loop, err, sizeof err) != 0) {
    log_msg("%s", err);
    pipeline_source_free(src);
    return;
  }
  f->src = src;
  f->changed_ms = uv_now(t->loop);
  t->open_files++;
  watch_file(f);
  input_read_more(&src->in); /* last: it may finish the source */
}

/* Opens path for reading; -1 when it cannot be opened or is not a regular
 * file. */
static int open_file(const char *path, struct stat *sb)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

  if (fd < 0) return -1;
  if (fstat(fd, sb) != 0 || !S_ISREG(sb->st_mode)) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Whether a new file is the copy of one being read, or of one truncated a
 * moment ago (logrotate's copytruncate copies, then truncates): if so, the
 * copy is read from where the original was read up to, and the lines
 * written between the read and the truncation are not lost. */
static bool copy_of(tail *t, const tail_file *copy, int fd, uint64_t *offset)
{
  uint64_t now = uv_now(t->loop);
  const char *path = copy->path;

  for (tail_file *f = t->files; f; f = f->next) {
    uint64_t at = f->src ? f->src->in.done_offset : f->offset;
    if (f == copy) continue;
    /* The copy may still be being written: its reading waits at its end. */
    if (f->ckpt->fingerprint_len >= COPY_MIN_FINGERPRINT &&
        checkpoint_head_is(fd, f->ckpt->fingerprint_len, f->ckpt->fingerprint)) {
      log_msg("input '%s': %s is a copy of %s; reading it from offset %" PRIu64,
              t->pi->name, path, f->path, at);
      *offset = at;
      return true;
    }
  }
  for (size_t i = 0; i < t->ntruncated && i < TRUNCATED_KEPT; i++) {
    const truncated_file *c = &t->truncated[i];
    if (now <= c->until_ms &&
        checkpoint_head_is(fd, c->len, c->fingerprint)) {
      log_msg("input '%s': %s is a copy of a file truncated since; reading it "
              "from offset %" PRIu64, t->pi->name, path, c->offset);
      *offset = c->offset;
      return true;
    }
  }
  return false;
}

static void note_truncated(tail *t, const tail_file *f)
{
  if (f->ckpt->fingerprint_len < COPY_MIN_FINGERPRINT) return;
  t->truncated[t->ntruncated++ % TRUNCATED_KEPT] = (truncated_file){
    f->ckpt->fingerprint_len, f->ckpt->fingerprint, f->offset,
    uv_now(t->loop) + t->cfg.rotate_wait_ms + t->cfg.scan_interval_ms};
}

static void on_scan_timer(uv_timer_t *h);

/* A new file is read from its head, or, if it is a copy, from where its
 * original was read to. */
static void settle(tail *t, tail_file *f, int fd)
{
  uint64_t offset = 0;

  f->young_fd = -1;
  if (copy_of(t, f, fd, &offset)) f->ckpt->acked = offset;
  f->offset = offset;
  open_source(t, f, fd);
}

/* A file found for the first time: from its checkpoint, its end (the first
 * scan, unless read_from_head), or as a new file (settle). A new file
 * shorter than a whole fingerprint may be a copy still being written
 * (copytruncate): it is held open, so nothing it gets is lost even if it
 * is renamed away, and settled at a later look, when its first bytes tell. */
static void add_file(tail *t, const char *path)
{
  tail_file *f = calloc(1, sizeof *f);
  struct stat sb;
  uint64_t offset;
  bool known;
  int fd = -1;

  if (!f || !(f->path = strdup(path)) || (fd = open_file(path, &sb)) < 0 ||
      !(f->ckpt = checkpoint_track(&t->pi->pl->store, t->pi->name, path, fd,
                                   &sb, &offset, &known))) {
    if (fd >= 0) close(fd);
    if (f) free(f->path);
    free(f);
    return;
  }
  f->t = t;
  f->found = true;
  f->young_fd = -1;
  f->size = (uint64_t)sb.st_size;
  f->next = t->files;
  t->files = f;
  if (!known && !t->first_scan) {
    if (sb.st_size >= CHECKPOINT_FINGERPRINT_MAX) {
      settle(t, f, fd);
      return;
    }
    f->young_fd = fd;
    f->young_until_ms = uv_now(t->loop) + YOUNG_FILE_WAIT_MS;
    uv_timer_start(&t->soon, on_scan_timer, YOUNG_FILE_WAIT_MS, 0);
    return;
  }
  if (known)
    log_msg("input '%s': resuming %s at offset %" PRIu64, t->pi->name, path,
            offset);
  else if (!t->cfg.read_from_head)
    offset = f->ckpt->acked = f->size;
  f->offset = offset;
  open_source(t, f, fd);
}

static void free_file(tail *t, tail_file *f)
{
  for (tail_file **p = &t->files; *p; p = &(*p)->next)
    if (*p == f) {
      *p = f->next;
      break;
    }
  unwatch_file(f);
  if (f->young_fd >= 0) close(f->young_fd);
  checkpoint_retire(&t->pi->pl->store, f->ckpt);
  free(f->path);
  free(f);
}

/* ---- scans ---- */

static tail_file *find_file(tail *t, const struct stat *sb)
{
  for (tail_file *f = t->files; f; f = f->next)
    if (f->ckpt->device == sb->st_dev && f->ckpt->inode == sb->st_ino)
      return f;
  return NULL;
}

static bool excluded(const tail *t, const char *path)
{
  for (char **p = t->cfg.exclude; *p; p++)
    if (fnmatch(*p, path, 0) == 0) return true;
  return false;
}

/* A closed file at a path: reopened when it grew; if its inode now holds
 * another file, that one is new. */
static void look_at_closed(tail *t, tail_file *f, const char *path)
{
  struct stat sb;
  int fd;

  if ((fd = open_file(path, &sb)) < 0) return;
  if (!checkpoint_same_file(f->ckpt, fd, &sb) ||
      (uint64_t)sb.st_size < f->offset) {
    close(fd);
    free_file(t, f);
    add_file(t, path);
    return;
  }
  if ((uint64_t)sb.st_size == f->offset) {
    close(fd);
    return;
  }
  if (strcmp(path, f->path) != 0) {
    char *copy = strdup(path);
    if (copy) {
      free(f->path);
      f->path = copy;
    }
  }
  checkpoint_update(f->ckpt, fd, &sb, path);
  open_source(t, f, fd);
}

static void found_path(tail *t, const char *path)
{
  struct stat sb;
  tail_file *f;

  if (excluded(t, path) || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) ||
      pipeline_writes(t->pi->pl, &sb))
    return;
  f = find_file(t, &sb);
  if (!f) {
    add_file(t, path);
  } else if (!f->found) {
    f->found = true;
    f->moved = false;
    if (f->src) checkpoint_update(f->ckpt, f->src->in.fd, &sb, path);
    else if (f->young_fd < 0 && !f->truncated) look_at_closed(t, f, path);
  }
}

/* Its writer may not have reopened yet: rotate_wait_ms runs from now. */
static void mark_moved(tail_file *f, uint64_t now)
{
  if (f->moved) return;
  f->moved = true;
  f->moved_ms = now;
}

/* An open file: did it grow, shrink, or stop growing? */
static void look_at_open(tail *t, tail_file *f, uint64_t now)
{
  input *in = &f->src->in;
  struct stat sb;

  if (in->stopping || in->finished || fstat(in->fd, &sb) != 0) return;
  if (sb.st_nlink == 0) mark_moved(f, now); /* deleted */
  if ((uint64_t)sb.st_size < in->read_offset ||
      !checkpoint_same_file(f->ckpt, in->fd, &sb)) {
    log_msg("input '%s': %s was truncated; reading it again from the "
            "start", t->pi->name, f->path);
    f->truncated = true;
    input_stop(in);
    return;
  }
  /* A fingerprint shorter than the maximum grows with the file, so that
   * copies and truncations are told apart. */
  checkpoint_update(f->ckpt, in->fd, &sb, NULL);
  if ((uint64_t)sb.st_size != f->size) {
    f->changed_ms = now;
    f->size = (uint64_t)sb.st_size;
    input_read_more(in);
    return;
  }
  if (!in->at_end) return;
  if (now - f->changed_ms >= t->cfg.last_line_timeout_ms)
    input_flush_partial(in);
  if (join_holding(&f->src->join) &&
      now - f->src->join.held_since_ms >= t->cfg.join.flush_ms)
    pipeline_source_flush(f->src);
  if ((f->moved && now - f->changed_ms >= t->cfg.rotate_wait_ms &&
       now - f->moved_ms >= t->cfg.rotate_wait_ms) ||
      (now - f->changed_ms >= t->cfg.idle_close_ms &&
       in->carry.len == 0 && in->piece == 0))
    input_stop(in);
}

static void scan(tail *t)
{
  uint64_t now = uv_now(t->loop);

  for (tail_file *f = t->files; f; f = f->next) f->found = false;
  for (char **p = t->cfg.paths; *p; p++) {
    glob_t g;
    if (glob(*p, GLOB_NOSORT, NULL, &g) != 0) continue;
    for (size_t i = 0; i < g.gl_pathc && !t->stopping; i++)
      found_path(t, g.gl_pathv[i]);
    globfree(&g);
  }
  for (tail_file *f = t->files, *next; f; f = next) {
    struct stat sb;
    next = f->next;
    if (f->young_fd >= 0 &&
        (!f->found || now >= f->young_until_ms ||
         (fstat(f->young_fd, &sb) == 0 &&
          sb.st_size >= CHECKPOINT_FINGERPRINT_MAX)))
      settle(t, f, f->young_fd);
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
}

static void on_scan_timer(uv_timer_t *h)
{
  scan(h->data);
}

static void schedule_scan(tail *t)
{
  if (!t->stopping && !uv_is_active((uv_handle_t *)&t->soon))
    uv_timer_start(&t->soon, on_scan_timer, 0, 0);
}

static void on_file_event(uv_fs_event_t *h, const char *name, int events,
                          int status)
{
  tail_file *f = h->data;

  (void)name;
  if (status < 0) return;
  if (events & UV_RENAME) schedule_scan(f->t);
  if ((events & UV_CHANGE) && f->src) {
    f->changed_ms = uv_now(f->t->loop);
    input_read_more(&f->src->in);
  }
}

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
  for (size_t i = 0; i < d->ntails; i++) schedule_scan(d->tails[i]);
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
  struct tail_dir *d = calloc(1, sizeof *d);

  if (!d || !(d->path = strdup(path))) {
    free(d);
    return NULL;
  }
  uv_fs_event_init(t->loop, &d->handle);
  d->handle.data = d;
  /* Not watched (missing, inotify's limit): the timed scans find files. */
  uv_fs_event_start(&d->handle, on_dir_event, path, 0);
  d->next = t->pi->pl->tail_dirs;
  t->pi->pl->tail_dirs = d;
  return d;
}

/* The directory of each pattern, when it has no wildcards, is watched: a
 * file created there is found at once. */
static void watch_dirs(tail *t)
{
  for (char **p = t->cfg.paths; *p; p++) {
    struct tail_dir *d = t->pi->pl->tail_dirs;
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

void tail_close_dirs(struct tail_dir **dirs)
{
  while (*dirs) {
    struct tail_dir *d = *dirs;
    *dirs = d->next;
    uv_close((uv_handle_t *)&d->handle, free_dir);
  }
}

/* t watches no more: a directory no input watches is closed (its handle
 * would keep the loop running). */
static void unwatch_dirs(tail *t)
{
  for (struct tail_dir **p = &t->pi->pl->tail_dirs; *p;) {
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

static int tail_start(pl_input *pi, char *err, size_t errlen)
{
  tail *t = pi->state;

  (void)err;
  (void)errlen;
  t->loop = t->pi->pl->loop;
  uv_timer_init(t->loop, &t->scan);
  uv_timer_init(t->loop, &t->soon);
  t->scan.data = t->soon.data = t;
  t->handles = true;
  watch_dirs(t);
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
  unwatch_dirs(t);
  for (tail_file *f = t->files; f; f = f->next) unwatch_file(f);
}

static void done_if_drained(tail *t)
{
  if (!t->stopping || t->pi->sources || t->pi->done) return;
  close_handles(t);
  pipeline_input_done(t->pi);
}

static void tail_stop(pl_input *pi)
{
  tail *t = pi->state;

  if (t->stopping) return;
  t->stopping = true;
  if (!t->handles) return;
  uv_timer_stop(&t->scan);
  uv_timer_stop(&t->soon);
  for (pl_source *src = t->pi->sources, *next; src; src = next) {
    next = src->next;
    src->in.hold_partial = t->pi->pl->store.state_file != NULL;
    input_stop(&src->in);
  }
  done_if_drained(t);
}

static void tail_source_finished(pl_input *pi, pl_source *src)
{
  tail *t = pi->state;
  tail_file *f = src->file;

  f->offset = src->in.done_offset;
  f->src = NULL;
  t->open_files--;
  t->warned_full = false;
  unwatch_file(f);
  pipeline_source_free(src);
  if (t->stopping) {
    done_if_drained(t);
  } else if (f->truncated) {
    /* The records read before still hold the old source's tickets. */
    char *path = strdup(f->path);
    note_truncated(t, f);
    free_file(t, f);
    if (path) add_file(t, path);
    free(path);
  } else if (f->moved) {
    free_file(t, f);
  }
}

static int tail_build(pl_input *pi, const config_plugin *p, char *err,
                      size_t errlen)
{
  pipeline *pl = pi->pl;

  if (p->tail.join.pattern && !pl->join_matcher &&
      !(pl->join_matcher = join_matcher_new())) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  pi->spreads = true;
  pi->state = tail_create(pi, &p->tail, err, errlen);
  return pi->state ? 0 : -1;
}

static void tail_close_handles(pl_input *pi)
{
  close_handles(pi->state);
}

static void tail_free(pl_input *pi)
{
  free_tail(pi->state);
  pi->state = NULL;
}

const input_kind tail_input_kind = {
  tail_build, tail_start, tail_stop, tail_source_finished, tail_close_handles,
  tail_free, NULL, NULL
};
