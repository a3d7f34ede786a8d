/*
 * output_kafka.c - the kafka_output (output_kafka.h): a transport of the
 * output queue (output.h) that produces with librdkafka, on the loop
 * thread.
 *
 * librdkafka's own threads talk to the brokers; everything it reports
 * back (delivery reports, errors, its log lines) waits on its main queue,
 * which wakes the loop through a pipe (rd_kafka_queue_io_event_enable) and
 * is served here by rd_kafka_poll. So every callback runs on the loop
 * thread, where the queue, the checkpoints and the dead-letter path live.
 *
 * Each record librdkafka holds has a slot: the record's origin and its
 * checkpoint reference, or its id in the disk buffer. The slot rides as
 * the message's opaque and comes back with its delivery report.
 *
 * The disk buffer's half is kafka_disk.c.
 */
#include "output_kafka.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint.h"
#include "kafka_internal.h"
#include "log.h"
#include "kafka_head.h"

#define ERROR_LOG_INTERVAL_NS (10ull * 1000000000)
#define PURGE_WAIT_MS 5000
#define POLL_BURST 10000
#define POLL_INTERVAL_MS 100
#define PRODUCE_BATCH 256
/* A queue that handed librdkafka nothing for so long has no more for its
 * batches: they go now, not linger.ms later (flush_when_idle). */
#define FLUSH_IDLE_MS 10
/* The flush comes again while a record was delivered so recently. */
#define FLUSH_ANSWERED_MS 500
/* How long a flush may hold the loop for librdkafka's broker threads to
 * see it (they send without waiting for linger.ms while it lasts). */
#define FLUSH_WAIT_MS 1

/* ---- slots ---- */

static slot *slot_new(kafka_output *k)
{
  slot *s = k->free_slots;

  if (!s) {
    slot_chunk *c = malloc(sizeof *c);
    if (!c) return NULL;
    c->next = k->chunks;
    k->chunks = c;
    for (size_t i = 0; i < SLOTS_PER_CHUNK; i++) {
      c->slots[i].next = s;
      s = &c->slots[i];
    }
  }
  k->free_slots = s->next;
  return s;
}

static void slot_free(kafka_output *k, slot *s)
{
  s->next = k->free_slots;
  k->free_slots = s;
}

/* ---- the loop's hold on librdkafka ---- */

static void serve(kafka_output *k);

static void on_poll_timer(uv_timer_t *t)
{
  serve(t->data);
}

/* The loop stays alive while librdkafka holds records, so their reports
 * come in before the run ends; otherwise the wake-up handle keeps no loop
 * running. Meanwhile a timer polls too: with librdkafka 2.0.2 and the
 * broker down at the start, delivery reports were seen to wait on the
 * queue without a wake-up until the stop. */
static void update_ref(kafka_output *k)
{
  if (!k->handles_open) return;
  if (k->in_flight > 0) {
    uv_ref((uv_handle_t *)&k->wake);
    if (!uv_is_active((uv_handle_t *)&k->poll_timer))
      uv_timer_start(&k->poll_timer, on_poll_timer, POLL_INTERVAL_MS,
                     POLL_INTERVAL_MS);
  } else {
    uv_unref((uv_handle_t *)&k->wake);
    uv_timer_stop(&k->poll_timer);
  }
}

/* A long linger.ms (kafka_config.c: default_linger) makes a batch wait
 * for records that are not coming: at the end of a burst, or a lone
 * record. So once the queue is empty, if nothing more was handed to
 * librdkafka for FLUSH_IDLE_MS, what it holds goes at once: rd_kafka_flush
 * lets its broker threads send without lingering while it runs, and serves
 * the delivery reports that come meanwhile, as serve does.
 * The idempotent producer sends one request at a time, so a batch behind
 * one in flight was not sent while the flush lasted and would linger
 * again: the flush comes again every FLUSH_IDLE_MS while the brokers
 * answer (a delivery in the last FLUSH_ANSWERED_MS, and not all of them
 * down). Flushing on through an outage kept a broker crash's records from
 * failing over to the disk buffer (kafka_outage_spec). */
