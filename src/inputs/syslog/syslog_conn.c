/*
 * syslog_conn.c - one stream connection of a syslog listener
 * (syslog_internal.h): TCP, TLS or a Unix stream socket, read on the loop,
 * decrypted (tls.h) and framed (frame.h) into its source's records.
 *
 * A connection ends when the peer closes, the session fails, a deadline
 * passes, it is closed to make room (syslog_accept.c), or the listener
 * stops (after reading what the kernel holds for it). A message the peer
 * ended by closing is whole (frame_end); one begun when this side ended
 * the connection is not, and goes to the dead letters with why
 * (frame_cut): the rest of it was coming. Its socket is closed at once, so
 * its descriptor is free for the next connection. A reload may carry it to
 * the next pipeline instead (syslog_carry.c): its begun message goes with
 * it, and its socket stays open in the descriptor carried. Its timer is
 * closed once its source's jobs came back, and it frees itself and its
 * source when both handles are.
 *
 * Deadlines, each counted and logged at a bounded rate: a TLS handshake
 * not done within tls_handshake_timeout_ms, no whole message within
 * first_message_timeout_ms of opening, and, once it has sent one, silence
 * for idle_timeout_ms. A connection held by backpressure is not silent:
 * its deadlines start again when reading resumes.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "log.h"
#include "syslog_internal.h"

static uv_loop_t *loop_of(const syslog_conn *c)
{
  return pl_input_loop(c->l->pi);
}

static void arm_deadline(syslog_conn *c);

/* A whole message or malformed frame came: the connection is a sender,
 * ruled by idle_timeout_ms from now on. */
static void spoke(syslog_conn *c)
{
  if (c->spoke) return;
  c->spoke = true;
  arm_deadline(c);
}

static void on_message(void *ud, const char *bytes, size_t len, unsigned piece)
{
  syslog_conn *c = ud;
  input *in = pl_source_reader(c->src);

  if (piece <= 1) c->seq++; /* the pieces of a message share its number */
  spoke(c);
  in->handler.record(in->handler.ud, in, bytes, len, c->seq, piece);
}

static void on_malformed(void *ud, const char *bytes, size_t len,
                         const char *reason)
{
  syslog_conn *c = ud;

  spoke(c);
  syslog_malformed(c->l, c->peer[0] ? c->peer : NULL, ++c->seq, bytes, len,
                   reason);
}

static void on_empty(void *ud)
{
  syslog_conn *c = ud;

  c->l->empty++;
}

static void on_plain(void *ud, const char *bytes, size_t len)
{
  syslog_conn *c = ud;
  frame_handler h = {on_message, on_malformed, c, on_empty};

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
  if (b.len == 0 || c->socket_closed) return;
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
  frame_handler h = {on_message, on_malformed, c, on_empty};
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
  if (rc != 0) /* bounded: anyone can fail handshakes as fast as they like */
    syslog_tally_note(c->l, &c->l->tls_failed, "connection from %s: %s",
                      c->label, why);
  return rc == 0 && !tls_session_closed(c->tls);
}

static void on_closed(uv_handle_t *h)
{
  syslog_conn *c = h->data;
  syslog_listener *l = c->l;

  if (--c->open_handles > 0 || !c->closing) return;
  for (syslog_conn **p = &l->conns; *p; p = &(*p)->next)
    if (*p == c) {
      *p = c->next;
      break;
    }
  l->nconns--;
  pl_source_free(c->src);
  frame_free(&c->frame);
  tls_session_free(c->tls);
  buf_free(&c->tls_out);
  free(c);
  syslog_maybe_done(l);
}

/* The socket's descriptor is given back now; the connection lives on
 * until its source finished. */
static void close_socket(syslog_conn *c)
{
  if (c->socket_closed) return;
  c->socket_closed = true;
  uv_close(&c->h.handle, on_closed);
}

/* No more reading: the last message ends (cut NULL: the peer ended the
 * stream; else why this side did, inside it), the source finishes. */
static void end(syslog_conn *c, const char *cut)
{
  frame_handler h = {on_message, on_malformed, c, on_empty};
  input *in = pl_source_reader(c->src);

  if (c->ended) return;
  c->ended = true;
  c->l->slots_taken--;
  uv_read_stop(&c->h.stream);
  uv_timer_stop(&c->deadline);
  if (cut) frame_cut(&c->frame, &h, cut);
  else frame_end(&c->frame, &h);
  close_socket(c);
  pl_source_chunk_done(c->src);
  in->handler.finished(in->handler.ud, in, NULL);
}

static void end_logged(syslog_conn *c, const char *why)
{
  log_warning("input '%s': connection from %s: %s", pl_input_name(c->l->pi), c->label,
          why);
  end(c, "the connection failed inside this message: the rest of it never "
         "came");
}

/* After take refused bytes: the peer closed the TLS session (its last
 * message is whole), or the session failed inside it. */
