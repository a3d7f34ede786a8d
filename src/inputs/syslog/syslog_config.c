/*
 * syslog_config.c - syslog_input's type: its keys (what each does:
 * syslog_input.h), the address parsed, the TLS files.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include <lua.h>

#include "host_port.h"
#include "syslog_input.h"

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
  const char *why = host_port_parse(hostport, sa);

  return why ? cfg_key_fail(c, "address", "'%s': %s", hostport, why) : 0;
}

static int read_address(plugin_ctx *c, void *settings)
{
  config_syslog *s = settings;

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

static int read_socket_mode(plugin_ctx *c, void *settings)
{
  config_syslog *s = settings;
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

#define S(field) offsetof(config_syslog, field)

static const config_key tls_keys[] = {
  {"cert", KEY_STRING, S(tls.cert), .required = true,
   .help = "the server's PEM certificate chain"},
  {"key", KEY_STRING, S(tls.key), .required = true,
   .help = "its PEM private key"},
  {"ca", KEY_STRING, S(tls.ca),
   .help = "PEM certificate authorities client certificates are checked "
           "against"},
  {"verify_client", KEY_BOOL, S(tls.verify_client), "false",
   .help = "clients must present a certificate ca verifies"},
  {NULL}
};

static int read_tls(plugin_ctx *c, void *settings)
{
  config_syslog *s = settings;
  lua_State *L = cfg_lua(c);
  bool tls = s->transport == SYSLOG_TLS;
  bool given = cfg_get_key(L, "tls") != LUA_TNIL;
  int rc;

  lua_pop(L, 1);
  if (!given && tls)
    return cfg_key_fail(c, "tls", "is required for a tls:// address "
                        "(cert and key)");
  if (given && !tls)
    return cfg_key_fail(c, "tls", "is for tls:// addresses only");
  rc = cfg_read_table(c, "tls", "a table {cert=, key=, ca=, verify_client=}",
                      tls_keys, s);
  if (rc > 0 && s->tls.verify_client && !s->tls.ca)
    return cfg_key_fail(c, "tls", "verify_client needs ca, the certificate "
                        "authority clients' certificates are checked against");
  return rc < 0 ? -1 : 0;
}

static void free_address(void *settings)
{
  config_syslog *s = settings;

  free(s->address);
  free(s->path);
  s->address = s->path = NULL;
}

static void free_tls(void *settings)
{
  cfg_free_keys(tls_keys, settings);
}

static const char *const framings[] = {"auto", "octet_counted", "newline",
                                       NULL};

static const config_key syslog_keys[] = {
  {"address", KEY_CUSTOM, 0, .required = true, .read = read_address,
   .free = free_address, .value = "address",
   .help = "tcp://HOST:PORT, tls://HOST:PORT, udp://HOST:PORT, unix:PATH "
           "(datagrams, as /dev/log) or unix-stream:PATH"},
  {"max_line", KEY_SIZE, offsetof(config_plugin, max_line), "65536", 16,
   1u << 30, .in_plugin = true, .help = "the longest message, in bytes"},
  {"framing", KEY_CHOICE, S(framing), "auto", .choices = framings,
   .help = "stream sockets: RFC 6587 octet counting, newlines, or what "
           "each connection's first frame shows"},
  {"max_connections", KEY_COUNT, S(max_connections), "1000", 1, 1u << 20,
   .help = "connections served at once"},
  {"max_connections_per_address", KEY_COUNT, S(max_connections_per_address),
   "100", 1, 1u << 20, .help = "connections from one IP address"},
  {"tls_handshake_timeout_ms", KEY_COUNT, S(tls_handshake_timeout_ms),
   "10000", 0, 3600000, .help = "a TLS handshake not done by then closes "
                                "the connection (0: never)"},
  {"first_message_timeout_ms", KEY_COUNT, S(first_message_timeout_ms),
   "30000", 0, 7 * 24 * 3600000.0, .help = "no whole message by then "
                                           "closes the connection (0: never)"},
  {"idle_timeout_ms", KEY_COUNT, S(idle_timeout_ms), "0", 0,
   7 * 24 * 3600000.0, .help = "a connection silent this long after a "
                               "message is closed (0: never)"},
  {"receive_buffer", KEY_COUNT, S(receive_buffer), "4194304", 0, 1u << 30,
   .help = "datagram sockets: the SO_RCVBUF asked for"},
  /* The default is read_socket_mode's; def only shows it. */
  {"socket_mode", KEY_CUSTOM, 0, "\"0666\"", .read = read_socket_mode,
   .value = "octal", .help = "unix sockets: the file's permissions"},
  {"sender_field", KEY_FIELD, S(sender_field), "fromhost-ip",
   .help = "the field given the sender's IP address"},
  {"listener_field", KEY_FIELD, S(listener_field), "inputname",
   .help = "the field given the input's name"},
  {"tls", KEY_CUSTOM, 0, .read = read_tls, .free = free_tls,
   .value = "table", .help = "tls:// only: { cert =, key =, ca =, "
   "verify_client = }: PEM files"},
  {NULL}
};

const plugin_type syslog_input_type = {
  .name = "syslog_input", .role = PLUGIN_INPUT, .flags = PLUGIN_LINES,
  .summary = "listens for syslog messages over TCP, TLS, UDP and Unix "
             "sockets",
  .keys = syslog_keys, .settings_size = sizeof(config_syslog),
  .input = &syslog_input_kind,
};