static void on_flush_timer(uv_timer_t *t)
{
  kafka_output *k = t->data;

  if (k->in_flight == 0 || k->o->state == OUTPUT_FAILED) return;
  if (k->produced != k->flush_mark) {
    k->flush_mark = k->produced;
    uv_timer_start(&k->flush_timer, on_flush_timer, FLUSH_IDLE_MS, 0);
    return;
  }
  k->now_ns = uv_hrtime();
  if (k->flushed &&
      (k->brokers_down ||
       k->now_ns - k->delivered_ns > FLUSH_ANSWERED_MS * 1000000ull))
    return;
  k->flushed = true;
  /* Started first, so that serve, producing, does not start a new rest. */
  uv_timer_start(&k->flush_timer, on_flush_timer, FLUSH_IDLE_MS, 0);
  rdk.rd_kafka_flush(k->rk, FLUSH_WAIT_MS);
  serve(k);
}

static void flush_when_idle(kafka_output *k)
{
  if (!k->flush_when_idle || !k->handles_open || k->in_flight == 0 ||
      uv_is_active((uv_handle_t *)&k->flush_timer))
    return;
  k->flush_mark = k->produced;
  k->flushed = false;
  uv_timer_start(&k->flush_timer, on_flush_timer, FLUSH_IDLE_MS, 0);
}

/* ---- producing ---- */

static rd_kafka_topic_t *topic_handle_for(kafka_output *k, const char *name,
                                          size_t len)
{
  topic_handle *t;
  char *copy;

  for (size_t n = 0; n < k->ntopics; n++) {
    size_t i = (k->last_topic + n) % k->ntopics;
    t = &k->topics[i];
    if (t->len == len && memcmp(t->name, name, len) == 0) {
      k->last_topic = i;
      return t->rkt;
    }
  }
  t = realloc(k->topics, (k->ntopics + 1) * sizeof *t);
  if (!t) return NULL;
  k->topics = t;
  if (!(copy = strndup(name, len))) return NULL;
  t = &k->topics[k->ntopics];
  if (!(t->rkt = rdk.rd_kafka_topic_new(k->rk, copy, NULL))) {
    free(copy);
    return NULL;
  }
  t->name = copy;
  t->len = len;
  k->last_topic = k->ntopics++;
  return t->rkt;
}

/* What records of so many bytes (payloads and keys) take in librdkafka:
 * the bytes twice (its message, and the copy in the request that sends
 * it, kept until the broker answers) and KAFKA_RECORD_OVERHEAD each. */
static uint64_t cost(uint64_t bytes, uint64_t records)
{
  return 2 * bytes + records * KAFKA_RECORD_OVERHEAD;
}

/* Whether librdkafka may take a record of len bytes (head (kafka_head.h)
 * included: at least its payload and key) besides the pending ones
 * readied for the same call: what it holds stays within k->budget.
 * librdkafka counts only payloads and keys against
 * queue.buffering.max.kbytes, so its own limit let its records take more
 * than twice memory_bytes. One record always may, however large. */
static bool fits(const kafka_output *k, uint64_t pending, size_t len)
{
  if (k->in_flight == 0 && pending == 0) return true;
  return cost(k->held_bytes, k->in_flight) + pending + cost(len, 1) <=
         k->budget;
}

/* Readies one record (head (kafka_head.h) first) as m for
 * rd_kafka_produce_batch: its topic in m->rkt, its slot as its opaque, its
 * bytes spent from the rate caps. pending: what the records readied before
 * it for the same call count (fits). PRODUCED when ready, else why not. */
static produce_result prepare(kafka_output *k, const output_record *r,
                              const char *bytes, size_t len, bool from_disk,
                              uint64_t dq_id, uint64_t pending,
                              rd_kafka_message_t *m, const char **why)
{
  kafka_head h = {"", NULL, 0, 0};
  uint64_t wait_ms;
  slot *s;

  if (!fits(k, pending, len)) return QUEUE_FULL;
  if (r->head && !kafka_head_parse(bytes, r->head, &h)) {
    *why = "the record's topic and key are unreadable";
    return REJECTED;
  }
  if (!rate_cap_allows(&k->cap, len - r->head, k->now_ns, &wait_ms)) {
    kafka_wake_later(k, wait_ms);
    return RATE_CAPPED;
  }
  m->rkt = h.topic_len ? topic_handle_for(k, h.topic, h.topic_len)
                       : topic_handle_for(k, k->topic, k->topic_len);
  if (!m->rkt || !(s = slot_new(k))) {
    *why = "out of memory";
    return REJECTED;
  }
  *s = (slot){*r, dq_id, k->now_ns, k->next_seq++, from_disk, NULL};
  m->payload = (void *)(bytes + r->head);
  m->len = len - r->head;
  m->key = (void *)h.key;
  m->key_len = h.key_len;
  m->_private = s;
  rate_cap_spend(&k->cap, m->len);
  return PRODUCED;
}

