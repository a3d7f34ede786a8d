/*
 * syslog_dgram.c - a datagram socket of a syslog listener
 * (syslog_internal.h): UDP, or a Unix datagram socket such as /dev/log.
 *
 * libuv's UDP handle has no Unix datagrams, so the socket is our own,
 * polled on the loop, and read SYSLOG_DGRAM_BATCH datagrams per
 * recvmmsg(2). The kernel counts what it drops for a full buffer
 * (SO_MEMINFO), read whenever the counters are. Each
 * datagram is a message (frame_datagram), with its sender's address. The
 * socket is one source; holding it stops the polling, and the kernel's
 * buffer (receive_buffer) takes what comes meanwhile.
 */
#define _GNU_SOURCE /* recvmmsg */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/sock_diag.h>

#include "log.h"
#include "syslog_internal.h"

/* Batches read per readiness: other sockets get their turn. */
#define BATCHES_PER_WAKEUP 8

struct syslog_dgram {
  syslog_listener *l;
  int fd;
  uv_poll_t poll;
  bool poll_open, held, ended, closing, closed;
  pl_source *src;
  uint64_t seq;
  char *slots;              /* SYSLOG_DGRAM_BATCH of SYSLOG_DGRAM_SIZE */
  struct mmsghdr msgs[SYSLOG_DGRAM_BATCH];
  struct iovec iov[SYSLOG_DGRAM_BATCH];
  struct sockaddr_storage senders[SYSLOG_DGRAM_BATCH];
  struct sockaddr_storage last_sender; /* whose text `from` is */
  char from[SYSLOG_ADDR_TEXT];
  const char *sender;       /* the datagram's being taken: from, or NULL */
};

/* The kernel's buffer: SO_RCVBUFFORCE passes net.core.rmem_max when the
 * process may (CAP_NET_ADMIN); otherwise rmem_max caps it. */
static void size_buffer(int fd, uint64_t bytes)
{
  int size = bytes > (1u << 30) ? 1 << 30 : (int)bytes;

  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) != 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
}

static int bind_socket(syslog_dgram *d, const config_syslog *cfg, char *why,
                       size_t len)
{
  syslog_listener *l = d->l;
  struct sockaddr_storage sa;
  socklen_t salen = syslog_sockaddr(cfg, &sa);

  if (l->path && syslog_clear_socket_path(l->path, SOCK_DGRAM, why, len) != 0)
    return -1;
  if (bind(d->fd, (struct sockaddr *)&sa, salen) != 0) goto fail;
  if (l->path) {
    l->bound_path = true;
    if (chmod(l->path, cfg->socket_mode) != 0) goto fail;
    return 0;
  }
  salen = sizeof sa;
  if (getsockname(d->fd, (struct sockaddr *)&sa, &salen) == 0)
    syslog_bound_address(l, (struct sockaddr *)&sa);
  return 0;
fail:
  snprintf(why, len, "cannot listen on %s: %s", cfg->address, strerror(errno));
  return -1;
}

