/*
 * output.h - where encoded records go: standard output or a file, written
 * without ever blocking the loop on a slow reader, each record acknowledged
 * once the kernel took all of its bytes.
 *
 * A sink is a queue of whole records: one byte buffer plus, for each record,
 * where it ends and where it came from. Producers append a record's bytes
 * to output_buf() and then output_commit() it. The sink writes from the
 * front of the queue; a record counts as written only when its last byte
 * was accepted by write(2). What happens on a failed write:
 *
 *   EAGAIN        the reader is slow: wait on the loop until the fd is
 *                 writable (pipes, sockets and terminals are written
 *                 non-blocking, through a private open file description
 *                 where the kernel gives one).
 *   ENOSPC/EDQUOT on a regular file: the disk is full. Cut off any torn part
 *                 of a record, so no line is ever half written or merged
 *                 with the next, and retry with a growing back-off (50 ms to
 *                 2 s), logging when it starts and ends. The owner holds its
 *                 inputs meanwhile (output_full()).
 *   anything else the sink fails for good: every queued record, and every
 *                 record committed later, goes to the failed callback with
 *                 the reason, so the owner can dead-letter it and stop.
 *
 * A record of kind dead letter is counted apart, so one sink can carry both
 * an output's records and the dead-letter path.
 *
 * A size cap (output_cap_size, the dead-letter file's): a file that holds
 * max_file_bytes is rotated between two records, as logrotate's size rule
 * does: PATH.1 becomes PATH.2 and so on up to PATH.keep_files, PATH becomes
 * PATH.1 and a new PATH is opened. A record never spans two files. Nothing
 * is deleted: once PATH.keep_files exists and PATH is full, the queued
 * records are refused (they go to the failed callback, the cap as the
 * reason), logged once and then at most every 10 s with the count, until a
 * flush finds room again (the rotated files moved away).
 *
 * Every sink sends its queue through a transport (output_transport):
 * output_open's writes the queue to the fd as above, acknowledging records
 * as write(2) takes them (output_fd.c); another (Kafka's) takes records
 * off the front of the queue and settles each one later, in any order, as
 * delivered or failed. Backpressure, adoption from the workers and failing
 * work the same for all.
 */
#ifndef LUMBERJIT_OUTPUT_H
#define LUMBERJIT_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "buf.h"
#include "latency.h"
#include "message.h"

/* One queued record: its end in the buffer and where it came from. It
 * holds a reference to its input's checkpoint ticket until written or
 * failed (the failed callback may take its own). */
typedef struct {
  size_t end;
  const char *input;
  uint64_t position;
  struct checkpoint_ticket *ack;
  bool is_offset;
  bool dead_letter;
  uint16_t more;     /* a run of whole lines (output_commit_lines): the
                        lines after the first, each after the one before
                        it (position: its offset, or its sequence number) */
  uint32_t head;     /* bytes before the record that only route it (a
                        Kafka output's topic and key); 0 for most sinks */
  uint64_t read_us;  /* msg_origin's: when its input handed it on */
} output_record;

typedef struct output_sink output_sink;

typedef struct {
  /* A record the sink could not write; bytes are the encoded record,
   * without its head (plugin.h: output_route). */
  void (*failed)(void *ud, output_sink *o, const output_record *r,
                 const char *bytes, size_t len, const char *reason);
  /* The sink drained, filled up, or failed: see output_full/idle/failed. */
  void (*changed)(void *ud, output_sink *o);
  void *ud;
} output_events;

/* What a transport holds and has done, for the metrics (metrics.h). */
typedef struct {
  uint64_t sent;              /* taken off the queue and handed on */
  uint64_t delivered, refused;
  uint64_t in_flight, in_flight_bytes; /* handed on, not yet settled */
  bool has_disk_buffer;
  uint64_t disk_records, disk_bytes;   /* in its disk buffer now */
  uint64_t disk_put, disk_delivered;   /* put in it; delivered from it */
  double latency_ms[5];       /* delivery: p50, p95, p99, p99.9, max */
  uint64_t connects, connect_failures; /* a connection's: made, failed */
  uint64_t disk_dropped;      /* dropped from the disk buffer when full
                                 (when_full = "drop_oldest") */
} output_tx_stats;

/* What a sink sends its records with: the fd writer's (output_open), or
 * an output type's own (output_open_transport). */
