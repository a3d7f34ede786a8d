/*
 * syslog_output.h - the syslog_output: records forwarded to another syslog
 * receiver over TCP, TLS or UDP, as rsyslog's omfwd does, each counted
 * delivered only once the kernel took its last byte.
 *
 *   fwd = { type = "syslog_output", message_matcher = "TRUE",
 *           encoder = "rfc5424", address = "tls://logs.example.com:6514",
 *           tls_ca = "/etc/ssl/ca.pem", disk_buffer = { max_bytes = 1073741824 } }
 *
 * Keys:
 *   address      "tcp://HOST:PORT", "tls://HOST:PORT" or "udp://HOST:PORT"
 *                (required). HOST is an IPv4 address, [IPv6] or a name,
 *                resolved at each connection attempt, its addresses tried
 *                in turn (UDP: the first).
 *   framing      TCP and TLS: "octet_counting" (RFC 6587 and 5425: "LEN "
 *                before each record; the default) or "newline"
 *                (non-transparent: each record ends in "\n", which then
 *                must not occur inside a record). Not for UDP: one datagram
 *                per record.
 *   newline      appends "\n" to each record: always with newline framing,
 *                false by default otherwise (a receiver such as rsyslog
 *                drops a trailing LF inside an octet-counted frame).
 *   reconnect_min_ms, reconnect_max_ms
 *                back-off between connection attempts: 100 ms doubling up
 *                to 30 s by default; back to the minimum once a connection
 *                is up.
 *   connect_timeout_ms
 *                how long a connection (and its TLS handshake) may take:
 *                10 s by default.
 *   send_timeout_ms
 *                how long a connection may take none of the bytes it has to
 *                send (60 s by default; 0: no limit) before it counts as
 *                broken: a receiver behind a blackholed path accepts and
 *                then answers nothing, and only a timeout reveals it. A
 *                slow receiver that takes some bytes is waited for.
 *   max_bytes_per_second
 *                a cap on the bytes sent (framing included; 0, the default:
 *                none), for an uplink whose budget is shared or paid by
 *                the byte: records wait in the queue, and then the disk
 *                buffer, while the cap holds them (rate_cap.h).
 *   tls_ca       TLS: the PEM file of the authorities the server's
 *                certificate must chain to (default: the system's).
 *   tls_cert, tls_key
 *                TLS: a client certificate and its key (both or neither).
 *   tls_server_name
 *                TLS: the name (or IP address) the server's certificate
 *                must carry; default the address's HOST. Sent as SNI.
 *   disk_buffer  { path =, max_bytes = (1 GiB), segment_bytes = (16 MiB),
 *                when_full = ("hold") }: when full, it holds the inputs, or
 *                with "drop_oldest" drops its oldest records, counted
 *                (config_disk_buffer.h);
 *                where records go while the receiver is away (spool.h);
 *                path defaults to state_dir/syslog-NAME.
 *   encoder, message_matcher, flush_bytes: as every output's. The record's
 *                bytes are the encoder's (encoders/rfc5424.lua,
 *                encoders/template.lua for RFC 3164 and other templates);
 *                give rfc5424.lua no octet_counted setting: the framing is
 *                the output's.
 *
 * Delivery. A record is delivered when the kernel took its last byte:
 * write(2) accepted it on the socket (TLS: the TLS record that holds it),
 * or sendto(2) accepted its datagram. Only then is its input's checkpoint
 * reference dropped. Syslog has no acknowledgement of its own, so what the
 * kernel took and the receiver never read (it crashed, the network went
 * down before the bytes left) is lost, as with omfwd; use a receiver on
 * the same host, or Kafka, where that matters. A connection that breaks
 * (the receiver closed it, an error) is noticed by reading it: records
 * handed to it whose last byte the kernel had not taken are sent again, in
 * order, on the next connection: at least once, never lost, and a record
 * may arrive twice (once torn, cut by the break, once whole). A UDP record
 * larger than a datagram takes (65507 bytes over IPv4, 65527 over IPv6)
 * goes to the dead-letter path with the reason.
 *
 * Reconnecting. While the receiver cannot be reached, connection attempts
 * follow the back-off; the log says when the receiver goes away and when
 * a connection is up again, once each, not per attempt or per record.
 * Meanwhile records wait in the output's queue, which fills and holds the
 * inputs (files are not read, sockets not read).
 *
 * The disk buffer. While the receiver is away (an attempt failed or the
 * connection broke, until a connection is up), what the queue holds goes
 * to the disk buffer, and with it the records the broken connection held:
 * once fsynced there they are acknowledged to their inputs, whose
 * checkpoints move on. Once a connection is up the disk buffer is sent
 * first, oldest first; the queue waits meanwhile, so records keep their
 * order. A record read from it leaves the disk when the kernel took it;
 * the read position is saved with the checkpoints, so a crash sends again
 * at most what went out since. A full disk buffer holds the inputs; nothing
 * is dropped. What it holds at exit is sent first by the next run.
 *
 * Stopping. SIGTERM waits up to stop_timeout_ms for the receiver to take
 * what the output holds (with a disk buffer, only while connected: records
 * on disk wait for the next run). Then what is left goes to the disk
 * buffer; without one, a record its input can read again (a file with a
 * state_dir checkpoint) stays unacknowledged for the next run, and the
 * rest go to the dead-letter path.
 */
#ifndef LUMBERJIT_SYSLOG_OUTPUT_H
#define LUMBERJIT_SYSLOG_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "config_disk_buffer.h"
#include "output.h"
#include "plugin.h"

typedef enum { SO_TCP, SO_TLS, SO_UDP } so_protocol;
typedef enum { SO_OCTET_COUNTING, SO_NEWLINE } so_framing;

/* A syslog_output's settings (config_plugin's syslog_output); what each
 * does is said above. */
typedef struct syslog_output_config {
  char *address;              /* as written */
  so_protocol protocol;
  char *host, *port;          /* as in the address, [] taken off */
  so_framing framing;
  uint64_t reconnect_min_ms, reconnect_max_ms, connect_timeout_ms;
  uint64_t send_timeout_ms;   /* 0: none */
  uint64_t bytes_per_second;  /* 0: none */
  char *tls_ca, *tls_cert, *tls_key, *tls_server_name;
  config_disk_buffer buffer;
} syslog_output_config;

extern const plugin_type syslog_output_type;

/* Opens o as a syslog_output to cfg's address, with its disk buffer in
 * buffer_dir (NULL: none), and starts connecting. */
int syslog_output_open(output_sink *o, uv_loop_t *loop, const char *name,
                       const syslog_output_config *cfg,
                       const char *buffer_dir, output_events ev, char *err,
                       size_t errlen);
/* What a start would fail on without connecting (--check): TLS files that
 * do not load. -1 with the reason. */
int syslog_output_check(const syslog_output_config *cfg, char *err,
                        size_t errlen);

#endif
