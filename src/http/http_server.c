/* http_server.c - see http_server.h. */
#include "http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <http_parser.h>

#include "host_port.h"

typedef struct http_conn http_conn;

struct http_server {
  uv_tcp_t listener;
  http_handler handler;
  void *ud;
  http_conn *conns;          /* open ones, to close at the end */
  size_t nconns;
  bool closing, listener_open;
};

struct http_conn {
  uv_tcp_t tcp;
  uv_timer_t timer;          /* the request's deadline, or the idle one */
  uv_shutdown_t shutdown;
  int handles;               /* open: freed when none is */
  http_server *srv;
  http_conn *prev, *next;
  http_parser parser;
  size_t url_len, head_bytes, body_bytes;
  int refuse;                /* a callback's answer: 413, 431; 0: none */
  unsigned requests;         /* answered */
  unsigned pending;          /* answers being written */
  bool reading;
  bool done;                 /* answers no more requests */
  bool lingering;            /* shut down: reads until the client closes */
  bool closing;
  char url[HTTP_MAX_HEAD + 1]; /* the head's bound bounds it too */
  char rbuf[4096];
};

/* An answer being written: its bytes after the request. */
typedef struct {
  uv_write_t req;
  http_conn *c;
  char data[];
} http_write;

static void maybe_free_server(http_server *srv)
{
  if (srv->closing && !srv->listener_open && srv->nconns == 0) free(srv);
}

static void on_conn_closed(uv_handle_t *h)
{
  http_conn *c = h->data;
  http_server *srv = c->srv;

  if (--c->handles > 0) return;
  if (c->prev) c->prev->next = c->next;
  else srv->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  srv->nconns--;
  free(c);
  maybe_free_server(srv);
}

static void conn_close(http_conn *c)
{
  if (c->closing) return;
  c->closing = true;
  uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
  uv_close((uv_handle_t *)&c->timer, on_conn_closed);
}

static void on_timeout(uv_timer_t *t)
{
  conn_close(t->data);
}

/* The timer runs from now: a request's deadline or the idle one. */
static void arm(http_conn *c)
{
  if (uv_timer_start(&c->timer, on_timeout, HTTP_TIMEOUT_MS, 0) != 0)
    conn_close(c);
}

static void on_alloc(uv_handle_t *h, size_t size, uv_buf_t *b)
{
  http_conn *c = h->data;

  (void)size;
  *b = uv_buf_init(c->rbuf, sizeof c->rbuf);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b);

static void start_reading(http_conn *c)
{
  if (c->reading) return;
  if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0) {
    conn_close(c);
    return;
  }
  c->reading = true;
}

static void stop_reading(http_conn *c)
{
  if (!c->reading) return;
  (void)uv_read_stop((uv_stream_t *)&c->tcp); /* it cannot fail on TCP */
  c->reading = false;
}

static void on_shut_down(uv_shutdown_t *req, int status)
{
  if (status < 0) conn_close(req->data);
}

/* Every answer is out: the connection ends. It is shut down, then read
 * to its end (or the timeout): closing with bytes of the client's unread
 * would send a reset, which can destroy the last answer before the client
 * reads it. */
static void finish(http_conn *c)
{
  if (c->lingering || c->closing) return;
  c->lingering = true;
  c->shutdown.data = c;
  if (uv_shutdown(&c->shutdown, (uv_stream_t *)&c->tcp, on_shut_down) != 0) {
    conn_close(c);
    return;
  }
  arm(c);
  start_reading(c);
}

static void on_written(uv_write_t *req, int status)
{
  http_write *w = (http_write *)req;
  http_conn *c = w->c;

  free(w);
  c->pending--;
  if (status < 0) conn_close(c);
  else if (c->done && c->pending == 0) finish(c);
  else if (!c->done && c->pending < HTTP_MAX_PENDING) start_reading(c);
}

static const char *reason(int status)
{
  switch (status) {
  case 200: return "OK";
  case 400: return "Bad Request";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 413: return "Content Too Large";
  case 431: return "Request Header Fields Too Large";
  case 503: return "Service Unavailable";
  default: return "Internal Server Error";
  }
}

