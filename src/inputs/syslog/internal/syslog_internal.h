/*
 * syslog_internal.h - what the syslog listener's files share:
 * syslog_input.c (the input kind, binding, stopping, counting),
 * syslog_accept.c (stream listeners: accepting, connection slots, file
 * descriptors), syslog_conn.c (one stream connection: reading, TLS,
 * framing, deadlines, ending), syslog_dgram.c (datagram sockets) and
 * syslog_carry.c (connections carried through a reload).
 */
#ifndef LUMBERJIT_SYSLOG_INTERNAL_H
#define LUMBERJIT_SYSLOG_INTERNAL_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <uv.h>

#include "frame.h"
#include "input_host.h"
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
/* Connections accepted per wake of the listener, so that reading the
 * connections already open goes on during a flood of new ones. */
#define SYSLOG_ACCEPT_BATCH 64
/* Out of file descriptors: how often accepting is tried again, and how
 * long connections may wait in the kernel's queue for a descriptor before
 * they are refused (long enough for connections that are ending to give
 * theirs back, short enough that a sender is not left unanswered). */
#define SYSLOG_FD_RETRY_MS 100
#define SYSLOG_FD_WAIT_MS 1000

/* Events counted and logged at a bounded rate: the first one, then at most
 * one line a second, each with the count so far. */
typedef struct {
  uint64_t count;
  uint64_t logged_at;       /* uv_now of the last line */
} syslog_tally;

typedef union {
  uv_handle_t handle;
  uv_stream_t stream;
  uv_tcp_t tcp;
  uv_pipe_t pipe;
} syslog_stream;

typedef struct syslog_conn syslog_conn;
typedef struct syslog_dgram syslog_dgram;
typedef struct syslog_carry syslog_carry;

typedef struct {
  pl_input *pi;
  syslog_transport transport;
  framing framing;
  size_t max_line;
  bool keep_cr;             /* a CR before a message's ending LF stays */
  uint64_t max_connections, max_connections_per_address;
  uint64_t tls_handshake_timeout_ms, first_message_timeout_ms;
  uint64_t idle_timeout_ms, receive_buffer;
  char *path;               /* unix sockets: removed at the end */
  bool bound_path;          /* the socket file is ours to remove */
  const char *passed;       /* the name of the socket systemd passed it
                               (systemd_listen.h); NULL: bound here */
  bool handed_over;         /* its socket is the last pipeline's, kept
                               through a reload */
  syslog_carry *carried;    /* handed over: the last pipeline's open
                               connections, served from the start */
  syslog_carry *handing;    /* handing its socket on: what goes with it,
                               until the socket is closed here */
  uint32_t drops_before;    /* the kernel's drops on the socket that the
                               pipelines before counted */
  char address[128];        /* as configured, then as bound (real port) */
  tls_server *tls;

  /* Stream sockets: the listening socket is accepted from here, not by
   * libuv, whose uv_listen closes connections it cannot get a descriptor
   * for without a word (syslog_accept.c). */
  int server_fd;            /* -1 once closed */
  uv_poll_t server;         /* readable: connections wait */
  bool server_open;         /* the poll handle is not closed yet */
  int reserve_fd;           /* /dev/null, given up to refuse connections
                               when no descriptor is left; -1 if none */
  uint64_t fd_ceiling;      /* descriptors from here on are the run's
                               reserve (fd_limit.h): accepting waits */
  uv_timer_t fd_retry;      /* out of descriptors: accepting again */
  bool fd_retry_open;
  uint64_t fd_short_since;  /* uv_now accepting began to wait; 0: not */
  uint64_t settled_at;      /* uv_now of the last settle (syslog_accept.c) */
  char *readbuf;            /* SYSLOG_READ_SIZE */
  syslog_conn *conns;       /* newest first */
  size_t nconns;            /* in the list: ended ones stay until freed */
  size_t slots_taken;       /* connections not ended */

  syslog_dgram *dgram;      /* datagram sockets */

  uv_timer_t stop_timer;    /* stopping: ends connections that are quiet */
  bool stop_timer_open;
  uint64_t stopped_at;      /* uv_now */
  bool started, stopping;
  uint64_t connections, malformed, dropped;
  uint64_t empty;           /* frames or datagrams of no bytes: no message */
  /* Connections refused: the table full of senders, an address's share
   * full of senders, no descriptor; closed: silent to make room, a TLS
   * handshake or a first message late, idle; accepting waiting for a
   * descriptor (logged, no connection lost); TLS sessions that failed,
   * accepts that failed otherwise (logged). */
  syslog_tally refused, refused_address, refused_fd, evicted,
      handshake_late, message_late, idle_closed, fd_waits, tls_failed,
      accept_failed;
} syslog_listener;

