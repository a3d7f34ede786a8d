/*
 * kafka_disk.c - the kafka_output's disk buffer (output_kafka.h says when
 * records go there and kafka_internal.h what each function does):
 * records written to it behind librdkafka, and produced from it again,
 * oldest first, once librdkafka takes records.
 *
 * A record in the disk buffer is laid out as
 *   [u16 input name length][input name][u64 position][u8 flags][u32 head]
 *   [the record as queued: head (kafka_head.h), then the payload]
 * little-endian, so a record produced from the disk buffer in a later run
 * still names its input and position if it has to be dead-lettered.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "kafka_internal.h"
#include "le.h"
#include "log.h"
#include "kafka_head.h"

/* What the disk buffer adds to a record: its length and CRC, and the
 * length of the input's name, the position and the head (kafka_head.h)'s length
 * before it (kafka_spill). */
#define SPILL_OVERHEAD 23
/* Room left, for each record librdkafka holds, for its input's name and
 * head (kafka_head.h) (kafka_keep_held). */
#define NAME_AND_HEAD 64
/* kafka_keep_held logs at most this often. */
#define HELD_LOG_NS (10ull * 1000000000)

static void put_le(buf *b, uint64_t v, int n)
{
  char bytes[8];

  le_put(bytes, v, n);
  buf_append(b, bytes, (size_t)n);
}

/* The input name of a record read back, kept for the run: a dead letter
 * made from it names its input. */
static const char *kept_name(kafka_output *k, const char *name, size_t len)
{
  char **names;

  for (size_t i = 0; i < k->nnames; i++)
    if (strlen(k->names[i]) == len && memcmp(k->names[i], name, len) == 0)
      return k->names[i];
  names = realloc(k->names, (k->nnames + 1) * sizeof *names);
  if (!names) return "(disk buffer)";
  k->names = names;
  if (!(names[k->nnames] = strndup(name, len))) return "(disk buffer)";
  return names[k->nnames++];
}

/* The stash's record, as the queue held it; false if it is damaged. */
static bool unpack(kafka_output *k, output_record *r, const char **bytes,
                   size_t *len)
{
  const char *p = k->stash.data;
  size_t n = k->stash.len, name_len;

  if (n < 2 || n < 2 + (name_len = le_get(p, 2)) + 8 + 1 + 4) return false;
  *r = (output_record){0};
  r->input = kept_name(k, p + 2, name_len);
  p += 2 + name_len;
  r->position = le_get(p, 8);
  r->is_offset = p[8] & 1;
  r->head = (uint32_t)le_get(p + 9, 4);
  *bytes = p + 13;
  *len = n - 2 - name_len - 13;
  return r->head <= *len;
}

/* The lines that say what the disk buffer does come on a change of state
 * that lasts: records start going to disk (logged where they do) until it
 * is empty again, acknowledged to the last record; full until it is down
 * to half its cap. So a broker that keeps up only just does not make a
 * line each time librdkafka fills up. */
void kafka_note_backlog(kafka_output *k)
{
  dq_stats_t st;

  if (!k->spill_logged && !k->full_logged) return;
  dq_stats(k->dq, &st);
  if (k->full_logged && st.bytes < k->buffer_max / 2) {
    k->full_logged = false;
    kafka_log_backlog(k, "the disk buffer is below half its cap and takes "
                      "records again");
  }
  if (k->spill_logged && st.records == 0) {
    k->spill_logged = false;
    kafka_log_backlog(k, "the disk buffer is drained; producing straight on");
  }
}

void kafka_log_backlog(kafka_output *k, const char *what)
{
  dq_stats_t st;

  dq_stats(k->dq, &st);
  log_msg("%s: %s (%" PRIu64 " records, %" PRIu64 " bytes in the disk "
          "buffer)", k->o->name, what, st.records, st.bytes);
}

/* Produces from the disk buffer while librdkafka takes them; false when
 * it stopped before the disk buffer ran out. */
