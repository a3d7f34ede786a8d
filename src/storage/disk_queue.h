/*
 * disk_queue.h - an output's buffer on disk: records appended while the
 * destination is down or slow, read back in order once it takes them
 * again, and deleted when acknowledged, in any order.
 *
 * A queue is a directory (created with mode 0700 if missing) of
 * append-only segment files named by a 20-digit sequence number:
 *
 *   00000000000000000007.seg   "LJDQ", u32 format version (2)       8 bytes
 *                              then records, back to back:
 *                              u32 payload length                   4 bytes
 *                              u32 CRC-32 (zlib's) of the length    4 bytes
 *                                  field and the payload
 *                              the payload
 *   cursor                     text: "lumberjit disk queue cursor 2",
 *                              "segment N", "offset N": where the first
 *                              unacknowledged record starts; "check X":
 *                              the CRC-32 of those lines (version 1,
 *                              without it, is read too)
 *   lock                       empty: locked while a queue has it open
 *
 * Version 1 segments (the CRC of the payload alone, which 8 zero bytes
 * pass as an empty record) are read, and never appended to: the next
 * append starts a version 2 segment.
 *
 * Integers are little-endian. Records go to the last segment until one
 * would take it past segment_bytes; then a new segment is created (and
 * the one before it fdatasynced). A segment is deleted once
 * every record in it was acknowledged, the last one included: a queue
 * that drains gives its disk back, and the next append creates a segment
 * again. The directory is fsynced whenever a segment is created or
 * deleted. Files of other names are left alone.
 *
 * Space: max_bytes caps the size of all segment files together, records
 * read but not yet acknowledged included. An append that would pass it
 * writes nothing and says DQ_FULL (hold the inputs, try again once acks
 * freed space); a record that could never fit (past max_bytes or a
 * segment's size, with their headers) says DQ_TOO_BIG (dead-letter it).
 *
 * Unless the queue drops its oldest records (dq_drop_oldest, the
 * operator's when_full = "drop_oldest": an edge box keeps the newest
 * data): then an append that would pass max_bytes deletes the oldest
 * segment first, as many times as it takes, and its records not yet
 * acknowledged count as dropped (dq_stats) and are logged, the first drop
 * and then at most a line every 10 s with the count. Their inputs moved on
 * when they were made durable, so nothing else settles them. A dropped
 * record the caller had read and still holds (in flight) counts as
 * dropped only if it never comes back: dq_ack of it says the destination
 * took it after all, and dq_rewind or dq_forget_dropped count the rest,
 * which will not be read again. The segment being appended to is never
 * dropped, so max_bytes must be at least twice segment_bytes.
 *
 * Writing: appends are buffered (64 KiB) and written out when the buffer
 * is full, when a segment fills up, and by dq_sync, which then fdatasyncs
 * them; dq_read sees a record as soon as it is appended. When the disk
 * itself is full (ENOSPC, EDQUOT), the records the file took whole stay,
 * the torn part of the next is cut off (a crash then finds the segment
 * ending on a record), the rest stay buffered, and the call says
 * DQ_NO_SPACE: treat it as full and try again later.
 *
 * Acknowledgement: dq_read hands out each record with an id, its place in
 * the queue, which stays the same when the record is read again after
 * dq_rewind. dq_ack takes ids in any order; the queue keeps the
 * contiguous acknowledged prefix (a ring of the ids in flight: 4 bytes
 * each, grown by doubling, never per record) and frees segments behind it.
 *
 * Restart: the cursor file names the segment and offset of the first
 * unacknowledged record, as of the last dq_save_cursor (written to
 * cursor.tmp, fsynced, renamed, directory fsynced). dq_open deletes the
 * segments before it and reads again from it: every record not known to
 * be acknowledged comes again (at least once); what a crash duplicates is
 * what was acknowledged since the last save. Without a cursor file, or
 * with one whose check fails (a power loss changed it), the queue replays
 * every segment there is.
 *
 * Damage, found when dq_open scans the segments from the cursor's on
 * (each record's length and CRC checked): a bad record in the last
 * segment is a torn tail (a power loss mid-append): the segment is cut
 * back to its last good record and the bytes cut, and the records in them
 * (the bad one and those its length fields still lead to), are logged;
 * the bytes are counted (torn_bytes). A bad record in an earlier segment
 * is corruption: the segment is cut there too, since nothing after it can
 * be trusted, and the records lost and their bytes are logged and
 * counted. A segment whose bytes are a beginning of a header (a crash
 * while creating it) holds nothing and is deleted. One whose header is
 * not ours (a power loss changed it, or a newer lumberjit's format
 * version) is renamed NAME.damaged, logged, and its bytes counted as
 * corrupt: refusing to start would stop an edge box collecting. A record
 * that changes under a running queue makes dq_read fail; reopening
 * repairs it.
 *
 * One thread (the loop's) uses a queue, and one queue a directory:
 * dq_open takes an exclusive flock on the file "lock" in it before
 * reading anything, and fails, saying another process uses it, while
 * another queue (of this process or another) holds it; dq_close, or the
 * process's end (a crash included), lets it go.
 *
 * Reads go through a 256 KiB window of the segment being read, so reading
 * back a record, like appending one, costs a copy and its CRC, not a
 * system call.
 */
