/*
 * frame.h - cuts a syslog byte stream into messages (RFC 6587).
 *
 * Two framings share TCP, TLS and Unix stream sockets:
 *   octet counting       "<count> <count bytes>", e.g. "11 <13>a b c:d"
 *   non-transparent      one message per line, ended by LF
 * With FRAMING_AUTO each connection's first frame decides: digits and a
 * space make it octet-counted, anything else newline-framed; rsyslog and
 * syslog-ng decide per frame instead, which misreads a newline-framed line
 * that starts with a number.
 *
 * Line endings, the rule of every input: the LF that ends a line is no
 * part of its message, and neither is a CR just before it, unless keep_cr.
 * An octet-counted frame or a datagram whose message ends in LF loses that
 * LF too (and a CR before it, by the same rule), as rsyslog's parser drops
 * a trailing LF from every message it receives (DropTrailingLFOnReception,
 * on by default); an LF or CR inside a message stays. A CR that ends a
 * message with no LF after it stays.
 *
 * Nothing is lost: a message longer than max is handed on in max-byte
 * pieces numbered from 1 (as input.h does with lines), and bytes that are
 * no frame (a bad octet count, a frame cut short by the peer closing) go
 * to the handler's malformed callback with the reason, up to the next LF,
 * where reading resyncs. Memory stays bounded by max per connection.
 * Messages that arrive whole in one read are handed on from the caller's
 * buffer, uncopied.
 */
#ifndef LUMBERJIT_FRAME_H
#define LUMBERJIT_FRAME_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

typedef enum { FRAMING_AUTO, FRAMING_OCTET_COUNTED, FRAMING_NEWLINE } framing;

typedef struct {
  /* piece: 0 for a whole message, else the number of this piece of one
   * longer than max. */
  void (*message)(void *ud, const char *bytes, size_t len, unsigned piece);
  /* Bytes that are no frame, and why (at most max at a time). */
  void (*malformed)(void *ud, const char *bytes, size_t len,
                    const char *reason);
  void *ud;
  /* A frame with no bytes (a lone LF, "0 ", an empty datagram): no
   * message, but the caller may count it; NULL: not told. */
  void (*empty)(void *ud);
} frame_handler;

typedef struct {
  framing mode;          /* AUTO until the first frame decides */
  size_t max;
  bool keep_cr;          /* a CR before the ending LF stays */
  enum { FRAME_START, FRAME_COUNT, FRAME_OCTETS, FRAME_LINE,
         FRAME_GARBAGE } state;
  size_t count;          /* octets of the current frame, or still to come */
  unsigned digits;       /* FRAME_COUNT: digits of count read */
  size_t frame_len;      /* FRAME_OCTETS: the frame's whole count */
  buf held;              /* a message split across reads (< max bytes) */
  unsigned piece;        /* pieces of the current message handed on */
  char reason[256];      /* FRAME_GARBAGE: why */
} frame_reader;

void frame_init(frame_reader *f, framing mode, size_t max, bool keep_cr);
void frame_free(frame_reader *f);
/* Hands on every message the bytes complete; keeps the rest. */
void frame_feed(frame_reader *f, const char *bytes, size_t len,
                const frame_handler *h);
/* The stream ended: a last line without its LF is a message, a frame cut
 * short is malformed. */
void frame_end(frame_reader *f, const frame_handler *h);
/* The stream was cut on this side (a stop, a deadline, room made): a
 * begun message, whose rest is not coming, is malformed with why (an
 * octet-counted frame's says how short it is), never handed on as a
 * message. */
void frame_cut(frame_reader *f, const frame_handler *h, const char *why);
/* A datagram is one message, without one trailing LF (nor the CR before
 * it, unless keep_cr); longer than max, it goes in pieces as above. */
void frame_datagram(size_t max, bool keep_cr, const char *bytes, size_t len,
                    const frame_handler *h);

#endif
