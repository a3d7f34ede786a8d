/*
 * utf8.h - well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates,
 * nothing above U+10FFFF), for the JSON writers.
 */
#ifndef LUMBERJIT_UTF8_H
#define LUMBERJIT_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length of the valid UTF-8 sequence at s (1 to 4), or 0. */
static inline size_t utf8_sequence_len(const unsigned char *s, size_t avail)
{
  size_t n;
  uint32_t cp;

  if (s[0] < 0x80) return 1;
  if ((s[0] & 0xE0) == 0xC0) n = 2, cp = s[0] & 0x1F;
  else if ((s[0] & 0xF0) == 0xE0) n = 3, cp = s[0] & 0x0F;
  else if ((s[0] & 0xF8) == 0xF0) n = 4, cp = s[0] & 0x07;
  else return 0;
  if (n > avail) return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = cp << 6 | (s[i] & 0x3F);
  }
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) ||
      (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

/* The bytes at s that one U+FFFD replaces, where utf8_sequence_len found
 * no valid sequence: the start of a sequence cut short (a lead byte and the
 * continuation bytes that could follow it), or else one byte. This is
 * Unicode's "maximal subpart" practice, which Rust's from_utf8_lossy (so
 * Vector), Python and browsers follow. */
static inline size_t utf8_invalid_len(const unsigned char *s, size_t avail)
{
  unsigned char lo = 0x80, hi = 0xBF;
  size_t n, i = 1;

  if (s[0] >= 0xC2 && s[0] <= 0xDF) n = 2;
  else if (s[0] >= 0xE0 && s[0] <= 0xEF) n = 3;
  else if (s[0] >= 0xF0 && s[0] <= 0xF4) n = 4;
  else return 1;
  if (s[0] == 0xE0) lo = 0xA0;      /* no overlong form */
  else if (s[0] == 0xED) hi = 0x9F; /* no surrogate */
  else if (s[0] == 0xF0) lo = 0x90; /* no overlong form */
  else if (s[0] == 0xF4) hi = 0x8F; /* nothing above U+10FFFF */
  if (i < avail && s[i] >= lo && s[i] <= hi) {
    i++;
    while (i < n && i < avail && (s[i] & 0xC0) == 0x80) i++;
  }
  return i;
}

#endif
