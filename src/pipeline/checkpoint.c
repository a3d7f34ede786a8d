/* checkpoint.c - see checkpoint.h. */
#include "checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

/* A file the state file names, until a source claims it. */
struct saved_file {
  struct saved_file *next;
  char *input, *path;
  unsigned long long device, inode, fingerprint, offset;
  unsigned fingerprint_len;
  checkpoint_window window;
};

/* An input that ran with this state_dir: the state file named it (a
 * block, or a known line: it ran before, even with no file to follow), or
 * it started in this run (checkpoint_know_input). */
struct saved_input {
  struct saved_input *next;
  bool saved;            /* named by the state file this run started with */
  char name[];
};

/* FNV-1a, 64 bits: enough to tell one file's first bytes from another's
 * (device and inode tell the files themselves apart). */
uint64_t checkpoint_fingerprint_add(uint64_t fp, const void *bytes, size_t len)
{
  const unsigned char *p = bytes;

  for (size_t i = 0; i < len; i++) fp = (fp ^ p[i]) * 0x100000001b3u;
  return fp;
}

/* Hashes the first len bytes of fd; false when it has fewer. */
static bool fingerprint_of(int fd, uint32_t len, uint64_t *out)
{
  unsigned char head[CHECKPOINT_FINGERPRINT_MAX];
  ssize_t n = pread(fd, head, len, 0);

  if (n != (ssize_t)len) return false;
  *out = checkpoint_fingerprint_add(CHECKPOINT_FINGERPRINT_EMPTY, head, len);
  return true;
}

static uint32_t fingerprint_len(const struct stat *sb)
{
  return sb->st_size < CHECKPOINT_FINGERPRINT_MAX ? (uint32_t)sb->st_size
                                                  : CHECKPOINT_FINGERPRINT_MAX;
}

/* ---- the state file ---- */

static void free_saved(struct saved_file *f)
{
  while (f) {
    struct saved_file *next = f->next;
    free(f->input);
    free(f->path);
    free(f);
    f = next;
  }
}

static struct saved_input *find_input(const checkpoint_store *st,
                                      const char *input)
{
  for (struct saved_input *i = st->inputs; i; i = i->next)
    if (strcmp(i->name, input) == 0) return i;
  return NULL;
}

/* Whether an earlier run of input saved a checkpoint. */
static bool knew_input(const checkpoint_store *st, const char *input)
{
  const struct saved_input *i = find_input(st, input);

  return i && i->saved;
}

/* Adds input to the inputs that ran, at the end (the state file keeps
 * their order); false when it was there already, or out of memory. */
static bool add_input(checkpoint_store *st, const char *input, bool saved)
{
  struct saved_input *i = find_input(st, input), **tail = &st->inputs;

  if (i) {
    i->saved = i->saved || saved;
    return false;
  }
  if (!(i = malloc(sizeof *i + strlen(input) + 1))) return false;
  i->next = NULL;
  i->saved = saved;
  strcpy(i->name, input);
  while (*tail) tail = &(*tail)->next;
  *tail = i;
  return true;
}

void checkpoint_know_input(checkpoint_store *st, const char *input)
{
  if (st->state_file && add_input(st, input, false)) st->dirty = true;
}

/* The check of input's known line: the hash of its text, "known NAME\n",
 * as a block's is of its lines; false when the name does not fit a
 * reader. */
static bool known_check(const char *input, uint64_t *check)
{
  char text[300];
  int n = snprintf(text, sizeof text, "known %s\n", input);

  if (n < 0 || (size_t)n >= sizeof text || strlen(input) >= 256) return false;
  *check = checkpoint_fingerprint_add(CHECKPOINT_FINGERPRINT_EMPTY, text,
                                      (size_t)n);
  return true;
}

/* The known lines of version 4, after its first line: the inputs that
 * ran, each with the hash of its text (as a block's check line). False
 * at one that does not read back as written. */
static bool read_known(checkpoint_store *st, FILE *in)
{
  char input[256];
  unsigned long long check;
  uint64_t want;
  int got;

  while ((got = fscanf(in, " known %255s %llx", input, &check)) == 2) {
    if (!known_check(input, &want) || check != want) return false;
    add_input(st, input, true);
  }
  return got == 0; /* the next line is no known line */
}

/* A block's window line, if it has one (the next line starts "input",
 * "check" or "end"). */
