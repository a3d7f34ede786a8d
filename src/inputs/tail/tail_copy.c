/*
 * tail_copy.c - what a new file is: a copytruncate copy of a file read
 * before (read from where that file was read to) or a new file (read from
 * its head). See tail.h, "copytruncate", and tail_identity.h.
 */
#include "tail_internal.h"

#include <inttypes.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

/* What a new file is to the files read before. */
typedef enum {
  NEW_FILE,
  MAYBE_COPY, /* shorter than a file read, and its first bytes do not
                 tell it from it: perhaps a copy still being written */
  TWIN,       /* holds what a file not truncated (yet) holds, where
                 tail_is_copy looks: its copy if that file is truncated
                 soon (logrotate truncates right after copying), else a
                 new file with the same bytes (or the copy of a truncated
                 file it matches too, read less far) */
  COPY        /* holds what a truncated file held, where tail_is_copy
                 looks */
} kinship;

/* Whether fd's first bytes hash to the head of sig. */
static bool head_is(int fd, const tail_signature *sig)
{
  tail_signature head;

  return tail_signature_load(&head, fd, sig->head_len) &&
         head.head_hash == sig->head_hash;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
  return a < b ? a : b;
}

/* Whether f, closed (idle, or waiting for a slot), is shorter now than
 * what was read: truncated, as the scan that can open it will see. A stat
 * takes no descriptor. */
static bool closed_and_shorter(const tail_file *f)
{
  struct stat sb;

  return !f->src && stat(f->path, &sb) == 0 && sb.st_dev == f->device &&
         sb.st_ino == f->inode && (uint64_t)sb.st_size < f->sig.offset;
}

/* How long a TWIN waits for its original's truncation: two scans, in case
 * no inotify event tells of it, and a young file's wait. */
static uint64_t twin_wait_ms(const tail *t)
{
  return 2 * t->cfg.scan_interval_ms + YOUNG_FILE_WAIT_MS;
}

/* Keeps, of the files a new file matches, the one read furthest: the new
 * file holds the bytes each held up to `at`, and the lines before `at`
 * were read from them, so it is read from past all of them. In a chain of
 * copies (a file, its copy, a copy of that copy...) each holds what the
 * one before held and what was written to it since, so a copy of the last
 * one matches all of them; an older one's offset is where its reading
 * ended, and what its copies read since would be delivered again. */
static void consider(uint64_t at, const char *name, uint64_t *offset,
                     const char **original)
{
  if (!*original || at > *offset) {
    *offset = at;
    *original = name;
  }
}

/* What a new file, `size` bytes long, open on fd, is to the files read
 * before; for a COPY, where to read it from and a name for its original:
 * past the last whole line read from the original, or the copy's end if
 * it is shorter (all it holds was read). A file not truncated (yet) that
 * it matches, read further than that, makes it a TWIN: in a chain of
 * copytruncates the last copy may be found before the file it copies
 * (open, read on past where its own original's reading ended) is seen
 * truncated. On a tie it is the truncated file's copy: nothing read tells
 * them apart, and only a truncated file has a copy. */
static kinship kin_of(tail *t, const tail_file *young, int fd, uint64_t size,
                      uint64_t *offset, const char **original)
{
  uint64_t upto, twin_at = 0, found = young->found_ms,
                 opened = young->young_since_ms;
  const char *twin = NULL;
  bool maybe = false;

  for (size_t i = 0; i < t->ntruncated && i < TRUNCATED_KEPT; i++) {
    const truncated_file *c = &t->truncated[i];
    /* Truncated around the time the copy was found: up to rotate_wait_ms +
     * scan_interval_ms before, or, once it could be opened (it may have
     * waited for a slot, as may the original for its truncation to be
     * seen), while a TWIN waits. */
    if (c->noted_ms + t->cfg.rotate_wait_ms + t->cfg.scan_interval_ms >=
            found &&
        c->noted_ms <= opened + twin_wait_ms(t) && c->sig.offset > 0 &&
        (c->device != young->device || c->inode != young->inode) &&
        tail_is_copy(&c->sig, &c->recent, fd, size, &upto))
      consider(min_u64(c->resume, upto), "a file truncated since", offset,
               original);
  }
  for (const tail_file *f = t->files; f; f = f->next) {
    if (f == young || !f->ckpt || f->young_fd >= 0 || f->sig.offset == 0 ||
        (f->device == young->device && f->inode == young->inode))
      continue;
    if (tail_is_copy(&f->sig, &f->recent, fd, size, &upto)) {
      uint64_t at = min_u64(f->src ? pl_source_reader(f->src)->done_offset : f->offset, upto);
      if (f->truncated || closed_and_shorter(f))
        consider(at, f->path, offset, original);
      else
        consider(at, f->path, &twin_at, &twin);
    } else if (size < f->sig.offset &&
               (size < f->sig.head_len || head_is(fd, &f->sig))) {
      maybe = true;
    }
  }
  if (twin && (!*original || twin_at > *offset)) return TWIN;
  if (*original) return COPY;
  return maybe ? MAYBE_COPY : NEW_FILE;
}

/* Settles a young file once it tells: a copy is read from where its
 * original was read to, so that what was written between that read and
 * the truncation comes from the copy; any other file from its head. A
 * file that may yet prove a copy waits, held open (nothing it gets is
 * lost, even if it is renamed away), but not past its deadline or once no
 * pattern leads to it. A TWIN whose file was not truncated in time is the
 * copy of a truncated file it matches too, if any, as it would have been
 * at once. */
void tail_decide(tail *t, tail_file *f, uint64_t now)
{
  int fd = f->young_fd;
  uint64_t offset = 0, waited = now - f->young_since_ms;
  const char *original = NULL;
  struct stat sb;
  kinship kin = NEW_FILE;

  if (fstat(fd, &sb) == 0)
    kin = kin_of(t, f, fd, (uint64_t)sb.st_size, &offset, &original);
  if (f->found && ((kin == MAYBE_COPY && waited < YOUNG_FILE_WAIT_MS) ||
                   (kin == TWIN && waited < twin_wait_ms(t))))
    return;
  if (original) /* a COPY, or a TWIN that waited in vain */
    log_msg("input '%s': %s is a copy of %s; reading it from offset %" PRIu64,
            t->name, f->path, original, offset);
  f->young_fd = -1;
  t->open_files--;
  tail_start_at(t, f, fd, offset);
}

void tail_note_truncated(tail *t, tail_file *f)
{
  truncated_file *c;

  if (f->sig.offset == 0) return;
  c = &t->truncated[t->ntruncated++ % TRUNCATED_KEPT];
  tail_recent_free(&c->recent);
  *c = (truncated_file){f->device, f->inode, f->sig, f->recent, f->offset,
                        uv_now(t->loop)};
  f->recent = (tail_recent){0};
}