/* Queues the answer; with `head`, its headers alone. */
static void send_response(http_conn *c, const http_response *res, bool head)
{
  char hdr[512];
  size_t body = head ? 0 : res->body.len, n;
  http_write *w;
  uv_buf_t b;

  n = (size_t)snprintf(hdr, sizeof hdr, "HTTP/1.1 %d %s\r\nContent-Type: "
                       "%s\r\nContent-Length: %zu\r\n%s%s%sConnection: %s"
                       "\r\n\r\n", res->status, reason(res->status),
                       res->content_type, res->body.len,
                       res->allow ? "Allow: " : "",
                       res->allow ? res->allow : "", res->allow ? "\r\n" : "",
                       c->done ? "close" : "keep-alive");
  w = malloc(sizeof *w + n + body);
  if (!w) {
    conn_close(c);
    return;
  }
  memcpy(w->data, hdr, n);
  if (body) memcpy(w->data + n, res->body.data, body);
  w->c = c;
  b = uv_buf_init(w->data, (unsigned)(n + body));
  if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_written) != 0) {
    free(w);
    conn_close(c);
    return;
  }
  /* A client that sends requests without reading the answers waits. */
  if (++c->pending >= HTTP_MAX_PENDING) stop_reading(c);
}

/* An answer of the server's own: an error, after which it closes. */
static void refuse(http_conn *c, int status, const char *why)
{
  http_response res = {.status = status, .content_type = "text/plain"};

  c->done = true;
  if (buf_append_str(&res.body, why) && buf_append_str(&res.body, "\n"))
    send_response(c, &res, false);
  else
    conn_close(c);
  buf_free(&res.body);
}

/* ---- the parser's callbacks ---- */

static int on_message_begin(http_parser *p)
{
  http_conn *c = p->data;

  if (c->closing) return -1;
  c->url_len = c->head_bytes = c->body_bytes = 0;
  arm(c); /* the whole request within the timeout: no slow drip */
  return 0;
}

/* Counts the head's bytes; -1 (431) past the bound. */
static int head_grows(http_conn *c, size_t len)
{
  c->head_bytes += len;
  if (c->head_bytes <= HTTP_MAX_HEAD) return 0;
  c->refuse = 431;
  return -1;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
  http_conn *c = p->data;

  if (head_grows(c, len) != 0) return -1;
  memcpy(c->url + c->url_len, at, len);
  c->url_len += len;
  return 0;
}

/* ": " and the line's end count too. */
static int on_header(http_parser *p, const char *at, size_t len)
{
  (void)at;
  return head_grows(p->data, len + 2);
}

static int on_body(http_parser *p, const char *at, size_t len)
{
  http_conn *c = p->data;

  (void)at;
  c->body_bytes += len;
  if (c->body_bytes <= HTTP_MAX_BODY) return 0;
  c->refuse = 413;
  return -1;
}

static int on_message_complete(http_parser *p)
{
  http_conn *c = p->data;
  http_server *srv = c->srv;
  http_response res = {.status = 200, .content_type = "text/plain"};
  bool read = p->method == HTTP_GET || p->method == HTTP_HEAD;
  char *query;

  if (c->closing) return -1;
  c->requests++;
  /* The last answer on this connection says so; the bytes after it are
   * not parsed. */
  if (!http_should_keep_alive(p) || p->upgrade ||
      c->requests >= HTTP_MAX_REQUESTS) {
    c->done = true;
    http_parser_pause(p, 1);
  }
  c->url[c->url_len] = '\0';
  if ((query = strchr(c->url, '?'))) *query = '\0';
  srv->handler(srv->ud, c->url, read, &res);
  send_response(c, &res, p->method == HTTP_HEAD);
  buf_free(&res.body);
  if (!c->closing) arm(c); /* now the idle timeout */
  return 0;
}

static const http_parser_settings settings = {
  .on_message_begin = on_message_begin,
  .on_url = on_url,
  .on_header_field = on_header,
  .on_header_value = on_header,
  .on_body = on_body,
  .on_message_complete = on_message_complete,
};

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
  http_conn *c = s->data;
  enum http_errno err;

  if (nread == 0) return;
  if (nread < 0) {
    /* The client is done sending (or gone): what it asked is answered,
     * then the connection ends. */
    stop_reading(c);
    if (nread != UV_EOF || c->lingering || c->pending == 0) conn_close(c);
    else c->done = true;
    return;
  }
  if (c->done || c->lingering) return; /* bytes after the last request */
  http_parser_execute(&c->parser, &settings, b->base, (size_t)nread);
  err = HTTP_PARSER_ERRNO(&c->parser);
  if (c->closing) return;
  if (err == HPE_HEADER_OVERFLOW) c->refuse = 431;
  if (err != HPE_OK && err != HPE_PAUSED)
    refuse(c, c->refuse ? c->refuse : 400, c->refuse == 413
           ? "request body too large" : c->refuse ? "request head too large"
           : "bad request");
  if (c->done && c->pending == 0 && !c->closing) finish(c);
}

/* ---- accepting ---- */

static void on_refused_closed(uv_handle_t *h)
{
  free(h);
}

/* Past HTTP_MAX_CONNECTIONS: accepted, so that the listener goes on, and
 * closed. */
