/*
 * le.h - little-endian integers of 1 to 8 bytes in byte buffers: the
 * layouts lumberjit writes itself (a disk buffer's segments and records, a
 * Kafka record's head), the same on every machine.
 */
#ifndef LUMBERJIT_LE_H
#define LUMBERJIT_LE_H

#include <stdint.h>

static inline void le_put(void *to, uint64_t v, int n)
{
  unsigned char *p = to;

  for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint64_t le_get(const void *from, int n)
{
  const unsigned char *p = from;
  uint64_t v = 0;

  for (int i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

#endif
