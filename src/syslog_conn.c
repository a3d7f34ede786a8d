/*
 * syslog_conn.c - one stream connection of a syslog listener
 * (syslog_internal.h): TCP, TLS or a Unix stream socket, read on the loop,
 * decrypted (tls.h) and framed (frame.h) into its source's records.
 *
 * A connection ends when the peer closes, the session fails, it idles
 * past idle_timeout_ms, or the listener stops (after reading what the
 * kernel holds for it); its last message is then ended as frame_end says.
 * Its handles are closed once its source's jobs came back, and it frees
 * itself and its source when they are.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "log.h"
#include "syslog_internal.h"

static uv_loop_t *loop_of(const syslog_conn *c)
{
  return c->l->pi->pl->loop;
}

static void on_message(void *ud, const char *bytes, size_t len, unsigned piece)
{
  syslog_conn *c = ud;
  input *in = &c->src->in;

  if (piece <= 1) c->seq++; /* the pieces of a message share its number */
  in->handler.record(in->handler.ud, in, bytes, len, c->seq, piece);
}

static void on_malformed(void *ud, const char *bytes, size_t len,
                         const char *reason)
{
  syslog_conn *c = ud;

  syslog_malformed(c->l, c->src->from, ++c->seq, bytes, len, reason);
}

static void on_plain(void *ud, const char *bytes, size_t len)
{
  syslog_conn *c = ud;
  frame_handler h = {on_message, on_malformed, c};

  frame_feed(&c->frame, bytes, len, &h);
}

typedef struct {
  uv_write_t req;
  char data[];
} tls_write;

static void on_written(uv_write_t *req, int status)
{
  (void)status; /* a failed write shows as the next read's error */
  free(req);
}

/* What TLS has for the peer: written now as far as the socket takes it,
 * the rest queued (a handshake's reply, an alert before closing). */
static void send_tls(syslog_conn *c)
{
  uv_buf_t b = uv_buf_init(c->tls_out.data, (unsigned)c->tls_out.len);
  tls_write *w;
  int n;

  c->tls_out.len = 0;
  if (b.len == 0 || c->closing) return;
  n = uv_try_write(&c->h.stream, &b, 1);
  if (n > 0) {
    b.base += n;
    b.len -= (size_t)n;
  }
  if (b.len > 0 && (n >= 0 || n == UV_EAGAIN) &&
      (w = malloc(sizeof *w + b.len))) {
    memcpy(w->data, b.base, b.len);
    b.base = w->data;
    if (uv_write(&w->req, &c->h.stream, &b, 1, on_written) != 0) free(w);
  }
}

/* Bytes from the peer; false when the connection cannot go on. */
static bool take(syslog_conn *c, const char *bytes, size_t len)
{
  frame_handler h = {on_message, on_malformed, c};
  char why[512];
  int rc;

  c->last_read = uv_now(loop_of(c));
  if (!c->tls) {
    frame_feed(&c->frame, bytes, len, &h);
    return true;
  }
  rc = tls_session_feed(c->tls, bytes, len, on_plain, c, &c->tls_out, why,
                        sizeof why);
  send_tls(c);
  if (rc != 0)
    log_msg("input '%s': connection from %s: %s", c->l->pi->name, c->label,
            why);
  return rc == 0 && !tls_session_closed(c->tls);
}

/* No more reading: the last message ends, the source finishes. */
static void end(syslog_conn *c, const char *why)
{
  frame_handler h = {on_message, on_malformed, c};
  input *in = &c->src->in;

  if (c->ended) return;
  c->ended = true;
  if (why) log_msg("input '%s': connection from %s: %s", c->l->pi->name,
                   c->label, why);
  uv_read_stop(&c->h.stream);
  if (c->l->idle_timeout_ms) uv_timer_stop(&c->idle);
  frame_end(&c->frame, &h);
  pipeline_source_chunk_done(c->src);
  in->handler.finished(in->handler.ud, in, NULL);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
  syslog_conn *c = h->data;

  (void)suggested;
  *b = uv_buf_init(c->l->readbuf, SYSLOG_READ_SIZE);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
  syslog_conn *c = s->data;

  if (nread > 0) {
    if (take(c, b->base, (size_t)nread)) pipeline_source_chunk_done(c->src);
    else end(c, NULL);
  } else if (nread == UV_EOF || nread == UV_ECONNRESET) {
    end(c, NULL); /* a reset loses nothing read: it was framed already */
  } else if (nread < 0) {
    end(c, uv_strerror((int)nread));
  }
}

static void on_idle(uv_timer_t *t)
{
  syslog_conn *c = t->data;
  uint64_t now = uv_now(loop_of(c)), idle = c->l->idle_timeout_ms;
  char why[96];

  if (c->ended) return;
  if (c->held || now - c->last_read < idle) {
    uv_timer_start(t, on_idle, c->held ? idle : idle - (now - c->last_read), 0);
    return;
  }
  c->l->idle_closed++;
  snprintf(why, sizeof why, "closed: silent for %llu ms (idle_timeout_ms)",
           (unsigned long long)(now - c->last_read));
  end(c, why);
}

