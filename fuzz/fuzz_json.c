/*
 * fuzz_json.c - the JSON writer (src/runtime/json_message.c) on random
 * messages (fuzz_msg.h: every header, every field type, arrays, bytes that
 * are not UTF-8), its output parsed back and compared.
 *
 * A small strict JSON reader below takes the object apart: it must be
 * valid JSON (RFC 8259: strings of valid UTF-8 without control bytes), and
 * its keys and values must be, in order, those json_message.h promises:
 * @timestamp, @version "1", message, host, type, logger, severity, pid,
 * then each field ("fields.NAME" for a header's key), strings as their
 * bytes with each invalid UTF-8 run as U+FFFD (utf8.h), numbers equal to
 * the values, NaN and infinities null, arrays for arrays.
 */
#include <math.h>
#include <stdio.h>

#include "buf.h"
#include "fuzz_msg.h"
#include "json_message.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *json, *json_end; /* what is being read */

static void fail(const char *why, const char *at)
{
  fprintf(stderr, "%s at byte %zu of:\n%.*s\n", why, (size_t)(at - json),
          (int)(json_end - json), json);
  abort();
}

static void skip_space(const char **p)
{
  while (*p < json_end && (**p == ' ' || **p == '\t' || **p == '\n' ||
                           **p == '\r'))
    (*p)++;
}

static void put_utf8(buf *b, uint32_t cp)
{
  char u[4];
  size_t n;
  if (cp < 0x80) u[0] = (char)cp, n = 1;
  else if (cp < 0x800)
    u[0] = (char)(0xC0 | cp >> 6), u[1] = (char)(0x80 | (cp & 63)), n = 2;
  else if (cp < 0x10000)
    u[0] = (char)(0xE0 | cp >> 12), u[1] = (char)(0x80 | (cp >> 6 & 63)),
    u[2] = (char)(0x80 | (cp & 63)), n = 3;
  else
    u[0] = (char)(0xF0 | cp >> 18), u[1] = (char)(0x80 | (cp >> 12 & 63)),
    u[2] = (char)(0x80 | (cp >> 6 & 63)), u[3] = (char)(0x80 | (cp & 63)),
    n = 4;
  if (!buf_append(b, u, n)) abort();
}

static uint32_t hex4(const char **p)
{
  uint32_t v = 0;
  for (int i = 0; i < 4; i++, (*p)++) {
    char c = *p < json_end ? **p : 0;
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
          : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) fail("a bad \\u escape", *p);
    v = v << 4 | (uint32_t)d;
  }
  return v;
}

/* A string at *p (its quote), decoded into out. */
static void read_string(const char **p, buf *out)
{
  buf_clear(out);
  if (*p >= json_end || **p != '"') fail("a string expected", *p);
  (*p)++;
  for (;;) {
    if (*p >= json_end) fail("an unterminated string", *p);
    unsigned char c = (unsigned char)**p;
    if (c == '"') break;
    if (c < 0x20) fail("a control byte in a string", *p);
    if (c == '\\') {
      (*p)++;
      char e = *p < json_end ? **p : 0;
      const char *simple = strchr("\"\\/bfnrt", e);
      if (e && simple) {
        static const char to[] = "\"\\/\b\f\n\r\t";
        if (!buf_append(out, &to[simple - "\"\\/bfnrt"], 1)) abort();
        (*p)++;
      } else if (e == 'u') {
        (*p)++;
        uint32_t cp = hex4(p);
        if (cp >= 0xD800 && cp <= 0xDBFF && *p + 1 < json_end &&
            (*p)[0] == '\\' && (*p)[1] == 'u') {
          *p += 2;
          uint32_t lo = hex4(p);
          if (lo < 0xDC00 || lo > 0xDFFF) fail("a lone surrogate", *p);
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xD800 && cp <= 0xDFFF) {
          fail("a lone surrogate", *p);
        }
        put_utf8(out, cp);
      } else {
        fail("a bad escape", *p);
      }
      continue;
    }
    size_t n = utf8_sequence_len((const unsigned char *)*p,
                                 (size_t)(json_end - *p));
    if (!n) fail("a string that is not UTF-8", *p);
    if (!buf_append(out, *p, n)) abort();
    *p += n;
  }
  (*p)++;
}

/* A JSON number at *p, by RFC 8259's grammar; its value. */
static double read_number(const char **p)
{
  const char *s = *p, *q = s;
  if (q < json_end && *q == '-') q++;
  if (q < json_end && *q == '0') q++;
  else if (q < json_end && *q >= '1' && *q <= '9')
    while (q < json_end && *q >= '0' && *q <= '9') q++;
  else fail("a bad number", q);
  if (q < json_end && *q == '.') {
    q++;
    if (q >= json_end || *q < '0' || *q > '9') fail("a bad fraction", q);
    while (q < json_end && *q >= '0' && *q <= '9') q++;
  }
  if (q < json_end && (*q == 'e' || *q == 'E')) {
    q++;
    if (q < json_end && (*q == '+' || *q == '-')) q++;
    if (q >= json_end || *q < '0' || *q > '9') fail("a bad exponent", q);
    while (q < json_end && *q >= '0' && *q <= '9') q++;
  }
  char text[64];
  if (q - s >= (long)sizeof text) fail("a long number", s);
  memcpy(text, s, (size_t)(q - s));
  text[q - s] = 0;
  *p = q;
  return strtod(text, NULL);
}

static bool literal(const char **p, const char *word)
{
  size_t n = strlen(word);
  if ((size_t)(json_end - *p) < n || memcmp(*p, word, n) != 0) return false;
  *p += n;
  return true;
}

