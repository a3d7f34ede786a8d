/* log.c - see log.h. */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

const char *const log_level_names[] = {"error", "warning", "info", "debug",
                                       NULL};
/* sd-daemon(3)'s prefixes: LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG. */
static const char prefixes[][4] = {"<3>", "<4>", "<6>", "<7>"};

/* Set before the workers start and, later, by a reload while they log. */
static atomic_int max_level = LOG_LEVEL_INFO;
static bool journal; /* set once at start, before any thread */

void log_set_level(log_level level)
{
  atomic_store_explicit(&max_level, (int)level, memory_order_relaxed);
}

int log_level_parse(const char *name, log_level *level)
{
  for (int i = 0; log_level_names[i]; i++)
    if (strcmp(name, log_level_names[i]) == 0) {
      *level = (log_level)i;
      return 0;
    }
  return -1;
}

/* JOURNAL_STREAM is "DEVICE:INODE" of the journal's socket; stderr is the
 * journal only if it is that very file (a child whose stderr was
 * redirected inherits the variable, not the socket). */
bool log_detect_journal(void)
{
  const char *env = getenv("JOURNAL_STREAM");
  unsigned long long dev, ino;
  struct stat st;
  char end;

  journal = env && sscanf(env, "%llu:%llu%c", &dev, &ino, &end) == 2 &&
            fstat(2, &st) == 0 && (unsigned long long)st.st_dev == dev &&
            (unsigned long long)st.st_ino == ino;
  return journal;
}

static void log_va(log_level level, const char *fmt, va_list ap)
{
  char stamp[32], line[2048];
  struct timespec ts;
  struct tm tm;

  if ((int)level > atomic_load_explicit(&max_level, memory_order_relaxed))
    return;
  vsnprintf(line, sizeof line, fmt, ap);
  if (journal) {
    fprintf(stderr, "%s%s\n", prefixes[level], line);
    return;
  }
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  fprintf(stderr, "%s.%03ldZ %s lumberjit: %s\n", stamp, ts.tv_nsec / 1000000,
          log_level_names[level], line);
}

void log_at(log_level level, const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  log_va(level, fmt, ap);
  va_end(ap);
}

void log_msg(const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  log_va(LOG_LEVEL_INFO, fmt, ap);
  va_end(ap);
}

void log_sandbox_line(void *ud, const char *line)
{
  (void)ud;
  log_at(LOG_LEVEL_WARNING, "%s", line);
}
