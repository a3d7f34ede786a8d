/*
 * output.c - a sink's queue of records (see output.h): committing and
 * adopting records, backpressure, failing, and what its transport takes
 * from it. Every sink but a worker's collector has a transport: Kafka's,
 * or output_fd.c's, which writes the queue to a file descriptor.
 *
 * Queue layout in `pending`:
 *
 *   0 .. boundary .. head .. committed .. len
 *        |written  |      |queued     |being appended (not yet a record)
 *
 * boundary is where the first unwritten record starts, so head - boundary
 * bytes of it are on disk: the torn part cut off when a write fails.
 */
#include "output.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "input.h"
#include "output_internal.h"

#define OUTPUT_COMPACT_MIN (64u << 10)

/* With short records the index is most of what the queue holds. */
size_t output_queued(const output_sink *o)
{
  return o->committed - o->boundary +
         (o->nrecs - o->rec_head) * sizeof(output_record);
}

void output_set_high_water(output_sink *o, size_t bytes)
{
  o->high_water = bytes > 2 * o->flush_bytes ? bytes : 2 * o->flush_bytes;
  o->low_water = o->high_water / 4;
}

size_t output_queued_records(const output_sink *o)
{
  size_t n = o->nrecs - o->rec_head;

  for (size_t i = o->rec_head; i < o->nrecs; i++) n += o->recs[i].more;
  return n;
}

/* A record is acknowledged: it counts, and so does its latency. */
void output_count_written(output_sink *o, const output_record *r,
                          uint64_t now_us)
{
  uint64_t n = 1 + (uint64_t)r->more;

  if (r->dead_letter) {
    o->dead_letters_written += n;
    return;
  }
  o->records_written += n;
  if (r->read_us)
    latency_add_n(&o->latency, now_us > r->read_us ? now_us - r->read_us : 0,
                  n);
}

void output_ack_run_front(output_sink *o, size_t upto, uint64_t now_us)
{
  output_record *r = &o->recs[o->rec_head], done = *r;
  const char *start = o->pending.data + o->boundary, *line;
  input_run_cursor c = {start, o->pending.data + upto, r->position,
                        r->is_offset};
  size_t len;
  uint64_t position;
  uint16_t n = 0;

  /* The run's last line ends at its end, past upto: n stays below it. */
  while (n < r->more && input_run_next(&c, &line, &len, &position)) n++;
  if (n == 0) return;
  done.more = n - 1;
  output_count_written(o, &done, now_us);
  r->more -= n;
  r->position = c.position;
  o->boundary += (size_t)(c.at - start);
}

/* Drops what was written from the front of the queue. */
static void compact(output_sink *o)
{
  size_t shift = o->boundary;

  if (shift == 0) return;
  if (shift != o->pending.len &&
      (shift < OUTPUT_COMPACT_MIN || shift < o->pending.len / 2))
    return;
  memmove(o->pending.data, o->pending.data + shift, o->pending.len - shift);
  o->pending.len -= shift;
  o->head -= shift;
  o->committed -= shift;
  o->boundary = 0;
  for (size_t i = o->rec_head; i < o->nrecs; i++) o->recs[i].end -= shift;
  memmove(o->recs, o->recs + o->rec_head,
          (o->nrecs - o->rec_head) * sizeof *o->recs);
  o->nrecs -= o->rec_head;
  o->rec_head = 0;
}

/* The owner's failed callback gets the record without its head (an
 * output_route); a run's lines each on their own. */
void output_fail_record(output_sink *o, const output_record *r,
                        const char *bytes, size_t len, const char *reason)
{
  output_record line = *r;
  input_run_cursor c = {bytes, bytes + len, r->position, r->is_offset};
  size_t n;

  if (!r->more) {
    o->ev.failed(o->ev.ud, o, r, bytes + r->head, len - r->head, reason);
    return;
  }
  line.more = 0;
  while (input_run_next(&c, &bytes, &n, &line.position))
    o->ev.failed(o->ev.ud, o, &line, bytes, n, reason);
}

