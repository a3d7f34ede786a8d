/*
 * syslog_accept.c - a stream listener's socket and its accepting
 * (syslog_internal.h): who gets a connection slot, and what happens when
 * file descriptors run out.
 *
 * The socket is accepted from here, watched with a uv_poll, and not by
 * uv_listen: when accept fails for want of a descriptor, libuv (its
 * uv__emfile_trick in src/unix/stream.c) frees a spare one, accepts every
 * connection the kernel queued, closes them and tells no one, so their
 * senders' messages were lost uncounted.
 *
 * Slots. A connection that has sent no whole message yet is silent (TLS
 * handshakes included); anyone who can reach the port can open silent
 * connections, so they never keep a sender out:
 *   - one address holds at most max_connections_per_address; one more from
 *     it closes its oldest silent connection, or is refused if it has none
 *     (and none of its connections turns out closed by its peer, settle);
 *   - a full table (max_connections) closes the oldest silent connection,
 *     or refuses the new one if every connection has sent something (and
 *     is still open);
 *   - deadlines close silent connections (syslog_conn.c).
 * Unix stream sockets have no addresses: only the table's rule holds.
 *
 * Descriptors. Accepting leaves the run's reserve (FD_LIMIT_RESERVED,
 * fd_limit.h) free: a connection given a descriptor in it, or an accept
 * that fails with EMFILE or ENFILE, first closes the oldest connection
 * silent for SYSLOG_FD_WAIT_MS (as long as one queued may wait: a client
 * that has just connected is not closed for being slower than the
 * kernel); with none, accepting pauses and the connections wait in the
 * kernel's queue, served as descriptors come free (tried every
 * SYSLOG_FD_RETRY_MS). After SYSLOG_FD_WAIT_MS with none free, those
 * waiting are refused: taken with a spare descriptor kept for it (or a
 * free one), counted, logged and closed. When stopping, queued connections
 * are served, or refused the same way, before the socket closes.
 *
 * Every refusal and every close is counted and logged at a bounded rate
 * (syslog_tally_note).
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd_limit.h"
#include "syslog_internal.h"

static uv_loop_t *loop_of(const syslog_listener *l)
{
  return pl_input_loop(l->pi);
}

/* "127.0.0.1" into peer and "127.0.0.1:40312" into label; on unix
 * sockets peer is "" and label the listener's address. */
static void name_peer(const syslog_listener *l, const struct sockaddr *sa,
                      char *peer, size_t peerlen, char *label, size_t len)
{
  const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

  peer[0] = '\0';
  snprintf(label, len, "%s", l->address);
  if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6) return;
  syslog_addr_text(sa, peer, peerlen);
  snprintf(label, len, "%s:%u", peer,
           ntohs(sa->sa_family == AF_INET6
                     ? s6->sin6_port
                     : ((const struct sockaddr_in *)sa)->sin_port));
}

static int accept_one(syslog_listener *l, struct sockaddr_storage *sa)
{
  socklen_t len = sizeof *sa;

  memset(sa, 0, sizeof *sa);
  return accept4(l->server_fd, (struct sockaddr *)sa, &len,
                 SOCK_NONBLOCK | SOCK_CLOEXEC);
}

/* The oldest connection silent for min_ms at least (from peer, unless
 * NULL), closed to make room; false when there is none. One whose bytes
 * were waiting unread is no silent one: it is read, and the next oldest
 * looked for. */
static bool evict(syslog_listener *l, const char *peer, uint64_t min_ms,
                  const char *why)
{
  uint64_t now = uv_now(loop_of(l));

  for (;;) {
    syslog_conn *oldest = NULL;
    for (syslog_conn *c = l->conns; c; c = c->next)
      if (syslog_conn_silent(c) && now - c->waiting_since >= min_ms &&
          (!peer || strcmp(c->peer, peer) == 0))
        oldest = c;
    if (!oldest) return false;
    syslog_conn_read_queued(oldest);
    if (!syslog_conn_silent(oldest)) continue;
    char cut[160];
    syslog_tally_note(l, &l->evicted, "closed a silent connection from %s "
                      "(no message for %llu ms) to make room: %s",
                      oldest->label,
                      (unsigned long long)(now - oldest->waiting_since), why);
    snprintf(cut, sizeof cut, "the connection was closed inside this "
             "message to make room: %s", why);
    syslog_conn_drain(oldest, cut);
    return true;
  }
}

