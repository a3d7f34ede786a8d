/*
 * syslog_stream_out.c - records on a TCP or TLS connection
 * (syslog_internal.h): taken from the disk buffer first, then from the
 * queue, framed into `plain` as entries, handed to the connection, and
 * settled when the kernel took the bytes that hold them.
 *
 * Order: the queue is taken only while the disk buffer has nothing unread,
 * and records go to the disk buffer only while no connection is up and no
 * record of the queue is held here (so_spill_queue). So the entries are
 * records from the disk buffer, then records from the queue, oldest
 * first; after a break they are sent again, first, on the next connection.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "syslog_internal.h"

/* A flapping path's breaks are logged at most this often. */
#define FLAP_LOG_MS 10000

/* Bytes handed to the connection and not yet taken by the kernel: enough
 * to keep the socket's buffer full, small enough to resend. */
#define IN_FLIGHT_BYTES (256u << 10)
/* The TLS records a push makes end here at most: a record's bytes are
 * settled once the TLS record holding its end is written. */
#define PUSH_BYTES (16u << 10)

static bool add_entry(syslog_output *so, const char *payload, size_t len,
                      const output_record *r, bool from_disk, uint64_t id)
{
  char prefix[24];
  int n = 0;
  so_entry *e;

  if (so->nents == so->ents_cap) {
    size_t cap = so->ents_cap ? 2 * so->ents_cap : 256;
    so_entry *p = realloc(so->ents, cap * sizeof *p);
    if (!p) return false;
    so->ents = p;
    so->ents_cap = cap;
  }
  if (so->framing == SO_OCTET_COUNTING)
    n = snprintf(prefix, sizeof prefix, "%zu ", len);
  if (!buf_reserve(&so->plain, (size_t)n + len)) return false;
  e = &so->ents[so->nents++];
  *e = (so_entry){.start = so->plain.len, .prefix = (uint32_t)n,
                  .sent_ns = uv_hrtime(), .from_disk = from_disk,
                  .dq_id = id};
  if (r) {
    e->r = *r;
    e->r.head = 0;  /* plain holds the payload alone */
  }
  buf_append(&so->plain, prefix, (size_t)n);
  buf_append(&so->plain, payload, len);
  e->end = so->plain.len;
  so->sent++;
  return true;
}

static size_t in_flight_bytes(const syslog_output *so)
{
  return so->ent_head < so->nents
             ? so->plain.len - so->ents[so->ent_head].start : 0;
}

/* The bytes a record of len takes on the wire, framing included. */
static size_t framed(const syslog_output *so, size_t len)
{
  char prefix[24];

  return so->framing == SO_OCTET_COUNTING
             ? len + (size_t)snprintf(prefix, sizeof prefix, "%zu ", len)
             : len;
}

/* Takes records while the connection's share is not full and the cap
 * lets them go: the disk buffer's while it has any, then the queue's.
 * Whether it took any. */
static bool fill(syslog_output *so)
{
  output_sink *o = so->o;
  char err[256];
  bool took = false;

  while (in_flight_bytes(so) < IN_FLIGHT_BYTES) {
    spool_origin from;
    const char *bytes;
    size_t len;
    const output_record *r;
    if (so->spool && spool_backlog(so->spool)) {
      int got = spool_front(so->spool, &from, &bytes, &len, err, sizeof err);
      if (got < 0) {
        output_fail(o, err);
        return false;
      }
      if (got > 0) {
        if (!so_cap_allows(so, framed(so, len - from.head)) ||
            !add_entry(so, bytes + from.head, len - from.head, NULL, true, 0))
          break;
        so->ents[so->nents - 1].dq_id = spool_next(so->spool);
        took = true;
        continue;
      }
    }
    if (!(r = output_front(o, &bytes, &len))) break;
    if (!so_cap_allows(so, framed(so, len - r->head)) ||
        !add_entry(so, bytes + r->head, len - r->head, r, false, 0))
      break;
    output_take(o);
    took = true;
  }
  return took;
}

/* Hands the entries not yet on this connection to it, PUSH_BYTES at a
 * time; false when the connection failed. */
static bool encode(syslog_output *so)
{
  while (so->ent_encoded < so->nents) {
    size_t first = so->ent_encoded, last = first, start = so->ents[first].start;
    uint64_t total;
    while (last + 1 < so->nents &&
           so->ents[last + 1].end - start <= PUSH_BYTES)
      last++;
    total = so_conn_push(so, so->plain.data + start,
                         so->ents[last].end - start);
    if (!total) return false;
    /* Plain TCP's bytes are the records' own, so each is settled once the
     * kernel took its last byte; TLS's only with the TLS record holding
     * it. A connection that breaks inside a push then sends again only
     * what the kernel did not take. */
    for (size_t i = first; i <= last; i++)
      so->ents[i].wire_end =
          so->tls ? total : total - (so->ents[last].end - so->ents[i].end);
    so->ent_encoded = last + 1;
  }
  return true;
}

