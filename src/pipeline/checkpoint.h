/*
 * checkpoint.h - how far each file an input reads has been acknowledged,
 * kept in the state directory so a restart resumes there.
 *
 * A source is one file one input reads, known by its identity: device,
 * inode and a fingerprint (a hash of its first bytes, up to 1 KiB; a
 * tail_input's covers only bytes it read), so that a rotated file is still
 * itself under its new name, and a new file that got an old one's inode is
 * not. The store is the state file, one for the
 * whole pipeline, so a checkpoint costs one fsync however many inputs and
 * files there are.
 *
 * Acknowledgement travels back by tickets. A source hands out one ticket
 * per read (one chunk of lines); every record of the chunk that an output
 * or the dead-letter path queues holds a reference to it, dropped when the
 * sink has written the record (or counted it as failed). A ticket whose
 * references are gone and that is the oldest of its source moves the
 * source's acknowledged offset to the end of its last whole line; later
 * tickets wait for older ones, so the offset only ever covers records that
 * are all done. Nothing per record is allocated: a ticket is per chunk.
 *
 * The state file (STATE_DIR/checkpoints) is text: a known line per input
 * that ran with it (with the hash of its text), then one block per input
 * and file:
 *
 *   lumberjit checkpoint 4
 *   known app 5a3c9e0f7d21b864
 *   input app
 *   file /var/log/app.log
 *   device 2049
 *   inode 1835009
 *   fingerprint 1024 9e3779b97f4a7c15
 *   offset 1048576
 *   window 1049000 128 5bd1e9955bd1e995
 *   check 3a1f0c9d2e4b5a67
 *   end 1
 *
 * written to a temporary file, fsynced and renamed over the old one (and
 * the directory fsynced), at most every checkpoint_interval_ms and at exit.
 * (the window line only for a tail_input's files: see checkpoint_window).
 * A write that fails (out of descriptors or space) leaves the old one
 * whole, removes the temporary file and is tried again at the next
 * interval, the offsets kept: logged at its first failure and once it
 * succeeds again, and at exit if it never did.
 * Each block ends with a check, the FNV-1a hash of its lines, and the file
 * with the number of blocks: a file a power loss cut short or changed
 * (an SD card that tore or reordered its writes) keeps the blocks before
 * the damage, and the files of the rest are read from their head, logged
 * (duplicates, never a loss). Version 3 files (without known lines: an
 * input was known by its blocks alone, so a run that ended following no
 * file forgot it) and version 2 files (without checks either) are read.
 * A resume needs the same device, inode, fingerprint and window and a file
 * at least as long as the offset; otherwise (rotated away, replaced,
 * truncated) the file is new to the input.
 *
 * What a crash can duplicate: the records acknowledged since the last write
 * of the state file (checkpoint_interval_ms of them) and those still in
 * flight then (up to one read per file and what the outputs held: at most
 * memory_budget in all).
 */
#ifndef LUMBERJIT_CHECKPOINT_H
#define LUMBERJIT_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define CHECKPOINT_FINGERPRINT_MAX 1024
#define CHECKPOINT_WINDOW_MAX 128

typedef struct checkpoint_source checkpoint_source;
typedef struct checkpoint_store checkpoint_store;

/* A reader's last bytes read, [end - len, end), end at or past the
 * acknowledged offset: a resume needs them too, so that a file truncated
 * and rewritten past the offset while lumberjit was down, with the same
 * first bytes, is not resumed in the middle of a new line. len 0: none (a
 * file_input's files). */
typedef struct {
  uint64_t end;
  uint32_t len;
  uint64_t hash;         /* a fingerprint of those bytes */
} checkpoint_window;

typedef struct checkpoint_ticket {
  checkpoint_source *src;
  uint64_t end;          /* offset past the chunk's last whole line */
  uint32_t refs;
  bool released;         /* a record of it was let go undone: the offset
                            never passes the ticket (checkpoint_release) */
  struct checkpoint_ticket *next;
} checkpoint_ticket;

struct checkpoint_source {
  checkpoint_store *store;
  checkpoint_source *next;  /* in its store */
  const char *input;     /* the input's name (the caller keeps it) */
  char *path;            /* where the file was last seen */
  dev_t device;
  ino_t inode;
  uint32_t fingerprint_len;
  uint64_t fingerprint;
  checkpoint_window window; /* its hash only as loaded; */
  unsigned char window_bytes[CHECKPOINT_WINDOW_MAX]; /* once set, its bytes, */
  bool window_set;       /* hashed as they are saved, not at every read */
  uint64_t acked;        /* every record before this offset is done */
  bool stuck;            /* a ticket could not be made: never advance */
  bool retired;          /* in the store's retired list */
  bool changed;          /* the state file knew its device and inode, but
                            not these bytes: truncated or replaced since,
                            all it holds is new; or the state file knows
                            its input but not it (it came while lumberjit
                            was down), or was damaged and may have known
                            it */
  checkpoint_ticket *head, *tail;
};