void kafka_refuse(kafka_output *k, const output_record *r,
                  const char *payload, size_t len, const char *why)
{
  k->rejected++;
  /* At the stop what librdkafka gives back is not refused by Kafka. */
  if (!k->stopped) kafka_status_refused(k, why);
  output_undeliverable(k->o, r, payload, len, why);
}

/* A prepared record that was not produced gives its slot and its rate
 * back. */
static void unprepare(kafka_output *k, rd_kafka_message_t *m)
{
  slot_free(k, m->_private);
  rate_cap_refund(&k->cap, m->len);
}

/* Hands m[0..n) (one topic) to librdkafka in one call: one clock reading
 * and one topic lock for them all, where rd_kafka_producev took three
 * readings and the lock for each record. librdkafka copies them
 * (F_COPY). Their errors come back in m[i].err: once the queue is full,
 * every record after it fails so too, so a prefix goes, in order. */
static void produce_batch(kafka_output *k, rd_kafka_message_t *m, size_t n)
{
  int good = rdk.rd_kafka_produce_batch(m[0].rkt, RD_KAFKA_PARTITION_UA,
                                        RD_KAFKA_MSG_F_COPY, m, (int)n);

  k->in_flight += (uint64_t)good;
  k->produced += (uint64_t)good;
  for (size_t i = 0; i < n; i++)
    if (!m[i].err) {
      k->held_bytes += m[i].len + m[i].key_len;
      if (!((slot *)m[i]._private)->from_disk) {
        k->direct_in_flight++;
        k->direct_bytes += m[i].len + m[i].key_len;
      }
    }
}

/* Why librdkafka refused m: *why says for REJECTED and FATAL. */
static produce_result refused(const rd_kafka_message_t *m, const char **why)
{
  if (m->err == RD_KAFKA_RESP_ERR__QUEUE_FULL) return QUEUE_FULL;
  *why = rdk.rd_kafka_err2str(m->err);
  return m->err == RD_KAFKA_RESP_ERR__FATAL ? FATAL : REJECTED;
}

produce_result kafka_produce(kafka_output *k, const output_record *r,
                             const char *bytes, size_t len, bool from_disk,
                             uint64_t dq_id, const char **why)
{
  rd_kafka_message_t m;
  produce_result pr = prepare(k, r, bytes, len, from_disk, dq_id, 0, &m, why);

  if (pr != PRODUCED) return pr;
  produce_batch(k, &m, 1);
  if (!m.err) return PRODUCED;
  unprepare(k, &m);
  return refused(&m, why);
}

/* A record librdkafka rejected in a batch, waiting to be refused once
 * the batch's records are all taken off the queue. */
typedef struct {
  output_record r;
  size_t off, len;          /* its payload in the copy of rejected bytes */
  const char *why;
} rejected_record;

/* Refuses (dead-letters) the records librdkafka rejected, from copies of
 * their payloads: a refusal may queue a dead letter on this very sink,
 * moving its buffer. */
static void refuse_rejected(kafka_output *k, const rejected_record *rej,
                            size_t nrej, const buf *bytes)
{
  for (size_t i = 0; i < nrej; i++)
    kafka_refuse(k, &rej[i].r, bytes->data ? bytes->data + rej[i].off : "",
                 rej[i].len, rej[i].why);
}

/* Produces records from the front of the queue, up to PRODUCE_BATCH of
 * them for one topic in one call, and takes them off the queue: those
 * librdkafka took, and those it rejected, which are then refused. No
 * callback runs until every record librdkafka took is off the queue, so
 * none can be failed there as well. PRODUCED, or why the front record
 * cannot go now: QUEUE_FULL, RATE_CAPPED, FATAL (with *why), or REJECTED
 * before librdkafka saw it (with *why: the caller refuses it). */
