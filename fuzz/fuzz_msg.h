/*
 * fuzz_msg.h - what the message targets share: a reader of the fuzzer's
 * bytes and a random message built from them (headers, every field type,
 * arrays, names and strings of any bytes, non-UTF-8 too).
 */
#ifndef LUMBERJIT_FUZZ_MSG_H
#define LUMBERJIT_FUZZ_MSG_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "message.h"

typedef struct {
  const uint8_t *p;
  size_t left;
} fuzz_in;

static inline uint8_t fuzz_byte(fuzz_in *in)
{
  if (!in->left) return 0;
  in->left--;
  return *in->p++;
}

static inline uint64_t fuzz_u64(fuzz_in *in)
{
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | fuzz_byte(in);
  return v;
}

/* Up to max bytes, the count read first. */
static inline const char *fuzz_bytes(fuzz_in *in, size_t max, size_t *len)
{
  size_t n = fuzz_byte(in) % (max + 1);
  const char *p = (const char *)in->p;
  if (n > in->left) n = in->left;
  in->p += n;
  in->left -= n;
  *len = n;
  return p;
}

static inline void fuzz_store(msg *m, fuzz_in *in, size_t max, msg_span *s)
{
  size_t n;
  const char *p = fuzz_bytes(in, max, &n);
  if (!msg_store(m, p, n, s)) abort();
}

/* A message: the headers a flag byte sets, then fields to the end of the
 * bytes (at most 16). */
static inline void fuzz_msg(msg *m, fuzz_in *in)
{
  uint8_t set = fuzz_byte(in);
  msg_reset(m);
  if (set & 1) m->timestamp = (int64_t)fuzz_u64(in);
  if (set & 2) m->severity = (int32_t)fuzz_u64(in), m->has_severity = true;
  if (set & 4) m->pid = (int32_t)fuzz_u64(in), m->has_pid = true;
  if (set & 8) fuzz_store(m, in, 40, &m->payload);
  if (set & 16) fuzz_store(m, in, 12, &m->hostname);
  if (set & 32) fuzz_store(m, in, 12, &m->type);
  if (set & 64) fuzz_store(m, in, 12, &m->logger);
  if (set & 128) fuzz_store(m, in, 12, &m->env_version);
  for (int k = 0; k < 16 && in->left > 0; k++) {
    size_t name_len;
    const char *name = fuzz_bytes(in, 10, &name_len);
    uint8_t t = fuzz_byte(in);
    msg_value_type type = (msg_value_type)(t % 5);
    uint32_t count = t & 0x80 ? 1 + (t >> 3) % 4 : 1;
    msg_field *f = msg_add_field(m, name, name_len, type, count);
    if (!f) abort();
    if (t & 0x40) fuzz_store(m, in, 8, &f->representation);
    for (uint32_t i = 0; i < count; i++) {
      msg_value *v = &msg_field_values(m, f)[i];
      switch (type) {
      case MSG_STRING:
      case MSG_BYTES: fuzz_store(m, in, 16, &v->s); break;
      case MSG_INTEGER: v->i = (int64_t)fuzz_u64(in); break;
      case MSG_DOUBLE: {
        uint64_t bits = fuzz_u64(in);
        memcpy(&v->d, &bits, sizeof v->d);
        break;
      }
      case MSG_BOOL: v->b = fuzz_byte(in) & 1; break;
      }
    }
  }
}

#endif
