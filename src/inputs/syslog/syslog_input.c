/*
 * syslog_input.c - the syslog_input kind (syslog_input.h): binding, the
 * stream listeners and their accepting, stopping, and what the pipeline
 * asks of every input kind. Connections: syslog_conn.c; datagram sockets:
 * syslog_dgram.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "syslog_internal.h"
#include "systemd_listen.h"

void syslog_addr_text(const struct sockaddr *sa, char *out, size_t len)
{
  const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

  if (sa->sa_family == AF_INET) {
    inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out,
              (socklen_t)len);
  } else if (sa->sa_family == AF_INET6 &&
             IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
    inet_ntop(AF_INET, &s6->sin6_addr.s6_addr[12], out, (socklen_t)len);
  } else if (sa->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &s6->sin6_addr, out, (socklen_t)len);
  } else {
    snprintf(out, len, "unknown");
  }
}

void syslog_bound_address(syslog_listener *l, const struct sockaddr *sa)
{
  char scheme[16], host[SYSLOG_ADDR_TEXT];
  const char *rest = strstr(l->address, "://");
  int len = rest ? (int)(rest + 3 - l->address) : 0;
  unsigned port = ntohs(sa->sa_family == AF_INET6
                            ? ((const struct sockaddr_in6 *)sa)->sin6_port
                            : ((const struct sockaddr_in *)sa)->sin_port);

  if (sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, host,
              sizeof host);
  else
    syslog_addr_text(sa, host, sizeof host);
  /* The scheme as written: l->address is the configured address so far. */
  snprintf(scheme, sizeof scheme, "%.*s", len, l->address);
  snprintf(l->address, sizeof l->address,
           sa->sa_family == AF_INET6 ? "%s[%s]:%u" : "%s%s:%u", scheme, host,
           port);
}

void syslog_tally_note(syslog_listener *l, syslog_tally *t, const char *fmt,
                       ...)
{
  uint64_t now = uv_now(pl_input_loop(l->pi));
  char text[512];
  va_list ap;

  if (t->count++ > 0 && now - t->logged_at < 1000) return;
  t->logged_at = now;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  log_warning("input '%s': %s (%llu so far, logged at most once a second)",
          pl_input_name(l->pi), text, (unsigned long long)t->count);
}

void syslog_malformed(syslog_listener *l, const char *from, uint64_t position,
                      const char *bytes, size_t len, const char *reason)
{
  l->malformed++;
  pl_input_dead_letter(l->pi, from, position, bytes, len, reason);
}

/* ---- binding ---- */

/* Whether a process answers on the socket file: it is no stale one. */
static bool socket_answers(const char *path, int type)
{
  struct sockaddr_un sun = {.sun_family = AF_UNIX};
  int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
  bool answers;

  if (fd < 0) return false;
  memcpy(sun.sun_path, path, strlen(path) + 1);
  answers = connect(fd, (struct sockaddr *)&sun, sizeof sun) == 0;
  close(fd);
  return answers;
}

int syslog_clear_socket_path(const char *path, int type, char *why,
                             size_t len)
{
  struct stat sb;

  if (lstat(path, &sb) != 0) {
    if (errno == ENOENT) return 0;
    snprintf(why, len, "cannot look at %s: %s", path, strerror(errno));
    return -1;
  }
  if (!S_ISSOCK(sb.st_mode)) {
    snprintf(why, len, "%s exists and is not a socket", path);
    return -1;
  }
  if (socket_answers(path, type)) {
    snprintf(why, len, "%s is in use by another process", path);
    return -1;
  }
  if (unlink(path) != 0) {
    snprintf(why, len, "cannot remove the old socket %s: %s", path,
             strerror(errno));
    return -1;
  }
  return 0;
}

socklen_t syslog_sockaddr(const config_syslog *cfg,
                          struct sockaddr_storage *sa)
{
  struct sockaddr_un *sun = (struct sockaddr_un *)sa;

