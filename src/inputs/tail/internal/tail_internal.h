/*
 * tail_internal.h - what tail.c (files, scans, reading), tail_copy.c (new
 * files: copies or not) and tail_notify.c (inotify watches) share. See
 * tail.h for the behaviour, tail_identity.h for the identity rule.
 */
#ifndef LUMBERJIT_TAIL_INTERNAL_H
#define LUMBERJIT_TAIL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "tail.h"
#include "input_host.h"
#include "tail_identity.h"

typedef struct tail tail;
typedef struct tail_notify tail_notify;

typedef struct tail_file {
  struct tail_file *next;
  tail *t;
  char *path;              /* where it was opened (or last found) */
  dev_t device;            /* what it is: tail_identity.h */
  ino_t inode;
  checkpoint_source *ckpt; /* acknowledged offset; NULL: never opened */
  tail_signature sig;      /* the bytes read: up to sig.offset */
  tail_recent recent;      /* the last of them, while it is open */
  uint64_t offset;         /* where the next opening reads from */
  uint64_t size;           /* at the last look */
  struct timespec closed_mtime; /* its mtime when it was closed: a file
                              rewritten since to the length read is not
                              the same (tail_scan.c: look_at_closed) */
  uint64_t changed_ms;     /* loop time it last grew */
  bool changed;            /* an inotify event came: read once the batch
                              of events is taken (tail_notify.c) */
  pl_source *src;          /* reading it; NULL: closed */
  bool watched;            /* its inotify watch, wd, is on while it is open
                              (tail_notify.c) */
  int wd;
  bool found;              /* the current scan found it */
  bool moved;              /* no pattern leads to it any more */
  uint64_t moved_ms;       /* loop time that was first seen */
  bool at_start;           /* found by the first scan: read from `offset`
                              (its size then, or 0 with read_from_head) */
  bool truncated;          /* read it again from 0 once finished */
  bool waiting;            /* refused a slot or a descriptor: counted */
  bool unreadable;         /* open(2) refused it: logged, counted */
  int young_fd;            /* new, held open until it is known whether it
                              is a copy (tail_copy.c) */
  uint64_t young_since_ms;
  uint64_t found_ms;       /* loop time it was first found: whether it is
                              a copy is judged as of then, however long it
                              waits for a slot */
} tail_file;

/* A file truncated a moment ago (copytruncate copies, then truncates): a
 * new file holding what it held is its copy, read from `resume`. */
typedef struct {
  dev_t device;            /* the truncated file is no copy of itself */
  ino_t inode;
  tail_signature sig;
  tail_recent recent;
  uint64_t resume;         /* past its last whole line read */
  uint64_t noted_ms;       /* loop time the truncation was seen */
} truncated_file;

/* Enough for the truncations seen while new files wait for a slot. */
#define TRUNCATED_KEPT 64
/* How soon a young file is looked at again, and how long one that may be
 * a copy still being written waits. */
#define YOUNG_FILE_WAIT_MS 100

struct tail {
  pl_input *pi;
  const char *name;        /* the input's */
  checkpoint_store *store; /* the pipeline's */
  uv_loop_t *loop;
  config_tail cfg;         /* paths and exclude are copies */
  uv_timer_t scan, soon;   /* every scan_interval_ms; after an event */
  tail_notify *notify;     /* the pipeline's, from start to close */
  tail_file *files;
  size_t open_files;       /* reading, or young */
  uint64_t fd_room;        /* descriptors it may still take (fd_limit.h) */
  size_t nwaiting;         /* files with `waiting` set */
  uint64_t waited, unreadable; /* counters: files that had to wait, files
                                  open(2) refused */
  truncated_file truncated[TRUNCATED_KEPT]; /* a ring */
  size_t ntruncated;
  bool handles, first_scan, stopping, warned_slots, warned_fds;
  bool listed_all;         /* the scan under way listed every directory */
  bool warned_unlisted;    /* one could not be listed: logged, until all are */
  bool continues;            /* config_plugin's: after a reload */
};

/* tail.c: a file's descriptor and slot, and its reading. */
/* Whether f may take a slot and a descriptor now; if not, it waits (and
 * is counted) until a scan finds room. */
bool tail_may_open(tail *t, tail_file *f);
/* Opens path for f (a slot taken); -1 when it waits or cannot be read. */
int tail_open_file(tail *t, tail_file *f, const char *path, struct stat *sb);
/* f no longer waits for a slot. */
void tail_stop_waiting(tail *t, tail_file *f);
/* Starts reading f on fd from f->offset: a source of its own. */
void tail_start_reading(tail *t, tail_file *f, int fd);
/* Starts reading f on fd (open on it, a slot taken) from offset (0 if the
 * file is shorter): its first opening. */
void tail_start_at(tail *t, tail_file *f, int fd, uint64_t offset);
void tail_unwatch_file(tail_file *f);
/* Logs that f was truncated (in: its reader, holding a partial line). */
void tail_log_truncated(const tail_file *f, const input *in);

/* tail_scan.c: the first scan, then one every scan_interval_ms. */
void tail_scan_start(tail *t);
/* A scan as soon as the loop comes round (a file came, went or moved). */
void tail_schedule_scan(tail *t);
/* A scan within ms, unless one is due sooner (a directory's events). */
void tail_schedule_scan_within(tail *t, uint64_t ms);
/* A file inotify says came into a watched directory: found now if one
 * of t's patterns matches it, as a scan would find it. */
void tail_found_created(tail *t, const char *path);
/* Forgets f: its watch, slot and checkpoint go. */
void tail_free_file(tail *t, tail_file *f);
/* f no longer holds what was read from it: it is forgotten (what it held
 * kept for its copy, tail_note_truncated) and the file at its path is
 * found anew. */
void tail_found_truncated(tail *t, tail_file *f);

/* tail_copy.c: settles a young file if it tells what it is (a copy of a
 * truncated file, or a new file), or once it may wait no more. */
void tail_decide(tail *t, tail_file *f, uint64_t now);
/* f was truncated: remembers what it held, so that its copy is known (its
 * last bytes read are handed over). */
void tail_note_truncated(tail *t, tail_file *f);

/* tail_notify.c: the pipeline's inotify watches, shared by its
 * tail_inputs. Start: t's pattern directories are watched (a file created
 * there is found at once) and its files can be; stop: none of them is. */
void tail_notify_start(tail *t);
void tail_notify_stop(tail *t);
/* Takes the events queued now and reads what they name, resting or not. */
void tail_notify_flush(tail *t);
/* f is watched while it is open: a change has it read. */
void tail_watch_file(tail_file *f);


#endif
