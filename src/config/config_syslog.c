/*
 * config_syslog.c - reads a syslog_input's table (config_internal.h):
 * its address, framing, limits, fields and TLS files. Defaults and what
 * each key does: syslog_input.h.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include <lauxlib.h>

#include "config_internal.h"

const char *const config_syslog_keys[] = {
  "type", "decoder", "max_line", "long_lines", "keep_cr", "address", "framing",
  "max_connections", "max_connections_per_address",
  "tls_handshake_timeout_ms", "first_message_timeout_ms", "idle_timeout_ms",
  "receive_buffer", "socket_mode",
  "sender_field", "listener_field", "tls", NULL
};

static const struct {
  const char *scheme;
  syslog_transport transport;
} schemes[] = {
  {"tcp://", SYSLOG_TCP}, {"tls://", SYSLOG_TLS}, {"udp://", SYSLOG_UDP},
  {"unix-stream:", SYSLOG_UNIX_STREAM}, {"unix:", SYSLOG_UNIX_DGRAM},
};

/* "127.0.0.1:514", "[::1]:514", "*:514" into sa. */
static int read_host_port(plugin_ctx *c, const char *hostport,
                          struct sockaddr_storage *sa)
{
  char host[INET6_ADDRSTRLEN + 2];
  const char *colon = strrchr(hostport, ':');
  size_t hostlen = colon ? (size_t)(colon - hostport) : 0;
  char *end;
  unsigned long port;

  if (!colon || hostlen == 0 || hostlen >= sizeof host)
    return cfg_key_fail(c, "address", "'%s' is no HOST:PORT", hostport);
  port = strtoul(colon + 1, &end, 10);
  if (!colon[1] || *end || port > 65535)
    return cfg_key_fail(c, "address", "'%s': the port must be a number from "
                        "0 to 65535", hostport);
  memcpy(host, hostport, hostlen);
  host[hostlen] = '\0';
  memset(sa, 0, sizeof *sa);
  if (host[0] == '[' && host[hostlen - 1] == ']') {
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;
    host[hostlen - 1] = '\0';
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons((uint16_t)port);
    if (inet_pton(AF_INET6, host + 1, &s6->sin6_addr) == 1) return 0;
  } else {
    struct sockaddr_in *s4 = (struct sockaddr_in *)sa;
    s4->sin_family = AF_INET;
    s4->sin_port = htons((uint16_t)port);
    if (strcmp(host, "*") == 0) return 0; /* INADDR_ANY */
    if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) return 0;
  }
  return cfg_key_fail(c, "address", "'%s': the host must be an IPv4 "
                      "address, [IPv6] or *", hostport);
}

static int read_address(plugin_ctx *c, config_syslog *s)
{
  if (cfg_read_string(c, "address", true, &s->address) != 0) return -1;
  for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
    size_t n = strlen(schemes[i].scheme);
    const char *rest = s->address + n;
    if (strncmp(s->address, schemes[i].scheme, n) != 0) continue;
    s->transport = schemes[i].transport;
    if (s->transport != SYSLOG_UNIX_DGRAM &&
        s->transport != SYSLOG_UNIX_STREAM)
      return read_host_port(c, rest, &s->sockaddr);
    if (!*rest || strlen(rest) >= sizeof ((struct sockaddr_un *)0)->sun_path)
      return cfg_key_fail(c, "address", "'%s': a socket path of 1 to %zu "
                          "bytes must follow", s->address,
                          sizeof ((struct sockaddr_un *)0)->sun_path - 1);
    if (!(s->path = strdup(rest)))
      return cfg_key_fail(c, "address", "cannot be stored: out of memory");
    return 0;
  }
  return cfg_key_fail(c, "address", "'%s' must start with tcp://, tls://, "
                      "udp://, unix: or unix-stream:", s->address);
}

static int read_framing(plugin_ctx *c, config_syslog *s)
{
  static const char *const names[] = {"auto", "octet_counted", "newline"};
  char *name = NULL;

  s->framing = FRAMING_AUTO;
  if (cfg_read_string(c, "framing", false, &name) != 0) return -1;
  if (!name) return 0;
  for (size_t i = 0; i < 3; i++)
    if (strcmp(name, names[i]) == 0) {
      s->framing = (framing)i;
      free(name);
      return 0;
    }
  cfg_key_fail(c, "framing", "must be auto, octet_counted or newline, not "
               "'%s'", name);
  free(name);
  return -1;
}