produce_result kafka_send_from_disk(kafka_output *k)
{
  char err[256];

  /* A stashed record read before its segment was dropped is gone. */
  if (k->stashed && dq_forget_dropped(k->dq, k->stash_id)) k->stashed = false;
  for (;;) {
    output_record r;
    const char *bytes, *why = NULL;
    size_t len;
    produce_result pr;
    if (!k->stashed) {
      int got = dq_read(k->dq, &k->stash, &k->stash_id, err, sizeof err);
      if (got == 0) break;
      if (got < 0) {
        output_fail(k->o, err);
        return FATAL;
      }
      k->stashed = true;
    }
    if (!unpack(k, &r, &bytes, &len)) {
      /* Its checksum held, so we wrote it so: nothing to send it as. */
      log_warning("%s: a record in the disk buffer is not one lumberjit "
              "writes; it counts as lost", k->o->name);
      k->o->records_lost++;
      dq_ack(k->dq, k->stash_id);
      k->stashed = false;
      continue;
    }
    pr = kafka_produce(k, &r, bytes, len, true, k->stash_id, &why);
    if (pr == QUEUE_FULL || pr == RATE_CAPPED) return pr;
    if (pr == FATAL) {
      output_fail(k->o, why);
      return FATAL;
    }
    if (pr == REJECTED) {
      kafka_refuse(k, &r, bytes + r.head, len - r.head, why);
      dq_ack(k->dq, k->stash_id);
    }
    k->stashed = false;
  }
  kafka_note_backlog(k);
  return PRODUCED;
}

bool kafka_disk_backlog(const kafka_output *k)
{
  dq_stats_t st;

  if (k->stashed) return true;
  dq_stats(k->dq, &st);
  return st.unread > 0;
}

/* Writes one record to the disk buffer; its checkpoint reference waits
 * for the fsync (sync_spilled). DQ_OK, or why it could not. */
dq_result kafka_spill(kafka_output *k, const output_record *r,
                       const char *bytes, size_t len, char *err,
                       size_t errlen)
{
  size_t name_len = strlen(r->input);
  dq_result res;

  if (k->nunsynced == k->unsynced_cap) {
    size_t cap = k->unsynced_cap ? 2 * k->unsynced_cap : 1024;
    output_record *u = realloc(k->unsynced, cap * sizeof *u);
    if (!u) return DQ_FULL;
    k->unsynced = u;
    k->unsynced_cap = cap;
  }
  k->spill.len = 0;
  if (name_len > 65535) name_len = 65535;
  put_le(&k->spill, name_len, 2);
  buf_append(&k->spill, r->input, name_len);
  put_le(&k->spill, r->position, 8);
  put_le(&k->spill, r->is_offset, 1);
  put_le(&k->spill, r->head, 4);
  if (!buf_append(&k->spill, bytes, len)) return DQ_FULL;
  res = dq_append(k->dq, k->spill.data, k->spill.len, err, errlen);
  if (res == DQ_OK) k->unsynced[k->nunsynced++] = *r;
  return res;
}

/* Records written to the disk buffer that cannot be made durable fail:
 * they may still come out of it in a later run, as duplicates. */
void kafka_fail_unsynced(kafka_output *k, const char *reason)
{
  for (size_t i = 0; i < k->nunsynced; i++)
    output_undeliverable(k->o, &k->unsynced[i], "", 0, reason);
  k->nunsynced = 0;
}

/* fsyncs what was spilled; then its records count as kept and their
 * inputs may move their checkpoints past them. DQ_NO_SPACE: they wait
 * (their references held) for a retry; DQ_ERROR: the output fails. */
dq_result kafka_sync_spilled(kafka_output *k)
{
  char err[256];
  dq_result res;

  if (k->nunsynced == 0) return DQ_OK;
  res = dq_sync(k->dq, err, sizeof err);
  if (res == DQ_NO_SPACE) {
    if (!k->full_logged)
      kafka_log_backlog(k, "no space left to write the disk buffer; holding the "
                  "inputs");
    k->full_logged = true;
    kafka_wake_later(k, DISK_RETRY_MS);
    return res;
  }
  if (res != DQ_OK) {
    kafka_fail_unsynced(k, err);
    output_fail(k->o, err);
    return res;
  }
  for (size_t i = 0; i < k->nunsynced; i++)
    checkpoint_unref(k->unsynced[i].ack);
  k->spilled += k->nunsynced;
  k->nunsynced = 0;
  return DQ_OK;
}

