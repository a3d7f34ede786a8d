/*
 * buf.h - a growable byte buffer, reused across events so that appending
 * allocates only while it is still growing to its working size.
 */
#ifndef LUMBERJIT_BUF_H
#define LUMBERJIT_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

typedef struct {
  char *data;
  size_t len;
  size_t cap;
} buf;

void buf_free(buf *b);
/* Makes room for `more` bytes past len; false when memory is exhausted. */
bool buf_reserve(buf *b, size_t more);
/* Grows the buffer and appends: buf_append's way once it is full. */
bool buf_append_growing(buf *b, const void *bytes, size_t len);

/* Inline: the JSON writer and the job copies append a few bytes at a
 * time, mostly into room the buffer has. */
static inline bool buf_append(buf *b, const void *bytes, size_t len)
{
  if (len > b->cap - b->len) return buf_append_growing(b, bytes, len);
  if (len) memcpy(b->data + b->len, bytes, len);
  b->len += len;
  return true;
}

/* A C string, without its NUL. */
static inline bool buf_append_str(buf *b, const char *s)
{
  return buf_append(b, s, strlen(s));
}

static inline void buf_clear(buf *b) { b->len = 0; }
/* Appends printf's text; false when out of memory. */
bool buf_appendf(buf *b, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));

#endif
