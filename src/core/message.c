/*
 * message.c - the compact message: arena-backed strings, field and value
 * tables that keep their memory across msg_reset().
 */
#include "message.h"

#include <stdlib.h>
#include <string.h>

static const char *const header_names[MSG_H_COUNT] = {
  "Uuid", "Timestamp", "Type", "Logger", "Severity",
  "Payload", "EnvVersion", "Pid", "Hostname"
};

/* The arena of a message that stored no byte yet: never NULL, so that a
 * span's bytes are arena + off with no test (msg_str: NULL + 0 would be
 * undefined), and never written (capacity 0) nor freed. */
static char empty_arena[1];

void msg_init(msg *m)
{
  memset(m, 0, sizeof *m);
  m->arena = empty_arena;
}

void msg_free(msg *m)
{
  free(m->fields);
  free(m->values);
  if (m->arena_cap) free(m->arena);
  msg_init(m);
}

void msg_reset(msg *m)
{
  msg_field *fields = m->fields;
  msg_value *values = m->values;
  char *arena = m->arena;
  uint32_t fcap = m->fields_cap, vcap = m->values_cap, acap = m->arena_cap;

  msg_init(m);
  m->fields = fields;
  m->fields_cap = fcap;
  m->values = values;
  m->values_cap = vcap;
  m->arena = arena;
  m->arena_cap = acap;
}

/* Grows *p to hold at least `need` elements of `size` bytes, doubling;
 * with *cap 0, *p (NULL, or the empty arena) is not the allocator's. */
static bool grow(void **p, uint32_t *cap, uint64_t need, size_t size)
{
  uint64_t n = *cap ? *cap : 16;
  void *np;

  if (need <= *cap) return true;
  if (need > UINT32_MAX) return false;
  while (n < need) n *= 2;
  if (n > UINT32_MAX) n = UINT32_MAX;
  np = realloc(*cap ? *p : NULL, (size_t)n * size);
  if (!np) return false;
  *p = np;
  *cap = (uint32_t)n;
  return true;
}

bool msg_store_growing(msg *m, const void *bytes, size_t len, msg_span *out)
{
  uint64_t need = (uint64_t)m->arena_len + len;

  if (!grow((void **)&m->arena, &m->arena_cap, need, 1)) return false;
  if (len) memcpy(m->arena + m->arena_len, bytes, len);
  out->off = m->arena_len;
  out->len = (uint32_t)len;
  m->arena_len = (uint32_t)need;
  return true;
}

msg_field *msg_add_field_growing(msg *m, const char *name, size_t name_len,
                                 msg_value_type type, uint32_t count)
{
  msg_field *f;
  msg_span sname;

  if (!grow((void **)&m->fields, &m->fields_cap, (uint64_t)m->nfields + 1,
            sizeof *m->fields) ||
      !grow((void **)&m->values, &m->values_cap,
            (uint64_t)m->nvalues + count, sizeof *m->values) ||
      !msg_store(m, name, name_len, &sname))
    return NULL;
  f = &m->fields[m->nfields++];
  *f = (msg_field){.name = sname, .type = type, .first = m->nvalues,
                   .count = count};
  /* Element by element: most fields have one value, and a memset of a
   * variable size is a library call. */
  for (uint32_t i = 0; i < count; i++) m->values[m->nvalues + i] = (msg_value){.i = 0};
  m->nvalues += count;
  return f;
}

const msg_field *msg_find_field(const msg *m, const char *name,
                                size_t name_len, unsigned fi)
{
  for (uint32_t i = 0; i < m->nfields; i++) {
    const msg_field *f = &m->fields[i];
    if (f->name.len == name_len &&
        memcmp(msg_str(m, f->name), name, name_len) == 0 && fi-- == 0)
      return f;
  }
  return NULL;
}

static bool name_before(const msg *m, const msg_field *a, const msg_field *b)
{
  return msg_name_before(msg_str(m, a->name), a->name.len,
                         msg_str(m, b->name), b->name.len);
}

/* Insertion sort: a message has a handful of fields. */
void msg_sort_fields(msg *m, uint32_t from)
{
  for (uint32_t i = from + 1; i < m->nfields; i++) {
    msg_field f = m->fields[i];
    uint32_t j = i;
    for (; j > from && name_before(m, &f, &m->fields[j - 1]); j--)
      m->fields[j] = m->fields[j - 1];
    m->fields[j] = f;
  }
}

const char *msg_header_name(msg_header h)
{
  return h < MSG_H_COUNT ? header_names[h] : NULL;
}

msg_header msg_header_candidate(const char *name, size_t len)
{
  switch (len) {
  case 3: return MSG_H_PID;
  case 4: return name[0] == 'T' ? MSG_H_TYPE : MSG_H_UUID;
  case 6: return MSG_H_LOGGER;
  case 7: return MSG_H_PAYLOAD;
  case 8: return name[0] == 'S' ? MSG_H_SEVERITY : MSG_H_HOSTNAME;
  case 9: return MSG_H_TIMESTAMP;
  case 10: return MSG_H_ENV_VERSION;
  default: return MSG_H_COUNT;
  }
}

/* Called for every key a decoder injects and every read_message, so the
 * length and first letter pick the one candidate to compare. */
msg_header msg_header_by_name(const char *name, size_t len)
{
  msg_header h = msg_header_candidate(name, len);

  return h != MSG_H_COUNT && memcmp(header_names[h], name, len) == 0
           ? h : MSG_H_COUNT;
}

msg_span *msg_header_span(msg *m, msg_header h)
{
  switch (h) {
  case MSG_H_TYPE: return &m->type;
  case MSG_H_LOGGER: return &m->logger;
  case MSG_H_PAYLOAD: return &m->payload;
  case MSG_H_ENV_VERSION: return &m->env_version;
  case MSG_H_HOSTNAME: return &m->hostname;
  default: return NULL;
  }
}

static bool batch_grow(msg_batch *b)
{
  uint32_t cap = b->cap ? b->cap * 2 : 8;
  msg *nm;

  if (b->len < b->cap) return true;
  nm = realloc(b->msgs, cap * sizeof *nm);
  if (!nm) return false;
  for (uint32_t i = b->cap; i < cap; i++) msg_init(&nm[i]);
  b->msgs = nm;
  b->cap = cap;
  return true;
}

bool msg_batch_push(msg_batch *b, msg *m)
{
  msg old;

  if (!batch_grow(b)) return false;
  old = b->msgs[b->len];
  b->msgs[b->len++] = *m;
  *m = old;
  msg_reset(m);
  return true;
}

void msg_batch_trim(msg_batch *b, uint32_t keep)
{
  uint32_t cap = b->len + keep;
  msg *nm;

  if (cap >= b->cap) return;
  for (uint32_t i = cap; i < b->cap; i++) msg_free(&b->msgs[i]);
  b->cap = cap;
  if (cap == 0) {
    free(b->msgs);
    b->msgs = NULL;
    return;
  }
  nm = realloc(b->msgs, cap * sizeof *nm);
  if (nm) b->msgs = nm;
}

void msg_batch_free(msg_batch *b)
{
  for (uint32_t i = 0; i < b->cap; i++) msg_free(&b->msgs[i]);
  free(b->msgs);
  b->msgs = NULL;
  b->len = b->cap = 0;
}