#ifndef LUMBERJIT_DISK_QUEUE_H
#define LUMBERJIT_DISK_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* The largest payload a record may have, whatever the segment size. */
#define DQ_RECORD_MAX 0x7fffffffu

typedef struct disk_queue disk_queue;

typedef enum {
  DQ_OK,
  DQ_FULL,      /* max_bytes reached: nothing written, try after acks */
  DQ_TOO_BIG,   /* the record can never fit: nothing written */
  DQ_NO_SPACE,  /* the disk is full: try again later */
  DQ_ERROR      /* an I/O error, described in err */
} dq_result;

typedef struct {
  uint64_t bytes;           /* of all segment files, buffered appends too */
  uint64_t records;         /* not acknowledged: unread or in flight */
  uint64_t unread;          /* to be read (again, after a rewind) */
  uint64_t segments;
  uint64_t corrupt_records; /* cut from earlier segments at open */
  uint64_t corrupt_bytes;
  uint64_t torn_bytes;      /* cut from the end of the last segment */
  uint64_t dropped;         /* records dropped by dq_drop_oldest's policy */
} dq_stats_t;

/* Opens (creating it if missing) the queue in dir, locks it and scans it:
 * see the top of the file. max_bytes and segment_bytes must be at least
 * 64. -1 with a message naming the file when the directory cannot be
 * used, another process uses it, or it holds a segment that is not ours. */
int dq_open(disk_queue **q, const char *dir, uint64_t max_bytes,
            uint64_t segment_bytes, char *err, size_t errlen);
/* From now on a full queue drops its oldest segment to take an append
 * (see the top of the file); max_bytes must be at least twice
 * segment_bytes. */
void dq_drop_oldest(disk_queue *q);
/* Whether bytes more, in records, fit now: under max_bytes, or, for a
 * queue that drops its oldest, in what dropping leaves room for. */
bool dq_fits(const disk_queue *q, uint64_t bytes);
/* Appends one record (buffered, not yet durable: see dq_sync). Anything
 * but DQ_OK leaves the record out; DQ_NO_SPACE and DQ_ERROR come from
 * writing out the records appended before it (see the top of the file),
 * with err saying why. */
dq_result dq_append(disk_queue *q, const void *data, size_t len, char *err,
                    size_t errlen);
/* Writes out and fdatasyncs what was appended since the last sync
 * (segments that filled up meanwhile were synced when they did): call it
 * before telling inputs their records are safe. DQ_NO_SPACE: the disk is
 * full; the records not yet written stay buffered, so do not acknowledge
 * them yet, and call again later. DQ_ERROR: an I/O error (err). */
dq_result dq_sync(disk_queue *q, char *err, size_t errlen);
/* The next unread record, oldest first: its payload replaces into's
 * contents and *id names it for dq_ack. 1: a record; 0: none unread; -1:
 * out of memory, an I/O error, or a record that changed on disk since
 * dq_open checked it (err says which). */
int dq_read(disk_queue *q, buf *into, uint64_t *id, char *err,
            size_t errlen);
/* The record is done with (sent, or dead-lettered by the caller). Ids
 * may come in any order; one not in flight (acknowledged already, or never
 * read) is ignored. Deletes the segments the acknowledged prefix passed,
 * logging a failed unlink. */
void dq_ack(disk_queue *q, uint64_t id);
/* Record id, read and held by the caller, was dropped (see the top of
 * the file) and will not be handed on: it counts as dropped now. false
 * when it was not dropped: the caller goes on with it. */
bool dq_forget_dropped(disk_queue *q, uint64_t id);
/* Every record read but not acknowledged is unread again, to be read
 * (with its id) in its order; acknowledged ones are not read again. */
void dq_rewind(disk_queue *q);
/* Writes the cursor file if the acknowledged prefix moved since the last
 * save. -1 with a message when it could not be written. */
int dq_save_cursor(disk_queue *q, char *err, size_t errlen);
/* What the queue holds now, and what opening it cut off. */
void dq_stats(const disk_queue *q, dq_stats_t *st);
/* Syncs, saves the cursor and frees the queue (q may be NULL); -1 (logged)
 * when syncing or saving failed (buffered records not written are lost:
 * dq_sync never said they were safe). */
int dq_close(disk_queue *q);

#endif
