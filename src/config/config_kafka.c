/*
 * config_kafka.c - reads a kafka_output's table (config_internal.h): the
 * brokers, the topic and key templates, the producer settings (the keys
 * of our own and any librdkafka property), memory, the disk buffer and
 * the rate caps. Defaults and what each key does: output_kafka.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "config_internal.h"
#include "kafka_api.h"
#include "record_template.h"
#include "router.h"

const char *const config_kafka_keys[] = {
  "type", "encoder", "message_matcher", "newline", "brokers", "topic", "key",
  "partitioner", "compression", "acks", "idempotent", "properties",
  "memory_bytes", "disk_buffer", "max_bytes_per_second",
  "max_messages_per_second", NULL
};

/* Properties the output relies on: delivery reports for every record, and
 * its own memory setting. */
static const char *const owned_properties[] = {
  "delivery.report.only.error", "dr_cb", "dr_msg_cb", "opaque", NULL
};

/* The properties in the order they apply, each judged by librdkafka as
 * it is added, on a configuration of its own: a typo fails --check, with
 * the key it came from. */
typedef struct {
  char **list;            /* name, value, ..., NULL */
  size_t n;
  rd_kafka_conf_t *check;
} property_list;

static int add_property(plugin_ctx *c, property_list *pl, const char *key,
                        const char *name, const char *value)
{
  char **list = realloc(pl->list, (pl->n + 3) * sizeof *list);
  char why[512];

  if (!list) return cfg_key_fail(c, key, "cannot be stored: out of memory");
  pl->list = list;
  if (rdk.rd_kafka_conf_set(pl->check, name, value, why, sizeof why) !=
      RD_KAFKA_CONF_OK)
    return cfg_key_fail(c, key, "'%s' = '%s': %s", name, value, why);
  list[pl->n] = strdup(name);
  list[pl->n + 1] = strdup(value);
  list[pl->n + 2] = NULL;
  if (!list[pl->n] || !list[pl->n + 1]) {
    free(list[pl->n]);
    free(list[pl->n + 1]);
    list[pl->n] = NULL;
    return cfg_key_fail(c, key, "cannot be stored: out of memory");
  }
  pl->n += 2;
  return 0;
}

/* Our key `key` (a string) as librdkafka's property `name`. */
static int read_as_property(plugin_ctx *c, property_list *pl, const char *key,
                            const char *name)
{
  char *value = NULL;
  int rc;

  if (cfg_read_string(c, key, false, &value) != 0) return -1;
  rc = value ? add_property(c, pl, key, name, value) : 0;
  free(value);
  return rc;
}

/* properties = { ["linger.ms"] = 5, ["compression.codec"] = "zstd" }:
 * strings, numbers and booleans, as librdkafka's text. */
static int read_properties(plugin_ctx *c, property_list *pl)
{
  lua_State *L = c->ld->L;
  int t = cfg_get_key(L, "properties"), rc = 0;

  if (t == LUA_TNIL) {
    lua_pop(L, 1);
    return 0;
  }
  if (t != LUA_TTABLE) {
    lua_pop(L, 1);
    return cfg_key_fail(c, "properties", "must be a table of librdkafka "
                        "properties, { [\"linger.ms\"] = 5, ... }");
  }
  lua_pushnil(L);
  while (rc == 0 && lua_next(L, -2)) {
    int vt = lua_type(L, -1);
    char number[64];
    const char *value = number;
    if (lua_type(L, -2) != LUA_TSTRING) {
      rc = cfg_key_fail(c, "properties", "has a key that is not a string");
    } else if (vt == LUA_TSTRING) {
      value = lua_tostring(L, -1);
    } else if (vt == LUA_TBOOLEAN) {
      value = lua_toboolean(L, -1) ? "true" : "false";
    } else if (vt == LUA_TNUMBER) {
      snprintf(number, sizeof number, "%.17g", lua_tonumber(L, -1));
    } else {
      rc = cfg_key_fail(c, "properties", "'%s' must be a string, number or "
                        "boolean, not a %s", lua_tostring(L, -2),
                        lua_typename(L, vt));
    }
    for (size_t i = 0; rc == 0 && owned_properties[i]; i++)
      if (strcmp(lua_tostring(L, -2), owned_properties[i]) == 0)
        rc = cfg_key_fail(c, "properties", "'%s' is lumberjit's own: every "
                          "record needs its delivery report",
                          owned_properties[i]);
    if (rc == 0) rc = add_property(c, pl, "properties", lua_tostring(L, -2),
                                   value);
    lua_pop(L, 1);
  }
  if (rc != 0) lua_pop(L, 1); /* the key lua_next left */
  lua_pop(L, 1);
  return rc;
}

