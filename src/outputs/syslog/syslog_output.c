/*
 * syslog_output.c - the syslog_output (syslog_output.h): a transport of
 * the output queue (output.h) that forwards records to a syslog receiver,
 * on the loop thread. The connection is syslog_conn_out.c's, the records
 * on it syslog_stream_out.c's (or syslog_udp_out.c's), the disk buffer
 * syslog_spool_out.c's; here the transport's calls and opening.
 */
#include "syslog_output.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "log.h"
#include "syslog_internal.h"

static bool queue_empty(const output_sink *o)
{
  return output_front(o, &(const char *){NULL}, &(size_t){0}) == NULL;
}

/* Records in flight, or waiting to be made durable, keep the run going,
 * and so does the disk buffer's backlog while the receiver is there to
 * take it; once the receiver is away, the disk buffer keeps it for the
 * next run. */
static bool busy(const output_sink *o)
{
  const syslog_output *so = o->tx_state;

  if (o->state == OUTPUT_FAILED || so->stopped) return false;
  if (so->nents > so->ent_head) return true;
  if (!so->spool) return false;
  return spool_unsynced(so->spool) > 0 ||
         (!so->away && spool_backlog(so->spool));
}

void so_update_ref(syslog_output *so)
{
  bool hold = busy(so->o) || !queue_empty(so->o);
  void (*ref)(uv_handle_t *) = hold ? uv_ref : uv_unref;

  if (!so->handles_open) return;
  ref((uv_handle_t *)&so->retry);
  ref((uv_handle_t *)&so->deadline);
  ref((uv_handle_t *)&so->later);
  if (so->conn) ref((uv_handle_t *)&so->conn->tcp);
}

void so_wake(syslog_output *so)
{
  if (!so->stopped && so->o->state != OUTPUT_FAILED) output_wake(so->o);
  so_update_ref(so);
}

static void on_later(uv_timer_t *t)
{
  so_wake(t->data);
}

void so_wake_later(syslog_output *so, uint64_t ms)
{
  if (so->handles_open && !uv_is_active((uv_handle_t *)&so->later))
    uv_timer_start(&so->later, on_later, ms, 0);
}

bool so_cap_allows(syslog_output *so, size_t len)
{
  uint64_t wait_ms;

  if (rate_cap_allows(&so->cap, len, uv_hrtime(), &wait_ms)) {
    rate_cap_spend(&so->cap, len);
    return true;
  }
  so_wake_later(so, wait_ms ? wait_ms : 1);
  return false;
}

void so_refuse(syslog_output *so, const output_record *r, const char *bytes,
               size_t len, const char *why)
{
  so->refused++;
  output_undeliverable(so->o, r, bytes, len, why);
}

static void send_records(output_sink *o)
{
  syslog_output *so = o->tx_state;
  bool done;

  if (so->stopped) return;
  done = so->protocol == SO_UDP ? so_udp_send(so) : so_stream_send(so);
  if (o->state == OUTPUT_FAILED) return;
  if (!done && so->away && so->spool) done = so_spill_queue(so);
  if (o->state == OUTPUT_FAILED) return;
  so_sync_spilled(so);
  if (o->state == OUTPUT_FAILED) return;
  o->state = queue_empty(o) ? OUTPUT_READY : OUTPUT_WAITING;
  if (!so->conn && !so->udp_ready) so_conn_start(so);
  so_update_ref(so);
}

/* A record the stop leaves: to the disk buffer, else back to an input that
 * can read it again, else to the dead-letter path. */
static void keep(syslog_output *so, const output_record *r,
                 const char *payload, size_t len)
{
  spool_origin from = {r->input, r->position, r->is_offset, 0};
  char err[256];

  if (so->spool && spool_put(so->spool, &from, r->ack, payload, len, err,
                             sizeof err) == DQ_OK)
    return;
  if (checkpoint_rereadable(r->ack)) {
    output_release(so->o, r);
    return;
  }
  output_undeliverable(so->o, r, payload, len, so->o->error);
}

