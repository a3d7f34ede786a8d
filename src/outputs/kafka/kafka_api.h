/*
 * kafka_api.h - librdkafka, loaded when a kafka_output is first configured.
 *
 * Why not linked: librdkafka brings liblz4, libzstd and libsasl2, and the
 * four map about 0.6 MB of pages into every lumberjit at start, kafka_output
 * or not, which the idle-RSS budget of an edge box cannot spare. So the
 * functions we use are looked up by name, once (lib_load.h), and called
 * through `rdk`: rdk.rd_kafka_poll(rk, 0) for rd_kafka_poll(rk, 0). The
 * header still gives every type and the RD_KAFKA_V_* macros.
 */
#ifndef LUMBERJIT_KAFKA_API_H
#define LUMBERJIT_KAFKA_API_H

#include <stddef.h>

#include <librdkafka/rdkafka.h>

#define KAFKA_API(X)                                                          \
  X(rd_kafka_conf_new) X(rd_kafka_conf_set) X(rd_kafka_conf_get)             \
  X(rd_kafka_conf_destroy)                                                    \
  X(rd_kafka_conf_set_opaque) X(rd_kafka_conf_set_dr_msg_cb)                  \
  X(rd_kafka_conf_set_error_cb) X(rd_kafka_conf_set_log_cb) X(rd_kafka_new)   \
  X(rd_kafka_destroy) X(rd_kafka_opaque) X(rd_kafka_fatal_error)              \
  X(rd_kafka_err2str) X(rd_kafka_poll) X(rd_kafka_flush)                     \
  X(rd_kafka_produce_batch) X(rd_kafka_purge)                                 \
  X(rd_kafka_queue_get_main) X(rd_kafka_queue_destroy)                        \
  X(rd_kafka_queue_io_event_enable) X(rd_kafka_set_log_queue)                 \
  X(rd_kafka_topic_new) X(rd_kafka_topic_destroy) X(rd_kafka_topic_name)       \
  X(rd_kafka_metadata) X(rd_kafka_metadata_destroy)

#define KAFKA_API_MEMBER(f) __typeof__(f) *f;
typedef struct {
  KAFKA_API(KAFKA_API_MEMBER)
} kafka_api;
#undef KAFKA_API_MEMBER

extern kafka_api rdk;

/* Loads librdkafka (once); -1 with the reason when it cannot. */
int kafka_api_load(char *err, size_t errlen);

#endif
