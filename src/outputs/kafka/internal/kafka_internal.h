/*
 * kafka_internal.h - what the kafka_output's two halves share:
 * output_kafka.c (the producer and the transport) and kafka_disk.c (the
 * disk buffer: spilling records to it, producing them back from it).
 */
#ifndef LUMBERJIT_KAFKA_INTERNAL_H
#define LUMBERJIT_KAFKA_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "buf.h"
#include "disk_queue.h"
#include "kafka_api.h"
#include "latency.h"
#include "output.h"
#include "rate_cap.h"

#define SLOTS_PER_CHUNK 1024
#define DISK_RETRY_MS 1000
#define REFUSALS_LOGGED 8

typedef struct slot {
  output_record r;          /* origin and checkpoint reference */
  uint64_t dq_id;           /* from_disk: its id in the disk buffer */
  uint64_t sent_ns;         /* uv_hrtime when produced */
  uint64_t seq;             /* produced so many records after the first */
  bool from_disk;
  struct slot *next;        /* free list */
} slot;

typedef struct slot_chunk {
  struct slot_chunk *next;
  slot slots[SLOTS_PER_CHUNK];
} slot_chunk;

typedef struct {
  char *name;
  size_t len;
  rd_kafka_topic_t *rkt;
} topic_handle;

/* Why a record could not be handed to librdkafka now. */
typedef enum { PRODUCED, QUEUE_FULL, RATE_CAPPED, REJECTED, FATAL } produce_result;

typedef struct kafka_output {
  output_sink *o;
  rd_kafka_t *rk;
  char *topic;              /* the configured template's text: the topic */
  size_t topic_len;         /* of records whose head names none */
  topic_handle *topics;     /* the topics produced to, by first use */
  size_t ntopics, last_topic;
  int wake_fds[2];          /* librdkafka writes [1] when it has news */
  uv_poll_t wake;
  uv_timer_t timer;         /* rate caps, disk retries, the first send */
  uv_timer_t poll_timer;    /* polls while librdkafka holds records */
  uv_timer_t flush_timer;   /* flushes once the queue rests (FLUSH_IDLE_MS) */
  bool flush_when_idle;     /* linger.ms is longer than FLUSH_IDLE_MS */
  uint64_t flush_mark;      /* `produced` when flush_timer was started */
  bool flushed;             /* flush_timer flushed in this rest */
  uint64_t delivered_ns;    /* uv_hrtime of the last delivery */
  bool handles_open;
  slot *free_slots;
  slot_chunk *chunks;
  uint64_t in_flight;       /* records librdkafka holds */
  uint64_t direct_in_flight; /* of them, those not from the disk buffer:
                               they hold their inputs' checkpoints */
  uint64_t direct_bytes;    /* their payloads and keys */
  bool direct_behind;       /* records went to disk behind them (they did
                               not fit there): they stay in librdkafka */
  uint64_t held_bytes;      /* their payloads and keys */
  uint64_t budget;          /* what they may take (output_kafka.c: fits) */
  bool brokers_down;        /* librdkafka said every broker is, and no
                               record was delivered since */
  bool stopped;             /* fail() ran: the stop deadline, or a failure */
  bool settled;             /* a poll settled records: the queue may go on */
  uint64_t now_ns;          /* uv_hrtime at the start of this send or poll:
                               one clock read for a batch, not per record */
  char fatal[512];          /* librdkafka's fatal error, once raised */

  /* The disk buffer. */
  disk_queue *dq;
  buf stash;                /* a record read from it, not yet produced */
  uint64_t stash_id;
  bool stashed;
  buf spill;                /* a record being written to it */
  uint64_t next_seq;        /* the next slot's seq */
  bool moving;              /* kafka_keep_held is taking librdkafka's: */
  bool moved_from_disk;     /* some were read from the disk buffer */
  struct moved_record *moved; /* the records it gave back so far */
  size_t nmoved, moved_cap;
  buf moved_bytes;          /* their heads and payloads */
  buf scratch;              /* a record's bytes on their way to disk or
                               to the dead-letter path */
  output_record *unsynced;  /* written to it, not yet fsynced: they keep */
  size_t nunsynced, unsynced_cap; /* their checkpoint references */
  char **names;             /* input names of records read from it */
  size_t nnames;
  uint64_t buffer_max;      /* its cap, bytes */
  bool spill_logged, full_logged; /* see kafka_note_backlog */

  rate_cap cap;              /* max_bytes/messages_per_second */

  /* What the operator is told (kafka_status.c). */
  uv_thread_t probe;        /* asks for the topic's metadata at the start */
  rd_kafka_topic_t *probe_rkt;
  bool probing;             /* it was started and is not yet joined */
  atomic_bool probed;       /* its answer is in probe_err and the counts */
  rd_kafka_resp_err_t probe_err;
  int probe_partitions, probe_brokers;
  uint64_t down_ns;         /* when every broker went down; 0: they are up */
  uint64_t back_ns;         /* when one came back, until its backlog drained */
  uint64_t backlog;         /* the records waiting then */
  uint64_t backlog_settled; /* delivered + rejected once they are settled */
  char *refusals[REFUSALS_LOGGED]; /* reasons of refusals logged */
  size_t nrefusals;

  uint64_t produced, delivered, from_disk, spilled, rejected;
  latency_hist latency;
  uint64_t error_logged_ns, errors_unlogged;
  /* kafka_keep_held's line: when last logged, what moved since. */
  uint64_t held_logged_ns, held_unlogged, held_moves_unlogged;
} kafka_output;