/* Connections open from peer. */
static uint64_t connections_from(const syslog_listener *l, const char *peer)
{
  uint64_t n = 0;

  for (const syslog_conn *c = l->conns; c; c = c->next)
    if (!c->ended && strcmp(c->peer, peer) == 0) n++;
  return n;
}

/* Reads what the kernel holds for the connections (from peer, unless
 * NULL) that backpressure does not hold: those whose peer has closed end
 * and give their slots back, so that a burst of short connections is not
 * refused for slots already let go. At most once a millisecond of the
 * loop's clock: it costs a few system calls a connection. */
static void settle(syslog_listener *l, const char *peer)
{
  uint64_t now = uv_now(loop_of(l));

  if (l->settled_at == now) return;
  l->settled_at = now;
  for (syslog_conn *c = l->conns; c; c = c->next)
    if (!c->ended && !c->held && (!peer || strcmp(c->peer, peer) == 0))
      syslog_conn_read_queued(c);
}

/* Whether peer's share of the slots is full, once room was looked for:
 * its oldest silent connection closed, or those its peer closed given
 * back (looking for a silent one reads them, and may find them closed). */
static bool address_full(syslog_listener *l, const char *peer,
                         const char *why)
{
  uint64_t cap = l->max_connections_per_address;

  if (connections_from(l, peer) < cap || evict(l, peer, 0, why)) return false;
  settle(l, peer);
  return connections_from(l, peer) >= cap;
}

/* The same for the table (max_connections). */
static bool table_full(syslog_listener *l, const char *why)
{
  if (l->slots_taken < l->max_connections || evict(l, NULL, 0, why))
    return false;
  settle(l, NULL);
  return l->slots_taken >= l->max_connections;
}

/* A new connection: a slot is found for it, or it is refused. */
static void admit(syslog_listener *l, int fd, const struct sockaddr *sa)
{
  char peer[SYSLOG_ADDR_TEXT], label[160], why[160];
  const char *failed;

  name_peer(l, sa, peer, sizeof peer, label, sizeof label);
  snprintf(why, sizeof why, "max_connections_per_address (%llu) reached by "
           "%s", (unsigned long long)l->max_connections_per_address, peer);
  if (peer[0] && address_full(l, peer, why)) {
    close(fd);
    syslog_tally_note(l, &l->refused_address, "refused a connection from "
                      "%s: %s, none of them silent", label, why);
    return;
  }
  snprintf(why, sizeof why, "max_connections (%llu) reached",
           (unsigned long long)l->max_connections);
  if (table_full(l, why)) {
    close(fd);
    syslog_tally_note(l, &l->refused, "refused a connection from %s: %s, "
                      "none of them silent", label, why);
    return;
  }
  failed = syslog_conn_open(l, fd, peer, label);
  if (failed) {
    close(fd);
    syslog_tally_note(l, &l->refused, "refused a connection from %s: %s",
                      label, failed);
  }
}

/* Every connection the kernel queued is refused: taken with the spare
 * descriptor when none other is free, counted, closed. */