void output_fail(output_sink *o, const char *reason)
{
  buf bytes;
  output_record *recs;
  size_t first, n, start;

  if (o->state == OUTPUT_FAILED) return;
  if (reason != o->error) snprintf(o->error, sizeof o->error, "%s", reason);
  /* The transport's records are older than the queue's: they go first. */
  if (o->tx) o->tx->fail(o, o->error);
  bytes = o->pending;
  recs = o->recs;
  first = o->rec_head;
  n = o->nrecs;
  start = o->boundary;
  o->state = OUTPUT_FAILED;
  /* Detach the queue first: the callbacks may commit to this very sink
   * (a shared dead-letter path), and those records fail at once. */
  memset(&o->pending, 0, sizeof o->pending);
  o->recs = NULL;
  o->rec_head = o->nrecs = o->recs_cap = 0;
  o->head = o->boundary = o->committed = 0;
  o->full = false;
  for (size_t i = first; i < n; i++) {
    output_fail_record(o, &recs[i], bytes.data + start, recs[i].end - start,
                o->error);
    checkpoint_unref(recs[i].ack);
    start = recs[i].end;
  }
  free(recs);
  buf_free(&bytes);
  o->ev.changed(o->ev.ud, o);
}

/* After the transport wrote: drops what was written, and tells the owner
 * when the sink drained or is no longer full. */
static void after_send(output_sink *o, bool was_idle, bool was_full)
{
  if (o->state == OUTPUT_FAILED) return; /* output_fail told the owner */
  compact(o);
  if (o->full && output_queued(o) < o->low_water) o->full = false;
  if (was_full != o->full || was_idle != output_idle(o))
    o->ev.changed(o->ev.ud, o);
}

void output_flush(output_sink *o)
{
  bool was_idle = output_idle(o), was_full = o->full;

  if (o->state != OUTPUT_READY || o->in_flush) return;
  o->in_flush = 1;
  if (o->tx) o->tx->send(o); /* a collector has none */
  o->in_flush = 0;
  after_send(o, was_idle, was_full);
}

/* Room in the index for one more record. */
static bool room_for_record(output_sink *o)
{
  size_t cap = o->recs_cap ? o->recs_cap * 2 : 1024;
  output_record *p;

  if (o->nrecs < o->recs_cap) return true;
  if (!(p = realloc(o->recs, cap * sizeof *p))) return false;
  o->recs = p;
  o->recs_cap = cap;
  return true;
}

static void commit(output_sink *o, const msg_origin *from, bool dead_letter,
                   uint32_t head, uint16_t more)
{
  output_record r = {o->pending.len, from->input, from->position, from->ack,
                     from->is_offset, dead_letter, more, head, from->read_us};

  if (o->state == OUTPUT_FAILED) {
    output_fail_record(o, &r, o->pending.data + o->committed, r.end - o->committed,
                o->error);
    o->pending.len = o->committed;
    return;
  }
  if (!room_for_record(o)) {
    output_fail_record(o, &r, o->pending.data + o->committed,
                       r.end - o->committed, "out of memory");
    o->pending.len = o->committed;
    return;
  }
  o->recs[o->nrecs++] = r;
  o->committed = r.end;
  if (o->collect) return;
  checkpoint_ref(r.ack);
  if (output_queued(o) >= o->high_water) o->full = true;
  if (o->committed - o->head >= o->flush_bytes) output_flush(o);
}

void output_commit(output_sink *o, const msg_origin *from, bool dead_letter)
{
  commit(o, from, dead_letter, 0, 0);
}

void output_commit_routed(output_sink *o, const msg_origin *from,
                          uint32_t head)
{
  commit(o, from, false, head, 0);
}

bool output_takes_lines(const output_sink *o)
{
  return o->tx && o->tx->write_lines && !o->max_file_bytes;
}