static int read_template(plugin_ctx *c, const char *key, bool required,
                         char **out)
{
  record_template *t;
  char why[256];

  if (cfg_read_string(c, key, required, out) != 0) return -1;
  if (!*out) return 0;
  if (!(t = record_template_compile(*out, why, sizeof why)))
    return cfg_key_fail(c, key, "is not a valid template: %s", why);
  record_template_free(t);
  return 0;
}

/* A static topic must be a name Kafka takes; a template is checked per
 * record. */
static int check_static_topic(plugin_ctx *c, const char *topic)
{
  if (strstr(topic, "%{")) return 0;
  if (!router_topic_valid(topic, strlen(topic)))
    return cfg_key_fail(c, "topic", "'%s' is no valid Kafka topic name (1 to "
                        "249 of a-z, A-Z, 0-9, '.', '_' and '-')", topic);
  return 0;
}

/* disk_buffer = { path =, max_bytes =, segment_bytes = }; path defaults
 * to a directory in state_dir (pipeline_build.c). */
static int read_disk_buffer(plugin_ctx *c, config_kafka *k)
{
  static const char *const keys[] = {"path", "max_bytes", "segment_bytes",
                                     NULL};
  lua_State *L = c->ld->L;
  int t = cfg_get_key(L, "disk_buffer"), rc;

  if (t == LUA_TNIL) {
    lua_pop(L, 1);
    return 0;
  }
  if (t != LUA_TTABLE) {
    lua_pop(L, 1);
    return cfg_key_fail(c, "disk_buffer", "must be a table {path=, "
                        "max_bytes=, segment_bytes=}");
  }
  k->buffer_max_bytes = 1u << 30;
  k->buffer_segment_bytes = 16u << 20;
  rc = cfg_check_keys(c, keys, false) != 0 ||
       cfg_read_string(c, "path", false, &k->buffer_path) != 0 ||
       cfg_read_count(c, "max_bytes", 1e15, &k->buffer_max_bytes) != 0 ||
       cfg_read_count(c, "segment_bytes", 1u << 30,
                      &k->buffer_segment_bytes) != 0 ? -1 : 0;
  lua_pop(L, 1);
  if (rc == 0 && k->buffer_segment_bytes < 4096)
    return cfg_key_fail(c, "disk_buffer", "segment_bytes must be at least "
                        "4096");
  if (rc == 0 && k->buffer_max_bytes < k->buffer_segment_bytes)
    return cfg_key_fail(c, "disk_buffer", "max_bytes must be at least "
                        "segment_bytes (%llu)",
                        (unsigned long long)k->buffer_segment_bytes);
  return rc;
}

/* The last value of property name in pl, or NULL. */
static const char *property(const property_list *pl, const char *name)
{
  const char *value = NULL;

  for (size_t i = 0; i < pl->n; i += 2)
    if (strcmp(pl->list[i], name) == 0) value = pl->list[i + 1];
  return value;
}

/* Without an `idempotent` key, the producer is idempotent when it can be:
 * acks all (ours unless set otherwise) and no enable.idempotence property.
 * So librdkafka's retries keep a partition's order and add no duplicates,
 * as the Java client does by default since Kafka 3.0. */