static produce_result produce_front(kafka_output *k, output_sink *o,
                                    const char **why)
{
  rd_kafka_message_t m[PRODUCE_BATCH];
  rejected_record rej[PRODUCE_BATCH];
  buf rejected_bytes = {0};
  produce_result pr = PRODUCED;
  uint64_t pending = 0;
  size_t n, nrej = 0;

  for (n = 0; n < PRODUCE_BATCH; n++) {
    const char *bytes;
    size_t len;
    const output_record *r = output_peek(o, n, &bytes, &len);
    if (!r) break;
    pr = prepare(k, r, bytes, len, false, 0, pending, &m[n], why);
    if (pr != PRODUCED) break;
    if (m[n].rkt != m[0].rkt) {
      unprepare(k, &m[n]);
      break;
    }
    pending += cost(len, 1);
  }
  /* What stopped the batch concerns its first record only: the others
   * are produced first. */
  if (n == 0) return pr;
  produce_batch(k, m, n);
  pr = PRODUCED;
  for (size_t i = 0; i < n; i++) {
    produce_result stop;
    if (!m[i].err) {
      output_take(o);
      continue;
    }
    unprepare(k, &m[i]);
    stop = refused(&m[i], why);
    if (stop != REJECTED) {
      /* A full queue fails every record after it too, and a fatal error
       * every record of the call. */
      for (size_t j = i + 1; j < n; j++) unprepare(k, &m[j]);
      pr = stop;
      break;
    }
    rej[nrej] = (rejected_record){o->recs[o->rec_head], rejected_bytes.len,
                                  m[i].len, *why};
    if (!buf_append(&rejected_bytes, m[i].payload, m[i].len))
      rej[nrej].len = 0; /* refused all the same, without its bytes */
    nrej++;
    output_take(o);
  }
  refuse_rejected(k, rej, nrej, &rejected_bytes);
  buf_free(&rejected_bytes);
  return pr;
}

/* ---- the transport ---- */

/* Whether the queue's records may go to the disk buffer now. None may
 * while librdkafka holds a record that is not from it: that record would
 * hold its input's checkpoint behind them, and, moved to disk in an
 * outage, go behind them. So the queue waits for librdkafka's reports, or
 * for every broker to be down, which moves librdkafka's records to disk
 * first. Only if they do not fit there do records go to disk behind them;
 * then they stay in librdkafka until delivered (direct_behind). */
static bool may_spill(kafka_output *k)
{
  if (k->direct_in_flight == 0 || k->direct_behind) return true;
  if (!k->brokers_down) return false;
  kafka_keep_held(k);
  if (k->o->state == OUTPUT_FAILED) return false;
  if (k->direct_in_flight > 0) k->direct_behind = true;
  return true;
}

/* The queue's front record goes to the disk buffer if it may; false when
 * it cannot now. (The front is read after may_spill, whose poll may have
 * moved the queue's bytes.) */
static bool spill_front(kafka_output *k, output_sink *o)
{
  const char *bytes;
  size_t len;
  const output_record *r;

  if (!may_spill(k)) return false;
  if (!(r = output_front(o, &bytes, &len))) return true;
  return kafka_spill_front(k, r, bytes, len);
}

/* Takes queued records: first what the disk buffer holds, then the queue,
 * which goes to the disk buffer behind its backlog or when librdkafka is
 * full. */
static void send_records(output_sink *o)
{
  kafka_output *k = o->tx_state;
  bool blocked;

  k->now_ns = uv_hrtime();
  /* With librdkafka full, the queue's records still go to the disk buffer;
   * under a rate cap they wait where they are. */
  blocked = k->dq && kafka_send_from_disk(k) == RATE_CAPPED;

  if (o->state == OUTPUT_FAILED) return;
  while (!blocked) {
    const char *bytes, *why = NULL;
    size_t len;
    const output_record *r = output_front(o, &bytes, &len);
    produce_result pr;
    if (!r) break;
    if (k->dq && kafka_disk_backlog(k)) {
      blocked = !spill_front(k, o);
      if (o->state == OUTPUT_FAILED) return;
      continue;
    }
    pr = produce_front(k, o, &why);
    if (o->state == OUTPUT_FAILED) return;
    if (pr == PRODUCED) continue;
    r = output_front(o, &bytes, &len);
    if (pr == QUEUE_FULL && k->dq) {
      blocked = !spill_front(k, o);
      if (o->state == OUTPUT_FAILED) return;
    } else if (pr == REJECTED) {
      output_record copy = *r;
      output_take(o);
      kafka_refuse(k, &copy, bytes + copy.head, len - copy.head, why);
    } else if (pr == FATAL) {
      output_fail(o, why);
      return;
    } else {
      blocked = true;
    }
  }
  switch (kafka_sync_spilled(k)) {
  case DQ_OK: break;
  case DQ_NO_SPACE: blocked = true; break;
  default: return;
  }
  o->state = blocked ? OUTPUT_WAITING : OUTPUT_READY;
  if (o->rec_head == o->nrecs) flush_when_idle(k);
  update_ref(k);
}

static bool purged(rd_kafka_resp_err_t err)
{
  return err == RD_KAFKA_RESP_ERR__PURGE_QUEUE ||
         err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT;
}