bool so_stream_send(syslog_output *so)
{
  for (;;) {
    so_conn *c = so->conn;
    if (!c || !c->ready || !so_conn_flush(so) || so->conn != c) return false;
    if (so->o->state == OUTPUT_FAILED) return true;
    /* Everything handed on was written: take more. */
    if (!fill(so) && so->ent_encoded == so->nents) return true;
    if (so->o->state == OUTPUT_FAILED) return true;
    if (!encode(so)) return false;
  }
}

/* Settled entries leave the front of plain. */
static void compact(syslog_output *so)
{
  size_t n = so->nents - so->ent_head, from;

  if (so->ent_head == 0) return;
  if (n == 0) {
    so->plain.len = 0;
    so->nents = so->ent_head = so->ent_encoded = 0;
    return;
  }
  if (so->ent_head < 1024) return;
  from = so->ents[so->ent_head].start;
  memmove(so->plain.data, so->plain.data + from, so->plain.len - from);
  so->plain.len -= from;
  memmove(so->ents, so->ents + so->ent_head, n * sizeof *so->ents);
  for (size_t i = 0; i < n; i++) {
    so->ents[i].start -= from;
    so->ents[i].end -= from;
  }
  so->ent_encoded -= so->ent_head;
  so->nents = n;
  so->ent_head = 0;
}

/* Once a flapping path was quiet for FLAP_LOG_MS, one line says where it
 * is now and how many breaks went untold. */
static void tell_flaps(syslog_output *so)
{
  if (!so->quiet || uv_now(so->loop) - so->down_logged_ms < FLAP_LOG_MS)
    return;
  if (so->away)
    log_warning("%s: %s: still away after %" PRIu64 " more broken "
                "connections; reconnecting with back-off", so->name,
                so->address, so->breaks_unlogged);
  else
    log_msg("%s: connected to %s; sending again, after %" PRIu64 " more "
            "broken connections", so->name, so->address,
            so->breaks_unlogged);
  so->quiet = false;
  so->breaks_unlogged = 0;
  so->down_logged_ms = uv_now(so->loop);
  if (so->spool) so_note_backlog(so);
}

void so_written(syslog_output *so, uint64_t written)
{
  uint64_t now_ns = uv_hrtime();
  bool disk_acked = false;

  while (so->ent_head < so->ent_encoded &&
         so->ents[so->ent_head].wire_end <= written) {
    so_entry *e = &so->ents[so->ent_head++];
    latency_add(&so->latency, (now_ns - e->sent_ns) / 1000);
    so->delivered++;
    if (e->from_disk) {
      spool_ack(so->spool, e->dq_id);
      so->from_disk++;
      so->o->records_written++;
      disk_acked = true;
    } else {
      output_delivered(so->o, &e->r, now_ns / 1000);
    }
  }
  if (disk_acked) so_note_backlog(so);
  compact(so);
  tell_flaps(so);
}

void so_up(syslog_output *so)
{
  if ((so->away || so->connects == 0) && !so->quiet)
    log_msg("%s: connected to %s%s", so->name, so->address,
            so->away ? "; sending again" : "");
  so->away = false;
  so->backoff_ms = so->backoff_min_ms;
  so->connects++;
  so_wake(so);
}

void so_down(syslog_output *so, const char *why)
{
  /* What the kernel had not taken of them is sent again, whole. */
  so->ent_encoded = so->ent_head;
  so->udp_ready = false;
  if (!so->away && !so->stopped) {
    /* A break within FLAP_LOG_MS of the last one told is counted, and
     * told by tell_flaps. */
    if (so->down_logged_ms &&
        uv_now(so->loop) - so->down_logged_ms < FLAP_LOG_MS) {
      so->quiet = true;
      so->breaks_unlogged++;
    } else {
      log_warning("%s: %s: %s; %" PRIu64 " records wait to be sent again; "
              "reconnecting with back-off (%" PRIu64 " ms to %" PRIu64 " ms)",
              so->name, so->address, why, (uint64_t)(so->nents - so->ent_head),
              so->backoff_min_ms, so->backoff_max_ms);
      so->down_logged_ms = uv_now(so->loop);
    }
    so->away = true;
  }
  tell_flaps(so);
  if (so->spool && !so->stopped) so_move_held(so);
  so_conn_backoff(so);
  so_wake(so);
}

void so_drop_entries(syslog_output *so,
                     void (*fn)(syslog_output *so, so_entry *e,
                                const char *payload, size_t len))
{
  for (size_t i = so->ent_head; i < so->nents; i++) {
    so_entry *e = &so->ents[i];
    /* One from the disk buffer stays there, unacknowledged: the next run
     * reads it again. */
    if (e->from_disk)
      spool_unsent(so->spool, e->dq_id);
    else
      fn(so, e, so->plain.data + e->start + e->prefix,
         e->end - e->start - e->prefix);
  }
  so->plain.len = 0;
  so->nents = so->ent_head = so->ent_encoded = 0;
}
