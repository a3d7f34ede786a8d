/*
 * syslog_conn_out.c - the syslog_output's connection (syslog_internal.h):
 * resolving the address, connecting within connect_timeout_ms, the TLS
 * handshake, writing what the output hands on, and reading, which is how
 * a receiver that closed or died is noticed (a syslog receiver sends
 * nothing else) before more records are written into a dead socket. A
 * receiver behind a blackholed path neither closes nor reads: a write
 * the kernel takes nothing of for send_timeout_ms breaks the connection.
 *
 * Writes go out with uv_try_write as far as the kernel takes them; the
 * rest goes to one uv_write, and nothing is added to the connection's
 * bytes until it completed (its buffer must stay where it is). So the
 * kernel's progress is known to the byte, and so_written settles exactly
 * the records whose bytes it took.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "syslog_internal.h"

#define READ_BYTES 16384

static char read_area[READ_BYTES]; /* the loop's thread only; never kept */

static void on_closed(uv_handle_t *h)
{
  so_conn *c = h->data;

  tls_session_free(c->tls);
  buf_free(&c->wire);
  buf_free(&c->tls_later);
  free(c);
}

void so_conn_drop(syslog_output *so, const char *why)
{
  so_conn *c = so->conn;

  if (!c) return;
  /* libuv wrote part of a pending write before it stalled: the records
   * whose bytes the kernel took are delivered, not to be sent again. */
  if (c->writing && c->ready)
    so_written(so, c->wire_base + c->wire_head + c->writing_len -
                       uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp));
  so->conn = NULL;
  uv_timer_stop(&so->deadline);
  /* A pending connect or write is cancelled: its callback finds the
   * connection is no longer the output's. */
  uv_close((uv_handle_t *)&c->tcp, on_closed);
  if (why) so_down(so, why);
}

/* An attempt that never got a connection up failed. */
static void attempt_failed(syslog_output *so, const char *why)
{
  so->connect_failures++;
  if (so->conn) so_conn_drop(so, why);
  else so_down(so, why);
}

static void on_backoff(uv_timer_t *t)
{
  so_conn_start(t->data);
}

void so_conn_backoff(syslog_output *so)
{
  if (so->stopped || !so->handles_open) return;
  uv_timer_start(&so->retry, on_backoff, so->backoff_ms, 0);
  so->backoff_ms = so->backoff_ms * 2 > so->backoff_max_ms
                       ? so->backoff_max_ms : so->backoff_ms * 2;
}

static void connect_to(syslog_output *so, const struct sockaddr *sa);

/* A name's next address, after this one refused or did not answer (the
 * name's IPv6 address where the receiver listens on IPv4 only): true when
 * there was one to try. */
static bool try_next_address(syslog_output *so)
{
  struct addrinfo *ai = so->next_addr;

  if (!ai) return false;
  so->next_addr = ai->ai_next;
  so_conn_drop(so, NULL);
  connect_to(so, ai->ai_addr);
  return true;
}

static void on_deadline(uv_timer_t *t)
{
  syslog_output *so = t->data;

  if (so->conn && !so->conn->ready && !try_next_address(so))
    attempt_failed(so, "no connection within connect_timeout_ms");
}

static void alloc_read(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
  (void)h;
  (void)hint;
  *b = uv_buf_init(read_area, sizeof read_area);
}

static void discard(void *ud, const char *bytes, size_t len)
{
  (void)ud;
  (void)bytes;
  (void)len;
}

static void ready(syslog_output *so, so_conn *c)
{
  c->ready = true;
  uv_timer_stop(&so->deadline);
  so_up(so);
}

/* TLS bytes the server sent: the handshake's, a session ticket, an
 * alert, close_notify. What OpenSSL answers goes out behind what the
 * connection holds. */
static void feed_tls(syslog_output *so, so_conn *c, const char *bytes,
                     size_t len)
{
  char err[512];
  buf *out = c->writing ? &c->tls_later : &c->wire;

  if (tls_session_feed(c->tls, bytes, len, discard, NULL, out, err,
                       sizeof err) != 0) {
    if (c->ready) so_conn_drop(so, err);
    else attempt_failed(so, err);
    return;
  }
  if (tls_session_closed(c->tls)) {
    so_conn_drop(so, "the receiver closed the TLS session");
    return;
  }
  so_conn_flush(so);
  if (so->conn == c && !c->ready && tls_session_ready(c->tls)) ready(so, c);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
  so_conn *c = s->data;
  syslog_output *so = c->so;
  char why[256];

  if (so->conn != c || n == 0) return;
  if (n > 0) {
    /* Plain TCP: a syslog receiver says nothing; ignored. */
    if (c->tls) feed_tls(so, c, b->base, (size_t)n);
    return;
  }
  snprintf(why, sizeof why, "%s", n == UV_EOF ? "the receiver closed the "
           "connection" : uv_strerror((int)n));
  if (c->ready) so_conn_drop(so, why);
  else attempt_failed(so, why);
}