int syslog_dgram_open(syslog_listener *l, const config_syslog *cfg,
                      char *err, size_t errlen)
{
  syslog_dgram *d = calloc(1, sizeof *d);
  int family = l->transport == SYSLOG_UNIX_DGRAM ? AF_UNIX
                                                 : cfg->sockaddr.ss_family;
  int passed;

  if (!d || !(d->slots = malloc((size_t)SYSLOG_DGRAM_BATCH *
                                SYSLOG_DGRAM_SIZE))) {
    free(d);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  l->dgram = d;
  d->l = l;
  d->fd = -1;
  /* 1: systemd passed the socket, bound (its file is systemd's). */
  passed = syslog_adopt(l, cfg, SOCK_DGRAM, &d->fd);
  if (passed == 0)
    d->fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (d->fd < 0) {
    snprintf(err, errlen, "cannot make a socket for %s: %s", cfg->address,
             strerror(passed < 0 ? -passed : errno));
    return -1;
  }
  size_buffer(d->fd, cfg->receive_buffer);
  for (size_t i = 0; i < SYSLOG_DGRAM_BATCH; i++) {
    d->iov[i] = (struct iovec){d->slots + i * SYSLOG_DGRAM_SIZE,
                               SYSLOG_DGRAM_SIZE};
    d->msgs[i].msg_hdr = (struct msghdr){
      .msg_name = &d->senders[i], .msg_iov = &d->iov[i], .msg_iovlen = 1};
  }
  return passed ? 0 : bind_socket(d, cfg, err, errlen);
}

static void on_message(void *ud, const char *bytes, size_t len, unsigned piece)
{
  syslog_dgram *d = ud;
  input *in = pl_source_reader(d->src);

  if (piece <= 1) d->seq++;
  in->handler.record(in->handler.ud, in, bytes, len, d->seq, piece);
}

static void on_malformed(void *ud, const char *bytes, size_t len,
                         const char *reason)
{
  syslog_dgram *d = ud;

  syslog_malformed(d->l, d->sender, ++d->seq, bytes, len, reason);
}

/* The sender's address as text: the last sender's is kept, as datagrams
 * tend to come in runs from one. */
static const char *sender(syslog_dgram *d, const struct msghdr *h)
{
  const struct sockaddr *sa = h->msg_name;

  if (h->msg_namelen == 0 ||
      (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
    return NULL;
  if (memcmp(&d->last_sender, sa, h->msg_namelen) != 0) {
    memcpy(&d->last_sender, sa, h->msg_namelen);
    syslog_addr_text(sa, d->from, sizeof d->from);
  }
  return d->from;
}

void syslog_dgram_count_drops(syslog_dgram *d)
{
  uint32_t meminfo[SK_MEMINFO_VARS];
  socklen_t len = sizeof meminfo;

  if (d->fd >= 0 &&
      getsockopt(d->fd, SOL_SOCKET, SO_MEMINFO, meminfo, &len) == 0 &&
      len > SK_MEMINFO_DROPS * sizeof meminfo[0])
    d->l->dropped = (uint32_t)(meminfo[SK_MEMINFO_DROPS] - d->l->drops_before);
}

static void on_empty(void *ud)
{
  syslog_dgram *d = ud;

  d->l->empty++;
}

static void take(syslog_dgram *d, struct mmsghdr *m)
{
  frame_handler h = {on_message, on_malformed, d, on_empty};
  const char *bytes = m->msg_hdr.msg_iov->iov_base;

  d->sender = sender(d, &m->msg_hdr);
  pl_source_set_sender(d->src, d->sender);
  if (m->msg_hdr.msg_flags & MSG_TRUNC) {
    char why[128];
    snprintf(why, sizeof why, "a datagram longer than %u bytes: the kernel "
             "kept its first %u", SYSLOG_DGRAM_SIZE, SYSLOG_DGRAM_SIZE);
    on_malformed(d, bytes, m->msg_len, why);
    return;
  }
  frame_datagram(d->l->max_line, d->l->keep_cr, bytes, m->msg_len, &h);
}

/* One recvmmsg; the datagrams' records go to the worker together. Returns
 * the bytes read; 0 when none waited; -1 on an error. */
static ssize_t receive(syslog_dgram *d)
{
  ssize_t bytes = 0;
  int n;

  for (size_t i = 0; i < SYSLOG_DGRAM_BATCH; i++)
    d->msgs[i].msg_hdr.msg_namelen = sizeof d->senders[i];
  do {
    n = recvmmsg(d->fd, d->msgs, SYSLOG_DGRAM_BATCH, MSG_DONTWAIT, NULL);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
  for (int i = 0; i < n; i++) {
    take(d, &d->msgs[i]);
    bytes += d->msgs[i].msg_len;
  }
  pl_source_chunk_done(d->src);
  pl_source_set_sender(d->src, d->sender = NULL);
  return bytes > 0 ? bytes : n; /* empty datagrams still count as read */
}

static void on_readable(uv_poll_t *p, int status, int events)
{
  syslog_dgram *d = p->data;

  (void)events;
  if (status < 0) {
    log_error("input '%s': polling %s: %s", pl_input_name(d->l->pi), d->l->address,
            uv_strerror(status));
    return;
  }
  /* Held by a job coming back? hold_or_go stops the polling in between. */
  for (int i = 0; i < BATCHES_PER_WAKEUP && !d->held; i++) {
    ssize_t n = receive(d);
    if (n < 0)
      log_error("input '%s': reading %s: %s", pl_input_name(d->l->pi), d->l->address,
              strerror(errno));
    if (n <= 0) break;
  }
}

int syslog_dgram_start(syslog_listener *l, char *err, size_t errlen)
{
  syslog_dgram *d = l->dgram;
  int rc;

  if (!(d->src = pl_source_new(l->pi))) {
    snprintf(err, errlen, "input '%s': out of memory", pl_input_name(l->pi));
    return -1;
  }
  rc = uv_poll_init(pl_input_loop(l->pi), &d->poll, d->fd);
  if (rc == 0) {
    d->poll_open = true;
    d->poll.data = d;
    rc = uv_poll_start(&d->poll, UV_READABLE, on_readable);
  }
  if (rc != 0) {
    snprintf(err, errlen, "input '%s': cannot poll %s: %s", pl_input_name(l->pi),
             l->address, uv_strerror(rc));
    return -1;
  }
  if (pl_input_held(l->pi)) syslog_dgram_hold(d, true);
  return 0;
}

void syslog_dgram_hold(syslog_dgram *d, bool hold)
{
  if (d->ended || !d->poll_open || hold == d->held) return;
  d->held = hold;
  if (hold) uv_poll_stop(&d->poll);
  else uv_poll_start(&d->poll, UV_READABLE, on_readable);
}

int syslog_dgram_socket(const syslog_dgram *d)
{
  return d->fd;
}

void syslog_dgram_drain(syslog_dgram *d)
{
  int size = 0;
  socklen_t len = sizeof size;
  int64_t budget;
  input *in;

  if (d->ended || !d->src) return;
  d->ended = true;
  /* What the kernel held when the stop came: a sender that goes on
   * cannot hold the stop (its buffer's worth at most). */
  getsockopt(d->fd, SOL_SOCKET, SO_RCVBUF, &size, &len);
  budget = size > 0 ? size : 1 << 20;
  while (budget > 0) {
    ssize_t n = receive(d);
    if (n <= 0) break;
    budget -= n;
  }
  uv_poll_stop(&d->poll);
  in = pl_source_reader(d->src);
  in->handler.finished(in->handler.ud, in, NULL);
}

/* Closes the socket and removes its file. */
static void release_socket(syslog_dgram *d)
{
  syslog_dgram_count_drops(d);
  syslog_carry_counted(d->l, d->l->drops_before + (uint32_t)d->l->dropped);
  if (d->fd >= 0) close(d->fd);
  d->fd = -1;
  if (d->l->bound_path) unlink(d->l->path);
  d->l->bound_path = false;
  d->closed = true;
}

static void on_poll_closed(uv_handle_t *h)
{
  syslog_dgram *d = h->data;

  release_socket(d);
  if (d->src) pl_source_free(d->src);
  d->src = NULL;
  syslog_maybe_done(d->l);
}

void syslog_dgram_close(syslog_dgram *d)
{
  if (d->closing) return;
  d->closing = true;
  if (d->poll_open) {
    uv_close((uv_handle_t *)&d->poll, on_poll_closed);
    return;
  }
  release_socket(d);
}

bool syslog_dgram_closed(const syslog_dgram *d)
{
  return d->closed;
}

void syslog_dgram_free(syslog_dgram *d)
{
  if (!d) return;
  if (!d->closed) release_socket(d);
  free(d->slots);
  free(d);
}
