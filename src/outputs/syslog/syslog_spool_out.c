/*
 * syslog_spool_out.c - the syslog_output's disk buffer (spool.h): the
 * queue's records, and those a broken connection held, go there while
 * the receiver is away; syslog_stream_out.c and syslog_udp_out.c send
 * them back out first once it is there again.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "checkpoint.h"
#include "log.h"
#include "syslog_internal.h"

#define DISK_RETRY_MS 1000
#define NAME_ROOM 256

void so_log_backlog(syslog_output *so, const char *what)
{
  spool_stats_t st;

  spool_stats(so->spool, &st);
  log_msg("%s: %s (%" PRIu64 " records, %" PRIu64 " bytes in the disk "
          "buffer)", so->name, what, st.dq.records, st.dq.bytes);
}

static spool_origin origin_of(const output_record *r)
{
  return (spool_origin){r->input, r->position, r->is_offset, 0};
}

/* spool_sync's and spool_drop_unsynced's: a record on disk lets its input
 * move on; one that could not be kept is dead-lettered. */
static void settle(void *ud, const spool_origin *from, void *token,
                   const char *failed)
{
  syslog_output *so = ud;
  output_record r = {0};

  if (!failed) {
    checkpoint_unref(token);
    return;
  }
  r.input = from->input;
  r.position = from->position;
  r.is_offset = from->is_offset;
  r.ack = token;
  output_undeliverable(so->o, &r, "", 0, failed);
}

void so_sync_spilled(syslog_output *so)
{
  char err[256];
  dq_result res;

  if (!so->spool || spool_unsynced(so->spool) == 0) return;
  res = spool_sync(so->spool, settle, so, err, sizeof err);
  if (res == DQ_NO_SPACE) {
    if (!so->full_logged)
      so_log_backlog(so, "no space left to write the disk buffer; holding "
                     "the inputs");
    so->full_logged = true;
    so_wake_later(so, DISK_RETRY_MS);
  } else if (res != DQ_OK) {
    spool_drop_unsynced(so->spool, err, settle, so);
    output_fail(so->o, err);
  }
}

bool so_holds_direct(const syslog_output *so)
{
  for (size_t i = so->nents; i > so->ent_head; i--)
    if (!so->ents[i - 1].from_disk) return true;
  return false;
}

/* One record to the disk buffer; false when it takes none now. */
static bool spill(syslog_output *so, const output_record *r,
                  const char *payload, size_t len, bool *taken)
{
  spool_origin from = origin_of(r);
  char err[256];
  dq_result res = spool_put(so->spool, &from, r->ack, payload, len, err,
                            sizeof err);

  *taken = res == DQ_OK || res == DQ_TOO_BIG;
  switch (res) {
  case DQ_OK:
    so->full_logged = false;
    if (!so->spool_logged && !so->quiet)
      so_log_backlog(so, "the receiver is away; records go to the disk "
                     "buffer");
    so->spool_logged = true;
    return true;
  case DQ_TOO_BIG:
    so_refuse(so, r, payload, len, "the record is larger than the disk "
              "buffer takes");
    return true;
  case DQ_FULL:
  case DQ_NO_SPACE:
    if (!so->full_logged)
      so_log_backlog(so, res == DQ_FULL ? "the disk buffer is full; holding "
                     "the inputs" : "no space left for the disk buffer; "
                     "holding the inputs");
    so->full_logged = true;
    so_wake_later(so, DISK_RETRY_MS);
    return false;
  default:
    output_fail(so->o, err);
    return false;
  }
}

bool so_spill_queue(syslog_output *so)
{
  output_sink *o = so->o;
  const output_record *r;
  const char *bytes;
  size_t len;

  /* Records held for the next connection go before any on disk. */
  if (so_holds_direct(so)) return false;
  while ((r = output_front(o, &bytes, &len))) {
    output_record rec = *r;
    bool taken;
    bool more = spill(so, &rec, bytes + rec.head, len - rec.head, &taken);
    if (taken) output_take(o);
    if (!more || o->state == OUTPUT_FAILED) return false;
  }
  return true;
}

/* Entries of the queue held for the next connection go to the disk
 * buffer, behind its records (which are older: the queue is taken only
 * when the disk buffer has nothing unread), if they all fit: then their
 * inputs move on and a crash loses none of them. Records from the disk
 * buffer stay held, in front. */
void so_move_held(syslog_output *so)
{
  size_t first = so->nents;
  uint64_t bytes = 0, moved = 0;

  while (first > so->ent_head && !so->ents[first - 1].from_disk) first--;
  if (first == so->nents) return;
  for (size_t i = first; i < so->nents; i++)
    bytes += so->ents[i].end - so->ents[i].start;
  if (!spool_room(so->spool, so->nents - first, bytes, NAME_ROOM)) return;
  for (size_t i = first; i < so->nents; i++) {
    so_entry *e = &so->ents[i];
    spool_origin from = origin_of(&e->r);
    char err[256];
    if (spool_put(so->spool, &from, e->r.ack, so->plain.data + e->start +
                  e->prefix, e->end - e->start - e->prefix, err,
                  sizeof err) != DQ_OK) {
      /* The room was there a moment ago: the disk itself is full. The
       * rest stay held and go out first on the next connection, ahead
       * of those that went to disk. */
      log_warning("%s: %s; %zu records stay in memory", so->name, err,
              so->nents - i);
      memmove(&so->ents[first], e, (so->nents - i) * sizeof *e);
      so->nents = first + (so->nents - i);
      so->ent_encoded = so->ent_head;
      so_sync_spilled(so);
      return;
    }
    moved++;
  }
  so->plain.len = so->ents[first].start;
  so->nents = first;
  if (so->ent_encoded > first) so->ent_encoded = first;
  so_sync_spilled(so);
  if (moved && !so->quiet) {
    char what[128];
    snprintf(what, sizeof what, "the %" PRIu64 " records the connection "
             "held are in the disk buffer", moved);
    so_log_backlog(so, what);
    so->spool_logged = true;
  }
}

void so_note_backlog(syslog_output *so)
{
  spool_stats_t st;

  if (!so->spool || !so->spool_logged || so->quiet) return;
  spool_stats(so->spool, &st);
  if (st.dq.records > 0) return;
  so->spool_logged = false;
  so_log_backlog(so, "the disk buffer is drained; sending straight on");
}

void so_sync_at_stop(syslog_output *so, const char *reason)
{
  char err[256];

  if (spool_unsynced(so->spool) == 0) return;
  if (spool_sync(so->spool, settle, so, err, sizeof err) != DQ_OK) {
    log_warning("%s: %s", so->name, err);
    spool_drop_unsynced(so->spool, reason, settle, so);
  }
}