static void refuse_waiting(syslog_listener *l)
{
  struct sockaddr_storage sa;
  char peer[SYSLOG_ADDR_TEXT], label[160];
  int fd;

  if (l->reserve_fd >= 0) close(l->reserve_fd);
  l->reserve_fd = -1;
  while ((fd = accept_one(l, &sa)) >= 0 || errno == EINTR ||
         errno == ECONNABORTED) {
    if (fd < 0) continue;
    close(fd);
    name_peer(l, (struct sockaddr *)&sa, peer, sizeof peer, label,
              sizeof label);
    syslog_tally_note(l, &l->refused_fd, "refused a connection from %s: "
                      "no file descriptor came free within %d ms (limit "
                      "%llu, %zu connections open)", label, SYSLOG_FD_WAIT_MS,
                      (unsigned long long)fd_limit_current(), l->slots_taken);
  }
  l->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* Whether a descriptor below the reserve is free: the kernel gives the
 * lowest free number. */
static bool descriptor_free(const syslog_listener *l)
{
  int probe = fcntl(l->server_fd, F_DUPFD_CLOEXEC, 0);
  bool free_one = probe >= 0 && (uint64_t)probe < l->fd_ceiling;

  if (probe >= 0) close(probe);
  return free_one;
}

static void on_fd_retry(uv_timer_t *t);

/* No descriptor to spare for waiting connections: room is made by closing
 * a connection silent for as long as they may wait (true), or accepting
 * waits for one (false). */
static bool make_room(syslog_listener *l, const char *what)
{
  if (evict(l, NULL, SYSLOG_FD_WAIT_MS, what)) return true;
  if (l->stopping) {
    refuse_waiting(l);
    return false;
  }
  if (!l->fd_short_since) {
    l->fd_short_since = uv_now(loop_of(l));
    syslog_tally_note(l, &l->fd_waits, "%s (limit %llu, %zu connections "
                      "open, none silent): new connections wait in the "
                      "kernel's queue for one, at most %d ms", what,
                      (unsigned long long)fd_limit_current(), l->slots_taken,
                      SYSLOG_FD_WAIT_MS);
  }
  uv_poll_stop(&l->server);
  uv_timer_start(&l->fd_retry, on_fd_retry, SYSLOG_FD_RETRY_MS, 0);
  return false;
}

/* Accepts what the kernel queued, a batch at a time. */
static void accept_waiting(syslog_listener *l)
{
  struct sockaddr_storage sa;

  for (unsigned i = 0; i < SYSLOG_ACCEPT_BATCH && l->server_fd >= 0; i++) {
    int fd = accept_one(l, &sa);
    if (fd >= 0) {
      /* One given a descriptor of the reserve is served all the same. */
      bool room = (uint64_t)fd < l->fd_ceiling ||
                  make_room(l, "file descriptors are down to the run's "
                               "reserve");
      if (room) l->fd_short_since = 0;
      admit(l, fd, (struct sockaddr *)&sa);
      if (!room) return;
    } else if (errno == EINTR || errno == ECONNABORTED) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return;
    } else if (fd_limit_exhausted(errno)) {
      if (!make_room(l, "out of file descriptors")) return;
    } else { /* ENOBUFS, ENOMEM...: tried again a little later */
      syslog_tally_note(l, &l->accept_failed, "accepting on %s: %s",
                        l->address, strerror(errno));
      uv_poll_stop(&l->server);
      uv_timer_start(&l->fd_retry, on_fd_retry, SYSLOG_FD_RETRY_MS, 0);
      return;
    }
  }
}

static void on_acceptable(uv_poll_t *p, int status, int events)
{
  (void)status;
  (void)events;
  accept_waiting(p->data);
}

/* Accepting waits: it goes on once a descriptor is free; after
 * SYSLOG_FD_WAIT_MS with none, the connections waiting are refused. */
static void on_fd_retry(uv_timer_t *t)
{
  syslog_listener *l = t->data;
  bool free_one;

  if (l->server_fd < 0 || l->stopping) return;
  free_one = descriptor_free(l) ||
             evict(l, NULL, SYSLOG_FD_WAIT_MS, "out of file descriptors");
  if (!free_one &&
      uv_now(loop_of(l)) - l->fd_short_since < SYSLOG_FD_WAIT_MS) {
    uv_timer_start(t, on_fd_retry, SYSLOG_FD_RETRY_MS, 0);
    return;
  }
  if (!free_one) {
    refuse_waiting(l);
    l->fd_short_since = 0;
  }
  uv_poll_start(&l->server, UV_READABLE, on_acceptable);
}

/* Binds and listens at once, so an address in use fails the build, with
 * the options uv_tcp_bind would set (SO_REUSEADDR; IPv6 sockets take IPv4
 * too). */
