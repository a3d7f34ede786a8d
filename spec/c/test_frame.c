/*
 * test_frame.c - syslog stream framing (RFC 6587): both framings, the
 * first frame deciding, frames split at every byte, overlong messages in
 * pieces, malformed frames and where reading resyncs.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "frame.h"

#define MAX_OUT 16

typedef struct {
  char text[MAX_OUT][128];
  unsigned piece[MAX_OUT];
  bool bad[MAX_OUT];
  char reason[MAX_OUT][128];
  int n;
  int empty;             /* frames of no bytes */
} got;

static void on_message(void *ud, const char *bytes, size_t len, unsigned piece)
{
  got *g = ud;

  if (g->n < MAX_OUT) {
    snprintf(g->text[g->n], sizeof g->text[0], "%.*s", (int)len, bytes);
    g->piece[g->n] = piece;
  }
  g->n++;
}

static void on_malformed(void *ud, const char *bytes, size_t len,
                         const char *reason)
{
  got *g = ud;

  if (g->n < MAX_OUT) {
    snprintf(g->text[g->n], sizeof g->text[0], "%.*s", (int)len, bytes);
    snprintf(g->reason[g->n], sizeof g->reason[0], "%s", reason);
    g->bad[g->n] = true;
  }
  g->n++;
}

static void on_empty(void *ud)
{
  ((got *)ud)->empty++;
}

/* Feeds the stream whole, then again one byte at a time: both must give
 * the same frames. Returns the byte-at-a-time result in *g. */
static void frames_cr(framing mode, size_t max, bool keep_cr,
                      const char *stream, bool end, got *g)
{
  frame_handler h = {on_message, on_malformed, NULL, on_empty};
  got whole = {0};
  frame_reader f;

  h.ud = &whole;
  frame_init(&f, mode, max, keep_cr);
  frame_feed(&f, stream, strlen(stream), &h);
  if (end) frame_end(&f, &h);
  frame_free(&f);

  *g = (got){0};
  h.ud = g;
  frame_init(&f, mode, max, keep_cr);
  for (size_t i = 0; stream[i]; i++) frame_feed(&f, &stream[i], 1, &h);
  if (end) frame_end(&f, &h);
  frame_free(&f);
  CHECK(whole.n == g->n && whole.empty == g->empty);
  for (int i = 0; i < whole.n && i < MAX_OUT; i++)
    CHECK(strcmp(whole.text[i], g->text[i]) == 0 &&
          whole.piece[i] == g->piece[i] && whole.bad[i] == g->bad[i]);
}

/* The rule of every input: a CR before a line's LF goes. */
static void frames(framing mode, size_t max, const char *stream, bool end,
                   got *g)
{
  frames_cr(mode, max, false, stream, end, g);
}

static void test_octet_counted(void)
{
  got g;

  frames(FRAMING_AUTO, 100, "11 <13>a b c:d4 <1>x\n12 <13>e\nf g h ", false,
         &g);
  CHECK(g.n == 3);
  CHECK(strcmp(g.text[0], "<13>a b c:d") == 0 && g.piece[0] == 0);
  CHECK(strcmp(g.text[1], "<1>x") == 0);
  /* An LF between frames is skipped; one inside a frame is its own. */
  CHECK(strcmp(g.text[2], "<13>e\nf g h ") == 0);
}

/* A frame whose message ends in LF loses it (and the CR before it unless
 * keep_cr), as rsyslog drops it; an LF or CR inside stays. */
static void test_octet_counted_line_ends(void)
{
  got g;

  frames(FRAMING_AUTO, 100, "6 <1>ab\n7 <1>ab\r\n6 <1>a\nb5 <1>a\r", true, &g);
  CHECK(g.n == 4);
  CHECK(strcmp(g.text[0], "<1>ab") == 0);
  CHECK(strcmp(g.text[1], "<1>ab") == 0);
  CHECK(strcmp(g.text[2], "<1>a\nb") == 0);
  CHECK(strcmp(g.text[3], "<1>a\r") == 0); /* no LF after it: it stays */
  frames_cr(FRAMING_AUTO, 100, true, "7 <1>ab\r\n2 \r\n", true, &g);
  CHECK(g.n == 2 && strcmp(g.text[0], "<1>ab\r") == 0 &&
        strcmp(g.text[1], "\r") == 0);
  /* A frame of only its LF is no message; max bytes and an LF are one
   * message, not two pieces. */
  frames(FRAMING_AUTO, 4, "1 \n5 abcd\n6 abcd\r\n", true, &g);
  CHECK(g.n == 2 && strcmp(g.text[0], "abcd") == 0 && g.piece[0] == 0 &&
        strcmp(g.text[1], "abcd") == 0 && g.piece[1] == 0);
}

