/*
 * kafka_plugin.c - the kafka_output's part of the pipeline (plugin.h):
 * its sink opened with the disk buffer in its path or in state_dir, the
 * producer made and dropped for --check, and the topic and key templates
 * each worker renders into a record's head (kafka_head.h).
 */
#include <stdio.h>

#include "kafka_head.h"
#include "output_kafka.h"

static int kafka_open(output_sink *o, const output_host *h,
                      const config_plugin *p, char *err, size_t errlen)
{
  const config_kafka *k = p->settings;
  char dir[4096];
  const char *buffer = config_disk_buffer_dir(&k->buffer, h->state_dir,
                                              "kafka", p->name, dir,
                                              sizeof dir);

  return output_kafka_open(o, h->loop, h->label, k, buffer, h->events, err,
                           errlen);
}

static int kafka_check_producer(const config_plugin *p, char *err,
                                size_t errlen)
{
  return output_kafka_check(p->settings, err, errlen);
}

/* Each record's head: its topic and key (kafka_head.h). */
static int kafka_route_make(const config_plugin *p, const output_route **route,
                            void **state, char *err, size_t errlen)
{
  const config_kafka *k = p->settings;

  return kafka_route_new(k->topic, k->key, route, state, err, errlen);
}

const output_kind kafka_output_kind = {
  .open = kafka_open, .check = kafka_check_producer, .route = kafka_route_make,
};
