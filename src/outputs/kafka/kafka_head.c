/*
 * kafka_head.c - a Kafka record's head (kafka_head.h): made on the worker
 * from the topic and key templates, read back by the producer and the
 * disk buffer.
 */
#include "kafka_head.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "le.h"

bool kafka_topic_valid(const char *s, size_t len)
{
  if (len == 0 || len > 249) return false;
  for (size_t i = 0; i < len; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
          (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' ||
          s[i] == '-'))
      return false;
  return true;
}

/* The head (kafka_head.h says its layout), rendered in place: an
 * output_route's head (plugin.h). */
static const char *write_head(void *state, const msg *m, buf *b)
{
  const kafka_route *o = state;
  size_t start = b->len, len;
  char n[4] = {0};

  if (!buf_append(b, n, 2)) return "out of memory";
  if (!o->topic_static) {
    if (!record_template_render(o->topic, m, b)) return "out of memory";
    len = b->len - start - 2;
    if (!kafka_topic_valid(b->data + start + 2, len))
      return "the topic template gives no valid Kafka topic name (1 to 249 "
             "of a-z, A-Z, 0-9, '.', '_' and '-')";
    le_put(b->data + start, len, 2);
  }
  if (!buf_append(b, n, 4)) return "out of memory";
  if (o->key) {
    size_t at = b->len;
    if (!record_template_render(o->key, m, b)) return "out of memory";
    len = b->len - at;
    if (len >= UINT32_MAX) return "the key is longer than 4 GiB";
    le_put(b->data + at - 4, len + 1, 4);
  }
  return NULL;
}

bool kafka_head_parse(const char *bytes, size_t head, kafka_head *h)
{
  size_t topic_len, key_field;

  if (head < 6) return false;
  topic_len = le_get(bytes, 2);
  if (2 + topic_len + 4 > head) return false;
  key_field = le_get(bytes + 2 + topic_len, 4);
  if (2 + topic_len + 4 + (key_field ? key_field - 1 : 0) != head) return false;
  h->topic = bytes + 2;
  h->topic_len = topic_len;
  h->key = key_field ? bytes + 2 + topic_len + 4 : NULL;
  h->key_len = key_field ? key_field - 1 : 0;
  return true;
}

bool kafka_head_append(buf *b, const char *topic, size_t topic_len,
                        const char *key, size_t key_len)
{
  char n[4];

  if (topic_len > 249 || key_len >= UINT32_MAX) return false;
  le_put(n, topic_len, 2);
  if (!buf_append(b, n, 2) || !buf_append(b, topic, topic_len)) return false;
  le_put(n, key ? key_len + 1 : 0, 4);
  return buf_append(b, n, 4) && (!key || buf_append(b, key, key_len));
}

static void free_route(void *state)
{
  kafka_route *o = state;

  if (!o) return;
  record_template_free(o->topic);
  record_template_free(o->key);
  free(o);
}

static bool fixed_head(const void *state)
{
  const kafka_route *o = state;

  return o->topic_static && (!o->key || record_template_is_static(o->key));
}

static const output_route kafka_head_route = {write_head, free_route,
                                              fixed_head};

int kafka_route_new(const char *topic, const char *key,
                    const output_route **route, void **state, char *err,
                    size_t errlen)
{
  kafka_route *o = calloc(1, sizeof *o);

  if (!o) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  o->topic = record_template_compile(topic, err, errlen);
  if (o->topic && key) o->key = record_template_compile(key, err, errlen);
  if (!o->topic || (key && !o->key)) {
    free_route(o);
    return -1;
  }
  o->topic_static = record_template_is_static(o->topic);
  *route = &kafka_head_route;
  *state = o;
  return 0;
}