/* The front record goes to the disk buffer; false when it cannot now. */
bool kafka_spill_front(kafka_output *k, const output_record *r,
                        const char *bytes, size_t len)
{
  char err[256];
  dq_result res = kafka_spill(k, r, bytes, len, err, sizeof err);

  switch (res) {
  case DQ_OK:
    output_take(k->o);
    if (!k->spill_logged) {
      kafka_log_backlog(k, "librdkafka holds what memory_bytes lets it; records "
                  "go to the disk buffer");
      k->spill_logged = true;
    }
    return true;
  case DQ_TOO_BIG:
    output_take(k->o);
    output_undeliverable(k->o, r, bytes + r->head, len - r->head,
                         "the record is larger than the disk buffer takes");
    return true;
  case DQ_FULL:
  case DQ_NO_SPACE:
    if (!k->full_logged) {
      kafka_log_backlog(k, res == DQ_FULL ? "the disk buffer is full; holding the "
                  "inputs" : "no space left for the disk buffer; holding "
                  "the inputs");
      k->full_logged = true;
    }
    kafka_wake_later(k, DISK_RETRY_MS);
    return false;
  default:
    output_fail(k->o, err);
    return false;
  }
}

/* A record librdkafka gave back while records move to the disk buffer
 * (move_held), kept in memory until they are all back. */
typedef struct moved_record {
  uint64_t seq;             /* its slot's: the order it was produced in */
  output_record r;
  size_t off, len;          /* in k->moved_bytes: head, then payload */
} moved_record;

static void keep_unmoved(kafka_output *k, const output_record *r,
                         const char *payload, size_t len)
{
  output_undeliverable(k->o, r, payload, len, "librdkafka gave the record "
                       "back (the run stopped, or every broker was down) "
                       "and the disk buffer did not take it");
}

/* A purged record goes to the disk buffer with the head it came with (or,
 * while records move, waits for the rest: move_held); one from the
 * disk buffer stays there, unacknowledged, for the next run. */
void kafka_keep_purged(kafka_output *k, slot *s, const rd_kafka_message_t *m)
{
  const char *topic = rdk.rd_kafka_topic_name(m->rkt);
  size_t tlen = strcmp(topic, k->topic) == 0 ? 0 : strlen(topic);
  buf *rec = k->moving ? &k->moved_bytes : &k->scratch;
  size_t off = k->moving ? rec->len : 0;
  char err[256];
  bool kept;

  if (s->from_disk) {
    /* Moving, it is read again after the rewind; at the stop it stays on
     * disk for the next run, unless the full disk buffer dropped it. */
    if (k->moving) k->moved_from_disk = true;
    else dq_forget_dropped(k->dq, s->dq_id);
    return;
  }
  if (!k->moving) rec->len = 0;
  kept = kafka_head_append(rec, topic, tlen, m->key, m->key_len);
  s->r.head = (uint32_t)(rec->len - off);
  kept = kept && buf_append(rec, m->payload, m->len);
  if (kept && k->moving) {
    if (k->nmoved == k->moved_cap) {
      size_t cap = k->moved_cap ? 2 * k->moved_cap : 1024;
      moved_record *mr = realloc(k->moved, cap * sizeof *mr);
      if (!mr) {
        keep_unmoved(k, &s->r, m->payload, m->len);
        return;
      }
      k->moved = mr;
      k->moved_cap = cap;
    }
    k->moved[k->nmoved++] = (moved_record){s->seq, s->r, off, rec->len - off};
    return;
  }
  kept = kept && kafka_spill(k, &s->r, rec->data, rec->len, err,
                             sizeof err) == DQ_OK;
  if (!kept) keep_unmoved(k, &s->r, m->payload, m->len);
}

