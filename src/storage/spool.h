/*
 * spool.h - an output's disk buffer as a stage any output can put in front
 * of its transport: records it cannot hand on now (the peer is away, the
 * broker is down, the network mount is gone) go to disk, which lets their
 * inputs move on, and come back from it, oldest first, once the transport
 * takes records again.
 *
 * It is a disk_queue (disk_queue.h: segments, CRCs, fsync, crash recovery,
 * the max_bytes cap, the cursor) whose records carry where they came from,
 * so a record sent from disk in a later run can still be dead-lettered
 * naming its input and position. A record on disk is laid out as
 *
 *   [u16 input name length][input name][u64 position][u8 flags: 1 offset]
 *   [u32 head length][the record's bytes, its routing head first]
 *
 * little-endian: the layout kafka_disk.c writes, so one reads the other's.
 *
 * How an output uses it (the contract that keeps every record either sent,
 * on disk, or failed with its reason):
 *
 *   putting     spool_put(record, token) for each record the transport
 *               cannot send now; token is the caller's (an input's
 *               checkpoint reference) and stays held. DQ_FULL or
 *               DQ_NO_SPACE: the disk buffer takes nothing now; hold the
 *               inputs and try again later (never drop). DQ_TOO_BIG: the
 *               record can never fit: dead-letter it. A spool that drops
 *               its oldest (spool_drop_oldest) is never DQ_FULL: its
 *               oldest records leave the disk instead, counted
 *               (disk_queue.h).
 *   durability  spool_sync fsyncs what was put, then hands each token back
 *               through the settle callback (failed NULL): only now may the
 *               input's checkpoint pass the record. DQ_NO_SPACE: the tokens
 *               stay held; sync again later. An I/O error: spool_drop_unsynced
 *               settles them as failed (and the output fails).
 *   draining    spool_front shows the oldest record not handed on; the
 *               transport sends it and calls spool_next, which gives the
 *               record's id; spool_ack(id) once the destination took it
 *               (the kernel, the broker), in any order. Records handed on
 *               and not acknowledged when a connection breaks either stay
 *               in the transport's hands to resend, or come again in their
 *               order after spool_rewind.
 *   order       once a record went to disk, later ones must follow it there
 *               until spool_backlog is false, or they would overtake it.
 *   checkpoint  spool_save writes the read position (the first record not
 *               acknowledged) when the pipeline saves its checkpoints; a
 *               crash sends again what was acknowledged since (at least
 *               once), never less.
 *
 * One thread (the loop's) uses a spool, and one spool a directory (the
 * disk queue's lock).
 */
#ifndef LUMBERJIT_SPOOL_H
#define LUMBERJIT_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "disk_queue.h"

typedef struct spool spool;

/* Where a record came from, kept with it on disk. input is the caller's
 * (for spool_put) or the spool's (from spool_front: valid until
 * spool_close). */
typedef struct {
  const char *input;
  uint64_t position;
  bool is_offset;   /* position is a byte offset (else a line number) */
  uint32_t head;    /* the record's first bytes that only route it */
} spool_origin;

/* A record put in the spool is settled: durable (failed NULL), or not to
 * be kept (failed says why). token is what spool_put was given. */
typedef void (*spool_settle_fn)(void *ud, const spool_origin *from,
                                void *token, const char *failed);

typedef struct {
  dq_stats_t dq;          /* what the disk queue holds */
  uint64_t put;           /* records put and made durable by this run */
  uint64_t acked;         /* records acknowledged by this run */
  uint64_t lost;          /* records on disk that were not ours to read */
} spool_stats_t;

/* Opens the spool in dir (disk_queue.h's dq_open: created if missing,
 * locked, scanned). -1 with the reason in err. */
int spool_open(spool **s, const char *dir, uint64_t max_bytes,
               uint64_t segment_bytes, char *err, size_t errlen);
/* when_full = "drop_oldest": see dq_drop_oldest. */
void spool_drop_oldest(spool *s);
/* Appends one record (buffered until spool_sync); token is held until it
 * is settled. Anything but DQ_OK leaves the record out: see the top. */
dq_result spool_put(spool *s, const spool_origin *from, void *token,
                    const char *bytes, size_t len, char *err, size_t errlen);
/* Whether records of so many bytes in all would fit now (dq_fits), the
 * disk queue's headers and ours counted (input names at most name_max
 * bytes). */
bool spool_room(const spool *s, uint64_t records, uint64_t bytes,
                size_t name_max);
/* Records put and not yet durable. */
size_t spool_unsynced(const spool *s);
/* fsyncs what was put, then settles each such record as durable. */
dq_result spool_sync(spool *s, spool_settle_fn fn, void *ud, char *err,
                     size_t errlen);
/* Settles every record put and not yet durable as failed with reason:
 * they may still be on disk and come again in a later run (a duplicate,
 * not a loss). */
void spool_drop_unsynced(spool *s, const char *reason, spool_settle_fn fn,
                         void *ud);
/* The oldest record not handed on: 1 with its origin and bytes (valid
 * until the next call on the spool), 0 when there is none, -1 on an I/O
 * error (err). A damaged record is skipped, logged and counted lost. */
int spool_front(spool *s, spool_origin *from, const char **bytes,
                size_t *len, char *err, size_t errlen);
/* The front record is handed on: its id, for spool_ack. */
uint64_t spool_next(spool *s);
/* The destination took record id: it leaves the disk. */
void spool_ack(spool *s, uint64_t id);
/* Record id, handed on, will not be sent in this run (the stop): it stays
 * on disk for the next, or, dropped meanwhile (spool_drop_oldest), counts
 * as dropped now. */
void spool_unsent(spool *s, uint64_t id);
/* Every record handed on and not acknowledged is read again, in order. */
void spool_rewind(spool *s);
/* Records wait on disk to be handed on: new records go behind them. */
bool spool_backlog(const spool *s);
/* Saves the read position (disk_queue.h's dq_save_cursor). */
int spool_save(spool *s, char *err, size_t errlen);
void spool_stats(const spool *s, spool_stats_t *st);
/* Syncs, saves and closes (s may be NULL). Records put and not settled
 * must have been dropped first. -1 (logged) when syncing failed. */
int spool_close(spool *s);

#endif
