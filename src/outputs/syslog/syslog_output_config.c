/*
 * syslog_output_config.c - syslog_output's type: its keys (what each does:
 * syslog_output.h), the address parsed, the rules across keys, and its
 * part of the pipeline.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lua.h>

#include "plugin.h"
#include "syslog_output.h"

static const struct {
  const char *scheme;
  so_protocol protocol;
} schemes[] = {
  {"tcp://", SO_TCP}, {"tls://", SO_TLS}, {"udp://", SO_UDP},
};

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

static int read_address(plugin_ctx *c, void *settings)
{
  syslog_output_config *s = settings;

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

/* Framing, which is for streams. */
static int read_framing(plugin_ctx *c, void *settings)
{
  syslog_output_config *s = settings;
  char *name = NULL;
  int rc = 0;

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
  return rc;
}

#define S(field) offsetof(syslog_output_config, field)

static int read_disk_buffer(plugin_ctx *c, void *settings)
{
  return config_read_disk_buffer(c, &((syslog_output_config *)settings)->buffer);
}

static void free_address(void *settings)
{
  syslog_output_config *s = settings;

  free(s->address);
  free(s->host);
  free(s->port);
  s->address = s->host = s->port = NULL;
}

static void free_disk_buffer(void *settings)
{
  config_free_disk_buffer(&((syslog_output_config *)settings)->buffer);
}

/* Rules across keys: TLS files for tls:// only, a certificate with its
 * key, back-off bounds in order, and the newline that newline framing
 * needs (a record is a message, not a line: no newline unless asked, or
 * unless the framing ends records with it). */
static int syslog_finish(plugin_ctx *c, config_plugin *p)
{
  static const char *const tls_keys[] = {"tls_ca", "tls_cert", "tls_key",
                                         "tls_server_name"};
  syslog_output_config *s = p->settings;
  char *const tls[] = {s->tls_ca, s->tls_cert, s->tls_key,
                       s->tls_server_name};
  lua_State *L = cfg_lua(c);
  bool newline_given = cfg_get_key(L, "newline") != LUA_TNIL;

  lua_pop(L, 1);
  for (size_t i = 0; i < 4; i++)
    if (tls[i] && s->protocol != SO_TLS)
      return cfg_key_fail(c, tls_keys[i], "is for tls:// addresses only");
  if (!s->tls_cert != !s->tls_key)
    return cfg_key_fail(c, s->tls_cert ? "tls_cert" : "tls_key",
                        "needs %s too: a client certificate and its key go "
                        "together", s->tls_cert ? "tls_key" : "tls_cert");
  if (s->reconnect_max_ms < s->reconnect_min_ms)
    return cfg_key_fail(c, "reconnect_max_ms", "must be at least "
                        "reconnect_min_ms (%llu)",
                        (unsigned long long)s->reconnect_min_ms);
  if (!newline_given)
    p->newline = s->framing == SO_NEWLINE && s->protocol != SO_UDP;
  if (s->framing == SO_NEWLINE && !p->newline)
    return cfg_key_fail(c, "newline", "cannot be false with framing = "
                        "\"newline\": the newline ends each record");
  return 0;
}

static int syslog_check(plugin_ctx *c, const config *cfg,
                        const config_plugin *p)
{
  return config_check_disk_buffer(
      c, cfg, &((const syslog_output_config *)p->settings)->buffer);
}

/* ---- the pipeline's part (plugin.h) ---- */

/* Its sink, with the disk buffer in its path or in state_dir. */
static int syslog_open(output_sink *o, const output_host *h,
                       const config_plugin *p, char *err, size_t errlen)
{
  const syslog_output_config *s = p->settings;
  char dir[4096];
  const char *buffer = config_disk_buffer_dir(&s->buffer, h->state_dir,
                                              "syslog", p->name, dir,
                                              sizeof dir);

  return syslog_output_open(o, h->loop, h->label, s, buffer, h->events, err,
                            errlen);
}

static int syslog_check_start(const config_plugin *p, char *err,
                              size_t errlen)
{
  return syslog_output_check(p->settings, err, errlen);
}

static const output_kind syslog_output_kind = {
  .open = syslog_open, .check = syslog_check_start,
};

static const config_key syslog_keys[] = {
  {"address", KEY_CUSTOM, 0, .required = true, .read = read_address,
   .free = free_address, .value = "address",
   .help = "tcp://HOST:PORT, tls://HOST:PORT or udp://HOST:PORT (HOST a "
           "name, an IPv4 address or [IPv6])"},
  {"framing", KEY_CUSTOM, 0, "octet_counting", .read = read_framing,
   .value = "octet_counting, newline",
   .help = "streams: RFC 6587 octet counting, or a newline after each "
           "record; UDP sends one record a datagram"},
  {"newline", KEY_BOOL, offsetof(config_plugin, newline), "false",
   .in_plugin = true,
   .help = "end each record with a newline (on with framing = \"newline\")"},
  {"reconnect_min_ms", KEY_COUNT, S(reconnect_min_ms), "100", 1, 3600000,
   .help = "the first wait before connecting again; it doubles"},
  {"reconnect_max_ms", KEY_COUNT, S(reconnect_max_ms), "30000", 1, 3600000,
   .help = "the longest wait before connecting again"},
  {"connect_timeout_ms", KEY_COUNT, S(connect_timeout_ms), "10000", 1,
   3600000, .help = "a connection (and its TLS handshake) not up by then "
                    "is given up"},
  {"send_timeout_ms", KEY_COUNT, S(send_timeout_ms), "60000", 0, 3600000,
   .help = "a connection that takes none of its bytes for this long is "
           "broken (0: never)"},
  {"max_bytes_per_second", KEY_COUNT, S(bytes_per_second), "0", 0, 1e15,
   .help = "a cap on the bytes sent, framing included (0: none)"},
  {"tls_ca", KEY_STRING, S(tls_ca),
   .help = "PEM certificate authorities the receiver's certificate is "
           "checked against (default: the system's)"},
  {"tls_cert", KEY_STRING, S(tls_cert),
   .help = "a PEM client certificate, for receivers that ask for one"},
  {"tls_key", KEY_STRING, S(tls_key), .help = "its PEM private key"},
  {"tls_server_name", KEY_STRING, S(tls_server_name),
   .help = "the name the receiver's certificate must carry (default: the "
           "address's host)"},
  {"disk_buffer", KEY_CUSTOM, 0, .read = read_disk_buffer,
   .free = free_disk_buffer, .value = "table",
   .help = "{ path =, max_bytes = (1 GiB), segment_bytes = (16 MiB), "
           "when_full = (\"hold\") }: "
           "where records go while the receiver is away"},
  {NULL}
};

const plugin_type syslog_output_type = {
  .name = "syslog_output", .role = PLUGIN_OUTPUT,
  .flags = PLUGIN_NO_DEAD_LETTERS,
  .summary = "forwards records to a syslog receiver over TCP, TLS or UDP, "
             "each delivered once the kernel took it",
  .keys = syslog_keys, .settings_size = sizeof(syslog_output_config),
  .finish = syslog_finish, .check = syslog_check,
  .output = &syslog_output_kind,
};
