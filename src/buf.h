/*
 * buf.h - a growable byte buffer, reused across events so that appending
 * allocates only while it is still growing to its working size.
 */
#ifndef LUMBERJIT_BUF_H
#define LUMBERJIT_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
  char *data;
  size_t len;
  size_t cap;
} buf;

void buf_free(buf *b);
/* Makes room for `more` bytes past len; false when memory is exhausted. */
bool buf_reserve(buf *b, size_t more);
bool buf_append(buf *b, const void *bytes, size_t len);

static inline void buf_clear(buf *b) { b->len = 0; }

#endif