static void test_newline(void)
{
  got g;

  frames(FRAMING_AUTO, 100, "<13>one\r\n\n<14>two\n2026 no pri\nlast", true,
         &g);
  CHECK(g.n == 4);
  CHECK(strcmp(g.text[0], "<13>one") == 0); /* the CR of CRLF goes */
  CHECK(strcmp(g.text[1], "<14>two") == 0); /* empty lines are no messages */
  CHECK(strcmp(g.text[2], "2026 no pri") == 0);
  CHECK(strcmp(g.text[3], "last") == 0);    /* ended by the stream's end */
  /* A first line starting with digits decides for lines too. */
  frames(FRAMING_AUTO, 100, "2026-05-19 up\n12 <13>abcdefgh\n", true, &g);
  CHECK(g.n == 2 && strcmp(g.text[0], "2026-05-19 up") == 0 &&
        strcmp(g.text[1], "12 <13>abcdefgh") == 0);
  /* Configured newline framing never reads counts. */
  frames(FRAMING_NEWLINE, 100, "5 <1>a\n", true, &g);
  CHECK(g.n == 1 && strcmp(g.text[0], "5 <1>a") == 0);
  /* keep_cr keeps it; a CR inside a line stays either way. */
  frames_cr(FRAMING_AUTO, 100, true, "<13>one\r\n<13>a\rb\r\n", true, &g);
  CHECK(g.n == 2 && strcmp(g.text[0], "<13>one\r") == 0 &&
        strcmp(g.text[1], "<13>a\rb\r") == 0);
  frames(FRAMING_AUTO, 100, "<13>a\rb\r\n", true, &g);
  CHECK(g.n == 1 && strcmp(g.text[0], "<13>a\rb") == 0);
}

static void test_pieces(void)
{
  got g;

  frames(FRAMING_AUTO, 4, "abcd\nabcdefghij\n", true, &g);
  CHECK(g.n == 4);
  CHECK(strcmp(g.text[0], "abcd") == 0 && g.piece[0] == 0); /* exactly max */
  CHECK(strcmp(g.text[1], "abcd") == 0 && g.piece[1] == 1);
  CHECK(strcmp(g.text[2], "efgh") == 0 && g.piece[2] == 2);
  CHECK(strcmp(g.text[3], "ij") == 0 && g.piece[3] == 3);
  frames(FRAMING_OCTET_COUNTED, 4, "6 abcdef2 gh", true, &g);
  CHECK(g.n == 3 && g.piece[0] == 1 && g.piece[1] == 2 &&
        strcmp(g.text[1], "ef") == 0 && strcmp(g.text[2], "gh") == 0 &&
        g.piece[2] == 0);
}

/* A CRLF split from its message at max bytes, read by read: the CR goes
 * with the LF, or is the next piece's first byte when no LF follows. */
static void test_cr_at_max(void)
{
  got g;

  frames(FRAMING_NEWLINE, 4, "abcd\r\nabcd\rx\nabcd\r", true, &g);
  CHECK(g.n == 5);
  CHECK(strcmp(g.text[0], "abcd") == 0 && g.piece[0] == 0);
  CHECK(strcmp(g.text[1], "abcd") == 0 && g.piece[1] == 1 &&
        strcmp(g.text[2], "\rx") == 0 && g.piece[2] == 2);
  /* The stream ended after the CR: it stays, in a piece of its own. */
  CHECK(strcmp(g.text[3], "abcd") == 0 && g.piece[3] == 1 &&
        strcmp(g.text[4], "\r") == 0 && g.piece[4] == 2);
  frames(FRAMING_NEWLINE, 1, "x\r\ny\rz\n", true, &g);
  CHECK(g.n == 4 && strcmp(g.text[0], "x") == 0 && g.piece[0] == 0 &&
        strcmp(g.text[1], "y") == 0 && strcmp(g.text[2], "\r") == 0 &&
        strcmp(g.text[3], "z") == 0 && g.piece[3] == 3);
  frames_cr(FRAMING_NEWLINE, 4, true, "abcd\r\n", true, &g);
  CHECK(g.n == 2 && strcmp(g.text[0], "abcd") == 0 && g.piece[0] == 1 &&
        strcmp(g.text[1], "\r") == 0 && g.piece[1] == 2);
}

