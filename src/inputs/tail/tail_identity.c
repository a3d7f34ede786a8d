/* tail_identity.c - see tail_identity.h. */
#include "tail_identity.h"

#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* Reads exactly len bytes at offset; false on a short read or an error. */
static bool read_at(int fd, void *out, size_t len, uint64_t offset)
{
  size_t got = 0;

  while (got < len) {
    ssize_t n = pread(fd, (char *)out + got, len - got, (off_t)(offset + got));
    if (n <= 0) return false;
    got += (size_t)n;
  }
  return true;
}

/* Appends len bytes to the last `*have` of buf (cap bytes): the newest go
 * last, the oldest fall off the front. */
static void keep_last(unsigned char *buf, uint32_t *have, size_t cap,
                      const unsigned char *p, size_t len)
{
  size_t keep;

  if (len >= cap) {
    memcpy(buf, p + len - cap, cap);
    *have = (uint32_t)cap;
    return;
  }
  keep = *have + len > cap ? cap - len : *have;
  memmove(buf, buf + *have - keep, keep);
  memcpy(buf + keep, p, len);
  *have = (uint32_t)(keep + len);
}

bool tail_signature_load(tail_signature *s, int fd, uint64_t offset)
{
  unsigned char head[TAIL_HEAD_MAX];

  memset(s, 0, sizeof *s);
  s->offset = offset;
  s->head_len = offset < TAIL_HEAD_MAX ? (uint32_t)offset : TAIL_HEAD_MAX;
  s->window_len = offset < TAIL_WINDOW ? (uint32_t)offset : TAIL_WINDOW;
  if (!read_at(fd, head, s->head_len, 0) ||
      !read_at(fd, s->window, s->window_len, offset - s->window_len))
    return false;
  s->head_hash = checkpoint_fingerprint_add(CHECKPOINT_FINGERPRINT_EMPTY, head,
                                            s->head_len);
  return true;
}

void tail_signature_extend(tail_signature *s, const char *data, size_t len)
{
  const unsigned char *p = (const unsigned char *)data;

  if (s->head_len == 0) s->head_hash = CHECKPOINT_FINGERPRINT_EMPTY;
  if (s->head_len < TAIL_HEAD_MAX) {
    size_t n = TAIL_HEAD_MAX - s->head_len;
    if (n > len) n = len;
    s->head_hash = checkpoint_fingerprint_add(s->head_hash, p, n);
    s->head_len += (uint32_t)n;
  }
  keep_last(s->window, &s->window_len, TAIL_WINDOW, p, len);
  s->offset += len;
}

bool tail_signature_window_holds(const tail_signature *s, int fd)
{
  unsigned char now[TAIL_WINDOW];

  return read_at(fd, now, s->window_len, s->offset - s->window_len) &&
         memcmp(now, s->window, s->window_len) == 0;
}

bool tail_signature_holds(const tail_signature *s, int fd, uint64_t size)
{
  unsigned char head[TAIL_HEAD_MAX];
  uint64_t hash;

  if (size < s->offset || !tail_signature_window_holds(s, fd)) return false;
  if (s->head_len == 0) return true;
  if (!read_at(fd, head, s->head_len, 0)) return false;
  hash = checkpoint_fingerprint_add(CHECKPOINT_FINGERPRINT_EMPTY, head,
                                    s->head_len);
  return hash == s->head_hash;
}

bool tail_recent_load(tail_recent *r, int fd, uint64_t offset)
{
  uint32_t len = offset < TAIL_RECENT ? (uint32_t)offset : TAIL_RECENT;

  r->start = r->len = 0;
  if (!r->bytes && !(r->bytes = malloc(2 * TAIL_RECENT))) return false;
  if (!read_at(fd, r->bytes, len, offset - len)) return false;
  r->len = len;
  return true;
}

void tail_recent_add(tail_recent *r, const char *data, size_t len)
{
  if (!r->bytes) return;
  if (len >= TAIL_RECENT) {
    memcpy(r->bytes, data + len - TAIL_RECENT, TAIL_RECENT);
    r->start = 0;
    r->len = TAIL_RECENT;
    return;
  }
  if (r->start + r->len + len > 2 * TAIL_RECENT) {
    memmove(r->bytes, r->bytes + r->start, r->len);
    r->start = 0;
  }
  memcpy(r->bytes + r->start + r->len, data, len);
  r->len += (uint32_t)len;
  if (r->len > TAIL_RECENT) {
    r->start += r->len - TAIL_RECENT;
    r->len = TAIL_RECENT;
  }
}

void tail_recent_free(tail_recent *r)
{
  free(r->bytes);
  r->bytes = NULL;
  r->start = r->len = 0;
}

bool tail_is_copy(const tail_signature *s, const tail_recent *r, int fd,
                  uint64_t size, uint64_t *upto)
{
  unsigned char now[TAIL_RECENT];
  uint64_t kept_from = s->offset - (r ? r->len : 0), from = 0;
  tail_signature head;

  *upto = size < s->offset ? size : s->offset;
  if (size >= s->offset) return tail_signature_holds(s, fd, size);
  /* Shorter: its head hash, and its last bytes up to TAIL_RECENT compared
   * with those kept (all of them when it is no longer than the head). */
  if (!r || size <= kept_from) return false;
  if (size <= s->head_len) {
    if (kept_from > 0) return false;
  } else {
    if (!tail_signature_load(&head, fd, s->head_len) ||
        head.head_hash != s->head_hash)
      return false;
    from = s->head_len > kept_from ? s->head_len : kept_from;
  }
  return read_at(fd, now, size - from, from) &&
         memcmp(now, r->bytes + r->start + (from - kept_from), size - from) == 0;
}
