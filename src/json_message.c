/* json_message.c - see json_message.h. */
#include "json_message.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "utf8.h"

/* Every piece is written after a reservation that covers it, straight
 * into the buffer: one bound check per piece of text instead of one per
 * append (the writer's cost was mostly its appends). */
static char *at(buf *b)
{
  return b->data + b->len;
}

static inline bool reserve(buf *b, size_t n)
{
  return n <= b->cap - b->len || buf_reserve(b, n);
}

static void put(buf *b, const char *s, size_t len)
{
  memcpy(at(b), s, len);
  b->len += len;
}

/* A string literal, its length known at compile time. */
#define PUT_LITERAL(b, s) put(b, s, sizeof s - 1)

/* Writes v's decimal digits ending at end; returns where they start. */
static char *digits(char *end, unsigned long long v)
{
  do {
    *--end = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  return end;
}

/* The escapes of json_string.lua: short ones where JSON has them. */
static const char *short_escape(unsigned char c)
{
  switch (c) {
  case '"': return "\\\"";
  case '\\': return "\\\\";
  case '\b': return "\\b";
  case '\f': return "\\f";
  case '\n': return "\\n";
  case '\r': return "\\r";
  case '\t': return "\\t";
  default: return NULL;
  }
}

/* Whether any of the 8 bytes of x is other than printable ASCII (below
 * 0x20, 0x7f and up) or is '"' or '\\'. SWAR tests (Hacker's Delight,
 * 6-1): (v - 0x01..) & ~v sets the high bit of a byte of v that is 0,
 * (v - n..) & ~v of one below n; a borrow or carry runs on only from a byte
 * that is itself flagged, so the answer for the word is exact. */
static inline bool any_special(uint64_t x)
{
  const uint64_t ones = 0x0101010101010101u, high = ones * 0x80;
  uint64_t quote = x ^ (ones * '"'), backslash = x ^ (ones * '\\');

  return (((x - ones * 0x20) & ~x) | ((quote - ones) & ~quote) |
          ((backslash - ones) & ~backslash) | x | (x + ones)) & high;
}

/* One byte that is not plain ASCII at u: a valid UTF-8 sequence is copied,
 * anything else escaped, at p. Returns the bytes it took; *p moves on. */
static size_t put_special(char **p, const unsigned char *u, size_t avail)
{
  size_t n = u[0] >= 0x80 ? utf8_sequence_len(u, avail) : 0;
  const char *esc;

  if (n) {
    memcpy(*p, u, n);
    *p += n;
    return n;
  }
  esc = short_escape(u[0]);
  if (esc) {
    memcpy(*p, esc, 2);
    *p += 2;
  } else {
    *p += snprintf(*p, 7, "\\u%04x", u[0]);
  }
  return 1;
}

/* Copies the next 8 bytes of u to *p, or all of them when fewer are
 * left, if none needs escaping (the bytes past a short tail, padded with a
 * plain one, are written but not counted: the reservation has room). */
static bool plain_word(char **p, const unsigned char *u, size_t avail)
{
  unsigned char chunk[8] = {'.', '.', '.', '.', '.', '.', '.', '.'};
  uint64_t word;
  size_t n = avail < 8 ? avail : 8;

  if (n == 8) memcpy(chunk, u, 8);
  else memcpy(chunk, u, n);
  memcpy(&word, chunk, 8);
  if (any_special(word)) return false;
  memcpy(*p, chunk, 8);
  *p += n;
  return true;
}

/* Input bytes escaped per reservation: an escape is at most 6 bytes, so a
 * long string never reserves much more than it takes. */
#define ESCAPE_BLOCK 512

/* A string's body: plain ASCII copied 8 bytes at a time (the bulk of log
 * text; a short tail too), else byte by byte; valid UTF-8 copied whole. Written through a
 * local cursor: stores through a char pointer may alias the buffer's
 * fields, which the compiler would otherwise reload after each. */
static bool put_escaped(buf *b, const char *s, size_t len)
{
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0;

  while (i < len) {
    size_t end = len - i > ESCAPE_BLOCK ? i + ESCAPE_BLOCK : len;
    char *p;
    /* 6 bytes an input byte, the 8 a word store may write past the text,
     * and the 3 a UTF-8 sequence may reach past the block. */
    if (!reserve(b, (end - i) * 6 + 16)) return false;
    p = at(b);
    while (i < end) {
      if (plain_word(&p, u + i, len - i)) {
        i += len - i < 8 ? len - i : 8;
      } else if (u[i] >= 0x20 && u[i] < 0x7f && u[i] != '"' && u[i] != '\\') {
        *p++ = (char)u[i++];
      } else {
        i += put_special(&p, u + i, len - i);
      }
    }
    b->len = (size_t)(p - b->data);
  }
  return true;
}

static bool put_quoted(buf *b, const char *s, size_t len)
{
  if (!reserve(b, 1)) return false;
  put(b, "\"", 1);
  if (!put_escaped(b, s, len) || !reserve(b, 1)) return false;
  put(b, "\"", 1);
  return true;
}

/* The most a number, a boolean or null takes (put_number's text). */
#define SCALAR_MAX 40

/* json_string.number: integers without ".0"; the shortest %.14g that reads
 * back the same, else %.17g. Within SCALAR_MAX reserved bytes. */
static void put_number(buf *b, double x)
{
  char text[SCALAR_MAX];

  /* In range first: converting NaN or a double past 2^63 is undefined. */
  long long i = x > -0x1p63 && x < 0x1p63 ? (long long)x : 0;

  if ((double)i == x) {
    char *end = text + sizeof text;
    char *start = digits(end, i < 0 ? 0ULL - (unsigned long long)i
                                    : (unsigned long long)i);
    if (i < 0) *--start = '-';
    put(b, start, (size_t)(end - start));
  } else if (isnan(x) || isinf(x)) {
    PUT_LITERAL(b, "null");
  } else {
    if (snprintf(text, sizeof text, "%.14g", x), strtod(text, NULL) != x)
      snprintf(text, sizeof text, "%.17g", x);
    put(b, text, strlen(text));
  }
}

/* Each thread's last second as text: events come in runs of one second. */
static _Thread_local struct {
  double second;
  bool valid;
  char text[32];     /* "\"2026-05-19T10:30:17" */
  size_t len;
} last_second;

/* date.iso8601_utc_ms: rounded to the microsecond first (as the double
 * Lua reads), then cut to the millisecond. Within 64 reserved bytes. */
static void put_timestamp(buf *b, int64_t ns)
{
  double ms_total = floor(floor((double)ns / 1e3 + 0.5) / 1e3);
  double second = floor(ms_total / 1000);
  int ms = (int)(ms_total - second * 1000);
  char tail[6] = {'.', (char)('0' + ms / 100), (char)('0' + ms / 10 % 10),
                  (char)('0' + ms % 10), 'Z', '"'};

  if (!last_second.valid || last_second.second != second) {
    time_t t = (time_t)second;
    struct tm tm;
    if (!gmtime_r(&t, &tm)) {
      PUT_LITERAL(b, "null");
      return;
    }
    last_second.len = (size_t)snprintf(
      last_second.text, sizeof last_second.text,
      "\"%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
      tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    last_second.second = second;
    last_second.valid = true;
  }
  put(b, last_second.text, last_second.len);
  put(b, tail, sizeof tail);
}

/* A header string under its key (",\"message\":"), if set. */
static bool put_span(buf *b, const msg *m, const char *key, size_t key_len,
                     msg_span s)
{
  if (s.len == 0) return true;
  if (!reserve(b, key_len)) return false;
  put(b, key, key_len);
  return put_quoted(b, msg_str(m, s), s.len);
}

#define PUT_SPAN(b, m, key, s) put_span(b, m, key, sizeof key - 1, s)

static bool put_value(buf *b, const msg *m, const msg_field *f,
                      const msg_value *v)
{
  if (f->type == MSG_STRING || f->type == MSG_BYTES)
    return put_quoted(b, msg_str(m, v->s), v->s.len);
  if (!reserve(b, SCALAR_MAX)) return false;
  if (f->type == MSG_INTEGER) put_number(b, (double)v->i);
  else if (f->type == MSG_DOUBLE) put_number(b, v->d);
  else if (v->b) PUT_LITERAL(b, "true");
  else PUT_LITERAL(b, "false");
  return true;
}

/* Header keys: a field with one of these names is written "fields.NAME".
 * Called for every field: the length picks the candidates. */
static bool reserved(const char *name, size_t len)
{
  switch (len) {
  case 3: return memcmp(name, "pid", 3) == 0;
  case 4: return memcmp(name, "host", 4) == 0 || memcmp(name, "type", 4) == 0;
  case 6: return memcmp(name, "logger", 6) == 0;
  case 7: return memcmp(name, "message", 7) == 0;
  case 8: return memcmp(name, "@version", 8) == 0 || memcmp(name, "severity", 8) == 0;
  case 10: return memcmp(name, "@timestamp", 10) == 0;
  default: return false;
  }
}

static bool put_field(buf *b, const msg *m, const msg_field *f)
{
  const char *name = msg_str(m, f->name);
  const msg_value *v = msg_field_values(m, f);

  if (!reserve(b, 16)) return false;
  PUT_LITERAL(b, ",\"");
  if (reserved(name, f->name.len)) PUT_LITERAL(b, "fields.");
  if (!put_escaped(b, name, f->name.len) || !reserve(b, 3)) return false;
  PUT_LITERAL(b, "\":");
  if (f->count == 1) return put_value(b, m, f, v);
  PUT_LITERAL(b, "[");
  for (uint32_t i = 0; i < f->count; i++) {
    if (i > 0 && !reserve(b, 1)) return false;
    if (i > 0) PUT_LITERAL(b, ",");
    if (!put_value(b, m, f, &v[i])) return false;
  }
  if (!reserve(b, 1)) return false;
  PUT_LITERAL(b, "]");
  return true;
}

bool json_message(buf *b, const msg *m)
{
  bool ok;

  /* The fixed keys, the time and the two numbers. */
  if (!reserve(b, 64 + 2 * SCALAR_MAX + 64)) return false;
  PUT_LITERAL(b, "{\"@timestamp\":");
  put_timestamp(b, m->timestamp);
  PUT_LITERAL(b, ",\"@version\":\"1\"");
  ok = PUT_SPAN(b, m, ",\"message\":", m->payload) &&
       PUT_SPAN(b, m, ",\"host\":", m->hostname) &&
       PUT_SPAN(b, m, ",\"type\":", m->type) &&
       PUT_SPAN(b, m, ",\"logger\":", m->logger) &&
       reserve(b, 2 * (12 + SCALAR_MAX));
  if (ok && m->has_severity) {
    PUT_LITERAL(b, ",\"severity\":");
    put_number(b, m->severity);
  }
  if (ok && m->has_pid) {
    PUT_LITERAL(b, ",\"pid\":");
    put_number(b, m->pid);
  }
  for (uint32_t i = 0; ok && i < m->nfields; i++)
    ok = put_field(b, m, &m->fields[i]);
  if (!ok || !reserve(b, 1)) return false;
  PUT_LITERAL(b, "}");
  return true;
}