typedef struct {
  /* Takes queued records (output_front, output_take) while it can. When
   * it can take no more for now it sets the sink OUTPUT_WAITING, and
   * calls output_wake once it can again. */
  void (*send)(output_sink *o);
  /* It holds records it took and has not yet settled. */
  bool (*busy)(const output_sink *o);
  /* The sink fails (output_fail): every record it holds is settled now,
   * as failed or (a disk queue) kept for a later run; it may also take
   * the queued records that way first. */
  void (*fail)(output_sink *o, const char *reason);
  /* The pipeline saved its checkpoints: the transport saves its own
   * state (a disk buffer's read position). NULL: it keeps none. */
  void (*checkpoint)(output_sink *o);
  /* What it adds to the run's summary: a line, or "" for none. NULL:
   * nothing. */
  void (*summary)(output_sink *o, char *line, size_t len);
  /* Its figures for the metrics (output_tx_stats); NULL: it holds no
   * records of its own to report. */
  void (*stats)(const output_sink *o, output_tx_stats *st);
  void (*close_handles)(output_sink *o);
  /* Frees its state; -1 when something it held could not be kept. */
  int (*close)(output_sink *o);
  /* Optional: writes what is queued, then len bytes of whole lines
   * straight from the caller's buffer, and says how many of those it
   * wrote (all, or those before a write that did not take the rest; none
   * unless the queue went all out). */
  size_t (*write_lines)(output_sink *o, const char *bytes, size_t len);
} output_transport;

typedef enum {
  OUTPUT_READY,     /* writes go straight on */
  OUTPUT_WAITING,   /* waits for the fd to become writable, or for the
                       transport to take more */
  OUTPUT_RETRYING,  /* disk full: waits for the retry timer */
  OUTPUT_FAILED     /* every record fails */
} output_state;

struct output_sink {
  const char *name;       /* for messages: "output 'x'" */
  char *path;             /* NULL: standard output */
  int fd;                 /* what is written: may be a private reopen */
  int restore_fd;         /* fd whose flags we changed, or -1 */
  int restore_flags;
  bool own_fd;            /* fd is ours to close */
  bool pollable;          /* pipe, socket, terminal: wait with poll */
  bool truncatable;       /* regular file: a torn tail can be cut off */

  uv_loop_t *loop;
  uv_poll_t poll;
  uv_timer_t retry;
  bool handles_open;
  output_events ev;

  buf pending;            /* queued bytes; those before head are written */
  size_t head;
  size_t boundary;        /* start of the first record not yet written */
  size_t committed;       /* end of the last committed record */
  output_record *recs;    /* queued records, from rec_head to nrecs */
  size_t rec_head, nrecs, recs_cap;
  size_t flush_bytes, high_water, low_water;

  output_state state;
  bool full;              /* above high water, not yet below low */
  unsigned backoff_ms;
  int in_flush;           /* guards against re-entry from callbacks */
  char error[256];        /* why it failed or waits for space */
  bool failure_reported;  /* the owner's: it has logged the failure */
  bool collect;           /* only collects records (a worker's) */
  const output_transport *tx; /* NULL: writes fd */
  void *tx_state;         /* the transport's */

  uint64_t max_file_bytes; /* the size cap; 0: none */
  unsigned keep_files;    /* rotated files kept under the cap */
  uint64_t file_bytes;    /* in the file written now */
  uint64_t records_refused; /* over the cap */
  uint64_t refused_logged_ms, refused_logged; /* when, and how many, last */

  uint64_t records_written, dead_letters_written, bytes_written;
  uint64_t synced_bytes;  /* of bytes_written, those a checkpoint's sync
                             made durable (output_synced) */
  latency_hist latency;   /* from read_us to written or delivered */
  uint64_t records_lost;  /* a collector ran out of memory for them */
  uint64_t records_released; /* left to their inputs (output_release) */
};

/* path NULL: standard output. name names the sink in log lines. With
 * lines (records end with "\n"), a file that ends in a partial line, left
 * by a run that was killed while writing, is cut back to its last whole
 * line: that record was not acknowledged, so it will come again. */
int output_open(output_sink *o, uv_loop_t *loop, const char *name,
                const char *path, size_t flush_bytes, bool lines,
                output_events ev, char *err, size_t errlen);
/* A sink whose records go to a transport (output_transport), not an fd. */
void output_open_transport(output_sink *o, uv_loop_t *loop, const char *name,
                           const output_transport *tx, void *tx_state,
                           output_events ev);
/* A sink that writes nothing: it collects records for output_adopt (a
 * worker thread's side of a real sink). It takes no checkpoint
 * references; output_adopt does. */
void output_collector_init(output_sink *o);
/* Moves every record of collector `from` into o, in order, as if each was
 * committed to o now; empties `from` and keeps its memory. */
