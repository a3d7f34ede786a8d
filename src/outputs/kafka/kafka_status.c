/*
 * kafka_status.c - what the kafka_output tells the operator, once for each
 * change, never once a record (kafka_internal.h says when each is called):
 *
 *   output 'kafka': topic 'logs': 3 partitions on 1 broker
 *   output 'kafka': topic 'logs' does not exist and the brokers did not
 *     create it: its records go to the dead-letter path ...
 *   output 'kafka': Kafka refuses records: Kafka did not take the record
 *     (topic logs): Broker: Unknown topic or partition; they go to the
 *     dead-letter path (logged once a reason)
 *   output 'kafka': every broker is down; 120000 records waiting (40000
 *     in the queue, 60000 in librdkafka, 20000 in the disk buffer)
 *   output 'kafka': brokers back after 35.2 s; backlog of 120000 drained
 *     in 4.1 s
 *
 * Without the first two, a missing topic said nothing until librdkafka
 * gave up on it (topic.metadata.propagation.max.ms, 30 s), and then every
 * record was dead-lettered; without the last two, an outage showed only
 * librdkafka's "Disconnected".
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kafka_internal.h"
#include "log.h"

/* How long the thread waits for a broker to answer. A stop sooner than
 * this after a start with no broker reachable waits for the rest of it. */
#define PROBE_TIMEOUT_MS 3000

static void probe_topic(void *arg)
{
  kafka_output *k = arg;
  const struct rd_kafka_metadata *md = NULL;
  rd_kafka_resp_err_t err = rdk.rd_kafka_metadata(k->rk, 0, k->probe_rkt, &md,
                                                  PROBE_TIMEOUT_MS);

  if (!err && md->topic_cnt == 1) {
    err = md->topics[0].err;
    k->probe_partitions = md->topics[0].partition_cnt;
    k->probe_brokers = md->broker_cnt;
  }
  if (md) rdk.rd_kafka_metadata_destroy(md);
  k->probe_err = err;
  atomic_store(&k->probed, true);
  /* Wakes the loop as librdkafka does: kafka_status_serve logs it. */
  if (write(k->wake_fds[1], "1", 1) < 0) {
    /* The pipe is full: the loop wakes anyway, and the poll timer runs. */
  }
}

void kafka_status_start(kafka_output *k, rd_kafka_topic_t *rkt)
{
  k->probe_rkt = rkt;
  k->probing = uv_thread_create(&k->probe, probe_topic, k) == 0;
}

static void log_probe(kafka_output *k)
{
  const char *name = k->o->name;

  if (k->probe_err == RD_KAFKA_RESP_ERR_NO_ERROR)
    log_msg("%s: topic '%s': %d partitions on %d broker%s", name, k->topic,
            k->probe_partitions, k->probe_brokers,
            k->probe_brokers == 1 ? "" : "s");
  else if (k->probe_err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
    log_error("%s: topic '%s' does not exist and the brokers did not create "
            "it: its records go to the dead-letter path (Unknown topic or "
            "partition) once librdkafka stops waiting for it "
            "(topic.metadata.propagation.max.ms, 30 s by default)", name,
            k->topic);
  else if (k->probe_err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
    log_error("%s: topic '%s': not authorised; its records go to the "
            "dead-letter path", name, k->topic);
  else
    log_warning("%s: topic '%s' not checked: no broker answered within %d s "
            "(%s)", name, k->topic, PROBE_TIMEOUT_MS / 1000,
            rdk.rd_kafka_err2str(k->probe_err));
}

/* Records waiting, by where: the queue's, librdkafka's, and the disk
 * buffer's not yet handed to librdkafka. */
static void waiting(const kafka_output *k, uint64_t *queue, uint64_t *disk)
{
  *queue = k->o->nrecs - k->o->rec_head;
  *disk = 0;
  if (k->dq) {
    dq_stats_t st;
    dq_stats(k->dq, &st);
    *disk = st.unread + (k->stashed ? 1 : 0);
  }
}

void kafka_status_serve(kafka_output *k)
{
  if (k->probing && atomic_load(&k->probed)) {
    uv_thread_join(&k->probe);
    k->probing = false;
    log_probe(k);
  }
  if (k->back_ns && k->delivered + k->rejected >= k->backlog_settled) {
    log_msg("%s: brokers back after %.1f s; backlog of %" PRIu64
            " drained in %.1f s", k->o->name,
            (double)(k->back_ns - k->down_ns) / 1e9, k->backlog,
            (double)(uv_hrtime() - k->back_ns) / 1e9);
    k->back_ns = k->down_ns = 0;
  }
}

void kafka_status_brokers_down(kafka_output *k)
{
  uint64_t queue, disk;

  if (k->down_ns) return;
  k->down_ns = uv_hrtime();
  waiting(k, &queue, &disk);
  log_warning("%s: every broker is down; %" PRIu64 " records waiting (%" PRIu64
          " in the queue, %" PRIu64 " in librdkafka, %" PRIu64 " in the disk "
          "buffer)", k->o->name, queue + k->in_flight + disk, queue,
          k->in_flight, disk);
}

void kafka_status_delivered(kafka_output *k)
{
  uint64_t queue, disk;

  if (!k->down_ns || k->back_ns) return;
  k->back_ns = k->now_ns;
  waiting(k, &queue, &disk);
  /* This record is one of them: it was in flight. */
  k->backlog = queue + k->in_flight + disk + 1;
  k->backlog_settled = k->delivered + k->rejected + k->backlog;
}

void kafka_status_refused(kafka_output *k, const char *why)
{
  for (size_t i = 0; i < k->nrefusals; i++)
    if (strcmp(k->refusals[i], why) == 0) return;
  if (k->nrefusals == REFUSALS_LOGGED) return;
  if (!(k->refusals[k->nrefusals] = strdup(why))) return;
  k->nrefusals++;
  log_error("%s: Kafka refuses records: %s; they go to the dead-letter path "
          "(logged once a reason%s)", k->o->name, why,
          k->nrefusals == REFUSALS_LOGGED ? "; no further reasons are logged"
                                          : "");
}

void kafka_status_close(kafka_output *k)
{
  if (k->probing) uv_thread_join(&k->probe);
  k->probing = false;
  for (size_t i = 0; i < k->nrefusals; i++) free(k->refusals[i]);
  k->nrefusals = 0;
}
