/*
 * message_text.c - a message as lines for a person to read (message_text.h).
 */
#include "message_text.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "utf8.h"

bool message_text_quote(buf *b, const char *s, size_t len)
{
  const unsigned char *u = (const unsigned char *)s;
  bool ok = buf_append_str(b, "\"");

  for (size_t i = 0; i < len && ok;) {
    char esc[8];
    size_t n = u[i] >= 0x20 && u[i] != 0x7f ? utf8_sequence_len(u + i, len - i)
                                            : 0;
    if (u[i] == '"' || u[i] == '\\') {
      ok = buf_append(b, u[i] == '"' ? "\\\"" : "\\\\", 2);
      n = 1;
    } else if (n) {
      ok = buf_append(b, s + i, n);
    } else {
      const char *named = u[i] == '\n' ? "\\n" : u[i] == '\r' ? "\\r"
                        : u[i] == '\t' ? "\\t" : NULL;
      if (!named) snprintf(esc, sizeof esc, "\\x%02x", u[i]);
      ok = buf_append_str(b, named ? named : esc);
      n = 1;
    }
    i += n;
  }
  return ok && buf_append_str(b, "\"");
}

/* The shortest "%.*g" that reads back as d, with ".0" added when that
 * looks like an integer. */
static bool put_double(buf *b, double d)
{
  char text[40];

  if (isnan(d)) return buf_append_str(b, "nan");
  if (isinf(d)) return buf_append_str(b, d < 0 ? "-inf" : "inf");
  for (int precision = 15; precision <= 17; precision++) {
    snprintf(text, sizeof text, "%.*g", precision, d);
    if (strtod(text, NULL) == d) break;
  }
  return buf_append_str(b, text) &&
         (strpbrk(text, ".e") || buf_append_str(b, ".0"));
}

static bool put_value(buf *b, const msg *m, msg_value_type type, msg_value v)
{
  char text[32];

  switch (type) {
  case MSG_STRING:
    return message_text_quote(b, msg_str(m, v.s), v.s.len);
  case MSG_BYTES:
    return buf_append_str(b, "b") &&
           message_text_quote(b, msg_str(m, v.s), v.s.len);
  case MSG_INTEGER:
    snprintf(text, sizeof text, "%" PRId64, v.i);
    return buf_append_str(b, text);
  case MSG_DOUBLE:
    return put_double(b, v.d);
  case MSG_BOOL:
    return buf_append_str(b, v.b ? "true" : "false");
  }
  return false;
}

static bool put_field(buf *b, const msg *m, const msg_field *f,
                      const char *indent)
{
  const msg_value *v = msg_field_values(m, f);
  bool ok = buf_append_str(b, indent) && buf_append_str(b, "  ") &&
            buf_append(b, msg_str(m, f->name), f->name.len) &&
            buf_append_str(b, ": ");

  if (f->count != 1 && ok) ok = buf_append_str(b, "[");
  for (uint32_t k = 0; k < f->count && ok; k++)
    ok = (k == 0 || buf_append_str(b, ", ")) && put_value(b, m, f->type, v[k]);
  if (f->count != 1 && ok) ok = buf_append_str(b, "]");
  if (f->representation.len && ok)
    ok = buf_append_str(b, " (representation ") &&
         message_text_quote(b, msg_str(m, f->representation),
                            f->representation.len) && buf_append_str(b, ")");
  return ok && buf_append_str(b, "\n");
}

static bool put_timestamp(buf *b, int64_t ns)
{
  int64_t secs = ns / 1000000000, frac = ns % 1000000000;
  time_t t;
  struct tm tm;
  char text[96];

  if (frac < 0) secs--, frac += 1000000000;
  t = (time_t)secs;
  if (!gmtime_r(&t, &tm)) {
    snprintf(text, sizeof text, "%" PRId64, ns);
    return buf_append_str(b, text);
  }
  snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%09" PRId64
           "Z (%" PRId64 ")", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
           tm.tm_hour, tm.tm_min, tm.tm_sec, frac, ns);
  return buf_append_str(b, text);
}

static bool put_string_header(buf *b, const msg *m, const char *indent,
                              const char *name, msg_span s)
{
  if (!s.len) return true;
  return buf_append_str(b, indent) && buf_append_str(b, name) &&
         buf_append_str(b, ": ") &&
         message_text_quote(b, msg_str(m, s), s.len) && buf_append_str(b, "\n");
}

static bool put_integer_header(buf *b, const char *indent, const char *name,
                               bool has, int64_t value)
{
  char text[64];

  if (!has) return true;
  snprintf(text, sizeof text, "%s: %" PRId64 "\n", name, value);
  return buf_append_str(b, indent) && buf_append_str(b, text);
}

static bool put_uuid(buf *b, const msg *m, const char *indent)
{
  char text[48];
  size_t n = 0;

  if (!m->has_uuid) return true;
  for (int i = 0; i < 16; i++)
    n += (size_t)snprintf(text + n, sizeof text - n, "%s%02x",
                          i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "",
                          m->uuid[i]);
  return buf_append_str(b, indent) && buf_append_str(b, "Uuid: ") &&
         buf_append_str(b, text) && buf_append_str(b, "\n");
}

bool message_text(buf *b, const msg *m, const char *indent)
{
  bool ok = buf_append_str(b, indent) && buf_append_str(b, "Timestamp: ") &&
            put_timestamp(b, m->timestamp) && buf_append_str(b, "\n") &&
            put_string_header(b, m, indent, "Type", m->type) &&
            put_string_header(b, m, indent, "Logger", m->logger) &&
            put_string_header(b, m, indent, "Hostname", m->hostname) &&
            put_integer_header(b, indent, "Severity", m->has_severity,
                               m->severity) &&
            put_integer_header(b, indent, "Pid", m->has_pid, m->pid) &&
            put_string_header(b, m, indent, "Payload", m->payload) &&
            put_string_header(b, m, indent, "EnvVersion", m->env_version) &&
            put_uuid(b, m, indent);

  if (m->nfields && ok)
    ok = buf_append_str(b, indent) && buf_append_str(b, "Fields:\n");
  for (uint32_t i = 0; i < m->nfields && ok; i++)
    ok = put_field(b, m, &m->fields[i], indent);
  return ok;
}