/* librdkafka's delivery report, served on the loop thread. */
static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m,
                        void *opaque)
{
  kafka_output *k = opaque;
  slot *s = m->_private;
  (void)rk;

  k->in_flight--;
  if (!s->from_disk) {
    k->direct_bytes -= m->len + m->key_len;
    if (--k->direct_in_flight == 0) k->direct_behind = false;
  }
  k->held_bytes -= m->len + m->key_len;
  k->settled = true;
  if (!m->err) {
    kafka_status_delivered(k);
    k->brokers_down = false;
    latency_add(&k->latency, (k->now_ns - s->sent_ns) / 1000);
    k->delivered++;
    k->delivered_ns = k->now_ns;
    if (s->from_disk) {
      k->from_disk++;
      dq_ack(k->dq, s->dq_id);
      k->o->records_written++;
    } else {
      output_delivered(k->o, &s->r, k->now_ns / 1000);
    }
  } else if (k->dq && purged(m->err)) {
    kafka_keep_purged(k, s, m);
  } else if (purged(m->err) && !s->from_disk &&
             checkpoint_rereadable(s->r.ack)) {
    output_release(k->o, &s->r);
  } else {
    char why[512];
    snprintf(why, sizeof why, "Kafka did not take the record (topic %s): %s",
             rdk.rd_kafka_topic_name(m->rkt), rdk.rd_kafka_err2str(m->err));
    kafka_refuse(k, &s->r, m->payload, m->len, why);
    if (s->from_disk) dq_ack(k->dq, s->dq_id);
  }
  slot_free(k, s);
}

/* Errors come often while a broker is down: the first is logged, then
 * one line every ten seconds says how many more came. */
static void on_error(rd_kafka_t *rk, int err, const char *reason,
                     void *opaque)
{
  kafka_output *k = opaque;
  uint64_t now = uv_hrtime();

  if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
    kafka_status_brokers_down(k);
    k->brokers_down = true;
    /* A queue waiting for librdkafka's records may go to disk now. */
    k->settled = true;
  }
  if (err == RD_KAFKA_RESP_ERR__FATAL) {
    char why[sizeof k->fatal - 64];
    rdk.rd_kafka_fatal_error(rk, why, sizeof why);
    snprintf(k->fatal, sizeof k->fatal, "librdkafka's fatal error: %s", why);
    return;
  }
  if (k->error_logged_ns && now - k->error_logged_ns < ERROR_LOG_INTERVAL_NS) {
    k->errors_unlogged++;
    return;
  }
  if (k->errors_unlogged)
    log_warning("%s: Kafka: %s (and %" PRIu64 " more errors in the last %llu s)",
            k->o->name, reason, k->errors_unlogged,
            ERROR_LOG_INTERVAL_NS / 1000000000);
  else
    log_warning("%s: Kafka: %s", k->o->name, reason);
  k->error_logged_ns = now;
  k->errors_unlogged = 0;
}

static void on_log(const rd_kafka_t *rk, int level, const char *fac,
                   const char *line)
{
  kafka_output *k = rdk.rd_kafka_opaque(rk);
  /* librdkafka's levels are syslog's: 3 and below errors, 4 warnings,
   * 7 debug. */
  log_level at = level <= 3 ? LOG_LEVEL_ERROR : level == 4 ? LOG_LEVEL_WARNING
                 : level >= 7 ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO;

  /* A failure is reported to on_error too, which keeps the count. */
  if (strcmp(fac, "FAIL") == 0) return;
  log_at(at, "%s: librdkafka %s: %s", k->o->name, fac, line);
}

/* Serves what librdkafka queued for us; then the output goes on if
 * records were settled. */
static void serve(kafka_output *k)
{
  k->now_ns = uv_hrtime();
  for (int i = 0; i < POLL_BURST && rdk.rd_kafka_poll(k->rk, 0) > 0; i++)
    ;
  kafka_status_serve(k);
  if (k->brokers_down && k->dq && k->direct_in_flight > 0 &&
      k->o->state != OUTPUT_FAILED)
    kafka_keep_held(k);
  if (k->fatal[0] && k->o->state != OUTPUT_FAILED)
    output_fail(k->o, k->fatal);
  if (k->settled && k->o->state != OUTPUT_FAILED) {
    k->settled = false;
    output_wake(k->o);
  }
  update_ref(k);
}

static void on_wake(uv_poll_t *p, int status, int events)
{
  kafka_output *k = p->data;
  char drain[256];
  (void)status;
  (void)events;

  while (read(k->wake_fds[0], drain, sizeof drain) > 0)
    ;
  serve(k);
}

