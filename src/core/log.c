/* log.c - see log.h. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

void log_msg(const char *fmt, ...)
{
  char stamp[32], line[2048];
  struct timespec ts;
  struct tm tm;
  va_list ap;

  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s.%03ldZ lumberjit: %s\n", stamp, ts.tv_nsec / 1000000, line);
}

void log_sandbox_line(void *ud, const char *line)
{
  (void)ud;
  log_msg("%s", line);
}
