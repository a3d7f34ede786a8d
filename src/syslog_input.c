/*
 * syslog_input.c - the syslog_input kind (syslog_input.h): binding, the
 * stream listeners and their accepting, stopping, and what the pipeline
 * asks of every input kind. Connections: syslog_conn.c; datagram sockets:
 * syslog_dgram.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "syslog_internal.h"

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

void syslog_malformed(syslog_listener *l, const char *from, uint64_t position,
                      const char *bytes, size_t len, const char *reason)
{
  pipeline *pl = l->pi->pl;
  msg_origin o = {l->pi->name, position, false, bytes, len, NULL, NULL, from,
                  0};

  l->malformed++;
  dead_letter_write(&pl->dl, "input", l->pi->name, reason, &o);
  output_flush(pl->dl.sink);
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

static void on_connection(uv_stream_t *server, int status)
{
  syslog_listener *l = server->data;

  if (status < 0) {
    log_msg("input '%s': accepting on %s: %s", l->pi->name, l->address,
            uv_strerror(status));
    return;
  }
  syslog_conn_accept(l);
}

/* Binds and listens at once, so an address in use fails the build; the
 * loop accepts nothing before the pipeline runs. */
static int listen_stream(syslog_listener *l, const config_syslog *cfg,
                         char *why, size_t len)
{
  uv_loop_t *loop = l->pi->pl->loop;
  struct sockaddr_storage bound;
  int rc, namelen = sizeof bound;

  if (l->transport == SYSLOG_UNIX_STREAM) {
    if (syslog_clear_socket_path(l->path, SOCK_STREAM, why, len) != 0) return -1;
    uv_pipe_init(loop, &l->server.pipe, 0);
    l->server_open = true;
    rc = uv_pipe_bind(&l->server.pipe, l->path);
    l->bound_path = rc == 0;
    if (rc == 0 && chmod(l->path, cfg->socket_mode) != 0)
      rc = uv_translate_sys_error(errno);
  } else {
    uv_tcp_init_ex(loop, &l->server.tcp, cfg->sockaddr.ss_family);
    l->server_open = true;
    rc = uv_tcp_bind(&l->server.tcp, (const struct sockaddr *)&cfg->sockaddr,
                     0);
  }
  l->server.handle.data = l;
  if (rc == 0) rc = uv_listen(&l->server.stream, 1024, on_connection);
  if (rc != 0) {
    snprintf(why, len, "cannot listen on %s: %s", cfg->address,
             uv_strerror(rc));
    return -1;
  }
  if (l->transport != SYSLOG_UNIX_STREAM &&
      uv_tcp_getsockname(&l->server.tcp, (struct sockaddr *)&bound,
                         &namelen) == 0)
    syslog_bound_address(l, (struct sockaddr *)&bound);
  return 0;
}

/* ---- the input kind ---- */

static int syslog_build(pl_input *pi, const config_plugin *p, char *err,
                        size_t errlen)
{
  const config_syslog *cfg = &p->syslog;
  syslog_listener *l = calloc(1, sizeof *l);
  char why[512] = "out of memory";
  int rc = -1;

  pi->state = l;
  if (!l) goto fail;
  *l = (syslog_listener){.pi = pi, .transport = cfg->transport,
                         .framing = cfg->framing, .max_line = p->max_line,
                         .keep_cr = p->keep_cr,
                         .max_connections = cfg->max_connections,
                         .idle_timeout_ms = cfg->idle_timeout_ms,
                         .receive_buffer = cfg->receive_buffer};
  snprintf(l->address, sizeof l->address, "%s", cfg->address);
  if (cfg->path && !(l->path = strdup(cfg->path))) goto fail;
  if (cfg->transport == SYSLOG_TLS &&
      !(l->tls = tls_server_new(cfg->tls_cert, cfg->tls_key, cfg->tls_ca,
                                cfg->tls_verify_client, why, sizeof why)))
    goto fail;
  if (cfg->transport == SYSLOG_UDP || cfg->transport == SYSLOG_UNIX_DGRAM) {
    rc = syslog_dgram_open(l, cfg, why, sizeof why);
  } else if ((l->readbuf = malloc(SYSLOG_READ_SIZE))) {
    pi->spreads = true; /* connections go to the workers in turn */
    uv_timer_init(pi->pl->loop, &l->stop_timer);
    l->stop_timer.data = l;
    l->stop_timer_open = true;
    rc = listen_stream(l, cfg, why, sizeof why);
  }
fail:
  if (rc != 0)
    snprintf(err, errlen, "%s:%d: input '%s': %s", pi->pl->cfg->file, p->line,
             p->name, why);
  return rc;
}

