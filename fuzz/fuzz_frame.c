/*
 * fuzz_frame.c - RFC 6587 framing (src/net/frame.c) against a reference
 * model.
 *
 * Input: 4 bytes of settings, then the stream.
 *   [0] framing (AUTO, OCTET_COUNTED, NEWLINE) and keep_cr
 *   [1] max: 1..40, or 1024
 *   [2..3] the seed of the cuts: the stream is fed in random reads of
 *          1..17 bytes, sometimes bigger, then frame_end; and again in
 *          the same reads, then frame_cut, which must give the same
 *          bytes at the end, none of them as a whole message.
 * The events it gives (messages with their piece numbers, malformed bytes
 * with their reasons) must be exactly those of model(), which reads the
 * whole stream at once by frame.h's rules, in a few plain lines each.
 * A datagram of the same bytes is checked too (frame_datagram).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One event: a message or its piece, or malformed bytes. */
typedef struct {
  bool bad;
  unsigned piece;
  size_t off, len;       /* in the events' byte store */
  char reason[128];
} event;

typedef struct {
  event *ev;
  size_t n, cap;
  buf bytes;
} events;

static void push(events *e, bool bad, unsigned piece, const char *bytes,
                 size_t len, const char *reason)
{
  if (e->n == e->cap) {
    e->cap = e->cap ? 2 * e->cap : 64;
    e->ev = realloc(e->ev, e->cap * sizeof *e->ev);
    if (!e->ev) abort();
  }
  event *v = &e->ev[e->n++];
  *v = (event){.bad = bad, .piece = piece, .off = e->bytes.len, .len = len};
  snprintf(v->reason, sizeof v->reason, "%s", reason ? reason : "");
  if (!buf_append(&e->bytes, bytes, len)) abort();
}

static void on_message(void *ud, const char *bytes, size_t len, unsigned piece)
{
  push(ud, false, piece, bytes, len, NULL);
}

static void on_malformed(void *ud, const char *bytes, size_t len,
                         const char *reason)
{
  push(ud, true, 0, bytes, len, reason);
}

/* --- The model --- */

/* A message (or malformed run) of len bytes, in max-byte pieces when it
 * is longer than max; an empty message is none. */
static void model_emit(events *e, size_t max, bool bad, const char *p,
                       size_t len, const char *reason)
{
  if (len == 0) return;
  if (len <= max || bad) {
    for (size_t at = 0; at < len; at += max)
      push(e, bad, 0, p + at, len - at < max ? len - at : max, reason);
    return;
  }
  unsigned piece = 0;
  for (size_t at = 0; at < len; at += max)
    push(e, false, ++piece, p + at, len - at < max ? len - at : max, NULL);
}

/* From p to the next LF: returns the bytes used; the content leaves out
 * the LF and a CR before it (unless keep_cr). At the stream's end with no
 * LF, everything is content. */
static size_t model_line(const char *p, const char *end, bool keep_cr,
                         size_t *content)
{
  const char *nl = memchr(p, '\n', (size_t)(end - p));
  if (!nl) {
    *content = (size_t)(end - p);
    return *content;
  }
  *content = (size_t)(nl - p);
  if (!keep_cr && *content > 0 && p[*content - 1] == '\r') (*content)--;
  return (size_t)(nl - p) + 1;
}

static void model(events *e, framing mode, size_t max, bool keep_cr,
                  const char *p, size_t len)
{
  const char *end = p + len;
  char why[128];
  size_t content, used;

  while (p < end) {
    if (mode != FRAMING_NEWLINE && (*p == '\n' || *p == '\r')) {
      p++; /* between frames */
      continue;
    }
    const char *q = p;
    size_t count = 0;
    if (mode != FRAMING_NEWLINE && *p >= '1' && *p <= '9') {
      while (q < end && *q >= '0' && *q <= '9' && q - p < 9)
        count = count * 10 + (size_t)(*q++ - '0');
      if (q < end && *q == ' ') {
        mode = FRAMING_OCTET_COUNTED;
        q++;
        if ((size_t)(end - q) < count) { /* cut short by the end */
          size_t have = (size_t)(end - q);
          snprintf(why, sizeof why, "octet-counted framing: the stream "
                   "ended %zu bytes short of a %zu-byte frame",
                   count - have, count);
          /* The whole pieces went on as the frame's pieces, while it was
           * still a frame; what is held at the end is malformed. */
          unsigned piece = 0;
          while (have > max) {
            push(e, false, ++piece, q, max, NULL);
            q += max;
            have -= max;
          }
          push(e, true, 0, q, have, why);
          return;
        }
        content = count;
        if (q[content - 1] == '\n') {
          content--;
          if (!keep_cr && content > 0 && q[content - 1] == '\r') content--;
        }
        model_emit(e, max, false, q, content, NULL);
        p = q + count;
        continue;
      }
    }
    /* No octet count here: a line, or garbage up to the next LF. */
    if (mode == FRAMING_AUTO) mode = FRAMING_NEWLINE;
    if (mode == FRAMING_NEWLINE) {
      used = model_line(p, end, keep_cr, &content);
      model_emit(e, max, false, p, content, NULL);
    } else {
      if (q == end && q > p)
        snprintf(why, sizeof why, "octet-counted framing: the stream ended "
                 "within an octet count");
      else if (q > p && *q >= '0' && *q <= '9')
        snprintf(why, sizeof why, "octet-counted framing: an octet count "
                 "longer than 9 digits");
      else if (q > p)
        snprintf(why, sizeof why, "octet-counted framing: no space after "
                 "the octet count");
      else
        snprintf(why, sizeof why, "octet-counted framing: a frame that "
                 "starts with no octet count");
      used = model_line(p, end, keep_cr, &content);
      model_emit(e, max, true, p, content, why);
    }
    p += used;
  }
}