static void on_timer(uv_timer_t *t)
{
  kafka_output *k = t->data;

  if (k->o->state != OUTPUT_FAILED) output_wake(k->o);
}

void kafka_wake_later(kafka_output *k, uint64_t ms)
{
  if (k->handles_open && !uv_is_active((uv_handle_t *)&k->timer))
    uv_timer_start(&k->timer, on_timer, ms, 0);
}

/* Records in librdkafka, or in the disk buffer to be sent, keep the run
 * going; once failed (stopped at the deadline) it holds nothing more. */
static bool busy(const output_sink *o)
{
  const kafka_output *k = o->tx_state;

  if (o->state == OUTPUT_FAILED) return false;
  return k->in_flight > 0 || k->nunsynced > 0 || (k->dq && kafka_disk_backlog(k));
}

/* Without a disk buffer, the queue's records go back to inputs that can
 * read them again (output_release); the rest fail with reason, from a copy
 * of their bytes: a dead letter may be queued on this very sink. */
static void release_queued(kafka_output *k, output_sink *o,
                           const char *reason)
{
  const char *bytes;
  size_t len;
  const output_record *r;

  while ((r = output_front(o, &bytes, &len))) {
    output_record rec = *r;
    output_take(o);
    if (checkpoint_rereadable(rec.ack)) {
      output_release(o, &rec);
      continue;
    }
    k->scratch.len = 0;
    buf_append(&k->scratch, bytes + rec.head, len - rec.head);
    output_undeliverable(o, &rec, k->scratch.data ? k->scratch.data : "",
                         k->scratch.len, reason);
  }
}

/* Stopping at the deadline, or failing: librdkafka gives back what it
 * holds, which goes to the disk buffer with the queue's records if there
 * is one. Without one, records of inputs that can read them again (files
 * with a state_dir) stay unacknowledged for the next run; the rest go to
 * the dead-letter path. */