static void keep_entry(syslog_output *so, so_entry *e, const char *payload,
                       size_t len)
{
  keep(so, &e->r, payload, len);
}

/* The stop deadline, or a failure: what the output holds is kept (see
 * keep) in its order: the connection's records, then the queue's (from a
 * copy: a dead letter may be queued on another sink meanwhile). */
static void fail(output_sink *o, const char *reason)
{
  syslog_output *so = o->tx_state;
  const output_record *r;
  const char *bytes;
  size_t len;

  so->stopped = true;
  so_conn_drop(so, NULL);
  so_drop_entries(so, keep_entry);
  while ((r = output_front(o, &bytes, &len))) {
    output_record rec = *r;
    so->scratch.len = 0;
    buf_append(&so->scratch, bytes + rec.head, len - rec.head);
    output_take(o);
    keep(so, &rec, so->scratch.data ? so->scratch.data : "",
         so->scratch.len);
  }
  if (!so->spool) return;
  so_sync_at_stop(so, reason);
  so_log_backlog(so, "stopped; the disk buffer keeps what the receiver did "
                 "not take for the next run");
}

static void save_cursor(output_sink *o)
{
  syslog_output *so = o->tx_state;
  char err[256];

  if (so->spool && spool_save(so->spool, err, sizeof err) != 0)
    log_warning("%s: %s", so->name, err);
}

static void stats(const output_sink *o, output_tx_stats *st)
{
  const syslog_output *so = o->tx_state;

  *st = (output_tx_stats){so->sent, so->delivered, so->refused,
                          so->nents - so->ent_head, 0, so->spool != NULL, 0,
                          0, 0, so->from_disk, {0}, so->connects,
                          so->connect_failures, 0};
  if (so->nents > so->ent_head)
    st->in_flight_bytes = so->plain.len - so->ents[so->ent_head].start;
  latency_report(&so->latency, st->latency_ms);
  if (so->spool) {
    spool_stats_t ss;
    spool_stats(so->spool, &ss);
    st->disk_records = ss.dq.records;
    st->disk_bytes = ss.dq.bytes;
    st->disk_put = ss.put;
    st->disk_dropped = ss.dq.dropped;
  }
}

static void summary(output_sink *o, char *line, size_t len)
{
  syslog_output *so = o->tx_state;
  output_tx_stats st;
  int n;

  stats(o, &st);
  n = snprintf(line, len, "syslog %s: %" PRIu64 " sent, %" PRIu64
               " delivered (%" PRIu64 " of them from the disk buffer), %"
               PRIu64 " refused; %" PRIu64 " connections, %" PRIu64
               " failed connection attempts; delivery latency p50 %.1f ms, "
               "p99 %.1f ms, max %.1f ms", so->address, st.sent,
               st.delivered, st.disk_delivered, st.refused, st.connects,
               st.connect_failures, st.latency_ms[0], st.latency_ms[2],
               st.latency_ms[4]);
  if (n > 0 && (size_t)n < len)
    output_summary_tail(o, &st, line + n, len - (size_t)n);
}

static void close_handles(output_sink *o)
{
  syslog_output *so = o->tx_state;

  if (!so->handles_open) return;
  so->handles_open = false;
  so->stopped = true;
  so_conn_drop(so, NULL);
  if (so->resolving) uv_cancel((uv_req_t *)&so->resolve);
  uv_close((uv_handle_t *)&so->retry, NULL);
  uv_close((uv_handle_t *)&so->deadline, NULL);
  uv_close((uv_handle_t *)&so->later, NULL);
  if (so->protocol == SO_UDP) uv_close((uv_handle_t *)&so->udp, NULL);
}

static int close_output(output_sink *o)
{
  syslog_output *so = o->tx_state;
  int rc = 0;

  if (spool_close(so->spool) != 0) rc = -1;
  tls_client_free(so->tls);
  uv_freeaddrinfo(so->addrs);
  buf_free(&so->plain);
  buf_free(&so->scratch);
  free(so->ents);
  free(so->name);
  free(so->address);
  free(so->host);
  free(so->port);
  free(so->server_name);
  free(so);
  return rc;
}