static int bind_and_listen(syslog_listener *l, const config_syslog *cfg)
{
  struct sockaddr_storage sa;
  socklen_t len = syslog_sockaddr(cfg, &sa);
  int on = 1, off = 0;

  l->server_fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
                        SOCK_CLOEXEC, 0);
  if (l->server_fd < 0) return -errno;
  if (sa.ss_family != AF_UNIX &&
      setsockopt(l->server_fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0)
    return -errno;
  if (sa.ss_family == AF_INET6 &&
      setsockopt(l->server_fd, IPPROTO_IPV6, IPV6_V6ONLY, &off,
                 sizeof off) != 0)
    return -errno;
  if (bind(l->server_fd, (struct sockaddr *)&sa, len) != 0) return -errno;
  l->bound_path = sa.ss_family == AF_UNIX;
  if (l->bound_path && chmod(l->path, cfg->socket_mode) != 0) return -errno;
  if (listen(l->server_fd, 1024) != 0) return -errno;
  len = sizeof sa;
  if (sa.ss_family != AF_UNIX &&
      getsockname(l->server_fd, (struct sockaddr *)&sa, &len) == 0)
    syslog_bound_address(l, (struct sockaddr *)&sa);
  return 0;
}

int syslog_accept_listen(syslog_listener *l, const config_syslog *cfg,
                         char *why, size_t len)
{
  /* 1: systemd passed the socket, bound and listening (its file is
   * systemd's, with SocketMode=). */
  int rc = syslog_adopt(l, cfg, SOCK_STREAM, &l->server_fd);

  if (rc == 0 && l->transport == SYSLOG_UNIX_STREAM &&
      syslog_clear_socket_path(l->path, SOCK_STREAM, why, len) != 0)
    return -1;
  l->fd_ceiling = fd_limit_ceiling();
  uv_timer_init(loop_of(l), &l->fd_retry);
  l->fd_retry.data = l;
  l->fd_retry_open = true;
  l->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (rc == 0) rc = bind_and_listen(l, cfg);
  if (rc >= 0) rc = uv_poll_init_socket(loop_of(l), &l->server, l->server_fd);
  if (rc != 0) {
    snprintf(why, len, "cannot listen on %s: %s", cfg->address,
             uv_strerror(uv_translate_sys_error(-rc)));
    return -1;
  }
  l->server.data = l;
  l->server_open = true;
  return 0;
}

void syslog_accept_start(syslog_listener *l)
{
  uv_poll_start(&l->server, UV_READABLE, on_acceptable);
}

static void on_server_closed(uv_handle_t *h)
{
  syslog_listener *l = h->data;

  l->server_open = false;
  close(l->server_fd);
  l->server_fd = -1;
  if (l->bound_path) unlink(l->path);
  syslog_maybe_done(l);
}

static void on_fd_retry_closed(uv_handle_t *h)
{
  syslog_listener *l = h->data;

  l->fd_retry_open = false;
}

void syslog_accept_stop(syslog_listener *l)
{
  if (l->server_open && !uv_is_closing((uv_handle_t *)&l->server))
    for (unsigned i = 0; i < 1024 / SYSLOG_ACCEPT_BATCH; i++)
      accept_waiting(l); /* the listen backlog's worth at most */
  syslog_accept_close(l);
}

void syslog_accept_close(syslog_listener *l)
{
  if (l->server_open && !uv_is_closing((uv_handle_t *)&l->server))
    uv_close((uv_handle_t *)&l->server, on_server_closed);
  else if (!l->server_open && l->server_fd >= 0) {
    close(l->server_fd); /* the build failed before the handle was made */
    l->server_fd = -1;
    if (l->bound_path) unlink(l->path);
  }
  if (l->fd_retry_open && !uv_is_closing((uv_handle_t *)&l->fd_retry))
    uv_close((uv_handle_t *)&l->fd_retry, on_fd_retry_closed);
  if (l->reserve_fd >= 0) close(l->reserve_fd);
  l->reserve_fd = -1;
}
