/*
 * dead_letter.h - the path for records that could not be processed: a
 * malformed record, a script error, a broken limit, a stopped plugin.
 * Each becomes one JSON object per line, with the plugin, the stage, the
 * reason, the input and position, and the original bytes:
 *
 *   {"time":"2026-11-22T04:00:00.123Z","stage":"decoder","plugin":"syslog",
 *    "reason":"rejected by syslog: ...","input":"stdin","record":3,
 *    "payload":"<44>bad line"}
 *
 * "offset" replaces "record" for inputs that know byte offsets, and
 * "payload_base64" replaces "payload" when the bytes are not valid UTF-8.
 */
#ifndef LUMBERJIT_DEAD_LETTER_H
#define LUMBERJIT_DEAD_LETTER_H

#include <stdint.h>

#include "message.h"
#include "output.h"

typedef struct {
  output_sink *sink;   /* the file below, or another output's sink */
  output_sink own;
  bool owns_sink;
  uint64_t count;      /* dead letters made; sink counts those written */
  uint64_t bytes;      /* their bytes, each JSON line whole */
  uint64_t failed;     /* those its sink could not write */
} dead_letter;

/* Writes to `path`, or to `shared` when it is not NULL. ev receives the
 * own sink's failures and changes. */
int dead_letter_open(dead_letter *dl, uv_loop_t *loop, const char *path,
                     output_sink *shared, output_events ev, char *err,
                     size_t errlen);
void dead_letter_write(dead_letter *dl, const char *stage, const char *plugin,
                       const char *reason, const msg_origin *origin);
/* Dead letters the sink took. */
static inline uint64_t dead_letter_written(const dead_letter *dl)
{
  return dl->sink ? dl->sink->dead_letters_written : 0;
}
int dead_letter_close(dead_letter *dl);

#endif
