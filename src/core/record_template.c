/* record_template.c - see record_template.h. */
#include "record_template.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A part is literal text or a reference: a header, or a field by name.
 * Both keep their text in the template's own copy of the source. */
typedef struct {
  enum { PART_TEXT, PART_HEADER, PART_FIELD } kind;
  msg_header header;
  size_t off, len;
} part;

struct record_template {
  char *text;
  part *parts;
  size_t nparts;
};

static bool add_part(record_template *t, part p)
{
  part *parts = realloc(t->parts, (t->nparts + 1) * sizeof *parts);

  if (!parts) return false;
  t->parts = parts;
  t->parts[t->nparts++] = p;
  return true;
}

/* The reference between "%{" and "}": text[off, off + len). */
static part reference(const char *text, size_t off, size_t len)
{
  static const char fields[] = "Fields[";
  size_t n = sizeof fields - 1;
  msg_header h;

  if (len > n + 1 && memcmp(text + off, fields, n) == 0 &&
      text[off + len - 1] == ']')
    return (part){PART_FIELD, MSG_H_COUNT, off + n, len - n - 1};
  h = msg_header_by_name(text + off, len);
  return (part){h == MSG_H_COUNT ? PART_FIELD : PART_HEADER, h, off, len};
}

record_template *record_template_compile(const char *text, char *err,
                                         size_t errlen)
{
  record_template *t = calloc(1, sizeof *t);
  size_t at = 0, len = strlen(text);

  if (!t || !(t->text = strdup(text))) goto out_of_memory;
  while (at < len) {
    const char *ref = strstr(t->text + at, "%{");
    size_t start = ref ? (size_t)(ref - t->text) : len, end;
    if (start > at && !add_part(t, (part){PART_TEXT, MSG_H_COUNT, at,
                                          start - at}))
      goto out_of_memory;
    if (!ref) break;
    end = start + 2;
    while (end < len && t->text[end] != '}') end++;
    if (end == len || end == start + 2) {
      snprintf(err, errlen, "'%s': the %%{ at byte %zu %s", text, start + 1,
               end == len ? "has no closing }" : "names nothing");
      record_template_free(t);
      return NULL;
    }
    if (!add_part(t, reference(t->text, start + 2, end - start - 2)))
      goto out_of_memory;
    at = end + 1;
  }
  return t;
out_of_memory:
  snprintf(err, errlen, "out of memory");
  record_template_free(t);
  return NULL;
}

bool record_template_is_static(const record_template *t)
{
  for (size_t i = 0; i < t->nparts; i++)
    if (t->parts[i].kind != PART_TEXT) return false;
  return true;
}

static bool append_span(buf *b, const msg *m, msg_span s)
{
  return buf_append(b, msg_str(m, s), s.len);
}

static bool append_number(buf *b, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));

static bool append_number(buf *b, const char *fmt, ...)
{
  char text[40];
  va_list ap;
  int n;

  va_start(ap, fmt);
  n = vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  return buf_append(b, text, (size_t)n);
}

static bool append_uuid(buf *b, const uint8_t *u)
{
  char text[37];
  size_t n = 0;

  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text[n++] = '-';
    n += (size_t)snprintf(text + n, sizeof text - n, "%02x", u[i]);
  }
  return buf_append(b, text, n);
}

static bool append_header(buf *b, const msg *m, msg_header h)
{
  switch (h) {
  case MSG_H_UUID: return !m->has_uuid || append_uuid(b, m->uuid);
  case MSG_H_TIMESTAMP: return append_number(b, "%" PRId64, m->timestamp);
  case MSG_H_TYPE: return append_span(b, m, m->type);
  case MSG_H_LOGGER: return append_span(b, m, m->logger);
  case MSG_H_SEVERITY:
    return !m->has_severity || append_number(b, "%" PRId32, m->severity);
  case MSG_H_PAYLOAD: return append_span(b, m, m->payload);
  case MSG_H_ENV_VERSION: return append_span(b, m, m->env_version);
  case MSG_H_PID: return !m->has_pid || append_number(b, "%" PRId32, m->pid);
  default: return append_span(b, m, m->hostname);
  }
}

static bool append_field(buf *b, const msg *m, const char *name, size_t len)
{
  const msg_field *f = msg_find_field(m, name, len, 0);
  const msg_value *v;

  if (!f || f->count == 0) return true;
  v = msg_field_values(m, f);
  switch (f->type) {
  case MSG_STRING:
  case MSG_BYTES: return append_span(b, m, v->s);
  case MSG_INTEGER: return append_number(b, "%" PRId64, v->i);
  case MSG_DOUBLE: return append_number(b, "%.17g", v->d);
  default: return buf_append(b, v->b ? "true" : "false", v->b ? 4 : 5);
  }
}

bool record_template_render(const record_template *t, const msg *m, buf *b)
{
  for (size_t i = 0; i < t->nparts; i++) {
    const part *p = &t->parts[i];
    bool ok = p->kind == PART_TEXT ? buf_append(b, t->text + p->off, p->len)
            : p->kind == PART_HEADER ? append_header(b, m, p->header)
            : append_field(b, m, t->text + p->off, p->len);
    if (!ok) return false;
  }
  return true;
}

void record_template_free(record_template *t)
{
  if (!t) return;
  free(t->text);
  free(t->parts);
  free(t);
}