void output_commit_lines(output_sink *o, const msg_origin *from,
                         size_t count)
{
  output_record r = {0, from->input, from->position, from->ack,
                     from->is_offset, false, (uint16_t)(count - 1), 0,
                     from->read_us};
  size_t done = 0;

  /* Straight from the read buffer, after what is queued: copying a big
   * run only to write it at once costs a copy, and the kernel's copy from
   * a buffer no longer in the CPU's cache. Small ones wait to be written
   * with others. */
  if (o->state == OUTPUT_READY && !o->in_flush &&
      o->pending.len == o->committed && from->len >= o->flush_bytes &&
      room_for_record(o)) {
    bool was_idle = output_idle(o), was_full = o->full;
    o->in_flush = 1;
    done = o->tx->write_lines(o, from->bytes, from->len);
    o->in_flush = 0;
    if (done == from->len) {
      output_count_written(o, &r, uv_hrtime() / 1000);
      after_send(o, was_idle, was_full);
      return;
    }
  }
  if (o->state == OUTPUT_FAILED) {
    output_fail_record(o, &r, from->bytes, from->len, o->error);
    return;
  }
  if (!buf_append(&o->pending, from->bytes, from->len)) {
    output_fail_record(o, &r, from->bytes, from->len, "out of memory");
    return;
  }
  /* What a write took before it failed is written: the queue goes on
   * after it (output_fd.c cuts it off again if the rest cannot come),
   * and the index had room, so the commit cannot fail. */
  o->head += done;
  commit(o, from, false, 0, r.more);
}

static void lose(void *ud, output_sink *o, const output_record *r,
                 const char *bytes, size_t len, const char *reason)
{
  (void)ud;
  (void)r;
  (void)bytes;
  (void)len;
  (void)reason;
  o->records_lost++;
}

static void unchanged(void *ud, output_sink *o)
{
  (void)ud;
  (void)o;
}

void output_open_transport(output_sink *o, uv_loop_t *loop, const char *name,
                           const output_transport *tx, void *tx_state,
                           output_events ev)
{
  memset(o, 0, sizeof *o);
  o->name = name;
  o->loop = loop;
  o->ev = ev;
  o->fd = o->restore_fd = -1;
  o->flush_bytes = 1;
  o->tx = tx;
  o->tx_state = tx_state;
  output_set_high_water(o, OUTPUT_HIGH_WATER);
}

void output_collector_init(output_sink *o)
{
  memset(o, 0, sizeof *o);
  o->collect = true;
  o->fd = -1;
  o->restore_fd = -1;
  o->flush_bytes = (size_t)-1;
  o->high_water = (size_t)-1;
  o->ev = (output_events){lose, unchanged, NULL};
}

/* A sink that wrote everything takes the collector's queue as it is: the
 * two swap buffers instead of copying a job's bytes. Only for buffers at
 * least as big as its own: a sink that took a job's small buffer would
 * grow it again by reallocating, page by fresh page (that was 40% of the
 * loop thread's page faults feeding Kafka). */
static bool take_whole(output_sink *o, output_sink *from)
{
  buf bytes = o->pending;
  output_record *recs = o->recs;
  size_t cap = o->recs_cap;

  if (o->pending.len != 0 || o->nrecs != 0 || from->rec_head != 0 ||
      from->pending.len != from->committed ||
      from->pending.cap < o->pending.cap || from->recs_cap < o->recs_cap)
    return false;
  o->pending = from->pending;
  o->recs = from->recs;
  o->recs_cap = from->recs_cap;
  o->nrecs = from->nrecs;
  from->pending = bytes;
  from->recs = recs;
  from->recs_cap = cap;
  return true;
}

/* Takes all of from's records in one copy; false (nothing taken) when o
 * cannot take them that way: failed, or out of memory. */
static bool adopt_whole(output_sink *o, output_sink *from)
{
  size_t n = from->nrecs - from->rec_head, base = o->pending.len;

  if (o->state == OUTPUT_FAILED || o->pending.len != o->committed) return false;
  if (take_whole(o, from)) {
    for (size_t i = 0; i < o->nrecs; i++) checkpoint_ref(o->recs[i].ack);
    o->committed = o->pending.len;
    if (output_queued(o) >= o->high_water) o->full = true;
    if (o->committed - o->head >= o->flush_bytes) output_flush(o);
    return true;
  }
  if (o->recs_cap - o->nrecs < n) {
    size_t cap = o->recs_cap ? o->recs_cap : 1024;
    output_record *p;
    while (cap - o->nrecs < n) cap *= 2;
    if (!(p = realloc(o->recs, cap * sizeof *p))) return false;
    o->recs = p;
    o->recs_cap = cap;
  }
  if (!buf_append(&o->pending, from->pending.data, from->committed))
    return false;
  for (size_t i = from->rec_head; i < from->nrecs; i++) {
    output_record *r = &o->recs[o->nrecs++];
    *r = from->recs[i];
    r->end += base;
    checkpoint_ref(r->ack);
  }
  o->committed = o->pending.len;
  if (output_queued(o) >= o->high_water) o->full = true;
  if (o->committed - o->head >= o->flush_bytes) output_flush(o);
  return true;
}