static void on_connect(uv_connect_t *req, int status)
{
  so_conn *c = req->data;
  syslog_output *so = c->so;
  char err[512];
  int rc;

  if (so->conn != c) return;
  if (status < 0) {
    if (!try_next_address(so)) attempt_failed(so, uv_strerror(status));
    return;
  }
  uv_tcp_nodelay(&c->tcp, 1);
  if ((rc = uv_read_start((uv_stream_t *)&c->tcp, alloc_read, on_read)) != 0) {
    attempt_failed(so, uv_strerror(rc));
    return;
  }
  if (!so->tls) {
    ready(so, c);
    return;
  }
  if (!(c->tls = tls_client_session_new(so->tls, so->server_name))) {
    attempt_failed(so, "cannot make a TLS session");
    return;
  }
  if (tls_session_start(c->tls, &c->wire, err, sizeof err) != 0) {
    attempt_failed(so, err);
    return;
  }
  so_conn_flush(so);
}

static void connect_to(syslog_output *so, const struct sockaddr *sa)
{
  so_conn *c = calloc(1, sizeof *c);
  int rc;

  if (!c) {
    attempt_failed(so, "out of memory");
    return;
  }
  c->so = so;
  if ((rc = uv_tcp_init(so->loop, &c->tcp)) != 0) {
    free(c);
    attempt_failed(so, uv_strerror(rc));
    return;
  }
  c->tcp.data = c->connect.data = c->write.data = c;
  so->conn = c;
  so_update_ref(so);
  if ((rc = uv_tcp_connect(&c->connect, &c->tcp, sa, on_connect)) != 0) {
    attempt_failed(so, uv_strerror(rc));
    return;
  }
  uv_timer_start(&so->deadline, on_deadline, so->connect_timeout_ms, 0);
}

/* Where to: a UDP output keeps it, a stream output connects. */
static void resolved(syslog_output *so, const struct sockaddr *sa,
                     socklen_t len)
{
  if (so->protocol != SO_UDP) {
    connect_to(so, sa);
    return;
  }
  memcpy(&so->peer, sa, len);
  so->udp_ready = true;
  so_up(so);
}

static void on_resolved(uv_getaddrinfo_t *req, int status,
                        struct addrinfo *res)
{
  syslog_output *so = req->data;
  char why[512];

  so->resolving = false;
  if (so->stopped) {
    uv_freeaddrinfo(res);
    return;
  }
  if (status < 0 || !res) {
    uv_freeaddrinfo(res);
    snprintf(why, sizeof why, "cannot resolve %s: %s", so->host,
             uv_strerror(status));
    attempt_failed(so, why);
    return;
  }
  /* Kept while the attempt tries them in turn (try_next_address). */
  uv_freeaddrinfo(so->addrs);
  so->addrs = res;
  so->next_addr = res->ai_next;
  resolved(so, res->ai_addr, res->ai_addrlen);
}