  memset(sa, 0, sizeof *sa);
  if (!cfg->path) {
    memcpy(sa, &cfg->sockaddr, sizeof cfg->sockaddr);
    return sa->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                     : sizeof(struct sockaddr_in);
  }
  sun->sun_family = AF_UNIX;
  memcpy(sun->sun_path, cfg->path, strlen(cfg->path) + 1);
  return sizeof *sun;
}

int syslog_adopt(syslog_listener *l, const config_syslog *cfg, int type,
                 int *fd)
{
  struct sockaddr_storage sa;
  socklen_t len = sizeof sa;
  void *carried;
  int rc;

  syslog_sockaddr(cfg, &sa);
  rc = systemd_listen_claim(type, (struct sockaddr *)&sa, fd, &l->passed,
                            &carried);
  if (rc <= 0) return rc < 0 ? -errno : 0;
  if (rc == 2) {
    /* The last pipeline's own socket, kept through the reload, with its
     * connections: its file is ours again. */
    l->passed = NULL;
    l->handed_over = true;
    l->carried = carried;
    l->bound_path = l->path != NULL;
  }
  /* The socket unit's address: [::]:514 for a listener on 0.0.0.0:514. */
  if (!l->path && getsockname(*fd, (struct sockaddr *)&sa, &len) == 0)
    syslog_bound_address(l, (struct sockaddr *)&sa);
  return 1;
}

/* ---- the input kind ---- */

static int syslog_build(pl_input *pi, const config_plugin *p, char *err,
                        size_t errlen)
{
  const config_syslog *cfg = p->settings;
  syslog_listener *l = calloc(1, sizeof *l);
  char why[512] = "out of memory";
  int rc = -1;

  pl_input_set_state(pi, l);
  if (!l || pl_input_set_fields(pi, NULL, cfg->sender_field,
                                cfg->listener_field) != 0)
    goto fail;
  *l = (syslog_listener){
      .pi = pi, .transport = cfg->transport, .framing = cfg->framing,
      .max_line = p->max_line, .keep_cr = p->keep_cr,
      .max_connections = cfg->max_connections,
      .max_connections_per_address = cfg->max_connections_per_address,
      .tls_handshake_timeout_ms = cfg->tls_handshake_timeout_ms,
      .first_message_timeout_ms = cfg->first_message_timeout_ms,
      .idle_timeout_ms = cfg->idle_timeout_ms,
      .receive_buffer = cfg->receive_buffer, .server_fd = -1,
      .reserve_fd = -1};
  snprintf(l->address, sizeof l->address, "%s", cfg->address);
  if (cfg->path && !(l->path = strdup(cfg->path))) goto fail;
  if (cfg->transport == SYSLOG_TLS &&
      !(l->tls = tls_server_new(cfg->tls.cert, cfg->tls.key, cfg->tls.ca,
                                cfg->tls.verify_client, why, sizeof why)))
    goto fail;
  if (cfg->transport == SYSLOG_UDP || cfg->transport == SYSLOG_UNIX_DGRAM) {
    rc = syslog_dgram_open(l, cfg, why, sizeof why);
  } else if ((l->readbuf = malloc(SYSLOG_READ_SIZE))) {
    pl_input_spread(pi); /* connections go to the workers in turn */
    uv_timer_init(pl_input_loop(pi), &l->stop_timer);
    l->stop_timer.data = l;
    l->stop_timer_open = true;
    rc = syslog_accept_listen(l, cfg, why, sizeof why);
  }
fail:
  if (rc != 0)
    snprintf(err, errlen, "%s:%d: input '%s': %s", p->file,
             p->line, p->name, why);
  return rc;
}