struct checkpoint_store {
  char *state_file;      /* NULL: nothing is saved (no state_dir) */
  char *state_dir;
  checkpoint_source *sources;
  checkpoint_source *retired; /* still holding tickets */
  struct saved_file *saved; /* read from the state file, not yet claimed */
  struct saved_input *inputs; /* those that ran with this state_dir */
  bool dirty;            /* changed since the state file was written */
  unsigned failed_saves; /* since the state file was last written */
  bool damaged;          /* the state file was cut short or changed: the
                            blocks past the damage were dropped */
};

/* Reads STATE_DIR/checkpoints, if any; state_dir NULL makes a store that
 * tracks acknowledgements but saves nothing. -1 with a message when the
 * state directory cannot be used. */
int checkpoint_store_open(checkpoint_store *st, const char *state_dir,
                          char *err, size_t errlen);
/* input runs with this store: the state file names it from the next save
 * on, so that a later run takes the files it finds at its start for new
 * ones (they came while lumberjit was down), even when this run followed
 * no file (an empty directory) or every file it followed went away. */
void checkpoint_know_input(checkpoint_store *st, const char *input);
/* Starts tracking, for `input`, the regular file open on fd (found at
 * path): *offset is its acknowledged offset from the state file if it is
 * the very file it was taken of, else 0 with *known false (and the
 * source's `changed` says whether it is new since the last run). NULL
 * when out of memory. */
checkpoint_source *checkpoint_track(checkpoint_store *st, const char *input,
                                    const char *path, int fd,
                                    const struct stat *sb, uint64_t *offset,
                                    bool *known);
/* The fingerprint of no bytes, and a fingerprint with more bytes after
 * those it covers: a reader builds one up as it reads. */
#define CHECKPOINT_FINGERPRINT_EMPTY UINT64_C(0xcbf29ce484222325)
uint64_t checkpoint_fingerprint_add(uint64_t fp, const void *bytes, size_t len);
/* The fingerprint is now of the first len bytes (a reader's: bytes it
 * read, so that a resume needs the very bytes it read). */
void checkpoint_set_fingerprint(checkpoint_source *s, uint32_t len,
                                uint64_t fp);
/* The reader's last bytes read are the len bytes before end. */
void checkpoint_set_window(checkpoint_source *s, uint64_t end,
                           const void *bytes, uint32_t len);
/* The file is now found at path. */
void checkpoint_moved(checkpoint_source *s, const char *path);
/* Stops tracking s (its file is gone, or is read again from 0): it leaves
 * the state file at the next save, and is freed once the records that
 * hold its tickets are done. */
void checkpoint_retire(checkpoint_store *st, checkpoint_source *s);

/* A new ticket at the tail, holding one reference for the reader. */
checkpoint_ticket *checkpoint_ticket_new(checkpoint_source *s);
static inline void checkpoint_ref(checkpoint_ticket *t)
{
  if (t) t->refs++;
}
void checkpoint_unref(checkpoint_ticket *t);
/* Whether the next run reads t's records again if they are not done: its
 * source's offset is saved (a state_dir) and it is still tracked (not
 * retired). A stream (socket, standard input) has no ticket: false. */
bool checkpoint_rereadable(const checkpoint_ticket *t);
/* Drops a reference of a record that was not done and will not be in
 * this run (an output stopped before its destination took it): the
 * source's offset stops before t's chunk for good, so the next run reads
 * the record (and the rest of its chunk) again. Only for a rereadable t. */
void checkpoint_release(checkpoint_ticket *t);

/* Writes the state file when an offset moved or a file came or went; -1
 * when it could not be written: the old one stays whole, the store stays
 * dirty for the next save, and only the first failure of a run of them is
 * logged (and the save that ends it). */
int checkpoint_save(checkpoint_store *st);
/* The same in three steps, so the writing may run off the loop thread
 * (pipeline.c syncs the output files first): checkpoint_snapshot takes
 * what the state file would hold now, in *len bytes to free, and leaves
 * the store clean (NULL: nothing to save, or no memory, which it logs
 * as checkpoint_saved does and which leaves the store dirty); checkpoint_write_snapshot writes them, on any thread, and says
 * which step failed (NULL: none; *err its errno); checkpoint_saved, back
 * on the loop, counts and logs the outcome, making the store dirty again
 * when it failed (-1). */
char *checkpoint_snapshot(checkpoint_store *st, size_t *len);
const char *checkpoint_write_snapshot(const checkpoint_store *st,
                                      const char *bytes, size_t len,
                                      int *err);
int checkpoint_saved(checkpoint_store *st, const char *failed, int err);
/* Frees the sources, tickets and strings (the state file stays). */
void checkpoint_store_close(checkpoint_store *st);

#endif
