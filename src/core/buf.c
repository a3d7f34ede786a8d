/* buf.c - growable byte buffer (see buf.h). */
#include "buf.h"

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