static void on_closed(uv_handle_t *h)
{
  syslog_conn *c = h->data;
  syslog_listener *l = c->l;

  if (--c->open_handles > 0) return;
  if (c->src) { /* it was taken: unlink it */
    for (syslog_conn **p = &l->conns; *p; p = &(*p)->next)
      if (*p == c) {
        *p = c->next;
        break;
      }
    l->nconns--;
    pipeline_source_free(c->src);
  }
  frame_free(&c->frame);
  tls_session_free(c->tls);
  buf_free(&c->tls_out);
  free(c);
  syslog_maybe_done(l);
}

void syslog_conn_close(syslog_conn *c)
{
  if (c->closing) return;
  c->closing = true;
  uv_close(&c->h.handle, on_closed);
  if (c->src && c->l->idle_timeout_ms) uv_close((uv_handle_t *)&c->idle,
                                                on_closed);
}

/* "127.0.0.1:40312" for log lines; the sender field takes the address. */
static void name_peer(syslog_conn *c)
{
  struct sockaddr_storage sa;
  int len = sizeof sa;

  snprintf(c->label, sizeof c->label, "%s", c->l->address);
  if (c->l->transport == SYSLOG_UNIX_STREAM ||
      uv_tcp_getpeername(&c->h.tcp, (struct sockaddr *)&sa, &len) != 0)
    return;
  syslog_addr_text((struct sockaddr *)&sa, c->peer, sizeof c->peer);
  snprintf(c->label, sizeof c->label, "%s:%u", c->peer,
           ntohs(sa.ss_family == AF_INET6
                     ? ((struct sockaddr_in6 *)&sa)->sin6_port
                     : ((struct sockaddr_in *)&sa)->sin_port));
}

/* Past max_connections (or out of memory): accepted and closed at once,
 * counted, and logged at most once a second. */
static void refuse(syslog_conn *c, const char *why)
{
  syslog_listener *l = c->l;
  uint64_t now = uv_now(loop_of(c));

  l->refused++;
  if (l->refused == 1 || now - l->refused_logged_at >= 1000) {
    l->refused_logged_at = now;
    log_msg("input '%s': refused a connection from %s: %s (%llu refused "
            "so far)", l->pi->name, c->label, why,
            (unsigned long long)l->refused);
  }
  syslog_conn_close(c);
}

void syslog_conn_accept(syslog_listener *l)
{
  uv_loop_t *loop = l->pi->pl->loop;
  syslog_conn *c = calloc(1, sizeof *c);
  char why[64];

  if (!c) {
    log_msg("input '%s': out of memory for a connection", l->pi->name);
    return;
  }
  c->l = l;
  c->open_handles = 1;
  if (l->transport == SYSLOG_UNIX_STREAM) uv_pipe_init(loop, &c->h.pipe, 0);
  else uv_tcp_init(loop, &c->h.tcp);
  c->h.handle.data = c;
  if (uv_accept(&l->server.stream, &c->h.stream) != 0) {
    syslog_conn_close(c);
    return;
  }
  name_peer(c);
  if (l->nconns >= l->max_connections) {
    snprintf(why, sizeof why, "max_connections (%llu) reached",
             (unsigned long long)l->max_connections);
    refuse(c, why);
    return;
  }
  if ((l->tls && !(c->tls = tls_session_new(l->tls))) ||
      !(c->src = pipeline_source_new(l->pi))) {
    refuse(c, "out of memory");
    return;
  }
  c->src->conn = c;
  c->src->from = c->peer[0] ? c->peer : NULL;
  frame_init(&c->frame, l->framing, l->max_line, l->keep_cr);
  c->next = l->conns;
  l->conns = c;
  l->nconns++;
  l->connections++;
  c->last_read = uv_now(loop);
  if (l->idle_timeout_ms) {
    uv_timer_init(loop, &c->idle);
    c->idle.data = c;
    c->open_handles++;
    uv_timer_start(&c->idle, on_idle, l->idle_timeout_ms, 0);
  }
  uv_read_start(&c->h.stream, on_alloc, on_read);
  if (l->pi->pl->paused) syslog_conn_hold(c, true);
}

void syslog_conn_hold(syslog_conn *c, bool hold)
{
  if (c->ended || hold == c->held) return;
  c->held = hold;
  if (hold) {
    uv_read_stop(&c->h.stream);
    return;
  }
  c->last_read = uv_now(loop_of(c)); /* held is not silent */
  uv_read_start(&c->h.stream, on_alloc, on_read);
}

bool syslog_conn_quiet(const syslog_conn *c, uint64_t now, uint64_t ms)
{
  return !c->held && now - c->last_read >= ms;
}

void syslog_conn_drain(syslog_conn *c)
{
  uv_os_fd_t fd;
  int queued = 0;

  if (c->ended) return;
  /* Only what is queued now: a sender that goes on cannot hold the stop. */
  if (uv_fileno(&c->h.handle, &fd) == 0 && ioctl(fd, FIONREAD, &queued) == 0)
    while (queued > 0) {
      size_t want = (size_t)queued < SYSLOG_READ_SIZE ? (size_t)queued
                                                      : SYSLOG_READ_SIZE;
      ssize_t n = recv(fd, c->l->readbuf, want, MSG_DONTWAIT);
      if (n <= 0 || !take(c, c->l->readbuf, (size_t)n)) break;
      queued -= (int)n;
    }
  end(c, NULL);
}