static void test_malformed(void)
{
  got g;

  /* Configured octet counting: a bad count is malformed up to the LF. */
  frames(FRAMING_OCTET_COUNTED, 100, "12x <13>a\n4 <1>b<1>c\n", true, &g);
  CHECK(g.n == 3);
  CHECK(g.bad[0] && strcmp(g.text[0], "12x <13>a") == 0 &&
        strstr(g.reason[0], "no space after the octet count"));
  CHECK(!g.bad[1] && strcmp(g.text[1], "<1>b") == 0);
  CHECK(g.bad[2] && strcmp(g.text[2], "<1>c") == 0 &&
        strstr(g.reason[2], "starts with no octet count"));
  frames(FRAMING_OCTET_COUNTED, 100, "1234567890 x\n", true, &g);
  CHECK(g.n == 1 && g.bad[0] && strcmp(g.text[0], "1234567890 x") == 0 &&
        strstr(g.reason[0], "longer than 9 digits"));
  /* The peer closing mid-frame. */
  frames(FRAMING_AUTO, 100, "3 <1>10 <13>ab", true, &g);
  CHECK(g.n == 2 && !g.bad[0] && strcmp(g.text[0], "<1>") == 0);
  CHECK(g.bad[1] && strcmp(g.text[1], "<13>ab") == 0 &&
        strstr(g.reason[1], "ended 4 bytes short of a 10-byte frame"));
  frames(FRAMING_AUTO, 100, "3 <1>10 ", true, &g);
  CHECK(g.n == 2 && g.bad[1] && g.text[1][0] == '\0');
  frames(FRAMING_OCTET_COUNTED, 100, "3 <1>12", true, &g);
  CHECK(g.n == 2 && g.bad[1] && strcmp(g.text[1], "12") == 0 &&
        strstr(g.reason[1], "ended within an octet count"));
}

static void test_datagrams(void)
{
  frame_handler h = {on_message, on_malformed, NULL, on_empty};
  got g = {0};

  h.ud = &g;
  frame_datagram(100, false, "<13>a\n", 6, &h);
  frame_datagram(100, false, "\n", 1, &h);
  frame_datagram(3, false, "abcdefg", 7, &h);
  CHECK(g.n == 4 && strcmp(g.text[0], "<13>a") == 0 && g.piece[0] == 0);
  CHECK(strcmp(g.text[1], "abc") == 0 && g.piece[1] == 1 &&
        strcmp(g.text[3], "g") == 0 && g.piece[3] == 3);
  g = (got){0};
  frame_datagram(100, false, "<13>b\r\n", 7, &h);
  frame_datagram(100, true, "<13>c\r\n", 7, &h);
  frame_datagram(100, false, "<13>d\r", 6, &h);
  CHECK(g.n == 3 && strcmp(g.text[0], "<13>b") == 0 &&
        strcmp(g.text[1], "<13>c\r") == 0 && strcmp(g.text[2], "<13>d\r") == 0);
}

/* Found by fuzz/fuzz_frame.c. A CR held past max, with max 1: the CR
 * before it went as a piece, and the held one was the ending CRLF's, so
 * there is no further (empty) piece; and a frame cut short with a CR held
 * past max hands its max bytes on as the frame's piece, as when the CR
 * comes in a longer read, only the rest as malformed. */
