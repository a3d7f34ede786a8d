/*
 * checkpoint.h - how far each file input has been acknowledged, kept in
 * the state directory so a restart resumes there.
 *
 * Acknowledgement travels back by tickets. An input takes one ticket per
 * read (one chunk of lines); every record of the chunk that an output or
 * the dead-letter path queues holds a reference to it, dropped when the
 * sink has written the record (or counted it as failed). A ticket whose
 * references are gone and that is the oldest of its source moves the
 * source's acknowledged offset to the end of its last whole line; later
 * tickets wait for older ones, so the offset only ever covers records that
 * are all done. Nothing per record is allocated: a ticket is per chunk.
 *
 * The state file, one per input (STATE_DIR/NAME.checkpoint), is text:
 *
 *   lumberjit checkpoint 1
 *   path /var/log/app.log
 *   device 2049
 *   inode 1835009
 *   fingerprint 1024 9e3779b97f4a7c15
 *   offset 1048576
 *
 * written to a temporary file, fsynced and renamed over the old one, at
 * most every checkpoint_interval_ms and at exit. The fingerprint hashes
 * the file's first bytes (up to 1 KiB): a resume needs the same device,
 * inode and fingerprint, and a file at least as long as the offset;
 * otherwise (rotated, replaced, truncated) the file is read from the start.
 *
 * What a crash can duplicate: the records acknowledged since the last write
 * of the state file (checkpoint_interval_ms of them) and those still in
 * flight then (up to one read of 1 MiB per input and what the outputs
 * held: at most memory_budget in all).
 */
#ifndef LUMBERJIT_CHECKPOINT_H
#define LUMBERJIT_CHECKPOINT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct checkpoint_source checkpoint_source;

typedef struct checkpoint_ticket {
  checkpoint_source *src;
  uint64_t end;          /* offset past the chunk's last whole line */
  uint32_t refs;
  struct checkpoint_ticket *next;
} checkpoint_ticket;

struct checkpoint_source {
  char *state_file;      /* STATE_DIR/NAME.checkpoint; NULL: not tracked */
  char *state_dir;
  char *path;            /* the input's file */
  dev_t device;
  ino_t inode;
  uint32_t fingerprint_len;
  uint64_t fingerprint;
  uint64_t acked;        /* every record before this offset is done */
  uint64_t saved;        /* the offset in the state file */
  bool stuck;            /* a ticket could not be made: never advance */
  checkpoint_ticket *head, *tail;
};

/* Reads the state of input `name` reading `path`; *offset is where to
 * resume: the saved offset if the file is the one it was taken of, else 0.
 * A path that is not a regular file is not tracked (state_file NULL).
 * -1 with a message when the state directory cannot be used. */
int checkpoint_open(checkpoint_source *s, const char *state_dir,
                    const char *name, const char *path, uint64_t *offset,
                    char *err, size_t errlen);
/* A new ticket at the tail, holding one reference for the reader. */
checkpoint_ticket *checkpoint_ticket_new(checkpoint_source *s);
static inline void checkpoint_ref(checkpoint_ticket *t)
{
  if (t) t->refs++;
}
void checkpoint_unref(checkpoint_ticket *t);
/* Writes the state file when the acknowledged offset moved; -1 (logged)
 * when it could not be written. */
int checkpoint_save(checkpoint_source *s);
/* Frees the tickets and strings (the state file stays). */
void checkpoint_close(checkpoint_source *s);

#endif