static void read_window(FILE *in, checkpoint_window *w)
{
  unsigned long long end, hash;
  unsigned len;

  if (fscanf(in, " window %llu %u %llx", &end, &len, &hash) == 3 &&
      len <= CHECKPOINT_FINGERPRINT_MAX && len <= end)
    *w = (checkpoint_window){end, len, hash};
}

/* A block's text, as it is written: the reader writes a block it parsed
 * again and compares the hash of that with the block's check line, so a
 * changed byte that still parses (a digit of an offset, which would skip
 * records) is found as surely as one that does not. -1 when it does not
 * fit (an input name or path longer than a reader takes). */
static int format_block(char *out, size_t cap, const char *input,
                        const char *path, unsigned long long dev,
                        unsigned long long ino, unsigned fp_len, uint64_t fp,
                        uint64_t offset, const checkpoint_window *w)
{
  int n = snprintf(out, cap, "input %s\nfile %s\ndevice %llu\ninode %llu\n"
                   "fingerprint %u %016" PRIx64 "\noffset %" PRIu64 "\n",
                   input, path, dev, ino, fp_len, fp, offset);

  if (n >= 0 && (size_t)n < cap && w->len > 0)
    n += snprintf(out + n, cap - (size_t)n, "window %" PRIu64 " %u %016"
                  PRIx64 "\n", w->end, w->len, w->hash);
  return n >= 0 && (size_t)n < cap ? n : -1;
}

/* The input name, path and numbers of a block take at most this much. */
#define BLOCK_MAX 4800

static uint64_t block_check(const struct saved_file *f)
{
  char text[BLOCK_MAX];
  int n = format_block(text, sizeof text, f->input, f->path, f->device,
                       f->inode, f->fingerprint_len, f->fingerprint,
                       f->offset, &f->window);

  return n < 0 ? 0 : checkpoint_fingerprint_add(CHECKPOINT_FINGERPRINT_EMPTY,
                                                text, (size_t)n);
}

/* One block: the input, the file's path, identity and offset, and (when
 * checked, version 3) the check line that must match them. NULL at the
 * end line, and at a block cut short or changed: the caller tells which. */
static struct saved_file *read_block(FILE *in, bool checked)
{
  struct saved_file *f = calloc(1, sizeof *f);
  char input[256], path[4096];
  unsigned long long check;

  if (!f) return NULL;
  if (fscanf(in, " input %255s\nfile %4095[^\n]\ndevice %llu\ninode %llu\n"
             "fingerprint %u %llx\noffset %llu", input, path, &f->device,
             &f->inode, &f->fingerprint_len, &f->fingerprint,
             &f->offset) != 7 ||
      f->fingerprint_len > CHECKPOINT_FINGERPRINT_MAX ||
      !(f->input = strdup(input)) || !(f->path = strdup(path)))
    goto bad;
  read_window(in, &f->window);
  if (checked &&
      (fscanf(in, " check %llx", &check) != 1 || check != block_check(f)))
    goto bad;
  return f;
bad:
  free(f->input);
  free(f->path);
  free(f);
  return NULL;
}

static void log_dropped(const checkpoint_store *st, const char *path)
{
  log_warning("checkpoint %s: %s is not the file it was taken of (rotated, "
          "replaced or truncated); its offset no longer applies",
          st->state_file, path);
}

/* The file of block f, renamed since (rotated while lumberjit was down):
 * the entry of its directory with its inode (readdir tells inodes without
 * a stat each); its path is set to it. False when there is none. */
static bool find_renamed(const checkpoint_store *st, struct saved_file *f)
{
  const char *slash = strrchr(f->path, '/');
  size_t dirlen = slash ? (size_t)(slash - f->path) : 1;
  char dir[4096], *path = NULL;
  struct dirent *e;
  DIR *d;

  if (dirlen == 0) dirlen = 1; /* "/name" */
  snprintf(dir, sizeof dir, "%.*s", (int)dirlen, slash ? f->path : ".");
  if (!(d = opendir(dir))) return false;
  while (!path && (e = readdir(d))) {
    struct stat sb;
    if ((unsigned long long)e->d_ino != f->inode ||
        fstatat(dirfd(d), e->d_name, &sb, 0) != 0 || !S_ISREG(sb.st_mode) ||
        (unsigned long long)sb.st_dev != f->device ||
        (unsigned long long)sb.st_ino != f->inode)
      continue;
    if ((path = malloc(strlen(dir) + strlen(e->d_name) + 2)))
      sprintf(path, "%s/%s", dir, e->d_name);
  }
  closedir(d);
  if (!path) return false;
  log_warning("checkpoint %s: %s is not the file it was taken of: that file is "
          "now %s, and keeps its offset", st->state_file, f->path, path);
  free(f->path);
  f->path = path;
  return true;
}

