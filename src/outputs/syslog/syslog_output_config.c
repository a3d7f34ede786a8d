/*
 * syslog_output_config.c - reads a syslog_output's table
 * (syslog_output_config.h): the address, framing, back-off, TLS files and
 * the disk buffer, each checked so --check names the key that is wrong.
 */
#include "syslog_output_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

const char *const syslog_output_keys[] = {
  "type", "encoder", "message_matcher", "newline", "flush_bytes", "address",
  "framing", "reconnect_min_ms", "reconnect_max_ms", "connect_timeout_ms",
  "tls_ca", "tls_cert", "tls_key", "tls_server_name", "disk_buffer", NULL
};

static const struct {
  const char *scheme;
  so_protocol protocol;
} schemes[] = {
  {"tcp://", SO_TCP}, {"tls://", SO_TLS}, {"udp://", SO_UDP},
};

void syslog_output_config_free(syslog_output_config *c)
{
  if (!c) return;
  free(c->address);
  free(c->host);
  free(c->port);
  free(c->tls_ca);
  free(c->tls_cert);
  free(c->tls_key);
  free(c->tls_server_name);
  free(c->buffer_path);
  free(c);
}

/* "host:port", "[v6]:port" after the scheme. */
static int read_host_port(plugin_ctx *c, syslog_output_config *s,
                          const char *rest)
{
  const char *colon = strrchr(rest, ':');
  const char *host = rest;
  size_t hostlen = colon ? (size_t)(colon - rest) : 0;
  char *end;
  unsigned long port;

  if (hostlen >= 2 && host[0] == '[' && host[hostlen - 1] == ']') {
    host++;
    hostlen -= 2;
  }
  if (!colon || hostlen == 0)
    return cfg_key_fail(c, "address", "'%s': HOST:PORT must follow the "
                        "scheme", s->address);
  port = strtoul(colon + 1, &end, 10);
  if (!colon[1] || *end || port < 1 || port > 65535)
    return cfg_key_fail(c, "address", "'%s': the port must be a number from "
                        "1 to 65535", s->address);
  if (!(s->host = strndup(host, hostlen)) || !(s->port = strdup(colon + 1)))
    return cfg_key_fail(c, "address", "cannot be stored: out of memory");
  return 0;
}

static int read_address(plugin_ctx *c, syslog_output_config *s)
{
  if (cfg_read_string(c, "address", true, &s->address) != 0) return -1;
  for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
    size_t n = strlen(schemes[i].scheme);
    if (strncmp(s->address, schemes[i].scheme, n) != 0) continue;
    s->protocol = schemes[i].protocol;
    return read_host_port(c, s, s->address + n);
  }
  return cfg_key_fail(c, "address", "'%s' must start with tcp://, tls:// or "
                      "udp://", s->address);
}

/* Framing, and the newline it implies. */
static int read_framing(plugin_ctx *c, config_plugin *p,
                        syslog_output_config *s)
{
  lua_State *L = c->ld->L;
  bool newline_given = cfg_get_key(L, "newline") != LUA_TNIL;
  char *name = NULL;
  int rc = 0;

  lua_pop(L, 1);
  if (cfg_read_string(c, "framing", false, &name) != 0) return -1;
  if (name && s->protocol == SO_UDP)
    rc = cfg_key_fail(c, "framing", "is for tcp:// and tls:// addresses: "
                      "over UDP each record is one datagram");
  else if (!name || strcmp(name, "octet_counting") == 0)
    s->framing = SO_OCTET_COUNTING;
  else if (strcmp(name, "newline") == 0)
    s->framing = SO_NEWLINE;
  else
    rc = cfg_key_fail(c, "framing", "must be octet_counting or newline, not "
                      "'%s'", name);
  free(name);
  if (rc != 0) return -1;
  /* A record is a message, not a line: no newline unless asked, or unless
   * newline framing needs it to end the record. */
  if (!newline_given) p->newline = s->framing == SO_NEWLINE &&
                                   s->protocol != SO_UDP;
  if (s->framing == SO_NEWLINE && !p->newline)
    return cfg_key_fail(c, "newline", "cannot be false with framing = "
                        "\"newline\": the newline ends each record");
  return 0;
}

