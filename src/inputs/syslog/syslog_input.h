/*
 * syslog_input.h - a syslog listener: the input kind of syslog_input
 * (plugin.h), one per address, replacing rsyslog's imtcp,
 * imudp, imuxsock and imtcp with TLS.
 *
 *   tcp = { type = "syslog_input", address = "tcp://127.0.0.1:514",
 *           decoder = "syslog" }
 *
 * address        tcp://HOST:PORT, tls://HOST:PORT, udp://HOST:PORT (HOST an
 *                IPv4 address, [IPv6] or *; PORT 0: any free port),
 *                unix:PATH (datagrams, as /dev/log), unix-stream:PATH.
 *                A stale socket file at PATH is replaced, another file is
 *                not; the socket file is removed at the end.
 * max_line       the longest message (default 65536); a longer one is
 *                handed on in pieces ruled by long_lines, as lines are.
 * framing        stream sockets: auto (default), octet_counted, newline
 *                (frame.h).
 * keep_cr        keep the CR before a message's ending LF (default false:
 *                it goes, as the LF does; frame.h has the rule).
 *
 * Connection slots (stream sockets; syslog_accept.c). A connection that
 * has sent no whole message yet is silent; silent connections never keep
 * a sender out, and every refusal and close below is counted (the summary,
 * metrics) and logged at most once a second with the count so far.
 * max_connections  connections served at once (default 1000); a new one
 *                past it closes the oldest silent connection (what the
 *                kernel holds for it is read first), or is accepted and
 *                closed at once when every connection has sent something.
 * max_connections_per_address  connections from one IP address (default
 *                100; raise it for relays and NAT); one more closes that
 *                address's oldest silent connection, or is refused. Unix
 *                sockets have no address.
 * tls_handshake_timeout_ms  tls:// only: a handshake not done this long
 *                after the connection opened closes it (default 10000;
 *                0: never).
 * first_message_timeout_ms  no whole message this long after opening
 *                closes the connection (default 30000, as nginx's
 *                client_header_timeout or OpenSSH's LoginGraceTime; 0:
 *                never); its bytes so far are ended as a peer closing.
 * idle_timeout_ms  a connection that has sent a message and then nothing
 *                for this long is closed (default 0: never).
 *                Deadlines do not run while backpressure holds a
 *                connection: they start again when reading resumes.
 * File descriptors: accepting leaves FD_LIMIT_RESERVED free (fd_limit.h).
 *                Out of them (or EMFILE, ENFILE), the oldest connection
 *                silent for a second is closed; with none, new connections
 *                wait in the kernel's queue and are served as descriptors
 *                come free; after a second they are refused, counted and
 *                logged. None is closed unread without a count.
 * receive_buffer datagram sockets: the SO_RCVBUF asked for (default 4 MiB;
 *                SO_RCVBUFFORCE when the process may).
 * socket_mode    unix sockets: the file's permissions (default "0666").
 * sender_field   the field given the sender's IP address (tcp, tls, udp;
 *                default "fromhost-ip", as rsyslog names it; false: none).
 * listener_field the field given the input's name (default "inputname").
 * tls            tls:// only: {cert=, key=, ca=, verify_client=}: PEM
 *                files; with ca, client certificates are checked, and
 *                required with verify_client.
 *
 * Each connection is a source of its own (its records keep their order);
 * a datagram socket is one source. Records are syslog messages without
 * their framing; positions are per-source message numbers.
 *
 * Nothing taken from the kernel is lost: bytes that are no frame go to the
 * dead-letter path with the reason and are counted as malformed; a peer
 * that closes mid-message leaves its bytes there too. Backpressure (an
 * output full, the source's worker behind) stops reading the source: a
 * stream then pushes back on its sender through TCP, a datagram socket
 * lets the kernel drop what does not fit in its buffer, and those drops
 * are counted (the kernel's count, SO_MEMINFO). Stopping takes the
 * connections the kernel queued (as any, or refused and counted when no
 * descriptor is left), closes the listeners, reads what the kernel already
 * holds for every socket, and ends each connection's last message as the
 * peer closing would.
 *
 * Sockets are bound while the pipeline is built, so an address in use
 * fails the start, before anything runs. A socket systemd passed for the
 * address (socket activation, systemd_listen.h: the same type and bound
 * address) is taken instead of bound; its Unix socket file, being
 * systemd's, keeps its mode and stays at the end. A reload hands the
 * socket, and the open stream connections, to the next pipeline's
 * listener of the address (syslog_carry.c).
 */
#ifndef LUMBERJIT_SYSLOG_INPUT_H
#define LUMBERJIT_SYSLOG_INPUT_H

#include <sys/socket.h>

#include "frame.h"
#include "plugin.h"

typedef enum {
  SYSLOG_TCP, SYSLOG_TLS, SYSLOG_UDP, SYSLOG_UNIX_DGRAM, SYSLOG_UNIX_STREAM
} syslog_transport;

/* Its settings (syslog_config.c reads them). */
typedef struct {
  char *address;         /* as written: "tcp://127.0.0.1:514" */
  syslog_transport transport;
  struct sockaddr_storage sockaddr; /* tcp, tls, udp */
  char *path;            /* unix sockets */
  framing framing;
  uint64_t max_connections, max_connections_per_address;
  uint64_t tls_handshake_timeout_ms, first_message_timeout_ms;
  uint64_t idle_timeout_ms, receive_buffer;
  unsigned socket_mode;
  char *sender_field, *listener_field; /* NULL: none */
  struct {
    char *cert, *key, *ca;
    bool verify_client;
  } tls;
} config_syslog;

extern const input_kind syslog_input_kind;
extern const plugin_type syslog_input_type;

#endif