/* --- The check --- */

static uint32_t rng;
static uint32_t next(void)
{
  rng = rng * 1103515245u + 12345u;
  return rng >> 16;
}

/* An event's bytes (the store is NULL while no event has any). */
static const char *at(const events *e, const event *v)
{
  return v->len ? e->bytes.data + v->off : "";
}

static void same(const events *a, const events *b, const char *what)
{
  bool ok = a->n == b->n;
  for (size_t i = 0; ok && i < a->n; i++) {
    const event *x = &a->ev[i], *y = &b->ev[i];
    ok = x->bad == y->bad && x->piece == y->piece && x->len == y->len &&
         memcmp(at(a, x), at(b, y), x->len) == 0 &&
         strcmp(x->reason, y->reason) == 0;
  }
  if (ok) return;
  fprintf(stderr, "%s: the events differ\n", what);
  for (int k = 0; k < 2; k++) {
    const events *e = k ? b : a;
    fprintf(stderr, k ? "  model:\n" : "  frame.c:\n");
    for (size_t i = 0; i < e->n; i++) {
      fprintf(stderr, "    %s piece %u \"", e->ev[i].bad ? "BAD" : "msg",
              e->ev[i].piece);
      for (size_t j = 0; j < e->ev[i].len; j++) {
        unsigned char c = (unsigned char)at(e, &e->ev[i])[j];
        fprintf(stderr, c >= 32 && c < 127 ? "%c" : "\\x%02x", c);
      }
      fprintf(stderr, "\" %s\n", e->ev[i].reason);
    }
  }
  abort();
}

static void events_free(events *e)
{
  free(e->ev);
  buf_free(&e->bytes);
}

/* Feeds the stream in the random reads the seed makes. */
static void feed(frame_reader *f, const frame_handler *h, const char *stream,
                 size_t len)
{
  for (size_t at = 0; at < len;) {
    size_t n = next() % 8 == 0 ? next() % 200 : 1 + next() % 17;
    if (n > len - at) n = len - at;
    /* Each read in a buffer of its own, so ASan sees a read past it. */
    char *read = malloc(n ? n : 1);
    if (!read) abort();
    memcpy(read, stream + at, n);
    frame_feed(f, read, n, h);
    free(read);
    at += n;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 4) return 0;
  framing mode = (framing)(data[0] % 3);
  bool keep_cr = data[0] & 4;
  size_t max = data[1] < 250 ? 1 + data[1] % 40 : 1024;
  rng = (uint32_t)data[2] << 8 | data[3];
  const char *stream = (const char *)data + 4;
  size_t len = size - 4;

  frame_handler h = {on_message, on_malformed, NULL, NULL};
  events got = {0}, want = {0}, cut = {0};
  frame_reader f;
  uint32_t seed = rng;
  h.ud = &got;
  frame_init(&f, mode, max, keep_cr);
  feed(&f, &h, stream, len);
  size_t before_end = got.n;
  frame_end(&f, &h);
  frame_free(&f);
  model(&want, mode, max, keep_cr, stream, len);
  same(&got, &want, "stream");

  /* The same reads, then this side's cut: what frame_end handed on at the
   * end comes again, byte for byte, but never as a whole message (pieces
   * of an overlong one may still go, as they would have). */
  rng = seed;
  h.ud = &cut;
  frame_init(&f, mode, max, keep_cr);
  feed(&f, &h, stream, len);
  if (cut.n != before_end) abort();
  frame_cut(&f, &h, "cut here");
  frame_free(&f);
  size_t ended = 0, cut_bytes = 0;
  for (size_t i = before_end; i < got.n; i++) ended += got.ev[i].len;
  for (size_t i = before_end; i < cut.n; i++) {
    if (!cut.ev[i].bad && cut.ev[i].piece == 0) {
      fprintf(stderr, "frame_cut handed on a whole message\n");
      abort();
    }
    cut_bytes += cut.ev[i].len;
  }
  if (ended != cut_bytes) {
    fprintf(stderr, "frame_end gave %zu bytes at the end, frame_cut %zu\n",
            ended, cut_bytes);
    abort();
  }
  events_free(&got);
  events_free(&want);
  events_free(&cut);

  /* A datagram: one message without one trailing LF (and CR). */
  got = (events){0};
  want = (events){0};
  h.ud = &got;
  frame_datagram(max, keep_cr, stream, len, &h);
  size_t content = len;
  if (content > 0 && stream[content - 1] == '\n') {
    content--;
    if (!keep_cr && content > 0 && stream[content - 1] == '\r') content--;
  }
  model_emit(&want, max, false, stream, content, NULL);
  same(&got, &want, "datagram");
  events_free(&got);
  events_free(&want);
  return 0;
}