static void fail(output_sink *o, const char *reason)
{
  kafka_output *k = o->tx_state;
  uint64_t until = (k->now_ns = uv_hrtime()) + PURGE_WAIT_MS * 1000000ull;

  k->stopped = true;
  rdk.rd_kafka_purge(k->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
  while (k->in_flight > 0 && uv_hrtime() < until) rdk.rd_kafka_poll(k->rk, 100);
  if (k->in_flight > 0) {
    /* Their reports will not come before the run ends: they are lost. */
    log_warning("%s: librdkafka kept %" PRIu64 " records past the purge; they "
            "count as lost: %s", o->name, k->in_flight, reason);
    o->records_lost += k->in_flight;
  }
  if (!k->dq) release_queued(k, o, reason);
  if (o->records_released)
    log_warning("%s: stopped; %" PRIu64 " records Kafka did not take stay "
            "unacknowledged: their inputs read them again in the next run",
            o->name, o->records_released);
  while (k->dq) {
    const char *bytes;
    size_t len;
    const output_record *r = output_front(o, &bytes, &len);
    char err[256];
    if (!r || kafka_spill(k, r, bytes, len, err, sizeof err) != DQ_OK) break;
    output_take(o);
  }
  if (k->dq && kafka_sync_spilled(k) == DQ_NO_SPACE)
    kafka_fail_unsynced(k, "no space left to write the disk buffer");
  if (k->dq)
    kafka_log_backlog(k, "stopped; the disk buffer keeps what Kafka did not take "
                "for the next run");
  update_ref(k);
}

static void save_cursor(output_sink *o)
{
  kafka_output *k = o->tx_state;
  char err[256];

  if (k->dq && dq_save_cursor(k->dq, err, sizeof err) != 0)
    log_error("%s: %s", o->name, err);
}

static void stats(const output_sink *o, output_tx_stats *st)
{
  const kafka_output *k = o->tx_state;

  *st = (output_tx_stats){k->produced, k->delivered, k->rejected,
                          k->in_flight, k->held_bytes, k->dq != NULL, 0, 0,
                          k->spilled, k->from_disk, {0}, 0, 0, 0};
  latency_report(&k->latency, st->latency_ms);
  if (k->dq) {
    dq_stats_t ds;
    dq_stats(k->dq, &ds);
    st->disk_records = ds.records;
    st->disk_bytes = ds.bytes;
    st->disk_dropped = ds.dropped;
  }
}

static void summary(output_sink *o, char *line, size_t len)
{
  output_tx_stats st;
  int n;

  stats(o, &st);
  n = snprintf(line, len, "Kafka: %" PRIu64 " produced, %" PRIu64
               " delivered (%" PRIu64 " of them from the disk buffer), %"
               PRIu64 " refused; delivery latency p50 %.1f ms, p95 %.1f "
               "ms, p99 %.1f ms, p99.9 %.1f ms, max %.1f ms", st.sent,
               st.delivered, st.disk_delivered, st.refused, st.latency_ms[0],
               st.latency_ms[1], st.latency_ms[2], st.latency_ms[3],
               st.latency_ms[4]);
  if (n > 0 && (size_t)n < len)
    output_summary_tail(o, &st, line + n, len - (size_t)n);
}

static void close_handles(output_sink *o)
{
  kafka_output *k = o->tx_state;

  if (!k->handles_open) return;
  k->handles_open = false;
  uv_close((uv_handle_t *)&k->wake, NULL);
  uv_close((uv_handle_t *)&k->timer, NULL);
  uv_close((uv_handle_t *)&k->poll_timer, NULL);
  uv_close((uv_handle_t *)&k->flush_timer, NULL);
}

static int close_output(output_sink *o)
{
  kafka_output *k = o->tx_state;
  int rc = 0;

  kafka_status_close(k);
  for (size_t i = 0; i < k->ntopics; i++) {
    rdk.rd_kafka_topic_destroy(k->topics[i].rkt);
    free(k->topics[i].name);
  }
  if (k->rk) rdk.rd_kafka_destroy(k->rk);
  if (k->dq && dq_close(k->dq) != 0) rc = -1;
  for (size_t i = 0; i < k->nnames; i++) free(k->names[i]);
  while (k->chunks) {
    slot_chunk *next = k->chunks->next;
    free(k->chunks);
    k->chunks = next;
  }
  if (k->wake_fds[0] >= 0) close(k->wake_fds[0]);
  if (k->wake_fds[1] >= 0) close(k->wake_fds[1]);
  buf_free(&k->stash);
  buf_free(&k->spill);
  buf_free(&k->scratch);
  buf_free(&k->moved_bytes);
  free(k->moved);
  free(k->unsynced);
  free(k->names);
  free(k->topics);
  free(k->topic);
  free(k);
  return rc;
}

static const output_transport kafka_transport = {
  send_records, busy, fail, save_cursor, summary, stats, close_handles,
  close_output, NULL /* no write_lines: it sends records one by one */
};

/* ---- opening ---- */

static bool names_brokers(const char *property)
{
  return strcmp(property, "bootstrap.servers") == 0 ||
         strcmp(property, "metadata.broker.list") == 0;
}

/* The linger.ms conf has, as librdkafka reads it. */
static double linger_ms(const rd_kafka_conf_t *conf)
{
  char value[32];
  size_t size = sizeof value;

  if (rdk.rd_kafka_conf_get(conf, "linger.ms", value, &size) !=
      RD_KAFKA_CONF_OK)
    return 0;
  return strtod(value, NULL);
}

/* The producer of cfg; with connect false, one that knows no broker, so
 * it never connects: what --check builds to find what a start would
 * (an unsupported SASL mechanism, TLS files that cannot be read). */
static rd_kafka_t *make_producer(kafka_output *k, const config_kafka *cfg,
                                 bool connect, char *err, size_t errlen)
{
  rd_kafka_conf_t *conf = rdk.rd_kafka_conf_new();
  char why[512];
  rd_kafka_t *rk;

  for (char **p = cfg->properties; p && *p; p += 2)
    if ((connect || !names_brokers(p[0])) && rdk.rd_kafka_conf_set(conf, p[0], p[1], why, sizeof why) != RD_KAFKA_CONF_OK) {
      snprintf(err, errlen, "property '%s': %s", p[0], why);
      rdk.rd_kafka_conf_destroy(conf);
      return NULL;
    }
  if (rdk.rd_kafka_conf_set(conf, "log.queue", "true", why, sizeof why) !=
      RD_KAFKA_CONF_OK) {
    snprintf(err, errlen, "%s", why);
    rdk.rd_kafka_conf_destroy(conf);
    return NULL;
  }
  if (k) k->flush_when_idle = linger_ms(conf) > FLUSH_IDLE_MS;
  rdk.rd_kafka_conf_set_opaque(conf, k);
  rdk.rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  rdk.rd_kafka_conf_set_error_cb(conf, on_error);
  rdk.rd_kafka_conf_set_log_cb(conf, on_log);
  if (!(rk = rdk.rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof why))) {
    snprintf(err, errlen, "cannot make the producer: %s", why);
    rdk.rd_kafka_conf_destroy(conf);
    return NULL;
  }
  return rk;
}