/* Whether the state file ends where it should after `blocks` blocks: at
 * version 3's end line, which counts them (a file cut at a block's end
 * reads as whole blocks, and only the count tells some are missing), and
 * then at its end. */
static bool read_end(FILE *in, int version, unsigned blocks)
{
  unsigned n;
  char c;

  if (version >= 3 && (fscanf(in, " end %u", &n) != 1 || n != blocks))
    return false;
  return fscanf(in, " %c", &c) == EOF;
}

/* A state file a power loss damaged (cut short, bytes changed: writes
 * that a device reordered or tore, past the fsync and rename that keep it
 * whole on a disk that keeps its word): the blocks before the damage are
 * kept and the rest dropped. The files of dropped blocks are read from
 * their head (checkpoint_track), since they may be any the inputs find:
 * duplicates, never a loss. */
static void note_damage(checkpoint_store *st, FILE *in, long good_end,
                        unsigned kept)
{
  long size = fseek(in, 0, SEEK_END) == 0 ? ftell(in) : -1;

  st->damaged = true;
  st->dirty = true;
  log_warning("checkpoint %s: damaged (cut short or changed, as a power loss "
              "leaves it): kept the %u blocks before the damage, dropped the "
              "%ld bytes after them; files found at the start without a "
              "checkpoint are read from their head (records repeated, none "
              "lost)", st->state_file, kept,
              size > good_end ? size - good_end : 0);
}

/* Keeps the blocks whose file is still there, under its name or another
 * in the same directory; the rest (deleted, replaced, moved away) would
 * only ever be dropped. Version 2 (before blocks had checks) is read too. */
static void read_state(checkpoint_store *st)
{
  FILE *in = fopen(st->state_file, "r");
  struct saved_file *f, **tail = &st->saved;
  unsigned blocks = 0;
  long good_end = 0;
  int version = 0;

  if (!in) return;
  if (fscanf(in, "lumberjit checkpoint %d", &version) != 1 ||
      version < 2 || version > 4) {
    note_damage(st, in, 0, 0);
    fclose(in);
    return;
  }
  if (version == 4 && !read_known(st, in)) {
    note_damage(st, in, 0, 0);
    fclose(in);
    return;
  }
  good_end = ftell(in);
  while ((f = read_block(in, version >= 3))) {
    struct stat sb;
    bool here = stat(f->path, &sb) == 0 &&
                (unsigned long long)sb.st_dev == f->device &&
                (unsigned long long)sb.st_ino == f->inode;
    blocks++;
    add_input(st, f->input, true);
    good_end = ftell(in);
    if (here || find_renamed(st, f)) {
      *tail = f;
      tail = &f->next;
      if (!here) st->dirty = true;
    } else {
      log_dropped(st, f->path);
      free_saved(f);
      st->dirty = true;
    }
  }
  if (!read_end(in, version, blocks)) note_damage(st, in, good_end, blocks);
  fclose(in);
}