/* An address written as digits needs no resolver. */
static bool numeric(const syslog_output *so, struct sockaddr_storage *sa,
                    socklen_t *len)
{
  struct sockaddr_in *s4 = (struct sockaddr_in *)sa;
  struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;
  uint16_t port = htons((uint16_t)strtoul(so->port, NULL, 10));

  memset(sa, 0, sizeof *sa);
  if (inet_pton(AF_INET, so->host, &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    s4->sin_port = port;
    *len = sizeof *s4;
    return true;
  }
  if (inet_pton(AF_INET6, so->host, &s6->sin6_addr) == 1) {
    s6->sin6_family = AF_INET6;
    s6->sin6_port = port;
    *len = sizeof *s6;
    return true;
  }
  return false;
}

void so_conn_start(syslog_output *so)
{
  struct addrinfo hints = {0};
  struct sockaddr_storage sa;
  socklen_t len;
  char why[512];
  int rc;

  if (so->stopped || so->conn || so->resolving || so->udp_ready ||
      uv_is_active((uv_handle_t *)&so->retry))
    return;
  so->next_addr = NULL;
  if (numeric(so, &sa, &len)) {
    resolved(so, (struct sockaddr *)&sa, len);
    return;
  }
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = so->protocol == SO_UDP ? SOCK_DGRAM : SOCK_STREAM;
  so->resolve.data = so;
  rc = uv_getaddrinfo(so->loop, &so->resolve, on_resolved, so->host,
                      so->port, &hints);
  if (rc != 0) {
    snprintf(why, sizeof why, "cannot resolve %s: %s", so->host,
             uv_strerror(rc));
    attempt_failed(so, why);
    return;
  }
  so->resolving = true;
}

uint64_t so_conn_push(syslog_output *so, const char *bytes, size_t len)
{
  so_conn *c = so->conn;
  char err[512];

  if (c->tls_later.len) {
    if (!buf_append(&c->wire, c->tls_later.data, c->tls_later.len)) {
      so_conn_drop(so, "out of memory");
      return 0;
    }
    c->tls_later.len = 0;
  }
  if (c->tls) {
    if (tls_session_write(c->tls, bytes, len, &c->wire, err, sizeof err)) {
      so_conn_drop(so, err);
      return 0;
    }
  } else if (!buf_append(&c->wire, bytes, len)) {
    so_conn_drop(so, "out of memory");
    return 0;
  }
  return c->wire_base + c->wire.len;
}

/* Written bytes leave the front of wire. */
static void compact(so_conn *c)
{
  if (c->wire_head == 0 ||
      (c->wire_head < c->wire.len && c->wire_head < (64u << 10)))
    return;
  if (c->wire_head < c->wire.len)
    memmove(c->wire.data, c->wire.data + c->wire_head,
            c->wire.len - c->wire_head);
  c->wire_base += c->wire_head;
  c->wire.len -= c->wire_head;
  c->wire_head = 0;
}

/* A pending write is watched a quarter of send_timeout_ms at a time:
 * libuv says how much of it is left, not when the kernel took some. */
static void on_stuck(uv_timer_t *t)
{
  syslog_output *so = t->data;
  so_conn *c = so->conn;
  size_t left;

  if (!c || !c->writing) return;
  left = uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp);
  if (left < c->stuck_bytes) {
    c->stuck_bytes = left;
    c->stuck_since_ms = uv_now(so->loop);
  } else if (uv_now(so->loop) - c->stuck_since_ms >= so->send_timeout_ms) {
    so_conn_drop(so, "the receiver took nothing within send_timeout_ms");
  }
}

static void watch_write(syslog_output *so, so_conn *c)
{
  uint64_t every = so->send_timeout_ms / 4 ? so->send_timeout_ms / 4 : 1;

  if (!so->send_timeout_ms) return;
  c->stuck_bytes = c->writing_len;
  c->stuck_since_ms = uv_now(so->loop);
  uv_timer_start(&so->deadline, on_stuck, every, every);
}

static void on_written(uv_write_t *req, int status)
{
  so_conn *c = req->data;
  syslog_output *so = c->so;

  c->writing = false;
  if (so->conn != c) return;
  uv_timer_stop(&so->deadline);
  if (status < 0) {
    so_conn_drop(so, uv_strerror(status));
    return;
  }
  c->wire_head += c->writing_len;
  so_written(so, c->wire_base + c->wire_head);
  compact(c);
  so_wake(so);
}

bool so_conn_flush(syslog_output *so)
{
  so_conn *c = so->conn;
  uv_buf_t b;
  int rc;

  if (!c) return true;
  if (c->writing) return false;
  if (c->tls_later.len) {
    if (!buf_append(&c->wire, c->tls_later.data, c->tls_later.len)) {
      so_conn_drop(so, "out of memory");
      return true;
    }
    c->tls_later.len = 0;
  }
  while (c->wire_head < c->wire.len) {
    b = uv_buf_init(c->wire.data + c->wire_head,
                    (unsigned)(c->wire.len - c->wire_head));
    rc = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    if (rc == UV_EAGAIN) break;
    if (rc < 0) {
      so_conn_drop(so, uv_strerror(rc));
      return true;
    }
    c->wire_head += (size_t)rc;
    if (c->ready) so_written(so, c->wire_base + c->wire_head);
  }
  compact(c);
  if (c->wire_head == c->wire.len) return true;
  /* The kernel's buffer is full: libuv writes the rest once it has room,
   * and says when. */
  c->writing_len = c->wire.len - c->wire_head;
  b = uv_buf_init(c->wire.data + c->wire_head, (unsigned)c->writing_len);
  if ((rc = uv_write(&c->write, (uv_stream_t *)&c->tcp, &b, 1,
                     on_written)) != 0) {
    so_conn_drop(so, uv_strerror(rc));
    return true;
  }
  c->writing = true;
  if (c->ready) watch_write(so, c);
  return false;
}