/* One stream connection: a source of its own. */
struct syslog_conn {
  syslog_conn *next;        /* the listener's */
  syslog_listener *l;
  pl_source *src;
  syslog_stream h;
  uv_timer_t deadline;      /* the handshake, first message and idle ones */
  frame_reader frame;
  tls_session *tls;         /* tls:// only */
  buf tls_out;              /* what TLS sends back to the peer */
  char peer[SYSLOG_ADDR_TEXT]; /* "" on unix sockets */
  char label[160];          /* "127.0.0.1:5514", for log lines */
  uint64_t seq;             /* messages read: their positions */
  uint64_t waiting_since;   /* uv_now: opened, or last resumed, silent */
  uint64_t last_read;       /* uv_now */
  int open_handles;         /* handles whose close is pending */
  bool spoke;               /* a whole message (or malformed frame) came */
  bool held, ended, socket_closed, closing;
};

/* syslog_input.c: the listener may be done (stopping, all closed). */
void syslog_maybe_done(syslog_listener *l);
/* Counts an event in t and logs "input 'NAME': " and the text, with the
 * count so far, the first time and then at most once a second. */
void syslog_tally_note(syslog_listener *l, syslog_tally *t, const char *fmt,
                       ...) __attribute__((format(printf, 3, 4)));
/* Bytes that are no message: counted, and to the dead-letter path. */
void syslog_malformed(syslog_listener *l, const char *from, uint64_t position,
                      const char *bytes, size_t len, const char *reason);
/* A socket address as text: "127.0.0.1", "::1" (IPv4-mapped as IPv4). */
void syslog_addr_text(const struct sockaddr *sa, char *out, size_t len);
/* The socket address of a listener's configured address, and its
 * length. */
socklen_t syslog_sockaddr(const config_syslog *cfg,
                          struct sockaddr_storage *sa);
/* Takes the socket of `type` systemd passed for the listener's address,
 * if it did (systemd_listen.h): 1 with it in *fd (l->address then says
 * where it is bound), 0 when it passed none, -errno when it could not. */
int syslog_adopt(syslog_listener *l, const config_syslog *cfg, int type,
                 int *fd);
/* l->address from the address bound: "tcp://127.0.0.1:41234". */
void syslog_bound_address(syslog_listener *l, const struct sockaddr *sa);
/* A socket file left by a process that is gone is removed; a live one,
 * or any other file, is not: -1 with the reason. */
int syslog_clear_socket_path(const char *path, int type, char *why,
                             size_t len);

/* syslog_accept.c */
/* Makes the listening socket (bound, listening, not yet watched). */
int syslog_accept_listen(syslog_listener *l, const config_syslog *cfg,
                         char *why, size_t len);
/* Starts accepting. */
void syslog_accept_start(syslog_listener *l);
/* Stopping: takes the connections the kernel queued (refusing them,
 * counted, when no descriptor is left), then closes the socket. */
void syslog_accept_stop(syslog_listener *l);
/* Closes what accepting holds (idempotent). */
void syslog_accept_close(syslog_listener *l);

/* syslog_conn.c */
/* Serves an accepted socket (its peer "" on unix sockets); NULL, or why it
 * could not (out of memory, libuv refused the descriptor): the caller
 * then refuses it, closing fd. */