int checkpoint_store_open(checkpoint_store *st, const char *state_dir,
                          char *err, size_t errlen)
{
  struct stat sb;
  size_t n;

  memset(st, 0, sizeof *st);
  if (!state_dir) return 0;
  /* Made on first use, as Filebeat makes its data path: only lumberjit
   * reads it. */
  if (mkdir(state_dir, 0700) == 0)
    log_msg("state_dir %s did not exist: created it", state_dir);
  errno = 0;
  if (stat(state_dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    snprintf(err, errlen, "state_dir %s: %s", state_dir,
             errno ? strerror(errno) : "not a directory");
    return -1;
  }
  n = strlen(state_dir) + sizeof "/checkpoints";
  st->state_file = malloc(n);
  st->state_dir = strdup(state_dir);
  if (!st->state_file || !st->state_dir) {
    snprintf(err, errlen, "out of memory");
    checkpoint_store_close(st);
    return -1;
  }
  snprintf(st->state_file, n, "%s/checkpoints", state_dir);
  read_state(st);
  return 0;
}

/* ---- sources ---- */

/* Whether fd holds w's bytes at their place (true when w is none). */
static bool window_holds(int fd, const checkpoint_window *w)
{
  unsigned char bytes[CHECKPOINT_FINGERPRINT_MAX];

  return w->len == 0 ||
         (pread(fd, bytes, w->len, (off_t)(w->end - w->len)) ==
              (ssize_t)w->len &&
          checkpoint_fingerprint_add(CHECKPOINT_FINGERPRINT_EMPTY, bytes,
                                     w->len) == w->hash);
}

/* The saved block of this very file, taken out of the list; NULL if none
 * (*changed: there was one of its device and inode, but the file no longer
 * holds what it was taken of). */
static struct saved_file *claim_saved(checkpoint_store *st, const char *input,
                                      int fd, const struct stat *sb,
                                      bool *changed)
{
  for (struct saved_file **p = &st->saved; *p; p = &(*p)->next) {
    struct saved_file *f = *p;
    uint64_t fp;
    if (strcmp(f->input, input) != 0 ||
        f->device != (unsigned long long)sb->st_dev ||
        f->inode != (unsigned long long)sb->st_ino)
      continue;
    *p = f->next;
    f->next = NULL; /* free_saved frees the list from f on */
    if (f->offset <= (unsigned long long)sb->st_size &&
        fingerprint_of(fd, f->fingerprint_len, &fp) && fp == f->fingerprint &&
        window_holds(fd, &f->window))
      return f;
    log_dropped(st, f->path);
    free_saved(f);
    *changed = true;
    return NULL;
  }
  return NULL;
}

checkpoint_source *checkpoint_track(checkpoint_store *st, const char *input,
                                    const char *path, int fd,
                                    const struct stat *sb, uint64_t *offset,
                                    bool *known)
{
  checkpoint_source *s = calloc(1, sizeof *s);
  struct saved_file *f;

  *offset = 0;
  *known = false;
  if (!s || !(s->path = strdup(path))) {
    free(s);
    return NULL;
  }
  s->store = st;
  s->input = input;
  s->device = sb->st_dev;
  s->inode = sb->st_ino;
  f = claim_saved(st, input, fd, sb, &s->changed);
  /* A file the state file does not know, of an input it knows, came while
   * lumberjit was down or before a crash let it save the file's block:
   * none of it was acknowledged. So may a file whose block a damaged state
   * file lost. */
  if (!f && (st->damaged || knew_input(st, input))) s->changed = true;
  if (f) {
    s->fingerprint_len = f->fingerprint_len;
    s->fingerprint = f->fingerprint;
    s->window = f->window;
    s->acked = *offset = f->offset;
    *known = true;
    free_saved(f);
  } else if (!fingerprint_of(fd, fingerprint_len(sb), &s->fingerprint)) {
    s->fingerprint = CHECKPOINT_FINGERPRINT_EMPTY;
  } else {
    s->fingerprint_len = fingerprint_len(sb);
  }
  s->next = st->sources;
  st->sources = s;
  st->dirty = true;
  return s;
}

void checkpoint_set_fingerprint(checkpoint_source *s, uint32_t len,
                                uint64_t fp)
{
  if (len == s->fingerprint_len && fp == s->fingerprint) return;
  s->fingerprint_len = len;
  s->fingerprint = fp;
  s->store->dirty = true;
}

void checkpoint_set_window(checkpoint_source *s, uint64_t end,
                           const void *bytes, uint32_t len)
{
  if (len > CHECKPOINT_WINDOW_MAX) {
    bytes = (const unsigned char *)bytes + len - CHECKPOINT_WINDOW_MAX;
    len = CHECKPOINT_WINDOW_MAX;
  }
  if (s->window_set && end == s->window.end && len == s->window.len &&
      memcmp(bytes, s->window_bytes, len) == 0)
    return;
  s->window.end = end;
  s->window.len = len;
  memcpy(s->window_bytes, bytes, len);
  s->window_set = true;
  s->store->dirty = true;
}

/* The window as it is saved: hashed now, if it was set since the load. */
static checkpoint_window window_of(const checkpoint_source *s)
{
  checkpoint_window w = s->window;

  if (s->window_set)
    w.hash = checkpoint_fingerprint_add(CHECKPOINT_FINGERPRINT_EMPTY,
                                        s->window_bytes, w.len);
  return w;
}

void checkpoint_moved(checkpoint_source *s, const char *path)
{
  char *copy;

  if (strcmp(path, s->path) == 0 || !(copy = strdup(path))) return;
  free(s->path);
  s->path = copy;
  s->store->dirty = true;
}

static void free_source(checkpoint_source *s)
{
  while (s->head) {
    checkpoint_ticket *t = s->head;
    s->head = t->next;
    free(t);
  }
  free(s->path);
  free(s);
}

static void unlink_source(checkpoint_source **list, checkpoint_source *s)
{
  for (checkpoint_source **p = list; *p; p = &(*p)->next)
    if (*p == s) {
      *p = s->next;
      return;
    }
}

void checkpoint_retire(checkpoint_store *st, checkpoint_source *s)
{
  unlink_source(&st->sources, s);
  st->dirty = true;
  if (!s->head) {
    free_source(s);
    return;
  }
  s->retired = true;
  s->next = st->retired;
  st->retired = s;
}

/* ---- tickets ---- */

checkpoint_ticket *checkpoint_ticket_new(checkpoint_source *s)
{
  checkpoint_ticket *t = calloc(1, sizeof *t);

  if (!t) {
    /* Its records could not be tracked: the offset must not pass them. */
    s->stuck = true;
    return NULL;
  }
  t->src = s;
  t->end = s->tail ? s->tail->end : s->acked;
  t->refs = 1;
  if (s->tail) s->tail->next = t;
  else s->head = t;
  s->tail = t;
  return t;
}

void checkpoint_unref(checkpoint_ticket *t)
{
  checkpoint_source *s;

  if (!t || --t->refs > 0) return;
  s = t->src;
  while (s->head && s->head->refs == 0 && !s->head->released && !s->stuck) {
    checkpoint_ticket *done = s->head;
    if (done->end > s->acked) {
      s->acked = done->end;
      s->store->dirty = true;
    }
    s->head = done->next;
    if (!s->head) s->tail = NULL;
    free(done);
  }
  if (s->retired && !s->head) {
    unlink_source(&s->store->retired, s);
    free_source(s);
  }
}

bool checkpoint_rereadable(const checkpoint_ticket *t)
{
  return t && t->src->store->state_file && !t->src->retired;
}

void checkpoint_release(checkpoint_ticket *t)
{
  if (!t) return;
  t->released = true;
  checkpoint_unref(t);
}

/* ---- saving ---- */

/* The rename is durable once the directory is synced. */
static int sync_dir(const char *dir)
{
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int rc;

  if (fd < 0) return -1;
  rc = fsync(fd);
  close(fd);
  return rc;
}

/* A block and its check line; false when it could not be formatted. */
static bool write_block(FILE *out, const char *input, const char *path,
                        unsigned long long dev, unsigned long long ino,
                        unsigned fp_len, uint64_t fp, uint64_t offset,
                        const checkpoint_window *w)
{
  char text[BLOCK_MAX];
  int n = format_block(text, sizeof text, input, path, dev, ino, fp_len, fp,
                       offset, w);

  if (n < 0) return false;
  fprintf(out, "%scheck %016" PRIx64 "\n", text,
          checkpoint_fingerprint_add(CHECKPOINT_FINGERPRINT_EMPTY, text,
                                     (size_t)n));
  return true;
}

/* The blocks and end line; the stream's error flag tells of a failed
 * write. */
static void write_state(const checkpoint_store *st, FILE *f)
{
  unsigned blocks = 0;
  uint64_t check;

  fprintf(f, "lumberjit checkpoint 4\n");
  for (const struct saved_input *i = st->inputs; i; i = i->next)
    if (known_check(i->name, &check))
      fprintf(f, "known %s %016" PRIx64 "\n", i->name, check);
  for (const checkpoint_source *s = st->sources; s; s = s->next) {
    checkpoint_window w = window_of(s);
    blocks += write_block(f, s->input, s->path, (unsigned long long)s->device,
                          (unsigned long long)s->inode, s->fingerprint_len,
                          s->fingerprint, s->acked, &w);
  }
  for (const struct saved_file *s = st->saved; s; s = s->next)
    blocks += write_block(f, s->input, s->path, s->device, s->inode,
                          s->fingerprint_len, s->fingerprint, s->offset,
                          &s->window);
  fprintf(f, "end %u\n", blocks);
}

/* errno, or EIO where a stream's write failed without one left. */
static int error_now(void)
{
  return errno ? errno : EIO;
}

char *checkpoint_snapshot(checkpoint_store *st, size_t *len)
{
  char *bytes = NULL;
  FILE *f;
  bool failed;

  if (!st->state_file || !st->dirty) return NULL;
  if (!(f = open_memstream(&bytes, len))) {
    checkpoint_saved(st, "taking what it holds", ENOMEM);
    return NULL;
  }
  write_state(st, f);
  failed = ferror(f) != 0;
  if (fclose(f) != 0 || failed) {
    free(bytes);
    checkpoint_saved(st, "taking what it holds", ENOMEM);
    return NULL;
  }
  st->dirty = false;
  return bytes;
}

/* Writes tmp whole and renames it over the state file; the step that
 * failed, NULL when none did (*err its errno). The old state file stays
 * until the rename, and a tmp that did not become it is removed. */
const char *checkpoint_write_snapshot(const checkpoint_store *st,
                                      const char *bytes, size_t len, int *err)
{
  char tmp[4096];
  const char *failed = NULL;
  FILE *f;

  snprintf(tmp, sizeof tmp, "%s.tmp", st->state_file);
  if (!(f = fopen(tmp, "we"))) {
    *err = error_now();
    return "creating its temporary file";
  }
  errno = 0;
  if (fwrite(bytes, 1, len, f) != len || fflush(f) != 0 ||
      fsync(fileno(f)) != 0) {
    *err = error_now();
    failed = "writing its temporary file";
  }
  if (fclose(f) != 0 && !failed) {
    *err = error_now();
    failed = "writing its temporary file";
  }
  if (!failed && rename(tmp, st->state_file) != 0) {
    *err = error_now();
    failed = "renaming its temporary file over it";
  }
  if (failed) {
    unlink(tmp);
    return failed;
  }
  /* Written: only the rename may not last a power loss yet. */
  if (sync_dir(st->state_dir) != 0) {
    *err = error_now();
    return "syncing its directory";
  }
  return NULL;
}

int checkpoint_saved(checkpoint_store *st, const char *failed, int err)
{
  if (failed) {
    /* Out of descriptors or space, it fails at each interval until they
     * are back: logged once, the offsets kept (dirty) for the next try. */
    st->dirty = true;
    if (st->failed_saves++ == 0)
      log_error("checkpoint %s: cannot write it: %s (%s); the last one "
                "written stays (a restart now would read again what was "
                "acknowledged since), and it is tried again at each "
                "checkpoint_interval_ms", st->state_file, strerror(err),
                failed);
    return -1;
  }
  if (st->failed_saves > 0)
    log_msg("checkpoint %s: written again, after %u failed %s",
            st->state_file, st->failed_saves,
            st->failed_saves == 1 ? "try" : "tries");
  st->failed_saves = 0;
  return 0;
}

int checkpoint_save(checkpoint_store *st)
{
  size_t len;
  char *bytes = checkpoint_snapshot(st, &len);
  const char *failed;
  int err = 0, rc;

  /* Dirty still: the snapshot failed, and said so. */
  if (!bytes) return st->state_file && st->dirty ? -1 : 0;
  failed = checkpoint_write_snapshot(st, bytes, len, &err);
  rc = checkpoint_saved(st, failed, err);
  free(bytes);
  return rc;
}

static void free_sources(checkpoint_source *s)
{
  while (s) {
    checkpoint_source *next = s->next;
    free_source(s);
    s = next;
  }
}

void checkpoint_store_close(checkpoint_store *st)
{
  if (st->dirty && st->failed_saves > 0)
    log_error("checkpoint %s: the run ends with it unwritten (%u tries "
              "failed): the next run starts from the last one written, and "
              "reads again the records acknowledged since", st->state_file,
              st->failed_saves);
  free_sources(st->sources);
  free_sources(st->retired);
  free_saved(st->saved);
  while (st->inputs) {
    struct saved_input *next = st->inputs->next;
    free(st->inputs);
    st->inputs = next;
  }
  free(st->state_file);
  free(st->state_dir);
  memset(st, 0, sizeof *st);
}
