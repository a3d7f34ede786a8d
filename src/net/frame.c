/* frame.c - see frame.h. */
#include "frame.h"

#include <stdio.h>
#include <string.h>

/* An octet count has at most this many digits: frames up to ~1 GB. */
#define COUNT_DIGITS_MAX 9

void frame_init(frame_reader *f, framing mode, size_t max, bool keep_cr)
{
  *f = (frame_reader){.mode = mode, .max = max ? max : 1, .keep_cr = keep_cr};
}

/* A message's last len bytes, its ending LF left out: a CR before that LF
 * goes unless keep_cr, from these bytes or, when they are none, from the
 * held ones (a CR and its LF can come in different reads). */
static size_t without_cr(frame_reader *f, const char *bytes, size_t len)
{
  if (f->keep_cr) return len;
  if (len > 0 && bytes[len - 1] == '\r') return len - 1;
  if (len == 0 && f->held.len > 0 && f->held.data[f->held.len - 1] == '\r')
    f->held.len--;
  return len;
}

void frame_free(frame_reader *f)
{
  buf_free(&f->held);
}

/* A piece of an overlong message, or of malformed bytes. */
static void hand_piece(frame_reader *f, const frame_handler *h,
                       const char *bytes, size_t len)
{
  if (f->state == FRAME_GARBAGE) h->malformed(h->ud, bytes, len, f->reason);
  else h->message(h->ud, bytes, len, ++f->piece);
}

/* The first max held bytes go on as a piece; the rest (a CR add kept past
 * max) stays held. */
static void hand_full(frame_reader *f, const frame_handler *h)
{
  size_t rest = f->held.len - f->max;

  hand_piece(f, h, f->held.data, f->max);
  memmove(f->held.data, f->held.data + f->max, rest);
  f->held.len = rest;
}

/* Holds bytes of the current message; once it is known to be longer than
 * max (more bytes come while max are held), the held ones go on as a
 * piece. A CR that comes last in a read once max are held is held past
 * max: it may be the CR of the message's ending CRLF, no part of it
 * (without_cr), and the next byte says. Out of memory, held and new bytes
 * go on as pieces at once. */
static void add(frame_reader *f, const frame_handler *h, const char *bytes,
                size_t len)
{
  while (len > 0) {
    bool cr_past_max = f->held.len == f->max && len == 1 && *bytes == '\r' &&
                       !f->keep_cr;
    size_t take = 1;
    if (!cr_past_max) {
      while (f->held.len >= f->max) hand_full(f, h);
      take = f->max - f->held.len < len ? f->max - f->held.len : len;
    }
    if (!buf_append(&f->held, bytes, take)) {
      if (f->held.len > 0) hand_piece(f, h, f->held.data, f->held.len);
      f->held.len = 0;
      hand_piece(f, h, bytes, take);
    }
    bytes += take;
    len -= take;
  }
}

/* The current message ends with these bytes. One that came whole in this
 * read goes on from the caller's buffer; an empty one is no message. */
static void end_message(frame_reader *f, const frame_handler *h,
                        const char *bytes, size_t len)
{
  bool garbage = f->state == FRAME_GARBAGE;

  if (f->held.len == 0 && f->piece == 0 && len <= f->max) {
    if (len > 0 && garbage) h->malformed(h->ud, bytes, len, f->reason);
    else if (len > 0) h->message(h->ud, bytes, len, 0);
    else if (!garbage && h->empty) h->empty(h->ud);
  } else {
    add(f, h, bytes, len);
    while (f->held.len > f->max) hand_full(f, h); /* a CR past max */
    if (garbage) h->malformed(h->ud, f->held.data, f->held.len, f->reason);
    /* Nothing held after pieces went on (max 1: a held CR went as a piece,
     * and the one after it was the ending CRLF's) is no further piece. */
    else if (f->held.len > 0 || f->piece == 0)
      h->message(h->ud, f->held.data, f->held.len, f->piece ? ++f->piece : 0);
  }
  f->held.len = 0;
  f->piece = 0;
  f->state = FRAME_START;
}

/* The frame turned out to be `next` (a line, or garbage): the count
 * digits read so far, if any, are held as its first bytes. */
static void count_was_text(frame_reader *f, const frame_handler *h, int next)
{
  char digits[COUNT_DIGITS_MAX + 1];
  int n = f->state == FRAME_COUNT ? snprintf(digits, sizeof digits, "%zu",
                                             f->count)
                                  : 0;

  f->state = next;
  add(f, h, digits, (size_t)n);
}

/* What was read is no frame: it is held as malformed up to the next LF. */
static void garbage(frame_reader *f, const frame_handler *h, const char *why)
{
  snprintf(f->reason, sizeof f->reason, "octet-counted framing: %s", why);
  count_was_text(f, h, FRAME_GARBAGE);
}

/* FRAMING_AUTO: the first frame was no count, so the stream is lines; the
 * digits read are the start of the first. */
static void lines_after_all(frame_reader *f, const frame_handler *h)
{
  f->mode = FRAMING_NEWLINE;
  count_was_text(f, h, FRAME_LINE);
}

/* Reads count digits; returns the bytes used. */
static size_t read_count(frame_reader *f, const frame_handler *h,
                         const char *p, const char *end)
{
  const char *start = p;

  while (p < end && *p >= '0' && *p <= '9' && f->digits < COUNT_DIGITS_MAX) {
    f->count = f->count * 10 + (size_t)(*p++ - '0');
    f->digits++;
  }
  if (p == end) return (size_t)(p - start);
  if (*p == ' ') {
    if (f->mode == FRAMING_AUTO) f->mode = FRAMING_OCTET_COUNTED;
    f->state = FRAME_OCTETS;
    f->frame_len = f->count;
    return (size_t)(p + 1 - start);
  }
  if (f->mode == FRAMING_AUTO) lines_after_all(f, h);
  else if (*p >= '0' && *p <= '9') garbage(f, h, "an octet count longer "
                                                 "than 9 digits");
  else garbage(f, h, "no space after the octet count");
  return (size_t)(p - start);
}