void output_adopt(output_sink *o, output_sink *from);
/* Where the next record's bytes are appended. */
static inline buf *output_buf(output_sink *o) { return &o->pending; }
/* Ends the record appended since the last commit; writes once flush_bytes
 * are queued. On a failed sink the record fails at once. */
void output_commit(output_sink *o, const msg_origin *from, bool dead_letter);
/* The same for a record whose first `head` bytes route it (see
 * output_record). */
void output_commit_routed(output_sink *o, const msg_origin *from,
                          uint32_t head);
/* Whether o takes runs of lines (output_commit_lines): an fd sink of
 * lines with no size cap. */
bool output_takes_lines(const output_sink *o);
/* Commits count whole lines at once, each ending in its LF, from
 * from->bytes (from->len bytes): the first at from->position, the others
 * after it (input.h: input_handler.lines). When nothing waits before them
 * and they come to flush_bytes or more, they are written from there, not
 * copied; else they are queued as one record of the run. Either way each
 * line counts as a record, and one that fails goes to the failed callback
 * alone. */
void output_commit_lines(output_sink *o, const msg_origin *from,
                         size_t count);
/* Caps a file sink's file at max_bytes, rotating it through keep rotated
 * files (see above). */
void output_cap_size(output_sink *o, uint64_t max_bytes, unsigned keep);
/* Sets the high-water mark (see output_full); the low-water mark is a
 * quarter of it. Neither goes below twice flush_bytes. */
void output_set_high_water(output_sink *o, size_t bytes);
/* Records the queue holds (a run's lines each count). */
size_t output_queued_records(const output_sink *o);
/* Bytes the queue holds, its record index included. */
size_t output_queued(const output_sink *o);
/* Writes what the fd takes now. */
void output_flush(output_sink *o);
/* Queued bytes reached the high-water mark: hold the inputs. Stays true
 * until they are back under the low-water mark. */
bool output_full(const output_sink *o);
/* Nothing queued and nothing to wait for. */
bool output_idle(const output_sink *o);
/* Fails every queued record with reason, then writes nothing more. */
void output_fail(output_sink *o, const char *reason);
/* For transports. The first queued record not yet taken, with its bytes
 * (its head included); NULL when there is none. */
const output_record *output_front(const output_sink *o, const char **bytes,
                                  size_t *len);
/* The same for the record n places behind the front one. */
const output_record *output_peek(const output_sink *o, size_t n,
                                 const char **bytes, size_t *len);
/* Takes the front record off the queue: the transport holds its
 * checkpoint reference until it settles it with one of the two below. */
void output_take(output_sink *o);
/* The record was delivered: it counts as written, its latency measured up
 * to now_us (uv_hrtime in microseconds, which the transport has read). */
void output_delivered(output_sink *o, const output_record *r, uint64_t now_us);
/* The record failed: bytes (without its head) go to the failed
 * callback with the reason. */
void output_undeliverable(output_sink *o, const output_record *r,
                          const char *bytes, size_t len, const char *reason);
/* The record was not delivered, and is not failed either: it stays with
 * its input, whose checkpoint stops before it (checkpoint_release), so the
 * next run reads it and sends it again, as a file's reader does. Only for a
 * record whose input can (checkpoint_rereadable(r->ack)); a stopping
 * transport uses it where it would otherwise dead-letter what it holds. */
void output_release(output_sink *o, const output_record *r);
/* For a transport's summary line: appends what its disk buffer took and
 * holds (st) and the records left for the next run to read again. */
void output_summary_tail(const output_sink *o, const output_tx_stats *st,
                         char *line, size_t len);
/* The transport can take records again: a waiting sink goes on. */
void output_wake(output_sink *o);
/* fsyncs and reopens the path (log rotation); stdout is left alone. */
int output_reopen(output_sink *o);
/* A descriptor of o's file (a dup, for the caller to close) when the file
 * took bytes since the sync output_synced last told of, with *mark the
 * bytes written so far: fdatasync it before a checkpoint counts on them.
 * -1: none (not a file, nothing new, no descriptor left). */
int output_unsynced_fd(const output_sink *o, uint64_t *mark);
/* The file is synced up to mark (output_unsynced_fd's). */
void output_synced(output_sink *o, uint64_t mark);
/* Closes the loop handles; call before the loop's last run. */
void output_close_handles(output_sink *o);
/* fsyncs and closes, once the loop has finished closing the handles;
 * returns -1 when fsync reported an error. */
int output_close(output_sink *o);

#endif
