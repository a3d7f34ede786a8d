/* json_message.c - see json_message.h. */
#include "json_message.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

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

/* The high bit of each byte of a word. */
#define HIGH_BITS 0x8080808080808080u

/* Flags the bytes of x that are other than printable ASCII (below 0x20,
 * 0x7f and up) or are '"' or '\\' by their high bit in what it returns
 * (its other bits mean nothing); so (special(x) & HIGH_BITS) says whether
 * there is any. SWAR (Hacker's Delight, 6-1): subtracting 0x20 from each
 * byte sets the high bit of one below 0x20, subtracting 1 that of one that
 * is 0 (so of '"' and '\\' once xor'ed away), adding 1 that of 0x7f; the
 * bytes whose high bit the subtractions set otherwise are 0x80 and up,
 * which x itself flags. A borrow or carry runs on only from a flagged
 * byte, so the answer is exact for the word, and for words or'ed
 * together. */
static inline uint64_t special(uint64_t x)
{
  const uint64_t ones = 0x0101010101010101u;

  return (x - ones * 0x20) | ((x ^ (ones * '"')) - ones) |
         ((x ^ (ones * '\\')) - ones) | x | (x + ones);
}

#ifdef __SSE2__
/* The bytes of v that are other than printable ASCII or are '"' or '\\',
 * as the bits of a mask. A signed compare takes those below 0x20 and
 * those from 0x80 up (negative) at once. */
static inline int special_lanes(__m128i v)
{
  __m128i flagged = _mm_or_si128(
      _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
                   _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f))),
      _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                   _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));

  return _mm_movemask_epi8(flagged);
}

/* copy_plain for 16 bytes or more, 16 at a time (SSE2, on every x86-64):
 * a quarter of the word-wide loop's instructions, on the longest strings
 * (messages). The last 1 to 15 bytes go as the 16 that end the string. */
static bool copy_plain_wide(char *p, const unsigned char *u, size_t len)
{
  __m128i v;
  int flags = 0;

  for (size_t i = 0; i < len - 15; i += 16) {
    v = _mm_loadu_si128((const __m128i *)(u + i));
    _mm_storeu_si128((__m128i *)(p + i), v);
    flags |= special_lanes(v);
  }
  v = _mm_loadu_si128((const __m128i *)(u + len - 16));
  _mm_storeu_si128((__m128i *)(p + len - 16), v);
  return !(flags | special_lanes(v));
}
#endif

/* Copies the len bytes at u to p as they are; true if none needed
 * escaping (else the caller writes over them). No branch per word, and no
 * copy of variable size (a library call): the last 1 to 7 bytes go as the
 * word that ends the string, and a string shorter than a word as two
 * overlapping halves or as its first, middle and last byte, tested as one
 * word, where each byte sits in it not mattering. */
static bool copy_plain(char *p, const unsigned char *u, size_t len)
{
  uint64_t word, flags = 0;
  uint32_t lo, hi;

#ifdef __SSE2__
  if (len >= 16) return copy_plain_wide(p, u, len);
#endif
  if (len >= 8) {
    for (size_t i = 0; i < len - 7; i += 8) {
      memcpy(&word, u + i, 8);
      memcpy(p + i, &word, 8);
      flags |= special(word);
    }
    memcpy(&word, u + len - 8, 8);
    memcpy(p + len - 8, &word, 8);
    return !((flags | special(word)) & HIGH_BITS);
  }
  if (len >= 4) {
    memcpy(&lo, u, 4);
    memcpy(&hi, u + len - 4, 4);
    memcpy(p, &lo, 4);
    memcpy(p + len - 4, &hi, 4);
    return !(special((uint64_t)lo << 32 | hi) & HIGH_BITS);
  }
  if (len == 0) return true;
  /* Padded with '.', plain. */
  p[0] = (char)u[0];
  p[len / 2] = (char)u[len / 2];
  p[len - 1] = (char)u[len - 1];
  return !(special(0x2e2e2e2e2e000000u | (uint64_t)u[0] << 16 |
                   (uint64_t)u[len / 2] << 8 | u[len - 1]) & HIGH_BITS);
}

