/*
 * syslog_carry.c - stream connections carried through a reload
 * (syslog_internal.h).
 *
 * Ending every connection at a reload loses records: what a sender writes
 * after the last read meets a closed socket, and is lost with the reset,
 * and a sender that keeps writing (rsyslog's omfwd, a relay) holds the
 * stop for half of stop_timeout_ms first. So when an input of the next
 * configuration takes the listening socket (its address, as
 * systemd_listen_claim matches it), each open connection goes on with it:
 * the old listener reads what the kernel holds, then hands on a descriptor
 * of the socket with what it has not handed on yet (the frame reader with
 * the message begun, the TLS session, the message count), and the new
 * listener reads on from there. The records read before are the old
 * pipeline's, which delivers them before the new one starts, so each
 * connection's order holds, and what the sender writes meanwhile waits in
 * the kernel.
 *
 * A carried connection keeps the framing, max_line and TLS session it
 * began with; the new configuration's are for new connections. One that
 * cannot be carried (TLS bytes still going out, no descriptor left) ends
 * as at a stop.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "syslog_internal.h"
#include "systemd_listen.h"

struct syslog_carry {
  syslog_carried *first;
  /* The kernel counts a socket's dropped datagrams from its making: the
   * count the last listener reported, which the next one counts from. */
  uint32_t drops;
};

/* Whether an input of the next configuration takes the listening socket. */
static bool next_takes(const syslog_listener *l)
{
  const config *next = pl_input_next_config(l->pi);
  struct sockaddr_storage sa;

  for (size_t i = 0; next && i < next->nplugins; i++) {
    const config_plugin *p = &next->plugins[i];
    const config_syslog *cfg = p->settings;
    if (p->role != PLUGIN_INPUT || p->type->input != &syslog_input_kind ||
        cfg->transport == SYSLOG_UDP || cfg->transport == SYSLOG_UNIX_DGRAM)
      continue;
    syslog_sockaddr(cfg, &sa);
    if (systemd_listen_would_claim(l->server_fd, SOCK_STREAM,
                                   (struct sockaddr *)&sa))
      return true;
  }
  return false;
}

static void free_carried(syslog_carried *e)
{
  close(e->fd);
  frame_free(&e->frame);
  tls_session_free(e->tls);
  free(e);
}

void syslog_carry_drop(void *carry)
{
  syslog_carry *k = carry;

  while (k->first) {
    syslog_carried *e = k->first;
    k->first = e->next;
    log_warning("reload: no listener took the connection from %s: closed%s",
                e->label, e->frame.held.len ? ", and the message it had "
                "begun with it" : "");
    free_carried(e);
  }
  free(k);
}

bool syslog_carry_hand_over(syslog_listener *l, int fd)
{
  syslog_carry *k = NULL;
  syslog_carried **tail;

  if (!pl_input_handing_over(l->pi) || l->passed || fd < 0) return false;
  if ((l->dgram || next_takes(l)) && !(k = calloc(1, sizeof *k)))
    log_warning("input '%s': out of memory: %s", pl_input_name(l->pi),
                l->dgram ? "the next run counts the kernel's drops on its "
                           "socket from its making"
                         : "its connections end with the reload");
  if (systemd_listen_keep(fd, k, syslog_carry_drop) != 0) {
    log_warning("input '%s': cannot keep its socket through the reload (%s): "
                "closing it; the next listener binds its own",
                pl_input_name(l->pi), strerror(errno));
    free(k);
    return false;
  }
  l->bound_path = false; /* its file stays with it */
  l->handing = l->dgram ? k : NULL;
  if (!k || l->dgram) return true;
  tail = &k->first;
  for (syslog_conn *c = l->conns; c; c = c->next) {
    syslog_carried *e;
    if (c->ended) continue;
    syslog_conn_read_queued(c);
    if ((e = syslog_conn_carry(c))) {
      *tail = e;
      tail = &e->next;
    }
  }
  return true;
}

size_t syslog_carry_resume(syslog_listener *l)
{
  syslog_carry *k = l->carried;
  size_t n = 0;
  const char *why;

  if (!k) return 0;
  l->carried = NULL;
  l->drops_before = k->drops;
  while (k->first) {
    syslog_carried *e = k->first;
    k->first = e->next;
    if (!(why = syslog_conn_resume(l, e))) {
      free(e);
      n++;
      continue;
    }
    log_warning("input '%s': cannot go on reading the connection from %s "
                "after the reload (%s): closed", pl_input_name(l->pi),
                e->label, why);
    free_carried(e);
  }
  free(k);
  return n;
}

void syslog_carry_give_back(syslog_listener *l, int fd)
{
  if (l->started || !l->handed_over || fd < 0) return;
  if (systemd_listen_keep(fd, l->carried,
                          l->carried ? syslog_carry_drop : NULL) == 0)
    l->carried = NULL;
}

void syslog_carry_counted(syslog_listener *l, uint32_t drops)
{
  if (l->handing) l->handing->drops = drops;
  l->handing = NULL;
}