/* A field's name, or false (or "") for none. */
static int read_field_name(plugin_ctx *c, const char *key, const char *dflt,
                           char **out)
{
  lua_State *L = c->ld->L;
  bool none = cfg_get_key(L, key) == LUA_TBOOLEAN && !lua_toboolean(L, -1);

  lua_pop(L, 1);
  if (!none && cfg_read_string(c, key, false, out) != 0) return -1;
  if (!none && !*out && !(*out = strdup(dflt)))
    return cfg_key_fail(c, key, "cannot be stored: out of memory");
  if (*out && !**out) {
    free(*out);
    *out = NULL;
  }
  return 0;
}

static int read_socket_mode(plugin_ctx *c, config_syslog *s)
{
  char *text = NULL, *end;
  unsigned long mode;

  s->socket_mode = 0666;
  if (cfg_read_string(c, "socket_mode", false, &text) != 0) return -1;
  if (!text) return 0;
  mode = strtoul(text, &end, 8);
  if (!*text || *end || mode > 0777) {
    cfg_key_fail(c, "socket_mode", "must be octal permissions such as "
                 "\"0666\", not '%s'", text);
    free(text);
    return -1;
  }
  free(text);
  s->socket_mode = (unsigned)mode;
  return 0;
}

static int read_tls(plugin_ctx *c, config_syslog *s)
{
  static const char *const keys[] = {"cert", "key", "ca", "verify_client",
                                     NULL};
  lua_State *L = c->ld->L;
  int t = cfg_get_key(L, "tls"), rc;

  if (t == LUA_TNIL) {
    lua_pop(L, 1);
    if (s->transport == SYSLOG_TLS)
      return cfg_key_fail(c, "tls", "is required for a tls:// address "
                          "(cert and key)");
    return 0;
  }
  if (s->transport != SYSLOG_TLS) {
    lua_pop(L, 1);
    return cfg_key_fail(c, "tls", "is for tls:// addresses only");
  }
  if (t != LUA_TTABLE) {
    lua_pop(L, 1);
    return cfg_key_fail(c, "tls", "must be a table {cert=, key=, ca=, "
                        "verify_client=}");
  }
  rc = cfg_check_keys(c, keys, false) != 0 ||
       cfg_read_string(c, "cert", true, &s->tls_cert) != 0 ||
       cfg_read_string(c, "key", true, &s->tls_key) != 0 ||
       cfg_read_string(c, "ca", false, &s->tls_ca) != 0 ||
       cfg_read_bool(c, "verify_client", &s->tls_verify_client) != 0 ? -1 : 0;
  lua_pop(L, 1);
  if (rc == 0 && s->tls_verify_client && !s->tls_ca)
    return cfg_key_fail(c, "tls", "verify_client needs ca, the certificate "
                        "authority clients' certificates are checked against");
  return rc;
}

int config_read_syslog(plugin_ctx *c, config_plugin *p)
{
  config_syslog *s = &p->syslog;
  uint64_t max_line = 64u << 10;

  s->max_connections = 1000;
  s->max_connections_per_address = 100;
  s->tls_handshake_timeout_ms = 10000;
  s->first_message_timeout_ms = 30000;
  s->receive_buffer = 4u << 20;
  if (config_read_input(c, p) != 0 ||
      cfg_read_count(c, "max_line", 1u << 30, &max_line) != 0 ||
      read_address(c, s) != 0 || read_framing(c, s) != 0 ||
      cfg_read_count(c, "max_connections", 1u << 20, &s->max_connections) != 0 ||
      cfg_read_count(c, "max_connections_per_address", 1u << 20,
                     &s->max_connections_per_address) != 0 ||
      cfg_read_count(c, "tls_handshake_timeout_ms", 3600000.0,
                     &s->tls_handshake_timeout_ms) != 0 ||
      cfg_read_count(c, "first_message_timeout_ms", 7 * 24 * 3600000.0,
                     &s->first_message_timeout_ms) != 0 ||
      cfg_read_count(c, "idle_timeout_ms", 7 * 24 * 3600000.0,
                     &s->idle_timeout_ms) != 0 ||
      cfg_read_count(c, "receive_buffer", 1u << 30, &s->receive_buffer) != 0 ||
      read_socket_mode(c, s) != 0 ||
      read_field_name(c, "sender_field", "fromhost-ip", &s->sender_field) != 0 ||
      read_field_name(c, "listener_field", "inputname",
                      &s->listener_field) != 0 ||
      read_tls(c, s) != 0)
    return -1;
  p->max_line = (size_t)max_line;
  if (s->max_connections < 1)
    return cfg_key_fail(c, "max_connections", "must be at least 1");
  if (s->max_connections_per_address < 1)
    return cfg_key_fail(c, "max_connections_per_address", "must be at least "
                        "1");
  return 0;
}