static int by_seq(const void *a, const void *b)
{
  const moved_record *x = a, *y = b;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* librdkafka reports purged records partition by partition, and those it
 * had not yet given a partition last: sorted back into the order they
 * were produced in, they go to the disk buffer. */
static void spill_moved(kafka_output *k)
{
  char err[256];

  qsort(k->moved, k->nmoved, sizeof *k->moved, by_seq);
  for (size_t i = 0; i < k->nmoved; i++) {
    moved_record *mr = &k->moved[i];
    const char *bytes = k->moved_bytes.data + mr->off;
    if (kafka_spill(k, &mr->r, bytes, mr->len, err, sizeof err) != DQ_OK)
      keep_unmoved(k, &mr->r, bytes + mr->r.head, mr->len - mr->r.head);
  }
  k->nmoved = 0;
  k->moved_bytes.len = 0;
}

/* Everything librdkafka holds comes back (purged, sent or not) and goes
 * to the disk buffer in its order, acknowledged to its inputs once
 * fsynced: none of it holds their checkpoints any more, and a crash loses
 * none of it. Its records that came from the disk buffer are read from it
 * again (dq_rewind), in their places. The order holds because the disk
 * buffer takes no record while librdkafka holds one that is not from it
 * (send_records): librdkafka's own records are newer than every record on
 * disk, and go behind them. A record the broker took but did not
 * acknowledge before it went away is sent again: a duplicate.
 *
 * Only when they fit with room to spare: one the disk buffer refused would
 * be dead-lettered. Never once records went to disk behind them
 * (direct_behind): they would go behind those. The number moved to disk,
 * or 0. */
static uint64_t move_held(kafka_output *k)
{
  uint64_t spilled = k->spilled, need;

  need = k->direct_bytes +
         k->direct_in_flight * (SPILL_OVERHEAD + NAME_AND_HEAD);
  if (k->direct_in_flight == 0 || k->direct_behind || k->nunsynced > 0 ||
      !dq_fits(k->dq, need))
    return 0;
  k->moving = true;
  rdk.rd_kafka_purge(k->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
  /* The purge is done: the reports of the records it took wait. */
  while (rdk.rd_kafka_poll(k->rk, 0) > 0)
    ;
  k->moving = false;
  if (k->moved_from_disk) {
    /* The stash is read and not acknowledged too: read again. */
    dq_rewind(k->dq);
    k->stashed = false;
    k->moved_from_disk = false;
  }
  spill_moved(k);
  if (kafka_sync_spilled(k) != DQ_OK) return 0;
  if (k->spilled > spilled) k->spill_logged = true;
  return k->spilled - spilled;
}

/* Every broker is down: librdkafka said so, and nothing was delivered
 * since (serve calls this after each poll while librdkafka holds records
 * not from the disk buffer). What librdkafka holds moves to the disk
 * buffer, so a crash during the outage loses none of it (a syslog sender
 * cannot send it again) and the inputs' checkpoints move past it. */
void kafka_keep_held(kafka_output *k)
{
  uint64_t moved = move_held(k), now = uv_hrtime();

  if (!moved) return;
  /* While the brokers stay down, records the queue hands librdkafka meanwhile
   * move too, a few every poll: one line, then one every HELD_LOG_NS
   * at most, says how many. */
  k->held_unlogged += moved;
  k->held_moves_unlogged++;
  if (k->held_logged_ns && now - k->held_logged_ns < HELD_LOG_NS) return;
  if (k->held_moves_unlogged > 1)
    log_warning("%s: every broker is down; %" PRIu64 " more records "
                "librdkafka held went to the disk buffer in %" PRIu64
                " moves, and new records go behind them", k->o->name,
                k->held_unlogged, k->held_moves_unlogged);
  else
    log_warning("%s: every broker is down; the %" PRIu64 " records "
                "librdkafka held are in the disk buffer, and new records go "
                "behind them", k->o->name, k->held_unlogged);
  k->held_logged_ns = now;
  k->held_unlogged = k->held_moves_unlogged = 0;
}
