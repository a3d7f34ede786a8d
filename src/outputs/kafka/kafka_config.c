/*
 * kafka_config.c - kafka_output's type: its keys (what each does:
 * output_kafka.h), the topic and key templates checked, and the producer's
 * properties made of the keys (ours first, then `properties`), each judged
 * by librdkafka as it is added.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lua.h>

#include "kafka_api.h"
#include "output_kafka.h"
#include "record_template.h"
#include "kafka_head.h"

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

/* Appends name and value to a NULL-ended list of pairs. */
static int append_pair(char ***list, const char *name, const char *value)
{
  size_t n = 0;
  char **l;

  while (*list && (*list)[n]) n++;
  if (!(l = realloc(*list, (n + 3) * sizeof *l))) return -1;
  *list = l;
  l[n] = strdup(name);
  l[n + 1] = strdup(value);
  l[n + 2] = NULL;
  if (l[n] && l[n + 1]) return 0;
  free(l[n]);
  free(l[n + 1]);
  l[n] = NULL;
  return -1;
}

/* properties = { ["linger.ms"] = 5, ["compression.codec"] = "zstd" }:
 * strings, numbers and booleans, as librdkafka's text. */
static int read_properties(plugin_ctx *c, void *settings)
{
  config_kafka *k = settings;
  lua_State *L = cfg_lua(c);
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
    if (rc == 0 && append_pair(&k->given_properties, lua_tostring(L, -2),
                               value) != 0)
      rc = cfg_key_fail(c, "properties", "cannot be stored: out of memory");
    lua_pop(L, 1);
  }
  if (rc != 0) lua_pop(L, 1); /* the key lua_next left */
  lua_pop(L, 1);
  return rc;
}

static void free_properties(void *settings)
{
  config_kafka *k = settings;

  config_list_free(k->given_properties);
  config_list_free(k->properties);
  k->given_properties = k->properties = NULL;
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
  if (!kafka_topic_valid(topic, strlen(topic)))
    return cfg_key_fail(c, "topic", "'%s' is no valid Kafka topic name (1 to "
                        "249 of a-z, A-Z, 0-9, '.', '_' and '-')", topic);
  return 0;
}

static int read_topic(plugin_ctx *c, void *settings)
{
  config_kafka *k = settings;

  return read_template(c, "topic", true, &k->topic) != 0 ||
         check_static_topic(c, k->topic) != 0 ? -1 : 0;
}

static int read_key(plugin_ctx *c, void *settings)
{
  return read_template(c, "key", false, &((config_kafka *)settings)->key);
}

static void free_templates(void *settings)
{
  config_kafka *k = settings;

  free(k->topic);
  free(k->key);
  k->topic = k->key = NULL;
}

/* idempotent: true, false, or not given (kafka_finish decides). */
static int read_idempotent(plugin_ctx *c, void *settings)
{
  config_kafka *k = settings;
  bool on = false;

  k->idempotent = -1;
  if (cfg_get_key(cfg_lua(c), "idempotent") == LUA_TNIL) {
    lua_pop(cfg_lua(c), 1);
    return 0;
  }
  lua_pop(cfg_lua(c), 1);
  if (cfg_read_bool(c, "idempotent", &on) != 0) return -1;
  k->idempotent = on;
  return 0;
}

#define K(field) offsetof(config_kafka, field)

static int read_disk_buffer(plugin_ctx *c, void *settings)
{
  return config_read_disk_buffer(c, &((config_kafka *)settings)->buffer);
}