const char *syslog_conn_open(syslog_listener *l, int fd, const char *peer,
                             const char *label);
/* Whether it may be closed to make room: it has sent no whole message. */
bool syslog_conn_silent(const syslog_conn *c);
/* Holds or resumes reading (plugin.h: input_kind's hold). */
void syslog_conn_hold(syslog_conn *c, bool hold);
/* Reads what the kernel holds for it now (held or not); it ends if its
 * peer has closed. */
void syslog_conn_read_queued(syslog_conn *c);
/* Stopping, or closing it to make room: reads what the kernel holds, then
 * ends the connection; a message begun then is a dead letter, for why. */
void syslog_conn_drain(syslog_conn *c, const char *why);
/* Whether it has read nothing for ms (held connections are not quiet:
 * they have more to read). */
bool syslog_conn_quiet(const syslog_conn *c, uint64_t now, uint64_t ms);
/* Its source finished: closes it; it frees itself and its source. */
void syslog_conn_close(syslog_conn *c);

/* A stream connection between two pipelines of a reload: what its
 * syslog_conn held that goes on (syslog_carry.c). */
typedef struct syslog_carried {
  struct syslog_carried *next;
  int fd;                   /* a descriptor of its socket */
  frame_reader frame;       /* with the message begun and not handed on */
  tls_session *tls;
  char peer[SYSLOG_ADDR_TEXT];
  char label[160];
  uint64_t seq;
  bool spoke;
} syslog_carried;

/* Hands c's socket and state on (c ends, having handed on nothing more);
 * NULL, c untouched, when it cannot go: TLS bytes still going to the peer,
 * no descriptor or memory left. Call with what the kernel holds read
 * (syslog_conn_read_queued). */
syslog_carried *syslog_conn_carry(syslog_conn *c);
/* Serves a carried connection from where it was: NULL, or why it could
 * not (e is then the caller's, as it was). */
const char *syslog_conn_resume(syslog_listener *l, syslog_carried *e);

/* syslog_carry.c */
/* A reload's stop: hands the listener's socket fd to the next pipeline
 * (systemd_listen_keep) with, when an input of the next configuration
 * takes it, the open connections of a stream listener. False when it is
 * not a reload's, the socket is systemd's, or it cannot be kept: the
 * listener then stops as for good. */
bool syslog_carry_hand_over(syslog_listener *l, int fd);
/* The started listener serves what came with its socket: the number of
 * connections that go on. */
size_t syslog_carry_resume(syslog_listener *l);
/* A listener that claimed a kept socket and never started (the pipeline
 * could not be built) gives it back, with what came with it, for the
 * next one built. */
void syslog_carry_give_back(syslog_listener *l, int fd);
/* Closes the connections no listener took, each logged. */
void syslog_carry_drop(void *carry);
/* The datagram socket handed on is closed here, having counted `drops`
 * of the kernel's: the next listener counts from there. */
void syslog_carry_counted(syslog_listener *l, uint32_t drops);

/* syslog_dgram.c */
int syslog_dgram_open(syslog_listener *l, const config_syslog *cfg,
                      char *err, size_t errlen);
int syslog_dgram_start(syslog_listener *l, char *err, size_t errlen);
void syslog_dgram_hold(syslog_dgram *d, bool hold);
/* Stopping: reads what the kernel holds, then finishes the source. */
void syslog_dgram_drain(syslog_dgram *d);
/* Its socket's descriptor (-1: none). */
int syslog_dgram_socket(const syslog_dgram *d);
/* The source finished, or the pipeline is torn down: closes the socket. */
void syslog_dgram_close(syslog_dgram *d);
bool syslog_dgram_closed(const syslog_dgram *d);
/* The kernel's count of datagrams dropped into l->dropped. */
void syslog_dgram_count_drops(syslog_dgram *d);
void syslog_dgram_free(syslog_dgram *d);

#endif