static int syslog_start(pl_input *pi, char *err, size_t errlen)
{
  syslog_listener *l = pi->state;

  if (l->dgram && syslog_dgram_start(l, err, errlen) != 0) return -1;
  l->started = true;
  log_msg("input '%s': listening on %s", pi->name, l->address);
  return 0;
}

static void on_server_closed(uv_handle_t *h)
{
  syslog_listener *l = h->data;

  l->server_open = false;
  if (l->bound_path) unlink(l->path);
  syslog_maybe_done(l);
}

static void close_server(syslog_listener *l)
{
  if (l->server_open && !uv_is_closing(&l->server.handle))
    uv_close(&l->server.handle, on_server_closed);
}

void syslog_maybe_done(syslog_listener *l)
{
  if (l->started && l->stopping && !l->server_open && l->nconns == 0 &&
      (!l->dgram || syslog_dgram_closed(l->dgram)) && !l->pi->done)
    pipeline_input_done(l->pi);
}

/* Stopping: connections that went quiet (or all, past half the stop
 * timeout) are drained and ended. They free themselves later, on the loop,
 * so the list holds while it is walked. */
static bool end_quiet_connections(syslog_listener *l)
{
  uint64_t now = uv_now(l->pi->pl->loop);
  bool late = now - l->stopped_at >= l->pi->pl->stop_timeout_ms / 2;
  bool open = false;

  for (syslog_conn *c = l->conns; c; c = c->next) {
    if (c->ended) continue;
    if (late || syslog_conn_quiet(c, now, SYSLOG_STOP_QUIET_MS))
      syslog_conn_drain(c);
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
  syslog_listener *l = pi->state;

  if (l->stopping) return;
  l->stopping = true;
  l->stopped_at = uv_now(pi->pl->loop);
  close_server(l);
  if (l->dgram) syslog_dgram_drain(l->dgram);
  if (l->stop_timer_open && end_quiet_connections(l))
    uv_timer_start(&l->stop_timer, on_stop_timer, SYSLOG_STOP_QUIET_MS / 4,
                   SYSLOG_STOP_QUIET_MS / 4);
  syslog_maybe_done(l);
}

static void syslog_source_finished(pl_input *pi, pl_source *src)
{
  syslog_listener *l = pi->state;

  if (src->conn) syslog_conn_close(src->conn);
  else syslog_dgram_close(l->dgram);
}

static void syslog_close_handles(pl_input *pi)
{
  syslog_listener *l = pi->state;

  if (!l) return;
  close_server(l);
  if (l->stop_timer_open) uv_close((uv_handle_t *)&l->stop_timer, NULL);
  l->stop_timer_open = false;
  for (syslog_conn *c = l->conns; c; c = c->next)
    syslog_conn_close(c);
  if (l->dgram) syslog_dgram_close(l->dgram);
}

static void syslog_free(pl_input *pi)
{
  syslog_listener *l = pi->state;

  if (!l) return;
  syslog_dgram_free(l->dgram);
  tls_server_free(l->tls);
  free(l->readbuf);
  free(l->path);
  free(l);
  pi->state = NULL;
}

static void syslog_hold(pl_source *src, bool hold)
{
  syslog_listener *l = src->owner->state;

  if (src->conn) syslog_conn_hold(src->conn, hold);
  else syslog_dgram_hold(l->dgram, hold);
}

static void syslog_stats(pl_input *pi, pipeline_input_stats *st)
{
  syslog_listener *l = pi->state;

  if (l->dgram) syslog_dgram_count_drops(l->dgram);
  st->kind = "syslog";
  st->connections = l->connections;
  st->refused = l->refused;
  st->idle_closed = l->idle_closed;
  st->malformed = l->malformed;
  st->dropped = l->dropped;
}

const input_kind syslog_input_kind = {
  syslog_build, syslog_start, syslog_stop, syslog_source_finished,
  syslog_close_handles, syslog_free, syslog_hold, syslog_stats
};