static void free_disk_buffer(void *settings)
{
  config_free_disk_buffer(&((config_kafka *)settings)->buffer);
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
static int default_idempotence(plugin_ctx *c, const config_kafka *k,
                               property_list *pl)
{
  const char *acks = property(pl, "acks");

  if (k->idempotent >= 0 || property(pl, "enable.idempotence") || !acks ||
      (strcmp(acks, "all") != 0 && strcmp(acks, "-1") != 0))
    return 0;
  return add_property(c, pl, "idempotent", "enable.idempotence", "true");
}

/* The idempotent producer waits linger.ms (200, not librdkafka's 5) for
 * a batch to fill unless one is given. librdkafka 2.0 lets an idempotent
 * producer have one request in flight per partition (it counts the
 * records in flight against the window of 5 requests), and while it waits
 * for the broker's answer its broker thread polls without sleeping once
 * the next batch's first record has waited linger.ms: 1.4 million polls
 * for 1,000,000 W1 lines sent with gzip (bench/w1-kafka), a sixth of the
 * run's CPU. A record waits in librdkafka about what memory_bytes holds
 * at the rate it is sent (16 MiB of W1 lines with gzip: about 110 ms), so
 * with 200 ms the poll sleeps until the answer comes (568 polls). A batch
 * that would wait for records that are not coming (a lone record, a
 * burst's last) goes once the queue rests (output_kafka.c: FLUSH_IDLE_MS). */
static int default_linger(plugin_ctx *c, property_list *pl)
{
  char idempotent[8];
  size_t size = sizeof idempotent;

  if (property(pl, "linger.ms") || property(pl, "queue.buffering.max.ms") ||
      rdk.rd_kafka_conf_get(pl->check, "enable.idempotence", idempotent,
                            &size) != RD_KAFKA_CONF_OK ||
      strcmp(idempotent, "true") != 0)
    return 0;
  return add_property(c, pl, "idempotent", "linger.ms", "200");
}

/* Our keys as librdkafka's properties. */
static const struct {
  const char *key, *property;
  size_t offset;
} property_keys[] = {
  {"brokers", "bootstrap.servers", K(brokers)},
  {"compression", "compression.codec", K(compression)},
  {"acks", "acks", K(acks)},
  {"partitioner", "partitioner", K(partitioner)},
};

/* The producer's properties: our defaults first, then our keys, then
 * `properties`: later wins. */
static int make_properties(plugin_ctx *c, config_kafka *k)
{
  property_list pl = {NULL, 0, rdk.rd_kafka_conf_new()};
  char kbytes[32], messages[32];
  int rc = 0;

  snprintf(kbytes, sizeof kbytes, "%llu",
           (unsigned long long)(k->memory_bytes >> 10));
  /* The output holds librdkafka to memory_bytes with each record's
   * overhead counted (output_kafka.c: fits); librdkafka's own limits back
   * that up: no more records than memory_bytes has room for. */
  snprintf(messages, sizeof messages, "%llu",
           (unsigned long long)(k->memory_bytes / KAFKA_RECORD_OVERHEAD));
  /* A broker outage is waited out (and buffered), not turned into
   * failed records after five minutes. */
  rc = add_property(c, &pl, "memory_bytes", "message.timeout.ms", "0") != 0 ||
       add_property(c, &pl, "memory_bytes", "queue.buffering.max.kbytes",
                    kbytes) != 0 ||
       add_property(c, &pl, "memory_bytes", "queue.buffering.max.messages",
                    messages) != 0 ? -1 : 0;
  for (size_t i = 0; rc == 0 && i < sizeof property_keys / sizeof *property_keys; i++) {
    const char *value = *(char **)((char *)k + property_keys[i].offset);
    if (value)
      rc = add_property(c, &pl, property_keys[i].key,
                        property_keys[i].property, value);
  }
  if (rc == 0 && k->idempotent >= 0)
    rc = add_property(c, &pl, "idempotent", "enable.idempotence",
                      k->idempotent ? "true" : "false");
  for (char **p = k->given_properties; rc == 0 && p && *p; p += 2)
    rc = add_property(c, &pl, "properties", p[0], p[1]);
  if (rc == 0) rc = default_idempotence(c, k, &pl);
  if (rc == 0) rc = default_linger(c, &pl);
  k->properties = pl.list;
  rdk.rd_kafka_conf_destroy(pl.check);
  if (rc != 0) return -1;
  for (char **p = pl.list; *p; p += 2)
    if (strcmp(p[0], "bootstrap.servers") == 0 && p[1][strspn(p[1], " ,")])
      return 0;
  return cfg_key_fail(c, "brokers", "is required: the bootstrap brokers, "
                      "\"host:port,host:port\"");
}

static int kafka_finish(plugin_ctx *c, config_plugin *p)
{
  char why[256];

  if (kafka_api_load(why, sizeof why) != 0)
    return cfg_key_fail(c, "type", "needs librdkafka: %s", why);
  return make_properties(c, p->settings);
}

static int kafka_check(plugin_ctx *c, const config *cfg, const config_plugin *p)
{
  return config_check_disk_buffer(c, cfg,
                                  &((const config_kafka *)p->settings)->buffer);
}

static const config_key kafka_keys[] = {
  {"brokers", KEY_STRING, K(brokers), .help = "bootstrap.servers: "
   "\"host:port,host:port\" (required, here or in properties)"},
  {"topic", KEY_CUSTOM, 0, .required = true, .read = read_topic,
   .free = free_templates, .value = "template",
   .help = "the topic, a template over the message: \"logs-%{Type}\""},
  {"key", KEY_CUSTOM, 0, .read = read_key, .value = "template",
   .help = "the record's key, a template; none by default"},
  {"partitioner", KEY_STRING, K(partitioner),
   .help = "librdkafka's: consistent_random (its default), murmur2, ..."},
  {"compression", KEY_STRING, K(compression),
   .help = "none, gzip, snappy, lz4 or zstd"},
  {"acks", KEY_STRING, K(acks), "all",
   .help = "all, 1 or 0 (0: delivered once sent)"},
  {"idempotent", KEY_CUSTOM, 0, .read = read_idempotent, .value = "boolean",
   .help = "librdkafka's idempotent producer (default: on with acks all)"},
  {"properties", KEY_CUSTOM, 0, .read = read_properties,
   .free = free_properties, .value = "table",
   .help = "any librdkafka property, { [\"linger.ms\"] = 20 }; they win "
           "over the keys above"},
  {"memory_bytes", KEY_COUNT, K(memory_bytes), "16777216", 1u << 20, 1e12,
   .help = "what librdkafka's records may take in memory"},
  {"disk_buffer", KEY_CUSTOM, 0, .read = read_disk_buffer,
   .free = free_disk_buffer, .value = "table",
   .help = "{ path =, max_bytes = (1 GiB), segment_bytes = (16 MiB), "
           "when_full = (\"hold\") }: "
           "where records go while the brokers are away"},
  {"max_bytes_per_second", KEY_COUNT, K(bytes_per_second), "0", 0, 1e15,
   .help = "a cap on the bytes produced (0: none)"},
  {"max_messages_per_second", KEY_COUNT, K(messages_per_second), "0", 0,
   1e12, .help = "a cap on the records produced (0: none)"},
  {"newline", KEY_BOOL, offsetof(config_plugin, newline), "false",
   .in_plugin = true, .help = "end each record with a newline"},
  {NULL}
};

const plugin_type kafka_output_type = {
  .name = "kafka_output", .role = PLUGIN_OUTPUT,
  .flags = PLUGIN_NO_DEAD_LETTERS,
  .summary = "produces records to Apache Kafka, each delivered on its "
             "broker's acknowledgement",
  .keys = kafka_keys, .settings_size = sizeof(config_kafka),
  .finish = kafka_finish, .check = kafka_check,
  .output = &kafka_output_kind,
};