/* One byte that is not plain ASCII at u: a valid UTF-8 sequence is copied,
 * bytes that are not UTF-8 become U+FFFD (utf8_invalid_len), anything else
 * is escaped, at p. Returns the bytes it took; *p moves on. */
static size_t put_special(char **p, const unsigned char *u, size_t avail)
{
  size_t n = u[0] >= 0x80 ? utf8_sequence_len(u, avail) : 0;
  const char *esc;

  if (n) {
    memcpy(*p, u, n);
    *p += n;
    return n;
  }
  if (u[0] >= 0x80) {
    memcpy(*p, "\xEF\xBF\xBD", 3);
    *p += 3;
    return utf8_invalid_len(u, avail);
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

/* Input bytes escaped per reservation: an escape is at most 6 bytes, so a
 * long string never reserves much more than it takes. */
#define ESCAPE_BLOCK 512

/* A string's body that needs escapes (or is long): plain ASCII copied 8
 * bytes at a time, else byte by byte; valid UTF-8 copied whole. Written
 * through a local cursor: stores through a char pointer may alias the
 * buffer's fields, which the compiler would otherwise reload after each.
 * Not inlined, so that put_escaped has few registers to save. */
static __attribute__((noinline)) bool
put_escapes(buf *b, const unsigned char *u, size_t len)
{
  size_t i = 0;
  uint64_t word;

  while (i < len) {
    size_t end = len - i > ESCAPE_BLOCK ? i + ESCAPE_BLOCK : len;
    char *p;
    /* 6 bytes an input byte, and the 7 a word and the 3 a UTF-8 sequence
     * may reach past the block. */
    if (!reserve(b, (end - i) * 6 + 16)) return false;
    p = at(b);
    while (i < end) {
      if (len - i >= 8 &&
          (memcpy(&word, u + i, 8), !(special(word) & HIGH_BITS))) {
        memcpy(p, &word, 8);
        p += 8;
        i += 8;
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

/* A string's body: most are short and need no escape, and are copied
 * whole. */
static bool put_escaped(buf *b, const char *s, size_t len)
{
  const unsigned char *u = (const unsigned char *)s;

  if (len <= ESCAPE_BLOCK) {
    if (!reserve(b, len)) return false;
    if (copy_plain(at(b), u, len)) {
      b->len += len;
      return true;
    }
  }
  return put_escapes(b, u, len);
}

/* A string in quotes after `key` (key_len bytes, maybe none): one
 * reservation and one length update for the lot when the string needs no
 * escape. */
static bool put_keyed_quoted(buf *b, const char *key, size_t key_len,
                             const char *s, size_t len)
{
  char *p;

  if (len <= ESCAPE_BLOCK) {
    if (!reserve(b, key_len + len + 2)) return false;
    p = at(b);
    if (copy_plain(p + key_len + 1, (const unsigned char *)s, len)) {
      memcpy(p, key, key_len);
      p[key_len] = '"';
      p[key_len + 1 + len] = '"';
      b->len += key_len + len + 2;
      return true;
    }
  }
  if (!reserve(b, key_len + 1)) return false;
  put(b, key, key_len);
  put(b, "\"", 1);
  if (!put_escapes(b, (const unsigned char *)s, len) || !reserve(b, 1)) return false;
  put(b, "\"", 1);
  return true;
}

static bool put_quoted(buf *b, const char *s, size_t len)
{
  return put_keyed_quoted(b, "", 0, s, len);
}

bool json_quoted(buf *b, const char *s, size_t len)
{
  return put_quoted(b, s, len);
}

/* The most a number, a boolean or null takes (put_number's text). */
#define SCALAR_MAX 40

/* json_string.number: integers without ".0"; the shortest %.14g that reads
 * back the same, else %.17g. Within SCALAR_MAX reserved bytes. */
static void put_number(buf *b, double x)
{
  char text[SCALAR_MAX];

  /* Most numbers in logs are small whole ones (pri, facility, severity):
   * their digits are written as they are. */
  if (x >= 0 && x < 1000 && (double)(unsigned)x == x) {
    unsigned n = (unsigned)x;
    char *p = at(b);
    if (n >= 100) *p++ = (char)('0' + n / 100);
    if (n >= 10) *p++ = (char)('0' + n / 10 % 10);
    *p++ = (char)('0' + n % 10);
    b->len = (size_t)(p - b->data);
    return;
  }

  /* In range first: converting NaN or a double past 2^63 is undefined. */
  long long i = x > -0x1p63 && x < 0x1p63 ? (long long)x : 0;

  if ((double)i == x) {
    /* The digits end 20 bytes into text (the longest integer,
     * "-9223372036854775808", takes 20) and go out as the 20 bytes from
     * where they start, counting only themselves: a copy of fixed size is
     * a few moves, one of variable size a library call. */
    char *end = text + 20;
    char *start = digits(end, i < 0 ? 0ULL - (unsigned long long)i
                                    : (unsigned long long)i);
    if (i < 0) *--start = '-';
    memcpy(at(b), start, 20);
    b->len += (size_t)(end - start);
  } else if (isnan(x) || isinf(x)) {
    PUT_LITERAL(b, "null");
  } else {
    if (snprintf(text, sizeof text, "%.14g", x), strtod(text, NULL) != x)
      snprintf(text, sizeof text, "%.17g", x);
    put(b, text, strlen(text));
  }
}

/* Each thread's last day as text ("\"2026-05-19T"): events come in runs
 * of one day. A timestamp (int64 nanoseconds) falls within the years 1677
 * to 2262, so the text fits. */
static _Thread_local struct {
  double day;
  bool valid;
  char text[16];
  size_t len;
} last_day;

/* Two digits of v (0 to 99) at p. */
static void two_digits(char *p, int v)
{
  p[0] = (char)('0' + v / 10);
  p[1] = (char)('0' + v % 10);
}

/* date.iso8601_utc_ms: rounded to the microsecond first (as the double
 * Lua reads), then cut to the millisecond. Within 64 reserved bytes. */
static void put_timestamp(buf *b, int64_t ns)
{
  double ms_total = floor(floor((double)ns / 1e3 + 0.5) / 1e3);
  double second = floor(ms_total / 1000);
  double day = floor(second / 86400);
  int ms = (int)(ms_total - second * 1000);
  int in_day = (int)(second - day * 86400);
  char clock[14] = {0, 0, ':', 0, 0, ':', 0, 0, '.', (char)('0' + ms / 100),
                    (char)('0' + ms / 10 % 10), (char)('0' + ms % 10), 'Z',
                    '"'};

  if (!last_day.valid || last_day.day != day) {
    time_t t = (time_t)second;
    struct tm tm;
    if (!gmtime_r(&t, &tm)) {
      PUT_LITERAL(b, "null");
      return;
    }
    last_day.len = (size_t)snprintf(last_day.text, sizeof last_day.text,
                                    "\"%04d-%02d-%02dT", tm.tm_year + 1900,
                                    tm.tm_mon + 1, tm.tm_mday);
    last_day.day = day;
    last_day.valid = true;
  }
  /* The time of day by hand: snprintf at each new second cost more than
   * all the rest of the timestamp. */
  two_digits(clock, in_day / 3600);
  two_digits(clock + 3, in_day / 60 % 60);
  two_digits(clock + 6, in_day % 60);
  /* All 16 bytes, a copy of fixed size; only the text counts. */
  memcpy(at(b), last_day.text, sizeof last_day.text);
  b->len += last_day.len;
  put(b, clock, sizeof clock);
}

/* A header string under its key (",\"message\":"), if set. */
static bool put_span(buf *b, const msg *m, const char *key, size_t key_len,
                     msg_span s)
{
  if (s.len == 0) return true;
  return put_keyed_quoted(b, key, key_len, msg_str(m, s), s.len);
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
  /* "message" is always there, "" for an empty Payload (an empty line). */
  ok = put_keyed_quoted(b, ",\"message\":", sizeof ",\"message\":" - 1,
                        m->payload.len ? msg_str(m, m->payload) : "",
                        m->payload.len) &&
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