static int syslog_start(pl_input *pi, char *err, size_t errlen)
{
  syslog_listener *l = pl_input_state(pi);
  size_t carried;

  if (l->dgram && syslog_dgram_start(l, err, errlen) != 0) return -1;
  if (l->server_open) syslog_accept_start(l);
  carried = syslog_carry_resume(l);
  l->started = true;
  if (l->passed)
    log_msg("input '%s': listening on %s (socket '%s' passed by systemd)",
            pl_input_name(pi), l->address, l->passed);
  else if (l->handed_over && l->dgram)
    log_msg("input '%s': listening on %s (its socket kept through the "
            "reload)", pl_input_name(pi), l->address);
  else if (l->handed_over)
    log_msg("input '%s': listening on %s (its socket kept through the "
            "reload, with %zu connection%s)", pl_input_name(pi), l->address,
            carried, carried == 1 ? "" : "s");
  else
    log_msg("input '%s': listening on %s", pl_input_name(pi), l->address);
  return 0;
}

void syslog_maybe_done(syslog_listener *l)
{
  if (l->started && l->stopping && !l->server_open && l->nconns == 0 &&
      (!l->dgram || syslog_dgram_closed(l->dgram)) &&
      !pl_input_is_done(l->pi))
    pl_input_done(l->pi);
}

/* Stopping: connections that went quiet (or all, past half the stop
 * timeout) are drained and ended. They free themselves later, on the loop,
 * so the list holds while it is walked. */
static bool end_quiet_connections(syslog_listener *l)
{
  uint64_t now = uv_now(pl_input_loop(l->pi));
  bool late = now - l->stopped_at >= pl_input_stop_timeout_ms(l->pi) / 2;
  bool open = false;

  for (syslog_conn *c = l->conns; c; c = c->next) {
    if (c->ended) continue;
    if (late || syslog_conn_quiet(c, now, SYSLOG_STOP_QUIET_MS))
      syslog_conn_drain(c, "the run stopped inside this message: the rest "
                           "of it was not read");
    else
      open = true;
  }
  return open;
}

static void on_stop_timer(uv_timer_t *t)
{
  if (!end_quiet_connections(t->data)) uv_timer_stop(t);
}

static void syslog_stop(pl_input *pi)
{
  syslog_listener *l = pl_input_state(pi);

  if (l->stopping) return;
  l->stopping = true;
  l->stopped_at = uv_now(pl_input_loop(pi));
  /* A listener whose socket goes on leaves its backlog to the next one,
   * and its connections when the next one takes them. */
  if (l->readbuf && syslog_carry_hand_over(l, l->server_fd))
    syslog_accept_close(l);
  else if (l->readbuf)
    syslog_accept_stop(l);
  if (l->dgram) syslog_carry_hand_over(l, syslog_dgram_socket(l->dgram));
  if (l->dgram) syslog_dgram_drain(l->dgram);
  if (l->stop_timer_open && end_quiet_connections(l))
    uv_timer_start(&l->stop_timer, on_stop_timer, SYSLOG_STOP_QUIET_MS / 4,
                   SYSLOG_STOP_QUIET_MS / 4);
  syslog_maybe_done(l);
}

static void syslog_source_finished(pl_input *pi, pl_source *src)
{
  syslog_listener *l = pl_input_state(pi);

  syslog_conn *c = pl_source_data(src);

  if (c) syslog_conn_close(c);
  else syslog_dgram_close(l->dgram);
}

static void syslog_close_handles(pl_input *pi)
{
  syslog_listener *l = pl_input_state(pi);

  if (!l) return;
  /* A pipeline not built gives its socket back, for the one built next. */
  syslog_carry_give_back(l, l->readbuf ? l->server_fd
                           : l->dgram ? syslog_dgram_socket(l->dgram) : -1);
  if (l->readbuf) syslog_accept_close(l);
  if (l->stop_timer_open) uv_close((uv_handle_t *)&l->stop_timer, NULL);
  l->stop_timer_open = false;
  for (syslog_conn *c = l->conns; c; c = c->next)
    syslog_conn_close(c);
  if (l->dgram) syslog_dgram_close(l->dgram);
}

static void syslog_free(pl_input *pi)
{
  syslog_listener *l = pl_input_state(pi);

  if (!l) return;
  if (l->carried) syslog_carry_drop(l->carried);
  syslog_dgram_free(l->dgram);
  tls_server_free(l->tls);
  free(l->readbuf);
  free(l->path);
  free(l);
  pl_input_set_state(pi, NULL);
}

