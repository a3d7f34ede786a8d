/*
 * syslog_udp_out.c - the syslog_output over UDP: one datagram per record,
 * delivered once sendto(2) took it, the disk buffer's records first.
 *
 * The socket is not connected, so an ICMP port unreachable from a
 * receiver that is not listening says nothing (as with omfwd): only errors
 * of the sending host itself (no route, a firewall's EPERM) make the
 * receiver away, with the back-off and the disk buffer of a stream.
 */
#include <stdio.h>
#include <string.h>

#include "syslog_internal.h"

/* Full socket buffer: the next try. */
#define UDP_RETRY_MS 10

/* The largest UDP payload: 65535 less the IP and UDP headers. */
static size_t datagram_max(const syslog_output *so)
{
  return so->peer.ss_family == AF_INET6 ? 65527 : 65507;
}

typedef enum { SENT, WAIT, REFUSED, AWAY } udp_result;

static udp_result send_one(syslog_output *so, const char *payload,
                           size_t len, char *why, size_t whylen)
{
  uv_buf_t b = uv_buf_init((char *)payload, (unsigned)len);
  int rc;

  if (len > datagram_max(so)) {
    snprintf(why, whylen, "the record (%zu bytes) is larger than a UDP "
             "datagram takes (%zu bytes)", len, datagram_max(so));
    return REFUSED;
  }
  rc = uv_udp_try_send(&so->udp, &b, 1, (const struct sockaddr *)&so->peer);
  if (rc >= 0) return SENT;
  snprintf(why, whylen, "sendto: %s", uv_strerror(rc));
  if (rc == UV_EAGAIN || rc == UV_ENOBUFS) return WAIT;
  return rc == UV_EMSGSIZE ? REFUSED : AWAY;
}

/* The disk buffer's records; false when the output must wait. */
/* WAIT (the socket's buffer is full) and AWAY (the host cannot send)
 * stop the sending for now: the retry timer, or the receiver's loss. True
 * when res is one of them. */
static bool stops(syslog_output *so, udp_result res, const char *why)
{
  if (res == WAIT) so_wake_later(so, UDP_RETRY_MS);
  else if (res == AWAY) so_down(so, why);
  return res == WAIT || res == AWAY;
}

static bool send_from_disk(syslog_output *so)
{
  char why[256];

  while (spool_backlog(so->spool)) {
    spool_origin from;
    const char *bytes;
    size_t len;
    int got = spool_front(so->spool, &from, &bytes, &len, why, sizeof why);
    udp_result res;
    output_record r = {0};
    if (got < 0) {
      output_fail(so->o, why);
      return false;
    }
    if (got == 0) break;
    if (!so_cap_allows(so, len - from.head)) return false;
    res = send_one(so, bytes + from.head, len - from.head, why, sizeof why);
    if (stops(so, res, why)) return false;
    spool_ack(so->spool, spool_next(so->spool));
    so->sent++;
    if (res == REFUSED) {
      r.input = from.input;
      r.position = from.position;
      r.is_offset = from.is_offset;
      so_refuse(so, &r, bytes + from.head, len - from.head, why);
      continue;
    }
    so->delivered++;
    so->from_disk++;
    so->o->records_written++;
  }
  so_note_backlog(so);
  return true;
}

bool so_udp_send(syslog_output *so)
{
  output_sink *o = so->o;
  char why[256];

  if (!so->udp_ready) return false;
  if (so->spool && !send_from_disk(so)) return false;
  for (;;) {
    const char *bytes;
    size_t len;
    const output_record *r = output_front(o, &bytes, &len);
    output_record rec;
    udp_result res;
    if (!r || !so_cap_allows(so, len - r->head)) return true;
    rec = *r;
    res = send_one(so, bytes + rec.head, len - rec.head, why, sizeof why);
    if (stops(so, res, why)) return false;
    output_take(o);
    so->sent++;
    if (res == REFUSED) {
      so_refuse(so, &rec, bytes + rec.head, len - rec.head, why);
    } else {
      so->delivered++;
      output_delivered(o, &rec, uv_hrtime() / 1000);
    }
  }
}

int so_udp_open(syslog_output *so, char *err, size_t errlen)
{
  int rc = uv_udp_init(so->loop, &so->udp);

  if (rc != 0) {
    snprintf(err, errlen, "cannot make a UDP socket: %s", uv_strerror(rc));
    return -1;
  }
  so->udp.data = so;
  uv_unref((uv_handle_t *)&so->udp);
  return 0;
}
