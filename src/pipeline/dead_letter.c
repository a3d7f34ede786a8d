/* dead_letter.c - see dead_letter.h. */
#include "dead_letter.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "utf8.h"

int dead_letter_open(dead_letter *dl, uv_loop_t *loop, const char *path,
                     output_sink *shared, output_events ev, char *err,
                     size_t errlen)
{
  memset(dl, 0, sizeof *dl);
  if (shared) {
    dl->sink = shared;
    return 0;
  }
  if (output_open(&dl->own, loop, "dead-letter path", path, 64u << 10, true,
                  ev, err, errlen) != 0)
    return -1;
  dl->sink = &dl->own;
  dl->owns_sink = true;
  return 0;
}

/* Appends s as a JSON string (with quotes); false, appending nothing, when
 * s is not valid UTF-8. */
static bool json_string(buf *b, const char *s, size_t len)
{
  const unsigned char *u = (const unsigned char *)s;
  size_t start = b->len;

  buf_append(b, "\"", 1);
  for (size_t i = 0; i < len;) {
    unsigned char c = u[i];
    char esc[8];
    size_t n;
    if (c == '"' || c == '\\') {
      esc[0] = '\\';
      esc[1] = (char)c;
      buf_append(b, esc, 2);
      i++;
    } else if (c < 0x20) {
      buf_append(b, esc, (size_t)snprintf(esc, sizeof esc, "\\u%04x", c));
      i++;
    } else if ((n = utf8_sequence_len(u + i, len - i)) != 0) {
      buf_append(b, s + i, n);
      i += n;
    } else {
      b->len = start;
      return false;
    }
  }
  buf_append(b, "\"", 1);
  return true;
}

static void append_base64(buf *b, const unsigned char *s, size_t len)
{
  static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  char q[4];

  buf_append(b, "\"", 1);
  for (size_t i = 0; i < len; i += 3) {
    uint32_t v = (uint32_t)s[i] << 16;
    if (i + 1 < len) v |= (uint32_t)s[i + 1] << 8;
    if (i + 2 < len) v |= s[i + 2];
    q[0] = alphabet[v >> 18 & 63];
    q[1] = alphabet[v >> 12 & 63];
    q[2] = i + 1 < len ? alphabet[v >> 6 & 63] : '=';
    q[3] = i + 2 < len ? alphabet[v & 63] : '=';
    buf_append(b, q, 4);
  }
  buf_append(b, "\"", 1);
}

void dead_letter_write(dead_letter *dl, const char *stage, const char *plugin,
                       const char *reason, const msg_origin *o)
{
  buf *b = output_buf(dl->sink);
  size_t start = b->len;
  char stamp[64], num[32];
  struct timespec ts;
  struct tm tm;

  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(stamp + strlen(stamp), sizeof stamp - strlen(stamp), ".%03ldZ",
           ts.tv_nsec / 1000000);
  buf_append_str(b, "{\"time\":\"");
  buf_append_str(b, stamp);
  buf_append_str(b, "\",\"stage\":\"");
  buf_append_str(b, stage);
  buf_append_str(b, "\",\"plugin\":");
  if (!json_string(b, plugin, strlen(plugin))) buf_append_str(b, "null");
  buf_append_str(b, ",\"reason\":");
  if (!json_string(b, reason, strlen(reason)))
    append_base64(b, (const unsigned char *)reason, strlen(reason));
  buf_append_str(b, ",\"input\":");
  if (!o->input || !json_string(b, o->input, strlen(o->input)))
    buf_append_str(b, "null");
  if (o->file) {
    buf_append_str(b, ",\"file\":");
    if (!json_string(b, o->file, strlen(o->file))) buf_append_str(b, "null");
  }
  if (o->from) {
    buf_append_str(b, ",\"from\":");
    if (!json_string(b, o->from, strlen(o->from))) buf_append_str(b, "null");
  }
  buf_append_str(b, o->is_offset ? ",\"offset\":" : ",\"record\":");
  snprintf(num, sizeof num, "%" PRIu64, o->position);
  buf_append_str(b, num);
  buf_append_str(b, ",\"payload\":");
  if (!json_string(b, o->bytes ? o->bytes : "", o->len)) {
    b->len -= strlen("\"payload\":");
    buf_append_str(b, "\"payload_base64\":");
    append_base64(b, (const unsigned char *)o->bytes, o->len);
  }
  buf_append_str(b, "}\n");
  dl->count++;
  dl->bytes += b->len - start;
  output_commit(dl->sink, o, true);
}

int dead_letter_close(dead_letter *dl)
{
  int rc = dl->owns_sink ? output_close(&dl->own) : 0;
  dl->sink = NULL;
  dl->owns_sink = false;
  return rc;
}
