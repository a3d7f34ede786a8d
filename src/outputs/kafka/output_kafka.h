/*
 * output_kafka.h - the kafka_output: records produced to Apache Kafka with
 * librdkafka, each counted delivered only on its delivery report.
 *
 *   kafka = { type = "kafka_output", encoder = "json", message_matcher = "TRUE",
 *             brokers = "127.0.0.1:9092", topic = "logs-%{Type}", key = "%{Hostname}",
 *             compression = "zstd", disk_buffer = { max_bytes = 1073741824 } }
 *
 * Keys:
 *   brokers      bootstrap.servers: "host:port,host:port" (required).
 *   topic        the topic, a template (record_template.h) over the
 *                message: "logs", "logs-%{Type}" (required). A record whose
 *                template gives no valid topic name goes to the dead-letter
 *                path.
 *   key          the message key, a template; none by default.
 *   partitioner  librdkafka's: consistent_random (its default), murmur2
 *                (the Java client's), murmur2_random, fnv1a, random, ...
 *   compression  none, gzip, snappy, lz4 or zstd.
 *   acks         all (our default), 1 or 0. With 0 the broker sends no
 *                acknowledgement, so a record counts as delivered once sent.
 *   idempotent   librdkafka's idempotent producer: no duplicates from its
 *                own retries, order kept per partition through them. On by
 *                default when acks is all and no enable.idempotence
 *                property is given; false turns it off (then a retried
 *                batch can land behind a later one). With it, linger.ms
 *                is 200 unless a property sets it (kafka_config.c says
 *                why); a queue that rests 10 ms flushes what librdkafka
 *                holds, so a lone record does not wait that long.
 *   properties   any librdkafka property, { ["linger.ms"] = 20 }: SASL,
 *                TLS, batching. They win over the keys above; librdkafka
 *                checks each when the config is loaded.
 *   memory_bytes what librdkafka's records may take in memory (16 MiB by
 *                default), each counted as its payload and key twice
 *                (librdkafka's copy in the request that sends it) plus
 *                KAFKA_RECORD_OVERHEAD (320 bytes: librdkafka's message,
 *                the allocator's share, the output's slot); librdkafka's
 *                own byte cap counts the payload and key once. With a
 *                disk buffer librdkafka holds half of it: the other half
 *                is for the copy kafka_keep_held makes of its records
 *                while they move to disk. queue.buffering.max.kbytes and
 *                .messages follow from it (as a backstop; the output
 *                stops handing records on first). Compression's codec
 *                adds its working memory per broker (zstd about 4 MiB).
 *   disk_buffer  { path =, max_bytes = (1 GiB), segment_bytes = (16 MiB),
 *                when_full = ("hold") }: when full, it holds the inputs, or
 *                with "drop_oldest" drops its oldest records, counted
 *                (config_disk_buffer.h);
 *                where records go once librdkafka holds what memory_bytes
 *                lets it (a broker outage); path defaults to
 *                state_dir/kafka-NAME.
 *                One process at a time: a second one on the same path
 *                fails at the start, before its producer connects.
 *   max_bytes_per_second, max_messages_per_second
 *                caps on what is produced, so a log storm cannot fill the
 *                uplink; the backlog waits (and holds the inputs).
 *   newline      appends "\n" to each record (false by default).
 *
 * Delivery. A record counts as delivered when its delivery report says
 * the broker took it (with acks = all: every in-sync replica). Only then
 * is its input's checkpoint reference dropped, so a file's checkpoint
 * never passes a record Kafka does not have: at least once, from file to
 * topic. A report with an error that librdkafka will not retry (no such
 * topic, record too large, authorisation) sends the record to the
 * dead-letter path with librdkafka's reason. librdkafka retries the rest
 * for ever (message.timeout.ms = 0 unless set): an outage is waited out.
 *
 * Buffering. Records wait in the output's queue (its share of
 * memory_budget), then in librdkafka (memory_bytes, the Kafka term of
 * the README's memory formula), then, with a disk
 * buffer, in the disk buffer (disk_queue.h), in that order. Records go to
 * disk only while librdkafka holds none of its own (records not read from
 * the disk buffer): until their reports come, or every broker is down, the
 * queue waits (and holds the inputs). Once a record went to disk, later
 * ones follow it there until the disk buffer is drained, so records reach
 * Kafka in the order they came. A record in the disk buffer is
 * acknowledged to its input once fsynced there: it is produced from the
 * disk buffer later, by this run or the next. When every stage is full
 * the inputs are held (files are not read, sockets are not read); nothing
 * is dropped. When librdkafka says every broker is down, everything it
 * holds, sent or not, moves to the disk buffer in the order it was
 * produced, behind what is there (kafka_keep_held), so a crash during the
 * outage loses none of it and no record in librdkafka holds an input's
 * checkpoint behind records on disk. Only if they do not fit there do
 * they stay in librdkafka, and new records go to disk behind them.
 *
 * Stopping. At the stop deadline (stop_timeout_ms) what librdkafka and the
 * queue still hold goes to the disk buffer. Without one, a record whose input can read it again (a file with a state_dir
 * checkpoint) stays unacknowledged (output_release), so the next run sends
 * it; the rest (sockets, standard input) go to the dead-letter path.
 *
 * What it says (kafka_status.c): the topic's partitions at the start, or
 * that it does not exist; the first refusal of each reason; when every
 * broker goes down, with how many records wait where; when they are back,
 * once the backlog drained.
 */
#ifndef LUMBERJIT_OUTPUT_KAFKA_H
#define LUMBERJIT_OUTPUT_KAFKA_H

#include <stddef.h>

#include <uv.h>

#include "config.h"
#include "config_disk_buffer.h"
#include "output.h"
#include "plugin.h"

/* What a record librdkafka holds takes besides its payload and key
 * (counted twice: output_kafka.c, cost): librdkafka's message
 * (rd_kafka_msg_t, about 170 bytes in 2.0), the allocator's header and
 * rounding, the output's slot for it (88), with room to spare.
 * memory_bytes counts it for each record. */
#define KAFKA_RECORD_OVERHEAD 320

/* Its settings (kafka_config.c reads them). */
typedef struct {
  char *topic, *key;     /* templates (record_template.h); key NULL: none */
  char **properties;     /* librdkafka's, checked: name, value, ..., NULL */
  uint64_t memory_bytes; /* what librdkafka's records may take, each
                          counted as its bytes twice + KAFKA_RECORD_OVERHEAD */
  config_disk_buffer buffer;
  uint64_t bytes_per_second, messages_per_second; /* caps; 0: none */
  /* The keys that become properties, as given (kafka_config.c's finish
   * makes `properties` of them). */
  char *brokers, *compression, *acks, *partitioner;
  int idempotent;        /* -1: not given */
  char **given_properties; /* name, value, ..., NULL */
} config_kafka;

extern const plugin_type kafka_output_type;
extern const output_kind kafka_output_kind;

/* Opens o as a kafka_output: the producer, and the disk buffer in
 * buffer_dir (NULL: none). Logs what the disk buffer holds from an
 * earlier run, which goes out first. */
int output_kafka_open(output_sink *o, uv_loop_t *loop, const char *name,
                      const config_kafka *cfg, const char *buffer_dir,
                      output_events ev, char *err, size_t errlen);
/* Builds cfg's producer without connecting and destroys it: -1 with the
 * reason when a start could not make it (--check). */
int output_kafka_check(const config_kafka *cfg, char *err, size_t errlen);

#endif
