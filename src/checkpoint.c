/* checkpoint.c - see checkpoint.h. */
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

#define FINGERPRINT_MAX 1024

/* FNV-1a, 64 bits: enough to tell one file's first bytes from another's. */
static uint64_t fnv1a(const unsigned char *p, size_t n)
{
  uint64_t h = 0xcbf29ce484222325u;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3u;
  return h;
}

/* Hashes the first len bytes of path; false when it has fewer. */
static bool fingerprint_of(const char *path, uint32_t len, uint64_t *out)
{
  unsigned char head[FINGERPRINT_MAX];
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ssize_t n;

  if (fd < 0) return false;
  n = pread(fd, head, len, 0);
  close(fd);
  if (n != (ssize_t)len) return false;
  *out = fnv1a(head, len);
  return true;
}

/* The identity of the file as it is now. */
static void take_identity(checkpoint_source *s, const struct stat *st)
{
  s->device = st->st_dev;
  s->inode = st->st_ino;
  s->fingerprint_len = st->st_size < FINGERPRINT_MAX ? (uint32_t)st->st_size
                                                     : FINGERPRINT_MAX;
  if (!fingerprint_of(s->path, s->fingerprint_len, &s->fingerprint)) {
    s->fingerprint_len = 0;
    s->fingerprint = fnv1a(NULL, 0);
  }
}

/* The offset saved in the state file if it was taken of this very file. */
static uint64_t saved_offset(checkpoint_source *s, const struct stat *st)
{
  FILE *f = fopen(s->state_file, "r");
  unsigned long long dev = 0, ino = 0, fp = 0, offset = 0;
  unsigned fp_len = 0;
  uint64_t now;
  int version = 0;
  bool same;

  if (!f) return 0;
  same = fscanf(f, "lumberjit checkpoint %d\npath %*[^\n]\ndevice %llu\n"
                "inode %llu\nfingerprint %u %llx\noffset %llu", &version,
                &dev, &ino, &fp_len, &fp, &offset) == 6 &&
         version == 1 && dev == (unsigned long long)st->st_dev &&
         ino == (unsigned long long)st->st_ino && fp_len <= FINGERPRINT_MAX &&
         offset <= (unsigned long long)st->st_size &&
         fingerprint_of(s->path, fp_len, &now) && now == fp;
  fclose(f);
  if (!same) {
    log_msg("checkpoint %s: %s is not the file it was taken of (rotated, "
            "replaced or truncated): reading it from the start",
            s->state_file, s->path);
    return 0;
  }
  s->fingerprint_len = fp_len;
  s->fingerprint = fp;
  return offset;
}

int checkpoint_open(checkpoint_source *s, const char *state_dir,
                    const char *name, const char *path, uint64_t *offset,
                    char *err, size_t errlen)
{
  struct stat st;
  size_t n = strlen(state_dir) + strlen(name) + sizeof "/.checkpoint";

  memset(s, 0, sizeof *s);
  *offset = 0;
  errno = 0;
  if (stat(state_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    snprintf(err, errlen, "state_dir %s: %s", state_dir,
             errno ? strerror(errno) : "not a directory");
    return -1;
  }
  /* Only regular files have offsets to resume at. */
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  s->state_file = malloc(n);
  s->state_dir = strdup(state_dir);
  s->path = strdup(path);
  if (!s->state_file || !s->state_dir || !s->path) {
    snprintf(err, errlen, "out of memory");
    checkpoint_close(s);
    return -1;
  }
  snprintf(s->state_file, n, "%s/%s.checkpoint", state_dir, name);
  take_identity(s, &st);
  s->acked = s->saved = saved_offset(s, &st);
  *offset = s->acked;
  return 0;
}

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
  while (s->head && s->head->refs == 0 && !s->stuck) {
    checkpoint_ticket *done = s->head;
    if (done->end > s->acked) s->acked = done->end;
    s->head = done->next;
    if (!s->head) s->tail = NULL;
    free(done);
  }
}

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

int checkpoint_save(checkpoint_source *s)
{
  char tmp[4096];
  FILE *f;
  int ok;

  if (!s->state_file || s->acked == s->saved) return 0;
  snprintf(tmp, sizeof tmp, "%s.tmp", s->state_file);
  f = fopen(tmp, "w");
  if (!f) goto fail;
  fprintf(f, "lumberjit checkpoint 1\npath %s\ndevice %llu\ninode %llu\n"
          "fingerprint %u %016" PRIx64 "\noffset %" PRIu64 "\n", s->path,
          (unsigned long long)s->device, (unsigned long long)s->inode,
          s->fingerprint_len, s->fingerprint, s->acked);
  ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
  if (fclose(f) != 0 || !ok || rename(tmp, s->state_file) != 0 ||
      sync_dir(s->state_dir) != 0)
    goto fail;
  s->saved = s->acked;
  return 0;
fail:
  log_msg("checkpoint %s: cannot write it: %s", s->state_file, strerror(errno));
  return -1;
}

void checkpoint_close(checkpoint_source *s)
{
  while (s->head) {
    checkpoint_ticket *t = s->head;
    s->head = t->next;
    free(t);
  }
  s->tail = NULL;
  free(s->state_file);
  free(s->state_dir);
  free(s->path);
  s->state_file = s->state_dir = s->path = NULL;
}