static void end_taken(syslog_conn *c)
{
  end(c, tls_session_closed(c->tls) ? NULL
                                    : "the TLS session failed inside this "
                                      "message: the rest of it never came");
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
    if (take(c, b->base, (size_t)nread)) pl_source_chunk_done(c->src);
    else end_taken(c);
  } else if (nread == UV_EOF || nread == UV_ECONNRESET) {
    end(c, NULL); /* a reset loses nothing read: it was framed already */
  } else if (nread < 0) {
    end_logged(c, uv_strerror((int)nread));
  }
}

/* When the next deadline passes, ms from now; 0: none is set. */
static uint64_t next_deadline(const syslog_conn *c, uint64_t now)
{
  const syslog_listener *l = c->l;
  uint64_t at = UINT64_MAX;

  if (c->tls && !tls_session_ready(c->tls) && l->tls_handshake_timeout_ms)
    at = c->waiting_since + l->tls_handshake_timeout_ms;
  if (!c->spoke && l->first_message_timeout_ms &&
      c->waiting_since + l->first_message_timeout_ms < at)
    at = c->waiting_since + l->first_message_timeout_ms;
  if (c->spoke && l->idle_timeout_ms) at = c->last_read + l->idle_timeout_ms;
  if (at == UINT64_MAX) return 0;
  return at > now ? at - now : 1;
}

static void on_deadline(uv_timer_t *t);

static void arm_deadline(syslog_conn *c)
{
  uint64_t ms = next_deadline(c, uv_now(loop_of(c)));

  if (ms) uv_timer_start(&c->deadline, on_deadline, ms, 0);
  else uv_timer_stop(&c->deadline);
}

static void on_deadline(uv_timer_t *t)
{
  syslog_conn *c = t->data;
  syslog_listener *l = c->l;
  uint64_t now = uv_now(loop_of(c)), waited = now - c->waiting_since;
  char why[160];

  if (c->ended || c->held) return; /* resuming arms it again */
  if (c->tls && !tls_session_ready(c->tls) && l->tls_handshake_timeout_ms &&
      waited >= l->tls_handshake_timeout_ms) {
    syslog_tally_note(l, &l->handshake_late, "closed a connection from %s: "
                      "no TLS handshake within tls_handshake_timeout_ms "
                      "(%llu)", c->label,
                      (unsigned long long)l->tls_handshake_timeout_ms);
    snprintf(why, sizeof why, "no TLS handshake within "
             "tls_handshake_timeout_ms (%llu)",
             (unsigned long long)l->tls_handshake_timeout_ms);
  } else if (!c->spoke && l->first_message_timeout_ms &&
             waited >= l->first_message_timeout_ms) {
    syslog_tally_note(l, &l->message_late, "closed a connection from %s: "
                      "no whole message within first_message_timeout_ms "
                      "(%llu)", c->label,
                      (unsigned long long)l->first_message_timeout_ms);
    snprintf(why, sizeof why, "the connection was closed inside this "
             "message: it was not whole within first_message_timeout_ms "
             "(%llu)", (unsigned long long)l->first_message_timeout_ms);
  } else if (c->spoke && l->idle_timeout_ms &&
             now - c->last_read >= l->idle_timeout_ms) {
    syslog_tally_note(l, &l->idle_closed, "closed a connection from %s: "
                      "silent for %llu ms (idle_timeout_ms)", c->label,
                      (unsigned long long)(now - c->last_read));
    snprintf(why, sizeof why, "the connection was closed inside this "
             "message: silent for %llu ms (idle_timeout_ms)",
             (unsigned long long)(now - c->last_read));
  } else {
    arm_deadline(c);
    return;
  }
  end(c, why);
}

/* Its source finished: the connection is let go. */
void syslog_conn_close(syslog_conn *c)
{
  if (c->closing) return;
  c->closing = true;
  close_socket(c);
  uv_close((uv_handle_t *)&c->deadline, on_closed);
}

/* A connection whose socket libuv refused: its handle is closed, and it
 * goes, never having been one of the listener's. */
static void on_refused_closed(uv_handle_t *h)
{
  syslog_conn *c = h->data;

  pl_source_free(c->src);
  tls_session_free(c->tls);
  free(c);
}

/* Serves fd: a new connection (e NULL), or one a reload carried, which
 * goes on with its frame reader, TLS session and message count. */
