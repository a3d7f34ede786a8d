/*
 * kafka_head.h - what a kafka_output's record carries before its payload:
 * its topic and key, rendered from the output's templates on the worker
 * (an output_route, plugin.h), so that the loop thread only reads them.
 *
 * A head is laid out as [u16 topic length][topic][u32 key length + 1, 0
 * for no key][key], little-endian; a topic of length 0 is the output's
 * own (a static topic is not repeated in every record).
 */
#ifndef LUMBERJIT_KAFKA_HEAD_H
#define LUMBERJIT_KAFKA_HEAD_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "plugin.h"
#include "record_template.h"

/* A record's head: the topic (empty: the output's own topic) and the key
 * (NULL: none). */
typedef struct {
  const char *topic, *key;
  size_t topic_len, key_len;
} kafka_head;

/* An output's templates, on one worker. */
typedef struct {
  record_template *topic, *key; /* key NULL: none */
  bool topic_static;            /* the head names no topic: the output's */
} kafka_route;

/* The route that makes heads of the topic and key templates (checked when
 * the config was loaded); -1 with the reason in err. */
int kafka_route_new(const char *topic, const char *key,
                    const output_route **route, void **state, char *err,
                    size_t errlen);
/* Reads the head of a record of `head` bytes; false when it is not one. */
bool kafka_head_parse(const char *bytes, size_t head, kafka_head *h);
/* Appends a head (topic_len 0: the output's own topic; key NULL: none);
 * false when out of memory or too long to lay out. */
bool kafka_head_append(buf *b, const char *topic, size_t topic_len,
                       const char *key, size_t key_len);
/* Kafka's rule for a topic name: 1 to 249 of [a-zA-Z0-9._-]. */
bool kafka_topic_valid(const char *s, size_t len);

#endif