static void test_fuzz_findings(void)
{
  got g;

  frames(FRAMING_NEWLINE, 1, "x\r\r\n", true, &g);
  CHECK(g.n == 2 && strcmp(g.text[0], "x") == 0 && g.piece[0] == 1 &&
        strcmp(g.text[1], "\r") == 0 && g.piece[1] == 2);
  frames(FRAMING_OCTET_COUNTED, 1, "4 \r\r", true, &g);
  CHECK(g.n == 2 && !g.bad[0] && g.piece[0] == 1 &&
        strcmp(g.text[0], "\r") == 0 && g.bad[1] &&
        strcmp(g.text[1], "\r") == 0);
}

/* Frames of no bytes are no messages, but are counted. */
static void test_empty(void)
{
  frame_handler h = {on_message, on_malformed, NULL, on_empty};
  got g;

  frames(FRAMING_NEWLINE, 100, "a\n\n\r\nb\n", true, &g);
  CHECK(g.n == 2 && g.empty == 2);
  frames(FRAMING_OCTET_COUNTED, 100, "1 \n2 \r\n3 <1>", true, &g);
  CHECK(g.n == 1 && g.empty == 2 && strcmp(g.text[0], "<1>") == 0);
  g = (got){0};
  h.ud = &g;
  frame_datagram(100, false, "", 0, &h);
  frame_datagram(100, false, "\n", 1, &h);
  frame_datagram(100, false, "x", 1, &h);
  CHECK(g.n == 1 && g.empty == 2);
}

/* Feeds the stream in one read, then cuts it as this side's close does. */
static void cut_after(framing mode, size_t max, const char *stream, got *g)
{
  frame_handler h = {on_message, on_malformed, g, on_empty};
  frame_reader f;

  *g = (got){0};
  frame_init(&f, mode, max, false);
  frame_feed(&f, stream, strlen(stream), &h);
  frame_cut(&f, &h, "closed here");
  frame_free(&f);
}

/* This side ended the stream: a begun message is malformed, for why, and
 * never a message (a whole one before it is). */
static void test_cut(void)
{
  got g;

  cut_after(FRAMING_NEWLINE, 100, "<13>a\n<13>half", &g);
  CHECK(g.n == 2 && !g.bad[0] && strcmp(g.text[0], "<13>a") == 0);
  CHECK(g.bad[1] && strcmp(g.text[1], "<13>half") == 0 &&
        strcmp(g.reason[1], "closed here") == 0);
  cut_after(FRAMING_AUTO, 100, "3 <1>10 <13>ab", &g);
  CHECK(g.n == 2 && g.bad[1] && strcmp(g.text[1], "<13>ab") == 0 &&
        strcmp(g.reason[1], "closed here (4 bytes short of a 10-byte frame)") == 0);
  /* A count begun, and a count with no byte of its frame yet. */
  cut_after(FRAMING_OCTET_COUNTED, 100, "3 <1>12", &g);
  CHECK(g.n == 2 && g.bad[1] && strcmp(g.text[1], "12") == 0);
  cut_after(FRAMING_OCTET_COUNTED, 100, "3 <1>12 ", &g);
  CHECK(g.n == 2 && g.bad[1] && g.text[1][0] == '\0' &&
        strstr(g.reason[1], "12 bytes short of a 12-byte frame"));
  /* Garbage keeps its own reason. */
  cut_after(FRAMING_OCTET_COUNTED, 100, "12x <13>a", &g);
  CHECK(g.n == 1 && g.bad[0] && strstr(g.reason[0], "no space after"));
  /* Pieces of an overlong message went on; the rest is cut. */
  cut_after(FRAMING_NEWLINE, 4, "abcdefg", &g);
  CHECK(g.n == 2 && !g.bad[0] && g.piece[0] == 1 &&
        strcmp(g.text[0], "abcd") == 0 && g.bad[1] &&
        strcmp(g.text[1], "efg") == 0);
  /* Nothing begun: nothing. */
  cut_after(FRAMING_NEWLINE, 100, "<13>a\n", &g);
  CHECK(g.n == 1 && !g.bad[0]);
}

int main(void)
{
  test_octet_counted();
  test_octet_counted_line_ends();
  test_newline();
  test_pieces();
  test_cr_at_max();
  test_malformed();
  test_datagrams();
  test_fuzz_findings();
  test_cut();
  test_empty();
  return check_summary();
}
