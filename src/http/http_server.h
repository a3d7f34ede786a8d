/*
 * http_server.h - a small HTTP/1.1 server on the loop, for the endpoint
 * operators and their scrapers ask (http_endpoint.h): nodejs/http-parser
 * parses the requests (its callbacks fit an event loop: it takes bytes as
 * they come and keeps its state between reads), libuv does the I/O, and
 * every answer is written with uv_write, so the loop never blocks on a
 * client.
 *
 * Bounded, since it shares the loop with the pipeline:
 *   - HTTP_MAX_CONNECTIONS at once; one past them is accepted and closed
 *     at once (a client retries; the backlog does not fill);
 *   - a request's line and headers HTTP_MAX_HEAD bytes (431 past them),
 *     its body HTTP_MAX_BODY (413); bytes that are no HTTP: 400; each of
 *     these answers closes the connection;
 *   - a request must be whole HTTP_TIMEOUT_MS after its first byte, and a
 *     kept-alive connection is closed after HTTP_TIMEOUT_MS without one
 *     (or with an answer the client does not read);
 *   - HTTP_MAX_REQUESTS a connection; reading stops while it has
 *     HTTP_MAX_PENDING answers unread, so pipelined requests cannot pile
 *     answers up.
 * None of its handles keeps the loop running: the run ends when the
 * pipeline's work does.
 */
#ifndef LUMBERJIT_HTTP_SERVER_H
#define LUMBERJIT_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "buf.h"

#define HTTP_MAX_CONNECTIONS 16
#define HTTP_MAX_HEAD (8u << 10)
#define HTTP_MAX_BODY (8u << 10)
#define HTTP_TIMEOUT_MS 10000
#define HTTP_MAX_REQUESTS 100
#define HTTP_MAX_PENDING 4

/* What a handler answers: status 200 unless it says otherwise; body
 * starts empty (the server frees it). For HEAD the server sends the
 * headers of the GET answer alone. */
typedef struct {
  int status;
  const char *content_type;
  const char *allow;        /* a 405's Allow header; NULL: none */
  buf body;
} http_response;

/* path: the request's target without its query; read: the method is GET
 * or HEAD. */
typedef void (*http_handler)(void *ud, const char *path, bool read,
                             http_response *res);

typedef struct http_server http_server;

/* Listens on address (HOST:PORT, host_port.h); NULL with the reason in
 * err. The address it got (port 0: one the kernel chose) goes in bound. */
http_server *http_server_start(uv_loop_t *loop, const char *address,
                               http_handler handler, void *ud, char *bound,
                               size_t boundlen, char *err, size_t errlen);
/* Closes the listener and every connection; the server is freed once
 * their handles have closed (the loop must run for that). */
void http_server_close(http_server *srv);

#endif