static void syslog_hold(pl_source *src, bool hold)
{
  syslog_listener *l = pl_input_state(pl_source_owner(src));
  syslog_conn *c = pl_source_data(src);

  if (c) syslog_conn_hold(c, hold);
  else syslog_dgram_hold(l->dgram, hold);
}

/* A stream listener's counters; connection slots: syslog_accept.c. */
static const plugin_counter stream_counters[] = {
  {"lumberjit_syslog_connections_total", "Connections accepted.",
   "connections"},
  {"lumberjit_syslog_refused_connections_total",
   "Connections refused over max_connections.",
   "refused over max_connections"},
  {"lumberjit_syslog_address_refused_connections_total",
   "Connections refused over max_connections_per_address.",
   "refused over max_connections_per_address"},
  {"lumberjit_syslog_fd_refused_connections_total",
   "Connections refused for want of a file descriptor.",
   "refused for want of a file descriptor"},
  {"lumberjit_syslog_evicted_connections_total",
   "Silent connections closed to make room for a new one.",
   "silent closed to make room"},
  {"lumberjit_syslog_handshake_timeout_connections_total",
   "Connections closed with no TLS handshake within "
   "tls_handshake_timeout_ms.", "closed past tls_handshake_timeout_ms"},
  {"lumberjit_syslog_first_message_timeout_connections_total",
   "Connections closed with no whole message within "
   "first_message_timeout_ms.", "closed past first_message_timeout_ms"},
  {"lumberjit_syslog_idle_closed_connections_total",
   "Connections closed for being idle.", "closed idle"},
  {"lumberjit_syslog_tls_failed_connections_total",
   "TLS sessions that failed: a handshake refused, a certificate not "
   "verified.", "failed TLS sessions"},
  {"lumberjit_syslog_malformed_frames_total",
   "Frames that were no syslog frames.", "malformed frames"},
  {"lumberjit_syslog_empty_frames_total",
   "Frames of no bytes (a lone LF): no message.", "empty frames"},
  {NULL, NULL, NULL}
};

static const plugin_counter datagram_counters[] = {
  {"lumberjit_syslog_malformed_frames_total",
   "Frames that were no syslog frames.", "malformed datagrams"},
  {"lumberjit_syslog_dropped_datagrams_total",
   "Datagrams the kernel dropped while the socket was not read.",
   "datagrams dropped by the kernel"},
  {"lumberjit_syslog_empty_frames_total",
   "Datagrams of no bytes (or a lone LF): no message.", "empty datagrams"},
  {NULL, NULL, NULL}
};

static const plugin_counter *syslog_count(pl_input *pi, uint64_t *values)
{
  syslog_listener *l = pl_input_state(pi);

  if (l->dgram) {
    syslog_dgram_count_drops(l->dgram);
    values[0] = l->malformed;
    values[1] = l->dropped;
    values[2] = l->empty;
    return datagram_counters;
  }
  values[0] = l->connections;
  values[1] = l->refused.count;
  values[2] = l->refused_address.count;
  values[3] = l->refused_fd.count;
  values[4] = l->evicted.count;
  values[5] = l->handshake_late.count;
  values[6] = l->message_late.count;
  values[7] = l->idle_closed.count;
  values[8] = l->tls_failed.count;
  values[9] = l->malformed;
  values[10] = l->empty;
  return stream_counters;
}

/* Stream listeners hold a descriptor a connection. */
static uint64_t syslog_descriptors(const config_plugin *p)
{
  const config_syslog *cfg = p->settings;

  return cfg->transport == SYSLOG_UDP || cfg->transport == SYSLOG_UNIX_DGRAM
             ? 1 : cfg->max_connections;
}

const input_kind syslog_input_kind = {
  .build = syslog_build, .start = syslog_start, .stop = syslog_stop,
  .source_finished = syslog_source_finished,
  .close_handles = syslog_close_handles, .free = syslog_free,
  .hold = syslog_hold, .counters = syslog_count,
  .descriptors = syslog_descriptors,
};