/* librdkafka's main queue (reports, errors, its log) wakes the loop. */
static int wire_queue(kafka_output *k, uv_loop_t *loop, char *err,
                      size_t errlen)
{
  int rc = uv_pipe(k->wake_fds, UV_NONBLOCK_PIPE, UV_NONBLOCK_PIPE);
  rd_kafka_queue_t *main_queue;

  if (rc != 0) {
    k->wake_fds[0] = k->wake_fds[1] = -1;
    snprintf(err, errlen, "cannot make a pipe: %s", uv_strerror(rc));
    return -1;
  }
  if (uv_poll_init(loop, &k->wake, k->wake_fds[0]) != 0) {
    snprintf(err, errlen, "cannot poll the pipe");
    return -1;
  }
  uv_timer_init(loop, &k->timer);
  uv_timer_init(loop, &k->poll_timer);
  uv_timer_init(loop, &k->flush_timer);
  k->wake.data = k->timer.data = k->poll_timer.data = k->flush_timer.data = k;
  k->handles_open = true;
  uv_poll_start(&k->wake, UV_READABLE, on_wake);
  uv_unref((uv_handle_t *)&k->wake);
  main_queue = rdk.rd_kafka_queue_get_main(k->rk);
  rdk.rd_kafka_set_log_queue(k->rk, main_queue);
  rdk.rd_kafka_queue_io_event_enable(main_queue, k->wake_fds[1], "1", 1);
  rdk.rd_kafka_queue_destroy(main_queue);
  return 0;
}

static int open_disk_buffer(kafka_output *k, const config_kafka *cfg,
                            const char *dir, char *err, size_t errlen)
{
  dq_stats_t st;

  if (dq_open(&k->dq, dir, cfg->buffer.max_bytes, cfg->buffer.segment_bytes,
              err, errlen) != 0)
    return -1;
  k->buffer_max = cfg->buffer.max_bytes;
  if (cfg->buffer.when_full == DISK_BUFFER_DROP_OLDEST) dq_drop_oldest(k->dq);
  dq_stats(k->dq, &st);
  if (st.records > 0) {
    log_msg("%s: the disk buffer %s holds %" PRIu64 " records (%" PRIu64
            " bytes) from an earlier run; they go out first", k->o->name, dir,
            st.records, st.bytes);
    k->spill_logged = true;
  }
  return 0;
}

int output_kafka_open(output_sink *o, uv_loop_t *loop, const char *name,
                      const config_kafka *cfg, const char *buffer_dir,
                      output_events ev, char *err, size_t errlen)
{
  kafka_output *k;

  if (kafka_api_load(err, errlen) != 0) return -1;
  k = calloc(1, sizeof *k);
  if (!k || !(k->topic = strdup(cfg->topic))) {
    free(k);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  k->topic_len = strlen(k->topic);
  /* With a disk buffer, half of memory_bytes is kept for the copy of
   * librdkafka's records that kafka_keep_held makes in an outage. */
  k->budget = buffer_dir ? cfg->memory_bytes / 2 : cfg->memory_bytes;
  k->wake_fds[0] = k->wake_fds[1] = -1;
  rate_cap_init(&k->cap, cfg->bytes_per_second, cfg->messages_per_second,
                uv_hrtime());
  output_open_transport(o, loop, name, &kafka_transport, k, ev);
  k->o = o;
  /* On failure the sink stays as it is: the pipeline's teardown closes
   * its handles and then frees it, as it does every sink's. The disk
   * buffer comes first: when another process has it, this one stops
   * before its producer talks to a broker. */
  if ((buffer_dir && open_disk_buffer(k, cfg, buffer_dir, err, errlen) != 0) ||
      !(k->rk = make_producer(k, cfg, true, err, errlen)) ||
      wire_queue(k, loop, err, errlen) != 0)
    return -1;
  /* What the disk buffer kept from an earlier run goes out first, new
   * records or not. */
  if (k->dq && kafka_disk_backlog(k)) kafka_wake_later(k, 0);
  if (!strstr(k->topic, "%{")) {
    rd_kafka_topic_t *rkt = topic_handle_for(k, k->topic, k->topic_len);
    if (rkt) kafka_status_start(k, rkt);
  }
  return 0;
}

int output_kafka_check(const config_kafka *cfg, char *err, size_t errlen)
{
  rd_kafka_t *rk;

  if (kafka_api_load(err, errlen) != 0 ||
      !(rk = make_producer(NULL, cfg, false, err, errlen)))
    return -1;
  rdk.rd_kafka_destroy(rk);
  return 0;
}