static void turn_away(http_server *srv)
{
  uv_tcp_t *t = malloc(sizeof *t);

  if (!t) return;
  if (uv_tcp_init(srv->listener.loop, t) != 0) {
    free(t);
    return;
  }
  /* Closed whether or not it was taken: a failed accept has nothing. */
  (void)uv_accept((uv_stream_t *)&srv->listener, (uv_stream_t *)t);
  uv_close((uv_handle_t *)t, on_refused_closed);
}

static void on_connection(uv_stream_t *l, int status)
{
  http_server *srv = l->data;
  uv_loop_t *loop = l->loop;
  http_conn *c;

  if (status < 0) return;
  if (srv->nconns >= HTTP_MAX_CONNECTIONS || !(c = calloc(1, sizeof *c))) {
    turn_away(srv);
    return;
  }
  if (uv_tcp_init(loop, &c->tcp) != 0) {
    free(c);
    turn_away(srv);
    return;
  }
  c->srv = srv;
  c->tcp.data = c->timer.data = c;
  c->handles = 1;
  c->next = srv->conns;
  if (c->next) c->next->prev = c;
  srv->conns = c;
  srv->nconns++;
  if (uv_timer_init(loop, &c->timer) != 0) {
    c->closing = true;
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
    turn_away(srv); /* the listener waits until this one is taken */
    return;
  }
  c->handles = 2;
  uv_unref((uv_handle_t *)&c->tcp);
  uv_unref((uv_handle_t *)&c->timer);
  http_parser_init(&c->parser, HTTP_REQUEST);
  c->parser.data = c;
  if (uv_accept(l, (uv_stream_t *)&c->tcp) != 0) {
    conn_close(c);
    return;
  }
  /* For the latency of small answers only: a failure changes nothing. */
  (void)uv_tcp_nodelay(&c->tcp, 1);
  arm(c);
  start_reading(c);
}

/* "127.0.0.1:2020", "[::1]:2020": the address the listener has. */
static void name_bound(const uv_tcp_t *t, char *out, size_t len)
{
  struct sockaddr_storage sa;
  int salen = sizeof sa;
  char host[INET6_ADDRSTRLEN] = "?";
  unsigned port = 0;

  if (uv_tcp_getsockname(t, (struct sockaddr *)&sa, &salen) == 0) {
    if (sa.ss_family == AF_INET6) {
      const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&sa;
      inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host);
      port = ntohs(s6->sin6_port);
      snprintf(out, len, "[%s]:%u", host, port);
      return;
    }
    inet_ntop(AF_INET, &((const struct sockaddr_in *)&sa)->sin_addr, host,
              sizeof host);
    port = ntohs(((const struct sockaddr_in *)&sa)->sin_port);
  }
  snprintf(out, len, "%s:%u", host, port);
}

static void on_listener_closed(uv_handle_t *h)
{
  http_server *srv = h->data;

  srv->listener_open = false;
  maybe_free_server(srv);
}

http_server *http_server_start(uv_loop_t *loop, const char *address,
                               http_handler handler, void *ud, char *bound,
                               size_t boundlen, char *err, size_t errlen)
{
  struct sockaddr_storage sa;
  const char *why = host_port_parse(address, &sa);
  http_server *srv;
  int rc;

  if (why) {
    snprintf(err, errlen, "http_address '%s': %s", address, why);
    return NULL;
  }
  if (!(srv = calloc(1, sizeof *srv))) {
    snprintf(err, errlen, "http_address '%s': out of memory", address);
    return NULL;
  }
  srv->handler = handler;
  srv->ud = ud;
  if ((rc = uv_tcp_init(loop, &srv->listener)) != 0) {
    free(srv);
    snprintf(err, errlen, "http_address '%s': %s", address, uv_strerror(rc));
    return NULL;
  }
  srv->listener.data = srv;
  srv->listener_open = true;
  if ((rc = uv_tcp_bind(&srv->listener, (struct sockaddr *)&sa, 0)) != 0 ||
      (rc = uv_listen((uv_stream_t *)&srv->listener, 64, on_connection)) != 0) {
    snprintf(err, errlen, "http_address '%s': cannot listen: %s", address,
             uv_strerror(rc));
    http_server_close(srv);
    return NULL;
  }
  uv_unref((uv_handle_t *)&srv->listener);
  name_bound(&srv->listener, bound, boundlen);
  return srv;
}

void http_server_close(http_server *srv)
{
  if (!srv || srv->closing) return;
  srv->closing = true;
  uv_close((uv_handle_t *)&srv->listener, on_listener_closed);
  for (http_conn *c = srv->conns; c; c = c->next) conn_close(c);
}