/* ---- output_kafka.c ---- */

/* Hands one record (head (kafka_head.h) first) to librdkafka; from_disk: it is
 * the disk buffer's record dq_id. REJECTED and FATAL say why. (The
 * queue's records go in batches.) */
produce_result kafka_produce(kafka_output *k, const output_record *r,
                             const char *bytes, size_t len, bool from_disk,
                             uint64_t dq_id, const char **why);
/* A record Kafka will not take goes to the dead-letter path with why
 * (payload: without its head (kafka_head.h)), and counts as refused. */
void kafka_refuse(kafka_output *k, const output_record *r,
                  const char *payload, size_t len, const char *why);
/* The output tries again in ms (rate caps, a full disk). */
void kafka_wake_later(kafka_output *k, uint64_t ms);

/* ---- kafka_disk.c ---- */

/* Produces from the disk buffer while librdkafka takes them: PRODUCED
 * once it ran out, or why it stopped (QUEUE_FULL, RATE_CAPPED, FATAL: the
 * output failed). */
produce_result kafka_send_from_disk(kafka_output *k);
/* Records wait in the disk buffer: new ones must go behind them. */
bool kafka_disk_backlog(const kafka_output *k);
/* The queue's front record goes to the disk buffer, its checkpoint
 * reference held until kafka_sync_spilled; false when it cannot now (the
 * disk buffer is full, or the output failed). */
bool kafka_spill_front(kafka_output *k, const output_record *r,
                       const char *bytes, size_t len);
/* The same for one the queue no longer holds; DQ_OK or why not. */
dq_result kafka_spill(kafka_output *k, const output_record *r,
                      const char *bytes, size_t len, char *err,
                      size_t errlen);
/* fsyncs what was spilled; then its records count as kept and their
 * inputs may move their checkpoints past them. DQ_NO_SPACE: they wait
 * (their references held) for a retry; DQ_ERROR: the output fails. */
dq_result kafka_sync_spilled(kafka_output *k);
/* Spilled records that cannot be made durable fail with reason. */
void kafka_fail_unsynced(kafka_output *k, const char *reason);
/* A record librdkafka gave back (the stop, an outage) goes to the disk
 * buffer. */
void kafka_keep_purged(kafka_output *k, slot *s, const rd_kafka_message_t *m);
/* Every broker is down: what librdkafka holds goes to the disk buffer,
 * in the order it was produced, if it fits; logged. */
void kafka_keep_held(kafka_output *k);
/* Logs the disk buffer's way back to normal: below half its cap, empty. */
void kafka_note_backlog(kafka_output *k);
/* A line about what the disk buffer holds, after `what`. */
void kafka_log_backlog(kafka_output *k, const char *what);

/* ---- kafka_status.c: what the output tells the operator ---- */

/* Asks a broker, on a thread of its own, whether rkt, the configured
 * topic, exists (a template names its topics record by record: those are
 * told at their first refusal); the answer is logged by
 * kafka_status_serve: its partitions, or that it does not exist and its
 * records will be dead-lettered. */
void kafka_status_start(kafka_output *k, rd_kafka_topic_t *rkt);
/* After each poll: logs the topic's answer, and the end of an outage
 * once the records that waited through it are settled. */
void kafka_status_serve(kafka_output *k);
/* librdkafka said every broker is down: the first time an outage, logs
 * how many records wait where. */
void kafka_status_brokers_down(kafka_output *k);
/* A record was delivered: if brokers were down, they are back. */
void kafka_status_delivered(kafka_output *k);
/* A record is refused with why: the first of each reason is logged. */
void kafka_status_refused(kafka_output *k, const char *why);
/* Joins the topic's thread (before the producer goes) and frees. */
void kafka_status_close(kafka_output *k);

#endif
