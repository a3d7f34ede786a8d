/*
 * syslog_internal.h - what the syslog_output's parts share:
 * syslog_output.c (the transport: records taken, settled, spooled),
 * syslog_conn_out.c (the connection: resolving, connecting, TLS, writing)
 * and syslog_udp_out.c (datagrams).
 *
 * Records handed to a stream connection are entries: their framed bytes
 * in `plain`, in order; each knows where the connection's bytes that hold
 * it end (wire_end), so it is settled once the kernel took that many.
 */
#ifndef LUMBERJIT_SYSLOG_INTERNAL_H
#define LUMBERJIT_SYSLOG_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>

#include <uv.h>

#include "buf.h"
#include "latency.h"
#include "output.h"
#include "rate_cap.h"
#include "spool.h"
#include "syslog_output.h"
#include "tls.h"

typedef struct {
  size_t start, end;        /* its framed bytes in plain */
  uint32_t prefix;          /* of them, the framing's ("LEN ") */
  uint64_t wire_end;        /* the connection's bytes holding it end here */
  uint64_t sent_ns;         /* when it was taken */
  bool from_disk;
  uint64_t dq_id;           /* from_disk: its id in the disk buffer */
  output_record r;          /* else: its origin and checkpoint reference */
} so_entry;

/* One connection (attempt): freed when its handle is closed, so callbacks
 * of one that was dropped find it is no longer the output's. */
typedef struct so_conn {
  uv_tcp_t tcp;
  uv_connect_t connect;
  uv_write_t write;
  struct syslog_output *so;
  tls_session *tls;
  buf wire;                 /* bytes for the socket, from wire_head on */
  size_t wire_head;
  uint64_t wire_base;       /* bytes of this connection before wire[0] */
  buf tls_later;            /* TLS bytes made while a write was pending */
  bool writing;             /* a uv_write of wire is pending: wire stays */
  size_t writing_len;
  bool ready;               /* connected, the TLS handshake done */
  size_t stuck_bytes;       /* of the pending write, not yet taken as of */
  uint64_t stuck_since_ms;  /* then (send_timeout_ms) */
} so_conn;

typedef struct syslog_output {
  output_sink *o;
  char *name;               /* "output 'x'" */
  char *address, *host, *port, *server_name;
  so_protocol protocol;
  so_framing framing;
  uint64_t backoff_min_ms, backoff_max_ms, connect_timeout_ms;
  uint64_t send_timeout_ms; /* 0: none */
  rate_cap cap;             /* max_bytes_per_second */
  uint64_t backoff_ms;      /* the next wait */
  tls_client *tls;

  uv_loop_t *loop;
  uv_timer_t retry;         /* back-off, a full disk, a full UDP buffer */
  uv_timer_t deadline;      /* connect_timeout_ms of an attempt, then
                               send_timeout_ms of a pending write */
  uv_timer_t later;         /* a full disk buffer, a full socket buffer */
  uv_getaddrinfo_t resolve;
  bool resolving;
  struct addrinfo *addrs;   /* the name's addresses, being tried */
  struct addrinfo *next_addr; /* the one to try when this one fails */
  bool handles_open;
  so_conn *conn;            /* the connection, or NULL */
  bool away;                /* an attempt failed or the connection broke */
  bool stopped;             /* fail() ran */

  uv_udp_t udp;
  struct sockaddr_storage peer; /* UDP: resolved */
  bool udp_ready;

  buf plain;                /* framed bytes of the entries */
  so_entry *ents;
  size_t ent_head, ent_encoded, nents, ents_cap;

  spool *spool;
  bool spool_logged, full_logged;
  /* A path that flaps (connections that break soon after they are made)
   * is told a line every 10 s at most (syslog_stream_out.c): when the
   * last break was logged, and whether breaks went untold since (quiet:
   * the lines of each break, connection and disk buffer drain are left
   * out meanwhile). */
  uint64_t down_logged_ms, breaks_unlogged;
  bool quiet;
  buf scratch;              /* a record's bytes on their way elsewhere */

  uint64_t sent, delivered, refused, from_disk;
  uint64_t connects, connect_failures;
  latency_hist latency;
} syslog_output;

/* ---- syslog_output.c: the transport ---- */

/* Goes on with the output (a connection up, a write completed). */
void so_wake(syslog_output *so);
/* The output tries again in ms (a full disk buffer or socket buffer). */
void so_wake_later(syslog_output *so, uint64_t ms);
/* Whether max_bytes_per_second lets len more bytes go now (they are
 * counted then); if not, the output goes on once it will. */
bool so_cap_allows(syslog_output *so, size_t len);
/* The loop runs on for the output's handles only while it holds records. */
void so_update_ref(syslog_output *so);
/* A record that cannot be sent goes to the dead-letter path with why. */
void so_refuse(syslog_output *so, const output_record *r, const char *bytes,
               size_t len, const char *why);

/* ---- syslog_spool_out.c: the disk buffer ---- */

/* The queue's records go to the disk buffer while the receiver is away;
 * false when it takes no more now. */
bool so_spill_queue(syslog_output *so);
/* fsyncs what went to the disk buffer; its records' inputs move on. */
void so_sync_spilled(syslog_output *so);
/* Records handed to the connection that broke go to the disk buffer, if
 * they all fit, so their inputs move on. */
void so_move_held(syslog_output *so);
/* Logs a change of the disk buffer's state, with what it holds. */
void so_log_backlog(syslog_output *so, const char *what);
/* fsyncs what went to the disk buffer at the stop; what cannot be made
 * durable is dead-lettered with reason. Never fails the output. */
void so_sync_at_stop(syslog_output *so, const char *reason);
/* Logs, once, that the disk buffer drained. */
void so_note_backlog(syslog_output *so);
/* Records the output holds that are not from the disk buffer. */
bool so_holds_direct(const syslog_output *so);

/* ---- syslog_stream_out.c: records on a stream connection ---- */

/* Hands records (the disk buffer's first) to the connection while it
 * takes them; false when it must wait (no connection, a pending write). */
bool so_stream_send(syslog_output *so);
/* A connection is up (TLS: handshake done): the output goes on. */
void so_up(syslog_output *so);
/* The connection broke or an attempt failed (why): what it held goes
 * back to be sent again; a back-off starts. */
void so_down(syslog_output *so, const char *why);
/* The kernel took the connection's bytes up to `written`. */
void so_written(syslog_output *so, uint64_t written);
/* Forgets the entries (the stop): those not from the disk buffer go to
 * fn first. */
void so_drop_entries(syslog_output *so,
                     void (*fn)(syslog_output *so, so_entry *e,
                                const char *payload, size_t len));

/* ---- syslog_conn_out.c ---- */

/* Starts a connection attempt unless one is under way or a back-off
 * runs. */
void so_conn_start(syslog_output *so);
/* Hands bytes to the connection (TLS: encrypts them); the total the
 * connection was handed, or 0 when it failed (then it is dropped). */
uint64_t so_conn_push(syslog_output *so, const char *bytes, size_t len);
/* Writes what the connection holds; false while a write is pending. */
bool so_conn_flush(syslog_output *so);
/* Closes the connection, if any, for why (NULL: quietly, the stop). */
void so_conn_drop(syslog_output *so, const char *why);
/* The back-off timer: the next attempt in backoff_ms, which then grows. */
void so_conn_backoff(syslog_output *so);

/* ---- syslog_udp_out.c ---- */

/* Sends what the queue and the disk buffer hold while the kernel takes
 * it; false when it must wait. */
bool so_udp_send(syslog_output *so);
int so_udp_open(syslog_output *so, char *err, size_t errlen);

#endif
