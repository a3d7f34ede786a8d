/* buf.c - growable byte buffer (see buf.h). */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_free(buf *b)
{
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

bool buf_reserve(buf *b, size_t more)
{
  size_t cap = b->cap ? b->cap : 256;
  char *p;

  if (more <= b->cap - b->len) return true;
  if (more > (size_t)-1 / 2 - b->len) return false;
  while (cap - b->len < more) cap *= 2;
  p = realloc(b->data, cap);
  if (!p) return false;
  b->data = p;
  b->cap = cap;
  return true;
}

bool buf_append_growing(buf *b, const void *bytes, size_t len)
{
  if (!buf_reserve(b, len)) return false;
  if (len) memcpy(b->data + b->len, bytes, len);
  b->len += len;
  return true;
}

bool buf_appendf(buf *b, const char *fmt, ...)
{
  va_list ap;
  int n;

  va_start(ap, fmt);
  n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || !buf_reserve(b, (size_t)n + 1)) return false;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
  return true;
}