static int read_tls(plugin_ctx *c, syslog_output_config *s)
{
  static const char *const keys[] = {"tls_ca", "tls_cert", "tls_key",
                                     "tls_server_name"};
  char **fields[] = {&s->tls_ca, &s->tls_cert, &s->tls_key,
                     &s->tls_server_name};

  for (size_t i = 0; i < 4; i++) {
    if (cfg_read_string(c, keys[i], false, fields[i]) != 0) return -1;
    if (*fields[i] && s->protocol != SO_TLS)
      return cfg_key_fail(c, keys[i], "is for tls:// addresses only");
  }
  if (!s->tls_cert != !s->tls_key)
    return cfg_key_fail(c, s->tls_cert ? "tls_cert" : "tls_key",
                        "needs %s too: a client certificate and its key go "
                        "together", s->tls_cert ? "tls_key" : "tls_cert");
  return 0;
}

static int read_backoff(plugin_ctx *c, syslog_output_config *s)
{
  s->reconnect_min_ms = 100;
  s->reconnect_max_ms = 30000;
  s->connect_timeout_ms = 10000;
  if (cfg_read_count(c, "reconnect_min_ms", 3600000.0,
                     &s->reconnect_min_ms) != 0 ||
      cfg_read_count(c, "reconnect_max_ms", 3600000.0,
                     &s->reconnect_max_ms) != 0 ||
      cfg_read_count(c, "connect_timeout_ms", 3600000.0,
                     &s->connect_timeout_ms) != 0)
    return -1;
  if (s->reconnect_min_ms < 1)
    return cfg_key_fail(c, "reconnect_min_ms", "must be at least 1");
  if (s->reconnect_max_ms < s->reconnect_min_ms)
    return cfg_key_fail(c, "reconnect_max_ms", "must be at least "
                        "reconnect_min_ms (%llu)",
                        (unsigned long long)s->reconnect_min_ms);
  if (s->connect_timeout_ms < 1)
    return cfg_key_fail(c, "connect_timeout_ms", "must be at least 1");
  return 0;
}

/* disk_buffer = { path =, max_bytes =, segment_bytes = }; path defaults
 * to a directory in state_dir (pipeline_build.c). */
static int read_disk_buffer(plugin_ctx *c, syslog_output_config *s)
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
  s->buffer_max_bytes = 1u << 30;
  s->buffer_segment_bytes = 16u << 20;
  rc = cfg_check_keys(c, keys, false) != 0 ||
       cfg_read_string(c, "path", false, &s->buffer_path) != 0 ||
       cfg_read_count(c, "max_bytes", 1e15, &s->buffer_max_bytes) != 0 ||
       cfg_read_count(c, "segment_bytes", 1u << 30,
                      &s->buffer_segment_bytes) != 0 ? -1 : 0;
  lua_pop(L, 1);
  if (rc == 0 && s->buffer_segment_bytes < 4096)
    return cfg_key_fail(c, "disk_buffer", "segment_bytes must be at least "
                        "4096");
  if (rc == 0 && s->buffer_max_bytes < s->buffer_segment_bytes)
    return cfg_key_fail(c, "disk_buffer", "max_bytes must be at least "
                        "segment_bytes (%llu)",
                        (unsigned long long)s->buffer_segment_bytes);
  return rc;
}

int syslog_output_read_config(plugin_ctx *c, config_plugin *p)
{
  syslog_output_config *s = calloc(1, sizeof *s);

  if (!s) return cfg_key_fail(c, "type", "cannot be stored: out of memory");
  p->syslog_output = s;
  if (config_read_output(c, p) != 0 || read_address(c, s) != 0 ||
      read_framing(c, p, s) != 0 || read_tls(c, s) != 0 ||
      read_backoff(c, s) != 0 || read_disk_buffer(c, s) != 0)
    return -1;
  return 0;
}