static const char *serve(syslog_listener *l, int fd, const char *peer,
                         const char *label, syslog_carried *e)
{
  uv_loop_t *loop = pl_input_loop(l->pi);
  syslog_conn *c = calloc(1, sizeof *c);
  int rc;

  if (!c || (!e && l->tls && !(c->tls = tls_session_new(l->tls))) ||
      !(c->src = pl_source_new(l->pi))) {
    if (c) tls_session_free(c->tls);
    free(c);
    return "out of memory";
  }
  c->l = l;
  snprintf(c->peer, sizeof c->peer, "%s", peer);
  snprintf(c->label, sizeof c->label, "%s", label);
  if (l->transport == SYSLOG_UNIX_STREAM) {
    uv_pipe_init(loop, &c->h.pipe, 0);
    rc = uv_pipe_open(&c->h.pipe, fd);
  } else {
    uv_tcp_init(loop, &c->h.tcp);
    rc = uv_tcp_open(&c->h.tcp, fd);
  }
  c->h.handle.data = c;
  if (rc != 0) {
    uv_close(&c->h.handle, on_refused_closed);
    return uv_strerror(rc);
  }
  uv_timer_init(loop, &c->deadline);
  c->deadline.data = c;
  c->open_handles = 2;
  pl_source_set_data(c->src, c);
  pl_source_set_sender(c->src, c->peer[0] ? c->peer : NULL);
  if (e) {
    c->frame = e->frame;
    c->tls = e->tls;
    c->seq = e->seq;
    c->spoke = e->spoke;
    e->tls = NULL;
    frame_init(&e->frame, FRAMING_AUTO, 1, false);
  } else {
    frame_init(&c->frame, l->framing, l->max_line, l->keep_cr);
  }
  c->next = l->conns;
  l->conns = c;
  l->nconns++;
  l->slots_taken++;
  l->connections++;
  c->waiting_since = c->last_read = uv_now(loop);
  arm_deadline(c);
  uv_read_start(&c->h.stream, on_alloc, on_read);
  if (pl_input_held(l->pi)) syslog_conn_hold(c, true);
  return NULL;
}

const char *syslog_conn_open(syslog_listener *l, int fd, const char *peer,
                             const char *label)
{
  return serve(l, fd, peer, label, NULL);
}

const char *syslog_conn_resume(syslog_listener *l, syslog_carried *e)
{
  return serve(l, e->fd, e->peer, e->label, e);
}

syslog_carried *syslog_conn_carry(syslog_conn *c)
{
  syslog_listener *l = c->l;
  syslog_carried *e;
  uv_os_fd_t fd;

  /* A TLS record half sent would be cut: such a connection ends here. */
  if (c->ended || c->tls_out.len > 0 ||
      uv_stream_get_write_queue_size(&c->h.stream) > 0 ||
      uv_fileno(&c->h.handle, &fd) != 0 || !(e = calloc(1, sizeof *e)))
    return NULL;
  /* The copy keeps the socket open when the handle closes its own. */
  if ((e->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0) {
    free(e);
    return NULL;
  }
  e->frame = c->frame;
  e->tls = c->tls;
  e->seq = c->seq;
  e->spoke = c->spoke;
  snprintf(e->peer, sizeof e->peer, "%s", c->peer);
  snprintf(e->label, sizeof e->label, "%s", c->label);
  /* Its begun message goes on with it: ending c hands on nothing. */
  c->tls = NULL;
  frame_init(&c->frame, l->framing, l->max_line, l->keep_cr);
  end(c, NULL);
  return e;
}

bool syslog_conn_silent(const syslog_conn *c)
{
  return !c->spoke && !c->ended;
}

void syslog_conn_hold(syslog_conn *c, bool hold)
{
  if (c->ended || hold == c->held) return;
  c->held = hold;
  if (hold) {
    uv_read_stop(&c->h.stream);
    uv_timer_stop(&c->deadline);
    return;
  }
  /* Held is not silent: its deadlines start again. */
  c->waiting_since = c->last_read = uv_now(loop_of(c));
  arm_deadline(c);
  uv_read_start(&c->h.stream, on_alloc, on_read);
}

bool syslog_conn_quiet(const syslog_conn *c, uint64_t now, uint64_t ms)
{
  return !c->held && now - c->last_read >= ms;
}

void syslog_conn_read_queued(syslog_conn *c)
{
  uv_os_fd_t fd;
  int queued = 0;
  char next;

  if (c->ended || uv_fileno(&c->h.handle, &fd) != 0) return;
  /* Only what is queued now: a sender that goes on cannot hold the stop. */
  if (ioctl(fd, FIONREAD, &queued) == 0)
    while (queued > 0) {
      size_t want = (size_t)queued < SYSLOG_READ_SIZE ? (size_t)queued
                                                      : SYSLOG_READ_SIZE;
      ssize_t n = recv(fd, c->l->readbuf, want, MSG_DONTWAIT);
      if (n <= 0) break;
      if (!take(c, c->l->readbuf, (size_t)n)) {
        end_taken(c);
        return;
      }
      queued -= (int)n;
    }
  if (recv(fd, &next, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
    end(c, NULL); /* closed */
}

void syslog_conn_drain(syslog_conn *c, const char *why)
{
  syslog_conn_read_queued(c);
  end(c, why);
}
