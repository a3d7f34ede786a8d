/*
 * tail_identity.h - what tail_input knows of the bytes it read from a
 * file, to tell files apart by more than a prefix they may share.
 *
 * The rule (README, "Tailing files"): device + inode identify a file while
 * it is open or known, whatever its name. Bytes never identify a file on
 * their own; they only confirm
 *   - that a file still holds what was read from it: a file truncated and
 *     rewritten under the reader, even past the offset read, is read again
 *     from its start instead of from the middle of a new line;
 *   - that a new file is a copy of one read up to offset O (copytruncate):
 *     it must hold the very bytes the original held where they are checked
 *     (below), and the original must be seen truncated (tail_copy.c);
 *   - across a restart, the checkpointed file (checkpoint.h), whose
 *     fingerprint and window cover only bytes that were read.
 *
 * A signature covers a file's first `offset` bytes, all of them read: its
 * length, a hash of its first bytes (up to TAIL_HEAD_MAX) and, kept as
 * they are, its last TAIL_WINDOW bytes before the offset. Files that share
 * a banner differ there, unless they hold the same bytes up to the offset:
 * then nothing read tells them apart, and tail_copy.c waits for a
 * truncation of the original before it takes either for the other's copy.
 *
 * A copy may also be shorter than what was read: logrotate copied, the
 * writer wrote on, the reader read on, then logrotate truncated. While a
 * file is open its last TAIL_RECENT bytes read are kept too (tail_recent),
 * so such a copy is recognised by its head hash and its last bytes (up to
 * TAIL_RECENT, all of them when it is no longer than the head), which
 * must be among those kept and equal.
 */
#ifndef LUMBERJIT_TAIL_IDENTITY_H
#define LUMBERJIT_TAIL_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "checkpoint.h"

#define TAIL_HEAD_MAX CHECKPOINT_FINGERPRINT_MAX
#define TAIL_WINDOW CHECKPOINT_WINDOW_MAX

typedef struct {
  uint64_t offset;       /* the signature covers [0, offset) */
  uint32_t head_len;     /* min(offset, TAIL_HEAD_MAX) */
  uint64_t head_hash;    /* a checkpoint fingerprint of those bytes */
  uint32_t window_len;   /* min(offset, TAIL_WINDOW) */
  unsigned char window[TAIL_WINDOW]; /* the bytes before offset */
} tail_signature;

#define TAIL_RECENT 8192

/* The last bytes read before a signature's offset: [offset - len, offset),
 * at bytes + start. The buffer holds twice TAIL_RECENT, so a read's bytes
 * are appended and the kept ones slide back to the front only once
 * TAIL_RECENT more came: a file read a line at a time is not moved 8 KiB
 * a read. */
typedef struct {
  unsigned char *bytes;  /* 2 * TAIL_RECENT; NULL: none kept */
  uint32_t start, len;
} tail_recent;

/* The signature of fd's first `offset` bytes; false when fd has fewer (or
 * cannot be read). */
bool tail_signature_load(tail_signature *s, int fd, uint64_t offset);
/* Bytes read at s->offset: the signature covers them too. */
void tail_signature_extend(tail_signature *s, const char *data, size_t len);
/* Whether fd holds s's last bytes at their place (one small read: cheap
 * enough for every read of a followed file). */
bool tail_signature_window_holds(const tail_signature *s, int fd);
/* Whether fd, `size` bytes long, holds every byte s checks: its length,
 * first bytes and last bytes. */
bool tail_signature_holds(const tail_signature *s, int fd, uint64_t size);

/* Keeps fd's last bytes before offset (false: out of memory or a short
 * read, none kept), and then each read's bytes. */
bool tail_recent_load(tail_recent *r, int fd, uint64_t offset);
void tail_recent_add(tail_recent *r, const char *data, size_t len);
void tail_recent_free(tail_recent *r);
/* Whether fd, `size` bytes long, is a copy of what s (and r, which may be
 * empty) cover: all of it, or its first *upto bytes (set either way). */
bool tail_is_copy(const tail_signature *s, const tail_recent *r, int fd,
                  uint64_t size, uint64_t *upto);

#endif