static const output_transport syslog_transport = {
  send_records, busy, fail, save_cursor, summary, stats, close_handles,
  close_output, NULL /* no write_lines: it sends records one by one */
};

/* ---- opening ---- */

static int init_timers(syslog_output *so, uv_loop_t *loop, char *err,
                       size_t errlen)
{
  int rc;

  if ((rc = uv_timer_init(loop, &so->retry)) != 0 ||
      (rc = uv_timer_init(loop, &so->deadline)) != 0 ||
      (rc = uv_timer_init(loop, &so->later)) != 0) {
    snprintf(err, errlen, "cannot make a timer: %s", uv_strerror(rc));
    return -1;
  }
  so->retry.data = so->deadline.data = so->later.data = so;
  so->handles_open = true;
  return 0;
}

static tls_client *make_tls(const syslog_output_config *cfg, char *err,
                            size_t errlen)
{
  return tls_client_new(cfg->tls_ca, cfg->tls_cert, cfg->tls_key, err,
                        errlen);
}

static int open_spool(syslog_output *so, const syslog_output_config *cfg,
                      const char *dir, char *err, size_t errlen)
{
  spool_stats_t st;

  if (spool_open(&so->spool, dir, cfg->buffer.max_bytes,
                 cfg->buffer.segment_bytes, err, errlen) != 0)
    return -1;
  if (cfg->buffer.when_full == DISK_BUFFER_DROP_OLDEST)
    spool_drop_oldest(so->spool);
  spool_stats(so->spool, &st);
  if (st.dq.records > 0) {
    log_msg("%s: the disk buffer %s holds %" PRIu64 " records (%" PRIu64
            " bytes) from an earlier run; they go out first", so->name, dir,
            st.dq.records, st.dq.bytes);
    so->spool_logged = true;
  }
  return 0;
}

int syslog_output_open(output_sink *o, uv_loop_t *loop, const char *name,
                       const syslog_output_config *cfg,
                       const char *buffer_dir, output_events ev, char *err,
                       size_t errlen)
{
  syslog_output *so = calloc(1, sizeof *so);

  if (!so || !(so->name = strdup(name)) ||
      !(so->address = strdup(cfg->address)) ||
      !(so->host = strdup(cfg->host)) || !(so->port = strdup(cfg->port)) ||
      !(so->server_name = strdup(cfg->tls_server_name ? cfg->tls_server_name
                                                      : cfg->host))) {
    if (so) {
      free(so->name);
      free(so->address);
      free(so->host);
      free(so->port);
    }
    free(so);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  so->protocol = cfg->protocol;
  so->framing = cfg->framing;
  so->backoff_min_ms = so->backoff_ms = cfg->reconnect_min_ms;
  so->backoff_max_ms = cfg->reconnect_max_ms;
  so->connect_timeout_ms = cfg->connect_timeout_ms;
  so->send_timeout_ms = cfg->send_timeout_ms;
  rate_cap_init(&so->cap, cfg->bytes_per_second, 0, uv_hrtime());
  so->loop = loop;
  output_open_transport(o, loop, name, &syslog_transport, so, ev);
  so->o = o;
  /* On failure the sink stays as it is: the pipeline's teardown closes
   * its handles and then frees it, as it does every sink's. The disk
   * buffer comes first: when another process has it, this one stops
   * before it connects. */
  if ((buffer_dir && open_spool(so, cfg, buffer_dir, err, errlen) != 0) ||
      init_timers(so, loop, err, errlen) != 0 ||
      (cfg->protocol == SO_TLS && !(so->tls = make_tls(cfg, err, errlen))) ||
      (cfg->protocol == SO_UDP && so_udp_open(so, err, errlen) != 0))
    return -1;
  so_conn_start(so);
  so_update_ref(so);
  return 0;
}

int syslog_output_check(const syslog_output_config *cfg, char *err,
                        size_t errlen)
{
  tls_client *tls;

  if (cfg->protocol != SO_TLS) return 0;
  if (!(tls = make_tls(cfg, err, errlen))) return -1;
  tls_client_free(tls);
  return 0;
}