/* What a string of the message must read as: its bytes, with each run
 * that is not UTF-8 as U+FFFD. */
static void expected(buf *out, const char *s, size_t len)
{
  const unsigned char *u = (const unsigned char *)s;
  buf_clear(out);
  for (size_t i = 0; i < len;) {
    size_t n = utf8_sequence_len(u + i, len - i);
    if (n) {
      if (!buf_append(out, u + i, n)) abort();
      i += n;
    } else {
      put_utf8(out, 0xFFFD);
      i += utf8_invalid_len(u + i, len - i);
    }
  }
}

static buf got, want;

static void same(const char *at)
{
  if (got.len != want.len || (got.len && memcmp(got.data, want.data, got.len)))
    fail("a string that is not the message's", at);
}

/* The next key must be `key` (or its bytes, decoded). */
static void expect_key(const char **p, const char *prefix, const char *s,
                       size_t len)
{
  skip_space(p);
  if (*p >= json_end || **p != ',') fail("a ',' expected", *p);
  (*p)++;
  skip_space(p);
  read_string(p, &got);
  expected(&want, s, len);
  if (prefix) {
    buf tmp = {0};
    if (!buf_append_str(&tmp, prefix) ||
        !buf_append(&tmp, want.data, want.len))
      abort();
    buf_free(&want);
    want = tmp;
  }
  same(*p);
  skip_space(p);
  if (*p >= json_end || **p != ':') fail("a ':' expected", *p);
  (*p)++;
  skip_space(p);
}

static void expect_string(const char **p, const char *s, size_t len)
{
  read_string(p, &got);
  expected(&want, s, len);
  same(*p);
}

static void expect_number(const char **p, double x)
{
  if (isnan(x) || isinf(x)) {
    if (!literal(p, "null")) fail("null expected", *p);
    return;
  }
  if (read_number(p) != x) fail("a number that is not the value", *p);
}

/* msg_str, but "" for an empty span (the arena may be NULL). */
static const char *str(const msg *m, msg_span s)
{
  return s.len ? msg_str(m, s) : "";
}

static bool is_header_key(const char *name, size_t len)
{
  static const char *const keys[] = {"@timestamp", "@version", "message",
                                     "host", "type", "logger", "severity",
                                     "pid"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (strlen(keys[i]) == len && memcmp(keys[i], name, len) == 0) return true;
  return false;
}

static void check(const msg *m)
{
  const char *p = json;

  skip_space(&p);
  if (!literal(&p, "{")) fail("an object expected", p);
  skip_space(&p);
  read_string(&p, &got);
  if (got.len != 10 || memcmp(got.data, "@timestamp", 10)) fail("@timestamp", p);
  skip_space(&p);
  if (!literal(&p, ":")) fail("a ':' expected", p);
  skip_space(&p);
  if (!literal(&p, "null")) read_string(&p, &got);
  expect_key(&p, NULL, "@version", 8);
  expect_string(&p, "1", 1);
  expect_key(&p, NULL, "message", 7);
  expect_string(&p, str(m, m->payload), m->payload.len);
  const struct { const char *key; msg_span s; } spans[] = {
    {"host", m->hostname}, {"type", m->type}, {"logger", m->logger}};
  for (int i = 0; i < 3; i++) {
    if (!spans[i].s.len) continue;
    expect_key(&p, NULL, spans[i].key, strlen(spans[i].key));
    expect_string(&p, str(m, spans[i].s), spans[i].s.len);
  }
  if (m->has_severity) {
    expect_key(&p, NULL, "severity", 8);
    expect_number(&p, m->severity);
  }
  if (m->has_pid) {
    expect_key(&p, NULL, "pid", 3);
    expect_number(&p, m->pid);
  }
  for (uint32_t i = 0; i < m->nfields; i++) {
    const msg_field *f = &m->fields[i];
    const char *name = str(m, f->name);
    expect_key(&p, is_header_key(name, f->name.len) ? "fields." : NULL, name,
               f->name.len);
    if (f->count > 1 && !literal(&p, "[")) fail("an array expected", p);
    for (uint32_t k = 0; k < f->count; k++) {
      const msg_value *v = &msg_field_values(m, f)[k];
      if (k > 0 && !literal(&p, ",")) fail("a ',' expected", p);
      switch (f->type) {
      case MSG_STRING:
      case MSG_BYTES: expect_string(&p, str(m, v->s), v->s.len); break;
      case MSG_INTEGER: expect_number(&p, (double)v->i); break;
      case MSG_DOUBLE: expect_number(&p, v->d); break;
      case MSG_BOOL:
        if (!literal(&p, v->b ? "true" : "false")) fail("a boolean", p);
        break;
      }
    }
    if (f->count > 1 && !literal(&p, "]")) fail("a ']' expected", p);
  }
  skip_space(&p);
  if (!literal(&p, "}")) fail("the object's end expected", p);
  if (p != json_end) fail("bytes after the object", p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static msg m;
  static bool ready;
  if (!ready) msg_init(&m), ready = true;
  fuzz_in in = {data, size};
  fuzz_msg(&m, &in);

  buf out = {0};
  if (!json_message(&out, &m)) abort();
  /* A copy of its own size: ASan sees a read past it. */
  char *copy = malloc(out.len ? out.len : 1);
  if (!copy) abort();
  memcpy(copy, out.data, out.len);
  json = copy;
  json_end = copy + out.len;
  check(&m);
  free(copy);
  buf_free(&out);
  return 0;
}
