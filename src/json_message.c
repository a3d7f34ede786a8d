/* json_message.c - see json_message.h. */
#include "json_message.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "utf8.h"

static bool put(buf *b, const char *s, size_t len)
{
  return buf_append(b, s, len);
}

static bool put_str(buf *b, const char *s)
{
  return buf_append(b, s, strlen(s));
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

/* A string's body: runs of plain ASCII and valid UTF-8 copied whole; plain
 * ASCII is skipped 8 bytes at a time, the bulk of log text. */
static bool put_escaped(buf *b, const char *s, size_t len)
{
  const unsigned char *u = (const unsigned char *)s;
  size_t run = 0;

  for (size_t i = 0; i < len;) {
    unsigned char c;
    const char *esc;
    char hex[8];
    size_t n;
    uint64_t word;
    if (len - i >= 8 && (memcpy(&word, u + i, 8), !any_special(word))) {
      i += 8;
      continue;
    }
    c = u[i];
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      i++;
      continue;
    }
    if (c >= 0x80 && (n = utf8_sequence_len(u + i, len - i)) != 0) {
      i += n;
      continue;
    }
    if (!put(b, s + run, i - run)) return false;
    esc = short_escape(c);
    if (!esc) {
      snprintf(hex, sizeof hex, "\\u%04x", c);
      esc = hex;
    }
    if (!put_str(b, esc)) return false;
    run = ++i;
  }
  return put(b, s + run, len - run);
}

static bool put_quoted(buf *b, const char *s, size_t len)
{
  return put(b, "\"", 1) && put_escaped(b, s, len) && put(b, "\"", 1);
}

/* json_string.number: integers without ".0"; the shortest %.14g that reads
 * back the same, else %.17g. */
static bool put_number(buf *b, double x)
{
  char text[40];

  if (isnan(x) || isinf(x)) return PUT_LITERAL(b, "null");
  if (x == floor(x) && x > -0x1p63 && x < 0x1p63) {
    long long i = (long long)x;
    char *end = text + sizeof text;
    char *start = digits(end, i < 0 ? 0ULL - (unsigned long long)i
                                    : (unsigned long long)i);
    if (i < 0) *--start = '-';
    return put(b, start, (size_t)(end - start));
  }
  if (snprintf(text, sizeof text, "%.14g", x), strtod(text, NULL) != x)
    snprintf(text, sizeof text, "%.17g", x);
  return put_str(b, text);
}

/* Each thread's last second as text: events come in runs of one second. */
static _Thread_local struct {
  double second;
  bool valid;
  char text[32];     /* "\"2026-05-19T10:30:17" */
  size_t len;
} last_second;

/* date.iso8601_utc_ms: rounded to the microsecond first (as the double
 * Lua reads), then cut to the millisecond. */
static bool put_timestamp(buf *b, int64_t ns)
{
  double ms_total = floor(floor((double)ns / 1e3 + 0.5) / 1e3);
  double second = floor(ms_total / 1000);
  int ms = (int)(ms_total - second * 1000);
  char tail[6] = {'.', (char)('0' + ms / 100), (char)('0' + ms / 10 % 10),
                  (char)('0' + ms % 10), 'Z', '"'};

  if (!last_second.valid || last_second.second != second) {
    time_t t = (time_t)second;
    struct tm tm;
    if (!gmtime_r(&t, &tm)) return PUT_LITERAL(b, "null");
    last_second.len = (size_t)snprintf(
      last_second.text, sizeof last_second.text,
      "\"%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
      tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    last_second.second = second;
    last_second.valid = true;
  }
  return put(b, last_second.text, last_second.len) && put(b, tail, sizeof tail);
}

static bool put_span(buf *b, const msg *m, const char *key, msg_span s)
{
  return s.len == 0 ||
         (put_str(b, key) && put_quoted(b, msg_str(m, s), s.len));
}

static bool put_value(buf *b, const msg *m, const msg_field *f,
                      const msg_value *v)
{
  switch (f->type) {
  case MSG_STRING:
  case MSG_BYTES: return put_quoted(b, msg_str(m, v->s), v->s.len);
  case MSG_INTEGER: return put_number(b, (double)v->i);
  case MSG_DOUBLE: return put_number(b, v->d);
  case MSG_BOOL: return put_str(b, v->b ? "true" : "false");
  }
  return false;
}

/* Header keys: a field with one of these names is written "fields.NAME". */
static bool reserved(const char *name, size_t len)
{
#define KEY(s) {s, sizeof s - 1}
  static const struct {
    const char *name;
    size_t len;
  } keys[] = {KEY("@timestamp"), KEY("@version"), KEY("message"), KEY("host"),
              KEY("type"), KEY("logger"), KEY("severity"), KEY("pid")};
#undef KEY
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (keys[i].len == len && memcmp(keys[i].name, name, len) == 0)
      return true;
  return false;
}

static bool put_field(buf *b, const msg *m, const msg_field *f)
{
  const char *name = msg_str(m, f->name);
  const msg_value *v = msg_field_values(m, f);

  if (!put(b, ",\"", 2) ||
      (reserved(name, f->name.len) && !PUT_LITERAL(b, "fields.")) ||
      !put_escaped(b, name, f->name.len) || !put(b, "\":", 2))
    return false;
  if (f->count == 1) return put_value(b, m, f, v);
  if (!put(b, "[", 1)) return false;
  for (uint32_t i = 0; i < f->count; i++)
    if ((i > 0 && !put(b, ",", 1)) || !put_value(b, m, f, &v[i])) return false;
  return put(b, "]", 1);
}

bool json_message(buf *b, const msg *m)
{
  bool ok = PUT_LITERAL(b, "{\"@timestamp\":") && put_timestamp(b, m->timestamp) &&
            PUT_LITERAL(b, ",\"@version\":\"1\"") &&
            put_span(b, m, ",\"message\":", m->payload) &&
            put_span(b, m, ",\"host\":", m->hostname) &&
            put_span(b, m, ",\"type\":", m->type) &&
            put_span(b, m, ",\"logger\":", m->logger) &&
            (!m->has_severity || (PUT_LITERAL(b, ",\"severity\":") &&
                                  put_number(b, m->severity))) &&
            (!m->has_pid || (PUT_LITERAL(b, ",\"pid\":") &&
                             put_number(b, m->pid)));

  for (uint32_t i = 0; ok && i < m->nfields; i++)
    ok = put_field(b, m, &m->fields[i]);
  return ok && put(b, "}", 1);
}
