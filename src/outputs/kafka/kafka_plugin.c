/*
 * kafka_plugin.c - the kafka_output's part of the pipeline (plugin.h):
 * its sink opened with the disk buffer in its path or in state_dir, the
 * producer made and dropped for --check, and the topic and key templates
 * each worker renders into a record's routing head (router.h).
 */
#include <stdio.h>

#include "output_kafka.h"
#include "record_template.h"
#include "router.h"

static int kafka_open(output_sink *o, const output_host *h,
                      const config_plugin *p, char *err, size_t errlen)
{
  const config_kafka *k = p->settings;
  char dir[4096];
  const char *buffer = NULL;

  if (k->buffer_max_bytes && k->buffer_path) {
    buffer = k->buffer_path;
  } else if (k->buffer_max_bytes) { /* kafka_check made sure of state_dir */
    snprintf(dir, sizeof dir, "%s/kafka-%s", h->state_dir, p->name);
    buffer = dir;
  }
  return output_kafka_open(o, h->loop, h->label, k, buffer, h->events, err,
                           errlen);
}

static int kafka_check_producer(const config_plugin *p, char *err,
                                size_t errlen)
{
  return output_kafka_check(p->settings, err, errlen);
}

/* The topic and key templates (checked when the config was loaded). */
static int kafka_route(const config_plugin *p, router_output *ro, char *err,
                       size_t errlen)
{
  const config_kafka *k = p->settings;

  ro->topic = record_template_compile(k->topic, err, errlen);
  if (ro->topic && k->key)
    ro->key = record_template_compile(k->key, err, errlen);
  if (!ro->topic || (k->key && !ro->key)) return -1;
  ro->topic_static = record_template_is_static(ro->topic);
  return 0;
}

const output_kind kafka_output_kind = {
  .open = kafka_open, .check = kafka_check_producer, .route = kafka_route,
};
