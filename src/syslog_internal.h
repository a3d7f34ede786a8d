/*
 * syslog_internal.h - what the syslog listener's files share:
 * syslog_input.c (the input kind, stream listeners, accepting),
 * syslog_conn.c (one stream connection: reading, TLS, framing, idling,
 * ending) and syslog_dgram.c (datagram sockets).
 */
#ifndef LUMBERJIT_SYSLOG_INTERNAL_H
#define LUMBERJIT_SYSLOG_INTERNAL_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <uv.h>

#include "frame.h"
#include "syslog_input.h"
#include "tls.h"

/* Stream reads land in one buffer per listener: each read is framed (and
 * copied into jobs) before the next. */
#define SYSLOG_READ_SIZE (64u << 10)
/* Datagrams taken per recvmmsg, and the largest taken whole (UDP's). */
#define SYSLOG_DGRAM_BATCH 32
#define SYSLOG_DGRAM_SIZE (64u << 10)
#define SYSLOG_ADDR_TEXT 64
/* Stopping: a connection ends once it has been this quiet, so that what
 * its sender wrote before the stop is read whole; a sender that goes on
 * gets half of stop_timeout_ms. */
#define SYSLOG_STOP_QUIET_MS 100

typedef union {
  uv_handle_t handle;
  uv_stream_t stream;
  uv_tcp_t tcp;
  uv_pipe_t pipe;
} syslog_stream;

typedef struct syslog_conn syslog_conn;
typedef struct syslog_dgram syslog_dgram;

typedef struct {
  pl_input *pi;
  syslog_transport transport;
  framing framing;
  size_t max_line;
  bool keep_cr;             /* a CR before a message's ending LF stays */
  uint64_t max_connections, idle_timeout_ms, receive_buffer;
  char *path;               /* unix sockets: removed at the end */
  bool bound_path;          /* the socket file is ours to remove */
  char address[128];        /* as configured, then as bound (real port) */
  tls_server *tls;

  syslog_stream server;     /* stream sockets */
  bool server_open;         /* the handle is not closed yet */
  char *readbuf;            /* SYSLOG_READ_SIZE */
  syslog_conn *conns;
  size_t nconns;
  uint64_t refused_logged_at; /* uv_now: refusals are logged once a second */

  syslog_dgram *dgram;      /* datagram sockets */

  uv_timer_t stop_timer;    /* stopping: ends connections that are quiet */
  bool stop_timer_open;
  uint64_t stopped_at;      /* uv_now */
  bool started, stopping;
  uint64_t connections, refused, idle_closed, malformed, dropped;
} syslog_listener;

/* One stream connection: a source of its own. */
struct syslog_conn {
  syslog_conn *next;        /* the listener's */
  syslog_listener *l;
  pl_source *src;
  syslog_stream h;
  uv_timer_t idle;          /* idle_timeout_ms only */
  frame_reader frame;
  tls_session *tls;         /* tls:// only */
  buf tls_out;              /* what TLS sends back to the peer */
  char peer[SYSLOG_ADDR_TEXT]; /* "" on unix sockets */
  char label[160];          /* "127.0.0.1:5514", for log lines */
  uint64_t seq;             /* messages read: their positions */
  uint64_t last_read;       /* uv_now */
  int open_handles;         /* closing: handles whose close is pending */
  bool held, ended, closing;
};

/* syslog_input.c: the listener may be done (stopping, all closed). */
void syslog_maybe_done(syslog_listener *l);
/* Bytes that are no message: counted, and to the dead-letter path. */
void syslog_malformed(syslog_listener *l, const char *from, uint64_t position,
                      const char *bytes, size_t len, const char *reason);
/* A socket address as text: "127.0.0.1", "::1" (IPv4-mapped as IPv4). */
void syslog_addr_text(const struct sockaddr *sa, char *out, size_t len);
/* l->address from the address bound: "tcp://127.0.0.1:41234". */
void syslog_bound_address(syslog_listener *l, const struct sockaddr *sa);
/* A socket file left by a process that is gone is removed; a live one,
 * or any other file, is not: -1 with the reason. */
int syslog_clear_socket_path(const char *path, int type, char *why,
                             size_t len);

/* syslog_conn.c */
/* Takes the connection waiting on the listener's server. */
void syslog_conn_accept(syslog_listener *l);
/* Holds or resumes reading (pipeline_internal.h's hold). */
void syslog_conn_hold(syslog_conn *c, bool hold);
/* Stopping: reads what the kernel holds, then ends the connection. */
void syslog_conn_drain(syslog_conn *c);
/* Whether it has read nothing for ms (held connections are not quiet:
 * they have more to read). */
bool syslog_conn_quiet(const syslog_conn *c, uint64_t now, uint64_t ms);
/* Its source finished: closes it; it frees itself and its source. */
void syslog_conn_close(syslog_conn *c);

/* syslog_dgram.c */
int syslog_dgram_open(syslog_listener *l, const config_syslog *cfg,
                      char *err, size_t errlen);
int syslog_dgram_start(syslog_listener *l, char *err, size_t errlen);
void syslog_dgram_hold(syslog_dgram *d, bool hold);
/* Stopping: reads what the kernel holds, then finishes the source. */
void syslog_dgram_drain(syslog_dgram *d);
/* The source finished, or the pipeline is torn down: closes the socket. */
void syslog_dgram_close(syslog_dgram *d);
bool syslog_dgram_closed(const syslog_dgram *d);
/* The kernel's count of datagrams dropped into l->dropped. */
void syslog_dgram_count_drops(syslog_dgram *d);
void syslog_dgram_free(syslog_dgram *d);

#endif