/* Up to and without the next LF (and a CR before it, unless keep_cr) ends
 * the message. */
static size_t read_line(frame_reader *f, const frame_handler *h,
                        const char *p, const char *end)
{
  const char *nl = memchr(p, '\n', (size_t)(end - p));

  if (!nl) {
    add(f, h, p, (size_t)(end - p));
    return (size_t)(end - p);
  }
  end_message(f, h, p, without_cr(f, p, (size_t)(nl - p)));
  return (size_t)(nl + 1 - p);
}

/* The frame's last n bytes (n >= 1) came: a trailing LF is no part of its
 * message (frame.h). It is left out before they are held, so that a
 * message of max bytes and its LF is one message, not two pieces. */
static void end_octets(frame_reader *f, const frame_handler *h,
                       const char *p, size_t n)
{
  if (p[n - 1] == '\n') n = without_cr(f, p, n - 1);
  end_message(f, h, p, n);
}

/* What a frame starts with says what it is. */
static size_t read_start(frame_reader *f, const frame_handler *h, char c)
{
  if (f->mode == FRAMING_NEWLINE) {
    f->state = FRAME_LINE;
    return 0;
  }
  if (c == '\n' || c == '\r') return 1; /* between octet-counted frames */
  f->count = 0;
  f->digits = 0;
  if (c >= '1' && c <= '9') {
    f->state = FRAME_COUNT;
    return 0;
  }
  if (f->mode == FRAMING_AUTO) {
    lines_after_all(f, h);
    return 0;
  }
  garbage(f, h, "a frame that starts with no octet count");
  return 0;
}

void frame_feed(frame_reader *f, const char *bytes, size_t len,
                const frame_handler *h)
{
  const char *p = bytes, *end = bytes + len;

  while (p < end) {
    size_t n;
    switch (f->state) {
    case FRAME_START:
      p += read_start(f, h, *p);
      break;
    case FRAME_COUNT:
      p += read_count(f, h, p, end);
      break;
    case FRAME_OCTETS:
      n = f->count < (size_t)(end - p) ? f->count : (size_t)(end - p);
      f->count -= n;
      if (f->count == 0) end_octets(f, h, p, n);
      else add(f, h, p, n);
      p += n;
      break;
    case FRAME_LINE:
    case FRAME_GARBAGE:
      p += read_line(f, h, p, end);
      break;
    }
  }
}

void frame_end(frame_reader *f, const frame_handler *h)
{
  switch (f->state) {
  case FRAME_START:
    break;
  case FRAME_COUNT:
    if (f->mode == FRAMING_AUTO) lines_after_all(f, h);
    else garbage(f, h, "the stream ended within an octet count");
    end_message(f, h, NULL, 0);
    break;
  case FRAME_OCTETS:
    /* A CR held past max (add) waited to see if an LF came: the max bytes
     * before it are the frame's piece, as they are when the CR comes in a
     * longer read; only what is held after them is malformed. */
    while (f->held.len > f->max) hand_full(f, h);
    f->state = FRAME_GARBAGE;
    snprintf(f->reason, sizeof f->reason, "octet-counted framing: the "
             "stream ended %zu bytes short of a %zu-byte frame", f->count,
             f->frame_len);
    /* Even a frame with no bytes yet is reported, by its count. */
    if (f->held.len == 0 && f->piece == 0) h->malformed(h->ud, "", 0, f->reason);
    end_message(f, h, NULL, 0);
    break;
  case FRAME_LINE:
  case FRAME_GARBAGE:
    end_message(f, h, NULL, 0);
    break;
  }
}

void frame_cut(frame_reader *f, const frame_handler *h, const char *why)
{
  size_t short_by = f->count, frame_len = f->frame_len;
  int was = f->state;

  if (was == FRAME_START) return;
  if (was == FRAME_COUNT) count_was_text(f, h, FRAME_GARBAGE);
  /* A CR held past max: the max bytes before it go as frame_end has it. */
  while (f->held.len > f->max) hand_full(f, h);
  if (was == FRAME_OCTETS)
    snprintf(f->reason, sizeof f->reason, "%s (%zu bytes short of a %zu-byte "
             "frame)", why, short_by, frame_len);
  else if (was != FRAME_GARBAGE) /* garbage keeps why it is garbage */
    snprintf(f->reason, sizeof f->reason, "%s", why);
  f->state = FRAME_GARBAGE;
  /* A begun frame with no bytes yet is reported too, by its reason. */
  if (f->held.len == 0 && f->piece == 0) h->malformed(h->ud, "", 0, f->reason);
  end_message(f, h, NULL, 0);
}

void frame_datagram(size_t max, bool keep_cr, const char *bytes, size_t len,
                    const frame_handler *h)
{
  if (len > 0 && bytes[len - 1] == '\n') {
    len--;
    if (!keep_cr && len > 0 && bytes[len - 1] == '\r') len--;
  }
  if (len == 0) {
    if (h->empty) h->empty(h->ud);
    return;
  }
  if (len <= max) {
    h->message(h->ud, bytes, len, 0);
    return;
  }
  for (unsigned piece = 1; len > 0; piece++) {
    size_t n = len < max ? len : max;
    h->message(h->ud, bytes, n, piece);
    bytes += n;
    len -= n;
  }
}