void output_adopt(output_sink *o, output_sink *from)
{
  size_t start = 0;

  if (from->nrecs > from->rec_head && !adopt_whole(o, from)) {
    /* One by one: each fails as output_commit says. */
    for (size_t i = from->rec_head; i < from->nrecs; i++) {
      const output_record *r = &from->recs[i];
      msg_origin origin = {r->input, r->position, r->is_offset, NULL, 0, r->ack,
                           NULL, NULL, r->read_us};
      buf_append(output_buf(o), from->pending.data + start, r->end - start);
      commit(o, &origin, r->dead_letter, r->head, r->more);
      start = r->end;
    }
  }
  o->records_lost += from->records_lost;
  from->records_lost = 0;
  from->pending.len = from->head = from->boundary = from->committed = 0;
  from->rec_head = from->nrecs = 0;
}

bool output_full(const output_sink *o)
{
  return o->full;
}

bool output_idle(const output_sink *o)
{
  if (o->tx && o->tx->busy(o)) return false;
  return o->state == OUTPUT_FAILED ||
         (o->state == OUTPUT_READY && o->head == o->committed);
}

const output_record *output_front(const output_sink *o, const char **bytes,
                                  size_t *len)
{
  return output_peek(o, 0, bytes, len);
}

const output_record *output_peek(const output_sink *o, size_t n,
                                 const char **bytes, size_t *len)
{
  size_t i = o->rec_head + n, start;

  if (i >= o->nrecs) return NULL;
  start = n == 0 ? o->boundary : o->recs[i - 1].end;
  *bytes = o->pending.data + start;
  *len = o->recs[i].end - start;
  return &o->recs[i];
}

void output_take(output_sink *o)
{
  o->head = o->boundary = o->recs[o->rec_head++].end;
}

void output_delivered(output_sink *o, const output_record *r, uint64_t now_us)
{
  output_count_written(o, r, now_us);
  checkpoint_unref(r->ack);
}

void output_undeliverable(output_sink *o, const output_record *r,
                          const char *bytes, size_t len, const char *reason)
{
  o->ev.failed(o->ev.ud, o, r, bytes, len, reason);
  checkpoint_unref(r->ack);
}

void output_release(output_sink *o, const output_record *r)
{
  o->records_released += 1 + (uint64_t)r->more;
  checkpoint_release(r->ack);
}

void output_summary_tail(const output_sink *o, const output_tx_stats *st,
                         char *line, size_t len)
{
  int n = 0;

  if (st->has_disk_buffer)
    n = snprintf(line, len, "; %" PRIu64 " put in the disk buffer, which "
                 "holds %" PRIu64 " records (%" PRIu64 " bytes)",
                 st->disk_put, st->disk_records, st->disk_bytes);
  if (st->disk_dropped && n >= 0 && (size_t)n < len)
    n += snprintf(line + n, len - (size_t)n, ", %" PRIu64 " dropped from it "
                  "when full (when_full = \"drop_oldest\")", st->disk_dropped);
  if (o->records_released && n >= 0 && (size_t)n < len)
    snprintf(line + n, len - (size_t)n, "; %" PRIu64 " left unacknowledged "
             "for the next run to read again", o->records_released);
}

void output_wake(output_sink *o)
{
  if (o->state == OUTPUT_WAITING) o->state = OUTPUT_READY;
  output_flush(o);
}

void output_close_handles(output_sink *o)
{
  if (o->tx) o->tx->close_handles(o);
}

int output_close(output_sink *o)
{
  int rc = o->tx ? o->tx->close(o) : 0;

  free(o->recs);
  buf_free(&o->pending);
  memset(o, 0, sizeof *o);
  o->fd = -1;
  return rc;
}
