/* router.c - see router.h. */
#include "router.h"

#include <stdio.h>
#include <string.h>

#include "le.h"

void router_init(router *r, router_output *outputs, size_t noutputs,
                 dead_letter *dl)
{
  r->outputs = outputs;
  r->noutputs = noutputs;
  r->dl = dl;
  r->batch = (msg_batch){0};
  r->counts = NULL;
  msg_init(&r->plain);
}

bool router_topic_valid(const char *s, size_t len)
{
  if (len == 0 || len > 249) return false;
  for (size_t i = 0; i < len; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
          (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' ||
          s[i] == '-'))
      return false;
  return true;
}

/* The routing head (router.h says its layout), rendered in place.
 * NULL, or why it cannot be made. */
static const char *write_head(const router_output *o, const msg *m, buf *b)
{
  size_t start = b->len, len;
  char n[4] = {0};

  if (!buf_append(b, n, 2)) return "out of memory";
  if (!o->topic_static) {
    if (!record_template_render(o->topic, m, b)) return "out of memory";
    len = b->len - start - 2;
    if (!router_topic_valid(b->data + start + 2, len))
      return "the topic template gives no valid Kafka topic name (1 to 249 "
             "of a-z, A-Z, 0-9, '.', '_' and '-')";
    le_put(b->data + start, len, 2);
  }
  if (!buf_append(b, n, 4)) return "out of memory";
  if (o->key) {
    size_t at = b->len;
    if (!record_template_render(o->key, m, b)) return "out of memory";
    len = b->len - at;
    if (len >= UINT32_MAX) return "the key is longer than 4 GiB";
    le_put(b->data + at - 4, len + 1, 4);
  }
  return NULL;
}

bool router_head_parse(const char *bytes, size_t head, router_head *h)
{
  size_t topic_len, key_field;

  if (head < 6) return false;
  topic_len = le_get(bytes, 2);
  if (2 + topic_len + 4 > head) return false;
  key_field = le_get(bytes + 2 + topic_len, 4);
  if (2 + topic_len + 4 + (key_field ? key_field - 1 : 0) != head) return false;
  h->topic = bytes + 2;
  h->topic_len = topic_len;
  h->key = key_field ? bytes + 2 + topic_len + 4 : NULL;
  h->key_len = key_field ? key_field - 1 : 0;
  return true;
}

bool router_head_append(buf *b, const char *topic, size_t topic_len,
                        const char *key, size_t key_len)
{
  char n[4];

  if (topic_len > 249 || key_len >= UINT32_MAX) return false;
  le_put(n, topic_len, 2);
  if (!buf_append(b, n, 2) || !buf_append(b, topic, topic_len)) return false;
  le_put(n, key ? key_len + 1 : 0, 4);
  return buf_append(b, n, 4) && (!key || buf_append(b, key, key_len));
}

static void encoding_failed(router *r, size_t out, const msg *m,
                            const char *stage, const char *name,
                            const char *reason)
{
  r->counts->outputs[out].failed++;
  dead_letter_write(r->dl, stage, name, reason, &m->origin);
}

/* Encodes m for output o straight into its sink's queue, after the
 * record's routing head if the output takes one. */
static void deliver(router *r, size_t out, const msg *m)
{
  router_output *o = &r->outputs[out];
  buf *b = output_buf(o->sink);
  size_t start = b->len, head = 0;

  if (o->topic) {
    const char *why = write_head(o, m, b);
    if (why) {
      b->len = start;
      encoding_failed(r, out, m, "output", o->name, why);
      return;
    }
    head = b->len - start;
  }
  if (o->encoder) {
    sandbox_result res;
    sandbox_encode(o->encoder, m, b, &res);
    if (res.status == SANDBOX_SKIPPED) {
      b->len = start;
      r->counts->outputs[out].skipped++;
      return;
    }
    if (res.status != SANDBOX_OK) {
      b->len = start;
      encoding_failed(r, out, m, "encoder", o->encoder_name, res.reason);
      return;
    }
  } else {
    buf_append(b, msg_str(m, m->payload), m->payload.len);
  }
  if (o->newline) buf_append(b, "\n", 1);
  if (head) output_commit_routed(o->sink, &m->origin, (uint32_t)head);
  else output_commit(o->sink, &m->origin, false);
}

static void route(router *r, const msg *m)
{
  bool matched = false;

  for (size_t i = 0; i < r->noutputs; i++) {
    if (!matcher_eval(r->outputs[i].match, m)) continue;
    matched = true;
    deliver(r, i, m);
  }
  if (!matched) r->counts->unrouted++;
}

static void add_text_field(msg *m, const char *name, const char *value)
{
  msg_field *f;
  msg_span s;

  if (!name || !value || !msg_store(m, value, strlen(value), &s)) return;
  f = msg_add_field(m, name, strlen(name), MSG_STRING, 1);
  if (f) msg_field_values(m, f)[0].s = s;
}

/* Where the message came from: the file read, the sender, the listener,
 * in the fields the input names. */
static void add_origin(const router_input *ri, msg *m)
{
  add_text_field(m, ri->path_field, m->origin.file);
  add_text_field(m, ri->sender_field, m->origin.from);
  add_text_field(m, ri->listener_field, ri->name);
}

void router_record(router *r, router_input *ri, const msg_origin *o,
                   unsigned piece)
{
  router_counts *c = r->counts;
  sandbox_result res;

  if (piece <= 1) c->records++;
  c->overlong += piece == 1;
  if (piece > 1 && ri->long_lines == LONG_LINES_TRUNCATE) {
    c->truncated++;
    return;
  }
  if (piece && ri->long_lines == LONG_LINES_DEAD_LETTER) {
    char reason[128];
    snprintf(reason, sizeof reason, "line longer than max_line (%zu bytes): "
             "piece %u", ri->max_line, piece);
    c->dead++;
    dead_letter_write(r->dl, "input", ri->name, reason, o);
    return;
  }
  if (!ri->decoder) {
    msg_reset(&r->plain);
    msg_store(&r->plain, o->bytes, o->len, &r->plain.payload);
    r->plain.timestamp = msg_now_ns();
    r->plain.origin = *o;
    add_origin(ri, &r->plain);
    route(r, &r->plain);
    return;
  }
  msg_batch_clear(&r->batch);
  sandbox_decode(ri->decoder, o, &r->batch, &res);
  if (res.status != SANDBOX_OK) {
    c->dead++;
    dead_letter_write(r->dl, "decoder", ri->decoder_name, res.reason, o);
    return;
  }
  for (uint32_t i = 0; i < r->batch.len; i++) {
    add_origin(ri, &r->batch.msgs[i]);
    route(r, &r->batch.msgs[i]);
  }
  msg_batch_trim(&r->batch, 64);
}

void router_input_free(router_input *ri)
{
  sandbox_destroy(ri->decoder);
  ri->decoder = NULL;
}

void router_free(router *r)
{
  for (size_t i = 0; i < r->noutputs; i++) {
    sandbox_destroy(r->outputs[i].encoder);
    matcher_free(r->outputs[i].match);
    record_template_free(r->outputs[i].topic);
    record_template_free(r->outputs[i].key);
  }
  msg_batch_free(&r->batch);
  msg_free(&r->plain);
}