static int default_idempotence(plugin_ctx *c, property_list *pl)
{
  lua_State *L = c->ld->L;
  bool given = cfg_get_key(L, "idempotent") != LUA_TNIL;
  const char *acks = property(pl, "acks");

  lua_pop(L, 1);
  if (given || property(pl, "enable.idempotence") || !acks ||
      (strcmp(acks, "all") != 0 && strcmp(acks, "-1") != 0))
    return 0;
  return add_property(c, pl, "idempotent", "enable.idempotence", "true");
}

/* Our defaults first, then our keys, then `properties`: later wins. */
static int read_producer(plugin_ctx *c, config_kafka *k)
{
  property_list pl = {NULL, 0, rdk.rd_kafka_conf_new()};
  bool idempotent = false;
  char kbytes[32], messages[32];
  int rc;

  k->memory_bytes = 16u << 20;
  if (cfg_read_count(c, "memory_bytes", 1e12, &k->memory_bytes) != 0)
    return -1;
  if (k->memory_bytes < (1u << 20))
    return cfg_key_fail(c, "memory_bytes", "must be at least 1048576");
  snprintf(kbytes, sizeof kbytes, "%llu",
           (unsigned long long)(k->memory_bytes >> 10));
  /* The output holds librdkafka to memory_bytes with each record's
   * overhead counted (output_kafka.c: fits); librdkafka's own limits back
   * that up: no more records than memory_bytes has room for. */
  snprintf(messages, sizeof messages, "%llu",
           (unsigned long long)(k->memory_bytes / KAFKA_RECORD_OVERHEAD));
  rc = add_property(c, &pl, "memory_bytes", "acks", "all") != 0 ||
       /* A broker outage is waited out (and buffered), not turned into
        * failed records after five minutes. */
       add_property(c, &pl, "memory_bytes", "message.timeout.ms", "0") != 0 ||
       add_property(c, &pl, "memory_bytes", "queue.buffering.max.kbytes",
                    kbytes) != 0 ||
       add_property(c, &pl, "memory_bytes", "queue.buffering.max.messages",
                    messages) != 0 ||
       read_as_property(c, &pl, "brokers", "bootstrap.servers") != 0 ||
       read_as_property(c, &pl, "compression", "compression.codec") != 0 ||
       read_as_property(c, &pl, "acks", "acks") != 0 ||
       read_as_property(c, &pl, "partitioner", "partitioner") != 0 ||
       cfg_read_bool(c, "idempotent", &idempotent) != 0 ||
       (idempotent && add_property(c, &pl, "idempotent", "enable.idempotence",
                                   "true") != 0) ||
       read_properties(c, &pl) != 0 ||
       default_idempotence(c, &pl) != 0 ? -1 : 0;
  k->properties = pl.list;
  rdk.rd_kafka_conf_destroy(pl.check);
  if (rc != 0) return -1;
  for (char **p = pl.list; *p; p += 2)
    if (strcmp(p[0], "bootstrap.servers") == 0 && p[1][strspn(p[1], " ,")])
      return 0;
  return cfg_key_fail(c, "brokers", "is required: the bootstrap brokers, "
                      "\"host:port,host:port\"");
}

int config_read_kafka(plugin_ctx *c, config_plugin *p)
{
  config_kafka *k = &p->kafka;
  char why[256];

  if (kafka_api_load(why, sizeof why) != 0)
    return cfg_key_fail(c, "type", "needs librdkafka: %s", why);
  if (config_read_output(c, p) != 0) return -1;
  /* A Kafka record is a message, not a line: no newline unless asked. */
  p->newline = false;
  if (cfg_read_bool(c, "newline", &p->newline) != 0 ||
      read_template(c, "topic", true, &k->topic) != 0 ||
      check_static_topic(c, k->topic) != 0 ||
      read_template(c, "key", false, &k->key) != 0 ||
      read_producer(c, k) != 0 || read_disk_buffer(c, k) != 0 ||
      cfg_read_count(c, "max_bytes_per_second", 1e15,
                     &k->bytes_per_second) != 0 ||
      cfg_read_count(c, "max_messages_per_second", 1e12,
                     &k->messages_per_second) != 0)
    return -1;
  return 0;
}
