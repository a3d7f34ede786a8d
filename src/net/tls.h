/*
 * tls.h - TLS (RFC 5425 syslog over TLS) with OpenSSL, server and client
 * side, for connections read and written on the libuv loop.
 *
 * OpenSSL never touches the socket: a session reads the bytes the loop
 * received from memory and leaves what must go back to the peer
 * (handshake, alerts) in a buffer the caller writes. So backpressure,
 * idle timeouts and stopping work on TLS connections as on plain ones.
 * Every decrypted byte is handed on in the same call: nothing waits inside
 * OpenSSL while the connection is held.
 */
#ifndef LUMBERJIT_TLS_H
#define LUMBERJIT_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

typedef struct tls_server tls_server;
typedef struct tls_client tls_client;
typedef struct tls_session tls_session;

/* Loads the PEM certificate chain and key; with ca, clients' certificates
 * are checked against it, and required when verify_client. NULL with the
 * reason in err. */
tls_server *tls_server_new(const char *cert, const char *key, const char *ca,
                           bool verify_client, char *err, size_t errlen);
void tls_server_free(tls_server *s);

tls_session *tls_session_new(tls_server *s);
void tls_session_free(tls_session *t);

/* The client side: servers' certificates are checked against the PEM file
 * ca (NULL: the system's trusted certificates), and the client presents
 * cert and key when given (both or neither). NULL with the reason in err. */
tls_client *tls_client_new(const char *ca, const char *cert, const char *key,
                           char *err, size_t errlen);
void tls_client_free(tls_client *c);
/* A session to a server that must prove it is server_name (a DNS name,
 * also sent as SNI, or an IP address), or NULL (out of memory). Its
 * handshake starts with tls_session_start; the bytes the server sends go
 * to tls_session_feed as on the server side. */
tls_session *tls_client_session_new(tls_client *c, const char *server_name);
/* Appends the client's first handshake bytes to out. -1 with err. */
int tls_session_start(tls_session *t, buf *out, char *err, size_t errlen);
/* Encrypts plain (the handshake done) and appends the TLS records that
 * hold it to out: once they are written, so is plain. -1 with err. */
int tls_session_write(tls_session *t, const char *plain, size_t len, buf *out,
                      char *err, size_t errlen);

typedef void (*tls_plain_fn)(void *ud, const char *bytes, size_t len);

/* Takes bytes read from the peer: plain text goes to fn, bytes for the
 * peer are appended to out. -1 with the reason in err when the session
 * failed (handshake, certificate, corrupt record); then out may hold an
 * alert to send before closing. */
int tls_session_feed(tls_session *t, const char *bytes, size_t len,
                     tls_plain_fn fn, void *ud, buf *out, char *err,
                     size_t errlen);
/* The handshake is done. */
bool tls_session_ready(const tls_session *t);
/* The peer ended the session (close_notify). */
bool tls_session_closed(const tls_session *t);

#endif
